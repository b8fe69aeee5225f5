"""RLScheduler-compatible evaluation mode: its loading rules, windows, scheduling loop and metrics.

RLScheduler (Zhang et al., SC'20; ``DIR-LAB/deep-batch-scheduler``) compares its PPO agent with
five heuristics on 10 windows of 1024 jobs drawn from an SWF trace. This module re-implements the
rules its published table depends on (``shared/reference/sim.md`` §3.2), written from their
description, so that the table can be reproduced digit for digit and the RL column compared with
the same windows. It is a separate, deliberately literal model; the general engine of
:mod:`gridtrace.sim` follows DESIGN.md instead.

Loading (:func:`rlscheduler_workload`)
--------------------------------------
* a run time below 0 (SWF −1, a null in ``jobs``) becomes 10 s; then only jobs with run time > 0
  are kept;
* cores = max(allocated, requested), −1 (null) counting as −1;
* requested time −1 (null) → the run time (so on the Lublin models the estimate is exact);
* jobs are ordered by job number (a stable sort over the file order), not by submit time;
* the cluster is ``MaxNodes`` nodes of ``MaxProcs / MaxNodes`` processors (``MaxProcs`` missing →
  ``MaxNodes``); a job takes ``ceil(cores / procs_per_node)`` whole nodes.

Rows RLScheduler would keep but that cannot be scheduled meaningfully (no cores at all, no submit
time) are dropped and counted in :attr:`RLSchedulerWorkload.info`; RLScheduler itself would crash
or allocate a negative number of nodes on them.

Windows (:func:`rlscheduler_window_starts`)
-------------------------------------------
The starts come from the legacy ``gym.utils.seeding.np_random(seed)`` that RLScheduler calls:
a :class:`numpy.random.RandomState` seeded with the 32-bit little-endian words of the first 8
bytes of ``sha512(str(seed))``, then ``randint(window, limit − window − 1)`` per window, with
``limit`` the number of loaded jobs, or ``job_slice`` when it is given (a slice only bounds where
the starts are drawn; the windows themselves may reach beyond it).

The scheduling loop (:func:`simulate_rlscheduler_window`)
---------------------------------------------------------
A window holds jobs ``start … start + window − 1``. It begins at its first job's submit time with
an empty cluster and that job queued. Repeatedly: the queue (one list) is re-sorted *stably* by
the policy key and its head is picked; if the head does not fit, it stays the chosen job and time
advances until it fits — each step either admits the next arrival (when its submit ≤ the earliest
release, ties to the arrival) or releases the running job with the earliest start + run (running
jobs are kept in one list, re-sorted stably at every step). The head then starts; when the queue
is empty, time advances the same way until a job arrives.

With backfilling, when the head does not fit, its reservation ``T_s`` is computed once: walk the
running jobs sorted by start + *requested* time, adding their nodes to the free ones, until the
head's cores are covered; ``T_s`` is the end of the last job walked. Then, at every step until the
head fits, the queue is re-sorted by submit time and scanned: a job starts now if
``now + requested < T_s`` (strict; tested first) and it fits. There is no extra-nodes rule.

Policies (keys sorted ascending; ties keep the list order)
----------------------------------------------------------
``FCFS`` submit; ``SJF`` (requested, submit); ``F1`` log10(r̂)·n + 870·log10(s) with r̂ ≤ 0 → 0.1
and s ≤ 0 → 0.1 (s is the submit time since the trace's zero, so F1 is not shift invariant);
``WFP3`` −(w / r̂)³ · n; ``UNICEP`` −(w + 1e−15) / (log2(n + 1e−15) · r̂) — the 1e−15 guards of
RLScheduler are kept, so a serial job (log2 1 = 0) that has waited comes before every parallel
one (with the buggy wait below the sign flips and serial jobs come last). WFP3 and UNICEP use
r̂ ≤ 0 → 0.1,
the guard RLScheduler applies in F1 (it would divide by zero there). The wait w is now − submit,
the correct definition. With ``compat_wait_bug=True`` w is −1 − submit, which is what RLScheduler
computes (``scheduled_time − submit_time`` with ``scheduled_time = −1`` for every queued job) and
what its published WFP3/UNICEP columns come from. The flag has no effect on FCFS, SJF and F1.

Metrics
-------
Bounded slowdown max(1, (w + r) / max(r, 10)) per job, averaged over the window's jobs (summed in
start order, as RLScheduler does); utilisation Σ run·cores / (MaxProcs · span) with span = the
last job's start − the first job's submit (not the makespan). The table value is the mean over
the windows.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError, SimulationError

__all__ = [
    "RLSCHEDULER_POLICIES",
    "RLSCHEDULER_TABLE_COLUMNS",
    "RLSchedulerWindow",
    "RLSchedulerWorkload",
    "legacy_gym_random_state",
    "read_rlscheduler_swf",
    "rlscheduler_table",
    "rlscheduler_window_starts",
    "rlscheduler_workload",
    "simulate_rlscheduler_window",
]

logger = library_logger(__name__)

F64: TypeAlias = npt.NDArray[np.float64]
I64: TypeAlias = npt.NDArray[np.int64]

RLSchedulerPolicy: TypeAlias = Literal["FCFS", "SJF", "WFP3", "UNICEP", "F1"]

RLSCHEDULER_POLICIES: Final[tuple[str, ...]] = ("FCFS", "SJF", "WFP3", "UNICEP", "F1")
"""The heuristics of RLScheduler's comparison table."""

RLSCHEDULER_TABLE_COLUMNS: Final[tuple[tuple[str, str, bool], ...]] = (
    ("FCFS", "FCFS", False),
    ("WFP3*", "WFP3", True),
    ("UNICEP*", "UNICEP", True),
    ("SJF", "SJF", False),
    ("F1", "F1", False),
    ("WFP3", "WFP3", False),
    ("UNICEP", "UNICEP", False),
)
"""(label, policy, compat_wait_bug) of the table's columns, in RLScheduler's order; ``*`` marks
the published (buggy-wait) WFP3/UNICEP, the unstarred ones use the correct wait."""

WINDOW_JOBS: Final = 1024
"""RLScheduler's evaluation window (``--len 1024`` in its ``make_table_script.py``)."""

BSLD_TAU_S: Final = 10.0
"""τ of RLScheduler's bounded slowdown (``max(run_time, 10)``), in seconds."""

_GUARD: Final = 0.1  # RLScheduler's replacement of a non-positive time inside a logarithm (F1)


# --------------------------------------------------------------------------- workload


@dataclass(frozen=True)
class RLSchedulerWorkload:
    """A trace loaded with RLScheduler's rules, in its job order.

    Attributes
    ----------
    job_id : ndarray of int64
        Job numbers, ascending (RLScheduler's order).
    submit_s : ndarray of float64
        Submit times from the trace's zero (the SWF submit field), integral in SWF files.
    run_s : ndarray of float64
        Run times, all > 0.
    request_s : ndarray of float64
        Requested times (the run time where none was requested): the policies' estimate.
    cores : ndarray of int64
        max(allocated, requested) processors, all ≥ 1.
    max_nodes : int
        Nodes of the cluster (SWF ``MaxNodes``).
    max_procs : int
        Processors of the cluster (SWF ``MaxProcs``, or ``MaxNodes`` when absent); the
        utilisation's P.
    info : mapping of str to int
        Counts of every rule applied: ``rows_in``, ``run_set_to_10``, ``dropped_run_zero``,
        ``request_from_run``, ``cores_from_requested``, ``dropped_no_cores``,
        ``dropped_no_submit``.
    """

    job_id: I64
    submit_s: F64
    run_s: F64
    request_s: F64
    cores: I64
    max_nodes: int
    max_procs: int
    info: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.job_id)
        if not all(len(a) == n for a in (self.submit_s, self.run_s, self.request_s, self.cores)):
            msg = "job_id, submit_s, run_s, request_s and cores must have one length"
            raise ConfigError(msg)
        if self.max_nodes < 1 or self.max_procs < 1:
            msg = f"the cluster needs nodes and processors, not {self.max_nodes}/{self.max_procs}"
            raise ConfigError(msg)
        if n and (np.any(self.run_s <= 0) or np.any(self.cores < 1)):
            msg = "every job needs a run time > 0 and at least one core"
            raise ConfigError(msg)
        too_big = self.nodes > self.max_nodes
        if too_big.any():  # RLScheduler would wait for it forever
            first = int(np.flatnonzero(too_big)[0])
            msg = (
                f"{int(too_big.sum())} jobs need more than the cluster's {self.max_nodes} nodes "
                f"(job {int(self.job_id[first])}: {int(self.cores[first])} cores)"
            )
            raise ConfigError(msg)

    def __len__(self) -> int:
        return len(self.job_id)

    @property
    def procs_per_node(self) -> float:
        """Processors per node, ``MaxProcs / MaxNodes`` (a float, as RLScheduler divides)."""
        return self.max_procs / self.max_nodes

    @property
    def nodes(self) -> I64:
        """Whole nodes each job takes: ``ceil(cores / procs_per_node)``."""
        need = np.ceil(self.cores.astype(np.float64) / self.procs_per_node)
        return need.astype(np.int64)


def _column(table: pa.Table, name: str) -> F64:
    """Return a numeric column as float64, nulls as NaN, timestamps as epoch seconds."""
    col = table.column(name)
    if pa.types.is_timestamp(col.type):
        col = col.cast(pa.timestamp("s", tz="UTC")).cast(pa.int64())
    values = col.cast(pa.float64()).to_numpy(zero_copy_only=False)
    return np.asarray(values, dtype=np.float64)


def _header_int(header: Mapping[str, Any] | None, key: str) -> int | None:
    if header is None or key not in header:
        return None
    value = header[key]
    if isinstance(value, list):  # a key repeated in the header: the first value counts
        value = value[0]
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        msg = f"SWF header {key}: {value!r} is not a number"
        raise ConfigError(msg) from exc


def rlscheduler_workload(
    table: pa.Table,
    *,
    max_nodes: int | None = None,
    max_procs: int | None = None,
    swf_header: Mapping[str, Any] | None = None,
) -> RLSchedulerWorkload:
    """Load a ``jobs`` table (of an SWF file) or a ``trace`` table with RLScheduler's rules.

    Parameters
    ----------
    table : pyarrow.Table
        Either the ``jobs`` table :func:`gridtrace.logs.read_swf` returns (recognised by its
        ``job_seq`` column; submit times are taken relative to the header's ``UnixStartTime``,
        so they equal the SWF submit field) or a ``trace`` table (``job_id``, ``submit_s``,
        ``run_s``, ``cores``, optional ``walltime_req_s``; ``submit_s`` is used as is, which
        matters for F1 only).
    max_nodes, max_procs : int, optional
        The cluster, overriding the header. ``max_nodes`` defaults to the header's ``MaxNodes``,
        then to the trace metadata's cores, then to the header's ``MaxProcs`` (one processor per
        node; counted in ``info["max_nodes_from_max_procs"]`` and logged); ``max_procs`` to the
        header's ``MaxProcs``, then to ``max_nodes`` (RLScheduler's rule when the header has no
        ``MaxProcs``).
    swf_header : mapping, optional
        The SWF header (``ParseResult.info["swf_header"]``).

    Returns
    -------
    RLSchedulerWorkload
        The jobs in RLScheduler's order, with counts of every rule applied in ``info``.

    Raises
    ------
    ConfigError
        If the table is neither kind, the cluster size is unknown, or a job needs more nodes than
        the cluster has (RLScheduler would loop forever on it).
    """
    names = set(table.column_names)
    info: dict[str, int] = {"rows_in": table.num_rows}
    if "job_seq" in names:  # a jobs table
        job_id = _column(table, "job_seq")
        origin = _header_int(swf_header, "UnixStartTime") or 0
        submit = _column(table, "submit_time") - origin
        run = _column(table, "run_s")
        request = _column(table, "walltime_req_s")
        alloc = np.nan_to_num(_column(table, "cores_alloc"), nan=-1.0)
        req = np.nan_to_num(_column(table, "cores_req"), nan=-1.0)
        cores = np.maximum(alloc, req)
        info["cores_from_requested"] = int(np.sum(req > alloc))
        line = _column(table, "src_line")
    elif {"job_id", "submit_s", "run_s", "cores"} <= names:  # a trace table
        job_id = _column(table, "job_id")
        submit = _column(table, "submit_s")
        run = _column(table, "run_s")
        request = (
            _column(table, "walltime_req_s")
            if "walltime_req_s" in names
            else np.full(table.num_rows, np.nan)
        )
        cores = _column(table, "cores")
        info["cores_from_requested"] = 0
        line = np.arange(table.num_rows, dtype=np.float64)
    else:
        msg = "expected a jobs table (job_seq, ...) or a trace table (job_id, submit_s, ...)"
        raise ConfigError(msg)

    if np.any(np.isnan(job_id)):
        msg = "every job needs a job number (RLScheduler orders jobs by it)"
        raise ConfigError(msg)
    if max_nodes is None:
        max_nodes = _header_int(swf_header, "MaxNodes")
    if max_nodes is None and b"cores" in (table.schema.metadata or {}):
        max_nodes = int((table.schema.metadata or {})[b"cores"])
    if max_nodes is None:
        # RLScheduler needs MaxNodes; a header that gives only MaxProcs (gridtrace's own SWF
        # export, many converted logs) is read as one processor per node, said and counted
        max_nodes = _header_int(swf_header, "MaxProcs")
        if max_nodes is not None:
            info["max_nodes_from_max_procs"] = 1
            logger.warning(
                "the SWF header gives no MaxNodes: the cluster is read as MaxProcs = %d nodes "
                "of one processor each (give max_nodes to set it)",
                max_nodes,
            )
    if max_nodes is None:
        msg = (
            "the cluster size is unknown: give max_nodes or an SWF header with MaxNodes or MaxProcs"
        )
        raise ConfigError(msg)
    if max_procs is None:
        max_procs = _header_int(swf_header, "MaxProcs") or max_nodes

    negative = np.isnan(run) | (run < 0)
    info["run_set_to_10"] = int(negative.sum())
    run = np.where(negative, 10.0, run)
    keep = run > 0
    info["dropped_run_zero"] = int((~keep).sum())
    no_cores = keep & (cores < 1)
    info["dropped_no_cores"] = int(no_cores.sum())
    no_submit = keep & ~no_cores & np.isnan(submit)
    info["dropped_no_submit"] = int(no_submit.sum())
    keep &= ~no_cores & ~no_submit
    no_request = keep & (np.isnan(request) | (request == -1))
    info["request_from_run"] = int(no_request.sum())
    request = np.where(no_request, run, request)
    for key in ("run_set_to_10", "dropped_no_cores", "dropped_no_submit"):
        if info[key]:
            logger.warning("RLScheduler loading rules: %s = %d", key, info[key])

    order = np.lexsort((line[keep], job_id[keep]))  # job number, then file order (stable)
    return RLSchedulerWorkload(
        job_id=job_id[keep][order].astype(np.int64),
        submit_s=submit[keep][order],
        run_s=run[keep][order],
        request_s=request[keep][order],
        cores=cores[keep][order].astype(np.int64),
        max_nodes=int(max_nodes),
        max_procs=int(max_procs),
        info=info,
    )


def read_rlscheduler_swf(
    path: str | Path, *, max_nodes: int | None = None, max_procs: int | None = None
) -> RLSchedulerWorkload:
    """Read an SWF file (plain or compressed) with RLScheduler's loading rules.

    Parameters
    ----------
    path : str or Path
        The SWF file.
    max_nodes, max_procs : int, optional
        Override the header's ``MaxNodes`` / ``MaxProcs``.

    Returns
    -------
    RLSchedulerWorkload
        See :func:`rlscheduler_workload`.

    Examples
    --------
    >>> wl = read_rlscheduler_swf("lublin_256.swf.gz")  # doctest: +SKIP
    >>> len(wl), wl.max_nodes, wl.procs_per_node  # doctest: +SKIP
    (10000, 256, 1.0)
    """
    from gridtrace.logs import read_swf  # the logs package is heavy; load it only when asked

    result = read_swf(path)
    if result.lines_quarantined:
        logger.warning(
            "%s: %d unreadable lines left out (RLScheduler would stop on them)",
            path,
            result.lines_quarantined,
        )
    return rlscheduler_workload(
        result.jobs,
        max_nodes=max_nodes,
        max_procs=max_procs,
        swf_header=result.info.get("swf_header"),
    )


# --------------------------------------------------------------------------- windows


def _legacy_seed_words(seed: int) -> list[int]:
    """Return the 32-bit words gym's legacy ``np_random`` feeds to ``RandomState.seed``."""
    digest = hashlib.sha512(str(seed % 2**64).encode("utf8")).digest()
    big = int.from_bytes(digest[:8], "little")
    words: list[int] = []
    while big > 0:
        big, word = divmod(big, 2**32)
        words.append(word)
    return words or [0]


def legacy_gym_random_state(seed: int) -> np.random.RandomState:
    """Return the random state the legacy ``gym.utils.seeding.np_random(seed)`` returns.

    This is the one place gridtrace uses a :class:`numpy.random.RandomState`: reproducing
    RLScheduler's evaluation windows requires its exact legacy stream (MT19937 seeded by
    ``init_by_array`` and the legacy ``randint``), which :class:`numpy.random.Generator` does not
    offer. The state is a private instance; NumPy's global random state is never touched.

    Parameters
    ----------
    seed : int
        A non-negative seed (RLScheduler's ``--seed``, 1 in its table script).

    Returns
    -------
    numpy.random.RandomState
        Seeded with the little-endian 32-bit words of the first 8 bytes of
        ``sha512(str(seed))`` (trailing zero words dropped, as gym does).

    Raises
    ------
    ConfigError
        If ``seed`` is negative.
    """
    if seed < 0:
        msg = f"the legacy gym seed must be non-negative, not {seed}"
        raise ConfigError(msg)
    # a private legacy state, never the global one: its exact stream is the point (see above)
    state = np.random.RandomState()
    state.seed(_legacy_seed_words(seed))
    return state


def rlscheduler_window_starts(
    n_rows: int,
    *,
    seed: int = 1,
    windows: int = 10,
    window: int = WINDOW_JOBS,
    job_slice: int = 0,
) -> I64:
    """Draw RLScheduler's evaluation window starts (its ``reset_for_test``).

    Parameters
    ----------
    n_rows : int
        Number of jobs loaded.
    seed : int, default 1
        The legacy gym seed.
    windows : int, default 10
        How many windows (``--iter``).
    window : int, default 1024
        Jobs per window (``--len``).
    job_slice : int, default 0
        RLScheduler's ``batch_job_slice``: when positive, starts are drawn below it instead of
        below ``n_rows`` (10000 for HPC2N in its table).

    Returns
    -------
    ndarray of int64
        ``randint(window, limit − window − 1)`` per window, in drawing order.

    Raises
    ------
    ConfigError
        If the range is empty or a window would run past the last job.

    Examples
    --------
    >>> rlscheduler_window_starts(10_000).tolist()
    [1981, 2756, 4299, 8850, 3316, 2714, 5228, 7762, 4022, 7085]
    """
    limit = job_slice if job_slice > 0 else n_rows
    high = limit - window - 1
    if window < 1 or high <= window:
        msg = f"no room for windows of {window} jobs below {limit}"
        raise ConfigError(msg)
    state = legacy_gym_random_state(seed)
    starts = np.array([state.randint(window, high) for _ in range(windows)], dtype=np.int64)
    if starts.size and starts.max() + window > n_rows:
        msg = f"a window starting at {int(starts.max())} runs past the {n_rows} jobs loaded"
        raise ConfigError(msg)
    return starts


# --------------------------------------------------------------------------- scheduling loop


@dataclass(frozen=True)
class RLSchedulerWindow:
    """One window scheduled in RLScheduler's loop.

    Attributes
    ----------
    first : int
        Index of the window's first job in the workload.
    job_id : ndarray of int64
        The window's jobs in start order.
    submit_s, start_s, run_s : ndarray of float64
        Their submit, start and run times.
    cores : ndarray of int64
        Their cores.
    bsld : ndarray of float64
        Their bounded slowdowns.
    bsld_mean : float
        Mean bounded slowdown (summed in start order, like RLScheduler).
    utilisation : float
        Σ run·cores / (MaxProcs · (last start − first submit)); NaN when that span is 0.
    """

    first: int
    job_id: I64
    submit_s: F64
    start_s: F64
    run_s: F64
    cores: I64
    bsld: F64
    bsld_mean: float
    utilisation: float


QueueKey: TypeAlias = Callable[[float], Callable[[int], Any]]
"""A policy's sort key: given the current time, the key of a job (by window index)."""


def _static(keys: list[Any]) -> QueueKey:
    get = keys.__getitem__
    return lambda now: get


def _policy_key(
    policy: str,
    compat_wait_bug: bool,
    submit: list[float],
    request: list[float],
    cores: list[int],
) -> QueueKey:
    """Return the sort key of a policy (ascending = first) for one window's jobs."""
    guarded = [r if r > 0 else _GUARD for r in request]
    if policy == "FCFS":
        return _static(list(submit))
    if policy == "SJF":
        return _static(list(zip(request, submit, strict=True)))
    if policy == "F1":
        return _static(
            [
                math.log10(r) * n + 870.0 * math.log10(s if s > 0 else _GUARD)
                for r, n, s in zip(guarded, cores, submit, strict=True)
            ]
        )
    if policy == "WFP3":
        if compat_wait_bug:  # wait = scheduled_time - submit with scheduled_time = -1
            return _static(
                [
                    -(((-1.0 - s) / r) ** 3) * n
                    for s, r, n in zip(submit, guarded, cores, strict=True)
                ]
            )

        def wfp3(now: float) -> Callable[[int], float]:
            return lambda j: -(((now - submit[j]) / guarded[j]) ** 3) * cores[j]

        return wfp3
    if policy == "UNICEP":
        log_n = [math.log2(n + 1e-15) for n in cores]
        if compat_wait_bug:
            return _static(
                [
                    -(-1.0 - s + 1e-15) / (ln * r)
                    for s, ln, r in zip(submit, log_n, guarded, strict=True)
                ]
            )

        def unicep(now: float) -> Callable[[int], float]:
            return lambda j: -(now - submit[j] + 1e-15) / (log_n[j] * guarded[j])

        return unicep
    msg = f"unknown RLScheduler policy {policy!r}; choose one of {RLSCHEDULER_POLICIES}"
    raise ConfigError(msg)


def _schedule(
    submit: list[float],
    run: list[float],
    request: list[float],
    cores: list[int],
    nodes: list[int],
    total_nodes: int,
    procs_per_node: float,
    queue_key: QueueKey,
    backfill: bool,
) -> tuple[list[int], list[float]]:
    """Run RLScheduler's loop on one window (local indices); return start order and start times.

    The lists are plain Python sequences on purpose: the loop sorts the queue and the running
    list with Python's stable sort at exactly the points RLScheduler does, since ties (equal keys,
    equal release times) are broken by the lists' previous order and the numbers depend on it.
    """
    size = len(submit)
    start = [math.nan] * size
    finish = [math.nan] * size  # start + run: release order
    estimate = [math.nan] * size  # start + requested: reservation order
    order: list[int] = []
    queue: list[int] = [0]
    running: list[int] = []
    free = total_nodes
    now = submit[0]
    arrival = 1
    by_finish = finish.__getitem__
    by_estimate = estimate.__getitem__
    by_submit = submit.__getitem__

    def launch(j: int) -> None:
        nonlocal free
        start[j] = now
        finish[j] = now + run[j]
        estimate[j] = now + request[j]
        free -= nodes[j]
        running.append(j)
        order.append(j)

    def step() -> None:
        """Admit the next arrival (ties with a release go to it) or release the earliest end."""
        nonlocal now, arrival, free
        if running:
            running.sort(key=by_finish)
            release = finish[running[0]]
        else:
            release = math.inf
        if arrival < size and submit[arrival] <= release:
            now = max(now, submit[arrival])
            queue.append(arrival)
            arrival += 1
        else:
            if not running:  # pragma: no cover - guarded by the nodes check of the caller
                msg = "no running job to release and no arrival left"
                raise SimulationError(msg)
            now = max(now, release)
            free += nodes[running.pop(0)]

    while True:
        queue.sort(key=queue_key(now))
        head = queue[0]
        if nodes[head] > free:
            if backfill:
                # the head's reservation, computed once from the requested times
                running.sort(key=by_estimate)
                shadow = now
                free_procs = free * procs_per_node
                for r in running:
                    free_procs += nodes[r] * procs_per_node
                    shadow = estimate[r]
                    if free_procs >= cores[head]:
                        break
                while nodes[head] > free:
                    queue.sort(key=by_submit)
                    for c in list(queue):
                        if now + request[c] < shadow and nodes[c] <= free:
                            launch(c)
                            queue.remove(c)
                    step()
            else:
                while nodes[head] > free:
                    step()
        launch(head)
        queue.remove(head)
        if not queue:
            if arrival >= size:
                break
            while not queue:
                step()
    return order, start


def simulate_rlscheduler_window(
    workload: RLSchedulerWorkload,
    first: int,
    *,
    policy: str,
    backfill: bool = False,
    compat_wait_bug: bool = False,
    window: int = WINDOW_JOBS,
) -> RLSchedulerWindow:
    """Schedule jobs ``first … first + window − 1`` in RLScheduler's loop.

    Parameters
    ----------
    workload : RLSchedulerWorkload
        From :func:`rlscheduler_workload` or :func:`read_rlscheduler_swf`.
    first : int
        Index of the window's first job.
    policy : {"FCFS", "SJF", "WFP3", "UNICEP", "F1"}
        The priority rule (module docstring).
    backfill : bool, default False
        RLScheduler's backfilling variant.
    compat_wait_bug : bool, default False
        Use RLScheduler's wait (−1 − submit) in WFP3/UNICEP, which its published table used;
        no effect on the other policies.
    window : int, default 1024
        Jobs in the window.

    Returns
    -------
    RLSchedulerWindow
        Jobs in start order with their bounded slowdowns, the mean and the utilisation.

    Raises
    ------
    ConfigError
        If the policy is unknown or the window does not lie inside the workload.
    """
    policy = policy.upper()
    if window < 1 or first < 0 or first + window > len(workload):
        msg = f"window {first}…{first + window - 1} is not inside the {len(workload)} jobs"
        raise ConfigError(msg)
    part = slice(first, first + window)
    submit = workload.submit_s[part].tolist()
    run = workload.run_s[part].tolist()
    request = workload.request_s[part].tolist()
    cores = workload.cores[part].tolist()
    nodes = workload.nodes[part].tolist()
    queue_key = _policy_key(policy, compat_wait_bug, submit, request, cores)
    order, start = _schedule(
        submit,
        run,
        request,
        cores,
        nodes,
        workload.max_nodes,
        workload.procs_per_node,
        queue_key,
        backfill,
    )
    idx = np.asarray(order, dtype=np.int64)
    sub = np.asarray(submit)[idx]
    beg = np.asarray(start)[idx]
    rt = np.asarray(run)[idx]
    n = np.asarray(cores, dtype=np.int64)[idx]
    bsld = np.maximum(1.0, (beg - sub + rt) / np.maximum(rt, BSLD_TAU_S))
    bsld_mean = 0.0
    for b in bsld.tolist():  # RLScheduler sums score / window in start order
        bsld_mean += b / window
    span = float(beg.max()) - submit[0]
    if span > 0:
        total = span * workload.max_procs
        utilisation = 0.0
        for work in (rt * n).tolist():
            utilisation += work / total
    else:
        utilisation = math.nan
    return RLSchedulerWindow(
        first=first,
        job_id=workload.job_id[part][idx],
        submit_s=sub,
        start_s=beg,
        run_s=rt,
        cores=n,
        bsld=bsld,
        bsld_mean=bsld_mean,
        utilisation=utilisation,
    )


# --------------------------------------------------------------------------- the table


def rlscheduler_table(
    workload: RLSchedulerWorkload,
    *,
    seed: int = 1,
    windows: int = 10,
    window: int = WINDOW_JOBS,
    job_slice: int = 0,
    columns: Sequence[tuple[str, str, bool]] = RLSCHEDULER_TABLE_COLUMNS,
    backfill: Sequence[bool] = (False, True),
) -> pa.Table:
    """Reproduce RLScheduler's heuristic table on one workload.

    Parameters
    ----------
    workload : RLSchedulerWorkload
        The trace, loaded with RLScheduler's rules.
    seed : int, default 1
        Legacy gym seed of the window starts (1 in RLScheduler's table script).
    windows : int, default 10
        Number of windows.
    window : int, default 1024
        Jobs per window.
    job_slice : int, default 0
        RLScheduler's ``batch_job_slice`` (10000 for HPC2N): bounds where the starts are drawn.
    columns : sequence of (label, policy, compat_wait_bug), default RLSCHEDULER_TABLE_COLUMNS
        The policies to run; the default is the published five plus the corrected WFP3/UNICEP.
    backfill : sequence of bool, default (False, True)
        The modes to run.

    Returns
    -------
    pyarrow.Table
        One row per (label, backfill): ``label``, ``policy``, ``compat_wait_bug``, ``backfill``,
        ``bsld_mean`` and ``utilisation_mean`` (means over the windows, the published values),
        and per-window lists ``window_starts``, ``bsld`` and ``utilisation``. The schema
        metadata holds the seed, window size, job slice and cluster.

    Examples
    --------
    >>> wl = read_rlscheduler_swf("lublin_256.swf.gz")  # doctest: +SKIP
    >>> t = rlscheduler_table(wl)  # doctest: +SKIP
    >>> rows = {(r["label"], r["backfill"]): r for r in t.to_pylist()}  # doctest: +SKIP
    >>> round(rows["SJF", False]["bsld_mean"], 2)  # doctest: +SKIP
    277.35
    """
    starts = rlscheduler_window_starts(
        len(workload), seed=seed, windows=windows, window=window, job_slice=job_slice
    )
    rows: dict[str, list[Any]] = {
        k: []
        for k in (
            "label",
            "policy",
            "compat_wait_bug",
            "backfill",
            "bsld_mean",
            "utilisation_mean",
            "window_starts",
            "bsld",
            "utilisation",
        )
    }
    for bf in backfill:
        for label, policy, bug in columns:
            results = [
                simulate_rlscheduler_window(
                    workload,
                    int(s),
                    policy=policy,
                    backfill=bf,
                    compat_wait_bug=bug,
                    window=window,
                )
                for s in starts
            ]
            bsld = [r.bsld_mean for r in results]
            util = [r.utilisation for r in results]
            rows["label"].append(label)
            rows["policy"].append(policy.upper())
            rows["compat_wait_bug"].append(bool(bug))
            rows["backfill"].append(bool(bf))
            rows["bsld_mean"].append(float(np.mean(bsld)))
            rows["utilisation_mean"].append(float(np.mean(util)))
            rows["window_starts"].append(starts.tolist())
            rows["bsld"].append(bsld)
            rows["utilisation"].append(util)
            logger.info(
                "RLScheduler %s backfill=%s: bsld %.2f utilisation %.3f",
                label,
                bf,
                rows["bsld_mean"][-1],
                rows["utilisation_mean"][-1],
            )
    fields: list[pa.Field[Any]] = [
        pa.field("label", pa.string(), nullable=False),
        pa.field("policy", pa.string(), nullable=False),
        pa.field("compat_wait_bug", pa.bool_(), nullable=False),
        pa.field("backfill", pa.bool_(), nullable=False),
        pa.field("bsld_mean", pa.float64(), nullable=False),
        pa.field("utilisation_mean", pa.float64(), nullable=False),
        pa.field("window_starts", pa.list_(pa.int64()), nullable=False),
        pa.field("bsld", pa.list_(pa.float64()), nullable=False),
        pa.field("utilisation", pa.list_(pa.float64()), nullable=False),
    ]
    schema = pa.schema(
        fields,
        metadata={
            "seed": str(seed),
            "window": str(window),
            "job_slice": str(job_slice),
            "max_nodes": str(workload.max_nodes),
            "max_procs": str(workload.max_procs),
        },
    )
    return pa.Table.from_pydict(rows, schema=schema)
