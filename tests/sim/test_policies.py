"""Hand-checked five-job schedules for every policy, estimators and provisioning."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pyarrow as pa
import pytest

from gridtrace.errors import ConfigError, SimulationError
from gridtrace.sim import (
    ESTIMATORS,
    POLICIES,
    ClassMedianEstimator,
    ClusterState,
    JobRows,
    QueueView,
    ScheduledPool,
    WalltimeEstimator,
    make_policy,
    run_events,
    simulate,
)

Job = tuple[int, float, float, int]


def make_trace(
    jobs: list[Job],
    *,
    vo: list[str] | None = None,
    walltime: list[float] | None = None,
    wait: list[float] | None = None,
) -> pa.Table:
    """Trace from (job_id, submit_s, run_s, cores) tuples."""
    n = len(jobs)
    return pa.table(
        {
            "job_id": pa.array([j[0] for j in jobs], pa.int64()),
            "submit_s": pa.array([float(j[1]) for j in jobs], pa.float64()),
            "run_s": pa.array([float(j[2]) for j in jobs], pa.float64()),
            "cores": pa.array([j[3] for j in jobs], pa.int32()),
            "walltime_req_s": pa.array(walltime or [None] * n, pa.float64()),
            "vo": pa.array(vo or ["a"] * n, pa.string()),
            "interactive": pa.array([j[2] <= 900 for j in jobs]),
            "wait_s": pa.array(wait or [None] * n, pa.float64()),
        }
    )


def starts(trace: pa.Table, cores: int, policy: str, **kwargs: object) -> dict[int, float]:
    result = simulate(trace, cores=cores, policy=policy, warmup_jobs=0, drain_jobs=0, **kwargs)  # type: ignore[arg-type]
    jobs = result.jobs
    return dict(zip(jobs["job_id"].to_pylist(), jobs["start_s"].to_pylist(), strict=True))


# Trace A, P = 4 (job: submit, run, cores)
#   J0: 0, 10, 2    J1: 1, 4, 4    J2: 2, 2, 1    J3: 3, 7, 2    J4: 4, 1, 1
# For every non-strict rank the first decisions are forced: J0 starts at 0 (free 2); J1 (4 cores)
# never fits before 10; at 2 J2 is the only fitting job and starts (free 1); at 3 J3 (2 cores)
# does not fit. At 4 J2 ends (free 2) and J4 arrives: the fitting jobs are J3 and J4, and the
# rank decides:
#   J4 first ("short"): J4 runs 4-5, J3 then fits at 5 (runs 5-12), J1 waits for 4 cores: 12.
#   J3 first ("long"): J3 runs 4-11 (free 0); at 10 J0 ends (free 2): J4 fits, runs 10-11; at 11
#   J3 and J4 end and J1 starts.
TRACE_A = [(0, 0, 10, 2), (1, 1, 4, 4), (2, 2, 2, 1), (3, 3, 7, 2), (4, 4, 1, 1)]
SHORT_FIRST = {0: 0.0, 1: 12.0, 2: 2.0, 3: 5.0, 4: 4.0}
LONG_FIRST = {0: 0.0, 1: 11.0, 2: 2.0, 3: 4.0, 4: 10.0}


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        # r̂: J3 7, J4 1 -> J4 first
        ("sjf", SHORT_FIRST),
        # -r̂ -> J3 first
        ("ljf", LONG_FIRST),
        # cores: J4 1 < J3 2
        ("smallest-first", SHORT_FIRST),
        ("largest-first", LONG_FIRST),
        # at 4: J3 (1 + 7) / 7 = 1.14 > J4 (0 + 1) / 1 = 1
        ("hrrn", LONG_FIRST),
        # at 4: J3 (1/7)^3 * 2 = 0.0058 > J4 0
        ("wfp3", LONG_FIRST),
        # J4 is serial: log2(1) = 0, infinite priority
        ("unicep", SHORT_FIRST),
        # J3: log10(7)*2 + 870 log10(3) = 416.8 < J4: 0 + 870 log10(4) = 523.8
        ("f1", LONG_FIRST),
        # W* = 0.9: deadlines J3 3 + 7/9 = 3.78 < J4 4 + 1/9 = 4.11
        ("edf", LONG_FIRST),
        # one resource: Packer = largest fitting job first
        ("packer", LONG_FIRST),
    ],
)
def test_ranked_policies_trace_a(policy: str, expected: dict[int, float]) -> None:
    assert starts(make_trace(TRACE_A), 4, policy) == expected


def test_tetris_trace_a() -> None:
    # knob 0.5, u = 1 s, at 4 with free 2 of P = 4:
    # J3: 0.5 * 2*2/16 + 0.5 * 1/7 = 0.196;  J4: 0.5 * 2*1/16 + 0.5 * 1/1 = 0.5625 -> J4 first.
    trace = make_trace(TRACE_A)
    assert starts(trace, 4, "tetris", policy_options={"time_unit_s": 1.0}) == SHORT_FIRST
    # u = 60 s: both runtime terms are 0.5, the packing term decides: J3 0.625 > J4 0.5625
    assert starts(trace, 4, "tetris") == LONG_FIRST


def test_fairshare_trace_a() -> None:
    # VOs a, b, a, b, a with targets 1:1. At 4 VO a has used J0 (2 cores x 4 s) and J2, b nothing:
    # b's deficit 0.5 - 0 beats a's 0.5 - 1, so J3 (b) starts before J4 (a).
    vo = ["a", "b", "a", "b", "a"]
    trace = make_trace(TRACE_A, vo=vo)
    assert starts(trace, 4, "fairshare", vo_shares={"a": 1, "b": 1}) == LONG_FIRST
    # with VO b's jobs swapped to a and J4 to b, J4 (b) goes first
    vo = ["a", "a", "a", "a", "b"]
    trace = make_trace(TRACE_A, vo=vo)
    assert starts(trace, 4, "fairshare", vo_shares={"a": 1, "b": 1}) == SHORT_FIRST


def test_fairshare_needs_shares() -> None:
    with pytest.raises(ConfigError, match="vo_shares"):
        simulate(make_trace(TRACE_A), cores=4, policy="fairshare")


def test_strict_variants_trace_a() -> None:
    trace = make_trace(TRACE_A)
    # fifo: J1 blocks everyone until J0 ends at 10; at 14 J2, J3, J4 all fit.
    assert starts(trace, 4, "fifo") == {0: 0.0, 1: 10.0, 2: 14.0, 3: 14.0, 4: 14.0}
    # sjf-strict: at 2 rank J2 (2), J1 (4): J2 fits, J1 stops the scan; at 4 rank J4, J1, J3:
    # J4 starts, J1 stops it; J1 starts at 10, J3 at 14.
    assert starts(trace, 4, "sjf-strict") == {0: 0.0, 1: 10.0, 2: 2.0, 3: 14.0, 4: 4.0}
    # ljf-strict: at 2 J1 (4) ranks first and blocks J2; at 3 J3 (7) ranks first and fits
    # (free 2): 3-10; at 10 J0 and J3 end: J1 10-14; at 14 J2 and J4.
    assert starts(trace, 4, "ljf-strict") == {0: 0.0, 1: 10.0, 2: 14.0, 3: 3.0, 4: 14.0}


def test_backfilling_trace_a() -> None:
    trace = make_trace(TRACE_A)
    # greedy first-fit: J2 at 2; at 4 J3 fits first in queue order (4-11); at 10 J4 fits (free 2,
    # J1 needs 4); J1 only at 11, after J0's reservation time 10: no reservation.
    ff = {0: 0.0, 1: 11.0, 2: 2.0, 3: 4.0, 4: 10.0}
    assert starts(trace, 4, "greedy-first-fit") == ff
    assert starts(trace, 4, "greedy-first-fit", fast_path=False) == ff
    # EASY: head J1's shadow time is 10 (J0's end), E = 0. At 2: J2 ends at 4 <= 10, backfilled.
    # At 4: J3 would end at 11 > 10 and E = 0: not backfilled; J4 ends at 5 <= 10: backfilled.
    # J1 starts at 10 as reserved; J3 after J1, at 14.
    easy = {0: 0.0, 1: 10.0, 2: 2.0, 3: 14.0, 4: 4.0}
    assert starts(trace, 4, "easy") == easy
    assert starts(trace, 4, "easy", fast_path=False) == easy
    # conservative: J1 reserved [10, 14); J2 fits before 10 (2-4); J3 (2 cores, 7 s) would overlap
    # J1's reservation from 4, so it is reserved at 14; J4 fits in 4-5.
    assert starts(trace, 4, "conservative") == easy


# Trace B, P = 4: EASY and conservative differ.
#   K0: 0, 10, 3    K1: 1, 5, 2    K2: 2, 5, 2    K3: 3, 20, 1    K4: 4, 1, 1
TRACE_B = [(0, 0, 10, 3), (1, 1, 5, 2), (2, 2, 5, 2), (3, 3, 20, 1), (4, 4, 1, 1)]


def test_easy_and_conservative_trace_b() -> None:
    trace = make_trace(TRACE_B)
    # EASY: head K1 (2 cores) has shadow 10 with E = 4 - 2 = 2 extra cores. At 3 K3 ends at 23 >
    # 10 but uses 1 <= E cores: it starts (free 0). At 10 K0 ends (free 3): K1 starts; head K2's
    # shadow is 15 (K1's end; free 1 + 2), E = 1; K4 ends at 11 <= 15: starts at 10. K2 at 15.
    easy = {0: 0.0, 1: 10.0, 2: 15.0, 3: 3.0, 4: 10.0}
    assert starts(trace, 4, "easy") == easy
    assert starts(trace, 4, "easy", fast_path=False) == easy
    # conservative: K1 and K2 are both reserved on [10, 15) (2 + 2 cores); K3 (20 s) would cross
    # it, so it is reserved at 15; K4 (1 s, 1 core) fits 4-5 before 10.
    assert starts(trace, 4, "conservative") == {0: 0.0, 1: 10.0, 2: 10.0, 3: 15.0, 4: 4.0}
    # greedy first-fit starts K3 at 3 and K4 at 10 as EASY does here.
    assert starts(trace, 4, "greedy-first-fit") == easy


def test_random_is_seeded_and_picks_among_fitting() -> None:
    trace = make_trace(TRACE_A)
    # the only free choice is at 4 (J3 or J4): every run is one of the two schedules
    seen = []
    for seed in range(12):
        got = starts(trace, 4, "random", rng=seed)
        assert got in (SHORT_FIRST, LONG_FIRST)
        assert starts(trace, 4, "random", rng=seed) == got  # reproducible
        seen.append(got == SHORT_FIRST)
    assert any(seen)
    assert not all(seen)
    with pytest.raises(ConfigError, match="Generator"):
        simulate(trace, cores=4, policy="random")


def test_native_replays_logged_starts() -> None:
    # logged waits 0, 9, 1, 0, 2 -> starts 0, 10, 3, 3, 6 whatever P is; peak cores 2 + 1 + 2 = 5
    trace = make_trace(TRACE_A, wait=[0, 9, 1, 0, 2])
    result = simulate(trace, cores=4, policy="native", warmup_jobs=0, drain_jobs=0)
    assert result.jobs["start_s"].to_pylist() == [0.0, 10.0, 3.0, 3.0, 6.0]
    assert result.summary["engine"] == "as-logged"
    assert result.summary["as_logged_peak_cores"] == 5
    with pytest.raises(SimulationError, match="wait_s"):
        simulate(make_trace(TRACE_A), cores=4, policy="native")


def test_every_registered_policy_has_a_hand_check() -> None:
    checked = {
        "fifo", "sjf", "sjf-strict", "ljf", "ljf-strict", "smallest-first", "largest-first",
        "hrrn", "wfp3", "unicep", "f1", "edf", "fairshare", "easy", "conservative",
        "greedy-first-fit", "packer", "tetris", "random", "native",
    }  # fmt: skip
    assert set(POLICIES) == checked


def test_unknown_policy_option() -> None:
    with pytest.raises(ConfigError, match="unknown policy option"):
        make_policy("sjf", knobb=1)


# --- estimators -------------------------------------------------------------------------------


def _rows(jobs: list[Job], vo: list[str | None]) -> JobRows:
    return JobRows(
        [j[0] for j in jobs],
        [float(j[1]) for j in jobs],
        [float(j[2]) for j in jobs],
        [j[3] for j in jobs],
        vo,
    )


def test_class_median_sees_only_completed_jobs_in_window() -> None:
    jobs = [(0, 0, 10, 1), (1, 0, 30, 1), (2, 0, 50, 1), (3, 0, 7, 1), (4, 0, 1, 1)]
    est = ClassMedianEstimator(window_s=100.0, prior_s=900.0)
    est.reset(_rows(jobs, ["a", "a", "a", "b", "c"]))
    assert est.estimate(0, 5.0) == 900.0  # nothing completed: the prior
    est.observe(0, 10.0)
    # job 0 (a, 10 s) completed at 10: seen from 10 on, by its class and the others
    assert est.estimate(1, 10.0) == 10.0
    assert est.estimate(3, 10.0) == 10.0  # b has nothing: median of all classes
    est.observe(1, 30.0)
    est.observe(2, 50.0)
    assert est.estimate(0, 50.0) == 30.0  # a: 10, 30, 50
    est.observe(3, 60.0)
    assert est.estimate(3, 60.0) == 7.0  # b: 7
    # at 125 job 0 (end 10) left the window [25, 125]: a is 30, 50 -> 40
    assert est.estimate(0, 125.0) == 40.0
    # at 200 only job 3 (end 60) is out too; nothing of a left: all classes -> nothing -> prior
    assert est.estimate(0, 200.0) == 900.0
    assert est.sources == {"class": 4, "all": 1, "prior": 2}


def test_class_median_by_vo_and_interactive_flag() -> None:
    # the research's classes: (VO, interactive); same VO, different flag -> different medians
    jobs = [(0, 0, 100, 1), (1, 0, 5000, 1), (2, 0, 200, 1), (3, 0, 7000, 1)]
    rows = dataclasses.replace(_rows(jobs, ["a"] * 4), interactive=[True, False, True, False])
    est = ClassMedianEstimator(by=("vo", "interactive"))
    est.reset(rows)
    est.observe(0, 100.0)
    est.observe(1, 5000.0)
    assert est.estimate(2, 5000.0) == 100.0
    assert est.estimate(3, 5000.0) == 5000.0


def test_sjf_with_median_estimates_differs_from_oracle() -> None:
    # P = 1. Jobs 0 (VO a, 10 s) and 1 (VO b, 100 s) at 0; jobs 2 (a, 500 s) and 3 (b, 5 s) at 1.
    # Oracle SJF: 0 runs 0-10; at 10 the shortest is 3 (10-15), then 1 (15-115), then 2 (115).
    jobs = [(0, 0, 10, 1), (1, 0, 100, 1), (2, 1, 500, 1), (3, 1, 5, 1)]
    trace = make_trace(jobs, vo=["a", "b", "a", "b"])
    assert starts(trace, 1, "sjf") == {0: 0.0, 1: 15.0, 2: 115.0, 3: 10.0}
    # Class medians: at 0 nothing has completed, all are the prior: tie, job 0 first. At 10 job 0
    # (a, 10 s) has completed: job 2 (a) is 10, jobs 1 and 3 (b, no data) the all-class median 10:
    # a tie broken by (submit, id): job 1 runs 10-110. At 110 a's median is 10, b's is 100:
    # job 2 runs 110-610, then job 3 at 610.
    median = starts(trace, 1, "sjf", estimator="median")
    assert median == {0: 0.0, 1: 10.0, 2: 110.0, 3: 610.0}


def test_walltime_estimator() -> None:
    # EASY on trace A with walltimes: J0 asks 20 s, so J1's shadow time is 20; J3 (asks 8 s) then
    # ends by 12 <= 20 and is backfilled at 4; J4 (asks 1) waits: 1 free core is left at 4? No: J3
    # takes both free cores at 4; J4 fits at 10 when J0 ends (estimated end 10 + 1 <= 20).
    # J0 ends at 10 (free 2): J1 still needs 4; at 11 J3 and J4 end: J1 starts at 11.
    trace = make_trace(TRACE_A, walltime=[20, 4, 2, 8, 1])
    expected = {0: 0.0, 1: 11.0, 2: 2.0, 3: 4.0, 4: 10.0}
    assert starts(trace, 4, "easy", estimator="walltime") == expected
    assert starts(trace, 4, "easy", estimator="walltime", fast_path=False) == expected
    with pytest.raises(SimulationError, match="walltime"):
        simulate(make_trace(TRACE_A), cores=4, policy="sjf", estimator="walltime")
    result = simulate(
        make_trace(TRACE_A),
        cores=4,
        policy="sjf",
        estimator=WalltimeEstimator(missing="oracle"),
        warmup_jobs=0,
        drain_jobs=0,
    )
    assert result.summary["estimator_settings"]["oracle_fallback_jobs"] == 5
    assert set(ESTIMATORS) == {"oracle", "median", "walltime"}


def test_unknown_estimator() -> None:
    with pytest.raises(ConfigError, match="known: median, oracle, walltime"):
        simulate(make_trace(TRACE_A), cores=4, estimator="psychic")


# --- state features ---------------------------------------------------------------------------


class _Recorder:
    """FIFO that records the state features at each decision."""

    name = "recorder"

    def __init__(self) -> None:
        self.seen: list[tuple[float, object]] = []

    def select(self, queue: QueueView, state: ClusterState, now: float) -> list[int]:
        self.seen.append((now, state.features()))
        return make_policy("fifo").select(queue, state, now)  # type: ignore[return-value]


def test_state_features_are_maintained() -> None:
    trace = make_trace(TRACE_A, vo=["a", "b", "a", "b", "a"])
    rec = _Recorder()
    simulate(trace, cores=4, policy=rec, warmup_jobs=0, drain_jobs=0)
    at = {t: f for t, f in rec.seen}
    f = at[4.0]  # J0 runs (2 cores, ends 10); J1..J4 queue (FIFO blocks on J1)
    assert f.in_use == 2
    assert f.idle_cores == 2
    assert f.pool_size == 4
    assert f.running_work_s == 2 * (10 - 4)
    assert f.next_free_in_s == 6.0
    assert f.backlog_work_s == 4 * 4 + 1 * 2 + 2 * 7 + 1 * 1
    assert f.queue_length == 4
    assert f.vo_queue_shares == {"b": 0.5, "a": 0.5}
    f = at[10.0]  # J0 ended; J1 not yet started when the features are read
    assert f.in_use == 0
    assert f.running_work_s == 0.0
    assert math.isinf(f.next_free_in_s)


# --- provisioning -----------------------------------------------------------------------------


def test_scheduled_pool() -> None:
    # P starts at 1; at 5 the pool grows to 3, at 20 it is asked to shrink to 0 (clamped to the
    # cores in use), at 40 it grows to 2.
    # J0 (0, 10 s, 1 core) runs 0-10. J1 (1, 8 s, 2 cores) cannot fit in 1 core; at 5 the pool is 3:
    # J1 runs 5-13. J2 (2, 30 s, 1 core) waits behind J1 (FIFO) and starts at 10 (free 1 of 3),
    # runs 10-40. At 20 the pool is asked for 0 but J2 holds 1: pool 1. J3 (21, 1 s, 1 core) waits:
    # at 40 J2 ends and the pool becomes 2: J3 runs 40-41.
    jobs = [(0, 0, 10, 1), (1, 1, 8, 2), (2, 2, 30, 1), (3, 21, 1, 1)]
    pool = ScheduledPool([(5.0, 3), (20.0, 0), (40.0, 2)])
    result = simulate(make_trace(jobs), cores=1, provisioning=pool, warmup_jobs=0, drain_jobs=0)
    assert result.jobs["start_s"].to_pylist() == [0.0, 5.0, 10.0, 40.0]
    series = result.summary["pool_size"]
    assert series == {"time_s": [0.0, 5.0, 20.0, 40.0], "size": [1, 3, 1, 2]}
    # provisioned over [0, 41]: 1*5 + 3*15 + 1*20 + 2*1 = 72 core-s; used 10 + 16 + 30 + 1 = 57
    assert result.summary["provisioned_core_s"] == 72.0
    assert result.summary["elastic_utilisation"] == pytest.approx(57 / 72)


def test_pool_too_small_forever() -> None:
    rows = _rows([(0, 0, 1, 3)], [None])
    fifo = make_policy("fifo")
    with pytest.raises(SimulationError, match="idle cluster"):
        run_events(rows, total_cores=2, policy=fifo, provisioning=ScheduledPool([(5.0, 2)]))


def test_features_of_recorded_policy_rows_are_lists() -> None:
    rows = _rows(TRACE_A, ["a"] * 5)
    out = run_events(rows, total_cores=4, policy=make_policy("easy"))
    assert out.start_s == [0.0, 10.0, 2.0, 14.0, 4.0]
    assert out.elected == [0, 2, 4, 1, 3]
    assert out.pool == [(0.0, 4)]


def test_kernel_matches_events_on_numpy_inputs() -> None:
    rng = np.random.default_rng(3)
    trace = make_trace(
        [(k, float(t), float(r), int(c)) for k, (t, r, c) in enumerate(zip(
            np.sort(rng.integers(0, 300, 400)), rng.integers(0, 60, 400), rng.integers(1, 9, 400),
            strict=True))]
    )  # fmt: skip
    for policy in ("easy", "greedy-first-fit"):
        fast = simulate(
            trace, cores=8, policy=policy, vo_shares={"a": 1}, warmup_jobs=0, drain_jobs=0
        )
        slow = simulate(
            trace, cores=8, policy=policy, vo_shares={"a": 1}, warmup_jobs=0, drain_jobs=0,
            fast_path=False,
        )  # fmt: skip
        assert fast.summary["engine"].endswith("kernel")
        assert fast.jobs.equals(slow.jobs)


def test_fairshare_decayed_usage() -> None:
    # One VO holds 2 cores from 0 to H (one half-life): dU/dt = -λU + 2 gives
    # U(H) = 2 (1 - 1/2) / λ = H / ln 2. At 2H, idle since H, it has halved.
    half = 100.0
    rows = _rows([(0, 0, half, 2), (1, 2 * half, 1, 1)], ["a", "b"])
    policy = make_policy("fairshare", vo_shares={"a": 1, "b": 1}, half_life_s=half)
    run_events(rows, total_cores=2, policy=policy)
    usage = policy.usage  # type: ignore[attr-defined]
    assert usage["a"] == pytest.approx(half / math.log(2) / 2)
    assert usage.get("b", 0.0) == 0.0  # b's job started at 2H: nothing accrued before that


def test_conservative_never_starts_a_job_after_its_first_reservation() -> None:
    # found by the property test: at t = 1 job 18 (3 cores, 0 s) is reserved at 4 (+ float steps
    # of the zero-length jobs ahead) and job 17 (1 core, 7 s) after job 8 at 11; at t = 4 the
    # zero-length holds are gone and job 17 now fits at 4. Rebuilding in queue order put job 17
    # first and pushed job 18 to 11; rebuilding in reservation order keeps job 18 at 4.
    run = [0, 0, 0, 4, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0]
    cores = [1, 1, 1, 1, 1, 1, 3, 1, 4, 1, 1, 3, 1, 1, 1, 1, 1, 1, 3]
    submit = [0.0] * 17 + [1.0, 1.0]
    n = len(run)
    rows = JobRows(list(range(n)), submit, [float(r) for r in run], cores, ["a"] * n)
    policy = make_policy("conservative")
    out = run_events(rows, total_cores=4, policy=policy)
    for row, reserved in policy.reservations.items():  # type: ignore[attr-defined]
        assert out.start_s[row] <= reserved
    assert out.start_s[18] == 4.0
