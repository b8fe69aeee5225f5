"""The HTCondor history reader: condor_history -json / -jsonl, one test per quirk.

No real HTCondor history is available; the ads below are written from the job ClassAd
attributes of the HTCondor manual (units: RequestMemory MiB, ResidentSetSize KiB, times epochs).
"""

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
from gridtrace.logs import detect_compression, detect_format, get_format, read_htcondor
from gridtrace.logs._htcondor import (
    assemble_htcondor,
    looks_like_htcondor,
    tokenize_htcondor_file,
)
from gridtrace.schema import validate

UTC = dt.UTC

AD: dict[str, Any] = {
    "ClusterId": 1234,
    "ProcId": 0,
    "GlobalJobId": "ce01.example.org#1234.0#1700000000",
    "MyType": "Job",
    "JobUniverse": 5,
    "Owner": "alice",
    "AccountingGroup": "group_atlas.prod.alice",
    "JobBatchName": "sim-batch",
    "Cmd": "/home/alice/run.sh",
    "QDate": 1700000000,
    "JobStartDate": 1700000100,
    "JobCurrentStartDate": 1700000100,
    "CompletionDate": 1700003700,
    "EnteredCurrentStatus": 1700003700,
    "RemoteWallClockTime": 3600.0,
    "RemoteUserCpu": 3000.0,
    "RemoteSysCpu": 50.0,
    "RequestCpus": 8,
    "CpusProvisioned": 8,
    "RequestMemory": 2048,
    "ResidentSetSize": 1048576,
    "ResidentSetSize_RAW": 1048000,
    "RequestGpus": 1,
    "GpusProvisioned": 1,
    "RequestDisk": "/Expr(DiskUsage)/",
    "JobStatus": 4,
    "ExitBySignal": False,
    "ExitCode": 0,
    "NumJobStarts": 1,
    "LastRemoteHost": "slot1_3@wn042.example.org",
}


def _ad(**changes: Any) -> dict[str, Any]:
    ad = {**AD, **changes}
    return {k: v for k, v in ad.items() if v is not ...}


def _json(*ads: dict[str, Any]) -> str:
    """Pretty -json output: an array, one attribute a line, objects separated by a ',' line."""
    blocks = []
    for ad in ads:
        body = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in ad.items())
        blocks.append("{\n" + body + "\n}")
    return "[\n" + "\n,\n".join(blocks) + "\n]\n"


def _jsonl(*ads: dict[str, Any]) -> str:
    return "".join(json.dumps(ad) + "\n" for ad in ads)


def _read(tmp_path: Path, text: str, **kwargs: Any) -> Any:
    path = tmp_path / "t2.history.json"
    path.write_text(text)
    kwargs.setdefault("errors", "skip")
    return read_htcondor(path, **kwargs)


def _reconciled(result: Any) -> None:
    validate(result.records, "records")
    validate(result.quarantine, "quarantine")
    validate(result.jobs, "jobs")
    assert result.lines_read == result.lines_parsed + result.lines_quarantined


def _row(result: Any, index: int = 0) -> dict[str, Any]:
    return dict(result.jobs.slice(index, 1).to_pylist()[0])


def _at(epoch: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(epoch, tz=UTC)


# ------------------------------------------------------------------ layouts


def test_json_array_over_many_lines(tmp_path: Path) -> None:
    text = _json(AD, _ad(ProcId=1))
    result = _read(tmp_path, text, errors="raise")
    _reconciled(result)
    n_lines = text.count("\n")
    assert result.lines_read == n_lines
    types = result.records.column("record_type").to_pylist()
    assert types.count("AD") == 2
    assert types[0] == "SEP"  # "["
    assert types[1] == "AD"  # the first "{"
    assert types.count("SEP") == 3  # "[", ",", "]"
    assert types.count("CONT") == n_lines - 5
    assert result.jobs.column("src_line").to_pylist() == [2, len(AD) + 5]
    assert result.jobs.column("job_id_raw").to_pylist() == ["1234.0", "1234.1"]
    cont = result.records.filter([t == "CONT" for t in types])
    assert set(cont.column("job_id_raw").to_pylist()) == {"1234.0", "1234.1"}
    assert dict(cont.column("attrs")[0].as_py()) == {"record_line": "2"}


def test_jsonl_one_ad_per_line(tmp_path: Path) -> None:
    result = _read(tmp_path, _jsonl(AD, _ad(ProcId=1), _ad(ClusterId=1235)), errors="raise")
    _reconciled(result)
    assert result.lines_read == 3
    assert result.records.column("record_type").to_pylist() == ["AD", "AD", "AD"]
    assert result.jobs.column("src_line").to_pylist() == [1, 2, 3]


def test_compact_array_on_one_line_counts_one_unit_per_ad(tmp_path: Path) -> None:
    result = _read(tmp_path, json.dumps([AD, _ad(ProcId=1)]) + "\n", errors="raise")
    _reconciled(result)
    assert result.lines_read == 2
    assert result.jobs.column("src_line").to_pylist() == [1, 1]


# ------------------------------------------------------------------ mapping


def test_completed_job_field_by_field(tmp_path: Path) -> None:
    result = _read(tmp_path, _jsonl(AD), errors="raise")
    row = _row(result)
    assert row["job_id_raw"] == "1234.0"
    assert (row["job_seq"], row["array_index"]) == (1234, 0)
    assert row["job_key"] == "t2:1234.0@1700000000"
    assert (row["attempt"], row["n_attempts"]) == (0, 1)
    assert row["user"] == "alice"
    assert row["account"] == "group_atlas.prod"
    assert row["job_name"] == "sim-batch"
    assert row["submit_time"] == _at(1700000000)
    assert row["start_time"] == _at(1700000100)
    assert row["end_time"] == _at(1700003700)
    assert (row["wait_s"], row["run_s"], row["walltime_used_s"]) == (100, 3600, 3600)
    assert row["cpu_time_s"] == pytest.approx(3050.0)
    assert (row["cores_req"], row["cores_alloc"]) == (8, 8)
    assert (row["gpus_req"], row["gpus_alloc"]) == (1, 1)
    assert row["exec_hosts"] == ["wn042.example.org"]
    assert row["nodes_alloc"] == 1
    assert row["mem_req_bytes"] == 2048 * 2**20
    assert row["mem_used_bytes"] == 1048000 * 1024  # the _RAW value, KiB
    assert (row["exit_code"], row["exit_signal"]) == (0, None)
    assert row["state"] == "COMPLETED"
    assert row["flags"] is None
    attrs = dict(result.records.column("attrs")[0].as_py())
    assert attrs["ExitBySignal"] == "false"
    assert attrs["RemoteWallClockTime"] == "3600.0"
    assert attrs["RequestDisk"] == "/Expr(DiskUsage)/"
    assert result.records.column("stamp_utc")[0].as_py() == _at(1700003700)


def test_acct_group_is_preferred(tmp_path: Path) -> None:
    row = _row(_read(tmp_path, _jsonl(_ad(AcctGroup="group_cms", AccountingGroup="x.alice"))))
    assert row["account"] == "group_cms"


def test_accounting_group_without_user_suffix_is_kept(tmp_path: Path) -> None:
    row = _row(_read(tmp_path, _jsonl(_ad(AccountingGroup="group_lhcb"))))
    assert row["account"] == "group_lhcb"


def test_nonzero_exit_code_is_failed(tmp_path: Path) -> None:
    row = _row(_read(tmp_path, _jsonl(_ad(ExitCode=3))))
    assert (row["exit_code"], row["state"]) == (3, "FAILED")


def test_exit_by_signal(tmp_path: Path) -> None:
    row = _row(_read(tmp_path, _jsonl(_ad(ExitBySignal=True, ExitSignal=9, ExitCode=...))))
    assert (row["exit_code"], row["exit_signal"], row["state"]) == (None, 9, "FAILED")


def test_removed_after_start_ends_at_status_time(tmp_path: Path) -> None:
    ad = _ad(JobStatus=3, CompletionDate=0, EnteredCurrentStatus=1700002000, ExitCode=...)
    row = _row(_read(tmp_path, _jsonl(ad)))
    assert row["state"] == "CANCELLED"
    assert row["end_time"] == _at(1700002000)
    assert row["run_s"] == 1900
    assert "END_FROM_STATUS_TIME" in row["flags"]


def test_removed_before_start_is_deleted(tmp_path: Path) -> None:
    ad = _ad(
        JobStatus=3,
        JobStartDate=...,
        JobCurrentStartDate=...,
        CompletionDate=0,
        EnteredCurrentStatus=1700000500,
        NumJobStarts=0,
        LastRemoteHost=...,
        RemoteWallClockTime=0.0,
        CpusProvisioned=...,
        GpusProvisioned=...,
    )
    row = _row(_read(tmp_path, _jsonl(ad)))
    assert row["state"] == "DELETED"
    assert (row["start_time"], row["end_time"], row["run_s"], row["wait_s"]) == (None,) * 4
    assert row["exec_hosts"] is None
    assert row["cores_alloc"] is None
    assert (row["attempt"], row["n_attempts"]) == (0, 1)


def test_restarted_job_is_its_last_attempt(tmp_path: Path) -> None:
    ad = _ad(NumJobStarts=3, JobCurrentStartDate=1700002100, RemoteWallClockTime=5000.0)
    row = _row(_read(tmp_path, _jsonl(ad)))
    assert (row["attempt"], row["n_attempts"]) == (2, 3)
    assert row["start_time"] == _at(1700002100)
    assert (row["run_s"], row["walltime_used_s"]) == (1600, 5000)
    assert row["flags"] == ["ATTEMPT_UNLOGGED"]


@pytest.mark.parametrize("starts", [40000, 2**31, -2, 2.5, 1e300])
def test_damaged_num_job_starts_is_flagged_not_wrapped(tmp_path: Path, starts: float) -> None:
    # n_attempts is int16: 40000 starts cast as they are would give a negative attempt
    row = _row(_read(tmp_path, _jsonl(_ad(NumJobStarts=starts))))
    assert (row["attempt"], row["n_attempts"]) == (0, 1)
    assert row["flags"] == ["VALUE_UNREADABLE"]


def test_the_largest_num_job_starts_that_fits_is_kept(tmp_path: Path) -> None:
    row = _row(_read(tmp_path, _jsonl(_ad(NumJobStarts=32767))))
    assert (row["attempt"], row["n_attempts"]) == (32766, 32767)
    assert "VALUE_UNREADABLE" not in row["flags"]


def test_start_from_first_run_when_current_missing(tmp_path: Path) -> None:
    row = _row(_read(tmp_path, _jsonl(_ad(JobCurrentStartDate=...))))
    assert row["start_time"] == _at(1700000100)
    assert row["flags"] == ["START_FROM_FIRST_RUN"]


def test_cores_alloc_from_request(tmp_path: Path) -> None:
    row = _row(_read(tmp_path, _jsonl(_ad(CpusProvisioned=...))))
    assert row["cores_alloc"] == 8
    assert row["flags"] == ["CORES_ALLOC_FROM_REQUEST"]


def test_remote_host_when_no_last_remote_host(tmp_path: Path) -> None:
    row = _row(_read(tmp_path, _jsonl(_ad(LastRemoteHost=..., RemoteHost="slot1@wn7"))))
    assert row["exec_hosts"] == ["wn7"]
    assert row["flags"] == ["HOST_FROM_REMOTE_HOST"]


@pytest.mark.parametrize(
    ("changes", "column", "value", "flag"),
    [
        ({"ResidentSetSize_RAW": ...}, "mem_used_bytes", 1048576 * 1024, "MEM_USED_ROUNDED"),
        ({"ExitCode": ...}, "state", "COMPLETED", "EXIT_CODE_MISSING"),
        ({"NumJobStarts": ...}, "attempt", 0, "NUM_STARTS_MISSING"),
        ({"AccountingGroup": "group_atlas"}, "account", "group_atlas", "ACCOUNT_GROUP_WHOLE"),
        ({}, "account", "group_atlas.prod", None),
    ],
)
def test_fallbacks_are_flagged(
    tmp_path: Path, changes: dict[str, Any], column: str, value: Any, flag: str | None
) -> None:
    row = _row(_read(tmp_path, _jsonl(_ad(**changes))))
    assert row[column] == value
    assert row["flags"] == ([flag] if flag else None)


@pytest.mark.parametrize(
    ("status", "state", "flag"),
    [
        (1, "PENDING", None),
        (2, "RUNNING", None),
        (5, "PENDING", "HELD"),
        (7, "RUNNING", "SUSPENDED"),
    ],
)
def test_unfinished_jobs_have_no_end(tmp_path: Path, status: int, state: str, flag: str) -> None:
    ad = _ad(JobStatus=status, CompletionDate=0, ExitCode=...)
    if status == 1:
        ad = _ad(
            JobStatus=1,
            CompletionDate=0,
            ExitCode=...,
            JobStartDate=...,
            JobCurrentStartDate=...,
            CpusProvisioned=...,
        )
    row = _row(_read(tmp_path, _jsonl(ad)))
    assert row["state"] == state
    assert row["end_time"] is None
    assert row["run_s"] is None
    assert (flag in row["flags"]) if flag else (row["flags"] is None)


def test_unknown_status(tmp_path: Path) -> None:
    row = _row(_read(tmp_path, _jsonl(_ad(JobStatus=9))))
    assert row["state"] == "UNKNOWN"
    assert row["flags"] == ["STATUS_NONSTANDARD"]


def test_expression_value_is_null_and_flagged(tmp_path: Path) -> None:
    expr = "/Expr(ifthenelse(MemoryUsage =!= undefined, MemoryUsage, 1024))/"
    row = _row(_read(tmp_path, _jsonl(_ad(RequestMemory=expr))))
    assert row["mem_req_bytes"] is None
    assert row["flags"] == ["EXPRESSION"]


def test_unreadable_number_is_null_and_flagged(tmp_path: Path) -> None:
    row = _row(_read(tmp_path, _jsonl(_ad(RequestCpus="eight"))))
    assert row["cores_req"] is None
    assert row["flags"] == ["VALUE_UNREADABLE"]


def test_wallclock_mismatch(tmp_path: Path) -> None:
    row = _row(_read(tmp_path, _jsonl(_ad(RemoteWallClockTime=7200.0))))
    assert row["flags"] == ["WALLTIME_MISMATCH"]
    assert row["run_s"] == 3600


def test_the_same_ad_twice_makes_one_job(tmp_path: Path) -> None:
    # was: two rows, both flagged DUPLICATE; an ad written twice is one job
    result = _read(tmp_path, _jsonl(AD, AD))
    _reconciled(result)
    assert [r["flags"] for r in result.jobs.to_pylist()] == [["DUPLICATE_LINE"]]
    assert result.records.column("flags").to_pylist() == [None, ["DUPLICATE_LINE"]]
    assert result.info["duplicate_lines"] == 1


def test_same_job_and_qdate_in_two_different_ads_are_duplicates(tmp_path: Path) -> None:
    result = _read(tmp_path, _jsonl(AD, _ad(JobBatchName="renamed")))
    assert [r["flags"] for r in result.jobs.to_pylist()] == [["DUPLICATE"], ["DUPLICATE"]]


# ------------------------------------------------------------------ bad input


def test_broken_object_in_array_is_quarantined_at_its_start(tmp_path: Path) -> None:
    good = _json(AD, _ad(ProcId=1), _ad(ProcId=2))
    lines = good.split("\n")
    second = lines.index("{", 2)  # 0-based index of the second object's "{"
    lines[second + 3] = '  "Owner" "bob",'  # a missing colon
    text = "\n".join(lines)
    result = _read(tmp_path, text)
    _reconciled(result)
    assert result.jobs.column("job_id_raw").to_pylist() == ["1234.0", "1234.2"]
    lines_q = result.quarantine.column("src_line").to_pylist()
    reasons = result.quarantine.column("reason").to_pylist()
    assert lines_q[0] == second + 1
    assert reasons[0].startswith("broken JSON object: Expecting ':' delimiter")
    assert all(r == f"inside the broken object of line {second + 1}" for r in reasons[1:])
    assert len(lines_q) == len(AD) + 3  # "{", attributes, "}", the "," line before the next


def test_broken_line_in_jsonl(tmp_path: Path) -> None:
    text = _jsonl(AD) + '{"ClusterId": 1235, "ProcId": 0,\n' + _jsonl(_ad(ClusterId=1236))
    result = _read(tmp_path, text)
    _reconciled(result)
    assert result.quarantine.column("src_line").to_pylist() == [2]
    assert result.jobs.column("job_id_raw").to_pylist() == ["1234.0", "1236.0"]


def test_ad_without_job_id_is_quarantined(tmp_path: Path) -> None:
    text = _jsonl({"MyType": "Machine", "Name": "slot1@wn7"}, AD)
    result = _read(tmp_path, text)
    _reconciled(result)
    assert result.quarantine.column("reason").to_pylist() == [
        "ClassAd without ClusterId and ProcId: not a job ad"
    ]
    assert result.jobs.num_rows == 1


def test_text_that_is_not_json(tmp_path: Path) -> None:
    result = _read(tmp_path, "hello\n" + _jsonl(AD))
    _reconciled(result)
    assert result.quarantine.column("reason").to_pylist() == ["not a JSON object"]
    assert result.jobs.num_rows == 1


def test_non_utf8_is_flagged_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "t2.json"
    path.write_bytes(
        _jsonl(_ad(JobBatchName="r\u00e9sultat"))
        .encode("utf-8")
        .replace(b"r\\u00e9sultat", b"r\xe9sultat")
    )
    result = read_htcondor(path, errors="raise")
    _reconciled(result)
    row = _row(result)
    assert row["flags"] == ["NON_UTF8"]
    assert row["job_name"] == "résultat"  # Windows-1252, the stated fallback
    assert b"r\xe9sultat" in result.records.column("raw")[0].as_py()


def test_errors_raise_names_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(LogParseError, match=r"t2\.history\.json:2: "):
        _read(tmp_path, _jsonl(AD) + "{broken\n", errors="raise")


def test_tokenise_assemble_and_empty(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_text(_jsonl(AD))
    result = assemble_htcondor([tokenize_htcondor_file(path, site="t2")], tz="UTC")
    assert result.info == {
        "format": "htcondor",
        "htcondor_ads": 1,
        "duplicate_lines": 0,
        "nul_lines": 0,
        "nul_bytes": 0,
    }
    empty = _read(tmp_path, "")
    _reconciled(empty)
    assert empty.jobs.num_rows == 0
    brackets = _read(tmp_path, "[\n]\n")
    _reconciled(brackets)
    assert brackets.lines_read == 2


def test_looks_like_htcondor(tmp_path: Path) -> None:
    assert looks_like_htcondor(_json(AD).encode())
    assert looks_like_htcondor(_jsonl(AD).encode())
    assert not looks_like_htcondor(b'{"jobs": []}\n')
    assert not looks_like_htcondor(b'"JOB_FINISH" "10.1" 1700003600 5001\n')
    assert not looks_like_htcondor(b"1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert get_format("condor").name == "htcondor"
    path = tmp_path / "history.json"
    path.write_text(_json(AD))
    assert detect_format(path) == "htcondor"


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=600))
def test_random_bytes_never_crash(tmp_path: Path, data: bytes) -> None:
    # a truncated compressed stream is refused by the shared read_log_bytes, before any reader
    assume(detect_compression(data[:8]) is None)
    path = tmp_path / "fuzz.json"
    path.write_bytes(data)
    _reconciled(read_htcondor(path, errors="skip"))


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=400), seed=st.randoms(use_true_random=False))
def test_truncated_and_shuffled_lines(tmp_path: Path, cut: int, seed: Any) -> None:
    lines = _json(AD, _ad(ProcId=1)).split("\n")
    seed.shuffle(lines)
    text = "\n".join(lines)
    path = tmp_path / "fuzz.json"
    path.write_text(text[: len(text) - cut])
    result = read_htcondor(path, errors="skip")
    _reconciled(result)
    for reason in result.quarantine.column("reason").to_pylist():
        assert reason
    lines_jsonl = _jsonl(AD, _ad(ProcId=1), _ad(ProcId=2)).split("\n")
    seed.shuffle(lines_jsonl)
    path.write_text("\n".join(lines_jsonl)[: max(0, len("\n".join(lines_jsonl)) - cut)])
    _reconciled(read_htcondor(path, errors="skip"))


@pytest.mark.realdata
def test_real_files_are_not_claimed(real_data: Path) -> None:
    for path in sorted(p for p in real_data.rglob("*") if p.is_file() and p.suffix != ".md"):
        data = path.read_bytes()
        head = gzip.decompress(data)[:65536] if data[:2] == b"\x1f\x8b" else data[:65536]
        assert not looks_like_htcondor(head), path


def test_jsonl_fast_path_gives_the_scanner_attrs(tmp_path: Path) -> None:
    # one ad a line is read line by line; the same ads in pretty -json go through the scanner
    ad = _ad(
        RemoteSysCpu=1.50,
        Big=10**20,
        Tiny=1e-7,
        Huge=1e300,
        ExitBySignal=True,
        WantCheckpoint=False,
        Nested={"a": [1, 2.5, None]},
        Missing=None,
    )
    fast = _read(tmp_path, _jsonl(ad, _ad(ClusterId=1235)))
    slow = _read(tmp_path, _json(ad, _ad(ClusterId=1235)))
    fast_attrs = [dict(a) for a in fast.records.column("attrs").to_pylist() if a]
    slow_attrs = [dict(a) for a in slow.records.column("attrs").to_pylist() if a and len(a) > 1]
    assert fast_attrs == slow_attrs
    assert fast_attrs[0]["RemoteSysCpu"] == "1.5"
    assert fast_attrs[0]["Big"] == "100000000000000000000"
    assert fast_attrs[0]["Huge"] == "1e+300"
    assert fast_attrs[0]["ExitBySignal"] == "true"
    assert fast_attrs[0]["Nested"] == '{"a": [1, 2.5, null]}'
    assert fast_attrs[0]["Missing"] is None
    assert fast.jobs.column("exit_signal").to_pylist() == [None, None]


def test_jsonl_with_a_broken_line_falls_back_to_the_scanner(tmp_path: Path) -> None:
    text = _jsonl(_ad()) + '{"ClusterId": 9, "ProcId":\n' + _jsonl(_ad(ClusterId=1236))
    result = _read(tmp_path, text)
    _reconciled(result)
    assert result.lines_read == 3
    assert result.jobs.column("job_id_raw").to_pylist() == ["1234.0", "1236.0"]
    assert result.quarantine.column("src_line").to_pylist() == [2]


def test_text_after_an_ad_on_its_own_line_is_not_counted_twice(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # found by the fuzzer: a NUL after the last ad's closing brace made that line count twice;
    # a NUL line is now quarantined whole, so the same happens with other text after the ad
    ad = '{"ClusterId": 7, "ProcId": 0, "Owner": "bob", "QDate": 1700000000, "JobStatus": 3}'
    result = _read(tmp_path, f"{ad}\n{ad} x\n", errors="skip")
    assert result.lines_read == 2
    assert result.records.num_rows + result.quarantine.num_rows == 2
    assert result.jobs.num_rows >= 1
    assert ":2: not a JSON object after the ad on this line" in caplog.text


def test_an_ad_on_a_line_holding_nul_bytes_is_no_job(tmp_path: Path) -> None:
    ad = '{"ClusterId": 7, "ProcId": 0, "Owner": "bob", "QDate": 1700000000, "JobStatus": 3}'
    result = _read(tmp_path, f"{ad}\n{ad}\x00\n\x00\x00{ad}\n", errors="skip")
    _reconciled(result)
    assert result.records.column("src_line").to_pylist() == [1]
    assert result.quarantine.column("src_line").to_pylist() == [2, 3]
    assert set(result.quarantine.column("reason").to_pylist()) == {
        "NUL bytes in the line (a crash or a log rotation left them): a fragment, not a record"
    }
    assert (result.info["nul_lines"], result.info["nul_bytes"]) == (2, 3)


@pytest.mark.parametrize(
    ("change", "column"),
    [
        ({"ProcId": 2**31}, "array_index"),
        ({"RequestCpus": 2**40}, "cores_req"),
        ({"JobCurrentStartDate": 10**14}, "start_time"),  # past the year 9999
    ],
)
def test_a_number_too_large_for_its_column_is_null_and_flagged(
    tmp_path: Path, change: dict[str, int], column: str
) -> None:
    result = _read(tmp_path, _jsonl(AD, _ad(ClusterId=1235, **change)))
    _reconciled(result)
    assert result.lines_read == result.jobs.num_rows == 2
    assert result.jobs.column(column)[1].as_py() is None
    assert "VALUE_UNREADABLE" in result.jobs.column("flags")[1].as_py()
    assert "VALUE_UNREADABLE" not in (result.jobs.column("flags")[0].as_py() or [])
