"""The Grid Engine reader's compiled kernels give the tables its numpy and Arrow paths give.

The kernels (field counts of the first pass, the split of a chunk's lines, the number fields
of the assembly) load once a process has read ``_KERNEL_MIN_LINES`` lines; these tests read the
same files with the kernels forced on and forced off and compare every table.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _sge
from gridtrace.logs._base import ParseResult
from gridtrace.logs._io import ReadReport
from gridtrace.logs._kernels import HAVE_NUMBA
from gridtrace.logs._ranges import sge_share, sge_width_of
from gridtrace.logs._sge import (
    SGE_FIELDS,
    SGE_STREAM,
    assemble_sge,
    sge_width,
    tokenize_sge_file,
)
from gridtrace.logs._stream import iter_chunks

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")

_BASE = {
    "qname": "all.q",
    "hostname": "node01",
    "group": "lab",
    "owner": "alice",
    "job_name": "sim",
    "job_number": "100",
    "account": "sge",
    "priority": "0",
    "submission_time": "1600000000",
    "start_time": "1600000100",
    "end_time": "1600003700",
    "failed": "0",
    "exit_status": "0",
    "ru_wallclock": "3600",
    "ru_utime": "3500.25",
    "ru_stime": "12.5",
    "ru_maxrss": "204800",
    "project": "NONE",
    "department": "defaultdepartment",
    "granted_pe": "NONE",
    "slots": "1",
    "task_number": "0",
    "cpu": "3512.75",
    "mem": "10.5",
    "io": "0.25",
    "category": "-l h_rt=7200,mem_free=2G",
    "iow": "0.000",
    "pe_taskid": "NONE",
    "maxvmem": "1073741824",
    "arid": "0",
    "ar_submission_time": "0",
}
_NUMBER_FORMS = [
    "0", "7", "-3", "1.", ".5", "1.25", "-0", "-0.0", "007", "1e5", "2.5E-3", "nan", "-nan",
    "inf", "-inf", "123456789012345678", "0.12345678901234567", "9007199254740993",
    "3600.000000", "",
]  # fmt: skip
_INT_FORMS = ["0", "1", "42", "-1", "137", "255", "0001", "12345678901234567", ""]


@st.composite
def _line(draw: st.DrawFn) -> bytes:
    """One accounting line: sound, or with the damage the reader must handle."""
    fields = [_BASE.get(name, "0") for name in SGE_FIELDS]
    index = {name: i for i, name in enumerate(SGE_FIELDS)}
    fields[index["job_number"]] = str(draw(st.integers(1, 6)))  # retries, copies, arrays
    fields[index["task_number"]] = draw(st.sampled_from(["0", "0", "1", "2"]))
    fields[index["submission_time"]] = draw(st.sampled_from(["1600000000", "0", "1600000050"]))
    fields[index["start_time"]] = draw(st.sampled_from(["1600000100", "0", "1600000100000"]))
    fields[index["failed"]] = draw(st.sampled_from(["0", "0", "25", "37", "100"]))
    fields[index["exit_status"]] = draw(st.sampled_from(["0", "1", "137", "255"]))
    fields[index["pe_taskid"]] = draw(st.sampled_from(["NONE", "NONE", "1.node02", ""]))
    fields[index["granted_pe"]] = draw(st.sampled_from(["NONE", "smp", "mpi"]))
    fields[index["slots"]] = draw(st.sampled_from(["1", "4", "16"]))
    for name in ("cpu", "ru_maxrss", "maxvmem", "ru_wallclock", "end_time"):
        if draw(st.booleans()):
            forms = _INT_FORMS if name == "end_time" else _NUMBER_FORMS
            if name == "ru_maxrss":  # KiB, times 1024 into int64: the reader fails above
                forms = [f for f in forms if len(f) < 16]
            fields[index[name]] = draw(st.sampled_from(forms))
    if draw(st.booleans()):  # not above 2**31 - 1: an int32 column (the reader fails on it)
        fields[index["slots"]] = draw(st.sampled_from(["0", "0001", "-1", "", "2147483647"]))
    for name in ("job_name", "account", "category"):  # free text, which may hold ':'
        if draw(st.integers(0, 4)) == 0:
            text = draw(st.sampled_from(["run:2", "a:b:c", ":", "x:", "-l h_rt=1:00:00"]))
            fields[index[name]] = text
    if draw(st.integers(0, 5)) == 0:  # an empty field anywhere
        fields[draw(st.integers(0, len(fields) - 1))] = ""
    width = draw(st.integers(42, 46))
    fields = fields[:width] + [f"x{i}" for i in range(width - len(fields))]
    line = ":".join(fields).encode()
    damage = draw(st.integers(0, 11))
    if damage == 0:
        line = line.replace(b"alice", b"al\xe9ce")  # Windows-1252
    elif damage == 1:
        line = line[:10] + b"\x00\x00" + line[10:]  # a NUL fragment
    elif damage == 2:
        line += b"\r"  # CR LF
    elif damage == 3:
        line = b"# Version: 8.1.9" if draw(st.booleans()) else b"# Version: 6.1"
    elif damage == 4:
        line = draw(st.sampled_from([b"", b"  ", b"garbage", b"1:2:3"]))
    elif damage == 5:
        line = "Ω:".encode() + line  # UTF-8, one more field
    return line


def _write(path: Path, lines: list[bytes], cut: int | None) -> Path:
    data = b"".join(line + b"\n" for line in lines)
    if cut is not None and lines:
        data = data[: max(0, len(data) - 1 - cut)]  # the last line loses its end and more
    path.write_bytes(data)
    return path


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Load the kernels (compiled on first use)."""
    monkeypatch.setattr(_sge, "_KERNEL_MIN_LINES", 0)


def _read(path: Path, *, on: bool, chunk_bytes: int) -> ParseResult:
    saved = _sge._KERNEL_MIN_LINES
    _sge._KERNEL_MIN_LINES = 0 if on else 1 << 62
    try:
        if on:
            assert _sge._use_kernel(0)
        else:
            assert not _sge._use_kernel(0)
        part = tokenize_sge_file(path, site="s", chunk_bytes=chunk_bytes)
        return assemble_sge([part])
    finally:
        _sge._KERNEL_MIN_LINES = saved


def _assert_same(a: ParseResult, b: ParseResult) -> None:
    assert a.records.equals(b.records)
    assert a.jobs.equals(b.jobs)
    assert a.quarantine.equals(b.quarantine)
    assert a.lines_read == b.lines_read == a.lines_parsed + a.lines_quarantined
    assert a.info == b.info


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    lines=st.lists(_line(), min_size=0, max_size=30),
    cut=st.none() | st.integers(0, 40),
    chunk_bytes=st.sampled_from([1, 700, 1 << 20]),
)
def test_kernels_give_the_tables_of_the_numpy_path(
    tmp_path: Path, lines: list[bytes], cut: int | None, chunk_bytes: int
) -> None:
    path = _write(tmp_path / "accounting", lines, cut)
    _assert_same(
        _read(path, on=True, chunk_bytes=chunk_bytes),
        _read(path, on=False, chunk_bytes=chunk_bytes),
    )


@pytest.mark.usefixtures("kernel")
@given(st.lists(st.text(alphabet=st.sampled_from(["a", ":", "é", "Ω", " ", "0"])), max_size=40))
def test_split_is_arrows_split(strings: list[str]) -> None:
    text = pa.array(strings, pa.string())
    for array in (text, text.slice(min(3, len(text)))):
        tokens, checked = _sge._split_colons(array)
        assert tokens.equals(pc.split_pattern(array, ":"))
        assert not checked.any()  # none has 43 fields


_FIELD_TEXT = st.one_of(
    st.sampled_from(
        _NUMBER_FORMS + _INT_FORMS + ["NaN", "-INF", "Inf", "infinity", "1.e5", ".e5", "1e", "e5"]
    ),
    st.text(
        alphabet=st.sampled_from(["1", "-", ".", "e", "E", "+", "n", "a", "i", "f", "é", "\r"])
    ),
)


@st.composite
def _checked_line(draw: st.DrawFn) -> str:
    fields = [_BASE.get(name, "0") for name in SGE_FIELDS]
    width = draw(st.integers(41, 48))
    fields = fields[:width] + ["x"] * (width - len(fields))
    for _ in range(draw(st.integers(0, 3))):
        fields[draw(st.integers(0, width - 1))] = draw(_FIELD_TEXT)
    return ":".join(fields) + draw(st.sampled_from(["", "\r", "\r\r", ":"]))


@pytest.mark.usefixtures("kernel")
@settings(max_examples=300, deadline=None)
@given(st.lists(_checked_line(), max_size=20))
def test_field_check_is_the_regular_expression(lines: list[str]) -> None:
    """The kernels' field check is ``_LINE``'s match (chunk lines) and ``_LINE_ENDED``'s."""
    text = pa.array(lines, pa.string())
    _, checked = _sge._split_colons(text)
    expected = pc.match_substring_regex(text, _sge._LINE, ignore_case=True)
    assert checked.tolist() == expected.to_pylist()
    data = "".join(line + "\n" for line in lines).encode()
    buffer = np.frombuffer(data, dtype=np.uint8)
    _, _, _, ended = _sge._line_fields(buffer, len(lines), _sge._KINDS)
    assert (
        ended.tolist()
        == pc.match_substring_regex(
            pa.array([line + "\n" for line in lines], pa.string()),
            _sge._LINE_ENDED,
            ignore_case=True,
        ).to_pylist()
    )


@pytest.mark.usefixtures("kernel")
@given(st.lists(_checked_line(), max_size=20), st.booleans())
def test_first_pass_counts_alike(lines: list[str], ended: bool) -> None:
    data = "\n".join(lines).encode() + (b"\n" if ended else b"")
    fast = _sge._good_counts(data)
    _sge._KERNEL_MIN_LINES = 1 << 62
    try:
        slow = _sge._good_counts(data)
    finally:
        _sge._KERNEL_MIN_LINES = 0
    assert fast[1] == slow[1]
    assert fast[0].tolist() == slow[0].tolist()


_NUMBER_TEXT = st.one_of(
    st.sampled_from(_NUMBER_FORMS + _INT_FORMS + ["1.2.3", "-", ".", "+1", " 1", "1_0"]),
    st.from_regex(r"\A-?[0-9]{0,18}(\.[0-9]{0,18})?\Z"),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


@pytest.mark.usefixtures("kernel")
@given(st.lists(st.lists(_NUMBER_TEXT, min_size=1, max_size=46), max_size=20))
def test_numbers_are_arrows_or_pythons(rows: list[list[str]]) -> None:
    """The kernel reads each number as Arrow's cast would (or Python's float, when Arrow fails)."""
    attrs = pa.array(
        [[(f"k{i}", v) for i, v in enumerate(row)] for row in rows],
        pa.map_(pa.string(), pa.string()),
    )
    table = pa.table({"attrs": attrs})
    for name in _sge._PARSED:
        fast = _sge._Fields(table)
        slow = _sge._Fields(table)
        slow.parsed = {}  # no kernel: Arrow's cast of the whole field, else Python's float
        np.testing.assert_array_equal(fast.number(name), slow.number(name))
        np.testing.assert_array_equal(fast.unreadable, slow.unreadable)
        # the sign of a zero too
        assert np.array_equal(np.signbit(fast.number(name)), np.signbit(slow.number(name)))


def test_width_share_is_the_ranges(tmp_path: Path) -> None:
    """``_ranges``' Grid Engine pass is the reader's own: same counts, same usual width."""
    fields = [_BASE.get(name, "0") for name in SGE_FIELDS]
    lines = [":".join([*fields, "x"]).encode()] * 3 + [":".join(fields).encode()]
    path = _write(tmp_path / "accounting", [b"# Version: 6.1", *lines], None)
    report = ReadReport(str(path), None)
    share = sge_share(iter_chunks(path, report, chunk_bytes=64))
    assert share == _sge._width_share(iter_chunks(path, report, chunk_bytes=64))
    assert share == ({46: 3, 45: 1}, True)
    assert sge_width_of([share]) == sge_width(path) == 46
    assert sge_width_of([({}, True)]) == 43
    assert sge_width_of([({}, False), ({45: 2, 44: 2}, False)]) == 44


def test_range_start_is_a_named_picklable_function() -> None:
    split = SGE_STREAM.split
    assert split is not None
    assert split.start is not None
    start = pickle.loads(pickle.dumps(split.start))
    assert start.__name__ != "<lambda>"
    assert start("accounting", 43).width == 43


def _real_files() -> list[Path]:
    root = os.environ.get("GRIDTRACE_REAL_DATA")
    if not root:
        return []
    return sorted(p for p in (Path(root) / "other" / "sge").glob("*") if p.is_file())


@pytest.mark.skipif(not os.environ.get("GRIDTRACE_REAL_DATA"), reason="GRIDTRACE_REAL_DATA unset")
@pytest.mark.parametrize("path", _real_files(), ids=lambda p: p.name)
def test_real_files_read_alike(path: Path) -> None:
    for chunk_bytes in (1 << 12, 1 << 22):
        _assert_same(
            _read(path, on=True, chunk_bytes=chunk_bytes),
            _read(path, on=False, chunk_bytes=chunk_bytes),
        )
