"""The event engine: one queue, an elastic pool of identical cores, rigid jobs, no preemption.

Semantics (DESIGN.md, "Simulator semantics")
--------------------------------------------
* Jobs arrive at ``submit_s``, wait in one queue and run on ``cores`` of the pool's identical
  cores for exactly ``run_s`` seconds, without preemption.
* Events at equal times are handled in this order: completions, then arrivals, then the
  provisioning decision (if one is due), then the scheduling decision. A job whose predecessor
  ends at t can therefore start at t, and a job that arrives at t sees the cores freed at t.
* The queue is ordered by (submit_s, job_id); that is also the order in which jobs become visible
  to the policy, and the tie-break between otherwise equal jobs.
* Times are float64 seconds from the trace origin.
* The pool starts at P cores; a :class:`~gridtrace.sim.ProvisioningPolicy` may change it at its
  decision times, never below the cores in use. A provisioning policy with an integer
  ``every_starts`` attribute also decides, at the same instant, once that many jobs have started
  since its last decision (after the scheduling decision that started the last of them).

A policy is a strategy object with one method, ``select(queue, state, now)``, that returns the
queued jobs to start now, in order (:class:`Policy`). It sees the queue (:class:`QueueView`), the
cluster state and the state features (:class:`ClusterState`, maintained incrementally by the
engine, never by rescanning), and asks the state for runtime estimates (``state.estimate(row)``),
which come from the run's :class:`~gridtrace.sim.RuntimeEstimator`. The engine validates every
choice: a job that is not queued or does not fit is a :class:`~gridtrace.errors.SimulationError`.

Strict FIFO has two fast kernels (:func:`fifo_single_core_starts`,
:func:`fifo_multi_core_starts`), and EASY backfilling, greedy first-fit and conservative
backfilling numba kernels (:mod:`gridtrace.sim._kernels`); the tests check each against
:func:`run_events`.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError, SchemaError, SimulationError
from gridtrace.random import SeedLike, as_generator
from gridtrace.schema import SIM_RESULT, TRACE, conform, trace_metadata
from gridtrace.sim._estimators import (
    OracleEstimator,
    RuntimeEstimator,
    WalltimeEstimator,
    make_estimator,
)
from gridtrace.sim._metrics import (
    bounded_slowdown,
    fairness_at_election,
    responsiveness,
    summarise,
)
from gridtrace.sim._provisioning import FixedPool, ProvisioningPolicy
from gridtrace.sim._result import SimulationResult, with_sim_metadata

__all__ = [
    "ClusterState",
    "EventRun",
    "JobRows",
    "Policy",
    "QueueView",
    "StateFeatures",
    "fifo_multi_core_starts",
    "fifo_single_core_starts",
    "iter_decisions",
    "job_rows",
    "run_events",
    "simulate",
]

logger = library_logger(__name__)

MAX_STUCK_PROVISIONING = 10_000
"""Provisioning decisions the engine waits through while queued jobs cannot ever start."""


@dataclass(frozen=True, slots=True)
class JobRows:
    """The jobs of a trace as per-row Python sequences, sorted by (submit_s, job_id).

    A job's *row* is its position in this order. Lists, not arrays: the event loop and the policies
    index single elements, which is several times faster on lists.

    Parameters
    ----------
    job_id : sequence of int
    submit_s : sequence of float
    run_s : sequence of float
    cores : sequence of int
    vo : sequence of str or None
    walltime_req_s : sequence of float, optional
        Requested walltimes (NaN where unknown); needed by the ``walltime`` estimator.
    user, queue : sequence of str or None, optional
        Used by estimators that classify jobs by user or queue.
    wait_s : sequence of float, optional
        As-logged waits (NaN where unknown); needed by the as-logged replay.
    interactive : sequence of bool, optional
        The trace's class label (run_s ≤ τ). Policies and estimators that use it treat it as
        declared by the submitter, as the research does (interactive jobs go to their own queue).
    """

    job_id: Sequence[int]
    submit_s: Sequence[float]
    run_s: Sequence[float]
    cores: Sequence[int]
    vo: Sequence[str | None]
    walltime_req_s: Sequence[float] | None = None
    user: Sequence[str | None] | None = None
    queue: Sequence[str | None] | None = None
    wait_s: Sequence[float] | None = None
    interactive: Sequence[bool] | None = None

    def __len__(self) -> int:
        return len(self.submit_s)


class QueueView:
    """Read-only view of the waiting jobs, shown to a policy at each decision.

    Iterating over the view yields the rows of the queued jobs in (submit_s, job_id) order, so the
    first row is the head of a FIFO queue.

    Parameters
    ----------
    queue : dict of int to None
        The engine's queue (an insertion-ordered set of rows). The view never modifies it.
    jobs : JobRows
        Every job of the trace (not only the queued ones).

    Attributes
    ----------
    job_id, submit_s, run_s, cores, vo : sequence
        The columns of ``jobs``; index them with a row.
    jobs : JobRows
        Every job of the trace.
    arrived : int
        How many jobs have arrived so far: rows ``0 … arrived − 1`` (jobs arrive in row order).
        A policy that keeps its own ordered structure adds the rows it has not seen yet.
    """

    __slots__ = ("_queue", "arrived", "cores", "job_id", "jobs", "run_s", "submit_s", "vo")

    def __init__(self, queue: dict[int, None], jobs: JobRows) -> None:
        self._queue = queue
        self.jobs = jobs
        self.job_id = jobs.job_id
        self.submit_s = jobs.submit_s
        self.run_s = jobs.run_s
        self.cores = jobs.cores
        self.vo = jobs.vo
        self.arrived = 0

    def __len__(self) -> int:
        return len(self._queue)

    def __iter__(self) -> Iterator[int]:
        return iter(self._queue)

    def __contains__(self, row: object) -> bool:
        return row in self._queue

    def head(self) -> int | None:
        """Return the row of the oldest queued job, or None if the queue is empty."""
        return next(iter(self._queue), None)


@dataclass(frozen=True, slots=True)
class StateFeatures:
    """A snapshot of the state features (see :meth:`ClusterState.features`).

    Attributes
    ----------
    now : float
        The decision time.
    pool_size, in_use, idle_cores : int
        Cores in the pool, held by running jobs, and idle.
    running_work_s : float
        Σ cores × (estimated end − now) over the running jobs, in core-seconds (estimated ends
        that have passed count as 0 each).
    next_free_in_s : float
        Time until the first running job is estimated to end (0 if overdue; ``inf`` if none runs).
    backlog_work_s : float
        Σ cores × r̂ over the queued jobs, in core-seconds, r̂ as estimated at each job's arrival.
    queue_length : int
        Queued jobs.
    vo_queue_shares : dict of str or None to float
        Fraction of the queued jobs per VO (only VOs with a queued job).
    """

    now: float
    pool_size: int
    in_use: int
    idle_cores: int
    running_work_s: float
    next_free_in_s: float
    backlog_work_s: float
    queue_length: int
    vo_queue_shares: dict[str | None, float]


class ClusterState:
    """The cluster as a policy sees it; kept up to date by the engine in O(log n) per event.

    Parameters
    ----------
    jobs : JobRows
        Every job of the run.
    pool_size : int
        Initial P.
    estimator : RuntimeEstimator
        Already reset for ``jobs``.

    Attributes
    ----------
    now : float
        Time of the current event.
    pool_size : int
        Cores in the pool now.
    in_use : int
        Cores held by running jobs.
    running : dict of int to float
        Row → estimated end (start + r̂ at start) of every running job, in start order.
    busy_core_s : float
        ∫ in_use dt from the first event to ``now``: the core-seconds used so far.
    completed, completed_interactive : int
        Jobs (and interactive jobs) completed so far.
    completed_w, completed_interactive_w : float
        Σ W = run / (run + wait) over those jobs; with the counts, a provisioning policy gets the
        mean W of the jobs completed between two of its decisions without seeing each event.
    """

    __slots__ = (
        "_backlog",
        "_backlog_of",
        "_cores",
        "_est_heap",
        "_estimator",
        "_interactive",
        "_queued",
        "_queued_by_vo",
        "_run",
        "_submit",
        "_vo",
        "_w",
        "_work_end",
        "busy_core_s",
        "completed",
        "completed_interactive",
        "completed_interactive_w",
        "completed_w",
        "in_use",
        "now",
        "pool_size",
        "running",
    )

    def __init__(self, jobs: JobRows, pool_size: int, estimator: RuntimeEstimator) -> None:
        self.now = -math.inf
        self.pool_size = pool_size
        self.in_use = 0
        self.running: dict[int, float] = {}
        self._cores = jobs.cores
        self._vo = jobs.vo
        self._estimator = estimator
        self._est_heap: list[tuple[float, int]] = []
        self._work_end = 0.0  # Σ cores × estimated end over running jobs
        self._backlog = 0.0
        self._backlog_of: dict[int, float] = {}
        self._queued = 0
        self._queued_by_vo: dict[str | None, int] = {}
        self._submit = jobs.submit_s
        self._run = jobs.run_s
        self._interactive = jobs.interactive
        self._w: dict[int, float] = {}
        self.busy_core_s = 0.0
        self.completed = 0
        self.completed_w = 0.0
        self.completed_interactive = 0
        self.completed_interactive_w = 0.0

    # --- what policies read ------------------------------------------------------------------

    @property
    def free_cores(self) -> int:
        """Idle cores: pool size − cores in use (never negative)."""
        return self.pool_size - self.in_use

    def estimate(self, row: int) -> float:
        """Return r̂ of job ``row`` now, from the run's estimator."""
        return self._estimator.estimate(row, self.now)

    @property
    def estimator(self) -> RuntimeEstimator:
        """The run's runtime estimator."""
        return self._estimator

    @property
    def running_work_s(self) -> float:
        """Σ cores × (estimated end − now) over running jobs, in core-seconds (≥ 0)."""
        return max(0.0, self._work_end - self.now * self.in_use)

    @property
    def next_free_in_s(self) -> float:
        """Time until the first running job's estimated end (0 if overdue, inf if none runs)."""
        heap = self._est_heap
        running = self.running
        while heap and heap[0][1] not in running:
            heapq.heappop(heap)
        return max(0.0, heap[0][0] - self.now) if heap else math.inf

    @property
    def backlog_work_s(self) -> float:
        """Σ cores × r̂ over queued jobs (r̂ estimated at each job's arrival), core-seconds."""
        return max(0.0, self._backlog)

    @property
    def queued_by_vo(self) -> Mapping[str | None, int]:
        """Number of queued jobs per VO (only VOs with a queued job)."""
        return self._queued_by_vo

    def vo_queue_shares(self) -> dict[str | None, float]:
        """Return the fraction of the queued jobs per VO."""
        total = self._queued
        return {vo: count / total for vo, count in self._queued_by_vo.items()} if total else {}

    def features(self) -> StateFeatures:
        """Return the state features as a :class:`StateFeatures` snapshot."""
        return StateFeatures(
            now=self.now,
            pool_size=self.pool_size,
            in_use=self.in_use,
            idle_cores=self.free_cores,
            running_work_s=self.running_work_s,
            next_free_in_s=self.next_free_in_s,
            backlog_work_s=self.backlog_work_s,
            queue_length=self._queued,
            vo_queue_shares=self.vo_queue_shares(),
        )

    # --- updates, called by the engine only --------------------------------------------------

    def _arrive(self, row: int) -> None:
        work = self._cores[row] * self._estimator.estimate(row, self.now)
        self._backlog_of[row] = work
        self._backlog += work
        self._queued += 1
        vo = self._vo[row]
        self._queued_by_vo[vo] = self._queued_by_vo.get(vo, 0) + 1

    def _start(self, row: int) -> None:
        now = self.now
        need = self._cores[row]
        run = self._run[row]
        wait = now - self._submit[row]
        self._w[row] = run / (run + wait) if run + wait > 0 else 1.0
        est_end = now + self._estimator.estimate(row, now)
        self.running[row] = est_end
        heapq.heappush(self._est_heap, (est_end, row))
        self._work_end += need * est_end
        self.in_use += need
        self._backlog -= self._backlog_of.pop(row)
        self._queued -= 1
        vo = self._vo[row]
        left = self._queued_by_vo[vo] - 1
        if left:
            self._queued_by_vo[vo] = left
        else:
            del self._queued_by_vo[vo]

    def _advance(self, now: float) -> None:
        if self.in_use:
            self.busy_core_s += self.in_use * (now - self.now)
        self.now = now

    def _complete(self, row: int) -> None:
        need = self._cores[row]
        self._work_end -= need * self.running.pop(row)
        self.in_use -= need
        w = self._w.pop(row)
        self.completed += 1
        self.completed_w += w
        interactive = self._interactive
        if interactive is not None and interactive[row]:
            self.completed_interactive += 1
            self.completed_interactive_w += w


@runtime_checkable
class Policy(Protocol):
    """A scheduling policy: chooses which queued jobs start now.

    A policy may also define ``reset(jobs)``; the engine calls it before a run, so that a policy
    keeping its own state (an ordered queue, usage counters, ...) can be reused.

    Attributes
    ----------
    name : str
        Short identifier written into results (``"fifo"``, ...).
    """

    name: str

    def select(self, queue: QueueView, state: ClusterState, now: float) -> Sequence[int]:
        """Return the rows of the jobs to start at ``now``, in the order they are elected.

        Parameters
        ----------
        queue : QueueView
            The waiting jobs, in (submit_s, job_id) order; never empty when called.
        state : ClusterState
            The cluster (``state.free_cores``: idle cores after this instant's completions and
            provisioning), the state features and the runtime estimates (``state.estimate``).
        now : float
            The decision time in seconds.

        Returns
        -------
        sequence of int
            Rows of queued jobs whose cores sum to at most ``state.free_cores``; may be empty.
        """
        ...


class EventRun(NamedTuple):
    """What :func:`run_events` returns."""

    start_s: list[float]
    """Start time of every row."""
    elected: list[int]
    """Rows in the order the policy elected them."""
    pool: list[tuple[float, int]]
    """(time, pool size) at the first event and at every change of the pool size."""


Decision = tuple[QueueView, ClusterState, float]
"""What :func:`iter_decisions` yields: the queue, the cluster state and the time of a decision."""


def run_events(
    jobs: JobRows,
    *,
    total_cores: int,
    policy: Policy,
    estimator: RuntimeEstimator | None = None,
    provisioning: ProvisioningPolicy | None = None,
) -> EventRun:
    """Replay jobs through the general event loop.

    Parameters
    ----------
    jobs : JobRows
        The jobs, sorted by (submit_s, job_id).
    total_cores : int
        Initial pool size P.
    policy : Policy
        Asked for a decision after every instant at which something happened while jobs wait.
        A policy with a true attribute ``one_per_decision`` is asked again at the same instant
        after every non-empty answer, so it can elect one job per decision and see the state
        that job leaves behind. A policy with a true attribute ``needs_free_core`` is not asked
        while no core is free (it could only answer with nothing).
    estimator : RuntimeEstimator, optional
        Runtime estimates shown to the policy; default the oracle. Reset here.
    provisioning : ProvisioningPolicy, optional
        Changes the pool size at its decision times; default a fixed pool. Like a policy, it
        may define ``reset(jobs)``, called before the run.

    Returns
    -------
    EventRun
        Start times, election order and the pool-size series.

    Raises
    ------
    SimulationError
        If the policy starts a job that is not queued or does not fit, or jobs stay queued on an
        idle cluster with no arrival to come (they would wait forever).
    """
    reset = getattr(policy, "reset", None)
    if callable(reset):
        reset(jobs)
    episode = getattr(policy, "run_episode", None)
    if callable(episode) and (provisioning is None or type(provisioning) is FixedPool):
        # a policy with its own (jitted) copy of this loop, where it applies: same outcome
        est = OracleEstimator() if estimator is None else estimator
        done = episode(jobs, total_cores, est)
        if done is not None:
            fast: EventRun = done
            return fast
    loop = iter_decisions(
        jobs,
        total_cores=total_cores,
        estimator=estimator,
        provisioning=provisioning,
        name=policy.name,
        repeat=bool(getattr(policy, "one_per_decision", False)),
        skip_full=bool(getattr(policy, "needs_free_core", False)),
    )
    select = policy.select
    try:
        decision = next(loop)
        while True:
            decision = loop.send(select(*decision))
    except StopIteration as stop:
        outcome: EventRun = stop.value
        return outcome


def iter_decisions(
    jobs: JobRows,
    *,
    total_cores: int,
    estimator: RuntimeEstimator | None = None,
    provisioning: ProvisioningPolicy | None = None,
    name: str = "external",
    repeat: bool = False,
    skip_full: bool = False,
) -> Generator[Decision, Sequence[int], EventRun]:
    """Run the event loop as a generator: yield at each decision, receive the rows to start.

    This is the loop behind :func:`run_events`, exposed so that a caller who is not a
    :class:`Policy` (a Gymnasium environment, an interactive session) can drive it: ``next``
    gives the first ``(queue, state, now)``, ``send(rows)`` starts ``rows`` and gives the next
    decision, and the generator returns the :class:`EventRun` (``StopIteration.value``).

    Parameters
    ----------
    jobs, total_cores, estimator, provisioning
        As in :func:`run_events` (the estimator is reset here).
    name : str, default "external"
        The decision maker's name, used in error messages.
    repeat : bool, default False
        After a non-empty answer, yield again at the same instant (see ``one_per_decision`` in
        :func:`run_events`); the instant ends at the first empty answer.
    skip_full : bool, default False
        Do not yield while no core is free (the decision maker could only answer with nothing).

    Yields
    ------
    tuple of (QueueView, ClusterState, float)
        A decision: the queue (never empty), the cluster state and the time.

    Raises
    ------
    SimulationError
        As in :func:`run_events`.
    """
    job_id, submit, run, cores = jobs.job_id, jobs.submit_s, jobs.run_s, jobs.cores
    n = len(submit)
    est = OracleEstimator() if estimator is None else estimator
    est.reset(jobs)
    prov: ProvisioningPolicy = FixedPool() if provisioning is None else provisioning
    reset_pool = getattr(prov, "reset", None)
    if callable(reset_pool):
        reset_pool(jobs)
    queue: dict[int, None] = {}
    view = QueueView(queue, jobs)
    state = ClusterState(jobs, total_cores, est)
    start = [math.nan] * n
    elected: list[int] = []
    pool: list[tuple[float, int]] = []
    running: list[tuple[float, int]] = []  # heap of (end, row)
    nxt = 0
    inf = math.inf
    t_prov = prov.next_decision(-inf)
    every_starts = getattr(prov, "every_starts", None)
    started = 0  # jobs started since the last provisioning decision
    stuck = 0
    while True:
        t_arrival = submit[nxt] if nxt < n else inf
        t_end = running[0][0] if running else inf
        if t_arrival == inf and t_end == inf and not queue:
            break  # every job has run: later provisioning decisions change nothing
        now = min(t_arrival, t_end, t_prov)
        if now == inf:
            break
        state._advance(now)
        if not pool:
            pool.append((now, state.pool_size))
        # 1. completions at `now`
        while running and running[0][0] <= now:
            row = heapq.heappop(running)[1]
            state._complete(row)
            est.observe(row, now)
        # 2. arrivals at `now`
        while nxt < n and submit[nxt] <= now:
            queue[nxt] = None
            state._arrive(nxt)
            nxt += 1
        view.arrived = nxt
        # 3. provisioning
        if t_prov <= now:
            size = max(int(prov.pool_size(view, state, now)), state.in_use)
            if size != state.pool_size:
                state.pool_size = size
                pool.append((now, size))
            t_prov = prov.next_decision(now)
            started = 0
            if queue and not running and nxt == n:
                stuck += 1
                if stuck > MAX_STUCK_PROVISIONING:
                    t_prov = inf
        # 4. the scheduling decision(s)
        while queue:
            if skip_full and state.pool_size <= state.in_use:
                break
            chosen = yield view, state, now
            for row in chosen:
                if row not in queue:
                    raise SimulationError(
                        f"policy {name!r} elected row {row} at t={now}, which is not queued"
                    )
                need = cores[row]
                if need > state.pool_size - state.in_use:
                    raise SimulationError(
                        f"policy {name!r} elected job {job_id[row]} needing {need} cores "
                        f"at t={now} with only {state.pool_size - state.in_use} free"
                    )
                del queue[row]
                state._start(row)
                start[row] = now
                elected.append(row)
                heapq.heappush(running, (now + run[row], row))
            started += len(chosen)
            if not (repeat and chosen):
                break
        if every_starts is not None and started >= every_starts:
            t_prov = now  # the next pass decides at this same instant
        if running or nxt < n:
            stuck = 0
    if queue:
        row = next(iter(queue))
        raise SimulationError(
            f"policy {name!r} left {len(queue)} job(s) queued on an idle cluster with no "
            f"arrival to come (first: job {job_id[row]}, {cores[row]} cores, pool "
            f"{state.pool_size})"
        )
    return EventRun(start, elected, pool)


def fifo_single_core_starts(
    submit_s: NDArray[np.float64], run_s: NDArray[np.float64], total_cores: int
) -> NDArray[np.float64]:
    """Start times of strict FIFO when every job needs one core.

    Jobs start in queue order, so job k starts at ``max(submit_k, earliest free core)`` once jobs
    0 … k − 1 hold their cores; a heap of the P cores' free times gives it in O(log P).

    Parameters
    ----------
    submit_s, run_s : ndarray of float64
        Sorted by (submit_s, job_id).
    total_cores : int
        P.

    Returns
    -------
    ndarray of float64
        Start time of every job.
    """
    free_at = [-math.inf] * total_cores
    starts = [0.0] * len(submit_s)
    replace = heapq.heapreplace
    for k, (s, r) in enumerate(zip(submit_s.tolist(), run_s.tolist(), strict=True)):
        m = free_at[0]
        if m > s:
            s = m
        starts[k] = s
        replace(free_at, s + r)
    return np.asarray(starts, dtype=np.float64)


def fifo_multi_core_starts(
    submit_s: NDArray[np.float64],
    run_s: NDArray[np.float64],
    cores: NDArray[np.int64],
    total_cores: int,
) -> NDArray[np.float64]:
    """Start times of strict FIFO with rigid multi-core jobs.

    Job k starts at the first instant t ≥ max(submit_k, start_{k−1}) at which the jobs started
    before it leave at least ``cores_k`` cores free (completions at t count, as they come first).
    Later jobs never start before it, so they cannot take its cores.

    Parameters
    ----------
    submit_s, run_s : ndarray of float64
        Sorted by (submit_s, job_id).
    cores : ndarray of int64
        Cores per job, each between 1 and ``total_cores``.
    total_cores : int
        P.

    Returns
    -------
    ndarray of float64
        Start time of every job.
    """
    running: list[tuple[float, int]] = []  # heap of (end, cores)
    pop = heapq.heappop
    push = heapq.heappush
    free = total_cores
    now = -math.inf
    starts = [0.0] * len(submit_s)
    rows = zip(submit_s.tolist(), run_s.tolist(), cores.tolist(), strict=True)
    for k, (s, r, c) in enumerate(rows):
        if s > now:
            now = s
        while running and running[0][0] <= now:
            free += pop(running)[1]
        while free < c:
            end, held = pop(running)
            free += held
            now = end
        free -= c
        starts[k] = now
        push(running, (now + r, c))
    return np.asarray(starts, dtype=np.float64)


def _prepare(trace: pa.Table) -> pa.Table:
    """Conform ``trace`` to TRACE, check its values and sort it by (submit_s, job_id)."""
    table = conform(trace, TRACE)
    submit = table.column("submit_s").to_numpy()
    run = table.column("run_s").to_numpy()
    cores = table.column("cores").to_numpy()
    problems: list[str] = []
    if not np.all(np.isfinite(submit)):
        problems.append("submit_s has non-finite values")
    if not np.all(np.isfinite(run)) or np.any(run < 0):
        problems.append("run_s has negative or non-finite values")
    if np.any(cores < 1):
        problems.append("cores has values below 1")
    if problems:
        raise SimulationError("cannot simulate this trace: " + "; ".join(problems))
    if table.num_rows > 1:
        ids = table.column("job_id").to_numpy()
        ordered = (submit[1:] > submit[:-1]) | ((submit[1:] == submit[:-1]) & (ids[1:] >= ids[:-1]))
        if not np.all(ordered):
            logger.info("trace is not sorted by (submit_s, job_id); sorting it")
            order = np.lexsort((ids, submit))
            table = table.take(order)
    return table


def _float_list(column: pa.ChunkedArray[Any]) -> list[float]:
    """Return a float column as a list, nulls as NaN."""
    return [math.nan if v is None else float(v) for v in column.to_pylist()]


def job_rows(table: pa.Table) -> JobRows:
    """Return the :class:`JobRows` of a prepared ``trace`` table (sorted, conformed)."""
    return JobRows(
        job_id=table.column("job_id").to_numpy().tolist(),
        submit_s=table.column("submit_s").to_numpy().tolist(),
        run_s=table.column("run_s").to_numpy().tolist(),
        cores=table.column("cores").to_numpy().astype(np.int64).tolist(),
        vo=table.column("vo").to_pylist(),
        walltime_req_s=_float_list(table.column("walltime_req_s")),
        user=table.column("user").to_pylist(),
        queue=table.column("queue").to_pylist(),
        wait_s=_float_list(table.column("wait_s")),
        interactive=table.column("interactive").to_numpy(zero_copy_only=False).tolist(),
    )


def _as_logged_starts(table: pa.Table) -> NDArray[np.float64]:
    """Return the logged start times submit + wait_s (every job needs a finite wait_s >= 0)."""
    wait = table.column("wait_s")
    values = wait.to_numpy(zero_copy_only=False).astype(np.float64)
    bad = int(np.count_nonzero(~np.isfinite(values) | (values < 0)))
    if bad:
        raise SimulationError(
            f"as-logged replay needs a logged wait_s >= 0 for every job; {bad} of "
            f"{table.num_rows} jobs have none or a negative one"
        )
    submit: NDArray[np.float64] = table.column("submit_s").to_numpy()
    return submit + values


def _peak_in_use(
    start: NDArray[np.float64], end: NDArray[np.float64], need: NDArray[np.int64]
) -> int:
    """Return the largest number of cores held at once (ends before starts at equal times)."""
    if start.size == 0:
        return 0
    times = np.concatenate([end, start])
    delta = np.concatenate([-need, need])
    kind = np.concatenate([np.zeros(end.size), np.ones(start.size)])  # ends first
    order = np.lexsort((kind, times))
    return int(np.max(np.cumsum(delta[order])))


def _provisioned(pool: Sequence[tuple[float, int]], first: float, last: float) -> float:
    """Σ P_k (T_{k+1} − T_k) over [first, last] for the pool-size step function."""
    total = 0.0
    for k, (t, size) in enumerate(pool):
        lo = max(t, first) if k else first
        hi = min(pool[k + 1][0], last) if k + 1 < len(pool) else last
        if hi > lo:
            total += size * (hi - lo)
    return total


def _static_estimates(
    table: pa.Table, run: NDArray[np.float64], est: RuntimeEstimator
) -> NDArray[np.float64]:
    """r̂ of every row under a static estimator (it does not depend on the time)."""
    if type(est) is OracleEstimator:
        return run  # r̂ = the runtime: nothing to bind
    rows = job_rows(table)
    est.reset(rows)
    return np.asarray([est.estimate(k, 0.0) for k in range(len(rows))], dtype=np.float64)


def _conservative_estimates(
    table: pa.Table, run: NDArray[np.float64], est: RuntimeEstimator
) -> NDArray[np.float64]:
    """:func:`_static_estimates` for the conservative kernel, without Python rows where it can.

    The requested-walltime estimator is bound to the two columns it reads in one array
    operation (:meth:`WalltimeEstimator.reset_arrays`: the same check and fallback count as
    ``reset``); building every column as Python rows first was most of ``simulate``'s time
    outside the kernel.
    """
    if type(est) is not WalltimeEstimator:
        return _static_estimates(table, run, est)
    wall = table.column("walltime_req_s").to_numpy(zero_copy_only=False).astype(np.float64)
    return est.reset_arrays(wall, run)


def simulate(
    trace: pa.Table,
    *,
    cores: int | None = None,
    policy: str | Policy = "fifo",
    estimator: str | RuntimeEstimator = "oracle",
    provisioning: ProvisioningPolicy | None = None,
    vo_shares: Mapping[str, float] | None = None,
    rng: SeedLike = None,
    policy_options: Mapping[str, Any] | None = None,
    estimator_options: Mapping[str, Any] | None = None,
    warmup_jobs: int = 500,
    drain_jobs: int = 500,
    fast_path: bool = True,
) -> SimulationResult:
    """Replay a trace through the site simulator.

    Parameters
    ----------
    trace : pyarrow.Table
        A ``trace`` table (schema :data:`gridtrace.schema.TRACE`); sorted here by
        (submit_s, job_id) if it is not already.
    cores : int, optional
        P (the initial pool); defaults to the ``cores`` of the trace metadata.
    policy : str or Policy, default "fifo"
        A name in :data:`~gridtrace.sim.POLICIES` or a policy object (see :class:`Policy`).
        ``"native"`` replays the logged start times (needs ``wait_s``).
    estimator : str or RuntimeEstimator, default "oracle"
        A name in :data:`~gridtrace.sim.ESTIMATORS` (``oracle``, ``median``, ``walltime``) or an
        estimator object; what ``state.estimate`` returns to the policy.
    provisioning : ProvisioningPolicy, optional
        Changes the pool size over time (:class:`~gridtrace.sim.ScheduledPool`, ...); default
        a fixed pool of P cores.
    vo_shares : mapping of str to float, optional
        Target VO shares; when given, the fairness F of every job at its election is computed,
        and the ``fairshare`` policy uses them.
    rng : int, SeedSequence or Generator, optional
        Randomness of the ``random`` policy (the only policy that draws).
    policy_options, estimator_options : mapping, optional
        Options of a named policy (fields of :class:`~gridtrace.sim.PolicyConfig`) or estimator.
    warmup_jobs, drain_jobs : int, default 500
        Jobs left out of the summary statistics at the start and the end (see
        :func:`~gridtrace.sim.summarise`).
    fast_path : bool, default True
        Use the dedicated kernels where one exists (strict FIFO; EASY, greedy first-fit and
        conservative backfilling with a static estimator on a fixed pool — conservative also
        needs every estimate finite): identical results to the general event loop, many
        times faster. False forces the general loop.

    Returns
    -------
    SimulationResult
        ``jobs`` (one row per job, in (submit_s, job_id) order) and ``summary``.

    Raises
    ------
    ConfigError
        If the policy or estimator is unknown, an option is bad, or P is neither given nor in
        the trace metadata.
    SimulationError
        If a job needs more cores than P (fixed pool), or the trace has invalid values.

    Examples
    --------
    >>> from gridtrace.models import generate_preset_trace
    >>> result = simulate(generate_preset_trace("PE-1", rng=7, size=2000))
    >>> result.jobs.num_rows, result.summary["cores"]
    (2000, 80)
    """
    from gridtrace.sim._backfill import ConservativeBackfilling, EasyBackfilling, GreedyFirstFit
    from gridtrace.sim._policies import AsLoggedReplay, FifoPolicy, PolicyConfig, make_policy

    table = _prepare(trace)
    meta: dict[str, Any] | None
    try:
        meta = trace_metadata(table)
    except SchemaError:
        meta = None
    if cores is None:
        if meta is None:
            raise ConfigError("the trace has no metadata: pass cores=P")
        cores = int(meta["cores"])
    if cores < 1:
        raise ConfigError(f"cores must be >= 1, got {cores}")
    site = str(meta["site"]) if meta else "unknown"
    origin = str(meta["origin"]) if meta else ""
    tau_s = float(meta["tau_s"]) if meta else math.nan
    trace_prov: Any = meta["provenance"] if meta else {}

    config = PolicyConfig(
        vo_shares=vo_shares,
        rng=as_generator(rng) if rng is not None else None,
        tau_s=tau_s if math.isfinite(tau_s) else 900.0,
    )
    pol = make_policy(policy, config, **dict(policy_options or {}))
    est = make_estimator(estimator, **dict(estimator_options or {}))
    elastic = provisioning is not None and not isinstance(provisioning, FixedPool)

    job_id = table.column("job_id").to_numpy()
    submit = table.column("submit_s").to_numpy()
    run = table.column("run_s").to_numpy()
    need = table.column("cores").to_numpy().astype(np.int64)
    too_big = np.flatnonzero(need > cores)
    as_logged = isinstance(pol, AsLoggedReplay)
    if too_big.size and not elastic and not as_logged:
        row = int(too_big[0])
        raise SimulationError(
            f"job {int(job_id[row])} needs {int(need[row])} cores but the site has {cores}"
            + (f" ({too_big.size} such jobs)" if too_big.size > 1 else "")
        )

    t0 = time.perf_counter()
    elected: NDArray[np.int64] | None
    pool: list[tuple[float, int]] = [(float(submit[0]), cores)] if submit.size else []
    extra: dict[str, Any] = {}
    if as_logged:
        start = _as_logged_starts(table)
        engine = "as-logged"
        elected = np.lexsort((np.arange(start.size), start))
        extra["as_logged_peak_cores"] = _peak_in_use(start, start + run, need)
        if extra["as_logged_peak_cores"] > cores:
            logger.warning(
                "the logged schedule holds up to %d cores at once, more than P = %d",
                extra["as_logged_peak_cores"],
                cores,
            )
    elif fast_path and not elastic and type(pol) is FifoPolicy:
        # a subclass may change select: it uses the loop
        if np.all(need == 1):
            start = fifo_single_core_starts(submit, run, cores)
            engine = "fifo-single-core"
        else:
            start = fifo_multi_core_starts(submit, run, need, cores)
            engine = "fifo-multi-core"
        elected = None  # strict FIFO elects in row order
    elif (
        fast_path
        and not elastic
        and type(pol) in (EasyBackfilling, GreedyFirstFit, ConservativeBackfilling)
        and est.static
        and (
            type(pol) is not ConservativeBackfilling
            # an infinite or NaN r̂ would leave an open-ended hold: the loop handles those
            or bool(np.all(np.isfinite(guess := _conservative_estimates(table, run, est))))
        )
    ):
        from gridtrace.sim._kernels import backfill_starts, conservative_starts

        if type(pol) is ConservativeBackfilling:
            start, order = conservative_starts(submit, run, guess, need, cores)
        else:
            guess = _static_estimates(table, run, est)
            start, order = backfill_starts(
                submit, run, guess, need, cores, reserve=type(pol) is EasyBackfilling
            )
        elected = order
        engine = f"{pol.name}-kernel"
    else:
        rows = job_rows(table)
        outcome = run_events(
            rows, total_cores=cores, policy=pol, estimator=est, provisioning=provisioning
        )
        start = np.asarray(outcome.start_s, dtype=np.float64)
        elected = np.asarray(outcome.elected, dtype=np.int64)
        pool = outcome.pool
        engine = "events"
    elapsed = time.perf_counter() - t0
    logger.debug(
        "simulated %d jobs with %s (%s) in %.3f s", table.num_rows, pol.name, engine, elapsed
    )

    wait = start - submit
    fairness: pa.Array[Any]
    if vo_shares is not None:
        fair = fairness_at_election(run, need, table.column("vo"), vo_shares, elected=elected)
        fairness = pa.array(fair)
    else:
        fairness = pa.nulls(table.num_rows, pa.float64())
    jobs = pa.Table.from_arrays(
        [
            table.column("job_id"),
            table.column("submit_s"),
            pa.array(start),
            pa.array(start + run),
            pa.array(wait),
            table.column("run_s"),
            table.column("cores"),
            table.column("vo"),
            table.column("interactive"),
            pa.array(responsiveness(run, wait)),
            pa.array(bounded_slowdown(run, wait)),
            fairness,
        ],
        schema=SIM_RESULT,
    )
    shares = None
    if vo_shares is not None:
        total = float(sum(vo_shares.values()))
        shares = {str(k): float(v) / total for k, v in vo_shares.items()}
    estimator_info = est.describe()
    settings = {
        "policy": pol.name,
        "estimator": estimator_info,
        "provisioning": getattr(provisioning, "name", "fixed"),
        "cores": cores,
        "engine": engine,
        "vo_shares": shares,
        "warmup_jobs": warmup_jobs,
        "drain_jobs": drain_jobs,
    }
    jobs = with_sim_metadata(
        jobs,
        policy=pol.name,
        cores=cores,
        site=site,
        origin=origin,
        tau_s=tau_s,
        provenance={"trace": trace_prov, "simulation": settings},
    )
    stats = summarise(jobs, cores=cores, warmup_jobs=warmup_jobs, drain_jobs=drain_jobs)
    if table.num_rows:
        used = float(np.sum(run * need))
        first, last = float(submit.min()), float((start + run).max())
        provisioned = _provisioned(pool, first, last)
        extra["provisioned_core_s"] = provisioned
        extra["elastic_utilisation"] = used / provisioned if provisioned > 0 else None
    summary = {
        "policy": pol.name,
        "estimator": estimator_info["name"],
        "estimator_settings": estimator_info,
        "provisioning": settings["provisioning"],
        "cores": cores,
        "site": site,
        "tau_s": tau_s if math.isfinite(tau_s) else None,
        "engine": engine,
        "vo_shares": shares,
        "provenance": trace_prov,
        "pool_size": {"time_s": [t for t, _ in pool], "size": [p for _, p in pool]},
        **stats,
        **extra,
    }
    return SimulationResult(jobs=jobs, summary=summary)
