"""The Slurm sacct reader: one test per quirk of ``sacct --parsable2`` dumps, and the real logs."""

from __future__ import annotations

import datetime as dt
import gzip
from pathlib import Path
from typing import Any

import pytest

from gridtrace.errors import ConfigError, LogParseError
from gridtrace.logs._slurm import (
    SLURM_FIELDS,
    assemble_slurm,
    expand_array_ids,
    expand_hostlist,
    looks_like_slurm,
    read_slurm,
    tokenize_slurm_file,
)
from gridtrace.schema import validate

UTC = dt.UTC

BASE: dict[str, str] = {
    "JobID": "1001",
    "JobIDRaw": "1001",
    "Cluster": "hpc",
    "Partition": "batch",
    "QOS": "normal",
    "Account": "physics",
    "Group": "phys",
    "GID": "500",
    "User": "alice",
    "UID": "1500",
    "Submit": "2024-05-03T10:00:00",
    "Eligible": "2024-05-03T10:00:01",
    "Start": "2024-05-03T10:01:40",
    "End": "2024-05-03T11:01:40",
    "Elapsed": "01:00:00",
    "ExitCode": "0:0",
    "State": "COMPLETED",
    "NNodes": "2",
    "NCPUS": "16",
    "ReqCPUS": "16",
    "ReqMem": "2000Mc",
    "ReqTRES": "billing=16,cpu=16,mem=32000M,node=2",
    "AllocTRES": "billing=16,cpu=16,mem=32000M,node=2",
    "Timelimit": "02:00:00",
    "NodeList": "n[01-02]",
    "JobName": "sim",
}


def _line(**overrides: str) -> str:
    values = {**BASE, **overrides}
    return "|".join(values[name] for name in SLURM_FIELDS)


def _read(tmp_path: Path, *lines: str, tz: str | None = "UTC", **kwargs: Any) -> Any:
    path = tmp_path / "hpc.sacct"
    path.write_text("".join(line + "\n" for line in lines))
    return read_slurm(path, tz=tz, **kwargs)


def _row(result: Any, index: int = 0) -> dict[str, Any]:
    return dict(result.jobs.slice(index, 1).to_pylist()[0])


def _at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


def _reconciled(result: Any) -> None:
    validate(result.records, "records")
    validate(result.quarantine, "quarantine")
    validate(result.jobs, "jobs")
    assert result.lines_read == result.lines_parsed + result.lines_quarantined


# ------------------------------------------------------------------ one test per quirk


def test_a_plain_job_line(tmp_path: Path) -> None:
    result = _read(tmp_path, _line())
    _reconciled(result)
    assert result.records.column("record_type").to_pylist() == ["J"]
    job = _row(result)
    assert job["job_id_raw"] == "1001"
    assert (job["job_seq"], job["array_index"], job["attempt"], job["n_attempts"]) == (
        1001,
        None,
        0,
        1,
    )
    assert (job["user"], job["group"], job["account"], job["queue"]) == (
        "alice",
        "phys",
        "physics",
        "batch",
    )
    assert job["submit_time"] == job["queue_time"] == _at("2024-05-03T10:00:00")
    assert job["eligible_time"] == _at("2024-05-03T10:00:01")
    assert job["start_time"] == _at("2024-05-03T10:01:40")
    assert job["end_time"] == _at("2024-05-03T11:01:40")
    assert (job["wait_s"], job["run_s"], job["walltime_used_s"]) == (100, 3600, 3600)
    assert job["walltime_req_s"] == 7200
    assert (job["nodes_req"], job["cores_req"], job["nodes_alloc"], job["cores_alloc"]) == (
        2,
        16,
        2,
        16,
    )
    assert job["state"] == "COMPLETED"
    assert job["exec_hosts"] == ["n01", "n02"]
    assert job["job_key"] == f"hpc:1001@{int(_at('2024-05-03T10:00:00').timestamp())}"
    assert job["tz_offset_s"] == 0
    assert job["src_line"] == 1
    assert job["job_name"] == "sim"


def test_no_time_zone_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"pass tz.*TZ=UTC"):
        _read(tmp_path, _line(), tz=None)


def test_times_with_an_offset_need_no_zone(tmp_path: Path) -> None:
    line = _line(
        Submit="2024-05-03T10:00:00Z",
        Eligible="2024-05-03T10:00:00Z",
        Start="2024-05-03T12:00:00+02:00",
        End="2024-05-03T13:00:00+02:00",
    )
    job = _row(_read(tmp_path, line, tz=None))
    assert job["start_time"] == _at("2024-05-03T10:00:00")
    assert job["run_s"] == 3600


def test_unknown_zone_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown time zone"):
        _read(tmp_path, _line(), tz="Mars/Olympus")


def test_local_times_are_localised(tmp_path: Path) -> None:
    job = _row(_read(tmp_path, _line(), tz="Europe/Paris"))  # CEST, UTC+2
    assert job["submit_time"] == _at("2024-05-03T08:00:00")
    assert job["tz_offset_s"] == 7200
    assert job["flags"] == ["MEM_PER_CPU"]


def test_dst_ambiguous_and_gap_are_flagged(tmp_path: Path) -> None:
    # parsers.md §9 item 23: 2024-11-03T01:30 happens twice in Chicago; 2024-03-10T02:30 never
    fall = _line(Submit="2024-11-03T01:30:00", Eligible="2024-11-03T01:30:00")
    fall = fall.replace("2024-05-03T10:01:40", "2024-11-03T03:00:00")
    fall = fall.replace("2024-05-03T11:01:40", "2024-11-03T04:00:00")
    spring = _line(
        JobID="1002",
        JobIDRaw="1002",
        Submit="2024-03-10T02:30:00",
        Eligible="2024-03-10T02:30:00",
        Start="2024-03-10T04:00:00",
        End="2024-03-10T05:00:00",
    )
    result = _read(tmp_path, fall, spring, tz="America/Chicago")
    first, second = _row(result, 0), _row(result, 1)
    assert "DST_AMBIGUOUS" in first["flags"]
    assert first["submit_time"] == _at("2024-11-03T06:30:00")  # first (summer, −5 h) occurrence
    assert "DST_GAP" in second["flags"]
    assert second["submit_time"] == _at("2024-03-10T08:30:00")  # shifted to 03:30 CDT


def test_header_line_and_steps_fold_maxrss(tmp_path: Path) -> None:
    names = ["JobID", "JobIDRaw", "State", "Submit", "Start", "End", "MaxRSS", "NCPUS", "JobName"]
    rows = [
        "|".join(names),
        "77|77|COMPLETED|2024-05-03T10:00:00|2024-05-03T10:00:10|2024-05-03T10:10:10||4|job",
        "77.batch|77.batch|COMPLETED|2024-05-03T10:00:10|2024-05-03T10:00:10|"
        "2024-05-03T10:10:10|2048K|4|batch",
        "77.0|77.0|COMPLETED|2024-05-03T10:00:10|2024-05-03T10:00:20|2024-05-03T10:10:00|3M|4|step",
        "88.batch|88.batch|COMPLETED|2024-05-03T10:00:10|2024-05-03T10:00:10|"
        "2024-05-03T10:10:10|1K|4|orphan",
    ]
    result = _read(tmp_path, *rows)
    _reconciled(result)
    assert result.records.column("record_type").to_pylist() == ["H", "J", "STEP", "STEP", "STEP"]
    assert result.jobs.num_rows == 1
    job = _row(result)
    assert job["mem_used_bytes"] == 3 * 2**20
    assert job["flags"] == ["STEPS_FOLDED"]  # the job line had no MaxRSS: the steps' maximum
    assert job["cores_alloc"] == 4
    assert job["src_line"] == 2
    assert result.info["slurm_steps"] == 3
    assert result.info["slurm_orphan_steps"] == 1


def test_steps_in_the_default_layout(tmp_path: Path) -> None:
    step = _line(JobID="1001.batch", JobIDRaw="1001.batch", JobName="batch")
    result = _read(tmp_path, _line(), step)
    _reconciled(result)
    assert result.records.column("record_type").to_pylist() == ["J", "STEP"]
    assert result.jobs.num_rows == 1
    assert result.info["slurm_orphan_steps"] == 0


def test_header_only_file(tmp_path: Path) -> None:
    result = _read(tmp_path, "|".join(SLURM_FIELDS))
    _reconciled(result)
    assert result.records.column("record_type").to_pylist() == ["H"]
    assert result.jobs.num_rows == 0


def test_heterogeneous_components_are_separate_jobs(tmp_path: Path) -> None:
    result = _read(tmp_path, _line(JobID="123+0"), _line(JobID="123+1"))
    assert result.jobs.column("job_seq").to_pylist() == [123, 123]
    assert result.jobs.column("attempt").to_pylist() == [0, 0]
    assert len(set(result.jobs.column("job_key").to_pylist())) == 2


def test_header_given_for_a_headerless_layout(tmp_path: Path) -> None:
    path = tmp_path / "short.log"
    path.write_text("5|COMPLETED|2024-05-03T10:00:00|2024-05-03T10:00:00|2024-05-03T10:00:30\n")
    result = read_slurm(path, tz="UTC", header=["JobID", "State", "Submit", "Start", "End"])
    assert _row(result)["run_s"] == 30


def test_job_name_with_the_delimiter_when_last(tmp_path: Path) -> None:
    result = _read(tmp_path, _line(JobName="a|b|c"))
    assert result.quarantine.num_rows == 0
    assert _row(result)["job_name"] == "a|b|c"


def test_custom_delimiter(tmp_path: Path) -> None:
    # reportseff's --delimiter=^|^ keeps pipes in job names unambiguous
    values = {**BASE, "JobName": "x|y"}
    path = tmp_path / "caret.log"
    path.write_text("^|^".join(values[name] for name in SLURM_FIELDS) + "\n")
    result = read_slurm(path, tz="UTC", delimiter="^|^")
    assert _row(result)["job_name"] == "x|y"
    assert _row(result)["run_s"] == 3600


def test_bad_lines_are_quarantined_and_counted(tmp_path: Path) -> None:
    short = "|".join(_line().split("|")[:10])
    no_id = _line(JobID="")
    with pytest.warns(UserWarning, match="3 of 4 lines quarantined"):
        result = _read(tmp_path, short, "", no_id, _line())
    _reconciled(result)
    assert result.jobs.num_rows == 1
    reasons = result.quarantine.column("reason").to_pylist()
    assert reasons[0] == "expected 26 '|'-separated fields, found 10"
    assert reasons[1:] == ["blank line", "no JobID"]
    assert result.quarantine.column("src_line").to_pylist() == [1, 2, 3]


def test_errors_raise(tmp_path: Path) -> None:
    with pytest.raises(LogParseError, match=":1:"):
        _read(tmp_path, "1|2|3", errors="raise")


def test_array_task_and_cancelled_by(tmp_path: Path) -> None:
    # parsers.md §9 item 23
    result = _read(tmp_path, _line(JobID="123_7", JobIDRaw="130", State="CANCELLED by 500"))
    job = _row(result)
    assert (job["job_seq"], job["array_index"]) == (123, 7)
    assert job["state"] == "CANCELLED"
    assert job["flags"] == ["CANCELLED_BY", "MEM_PER_CPU"]
    attrs = dict(result.records.column("attrs")[0].as_py())
    assert attrs["State"] == "CANCELLED by 500"
    assert job["job_key"].startswith("hpc:123_7@")


def test_array_range_is_expanded_like_xdmod(tmp_path: Path) -> None:
    result = _read(tmp_path, _line(JobID="123_[1,4-6%2]", JobIDRaw="123"))
    _reconciled(result)
    assert result.jobs.column("array_index").to_pylist() == [1, 4, 5, 6]
    assert set(result.jobs.column("job_id_raw").to_pylist()) == {"123_[1,4-6%2]"}
    assert all("ARRAY_RANGE_EXPANDED" in f for f in result.jobs.column("flags").to_pylist())
    assert result.info["slurm_array_ranges"] == 1


def test_expand_array_ids() -> None:
    assert expand_array_ids("[1-3]") == [1, 2, 3]
    assert expand_array_ids("[9-11,13,16-20]") == [9, 10, 11, 13, 16, 17, 18, 19, 20]
    assert expand_array_ids("1-7:3%2") == [1, 4, 7]


def test_duplicates_become_attempts(tmp_path: Path) -> None:
    first = _line(State="NODE_FAIL", End="2024-05-03T10:30:00", Elapsed="00:28:20")
    second = _line(
        Submit="2024-05-03T10:31:00",
        Eligible="2024-05-03T10:31:00",
        Start="2024-05-03T10:40:00",
        End="2024-05-03T11:40:00",
    )
    result = _read(tmp_path, second, first)  # out of order on purpose
    rows = sorted(result.jobs.to_pylist(), key=lambda r: r["attempt"])
    assert [r["attempt"] for r in rows] == [0, 1]
    assert {r["n_attempts"] for r in rows} == {2}
    assert [r["state"] for r in rows] == ["REQUEUED", "COMPLETED"]
    assert rows[0]["flags"] == ["MEM_PER_CPU", "STATE_WAS_NODE_FAIL"]
    assert rows[0]["job_key"] == rows[1]["job_key"]
    assert rows[1]["submit_time"] == _at("2024-05-03T10:00:00")
    assert rows[1]["queue_time"] == _at("2024-05-03T10:31:00")
    assert "SUBMIT_FROM_FIRST_ATTEMPT" in rows[1]["flags"]
    assert rows[1]["wait_s"] == 540


def test_same_id_and_times_are_duplicates_not_requeues(tmp_path: Path) -> None:
    result = _read(tmp_path, _line(), _line(JobName="sim-again"))
    assert result.jobs.column("state").to_pylist() == ["COMPLETED", "COMPLETED"]
    assert result.jobs.column("attempt").to_pylist() == [0, 1]
    assert all("DUPLICATE" in f for f in result.jobs.column("flags").to_pylist())


def test_a_line_written_twice_makes_one_job(tmp_path: Path) -> None:
    # was: two rows, attempts 0 and 1, both flagged DUPLICATE; the same line twice is one record
    result = _read(tmp_path, _line(), _line(JobID="1002", JobIDRaw="1002"), _line())
    _reconciled(result)
    assert result.jobs.column("job_id_raw").to_pylist() == ["1001", "1002"]
    job = _row(result)
    assert (job["attempt"], job["n_attempts"], job["src_line"]) == (0, 1, 1)
    assert "DUPLICATE_LINE" in job["flags"]
    assert result.records.column("flags").to_pylist() == [None, None, ["DUPLICATE_LINE"]]
    assert result.info["duplicate_lines"] == 1
    assert result.summary()["record_flags"] == {"DUPLICATE_LINE": 1}


def test_end_unknown_is_not_ended(tmp_path: Path) -> None:
    running = _line(State="RUNNING", End="Unknown")
    pending = _line(JobID="1002", JobIDRaw="1002", State="PENDING", Start="Unknown", End="Unknown")
    odd = _line(JobID="1003", JobIDRaw="1003", End="Unknown")
    result = _read(tmp_path, running, pending, odd)
    a, b, c = (_row(result, i) for i in range(3))
    assert (a["state"], a["end_time"], a["run_s"]) == ("RUNNING", None, None)
    assert a["start_time"] == _at("2024-05-03T10:01:40")
    assert (b["state"], b["start_time"], b["cores_alloc"], b["cores_req"]) == (
        "PENDING",
        None,
        None,
        16,
    )
    assert c["state"] == "RUNNING"
    assert "END_UNKNOWN" in c["flags"]


def test_end_of_a_running_job_is_not_final(tmp_path: Path) -> None:
    job = _row(_read(tmp_path, _line(State="RUNNING")))
    assert job["end_time"] is None
    assert "END_NOT_FINAL" in job["flags"]


def test_cancelled_before_start_is_deleted(tmp_path: Path) -> None:
    line = _line(State="CANCELLED by 1500", Start="Unknown", NodeList="None assigned")
    job = _row(_read(tmp_path, line))
    assert job["state"] == "DELETED"
    assert {"CANCELLED_BY", "CANCELLED_NOT_STARTED"} <= set(job["flags"])
    assert (job["start_time"], job["run_s"], job["exec_hosts"]) == (None, None, None)
    assert job["end_time"] == _at("2024-05-03T11:01:40")


@pytest.mark.parametrize(
    ("state", "expected", "flag"),
    [
        ("OUT_OF_MEMORY", "FAILED", "OUT_OF_MEMORY"),
        ("PREEMPTED", "PREEMPTED", None),
        ("DEADLINE", "TIMEOUT", "DEADLINE"),
        ("WEIRD", "UNKNOWN", "STATE_NONSTANDARD"),
    ],
)
def test_other_states(tmp_path: Path, state: str, expected: str, flag: str | None) -> None:
    job = _row(_read(tmp_path, _line(State=state)))
    assert job["state"] == expected
    if flag:
        assert flag in job["flags"]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("UNLIMITED", None),
        ("Partition_Limit", None),
        ("", None),
        ("05:06", 306),
        ("1-02:03:04", 93784),
        ("10-00:00:00", 864000),
        ("00:00:01.600", 2),
    ],
)
def test_durations(tmp_path: Path, text: str, seconds: int | None) -> None:
    assert _row(_read(tmp_path, _line(Timelimit=text)))["walltime_req_s"] == seconds


@pytest.mark.parametrize(
    ("req_mem", "expected", "flags"),
    [
        ("2000Mc", 2000 * 2**20 * 16, ["MEM_PER_CPU"]),
        ("4000Mn", 4000 * 2**20 * 2, ["MEM_PER_NODE"]),
        ("4G", 4 * 2**30, None),
        ("1.5Gn", int(1.5 * 2**30) * 2, ["MEM_PER_NODE"]),
        ("0n", None, ["MEM_REQ_ALL"]),
        ("2147486648Mn", 3000 * 2**20 * 16, ["MEM_PER_CPU", "MEM_FLAG_BIT"]),
        ("4000", 4000 * 2**20, ["MEM_UNIT_ASSUMED"]),
    ],
)
def test_req_mem(tmp_path: Path, req_mem: str, expected: int | None, flags: Any) -> None:
    tres = "billing=16,cpu=16,node=2"  # no mem= to check the request against
    job = _row(_read(tmp_path, _line(ReqMem=req_mem, ReqTRES=tres)))
    assert job["mem_req_bytes"] == expected
    assert job["flags"] == flags


def test_req_mem_that_disagrees_with_req_tres_is_flagged(tmp_path: Path) -> None:
    agrees = _row(_read(tmp_path, _line()))  # 2000Mc x 16 cores = mem=32000M
    assert agrees["flags"] == ["MEM_PER_CPU"]
    job = _row(_read(tmp_path, _line(ReqMem="4000Mc")))
    assert job["mem_req_bytes"] == 4000 * 2**20 * 16  # ReqMem kept
    assert job["flags"] == ["MEM_PER_CPU", "MEM_REQ_CONFLICT"]


def test_exit_code_and_signal(tmp_path: Path) -> None:
    job = _row(_read(tmp_path, _line(ExitCode="0:15", State="FAILED")))
    assert (job["exit_code"], job["exit_signal"], job["state"]) == (0, 15, "FAILED")


def test_expand_hostlist() -> None:
    assert expand_hostlist("node[01-03,07]") == ["node01", "node02", "node03", "node07"]
    assert expand_hostlist("a1,cpn-f13-03-[01-02]") == ["a1", "cpn-f13-03-01", "cpn-f13-03-02"]
    assert expand_hostlist("r[1-2]n[1-2]") == ["r1n1", "r1n2", "r2n1", "r2n2"]
    assert expand_hostlist("None assigned") == []
    with pytest.raises(ValueError, match="unbalanced"):
        expand_hostlist("n[1-2")


def test_bad_nodelist_is_flagged(tmp_path: Path) -> None:
    job = _row(_read(tmp_path, _line(NodeList="n[1-")))
    assert job["exec_hosts"] is None
    assert "NODELIST_UNPARSED" in job["flags"]


def test_gpus_from_tres(tmp_path: Path) -> None:
    line = _line(
        ReqTRES="cpu=16,gres/gpu=2,node=2",
        AllocTRES="billing=16,cpu=16,gres/gpu:v100=4,gres/gpu=4,node=2",
    )
    job = _row(_read(tmp_path, line))
    assert (job["gpus_req"], job["gpus_alloc"]) == (2, 4)
    typed = _row(_read(tmp_path, _line(AllocTRES="cpu=16,gres/gpu:a100=3")))
    assert typed["gpus_alloc"] == 3


def test_walltime_mismatch(tmp_path: Path) -> None:
    job = _row(_read(tmp_path, _line(Elapsed="00:30:00")))
    assert job["run_s"] == 3600
    assert job["walltime_used_s"] == 1800
    assert "WALLTIME_MISMATCH" in job["flags"]


def test_non_utf8_line(tmp_path: Path) -> None:
    path = tmp_path / "latin.log"
    path.write_bytes(_line(JobName="r\xe9sultat").encode("latin-1") + b"\n")
    result = read_slurm(path, tz="UTC")
    assert result.records.column("flags").to_pylist() == [["NON_UTF8"]]
    assert result.records.column("raw")[0].as_py().endswith(b"r\xe9sultat")
    job = _row(result)
    assert job["job_name"] == "résultat"  # Windows-1252, the stated fallback
    assert "NON_UTF8" in job["flags"]


def test_gzip_and_tokenise_assemble(tmp_path: Path) -> None:
    path = tmp_path / "hpc.log.gz"
    path.write_bytes(gzip.compress((_line() + "\n").encode()))
    part = tokenize_slurm_file(path, site="hpc")
    assert part.lines_read == 1
    result = assemble_slurm([part], tz="UTC")
    assert result.jobs.num_rows == 1
    assert result.info["format"] == "slurm"


def test_empty_file(tmp_path: Path) -> None:
    result = _read(tmp_path)
    _reconciled(result)
    assert result.jobs.num_rows == 0


def test_looks_like_slurm() -> None:
    assert looks_like_slurm((_line() + "\n" + _line() + "\n").encode())
    assert looks_like_slurm(b"JobID|JobIDRaw|State\n1|1|COMPLETED\n")
    assert not looks_like_slurm(b"1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert not looks_like_slurm(b"05/03/2024 10:00:00;Q;202.pbs01;queue=grid\n")
    assert not looks_like_slurm(b"")


# ------------------------------------------------------------------ real data


def _slurm(real_data: Path) -> Path:
    return real_data / "other" / "slurm"


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("name", "jobs"),
    [("xdmod-phillips-sacct.log.gz", 4285), ("xdmod-pozidriv-sacct.log.gz", 11704)],
)
def test_real_xdmod_dumps(real_data: Path, name: str, jobs: int) -> None:
    # PROVENANCE counts records; every line is one allocation with a distinct JobID, no steps,
    # no arrays, no duplicates, so jobs = lines = distinct job ids
    result = read_slurm(_slurm(real_data) / name, tz="UTC", errors="raise")
    _reconciled(result)
    assert result.lines_read == jobs
    assert result.quarantine.num_rows == 0
    assert result.jobs.num_rows == jobs
    assert len(set(result.jobs.column("job_key").to_pylist())) == jobs
    assert set(result.jobs.column("attempt").to_pylist()) == {0}
    summary = result.summary()
    assert "UNKNOWN" not in summary["jobs_by_state"]
    assert summary["job_flags"].get("CANCELLED_BY", 0) == summary["jobs_by_state"]["CANCELLED"]
    assert result.jobs.column("submit_time").null_count == 0
    assert result.jobs.column("end_time").null_count == 0


@pytest.mark.realdata
def test_real_files_are_recognised(real_data: Path) -> None:
    for path in sorted(_slurm(real_data).iterdir()):
        head = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        assert looks_like_slurm(head[:65536]), path.name
    for other in ("swf", "torque"):
        files = sorted(p for p in (real_data / other).rglob("*") if p.is_file())
        for path in files[:4]:
            data = path.read_bytes()
            head = gzip.decompress(data)[:65536] if data[:2] == b"\x1f\x8b" else data[:65536]
            assert not looks_like_slurm(head), path.name


@pytest.mark.realdata
def test_real_array_fixture_expands_like_xdmod(real_data: Path) -> None:
    # ubccr/xdmod tests/artifacts/xdmod/unit/shredder/slurm/output/accounting-logs-with-job-arrays
    path = _slurm(real_data) / "xdmod-shredder-slurm-fixture-job-arrays.log"
    result = read_slurm(path, tz="UTC", errors="raise")
    _reconciled(result)
    by_line: dict[int, list[int]] = {}
    for line, index in zip(
        result.jobs.column("src_line").to_pylist(),
        result.jobs.column("array_index").to_pylist(),
        strict=True,
    ):
        by_line.setdefault(line, []).append(index)
    assert [by_line[i] for i in sorted(by_line)] == [
        [100],
        [1, 2, 3],
        [1, 5],
        [9, 10, 11, 20],
        [91, 100, 101, 102],
        [9, 10, 11, 13, 16, 17, 18, 19, 20],
    ]
    # the overlapping ranges repeat tasks 1, 9, 10, 11, 20 and 100: duplicates, not requeues
    assert set(result.jobs.column("state").to_pylist()) == {"TIMEOUT"}
    duplicates = [bool(f and "DUPLICATE" in f) for f in result.jobs.column("flags").to_pylist()]
    assert sum(duplicates) == 12


@pytest.mark.realdata
def test_real_shredder_fixture(real_data: Path) -> None:
    # ubccr/xdmod .../slurm/output/accounting-logs.json
    path = _slurm(real_data) / "xdmod-shredder-slurm-fixture.log"
    result = read_slurm(path, tz="UTC", errors="raise")
    _reconciled(result)
    rows = result.jobs.to_pylist()
    assert [int(r["submit_time"].timestamp()) for r in rows] == [
        1435327020,
        1435348285,
        1435350142,
        1470031268,
    ]
    assert [r["walltime_req_s"] for r in rows] == [259200, 259200, 51600, None]
    assert [r["gpus_alloc"] for r in rows] == [None, None, None, 2]
    assert [r["state"] for r in rows] == ["TIMEOUT", "CANCELLED", "COMPLETED", "COMPLETED"]
    assert len(rows[0]["exec_hosts"]) == 32
    assert rows[3]["eligible_time"] is None


# ------------------------------------------------------------------ choices between fields


@pytest.mark.parametrize(
    ("overrides", "flag", "column", "kept"),
    [
        ({"AllocTRES": "billing=16,cpu=8,node=2"}, "CORES_ALLOC_CONFLICT", "cores_alloc", 16),
        ({"NodeList": "n[01-03]"}, "NODES_ALLOC_CONFLICT", "nodes_alloc", 2),
        ({"AllocTRES": "cpu=16,node=3"}, "NODES_ALLOC_CONFLICT", "nodes_alloc", 2),
        ({"ReqTRES": "cpu=8,node=2"}, "CORES_REQ_CONFLICT", "cores_req", 16),
    ],
)
def test_fields_that_disagree_are_flagged(
    tmp_path: Path, overrides: dict[str, str], flag: str, column: str, kept: int
) -> None:
    job = _row(_read(tmp_path, _line(**overrides)))
    assert job[column] == kept
    assert flag in job["flags"]
    assert "CONFLICT" not in " ".join(_row(_read(tmp_path, _line()))["flags"])


def test_a_pending_job_takes_its_request_from_the_allocation_fields(tmp_path: Path) -> None:
    line = _line(
        State="PENDING",
        Start="2024-05-04T00:00:00",  # sacct's expected start
        End="Unknown",
        ReqCPUS="",
        ReqTRES="billing=16,cpu=16",
        NodeList="None assigned",
    )
    job = _row(_read(tmp_path, line))
    assert (job["cores_req"], job["nodes_req"], job["start_time"]) == (16, 2, None)
    assert {"CORES_REQ_FROM_NCPUS", "NODES_REQ_FROM_NNODES", "START_NOT_FINAL"} <= set(job["flags"])


def test_text_that_is_not_a_value_is_null_and_flagged(tmp_path: Path) -> None:
    job = _row(_read(tmp_path, _line(NCPUS="sixteen", Timelimit="soon")))
    assert (job["cores_alloc"], job["walltime_req_s"]) == (None, None)
    assert "VALUE_UNREADABLE" in job["flags"]
    plain = _row(_read(tmp_path, _line(Timelimit="UNLIMITED", Eligible="Unknown")))
    assert "VALUE_UNREADABLE" not in (plain["flags"] or [])


def test_sizes_without_a_unit(tmp_path: Path) -> None:
    names = [*SLURM_FIELDS, "MaxRSS"]
    head = "|".join(names)
    job = _row(_read(tmp_path, head, _line() + "|123456"))
    assert job["mem_used_bytes"] == 123456
    assert "MEM_USED_UNIT_ASSUMED" in job["flags"]
