"""The TORQUE kernel, told the chunk's line count, gives the reference's rows: whatever it is told.

The streaming core counts each chunk's lines as it reads them, and the kernel takes that count
instead of counting again, with room for tokens guessed from the chunk's size. A count that is
too small, or tokens that fill their room, make it count and start again; a count too large is
only an upper bound. These tests check that every such path, and every chunk size of a file read
through the core, gives exactly the rows of the reference tokeniser (line by line, the whole
file at once), on generated and fuzzed logs of both flavours: quoted values with spaces and
``=``, empty values, repeated keys, non-UTF-8 bytes, CRLF line ends, lines cut at chunk edges.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from gridtrace.logs import _torque_fast as fast
from gridtrace.logs._base import FileParse
from gridtrace.logs._io import read_log_bytes
from gridtrace.logs._stream import StreamStats
from gridtrace.logs._torque import tokenize_torque_file
from gridtrace.logs._torque_lines import tokenize_torque_reference

pytest.importorskip("numba", reason="numba is not installed: the fast path is the reference")

NAMES = {"src_file": "accounting/20240503", "site": "test", "source_format": "torque"}
_PBSPRO_MARKERS = (b";L;", b" exec_vnode=", b" run_count=")


@pytest.fixture(autouse=True)
def _kernel() -> None:
    assert fast._compile_kernel()


def _same(got: FileParse, want: FileParse) -> None:
    assert got.lines_read == want.lines_read
    assert got.records.equals(want.records)
    assert got.quarantine.equals(want.quarantine)


def _reference(data: bytes, **names: str) -> FileParse:
    return tokenize_torque_reference(data, **{**NAMES, **names})


# --- lines of both flavours, clean and not -------------------------------------------------------

_KEYS = [
    b"user",
    b"group",
    b"queue",
    b"account",
    b"ctime",
    b"start",
    b"end",
    b"Exit_status",
    b"exec_host",
    b"Resource_List.select",
    b"Resource_List.walltime",
    b"resources_used.mem",
    b"exec_vnode",  # PBS Pro
    b"run_count",  # PBS Pro
    b"",
]
_VALUES = [
    b"",
    b"bob",
    b"1714723100",
    b"n001/0-3+n002/0-3",
    b"2:ncpus=8:mem=4gb",
    b'"my project"',
    b'"a=b c"',
    b'"(r1i0n2:ncpus=12)+(r1i0n3:ncpus=12)"',
    b'"unbalanced',
    b"01:00:00",
    b"x=y=z",
    b'""',
]
_ODD = [b"\xe9", b"\xff\xfe", b"\xc3\xa9", b"\x00", b"\x00" * 8, b"\t", b"\r", b"\x7f", b"bare"]


@st.composite
def _line(draw: st.DrawFn) -> bytes:
    month, day = draw(st.sampled_from([(5, 3), (12, 31), (13, 1), (2, 0)]))
    stamp = f"{month:02d}/{day:02d}/2024 {draw(st.integers(0, 24)):02d}:00:00"
    kind = draw(st.sampled_from(b"QSEEEDARL"))
    job = draw(st.sampled_from([b"101.pbs01", b"4576[12].server", b"7904", b""]))
    keys = draw(st.lists(st.sampled_from(_KEYS), max_size=10))  # small pool: keys repeat
    tokens = [key + b"=" + draw(st.sampled_from(_VALUES)) for key in keys]
    sep = draw(st.sampled_from([b" ", b" ", b"  "]))
    line = stamp.encode() + b";" + bytes([kind]) + b";" + job + b";" + sep.join(tokens)
    if draw(st.integers(0, 5)) == 0:  # one odd byte somewhere
        at = draw(st.integers(0, len(line)))
        line = line[:at] + draw(st.sampled_from(_ODD)) + line[at:]
    return line.replace(b"\n", b" ")


_LOG = st.tuples(
    st.lists(_line() | st.sampled_from([b"", b"garbage", b"\x00\x00"]), max_size=25),
    st.sampled_from([b"\n", b"\r\n"]),  # how lines end
    st.sampled_from([b"\n", b"", b"\r\n"]),  # how the last one ends
)


def _joined(log: tuple[list[bytes], bytes, bytes]) -> bytes:
    lines, end, last = log
    data = end.join(lines)
    return data + last if lines else b""


# --- the line count the kernel is told ---------------------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=_LOG, error=st.sampled_from([0, -1, -7, 1, 50]))
def test_a_told_line_count_right_or_wrong_gives_the_reference_rows(
    log: tuple[list[bytes], bytes, bytes], error: int
) -> None:
    data = _joined(log)
    lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    told = max(lines + error, 0)
    _same(fast.tokenize_torque(data, lines=told, **NAMES), _reference(data))


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(log=_LOG)
def test_tokens_that_fill_their_room_are_counted_and_read_again(
    log: tuple[list[bytes], bytes, bytes], monkeypatch_room: None
) -> None:
    data = _joined(log)
    lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    _same(fast.tokenize_torque(data, lines=lines, **NAMES), _reference(data))


@pytest.fixture
def monkeypatch_room(monkeypatch: pytest.MonkeyPatch) -> None:
    # room for one line's worst case only: any chunk with a token more goes the counted way
    monkeypatch.setattr(fast, "_TOKEN_BYTES", 1 << 40)


def test_many_tokens_in_a_chunk_take_the_counted_way_with_the_same_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    line = b"05/03/2024 12:00:00;E;101.pbs01;" + b" ".join(b"k%d=v" % i for i in range(40))
    data = b"\n".join([line] * 200) + b"\n"  # 8,000 tokens, room for 4,096
    calls: list[int] = []
    kernel = fast._tokenize_chunk

    def counted(*args: object) -> object:
        calls.append(1)
        return kernel(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(fast, "_TOKEN_BYTES", 1 << 40)
    monkeypatch.setattr(fast, "_tokenize_chunk", counted)
    got = fast.tokenize_torque(data, lines=200, **NAMES)
    assert len(calls) == 2  # the guess, then the count
    assert got.records.num_rows == 200
    _same(got, _reference(data))


def test_a_line_of_more_tokens_than_the_hash_set_holds_is_left_to_the_reference() -> None:
    many = b" ".join(b"k%d=v" % i for i in range(fast._KEY_SLOTS // 2 + 1))
    just = b" ".join(b"k%d=v" % i for i in range(fast._KEY_SLOTS // 2))
    head = b"05/03/2024 12:00:00;E;101.pbs01;"
    data = head + many + b"\n" + head + just + b"\n"
    tokens = fast._tokens(data, 0, len(data), 2)
    assert tokens.fast.tolist() == [False, True]
    _same(fast.tokenize_torque(data, lines=2, **NAMES), _reference(data))


def test_the_kernel_returns_the_bytes_it_found_and_no_more() -> None:
    line = b"05/03/2024 12:00:00;Q;101.pbs01;queue=grid user=bob"
    data = b"\n".join([line] * 1000) + b"\n"
    tokens = fast._tokens(data, 0, len(data), 1000)
    assert tokens.keys.nbytes == 1000 * len(b"queueuser")
    assert tokens.values.nbytes == 1000 * len(b"gridbob")
    assert tokens.ids.nbytes == 1000 * len(b"101.pbs01")
    assert len(tokens.key_offsets) == len(tokens.value_offsets) == 2001


def test_constant_columns_are_right_for_every_file_and_chunk_size() -> None:
    line = b"05/03/2024 12:00:00;Q;101.pbs01;queue=grid"
    for size in (5, 3, 12, 1, 12):  # shorter and longer than the column built before
        for i in range(12):  # more files than the columns kept
            names = {**NAMES, "src_file": f"f{i}"}
            data = b"\n".join([line] * size) + b"\n"
            got = fast.tokenize_torque(data, lines=size, **names)
            assert got.records.column("src_file").to_pylist() == [f"f{i}"] * size
            _same(got, _reference(data, src_file=f"f{i}"))


# --- a file through the streaming core, lines cut at chunk edges -------------------------------


def _whole(path: Path) -> FileParse:
    data = read_log_bytes(path)
    flavour = "pbspro" if any(m in data for m in _PBSPRO_MARKERS) else "torque"
    return tokenize_torque_reference(data, src_file=str(path), site="s", source_format=flavour)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=_LOG, chunk_bytes=st.sampled_from([1, 64, 97, 333, 4096]))
def test_any_chunk_size_gives_the_rows_of_the_whole_file(
    log: tuple[list[bytes], bytes, bytes], chunk_bytes: int
) -> None:
    data = _joined(log)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "20240503"
        path.write_bytes(data)
        stats = StreamStats()
        got = tokenize_torque_file(path, site="s", chunk_bytes=chunk_bytes, stats=stats)
        assert stats.reconciled
        _same(got, _whole(path))


@pytest.mark.parametrize("flavour", ["torque", "pbspro"])
@pytest.mark.parametrize("chunk_bytes", [200, 4096, 1 << 20])
def test_a_generated_log_of_each_flavour_streams_to_the_reference_rows(
    tmp_path: Path, flavour: str, chunk_bytes: int
) -> None:
    lines = []
    for i in range(3000):
        stamp = f"05/03/2024 {i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}"
        job = f"{1000 + i // 3}.pbs01"
        kind = "QSE"[i % 3]
        extra = (
            f' account="proj {i % 5}" exec_vnode=(n{i % 9}:ncpus=4) run_count=1'
            if flavour == "pbspro"
            else f" account=proj{i % 5} exec_host=n{i % 9}/0-3"
        )
        line = f"{stamp};{kind};{job};user=u{i % 7} queue=q{extra} Exit_status={i % 3}"
        if i % 500 == 7:
            line += " queue=again"  # a repeated key: the reference's
        if i % 700 == 3:
            line = line.replace("user=", "user=\udce9l\udce8ve")  # not UTF-8
        lines.append(line.encode("utf-8", "surrogateescape"))
    path = tmp_path / "20240503"
    path.write_bytes(b"\r\n".join(lines[:1500]) + b"\r\n" + b"\n".join(lines[1500:]))
    stats = StreamStats()
    got = tokenize_torque_file(path, site="s", chunk_bytes=chunk_bytes, stats=stats)
    assert stats.reconciled
    assert got.lines_read == 3000
    assert set(got.records.column("source_format").to_pylist()) == {flavour}
    _same(got, _whole(path))
