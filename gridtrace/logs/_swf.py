"""The SWF (Standard Workload Format, Parallel Workloads Archive v2.2) reader and writer.

An SWF file is one job per line, 18 whitespace-separated numeric fields (job number, submit, wait,
run, allocated procs, average CPU time per proc, used memory per proc in KB, requested procs,
requested time, requested memory per proc in KB, status, user, group, executable, queue, partition,
preceding job, think time), preceded by ``;`` comment lines that carry the header
(``; UnixStartTime: 1091615532``).

Reading is two steps, like every format of the registry: :func:`tokenize_swf_file` turns one file
into ``records`` (comment lines as record type ``H``, job lines as ``J`` with the 18 fields by
their SWF names, values as written) and ``quarantine`` (blank lines, lines without exactly 18
numeric fields, fragments with NUL bytes); :func:`assemble_swf` turns the records into ``jobs``.
Neither has a Python loop per line or field: clean job lines (18 ASCII numbers) are found by a
numba kernel that writes the records' buffers directly, and every other line goes to
:func:`tokenize_swf_reference`'s vectorised pyarrow code, which defines every record, reason and
flag (:mod:`gridtrace.logs._swf_fast`; the two are tested equal). Assembly parses the tokens with
an exact compiled parser and works on numpy columns.

Mapping (``shared/reference/parsers.md`` §8): ``submit_time`` = UnixStartTime + submit,
``start_time`` = submit + wait, ``end_time`` = start + run; ``cores_alloc`` field 5, ``cores_req``
field 8, ``walltime_req_s`` field 9, ``run_s`` = ``walltime_used_s`` field 4,
``cpu_time_s`` = field 6 × field 5, ``mem_used_bytes`` = field 7 × field 5 × 1024,
``mem_req_bytes`` = field 10 × field 8 × 1024 (field 5 when field 8 is unknown, flagged); ``user``,
``group`` are fields 12 and 13 as decimal strings; ``queue`` and ``partition`` are fields 15 and
16, by the name the header gives the number (``; Queue: 2 short``, ``; Partition: 8
cclcgceli02.in2p3.fr``: in grid logs the partition is the site), else as decimal strings. The
executable, preceding job and think time stay in the ``records`` attrs. Every field
is parsed as a float (decimals are legal) and −1 means unknown (null) in every field. A value
its column cannot hold costs that value, never the line or the file: beyond 2^53 seconds, bytes
or ids, beyond 2^31 − 1 cores, a time outside the years 1 to 9999, a negative count, size or
duration (other than −1), ``1e400`` (inf) are null, flag ``OUT_OF_RANGE`` (also a damaged
``UnixStartTime``, which costs the file's times); a negative wait time is kept, flag
``NEGATIVE_WAIT``; text that is not a decimal number (``inf``, ``nan``, ``0x1F``) quarantines
its line, as any non-numeric field does.

The header
----------
The header is the comment lines before the first job line (comments further down are kept as
records, but set nothing). A line is a *header key* when it starts with a key SWF defines
(:data:`SWF_HEADER_KEYS`, spaces allowed anywhere around it: ``;MaxProcs:128``,
``;  MaxProcs :128``), or with another word directly followed by ``:`` and a blank
(``; Queues: ...``; a URL's ``http://`` is not a key). A line that follows a key line, is not
itself a known key and is indented at least as far as that key's value (tabs every 8 columns)
*continues* the value: its text is added on a new line of the value (the PWA wraps
``Information`` and ``Note`` values so). Every other comment line is free text. Numeric keys
(``MaxProcs`` ...) hold the leading number; text after it (``70  (dual)``) is kept under
``"_comments"``. ``Version`` is text (``2.2a`` is a version). The header is in
``info["swf_header"]`` and in the ``jobs`` table's schema metadata (:func:`log_headers`), so it
survives a Parquet file; :func:`write_swf` writes it back.

States
------
From the status field: 1 COMPLETED, 0 FAILED, 5 CANCELLED, −1 UNKNOWN; when the header says that
partial-execution records exist (``MaxRecords`` > ``MaxJobs``), 2 (a partial execution, to be
continued) is REQUEUED, 3 COMPLETED and 4 FAILED. Status 5 with an unknown run time is a job that
never ran: state DELETED, no start or end time (its logged wait, if any, is kept in ``wait_s``).
Any other status is UNKNOWN with flag ``STATUS_NONSTANDARD`` and the value kept in ``exit_code``.

Some converted logs hold raw exit codes in the status field (0, 1, 2, 126, 127, 265 ...), where
0 means success. A file is read that way when at least :data:`EXIT_CODE_MIN_ROWS` of its known
statuses, and at least :data:`EXIT_CODE_SHARE` of them, lie outside SWF's set: then every known
status is an exit code (0 COMPLETED, anything else FAILED, ``exit_code`` set), flagged
``STATUS_AS_EXIT_CODE``, and a :class:`~gridtrace.errors.DataQualityWarning` names the file. The
share is chosen so that a clean log with a handful of stray values (a conversion slip; none of
the 14 PWA logs checked has any) is read as SWF, while an exit-code log, where codes such as 2,
126, 127, 137 or 143 make up several percent of the jobs, is recognised. A log whose status holds
only 0 and 1 cannot be told apart: ``read_swf(..., status="exit_code")`` forces the reading.

Damaged bytes
-------------
A line with NUL bytes (what a crash or a log rotation leaves) is read as a job only when the NULs
are leading or trailing runs around an otherwise valid line (flag ``NUL_STRIPPED``, the original
bytes kept in ``records.raw``); a line with NUL bytes between its text is a fragment and is
quarantined, never a job. A comment line that is not UTF-8 is decoded by
:func:`gridtrace.logs._text.decode_line` (flag ``NON_UTF8``, bytes kept); a job line that is not
ASCII cannot hold 18 numbers and is quarantined with its bytes. CR LF line ends are read (flag
``CRLF`` on the record). A last line without a line end is read when it has 18 numeric fields
(the fields the jobs use are then complete) and is quarantined as cut short otherwise. A job line
that repeats an earlier job line of the file field for field is flagged ``DUPLICATE`` in
``records`` and makes no second job (``info["swf_duplicate_lines"]`` counts them).

Every flag, with its meaning, is in :data:`FLAGS`.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from gridtrace._atomic import write_text
from gridtrace._log import library_logger
from gridtrace.errors import ConfigError, DataQualityWarning
from gridtrace.logs import _swf_fast
from gridtrace.logs._base import (
    FileParse,
    ParseResult,
    dominant_offset,
    parts_quarantine,
    result_of_parts,
)
from gridtrace.logs._columnar import (
    as_text,
    interleave,
    offsets_of,
    quarantine_table,
    records_table,
    repeat_string,
    split_lines,
    stamps_out_of_range,
    string_array,
)
from gridtrace.logs._io import StrPath
from gridtrace.logs._stream import Chunk, LineFormat, RangeSplit, file_reader, file_tokenizer
from gridtrace.logs._text import NON_UTF8
from gridtrace.schema import JOBS, RECORDS

__all__ = [
    "EXIT_CODE_MIN_ROWS",
    "EXIT_CODE_SHARE",
    "FLAGS",
    "HEADER_METADATA_KEY",
    "SWF_FIELDS",
    "SWF_HEADER_KEYS",
    "ExportResult",
    "StatusMode",
    "assemble_swf",
    "log_headers",
    "looks_like_swf",
    "parse_swf_header",
    "processors_of_headers",
    "read_swf",
    "tokenize_swf",
    "tokenize_swf_file",
    "tokenize_swf_reference",
    "with_log_headers",
    "write_swf",
]

FLAGS: Mapping[str, str] = {
    "NEGATIVE_WAIT": (
        "the wait time is negative (other than -1, unknown): kept as logged, so the start lies "
        "before the submit time"
    ),
    "UNSORTED": (
        "the job's submit time is earlier than that of a line before it: rows are sorted by "
        "submit time (then line), so this row moved; info['swf_unsorted_rows'] counts them"
    ),
    "SUBMIT_UNKNOWN": (
        "the submit field is -1: no submit, start or end time; the row is sorted last"
    ),
    "TIME_RELATIVE": (
        "the file has no UnixStartTime: times are placed from the Unix epoch (1970-01-01 UTC)"
    ),
    "STATUS_NONSTANDARD": (
        "the status is outside SWF's set (0, 1, 5, and 2-4 where partial records exist) in a "
        "file read as SWF: state UNKNOWN, the status kept in exit_code"
    ),
    "STATUS_AS_EXIT_CODE": (
        "the file's status field holds exit codes (too many values outside SWF's set): this "
        "status was read as an exit code, 0 COMPLETED, anything else FAILED, kept in exit_code"
    ),
    "PARTIAL_EXECUTION": (
        "status 2, 3 or 4 in a file whose header declares partial-execution records (MaxRecords "
        "> MaxJobs): one execution of a checkpointed or swapped job; 2 REQUEUED (to be "
        "continued), 3 COMPLETED, 4 FAILED"
    ),
    "NEVER_RAN": (
        "the job never started (SWF: status 5 with an unknown run time; GWF: also wait and run "
        "both -1): state DELETED, no start or end time, whatever the status said"
    ),
    "MEM_REQ_FROM_ALLOC": (
        "the requested processors are unknown: mem_req_bytes is the requested memory per "
        "processor times the allocated processors"
    ),
    "ROUNDED": "a field stored as integer seconds, cores or bytes had a fraction and was rounded",
    "OUT_OF_RANGE": (
        "a field (or a size derived from it, such as memory x processors) is beyond what its "
        "column holds exactly (2^53 seconds or bytes, 2^31 - 1 cores), a time lies outside the "
        "years 1 to 9999, an id is beyond 2^53, or a count, size or duration is negative (other "
        "than -1, unknown): that value is null (an end time computed from it too)"
    ),
    "NUL_STRIPPED": (
        "the line had leading or trailing runs of NUL bytes (a crash or a rotation): they were "
        "stripped and the rest read as a whole line; the original bytes are in records.raw"
    ),
    "CRLF": "the line ended in CR LF (a Windows line end); the CR is not part of any value",
    "DUPLICATE": (
        "records only: this job line repeats an earlier job line of the file field for field; "
        "no second job is made from it"
    ),
    NON_UTF8: (
        "records only: a comment line that is not UTF-8, decoded as Windows-1252 (else "
        "Latin-1); the original bytes are in records.raw"
    ),
}
"""Every flag this reader sets on a row, with what it means (see ``flag_meanings``)."""

logger = library_logger(__name__)

# the pyarrow-stubs' overloads are narrower than these compute chains: arrays are typed loosely
_pc: Any = pc
_pa: Any = pa
Arr: TypeAlias = Any

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
Bool = npt.NDArray[np.bool_]

StatusMode = Literal["auto", "swf", "exit_code"]
"""How the status field is read: recognised per file, as SWF's codes, or as exit codes."""

EXIT_CODE_SHARE = 0.01
"""Share of a file's known statuses outside SWF's set from which the file holds exit codes."""

EXIT_CODE_MIN_ROWS = 3
"""Fewest statuses outside SWF's set that make a file an exit-code file (one stray value never
does, however small the file)."""

HEADER_METADATA_KEY = b"gridtrace.log_header"
"""Schema-metadata key of a ``jobs`` table holding its log's header(s) as JSON."""

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

SWF_HEADER_KEYS: frozenset[str] = frozenset(
    {
        "Version",
        "Computer",
        "Installation",
        "Acknowledge",
        "Information",
        "Conversion",
        "MaxJobs",
        "MaxRecords",
        "Preemption",
        "UnixStartTime",
        "TimeZone",
        "TimeZoneString",
        "StartTime",
        "EndTime",
        "MaxNodes",
        "MaxProcs",
        "MaxRuntime",
        "MaxMemory",
        "AllowOveruse",
        "MaxQueues",
        "Queues",
        "Queue",
        "MaxPartitions",
        "Partitions",
        "Partition",
        "Note",
    }
)
"""The header keys SWF v2.2 defines; a line starting with one is always a key line."""

_NUMBER = r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$"
_KEY_AT_START = re.compile(r"^([ \t]*)([A-Za-z][A-Za-z0-9_]*)[ \t]*:(.*)$", re.DOTALL)
_LEADING_NUMBER = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?![\d.])")
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
_COMMENTS = "_comments"  # header entry: text after a numeric key's number, by key
_TEXT = "_text"  # header entry: free comment lines, in order
_CONTINUES = "continues"  # records attrs of a continuation line: the key it continues
_TAB = 8

_STATE_NAMES = ("COMPLETED", "FAILED", "CANCELLED", "UNKNOWN", "DELETED", "REQUEUED")
(_COMPLETED, _FAILED, _CANCELLED, _UNKNOWN, _DELETED, _REQUEUED) = range(len(_STATE_NAMES))
_STATES = {1: "COMPLETED", 0: "FAILED", 5: "CANCELLED", -1: "UNKNOWN"}
_PARTIAL_STATES = {2: _REQUEUED, 3: _COMPLETED, 4: _FAILED}
_STATUS_OF_STATE = {
    "COMPLETED": 1,
    "FAILED": 0,
    "TIMEOUT": 0,
    "NODE_FAIL": 0,
    "REQUEUED": 0,
    "PREEMPTED": 0,
    "CANCELLED": 5,
    "DELETED": 5,
}
_PARTIAL_STATUS_OF_STATE = {"REQUEUED": 2, "COMPLETED": 3, "FAILED": 4}


# --------------------------------------------------------------------------- header


def _header_value(key: str, value: str) -> tuple[Any, str]:
    """Return a header value and the comment after it.

    Numeric keys give their leading number (an int when whole) and the text after it; other
    keys, and numeric keys without a leading number, give the text and no comment.
    """
    if key in _NUMERIC_KEYS:
        match = _LEADING_NUMBER.match(value)
        if match:
            number = float(match.group(1))
            parsed: Any = int(number) if number.is_integer() and abs(number) < 2**63 else number
            return parsed, value[match.end() :].strip()
    return value, ""


def _expanded_width(marker: str, text: str) -> int:
    """Columns ``text`` takes after ``marker`` at the start of a line, tabs every 8 columns."""
    return len((marker + text).expandtabs(_TAB)) - len(marker)


def _header_key(body: str) -> tuple[str, str, int] | None:
    """``(key, value, value column)`` when a comment body (marker removed) is a key line.

    A key SWF defines may be followed by ``:`` and anything; another word needs ``:`` and a
    blank (or nothing) after it, so that ``http://...`` or ``12:30`` is not a key. The value
    column counts from the marker, tabs expanded (``0`` when the value is empty: any deeper line
    then continues it).
    """
    match = _KEY_AT_START.match(body)
    if match is None:
        return None
    key, rest = match.group(2), match.group(3)
    if key not in SWF_HEADER_KEYS and rest and rest[0] not in " \t":
        return None
    value = rest.strip()
    if not value:
        return key, "", _expanded_width(";", match.group(1)) + 1
    start = match.start(3) + (len(rest) - len(rest.lstrip()))
    return key, value, _expanded_width(";", body[:start])


@dataclass
class _CommentState:
    """Where the comment lines read so far left off: what a next comment line may continue."""

    open_key: str | None = None  # the key a next line may continue
    open_column: int = 0
    previous_line: int = -2


def _classify_comments(
    bodies: Sequence[str], lines: Sequence[int], state: _CommentState | None = None
) -> list[tuple[str, str | None, str]]:
    """Read comment lines (marker removed, in line order) as header keys, continuations, text.

    Returns one ``(kind, key, value)`` per line: ``("key", key, value)``, ``("more", key,
    text)`` for a line continuing ``key``'s value, or ``("text", None, text)`` (the stripped
    line; ``""`` for a blank comment). See the module notes for the rules. ``state`` carries
    an open key from the comment lines of an earlier chunk of the file into these, and is
    updated (a fresh state when None: the file's first lines).
    """
    out: list[tuple[str, str | None, str]] = []
    if state is None:
        state = _CommentState()
    open_key = state.open_key
    open_column = state.open_column
    previous_line = state.previous_line
    for body, line in zip(bodies, lines, strict=True):
        stripped = body.strip()
        parsed = _header_key(body) if stripped else None
        continues = (
            open_key is not None
            and bool(stripped)
            and line == previous_line + 1
            and (parsed is None or parsed[0] not in SWF_HEADER_KEYS)
            and _expanded_width(";", body[: len(body) - len(body.lstrip())]) >= open_column
        )
        if continues:
            out.append(("more", open_key, stripped))
        elif parsed is not None:
            key, value, column = parsed
            out.append(("key", key, value))
            open_key, open_column = key, column
        else:
            out.append(("text", None, stripped))
            open_key = None
        previous_line = line
    state.open_key, state.open_column, state.previous_line = open_key, open_column, previous_line
    return out


def _fold_header(entries: Iterable[tuple[str, str | None, str]]) -> dict[str, Any]:
    """Build the header mapping from classified comment lines (see :func:`parse_swf_header`)."""
    header: dict[str, Any] = {}
    comments: dict[str, str] = {}
    for kind, key, value in entries:
        if kind == "text" or key is None:
            if value:
                header.setdefault(_TEXT, []).append(value)
            continue
        if kind == "key":
            parsed, comment = _header_value(key, value)
            if key not in header:
                header[key] = parsed
                if comment:
                    comments[key] = comment
            elif isinstance(header[key], list):
                header[key].append(parsed)
            else:
                header[key] = [header[key], parsed]
            continue
        current = header.get(key)
        last = current[-1] if isinstance(current, list) else current
        if isinstance(last, str):
            joined = f"{last}\n{value}" if last else value
            if isinstance(current, list):
                current[-1] = joined
            else:
                header[key] = joined
        else:  # a number's continuation belongs to its comment
            comments[key] = f"{comments[key]}\n{value}" if key in comments else value
    if comments:
        header[_COMMENTS] = comments
    return header


def parse_swf_header(lines: Iterable[str]) -> dict[str, Any]:
    r"""Collect the header metadata of SWF comment lines (with or without their leading ``;``).

    Keys may be right-aligned or written without spaces (``;MaxProcs:128``); a value wrapped
    onto following, deeper-indented comment lines is one value with its lines joined by a
    newline; numeric keys hold their leading number (``MaxNodes: 70  (dual)`` gives 70 and
    ``"(dual)"`` under ``"_comments"``); repeated keys give a list of values in order; other
    lines go, in order, to the list under ``"_text"`` (blank comment lines are left out). It
    never fails.

    Parameters
    ----------
    lines : iterable of str
        The comment lines, in file order (consecutive lines).

    Returns
    -------
    dict
        ``{key: value or [values]}``, plus ``"_text"`` and ``"_comments"`` when there are any.

    Examples
    --------
    >>> parse_swf_header(["; MaxNodes: 70 (dual)", ";  Version: 2.2a"])
    {'MaxNodes': 70, 'Version': '2.2a', '_comments': {'MaxNodes': '(dual)'}}
    >>> parse_swf_header(["; Information: http://a/", ";              http://b/"])
    {'Information': 'http://a/\nhttp://b/'}
    """
    bodies: list[str] = []
    for line in lines:
        text = line.lstrip()
        bodies.append(text[1:] if text.startswith((";", "#")) else text)
    return _fold_header(_classify_comments(bodies, list(range(len(bodies)))))


def _header_attrs(entries: Sequence[tuple[str, str | None, str]]) -> list[list[tuple[str, str]]]:
    """Return the ``records`` attrs of classified comment lines, as written."""
    attrs: list[list[tuple[str, str]]] = []
    for kind, key, value in entries:
        if kind == "key" and key is not None:
            attrs.append([(key, value)])
        elif kind == "more" and key is not None:
            attrs.append([(_CONTINUES, key), ("text", value)])
        else:
            attrs.append([("text", value)])
    return attrs


def _entries_of_attrs(attrs: Iterable[Any]) -> list[tuple[str, str | None, str]]:
    """Classified comment lines back from their ``records`` attrs (see :func:`_header_attrs`)."""
    entries: list[tuple[str, str | None, str]] = []
    for pairs in attrs:
        items = list(pairs or ())
        names = [name for name, _ in items]
        if len(items) == 2 and names == [_CONTINUES, "text"]:
            entries.append(("more", items[0][1], items[1][1]))
        elif len(items) == 1 and names[0] == "text":
            entries.append(("text", None, items[0][1]))
        elif len(items) == 1:
            entries.append(("key", items[0][0], items[0][1]))
    return entries


def _header_of(records: pa.Table, first_job: int | None = -1) -> dict[str, Any]:
    """Return one file's header: its comment lines before the first job line, folded.

    ``first_job`` is the row of the first job record (None: there is none), found here when
    not given (-1).
    """
    kinds = records.column("record_type")
    is_header = np.asarray(_pc.equal(kinds, "H").to_numpy(zero_copy_only=False), dtype=bool)
    rows = np.flatnonzero(is_header)
    if not len(rows):
        return {}
    if first_job == -1:
        is_job = np.asarray(_pc.equal(kinds, "J").to_numpy(zero_copy_only=False), dtype=bool)
        first_job = int(np.argmax(is_job)) if is_job.any() else None
    if first_job is not None:  # rows are in line order: the header comes before the first job
        rows = rows[rows < first_job]
    attrs = records.column("attrs").take(_pa.array(rows))
    return _fold_header(_entries_of_attrs(attrs.to_pylist()))


def with_log_headers(table: pa.Table, log_format: str, headers: Sequence[Any]) -> pa.Table:
    """Return ``table`` with its log's header(s) in the schema metadata (other keys kept).

    Parameters
    ----------
    table : pyarrow.Table
        A ``jobs`` table.
    log_format : str
        The format whose header it is (``"swf"``, ``"gwf"``).
    headers : sequence of mapping
        One header per file read, in reading order.

    The number of jobs the table holds is stored too, so that a writer can tell the log's jobs
    from a selection of them.
    """
    metadata = dict(table.schema.metadata or {})
    content = {"format": log_format, "headers": [dict(h) for h in headers], "jobs": table.num_rows}
    metadata[HEADER_METADATA_KEY] = json.dumps(content, default=str).encode()
    return table.replace_schema_metadata(metadata)


def log_headers(table: pa.Table) -> tuple[str | None, list[dict[str, Any]]]:
    """Return the format and the per-file headers a reader stored in a table's metadata.

    Returns
    -------
    format : str or None
        ``"swf"``, ``"gwf"``, or None when the table carries no header.
    headers : list of dict
        One header per file, in reading order (empty when none).
    """
    raw = (table.schema.metadata or {}).get(HEADER_METADATA_KEY)
    if raw is None:
        return None, []
    try:
        content = json.loads(raw)
        headers = [dict(h) for h in content.get("headers", [])]
        return str(content.get("format")), headers
    except (ValueError, TypeError, AttributeError):
        logger.warning("the table's %s metadata is not valid JSON; ignored", HEADER_METADATA_KEY)
        return None, []


def _header_number(header: Mapping[str, Any], key: str) -> float | None:
    value = header.get(key)
    if isinstance(value, list):
        value = value[0] if value else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def processors_of_headers(headers: Sequence[Mapping[str, Any]]) -> tuple[int, str] | None:
    """Return the machine's processor count as the log's headers state it, and its source.

    ``MaxProcs`` when given; else ``MaxNodes``, each node counted as one processor (SWF counts
    processors in its job fields, and a header without ``MaxProcs`` describes a machine of
    single-processor nodes: the Lublin–Feitelson model's, RLScheduler's reading). Over several
    files the largest value counts.

    Returns
    -------
    tuple of (int, str) or None
        ``(P, source)``, source naming the key (and the files when they disagree), or None when
        no header gives a positive count.
    """
    found: list[tuple[int, str]] = []
    for header in headers:
        procs = _header_number(header, "MaxProcs")
        nodes = _header_number(header, "MaxNodes")
        if procs is not None and 1 <= procs <= _INT_BOUNDS[32]:
            found.append((int(procs), "MaxProcs"))
        elif nodes is not None and 1 <= nodes <= _INT_BOUNDS[32]:
            found.append((int(nodes), "MaxNodes (no MaxProcs: one processor per node)"))
    if not found:
        return None
    best = max(found)
    if len({count for count, _ in found}) > 1:
        return best[0], f"{best[1]}, the largest of {len(found)} files' headers"
    return best


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
            parsed = _header_key(line[1:].decode("latin-1"))
            key = parsed[0] if parsed else None
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


def _flag_lists(flag_names: Sequence[tuple[str, Bool]], n: int) -> Arr:
    """Build a ``flags`` column: per row, the names whose mask is set, in order (else null)."""
    masks = np.stack([mask for _, mask in flag_names], axis=1) if flag_names else np.zeros((n, 0))
    rows, which = np.nonzero(masks)  # row-major: by row, then in flag order
    counts = np.bincount(rows, minlength=n)
    names = _pa.array([name for name, _ in flag_names], pa.string())
    return _pa.ListArray.from_arrays(
        _pa.array(offsets_of(counts).astype(np.int32)),
        names.take(_pa.array(which)),
        mask=_pa.array(counts == 0),
    )


@dataclass(frozen=True)
class _LineFormat:
    """What a job line of a one-line-per-job format is (SWF and GWF share the tokeniser)."""

    name: str  # the source_format
    fields: tuple[str, ...]  # attrs names, in file order
    numeric: Bool  # which fields must be numbers
    markers: tuple[str, ...]  # what starts a comment line
    count_reason: str  # quarantine reason, formatted with n (expected) and found
    token_reason: str  # quarantine reason of a line whose numeric fields are not numbers


_SWF_LINES = _LineFormat(
    name="swf",
    fields=SWF_FIELDS,
    numeric=np.ones(_N, dtype=bool),
    markers=(";",),
    count_reason="expected {n} numeric fields, found {found}",
    token_reason="non-numeric field in a job line",
)

_NUL_ONLY = "only NUL bytes and blanks (what a crash or a preallocated log leaves): not a record"
_NUL_INSIDE = (
    "NUL bytes between the text of the line (a fragment a crash or a log rotation left): "
    "not read as a job; the bytes are kept here"
)


def _strip_nul_runs(raw_lines: list[bytes]) -> tuple[list[bytes], Bool, dict[int, str]]:
    """Strip leading and trailing runs of NUL bytes (with blanks among them) from lines.

    Returns the lines to read on, a mask of those repaired, and the quarantine reason of each
    line that is nothing but NULs or has NULs between its text. A Python loop over the lines
    with a NUL byte only (found by one vectorised search).
    """
    n = len(raw_lines)
    repaired = np.zeros(n, dtype=bool)
    reasons: dict[int, str] = {}
    if not n:
        return raw_lines, repaired, reasons
    has_nul = _pc.match_substring(_pa.array(raw_lines, pa.binary()), "\x00")
    rows = np.flatnonzero(np.asarray(has_nul.to_numpy(zero_copy_only=False), dtype=bool))
    if not len(rows):
        return raw_lines, repaired, reasons
    lines = list(raw_lines)
    for i in rows.tolist():
        core = raw_lines[i].strip(b"\x00 \t\r")
        if not core:
            reasons[i] = _NUL_ONLY
        elif b"\x00" in core:
            reasons[i] = _NUL_INSIDE
        else:
            lines[i] = core
            repaired[i] = True
    return lines, repaired, reasons


def _tokenize_lines(
    raw_lines: list[bytes],
    line_no: I64,
    *,
    site: str,
    src_file: str,
    fmt: _LineFormat = _SWF_LINES,
    cut_line: int | None = None,
    comments: _CommentState | None = None,
) -> tuple[pa.Table, pa.Table]:
    """Tokenise some lines of a file (the reference): their ``records`` and ``quarantine`` rows.

    Vectorised with pyarrow compute; every line kind, reason and flag is defined here. The fast
    path of :func:`tokenize_swf_file` hands over every line it does not recognise as a clean job
    line. ``line_no`` gives each line's number in the file (ascending); ``cut_line`` is the
    number of the file's last line when it has no line end; ``comments`` carries the header's
    open key from an earlier chunk of the file.
    """
    n_fields = len(fmt.fields)
    lines, nul_stripped, reasons = _strip_nul_runs(raw_lines)
    original = _pa.array(raw_lines, pa.binary())
    crlf = np.asarray(_pc.ends_with(original, "\r").to_numpy(zero_copy_only=False), dtype=bool)
    binary = original if lines is raw_lines else _pa.array(lines, pa.binary())
    text, non_utf8 = as_text(binary)
    stripped = _pc.utf8_trim_whitespace(text)

    unreadable = np.zeros(len(lines), dtype=bool)
    unreadable[list(reasons)] = True
    is_comment = np.zeros(len(lines), dtype=bool)
    for marker in fmt.markers:
        is_comment |= np.asarray(_pc.starts_with(stripped, marker).to_numpy(zero_copy_only=False))
    is_comment &= ~unreadable
    is_blank = np.asarray(_pc.equal(_pc.utf8_length(stripped), 0).to_numpy(zero_copy_only=False))
    is_blank &= ~unreadable
    other = ~is_comment & ~is_blank & ~unreadable

    # job candidates: split on whitespace, check the count and that the numeric tokens are
    candidates = np.flatnonzero(other)
    tokens_list = _pc.utf8_split_whitespace(stripped.take(_pa.array(candidates)))
    counts = np.asarray(_pc.list_value_length(tokens_list).to_numpy(zero_copy_only=False))
    flat = _pc.list_flatten(tokens_list)
    position = np.arange(len(flat)) - np.repeat(offsets_of(counts)[:-1], counts)
    checked = (np.repeat(counts, counts) == n_fields) & fmt.numeric[
        np.minimum(position, n_fields - 1)
    ]
    bad = np.zeros(len(flat), dtype=bool)
    if checked.any():
        bad[checked] = ~_numeric_tokens(flat.filter(_pa.array(checked)))
    bad_tokens = np.bincount(
        np.repeat(np.arange(len(candidates)), counts), weights=bad, minlength=len(candidates)
    )
    good = (counts == n_fields) & (bad_tokens == 0)

    for i in np.flatnonzero(is_blank):
        reasons[int(i)] = "blank line"
    for j in np.flatnonzero(~good):
        row = int(candidates[j])
        found = int(counts[j])
        if found != n_fields:
            reason = fmt.count_reason.format(n=n_fields, found=found)
            if cut_line is not None and int(line_no[row]) == cut_line:
                reason = f"the file's last line has no line end: cut short ({reason})"
            reasons[row] = reason
        else:
            reasons[row] = fmt.token_reason

    # job records: attrs map the field names onto the tokens as written
    job_rows = candidates[good]
    keep_tokens = np.repeat(good, counts)
    job_tokens = flat.filter(_pa.array(keep_tokens)) if len(flat) else _pa.array([], pa.string())
    jobs_part = _job_records(
        site=site,
        src_file=src_file,
        lines=line_no[job_rows],
        values=job_tokens,
        ids=job_tokens.take(
            _pa.array(np.arange(0, len(job_rows) * n_fields, n_fields, dtype=np.int64))
        ),
        fmt=fmt,
        flags=_flag_lists(
            [("NUL_STRIPPED", nul_stripped[job_rows]), ("CRLF", crlf[job_rows])], len(job_rows)
        ),
        raw=_pa.array(
            [raw_lines[i] if nul_stripped[i] else None for i in job_rows.tolist()], pa.binary()
        )
        if nul_stripped.any()
        else None,
    )

    # comment records: a Python loop per comment line (a few dozen per file)
    comment_rows = np.flatnonzero(is_comment)
    comment_text = stripped.take(_pa.array(comment_rows)).to_pylist()
    entries = _classify_comments(
        [line[1:] for line in comment_text], line_no[comment_rows].tolist(), comments
    )
    keep_raw = non_utf8[comment_rows] | nul_stripped[comment_rows]
    header_part = records_table(
        site=site,
        source_format=fmt.name,
        src_file=src_file,
        lines=line_no[comment_rows],
        record_type="H",
        job_id_raw=pa.nulls(len(comment_rows), pa.string()),
        attrs=_pa.array(_header_attrs(entries), pa.map_(pa.string(), pa.string())),
        flags=_flag_lists(
            [
                (NON_UTF8, non_utf8[comment_rows]),
                ("NUL_STRIPPED", nul_stripped[comment_rows]),
                ("CRLF", crlf[comment_rows]),
            ],
            len(comment_rows),
        ),
        raw=_pa.array(
            [raw_lines[i] if k else None for i, k in zip(comment_rows, keep_raw, strict=True)],
            pa.binary(),
        ),
    )
    records = interleave(jobs_part, line_no[job_rows], header_part)

    bad_rows = sorted(reasons)
    quarantine = quarantine_table(
        site=site,
        source_format=fmt.name,
        src_file=src_file,
        lines=line_no[bad_rows],
        reasons=[reasons[i] for i in bad_rows],
        raw=[raw_lines[i] for i in bad_rows],
    )
    return records, quarantine


def _field_names(rows: int, names: tuple[str, ...]) -> Arr:
    """Return the field names, ``rows`` times over, as one string array built by numpy."""
    keys = np.frombuffer("".join(names).encode(), dtype=np.uint8)
    key_offsets = offsets_of(np.array([len(name) for name in names]))
    offsets = np.arange(rows, dtype=np.int64)[:, None] * len(keys) + key_offsets[:-1]
    offsets = np.append(offsets.ravel(), rows * len(keys)).astype(np.int32)
    return string_array(offsets, np.tile(keys, rows))


def _job_records(
    *,
    site: str,
    src_file: str,
    lines: I64,
    values: Arr,
    ids: Arr,
    fmt: _LineFormat = _SWF_LINES,
    flags: Arr | None = None,
    raw: Arr | None = None,
) -> pa.Table:
    """Build the ``records`` rows of job lines from their tokens (all fields) and job numbers."""
    rows = len(lines)
    width = len(fmt.fields)
    attrs = _pa.MapArray.from_arrays(
        _pa.array(np.arange(0, (rows + 1) * width, width, dtype=np.int32)),
        _field_names(rows, fmt.fields),
        values,
    )
    return records_table(
        site=site,
        source_format=fmt.name,
        src_file=src_file,
        lines=lines,
        record_type="J",
        job_id_raw=ids,
        attrs=attrs,
        flags=flags,
        raw=raw,
    )


def _cut_line(data: bytes, last_line: int) -> int | None:
    """Return ``last_line`` (the number of the last line) when it has no line end, else None."""
    return last_line if data and not data.endswith(b"\n") else None


def tokenize_swf_reference(
    data: bytes,
    *,
    site: str,
    src_file: str,
    first_line: int = 1,
    comments: _CommentState | None = None,
) -> FileParse:
    """Tokenise a file's content line by line with the readable reference only.

    :func:`tokenize_swf_file` gives the same rows; this path is kept to test it against and for
    interpreters without numba. ``data`` may be a chunk of whole lines starting at line
    ``first_line``, ``comments`` the header state earlier chunks left (see
    :mod:`gridtrace.logs._stream`).
    """
    raw_lines = split_lines(data)
    line_no = np.arange(first_line, first_line + len(raw_lines), dtype=np.int64)
    records, quarantine = _tokenize_lines(
        raw_lines,
        line_no,
        site=site,
        src_file=src_file,
        cut_line=_cut_line(data, first_line + len(raw_lines) - 1),
        comments=comments,
    )
    return FileParse(
        src_file=src_file, records=records, quarantine=quarantine, lines_read=len(raw_lines)
    )


def tokenize_swf(
    data: bytes,
    *,
    site: str,
    src_file: str,
    first_line: int = 1,
    comments: _CommentState | None = None,
) -> FileParse:
    """Tokenise a file's content, clean job lines by the compiled scanner.

    Every other line goes to the reference (see :mod:`gridtrace.logs._swf_fast`); the rows are
    those of :func:`tokenize_swf_reference`, in line order. ``data`` may be a chunk of whole
    lines starting at line ``first_line``, ``comments`` the header state earlier chunks left.
    """
    if not _swf_fast.compile_kernel():  # pragma: no cover
        return tokenize_swf_reference(
            data, site=site, src_file=src_file, first_line=first_line, comments=comments
        )
    fast_parts: list[pa.Table] = []
    fast_lines: list[I64] = []
    declined: list[bytes] = []
    declined_lines: list[I64] = []
    start = first_line
    for scan in _swf_fast.scan_swf(data):
        line_no = np.arange(first_line, first_line + scan.lines, dtype=np.int64)
        first_line += scan.lines
        lines = line_no[scan.fast]
        crlf = scan.crlf[scan.fast]
        fast_parts.append(
            _job_records(
                site=site,
                src_file=src_file,
                lines=lines,
                values=scan.values,
                ids=scan.ids,
                flags=_flag_lists([("CRLF", crlf)], len(lines)) if crlf.any() else None,
            )
        )
        fast_lines.append(lines)
        rows = np.flatnonzero(~scan.fast)
        declined.extend(data[scan.starts[i] : scan.ends[i]] for i in rows)
        declined_lines.append(line_no[rows])
    n_lines = first_line - start
    if not fast_parts:
        return tokenize_swf_reference(
            data, site=site, src_file=src_file, first_line=start, comments=comments
        )
    other_lines = np.concatenate(declined_lines)
    others, quarantine = _tokenize_lines(
        declined,
        other_lines,
        site=site,
        src_file=src_file,
        cut_line=_cut_line(data, first_line - 1),
        comments=comments,
    )
    fast = pa.concat_tables(fast_parts)
    records = interleave(fast, np.concatenate(fast_lines), others)
    return FileParse(src_file=src_file, records=records, quarantine=quarantine, lines_read=n_lines)


def _tokenize_swf_chunk(
    chunk: Chunk, state: _CommentState, *, site: str, src_file: str
) -> tuple[pa.Table, pa.Table]:
    parsed = tokenize_swf(
        chunk.data, site=site, src_file=src_file, first_line=chunk.first_line, comments=state
    )
    return parsed.records, parsed.quarantine


SWF_STREAM: LineFormat[_CommentState] = LineFormat(
    "swf", _CommentState, _tokenize_swf_chunk, split=RangeSplit(after=b"0123456789")
)
"""The SWF format for the streaming core: the header's open key carried across chunks.

A big file is split after job lines only, where no header comment is open."""


tokenize_swf_file = file_tokenizer(
    "swf", SWF_STREAM, what="one SWF file", rows="comment or job line"
)


# --------------------------------------------------------------------------- assembler


def _job_rows(records: pa.Table) -> tuple[pa.Table, I64]:
    """Select the job records (type ``J``) and the columns assembly reads, with their positions.

    A slice when the job records are contiguous (the usual case: header lines, then job lines).
    """
    table = records.select(["record_type", "src_line", "job_id_raw", "attrs", "flags"])
    kind = _pc.equal(table.column("record_type"), "J")
    is_job = np.asarray(kind.to_numpy(zero_copy_only=False), dtype=bool)
    rows = np.flatnonzero(is_job)
    if len(rows) == 0:
        return table.slice(0, 0), rows
    if rows[-1] - rows[0] + 1 == len(rows):
        return table.slice(int(rows[0]), len(rows)), rows
    return table.filter(_pa.array(is_job)), rows


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


def _origin(header: Mapping[str, Any]) -> int | float | None:
    """Return the header's ``UnixStartTime``: an int, or the float itself beyond int64.

    ``1e400`` is read as inf: every time of the file is then out of range, the read never fails.
    """
    value = _header_number(header, "UnixStartTime")
    if value is None:
        return None
    return int(value) if abs(value) < 2**63 else value


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


def _int_column(
    values: F64, marks: _Marks, *, bits: int = 64, stamp: bool = False, nonnegative: bool = False
) -> Arr:
    """Nullable int from floats (NaN → null), rounding fractions and marking them.

    A value beyond what the column can hold exactly (2^53 for int64, whose float source is exact
    only that far; 2^31 − 1 for int32), a ``stamp`` outside the years 1 to 9999
    (:data:`~gridtrace.logs._columnar.STAMP_RANGE_S`) or a negative value where the field has
    none (``nonnegative``; −1, unknown, is NaN already) is null and its row marked out of range:
    no real job field comes near, so it is a corrupt line, and a wrapped-around number would be
    worse.
    """
    known = ~np.isnan(values)
    with np.errstate(invalid="ignore"):
        huge = known & (np.abs(values) > _INT_BOUNDS[bits])
        if stamp:
            huge |= known & stamps_out_of_range(values)
        if nonnegative:
            huge |= known & (np.round(values) < 0)
    if huge.any():
        marks.out_of_range |= huge
        known &= ~huge
    whole = np.rint(np.where(known, values, 0.0))  # half to even, as np.round
    marks.rounded |= known & (whole != values)
    kind = (np.int32, pa.int32()) if bits == 32 else (np.int64, pa.int64())
    mask = None if known.all() else ~known
    return _pa.array(whole.astype(kind[0]), kind[1], mask=mask)


# the epoch seconds pandas' nanosecond stamps hold (1677-09-21 to 2262-04-11)
_PANDAS_RANGE_S = (-9_223_372_036.0, 9_223_372_036.0)


def _tz_offsets(epochs: F64, zone: str | None) -> Arr:
    """Return the zone's UTC offset at each epoch; null where unknown or beyond pandas' stamps."""
    n = len(epochs)
    if zone is None:
        return pa.nulls(n, pa.int32())
    with np.errstate(invalid="ignore"):
        known = (epochs > _PANDAS_RANGE_S[0]) & (epochs < _PANDAS_RANGE_S[1])
    try:
        stamps = pd.to_datetime(np.where(known, epochs, 0).astype(np.int64), unit="s", utc=True)
        local = stamps.tz_convert(zone).tz_localize(None)
    except (KeyError, ValueError) as exc:  # an unknown zone name
        logger.warning("TimeZoneString %r is not a known zone (%s); no tz_offset_s", zone, exc)
        return pa.nulls(n, pa.int32())
    offsets = (local - stamps.tz_localize(None)).total_seconds().to_numpy().astype(np.int32)
    return _pa.array(offsets, pa.int32(), mask=~known)


def _row_digests(values: F64) -> npt.NDArray[np.uint64]:
    """One 64-bit hash of each row's bits (FNV-1a over its words): equal rows, equal hashes."""
    bits = values.view(np.uint64)
    digest = np.full(len(values), 14695981039346656037, dtype=np.uint64)
    for k in range(values.shape[1]):
        digest ^= bits[:, k]
        digest *= np.uint64(1099511628211)  # wrapping
    return digest


def _duplicate_rows(values: F64) -> Bool:
    """Rows equal, value for value (NaN equal to NaN), to an earlier row of ``values``.

    One vectorised hash of each row's bits finds the candidates; only rows that share a hash
    with another are compared exactly, in Python (none in a clean log).
    """
    n = len(values)
    duplicate = np.zeros(n, dtype=bool)
    if n < 2:
        return duplicate
    digest = _row_digests(values)
    shared = np.flatnonzero(pd.Series(digest).duplicated(keep=False).to_numpy())
    first: dict[bytes, int] = {}
    for i in shared.tolist():
        key = values[i].tobytes()
        if key in first:
            duplicate[i] = True
        else:
            first[key] = i
    return duplicate


def _whole_array(column: Arr) -> Arr:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _flag_mask(flags: Arr, name: str) -> Bool:
    """Which rows' ``flags`` lists hold ``name``."""
    lists = _whole_array(flags)
    out = np.zeros(len(lists), dtype=bool)
    if lists.null_count == len(lists):
        return out
    hits = np.asarray(_pc.equal(_pc.list_flatten(lists), name).to_numpy(zero_copy_only=False))
    parents = np.asarray(_pc.list_parent_indices(lists).to_numpy(), dtype=np.int64)
    out[parents[hits.astype(bool)]] = True
    return out


def _append_flag(flags: Arr, mask: Bool, name: str) -> Arr:
    """Return the ``flags`` lists with ``name`` added at the end of the rows ``mask`` selects."""
    lists = _whole_array(flags)
    old = np.asarray(
        _pc.fill_null(_pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False),
        dtype=np.int64,
    )
    flat = _pc.list_flatten(lists)
    parent = np.asarray(_pc.list_parent_indices(lists).to_numpy(), dtype=np.int64)
    counts = old + mask.astype(np.int64)
    starts = offsets_of(counts)
    old_starts = offsets_of(old)
    marked = np.flatnonzero(mask)
    position = np.concatenate(
        [starts[parent] + (np.arange(len(flat)) - old_starts[parent]), starts[marked] + old[marked]]
    )
    values = _pa.concat_arrays([flat.cast(pa.string()), repeat_string(name, len(marked))])
    return _pa.ListArray.from_arrays(
        _pa.array(starts.astype(np.int32)),
        values.take(_pa.array(np.argsort(position, kind="stable"))),
        mask=_pa.array(counts == 0),
    )


def _partial_records(header: Mapping[str, Any]) -> bool:
    """Whether the header declares partial-execution records (``MaxRecords`` > ``MaxJobs``)."""
    records = _header_number(header, "MaxRecords")
    jobs = _header_number(header, "MaxJobs")
    return records is not None and jobs is not None and records > jobs


def _warn_exit_codes(src_file: str, n_odd: int, n_known: int, *, stacklevel: int) -> None:
    """Say that a file's status field is read as exit codes (``status="auto"``)."""
    warnings.warn(
        f"{src_file}: {n_odd} of {n_known} known statuses are not SWF status codes "
        f"(0, 1, 5): the status field holds exit codes and is read so (0 COMPLETED, "
        f"others FAILED, the code in exit_code; flag STATUS_AS_EXIT_CODE). Read with "
        f"status='swf' to keep SWF's meaning",
        DataQualityWarning,
        stacklevel=stacklevel,
    )


@dataclass(frozen=True)
class _Status:
    """The states, exit codes and status flags of one file's jobs."""

    state: npt.NDArray[np.int32]
    exit_code: Arr
    never_ran: Bool
    flags: list[tuple[str, Bool]]
    as_exit_codes: bool


def _read_status(
    status: F64,
    *,
    run_unknown: Bool,
    never_ran: Bool,
    partial: bool,
    mode: StatusMode,
    src_file: str,
    marks: _Marks,
) -> _Status:
    """Read a file's status field as SWF's codes or, when it holds exit codes, as those.

    ``never_ran`` marks rows that never started whatever their status (GWF's wait and run both
    unknown); as SWF codes, status 5 with ``run_unknown`` never started either.
    """
    n = len(status)
    known = ~np.isnan(status)
    allowed = [0.0, 1.0, 5.0] + ([2.0, 3.0, 4.0] if partial else [])
    odd = known & ~np.isin(status, allowed)
    n_odd, n_known = int(odd.sum()), int(known.sum())
    if mode == "auto":
        as_exit = n_odd >= max(EXIT_CODE_MIN_ROWS, EXIT_CODE_SHARE * n_known)
    else:
        as_exit = mode == "exit_code"
    state = np.full(n, _UNKNOWN, dtype=np.int32)
    flags: list[tuple[str, Bool]]
    if as_exit:
        state[known] = _FAILED
        state[known & (status == 0)] = _COMPLETED
        coded = known
        flags = [("STATUS_AS_EXIT_CODE", known)]
        if mode == "auto":
            _warn_exit_codes(src_file, n_odd, n_known, stacklevel=5)
    else:
        for code, value in ((1, _COMPLETED), (0, _FAILED), (5, _CANCELLED)):
            state[status == code] = value
        partial_rows = np.zeros(n, dtype=bool)
        if partial:
            for code, value in _PARTIAL_STATES.items():
                rows = status == code
                state[rows] = value
                partial_rows |= rows
        never_ran = never_ran | ((status == 5) & run_unknown)
        coded = odd
        flags = [("STATUS_NONSTANDARD", odd), ("PARTIAL_EXECUTION", partial_rows)]
        if n_odd:
            logger.warning(
                "%s: %d jobs have a status outside SWF's set; state UNKNOWN, flag "
                "STATUS_NONSTANDARD (too few to read the field as exit codes)",
                src_file,
                n_odd,
            )
    state[never_ran] = _DELETED
    flags.append(("NEVER_RAN", never_ran))
    exit_code = _int_column(np.where(coded, status, np.nan), marks, bits=32)
    return _Status(
        state=state, exit_code=exit_code, never_ran=never_ran, flags=flags, as_exit_codes=as_exit
    )


@dataclass(frozen=True)
class _FileJobs:
    """One file's jobs and what assembling them found."""

    table: pa.Table
    header: dict[str, Any]
    late: int
    duplicates: I64  # positions in the file's records of job lines that repeat earlier ones
    as_exit_codes: bool


def _ids_text(values: F64, marks: _Marks) -> Arr:
    """Id fields as decimal strings (a fraction kept as written by numpy), NaN as null.

    An id beyond 2^53 (where its float is no longer the number written) or not finite is null,
    its row marked out of range.
    """
    known = ~np.isnan(values)
    huge = known & ~(np.abs(values) <= _INT_BOUNDS[64])
    if huge.any():
        marks.out_of_range |= huge
        known &= ~huge
        values = np.where(huge, np.nan, values)
    whole = known & (values == np.round(values))
    text = _pa.array(np.where(whole, values, 0).astype(np.int64)).cast(pa.string())
    if (known & ~whole).any():  # fractional ids are rare: text them only when present
        text = _pc.if_else(_pa.array(whole), text, _pa.array(values.astype(str), pa.string()))
    return _pc.if_else(_pa.array(~known), None, text)


def _cpu_seconds(per_proc: F64, usable: F64, marks: _Marks) -> Arr:
    """Return ``cpu_time_s``: CPU time per processor × processors.

    Null, its row marked, where the product is not finite, beyond 2^53 seconds or negative.
    """
    cpu = per_proc * usable
    with np.errstate(invalid="ignore"):
        bad = ~np.isnan(cpu) & ~((cpu >= 0) & (cpu <= _INT_BOUNDS[64]))
    if bad.any():
        marks.out_of_range |= bad
        cpu = np.where(bad, np.nan, cpu)
    return _pa.array(cpu, pa.float64(), from_pandas=True)


def _nulls(column: Arr) -> Bool:
    """Which rows of an Arrow array are null."""
    return np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def _without_negatives(values: F64, marks: _Marks) -> F64:
    """``values`` with the negative ones (−1, unknown, is NaN already) NaN, their rows marked."""
    with np.errstate(invalid="ignore"):
        negative = np.round(values) < 0
    if negative.any():
        marks.out_of_range |= negative
        return np.where(negative, np.nan, values)
    return values


def _jobs_of_file(
    records: pa.Table,
    site: str,
    src_file: str,
    mode: StatusMode,
    *,
    rows: tuple[pa.Table, I64, F64] | None = None,
    header: dict[str, Any] | None = None,
    more_duplicates: Bool | None = None,
    late_after: float = -np.inf,
    duplicate: Bool | None = None,
) -> _FileJobs:
    """Assemble one file's jobs; or, with the keywords, one byte range's of a file.

    A range (:mod:`gridtrace.logs._ranges`) is given what it needs of its whole file: its
    ``header``, the job rows that repeat rows of earlier ranges (``more_duplicates``, over its
    job rows), and the latest submit time before it (``late_after``); ``rows`` are its job
    rows, their positions and fields, as worked out before (:func:`_job_rows`,
    :func:`_fields_of`), with ``duplicate``, its job rows repeating an earlier row of the
    range (:func:`_duplicate_rows`), when known.
    """
    job_records, positions = _job_rows(records) if rows is None else rows[:2]
    if header is None:
        header = _header_of(records, int(positions[0]) if len(positions) else None)
    f = _fields_of(job_records) if rows is None else rows[2]
    if duplicate is None:
        duplicate = _duplicate_rows(f)
    if more_duplicates is not None:  # not in place: a range's own array is kept for its keys
        duplicate = duplicate | more_duplicates
    if duplicate.any():
        logger.warning(
            "%s: %d job lines repeat an earlier line field for field; one job each, the "
            "repeats flagged DUPLICATE in records",
            src_file,
            int(duplicate.sum()),
        )
        f = np.asfortranarray(f[~duplicate])
        job_records = job_records.filter(_pa.array(~duplicate))
    n = job_records.num_rows
    src_line = np.asarray(job_records.column("src_line").to_numpy(), dtype=np.int64)
    nul_stripped = _flag_mask(job_records.column("flags"), "NUL_STRIPPED")

    origin = _origin(header)
    relative = origin is None
    submit_abs = f[:, _SUBMIT] + (0 if origin is None else origin)

    # sort by submit (unknown last), then line; flag the rows that came after a later submit
    no_submit = np.isnan(submit_abs)
    running_max = np.fmax.accumulate(np.where(no_submit, -np.inf, submit_abs))
    late = np.zeros(n, dtype=bool)
    late[1:] = ~no_submit[1:] & (submit_abs[1:] < running_max[:-1])
    if late_after > -np.inf:  # a range: the rows before it count too
        late |= ~no_submit & (submit_abs < late_after)
    job_id_raw = job_records.column("job_id_raw")
    in_order = not late.any() and not no_submit[: n - int(no_submit.sum())].any()
    if not in_order:  # rows are in line order, so in order already unless one is late
        order = np.lexsort((src_line, np.where(no_submit, np.inf, submit_abs)))
        f, submit_abs, no_submit, late, src_line, nul_stripped = (
            np.asfortranarray(f[order]),
            submit_abs[order],
            no_submit[order],
            late[order],
            src_line[order],
            nul_stripped[order],
        )
        job_id_raw = job_id_raw.take(_pa.array(order))

    marks = _Marks(n)
    status = _read_status(
        f[:, _STATUS],
        run_unknown=np.isnan(f[:, _RUN]),
        never_ran=np.zeros(n, dtype=bool),
        partial=_partial_records(header),
        mode=mode,
        src_file=src_file,
        marks=marks,
    )
    run = _without_negatives(f[:, _RUN], marks)
    start = np.where(status.never_ran, np.nan, submit_abs + f[:, _WAIT])
    end = start + run

    wait_s = _int_column(f[:, _WAIT], marks)
    run_s = _int_column(run, marks)
    walltime_req_s = _int_column(f[:, _REQ_TIME], marks, nonnegative=True)
    submit_i = _int_column(submit_abs, marks, stamp=True)
    start_i = _int_column(start, marks, stamp=True)
    end_i = _int_column(end, marks, stamp=True)
    alloc = _int_column(f[:, _ALLOC], marks, bits=32, nonnegative=True)
    req = _int_column(f[:, _REQ_PROCS], marks, bits=32, nonnegative=True)
    procs = np.where(_nulls(alloc), np.nan, f[:, _ALLOC])  # sizes derive from readable counts
    usable = np.where(procs > 0, procs, np.nan)
    req_unknown = np.isnan(f[:, _REQ_PROCS])
    req_procs = np.where(req_unknown, usable, np.where(_nulls(req), np.nan, f[:, _REQ_PROCS]))
    req_procs = np.where(req_procs > 0, req_procs, np.nan)
    mem_from_alloc = req_unknown & ~np.isnan(f[:, _REQ_MEM]) & ~np.isnan(usable)
    mem_used = _int_column(f[:, _MEM] * usable * 1024, marks, nonnegative=True)
    mem_req = _int_column(f[:, _REQ_MEM] * req_procs * 1024, marks, nonnegative=True)
    cpu = _cpu_seconds(f[:, _CPU], usable, marks)
    user = _ids_text(f[:, _USER], marks)
    group = _ids_text(f[:, _GROUP], marks)
    queue = _ids_text(f[:, _QUEUE], marks)
    partition = _ids_text(f[:, _PART], marks)
    job_seq = _int_column(
        np.where(f[:, _JOB] == np.round(f[:, _JOB]), f[:, _JOB], np.nan), _Marks(n)
    )

    flag_names: list[tuple[str, Bool]] = [
        ("NEGATIVE_WAIT", f[:, _WAIT] < 0),  # NaN (unknown) compares False
        ("UNSORTED", late),
        ("SUBMIT_UNKNOWN", no_submit),
        ("TIME_RELATIVE", np.full(n, relative)),
        *status.flags,
        ("MEM_REQ_FROM_ALLOC", mem_from_alloc),
        ("ROUNDED", marks.rounded),
        ("OUT_OF_RANGE", marks.out_of_range),
        ("NUL_STRIPPED", nul_stripped),
    ]
    flags = _flag_lists(flag_names, n)

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
        "user": user,
        "group": group,
        "queue": _named(queue, header.get("Queue")),
        "partition": _named(partition, header.get("Partition")),
        "submit_time": submit_i.cast(ts),
        "start_time": start_i.cast(ts),
        "end_time": end_i.cast(ts),
        "wait_s": wait_s,
        "run_s": run_s,
        "walltime_used_s": run_s,
        "walltime_req_s": walltime_req_s,
        "cpu_time_s": cpu,
        "cores_req": req.cast(pa.int32()),
        "cores_alloc": alloc.cast(pa.int32()),
        "mem_req_bytes": mem_req,
        "mem_used_bytes": mem_used,
        "exit_code": status.exit_code,
        "state": _pa.array(_STATE_NAMES, pa.string()).take(_pa.array(status.state)),
        "tz_offset_s": _tz_offsets(np.where(_nulls(submit_i), np.nan, submit_abs), _zone(header)),
        "src_file": repeat_string(src_file, n),
        "src_line": _pa.array(src_line, pa.int64()),
        "flags": flags,
    }
    table = pa.Table.from_arrays(
        [columns[fld.name] if fld.name in columns else pa.nulls(n, fld.type) for fld in JOBS],
        schema=JOBS,
    )
    return _FileJobs(
        table=table,
        header=header,
        late=int(late.sum()),
        duplicates=positions[duplicate],
        as_exit_codes=status.as_exit_codes,
    )


def _flag_duplicates(records: pa.Table, positions: I64) -> pa.Table:
    """Return ``records`` with flag ``DUPLICATE`` on the rows at ``positions``."""
    if not len(positions):
        return records
    mask = np.zeros(records.num_rows, dtype=bool)
    mask[positions] = True
    index = records.schema.get_field_index("flags")
    flags = _append_flag(records.column("flags"), mask, "DUPLICATE")
    return records.set_column(index, records.schema.field(index), flags)


def assemble_swf(
    parts: Sequence[FileParse], *, tz: str | None = None, status: StatusMode = "auto"
) -> ParseResult:
    """Assemble tokenised SWF files, given in reading order, into a :class:`ParseResult`.

    Each file is assembled on its own (its header sets its time origin and zone, and whether its
    status field holds exit codes); the jobs of all files are concatenated in file order. ``tz``
    is accepted for the registry and ignored: SWF times are epochs offset by the header's
    ``UnixStartTime``.

    Parameters
    ----------
    parts : sequence of FileParse
        The tokenised files.
    tz : str, optional
        Ignored.
    status : {"auto", "swf", "exit_code"}, default "auto"
        How the status field is read: recognised per file (see the module notes), as SWF's
        codes, or as exit codes.

    Returns
    -------
    ParseResult
        ``info["swf_header"]`` holds the first file's header (see :func:`parse_swf_header`),
        ``info["swf_headers"]`` every file's by name, ``info["swf_unsorted_rows"]`` the count
        of rows flagged ``UNSORTED``, ``info["swf_duplicate_lines"]`` the job lines flagged
        ``DUPLICATE``, ``info["swf_exit_code_files"]`` the files whose status was read as exit
        codes. The jobs table carries the headers in its schema metadata (:func:`log_headers`).
    """
    del tz
    if status not in ("auto", "swf", "exit_code"):
        msg = f"status must be 'auto', 'swf' or 'exit_code', not {status!r}"
        raise ConfigError(msg)
    tables: list[pa.Table] = []
    all_records: list[pa.Table] = []
    headers: dict[str, dict[str, Any]] = {}
    unsorted = 0
    duplicates = 0
    exit_files: list[str] = []
    for part in parts:
        records = part.records
        site = str(records.column("site")[0].as_py()) if records.num_rows else "site"
        with np.errstate(over="ignore", invalid="ignore"):  # inf and NaN are nulled, flagged
            found = _jobs_of_file(records, site, part.src_file, status)
        tables.append(found.table)
        all_records.append(_flag_duplicates(records, found.duplicates))
        headers[part.src_file] = found.header
        unsorted += found.late
        duplicates += len(found.duplicates)
        if found.as_exit_codes:
            exit_files.append(part.src_file)
    return _swf_result(parts, tables, all_records, headers, unsorted, duplicates, exit_files)


def _swf_result(
    parts: Sequence[FileParse],
    tables: list[pa.Table],
    all_records: list[pa.Table],
    headers: dict[str, dict[str, Any]],
    unsorted: int,
    duplicates: int,
    exit_files: list[str],
) -> ParseResult:
    """Return the :class:`ParseResult` of files assembled (here, or by ranges on workers)."""
    jobs = pa.concat_tables(tables) if tables else JOBS.empty_table()
    jobs = with_log_headers(jobs, "swf", list(headers.values()))
    records = pa.concat_tables(all_records) if parts else RECORDS.empty_table()
    quarantine = parts_quarantine(parts)
    tz_offset = dominant_offset(jobs)
    first = next(iter(headers.values()), {})
    return result_of_parts(
        parts,
        records=records,
        jobs=jobs,
        quarantine=quarantine,
        tz_offset_s=tz_offset,
        info={
            "format": "swf",
            "swf_header": first,
            "swf_headers": headers,
            "swf_unsorted_rows": unsorted,
            "swf_duplicate_lines": duplicates,
            "swf_exit_code_files": exit_files,
        },
    )


read_swf = file_reader(
    "swf",
    tokenize_swf_file,
    assemble_swf,
    paths_name="path",
    what="SWF (Parallel Workloads Archive) files",
    paths="SWF files (plain or gzip/bzip2/xz, detected by content) or folders of them.",
    assemble_options=["status"],
    options_doc="""
        status : {"auto", "swf", "exit_code"}, default "auto"
            How the status field is read: recognised per file (a file whose statuses lie
            outside SWF's set beyond a small share holds exit codes, see the module notes),
            as SWF's codes, or as exit codes.
    """,
    returns="""
        the header metadata is in ``info["swf_header"]`` and in the jobs table's schema
        metadata
    """,
    warns="""
        Warns
        -----
        DataQualityWarning
            Naming each file whose status field is read as exit codes (``status="auto"``).
    """,
    examples="""
        >>> result = read_swf("LPC-EGEE-2004-1.2-cln.swf.gz")  # doctest: +SKIP
        >>> result.info["swf_header"]["MaxProcs"]  # doctest: +SKIP
        140
    """,
)


# --------------------------------------------------------------------------- writer


@dataclass(frozen=True)
class ExportResult:
    """What a writer wrote: the file, the rows written and left out (why), the values adjusted.

    It stands for the file it names (``os.fspath(result)``, ``str(result)``), so it can be
    passed on as a path.

    Attributes
    ----------
    path : pathlib.Path
        The file written.
    format : str
        ``"swf"``, ``"gwf"`` or ``"batsim"``.
    rows_in : int
        Rows of the table given.
    rows_written : int
        Jobs written.
    left_out : mapping of str to int
        Rows not written, by reason (reasons with no row are left out).
    adjusted : mapping of str to int
        Values changed to fit the format (rounded, raised to a minimum), by what was done.
    """

    path: Path
    format: str
    rows_in: int
    rows_written: int
    left_out: Mapping[str, int] = field(default_factory=dict)
    adjusted: Mapping[str, int] = field(default_factory=dict)

    @property
    def rows_left_out(self) -> int:
        """Rows of the table that were not written."""
        return self.rows_in - self.rows_written

    def __fspath__(self) -> str:
        return str(self.path)

    def __str__(self) -> str:
        return str(self.path)

    def describe(self) -> str:
        """One line for a person: what was written, what was left out and adjusted, and why."""
        text = f"{self.rows_written} of {self.rows_in} rows written as {self.format} to {self.path}"
        left = [f"{count} {why}" for why, count in self.left_out.items() if count]
        if left:
            text += f"; {self.rows_left_out} left out ({', '.join(left)})"
        changed = [f"{count} {what}" for what, count in self.adjusted.items() if count]
        if changed:
            text += f"; adjusted: {', '.join(changed)}"
        return text


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


def _ids(jobs: pa.Table, name: str, entries: Any = None) -> tuple[F64, dict[str, int]]:
    """Numeric ids of a name column, one Python step per distinct value.

    Names the header ``entries`` number (``Queue: 2 short``) get that number (the first, when a
    name is given several); if every other value is a number, it stays; otherwise the others are
    numbered densely in order of first appearance, after the largest number in use.

    Returns
    -------
    ids : numpy.ndarray
        One id per row, NaN where the name is null.
    numbered : dict
        The names numbered here (not by ``entries``), name → number.
    """
    n = jobs.num_rows
    if name not in jobs.column_names or n == 0:
        return np.full(n, np.nan), {}
    encoded: Any = _pc.dictionary_encode(_whole_array(jobs.column(name)).cast(pa.string()))
    distinct = [str(v) for v in encoded.dictionary.to_pylist()]
    given: dict[str, int] = {}
    for number, label in numbered_names(entries).items():
        given.setdefault(label, int(number))
    numbers = np.full(len(distinct), np.nan)
    rest = [i for i, value in enumerate(distinct) if value not in given]
    for i, value in enumerate(distinct):
        if value in given:
            numbers[i] = given[value]
    numbered: dict[str, int] = {}
    try:
        numbers[rest] = [float(distinct[i]) for i in rest]
    except ValueError:
        used = [v for v in numbers.tolist() if not np.isnan(v)]
        next_id = int(max(used)) + 1 if used else 1
        for i in rest:
            numbered[distinct[i]] = next_id
            numbers[i] = next_id
            next_id += 1
    indices = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.float64)
    known = ~np.isnan(indices)
    out = np.full(n, np.nan)
    out[known] = numbers[indices[known].astype(np.int64)]
    return out, numbered


def _format_integers(values: F64) -> tuple[Arr, int]:
    """Format numbers as integer text (−1 unknown), rounding fractions half to even; count them."""
    values = np.where(np.isnan(values), -1.0, values)
    whole = np.rint(values)
    rounded = int(np.count_nonzero(whole != values))
    return _pa.array(whole.astype(np.int64)).cast(pa.string()), rounded


def _format_decimals(values: F64) -> Arr:
    """Format numbers as text: −1 for unknown, integers where integral, else plain decimals.

    Decimals have no exponent and the fewest digits that read back to the same float.
    """
    values = np.where(np.isnan(values), -1.0, values)
    whole = values == np.round(values)
    text = _pa.array(np.where(whole, values, 0).astype(np.int64)).cast(pa.string())
    if not whole.all():  # text only the fractions
        fractions = [np.format_float_positional(v, trim="-") for v in values[~whole].tolist()]
        text = _pc.replace_with_mask(text, _pa.array(~whole), _pa.array(fractions, pa.string()))
    return text


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _header_lines(header: Mapping[str, Any], marker: str = ";", width: int = 15) -> list[str]:
    """Comment lines of a header mapping (keys right-aligned in ``width``).

    A value's later lines are indented under its first, so that they read back as its
    continuation.
    """
    comments = header.get(_COMMENTS)
    comments = comments if isinstance(comments, Mapping) else {}
    lines: list[str] = []
    for key, value in header.items():
        if key == _COMMENTS:
            continue
        values = value if isinstance(value, list | tuple) else [value]
        for index, item in enumerate(values):
            if key == _TEXT:
                lines.append(f"{marker} {item}".rstrip())
                continue
            text = _value_text(item)
            if index == 0 and comments.get(key):
                text = f"{text} {comments[key]}"
            first, *more = text.split("\n")
            prefix = f"{marker} {key:>{width}}: "
            lines.append(f"{prefix}{first}".rstrip())
            lines.extend(f"{marker}{' ' * (len(prefix) - 1)}{line}".rstrip() for line in more)
    return lines


@dataclass(frozen=True)
class _ArchiveFields:
    """The SWF field values of a jobs table, sorted by submit time (GWF shares them)."""

    jobs: pa.Table  # the table in writing order
    relative: Bool  # rows flagged TIME_RELATIVE
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
        if key not in (_TEXT, _COMMENTS) and not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", key):
            msg = f"{fmt} header keys are single words, not {key!r}"
            raise ConfigError(msg)
    return given


def _status_of_states(jobs: pa.Table, mapping: Mapping[str, int]) -> F64:
    if "state" not in jobs.column_names:
        return np.full(jobs.num_rows, np.nan)
    state = _whole_array(jobs.column("state"))
    position = _pc.index_in(state, value_set=_pa.array(list(mapping), pa.string()))
    codes = _pa.array(list(mapping.values()), pa.float64()).take(position)
    return np.asarray(_pc.fill_null(codes, -1.0).to_numpy(zero_copy_only=False), dtype=np.float64)


def _archive_fields(jobs: pa.Table) -> _ArchiveFields:
    """Sort ``jobs`` by submit time (unknown last) and derive the SWF/GWF numeric fields.

    Unknown wait and run come from start − submit and end − start; per-processor CPU time and
    memory divide by the allocated (memory requested: the requested, else allocated) processors;
    the status follows the state (rows flagged ``STATUS_NONSTANDARD`` keep their ``exit_code``,
    rows flagged ``PARTIAL_EXECUTION`` are written 2, 3, 4), and a DELETED job has no run time.
    """
    n = jobs.num_rows
    submit = _floats(jobs, "submit_time")
    order = np.lexsort((np.arange(n), np.where(np.isnan(submit), np.inf, submit)))
    jobs = jobs.take(_pa.array(order))
    submit = submit[order]
    start = _floats(jobs, "start_time")
    end = _floats(jobs, "end_time")
    flags = (
        jobs.column("flags") if "flags" in jobs.column_names else pa.nulls(n, pa.list_(pa.string()))
    )
    nonstandard = _flag_mask(flags, "STATUS_NONSTANDARD")
    partial = _flag_mask(flags, "PARTIAL_EXECUTION")
    wait = _floats(jobs, "wait_s")
    wait = np.where(np.isnan(wait), start - submit, wait)
    run = _floats(jobs, "run_s")
    run = np.where(np.isnan(run), end - start, run)
    alloc = _floats(jobs, "cores_alloc")
    req = _floats(jobs, "cores_req")
    usable = np.where(alloc > 0, alloc, np.nan)
    req_procs = np.where(np.isnan(req), usable, req)
    req_procs = np.where(req_procs > 0, req_procs, np.nan)
    exit_code = _floats(jobs, "exit_code")
    status = _status_of_states(jobs, _STATUS_OF_STATE)
    status = np.where(partial, _status_of_states(jobs, _PARTIAL_STATUS_OF_STATE), status)
    status = np.where(nonstandard & ~np.isnan(exit_code), exit_code, status)
    deleted = _status_of_states(jobs, {"DELETED": 1}) == 1
    return _ArchiveFields(
        jobs=jobs,
        relative=_flag_mask(flags, "TIME_RELATIVE"),
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


def _jobs_read(table: pa.Table) -> int | None:
    """Return the number of jobs the reader made (stored with the headers), if known."""
    raw = (table.schema.metadata or {}).get(HEADER_METADATA_KEY)
    try:
        value = json.loads(raw).get("jobs") if raw is not None else None
    except (ValueError, TypeError, AttributeError):
        return None
    return value if isinstance(value, int) else None


def _source_header(
    jobs: pa.Table, header: Mapping[str, Any] | None, fmt: str
) -> tuple[dict[str, Any], bool]:
    """Return the header to write and whether it is the log's own (carried back as read).

    Without ``header``, the header a reader stored in the table's metadata, if of format
    ``fmt``; a given header equal to that one counts as the log's own too.
    """
    stored_format, stored = log_headers(jobs)
    source = stored[0] if stored_format == fmt and stored else None
    if header is None:
        return dict(source or {}), source is not None
    given = dict(header)
    return given, source is not None and given == source


def _insert_after(mapping: dict[str, Any], key: str, value: Any, after: Sequence[str]) -> None:
    """Set ``mapping[key]``; a new key goes right after the last of ``after`` present."""
    if key in mapping or not any(k in mapping for k in after):
        mapping[key] = value
        return
    anchor = [k for k in after if k in mapping][-1]
    items = list(mapping.items())
    mapping.clear()
    for name, item in items:
        mapping[name] = item
        if name == anchor:
            mapping[key] = value


def write_swf(
    jobs: pa.Table,
    path: StrPath,
    *,
    header: Mapping[str, Any] | None = None,
    max_procs: int | None = None,
) -> ExportResult:
    """Write a ``jobs`` table as an SWF v2.2 file, atomically.

    Jobs are written sorted by submit time (unknown last). Times are seconds from
    ``UnixStartTime``: the header's when it is not after the earliest submit, else the earliest
    submit (left out when every job is flagged ``TIME_RELATIVE``); unknown values are −1.
    Every field but the average CPU time (field 6) is an integer, as SWF and the readers of
    other tools (AccaSim reads 18 integer fields) expect: fractions, which arise when memory in
    bytes is divided back into KB per processor, are rounded half to even and counted in the
    result (and in a header ``Note``). ``cpu_time_s``, ``mem_used_bytes`` and ``mem_req_bytes``
    are divided back into per-processor values. User, group, queue and partition names that are
    not numbers are numbered: queues and partitions by the numbers the header gives them, others
    densely in order of appearance (listed in ``Queue:`` and ``Partition:`` lines). State
    DELETED and CANCELLED are status 5 (DELETED with run −1), COMPLETED 1, FAILED, TIMEOUT,
    NODE_FAIL, PREEMPTED and REQUEUED 0 (2, 3, 4 for rows flagged ``PARTIAL_EXECUTION``);
    UNKNOWN writes the ``exit_code`` of rows flagged ``STATUS_NONSTANDARD``, else −1. Rows read
    as exit codes (``STATUS_AS_EXIT_CODE``) are written with SWF's codes, 1 or 0.

    The header: the log's own header (stored in the table's metadata by :func:`read_swf`, or
    given as ``header``) is written back as it was read, so that read → write → read gives the
    same header; only what the data changed is changed (``UnixStartTime`` when the times need
    another origin, new queue or partition names) and a ``Note`` says what (also when the table
    holds fewer or more jobs than were read: ``MaxJobs`` and ``MaxRecords`` then still describe
    the log, as in the PWA's cleaned logs). Another header, or none, is completed
    into an SWF v2.2 header (``Version``, ``MaxJobs``, ``MaxRecords``, ``UnixStartTime``) with a
    ``Note`` saying gridtrace wrote it. No machine size is guessed from the jobs: ``MaxProcs``
    is written only when the header or ``max_procs`` gives it.

    Parameters
    ----------
    jobs : pyarrow.Table
        A ``jobs`` table (columns it lacks are written as unknown).
    path : str or path-like
        The file to write (plain text), replaced in one step.
    header : mapping, optional
        Header entries (``Computer``, ``Installation``, ``TimeZoneString``, ``MaxProcs`` ...; a
        list value gives one line per item, ``"_text"`` items are free comment lines, a value
        with newlines is wrapped onto indented lines); by default the table's own.
    max_procs : int, optional
        The machine's processors, written as ``MaxProcs`` (replacing the header's).

    Returns
    -------
    ExportResult
        The file, the rows written (all of them) and the values rounded, by field.

    Raises
    ------
    ConfigError
        If a header key is not a single word or ``max_procs`` is not positive.
    """
    given, carried = _source_header(jobs, header, "swf")
    given = _checked_header(given, "SWF")
    if max_procs is not None and max_procs < 1:
        msg = f"max_procs must be at least 1, not {max_procs}"
        raise ConfigError(msg)
    n = jobs.num_rows
    a = _archive_fields(jobs)
    jobs, submit = a.jobs, a.submit
    relative = n > 0 and bool(a.relative.all())
    known_submit = submit[~np.isnan(submit)]
    read_origin = _origin(given)
    stated = read_origin if isinstance(read_origin, int) else None  # beyond int64: not kept
    origin = 0
    if not relative and len(known_submit):
        earliest = int(known_submit.min())
        origin = stated if stated is not None and stated <= earliest else earliest
    elif not relative and stated is not None:  # no submit time to re-base: the header's stands
        origin = stated

    job_seq = _floats(jobs, "job_seq")
    job_seq = np.where(np.isnan(job_seq), np.arange(1, n + 1), job_seq)
    users, user_map = _ids(jobs, "user")
    groups, group_map = _ids(jobs, "group")
    queues, queue_map = _ids(jobs, "queue", given.get("Queue"))
    partitions, partition_map = _ids(jobs, "partition", given.get("Partition"))

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
    columns: list[Arr] = []
    adjusted: dict[str, int] = {}
    for k in range(_N):
        if k == _CPU:
            columns.append(_format_decimals(fields[:, k]))
            continue
        text, rounded = _format_integers(fields[:, k])
        columns.append(text)
        if rounded:
            unit = " KB per processor" if k in (_MEM, _REQ_MEM) else ""
            adjusted[f"{SWF_FIELDS[k]} values rounded to whole{unit or ' numbers'}"] = rounded

    notes: list[str] = []
    if carried:
        out = dict(given)
        read = _jobs_read(jobs)
        if read is not None and read != n:  # a selection: MaxJobs, MaxRecords stay the log's
            notes.append(
                f"{n} of the {read} jobs read from the log are written; MaxJobs and MaxRecords "
                "describe the log"
            )
        if relative:
            out.pop("UnixStartTime", None)
        elif _origin(given) != origin:
            _insert_after(out, "UnixStartTime", origin, ("MaxRecords", "MaxJobs", "Version"))
            if "UnixStartTime" in given:
                notes.append("UnixStartTime is the earliest submit written")
    else:
        out = {"Version": given.get("Version", "2.2")}
        for key in ("Computer", "Installation", "Acknowledge", "Information", "Conversion"):
            if key in given:
                out[key] = given[key]
        out["MaxJobs"] = n
        out["MaxRecords"] = n
        if not relative:
            out["UnixStartTime"] = origin
        for key in ("TimeZoneString", "MaxNodes", "MaxProcs"):
            if key in given:
                out[key] = given[key]
        for key, value in given.items():
            if key not in out and key not in {"MaxJobs", "MaxRecords", "UnixStartTime"}:
                out[key] = value
        notes.append("written by gridtrace from a jobs table")
    if max_procs is not None:
        _insert_after(out, "MaxProcs", int(max_procs), ("MaxNodes", "UnixStartTime", "MaxRecords"))
    for key, numbered in (("Queue", queue_map), ("Partition", partition_map)):
        if numbered:
            entries = out.get(key, [])
            entries = list(entries) if isinstance(entries, list | tuple) else [entries]
            entries += [f"{number} {label}" for label, number in numbered.items()]
            out[f"Max{key}s"] = len(entries)
            out[key] = entries
    if user_map or group_map:
        notes.append("user and group names are numbered in order of first appearance")
    if adjusted:
        notes.append(
            "rounded to integers as SWF requires: "
            + ", ".join(f"{count} {what}" for what, count in adjusted.items())
        )
    if notes:
        old = out.get("Note", [])
        out["Note"] = [*(old if isinstance(old, list | tuple) else [old]), *notes]
        if len(out["Note"]) == 1:
            out["Note"] = out["Note"][0]

    body = _pc.binary_join_element_wise(*columns, " ") if n else _pa.array([], pa.string())
    lines = _header_lines(out)
    text = "\n".join(lines) + "\n" if lines else ""
    if n:
        text += "\n".join(body.to_pylist()) + "\n"
    target = Path(path)
    write_text(target, text)
    result = ExportResult(path=target, format="swf", rows_in=n, rows_written=n, adjusted=adjusted)
    if adjusted:
        logger.info("%s", result.describe())
    logger.debug("wrote %d jobs to %s", n, target)
    return result
