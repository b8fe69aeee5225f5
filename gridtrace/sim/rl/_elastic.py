"""The elastic provisioning supervisor: SARSA over the pool size, every 15 minutes or m jobs.

At each decision (every ``interval_s`` of simulated time from the first arrival; or, with
``every_jobs`` = m, after every m jobs started or ``interval_s`` after the previous decision,
whichever comes first) the controller
sees the cluster (:class:`ProvisioningFeatures`) and chooses the pool size among ``levels``
sizes spaced evenly between ``floor`` and ``ceiling``, ε-greedy on Q. Sizes below the running
jobs' cores (or the floor) are never candidates: the lowest candidate is max(floor, cores in use),
so the controller never asks for less than the running jobs hold. The reward of a decision,
paid at the next one, is λ_e W̄ + (1 − λ_e) U over the interval: W̄ the mean W of the jobs that
completed in it (the mean W of the run so far if none did) and U = core-seconds used / core-
seconds provisioned in it (from :class:`~gridtrace.sim.ClusterState`'s exact integrals).

``w_reward="queue"`` prices the jobs still waiting: W̄ is then the mean W over the jobs completed
in the interval and the jobs queued at the decision, each counted with the W it would have if it
started now, r / (r + wait so far) (r its runtime, known to the simulator that pays the reward,
never shown to the agent), over interactive jobs only with ``w_class="interactive"``. With the
default W̄ of completed jobs, a smaller pool raises U at once while the waits it causes enter W̄
only when those jobs complete, hours later and beyond γ's horizon (γ 0.8 per 15 min): on the
LPC regimes the controller then drives the pool to its floor.

Pre-training (``behaviour``): a provisioning policy (e.g. the
:class:`~gridtrace.sim.ThresholdAutoscaler`) chooses instead of Q while the controller records
and learns, its size mapped to the nearest candidate, as SJF pre-training does for the scheduler.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from gridtrace.errors import ConfigError
from gridtrace.sim._provisioning import next_multiple
from gridtrace.sim.rl._qfunctions import QFunction
from gridtrace.sim.rl._sarsa import sarsa_refit
from gridtrace.sim.rl._transitions import TransitionStore

if TYPE_CHECKING:
    from gridtrace.sim._engine import ClusterState, JobRows, QueueView
    from gridtrace.sim._provisioning import ProvisioningPolicy

__all__ = [
    "ElasticProvisioner",
    "ProvisioningFeatures",
    "interval_reward",
    "next_multiple",
    "queue_w",
]


def queue_w(queue: QueueView, now: float, *, interactive_only: bool = False) -> tuple[float, int]:
    """Return (Σ W, count) over the queued jobs, each with W = r / (r + wait so far).

    The W a waiting job would have if it started now (its W can only fall from there). With
    ``interactive_only`` only jobs flagged interactive count.
    """
    run, submit = queue.run_s, queue.submit_s
    flags = queue.jobs.interactive
    total = 0.0
    count = 0
    for row in queue:
        if interactive_only and (flags is None or not flags[row]):
            continue
        r = run[row]
        wait = now - submit[row]
        total += r / (r + wait) if r + wait > 0 else 1.0
        count += 1
    return total, count


def interval_reward(
    state: ClusterState,
    now: float,
    last: tuple[float, float, int, float, int],
    lambda_e: float,
    pending: tuple[float, int] | None = None,
    *,
    interactive_only: bool = False,
) -> tuple[float, float, float]:
    """Return (reward, U, W̄) of the provisioning interval from the last decision to ``now``.

    The formula of :class:`~gridtrace.sim.rl.ElasticProvisioner`: reward = λ_e W̄ + (1 − λ_e) U,
    with U = core-seconds used / core-seconds provisioned in the interval (1 for an empty
    interval) and W̄ the mean W of the jobs completed in it (the mean W of the run so far if none
    did, 1 if none has).

    Parameters
    ----------
    state : ClusterState
        The cluster now (its integrals ``busy_core_s``, ``completed``, ``completed_w``).
    now : float
        End of the interval.
    last : tuple
        (time, busy_core_s, completed, completed_w, pool size) at the last decision.
    lambda_e : float
        Weight of W̄.
    pending : (float, int), optional
        Σ W and count of the jobs waiting now (:func:`queue_w`): W̄ is then the mean over the
        jobs completed in the interval and these (1 if there are none), and ``last`` holds the
        interactive counters instead with ``interactive_only``.
    interactive_only : bool, default False
        Count interactive jobs only (with ``pending``).
    """
    t0, busy0, done0, w0, size0 = last
    provisioned = size0 * (now - t0)
    used = state.busy_core_s - busy0
    u = min(1.0, used / provisioned) if provisioned > 0 else 1.0
    if pending is not None:
        # completed in the interval plus the waiting jobs, priced now
        if interactive_only:
            done = state.completed_interactive - done0
            w_done = state.completed_interactive_w - w0
        else:
            done = state.completed - done0
            w_done = state.completed_w - w0
        count = done + pending[1]
        w_bar = (w_done + pending[0]) / count if count else 1.0
        return lambda_e * w_bar + (1.0 - lambda_e) * u, u, w_bar
    done = state.completed - done0
    if done:
        w_bar = (state.completed_w - w0) / done
    else:
        w_bar = state.completed_w / state.completed if state.completed else 1.0
    return lambda_e * w_bar + (1.0 - lambda_e) * u, u, w_bar


class ProvisioningFeatures:
    """Encoder of the provisioning MDP's state and action vectors.

    State: log1p(running work / (P τ)), log1p(backlog work / (P τ)), log1p(queued jobs / P),
    cores in use / P, pool size / P, mean W of the last interval. Action: the candidate pool size
    / P and (size − cores in use) / P.

    Parameters
    ----------
    pool_cores : int
        Reference P (the site's cores).
    tau_s : float, default 900
        τ, the unit of work.
    """

    n_state = 6
    n_action = 2
    names_state = ("running_work", "backlog_work", "queued", "in_use", "pool_size", "last_w")
    names_action = ("size", "headroom")

    def __init__(self, pool_cores: int, *, tau_s: float = 900.0) -> None:
        if pool_cores < 1 or not tau_s > 0:
            raise ConfigError("pool_cores must be >= 1 and tau_s > 0")
        self.pool_cores = int(pool_cores)
        self.tau_s = float(tau_s)

    def state(self, state: ClusterState, last_w: float) -> NDArray[np.float64]:
        """Return the state vector now."""
        p = float(self.pool_cores)
        unit = p * self.tau_s
        queued = sum(state.queued_by_vo.values())
        return np.array(
            [
                math.log1p(state.running_work_s / unit),
                math.log1p(state.backlog_work_s / unit),
                math.log1p(queued / p),
                state.in_use / p,
                state.pool_size / p,
                last_w,
            ]
        )

    def actions(self, sizes: NDArray[np.int64], in_use: int) -> NDArray[np.float64]:
        """Return the action rows of candidate pool sizes."""
        p = float(self.pool_cores)
        return np.column_stack([sizes / p, (sizes - in_use) / p])


class ElasticProvisioner:
    """The RL elastic provisioning controller (a :class:`~gridtrace.sim.ProvisioningPolicy`).

    Parameters
    ----------
    qfunction : QFunction
        Built for ``ProvisioningFeatures.n_state`` (6) and ``n_action`` (2).
    features : ProvisioningFeatures
        The encoder (its P is the reference for the default ceiling).
    rng : numpy.random.Generator
        Exploration stream.
    floor : int, default 30
        Smallest pool size.
    ceiling : int, optional
        Largest pool size; default round(1.1 P).
    levels : int, default 9
        Candidate sizes, evenly spaced from ``floor`` to ``ceiling``.
    interval_s : float, default 900
        Time between decisions (with ``every_jobs``: the longest time between decisions).
    every_jobs : int, optional
        Also decide as soon as this many jobs have started since the last decision (the
        research's "every m scheduled jobs"); the clock then restarts at each decision.
    lambda_e : float, default 0.5
        Weight of W̄ against U in the reward.
    epsilon, gamma, eta : float
        ε-greedy, discount per decision, SARSA learning rate (defaults 0.05, 0.8, 0.2).
    refit_every : int, default 50
        Decisions between refits (a decision every 15 min: 50 decisions ≈ 12.5 h).
    window : int, default 2000
        Most recent transitions a refit uses.
    learning : bool, default True
        Refit during runs; False freezes Q.
    w_reward : {"completed", "queue"}, default "completed"
        W̄ of the reward: of the jobs completed in the interval, or of those and the jobs waiting
        at the decision, priced now (see the module docstring).
    w_class : {"all", "interactive"}, default "all"
        The jobs W̄ counts, with ``w_reward="queue"``.
    behaviour : ProvisioningPolicy, optional
        Choose by this policy instead of by Q, still recording and learning (pre-training);
        set it to None afterwards.
    name : str, default "rl-elastic"
        Written into results.

    Attributes
    ----------
    decisions_, refits_ : int
        Decisions taken and refits done over all runs.
    store_ : TransitionStore
        Every decision and its reward.
    history_ : list of tuple
        (time, chosen size, U, W̄) of every decision of the current run.
    """

    def __init__(
        self,
        qfunction: QFunction,
        features: ProvisioningFeatures,
        *,
        rng: np.random.Generator,
        floor: int = 30,
        ceiling: int | None = None,
        levels: int = 9,
        interval_s: float = 900.0,
        every_jobs: int | None = None,
        lambda_e: float = 0.5,
        epsilon: float = 0.05,
        gamma: float = 0.8,
        eta: float = 0.2,
        refit_every: int = 50,
        window: int = 2000,
        learning: bool = True,
        w_reward: Literal["completed", "queue"] = "completed",
        w_class: Literal["all", "interactive"] = "all",
        behaviour: ProvisioningPolicy | None = None,
        name: str = "rl-elastic",
    ) -> None:
        if (qfunction.n_state, qfunction.n_action) != (features.n_state, features.n_action):
            raise ConfigError("the Q function does not match the provisioning features")
        top = round(1.1 * features.pool_cores) if ceiling is None else int(ceiling)
        if not 0 <= floor <= top:
            raise ConfigError(f"need 0 <= floor <= ceiling, got {floor}, {top}")
        if levels < 2 or not interval_s > 0 or not 0.0 <= lambda_e <= 1.0:
            raise ConfigError("need levels >= 2, interval_s > 0 and lambda_e in [0, 1]")
        if refit_every < 1 or window < 1 or not 0.0 <= epsilon <= 1.0:
            raise ConfigError("need refit_every, window >= 1 and epsilon in [0, 1]")
        if every_jobs is not None and every_jobs < 1:
            raise ConfigError(f"every_jobs must be >= 1 or None, got {every_jobs}")
        if w_reward not in ("completed", "queue") or w_class not in ("all", "interactive"):
            raise ConfigError(
                f"w_reward must be completed or queue and w_class all or interactive, got "
                f"{w_reward!r}, {w_class!r}"
            )
        self.w_reward = w_reward
        self.w_class = w_class
        self.behaviour = behaviour
        self.qfunction = qfunction
        self.features = features
        self.rng = rng
        self.floor = int(floor)
        self.ceiling = top
        self.sizes = np.unique(np.round(np.linspace(floor, top, levels)).astype(np.int64))
        self.interval_s = float(interval_s)
        self.every_starts = None if every_jobs is None else int(every_jobs)
        self.lambda_e = float(lambda_e)
        self.epsilon = float(epsilon)
        self.gamma = float(gamma)
        self.eta = float(eta)
        self.refit_every = int(refit_every)
        self.window = int(window)
        self.learning = learning
        self.name = name
        self.decisions_ = 0
        self.refits_ = 0
        self.store_ = TransitionStore(qfunction.n_inputs)
        self.history_: list[tuple[float, int, float, float]] = []
        self._first = 0.0
        self._last: tuple[float, float, int, float, int] | None = None
        self._last_index = -1

    def describe(self) -> dict[str, Any]:
        """Return the controller's settings (written into results)."""
        return {
            "name": self.name,
            "qfunction": type(self.qfunction).__name__,
            "floor": self.floor,
            "ceiling": self.ceiling,
            "sizes": self.sizes.tolist(),
            "interval_s": self.interval_s,
            "every_jobs": self.every_starts,
            "lambda_e": self.lambda_e,
            "epsilon": self.epsilon,
            "gamma": self.gamma,
            "eta": self.eta,
            "refit_every": self.refit_every,
            "window": self.window,
            "discounting": "per decision",
            "learning": self.learning,
            "w_reward": self.w_reward,
            "w_class": self.w_class,
            "behaviour": None if self.behaviour is None else self.behaviour.name,
            "decisions": self.decisions_,
            "refits": self.refits_,
        }

    def reset(self, jobs: JobRows) -> None:
        """Start a run: decisions from the first arrival on, a new episode."""
        self._first = float(jobs.submit_s[0]) if len(jobs.submit_s) else 0.0
        self._last = None
        self._last_index = -1
        self.store_.new_episode()
        self.qfunction.reset_state()
        self.history_ = []
        reset = getattr(self.behaviour, "reset", None)
        if callable(reset):
            reset(jobs)

    def next_decision(self, after: float) -> float:
        """Return the next decision time on the clock after the decision at ``after``.

        The next multiple of ``interval_s`` from the first arrival; with ``every_jobs``,
        ``after + interval_s`` (the engine decides earlier once m jobs have started).
        """
        if self.every_starts is None:
            return next_multiple(self._first, self.interval_s, after)
        return self._first if after == -math.inf else after + self.interval_s

    def pool_size(self, queue: QueueView, state: ClusterState, now: float) -> int:
        """Choose the pool size from ``now`` on (see the module docstring)."""
        last_w = 1.0
        u = math.nan
        inter = self.w_class == "interactive"
        if self._last is not None:
            pending = (
                queue_w(queue, now, interactive_only=inter) if self.w_reward == "queue" else None
            )
            reward, u, last_w = interval_reward(
                state, now, self._last, self.lambda_e, pending, interactive_only=inter
            )
            self.store_.pay(self._last_index, reward)
        lowest = max(self.floor, state.in_use)
        sizes = self.sizes[self.sizes > lowest]
        sizes = np.concatenate(([lowest], sizes)).astype(np.int64)
        s = self.features.state(state, last_w)
        actions = self.features.actions(sizes, state.in_use)
        qf = self.qfunction
        if self.behaviour is not None:
            # the behaviour's own size (clamped) joins the candidates: its steps may be finer
            # than the levels
            wanted = min(
                max(int(self.behaviour.pool_size(queue, state, now)), lowest), self.ceiling
            )
            sizes = np.unique(np.append(sizes, wanted)).astype(np.int64)
            actions = self.features.actions(sizes, state.in_use)
            i = int(np.searchsorted(sizes, wanted))
        elif self.epsilon > 0.0 and self.rng.random() < self.epsilon:
            i = int(self.rng.integers(sizes.size))
        else:
            i = int(np.argmax(qf.q_candidates(s, actions)))
        x = qf.candidate_inputs(s, actions[i : i + 1])[0]
        qf.commit(s, actions[i])
        self._last_index = self.store_.add(x, now)
        size = int(sizes[i])
        if self.w_reward == "queue" and inter:
            done, w_done = state.completed_interactive, state.completed_interactive_w
        else:
            done, w_done = state.completed, state.completed_w
        self._last = (now, state.busy_core_s, done, w_done, size)
        self.history_.append((now, size, u, last_w))
        self.decisions_ += 1
        if self.learning and self.decisions_ % self.refit_every == 0:
            self.refit()
        return size

    def refit(self) -> int:
        """Refit Q on the SARSA targets of the recent decisions; return the rows used."""
        used = sarsa_refit(
            self.qfunction,
            self.store_,
            window=self.window,
            eta=self.eta,
            gamma=self.gamma,
            time_unit_s=None,
        )
        if used:
            self.refits_ += 1
        return used
