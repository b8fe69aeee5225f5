"""Out-of-core job assembly: records spilled to disk by job, partitions assembled independently.

A format that spreads a job over many records (TORQUE/PBS: Q, S and E records in different daily
files) cannot build ``jobs`` from one file at a time, and building it from all records at once
needs them all in memory (about 3 GB per million TORQUE lines). :func:`spill_parse` bounds that
by the largest file and the largest partition instead:

1. **Spill** (one task per file, on process workers): the file is tokenised, the format's
   :attr:`SpillFormat.prepare` adds what is local to the file (for TORQUE the placement of its
   stamps, the offset carried along its lines) and its facts (counts, median stamp), and
   :attr:`SpillFormat.keys` hashes each record's job identity; the records are written to one
   Arrow IPC file (LZ4) per input file, one record batch per partition (``hash % partitions``).
   Whatever groups records into one job must give them one hash: every record of a job, and
   every copy of a line, lands in one partition. A big plain Slurm or SGE file is spilled by
   byte ranges (a task each); a format with :attr:`SpillFormat.stream` (LSF, whose records may
   span lines) is spilled as the streaming core tokenises it, by batches of about 64 MiB of
   records (one record batch per partition each).
2. **Global facts** (this process, from the small per-file facts): the reading order of the
   files (TORQUE: time order of their records, as :func:`~gridtrace.logs._torque.in_time_order`),
   each record's position in the whole log, and what only the whole log gives
   (:attr:`SpillFormat.context`: for TORQUE the dominant offset).
3. **Assemble** (one task per partition, on process workers): the partition's batch of every
   spill file, sorted by position in the whole log, is assembled by the format's own assembly
   code; its records and jobs are written to an IPC file by *window* of positions (job rows by
   the position where their job first appears, which is the order of the in-memory ``jobs``).
   A window holds at most 131,072 records and about 64 MiB of them (its rows sized by the
   spilled file whose records are the widest).
4. **Merge** (one task per window of each table, on process workers): the partitions' batches
   of the window are concatenated, sorted by position and written as a small Parquet file.
5. **Stitch** (a thread of this process, while the windows are merged): each table's window
   files are joined into ``records.parquet`` and ``jobs.parquet``, in order as they come, by
   copying their row groups' bytes and writing one footer (:mod:`gridtrace.logs._parquet_stitch`:
   nothing is decoded again); quarantine rows are written per file in reading order. Each
   output is written to a temporary file in the output folder and renamed into place;
   ``parse-summary.json`` comes last.

With a local pool (``workers`` above 1), this process is one of the workers: ``workers - 1``
processes are started (spawned: they import the format while this process starts on the first
tasks; :func:`~gridtrace.logs.parse_logs_to` starts them before it lists the files), and every
process takes the next task of the step as it finishes one, the largest first (spill tasks by
their input bytes, assembly tasks by their partition's records). Each step's wall time and its
tasks' CPU time are logged (debug).

The tables are those of :func:`~gridtrace.logs.parse_logs` (same rows, values and order), and
the summary holds the same keys and counts: counts per partition are summed, the placement facts
come from the first pass. Memory is bounded by the largest input file, byte range or batch
(spill), the largest partition (assembly; a format's :attr:`SpillFormat.record_bytes` sizes the
default partitions in bytes of records) and one window (merge, in each worker), not by the
input. The spill folder
(by default a hidden folder in the output folder) is removed at the end; a hard kill may leave
it behind, never a half-written output.

A format plugs in by registering a :class:`SpillFormat` (see :func:`register_spill_format`);
TORQUE/PBS is built in; Slurm (steps, arrays, het jobs), SGE and LSF are in
:mod:`gridtrace.logs._spill_formats`, which says how each keeps its whole-log facts exact.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import math
import os
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from gridtrace._atomic import atomic_path
from gridtrace._log import library_logger
from gridtrace.errors import ConfigError
from gridtrace.logs._base import ErrorPolicy, FileParse, apply_error_policy
from gridtrace.logs._flags import flag_counts
from gridtrace.logs._io import log_text_bytes
from gridtrace.logs._ranges import (
    DEFAULT_SPLIT_BYTES,
    ByteRange,
    RangeCounts,
    kept_ranges,
    plan_ranges,
    range_seed,
    tokenize_range,
)
from gridtrace.schema import QUARANTINE, RECORDS

if TYPE_CHECKING:
    from concurrent.futures import Executor, Future

    from gridtrace.logs._stream import LineFormat

__all__ = [
    "PartitionAssembly",
    "SpillFormat",
    "SpilledParse",
    "default_partitions",
    "register_spill_format",
    "spill_format",
    "spill_parse",
]

logger = library_logger(__name__)

I64 = npt.NDArray[np.int64]

POSITION = "_pos"
"""Column of spilled and assembled records: the record's row in the whole log (reading order)."""
JOB_POSITION = "_first"
"""Column of assembled jobs: the position of the first record of the job's id."""
ROW = "_row"
"""Column of spilled records: the record's row in its file."""

WINDOW_ROWS = 1 << 17
"""Records per merge window at most (one row group of ``records.parquet`` at most)."""
WINDOW_BYTES = 64 << 20
"""Bytes of records (in memory) per merge window at most (see :func:`spill_parse`)."""
BATCH_BYTES = 64 << 20
"""Bytes of records (in memory) per batch of a streamed spill (:attr:`SpillFormat.stream`)."""
PARTITION_INPUT_BYTES = 32 << 20
"""Uncompressed input bytes per partition that :func:`default_partitions` aims at."""
PARTITION_RECORD_BYTES = 64 << 20
"""Bytes of records (in memory) per partition that :func:`default_partitions` aims at for a
format that says how many its log text makes (:attr:`SpillFormat.record_bytes`)."""
MAX_PARTITIONS = 4096
RANGE_SPILL_FORMATS = ("slurm", "sge")
"""Formats whose big plain files are spilled by byte range: their ``prepare`` is line-local.

TORQUE's is not: it carries the file's clock offset along its lines and orders the files by
their median stamp, so a TORQUE file is spilled whole.
"""


@dataclass(frozen=True)
class PartitionAssembly:
    """What a format's assembly gives for one partition.

    Attributes
    ----------
    records : pyarrow.Table
        The partition's records as the in-memory assembly returns them, in the order given.
    jobs : pyarrow.Table
        Its jobs, in the in-memory order.
    job_first_rows : numpy.ndarray
        For each job row, the row of ``records`` where its job first appears (non-decreasing).
    info : dict
        The format's facts for these jobs; counts are summed over partitions.
    """

    records: pa.Table
    jobs: pa.Table
    job_first_rows: I64
    info: dict[str, Any]


@dataclass(frozen=True)
class SpillFormat:
    """How a format's records are spilled and assembled by partition.

    Every callable must be a module-level function (it runs in worker processes).

    Attributes
    ----------
    name : str
        The format's registered name.
    prepare : callable
        ``prepare(part, tz) -> (columns, facts)``: per-record columns (numpy arrays, spilled with
        the records) and JSON-able facts of one tokenised file. A ``"median_stamp"`` fact (float
        or None) orders the files by time, as the in-memory reader does.
    keys : callable
        ``keys(records) -> uint64 array``: records assembled together must share the value.
    context : callable
        ``context(facts, tz) -> (context, info)``: from every file's facts, in reading order,
        what each partition's assembly needs, and the facts the summary takes from the first pass.
    assemble : callable
        ``assemble(records, columns, context, tz) -> PartitionAssembly``.
    merge_info : callable
        ``merge_info(infos, info, files) -> info``: the summary's facts from the partitions'
        infos, the first pass's ``info`` and every file's facts.
    stream : callable, optional
        ``stream(path) -> LineFormat``: the format's spec for the streaming core
        (:mod:`gridtrace.logs._stream`). With it, a whole file is spilled as it is tokenised,
        one batch of about ``batch_bytes`` of records at a time (see :func:`spill_parse`), so
        a spill task holds a batch, not the file's records. Only for a format whose ``prepare``
        reads nothing but the file's quarantine and adds no column.
    record_bytes : float, optional
        Bytes of records in memory per byte of log text, about (measured on the format's logs):
        the default partitions then hold about 64 MiB of records each, whatever the format
        (:func:`default_partitions`). Without it a partition takes 32 MiB of log text.
    """

    name: str
    prepare: Callable[[FileParse, str | None], tuple[dict[str, npt.NDArray[Any]], dict[str, Any]]]
    keys: Callable[[pa.Table], npt.NDArray[np.uint64]]
    context: Callable[[list[dict[str, Any]], str | None], tuple[dict[str, Any], dict[str, Any]]]
    assemble: Callable[
        [pa.Table, dict[str, npt.NDArray[Any]], dict[str, Any], str | None], PartitionAssembly
    ]
    merge_info: Callable[
        [list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]], dict[str, Any]
    ]
    stream: Callable[[str], LineFormat[Any]] | None = None
    record_bytes: float | None = None


_SPILL_FORMATS: dict[str, tuple[str, str] | SpillFormat] = {
    "torque": ("gridtrace.logs._torque", "TORQUE_SPILL"),
    "slurm": ("gridtrace.logs._spill_formats", "SLURM_SPILL"),
    "sge": ("gridtrace.logs._spill_formats", "SGE_SPILL"),
    "lsf": ("gridtrace.logs._spill_formats", "LSF_SPILL"),
}


def register_spill_format(spill: SpillFormat) -> None:
    """Let :func:`spill_parse` read the format named ``spill.name``.

    A format registered at run time reaches worker processes only when they import the module
    that registers it; prefer putting the :class:`SpillFormat` in a module of the package.
    """
    _SPILL_FORMATS[spill.name] = spill


def spill_format(name: str) -> SpillFormat:
    """Return the :class:`SpillFormat` of a registered format name.

    Raises
    ------
    ConfigError
        If the format has no out-of-core assembly.
    """
    entry = _SPILL_FORMATS.get(name)
    if entry is None:
        known = ", ".join(sorted(_SPILL_FORMATS))
        msg = f"format {name!r} has no out-of-core assembly yet (formats that have: {known})"
        raise ConfigError(msg)
    if isinstance(entry, SpillFormat):
        return entry
    found: SpillFormat = getattr(importlib.import_module(entry[0]), entry[1])
    return found


def default_partitions(
    files: Sequence[str | os.PathLike[str]], record_bytes: float | None = None
) -> int:
    """Return a partition count that keeps each partition near 32 MiB of log text.

    With ``record_bytes`` (bytes of records per byte of text, :attr:`SpillFormat.record_bytes`),
    near 64 MiB of records instead: LSF's records take about 4 bytes a byte of text, so its
    partitions take about 15 MiB of text. Compressed files (by suffix) count eight times their
    size.
    """
    per_partition = (
        PARTITION_INPUT_BYTES if record_bytes is None else PARTITION_RECORD_BYTES / record_bytes
    )
    total = sum(log_text_bytes(path) for path in files)
    return max(1, min(MAX_PARTITIONS, math.ceil(total / per_partition)))


# --------------------------------------------------------------------------------------------
# the tasks (module level: they run in worker processes)


@dataclass(frozen=True)
class _Spilled:
    """One file after the spill step: its quarantine and facts; its records are on disk."""

    src_file: str
    records: int
    lines_read: int
    quarantine: pa.Table
    facts: dict[str, Any]
    nbytes: int = 0  # bytes of its spilled records in memory (Arrow buffers)
    partition_rows: tuple[int, ...] = ()  # its records in each partition


def _entry_bytes(path: str, piece: tuple[ByteRange, Any] | None) -> float:
    """Return the log text a spill task reads, about (a compressed file counts 8 times)."""
    if piece is not None:
        return float(piece[0].end - piece[0].start)
    return log_text_bytes(path)


def _label_counts(labels: I64, partitions: int) -> tuple[int, ...]:
    return tuple(int(c) for c in np.bincount(labels, minlength=partitions))


def _one_batch(table: pa.Table) -> pa.RecordBatch:
    batches = table.combine_chunks().to_batches()
    if len(batches) == 1:
        return batches[0]
    return pa.RecordBatch.from_arrays(
        [
            pa.concat_arrays([b.column(i) for b in batches]) if batches else pa.array([], f.type)
            for i, f in enumerate(table.schema)
        ],
        schema=table.schema,
    )


def _write_batches(path: Path, schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> None:
    # LZ4: spill files are written once and read once; uncompressed, a log of 17 M jobs would
    # need ~40 GB of spill space (records twice: spilled, then assembled)
    options = pa.ipc.IpcWriteOptions(compression="lz4")
    with (
        pa.OSFile(str(path), "wb") as sink,
        pa.ipc.new_file(sink, schema, options=options) as writer,
    ):
        for batch in batches:
            writer.write_batch(batch)


def _split(table: pa.Table, labels: I64, count: int) -> Iterator[pa.RecordBatch]:
    """One batch per label 0..count-1 (empty where none), rows in their order in ``table``.

    A generator: each partition's rows are gathered when the writer asks for them, chunk by
    chunk of ``table`` (a ``take`` on a chunked table first joins its chunks: a copy of the whole
    file's records), so the spill of a big file holds its records and one partition's copy.
    """
    batches = table.to_batches()
    starts = np.cumsum([0] + [b.num_rows for b in batches])
    order = np.argsort(labels, kind="stable")  # within a label, rows stay in ascending order
    bounds = np.searchsorted(labels[order], np.arange(count + 1))
    for i in range(count):
        rows = order[int(bounds[i]) : int(bounds[i + 1])]
        cuts = np.searchsorted(rows, starts)
        pieces = [
            batch.take(pa.array(rows[cuts[c] : cuts[c + 1]] - starts[c]))
            for c, batch in enumerate(batches)
            if cuts[c + 1] > cuts[c]
        ]
        yield _one_batch(pa.Table.from_batches(pieces, schema=table.schema))


def _spill_file(
    name: str,
    path: str,
    site: str,
    tz: str | None,
    index: int,
    folder: str,
    partitions: int,
    piece: tuple[ByteRange, Any] | None = None,
    batch_bytes: int = BATCH_BYTES,
) -> _Spilled:
    from gridtrace.logs._registry import _tokenize

    spill = spill_format(name)
    if piece is None and spill.stream is not None:
        line_format = spill.stream(path)
        return _spill_streamed(
            spill, line_format, path, site, tz, index, folder, partitions, batch_bytes
        )
    if piece is None:
        part = _tokenize(name, path, site)
    else:  # one byte range of a big file, with what the whole file decides
        rng, seed = piece
        part = tokenize_range(name, rng, site, seed)
    columns, facts = spill.prepare(part, tz)
    records = part.records
    n = records.num_rows
    records = records.append_column(ROW, pa.array(np.arange(n, dtype=np.int64)))
    for column, values in columns.items():
        records = records.append_column(column, pa.array(values))
    labels = (spill.keys(part.records) % np.uint64(partitions)).astype(np.int64)
    nbytes = records.nbytes
    _write_batches(_spill_path(folder, index), records.schema, _split(records, labels, partitions))
    counts = _label_counts(labels, partitions)
    return _Spilled(part.src_file, n, part.lines_read, part.quarantine, facts, nbytes, counts)


def _spill_streamed(
    spill: SpillFormat,
    line_format: LineFormat[Any],
    path: str,
    site: str,
    tz: str | None,
    index: int,
    folder: str,
    partitions: int,
    batch_bytes: int,
) -> _Spilled:
    """Spill a whole file as the streaming core tokenises it, one batch of records at a time.

    The core writes the file's guarded tables (:func:`~gridtrace.logs._stream.write_stream`:
    the read's findings as quarantine rows, as :func:`~gridtrace.logs._base.tokenize_guarded`
    adds them) to Parquet beside the spill file, one row group per chunk; the records are read
    back row group by row group and spilled by batches of about ``batch_bytes`` (each batch one
    record batch per partition in the spill file, so the file holds ``partitions`` times the
    batches, batch by batch). Memory is one chunk's tables, then one batch, not the file.
    """
    import pyarrow.parquet as pq

    from gridtrace.logs._stream import DEFAULT_CHUNK_BYTES, write_stream

    chunk_bytes = min(DEFAULT_CHUNK_BYTES, batch_bytes)  # a chunk's records: a batch at most
    spilled = _spill_path(folder, index)
    records_path = spilled.with_suffix(".records.parquet")
    quarantine_path = spilled.with_suffix(".quarantine.parquet")
    try:
        stats = write_stream(
            path, line_format, records_path, quarantine_path, site=site, chunk_bytes=chunk_bytes
        )
        quarantine = pq.read_table(quarantine_path).cast(QUARANTINE)
        src_file = str(path)
        facts_part = FileParse(src_file, RECORDS.empty_table(), quarantine, stats.lines_read)
        columns, facts = spill.prepare(facts_part, tz)
        if columns:
            msg = f"format {spill.name!r}: a streamed spill cannot take per-record columns"
            raise ConfigError(msg)
        schema = RECORDS.append(pa.field(ROW, pa.int64()))
        source = pq.ParquetFile(records_path)
        rows = nbytes = 0
        counts = np.zeros(partitions, np.int64)
        pending: list[pa.Table] = []
        pending_bytes = 0
        options = pa.ipc.IpcWriteOptions(compression="lz4")

        def flush(writer: pa.ipc.RecordBatchFileWriter) -> None:
            nonlocal rows, nbytes, pending, pending_bytes
            group = pa.concat_tables([RECORDS.empty_table(), *pending])
            pending, pending_bytes = [], 0
            n = group.num_rows
            labels = (spill.keys(group) % np.uint64(partitions)).astype(np.int64)
            counts[:] += np.bincount(labels, minlength=partitions)
            group = group.append_column(ROW, pa.array(np.arange(rows, rows + n, dtype=np.int64)))
            nbytes += group.nbytes
            rows += n
            for batch in _split(group, labels, partitions):
                writer.write_batch(batch)

        with (
            pa.OSFile(str(spilled), "wb") as sink,
            pa.ipc.new_file(sink, schema, options=options) as writer,
        ):
            for group_index in range(source.num_row_groups):
                table = source.read_row_group(group_index).cast(RECORDS)
                pending.append(table)
                pending_bytes += table.nbytes
                if pending_bytes >= batch_bytes:
                    flush(writer)
            if pending or not rows:  # at least one batch per partition
                flush(writer)
        del source
    finally:
        records_path.unlink(missing_ok=True)
        quarantine_path.unlink(missing_ok=True)
    partition_rows = tuple(int(c) for c in counts)
    return _Spilled(src_file, rows, stats.lines_read, quarantine, facts, nbytes, partition_rows)


def _unspill(folder: str, index: int, partitions: int, one: _Spilled) -> _Spilled:
    """Empty a range's spill file: the read of its file stopped in an earlier range."""
    with pa.OSFile(str(_spill_path(folder, index)), "rb") as source:
        schema = pa.ipc.open_file(source).schema
    _write_batches(
        _spill_path(folder, index), schema, [_one_batch(schema.empty_table())] * partitions
    )
    return _Spilled(one.src_file, 0, 0, one.quarantine.slice(0, 0), one.facts, 0, (0,) * partitions)


def _spill_entries(
    name: str, files: Sequence[str], site: str, split_bytes: int | None, pool: _Workers | None
) -> tuple[list[tuple[str, tuple[ByteRange, Any] | None]], list[int], RangeCounts]:
    """Return the spill tasks: a file each, a big plain file one per byte range, in order.

    Returns the tasks (file, range and its seed or None), each task's file (its position in
    ``files``), and the split counts. Only formats whose :attr:`SpillFormat.prepare` adds what is
    local to a line are split (:data:`RANGE_SPILL_FORMATS`).
    """
    counts = RangeCounts()
    entries: list[tuple[str, tuple[ByteRange, Any] | None]] = []
    owners: list[int] = []
    for i, path in enumerate(files):
        if split_bytes is None:
            entries.append((path, None))
            owners.append(i)
            continue
        if name in RANGE_SPILL_FORMATS:
            ranges, why_not = plan_ranges(name, path, split_bytes)
        else:
            ranges = []
            why_not = "format" if Path(path).stat().st_size > split_bytes else "small"
        counts.add(ranges, why_not)
        if why_not is not None:
            entries.append((path, None))
            owners.append(i)
            continue
        seed = range_seed(name, ranges, site, lambda f, calls: _run(pool, f, calls))
        for rng in ranges:
            entries.append((path, (rng, seed)))
            owners.append(i)
    return entries, owners, counts


def _per_file(
    spilled: list[_Spilled], owners: list[int], folder: str, partitions: int
) -> list[tuple[FileParse, int]]:
    """Each file's quarantine, lines and record count over its tasks, in the order given.

    The ranges after one the garbage test stopped are emptied (the whole read never gets
    there): their spill files and their entries in ``spilled``.
    """
    tasks: dict[int, list[int]] = {}
    for k, owner in enumerate(owners):
        tasks.setdefault(owner, []).append(k)
    views: list[tuple[FileParse, int]] = []
    for _, mine in sorted(tasks.items()):
        parts = [
            FileParse(spilled[k].src_file, RECORDS.empty_table(), spilled[k].quarantine, 0)
            for k in mine
        ]
        for k in mine[kept_ranges(parts) :]:
            spilled[k] = _unspill(folder, k, partitions, spilled[k])
        quarantine = pa.concat_tables(
            [QUARANTINE.empty_table(), *(spilled[k].quarantine.cast(QUARANTINE) for k in mine)]
        )
        lines = sum(spilled[k].lines_read for k in mine)
        view = FileParse(spilled[mine[0]].src_file, RECORDS.empty_table(), quarantine, lines)
        views.append((view, sum(spilled[k].records for k in mine)))
    return views


def _read_batch(path: Path, index: int) -> pa.RecordBatch:
    """Read one record batch of an IPC file into memory (the file is closed after)."""
    with pa.OSFile(str(path), "rb") as source:
        return pa.ipc.open_file(source).get_batch(index)


def _read_partition(path: Path, partition: int, partitions: int) -> pa.Table:
    """Read one partition of a spill file: its batch in each group of ``partitions`` batches.

    A file spilled whole is one group; a streamed one (:func:`_spill_streamed`) a group a batch.
    """
    with pa.OSFile(str(path), "rb") as source:
        reader = pa.ipc.open_file(source)
        groups = reader.num_record_batches // partitions
        batches = [reader.get_batch(g * partitions + partition) for g in range(groups)]
        return pa.Table.from_batches(batches, schema=reader.schema)


def _spill_path(folder: str, index: int) -> Path:
    return Path(folder) / f"file-{index:06d}.arrow"


def _out_path(folder: str, partition: int, table: str) -> Path:
    return Path(folder) / f"part-{partition:05d}.{table}.arrow"


def _value_counts(column: pa.ChunkedArray[Any]) -> dict[str, int]:
    counted: list[dict[str, Any]] = cast(Any, pc.value_counts(column.combine_chunks())).to_pylist()
    return {str(c["values"]): int(c["counts"]) for c in counted}


def _assemble_partition(
    name: str,
    partition: int,
    partitions: int,
    folder: str,
    starts: list[int],
    context: dict[str, Any],
    tz: str | None,
    window_rows: int,
    windows: int,
    jobs_transform: Callable[[pa.Table], pa.Table] | None,
) -> dict[str, Any]:
    spill = spill_format(name)
    pieces = []
    for index, start in enumerate(starts):
        piece = _read_partition(_spill_path(folder, index), partition, partitions)
        if piece.num_rows:
            rows = piece.column(ROW).to_numpy()
            where = pa.array(rows + np.int64(start))
            pieces.append(piece.append_column(POSITION, where))
    if pieces:
        table = pa.concat_tables(pieces)
        del pieces
        ordered = np.diff(table.column(POSITION).to_numpy()) >= 0
        # each piece is in its file's order: when the files are read in the order given (every
        # format but TORQUE, whose files move by time), the pieces are already in the order of
        # the whole log, and one copy into one chunk replaces sorting's (the assembly's column
        # access then combines nothing)
        table = table.combine_chunks() if ordered.all() else table.sort_by(POSITION)
    else:  # the schema of any spill file
        schema = _read_batch(_spill_path(folder, 0), partition).schema
        table = schema.append(pa.field(POSITION, pa.int64())).empty_table()
    position = table.column(POSITION).to_numpy()
    extra = [c for c in table.column_names if c.startswith("_")]
    columns = {c: table.column(c).to_numpy() for c in extra if c not in (ROW, POSITION)}
    result = spill.assemble(table.drop_columns(extra), columns, context, tz)
    del table, columns  # what the assembly kept of the input lives on in its tables
    records = result.records.append_column(POSITION, pa.array(position))
    first = position[result.job_first_rows] if len(position) else np.empty(0, np.int64)
    jobs = result.jobs if jobs_transform is None else jobs_transform(result.jobs)
    jobs = jobs.append_column(JOB_POSITION, pa.array(first, pa.int64()))
    info = result.info
    del result

    def write(table: pa.Table, labels: I64, path: Path) -> None:
        # one batch per window, made and written one at a time: labels are non-decreasing
        # (records keep their order, jobs come by their first record), so a window is a slice
        # and the table is not copied whole (a format whose order differs is sorted first)
        if len(labels) and (np.diff(labels) < 0).any():
            order = np.argsort(labels, kind="stable")
            table, labels = table.take(order), labels[order]
        bounds = np.searchsorted(labels, np.arange(windows + 1))
        options = pa.ipc.IpcWriteOptions(compression="lz4")
        with (
            pa.OSFile(str(path), "wb") as sink,
            pa.ipc.new_file(sink, table.schema, options=options) as writer,
        ):
            for i in range(windows):
                size = int(bounds[i + 1] - bounds[i])
                writer.write_batch(_one_batch(table.slice(int(bounds[i]), size)))

    counts = {
        "info": info,
        "records_by_type": _value_counts(records.column("record_type")),
        "record_flags": flag_counts(records),
        "job_flags": flag_counts(jobs),
        "jobs_by_state": _value_counts(jobs.column("state")),
        "job_rows": jobs.num_rows,
    }
    write(records, position // window_rows, _out_path(folder, partition, "records"))
    del records
    write(jobs, first // window_rows, _out_path(folder, partition, "jobs"))
    return counts


# --------------------------------------------------------------------------------------------
# the driver


@dataclass(frozen=True)
class SpilledParse:
    """What :func:`spill_parse` wrote, and its summary.

    Attributes
    ----------
    summary : dict
        The keys and counts of :meth:`ParseResult.summary` for the same input.
    record_flags, job_flags : dict
        Each flag's count per ``source_format`` (what ``gridtrace parse`` prints).
    failed_parts : list of FileParse
        Files none of whose lines became a record (their quarantine; no records).
    partitions : int
        The partitions the records were spilled to.
    """

    summary: dict[str, Any]
    record_flags: dict[str, dict[str, int]] = field(default_factory=dict)
    job_flags: dict[str, dict[str, int]] = field(default_factory=dict)
    failed_parts: list[FileParse] = field(default_factory=list)
    partitions: int = 1


class _Workers:
    """Process workers for the tasks of :func:`spill_parse`, and whether this process helps.

    With a local pool of ``workers - 1`` processes, this process is the last worker: it takes
    tasks from the same list (so a pool worker still importing at start-up does not hold back
    the others, and no process sits idle waiting), one task at a time in each process.
    """

    def __init__(self, executor: Executor, helpers: int, *, share: bool, name: str | None) -> None:
        self.executor = executor
        self.share = share
        # each pool worker imports the format first: it takes a task only once it is ready
        self.ready = [executor.submit(_ready, name) for _ in range(helpers)] if share else []


def _ready(name: str | None) -> None:
    """Import what the tasks of format ``name`` need (a pool worker's start-up).

    Without a name (a pool started before the files are read), the format's module is imported
    by the first task.
    """
    importlib.import_module("gridtrace.logs._registry")
    importlib.import_module("pyarrow.parquet")
    if name is not None:
        spill_format(name)


_STARTED: ContextVar[tuple[int, _Workers] | None] = ContextVar("_STARTED", default=None)


@contextmanager
def started_workers(workers: int, scheduler: str | None = None) -> Iterator[None]:
    """Start the local pool of ``workers`` processes now, for :func:`spill_parse` to take.

    ``parse_logs_to`` starts its pool before it lists the files and imports the format, so
    the workers' start-up (a fresh interpreter and its imports, about a second) overlaps that
    of this process instead of following it. A :func:`spill_parse` called inside with the same
    ``workers`` (and no ``scheduler``) uses the pool; it is shut down at the end.
    """
    if workers <= 1 or scheduler is not None:
        yield
        return
    with _executor(workers, None, None) as pool:
        token = _STARTED.set((workers, cast(_Workers, pool)))
        try:
            yield
        finally:
            _STARTED.reset(token)


@contextmanager
def _executor(
    workers: int, scheduler: str | None = None, name: str | None = "torque"
) -> Iterator[_Workers | None]:
    if scheduler is not None:
        try:
            from distributed import Client
        except ImportError:
            msg = "--scheduler needs dask.distributed: pip install 'gridtrace[dask]'"
            raise ConfigError(msg) from None
        client = Client(scheduler)
        try:
            yield _Workers(client.get_executor(pure=False), 0, share=False, name=name)
        finally:
            client.close()
        return
    if workers <= 1:
        yield None
        return
    started = _STARTED.get()
    if started is not None and started[0] == workers:  # started early (started_workers)
        yield started[1]
        return
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    # spawn: a forked child of a process whose Arrow threads hold locks can hang
    with ProcessPoolExecutor(max_workers=workers - 1, mp_context=get_context("spawn")) as pool:
        yield _Workers(pool, workers - 1, share=True, name=name)


def _timed(function: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """Return ``function(*args)`` and the CPU time its process spent on it."""
    started = time.process_time()
    result = function(*args)
    return result, time.process_time() - started


def _run(
    pool: _Workers | None,
    function: Callable[..., Any],
    calls: list[tuple[Any, ...]],
    costs: Sequence[float] | None = None,
    on_done: Callable[[int, Any], None] | None = None,
) -> list[Any]:
    """Return ``function(*args)`` for each of ``calls``, in order, run on ``pool``'s workers.

    With ``costs`` (an estimate per call), the calls start largest first, so that the step
    does not end on one big task while the other processes wait (the results keep the calls'
    order). ``on_done(index, result)`` is called as each call ends (in any order, from any
    thread of this process). The first failure (in the order of ``calls``) is raised once the
    tasks started are done; after a failure no task is started. The step's wall time and its
    tasks' CPU time are logged (debug).
    """
    started = time.perf_counter()
    start_order = list(range(len(calls)))
    if costs is not None and pool is not None:
        start_order.sort(key=lambda i: -costs[i])  # stable: ties keep the calls' order
    timed = _run_timed(pool, function, calls, start_order, on_done or _nothing)
    here = [cpu for _, cpu, local in timed if local]
    logger.debug(
        "step %s: %d tasks, %.3f s wall, %.3f CPU s in tasks (%d, %.3f CPU s in this process)",
        function.__name__.lstrip("_"),
        len(calls),
        time.perf_counter() - started,
        sum(cpu for _, cpu, _ in timed),
        len(here),
        sum(here),
    )
    if logger.isEnabledFor(logging.DEBUG - 1):
        logger.log(
            logging.DEBUG - 1,
            "step %s: CPU s of each task: %s",
            function.__name__.lstrip("_"),
            ", ".join(f"{cpu:.3f}{'' if local else '*'}" for _, cpu, local in timed),
        )
    return [result for result, _, _ in timed]


def _run_timed(
    pool: _Workers | None,
    function: Callable[..., Any],
    calls: list[tuple[Any, ...]],
    start_order: list[int],
    on_done: Callable[[int, Any], None],
) -> list[tuple[Any, float, bool]]:
    """Each call's result, CPU time and whether it ran in this process, in the calls' order.

    The calls start in ``start_order``; ``on_done(index, result)`` is called as each ends.
    """
    if pool is None:
        done: list[tuple[Any, float, bool]] = []
        for i, args in enumerate(calls):
            done.append((*_timed(function, *args), True))
            on_done(i, done[-1][0])
        return done
    if not pool.share:
        futures = {i: pool.executor.submit(_timed, function, *calls[i]) for i in start_order}
        done = []
        for i in range(len(calls)):
            done.append((*futures[i].result(), False))
            on_done(i, done[-1][0])
        return done
    lock = threading.Lock()
    pending = iter(start_order)
    stop = threading.Event()  # no task left, or one failed: start no other
    results: dict[int, tuple[Any, float, bool]] = {}
    errors: dict[int, BaseException] = {}

    def take() -> int | None:
        with lock:
            index = None if stop.is_set() else next(pending, None)
            if index is None:
                stop.set()
            return index

    def run(index: int, call: Callable[[], tuple[Any, float]], here: bool) -> None:
        try:
            results[index] = (*call(), here)
            if index >= 0:
                on_done(index, results[index][0])
        except BaseException as exc:  # raised below, in the order of the calls
            errors[index] = exc
            stop.set()

    def helper(ready: Future[None]) -> None:
        # a worker still starting takes no task: this process may do them all meanwhile
        while not ready.done():
            if stop.wait(0.01):
                return
        if ready.exception() is not None:
            run(-1, cast(Any, ready.result), False)
            return
        while (index := take()) is not None:
            future = pool.executor.submit(_timed, function, *calls[index])
            run(index, future.result, False)

    threads = [threading.Thread(target=helper, args=(ready,), daemon=True) for ready in pool.ready]
    for thread in threads:
        thread.start()
    while (index := take()) is not None:
        run(index, partial(_timed, function, *calls[index]), True)
    for thread in threads:
        thread.join()
    if errors:
        raise errors[min(errors)]
    return [results[index] for index in range(len(calls))]


def _nothing(index: int, result: Any) -> None:
    del index, result


def _time_order(spilled: list[_Spilled]) -> tuple[list[int], int]:
    """Return the reading order of the files: by median stamp where the format has one."""
    if not any("median_stamp" in s.facts for s in spilled):
        return list(range(len(spilled))), 0
    from gridtrace.logs._torque import time_order

    return time_order([s.facts.get("median_stamp") for s in spilled], [s.src_file for s in spilled])


def spill_parse(
    name: str,
    files: Sequence[str],
    out_dir: str | os.PathLike[str],
    *,
    site: str,
    tz: str | None = None,
    errors: ErrorPolicy = "warn",
    workers: int = 1,
    partitions: int | None = None,
    spill_dir: str | os.PathLike[str] | None = None,
    window_rows: int = WINDOW_ROWS,
    window_bytes: int | None = WINDOW_BYTES,
    batch_bytes: int = BATCH_BYTES,
    jobs_transform: Callable[[pa.Table], pa.Table] | None = None,
    remove_first: Sequence[str] = (),
    scheduler: str | None = None,
    split_bytes: int | None = DEFAULT_SPLIT_BYTES,
) -> SpilledParse:
    """Parse the files of one format out of core into ``records``, ``jobs`` and ``quarantine``.

    Writes ``records.parquet``, ``jobs.parquet`` and ``quarantine.parquet`` in ``out_dir`` (by
    row groups, each through a temporary file renamed into place); the caller writes the
    summary. See the module's docstring for the steps and what bounds memory.

    Parameters
    ----------
    name : str
        A format with a :class:`SpillFormat` (``torque``, ``slurm``, ``sge``, ``lsf``).
    files : sequence of str
        The files, in the order given to the reader.
    out_dir : path
        The output folder (created if missing).
    site : str
        Site name for every row.
    tz : str, optional
        The site's IANA zone.
    errors : {"raise", "warn", "skip"}, default "warn"
        What to do with unreadable lines (they are quarantined in every case).
    workers : int, default 1
        Processes for the spill, assembly and merge tasks, this one included (``workers - 1``
        are started); 1 runs them all in this process.
    partitions : int, optional
        Partitions of the records; default :func:`default_partitions`.
    spill_dir : path, optional
        Folder for the spill files (a temporary folder is made in it and removed at the end);
        default the output folder.
    window_rows : int, default 131,072
        Records per merge window at most (a merge task holds one window of records or of jobs;
        each window is one row group of ``records.parquet``, or more above 1,048,576 rows).
    window_bytes : int or None, default 64 MiB
        Bytes of records (in memory) per merge window at most: the window's rows are this over
        the largest bytes per record of a spilled file (LSF's about 2.6 kB a record: ~25,000
        records a window; TORQUE's about 400 bytes: ``window_rows`` bounds them). None bounds
        the windows by ``window_rows`` alone.
    batch_bytes : int, default 64 MiB
        Bytes of records per batch of a file spilled as it is tokenised (a format with
        :attr:`SpillFormat.stream`: LSF), which bounds its spill task's memory.
    jobs_transform : callable, optional
        Applied to each partition's ``jobs`` (a VO mapping's ``apply``); picklable with
        ``workers`` above 1. The flags it sets are counted.
    remove_first : sequence of str
        Names of files in ``out_dir`` removed once the input is read, before the tables are
        written (the summary of an earlier run: it must not stand beside half-replaced tables).
    scheduler : str, optional
        Address of a ``dask.distributed`` scheduler: the spill, assembly and merge tasks run
        on its workers (``workers`` is then ignored). Every worker must see the input files and
        the spill folder at the same paths (one machine, or a shared file system).
    split_bytes : int or None, default 64 MiB
        A plain file larger than this, of a format in :data:`RANGE_SPILL_FORMATS`, is spilled
        by byte ranges of about this size (a task and a spill file each, in the file's place in
        the reading order; see :mod:`gridtrace.logs._ranges`), which bounds a spill task's memory
        by the range and spreads one file over the workers. The summary's ``byte_ranges`` counts
        the files split and not split (present when a file was split, or a file above the size
        was not). None never splits.

    Returns
    -------
    SpilledParse
        The summary and flag counts.

    Raises
    ------
    ConfigError
        If the format has no out-of-core assembly, or ``workers``/``partitions`` is below 1.
    LogParseError
        With ``errors="raise"``, at the first unreadable line.
    """
    if name not in _SPILL_FORMATS:
        spill_format(name)  # raises ConfigError
    if workers < 1:
        msg = f"workers must be at least 1, not {workers}"
        raise ConfigError(msg)
    if partitions is not None and partitions < 1:
        msg = f"partitions must be at least 1, not {partitions}"
        raise ConfigError(msg)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    base = Path(spill_dir) if spill_dir is not None else out
    base.mkdir(parents=True, exist_ok=True)
    folder = tempfile.mkdtemp(prefix=".spill-", dir=base)
    try:
        # the outputs' temporary files: renamed into place when it closes without an error,
        # removed after one
        with ExitStack() as outputs:
            # the pool's workers start (import) while this process imports the format
            with _executor(workers, scheduler, name) as pool:
                spill = spill_format(name)
                if partitions is None:
                    partitions = default_partitions(files, spill.record_bytes)
                entries, owners, split = _spill_entries(name, files, site, split_bytes, pool)
                calls = [
                    (name, f, site, tz, i, folder, partitions, piece, batch_bytes)
                    for i, (f, piece) in enumerate(entries)
                ]
                costs = [_entry_bytes(f, piece) for f, piece in entries]
                spilled: list[_Spilled] = _run(pool, _spill_file, calls, costs)
                per_file = _per_file(spilled, owners, folder, partitions)
                for view, _ in per_file:  # warn or raise, per file, in the order given
                    apply_error_policy(view, errors)
                order, moved = _time_order(spilled)
                starts_by_rank = np.cumsum([0] + [spilled[i].records for i in order])
                starts = [0] * len(spilled)
                for rank, i in enumerate(order):
                    starts[i] = int(starts_by_rank[rank])
                total = int(starts_by_rank[-1])
                rows_per_window = _window_rows(spilled, window_rows, window_bytes)
                windows = max(1, math.ceil(total / rows_per_window))
                facts = [spilled[i].facts for i in order]
                context, first_info = spill.context(facts, tz)
                assembled: list[dict[str, Any]] = _run(
                    pool,
                    _assemble_partition,
                    [
                        (
                            name,
                            k,
                            partitions,
                            folder,
                            starts,
                            context,
                            tz,
                            rows_per_window,
                            windows,
                            jobs_transform,
                        )
                        for k in range(partitions)
                    ],
                    [sum(s.partition_rows[k] for s in spilled) for k in range(partitions)],
                )
                for spilled_file in Path(folder).glob("file-*.arrow"):  # assembled: free the disk
                    spilled_file.unlink()
                # each table's windows are joined into its output as they are merged, in this
                # process (a thread): the records' while the jobs' windows are merged, and only the
                # last windows are left to copy when the merge ends
                with _Stitcher(outputs, out, windows) as stitcher:
                    _run(
                        pool,
                        _merge_window,
                        [(folder, t, w, partitions) for t in _TABLES for w in range(windows)],
                        on_done=stitcher.merged,
                    )
            for assembled_file in Path(folder).glob("part-*.arrow"):  # merged: free the disk
                assembled_file.unlink()
            for stale in remove_first:
                (out / stale).unlink(missing_ok=True)
            started, cpu = time.perf_counter(), time.process_time()
            quarantine = _write_quarantine(outputs, out, [spilled[i] for i in order])
        logger.debug(  # the quarantine, and every output flushed and renamed into place
            "step write_outputs: %.3f s wall, %.3f CPU s (the rest of the stitch: %.3f s)",
            time.perf_counter() - started,
            time.process_time() - cpu,
            stitcher.tail_s,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    info = spill.merge_info([a["info"] for a in assembled], first_info, facts)
    if "files_reordered" in info:  # formats that order their files by time (TORQUE)
        info["files_reordered"] = moved
    done = _summarise(spilled, assembled, quarantine, info)
    summary = {**done.summary, "files": len(files)}
    if split_bytes is not None and split.worth_saying:
        summary["byte_ranges"] = split.as_dict(split_bytes)
    failed = [view for view, records in per_file if view.lines_read and not records]
    return dataclasses.replace(done, summary=summary, failed_parts=failed, partitions=partitions)


_FEW_RECORDS = 4096


def _window_rows(spilled: list[_Spilled], window_rows: int, window_bytes: int | None) -> int:
    """Return the records per merge window: ``window_rows``, fewer past ``window_bytes``.

    Sized by the file whose records are the largest, so that no window holds much more than
    ``window_bytes`` of records wherever it falls. A file's bytes are spread over 4,096 records
    at least: a small file's fixed costs (a day's first records, a few lines) do not make every
    window small, and its records are too few to fill one.
    """
    if window_bytes is None:
        return window_rows
    widest = max((s.nbytes / max(s.records, _FEW_RECORDS) for s in spilled), default=0.0)
    if widest <= 0:
        return window_rows
    return max(1, min(window_rows, int(window_bytes // widest)))


def _merged_path(folder: str, table: str, window: int) -> Path:
    return Path(folder) / f"merged-{table}-{window:06d}.parquet"


def _merge_window(folder: str, table: str, window: int, partitions: int) -> str | None:
    """Write window ``window`` of ``table`` (every partition's rows, sorted) as a Parquet file.

    Returns the file's path, or None when the window is empty (window 0 is always written: it
    gives an empty output its schema).
    """
    import pyarrow.parquet as pq

    key = POSITION if table == "records" else JOB_POSITION
    parts = [_read_batch(_out_path(folder, k, table), window) for k in range(partitions)]
    merged = pa.Table.from_batches(parts)
    if not merged.num_rows and window:
        return None
    merged = merged.sort_by(key).drop_columns([key])
    path = _merged_path(folder, table, window)
    pq.write_table(merged, str(path))
    return str(path)


_TABLES = ("records", "jobs")
"""The tables merged by window, in the order of the merge tasks."""


class _Stitcher:
    """Join each table's merged windows into its output, in window order, as they come.

    A thread of this process takes each window as soon as it and every window before it of its
    table are merged (:meth:`merged`, called as each merge task ends), copies its row groups into
    the table's output (:class:`~gridtrace.logs._parquet_stitch.ParquetStitcher`) and removes
    it; a finished table's file is flushed to disk there too. The outputs are temporary files of
    ``outputs`` (renamed into place when it closes).
    """

    def __init__(self, outputs: ExitStack, out: Path, windows: int) -> None:
        self.windows = windows
        self.targets = {
            t: outputs.enter_context(atomic_path(out / f"{t}.parquet")) for t in _TABLES
        }
        self.tail_s = 0.0
        self._ready: dict[tuple[str, int], str | None] = {}
        self._changed = threading.Condition()
        self._stop = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, daemon=True)
        self._thread.start()

    def merged(self, index: int, path: str | None) -> None:
        """Take merge task ``index``'s window (None: the window is empty)."""
        with self._changed:
            self._ready[_TABLES[index // self.windows], index % self.windows] = path
            self._changed.notify()

    def _next(self, table: str, window: int) -> tuple[bool, str | None]:
        with self._changed:
            while (table, window) not in self._ready and not self._stop:
                self._changed.wait()
            if (table, window) not in self._ready:
                return False, None
            return True, self._ready.pop((table, window))

    def _work(self) -> None:
        from gridtrace.logs._parquet_stitch import ParquetStitcher

        try:
            for table, target in self.targets.items():
                with ParquetStitcher(target) as stitcher:
                    for window in range(self.windows):
                        found, path = self._next(table, window)
                        if not found:  # the merge failed: the outputs are dropped
                            return
                        if path is not None:
                            stitcher.add(path)
                            Path(path).unlink()  # the copy is made: free the disk space now
                    stitcher.close()
                with target.open("rb") as handle:  # now, not in the rename at the end
                    os.fsync(handle.fileno())
        except BaseException as exc:  # raised in the driver by __exit__
            self._error = exc

    def __enter__(self) -> _Stitcher:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        started = time.perf_counter()
        with self._changed:
            self._stop = True  # every window came (or the merge failed): stop once they are in
            self._changed.notify()
        self._thread.join()
        self.tail_s = time.perf_counter() - started
        if kind is None and self._error is not None:
            raise self._error


def _write_quarantine(outputs: ExitStack, out: Path, ordered: list[_Spilled]) -> pa.Table:
    """Write the quarantine rows of the files in reading order; return them."""
    import pyarrow.parquet as pq

    quarantine = pa.concat_tables(
        [QUARANTINE.empty_table(), *(s.quarantine.cast(QUARANTINE) for s in ordered)]
    )
    target = outputs.enter_context(atomic_path(out / "quarantine.parquet"))
    pq.write_table(quarantine, str(target))
    return quarantine


def _summarise(
    spilled: list[_Spilled],
    assembled: list[dict[str, Any]],
    quarantine: pa.Table,
    info: dict[str, Any],
) -> SpilledParse:
    from gridtrace.logs._base import _input_findings

    def total(key: str) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for part in assembled:
            counts.update(part[key])
        return dict(sorted(counts.items()))

    def by_format(key: str) -> dict[str, dict[str, int]]:
        counts: dict[str, Counter[str]] = {}
        for part in assembled:
            for fmt, flags in part[key].items():
                counts.setdefault(fmt, Counter()).update(flags)
        return {
            fmt: dict(sorted(c.items(), key=lambda item: (-item[1], item[0])))
            for fmt, c in sorted(counts.items())
        }

    record_flags, job_flags = by_format("record_flags"), by_format("job_flags")
    lines_read = sum(s.lines_read for s in spilled)
    parsed = sum(s.records for s in spilled)

    def flat(nested: dict[str, dict[str, int]]) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for flags in nested.values():
            counts.update(flags)
        return dict(sorted(counts.items()))

    summary: dict[str, Any] = {
        "files": len(spilled),
        "lines_read": lines_read,
        "lines_parsed": parsed,
        "lines_quarantined": quarantine.num_rows,
        "reconciled": lines_read == parsed + quarantine.num_rows,
        "records_by_type": total("records_by_type"),
        "record_flags": flat(record_flags),
        "jobs": sum(part["job_rows"] for part in assembled),
        "jobs_by_state": total("jobs_by_state"),
        "job_flags": flat(job_flags),
        "quarantine_reasons": _value_counts_sorted(quarantine.column("reason")),
        "tz_offset_s": info.get("tz_offset_s"),
        "input": _input_findings(quarantine),
        **info,
    }
    failed = [
        FileParse(s.src_file, RECORDS.empty_table(), s.quarantine, s.lines_read)
        for s in spilled
        if s.lines_read and not s.records
    ]
    return SpilledParse(summary, record_flags, job_flags, failed)


def _value_counts_sorted(column: pa.ChunkedArray[Any]) -> dict[str, int]:
    return dict(sorted(_value_counts(column).items())) if len(column) else {}
