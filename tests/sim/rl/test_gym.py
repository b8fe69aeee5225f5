"""The Gymnasium environments: API conformance, determinism, rules and reward reconciliation."""

from __future__ import annotations

import gc
import math
import subprocess
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from gridtrace.errors import ConfigError, SimulationError
from gridtrace.models import generate_preset_trace, get_preset
from gridtrace.schema import with_trace_metadata
from gridtrace.sim import ClusterState, JobRows, QueueView, fairness_at_election, simulate
from gridtrace.sim.rl import (
    QueueSlowdownReward,
    ResponsivenessFairnessReward,
)
from gridtrace.sim.rl._gym import make_provisioning_env, make_scheduling_env

SHARES = dict(get_preset("MM50-20").vo_shares)


@pytest.fixture(scope="module")
def gym() -> ModuleType:
    return pytest.importorskip("gymnasium")


@pytest.fixture(scope="module")
def small() -> pa.Table:
    return generate_preset_trace("MM50-20", rng=11, size=200)


def draw_small(rng: np.random.Generator) -> pa.Table:
    return generate_preset_trace("MM50-20", rng=rng, size=200)


def make_trace(jobs: list[tuple[float, float, int]], *, cores: int) -> pa.Table:
    """Trace from (submit_s, run_s, cores) tuples; job ids 0, 1, ..."""
    table = pa.table(
        {
            "job_id": pa.array(range(len(jobs)), pa.int64()),
            "submit_s": pa.array([float(j[0]) for j in jobs], pa.float64()),
            "run_s": pa.array([float(j[1]) for j in jobs], pa.float64()),
            "cores": pa.array([j[2] for j in jobs], pa.int32()),
            "vo": pa.array(["vo1"] * len(jobs), pa.string()),
            "interactive": pa.array([j[1] <= 900 for j in jobs]),
        }
    )
    return with_trace_metadata(
        table, origin="1970-01-01T00:00:00+00:00", site="t", cores=cores, tau_s=900.0, provenance={}
    )


def rollout(
    env: Any, seed: int, policy: Callable[[dict[str, Any]], int]
) -> tuple[list[np.ndarray], list[float], list[dict[str, Any]]]:
    """Run one episode; return its observations, rewards and infos."""
    obs, info = env.reset(seed=seed)
    observations, rewards, infos = [obs], [], [info]
    done = False
    while not done:
        obs, reward, done, truncated, info = env.step(policy(info))
        assert truncated is False
        observations.append(obs)
        rewards.append(float(reward))
        infos.append(info)
    return observations, rewards, infos


def random_actions(n: int, seed: int) -> Callable[[dict[str, Any]], int]:
    rng = np.random.default_rng(seed)
    return lambda info: int(rng.integers(n))


# --- gymnasium conformance -------------------------------------------------------------------


def test_check_env_scheduling(gym: ModuleType, small: pa.Table) -> None:
    from gymnasium.utils.env_checker import check_env

    # no render modes are declared, so the render check has nothing to test (without a spec it
    # would only warn that it cannot)
    check_env(make_scheduling_env(small, max_queue=20), skip_render_check=True)
    check_env(
        make_scheduling_env(draw_small, cores=50, vo_shares=SHARES, estimator="median"),
        skip_render_check=True,
    )


def test_check_env_provisioning(gym: ModuleType, small: pa.Table) -> None:
    from gymnasium.utils.env_checker import check_env

    env = make_provisioning_env(small, floor=10)
    check_env(env, skip_render_check=True)
    env.close()
    env = make_provisioning_env(draw_small, cores=50, floor=10, scheduler="random")
    check_env(env, skip_render_check=True)
    env.close()


def test_observation_layout(gym: ModuleType, small: pa.Table) -> None:
    env = make_scheduling_env(small, vo_shares=SHARES, max_queue=7)
    feats = env.features
    assert env.observation_space.shape == (feats.n_state + 7 * feats.n_action + 7,)
    obs, info = env.reset(seed=0)
    state, actions, mask = env.split_observation(obs)
    assert np.array_equal(mask, info["action_mask"])
    assert np.array_equal(env.action_masks(), info["action_mask"].astype(bool))
    assert info["visible"] == 1
    assert mask.tolist() == [1, 0, 0, 0, 0, 0, 0]
    assert env.jobs is not None
    # row 0 of the action matrix is the first job: its VO slot and its oracle runtime
    row = 0
    assert actions[0, 1 + feats.slot(env.jobs.vo[row])] == 1.0
    expected = feats.runtime_feature(env.jobs.run_s[row])
    assert actions[0, feats.runtime_column] == pytest.approx(expected, rel=1e-6)
    assert not actions[1:].any()
    assert state[3] == pytest.approx(1.0)  # every core idle at the first arrival


# --- determinism -----------------------------------------------------------------------------


def test_scheduling_same_seed_same_trajectory(gym: ModuleType) -> None:
    env = make_scheduling_env(draw_small, cores=50, vo_shares=SHARES, max_queue=10)
    obs_a, rew_a, info_a = rollout(env, 5, random_actions(10, 1))
    obs_b, rew_b, info_b = rollout(env, 5, random_actions(10, 1))
    assert len(obs_a) == len(obs_b) == 201  # one step per job, plus the reset
    assert all(np.array_equal(a, b) for a, b in zip(obs_a, obs_b, strict=True))
    assert rew_a == rew_b
    assert [i["now"] for i in info_a] == [i["now"] for i in info_b]
    assert env.jobs is not None
    drawn = list(env.jobs.run_s)
    env.reset(seed=6)  # another seed draws another trace
    assert list(env.jobs.run_s) != drawn


def test_provisioning_same_seed_same_trajectory(gym: ModuleType) -> None:
    env = make_provisioning_env(draw_small, cores=50, floor=10, scheduler="random")
    n = env.action_space.n
    obs_a, rew_a, info_a = rollout(env, 3, random_actions(n, 2))
    obs_b, rew_b, info_b = rollout(env, 3, random_actions(n, 2))
    assert len(obs_a) > 10
    assert all(np.array_equal(a, b) for a, b in zip(obs_a, obs_b, strict=True))
    assert rew_a == rew_b
    assert [i["pool_size"] for i in info_a[1:]] == [i["pool_size"] for i in info_b[1:]]
    assert env.outcome is not None
    starts = list(env.outcome.start_s)
    rollout(env, 4, random_actions(n, 2))
    assert env.outcome is not None
    assert list(env.outcome.start_s) != starts


# --- the scheduling rules --------------------------------------------------------------------


def test_invalid_action_elects_oldest_fitting_job(gym: ModuleType) -> None:
    # P = 4; at t = 0 jobs 0 (3 cores), 1 (2 cores), 2 (1 core) and 3 (1 core) arrive
    trace = make_trace([(0, 100, 3), (0, 50, 2), (0, 10, 1), (0, 10, 1)], cores=4)
    env = make_scheduling_env(trace, max_queue=5)
    _, info = env.reset(seed=0)
    assert info["action_mask"].tolist() == [1, 1, 1, 1, 0]
    _, _, done, _, info = env.step(1)  # job 1: 2 cores held, 2 free
    assert (info["job_id"], info["invalid_action"], done) == (1, False, False)
    assert info["action_mask"].tolist() == [0, 1, 1, 0, 0]  # job 0 (3 cores) does not fit
    _, _, _, _, info = env.step(0)  # job 0 does not fit: the oldest fitting job (2) instead
    assert (info["job_id"], info["invalid_action"]) == (2, True)
    assert info["action_mask"].tolist() == [0, 1, 0, 0, 0]  # slots: job 0, job 3
    _, _, _, _, info = env.step(4)  # an empty slot
    assert (info["job_id"], info["invalid_action"]) == (3, True)
    # the cluster is full; at t = 10 jobs 2 and 3 end, but job 0 (3 cores) does not fit the 2
    # free cores: that decision is skipped, the next one is at t = 50, when job 1 ends
    assert info["now"] == 50.0
    assert info["action_mask"].tolist() == [1, 0, 0, 0, 0]
    _, _, done, _, info = env.step(-3)  # out of range
    assert (info["job_id"], info["invalid_action"], done) == (0, True, True)
    assert env.outcome is not None
    assert env.outcome.start_s == [50.0, 0.0, 0.0, 0.0]
    with pytest.raises(SimulationError, match="reset"):
        env.step(0)


def test_decisions_where_nothing_fits_are_skipped(gym: ModuleType) -> None:
    # a 2-core job waits behind a 1-core job on P = 2; the visible window holds only job 1
    trace = make_trace([(0, 100, 1), (1, 10, 2), (2, 10, 1)], cores=2)
    env = make_scheduling_env(trace, max_queue=1)
    _, info = env.reset(seed=0)
    _, _, _, _, info = env.step(0)
    # at t = 1 and t = 2 one core is free but job 1 (the only visible one) needs 2: skipped, and
    # job 2 is not visible, so the next decision is at t = 100
    assert info["now"] == 100.0
    assert info["visible"] == 1
    assert info["queue_length"] == 2
    _, _, _, _, info = env.step(0)
    assert info["now"] == 110.0
    _, _, done, _, _ = env.step(0)
    assert done
    assert env.outcome is not None
    assert env.outcome.start_s == [0.0, 100.0, 110.0]


def test_index_zero_reproduces_fifo(gym: ModuleType) -> None:
    trace = generate_preset_trace("MM50-20", rng=3, size=600)
    env = make_scheduling_env(trace)
    _, _, infos = rollout(env, 0, lambda info: 0)
    assert not any(i.get("invalid_action") for i in infos[1:])
    fifo = simulate(trace, policy="fifo", warmup_jobs=0, drain_jobs=0)
    assert env.outcome is not None
    assert np.array_equal(np.asarray(env.outcome.start_s), fifo.jobs["start_s"].to_numpy())


# --- rewards ---------------------------------------------------------------------------------


def w_of(jobs: JobRows, start: list[float]) -> np.ndarray:
    run = np.asarray(jobs.run_s)
    wait = np.asarray(start) - np.asarray(jobs.submit_s)
    return np.where(run + wait > 0, run / np.maximum(run + wait, 1e-300), 1.0)


def test_random_episode_rewards_sum_to_every_jobs_w(gym: ModuleType) -> None:
    trace = generate_preset_trace("MM50-20", rng=4, size=500)
    env = make_scheduling_env(trace, max_queue=30)
    _, rewards, infos = rollout(env, 0, random_actions(30, 9))
    assert env.outcome is not None
    assert env.jobs is not None
    assert sum(i["completed"] for i in infos[1:]) == 500
    assert any(i["invalid_action"] for i in infos[1:])
    assert math.fsum(rewards) == pytest.approx(w_of(env.jobs, env.outcome.start_s).sum(), rel=1e-12)
    # the policy differs from FIFO: the schedule is not FIFO's
    fifo = simulate(trace, policy="fifo", warmup_jobs=0, drain_jobs=0)
    assert not np.array_equal(np.asarray(env.outcome.start_s), fifo.jobs["start_s"].to_numpy())


def test_fairness_reward_matches_the_metric(gym: ModuleType) -> None:
    trace = generate_preset_trace("MM50-20", rng=5, size=300)
    reward = ResponsivenessFairnessReward(0.5, SHARES)
    env = make_scheduling_env(trace, reward=reward, vo_shares=SHARES, max_queue=20)
    _, rewards, _ = rollout(env, 0, random_actions(20, 3))
    assert env.outcome is not None
    assert env.jobs is not None
    jobs = env.jobs
    f = fairness_at_election(jobs.run_s, jobs.cores, jobs.vo, SHARES, elected=env.outcome.elected)
    w = w_of(jobs, env.outcome.start_s)
    assert math.fsum(rewards) == pytest.approx(0.5 * w.sum() + 0.5 * f.sum(), rel=1e-9)


def test_interval_reward_by_hand() -> None:
    from gridtrace.sim.rl._elastic import interval_reward

    jobs = JobRows([0, 1], [0.0, 0.0], [10.0, 30.0], [1, 1], ["a", "a"])
    state = ClusterState(jobs, 4, _oracle(jobs))
    state.now, state.busy_core_s, state.completed, state.completed_w = 900.0, 1200.0, 5, 3.5
    # no job completed in the interval: W̄ is the run's mean so far, 3.5 / 5
    assert interval_reward(state, 900.0, (0.0, 200.0, 5, 3.5, 4), 0.3)[2] == 0.7
    # hand values: U = 1000 / (4 × 900), W̄ = 2 / 3
    reward, u, w_bar = interval_reward(state, 900.0, (0.0, 200.0, 2, 1.5, 4), 0.3)
    assert (u, w_bar) == pytest.approx((1000 / 3600, 2 / 3))
    assert reward == pytest.approx(0.3 * 2 / 3 + 0.7 * 1000 / 3600)


def _oracle(jobs: JobRows) -> Any:
    from gridtrace.sim import OracleEstimator

    est = OracleEstimator()
    est.reset(jobs)
    return est


def test_provisioning_rewards_reconcile_with_the_schedule(gym: ModuleType) -> None:
    trace = generate_preset_trace("MM50-20", rng=6, size=400)
    env = make_provisioning_env(trace, floor=20, lambda_e=0.25)
    n = env.action_space.n
    _, rewards, infos = rollout(env, 0, random_actions(n, 5))
    assert env.outcome is not None
    assert env.jobs is not None
    times = [i["now"] for i in infos]
    # Σ_k U_k × (pool_k × Δt_k) is the core-seconds used: Σ_j run_j (single-core jobs)
    used = math.fsum(
        info["utilisation"] * info["pool_size"] * (t1 - t0)
        for info, t0, t1 in zip(infos[1:], times[:-1], times[1:], strict=True)
    )
    assert used == pytest.approx(math.fsum(env.jobs.run_s), rel=1e-9)
    # the rewards are λ_e W̄ + (1 − λ_e) U
    for r, info in zip(rewards, infos[1:], strict=True):
        assert r == pytest.approx(0.25 * info["mean_w"] + 0.75 * info["utilisation"])
    # decisions every 900 s from the first arrival
    assert np.allclose(np.diff(times[:-1]), 900.0)


# --- the pool --------------------------------------------------------------------------------


def test_pool_never_below_running_jobs_or_floor(gym: ModuleType) -> None:
    trace = generate_preset_trace("MM50-20", rng=7, size=400)
    env = make_provisioning_env(trace, floor=8, ceiling=60, levels=5)
    assert env.sizes.tolist() == [8, 21, 34, 47, 60]
    actions = random_actions(5, 4)
    # mostly the smallest size, so that the clamp binds often
    _, _, infos = rollout(env, 0, lambda info: 0 if actions(info) < 4 else 4)
    steps = infos[1:]
    assert any(i["clamped"] for i in steps)
    assert not all(i["clamped"] for i in steps)
    for info in steps:
        assert info["pool_size"] == max(info["requested"], 8, info["in_use_at_decision"])
    assert env.outcome is not None
    assert env.jobs is not None
    start = np.asarray(env.outcome.start_s)
    end = start + np.asarray(env.jobs.run_s)
    pool_t = np.array([t for t, _ in env.outcome.pool])
    pool_p = np.array([p for _, p in env.outcome.pool])
    # at every start (the only moments in-use grows) the pool holds the running jobs
    for t in np.unique(start):
        running = int(np.count_nonzero((start <= t) & (end > t)))
        size = pool_p[np.searchsorted(pool_t, t, side="right") - 1]
        assert size >= running
        assert size >= 8
    assert pool_p[1:].min() >= 8  # every size set by a decision


def test_provisioning_decision_times_strictly_increase(gym: ModuleType) -> None:
    from gridtrace.sim.rl._gym_envs import _Handoff

    # first + k × 900 − first can round below k × 900, which must not repeat a decision time
    handoff = _Handoff(900.0)
    for first in np.random.default_rng(1).uniform(0.0, 100.0, 500):
        handoff.reset(JobRows([0], [float(first)], [1.0], [1], ["a"]))
        t = handoff.next_decision(-math.inf)
        assert t == first
        for k in range(1, 40):
            t_next = handoff.next_decision(t)
            assert t < t_next == first + k * 900.0
            t = t_next
        assert handoff.next_decision(t + 1.0) == first + 40 * 900.0


# --- lifecycle and errors --------------------------------------------------------------------


def test_worker_thread_ends_on_reset_close_and_finish(gym: ModuleType, small: pa.Table) -> None:
    env = make_provisioning_env(small, floor=10)
    env.reset(seed=0)
    first = env._thread
    assert first is not None
    assert first.is_alive()
    env.step(0)
    env.reset(seed=0)  # abandons the unfinished episode
    assert not first.is_alive()
    second = env._thread
    assert second is not None
    env.close()
    assert not second.is_alive()
    env.close()  # closing twice is fine
    rollout(env, 0, lambda info: 1)  # a finished episode leaves no thread
    assert env._thread is None
    env.reset(seed=0)
    third = env._thread
    assert third is not None
    del env  # an abandoned environment's thread ends when it is collected
    gc.collect()
    third.join(timeout=10.0)
    assert not third.is_alive()


class Misbehaving:
    """A scheduler that elects a job that is not queued."""

    name = "misbehaving"

    def select(self, queue: QueueView, state: ClusterState, now: float) -> list[int]:
        return [10_000]


def test_engine_errors_reach_the_caller(gym: ModuleType, small: pa.Table) -> None:
    env = make_provisioning_env(small, floor=10, scheduler=Misbehaving())
    env.reset(seed=0)  # the first decision is the provisioning one, before any scheduling
    with pytest.raises(SimulationError, match="not queued"):
        env.step(0)
    assert env._thread is None


def test_bad_configurations(gym: ModuleType, small: pa.Table) -> None:
    with pytest.raises(ConfigError, match="cores"):
        make_scheduling_env(draw_small, vo_shares=SHARES)
    with pytest.raises(ConfigError, match="vo_shares"):
        make_scheduling_env(draw_small, cores=50)
    with pytest.raises(ConfigError, match="max_queue"):
        make_scheduling_env(small, max_queue=0)
    with pytest.raises(ConfigError, match="per-job rewards"):
        make_scheduling_env(small, reward=QueueSlowdownReward())
    with pytest.raises(ConfigError, match="unknown scheduler"):
        make_provisioning_env(small, scheduler="native")
    with pytest.raises(ConfigError, match="unknown policy option"):
        make_provisioning_env(small, policy_options={"nope": 1})
    with pytest.raises(ConfigError, match="floor"):
        make_provisioning_env(small, floor=80)
    env = make_provisioning_env(small, floor=10)
    env.reset(seed=0)
    with pytest.raises(ConfigError, match="action"):
        env.step(env.action_space.n)
    env.close()
    wide = make_trace([(0, 10, 3)], cores=2)
    with pytest.raises(SimulationError, match="3 cores"):
        make_scheduling_env(wide).reset(seed=0)


# --- the optional dependency -----------------------------------------------------------------


def test_missing_gymnasium_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gymnasium", None)  # makes `import gymnasium` fail
    with pytest.raises(ConfigError, match=r"pip install 'gridtrace\[rl\]'"):
        make_scheduling_env(pa.table({}))
    with pytest.raises(ImportError):
        import gymnasium  # noqa: F401


def test_importing_the_package_does_not_import_gymnasium() -> None:
    code = (
        "import sys, gridtrace.sim.rl, gridtrace.sim.rl._gym; "
        "assert 'gymnasium' not in sys.modules, 'gymnasium was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
