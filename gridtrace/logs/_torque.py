"""The TORQUE / OpenPBS / PBS Pro accounting-log reader.

Reading is two steps. Each file is tokenised on its own into ``records`` and ``quarantine`` (this is
what runs in parallel, one file per worker, so memory stays bounded by the largest file); then the
records of all files, in reading order, are assembled into ``jobs``, because a job's Q, S and E
records routinely sit in different daily files.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

import pyarrow as pa

from gridtrace.logs._base import (
    ErrorPolicy,
    FileParse,
    ParseResult,
    apply_error_policy,
    check_error_policy,
    tokenize_guarded,
)
from gridtrace.logs._io import StrPath, default_site_name, expand_log_paths, read_log_bytes
from gridtrace.logs._torque_fast import tokenize_torque
from gridtrace.logs._torque_jobs import assemble_torque_jobs
from gridtrace.logs._torque_lines import parse_torque_line
from gridtrace.schema import QUARANTINE, RECORDS

__all__ = [
    "FLAGS",
    "assemble_torque",
    "looks_like_torque",
    "read_torque",
    "tokenize_torque_file",
]

FLAGS: Mapping[str, str] = {}
"""Every flag this reader sets on a row, with what it means (see ``flag_meanings``)."""

logger = logging.getLogger(__name__)

# Markers only PBS Pro writes: licence records, vnode allocations, run counts.
_PBSPRO_MARKERS = (b";L;", b" exec_vnode=", b" run_count=")
# PBS Pro writes its markers from the first end record on; a whole-file scan costs half a tokenise
_FLAVOUR_SNIFF_BYTES = 4 << 20


def looks_like_torque(head: bytes) -> bool:
    """Whether the first bytes of a (decompressed) file look like TORQUE/PBS accounting lines."""
    lines = [line for line in head.split(b"\n")[:20] if line.strip()]
    if len(lines) > 1:
        lines = lines[:-1]  # the last line of a head may be cut in the middle
    good = sum(not isinstance(parse_torque_line(line), str) for line in lines)
    return bool(lines) and 2 * good > len(lines)


def tokenize_torque_file(path: StrPath, *, site: str) -> FileParse:
    """Tokenise one TORQUE/PBS accounting file (plain, gzip, bzip2 or xz) into records.

    The flavour (``torque`` or ``pbspro``) recorded in ``source_format`` is recognised from
    markers only PBS Pro writes (licence records, ``exec_vnode``, ``run_count``).
    """
    data = read_log_bytes(path)
    head = data[:_FLAVOUR_SNIFF_BYTES]
    flavour = "pbspro" if any(marker in head for marker in _PBSPRO_MARKERS) else "torque"
    parsed = tokenize_torque(data, src_file=str(path), site=site, source_format=flavour)
    logger.debug(
        "%s: %d lines, %d quarantined", path, parsed.lines_read, parsed.quarantine.num_rows
    )
    return parsed


def assemble_torque(
    parts: Sequence[FileParse], *, tz: str | None = None, unitless_memory: str = "b"
) -> ParseResult:
    """Assemble tokenised files, given in reading order, into a :class:`ParseResult`."""
    records = pa.concat_tables([p.records for p in parts]) if parts else RECORDS.empty_table()
    quarantine = (
        pa.concat_tables([p.quarantine for p in parts]) if parts else QUARANTINE.empty_table()
    )
    assembly = assemble_torque_jobs(records, tz=tz, unitless_memory=unitless_memory)
    return ParseResult(
        records=assembly.records,
        jobs=assembly.jobs,
        quarantine=quarantine,
        files=tuple(p.src_file for p in parts),
        lines_read=sum(p.lines_read for p in parts),
        tz_offset_s=assembly.tz_offset_s,
        info={"format": "torque", **assembly.info},
    )


def read_torque(
    paths: StrPath | Iterable[StrPath],
    *,
    site: str | None = None,
    tz: str | None = None,
    errors: ErrorPolicy = "warn",
    unitless_memory: str = "b",
) -> ParseResult:
    """Read TORQUE / OpenPBS / PBS Pro accounting logs into ``records``, ``jobs`` and quarantine.

    Parameters
    ----------
    paths : path or iterable of paths
        Files and directories of daily files (plain or gzip/bzip2/xz, detected by content).
        Directories are read in the date order of their file names.
    site : str, optional
        Site name for every row; defaults to the first path's name up to its first dot.
    tz : str, optional
        The site's IANA time zone (e.g. ``"Europe/Brussels"``). Times always come from the epochs
        in the log; the zone only places the records that carry nothing but their local stamp.
        Without it the offset is inferred from the records that carry both.
    errors : {"raise", "warn", "skip"}, default "warn"
        What to do with unreadable lines; they are quarantined and counted in every case.
    unitless_memory : str, default "b"
        The unit assumed for memory values logged without one (each such value is flagged).

    Returns
    -------
    ParseResult
        The tables and the counts, which always reconcile: lines read = parsed + quarantined.

    Raises
    ------
    LogParseError
        With ``errors="raise"``, at the first unreadable line, naming its file and line.

    Examples
    --------
    >>> result = read_torque("/var/spool/torque/server_priv/accounting")  # doctest: +SKIP
    >>> result.summary()["lines_quarantined"]  # doctest: +SKIP
    0
    """
    policy = check_error_policy(errors)
    files = expand_log_paths(paths)
    site = site or default_site_name(paths)
    parts = [
        apply_error_policy(
            tokenize_guarded(tokenize_torque_file, f, site=site, source_format="torque"), policy
        )
        for f in files
    ]
    return assemble_torque(parts, tz=tz, unitless_memory=unitless_memory)
