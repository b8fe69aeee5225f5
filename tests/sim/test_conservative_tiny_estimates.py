"""Conservative backfilling with estimates too small to move a start time (start + r̂ == start).

Such an estimate is positive, so the job is not a zero-length one (which holds the instant of its
start), but its window ends where it starts: its reservation holds nothing, in the event loop's
:class:`~gridtrace.sim.ConservativeBackfilling` as in both kernels. The incremental kernel used to
insert a second breakpoint at the same time and take the cores there (found by
``test_conservative_estimates``: a 3-core job with r̂ = 1e-79 started at 1 instead of 2).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridtrace.sim import ConservativeBackfilling, JobRows, WalltimeEstimator, run_events
from gridtrace.sim._kernels import conservative_starts

_TINY = [1e-300, 1e-79, 1e-20, 1e-16]  # below the spacing of the floats at 1 and above


def _run(
    jobs: list[tuple[int, int, int, int]], total: int, tiny: list[int]
) -> tuple[list[float], list[int], JobRows, list[float]]:
    """Rows (sorted by submit, then id), each job's walltime, and the event loop's schedule.

    ``tiny[k] > 0`` gives job k a tiny walltime; ``tiny[k] == 0`` a walltime of run + offset
    (the runtime where that is not positive).
    """
    jobs = sorted(jobs, key=lambda j: j[0])
    wall = [_TINY[tiny[k] - 1] if tiny[k] else float(j[1] + j[3]) for k, j in enumerate(jobs)]
    rows = JobRows(
        job_id=list(range(len(jobs))),
        submit_s=[float(j[0]) for j in jobs],
        run_s=[float(j[1]) for j in jobs],
        cores=[min(j[2], total) for j in jobs],
        vo=["a"] * len(jobs),
        walltime_req_s=wall,
    )
    est = WalltimeEstimator(missing="oracle")
    ref = run_events(rows, total_cores=total, policy=ConservativeBackfilling(), estimator=est)
    guess = [est.estimate(k, 0.0) for k in range(len(rows))]
    return ref.start_s, ref.elected, rows, guess


def _kernel(rows: JobRows, guess: list[float], total: int, *, incremental: bool) -> list[float]:
    start, _ = conservative_starts(
        np.asarray(rows.submit_s),
        np.asarray(rows.run_s),
        np.asarray(guess, dtype=np.float64),
        np.asarray(rows.cores, dtype=np.int64),
        total,
        incremental=incremental,
    )
    out: list[float] = start.tolist()
    return out


def test_a_job_with_an_absorbed_estimate_reserves_nothing() -> None:
    # 4 cores; at 1: a zero-length job, a 3-core job whose walltime vanishes in 1 + 1e-79, and a
    # 1-core job; the 3-core one waits for the long job started at 0 (the event loop: at 2)
    jobs = [(0, 2, 1, 0), (1, 0, 1, 0), (1, 0, 3, 0), (1, 1, 1, 0)]
    ref, _, rows, guess = _run(jobs, 4, [0, 0, 2, 0])
    assert ref == [0.0, 1.0, 2.0, 1.0]
    assert _kernel(rows, guess, 4, incremental=True) == ref
    assert _kernel(rows, guess, 4, incremental=False) == ref


@settings(max_examples=300, deadline=None)
@given(
    jobs=st.lists(
        st.tuples(
            st.integers(0, 30),  # submit: ties frequent
            st.sampled_from([0, 0, 1, 2, 5, 9, 20]),  # zero-length jobs among them
            st.integers(1, 8),  # cores (clipped to P; P itself: full-machine jobs)
            st.integers(-10, 20),  # walltime − run: early ends, overruns, exact
        ),
        min_size=1,
        max_size=50,
    ),
    total=st.integers(1, 8),
    tiny=st.lists(st.integers(0, len(_TINY)), min_size=50, max_size=50),
)
def test_absorbed_estimates_equal_the_event_loop(
    jobs: list[tuple[int, int, int, int]], total: int, tiny: list[int]
) -> None:
    ref, elected, rows, guess = _run(jobs, total, tiny)
    fast, order = conservative_starts(
        np.asarray(rows.submit_s),
        np.asarray(rows.run_s),
        np.asarray(guess, dtype=np.float64),
        np.asarray(rows.cores, dtype=np.int64),
        total,
    )
    assert fast.tolist() == ref
    assert order.tolist() == elected
    assert _kernel(rows, guess, total, incremental=False) == ref


@pytest.mark.parametrize("seed", range(3))
def test_kernels_agree_on_a_long_trace_with_absorbed_estimates(seed: int) -> None:
    # long queues (reservations kept and reordered across many events), a tenth of the
    # estimates vanishing at the submit times' magnitude
    rng = np.random.default_rng(seed)
    n = 1500
    total = 32
    submit = np.sort(np.round(rng.uniform(0.0, 10_000.0, n)))
    run = np.round(rng.exponential(200.0, n))
    cores = (2 ** rng.integers(0, 6, n)).astype(np.int64)
    est = np.round(run * rng.uniform(0.5, 3.0, n))
    est[rng.random(n) < 0.1] = 1e-30
    a = conservative_starts(submit, run, est, cores, total, incremental=True)
    b = conservative_starts(submit, run, est, cores, total, incremental=False)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
