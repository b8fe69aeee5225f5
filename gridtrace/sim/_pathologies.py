"""Pathologies of a simulated run that a mean hides (issue 14, item 5).

Three flags, each a :class:`PathologyFlag`:

``POOL_AT_FLOOR``
    The pool held at most its floor of cores for more than ``floor_share`` (default 10 %) of the
    period (first submit to last end): an elastic controller that starves the site to score on
    utilisation.
``INTERACTIVE_WAIT_OVER_DAY``
    At least one interactive job waited more than a day (86,400 s); the flag gives their count.
``W_BELOW_FIFO``
    A mean W below the lower end of strict FIFO's 95 % interval: a "supervisor" worse than the
    site's own native scheduler. It needs the FIFO runs, so it is a separate helper,
    :func:`w_below_fifo`.

:func:`pathology_flags` checks the first two on a :class:`~gridtrace.sim.SimulationResult`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from gridtrace.errors import ConfigError

if TYPE_CHECKING:
    from gridtrace.sim._result import SimulationResult

__all__ = [
    "INTERACTIVE_WAIT_OVER_DAY",
    "POOL_AT_FLOOR",
    "W_BELOW_FIFO",
    "PathologyFlag",
    "pathology_flags",
    "time_at_floor",
    "w_below_fifo",
]

POOL_AT_FLOOR = "POOL_AT_FLOOR"
"""Code of the flag: the pool at its floor for more than a share of the period."""

INTERACTIVE_WAIT_OVER_DAY = "INTERACTIVE_WAIT_OVER_DAY"
"""Code of the flag: an interactive job waited more than a day."""

W_BELOW_FIFO = "W_BELOW_FIFO"
"""Code of the flag: a mean W below the lower end of FIFO's interval."""

DAY_S = 86_400.0


@dataclass(frozen=True, slots=True)
class PathologyFlag:
    """One pathology found in a run.

    Attributes
    ----------
    code : str
        :data:`POOL_AT_FLOOR`, :data:`INTERACTIVE_WAIT_OVER_DAY` or :data:`W_BELOW_FIFO`.
    message : str
        One line for a report.
    value : float
        What was measured: the share of the period at the floor, the longest interactive wait
        (seconds), or the W.
    limit : float
        The threshold it crossed: the share, the wait (seconds), or FIFO's lower bound.
    count : int or None
        Interactive jobs that waited too long (``INTERACTIVE_WAIT_OVER_DAY`` only).
    """

    code: str
    message: str
    value: float
    limit: float
    count: int | None = None


def time_at_floor(
    times: ArrayLike,
    sizes: ArrayLike,
    floor: int,
    start_s: float,
    end_s: float,
) -> float:
    """Return the share of [start_s, end_s] during which the pool held at most ``floor`` cores.

    Parameters
    ----------
    times, sizes : array_like
        The pool-size step function: ``sizes[k]`` from ``times[k]`` to ``times[k + 1]`` (the
        last to ``end_s``), times ascending; before ``times[0]`` the pool is ``sizes[0]``.
    floor : int
        The floor, cores.
    start_s, end_s : float
        The period.

    Returns
    -------
    float
        A share in [0, 1]; 0 for an empty period or an empty series.

    Examples
    --------
    >>> time_at_floor([0.0, 100.0, 400.0], [80, 30, 50], 30, 0.0, 1000.0)
    0.3
    """
    t = np.asarray(times, dtype=np.float64)
    p = np.asarray(sizes, dtype=np.int64)
    if t.shape != p.shape or t.ndim != 1:
        raise ConfigError("times and sizes must be 1-d arrays of the same length")
    span = end_s - start_s
    if t.size == 0 or not span > 0:
        return 0.0
    lo = np.clip(np.concatenate(([start_s], t[1:])), start_s, end_s)
    hi = np.clip(np.concatenate((t[1:], [end_s])), start_s, end_s)
    at_floor = float(np.sum(np.where(p <= floor, hi - lo, 0.0)))
    return at_floor / span


def pathology_flags(
    result: SimulationResult,
    *,
    floor: int | None,
    floor_share: float = 0.10,
    max_interactive_wait_s: float = DAY_S,
) -> list[PathologyFlag]:
    """Return the pathologies of one run: pool at its floor, interactive waits over a day.

    The period is the run's, from the first submit to the last end (the interval over which
    the summary counts ``provisioned_core_s``); every simulated job counts, warm-up and drain
    included, since a pathology anywhere in the test period is one.

    Parameters
    ----------
    result : SimulationResult
        The run (its ``jobs`` table and the pool-size series, :attr:`~gridtrace.sim.
        SimulationResult.pool_timeline`).
    floor : int or None
        The pool's floor, cores (the provisioning controller's ``floor``); None skips the
        ``POOL_AT_FLOOR`` test (a fixed pool has no floor).
    floor_share : float, default 0.10
        ``POOL_AT_FLOOR`` when the pool is at most ``floor`` for more than this share of the
        period.
    max_interactive_wait_s : float, default 86400
        ``INTERACTIVE_WAIT_OVER_DAY`` when an interactive job waited longer than this.

    Returns
    -------
    list of PathologyFlag
        Empty when the run has none.

    Raises
    ------
    ConfigError
        If ``floor_share`` is not in [0, 1) or ``max_interactive_wait_s`` is negative.
    """
    if not 0.0 <= floor_share < 1.0:
        raise ConfigError(f"floor_share must be in [0, 1), got {floor_share}")
    if not max_interactive_wait_s >= 0:
        raise ConfigError(f"max_interactive_wait_s must be >= 0, got {max_interactive_wait_s}")
    flags: list[PathologyFlag] = []
    jobs = result.jobs
    if jobs.num_rows == 0:
        return flags
    submit = jobs.column("submit_s").to_numpy()
    end = jobs.column("end_s").to_numpy()
    start_s, end_s = float(submit.min()), float(end.max())
    if floor is not None:
        times, sizes = result.pool_timeline
        share = time_at_floor(times, sizes, floor, start_s, end_s)
        if share > floor_share:
            flags.append(
                PathologyFlag(
                    POOL_AT_FLOOR,
                    f"pool at its floor of {floor} cores for {share:.1%} of the period "
                    f"(more than {floor_share:.0%})",
                    share,
                    floor_share,
                )
            )
    inter = np.asarray(jobs.column("interactive").to_numpy(zero_copy_only=False), dtype=bool)
    wait = jobs.column("wait_s").to_numpy()[inter]
    over = int(np.count_nonzero(wait > max_interactive_wait_s))
    if over:
        longest = float(wait.max())
        flags.append(
            PathologyFlag(
                INTERACTIVE_WAIT_OVER_DAY,
                f"{over} interactive job(s) waited more than {max_interactive_wait_s:,.0f} s "
                f"(longest {longest:,.0f} s)",
                longest,
                max_interactive_wait_s,
                count=over,
            )
        )
    return flags


def w_below_fifo(
    w: float,
    fifo: Mapping[str, float | None] | tuple[float, float],
    *,
    label: str = "mean W",
) -> PathologyFlag | None:
    """Return a ``W_BELOW_FIFO`` flag if ``w`` is below the lower end of FIFO's interval.

    Parameters
    ----------
    w : float
        The run's (or the seeds' mean) W.
    fifo : mapping or (low, high)
        FIFO's interval: a ``(low, high)`` pair, or a mapping with ``ci_low`` (as the RL
        experiments' ``t_interval`` returns) and ``mean``. Without a lower end (fewer than two
        FIFO seeds), ``w`` is compared with FIFO's mean and the message says so.
    label : str, default "mean W"
        What ``w`` is, for the message.

    Returns
    -------
    PathologyFlag or None
        None when ``w`` is at or above the lower end (or either value is missing).

    Examples
    --------
    >>> w_below_fifo(0.55, (0.60, 0.66)).code
    'W_BELOW_FIFO'
    >>> w_below_fifo(0.61, {"mean": 0.63, "ci_low": 0.60, "ci_high": 0.66}) is None
    True
    """
    note = ""
    if isinstance(fifo, tuple):
        low: float | None = float(fifo[0])
    else:
        low = fifo.get("ci_low")
        if low is None:
            low = fifo.get("mean")
            note = " (FIFO has no interval: compared with its mean)"
    if low is None or not math.isfinite(w) or not math.isfinite(low):
        return None
    if w >= low:
        return None
    return PathologyFlag(
        W_BELOW_FIFO,
        f"{label} {w:.4f} is below FIFO's interval (lower end {low:.4f}){note}",
        float(w),
        float(low),
    )
