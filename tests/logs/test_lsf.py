"""The LSF lsb.acct reader: one test per quirk of JOB_FINISH records, and the real fixture."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gridtrace.errors import LogParseError
from gridtrace.logs import detect_compression, detect_format, get_format, read_lsf
from gridtrace.logs._lsf import (
    assemble_lsf,
    looks_like_lsf,
    split_lsf_record,
    tokenize_lsf_file,
)
from gridtrace.schema import validate

UTC = dt.UTC

# An LSF 10.1 JOB_FINISH record written for these tests (values chosen to be checkable):
# submitted 1700000000, started 1700000100, finished 1700003600 (run 3500 s, runTime 3500),
# 4 slots on node07 in SHORT_EVENTFILE form, run limit 7200 s, maxRMem 409600 KB.
HEAD = (
    '"JOB_FINISH" "10.1" 1700003600 5001 1500 33816578 4 1700000000 0 0 1700000100 "alice" '
    '"normal" "span[hosts=1]" "" "" "login1" "/home/alice" "" "out.%J" "" "1700000000.5001"'
)
HOSTS = '0 1 "4*node07"'
MIDDLE = (
    '64 12.5 "sim ""fast"" run" "./run.sh" 3000.5 99.5 204800 0 -1 0 0 1000 0 0 0 0 -1 0 0 0 '
    '10 2 -1 "" "physics" 0 4 "" "" 0 409600 819200'
)
TAIL = (
    '"" "" "" "" 0 "" 0 "" -1 "/physics/alice" "" "" "" -1 "" "" 6160 "" 1700000100 "" "" '
    '2 1032 "0" 1033 "0" 0 7200 0 300000 "select[type == local] span[hosts=1] " "" -1 "" -1 0 '
    '"" 0 0 "" 3500 "/home/alice" 0 "" 0.000000 0.00 0.00 0.00 0.00 4 "node07" "node07" '
    '"node07" "node07" -1 0 0 0 0 0'
)
LINE = f"{HEAD} {HOSTS} {MIDDLE} {TAIL}"


def _line(*, head: str = HEAD, hosts: str = HOSTS, middle: str = MIDDLE, tail: str = TAIL) -> str:
    return " ".join(part for part in (head, hosts, middle, tail) if part)


def _read(tmp_path: Path, *lines: str, **kwargs: Any) -> Any:
    path = tmp_path / "hpc.lsb.acct"
    path.write_text("".join(line + "\n" for line in lines))
    kwargs.setdefault("errors", "skip")
    return read_lsf(path, **kwargs)


def _reconciled(result: Any) -> None:
    validate(result.records, "records")
    validate(result.quarantine, "quarantine")
    validate(result.jobs, "jobs")
    assert result.lines_read == result.lines_parsed + result.lines_quarantined


def _row(result: Any, index: int = 0) -> dict[str, Any]:
    return dict(result.jobs.slice(index, 1).to_pylist()[0])


def _attrs(result: Any, index: int = 0) -> dict[str, str]:
    return dict(result.records.column("attrs")[index].as_py())


def _at(epoch: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(epoch, tz=UTC)


# ------------------------------------------------------------------ tokens


def test_split_doubled_quotes_and_empty_strings() -> None:
    tokens, quoted = split_lsf_record('"JOB_FINISH" "10.1" 12 "a ""b"" c" "" -1 host1')
    assert tokens == ["JOB_FINISH", "10.1", "12", 'a "b" c', "", "-1", "host1"]
    assert quoted == [True, True, False, True, True, False, False]


def test_split_refuses_broken_quoting() -> None:
    with pytest.raises(ValueError, match="unterminated"):
        split_lsf_record('"JOB_FINISH" "10.1 12')
    with pytest.raises(ValueError, match="malformed"):
        split_lsf_record('"JOB_FINISH"x 12')


@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)))
def test_split_round_trips_quoted_strings(values: list[str]) -> None:
    text = " ".join('"' + v.replace('"', '""') + '"' for v in values)
    tokens, quoted = split_lsf_record(text)
    assert tokens == values
    assert all(quoted)


# ------------------------------------------------------------------ JOB_FINISH fields


def test_lsf10_record_field_by_field(tmp_path: Path) -> None:
    result = _read(tmp_path, LINE, errors="raise")
    _reconciled(result)
    row = _row(result)
    assert row["job_id_raw"] == "5001"
    assert row["job_seq"] == 5001
    assert row["array_index"] is None
    assert row["user"] == "alice"
    assert row["account"] == "physics"
    assert row["queue"] == "normal"
    assert row["job_name"] == 'sim "fast" run'
    assert row["submit_time"] == _at(1700000000)
    assert row["eligible_time"] is None
    assert row["start_time"] == _at(1700000100)
    assert row["end_time"] == _at(1700003600)
    assert (row["wait_s"], row["run_s"], row["walltime_used_s"]) == (100, 3500, 3500)
    assert row["walltime_req_s"] == 7200
    assert row["cpu_time_s"] == pytest.approx(3100.0)
    assert (row["cores_req"], row["cores_alloc"], row["nodes_alloc"]) == (4, 4, 1)
    assert row["exec_hosts"] == ["node07"]
    assert row["mem_used_bytes"] == 409600 * 1024
    assert row["vmem_used_bytes"] == 819200 * 1024
    assert (row["exit_code"], row["exit_signal"]) == (0, None)
    assert row["state"] == "COMPLETED"
    assert row["end_record_type"] == "JOB_FINISH"
    assert row["flags"] is None
    attrs = _attrs(result)
    assert attrs["runLimit"] == "7200"
    assert attrs["options3"] == "0"
    assert attrs["avgMem"] == "300000"
    assert json.loads(attrs["submitEXT"]) == ["1032", "0", "1033", "0"]
    assert json.loads(attrs["allocSlots"]) == ["node07"] * 4
    assert result.records.column("stamp_utc")[0].as_py() == _at(1700003600)


def test_lsf91_host_rusage_six_wide_and_run_limit_first(tmp_path: Path) -> None:
    # LSF 9.1 layout (as in XDMoD's fixture): two hosts of 8 slots, host rusage entries of six
    # tokens, then runLimit 43200, options3 0, avgMem, effectiveResReq, ..., runTime
    head = HEAD.replace('"10.1"', '"9.11"').replace(" 4 1700000000", " 16 1700000000")
    tail = (
        '"" "" "" "" 0 "" 0 "" -1 "/p/alice" "" "" "" -1 "" "" 6160 "" 1700000100 "" "" 0 2 '
        "n1 100 0 1500 40 0 n2 90 0 1500 30 0 43200 0 8000 "
        '"select[type == local] " "" -1 "" -1 0 "" 0 0 "" 3500 "/home/alice" 0 ""'
    )
    result = _read(tmp_path, _line(head=head, hosts='0 2 "8*n1" "8*n2"', tail=tail))
    _reconciled(result)
    row = _row(result)
    assert row["walltime_req_s"] == 43200
    assert row["walltime_used_s"] == 3500
    assert (row["cores_alloc"], row["nodes_alloc"]) == (16, 2)
    assert row["exec_hosts"] == ["n1", "n2"]
    attrs = _attrs(result)
    assert len(json.loads(attrs["hostRusage"])) == 12
    assert attrs["avgMem"] == "8000"
    assert attrs["effectiveResReq"] == "select[type == local] "
    assert row["flags"] is None


def test_host_rusage_five_wide(tmp_path: Path) -> None:
    tail = TAIL.replace('"0" 0 7200', '"0" 1 node07 1024 0 3000 99 7200')
    result = _read(tmp_path, _line(tail=tail), errors="raise")
    attrs = _attrs(result)
    assert json.loads(attrs["hostRusage"]) == ["node07", "1024", "0", "3000", "99"]
    assert attrs["runLimit"] == "7200"
    assert _row(result)["walltime_req_s"] == 7200


def test_repeated_hosts_count_one_slot_each(tmp_path: Path) -> None:
    hosts = '0 3 "n1" "n1" "n2"'
    row = _row(_read(tmp_path, _line(hosts=hosts)))
    assert (row["cores_alloc"], row["nodes_alloc"]) == (3, 2)
    assert row["exec_hosts"] == ["n1", "n2"]


def test_asked_hosts_list(tmp_path: Path) -> None:
    result = _read(tmp_path, _line(hosts='2 "n1" "n2" 1 "4*n2"'), errors="raise")
    assert json.loads(_attrs(result)["askedHosts"]) == ["n1", "n2"]
    assert _row(result)["exec_hosts"] == ["n2"]


def test_extra_trailing_fields_are_kept_and_flagged(tmp_path: Path) -> None:
    result = _read(tmp_path, LINE + ' 7 "x" 3.5', errors="raise")
    _reconciled(result)
    attrs = _attrs(result)
    assert (attrs["unknown1"], attrs["unknown2"], attrs["unknown3"]) == ("7", "x", "3.5")
    assert result.records.column("flags")[0].as_py() == ["EXTRA_FIELDS"]
    assert _row(result)["flags"] == ["EXTRA_FIELDS"]
    assert _row(result)["state"] == "COMPLETED"


def test_old_version_ends_early_without_flag(tmp_path: Path) -> None:
    # an LSF 7.0.6 record ends at the submitEXT count: no run limit, no runTime, no flag
    head = HEAD.replace('"10.1"', '"7.06"')
    tail = '"" "" "" "" 0 "" 0 "" -1 "/physics/alice" "default" "" "" -1 "" "" 2104336 "" 0 "" "" 0'
    row = _row(_read(tmp_path, _line(head=head, tail=tail), errors="raise"))
    assert row["walltime_req_s"] is None
    assert row["walltime_used_s"] is None
    assert row["run_s"] == 3500
    assert row["flags"] is None


def test_fewer_fields_than_needed_is_quarantined(tmp_path: Path) -> None:
    short = f'{HEAD} {HOSTS} 64 12.5 "sim" "./run.sh" 3000.5 99.5'
    result = _read(tmp_path, short, LINE)
    _reconciled(result)
    assert result.quarantine.num_rows == 1
    reason = result.quarantine.column("reason")[0].as_py()
    assert "before ru_maxrss" in reason
    assert result.quarantine.column("src_line")[0].as_py() == 1
    assert result.jobs.num_rows == 1


def test_host_count_past_the_end_is_quarantined(tmp_path: Path) -> None:
    result = _read(tmp_path, f'{HEAD} 0 5 "n1" "n2"')
    assert result.quarantine.column("reason")[0].as_py().startswith("numExHosts is 5")


def test_misaligned_record_is_quarantined(tmp_path: Path) -> None:
    result = _read(tmp_path, _line(hosts='0 2 "4*node07"'))
    _reconciled(result)
    assert result.jobs.num_rows == 0
    assert "jStatus is not an integer" in result.quarantine.column("reason")[0].as_py()


def test_unreadable_tail_count_stops_the_tail(tmp_path: Path) -> None:
    tail = TAIL.replace('"" "" 2 1032', '"" "" x 1032')
    result = _read(tmp_path, _line(tail=tail), errors="raise")
    row = _row(result)
    assert row["flags"] == ["TAIL_UNPARSED"]
    assert row["walltime_req_s"] is None
    assert _attrs(result)["unknown1"] == "x"


def test_array_index(tmp_path: Path) -> None:
    middle = MIDDLE.replace('"" 0 409600', '"" 3 409600')
    row = _row(_read(tmp_path, _line(middle=middle)))
    assert row["job_id_raw"] == "5001[3]"
    assert (row["job_seq"], row["array_index"]) == (5001, 3)
    assert row["job_key"] == "hpc:5001[3]@1700000000"


@pytest.mark.parametrize(
    ("status", "info", "code", "signal", "state", "flag"),
    [
        ("64", "0", 0, None, "COMPLETED", None),
        ("32", "0", 130, None, "FAILED", None),
        ("32", "5", 130, None, "TIMEOUT", "TERM_RUNLIMIT"),
        ("32", "14", 130, None, "CANCELLED", "TERM_OWNER"),
        ("32", "1", 130, None, "PREEMPTED", "TERM_PREEMPT"),
        ("16", "0", 130, None, "UNKNOWN", "STATUS_NONSTANDARD"),
    ],
)
def test_job_status_and_exit_info(
    tmp_path: Path,
    status: str,
    info: str,
    code: int,
    signal: int | None,
    state: str,
    flag: str | None,
) -> None:
    exit_status = "0" if status == "64" else "33280"  # 33280 = 130 << 8, a wait status
    middle = MIDDLE.replace("64 12.5", f"{status} 12.5").replace(
        '"physics" 0 4', f'"physics" {exit_status} 4'
    )
    tail = TAIL.replace('0 "" 0 "" -1 "/physics', f'0 "" {info} "" -1 "/physics')
    row = _row(_read(tmp_path, _line(middle=middle, tail=tail)))
    assert (row["exit_code"], row["exit_signal"], row["state"]) == (code, signal, state)
    assert row["flags"] == ([flag] if flag else None)


def test_exit_by_signal(tmp_path: Path) -> None:
    middle = MIDDLE.replace("64 12.5", "32 12.5").replace('"physics" 0 4', '"physics" 9 4')
    row = _row(_read(tmp_path, _line(middle=middle)))
    assert (row["exit_code"], row["exit_signal"], row["state"]) == (None, 9, "FAILED")


def test_killed_before_start_is_deleted(tmp_path: Path) -> None:
    head = HEAD.replace("0 0 1700000100", "0 0 0")
    middle = MIDDLE.replace("64 12.5", "32 1.0")
    tail = TAIL.replace('0 "" 0 "" -1 "/physics', '0 "" 14 "" -1 "/physics')
    row = _row(_read(tmp_path, _line(head=head, hosts="0 0", middle=middle, tail=tail)))
    assert row["state"] == "DELETED"
    assert {"EXIT_NOT_STARTED", "TERM_OWNER"} <= set(row["flags"])
    assert (row["start_time"], row["end_time"], row["run_s"]) == (None, None, None)
    assert row["exec_hosts"] is None
    assert row["cores_alloc"] is None


def test_a_processor_range_request_keeps_its_minimum(tmp_path: Path) -> None:
    middle = MIDDLE.replace('"physics" 0 4 ', '"physics" 0 8 ')  # maxNumProcessors 8
    assert middle != MIDDLE
    row = _row(_read(tmp_path, _line(middle=middle)))
    assert (row["cores_req"], row["flags"]) == (4, ["CORES_REQ_RANGE"])


def test_done_with_a_failing_exit_status_is_flagged(tmp_path: Path) -> None:
    middle = MIDDLE.replace('"physics" 0 4 ', '"physics" 256 4 ')  # exit code 1
    assert middle != MIDDLE
    row = _row(_read(tmp_path, _line(middle=middle)))
    assert (row["state"], row["exit_code"], row["flags"]) == (
        "COMPLETED",
        1,
        ["EXIT_STATUS_CONFLICT"],
    )


def test_requeued_job_makes_attempts(tmp_path: Path) -> None:
    first = (
        LINE.replace("1700003600 5001", "1700001000 5001")
        .replace("64 12.5", "32 12.5")
        .replace('"" 3500 "/home', '"" 900 "/home')
    )
    second = LINE.replace("1700000000 0 0 1700000100", "1700000000 0 0 1700001500").replace(
        '"" 3500 "/home', '"" 2100 "/home'
    )
    result = _read(tmp_path, second, first)
    rows = sorted(result.jobs.to_pylist(), key=lambda r: r["attempt"])
    assert [r["attempt"] for r in rows] == [0, 1]
    assert [r["n_attempts"] for r in rows] == [2, 2]
    assert [r["state"] for r in rows] == ["REQUEUED", "COMPLETED"]
    assert rows[0]["flags"] == ["STATE_WAS_FAILED"]
    assert rows[0]["job_key"] == rows[1]["job_key"]


def test_same_record_twice_makes_one_job(tmp_path: Path) -> None:
    # was: two rows, both flagged DUPLICATE; the same line twice is one record written twice
    result = _read(tmp_path, LINE, LINE)
    _reconciled(result)
    assert [r["flags"] for r in result.jobs.to_pylist()] == [["DUPLICATE_LINE"]]
    assert (_row(result)["src_line"], _row(result)["n_attempts"]) == (1, 1)
    assert result.records.column("flags").to_pylist() == [None, ["DUPLICATE_LINE"]]
    assert result.info["duplicate_lines"] == 1


def test_same_times_in_two_different_records_are_duplicates(tmp_path: Path) -> None:
    other = LINE.replace('"sim ""fast"" run"', '"renamed"')
    result = _read(tmp_path, LINE, other)
    assert [r["flags"] for r in result.jobs.to_pylist()] == [["DUPLICATE"], ["DUPLICATE"]]
    assert set(result.jobs.column("state").to_pylist()) == {"COMPLETED"}


def test_gpus_from_effective_requirement(tmp_path: Path) -> None:
    tail = TAIL.replace(
        '"select[type == local] span[hosts=1] "',
        '"select[ngpus>0] rusage[ngpus_physical=2.00/host] span[hosts=1] "',
    )
    row = _row(_read(tmp_path, _line(tail=tail)))
    assert (row["gpus_req"], row["gpus_alloc"]) == (2, 2)
    assert row["flags"] == ["GPUS_PER_HOST", "GPUS_ALLOC_FROM_REQUEST"]


def test_gpu_rusage_section_with_key_value_pairs(tmp_path: Path) -> None:
    tail = TAIL.removesuffix("-1 0 0 0 0 0") + '-1 0 0 1 "node07" 2 "1" "a:b" "1" "G=""x""" 0 0'
    result = _read(tmp_path, _line(tail=tail), errors="raise")
    attrs = _attrs(result)
    assert json.loads(attrs["gRusage"]) == ["node07", "2", "1", "a:b", "1", 'G="x"']
    assert attrs["numKVP"] == "0"
    assert _row(result)["flags"] is None


# ------------------------------------------------------------------ other events and lines


def test_other_events_stay_in_records(tmp_path: Path) -> None:
    lines = (
        "# 1234",
        '"JOB_NEW" "10.1" 1700000000 5001 1500 33816578 4 1700000000 0 0 -1 "alice"',
        '"EVENT_ADRSV_FINISH" "10.1" 1700000500 1700000000 "user1#0" 1500 1 "n1"',
        '"JOB_RESIZE" "10.1" 1700000600 5001 0 1500',
        LINE,
    )
    result = _read(tmp_path, *lines, errors="raise")
    _reconciled(result)
    assert result.records.column("record_type").to_pylist() == [
        "COMMENT",
        "JOB_NEW",
        "EVENT_ADRSV_FINISH",
        "JOB_RESIZE",
        "JOB_FINISH",
    ]
    assert result.records.column("job_id_raw").to_pylist() == [None, "5001", None, "5001", "5001"]
    assert _attrs(result, 2)["f3"] == "1700000000"
    assert result.jobs.num_rows == 1
    assert result.info["lsf_events"]["JOB_NEW"] == 1


def test_multiline_quoted_string_is_joined(tmp_path: Path) -> None:
    middle = MIDDLE.replace('"./run.sh"', '"#!/bin/sh\n#BSUB -n 4\n./run.sh"')
    result = _read(tmp_path, _line(middle=middle), LINE, errors="raise")
    _reconciled(result)
    assert result.lines_read == 4
    assert result.records.column("record_type").to_pylist() == [
        "JOB_FINISH",
        "CONTINUATION",
        "CONTINUATION",
        "JOB_FINISH",
    ]
    assert _attrs(result)["command"] == "#!/bin/sh\n#BSUB -n 4\n./run.sh"
    assert _attrs(result, 1) == {"record_line": "1"}
    assert result.jobs.column("src_line").to_pylist() == [1, 4]
    assert _row(result)["flags"] == ["MULTILINE", "DUPLICATE"]


def test_unterminated_quote_quarantines_one_line(tmp_path: Path) -> None:
    broken = LINE.replace('"./run.sh"', '"./run.sh')
    result = _read(tmp_path, broken, LINE)
    _reconciled(result)
    assert result.quarantine.column("reason").to_pylist() == ["unterminated quoted string"]
    assert result.quarantine.column("src_line").to_pylist() == [1]
    assert result.jobs.column("src_line").to_pylist() == [2]


def test_blank_and_foreign_lines_are_quarantined(tmp_path: Path) -> None:
    result = _read(tmp_path, "", "hello world", LINE)
    _reconciled(result)
    assert result.quarantine.column("reason").to_pylist() == [
        "blank line",
        "not an LSF event record (no quoted event name first)",
    ]


def test_non_utf8_is_flagged_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "hpc.acct"
    path.write_bytes(LINE.replace('"alice"', '"al\xe9"', 1).encode("latin-1") + b"\n")
    result = read_lsf(path, errors="raise")
    _reconciled(result)
    assert _row(result)["flags"] == ["NON_UTF8"]
    assert b"al\xe9" in result.records.column("raw")[0].as_py()


def test_errors_raise_names_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(LogParseError, match=r"hpc\.lsb\.acct:2: "):
        _read(tmp_path, LINE, "garbage", errors="raise")


def test_gzip_tokenise_and_assemble(tmp_path: Path) -> None:
    path = tmp_path / "lsb.acct.1.gz"
    path.write_bytes(gzip.compress((LINE + "\n").encode()))
    part = tokenize_lsf_file(path, site="hpc")
    result = assemble_lsf([part], tz="Europe/Paris")
    assert result.jobs.num_rows == 1
    assert result.info["lsf_versions"] == ["10.1"]
    assert result.tz_offset_s is None


def test_empty_file(tmp_path: Path) -> None:
    result = _read(tmp_path)
    _reconciled(result)
    assert result.jobs.num_rows == 0


def test_looks_like_lsf() -> None:
    assert looks_like_lsf((LINE + "\n").encode())
    assert looks_like_lsf(b'# 5\n"JOB_NEW" "10.1" 1700000000 5001 1500\n')
    assert not looks_like_lsf(b"1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert not looks_like_lsf(b"05/03/2024 10:00:00;Q;202.pbs01;queue=grid\n")
    assert not looks_like_lsf(b'[\n{\n "ClusterId": 1\n}\n]\n')
    assert not looks_like_lsf(b"")


def test_registered_with_alias(tmp_path: Path) -> None:
    assert get_format("lsb.acct").name == "lsf"
    path = tmp_path / "lsb.acct"
    path.write_text(LINE + "\n")
    assert detect_format(path) == "lsf"


# ------------------------------------------------------------------ bad input


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=600))
def test_random_bytes_never_crash(tmp_path: Path, data: bytes) -> None:
    # a truncated compressed stream is refused by the shared read_log_bytes, before any reader
    assume(detect_compression(data[:8]) is None)
    path = tmp_path / "fuzz.acct"
    path.write_bytes(data)
    _reconciled(read_lsf(path, errors="skip"))


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=len(LINE)), order=st.permutations([0, 1, 2]))
def test_truncated_and_shuffled_lines(tmp_path: Path, cut: int, order: list[int]) -> None:
    lines = [LINE, LINE[:cut], LINE.replace(" ", "\t", 5)]
    path = tmp_path / "fuzz.acct"
    path.write_text("".join(lines[i] + "\n" for i in order))
    result = read_lsf(path, errors="skip")
    _reconciled(result)
    assert result.jobs.num_rows >= 1
    for reason in result.quarantine.column("reason").to_pylist():
        assert reason


# ------------------------------------------------------------------ real data


@pytest.mark.realdata
def test_real_xdmod_fixture(real_data: Path) -> None:
    # ubccr/xdmod tests/artifacts/xdmod/unit/shredder/lsf/input/accounting-logs.log (LSF 9.1)
    path = real_data / "other" / "lsf" / "xdmod-shredder-lsf-fixture.log"
    assert detect_format(path) == "lsf"
    result = read_lsf(path, errors="raise")
    _reconciled(result)
    assert result.lines_read == 2
    assert result.jobs.num_rows == 2
    first, second = result.jobs.to_pylist()
    # checked against the raw line: submit 1389642318, start 1389642771, event 1389683139
    assert first["submit_time"] == _at(1389642318)
    assert first["start_time"] == _at(1389642771)
    assert first["end_time"] == _at(1389683139)
    assert (first["wait_s"], first["run_s"], first["walltime_used_s"]) == (453, 40368, 40368)
    assert first["walltime_req_s"] == 43200  # #BSUB -W 12:00 in the embedded script
    assert first["cpu_time_s"] == pytest.approx(5793844.23 + 679.06)
    assert (first["cores_req"], first["cores_alloc"], first["nodes_alloc"]) == (128, 128, 8)
    assert first["exec_hosts"][0] == "host1201-ib"
    assert first["mem_used_bytes"] == 10725376 * 1024
    assert (first["user"], first["account"], first["queue"]) == (
        "anonuser",
        "anonproject",
        "regular",
    )
    assert first["job_name"] == "abcde0040"
    assert (first["exit_code"], first["state"]) == (0, "COMPLETED")
    # the second record repeats the job with one-slot entries "host1" "host1" "host2" ...
    assert (second["cores_alloc"], second["nodes_alloc"]) == (8, 4)
    assert second["exec_hosts"] == ["host1", "host2", "host3", "host4"]
    attrs = dict(result.records.column("attrs")[0].as_py())
    assert attrs["avgMem"] == "8688640"
    assert json.loads(attrs["networkAlloc"]) == ["18338657682652659712", "1"]
    assert 'BSUB -R "span[ptile=16]"' in attrs["command"]


@pytest.mark.realdata
def test_real_files_of_other_formats_are_not_claimed(real_data: Path) -> None:
    for path in sorted(p for p in real_data.rglob("*") if p.is_file() and p.suffix != ".md"):
        data = path.read_bytes()
        head = gzip.decompress(data)[:65536] if data[:2] == b"\x1f\x8b" else data[:65536]
        assert looks_like_lsf(head) == ("lsf" in path.parts), path


@given(
    st.lists(
        st.one_of(
            st.text(alphabet='ab "\t', max_size=6).map(lambda v: '"' + v.replace('"', '""') + '"'),
            st.from_regex(r"[a-z0-9.*-]{1,5}", fullmatch=True),
        ),
        max_size=8,
    )
)
def test_quote_splitting_shortcut_agrees_with_the_grammar(fields: list[str]) -> None:
    from gridtrace.logs._lsf import _FIND, _split_plain

    text = " ".join(fields)
    fast = _split_plain(text)
    if fast is not None:
        expected = [
            (s.replace('""', '"'), True) if not b else (b, False) for s, b in _FIND.findall(text)
        ]
        assert list(zip(*fast, strict=True)) == expected
    assert split_lsf_record(text)[0] == [
        f[1:-1].replace('""', '"') if f.startswith('"') else f for f in fields
    ]


def test_a_number_too_large_for_its_column_is_null_and_flagged(tmp_path: Path) -> None:
    wide = HEAD.replace(" 33816578 4 ", " 33816578 3000000000 ").replace(" 5001 ", " 5002 ")
    result = _read(tmp_path, LINE, _line(head=wide))
    _reconciled(result)
    assert result.lines_read == result.jobs.num_rows == 2
    assert result.jobs.column("cores_req")[1].as_py() is None
    assert "VALUE_UNREADABLE" in result.jobs.column("flags")[1].as_py()
    assert "VALUE_UNREADABLE" not in (result.jobs.column("flags")[0].as_py() or [])


def test_numbers_with_blanks_around_them_are_read() -> None:
    import pyarrow as pa

    from gridtrace.logs import _lsf

    values, unreadable = _lsf._floats(pa.array([" 5", "7 ", "x", "", None]))
    assert values[:2].tolist() == [5.0, 7.0]
    assert unreadable.tolist() == [False, False, True, False, False]
