"""What every log reader returns."""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

import pyarrow as pa

from gridtrace.errors import DataQualityWarning, LogParseError

__all__ = [
    "ERROR_POLICIES",
    "ErrorPolicy",
    "FileParse",
    "ParseResult",
    "apply_error_policy",
    "check_error_policy",
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
        by_type = Counter(self.records.column("record_type").to_pylist())
        record_flags: Counter[str] = Counter()
        for flags in self.records.column("flags").to_pylist():
            record_flags.update(flags or ())
        job_flags: Counter[str] = Counter()
        for flags in self.jobs.column("flags").to_pylist():
            job_flags.update(flags or ())
        states = Counter(self.jobs.column("state").to_pylist())
        reasons = Counter(self.quarantine.column("reason").to_pylist())
        return {
            "files": len(self.files),
            "lines_read": self.lines_read,
            "lines_parsed": self.lines_parsed,
            "lines_quarantined": self.lines_quarantined,
            "reconciled": self.lines_read == self.lines_parsed + self.lines_quarantined,
            "records_by_type": dict(sorted(by_type.items())),
            "record_flags": dict(sorted(record_flags.items())),
            "jobs": int(self.jobs.num_rows),
            "jobs_by_state": dict(sorted(states.items())),
            "job_flags": dict(sorted(job_flags.items())),
            "quarantine_reasons": dict(sorted(reasons.items())),
            "tz_offset_s": self.tz_offset_s,
            **self.info,
        }


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
        f"{parsed.src_file}: {bad.num_rows} of {parsed.lines_read} lines quarantined (first: "
        f"line {first_line}, {first_reason}); they are kept in the quarantine table",
        DataQualityWarning,
        stacklevel=3,
    )
    return parsed
