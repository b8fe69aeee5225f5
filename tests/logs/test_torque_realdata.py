"""TORQUE / PBS Pro real logs under GRIDTRACE_REAL_DATA/torque/: counts and hand-checked jobs.

The logs (shared/reference/data.md): the KU Leuven VSC month (June 2016, TORQUE 5/6, 30 gzip daily
files, CEST), one NCAR laramie day (PBS Pro, MST) and the XDMoD shredder fixture (9 E lines of
TORQUE 2.x/5/6 and PBS Pro). Each file is tokenised with the reference tokeniser, then all are
assembled at once.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from gridtrace.logs import expand_log_paths, read_log_bytes
from gridtrace.logs._torque_jobs import TorqueAssembly, assemble_torque_jobs
from gridtrace.logs._torque_lines import tokenize_torque_reference
from gridtrace.schema import JOBS, RECORDS, validate

pytestmark = pytest.mark.realdata

VSC = "vsc-kuleuven-2016-06"
NCAR = "ncar-laramie-pbspro-20180212"
XDMOD = "xdmod-shredder-pbs-fixture.log"


@cache
def _load(path: str) -> tuple[TorqueAssembly, int, int]:
    """Assemble one log (a file or a folder of daily files): result, lines read, quarantined."""
    parts = [
        tokenize_torque_reference(read_log_bytes(f), src_file=f.name, site="site")
        for f in expand_log_paths(path)
    ]
    records = pa.concat_tables([p.records for p in parts])
    result = assemble_torque_jobs(records)
    validate(result.jobs, JOBS)
    validate(result.records, RECORDS)
    return result, sum(p.lines_read for p in parts), sum(p.quarantine.num_rows for p in parts)


def load(real_data: Path, name: str) -> tuple[TorqueAssembly, int, int]:
    path = real_data / "torque" / name
    if not path.exists():
        pytest.skip(f"{path} is missing")
    return _load(str(path))


def t(epoch: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(epoch, dt.UTC)


def job_of(result: TorqueAssembly, job_id: str) -> list[dict[str, Any]]:
    return [j for j in result.jobs.to_pylist() if j["job_id_raw"] == job_id]


def end_attrs(result: TorqueAssembly) -> list[dict[str, str]]:
    records = result.records.filter(pc.equal(result.records["record_type"], "E"))
    return [dict(pairs) for pairs in records.column("attrs").to_pylist()]


# --------------------------------------------------------------------------------------------
# VSC KU Leuven, June 2016


def test_vsc_lines_and_record_types(real_data: Path) -> None:
    result, lines_read, quarantined = load(real_data, VSC)
    assert lines_read == 58_904
    assert quarantined == 0
    types = Counter(result.records.column("record_type").to_pylist())
    assert types == {"Q": 21_358, "S": 24_517, "E": 11_157, "D": 1_870, "A": 2}


def test_vsc_end_records_and_jobs(real_data: Path) -> None:
    result, _, _ = load(real_data, VSC)
    ends = result.records.filter(pc.equal(result.records["record_type"], "E"))
    ended_ids = set(ends.column("job_id_raw").to_pylist())
    assert len(ended_ids) == 11_154
    jobs = result.jobs.to_pylist()
    closed_by_e = [j for j in jobs if j["end_record_type"] == "E"]
    assert len(closed_by_e) == 11_154  # one attempt per id: nobody was requeued this month
    assert {j["job_id_raw"] for j in closed_by_e} == ended_ids
    assert all(j["n_attempts"] == 1 for j in jobs)
    # ids logged without E: 76 only queued, 167 still running at the end, 4 ended by D or A
    states = Counter(j["state"] for j in jobs)
    assert states["PENDING"] == 74  # 76 ids minus 2 garbage ids (pointers) kept as records only
    assert states["RUNNING"] == 167
    assert len(jobs) == 11_399
    assert result.info["records_without_job"] == 2


def test_vsc_duplicate_end_records(real_data: Path) -> None:
    result, _, _ = load(real_data, VSC)
    merged = [j for j in result.jobs.to_pylist() if "DUPLICATE_END" in j["flags"]]
    assert sorted(j["job_seq"] for j in merged) == [20318149, 20324615, 20326789]
    assert all((j["attempt"], j["n_attempts"], j["state"]) == (0, 1, "COMPLETED") for j in merged)
    assert all(j["queue"] is not None for j in merged)  # the second E lacks queue=
    assert result.info["duplicate_end_records"] == 3
    # the server also logged 4 D lines twice, byte for byte (20318716 twice, 20323902, 20324259)
    assert result.info["duplicate_lines"] == 4


def test_vsc_end_records_for_jobs_that_never_ran(real_data: Path) -> None:
    result, _, _ = load(real_data, VSC)
    attrs = end_attrs(result)
    deleted = [a for a in attrs if a.get("start", "0") == "0" and "exec_host" not in a]
    not_started = [
        a
        for a in attrs
        if a.get("start") == "0"
        and "exec_host" in a
        and a.get("Exit_status") == "-1"
        and a.get("resources_used.walltime") == "0"
        and a.get("resources_used.cput") == "0"
    ]
    exec_failed = [
        a
        for a in attrs
        if a.get("start", "0") != "0" and "exec_host" not in a and a.get("Exit_status") == "-3"
    ]
    assert (len(deleted), len(not_started), len(exec_failed)) == (1_106, 794, 56)
    jobs = [j for j in result.jobs.to_pylist() if j["end_record_type"] == "E"]

    def with_flag(flag: str) -> list[dict[str, Any]]:
        return [j for j in jobs if flag in j["flags"]]

    deleted_jobs = [j for j in jobs if j["state"] == "DELETED"]
    assert len(deleted_jobs) == 1_106
    assert all(j["start_time"] is None and j["run_s"] is None for j in deleted_jobs)
    never = with_flag("NEVER_STARTED")
    assert len(never) == 794
    assert all((j["state"], j["exit_code"], j["run_s"]) == ("FAILED", -1, None) for j in never)
    failed = with_flag("EXEC_FAILED")
    assert len(failed) == 56
    assert all((j["state"], j["exit_code"], j["run_s"]) == ("FAILED", -3, None) for j in failed)
    assert all(j["start_time"] is not None for j in failed)


def test_vsc_time_zone_is_cest(real_data: Path) -> None:
    result, _, _ = load(real_data, VSC)
    assert result.tz_offset_s == 7200
    assert result.info["tz_source"] == "inferred"
    assert result.info["offsets_seen"] == {"7200": 11_157 + 24_517}
    assert result.info["dst"] is False
    assert result.jobs.column("tz_offset_s").unique().to_pylist() == [7200]
    assert result.records.column("stamp_utc").null_count == 0


def test_vsc_exit_status_mapping(real_data: Path) -> None:
    result, _, _ = load(real_data, VSC)
    jobs = [j for j in result.jobs.to_pylist() if j["end_record_type"] == "E"]
    statuses = Counter(j["exit_code"] for j in jobs if j["exit_code"] < 0)
    # data.md counts E lines (−1 ×797, −3 ×58); three of those lines are duplicate ends
    assert statuses == {-1: 797, -11: 443, -3: 58, -10: 1}
    assert sum(1 for j in jobs if j["exit_code"] >= 256) == 820
    timeouts = [j for j in jobs if j["exit_code"] == -11]
    assert all(j["state"] == "TIMEOUT" for j in timeouts)  # even when root logged a D first
    # every job that ran has its cores from exec_host, as the server counted them
    ran = [j for j in jobs if j["exec_hosts"]]
    assert all(j["cores_alloc"] and j["nodes_alloc"] == len(j["exec_hosts"]) for j in ran)


def test_vsc_jobs_field_by_field(real_data: Path) -> None:
    result, _, _ = load(real_data, VSC)
    server = "hpc-p-svcs-10.icts.hpc.kuleuven.be"

    # 20160601, a multi-node job behind the routing queue:
    # 06/01/2016 00:07:24;Q;20316339.hpc-p-svcs-10.icts.hpc.kuleuven.be;queue=qdef
    # 06/01/2016 00:07:24;Q;20316339.hpc-p-svcs-10.icts.hpc.kuleuven.be;queue=q72h
    # 06/01/2016 00:08:14;S;20316339...;user=vsc30282 group=vsc30282 account=lp_leuven_mg
    #   jobname=DyFe.sh queue=q72h ctime=1464732444 qtime=1464732444 etime=1464732444
    #   start=1464732494 owner=vsc30282@hpcblade1-hev6.icts.hpc.kuleuven.be
    #   exec_host=r5i1n6/0-19+r5i1n7/0-19+r5i1n9/0-19+r5i1n10/0-19 Resource_List.mem=100gb
    #   Resource_List.neednodes=4:ppn=20 Resource_List.nodect=4 Resource_List.nodes=4:ppn=20
    #   Resource_List.partition=thinking Resource_List.pmem=2500mb Resource_List.walltime=72:00:00
    # 06/01/2016 00:09:15;E;20316339...;(the S attributes) session=60619
    #   total_execution_slots=80 unique_node_count=4 end=1464732555 Exit_status=0
    #   resources_used.cput=38 resources_used.energy_used=0 resources_used.mem=21348kb
    #   resources_used.vmem=558364kb resources_used.walltime=58
    [job] = job_of(result, f"20316339.{server}")
    assert job == {
        **job,
        "job_key": "site:20316339@1464732444",
        "job_seq": 20316339,
        "array_index": None,
        "attempt": 0,
        "n_attempts": 1,
        "user": "vsc30282",
        "group": "vsc30282",
        "account": "lp_leuven_mg",
        "queue": "q72h",
        "job_name": "DyFe.sh",
        "submit_time": t(1464732444),
        "queue_time": t(1464732444),
        "eligible_time": t(1464732444),
        "start_time": t(1464732494),
        "end_time": t(1464732555),
        "wait_s": 50,
        "run_s": 61,
        "walltime_used_s": 58,
        "walltime_req_s": 259_200,
        "cpu_time_s": 38.0,
        "nodes_req": 4,
        "cores_req": 80,
        "gpus_req": 0,
        "nodes_alloc": 4,
        "cores_alloc": 80,
        "gpus_alloc": None,
        "exec_hosts": ["r5i1n6", "r5i1n7", "r5i1n9", "r5i1n10"],
        "mem_req_bytes": 100 * 1024**3,
        "mem_used_bytes": 21_348 * 1024,
        "vmem_used_bytes": 558_364 * 1024,
        "exit_code": 0,
        "exit_signal": None,
        "state": "COMPLETED",
        "end_record_type": "E",
        "tz_offset_s": 7200,
        "src_file": "20160601.gz",
        "flags": [],
    }

    # 20160601, killed at its walltime limit (submitted in May: no Q or S in the log):
    # 06/01/2016 01:25:12;E;20316290.hpc-p-svcs-10.icts.hpc.kuleuven.be;user=vsc31552
    #   group=vsc31552 jobname=trim_batch queue=q24h ctime=1464720871 qtime=1464720871
    #   etime=1464720871 start=1464720906 owner=vsc31552@hpcblade1-hev6.icts.hpc.kuleuven.be
    #   exec_host=r1i0n1/0-19 Resource_List.neednodes=1:ppn=20 Resource_List.nodect=1
    #   Resource_List.nodes=1:ppn=20 Resource_List.partition=thinking Resource_List.pmem=2500mb
    #   Resource_List.walltime=04:30:00 session=47118 total_execution_slots=20
    #   unique_node_count=1 end=1464737112 Exit_status=-11 resources_used.cput=25256
    #   resources_used.energy_used=0 resources_used.mem=5891356kb resources_used.vmem=20755412kb
    #   resources_used.walltime=16203
    [job] = job_of(result, f"20316290.{server}")
    assert job == {
        **job,
        "user": "vsc31552",
        "account": None,
        "queue": "q24h",
        "job_name": "trim_batch",
        "submit_time": t(1464720871),
        "start_time": t(1464720906),
        "end_time": t(1464737112),
        "wait_s": 35,
        "run_s": 16_206,
        "walltime_used_s": 16_203,
        "walltime_req_s": 16_200,
        "cpu_time_s": 25_256.0,
        "nodes_req": 1,
        "cores_req": 20,
        "cores_alloc": 20,
        "exec_hosts": ["r1i0n1"],
        "mem_req_bytes": 20 * 2500 * 1024**2,
        "mem_used_bytes": 5_891_356 * 1024,
        "vmem_used_bytes": 20_755_412 * 1024,
        "exit_code": -11,
        "exit_signal": None,
        "state": "TIMEOUT",
        "flags": ["MEM_FROM_PMEM"],
    }

    # 20160601, deleted by its owner after five days of running:
    # 06/01/2016 08:20:28;D;20313793.hpc-p-svcs-10.icts.hpc.kuleuven.be;
    #   requestor=vsc30517@hpcblade1-hev6.icts.hpc.kuleuven.be
    # 06/01/2016 08:20:30;E;20313793.hpc-p-svcs-10.icts.hpc.kuleuven.be;user=vsc30517
    #   group=vsc30517 account=lp_leuven_nc jobname=B46K-17.com queue=q7d ctime=1464332149
    #   qtime=1464332149 etime=1464332149 start=1464332171
    #   owner=vsc30517@hpcblade1-hev6.icts.hpc.kuleuven.be exec_host=r5i1n12/0-19
    #   Resource_List.neednodes=1:ppn=20 Resource_List.nodect=1 Resource_List.nodes=1:ppn=20
    #   Resource_List.partition=thinking Resource_List.pmem=1gb Resource_List.walltime=168:00:00
    #   session=43220 total_execution_slots=20 unique_node_count=1 end=1464762030
    #   Exit_status=271 resources_used.cput=8577247 resources_used.energy_used=0
    #   resources_used.mem=5232216kb resources_used.vmem=8234760kb resources_used.walltime=429857
    [job] = job_of(result, f"20313793.{server}")
    assert job == {
        **job,
        "account": "lp_leuven_nc",
        "queue": "q7d",
        "start_time": t(1464332171),
        "end_time": t(1464762030),
        "run_s": 429_859,
        "walltime_used_s": 429_857,
        "walltime_req_s": 604_800,
        "cpu_time_s": 8_577_247.0,
        "cores_alloc": 20,
        "mem_req_bytes": 20 * 1024**3,
        "exit_code": 271,
        "exit_signal": 15,
        "state": "CANCELLED",
        "flags": ["DELETED_BY_USER", "MEM_FROM_PMEM"],
    }

    # 20160605, resources assigned but never started:
    # 06/05/2016 01:40:28;E;20318525.hpc-p-svcs-10.icts.hpc.kuleuven.be;user=vsc30517
    #   group=vsc30517 account=lp_leuven_mg jobname=Au7V2-iso28 queue=q7d ctime=1465083576
    #   qtime=1465083576 etime=1465083576 start=0 owner=... exec_host=r1i2n4/0-19
    #   ... Resource_List.pmem=3gb Resource_List.walltime=168:00:00 session=0
    #   total_execution_slots=20 unique_node_count=1 end=1465083628 Exit_status=-1
    #   resources_used.cput=0 resources_used.energy_used=0 resources_used.mem=0kb
    #   resources_used.vmem=0kb resources_used.walltime=0
    [job] = job_of(result, f"20318525.{server}")
    assert job == {
        **job,
        "start_time": None,
        "end_time": t(1465083628),
        "wait_s": None,
        "run_s": None,
        "walltime_used_s": 0,
        "cores_alloc": 20,
        "mem_used_bytes": 0,
        "exit_code": -1,
        "state": "FAILED",
        "flags": ["NEVER_STARTED", "MEM_FROM_PMEM"],
    }


# --------------------------------------------------------------------------------------------
# NCAR laramie, PBS Pro, 2018-02-12


def test_ncar_lines_and_jobs(real_data: Path) -> None:
    result, lines_read, quarantined = load(real_data, NCAR)
    assert (lines_read, quarantined) == (132, 0)
    types = Counter(result.records.column("record_type").to_pylist())
    assert types == {"L": 19, "Q": 43, "S": 34, "E": 33, "D": 3}
    assert result.tz_offset_s == -25200  # MST
    assert result.info["records_without_job"] == 19  # the licence records
    states = Counter(result.jobs.column("state").to_pylist())
    assert states == {"COMPLETED": 32, "PENDING": 7, "DELETED": 2, "CANCELLED": 1, "RUNNING": 1}

    # 02/12/2018 11:29:18;D;1048042.laadmin1.ib0.laramie.ucar.edu;
    #   requestor=engel@laramie1.ib0.laramie.ucar.edu
    # 02/12/2018 11:29:35;E;1048042.laadmin1.ib0.laramie.ucar.edu;user=engel group=ncar
    #   account="SSSG0001" project=_pbs_project_default jobname=zhpt02.2 queue=economy
    #   ctime=1518447437 qtime=1518447437 etime=1518460020 start=1518460020
    #   exec_host=r1i0n0/0*36+r1i0n1/0*36 exec_vnode=(r1i0n0:ncpus=36)+(r1i0n1:ncpus=36)
    #   Resource_List.mpiprocs=4 Resource_List.ncpus=72 Resource_List.nodect=2
    #   Resource_List.place=scatter:exclhost
    #   Resource_List.select=2:ncpus=36:mpiprocs=2:ompthreads=18
    #   Resource_List.walltime=01:00:00 session=37135 end=1518460175 Exit_status=143
    #   resources_used.cpupercent=4626 resources_used.cput=01:44:17 resources_used.mem=26867052kb
    #   resources_used.ncpus=72 resources_used.vmem=150433672kb resources_used.walltime=00:02:35
    #   run_count=1
    [job] = job_of(result, "1048042.laadmin1.ib0.laramie.ucar.edu")
    assert job == {
        **job,
        "account": "SSSG0001",
        "queue": "economy",
        "job_name": "zhpt02.2",
        "submit_time": t(1518447437),
        "eligible_time": t(1518460020),
        "start_time": t(1518460020),
        "end_time": t(1518460175),
        "wait_s": 12_583,
        "run_s": 155,
        "walltime_used_s": 155,
        "walltime_req_s": 3600,
        "cpu_time_s": 6257.0,
        "nodes_req": 2,
        "cores_req": 72,
        "gpus_req": 0,
        "nodes_alloc": 2,
        "cores_alloc": 72,
        "gpus_alloc": 0,
        "exec_hosts": ["r1i0n0", "r1i0n1"],
        "mem_used_bytes": 26_867_052 * 1024,
        "exit_code": 143,
        "exit_signal": 15,
        "state": "CANCELLED",
        "tz_offset_s": -25200,
        "flags": ["DELETED_BY_USER", "SIGNAL_INFERRED"],
    }


# --------------------------------------------------------------------------------------------
# XDMoD shredder fixture


def test_xdmod_fixture_resources(real_data: Path) -> None:
    result, lines_read, quarantined = load(real_data, XDMOD)
    assert (lines_read, quarantined) == (9, 0)
    assert result.records.column("record_type").to_pylist() == ["E"] * 9
    table = {
        j["job_id_raw"]: (
            j["nodes_alloc"],
            j["cores_alloc"],
            j["gpus_alloc"],
            j["nodes_req"],
            j["cores_req"],
            j["mem_req_bytes"],
            j["mem_used_bytes"],
            j["state"],
        )
        for j in result.jobs.to_pylist()
    }
    # 8 jobs: job 6 is logged twice, once as 6.edge.ccr.buffalo.edu and once as 6, with the
    # same start and end, so it is one attempt (DUPLICATE_END)
    assert table == {
        "6.edge.ccr.buffalo.edu": (4, 32, None, 4, 32, None, 15_240 * 1024, "COMPLETED"),
        "6464684.anonhost": (1, 4, None, 1, 4, 1993 * 1024**2, 167_864 * 1024, "FAILED"),
        "2994.pbs": (5, 65, 0, 5, 65, None, 664 * 1024, "COMPLETED"),
        # exec_host=c1/0-3+c2/0-7 Resource_List.ncpus=12 Resource_List.nodect=2
        "2995.pbs": (2, 12, None, 2, 12, None, 664 * 1024, "COMPLETED"),
        "7904": (None, None, None, 1, 28, None, None, "FAILED"),
        "10711": (1, 28, 4, 1, 24, None, 12_866_027, "COMPLETED"),
        "10712": (1, 28, 2, 1, 28, None, None, "COMPLETED"),
        # exec_vnode=([hostname_2][1]:...:ngpus=2:ncpus=24+[hostname_2][0]:ngpus=2:ncpus=24)
        # Exit_status=271 after resources_used.walltime=10:01:06 of Resource_List.walltime=10:00:00
        "3073070.[hostname_1]": (1, 48, 4, 1, 48, 185_547 * 1024**2, 13_145_236 * 1024, "TIMEOUT"),
    }
    flags = {j["job_id_raw"]: j["flags"] for j in result.jobs.to_pylist()}
    assert flags["6.edge.ccr.buffalo.edu"] == ["DUPLICATE_END"]
    assert "UNIT_NONSTANDARD" in flags["10711"]  # resources_used.mem=12.27M
    assert "NODESPEC_FROM_NODECT" in flags["10711"]
