"""The SARSA scheduler's jitted episode loop takes the decisions of the general event loop.

``SarsaScheduler.run_episode`` (called by ``run_events`` for a fixed pool) is a loop form of the
general loop with ``select``: on the same jobs and seeds it must give the same schedule, the
same transitions and rewards, the same refits (so the same Q) and leave the exploration stream
where ``select`` leaves it, to the bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from gridtrace.errors import SimulationError
from gridtrace.sim import JobRows, run_events, simulate
from gridtrace.sim.rl import (
    ESNQ,
    MLPQ,
    QueueSlowdownReward,
    ResponsivenessFairnessReward,
    SarsaScheduler,
    SchedulingFeatures,
    TimeUtilityReward,
)
from gridtrace.sim.rl._experiments import AgentSeeds, make_rl_scheduler
from gridtrace.sim.rl._rewards import InteractiveSlowdownReward

SHARES = {"a": 0.5, "b": 0.3, "c": 0.2}


def _trace(seed: int, n: int = 1200) -> pa.Table:
    """Multi-core jobs, bursts of equal submit times, VOs with and without a slot of their own."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(40.0, n) * (rng.random(n) < 0.8)  # 20 % arrive with the previous
    run = np.round(rng.lognormal(6.0, 1.5, n))  # whole seconds: equal ends happen
    run[rng.random(n) < 0.02] = 0.0
    return pa.table(
        {
            "job_id": pa.array(np.arange(n), pa.int64()),
            "submit_s": pa.array(np.cumsum(gaps), pa.float64()),
            "run_s": pa.array(run, pa.float64()),
            "cores": pa.array(rng.choice([1, 1, 1, 2, 4, 8], n), pa.int32()),
            "vo": pa.array(rng.choice(["a", "b", "c", "x", "y"], n).tolist(), pa.string()),
            "interactive": pa.array(run <= 900.0),
            "walltime_req_s": pa.array((run + 1.0) * rng.uniform(1.0, 4.0, n), pa.float64()),
        }
    )


def _agent(seed: int, q: str = "mlp", **options: Any) -> SarsaScheduler:
    feats = SchedulingFeatures(["a", "b"], 24, tau_s=900.0)  # c, x, y share the last slot
    net, explore = np.random.SeedSequence(seed).spawn(2)
    kind = {"mlp": MLPQ, "esn": ESNQ}[q]
    qf: MLPQ | ESNQ = kind(feats.n_state, feats.n_action, rng=np.random.default_rng(net))
    opts: dict[str, Any] = {"refit_every": 150, "window": 600, **options}
    reward = opts.pop("reward", None) or ResponsivenessFairnessReward(0.5, SHARES)
    return SarsaScheduler(qf, feats, reward, rng=np.random.default_rng(explore), **opts)


def _general(agent: SarsaScheduler) -> SarsaScheduler:
    agent.run_episode = lambda *args: None  # type: ignore[method-assign]
    return agent


def _spy(agent: SarsaScheduler) -> list[bool]:
    """Record, per episode, whether the agent's jitted loop ran it."""
    taken: list[bool] = []
    run_episode = agent.run_episode

    def spy(*args: Any) -> Any:
        out = run_episode(*args)
        taken.append(out is not None)
        return out

    agent.run_episode = spy  # type: ignore[method-assign]
    return taken


def _same_agents(a: SarsaScheduler, b: SarsaScheduler) -> None:
    assert a.decisions_ == b.decisions_ > 0
    assert a.refits_ == b.refits_
    n = a.store_.size
    assert b.store_.size == n
    for name in ("inputs", "reward", "ready", "time", "episode"):
        np.testing.assert_array_equal(getattr(a.store_, name)[:n], getattr(b.store_, name)[:n])
    qa, qb = a.qfunction, b.qfunction
    if isinstance(qa, ESNQ) and isinstance(qb, ESNQ):
        assert qa.n_fits_ == qb.n_fits_
        np.testing.assert_array_equal(qa.readout_, qb.readout_)
        np.testing.assert_array_equal(qa.reservoir_state, qb.reservoir_state)
    else:
        np.testing.assert_array_equal(qa._theta, qb._theta)  # type: ignore[attr-defined]
    la, lb = a.decision_log(), b.decision_log()
    for column in la.column_names:
        np.testing.assert_array_equal(la[column].to_numpy(), lb[column].to_numpy())
    assert a.rng.random() == b.rng.random()  # the exploration streams are at the same place


@pytest.mark.parametrize("q", ["mlp", "esn"])
@pytest.mark.parametrize(
    ("epsilon", "learning", "estimator"),
    [
        (0.05, True, "oracle"),
        (0.3, True, "walltime"),
        (0.0, True, "oracle"),
        (0.05, False, "oracle"),
    ],
)
def test_jitted_episodes_equal_the_general_loop(
    q: str, epsilon: float, learning: bool, estimator: str
) -> None:
    fast, slow = (
        _agent(7, q, epsilon=epsilon, learning=learning),
        _general(_agent(7, q, epsilon=epsilon, learning=learning)),
    )
    for seed in (1, 2):  # two episodes: the agent carries Q, the store and the stream across
        trace = _trace(seed)
        got = simulate(trace, cores=24, policy=fast, vo_shares=SHARES, estimator=estimator)
        want = simulate(trace, cores=24, policy=slow, vo_shares=SHARES, estimator=estimator)
        assert got.jobs["start_s"].equals(want.jobs["start_s"])
        assert got.jobs["fairness"].equals(want.jobs["fairness"])
    fast.finish()
    slow.finish()
    _same_agents(fast, slow)


@pytest.mark.parametrize("q", ["mlp", "esn"])
def test_the_experiments_agent_takes_the_jitted_loop(q: str) -> None:
    feats = SchedulingFeatures(list(SHARES), 24)
    seeds = AgentSeeds(*np.random.SeedSequence(3).spawn(3))
    agent = make_rl_scheduler(q, feats, ResponsivenessFairnessReward(0.5, SHARES), seeds)
    jobs = JobRows([0, 1], [0.0, 0.0], [10.0, 20.0], [1, 1], ["a", "b"], interactive=[True, True])
    from gridtrace.sim import ClassMedianEstimator, OracleEstimator

    for estimator in (OracleEstimator(), ClassMedianEstimator(by=("vo", "interactive"))):
        agent.reset(jobs)
        outcome = agent.run_episode(jobs, 1, estimator)
        assert outcome is not None
        assert sorted(outcome.elected) == [0, 1]
        assert sorted(outcome.start_s) == [0.0, 10.0] or sorted(outcome.start_s) == [0.0, 20.0]


def test_other_agents_fall_back_to_the_general_loop() -> None:
    feats = SchedulingFeatures(list(SHARES), 24)
    rng = np.random.default_rng(0)
    jobs = JobRows([0], [0.0], [10.0], [1], ["a"], interactive=[True])
    esn = SarsaScheduler(  # fitted-Q collection keeps every candidate's row
        ESNQ(feats.n_state, feats.n_action, rng=rng),
        feats,
        ResponsivenessFairnessReward(0.5, SHARES),
        rng=rng,
        keep_candidates=True,
    )
    slowdown = SarsaScheduler(  # a per-job reward credited to the decision in force
        MLPQ(feats.n_state, feats.n_action, rng=rng),
        feats,
        ResponsivenessFairnessReward(0.5, SHARES),
        rng=rng,
        credit="interval",
    )
    from gridtrace.sim import OracleEstimator

    for agent in (esn, slowdown):
        agent.reset(jobs)
        assert agent.run_episode(jobs, 1, OracleEstimator()) is None


def test_a_job_that_never_fits_is_an_error() -> None:
    jobs = JobRows([0, 1], [0.0, 1.0], [10.0, 10.0], [1, 30], ["a", "b"], interactive=[True, True])
    with pytest.raises(SimulationError, match="idle"):
        run_events(jobs, total_cores=24, policy=_agent(1))


@pytest.mark.parametrize("q", ["mlp", "esn"])
@pytest.mark.parametrize(
    ("epsilon", "learning", "window_s"),
    [(0.05, True, 7 * 86400.0), (0.3, True, 3600.0), (0.0, False, 1800.0)],
)
def test_class_median_episodes_equal_the_general_loop(
    q: str, epsilon: float, learning: bool, window_s: float
) -> None:
    # the contention experiments' estimator: class medians over (VO, interactive) that change
    # as jobs complete and leave the trailing window; one candidate per (VO, interactive, cores)
    options = {"by": ("vo", "interactive"), "window_s": window_s}
    fast, slow = (
        _agent(11, q, epsilon=epsilon, learning=learning),
        _general(_agent(11, q, epsilon=epsilon, learning=learning)),
    )
    taken = _spy(fast)
    for seed in (3, 4):
        trace = _trace(seed)
        got, want = (
            simulate(trace, cores=24, policy=agent, vo_shares=SHARES, estimator="median",
                     estimator_options=options)
            for agent in (fast, slow)
        )  # fmt: skip
        assert got.jobs["start_s"].equals(want.jobs["start_s"])
        assert got.summary["estimator_settings"] == want.summary["estimator_settings"]
    assert got.summary["estimator_settings"]["sources"]["class"] > 0
    assert taken == [True, True]
    fast.finish()
    slow.finish()
    _same_agents(fast, slow)


REWARDS = {
    "w": lambda: ResponsivenessFairnessReward(1.0),
    "time-utility": TimeUtilityReward,
    "slowdown": QueueSlowdownReward,
    "interactive-slowdown": lambda: InteractiveSlowdownReward(batch_weight=0.1),
}


@pytest.mark.parametrize("q", ["mlp", "esn"])
@pytest.mark.parametrize("reward", list(REWARDS))
@pytest.mark.parametrize("estimator", ["oracle", "median"])
def test_the_contention_rewards_equal_the_general_loop(q: str, reward: str, estimator: str) -> None:
    # the rewards of run_contention's candidates: W alone (no shares), the time-utility
    # functions, and the per-interval slowdown penalties paid to the previous decision
    options = {"by": ("vo", "interactive")} if estimator == "median" else None
    fast, slow = (
        _agent(5, q, epsilon=0.05, reward=REWARDS[reward]()),
        _general(_agent(5, q, epsilon=0.05, reward=REWARDS[reward]())),
    )
    taken = _spy(fast)
    for seed in (5, 6):
        trace = _trace(seed, 900)
        got, want = (
            simulate(trace, cores=24, policy=agent, estimator=estimator,
                     estimator_options=options)
            for agent in (fast, slow)
        )  # fmt: skip
        assert got.jobs["start_s"].equals(want.jobs["start_s"])
    fast.finish()
    slow.finish()
    _same_agents(fast, slow)
    assert fast.store_.ready[: fast.store_.size].all()
    assert taken == [True, True]  # both episodes ran in the jitted loop


@pytest.mark.parametrize("q", ["mlp", "esn"])
@pytest.mark.parametrize("estimator", ["oracle", "median"])
def test_sjf_pretraining_equals_the_general_loop(q: str, estimator: str) -> None:
    # run_contention's pre-training: the agent records and learns while SJF-est elects
    options = {"by": ("vo", "interactive")} if estimator == "median" else None
    fast, slow = (
        _agent(9, q, epsilon=0.05, behaviour="sjf", reward=QueueSlowdownReward()),
        _general(_agent(9, q, epsilon=0.05, behaviour="sjf", reward=QueueSlowdownReward())),
    )
    taken = _spy(fast)
    for seed in (7, 8):
        trace = _trace(seed, 900)
        got, want = (
            simulate(trace, cores=24, policy=agent, estimator=estimator,
                     estimator_options=options)
            for agent in (fast, slow)
        )  # fmt: skip
        assert got.jobs["start_s"].equals(want.jobs["start_s"])
    fast.finish()
    slow.finish()
    _same_agents(fast, slow)
    assert not fast.decision_log()["explored"].to_numpy().any()
    assert taken == [True, True]
