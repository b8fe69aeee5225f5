"""The compiled SWF paths against the readable reference: same rows, same numbers."""

from __future__ import annotations

import warnings
from pathlib import Path

import hypothesis.strategies as st
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings

from gridtrace.errors import DataQualityWarning
from gridtrace.logs import read_swf
from gridtrace.logs._base import FileParse
from gridtrace.logs._io import read_log_bytes
from gridtrace.logs._swf import (
    _NUMBER,
    assemble_swf,
    tokenize_swf,
    tokenize_swf_reference,
)
from gridtrace.logs._swf_fast import parse_numbers, scan_swf

from .test_swf import REAL_SWF


def _both(data: bytes) -> tuple[FileParse, FileParse]:
    fast = tokenize_swf(data, site="s", src_file="f.swf")
    ref = tokenize_swf_reference(data, site="s", src_file="f.swf")
    return fast, ref


def _assert_same(fast: FileParse, ref: FileParse) -> None:
    assert fast.lines_read == ref.lines_read
    assert fast.lines_read == fast.records.num_rows + fast.quarantine.num_rows
    assert fast.records.schema.equals(ref.records.schema)
    for name in ref.records.column_names:
        a = fast.records.column(name).combine_chunks()
        b = ref.records.column(name).combine_chunks()
        assert a.equals(b), name
    assert fast.quarantine.combine_chunks().equals(ref.quarantine.combine_chunks())


def _same_jobs(fast: FileParse, ref: FileParse) -> None:
    with warnings.catch_warnings():  # random statuses may be read as exit codes, with a warning
        warnings.simplefilter("ignore", DataQualityWarning)
        a = assemble_swf([fast]).jobs
        b = assemble_swf([ref]).jobs
    for name in b.column_names:
        assert a.column(name).combine_chunks().equals(b.column(name).combine_chunks()), name


# ------------------------------------------------------------------ unit cases

CLEAN = "1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1"


@pytest.mark.parametrize(
    ("line", "fast"),
    [
        (CLEAN, True),
        ("\t  " + CLEAN.replace(" ", " \t ") + "  \t", True),  # blanks and tabs anywhere
        (CLEAN + "\r", True),  # CRLF
        ("+1 .5 1. 1e5 1E-5 -0 0001.500 +.5e+2" + " 1" * 10, True),  # every number form
        (CLEAN + " 1", False),  # 19 fields
        (CLEAN.rsplit(" ", 1)[0], False),  # 17 fields
        (CLEAN.replace("100", "1e"), False),
        (CLEAN.replace("100", "."), False),
        (CLEAN.replace("100", "1.2.3"), False),
        (CLEAN.replace("100", "nan"), False),
        (CLEAN.replace("100", "inf"), False),
        (CLEAN.replace("100", "+-1"), False),
        (CLEAN.replace("100", "1\r0"), False),  # a CR inside the line
        (CLEAN.replace(" 100 ", "\v100 "), False),  # a blank the kernel leaves to the reference
        (CLEAN.replace(" 100 ", "\u00a0100 "), False),  # non-ASCII
        ("", False),
        ("   ", False),
        ("; UnixStartTime: 0", False),
        ("1;2", False),
    ],
)
def test_scanner_takes_only_clean_job_lines(line: str, fast: bool) -> None:
    data = (CLEAN + "\n" + line + "\n" + CLEAN + "\n").encode()
    (scan,) = scan_swf(data)
    assert scan.lines == 3
    assert scan.fast.tolist() == [True, fast, True]
    assert data[scan.starts[1] : scan.ends[1]] == line.encode()
    assert len(scan.values) == 18 * int(scan.fast.sum())
    assert scan.ids.to_pylist() == ["1", *([line.split()[0]] if fast else []), "1"]
    _assert_same(*_both(data))


def test_non_utf8_lines_go_to_the_reference() -> None:
    data = b"; Installation: Universit\xe9\n" + CLEAN.encode() + b" \xff\n" + CLEAN.encode()
    fast, ref = _both(data)
    _assert_same(fast, ref)
    assert fast.records.column("flags").to_pylist() == [["NON_UTF8"], None]
    assert fast.quarantine.column("src_line").to_pylist() == [2]


def test_empty_and_unterminated_files() -> None:
    assert scan_swf(b"") == []
    for data in (b"", b"\n", b"\n\n", CLEAN.encode(), (CLEAN + "\n" + CLEAN).encode()):
        fast, ref = _both(data)
        _assert_same(fast, ref)
    (scan,) = scan_swf(CLEAN.encode())
    assert (scan.lines, scan.fast.tolist()) == (1, [True])


def test_interleaved_comments_and_bad_lines_keep_line_order() -> None:
    lines = [f"; Note: {i}" if i % 7 == 0 else CLEAN for i in range(300)]
    lines[5] = "garbage"
    lines[150] = ""
    fast, ref = _both(("\n".join(lines) + "\n").encode())
    _assert_same(fast, ref)
    assert fast.records.column("src_line").to_pylist() == sorted(set(range(1, 301)) - {6, 151})
    assert fast.quarantine.column("src_line").to_pylist() == [6, 151]


@pytest.mark.parametrize(
    ("token", "value"),
    [
        ("-1", np.nan),
        ("-1.0", np.nan),
        ("-0", -0.0),
        ("142.00", 142.0),
        ("10.6", 10.6),
        ("1e22", 1e22),
        ("1e23", 1e23),  # off the fast path: Arrow's cast
        ("1e-400", 0.0),
        ("12345678901234567890", 12345678901234567890.0),
        ("0.1000000000000000055511151231257827", 0.1),
        ("9007199254740993", 9007199254740992.0),  # 2**53 + 1 rounds to even
    ],
)
def test_parse_numbers_cases(token: str, value: float) -> None:
    out = parse_numbers(pa.array([token, "7"]), minus_one_nan=True)
    assert out.shape == (1, 2)
    np.testing.assert_equal(out[0], [value, 7.0])
    if value == 0:
        assert np.signbit(out[0, 0]) == np.signbit(value)


def test_parse_numbers_layout_and_slices() -> None:
    tokens = pa.array([str(i) for i in range(12)]).slice(3, 6)
    out = parse_numbers(tokens, width=3)
    np.testing.assert_array_equal(out, [[3, 6], [4, 7], [5, 8]])


# ------------------------------------------------------------------ properties

# the reference's number pattern, ASCII digits only as in Arrow's regex engine (RE2)
_number = st.from_regex(_NUMBER.replace(r"\d", "[0-9]"), fullmatch=True).filter(
    lambda t: "\n" not in t
)
# job fields within int64 seconds and bytes (the assembler's domain)
_field = _number.filter(lambda t: abs(float(t)) < 1e9)
_token = st.one_of(
    st.integers(-1, 10**7).map(str),
    st.just("-1"),
    _field,
    st.sampled_from(["nan", "inf", "1e", ".", "abc", "1.2.3", "+-1", "é", "\x00", ";"]),
)
_blank = st.sampled_from([" ", "  ", "\t", " \t", "\v", "\r"])


@st.composite
def _line(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["job", "job", "job", "job", "comment", "blank", "odd"]))
    if kind == "comment":
        # any encodable text: lone surrogates cannot be written to a file
        chars = st.characters(blacklist_characters="\n", blacklist_categories=["Cs"])
        return ";" + draw(st.text(chars, max_size=30))
    if kind == "blank":
        return draw(st.sampled_from(["", " ", "\t", "\r"]))
    count = 18 if kind == "job" else draw(st.integers(0, 20))
    tokens = draw(st.lists(_token if kind == "odd" else _field, min_size=count, max_size=count))
    seps = draw(st.lists(_blank, min_size=count + 1, max_size=count + 1))
    if kind == "job":  # clean: plain blanks only, maybe a CRLF
        seps = [" " if "\v" in s or "\r" in s else s for s in seps]
        seps[-1] = draw(st.sampled_from(["", " ", "\r"]))
    body = "".join(s + t for s, t in zip(seps, tokens, strict=False)) + seps[-1]
    return body


@settings(max_examples=80, deadline=None)
@given(lines=st.lists(_line(), max_size=30), end=st.booleans())
def test_fast_tokeniser_equals_reference(lines: list[str], end: bool) -> None:
    data = "\n".join(lines) + ("\n" if end and lines else "")
    fast, ref = _both(data.encode())
    _assert_same(fast, ref)
    _same_jobs(fast, ref)


@settings(max_examples=80, deadline=None)
@given(tokens=st.lists(_number, max_size=50))
def test_parse_numbers_equals_arrow_cast(tokens: list[str]) -> None:
    strings = pa.array(tokens, pa.string())
    expected = np.asarray(strings.cast(pa.float64()).to_numpy(zero_copy_only=False))
    got = parse_numbers(strings)[0]
    assert got.tobytes() == expected.tobytes()  # bit for bit, signs of zero included


# ------------------------------------------------------------------ real data


@pytest.mark.realdata
@pytest.mark.parametrize("name", sorted(REAL_SWF))
def test_real_file_fast_equals_reference(real_data: Path, name: str) -> None:
    path = real_data / "swf" / name
    data = read_log_bytes(path)
    fast, ref = _both(data)
    _assert_same(fast, ref)
    assert fast.quarantine.num_rows == 0
    jobs = fast.records.filter(pa.compute.equal(fast.records.column("record_type"), "J"))
    tokens = jobs.column("attrs").combine_chunks().items
    expected = np.asarray(tokens.cast(pa.float64()).to_numpy(zero_copy_only=False))
    assert parse_numbers(tokens).tobytes() == expected.tobytes()
    assert read_swf(path).jobs.num_rows == REAL_SWF[name]
