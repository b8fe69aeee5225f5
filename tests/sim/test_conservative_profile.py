"""The incremental conservative kernel's profile operations against linear-scan oracles.

The earliest-fit query works on 64-bit masks of the breakpoints short of the job's cores and goes
from run to run (:func:`_cons_fit`); the searches are branch-free halvings. These tests give them
random profiles (up to several words of breakpoints, runs crossing word boundaries, windows ending
exactly on a breakpoint, zero-length windows, a full machine, jobs wider than the machine) with
garbage in the spare slots past the used breakpoints, and compare with the linear scans the kernel
used before (:func:`_cons_earliest`, :func:`_cons_reserve`) or plain Python. Whole schedules with
profiles of more than one word, with early ends, are compared with the readable policy in the event
loop.

More examples with GRIDTRACE_HYPOTHESIS_SCALE (a factor on every ``max_examples``).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from gridtrace.sim import ConservativeBackfilling, JobRows, WalltimeEstimator, run_events
from gridtrace.sim._kernels import conservative_starts
from gridtrace.sim._kernels_jit import (
    _WORD,
    _cons_earliest,
    _cons_find_end,
    _cons_fit,
    _cons_fits_now,
    _cons_lower_bound,
    _cons_place,
    _cons_release,
    _cons_reserve,
)

_SCALE = max(1, int(os.environ.get("GRIDTRACE_HYPOTHESIS_SCALE", "1")))


def _examples(n: int) -> int:
    return n * _SCALE


@st.composite
def profiles(draw: st.DrawFn) -> tuple[NDArray[np.float64], NDArray[np.int64], int, int]:
    """(times, pfree, m, total): ``m`` used breakpoints, strictly increasing times (small integer
    steps, so that window ends often fall on a breakpoint), free cores in 0..total, and garbage
    past ``m`` (the spare slots a mask reads)."""
    total = draw(st.integers(1, 12))
    m = draw(st.integers(1, 3 * _WORD + 5))
    steps = draw(st.lists(st.integers(1, 4), min_size=m - 1, max_size=m - 1))
    start = draw(st.integers(0, 50))
    shape = draw(st.sampled_from(["random", "full", "empty", "rising"]))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    if shape == "full":
        free = np.zeros(m, dtype=np.int64)
        free[-1] = total
    elif shape == "empty":
        free = np.full(m, total, dtype=np.int64)
    elif shape == "rising":
        free = np.sort(rng.integers(0, total + 1, m)).astype(np.int64)
    else:
        free = rng.integers(0, total + 1, m).astype(np.int64)
    size = m + 2 * _WORD + 8
    times = rng.uniform(-1e6, 1e6, size)  # garbage past m
    times[rng.random(size) < 0.1] = np.nan
    pfree = rng.integers(-5, total + 5, size).astype(np.int64)
    times[:m] = start + np.concatenate([[0.0], np.cumsum(steps, dtype=np.float64)])
    pfree[:m] = free
    return times, pfree, m, total


queries = st.tuples(
    st.integers(1, 14),  # cores: up to wider than any machine drawn
    st.one_of(st.just(0.0), st.integers(1, 40).map(float), st.floats(0.1, 600.0)),
)


@settings(max_examples=_examples(400), deadline=None)
@given(profile=profiles(), query=queries)
def test_fit_is_the_linear_scans_earliest_fit(
    profile: tuple[NDArray[np.float64], NDArray[np.int64], int, int], query: tuple[int, float]
) -> None:
    times, pfree, m, _ = profile
    need, dur = query
    assert _cons_fit(times, pfree, m, need, dur) == _cons_earliest(times, pfree, m, need, dur)


@settings(max_examples=_examples(400), deadline=None)
@given(profile=profiles(), query=queries)
def test_place_reserves_as_the_linear_scan_does(
    profile: tuple[NDArray[np.float64], NDArray[np.int64], int, int], query: tuple[int, float]
) -> None:
    times, pfree, m, _ = profile
    need, dur = query
    t1, f1 = times.copy(), pfree.copy()
    at, m1 = _cons_place(t1, f1, m, need, dur)
    t2, f2 = times.copy(), pfree.copy()
    expect = _cons_earliest(t2, f2, m, need, dur)
    m2 = m
    if expect >= 0:
        end = t2[expect] + dur if dur > 0 else float(np.nextafter(t2[expect], np.inf))
        m2 = _cons_reserve(t2, f2, m, expect, end, need)
    assert (at, m1) == (expect, m2)
    np.testing.assert_array_equal(t1[:m1], t2[:m2])
    np.testing.assert_array_equal(f1[:m1], f2[:m2])


@settings(max_examples=_examples(400), deadline=None)
@given(profile=profiles(), query=queries)
def test_fits_now_is_a_linear_check_from_now(
    profile: tuple[NDArray[np.float64], NDArray[np.int64], int, int], query: tuple[int, float]
) -> None:
    times, pfree, m, _ = profile
    need, dur = query
    end = times[0] + dur if dur > 0 else float(np.nextafter(times[0], np.inf))
    expect = all(pfree[k] >= need for k in range(m) if times[k] < end)
    assert _cons_fits_now(times, pfree, m, need, dur) == expect
    # the first breakpoint is now: a fit from now is an earliest fit at index 0
    assert expect == (_cons_earliest(times, pfree, m, need, dur) == 0)


@settings(max_examples=_examples(400), deadline=None)
@given(
    profile=profiles(),
    first=st.integers(0, 3 * _WORD + 5),
    offset=st.one_of(st.integers(-3, 3 * _WORD * 4).map(float), st.floats(-10.0, 1000.0)),
)
def test_searches_are_numpys_left_insertion_point(
    profile: tuple[NDArray[np.float64], NDArray[np.int64], int, int],
    first: int,
    offset: float,
) -> None:
    times, _, m, _ = profile
    first = min(first, m)
    t = times[0] + offset  # equal to a breakpoint when an integer offset lands on one
    expect = first + int(np.searchsorted(times[first:m], t, side="left"))
    assert _cons_lower_bound(times, first, m, t) == expect
    assert _cons_find_end(times, first, m, t) == expect


def _release_oracle(
    times: NDArray[np.float64], pfree: NDArray[np.int64], m: int, pos: float, dur: float, need: int
) -> tuple[list[float], list[int]]:
    """The profile after giving back ``need`` cores over ``[max(pos, now), end)``, in Python."""
    t = [float(x) for x in times[:m]]
    f = [int(x) for x in pfree[:m]]
    end = pos + dur if dur > 0 else float(np.nextafter(pos, np.inf))
    s = max(pos, t[0])
    if end <= s:
        return t, f
    for point in (s, end):
        if point > t[0] and point not in t:
            k = next((i for i, x in enumerate(t) if x > point), len(t))
            t.insert(k, point)
            f.insert(k, f[k - 1])
    for i, x in enumerate(t):
        if s <= x < end:
            f[i] += need
    return t, f


@settings(max_examples=_examples(400), deadline=None)
@given(
    profile=profiles(),
    pos_offset=st.one_of(st.integers(-20, 3 * _WORD * 4).map(float), st.floats(-20.0, 900.0)),
    dur=st.one_of(st.just(0.0), st.integers(1, 60).map(float), st.floats(0.1, 900.0)),
    need=st.integers(1, 12),
)
def test_release_gives_the_cores_back_over_the_window_from_now(
    profile: tuple[NDArray[np.float64], NDArray[np.int64], int, int],
    pos_offset: float,
    dur: float,
    need: int,
) -> None:
    times, pfree, m, _ = profile
    pos = times[0] + pos_offset
    t, f = times.copy(), pfree.copy()
    m1 = _cons_release(t, f, m, pos, dur, need)
    expect_t, expect_f = _release_oracle(times, pfree, m, pos, dur, need)
    assert t[:m1].tolist() == expect_t
    assert f[:m1].tolist() == expect_f


# --- whole schedules with profiles of more than one word --------------------------------------


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
        walltime_req_s=[float(jobs[k][1] + jobs[k][3]) for k in order],
    )


def _compare(rows: JobRows, total: int) -> None:
    est = WalltimeEstimator(missing="oracle")
    est.reset(rows)
    guess = [est.estimate(k, 0.0) for k in range(len(rows))]
    ref = run_events(rows, total_cores=total, policy=ConservativeBackfilling(), estimator=est)
    args = (
        np.asarray(rows.submit_s),
        np.asarray(rows.run_s),
        np.asarray(guess, dtype=np.float64),
        np.asarray(rows.cores, dtype=np.int64),
        total,
    )
    inc = conservative_starts(*args, incremental=True)
    assert inc[0].tolist() == ref.start_s
    assert inc[1].tolist() == ref.elected


@settings(max_examples=_examples(25), deadline=None)
@given(
    jobs=st.lists(
        st.tuples(
            st.integers(0, 300),  # submit: a dense burst, so that the queue grows long
            st.integers(0, 90),  # run
            st.integers(1, 6),  # cores
            st.integers(-20, 200),  # walltime − run: mostly early ends
        ),
        min_size=50,
        max_size=300,
    ),
    total=st.integers(6, 24),
    seed=st.integers(0, 2**16),
)
def test_long_profiles_with_early_ends_equal_the_event_loop(
    jobs: list[tuple[int, int, int, int]], total: int, seed: int
) -> None:
    # distinct estimates over a long queue give profiles of more than 64 breakpoints, so the
    # earliest-fit query crosses mask words, and early ends compress them at most completions
    _compare(_rows(jobs, total, seed), total)


@pytest.mark.parametrize("seed", range(3))
def test_a_long_backlog_spans_several_mask_words(seed: int) -> None:
    # many narrow jobs with varied walltimes on a wide machine: hundreds of breakpoints
    rng = np.random.default_rng(seed)
    n = 600
    run = rng.integers(1, 400, n)
    jobs = [
        (int(s), int(r), int(c), int(x))
        for s, r, c, x in zip(
            np.sort(rng.integers(0, 800, n)),
            run,
            rng.choice([1, 1, 2, 4, 8, 16], n),
            rng.integers(0, 500, n),
            strict=True,
        )
    ]
    _compare(_rows(jobs, 48, seed), 48)


def test_portable_trailing_zeros_matches_numbas_intrinsic() -> None:
    """The fallback for a numba without ``trailing_zeros`` counts the same bits."""
    import numba

    from gridtrace.sim._kernels_jit import _ctz as trailing_zeros
    from gridtrace.sim._kernels_jit import portable_trailing_zeros

    @numba.njit
    def both(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        fast = np.empty(len(words), np.uint64)
        slow = np.empty(len(words), np.uint64)
        for i in range(len(words)):
            fast[i] = trailing_zeros(words[i])
            slow[i] = portable_trailing_zeros(words[i])
        return fast, slow

    rng = np.random.default_rng(7)
    words = rng.integers(0, 2**63, 500, dtype=np.uint64) << rng.integers(0, 64, 500).astype(
        np.uint64
    )
    words = np.concatenate([words, np.uint64(1) << np.arange(64, dtype=np.uint64)])
    fast, slow = both(words[words != 0])
    np.testing.assert_array_equal(fast, slow)
    assert portable_trailing_zeros.py_func(np.uint64(0)) == 64
