"""The line guard's pieces: cut once, counted once, the same whatever the blocks read.

:func:`~gridtrace.logs._io.guarded_pieces` holds what the guard let through as segments of the
blocks read and cuts pieces from them without joining them first; these tests check it against
the plain definition: the guarded text of the whole file (:func:`read_log_bytes`' bytes), cut
greedily into the longest runs of whole lines that fit a piece, each counted as a reader counts
lines, with the same report, whatever the size of the blocks read, the size of the pieces, the
compression, CR LF line ends split across blocks, a last line without a line end, an empty file,
over-long lines and bytes that are not UTF-8.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
from collections.abc import Callable
from pathlib import Path

import hypothesis.strategies as st
import pytest
import zstandard
from hypothesis import HealthCheck, assume, given, settings

from gridtrace.logs import _io
from gridtrace.logs._io import ReadReport, detect_compression, guarded_pieces

_SETTINGS = settings(
    max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)

COMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "plain": lambda data: data,
    "gzip": gzip.compress,
    "bz2": bz2.compress,
    "xz": lzma.compress,
    "zstd": lambda data: zstandard.ZstdCompressor().compress(data),
}

# lines of a log and of its damage: records, blank and NUL-only lines, CR LF ends, bytes that
# are not UTF-8, long lines (over the limit the tests set)
LINE = st.one_of(
    st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")),
    st.sampled_from([b"", b"\r", b"\x00\x00", b"job 1 2 3\r", b"\xff\xfe bad", b"  \t"]),
    st.integers(min_value=20, max_value=90).map(lambda n: b"x" * n),
)


def _greedy(data: bytes, piece_bytes: int) -> list[tuple[bytes, int]]:
    """The pieces by definition: the longest whole-line runs that fit, from the start."""
    pieces = []
    pos = 0
    while len(data) - pos > piece_bytes:
        end = data.rfind(b"\n", pos, pos + piece_bytes)
        if end < 0:
            end = data.find(b"\n", pos + piece_bytes)
            if end < 0:
                break
        pieces.append(data[pos : end + 1])
        pos = end + 1
    if pos < len(data):
        pieces.append(data[pos:])
    return [(piece, piece.count(b"\n") + (not piece.endswith(b"\n"))) for piece in pieces]


def _report_fields(report: ReadReport) -> tuple[object, ...]:
    return (
        report.compression,
        report.lines,
        report.cut_lines,
        report.tail_reason,
        report.tail_raw,
    )


def _read(path: Path, piece_bytes: int) -> tuple[list[tuple[bytes, int]], ReadReport]:
    report = ReadReport(str(path), None)
    return list(guarded_pieces(path, report, piece_bytes)), report


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Set the block read and the line limit small, so that every boundary is exercised."""

    def set_sizes(block: int, limit: int, window: int = _io.GARBAGE_WINDOW_LINES) -> None:
        monkeypatch.setattr(_io, "GARBAGE_WINDOW_LINES", window)
        monkeypatch.setattr(_io, "_GOOD_ENOUGH", int(window * (1 - _io.GARBAGE_SHARE)) + 1)
        monkeypatch.setattr(_io, "_CHUNK", block)
        monkeypatch.setattr(_io, "MAX_LINE_BYTES", limit)
        monkeypatch.setattr(_io, "KEPT_RAW_BYTES", 16)

    return set_sizes


@_SETTINGS
@given(
    lines=st.lists(LINE, max_size=40),
    ended=st.booleans(),
    block=st.integers(min_value=1, max_value=64),
    piece_bytes=st.integers(min_value=1, max_value=400),
    kind=st.sampled_from(sorted(COMPRESS)),
    window=st.sampled_from([3, 7, 100_000]),
)
def test_pieces_are_the_whole_read_cut_greedily(
    tmp_path: Path,
    small_blocks: Callable[..., None],
    lines: list[bytes],
    ended: bool,
    block: int,
    piece_bytes: int,
    kind: str,
    window: int,
) -> None:
    small_blocks(block, 64, window)  # lines of 65+ bytes are over-long; small garbage windows
    text = b"\n".join(lines) + (b"\n" if ended and lines else b"")
    assume(detect_compression(text) is None)
    path = tmp_path / f"log.{kind}"
    path.write_bytes(COMPRESS[kind](text))
    whole, whole_report = _read(path, 1 << 62)
    assert len(whole) <= 1
    data = whole[0][0] if whole else b""
    pieces, report = _read(path, piece_bytes)
    assert pieces == _greedy(data, piece_bytes)
    assert _report_fields(report) == _report_fields(whole_report)
    assert sum(count for _, count in pieces) == report.lines


@_SETTINGS
@given(
    lines=st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")), max_size=60),
    ended=st.booleans(),
    block=st.integers(min_value=1, max_value=50),
    piece_bytes=st.integers(min_value=1, max_value=300),
)
def test_pieces_of_a_clean_file_are_its_bytes(
    tmp_path: Path,
    small_blocks: Callable[..., None],
    lines: list[bytes],
    ended: bool,
    block: int,
    piece_bytes: int,
) -> None:
    small_blocks(block, 1 << 20)  # no line is over-long: the pieces are the file's bytes
    text = b"\n".join(lines) + (b"\n" if ended and lines else b"")
    assume(detect_compression(text) is None)  # plain text that starts like a compressed file
    path = tmp_path / "log"
    path.write_bytes(text)
    pieces, report = _read(path, piece_bytes)
    assert b"".join(piece for piece, _ in pieces) == text
    assert pieces == _greedy(text, piece_bytes)
    expected_lines = text.count(b"\n") + (1 if text and not text.endswith(b"\n") else 0)
    assert report.lines == expected_lines
    assert report.clean
    assert all(piece.endswith(b"\n") for piece, _ in pieces[:-1])


def test_an_empty_file_gives_no_piece(tmp_path: Path) -> None:
    for kind, compress in COMPRESS.items():
        path = tmp_path / f"empty.{kind}"
        path.write_bytes(compress(b""))
        pieces, report = _read(path, 10)
        assert pieces == []
        assert report.lines == 0
        assert report.clean


def test_crlf_split_across_blocks_stays_in_its_line(
    tmp_path: Path, small_blocks: Callable[..., None]
) -> None:
    small_blocks(5, 1 << 20)
    text = b"abcd\r\nefgh\r\nij\r\n"  # every CR and its LF in different 5-byte blocks
    path = tmp_path / "crlf.log"
    path.write_bytes(text)
    pieces, report = _read(path, 7)
    assert pieces == [(b"abcd\r\n", 1), (b"efgh\r\n", 1), (b"ij\r\n", 1)]
    assert report.lines == 3


def test_a_piece_of_one_whole_block_is_the_block_itself(tmp_path: Path) -> None:
    """The read of a whole file in one piece hands over the block read, without a copy."""
    text = b"".join(b"line %d\n" % i for i in range(1000))
    path = tmp_path / "log"
    path.write_bytes(text)
    pieces, report = _read(path, 1 << 62)
    assert pieces == [(text, 1000)]
    assert report.lines == 1000


def test_a_large_file_is_counted_once_and_cut_the_same(tmp_path: Path) -> None:
    """Blocks of the real size (1 MiB), pieces of 4 MiB and of odd sizes: the greedy cut."""
    text = b"".join(b"%d %s\n" % (i, b"y" * (i % 977)) for i in range(20_000))
    path = tmp_path / "big.log"
    path.write_bytes(text)
    for piece_bytes in (4 << 20, 1 << 20, 999_983, 65_537):
        pieces, report = _read(path, piece_bytes)
        assert pieces == _greedy(text, piece_bytes)
        assert report.lines == 20_000


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_a_stopped_file_is_cut_as_its_whole_read(
    tmp_path: Path, small_blocks: Callable[..., None], kind: str
) -> None:
    small_blocks(4, 1 << 20, 3)  # windows of 3 lines: 3 blank lines in a row stop the read
    text = b"job 1\njob 2\njob 3\n\n\n\n\n\n\njob 4\n" * 3
    path = tmp_path / f"stopped.{kind}"
    path.write_bytes(COMPRESS[kind](text))
    whole, whole_report = _read(path, 1 << 62)
    assert whole_report.tail_reason is not None
    assert whole_report.tail_reason.startswith(_io.REASON_STOPPED)
    for piece_bytes in (1, 5, 6, 7, 13, 100):
        pieces, report = _read(path, piece_bytes)
        assert pieces == _greedy(whole[0][0], piece_bytes)
        assert _report_fields(report) == _report_fields(whole_report)
