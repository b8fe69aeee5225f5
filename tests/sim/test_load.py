"""Offered load and the two load transforms (compressed arrivals, shrunk pool)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridtrace.errors import ConfigError, GridtraceError
from gridtrace.logs import VOMapping, build_trace, read_swf, read_torque
from gridtrace.schema import conform, trace_metadata, with_trace_metadata
from gridtrace.segment import pool_during, segment, segment_trace, select_segment, trace_pool
from gridtrace.sim import (
    DEFAULT_LOADS,
    LoadUnreachableError,
    load_sweep,
    offered_load,
    set_load,
    simulate,
)

TARGETS = (0.5, 0.7, 0.85, 0.95)


def make_trace(
    submit: list[float] | np.ndarray,
    run: list[float] | np.ndarray,
    cores: list[int] | np.ndarray,
    *,
    pool: int = 4,
    job_ids: list[int] | np.ndarray | None = None,
) -> pa.Table:
    n = len(submit)
    ids = np.arange(n) if job_ids is None else np.asarray(job_ids)
    vo = ["a", "b", None][: min(n, 3)] * (n // 3 + 1)
    table = pa.table(
        {
            "job_id": pa.array(ids, pa.int64()),
            "submit_s": pa.array(np.asarray(submit, dtype=float)),
            "run_s": pa.array(np.asarray(run, dtype=float)),
            "cores": pa.array(np.asarray(cores), pa.int32()),
            "walltime_req_s": pa.array(np.asarray(run, dtype=float) * 2),
            "vo": pa.array(vo[:n], pa.string()),
            "interactive": pa.array(np.asarray(run, dtype=float) <= 900),
            "wait_s": pa.array(np.arange(n, dtype=float)),
        }
    )
    return with_trace_metadata(
        conform(table, "trace"),
        origin="2004-10-01T00:00:00+00:00",
        site="test",
        cores=pool,
        tau_s=900.0,
        provenance={"source": "test"},
    )


def poisson_trace(
    n: int, *, pool: int, load: float, seed: int, sizes: tuple[int, ...] = (1, 1, 1, 2, 4)
) -> pa.Table:
    """Poisson arrivals, exponential runtimes, cores from ``sizes``, offered load ~``load``."""
    rng = np.random.default_rng(seed)
    cores = rng.choice(sizes, size=n)
    run = rng.exponential(600.0, size=n)
    rate = load * pool / float(np.mean(run * cores))
    submit = np.cumsum(rng.exponential(1.0 / rate, size=n))
    submit -= submit[0]
    return make_trace(submit, run, cores, pool=pool)


UNCHANGED = ["job_id", "run_s", "cores", "walltime_req_s", "vo", "interactive", "wait_s"]


# --- hand-computed examples ---------------------------------------------------------------------


def test_offered_load_by_hand() -> None:
    # work 2·10 + 1·30 + 4·5 = 70 core-s over 20 s on 5 cores
    trace = make_trace([5.0, 10.0, 25.0], [10.0, 30.0, 5.0], [2, 1, 4], pool=5)
    assert offered_load(trace) == pytest.approx(70 / (5 * 20))
    assert offered_load(trace, cores=7) == pytest.approx(70 / (7 * 20))


def test_compress_by_hand() -> None:
    trace = make_trace([5.0, 10.0, 10.0, 25.0], [10.0, 30.0, 0.0, 5.0], [2, 1, 1, 4], pool=5)
    out = set_load(trace, 0.35)  # ρ = 70 / (5 · 20) = 0.7 → gaps × 2, from the first submit 5
    assert out.how == "compress"
    assert out.cores == 5
    assert out.factor == pytest.approx(2.0)
    assert out.source_load == pytest.approx(0.7)
    assert out.offered_load == pytest.approx(0.35)
    assert out.trace.column("submit_s").to_pylist() == [5.0, 15.0, 15.0, 45.0]
    assert out.reached


def test_shrink_by_hand() -> None:
    # work 70 core-s over 20 s: ρ = 0.5 needs P = 7 exactly; ρ = 0.6 needs 5.83 → P = 6 (0.583)
    trace = make_trace([5.0, 10.0, 25.0], [10.0, 30.0, 5.0], [2, 1, 4], pool=14)
    out = set_load(trace, 0.5, how="shrink")
    assert (out.cores, out.offered_load, out.factor) == (7, 0.5, 0.5)
    assert out.source_load == pytest.approx(0.25)
    out = set_load(trace, 0.6, how="shrink", tolerance=0.05)
    assert out.cores == 6
    assert out.offered_load == pytest.approx(70 / 120)
    assert out.relative_error == pytest.approx(70 / 120 / 0.6 - 1)
    assert out.trace.equals(trace)


def test_metadata_records_the_load() -> None:
    trace = poisson_trace(200, pool=16, load=0.4, seed=1)
    for how in ("compress", "shrink"):
        out = set_load(trace, 0.8, how=how, tolerance=0.1)
        meta = trace_metadata(out.trace)
        assert meta["cores"] == out.cores
        assert meta["provenance"]["source"] == "test"
        assert meta["provenance"]["load"] == out.to_dict()
        assert meta["provenance"]["load"]["how"] == how
        assert meta["origin"] == trace_metadata(trace)["origin"]


# --- what the transforms keep -------------------------------------------------------------------


@pytest.mark.parametrize("how", ["compress", "shrink"])
@pytest.mark.parametrize("target", TARGETS)
def test_targets_reached_and_jobs_kept(how: str, target: float) -> None:
    trace = poisson_trace(5_000, pool=128, load=0.3, seed=7)  # shrunk P ≥ 40
    out = set_load(trace, target, how=how)  # type: ignore[arg-type]
    assert out.reached
    assert abs(out.offered_load / target - 1) <= 0.02
    assert offered_load(out.trace, out.cores) == pytest.approx(out.offered_load, rel=1e-12)
    for name in UNCHANGED:
        assert out.trace.column(name).equals(trace.column(name)), name
    assert out.trace.column_names == trace.column_names
    assert out.trace.schema.equals(trace.schema, check_metadata=False)
    new = out.trace.column("submit_s").to_numpy()
    old = trace.column("submit_s").to_numpy()
    if how == "compress":
        assert out.cores == 128
        assert abs(out.offered_load / target - 1) < 1e-12
        assert np.all(np.diff(new) > 0) == np.all(np.diff(old) > 0)
        assert np.array_equal(np.argsort(new, kind="stable"), np.argsort(old, kind="stable"))
        gaps = np.diff(new) / np.diff(old)
        assert np.allclose(gaps, out.factor, rtol=1e-9)
    else:
        assert np.array_equal(new, old)
        assert out.factor == pytest.approx(out.cores / 128)


@pytest.mark.parametrize("how", ["compress", "shrink"])
def test_simulated_fifo_utilisation_tracks_offered_load(how: str) -> None:
    # U_sim = ρ · S / (S + D) exactly; on 20,000 jobs the drain tail D (about the longest of the
    # last runtimes, plus the backlog at 0.95) costs U_sim 1–3 %
    trace = poisson_trace(20_000, pool=128, load=0.3, seed=11)
    for target in TARGETS:
        out = set_load(trace, target, how=how)  # type: ignore[arg-type]
        summary = simulate(out.trace, cores=out.cores, policy="fifo").summary
        submit = out.trace.column("submit_s").to_numpy()
        span = float(submit.max() - submit.min())
        tail = summary["last_end_s"] - float(submit.max())
        assert tail >= 0
        assert summary["utilisation"] == pytest.approx(
            out.offered_load * span / (span + tail), rel=1e-9
        )
        assert summary["utilisation"] <= out.offered_load
        assert summary["utilisation"] == pytest.approx(target, rel=0.05)


def test_compress_keeps_ties_and_unsorted_rows() -> None:
    # rows not in submit order, ties between submits and ids not in row order
    trace = make_trace(
        [30.0, 0.0, 30.0, 10.0, 10.0],
        [5.0, 5.0, 5.0, 5.0, 5.0],
        [1, 1, 1, 1, 1],
        pool=1,
        job_ids=[4, 0, 3, 2, 1],
    )
    out = set_load(trace, 2.0)  # 25 core-s over 30 s on 1 core: 0.8333 → 2 (an overload)
    assert out.factor == pytest.approx(25 / 30 / 2)
    new = out.trace.column("submit_s").to_pylist()
    assert new == pytest.approx([12.5, 0.0, 12.5, 25 / 6, 25 / 6])
    assert new[0] == new[2]
    assert new[3] == new[4]
    assert out.trace.column("job_id").to_pylist() == [4, 0, 3, 2, 1]


def test_origin_kept_when_first_submit_is_not_zero() -> None:
    trace = make_trace([100.0, 110.0, 130.0], [10.0, 10.0, 10.0], [1, 1, 1], pool=1)
    out = set_load(trace, 0.5)  # ρ = 30 / 30 = 1 → gaps × 2 from 100
    assert out.trace.column("submit_s").to_pylist() == [100.0, 120.0, 160.0]


def test_sweep() -> None:
    trace = poisson_trace(2_000, pool=128, load=0.3, seed=3)
    results = load_sweep(trace)
    assert [(r.how, r.target) for r in results] == [
        (how, load) for how in ("compress", "shrink") for load in DEFAULT_LOADS
    ]
    assert all(r.reached and abs(r.relative_error) <= 0.02 for r in results)
    shrink = [r.cores for r in results if r.how == "shrink"]
    assert shrink == sorted(shrink, reverse=True)
    only = load_sweep(trace, (0.6,), how="shrink", cores=40)
    assert len(only) == 1
    assert only[0].source_cores == 40


# --- errors -------------------------------------------------------------------------------------


def test_shrink_below_the_largest_job_is_unreachable() -> None:
    # work 2·10 + 1·10 + 8·10 = 110 core-s over 10 s: ρ = 0.95 needs 11.6 cores, fine;
    # ρ = 12 needs 0.9 cores, below the 8-core job: at most 110 / 80 = 1.375
    trace = make_trace([0.0, 5.0, 10.0], [10.0, 10.0, 10.0], [2, 1, 8], pool=16)
    with pytest.raises(LoadUnreachableError, match="largest job") as info:
        set_load(trace, 12.0, how="shrink")
    assert isinstance(info.value, ConfigError)
    assert isinstance(info.value, GridtraceError)
    assert isinstance(info.value, ValueError)
    assert info.value.nearest_cores == 8
    assert info.value.nearest_load == pytest.approx(1.375)
    out = set_load(trace, 12.0, how="shrink", on_unreachable="nearest")
    assert not out.reached
    assert out.cores == 8
    assert out.offered_load == pytest.approx(1.375)
    assert trace_metadata(out.trace)["provenance"]["load"]["reached"] is False


def test_shrink_rounding_miss_is_unreachable() -> None:
    # 70 core-s over 20 s: ρ = 0.6 wants P = 5.83; P = 6 gives 0.583 (2.8 % off)
    trace = make_trace([5.0, 10.0, 25.0], [10.0, 30.0, 5.0], [2, 1, 4], pool=14)
    with pytest.raises(LoadUnreachableError, match="nearest integer pool, 6 cores"):
        set_load(trace, 0.6, how="shrink")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"load": 0.0}, "positive"),
        ({"load": math.nan}, "positive"),
        ({"load": 0.5, "how": "squeeze"}, "how must be"),
        ({"load": 0.5, "cores": 0}, "positive integer"),
        ({"load": 0.5, "cores": 3}, "more than the pool"),
        ({"load": 0.5, "tolerance": -1.0}, "tolerance"),
        ({"load": 0.5, "on_unreachable": "ignore"}, "on_unreachable"),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], match: str) -> None:
    trace = make_trace([0.0, 5.0, 10.0], [10.0, 10.0, 10.0], [2, 1, 4], pool=16)
    with pytest.raises(ConfigError, match=match):
        set_load(trace, **kwargs)  # type: ignore[arg-type]


def test_degenerate_traces() -> None:
    with pytest.raises(ConfigError, match="1 job"):
        set_load(make_trace([0.0], [10.0], [1]), 0.5)
    with pytest.raises(ConfigError, match="same instant"):
        set_load(make_trace([3.0, 3.0], [10.0, 10.0], [1, 1]), 0.5)
    bare = pa.table({"submit_s": [0.0, 1.0], "run_s": [1.0, 1.0], "cores": [1, 1]})
    with pytest.raises(ConfigError, match="no cores P"):
        set_load(bare, 0.5)
    # without trace metadata the table is transformed, its metadata left alone
    out = set_load(bare, 0.5, cores=4)
    assert out.trace.schema.metadata is None
    assert out.offered_load == pytest.approx(0.5)


def test_compress_refuses_to_merge_arrivals() -> None:
    trace = make_trace([1e9, 1e9 + 1, 1e9 + 2], [1.0, 1.0, 1.0], [1, 1, 1], pool=1)
    with pytest.raises(ConfigError, match="merges distinct submit times"):
        set_load(trace, 1e20)


# --- property test ------------------------------------------------------------------------------

jobs_strategy = st.lists(
    st.tuples(
        st.integers(0, 50),  # submit: small integers, many ties
        st.floats(0.0, 1e4, allow_nan=False),  # run
        st.integers(1, 8),  # cores
    ),
    min_size=2,
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(
    jobs=jobs_strategy,
    target=st.floats(0.05, 3.0),
    extra=st.integers(0, 200),
    scale=st.floats(0.01, 1e5),
)
def test_properties(
    jobs: list[tuple[int, float, int]], target: float, extra: int, scale: float
) -> None:
    submit = np.array([j[0] for j in jobs], dtype=float) * scale
    if np.ptp(submit) == 0:
        submit[-1] += scale
    run = np.array([j[1] for j in jobs]) + 1.0
    cores = np.array([j[2] for j in jobs])
    pool = int(cores.max()) + extra
    trace = make_trace(submit, run, cores, pool=pool)
    out = set_load(trace, target)
    assert out.offered_load == pytest.approx(target, rel=1e-6)  # rounding of t0 + c·Δ
    new = out.trace.column("submit_s").to_numpy()
    # the same order, the same ties
    assert np.array_equal(
        np.sign(np.subtract.outer(new, new)), np.sign(np.subtract.outer(submit, submit))
    )
    assert new.min() == submit.min()
    for name in UNCHANGED:
        assert out.trace.column(name).equals(trace.column(name))
    shrunk = set_load(trace, target, how="shrink", on_unreachable="nearest")
    assert shrunk.trace.equals(trace)
    assert shrunk.cores >= cores.max()
    miss = abs(shrunk.offered_load / target - 1)
    assert shrunk.reached == (miss <= 0.02)
    # no admissible neighbour does better
    work = float(np.sum(run * cores))
    span = float(np.ptp(submit))
    for p in (shrunk.cores - 1, shrunk.cores + 1):
        if p >= cores.max():
            assert abs(work / (p * span) / target - 1) >= miss - 1e-12


# --- real data ----------------------------------------------------------------------------------


@pytest.mark.realdata
def test_lpc_egee_segment_pool_and_sweep(real_data: Path) -> None:
    jobs = VOMapping().apply(read_swf(real_data / "swf" / "LPC-EGEE-2004-1.2-cln.swf.gz").jobs)
    # the pool proxy grows from about 64 to 142 cores in mid-October 2004 (header: 140)
    first = pool_during(jobs, "2004-10-01", "2004-10-16")
    second = pool_during(jobs, "2004-10-16", "2004-11-01")
    assert (first.source, first.cores) == ("peak-cores-in-use", 67)
    assert (second.source, second.cores) == ("peak-cores-in-use", 142)
    assert "above the header's 140" in second.note
    trace = build_trace(jobs, cores=140, provenance={"tz": "Europe/Paris"})
    seg = segment(trace)
    workload = segment_trace(trace, seg.segments, select_segment(seg.segments).segment_id)
    pool = trace_pool(jobs, workload)
    assert pool.source == "peak-cores-in-use"
    for result in load_sweep(workload, cores=pool.cores):
        assert abs(result.relative_error) <= 0.02
        assert result.trace.column("run_s").equals(workload.column("run_s"))
        summary = simulate(result.trace, cores=result.cores, policy="fifo").summary
        # multi-day batch jobs leave a drain tail of days: U_sim well below ρ at high loads
        assert summary["utilisation"] <= result.offered_load


@pytest.mark.realdata
def test_vsc_month_pool_and_unreachable_shrink(real_data: Path) -> None:
    result = read_torque(real_data / "torque" / "vsc-kuleuven-2016-06", tz="Europe/Brussels")
    jobs = VOMapping().apply(result.jobs)
    trace = build_trace(jobs, records=result.records, provenance={"tz": "Europe/Brussels"})
    pool = trace_pool(jobs, trace)
    assert (pool.source, pool.hosts, pool.cores) == ("hosts", 359, 7723)
    assert offered_load(trace, pool.cores) == pytest.approx(0.2873, abs=1e-3)
    # a 2,400-core job caps what shrinking can reach at about 0.92
    with pytest.raises(LoadUnreachableError, match="largest job"):
        set_load(trace, 0.95, how="shrink", cores=pool.cores)
    assert set_load(trace, 0.95, cores=pool.cores).offered_load == pytest.approx(0.95)
