"""TORQUE / PBS records → jobs: the literal edge cases of parsers.md §9 and data.md's real quirks.

Every case feeds literal accounting lines through the reference tokeniser and checks the job rows.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.errors import ConfigError, SchemaError
from gridtrace.logs import _torque_jobs
from gridtrace.logs._torque_jobs import JOB_FLAGS, TorqueAssembly, assemble_torque_jobs
from gridtrace.logs._torque_lines import tokenize_torque_reference
from gridtrace.schema import JOB_STATES, JOBS, RECORDS, validate

UTC = dt.UTC


def records(*files: bytes) -> pa.Table:
    """Tokenise each chunk of bytes as one daily file, in order."""
    parts = [
        tokenize_torque_reference(data, src_file=f"202405{i + 1:02d}", site="s").records
        for i, data in enumerate(files)
    ]
    return pa.concat_tables(parts)


def assemble(*files: bytes, **kwargs: Any) -> TorqueAssembly:
    result = assemble_torque_jobs(records(*files), **kwargs)
    validate(result.jobs, JOBS)
    validate(result.records, RECORDS)
    assert set(result.jobs.column("state").to_pylist()) <= set(JOB_STATES)
    for flags in result.jobs.column("flags").to_pylist():
        assert all(f.split(":", 1)[0] in JOB_FLAGS for f in flags), flags
    return result


def jobs(*files: bytes, **kwargs: Any) -> list[dict[str, Any]]:
    return assemble(*files, **kwargs).jobs.to_pylist()


def one(*files: bytes, **kwargs: Any) -> dict[str, Any]:
    rows = jobs(*files, **kwargs)
    assert len(rows) == 1, rows
    return rows[0]


def t(epoch: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(epoch, UTC)


def lines(*text: str) -> bytes:
    return "".join(f"{line}\n" for line in text).encode()


# --------------------------------------------------------------------------------------------
# parsers.md §9, cases 1-22

ARRAY_TASK = (
    "05/03/2024 09:56:45;E;123[4].pbs01.example.org;user=alice group=atlas jobname=sim-4 "
    "queue=grid ctime=1714723000 qtime=1714723000 etime=1714723000 start=1714723100 "
    "exec_host=n001/3 Resource_List.walltime=02:00:00 end=1714730205 Exit_status=0 "
    "resources_used.walltime=01:58:25"
)
ARRAY_PARENT = "05/03/2024 10:00:00;D;123[].pbs01.example.org;requestor=alice@ui01"


def test_01_array_sub_job() -> None:
    job = one(lines(ARRAY_TASK))
    assert job["job_seq"] == 123
    assert job["array_index"] == 4
    assert job["job_id_raw"] == "123[4].pbs01.example.org"
    assert job["job_key"] == "s:123[4]@1714723000"
    assert job["run_s"] == job["walltime_used_s"] == 7105
    assert job["walltime_req_s"] == 7200
    assert job["cores_alloc"] == 1
    assert job["exec_hosts"] == ["n001"]
    assert job["state"] == "COMPLETED"
    assert job["flags"] == []


def test_02_array_parent_is_records_only() -> None:
    assert jobs(lines(ARRAY_PARENT)) == []
    result = assemble(lines(ARRAY_TASK, ARRAY_PARENT))
    assert result.jobs.num_rows == 1  # the sub-job is unaffected
    assert result.jobs.column("state").to_pylist() == ["COMPLETED"]
    assert result.records.num_rows == 2
    assert result.info["array_parent_records"] == 1


REQUEUE = (
    "05/03/2024 12:00:00;E;200.pbs01;user=bob group=cms queue=grid ctime=1714730000 "
    "qtime=1714730000 etime=1714730000 start=1714730100 exec_host=n002/0 end=1714737600 "
    "Exit_status=-3 resources_used.walltime=02:05:00",
    "05/03/2024 15:00:00;E;200.pbs01;user=bob group=cms queue=grid ctime=1714730000 "
    "qtime=1714737700 etime=1714737700 start=1714737800 exec_host=n007/0 end=1714748400 "
    "Exit_status=0 resources_used.walltime=02:56:40",
)


def test_03_multiple_end_records_are_attempts() -> None:
    first, second = jobs(lines(*REQUEUE))
    assert first["job_key"] == second["job_key"] == "s:200@1714730000"
    assert (first["attempt"], second["attempt"]) == (0, 1)
    assert first["n_attempts"] == second["n_attempts"] == 2
    assert first["state"] == "REQUEUED"
    assert first["run_s"] == 7500
    assert first["exit_code"] == -3
    assert first["exec_hosts"] == ["n002"]
    assert second["state"] == "COMPLETED"
    assert second["run_s"] == 10600
    assert second["queue_time"] == t(1714737700)
    assert first["submit_time"] == second["submit_time"] == t(1714730000)


def test_04_rerun_record_alone_is_records_only() -> None:
    result = assemble(lines("05/03/2024 14:05:00;R;201.pbs01;"))
    assert result.jobs.num_rows == 0
    assert result.records.column("record_type").to_pylist() == ["R"]
    assert result.info["rerun_records"] == 1


def test_04_rerun_record_ends_the_attempt_in_progress() -> None:
    first, second = jobs(
        lines(
            "05/03/2024 10:00:00;Q;201.pbs01;queue=grid",
            "05/03/2024 10:01:00;S;201.pbs01;user=bob ctime=1714730400 start=1714730460 "
            "exec_host=n1/0",
            "05/03/2024 14:05:00;R;201.pbs01;",
            "05/03/2024 14:06:00;S;201.pbs01;user=bob ctime=1714730400 start=1714745160 "
            "exec_host=n2/0",
            "05/03/2024 15:00:00;E;201.pbs01;user=bob ctime=1714730400 start=1714745160 "
            "exec_host=n2/0 end=1714748400 Exit_status=0",
        )
    )
    assert first["state"] == "REQUEUED"
    assert first["end_record_type"] == "R"
    assert first["end_time"] == t(1714745100)  # the R stamp
    assert first["run_s"] == 1714745100 - 1714730460
    assert first["exec_hosts"] == ["n1"]
    assert first["flags"] == ["RERUN", "TIME_FROM_STAMP"]
    assert (second["attempt"], second["n_attempts"], second["state"]) == (1, 2, "COMPLETED")
    assert second["queue"] == "grid"


def test_04_rerun_record_increments_the_attempt_counter() -> None:
    job = one(
        lines(
            "05/03/2024 14:05:00;R;201.pbs01;",
            "05/03/2024 14:06:00;S;201.pbs01;ctime=1714730400 start=1714745160 exec_host=n2/0",
            "05/03/2024 15:00:00;E;201.pbs01;ctime=1714730400 start=1714745160 exec_host=n2/0 "
            "end=1714748400 Exit_status=0",
        )
    )
    assert (job["attempt"], job["n_attempts"]) == (1, 2)
    assert job["flags"] == ["ATTEMPT_UNLOGGED"]


QUEUED_THEN_DELETED = (
    "05/03/2024 10:00:00;Q;202.pbs01;queue=grid",
    "05/03/2024 10:05:00;D;202.pbs01;requestor=alice@ui01",
)


def test_05_deleted_while_queued() -> None:
    job = one(lines(*QUEUED_THEN_DELETED), tz="UTC")
    assert job["state"] == "DELETED"
    assert job["start_time"] is None
    assert job["end_time"] is None
    assert job["run_s"] is None
    assert job["submit_time"] == t(1714730400)  # the Q stamp in the site zone
    assert job["queue"] == "grid"
    assert job["end_record_type"] == "D"
    assert "TIME_FROM_STAMP" in job["flags"]
    assert "DELETED_BY_USER" in job["flags"]


def test_05_without_zone_or_epochs_stamps_are_read_as_utc_and_flagged() -> None:
    result = assemble(lines(*QUEUED_THEN_DELETED))
    job = result.jobs.to_pylist()[0]
    assert job["submit_time"] == t(1714730400)
    assert "TZ_ASSUMED_UTC" in job["flags"]
    assert result.info["tz_source"] == "assumed_utc"
    assert result.tz_offset_s is None


def test_06_end_record_without_start() -> None:
    job = one(
        lines(
            "05/03/2024 10:05:00;E;203.pbs01;user=alice group=atlas queue=grid "
            "ctime=1714730000 qtime=1714730000 etime=1714730000 end=1714730300 Exit_status=271"
        )
    )
    assert job["state"] == "DELETED"
    assert job["run_s"] is None
    assert job["start_time"] is None
    assert job["exit_code"] == 271
    assert job["exit_signal"] == 15


TORQUE_DOCS_S = (
    "06/06/2005 14:06:06;S;407.ign1.zeta2.org;user=guest group=guest jobname=STDIN queue=batch "
    "ctime=1118087915 qtime=1118087915 etime=1118087915 start=1118088366 exec_host=ign1/0"
)
TORQUE_DOCS_D = "06/06/2005 14:07:17;D;407.ign1.zeta2.org;requestor=guest@ign1.zeta2.org"
TORQUE_DOCS_E = (
    "06/06/2005 14:07:17;E;407.ign1.zeta2.org;user=guest group=guest jobname=STDIN queue=batch "
    "ctime=1118087915 qtime=1118087915 etime=1118087915 start=1118088366 exec_host=ign1/0 "
    "end=1118088437 Exit_status=271 resources_used.walltime=00:01:11"
)


def test_07_deleted_while_running() -> None:
    job = one(lines(TORQUE_DOCS_S, TORQUE_DOCS_D, TORQUE_DOCS_E))
    assert job["state"] == "CANCELLED"
    assert job["run_s"] == 71
    assert job["end_record_type"] == "E"
    assert job["exit_signal"] == 15
    assert job["flags"] == ["DELETED_BY_USER"]


def test_07_deleted_while_running_without_end_record() -> None:
    job = one(lines(TORQUE_DOCS_S, TORQUE_DOCS_D))
    assert job["state"] == "CANCELLED"
    assert job["end_record_type"] == "D"
    assert job["end_time"] == t(1118088437)  # the D stamp, placed with the S record's offset
    assert job["run_s"] == 71
    assert job["flags"] == ["DELETED_BY_USER", "NO_END_RECORD", "TIME_FROM_STAMP"]


def _ended(job_id: str, extra: str) -> str:
    return (
        f"05/03/2024 12:00:00;E;{job_id};user=u queue=q ctime=1714730000 start=1714730100 "
        f"end=1714737600 Exit_status=0 {extra}"
    )


@pytest.mark.parametrize(
    ("exec_host", "nodes", "cores", "hosts"),
    [
        ("n1/0-3+n2/0-3", 2, 8, ["n1", "n2"]),
        ("b391/0-1,5,11", 1, 4, ["b391"]),
        ("i02n33/7+i02n33/6+i02n32/7+i02n32/6", 2, 4, ["i02n33", "i02n32"]),
    ],
)
def test_08_exec_host_ranges_and_lists(
    exec_host: str, nodes: int, cores: int, hosts: list[str]
) -> None:
    job = one(lines(_ended("1.p", f"exec_host={exec_host}")))
    assert (job["nodes_alloc"], job["cores_alloc"], job["exec_hosts"]) == (nodes, cores, hosts)


def test_09_pbspro_exec_host_and_exec_vnode() -> None:
    plain, gpu = jobs(
        lines(
            _ended(
                "1.p",
                "exec_host=c1/0*13+c2/0*13 exec_vnode=(c1:ncpus=13)+(c2:ncpus=13) "
                "Resource_List.ncpus=26",
            ),
            _ended(
                "2.p",
                "exec_host=gpu07/0*0 "
                "exec_vnode=(gpu07[1]:ncpus=24:ngpus=2+gpu07[0]:ncpus=24:ngpus=2) "
                "Resource_List.ncpus=48",
            ),
        )
    )
    assert (plain["nodes_alloc"], plain["cores_alloc"], plain["cores_req"]) == (2, 26, 26)
    assert plain["exec_hosts"] == ["c1", "c2"]
    assert (gpu["nodes_alloc"], gpu["cores_alloc"], gpu["gpus_alloc"]) == (1, 48, 4)
    assert gpu["exec_hosts"] == ["gpu07"]


@pytest.mark.parametrize(
    ("spec", "nodes", "cores", "gpus"),
    [
        ("2:ppn=8", 2, 16, 0),
        ("2:ppn=4+4:ppn=1", 6, 12, 0),
        ("n0815:ppn=4", 1, 4, 0),
        ("1:ppn=28:gpus=1:default", 1, 28, 1),
    ],
)
def test_10_nodes_ppn_requests(spec: str, nodes: int, cores: int, gpus: int) -> None:
    job = one(lines(_ended("1.p", f"exec_host=n1/0 Resource_List.nodes={spec}")))
    assert (job["nodes_req"], job["cores_req"], job["gpus_req"]) == (nodes, cores, gpus)


def test_10_unparsable_nodes_spec() -> None:
    job = one(lines(_ended("1.p", "exec_host=n1/0 Resource_List.nodes=1:ppn=many")))
    assert (job["nodes_req"], job["cores_req"], job["gpus_req"]) == (None, None, None)
    assert job["flags"] == ["NODESPEC_UNPARSED"]


def test_11_walltime_forms() -> None:
    seconds, clock, negative, off = jobs(
        lines(
            _ended(
                "1.p",
                "exec_host=n/0 resources_used.walltime=7500 Resource_List.walltime=2:00:00:00",
            ),
            _ended(
                "2.p",
                "exec_host=n/0 resources_used.walltime=02:05:00 Resource_List.walltime=01:00:00",
            ),
            _ended("3.p", "exec_host=n/0 resources_used.walltime=-342359:-42:-21"),
            _ended("4.p", "exec_host=n/0 resources_used.walltime=02:06:01"),
        )
    )
    assert (seconds["walltime_used_s"], seconds["walltime_req_s"]) == (7500, 172800)
    assert (clock["walltime_used_s"], clock["walltime_req_s"]) == (7500, 3600)
    assert seconds["flags"] == clock["flags"] == []
    assert negative["walltime_used_s"] is None
    assert negative["run_s"] == 7500  # still from the epochs
    assert negative["flags"] == ["NEG_WALLTIME"]
    assert off["walltime_used_s"] == 7561
    assert off["run_s"] == 7500
    assert off["flags"] == ["WALLTIME_MISMATCH"]


def test_12_memory_units() -> None:
    first, second, third = jobs(
        lines(
            _ended("1.p", "resources_used.mem=15240kb Resource_List.mem=1993mb"),
            _ended(
                "2.p", "resources_used.mem=2kw Resource_List.mem=4gb resources_used.vmem=12.27M"
            ),
            _ended("3.p", "resources_used.mem=1024"),
        )
    )
    assert (first["mem_used_bytes"], first["mem_req_bytes"]) == (15_605_760, 2_089_811_968)
    assert first["flags"] == []
    assert (second["mem_used_bytes"], second["mem_req_bytes"]) == (16_384, 4_294_967_296)
    assert second["vmem_used_bytes"] == 12_866_027
    assert second["flags"] == ["UNIT_NONSTANDARD"]
    assert third["mem_used_bytes"] == 1024  # bytes, the PBS default, by default
    assert third["flags"] == ["UNIT_GUESSED"]
    guessed_kb = one(lines(_ended("3.p", "resources_used.mem=1024")), unitless_memory="kb")
    assert guessed_kb["mem_used_bytes"] == 1024 * 1024


def test_12_memory_request_from_pmem() -> None:
    job = one(lines(_ended("1.p", "Resource_List.nodes=2:ppn=4 Resource_List.pmem=2500mb")))
    assert job["mem_req_bytes"] == 8 * 2500 * 1024**2
    assert job["flags"] == ["MEM_FROM_PMEM"]


XDMOD_2009 = (
    "12/21/2009 15:27:00;E;6.edge.ccr.buffalo.edu;user=jonesm group=ccrstaff jobname=impi-hybrid "
    "queue=ccr ctime=1261424924 qtime=1261424924 etime=1261424924 start=1261425023 "
    "owner=jonesm@edge.ccr.buffalo.edu exec_host=i02n33/7+i02n33/6+i02n32/7+i02n32/6 "
    "Resource_List.neednodes=4:ppn=8 Resource_List.nodect=4 Resource_List.nodes=4:ppn=8 "
    "Resource_List.walltime=04:00:00 session=5510 end=1261427220 Exit_status=0 "
    "resources_used.cput=00:00:00 resources_used.mem=15240kb resources_used.vmem=350936kb "
    "resources_used.walltime=00:36:37"
)


def test_13_time_zone_from_stamp_and_epoch() -> None:
    running = assemble(lines(TORQUE_DOCS_S))
    assert running.tz_offset_s == -21600
    assert running.jobs.column("tz_offset_s").to_pylist() == [-21600]
    assert running.jobs.column("state").to_pylist() == ["RUNNING"]
    ended = assemble(lines(XDMOD_2009))
    assert ended.tz_offset_s == -18000
    job = ended.jobs.to_pylist()[0]
    assert job["end_time"] == t(1261427220)  # from the epoch, not from the stamp
    assert job["tz_offset_s"] == -18000
    assert ended.records.column("stamp_utc").to_pylist() == [t(1261427220)]


FALL_BACK = (
    "11/03/2024 01:30:00;E;1.p;ctime=1730610000 start=1730612000 exec_host=a/0 end=1730615400 "
    "Exit_status=0",
    "11/03/2024 01:30:00;Q;3.p;queue=a",
    "11/03/2024 01:30:00;E;2.p;ctime=1730610000 start=1730612000 exec_host=a/0 end=1730619000 "
    "Exit_status=0",
    "11/03/2024 01:30:00;Q;4.p;queue=a",
)


def test_14_dst_fall_back_with_zone() -> None:
    result = assemble(lines(*FALL_BACK, "03/10/2024 02:30:00;Q;5.p;queue=a"), tz="America/Chicago")
    by_id = {job["job_id_raw"]: job for job in result.jobs.to_pylist()}
    assert by_id["1.p"]["end_time"] == t(1730615400)  # 06:30Z
    assert by_id["2.p"]["end_time"] == t(1730619000)  # 07:30Z
    assert (by_id["1.p"]["tz_offset_s"], by_id["2.p"]["tz_offset_s"]) == (-18000, -21600)
    # the same stamp-only local time, resolved by the records around it
    assert by_id["3.p"]["submit_time"] == t(1730615400)
    assert by_id["4.p"]["submit_time"] == t(1730619000)
    assert "DST_AMBIGUOUS" in by_id["3.p"]["flags"]
    assert "DST_AMBIGUOUS" in by_id["4.p"]["flags"]
    # 02:30 does not exist on 10 March: moved to 03:30 CDT
    assert by_id["5.p"]["submit_time"] == dt.datetime(2024, 3, 10, 8, 30, tzinfo=UTC)
    assert "DST_GAP" in by_id["5.p"]["flags"]
    assert result.info["dst"] is True
    assert result.info["offsets_seen"] == {"-21600": 1, "-18000": 1}
    assert result.info["tz_source"] == "given"
    record_flags = result.records.column("flags").to_pylist()
    assert record_flags == [[], ["DST_AMBIGUOUS"], [], ["DST_AMBIGUOUS"], ["DST_GAP"]]


def test_14_dst_without_zone_carries_offsets_forward() -> None:
    result = assemble(lines(*FALL_BACK))
    submits = {j["job_id_raw"]: j["submit_time"] for j in result.jobs.to_pylist()}
    assert submits["3.p"] == t(1730615400)
    assert submits["4.p"] == t(1730619000)
    assert result.info["tz_source"] == "inferred"
    assert result.info["dst"] is True


def test_15_daily_rotation_merges_a_job_across_files() -> None:
    day1 = lines(
        "05/02/2024 23:58:00;Q;210.pbs01;queue=grid",
        "05/02/2024 23:59:00;S;210.pbs01;user=bob group=cms queue=grid ctime=1714694280 "
        "start=1714694340 exec_host=n5/0-1",
    )
    day2 = lines(
        "05/03/2024 01:00:00;E;210.pbs01;user=bob group=cms queue=grid ctime=1714694280 "
        "start=1714694340 exec_host=n5/0-1 end=1714698000 Exit_status=0",
    )
    result = assemble(day1, day2)
    job = result.jobs.to_pylist()[0]
    assert result.jobs.num_rows == 1
    assert (job["state"], job["run_s"], job["wait_s"], job["cores_alloc"]) == (
        "COMPLETED",
        3660,
        60,
        2,
    )
    assert job["src_file"] == "20240502"  # the E record's file
    assert result.records.column("stamp_utc").to_pylist()[0] == t(1714694280)


CUT_S = (
    "05/03/2024 21:00:00;S;204.pbs01;user=bob group=cms jobname=x queue=grid ctime=1714760000 "
    "qtime=1714760000 etime=1714760000 start=1714770000 exec_host=n1/0-3 "
    "Resource_List.nodes=1:ppn=4"
)
CUT_E = (
    "05/03/2024 23:59:59;E;204.pbs01;user=bob group=cms jobname=x queue=grid ctime=1714760000 "
    "qtime=1714760000 etime=1714760000 start=1714770000 exec_host=n1/0-3 "
    "Resource_List.nodes=1:ppn=4 Resource_List.walltime=72:0"
)


def test_16_truncated_end_record_is_recovered_as_far_as_its_fields_go() -> None:
    # a crash cut the last E record of the file: its own stamp is the end (in the site's zone)
    job = one(lines(CUT_S), CUT_E.encode(), tz="UTC")
    assert (job["state"], job["end_record_type"]) == ("UNKNOWN", "E")  # Exit_status was cut
    assert job["end_time"] == t(1714780799)  # 05/03/2024 23:59:59 UTC, the record's stamp
    assert job["start_time"] == t(1714770000)
    assert job["run_s"] == 10799
    assert job["cores_alloc"] == 4
    assert job["exit_code"] is None
    assert job["walltime_req_s"] is None  # the last value may be cut: not used
    assert set(job["flags"]) == {
        "TRUNCATED",
        "END_FROM_STAMP",
        "NO_NEWLINE",
        "TIME_FROM_STAMP",
        "NO_EXIT_STATUS",
    }


def test_16_truncated_end_record_takes_what_it_lost_from_the_start_record() -> None:
    cut = CUT_E[: CUT_E.index(" start=")].encode()
    job = one(lines(CUT_S), cut, tz="Europe/Paris")
    assert job["start_time"] == t(1714770000)
    assert job["exec_hosts"] == ["n1"]
    assert job["end_time"] == t(1714780799 - 7200)  # local CEST stamp placed with the zone
    assert "FROM_S_RECORD" in job["flags"]
    assert job["state"] == "UNKNOWN"


def test_16_truncated_end_record_without_any_start_is_unknown_not_deleted() -> None:
    cut = b"05/03/2024 23:59:59;E;204.pbs01;user=bob group=cms jobname=x queue=grid ctime=17147"
    job = one(cut)
    assert job["state"] == "UNKNOWN"
    assert job["submit_time"] is None  # ctime=17147 is the cut value: not used
    assert job["job_key"] == "s:204@unknown"
    assert {"TRUNCATED", "SUBMIT_UNKNOWN", "END_FROM_STAMP", "TZ_ASSUMED_UTC"} <= set(job["flags"])


def test_16_a_later_complete_end_record_wins() -> None:
    cut = b"05/03/2024 23:59:59;E;204.pbs01;user=bob group=cms jobname=x queue=grid ctime=17147"
    whole = lines(
        "05/04/2024 00:00:10;E;204.pbs01;user=bob group=cms jobname=x queue=grid ctime=1714720000 "
        "start=1714730400 exec_host=n1/0 end=1714780810 Exit_status=0"
    )
    result = assemble(cut, whole)  # a later complete record wins
    job = result.jobs.to_pylist()[0]
    assert result.jobs.num_rows == 1
    assert job["state"] == "COMPLETED"
    assert job["flags"] == ["END_RECORD_TRUNCATED"]
    assert result.info["truncated_end_records"] == 1
    # the same when the job's S came first, and the cut copy sits in an overlapping file
    result = assemble(lines(CUT_S) + CUT_E.encode(), lines(CUT_S, CUT_E + " end=1714780799"))
    (job,) = result.jobs.to_pylist()
    assert "END_RECORD_TRUNCATED" in job["flags"]
    assert "TRUNCATED" not in job["flags"]
    assert (job["state"], job["end_time"]) == ("UNKNOWN", t(1714780799))


def test_16_a_last_value_that_may_be_cut_is_flagged_truncated() -> None:
    # Exit_status=1 may be the start of Exit_status=137: the line stops on a key E always has
    line = CUT_E.replace(" Resource_List.walltime=72:0", " end=1714780799 Exit_status=1")
    job = one(lines(CUT_S), line.encode())
    assert job["exit_code"] is None
    assert job["end_time"] == t(1714780799)
    assert "TRUNCATED" in job["flags"]
    assert "END_FROM_STAMP" not in job["flags"]


def test_17_nul_padding_parses_normally() -> None:
    job = one(b"\x00\x00\x00\x0005/04/2024 00:00:01;Q;205.pbs01;queue=grid\n", tz="UTC")
    assert (job["state"], job["queue"], job["submit_time"]) == ("PENDING", "grid", t(1714780801))
    assert job["flags"] == ["NUL_STRIPPED", "NO_END_RECORD", "TIME_FROM_STAMP"]


def test_17_a_fragment_before_a_nul_run_is_never_a_job() -> None:
    fragment = b"05/04/2024 00:00:00;Q;299.pbs01;que"
    data = fragment + b"\x00" * 100 + b"05/04/2024 00:00:01;Q;205.pbs01;queue=grid\n"
    data += b"05/04/2024 00:00:02;Q;298.pbs0" + b"\x00" * 8 + b"\n"
    result = assemble(data, tz="UTC")
    assert result.jobs.column("job_id_raw").to_pylist() == ["205.pbs01"]
    assert result.records.column("flags").to_pylist() == [["NUL_STRIPPED", "CUT_FRAGMENT"]]


def test_18_non_utf8_bytes_never_abort() -> None:
    line = (
        b"05/04/2024 00:00:02;E;207.pbs01;user=ga\xe9ndalf jobname=r\xe9sultat queue=grid "
        b"ctime=1714780000 start=1714780100 exec_host=n1/0 end=1714780802 Exit_status=0\n"
    )
    result = assemble(line)
    assert result.jobs.column("job_name").to_pylist() == ["r\u00e9sultat"]
    assert result.jobs.column("user").to_pylist() == ["ga\u00e9ndalf"]
    assert result.jobs.column("state").to_pylist() == ["COMPLETED"]
    assert result.jobs.column("flags").to_pylist() == [["NON_UTF8"]]
    assert result.records.column("flags").to_pylist() == [["NON_UTF8"]]


def test_19_separators_inside_values() -> None:
    job = one(
        lines(
            '05/03/2024 12:00:00;E;206.pbs01;user=bob jobname=a;b queue=grid account="my proj" '
            "ctime=1714730000 start=1714730100 exec_host=n1/0*8 "
            "Resource_List.select=2:ncpus=8:mem=4gb "
            "end=1714737600 Exit_status=0"
        )
    )
    assert job["job_name"] == "a;b"
    assert job["account"] == "my proj"
    assert (job["nodes_req"], job["cores_req"], job["mem_req_bytes"]) == (2, 16, 8 * 1024**3)


def test_20_job_id_reuse_gives_two_keys() -> None:
    old, new = jobs(
        lines(
            "01/01/2019 01:00:00;E;1.pbs01;ctime=1546300800 start=1546300900 exec_host=a/0 "
            "end=1546304400 Exit_status=0",
            "01/01/2021 00:00:00;Q;1.pbs01;queue=q",
            "01/01/2021 01:00:00;E;1.pbs01;ctime=1609459200 start=1609459300 exec_host=a/0 "
            "end=1609462800 Exit_status=0",
        )
    )
    assert old["job_key"] == "s:1@1546300800"
    assert new["job_key"] == "s:1@1609459200"
    assert old["flags"] == new["flags"] == ["ID_REUSE"]
    assert new["queue"] == "q"  # the Q without ctime joins the job that follows it
    assert old["n_attempts"] == new["n_attempts"] == 1


def test_21_exact_duplicates_count_once() -> None:
    line = lines(*REQUEUE[1:])
    result = assemble(line, line)  # the same file ingested twice
    job = result.jobs.to_pylist()[0]
    assert result.jobs.num_rows == 1
    assert job["flags"] == ["DUPLICATE"]
    assert result.info["duplicate_lines"] == 1
    assert result.records.num_rows == 2  # records stay lossless
    assert result.records.column("flags").to_pylist() == [[], ["DUPLICATE"]]


@pytest.mark.parametrize(
    ("status", "code", "signal", "flags"),
    [
        ("271", 271, 15, []),
        ("137", 137, 9, ["SIGNAL_INFERRED"]),
        ("0", 0, None, []),
        ("1", 1, None, []),
    ],
)
def test_22_exit_status_conventions(
    status: str, code: int, signal: int | None, flags: list[str]
) -> None:
    job = one(
        lines(_ended("1.p", "exec_host=n/0").replace("Exit_status=0", f"Exit_status={status}"))
    )
    assert (job["exit_code"], job["exit_signal"], job["flags"]) == (code, signal, flags)
    assert job["state"] == ("COMPLETED" if code == 0 else "FAILED")


def test_22_exec_retry_code_is_failed_or_requeued_by_context() -> None:
    alone = one(lines(REQUEUE[0]))
    assert (alone["exit_code"], alone["state"]) == (-3, "FAILED")
    first, _ = jobs(lines(*REQUEUE))
    assert (first["exit_code"], first["state"]) == (-3, "REQUEUED")


@pytest.mark.parametrize(
    ("extra", "state"),
    [
        ("Exit_status=-11 resources_used.walltime=7500", "TIMEOUT"),
        ("Exit_status=-10 resources_used.walltime=7500", "FAILED"),
        ("Exit_status=265 resources_used.walltime=3600 Resource_List.walltime=01:00:00", "TIMEOUT"),
        ("Exit_status=265 resources_used.walltime=3599 Resource_List.walltime=01:00:00", "FAILED"),
        ("Exit_status=137 Resource_List.walltime=02:00:00", "TIMEOUT"),  # run_s 7500 ≥ 7200
        ("resources_used.walltime=7500", "UNKNOWN"),
    ],
)
def test_killed_and_limit_states(extra: str, state: str) -> None:
    line = (
        "05/03/2024 12:00:00;E;9.p;ctime=1714730000 start=1714730100 exec_host=n/0 "
        f"end=1714737600 {extra}"
    )
    assert one(lines(line))["state"] == state


# --------------------------------------------------------------------------------------------
# data.md: TORQUE / PBS quirks seen in the real files (VSC KU Leuven 2016-06, NCAR, XDMoD)

VSC = "hpc-p-svcs-10.icts.hpc.kuleuven.be"
ROUTED = (
    f"06/01/2016 00:07:24;Q;20316339.{VSC};queue=qdef",
    f"06/01/2016 00:07:24;Q;20316339.{VSC};queue=q72h",
    f"06/01/2016 00:08:14;S;20316339.{VSC};user=vsc30282 group=vsc30282 account=lp_leuven_mg "
    "jobname=DyFe.sh queue=q72h ctime=1464732444 qtime=1464732444 etime=1464732444 "
    "start=1464732494 owner=vsc30282@hpcblade1-hev6.icts.hpc.kuleuven.be "
    "exec_host=r5i1n6/0-19+r5i1n7/0-19+r5i1n9/0-19+r5i1n10/0-19 Resource_List.mem=100gb "
    "Resource_List.neednodes=4:ppn=20 Resource_List.nodect=4 Resource_List.nodes=4:ppn=20 "
    "Resource_List.partition=thinking Resource_List.pmem=2500mb Resource_List.walltime=72:00:00 ",
    f"06/01/2016 00:09:15;E;20316339.{VSC};user=vsc30282 group=vsc30282 account=lp_leuven_mg "
    "jobname=DyFe.sh queue=q72h ctime=1464732444 qtime=1464732444 etime=1464732444 "
    "start=1464732494 owner=vsc30282@hpcblade1-hev6.icts.hpc.kuleuven.be "
    "exec_host=r5i1n6/0-19+r5i1n7/0-19+r5i1n9/0-19+r5i1n10/0-19 Resource_List.mem=100gb "
    "Resource_List.neednodes=4:ppn=20 Resource_List.nodect=4 Resource_List.nodes=4:ppn=20 "
    "Resource_List.partition=thinking Resource_List.pmem=2500mb Resource_List.walltime=72:00:00 "
    "session=60619 total_execution_slots=80 unique_node_count=4 end=1464732555 Exit_status=0 "
    "resources_used.cput=38 resources_used.energy_used=0 resources_used.mem=21348kb "
    "resources_used.vmem=558364kb resources_used.walltime=58",
)


def test_routing_queue_double_q_is_one_job_in_the_later_queue() -> None:
    pending = one(lines(*ROUTED[:2]), tz="Europe/Brussels")
    assert (pending["state"], pending["queue"]) == ("PENDING", "q72h")
    assert pending["flags"] == ["NO_END_RECORD", "TIME_FROM_STAMP"]
    result = assemble(lines(*ROUTED))
    job = result.jobs.to_pylist()[0]
    assert result.jobs.num_rows == 1
    assert job == {
        **job,
        "job_key": "s:20316339@1464732444",
        "job_seq": 20316339,
        "user": "vsc30282",
        "group": "vsc30282",
        "account": "lp_leuven_mg",
        "queue": "q72h",
        "job_name": "DyFe.sh",
        "submit_time": t(1464732444),
        "start_time": t(1464732494),
        "end_time": t(1464732555),
        "wait_s": 50,
        "run_s": 61,
        "walltime_used_s": 58,
        "walltime_req_s": 72 * 3600,
        "cpu_time_s": 38.0,
        "nodes_req": 4,
        "cores_req": 80,
        "nodes_alloc": 4,
        "cores_alloc": 80,
        "exec_hosts": ["r5i1n6", "r5i1n7", "r5i1n9", "r5i1n10"],
        "mem_req_bytes": 100 * 1024**3,
        "mem_used_bytes": 21348 * 1024,
        "vmem_used_bytes": 558364 * 1024,
        "exit_code": 0,
        "state": "COMPLETED",
        "tz_offset_s": 7200,
        "src_line": 4,
        "flags": [],
    }
    assert result.tz_offset_s == 7200  # CEST
    # the Q records are placed with the offset their file's S and E records measured
    assert result.records.column("stamp_utc").to_pylist()[0] == t(1464732444)


DUPLICATE_END = (
    f"06/03/2016 16:31:57;E;20318149.{VSC};user=vsc31439 group=vsc31439 account=lp_biogenomics "
    "jobname=bwa_index queue=q24h ctime=1464961954 qtime=1464961954 etime=1464961954 "
    "start=1464962016 owner=vsc31439@hpcblade1-hev6.icts.hpc.kuleuven.be exec_host=r1i1n11/0 "
    "Resource_List.mem=20gb Resource_List.neednodes=1:ppn=1 Resource_List.nodect=1 "
    "Resource_List.nodes=1:ppn=1 Resource_List.partition=thinking Resource_List.pmem=2500mb "
    "Resource_List.walltime=12:00:00 session=59038 total_execution_slots=1 unique_node_count=1 "
    "end=1464964317 Exit_status=0 resources_used.cput=2151 resources_used.energy_used=0 "
    "resources_used.mem=3461024kb resources_used.vmem=3683008kb resources_used.walltime=2249",
    f"06/03/2016 16:31:57;E;20318149.{VSC};user=vsc31439 group=vsc31439 account=lp_biogenomics "
    "jobname=bwa_index ctime=1464961954 qtime=1464961954 etime=1464961954 start=1464962016 "
    "owner=vsc31439@hpcblade1-hev6.icts.hpc.kuleuven.be exec_host=r1i1n11/0 "
    "Resource_List.mem=20gb Resource_List.neednodes=1:ppn=1 Resource_List.nodect=1 "
    "Resource_List.nodes=1:ppn=1 Resource_List.walltime=12:00:00 session=59038 "
    "total_execution_slots=1 unique_node_count=1 end=1464964317 Exit_status=0 "
    "resources_used.cput=2151 resources_used.energy_used=0 resources_used.mem=3461024kb "
    "resources_used.vmem=3683008kb resources_used.walltime=2249",
)


def test_duplicate_end_in_the_same_second_is_one_attempt() -> None:
    job = one(lines(*DUPLICATE_END))
    assert (job["attempt"], job["n_attempts"], job["state"]) == (0, 1, "COMPLETED")
    assert job["queue"] == "q24h"  # the second E lacks queue=: merged, first non-empty wins
    assert job["run_s"] == 2301
    assert job["flags"] == ["DUPLICATE_END"]
    assert job["src_line"] == 1


def test_duplicate_end_merges_attributes_the_first_lacks() -> None:
    first, second = DUPLICATE_END
    job = one(lines(second, first))
    assert job["queue"] == "q24h"
    assert job["src_line"] == 1


# a start storm ended by a delete; the E has a start, no exec_host and Exit_status=-3
S_STORM = (
    f"06/04/2016 10:34:22;Q;20318407.{VSC};queue=qdef",
    f"06/04/2016 10:34:22;Q;20318407.{VSC};queue=q72h",
    f"06/04/2016 10:35:39;S;20318407.{VSC};user=vsc30532 group=vsc30532 account=lp_3E110810 "
    "jobname=test3_1.88.shell queue=q72h ctime=1465029262 qtime=1465029262 etime=1465029262 "
    "start=1465029339 exec_host=r11i2n4/0-23+r11i2n5/0-23 Resource_List.nodes=8:ppn=24:haswell "
    "Resource_List.walltime=72:00:00 ",
    f"06/04/2016 10:36:28;S;20318407.{VSC};user=vsc30532 group=vsc30532 account=lp_3E110810 "
    "jobname=test3_1.88.shell queue=q72h ctime=1465029262 qtime=1465029262 etime=1465029262 "
    "start=1465029388 exec_host=r11i2n4/0-23+r11i2n5/0-23 Resource_List.nodes=8:ppn=24:haswell "
    "Resource_List.walltime=72:00:00 ",
    f"06/04/2016 10:36:38;D;20318407.{VSC};requestor=vsc30532@hpcblade1-hev6.icts.hpc.kuleuven.be",
    f"06/04/2016 10:36:38;E;20318407.{VSC};user=vsc30532 group=vsc30532 account=lp_3E110810 "
    "jobname=test3_1.88.shell queue=q72h ctime=1465029262 qtime=1465029262 etime=1465029262 "
    "start=1465029388 owner=vsc30532@hpcblade1-hev6.icts.hpc.kuleuven.be "
    "Resource_List.feature=mem128 Resource_List.mem=15000mb "
    "Resource_List.neednodes=8:ppn=24:haswell "
    "Resource_List.nodect=8 Resource_List.nodes=8:ppn=24:haswell Resource_List.partition=thinking "
    "Resource_List.pmem=2500mb Resource_List.vmem=128000mb Resource_List.walltime=72:00:00 "
    "session=0 end=1465029398 Exit_status=-3",
)


def test_start_storm_and_exec_failure_without_exec_host() -> None:
    job = one(lines(*S_STORM))
    assert job["start_time"] == t(1465029388)  # the last S before the E
    assert job["state"] == "FAILED"
    assert job["run_s"] is None
    assert job["exit_code"] == -3
    assert job["exec_hosts"] is None  # the E record says no host ran it
    assert job["flags"] == ["START_RETRIED", "DELETED_BY_USER", "EXEC_FAILED"]


def test_running_start_storm_takes_the_last_start() -> None:
    job = one(lines(*S_STORM[:4]))
    assert (job["state"], job["start_time"]) == ("RUNNING", t(1465029388))
    assert job["exec_hosts"] == ["r11i2n4", "r11i2n5"]
    # exec_host shows 48 slots of the 192 asked for
    assert job["flags"] == ["START_RETRIED", "NO_END_RECORD", "CORES_REQ_MISMATCH"]


DELETED_QUEUED = (
    f"06/01/2016 09:44:11;E;20316458.{VSC};user=vsc30061 group=vsc30061 "
    "jobname=run_ANT025_tk.sh.o20316457 queue=q1h ctime=1464766984 qtime=1464766984 "
    "etime=1464766984 start=0 owner=vsc30061@hpcblade1-hev7.icts.hpc.kuleuven.be "
    "Resource_List.neednodes=1:ppn=20 Resource_List.nodect=1 Resource_List.nodes=1:ppn=20 "
    "Resource_List.partition=thinking Resource_List.pmem=2500mb Resource_List.walltime=01:00:00 "
    "session=0 end=1464767051 Exit_status=0"
)


def test_end_record_of_a_job_deleted_before_start() -> None:
    job = one(lines(f"06/01/2016 09:44:11;D;20316458.{VSC};requestor=vsc30061@x", DELETED_QUEUED))
    assert job["state"] == "DELETED"
    assert (job["start_time"], job["run_s"], job["wait_s"]) == (None, None, None)
    assert job["end_time"] == t(1464767051)
    assert job["exit_code"] == 0  # kept as logged: it does not make the job COMPLETED
    assert (job["nodes_req"], job["cores_req"], job["mem_req_bytes"]) == (
        1,
        20,
        20 * 2500 * 1024**2,
    )
    assert job["flags"] == ["DELETED_BY_USER", "MEM_FROM_PMEM"]


NEVER_STARTED = (
    f"06/05/2016 01:40:28;E;20318525.{VSC};user=vsc30517 group=vsc30517 account=lp_leuven_mg "
    "jobname=Au7V2-iso28 queue=q7d ctime=1465083576 qtime=1465083576 etime=1465083576 start=0 "
    "owner=vsc30517@hpcblade1-hev6.icts.hpc.kuleuven.be exec_host=r1i2n4/0-19 "
    "Resource_List.neednodes=1:ppn=20 Resource_List.nodect=1 Resource_List.nodes=1:ppn=20 "
    "Resource_List.partition=thinking Resource_List.pmem=3gb Resource_List.walltime=168:00:00 "
    "session=0 total_execution_slots=20 unique_node_count=1 end=1465083628 Exit_status=-1 "
    "resources_used.cput=0 resources_used.energy_used=0 resources_used.mem=0kb "
    "resources_used.vmem=0kb resources_used.walltime=0"
)


def test_failed_to_start_with_exec_host_and_zero_usage() -> None:
    job = one(lines(NEVER_STARTED))
    assert job["state"] == "FAILED"
    assert (job["start_time"], job["run_s"]) == (None, None)
    assert job["exit_code"] == -1
    assert (job["nodes_alloc"], job["cores_alloc"]) == (1, 20)
    assert job["flags"] == ["NEVER_STARTED", "MEM_FROM_PMEM"]


def test_walltime_kill_logged_with_a_delete_by_root_is_a_timeout() -> None:
    job = one(
        lines(
            f"06/11/2016 23:32:34;D;20321850.{VSC};requestor=root@{VSC}",
            f"06/11/2016 23:32:39;E;20321850.{VSC};user=vsc31274 queue=q24h ctime=1465593709 "
            "start=1465593733 exec_host=r1i0n1/0-19 Resource_List.walltime=24:00:00 "
            "end=1465680759 Exit_status=-11 resources_used.walltime=87024",
        )
    )
    assert job["state"] == "TIMEOUT"
    assert "DELETED_BY_USER" in job["flags"]


def test_abort_record_ends_a_running_job() -> None:
    job = one(
        lines(
            f"06/09/2016 14:19:54;Q;20320312.{VSC};queue=q1h",
            f"06/09/2016 14:20:23;S;20320312.{VSC};user=u ctime=1465474794 start=1465474823 "
            "exec_host=r1i0n1/0",
            f"06/09/2016 14:32:03;A;20320312.{VSC};",
        )
    )
    assert (job["state"], job["end_record_type"], job["run_s"]) == ("FAILED", "A", 700)
    assert job["flags"] == ["ABORTED", "NO_END_RECORD", "TIME_FROM_STAMP"]


def test_garbage_job_ids_stay_in_records() -> None:
    # VSC 20160617 lines 1-2: an address logged in place of the job id
    result = assemble(
        lines(
            "06/17/2016 09:32:27;Q;0000000006db25b0;queue=q1h",
            "06/17/2016 09:32:27;Q;00007f1cc4d728c0;queue=q24h",
            "02/12/2018 00:00:00;L;license;floating license hour:0 day:0 month:2304 max:5184",
        )
    )
    assert result.jobs.num_rows == 0
    assert result.info["records_without_job"] == 3
    assert result.records.num_rows == 3


NCAR = (
    "02/12/2018 17:39:43;E;1048074.laadmin1.ib0.laramie.ucar.edu;user=matthews group=ncar "
    'account="SSSG0001" project=_pbs_project_default jobname=STDIN queue=regular ctime=1518482382 '
    "qtime=1518482382 etime=1518482382 start=1518482382 exec_host=r1i0n2/0*12 "
    'exec_vnode=(r1i0n2:ncpus=12) Resource_List.inception="hi steve" Resource_List.ncpus=12 '
    "Resource_List.nodect=1 Resource_List.place=scatter:exclhost Resource_List.select=1:ncpus=12 "
    "Resource_List.walltime=01:01:01 session=64507 end=1518482383 Exit_status=0 "
    "resources_used.cpupercent=0 resources_used.cput=00:00:00 resources_used.mem=10848kb "
    "resources_used.ncpus=12 resources_used.vmem=269048kb resources_used.walltime=00:00:01 "
    "run_count=1"
)


def test_pbspro_quoted_values_and_vnodes() -> None:
    job = one(lines(NCAR))
    assert job["account"] == "SSSG0001"
    assert (job["nodes_req"], job["cores_req"], job["gpus_req"]) == (1, 12, 0)
    assert (job["nodes_alloc"], job["cores_alloc"], job["gpus_alloc"]) == (1, 12, 0)
    assert (job["run_s"], job["walltime_used_s"], job["walltime_req_s"]) == (1, 1, 3661)
    assert job["tz_offset_s"] == -25200  # MST
    assert job["flags"] == []


XDMOD_GPU = (
    "01/26/2017 09:23:43;E;7904;user=ybsbu group=caste account=caste jobname=test-gpu-job-1 "
    "Exit_status=1 queue=gpu ctime=1485451423 start=1485451424 end=1485459831 "
    "Resource_List.nodes=1:ppn=28:gpus=1:default Resource_List.walltime=96:00:00 "
    "Resource_List.feature=gpu Resource_List.nodect=1 "
    "Resource_List.neednodes=1:ppn=28:gpus=1:default",
    "04/27/2020 23:59:13;E;10711;user=ybsbu group=caste account=caste jobname=test-gpu-job-2 "
    "Exit_status=0 queue=black ctime=1587912647 qtime=1587912647 etime=1587912647 "
    "start=1588046353 end=1588146353 exec_host=node0703/0-27 "
    "Resource_List.nodect=1:ppn=24:gpu=4:reqmem=128849018880:gpu resources_used.walltime=02:20:07 "
    "resources_used.mem=12.27M resources_used.vmem=295.56M",
)


def test_xdmod_minimal_and_odd_lines() -> None:
    minimal, odd = jobs(lines(*XDMOD_GPU))
    # no qtime, etime or exec_host; Exit_status before queue
    assert (minimal["state"], minimal["exit_code"], minimal["run_s"]) == ("FAILED", 1, 8407)
    assert (minimal["queue_time"], minimal["exec_hosts"], minimal["nodes_alloc"]) == (
        None,
        None,
        None,
    )
    assert (minimal["nodes_req"], minimal["cores_req"], minimal["gpus_req"]) == (1, 28, 1)
    # a nodes spec written into nodect; memory in an undocumented unit
    assert (odd["nodes_req"], odd["cores_req"], odd["gpus_req"]) == (1, 24, 4)
    assert (odd["nodes_alloc"], odd["cores_alloc"], odd["gpus_alloc"]) == (1, 28, 4)
    assert (odd["mem_used_bytes"], odd["vmem_used_bytes"]) == (12_866_027, 309_917_122)
    assert odd["flags"] == [
        "WALLTIME_MISMATCH",
        "UNIT_NONSTANDARD",
        "NODESPEC_FROM_NODECT",
        "GPUS_ALLOC_FROM_REQUEST",
        "CORES_REQ_MISMATCH",  # 28 slots in exec_host, ppn=24 asked
    ]


def test_job_id_with_and_without_server_suffix_is_one_job() -> None:
    job = one(lines(XDMOD_2009, XDMOD_2009.replace(";6.edge.ccr.buffalo.edu;", ";6;")))
    assert job["flags"] == ["DUPLICATE_END", "CORES_REQ_MISMATCH"]  # 4 slots of 32 asked
    assert job["job_id_raw"] == "6.edge.ccr.buffalo.edu"


# --------------------------------------------------------------------------------------------
# robustness, configuration, the two attempt paths


def test_unreadable_values_become_null_and_flagged() -> None:
    job = one(
        lines(
            "05/03/2024 12:00:00;E;1.p;user=u ctime=soon qtime=1714730000 start=1714730100 "
            "exec_host=n1/x end=1714737600 Exit_status=zero resources_used.walltime=long "
            "resources_used.mem=lots Resource_List.walltime=1:2:3:4:5 Resource_List.nodect=x "
            "exec_vnode=(n1:ncpus=y) total_execution_slots=two"
        )
    )
    assert job["submit_time"] is None
    assert job["exit_code"] is None
    assert (job["cores_alloc"], job["exec_hosts"], job["walltime_used_s"]) == (None, None, None)
    assert job["state"] == "UNKNOWN"
    assert job["flags"] == [
        "SUBMIT_UNKNOWN",
        "NO_EXIT_STATUS",
        "VALUE_UNREADABLE:Exit_status",
        "VALUE_UNREADABLE:Resource_List.nodect",
        "VALUE_UNREADABLE:Resource_List.walltime",
        "VALUE_UNREADABLE:ctime",
        "VALUE_UNREADABLE:exec_host",
        "VALUE_UNREADABLE:exec_vnode",
        "VALUE_UNREADABLE:resources_used.mem",
        "VALUE_UNREADABLE:resources_used.walltime",
        "VALUE_UNREADABLE:total_execution_slots",
    ]


def test_end_before_start_and_start_before_submit() -> None:
    job = one(
        lines(
            "05/03/2024 12:00:00;E;1.p;ctime=1714730200 start=1714730100 exec_host=n/0 "
            "end=1714730000 Exit_status=0"
        )
    )
    assert (job["run_s"], job["wait_s"]) == (None, -100)
    assert job["flags"] == ["END_BEFORE_START", "START_BEFORE_SUBMIT"]


def test_empty_records_give_empty_jobs() -> None:
    result = assemble_torque_jobs(RECORDS.empty_table())
    validate(result.jobs, JOBS)
    assert result.jobs.num_rows == 0
    assert result.tz_offset_s is None


def test_records_with_another_schema_are_refused() -> None:
    table = records(lines(REQUEUE[0]))
    with pytest.raises(SchemaError, match="attrs"):
        assemble_torque_jobs(table.drop_columns(["attrs"]))
    # stamp_utc is an output: any type, or none, is replaced
    without = assemble_torque_jobs(table.drop_columns(["stamp_utc"]))
    validate(without.records, RECORDS)
    assert without.records.column("stamp_utc").to_pylist() == [t(1714737600)]


def test_bad_configuration_raises() -> None:
    table = records(lines(REQUEUE[0]))
    with pytest.raises(ConfigError, match="time zone"):
        assemble_torque_jobs(table, tz="Mars/Olympus_Mons")
    with pytest.raises(ConfigError, match="unitless_memory"):
        assemble_torque_jobs(table, unitless_memory="furlongs")


def test_offsets_are_carried_forward_within_each_file() -> None:
    # CET file, then a CEST file: each stamp-only record takes its own file's offset
    winter = lines(
        "03/26/2016 12:00:00;S;1.s;ctime=1458990000 start=1458990000 exec_host=n/0",
        "03/26/2016 12:30:00;Q;2.s;queue=q",
    )
    summer = lines(
        "03/28/2016 11:00:00;Q;3.s;queue=q",
        "03/28/2016 12:00:00;S;4.s;ctime=1459159200 start=1459159200 exec_host=n/0",
    )
    result = assemble(winter, summer)
    stamps = result.records.column("stamp_utc").to_pylist()
    assert stamps[1] == dt.datetime(2016, 3, 26, 11, 30, tzinfo=UTC)  # CET, carried forward
    assert stamps[2] == dt.datetime(2016, 3, 28, 9, 0, tzinfo=UTC)  # CEST, carried backward
    assert result.info["offsets_seen"] == {"3600": 1, "7200": 1}


def test_zone_disagreeing_with_the_log_is_reported() -> None:
    result = assemble(lines(TORQUE_DOCS_S), tz="Europe/Brussels")
    assert result.info["zone_offset_mismatches"] == 1
    assert result.jobs.column("start_time").to_pylist() == [t(1118088366)]


_SHAPES = st.lists(
    st.sampled_from(["Q", "S", "E", "E0", "Edup", "D", "R", "A", "same", "reuse"]),
    min_size=1,
    max_size=8,
)


def _synthetic(shape: list[str]) -> bytes:
    """One job's records in the order ``shape`` gives (record kinds and a few variants)."""
    out: list[str] = []
    last_end = ""
    ctime = 1714730000
    for i, kind in enumerate(shape):
        stamp = f"05/03/2024 10:{i:02d}:00"
        start = 1714730400 + 60 * i
        if kind == "same" and out:
            out.append(out[-1])  # a byte-identical copy
        elif kind == "reuse":
            ctime += 86400  # the id comes back for another job
            out.append(f"{stamp};S;7.p;ctime={ctime} start={start} exec_host=m{i}/0")
        elif kind == "Q":
            out.append(f"{stamp};Q;7.p;queue=q{i}")
        elif kind == "S":
            out.append(f"{stamp};S;7.p;ctime={ctime} start={start} exec_host=n{i}/0")
        elif kind in ("E", "Edup"):
            times = last_end if kind == "Edup" and last_end else f"start={start - 30} end={start}"
            last_end = times
            out.append(f"{stamp};E;7.p;ctime={ctime} {times} exec_host=n{i}/0 Exit_status={i % 3}")
        elif kind == "E0":
            out.append(f"{stamp};E;7.p;ctime={ctime} start=0 end={start} Exit_status=0")
        else:
            out.append(f"{stamp};{kind if kind != 'same' else 'D'};7.p;requestor=x")
    return lines(*out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_SHAPES, min_size=1, max_size=4))
def test_vectorised_and_record_by_record_paths_agree(shapes: list[list[str]]) -> None:
    data = b"".join(
        _synthetic(shape).replace(b";7.p;", f";{i}.p;".encode()) for i, shape in enumerate(shapes)
    )
    table = records(data)
    fast = assemble_torque_jobs(table)
    try:
        _torque_jobs._FAST_PATH = False
        slow = assemble_torque_jobs(table)
    finally:
        _torque_jobs._FAST_PATH = True
    assert fast.jobs.equals(slow.jobs)
    assert fast.info["jobs_by_state"] == slow.info["jobs_by_state"]
    rows = fast.jobs.to_pylist()
    for row in rows:
        assert 0 <= row["attempt"] < row["n_attempts"]


# --------------------------------------------------------------------------------------------
# issue 16: conflicts between sources, files out of order, CRLF (synthetic; real copies in
# test_torque_damaged_copies.py)

CONFLICT = (
    "05/03/2024 12:00:00;E;300.pbs01;user=bob group=cms queue=grid ctime=1714730000 "
    "start=1714730100 exec_host=n1/0-7 total_execution_slots=4 unique_node_count=2 "
    "Resource_List.nodes=1:ppn=8 Resource_List.ncpus=1 end=1714737600 Exit_status=0"
)


def test_slot_counts_that_disagree_are_flagged_and_exec_host_kept() -> None:
    job = one(lines(CONFLICT))
    assert (job["cores_alloc"], job["nodes_alloc"], job["cores_req"]) == (8, 1, 8)
    assert {"CORES_CONFLICT", "NODES_CONFLICT", "CORES_REQ_CONFLICT"} <= set(job["flags"])
    assert "CORES_REQ_MISMATCH" not in job["flags"]
    agreeing = CONFLICT.replace("total_execution_slots=4", "total_execution_slots=8")
    agreeing = agreeing.replace("unique_node_count=2", "unique_node_count=1")
    agreeing = agreeing.replace("Resource_List.ncpus=1", "Resource_List.ncpus=8")
    assert one(lines(agreeing))["flags"] == []


def test_a_project_standing_in_for_the_account_is_flagged() -> None:
    line = CONFLICT.replace("user=bob", "user=bob project=climate")
    job = one(lines(line))
    assert job["account"] == "climate"
    assert "ACCOUNT_FROM_PROJECT" in job["flags"]


def test_files_out_of_order_assemble_as_in_order(tmp_path: Any) -> None:
    from gridtrace.logs import read_torque

    day1 = lines(
        "05/02/2024 23:00:00;Q;210.pbs01;queue=grid",
        "05/02/2024 23:59:00;S;210.pbs01;user=bob queue=grid ctime=1714690800 "
        "start=1714694340 exec_host=n5/0-1",
    )
    day2 = lines(
        "05/03/2024 01:00:00;E;210.pbs01;user=bob queue=grid ctime=1714690800 "
        "start=1714694340 exec_host=n5/0-1 end=1714698000 Exit_status=0",
    )
    (tmp_path / "accounting.1").write_bytes(day1)  # rotation: the larger number is older
    (tmp_path / "accounting").write_bytes(day2.replace(b"\n", b"\r\n"))
    newest_first = [tmp_path / "accounting", tmp_path / "accounting.1"]
    # named newest first: put back in the order of their stamps; a folder is listed oldest first
    for paths, moved in ((newest_first, 2), (tmp_path, 0)):
        result = read_torque(paths, site="s", tz="UTC")
        (job,) = result.jobs.to_pylist()
        assert (job["state"], job["run_s"], job["n_attempts"]) == ("COMPLETED", 3660, 1)
        assert result.info["files_reordered"] == moved
        assert [Path(f).name for f in result.files] == ["accounting.1", "accounting"]
        assert result.summary()["record_flags"] == {"CRLF": 1}
