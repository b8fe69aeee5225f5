"""The TORQUE/PBS tokeniser: line-level edge cases, and the fast path against the reference.

Every edge case runs through both tokenisers; the fast one must give exactly the reference's
tables (rows, order, attrs entries and their order, flags, raw, quarantine) on every input.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import FileParse
from gridtrace.logs import _torque_fast as fast_module
from gridtrace.logs._torque_fast import tokenize_torque
from gridtrace.logs._torque_lines import tokenize_torque_reference
from gridtrace.schema import validate

TOKENIZERS = pytest.mark.parametrize(
    "tokenize", [tokenize_torque_reference, tokenize_torque], ids=["reference", "fast"]
)

# Literal lines of the parser notes (parsers.md §9, data.md "TORQUE / PBS accounting").
NCAR_E = (
    b"02/12/2018 17:39:43;E;1048074.laadmin1.ib0.laramie.ucar.edu;user=matthews group=ncar "
    b'account="SSSG0001" project=_pbs_project_default jobname=STDIN queue=regular '
    b"ctime=1518482382 qtime=1518482382 etime=1518482382 start=1518482382 exec_host=r1i0n2/0*12 "
    b'exec_vnode=(r1i0n2:ncpus=12) Resource_List.inception="hi steve" Resource_List.ncpus=12 '
    b"Resource_List.nodect=1 Resource_List.place=scatter:exclhost Resource_List.select=1:ncpus=12 "
    b"Resource_List.walltime=01:01:01 session=64507 end=1518482383 Exit_status=0 "
    b"resources_used.cpupercent=0 resources_used.cput=00:00:00 resources_used.mem=10848kb "
    b"resources_used.ncpus=12 resources_used.vmem=269048kb resources_used.walltime=00:00:01 "
    b"run_count=1"
)
QUOTED_SPACE = (
    b'05/03/2024 09:56:45;E;123[4].pbs01.example.org;user=alice account="my proj" queue=grid'
)
SEMICOLON_VALUE = b"05/03/2024 12:00:00;E;206.pbs01;user=bob jobname=a;b queue=grid"
EQUALS_VALUE = b"05/03/2024 12:00:00;S;206.pbs01;user=bob Resource_List.select=2:ncpus=8:mem=4gb"
NUL_PADDED = b"\x00\x00\x00\x0005/04/2024 00:00:01;Q;205.pbs01;queue=grid"
NON_UTF8 = b"05/03/2024 09:56:45;E;207.pbs01;user=alice jobname=r\xe9sultat queue=grid"
GREP_PREFIX = (
    b"20150327:03/27/2015 00:06:27;E;21430205.b0;user=atprd006 group=atprd "
    b"jobname=cream_238467179 queue=atlas exec_host=b391/0-3 total_execution_slots=4 "
    b"unique_node_count=1 end=1427439987 Exit_status=0"
)
TRUNCATED = b"05/03/2024 23:59:59;E;204.pbs01;user=bob group=cms jobname=x queue=grid ctime=17147"
RERUN = b"05/03/2024 14:05:00;R;201.pbs01;"
ABORT = b"06/05/2016 15:42:14;A;20318716.hpc-p-svcs-10.icts.hpc.kuleuven.be;"
LICENCE = b"02/12/2018 00:00:00;L;license;floating license hour:0 day:0 month:2304 max:5184"
QUEUED = b"06/01/2016 00:00:45;Q;20316337.hpc-p-svcs-10.icts.hpc.kuleuven.be;queue=qdef"
DELETED = b"05/03/2024 10:05:00;D;202.pbs01;requestor=alice@ui01"
# VSC start records end with a space
VSC_S = (
    b"06/01/2016 00:01:24;S;20316337.hpc-p-svcs-10.icts.hpc.kuleuven.be;user=vsc30864 "
    b"group=vsc30864 account=lp_3E110810 jobname=diFeSdAz queue=q72h ctime=1464732045 "
    b"qtime=1464732045 etime=1464732045 start=1464732084 "
    b"owner=vsc30864@hpcblade1-hev7.icts.hpc.kuleuven.be exec_host=r3i1n9/0-19 "
    b"Resource_List.mem=60gb Resource_List.neednodes=1:ivybridge:ppn=20 Resource_List.nodect=1 "
    b"Resource_List.nodes=1:ivybridge:ppn=20 Resource_List.partition=thinking "
    b"Resource_List.pmem=3gb Resource_List.walltime=72:00:00 "
)
XDMOD_E = (
    b"12/21/2009 15:27:00;E;6.edge.ccr.buffalo.edu;user=jonesm group=ccrstaff jobname=impi-hybrid "
    b"queue=ccr ctime=1261424924 qtime=1261424924 etime=1261424924 start=1261425023 "
    b"owner=jonesm@edge.ccr.buffalo.edu exec_host=i02n33/7+i02n33/6+i02n33/5+i02n32/7+i02n32/6 "
    b"end=1261427220 Exit_status=0 resources_used.cput=00:00:00 resources_used.mem=15240kb "
    b"resources_used.vmem=350936kb resources_used.walltime=00:36:37"
)
REPEATED_KEY = b"05/03/2024 12:00:00;S;208.pbs01;user=bob tasks=n1/0 tasks=n2/0 queue=grid"
BARE_TOKEN = b"05/03/2024 12:00:00;S;209.pbs01;user=bob interactive queue=grid"
CRLF = b"05/03/2024 12:00:00;S;210.pbs01;user=bob queue=grid\r"
BAD_DATE = b"13/03/2024 12:00:00;S;211.pbs01;user=bob"
BAD_TIME = b"05/03/2024 24:00:00;S;211.pbs01;user=bob"
GARBAGE = b"this is not an accounting line"
FEW_SEMICOLONS = b"05/03/2024 12:00:00 E 212.pbs01 user=bob"
BLANK = b""

# Lines the kernel must tokenise itself (a regression to the reference would stay correct, unseen).
CLEAN_LINES = [
    NCAR_E,
    QUOTED_SPACE,
    SEMICOLON_VALUE,
    EQUALS_VALUE,
    RERUN,
    ABORT,
    QUEUED,
    DELETED,
    VSC_S,
    XDMOD_E,
    CRLF,
    b"05/03/2024 12:00:00;S;213.pbs01",  # no message at all
    b"05/03/2024 12:00:00;S;214.pbs01;  user=bob   queue=grid  ",  # runs of spaces
    b'05/03/2024 12:00:00;E;215.pbs01;a="x=y z" "b=c"=d e="" f="',  # quotes in keys and values
    b"05/03/2024 12:00:00;E;216.pbs01;=empty-key empty-value=",
]
# Lines it must leave to the reference.
DECLINED_LINES = [
    NUL_PADDED,
    NON_UTF8,
    GREP_PREFIX,
    LICENCE,
    REPEATED_KEY,
    BARE_TOKEN,
    BAD_DATE,
    BAD_TIME,
    GARBAGE,
    FEW_SEMICOLONS,
    BLANK,
    b"05/03/2024 12:00:00;S;217.pbs01;user=bob\tqueue=grid",  # a tab splits in the reference
    b"05/03/2024 12:00:00;S;218.pbs01;user=bob\xc2\xa0queue=grid",  # so does a no-break space
    b"05/03/2024 12:00:00;S;219.pbs01;user=bob\rqueue=grid",  # a CR that does not end the line
    b"05/03/2024 12:00:00;S;220.pbs01;user=bob queue=grid\r\r",
    b"05/03/2024 12:00:00;S;221.pbs01;user=j\xc3\xa9r\xc3\xb4me",  # valid UTF-8, not ASCII
    b"\xef\xbb\xbf05/03/2024 12:00:00;S;222.pbs01;user=bob",  # a byte-order mark
    TRUNCATED + b"\x00" * 7 + QUEUED,  # a fragment, a NUL run, then a record
    b"\x00" * 64,
]
FIXTURE_LINES = CLEAN_LINES + DECLINED_LINES


def _tokenize(tokenize: Any, data: bytes) -> FileParse:
    result: FileParse = tokenize(data, src_file="accounting/20240503", site="test")
    validate(result.records, "records")
    validate(result.quarantine, "quarantine")
    assert result.lines_read == result.records.num_rows + result.quarantine.num_rows
    return result


def _one_record(tokenize: Any, line: bytes, *, newline: bool = True) -> dict[str, Any]:
    result = _tokenize(tokenize, line + b"\n" if newline else line)
    assert result.quarantine.num_rows == 0, result.quarantine.to_pylist()
    (row,) = result.records.to_pylist()
    return row


def _attrs(row: dict[str, Any]) -> dict[str, str]:
    pairs = row["attrs"]
    assert len({k for k, _ in pairs}) == len(pairs)
    return dict(pairs)


def assert_same(fast: FileParse, reference: FileParse) -> None:
    assert fast.lines_read == reference.lines_read
    assert fast.src_file == reference.src_file
    if not fast.records.equals(reference.records):  # show the first differing row
        for i, (a, b) in enumerate(
            zip(fast.records.to_pylist(), reference.records.to_pylist(), strict=False)
        ):
            assert a == b, f"records row {i}"
        assert fast.records.num_rows == reference.records.num_rows
        assert fast.records.schema == reference.records.schema
    assert fast.quarantine.equals(reference.quarantine), (
        fast.quarantine.to_pylist(),
        reference.quarantine.to_pylist(),
    )


def assert_fast_is_reference(data: bytes) -> None:
    names = {"src_file": "accounting/20240503", "site": "test", "source_format": "torque"}
    assert_same(tokenize_torque(data, **names), tokenize_torque_reference(data, **names))


# --- (a) edge cases, one per test, on both tokenisers -----------------------------------------


@TOKENIZERS
def test_quoted_values_keep_their_spaces(tokenize: Any) -> None:
    attrs = _attrs(_one_record(tokenize, QUOTED_SPACE))
    assert attrs["account"] == "my proj"
    assert attrs["queue"] == "grid"
    row = _one_record(tokenize, NCAR_E)
    attrs = _attrs(row)
    assert attrs["account"] == "SSSG0001"
    assert attrs["Resource_List.inception"] == "hi steve"
    assert attrs["exec_vnode"] == "(r1i0n2:ncpus=12)"
    assert row["flags"] == []
    assert row["raw"] is None


@TOKENIZERS
def test_semicolon_inside_a_value(tokenize: Any) -> None:
    row = _one_record(tokenize, SEMICOLON_VALUE)
    assert row["job_id_raw"] == "206.pbs01"
    assert row["attrs"] == [("user", "bob"), ("jobname", "a;b"), ("queue", "grid")]


@TOKENIZERS
def test_equals_inside_a_value_splits_on_the_first(tokenize: Any) -> None:
    attrs = _attrs(_one_record(tokenize, EQUALS_VALUE))
    assert attrs["Resource_List.select"] == "2:ncpus=8:mem=4gb"


@TOKENIZERS
def test_nul_padding_is_removed_and_flagged(tokenize: Any) -> None:
    row = _one_record(tokenize, NUL_PADDED)
    assert row["flags"] == ["NUL_STRIPPED"]
    assert row["raw"] == NUL_PADDED
    assert row["stamp"] == "05/04/2024 00:00:01"
    assert row["record_type"] == "Q"
    assert row["attrs"] == [("queue", "grid")]


@TOKENIZERS
def test_a_fragment_before_a_nul_run_is_never_parsed(tokenize: Any) -> None:
    # a crash cut an E record; the server went on after a run of NULs with the next record
    line = TRUNCATED + b"\x00" * 40 + QUEUED
    row = _one_record(tokenize, line)
    assert row["flags"] == ["NUL_STRIPPED", "CUT_FRAGMENT"]
    assert (row["record_type"], row["job_id_raw"]) == ("Q", QUEUED.split(b";")[2].decode())
    assert row["attrs"] == [("queue", "qdef")]
    assert row["raw"] == line  # the fragment is recoverable


@TOKENIZERS
def test_stray_nuls_inside_one_record_are_removed(tokenize: Any) -> None:
    line = b"05/03/2024 12:00:00;E;303.pbs01;user=carol\x00 group=atlas end=1714726801"
    row = _one_record(tokenize, line)
    assert row["flags"] == ["NUL_INSIDE"]
    assert _attrs(row) == {"user": "carol", "group": "atlas", "end": "1714726801"}
    assert row["raw"] == line


@TOKENIZERS
def test_nul_only_and_fragment_only_lines_are_quarantined(tokenize: Any) -> None:
    lines = [b"\x00" * 512, TRUNCATED + b"\x00" * 10, b"\x00\x00" + GARBAGE, QUEUED]
    result = _tokenize(tokenize, b"\n".join(lines) + b"\n")
    assert result.records.column("src_line").to_pylist() == [4]
    reasons = result.quarantine.column("reason").to_pylist()
    assert reasons[0].startswith("NUL bytes only")
    assert reasons[1].startswith("cut-off record fragment")
    assert reasons[2].startswith("after a NUL run: not a TORQUE/PBS accounting line")
    assert result.quarantine.column("raw").to_pylist() == lines[:3]


@TOKENIZERS
def test_non_utf8_bytes_are_decoded_by_the_stated_fallback(tokenize: Any) -> None:
    row = _one_record(tokenize, NON_UTF8)
    assert row["flags"] == ["NON_UTF8"]
    assert row["raw"] == NON_UTF8  # the original bytes, exactly
    assert _attrs(row)["jobname"] == "r\u00e9sultat"  # Windows-1252 / Latin-1
    assert _attrs(row)["queue"] == "grid"


@TOKENIZERS
def test_grep_file_prefix_is_removed_and_flagged(tokenize: Any) -> None:
    row = _one_record(tokenize, GREP_PREFIX)
    assert row["flags"] == ["FILE_PREFIX"]
    assert row["stamp"] == "03/27/2015 00:06:27"
    assert row["job_id_raw"] == "21430205.b0"
    assert row["raw"] == GREP_PREFIX
    assert _attrs(row)["Exit_status"] == "0"


@TOKENIZERS
def test_truncated_last_line_is_kept_and_flagged(tokenize: Any) -> None:
    result = _tokenize(tokenize, QUEUED + b"\n" + TRUNCATED)
    first, last = result.records.to_pylist()
    assert first["flags"] == []
    assert last["flags"] == ["NO_NEWLINE", "TRUNCATED"]
    assert last["raw"] == TRUNCATED
    assert _attrs(last)["ctime"] == "17147"  # as logged; the assembler does not use it
    assert result.lines_read == 2


@TOKENIZERS
def test_a_start_record_cut_before_its_start_is_truncated(tokenize: Any) -> None:
    cut = VSC_S[: VSC_S.index(b" start=")]
    row = _one_record(tokenize, cut, newline=False)
    assert row["flags"] == ["NO_NEWLINE", "TRUNCATED"]


@TOKENIZERS
def test_a_last_line_cut_in_its_job_id_is_quarantined(tokenize: Any) -> None:
    result = _tokenize(tokenize, QUEUED + b"\n" + QUEUED[:25])
    assert result.records.num_rows == 1
    (bad,) = result.quarantine.to_pylist()
    assert bad["reason"].startswith("last line cut off before its message")
    assert bad["raw"] == QUEUED[:25]


@TOKENIZERS
def test_complete_last_line_without_newline_is_not_truncated(tokenize: Any) -> None:
    row = _one_record(tokenize, XDMOD_E, newline=False)
    assert row["flags"] == ["NO_NEWLINE"]
    assert row["raw"] is None


@TOKENIZERS
def test_rerun_record_with_empty_message(tokenize: Any) -> None:
    row = _one_record(tokenize, RERUN)
    assert (row["record_type"], row["job_id_raw"], row["attrs"], row["flags"]) == (
        "R",
        "201.pbs01",
        [],
        [],
    )


@TOKENIZERS
def test_abort_record_with_empty_message(tokenize: Any) -> None:
    row = _one_record(tokenize, ABORT)
    assert row["record_type"] == "A"
    assert row["job_id_raw"] == "20318716.hpc-p-svcs-10.icts.hpc.kuleuven.be"
    assert row["attrs"] == []


@TOKENIZERS
def test_pbspro_licence_record_is_free_text(tokenize: Any) -> None:
    row = _one_record(tokenize, LICENCE)
    assert row["record_type"] == "L"
    assert row["job_id_raw"] is None
    assert row["attrs"] == [("message", "floating license hour:0 day:0 month:2304 max:5184")]


@TOKENIZERS
def test_blank_and_garbage_lines_are_quarantined_and_the_rest_kept(tokenize: Any) -> None:
    data = b"\n".join([QUEUED, BLANK, GARBAGE, VSC_S, BAD_DATE, DELETED]) + b"\n"
    result = _tokenize(tokenize, data)
    assert result.lines_read == 6
    assert result.records.column("src_line").to_pylist() == [1, 4, 6]
    assert result.records.column("record_type").to_pylist() == ["Q", "S", "D"]
    quarantined = result.quarantine.to_pylist()
    assert [q["src_line"] for q in quarantined] == [2, 3, 5]
    assert [q["raw"] for q in quarantined] == [BLANK, GARBAGE, BAD_DATE]
    reasons = [q["reason"] for q in quarantined]
    assert reasons[0] == "blank line"
    assert reasons[1].startswith("not a TORQUE/PBS accounting line")
    assert reasons[2].startswith("impossible date")
    assert {q["src_file"] for q in quarantined} == {"accounting/20240503"}


@TOKENIZERS
def test_repeated_keys_are_joined_and_bare_tokens_kept(tokenize: Any) -> None:
    row = _one_record(tokenize, REPEATED_KEY)
    assert row["flags"] == ["REPEATED_KEY"]
    assert _attrs(row)["tasks"] == "n1/0+n2/0"
    row = _one_record(tokenize, BARE_TOKEN)
    assert row["flags"] == ["BARE_TOKEN"]
    assert row["attrs"] == [("user", "bob"), ("interactive", ""), ("queue", "grid")]


@TOKENIZERS
def test_crlf_line_ends_and_trailing_spaces(tokenize: Any) -> None:
    row = _one_record(tokenize, CRLF)
    assert row["attrs"] == [("user", "bob"), ("queue", "grid")]
    assert row["flags"] == ["CRLF"]  # counted; nothing else changes
    assert row["raw"] is None
    row = _one_record(tokenize, VSC_S)
    assert row["attrs"][-1] == ("Resource_List.walltime", "72:00:00")


@TOKENIZERS
def test_empty_file(tokenize: Any) -> None:
    result = _tokenize(tokenize, b"")
    assert (result.lines_read, result.records.num_rows, result.quarantine.num_rows) == (0, 0, 0)


# --- (b) the fast path is the reference --------------------------------------------------------


def test_fast_path_takes_the_clean_lines_and_declines_the_others() -> None:
    # Without numba, tokenize_torque is the reference: right, but slow, and the tests above vacuous.
    pytest.importorskip("numba", reason="numba is not installed: the fast path is the reference")
    assert fast_module._compile_kernel()
    data = b"\n".join(CLEAN_LINES + DECLINED_LINES) + b"\n"
    buf = np.frombuffer(data, dtype=np.uint8)
    n_lines, last_open, n_equals = fast_module._count_lines(buf)
    tokens = fast_module._Tokens(
        *fast_module._tokenize_lines(buf, n_lines, last_open, n_equals, fast_module._FREE_TEXT)
    )
    expected = [True] * len(CLEAN_LINES) + [False] * len(DECLINED_LINES)
    assert tokens.fast.tolist() == expected


@pytest.mark.parametrize("line", FIXTURE_LINES, ids=range(len(FIXTURE_LINES)))
def test_fast_is_reference_on_each_fixture_line(line: bytes) -> None:
    assert_fast_is_reference(line + b"\n")
    assert_fast_is_reference(line)  # as the last line, without a line end
    assert_fast_is_reference(QUEUED + b"\n" + line + b"\n" + VSC_S + b"\n")


@pytest.mark.parametrize("max_chunks", [64, 1])
def test_fast_is_reference_on_all_fixture_lines_together(
    max_chunks: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the fast rows are cut around the reference rows, and the slices merged when too many
    monkeypatch.setattr(fast_module, "_MAX_CHUNKS", max_chunks)
    assert_fast_is_reference(b"\n".join(FIXTURE_LINES) + b"\n")
    assert_fast_is_reference(b"\n".join(reversed(FIXTURE_LINES)))


def test_fast_is_reference_when_the_file_is_cut_in_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    # Files above a GiB are tokenised in pieces; shrink the pieces to see the seams.
    data = b"\n".join(FIXTURE_LINES * 3) + b"\n" + TRUNCATED
    monkeypatch.setattr(fast_module, "_MAX_PIECE", 300)
    assert len(list(fast_module._pieces(data))) > 5
    assert_fast_is_reference(data)


def _real_inputs(folder: Path) -> list[Path]:
    torque = folder / "torque"
    files = sorted(p for p in torque.rglob("*") if p.is_file())
    assert files, f"no files under {torque}"
    return files


@pytest.mark.realdata
def test_fast_is_reference_on_real_data(real_data: Path) -> None:
    files = _real_inputs(real_data)
    assert {p.parent.name for p in files} >= {"torque", "vsc-kuleuven-2016-06"}
    lines = 0
    for path in files:
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        names = {"src_file": str(path), "site": "real", "source_format": "torque"}
        fast = tokenize_torque(data, **names)
        assert_same(fast, tokenize_torque_reference(data, **names))
        lines += fast.lines_read
    assert lines > 50_000


# --- (c) random mixtures of clean and anomalous lines --------------------------------------------

_KEYS = [b"user", b"queue", b"Exit_status", b"exec_host", b"Resource_List.nodes", b"tasks", b""]
_VALUE_PIECES = [b"a", b"grid", b"0-3", b"=", b";", b'"', b" ", b"n1/0+n2/1", b"17:00:00", b"x y"]
# Fragments that each break one assumption of the fast path.
_ANOMALIES = [
    b"\x00",
    b"\t",
    b"\r",
    b"\x7f",
    b"\x1f",
    b"\xe9",
    b"\xc2\xa0",
    b"\xe2\x80\xa8",
    b"\xff\xfe",
    b'"',
    b"  ",
    b";",
    b"=",
    b"bare",
    b"\xef\xbb\xbf",
]


@st.composite
def _stamps(draw: st.DrawFn) -> bytes:
    month = draw(st.sampled_from([1, 6, 12, 0, 13]))
    day = draw(st.sampled_from([1, 15, 31, 0, 32]))
    hour, minute, second = draw(st.sampled_from([(0, 0, 0), (23, 59, 60), (24, 0, 0), (1, 60, 0)]))
    return f"{month:02d}/{day:02d}/2024 {hour:02d}:{minute:02d}:{second:02d}".encode()


@st.composite
def _tokens(draw: st.DrawFn) -> bytes:
    key = draw(st.sampled_from(_KEYS) | st.binary(max_size=4))
    value = b"".join(draw(st.lists(st.sampled_from(_VALUE_PIECES), max_size=4)))
    if draw(st.booleans()):
        value = b'"' + value + b'"'
    return key + b"=" + value


@st.composite
def _lines(draw: st.DrawFn) -> bytes:
    head = draw(_stamps()) + b";" + draw(st.sampled_from(b"QSEDARLC").map(lambda c: bytes([c])))
    head += b";" + draw(st.sampled_from([b"1.pbs01", b"123[4].server", b"", b"7904", b"a b"]))
    parts = draw(st.lists(_tokens(), max_size=8))
    line = head + draw(st.sampled_from([b";", b"; ", b""])) + b" ".join(parts)
    for _ in range(draw(st.integers(0, 2))):  # break it, here and there
        anomaly = draw(st.sampled_from(_ANOMALIES))
        at = draw(st.integers(0, len(line)))
        line = line[:at] + anomaly + line[at:]
    if draw(st.integers(0, 9)) == 0:
        line = draw(st.sampled_from([b"20150327:", b" ", b"\x00\x00"])) + line
    return line


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(_lines() | st.sampled_from(FIXTURE_LINES) | st.binary(max_size=30), max_size=12),
    end=st.sampled_from([b"\n", b"", b"\r\n"]),
)
def test_fast_is_reference_on_random_mixtures(lines: list[bytes], end: bytes) -> None:
    data = b"\n".join(line.replace(b"\n", b" ") for line in lines)
    assert_fast_is_reference(data + end if data else data)
