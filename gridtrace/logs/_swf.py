"""The SWF (Standard Workload Format, Parallel Workloads Archive v2.2) reader and writer.

An SWF file is one job per line, 18 whitespace-separated numeric fields (job number, submit, wait,
run, allocated procs, average CPU time per proc, used memory per proc in KB, requested procs,
requested time, requested memory per proc in KB, status, user, group, executable, queue, partition,
preceding job, think time), preceded by ``;`` comment lines that carry the header
(``; UnixStartTime: 1091615532``).

Reading is two steps, like every format of the registry: :func:`tokenize_swf_file` turns one file
into ``records`` (header lines as record type ``H`` with ``attrs`` ``{key: value}`` or
``{"text": ...}``, job lines as ``J`` with the 18 fields by their SWF names, values as written)
and ``quarantine`` (blank lines, lines without exactly 18 numeric fields); :func:`assemble_swf`
turns the records into ``jobs``. Neither has a Python loop per line or field: clean job lines
(18 ASCII numbers) are found by a numba kernel that writes the records' buffers directly, and every
other line goes to :func:`tokenize_swf_reference`'s vectorised pyarrow code, which defines every
record, reason and flag (:mod:`gridtrace.logs._swf_fast`; the two are tested equal). Assembly
parses the tokens with an exact compiled parser and works on numpy columns.

Mapping (``shared/reference/parsers.md`` §8): ``submit_time`` = UnixStartTime + submit,
``start_time`` = submit + wait, ``end_time`` = start + run; ``cores_alloc`` field 5, ``cores_req``
field 8, ``walltime_req_s`` field 9, ``run_s`` = ``walltime_used_s`` field 4,
``cpu_time_s`` = field 6 × field 5, ``mem_used_bytes`` = field 7 × field 5 × 1024,
``mem_req_bytes`` = field 10 × field 8 × 1024 (field 5 when field 8 is unknown); ``user``,
``group`` are fields 12 and 13 as decimal strings; ``queue`` and ``partition`` are fields 15 and
16, by the name the header gives the number (``; Queue: 2 short``, ``; Partition: 8
cclcgceli02.in2p3.fr``: in grid logs the partition is the site), else as decimal strings. The
executable, preceding job and think time stay in the ``records`` attrs. Every field
is parsed as a float (decimals are legal) and −1 means unknown (null) in every field.

States from the status field: 1 COMPLETED, 0 FAILED, 5 CANCELLED, −1 UNKNOWN; status 5 with an
unknown run time is a job that never ran: state DELETED, no start or end time (its logged wait, if
any, is kept in ``wait_s``). Any other status is UNKNOWN with flag ``STATUS_NONSTANDARD`` and the
value kept in ``exit_code`` (one PWA log stores raw exit codes there).

Flags (``jobs.flags``)
----------------------
``UNSORTED``
    The job's submit time is earlier than that of a line before it; the rows are sorted by submit
    time (then line), so this row moved. ``info["swf_unsorted_rows"]`` counts them.
``SUBMIT_UNKNOWN``
    The submit field is −1: no submit, start or end time; the row is sorted last.
``TIME_RELATIVE``
    The file has no ``UnixStartTime``; times are placed from the Unix epoch (1970-01-01 UTC).
``STATUS_NONSTANDARD``
    The status is not one of −1, 0, 1, 5; state UNKNOWN, the status kept in ``exit_code``.
``ROUNDED``
    A field stored as integer seconds, cores or bytes had a fraction and was rounded.
``OUT_OF_RANGE``
    A field (or a size derived from it, such as memory × processors) is beyond what its column
    holds exactly (2^53 seconds or bytes, 2^31 − 1 cores); that value is null.

Flag on ``records``: ``NON_UTF8`` (a header line that is not UTF-8; decoded with replacement, the
original bytes kept in ``raw``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from gridtrace.errors import ConfigError
from gridtrace.logs import _swf_fast
from gridtrace.logs._base import (
    ErrorPolicy,
    FileParse,
    ParseResult,
    apply_error_policy,
    check_error_policy,
    tokenize_guarded,
)
from gridtrace.logs._columnar import (
    as_text,
    interleave,
    offsets_of,
    records_table,
    repeat_string,
    split_lines,
    string_array,
)
from gridtrace.logs._io import StrPath, default_site_name, expand_log_paths, read_log_bytes
from gridtrace.schema import JOBS, QUARANTINE, RECORDS

__all__ = [
    "FLAGS",
    "SWF_FIELDS",
    "assemble_swf",
    "looks_like_swf",
    "parse_swf_header",
    "read_swf",
    "tokenize_swf",
    "tokenize_swf_file",
    "tokenize_swf_reference",
    "write_swf",
]

FLAGS: Mapping[str, str] = {}
"""Every flag this reader sets on a row, with what it means (see ``flag_meanings``)."""

logger = logging.getLogger(__name__)

# the pyarrow-stubs' overloads are narrower than these compute chains: arrays are typed loosely
_pc: Any = pc
_pa: Any = pa
Arr: TypeAlias = Any

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
Bool = npt.NDArray[np.bool_]

SWF_FIELDS: tuple[str, ...] = (
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_procs",
    "average_cpu_time",
    "used_memory",
    "requested_procs",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable_id",
    "queue_id",
    "partition_id",
    "preceding_job",
    "think_time",
)
"""The 18 SWF fields in file order, as named in the ``records`` attrs of job lines."""

_N = len(SWF_FIELDS)
(
    _JOB,
    _SUBMIT,
    _WAIT,
    _RUN,
    _ALLOC,
    _CPU,
    _MEM,
    _REQ_PROCS,
    _REQ_TIME,
    _REQ_MEM,
    _STATUS,
    _USER,
    _GROUP,
    _EXE,
    _QUEUE,
    _PART,
    _PREC,
    _THINK,
) = range(_N)

_NUMBER = r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$"
_HEADER_LINE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)\s*:\s*(.*?)\s*$")
_LEADING_NUMBER = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)")
_NUMERIC_KEYS = frozenset(
    {
        "UnixStartTime",
        "TimeZone",
        "MaxJobs",
        "MaxRecords",
        "MaxNodes",
        "MaxProcs",
        "MaxRuntime",
        "MaxMemory",
        "MaxQueues",
        "MaxPartitions",
    }
)
_STATES = {1: "COMPLETED", 0: "FAILED", 5: "CANCELLED", -1: "UNKNOWN"}
_STATE_NAMES = ("COMPLETED", "FAILED", "CANCELLED", "UNKNOWN", "DELETED")
_STATUS_OF_STATE = {
    "COMPLETED": 1,
    "FAILED": 0,
    "TIMEOUT": 0,
    "NODE_FAIL": 0,
    "REQUEUED": 0,
    "CANCELLED": 5,
    "DELETED": 5,
}


# --------------------------------------------------------------------------- header


def _header_value(key: str, value: str) -> Any:
    """Return a header value: a number for numeric keys (trailing comments dropped), else text."""
    if key in _NUMERIC_KEYS:
        match = _LEADING_NUMBER.match(value)
        if match:
            number = float(match.group(1))
            return int(number) if number.is_integer() else number
    return value


def _split_header_line(text: str) -> tuple[str | None, str]:
    """``(key, value)`` of a comment line without its ``;``, or ``(None, text)``."""
    match = _HEADER_LINE.match(text)
    if match is None:
        return None, text.strip()
    return match.group(1), match.group(2)


def parse_swf_header(lines: Iterable[str]) -> dict[str, Any]:
    """Collect the header metadata of SWF comment lines (with or without their leading ``;``).

    Keys may be right-aligned, values may carry trailing comments (numeric keys such as
    ``MaxNodes: 70  (dual)`` keep the leading number), repeated keys give a list of values in
    order, and lines without a ``Key:`` go, in order, to the list under ``"_text"`` (blank
    comment lines are left out). It never fails.

    Parameters
    ----------
    lines : iterable of str
        The comment lines.

    Returns
    -------
    dict
        ``{key: value or [values]}``.
    """
    header: dict[str, Any] = {}
    for line in lines:
        text = line.lstrip()
        text = text[1:] if text.startswith(";") else text
        key, value = _split_header_line(text)
        if key is None:
            if value:
                header.setdefault("_text", []).append(value)
            continue
        parsed = _header_value(key, value)
        if key not in header:
            header[key] = parsed
        elif isinstance(header[key], list):
            header[key].append(parsed)
        else:
            header[key] = [header[key], parsed]
    return header


# --------------------------------------------------------------------------- tokeniser


def looks_like_swf(head: bytes) -> bool:
    """Whether the first bytes of a (decompressed) file look like SWF.

    True when the non-blank lines (the last, possibly cut, one left out) are ``;`` comments or
    18 numeric fields, and at least one is a job line or a header line with an SWF key.
    """
    lines = [line.strip() for line in head.split(b"\n")[:200]]
    if len(lines) > 1:
        lines = lines[:-1]
    lines = [line for line in lines if line]
    if not lines:
        return False
    jobs = 0
    swf_keys = 0
    number = re.compile(_NUMBER.encode())
    for line in lines:
        if line.startswith(b";"):
            key, _ = _split_header_line(line[1:].decode("latin-1"))
            swf_keys += key in {"Version", "MaxJobs", "MaxRecords", "UnixStartTime", "MaxProcs"}
            continue
        fields = line.split()
        if len(fields) != _N or not all(number.match(f) for f in fields):
            return False
        jobs += 1
    return jobs > 0 or swf_keys > 0


def _numeric_tokens(tokens: Arr) -> Bool:
    """Which tokens are decimal numbers; one cast when all are, a regex only when some are not."""
    try:
        values = np.asarray(tokens.cast(pa.float64()).to_numpy(zero_copy_only=False))
    except pa.ArrowInvalid:
        values = None
    if values is not None and np.isfinite(values).all():
        return np.ones(len(tokens), dtype=bool)
    matches = _pc.match_substring_regex(tokens, _NUMBER)
    return np.asarray(matches.to_numpy(zero_copy_only=False), dtype=bool)


def _tokenize_lines(
    raw_lines: list[bytes], line_no: I64, *, site: str, src_file: str
) -> tuple[pa.Table, pa.Table]:
    """Tokenise some lines of a file (the reference): their ``records`` and ``quarantine`` rows.

    Vectorised with pyarrow compute; every line kind, reason and flag is defined here. The fast
    path of :func:`tokenize_swf_file` hands over every line it does not recognise as a clean job
    line. ``line_no`` gives each line's number in the file (ascending).
    """
    binary = _pa.array(raw_lines, pa.binary())
    text, non_utf8 = as_text(binary)
    stripped = _pc.utf8_trim_whitespace(text)

    is_comment = np.asarray(_pc.starts_with(stripped, ";").to_numpy(zero_copy_only=False), bool)
    is_blank = np.asarray(_pc.equal(_pc.utf8_length(stripped), 0).to_numpy(zero_copy_only=False))
    other = ~is_comment & ~is_blank

    # job candidates: split on whitespace, check the count and that every token is a number
    candidates = np.flatnonzero(other)
    tokens_list = _pc.utf8_split_whitespace(stripped.take(_pa.array(candidates)))
    counts = np.asarray(_pc.list_value_length(tokens_list).to_numpy(zero_copy_only=False))
    flat = _pc.list_flatten(tokens_list)
    numeric = _numeric_tokens(flat)
    starts = offsets_of(counts)[:-1]
    bad_tokens = np.add.reduceat((~numeric).astype(np.int64), starts) if len(flat) else None
    if bad_tokens is None:
        bad_tokens = np.zeros(len(candidates), dtype=np.int64)
    bad_tokens = np.where(counts == 0, 0, bad_tokens)  # reduceat repeats on empty slices
    good = (counts == _N) & (bad_tokens == 0)

    reasons: dict[int, str] = {}
    for i in np.flatnonzero(is_blank):
        reasons[int(i)] = "blank line"
    for j in np.flatnonzero(~good):
        if counts[j] != _N:
            reasons[int(candidates[j])] = f"expected {_N} numeric fields, found {int(counts[j])}"
        else:
            reasons[int(candidates[j])] = "non-numeric field in a job line"

    # job records: attrs map the 18 names onto the tokens as written
    job_rows = candidates[good]
    keep_tokens = np.repeat(good, counts)
    job_tokens = flat.filter(_pa.array(keep_tokens)) if len(flat) else _pa.array([], pa.string())
    jobs_part = _job_records(
        site=site,
        src_file=src_file,
        lines=line_no[job_rows],
        values=job_tokens,
        ids=job_tokens.take(_pa.array(np.arange(0, len(job_rows) * _N, _N, dtype=np.int64))),
    )

    # header records: a Python loop per comment line (a few dozen per file)
    comment_rows = np.flatnonzero(is_comment)
    comment_text = stripped.take(_pa.array(comment_rows)).to_pylist()
    header_attrs: list[list[tuple[str, str]]] = []
    for line in comment_text:
        key, value = _split_header_line(line[1:])
        header_attrs.append([("text", value)] if key is None else [(key, value)])
    comment_bad = non_utf8[comment_rows]
    header_part = records_table(
        site=site,
        source_format="swf",
        src_file=src_file,
        lines=line_no[comment_rows],
        record_type="H",
        job_id_raw=pa.nulls(len(comment_rows), pa.string()),
        attrs=_pa.array(header_attrs, pa.map_(pa.string(), pa.string())),
        flags=_pa.array([["NON_UTF8"] if b else None for b in comment_bad], pa.list_(pa.string())),
        raw=_pa.array(
            [raw_lines[i] if b else None for i, b in zip(comment_rows, comment_bad, strict=True)],
            pa.binary(),
        ),
    )
    records = interleave(jobs_part, line_no[job_rows], header_part)

    bad_rows = sorted(reasons)
    quarantine = pa.Table.from_arrays(
        [
            _pa.array([site] * len(bad_rows), pa.string()),
            _pa.array(["swf"] * len(bad_rows), pa.string()),
            _pa.array([src_file] * len(bad_rows), pa.string()),
            _pa.array(line_no[bad_rows], pa.int64()),
            _pa.array([reasons[i] for i in bad_rows], pa.string()),
            _pa.array([raw_lines[i] for i in bad_rows], pa.binary()),
        ],
        schema=QUARANTINE,
    )
    return records, quarantine


_KEY_BYTES = np.frombuffer("".join(SWF_FIELDS).encode(), dtype=np.uint8)
_KEY_OFFSETS = offsets_of(np.array([len(name) for name in SWF_FIELDS]))


def _field_names(rows: int) -> Arr:
    """Return the 18 field names, ``rows`` times over, as one string array built by numpy."""
    offsets = np.arange(rows, dtype=np.int64)[:, None] * len(_KEY_BYTES) + _KEY_OFFSETS[:-1]
    offsets = np.append(offsets.ravel(), rows * len(_KEY_BYTES)).astype(np.int32)
    return string_array(offsets, np.tile(_KEY_BYTES, rows))


def _job_records(*, site: str, src_file: str, lines: I64, values: Arr, ids: Arr) -> pa.Table:
    """Build the ``records`` rows of job lines from their 18 tokens each and job numbers."""
    rows = len(lines)
    attrs = _pa.MapArray.from_arrays(
        _pa.array(np.arange(0, (rows + 1) * _N, _N, dtype=np.int32)), _field_names(rows), values
    )
    return records_table(
        site=site,
        source_format="swf",
        src_file=src_file,
        lines=lines,
        record_type="J",
        job_id_raw=ids,
        attrs=attrs,
    )


def tokenize_swf_reference(data: bytes, *, site: str, src_file: str) -> FileParse:
    """Tokenise a file's content line by line with the readable reference only.

    :func:`tokenize_swf_file` gives the same rows; this path is kept to test it against and for
    interpreters without numba.
    """
    raw_lines = split_lines(data)
    line_no = np.arange(1, len(raw_lines) + 1, dtype=np.int64)
    records, quarantine = _tokenize_lines(raw_lines, line_no, site=site, src_file=src_file)
    return FileParse(
        src_file=src_file, records=records, quarantine=quarantine, lines_read=len(raw_lines)
    )


def tokenize_swf(data: bytes, *, site: str, src_file: str) -> FileParse:
    """Tokenise a file's content, clean job lines by the compiled scanner.

    Every other line goes to the reference (see :mod:`gridtrace.logs._swf_fast`); the rows are
    those of :func:`tokenize_swf_reference`, in line order.
    """
    if not _swf_fast.compile_kernel():  # pragma: no cover
        return tokenize_swf_reference(data, site=site, src_file=src_file)
    fast_parts: list[pa.Table] = []
    fast_lines: list[I64] = []
    declined: list[bytes] = []
    declined_lines: list[I64] = []
    first_line = 1
    for scan in _swf_fast.scan_swf(data):
        line_no = np.arange(first_line, first_line + scan.lines, dtype=np.int64)
        first_line += scan.lines
        lines = line_no[scan.fast]
        fast_parts.append(
            _job_records(
                site=site, src_file=src_file, lines=lines, values=scan.values, ids=scan.ids
            )
        )
        fast_lines.append(lines)
        rows = np.flatnonzero(~scan.fast)
        declined.extend(data[scan.starts[i] : scan.ends[i]] for i in rows)
        declined_lines.append(line_no[rows])
    n_lines = first_line - 1
    if not fast_parts:
        return tokenize_swf_reference(data, site=site, src_file=src_file)
    other_lines = np.concatenate(declined_lines)
    others, quarantine = _tokenize_lines(declined, other_lines, site=site, src_file=src_file)
    fast = pa.concat_tables(fast_parts)
    records = interleave(fast, np.concatenate(fast_lines), others)
    return FileParse(src_file=src_file, records=records, quarantine=quarantine, lines_read=n_lines)


def tokenize_swf_file(path: StrPath, *, site: str) -> FileParse:
    """Tokenise one SWF file (plain, gzip, bzip2 or xz) into ``records`` and ``quarantine``.

    Parameters
    ----------
    path : str or path-like
        The file.
    site : str
        Site name for every row.

    Returns
    -------
    FileParse
        One ``records`` row per comment or job line, one ``quarantine`` row per other line, in
        line order; ``lines_read`` = records + quarantined.
    """
    src_file = str(path)
    parsed = tokenize_swf(read_log_bytes(path), site=site, src_file=src_file)
    logger.debug(
        "%s: %d lines, %d quarantined", src_file, parsed.lines_read, parsed.quarantine.num_rows
    )
    return parsed


# --------------------------------------------------------------------------- assembler


def _header_of(records: pa.Table) -> dict[str, Any]:
    header_rows = records.filter(_pc.equal(records.column("record_type"), "H"))
    lines: list[str] = []
    for attrs in header_rows.column("attrs").to_pylist():
        for key, value in attrs or ():
            lines.append(value if key == "text" else f"{key}: {value}")
    return parse_swf_header(lines)


def _job_rows(records: pa.Table) -> pa.Table:
    """Select the job records (type ``J``) and the columns assembly reads; a slice if contiguous."""
    table = records.select(["record_type", "src_line", "job_id_raw", "attrs"])
    kind = _pc.equal(table.column("record_type"), "J")
    is_job = np.asarray(kind.to_numpy(zero_copy_only=False), dtype=bool)
    rows = np.flatnonzero(is_job)
    if len(rows) == 0:
        return table.slice(0, 0)
    if rows[-1] - rows[0] + 1 == len(rows):  # the usual case: header lines, then job lines
        return table.slice(int(rows[0]), len(rows))
    return table.filter(_pa.array(is_job))


def _fields_of(jobs: pa.Table) -> F64:
    """Return the job records' fields as an (n, 18) float view, NaN for -1, each column contiguous.

    The attrs hold the 18 tokens of each job line in field order.
    """
    parts = [np.zeros((_N, 0), dtype=np.float64)]
    chunk: Any
    for chunk in jobs.column("attrs").chunks:
        if not len(chunk):
            continue
        offsets = np.asarray(chunk.offsets)  # the chunk's own rows, into the unsliced items
        first, last = int(offsets[0]), int(offsets[-1])
        tokens = chunk.items.slice(first, last - first)
        parts.append(_swf_fast.parse_numbers(tokens, width=_N, minus_one_nan=True))
    columns = parts[-1] if len(parts) == 2 else np.concatenate(parts, axis=1)
    return columns.T


def _origin(header: Mapping[str, Any]) -> int | None:
    value = header.get("UnixStartTime")
    if isinstance(value, list):
        value = value[0]
    if isinstance(value, int | float):
        return int(value)
    return None


def _zone(header: Mapping[str, Any]) -> str | None:
    value = header.get("TimeZoneString")
    if isinstance(value, list):
        value = value[0]
    return value.split()[0] if isinstance(value, str) and value.strip() else None


_INT_BOUNDS = {32: float(2**31 - 1), 64: float(2**53)}


class _Marks:
    """Rows whose integer fields were rounded, or were out of range and left unknown."""

    def __init__(self, n: int) -> None:
        self.rounded = np.zeros(n, dtype=bool)
        self.out_of_range = np.zeros(n, dtype=bool)


def _int_column(values: F64, marks: _Marks, *, bits: int = 64) -> Arr:
    """Nullable int from floats (NaN → null), rounding fractions and marking them.

    A value beyond what the column can hold exactly (2^53 for int64, whose float source is exact
    only that far; 2^31 − 1 for int32) is null and its row marked out of range: no real job
    field comes near, so it is a corrupt line, and a wrapped-around number would be worse.
    """
    known = ~np.isnan(values)
    huge = known & (np.abs(values) > _INT_BOUNDS[bits])
    if huge.any():
        marks.out_of_range |= huge
        known &= ~huge
    whole = np.rint(np.where(known, values, 0.0))  # half to even, as np.round
    marks.rounded |= known & (whole != values)
    kind = (np.int32, pa.int32()) if bits == 32 else (np.int64, pa.int64())
    mask = None if known.all() else ~known
    return _pa.array(whole.astype(kind[0]), kind[1], mask=mask)


def _tz_offsets(epochs: F64, zone: str | None) -> Arr:
    n = len(epochs)
    if zone is None:
        return pa.nulls(n, pa.int32())
    known = ~np.isnan(epochs)
    try:
        stamps = pd.to_datetime(np.where(known, epochs, 0).astype(np.int64), unit="s", utc=True)
        local = stamps.tz_convert(zone).tz_localize(None)
    except (KeyError, ValueError) as exc:  # an unknown zone name
        logger.warning("TimeZoneString %r is not a known zone (%s); no tz_offset_s", zone, exc)
        return pa.nulls(n, pa.int32())
    offsets = (local - stamps.tz_localize(None)).total_seconds().to_numpy().astype(np.int32)
    return _pa.array(offsets, pa.int32(), mask=~known)


def _flag_lists(flag_names: Sequence[tuple[str, Bool]], n: int) -> Arr:
    """Build the ``flags`` column: per row, the names whose mask is set, in order (else null)."""
    masks = np.stack([mask for _, mask in flag_names], axis=1) if flag_names else np.zeros((n, 0))
    rows, which = np.nonzero(masks)  # row-major: by row, then in flag order
    counts = np.bincount(rows, minlength=n)
    names = _pa.array([name for name, _ in flag_names], pa.string())
    return _pa.ListArray.from_arrays(
        _pa.array(offsets_of(counts).astype(np.int32)),
        names.take(_pa.array(which)),
        mask=_pa.array(counts == 0),
    )


def _jobs_of_file(
    records: pa.Table, site: str, src_file: str
) -> tuple[pa.Table, dict[str, Any], int]:
    header = _header_of(records)
    job_records = _job_rows(records)
    n = job_records.num_rows
    f = _fields_of(job_records)
    src_line = np.asarray(job_records.column("src_line").to_numpy(), dtype=np.int64)

    origin = _origin(header)
    relative = origin is None
    submit_abs = f[:, _SUBMIT] + (0 if origin is None else origin)

    # sort by submit (unknown last), then line; flag the rows that came after a later submit
    no_submit = np.isnan(submit_abs)
    running_max = np.fmax.accumulate(np.where(no_submit, -np.inf, submit_abs))
    late = np.zeros(n, dtype=bool)
    late[1:] = ~no_submit[1:] & (submit_abs[1:] < running_max[:-1])
    job_id_raw = job_records.column("job_id_raw")
    in_order = not late.any() and not no_submit[: n - int(no_submit.sum())].any()
    if not in_order:  # rows are in line order, so in order already unless one is late
        order = np.lexsort((src_line, np.where(no_submit, np.inf, submit_abs)))
        f, submit_abs, no_submit, late, src_line = (
            np.asfortranarray(f[order]),
            submit_abs[order],
            no_submit[order],
            late[order],
            src_line[order],
        )
        job_id_raw = job_id_raw.take(_pa.array(order))

    status = f[:, _STATUS]
    never_ran = (status == 5) & np.isnan(f[:, _RUN])
    start = np.where(never_ran, np.nan, submit_abs + f[:, _WAIT])
    end = start + f[:, _RUN]

    marks = _Marks(n)
    wait_s = _int_column(f[:, _WAIT], marks)
    run_s = _int_column(f[:, _RUN], marks)
    walltime_req_s = _int_column(f[:, _REQ_TIME], marks)
    submit_i = _int_column(submit_abs, marks)
    start_i = _int_column(start, marks)
    end_i = _int_column(end, marks)
    alloc = _int_column(f[:, _ALLOC], marks, bits=32)
    req = _int_column(f[:, _REQ_PROCS], marks, bits=32)
    procs = f[:, _ALLOC]
    usable = np.where(procs > 0, procs, np.nan)
    req_procs = np.where(np.isnan(f[:, _REQ_PROCS]), usable, f[:, _REQ_PROCS])
    req_procs = np.where(req_procs > 0, req_procs, np.nan)
    mem_used = _int_column(f[:, _MEM] * usable * 1024, marks)
    mem_req = _int_column(f[:, _REQ_MEM] * req_procs * 1024, marks)
    cpu = f[:, _CPU] * usable
    job_seq = _int_column(
        np.where(f[:, _JOB] == np.round(f[:, _JOB]), f[:, _JOB], np.nan), _Marks(n)
    )

    state = np.full(n, _STATE_NAMES.index("UNKNOWN"), dtype=np.int32)
    for code, name in _STATES.items():
        state[status == code] = _STATE_NAMES.index(name)
    state[never_ran] = _STATE_NAMES.index("DELETED")
    nonstandard = ~np.isnan(status) & ~np.isin(status, [0.0, 1.0, 5.0])
    exit_code = _pa.array(
        np.where(nonstandard, status, 0).astype(np.int32), pa.int32(), mask=~nonstandard
    )
    if nonstandard.any():
        logger.warning(
            "%s: %d jobs have a status other than -1, 0, 1, 5; state UNKNOWN, flag "
            "STATUS_NONSTANDARD",
            src_file,
            int(nonstandard.sum()),
        )

    flag_names: list[tuple[str, Bool]] = [
        ("UNSORTED", late),
        ("SUBMIT_UNKNOWN", no_submit),
        ("TIME_RELATIVE", np.full(n, relative)),
        ("STATUS_NONSTANDARD", nonstandard),
        ("ROUNDED", marks.rounded),
        ("OUT_OF_RANGE", marks.out_of_range),
    ]
    flags = _flag_lists(flag_names, n)

    def ids(column: int) -> Arr:
        values = f[:, column]
        known = ~np.isnan(values)
        whole = known & (values == np.round(values))
        text = _pa.array(np.where(whole, values, 0).astype(np.int64)).cast(pa.string())
        if (known & ~whole).any():  # fractional ids are rare: text them only when present
            text = _pc.if_else(_pa.array(whole), text, _pa.array(values.astype(str), pa.string()))
        return _pc.if_else(_pa.array(~known), None, text)

    site_col = repeat_string(site, n)
    seq_text = _pc.fill_null(job_seq.cast(pa.string()), job_id_raw.combine_chunks())
    submit_text = _pc.fill_null(submit_i.cast(pa.string()), "unknown")
    job_key = _pc.binary_join_element_wise(site_col, ":", seq_text, "@", submit_text, "")
    ts = pa.timestamp("s", tz="UTC")
    columns: dict[str, Any] = {
        "site": site_col,
        "source_format": repeat_string("swf", n),
        "job_key": job_key,
        "job_id_raw": job_id_raw,
        "job_seq": job_seq,
        "attempt": _pa.array(np.zeros(n, np.int16), pa.int16()),
        "n_attempts": _pa.array(np.ones(n, np.int16), pa.int16()),
        "user": ids(_USER),
        "group": ids(_GROUP),
        "queue": _named(ids(_QUEUE), header.get("Queue")),
        "partition": _named(ids(_PART), header.get("Partition")),
        "submit_time": submit_i.cast(ts),
        "start_time": start_i.cast(ts),
        "end_time": end_i.cast(ts),
        "wait_s": wait_s,
        "run_s": run_s,
        "walltime_used_s": run_s,
        "walltime_req_s": walltime_req_s,
        "cpu_time_s": _pa.array(cpu, pa.float64(), from_pandas=True),
        "cores_req": req.cast(pa.int32()),
        "cores_alloc": alloc.cast(pa.int32()),
        "mem_req_bytes": mem_req,
        "mem_used_bytes": mem_used,
        "exit_code": exit_code,
        "state": _pa.array(_STATE_NAMES, pa.string()).take(_pa.array(state)),
        "tz_offset_s": _tz_offsets(submit_abs, _zone(header)),
        "src_file": repeat_string(src_file, n),
        "src_line": _pa.array(src_line, pa.int64()),
        "flags": flags,
    }
    table = pa.Table.from_arrays(
        [columns[fld.name] if fld.name in columns else pa.nulls(n, fld.type) for fld in JOBS],
        schema=JOBS,
    )
    return table, header, int(late.sum())


def assemble_swf(parts: Sequence[FileParse], *, tz: str | None = None) -> ParseResult:
    """Assemble tokenised SWF files, given in reading order, into a :class:`ParseResult`.

    Each file is assembled on its own (its header sets its time origin and zone); the jobs of all
    files are concatenated in file order. ``tz`` is accepted for the registry and ignored: SWF
    times are epochs offset by the header's ``UnixStartTime``.

    Returns
    -------
    ParseResult
        ``info["swf_header"]`` holds the first file's header (see :func:`parse_swf_header`),
        ``info["swf_headers"]`` every file's by name, ``info["swf_unsorted_rows"]`` the count
        of rows flagged ``UNSORTED``.
    """
    del tz
    tables: list[pa.Table] = []
    headers: dict[str, dict[str, Any]] = {}
    unsorted = 0
    for part in parts:
        records = part.records
        site = str(records.column("site")[0].as_py()) if records.num_rows else "site"
        jobs, header, late = _jobs_of_file(records, site, part.src_file)
        tables.append(jobs)
        headers[part.src_file] = header
        unsorted += late
    jobs = pa.concat_tables(tables) if tables else JOBS.empty_table()
    records = pa.concat_tables([p.records for p in parts]) if parts else RECORDS.empty_table()
    quarantine = (
        pa.concat_tables([p.quarantine for p in parts]) if parts else QUARANTINE.empty_table()
    )
    offsets = jobs.column("tz_offset_s").drop_null().to_numpy()
    tz_offset: int | None = None
    if len(offsets):
        values, counts = np.unique(offsets, return_counts=True)
        tz_offset = int(values[np.argmax(counts)])
    first = next(iter(headers.values()), {})
    return ParseResult(
        records=records,
        jobs=jobs,
        quarantine=quarantine,
        files=tuple(p.src_file for p in parts),
        lines_read=sum(p.lines_read for p in parts),
        tz_offset_s=tz_offset,
        info={
            "format": "swf",
            "swf_header": first,
            "swf_headers": headers,
            "swf_unsorted_rows": unsorted,
        },
    )


def read_swf(
    path: StrPath | Iterable[StrPath],
    *,
    site: str | None = None,
    errors: ErrorPolicy = "warn",
) -> ParseResult:
    """Read SWF (Parallel Workloads Archive) files into ``records``, ``jobs`` and quarantine.

    Parameters
    ----------
    path : path or iterable of paths
        SWF files (plain or gzip/bzip2/xz, detected by content) or folders of them.
    site : str, optional
        Site name for every row; defaults to the first path's name up to its first dot.
    errors : {"raise", "warn", "skip"}, default "warn"
        What to do with unreadable lines; they are quarantined and counted in every case.

    Returns
    -------
    ParseResult
        The tables and counts (lines read = parsed + quarantined); the header metadata is in
        ``info["swf_header"]``.

    Raises
    ------
    LogParseError
        With ``errors="raise"``, at the first unreadable line.

    Examples
    --------
    >>> result = read_swf("LPC-EGEE-2004-1.2-cln.swf.gz")  # doctest: +SKIP
    >>> result.info["swf_header"]["MaxProcs"]  # doctest: +SKIP
    140
    """
    policy = check_error_policy(errors)
    files = expand_log_paths(path)
    site = site or default_site_name(path)
    parts = [
        apply_error_policy(
            tokenize_guarded(tokenize_swf_file, f, site=site, source_format="swf"), policy
        )
        for f in files
    ]
    return assemble_swf(parts)


# --------------------------------------------------------------------------- writer


def _floats(jobs: pa.Table, name: str) -> F64:
    if name not in jobs.column_names:
        return np.full(jobs.num_rows, np.nan)
    column = jobs.column(name)
    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.timestamp("s", tz="UTC")).cast(pa.int64())
    return np.asarray(column.cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)


def _strings(jobs: pa.Table, name: str) -> list[str | None]:
    if name not in jobs.column_names:
        return [None] * jobs.num_rows
    return [None if v is None else str(v) for v in jobs.column(name).to_pylist()]


_NUMBERED_NAME = re.compile(r"^\s*(\d+)\s+(\S.*?)\s*$")


def numbered_names(entries: Any) -> dict[str, str]:
    """``{"1": "test", ...}`` from header entries such as ``Queue: 1 test`` (id, then a name).

    Entries without a name (``Queue: 1``) are left out, so those ids keep their number.
    """
    items = entries if isinstance(entries, list) else [entries]
    names: dict[str, str] = {}
    for item in items:
        match = _NUMBERED_NAME.match(str(item)) if item is not None else None
        if match:
            names.setdefault(str(int(match.group(1))), match.group(2))
    return names


def _named(ids: Arr, entries: Any) -> Arr:
    """Replace queue or partition numbers by the names the header gives them."""
    names = numbered_names(entries)
    if not names:
        return ids
    keys = _pa.array(list(names), pa.string())
    position = _pc.index_in(ids, value_set=keys)
    found = _pa.array(list(names.values()), pa.string()).take(position)
    return _pc.coalesce(found, ids)


def _ids(values: list[str | None]) -> tuple[F64, dict[str, int]]:
    """Numeric ids of names: numbers stay, otherwise a dense numbering by first appearance."""
    out = np.full(len(values), np.nan)
    known = [v for v in values if v is not None]
    try:
        numbers = [float(v) for v in known]
    except ValueError:
        numbers = None
    if numbers is not None:
        it = iter(numbers)
        for i, v in enumerate(values):
            if v is not None:
                out[i] = next(it)
        return out, {}
    mapping: dict[str, int] = {}
    for i, v in enumerate(values):
        if v is not None:
            out[i] = mapping.setdefault(v, len(mapping) + 1)
    return out, mapping


def _format_column(values: F64) -> Arr:
    """Numbers as SWF text: −1 for unknown, integers where integral, shortest repr otherwise."""
    values = np.where(np.isnan(values), -1.0, values)
    whole = values == np.round(values)
    text = _pa.array(np.where(whole, values, 0).astype(np.int64)).cast(pa.string())
    if not whole.all():  # fractions are rare: text only them
        fractions = _pa.array(values[~whole].astype(str), pa.string())
        text = _pc.replace_with_mask(text, _pa.array(~whole), fractions)
    return text


def _header_lines(header: Mapping[str, Any]) -> list[str]:
    width = 15
    lines: list[str] = []
    for key, value in header.items():
        values = value if isinstance(value, list | tuple) else [value]
        for item in values:
            if key == "_text":
                lines.append(f"; {item}")
            else:
                lines.append(f"; {key:>{width}}: {item}".rstrip())
    return lines


@dataclass(frozen=True)
class _ArchiveFields:
    """The SWF field values of a jobs table, sorted by submit time (GWF shares them)."""

    jobs: pa.Table  # the table in writing order
    flag_lists: list[Any]  # each row's flags, or None
    submit: F64  # absolute epoch seconds
    wait: F64
    run: F64
    alloc: F64
    req: F64
    cpu_per_proc: F64
    mem_used_per_proc_kb: F64
    req_time: F64
    mem_req_per_proc_kb: F64
    status: F64


def _checked_header(header: Mapping[str, Any] | None, fmt: str) -> dict[str, Any]:
    given = dict(header or {})
    for key in given:
        if key != "_text" and not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", key):
            msg = f"{fmt} header keys are single words, not {key!r}"
            raise ConfigError(msg)
    return given


def _archive_fields(jobs: pa.Table) -> _ArchiveFields:
    """Sort ``jobs`` by submit time (unknown last) and derive the SWF/GWF numeric fields.

    Unknown wait and run come from start − submit and end − start; per-processor CPU time and
    memory divide by the allocated (memory requested: the requested, else allocated) processors;
    the status follows the state (rows flagged ``STATUS_NONSTANDARD`` keep their ``exit_code``),
    and a DELETED job has no run time.
    """
    n = jobs.num_rows
    submit = _floats(jobs, "submit_time")
    order = np.lexsort((np.arange(n), np.where(np.isnan(submit), np.inf, submit)))
    jobs = jobs.take(_pa.array(order))
    submit = submit[order]
    start = _floats(jobs, "start_time")
    end = _floats(jobs, "end_time")
    flag_lists = jobs.column("flags").to_pylist() if "flags" in jobs.column_names else [None] * n
    nonstandard = np.array(
        [fl is not None and "STATUS_NONSTANDARD" in fl for fl in flag_lists], dtype=bool
    )
    wait = _floats(jobs, "wait_s")
    wait = np.where(np.isnan(wait), start - submit, wait)
    run = _floats(jobs, "run_s")
    run = np.where(np.isnan(run), end - start, run)
    alloc = _floats(jobs, "cores_alloc")
    req = _floats(jobs, "cores_req")
    usable = np.where(alloc > 0, alloc, np.nan)
    req_procs = np.where(np.isnan(req), usable, req)
    req_procs = np.where(req_procs > 0, req_procs, np.nan)
    state = _strings(jobs, "state")
    exit_code = _floats(jobs, "exit_code")
    status = np.array([_STATUS_OF_STATE.get(s or "", -1) for s in state], dtype=np.float64)
    status = np.where(nonstandard & ~np.isnan(exit_code), exit_code, status)
    deleted = np.array([s == "DELETED" for s in state], dtype=bool)
    return _ArchiveFields(
        jobs=jobs,
        flag_lists=flag_lists,
        submit=submit,
        wait=wait,
        run=np.where(deleted, np.nan, run),
        alloc=alloc,
        req=req,
        cpu_per_proc=_floats(jobs, "cpu_time_s") / usable,
        mem_used_per_proc_kb=_floats(jobs, "mem_used_bytes") / usable / 1024,
        req_time=_floats(jobs, "walltime_req_s"),
        mem_req_per_proc_kb=_floats(jobs, "mem_req_bytes") / req_procs / 1024,
        status=status,
    )


def write_swf(jobs: pa.Table, path: StrPath, *, header: Mapping[str, Any] | None = None) -> Path:
    """Write a ``jobs`` table as an SWF v2.2 file.

    Jobs are written sorted by submit time (unknown last). Times are seconds from
    ``UnixStartTime``, the earliest submit (left out when every job is flagged
    ``TIME_RELATIVE``); unknown values are −1; integral values are written as integers.
    ``cpu_time_s``, ``mem_used_bytes`` and ``mem_req_bytes`` are divided back into per-processor
    values. User, group, queue and partition names that are not numbers are numbered densely in
    order of appearance (the queue and partition numberings are listed in ``Queue:`` and
    ``Partition:`` header lines). State DELETED and
    CANCELLED are status 5 (DELETED with run −1), COMPLETED 1, FAILED, TIMEOUT, NODE_FAIL and
    REQUEUED 0; UNKNOWN writes the ``exit_code`` of rows flagged ``STATUS_NONSTANDARD``, else −1.

    Parameters
    ----------
    jobs : pyarrow.Table
        A ``jobs`` table (columns it lacks are written as unknown).
    path : str or path-like
        The file to write (plain text).
    header : mapping, optional
        Header entries (e.g. ``Computer``, ``Installation``, ``TimeZoneString``, ``MaxProcs``,
        ``MaxNodes``); a list value gives one line per item and ``"_text"`` items are written as
        free comment lines. ``Version``, ``UnixStartTime``, ``MaxJobs`` and ``MaxRecords`` are
        always computed, the deprecated ``TimeZone`` is left out, and the header of
        :func:`read_swf` (``info["swf_header"]``) can be passed back as it is.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    ConfigError
        If a header key is not a single word.
    """
    given = _checked_header(header, "SWF")
    n = jobs.num_rows
    a = _archive_fields(jobs)
    jobs, submit = a.jobs, a.submit
    relative = n > 0 and all(fl is not None and "TIME_RELATIVE" in fl for fl in a.flag_lists)
    known_submit = submit[~np.isnan(submit)]
    origin = 0 if relative or not len(known_submit) else int(known_submit.min())

    job_seq = _floats(jobs, "job_seq")
    job_seq = np.where(np.isnan(job_seq), np.arange(1, n + 1), job_seq)
    users, user_map = _ids(_strings(jobs, "user"))
    groups, group_map = _ids(_strings(jobs, "group"))
    queues, queue_map = _ids(_strings(jobs, "queue"))
    partitions, partition_map = _ids(_strings(jobs, "partition"))

    fields = np.full((n, _N), np.nan)
    fields[:, _JOB] = job_seq
    fields[:, _SUBMIT] = submit - origin
    fields[:, _WAIT] = a.wait
    fields[:, _RUN] = a.run
    fields[:, _ALLOC] = a.alloc
    fields[:, _CPU] = a.cpu_per_proc
    fields[:, _MEM] = a.mem_used_per_proc_kb
    fields[:, _REQ_PROCS] = a.req
    fields[:, _REQ_TIME] = a.req_time
    fields[:, _REQ_MEM] = a.mem_req_per_proc_kb
    fields[:, _STATUS] = a.status
    fields[:, _USER] = users
    fields[:, _GROUP] = groups
    fields[:, _QUEUE] = queues
    fields[:, _PART] = partitions

    out: dict[str, Any] = {"Version": "2.2"}
    for key in ("Computer", "Installation", "Acknowledge", "Information", "Conversion"):
        if key in given:
            out[key] = given[key]
    out["MaxJobs"] = n
    out["MaxRecords"] = n
    if not relative:
        out["UnixStartTime"] = origin
    if "TimeZoneString" in given:
        out["TimeZoneString"] = given["TimeZoneString"]
    nodes = _floats(jobs, "nodes_alloc")
    if "MaxNodes" in given:
        out["MaxNodes"] = given["MaxNodes"]
    elif (~np.isnan(nodes)).any():
        out["MaxNodes"] = int(np.nanmax(nodes))
    procs = np.concatenate([a.alloc, a.req])
    if "MaxProcs" in given:
        out["MaxProcs"] = given["MaxProcs"]
    elif (~np.isnan(procs)).any():
        out["MaxProcs"] = int(np.nanmax(procs))
    computed = {"Version", "MaxJobs", "MaxRecords", "UnixStartTime", "TimeZone", *out}
    for key, value in given.items():
        if key not in computed and key not in {"Note", "_text", "Queue", "Partition"}:
            out[key] = value
    for key, mapping in (("Queue", queue_map), ("Partition", partition_map)):
        if mapping:
            out[f"Max{key}s"] = len(mapping)
            out[key] = [f"{number} {name}" for name, number in mapping.items()]
        elif key in given:
            out[key] = given[key]
    notes = given.get("Note", [])
    notes = list(notes) if isinstance(notes, list | tuple) else [notes]
    notes.append("written by gridtrace from a jobs table")
    if user_map or group_map:
        notes.append("user and group names are numbered in order of first appearance")
    out["Note"] = notes
    if "_text" in given:
        out["_text"] = given["_text"]

    columns = [_format_column(fields[:, k]) for k in range(_N)]
    body = _pc.binary_join_element_wise(*columns, " ") if n else _pa.array([], pa.string())
    target = Path(path)
    with target.open("w", encoding="utf-8", newline="\n") as handle:
        handle.write("\n".join(_header_lines(out)) + "\n")
        if n:
            handle.write("\n".join(body.to_pylist()) + "\n")
    logger.debug("wrote %d jobs to %s", n, target)
    return target
