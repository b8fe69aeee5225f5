"""The Batsim workload writer: a hand-checked file, its JSON structure, trace metadata, refusals."""

from __future__ import annotations

import datetime as dt
import json
import logging
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from gridtrace.errors import ConfigError
from gridtrace.logs import read_swf
from gridtrace.logs._batsim import write_batsim
from gridtrace.schema import JOBS, TRACE, conform, with_trace_metadata

UTC = dt.UTC


def _at(seconds: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, tz=UTC)


def _jobs(rows: list[dict[str, Any]]) -> pa.Table:
    base = {
        "site": "s",
        "source_format": "swf",
        "attempt": 0,
        "n_attempts": 1,
        "src_file": "f",
        "src_line": 1,
    }
    filled = [{**base, "job_key": f"s:{i}", "job_id_raw": str(i), **r} for i, r in enumerate(rows)]
    return conform(pa.Table.from_pylist(filled, schema=JOBS), "jobs")


def _job(job_id: str, submit: int, run: int | None, state: str = "COMPLETED", **more: Any) -> Any:
    start = submit + 10
    return {
        "job_id_raw": job_id,
        "submit_time": _at(submit),
        "start_time": None if run is None else _at(start),
        "end_time": None if run is None else _at(start + run),
        "run_s": run,
        "state": state,
        **more,
    }


def _trace(rows: list[dict[str, Any]], cores: int | None) -> pa.Table:
    table = pa.Table.from_pylist([{"interactive": False, **r} for r in rows], schema=TRACE)
    if cores is None:
        return table
    return with_trace_metadata(
        table, origin="2024-01-01T00:00:00Z", site="s", cores=cores, tau_s=900.0, provenance={}
    )


def _load(path: Any) -> Any:
    return json.loads(Path(path).read_text())


def test_hand_checked_three_jobs(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    jobs = _jobs(
        [
            _job("11", 1005, 60, "FAILED", cores_alloc=1),
            _job("10", 1000, 60, cores_alloc=2, walltime_req_s=120),
            _job("12", 1030, 30, cores_req=4, walltime_req_s=3600),  # no allocated count
            _job("13", 1001, None, "DELETED", cores_req=1),  # never ran: left out
        ]
    )
    with caplog.at_level(logging.WARNING, logger="gridtrace.logs._batsim"):
        path = write_batsim(jobs, tmp_path / "w.json", nb_res=4)
    assert "3 of 4 rows written as batsim" in caplog.text
    assert "1 left out (1 never ran or no run time)" in caplog.text
    assert (path.rows_written, path.rows_left_out) == (3, 1)
    assert dict(path.left_out) == {"never ran or no run time": 1}
    assert _load(path) == {
        "nb_res": 4,
        "jobs": [
            {"id": "10", "subtime": 0.0, "res": 2, "walltime": 120.0, "profile": "delay_60"},
            {"id": "11", "subtime": 5.0, "res": 1, "profile": "delay_60"},
            {"id": "12", "subtime": 30.0, "res": 4, "walltime": 3600.0, "profile": "delay_30"},
        ],
        "profiles": {
            "delay_60": {"type": "delay", "delay": 60.0},
            "delay_30": {"type": "delay", "delay": 30.0},
        },
    }


def test_json_structure(tmp_path: Path) -> None:
    jobs = _jobs([_job(str(i), 100 + i, 5 * (i % 3), cores_alloc=1 + i % 2) for i in range(9)])
    workload = _load(write_batsim(jobs, tmp_path / "w.json", nb_res=2))
    assert set(workload) == {"nb_res", "jobs", "profiles"}
    assert isinstance(workload["nb_res"], int)
    assert len(workload["jobs"]) == 9
    for job in workload["jobs"]:
        assert set(job) == {"id", "subtime", "res", "profile"}
        assert isinstance(job["id"], str)
        assert isinstance(job["subtime"], float)
        assert isinstance(job["res"], int)
        assert job["profile"] in workload["profiles"]
    subtimes = [job["subtime"] for job in workload["jobs"]]
    assert subtimes == sorted(subtimes)
    assert subtimes[0] == 0.0
    # Batsim aborts on a delay that is not positive: the three 0-s jobs get the minimum delay
    assert sorted(workload["profiles"]) == ["delay_0.5", "delay_10", "delay_5"]
    assert len({job["id"] for job in workload["jobs"]}) == 9


def _batsim_accepts(workload: dict[str, Any]) -> None:
    """Batsim's own input checks (src/profiles.cpp, src/jobs.cpp), restated."""
    assert isinstance(workload["nb_res"], int)
    assert workload["nb_res"] >= 1
    for profile in workload["profiles"].values():
        assert profile["type"] == "delay"
        assert isinstance(profile["delay"], float)
        assert profile["delay"] > 0
    ids = [job["id"] for job in workload["jobs"]]
    assert len(set(ids)) == len(ids)
    for job in workload["jobs"]:
        assert isinstance(job["subtime"], float)
        assert isinstance(job["res"], int)
        assert 0 <= job["res"] <= workload["nb_res"]
        assert job.get("walltime", -1) == -1 or job["walltime"] > 0
        assert job["profile"] in workload["profiles"]


def test_zero_run_times_and_walltimes_batsim_would_refuse(tmp_path: Path) -> None:
    jobs = _jobs(
        [
            _job("1", 0, 0, cores_alloc=1, walltime_req_s=60),  # ran under a second
            _job("2", 5, 30, cores_alloc=2, walltime_req_s=0),  # no limit asked
            _job("3", 9, 30, cores_alloc=2, walltime_req_s=10),  # overran its limit
            _job("4", 9, None, "DELETED", cores_req=1),  # never ran
            _job("5", 12, 7, cores_alloc=None, cores_req=None),  # no core count
        ]
    )
    result = write_batsim(jobs, tmp_path / "w.json", nb_res=4, min_delay=0.25)
    workload = _load(result)
    _batsim_accepts(workload)
    assert [job["id"] for job in workload["jobs"]] == ["1", "2", "3"]
    assert workload["profiles"][workload["jobs"][0]["profile"]]["delay"] == 0.25
    assert "walltime" not in workload["jobs"][1]
    assert workload["jobs"][2]["walltime"] == 10.0
    assert (result.rows_in, result.rows_written) == (5, 3)
    assert dict(result.left_out) == {"never ran or no run time": 1, "with no core count": 1}
    assert dict(result.adjusted) == {
        "delays raised to 0.25 s (run time 0: Batsim needs a positive delay)": 1,
        "walltimes not positive, left out (no limit)": 1,
        "kept with a walltime below the run time (Batsim kills them at the walltime)": 1,
    }
    assert "3 of 5 rows written as batsim" in result.describe()
    with pytest.raises(ConfigError, match="min_delay must be positive"):
        write_batsim(jobs, tmp_path / "w.json", nb_res=4, min_delay=0)


def test_nb_res_from_the_logs_header(tmp_path: Path) -> None:
    path = tmp_path / "log.swf"
    path.write_text(
        "; MaxNodes: 64\n; MaxProcs: 128\n1 0 1 10 4 -1 -1 4 -1 -1 1 1 1 -1 1 -1 -1 -1\n"
    )
    workload = _load(write_batsim(read_swf(path).jobs, tmp_path / "w.json"))
    assert workload["nb_res"] == 128


def test_nb_res_from_trace_metadata(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = [
        {"job_id": 2, "submit_s": 50.5, "run_s": 10.0, "cores": 8, "walltime_req_s": 60.0},
        {"job_id": 1, "submit_s": 20.0, "run_s": 1.5, "cores": 1, "walltime_req_s": None},
    ]
    workload = _load(write_batsim(_trace(rows, cores=8), tmp_path / "t.json"))
    assert workload["nb_res"] == 8
    assert workload["jobs"] == [
        {"id": "1", "subtime": 0.0, "res": 1, "profile": "delay_1.5"},
        {"id": "2", "subtime": 30.5, "res": 8, "walltime": 60.0, "profile": "delay_10"},
    ]
    assert workload["profiles"]["delay_1.5"] == {"type": "delay", "delay": 1.5}
    bigger = _load(write_batsim(_trace(rows, cores=8), tmp_path / "b.json", nb_res=16))
    assert bigger["nb_res"] == 16
    with pytest.raises(ConfigError, match="pass nb_res"):
        write_batsim(_trace(rows, cores=None), tmp_path / "x.json")


def test_refuses_jobs_bigger_than_the_platform(tmp_path: Path) -> None:
    jobs = _jobs([_job("a", 0, 5, cores_alloc=2), _job("big-7", 1, 5, cores_alloc=64)])
    with pytest.raises(ConfigError, match=r"job 'big-7' asks for 64 resources .* nb_res=32"):
        write_batsim(jobs, tmp_path / "w.json", nb_res=32)
    rows: list[dict[str, Any]] = [{"job_id": 5, "submit_s": 0.0, "run_s": 1.0, "cores": 9}]
    with pytest.raises(ConfigError, match="job '5' asks for 9"):
        write_batsim(_trace(rows, cores=8), tmp_path / "t.json")
    assert not (tmp_path / "w.json").exists()


def test_other_refusals(tmp_path: Path) -> None:
    jobs = _jobs([_job("a", 0, 5, cores_alloc=2)])
    with pytest.raises(ConfigError, match="profile must be one of delay"):
        write_batsim(jobs, tmp_path / "w.json", nb_res=4, profile="parallel")
    with pytest.raises(ConfigError, match="nb_res must be at least 1"):
        write_batsim(jobs, tmp_path / "w.json", nb_res=0)
    with pytest.raises(ConfigError, match="jobs table"):
        write_batsim(pa.table({"x": [1]}), tmp_path / "w.json", nb_res=4)


def test_repeated_ids_and_default_nb_res(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # two attempts of one job share job_id_raw; Batsim ids must be unique
    jobs = _jobs(
        [
            _job("7", 0, 5, "REQUEUED", cores_alloc=2),
            _job("7", 100, 5, cores_alloc=3),
            _job("7/1", 200, 5, cores_alloc=1),
        ]
    )
    with caplog.at_level(logging.WARNING, logger="gridtrace.logs._batsim"):
        workload = _load(write_batsim(jobs, tmp_path / "w.json"))
    assert "no log header states it; using the largest job, 3 cores" in caplog.text
    assert workload["nb_res"] == 3
    assert [job["id"] for job in workload["jobs"]] == ["7", "7/2", "7/1"]


@pytest.mark.realdata
def test_real_lublin_workload(real_data: Path, tmp_path: Path) -> None:
    result = read_swf(real_data / "swf" / "lublin_256.swf.gz")
    header = result.info["swf_header"]
    # this file's header names its size MaxNodes (it has no MaxProcs line)
    nb_res = header.get("MaxProcs", header.get("MaxNodes"))
    assert nb_res == 256
    workload = _load(write_batsim(result.jobs, tmp_path / "lublin.json", nb_res=nb_res))
    assert workload["nb_res"] == 256
    assert len(workload["jobs"]) == 10_000
    assert len({job["id"] for job in workload["jobs"]}) == 10_000
    assert workload["jobs"][0] == {"id": "1", "subtime": 0.0, "res": 16, "profile": "delay_12072"}
    assert workload["jobs"][1]["subtime"] == 5170.0 - 5094.0
    assert max(job["res"] for job in workload["jobs"]) <= 256
    delays = {p["delay"] for p in workload["profiles"].values()}
    assert len(delays) == len(workload["profiles"])
    run = result.jobs.column("run_s").to_pylist()
    assert delays == {float(r) for r in run if r is not None}
    assert None not in run
    assert max(delays) <= header["MaxRuntime"]
    _batsim_accepts(workload)
    # without nb_res the header's size is used (MaxNodes: this file has no MaxProcs)
    assert _load(write_batsim(result.jobs, tmp_path / "again.json"))["nb_res"] == 256
