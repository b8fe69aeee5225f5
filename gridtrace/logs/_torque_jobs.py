"""TORQUE / OpenPBS / PBS Pro: from ``records`` to ``jobs``, one row per execution attempt.

:func:`assemble_torque_jobs` takes the ``records`` of all files of a log, in reading order, and
returns them with ``stamp_utc`` filled in, together with the ``jobs`` table (schema
:data:`gridtrace.schema.JOBS`; ``vo`` is left null).

Identity
--------
A job is a (site, job sequence number, array index) seen with one ``ctime``: ``123[4].srv`` is
sequence 123, index 4; the TORQUE 2.x form ``123-4.srv`` is read the same way; the server suffix
is ignored, so ``6.edge.ccr.buffalo.edu`` and ``6`` are one job. ``123[].srv`` (an array parent),
licence (L) records and ids that do not start with digits stay in ``records`` only. A job id
logged with two different ``ctime`` values is two jobs (id reuse or rollover); records without
``ctime`` (Q, D, R, A) belong to the job of the next record that has one, else of the previous.
``job_key`` is ``"{site}:{seq}@{submit}"``, or ``"{site}:{seq}[{index}]@{submit}"`` for array
tasks, where ``submit`` is the job's ``ctime`` (else the epoch of its first Q record's stamp, else
``unknown``).

Attempts
--------
Rows come in the order their jobs first appear in the log, a job's attempts in order. Within a
job, each E record ends an attempt; an R (rerun) record ends the attempt in progress
(one with an S record); A (abort) and D (delete) records end it when no E follows. A second E
with the same ``start`` and ``end`` as the previous one, and no S between, is merged into that
attempt (first non-empty value of each attribute wins). Byte-identical lines (same site, record
type, stamp, id and attributes) are used once. Attempts are numbered 0, 1, ... in log order;
an R without a started attempt counts an attempt that has no row. Attributes come from the
record that closed the attempt, then the merged duplicate E, then the attempt's last S (the
queue finally from the last Q: with a routing queue the real queue is the later Q). Allocation
and usage (``exec_host``, ``exec_vnode``, ``resources_used.*``) of an attempt closed by E come
from E records only.

States
------
Closed by E, the first rule that applies: no start (``start`` missing or 0) and no
``exec_host`` → DELETED; no start but an ``exec_host`` → FAILED (NEVER_STARTED); a start, no
``exec_host`` and a negative ``Exit_status`` → FAILED (EXEC_FAILED); ``Exit_status`` −11
(``JOB_EXEC_OVERLIMIT_WT``), or killed by a signal after using at least its walltime limit
(``resources_used.walltime``, else ``run_s``) → TIMEOUT (the server logs a D as ``root`` when it
enforces the limit); a D record during the attempt → CANCELLED; no ``Exit_status`` → UNKNOWN;
0 → COMPLETED; anything else (−10 memory limit, other ``JOB_EXEC_*`` codes, non-zero exits,
signals) → FAILED. Closed by R → REQUEUED. Closed by A → FAILED, or CANCELLED after a D, or
DELETED if it never started. Closed by D without E → CANCELLED if started, else DELETED. An S
without end record → RUNNING; Q records only → PENDING. Every attempt followed by another is
REQUEUED.
``exit_signal`` is ``Exit_status − 256`` above 256 and ``Exit_status − 128`` for 129..255.

Times
-----
Times come from the epochs: ``submit_time`` = ``ctime``, ``queue_time`` = ``qtime``,
``eligible_time`` = ``etime``, ``start_time`` = ``start`` (0 means none), ``end_time`` = ``end``;
``run_s`` = end − start; ``wait_s`` = start − submit. The record stamp is local wall time without
a zone. Each E (with ``end``) and S (with ``start``) record gives an offset, stamp − epoch,
rounded to 15 minutes (offsets beyond ±14 h or more than 5 minutes off the quarter hour are
counted as outliers and not used). With ``tz`` the other records are placed with the zone:
an ambiguous (fall-back) stamp takes the offset of its neighbours in the file, a non-existent
(spring-forward) stamp is moved 1 hour forward. Without ``tz`` the offset is carried forward
along each file's lines (backward at a file's start; the dominant offset for a file without
any). Without ``tz`` and without any offset, stamps are read as UTC. ``tz_offset_s`` is the
offset of the record that closed the attempt (S for RUNNING, the last Q for PENDING).

Resources
---------
``nodes_req``/``cores_req``/``gpus_req``: ``Resource_List.nodes`` (else ``neednodes``, else a
``nodect`` written as a nodes spec), then ``select``, then ``procs``, then ``ncpus``
(``nodect`` for nodes); an explicit ``Resource_List.ngpus``/``gpus``/``gpu`` wins for GPUs.
``cores_alloc``/``gpus_alloc``: ``exec_vnode``, else ``exec_host``, else
``total_execution_slots``, else ``resources_used.ncpus``; ``exec_hosts`` and ``nodes_alloc``
from ``exec_host`` (else ``exec_vnode``, else ``unique_node_count`` for the count).
``mem_req_bytes`` = ``Resource_List.mem``, else the ``select`` memory, else
``pmem`` × ``cores_req``. ``account`` is ``account``, else PBS Pro ``project`` (except its default
``_pbs_project_default``).

Damaged lines
-------------
A cut-off last line (``TRUNCATED`` in ``records``) is used as far as its keys go; its last value,
which may itself be cut, is not. An attempt closed by a cut-off E takes its end from the E's own
stamp when ``end`` was lost (placed with the site's offset like any stamp-only record), and its
start, hosts and slots from its S record when the E lost them; without any start its state is
UNKNOWN (nothing says it never ran). A later E of the same attempt (a complete copy from an
overlapping file) replaces a cut-off one. Lines repaired by the tokeniser (NUL runs, non-UTF-8
bytes, control characters, a missing last line end) flag the jobs that take values from them.

Flags
-----
:data:`JOB_FLAGS` lists every flag set here; :data:`gridtrace.logs._torque.FLAGS` says what each
one (and each flag of ``records``) means. Flags added to ``records.flags`` here: ``DUPLICATE``,
``DST_AMBIGUOUS``, ``DST_GAP``, ``STAMP_UNREADABLE``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError
from gridtrace.logs import _pbs_values as pv
from gridtrace.logs import _torque_jobs_fast as _fast
from gridtrace.logs._columnar import STAMP_RANGE_S
from gridtrace.logs._groups import duplicated, first_seen_codes, segment_bfill, segment_ffill
from gridtrace.logs._torque_attempts import (  # the pure pieces, shared with _torque_small_jobs
    _A,
    _B_DELETED,
    _B_DUPLICATE,
    _B_LATER,
    _B_START_RETRIED,
    _BIT_FLAGS,
    _D,
    _E,
    _END_TYPE_NAMES,
    _EPOCH_KEYS,
    _FIELDS,
    _FROM_S_KEYS,
    _HMS_PATTERN,
    _INT32_RANGE,
    _INT_KEYS,
    _JOB_ID_PATTERN,
    _K_A,
    _K_D,
    _K_E,
    _K_Q,
    _K_R,
    _K_S,
    _KEYS,
    _MAX_OFFSET_S,
    _MAX_RESIDUAL_S,
    _MEMORY_FACTORS,
    _MEMORY_PATTERN,
    _OWN_KEYS,
    _PARENT_PATTERN,
    _PBS_DEFAULT_PROJECT,
    _Q,
    _QUARTER_HOUR,
    _R,
    _RECORD_FLAGS_ON_JOBS,
    _S,
    _SECONDS_PATTERN,
    _STAMP_FORMAT,
    _STATE_CODE,
    _STATES,
    _TEXT_KEYS,
    _TYPE_CODES,
    _WALLTIME_TOLERANCE_S,
    JOB_FLAGS,
    NA,
    _Builder,
)
from gridtrace.logs._torque_jobs_fast import HAVE_NUMBA, index_keys, use_kernel
from gridtrace.schema import JOBS, RECORDS, validate

__all__ = [
    "JOB_FLAGS",
    "FileOffsets",
    "TorqueAssembly",
    "assemble_torque_jobs",
    "assemble_torque_partition",
    "file_stamps",
    "measure_file_offsets",
    "median_stamp",
    "merge_placement",
    "torque_partition_keys",
]

logger = library_logger(__name__)

I64 = npt.NDArray[np.int64]
if TYPE_CHECKING:
    Arr: TypeAlias = pa.Array[Any]
    Chunked: TypeAlias = pa.ChunkedArray[Any]
else:  # pyarrow's classes are not generic at run time
    Arr = pa.Array
    Chunked = pa.ChunkedArray
Bool = npt.NDArray[np.bool_]
T = TypeVar("T")

_END_TYPES = np.array(_END_TYPE_NAMES, dtype=object)


@dataclass(frozen=True)
class TorqueAssembly:
    """What :func:`assemble_torque_jobs` returns.

    Attributes
    ----------
    records : pyarrow.Table
        The input records with ``stamp_utc`` filled in (and a few record flags added).
    jobs : pyarrow.Table
        One row per execution attempt, schema :data:`gridtrace.schema.JOBS`; ``vo`` is null.
    tz_offset_s : int or None
        The dominant offset local stamp − UTC, in seconds (7200 for CEST).
    info : dict
        JSON-able facts: zone given or inferred, offsets seen, duplicate counts, ...
    job_first_rows : numpy.ndarray
        For each row of ``jobs``, the row of ``records`` where its job (id) first appears: it
        is non-decreasing, the order of ``jobs`` (what the spill path merges partitions by).
    """

    records: pa.Table
    jobs: pa.Table
    tz_offset_s: int | None
    info: dict[str, Any]
    job_first_rows: I64 = dataclasses.field(default_factory=lambda: np.empty(0, dtype=np.int64))


# --------------------------------------------------------------------------------------------
# small vectorised helpers


def _rows(mask: Bool) -> I64:
    return np.flatnonzero(mask).astype(np.int64)


def _from_numpy(values: npt.NDArray[Any], type_: pa.DataType, null: Bool | None = None) -> Arr:
    """Wrap a numpy array as an Arrow array of ``type_``, null where ``null`` is true.

    ``type_`` is a fixed-width integer or float type (the values are converted to its width
    unchecked: narrow with a safe ``cast`` after) or ``bool``. The buffers are built here (the
    values without a copy when they already have the width): ``pa.array`` of a numpy array
    looks for a masked array, which imports ``numpy.ma`` (~30 ms) in a process that reads one
    small file.
    """
    n = len(values)
    nulls = 0 if null is None else int(np.count_nonzero(null))
    validity = None
    if nulls:
        validity = pa.py_buffer(np.packbits(~np.asarray(null, dtype=bool), bitorder="little").data)
    if pa.types.is_boolean(type_):
        data = pa.py_buffer(np.packbits(np.asarray(values, dtype=bool), bitorder="little").data)
    else:
        data = pa.py_buffer(np.ascontiguousarray(values, dtype=_NUMPY_TYPES[type_]).data)
    return pa.Array.from_buffers(type_, n, [validity, data], null_count=nulls)


_NUMPY_TYPES: dict[pa.DataType, type[np.generic]] = {
    pa.int8(): np.int8,
    pa.int16(): np.int16,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.float64(): np.float64,
}


def _distinct(values: I64) -> I64:
    """``np.unique(values)`` without ``numpy.ma`` (which a plain ``np.unique`` imports)."""
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def _index(values: npt.NDArray[Any], null: Bool | None = None) -> pa.Int64Array:
    """Wrap a numpy array as an Arrow int64 array, null where ``null`` is true."""
    return cast(pa.Int64Array, _from_numpy(values, pa.int64(), null))


def _bools(values: Bool) -> pa.BooleanArray:
    return cast(pa.BooleanArray, _from_numpy(values, pa.bool_()))


def _strings(values: Sequence[str]) -> Arr:
    return pa.array(values, type=pa.string())


def _take(array: Arr, index: I64) -> Arr:
    """``array[index]`` with null where ``index`` is negative."""
    return array.take(_index(index, index < 0))


def _take_rows(column: Chunked | Arr, rows: I64) -> Arr:
    """Return ``column[rows]`` (``rows`` not negative), taken from the chunks as they are.

    The chunks are not combined first: that would copy every value to read a few.
    """
    taken = column.take(_index(rows))
    return _array(taken) if isinstance(taken, pa.ChunkedArray) else taken


def _np_int(array: Arr) -> I64:
    if not pa.types.is_int64(array.type):
        array = array.cast(pa.int64())
    filled = cast(Arr, pc.fill_null(array, pa.scalar(NA, pa.int64())))
    return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=np.int64)


def _mask(array: Arr) -> Bool:
    filled = cast(Arr, pc.fill_null(array, pa.scalar(False)))
    return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=bool)


def _codes(array: Arr) -> tuple[Arr, I64]:
    """Dictionary-encode: the distinct values and each row's code (−1 for null)."""
    encoded = cast("pa.DictionaryArray[Any, Any]", pc.dictionary_encode(array))
    indices = cast(Arr, encoded.indices).cast(pa.int64())
    return encoded.dictionary, _np_int(indices).clip(min=-1)


def _list_parts(array: Arr) -> tuple[I64, Arr]:
    """Offsets (starting at 0) and the values of a list or map array."""
    lists = cast("pa.ListArray[Any]", array)
    offsets = np.asarray(lists.offsets.to_numpy(), dtype=np.int64)
    values = lists.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    return offsets - offsets[0], values


def _map_parts(array: Arr) -> tuple[I64, Arr, Arr]:
    """Offsets (starting at 0), keys and items of a map array."""
    maps = cast("pa.MapArray[Any, Any]", array)
    if not len(maps):
        return np.zeros(1, dtype=np.int64), maps.keys.slice(0, 0), maps.items.slice(0, 0)
    offsets = np.asarray(maps.offsets.to_numpy(), dtype=np.int64)
    first, last = int(offsets[0]), int(offsets[-1])
    return (
        offsets - first,
        maps.keys.slice(first, last - first),
        maps.items.slice(first, last - first),
    )


def _empty_strings(values: Arr) -> Bool:
    """Which values are the empty string (not null), from the offsets alone."""
    buffer = values.buffers()[1] if pa.types.is_string(values.type) else None
    if buffer is None:
        return _mask(pc.equal(values, _EMPTY_TEXT))
    offsets = np.frombuffer(
        memoryview(buffer), dtype=np.int32, count=len(values) + 1, offset=4 * values.offset
    )
    empty: Bool = offsets[1:] == offsets[:-1]
    if values.null_count:
        empty &= _mask(pc.is_valid(values))
    return empty


def _values_bytes(values: Arr) -> int:
    """Bytes of a string array's values (from its offsets)."""
    if not len(values):
        return 0
    offsets = _fast.string_offsets(values)
    return int(offsets[-1]) - int(offsets[0])


def _concat_values(parts: Sequence[Arr]) -> Arr:
    """Put the string arrays ``parts`` one after the other (one part as it is, not copied)."""
    if not parts:
        return pa.array([], pa.string())
    if len(parts) == 1:
        return parts[0]
    return pa.concat_arrays(list(parts))


def _array(column: Chunked | Arr) -> Arr:
    if isinstance(column, pa.ChunkedArray):
        return cast(Arr, column.chunk(0) if column.num_chunks == 1 else column.combine_chunks())
    return column


def _ints(array: Arr, within: tuple[int, int] | None = None) -> tuple[I64, Bool]:
    """Read a string array as int64 (``NA`` for null), and say which values were unreadable.

    A value outside ``within`` (what its jobs column can hold: a count beyond int32, a stamp
    past the year 9999) is unreadable too: it costs that value, not the read.
    """
    try:
        values, bad = _np_int(array.cast(pa.int64())), np.zeros(len(array), dtype=bool)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        text = pc.utf8_trim_whitespace(array)
        ok = _mask(pc.match_substring_regex(text, r"^-?\d{1,18}$"))
        values = _np_int(cast(Arr, pc.if_else(_bools(ok), text, _NULL_TEXT)).cast(pa.int64()))
        bad = _mask(pc.is_valid(array)) & ~ok
    return _bounded(values, bad, within)


def _bounded(values: I64, bad: Bool, within: tuple[int, int] | None) -> tuple[I64, Bool]:
    """Make the values outside ``within`` ``NA`` and unreadable (``bad``)."""
    if within is not None:
        outside = (values != NA) & ((values < within[0]) | (values > within[1]))
        if outside.any():
            values = np.where(outside, NA, values)
            bad |= outside
    return values, bad


def _first(*arrays: I64) -> I64:
    """Element-wise first non-``NA`` value."""
    out = arrays[0].copy()
    for array in arrays[1:]:
        out = np.where(out != NA, out, array)
    return out


def _flags_array(n: int, pieces: Sequence[tuple[str, I64]], base: Arr | None = None) -> Arr:
    """Build a list<string> column of ``n`` rows from (flag, rows) pieces after ``base``'s."""
    rows_parts: list[I64] = []
    names_parts: list[Arr] = []
    if base is not None:
        offsets, values = _list_parts(base)
        rows_parts.append(np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets)))
        names_parts.append(values)
    for name, rows in pieces:
        if len(rows):
            rows_parts.append(rows)
            names_parts.append(_strings([name] * len(rows)))
    if not rows_parts:
        return _lists(np.zeros(n, dtype=np.int64), _strings([]))
    rows_all = np.concatenate(rows_parts)
    order = np.argsort(rows_all, kind="stable")
    names = pa.concat_arrays(names_parts).take(_index(order))
    return _lists(np.bincount(rows_all, minlength=n), names)


def _join(*parts: Arr | str) -> Arr:
    """Concatenate strings element-wise (the stubs do not admit mixing arrays and scalars)."""
    compute: Any = pc
    return cast(Arr, compute.binary_join_element_wise(*parts, ""))


def _lists(counts: I64, values: Arr, null: Bool | None = None) -> Arr:
    """Build a list array with ``counts[i]`` consecutive ``values`` in row ``i``."""
    offsets = np.zeros(len(counts) + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    offset_array = cast(pa.Int32Array, _from_numpy(offsets, pa.int32()))
    mask = None if null is None else _bools(null)
    return cast(Arr, pa.ListArray.from_arrays(offset_array, values, mask=mask))


def _map_unique(array: Arr, parse: Callable[[str], T]) -> tuple[list[T], npt.NDArray[np.intp]]:
    """Parse each distinct string once; return the results and each row's index into them (−1)."""
    distinct, codes = _codes(array)
    return [parse(str(text)) for text in distinct.to_pylist()], codes.astype(np.intp)


def _lookup(values: Sequence[int | None], codes: npt.NDArray[np.intp]) -> I64:
    """Map per-unique optional ints onto rows (``NA`` for None and for rows without a value)."""
    table = np.array([NA if v is None else v for v in values] + [NA], dtype=np.int64)
    return table[codes]  # code −1 picks the trailing NA


def _hits(flags: Sequence[bool], codes: npt.NDArray[np.intp]) -> Bool:
    return np.array([*flags, False], dtype=bool)[codes]


def _to_arrow_int(values: I64, type_: pa.DataType) -> Arr:
    return _from_numpy(values, pa.int64(), values == NA).cast(type_)


def _to_arrow_time(values: I64) -> Arr:
    return _to_arrow_int(values, pa.int64()).cast(pa.timestamp("s", tz="UTC"))


# --------------------------------------------------------------------------------------------
# value columns: vectorised for the common forms, the parsers of _pbs_values for the rest

_Problems = list[tuple[str, I64]]


def _scatter_slow(
    array: Arr,
    rest: Bool,
    out: I64,
    parse: Callable[[str], tuple[int | None, pv.Problem | None]],
) -> dict[str, I64]:
    """Parse the rows in ``rest`` one distinct string at a time; return the rows per problem."""
    rows = _rows(rest)
    if not len(rows):
        return {}
    results, codes = _map_unique(array.take(_index(rows)), parse)
    values = [v if v is None or abs(v) < 2**62 else None for v, _ in results]
    problems = [
        p if v is not None or p else "unreadable" for (_, p), v in zip(results, values, strict=True)
    ]
    out[rows] = _lookup(values, codes)
    found: dict[str, I64] = {}
    for problem in ("negative", "unreadable", "nonstandard", "guessed"):
        hit = rows[_hits([p == problem for p in problems], codes)]
        if len(hit):
            found[problem] = hit
    return found


def _durations(array: Arr) -> tuple[I64, dict[str, I64]]:
    """Seconds per row; plain seconds and ``HH:MM:SS`` vectorised."""
    out = np.full(len(array), NA, dtype=np.int64)
    plain = _mask(pc.match_substring_regex(array, f"^{_SECONDS_PATTERN}$"))
    if plain.any():
        out[plain] = _np_int(array.filter(_bools(plain)).cast(pa.int64()))
    hms = _mask(pc.match_substring_regex(array, f"^{_HMS_PATTERN}$"))
    if hms.any():
        parts = pc.split_pattern(array.filter(_bools(hms)), ":")
        flat = _np_int(cast(Arr, pc.list_flatten(parts)).cast(pa.int64())).reshape(-1, 3)
        out[hms] = flat[:, 0] * 3600 + flat[:, 1] * 60 + flat[:, 2]
    rest = _mask(pc.is_valid(array)) & ~plain & ~hms
    return out, _scatter_slow(array, rest, out, pv.parse_duration)


def _memory(array: Arr, unit: str) -> tuple[I64, dict[str, I64]]:
    """Bytes per row; ``<integer><unit>`` vectorised."""
    out = np.full(len(array), NA, dtype=np.int64)
    found = pc.extract_regex(array, f"^{_MEMORY_PATTERN}$")
    standard = _mask(pc.is_valid(found))
    if standard.any():
        rows = _rows(standard)
        found = found.take(_index(rows))
        number = _np_int(cast(Arr, pc.struct_field(found, "number")).cast(pa.int64()))
        encoded = pc.dictionary_encode(pc.struct_field(found, "unit"))
        units = encoded.dictionary.to_pylist()
        table = np.array([_MEMORY_FACTORS[u.lower()] for u in units])
        factor = table.astype(np.int64)[np.asarray(encoded.indices.to_numpy())]
        fits = number.astype(np.float64) * factor < 2.0**62
        out[rows] = np.where(fits, number * np.where(fits, factor, 1), NA)
        standard[rows[~fits]] = False  # left to the slow path, which calls them unreadable
    rest = _mask(pc.is_valid(array)) & ~standard

    def parse(text: str) -> tuple[int | None, pv.Problem | None]:
        return pv.parse_memory(text, unit)

    return out, _scatter_slow(array, rest, out, parse)


# --------------------------------------------------------------------------------------------
# records: attributes, identities, duplicates


_STRING_BYTES = int(np.iinfo(np.int32).max)
"""Bytes a ``string`` array holds: beyond, the attribute index keeps only the values it reads."""


@dataclass(frozen=True)
class _Attrs:
    """The attributes of every record, indexed: ``index[key][row]`` is a position in ``values``.

    Positions are −1 where the record lacks the key or logs it empty.
    """

    values: Arr
    index: dict[str, I64]
    # whether numbers are read in place by the kernel (large inputs)
    kernel: bool = False
    # the table of ``index`` (a column per key) and each key's column, for whole-row gathers
    table: npt.NDArray[np.integer[Any]] | None = None
    columns: dict[str, int] = dataclasses.field(default_factory=dict)
    # epochs read by :meth:`epochs` (by the kernel: several keys in one pass), by key
    epoch_cache: dict[str, I64] = dataclasses.field(default_factory=dict, compare=False, repr=False)
    # positions gathered by :meth:`gather_rows`, by the ``id`` of each source (kept alive here)
    gathered: dict[tuple[int, ...], tuple[tuple[I64, ...], npt.NDArray[np.integer[Any]]]] = (
        dataclasses.field(default_factory=dict, compare=False, repr=False)
    )

    @classmethod
    def extract(
        cls,
        attrs: Chunked | Arr,
        keys: Sequence[str],
        drop_last: Bool | None = None,
        epochs: Sequence[str] = (),
    ) -> _Attrs:
        """Index ``keys``; rows where ``drop_last`` is true lose their last entry (a cut value).

        With the kernel, the ``epochs`` (some of ``keys``) are also read as the values are
        indexed, for :meth:`epochs` (what :meth:`read_epochs` would read after).

        Chunk by chunk; ``values`` is every chunk's values, one after the other (the maps are
        not combined), and a position is an entry's number among them: nothing is filtered or
        copied value by value. When those values would not fit one string array, only the
        values of ``keys`` are kept (filtered chunk by chunk) and numbered in turn.
        """
        chunks = attrs.chunks if isinstance(attrs, pa.ChunkedArray) else [attrs]
        n = len(attrs)
        wanted = {key: i for i, key in enumerate(keys)}
        # a row's keys side by side; 32-bit positions when the entries are fewer than 2**31 (the
        # table is the assembly's largest array: half the memory, half the pages to fault in)
        # (a map chunk's keys are all of its child's, a slice's too: a bound)
        entries = sum(len(cast("pa.MapArray[Any, Any]", chunk).keys) for chunk in chunks)
        width = np.int32 if entries < np.iinfo(np.int32).max else np.int64
        parts = [_map_parts(chunk) for chunk in chunks if len(chunk)]
        # every value in one string array (else only the kept ones)
        whole = sum(_values_bytes(values) for _, _, values in parts) < _STRING_BYTES
        kernel = use_kernel(n)
        simple = all(wanted) and all(_fast.applies(names, values) for _, names, values in parts)
        if kernel and whole and simple:
            # not filled here: the kernel writes every row whole (one pass over them, not two)
            table = np.empty((n, len(wanted)), dtype=width)
            integer_of = np.full(len(wanted), -1, dtype=np.int64)
            for k, key in enumerate(epochs):
                integer_of[wanted[key]] = k
            integers = np.empty((len(epochs), n), dtype=np.int64)
            others = np.zeros(len(epochs), dtype=np.int64)
            row0 = position0 = 0
            for offsets, names, values in parts:
                rows = len(offsets) - 1
                cut_rows = (
                    np.zeros(rows, dtype=bool)
                    if drop_last is None
                    else np.ascontiguousarray(drop_last[row0 : row0 + rows])
                )
                index_keys(
                    offsets,
                    names,
                    values,
                    list(wanted),
                    cut_rows,
                    table,
                    row0,
                    position0,
                    integer_of,
                    integers,
                    others,
                )
                row0 += rows
                position0 += len(values)
            values_all = _concat_values([values for _, _, values in parts])
            index = {key: table[:, i] for key, i in wanted.items()}
            indexed = cls(values_all, index, kernel, table, dict(wanted))
            no_errors = np.zeros(n, dtype=bool)
            for k, key in enumerate(epochs):
                if not others[k]:  # else read by read_epochs or epochs
                    indexed.epoch_cache[key] = _bounded(integers[k], no_errors, STAMP_RANGE_S)[0]
            return indexed
        table = np.full((n, len(wanted)), -1, dtype=width)
        value_set = pa.array(list(wanted), pa.string())
        value_parts: list[Arr] = []
        row0 = position0 = 0
        for offsets, names, values in parts:
            rows = len(offsets) - 1
            parent = np.repeat(np.arange(row0, row0 + rows, dtype=np.int64), np.diff(offsets))
            found = pc.index_in(names, value_set=value_set)
            key_id = _np_int(found).clip(min=-1).astype(np.int16)
            key_id[_empty_strings(values)] = -1
            if drop_last is not None:
                cut = _rows(drop_last[row0 : row0 + rows] & (offsets[1:] > offsets[:-1]))
                key_id[offsets[cut + 1] - 1] = -1
            selected = np.flatnonzero(key_id >= 0)
            if whole:
                table[parent[selected], key_id[selected]] = position0 + selected
                value_parts.append(values)
                position0 += len(values)
            else:
                table[parent[selected], key_id[selected]] = position0 + np.arange(
                    len(selected), dtype=np.int64
                )
                value_parts.append(values.filter(_bools(key_id >= 0)))
                position0 += len(selected)
            row0 += rows
        values_all = _concat_values(value_parts)
        index = {key: table[:, i] for key, i in wanted.items()}
        return cls(values_all, index, kernel, table, dict(wanted))

    def gather_rows(self, *sources: I64, order: I64 | None = None) -> None:
        """Gather, for :meth:`positions` with these ``sources``, every key's combined positions.

        Whole table rows are read at once (one or two cache lines each) instead of one key's
        column at a time (a cache miss per value): worth it for sources asked for many keys.
        The result, a line per key, is kept until :meth:`forget_rows` (the ``sources`` with it,
        so that their ``id`` stays theirs); other sources are looked up key by key. With the
        kernel, the rows are read in ``order`` (see :func:`_fast.visits`).
        """
        if self.table is None:
            return
        if self.kernel and sources:
            key = tuple(id(rows) for rows in sources)
            self.gathered[key] = (sources, _fast.first_positions(self.table, sources, order))
            return
        combined: npt.NDArray[np.integer[Any]] | None = None
        for rows in sources:
            picked = self.table[np.maximum(rows, 0)]
            picked[rows < 0] = -1
            if combined is None:
                combined = picked
            else:
                np.copyto(combined, picked, where=combined < 0)
            del picked
        if combined is not None:
            key = tuple(id(rows) for rows in sources)
            self.gathered[key] = (sources, np.ascontiguousarray(combined.T))

    def forget_rows(self) -> None:
        """Drop what :meth:`gather_rows` kept."""
        self.gathered.clear()

    def positions(self, key: str, *sources: I64) -> I64:
        """Position of ``key``'s value in the first of the ``sources`` rows that has it."""
        found = self.gathered.get(tuple(id(rows) for rows in sources))
        column = self.columns.get(key)
        if found is not None and column is not None:
            kept, by_key = found
            if all(a is b for a, b in zip(kept, sources, strict=True)):
                return cast(I64, by_key[column].copy())  # not a view of the kept rows
        table = self.index[key]
        out = np.where(sources[0] >= 0, table[np.maximum(sources[0], 0)], -1)
        for rows in sources[1:]:
            more = np.where(rows >= 0, table[np.maximum(rows, 0)], -1)
            out = np.where(out >= 0, out, more)
        return out

    def get(self, key: str, *sources: I64) -> Arr:
        """``key``'s value from the first of the ``sources`` rows that has it (else null)."""
        positions = self.positions(key, *sources)
        if not (positions >= 0).any():
            return pa.nulls(len(positions), pa.string())
        return _take(self.values, positions)

    def present(self, key: str) -> tuple[I64, Arr]:
        """Return the records that have ``key``, and their values, in record order."""
        table = self.index[key]
        rows = _rows(table >= 0)
        return rows, self.values.take(_index(table[rows]))

    def numbers(
        self,
        positions: npt.NDArray[np.integer[Any]],
        modes: dict[str, int],
        order: I64 | None = None,
    ) -> dict[str, I64]:
        """Numbers read in place by the kernel: ``modes`` maps a key to its column and how.

        ``positions`` has a column per key of ``modes`` (in its order), a row per record or
        attempt. Returns the keys read (see :func:`_fast.read_values`); a key left out (no
        kernel, or a value in another form) is read from its strings as it always was. The
        rows are read in ``order`` (see :func:`_fast.visits`).
        """
        if not self.kernel or not modes:
            return {}
        read = _fast.read_values(
            self.values, positions, range(len(modes)), list(modes.values()), order
        )
        return {key: got for key, got in zip(modes, read, strict=True) if got is not None}

    def read_epochs(self, *keys: str) -> None:
        """Read ``keys`` (epochs) for every record in one pass of the kernel, for :meth:`epochs`."""
        if not self.kernel or self.table is None:
            return
        wanted = [key for key in keys if key not in self.epoch_cache and key in self.columns]
        columns = [self.columns[key] for key in wanted]
        read = _fast.read_values(self.values, self.table, columns, [_fast.INTEGER] * len(wanted))
        for key, got in zip(wanted, read, strict=True):
            if got is not None:
                self.epoch_cache[key] = _bounded(
                    got, np.zeros(len(got), dtype=bool), STAMP_RANGE_S
                )[0]

    def epochs(self, key: str) -> I64:
        """``key``, an epoch, for every record (``NA`` when absent, unreadable or past 9999).

        A job's own reading of the key (``ints`` in :func:`_jobs`) flags what this leaves out.
        """
        if key in self.epoch_cache:
            return self.epoch_cache[key]
        out = np.full(len(self.index[key]), NA, dtype=np.int64)
        rows, values = self.present(key)
        out[rows] = _ints(values, STAMP_RANGE_S)[0]
        return out

    def hashes(self, key: str) -> I64:
        """Return a value equal where ``key``'s values are equal, per record (as :meth:`codes`).

        With the kernel, a 64-bit hash of each value read in place (0 when absent; distinct
        values may rarely share one); else :meth:`codes`.
        """
        if self.kernel:
            hashed = _fast.value_hashes(self.values, self.index[key])
            if hashed is not None:
                return hashed.view(np.int64)
        return self.codes(key)

    def codes(self, key: str) -> I64:
        """Return a code per distinct value of ``key`` for every record (−1 when absent)."""
        out = np.full(len(self.index[key]), -1, dtype=np.int64)
        rows, values = self.present(key)
        out[rows] = _codes(values)[1]
        return out


def _job_ids(ids: Arr) -> tuple[I64, I64, Bool, Bool, I64, I64]:
    """Sequence number, array index, is-array-parent, is-a-job, job-group and id code per record.

    Parsing runs once per distinct id; records whose ids differ only by the server suffix
    (``6`` and ``6.edge.ccr.buffalo.edu``) get the same group code.
    """
    if use_kernel(len(ids)):
        read = _kernel_job_ids(ids)
        if read is not None:
            return read
    distinct, codes = _codes(ids)
    parsed = _fast.job_id_parts(distinct) if use_kernel(len(ids)) else None
    seq_d, index_d, valid_d, parent_d = parsed if parsed is not None else _id_parts(distinct)
    valid = np.append(valid_d, False)
    parent = np.append(parent_d, False)
    seq = np.append(seq_d, NA)
    index = np.append(index_d, NA)
    group_of_distinct = first_seen_codes(seq[:-1], index[:-1])
    group = np.append(np.asarray(group_of_distinct, dtype=np.int64), -1)
    return (
        seq[codes],
        index[codes],
        parent[codes],
        (valid & ~parent)[codes],
        group[codes],
        codes.astype(np.int64),
    )


def _kernel_job_ids(ids: Arr) -> tuple[I64, I64, Bool, Bool, I64, I64] | None:
    """Read the ids as :func:`_job_ids` does, every one by the kernel (no dictionary of them).

    The job group is the same (ids numbered by their (sequence, index) in order of first
    appearance); the id code is instead a 64-bit hash of the id, equal for equal ids (all
    :func:`_duplicate_lines` needs of it: it compares its candidates in full). None where the
    kernel does not read the ids (nulls, or bytes it leaves to the regular expressions).
    """
    parsed = _fast.job_id_parts(ids)
    if parsed is None:
        return None
    seq, index, valid, parent = parsed
    packed, hashed = _fast.job_id_keys(ids, seq, index)
    # (sequence, index) packed in one integer: one column to number
    group = _first_seen(packed) if packed is not None else first_seen_codes(seq, index)
    return seq, index, parent, valid & ~parent, group, hashed.view(np.int64)


def _first_seen(keys: I64) -> I64:
    """:func:`first_seen_codes` of one column: by the kernel's hash table on large inputs."""
    numbered = _fast.first_seen_numbers(keys) if use_kernel(len(keys)) else None
    return first_seen_codes(keys) if numbered is None else numbered


def _id_parts(distinct: Arr) -> tuple[I64, I64, Bool, Bool]:
    """Sequence number, array index, whether matched and whether a parent, of distinct ids."""
    parts = pc.extract_regex(distinct, f"^{_JOB_ID_PATTERN}$")
    valid = _mask(pc.is_valid(parts))
    parent = _mask(pc.match_substring_regex(distinct, f"^{_PARENT_PATTERN}"))
    matched = _bools(valid)
    seq_text = pc.if_else(matched, pc.struct_field(parts, "seq"), _NULL_TEXT)
    seq = _np_int(seq_text.cast(pa.int64()))
    bracket = pc.struct_field(parts, "bracket")
    dash = pc.struct_field(parts, "dash")
    index_text = pc.if_else(pc.not_equal(bracket, _EMPTY_TEXT), bracket, dash)
    has_index = pc.and_(matched, pc.not_equal(index_text, _EMPTY_TEXT))
    index = _np_int(pc.if_else(has_index, index_text, _NULL_TEXT).cast(pa.int64()))
    return seq, index, valid, parent


def _duplicate_lines(records: pa.Table, attrs: _Attrs, key_columns: Sequence[I64]) -> Bool:
    """Later copies of byte-identical lines (same site, type, stamp, id and attributes).

    A hash of ``key_columns`` (integer codes of the site, type, stamp, id, ...; the third, the
    stamp, also places each line in the kernel's hash table) and of the queue picks the
    candidates; their attributes are then compared in full (so a value shared by two
    different queues, see :meth:`_Attrs.hashes`, costs a comparison, never a wrong answer).
    """
    n = records.num_rows
    key_parts = [*key_columns, attrs.hashes("queue")]
    if use_kernel(n):
        key = _fast.combined_keys(key_parts)
    else:
        key = np.zeros(n, dtype=np.uint64)
        with np.errstate(over="ignore"):
            for column in key_parts:
                key = key * np.uint64(1_000_003) ^ column.astype(np.int64).view(np.uint64)
    twice = None
    if use_kernel(n):
        # the hash and the stamp (key_columns[2]) repeated: copies of a line share both, and
        # the stamp places them in the table, lines near in time in slots near in memory
        near = key_columns[2] * 8 + (key & np.uint64(7)).view(np.int64)
        twice = _fast.seen_more_than_once(key.view(np.int64), near)
    if twice is None:
        twice = duplicated(key.view(np.int64), keep="none")
    candidates = _rows(twice)
    duplicate = np.zeros(n, dtype=bool)
    if not len(candidates):
        return duplicate
    columns = [records.column(c).take(_index(candidates)).to_pylist() for c in _LINE_COLUMNS]
    seen: set[tuple[Any, ...]] = set()
    for row, *line in zip(candidates.tolist(), *columns, strict=True):
        full = (*line[:-1], tuple(line[-1] or ()))
        if full in seen:
            duplicate[row] = True
        else:
            seen.add(full)
    return duplicate


_LINE_COLUMNS = ("site", "record_type", "stamp", "job_id_raw", "attrs")
# the text attributes of an attempt the kernel gathers row by row
_STRING_KEYS = (
    *_TEXT_KEYS,
    "Resource_List.nodes",
    "Resource_List.neednodes",
    "Resource_List.nodect",
    "Resource_List.select",
    "exec_host",
    "exec_vnode",
)
# the numeric attributes of an attempt the kernel reads in place, and how
_NUMBER_MODES: dict[str, int] = {
    **{key: _fast.INTEGER for key in _EPOCH_KEYS + _INT_KEYS},
    **{
        key: _fast.DURATION
        for key in ("resources_used.walltime", "Resource_List.walltime", "resources_used.cput")
    },
    **{
        key: _fast.MEMORY
        for key in (
            "resources_used.mem",
            "resources_used.vmem",
            "Resource_List.mem",
            "Resource_List.pmem",
        )
    },
}


def _has_flag(flags: Arr, name: str) -> Bool:
    """Which rows of ``flags`` (a list per row) hold ``name``."""
    offsets, values = _list_parts(flags)
    out = np.zeros(len(flags), dtype=bool)
    hits = _rows(_mask(pc.equal(values, pa.scalar(name)))) if len(values) else _NONE
    # each hit's row: the last whose list starts at or before it (no row number per value)
    out[np.searchsorted(offsets, hits, side="right") - 1] = True
    return out


# --------------------------------------------------------------------------------------------
# time zone


@dataclass(frozen=True)
class _Placement:
    offset: I64  # local − UTC per record (NA where the stamp is unreadable)
    dominant: int | None
    record_flags: dict[str, I64]
    info: dict[str, Any]


def _segments(src_file: Arr) -> I64:
    """Give each run of consecutive rows from one file its own number.

    A run ends where a row's file differs from the one before (null equal to null): compared
    row against row, no dictionary of the names.
    """
    n = len(src_file)
    change = np.ones(n, dtype=bool)
    if n > 1:
        later, earlier = src_file.slice(1), src_file.slice(0, n - 1)
        change[1:] = _mask(pc.not_equal(later, earlier)) | (
            _mask(pc.is_null(later)) != _mask(pc.is_null(earlier))
        )
    return np.cumsum(change).astype(np.int64) - 1


_UNPLACED = NA + 1
"""Offset of a record whose file measured none (and no zone given): the dominant one is used."""


@dataclass(frozen=True)
class _Measured:
    """Offsets as far as each file's own records give them (see :func:`_measure`)."""

    offset: I64  # NA: unreadable stamp; _UNPLACED: nothing in its file (no zone given)
    values: I64  # the distinct offsets records measured on their own epoch, ascending
    counts: I64  # records that measured each
    outliers: int
    flags: dict[str, I64]  # DST_GAP and DST_AMBIGUOUS rows (with a zone)
    mismatches: int | None  # records whose offset the zone contradicts (with a zone)


def _measure(naive: I64, epoch: I64, segment: I64, zone: ZoneInfo | None) -> _Measured:
    """Measure each record's offset on its own epoch; carry it along its file (segment).

    Everything here is local to a file: the spill path runs it on one file at a time.
    """
    if zone is None and use_kernel(len(naive)) and bool(np.all(segment[1:] >= segment[:-1])):
        own, offset, outliers, bins = _fast.measured_offsets(
            naive, epoch, segment, _QUARTER_HOUR, _MAX_OFFSET_S, _MAX_RESIDUAL_S, _UNPLACED
        )
        seen = np.flatnonzero(bins)
        steps = _MAX_OFFSET_S // _QUARTER_HOUR
        values, counts = (seen - steps) * _QUARTER_HOUR, bins[seen]
        return _Measured(offset, values, counts, outliers, {}, None)
    have = (naive != NA) & (epoch != NA) & (epoch > 0)
    raw = np.where(have, naive - epoch, 0)
    rounded = (raw + _QUARTER_HOUR // 2) // _QUARTER_HOUR * _QUARTER_HOUR
    plausible = (np.abs(rounded) <= _MAX_OFFSET_S) & (np.abs(raw - rounded) <= _MAX_RESIDUAL_S)
    own = np.where(have & plausible, rounded, NA)
    outliers = int(np.count_nonzero(have & ~plausible))
    values, counts = _offset_counts(own)
    measured = np.where(own != NA, own, np.nan)
    before: npt.NDArray[np.float64] = segment_ffill(measured, segment)
    after: npt.NDArray[np.float64] = segment_bfill(measured, segment)
    flags: dict[str, I64] = {}
    mismatches: int | None = None
    if zone is None:
        filled = np.where(np.isnan(before), after, before)
        offset = np.full(len(naive), _UNPLACED, dtype=np.int64)
        known = ~np.isnan(filled)
        offset[known] = filled[known].astype(np.int64)
    else:
        offset, flags, mismatches = _zone_offsets(naive, own, before, after, zone)
    offset = np.where(own != NA, own, offset)
    offset[naive == NA] = NA
    return _Measured(
        offset,
        values.astype(np.int64),
        counts.astype(np.int64),
        outliers,
        flags,
        mismatches,
    )


def _offset_counts(own: I64) -> tuple[I64, I64]:
    """Count the records of each distinct offset of ``own`` (``NA`` left out), ascending.

    What ``np.unique(own[own != NA], return_counts=True)`` gives, by counting: the offsets are
    whole quarter hours within ±14 h, so a count per quarter hour needs no sort.
    """
    steps = _MAX_OFFSET_S // _QUARTER_HOUR
    bins = np.where(own != NA, own // _QUARTER_HOUR + steps, 2 * steps + 1)
    counts = np.bincount(bins, minlength=2 * steps + 2)[: 2 * steps + 1]
    seen = np.flatnonzero(counts)
    return (seen - steps) * _QUARTER_HOUR, counts[seen].astype(np.int64)


def _dominant(values: I64, counts: I64) -> int | None:
    """Return the offset most records measured (the smallest of a tie); None when none did."""
    return int(values[np.argmax(counts)]) if len(values) else None


def _placement_info(
    values: I64,
    counts: I64,
    outliers: int,
    *,
    zone_given: bool,
    mismatches: int,
    ambiguous: int,
    gap: int,
) -> dict[str, Any]:
    """Return the placement facts of the summary, from the counts over every record."""
    dominant = _dominant(values, counts)
    info: dict[str, Any] = {
        "offsets_seen": {str(int(v)): int(c) for v, c in zip(values, counts, strict=True)},
        "offset_outliers": outliers,
        "dst": len(values) > 1,
    }
    if outliers:
        logger.warning("%d records have a stamp and an epoch that disagree; not used", outliers)
    if zone_given:
        info["tz_source"] = "given"
        info["zone_offset_mismatches"] = mismatches
    elif dominant is not None:
        info["tz_source"] = "inferred"
    else:
        info["tz_source"] = "assumed_utc"
        logger.warning("no zone given and no record with an epoch: stamps read as UTC")
    info["dst_ambiguous_records"] = ambiguous
    info["dst_gap_records"] = gap
    return info


def _finish_offsets(offset: I64, dominant: int | None) -> I64:
    """Give the records whose file measured no offset the dominant one (else UTC)."""
    unplaced = offset == _UNPLACED
    if not unplaced.any():
        return offset
    out = offset.copy()
    out[unplaced] = dominant if dominant is not None else 0
    return out


def _place(naive: I64, epoch: I64, segment: I64, zone: ZoneInfo | None) -> _Placement:
    """Measure each record's offset on its own epoch; give the other records one."""
    measured = _measure(naive, epoch, segment, zone)
    dominant = _dominant(measured.values, measured.counts)
    info = _placement_info(
        measured.values,
        measured.counts,
        measured.outliers,
        zone_given=zone is not None,
        mismatches=measured.mismatches or 0,
        ambiguous=len(measured.flags.get("DST_AMBIGUOUS", ())),
        gap=len(measured.flags.get("DST_GAP", ())),
    )
    flags: dict[str, I64] = {"STAMP_UNREADABLE": _rows(naive == NA), **measured.flags}
    return _Placement(_finish_offsets(measured.offset, dominant), dominant, flags, info)


def _zone_offsets(
    naive: I64,
    own: I64,
    before: npt.NDArray[np.float64],
    after: npt.NDArray[np.float64],
    zone: ZoneInfo,
) -> tuple[I64, dict[str, I64], int]:
    """Offsets of the stamp-only records in ``zone``; DST flags; offsets the zone contradicts."""
    import pandas as pd  # only with a zone given: pandas takes 0.4 s to import

    tz = zone.key
    offset = np.full(len(naive), NA, dtype=np.int64)
    need = _rows((own == NA) & (naive != NA))
    stamps = pd.DatetimeIndex(pd.to_datetime(naive[need], unit="s"))
    earlier = stamps.tz_localize(tz, ambiguous=np.ones(len(need), dtype=bool), nonexistent="NaT")
    gap = np.asarray(earlier.isna())
    ambiguous = np.asarray(stamps.tz_localize(tz, ambiguous="NaT", nonexistent="NaT").isna())
    ambiguous &= ~gap
    offset[need] = naive[need] - np.asarray(earlier.as_unit("s").asi8)
    gap_rows = need[gap]
    if len(gap_rows):  # a stamp the clock skipped: read it one hour later
        later = pd.DatetimeIndex(pd.to_datetime(naive[gap_rows] + 3600, unit="s"))
        placed = later.tz_localize(tz, ambiguous=True, nonexistent="shift_forward")
        offset[gap_rows] = naive[gap_rows] - np.asarray(placed.as_unit("s").asi8)
    ambiguous_rows = need[ambiguous]
    for row in ambiguous_rows.tolist():  # a repeated stamp: take the neighbours' offset
        local = datetime.fromtimestamp(int(naive[row]), UTC).replace(tzinfo=None)
        candidates = []
        for fold in (0, 1):
            delta = local.replace(tzinfo=zone, fold=fold).utcoffset()
            candidates.append(int(delta.total_seconds()) if delta is not None else 0)
        if before[row] in candidates:
            offset[row] = int(before[row])
        elif after[row] in candidates:
            offset[row] = int(after[row])
        else:
            offset[row] = candidates[0]
    measured = _rows(own != NA)
    mismatches = 0
    if len(measured):  # does the zone agree with the offsets the records measured?
        epochs = naive[measured] - own[measured]
        local_times = pd.DatetimeIndex(pd.to_datetime(epochs, unit="s", utc=True)).tz_convert(tz)
        zone_offset = np.asarray(local_times.tz_localize(None).as_unit("s").asi8) - epochs
        mismatches = int(np.count_nonzero(zone_offset != own[measured]))
        if mismatches:
            logger.warning("%d records measure an offset zone %s does not give", mismatches, tz)
    return offset, {"DST_GAP": gap_rows, "DST_AMBIGUOUS": ambiguous_rows}, mismatches


# --------------------------------------------------------------------------------------------
# attempts

_FAST_PATH = True
"""Cut the common job shapes with array operations (tests turn it off to compare both paths)."""


def _segment_positions(starts: I64, stops: I64) -> I64:
    """Return the positions ``starts[i]:stops[i]`` of every segment, concatenated."""
    sizes = stops - starts
    total = int(sizes.sum())
    if not total:
        return np.empty(0, dtype=np.int64)
    offsets = np.repeat(starts - np.cumsum(sizes) + sizes, sizes)
    positions: I64 = np.arange(total, dtype=np.int64) + offsets
    return positions


def _attempts(
    order: I64,
    group_sorted: I64,
    rtype: I64,
    ctime: I64,
    start: I64,
    end: I64,
    group_bits: I64,
    truncated: Bool,
) -> tuple[dict[str, I64], dict[str, int]]:
    """Cut every job into attempts: common shapes vectorised, the others record by record.

    A job group takes the fast path when it has one ``ctime``, no R or A record and either
    exactly one E record, logged last, or only Q and S records.
    """
    if not len(order):
        empty = {name: np.empty(0, dtype=np.int64) for name in _FIELDS}
        return empty, {"rerun_records": 0, "records_after_end": 0}
    big = np.iinfo(np.int64).max
    heads = np.flatnonzero(np.r_[True, group_sorted[1:] != group_sorted[:-1]])
    tails = np.r_[heads[1:], len(order)] - 1
    if use_kernel(len(order)):  # one pass over the groups
        by_type, ct_low, ct_high, last_kind, last_s, last_q, first_q = _fast.group_summary(
            order, heads, rtype, ctime, (_Q, _S, _E, _D, _R, _A)
        )
        n_s, n_e, n_d = by_type[1], by_type[2], by_type[3]
        n_other = by_type[4] + by_type[5]
    else:
        kinds = rtype[order]

        def count(kind: int) -> I64:
            return np.add.reduceat((kinds == kind).astype(np.int64), heads)

        n_e, n_s, n_d = count(_E), count(_S), count(_D)
        n_other = count(_R) + count(_A)
        ct = ctime[order]
        ct_low = np.minimum.reduceat(np.where(ct != NA, ct, big), heads)
        ct_high = np.maximum.reduceat(ct, heads)  # NA is the smallest int64
        last_kind = kinds[tails]
        last_s = np.maximum.reduceat(np.where(kinds == _S, order, -1), heads)
        last_q = np.maximum.reduceat(np.where(kinds == _Q, order, -1), heads)
        first_q = np.minimum.reduceat(np.where(kinds == _Q, order, big), heads)
        first_q = np.where(first_q == big, -1, first_q)
    one_ctime = (ct_high == NA) | (ct_low == ct_high)
    fast = one_ctime & (n_other == 0) & _FAST_PATH
    fast &= ((n_e == 1) & (last_kind == _E)) | ((n_e == 0) & (n_d == 0))
    groups = group_sorted[heads]
    kind = np.where(n_e == 1, _K_E, np.where(n_s > 0, _K_S, _K_Q))
    primary = np.where(kind == _K_E, order[tails], np.where(kind == _K_S, last_s, last_q))
    bits = group_bits[groups]
    bits = bits | np.where(n_s > 1, _B_START_RETRIED, 0) | np.where(n_d > 0, _B_DELETED, 0)
    pick = _rows(fast)
    fast_part: dict[str, I64] = {
        "group": groups[pick],
        "number": np.zeros(len(pick), dtype=np.int64),
        "total": np.ones(len(pick), dtype=np.int64),
        "kind": kind[pick].astype(np.int64),
        "primary": primary[pick],
        "dup": np.full(len(pick), -1, dtype=np.int64),
        "s": last_s[pick],
        "first_q": first_q[pick],
        "last_q": last_q[pick],
        "bits": bits[pick],
        "ctime": ct_high[pick],
    }
    slow = _rows(~fast)
    # only the records of the slow groups go to Python: row -> value maps of those rows
    slow_rows = order[_segment_positions(heads[slow], tails[slow] + 1)]
    keys = slow_rows.tolist()

    def values(array: npt.NDArray[Any]) -> dict[int, Any]:
        return dict(zip(keys, array[slow_rows].tolist(), strict=True))

    builder = _Builder(values(rtype), values(ctime), values(start), values(end), values(truncated))
    done = 0
    for g in slow.tolist():
        size = int(tails[g] - heads[g] + 1)
        builder.group(int(groups[g]), keys[done : done + size], int(group_bits[groups[g]]))
        done += size
    slow_part = {name: np.asarray(builder.out[name], dtype=np.int64) for name in _FIELDS}
    counts = dict(
        builder.counts, fast_path_groups=len(pick), slow_path_groups=int(len(heads) - len(pick))
    )
    return _merge_by_group(fast_part, slow_part), counts


def _merge_by_group(first: dict[str, I64], second: dict[str, I64]) -> dict[str, I64]:
    """Return the rows of both parts in ``group`` order (those of ``first`` first if equal).

    What a stable ``np.argsort`` of the two parts' ``group`` put one after the other gives. Each
    part is in group order (the fast groups in turn, the slow ones in turn), so each row's place
    is its place in its part plus the rows of the other part before it (a binary search): one
    array written per field, not a concatenation then a copy in order, and no sort.
    """
    a, b = first["group"], second["group"]
    if bool(np.any(a[1:] < a[:-1])) or bool(np.any(b[1:] < b[:-1])):  # not met: sort them
        merged = {name: np.concatenate([first[name], second[name]]) for name in first}
        by_group = np.argsort(merged["group"], kind="stable")
        return {name: values[by_group] for name, values in merged.items()}
    if not len(b):
        return first
    if not len(a):
        return second
    at_a = np.arange(len(a), dtype=np.int64) + np.searchsorted(b, a, side="left")
    at_b = np.arange(len(b), dtype=np.int64) + np.searchsorted(a, b, side="right")
    out: dict[str, I64] = {}
    for name in first:
        values = np.empty(len(a) + len(b), dtype=np.int64)
        values[at_a] = first[name]
        values[at_b] = second[name]
        out[name] = values
    return out


# --------------------------------------------------------------------------------------------
# the entry point


def assemble_torque_jobs(
    records: pa.Table,
    *,
    tz: str | None = None,
    unitless_memory: str = "b",
    naive: I64 | None = None,
) -> TorqueAssembly:
    r"""Assemble TORQUE/PBS ``records`` into ``jobs``, one row per execution attempt.

    Parameters
    ----------
    records : pyarrow.Table
        Schema :data:`gridtrace.schema.RECORDS`: the records of all files, in reading order
        (files ordered by the date in their names, lines in file order).
    tz : str, optional
        The site's IANA time zone, used to place records that carry only their local stamp.
        Without it the offset is inferred from the records that carry an epoch.
    unitless_memory : str, default "b"
        Unit of memory values logged without one (``b``, ``kb``, ``mb``, ``w``, ...).
    naive : numpy.ndarray of int64, optional
        The records' ``stamp`` column already read as :func:`file_stamps` reads it (a value per
        record, in their order), so that it is not read again.

    Returns
    -------
    TorqueAssembly
        The records with ``stamp_utc``, the jobs, the dominant offset and facts for the summary.

    Raises
    ------
    ConfigError
        For an unknown zone or memory unit.
    SchemaError
        If ``records`` does not have the ``records`` schema.

    Examples
    --------
    >>> from gridtrace.logs._torque_lines import tokenize_torque_reference
    >>> line = (
    ...     b"06/01/2016 00:09:15;E;7.srv;user=u queue=q ctime=1464732444 start=1464732494"
    ...     b" exec_host=n1/0-3 end=1464732555 Exit_status=0\n"
    ... )
    >>> records = tokenize_torque_reference(line, src_file="20160601", site="s").records
    >>> assembly = assemble_torque_jobs(records)
    >>> assembly.jobs.column("state").to_pylist(), assembly.tz_offset_s
    (['COMPLETED'], 7200)
    """
    unit = _memory_unit(unitless_memory)
    zone = _zone(tz)

    def place(naive: I64, epoch: I64, records: pa.Table) -> _Placement:
        return _place(naive, epoch, _segments(_array(records.column("src_file"))), zone)

    return _assemble(records, tz=tz, unit=unit, place=place, naive=naive)


def _memory_unit(unitless_memory: str) -> str:
    unit = unitless_memory.strip().lower()
    if unit not in pv.MEMORY_UNITS:
        known = ", ".join(sorted(pv.MEMORY_UNITS))
        raise ConfigError(f"unitless_memory {unitless_memory!r} is not one of: {known}")
    return unit


def _zone(tz: str | None) -> ZoneInfo | None:
    if tz is None:
        return None
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(f"unknown time zone {tz!r}: give an IANA name") from exc


def _stamps(
    records: pa.Table, keys: Sequence[str] = _KEYS, naive: I64 | None = None
) -> tuple[I64, Bool, _Attrs, I64, I64]:
    """Record type, truncated mask, attributes, naive local stamp and epoch of every record.

    ``naive``: the stamps already read (see :func:`file_stamps`), else read here.
    """
    record_flags = _array(records.column("flags"))
    truncated = _has_flag(record_flags, "TRUNCATED")
    # the last value of a cut-off line may itself be cut: it is not used
    cut_value = truncated & ~_ends_in_blank(records.column("raw"), truncated)
    epochs = [key for key in ("start", "end", "ctime") if key in keys]
    attrs = _Attrs.extract(records.column("attrs"), keys, drop_last=cut_value, epochs=epochs)
    type_names, type_codes = _codes(_array(records.column("record_type")))
    lookup = [_TYPE_CODES.get(str(t), 0) for t in type_names.to_pylist()]
    rtype = np.array([*lookup, 0], dtype=np.int64)[type_codes]
    attrs.read_epochs("start", "end", "ctime")
    if naive is None:
        naive = _naive_stamps(_array(records.column("stamp")))
    epoch = np.where(
        rtype == _E, attrs.epochs("end"), np.where(rtype == _S, attrs.epochs("start"), NA)
    )
    return rtype, truncated, attrs, naive, epoch


def _naive_stamps(stamps: Arr, kernel: bool | None = None) -> I64:
    """Each record's local stamp as naive seconds since the epoch (``NA`` where unreadable).

    With the kernel (large inputs, or ``kernel`` true) the stamps of the usual form are read in
    one pass and only the others by ``strptime``.
    """
    if kernel is None:
        kernel = use_kernel(len(stamps))
    read = _fast.local_stamps(stamps) if kernel else None
    if read is None:
        return _strptime(stamps)
    naive, done = read
    rest = _rows(~done)
    if len(rest):
        naive[rest] = _strptime(stamps.take(_index(rest)))
    return naive


def file_stamps(stamps: Chunked | Arr, *, kernel: bool) -> I64:
    """Return a file's local stamps as naive seconds (``NA`` where unreadable), chunk by chunk.

    ``kernel``: read the stamps of the usual form with the kernel (the files of a large log are
    each too small for :func:`use_kernel`, their sum is not); the others, and all of them
    without it, by ``strptime``. The same seconds either way, and those the assembly reads:
    given to :func:`assemble_torque_jobs` (``naive``), they are not read twice.
    """
    chunks = stamps.chunks if isinstance(stamps, pa.ChunkedArray) else [stamps]
    read = [_naive_stamps(chunk, kernel) for chunk in chunks if len(chunk)]
    return np.concatenate(read) if read else np.empty(0, dtype=np.int64)


def median_stamp(stamps: Chunked | Arr | I64, *, kernel: bool) -> float | None:
    """Return the median of a file's local stamps, naive seconds (None when none is readable).

    ``stamps``: the stamps (read as :func:`file_stamps` does, ``kernel`` as there), or the
    seconds it returned.
    """
    seconds = stamps if isinstance(stamps, np.ndarray) else file_stamps(stamps, kernel=kernel)
    seconds = seconds[seconds != NA]
    return float(np.median(seconds)) if len(seconds) else None


def _strptime(stamps: Arr) -> I64:
    stamp = pc.strptime(stamps, format=_STAMP_FORMAT, unit="s", error_is_null=True)
    return _np_int(cast(Arr, stamp).cast(pa.int64()))


def _assemble(
    records: pa.Table,
    *,
    tz: str | None,
    unit: str,
    place: Callable[[I64, I64, pa.Table], _Placement],
    naive: I64 | None = None,
) -> TorqueAssembly:
    records = _with_stamp_utc(records, pa.nulls(records.num_rows, RECORDS.field("stamp_utc").type))
    validate(records, RECORDS)
    n = records.num_rows
    if n == 0:
        info: dict[str, Any] = {"tz": tz, "tz_source": "given" if tz else None}
        return TorqueAssembly(records, JOBS.empty_table(), None, info)

    # -- per record: type, stamp, epochs, identity
    record_flags = _array(records.column("flags"))
    rtype, truncated, attrs, naive, epoch = _stamps(records, naive=naive)
    rec_start, rec_end, rec_ctime = (
        attrs.epochs("start"),
        attrs.epochs("end"),
        attrs.epochs("ctime"),
    )

    placement = place(naive, epoch, records)
    stamp_utc = np.where(placement.offset != NA, naive - placement.offset, NA)
    info = {"tz": tz, "tz_offset_s": placement.dominant, **placement.info}

    seq, index, parent, is_job, id_group, id_code = _job_ids(_array(records.column("job_id_raw")))
    is_job &= rtype != 0
    site_codes = np.asarray(_codes(_array(records.column("site")))[1], dtype=np.int64)
    n_attrs = np.concatenate(
        [np.diff(_map_parts(chunk)[0]) for chunk in records.column("attrs").chunks]
        or [np.zeros(0, dtype=np.int64)]
    )
    duplicate = _duplicate_lines(
        records, attrs, [site_codes, rtype, naive, id_code, rec_start, rec_end, n_attrs]
    )
    usable = is_job & ~duplicate
    info["duplicate_lines"] = int(np.count_nonzero(duplicate))
    info["truncated_records"] = int(np.count_nonzero(truncated))
    info["truncated_end_records"] = int(np.count_nonzero(truncated & is_job & (rtype == _E)))
    info["array_parent_records"] = int(np.count_nonzero(parent))
    info["records_without_job"] = int(np.count_nonzero(~is_job & ~parent))

    # -- job groups: (site, seq, index), numbered in order of first appearance
    combined = np.where(is_job, site_codes * (int(id_group.max()) + 2) + id_group, -1)
    group = _first_seen(combined[is_job])
    group_all = np.full(n, -1, dtype=np.int64)
    group_all[is_job] = group
    group_bits = np.zeros(int(group_all.max()) + 2, dtype=np.int64)
    np.bitwise_or.at(group_bits, group_all[is_job & duplicate], _B_DUPLICATE)
    used_rows = _rows(usable)
    order = used_rows[_stable_order(group_all[used_rows], len(group_bits))]
    attempts, counts = _attempts(
        order, group_all[order], rtype, rec_ctime, rec_start, rec_end, group_bits, truncated
    )
    info.update(counts)
    info["attempts"] = len(attempts["group"])
    info["duplicate_end_records"] = int(np.count_nonzero(attempts["dup"] >= 0))

    jobs, job_info = _jobs_table(
        records,
        attrs,
        attempts,
        seq=seq,
        index=index,
        stamp_utc=stamp_utc,
        offset=placement.offset,
        record_flags=placement.record_flags,
        line_flags={name: _has_flag(record_flags, name) for name in _RECORD_FLAGS_ON_JOBS},
        assumed_utc=placement.info.get("tz_source") == "assumed_utc",
        unit=unit,
    )
    info.update(job_info)

    # -- records: stamp_utc and the flags added here
    out_records = _with_stamp_utc(records, _to_arrow_time(stamp_utc))
    pieces = [("DUPLICATE", _rows(duplicate)), *placement.record_flags.items()]
    if any(len(rows) for _, rows in pieces):
        flags = _flags_array(n, pieces, base=record_flags)
        out_records = out_records.set_column(
            out_records.schema.get_field_index("flags"), RECORDS.field("flags"), flags
        )
    job_rows = _rows(is_job)
    first_rows = job_rows[_first_appearances(group)]
    return TorqueAssembly(
        out_records, jobs, placement.dominant, info, first_rows[attempts["group"]]
    )


def _stable_order(codes: I64, size: int) -> I64:
    """``np.argsort(codes, kind="stable")`` for codes in ``0 .. size - 1``.

    With the kernel (large inputs), a counting sort: one pass, no comparison sort.
    """
    if use_kernel(len(codes)):
        return _fast.stable_order(codes, size)
    return np.argsort(codes, kind="stable").astype(np.int64)


def _first_appearances(codes: I64) -> I64:
    """Where each code first appears, for codes numbered in order of first appearance.

    What ``np.unique(codes, return_index=True)[1]`` gives, in one pass instead of a sort: a
    code is new where it exceeds every code before it.
    """
    if not len(codes):
        return np.empty(0, dtype=np.int64)
    before = np.empty(len(codes), dtype=codes.dtype)
    before[0] = -1
    np.maximum.accumulate(codes[:-1], out=before[1:])
    return _rows(codes > before)


def _ends_in_blank(raw: Chunked | Arr, rows: Bool) -> Bool:
    """Whether the raw line of each of ``rows`` ends in a space or tab (its last value is whole).

    The lines are taken from the column as it is (its chunks are not combined: a copy of every
    line to read a few).
    """
    out = np.zeros(len(rows), dtype=bool)
    picked = _rows(rows)
    if not len(picked):
        return out
    for row, line in zip(picked.tolist(), raw.take(_index(picked)).to_pylist(), strict=True):
        out[row] = line is not None and line.rstrip(b"\r")[-1:] in (b" ", b"\t")
    return out


def _with_stamp_utc(records: pa.Table, values: Arr) -> pa.Table:
    """Put ``values`` in the ``stamp_utc`` column (added in schema order if missing)."""
    field = RECORDS.field("stamp_utc")
    if field.name in records.column_names:
        return records.set_column(records.schema.get_field_index(field.name), field, values)
    return records.add_column(RECORDS.get_field_index(field.name), field, values)


def _jobs_table(
    records: pa.Table,
    attrs: _Attrs,
    att: dict[str, I64],
    *,
    seq: I64,
    index: I64,
    stamp_utc: I64,
    offset: I64,
    record_flags: dict[str, I64],
    line_flags: dict[str, Bool],
    assumed_utc: bool,
    unit: str,
) -> tuple[pa.Table, dict[str, Any]]:
    """Gather, parse and classify the attributes of every attempt."""
    n_att = len(att["group"])
    if n_att == 0:
        return JOBS.empty_table(), {"jobs": 0, "jobs_by_state": {}}
    kind, primary, dup, s_row = att["kind"], att["primary"], att["dup"], att["s"]
    bits = att["bits"]
    closed_by_e = kind == _K_E
    # an attempt closed by a cut-off E takes what the E lost from its S record
    cut_e = closed_by_e & line_flags["TRUNCATED"][primary]
    # timing and usage: E + its duplicate, else S
    own_second = np.where(closed_by_e & ~cut_e, dup, s_row)
    pieces: _Problems = []
    for name, marked in line_flags.items():
        pieces.append((name, _rows(_used_records_have(marked, primary, dup, s_row, att["last_q"]))))
    from_s = np.zeros(n_att, dtype=bool)
    cut_rows = _rows(cut_e)  # few: only their keys are looked up
    for key in _FROM_S_KEYS:
        missing = attrs.positions(key, primary[cut_rows]) < 0
        from_s[cut_rows[missing & (attrs.positions(key, s_row[cut_rows]) >= 0)]] = True
    pieces.append(("FROM_S_RECORD", _rows(from_s)))

    # the kernels visit the attempts in their records' order (their values' order in memory)
    visit = _fast.visits(primary) if attrs.kernel else None
    # the two source lists most keys are read from: their positions gathered row by row
    attrs.gather_rows(primary, own_second, order=visit)
    attrs.gather_rows(primary, dup, s_row, order=visit)

    def sources(key: str) -> tuple[I64, ...]:
        if key in _OWN_KEYS:
            return primary, own_second
        if key == "queue":
            return primary, dup, s_row, att["last_q"]
        return primary, dup, s_row

    # the text attributes of every attempt, gathered row by row when the kernel is used
    strings: dict[str, Arr] = {}
    if attrs.kernel:
        text_positions = np.empty(
            (len(_STRING_KEYS), n_att),
            dtype=attrs.table.dtype if attrs.table is not None else np.int64,
        )
        for k, key in enumerate(_STRING_KEYS):
            text_positions[k] = attrs.positions(key, *sources(key))
        gathered = _fast.gather_strings(attrs.values, text_positions, visit)
        if gathered is not None:
            strings = dict(zip(_STRING_KEYS, gathered, strict=True))
        del text_positions

    def gather(key: str) -> Arr:
        if key in strings:
            return strings[key]
        return attrs.get(key, *sources(key))

    # the numbers of every attempt, read in place row by row when the kernel is used
    in_place: dict[str, I64] = {}
    if attrs.kernel:
        width = attrs.table.dtype if attrs.table is not None else np.int64
        positions = np.empty((n_att, len(_NUMBER_MODES)), dtype=width)
        for k, key in enumerate(_NUMBER_MODES):
            positions[:, k] = attrs.positions(key, *sources(key))
        in_place = attrs.numbers(positions, _NUMBER_MODES, visit)
        del positions

    def numbers(key: str, mode: int) -> I64 | None:
        """``key`` read in place by the kernel (as ``mode`` says), or None: from its strings."""
        assert _NUMBER_MODES[key] == mode
        return in_place.get(key)

    def ints(key: str, within: tuple[int, int] = _INT32_RANGE) -> I64:
        read = numbers(key, _fast.INTEGER)
        if read is not None:
            values, bad = _bounded(read, np.zeros(len(read), dtype=bool), within)
        else:
            values, bad = _ints(gather(key), within)
        pieces.append((f"VALUE_UNREADABLE:{key}", _rows(bad)))
        return values

    def problems(key: str, found: dict[str, I64], negative: str = "") -> None:
        pieces.append((f"VALUE_UNREADABLE:{key}", found.get("unreadable", _NONE)))
        pieces.append((negative or f"VALUE_UNREADABLE:{key}", found.get("negative", _NONE)))
        pieces.append(("UNIT_NONSTANDARD", found.get("nonstandard", _NONE)))
        pieces.append(("UNIT_GUESSED", found.get("guessed", _NONE)))

    def duration(key: str, negative: str) -> I64:
        read = numbers(key, _fast.DURATION)
        if read is not None:
            return read
        values, found = _durations(gather(key))
        problems(key, found, negative)
        return values

    def memory(key: str) -> I64:
        read = numbers(key, _fast.MEMORY)
        if read is not None:
            return read
        values, found = _memory(gather(key), unit)
        problems(key, found)
        return values

    # -- times
    ctime = _first(ints("ctime", STAMP_RANGE_S), att["ctime"])
    qtime, etime = ints("qtime", STAMP_RANGE_S), ints("etime", STAMP_RANGE_S)
    start, end = ints("start", STAMP_RANGE_S), ints("end", STAMP_RANGE_S)
    exit_status = ints("Exit_status")
    start = np.where(start > 0, start, NA)
    end = np.where(end > 0, end, NA)
    first_q = att["first_q"]
    q_stamp = np.where(first_q >= 0, stamp_utc[np.maximum(first_q, 0)], NA)
    submit_from_stamp = (ctime == NA) & (q_stamp != NA)
    submit = np.where(submit_from_stamp, q_stamp, ctime)
    started = start != NA
    by_a_or_d = (kind == _K_A) | (kind == _K_D)
    # attempts that end without an epoch: R (unless it logs ``end``), A and D after a start,
    # and a cut-off E, whose stamp is its end
    stamp_end = ((kind == _K_R) & (end == NA)) | (by_a_or_d & started) | (cut_e & (end == NA))
    end = np.where(stamp_end, stamp_utc[primary], end)
    end = np.where((kind == _K_S) | (kind == _K_Q) | (by_a_or_d & ~started), NA, end)
    stamp_end &= end != NA
    from_stamp = submit_from_stamp | stamp_end
    pieces.append(("END_FROM_STAMP", _rows(cut_e & stamp_end)))
    pieces.append(("SUBMIT_UNKNOWN", _rows(submit == NA)))

    # -- resources
    walltime_used = duration("resources_used.walltime", "NEG_WALLTIME")
    walltime_req = duration("Resource_List.walltime", "NEG_WALLTIME")
    cput = duration("resources_used.cput", "NEG_CPUTIME")
    mem_used = memory("resources_used.mem")
    vmem_used = memory("resources_used.vmem")
    mem_req = memory("Resource_List.mem")
    pmem = memory("Resource_List.pmem")
    nodes_req, cores_req, gpus_req, select_mem = _requests(gather, ints, pieces, unit)
    pieces.append(("MEM_REQ_CONFLICT", _rows(_disagree(mem_req, select_mem))))
    mem_req = _first(mem_req, select_mem)
    use_pmem = (mem_req == NA) & (pmem != NA) & (cores_req != NA)
    mem_req = np.where(use_pmem, pmem * np.where(use_pmem, cores_req, 0), mem_req)
    pieces.append(("MEM_FROM_PMEM", _rows(use_pmem)))
    hosts, nodes_alloc, cores_alloc, gpus_alloc, has_exec = _allocation(gather, ints, pieces)
    gpus_guess = (gpus_alloc == NA) & has_exec & (gpus_req != NA) & (gpus_req > 0)
    gpus_alloc = np.where(gpus_guess, gpus_req, gpus_alloc)
    pieces.append(("GPUS_ALLOC_FROM_REQUEST", _rows(gpus_guess)))
    differs = (cores_alloc != NA) & (cores_req != NA) & (cores_alloc != cores_req)
    pieces.append(("CORES_REQ_MISMATCH", _rows(differs)))

    # -- exit status and state
    exit_known = exit_status != NA
    status = np.where(exit_known, exit_status, 0)
    inferred = exit_known & (status > 128) & (status < 256)
    signal = np.where(status > 256, status - 256, np.where(inferred, status - 128, NA))
    pieces.append(("SIGNAL_INFERRED", _rows(inferred)))
    deleted_seen = (bits & _B_DELETED) != 0
    never_started = closed_by_e & ~started & has_exec
    exec_failed = closed_by_e & started & ~has_exec & exit_known & (status < 0)
    ran = started & (end != NA) & ~never_started & ~exec_failed
    run_s = np.where(ran, end - start, NA)
    used = _first(walltime_used, run_s)
    over_limit = (signal != NA) & (used != NA) & (walltime_req != NA) & (used >= walltime_req)
    e_state = np.select(
        [
            ~started & ~has_exec,
            never_started | exec_failed,
            (status == -11) | over_limit,
            deleted_seen,
            ~exit_known,
            status == 0,
        ],
        _state_codes("DELETED", "FAILED", "TIMEOUT", "CANCELLED", "UNKNOWN", "COMPLETED"),
        default=_STATE_CODE["FAILED"],
    )
    other_state = np.select(
        [
            kind == _K_R,
            by_a_or_d & ~started,
            by_a_or_d & deleted_seen,
            kind == _K_A,
            kind == _K_S,
        ],
        _state_codes("REQUEUED", "DELETED", "CANCELLED", "FAILED", "RUNNING"),
        default=_STATE_CODE["PENDING"],
    )
    # a cut-off E without a start: whether the job ran is not known
    no_start_logged = attrs.positions("start", primary, own_second) < 0
    e_state = np.where(cut_e & no_start_logged, _STATE_CODE["UNKNOWN"], e_state)
    state = np.where(closed_by_e, e_state, other_state)
    timeout_inferred = closed_by_e & (e_state == _STATE_CODE["TIMEOUT"]) & (status != -11)
    pieces.append(("TIMEOUT_INFERRED", _rows(timeout_inferred)))
    state = np.where((bits & _B_LATER) != 0, _STATE_CODE["REQUEUED"], state)
    pieces.append(("NEVER_STARTED", _rows(never_started)))
    pieces.append(("EXEC_FAILED", _rows(exec_failed)))
    no_exit = closed_by_e & started & ~exit_known
    pieces.append(("NO_EXIT_STATUS", _rows(no_exit)))
    pieces.append(("NO_END_RECORD", _rows(~closed_by_e & (kind != _K_R))))

    # -- durations
    backwards = (run_s != NA) & (run_s < 0)
    run_s = np.where(backwards, NA, run_s)
    pieces.append(("END_BEFORE_START", _rows(backwards)))
    wait_s = np.where(started & (submit != NA), start - submit, NA)
    pieces.append(("START_BEFORE_SUBMIT", _rows((wait_s != NA) & (wait_s < 0))))
    both = (walltime_used != NA) & (run_s != NA)
    gap = np.abs(np.where(both, walltime_used - run_s, 0))
    pieces.append(("WALLTIME_MISMATCH", _rows(both & (gap > _WALLTIME_TOLERANCE_S))))

    # -- stamps used for times, and their zone flags
    pieces.append(("TIME_FROM_STAMP", _rows(from_stamp)))
    if assumed_utc:
        pieces.append(("TZ_ASSUMED_UTC", _rows(from_stamp)))
    stamp_rows = np.concatenate([primary[stamp_end], first_q[submit_from_stamp]])
    stamp_attempts = np.concatenate([_rows(stamp_end), _rows(submit_from_stamp)])
    for name in ("DST_AMBIGUOUS", "DST_GAP"):
        marked = np.zeros(len(offset), dtype=bool)
        marked[record_flags.get(name, _NONE)] = True
        pieces.append((name, _distinct(stamp_attempts[marked[stamp_rows]])))

    # -- identity and text columns
    account = gather("account")
    project = gather("project")
    not_default = pc.not_equal(project, pa.scalar(_PBS_DEFAULT_PROJECT))
    from_project = _mask(pc.and_(pc.is_null(account), not_default))
    pieces.append(("ACCOUNT_FROM_PROJECT", _rows(from_project)))
    account = pc.coalesce(account, pc.if_else(not_default, project, None))
    site = _take_rows(records.column("site"), primary)
    job_seq, array_index = seq[primary], index[primary]
    key_submit = _first(att["ctime"], submit)
    index_text = _to_arrow_int(array_index, pa.int64()).cast(pa.string())
    job_key = _join(
        site,
        ":",
        _to_arrow_int(job_seq, pa.int64()).cast(pa.string()),
        pc.if_else(pc.is_null(index_text), _EMPTY_TEXT, _join("[", index_text, "]")),
        "@",
        cast(Arr, pc.fill_null(_to_arrow_int(key_submit, pa.int64()).cast(pa.string()), _UNKNOWN)),
    )
    end_type = pa.array(_END_TYPES[kind].tolist(), pa.string())
    state_totals = np.bincount(state, minlength=len(_STATES))
    pieces = [(name, _rows((bits & bit) != 0)) for bit, name in _BIT_FLAGS] + pieces
    flags = _flags_array(n_att, _order_flags(pieces))
    columns: dict[str, Arr] = {
        "site": site,
        "source_format": _take_rows(records.column("source_format"), primary),
        "job_key": job_key,
        "job_id_raw": _take_rows(records.column("job_id_raw"), primary),
        "job_seq": _to_arrow_int(job_seq, pa.int64()),
        "array_index": _to_arrow_int(array_index, pa.int32()),
        "attempt": _from_numpy(att["number"], pa.int64()).cast(pa.int16()),  # checked
        "n_attempts": _from_numpy(att["total"], pa.int64()).cast(pa.int16()),
        "user": gather("user"),
        "group": gather("group"),
        "account": account,
        "vo": pa.nulls(n_att, pa.string()),
        "queue": gather("queue"),
        "job_name": gather("jobname"),
        "submit_time": _to_arrow_time(submit),
        "queue_time": _to_arrow_time(np.where(qtime > 0, qtime, NA)),
        "eligible_time": _to_arrow_time(np.where(etime > 0, etime, NA)),
        "start_time": _to_arrow_time(start),
        "end_time": _to_arrow_time(end),
        "wait_s": _to_arrow_int(wait_s, pa.int64()),
        "run_s": _to_arrow_int(run_s, pa.int64()),
        "walltime_used_s": _to_arrow_int(walltime_used, pa.int64()),
        "walltime_req_s": _to_arrow_int(walltime_req, pa.int64()),
        "cpu_time_s": _to_arrow_int(cput, pa.float64()),
        "nodes_req": _to_arrow_int(nodes_req, pa.int32()),
        "cores_req": _to_arrow_int(cores_req, pa.int32()),
        "gpus_req": _to_arrow_int(gpus_req, pa.int32()),
        "nodes_alloc": _to_arrow_int(nodes_alloc, pa.int32()),
        "cores_alloc": _to_arrow_int(cores_alloc, pa.int32()),
        "gpus_alloc": _to_arrow_int(gpus_alloc, pa.int32()),
        "exec_hosts": hosts,
        "partition": pa.nulls(len(primary), pa.string()),  # TORQUE has one server, no partitions
        "mem_req_bytes": _to_arrow_int(mem_req, pa.int64()),
        "mem_used_bytes": _to_arrow_int(mem_used, pa.int64()),
        "vmem_used_bytes": _to_arrow_int(vmem_used, pa.int64()),
        "exit_code": _to_arrow_int(exit_status, pa.int32()),
        "exit_signal": _to_arrow_int(signal, pa.int32()),
        "state": _strings(_STATES).take(_index(state)),
        "end_record_type": pc.if_else(pc.equal(end_type, _EMPTY_TEXT), _NULL_TEXT, end_type),
        "tz_offset_s": _to_arrow_int(offset[primary], pa.int32()),
        "src_file": _take_rows(records.column("src_file"), primary),
        "src_line": _take_rows(records.column("src_line"), primary),
        "flags": flags,
    }
    table = pa.Table.from_arrays([columns[f.name] for f in JOBS], schema=JOBS)
    attrs.forget_rows()
    return table, {
        # the distinct keys (what count_distinct counts, without nulls; a third of its time)
        "jobs": len(pc.unique(job_key)) - (1 if job_key.null_count else 0),
        # by name, as the codes are numbered
        "jobs_by_state": {
            _STATES[code]: int(state_totals[code]) for code in np.flatnonzero(state_totals)
        },
    }


_NONE = np.empty(0, dtype=np.int64)


def _state_codes(*names: str) -> list[int]:
    return [_STATE_CODE[name] for name in names]


_NULL_TEXT = pa.scalar(None, pa.string())
_EMPTY_TEXT = pa.scalar("", pa.string())
_UNKNOWN = pa.scalar("unknown", pa.string())


def _used_records_have(marked: Bool, *sources: I64) -> Bool:
    """Whether one of the ``sources`` rows (−1: none) of each attempt is ``marked``."""
    out = np.zeros(len(sources[0]), dtype=bool)
    if not marked.any():
        return out
    for rows in sources:
        out |= (rows >= 0) & marked[np.maximum(rows, 0)]
    return out


def _disagree(*sources: I64) -> Bool:
    """Rows where two of the known (non-``NA``) values of ``sources`` differ."""
    stacked = np.vstack(sources)
    known = stacked != NA
    big = np.iinfo(np.int64).max
    low = np.where(known, stacked, big).min(axis=0)
    high = np.where(known, stacked, NA).max(axis=0)
    disagree: Bool = (known.sum(axis=0) >= 2) & (low != high)
    return disagree


def _order_flags(pieces: _Problems) -> _Problems:
    """Merge the pieces of each flag and order them as :data:`JOB_FLAGS` lists them."""
    merged: dict[str, list[I64]] = {}
    for name, rows in pieces:
        if len(rows):
            merged.setdefault(name, []).append(rows)
    rank = {name: i for i, name in enumerate(JOB_FLAGS)}

    def position(name: str) -> tuple[int, str]:
        return rank.get(name.split(":", 1)[0], len(rank)), name

    return [
        (name, _distinct(np.concatenate(merged[name]))) for name in sorted(merged, key=position)
    ]


def _requests(
    gather: Callable[[str], Arr],
    ints: Callable[[str], I64],
    pieces: _Problems,
    unit: str,
) -> tuple[I64, I64, I64, I64]:
    """nodes_req, cores_req, gpus_req and the ``select`` memory of every attempt."""
    nodes_text = pc.coalesce(gather("Resource_List.nodes"), gather("Resource_List.neednodes"))
    nodect_text = gather("Resource_List.nodect")
    nodect, nodect_bad = _ints(nodect_text, _INT32_RANGE)
    spec_like = _mask(pc.match_substring_regex(nodect_text, r"^\d+:"))
    from_nodect = nodect_bad & spec_like & _mask(pc.is_null(nodes_text))
    nodes_text = pc.if_else(_bools(from_nodect), nodect_text, nodes_text)
    pieces.append(("NODESPEC_FROM_NODECT", _rows(from_nodect)))
    pieces.append(("VALUE_UNREADABLE:Resource_List.nodect", _rows(nodect_bad & ~from_nodect)))
    spec, spec_codes = _map_unique(nodes_text, pv.parse_nodes_spec)

    def select_parse(text: str) -> pv.NodeRequest | None:
        return pv.parse_select(text, unit)

    select, select_codes = _map_unique(gather("Resource_List.select"), select_parse)
    unparsed = _hits([r is None for r in spec], spec_codes)
    unparsed |= _hits([r is None for r in select], select_codes)
    pieces.append(("NODESPEC_UNPARSED", _rows(unparsed)))
    for problem, flag in (("nonstandard", "UNIT_NONSTANDARD"), ("guessed", "UNIT_GUESSED")):
        hit = [r is not None and r.mem_problem == problem for r in select]
        pieces.append((flag, _rows(_hits(hit, select_codes))))

    def field(
        results: Sequence[pv.NodeRequest | None], codes: npt.NDArray[np.intp], name: str
    ) -> I64:
        return _lookup([None if r is None else getattr(r, name) for r in results], codes)

    # each value is the first source that has one; where sources disagree, the flag says so
    nodes_sources = (
        field(spec, spec_codes, "nodes"),
        np.where(nodect > 0, nodect, NA),
        field(select, select_codes, "nodes"),
    )
    cores_sources = (
        field(spec, spec_codes, "cores"),
        field(select, select_codes, "cores"),
        ints("Resource_List.procs"),
        ints("Resource_List.ncpus"),
    )
    gpus_sources = (
        ints("Resource_List.ngpus"),
        ints("Resource_List.gpus"),
        ints("Resource_List.gpu"),
        field(select, select_codes, "gpus"),
        field(spec, spec_codes, "gpus"),
    )
    select_mem = field(select, select_codes, "mem_bytes")
    pieces.append(("NODES_REQ_CONFLICT", _rows(_disagree(*nodes_sources))))
    pieces.append(("CORES_REQ_CONFLICT", _rows(_disagree(*cores_sources))))
    # a spec or select without gpus= asks for none: only a number it states can disagree
    stated_gpus = [np.where(g > 0, g, NA) for g in gpus_sources[3:]]
    pieces.append(("GPUS_REQ_CONFLICT", _rows(_disagree(*gpus_sources[:3], *stated_gpus))))
    return _first(*nodes_sources), _first(*cores_sources), _first(*gpus_sources), select_mem


def _allocation(
    gather: Callable[[str], Arr],
    ints: Callable[[str], I64],
    pieces: _Problems,
) -> tuple[Arr, I64, I64, I64, Bool]:
    """exec_hosts, nodes_alloc, cores_alloc, gpus_alloc and whether an exec_host was logged."""
    host_text = gather("exec_host")
    n = len(host_text)
    has_exec = _mask(pc.is_valid(host_text))
    host_rows, host_names, host_cores, simple = _simple_exec_hosts(host_text)
    # the other forms (index lists, PBS Pro counts, a host named twice): one string at a time
    other = _rows(has_exec & ~simple)
    host, host_codes = _map_unique(host_text.take(_index(other)), pv.parse_exec_host)
    bad_host = other[_hits([r is None for r in host], host_codes)]
    pieces.append(("VALUE_UNREADABLE:exec_host", bad_host))
    host_cores[other] = _lookup([r.cores if r else None for r in host], host_codes)
    # more slots than a count column holds (int32) is no allocation: the count is not used
    host_beyond = _rows(host_cores > _INT32_RANGE[1])
    host_cores[host_beyond] = NA
    pieces.append(("VALUE_UNREADABLE:exec_host", host_beyond))
    vnode, vnode_codes = _map_unique(gather("exec_vnode"), pv.parse_exec_vnode)
    bad_vnode = _rows(_hits([r is None for r in vnode], vnode_codes))
    pieces.append(("VALUE_UNREADABLE:exec_vnode", bad_vnode))
    vnode_cores = _lookup([r.cores if r and r.cores else None for r in vnode], vnode_codes)
    vnode_beyond = _rows(vnode_cores > _INT32_RANGE[1])
    vnode_cores[vnode_beyond] = NA
    pieces.append(("VALUE_UNREADABLE:exec_vnode", vnode_beyond))
    cores_sources = (
        vnode_cores,
        np.where(host_cores > 0, host_cores, NA),
        ints("total_execution_slots"),
        ints("resources_used.ncpus"),
    )
    cores = _first(*cores_sources)
    pieces.append(("CORES_CONFLICT", _rows(_disagree(*cores_sources))))
    gpus = _lookup([None if r is None else r.gpus for r in vnode], vnode_codes)
    # host lists: the simple ones, the others, then exec_vnode's for rows without exec_host
    rows_parts = [host_rows]
    name_parts: list[list[str]] = []
    for row, code in zip(other.tolist(), host_codes.tolist(), strict=True):
        hosts = host[code].hosts if host[code] is not None else ()
        rows_parts.append(np.full(len(hosts), row, dtype=np.int64))
        name_parts.append(list(hosts))
    vnode_only = _rows(~has_exec & (vnode_codes >= 0))
    for row in vnode_only.tolist():
        result = vnode[vnode_codes[row]]
        hosts = result.hosts if result is not None else ()
        rows_parts.append(np.full(len(hosts), row, dtype=np.int64))
        name_parts.append(list(hosts))
    rows_all = np.concatenate(rows_parts)
    names = pa.concat_arrays(
        [host_names, pa.array([h for part in name_parts for h in part], pa.string())]
    )
    order = np.argsort(rows_all, kind="stable")
    counts = np.bincount(rows_all, minlength=n)
    listed = has_exec.copy()
    listed[vnode_only] = True
    listed[bad_host] = False
    hosts_array = _lists(counts, names.take(_index(order)), ~listed)
    node_sources = (np.where(listed, counts, NA), ints("unique_node_count"))
    nodes = _first(*node_sources)
    pieces.append(("NODES_CONFLICT", _rows(_disagree(*node_sources))))
    return hosts_array, nodes, cores, gpus, has_exec


_EXEC_HOST_CHUNK = r"^(?P<h>[!-.0-~]+)/(?P<s>[0-9,*\-]+)$"  # printable ASCII hosts
_EXEC_HOST_ITEM = r"^(?P<lo>[0-9]{1,9})(?:(?P<op>[-*])(?P<hi>[0-9]{1,9}))?$"
_EXEC_HOST_FAST = True
"""Read exec_host with array operations (tests turn it off to compare with the parser)."""


def _split_flat(text: Arr, separator: str) -> tuple[Arr, I64]:
    """Split each string on ``separator``: the pieces, and the row each piece comes from."""
    offsets, flat = _list_parts(pc.split_pattern(text, separator))
    parent = np.repeat(np.arange(len(text), dtype=np.int64), np.diff(offsets))
    return flat, parent


def _fast_exec_hosts(text: Arr) -> tuple[I64, Arr, I64, Bool]:
    """Read the ``exec_host`` values of :func:`pv.parse_exec_host`'s syntax, vectorised.

    ``host/slots+host/slots...`` where each slot is an index, a range ``i-j`` or a count
    ``i*n``, comma-separated, ASCII digits; the cores are the distinct (host, index) pairs
    plus the counts, the hosts the distinct ones in order. Rows in another form (whitespace,
    long numbers, empty parts, a backwards range) are left to the parser. Returns the (row,
    host) pairs of the rows read, their cores (``NA`` elsewhere) and which rows they are.
    """
    n = len(text)
    chunks, parent = _split_flat(text, "+")
    found = pc.extract_regex(chunks, _EXEC_HOST_CHUNK)
    chunk_ok = _mask(pc.is_valid(found))
    slots = cast(Arr, pc.struct_field(found, "s"))
    items, item_chunk = _split_flat(slots, ",")
    parsed = pc.extract_regex(items, _EXEC_HOST_ITEM)
    item_ok = _mask(pc.is_valid(parsed))
    low = _np_int(cast(Arr, pc.struct_field(parsed, "lo")).cast(pa.int64()))
    op = cast(Arr, pc.struct_field(parsed, "op"))
    is_count = _mask(pc.equal(op, pa.scalar("*")))
    is_range = _mask(pc.equal(op, pa.scalar("-")))
    high_text = pc.if_else(pc.equal(op, _EMPTY_TEXT), _NULL_TEXT, pc.struct_field(parsed, "hi"))
    high = _first(_np_int(cast(Arr, high_text).cast(pa.int64())), low)
    item_ok &= ~is_range | (high >= low)
    item_row = parent[item_chunk]
    bad_rows = np.bincount(parent, weights=~chunk_ok, minlength=n) > 0
    bad_rows |= np.bincount(item_row, weights=~item_ok, minlength=n) > 0
    good = _mask(pc.is_valid(text)) & ~bad_rows
    names = cast(Arr, pc.struct_field(found, "h"))
    _, host_code = _codes(names)
    # cores: the union of each (row, host)'s index ranges, plus the counts
    counted = np.bincount(item_row, weights=np.where(is_count & item_ok, high, 0), minlength=n)
    use = _rows(item_ok & ~is_count & good[item_row])
    row_u, host_u, low_u, high_u = item_row[use], host_code[item_chunk[use]], low[use], high[use]
    sort = np.lexsort((low_u, host_u, row_u))
    row_u, host_u, low_u, high_u = row_u[sort], host_u[sort], low_u[sort], high_u[sort]
    new_group = np.ones(len(sort), dtype=bool)
    new_group[1:] = (row_u[1:] != row_u[:-1]) | (host_u[1:] != host_u[:-1])
    group = np.cumsum(new_group) - 1
    lift = group * np.int64(1 << 31)  # high < 2**30: a running max that restarts per group
    reach = np.maximum.accumulate(high_u + lift) - lift
    previous = np.full(len(sort), -1, dtype=np.int64)
    previous[1:] = reach[:-1]
    previous[new_group] = -1
    added = np.maximum(0, high_u - np.maximum(low_u - 1, previous))
    cores = np.bincount(row_u, weights=added, minlength=n) + counted
    # hosts: each (row, host) once, in order of appearance
    keep = _rows(good[parent] & ~duplicated(parent, host_code))
    return (
        parent[keep],
        names.take(_index(keep)),
        np.where(good, cores.astype(np.int64), NA),
        good,
    )


def _simple_exec_hosts(text: Arr) -> tuple[I64, Arr, I64, Bool]:
    """Read the ``host/i`` and ``host/i-j`` chains with distinct hosts, vectorised.

    Returns the (row, host) pairs of those rows in order, their cores per row (``NA``
    elsewhere) and which rows they are. With :data:`_EXEC_HOST_FAST` (the default) the other
    forms of :func:`_fast_exec_hosts` are read too (by the kernel from
    :data:`~gridtrace.logs._torque_jobs_fast.EXEC_HOST_KERNEL_ROWS` values); the chains those
    leave (a host with a non-ASCII or blank character) are read by :func:`_chains`, as before.
    """
    if not _EXEC_HOST_FAST:
        return _chains(text)
    read = None
    if HAVE_NUMBA and len(text) >= _fast.EXEC_HOST_KERNEL_ROWS:
        read = _fast.exec_hosts(text)
    if read is None:
        read = _fast_exec_hosts(text)
    rows, names, cores, done = read
    cores = np.where(done, cores, NA)
    # the chains the fast paths leave (non-ASCII or blank in a host) are read as they always
    # were: with their hosts as logged
    left = _rows(_mask(pc.is_valid(text)) & ~done)
    if not len(left):
        return rows, names, cores, done
    more_rows, more_names, more_cores, more_done = _chains(text.take(_index(left)))
    done[left] = more_done
    cores[left] = np.where(more_done, more_cores, cores[left])
    all_rows = np.concatenate([rows, left[more_rows]])
    order = np.argsort(all_rows, kind="stable")
    return all_rows[order], pa.concat_arrays([names, more_names]).take(_index(order)), cores, done


def _chains(text: Arr) -> tuple[I64, Arr, I64, Bool]:
    """Read the ``host/i`` and ``host/i-j`` chains with distinct hosts, with regular expressions.

    What :func:`_simple_exec_hosts` returns, for these forms only.
    """
    n = len(text)
    parts = pc.split_pattern(text, "+")
    offsets = np.asarray(parts.offsets.to_numpy(), dtype=np.int64)
    flat = parts.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    parent = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
    found = pc.extract_regex(flat, r"^(?P<h>[^/,*]+)/(?P<lo>\d{1,6})(?:-(?P<hi>\d{1,6}))?$")
    ok = _mask(pc.is_valid(found))
    low = _np_int(
        cast(Arr, pc.if_else(_bools(ok), pc.struct_field(found, "lo"), None)).cast(pa.int64())
    )
    high_text = pc.struct_field(found, "hi")
    high_text = pc.if_else(
        pc.and_(_bools(ok), pc.not_equal(high_text, _EMPTY_TEXT)), high_text, _NULL_TEXT
    )
    high = _first(_np_int(cast(Arr, high_text).cast(pa.int64())), low)
    ok &= high >= low
    names = pc.if_else(_bools(ok), pc.struct_field(found, "h"), None)
    name_codes = np.asarray(pc.fill_null(pc.dictionary_encode(names).indices, -1).to_numpy())
    repeated = duplicated(parent, name_codes)
    bad = np.bincount(parent, weights=~ok | repeated, minlength=n) > 0
    simple = _mask(pc.is_valid(text)) & ~bad
    cores = np.bincount(parent, weights=np.where(ok, high - low + 1, 0), minlength=n)
    keep = simple[parent]
    return (
        parent[keep],
        names.filter(_bools(keep)),
        np.where(simple, cores.astype(np.int64), NA),
        simple,
    )


# --------------------------------------------------------------------------------------------
# out-of-core assembly (gridtrace.logs._spill): the same steps, split where they are global


@dataclass(frozen=True)
class FileOffsets:
    """The placement of one file's records, as far as the file alone gives it.

    Attributes
    ----------
    offset : numpy.ndarray
        Per record: the offset measured or carried along the file; ``NA`` for an unreadable
        stamp; a sentinel where the file measured none and no zone was given (the dominant
        offset of the whole log is used, which only the whole log gives).
    dst : numpy.ndarray
        Per record: 1 for an ambiguous (fall-back) stamp, 2 for a skipped (spring-forward) one.
    facts : dict
        JSON-able counts to merge over files with :func:`merge_placement`.
    """

    offset: I64
    dst: npt.NDArray[np.int8]
    facts: dict[str, Any]


def measure_file_offsets(records: pa.Table, tz: str | None) -> FileOffsets:
    """Place the records of one file (the first, streaming pass of the spill path).

    What :func:`assemble_torque_jobs` does over the whole log is per file (the offset is carried
    along each file's lines), except the fallback to the dominant offset: that is merged from
    the ``facts`` of every file (:func:`merge_placement`) and applied per partition.
    """
    zone = _zone(tz)
    n = records.num_rows
    if n == 0:
        measured = _Measured(
            np.empty(0, dtype=np.int64), _NONE, _NONE, 0, {}, 0 if zone is not None else None
        )
    else:
        _, _, _, naive, epoch = _stamps(records, ("start", "end"))
        measured = _measure(naive, epoch, np.zeros(n, dtype=np.int64), zone)
    dst = np.zeros(n, dtype=np.int8)
    dst[measured.flags.get("DST_AMBIGUOUS", _NONE)] = 1
    dst[measured.flags.get("DST_GAP", _NONE)] = 2
    facts = {
        "offsets": [
            [int(v), int(c)] for v, c in zip(measured.values, measured.counts, strict=True)
        ],
        "outliers": measured.outliers,
        "mismatches": measured.mismatches or 0,
        "ambiguous": int(np.count_nonzero(dst == 1)),
        "gap": int(np.count_nonzero(dst == 2)),
    }
    return FileOffsets(measured.offset, dst, facts)


def merge_placement(
    facts: Sequence[dict[str, Any]], tz: str | None
) -> tuple[int | None, dict[str, Any]]:
    """Return the dominant offset and the summary's placement facts, from every file's facts.

    Sums of per-file counts: exactly what :func:`assemble_torque_jobs` counts over the whole log.
    """
    totals: dict[int, int] = {}
    for fact in facts:
        for value, count in fact["offsets"]:
            totals[value] = totals.get(value, 0) + count
    values = np.array(sorted(totals), dtype=np.int64)
    counts = np.array([totals[v] for v in sorted(totals)], dtype=np.int64)
    info = _placement_info(
        values,
        counts,
        sum(f["outliers"] for f in facts),
        zone_given=tz is not None,
        mismatches=sum(f["mismatches"] for f in facts),
        ambiguous=sum(f["ambiguous"] for f in facts),
        gap=sum(f["gap"] for f in facts),
    )
    return _dominant(values, counts), info


def assemble_torque_partition(
    records: pa.Table,
    offset: I64,
    dst: npt.NDArray[np.int8],
    *,
    tz: str | None,
    dominant: int | None,
    unitless_memory: str = "b",
) -> TorqueAssembly:
    """Assemble the records of some jobs, placed in a first pass (:func:`measure_file_offsets`).

    ``records`` are every record of the jobs of one partition (:func:`torque_partition_keys`),
    in the order of the whole log; ``offset`` and ``dst`` are their columns of
    :class:`FileOffsets`. The jobs, records and per-job values are those
    :func:`assemble_torque_jobs` gives for these jobs over the whole log; the placement facts of
    ``info`` are not (take them from :func:`merge_placement`), the counts are this partition's.
    """
    unit = _memory_unit(unitless_memory)
    _zone(tz)
    source = "given" if tz is not None else "inferred" if dominant is not None else "assumed_utc"

    def place(naive: I64, epoch: I64, records: pa.Table) -> _Placement:
        flags: dict[str, I64] = {"STAMP_UNREADABLE": _rows(naive == NA)}
        if tz is not None:
            flags["DST_GAP"] = _rows(dst == 2)
            flags["DST_AMBIGUOUS"] = _rows(dst == 1)
        placed = _finish_offsets(np.asarray(offset, dtype=np.int64), dominant)
        return _Placement(placed, dominant, flags, {"tz_source": source})

    return _assemble(records, tz=tz, unit=unit, place=place)


def _splitmix(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return np.asarray(x ^ (x >> np.uint64(31)), dtype=np.uint64)


def _text_hashes(array: Arr) -> npt.NDArray[np.uint64]:
    """Return a stable 64-bit hash of each value (0 for null), computed once per distinct value."""
    import hashlib

    distinct, codes = _codes(array)
    hashed = [
        int.from_bytes(hashlib.blake2b(str(v).encode(), digest_size=8).digest(), "little")
        for v in distinct.to_pylist()
    ]
    return np.array([*hashed, 0], dtype=np.uint64)[codes]


def torque_partition_keys(records: pa.Table) -> npt.NDArray[np.uint64]:
    """Return a stable hash per record; the records of one job (one assembly group) share it.

    Assembly groups a job's records by (site, sequence number, array index), whatever the server
    suffix, then splits a group by ``ctime`` (id reuse): the hash is of (site, sequence, index),
    so every record of a group, reused or not, and every copy of a line lands in one partition.
    Records that are not a job's (array parents, licence records, odd ids) hash their raw id, so
    byte-identical copies of them still meet (duplicate detection).
    """
    n = records.num_rows
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    ids = _array(records.column("job_id_raw"))
    seq, index, _, is_job, _, _ = _job_ids(ids)
    site = _text_hashes(_array(records.column("site")))
    with np.errstate(over="ignore"):
        job_key = _splitmix(_splitmix(site ^ seq.view(np.uint64)) ^ index.view(np.uint64))
    other = _splitmix(site ^ _text_hashes(ids))
    return np.where(is_job, job_key, other).astype(np.uint64)
