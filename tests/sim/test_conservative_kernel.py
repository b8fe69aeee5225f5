"""The conservative-backfilling kernels give exactly the start times of the event loop.

The reference is :class:`~gridtrace.sim.ConservativeBackfilling` in :func:`run_events` (the
readable implementation, unchanged); the kernels are :func:`conservative_starts` (incremental,
which ``simulate`` uses on a fixed pool with a static estimator, and the rebuilding one).

The property tests take more examples with GRIDTRACE_HYPOTHESIS_SCALE (a factor on every
``max_examples`` here), e.g. ``GRIDTRACE_HYPOTHESIS_SCALE=20 pytest --hypothesis-seed=7 ...``.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gridtrace.sim import (
    ConservativeBackfilling,
    JobRows,
    ScheduledPool,
    WalltimeEstimator,
    run_events,
    simulate,
)
from gridtrace.sim._kernels import conservative_starts

_SCALE = max(1, int(os.environ.get("GRIDTRACE_HYPOTHESIS_SCALE", "1")))


def _examples(n: int) -> int:
    return n * _SCALE


jobs_strategy = st.lists(
    st.tuples(
        st.integers(0, 40),  # submit: small integers, so that ties are frequent
        st.integers(0, 25),  # run (zero-length jobs included)
        st.integers(1, 8),  # cores (clipped to P below)
        st.integers(-25, 20),  # estimate − run: under- and over-estimates, and exact ones
    ),
    min_size=1,
    max_size=60,
)


def _rows(jobs: list[tuple[int, int, int, int]], total: int, seed: int) -> JobRows:
    rng = np.random.default_rng(seed)
    ids = rng.permutation(len(jobs))
    order = np.lexsort((ids, [j[0] for j in jobs]))
    return JobRows(
        job_id=ids[order].tolist(),
        submit_s=[float(jobs[k][0]) for k in order],
        run_s=[float(jobs[k][1]) for k in order],
        cores=[min(jobs[k][2], total) for k in order],
        vo=["a"] * len(jobs),
        # the walltime estimator takes positive walltimes only (others fall back to the runtime)
        walltime_req_s=[float(jobs[k][1] + jobs[k][3]) for k in order],
    )


def _kernel(
    rows: JobRows, total: int, estimate: list[float], *, incremental: bool
) -> tuple[list[float], list[int]]:
    start, elected = conservative_starts(
        np.asarray(rows.submit_s),
        np.asarray(rows.run_s),
        np.asarray(estimate, dtype=np.float64),
        np.asarray(rows.cores, dtype=np.int64),
        total,
        incremental=incremental,
    )
    return start.tolist(), elected.tolist()


def _both(
    rows: JobRows, total: int, estimate: list[float], estimator: WalltimeEstimator | None
) -> tuple[tuple[list[float], list[int]], tuple[list[float], list[int]]]:
    """The event loop's (start times, election order) and the incremental kernel's.

    The rebuilding kernel must give the same; checked here too.
    """
    ref = run_events(rows, total_cores=total, policy=ConservativeBackfilling(), estimator=estimator)
    fast = _kernel(rows, total, estimate, incremental=True)
    assert _kernel(rows, total, estimate, incremental=False) == fast
    return (ref.start_s, ref.elected), fast


def _walltime_guess(rows: JobRows) -> tuple[WalltimeEstimator, list[float]]:
    est = WalltimeEstimator(missing="oracle")
    est.reset(rows)
    return est, [est.estimate(k, 0.0) for k in range(len(rows))]


@settings(max_examples=_examples(500), deadline=None)
@given(jobs=jobs_strategy, total=st.integers(1, 8), seed=st.integers(0, 2**16))
def test_kernel_equals_event_loop_oracle(
    jobs: list[tuple[int, int, int, int]], total: int, seed: int
) -> None:
    rows = _rows(jobs, total, seed)
    ref, fast = _both(rows, total, list(rows.run_s), None)
    assert fast == ref  # same start times and same election order


@settings(max_examples=_examples(500), deadline=None)
@given(jobs=jobs_strategy, total=st.integers(1, 8), seed=st.integers(0, 2**16))
# found by this test against a kernel that skipped events with no core free: a job overruns its
# walltime while the pool is full, its cores count as free now, and the policy places (gives first
# reservations to) waiting jobs at that event although none of them can start
@example(
    jobs=[
        (0, 0, 1, 0),
        (0, 0, 1, 0),
        (0, 0, 4, 0),
        (0, 20, 1, 0),
        (0, 0, 1, 0),
        (0, 0, 1, 0),
        (0, 15, 3, 0),
        (0, 9, 3, -1),
        (0, 14, 1, 0),
        (28, 0, 1, 0),
    ],
    total=4,
    seed=1,
)
def test_kernel_equals_event_loop_walltime(
    jobs: list[tuple[int, int, int, int]], total: int, seed: int
) -> None:
    # estimates above and below the runtimes: jobs end early (the profile is compressed) or
    # overrun their reservations (an overdue estimated end counts as now)
    rows = _rows(jobs, total, seed)
    est, guess = _walltime_guess(rows)
    ref, fast = _both(rows, total, guess, est)
    assert fast == ref


def _jobs(
    size: int, submit_max: int, run_max: int, over: tuple[int, int]
) -> st.SearchStrategy[list[tuple[int, int, int, int]]]:
    return st.lists(
        st.tuples(
            st.integers(0, submit_max),
            st.integers(0, run_max),
            st.integers(1, 8),
            st.integers(*over),
        ),
        min_size=1,
        max_size=size,
    )


@settings(max_examples=_examples(300), deadline=None)
@given(jobs=_jobs(60, 40, 25, (1, 40)), total=st.integers(1, 8), seed=st.integers(0, 2**16))
def test_kernel_equals_event_loop_early_ends(
    jobs: list[tuple[int, int, int, int]], total: int, seed: int
) -> None:
    # every walltime above the runtime: every job with a positive runtime ends before its
    # estimated end, so the kept profile is compressed at nearly every completion
    rows = _rows(jobs, total, seed)
    est, guess = _walltime_guess(rows)
    ref, fast = _both(rows, total, guess, est)
    assert fast == ref


@settings(max_examples=_examples(300), deadline=None)
@given(jobs=_jobs(60, 40, 25, (-25, -1)), total=st.integers(1, 8), seed=st.integers(0, 2**16))
def test_kernel_equals_event_loop_overdue(
    jobs: list[tuple[int, int, int, int]], total: int, seed: int
) -> None:
    # every walltime below the runtime (or missing, then the runtime): jobs run past their
    # estimated end, their cores count as free now, and reservations placed on them go stale
    rows = _rows(jobs, total, seed)
    est, guess = _walltime_guess(rows)
    ref, fast = _both(rows, total, guess, est)
    assert fast == ref


@settings(max_examples=_examples(30), deadline=None)
@given(
    jobs=_jobs(400, 600, 60, (-30, 60)),
    total=st.integers(4, 16),
    seed=st.integers(0, 2**16),
    oracle=st.booleans(),
)
def test_kernel_equals_event_loop_long_traces(
    jobs: list[tuple[int, int, int, int]], total: int, seed: int, oracle: bool
) -> None:
    # long queues: many reservations kept across many events (oracle: nothing ever ends early,
    # so only the stale and reordered reservations are re-placed)
    rows = _rows(jobs, total, seed)
    if oracle:
        ref, fast = _both(rows, total, list(rows.run_s), None)
    else:
        est, guess = _walltime_guess(rows)
        ref, fast = _both(rows, total, guess, est)
    assert fast == ref


@pytest.mark.parametrize("seed", range(3))
def test_kernels_agree_on_a_busy_synthetic_trace(seed: int) -> None:
    # a long, overloaded trace (over a thousand jobs queued at once), oracle and over/under
    # estimates: the incremental kernel against the rebuilding one (the event loop is too slow)
    rng = np.random.default_rng(seed)
    n = 2000
    total = 64
    submit = np.sort(np.round(rng.uniform(0.0, 20_000.0, n)))
    run = np.round(rng.exponential(300.0, n))
    cores = (2 ** rng.integers(0, 7, n)).astype(np.int64)
    for est in (run, np.round(run * rng.uniform(0.3, 3.0, n))):
        a = conservative_starts(submit, run, est, cores, total, incremental=True)
        b = conservative_starts(submit, run, est, cores, total, incremental=False)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])


def test_kernel_reproduces_the_reservation_order_case() -> None:
    # the case of test_policies.py that rebuilding in queue order got wrong
    run = [0, 0, 0, 4, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0]
    cores = [1, 1, 1, 1, 1, 1, 3, 1, 4, 1, 1, 3, 1, 1, 1, 1, 1, 1, 3]
    submit = [0.0] * 17 + [1.0, 1.0]
    n = len(run)
    rows = JobRows(list(range(n)), submit, [float(r) for r in run], cores, ["a"] * n)
    ref, fast = _both(rows, 4, [float(r) for r in run], None)
    assert fast == ref
    assert fast[0][18] == 4.0


def _table(n: int, seed: int, *, walltime: bool) -> pa.Table:
    rng = np.random.default_rng(seed)
    run = np.round(rng.exponential(300.0, n))
    cols = {
        "job_id": pa.array(np.arange(n, dtype=np.int64)),
        "submit_s": pa.array(np.round(np.cumsum(rng.exponential(20.0, n)))),
        "run_s": pa.array(run),
        "cores": pa.array((2 ** rng.integers(0, 5, n)).astype(np.int32)),
        "interactive": pa.array(run <= 900.0),
    }
    if walltime:
        cols["walltime_req_s"] = pa.array(run * rng.uniform(0.5, 3.0, n))
    return pa.table(cols)


@pytest.mark.parametrize("estimator", ["oracle", "walltime"])
def test_simulate_uses_the_kernel_with_the_same_result(estimator: str) -> None:
    table = _table(3000, 3, walltime=True)
    opts = {"missing": "oracle"} if estimator == "walltime" else {}
    kw = {"cores": 32, "policy": "conservative", "estimator": estimator}
    fast = simulate(table, estimator_options=opts, **kw)  # type: ignore[arg-type]
    slow = simulate(table, estimator_options=opts, fast_path=False, **kw)  # type: ignore[arg-type]
    assert fast.summary["engine"] == "conservative-kernel"
    assert slow.summary["engine"] == "events"
    assert fast.jobs.column("start_s").to_pylist() == slow.jobs.column("start_s").to_pylist()
    assert fast.summary["estimator_settings"] == slow.summary["estimator_settings"]


def test_simulate_falls_back_where_the_kernel_does_not_apply() -> None:
    table = _table(300, 4, walltime=False)
    # an estimator learning from completions is not static
    out = simulate(table, cores=32, policy="conservative", estimator="median")
    assert out.summary["engine"] == "events"
    # an elastic pool
    pool = ScheduledPool([(0.0, 32), (1000.0, 40)])
    out = simulate(table, cores=32, policy="conservative", provisioning=pool)
    assert out.summary["engine"] == "events"


@settings(max_examples=_examples(300), deadline=None)
@given(
    jobs=_jobs(120, 60, 25, (-25, 30)),
    total=st.integers(1, 8),
    zero=st.lists(st.booleans(), min_size=120, max_size=120),
)
def test_kernels_agree_with_zero_estimates(
    jobs: list[tuple[int, int, int, int]], total: int, zero: list[bool]
) -> None:
    # zero estimates for jobs that do run (their estimated end passes at once, and their
    # reservation holds only the instant of their start), mixed with over- and under-estimates;
    # any finite estimate is allowed, so this compares the two kernels directly
    jobs = sorted(jobs)
    submit = np.array([float(j[0]) for j in jobs])
    run = np.array([float(j[1]) for j in jobs])
    cores = np.array([min(j[2], total) for j in jobs], dtype=np.int64)
    est = np.array([0.0 if zero[k] else float(max(j[1] + j[3], 0)) for k, j in enumerate(jobs)])
    a = conservative_starts(submit, run, est, cores, total, incremental=True)
    b = conservative_starts(submit, run, est, cores, total, incremental=False)
    assert a[0].tolist() == b[0].tolist()
    assert a[1].tolist() == b[1].tolist()


@settings(max_examples=_examples(300), deadline=None)
@given(
    jobs=st.lists(
        st.tuples(
            st.integers(0, 4),  # a handful of submit times: most jobs arrive together
            st.sampled_from([0, 0, 0, 1, 2, 5, 9, 17]),  # many zero runtimes
            st.integers(1, 8),
            st.integers(-20, 30),  # estimates below and above the runtimes
        ),
        min_size=1,
        max_size=80,
    ),
    total=st.integers(1, 8),
    seed=st.integers(0, 2**16),
)
def test_kernel_equals_event_loop_on_bursts_of_short_jobs(
    jobs: list[tuple[int, int, int, int]], total: int, seed: int
) -> None:
    # bursts: equal submit times (ties broken by job id), zero runtimes, jobs ending early and
    # overrunning their estimates at the same instants
    rows = _rows(jobs, total, seed)
    est, guess = _walltime_guess(rows)
    ref, fast = _both(rows, total, guess, est)
    assert fast == ref


@settings(max_examples=_examples(200), deadline=None)
@given(
    jobs=_jobs(60, 30, 20, (-15, 30)),
    total=st.integers(1, 6),
    wide=st.lists(st.integers(1, 3), min_size=60, max_size=60),
    is_wide=st.lists(st.booleans(), min_size=60, max_size=60),
    seed=st.integers(0, 2**16),
)
def test_jobs_wider_than_the_pool_never_start_and_change_nothing(
    jobs: list[tuple[int, int, int, int]],
    total: int,
    wide: list[int],
    is_wide: list[bool],
    seed: int,
) -> None:
    # a job needing more cores than the pool never fits: both kernels leave it unstarted, and
    # every other job starts when it would without it (the event loop, on the trace without it)
    rows = _rows(jobs, total, seed)
    n = len(rows)
    width = [total + wide[k] if is_wide[k] else rows.cores[k] for k in range(n)]
    _, guess = _walltime_guess(rows)
    args = (
        np.asarray(rows.submit_s),
        np.asarray(rows.run_s),
        np.asarray(guess, dtype=np.float64),
        np.asarray(width, dtype=np.int64),
        total,
    )
    inc = conservative_starts(*args, incremental=True)
    reb = conservative_starts(*args, incremental=False)
    np.testing.assert_array_equal(inc[0], reb[0])  # NaN where a job never starts
    assert inc[1].tolist() == reb[1].tolist()
    keep = [k for k in range(n) if width[k] <= total]
    assert all(np.isnan(inc[0][k]) for k in range(n) if width[k] > total)
    assert set(inc[1].tolist()) == set(keep)
    if not keep:
        return
    assert rows.walltime_req_s is not None
    narrow = JobRows(
        job_id=[rows.job_id[k] for k in keep],
        submit_s=[rows.submit_s[k] for k in keep],
        run_s=[rows.run_s[k] for k in keep],
        cores=[rows.cores[k] for k in keep],
        vo=["a"] * len(keep),
        walltime_req_s=[rows.walltime_req_s[k] for k in keep],
    )
    est_narrow, _ = _walltime_guess(narrow)
    ref = run_events(
        narrow, total_cores=total, policy=ConservativeBackfilling(), estimator=est_narrow
    )
    assert [float(inc[0][k]) for k in keep] == ref.start_s
    assert [keep.index(r) for r in inc[1].tolist()] == ref.elected
