"""The Gymnasium environments (imports gymnasium: reach them through :mod:`gridtrace.sim.rl._gym`).

Both environments drive the site simulator's event loop (:func:`gridtrace.sim.iter_decisions`),
so a step follows exactly the simulator's semantics (completions, then arrivals, then the
provisioning decision, then the scheduling decision at equal times).

:class:`SchedulingEnv` — the scheduling MDP. A step is one scheduling decision: the agent elects
one of the oldest ``max_queue`` waiting jobs. Observation (a flat ``float32`` Box), in order:

* the state vector s (``SchedulingFeatures.n_state`` entries, :class:`SchedulingFeatures`);
* the action matrix, ``max_queue`` rows of ``n_action`` entries (row i describes the i-th oldest
  waiting job; rows past the queue are 0);
* the feasibility mask, ``max_queue`` entries: 1 where the slot holds a job that fits now.

The mask is also ``info["action_mask"]`` (``int8``) and :meth:`SchedulingEnv.action_masks`
(bool). Log-scaled entries are capped at :data:`LOG_CAP` so that every observation lies in the
Box.

:class:`ProvisioningEnv` — the elastic provisioning MDP. A step is one provisioning decision
(every ``interval_s`` of simulated time from the first arrival): the agent picks a pool size, a
fixed heuristic policy schedules in between. Observation: :class:`ProvisioningFeatures`'s state.
"""

from __future__ import annotations

import heapq
import math
import queue as queues
import threading
import weakref
from collections.abc import Callable, Generator, Mapping, Sequence
from itertools import islice
from typing import Any, Literal, SupportsFloat

import gymnasium
import numpy as np
import pyarrow as pa
from gymnasium import spaces
from numpy.typing import NDArray

from gridtrace.errors import ConfigError, SchemaError, SimulationError
from gridtrace.schema import trace_metadata
from gridtrace.sim._engine import (
    ClusterState,
    EventRun,
    JobRows,
    Policy,
    QueueView,
    _prepare,
    iter_decisions,
    job_rows,
    run_events,
)
from gridtrace.sim._estimators import RuntimeEstimator, make_estimator
from gridtrace.sim._policies import POLICIES, PolicyConfig, make_policy
from gridtrace.sim.rl._elastic import ProvisioningFeatures, interval_reward, next_multiple
from gridtrace.sim.rl._features import SchedulingFeatures
from gridtrace.sim.rl._rewards import ResponsivenessFairnessReward, Reward

__all__ = ["LOG_CAP", "ProvisioningEnv", "SchedulingEnv", "TraceSource"]

TraceSource = pa.Table | Callable[[np.random.Generator], pa.Table]
"""A trace table, or a callable that draws one from the environment's numpy Generator."""

LOG_CAP = 30.0
"""Upper bound of the log-scaled observation entries (log1p of work, backlog, runtime, queue).

log1p(x) = 30 needs x ≈ 1e13 units of P τ core-seconds: the cap never binds on a real site; it
only makes the observation space bounded.
"""

Observation = NDArray[np.float32]


class _Traces:
    """The trace of every episode: a fixed table, or one drawn by a factory per episode."""

    def __init__(self, trace: TraceSource, cores: int | None, tau_s: float | None) -> None:
        self._fixed: JobRows | None = None
        self._factory: Callable[[np.random.Generator], pa.Table] | None = None
        meta: dict[str, Any] | None = None
        if isinstance(trace, pa.Table):
            table = _prepare(trace)
            try:
                meta = trace_metadata(table)
            except SchemaError:
                meta = None
            self._fixed = job_rows(table)
            if cores is None:
                if meta is None:
                    raise ConfigError("the trace has no metadata: pass cores=P")
                cores = int(meta["cores"])
        elif callable(trace):
            self._factory = trace
            if cores is None:
                raise ConfigError("with a trace factory, pass cores=P")
        else:
            raise ConfigError(f"trace must be a pyarrow Table or a callable, got {type(trace)}")
        if cores < 1:
            raise ConfigError(f"cores must be >= 1, got {cores}")
        self.cores = int(cores)
        if tau_s is None:
            tau_s = float(meta["tau_s"]) if meta is not None else math.nan
            tau_s = tau_s if math.isfinite(tau_s) else 900.0
        if not tau_s > 0:
            raise ConfigError(f"tau_s must be > 0, got {tau_s}")
        self.tau_s = float(tau_s)

    @property
    def fixed(self) -> JobRows | None:
        """The fixed trace's jobs (None with a factory)."""
        return self._fixed

    def draw(self, rng: np.random.Generator, max_cores: int) -> JobRows:
        """Return the jobs of the next episode; every job must need at most ``max_cores``."""
        if self._factory is None:
            assert self._fixed is not None
            jobs = self._fixed
        else:
            table = self._factory(rng)
            if not isinstance(table, pa.Table):
                raise ConfigError(f"the trace factory returned {type(table)}, not a pyarrow Table")
            jobs = job_rows(_prepare(table))
        if len(jobs) == 0:
            raise ConfigError("an episode needs a trace with at least one job")
        widest = max(jobs.cores)
        if widest > max_cores:
            raise SimulationError(
                f"a job needs {widest} cores but the environment offers at most {max_cores}"
            )
        return jobs


class SchedulingEnv(gymnasium.Env[Observation, np.int64]):
    """The scheduling MDP as a Gymnasium environment (see the module docstring).

    A step elects one job. Before handing a decision to the agent, the environment skips (lets
    time run on) every decision at which no visible job fits: no free core, or only jobs beyond
    the oldest ``max_queue`` would fit (they wait until they become visible). With single-core
    jobs a decision is therefore exactly "a core is free and a job waits".

    Invalid actions never crash: an index that is not a visible job that fits (an empty slot,
    a job that does not fit, an index out of range) elects the oldest job that fits instead and
    sets ``info["invalid_action"]``.

    Reward ("interval credit"): the reward of a step is the sum of the per-job rewards of the jobs
    that completed between this decision and the next one (the simulated time runs between steps;
    a job's reward, e.g. W, is known only when it completes); the terminating step also adds the
    rewards of every job still running, so over an episode the rewards sum to Σ_j r_j over all
    jobs. With the default reward (W, λ_s = 1) that is Σ_j W_j.

    Parameters
    ----------
    trace : pyarrow.Table or callable
        A trace table (replayed every episode), or a callable ``rng -> table`` called at every
        :meth:`reset` with the environment's ``np_random`` (a fresh draw per episode).
    cores : int, optional
        P, the fixed pool; default the trace metadata's ``cores`` (required with a factory).
    vo_shares : mapping of str to float, optional
        Target VO shares: the VO slots of the features (else the trace's most common VOs; required
        with a factory unless ``features`` is given) and the shares of a fairness reward.
    reward : Reward, optional
        Per-job reward (``paid = "job"``); default :class:`ResponsivenessFairnessReward` with
        λ_s = 1 (W alone).
    estimator : str or RuntimeEstimator, default "oracle"
        Runtime estimates in the action rows (``oracle``, ``median``, ``walltime``, or an object).
    estimator_options : mapping, optional
        Options of a named estimator.
    max_queue : int, default 100
        Visible candidate slots: the oldest ``max_queue`` waiting jobs, in queue order.
    features : SchedulingFeatures, optional
        The state and action encoder; default ``SchedulingFeatures.for_site`` with P and τ.
    tau_s : float, optional
        τ of the encoder; default the trace metadata's, else 900 s.

    Attributes
    ----------
    features : SchedulingFeatures
        The encoder.
    jobs : JobRows or None
        The current episode's jobs (rows index :attr:`outcome`'s ``start_s``).
    outcome : EventRun or None
        The schedule of the last finished episode (start times by row, election order, pool).
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (gymnasium's class attribute)

    def __init__(
        self,
        trace: TraceSource,
        *,
        cores: int | None = None,
        vo_shares: Mapping[str, float] | None = None,
        reward: Reward | None = None,
        estimator: str | RuntimeEstimator = "oracle",
        estimator_options: Mapping[str, Any] | None = None,
        max_queue: int = 100,
        features: SchedulingFeatures | None = None,
        tau_s: float | None = None,
    ) -> None:
        if max_queue < 1:
            raise ConfigError(f"max_queue must be >= 1, got {max_queue}")
        self._traces = _Traces(trace, cores, tau_s)
        self.cores = self._traces.cores
        if features is None:
            fixed = self._traces.fixed
            tau = self._traces.tau_s
            if vo_shares:
                features = SchedulingFeatures(list(vo_shares), self.cores, tau_s=tau)
            elif fixed is not None:
                features = SchedulingFeatures.for_site(fixed, self.cores, tau_s=tau)
            else:
                raise ConfigError("with a trace factory, pass vo_shares or features")
        self.features = features
        self.reward: Reward = reward if reward is not None else ResponsivenessFairnessReward(1.0)
        if self.reward.paid != "job":
            raise ConfigError(
                f"the environment pays per-job rewards; the {self.reward.name} reward is paid "
                f"{self.reward.paid!r} (use it with SarsaScheduler)"
            )
        self._estimator = make_estimator(estimator, **dict(estimator_options or {}))
        self.max_queue = int(max_queue)
        n_s, n_a, m = features.n_state, features.n_action, self.max_queue
        self._a0 = n_s
        self._m0 = n_s + m * n_a
        ratio = max(1.0, self.cores / features.pool_cores)
        state_high = np.ones(n_s)
        state_high[[0, 1, 2]] = LOG_CAP
        state_high[3] = ratio
        action_high = np.ones(n_a)
        action_high[features.runtime_column] = LOG_CAP
        action_high[-1] = ratio
        high = np.concatenate([state_high, np.tile(action_high, m), np.ones(m)])
        self._high = high.astype(np.float32)
        self.observation_space = spaces.Box(
            low=np.zeros_like(self._high), high=self._high, dtype=np.float32
        )
        self.action_space = spaces.Discrete(m)
        self._svec = np.zeros(n_s, dtype=np.float64)
        self.jobs: JobRows | None = None
        self.outcome: EventRun | None = None
        self._loop: Generator[tuple[QueueView, ClusterState, float], Sequence[int], EventRun]
        self._live = False
        self._state: ClusterState | None = None
        self._queue: QueueView | None = None
        self._now = math.nan
        self._rows = np.zeros(0, dtype=np.int64)
        self._fits = np.zeros(0, dtype=bool)
        self._actions = np.zeros((0, n_a))
        self._cores = np.zeros(0, dtype=np.int64)
        self._run: Sequence[float] = ()
        self._pending: list[tuple[float, int, float, float]] = []
        self._decisions = 0

    # --- gymnasium API ---------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """Start an episode (a new trace draw with a factory); return the first decision."""
        super().reset(seed=seed)
        if options:
            raise ConfigError(f"reset takes no options, got {sorted(options)}")
        jobs = self._traces.draw(self.np_random, self.cores)
        self.jobs = jobs
        self.outcome = None
        self.reward.reset(jobs)
        feats = self.features
        interactive = jobs.interactive if jobs.interactive is not None else [False] * len(jobs)
        self._actions = feats.static_actions(interactive, feats.slots(jobs.vo), jobs.cores)
        self._cores = np.asarray(jobs.cores, dtype=np.int64)
        self._run = jobs.run_s
        self._pending = []
        self._decisions = 0
        self._loop = iter_decisions(
            jobs, total_cores=self.cores, estimator=self._estimator, name="gym", repeat=True
        )
        self._live = self._seek(None)  # the generator resets the estimator before it yields
        if not self._live:  # pragma: no cover - a non-empty trace always has a first decision
            raise SimulationError("the episode ended before its first decision")
        if self._estimator.static:
            n = len(jobs)
            est = self._estimator.estimate
            guess = np.fromiter((est(r, 0.0) for r in range(n)), np.float64, count=n)
            self._actions[:, feats.runtime_column] = feats.runtime_feature(guess)
        obs, mask = self._observe()
        return obs, self._info(mask)

    def step(
        self, action: int | np.integer[Any]
    ) -> tuple[Observation, SupportsFloat, bool, bool, dict[str, Any]]:
        """Elect the job in slot ``action``; run to the next decision (see the class docstring)."""
        if not self._live:
            raise SimulationError("the episode is over (or was never started): call reset()")
        a = int(action)
        fits = self._fits
        invalid = not (0 <= a < fits.size and fits[a])
        i = int(np.argmax(fits)) if invalid else a
        row = int(self._rows[i])
        now = self._now
        note = self.reward.elect(row, now)
        heapq.heappush(self._pending, (now + self._run[row], row, now, note))
        self._decisions += 1
        self._live = self._seek([row])
        reward, paid = self._pay(self._now if self._live else math.inf)
        obs, mask = self._observe()
        info = self._info(mask)
        info["invalid_action"] = invalid
        info["job_id"] = int(self.jobs.job_id[row]) if self.jobs is not None else -1
        info["completed"] = paid
        return obs, reward, not self._live, False, info

    def action_masks(self) -> NDArray[np.bool_]:
        """Return the feasibility mask of the current decision (True: a visible job that fits)."""
        mask = np.zeros(self.max_queue, dtype=bool)
        if self._live:
            mask[: self._fits.size] = self._fits
        return mask

    def split_observation(
        self, obs: NDArray[np.floating[Any]]
    ) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
        """Return the (state, action matrix, mask) parts of an observation (views)."""
        n_a = self.features.n_action
        return (
            obs[: self._a0],
            obs[self._a0 : self._m0].reshape(self.max_queue, n_a),
            obs[self._m0 :],
        )

    # --- the event loop ----------------------------------------------------------------------

    def _seek(self, chosen: list[int] | None) -> bool:
        """Send ``chosen``; run on to the next decision where a visible job fits (False: done)."""
        loop = self._loop
        cores = self._cores
        m = self.max_queue
        while True:
            try:
                queue, state, now = next(loop) if chosen is None else loop.send(chosen)
            except StopIteration as stop:
                self.outcome = stop.value
                self._rows = np.zeros(0, dtype=np.int64)
                self._fits = np.zeros(0, dtype=bool)
                if self._state is not None:
                    self._now = self._state.now
                return False
            self._state = state
            free = state.free_cores
            if free > 0:
                k = min(len(queue), m)
                rows = np.fromiter(islice(queue, k), dtype=np.int64, count=k)
                fits = cores[rows] <= free
                if fits.any():
                    self._queue = queue
                    self._now = now
                    self._rows = rows
                    self._fits = fits
                    return True
            chosen = []

    def _pay(self, until: float) -> tuple[float, int]:
        """Return the summed rewards (and count) of the elected jobs that completed by ``until``."""
        pending = self._pending
        complete = self.reward.complete
        total = 0.0
        paid = 0
        while pending and pending[0][0] <= until:
            _, row, start, note = heapq.heappop(pending)
            total += complete(row, start, note)
            paid += 1
        return total, paid

    def _observe(self) -> tuple[Observation, NDArray[np.int8]]:
        obs = np.zeros(self._high.size, dtype=np.float32)
        mask = np.zeros(self.max_queue, dtype=np.int8)
        state = self._state
        if state is None:
            return obs, mask
        obs[: self._a0] = self.features.state(state, self._svec)
        rows = self._rows
        k = rows.size
        if k:
            actions = self._actions[rows]
            if not self._estimator.static:
                est = state.estimate
                guess = np.fromiter((est(int(r)) for r in rows), np.float64, count=k)
                actions[:, self.features.runtime_column] = self.features.runtime_feature(guess)
            obs[self._a0 : self._a0 + actions.size] = actions.ravel()
            mask[:k] = self._fits
            obs[self._m0 : self._m0 + k] = self._fits
        np.minimum(obs, self._high, out=obs)
        return obs, mask

    def _info(self, mask: NDArray[np.int8]) -> dict[str, Any]:
        queued = len(self._queue) if self._live and self._queue is not None else 0
        return {
            "now": float(self._now),
            "queue_length": queued,
            "visible": int(self._rows.size),
            "decisions": self._decisions,
            "action_mask": mask,
        }


# --- the provisioning environment ------------------------------------------------------------

_Message = (
    tuple[Literal["decision"], ClusterState]
    | tuple[Literal["done"], EventRun]
    | tuple[Literal["error"], BaseException]
)


class _Stop(Exception):
    """Raised in the engine's thread to abandon an episode."""


class _Handoff:
    """The provisioning policy the engine sees; it hands every decision to the environment.

    The engine calls :meth:`pool_size` inside its loop (in the worker thread); the call posts
    the cluster state to the environment and blocks until :meth:`ProvisioningEnv.step` answers
    with a pool size. Exactly one of the two threads runs at any time.
    """

    name = "gym"

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._first = 0.0
        self.to_env: queues.SimpleQueue[_Message] = queues.SimpleQueue()
        self.to_engine: queues.SimpleQueue[int | None] = queues.SimpleQueue()

    def reset(self, jobs: JobRows) -> None:
        self._first = float(jobs.submit_s[0])

    def next_decision(self, after: float) -> float:
        """Return the first time first + k × interval_s strictly after ``after``."""
        return next_multiple(self._first, self.interval_s, after)

    def pool_size(self, queue: QueueView, state: ClusterState, now: float) -> int:
        self.to_env.put(("decision", state))
        size = self.to_engine.get()
        if size is None:
            raise _Stop
        return size

    def stop(self) -> None:
        """Make a waiting engine thread abandon its episode."""
        self.to_engine.put(None)


def _run_episode(
    jobs: JobRows,
    cores: int,
    scheduler: Policy,
    estimator: RuntimeEstimator,
    handoff: _Handoff,
) -> None:
    """Run one episode of the event loop (the worker thread); post its end or error to the env."""
    try:
        outcome = run_events(
            jobs, total_cores=cores, policy=scheduler, estimator=estimator, provisioning=handoff
        )
    except _Stop:
        return
    except BaseException as exc:  # re-raised in the environment's thread
        handoff.to_env.put(("error", exc))
        return
    handoff.to_env.put(("done", outcome))


class ProvisioningEnv(gymnasium.Env[Observation, np.int64]):
    """The elastic provisioning MDP as a Gymnasium environment (see the module docstring).

    Decisions come every ``interval_s`` of simulated time from the first arrival (at the
    instant, after its completions and arrivals and before its scheduling). The action is an
    index into :attr:`sizes`, the ``levels`` pool sizes evenly spaced (rounded, distinct) from
    ``floor`` to ``ceiling``; the pool becomes max(size, floor, cores in use): never below the
    running jobs or the floor. Between decisions the ``scheduler`` policy schedules.

    The reward of a step is that of the interval from this decision to the next (or to the end of
    the run, for the terminating step): λ_e W̄ + (1 − λ_e) U, with W̄ the mean W of the jobs
    completed in the interval and U = core-seconds used / core-seconds provisioned, from the
    cluster state's exact integrals (:func:`interval_reward`, the formula of
    :class:`~gridtrace.sim.rl.ElasticProvisioner`). The episode terminates when every job has run.

    The engine calls a provisioning policy inside its loop, so the loop runs in a worker thread
    that waits in the policy for :meth:`step`'s action; the two threads take strict turns, so
    runs are deterministic. :meth:`close` (or :meth:`reset`, or garbage collection) ends the
    thread of an unfinished episode. A pool smaller than a waiting job's cores with nothing
    running leaves it waiting; the engine gives up (a ``SimulationError`` from :meth:`step`)
    after 10,000 such decisions.

    Parameters
    ----------
    trace : pyarrow.Table or callable
        A trace table, or a callable ``rng -> table`` called at every :meth:`reset`.
    cores : int, optional
        P: the pool before the first decision and the reference of the features; default the
        trace metadata's ``cores`` (required with a factory).
    floor : int, default 30
        Smallest pool size.
    ceiling : int, optional
        Largest pool size; default round(1.1 P).
    levels : int, default 9
        Pool sizes offered (fewer if rounding makes some equal).
    interval_s : float, default 900
        Time between decisions.
    lambda_e : float, default 0.5
        Weight of W̄ against U in the reward.
    scheduler : str or Policy, default "fifo"
        A name in :data:`gridtrace.sim.POLICIES` (built afresh every episode, with the
        environment's ``np_random`` for ``random``) or a policy object.
    policy_options : mapping, optional
        Options of a named scheduler (fields of :class:`~gridtrace.sim.PolicyConfig`).
    vo_shares : mapping of str to float, optional
        Target VO shares (the ``fairshare`` scheduler needs them).
    estimator : str or RuntimeEstimator, default "oracle"
        The runtime estimates the scheduler sees.
    estimator_options : mapping, optional
        Options of a named estimator.
    tau_s : float, optional
        τ of the features; default the trace metadata's, else 900 s.

    Attributes
    ----------
    sizes : ndarray of int64
        The pool size of every action.
    jobs : JobRows or None
        The current episode's jobs.
    outcome : EventRun or None
        The schedule of the last finished episode, with its pool-size series.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (gymnasium's class attribute)

    def __init__(
        self,
        trace: TraceSource,
        *,
        cores: int | None = None,
        floor: int = 30,
        ceiling: int | None = None,
        levels: int = 9,
        interval_s: float = 900.0,
        lambda_e: float = 0.5,
        scheduler: str | Policy = "fifo",
        policy_options: Mapping[str, Any] | None = None,
        vo_shares: Mapping[str, float] | None = None,
        estimator: str | RuntimeEstimator = "oracle",
        estimator_options: Mapping[str, Any] | None = None,
        tau_s: float | None = None,
    ) -> None:
        self._traces = _Traces(trace, cores, tau_s)
        p = self._traces.cores
        self.cores = p
        top = round(1.1 * p) if ceiling is None else int(ceiling)
        if not 0 <= floor <= top:
            raise ConfigError(f"need 0 <= floor <= ceiling, got {floor}, {top}")
        if levels < 2 or not interval_s > 0 or not 0.0 <= lambda_e <= 1.0:
            raise ConfigError("need levels >= 2, interval_s > 0 and lambda_e in [0, 1]")
        self.floor = int(floor)
        self.ceiling = int(top)
        self.sizes = np.unique(np.round(np.linspace(floor, top, levels)).astype(np.int64))
        self.interval_s = float(interval_s)
        self.lambda_e = float(lambda_e)
        self.features = ProvisioningFeatures(p, tau_s=self._traces.tau_s)
        self._policy_config = PolicyConfig(vo_shares=vo_shares, tau_s=self._traces.tau_s)
        self._policy_options = dict(policy_options or {})
        if isinstance(scheduler, str):
            if scheduler not in POLICIES or scheduler == "native":
                known = ", ".join(sorted(set(POLICIES) - {"native"}))
                raise ConfigError(f"unknown scheduler {scheduler!r}; known: {known}")
            self._policy_config.with_options(self._policy_options)  # unknown options fail here
        elif self._policy_options:
            raise ConfigError("policy_options apply to scheduler names only")
        self._scheduler = scheduler
        self._estimator = make_estimator(estimator, **dict(estimator_options or {}))
        ratio = max(self.ceiling, p) / p
        high = np.array([LOG_CAP, LOG_CAP, LOG_CAP, ratio, ratio, 1.0], dtype=np.float32)
        self._high = high
        self.observation_space = spaces.Box(low=np.zeros_like(high), high=high, dtype=np.float32)
        self.action_space = spaces.Discrete(int(self.sizes.size))
        self.jobs: JobRows | None = None
        self.outcome: EventRun | None = None
        self._handoff: _Handoff | None = None
        self._thread: threading.Thread | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._state: ClusterState | None = None
        self._live = False
        self._last: tuple[float, float, int, float, int] | None = None
        self._last_w = 1.0
        self._decisions = 0

    # --- gymnasium API ---------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """Start an episode (a new trace draw with a factory); return the first decision."""
        super().reset(seed=seed)
        if options:
            raise ConfigError(f"reset takes no options, got {sorted(options)}")
        self._end_worker()
        jobs = self._traces.draw(self.np_random, self.ceiling)
        self.jobs = jobs
        self.outcome = None
        self._state = None
        self._last = None
        self._last_w = 1.0
        self._decisions = 0
        if isinstance(self._scheduler, str):
            config = self._policy_config.with_options({"rng": self.np_random.spawn(1)[0]})
            scheduler = make_policy(self._scheduler, config, **self._policy_options)
        else:
            scheduler = self._scheduler
        handoff = _Handoff(self.interval_s)
        thread = threading.Thread(
            target=_run_episode,
            args=(jobs, self.cores, scheduler, self._estimator, handoff),
            name="gridtrace-provisioning-env",
            daemon=True,
        )
        self._handoff = handoff
        self._thread = thread
        self._finalizer = weakref.finalize(self, handoff.stop)
        thread.start()
        self._live = self._receive()
        if not self._live:  # pragma: no cover - the first arrival is always a decision
            raise SimulationError("the episode ended before its first decision")
        return self._observe(), self._info()

    def step(
        self, action: int | np.integer[Any]
    ) -> tuple[Observation, SupportsFloat, bool, bool, dict[str, Any]]:
        """Set the pool to ``sizes[action]`` (clamped up) and run to the next decision."""
        if not self._live or self._handoff is None or self._state is None:
            raise SimulationError("the episode is over (or was never started): call reset()")
        a = int(action)
        if not 0 <= a < self.sizes.size:
            raise ConfigError(f"action must be in [0, {self.sizes.size}), got {a}")
        state = self._state
        requested = int(self.sizes[a])
        in_use = state.in_use
        size = max(requested, self.floor, in_use)
        self._last = (state.now, state.busy_core_s, state.completed, state.completed_w, size)
        self._decisions += 1
        self._handoff.to_engine.put(size)
        self._live = self._receive()
        reward, u, w_bar = interval_reward(state, state.now, self._last, self.lambda_e)
        self._last_w = w_bar
        info = self._info()
        info.update(
            pool_size=size,
            requested=requested,
            clamped=size > requested,
            in_use_at_decision=in_use,
            utilisation=u,
            mean_w=w_bar,
        )
        return self._observe(), reward, not self._live, False, info

    def close(self) -> None:
        """End the worker thread of an unfinished episode."""
        self._end_worker()
        super().close()

    # --- internals -----------------------------------------------------------------------------

    def _receive(self) -> bool:
        """Wait for the engine's next message: True at a decision, False when the run ended."""
        assert self._handoff is not None
        kind, payload = self._handoff.to_env.get()
        if kind == "decision":
            assert isinstance(payload, ClusterState)
            self._state = payload
            return True
        self._join()
        if kind == "done":
            assert isinstance(payload, EventRun)
            self.outcome = payload
            return False
        assert isinstance(payload, BaseException)
        self._live = False
        raise payload

    def _join(self) -> None:
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._handoff = None

    def _end_worker(self) -> None:
        if self._live and self._handoff is not None:
            self._handoff.stop()
        self._live = False
        self._join()

    def _observe(self) -> Observation:
        if self._state is None:  # pragma: no cover - reset always reaches a decision
            return np.zeros(self._high.size, dtype=np.float32)
        obs = self.features.state(self._state, self._last_w).astype(np.float32)
        np.clip(obs, 0.0, self._high, out=obs)
        return obs

    def _info(self) -> dict[str, Any]:
        state = self._state
        return {
            "now": float(state.now) if state is not None else math.nan,
            "queue_length": sum(state.queued_by_vo.values()) if state is not None else 0,
            "in_use": state.in_use if state is not None else 0,
            "decisions": self._decisions,
        }
