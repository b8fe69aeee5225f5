"""Provisioning policies: how many cores the (elastic) pool holds.

The engine asks a provisioning policy for a pool size at each of its decision times, after the
completions and arrivals of that instant and before the scheduling decision. The pool never
shrinks below the cores in use: a smaller request is clamped to them (the running jobs keep their
cores; the pool does not shrink later on its own).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from gridtrace.errors import ConfigError

if TYPE_CHECKING:
    from gridtrace.sim._engine import ClusterState, QueueView

__all__ = ["FixedPool", "ProvisioningPolicy", "ScheduledPool"]


@runtime_checkable
class ProvisioningPolicy(Protocol):
    """Chooses the pool size P at its own decision times.

    Attributes
    ----------
    name : str
        Identifier written into results.

    Notes
    -----
    A policy may also have an ``every_starts`` attribute (int or None): the engine then asks it
    again, at the same instant, as soon as that many jobs have started since its last decision,
    besides its own decision times (``next_decision`` is called after every decision).
    """

    name: str

    def next_decision(self, after: float) -> float:
        """Return the first decision time strictly after ``after`` (``math.inf`` if none)."""
        ...

    def pool_size(self, queue: QueueView, state: ClusterState, now: float) -> int:
        """Return the pool size wanted from ``now`` on (clamped to the cores in use)."""
        ...


class FixedPool:
    """A pool that never changes: no provisioning decision at all."""

    name = "fixed"

    def next_decision(self, after: float) -> float:
        """Return ``math.inf``: there is no decision."""
        return math.inf

    def pool_size(self, queue: QueueView, state: ClusterState, now: float) -> int:
        """Return the current size (never called by the engine)."""
        return state.pool_size


class ScheduledPool:
    """Pool sizes set at given times (a step function), from the initial size of the run.

    Parameters
    ----------
    changes : sequence of (time_s, size)
        At ``time_s`` the pool becomes ``size`` cores (or the cores in use, if more). Times must be
        distinct and finite, sizes >= 0.

    Examples
    --------
    >>> pool = ScheduledPool([(3600.0, 40), (7200.0, 80)])
    >>> pool.next_decision(-math.inf), pool.next_decision(3600.0), pool.next_decision(7200.0)
    (3600.0, 7200.0, inf)
    """

    name = "scheduled"

    def __init__(self, changes: Sequence[tuple[float, int]]) -> None:
        steps = sorted((float(t), int(size)) for t, size in changes)
        times = [t for t, _ in steps]
        if any(not math.isfinite(t) for t in times) or len(set(times)) != len(times):
            raise ConfigError(f"pool change times must be finite and distinct: {times}")
        if any(size < 0 for _, size in steps):
            raise ConfigError("pool sizes must be >= 0")
        self.changes = steps
        self._times = times

    def next_decision(self, after: float) -> float:
        """Return the first change time strictly after ``after``."""
        k = bisect.bisect_right(self._times, after)
        return self._times[k] if k < len(self._times) else math.inf

    def pool_size(self, queue: QueueView, state: ClusterState, now: float) -> int:
        """Return the size of the last change at or before ``now``."""
        k = bisect.bisect_right(self._times, now) - 1
        return self.changes[k][1] if k >= 0 else state.pool_size
