"""Characterisation and segmentation of the real logs (GRIDTRACE_REAL_DATA)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from gridtrace.logs import VOMapping, build_trace, read_swf, read_torque
from gridtrace.schema import conform, validate, with_trace_metadata
from gridtrace.segment import segment, select_segment
from gridtrace.stats import characterise


def tiles(table: pa.Table, total: int) -> None:
    starts = table.column("row_start").to_pylist()
    stops = table.column("row_stop").to_pylist()
    assert starts[0] == 0
    assert stops[-1] == total
    assert starts[1:] == stops[:-1]


@pytest.mark.realdata
def test_lpc_egee_2004(real_data: Path) -> None:
    result = read_swf(real_data / "swf" / "LPC-EGEE-2004-1.2-cln.swf.gz")
    trace = build_trace(
        VOMapping().apply(result.jobs), cores=140, provenance={"tz": "Europe/Paris"}
    )
    stats = characterise(trace)
    assert stats.jobs == 220_695
    assert stats.timezone == "Europe/Paris"
    assert stats.utilisation == pytest.approx(0.2444, abs=1e-3)
    assert stats.interactive_fraction == pytest.approx(0.7971, abs=1e-3)
    assert list(stats.vo_shares)[:2] == ["2", "1"]
    json.dumps(stats.to_dict(), allow_nan=False)
    seg = segment(trace)
    table = validate(seg.segments, "segments")
    tiles(table, trace.num_rows)
    assert min(table.column("jobs").to_pylist()) >= 10_000
    assert seg.pool_source == "peak-cores-in-use"
    # the pool grew from about 64 to 140 cores in mid-October 2004 (day 31 of the trace)
    first = seg.pool_boundaries[0]
    assert first.day == 31
    assert first.before["peak_cores"] < 70
    assert first.after["peak_cores"] >= 140
    choice = select_segment(table)
    assert choice.eligible
    assert table.column("pool_stable").to_pylist()[choice.segment_id]


@pytest.mark.realdata
def test_lcg_2005_without_waits(real_data: Path) -> None:
    jobs = VOMapping().apply(read_swf(real_data / "swf" / "LCG-2005-1.swf.gz").jobs)
    # LCG-2005-1 logs no wait, hence no start time: build_trace keeps none of its jobs, so the
    # trace is built here from submit times and runtimes
    ran = jobs.filter(pc.and_(pc.is_valid(jobs["submit_time"]), pc.is_valid(jobs["run_s"])))
    submit = ran["submit_time"].cast(pa.int64()).to_numpy().astype(float)
    order = np.argsort(submit, kind="stable")
    run = ran["run_s"].to_numpy().astype(float)[order]
    take = pa.array(order)
    table = pa.table(
        {
            "job_id": pa.array(np.arange(order.size)),
            "submit_s": pa.array(submit[order] - submit[order][0]),
            "run_s": pa.array(run),
            "cores": ran["cores_alloc"].take(take).fill_null(1),
            "vo": ran["vo"].take(take),
            "user": ran["user"].take(take),
            "interactive": pa.array(run <= 900),
        }
    )
    origin = pd.Timestamp(int(submit[order][0]), unit="s", tz="UTC").isoformat()
    trace = with_trace_metadata(
        conform(table, "trace"), origin=origin, site="LCG", cores=1, tau_s=900.0, provenance={}
    )
    assert trace.num_rows == 188_041
    seg = segment(trace)
    assert seg.pool_source is None
    assert any("NOT checked" in n for n in seg.notes)
    assert not any(seg.segments.column("pool_stable").to_pylist())
    assert min(seg.segments.column("jobs").to_pylist()) >= 10_000
    tiles(seg.segments, trace.num_rows)
    stats = characterise(trace)
    assert stats.interactive_fraction == pytest.approx(0.631, abs=1e-3)


@pytest.mark.realdata
def test_hpc2n(real_data: Path) -> None:
    result = read_swf(real_data / "swf" / "HPC2N-2002-2.2-cln.swf.gz")
    trace = build_trace(VOMapping().apply(result.jobs), cores=240)
    stats = characterise(trace)
    assert stats.utilisation == pytest.approx(0.132, abs=1e-3)
    assert stats.rho == pytest.approx(0.602, abs=1e-3)  # multi-core jobs: ρ ≫ U
    assert stats.flurries.num_rows > 0
    seg = segment(trace)
    assert min(seg.segments.column("jobs").to_pylist()) >= 10_000
    tiles(seg.segments, trace.num_rows)
    assert "cores" in ",".join(seg.segments.column("reason").to_pylist())


@pytest.mark.realdata
def test_vsc_month_with_hosts(real_data: Path) -> None:
    result = read_torque(real_data / "torque" / "vsc-kuleuven-2016-06", tz="Europe/Brussels")
    jobs = VOMapping().apply(result.jobs)
    trace = build_trace(jobs, records=result.records, provenance={"tz": "Europe/Brussels"})
    stats = characterise(trace)
    assert stats.timezone == "Europe/Brussels"
    assert stats.cores == 7699
    seg = segment(trace, jobs=jobs)
    assert seg.pool_source == "hosts"
    # under 10,000 jobs: one segment, the whole month
    rows = seg.segments.to_pylist()
    assert len(rows) == 1
    assert rows[0]["jobs"] == trace.num_rows
    assert rows[0]["hosts"] == 359
    # the log window's start shows as a pool change (jobs from before June seen on few hosts)
    assert seg.pool_boundaries[0].evidence["jaccard"] < 0.9


@pytest.mark.realdata
@pytest.mark.slow
def test_lcg_2005_one_site_on_its_own_pool(real_data: Path) -> None:
    from gridtrace.segment import select_partition, trace_pool

    result = read_swf(real_data / "swf" / "LCG-2005-1.swf.gz")
    jobs = VOMapping.from_dict({"fallback_field": "group"}).apply(result.jobs)
    trace = build_trace(jobs, cores=24515, provenance={"tz": "UTC"})
    assert trace_pool(jobs, trace).cores == 24515  # the header: the sum over the 170 sites
    site_jobs, site_trace = select_partition(jobs, trace, "lxgate13.cern.ch")
    assert site_trace.num_rows == site_jobs.num_rows == 30_966  # the largest site
    pool = trace_pool(site_jobs, site_trace, use_header=False)
    assert pool.source == "peak-demand"
    # the peak cores in use with every job started at its submit: well below the grid's sum,
    # well above the site's mean offered load (~363 cores over the 11 days)
    assert 1000 <= pool.cores <= 2000
