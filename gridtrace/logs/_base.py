"""What every log reader returns."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from gridtrace.errors import DataQualityWarning, LogParseError
from gridtrace.logs._io import (
    INPUT_LIMITS,
    MAX_LINE_BYTES,
    REASON_LINE_TOO_LONG,
    REASON_STOPPED,
    REASON_STREAM_BROKEN,
    ReadReport,
    collect_read_reports,
    input_findings,
    quarantined_lines_warning,
)
from gridtrace.logs._summary import parse_summary
from gridtrace.schema import QUARANTINE, RECORDS

__all__ = [
    "ERROR_POLICIES",
    "INPUT_LIMITS",
    "REASON_LINE_TOO_LONG",
    "REASON_STOPPED",
    "REASON_STREAM_BROKEN",
    "ErrorPolicy",
    "FileParse",
    "ParseResult",
    "apply_error_policy",
    "check_error_policy",
    "dominant_offset",
    "parts_quarantine",
    "parts_records",
    "result_of_parts",
    "tokenize_guarded",
]

ErrorPolicy = Literal["raise", "warn", "skip"]
"""What a reader does with a line it cannot read: ``raise`` a :class:`LogParseError` at the first
one, ``warn`` once per file with the count, or ``skip`` silently. In every case the line is kept in
the quarantine table and counted."""

ERROR_POLICIES: tuple[ErrorPolicy, ...] = ("raise", "warn", "skip")


def check_error_policy(errors: str) -> ErrorPolicy:
    """Return ``errors`` if it names a policy, else raise ``ValueError`` listing them."""
    for policy in ERROR_POLICIES:
        if errors == policy:
            return policy
    msg = f"errors must be one of {', '.join(ERROR_POLICIES)}, not {errors!r}"
    raise ValueError(msg)


@dataclass(frozen=True)
class FileParse:
    """The lines of one log file, tokenised: the unit of parallel work.

    Attributes
    ----------
    src_file : str
        The file, as named to the reader.
    records : pyarrow.Table
        One row per parsed line (schema ``records``).
    quarantine : pyarrow.Table
        One row per unreadable line (schema ``quarantine``).
    lines_read : int
        Lines in the file; always ``records.num_rows + quarantine.num_rows``.
    """

    src_file: str
    records: pa.Table
    quarantine: pa.Table
    lines_read: int


@dataclass(frozen=True)
class ParseResult:
    """The tables a reader produced from a set of files, and the counts that reconcile them.

    Attributes
    ----------
    records, jobs, quarantine : pyarrow.Table
        The ``records``, ``jobs`` and ``quarantine`` tables.
    files : tuple of str
        The files read, in reading order.
    lines_read : int
        Lines read over all files; equals ``lines_parsed + lines_quarantined``.
    tz_offset_s : int or None
        The site's dominant offset of local stamps from UTC, in seconds, where it could be inferred.
    info : dict
        Reader-specific facts (zone given or inferred, offsets seen, ...).
    """

    records: pa.Table
    jobs: pa.Table
    quarantine: pa.Table
    files: tuple[str, ...]
    lines_read: int
    tz_offset_s: int | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def lines_parsed(self) -> int:
        """Lines that became a ``records`` row."""
        return int(self.records.num_rows)

    @property
    def lines_quarantined(self) -> int:
        """Lines kept in the quarantine table."""
        return int(self.quarantine.num_rows)

    def summary(self) -> dict[str, Any]:
        """Count by record type, job state, flag and quarantine reason, in plain JSON types."""
        return parse_summary(
            files=len(self.files),
            lines_read=self.lines_read,
            record_types=self.records.column("record_type").to_pylist(),
            record_flags=self.records.column("flags").to_pylist(),
            job_states=self.jobs.column("state").to_pylist(),
            job_flags=self.jobs.column("flags").to_pylist(),
            reasons=self.quarantine.column("reason").to_pylist(),
            tz_offset_s=self.tz_offset_s,
            input_findings=_input_findings(self.quarantine),
            info=self.info,
        )


def parts_records(parts: Sequence[FileParse]) -> pa.Table:
    """Return the ``records`` rows of ``parts`` in reading order (an empty table for none)."""
    return pa.concat_tables([p.records for p in parts]) if parts else RECORDS.empty_table()


def parts_quarantine(parts: Sequence[FileParse]) -> pa.Table:
    """Return the ``quarantine`` rows of ``parts`` in reading order (an empty table for none)."""
    return pa.concat_tables([p.quarantine for p in parts]) if parts else QUARANTINE.empty_table()


def dominant_offset(jobs: pa.Table) -> int | None:
    """Return the most common ``tz_offset_s`` of ``jobs`` (the smallest of equals), or None.

    None where no job has an offset.
    """
    counts = pc.value_counts(jobs.column("tz_offset_s").drop_null())
    most = pc.equal(counts.field("counts"), pc.max(counts.field("counts")))
    smallest = pc.min(pc.filter(counts.field("values"), most)).as_py()
    return None if smallest is None else int(smallest)


def result_of_parts(
    parts: Sequence[FileParse],
    *,
    records: pa.Table,
    jobs: pa.Table,
    quarantine: pa.Table,
    info: dict[str, Any],
    tz_offset_s: int | None = None,
) -> ParseResult:
    """Return the :class:`ParseResult` of assembled ``parts``: their files and lines counted.

    Parameters
    ----------
    parts : sequence of FileParse
        The tokenised files, in reading order: they name the files and count the lines read.
    records, jobs, quarantine : pyarrow.Table
        The assembled tables.
    info : dict
        The reader's facts.
    tz_offset_s : int, optional
        The site's dominant offset from UTC, where the reader inferred one.
    """
    return ParseResult(
        records=records,
        jobs=jobs,
        quarantine=quarantine,
        files=tuple(p.src_file for p in parts),
        lines_read=sum(p.lines_read for p in parts),
        tz_offset_s=tz_offset_s,
        info=info,
    )


def _input_findings(quarantine: pa.Table) -> dict[str, Any]:
    """Return the limits files were read under, and what they caught (from quarantine rows)."""
    reasons = quarantine.column("reason")
    cut = pc.starts_with(reasons, REASON_LINE_TOO_LONG)
    ends = pc.or_(
        pc.starts_with(reasons, REASON_STREAM_BROKEN), pc.starts_with(reasons, REASON_STOPPED)
    )
    rows = quarantine.filter(ends).select(["src_file", "src_line", "reason"]).to_pylist()
    return input_findings(
        int(pc.sum(cut.cast(pa.int64())).as_py() or 0),
        [(r["src_file"], r["src_line"], r["reason"]) for r in rows],
    )


def tokenize_guarded(
    tokenize: Callable[..., FileParse],
    path: str | os.PathLike[str],
    *,
    site: str,
    source_format: str,
    **options: Any,
) -> FileParse:
    """Tokenise one file with ``tokenize``, turning what the read left out into quarantine rows.

    Every reader reads a file through :func:`gridtrace.logs._io.read_log_bytes` or the streaming
    core (:mod:`gridtrace.logs._stream`), which stream it
    under the limits of :mod:`gridtrace.logs._io` (lines of at most 1 MiB; reading stopped after
    a window of 100,000 lines or 256 MiB that is more than 99 % garbage; a broken compressed
    stream read as far as it goes). Inside this wrapper it reports what it left out instead of
    raising, and the wrapper adds to the file's quarantine:

    * one row per over-long line, in place of the empty line the reader was given (reason
      ``line too long: N bytes ...``, raw its first 4,096 bytes);
    * one row for the rest of a file whose compressed stream broke (``compressed stream broken
      ...``, where and why) or that the garbage test stopped (``reading stopped ...``), numbered
      after the last line the reader got and counted as a line read.

    So lines read = parsed + quarantined holds, and no file aborts a parse. ``parse_logs`` and
    every ``read_*`` function tokenise through it, so a format registered by a plugin gets the
    same guarantees as long as it reads its files with ``read_log_bytes``.

    Parameters
    ----------
    tokenize : callable
        ``tokenize(path, *, site, **options) -> FileParse``, a format's per-file tokeniser.
    path : str or path-like
        The file.
    site : str
        Site name for every row.
    source_format : str
        ``source_format`` of the rows added when the reader gave none to copy.
    **options
        Passed on to ``tokenize``.

    Returns
    -------
    FileParse
        The reader's tables with the rows above added.
    """
    with collect_read_reports() as reports:
        parsed = tokenize(path, site=site, **options)
    report = reports.get(str(path)) or reports.get(os.fspath(Path(path)))
    if report is None and len(reports) == 1:
        report = next(iter(reports.values()))
    if report is None or report.clean:
        return parsed
    return _add_read_findings(parsed, report, site=site, source_format=source_format)


def _add_read_findings(
    parsed: FileParse, report: ReadReport, *, site: str, source_format: str
) -> FileParse:
    for table in (parsed.quarantine, parsed.records):
        if table.num_rows:
            source_format = str(table.column("source_format")[0].as_py())
            break
    rows: list[dict[str, Any]] = []
    records, quarantine = parsed.records, parsed.quarantine
    if report.cut_lines:
        cut = pa.array([line for line, _, _ in report.cut_lines], pa.int64())
        records = records.filter(pc.invert(pc.is_in(records.column("src_line"), cut)))
        quarantine = quarantine.filter(pc.invert(pc.is_in(quarantine.column("src_line"), cut)))
        for line, length, head in report.cut_lines:
            reason = (
                f"{REASON_LINE_TOO_LONG}: {length:,} bytes, over the limit of "
                f"{MAX_LINE_BYTES:,}; not parsed, its first {len(head):,} bytes kept"
            )
            rows.append({"src_line": line, "reason": reason, "raw": head})
    lines_read = parsed.lines_read
    if report.tail_reason is not None:
        lines_read += 1
        rows.append(
            {"src_line": report.lines + 1, "reason": report.tail_reason, "raw": report.tail_raw}
        )
    added = pa.table(
        {
            "site": pa.array([site] * len(rows), pa.string()),
            "source_format": pa.array([source_format] * len(rows), pa.string()),
            "src_file": pa.array([parsed.src_file] * len(rows), pa.string()),
            "src_line": pa.array([r["src_line"] for r in rows], pa.int64()),
            "reason": pa.array([r["reason"] for r in rows], pa.string()),
            "raw": pa.array([r["raw"] for r in rows], pa.binary()),
        },
        schema=QUARANTINE,
    )
    quarantine = pa.concat_tables([quarantine.cast(QUARANTINE), added])
    if report.cut_lines:
        quarantine = quarantine.sort_by("src_line")
    return FileParse(parsed.src_file, records, quarantine, lines_read)


def apply_error_policy(parsed: FileParse, errors: ErrorPolicy) -> FileParse:
    """Act on a file's quarantined lines as the policy says; the lines stay quarantined.

    Raises
    ------
    LogParseError
        With ``errors="raise"``, naming the file and line of the first unreadable line.
    """
    bad = parsed.quarantine
    if not bad.num_rows or errors == "skip":
        return parsed
    first_line = int(bad.column("src_line")[0].as_py())
    first_reason = str(bad.column("reason")[0].as_py())
    if errors == "raise":
        raise LogParseError(
            f"{first_reason}; fix or remove the line, or read with errors='warn' to quarantine "
            "it and go on",
            path=parsed.src_file,
            lineno=first_line,
            line=bad.column("raw")[0].as_py(),
        )
    warnings.warn(
        quarantined_lines_warning(
            parsed.src_file, bad.num_rows, parsed.lines_read, first_line, first_reason
        ),
        DataQualityWarning,
        stacklevel=3,
    )
    return parsed
