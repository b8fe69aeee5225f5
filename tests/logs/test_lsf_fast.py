"""The compiled LSF kernels give exactly the rows of the reference code.

Most checks tokenise the same chunk twice, once with clean ``JOB_FINISH`` lines read by the
kernel of :mod:`gridtrace.logs._lsf_fast` and once by the reference alone, and compare the
``records`` and ``quarantine`` tables whole (rows, order, attrs, flags, raw). The others check
the ``attrs`` keys the kernel writes against the dictionary cast, the numeric job fields it
reads from the maps against the regular expression and Arrow's cast (bit for bit), and a read
in many chunks against a read without numba (``records``, ``jobs``, ``quarantine``, ``info``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _attrs_fast, _lsf, _lsf_fast, read_lsf
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


_STRING = st.text(alphabet='ab "*[]=,é', max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(RECORDS), _STRING, _STRING, st.integers(0, 3)),
        min_size=1,
        max_size=8,
    )
)
def test_scanner_matches_the_reference_on_varied_strings(
    rows: list[tuple[str, str, str, int]],
) -> None:
    lines = []
    for record, name, command, hosts in rows:
        line = record.replace('"alice"', '"' + name.replace('"', '""') + '"', 1)
        line = line.replace('"./run.sh"', '"' + command.replace('"', '""') + '"', 1)
        if record is LSF91:
            listed = " ".join(f'"8*n{k}"' for k in range(hosts))
            line = line.replace(' 0 2 "8*n1" "8*n2" ', f" 0 {hosts} {listed} ".replace("  ", " "))
        lines.append(line)
    data = ("\n".join(lines) + "\n").encode()
    tables = _tables(data)
    assert tables[True][0].combine_chunks().equals(tables[False][0].combine_chunks())
    assert tables[True][1].equals(tables[False][1])


def test_scanner_counts_every_line_and_value() -> None:
    data = ("\n".join([LSF10, "garbage", "", LSF91, LSF10 + ' 7 "x"']) + "\n").encode()
    scan = _lsf_fast.scan_lsf(data, _lsf._LAYOUT, utf8=True)
    assert scan is not None
    assert scan.lines == 5
    assert scan.fast.tolist() == [True, False, False, True, True]
    assert len(scan.values) == int(scan.counts.sum())
    assert scan.flags.tolist()[2] == _lsf_fast.EXTRA_FIELDS
    # a value is what the reference reads: the doubled quotes made one
    assert 'sim "fast" run' in scan.values.to_pylist()


def test_keys_written_by_the_kernel_match_the_dictionary_cast(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _lsf_fast.compile_kernel()
    rng = np.random.default_rng(5)
    n = 300
    which = rng.integers(0, 4, n).astype(np.int64)  # JOB_FINISH, other, comment, continuation
    named = rng.integers(0, 40, n).astype(np.int64)
    named[which >= 2] = np.minimum(named[which >= 2], 1)  # one name: text, record_line
    unknown = rng.integers(0, 4, n).astype(np.int64)
    kernel = _lsf._keys(which, named, unknown)
    monkeypatch.setattr(_lsf_fast, "kernel_ready", lambda: False)
    reference = _lsf._keys(which, named, unknown)
    assert kernel.type == reference.type == pa.string()
    assert kernel.equals(reference)


_NUMBER_TEXT = st.one_of(
    st.from_regex(r"-?[0-9]{1,20}(\.[0-9]{0,12})?", fullmatch=True),
    st.sampled_from(
        ["", "-0", "-0.0", "0.000000", "1e5", ".5", "5.", "+5", "-", "x", "٣", "1.2.3"]
    ),  # (blanks around a number make the reference's cast raise: not generated)
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(-(10**17), 10**17).map(str),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), _NUMBER_TEXT), min_size=1, max_size=30))
def test_numbers_read_in_the_kernel_match_the_regex_and_cast(texts: list[str | None]) -> None:
    assert _lsf_fast.compile_kernel()
    present = [t for t in texts if t is not None]
    strings = pa.array(present or [""], pa.string())
    positions = np.cumsum([t is not None for t in texts]) - 1
    index = np.where([t is not None for t in texts], positions, -1).astype(np.int64)
    read = _lsf_fast.read_numbers(strings, index)
    assert read is not None
    values, slow = read
    expected, bad = _lsf._floats(pa.array(texts, pa.string()))
    fast = ~slow
    assert np.array_equal(values[fast].view(np.int64), expected[fast].view(np.int64))
    assert not bad[fast].any()
    # what the kernel leaves: only strings the exact rule does not cover
    for k in np.flatnonzero(slow):
        assert texts[k]


def test_finish_values_match_attr_columns(tmp_path: Path) -> None:
    path = tmp_path / "lsb.acct"
    lines = [r.replace(" 5001 ", f" {5001 + k} ", 1) for k, r in enumerate(RECORDS * 30)]
    lines[3] = lines[3].replace(" 1700003600 ", " 1.7e9 ", 1)  # not read by the kernel
    lines[4] = lines[4].replace(" 1700000000 0 0 ", " 1700000000 -0 0 ", 1)
    path.write_text("\n".join(lines) + "\n")
    records = read_lsf(path, errors="skip").records
    attrs = pa.chunked_array(
        [records.column("attrs").combine_chunks()[k : k + 40] for k in (0, 40)]
    )
    assert _lsf_fast.compile_kernel()
    texts, numbers = _lsf._finish_values(attrs)
    columns = _lsf.attr_columns(attrs, (*_lsf._TEXT_ATTRS, *_lsf._NUMBER_ATTRS))
    for name in _lsf._TEXT_ATTRS:
        assert texts[name].equals(columns[name])
    for name in _lsf._NUMBER_ATTRS:
        values, bad, absent = numbers[name]
        expected, expected_bad = _lsf._floats(columns[name])
        assert np.array_equal(values.view(np.int64), expected.view(np.int64)), name
        assert np.array_equal(bad, expected_bad), name
        assert np.array_equal(absent, np.asarray(columns[name].is_null())), name


def test_read_in_many_chunks_same_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "lsb.acct"
    lines = [r.replace(" 5001 ", f" {5001 + k % 70} ", 1) for k, r in enumerate(RECORDS * 60)]
    lines[11] = lines[11].replace('"./run.sh"', '"./run\n.sh"')
    lines[12] = lines[12][:200]
    lines[13] = lines[13].replace('"alice"', '"al""i""ce"')
    lines[14] = lines[14].replace(" 1700003600 ", " 17e8 ", 1)
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(_lsf_fast, "SMALL_INPUT_LINES", 0)
    monkeypatch.setattr(_attrs_fast, "MIN_ROWS", 0)

    def read() -> Any:
        part = _lsf.tokenize_lsf_file(path, site="s", chunk_bytes=20_000)
        return part, _lsf.assemble_lsf([part])

    part, fast = read()
    assert part.records.column("attrs").num_chunks > 5
    monkeypatch.setattr(_lsf_fast, "HAVE_NUMBA", False)
    monkeypatch.setattr(_attrs_fast, "HAVE_NUMBA", False)
    _, reference = read()
    assert fast.records.equals(reference.records)
    assert fast.jobs.equals(reference.jobs)
    assert fast.quarantine.equals(reference.quarantine)
    assert fast.info == reference.info
    assert fast.lines_read == fast.lines_parsed + fast.lines_quarantined == len(lines) + 1


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(-1, 3),
            st.sampled_from([1.0, 2.0, float("nan"), 0.0]),
            st.sampled_from([5.0, 6.0, float("nan")]),
            st.integers(0, 1),
            st.sampled_from([0.0, 7.0, float("nan")]),
        ),
        max_size=25,
    )
)
def test_attempts_match_the_pandas_grouping(
    rows: list[tuple[int, float, float, int, float]],
) -> None:
    import pandas as pd

    n = len(rows)
    key = np.array([r[0] for r in rows], dtype=np.int64)
    submit, event, start = (np.array([r[k] for r in rows], dtype=np.float64) for k in (1, 2, 4))
    file_no = np.array([r[3] for r in rows], dtype=np.int64)
    line = np.arange(n, dtype=np.int64)[::-1].copy()
    attempt, n_attempts, duplicate = _lsf._attempts(key, submit, event, file_no, line, start)
    # the grouping the reader made with pandas before
    frame = pd.DataFrame(
        {"key": key, "submit": submit, "event": event, "file": file_no, "line": line}
    ).assign(row=np.arange(n))
    frame = frame.sort_values(["key", "submit", "event", "file", "line"], na_position="last")
    groups = frame.groupby(["key", "submit"], sort=False, dropna=False)
    expected = np.zeros(n, dtype=np.int64)
    expected_n = np.ones(n, dtype=np.int64)
    expected[frame["row"].to_numpy()] = groups.cumcount().to_numpy()
    expected_n[frame["row"].to_numpy()] = groups["row"].transform("size").to_numpy()
    same = pd.DataFrame({"key": key, "submit": submit, "start": start, "event": event})
    assert attempt.tolist() == expected.tolist()
    assert n_attempts.tolist() == expected_n.tolist()
    assert duplicate.tolist() == same.duplicated(keep=False).tolist()
