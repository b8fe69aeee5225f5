"""The Grid Engine reader's fast paths give what its reference paths give.

* A UTF-8 chunk is split into lines and fields by one kernel walk (``_chunk_fields``): the
  same lines, flags, field check, fields and bytes as ``split_lines`` and Arrow's split.
* The assembly reads the records' fields chunk by chunk: the same values as one array.
* (job, task) pairs are compared as one integer key: the same as pandas on the two columns.
"""

from __future__ import annotations

import os
from itertools import pairwise
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _sge
from gridtrace.logs._kernels import HAVE_NUMBA
from gridtrace.logs._sge import SGE_FIELDS, assemble_sge, tokenize_sge_file

_NUMBERS = [
    "0", "7", "-3", "1.", ".5", "1.25", "-0", "-0.0", "007", "1e5", "2.5E-3", "1e", "e5", ".",
    "-", "nan", "-NaN", "inf", "-inf", "infinity", "1.2.3", "123456789012345678", "3600.000000",
    "", " 1", "1 ",
]  # fmt: skip
_TEXTS = ["", "all.q", "run:2", "a:b:c", ":", "x:", "-l h_rt=1:00:00", "é", "Ω", "\t"]


@st.composite
def _line(draw: st.DrawFn) -> bytes:
    """A line of 42 to 46 fields (numbers of every form, empty fields), or damaged."""
    width = draw(st.integers(42, 46))
    fields = [
        draw(st.sampled_from(_NUMBERS))
        if draw(st.integers(0, 3)) == 0
        else ("all.q" if i < len(SGE_FIELDS) and SGE_FIELDS[i] == "qname" else "0")
        for i in range(width)
    ]
    for _ in range(draw(st.integers(0, 2))):
        fields[draw(st.integers(0, width - 1))] = draw(st.sampled_from(_TEXTS))
    line = ":".join(fields).encode()
    damage = draw(st.integers(0, 9))
    if damage == 0:
        line = line[:5] + b"\x00" + line[5:]  # a NUL fragment
    elif damage == 1:
        line += draw(st.sampled_from([b"\r", b"\r\r", b" \r"]))  # CR LF, a CR kept
    elif damage == 2:
        line = draw(st.sampled_from([b"# Version: 8.1.9", b"#", b"#a:b", b"# Version: 6.0"]))
    elif damage == 3:
        line = draw(st.sampled_from([b"", b" ", b"\t", "\u2003".encode(), b"\r", b"x", b"1:2"]))
    elif damage == 4:
        line = b"#" + line  # a comment with the fields of a record
    return line


def _lines_of(data: bytes, *, on: bool) -> _sge._SgeLines:
    saved = _sge._KERNEL_MIN_LINES
    _sge._KERNEL_MIN_LINES = 0 if on else 1 << 62
    try:
        assert _sge._use_kernel(0) == on
        return _sge._sge_lines(data)
    finally:
        _sge._KERNEL_MIN_LINES = saved


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
@settings(max_examples=80, deadline=None)
@given(st.lists(_line(), max_size=25), st.sampled_from([b"\n", b"", b"\r", b"\r\n"]))
def test_chunk_split_is_the_reference(lines: list[bytes], end: bytes) -> None:
    data = b"\n".join(lines) + end
    fast = _lines_of(data, on=True)
    slow = _lines_of(data, on=False)
    assert fast.raw_lines is None  # the kernel's path was taken (the chunk is UTF-8)
    assert fast.n == slow.n
    assert fast.no_newline == slow.no_newline
    for name in ("crlf", "nul", "non_utf8", "blank", "comment", "checked", "counts"):
        assert getattr(fast, name).tolist() == getattr(slow, name).tolist(), name
    assert fast.tokens.equals(slow.tokens)
    rows = np.arange(fast.n, dtype=np.int64)
    assert [fast.raw(int(i)) for i in rows] == [slow.raw(int(i)) for i in rows]
    assert fast.texts(rows) == slow.texts(rows)
    assert fast.binary_take(rows).equals(slow.binary_take(rows))


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
def test_a_chunk_that_is_not_utf8_takes_the_reference_path() -> None:
    fields = ["0"] * len(SGE_FIELDS)
    fields[SGE_FIELDS.index("owner")] = "al\xe9ce"
    data = ":".join(fields).encode("cp1252") + b"\n"
    lines = _lines_of(data, on=True)
    assert lines.raw_lines is not None
    assert lines.non_utf8.tolist() == [True]
    assert lines.checked.tolist() == [True]


_KEY_VALUES = [0.0, 1.0, 2.0, 7.0, 2.0**31 - 1, 2.0**31, 2.0**40, 1.5, -1.0, 1e300, np.nan]


@given(st.lists(st.tuples(st.sampled_from(_KEY_VALUES), st.sampled_from(_KEY_VALUES)), max_size=40))
def test_shared_pairs_are_pandas(pairs: list[tuple[float, float]]) -> None:
    job = np.array([p[0] for p in pairs], dtype=np.float64)
    task = np.array([p[1] for p in pairs], dtype=np.float64)
    expected = pd.DataFrame({"job": job, "task": task}).duplicated(keep=False).to_numpy()
    assert _sge._shared(job, task).tolist() == expected.tolist()


def test_pair_keys_are_whole_numbers_only() -> None:
    keys = _sge._pair_keys(np.array([1.0, 1.0, 2.0]), np.array([np.nan, 0.0, 0.0]))
    assert keys is not None
    assert len(set(keys.tolist())) == 3  # a missing task is not task 0
    assert _sge._pair_keys(np.array([1.5]), np.array([0.0])) is None
    assert _sge._pair_keys(np.array([np.nan]), np.array([0.0])) is None
    assert _sge._pair_keys(np.array([2.0**31]), np.array([0.0])) is None


@st.composite
def _records(draw: st.DrawFn) -> list[list[tuple[str, str]]]:
    rows = []
    for _ in range(draw(st.integers(1, 30))):
        width = draw(st.integers(_sge._I["job_number"] + 1, 46))
        values = [draw(st.sampled_from(_NUMBERS + _TEXTS)) for _ in range(width)]
        rows.append([(f"k{i}", v) for i, v in enumerate(values)])
    return rows


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_records(), st.integers(1, 5), st.booleans())
def test_fields_chunk_by_chunk_are_one_array(
    rows: list[list[tuple[str, str]]], chunks: int, kernel: bool
) -> None:
    """Texts and numbers of a table in several chunks are those of the same table in one."""
    table = pa.table({"attrs": pa.array(rows, pa.map_(pa.string(), pa.string()))})
    bounds = np.linspace(0, len(rows), chunks + 1).astype(int)
    chunked = pa.concat_tables([table.slice(int(a), int(b - a)) for a, b in pairwise(bounds)])
    saved = _sge._KERNEL_MIN_LINES
    _sge._KERNEL_MIN_LINES = 0 if kernel and HAVE_NUMBA else 1 << 62
    try:
        whole, parts = _sge._Fields(table), _sge._Fields(chunked)
        names = ("hostname", *_sge._KEPT_TEXT)
        many, one = parts.texts(names), whole.texts(names)
        for name in names:
            assert many[name].equals(one[name]), name
        for name in _sge._PARSED:
            np.testing.assert_array_equal(parts.number(name), whole.number(name))
        np.testing.assert_array_equal(parts.unreadable, whole.unreadable)
    finally:
        _sge._KERNEL_MIN_LINES = saved


@pytest.mark.skipif(not os.environ.get("GRIDTRACE_REAL_DATA"), reason="GRIDTRACE_REAL_DATA unset")
def test_real_file_in_small_chunks_reads_as_in_one() -> None:
    path = Path(os.environ["GRIDTRACE_REAL_DATA"]) / "other" / "sge"
    path = path / "ucsf-wynton-sge-8.1.9-accounting"
    small = assemble_sge([tokenize_sge_file(path, site="s", chunk_bytes=1 << 14)])
    whole = assemble_sge([tokenize_sge_file(path, site="s", chunk_bytes=1 << 26)])
    assert small.records.num_rows == whole.records.num_rows
    assert small.records.combine_chunks().equals(whole.records.combine_chunks())
    assert small.jobs.equals(whole.jobs)
    assert small.info == whole.info


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
@given(
    st.lists(st.sampled_from([b"", b":" * 100, b"a", b":" * 45, b"x:" * 300]), max_size=30),
    st.sampled_from([b"\n", b""]),
)
def test_lines_of_many_fields_split_alike(lines: list[bytes], end: bytes) -> None:
    """More fields than the kernel first makes room for (46 a line): the same fields."""
    data = b"\n".join(lines) + end
    fast, slow = _lines_of(data, on=True), _lines_of(data, on=False)
    assert fast.tokens.equals(slow.tokens)
    assert fast.counts.tolist() == slow.counts.tolist()
