"""TORQUE on the streaming core: any chunk size gives the rows of the file read in one piece.

``tokenize_torque_file`` reads a file in chunks of whole lines (issue 17, item 1); what it returns
must be what the whole-file reader returned: the reference tokeniser over the whole decompressed
file, with the flavour (``torque`` or ``pbspro``) sniffed from the file's first 4 MiB. That
reader is written out here (:func:`_whole_file`) and compared with the stream on generated logs
with damaged, quoted and broken lines, at every chunk size, and on the real VSC days.
"""

from __future__ import annotations

import gzip
import pickle
from pathlib import Path

import hypothesis.strategies as st
import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings

from gridtrace.logs import _torque
from gridtrace.logs import _torque_fast as fast
from gridtrace.logs._base import FileParse, tokenize_guarded
from gridtrace.logs._io import read_log_bytes
from gridtrace.logs._stream import StreamStats, write_stream
from gridtrace.logs._torque import read_torque, tokenize_torque_file, torque_stream
from gridtrace.logs._torque_lines import tokenize_torque_reference

from .test_torque_damage import LITERAL, damaged_file

VSC = "vsc-kuleuven-2016-06"
CHUNK_SIZES = (1, 97, 1000, 4096, 1 << 20)


def _whole_file(path: Path, sniff: int = 4 << 20) -> FileParse:
    """What ``tokenize_torque_file`` returned before the core: the whole file in one piece."""
    data = read_log_bytes(path)
    markers = (b";L;", b" exec_vnode=", b" run_count=")
    flavour = "pbspro" if any(m in data[:sniff] for m in markers) else "torque"
    return tokenize_torque_reference(data, src_file=str(path), site="s", source_format=flavour)


def _same(a: FileParse, b: FileParse) -> None:
    assert a.lines_read == b.lines_read
    assert a.records.equals(b.records)
    assert a.quarantine.equals(b.quarantine)


def _streamed(path: Path, size: int) -> tuple[FileParse, StreamStats]:
    stats = StreamStats()
    parsed = tokenize_torque_file(path, site="s", chunk_bytes=size, stats=stats)
    assert stats.reconciled
    assert stats.lines_read == parsed.lines_read
    return parsed, stats


def _job(i: int, *, quoted: bool = False) -> bytes:
    stamp = f"05/03/2024 {i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}"
    account = ' account="my project"' if quoted else ""
    return (
        f"{stamp};E;{1000 + i}.pbs01;user=u{i % 7} group=g queue=grid{account} "
        f"ctime={1714723000 + i} start={1714723100 + i} exec_host=n{i % 50:03d}/0-3 "
        f"end={1714730000 + i} Exit_status={i % 3} resources_used.walltime=01:00:00"
    ).encode()


def _generated(lines: int, *, seed: int = 17) -> bytes:
    """A TORQUE log with, among clean lines, damaged, quoted and broken ones."""
    rng = np.random.default_rng(seed)
    damage = [
        b"",
        b"\x00" * 40,
        b"garbage; not a record",
        b"05/03/2024 12:00:00;E;7.pbs01;user=\xe9l\xe8ve end=1 Exit_status=0",
        b"05/03/2024 12:00:00;Q;8.pbs01;queue=grid queue=long bare",
        b"13/45/2024 12:00:00;Q;9.pbs01;queue=grid",
        b"05/03/2024 12:00:00;S;10.pbs01;start=1 exec_host=n1/0\r",
        _job(3)[:50] + b"\x00\x00" + _job(4),
    ]
    out = []
    for i in range(lines):
        pick = rng.random()
        if pick < 0.05:
            out.append(damage[int(rng.integers(len(damage)))])
        else:
            out.append(_job(i, quoted=pick > 0.9))
    return b"\n".join(out) + b"\n"


# --------------------------------------------------------------------------- chunk-size invariance


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    files=st.lists(damaged_file(), min_size=1, max_size=3),
    size=st.integers(min_value=1, max_value=400),
    pbspro=st.booleans(),
)
def test_any_chunk_size_gives_the_rows_of_the_file_read_whole(
    tmp_path: Path, files: list[bytes], size: int, pbspro: bool
) -> None:
    data = b"".join(files)
    if pbspro:  # a licence record makes it a PBS Pro log
        data = LITERAL[6] + b"\n" + data
    path = tmp_path / "gen"
    path.write_bytes(data)
    parsed, _ = _streamed(path, size)
    _same(parsed, _whole_file(path))
    if pbspro:
        assert set(parsed.records.column("source_format").to_pylist()) == {"pbspro"}


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_a_generated_log_gives_the_same_rows_at_every_chunk_size(
    tmp_path: Path, compression: str | None
) -> None:
    data = _generated(1200)
    path = tmp_path / "gen.log"
    path.write_bytes(gzip.compress(data) if compression else data)
    whole = _whole_file(path)
    assert whole.quarantine.num_rows > 10  # damaged lines of every kind are in it
    assert any("NON_UTF8" in flags for flags in whole.records.column("flags").to_pylist())
    for size in CHUNK_SIZES[1:]:
        _same(_streamed(path, size)[0], whole)


@pytest.mark.parametrize("cut", [0, 1, 37])
def test_a_last_line_without_its_end_is_read_whatever_the_chunk(tmp_path: Path, cut: int) -> None:
    data = _generated(399) + _job(999)  # no final line end: a crash cut the last record
    data = data[: len(data) - cut]
    path = tmp_path / "cut.log"
    path.write_bytes(data)
    whole = _whole_file(path)
    last = whole.records.slice(whole.records.num_rows - 1).to_pylist()[0]
    assert "NO_NEWLINE" in last["flags"]
    for size in (64, 1000, 1 << 20):
        _same(_streamed(path, size)[0], whole)


# --------------------------------------------------------------------------- the flavour sniff


@pytest.mark.parametrize("at", [10, 1950, 1999, 2000, 2500])
def test_the_flavour_is_that_of_the_files_head_whatever_the_chunk(
    tmp_path: Path, at: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a 2,000-byte head, so that a marker before, across and after its end is cheap to place
    monkeypatch.setattr(_torque, "_FLAVOUR_SNIFF_BYTES", 2000)
    body = _generated(60)
    marker = b" run_count=1"
    line_end = body.index(b"\n", at)  # put the marker at the end of the line around `at`
    data = body[:line_end] + marker + body[line_end:]
    path = tmp_path / "pbs.log"
    path.write_bytes(data)
    whole = _whole_file(path, sniff=2000)
    expected = "pbspro" if data.find(marker) + len(marker) <= 2000 else "torque"
    assert set(whole.records.column("source_format").to_pylist()) == {expected}
    for size in (1, 300, 1200, 1999, 2000, 2001, 1 << 20):
        _same(_streamed(path, size)[0], whole)


@pytest.mark.parametrize(("size", "head_read"), [(500, True), (1900, False)])
def test_the_head_is_read_again_only_for_small_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int, head_read: bool
) -> None:
    # a chunk of at least half the head is carried on into the next instead (no second read)
    monkeypatch.setattr(_torque, "_FLAVOUR_SNIFF_BYTES", 2000)
    path = tmp_path / "long.log"
    path.write_bytes(_generated(2000))
    read: list[int] = []
    pieces = _torque.guarded_pieces

    def counted(*args: object) -> object:
        for piece in pieces(*args):  # type: ignore[arg-type]
            read.append(len(piece[0]))
            yield piece

    monkeypatch.setattr(_torque, "guarded_pieces", counted)
    parsed, _ = _streamed(path, size)
    _same(parsed, _whole_file(path, sniff=2000))
    if head_read:  # the head and the piece that completes it, no more
        assert 2000 <= sum(read) < 2000 + 2 * 2000
    else:
        assert read == []


# --------------------------------------------------------------------------- chunks and counts


def _greedy_chunks(data: bytes, size: int) -> int:
    chunks = held = 0
    for line in data.splitlines(keepends=True):
        if held and held + len(line) > size:
            chunks += 1
            held = 0
        held += len(line)
    return chunks + (1 if held or not chunks else 0)


def test_a_generated_log_is_read_in_the_chunks_asked_for(tmp_path: Path) -> None:
    data = _generated(20_000)
    path = tmp_path / "big.log"
    path.write_bytes(data)
    whole = _whole_file(path)
    for size in (64 << 10, 1 << 20):
        parsed, stats = _streamed(path, size)
        _same(parsed, whole)
        assert stats.chunks == _greedy_chunks(data, size) > 1
        assert stats.largest_chunk <= size
        assert sum(lines for lines, _, _ in stats.per_chunk) == data.count(b"\n") == 20_000
        assert stats.lines_quarantined == whole.quarantine.num_rows


def test_an_empty_file_is_one_empty_chunk(tmp_path: Path) -> None:
    path = tmp_path / "empty"
    path.write_bytes(b"")
    parsed, stats = _streamed(path, 100)
    assert stats.chunks == 1
    assert parsed.lines_read == parsed.records.num_rows == parsed.quarantine.num_rows == 0


def test_the_streaming_writer_writes_the_tables_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "w.log"
    path.write_bytes(_generated(2000))
    records, quarantine = tmp_path / "records.parquet", tmp_path / "quarantine.parquet"
    stats = write_stream(path, torque_stream(path), records, quarantine, site="s", chunk_bytes=8192)
    whole = _whole_file(path)
    assert stats.chunks > 10
    assert stats.reconciled
    for written, table in ((records, whole.records), (quarantine, whole.quarantine)):
        read = pq.read_table(written)
        assert pq.ParquetFile(written).num_row_groups == stats.chunks
        assert read.equals(table.cast(read.schema))


# --------------------------------------------------------------------------- kernel or reference


def test_a_file_of_one_chunk_may_go_to_the_reference_a_larger_one_to_the_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, int]] = []
    kernel, reference = fast.tokenize_torque, fast.tokenize_torque_reference

    def by_kernel(data: bytes, **names: object) -> FileParse:
        calls.append(("kernel", data.count(b"\n")))
        return kernel(data, **names)  # type: ignore[arg-type]

    def by_reference(data: bytes, **names: object) -> FileParse:
        calls.append(("reference", data.count(b"\n")))
        return reference(data, **names)  # type: ignore[arg-type]

    monkeypatch.setattr(fast, "_kernel_ready", lambda: False)
    monkeypatch.setattr(fast, "_reference_lines", 0)
    monkeypatch.setattr(fast, "tokenize_torque", by_kernel)
    monkeypatch.setattr(fast, "tokenize_torque_reference", by_reference)
    path = tmp_path / "day.log"
    path.write_bytes(_generated(300))
    whole = _whole_file(path)
    _same(_streamed(path, 1 << 20)[0], whole)  # one chunk: a process's first lines
    assert calls == [("reference", 300)]
    calls.clear()
    _same(_streamed(path, 8192)[0], whole)  # several: a larger file, the kernel loads
    assert {how for how, _ in calls} == {"kernel"}
    assert sum(lines for _, lines in calls) == 300


def test_read_torque_gives_the_tables_of_the_whole_files(tmp_path: Path) -> None:
    paths = []
    for day in range(3):
        path = tmp_path / f"2024050{day + 1}"
        path.write_bytes(_generated(500, seed=day))
        paths.append(path)
    result = read_torque(paths, site="s", errors="skip")
    whole = [_whole_file(p) for p in paths]
    assert result.lines_read == sum(w.lines_read for w in whole) == 1500
    assert result.lines_read == result.lines_parsed + result.lines_quarantined
    assert result.quarantine.num_rows == sum(w.quarantine.num_rows for w in whole)


def test_the_tokeniser_pickles_by_reference() -> None:
    # dask's process workers are sent the module-level function by name
    assert pickle.loads(pickle.dumps(tokenize_torque_file)) is tokenize_torque_file


# --------------------------------------------------------------------------- real logs


@pytest.mark.realdata
def test_the_real_vsc_days_give_the_rows_of_the_files_read_whole(real_data: Path) -> None:
    folder = real_data / "torque" / VSC
    if not folder.is_dir():
        pytest.skip(f"{folder} is missing")
    days = sorted(folder.glob("*.gz"))
    assert len(days) == 30
    for day in days:
        whole = _whole_file(day)
        assert whole.records.num_rows > 0
        for size in (4096, 65536, 1 << 22):
            parsed = tokenize_guarded(
                tokenize_torque_file, day, site="s", source_format="torque", chunk_bytes=size
            )
            _same(parsed, whole)


@pytest.mark.realdata
def test_the_real_pbspro_day_is_read_as_pbspro_in_small_chunks(real_data: Path) -> None:
    path = real_data / "torque" / "ncar-laramie-pbspro-20180212"
    if not path.is_file():
        pytest.skip(f"{path} is missing")
    whole = _whole_file(path)
    assert set(whole.records.column("source_format").to_pylist()) == {"pbspro"}
    for size in (1, 512, 8192):
        _same(_streamed(path, size)[0], whole)
