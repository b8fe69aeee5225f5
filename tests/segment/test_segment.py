"""Segmentation: synthetic traces with known changes, minimum size, determinism, selection."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gridtrace.cli import main
from gridtrace.errors import ConfigError
from gridtrace.schema import conform, read_table, trace_metadata, validate, with_trace_metadata
from gridtrace.segment import (
    SegmentParams,
    SelectionCriteria,
    segment,
    segment_trace,
    select_segment,
)

BLOCK = 500
DAY = 86_400.0


def make_trace(
    rates: list[float],
    sizes: list[int],
    *,
    mean_runs: list[float] | None = None,
    vo_mixes: list[dict[str, float]] | None = None,
    seed: int = 0,
    cores: int = 100,
) -> pa.Table:
    """Poisson arrivals, exponential runtimes; one (rate, size, mean run, VO mix) per phase."""
    rng = np.random.default_rng(seed)
    mean_runs = mean_runs or [1000.0] * len(rates)
    vo_mixes = vo_mixes or [{"atlas": 0.6, "cms": 0.3, "lhcb": 0.1}] * len(rates)
    gaps, runs, vos = [], [], []
    for rate, size, mean_run, mix in zip(rates, sizes, mean_runs, vo_mixes, strict=True):
        gaps.append(rng.exponential(1.0 / rate, size))
        runs.append(rng.exponential(mean_run, size))
        names = sorted(mix)
        vos.append(rng.choice(names, size=size, p=[mix[k] for k in names]))
    submit = np.cumsum(np.concatenate(gaps))
    run = np.round(np.concatenate(runs))
    n = submit.size
    table = pa.table(
        {
            "job_id": pa.array(np.arange(n, dtype=np.int64)),
            "submit_s": pa.array(submit - submit[0]),
            "run_s": pa.array(run),
            "cores": pa.array(np.ones(n, dtype=np.int32)),
            "vo": pa.array(np.concatenate(vos).astype(str).tolist()),
            "user": pa.array(["u"] * n),
            "interactive": pa.array(run <= 900),
        }
    )
    return with_trace_metadata(
        conform(table, "trace"),
        origin="2020-01-01T00:00:00+00:00",
        site="synthetic",
        cores=cores,
        tau_s=900.0,
        provenance={"seed": seed},
    )


def boundaries(result: object) -> list[int]:
    table = result.segments  # type: ignore[attr-defined]
    return table.column("row_start").to_pylist()[1:]


def test_stationary_trace_is_one_segment() -> None:
    result = segment(make_trace([0.05], [60_000]))
    assert result.segments.num_rows == 1
    row = result.segments.to_pylist()[0]
    assert row["jobs"] == 60_000
    assert row["reason"] == "start"
    assert row["runtime_ks_to_log"] == pytest.approx(0.0)
    # no hosts and no waits: the pool is not checked, and the table says so
    assert row["pool_stable"] is False
    assert any("NOT checked" in note for note in result.notes)


def test_arrival_rate_step_is_found_within_one_block() -> None:
    result = segment(make_trace([0.05, 0.1], [30_000, 30_000], seed=1))
    assert len(boundaries(result)) == 1
    assert abs(boundaries(result)[0] - 30_000) <= BLOCK
    assert result.segments.column("reason").to_pylist()[1] == "arrivals"
    rates = result.segments.column("arrival_rate_per_s").to_pylist()
    assert rates[1] / rates[0] == pytest.approx(2.0, rel=0.05)


def test_runtime_shift_is_found_within_one_block() -> None:
    trace = make_trace([0.05, 0.05], [25_000, 35_000], mean_runs=[1000.0, 4000.0], seed=2)
    result = segment(trace)
    assert len(boundaries(result)) == 1
    assert abs(boundaries(result)[0] - 25_000) <= BLOCK
    assert result.segments.column("reason").to_pylist()[1] == "runtime"


def test_vo_mix_switch_is_found_within_one_block() -> None:
    mixes = [{"atlas": 0.7, "cms": 0.2, "lhcb": 0.1}, {"atlas": 0.2, "cms": 0.3, "lhcb": 0.5}]
    result = segment(make_trace([0.05, 0.05], [40_000, 20_000], vo_mixes=mixes, seed=3))
    assert len(boundaries(result)) == 1
    assert abs(boundaries(result)[0] - 40_000) <= BLOCK
    assert result.segments.column("reason").to_pylist()[1] == "vo_mix"
    shares = json.loads(result.segments.column("vo_shares").to_pylist()[1])
    assert shares["lhcb"] == pytest.approx(0.5, abs=0.02)


def test_no_segment_is_smaller_than_the_minimum() -> None:
    rates = [0.05, 0.1, 0.05, 0.2, 0.05]
    sizes = [12_000, 4_000, 15_000, 3_000, 16_000]  # two changes too short to stand alone
    params = SegmentParams(min_jobs=10_000)
    result = segment(make_trace(rates, sizes, seed=4), params=params)
    jobs = result.segments.column("jobs").to_pylist()
    assert min(jobs) >= 10_000
    assert sum(jobs) == sum(sizes)
    # rows tile the trace
    starts = result.segments.column("row_start").to_pylist()
    stops = result.segments.column("row_stop").to_pylist()
    assert starts[0] == 0
    assert stops[-1] == sum(sizes)
    assert starts[1:] == stops[:-1]


def test_deterministic() -> None:
    trace = make_trace([0.05, 0.1], [30_000, 30_000], seed=5)
    first, second = segment(trace), segment(trace)
    assert first.segments.equals(second.segments)
    assert first.info() == second.info()


def test_segments_table_validates_and_carries_its_parameters() -> None:
    result = segment(make_trace([0.05, 0.1], [30_000, 30_000], seed=6))
    validate(result.segments, "segments")
    info = json.loads(result.segments.schema.metadata[b"segmentation"])
    assert info["params"]["min_jobs"] == 10_000
    assert info["params"]["block_jobs"] == BLOCK
    assert info["diagnostics"]["workload"][0]["curve"]


def test_utilisation_in_the_table_matches_its_definition() -> None:
    trace = make_trace([0.05, 0.1], [30_000, 30_000], seed=7, cores=80)
    result = segment(trace)
    submit = trace.column("submit_s").to_numpy()
    run = trace.column("run_s").to_numpy()
    for row in result.segments.to_pylist():
        a, b = row["row_start"], row["row_stop"]
        gap = (submit[b - 1] - submit[a]) / (b - a - 1)
        assert row["utilisation"] == pytest.approx(run[a:b].mean() / gap / 80)
        assert row["rho"] == pytest.approx(row["utilisation"])
        assert row["cores"] == 80


def make_jobs(hosts_before: int, hosts_after: int, change_day: int, days: int) -> pa.Table:
    """A jobs table whose pool grows from ``hosts_before`` to ``hosts_after`` nodes."""
    rng = np.random.default_rng(11)
    per_day = 2_000
    n = per_day * days
    submit = np.sort(rng.uniform(0, days * DAY, n))
    run = rng.exponential(600.0, n).round()
    wait = rng.exponential(30.0, n).round()
    pool = np.where(submit < change_day * DAY, hosts_before, hosts_after)
    host = (rng.random(n) * pool).astype(np.int64)
    base = np.datetime64("2020-01-01T00:00:00")
    utc = pa.timestamp("s", "UTC")
    start = base + (submit + wait).astype("timedelta64[s]")
    table = pa.table(
        {
            "site": pa.array(["s"] * n),
            "source_format": pa.array(["test"] * n),
            "job_key": pa.array([str(i) for i in range(n)]),
            "job_id_raw": pa.array([str(i) for i in range(n)]),
            "attempt": pa.array(np.zeros(n, dtype=np.int16)),
            "n_attempts": pa.array(np.ones(n, dtype=np.int16)),
            "vo": pa.array(rng.choice(["a", "b"], n).tolist()),
            "user": pa.array(["u"] * n),
            "submit_time": pa.array(
                base + submit.astype("timedelta64[s]"), pa.timestamp("s", "UTC")
            ),
            "start_time": pa.array(start, utc),
            "end_time": pa.array(start + run.astype("timedelta64[s]"), utc),
            "run_s": pa.array(run.astype(np.int64)),
            "cores_alloc": pa.array(np.ones(n, dtype=np.int32)),
            "exec_hosts": pa.array([[f"node{h:03d}"] for h in host]),
            "state": pa.array(["COMPLETED"] * n),
            "src_file": pa.array(["x"] * n),
            "src_line": pa.array(np.arange(n, dtype=np.int64)),
        }
    )
    return conform(table, "jobs")


def test_machine_pool_growth_is_found_within_one_block() -> None:
    jobs = make_jobs(200, 260, change_day=30, days=60)
    result = segment(jobs, cores=None)
    assert result.pool_source == "hosts"
    assert len(result.pool_boundaries) == 1
    assert result.pool_boundaries[0].day == 30
    assert result.pool_boundaries[0].evidence["jaccard"] < 0.9
    rows = result.segments.to_pylist()
    assert len(rows) == 2
    assert rows[1]["reason"] == "pool"
    # 2,000 jobs a day: the change is at job 60,000 (± a block)
    assert abs(rows[1]["row_start"] - 60_000) <= BLOCK
    assert [r["hosts"] for r in rows] == [200, 260]
    assert all(r["pool_stable"] for r in rows)


def test_select_segment_prefers_stable_close_and_large_enough() -> None:
    mixes = [{"a": 0.5, "b": 0.5}, {"a": 0.9, "b": 0.1}, {"a": 0.5, "b": 0.5}]
    trace = make_trace([0.05] * 3, [20_000, 20_000, 40_000], vo_mixes=mixes, seed=8)
    result = segment(trace, jobs=None)
    table = result.segments
    assert table.num_rows == 3
    # make the table's pool "checked and stable" to exercise the other criteria
    table = table.set_column(
        table.column_names.index("pool_stable"), "pool_stable", pa.array([True] * 3)
    )
    choice = select_segment(table, SelectionCriteria(min_jobs=10_000))
    assert choice.eligible
    assert choice.segment_id == 2  # the largest share of the log, closest to its VO mix
    assert "segment 2 of 3" in choice.explanation
    band = SelectionCriteria(utilisation=(5.0, 6.0))
    refused = select_segment(table, band)
    assert not refused.eligible
    assert "outside [5.0, 6.0]" in refused.explanation


def test_segment_trace_is_a_trace_of_the_segment() -> None:
    trace = make_trace([0.05, 0.1], [30_000, 30_000], seed=9)
    result = segment(trace)
    part = segment_trace(trace, result.segments, 1)
    row = result.segments.to_pylist()[1]
    assert part.num_rows == row["jobs"]
    assert part.column("submit_s")[0].as_py() == 0.0
    assert part.column("job_id")[0].as_py() == row["row_start"]
    meta = trace_metadata(part)
    assert meta["provenance"]["segment"]["segment_id"] == 1
    assert meta["cores"] == row["cores"]
    validate(part, "trace")
    with pytest.raises(ConfigError, match="no segment 7"):
        segment_trace(trace, result.segments, 7)


def test_parameters_are_checked() -> None:
    with pytest.raises(ConfigError, match="block_jobs"):
        SegmentParams(min_jobs=100, block_jobs=500)
    with pytest.raises(ConfigError, match="kernel"):
        SegmentParams(kernel="cosine")


def test_trace_without_cores_needs_an_argument() -> None:
    trace = make_trace([0.05], [100]).replace_schema_metadata(None)
    with pytest.raises(ConfigError, match="cores"):
        segment(trace)
    assert segment(trace, cores=10).segments.column("cores").to_pylist() == [10]


def test_segment_command_writes_segments_and_the_chosen_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "site.parquet"
    pq.write_table(make_trace([0.05, 0.1], [3_000, 3_000], seed=1), source)
    out = tmp_path / "out"
    status = main(
        ["segment", str(source), "-o", str(out), "--min-jobs", "1000", "--block-jobs", "100"]
    )
    assert status == 0
    segments = read_table(out / "segments.parquet", "segments")
    assert segments.num_rows == 2
    assert segments.column("reason").to_pylist() == ["start", "arrivals"]
    summary = json.loads((out / "segmentation.json").read_text())
    assert summary["params"]["min_jobs"] == 1000
    assert len(summary["traces"]) == 1
    chosen = pq.read_table(summary["traces"][0])
    assert chosen.num_rows in segments.column("jobs").to_pylist()
    assert (
        trace_metadata(chosen)["provenance"]["segment"]["segment_id"]
        == summary["choice"]["segment_id"]
    )
    printed = capsys.readouterr().out
    assert "segment 1: " in printed
    assert "pool stability NOT checked" in printed
