"""Rewards of the scheduling MDP, computed when the elected job completes.

* :class:`ResponsivenessFairnessReward`: r = λ_s W + (1 − λ_s) F, with W = run / (run + wait) of
  the job and F the fairness at its election (``gridtrace.sim.fairness_at_election``: F = 1 −
  max_k (w_k − S_k)+ / max_k w_k, S_k the fraction of the service elected before it that went to
  VO k, w the target shares).
* :class:`TimeUtilityReward`: the time-utility functions of the research's earliest variant, with
  d = run + σ and t − a the job's turnaround: interactive jobs e^{−α (t − a − d)}, batch jobs
  ((t − a) / d)^{−β}, each capped at 1 (a job that finishes within d has full utility). α is per
  ``time_unit_s`` (default one minute): the research gives α = 0.5 without a unit, and per second
  the utility of an interactive job would vanish after a few seconds of waiting.
* :class:`QueueSlowdownReward`: not the research's. The per-time slowdown penalty of the deep-RL
  scheduler (Mao et al., HotNets 2016): between two decisions every waiting job costs
  Δt / max(run, floor), so an episode's rewards sum to −Σ_j wait_j / max(run_j, floor). It is paid
  per interval (to the decision that opens it), not per job, and uses the true runtimes of the
  waiting jobs, as DeepRM does; a reward in hindsight, known once those jobs have run.

The first two are paid per job (``paid = "job"``): noted at the election, paid at the
completion. The third is paid per interval (``paid = "interval"``): the scheduler calls
``advance`` at every decision and pays the result to the previous one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

import numpy as np

from gridtrace._shares import normalised_shares
from gridtrace.errors import ConfigError

if TYPE_CHECKING:
    from gridtrace.sim._engine import JobRows

__all__ = [
    "IntervalReward",
    "QueueSlowdownReward",
    "ResponsivenessFairnessReward",
    "Reward",
    "TimeUtilityReward",
]


class Reward(Protocol):
    """A reward: noted at the job's election, paid at its completion (``paid = "job"``).

    A reward with ``paid = "interval"`` is an :class:`IntervalReward`: ``complete`` returns 0 and
    the value comes from ``advance``.
    """

    name: str
    paid: str

    def reset(self, jobs: JobRows) -> None:
        """Bind to the jobs of a run and forget the previous one."""
        ...

    def elect(self, row: int, now: float) -> float:
        """Note that job ``row`` is elected at ``now``; return what :meth:`complete` needs."""
        ...

    def complete(self, row: int, start_s: float, note: float) -> float:
        """Return the reward of job ``row`` started at ``start_s`` (called at its completion)."""
        ...

    def describe(self) -> dict[str, object]:
        """Return the settings, for outputs."""
        ...


class IntervalReward(Reward, Protocol):
    """A reward paid per interval between decisions (``paid = "interval"``)."""

    def advance(self, arrived: int, now: float) -> float:
        """Return the reward accrued since the last call; take in the rows below ``arrived``."""
        ...


class ResponsivenessFairnessReward:
    """r = λ_s W + (1 − λ_s) F (see the module docstring).

    Parameters
    ----------
    lambda_s : float, default 0.5
        Weight of W; 1 gives W alone (and needs no shares).
    vo_shares : mapping of str to float, optional
        Target VO shares w; required when ``lambda_s < 1``.
    """

    name = "w-f"
    paid = "job"

    def __init__(self, lambda_s: float = 0.5, vo_shares: Mapping[str, float] | None = None) -> None:
        if not 0.0 <= lambda_s <= 1.0:
            raise ConfigError(f"lambda_s must be in [0, 1], got {lambda_s}")
        if lambda_s < 1.0 and not vo_shares:
            raise ConfigError("the fairness term (lambda_s < 1) needs target vo_shares")
        self.lambda_s = float(lambda_s)
        self.vo_shares = dict(vo_shares) if vo_shares else None
        names, w = normalised_shares(vo_shares) if vo_shares else ([], np.zeros(0))
        self._index = {name: k for k, name in enumerate(names)}
        self._w = [float(x) for x in w]
        self._w_max = max(self._w) if self._w else 1.0
        self._served = [0.0] * len(self._w)
        self._total = 0.0
        self._run: list[float] | tuple[float, ...] = ()
        self._submit: list[float] | tuple[float, ...] = ()
        self._cores: list[int] | tuple[int, ...] = ()
        self._vo: list[int] = []

    def reset(self, jobs: JobRows) -> None:
        """Bind to ``jobs`` and forget the service of a previous run."""
        self._run = list(jobs.run_s)
        self._submit = list(jobs.submit_s)
        self._cores = list(jobs.cores)
        index = self._index
        self._vo = [index.get(vo, -1) if vo is not None else -1 for vo in jobs.vo]
        self._served = [0.0] * len(self._w)
        self._total = 0.0

    def fairness(self) -> float:
        """Return F for a job elected now (before its own service counts)."""
        total = self._total
        if total <= 0.0 or not self._w:
            return 1.0
        deficit = 0.0  # max_k (w_k − S_k)+, as a plain loop: this runs at every decision
        for w, s in zip(self._w, self._served, strict=True):
            d = w - s / total
            if d > deficit:
                deficit = d
        return min(1.0, max(0.0, 1.0 - deficit / self._w_max))

    def elect(self, row: int, now: float) -> float:
        """Return F at this election and add the job's service (run × cores) to its VO."""
        f = self.fairness()
        service = self._run[row] * self._cores[row]
        k = self._vo[row]
        if k >= 0:
            self._served[k] += service
        self._total += service
        return f

    def complete(self, row: int, start_s: float, note: float) -> float:
        """Return λ_s W + (1 − λ_s) F, with F the note taken at the election."""
        run = self._run[row]
        wait = start_s - self._submit[row]
        w = run / (run + wait) if run + wait > 0 else 1.0
        return self.lambda_s * w + (1.0 - self.lambda_s) * note

    def describe(self) -> dict[str, object]:
        """Return the settings."""
        return {"name": self.name, "lambda_s": self.lambda_s, "vo_shares": self.vo_shares}


class TimeUtilityReward:
    """The time-utility reward (see the module docstring).

    Parameters
    ----------
    alpha : float, default 0.5
        Decay rate of an interactive job's utility, per ``time_unit_s``.
    beta : float, default 0.3
        Exponent of a batch job's utility.
    sigma_s : float, default 60
        Slack σ added to the runtime: d = run + σ.
    time_unit_s : float, default 60
        Unit of α.
    """

    name = "time-utility"
    paid = "job"

    def __init__(
        self,
        *,
        alpha: float = 0.5,
        beta: float = 0.3,
        sigma_s: float = 60.0,
        time_unit_s: float = 60.0,
    ) -> None:
        if not (alpha > 0 and beta > 0 and sigma_s >= 0 and time_unit_s > 0):
            raise ConfigError("alpha, beta and time_unit_s must be > 0 and sigma_s >= 0")
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.sigma_s = float(sigma_s)
        self.time_unit_s = float(time_unit_s)
        self._run: list[float] = []
        self._submit: list[float] = []
        self._interactive: list[bool] = []

    def reset(self, jobs: JobRows) -> None:
        """Bind to ``jobs``."""
        if jobs.interactive is None:
            raise ConfigError("the time-utility reward needs the jobs' interactive flags")
        self._run = list(jobs.run_s)
        self._submit = list(jobs.submit_s)
        self._interactive = list(jobs.interactive)

    def elect(self, row: int, now: float) -> float:
        """Nothing to note at the election."""
        return 0.0

    def complete(self, row: int, start_s: float, note: float) -> float:
        """Return the job's utility at its completion."""
        run = self._run[row]
        d = run + self.sigma_s
        turnaround = start_s + run - self._submit[row]
        if self._interactive[row]:
            late = (turnaround - d) / self.time_unit_s
            return 1.0 if late <= 0 else math.exp(-self.alpha * late)
        if d <= 0 or turnaround <= d:
            return 1.0
        return float((turnaround / d) ** -self.beta)

    def describe(self) -> dict[str, object]:
        """Return the settings."""
        return {
            "name": self.name,
            "alpha": self.alpha,
            "beta": self.beta,
            "sigma_s": self.sigma_s,
            "time_unit_s": self.time_unit_s,
        }


class QueueSlowdownReward:
    """The per-time slowdown penalty (see the module docstring).

    Between the decision at t_k and the next one at t_{k+1} the reward is
    −Σ_j |(t_k, t_{k+1}] ∩ [a_j, s_j)| / max(run_j, floor_s) over the jobs waiting in that
    interval (a_j arrival, s_j start). A waiting short job costs more per second than a long one,
    so electing short jobs first is what this reward makes optimal; it is aligned with mean W
    (Σ_j wait_j / run_j = Σ_j (1 / W_j − 1)) but is not W.

    Parameters
    ----------
    floor_s : float, default 60
        Runtimes below this count as this (DeepRM's time step: a job of zero runtime would
        otherwise cost an infinite amount per second of wait).
    """

    name = "queue-slowdown"
    paid = "interval"

    def __init__(self, floor_s: float = 60.0) -> None:
        if not floor_s > 0:
            raise ConfigError(f"floor_s must be > 0, got {floor_s}")
        self.floor_s = float(floor_s)
        self._cost: list[float] = []
        self._submit: list[float] | tuple[float, ...] = ()
        self._rate = 0.0
        self._seen = 0
        self._last = math.nan

    def reset(self, jobs: JobRows) -> None:
        """Bind to ``jobs``: nothing has arrived yet."""
        floor = self.floor_s
        self._cost = [1.0 / max(run, floor) for run in jobs.run_s]
        self._submit = list(jobs.submit_s)
        self._rate = 0.0
        self._seen = 0
        self._last = math.nan

    def advance(self, arrived: int, now: float) -> float:
        """Return the penalty of the waiting since the last call (negative or zero).

        ``arrived`` is the engine's count of arrived rows (``QueueView.arrived``); rows arrive in
        row order, so the rows from the last count up to it arrived in (last call, now].
        """
        penalty = 0.0 if math.isnan(self._last) else self._rate * (now - self._last)
        cost = self._cost
        submit = self._submit
        for row in range(self._seen, arrived):
            penalty += (now - submit[row]) * cost[row]
            self._rate += cost[row]
        self._seen = max(self._seen, arrived)
        self._last = now
        return -penalty

    def elect(self, row: int, now: float) -> float:
        """Take the job out of the waiting rate: it stops waiting now."""
        self._rate -= self._cost[row]
        return 0.0

    def complete(self, row: int, start_s: float, note: float) -> float:
        """Nothing is paid per job."""
        return 0.0

    def describe(self) -> dict[str, object]:
        """Return the settings."""
        return {"name": self.name, "floor_s": self.floor_s, "paid": "per interval"}


class InteractiveSlowdownReward(QueueSlowdownReward):
    """The per-time slowdown penalty weighted towards interactive jobs (not the research's).

    As :class:`QueueSlowdownReward` (paid per interval, to the decision in force), but a waiting
    job costs ``weight_j Δt / max(run_j, floor_s)`` with ``weight_j`` 1 for an interactive job and
    ``batch_weight`` for a batch job. An episode's rewards sum to
    −Σ_j weight_j wait_j / max(run_j, floor_s): with ``batch_weight`` 0 this is the interactive
    jobs' slowdown alone, aligned with the interactive mean W (Σ_j wait_j / run_j =
    Σ_j (1 / W_j − 1)); a small positive weight keeps batch jobs from starving without end.

    Parameters
    ----------
    floor_s : float, default 60
        See :class:`QueueSlowdownReward`.
    batch_weight : float, default 0.1
        Weight of a batch job's waiting, in [0, 1].

    Examples
    --------
    >>> from gridtrace.sim import JobRows
    >>> r = InteractiveSlowdownReward(floor_s=1.0, batch_weight=0.5)
    >>> r.reset(JobRows(job_id=[1, 2], submit_s=[0.0, 0.0], run_s=[10.0, 10.0], cores=[1, 1],
    ...                 vo=["a", "a"], interactive=[True, False]))
    >>> r.advance(2, 10.0)  # 10 s of waiting: 10 / 10 + 0.5 * 10 / 10
    -1.5
    """

    name = "interactive-slowdown"

    def __init__(self, floor_s: float = 60.0, batch_weight: float = 0.1) -> None:
        super().__init__(floor_s)
        if not 0.0 <= batch_weight <= 1.0:
            raise ConfigError(f"batch_weight must be in [0, 1], got {batch_weight}")
        self.batch_weight = float(batch_weight)

    def reset(self, jobs: JobRows) -> None:
        """Bind to ``jobs`` (which must carry the interactive flags): nothing has arrived yet."""
        if jobs.interactive is None:
            raise ConfigError("the interactive-slowdown reward needs the jobs' interactive flags")
        super().reset(jobs)
        batch = self.batch_weight
        self._cost = [
            c if inter else batch * c for c, inter in zip(self._cost, jobs.interactive, strict=True)
        ]

    def describe(self) -> dict[str, object]:
        """Return the settings."""
        return {**super().describe(), "name": self.name, "batch_weight": self.batch_weight}


__all__ += ["InteractiveSlowdownReward"]
