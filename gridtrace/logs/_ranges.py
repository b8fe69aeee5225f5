"""One big plain log file split by byte ranges, each range tokenised on its own, put back exactly.

Parallelism over files leaves one big file to one worker. :func:`plan_ranges` splits such a file
into byte ranges that workers tokenise apart (:func:`tokenize_range`); :func:`join_ranges`
concatenates their tables in order into the :class:`~gridtrace.logs._base.FileParse` reading the
file in one piece gives: the same records, line numbers and quarantine, ``lines_read`` =
parsed + quarantined in every range and in total.

What makes the pieces add up to the whole:

* **Lines.** A range starts just after a newline (a cut inside a line moves on to the next line
  start), so every line, and every byte, is in exactly one range. The first line number of each
  range is the newline count of the bytes before it (numpy over a memory map, block by block).
* **The read's limits.** Every range is read through the same line guard as a whole file
  (:mod:`gridtrace.logs._io`: over-long lines, the garbage test), its lines numbered from the
  range's first line. The garbage test looks at windows of 100,000 lines (or 256 MiB): a range
  starts only at a multiple of :data:`~gridtrace.logs._io.GARBAGE_WINDOW_LINES` lines, and only
  while every window before it is shorter than 256 MiB, so the windows of the ranges are the
  windows of the whole file and a file stops at the same line, with the same row. The ranges
  after one that stopped are dropped, as the whole read never reaches them.
* **Whole-file state.** Only formats whose state at a range start can be known are split
  (:data:`SPLIT_FORMATS`):

  ``torque``
      Each line is a record; the flavour (``torque`` or ``pbspro``) is taken from the file's
      first 4 MiB, as the whole read takes it, and handed to every range.
  ``swf``, ``gwf``
      Lines are independent but for a header comment continuing the comment line just before
      it: a range starts only after a job line (its first non-blank byte a digit), where a
      fresh comment state is the state the whole read has.
  ``slurm``
      The field order comes from line 1 (a header line, else the default layout): it is read
      from the file's first line and handed to every range.
  ``sge``
      The usual field count is the most common count over the whole file: a first pass over the
      ranges (also parallel) counts each range's histogram, the histograms are summed, and the
      count is handed to every range, as :func:`~gridtrace.logs._sge.sge_width` decides it.

  LSF (a record may go on over several lines) and HTCondor (a ``-json`` ad spans lines; several
  ads may share a line) are not split, nor a format registered by a plugin.
* **Compression.** gzip, bzip2 and xz streams cannot be entered in the middle; a zstd file could
  be entered at a frame start, but frames are not indexed, so it is not split either. A
  compressed file is one range, as is a file of one range's size or less; :class:`RangeCounts`
  counts them, and parse summaries say so.
"""

from __future__ import annotations

import copy
import logging
import mmap
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gridtrace.errors import ConfigError
from gridtrace.logs._base import FileParse, _add_read_findings
from gridtrace.logs._io import (
    _CHUNK,
    GARBAGE_WINDOW_BYTES,
    GARBAGE_WINDOW_LINES,
    KEPT_RAW_BYTES,
    REASON_STOPPED,
    ReadReport,
    StrPath,
    _cut_pieces,
    _LineGuard,
    _Stop,
    detect_compression,
    guarded_pieces,
)
from gridtrace.logs._stream import DEFAULT_CHUNK_BYTES, Chunk, ChunkCountError, LineFormat

__all__ = [
    "DEFAULT_SPLIT_BYTES",
    "SPLIT_FORMATS",
    "ByteRange",
    "RangeCounts",
    "join_ranges",
    "kept_ranges",
    "plan_ranges",
    "range_seed",
    "split_file",
    "tokenize_range",
]

logger = logging.getLogger(__name__)

DEFAULT_SPLIT_BYTES = 64 << 20
"""Bytes per range by default (64 MiB): a plain file larger than this is split."""

SPLIT_FORMATS = ("torque", "swf", "gwf", "slurm", "sge")
"""The formats whose files are split (see the module's text for why the others are not)."""

_NEWLINE = 10
_BLOCK = 16 << 20  # bytes of the memory map scanned for newlines at once
_JUNK = b" \t\r\x0b\x0c\x00"
_DIGITS = b"0123456789"
_LOOK = 4096  # bytes of the line before a cut that decide whether a range may start there
_TORQUE_SNIFF_BYTES = 4 << 20  # as gridtrace.logs._torque reads the flavour
_ALIGN_LINES = GARBAGE_WINDOW_LINES  # what plan_ranges aligns range starts to


@dataclass(frozen=True)
class ByteRange:
    """One range of a file: bytes ``start`` to ``end`` (excluded), whole lines.

    Attributes
    ----------
    path : str
        The file, as the whole read names it (``src_file``).
    start, end : int
        Byte offsets; ``start`` is 0 or just after a newline.
    first_line : int
        The number (from 1) of the range's first line in the file.
    index, count : int
        Its position among the file's ranges, and how many there are.
    """

    path: str
    start: int
    end: int
    first_line: int
    index: int
    count: int

    @property
    def final(self) -> bool:
        """True for the file's last range."""
        return self.index == self.count - 1


@dataclass
class RangeCounts:
    """How the files of a parse were split (or why not), for its summary."""

    files_split: int = 0
    ranges: int = 0
    compressed: int = 0
    format_not_split: int = 0
    small: int = 0

    def add(self, ranges: Sequence[ByteRange], why_not: str | None) -> None:
        """Count one file's plan."""
        if why_not is None:
            self.files_split += 1
            self.ranges += len(ranges)
        elif why_not == "compressed":
            self.compressed += 1
        elif why_not == "format":
            self.format_not_split += 1
        else:
            self.small += 1

    @property
    def worth_saying(self) -> bool:
        """True when a file was split, or a big one was not (compressed, or its format)."""
        return bool(self.files_split or self.compressed or self.format_not_split)

    def as_dict(self, split_bytes: int) -> dict[str, int]:
        """Plain JSON: the range size and each count."""
        return {
            "split_bytes": split_bytes,
            "files_split": self.files_split,
            "ranges": self.ranges,
            "not_split_compressed": self.compressed,
            "not_split_format": self.format_not_split,
            "not_split_small": self.small,
        }


# --------------------------------------------------------------------------------------------
# splitting


def _is_plain(path: StrPath) -> bool:
    with Path(path).open("rb") as raw:
        return detect_compression(raw.read(8)) is None


def _size(path: StrPath, **at_least_one: int) -> int:
    """Return the file's size, once the settings named are checked to be at least 1."""
    for what, value in at_least_one.items():
        if value < 1:
            msg = f"{what} must be at least 1, not {value}"
            raise ConfigError(msg)
    return Path(path).stat().st_size


def _after_job_line(previous: bytes) -> bool:
    """Whether the line before a cut is a job line (first non-blank byte a digit)."""
    body = previous.lstrip(_JUNK)
    return bool(body) and body[0] in _DIGITS


def _may_start(name: str) -> Callable[[bytes], bool] | None:
    return _after_job_line if name in ("swf", "gwf") else None


def split_file(
    path: StrPath,
    cuts: Sequence[int],
    *,
    align_lines: int = GARBAGE_WINDOW_LINES,
    may_start: Callable[[bytes], bool] | None = None,
) -> list[ByteRange]:
    """Split a plain file at (or after) byte offsets, into ranges of whole lines.

    Each cut moves on to the first line start at or after it that follows a multiple of
    ``align_lines`` lines and, when ``may_start`` is given, whose previous line (its first
    4,096 bytes) ``may_start`` accepts; cuts are dropped where none is left before the end, or
    after a window of ``align_lines`` lines of 256 MiB or more (the garbage test's windows end
    by bytes there, so later windows no longer fall on line multiples). A compressed or empty
    file is one range.

    Parameters
    ----------
    path : str or path-like
        The file.
    cuts : sequence of int
        Byte offsets wanted as range starts (any order; out of range ones are ignored).
    align_lines : int, default 100,000
        Ranges start after a multiple of this many lines: the garbage test's window, which keeps
        the read's findings those of the whole file. 1 allows any line start; the findings are
        then exact only for files of fewer lines than one window.
    may_start : callable, optional
        ``may_start(previous_line_head) -> bool``.

    Returns
    -------
    list of ByteRange
        In file order, covering every byte once.

    Raises
    ------
    ConfigError
        If ``align_lines`` is less than 1 (a ``ValueError``).
    """
    name, size = str(path), _size(path, align_lines=align_lines)
    wanted = sorted({int(c) for c in cuts if 0 < int(c) < size})
    if not wanted or not _is_plain(name):
        return [ByteRange(name, 0, size, 1, 0, 1)]
    bounds = _boundaries(name, size, wanted, align_lines, may_start)
    ends = [start for start, _ in bounds[1:]] + [size]
    count = len(bounds)
    return [
        ByteRange(name, start, end, first, i, count)
        for i, ((start, first), end) in enumerate(zip(bounds, ends, strict=True))
    ]


def _boundaries(
    path: str,
    size: int,
    wanted: list[int],
    align_lines: int,
    may_start: Callable[[bytes], bool] | None,
) -> list[tuple[int, int]]:
    """Return ``(offset, first_line)`` of every range start, the file's start first."""
    bounds = [(0, 1)]
    w = 0  # the next wanted cut
    lines_before = 0  # newlines before the current block
    window_start = 0  # offset where the current window of align_lines lines began
    with Path(path).open("rb") as raw, mmap.mmap(raw.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        view = np.frombuffer(mm, dtype=np.uint8)
        try:
            for lo in range(0, size, _BLOCK):
                if w >= len(wanted):
                    break
                newlines = np.flatnonzero(view[lo : lo + _BLOCK] == _NEWLINE) + lo
                first = (align_lines - 1 - lines_before % align_lines) % align_lines
                aligned = newlines[first::align_lines]  # newline ending a multiple of lines
                starts = aligned + 1
                spans = np.diff(np.concatenate(([window_start], starts)))
                too_long = np.flatnonzero(spans >= GARBAGE_WINDOW_BYTES)
                stop_here = len(too_long) > 0
                if stop_here:
                    starts = starts[: too_long[0]]
                    aligned = aligned[: too_long[0]]
                numbers = lines_before + first + 1 + align_lines * np.arange(len(starts))
                found = 0
                while w < len(wanted):
                    floor = max(wanted[w], bounds[-1][0] + 1)
                    found = max(found, int(np.searchsorted(starts, floor)))
                    placed = False
                    while found < len(starts) and int(starts[found]) < size:
                        offset = int(starts[found])
                        found += 1
                        previous = mm.rfind(b"\n", 0, offset - 1) + 1
                        head = mm[previous : min(offset - 1, previous + _LOOK)]
                        if may_start is None or may_start(head):
                            bounds.append((offset, int(numbers[found - 1]) + 1))
                            while w < len(wanted) and wanted[w] <= offset:
                                w += 1
                            placed = True
                            break
                    if not placed:
                        break  # no line start left in this block for this cut
                if stop_here:
                    break
                if len(starts):
                    window_start = int(starts[-1])
                lines_before += len(newlines)
        finally:
            del view  # the map cannot close while a numpy view of it lives
    return bounds


def plan_ranges(
    name: str, path: StrPath, split_bytes: int = DEFAULT_SPLIT_BYTES
) -> tuple[list[ByteRange], str | None]:
    """Split a file of format ``name`` into ranges of about ``split_bytes``, where it can be.

    Parameters
    ----------
    name : str
        The file's registered format.
    path : str or path-like
        The file.
    split_bytes : int
        Bytes per range; a file of at most this size is one range.

    Returns
    -------
    (list of ByteRange, str or None)
        The ranges, and why the file is one range when it is not split: ``"format"`` (its
        format is not split), ``"compressed"``, or ``"small"`` (no more than ``split_bytes``,
        or no line start to cut at).

    Raises
    ------
    ConfigError
        If ``split_bytes`` is less than 1 (a ``ValueError``).
    """
    where, size = str(path), _size(path, split_bytes=split_bytes)
    whole = [ByteRange(where, 0, size, 1, 0, 1)]
    if name not in SPLIT_FORMATS:
        why = "format" if size > split_bytes else "small"
        return whole, why
    if size <= split_bytes:
        return whole, "small"
    if not _is_plain(where):
        logger.info("%s: compressed, so read as one range (%d bytes)", where, size)
        return whole, "compressed"
    cuts = range(split_bytes, size, split_bytes)
    ranges = split_file(where, cuts, align_lines=_ALIGN_LINES, may_start=_may_start(name))
    if len(ranges) == 1:
        return ranges, "small"
    logger.info("%s: %d bytes read as %d ranges", where, size, len(ranges))
    return ranges, None


# --------------------------------------------------------------------------------------------
# reading a range through the line guard


def _range_blocks(raw: Any, end: int) -> Iterator[bytes]:
    while (left := end - raw.tell()) > 0:
        block = raw.read(min(_CHUNK, left))
        if not block:
            return
        yield block


def _range_pieces(
    rng: ByteRange, report: ReadReport, piece_bytes: int
) -> Iterator[tuple[bytes, int]]:
    """:func:`~gridtrace.logs._io.guarded_pieces` of one plain range, lines numbered in the file."""
    report.lines = rng.first_line - 1
    with Path(rng.path).open("rb") as raw:
        raw.seek(rng.start)
        guard = _LineGuard(report)
        blocks = _range_blocks(raw, rng.end)
        try:
            for block in blocks:
                guard.feed(block, 0, len(block))
                if guard.held >= piece_bytes:
                    pieces = list(_cut_pieces(guard.take(), piece_bytes))
                    yield from pieces[:-1]
                    guard.put_back(*pieces[-1])
            guard.finish()
        except _Stop:  # the rest of the file's first bytes, as the whole read keeps them
            if len(report.tail_raw) < KEPT_RAW_BYTES:
                more = report.tail_raw + raw.read(_CHUNK)
                report.tail_raw = more[:KEPT_RAW_BYTES]
        yield from _cut_pieces(guard.take(), piece_bytes)


def _range_chunks(rng: ByteRange, report: ReadReport, chunk_bytes: int) -> Iterator[Chunk]:
    pieces = _range_pieces(rng, report, chunk_bytes)
    held, lines = next(pieces, (b"", 0))
    first_line = rng.first_line
    index = 0
    for piece in pieces:
        yield Chunk(held, first_line, lines, index, final=False)
        first_line += lines
        index += 1
        held, lines = piece
    yield Chunk(held, first_line, lines, index, final=rng.final and report.tail_reason is None)


def _concat(tables: list[pa.Table]) -> pa.Table:
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def _with_findings(parsed: FileParse, report: ReadReport, site: str, name: str) -> FileParse:
    if report.clean:
        return parsed
    return _add_read_findings(parsed, report, site=site, source_format=name)


def _tokenize_lines(
    rng: ByteRange, fmt: LineFormat[Any], state: Any, site: str, chunk_bytes: int
) -> FileParse:
    report = ReadReport(rng.path, None)
    records: list[pa.Table] = []
    quarantine: list[pa.Table] = []
    lines = 0
    for chunk in _range_chunks(rng, report, chunk_bytes):
        rec, bad = fmt.tokenize(chunk, state, site=site, src_file=rng.path)
        if rec.num_rows + bad.num_rows != chunk.lines:
            msg = (
                f"{rng.path}: range {rng.index} chunk {chunk.index} gave {rec.num_rows} records "
                f"and {bad.num_rows} quarantined rows for its {chunk.lines} lines"
            )
            raise ChunkCountError(msg)
        records.append(rec)
        quarantine.append(bad)
        lines += chunk.lines
    parsed = FileParse(rng.path, _concat(records), _concat(quarantine), lines)
    return _with_findings(parsed, report, site, fmt.name)


def _shift_lines(table: pa.Table, by: int) -> pa.Table:
    if not by or not table.num_rows:
        return table
    i = table.schema.get_field_index("src_line")
    moved = pc.add(table.column(i), pa.scalar(by, pa.int64()))
    return table.set_column(i, table.schema.field(i), moved)


def _tokenize_torque(rng: ByteRange, flavour: str, site: str, chunk_bytes: int) -> FileParse:
    from gridtrace.logs._torque_fast import tokenize_torque_any

    report = ReadReport(rng.path, None)
    records: list[pa.Table] = []
    quarantine: list[pa.Table] = []
    lines = 0
    for chunk in _range_chunks(rng, report, chunk_bytes):
        part = tokenize_torque_any(chunk.data, src_file=rng.path, site=site, source_format=flavour)
        records.append(_shift_lines(part.records, chunk.first_line - 1))
        quarantine.append(_shift_lines(part.quarantine, chunk.first_line - 1))
        lines += part.lines_read
    parsed = FileParse(rng.path, _concat(records), _concat(quarantine), lines)
    return _with_findings(parsed, report, site, flavour)


# --------------------------------------------------------------------------------------------
# the whole-file state each range is given


def _torque_flavour(path: str) -> str:
    """``pbspro`` or ``torque``, from the file's first 4 MiB as read (as the whole read does)."""
    from gridtrace.logs._torque import _PBSPRO_MARKERS

    report = ReadReport(path, None)
    pieces = guarded_pieces(path, report, _TORQUE_SNIFF_BYTES)
    taken: list[bytes] = []
    size = 0
    for piece, _ in pieces:
        taken.append(piece)
        size += len(piece)
        if size >= _TORQUE_SNIFF_BYTES:
            break
    del pieces  # closes the file
    head = b"".join(taken)[:_TORQUE_SNIFF_BYTES]
    return "pbspro" if any(marker in head for marker in _PBSPRO_MARKERS) else "torque"


def _slurm_state(path: str, site: str) -> Any:
    """Return the state after line 1: the field order, as the whole read's first chunk sets it."""
    from gridtrace.logs._slurm import SLURM_STREAM

    report = ReadReport(path, None)
    pieces = guarded_pieces(path, report, 1)  # one line a piece
    line, count = next(pieces, (b"", 0))
    del pieces  # closes the file
    state = SLURM_STREAM.new_state()
    SLURM_STREAM.tokenize(Chunk(line, 1, count, 0, final=False), state, site=site, src_file=path)
    return state


def _sge_histogram(rng: ByteRange) -> tuple[dict[int, int], bool, bool]:
    """One range's share of :func:`~gridtrace.logs._sge.sge_width`.

    Its histogram of field counts, whether a line says SGE 6.0/6.1, whether the read stopped.
    """
    from gridtrace.logs._sge import _good_counts

    report = ReadReport(rng.path, None)  # findings: the tokenising pass reports them
    histogram: Counter[int] = Counter()
    old = False
    for chunk in _range_chunks(rng, report, DEFAULT_CHUNK_BYTES):
        counted, old_here = _good_counts(chunk.data)
        old = old or old_here
        if len(counted):
            values, freq = np.unique(counted, return_counts=True)
            histogram.update(dict(zip(values.tolist(), freq.tolist(), strict=True)))
    return dict(histogram), old, report.tail_reason is not None


def _sge_width(shares: Sequence[tuple[dict[int, int], bool, bool]]) -> int:
    from gridtrace.logs._sge import _FULL, _MIN_FIELDS

    histogram: Counter[int] = Counter()
    old = False
    for counts, old_here, stopped in shares:
        histogram.update(counts)
        old = old or old_here
        if stopped:  # the whole read goes no further
            break
    if histogram:
        return min(histogram, key=lambda count: (-histogram[count], count))
    return _MIN_FIELDS if old else _FULL


def range_seed(
    name: str,
    ranges: Sequence[ByteRange],
    site: str,
    run: Callable[[Callable[..., Any], list[tuple[Any, ...]]], list[Any]],
) -> Any:
    """Return what every range of one file needs of the whole file, for :func:`tokenize_range`.

    Parameters
    ----------
    name : str
        The file's format (one of :data:`SPLIT_FORMATS`).
    ranges : sequence of ByteRange
        The file's ranges (more than one).
    site : str
        Site name.
    run : callable
        ``run(function, calls) -> results``: runs a module-level function over argument tuples
        (on workers, or here); used by the formats that need a first pass (SGE).

    Returns
    -------
    object
        Picklable; the torque flavour, the Slurm state after line 1, the SGE field count.
    """
    path = ranges[0].path
    if name == "torque":
        return _torque_flavour(path)
    if name == "slurm":
        return _slurm_state(path, site)
    if name == "sge":
        shares = run(_sge_histogram, [(rng,) for rng in ranges])
        return _sge_width(shares)
    return None


def tokenize_range(
    name: str,
    rng: ByteRange,
    site: str,
    seed: Any = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> FileParse:
    """Tokenise one range of a file: its rows as the whole read gives them for its lines.

    Parameters
    ----------
    name : str
        The file's format (one of :data:`SPLIT_FORMATS`).
    rng : ByteRange
        The range.
    site : str
        Site name for every row.
    seed : object
        :func:`range_seed` of the file (ignored for the first range, which starts the file).
    chunk_bytes : int
        Bytes per chunk read.

    Returns
    -------
    FileParse
        The range's records and quarantine (the read's findings among them), numbered in the
        file; ``lines_read`` = records + quarantined.

    Raises
    ------
    ConfigError
        If the format is not split (a ``ValueError``).
    """
    first = rng.index == 0
    if name == "torque":
        flavour = seed if isinstance(seed, str) else _torque_flavour(rng.path)
        return _tokenize_torque(rng, flavour, site, chunk_bytes)
    if name == "swf":
        from gridtrace.logs._swf import SWF_STREAM

        return _tokenize_lines(rng, SWF_STREAM, SWF_STREAM.new_state(), site, chunk_bytes)
    if name == "gwf":
        from gridtrace.logs._gwf import GWF_STREAM

        return _tokenize_lines(rng, GWF_STREAM, GWF_STREAM.new_state(), site, chunk_bytes)
    if name == "slurm":
        from gridtrace.logs._slurm import SLURM_STREAM

        state = SLURM_STREAM.new_state() if first or seed is None else copy.deepcopy(seed)
        return _tokenize_lines(rng, SLURM_STREAM, state, site, chunk_bytes)
    if name == "sge":
        from gridtrace.logs._sge import _SgeState, _tokenize_sge_chunk

        width = seed if isinstance(seed, int) else _sge_width([_sge_histogram(rng)])
        fmt = LineFormat("sge", lambda: _SgeState(width), _tokenize_sge_chunk)
        return _tokenize_lines(rng, fmt, fmt.new_state(), site, chunk_bytes)
    msg = f"files of format {name!r} are not split by byte ranges (split: {SPLIT_FORMATS})"
    raise ConfigError(msg)


def _stopped(part: FileParse) -> bool:
    reasons = part.quarantine.column("reason")
    return bool(part.quarantine.num_rows) and bool(
        pc.any(pc.starts_with(reasons, REASON_STOPPED)).as_py()
    )


def kept_ranges(parts: Sequence[FileParse]) -> int:
    """How many of a file's ranges, in order, the whole read reaches (up to one that stopped)."""
    for i, part in enumerate(parts):
        if _stopped(part):
            return i + 1
    return len(parts)


def join_ranges(parts: Sequence[FileParse]) -> FileParse:
    """Concatenate the ranges of one file, in order, into the whole read's :class:`FileParse`.

    The ranges after one the garbage test stopped are dropped (the whole read stops there).
    """
    kept = list(parts[: kept_ranges(parts)])
    if len(kept) == 1:
        return kept[0]
    return FileParse(
        kept[0].src_file,
        pa.concat_tables([p.records for p in kept]),
        pa.concat_tables([p.quarantine for p in kept]),
        sum(p.lines_read for p in kept),
    )
