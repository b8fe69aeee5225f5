"""``gridtrace parse`` of a small TORQUE/PBS input, without numpy and pyarrow.

Users run the command on one day's file far more often than on a year, and for a few hundred
lines the Arrow path's imports (numpy and pyarrow: 0.2 s warm, 0.7 s on a first call) cost
more than the reading. So a small input is read, assembled and written in pure Python:
:func:`~gridtrace.logs._torque_small_read.read_torque_records_small` tokenises the files,
:func:`~gridtrace.logs._torque_small_jobs.assemble_torque_small` cuts the jobs, the VO mapping
is applied on the lists, and :mod:`gridtrace._parquet_lite` writes the tables. Each step may
decline what it does not reproduce exactly (then :func:`parse_torque_small` returns None and
the caller takes the Arrow path): the tables, the summary and the flag counts equal the Arrow
path's wherever this path answers (the tests compare the two on the real and on fuzzed logs).
"""

from __future__ import annotations

import os
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import chain

from gridtrace._log import get_logger
from gridtrace.logs._summary import parse_summary

TYPE_CHECKING = False  # typing's constant without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

    from gridtrace.logs._vo import VOMapping

__all__ = ["SMALL_PARSE_BYTES", "SmallParse", "flag_counts_of", "parse_torque_small"]

logger = get_logger(__name__)  # imports logging when it first logs (see gridtrace._log)

SMALL_PARSE_BYTES = 4 << 20
"""Decompressed bytes up to which ``gridtrace parse`` reads TORQUE input in pure Python."""


class SmallParse:
    """What ``gridtrace parse`` writes and prints, as Python lists and plain dicts.

    (A class with slots, not a NamedTuple: creating one costs a few tenths of a millisecond
    of the start-up.)
    """

    __slots__ = ("job_flags", "jobs", "quarantine", "record_flags", "records", "summary")

    def __init__(
        self,
        *,
        records: dict[str, list[Any]],
        jobs: dict[str, list[Any]],
        quarantine: dict[str, list[Any]],
        summary: dict[str, Any],
        job_flags: dict[str, dict[str, int]],
        record_flags: dict[str, dict[str, int]],
    ) -> None:
        self.records = records
        self.jobs = jobs
        self.quarantine = quarantine
        self.summary = summary
        self.job_flags = job_flags
        self.record_flags = record_flags


def parse_torque_small(
    paths: Sequence[str | os.PathLike[str]],
    *,
    site: str | None,
    mapping: VOMapping,
    format: str | None = None,
    max_bytes: int = SMALL_PARSE_BYTES,
) -> SmallParse | None:
    """Read, assemble and VO-map a small TORQUE/PBS input in pure Python, or return None.

    Parameters
    ----------
    paths : sequence of path-like
        Files and folders of daily files, as ``gridtrace parse`` takes them.
    site : str, optional
        The site's name (default: the first path's name).
    mapping : VOMapping
        The VO rules, applied as :meth:`~gridtrace.logs.VOMapping.apply` does.
    format : str, optional
        A name of the TORQUE format (``torque``, ``pbs``, ...); any other declines.
    max_bytes : int
        Decompressed bytes beyond which the input is not small.

    Returns
    -------
    SmallParse or None
        None when the input is not small or holds something only the Arrow path reads (the
        reason is logged at DEBUG level).
    """
    from gridtrace.logs._torque_pure import warn_time_order
    from gridtrace.logs._torque_small_jobs import assemble_torque_small
    from gridtrace.logs._torque_small_read import read_torque_records_small

    read = read_torque_records_small(paths, site=site, format=format, max_bytes=max_bytes)
    if read is None:
        return None
    names = [name for name, _ in read.file_lines]
    if read.quarantine["src_file"] and len(set(names)) < len(names):
        # a file named twice is warned about once per reading: not told apart by src_file
        logger.debug("small parse declined: a file with quarantined lines is named twice")
        return None
    assembly = assemble_torque_small(read.records)
    if assembly is None:
        return None
    # said here, once this reading is taken: a declined one is read (and warned of) again
    warn_time_order(read.files_reordered, read.files)
    _warn_quarantined(read.file_lines, read.quarantine)
    records = dict(read.records)
    records["stamp_utc"] = assembly.stamp_utc
    records["flags"] = assembly.flags
    jobs = dict(assembly.jobs)
    vos, job_flags = mapping.vo_columns(
        {name: jobs[name] for name in mapping.fields_read()}, jobs["flags"]
    )
    jobs["vo"] = vos
    jobs["flags"] = job_flags
    quarantine = read.quarantine
    info = {
        "format": "torque",
        **assembly.info,
        "files_reordered": read.files_reordered,
        "nul_bytes_stripped": read.nul_bytes_stripped,
        "skipped": read.skipped,
        "files_failed": read.files_failed,
    }
    summary = parse_summary(
        files=len(read.files),
        lines_read=read.lines_read,
        record_types=records["record_type"],
        record_flags=records["flags"],
        job_states=jobs["state"],
        job_flags=jobs["flags"],
        reasons=quarantine["reason"],
        tz_offset_s=assembly.tz_offset_s,
        input_findings=read.input,
        info=info,
    )
    return SmallParse(
        records=records,
        jobs=jobs,
        quarantine=quarantine,
        summary=summary,
        job_flags=flag_counts_of(jobs["source_format"], jobs["flags"]),
        record_flags=flag_counts_of(records["source_format"], records["flags"]),
    )


def _warn_quarantined(
    file_lines: Sequence[tuple[str, int]], quarantine: Mapping[str, Sequence[Any]]
) -> None:
    """Warn of each file's quarantined lines, in the words and order of the Arrow path."""
    from gridtrace.errors import DataQualityWarning
    from gridtrace.logs._io_paths import quarantined_lines_warning

    bad: dict[str, list[int]] = {}
    for row, name in enumerate(quarantine["src_file"]):
        bad.setdefault(name, []).append(row)
    for name, lines_read in file_lines:
        rows = bad.get(name)
        if not rows:
            continue
        first = rows[0]
        warnings.warn(
            quarantined_lines_warning(
                name,
                len(rows),
                lines_read,
                quarantine["src_line"][first],
                quarantine["reason"][first],
            ),
            DataQualityWarning,
            stacklevel=3,
        )


def flag_counts_of(
    source_formats: Sequence[str], flags: Sequence[Sequence[str] | None]
) -> dict[str, dict[str, int]]:
    """Count each flag per ``source_format``, as :func:`~gridtrace.logs.flag_counts` does.

    Returns
    -------
    dict
        ``{source_format: {flag: rows}}``, formats in name order, each format's flags from the
        most set (ties by name); formats with no flag set are left out.
    """
    by_format: dict[str, list[Sequence[str]]] = {}
    for source_format, row in zip(source_formats, flags, strict=True):
        if row:
            by_format.setdefault(source_format, []).append(row)
    # one Counter per format over all its flags (counted in C), not an update per row
    counts = {name: Counter(chain.from_iterable(rows)) for name, rows in by_format.items()}
    return {
        name: dict(sorted(counted.items(), key=lambda item: (-item[1], item[0])))
        for name, counted in sorted(counts.items())
    }
