"""A trace, and its characterisation, from a ``jobs.parquet`` read in batches of rows.

:func:`gridtrace.logs.build_trace` takes a whole ``jobs`` table: at 17 million jobs the columns
it reads take about 18 GB. :func:`trace_from_parquet` reads the file batch by batch and keeps,
of each batch, only the attempts that ran and the few values a trace is made of (submit, run,
cores, wait, walltime, VO, user, queue, partition and the sort keys): memory grows with the
trace instead of with the jobs table (measured on 2 million jobs: a peak of about 250 bytes a
job to build the trace, 260-370 with the characterisation, against about 800 for the whole
table's columns; the trace itself holds about 75 bytes a job), and the result is the table
``build_trace`` gives, metadata included. :func:`characterise_parquet` then characterises
it with :func:`gridtrace.stats.characterise`, so every figure is the in-memory
path's, exactly (none is approximated).

Which figures could be streamed without holding the trace: the counts, sums and means (jobs,
interactive fraction, mean runtime, U, ρ, VO and user shares by jobs and by work), histograms
over edges fixed by a first pass for the maximum, the service-request bins and the daily and
weekly profiles are sums over jobs; the runtime and wait quantiles would need a quantile sketch
(approximate); the inter-arrival summary, ACF, IDC and flurries need the submit times in order,
which a ``jobs`` file does not keep (its rows are in job-assembly order). Holding only the
trace's columns keeps all of them exact.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from gridtrace.errors import ConfigError
from gridtrace.logs._trace import DEFAULT_TAU_S, has_flag
from gridtrace.schema import conform, with_trace_metadata
from gridtrace.stats._characterise import WorkloadStats, characterise

__all__ = ["JOBS_COLUMNS_OF_TRACE", "characterise_parquet", "trace_from_parquet"]

logger = logging.getLogger(__name__)

JOBS_COLUMNS_OF_TRACE = (
    "site",
    "job_seq",
    "array_index",
    "attempt",
    "job_key",
    "submit_time",
    "queue_time",
    "start_time",
    "end_time",
    "run_s",
    "state",
    "flags",
    "cores_alloc",
    "cores_req",
    "walltime_req_s",
    "vo",
    "user",
    "queue",
    "partition",
)
"""The ``jobs`` columns a trace is built from (with the cores P given)."""

_KEPT = ("job_seq", "array_index", "attempt", "job_key", "walltime_req_s")
_LABELS = ("vo", "user", "queue", "partition")
_TRACE_ORDER = (
    "job_id",
    "submit_s",
    "run_s",
    "cores",
    "walltime_req_s",
    *_LABELS,
    "interactive",
    "wait_s",
)
_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}


def _table(columns: Mapping[str, Any]) -> pa.Table:
    """Build a table of arrays or chunked arrays, in the mapping's order."""
    return pa.Table.from_arrays(list(columns.values()), names=list(columns))


def _ticks(column: pa.Array[Any], unit: str) -> pa.Array[Any]:
    """Timestamps as int64 ticks of ``unit`` (nulls kept)."""
    return column.cast(pa.timestamp(unit)).cast(pa.int64())


def _batch_part(batch: pa.Table, unit: str, exclude_monitoring: bool) -> tuple[pa.Table, int]:
    """Keep the trace values of a batch's attempts that ran; count the probes left out."""
    started = pc.and_(
        pc.is_valid(batch.column("start_time")), pc.is_valid(batch.column("end_time"))
    )
    ran = pc.and_(
        pc.and_(
            pc.or_(started, pc.is_valid(batch.column("submit_time"))),
            pc.is_valid(batch.column("run_s")),
        ),
        pc.not_equal(batch.column("state"), pa.scalar("DELETED")),
    )
    n_monitoring = 0
    if exclude_monitoring:
        monitoring = has_flag(batch, "MONITORING")
        both = pc.and_(ran, monitoring).to_numpy(zero_copy_only=False)
        n_monitoring = int(np.count_nonzero(both))
        ran = pc.and_(ran, pc.invert(monitoring))
    used = batch.filter(ran)
    submit_time = _ticks(used.column("submit_time").combine_chunks(), unit)
    queue_time = _ticks(used.column("queue_time").combine_chunks(), unit)
    start_time = _ticks(used.column("start_time").combine_chunks(), unit)
    requeued = pc.and_(
        pc.greater(used.column("attempt").combine_chunks(), pa.scalar(0, pa.int16())),
        pc.is_valid(queue_time),
    )
    submit = pc.coalesce(pc.if_else(requeued, queue_time, submit_time), start_time)
    part: dict[str, Any] = {name: used.column(name) for name in _KEPT}
    for name in _LABELS:  # a few distinct values each: indices into a small dictionary
        part[name] = pc.dictionary_encode(used.column(name))
    part["submit"] = submit
    part["start"] = start_time
    part["run_s"] = used.column("run_s").cast(pa.float64())
    part["cores"] = pc.coalesce(used.column("cores_alloc"), used.column("cores_req"))
    return _table(part), n_monitoring


def _batches(source: pq.ParquetFile, batch_rows: int) -> Iterator[pa.Table]:
    """Yield the file's trace columns a row group at a time (in batches if a group is larger).

    Whole row groups, read without pre-buffering, keep no memory once dropped; Arrow's batch
    iterator holds on to some of what it has read.
    """
    columns = list(JOBS_COLUMNS_OF_TRACE)
    for group in range(source.num_row_groups):
        if source.metadata.row_group(group).num_rows <= batch_rows:
            yield source.read_row_group(group, columns=columns, use_threads=False)
            continue
        batches = source.iter_batches(batch_size=batch_rows, row_groups=[group], columns=columns)
        for record_batch in batches:
            yield pa.Table.from_batches([record_batch])


def _seconds(ticks: np.ndarray[Any, np.dtype[np.int64]], per_s: int) -> np.ndarray[Any, Any]:
    """Ticks as float seconds, split as pandas' ``total_seconds`` splits them."""
    whole, rest = np.divmod(ticks, per_s)
    return whole + rest / per_s


def trace_from_parquet(
    path: str | os.PathLike[str],
    *,
    cores: int,
    tau_s: float = DEFAULT_TAU_S,
    exclude_monitoring: bool = True,
    provenance: Mapping[str, Any] | None = None,
    tz: str | None = None,
    batch_rows: int = 65_536,
) -> pa.Table:
    """Build the ``trace`` of a ``jobs.parquet`` file, reading it ``batch_rows`` rows at a time.

    The result equals :func:`gridtrace.logs.build_trace` on the whole table read from the
    file, with the same ``cores``, ``tau_s``, ``exclude_monitoring``, ``provenance`` and
    ``tz`` (rows, order, types and metadata); only the jobs' trace values are held.

    Parameters
    ----------
    path : path-like
        A ``jobs`` table in Parquet (as ``gridtrace parse`` writes it).
    cores : int
        The site's cores P. Estimating P needs every job's hosts at once, so it is required here.
    tau_s, exclude_monitoring, provenance, tz
        As in :func:`gridtrace.logs.build_trace`.
    batch_rows : int, default 65,536
        Rows read at a time: a row group, or batches of this many rows of a larger group.

    Returns
    -------
    pyarrow.Table
        The trace, sorted by (submit, job_seq, array_index, attempt, job_key).

    Raises
    ------
    ConfigError
        If ``tau_s``, ``cores`` or ``batch_rows`` is not positive, or no job ran.
    """
    if tau_s <= 0:
        msg = f"tau_s must be positive, not {tau_s}"
        raise ConfigError(msg)
    if cores < 1:
        msg = f"cores must be at least 1, not {cores}"
        raise ConfigError(msg)
    if batch_rows < 1:
        msg = f"batch_rows must be at least 1, not {batch_rows}"
        raise ConfigError(msg)
    source = pq.ParquetFile(os.fspath(path), pre_buffer=False)
    time_type = cast("pa.TimestampType", source.schema_arrow.field("submit_time").type)
    unit, zone = time_type.unit, time_type.tz
    parts: list[pa.Table] = []
    n_monitoring = 0
    site: str | None = None
    for batch in _batches(source, batch_rows):
        if site is None and batch.num_rows:
            site = str(batch.column("site")[0].as_py())
        part, monitoring = _batch_part(batch, unit, exclude_monitoring)
        n_monitoring += monitoring
        parts.append(part)
    rows_in_file = source.metadata.num_rows
    used = pa.concat_tables(parts) if parts else None
    if used is None or used.num_rows == 0:
        msg = "no job in the table ran (no attempt with a start, an end and a runtime)"
        raise ConfigError(msg)
    del parts
    per_s = _PER_SECOND[unit]
    submit = np.asarray(used.column("submit").to_numpy(), dtype=np.int64)
    origin = int(submit.min())
    start_column = used.column("start")
    start_or_0 = cast("pa.ChunkedArray[Any]", pc.coalesce(start_column, pa.scalar(0, pa.int64())))
    start = np.asarray(start_or_0.to_numpy(), dtype=np.int64)
    wait = _seconds(start - submit, per_s)
    wait[~np.asarray(start_column.is_valid().to_numpy(), dtype=bool)] = np.nan
    n_cores_defaulted = int(used.column("cores").null_count)
    keys = _table(
        {
            "submit_s": pa.array(_seconds(submit - origin, per_s)),
            "job_seq": used.column("job_seq"),
            "array_index": used.column("array_index"),
            "attempt": used.column("attempt"),
            "job_key": used.column("job_key"),
            "row": pa.array(np.arange(used.num_rows, dtype=np.int64)),
        }
    )
    order = pc.sort_indices(keys, sort_keys=[(name, "ascending") for name in keys.column_names])
    del keys
    rows = np.asarray(order.to_numpy(), dtype=np.int64)
    used = used.drop_columns(["submit", "start", "job_seq", "array_index", "attempt", "job_key"])
    run_s = np.asarray(used.column("run_s").to_numpy(), dtype=np.float64)[rows]
    columns: dict[str, Any] = {
        "job_id": pa.array(np.arange(used.num_rows, dtype=np.int64)),
        "submit_s": pa.array(_seconds(submit[rows] - origin, per_s)),
        "run_s": pa.array(run_s),
    }
    del submit
    # one column at a time, each source dropped once taken: never two copies of the jobs
    for name in ("cores", "walltime_req_s", *_LABELS):
        columns[name] = used.column(name).take(order)
        used = used.drop_columns([name])
    columns["cores"] = pc.coalesce(columns["cores"], pa.scalar(1, pa.int32())).cast(pa.int32())
    columns["walltime_req_s"] = columns["walltime_req_s"].cast(pa.float64())
    for name in _LABELS:
        columns[name] = columns[name].cast(pa.string())
    columns["interactive"] = pa.array(run_s <= tau_s)
    columns["wait_s"] = pa.array(wait[rows], from_pandas=True)
    n = len(rows)
    table = _table({name: columns[name] for name in _TRACE_ORDER})
    if n_cores_defaulted:
        logger.warning("%d jobs had no core count; they count as 1 core", n_cores_defaulted)
    info = {
        **dict(provenance or {}),
        **({"tz": tz} if tz is not None else {}),
        "jobs_in_table": int(rows_in_file),
        "jobs_in_trace": n,
        "monitoring_jobs_excluded": n_monitoring,
        "cores_estimate": "given",
        "cores_source": "given",
        "jobs_with_cores_defaulted_to_1": n_cores_defaulted,
        "job_id": "row number in (submit, job_seq, array_index, attempt) order",
    }
    first = pd.Timestamp(origin, unit=unit, tz=zone)
    return with_trace_metadata(
        conform(table, "trace"),
        origin=first.isoformat(),
        site=site if site is not None else "site",
        cores=cores,
        tau_s=tau_s,
        provenance=info,
    )


def characterise_parquet(
    path: str | os.PathLike[str],
    *,
    cores: int,
    tau_s: float = DEFAULT_TAU_S,
    tz: str | None = None,
    exclude_monitoring: bool = True,
    batch_rows: int = 65_536,
    **options: Any,
) -> WorkloadStats:
    """Characterise the trace of a ``jobs.parquet`` file without reading the jobs whole.

    The trace is built by :func:`trace_from_parquet` and characterised by
    :func:`gridtrace.stats.characterise` (``options`` are passed on to it), so every figure
    equals the in-memory path's (``build_trace`` on the whole table, then ``characterise``).

    Parameters
    ----------
    path : path-like
        A ``jobs`` table in Parquet.
    cores : int
        The site's cores P.
    tau_s : float, default 900
        Interactive threshold.
    tz : str, optional
        The site's IANA zone (stored in the trace; the profiles use it).
    exclude_monitoring : bool, default True
        Leave out the grid's monitoring probes.
    batch_rows : int, default 65,536
        Rows of the jobs file read at a time.
    **options
        Keyword arguments of :func:`gridtrace.stats.characterise` (``window``, ``bin_s``, ...).

    Returns
    -------
    WorkloadStats
    """
    trace = trace_from_parquet(
        path,
        cores=cores,
        tau_s=tau_s,
        exclude_monitoring=exclude_monitoring,
        tz=tz,
        batch_rows=batch_rows,
    )
    return characterise(trace, **options)
