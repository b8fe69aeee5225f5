"""The Grid Engine accounting reader: one test per quirk, from literal lines, and the real files."""

from __future__ import annotations

import datetime as dt
import gzip
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.errors import LogParseError
from gridtrace.logs import detect_format, get_format, read_sge
from gridtrace.logs._io import read_log_bytes
from gridtrace.logs._registry import _FORMATS
from gridtrace.logs._sge import (
    SGE_FIELDS,
    assemble_sge,
    looks_like_sge,
    parse_sge_memory,
    tokenize_sge_file,
)
from gridtrace.schema import validate

UTC = dt.UTC

# one Son of Grid Engine 8.1.9 record (45 fields): job 4711 ran 1 h on n01, 1 slot
BASE: dict[str, str] = {
    "qname": "long.q",
    "hostname": "n01",
    "group": "atlas",
    "owner": "alice",
    "job_name": "sim.sh",
    "job_number": "4711",
    "account": "sge",
    "priority": "0",
    "submission_time": "1714723000",
    "start_time": "1714723100",
    "end_time": "1714726700",
    "failed": "0",
    "exit_status": "0",
    "ru_wallclock": "3600",
    "ru_utime": "3500.5",
    "ru_stime": "20.25",
    "ru_maxrss": "2048",
    **{name: "0" for name in SGE_FIELDS[17:31]},
    "project": "proj1",
    "department": "defaultdepartment",
    "granted_pe": "NONE",
    "slots": "1",
    "task_number": "0",
    "cpu": "3520.75",
    "mem": "12.5",
    "io": "0.002",
    "category": "-l h_rt=7200,mem_free=2G",
    "iow": "0.000000",
    "pe_taskid": "NONE",
    "maxvmem": "2147483648.000000",
    "arid": "0",
    "ar_submission_time": "0",
}
HEADER = "# Version: 8.1.9\n# \n# DO NOT MODIFY THIS FILE MANUALLY!\n# "


def _line(width: int = 45, **overrides: str) -> str:
    values = {**BASE, **overrides}
    return ":".join(values[name] for name in SGE_FIELDS[:width])


def _read(tmp_path: Path, *lines: str, **kwargs: Any) -> Any:
    path = tmp_path / "wynton.accounting"
    path.write_text("".join(line + "\n" for line in lines))
    return read_sge(path, **kwargs)


def _rows(result: Any) -> list[dict[str, Any]]:
    return [dict(row) for row in result.jobs.to_pylist()]


def _at(epoch: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(epoch, tz=UTC)


def _reconciled(result: Any) -> None:
    validate(result.records, "records")
    validate(result.quarantine, "quarantine")
    validate(result.jobs, "jobs")
    assert result.lines_read == result.lines_parsed + result.lines_quarantined


def _flags(row: dict[str, Any]) -> set[str]:
    return set(row["flags"] or ())


# ------------------------------------------------------------------ layouts and headers


def test_a_plain_record_with_the_version_header(tmp_path: Path) -> None:
    result = _read(tmp_path, HEADER, _line())
    _reconciled(result)
    assert result.records.column("record_type").to_pylist() == ["H", "H", "H", "H", "J"]
    assert result.records.column("attrs")[0].as_py() == [("version", "8.1.9")]
    assert result.info["sge_versions"] == ["8.1.9"]
    (job,) = _rows(result)
    assert job["job_key"] == "wynton:4711@1714723000"
    assert (job["job_id_raw"], job["job_seq"], job["array_index"]) == ("4711", 4711, None)
    assert (job["attempt"], job["n_attempts"], job["src_line"]) == (0, 1, 5)
    assert (job["user"], job["group"], job["account"], job["queue"], job["job_name"]) == (
        "alice",
        "atlas",
        "proj1",
        "long.q",
        "sim.sh",
    )
    assert job["submit_time"] == _at(1714723000)
    assert job["start_time"] == _at(1714723100)
    assert job["end_time"] == _at(1714726700)
    assert (job["wait_s"], job["run_s"], job["walltime_used_s"]) == (100, 3600, 3600)
    assert job["walltime_req_s"] == 7200
    assert job["cpu_time_s"] == pytest.approx(3520.75)
    assert (job["cores_req"], job["cores_alloc"], job["nodes_alloc"]) == (1, 1, 1)
    assert job["exec_hosts"] == ["n01"]
    assert job["mem_req_bytes"] == 2 * 2**30
    assert job["mem_used_bytes"] == 2048 * 1024
    assert job["vmem_used_bytes"] == 2**31
    assert (job["exit_code"], job["exit_signal"], job["state"]) == (0, None, "COMPLETED")
    assert job["tz_offset_s"] is None
    # was {"MEM_PER_SLOT"}: cores_req 1 for a job without -pe is a default, now flagged
    assert _flags(job) == {"MEM_PER_SLOT", "CORES_REQ_SERIAL"}
    record = result.records.slice(4, 1).to_pylist()[0]
    assert record["stamp"] == "1714726700"
    assert record["job_id_raw"] == "4711"
    assert record["raw"] is None


def test_sge_61_records_have_43_fields(tmp_path: Path) -> None:
    result = _read(tmp_path, _line(width=43))
    _reconciled(result)
    (job,) = _rows(result)
    assert job["run_s"] == 3600
    keys = [k for k, _ in result.records.column("attrs")[0].as_py()]
    assert keys == list(SGE_FIELDS[:43])


def test_uge_millisecond_stamps_and_extra_fields(tmp_path: Path) -> None:
    line = _line(
        submission_time="1652111621288",
        start_time="1652111622875",
        end_time="1652124460193",
        ru_wallclock="12837.318",
    )
    result = _read(tmp_path, line + ":NONE:NONE:668106752:dev1:qsub a b", _line())
    _reconciled(result)
    uge, sge = _rows(result)
    # floored like XDMoD's Uge shredder
    assert uge["submit_time"] == _at(1652111621)
    assert uge["start_time"] == _at(1652111622)
    assert uge["end_time"] == _at(1652124460)
    assert uge["run_s"] == 12838
    assert uge["walltime_used_s"] == 12837
    assert "TIME_MILLISECONDS" in _flags(uge)
    assert "TIME_MILLISECONDS" not in _flags(sge)
    assert result.records.column("flags")[0].as_py() == ["EXTRA_FIELDS"]
    attrs = dict(result.records.column("attrs")[0].as_py())
    assert attrs["field_46"] == "NONE"
    assert attrs["field_50"] == "qsub a b"
    assert result.info["sge_millisecond_files"] == [str(tmp_path / "wynton.accounting")]


# ------------------------------------------------------------------ colons inside fields


def test_colon_in_job_name_is_realigned(tmp_path: Path) -> None:
    result = _read(tmp_path, _line(job_name="run:a"), _line(job_number="4712"))
    _reconciled(result)
    assert result.lines_quarantined == 0
    first, second = _rows(result)
    assert first["job_name"] == "run:a"
    assert first["job_seq"] == 4711
    assert first["run_s"] == 3600
    assert "FIELD_SHIFT_REALIGNED" in _flags(first)
    assert "FIELD_SHIFT_REALIGNED" not in _flags(second)
    record = result.records.slice(0, 1).to_pylist()[0]
    assert record["flags"] == ["FIELD_SHIFT_REALIGNED"]
    assert record["raw"] == _line(job_name="run:a").encode()
    assert dict(record["attrs"])["job_name"] == "run:a"
    assert result.info["sge_realigned"] == 1


def test_colons_in_job_name_and_account_are_realigned(tmp_path: Path) -> None:
    result = _read(tmp_path, _line(job_name="a:b", account="grp:x:y"), _line(job_number="2"))
    _reconciled(result)
    first, _ = _rows(result)
    attrs = dict(result.records.column("attrs")[0].as_py())
    assert (attrs["job_name"], attrs["account"], attrs["project"]) == ("a:b", "grp:x:y", "proj1")
    assert (first["job_name"], first["account"], first["job_seq"]) == ("a:b", "proj1", 4711)


def test_colon_in_category_time_is_realigned_and_read(tmp_path: Path) -> None:
    line = _line(category="-l h_rt=1:30:00 -pe smp 4", slots="4")
    result = _read(tmp_path, line, _line(job_number="2"))
    _reconciled(result)
    job = _rows(result)[0]
    assert job["walltime_req_s"] == 5400
    assert job["cores_req"] == 4
    assert "FIELD_SHIFT_REALIGNED" in _flags(job)


def test_version_61_header_sets_the_width_when_no_line_is_good(tmp_path: Path) -> None:
    # a lone SGE 6.1 record (43 fields) whose job name holds a ':': 44 fields; the header says
    # 43 are expected, so one surplus ':' is placed
    result = _read(tmp_path, "# Version: 6.1u4", _line(width=43, job_name="a:b"))
    _reconciled(result)
    (job,) = _rows(result)
    assert job["job_name"] == "a:b"
    assert "FIELD_SHIFT_REALIGNED" in _flags(job)


def test_uge_colon_after_the_45_known_fields_needs_no_realignment(tmp_path: Path) -> None:
    # UGE's later fields (cwd, submit command) may hold ':': the 45 known fields are unaffected
    tail = ":NONE:NONE:0:0:dev1:/home/a:b:qsub -l h_rt=1:00:00 job.sh"
    result = _read(tmp_path, _line() + tail)
    _reconciled(result)
    (job,) = _rows(result)
    assert job["run_s"] == 3600
    assert "FIELD_SHIFT_REALIGNED" not in _flags(job)
    assert result.records.column("flags")[0].as_py() == ["EXTRA_FIELDS"]


def test_ambiguous_colon_is_quarantined(tmp_path: Path) -> None:
    # "x:5" as job name, or job name "x", job number 5 and account "4711:sge": both fit
    result = _read(tmp_path, _line(job_name="x:5"), _line(), errors="skip")
    _reconciled(result)
    assert result.jobs.num_rows == 1
    (reason,) = result.quarantine.column("reason").to_pylist()
    assert "ambiguous" in reason
    assert result.quarantine.column("src_line").to_pylist() == [1]


def test_no_fitting_placement_is_quarantined(tmp_path: Path) -> None:
    result = _read(tmp_path, _line(cpu="a:b"), _line(), errors="skip")
    _reconciled(result)
    (reason,) = result.quarantine.column("reason").to_pylist()
    assert "no placement" in reason


def test_bad_lines_are_quarantined_with_a_reason(tmp_path: Path) -> None:
    result = _read(tmp_path, "", "short:line", _line(start_time="soon"), _line(), errors="skip")
    _reconciled(result)
    assert result.lines_read == 4
    assert result.jobs.num_rows == 1
    reasons = result.quarantine.column("reason").to_pylist()
    assert reasons[0] == "blank line"
    assert "fewer than the 43" in reasons[1]
    assert "start_time 'soon' is not a number" in reasons[2]
    assert result.quarantine.column("raw").to_pylist()[1] == b"short:line"


def test_errors_raise_names_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(LogParseError, match=r"wynton\.accounting:2: 2 ':'-separated fields"):
        _read(tmp_path, _line(), "short:line", errors="raise")


# ------------------------------------------------------------------ folding: PE slaves, retries


def test_pe_slave_records_fold_into_their_job(tmp_path: Path) -> None:
    slave = {
        "granted_pe": "mpi",
        "slots": "1",
        "submission_time": "0",
        "category": "-pe mpi 8",
        "start_time": "1714723110",
        "end_time": "1714726600",
    }
    result = _read(
        tmp_path,
        _line(hostname="n02", pe_taskid="1.n02", cpu="100.5", maxvmem="4000000000", **slave),
        _line(hostname="n03", pe_taskid="1.n03", cpu="50", **slave),
        _line(hostname="n02", pe_taskid="2.n02", cpu="1", **slave),
        _line(granted_pe="mpi", slots="8", category="-pe mpi 8"),
    )
    _reconciled(result)
    assert result.records.column("record_type").to_pylist() == ["PE", "PE", "PE", "J"]
    (job,) = _rows(result)
    assert job["exec_hosts"] == ["n01", "n02", "n03"]
    assert (job["nodes_alloc"], job["cores_alloc"], job["cores_req"]) == (3, 8, 8)
    assert job["cpu_time_s"] == pytest.approx(3520.75 + 151.5)
    assert job["vmem_used_bytes"] == 4_000_000_000
    assert job["submit_time"] == _at(1714723000)
    assert job["src_line"] == 4
    assert "PE_SLAVES_FOLDED" in _flags(job)
    assert "HOSTS_PARTIAL" not in _flags(job)
    assert result.info["sge_pe_slaves"] == 3


def test_slave_without_its_job_record_stays_in_records(tmp_path: Path) -> None:
    result = _read(tmp_path, _line(pe_taskid="1.n02", job_number="99"), _line())
    assert result.records.column("record_type").to_pylist() == ["PE", "J"]
    _reconciled(result)
    assert result.jobs.column("job_seq").to_pylist() == [4711]
    assert result.info["sge_orphan_pe_slaves"] == 1


def test_parallel_job_without_slaves_has_partial_hosts(tmp_path: Path) -> None:
    result = _read(tmp_path, _line(granted_pe="smp", slots="24", category="-pe smp 24"))
    (job,) = _rows(result)
    assert (job["cores_alloc"], job["nodes_alloc"], job["exec_hosts"]) == (24, None, ["n01"])
    assert "HOSTS_PARTIAL" in _flags(job)


def test_pe_slot_range_has_no_single_request(tmp_path: Path) -> None:
    result = _read(tmp_path, _line(granted_pe="mpi", slots="6", category="-pe mpi 4-8"))
    (job,) = _rows(result)
    assert (job["cores_req"], job["cores_alloc"]) == (None, 6)
    assert "PE_RANGE" in _flags(job)


def test_retries_become_attempts(tmp_path: Path) -> None:
    failed_start = _line(failed="1", start_time="0", end_time="0", ru_wallclock="0", hostname="n09")
    result = _read(tmp_path, failed_start, _line())
    _reconciled(result)
    first, second = _rows(result)
    assert first["job_key"] == second["job_key"] == "wynton:4711@1714723000"
    assert (first["attempt"], second["attempt"]) == (0, 1)
    assert first["n_attempts"] == second["n_attempts"] == 2
    assert (first["state"], second["state"]) == ("REQUEUED", "COMPLETED")
    assert {"STATE_WAS_FAILED", "NEVER_STARTED", "SGE_FAILED_1"} <= _flags(first)
    assert first["start_time"] is None
    assert first["run_s"] is None
    assert first["cores_alloc"] is None


def test_identical_records_fold_as_duplicates(tmp_path: Path) -> None:
    result = _read(
        tmp_path, _line(category="-l h_rt=3600"), _line(category="-l h_rt=3600,mem_free=1G")
    )
    _reconciled(result)
    (job,) = _rows(result)
    assert job["src_line"] == 2
    assert job["mem_req_bytes"] == 2**30
    assert "DUPLICATE" in _flags(job)
    assert result.info["sge_duplicates_folded"] == 1
    assert result.records.num_rows == 2


def test_failed_starts_are_not_duplicates(tmp_path: Path) -> None:
    failed = _line(failed="1", start_time="0", end_time="0")
    result = _read(tmp_path, failed, failed, _line())
    assert [r["attempt"] for r in _rows(result)] == [0, 1, 2]


def test_job_number_reuse_is_two_jobs(tmp_path: Path) -> None:
    later = _line(submission_time="1800000000", start_time="1800000100", end_time="1800000200")
    result = _read(tmp_path, _line(), later)
    keys = result.jobs.column("job_key").to_pylist()
    assert keys == ["wynton:4711@1714723000", "wynton:4711@1800000000"]
    assert result.jobs.column("attempt").to_pylist() == [0, 0]


# ------------------------------------------------------------------ submission 0, arrays, times


def test_submission_time_zero_on_a_failed_job(tmp_path: Path) -> None:
    # the UCSF Wynton file's line 605: failed 1, every time 0
    zeros = {name: "0" for name in SGE_FIELDS[7:31]}
    line = _line(**{**zeros, "failed": "1", "category": "-pe smp 1", "granted_pe": "smp"})
    result = _read(tmp_path, line)
    _reconciled(result)
    (job,) = _rows(result)
    assert job["submit_time"] is None
    assert job["start_time"] is None
    assert job["end_time"] is None
    assert job["job_key"] == "wynton:4711@unknown"
    assert job["state"] == "FAILED"
    assert {"SUBMIT_TIME_ZERO", "NEVER_STARTED", "SGE_FAILED_1", "MAXRSS_ZERO"} <= _flags(job)


def test_submission_time_zero_taken_from_the_other_attempt(tmp_path: Path) -> None:
    failed = _line(submission_time="0", failed="1", start_time="0", end_time="0")
    result = _read(tmp_path, failed, _line())
    first, second = _rows(result)
    assert first["submit_time"] == second["submit_time"] == _at(1714723000)
    assert first["job_key"] == second["job_key"]
    assert {"SUBMIT_TIME_ZERO", "SUBMIT_FROM_ATTEMPT"} <= _flags(first)


def test_array_task(tmp_path: Path) -> None:
    result = _read(tmp_path, _line(task_number="75"), _line(task_number="80"))
    first, second = _rows(result)
    assert (first["job_id_raw"], first["job_seq"], first["array_index"]) == ("4711.75", 4711, 75)
    assert first["job_key"] == "wynton:4711.75@1714723000"
    assert second["array_index"] == 80
    assert result.records.column("job_id_raw").to_pylist() == ["4711.75", "4711.80"]


def test_end_before_start_and_walltime_mismatch(tmp_path: Path) -> None:
    result = _read(
        tmp_path,
        _line(end_time="1714723000"),
        _line(job_number="2", ru_wallclock="3000"),
    )
    backwards, mismatch = _rows(result)
    assert backwards["run_s"] is None
    assert "END_BEFORE_START" in _flags(backwards)
    assert mismatch["run_s"] == 3600
    assert mismatch["walltime_used_s"] == 3000
    assert "WALLTIME_MISMATCH" in _flags(mismatch)


# ------------------------------------------------------------------ memory, exit, state


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2g", 2_000_000_000),
        ("2G", 2 * 2**30),
        ("1k", 1000),
        ("1K", 1024),
        ("3m", 3_000_000),
        ("3M", 3 * 2**20),
        ("1.000T", 2**40),
        ("1.024t", 1.024e12),
        ("512", 512),
        ("INFINITY", None),
    ],
)
def test_memory_specifiers(text: str, expected: float | None) -> None:
    assert parse_sge_memory(text) == expected


def test_bad_memory_specifier() -> None:
    with pytest.raises(ValueError, match="memory specifier"):
        parse_sge_memory("lots")


@pytest.mark.parametrize(
    ("category", "slots", "expected", "flag"),
    [
        ("-l h_vmem=2g -pe smp 4", "4", 8_000_000_000, "MEM_PER_SLOT"),
        ("-l h_vmem=2G -pe smp 4", "4", 8 * 2**30, "MEM_PER_SLOT"),
        ("-l m_mem_free=1.000G,h_vmem=9G", "1", 2**30, "MEM_PER_SLOT"),
        ("-l h_vmem=INFINITY", "1", None, None),
        ("-l mem_free=lots", "1", None, "MEM_UNPARSED"),
        ("NONE", "1", None, None),
    ],
)
def test_memory_request_from_category(
    tmp_path: Path, category: str, slots: str, expected: int | None, flag: str | None
) -> None:
    (job,) = _rows(_read(tmp_path, _line(category=category, slots=slots)))
    assert job["mem_req_bytes"] == expected
    if flag:
        assert flag in _flags(job)


@pytest.mark.parametrize(
    ("category", "column", "value", "flag"),
    [
        ("-l mem_free=2G,h_vmem=4G", "mem_req_bytes", 2 * 2**30, "MEM_REQ_CONFLICT"),
        ("-l mem_free=2G,h_vmem=2G", "mem_req_bytes", 2 * 2**30, None),
        ("-l mem_free=2000", "mem_req_bytes", 2000, "MEM_UNIT_BYTES"),
        ("-l s_rt=600", "walltime_req_s", 600, "WALLTIME_REQ_SOFT"),
        ("-l h_rt=soon", "walltime_req_s", None, "WALLTIME_REQ_UNPARSED"),
        ("-l h_rt=600 -l h_rt=900", "walltime_req_s", 600, "RESOURCE_REPEATED"),
        ("NONE", "cores_req", 1, "CORES_REQ_SERIAL"),
        ("-pe smp 4", "cores_req", 4, None),
    ],
)
def test_choices_read_from_the_category_are_flagged(
    tmp_path: Path, category: str, column: str, value: int | None, flag: str | None
) -> None:
    (job,) = _rows(_read(tmp_path, _line(category=category)))
    assert job[column] == value
    chosen = {
        "MEM_REQ_CONFLICT",
        "MEM_UNIT_BYTES",
        "WALLTIME_REQ_SOFT",
        "WALLTIME_REQ_UNPARSED",
        "RESOURCE_REPEATED",
    }
    if flag == "CORES_REQ_SERIAL":
        assert flag in _flags(job)
    else:
        assert _flags(job) & chosen == ({flag} if flag else set())
        assert ("CORES_REQ_SERIAL" in _flags(job)) == ("-pe" not in category)


def test_a_number_field_holding_nan_is_null_and_flagged(tmp_path: Path) -> None:
    (job,) = _rows(_read(tmp_path, _line(ru_wallclock="nan")))
    assert job["walltime_used_s"] is None
    assert "VALUE_UNREADABLE" in _flags(job)


def test_maxrss_zero_is_unknown(tmp_path: Path) -> None:
    (job,) = _rows(_read(tmp_path, _line(ru_maxrss="0")))
    assert job["mem_used_bytes"] is None
    assert "MAXRSS_ZERO" in _flags(job)


@pytest.mark.parametrize(
    ("failed", "status", "extra", "state", "signal"),
    [
        ("0", "0", {}, "COMPLETED", None),
        ("0", "1", {}, "FAILED", None),
        ("0", "137", {}, "FAILED", 9),
        ("0", "255", {}, "FAILED", None),
        ("0", "128", {}, "FAILED", None),
        ("100", "137", {}, "FAILED", 9),
        ("100", "137", {"category": "-l h_rt=3600"}, "TIMEOUT", 9),
        ("37", "137", {"category": "-l h_rt=3600"}, "TIMEOUT", 9),
        ("37", "137", {"category": "-l h_rt=7200"}, "FAILED", 9),
        ("25", "0", {}, "REQUEUED", None),
        ("24", "0", {}, "REQUEUED", None),
        ("1", "0", {"start_time": "0", "end_time": "0"}, "FAILED", None),
        ("0", "0", {"start_time": "0", "end_time": "0"}, "DELETED", None),
    ],
)
def test_failed_and_exit_status_give_the_state(
    tmp_path: Path,
    failed: str,
    status: str,
    extra: dict[str, str],
    state: str,
    signal: int | None,
) -> None:
    (job,) = _rows(_read(tmp_path, _line(failed=failed, exit_status=status, **extra)))
    assert (job["state"], job["exit_code"], job["exit_signal"]) == (state, int(status), signal)
    flags = _flags(job)
    assert ("SIGNAL_INFERRED" in flags) == (signal is not None)
    assert (f"SGE_FAILED_{failed}" in flags) == (failed != "0")
    assert ("TIMEOUT_INFERRED" in flags) == (state == "TIMEOUT")


# ------------------------------------------------------------------ bytes, files, detection


def test_non_utf8_line_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "acct"
    path.write_bytes(_line(job_name="r\xe9sultat").encode("latin-1") + b"\n")
    result = read_sge(path)
    _reconciled(result)
    (job,) = _rows(result)
    assert job["job_name"] == "résultat"  # Windows-1252, the stated fallback
    assert "NON_UTF8" in _flags(job)
    record = result.records.to_pylist()[0]
    assert record["flags"] == ["NON_UTF8"]
    assert record["raw"] == _line(job_name="r\xe9sultat").encode("latin-1")


def test_gzip_tokenise_then_assemble(tmp_path: Path) -> None:
    path = tmp_path / "accounting.gz"
    path.write_bytes(gzip.compress((HEADER + "\n" + _line() + "\r\n").encode()))
    part = tokenize_sge_file(path, site="s")
    assert part.lines_read == 5
    result = assemble_sge([part], tz="Europe/Paris")  # tz is ignored: epochs are UTC
    assert result.jobs.column("job_key").to_pylist() == ["s:4711@1714723000"]
    assert detect_format(path) == "sge"


def test_empty_file(tmp_path: Path) -> None:
    result = _read(tmp_path)
    _reconciled(result)
    assert (result.lines_read, result.jobs.num_rows) == (0, 0)


def test_registered_with_aliases() -> None:
    assert get_format("uge") is get_format("sge") is get_format("gridengine")


def test_looks_like_sge() -> None:
    assert looks_like_sge((HEADER + "\n" + _line() + "\n").encode())
    assert looks_like_sge((HEADER + "\n").encode())
    assert looks_like_sge((_line(width=43) + "\n").encode())
    assert not looks_like_sge(b"")
    assert not looks_like_sge(b"# just a comment\n")
    torque = b"05/03/2024 09:56:45;E;123[4].pbs01;user=alice queue=grid start=1714723100\n"
    assert not looks_like_sge(torque)
    slurm = b"1001|1001|hpc|batch|normal|a|g|1|u|1|2024-05-03T10:00:00|2024-05-03T10:00:01|\n"
    assert not looks_like_sge(slurm)
    assert not looks_like_sge(b"1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n")


_ALPHABET = st.sampled_from([":", "0", "7", "1714723000", "NONE", "x", " ", "-", ".", "#", "é"])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(
        st.one_of(
            st.lists(_ALPHABET, max_size=60).map("".join),
            st.builds(lambda cut: _line()[:cut], st.integers(0, 400)),
            st.builds(
                lambda name, account: _line(job_name=name, account=account),
                st.text(alphabet=":ab1", max_size=5),
                st.text(alphabet=":ab1", max_size=5),
            ),
        ),
        max_size=12,
    ),
    junk=st.binary(max_size=40),
)
def test_fuzzed_input_never_crashes_and_reconciles(
    tmp_path: Path, lines: list[str], junk: bytes
) -> None:
    path = tmp_path / "fuzz"
    path.write_bytes("\n".join(lines).encode() + junk)
    result = read_sge(path, errors="skip")
    _reconciled(result)
    for line, reason in zip(
        result.quarantine.column("src_line").to_pylist(),
        result.quarantine.column("reason").to_pylist(),
        strict=True,
    ):
        assert line >= 1
        assert reason


# ------------------------------------------------------------------ real data


def _sge(real_data: Path) -> Path:
    return real_data / "other" / "sge"


@pytest.mark.realdata
def test_real_ucsf_wynton_file(real_data: Path) -> None:
    path = _sge(real_data) / "ucsf-wynton-sge-8.1.9-accounting"
    result = read_sge(path, errors="raise")
    _reconciled(result)
    # PROVENANCE: 1,000 records; each is one job attempt with a distinct (job, task): no PE
    # slave records (pe_taskid is NONE throughout), no retries, no duplicates, so 1,000 jobs
    assert result.lines_read == 1004
    assert result.records.column("record_type").to_pylist()[:4] == ["H"] * 4
    assert result.lines_quarantined == 0
    assert result.jobs.num_rows == 1000
    assert len(set(result.jobs.column("job_key").to_pylist())) == 1000
    assert set(result.jobs.column("attempt").to_pylist()) == {0}
    assert result.info["sge_versions"] == ["8.1.9"]
    assert result.info["sge_pe_slaves"] == result.info["sge_orphan_pe_slaves"] == 0
    summary = result.summary()
    assert summary["jobs_by_state"] == {"COMPLETED": 809, "FAILED": 190, "TIMEOUT": 1}
    flags = summary["job_flags"]
    assert (flags["SGE_FAILED_100"], flags["SGE_FAILED_37"], flags["SGE_FAILED_1"]) == (137, 2, 1)
    assert flags["SUBMIT_TIME_ZERO"] == 1
    assert "TIME_MILLISECONDS" not in flags
    rows = {r["src_line"]: r for r in _rows(result)}
    # line 5: member.q:cin-id3:group4:owner09:sleep.sh:1:sge:0:1502823561:1502823576:1502823614:
    # 100:137:38:...:project4:...:NONE:1:100:...:2306048:0:0
    first = rows[5]
    assert (first["job_seq"], first["array_index"], first["queue"]) == (1, 100, "member.q")
    assert (first["user"], first["group"], first["account"]) == ("owner09", "group4", "project4")
    assert first["submit_time"] == _at(1502823561)
    assert (first["wait_s"], first["run_s"], first["walltime_used_s"]) == (15, 38, 38)
    assert (first["exit_code"], first["exit_signal"], first["state"]) == (137, 9, "FAILED")
    assert first["vmem_used_bytes"] == 2306048
    assert first["mem_used_bytes"] == 5552 * 1024
    assert first["cpu_time_s"] == pytest.approx(0.222109)
    # line 605: failed 1 with every time 0 → no submit, start or end; not a crash
    failed = rows[605]
    assert (failed["job_seq"], failed["state"]) == (339, "FAILED")
    assert failed["submit_time"] is None
    assert failed["start_time"] is None
    # line 504: failed 37 after its h_rt of 1209600 s
    timeout = rows[504]
    assert (timeout["state"], timeout["walltime_req_s"], timeout["run_s"]) == (
        "TIMEOUT",
        1209600,
        1209601,
    )
    cores = result.jobs.column("cores_alloc").to_pylist()
    assert sorted(set(cores), key=lambda c: -1 if c is None else c) == [None, 1, 12, 24]


@pytest.mark.realdata
def test_real_xdmod_sge_fixture(real_data: Path) -> None:
    # ubccr/xdmod tests/artifacts/xdmod/unit/shredder/sge: two records of job 22947 that differ
    # only in category; XDMoD's ingest groups by (job_number, task_number): one job
    result = read_sge(_sge(real_data) / "xdmod-shredder-sge-fixture.log", errors="raise")
    _reconciled(result)
    assert result.records.num_rows == 2
    (job,) = _rows(result)
    assert (job["job_seq"], job["array_index"], job["queue"]) == (22947, None, "myqueue")
    assert (job["user"], job["group"], job["job_name"]) == ("jdoe", "jdoe", "mpi-mem-test")
    assert job["account"] is None  # project NONE
    assert job["submit_time"] == _at(1310761621)
    assert job["start_time"] == _at(1311095354)
    assert job["end_time"] == _at(1311095414)
    assert (job["run_s"], job["walltime_used_s"], job["walltime_req_s"]) == (60, 60, 36000)
    assert (job["cores_req"], job["cores_alloc"], job["nodes_alloc"]) == (1, 1, 1)
    assert job["cpu_time_s"] == pytest.approx(60.13)
    assert job["vmem_used_bytes"] == 189153280
    assert job["mem_used_bytes"] == 104188 * 1024
    # mem_free=1.000T: XDMoD stores 1073741824 KiB, i.e. 2**40 bytes; s_vmem=1.024t: 1e9 KiB
    assert job["mem_req_bytes"] == 2**40
    assert parse_sge_memory("1.024t") == 1_000_000_000 * 1024
    assert (job["state"], job["exit_code"]) == ("COMPLETED", 0)
    # was {"DUPLICATE", "MEM_PER_SLOT"}: mem_free=1.000T and s_vmem=1.024t disagree, and the
    # first is kept: now flagged MEM_REQ_CONFLICT
    assert _flags(job) == {"DUPLICATE", "MEM_PER_SLOT", "MEM_REQ_CONFLICT"}
    assert result.records.column("flags").to_pylist() == [["DUPLICATE_DROPPED"], None]


@pytest.mark.realdata
def test_real_xdmod_uge_fixture(real_data: Path) -> None:
    # ubccr/xdmod .../uge/output/accounting-logs.json: times floor(ms / 1000)
    result = read_sge(_sge(real_data) / "xdmod-shredder-uge-fixture.log", errors="raise")
    _reconciled(result)
    old, gpu = _rows(result)
    assert [int(old[k].timestamp()) for k in ("submit_time", "start_time", "end_time")] == [
        1310761621,
        1311095354,
        1311095414,
    ]
    assert [int(gpu[k].timestamp()) for k in ("submit_time", "start_time", "end_time")] == [
        1652111621,
        1652111622,
        1652124460,
    ]
    assert "TIME_MILLISECONDS" in _flags(old)
    assert "TIME_MILLISECONDS" in _flags(gpu)
    assert (gpu["job_seq"], gpu["queue"], gpu["user"], gpu["group"]) == (
        4437956,
        "gpu_queue",
        "gpuowner",
        "gpugroup",
    )
    assert (gpu["cores_req"], gpu["cores_alloc"], gpu["walltime_used_s"]) == (16, 16, 12837)
    assert gpu["cpu_time_s"] == pytest.approx(198790.352)
    assert gpu["vmem_used_bytes"] == 9323855872
    assert gpu["mem_req_bytes"] == 16 * 2**30  # m_mem_free=1.000G per slot, 16 slots
    assert gpu["state"] == "COMPLETED"
    # the UGE record has 74 fields; the 29 after the 45 known ones are kept in attrs
    flags = result.records.column("flags").to_pylist()
    assert flags == [None, ["EXTRA_FIELDS"]]
    attrs = dict(result.records.column("attrs")[1].as_py())
    assert len(attrs) == 74
    assert attrs["field_52"] == "qsub script.sh"


@pytest.mark.realdata
def test_detection_over_every_real_file(real_data: Path) -> None:
    formats = {f.name: f for f in _FORMATS.values()}
    for path in sorted(p for p in real_data.rglob("*") if p.is_file() and p.suffix != ".md"):
        head = read_log_bytes(path)[:65536]
        claims = {name for name, f in formats.items() if f.looks_like(head)}
        is_sge = path.parent.name == "sge"
        assert ("sge" in claims) == is_sge, path.name
        if is_sge:
            assert claims == {"sge"}, path.name
            assert detect_format(path) == "sge"


@pytest.mark.parametrize(
    ("change", "column"),
    [
        ({"slots": "3000000000"}, "cores_alloc"),
        ({"ru_maxrss": "99999999999999999"}, "mem_used_bytes"),  # x 1024 beyond int64
        ({"job_number": "99999999999999999999"}, "job_seq"),
        ({"end_time": "99999999999999999"}, "end_time"),  # past the year 9999, even as ms
    ],
)
def test_a_number_too_large_for_its_column_is_null_and_flagged(
    tmp_path: Path, change: dict[str, str], column: str
) -> None:
    result = _read(tmp_path, _line(), _line(**{"job_number": "4712", **change}))
    _reconciled(result)
    assert result.lines_read == result.jobs.num_rows == 2
    assert result.jobs.column(column)[1].as_py() is None
    assert "VALUE_UNREADABLE" in result.jobs.column("flags")[1].as_py()
    assert "VALUE_UNREADABLE" not in (result.jobs.column("flags")[0].as_py() or [])
