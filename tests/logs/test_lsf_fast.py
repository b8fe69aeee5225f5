"""The compiled LSF scanner gives exactly the rows of the reference tokeniser.

Every check tokenises the same chunk twice, once with clean ``JOB_FINISH`` lines read by the
kernel of :mod:`gridtrace.logs._lsf_fast` and once by the reference alone, and compares the
``records`` and ``quarantine`` tables whole (rows, order, attrs, flags, raw).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _lsf_fast, read_lsf
from gridtrace.logs._lsf import _tokenize_lsf_lines, split_lsf_record
from gridtrace.logs._stream import Chunk

pytestmark = pytest.mark.skipif(not _lsf_fast.HAVE_NUMBA, reason="numba is not installed")

HEAD = (
    '"JOB_FINISH" "10.1" 1700003600 5001 1500 33816578 4 1700000000 0 0 1700000100 "alice" '
    '"normal" "span[hosts=1]" "" "" "login1" "/home/alice" "" "out.%J" "" "1700000000.5001"'
)
LSF10 = (
    f'{HEAD} 0 1 "4*node07" '
    '64 12.5 "sim ""fast"" run" "./run.sh" 3000.5 99.5 204800 0 -1 0 0 1000 0 0 0 0 -1 0 0 0 '
    '10 2 -1 "" "physics" 0 4 "" "" 0 409600 819200 '
    '"" "" "" "" 0 "" 0 "" -1 "/physics/alice" "" "" "" -1 "" "" 6160 "" 1700000100 "" "" '
    '2 1032 "0" 1033 "0" 0 7200 0 300000 "select[type == local] span[hosts=1] " "" -1 "" -1 0 '
    '"" 0 0 "" 3500 "/home/alice" 0 "" 0.000000 0.00 0.00 0.00 0.00 4 "node07" "node07" '
    '"node07" "node07" -1 0 0 0 0 0'
)
LSF91 = (
    HEAD.replace('"10.1"', '"9.11"')
    + ' 0 2 "8*n1" "8*n2" '
    + '64 12.5 "sim" "./run.sh" 3000.5 99.5 204800 0 -1 0 0 1000 0 0 0 0 -1 0 0 0 '
    + '10 2 -1 "" "physics" 0 4 "" "" 0 409600 819200 '
    + '"" "" "" "" 0 "" 0 "" -1 "/p/alice" "" "" "" -1 "" "" 6160 "" 1700000100 "" "" 0 2 '
    + "n1 100 0 1500 40 0 n2 90 0 1500 30 0 43200 0 8000 "
    + '"select[type == local] " "" -1 "" -1 0 "" 0 0 "" 3500 "/home/alice" 0 ""'
)
GPU = LSF10.removesuffix("-1 0 0 0 0 0") + '-1 0 0 1 "node07" 2 "1" "a:b" "1" "G=""x""" 0 0'
AMBIGUOUS = LSF10.replace('"0" 0 7200', '"0" 1 node07 1024 0 3000 99 7200')
GPU_PLAIN = GPU.replace('"G=""x"""', '"G=x"')
RECORDS = (LSF10, LSF91, GPU, AMBIGUOUS, GPU_PLAIN)


def _tables(data: bytes, *, final: bool = True, first_line: int = 1) -> dict[bool, Any]:
    chunk = Chunk(data, first_line, data.count(b"\n") + (not data.endswith(b"\n")), 0, final)
    if data == b"":
        chunk = Chunk(data, first_line, 0, 0, final)
    return {
        fast: _tokenize_lsf_lines(chunk, site="s", src_file="f", fast=fast)
        for fast in (True, False)
    }


def _same(data: bytes, *, final: bool = True) -> tuple[pa.Table, pa.Table]:
    tables = _tables(data, final=final)
    fast_records, fast_bad = tables[True]
    records, bad = tables[False]
    assert fast_records.combine_chunks().equals(records.combine_chunks()), data[:300]
    assert fast_bad.equals(bad), data[:300]
    return records, bad


def _serialise(tokens: list[str], quoted: list[bool]) -> str:
    return " ".join(
        '"' + t.replace('"', '""') + '"' if q else t for t, q in zip(tokens, quoted, strict=True)
    )


def test_clean_records_are_read_by_the_kernel() -> None:
    data = "".join(line + "\n" for line in RECORDS).encode()
    records, bad = _same(data)
    assert records.num_rows == 5
    assert bad.num_rows == 0
    scan = _lsf_fast.scan_lsf(data, _layout(), utf8=True)
    assert scan is not None
    # the GPU entry 'G="x"' needs JSON escapes: left to the reference
    assert scan.fast.tolist() == [True, True, False, True, True]
    flags = records.column("flags").to_pylist()
    assert flags == [None] * 5


def _layout() -> Any:
    from gridtrace.logs._lsf import _LAYOUT

    return _LAYOUT


def test_damaged_lines_match_the_reference() -> None:
    lines = [
        LSF10,
        LSF10 + "\r",  # CR LF
        LSF10.replace('"alice"', '"al\x00ice"'),  # NUL
        LSF10.replace('"./run.sh"', '"./run.sh'),  # a string left open
        LSF10.replace('"./run.sh"', '"./run\nmore.sh"'),  # a string spanning lines
        LSF10.replace('"alice"', '"alice"x'),  # glued
        LSF10 + ' 7 "x" 3.5',  # extra fields
        LSF10.replace('"" "" 2 1032', '"" "" x 1032'),  # tail count unreadable
        LSF10.replace(' 0 1 "4*node07"', ' 0 2 "4*node07"'),  # misaligned
        LSF10.replace('"alice"', '"al ""i"" ce"'),  # escaped quotes and spaces
        LSF10.replace('"alice"', '"gaëndalf"'),  # UTF-8
        "",
        "# comment",
        '"JOB_NEW" "10.1" 1700000000 5001',
        "  " + LSF10,
        LSF10.replace(" 64 12.5", "\t64 12.5"),
        LSF10.replace('"normal"', '"nor\tmal"'),
        LSF10.replace(' "4*node07"', ' "4*n\\ode07"'),  # JSON escape needed
        LSF10.replace(" 4 1700000000 0 0", " 4 1700000000 00 0"),
        LSF10.replace(' 2 1032 "0"', ' 0000000000002 1032 "0"'),  # a long count
        LSF10.replace(' 2 1032 "0"', ' -0 1032 "0"'),
        LSF91.replace('"9.11"', '"11.x"'),
        LSF10[:300],  # cut
    ]
    text = "\n".join(lines) + "\n"
    _same(text.encode())
    _same(text.encode().replace("ë".encode(), b"\xeb"))  # not UTF-8: the chunk declines
    _same(text.encode()[:-1])  # the last line has no line end
    _same(text.encode(), final=False)
    _same((text + LSF10.replace('"./run.sh"', '"./run.sh\n') + LSF10 + "\n").encode(), final=False)


_VALUE = st.one_of(
    st.text(alphabet='ab "\tü\\*é', max_size=6).map(lambda v: (v, True)),
    st.from_regex(r"[a-z0-9.*+eE-]{0,6}", fullmatch=True).map(lambda v: (v, False)),
    st.sampled_from(["0", "1", "2", "-1", "6", "12", "٣", "1e5", ".5", "node07", "x"]).map(
        lambda v: (v, False)
    ),
)


@st.composite
def _records(draw: st.DrawFn) -> str:
    tokens, quoted = split_lsf_record(draw(st.sampled_from(RECORDS)))
    for _ in range(draw(st.integers(0, 4))):
        n = len(tokens)
        # anywhere, or near the host lists, the tail's counted sections or the end
        k = draw(
            st.one_of(
                st.integers(0, n),
                st.integers(min(20, n), min(26, n)),
                st.integers(max(0, n - 60), n),
                st.integers(max(0, n - 6), n),
            )
        )
        what = draw(st.sampled_from(["replace", "insert", "delete", "cut", "append"]))
        value, is_quoted = draw(_VALUE)
        if what == "replace" and k < len(tokens):
            tokens[k], quoted[k] = value, is_quoted
        elif what == "insert":
            tokens.insert(k, value)
            quoted.insert(k, is_quoted)
        elif what == "delete" and k < len(tokens):
            del tokens[k], quoted[k]
        elif what == "cut":
            del tokens[k:], quoted[k:]
        elif what == "append":
            tokens.append(value)
            quoted.append(is_quoted)
    line = _serialise(tokens, quoted) if tokens else ""
    if draw(st.booleans()):
        return line
    cut = draw(st.integers(0, len(line)))
    extra = draw(st.sampled_from(["\r", "\x00", '"', "\n", " ", "é", "\t", "  x"]))
    return line[:cut] + extra + line[cut:]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_records(), min_size=1, max_size=6),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_generated_records_match_the_reference(
    lines: list[str], newline: bool, final: bool, latin1: bool
) -> None:
    text = "\n".join(lines) + ("\n" if newline else "")
    data = text.encode("latin-1", "replace") if latin1 else text.encode()
    _same(data, final=final)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(RECORDS), min_size=1, max_size=5), st.integers(1, 10_000))
def test_line_numbers_follow_the_chunk(lines: list[str], first_line: int) -> None:
    data = "".join(line + "\n" for line in lines).encode()
    tables = _tables(data, first_line=first_line)
    assert tables[True][0].combine_chunks().equals(tables[False][0].combine_chunks())
    assert tables[True][0].column("src_line").to_pylist()[0] == first_line


def test_read_lsf_same_jobs_either_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "lsb.acct"
    lines = [r.replace(" 5001 ", f" {5001 + k} ", 1) for k, r in enumerate(RECORDS * 30)]
    lines[7] = lines[7].replace('"./run.sh"', '"./run\n.sh"')
    lines[9] = "garbage"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(_lsf_fast, "SMALL_INPUT_LINES", 0)
    fast = read_lsf(path, errors="skip")
    monkeypatch.setattr(_lsf_fast, "HAVE_NUMBA", False)
    reference = read_lsf(path, errors="skip")
    assert fast.records.equals(reference.records)
    assert fast.jobs.equals(reference.jobs)
    assert fast.quarantine.equals(reference.quarantine)
    assert fast.lines_read == fast.lines_parsed + fast.lines_quarantined == 151


@pytest.mark.skipif("GRIDTRACE_REAL_DATA" not in os.environ, reason="GRIDTRACE_REAL_DATA unset")
def test_real_fixture_is_read_by_the_kernel() -> None:
    fixture = Path(os.environ["GRIDTRACE_REAL_DATA"]) / "other/lsf/xdmod-shredder-lsf-fixture.log"
    data = fixture.read_bytes()
    records, _ = _same(data)
    scan = _lsf_fast.scan_lsf(data, _layout(), utf8=True)
    assert scan is not None
    assert records.num_rows == int(scan.fast.sum())
