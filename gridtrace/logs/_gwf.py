"""The GWF (Grid Workloads Format, Grid Workloads Archive) reader and writer.

A GWF text file is one job per line, 29 whitespace-separated fields, preceded by ``#`` (or ``;``)
comment lines; the first 18 columns follow SWF (``shared/reference/parsers.md`` §5.2), the others
describe the grid: JobID, SubmitTime, WaitTime, RunTime, NProcs, AverageCPUTimeUsed, UsedMemory,
ReqNProcs, ReqTime, ReqMemory, Status, UserID, GroupID, ExecutableID, QueueID, PartitionID,
OrigSiteID, LastRunSiteID, JobStructure, JobStructureParams, UsedNetwork, UsedLocalDiskSpace,
UsedResources, ReqPlatform, ReqNetwork, ReqLocalDiskSpace, ReqResources, VOID, ProjectID.

Reading is two steps, like every format of the registry: :func:`tokenize_gwf_file` turns one file
into ``records`` (comment lines as record type ``H``, job lines as ``J`` with the 29 fields by
their GWF names, values as written) and ``quarantine`` (blank lines, lines without exactly 29
fields, lines whose time, size or status fields, SubmitTime to Status, are not numbers, fragments
with NUL bytes); :func:`assemble_gwf` turns the records into ``jobs``. The tokeniser, the header
rules and the damaged-bytes rules are those of the SWF reader (:mod:`gridtrace.logs._swf`): the
comment lines before the first job line are the header (``# Key: value``, continuation lines,
free text), stored in ``info["gwf_header"]`` and in the ``jobs`` table's schema metadata.

Mapping (§8): ``submit_time`` = SubmitTime (absolute Unix time), ``start_time`` = submit +
WaitTime, ``end_time`` = start + RunTime; ``wait_s`` WaitTime, ``run_s`` = ``walltime_used_s``
RunTime, ``walltime_req_s`` ReqTime, ``cores_alloc`` NProcs, ``cores_req`` ReqNProcs,
``cpu_time_s`` = AverageCPUTimeUsed × NProcs, ``mem_used_bytes`` = UsedMemory × NProcs × 1024 and
``mem_req_bytes`` = ReqMemory × ReqNProcs × 1024 (NProcs when ReqNProcs is unknown, flagged):
memory is KB per processor as in SWF. ``user``, ``group``, ``queue``, ``vo`` and ``account`` are
UserID, GroupID, QueueID, VOID and ProjectID as written, ``partition`` is PartitionID (IDs are
strings; grid logs use names). ``job_id_raw`` is JobID, ``job_seq`` JobID when it is an integer.
−1 means unknown (null) in every field; a number its column cannot hold is null, flag
``OUT_OF_RANGE``, as in SWF (a negative WaitTime stays: ``NEGATIVE_WAIT``).

The ``site`` column is the caller's site (the file name by default), never OrigSiteID: the site
is part of ``job_key`` and names the log for every format. OrigSiteID, LastRunSiteID, the
job structure and the network, disk and platform fields stay in the ``records``
attrs; the distinct OrigSiteIDs are listed in ``info["gwf_orig_sites"]``.

States from Status as in SWF: 1 COMPLETED, 0 FAILED, 5 CANCELLED, −1 UNKNOWN, and a file whose
status field holds exit codes is recognised and read as such (the SWF reader's rule). A job that
never ran is DELETED, with no start or end time, flag ``NEVER_RAN``: WaitTime = RunTime = −1 (the
GWA marks so jobs cancelled before resources were allocated), or Status 5 with RunTime −1. Any
other status is UNKNOWN with flag ``STATUS_NONSTANDARD``, the value kept in ``exit_code``.

Every flag, with its meaning, is in :data:`FLAGS`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from gridtrace._atomic import write_text
from gridtrace._log import library_logger
from gridtrace.errors import ConfigError
from gridtrace.logs._base import FileParse, ParseResult, parts_quarantine, result_of_parts
from gridtrace.logs._columnar import repeat_string, split_lines
from gridtrace.logs._io import StrPath
from gridtrace.logs._stream import Chunk, LineFormat, RangeSplit, file_reader, file_tokenizer
from gridtrace.logs._swf import (
    _NUMBER,
    _STATE_NAMES,
    _TEXT,
    Arr,
    ExportResult,
    StatusMode,
    _archive_fields,
    _checked_header,
    _CommentState,
    _cpu_seconds,
    _cut_line,
    _duplicate_rows,
    _flag_duplicates,
    _flag_lists,
    _flag_mask,
    _floats,
    _format_decimals,
    _format_integers,
    _header_lines,
    _header_of,
    _insert_after,
    _int_column,
    _job_rows,
    _LineFormat,
    _Marks,
    _nulls,
    _pa,
    _pc,
    _read_status,
    _source_header,
    _strings,
    _tokenize_lines,
    _whole_array,
    _without_negatives,
    with_log_headers,
)
from gridtrace.logs._swf import (
    FLAGS as SWF_FLAGS,
)
from gridtrace.schema import JOBS, RECORDS

__all__ = [
    "FLAGS",
    "GWF_FIELDS",
    "assemble_gwf",
    "looks_like_gwf",
    "read_gwf",
    "tokenize_gwf_file",
    "write_gwf",
]

FLAGS: Mapping[str, str] = {
    "NEGATIVE_WAIT": (
        "WaitTime is negative (an advance reservation started before the submission, as in the "
        "Grid'5000 OAR logs): it is kept, and the start lies before the submit time"
    ),
    **{
        flag: meaning.replace("info['swf_unsorted_rows']", "info['gwf_unsorted_rows']")
        for flag, meaning in SWF_FLAGS.items()
        if flag not in ("TIME_RELATIVE", "PARTIAL_EXECUTION", "NEGATIVE_WAIT")
    },
    "SUBMIT_UNKNOWN": "SubmitTime is -1: no submit, start or end time; the row is sorted last",
    "MEM_REQ_FROM_ALLOC": (
        "ReqNProcs is unknown: mem_req_bytes is ReqMemory (per processor) times NProcs"
    ),
}
"""Every flag this reader sets on a row, with what it means (see ``flag_meanings``)."""

logger = library_logger(__name__)

GWF_FIELDS: tuple[str, ...] = (
    "JobID",
    "SubmitTime",
    "WaitTime",
    "RunTime",
    "NProcs",
    "AverageCPUTimeUsed",
    "UsedMemory",
    "ReqNProcs",
    "ReqTime",
    "ReqMemory",
    "Status",
    "UserID",
    "GroupID",
    "ExecutableID",
    "QueueID",
    "PartitionID",
    "OrigSiteID",
    "LastRunSiteID",
    "JobStructure",
    "JobStructureParams",
    "UsedNetwork",
    "UsedLocalDiskSpace",
    "UsedResources",
    "ReqPlatform",
    "ReqNetwork",
    "ReqLocalDiskSpace",
    "ReqResources",
    "VOID",
    "ProjectID",
)
"""The 29 GWF fields in file order, as named in the ``records`` attrs of job lines."""

_N = len(GWF_FIELDS)
_COL = {name: i for i, name in enumerate(GWF_FIELDS)}
# SubmitTime .. Status must be numbers; every other field may be a name
_NUMERIC = np.zeros(_N, dtype=bool)
_NUMERIC[_COL["SubmitTime"] : _COL["Status"] + 1] = True
_COMMENT = ("#", ";")
_GWF_LINES = _LineFormat(
    name="gwf",
    fields=GWF_FIELDS,
    numeric=_NUMERIC,
    markers=_COMMENT,
    count_reason="expected {n} fields, found {found}",
    token_reason="non-numeric time, size or status field in a job line",
)


# --------------------------------------------------------------------------- tokeniser


def looks_like_gwf(head: bytes) -> bool:
    """Whether the first bytes of a (decompressed) file look like GWF.

    True when the non-blank lines (the last, possibly cut, one left out) are ``#`` or ``;``
    comments or job lines of 29 fields whose SubmitTime to Status are numbers, and at least one
    is a job line, or a comment names the GWF columns (``JobID`` ... ``VOID``).
    """
    lines = [line.strip() for line in head.split(b"\n")[:200]]
    if len(lines) > 1:
        lines = lines[:-1]
    lines = [line for line in lines if line]
    if not lines:
        return False
    jobs = 0
    column_line = False
    number = re.compile(_NUMBER.encode())
    for line in lines:
        if line.startswith((b"#", b";")):
            words = set(line[1:].split())
            column_line = column_line or {b"JobID", b"SubmitTime", b"VOID"} <= words
            continue
        fields = line.split()
        if len(fields) != _N:
            return False
        if not all(number.match(f) for f, numeric in zip(fields, _NUMERIC, strict=True) if numeric):
            return False
        jobs += 1
    return jobs > 0 or column_line


def _tokenize_gwf_chunk(
    chunk: Chunk, state: _CommentState, *, site: str, src_file: str
) -> tuple[pa.Table, pa.Table]:
    """Tokenise one chunk of a GWF file (the header's open key carried in ``state``)."""
    raw_lines = split_lines(chunk.data)
    first = chunk.first_line
    return _tokenize_lines(
        raw_lines,
        np.arange(first, first + len(raw_lines), dtype=np.int64),
        site=site,
        src_file=src_file,
        fmt=_GWF_LINES,
        cut_line=_cut_line(chunk.data, first + len(raw_lines) - 1),
        comments=state,
    )


GWF_STREAM: LineFormat[_CommentState] = LineFormat(
    "gwf", _CommentState, _tokenize_gwf_chunk, split=RangeSplit(after=b"0123456789")
)
"""The GWF format for the streaming core: the header's open key carried across chunks.

A big file is split after job lines only, where no header comment is open."""


tokenize_gwf_file = file_tokenizer(
    "gwf", GWF_STREAM, what="one GWF text file", rows="comment or job line"
)


# --------------------------------------------------------------------------- assembler


def _tokens_of(jobs: pa.Table) -> Arr:
    """Every job record's 29 tokens, flat in field order (row-major)."""
    attrs: Arr = _whole_array(jobs.column("attrs"))
    if not len(attrs):
        return _pa.array([], pa.string())
    offsets = np.asarray(attrs.offsets)
    return attrs.items.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))


def _column(tokens: Arr, n: int, name: str) -> Arr:
    return tokens.take(_pa.array(np.arange(_COL[name], n * _N, _N, dtype=np.int64)))


def _text(tokens: Arr, n: int, name: str) -> Arr:
    """Return a string field, ``-1`` as null."""
    values = _column(tokens, n, name)
    return _pc.if_else(_pc.equal(values, "-1"), None, values)


def _row_values(f: np.ndarray[Any, Any], tokens: Arr, n: int) -> np.ndarray[Any, Any]:
    """Every field of each row as a float (names by their dictionary code), for comparing rows."""
    values = f.copy()
    for k in np.flatnonzero(~_NUMERIC):
        encoded: Any = _pc.dictionary_encode(_column(tokens, n, GWF_FIELDS[k]))
        values[:, k] = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), np.float64)
    return values


def _gwf_rows(
    records: pa.Table,
) -> tuple[pa.Table, np.ndarray[Any, Any], Arr, np.ndarray[Any, Any]]:
    """Return a file's (or byte range's) job records, their positions, tokens and fields.

    The fields are an ``(n, 29)`` float array, the numeric ones (SubmitTime to Status) read,
    -1 as NaN, the names NaN.
    """
    job_records, positions = _job_rows(records)
    n = job_records.num_rows
    tokens = _tokens_of(job_records)
    f = np.full((n, _N), np.nan)
    for k in np.flatnonzero(_NUMERIC):
        values = _column(tokens, n, GWF_FIELDS[k]).cast(pa.float64())
        f[:, k] = np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float64)
    f = np.where(f == -1, np.nan, f)
    return job_records, positions, tokens, f


def _repeated_rows(f: np.ndarray[Any, Any], tokens: Arr) -> np.ndarray[Any, Any]:
    """Return the job rows equal, field for field (names as text), to an earlier row."""
    n = len(f)
    return _duplicate_rows(_row_values(f, tokens, n)) if n > 1 else np.zeros(n, bool)


def _jobs_of_file(
    records: pa.Table,
    site: str,
    src_file: str,
    mode: StatusMode,
    *,
    rows: tuple[pa.Table, np.ndarray[Any, Any], Arr, np.ndarray[Any, Any]] | None = None,
    duplicate: np.ndarray[Any, Any] | None = None,
    late_after: float = -np.inf,
) -> tuple[pa.Table, int, list[str], np.ndarray[Any, Any], bool]:
    """Assemble one file's jobs; or, with the keywords, one byte range's of a file.

    A range (:mod:`gridtrace.logs._ranges`) is given what it needs of its whole file: its
    job rows, their positions, tokens and fields (:func:`_gwf_rows`), the rows repeating an
    earlier row of the file (``duplicate``: of the range, or of an earlier range), and the
    latest submit time before it (``late_after``).
    """
    job_records, positions, tokens, f = _gwf_rows(records) if rows is None else rows
    n = job_records.num_rows
    if duplicate is None:
        duplicate = _repeated_rows(f, tokens)
    if duplicate.any():
        logger.warning(
            "%s: %d job lines repeat an earlier line field for field; one job each, the "
            "repeats flagged DUPLICATE in records",
            src_file,
            int(duplicate.sum()),
        )
        keep = ~duplicate
        f = f[keep]
        job_records = job_records.filter(_pa.array(keep))
        tokens = _tokens_of(job_records)
        n = job_records.num_rows
    src_line = np.asarray(job_records.column("src_line").to_numpy(), dtype=np.int64)
    nul_stripped = _flag_mask(job_records.column("flags"), "NUL_STRIPPED")

    submit = f[:, _COL["SubmitTime"]]
    no_submit = np.isnan(submit)
    running_max = np.fmax.accumulate(np.where(no_submit, -np.inf, submit)) if n else submit
    late = np.zeros(n, dtype=bool)
    late[1:] = ~no_submit[1:] & (submit[1:] < running_max[:-1])
    if late_after > -np.inf:  # a range: the rows before it count too
        late |= ~no_submit & (submit < late_after)
    order = np.lexsort((src_line, np.where(no_submit, np.inf, submit)))
    f, submit, no_submit, late, src_line, nul_stripped = (
        f[order],
        submit[order],
        no_submit[order],
        late[order],
        src_line[order],
        nul_stripped[order],
    )
    take = _pa.array(order)
    job_id_raw = _whole_array(job_records.column("job_id_raw")).take(take)

    def text(name: str) -> Arr:
        return _text(tokens, n, name).take(take)

    wait = f[:, _COL["WaitTime"]]
    run = f[:, _COL["RunTime"]]
    marks = _Marks(n)
    status = _read_status(
        f[:, _COL["Status"]],
        run_unknown=np.isnan(run),
        never_ran=np.isnan(wait) & np.isnan(run),
        partial=False,
        mode=mode,
        src_file=src_file,
        marks=marks,
    )
    negative_wait = wait < 0
    run = _without_negatives(run, marks)
    start = np.where(status.never_ran, np.nan, submit + wait)
    end = start + run

    wait_s = _int_column(wait, marks)
    run_s = _int_column(run, marks)
    walltime_req_s = _int_column(f[:, _COL["ReqTime"]], marks, nonnegative=True)
    submit_i = _int_column(submit, marks, stamp=True)
    start_i = _int_column(start, marks, stamp=True)
    end_i = _int_column(end, marks, stamp=True)
    alloc = _int_column(f[:, _COL["NProcs"]], marks, bits=32, nonnegative=True)
    req = _int_column(f[:, _COL["ReqNProcs"]], marks, bits=32, nonnegative=True)
    procs = np.where(_nulls(alloc), np.nan, f[:, _COL["NProcs"]])  # sizes from readable counts
    usable = np.where(procs > 0, procs, np.nan)
    req_unknown = np.isnan(f[:, _COL["ReqNProcs"]])
    req_procs = np.where(
        req_unknown, usable, np.where(_nulls(req), np.nan, f[:, _COL["ReqNProcs"]])
    )
    req_procs = np.where(req_procs > 0, req_procs, np.nan)
    mem_from_alloc = req_unknown & ~np.isnan(f[:, _COL["ReqMemory"]]) & ~np.isnan(usable)
    mem_used = _int_column(f[:, _COL["UsedMemory"]] * usable * 1024, marks, nonnegative=True)
    mem_req = _int_column(f[:, _COL["ReqMemory"]] * req_procs * 1024, marks, nonnegative=True)
    cpu = _cpu_seconds(f[:, _COL["AverageCPUTimeUsed"]], usable, marks)

    if negative_wait.any():
        logger.info(
            "%s: %d jobs have a negative wait (reservations); kept, flag NEGATIVE_WAIT",
            src_file,
            int(negative_wait.sum()),
        )
    flags = _flag_lists(
        [
            ("NEGATIVE_WAIT", negative_wait),
            ("UNSORTED", late),
            ("SUBMIT_UNKNOWN", no_submit),
            *status.flags,
            ("MEM_REQ_FROM_ALLOC", mem_from_alloc),
            ("ROUNDED", marks.rounded),
            ("OUT_OF_RANGE", marks.out_of_range),
            ("NUL_STRIPPED", nul_stripped),
        ],
        n,
    )

    # job_seq: JobID when it is an integer (Arrow's cast reads no leading +)
    seq_text = _pc.if_else(
        _pc.match_substring_regex(job_id_raw, r"^[-+]?\d{1,18}$"),
        _pc.utf8_ltrim(job_id_raw, characters="+"),
        None,
    )
    job_seq = seq_text.cast(pa.int64())
    site_col = repeat_string(site, n)
    submit_text = _pc.fill_null(submit_i.cast(pa.string()), "unknown")
    job_key = _pc.binary_join_element_wise(site_col, ":", job_id_raw, "@", submit_text, "")
    ts = pa.timestamp("s", tz="UTC")
    columns: dict[str, Any] = {
        "site": site_col,
        "source_format": repeat_string("gwf", n),
        "job_key": job_key,
        "job_id_raw": job_id_raw,
        "job_seq": job_seq,
        "attempt": _pa.array(np.zeros(n, np.int16), pa.int16()),
        "n_attempts": _pa.array(np.ones(n, np.int16), pa.int16()),
        "user": text("UserID"),
        "group": text("GroupID"),
        "account": text("ProjectID"),
        "vo": text("VOID"),
        "queue": text("QueueID"),
        "partition": text("PartitionID"),
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
        "src_file": repeat_string(src_file, n),
        "src_line": _pa.array(src_line, pa.int64()),
        "flags": flags,
    }
    table = pa.Table.from_arrays(
        [columns[fld.name] if fld.name in columns else pa.nulls(n, fld.type) for fld in JOBS],
        schema=JOBS,
    )
    sites = _text(tokens, n, "OrigSiteID").drop_null().unique().to_pylist()
    return (
        table,
        int(late.sum()),
        [str(s) for s in sites],
        positions[duplicate],
        status.as_exit_codes,
    )


def assemble_gwf(
    parts: Sequence[FileParse], *, tz: str | None = None, status: StatusMode = "auto"
) -> ParseResult:
    """Assemble tokenised GWF files, given in reading order, into a :class:`ParseResult`.

    Each file is assembled on its own; the jobs of all files are concatenated in file order.
    ``tz`` is accepted for the registry and ignored: GWF times are Unix epochs. ``status`` is
    read as by :func:`gridtrace.logs._swf.assemble_swf`.

    Returns
    -------
    ParseResult
        ``info["gwf_header"]`` holds the first file's comment metadata (as
        :func:`gridtrace.logs._swf.parse_swf_header` reads it), ``info["gwf_headers"]`` every
        file's by name, ``info["gwf_unsorted_rows"]`` the count of rows flagged ``UNSORTED``,
        ``info["gwf_duplicate_lines"]`` the job lines flagged ``DUPLICATE``,
        ``info["gwf_exit_code_files"]`` the files whose status was read as exit codes and
        ``info["gwf_orig_sites"]`` the distinct OrigSiteIDs, sorted. The jobs table carries the
        headers in its schema metadata.
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
    sites: set[str] = set()
    for part in parts:
        records = part.records
        site = str(records.column("site")[0].as_py()) if records.num_rows else "site"
        with np.errstate(over="ignore", invalid="ignore"):  # inf and NaN are nulled, flagged
            jobs, late, file_sites, repeated, as_exit = _jobs_of_file(
                records, site, part.src_file, status
            )
        tables.append(jobs)
        all_records.append(_flag_duplicates(records, repeated))
        headers[part.src_file] = _header_of(records)
        unsorted += late
        duplicates += len(repeated)
        if as_exit:
            exit_files.append(part.src_file)
        sites.update(file_sites)
    return _gwf_result(parts, tables, all_records, headers, unsorted, duplicates, exit_files, sites)


def _gwf_result(
    parts: Sequence[FileParse],
    tables: list[pa.Table],
    all_records: list[pa.Table],
    headers: dict[str, dict[str, Any]],
    unsorted: int,
    duplicates: int,
    exit_files: list[str],
    sites: set[str],
) -> ParseResult:
    """Return the :class:`ParseResult` of files assembled (here, or by ranges on workers)."""
    jobs = pa.concat_tables(tables) if tables else JOBS.empty_table()
    jobs = with_log_headers(jobs, "gwf", list(headers.values()))
    records = pa.concat_tables(all_records) if parts else RECORDS.empty_table()
    quarantine = parts_quarantine(parts)
    return result_of_parts(
        parts,
        records=records,
        jobs=jobs,
        quarantine=quarantine,
        info={
            "format": "gwf",
            "gwf_header": next(iter(headers.values()), {}),
            "gwf_headers": headers,
            "gwf_unsorted_rows": unsorted,
            "gwf_duplicate_lines": duplicates,
            "gwf_exit_code_files": exit_files,
            "gwf_orig_sites": sorted(sites),
        },
    )


read_gwf = file_reader(
    "gwf",
    tokenize_gwf_file,
    assemble_gwf,
    what="GWF (Grid Workloads Archive) text files",
    paths="GWF files (plain or gzip/bzip2/xz, detected by content) or folders of them.",
    site_note=" (never the OrigSiteID column, which stays in the records; see the module notes)",
    assemble_options=["status"],
    options_doc="""
        status : {"auto", "swf", "exit_code"}, default "auto"
            How the Status field is read (see :func:`gridtrace.logs.read_swf`).
    """,
    examples="""
        >>> result = read_gwf("anon_jobs.gwf", site="das2")  # doctest: +SKIP
        >>> result.jobs.column("vo").unique()  # doctest: +SKIP
    """,
)


# --------------------------------------------------------------------------- writer

_SPACE = re.compile(r"\s+")
_WRITTEN_BY = "written by gridtrace from a jobs table"


def _id_column(values: Sequence[str | None], name: str) -> Arr:
    """Return IDs as written to a file: unknown or empty as ``-1``, whitespace runs as ``_``."""
    out: list[str] = []
    changed = 0
    for value in values:
        if value is None or value == "":
            out.append("-1")
            continue
        cleaned = _SPACE.sub("_", value)
        changed += cleaned != value
        out.append(cleaned)
    if changed:
        logger.warning("%d %s values had whitespace; written with '_' in its place", changed, name)
    return _pa.array(out, pa.string())


def write_gwf(
    jobs: pa.Table,
    path: StrPath,
    *,
    header: Mapping[str, Any] | None = None,
    max_procs: int | None = None,
) -> ExportResult:
    """Write a ``jobs`` table as a GWF text file, atomically.

    Jobs are written sorted by submit time (unknown last), SubmitTime as absolute Unix time;
    unknown values are −1. The time, size and status fields are integers (fractions, which
    arise when memory in bytes is divided back into KB per processor, are rounded half to even
    and counted in the result), AverageCPUTimeUsed may be a decimal. JobID is ``job_id_raw``
    (``job_seq``, else the row number, when it is missing). ``cpu_time_s``, ``mem_used_bytes``
    and ``mem_req_bytes`` are divided back into per-processor values. User, group, queue, VO and
    project are written as names (whitespace replaced by ``_``, with a logged warning). States map
    to Status as in :func:`gridtrace.logs.write_swf`. OrigSiteID is the ``site`` column; the
    other grid-only fields (last-run site, structure, network, disk, platform) are written as −1.

    The log's own header (stored in the table's metadata by :func:`read_gwf`, or given as
    ``header``) is written back as it was read, so that read → write → read gives the same
    header; another header, or none, is written with a line saying gridtrace wrote the file and
    the column names.

    Parameters
    ----------
    jobs : pyarrow.Table
        A ``jobs`` table (columns it lacks are written as unknown).
    path : str or path-like
        The file to write (plain text), replaced in one step.
    header : mapping, optional
        Comment entries written as ``# Key: value`` lines before the jobs (a list value gives
        one line per item, ``"_text"`` items are free comment lines); by default the table's
        own.
    max_procs : int, optional
        The machine's processors, written as ``MaxProcs``.

    Returns
    -------
    ExportResult
        The file, the rows written (all of them) and the values rounded, by field.

    Raises
    ------
    ConfigError
        If a header key is not a single word or ``max_procs`` is not positive.
    """
    given, carried = _source_header(jobs, header, "gwf")
    given = _checked_header(given, "GWF")
    if max_procs is not None and max_procs < 1:
        msg = f"max_procs must be at least 1, not {max_procs}"
        raise ConfigError(msg)
    n = jobs.num_rows
    a = _archive_fields(jobs)
    jobs = a.jobs

    job_seq = _floats(jobs, "job_seq")
    fallback = [
        str(int(s)) if not np.isnan(s) else str(i + 1) for i, s in enumerate(job_seq.tolist())
    ]
    raw_ids = _strings(jobs, "job_id_raw")
    job_ids = [r if r else fb for r, fb in zip(raw_ids, fallback, strict=True)]

    numbers = np.full((n, _N), np.nan)
    numbers[:, _COL["SubmitTime"]] = a.submit
    numbers[:, _COL["WaitTime"]] = a.wait
    numbers[:, _COL["RunTime"]] = a.run
    numbers[:, _COL["NProcs"]] = a.alloc
    numbers[:, _COL["AverageCPUTimeUsed"]] = a.cpu_per_proc
    numbers[:, _COL["UsedMemory"]] = a.mem_used_per_proc_kb
    numbers[:, _COL["ReqNProcs"]] = a.req
    numbers[:, _COL["ReqTime"]] = a.req_time
    numbers[:, _COL["ReqMemory"]] = a.mem_req_per_proc_kb
    numbers[:, _COL["Status"]] = a.status
    texts = {
        "JobID": _id_column(job_ids, "JobID"),
        "UserID": _id_column(_strings(jobs, "user"), "user"),
        "GroupID": _id_column(_strings(jobs, "group"), "group"),
        "QueueID": _id_column(_strings(jobs, "queue"), "queue"),
        "PartitionID": _id_column(_strings(jobs, "partition"), "partition"),
        "OrigSiteID": _id_column(_strings(jobs, "site"), "site"),
        "VOID": _id_column(_strings(jobs, "vo"), "vo"),
        "ProjectID": _id_column(_strings(jobs, "account"), "account"),
    }
    columns: list[Arr] = []
    adjusted: dict[str, int] = {}
    for k, name in enumerate(GWF_FIELDS):
        if name in texts:
            columns.append(texts[name])
        elif name == "AverageCPUTimeUsed":
            columns.append(_format_decimals(numbers[:, k]))
        else:
            text, rounded = _format_integers(numbers[:, k])
            columns.append(text)
            if rounded:
                unit = " KB per processor" if name in ("UsedMemory", "ReqMemory") else " numbers"
                adjusted[f"{name} values rounded to whole{unit}"] = rounded
    body = _pc.binary_join_element_wise(*columns, " ") if n else _pa.array([], pa.string())

    columns_line = " ".join(GWF_FIELDS)
    out = dict(given)
    if not carried:  # free text last: the given lines, then gridtrace's and the column names
        free = out.pop(_TEXT, [])
        free = [free] if isinstance(free, str) else list(free)
        out[_TEXT] = [t for t in free if t not in (_WRITTEN_BY, columns_line)]
        out[_TEXT] += [_WRITTEN_BY, columns_line]
    if max_procs is not None:
        _insert_after(out, "MaxProcs", int(max_procs), ("MaxNodes",))
    if adjusted:
        old = out.get("Note", [])
        notes = [*(old if isinstance(old, list | tuple) else [old])]
        notes.append(
            "rounded to integers: " + ", ".join(f"{c} {what}" for what, c in adjusted.items())
        )
        out["Note"] = notes[0] if len(notes) == 1 else notes
    lines = _header_lines(out, marker="#", width=0)
    text = "\n".join(lines) + "\n" if lines else ""
    if n:
        text += "\n".join(body.to_pylist()) + "\n"
    target = Path(path)
    write_text(target, text)
    result = ExportResult(path=target, format="gwf", rows_in=n, rows_written=n, adjusted=adjusted)
    if adjusted:
        logger.info("%s", result.describe())
    logger.debug("wrote %d jobs to %s", n, target)
    return result
