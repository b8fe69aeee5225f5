"""The event engine: one queue, P identical cores, rigid jobs, no preemption.

Semantics (DESIGN.md, "Simulator semantics")
--------------------------------------------
* Jobs arrive at ``submit_s``, wait in one queue and run on ``cores`` of the P identical cores for
  exactly ``run_s`` seconds, without preemption.
* Events at equal times are handled in this order: completions, then arrivals, then the scheduling
  decision. A job whose predecessor ends at t can therefore start at t, and a job that arrives at t
  sees the cores freed at t.
* The queue is ordered by (submit_s, job_id); that is also the order in which jobs become visible to
  the policy, and the tie-break between otherwise equal jobs.
* Times are float64 seconds from the trace origin.

A policy is a strategy object with one method, ``select(queue, free_cores, now)``, that returns the
queued jobs to start now, in order (:class:`Policy`). The engine validates every choice: a job that
is not queued or does not fit is a :class:`~gridtrace.errors.SimulationError`.

Strict FIFO also has two fast kernels (:func:`fifo_single_core_starts`,
:func:`fifo_multi_core_starts`) that compute the same start times without the general loop; the
tests check them against :func:`run_events` with :class:`FifoPolicy`.
"""

from __future__ import annotations

import heapq
import logging
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from gridtrace.errors import ConfigError, SchemaError, SimulationError
from gridtrace.schema import SIM_RESULT, TRACE, conform, trace_metadata
from gridtrace.sim._metrics import (
    bounded_slowdown,
    fairness_at_election,
    responsiveness,
    summarise,
)
from gridtrace.sim._result import SimulationResult, with_sim_metadata

__all__ = [
    "POLICIES",
    "FifoPolicy",
    "JobRows",
    "Policy",
    "QueueView",
    "fifo_multi_core_starts",
    "fifo_single_core_starts",
    "make_policy",
    "run_events",
    "simulate",
]

logger = logging.getLogger(__name__)


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
    """

    job_id: Sequence[int]
    submit_s: Sequence[float]
    run_s: Sequence[float]
    cores: Sequence[int]
    vo: Sequence[str | None]

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
    """

    __slots__ = ("_queue", "cores", "job_id", "run_s", "submit_s", "vo")

    def __init__(self, queue: dict[int, None], jobs: JobRows) -> None:
        self._queue = queue
        self.job_id = jobs.job_id
        self.submit_s = jobs.submit_s
        self.run_s = jobs.run_s
        self.cores = jobs.cores
        self.vo = jobs.vo

    def __len__(self) -> int:
        return len(self._queue)

    def __iter__(self) -> Iterator[int]:
        return iter(self._queue)

    def __contains__(self, row: object) -> bool:
        return row in self._queue

    def head(self) -> int | None:
        """Return the row of the oldest queued job, or None if the queue is empty."""
        return next(iter(self._queue), None)


@runtime_checkable
class Policy(Protocol):
    """A scheduling policy: chooses which queued jobs start now.

    Attributes
    ----------
    name : str
        Short identifier written into results (``"fifo"``, ...).
    """

    name: str

    def select(self, queue: QueueView, free_cores: int, now: float) -> Sequence[int]:
        """Return the rows of the jobs to start at ``now``, in the order they are elected.

        Parameters
        ----------
        queue : QueueView
            The waiting jobs, in (submit_s, job_id) order; never empty when called.
        free_cores : int
            Idle cores after this instant's completions.
        now : float
            The decision time in seconds.

        Returns
        -------
        sequence of int
            Rows of queued jobs whose cores sum to at most ``free_cores``; may be empty.
        """
        ...


class FifoPolicy:
    """Strict first-in-first-out: start the head while it fits; if it does not, start nothing.

    No job ever overtakes an earlier one (no backfilling). For single-core jobs this is the
    work-conserving "start the oldest job whenever a core frees".
    """

    name = "fifo"

    def select(self, queue: QueueView, free_cores: int, now: float) -> list[int]:
        """Return the longest prefix of the queue that fits in ``free_cores``."""
        chosen: list[int] = []
        cores = queue.cores
        for row in queue:
            need = cores[row]
            if need > free_cores:
                break
            chosen.append(row)
            free_cores -= need
        return chosen


POLICIES: Mapping[str, Callable[[], Policy]] = MappingProxyType({"fifo": FifoPolicy})
"""The built-in policies by name; each value builds a fresh policy object."""


def make_policy(policy: str | Policy) -> Policy:
    """Return a policy object for a name in :data:`POLICIES`, or ``policy`` itself.

    Raises
    ------
    ConfigError
        If the name is unknown (the message lists the known ones) or the object has no ``select``.
    """
    if isinstance(policy, str):
        try:
            factory = POLICIES[policy]
        except KeyError:
            known = ", ".join(sorted(POLICIES))
            raise ConfigError(f"unknown policy {policy!r}; known policies: {known}") from None
        return factory()
    if not isinstance(policy, Policy):
        raise ConfigError(f"{policy!r} is not a policy (it needs a name and a select method)")
    return policy


def run_events(
    jobs: JobRows,
    *,
    total_cores: int,
    policy: Policy,
) -> tuple[list[float], list[int]]:
    """Replay jobs through the general event loop.

    Parameters
    ----------
    jobs : JobRows
        The jobs, sorted by (submit_s, job_id).
    total_cores : int
        P; every job must need at most P cores.
    policy : Policy
        Asked for a decision after every instant at which something happened while jobs wait.

    Returns
    -------
    start_s : list of float
        Start time of every row.
    elected : list of int
        Rows in the order the policy elected them.

    Raises
    ------
    SimulationError
        If the policy starts a job that is not queued or does not fit, or leaves jobs queued on an
        idle cluster with no arrival to come (it would wait forever).
    """
    job_id, submit, run, cores = jobs.job_id, jobs.submit_s, jobs.run_s, jobs.cores
    n = len(submit)
    queue: dict[int, None] = {}
    view = QueueView(queue, jobs)
    start = [math.nan] * n
    elected: list[int] = []
    running: list[tuple[float, int]] = []  # heap of (end, row)
    free = total_cores
    nxt = 0
    inf = math.inf
    while True:
        t_arrival = submit[nxt] if nxt < n else inf
        t_end = running[0][0] if running else inf
        now = t_arrival if t_arrival < t_end else t_end
        if now == inf:
            break
        # 1. completions at `now`
        while running and running[0][0] <= now:
            free += cores[heapq.heappop(running)[1]]
        # 2. arrivals at `now`
        while nxt < n and submit[nxt] <= now:
            queue[nxt] = None
            nxt += 1
        # 3. the scheduling decision
        if not queue:
            continue
        for row in policy.select(view, free, now):
            if row not in queue:
                raise SimulationError(
                    f"policy {policy.name!r} elected row {row} at t={now}, which is not queued"
                )
            need = cores[row]
            if need > free:
                raise SimulationError(
                    f"policy {policy.name!r} elected job {job_id[row]} needing {need} cores "
                    f"at t={now} with only {free} free"
                )
            del queue[row]
            free -= need
            start[row] = now
            elected.append(row)
            heapq.heappush(running, (now + run[row], row))
    if queue:
        row = next(iter(queue))
        raise SimulationError(
            f"policy {policy.name!r} left {len(queue)} job(s) queued on an idle cluster with no "
            f"arrival to come (first: job {job_id[row]})"
        )
    return start, elected


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


def simulate(
    trace: pa.Table,
    *,
    cores: int | None = None,
    policy: str | Policy = "fifo",
    vo_shares: Mapping[str, float] | None = None,
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
        P; defaults to the ``cores`` of the trace metadata.
    policy : str or Policy, default "fifo"
        A name in :data:`POLICIES` or a policy object (see :class:`Policy`).
    vo_shares : mapping of str to float, optional
        Target VO shares; when given, the fairness F of every job at its election is computed.
    warmup_jobs, drain_jobs : int, default 500
        Jobs left out of the summary statistics at the start and the end (see
        :func:`~gridtrace.sim.summarise`).
    fast_path : bool, default True
        Use the dedicated FIFO kernels for the ``"fifo"`` policy (identical results to the general
        event loop, several times faster). False forces the general loop.

    Returns
    -------
    SimulationResult
        ``jobs`` (one row per job, in (submit_s, job_id) order) and ``summary``.

    Raises
    ------
    ConfigError
        If the policy is unknown, or P is neither given nor in the trace metadata.
    SimulationError
        If a job needs more cores than P, or the trace has invalid values.

    Examples
    --------
    >>> from gridtrace.models import generate_preset_trace
    >>> result = simulate(generate_preset_trace("PE-1", rng=7, size=2000))
    >>> result.jobs.num_rows, result.summary["cores"]
    (2000, 80)
    """
    pol = make_policy(policy)
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

    job_id = table.column("job_id").to_numpy()
    submit = table.column("submit_s").to_numpy()
    run = table.column("run_s").to_numpy()
    need = table.column("cores").to_numpy().astype(np.int64)
    too_big = np.flatnonzero(need > cores)
    if too_big.size:
        row = int(too_big[0])
        raise SimulationError(
            f"job {int(job_id[row])} needs {int(need[row])} cores but the site has {cores}"
            + (f" ({too_big.size} such jobs)" if too_big.size > 1 else "")
        )

    t0 = time.perf_counter()
    elected: NDArray[np.int64] | None
    if fast_path and type(pol) is FifoPolicy:  # a subclass may change select: use the loop
        if np.all(need == 1):
            start = fifo_single_core_starts(submit, run, cores)
            engine = "fifo-single-core"
        else:
            start = fifo_multi_core_starts(submit, run, need, cores)
            engine = "fifo-multi-core"
        elected = None  # strict FIFO elects in row order
    else:
        rows = JobRows(
            job_id=job_id.tolist(),
            submit_s=submit.tolist(),
            run_s=run.tolist(),
            cores=need.tolist(),
            vo=table.column("vo").to_pylist(),
        )
        start_list, elected_list = run_events(rows, total_cores=cores, policy=pol)
        start = np.asarray(start_list, dtype=np.float64)
        elected = np.asarray(elected_list, dtype=np.int64)
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
    settings = {
        "policy": pol.name,
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
    summary = {
        "policy": pol.name,
        "cores": cores,
        "site": site,
        "tau_s": tau_s if math.isfinite(tau_s) else None,
        "engine": engine,
        "vo_shares": shares,
        "provenance": trace_prov,
        **summarise(jobs, cores=cores, warmup_jobs=warmup_jobs, drain_jobs=drain_jobs),
    }
    return SimulationResult(jobs=jobs, summary=summary)
