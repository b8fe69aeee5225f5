"""The conservative-backfilling kernel gives exactly the start times of the event loop.

The reference is :class:`~gridtrace.sim.ConservativeBackfilling` in :func:`run_events` (the
readable implementation, unchanged); the kernel is :func:`conservative_starts`, which
``simulate`` uses on a fixed pool with a static estimator.
"""

from __future__ import annotations

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


def _both(
    rows: JobRows, total: int, estimate: list[float], estimator: WalltimeEstimator | None
) -> tuple[tuple[list[float], list[int]], tuple[list[float], list[int]]]:
    ref = run_events(rows, total_cores=total, policy=ConservativeBackfilling(), estimator=estimator)
    start, elected = conservative_starts(
        np.asarray(rows.submit_s),
        np.asarray(rows.run_s),
        np.asarray(estimate, dtype=np.float64),
        np.asarray(rows.cores, dtype=np.int64),
        total,
    )
    return (ref.start_s, ref.elected), (start.tolist(), elected.tolist())


@settings(max_examples=500, deadline=None)
@given(jobs=jobs_strategy, total=st.integers(1, 8), seed=st.integers(0, 2**16))
def test_kernel_equals_event_loop_oracle(
    jobs: list[tuple[int, int, int, int]], total: int, seed: int
) -> None:
    rows = _rows(jobs, total, seed)
    ref, fast = _both(rows, total, list(rows.run_s), None)
    assert fast == ref  # same start times and same election order


@settings(max_examples=500, deadline=None)
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
    est = WalltimeEstimator(missing="oracle")
    est.reset(rows)
    guess = [est.estimate(k, 0.0) for k in range(len(rows))]
    ref, fast = _both(rows, total, guess, est)
    assert fast == ref


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
