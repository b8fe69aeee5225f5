"""The threshold autoscaler and the best static pool against hand-computed examples."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from gridtrace.errors import ConfigError, SimulationError
from gridtrace.models import generate_preset_trace
from gridtrace.schema import with_trace_metadata
from gridtrace.sim import (
    PROVISIONING,
    FixedPool,
    JobRows,
    ScheduledPool,
    SimulationResult,
    ThresholdAutoscaler,
    best_static_pool,
    make_provisioning,
    simulate,
)


def make_trace(jobs: list[tuple[int, float, float, int]], *, cores: int | None = None) -> pa.Table:
    """Trace from (job_id, submit_s, run_s, cores) tuples."""
    table = pa.table(
        {
            "job_id": pa.array([j[0] for j in jobs], pa.int64()),
            "submit_s": pa.array([float(j[1]) for j in jobs], pa.float64()),
            "run_s": pa.array([float(j[2]) for j in jobs], pa.float64()),
            "cores": pa.array([j[3] for j in jobs], pa.int32()),
            "vo": pa.array(["a"] * len(jobs), pa.string()),
            "interactive": pa.array([j[2] <= 900 for j in jobs]),
        }
    )
    if cores is None:
        return table
    return with_trace_metadata(
        table, origin="1970-01-01T00:00:00+00:00", site="t", cores=cores, tau_s=900.0, provenance={}
    )


def run(trace: pa.Table, cores: int, scaler: ThresholdAutoscaler) -> SimulationResult:
    return simulate(trace, cores=cores, provisioning=scaler, warmup_jobs=0, drain_jobs=0)


def timeline(result: SimulationResult) -> list[tuple[float, int]]:
    times, sizes = result.pool_timeline
    return list(zip(times.tolist(), sizes.tolist(), strict=True))


# job 0 holds 4 cores over [0, 250); job 1 (1 core) keeps the run alive to t = 460
BURST = [(0, 0.0, 250.0, 4), (1, 450.0, 10.0, 1)]


def test_utilisation_band_trajectory() -> None:
    # Decisions every 100 s from t = 0, P0 = 4, band [0.5, 0.9], step 2, floor 2, ceiling 6:
    # t=0    no interval yet                               -> 4
    # t=100  U = 4*100 / (4*100) = 1    > 0.9              -> 6
    # t=200  U = 4*100 / (6*100) = 2/3  in the band        -> 6
    # t=300  U = 4*50  / (6*100) = 1/3  < 0.5              -> 4
    # t=400  U = 0                      < 0.5              -> 2 (the floor)
    # job 1 arrives at 450 and ends at 460: no job left, the run ends before t=500.
    scaler = ThresholdAutoscaler(
        floor=2, ceiling=6, low=0.5, high=0.9, step=2, interval_s=100.0, queue_cores=None
    )
    result = run(make_trace(BURST), 4, scaler)
    assert timeline(result) == [(0.0, 4), (100.0, 6), (300.0, 4), (400.0, 2)]
    times = [h[0] for h in scaler.history_]
    sizes = [h[1] for h in scaler.history_]
    us = [h[2] for h in scaler.history_]
    assert times == [0.0, 100.0, 200.0, 300.0, 400.0]
    assert sizes == [4, 6, 6, 4, 2]
    assert math.isnan(us[0])
    assert us[1:] == pytest.approx([1.0, 2 / 3, 1 / 3, 0.0])
    assert (scaler.decisions_, scaler.changes_) == (5, 3)
    # cost: 4*100 + 6*200 + 4*100 + 2*60 core-seconds over [0, 460]
    assert result.summary["provisioned_core_s"] == pytest.approx(400 + 1200 + 400 + 120)
    assert result.summary["provisioning"] == "threshold"


def test_cooldown_holds_the_pool() -> None:
    # As above with a 250 s cooldown: the change at 100 blocks the decisions at 200 and 300
    # (100 and 200 s after it); at 400 (300 s after) U = 0 shrinks the pool by one step.
    scaler = ThresholdAutoscaler(
        floor=2,
        ceiling=6,
        low=0.5,
        high=0.9,
        step=2,
        interval_s=100.0,
        cooldown_s=250.0,
        queue_cores=None,
    )
    result = run(make_trace(BURST), 4, scaler)
    assert timeline(result) == [(0.0, 4), (100.0, 6), (400.0, 4)]
    assert [h[1] for h in scaler.history_] == [4, 6, 6, 6, 4]
    assert scaler.history_[3][2] == pytest.approx(1 / 3)  # below the band, but cooling down


def test_cooldown_boundary_allows_a_change_exactly_at_its_end() -> None:
    scaler = ThresholdAutoscaler(
        floor=2,
        ceiling=6,
        low=0.5,
        high=0.9,
        step=2,
        interval_s=100.0,
        cooldown_s=200.0,
        queue_cores=None,
    )
    result = run(make_trace(BURST), 4, scaler)
    # change at 100; t=300 is 200 s later: U = 1/3 shrinks to 4; t=400 is 100 s later: held
    assert timeline(result) == [(0.0, 4), (100.0, 6), (300.0, 4)]


def test_queue_trigger_grows_while_jobs_are_held_back() -> None:
    # P0 = 2. Job 0 takes both cores over [0, 1000); job 1 (3 cores) arrives at 50. With
    # high = 1 only the queue can grow the pool, low = 0 never shrinks it; step 1, ceiling 5.
    # t=100: queued 3 cores, idle 0 -> held back 3 >= 1 -> 3
    # t=200: idle 1 -> held back 2 -> 4;  t=300: idle 2 -> held back 1 -> 5, job 1 starts
    # later: nothing queued, U <= 1 is never > high -> 5 to the end.
    trace = make_trace([(0, 0.0, 1000.0, 2), (1, 50.0, 100.0, 3)])
    scaler = ThresholdAutoscaler(
        floor=1, ceiling=5, low=0.0, high=1.0, step=1, interval_s=100.0, queue_cores=1
    )
    result = run(trace, 2, scaler)
    assert timeline(result) == [(0.0, 2), (100.0, 3), (200.0, 4), (300.0, 5)]
    assert result.jobs.column("start_s").to_pylist() == [0.0, 300.0]


def test_queue_threshold_in_cores() -> None:
    # the same run with queue_cores = 2: at 300 only 1 core is held back -> no growth
    trace = make_trace([(0, 0.0, 1000.0, 2), (1, 50.0, 100.0, 3)])
    scaler = ThresholdAutoscaler(
        floor=1, ceiling=5, low=0.0, high=1.0, step=1, interval_s=100.0, queue_cores=2
    )
    result = run(trace, 2, scaler)
    assert timeline(result)[:3] == [(0.0, 2), (100.0, 3), (200.0, 4)]
    assert (300.0, 5) not in timeline(result)
    assert result.jobs.column("start_s").to_pylist()[1] == 1000.0  # at job 0's end


def test_never_below_cores_in_use_nor_above_ceiling() -> None:
    # P0 = 6, job 0 holds 2 cores throughout; step 5 would cross both bounds:
    # t=100: U = 200/600 < 0.5 -> 6 - 5 = 1, but 2 cores are in use -> 2
    # t=200: U = 200/200 = 1 > 0.9 -> 2 + 5 = 7 > ceiling -> 6
    trace = make_trace([(0, 0.0, 1000.0, 2)])
    scaler = ThresholdAutoscaler(
        floor=1, ceiling=6, low=0.5, high=0.9, step=5, interval_s=100.0, queue_cores=None
    )
    result = run(trace, 6, scaler)
    assert timeline(result)[:3] == [(0.0, 6), (100.0, 2), (200.0, 6)]
    assert [h[1] for h in scaler.history_][:3] == [6, 2, 6]  # its own answers, not the engine's
    assert all(2 <= h[1] <= 6 for h in scaler.history_)


def test_first_decision_clamps_the_initial_pool_into_the_bounds() -> None:
    trace = make_trace([(0, 0.0, 50.0, 1)])
    above = run(trace, 8, ThresholdAutoscaler(floor=3, ceiling=5, interval_s=100.0))
    assert timeline(above) == [(0.0, 8), (0.0, 5)]
    below = run(trace, 1, ThresholdAutoscaler(floor=3, ceiling=5, interval_s=100.0))
    assert timeline(below) == [(0.0, 1), (0.0, 3)]


def test_step_fraction_has_the_step_as_least_change() -> None:
    # AWS's example: 25 % of 4 is 1, but a least change of 2 scales by 2
    scaler = ThresholdAutoscaler(ceiling=100, step=2, step_fraction=0.25)
    assert scaler.step_cores(4) == 2
    assert scaler.step_cores(10) == 3  # ceil(2.5)
    assert scaler.step_cores(80) == 20
    assert ThresholdAutoscaler(ceiling=100, step=3).step_cores(80) == 3


def test_decision_clock_is_the_rl_controllers() -> None:
    from gridtrace.sim.rl._elastic import next_multiple

    scaler = ThresholdAutoscaler(floor=1, ceiling=10, interval_s=900.0)
    scaler.reset(_rows(123.0))
    for after in (-math.inf, 0.0, 123.0, 124.0, 1023.0, 1023.5, 9e6 + 0.1):
        assert scaler.next_decision(after) == next_multiple(123.0, 900.0, after)
    every = ThresholdAutoscaler(floor=1, ceiling=10, interval_s=900.0, every_jobs=5)
    every.reset(_rows(10.0))
    assert every.every_starts == 5
    assert every.next_decision(-math.inf) == 10.0
    assert every.next_decision(400.0) == 1300.0


def _rows(first: float) -> JobRows:
    return JobRows(job_id=[0], submit_s=[first], run_s=[1.0], cores=[1], vo=[None])


def test_runs_are_independent_after_reset() -> None:
    scaler = ThresholdAutoscaler(
        floor=2, ceiling=6, step=2, interval_s=100.0, cooldown_s=250.0, queue_cores=None
    )
    first = timeline(run(make_trace(BURST), 4, scaler))
    second = timeline(run(make_trace(BURST), 4, scaler))
    assert first == second
    assert scaler.decisions_ == 5


def test_bounds_and_cooldown_on_a_contended_preset() -> None:
    trace = generate_preset_trace("PE-1", rng=3, size=1500)
    scaler = ThresholdAutoscaler(floor=30, ceiling=88, step=8, cooldown_s=1800.0)
    result = simulate(trace, provisioning=scaler)
    times, sizes = result.pool_timeline
    assert sizes.min() >= 30
    assert sizes.max() <= 88
    changes = times[1:]
    assert len(changes) > 2
    assert (changes[1:] - changes[:-1] >= 1800.0).all()
    assert scaler.changes_ == len(changes)


@pytest.mark.parametrize(
    "options",
    [
        {"floor": 10, "ceiling": 5},
        {"floor": -1, "ceiling": 5},
        {"ceiling": 5, "floor": 1, "low": 0.9, "high": 0.5},
        {"ceiling": 5, "floor": 1, "low": 0.5, "high": 0.5},
        {"ceiling": 5, "floor": 1, "high": 1.5},
        {"ceiling": 5, "floor": 1, "step": 0},
        {"ceiling": 5, "floor": 1, "step_fraction": 0.0},
        {"ceiling": 5, "floor": 1, "step_fraction": 1.5},
        {"ceiling": 5, "floor": 1, "interval_s": 0.0},
        {"ceiling": 5, "floor": 1, "interval_s": math.inf},
        {"ceiling": 5, "floor": 1, "cooldown_s": -1.0},
        {"ceiling": 5, "floor": 1, "queue_cores": 0},
        {"ceiling": 5, "floor": 1, "every_jobs": 0},
    ],
)
def test_bad_parameters(options: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        ThresholdAutoscaler(**options)  # type: ignore[arg-type]


def test_make_provisioning_by_name() -> None:
    assert PROVISIONING == ("fixed", "scheduled", "threshold")
    assert isinstance(make_provisioning("fixed"), FixedPool)
    assert isinstance(make_provisioning(None), FixedPool)
    pool = make_provisioning("scheduled", changes=[(10.0, 4)])
    assert isinstance(pool, ScheduledPool)
    scaler = make_provisioning("threshold", cores=80, cooldown_s=600.0)
    assert isinstance(scaler, ThresholdAutoscaler)
    assert (scaler.floor, scaler.ceiling, scaler.cooldown_s) == (30, 88, 600.0)
    small = make_provisioning("threshold", cores=20)
    assert isinstance(small, ThresholdAutoscaler)
    assert (small.floor, small.ceiling) == (20, 22)
    assert make_provisioning(scaler) is scaler
    with pytest.raises(ConfigError, match="known: fixed, scheduled, threshold"):
        make_provisioning("elastic")
    with pytest.raises(ConfigError, match="ceiling"):
        make_provisioning("threshold")
    with pytest.raises(ConfigError, match="bad option"):
        make_provisioning("threshold", cores=80, stepsize=3)
    with pytest.raises(ConfigError):
        make_provisioning("fixed", cores=80, size=3)


# --- best static pool ------------------------------------------------------------------------

# two 100 s single-core jobs submitted together:
# P=1: W = (1 + 0.5) / 2 = 0.75, U = 200 / 200 = 1, cost 200 core-s
# P=2: W = 1,                    U = 200 / 200 = 1, cost 200 core-s
# P=3: W = 1,                    U = 200 / 300,     cost 300 core-s
PAIR = [(0, 0.0, 100.0, 1), (1, 0.0, 100.0, 1)]


def test_best_static_pool_hand_computed() -> None:
    search = best_static_pool(
        make_trace(PAIR), lambda_e=0.5, sizes=[3, 1, 2], warmup_jobs=0, drain_jobs=0
    )
    assert [r.size for r in search.scores] == [1, 2, 3]
    assert [r.w_mean for r in search.scores] == pytest.approx([0.75, 1.0, 1.0])
    assert [r.utilisation for r in search.scores] == pytest.approx([1.0, 1.0, 2 / 3])
    assert [r.objective for r in search.scores] == pytest.approx([0.875, 1.0, 5 / 6])
    assert [r.provisioned_core_h for r in search.scores] == pytest.approx(
        [200 / 3600, 200 / 3600, 300 / 3600]
    )
    assert search.best_size == 2
    assert search.best.objective == pytest.approx(1.0)
    # the interactive class: both jobs run 100 s <= 900 s
    assert search.score_of(1).w_interactive_mean == pytest.approx(0.75)
    assert search.score_of(1).wait_interactive_mean_s == pytest.approx(50.0)
    table = search.to_table()
    assert table.column("chosen").to_pylist() == [False, True, False]
    assert search.describe()["best_size"] == 2


def test_best_static_pool_ties_go_to_the_cheaper_size() -> None:
    # lambda_e = 0 scores U alone: P=1 and P=2 both reach 1
    search = best_static_pool(make_trace(PAIR), lambda_e=0.0, sizes=[1, 2, 3])
    assert search.best_size == 1
    # lambda_e = 1 scores W alone: P=2 and P=3 both reach 1
    assert best_static_pool(make_trace(PAIR), lambda_e=1.0, sizes=[1, 2, 3]).best_size == 2


def test_best_within_a_cost() -> None:
    search = best_static_pool(make_trace(PAIR), sizes=[1, 2, 3], keep_results=True)
    assert set(search.results) == {1, 2, 3}
    within = search.best_within(200 / 3600, metric="w_mean")
    assert within is not None
    assert within.size == 2
    assert search.best_within(0.01) is None
    top = search.best_within(1.0, metric="w_interactive_mean")
    assert top is not None
    assert top.size == 2  # 2 and 3 tie at W = 1: the cheaper


def test_best_static_pool_skips_sizes_below_the_largest_job() -> None:
    trace = make_trace([(0, 0.0, 100.0, 3), (1, 10.0, 50.0, 1)])
    search = best_static_pool(trace, sizes=[2, 3, 4])
    assert [r.feasible for r in search.scores] == [False, True, True]
    assert search.score_of(2).objective is None
    assert search.best_size in (3, 4)
    with pytest.raises(SimulationError, match="largest job"):
        best_static_pool(trace, sizes=[1, 2])


def test_best_static_pool_grid() -> None:
    trace = make_trace(PAIR, cores=10)
    # floor 30 is capped at P = 10; ceiling round(1.1 * 10) = 11
    assert [r.size for r in best_static_pool(trace).scores] == [10, 11]
    grid = best_static_pool(trace, floor=2, ceiling=10, levels=3)
    assert [r.size for r in grid.scores] == [2, 6, 10]
    assert [r.size for r in best_static_pool(trace, floor=1, ceiling=4).scores] == [1, 2, 3, 4]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"lambda_e": 1.5}, "lambda_e"),
        ({"sizes": []}, "sizes"),
        ({"sizes": [0, 1]}, "sizes"),
        ({"cores": 4}, "cores"),
        ({"provisioning": FixedPool()}, "provisioning"),
        ({"floor": 5, "ceiling": 4}, "floor"),
        ({"floor": 1, "ceiling": 4, "levels": 1}, "levels"),
    ],
)
def test_best_static_pool_bad_options(options: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        best_static_pool(make_trace(PAIR), **options)  # type: ignore[arg-type]


def test_best_static_pool_needs_a_ceiling_without_metadata() -> None:
    with pytest.raises(ConfigError, match="metadata"):
        best_static_pool(make_trace(PAIR))
