"""The pool of one span: hosts, peak cores in use on saturated days, the log header."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pytest

from gridtrace.errors import ConfigError
from gridtrace.logs._swf import with_log_headers  # the readers attach headers this way
from gridtrace.schema import conform, with_trace_metadata
from gridtrace.segment import PoolEstimate, pool_during, trace_pool

T0 = pd.Timestamp("2020-01-01", tz="UTC")
H = 3600.0
DAY = 86_400.0


def jobs_table(rows: list[dict[str, object]]) -> pa.Table:
    """A ``jobs`` table from (submit, wait, run, cores, hosts) in seconds from T0."""
    n = len(rows)

    def stamp(x: object) -> pd.Timestamp | None:
        return None if x is None else T0 + pd.Timedelta(seconds=float(x))  # type: ignore[arg-type]

    submit = [float(r["submit"]) for r in rows]  # type: ignore[arg-type]
    wait = [r.get("wait") for r in rows]
    run = [float(r["run"]) for r in rows]  # type: ignore[arg-type]
    start = [None if w is None else s + float(w) for s, w in zip(submit, wait, strict=True)]  # type: ignore[arg-type]
    end = [None if b is None else b + r for b, r in zip(start, run, strict=True)]
    table = pa.table(
        {
            "site": ["s"] * n,
            "source_format": ["swf"] * n,
            "job_key": [str(i) for i in range(n)],
            "job_id_raw": [str(i) for i in range(n)],
            "attempt": [0] * n,
            "n_attempts": [1] * n,
            "submit_time": pa.array([stamp(s) for s in submit], pa.timestamp("s", tz="UTC")),
            "start_time": pa.array([stamp(s) for s in start], pa.timestamp("s", tz="UTC")),
            "end_time": pa.array([stamp(s) for s in end], pa.timestamp("s", tz="UTC")),
            "wait_s": pa.array(wait, pa.int64()),
            "run_s": pa.array(run),
            "cores_alloc": pa.array([r.get("cores", 1) for r in rows], pa.int32()),
            "exec_hosts": pa.array([r.get("hosts") for r in rows], pa.list_(pa.string())),
            "state": ["COMPLETED"] * n,
            "src_file": ["f"] * n,
            "src_line": list(range(n)),
        }
    )
    return conform(table, "jobs")


def test_hosts_running_in_the_span() -> None:
    jobs = jobs_table(
        [
            # h1 holds two 1-core jobs at once: capacity 2
            {"submit": 0, "wait": 0, "run": 2 * H, "hosts": ["h1"]},
            {"submit": H, "wait": 0, "run": 2 * H, "hosts": ["h1"]},
            # a 4-core job over h2 and h3 (2 each), started the day before, running into day 1
            {"submit": 0, "wait": 0, "run": 1.5 * DAY, "cores": 4, "hosts": ["h2", "h3"]},
            # h4 only on day 2
            {"submit": 2 * DAY, "wait": 0, "run": H, "cores": 3, "hosts": ["h4"]},
        ]
    )
    day0 = pool_during(jobs, T0, T0 + pd.Timedelta(days=1))
    assert isinstance(day0, PoolEstimate)
    assert (day0.source, day0.hosts, day0.cores) == ("hosts", 3, 6)
    day1 = pool_during(jobs, T0 + pd.Timedelta(days=1), T0 + pd.Timedelta(days=2))
    assert (day1.hosts, day1.cores) == (2, 4)  # the job started before the span counts
    whole = pool_during(jobs, T0.timestamp(), None)  # Unix seconds, open end
    assert (whole.hosts, whole.cores) == (4, 9)
    assert whole.end is None
    assert whole.detail["hosts"]["hosts_in_log"] == 4
    json.dumps(whole.to_dict())
    assert "9 cores on the 4 hosts" in whole.note
    # a naive timestamp is UTC, an ISO string works
    late = pool_during(jobs, "2020-01-03 00:00", "2020-01-04T00:00:00+00:00")
    assert (late.hosts, late.cores) == (1, 3)


def saturated_jobs() -> list[dict[str, object]]:
    """Day 0 saturated (10 jobs waited 700 s; 8 cores at once); day 1 quiet (3 cores)."""
    busy = [{"submit": 0, "wait": 700, "run": 2 * H, "cores": 1} for _ in range(8)]
    busy += [{"submit": 3 * H, "wait": 700, "run": H, "cores": 1} for _ in range(2)]
    quiet = [{"submit": DAY + H, "wait": 5, "run": H, "cores": 3}]
    return busy + quiet


def test_peak_cores_in_use_on_saturated_days() -> None:
    jobs = jobs_table(saturated_jobs())
    pool = pool_during(jobs, T0, T0 + pd.Timedelta(days=2))
    assert (pool.source, pool.cores, pool.hosts) == ("peak-cores-in-use", 8, None)
    proxy = pool.detail["peak-cores-in-use"]
    assert proxy["saturated_days"] == 1
    assert proxy["days"] == 2
    assert proxy["peak_all_days"] == 8.0
    with pytest.raises(ConfigError, match="no pool for the span"):
        pool_during(jobs, T0, T0 + pd.Timedelta(days=2), min_saturated_days=2)
    # day 1 alone was never saturated: without a header there is nothing to go on
    with pytest.raises(ConfigError, match="fewer than 1 of its days were saturated"):
        pool_during(jobs, T0 + pd.Timedelta(days=1), T0 + pd.Timedelta(days=2))


def test_header_when_nothing_else() -> None:
    jobs = with_log_headers(jobs_table(saturated_jobs()), "swf", [{"MaxProcs": 16}])
    pool = pool_during(jobs, T0 + pd.Timedelta(days=1), T0 + pd.Timedelta(days=2))
    assert (pool.source, pool.cores) == ("header", 16)
    assert pool.detail["header"] == {"format": "swf", "processors": 16, "key": "MaxProcs"}
    assert pool.detail["peak-cores-in-use"]["peak_all_days"] == 3.0
    # a saturated span still prefers what the jobs show, and says it exceeds the header
    small = with_log_headers(jobs_table(saturated_jobs()), "swf", [{"MaxProcs": 6}])
    pool = pool_during(small, T0, T0 + pd.Timedelta(days=1))
    assert (pool.source, pool.cores) == ("peak-cores-in-use", 8)
    assert "above the header's 6" in pool.note


def test_header_without_start_times() -> None:
    rows = [{"submit": i * 60.0, "run": 600.0, "cores": 1} for i in range(20)]
    jobs = with_log_headers(jobs_table(rows), "swf", [{"MaxProcs": 50}])
    pool = pool_during(jobs, T0, T0 + pd.Timedelta(days=1))
    assert (pool.source, pool.cores) == ("header", 50)
    assert pool.detail["peak_demand_without_waits"] == 10.0


def test_bad_spans() -> None:
    jobs = jobs_table(saturated_jobs())
    with pytest.raises(ConfigError, match="end > start"):
        pool_during(jobs, T0, T0)
    with pytest.raises(ConfigError, match="no job was submitted or ran"):
        pool_during(jobs, T0 + pd.Timedelta(days=5), T0 + pd.Timedelta(days=6))
    with pytest.raises(ConfigError, match="must be a timestamp"):
        pool_during(jobs, "yesterday-ish", None)
    with pytest.raises(ConfigError, match="min_saturated_days"):
        pool_during(jobs, T0, None, min_saturated_days=0)


def test_trace_pool_uses_the_trace_clock() -> None:
    jobs = jobs_table(saturated_jobs())
    # a trace whose origin is day 1: its arrivals see only the quiet day
    table = pa.table(
        {
            "job_id": [0, 1],
            "submit_s": [0.0, 2 * H],
            "run_s": [H, H],
            "cores": pa.array([3, 1], pa.int32()),
            "interactive": [False, False],
        }
    )
    origin = (T0 + pd.Timedelta(days=1)).isoformat()
    trace = with_trace_metadata(
        conform(table, "trace"), origin=origin, site="s", cores=8, tau_s=900.0, provenance={}
    )
    with_header = with_log_headers(jobs, "swf", [{"MaxProcs": 12}])
    pool = trace_pool(with_header, trace)
    assert (pool.source, pool.cores) == ("header", 12)
    assert pool.start == T0 + pd.Timedelta(days=1)
    assert pool.end == T0 + pd.Timedelta(days=1, seconds=2 * H + 1)
    with pytest.raises(ConfigError, match="no metadata"):
        trace_pool(jobs, table)


def test_one_site_of_a_grid_log_on_its_own_pool() -> None:
    from gridtrace.segment import select_partition

    # two sites; the header counts both (100 processors); no start times, no hosts
    rows = [
        {"submit": 0, "run": 2 * H, "cores": 1},
        {"submit": 0, "run": 2 * H, "cores": 3},
        {"submit": H, "run": 2 * H, "cores": 2},  # site a: 1 + 3 + 2 = 6 at t = H
        {"submit": 0, "run": H, "cores": 50},  # site b
    ]
    jobs = with_log_headers(jobs_table(rows), "swf", [{"MaxProcs": 100}])
    at = jobs.schema.get_field_index("partition")
    jobs = jobs.set_column(at, "partition", pa.array(["a", "a", "a", "b"]))
    trace = with_trace_metadata(
        pa.table(
            {
                "job_id": pa.array([0, 1, 2, 3], pa.int64()),
                "submit_s": [0.0, 0.0, H, 0.0],
                "run_s": [2 * H, 2 * H, 2 * H, H],
                "cores": pa.array([1, 3, 2, 50], pa.int32()),
                "partition": ["a", "a", "a", "b"],
            }
        ),
        origin=T0.isoformat(),
        site="grid",
        cores=100,
        tau_s=900.0,
        provenance={},
    )
    site_jobs, site_trace = select_partition(jobs, trace, "a")
    assert site_trace["job_id"].to_pylist() == [0, 1, 2]
    assert site_jobs.num_rows == 3
    assert trace_pool(site_jobs, site_trace).source == "header"  # the whole grid's 100
    pool = trace_pool(site_jobs, site_trace, use_header=False)
    assert (pool.cores, pool.source) == (6, "peak-demand")
    with pytest.raises(ConfigError, match="partition 'c'"):
        select_partition(jobs, trace, "c")
