"""The GWF (Grid Workloads Format, Grid Workloads Archive) reader and writer.

A GWF text file is one job per line, 29 whitespace-separated fields, preceded by ``#`` (or ``;``)
comment lines; the first 18 columns follow SWF (``shared/reference/parsers.md`` §5.2), the others
describe the grid: JobID, SubmitTime, WaitTime, RunTime, NProcs, AverageCPUTimeUsed, UsedMemory,
ReqNProcs, ReqTime, ReqMemory, Status, UserID, GroupID, ExecutableID, QueueID, PartitionID,
OrigSiteID, LastRunSiteID, JobStructure, JobStructureParams, UsedNetwork, UsedLocalDiskSpace,
UsedResources, ReqPlatform, ReqNetwork, ReqLocalDiskSpace, ReqResources, VOID, ProjectID.

Reading is two steps, like every format of the registry: :func:`tokenize_gwf_file` turns one file
into ``records`` (comment lines as record type ``H`` with ``attrs`` ``{key: value}`` or
``{"text": ...}``, job lines as ``J`` with the 29 fields by their GWF names, values as written)
and ``quarantine`` (blank lines, lines without exactly 29 fields, lines whose time, size or status
fields, SubmitTime to Status, are not numbers); :func:`assemble_gwf` turns the records into
``jobs``. The helpers are those of the SWF reader (:mod:`gridtrace.logs._swf`).

Mapping (§8): ``submit_time`` = SubmitTime (absolute Unix time), ``start_time`` = submit +
WaitTime, ``end_time`` = start + RunTime; ``wait_s`` WaitTime, ``run_s`` = ``walltime_used_s``
RunTime, ``walltime_req_s`` ReqTime, ``cores_alloc`` NProcs, ``cores_req`` ReqNProcs,
``cpu_time_s`` = AverageCPUTimeUsed × NProcs, ``mem_used_bytes`` = UsedMemory × NProcs × 1024 and
``mem_req_bytes`` = ReqMemory × ReqNProcs × 1024 (NProcs when ReqNProcs is unknown): memory is KB
per processor as in SWF. ``user``, ``group``, ``queue``, ``vo`` and ``account`` are UserID,
GroupID, QueueID, VOID and ProjectID as written, ``partition`` is PartitionID (IDs are strings;
grid logs use names).
``job_id_raw`` is JobID, ``job_seq`` JobID when it is an integer. −1 means unknown (null) in every
field.

The ``site`` column is the caller's site (the file name by default), never OrigSiteID: the site
is part of ``job_key`` and names the log for every format. OrigSiteID, LastRunSiteID, the
job structure and the network, disk and platform fields stay in the ``records``
attrs; the distinct OrigSiteIDs are listed in ``info["gwf_orig_sites"]``.

States from Status as in SWF: 1 COMPLETED, 0 FAILED, 5 CANCELLED, −1 UNKNOWN. A job that never
ran is DELETED, with no start or end time: WaitTime = RunTime = −1 (the GWA marks so jobs
cancelled before resources were allocated), or Status 5 with RunTime −1. Any other status is
UNKNOWN with flag ``STATUS_NONSTANDARD``, the value kept in ``exit_code``.

Flags (``jobs.flags``)
----------------------
``NEGATIVE_WAIT``
    WaitTime is negative (an advance reservation started before the submission, as in the
    Grid'5000 OAR logs); it is kept, and the start lies before the submit time.
``UNSORTED``
    The job's submit time is earlier than that of a line before it; rows are sorted by submit
    time (then line). ``info["gwf_unsorted_rows"]`` counts them.
``SUBMIT_UNKNOWN``
    SubmitTime is −1: no submit, start or end time; the row is sorted last.
``STATUS_NONSTANDARD``
    Status is not one of −1, 0, 1, 5; state UNKNOWN, the status kept in ``exit_code``.
``ROUNDED``
    A field stored as integer seconds, cores or bytes had a fraction and was rounded.
``OUT_OF_RANGE``
    A field (or a size derived from it, such as memory × processors) is beyond what its column
    holds exactly (2^53 seconds or bytes, 2^31 − 1 cores); that value is null.

Flag on ``records``: ``NON_UTF8`` (a comment line that is not UTF-8; decoded with replacement,
the original bytes kept in ``raw``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from gridtrace.logs._base import (
    ErrorPolicy,
    FileParse,
    ParseResult,
    apply_error_policy,
    check_error_policy,
    tokenize_guarded,
)
from gridtrace.logs._columnar import as_text, offsets_of, records_table, repeat_string, split_lines
from gridtrace.logs._io import StrPath, default_site_name, expand_log_paths, read_log_bytes
from gridtrace.logs._swf import (
    _NUMBER,
    _STATES,
    Arr,
    Bool,
    _archive_fields,
    _checked_header,
    _floats,
    _format_column,
    _header_of,
    _int_column,
    _Marks,
    _numeric_tokens,
    _pa,
    _pc,
    _split_header_line,
    _strings,
)
from gridtrace.schema import JOBS, QUARANTINE, RECORDS

__all__ = [
    "FLAGS",
    "GWF_FIELDS",
    "assemble_gwf",
    "looks_like_gwf",
    "read_gwf",
    "tokenize_gwf_file",
    "write_gwf",
]

FLAGS: Mapping[str, str] = {}
"""Every flag this reader sets on a row, with what it means (see ``flag_meanings``)."""

logger = logging.getLogger(__name__)

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
_GWF_KEYS = frozenset({"Version", "MaxJobs", "MaxRecords", "MaxProcs", "MaxNodes", "GWFVersion"})


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


def tokenize_gwf_file(path: StrPath, *, site: str) -> FileParse:
    """Tokenise one GWF text file (plain, gzip, bzip2 or xz) into ``records`` and ``quarantine``.

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
    raw_lines = split_lines(read_log_bytes(path))
    n_lines = len(raw_lines)
    binary = _pa.array(raw_lines, pa.binary())
    text, non_utf8 = as_text(binary)
    stripped = _pc.utf8_trim_whitespace(text)
    line_no = np.arange(1, n_lines + 1, dtype=np.int64)

    is_comment = np.zeros(n_lines, dtype=bool)
    for mark in _COMMENT:
        is_comment |= np.asarray(_pc.starts_with(stripped, mark).to_numpy(zero_copy_only=False))
    is_blank = np.asarray(_pc.equal(_pc.utf8_length(stripped), 0).to_numpy(zero_copy_only=False))
    other = ~is_comment & ~is_blank

    # job candidates: 29 tokens, the time, size and status tokens numbers
    candidates = np.flatnonzero(other)
    tokens_list = _pc.utf8_split_whitespace(stripped.take(_pa.array(candidates)))
    counts = np.asarray(_pc.list_value_length(tokens_list).to_numpy(zero_copy_only=False))
    flat = _pc.list_flatten(tokens_list)
    row_of_token = np.repeat(np.arange(len(candidates)), counts)
    position = np.arange(len(flat)) - np.repeat(offsets_of(counts)[:-1], counts)
    checked = (np.repeat(counts, counts) == _N) & _NUMERIC[np.minimum(position, _N - 1)]
    bad = np.zeros(len(flat), dtype=bool)
    if checked.any():
        bad[checked] = ~_numeric_tokens(flat.filter(_pa.array(checked)))
    bad_tokens = np.bincount(row_of_token, weights=bad, minlength=len(candidates))
    good = (counts == _N) & (bad_tokens == 0)

    reasons: dict[int, str] = {}
    for i in np.flatnonzero(is_blank):
        reasons[int(i)] = "blank line"
    for j in np.flatnonzero(~good):
        if counts[j] != _N:
            reasons[int(candidates[j])] = f"expected {_N} fields, found {int(counts[j])}"
        else:
            reasons[int(candidates[j])] = "non-numeric time, size or status field in a job line"

    job_rows = candidates[good]
    keep_tokens = np.repeat(good, counts)
    job_tokens = flat.filter(_pa.array(keep_tokens)) if len(flat) else _pa.array([], pa.string())
    n_jobs = len(job_rows)
    attrs_jobs = _pa.MapArray.from_arrays(
        _pa.array(np.arange(0, (n_jobs + 1) * _N, _N, dtype=np.int32)),
        _pa.array(GWF_FIELDS, pa.string()).take(_pa.array(np.tile(np.arange(_N), n_jobs))),
        job_tokens,
    )
    job_ids = job_tokens.take(_pa.array(np.arange(0, n_jobs * _N, _N, dtype=np.int64)))
    jobs_part = records_table(
        source_format="gwf",
        site=site,
        src_file=src_file,
        lines=line_no[job_rows],
        record_type="J",
        job_id_raw=job_ids,
        attrs=attrs_jobs,
        flags=pa.nulls(n_jobs, pa.list_(pa.string())),
        raw=pa.nulls(n_jobs, pa.binary()),
    )

    comment_rows = np.flatnonzero(is_comment)
    comment_text = stripped.take(_pa.array(comment_rows)).to_pylist()
    header_attrs: list[list[tuple[str, str]]] = []
    for line in comment_text:
        key, value = _split_header_line(line[1:])
        header_attrs.append([("text", value)] if key is None else [(key, value)])
    comment_bad = non_utf8[comment_rows]
    header_part = records_table(
        source_format="gwf",
        site=site,
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
    records = pa.concat_tables([header_part, jobs_part])
    if len(comment_rows) and len(job_rows) and comment_rows[-1] > job_rows[0]:
        records = records.take(_pc.sort_indices(records, [("src_line", "ascending")]))

    bad_rows = sorted(reasons)
    quarantine = pa.Table.from_arrays(
        [
            _pa.array([site] * len(bad_rows), pa.string()),
            _pa.array(["gwf"] * len(bad_rows), pa.string()),
            _pa.array([src_file] * len(bad_rows), pa.string()),
            _pa.array([i + 1 for i in bad_rows], pa.int64()),
            _pa.array([reasons[i] for i in bad_rows], pa.string()),
            _pa.array([raw_lines[i] for i in bad_rows], pa.binary()),
        ],
        schema=QUARANTINE,
    )
    logger.debug("%s: %d lines, %d quarantined", src_file, n_lines, quarantine.num_rows)
    return FileParse(src_file=src_file, records=records, quarantine=quarantine, lines_read=n_lines)


# --------------------------------------------------------------------------- assembler


def _tokens_of(jobs: pa.Table) -> Arr:
    """Every job record's 29 tokens, flat in field order (row-major)."""
    attrs: Arr = jobs.column("attrs").combine_chunks()
    return attrs.items if len(attrs) else _pa.array([], pa.string())


def _column(tokens: Arr, n: int, name: str) -> Arr:
    return tokens.take(_pa.array(np.arange(_COL[name], n * _N, _N, dtype=np.int64)))


def _text(tokens: Arr, n: int, name: str) -> Arr:
    """Return a string field, ``-1`` as null."""
    values = _column(tokens, n, name)
    return _pc.if_else(_pc.equal(values, "-1"), None, values)


def _jobs_of_file(records: pa.Table, site: str, src_file: str) -> tuple[pa.Table, int, list[str]]:
    job_records = records.filter(_pc.equal(records.column("record_type"), "J"))
    n = job_records.num_rows
    tokens = _tokens_of(job_records)
    f = np.full((n, _N), np.nan)
    for k in np.flatnonzero(_NUMERIC):
        values = _column(tokens, n, GWF_FIELDS[k]).cast(pa.float64())
        f[:, k] = np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float64)
    f = np.where(f == -1, np.nan, f)
    src_line = np.asarray(job_records.column("src_line").to_numpy(), dtype=np.int64)

    submit = f[:, _COL["SubmitTime"]]
    no_submit = np.isnan(submit)
    running_max = np.fmax.accumulate(np.where(no_submit, -np.inf, submit)) if n else submit
    late = np.zeros(n, dtype=bool)
    late[1:] = ~no_submit[1:] & (submit[1:] < running_max[:-1])
    order = np.lexsort((src_line, np.where(no_submit, np.inf, submit)))
    f, submit, no_submit, late, src_line = (
        f[order],
        submit[order],
        no_submit[order],
        late[order],
        src_line[order],
    )
    take = _pa.array(order)
    job_id_raw = job_records.column("job_id_raw").combine_chunks().take(take)

    def text(name: str) -> Arr:
        return _text(tokens, n, name).take(take)

    wait = f[:, _COL["WaitTime"]]
    run = f[:, _COL["RunTime"]]
    status = f[:, _COL["Status"]]
    never_ran = (np.isnan(wait) & np.isnan(run)) | ((status == 5) & np.isnan(run))
    negative_wait = wait < 0
    start = np.where(never_ran, np.nan, submit + wait)
    end = start + run

    marks = _Marks(n)
    wait_s = _int_column(wait, marks)
    run_s = _int_column(run, marks)
    walltime_req_s = _int_column(f[:, _COL["ReqTime"]], marks)
    submit_i = _int_column(submit, marks)
    start_i = _int_column(start, marks)
    end_i = _int_column(end, marks)
    procs = f[:, _COL["NProcs"]]
    alloc = _int_column(procs, marks, bits=32)
    req = _int_column(f[:, _COL["ReqNProcs"]], marks, bits=32)
    usable = np.where(procs > 0, procs, np.nan)
    req_procs = np.where(np.isnan(f[:, _COL["ReqNProcs"]]), usable, f[:, _COL["ReqNProcs"]])
    req_procs = np.where(req_procs > 0, req_procs, np.nan)
    mem_used = _int_column(f[:, _COL["UsedMemory"]] * usable * 1024, marks)
    mem_req = _int_column(f[:, _COL["ReqMemory"]] * req_procs * 1024, marks)
    cpu = f[:, _COL["AverageCPUTimeUsed"]] * usable

    state = np.full(n, "UNKNOWN", dtype=object)
    for code, name in _STATES.items():
        state[status == code] = name
    state[never_ran] = "DELETED"
    nonstandard = ~np.isnan(status) & ~np.isin(status, [-1.0, 0.0, 1.0, 5.0])
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
    if negative_wait.any():
        logger.info(
            "%s: %d jobs have a negative wait (reservations); kept, flag NEGATIVE_WAIT",
            src_file,
            int(negative_wait.sum()),
        )

    flag_names: list[tuple[str, Bool]] = [
        ("NEGATIVE_WAIT", negative_wait),
        ("UNSORTED", late),
        ("SUBMIT_UNKNOWN", no_submit),
        ("STATUS_NONSTANDARD", nonstandard),
        ("ROUNDED", marks.rounded),
        ("OUT_OF_RANGE", marks.out_of_range),
    ]
    flags: list[list[str] | None] = [None] * n
    for name, mask in flag_names:
        for i in np.flatnonzero(mask):
            row = flags[i]
            if row is None:
                flags[i] = [name]
            else:
                row.append(name)

    # job_seq: JobID when it is an integer
    seq_text = _pc.if_else(
        _pc.match_substring_regex(job_id_raw, r"^[-+]?\d{1,18}$"), job_id_raw, None
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
        "cpu_time_s": _pa.array(cpu, pa.float64(), from_pandas=True),
        "cores_req": req.cast(pa.int32()),
        "cores_alloc": alloc.cast(pa.int32()),
        "mem_req_bytes": mem_req,
        "mem_used_bytes": mem_used,
        "exit_code": exit_code,
        "state": _pa.array(state, pa.string()),
        "src_file": repeat_string(src_file, n),
        "src_line": _pa.array(src_line, pa.int64()),
        "flags": _pa.array(flags, pa.list_(pa.string())),
    }
    table = pa.Table.from_arrays(
        [columns[fld.name] if fld.name in columns else pa.nulls(n, fld.type) for fld in JOBS],
        schema=JOBS,
    )
    sites = _text(tokens, n, "OrigSiteID").drop_null().unique().to_pylist()
    return table, int(late.sum()), [str(s) for s in sites]


def assemble_gwf(parts: Sequence[FileParse], *, tz: str | None = None) -> ParseResult:
    """Assemble tokenised GWF files, given in reading order, into a :class:`ParseResult`.

    Each file is assembled on its own; the jobs of all files are concatenated in file order.
    ``tz`` is accepted for the registry and ignored: GWF times are Unix epochs.

    Returns
    -------
    ParseResult
        ``info["gwf_header"]`` holds the first file's comment metadata (as
        :func:`gridtrace.logs._swf.parse_swf_header` reads it), ``info["gwf_headers"]`` every
        file's by name, ``info["gwf_unsorted_rows"]`` the count of rows flagged ``UNSORTED`` and
        ``info["gwf_orig_sites"]`` the distinct OrigSiteIDs, sorted.
    """
    del tz
    tables: list[pa.Table] = []
    headers: dict[str, dict[str, Any]] = {}
    unsorted = 0
    sites: set[str] = set()
    for part in parts:
        records = part.records
        site = str(records.column("site")[0].as_py()) if records.num_rows else "site"
        jobs, late, file_sites = _jobs_of_file(records, site, part.src_file)
        tables.append(jobs)
        headers[part.src_file] = _header_of(records)
        unsorted += late
        sites.update(file_sites)
    jobs = pa.concat_tables(tables) if tables else JOBS.empty_table()
    records = pa.concat_tables([p.records for p in parts]) if parts else RECORDS.empty_table()
    quarantine = (
        pa.concat_tables([p.quarantine for p in parts]) if parts else QUARANTINE.empty_table()
    )
    return ParseResult(
        records=records,
        jobs=jobs,
        quarantine=quarantine,
        files=tuple(p.src_file for p in parts),
        lines_read=sum(p.lines_read for p in parts),
        tz_offset_s=None,
        info={
            "format": "gwf",
            "gwf_header": next(iter(headers.values()), {}),
            "gwf_headers": headers,
            "gwf_unsorted_rows": unsorted,
            "gwf_orig_sites": sorted(sites),
        },
    )


def read_gwf(
    paths: StrPath | Iterable[StrPath],
    *,
    site: str | None = None,
    errors: ErrorPolicy = "warn",
) -> ParseResult:
    """Read GWF (Grid Workloads Archive) text files into ``records``, ``jobs`` and quarantine.

    Parameters
    ----------
    paths : path or iterable of paths
        GWF files (plain or gzip/bzip2/xz, detected by content) or folders of them.
    site : str, optional
        Site name for every row; defaults to the first path's name up to its first dot (never
        the OrigSiteID column, which stays in the records; see the module notes).
    errors : {"raise", "warn", "skip"}, default "warn"
        What to do with unreadable lines; they are quarantined and counted in every case.

    Returns
    -------
    ParseResult
        The tables and counts (lines read = parsed + quarantined).

    Raises
    ------
    LogParseError
        With ``errors="raise"``, at the first unreadable line.

    Examples
    --------
    >>> result = read_gwf("anon_jobs.gwf", site="das2")  # doctest: +SKIP
    >>> result.jobs.column("vo").unique()  # doctest: +SKIP
    """
    policy = check_error_policy(errors)
    files = expand_log_paths(paths)
    site = site or default_site_name(paths)
    parts = [
        apply_error_policy(
            tokenize_guarded(tokenize_gwf_file, f, site=site, source_format="gwf"), policy
        )
        for f in files
    ]
    return assemble_gwf(parts)


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


def write_gwf(jobs: pa.Table, path: StrPath, *, header: Mapping[str, Any] | None = None) -> Path:
    """Write a ``jobs`` table as a GWF text file.

    Jobs are written sorted by submit time (unknown last), SubmitTime as absolute Unix time;
    unknown values are −1 and integral values are written as integers. JobID is ``job_id_raw``
    (``job_seq``, else the row number, when it is missing). ``cpu_time_s``, ``mem_used_bytes`` and
    ``mem_req_bytes`` are divided back into per-processor values. User, group, queue, VO and
    project are written as names (whitespace replaced by ``_``, with a logged warning). States map
    to Status as in :func:`gridtrace.logs.write_swf`: DELETED and CANCELLED are 5 (DELETED with
    RunTime −1), COMPLETED 1, FAILED, TIMEOUT, NODE_FAIL and REQUEUED 0; UNKNOWN writes the
    ``exit_code`` of rows flagged ``STATUS_NONSTANDARD``, else −1. OrigSiteID is the ``site``
    column; the other grid-only fields (last-run site, structure, network, disk, platform) are
    written as −1.

    Parameters
    ----------
    jobs : pyarrow.Table
        A ``jobs`` table (columns it lacks are written as unknown).
    path : str or path-like
        The file to write (plain text).
    header : mapping, optional
        Comment entries written as ``# Key: value`` lines before the column-name line (a list
        value gives one line per item, ``"_text"`` items are free comment lines); the
        ``info["gwf_header"]`` of :func:`read_gwf` can be passed back as it is.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    ConfigError
        If a header key is not a single word.
    """
    given = _checked_header(header, "GWF")
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
    columns = [
        texts[name] if name in texts else _format_column(numbers[:, k])
        for k, name in enumerate(GWF_FIELDS)
    ]
    body = _pc.binary_join_element_wise(*columns, " ") if n else _pa.array([], pa.string())

    columns_line = " ".join(GWF_FIELDS)
    lines: list[str] = []
    for key, value in given.items():
        values = value if isinstance(value, list | tuple) else [value]
        for item in values:
            if key == "_text" and item in (_WRITTEN_BY, columns_line):
                continue  # a header read back from a file this function wrote
            lines.append(f"# {item}" if key == "_text" else f"# {key}: {item}".rstrip())
    lines.append(f"# {_WRITTEN_BY}")
    lines.append(f"# {columns_line}")
    target = Path(path)
    with target.open("w", encoding="utf-8", newline="\n") as handle:
        handle.write("\n".join(lines) + "\n")
        if n:
            handle.write("\n".join(body.to_pylist()) + "\n")
    logger.debug("wrote %d jobs to %s", n, target)
    return target
