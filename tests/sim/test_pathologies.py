"""Pathology flags on crafted results."""

from __future__ import annotations

import pyarrow as pa
import pytest

from gridtrace.errors import ConfigError, SchemaError
from gridtrace.sim import (
    INTERACTIVE_WAIT_OVER_DAY,
    POOL_AT_FLOOR,
    W_BELOW_FIFO,
    ScheduledPool,
    SimulationResult,
    pathology_flags,
    simulate,
    time_at_floor,
    w_below_fifo,
)


def make_trace(jobs: list[tuple[int, float, float, int]]) -> pa.Table:
    """Trace from (job_id, submit_s, run_s, cores) tuples; interactive = run <= 900 s."""
    return pa.table(
        {
            "job_id": pa.array([j[0] for j in jobs], pa.int64()),
            "submit_s": pa.array([float(j[1]) for j in jobs], pa.float64()),
            "run_s": pa.array([float(j[2]) for j in jobs], pa.float64()),
            "cores": pa.array([j[3] for j in jobs], pa.int32()),
            "vo": pa.array(["a"] * len(jobs), pa.string()),
            "interactive": pa.array([j[2] <= 900 for j in jobs]),
        }
    )


def test_time_at_floor_step_function() -> None:
    # 80 over [0, 100), 30 over [100, 400), 50 over [400, 1000]
    assert time_at_floor([0.0, 100.0, 400.0], [80, 30, 50], 30, 0.0, 1000.0) == pytest.approx(0.3)
    # at most the floor counts: 30 and 20 both
    assert time_at_floor([0.0, 100.0, 400.0], [80, 30, 20], 30, 0.0, 1000.0) == pytest.approx(0.9)
    # a period cut inside the series
    assert time_at_floor([0.0, 100.0, 400.0], [80, 30, 50], 30, 200.0, 600.0) == pytest.approx(0.5)
    # before the first entry the pool is the first size
    assert time_at_floor([100.0], [30], 30, 0.0, 200.0) == pytest.approx(1.0)
    assert time_at_floor([], [], 30, 0.0, 100.0) == 0.0
    assert time_at_floor([0.0], [30], 30, 5.0, 5.0) == 0.0
    with pytest.raises(ConfigError):
        time_at_floor([0.0, 1.0], [30], 30, 0.0, 1.0)


def test_pool_at_floor_flag_on_a_scheduled_pool() -> None:
    # one 1-core job over [0, 1000]; the pool is 4, then 2 over [100, 300), then 4: at the
    # floor of 2 for 200 / 1000 = 20 % of the period
    trace = make_trace([(0, 0.0, 1000.0, 1)])
    pool = ScheduledPool([(100.0, 2), (300.0, 4)])
    result = simulate(trace, cores=4, provisioning=pool, warmup_jobs=0, drain_jobs=0)
    times, sizes = result.pool_timeline
    assert times.tolist() == [0.0, 100.0, 300.0]
    assert sizes.tolist() == [4, 2, 4]
    flags = pathology_flags(result, floor=2)
    assert [f.code for f in flags] == [POOL_AT_FLOOR]
    assert flags[0].value == pytest.approx(0.2)
    assert flags[0].limit == pytest.approx(0.1)
    assert "20.0%" in flags[0].message
    assert pathology_flags(result, floor=2, floor_share=0.25) == []
    assert pathology_flags(result, floor=None) == []
    assert pathology_flags(result, floor=1) == []


def test_exactly_the_share_is_not_flagged() -> None:
    trace = make_trace([(0, 0.0, 1000.0, 1)])
    pool = ScheduledPool([(100.0, 2), (200.0, 4)])
    result = simulate(trace, cores=4, provisioning=pool, warmup_jobs=0, drain_jobs=0)
    assert pathology_flags(result, floor=2) == []  # 10 % is not more than 10 %


def test_interactive_wait_over_a_day() -> None:
    # P = 1: a 90,000 s batch job, then two 10 s interactive jobs queued behind it:
    # waits 90,000 - 1 = 89,999 s and 90,010 - 2 = 90,008 s, both over a day; a third
    # interactive job arrives at 5,000 s and waits 90,020 - 5,000 = 85,020 s, under a day
    trace = make_trace(
        [(0, 0.0, 90_000.0, 1), (1, 1.0, 10.0, 1), (2, 2.0, 10.0, 1), (3, 5_000.0, 10.0, 1)]
    )
    result = simulate(trace, cores=1, warmup_jobs=0, drain_jobs=0)
    assert result.jobs.column("wait_s").to_pylist() == [0.0, 89_999.0, 90_008.0, 85_020.0]
    flags = pathology_flags(result, floor=None)
    assert [f.code for f in flags] == [INTERACTIVE_WAIT_OVER_DAY]
    assert flags[0].count == 2
    assert flags[0].value == pytest.approx(90_008.0)
    assert flags[0].limit == 86_400.0
    lower = pathology_flags(result, floor=None, max_interactive_wait_s=80_000.0)
    assert lower[0].count == 3


def test_a_long_batch_wait_is_not_an_interactive_one() -> None:
    trace = make_trace([(0, 0.0, 100_000.0, 1), (1, 1.0, 5_000.0, 1)])
    result = simulate(trace, cores=1, warmup_jobs=0, drain_jobs=0)
    assert result.jobs.column("wait_s").to_pylist()[1] > 86_400.0
    assert pathology_flags(result, floor=None) == []


def test_both_flags_and_an_empty_run() -> None:
    trace = make_trace([(0, 0.0, 90_000.0, 1), (1, 1.0, 10.0, 1)])
    result = simulate(trace, cores=1, warmup_jobs=0, drain_jobs=0)
    codes = [f.code for f in pathology_flags(result, floor=1)]  # a fixed pool of 1 at floor 1
    assert codes == [POOL_AT_FLOOR, INTERACTIVE_WAIT_OVER_DAY]
    empty = simulate(make_trace([]), cores=1)
    assert pathology_flags(empty, floor=1) == []


def test_pool_timeline_needs_the_series() -> None:
    result = simulate(make_trace([(0, 0.0, 1.0, 1)]), cores=1, warmup_jobs=0, drain_jobs=0)
    crafted = SimulationResult(jobs=result.jobs, summary={"policy": "fifo"})
    with pytest.raises(SchemaError, match="pool_size"):
        crafted.pool_timeline  # noqa: B018
    with pytest.raises(SchemaError):
        pathology_flags(crafted, floor=1)
    # an interactive check alone needs no series
    assert pathology_flags(crafted, floor=None) == []


def test_bad_thresholds() -> None:
    result = simulate(make_trace([(0, 0.0, 1.0, 1)]), cores=1)
    with pytest.raises(ConfigError):
        pathology_flags(result, floor=1, floor_share=1.0)
    with pytest.raises(ConfigError):
        pathology_flags(result, floor=1, max_interactive_wait_s=-1.0)


def test_w_below_fifo() -> None:
    flag = w_below_fifo(0.55, (0.60, 0.66))
    assert flag is not None
    assert flag.code == W_BELOW_FIFO
    assert (flag.value, flag.limit) == (0.55, 0.60)
    assert w_below_fifo(0.60, (0.60, 0.66)) is None  # at the bound is inside
    assert w_below_fifo(0.7, (0.60, 0.66)) is None
    interval = {"mean": 0.63, "std": 0.02, "ci_low": 0.61, "ci_high": 0.65, "n": 10}
    assert w_below_fifo(0.605, interval) is not None
    assert w_below_fifo(0.62, interval) is None
    single = w_below_fifo(0.62, {"mean": 0.63, "ci_low": None}, label="interactive W")
    assert single is not None
    assert "compared with its mean" in single.message
    assert single.message.startswith("interactive W")
    assert w_below_fifo(0.1, {"mean": None, "ci_low": None}) is None
    assert w_below_fifo(float("nan"), (0.6, 0.7)) is None
