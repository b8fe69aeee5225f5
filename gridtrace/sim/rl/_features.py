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
per-VO deficit (optional)   w_k − u_k for every VO slot, with w the target shares (0 for the
                            "other" slot) and u_k the VO's share of the decayed core usage
                            (half-life H): the VO's distance to its target, positive when it
                            is behind; only with ``vo_targets``
==========================  =====================================================================

Action a (one waiting job): interactive flag, VO one-hot (same VO slots as the state),
log1p(r̂ / τ) with r̂ the run's estimate (oracle or class median), and cores / P.

The deficit entries follow the usage of the run the encoder is bound to (:meth:`bind`, called by
:meth:`static_actions` at the start of a run): between two decisions the usage decays by
2^(−Δt / H) and grows by the cores each VO held at the earlier decision (the running jobs are
read from the cluster state at each decision, O(running jobs)). The runtime estimate r̂ of each
job is in the action (its ``runtime`` entry), so the agent sees it whatever the estimator.

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
    vo_targets : mapping of str to float, optional
        Target shares (normalised here); when given, the state ends with one deficit entry per
        VO slot (see the module docstring).
    half_life_s : float, default 86400
        H, the half-life of the usage behind the deficit entries.

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
        vo_targets: Mapping[str, float] | None = None,
        half_life_s: float = 86400.0,
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
        if not (math.isfinite(half_life_s) and half_life_s > 0):
            raise ConfigError(f"half_life_s must be finite and > 0, got {half_life_s}")
        self.half_life_s = float(half_life_s)
        self.vo_targets: dict[str, float] | None = None
        self._targets = np.zeros(self.n_vo_slots, dtype=np.float64)
        if vo_targets:
            total = float(sum(vo_targets.values()))
            if not (math.isfinite(total) and total > 0) or min(vo_targets.values()) < 0:
                raise ConfigError(f"vo_targets must be >= 0 with a positive sum: {vo_targets}")
            self.vo_targets = {str(k): float(v) / total for k, v in vo_targets.items()}
            for vo, share in self.vo_targets.items():
                if vo in self._slot:
                    self._targets[self._slot[vo]] += share
                else:
                    self._targets[-1] += share
        deficits = (f"deficit_{v}" for v in vo_names) if self.vo_targets else ()
        self.names_state = (*STATE_SCALARS, *(f"queued_share_{v}" for v in vo_names), *deficits)
        self._job_slots = np.zeros(0, dtype=np.int64)
        self._job_cores = np.zeros(0, dtype=np.float64)
        self._usage = np.zeros(self.n_vo_slots, dtype=np.float64)
        self._held = np.zeros(self.n_vo_slots, dtype=np.float64)
        self._t_usage = -math.inf
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

    @property
    def has_deficits(self) -> bool:
        """True if the state carries the per-VO deficit entries."""
        return self.vo_targets is not None

    def bind(self, vo_slots: NDArray[np.int64], cores: Sequence[int]) -> None:
        """Bind the deficit entries to a run's jobs (their VO slots and cores); forget usage."""
        self._job_slots = np.asarray(vo_slots, dtype=np.int64)
        self._job_cores = np.asarray(cores, dtype=np.float64)
        self._usage[:] = 0.0
        self._held[:] = 0.0
        self._t_usage = -math.inf

    def deficits(self, state: ClusterState) -> NDArray[np.float64]:
        """Return w_k − u_k per VO slot now, and advance the decayed usage to ``state.now``.

        Parameters
        ----------
        state : ClusterState
            The cluster; its running jobs give the cores each VO holds from now on.

        Returns
        -------
        ndarray, shape (n_vo_slots,)
            Positive where a VO is behind its target. Before any usage: the targets.
        """
        now = state.now
        dt = now - self._t_usage
        if math.isfinite(dt) and dt > 0:
            rate = math.log(2.0) / self.half_life_s
            decay = math.exp(-rate * dt)
            self._usage *= decay
            self._usage += self._held * ((1.0 - decay) / rate)
        self._t_usage = now
        running = state.running
        held = self._held
        held[:] = 0.0
        if running and self._job_slots.size:
            rows = np.fromiter(running, dtype=np.int64, count=len(running))
            held += np.bincount(
                self._job_slots[rows], weights=self._job_cores[rows], minlength=self.n_vo_slots
            )
        total = float(self._usage.sum())
        if total <= 0.0:
            return self._targets.copy()
        return self._targets - self._usage / total

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

        With ``vo_targets`` this also binds the deficit entries to these jobs (:meth:`bind`):
        the scheduler calls it once per run, at the start.

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
        if self.vo_targets is not None:
            self.bind(vo_slots, cores)
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
        slots = self.n_vo_slots
        shares = vec[4 : 4 + slots]
        shares[:] = 0.0
        if self.vo_targets is not None:
            vec[4 + slots :] = self.deficits(state)
        by_vo = state.queued_by_vo
        total = sum(by_vo.values())
        if total:
            last = self.n_vo_slots - 1
            get = self._slot.get
            for vo, count in by_vo.items():
                shares[get(vo, last)] += count / total
        return vec
