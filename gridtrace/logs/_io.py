"""Reading log files: compression detected by magic bytes, bounded expansion, directories expanded.

:func:`read_log_bytes` hands a reader the whole decompressed content of one file, as bytes, but it
reads the file as a stream and guards what it hands over, so that no input can exhaust memory or
turn a few kilobytes into millions of rows:

* **A damaged compressed stream** (a truncated or corrupt gzip, bzip2, xz or zstd file) is read as
  far as the decompressor delivers; the reader gets the lines up to the break (the last one
  possibly cut short), and the unreadable rest becomes one quarantine row saying where the stream
  broke and why.
* **Line length** is bounded by :data:`MAX_LINE_BYTES` (1 MiB, far above the longest accounting
  record seen: a TORQUE ``E`` record of a 10,000-host job is about 150 kB). A longer line is not
  handed to the reader (it gets an empty line in its place, so line numbers stay true); the line
  becomes a quarantine row giving its true length, with its first :data:`KEPT_RAW_BYTES` bytes.
* **Garbage**: lines that are blank, whitespace or NUL only, or over-long, say nothing. The file is
  cut into windows of :data:`GARBAGE_WINDOW_LINES` lines (100,000) or :data:`GARBAGE_WINDOW_BYTES`
  bytes (256 MiB), whichever ends first; when more than :data:`GARBAGE_SHARE` (99 %) of a
  window's lines are garbage, the file is not a log (or is damaged from there on): reading stops
  after that window, and one quarantine row says where and why. A real log has blank lines, a
  NUL-padded block after a crash, the odd over-long line, but not 99,000 such lines out of
  100,000; and a window is large enough that a crash's NUL padding (a few kilobytes to a few
  megabytes: a handful of lines) never fills one. A 2 kB gzip of two million blank lines thus
  gives 100,000 quarantine rows and a stop, and a gzip of 4 GB of zeros (one NUL line) is stopped
  after 256 MiB, in bounded memory.

:func:`guarded_pieces` is the same reading as an iterator of pieces of whole lines, each with
its line count, in bounded memory: :func:`read_log_bytes` joins them, and the streaming reader core
(:mod:`gridtrace.logs._stream`) tokenises them chunk by chunk, both reporting through
:func:`settle_report`.

Whoever tokenises a file through :func:`gridtrace.logs._base.tokenize_guarded` (every reader's
``read_*`` and :func:`gridtrace.logs.parse_logs` do) receives these findings as rows, counted as
lines read, so lines read = parsed + quarantined still holds. :func:`read_log_bytes` called on its
own, outside that guard, raises instead, naming the file and line: it never cuts silently.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path
from typing import IO

from gridtrace.errors import ConfigError, LogParseError, UnknownFormatError

# The limits, compression and path helpers live in _io_paths (the small TORQUE path loads only
# that part); they are this module's names too. The guard below reads the limits from here, so
# that a test may set them on this module.
from gridtrace.logs._io_paths import (
    _JUNK,
    GARBAGE_SHARE,
    GARBAGE_WINDOW_BYTES,
    GARBAGE_WINDOW_LINES,
    INPUT_LIMITS,
    KEPT_RAW_BYTES,
    MAX_LINE_BYTES,
    REASON_LINE_TOO_LONG,
    REASON_STOPPED,
    REASON_STREAM_BROKEN,
    LogFiles,
    default_site_name,
    detect_compression,
    expand_log_paths,
    input_findings,
    log_text_bytes,
    open_decompressed,
    quarantined_lines_warning,
    scan_log_paths,
)
from gridtrace.logs._io_paths import (
    StrPath as StrPath,  # named by other modules as _io.StrPath
)

__all__ = [
    "GARBAGE_SHARE",
    "GARBAGE_WINDOW_BYTES",
    "GARBAGE_WINDOW_LINES",
    "INPUT_LIMITS",
    "KEPT_RAW_BYTES",
    "MAX_LINE_BYTES",
    "REASON_LINE_TOO_LONG",
    "REASON_STOPPED",
    "REASON_STREAM_BROKEN",
    "LogFiles",
    "ReadReport",
    "collect_read_reports",
    "default_site_name",
    "detect_compression",
    "expand_log_paths",
    "guarded_pieces",
    "input_findings",
    "log_text_bytes",
    "open_decompressed",
    "quarantined_lines_warning",
    "read_log_bytes",
    "read_log_head",
    "scan_log_paths",
    "settle_report",
]

_WHOLE = 1 << 62  # a piece size no file reaches: the whole file in one piece
_NEWLINE = 10
_CHUNK = 1 << 20  # decompressed bytes per read; at most MAX_LINE_BYTES (see _LineGuard.feed)
_BLOCK_MAX = 64 << 20  # the largest block of a plain file read at once (fed in _CHUNK ranges)
_PEEK = 1 << 16  # bytes read ahead at a plain block's end, to end it at a line end
_ZSTD_INPUT = 1024  # compressed bytes per zstd call: bounds one call's output to ~32 MiB
# a window with this many lines that are not garbage can no longer be stopped, whatever its length
_GOOD_ENOUGH = int(GARBAGE_WINDOW_LINES * (1 - GARBAGE_SHARE)) + 1

# ------------------------------------------------------------------------------ what a read found


class ReadReport:
    """What reading one file found beyond its lines: cut lines, a broken stream, a stop.

    Attributes
    ----------
    path : str
        The file.
    compression : str or None
        ``gzip``, ``bz2``, ``xz``, ``zstd`` or None for plain text.
    lines : int
        Lines handed to the reader (counted as readers count them: a last line without a newline
        counts).
    cut_lines : list of (int, int, bytes)
        Each over-long line: its number, its true length in bytes, its first bytes.
    tail_reason : str or None
        Why the rest of the file, after line ``lines``, could not be or was not read.
    tail_raw : bytes
        The first bytes of that rest, where there are any.
    """

    # a plain class, not a dataclass: dataclasses (and inspect, ast, dis with it) would cost
    # the small parse path some 8 ms of start-up; equality and repr are a dataclass's
    __slots__ = ("compression", "cut_lines", "lines", "path", "tail_raw", "tail_reason")
    _FIELDS = ("path", "compression", "lines", "cut_lines", "tail_reason", "tail_raw")

    def __init__(
        self,
        path: str,
        compression: str | None,
        lines: int = 0,
        cut_lines: list[tuple[int, int, bytes]] | None = None,
        tail_reason: str | None = None,
        tail_raw: bytes = b"",
    ) -> None:
        self.path = path
        self.compression = compression
        self.lines = lines
        self.cut_lines: list[tuple[int, int, bytes]] = [] if cut_lines is None else cut_lines
        self.tail_reason = tail_reason
        self.tail_raw = tail_raw

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._FIELDS)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReadReport) or other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass with eq

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._FIELDS)
        return f"{self.__class__.__qualname__}({shown})"

    @property
    def clean(self) -> bool:
        """True when the reader got the whole file, every line of it."""
        return not self.cut_lines and self.tail_reason is None


_REPORTS: ContextVar[dict[str, ReadReport] | None] = ContextVar("_REPORTS", default=None)


@contextmanager
def collect_read_reports() -> Iterator[dict[str, ReadReport]]:
    """Collect the :class:`ReadReport` of every file :func:`read_log_bytes` reads in the block.

    Inside the block, :func:`read_log_bytes` hands over what it could read and reports the rest
    here (keyed by the path as given, made a string) instead of raising; the caller owes the user
    a quarantine row for each finding (:func:`gridtrace.logs._base.tokenize_guarded` does that).
    """
    reports: dict[str, ReadReport] = {}
    token = _REPORTS.set(reports)
    try:
        yield reports
    finally:
        _REPORTS.reset(token)


# ------------------------------------------------------------------------------ streams


class _StreamBroken(Exception):
    """A compressed stream could not be decompressed further."""

    def __init__(self, cause: BaseException, position: int | None) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.position = position


def _compressed_chunks(raw: IO[bytes], kind: str) -> Iterator[bytes]:
    """Decompressed chunks of at most ``_CHUNK`` bytes (zstd: of bounded size)."""
    if kind == "zstd":
        yield from _zstd_chunks(raw)
        return
    stream, broken = open_decompressed(raw, kind)
    with stream:
        while True:
            try:
                chunk = stream.read1(_CHUNK)  # read1: a break loses no earlier chunk
            except broken as exc:
                raise _StreamBroken(exc, _tell(raw)) from exc
            if not chunk:
                return
            yield chunk


def _zstd_chunks(raw: IO[bytes]) -> Iterator[bytes]:
    try:
        import zstandard
    except ImportError:  # pragma: no cover - a dependency; kept for a trimmed install
        msg = "zstd-compressed logs need the zstandard package (pip install zstandard)"
        raise UnknownFormatError(msg) from None
    context = zstandard.ZstdDecompressor()
    stream = context.decompressobj()
    started = False
    while True:
        block = raw.read(_ZSTD_INPUT)
        if not block:
            break
        while block:
            started = True
            try:
                out = stream.decompress(block)
            except zstandard.ZstdError as exc:
                raise _StreamBroken(exc, _tell(raw)) from exc
            if out:
                yield out
            if stream.eof:  # the next frame, if any, starts in what this one left over
                block = stream.unused_data
                stream = context.decompressobj()
                started = False
            else:
                block = b""
    if started and not stream.eof:
        cause = EOFError("compressed file ended before the end-of-frame marker was reached")
        raise _StreamBroken(cause, _tell(raw))


def _tell(raw: IO[bytes]) -> int | None:
    try:
        return raw.tell()
    except (OSError, ValueError):
        return None


# ------------------------------------------------------------------------------ the line guard


class _Stop(Exception):
    """The garbage test stopped the file."""


class _LineGuard:
    """Receives decompressed data; keeps what a reader may see; notes cuts and stops.

    Data arrives as ranges ``buf[lo:hi]`` of at most ``_CHUNK`` (≤ ``MAX_LINE_BYTES``) bytes, so
    only a line that spans ranges can be over-long. What the reader may see is held as segments
    ``(buf, lo, hi, lines)``: ``buf[lo:hi]`` holds ``lines`` whole lines (each ended by a
    newline, but for the file's last line), counted once, here; :meth:`pieces` cuts them into
    pieces of whole lines with one copy each (none when a piece is one whole buffer), without
    counting their lines again.
    """

    def __init__(self, report: ReadReport) -> None:
        self.report = report
        self.parts: list[tuple[bytes, int, int, int]] = []
        self.held = 0  # bytes in parts
        self.held_lines = 0  # lines in parts
        self.total = 0  # decompressed bytes seen
        self.cursor = 0  # next byte of the current range not yet handed over or pending
        # the line in progress (not yet ended by a newline)
        self.pending: list[bytes] = []
        self.pending_len = 0
        # where the line in progress lies, while it is one run of one buffer: (buf, lo, hi)
        self.pending_at: tuple[bytes, int, int] | None = None
        self.pending_head = b""  # first bytes of an over-long pending line
        # the current window of the garbage test
        self.win_lines = 0
        self.win_garbage = 0
        self.win_good = 0
        self.win_bytes = 0

    # -- the garbage test

    def _close_window(self, extra_garbage: int = 0) -> None:
        lines = self.win_lines + extra_garbage
        garbage = self.win_garbage + extra_garbage
        if lines and garbage > GARBAGE_SHARE * lines:
            self.report.tail_reason = (
                f"{REASON_STOPPED} after line {self.report.lines:,}: {garbage:,} of the last "
                f"{lines:,} lines ({self.win_bytes:,} bytes) are blank, whitespace or NUL only, "
                f"or longer than {MAX_LINE_BYTES:,} bytes (the limit is {GARBAGE_SHARE:.0%} of "
                f"a window of {GARBAGE_WINDOW_LINES:,} lines or {GARBAGE_WINDOW_BYTES:,} bytes): "
                "this does not look like an accounting log from here on, so the rest of the file "
                "is not read"
            )
            raise _Stop
        self.win_lines = self.win_garbage = self.win_good = self.win_bytes = 0

    def _window_full(self) -> bool:
        return self.win_lines >= GARBAGE_WINDOW_LINES or self.win_bytes >= GARBAGE_WINDOW_BYTES

    # -- the line in progress

    def _add_pending(self, buf: bytes, lo: int, hi: int) -> None:
        if hi <= lo:
            return
        at = self.pending_at
        if not self.pending_len:
            self.pending_at = (buf, lo, hi)
        elif at is not None and at[0] is buf and at[2] == lo:
            self.pending_at = (buf, at[1], hi)
        else:
            self.pending_at = None
        was_long = self.pending_len > MAX_LINE_BYTES
        if not was_long:
            self.pending.append(buf[lo:hi])
        self.pending_len += hi - lo
        if self.pending_len > MAX_LINE_BYTES:
            if was_long:
                self.win_bytes += hi - lo
            else:  # over-long from here on: keep its first bytes only
                self.pending_head = b"".join(self.pending)[:KEPT_RAW_BYTES]
                self.pending = []
                self.win_bytes += self.pending_len
            if self.win_bytes >= GARBAGE_WINDOW_BYTES:
                # a window ending inside an over-long line counts it as garbage; if the file
                # goes on, the line counts in the window it ends in
                self._close_window(extra_garbage=1)

    def _hold(self, buf: bytes, lo: int, hi: int, lines: int) -> None:
        """Hold ``buf[lo:hi]``, ``lines`` whole lines, for the reader (one run with the last)."""
        parts = self.parts
        if parts and parts[-1][0] is buf and parts[-1][2] == lo:
            parts[-1] = (buf, parts[-1][1], hi, parts[-1][3] + lines)
        else:
            parts.append((buf, lo, hi, lines))
        self.held += hi - lo
        self.held_lines += lines

    def _end_pending(self, final: bool, buf: bytes = b"", at: int = -1) -> None:
        """End the line in progress (at the newline ``buf[at]``, or at the end if ``final``)."""
        size = self.pending_len
        where = self.pending_at
        self.pending_at = None
        if size > MAX_LINE_BYTES:
            self.report.cut_lines.append((self.report.lines + 1, size, self.pending_head))
            self._hold(b"\n", 0, 1, 1)  # an empty line in its place keeps the numbering
            self.pending, self.pending_len, self.pending_head = [], 0, b""
            self.win_bytes += 0 if final else 1  # the rest of it is counted already
            garbage = True
        else:
            line = self.pending[0] if len(self.pending) == 1 else b"".join(self.pending)
            if at >= 0 and (not size or (where is not None and where[0] is buf and where[2] == at)):
                self._hold(buf, at - size, at + 1, 1)  # the line lies in ``buf``: no copy
            else:
                whole = line if final else line + b"\n"
                self._hold(whole, 0, len(whole), 1)
            self.pending, self.pending_len = [], 0
            self.win_bytes += size + (0 if final else 1)
            garbage = not line.strip(_JUNK)
        self.report.lines += 1
        self.win_lines += 1
        self.win_garbage += garbage
        self.win_good += not garbage
        if self._window_full():
            self._close_window()

    # -- whole lines

    def _whole_lines(self, buf: bytes, lo: int, hi: int) -> None:
        """Lines that start and end in one range (each shorter than it: none over-long)."""
        while lo < hi:
            count = _newlines(buf, lo, hi)
            room = GARBAGE_WINDOW_LINES - self.win_lines
            if count < room:
                self._account(buf, lo, hi, count)
                return
            # the window ends inside: hand over its last lines, close it, go on
            import numpy as np  # here: the small TORQUE path imports this module without numpy

            window = np.frombuffer(buf, dtype=np.uint8, count=hi - lo, offset=lo)
            ends = np.flatnonzero(window == 10)
            cut = lo + int(ends[room - 1]) + 1
            self._account(buf, lo, cut, room)
            lo = cut

    def _account(self, buf: bytes, lo: int, hi: int, count: int) -> None:
        """Hand ``count`` whole lines ``buf[lo:hi]`` to the reader and to the window."""
        self._hold(buf, lo, hi, count)
        self.cursor = hi
        garbage = 0
        if self.win_good < _GOOD_ENOUGH:
            # only a window that has not yet seen enough good lines needs them counted
            good = 0
            for line in buf[lo:hi].split(b"\n")[:-1]:
                if line.strip(_JUNK):
                    good += 1
                    if self.win_good + good >= _GOOD_ENOUGH:
                        break
            if self.win_good + good < _GOOD_ENOUGH:
                garbage = count - good
            self.win_good += good
        self.report.lines += count
        self.win_lines += count
        self.win_garbage += garbage
        self.win_bytes += hi - lo
        if self._window_full():
            self._close_window()

    # -- data in

    def feed(self, buf: bytes, lo: int, hi: int) -> None:
        """Take ``buf[lo:hi]``; raise :class:`_Stop` when the garbage test stops the file."""
        self.total += hi - lo
        self.cursor = lo
        try:
            first = buf.find(b"\n", lo, hi)
            if first < 0:
                self._add_pending(buf, lo, hi)
                self.cursor = hi
                return
            self._add_pending(buf, lo, first)
            self.cursor = first + 1
            self._end_pending(final=False, buf=buf, at=first)
            last = buf.rfind(b"\n", lo, hi)
            if last > first:
                self._whole_lines(buf, first + 1, last + 1)
            self.cursor = last + 1
            self._add_pending(buf, last + 1, hi)
            self.cursor = hi
        except _Stop:
            if self.pending_len > MAX_LINE_BYTES:
                self.report.tail_raw = self.pending_head
            else:
                rest = b"".join(self.pending) + buf[self.cursor : self.cursor + KEPT_RAW_BYTES]
                self.report.tail_raw = rest[:KEPT_RAW_BYTES]
            raise

    def finish(self) -> None:
        """Hand over the last line, if the data ends without a newline."""
        if self.pending_len:
            self._end_pending(final=self.pending_len <= MAX_LINE_BYTES)

    def broken(self, exc: _StreamBroken, kind: str, size: int) -> None:
        """Hand over the line in progress of a broken stream; note where the stream ended."""
        where = "" if exc.position is None else f", about {exc.position:,} of {size:,} bytes in"
        reason = (
            f"{REASON_STREAM_BROKEN}: the {kind} stream ends after {self.total:,} decompressed "
            f"bytes{where} "
            f"({type(exc.cause).__name__}: {exc.cause}): the rest of the file cannot be "
            "decompressed; copy the file again from its source if you can"
        )
        try:
            self.finish()
        except _Stop:
            return  # the garbage test stopped it at its last line: that reason stands
        self.report.tail_reason = reason

    # -- data out

    def pieces(self, piece_bytes: int, *, final: bool) -> Iterator[tuple[bytes, int]]:
        r"""Hand over the lines held as pieces of at most ``piece_bytes`` bytes, and their counts.

        The pieces are cut greedily from the start of the file: each is the longest run of whole
        lines that fits in ``piece_bytes`` (a line longer than that is a piece of its own), so
        that where they are cut does not depend on how the data arrived. While the file goes on
        (``final`` False), the last ``piece_bytes`` bytes or fewer are held for more lines; at
        its end they are the last piece, which may end without a line end (when the file does).
        """
        while self.held > piece_bytes:
            piece = self._cut(piece_bytes)
            if piece is None:  # the file's last line, unended, longer than a piece: one piece
                break
            yield piece
        if final and self.held:
            yield self._hand_over(self.parts)
            self.parts = []

    def _cut(self, limit: int) -> tuple[bytes, int] | None:
        r"""Cut the first piece of at most ``limit`` bytes off the segments held."""
        parts = self.parts
        before = 0  # bytes of the segments wholly in the piece
        for i, (buf, lo, hi, lines) in enumerate(parts):
            size = hi - lo
            if before + size <= limit:
                before += size
                continue
            room = limit - before
            end = buf.rfind(b"\n", lo, lo + room) if room > 0 else -1
            if end < 0 and i:  # the last line end in the piece ends the segment before
                taken, self.parts = parts[:i], parts[i:]
                return self._hand_over(taken)
            if end < 0:  # a line longer than a piece: a piece of its own
                end = buf.find(b"\n", lo + limit, hi)
                if end < 0:
                    return None
                head = 1
            elif end + 1 - lo <= hi - end - 1:  # count the shorter side of the cut
                head = _newlines(buf, lo, end + 1)
            else:
                head = lines - _lines_in(buf, end + 1, hi)
            rest = [(buf, end + 1, hi, lines - head)] if end + 1 < hi else []
            taken, self.parts = [*parts[:i], (buf, lo, end + 1, head)], rest + parts[i + 1 :]
            return self._hand_over(taken)
        return None  # pragma: no cover - only called while more than ``limit`` bytes are held

    def _hand_over(self, taken: list[tuple[bytes, int, int, int]]) -> tuple[bytes, int]:
        """Join segments into one bytes object (the buffer itself when it is the only one)."""
        if len(taken) == 1 and taken[0][1] == 0 and taken[0][2] == len(taken[0][0]):
            data = taken[0][0]
        else:
            data = b"".join([memoryview(buf)[lo:hi] for buf, lo, hi, _ in taken])
        lines = sum(part[3] for part in taken)
        self.held -= len(data)
        self.held_lines -= lines
        return data, lines


def _sniff(raw: IO[bytes]) -> str | None:
    """Name the compression of an open file from its first bytes; rewind it."""
    kind = detect_compression(raw.read(8))
    raw.seek(0)
    return kind


def _plain_blocks(raw: IO[bytes], end: int | None = None) -> Iterator[bytes]:
    """Blocks of at most ``_CHUNK`` bytes of a plain file, from where it stands up to ``end``."""
    while (left := _CHUNK if end is None else min(_CHUNK, end - raw.tell())) > 0:
        block = raw.read(left)
        if not block:
            return
        yield block


def _plain_pieces(raw: IO[bytes], piece_bytes: int, end: int | None = None) -> Iterator[bytes]:
    """Blocks of a plain file that are, as far as can be told, the pieces themselves.

    Each block is read to the last line end within ``piece_bytes`` bytes (found by reading
    the last :data:`_PEEK` bytes first), so that the greedy cut of the guarded lines falls at
    its end and the block is handed over as it is, without a copy; a block with no line end
    in its last bytes, or cut by ``end`` or the end of the file, is read whole.
    """
    if piece_bytes < _CHUNK:
        yield from _plain_blocks(raw, end)
        return
    size = min(piece_bytes, _BLOCK_MAX)
    fd = raw.fileno()
    while (left := size if end is None else min(size, end - raw.tell())) > 0:
        peek = min(left, _PEEK)
        tail = os.pread(fd, peek, raw.tell() + left - peek)
        if len(tail) == peek and (newline := tail.rfind(b"\n")) >= 0:
            left -= peek - newline - 1
        block = raw.read(left)
        if not block:
            return
        yield block


_NUMPY_COUNT = 1 << 14  # from this many bytes, numpy counts line ends faster than bytes.count


def _newlines(buf: bytes, lo: int, hi: int) -> int:
    """Count the line ends in ``buf[lo:hi]``."""
    if hi - lo < _NUMPY_COUNT:
        return buf.count(b"\n", lo, hi)
    import numpy as np  # here: the small TORQUE path imports this module without numpy

    return int(np.count_nonzero(np.frombuffer(buf, dtype=np.uint8, count=hi - lo, offset=lo) == 10))


def _lines_in(buf: bytes, lo: int, hi: int) -> int:
    """Count the lines in ``buf[lo:hi]``, a last one without a line end included."""
    return _newlines(buf, lo, hi) + (1 if hi > lo and buf[hi - 1] != _NEWLINE else 0)


def guarded_pieces(
    path: StrPath,
    report: ReadReport,
    piece_bytes: int,
    *,
    start: int = 0,
    end: int | None = None,
    first_line: int = 1,
) -> Iterator[tuple[bytes, int]]:
    r"""Read ``path`` through the line guard, as pieces of whole lines; never raise for damage.

    The pieces, concatenated, are what :func:`read_log_bytes` returns; each holds at most
    ``piece_bytes`` bytes (or one line, when a line is longer) and ends with ``\n`` except,
    perhaps, the last. What the guard left out goes to ``report`` (filled in as the pieces are
    read: complete once the iterator is exhausted). Memory is bounded by ``piece_bytes`` plus
    one block (a compressed file's decompressed 1 MiB; a plain file's next piece, at most 64
    MiB) plus one line, whatever the size of the file.

    Lines are counted once, by the guard, as it reads them; a piece is cut from the blocks read
    without joining them first, and a plain file is read in blocks that end where the pieces
    do, so that a piece is usually the block read itself, not a copy of it.

    A plain file can be read from byte ``start`` to byte ``end`` only (a range of whole lines,
    :mod:`gridtrace.logs._ranges`): its lines are numbered from ``first_line``, and a stop of
    the garbage test keeps the bytes after it as the whole read does, past ``end``.

    Parameters
    ----------
    path : str or path-like
        The file.
    report : ReadReport
        Receives the compression, the line count and the findings.
    piece_bytes : int
        The largest piece, in bytes (at least 1).
    start, end : int, optional
        The bytes read, ``end`` excluded (by default the whole file); ``start`` should be 0 or
        just after a line end.
    first_line : int, default 1
        The number of the line at ``start``.

    Yields
    ------
    (bytes, int)
        Whole lines, in file order, and how many.

    Raises
    ------
    ConfigError
        If a range other than the whole file is asked of a compressed file (a ``ValueError``).
    OSError
        If the file cannot be opened or read.
    """
    with Path(path).open("rb") as raw:
        kind = report.compression = _sniff(raw)
        if kind is not None and (start or end is not None):
            msg = f"{path}: a {kind} file is read whole, not from byte {start} to {end}"
            raise ConfigError(msg)
        raw.seek(start)
        report.lines = first_line - 1
        guard = _LineGuard(report)
        size = os.fstat(raw.fileno()).st_size
        if kind is None:
            blocks = _plain_pieces(raw, piece_bytes, end)
        else:
            blocks = _compressed_chunks(raw, kind)
        try:
            for block in blocks:
                for lo in range(0, len(block), _CHUNK):  # the guard takes ranges of _CHUNK
                    guard.feed(block, lo, min(lo + _CHUNK, len(block)))
                yield from guard.pieces(piece_bytes, final=False)
            guard.finish()
        except _Stop:
            if kind is None:  # the rest of the file, as read whole: on into the next block
                if len(report.tail_raw) < KEPT_RAW_BYTES:
                    more = report.tail_raw + raw.read(KEPT_RAW_BYTES - len(report.tail_raw))
                    report.tail_raw = more[:KEPT_RAW_BYTES]
            elif not report.tail_raw:
                with suppress(_StreamBroken):  # the first bytes after the stop, for the row
                    report.tail_raw = next(blocks, b"")[:KEPT_RAW_BYTES]
        except _StreamBroken as exc:
            guard.broken(exc, str(kind), size)  # only a decompressor breaks
        yield from guard.pieces(piece_bytes, final=True)


def settle_report(path: StrPath, report: ReadReport) -> None:
    """Hand a finished :class:`ReadReport` to :func:`collect_read_reports`, else raise for it.

    Raises
    ------
    UnknownFormatError
        Outside :func:`collect_read_reports`, for a broken compressed stream.
    LogParseError
        Outside :func:`collect_read_reports`, for an over-long line or a stopped file.
    """
    reports = _REPORTS.get()
    if reports is not None:
        reports[str(path)] = report
        return
    if report.tail_reason is not None and report.compression is not None:
        kind = report.compression
        if report.tail_reason.startswith(REASON_STREAM_BROKEN):
            msg = (
                f"{path}: starts like a {kind} file but cannot be decompressed to its end "
                f"({report.tail_reason}); read it with parse_logs or a read_* function to "
                "quarantine the damaged part, or repair it first"
            )
            raise UnknownFormatError(msg)
    if report.cut_lines:
        line, length, head = report.cut_lines[0]
        msg = (
            f"line of {length:,} bytes, longer than the {MAX_LINE_BYTES:,}-byte limit; read the "
            "file with parse_logs or a read_* function to quarantine it"
        )
        raise LogParseError(msg, path=str(path), lineno=line, line=head)
    if report.tail_reason is not None:
        raise LogParseError(
            report.tail_reason, path=str(path), lineno=report.lines + 1, line=report.tail_raw
        )


def read_log_bytes(path: StrPath) -> bytes:
    """Read a whole log file, decompressing gzip, bzip2, xz or zstd whatever its name says.

    The file is read as a stream under the limits of :mod:`gridtrace.logs._io`: lines of at
    most :data:`MAX_LINE_BYTES`, reading stopped when more than :data:`GARBAGE_SHARE` of a window
    of lines is garbage, a broken compressed stream read as far as it goes.

    Parameters
    ----------
    path : str or path-like
        The file.

    Returns
    -------
    bytes
        The decompressed content, as far as it could be read; an over-long line is replaced by an
        empty one. Inside :func:`collect_read_reports` what was left out is reported there.

    Raises
    ------
    UnknownFormatError
        Outside :func:`collect_read_reports`, for a compressed file that cannot be decompressed
        to its end (truncated or corrupt).
    LogParseError
        Outside :func:`collect_read_reports`, for an over-long line or a file stopped by the
        garbage test, naming the file and line.
    OSError
        If the file cannot be opened or read.
    """
    report = ReadReport(str(path), None)
    data = b"".join(piece for piece, _ in guarded_pieces(path, report, _WHOLE))
    settle_report(path, report)
    return data


def read_log_head(path: StrPath, size: int = 65536) -> tuple[bytes, bool]:
    """Read the first ``size`` decompressed bytes of a file, for format detection.

    Returns
    -------
    head : bytes
        Up to ``size`` bytes; fewer when the file is shorter or its stream breaks first.
    damaged : bool
        True when the compressed stream broke before ``size`` bytes (or its end).

    Raises
    ------
    OSError
        If the file cannot be opened or read.
    """
    with Path(path).open("rb") as raw:
        kind = _sniff(raw)
        if kind is None:
            return raw.read(size), False
        out = bytearray()
        try:
            for chunk in _compressed_chunks(raw, kind):
                out += chunk[: size - len(out)]
                if len(out) >= size:
                    break
        except _StreamBroken:
            return bytes(out), True
        return bytes(out), False
