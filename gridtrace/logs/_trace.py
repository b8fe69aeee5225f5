"""From ``jobs`` to ``trace``: the jobs that really ran, as models and the simulator see them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError
from gridtrace.logs._swf import log_headers, processors_of_headers
from gridtrace.schema import conform, with_trace_metadata

__all__ = ["DEFAULT_TAU_S", "build_trace", "estimate_cores", "execution_slots", "has_flag"]

logger = library_logger(__name__)

DEFAULT_TAU_S = 900.0
"""Runtime threshold between interactive and batch jobs, in seconds (the research's τ)."""


def execution_slots(records: pa.Table) -> dict[str, set[int]]:
    """Collect the distinct execution slots (host, core index) named by ``exec_host`` values.

    ``host/0-3``, ``host/0,2`` and ``host/5`` name slots directly; PBS Pro's ``host/i*n`` names
    the ``n`` slots from ``i``. Values that cannot be read are left out.
    """
    attrs = cast(
        "pa.MapArray[Any, Any]",
        pa.concat_arrays(
            [*records.column("attrs").chunks, pa.array([], pa.map_(pa.string(), pa.string()))]
        ),
    )
    keys, values = attrs.keys, attrs.items
    hosts: dict[str, set[int]] = {}
    wanted = pc.equal(keys, pa.scalar("exec_host")).to_numpy(zero_copy_only=False)
    for text in pc.unique(values.filter(pa.array(wanted))).to_pylist():
        for chunk in (text or "").split("+"):
            host, _, slots = chunk.rpartition("/")
            if not host:
                continue
            seen = hosts.setdefault(host, set())
            for item in slots.split(","):
                seen.update(_slot_range(item))
    return {host: slots for host, slots in hosts.items() if slots}


def _slot_range(item: str) -> range:
    first, star, count = item.partition("*")
    low, dash, high = first.partition("-")
    if not low.isdigit() or (dash and not high.isdigit()) or (star and not count.isdigit()):
        return range(0)
    if star:
        return range(int(low), int(low) + int(count))
    return range(int(low), int(high if dash else low) + 1)


def estimate_cores(jobs: pa.Table, records: pa.Table | None = None) -> tuple[int, str]:
    """Estimate the site's cores P from the execution slots its jobs used.

    With the ``records`` table, P is the number of distinct (host, core index) slots named by
    ``exec_host``. Without it, each host's capacity is the peak number of cores its jobs held at
    once (a multi-host job is taken to spread its cores evenly over its hosts) and P the sum over
    hosts; jobs without ``exec_hosts`` fall back to the peak number of cores in use site-wide.

    Returns
    -------
    cores : int
        The estimate (at least 1).
    method : str
        How it was obtained, for the trace's provenance.
    """
    if records is not None:
        slots = execution_slots(records)
        if slots:
            total = sum(len(s) for s in slots.values())
            return total, f"distinct execution slots seen on {len(slots)} hosts"
    frame = jobs.select(["start_time", "end_time", "cores_alloc", "exec_hosts"]).to_pandas()
    frame = frame.dropna(subset=["start_time", "end_time", "cores_alloc"])
    if frame.empty:
        return 1, "no job with a start, an end and allocated cores: P = 1"
    with_hosts = frame[frame["exec_hosts"].map(lambda h: h is not None and len(h) > 0)]
    if len(with_hosts) == len(frame):
        per_host = with_hosts.assign(
            share=np.ceil(with_hosts["cores_alloc"] / with_hosts["exec_hosts"].map(len))
        ).explode("exec_hosts")
        peaks = _peak_concurrency(per_host, "exec_hosts")
        return max(1, int(peaks.sum())), f"sum over {len(peaks)} hosts of peak cores in use"
    peak = _peak_concurrency(frame.assign(share=frame["cores_alloc"], site=0), "site")
    return max(1, int(peak.max())), "peak cores in use site-wide (some jobs lack exec_hosts)"


def _peak_concurrency(frame: pd.DataFrame, by: str) -> pd.Series:
    starts = pd.DataFrame(
        {by: frame[by], "t": frame["start_time"], "delta": frame["share"].astype(float)}
    )
    ends = pd.DataFrame(
        {by: frame[by], "t": frame["end_time"], "delta": -frame["share"].astype(float)}
    )
    # at equal times a core is freed before it is taken again
    events = pd.concat([starts, ends]).sort_values([by, "t", "delta"], kind="stable")
    events["in_use"] = events.groupby(by)["delta"].cumsum()
    return events.groupby(by)["in_use"].max()


def build_trace(
    jobs: pa.Table,
    *,
    tau_s: float = DEFAULT_TAU_S,
    cores: int | None = None,
    exclude_monitoring: bool = True,
    records: pa.Table | None = None,
    provenance: Mapping[str, Any] | None = None,
    tz: str | None = None,
) -> pa.Table:
    """Build the ``trace`` table from a ``jobs`` table.

    Only attempts that really ran enter: a runtime, and a start and end or at least a submit time
    (archive logs such as LCG-2005-1 log no start; their ``wait_s`` is null). DELETED jobs and
    failed starts have no runtime. Array parents never appear in ``jobs``. A requeued attempt is
    submitted at its own queue time.

    Parameters
    ----------
    jobs : pyarrow.Table
        A ``jobs`` table (VOs assigned, if VO statistics are wanted).
    tau_s : float, default 900
        Jobs with ``run_s <= tau_s`` are interactive.
    cores : int, optional
        The site's cores P. When omitted: the processors the log's header states, for a jobs
        table read from SWF or GWF (``MaxProcs``, else ``MaxNodes`` counting one processor per
        node, see :func:`gridtrace.logs._swf.processors_of_headers`; raised to the largest job
        if one is bigger, with a warning), else estimated from the execution slots (see
        :func:`estimate_cores`). The trace's provenance says which: ``cores_source`` is
        ``"given"``, ``"header"`` or ``"estimated"`` and ``cores_estimate`` says how.
    exclude_monitoring : bool, default True
        Leave out jobs flagged ``MONITORING`` (the grid's test probes).
    records : pyarrow.Table, optional
        The ``records`` the jobs came from; with it, P counts the distinct execution slots.
    provenance : mapping, optional
        Where the jobs came from (source files, ...), stored in the trace metadata.
    tz : str, optional
        The site's IANA time zone, stored as ``provenance["tz"]`` so that daily and weekly
        profiles (:mod:`gridtrace.stats`) use the site's local time.

    Returns
    -------
    pyarrow.Table
        The trace, sorted by (submit, job id), with its metadata.

    Raises
    ------
    ConfigError
        If ``tau_s`` or ``cores`` is not positive, or no job ran.
    """
    if tau_s <= 0:
        msg = f"tau_s must be positive, not {tau_s}"
        raise ConfigError(msg)
    if cores is not None and cores < 1:
        msg = f"cores must be at least 1, not {cores}"
        raise ConfigError(msg)
    if tz is not None:
        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            msg = f"unknown time zone {tz!r}: give an IANA name such as 'Europe/Paris'"
            raise ConfigError(msg) from exc
    # Archive logs such as LCG-2005-1 record submit and runtime but no start: such a job ran
    # (it has a runtime), its wait is unknown.
    started = pc.and_(pc.is_valid(jobs.column("start_time")), pc.is_valid(jobs.column("end_time")))
    ran = pc.and_(
        pc.and_(
            pc.or_(started, pc.is_valid(jobs.column("submit_time"))),
            pc.is_valid(jobs.column("run_s")),
        ),
        pc.not_equal(jobs.column("state"), pa.scalar("DELETED")),
    )
    n_monitoring = 0
    if exclude_monitoring:
        monitoring = has_flag(jobs, "MONITORING")
        n_monitoring = int(
            np.count_nonzero(pc.and_(ran, monitoring).to_numpy(zero_copy_only=False))
        )
        ran = pc.and_(ran, pc.invert(monitoring))
    used = jobs.filter(ran)
    if used.num_rows == 0:
        msg = "no job in the table ran (no attempt with a start, an end and a runtime)"
        raise ConfigError(msg)
    frame = used.select(
        [
            "job_seq",
            "array_index",
            "attempt",
            "submit_time",
            "queue_time",
            "start_time",
            "run_s",
            "cores_alloc",
            "cores_req",
            "walltime_req_s",
            "job_key",
        ]
    ).to_pandas()
    requeued = (frame["attempt"] > 0) & frame["queue_time"].notna()
    submit = frame["submit_time"].where(~requeued, frame["queue_time"])
    submit = submit.fillna(frame["start_time"])
    job_cores = frame["cores_alloc"].fillna(frame["cores_req"])
    n_cores_defaulted = int(job_cores.isna().sum())
    if cores is None:
        cores, cores_method, cores_source = _cores_of(jobs, used, records, job_cores)
    else:
        cores_method, cores_source = "given", "given"
    origin = submit.min()
    frame = frame.assign(
        submit_s=(submit - origin).dt.total_seconds().astype("float64"),
        cores=job_cores.fillna(1).astype("int32"),
        wait_s=(frame["start_time"] - submit).dt.total_seconds().astype("float64"),
        row=np.arange(len(frame)),
    )
    frame = frame.sort_values(
        ["submit_s", "job_seq", "array_index", "attempt", "job_key"], kind="stable"
    )
    order = pa.array(frame["row"].to_numpy())
    run_s = frame["run_s"].to_numpy(dtype="float64")
    n = len(frame)
    table = pa.table(
        {
            "job_id": pa.array(np.arange(n, dtype=np.int64)),
            "submit_s": pa.array(frame["submit_s"].to_numpy(dtype="float64")),
            "run_s": pa.array(run_s),
            "cores": pa.array(frame["cores"].to_numpy(dtype="int32")),
            "walltime_req_s": _take(used, "walltime_req_s", order).cast(pa.float64()),
            "vo": _take(used, "vo", order),
            "user": _take(used, "user", order),
            "queue": _take(used, "queue", order),
            "partition": _take(used, "partition", order),
            "interactive": pa.array(run_s <= tau_s),
            "wait_s": pa.array(frame["wait_s"].to_numpy(dtype="float64"), from_pandas=True),
        }
    )
    if n_cores_defaulted:
        logger.warning("%d jobs had no core count; they count as 1 core", n_cores_defaulted)
    site = str(jobs.column("site")[0].as_py()) if jobs.num_rows else "site"
    info = {
        **dict(provenance or {}),
        **({"tz": tz} if tz is not None else {}),
        "jobs_in_table": int(jobs.num_rows),
        "jobs_in_trace": n,
        "monitoring_jobs_excluded": n_monitoring,
        "cores_estimate": cores_method,
        "cores_source": cores_source,
        "jobs_with_cores_defaulted_to_1": n_cores_defaulted,
        "job_id": "row number in (submit, job_seq, array_index, attempt) order",
    }
    return with_trace_metadata(
        conform(table, "trace"),
        origin=pd.Timestamp(origin).isoformat(),
        site=site,
        cores=cores,
        tau_s=tau_s,
        provenance=info,
    )


def _cores_of(
    jobs: pa.Table, used: pa.Table, records: pa.Table | None, job_cores: pd.Series
) -> tuple[int, str, str]:
    """P when the user gives none: the log header's processors, else the slots' estimate.

    Returns ``(P, how, source)``, source ``"header"`` or ``"estimated"``.
    """
    log_format, headers = log_headers(jobs)
    stated = processors_of_headers(headers) if log_format in ("swf", "gwf") else None
    if stated is None:
        cores, method = estimate_cores(used, records)
        return cores, method, "estimated"
    cores, key = stated
    method = f"{str(log_format).upper()} header {key}"
    largest = int(job_cores.max()) if job_cores.notna().any() else 0
    if largest > cores:
        logger.warning(
            "the log's header gives %d processors (%s) but a job used %d; P = %d (the largest "
            "job), or pass cores",
            cores,
            key,
            largest,
            largest,
        )
        return largest, f"{method} ({cores}) raised to the largest job", "header"
    return cores, method, "header"


def _take(table: pa.Table, column: str, order: pa.Array[Any]) -> pa.Array[Any]:
    return table.column(column).combine_chunks().take(order)


def has_flag(table: pa.Table, flag: str) -> pa.BooleanArray:
    """Whether each row's ``flags`` list contains ``flag`` (false for a null list)."""
    flags = table.column("flags").combine_chunks()
    hits = pc.equal(pc.list_flatten(flags), pa.scalar(flag))
    rows = pc.list_parent_indices(flags)
    marked = np.zeros(table.num_rows, dtype=bool)
    marked[rows.to_numpy()[hits.to_numpy(zero_copy_only=False)]] = True
    return pa.array(marked)
