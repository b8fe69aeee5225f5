"""The core's own hooks for byte ranges: guarded pieces, chunks and tokenising from a range start.

A range of whole lines read through :func:`~gridtrace.logs._io.guarded_pieces`,
:func:`~gridtrace.logs._stream.iter_chunks` or :func:`~gridtrace.logs._stream.tokenize_stream`
gives the lines, numbers and rows the whole read gives for them; the formats declare whether and
how they are split (``LineFormat.split``).
"""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from gridtrace.errors import ConfigError
from gridtrace.logs import _ranges
from gridtrace.logs._io import MAX_LINE_BYTES, ReadReport, guarded_pieces
from gridtrace.logs._stream import (
    Chunk,
    ChunkCountError,
    LineFormat,
    RangeSplit,
    iter_chunks,
    tokenize_stream,
)
from gridtrace.logs._swf import SWF_STREAM
from gridtrace.schema import QUARANTINE, RECORDS

SITE = "s"


def _swf_log(jobs: int = 300) -> bytes:
    lines = [b"; Version: 2.2", b"; MaxProcs: 140  (dual)", b";   two"]
    for i in range(1, jobs + 1):
        lines.append(f"{i} {10 * i} 5 100 4 -1 -1 4 3600 -1 1 1 1 -1 1 -1 -1 -1".encode())
        if i % 50 == 0:
            lines += [b"", b"\x00\x00", b"x" * 20]  # blank, NUL, a bad line
    return b"\n".join(lines) + b"\n7 70"  # the last line cut short, no line end


def _line_starts(data: bytes) -> list[int]:
    return [0] + [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]


def _cuts(data: bytes, every: int) -> list[tuple[int, int, int]]:
    """``(start, end, first_line)`` of ranges starting at every ``every``-th line."""
    starts = _line_starts(data)[::every]
    bounds = [*starts, len(data)]
    return [(a, b, every * k + 1) for k, (a, b) in enumerate(itertools.pairwise(bounds))]


def test_guarded_pieces_of_ranges_are_the_whole_read(tmp_path: Path) -> None:
    data = _swf_log()
    path = tmp_path / "log.swf"
    path.write_bytes(data)
    whole = ReadReport(str(path), None)
    everything = b"".join(piece for piece, _ in guarded_pieces(path, whole, 1 << 20))
    got, lines = [], 0
    for start, end, first in _cuts(data, 37):
        report = ReadReport(str(path), None)
        pieces = list(guarded_pieces(path, report, 500, start=start, end=end, first_line=first))
        assert all(len(p) <= 500 for p, _ in pieces)
        assert report.lines == first - 1 + sum(n for _, n in pieces)  # numbered in the file
        got += [p for p, _ in pieces]
        lines += sum(n for _, n in pieces)
    assert b"".join(got) == everything
    assert lines == whole.lines


def test_an_over_long_line_in_a_range_is_numbered_in_the_file(tmp_path: Path) -> None:
    data = _swf_log(40)
    middle = data.index(b"\n", len(data) // 2) + 1
    data = data[:middle] + b"9" * (MAX_LINE_BYTES + 3) + b"\n" + data[middle:]
    path = tmp_path / "long.swf"
    path.write_bytes(data)
    first = data[:middle].count(b"\n") + 1
    report = ReadReport(str(path), None)
    list(guarded_pieces(path, report, 1 << 20, start=middle, end=len(data), first_line=first))
    assert [line for line, _, _ in report.cut_lines] == [first]
    whole = ReadReport(str(path), None)
    list(guarded_pieces(path, whole, 1 << 20))
    assert whole.cut_lines == report.cut_lines


def test_a_compressed_file_is_read_whole_only(tmp_path: Path) -> None:
    path = tmp_path / "log.swf.gz"
    path.write_bytes(gzip.compress(_swf_log(), mtime=0))
    with pytest.raises(ConfigError):
        list(guarded_pieces(path, ReadReport(str(path), None), 100, start=10))
    with pytest.raises(ConfigError):
        list(guarded_pieces(path, ReadReport(str(path), None), 100, end=10))
    assert list(guarded_pieces(path, ReadReport(str(path), None), 1 << 30))  # whole: fine


def test_chunks_of_a_range_are_numbered_in_the_file_and_final_only_at_its_end(
    tmp_path: Path,
) -> None:
    data = _swf_log()
    path = tmp_path / "log.swf"
    path.write_bytes(data)
    ranges = _cuts(data, 100)
    for k, (start, end, first) in enumerate(ranges):
        report = ReadReport(str(path), None)
        chunks = list(
            iter_chunks(path, report, chunk_bytes=300, start=start, end=end, first_line=first)
        )
        assert chunks[0].first_line == first
        for before, after in itertools.pairwise(chunks):
            assert after.first_line == before.first_line + before.lines
            assert not before.final
        assert chunks[-1].final == (k == len(ranges) - 1)
        assert b"".join(c.data for c in chunks) == data[start:end]


@pytest.mark.parametrize("chunk_bytes", [64, 4 << 20])
def test_tokenize_stream_from_a_range_start_gives_the_whole_reads_rows(
    tmp_path: Path, chunk_bytes: int
) -> None:
    data = _swf_log()
    path = tmp_path / "log.swf"
    path.write_bytes(data)
    whole = tokenize_stream(path, SWF_STREAM, site=SITE)
    starts = _line_starts(data)
    cut = next(s for s in starts if s > len(data) // 2 and data[s - 2 : s - 1].isdigit())
    first = data[:cut].count(b"\n") + 1
    parts = [
        tokenize_stream(path, SWF_STREAM, site=SITE, chunk_bytes=chunk_bytes, end=cut),
        tokenize_stream(
            path, SWF_STREAM, site=SITE, chunk_bytes=chunk_bytes, start=cut, first_line=first
        ),
    ]
    assert parts[1].records.column("src_line")[0].as_py() >= first
    assert sum(p.lines_read for p in parts) == whole.lines_read
    assert pa.concat_tables([p.records for p in parts]).equals(whole.records)
    assert pa.concat_tables([p.quarantine for p in parts]).equals(whole.quarantine)


def _holds_back_last_line(
    chunk: Chunk, state: None, *, site: str, src_file: str
) -> tuple[pa.Table, pa.Table]:
    """A format whose last line may open a record: it gives no row for it but at the end."""
    rows = chunk.lines if chunk.final else chunk.lines - 1
    lines = pa.array(range(chunk.first_line, chunk.first_line + rows), pa.int64())
    bad = QUARANTINE.empty_table()
    if rows:
        bad = pa.table(
            {
                "site": pa.array([site] * rows),
                "source_format": pa.array(["held"] * rows),
                "src_file": pa.array([src_file] * rows),
                "src_line": lines,
                "reason": pa.array(["x"] * rows),
                "raw": pa.array([b""] * rows, pa.binary()),
            },
            schema=QUARANTINE,
        )
    return RECORDS.empty_table(), bad


def test_a_range_end_that_leaves_lines_without_rows_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "log.txt"
    path.write_bytes(b"a\nb\nc\nd\n")
    held = LineFormat("held", lambda: None, _holds_back_last_line)
    whole = tokenize_stream(path, held, site=SITE, chunk_bytes=2)
    assert whole.lines_read == whole.quarantine.num_rows == 4  # carried on, then given at the end
    assert pc.max(whole.quarantine.column("src_line")).as_py() == 4
    with pytest.raises(ChunkCountError):
        tokenize_stream(path, held, site=SITE, end=4)  # lines 1-2: line 2 left without a row


def test_the_formats_declare_their_split() -> None:
    declared = {
        name
        for name in ("torque", "swf", "gwf", "slurm", "sge", "lsf", "htcondor")
        if _ranges._line_format(name) is not None
        and getattr(_ranges._line_format(name), "split", None) is not None
    }
    assert declared == {"torque", "swf", "gwf", "slurm", "sge"}
    assert set(_ranges.split_formats()) == declared
    assert set(_ranges.SPLIT_FORMATS) == declared
    assert _ranges._line_format("a plugin's format") is None
    assert _ranges._may_start("swf") is not None
    assert _ranges._may_start("slurm") is None
    for name in ("lsf", "htcondor", "a plugin's format"):
        with pytest.raises(ConfigError, match="not split"):
            _ranges.range_seed(name, [], SITE, _ranges._here)


def test_a_range_split_says_where_a_range_may_start() -> None:
    split = RangeSplit(after=b"0123456789")
    assert split.after
    may_start = _ranges._may_start("gwf")
    assert may_start is not None
    assert may_start(b"  12 3 4")
    assert not may_start(b"# Note: a comment")
    assert not may_start(b"\x00\x00")
