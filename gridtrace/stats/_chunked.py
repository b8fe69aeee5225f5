"""A trace, and its characterisation, from a ``jobs.parquet`` read in batches of rows.

:func:`gridtrace.logs.build_trace` takes a whole ``jobs`` table: at 17 million jobs the columns
it reads take about 18 GB. :func:`trace_from_parquet` reads the file batch by batch and keeps,
of each batch, only the attempts that ran and the few values a trace is made of: memory grows
with the trace (about 75 bytes a job held, 250 at the peak) instead of with the jobs table, and
the result is the table ``build_trace`` gives, metadata included.

:func:`characterise_parquet` does not build the trace. The figures of
:func:`gridtrace.stats.characterise` need, of each job, its submit time, runtime, wait, cores,
VO and user; it holds those as numpy arrays (float64 times, int16 or int32 cores and codes
into running dictionaries of the labels: 30 to 36 bytes a job), in the trace's order, and
computes the figures with :func:`gridtrace.stats._characterise.characterise_arrays`, the code
``characterise`` runs on a trace's arrays. Of those figures, the counts, sums and means (jobs,
interactive fraction, mean runtime, U, ρ, VO and user shares, histograms, the service-request
bins and the daily and weekly profiles) are sums over jobs; the runtime and wait quantiles need
every value (held, so they are exact); the inter-arrival summary, ACF, IDC and flurries need the
submit times in order, which a ``jobs`` file does not keep (its rows are in job-assembly order):
the held submit times are sorted (``argsort``), jobs with equal submit times by the keys the
trace sorts them by, read again from the file for those jobs only. Every figure is the in-memory
path's, exactly, except the inter-arrival ACF of more than about 4.2 million jobs, which both
paths sum lag by lag instead of by FFT (equal to rounding; see ``ACF_FFT_MAX``). Measured on 17
million jobs (``benchmarks/characterise_memory.py``): a peak RSS of 952 to 958 MiB, the
interpreter's 112 included, against 5,285 MiB when the trace table was built; the largest
temporary arrays are the IDC curve's (about 38 bytes a job), then the sort's.

That memory still grows with the jobs. Above ``memory_budget`` (rows × 50 bytes; 256 MiB by
default, so above about 5.4 million rows) :func:`characterise_parquet` takes the out-of-core
path of :mod:`gridtrace.stats._outofcore` instead: the jobs are sorted on disk (sorted runs,
then a merge by chunks) and every figure is computed in passes over them a chunk at a time,
equal to this path's to the bit (numpy's pairwise sums and quantiles rebuilt exactly, see
:mod:`gridtrace.stats._exact`), in memory set by the budget and the file's row groups, not by
the jobs.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterator, Mapping
from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError
from gridtrace.logs._trace import DEFAULT_TAU_S, has_flag
from gridtrace.schema import conform, with_trace_metadata
from gridtrace.stats._characterise import WorkloadStats, characterise, characterise_arrays
from gridtrace.stats._columns import _NO_LABEL, F64, I64, TraceArrays, trace_arrays

__all__ = ["JOBS_COLUMNS_OF_TRACE", "characterise_parquet", "trace_from_parquet"]

logger = library_logger(__name__)

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


def _ran(batch: pa.Table, exclude_monitoring: bool) -> tuple[Any, int]:
    """Which of a batch's attempts ran (and are no probe); how many probes were left out."""
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
    return ran, n_monitoring


def _submit_and_start(used: pa.Table, unit: str) -> tuple[pa.Array[Any], pa.Array[Any]]:
    """Return the trace's submit (a requeued attempt's queue time, else submit or start), start."""
    submit_time = _ticks(used.column("submit_time").combine_chunks(), unit)
    queue_time = _ticks(used.column("queue_time").combine_chunks(), unit)
    start_time = _ticks(used.column("start_time").combine_chunks(), unit)
    requeued = pc.and_(
        pc.greater(used.column("attempt").combine_chunks(), pa.scalar(0, pa.int16())),
        pc.is_valid(queue_time),
    )
    submit = pc.coalesce(pc.if_else(requeued, queue_time, submit_time), start_time)
    return submit, start_time


def _ticks_and_wait(used: pa.Table, unit: str) -> tuple[I64, F64]:
    """Return the trace's submit ticks and waits in seconds (NaN: never started) of ``used``."""
    submit, start = _submit_and_start(used, unit)
    ticks = np.asarray(submit.to_numpy(zero_copy_only=False), dtype=np.int64)
    started = np.asarray(start.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    start_or_0 = cast("pa.Array[Any]", pc.fill_null(start, pa.scalar(0, pa.int64())))
    start_ticks = np.asarray(start_or_0.to_numpy(), dtype=np.int64)
    wait = np.asarray(_seconds(start_ticks - ticks, _PER_SECOND[unit]), dtype=np.float64)
    wait[~started] = np.nan
    return ticks, wait


def _batch_part(batch: pa.Table, unit: str, exclude_monitoring: bool) -> tuple[pa.Table, int]:
    """Keep the trace values of a batch's attempts that ran; count the probes left out."""
    ran, n_monitoring = _ran(batch, exclude_monitoring)
    used = batch.filter(ran)
    submit, start_time = _submit_and_start(used, unit)
    part: dict[str, Any] = {name: used.column(name) for name in _KEPT}
    for name in _LABELS:  # a few distinct values each: indices into a small dictionary
        part[name] = pc.dictionary_encode(used.column(name))
    part["submit"] = submit
    part["start"] = start_time
    part["run_s"] = used.column("run_s").cast(pa.float64())
    part["cores"] = pc.coalesce(used.column("cores_alloc"), used.column("cores_req"))
    return _table(part), n_monitoring


def _batches(
    source: pq.ParquetFile, batch_rows: int, columns: tuple[str, ...] = JOBS_COLUMNS_OF_TRACE
) -> Iterator[pa.Table]:
    """Yield the file's ``columns`` a row group at a time (in batches if a group is larger).

    Whole row groups, read without pre-buffering, keep no memory once dropped; Arrow's batch
    iterator holds on to some of what it has read.
    """
    names = list(columns)
    for group in range(source.num_row_groups):
        if source.metadata.row_group(group).num_rows <= batch_rows:
            yield source.read_row_group(group, columns=names, use_threads=False)
            continue
        batches = source.iter_batches(batch_size=batch_rows, row_groups=[group], columns=names)
        for record_batch in batches:
            yield pa.Table.from_batches([record_batch])


def _seconds(ticks: np.ndarray[Any, np.dtype[np.int64]], per_s: int) -> np.ndarray[Any, Any]:
    """Ticks as float seconds, split as pandas' ``total_seconds`` splits them."""
    whole, rest = np.divmod(ticks, per_s)
    return whole + rest / per_s


def _open(
    path: str | os.PathLike[str], *, cores: int, tau_s: float, batch_rows: int
) -> tuple[pq.ParquetFile, str, str | None]:
    """Check the arguments; open the jobs file; the unit and zone of its times."""
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
    return source, time_type.unit, time_type.tz


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
    source, unit, zone = _open(path, cores=cores, tau_s=tau_s, batch_rows=batch_rows)
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
    return _with_metadata(
        conform(table, "trace"),
        origin=pd.Timestamp(origin, unit=unit, tz=zone),
        site=site,
        cores=cores,
        tau_s=tau_s,
        provenance=provenance,
        tz=tz,
        counts=(int(rows_in_file), n, n_monitoring, n_cores_defaulted),
    )


def _with_metadata(
    table: pa.Table,
    *,
    origin: pd.Timestamp,
    site: str | None,
    cores: int,
    tau_s: float,
    provenance: Mapping[str, Any] | None,
    tz: str | None,
    counts: tuple[int, int, int, int],
) -> pa.Table:
    """Attach the trace metadata ``build_trace`` writes, for a trace read from a jobs file.

    ``counts`` are the rows of the jobs file, the jobs in the trace, the monitoring probes left
    out and the jobs whose core count defaulted to 1 (a warning says how many).
    """
    rows_in_file, n, n_monitoring, n_cores_defaulted = counts
    if n_cores_defaulted:
        logger.warning("%d jobs had no core count; they count as 1 core", n_cores_defaulted)
    info = {
        **dict(provenance or {}),
        **({"tz": tz} if tz is not None else {}),
        "jobs_in_table": rows_in_file,
        "jobs_in_trace": n,
        "monitoring_jobs_excluded": n_monitoring,
        "cores_estimate": "given",
        "cores_source": "given",
        "jobs_with_cores_defaulted_to_1": n_cores_defaulted,
        "job_id": "row number in (submit, job_seq, array_index, attempt) order",
    }
    return with_trace_metadata(
        table,
        origin=origin.isoformat(),
        site=site if site is not None else "site",
        cores=cores,
        tau_s=tau_s,
        provenance=info,
    )


_ARRIVAL_COLUMNS = (
    "site",
    "attempt",
    "submit_time",
    "queue_time",
    "start_time",
    "end_time",
    "run_s",
    "state",
    "flags",
)
"""The ``jobs`` columns of the first read: which attempts ran, their submit and wait."""

_JOB_COLUMNS = ("run_s", "cores_alloc", "cores_req", "vo", "user")
"""The ``jobs`` columns of the second read, put straight into trace order."""

_SORT_KEYS = ("job_seq", "array_index", "attempt", "job_key")
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]
_CHUNK = 1 << 20


class _Labels:
    """A running dictionary of a label column's values: codes in order of first sight."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}

    def encode(self, column: pa.ChunkedArray[Any]) -> np.ndarray[Any, np.dtype[np.int32]]:
        """Codes of a batch's values (-1 for a null), adding new values to the dictionary."""
        encoded = cast(
            "pa.DictionaryArray[Any, Any]", pc.dictionary_encode(column.combine_chunks())
        )
        values = encoded.dictionary.cast(pa.string()).to_pylist()
        lookup = np.array(
            [-1] + [self.codes.setdefault(str(v), len(self.codes)) for v in values], np.int32
        )
        indices = cast("pa.Array[Any]", encoded.indices)
        raw = pc.fill_null(indices, pa.scalar(-1, indices.type)).to_numpy(zero_copy_only=False)
        return lookup[np.asarray(raw, dtype=np.int64) + 1]

    def in_trace_order(
        self, codes: np.ndarray[Any, Any]
    ) -> tuple[np.ndarray[Any, Any], tuple[str, ...]]:
        """Recode ``codes`` (in trace order) as :func:`category_codes` codes a trace's column.

        Labels come in order of first appearance, a null's ``"(none)"`` last; recoded in place.
        """
        n = codes.size
        first = np.full(len(self.codes) + 1, n, dtype=np.int64)  # index 0: the null
        for start in range(0, n, _CHUNK):
            seen, at = np.unique(codes[start : start + _CHUNK], return_index=True)
            np.minimum.at(first, seen.astype(np.int64) + 1, at + start)
        names = ["", *self.codes]
        present = [code for code in np.argsort(first[1:], kind="stable") + 1 if first[code] < n]
        lookup = np.zeros(len(first), dtype=np.int32)
        lookup[present] = np.arange(len(present), dtype=np.int32)
        labels = [names[code] for code in present]
        if first[0] < n:
            lookup[0] = len(labels)
            labels.append(_NO_LABEL)
        for start in range(0, n, _CHUNK):
            part = codes[start : start + _CHUNK]
            part[:] = lookup[part.astype(np.int64) + 1]
        return codes, tuple(labels)


class _Small:
    """An int16 column of the jobs in trace order, widened to int32 if a value does not fit."""

    def __init__(self, n: int) -> None:
        self.values: np.ndarray[Any, Any] = np.zeros(n, dtype=np.int16)

    def put(self, where: I64, values: np.ndarray[Any, Any]) -> None:
        """Set ``values`` at the rows ``where``."""
        wide = values.size and (int(values.min()) < -(2**15) or int(values.max()) >= 2**15)
        if wide and self.values.dtype == np.int16:
            self.values = self.values.astype(np.int32)
        self.values[where] = values


def _read_keys(
    source: pq.ParquetFile,
    batch_rows: int,
    ran: list[BoolArray],
    wanted: I64,
    columns: tuple[str, ...],
) -> pa.Table:
    """Read ``columns`` of the jobs that ran at rows ``wanted`` (sorted) of those that ran."""
    parts: list[pa.Table] = []
    offset = 0
    for batch, batch_ran in zip(_batches(source, batch_rows, columns), ran, strict=True):
        used = np.flatnonzero(batch_ran)
        lo, hi = np.searchsorted(wanted, [offset, offset + used.size])
        if hi > lo:
            parts.append(batch.take(used[wanted[lo:hi] - offset]))
        offset += used.size
    return pa.concat_tables(parts)


def _key_arrays(column: pa.ChunkedArray[Any]) -> tuple[I64, BoolArray]:
    """Return a numeric key column as int64 values (0 for a null) and its nulls."""
    nulls = np.asarray(column.is_null().to_numpy(), dtype=bool)
    filled = pc.fill_null(column, pa.scalar(0, column.type)).cast(pa.int64())
    return np.asarray(filled.to_numpy(), dtype=np.int64), nulls


def _tie_order(
    source: pq.ParquetFile, batch_rows: int, ran: list[BoolArray], rows: I64, submit: F64
) -> I64:
    """Order jobs that share their submit time with another as the trace orders them.

    ``rows`` are their rows among the jobs that ran (in file order; ``ran`` says which rows of
    each batch ran), ``submit`` their submit times. They are sorted as
    :func:`trace_from_parquet` sorts them: by submit, job_seq, array_index, attempt (nulls
    last), job_key, then the row. The numeric keys are read again from the file for them; the
    job keys only for those the numbers leave tied.
    """
    by_row = np.argsort(rows, kind="stable")
    wanted = rows[by_row]
    submit = submit[by_row]
    del by_row
    numbers = _read_keys(source, batch_rows, ran, wanted, _SORT_KEYS[:3])
    keys: list[np.ndarray[Any, Any]] = [wanted]
    for name in reversed(_SORT_KEYS[:3]):
        values, nulls = _key_arrays(numbers.column(name))
        keys += [values, nulls]
    del numbers
    keys.append(submit)
    order = np.lexsort(keys)
    same = np.ones(order.size - 1, dtype=bool)
    for key in keys[1:]:
        ranked = key[order]
        same &= ranked[1:] == ranked[:-1]
    del ranked, keys
    if same.any():  # the numbers tie: the job keys decide, as Arrow sorts them
        left = np.zeros(order.size, dtype=bool)
        left[1:] |= same
        left[:-1] |= same
        positions = np.flatnonzero(left)
        subset = np.sort(order[positions])
        table = _read_keys(source, batch_rows, ran, wanted[subset], _SORT_KEYS)
        table = table.append_column("row", pa.array(wanted[subset]))
        table = table.add_column(0, "submit_s", pa.array(submit[subset]))
        by = pc.sort_indices(table, sort_keys=[(name, "ascending") for name in table.column_names])
        order[positions] = subset[np.asarray(by.to_numpy(), dtype=np.int64)]
    return wanted[order]


def _trace_arrays_of_file(
    path: str | os.PathLike[str],
    *,
    cores: int,
    tau_s: float,
    tz: str | None,
    exclude_monitoring: bool,
    batch_rows: int,
) -> TraceArrays:
    """Build the :class:`TraceArrays` of the trace of a jobs file, read in batches.

    A first read keeps, of each job that ran, its submit time and wait, sorted into trace
    order; a second puts each job's runtime, cores and VO and user codes straight at its place
    in that order. See :func:`characterise_parquet`.
    """
    source, unit, zone = _open(path, cores=cores, tau_s=tau_s, batch_rows=batch_rows)
    per_s = _PER_SECOND[unit]
    rows_in_file = source.metadata.num_rows
    # filled batch by batch: pages of the unused tail are never touched
    submit_ticks = np.empty(rows_in_file, dtype=np.int64)
    wait = np.empty(rows_in_file, dtype=np.float64)
    ran_masks: list[BoolArray] = []  # one byte a row of the file, for the later reads
    n = n_monitoring = 0
    site: str | None = None
    for batch in _batches(source, batch_rows, _ARRIVAL_COLUMNS):
        if site is None and batch.num_rows:
            site = str(batch.column("site")[0].as_py())
        ran, monitoring = _ran(batch, exclude_monitoring)
        n_monitoring += monitoring
        ran_masks.append(np.asarray(ran.to_numpy(zero_copy_only=False), dtype=bool))
        used = batch.filter(ran)
        del batch
        k = used.num_rows
        if not k:
            continue
        submit_ticks[n : n + k], wait[n : n + k] = _ticks_and_wait(used, unit)
        n += k
    if n == 0:
        msg = "no job in the table ran (no attempt with a start, an end and a runtime)"
        raise ConfigError(msg)
    pa.default_memory_pool().release_unused()  # the batches' buffers, kept by the pool
    origin = int(submit_ticks[:n].min())
    submit_s = np.empty(n, dtype=np.float64)
    for first in range(0, n, _CHUNK):
        rows = slice(first, min(first + _CHUNK, n))
        submit_s[rows] = _seconds(submit_ticks[rows] - origin, per_s)
    del submit_ticks
    order = np.argsort(submit_s, kind="stable")
    submit_s = submit_s[order]
    tied = np.zeros(n, dtype=bool)
    same = submit_s[1:] == submit_s[:-1]
    tied[1:] |= same
    tied[:-1] |= same
    del same
    if tied.any():  # equal submits are ordered by the jobs' keys, read again for them only
        order[tied] = _tie_order(source, batch_rows, ran_masks, order[tied], submit_s[tied])
        pa.default_memory_pool().release_unused()
    del tied
    wait = wait[order]
    place = np.empty(n, dtype=np.int64)  # each job's place in trace order, by file order
    for first in range(0, n, _CHUNK):
        place[order[first : first + _CHUNK]] = np.arange(first, min(first + _CHUNK, n))
    del order
    run = np.empty(n, dtype=np.float64)
    job_cores, vo_codes, user_codes = _Small(n), _Small(n), _Small(n)
    vos, users = _Labels(), _Labels()
    n_cores_defaulted = done = 0
    batches = _batches(source, batch_rows, _JOB_COLUMNS)
    for batch, batch_ran in zip(batches, ran_masks, strict=True):
        used = batch.filter(pa.array(batch_ran))
        del batch
        k = used.num_rows
        if not k:
            continue
        where = place[done : done + k]
        run[where] = used.column("run_s").cast(pa.float64()).to_numpy()
        job = pc.coalesce(used.column("cores_alloc"), used.column("cores_req"))
        n_cores_defaulted += job.null_count
        job_cores.put(where, pc.coalesce(job, pa.scalar(1, job.type)).to_numpy())
        vo_codes.put(where, vos.encode(used.column("vo")))
        user_codes.put(where, users.encode(used.column("user")))
        done += k
    del place, ran_masks
    pa.default_memory_pool().release_unused()
    vo_values, vo_labels = vos.in_trace_order(vo_codes.values)
    user_values, user_labels = users.in_trace_order(user_codes.values)
    empty = pa.table({"submit_s": pa.array([], pa.float64()), "run_s": pa.array([], pa.float64())})
    labelled = trace_arrays(
        _with_metadata(
            empty,
            origin=pd.Timestamp(origin, unit=unit, tz=zone),
            site=site,
            cores=cores,
            tau_s=tau_s,
            provenance=None,
            tz=tz,
            counts=(int(rows_in_file), n, n_monitoring, n_cores_defaulted),
        )
    )
    # cores and the codes stay narrow (int16 when they fit): the figures widen them exactly
    return TraceArrays(
        submit=submit_s,
        run=run,
        cores=cast("F64", job_cores.values),
        wait=wait,
        vo_codes=cast("I64", vo_values),
        vo_labels=vo_labels,
        user_codes=cast("I64", user_values),
        user_labels=user_labels,
        origin=labelled.origin,
        metadata=labelled.metadata,
    )


DEFAULT_MEMORY_BUDGET = 256 * 2**20
"""Bytes the arrays of the in-memory path may take before the out-of-core path is used."""
_BYTES_PER_JOB = 50
"""The in-memory path's peak, bytes a row of the jobs file (measured at 17 million jobs)."""
_OPTIONS = ("window", "cores", "tau_s", "tz", "bin_s", "idc_points", "acf_lags", "flurries")
# the out-of-core path must use characterise's own defaults, not copies that could drift
_CHARACTERISE_DEFAULTS: dict[str, Any] = {
    name: parameter.default
    for name, parameter in inspect.signature(characterise).parameters.items()
    if name in _OPTIONS
}


def _out_of_core_sizes(memory_budget: int) -> tuple[int, int]:
    """Rows of a figure chunk and of a sorted run for a memory budget (bytes)."""
    chunk_rows = min(max(memory_budget // 1024, 4096), 1 << 20)
    run_rows = max(memory_budget // 256, chunk_rows)
    return chunk_rows, run_rows


def characterise_parquet(
    path: str | os.PathLike[str],
    *,
    cores: int,
    tau_s: float = DEFAULT_TAU_S,
    tz: str | None = None,
    exclude_monitoring: bool = True,
    batch_rows: int = 65_536,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    spill_dir: str | os.PathLike[str] | None = None,
    **options: Any,
) -> WorkloadStats:
    """Characterise the trace of a ``jobs.parquet`` file without reading the jobs whole.

    Every figure equals the in-memory path's (``build_trace`` on the whole table, then
    :func:`gridtrace.stats.characterise`; ``options`` are passed on to it). A file whose rows
    would take more than ``memory_budget`` bytes in arrays (about 50 bytes a row at the peak)
    is characterised out of core (:mod:`gridtrace.stats._outofcore`): its jobs are sorted on
    disk in ``spill_dir`` and every figure is computed in passes over them, a chunk at a time,
    in memory bounded by the budget whatever the jobs. A smaller file is read as below.

    The file is read ``batch_rows`` rows at a time and only what the figures need is kept of
    each job that ran, as numpy arrays: its submit time, wait and runtime (float64), cores and
    VO and user codes (int16 when they fit, else int32; the labels in running dictionaries),
    30 to 36 bytes a job. The file is read twice: the submit times and waits first, sorted into
    the trace's order (jobs with equal submit times by their keys, read again from the file for
    them only), then the other values, each put at its job's place. They are characterised by
    :func:`gridtrace.stats._characterise.characterise_arrays`, the code ``characterise`` runs,
    which releases each array once its figures are done. See the module docstring for the
    memory measured.

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
    memory_budget : int, default 256 MiB
        Above this many bytes of arrays (rows × 50), the out-of-core path is taken; it also
        sizes that path's chunks (budget / 1024 rows, at least 4,096) and sorted runs
        (budget / 256 rows).
    spill_dir : path-like, optional
        Where the out-of-core path makes its temporary folder (removed at the end); default
        the system's temporary folder.
    **options
        Keyword arguments of :func:`gridtrace.stats.characterise` (``window``, ``bin_s``, ...).

    Returns
    -------
    WorkloadStats

    Raises
    ------
    ConfigError
        If ``tau_s``, ``cores`` or ``batch_rows`` is not positive, or no job ran.
    """
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        msg = f"characterise_parquet() got unexpected keyword arguments {unknown}"
        raise TypeError(msg)
    source, _, _ = _open(path, cores=cores, tau_s=tau_s, batch_rows=batch_rows)
    rows = int(source.metadata.num_rows)
    del source
    if rows * _BYTES_PER_JOB > memory_budget:
        from gridtrace.stats._outofcore import characterise_out_of_core

        chunk_rows, run_rows = _out_of_core_sizes(memory_budget)
        logger.info(
            "%s: %d rows take about %d MB in arrays, above the memory budget of %d MB: "
            "characterised out of core (chunks of %d rows, sorted runs of %d)",
            path,
            rows,
            rows * _BYTES_PER_JOB // 2**20,
            memory_budget // 2**20,
            chunk_rows,
            run_rows,
        )
        defaults = _CHARACTERISE_DEFAULTS
        return characterise_out_of_core(
            path,
            cores=cores,
            tau_s=tau_s,
            tz=tz,
            exclude_monitoring=exclude_monitoring,
            batch_rows=batch_rows,
            chunk_rows=chunk_rows,
            run_rows=run_rows,
            spill_dir=spill_dir,
            window=options.get("window"),
            cores_option=options.get("cores"),
            tau_option=options.get("tau_s"),
            tz_option=options.get("tz"),
            bin_s=options.get("bin_s", defaults["bin_s"]),
            idc_points=options.get("idc_points", defaults["idc_points"]),
            acf_lags=options.get("acf_lags", defaults["acf_lags"]),
            flurries=options.get("flurries"),
        )
    owned = [  # handed over: characterise_arrays releases each array once it is done with it
        _trace_arrays_of_file(
            path,
            cores=cores,
            tau_s=tau_s,
            tz=tz,
            exclude_monitoring=exclude_monitoring,
            batch_rows=batch_rows,
        )
    ]
    return characterise_arrays(owned, **options)
