"""TORQUE tokenising on the core without the core's extra costs: same rows, fewer passes.

The flavour is sniffed once per file: the head's rest is taken from the next chunk the core
holds (``Chunk.ahead``), not by carrying the first chunk into the second; the PBS Pro markers
are found by a compiled pass once the kernel is loaded. Each must give what the slower way
gives.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from gridtrace.logs import _torque
from gridtrace.logs import _torque_fast as fast
from gridtrace.logs._base import FileParse
from gridtrace.logs._io import ReadReport
from gridtrace.logs._stream import StreamStats, iter_chunks
from gridtrace.logs._torque import tokenize_torque_file

from .test_torque_stream import _generated, _whole_file

pytestmark = pytest.mark.skipif(not fast.HAVE_NUMBA, reason="numba is not installed")

MARKERS = (b";L;", b" exec_vnode=", b" run_count=")


def _same(a: FileParse, b: FileParse) -> None:
    assert a.lines_read == b.lines_read
    assert a.records.equals(b.records)
    assert a.quarantine.equals(b.quarantine)


@settings(max_examples=300, deadline=None)
@given(
    data=st.lists(st.sampled_from(b";L =exc_vnoderu\n")).map(bytes),
    extra=st.lists(st.binary(min_size=2, max_size=12), max_size=2),
)
def test_the_compiled_marker_search_finds_what_bytes_search_finds(
    data: bytes, extra: list[bytes]
) -> None:
    assert fast._compile_kernel()
    markers = MARKERS + tuple(extra)
    for marker in markers:
        assert fast.contains_any(data, (marker,)) == (marker in data)
        # a marker put in at the start, the middle and the end is found
        for at in (0, len(data) // 2, len(data)):
            assert fast.contains_any(data[:at] + marker + data[at:], (marker,))
    assert fast.contains_any(data, markers) == any(m in data for m in markers)


def test_without_the_kernel_loaded_the_search_loads_no_numba(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fast, "_kernel_ready", lambda: False)

    def no_compile() -> bool:
        raise AssertionError("the kernel was loaded")

    monkeypatch.setattr(fast, "_compile_kernel", no_compile)
    assert fast.contains_any(b"x;L;y", MARKERS)
    assert not fast.contains_any(b"x exec_vnode y", MARKERS)


def test_every_chunk_but_the_last_knows_the_next(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(_generated(500))
    chunks = list(iter_chunks(path, ReadReport(str(path), None), chunk_bytes=4096))
    assert len(chunks) > 3
    for chunk, following in pairwise(chunks):
        assert chunk.ahead is following.data
    assert chunks[-1].final
    assert chunks[-1].ahead == b""


@pytest.mark.parametrize("at", [100, 1200, 1990, 2100])
@pytest.mark.parametrize("size", [1300, 1500, 1999, 2000])
def test_the_head_is_completed_from_the_next_chunk_without_reading_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: int, size: int
) -> None:
    monkeypatch.setattr(_torque, "_FLAVOUR_SNIFF_BYTES", 2000)
    body = _generated(200)
    line_end = body.index(b"\n", at)
    marker = b" run_count=1"
    data = body[:line_end] + marker + body[line_end:]
    path = tmp_path / "pbs.log"
    path.write_bytes(data)

    def no_second_read(*args: object, **kwargs: object) -> object:
        raise AssertionError("the head was read again")

    monkeypatch.setattr(_torque, "guarded_pieces", no_second_read)
    stats = StreamStats()
    parsed = tokenize_torque_file(path, site="s", chunk_bytes=size, stats=stats)
    _same(parsed, _whole_file(path, sniff=2000))
    expected = "pbspro" if data.find(marker) + len(marker) <= 2000 else "torque"
    assert set(parsed.records.column("source_format").to_pylist()) == {expected}
    # the first chunk is tokenised where it is read: nothing carried into the second
    assert stats.per_chunk[0][0] > 0
    assert stats.chunks == len(list(iter_chunks(path, ReadReport("", None), chunk_bytes=size)))
