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
* **Whole-file state.** Only formats whose state at a range start can be known are split: each
  says whether and how in its :class:`~gridtrace.logs._stream.LineFormat` (its ``split``, a
  :class:`~gridtrace.logs._stream.RangeSplit`), and a range is read by the streaming core
  (:func:`~gridtrace.logs._stream.tokenize_stream` from the range's start) from the state the
  format declares for it (:data:`SPLIT_FORMATS`, computed from the declarations):

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
      count is handed to every range, as :func:`~gridtrace.logs._sge.sge_width` decides it
      (:func:`sge_share`, :func:`sge_width_of`).

  LSF (a record may go on over several lines) and HTCondor (a ``-json`` ad spans lines; several
  ads may share a line) are not split, nor a format registered by a plugin.
* **Assembly.** An SWF or GWF file's ranges are also assembled into jobs on the workers
  (:class:`RangeAssembly`, :data:`WORKER_ASSEMBLED`): one line is one job, and what its
  assembly needs of the whole file is reconciled by the driver between two passes of the
  workers, from each range's small :class:`RangeFacts`: the header (the comment lines before
  the file's first job), the job lines repeating a line of an earlier range (hashes of the
  fields, GWF's names by their text, then the candidates compared exactly), whether the status
  field holds exit codes (counted over the file), and the latest submit time before each range
  (``UNSORTED``); ranges whose jobs' submit times overlap are merged by their sort keys. The
  driver only joins the tables the workers wrote. TORQUE, Slurm and SGE spread a job over
  several records, in any range: their out-of-core path is the spill, by job-id partition.
* **Compression.** gzip, bzip2 and xz streams cannot be entered in the middle; a zstd file could
  be entered at a frame start, but frames are not indexed, so it is not split either. A
  compressed file is one range, as is a file of one range's size or less; :class:`RangeCounts`
  counts them, and parse summaries say so.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import itertools
import mmap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError
from gridtrace.logs._base import FileParse, tokenize_guarded
from gridtrace.logs._columnar import string_array
from gridtrace.logs._io import (
    GARBAGE_WINDOW_BYTES,
    GARBAGE_WINDOW_LINES,
    REASON_STOPPED,
    ReadReport,
    StrPath,
    detect_compression,
)
from gridtrace.logs._stream import (
    DEFAULT_CHUNK_BYTES,
    Chunk,
    LineFormat,
    RangeSplit,
    iter_chunks,
    tokenize_stream,
)

__all__ = [
    "DEFAULT_SPLIT_BYTES",
    "SPLIT_FORMATS",  # noqa: F822 - computed by the module's __getattr__
    "WORKER_ASSEMBLED",
    "AssembledFile",
    "ByteRange",
    "RangeAssembly",
    "RangeCounts",
    "RangeFacts",
    "assemble_range",
    "assembled_result",
    "join_ranges",
    "kept_ranges",
    "plan_ranges",
    "prepare_range",
    "range_facts",
    "range_seed",
    "rows_with",
    "sge_share",
    "sge_width_of",
    "sort_keys",
    "split_file",
    "split_formats",
    "tokenize_range",
]

logger = library_logger(__name__)

DEFAULT_SPLIT_BYTES = 64 << 20
"""Bytes per range by default (64 MiB): a plain file larger than this is split."""

_LINE_FORMATS = ("torque", "swf", "gwf", "slurm", "sge", "lsf", "htcondor")
"""The built-in formats: ``gridtrace.logs._<name>`` declares ``<NAME>_STREAM``, its
:class:`~gridtrace.logs._stream.LineFormat`."""

_NEWLINE = 10
_BLOCK = 16 << 20  # bytes of the memory map scanned for newlines at once
_JUNK = b" \t\r\x0b\x0c\x00"
_LOOK = 4096  # bytes of the line before a cut that decide whether a range may start there
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


def _line_format(name: str) -> LineFormat[Any] | None:
    """Return a built-in format's spec for the streaming core (None for a plugin's format)."""
    if name not in _LINE_FORMATS:
        return None
    module = importlib.import_module(f"gridtrace.logs._{name}")
    found: LineFormat[Any] = getattr(module, f"{name.upper()}_STREAM")
    return found


def _split_of(name: str) -> RangeSplit | None:
    """How the format's files are split, as it declares it (None: read whole)."""
    fmt = _line_format(name)
    return None if fmt is None else fmt.split


def _split_format(name: str) -> tuple[LineFormat[Any], RangeSplit]:
    """Return the format's spec and its split; raise ConfigError when it is not split."""
    fmt = _line_format(name)
    if fmt is None or fmt.split is None:
        msg = f"files of format {name!r} are not split by byte ranges (split: {split_formats()})"
        raise ConfigError(msg)
    return fmt, fmt.split


def split_formats() -> tuple[str, ...]:
    """Return the built-in formats whose files are split: those that declare how."""
    return tuple(name for name in _LINE_FORMATS if _split_of(name) is not None)


def __getattr__(name: str) -> Any:
    if name == "SPLIT_FORMATS":  # computed on demand: the readers are imported only when used
        return split_formats()
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


def _starts_with_one_of(chars: bytes, previous: bytes) -> bool:
    """Whether the line before a cut starts (past blanks) with one of ``chars``."""
    body = previous.lstrip(_JUNK)
    return bool(body) and body[0] in chars


def _may_start(name: str) -> Callable[[bytes], bool] | None:
    split = _split_of(name)
    if split is None or not split.after:
        return None
    return partial(_starts_with_one_of, split.after)


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
    name: str, path: StrPath, split_bytes: int = DEFAULT_SPLIT_BYTES, *, share_by: int = 1
) -> tuple[list[ByteRange], str | None]:
    """Split a file of format ``name`` into ranges of about ``split_bytes``, where it can be.

    The file is cut into equal ranges of at most ``split_bytes``, their number rounded up to a
    multiple of ``share_by``: with as many ranges per worker, no worker is left a range more
    than another (9 ranges on 2 workers kept one busy a range longer than the other).

    Parameters
    ----------
    name : str
        The file's registered format.
    path : str or path-like
        The file.
    split_bytes : int
        Bytes per range at most; a file of at most this size is one range.
    share_by : int, default 1
        The worker threads the ranges are shared among.

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
    if _split_of(name) is None:
        why = "format" if size > split_bytes else "small"
        return whole, why
    if size <= split_bytes:
        return whole, "small"
    if not _is_plain(where):
        logger.info("%s: compressed, so read as one range (%d bytes)", where, size)
        return whole, "compressed"
    pieces = -(-size // split_bytes)
    pieces = -(-pieces // max(1, share_by)) * max(1, share_by)
    cuts = [size * k // pieces for k in range(1, pieces)]
    ranges = split_file(where, cuts, align_lines=_ALIGN_LINES, may_start=_may_start(name))
    if len(ranges) == 1:
        return ranges, "small"
    logger.info("%s: %d bytes read as %d ranges", where, size, len(ranges))
    return ranges, None


# --------------------------------------------------------------------------------------------
# reading a range: the streaming core from the range's start, in the state its format declares


def _tokenize_at(
    path: StrPath, *, site: str, fmt: LineFormat[Any], rng: ByteRange, chunk_bytes: int
) -> FileParse:
    # tokenize_guarded calls it as it calls a tokenize_<fmt>_file
    return tokenize_stream(
        path,
        fmt,
        site=site,
        chunk_bytes=chunk_bytes,
        start=rng.start,
        end=rng.end,
        first_line=rng.first_line,
    )


def _range_share(name: str, rng: ByteRange) -> tuple[Any, bool]:
    """One range's share of its format's first pass, and whether the read stopped in it."""
    split = _split_format(name)[1]
    assert split.share is not None  # range_seed checked
    report = ReadReport(rng.path, None)  # findings: the tokenising pass reports them
    chunks = iter_chunks(rng.path, report, start=rng.start, end=rng.end, first_line=rng.first_line)
    share = split.share(chunks)
    for _ in chunks:  # the share need not read to the end; the stop must be known
        pass
    return share, report.tail_reason is not None


def _first_line_state(fmt: LineFormat[Any], path: str, site: str) -> Any:
    """Return the state after the file's first line, as the whole read's first chunk sets it."""
    report = ReadReport(path, None)  # findings: the tokenising pass reports them
    chunks = iter_chunks(path, report, chunk_bytes=1)  # one line a chunk
    first = next(chunks)
    del chunks  # closes the file
    state = fmt.new_state()
    line = Chunk(first.data, 1, first.lines, 0, final=False)
    fmt.tokenize(line, state, site=site, src_file=path)
    return state


def range_seed(
    name: str,
    ranges: Sequence[ByteRange],
    site: str,
    run: Callable[[Callable[..., Any], list[tuple[Any, ...]]], list[Any]],
) -> Any:
    """Return what every range of one file needs of the whole file, for :func:`tokenize_range`.

    What that is, the format declares (:class:`~gridtrace.logs._stream.RangeSplit`): read from
    the file's head, the state after its first line, or a first pass over every range.

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

    Raises
    ------
    ConfigError
        If files of format ``name`` are not split (a ``ValueError``).
    """
    fmt, split = _split_format(name)
    path = ranges[0].path
    if split.head is not None:
        return split.head(path)
    if split.first_line_state:
        return _first_line_state(fmt, path, site)
    if split.share is not None and split.combine is not None:
        shares: list[tuple[Any, bool]] = run(_range_share, [(name, rng) for rng in ranges])
        kept = next((i + 1 for i, (_, stopped) in enumerate(shares) if stopped), len(shares))
        return split.combine([share for share, _ in shares[:kept]])
    return None


def tokenize_range(
    name: str,
    rng: ByteRange,
    site: str,
    seed: Any = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> FileParse:
    """Tokenise one range of a file: its rows as the whole read gives them for its lines.

    The range goes through the streaming core (:func:`~gridtrace.logs._stream.tokenize_stream`
    from its start) and the line guard, in the state its format declares for a range start;
    the read's findings become quarantine rows as in the whole read.

    Parameters
    ----------
    name : str
        The file's format (one of :data:`SPLIT_FORMATS`).
    rng : ByteRange
        The range.
    site : str
        Site name for every row.
    seed : object
        :func:`range_seed` of the file; None (a file of one range): worked out from the file
        here.
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
    fmt, split = _split_format(name)
    if seed is None and (split.head is not None or split.combine is not None):
        seed = range_seed(name, [rng], site, _here)
    if split.start is not None:
        state = split.start(rng.path, seed)
    elif split.first_line_state and rng.index > 0 and seed is not None:
        state = copy.deepcopy(seed)
    else:
        state = fmt.new_state()
    ranged = dataclasses.replace(fmt, new_state=lambda: state)
    read = partial(_tokenize_at, fmt=ranged, rng=rng, chunk_bytes=chunk_bytes)
    return tokenize_guarded(read, rng.path, site=site, source_format=fmt.name)


def _here(function: Callable[..., Any], calls: list[tuple[Any, ...]]) -> list[Any]:
    return [function(*args) for args in calls]


# --------------------------------------------------------------------------------------------
# Grid Engine's first pass by range (its split, declared by gridtrace.logs._sge.SGE_STREAM)


def sge_share(chunks: Iterator[Chunk]) -> tuple[dict[int, int], bool]:
    """One range's share of :func:`~gridtrace.logs._sge.sge_width`.

    Its histogram of the field counts of good lines, and whether a line says SGE 6.0/6.1: what
    the Grid Engine reader counts (``gridtrace.logs._sge``), which holds the rule.
    """
    from gridtrace.logs._sge import _width_share

    return _width_share(chunks)


def sge_width_of(shares: list[tuple[dict[int, int], bool]]) -> int:
    """Return a file's usual field count from its ranges' shares, as ``sge_width`` decides it."""
    from gridtrace.logs._sge import _width_of_shares

    return _width_of_shares(shares)


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


# --------------------------------------------------------------------------------------------
# assembling a file's jobs by ranges, on the workers (SWF, GWF)

WORKER_ASSEMBLED = ("swf", "gwf")
"""Formats whose split files are assembled into jobs range by range, on the workers.

One SWF or GWF line is one job; what assembling it needs of the rest of the file is small and
is reconciled by the driver between two passes of the workers (:class:`RangeAssembly`). GWF's
repeat test compares the name fields as text: within a range by the range's dictionary codes
(as the whole file does by its own), across ranges by a hash of the text that every process
computes alike, the candidates then compared exactly. TORQUE, Slurm and SGE spread a job over
several records (any range may hold a job's other records): they are assembled in the driver,
or out of core by job-id partition (:mod:`gridtrace.logs._spill`).
"""

_F64 = np.ndarray[Any, np.dtype[np.float64]]
_I64 = np.ndarray[Any, np.dtype[np.int64]]
_U64 = np.ndarray[Any, np.dtype[np.uint64]]
_BOOL = np.ndarray[Any, np.dtype[np.bool_]]


@dataclass
class _Prepared:
    """One range tokenised, its job rows' fields read: kept on its worker, never gathered."""

    part: FileParse
    job_records: pa.Table
    positions: _I64
    fields: _F64
    duplicate: _BOOL  # job rows repeating an earlier row of the range
    name: str = "swf"
    tokens: Any = None  # GWF: the job rows' tokens (29 a row, in field order)

    def __sizeof__(self) -> int:  # dask's size of it: the tasks using it stay on its worker
        return int(self.part.records.nbytes + self.part.quarantine.nbytes + self.fields.nbytes)


@dataclass(frozen=True)
class RangeFacts:
    """What the driver needs of one range to reconcile its file (small: sent back).

    Attributes
    ----------
    stopped : bool
        The garbage test stopped the read in this range.
    comments : list
        Its comment lines before its first job row (all of them, without one), classified: a
        file's header is those of its ranges up to its first job.
    jobs, repeats : int
        Job rows of the range, and those repeating an earlier row of the range.
    digests : numpy.ndarray of uint64
        The row hashes of its job rows that repeat no earlier row of the range, sorted.
    max_submit : float
        The largest submit field of its job rows (NaN: none known).
    known, standard, partial : int
        Of those rows, the statuses known, in SWF's set (0, 1, 5), and partial-execution codes
        (2, 3, 4).
    """

    stopped: bool
    comments: list[tuple[str, str | None, str]]
    jobs: int
    repeats: int
    digests: _U64
    max_submit: float
    known: int
    standard: int
    partial: int


@dataclass(frozen=True)
class _RangePlan:
    """What a range is assembled with: its file's decisions, reconciled by the driver."""

    site: str
    src_file: str
    mode: str  # "swf" or "exit_code": the file's status reading, decided over the whole file
    header: dict[str, Any]
    more_duplicates: _BOOL | None  # job rows repeating a row of an earlier range
    late_after: float  # the latest submit before the range
    any_duplicates: bool  # the file has a duplicate somewhere: every range rebuilds its flags
    folder: str | None  # where the tables are written (None: sent back)
    task: int


@dataclass(frozen=True)
class _AssembledRange:
    """One range's tables (or the files holding them), and what its assembly found."""

    tables: tuple[Any, Any, Any]  # records, quarantine, jobs; or (path, rows, uniform) each
    late: int
    duplicates: int
    first_key: float  # the smallest and largest sort key of its jobs (inf: submit unknown)
    last_key: float
    sites: frozenset[str] = frozenset()  # GWF: the OrigSiteIDs of its jobs


@dataclass(frozen=True)
class AssembledFile(FileParse):
    """A file tokenised and assembled by ranges: its tables and what assembling it found."""

    jobs: pa.Table = dataclasses.field(default=None)  # type: ignore[assignment]
    header: dict[str, Any] = dataclasses.field(default_factory=dict)
    late: int = 0
    duplicates: int = 0
    as_exit: bool = False
    odd_statuses: tuple[int, int] = (0, 0)  # statuses outside SWF's set, and known
    sites: frozenset[str] = frozenset()  # GWF: the OrigSiteIDs of its jobs


def prepare_range(
    name: str, path: str, rng: ByteRange | None, site: str, seed: Any = None
) -> _Prepared:
    """Tokenise a range (None: the whole file, any compression) and read its job rows' fields."""
    from gridtrace.logs import _swf

    if rng is None:
        from gridtrace.logs._registry import _tokenize

        part = _tokenize(name, path, site)
    else:
        part = tokenize_range(name, rng, site, seed)
    if name == "gwf":
        from gridtrace.logs import _gwf

        job_records, positions, tokens, f = _gwf._gwf_rows(part.records)
        repeated = _gwf._repeated_rows(f, tokens)
        return _Prepared(part, job_records, positions, f, repeated, name, tokens)
    job_records, positions = _swf._job_rows(part.records)
    fields = _swf._fields_of(job_records)
    return _Prepared(part, job_records, positions, fields, _swf._duplicate_rows(fields))


def _columns(name: str) -> tuple[int, int]:
    """Return the columns of the submit and status fields in a format's job rows."""
    if name == "gwf":
        from gridtrace.logs import _gwf

        return _gwf._COL["SubmitTime"], _gwf._COL["Status"]
    from gridtrace.logs import _swf

    return _swf._SUBMIT, _swf._STATUS


def range_facts(prepared: _Prepared) -> RangeFacts:
    """Return what the driver needs of a prepared range (see :class:`RangeFacts`)."""
    from gridtrace.logs import _swf

    f, keep = prepared.fields, ~prepared.duplicate
    records = prepared.part.records
    if len(prepared.positions):
        records = records.slice(0, int(prepared.positions[0]))
    comment: Any = pc.equal(records.column("record_type"), pa.scalar("H"))
    attrs = records.column("attrs").filter(comment)
    submit_at, status_at = _columns(prepared.name)
    status = f[keep, status_at]
    submit = f[:, submit_at]
    return RangeFacts(
        stopped=_stopped(prepared.part),
        comments=_swf._entries_of_attrs(attrs.to_pylist()),
        jobs=len(f),
        repeats=int(prepared.duplicate.sum()),
        digests=np.sort(_row_hashes(prepared)[keep]),
        max_submit=float(np.nanmax(submit)) if np.isfinite(submit).any() else float("nan"),
        known=int((~np.isnan(status)).sum()),
        standard=int(np.isin(status, [0.0, 1.0, 5.0]).sum()),
        partial=int(np.isin(status, [2.0, 3.0, 4.0]).sum()),
    )


def _digests(values: _F64) -> _U64:
    """One 64-bit hash of each row's bits, mixed so that rows differing in any bit differ.

    (A multiply alone carries a word's bits only upwards: floats differing in their high bits
    would often share a hash.)
    """
    bits = values.view(np.uint64)
    digest = np.full(len(values), 0x9E3779B97F4A7C15, dtype=np.uint64)
    for k in range(values.shape[1]):
        digest ^= bits[:, k]
        digest *= np.uint64(0xBF58476D1CE4E5B9)
        digest ^= digest >> np.uint64(31)
    return digest


def _text_hashes(values: Any) -> _U64:
    """Return a 64-bit hash (FNV-1a) of each string of an Arrow array, alike in every process.

    Vectorised over the array's bytes: one pass per character position, over the strings
    that long.
    """
    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    n = len(arr)
    wide = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    buffers: list[Any] = arr.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64 if wide else np.int32)
    offsets = offsets[arr.offset : arr.offset + n + 1].astype(np.int64)
    data = (
        np.frombuffer(buffers[2], dtype=np.uint8)
        if buffers[2] is not None
        else np.zeros(1, np.uint8)
    )
    starts, lengths = offsets[:-1], np.diff(offsets)
    digest = np.full(n, 0xCBF29CE484222325, dtype=np.uint64)
    live = np.flatnonzero(lengths > 0)
    j = 0
    while len(live):
        digest[live] ^= data[starts[live] + j].astype(np.uint64)
        digest[live] *= np.uint64(0x100000001B3)
        j += 1
        live = live[lengths[live] > j]
    digest ^= lengths.astype(np.uint64)
    return digest


_GWF_HASHED = ("JobID", "UserID")
"""GWF's name fields that go into a row's hash (the others are left to the exact comparison)."""


def _gwf_names() -> list[int]:
    """Return the columns of GWF's name fields (compared as text)."""
    from gridtrace.logs import _gwf

    return [int(k) for k in np.flatnonzero(~_gwf._NUMERIC)]


def _row_hashes(prepared: _Prepared) -> _U64:
    """One 64-bit hash of each job row: SWF's fields' bits; GWF's also its JobID and UserID.

    Equal rows hash alike; rows sharing a hash are candidates, compared exactly
    (:func:`_row_keys`), so a name left out of the hash only makes more candidates.
    """
    if prepared.name != "gwf" or not len(prepared.fields):
        return _digests(prepared.fields)
    from gridtrace.logs import _gwf

    n = len(prepared.fields)
    digest = _digests(prepared.fields[:, _gwf._NUMERIC])  # the names' columns are NaN
    for name in _GWF_HASHED:
        digest ^= _text_hashes(_gwf._column(prepared.tokens, n, name))
        digest *= np.uint64(0x94D049BB133111EB)
        digest ^= digest >> np.uint64(29)
    return digest


def _row_keys(prepared: _Prepared, rows: _I64) -> list[bytes]:
    """Return each row's exact value: its fields' bits (and GWF's names' text)."""
    keys = [prepared.fields[i].tobytes() for i in rows.tolist()]
    if prepared.name != "gwf" or not len(rows):
        return keys
    from gridtrace.logs import _gwf

    names = _gwf_names()
    at = (rows[:, None] * _gwf._N + np.array(names)[None, :]).ravel()
    texts = prepared.tokens.take(pa.array(at)).to_pylist()
    width = len(names)
    for j in range(len(keys)):
        words = texts[j * width : (j + 1) * width]
        keys[j] += b"".join(len(w).to_bytes(8, "little") + w for w in (t.encode() for t in words))
    return keys


def rows_with(prepared: _Prepared, digests: _U64) -> tuple[_I64, list[bytes]]:
    """Return the job rows (repeating no earlier row of the range) hashed to one of ``digests``.

    With each row's exact value (:func:`_row_keys`): its fields' bits first.
    """
    hits = np.isin(_row_hashes(prepared), digests) & ~prepared.duplicate
    rows = np.flatnonzero(hits)
    return rows, _row_keys(prepared, rows)


def _kept_keys(prepared: _Prepared, plan: _RangePlan) -> _F64:
    """Return the sort keys of the range's jobs (submit, unknown last), in the order assembled."""
    from gridtrace.logs import _swf

    gone = (
        prepared.duplicate
        if plan.more_duplicates is None
        else (prepared.duplicate | plan.more_duplicates)
    )
    origin = None if prepared.name == "gwf" else _swf._origin(plan.header)
    submit_at = _columns(prepared.name)[0]
    submit = prepared.fields[~gone, submit_at] + (0 if origin is None else origin)
    return np.sort(np.where(np.isnan(submit), np.inf, submit), kind="stable")


def assemble_range(prepared: _Prepared, plan: _RangePlan) -> _AssembledRange:
    """Assemble a prepared range's jobs as its whole file's assembly gives them."""
    from gridtrace.logs import _swf

    found = (
        _gwf_jobs(prepared, plan)
        if prepared.name == "gwf"
        else _swf._jobs_of_file(
            prepared.part.records,
            plan.site,
            plan.src_file,
            plan.mode,  # type: ignore[arg-type]
            rows=(prepared.job_records, prepared.positions, prepared.fields),
            header=plan.header,
            more_duplicates=plan.more_duplicates,
            late_after=plan.late_after,
            duplicate=prepared.duplicate,  # worked out by prepare_range: not again
        )
    )
    records = prepared.part.records
    if len(found.duplicates) or (plan.any_duplicates and records.num_rows):
        # the whole file's flags column is rebuilt when any of its lines repeats another
        mask = np.zeros(records.num_rows, dtype=bool)
        mask[found.duplicates] = True
        index = records.schema.get_field_index("flags")
        flags = _swf._append_flag(records.column("flags"), mask, "DUPLICATE")
        records = records.set_column(index, records.schema.field(index), flags)
    keys = _kept_keys(prepared, plan)
    tables: tuple[Any, Any, Any] = (records, prepared.part.quarantine, found.table)
    if plan.folder is not None:
        tables = _write_tables(plan.folder, plan.task, tables)
    return _AssembledRange(
        tables=tables,
        late=found.late,
        duplicates=len(found.duplicates),
        first_key=float(keys[0]) if len(keys) else np.nan,
        last_key=float(keys[-1]) if len(keys) else np.nan,
        sites=found.sites if isinstance(found, _GwfJobs) else frozenset(),
    )


@dataclass(frozen=True)
class _GwfJobs:
    """A GWF range's jobs, as :func:`assemble_range` reads an SWF range's."""

    table: pa.Table
    late: int
    duplicates: _I64  # positions in the range's records of the job lines repeating others
    sites: frozenset[str]


def _gwf_jobs(prepared: _Prepared, plan: _RangePlan) -> Any:
    from gridtrace.logs import _gwf

    duplicate = prepared.duplicate
    if plan.more_duplicates is not None:
        duplicate = duplicate | plan.more_duplicates
    with np.errstate(over="ignore", invalid="ignore"):  # inf and NaN are nulled, flagged
        table, late, sites, repeated, _ = _gwf._jobs_of_file(
            prepared.part.records,
            plan.site,
            plan.src_file,
            plan.mode,  # type: ignore[arg-type]
            rows=(prepared.job_records, prepared.positions, prepared.tokens, prepared.fields),
            duplicate=duplicate,
            late_after=plan.late_after,
        )
    return _GwfJobs(table, late, repeated, frozenset(sites))


def sort_keys(prepared: _Prepared, plan: _RangePlan) -> _F64:
    """Return the range's jobs' sort keys, in the order assembled: to merge unsorted ranges."""
    return _kept_keys(prepared, plan)


_Uniform = tuple[tuple[int, Any, Any], ...]
"""Columns of a handed-over table left out of its file: (position, field, what puts it back).

What puts it back is the one value (an Arrow scalar) of a one-value column, or the
:class:`_KeyRow` of a map column whose file holds its values only."""

_SAMPLES = 8  # values a column is checked at before it is compared whole
_BLOCK_ROWS = 4096  # rows of a map column's keys compared at once


@dataclass(frozen=True)
class _KeyRow:
    """A map column handed over as its values only: every row holds these keys, in this order.

    An SWF or GWF job line's ``attrs`` map its fields' names to their tokens, the names the same
    in every row: about two thirds of a range's records. The file holds the values as a
    fixed-size list a row; the keys are put back from one array of the names repeated, shared
    by every range (:class:`_Repeats`).
    """

    keys: tuple[str, ...]


def _key_row(chunk: Any) -> _KeyRow | None:
    """Return the keys every row of a map array holds, when they are one row's keys repeated.

    None when a row is null, or holds other keys, or as many in another order; the keys are
    compared whole (every offset and byte), block by block of rows.
    """
    n = len(chunk)
    if not n or chunk.null_count or not pa.types.is_string(chunk.type.key_type):
        return None
    offsets = np.asarray(chunk.offsets)  # the rows' entries, into the unsliced children
    width = int(offsets[1] - offsets[0])
    if width < 1 or bool((np.diff(offsets) != width).any()):
        return None
    keys = chunk.keys.slice(int(offsets[0]), n * width)
    buffers = keys.buffers()
    ends = np.frombuffer(buffers[1], np.int32, n * width + 1, keys.offset * 4)
    start = int(ends[0])
    row_ends = ends[: width + 1] - start
    span = int(row_ends[-1])
    if not span or int(ends[-1]) - start != n * span:  # (keys all empty: kept whole)
        return None
    data = np.frombuffer(buffers[2], np.uint8, n * span, start)
    first = data[:span]
    rows = min(n, _BLOCK_ROWS)
    expected = (np.arange(rows, dtype=np.int32)[:, None] * span + row_ends[:-1]).ravel() + start
    for at in range(0, n, rows):  # blocks small enough to stay in the cache
        m = min(rows, n - at)
        if not np.array_equal(
            ends[at * width : (at + m) * width] - at * span, expected[: m * width]
        ):
            return None
        if not bool((data[at * span : (at + m) * span].reshape(m, span) == first).all()):
            return None
    return _KeyRow(tuple(keys.slice(0, width).to_pylist()))


def _key_rows(column: Any) -> _KeyRow | None:
    """Return the :class:`_KeyRow` of every chunk of a map column, when they all have one."""
    rows = {_key_row(chunk) for chunk in column.chunks if len(chunk)}
    return rows.pop() if len(rows) == 1 and None not in rows else None


def _values_of(column: Any, width: int) -> Any:
    """Return a map column's values, a fixed-size list of ``width`` a row (no copy)."""
    chunks: list[Any] = []
    for chunk in column.chunks:
        first = int(np.asarray(chunk.offsets[:1])[0]) if len(chunk) else 0
        values = chunk.items.slice(first, len(chunk) * width)
        chunks.append(pa.FixedSizeListArray.from_arrays(values, width))
    kind: Any = pa.list_(column.type.item_type, width)
    return pa.chunked_array(chunks, kind)


def _is_text(kind: Any) -> bool:
    return bool(
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
    )


def _one_list(column: Any, value: Any) -> bool:
    """Whether every row of a list column (no null row) is ``value``, a list of at most one item.

    A range's job ``flags`` are often one list in every row (an SWF file of relative times:
    ``["TIME_RELATIVE"]``): each row's length is compared, then the items, flattened.
    """
    lengths: Any = pc.min_max(pc.list_value_length(column)).as_py()  # {"min": .., "max": ..}
    if lengths["min"] != lengths["max"] or lengths["min"] != len(value):
        return False
    if not len(value):
        return True
    items = pc.list_flatten(column)
    item = value.values[0]
    if not item.is_valid or items.null_count:
        return False
    return bool(pc.all(pc.equal(items, item)).as_py())


def _uniform_columns(table: pa.Table) -> _Uniform:
    """Return the columns of a table that hold one value in every row (null included).

    A range's ``site``, ``source_format`` and ``src_file`` are one value, and many columns are
    all null (a format's fields it has not): about half of an SWF range's job table. Only
    all-null columns, string or binary columns without nulls and list columns without null
    rows whose first row holds at most one string are looked at (a list of several items is
    kept: comparing it costs more than writing it); a column is compared whole only when a few
    values spread over it agree.
    """
    n = table.num_rows
    found: list[tuple[int, Any, Any]] = []
    if n == 0:
        return ()
    probes = sorted({n * k // _SAMPLES for k in range(_SAMPLES)} | {n - 1})
    for i, field in enumerate(table.schema):
        column = table.column(i)
        if column.null_count == n:
            found.append((i, field, pa.scalar(None, field.type)))
            continue
        kind = field.type
        listed = pa.types.is_list(kind) and _is_text(kind.value_type)
        if column.null_count or not (_is_text(kind) or listed):
            continue
        value = column[0]
        if listed and len(value) > 1:
            continue
        if any(column[k] != value for k in probes):
            continue
        if _one_list(column, value) if listed else pc.all(pc.equal(column, value)).as_py():
            found.append((i, field, value))
    return tuple(found)


def _slimmed(
    table: pa.Table, key_rows: dict[int, _KeyRow | None] | None = None
) -> tuple[pa.Table, _Uniform]:
    """Return the table as a file holds it, and what :meth:`_Repeats.restored` puts back.

    Its one-value columns are emptied (null type: no buffer), its map columns whose rows all
    hold the same keys are reduced to their values (see :class:`_KeyRow`; ``key_rows``: those
    of its map columns, when known).
    """
    uniform = list(_uniform_columns(table))
    empty = pa.nulls(table.num_rows)
    for i, field, _ in uniform:
        table = table.set_column(i, pa.field(field.name, pa.null()), empty)
    left = {i for i, _, _ in uniform}
    for i, field in enumerate(table.schema):
        if i in left or not pa.types.is_map(field.type) or not table.num_rows:
            continue
        row = _key_rows(table.column(i)) if key_rows is None else key_rows.get(i)
        if row is None:
            continue
        values = _values_of(table.column(i), len(row.keys))
        table = table.set_column(i, pa.field(field.name, values.type), values)
        uniform.append((i, field, row))
    return table, tuple(uniform)


_KEYED_ROWS = 8192
"""Rows a run of chunks of the same keys needs to be written without them, in a file of its own
(shorter runs, between comment lines, go with their neighbours, whole: a file costs too)."""


def _runs(column: Any) -> list[tuple[int, _KeyRow | None]]:
    """Return where each run of a map column's chunks of one :class:`_KeyRow` starts, and it.

    A run shorter than :data:`_KEYED_ROWS` rows counts as None (kept whole), merged with its
    neighbours kept whole.
    """
    raw: list[list[Any]] = []  # [start, rows, key row]
    at = 0
    for chunk in column.chunks:
        if not len(chunk):
            continue
        row = _key_row(chunk)
        if raw and raw[-1][2] == row:
            raw[-1][1] += len(chunk)
        else:
            raw.append([at, len(chunk), row])
        at += len(chunk)
    runs: list[tuple[int, _KeyRow | None]] = []
    for start, rows, row in raw:
        kept = row if rows >= _KEYED_ROWS else None
        if not runs or runs[-1][1] != kept:
            runs.append((start, kept))
    return runs


def _pieces(table: pa.Table) -> list[tuple[pa.Table, dict[int, _KeyRow | None]]]:
    """Cut a table where the :class:`_KeyRow` of a map column's chunks changes.

    A range's records are job lines, but for a few header or odd lines: the chunks holding them
    are written whole, the others without their keys (see :func:`_runs`). Each piece comes with
    the key row of each of its map columns (None: written whole).
    """
    cuts = {0, table.num_rows}
    found: dict[int, list[tuple[int, _KeyRow | None]]] = {}
    for i, field in enumerate(table.schema):
        if pa.types.is_map(field.type):
            found[i] = _runs(table.column(i))
            cuts.update(at for at, _ in found[i])
    pieces = []
    for a, b in itertools.pairwise(sorted(cuts)):
        rows = {i: next(row for at, row in reversed(runs) if at <= a) for i, runs in found.items()}
        pieces.append((table.slice(a, b - a), rows))
    return pieces or [(table, {})]


def _repeated(value: Any, rows: int) -> Any:
    """Return ``rows`` rows of ``value`` (an Arrow scalar).

    A list is built from its offsets and its items repeated: ``pa.repeat`` of a list scalar
    peaks at some 60 MB of resident memory for 200,000 rows of one short list (4 MB made).
    """
    if not (pa.types.is_list(value.type) and value.is_valid):
        return pa.repeat(value, rows)
    width = len(value)
    if width == 1:
        items = pa.repeat(value.values[0], rows)
    elif width:
        items = pa.concat_arrays([value.values] * rows)
    else:
        items = pa.array([], value.type.value_type)
    offsets = pa.array(np.arange(rows + 1, dtype=np.int32) * np.int32(width))
    return pa.ListArray.from_arrays(offsets, items, type=value.type)


class _Repeats:
    """One-value columns made once for a parse, at the largest size asked: sliced to each table.

    The columns :func:`_slimmed` left out of the files are put back from here (their buffers
    shared by every range), so the driver builds each value's column once per file, not once
    per range; so too the keys of a map column handed over as its values (:class:`_KeyRow`).
    """

    def __init__(self, rows: int = 0) -> None:
        self.rows = rows
        self._made: dict[tuple[str, Any], Any] = {}

    def column(self, value: Any, rows: int) -> Any:
        """Return ``rows`` rows of ``value``."""
        key = (str(value.type), repr(value.as_py()))  # (a list's value is a list: unhashable)
        made = self._made.get(key)
        if made is None or len(made) < rows:
            made = _repeated(value, max(rows, self.rows))
            self._made[key] = made
        return made.slice(0, rows)

    def _keys(self, row: _KeyRow, rows: int) -> tuple[Any, Any]:
        """Return ``rows`` rows of the keys (one string array) and their maps' offsets."""
        key = ("keys", row.keys)
        made = self._made.get(key)
        if made is None or len(made[1]) <= rows:
            size = max(rows, 2 * len(made[1]) if made is not None else 0)
            names = [name.encode() for name in row.keys]
            width = len(names)
            ends = np.cumsum([0] + [len(name) for name in names], dtype=np.int64)
            starts = np.arange(size, dtype=np.int64)[:, None] * int(ends[-1]) + ends[:-1]
            string_ends = np.append(starts.ravel(), size * int(ends[-1])).astype(np.int32)
            data = np.tile(np.frombuffer(b"".join(names), np.uint8), size)
            keys = string_array(string_ends, data)
            steps = pa.array(np.arange(0, (size + 1) * width, width, dtype=np.int32))
            made = (keys, steps)
            self._made[key] = made
        width = len(row.keys)
        return made[0].slice(0, rows * width), made[1].slice(0, rows + 1)

    def _map(self, values: Any, field: Any, row: _KeyRow) -> Any:
        """Put a map column's keys back beside its values (see :class:`_KeyRow`)."""
        chunks = []
        for chunk in values.chunks:
            keys, steps = self._keys(row, len(chunk))
            chunks.append(pa.MapArray.from_arrays(steps, keys, chunk.flatten(), type=field.type))
        return pa.chunked_array(chunks, field.type)

    def restored(self, table: pa.Table, uniform: _Uniform) -> pa.Table:
        """Put a table's left-out columns back (see :func:`_slimmed`)."""
        for i, field, value in uniform:
            if isinstance(value, _KeyRow):
                column = self._map(table.column(i), field, value)
            else:
                column = self.column(value, table.num_rows)
            table = table.set_column(i, field, column)
        return table


_Written = tuple[tuple[str, int, _Uniform], ...]
"""A table handed over in files: each piece's file, rows, and left-out columns."""


def _write_tables(
    folder: str, task: int, tables: tuple[Any, Any, Any]
) -> tuple[_Written, _Written, _Written]:
    """Write a range's tables to ``folder``, slimmed (see :func:`_slimmed`), a file a piece."""
    from gridtrace.logs._registry import _write_table

    where = Path(folder)
    out = []
    for kind, table in zip(("records", "quarantine", "jobs"), tables, strict=True):
        written = []
        for k, (piece, key_rows) in enumerate(_pieces(table)):
            name = f"task-{task:06d}.{kind}" + (f".{k}" if k else "")
            path = where / f"{name}.arrow"
            slim, uniform = _slimmed(piece, key_rows)
            _write_table(path, slim)
            written.append((str(path), piece.num_rows, uniform))
        out.append(tuple(written))
    return out[0], out[1], out[2]


def _read_tables(
    tables: tuple[Any, Any, Any], repeats: _Repeats | None = None
) -> tuple[pa.Table, pa.Table, pa.Table]:
    """Return a range's tables, sent back or mapped from the files :func:`_write_tables` wrote."""
    from gridtrace.logs._registry import _map_table

    if isinstance(tables[0], pa.Table):
        return tables[0], tables[1], tables[2]
    repeats = _Repeats() if repeats is None else repeats
    records, quarantine, jobs = (
        _joined([repeats.restored(_map_table(path, rows), uniform) for path, rows, uniform in kind])
        for kind in tables
    )
    return records, quarantine, jobs


def _joined(pieces: list[pa.Table]) -> pa.Table:
    return pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces)


class RangeAssembly:
    """Tokenise and assemble the files of one format by ranges on workers; join them here.

    The workers tokenise each range and read its job rows' fields (:func:`prepare_range`: kept
    on the worker) and send back its :class:`RangeFacts`. Here, each file's decisions are
    reconciled from its ranges' facts: its header (from its first range), its job lines that
    repeat a line of an earlier range (hash candidates, then compared exactly), whether its
    status field holds exit codes (counted over the whole file), the latest submit before each
    range (the ``UNSORTED`` flag), and the ranges the read reaches (up to one the garbage test
    stopped). Each range is then assembled on its worker with them (:func:`assemble_range`),
    its tables handed over in files of ``folder`` (a column of one value in every row left
    out, put back here from one array per value; a map column whose rows hold the same keys,
    a job line's field names, handed over as its values, the keys put back here from one array
    of them repeated); joined here in order, they are the whole
    file's assembly: the jobs of ranges whose submit times overlap are merged by their sort
    keys, as the whole assembly sorts them.

    Parameters
    ----------
    name : str
        The format (one of :data:`WORKER_ASSEMBLED`).
    files : sequence of (str, list of ByteRange or None)
        Each file and its ranges (None: read whole, as one range).
    site : str
        Site name.
    seeds : sequence
        :func:`range_seed` of each split file (None for the others).
    submit : callable
        ``submit(function, *args) -> future``; arguments may be futures (the task should run
        where the first one is: it holds a range's tables).
    gather : callable
        ``gather(futures) -> results``.
    folder : str, optional
        Where the workers write the ranges' tables (None: they are sent back).
    first_task : int
        Numbers the files written in ``folder`` from here.
    """

    def __init__(
        self,
        name: str,
        files: Sequence[tuple[str, list[ByteRange] | None]],
        site: str,
        seeds: Sequence[Any],
        submit: Callable[..., Any],
        gather: Callable[[list[Any]], list[Any]],
        folder: str | None = None,
        first_task: int = 0,
    ) -> None:
        self.name, self.site, self.folder = name, site, folder
        self._submit, self._gather = submit, gather
        self._task = first_task
        self.ranges_assembled = 0  # ranges assembled on the workers, once finished
        self._files = [path for path, _ in files]
        self._facts: list[list[Any]] = []
        calls: list[tuple[int, int, int, tuple[Any, ...]]] = []  # bytes, file, range, call
        for f, ((path, ranges), seed) in enumerate(zip(files, seeds, strict=True)):
            if ranges is None:
                calls.append((Path(path).stat().st_size, f, 0, (path, None, site)))
            else:
                calls.extend(
                    (r.end - r.start, f, k, (path, r, site, seed)) for k, r in enumerate(ranges)
                )
        self._prepared: list[list[Any]] = [[None] * (1 if r is None else len(r)) for _, r in files]
        # the largest ranges first: the workers take the next one as they finish, the small
        # ones last even out their ends (each range's assembly then stays on its worker)
        calls.sort(key=lambda c: -c[0])
        self._order = [(f, k) for _, f, k, _ in calls]
        for _, f, k, args in calls:
            self._prepared[f][k] = submit(prepare_range, name, *args)

    def finish(self) -> list[AssembledFile]:
        """Reconcile, assemble on the workers, and join: each file's :class:`AssembledFile`."""
        self._facts = [[None] * len(prepared) for prepared in self._prepared]
        for f, k in self._order:  # as submitted: the order they are likely to finish in
            self._facts[f][k] = self._submit(range_facts, self._prepared[f][k])
        return self._finish()

    def _finish(self) -> list[AssembledFile]:
        facts_of = self._gather([f for facts in self._facts for f in facts])
        out: list[AssembledFile] = []
        at = 0
        plans: list[list[_RangePlan]] = []
        decided: list[tuple[int, int, bool]] = []
        for path, prepared in zip(self._files, self._prepared, strict=True):
            facts: list[RangeFacts] = facts_of[at : at + len(prepared)]
            at += len(prepared)
            kept = next((i + 1 for i, f in enumerate(facts) if f.stopped), len(facts))
            del prepared[kept:]  # the whole read never reaches them
            plan, odd = self._plan(path, prepared, facts[:kept])
            plans.append(plan)
            decided.append(odd)
        done = [
            self._submit(assemble_range, p, one)
            for prepared, plan in zip(self._prepared, plans, strict=True)
            for p, one in zip(prepared, plan, strict=True)
        ]
        results: list[_AssembledRange] = self._gather(done)
        self.ranges_assembled = len(results)
        at = 0
        for path, prepared, plan, (n_odd, n_known, as_exit) in zip(
            self._files, self._prepared, plans, decided, strict=True
        ):
            mine = results[at : at + len(prepared)]
            at += len(prepared)
            repeats = _Repeats(max((_rows(r.tables) for r in mine), default=0))
            tables = [_read_tables(r.tables, repeats) for r in mine]
            jobs = pa.concat_tables([t[2] for t in tables])
            if not _in_order(mine):
                keys = self._gather(
                    [self._submit(sort_keys, p, q) for p, q in zip(prepared, plan, strict=True)]
                )
                lines = jobs.column("src_line").to_numpy()
                jobs = jobs.take(np.lexsort((lines, np.concatenate(keys))))
            records = [t[0] for t in tables]
            quarantine = [t[1] for t in tables]
            out.append(
                AssembledFile(
                    path,
                    pa.concat_tables(records),
                    pa.concat_tables(quarantine),
                    sum(r.num_rows for r in records) + sum(q.num_rows for q in quarantine),
                    jobs=jobs,
                    header=plan[0].header,
                    late=sum(r.late for r in mine),
                    duplicates=sum(r.duplicates for r in mine),
                    as_exit=as_exit,
                    odd_statuses=(n_odd, n_known),
                    sites=frozenset().union(*(r.sites for r in mine)),
                )
            )
        return out

    def _plan(
        self, path: str, prepared: list[Any], facts: list[RangeFacts]
    ) -> tuple[list[_RangePlan], tuple[int, int, bool]]:
        """Reconcile one file's ranges: the plan of each, and its status counts and reading."""
        from gridtrace.logs import _swf

        status_at = _columns(self.name)[1]
        at_end = 8 * (status_at + 1)  # a row's exact value starts with its fields' bits
        first_jobs = next((k for k, f in enumerate(facts) if f.jobs), len(facts) - 1)
        header = _swf._fold_header([e for f in facts[: first_jobs + 1] for e in f.comments])
        more: list[_BOOL | None] = [None] * len(facts)
        known = sum(f.known for f in facts)
        standard = sum(f.standard for f in facts)
        partial_codes = sum(f.partial for f in facts)
        if len(facts) > 1:
            every = np.sort(np.concatenate([f.digests for f in facts]))  # equal ones side by side
            shared = np.unique(every[1:][every[1:] == every[:-1]])
            if len(shared):  # candidates: compared exactly, in reading order
                found = self._gather([self._submit(rows_with, p, shared) for p in prepared])
                seen: set[bytes] = set()
                for k, (rows, values) in enumerate(found):
                    for row, value in zip(rows.tolist(), values, strict=True):
                        if value not in seen:
                            seen.add(value)
                            continue
                        if more[k] is None:
                            more[k] = np.zeros(facts[k].jobs, dtype=bool)
                        more[k][row] = True  # type: ignore[index]
                        status = float(np.frombuffer(value[:at_end], np.float64)[status_at])
                        if not np.isnan(status):
                            known -= 1
                            standard -= status in (0.0, 1.0, 5.0)
                            partial_codes -= status in (2.0, 3.0, 4.0)
        partial = self.name == "swf" and _swf._partial_records(header)  # GWF has no such codes
        n_odd = known - standard - (partial_codes if partial else 0)
        as_exit = n_odd >= max(_swf.EXIT_CODE_MIN_ROWS, _swf.EXIT_CODE_SHARE * known)
        origin = None if self.name == "gwf" else _swf._origin(header)
        maxima = np.array([f.max_submit for f in facts]) + (0 if origin is None else origin)
        before = np.concatenate(([-np.inf], np.fmax.accumulate(maxima)[:-1]))
        before = np.where(np.isnan(before), -np.inf, before)
        duplicates = any(m is not None for m in more) or any(f.repeats for f in facts)
        plans = []
        for k in range(len(facts)):
            plans.append(
                _RangePlan(
                    site=self.site,
                    src_file=path,
                    mode="exit_code" if as_exit else "swf",
                    header=header,
                    more_duplicates=more[k],
                    late_after=float(before[k]),
                    any_duplicates=duplicates,
                    folder=self.folder,
                    task=self._task,
                )
            )
            self._task += 1
        return plans, (n_odd, known, as_exit)


def _rows(tables: tuple[Any, Any, Any]) -> int:
    """Return the most rows of a range's tables (0 when they were sent back, not written)."""
    if isinstance(tables[0], pa.Table):
        return 0
    return max(int(rows) for pieces in tables for _, rows, _ in pieces)


def _in_order(ranges: Sequence[_AssembledRange]) -> bool:
    """Whether the ranges' jobs, each sorted, are in order one after the other."""
    last = -np.inf
    for r in ranges:
        if np.isnan(r.first_key):  # no job
            continue
        if r.first_key < last:
            return False
        last = r.last_key
    return True


def assembled_result(name: str, parts: Sequence[AssembledFile]) -> Any:
    """Return the :class:`~gridtrace.logs._base.ParseResult` of files assembled by ranges."""
    from gridtrace.logs import _swf

    for part in parts:
        if part.as_exit:
            _swf._warn_exit_codes(part.src_file, *part.odd_statuses, stacklevel=3)
    if name == "gwf":
        from gridtrace.logs import _gwf

        return _gwf._gwf_result(
            parts,
            [p.jobs for p in parts],
            [p.records for p in parts],
            {p.src_file: p.header for p in parts},
            sum(p.late for p in parts),
            sum(p.duplicates for p in parts),
            [p.src_file for p in parts if p.as_exit],
            set().union(*(p.sites for p in parts)),
        )
    return _swf._swf_result(
        parts,
        [p.jobs for p in parts],
        [p.records for p in parts],
        {p.src_file: p.header for p in parts},
        sum(p.late for p in parts),
        sum(p.duplicates for p in parts),
        [p.src_file for p in parts if p.as_exit],
    )
