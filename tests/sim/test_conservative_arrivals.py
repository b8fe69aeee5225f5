"""Conservative backfilling: jobs arriving while held jobs wait to be re-placed after an early end.

After a job ends before its estimated end, the incremental kernel re-places the held jobs only
until none of them can start; the others are re-placed (compressed) when a new job arrives,
before the new job gets its first reservation. These tests build traces where that happens at
nearly every arrival (a backlog of jobs that cannot start, walltimes above the runtimes, and
arrivals between the completions) and check the start times and the election order against the
readable policy in the event loop (:class:`~gridtrace.sim.ConservativeBackfilling`), and, on
traces too long for the event loop, against the rebuilding kernel.

More examples with GRIDTRACE_HYPOTHESIS_SCALE (a factor on every ``max_examples``).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridtrace.sim import ConservativeBackfilling, JobRows, WalltimeEstimator, run_events
from gridtrace.sim._kernels import conservative_starts

_SCALE = max(1, int(os.environ.get("GRIDTRACE_HYPOTHESIS_SCALE", "1")))


def _examples(n: int) -> int:
    return n * _SCALE


def _rows(
    submit: list[int], run: list[int], cores: list[int], walltime: list[int], seed: int
) -> JobRows:
    """Rows sorted by (submit, job id), ids a seeded permutation (ties in both orders)."""
    ids = np.random.default_rng(seed).permutation(len(submit))
    order = np.lexsort((ids, submit))
    return JobRows(
        job_id=ids[order].tolist(),
        submit_s=[float(submit[k]) for k in order],
        run_s=[float(run[k]) for k in order],
        cores=[cores[k] for k in order],
        vo=["a"] * len(submit),
        walltime_req_s=[float(walltime[k]) for k in order],
    )


def _compare(rows: JobRows, total: int) -> tuple[list[float], list[int]]:
    """Assert the event loop and both kernels agree (walltime estimates); return the kernel's."""
    est = WalltimeEstimator(missing="oracle")
    est.reset(rows)
    guess = np.asarray([est.estimate(k, 0.0) for k in range(len(rows))], dtype=np.float64)
    ref = run_events(rows, total_cores=total, policy=ConservativeBackfilling(), estimator=est)
    args = (
        np.asarray(rows.submit_s),
        np.asarray(rows.run_s),
        guess,
        np.asarray(rows.cores, dtype=np.int64),
        total,
    )
    inc = conservative_starts(*args, incremental=True)
    reb = conservative_starts(*args, incremental=False)
    fast = (inc[0].tolist(), inc[1].tolist())
    assert fast == (reb[0].tolist(), reb[1].tolist())
    assert fast == (ref.start_s, ref.elected)  # same start times, same election order
    return fast


def test_a_job_arriving_after_an_early_end_is_placed_after_the_compressed_backlog() -> None:
    # P = 4. A (4 cores, runs 10 s of an estimated 100) holds the pool; B (4 cores) is reserved
    # at 100 and C (2 cores) at 150. A ends at 10: B moves to 10 and starts; C (re-placed after
    # B's estimated end, 60) cannot start, so the kernel stops before it. D (1 core) arrives at
    # 11: C has to be placed first (at 60), then D beside it at 60. B ends early at 15: C and D
    # start at 15.
    rows = _rows(
        submit=[0, 1, 2, 11],
        run=[10, 5, 3, 1],
        cores=[4, 4, 2, 1],
        walltime=[100, 50, 3, 1],
        seed=0,
    )
    start, elected = _compare(rows, 4)
    assert start == [0.0, 10.0, 15.0, 15.0]  # rows in submit order: A, B, C, D
    assert elected == [0, 1, 2, 3]


@settings(max_examples=_examples(300), deadline=None)
@given(
    backlog=st.lists(
        st.tuples(st.integers(1, 30), st.integers(2, 8), st.integers(1, 60)),
        min_size=1,
        max_size=15,
    ),
    arrivals=st.lists(
        st.tuples(
            st.integers(1, 120),  # submit, after the backlog
            st.integers(0, 20),  # run
            st.integers(1, 8),  # cores
            st.integers(0, 40),  # walltime − run: early ends (0: exact)
        ),
        min_size=1,
        max_size=40,
    ),
    total=st.integers(2, 8),
    seed=st.integers(0, 2**16),
)
def test_arrivals_between_early_ends_equal_the_event_loop(
    backlog: list[tuple[int, int, int]],
    arrivals: list[tuple[int, int, int, int]],
    total: int,
    seed: int,
) -> None:
    # a backlog of wide jobs submitted at 0 with walltimes far above their runtimes (every one
    # ends early, so the held jobs are compressed at each completion), then jobs arriving one by
    # one or together between the completions, some narrow enough to backfill
    submit = [0] * len(backlog) + [a[0] for a in arrivals]
    run = [b[0] for b in backlog] + [a[1] for a in arrivals]
    cores = [min(b[1], total) for b in backlog] + [min(a[2], total) for a in arrivals]
    walltime = [b[0] + b[2] for b in backlog] + [a[1] + a[3] for a in arrivals]
    _compare(_rows(submit, run, cores, walltime, seed), total)


@settings(max_examples=_examples(200), deadline=None)
@given(
    jobs=st.lists(
        st.tuples(
            st.integers(0, 200),
            st.integers(0, 30),
            st.integers(1, 8),
            st.sampled_from([0, 1, 5, 20, 60, 200]),  # walltime − run, often far above
        ),
        min_size=1,
        max_size=80,
    ),
    total=st.integers(2, 8),
    seed=st.integers(0, 2**16),
)
def test_overloaded_queues_with_early_ends_equal_the_event_loop(
    jobs: list[tuple[int, int, int, int]], total: int, seed: int
) -> None:
    # arrivals spread over time into an overloaded pool, walltimes from exact to far too long
    _compare(
        _rows(
            [j[0] for j in jobs],
            [j[1] for j in jobs],
            [min(j[2], total) for j in jobs],
            [j[1] + j[3] for j in jobs],
            seed,
        ),
        total,
    )


@pytest.mark.parametrize(
    ("seed", "n"),
    [(0, 800)] + [pytest.param(seed, 3000, marks=pytest.mark.slow) for seed in range(1, 5)],
)
def test_kernels_agree_on_a_long_backlog_with_early_ends(seed: int, n: int) -> None:
    # a queue of hundreds held at once, walltimes 1–20× the runtimes (as in CTC-SP2 with the
    # users' estimates): the incremental kernel against the rebuilding one
    rng = np.random.default_rng(seed)
    total = 128
    submit = np.sort(np.round(rng.uniform(0.0, 20.0 * n, n)))
    run = np.round(rng.exponential(900.0, n))
    cores = np.minimum(np.round(2 ** rng.uniform(0, 7.5, n)), total).astype(np.int64)
    est = np.round(run * rng.uniform(1.0, 20.0, n)) + rng.integers(0, 2, n)
    a = conservative_starts(submit, run, est, cores, total, incremental=True)
    b = conservative_starts(submit, run, est, cores, total, incremental=False)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.isnan(a[0]).any()  # every job fits the pool, so every one starts
