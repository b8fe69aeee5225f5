"""One streaming core for the line-oriented readers: open, chunk, number, count, build, write.

A reader's ``tokenize_<fmt>_file`` used to read the whole decompressed file, split it into lines
and tokenise them at once. The core below does the frame once for every format:

* **opening** a file, plain or compressed (gzip, bzip2, xz, zstd), through the line guard of
  :mod:`gridtrace.logs._io` (line-length limit, garbage windows, broken streams: the same
  findings and reports as :func:`~gridtrace.logs._io.read_log_bytes`, which is built on the same
  iterator);
* **chunking** the decompressed stream into :class:`Chunk` objects of whole lines, of at most
  ``chunk_bytes`` bytes each (one line when a line is longer), numbered across chunks;
* **counting**: lines read = parsed + quarantined, per chunk and per file (:class:`StreamStats`);
* **building** the per-chunk ``records`` and ``quarantine`` tables, by the format's
  :class:`LineFormat` spec, and concatenating them into the :class:`~gridtrace.logs._base.FileParse`
  a reader returns (:func:`tokenize_stream`), or
* **writing** them to Parquet as row groups as they come (:func:`write_stream`), the read's
  findings (over-long lines, a broken or stopped file) added as the guarded path adds them, so
  that memory is bounded by the chunk, not by the file.

A format supplies a :class:`LineFormat`: its ``source_format`` name, a fresh per-file state (what
the format carries from one chunk to the next: an SWF header's open key, a field order, a
version), and a function turning one chunk into its ``records`` and ``quarantine`` rows. The
decoding repairs (NUL bytes, CR LF line ends, bytes that are not UTF-8) stay the format's, as
flags and counts it already defines, so that the rows are those of reading the file in one piece.

The reader frame is written here once too: :func:`file_tokenizer` makes a format's public
``tokenize_<fmt>_file`` (signature and numpydoc docstring included) from its :class:`LineFormat`
and the facts its docstring states, and :func:`read_files` is the per-file half of every
``read_<fmt>`` (expand the paths, name the site, tokenise each file under the line guard, apply
the error policy), which leaves a reader only its assembly.
"""

from __future__ import annotations

import inspect
import sys
import textwrap
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeAlias, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gridtrace._atomic import atomic_path
from gridtrace._log import library_logger
from gridtrace.errors import ConfigError, GridtraceError
from gridtrace.logs._base import (
    FileParse,
    ParseResult,
    apply_error_policy,
    check_error_policy,
    tokenize_guarded,
)
from gridtrace.logs._columnar import quarantine_table
from gridtrace.logs._io import (
    MAX_LINE_BYTES,
    REASON_LINE_TOO_LONG,
    ReadReport,
    StrPath,
    default_site_name,
    expand_log_paths,
    guarded_pieces,
    settle_report,
)
from gridtrace.schema import QUARANTINE, RECORDS

__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "Chunk",
    "ChunkCountError",
    "ChunkTokenizer",
    "FileTokenizer",
    "FormatOfFile",
    "LineFormat",
    "RangeSplit",
    "StreamStats",
    "file_reader",
    "file_tokenizer",
    "iter_chunks",
    "read_files",
    "tokenize_stream",
    "write_stream",
]

logger = library_logger(__name__)

DEFAULT_CHUNK_BYTES = 4 << 20
"""Decompressed bytes per chunk by default (4 MiB): whole lines, one line when it is longer."""

_NEWLINE = 10
S = TypeVar("S")
S_contra = TypeVar("S_contra", contravariant=True)
_pa: Any = pa  # the pyarrow stubs' overloads are narrower than the constructions used here


@dataclass(frozen=True)
class Chunk:
    r"""Whole lines of one file, as read through the line guard.

    Attributes
    ----------
    data : bytes
        The lines, each ended by ``\n`` (the file's last line may have none, in the last chunk).
    first_line : int
        The number (from 1) of its first line in the file.
    lines : int
        How many lines it holds.
    index : int
        Its position among the file's chunks, from 0.
    final : bool
        True for the file's last chunk.
    ahead : bytes
        The next chunk's lines as read (the same object, not a copy), for a format whose state
        depends on the file's first bytes beyond this chunk (TORQUE's flavour, from its first
        4 MiB); empty for the last chunk, or when not known.
    """

    data: bytes
    first_line: int
    lines: int
    index: int
    final: bool
    ahead: bytes = b""


class ChunkTokenizer(Protocol[S_contra]):
    """``tokenize(chunk, state, *, site, src_file) -> (records, quarantine)``."""

    def __call__(
        self, chunk: Chunk, state: S_contra, *, site: str, src_file: str
    ) -> tuple[pa.Table, pa.Table]: ...


@dataclass(frozen=True)
class RangeSplit:
    """How a line format's big plain file may be split into byte ranges, each read apart.

    A range is read through the core (:func:`tokenize_stream` from ``start`` to ``end``) from a
    state of its own; what the state at a range start depends on in the whole file is declared
    here, and :mod:`gridtrace.logs._ranges` does the rest: the ranges' rows, put together, are
    the whole read's. A format whose record may span lines has no split (``LineFormat.split``
    None): a range start cannot be known to begin a record.

    Attributes
    ----------
    after : bytes
        A range starts only after a line whose first non-blank byte is one of these (SWF and
        GWF: a digit, a job line, which leaves no header comment open); empty: after any line.
    first_line_state : bool
        The state every range after the first starts from is the state after the file's first
        line (Slurm: the field order, from a header line or the default).
    head : callable, optional
        ``head(path)``: what every range needs of the whole file, read from its head
        (TORQUE: the flavour, from the first 4 MiB); picklable.
    share, combine : callable, optional
        A first pass split by range (Grid Engine: the usual field count, the most common count
        over the whole file): ``share(chunks)`` of each range's chunks (on workers: picklable,
        module-level), ``combine(shares)`` of the ranges' shares in order, up to one the garbage
        test stopped in, gives what every range needs.
    start : callable, optional
        ``start(path, seed)``: the state a range starts from, given what ``head`` or ``combine``
        gave; without it a range starts from the format's ``new_state()`` (or, with
        ``first_line_state``, from a copy of the state after line 1).
    """

    after: bytes = b""
    first_line_state: bool = False
    head: Callable[[str], Any] | None = None
    share: Callable[[Iterator[Chunk]], Any] | None = None
    combine: Callable[[list[Any]], Any] | None = None
    start: Callable[[str, Any], Any] | None = None


@dataclass(frozen=True)
class LineFormat(Generic[S]):
    """What a line-oriented format gives the core: its name, its per-file state, its tokeniser.

    Attributes
    ----------
    name : str
        The ``source_format`` of its rows.
    new_state : callable
        Returns a fresh per-file state; the tokeniser updates it chunk by chunk (what a format
        carries across chunks: a header's open key, a field order, a version).
    tokenize : callable
        ``tokenize(chunk, state, *, site, src_file)``: the chunk's ``records`` and ``quarantine``
        rows, numbered from ``chunk.first_line``, in line order, one row per line. A format whose
        records span lines may stop before the end of a chunk that is not the file's last (a
        record still open at its end): the lines it gave no row are carried into the next chunk,
        ahead of its lines, so a record is never cut by a chunk boundary.
    lines_taken : callable, optional
        For a format whose line may hold several rows (HTCondor's compact ``[{…},{…}]``, one
        row per ad): ``lines_taken(state)`` says how many of the chunk's lines the last call
        to ``tokenize`` consumed (the rest is carried into the next chunk), and the chunk
        counts one line per row, as the format counts them. Without it, each row is one line.
    split : RangeSplit, optional
        Whether and how one big plain file may be split into byte ranges read apart
        (:mod:`gridtrace.logs._ranges`); None: it is read whole.
    """

    name: str
    new_state: Callable[[], S]
    tokenize: ChunkTokenizer[S]
    lines_taken: Callable[[S], int] | None = None
    split: RangeSplit | None = None


@dataclass
class StreamStats:
    """What the core did with one file: chunks, sizes and counts.

    Attributes
    ----------
    chunks : int
        Chunks tokenised (at least 1: an empty file is one empty chunk).
    largest_chunk : int
        Bytes of the largest chunk.
    lines_read, lines_parsed, lines_quarantined : int
        Over the file; ``lines_read == lines_parsed + lines_quarantined``.
    per_chunk : list of (int, int, int)
        ``(lines, parsed, quarantined)`` of each chunk, the read's findings included.
    """

    chunks: int = 0
    largest_chunk: int = 0
    lines_read: int = 0
    lines_parsed: int = 0
    lines_quarantined: int = 0
    per_chunk: list[tuple[int, int, int]] = field(default_factory=list)

    @property
    def reconciled(self) -> bool:
        """True when every chunk's lines, and the file's, are parsed or quarantined."""
        return self.lines_read == self.lines_parsed + self.lines_quarantined and all(
            lines == parsed + quarantined for lines, parsed, quarantined in self.per_chunk
        )

    def _add(self, chunk: Chunk, parsed: int, quarantined: int, extra_lines: int = 0) -> None:
        lines = chunk.lines + extra_lines
        self.chunks += 1
        self.largest_chunk = max(self.largest_chunk, len(chunk.data))
        self.lines_read += lines
        self.lines_parsed += parsed
        self.lines_quarantined += quarantined
        self.per_chunk.append((lines, parsed, quarantined))


class ChunkCountError(GridtraceError, ValueError):
    """A format's tokeniser returned rows that do not account for its chunk's lines."""


def iter_chunks(
    path: StrPath,
    report: ReadReport,
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    start: int = 0,
    end: int | None = None,
    first_line: int = 1,
) -> Iterator[Chunk]:
    """Read ``path`` through the line guard as numbered chunks of whole lines.

    Parameters
    ----------
    path : str or path-like
        The file.
    report : ReadReport
        Receives what the guard left out (complete once the iterator is exhausted).
    chunk_bytes : int
        The largest chunk, in bytes (one line when a line is longer).
    start, end : int, optional
        A byte range of whole lines of a plain file (by default the whole file).
    first_line : int, default 1
        The number of the line at ``start``.

    Yields
    ------
    Chunk
        At least one (an empty file or range gives one empty chunk). The last is ``final``
        when it ends the file, or the read stopped in it.

    Raises
    ------
    ConfigError
        If ``chunk_bytes`` is less than 1 (a ``ValueError``).
    """
    if chunk_bytes < 1:
        msg = f"chunk_bytes must be at least 1, not {chunk_bytes}"
        raise ConfigError(msg)
    pieces = guarded_pieces(path, report, chunk_bytes, start=start, end=end, first_line=first_line)
    held, lines = next(pieces, (b"", 0))
    index = 0
    for piece in pieces:  # one piece held back, to know which is the last (and what comes)
        yield Chunk(held, first_line, lines, index, final=False, ahead=piece[0])
        first_line += lines
        index += 1
        held, lines = piece
    final = end is None or report.tail_reason is not None or end >= Path(path).stat().st_size
    yield Chunk(held, first_line, lines, index, final=final)


def _line_end(data: bytes, lines: int) -> int:
    """Return the offset just after the first ``lines`` lines of ``data``."""
    if lines == 0:
        return 0
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == _NEWLINE)
    return int(ends[lines - 1]) + 1


def _tokenized(
    path: StrPath,
    fmt: LineFormat[S],
    report: ReadReport,
    *,
    site: str,
    src_file: str,
    chunk_bytes: int,
    span: tuple[int, int | None, int] = (0, None, 1),
) -> Iterator[tuple[Chunk, pa.Table, pa.Table, int]]:
    """Yield each chunk as tokenised (carried lines left out), its tables, its surplus rows.

    The surplus is the rows beyond one a line: lines holding several records, in a format
    with ``lines_taken``; 0 otherwise. ``span`` is ``(start, end, first_line)`` of the bytes
    read (the whole file by default); every line of it must have its rows by its end.
    """
    start, end, first_line = span
    state = fmt.new_state()
    carry = b""
    carry_lines = 0
    chunks = iter_chunks(
        path, report, chunk_bytes=chunk_bytes, start=start, end=end, first_line=first_line
    )
    for read in chunks:
        chunk = read
        if carry_lines:
            chunk = Chunk(
                carry + read.data,
                read.first_line - carry_lines,
                read.lines + carry_lines,
                read.index,
                read.final,
                read.ahead,
            )
        records, quarantine = fmt.tokenize(chunk, state, site=site, src_file=src_file)
        rows = records.num_rows + quarantine.num_rows
        used = rows if fmt.lines_taken is None else fmt.lines_taken(state)
        if used > chunk.lines or rows < used or (chunk.final and used != chunk.lines):
            msg = (
                f"{src_file}: chunk {chunk.index} (lines {chunk.first_line}-"
                f"{chunk.first_line + chunk.lines - 1}) gave {records.num_rows} records and "
                f"{quarantine.num_rows} quarantined rows for {used} of its {chunk.lines} lines"
            )
            raise ChunkCountError(msg)
        if used < chunk.lines:  # a record left open: its lines go on with the next chunk
            end = _line_end(chunk.data, used)
            carry, carry_lines = chunk.data[end:], chunk.lines - used
            chunk = Chunk(chunk.data[:end], chunk.first_line, used, chunk.index, final=False)
        else:
            carry, carry_lines = b"", 0
        yield chunk, records, quarantine, rows - used
    if carry_lines:  # a range's end left a record open: the format should not be split
        msg = f"{src_file}: the {carry_lines} lines before byte {end} gave no rows"
        raise ChunkCountError(msg)


def _concat(tables: list[pa.Table]) -> pa.Table:
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def tokenize_stream(
    path: StrPath,
    fmt: LineFormat[S],
    *,
    site: str,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    stats: StreamStats | None = None,
    start: int = 0,
    end: int | None = None,
    first_line: int = 1,
) -> FileParse:
    """Tokenise one file chunk by chunk: the tables are those of reading it in one piece.

    The read's findings go to :func:`~gridtrace.logs._io.collect_read_reports` (or raise outside
    it) exactly as :func:`~gridtrace.logs._io.read_log_bytes` does, so a reader's
    ``tokenize_<fmt>_file`` built on this function behaves as before under
    :func:`~gridtrace.logs._base.tokenize_guarded`.

    Parameters
    ----------
    path : str or path-like
        The file.
    fmt : LineFormat
        The format's spec.
    site : str
        Site name for every row.
    chunk_bytes : int
        The largest chunk, in bytes.
    stats : StreamStats, optional
        Filled in with the chunk count, sizes and counts.
    start, end : int, optional
        A byte range of whole lines of a plain file (by default the whole file), read from the
        state ``fmt.new_state()`` gives (:mod:`gridtrace.logs._ranges`).
    first_line : int, default 1
        The number of the line at ``start``.

    Returns
    -------
    FileParse
        The chunks' tables concatenated; ``lines_read`` = records + quarantined.
    """
    src_file = str(path)
    report = ReadReport(src_file, None)
    records: list[pa.Table] = []
    quarantine: list[pa.Table] = []
    lines = 0
    steps = _tokenized(
        path,
        fmt,
        report,
        site=site,
        src_file=src_file,
        chunk_bytes=chunk_bytes,
        span=(start, end, first_line),
    )
    for chunk, rec, bad, extra in steps:
        if stats is not None:
            stats._add(chunk, rec.num_rows, bad.num_rows, extra)
        records.append(rec)
        quarantine.append(bad)
        lines += chunk.lines + extra
    settle_report(path, report)
    parsed = FileParse(src_file, _concat(records), _concat(quarantine), lines)
    logger.debug(
        "%s: %d lines in %d chunks, %d quarantined",
        src_file,
        lines,
        len(records),
        parsed.quarantine.num_rows,
    )
    return parsed


def _findings_rows(
    rows: list[tuple[int, str, bytes]], *, site: str, source_format: str, src_file: str
) -> pa.Table:
    return quarantine_table(
        site=site,
        source_format=source_format,
        src_file=src_file,
        lines=[line for line, _, _ in rows],
        reasons=[reason for _, reason, _ in rows],
        raw=[raw for _, _, raw in rows],
    )


def _cut_rows(cut: list[tuple[int, int, bytes]]) -> list[tuple[int, str, bytes]]:
    return [
        (
            line,
            f"{REASON_LINE_TOO_LONG}: {length:,} bytes, over the limit of "
            f"{MAX_LINE_BYTES:,}; not parsed, its first {len(head):,} bytes kept",
            head,
        )
        for line, length, head in cut
    ]


def write_stream(
    path: StrPath,
    fmt: LineFormat[S],
    records_path: StrPath,
    quarantine_path: StrPath,
    *,
    site: str,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> StreamStats:
    """Tokenise one file chunk by chunk into two Parquet files, one row group per chunk.

    Memory is bounded by the chunk: each chunk's tables are written and dropped before the next
    chunk is read. The read's findings become quarantine rows as
    :func:`~gridtrace.logs._base.tokenize_guarded` makes them (an over-long line's row in its
    chunk, in place of the empty line the format was given; a broken or stopped file's rest as a
    last row), so the files hold the guarded tables of the file. Both outputs are written to a
    temporary file beside them and renamed at the end; a failure leaves neither changed.

    Parameters
    ----------
    path : str or path-like
        The log file.
    fmt : LineFormat
        The format's spec.
    records_path, quarantine_path : str or path-like
        The Parquet outputs (schemas ``records`` and ``quarantine``).
    site : str
        Site name for every row.
    chunk_bytes : int
        The largest chunk, in bytes.

    Returns
    -------
    StreamStats
        Chunks, their largest size, and the counts per chunk and per file.
    """
    import pyarrow.parquet as pq

    src_file = str(path)
    report = ReadReport(src_file, None)
    stats = StreamStats()
    cut_seen = 0
    cut_waiting: list[tuple[int, int, bytes]] = []
    with (
        atomic_path(records_path) as records_tmp,
        atomic_path(quarantine_path) as quarantine_tmp,
        pq.ParquetWriter(records_tmp, RECORDS) as records_out,
        pq.ParquetWriter(quarantine_tmp, QUARANTINE) as quarantine_out,
    ):
        steps = _tokenized(path, fmt, report, site=site, src_file=src_file, chunk_bytes=chunk_bytes)
        for chunk, rec, bad, extra in steps:
            # the lines the guard cut, among those tokenised (some may be carried on)
            cut_waiting += report.cut_lines[cut_seen:]
            cut_seen = len(report.cut_lines)
            end = chunk.first_line + chunk.lines
            cut = [item for item in cut_waiting if item[0] < end]
            cut_waiting = [item for item in cut_waiting if item[0] >= end]
            if cut:
                lines = pa.array([line for line, _, _ in cut], pa.int64())
                rec = rec.filter(pc.invert(pc.is_in(rec.column("src_line"), lines)))
                bad = bad.filter(pc.invert(pc.is_in(bad.column("src_line"), lines)))
                added = _findings_rows(
                    _cut_rows(cut), site=site, source_format=fmt.name, src_file=src_file
                )
                bad = pa.concat_tables([bad.cast(QUARANTINE), added]).sort_by("src_line")
            stats._add(chunk, rec.num_rows, bad.num_rows, extra)
            records_out.write_table(rec.cast(RECORDS))
            quarantine_out.write_table(bad.cast(QUARANTINE))
        if report.tail_reason is not None:
            tail = _findings_rows(
                [(report.lines + 1, report.tail_reason, report.tail_raw)],
                site=site,
                source_format=fmt.name,
                src_file=src_file,
            )
            quarantine_out.write_table(tail)
            stats.lines_read += 1
            stats.lines_quarantined += 1
            stats.per_chunk.append((1, 0, 1))
    logger.debug("%s: %d lines in %d chunks written", src_file, stats.lines_read, stats.chunks)
    return stats


# --------------------------------------------------------------------------- the reader frame


FormatOfFile: TypeAlias = Callable[..., LineFormat[Any]]
"""``format_of(path, *, chunk_bytes, **options)``: the :class:`LineFormat` of one file.

For a format whose spec depends on the file or on the caller's options: a first pass over the
file (SGE's field count), a state that needs its path (TORQUE's flavour sniff), a delimiter and
field order given by the caller (Slurm).
"""


class FileTokenizer(Protocol):
    """``tokenize_<fmt>_file(path, *, site, chunk_bytes, stats, **options) -> FileParse``."""

    __name__: str

    def __call__(
        self,
        path: StrPath,
        *,
        site: str,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        stats: StreamStats | None = None,
        **options: Any,
    ) -> FileParse: ...


_TOKENIZER_DOC = """Tokenise {what} (plain, gzip, bzip2 or xz) into ``records`` and ``quarantine``.

The file is read in chunks of whole lines by the streaming core (:mod:`gridtrace.logs._stream`).
{notes}
Parameters
----------
path : str or path-like
    The file.
site : str
    Site name for every row.
{options}chunk_bytes : int
    Decompressed bytes per chunk (4 MiB by default); the tables do not depend on it.
stats : StreamStats, optional
{stats}

Returns
-------
FileParse
{returns}
"""
_READER_DOC = """Read {what} into ``records``, ``jobs`` and quarantine.

Parameters
----------
{paths_name} : path or iterable of paths
{paths}
site : str, optional
    Site name for every row; defaults to the first path's name up to its first dot{site_note}.
errors : {{"raise", "warn", "skip"}}, default "warn"
    What to do with {unreadable}; they are quarantined and counted in every case.
{options}
Returns
-------
ParseResult
{returns}

Raises
------
{raises}LogParseError
    With ``errors="raise"``, at the first {first_bad}.
{warns}
Examples
--------
{examples}
"""
_KEYWORD = inspect.Parameter.KEYWORD_ONLY
_POSITIONAL = inspect.Parameter.POSITIONAL_OR_KEYWORD


def _block(text: str, indent: str = "    ") -> str:
    """Return ``text`` dedented, stripped and indented by ``indent`` (a docstring's section)."""
    return textwrap.indent(textwrap.dedent(text).strip(), indent)


def _wrapped(text: str) -> str:
    """Return ``text`` as one paragraph of a docstring's section, wrapped and indented."""
    return textwrap.fill(
        " ".join(text.split()),
        96,
        initial_indent="    ",
        subsequent_indent="    ",
        break_long_words=False,
        break_on_hyphens=False,
    )


def _entries(text: str) -> str:
    """Return numpydoc parameter entries as a block that ends with a line end (or nothing)."""
    return _block(text, "") + "\n" if text.strip() else ""


def _options(function: Callable[..., Any], names: Sequence[str]) -> list[inspect.Parameter]:
    """Return the keyword parameters ``names`` of ``function``, as it declares them."""
    declared = inspect.signature(function).parameters
    return [declared[name].replace(kind=_KEYWORD) for name in names]


def _publish(
    function: Callable[..., Any], name: str, doc: str, signature: inspect.Signature
) -> None:
    """Name a factory's product in the module that binds it, with its docstring and signature.

    The module is the factory's caller's (as :func:`collections.namedtuple` finds it), so that
    the product pickles by reference, as a worker process needs, and documents where it lives.
    """
    function.__module__ = str(sys._getframe(2).f_globals.get("__name__", __name__))
    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    function.__signature__ = signature  # type: ignore[attr-defined]


def file_tokenizer(
    source_format: str,
    fmt: LineFormat[Any] | FormatOfFile,
    *,
    what: str,
    rows: str,
    others: str = "other line",
    notes: str = "",
    stats: str = "Filled in with the chunks read and the counts per chunk.",
    options: Sequence[str] = (),
    options_doc: str = "",
) -> FileTokenizer:
    """Make a format's ``tokenize_<fmt>_file``: the reader frame, written once.

    The function returned reads a file with :func:`tokenize_stream` by the format's spec. It is
    named ``tokenize_<source_format>_file`` in the calling module, with a numpydoc docstring
    made of the facts given here and the parameters every such function shares.

    Parameters
    ----------
    source_format : str
        The format's name, in the function's name.
    fmt : LineFormat or callable
        The format's spec, or ``fmt(path, chunk_bytes=..., **options)`` giving it for one file.
    what : str
        What is tokenised, for the summary line ("one SWF file").
    rows, others : str
        The lines that give a ``records`` row, and those that give a ``quarantine`` row (by
        default "other line"), for the Returns section.
    notes : str, optional
        Paragraphs on how the format is read, after the summary and the core's sentence.
    stats : str, optional
        What ``stats`` receives, for the Parameters section.
    options : sequence of str, optional
        The format's own keyword parameters, passed on to ``fmt``, which declares them (type,
        default); they stand after ``site`` in the signature.
    options_doc : str, optional
        Their numpydoc entries.

    Returns
    -------
    FileTokenizer
        ``tokenize(path, *, site, **options, chunk_bytes=DEFAULT_CHUNK_BYTES, stats=None)``.
    """
    own = _options(fmt, options) if options and not isinstance(fmt, LineFormat) else []
    signature = inspect.Signature(
        [
            inspect.Parameter("path", _POSITIONAL, annotation="StrPath"),
            inspect.Parameter("site", _KEYWORD, annotation="str"),
            *own,
            inspect.Parameter(
                "chunk_bytes", _KEYWORD, default=DEFAULT_CHUNK_BYTES, annotation="int"
            ),
            inspect.Parameter("stats", _KEYWORD, default=None, annotation="StreamStats | None"),
        ],
        return_annotation="FileParse",
    )

    def tokenize(
        path: StrPath,
        *,
        site: str,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        stats: StreamStats | None = None,
        **given: Any,
    ) -> FileParse:
        if given:  # a wrong name is a TypeError, as for a written-out function
            signature.bind(path, site=site, **given)
        spec = fmt if isinstance(fmt, LineFormat) else fmt(path, chunk_bytes=chunk_bytes, **given)
        return tokenize_stream(path, spec, site=site, chunk_bytes=chunk_bytes, stats=stats)

    doc = _TOKENIZER_DOC.format(
        what=what,
        notes="\n" + _entries(notes) if notes.strip() else "",
        options=_entries(options_doc),
        stats=_block(stats),
        returns=_wrapped(
            f"One ``records`` row per {rows.strip()}, one ``quarantine`` row per "
            f"{others.strip()}, in line order; ``lines_read`` = records + quarantined."
        ),
    )
    _publish(tokenize, f"tokenize_{source_format}_file", doc, signature)
    return tokenize


def read_files(
    paths: StrPath | Iterable[StrPath],
    tokenize: Callable[..., FileParse],
    *,
    source_format: str,
    site: str | None,
    errors: str,
    **options: Any,
) -> list[FileParse]:
    """Tokenise the files of a ``read_<fmt>`` call: the per-file half of every reader, once.

    Parameters
    ----------
    paths : path or iterable of paths
        Files and folders of them, as a reader is given them.
    tokenize : callable
        The format's ``tokenize_<fmt>_file``.
    source_format : str
        The format's name (for the rows the line guard's findings add).
    site : str or None
        Site name for every row; None: the first path's name up to its first dot.
    errors : {"raise", "warn", "skip"}
        The error policy, applied to each file's quarantined lines.
    **options
        Passed on to ``tokenize``.

    Returns
    -------
    list of FileParse
        One per file, in the order :func:`~gridtrace.logs._io.expand_log_paths` gives them,
        with the read's findings quarantined (:func:`~gridtrace.logs._base.tokenize_guarded`).

    Raises
    ------
    ValueError
        If ``errors`` names no policy.
    LogParseError
        With ``errors="raise"``, at the first unreadable line.
    """
    policy = check_error_policy(errors)
    files = expand_log_paths(paths)
    site = site or default_site_name(paths)
    return [
        apply_error_policy(
            tokenize_guarded(tokenize, f, site=site, source_format=source_format, **options),
            policy,
        )
        for f in files
    ]


def file_reader(
    source_format: str,
    tokenize: Callable[..., FileParse],
    assemble: Callable[..., ParseResult],
    *,
    what: str,
    examples: str,
    paths: str = "Files (plain or gzip/bzip2/xz, detected by content) or folders of them.",
    returns: str = "",
    assemble_options: Sequence[str] = (),
    tokenize_options: Sequence[str] = (),
    options_doc: str = "",
    paths_name: str = "paths",
    site_note: str = "",
    unreadable: str = "unreadable lines",
    first_bad: str = "unreadable line",
    raises: str = "",
    warns: str = "",
    check: Callable[..., object] | None = None,
) -> Callable[..., ParseResult]:
    """Make a format's ``read_<fmt>``: the reader frame, written once.

    The function returned takes ``(paths, *, site=None, errors="warn", **options)``: it checks
    the error policy and (``check(**options)``) the options, tokenises each file through
    :func:`read_files` with the options of the tokeniser, and assembles the parts with the
    options of the assembly. Its signature names every option, with the type and default the
    tokeniser or the assembly declares (a wrong name or a missing path is a ``TypeError``, as
    for a written-out function); it is named ``read_<source_format>`` in the calling module,
    with a numpydoc docstring made of the facts given here.

    Parameters
    ----------
    source_format : str
        The format's name.
    tokenize : callable
        The format's ``tokenize_<fmt>_file``.
    assemble : callable
        ``assemble(parts, **options) -> ParseResult``.
    what : str
        What is read, for the summary line ("SWF (Parallel Workloads Archive) files").
    examples : str
        The docstring's examples.
    paths : str, optional
        The text on the paths (by default: files, plain or compressed, or folders of them).
    returns : str, optional
        What the result holds beyond the tables and counts ("one ``jobs`` row per job ad").
    assemble_options, tokenize_options : sequence of str, optional
        The reader's own keyword parameters, in signature order: those of the assembly, then
        those of the tokeniser.
    options_doc : str, optional
        Their numpydoc entries.
    paths_name : str, default "paths"
        The name of the first parameter.
    site_note, unreadable, first_bad, raises, warns : str, optional
        The docstring's words that differ between readers: a note on ``site``, what ``errors``
        acts on, where it raises, other Raises entries and a Warns section.
    check : callable, optional
        ``check(**options)``, run before any file is read; raises for a wrong value.

    Returns
    -------
    callable
        ``read_<source_format>(paths, *, site=None, errors="warn", **options) -> ParseResult``.
    """
    signature = inspect.Signature(
        [
            inspect.Parameter(paths_name, _POSITIONAL, annotation="StrPath | Iterable[StrPath]"),
            inspect.Parameter("site", _KEYWORD, default=None, annotation="str | None"),
            inspect.Parameter("errors", _KEYWORD, default="warn", annotation="ErrorPolicy"),
            *_options(assemble, assemble_options),
            *_options(tokenize, tokenize_options),
        ],
        return_annotation="ParseResult",
    )

    def read(*args: Any, **kwargs: Any) -> ParseResult:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        given = bound.arguments
        check_error_policy(given["errors"])
        if check is not None:
            check(**{name: given[name] for name in (*assemble_options, *tokenize_options)})
        parts = read_files(
            given[paths_name],
            tokenize,
            source_format=source_format,
            site=given["site"],
            errors=given["errors"],
            **{name: given[name] for name in tokenize_options},
        )
        return assemble(parts, **{name: given[name] for name in assemble_options})

    doc = _READER_DOC.format(
        what=what,
        paths_name=paths_name,
        paths=_block(paths),
        site_note=site_note,
        unreadable=unreadable,
        options=_entries(options_doc),
        returns=_wrapped(
            "The tables and counts (lines read = parsed + quarantined)"
            + (f"; {returns.strip()}." if returns.strip() else ".")
        ),
        raises=_entries(raises),
        first_bad=first_bad,
        warns="\n" + _entries(warns) if warns.strip() else "",
        examples=_block(examples, ""),
    )
    _publish(read, f"read_{source_format}", doc, signature)
    return read
