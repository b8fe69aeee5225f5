"""Invariants of every policy on random traces, and the numba kernel against the event loop."""

from __future__ import annotations

import bisect
import heapq

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridtrace.sim import (
    POLICIES,
    ConservativeBackfilling,
    EasyBackfilling,
    JobRows,
    OracleEstimator,
    ScheduledPool,
    WalltimeEstimator,
    backfill_starts,
    make_policy,
    run_events,
)

job_lists = st.lists(
    st.tuples(
        st.integers(0, 40),  # submit: small integers, so that ties are frequent
        st.integers(0, 25),  # run (zero-length jobs included)
        st.integers(1, 6),  # cores (clipped to P below)
        st.sampled_from(["a", "b", "c"]),
    ),
    min_size=1,
    max_size=30,
)


def _rows(jobs: list[tuple[int, int, int, str]], total: int, seed: int) -> JobRows:
    rng = np.random.default_rng(seed)
    ids = rng.permutation(len(jobs))
    order = np.lexsort((ids, [j[0] for j in jobs]))
    return JobRows(
        job_id=ids[order].tolist(),
        submit_s=[float(jobs[k][0]) for k in order],
        run_s=[float(jobs[k][1]) for k in order],
        cores=[min(jobs[k][2], total) for k in order],
        vo=[jobs[k][3] for k in order],
    )


def _check_invariants(
    rows: JobRows, start: list[float], elected: list[int], pool: list[tuple[float, int]]
) -> None:
    submit = np.asarray(rows.submit_s)
    s = np.asarray(start)
    assert np.all(np.isfinite(s))  # every job ran
    assert sorted(elected) == list(range(len(rows)))  # exactly once
    assert np.all(s >= submit)  # never before its submit
    assert np.all(np.diff(s[elected]) >= 0)  # elections in time order
    # replay the elections: at each start, the jobs that ended by then (completions first) have
    # released their cores, and each job holds its cores for exactly run_s
    times = [t for t, _ in pool]
    held: list[tuple[float, int]] = []
    in_use = 0
    for row in elected:
        t = start[row]
        while held and held[0][0] <= t:
            in_use -= heapq.heappop(held)[1]
        size = pool[bisect.bisect_right(times, t) - 1][1]
        in_use += rows.cores[row]
        assert in_use <= size
        heapq.heappush(held, (t + rows.run_s[row], rows.cores[row]))


DETERMINISTIC = sorted(set(POLICIES) - {"random", "native"})
WORK_CONSERVING = {"sjf", "ljf", "smallest-first", "largest-first", "hrrn", "wfp3", "unicep"}
WORK_CONSERVING |= {"f1", "edf", "fairshare", "packer", "tetris", "greedy-first-fit", "random"}


def _check_work_conserving(rows: JobRows, start: list[float], total: int) -> None:
    """After every instant's decision, no waiting job fits in the idle cores."""
    submit = np.asarray(rows.submit_s)
    s = np.asarray(start)
    end = s + np.asarray(rows.run_s)
    need = np.asarray(rows.cores)
    for t in np.unique(np.concatenate([submit, s, end])):
        idle = total - need[(s <= t) & (end > t)].sum()
        waiting = (submit <= t) & (s > t)
        assert np.all(need[waiting] > idle), f"a job waits at {t} with {idle} idle cores"


@pytest.mark.parametrize("name", DETERMINISTIC)
@settings(max_examples=60, deadline=None)
@given(jobs=job_lists, total=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_policy_invariants(
    name: str, jobs: list[tuple[int, int, int, str]], total: int, seed: int
) -> None:
    rows = _rows(jobs, total, seed)
    policy = make_policy(name, vo_shares={"a": 2, "b": 1})
    out = run_events(rows, total_cores=total, policy=policy)
    _check_invariants(rows, out.start_s, out.elected, out.pool)
    if name in WORK_CONSERVING:
        _check_work_conserving(rows, out.start_s, total)
    if name == "fifo":
        assert out.elected == list(range(len(rows)))  # FIFO order
    if isinstance(policy, EasyBackfilling | ConservativeBackfilling):
        # with exact estimates no job starts after the reservation it first received (EASY: the
        # head's shadow time; conservative: every job's reservation)
        for row, reserved in policy.reservations.items():
            assert out.start_s[row] <= reserved


@settings(max_examples=60, deadline=None)
@given(jobs=job_lists, total=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_random_policy_invariants(
    jobs: list[tuple[int, int, int, str]], total: int, seed: int
) -> None:
    rows = _rows(jobs, total, seed)
    policy = make_policy("random", rng=np.random.default_rng(seed))
    out = run_events(rows, total_cores=total, policy=policy)
    _check_invariants(rows, out.start_s, out.elected, out.pool)
    _check_work_conserving(rows, out.start_s, total)


@settings(max_examples=60, deadline=None)
@given(
    jobs=job_lists,
    seed=st.integers(0, 2**16),
    changes=st.lists(st.tuples(st.integers(0, 60), st.integers(0, 8)), max_size=5),
)
def test_elastic_pool_invariants(
    jobs: list[tuple[int, int, int, str]], seed: int, changes: list[tuple[int, int]]
) -> None:
    steps = dict(changes)
    steps[70] = 6  # in the end the pool fits every job
    rows = _rows(jobs, 6, seed)
    pool = ScheduledPool([(float(t), size) for t, size in steps.items()])
    out = run_events(rows, total_cores=3, policy=make_policy("easy"), provisioning=pool)
    _check_invariants(rows, out.start_s, out.elected, out.pool)


@settings(max_examples=200, deadline=None)
@given(
    jobs=job_lists,
    total=st.integers(1, 8),
    seed=st.integers(0, 2**16),
    over=st.lists(st.integers(1, 30), min_size=30, max_size=30),
)
def test_kernel_matches_reference(
    jobs: list[tuple[int, int, int, str]], total: int, seed: int, over: list[int]
) -> None:
    # the numba kernel and the readable policies give identical starts and election order, with
    # oracle estimates and with over-estimates (walltimes above the runtime)
    rows = _rows(jobs, total, seed)
    submit = np.asarray(rows.submit_s)
    run = np.asarray(rows.run_s)
    need = np.asarray(rows.cores, dtype=np.int64)
    wall = run + np.asarray(over[: len(rows)], dtype=np.float64)
    for reserve, name in ((True, "easy"), (False, "greedy-first-fit")):
        for estimate, estimator in ((run, OracleEstimator()), (wall, WalltimeEstimator())):
            start, elected = backfill_starts(submit, run, estimate, need, total, reserve=reserve)
            with_wall = JobRows(
                rows.job_id, rows.submit_s, rows.run_s, rows.cores, rows.vo,
                walltime_req_s=estimate.tolist(),
            )  # fmt: skip
            ref = run_events(
                with_wall, total_cores=total, policy=make_policy(name), estimator=estimator
            )
            np.testing.assert_array_equal(start, np.asarray(ref.start_s))
            assert elected.tolist() == ref.elected
