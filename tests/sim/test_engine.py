"""Hand-checked schedules, errors and property tests of the strict-FIFO simulator."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridtrace.errors import ConfigError, SimulationError
from gridtrace.schema import SIM_RESULT, validate, with_trace_metadata
from gridtrace.sim import (
    POLICIES,
    ClusterState,
    FifoPolicy,
    JobRows,
    fifo_multi_core_starts,
    fifo_single_core_starts,
    run_events,
    simulate,
)


def make_trace(jobs: list[tuple[int, float, float, int]], *, cores: int | None = None) -> pa.Table:
    """Trace from (job_id, submit_s, run_s, cores) tuples, in the given row order."""
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


def starts_by_id(trace: pa.Table, cores: int, *, fast_path: bool) -> dict[int, float]:
    result = simulate(trace, cores=cores, warmup_jobs=0, drain_jobs=0, fast_path=fast_path)
    jobs = result.jobs
    return dict(zip(jobs["job_id"].to_pylist(), jobs["start_s"].to_pylist(), strict=True))


BOTH = pytest.mark.parametrize("fast_path", [True, False], ids=["kernel", "events"])


@BOTH
def test_single_core_schedule(fast_path: bool) -> None:
    # P = 2. Jobs 0 and 1 start at once; job 2 takes the core job 1 frees at 5; job 3 the core
    # job 2 frees at 8 (job 0 holds the other until 10).
    trace = make_trace([(0, 0, 10, 1), (1, 0, 5, 1), (2, 1, 3, 1), (3, 2, 1, 1)])
    assert starts_by_id(trace, 2, fast_path=fast_path) == {0: 0.0, 1: 0.0, 2: 5.0, 3: 8.0}


@BOTH
def test_multi_core_strict_head_of_line_blocking(fast_path: bool) -> None:
    # P = 4. Job 0 holds 3 cores until 10. Job 1 needs 2 and must wait; job 2 needs 1 and would fit
    # at t = 2, but strict FIFO lets nobody overtake the blocked head: both start at 10.
    trace = make_trace([(0, 0, 10, 3), (1, 1, 5, 2), (2, 2, 1, 1), (3, 3, 4, 2)])
    starts = starts_by_id(trace, 4, fast_path=fast_path)
    assert starts == {0: 0.0, 1: 10.0, 2: 10.0, 3: 11.0}
    # job 3 (2 cores) must wait for job 2 (ends 11): at 10 only 1 core is left after jobs 1 and 2


@BOTH
def test_completion_before_arrival_at_equal_times(fast_path: bool) -> None:
    # P = 1. Job 0 ends at exactly 5 when job 1 arrives: completions come first, so job 1 starts
    # at 5 without waiting. Job 2 (4 cores on P = 4 below) likewise sees the cores freed at 7.
    trace = make_trace([(0, 0, 5, 1), (1, 5, 2, 1), (2, 7, 1, 1)])
    assert starts_by_id(trace, 1, fast_path=fast_path) == {0: 0.0, 1: 5.0, 2: 7.0}
    wide = make_trace([(0, 0, 7, 3), (1, 7, 1, 4)])
    assert starts_by_id(wide, 4, fast_path=fast_path) == {0: 0.0, 1: 7.0}


@BOTH
def test_ties_break_by_job_id(fast_path: bool) -> None:
    # Equal submit times: the lower job id is first in the queue whatever the row order.
    trace = make_trace([(7, 0, 4, 1), (3, 0, 2, 1), (5, 0, 1, 1)])
    starts = starts_by_id(trace, 1, fast_path=fast_path)
    assert starts == {3: 0.0, 5: 2.0, 7: 3.0}
    result = simulate(trace, cores=1, warmup_jobs=0, drain_jobs=0, fast_path=fast_path)
    assert result.jobs["job_id"].to_pylist() == [3, 5, 7]  # output in (submit, id) order


@BOTH
def test_zero_length_jobs(fast_path: bool) -> None:
    trace = make_trace([(0, 0, 0, 2), (1, 0, 3, 2), (2, 0, 0, 2), (3, 1, 1, 1)])
    assert starts_by_id(trace, 2, fast_path=fast_path) == {0: 0.0, 1: 0.0, 2: 3.0, 3: 3.0}


def test_result_columns_and_metadata() -> None:
    trace = make_trace([(0, 0, 10, 1), (1, 0, 5, 1), (2, 1, 3, 1), (3, 2, 1, 1)], cores=2)
    result = simulate(trace, warmup_jobs=0, drain_jobs=0)
    jobs = validate(result.jobs, SIM_RESULT)
    assert jobs["wait_s"].to_pylist() == [0.0, 0.0, 4.0, 6.0]
    assert jobs["end_s"].to_pylist() == [10.0, 5.0, 8.0, 9.0]
    assert jobs["responsiveness"].to_pylist() == [1.0, 1.0, 3 / 7, 1 / 7]
    # (wait + run) / max(run, 10) is 0.7 for jobs 2 and 3: bounded below by 1
    assert jobs["bounded_slowdown"].to_pylist() == [1.0, 1.0, 1.0, 1.0]
    assert jobs["fairness"].null_count == 4  # no VO shares given
    meta = result.metadata
    assert meta["policy"] == "fifo"
    assert meta["cores"] == 2
    assert meta["site"] == "t"
    assert result.summary["cores"] == 2  # P taken from the trace metadata
    assert result.summary["engine"] == "fifo-single-core"


def test_unknown_policy_lists_known() -> None:
    trace = make_trace([(0, 0, 1, 1)], cores=1)
    with pytest.raises(ConfigError, match="fifo"):
        simulate(trace, policy="sjf-magic")
    assert "fifo" in POLICIES


def test_job_larger_than_site_names_the_job() -> None:
    trace = make_trace([(0, 0, 1, 1), (42, 1, 1, 5)], cores=4)
    with pytest.raises(SimulationError, match=r"job 42 needs 5 cores"):
        simulate(trace)


def test_cores_required_without_metadata() -> None:
    with pytest.raises(ConfigError, match="cores"):
        simulate(make_trace([(0, 0, 1, 1)]))


def test_invalid_values_rejected() -> None:
    with pytest.raises(SimulationError, match="run_s"):
        simulate(make_trace([(0, 0, -1, 1)]), cores=1)


class _Stubborn:
    """A policy that never starts anything: the engine must refuse to wait forever."""

    name = "stubborn"

    def select(self, queue: object, state: object, now: float) -> list[int]:
        return []


class _Greedy:
    """A policy that starts every queued job whether it fits or not."""

    name = "greedy"

    def select(self, queue: object, state: object, now: float) -> list[int]:
        return list(queue)  # type: ignore[call-overload]


def test_engine_rejects_bad_policies() -> None:
    trace = make_trace([(0, 0, 5, 1), (1, 0, 5, 1)], cores=1)
    with pytest.raises(SimulationError, match="idle cluster"):
        simulate(trace, policy=_Stubborn())
    with pytest.raises(SimulationError, match="only 0 free"):
        simulate(trace, policy=_Greedy())


def test_policy_object_accepted() -> None:
    trace = make_trace([(0, 0, 5, 1), (1, 0, 5, 1)], cores=1)
    result = simulate(trace, policy=FifoPolicy(), warmup_jobs=0, drain_jobs=0)
    assert result.summary["engine"] == "fifo-single-core"
    assert result.jobs["start_s"].to_pylist() == [0.0, 5.0]


# --- properties -------------------------------------------------------------------------------

job_lists = st.lists(
    st.tuples(
        st.integers(0, 40),  # submit: small integers, so that ties are frequent
        st.integers(0, 25),  # run
        st.integers(1, 6),  # cores (clipped to P below)
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(jobs=job_lists, total=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_fifo_invariants(jobs: list[tuple[int, int, int]], total: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    ids = rng.permutation(len(jobs))  # ids unrelated to row order
    order = np.lexsort((ids, [j[0] for j in jobs]))
    submit = np.array([jobs[k][0] for k in order], dtype=np.float64)
    run = np.array([jobs[k][1] for k in order], dtype=np.float64)
    need = np.array([min(jobs[k][2], total) for k in order], dtype=np.int64)
    job_id = ids[order]

    kernel = fifo_multi_core_starts(submit, run, need, total)
    rows = JobRows(
        job_id.tolist(), submit.tolist(), run.tolist(), need.tolist(), [None] * len(jobs)
    )
    reference, elected, pool = run_events(rows, total_cores=total, policy=FifoPolicy())
    assert [size for _, size in pool] == [total]
    np.testing.assert_array_equal(kernel, np.asarray(reference))
    assert elected == list(range(len(jobs)))  # strict FIFO elects in (submit, id) order
    if np.all(need == 1):
        np.testing.assert_array_equal(fifo_single_core_starts(submit, run, total), kernel)

    end = kernel + run
    assert np.all(kernel >= submit)
    assert np.all(np.diff(kernel) >= 0)  # start order is non-decreasing in (submit, id)
    for t in np.unique(kernel):  # usage only rises at starts: check it there
        in_use = need[(kernel <= t) & (end > t)].sum()
        assert in_use <= total
    # strictness: a job never waits while its predecessors have started and it fits
    for k in range(len(jobs)):
        ready = max(submit[k], kernel[k - 1] if k else -np.inf)
        if kernel[k] > ready:
            before = np.arange(len(jobs)) < k
            busy_at_ready = need[before & (kernel <= ready) & (end > ready)].sum()
            assert total - busy_at_ready < need[k]


@settings(max_examples=50, deadline=None)
@given(jobs=job_lists, total=st.integers(1, 6))
def test_simulate_matches_events_engine(jobs: list[tuple[int, int, int]], total: int) -> None:
    trace = make_trace([(k, s, r, min(c, total)) for k, (s, r, c) in enumerate(jobs)])
    fast = simulate(trace, cores=total, warmup_jobs=0, drain_jobs=0, vo_shares={"a": 1, "b": 1})
    slow = simulate(
        trace, cores=total, warmup_jobs=0, drain_jobs=0, vo_shares={"a": 1, "b": 1}, fast_path=False
    )
    assert fast.jobs.equals(slow.jobs)


class _NewestFirst:
    """Start the newest queued jobs that fit: exercises the general loop with another order."""

    name = "newest-first"

    def select(self, queue: object, state: ClusterState, now: float) -> list[int]:
        free_cores = state.free_cores
        chosen = []
        for row in reversed(list(queue)):  # type: ignore[call-overload]
            need = queue.cores[row]  # type: ignore[attr-defined]
            if need <= free_cores:
                chosen.append(row)
                free_cores -= need
        return chosen


def test_general_engine_with_another_policy() -> None:
    # P = 1: job 0 runs 0-10; jobs 1, 2, 3 queue; newest first runs 3, then 2, then 1.
    trace = make_trace([(0, 0, 10, 1), (1, 1, 1, 1), (2, 2, 2, 1), (3, 3, 3, 1)], cores=1)
    vo = pa.array(["a", "b", "a", "b"], pa.string())
    trace = trace.set_column(trace.schema.get_field_index("vo"), "vo", vo)
    result = simulate(
        trace, policy=_NewestFirst(), warmup_jobs=0, drain_jobs=0, vo_shares={"a": 1, "b": 1}
    )
    assert result.summary["engine"] == "events"
    assert result.summary["policy"] == "newest-first"
    assert result.jobs["start_s"].to_pylist() == [0.0, 15.0, 13.0, 10.0]
    # election order 0, 3, 2, 1: F of job 3 (after 10 s of a) is 0; of job 2 (a 10, b 3) is
    # 1 - (0.5 - 3/13) / 0.5; of job 1 (a 12, b 3) is 1 - (0.5 - 3/15) / 0.5
    np.testing.assert_allclose(
        result.jobs["fairness"].to_numpy(),
        [1.0, 1 - (0.5 - 0.2) / 0.5, 1 - (0.5 - 3 / 13) / 0.5, 0.0],
    )


def test_fifo_subclass_uses_the_general_loop() -> None:
    class Logged(FifoPolicy):
        pass

    trace = make_trace([(0, 0, 5, 1), (1, 0, 5, 1)], cores=1)
    assert simulate(trace, policy=Logged()).summary["engine"] == "events"


def test_empty_trace() -> None:
    result = simulate(make_trace([], cores=3), vo_shares={"a": 1.0})
    assert result.jobs.num_rows == 0
    assert result.summary["classes"]["all"]["n"] == 0
    assert result.summary["utilisation"] is None


class _OneAtATime:
    """Elects the oldest fitting job, one per decision, recording the state it saw."""

    name = "one-at-a-time"
    one_per_decision = True

    def __init__(self) -> None:
        self.seen: list[tuple[float, int, int]] = []

    def select(self, queue: object, state: ClusterState, now: float) -> list[int]:
        self.seen.append((now, state.free_cores, len(queue)))  # type: ignore[arg-type]
        for row in queue:  # type: ignore[attr-defined]
            if queue.cores[row] <= state.free_cores:  # type: ignore[attr-defined]
                return [row]
        return []


def test_one_per_decision_is_asked_again_at_the_same_instant() -> None:
    # P = 3: three jobs arrive at 0; the policy elects one per call and sees the state each
    # election leaves behind, then answers [] to end the instant.
    trace = make_trace([(0, 0, 5, 1), (1, 0, 5, 1), (2, 0, 5, 2), (3, 1, 1, 1)], cores=3)
    policy = _OneAtATime()
    result = simulate(trace, policy=policy, warmup_jobs=0, drain_jobs=0)
    assert policy.seen[:3] == [(0.0, 3, 3), (0.0, 2, 2), (0.0, 1, 1)]
    assert result.jobs["start_s"].to_pylist() == [0.0, 0.0, 5.0, 1.0]


@settings(max_examples=30, deadline=None)
@given(
    jobs=st.lists(
        st.tuples(st.integers(0, 50), st.integers(0, 30), st.integers(1, 3)),
        min_size=1,
        max_size=40,
    ),
    total=st.integers(3, 5),
)
def test_iter_decisions_driven_by_hand_equals_run_events(
    jobs: list[tuple[int, int, int]], total: int
) -> None:
    from gridtrace.sim import iter_decisions

    ordered = sorted(jobs, key=lambda j: j[0])
    rows = JobRows(
        job_id=list(range(len(ordered))),
        submit_s=[float(s) for s, _, _ in ordered],
        run_s=[float(r) for _, r, _ in ordered],
        cores=[c for _, _, c in ordered],
        vo=["a"] * len(ordered),
    )
    expected = run_events(rows, total_cores=total, policy=FifoPolicy())
    loop = iter_decisions(rows, total_cores=total)
    fifo = FifoPolicy()
    decision = next(loop)
    outcome = None
    while outcome is None:
        try:
            decision = loop.send(fifo.select(*decision))
        except StopIteration as stop:
            outcome = stop.value
    assert outcome == expected


class _FifoWatching(FifoPolicy):
    """FIFO that records the counters it was shown at each decision."""

    seen: list[tuple[float, float, int, float, int]]

    def select(self, queue: object, state: ClusterState, now: float) -> list[int]:
        self.seen.append(
            (
                now,
                state.busy_core_s,
                state.completed,
                state.completed_w,
                state.completed_interactive,
            )
        )
        return super().select(queue, state, now)  # type: ignore[arg-type]


def test_state_counts_busy_core_seconds_and_completed_w() -> None:
    # P = 2: job 0 (2 cores, 10 s) at 0; job 1 (1 core, 100 s, batch) waits until 10;
    # job 2 (1 core, 5 s) arrives at 12 and starts at once.
    trace = make_trace([(0, 0, 10, 2), (1, 0, 1000, 1), (2, 12, 5, 1)], cores=2)
    policy = _FifoWatching()
    policy.seen = []
    simulate(trace, policy=policy, warmup_jobs=0, drain_jobs=0, fast_path=False)
    # decisions at 0, 10 and 12; at 12 job 0 is done (20 core-s) and job 1 has run 2 s
    assert policy.seen == [(0.0, 0.0, 0, 0.0, 0), (10.0, 20.0, 1, 1.0, 1), (12.0, 22.0, 1, 1.0, 1)]
