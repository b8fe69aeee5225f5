from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from gridtrace.errors import ConfigError
from gridtrace.logs import build_trace, estimate_cores
from gridtrace.schema import conform, trace_metadata, validate

T0 = dt.datetime(2024, 5, 3, tzinfo=dt.UTC)


def _t(seconds: float | None) -> dt.datetime | None:
    return None if seconds is None else T0 + dt.timedelta(seconds=seconds)


def _job(key: str, submit: float, start: float | None, end: float | None, **kw: object) -> dict:
    row = {
        "site": "s",
        "source_format": "torque",
        "job_key": key,
        "job_id_raw": key,
        "job_seq": int(key),
        "attempt": 0,
        "n_attempts": 1,
        "submit_time": _t(submit),
        "queue_time": None,
        "start_time": _t(start),
        "end_time": _t(end),
        "run_s": None if start is None or end is None else int(end - start),
        "cores_alloc": 1,
        "exec_hosts": ["n1"],
        "state": "COMPLETED",
        "src_file": "f",
        "src_line": 1,
        "flags": [],
        "vo": "atlas",
    }
    row.update(kw)
    return row


def _jobs(rows: list[dict]) -> pa.Table:
    return conform(pa.Table.from_pylist(rows), "jobs")


def test_only_attempts_that_ran_enter_and_monitoring_is_excluded() -> None:
    jobs = _jobs(
        [
            _job("1", 0, 10, 910),  # 900 s: interactive (run <= τ)
            _job("2", 5, 20, 1021),  # 1001 s: batch
            _job("3", 6, None, None, state="DELETED"),
            _job("4", 7, 0, 0, run_s=None, state="FAILED", flags=["NEVER_STARTED"]),
            _job("5", 8, 30, 90, flags=["MONITORING"], vo="ops"),
        ]
    )
    trace = validate(build_trace(jobs, cores=4), "trace")
    assert trace.column("run_s").to_pylist() == [900.0, 1001.0]
    assert trace.column("interactive").to_pylist() == [True, False]
    assert trace.column("submit_s").to_pylist() == [0.0, 5.0]
    assert trace.column("wait_s").to_pylist() == [10.0, 15.0]
    meta = trace_metadata(trace)
    assert meta["cores"] == 4
    assert meta["tau_s"] == 900.0
    assert meta["origin"] == "2024-05-03T00:00:00+00:00"
    assert meta["provenance"]["monitoring_jobs_excluded"] == 1
    kept = build_trace(jobs, cores=4, exclude_monitoring=False)
    assert kept.num_rows == 3


def test_requeued_attempt_is_submitted_at_its_queue_time() -> None:
    jobs = _jobs(
        [
            _job("7", 0, 100, 200, state="REQUEUED", n_attempts=2),
            _job("7", 0, 400, 500, attempt=1, n_attempts=2, queue_time=_t(300)),
        ]
    )
    trace = build_trace(jobs, cores=1)
    assert trace.column("submit_s").to_pylist() == [0.0, 300.0]
    assert trace.column("wait_s").to_pylist() == [100.0, 100.0]


def test_cores_are_estimated_from_peak_use_per_host() -> None:
    jobs = _jobs(
        [
            _job("1", 0, 0, 100, cores_alloc=4, exec_hosts=["a"]),
            _job("2", 0, 50, 150, cores_alloc=2, exec_hosts=["a"]),  # a peaks at 6
            _job("3", 0, 0, 100, cores_alloc=8, exec_hosts=["b", "c"]),  # 4 each
            _job("4", 0, 100, 200, cores_alloc=4, exec_hosts=["b"]),  # b: ends free first
        ]
    )
    cores, method = estimate_cores(jobs)
    assert cores == 6 + 4 + 4
    assert "hosts" in method
    assert trace_metadata(build_trace(jobs))["cores"] == 14


def test_nothing_ran_is_an_error() -> None:
    with pytest.raises(ConfigError, match="no job"):
        build_trace(_jobs([_job("3", 0, None, None, state="DELETED")]))


def test_trace_is_sorted_by_submit_then_id() -> None:
    jobs = _jobs([_job("9", 50, 60, 70), _job("2", 50, 55, 65), _job("5", 10, 20, 30)])
    trace = build_trace(jobs, cores=2)
    assert trace.column("submit_s").to_pylist() == [0.0, 40.0, 40.0]
    assert trace.column("run_s").to_pylist() == [10.0, 10.0, 10.0]
    assert trace.column("job_id").to_pylist() == [0, 1, 2]
