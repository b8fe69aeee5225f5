"""Reading small TORQUE / PBS inputs without numpy or pyarrow: the records before assembly.

``gridtrace parse`` of one day's file spends most of its time importing numpy and pyarrow. For
small inputs, :func:`read_torque_records_small` does what :func:`gridtrace.logs.parse_logs` does up
to the assembly of jobs, in pure Python: it expands the paths, reads and decompresses the files,
recognises them, tokenises every line with the reference tokeniser
(:func:`~gridtrace.logs._torque_lines.tokenize_torque_columns`, the one the Arrow path's rows are
checked against), and puts the files in the time order of their records, returning the columns of
``records`` and ``quarantine`` and the summary facts reading fills in.

It **declines** (returns None, and logs why at DEBUG) whatever it does not reproduce exactly, and
the caller then takes the Arrow path: a file that trips a guard of :mod:`gridtrace.logs._io` (an
over-long line, a window of garbage, a broken compressed stream), zstd, a file no TORQUE sniff
recognises (another format may claim it), a total text above ``max_bytes``, an input
:func:`~gridtrace.logs.parse_logs` would refuse. Everything it returns equals the Arrow path's
tables and facts (tests/logs/test_torque_small_read.py checks that on real and fuzzed files).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from gridtrace._log import get_logger
from gridtrace.logs._io_paths import (
    _JUNK,
    GARBAGE_SHARE,
    GARBAGE_WINDOW_BYTES,
    GARBAGE_WINDOW_LINES,
    MAX_LINE_BYTES,
    REASON_LINE_TOO_LONG,
    REASON_STOPPED,
    REASON_STREAM_BROKEN,
    StrPath,
    default_site_name,
    detect_compression,
    input_findings,
    open_decompressed,
    scan_log_names,
)
from gridtrace.logs._torque_lines import looks_like_torque, tokenize_torque_columns
from gridtrace.logs._torque_pure import (
    FLAVOUR_SNIFF_BYTES,
    PBSPRO_MARKERS,
    TORQUE_NAMES,
    days_from_civil,
    file_order,
)

TYPE_CHECKING = False  # typing's constant without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any, BinaryIO

__all__ = ["DEFAULT_MAX_BYTES", "SmallRecords", "read_torque_records_small"]

logger = get_logger(__name__)  # imports logging when it first logs (see gridtrace._log)

DEFAULT_MAX_BYTES = 8 << 20
"""Decompressed bytes over all files above which :func:`read_torque_records_small` declines."""

_HEAD_BYTES = 65536  # what parse_logs reads of a file to recognise its format (read_log_head)
_GARBAGE_MAX = GARBAGE_SHARE * GARBAGE_WINDOW_LINES  # garbage lines a window may hold unstopped


class SmallRecords:
    """What reading TORQUE files gives before assembly, as Python values.

    (A class with slots, not a NamedTuple: creating one costs a few tenths of a millisecond
    of the start-up.)

    Attributes
    ----------
    records : dict of str to list
        The ``records`` columns in schema order (``stamp_utc`` all None; ``attrs`` lists of
        ``(key, value)`` pairs), files in reading order.
    quarantine : dict of str to list
        The ``quarantine`` columns in schema order, files in reading order.
    files : list of str
        The files (``src_file``) in reading order: the time order of their records.
    lines_read : int
        Lines read over all files: the rows of the two tables.
    files_reordered : int
        Files moved into time order (the summary's ``files_reordered``).
    nul_bytes_stripped : int
        NUL bytes in the ``raw`` of records and quarantine rows (``nul_bytes_stripped``).
    skipped : list of dict
        Entries of the folders given that are not read (``{"path", "why"}``), as
        ``info["skipped"]``.
    files_failed : list of dict
        Files none of whose lines became a record, as ``info["files_failed"]``.
    input : dict
        The summary's ``input``: limits, lines cut, files broken and stopped.
    site : str
        The site name recorded in every row.
    file_lines : list of (str, int)
        Each file and its lines, in the order ``parse_logs`` tokenises them (the order of the
        paths, before the time order): the order of its per-file warnings.
    """

    __slots__ = (
        "file_lines",
        "files",
        "files_failed",
        "files_reordered",
        "input",
        "lines_read",
        "nul_bytes_stripped",
        "quarantine",
        "records",
        "site",
        "skipped",
    )

    def __init__(
        self,
        *,
        records: dict[str, list[Any]],
        quarantine: dict[str, list[Any]],
        files: list[str],
        lines_read: int,
        files_reordered: int,
        nul_bytes_stripped: int,
        skipped: list[dict[str, str]],
        files_failed: list[dict[str, Any]],
        input: dict[str, Any],
        site: str,
        file_lines: list[tuple[str, int]],
    ) -> None:
        self.records = records
        self.quarantine = quarantine
        self.files = files
        self.lines_read = lines_read
        self.files_reordered = files_reordered
        self.nul_bytes_stripped = nul_bytes_stripped
        self.skipped = skipped
        self.files_failed = files_failed
        self.input = input
        self.site = site
        self.file_lines = file_lines


class _Decline(Exception):
    """The input is not one this path reproduces exactly: the caller takes the Arrow path."""


def read_torque_records_small(
    paths: StrPath | Iterable[StrPath],
    *,
    site: str | None = None,
    format: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> SmallRecords | None:
    """Read TORQUE/PBS files into records and quarantine rows without numpy or pyarrow.

    The rows and facts are those :func:`gridtrace.logs.parse_logs` (one worker, no time zone)
    has before it assembles jobs; anything this function does not reproduce exactly makes it
    return None instead.

    Parameters
    ----------
    paths : path or iterable of paths
        Files and directories, as for :func:`~gridtrace.logs.parse_logs`.
    site : str, optional
        Site name; defaults to the first path's name up to its first dot.
    format : str, optional
        None (each file recognised from its content) or a name of TORQUE (``torque``, ``pbs``,
        ``pbspro``, ``openpbs``); any other format declines.
    max_bytes : int, default :data:`DEFAULT_MAX_BYTES`
        Declines when the decompressed text of all files exceeds this (reading stops there).

    Returns
    -------
    SmallRecords or None
        The columns and facts, or None (logged at DEBUG, with why) for an input to read by the
        Arrow path.
    """
    try:
        return _read_all(paths, site, format, max_bytes)
    except _Decline as why:
        logger.debug("the small TORQUE path declines %s: %s", paths, why)
        return None


def _read_all(
    paths: StrPath | Iterable[StrPath], site: str | None, format: str | None, max_bytes: int
) -> SmallRecords:
    if format is not None and format not in TORQUE_NAMES:
        raise _Decline(f"format {format!r} is not TORQUE")
    given = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    try:
        names, passed_by = scan_log_names(given)
    except FileNotFoundError as exc:  # parse_logs raises it: let it
        raise _Decline(str(exc)) from None
    site = site or default_site_name(given)
    if not names:
        raise _Decline("no file to read")
    budget = max_bytes
    parts: list[tuple[str, dict[str, list[Any]], dict[str, list[Any]], int]] = []
    recognised = False
    for name in names:
        data = _read_file(name, budget)
        budget -= len(data)
        head = data[:_HEAD_BYTES]
        if format is None:
            if looks_like_torque(head):
                recognised = True
            elif head.strip():
                # another format may claim it, or none (then skipped or failed): not ours
                raise _Decline(f"{name} is not recognised as TORQUE")
        _check_guards(name, data)
        sniffed = data if len(data) <= FLAVOUR_SNIFF_BYTES else data[:FLAVOUR_SNIFF_BYTES]
        flavour = "pbspro" if any(m in sniffed for m in PBSPRO_MARKERS) else "torque"
        records, quarantine, lines = tokenize_torque_columns(
            data, src_file=name, site=site, source_format=flavour
        )
        parts.append((name, records, quarantine, lines))
    if format is None and not recognised:
        raise _Decline("no file is recognised as TORQUE (parse_logs refuses the input)")
    failed = []
    for part in parts:
        entry = _nothing_read(*part, forced=format is not None)
        if entry is not None:
            failed.append(entry)
    order, moved = _time_order(parts)
    ordered = [parts[i] for i in order]
    records = _concat([part[1] for part in ordered])
    quarantine = _concat([part[2] for part in ordered])
    nul_bytes = sum(raw.count(b"\x00") for raw in records["raw"] if raw is not None)
    nul_bytes += sum(raw.count(b"\x00") for raw in quarantine["raw"])
    cut = sum(reason.startswith(REASON_LINE_TOO_LONG) for reason in quarantine["reason"])
    ended: list[tuple[str, int, str]] = [
        (file, line, reason)
        for file, line, reason in zip(
            quarantine["src_file"], quarantine["src_line"], quarantine["reason"], strict=True
        )
        if reason.startswith((REASON_STREAM_BROKEN, REASON_STOPPED))
    ]
    return SmallRecords(
        records=records,
        quarantine=quarantine,
        files=[part[0] for part in ordered],
        lines_read=sum(part[3] for part in parts),
        files_reordered=moved,
        nul_bytes_stripped=nul_bytes,
        skipped=[{"path": path, "why": why} for path, why in passed_by],
        files_failed=failed,
        input=input_findings(cut, ended),
        site=site,
        file_lines=[(part[0], part[3]) for part in parts],
    )


def _read_file(name: str, budget: int) -> bytes:
    """Return the decompressed content of a file, or decline (too large, zstd, broken)."""
    try:
        with open(name, "rb") as raw:  # noqa: PTH123  # (no pathlib: see scan_log_names)
            kind = detect_compression(raw.read(8))
            raw.seek(0)
            if kind is None:
                if os.fstat(raw.fileno()).st_size > budget:
                    raise _Decline(f"{name}: the input's text is over max_bytes")
                data = raw.read(budget + 1)
            else:
                data = _decompress(name, raw, kind, budget + 1)
    except OSError as exc:  # the Arrow path raises it (or finds it first): let it
        raise _Decline(f"{name}: {exc}") from None
    if len(data) > budget:
        raise _Decline(f"{name}: the input's text is over max_bytes")
    return data


def _decompress(name: str, raw: BinaryIO, kind: str, size: int) -> bytes:
    """Return the first ``size`` decompressed bytes of ``raw``; decline a broken stream."""
    if kind == "zstd":  # the Arrow path reads it (through the zstandard package)
        raise _Decline(f"{name}: {kind} compression")
    stream, broken = open_decompressed(raw, kind)
    try:
        with stream:
            return stream.read(size)
    except broken as exc:
        # the stream breaks: the Arrow path reads it as far as it goes and quarantines the rest
        raise _Decline(f"{name}: {kind} stream broken ({type(exc).__name__}: {exc})") from None


def _check_guards(name: str, data: bytes) -> None:
    """Decline a file where a guard of :mod:`gridtrace.logs._io` would act on the Arrow path.

    A line longer than :data:`MAX_LINE_BYTES` is cut; the garbage test stops a file only at the
    end of a full window (:data:`GARBAGE_WINDOW_LINES` lines or :data:`GARBAGE_WINDOW_BYTES`
    bytes) with more than :data:`GARBAGE_SHARE` of it garbage, so a file with fewer garbage
    lines than that in all is never stopped.
    """
    if len(data) > MAX_LINE_BYTES and max(map(len, data.split(b"\n"))) > MAX_LINE_BYTES:
        raise _Decline(f"{name}: a line over {MAX_LINE_BYTES} bytes")
    if len(data) >= GARBAGE_WINDOW_BYTES:
        raise _Decline(f"{name}: a window of the garbage test ends by bytes")
    if data.count(b"\n") + 1 >= GARBAGE_WINDOW_LINES:
        garbage = sum(not line.strip(_JUNK) for line in data.split(b"\n"))
        if garbage > _GARBAGE_MAX:
            raise _Decline(f"{name}: {garbage} garbage lines, the garbage test may stop it")


def _nothing_read(
    name: str,
    records: dict[str, list[Any]],
    quarantine: dict[str, list[Any]],
    lines: int,
    *,
    forced: bool,
) -> dict[str, Any] | None:
    """Return the ``files_failed`` entry of a file none of whose lines is a record, else None.

    The entry :func:`gridtrace.logs._registry._nothing_read` makes for a TORQUE file; with a
    format given, its advice needs the format the file looks like: this path knows only that
    it looks like TORQUE (other formats' sniffs would import their readers).
    """
    if not lines or records["src_line"]:
        return None
    because = ""
    if quarantine["src_line"]:
        because = f" (first: line {quarantine['src_line'][0]}, {quarantine['reason'][0]})"
    why = f"none of its {lines:,} lines could be read as torque{because}"
    if forced:
        with open(name, "rb") as raw:  # noqa: PTH123  # (no pathlib: see scan_log_names)
            kind = detect_compression(raw.read(8))
            raw.seek(0)
            head = (
                raw.read(_HEAD_BYTES) if kind is None else _decompress(name, raw, kind, _HEAD_BYTES)
            )
        if not looks_like_torque(head):
            raise _Decline(f"{name} gave no record and may be another format")
        why += "; is it a torque log?"
    return {"file": name, "format": "torque", "lines_read": lines, "why": why}


def _time_order(
    parts: list[tuple[str, dict[str, list[Any]], dict[str, list[Any]], int]],
) -> tuple[list[int], int]:
    """Return the reading order of the files and how many moved, as ``in_time_order`` does.

    Without its warning: the caller warns once the reading is taken (the Arrow path warns
    itself when it reads the input again).
    """
    if len(parts) == 1:
        return [0], 0
    return file_order([_median_stamp(part[1]["stamp"]) for part in parts])


def _median_stamp(stamps: list[str]) -> float | None:
    """Return the median of a file's stamps in seconds, as ``_torque._median_stamp`` does.

    There Arrow's ``strptime`` reads each stamp as naive UTC, rolling days and seconds over
    (``02/30`` is March 1st or 2nd, ``:60`` the next minute), and numpy takes the median (of an
    even count, the mean of the middle two, in float64: exact for these magnitudes, as is
    Python's int division here). The stamps are the tokeniser's: ``MM/DD/YYYY HH:MM:SS`` with
    month 1-12, day 1-31, hour 0-23, minute 0-59, second 0-60; a stamp of non-ASCII digits
    (which Arrow does not read) declines.
    """
    if not stamps:
        return None
    seconds = []
    for stamp in stamps:
        if not stamp.isascii():
            raise _Decline(f"a stamp of non-ASCII digits: {stamp!r}")
        year, month = int(stamp[6:10]), int(stamp[0:2])
        day = days_from_civil(year, month, 1) + int(stamp[3:5]) - 1
        clock = int(stamp[11:13]) * 3600 + int(stamp[14:16]) * 60 + int(stamp[17:19])
        seconds.append(day * 86400 + clock)
    seconds.sort()
    half = len(seconds) // 2
    if len(seconds) % 2:
        return float(seconds[half])
    return (seconds[half - 1] + seconds[half]) / 2


def _concat(tables: list[dict[str, list[Any]]]) -> dict[str, list[Any]]:
    """Join tables given as columns, in order (one table is returned as it is)."""
    if len(tables) == 1:
        return tables[0]
    joined: dict[str, list[Any]] = {name: [] for name in tables[0]}
    for table in tables:
        for name, column in table.items():
            joined[name].extend(column)
    return joined
