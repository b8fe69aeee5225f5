"""The scheduling MDP's state and action vectors (DESIGN.md, "The RL supervisor").

State s (what the supervisor sees at a decision), in this order:

==========================  =====================================================================
feature                     encoding
==========================  =====================================================================
running work                log1p(Σ cores × (estimated end − now) / (P τ))
time until a core frees     log1p(min(next_free, horizon) / τ); ``horizon`` when nothing runs
backlog work                log1p(Σ cores × r̂ over queued jobs / (P τ))
idle cores                  idle / P
per-VO queue shares         fraction of the queued jobs of each VO (one entry per known VO, plus
                            one for every other VO)
==========================  =====================================================================

Action a (one waiting job): interactive flag, VO one-hot (same VO slots as the state),
log1p(r̂ / τ) with r̂ the run's estimate (oracle or class median), and cores / P.

P is the reference pool size of the encoder (the site's cores), τ the interactive threshold. The
logarithms keep work and times of grid sites (seconds to days) in a range an MLP or a reservoir of
sigmoid units can use without saturating.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from gridtrace.errors import ConfigError

if TYPE_CHECKING:
    from gridtrace.sim._engine import ClusterState, JobRows

__all__ = ["SchedulingFeatures"]

STATE_SCALARS = ("running_work", "next_free", "backlog_work", "idle_cores")
ACTION_SCALARS = ("interactive", "runtime", "cores")


class SchedulingFeatures:
    """Encoder of the scheduling MDP's state and action vectors.

    Parameters
    ----------
    vos : sequence of str
        The VOs with a slot of their own (usually the VOs of the target shares, or of the trace);
        every other VO (and a missing one) shares one extra slot.
    pool_cores : int
        Reference pool size P used to scale work and idle cores.
    tau_s : float, default 900
        The interactive threshold τ, the unit of times.
    horizon_s : float, default 86400
        Cap of the time-until-a-core-frees feature (and its value when nothing runs).

    Attributes
    ----------
    n_state, n_action : int
        Lengths of the state and action vectors.
    names_state, names_action : tuple of str
        The name of every entry, in order.
    """

    def __init__(
        self,
        vos: Sequence[str],
        pool_cores: int,
        *,
        tau_s: float = 900.0,
        horizon_s: float = 86400.0,
    ) -> None:
        if pool_cores < 1:
            raise ConfigError(f"pool_cores must be >= 1, got {pool_cores}")
        if not (tau_s > 0 and horizon_s > 0):
            raise ConfigError(f"tau_s and horizon_s must be > 0, got {tau_s}, {horizon_s}")
        names = [str(v) for v in vos]
        if len(set(names)) != len(names):
            raise ConfigError(f"VO names must be distinct: {names}")
        self.vos = tuple(names)
        self.pool_cores = int(pool_cores)
        self.tau_s = float(tau_s)
        self.horizon_s = float(horizon_s)
        self._slot: dict[str | None, int] = {vo: k for k, vo in enumerate(self.vos)}
        self.n_vo_slots = len(self.vos) + 1
        vo_names = (*self.vos, "other")
        self.names_state = (*STATE_SCALARS, *(f"queued_share_{v}" for v in vo_names))
        self.names_action = ("interactive", *(f"vo_{v}" for v in vo_names), "runtime", "cores")
        self.n_state = len(self.names_state)
        self.n_action = len(self.names_action)

    @classmethod
    def for_site(
        cls,
        jobs: JobRows,
        pool_cores: int,
        *,
        vo_shares: Mapping[str, float] | None = None,
        tau_s: float = 900.0,
        max_vos: int = 8,
    ) -> SchedulingFeatures:
        """Return an encoder whose VO slots are the share VOs, or the trace's most common VOs.

        Parameters
        ----------
        jobs : JobRows
            The jobs the encoder will see (only their VOs are read, when no shares are given).
        pool_cores : int
            P.
        vo_shares : mapping of str to float, optional
            Target shares; their VOs get the slots, in the mapping's order.
        tau_s : float, default 900
            τ.
        max_vos : int, default 8
            Without shares, at most this many VOs (the most frequent) get a slot of their own.
        """
        if vo_shares:
            return cls(list(vo_shares), pool_cores, tau_s=tau_s)
        counts: dict[str, int] = {}
        for vo in jobs.vo:
            if vo is not None:
                counts[vo] = counts.get(vo, 0) + 1
        common = sorted(counts, key=lambda v: (-counts[v], v))[:max_vos]
        return cls(common, pool_cores, tau_s=tau_s)

    def slot(self, vo: str | None) -> int:
        """Return the VO slot of ``vo`` (the last slot for unknown or missing VOs)."""
        return self._slot.get(vo, self.n_vo_slots - 1)

    def slots(self, vos: Sequence[str | None]) -> NDArray[np.int64]:
        """Return the VO slot of every entry of ``vos``."""
        last = self.n_vo_slots - 1
        get = self._slot.get
        return np.fromiter((get(v, last) for v in vos), dtype=np.int64, count=len(vos))

    def static_actions(
        self, interactive: Sequence[bool], vo_slots: NDArray[np.int64], cores: Sequence[int]
    ) -> NDArray[np.float64]:
        """Return the action rows of many jobs with the runtime entry left at 0.

        Parameters
        ----------
        interactive : sequence of bool
            Per job.
        vo_slots : ndarray of int
            Per job, from :meth:`slots`.
        cores : sequence of int
            Per job.

        Returns
        -------
        ndarray, shape (n, n_action)
            Fill the runtime column (:attr:`runtime_column`) with :meth:`runtime_feature`.
        """
        n = len(vo_slots)
        out = np.zeros((n, self.n_action), dtype=np.float64)
        out[:, 0] = np.asarray(interactive, dtype=np.float64)
        out[np.arange(n), 1 + vo_slots] = 1.0
        out[:, -1] = np.asarray(cores, dtype=np.float64) / self.pool_cores
        return out

    @property
    def runtime_column(self) -> int:
        """Index of the runtime entry of an action row."""
        return self.n_action - 2

    def runtime_feature(self, estimate_s: NDArray[np.float64] | float) -> NDArray[np.float64]:
        """Return log1p(r̂ / τ), the runtime entry of an action row."""
        return np.log1p(np.maximum(np.asarray(estimate_s, dtype=np.float64), 0.0) / self.tau_s)

    def state(
        self, state: ClusterState, out: NDArray[np.float64] | None = None
    ) -> NDArray[np.float64]:
        """Return the state vector of the cluster now.

        Parameters
        ----------
        state : ClusterState
            The engine's cluster state (its features are maintained incrementally).
        out : ndarray, optional
            A buffer of length :attr:`n_state` to fill (avoids an allocation per decision).
        """
        vec = np.zeros(self.n_state, dtype=np.float64) if out is None else out
        work_unit = self.pool_cores * self.tau_s
        tau = self.tau_s
        next_free = state.next_free_in_s
        vec[0] = math.log1p(state.running_work_s / work_unit)
        vec[1] = math.log1p(min(next_free, self.horizon_s) / tau)
        vec[2] = math.log1p(state.backlog_work_s / work_unit)
        vec[3] = state.free_cores / self.pool_cores
        shares = vec[4:]
        shares[:] = 0.0
        by_vo = state.queued_by_vo
        total = sum(by_vo.values())
        if total:
            last = self.n_vo_slots - 1
            get = self._slot.get
            for vo, count in by_vo.items():
                shares[get(vo, last)] += count / total
        return vec
