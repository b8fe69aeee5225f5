"""The multi-resource (DeepRM) setup of issue 15: env API, reward, masking, baselines."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

from gridtrace.errors import ConfigError
from gridtrace.models import DeepRMJobs, DeepRMWorkload
from gridtrace.sim.rl import (
    MULTIRES_POLICIES,
    MultiResourceCluster,
    MultiResourceConfig,
    evaluate_multires,
    multires_sequences,
    run_episode,
    summarise_multires,
)


def two_jobs() -> DeepRMJobs:
    """Job 0: 2 steps × (5, 1) units; job 1: 1 step × (6, 1); both arrive at step 0.

    They cannot run together on 10 units of type 0 (5 + 6 > 10).
    """
    return DeepRMJobs(
        step=np.array([0, 0]),
        length=np.array([2, 1]),
        demand=np.array([[5, 1], [6, 1]]),
        dominant=np.array([0, 0]),
        steps=1,
    )


def test_reward_matches_a_hand_computed_episode() -> None:
    c = MultiResourceCluster(MultiResourceConfig())
    c.reset(two_jobs())
    wait = c.config.visible_slots
    assert c.slots[:2] == [0, 1]
    assert c.action_masks().tolist() == [True, True, False, False, False, True]
    assert c.step(0) == (0.0, True)  # job 0 starts at step 0
    # job 1 no longer fits: an invalid action is a wait and does not start it
    assert not c.action_masks()[0]
    assert not c.action_masks()[1]
    assert c.slots[:2] == [-1, 1]
    reward, valid = c.step(1)  # job 1 does not fit: treated as a wait
    assert not valid
    assert reward == pytest.approx(-(1 / 2 + 1 / 1))  # both jobs in the system during [0, 1)
    assert c.start_step[1] == -1
    reward, valid = c.step(wait)
    assert valid
    assert reward == pytest.approx(-1.5)  # [1, 2): job 0 runs, job 1 waits
    assert c.time == 2
    assert c.action_masks()[1]  # job 0 ended at step 2: job 1 fits
    assert c.step(1) == (0.0, True)
    reward, _ = c.step(wait)
    assert reward == pytest.approx(-1.0)  # [2, 3): job 1 runs
    assert c.done
    m = c.metrics()
    # slowdowns: job 0 (2 - 0) / 2 = 1, job 1 (3 - 0) / 1 = 3; the return is minus their sum
    assert m.total_reward == pytest.approx(-4.0)
    assert m.mean_slowdown == pytest.approx(2.0)
    assert m.makespan == 3
    assert m.mean_wait == pytest.approx(1.0)
    assert m.mean_turnaround == pytest.approx(2.5)
    assert m.invalid_actions == 1
    assert m.unfinished == 0


def test_observation_is_deeprm_image() -> None:
    c = MultiResourceCluster(MultiResourceConfig())
    c.reset(two_jobs())
    img = c.observation()
    cfg = c.config
    assert img.shape == cfg.image_shape == (20, 2 * (10 + 5 * 10) + 3)
    # resource 0: cluster columns 0-9 empty; slot 0 (job 0) at columns 10-19: 2 rows x 5 units
    assert img[:, :10].sum() == 0
    assert img[:2, 10:15].all()
    assert img[2:, 10:20].sum() == 0
    assert img[:2, 15:20].sum() == 0
    # slot 1 (job 1): 1 row x 6 units
    assert img[0, 20:26].all()
    assert img[1:, 20:30].sum() == 0
    c.step(0)
    img = c.observation()
    assert img[:2, :5].all()
    assert img[2:, :10].sum() == 0
    assert img.dtype == np.float32
    assert img.min() >= 0
    assert img.max() <= 1


def test_backlog_fills_freed_slots_oldest_first() -> None:
    cfg = MultiResourceConfig(visible_slots=1)
    n = 4
    jobs = DeepRMJobs(
        step=np.zeros(n, np.int64),
        length=np.ones(n, np.int64),
        demand=np.full((n, 2), 3, np.int64),
        dominant=np.zeros(n, np.int64),
        steps=1,
    )
    c = MultiResourceCluster(cfg)
    c.reset(jobs)
    assert c.slots == [0]
    assert list(c.backlog) == [1, 2, 3]
    assert c.observation()[:, -cfg.backlog_columns :].sum() == 3
    c.step(0)
    assert c.slots == [1]
    assert list(c.backlog) == [2, 3]
    while not c.done:
        c.step(int(np.flatnonzero(c.action_masks())[0]))
    assert c.start_step.tolist() == [0, 0, 0, 1]  # three fit at once (9 of 10 units)


def test_masked_random_actions_are_always_valid_and_unmasked_never_accepted() -> None:
    cfg = MultiResourceConfig().with_load(1.5)
    rng = np.random.default_rng(7)
    c = MultiResourceCluster(cfg)
    sequences = multires_sequences(cfg, 30, rng=3)
    starts = 0
    for k, jobs in enumerate(sequences):
        c.reset(jobs)
        while not c.done and not c.truncated:
            mask = c.action_masks()
            assert mask[-1]  # wait is always valid
            # odd sequences: masked, every action taken is valid; even: unmasked, an invalid
            # action is never carried out
            allowed = np.flatnonzero(mask) if k % 2 else np.arange(cfg.n_actions)
            a = int(rng.choice(allowed))
            slot_job = c.slots[a] if a < cfg.visible_slots else -1
            _, valid = c.step(a)
            assert valid == bool(mask[a])
            if a < cfg.visible_slots and slot_job >= 0:
                assert (c.start_step[slot_job] >= 0) == bool(mask[a])
            starts += int(valid and a < cfg.visible_slots)
            assert (c.used <= c.capacity).all()
            assert (c.used >= 0).all()
        if k % 2:
            assert c.invalid_actions == 0
        assert c.done  # random valid play still finishes every job within the step limit
    assert starts == sum(j.step.shape[0] for j in sequences)


def test_gymnasium_check_env_passes() -> None:
    pytest.importorskip("gymnasium")
    from gymnasium.utils.env_checker import check_env

    from gridtrace.sim.rl import MultiResourceEnv

    env = MultiResourceEnv(MultiResourceConfig().with_load(0.7))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=False)
    # the only remark allowed: the env has no render mode to test
    assert [str(w.message) for w in caught if "render" not in str(w.message)] == []
    obs, info = env.reset(seed=5)
    assert env.observation_space.contains(obs)
    assert info["action_mask"].tolist() == env.action_masks().tolist()
    again, _ = env.reset(seed=5)
    np.testing.assert_array_equal(obs, again)  # the seed fixes the episode's jobs


def test_env_episode_ends_with_metrics() -> None:
    pytest.importorskip("gymnasium")
    from gridtrace.sim.rl import MultiResourceEnv

    env = MultiResourceEnv()
    env.reset(options={"jobs": two_jobs()})
    total = 0.0
    for a in (0, 1, 5, 1, 5):
        _, r, terminated, truncated, info = env.step(a)
        total += float(r)
    assert terminated
    assert not truncated
    assert total == pytest.approx(-4.0) == info["metrics"]["total_reward"]


def test_baselines_on_shared_sequences() -> None:
    cfg = MultiResourceConfig()
    seqs = multires_sequences(cfg, 10, rng=1)
    again = multires_sequences(cfg, 10, rng=1)
    assert all(np.array_equal(a.length, b.length) for a, b in zip(seqs, again, strict=True))
    policies = {name: make(np.random.default_rng(0)) for name, make in MULTIRES_POLICIES.items()}
    rows = evaluate_multires(cfg, seqs, policies)
    assert len(rows) == 10 * len(policies)
    assert all(r["unfinished"] == 0 and r["mean_slowdown"] >= 1 for r in rows)
    summary = {s["policy"]: s for s in summarise_multires(rows)}
    assert summary["sjf"]["slowdown_vs_sjf"] == 0
    # at 100 % load shortest-first beats strict FIFO and random by a wide margin
    assert summary["sjf"]["mean_slowdown"] < summary["fifo"]["mean_slowdown"]
    assert summary["sjf"]["mean_slowdown"] < summary["random"]["mean_slowdown"]
    s = summary["easy"]
    assert s["mean_slowdown_low"] <= s["mean_slowdown"] <= s["mean_slowdown_high"]


def test_easy_backfills_without_delaying_the_oldest_job() -> None:
    # job 0 runs 10 steps on 6 units; job 1 (8 units) waits for it; job 2 (2 units, 3 steps)
    # and job 3 (4 units, 12 steps) could start now: only job 2 leaves job 1's reservation
    jobs = DeepRMJobs(
        step=np.zeros(4, np.int64),
        length=np.array([10, 5, 3, 12]),
        demand=np.array([[6, 1], [8, 1], [2, 1], [4, 1]]),
        dominant=np.zeros(4, np.int64),
        steps=1,
    )
    easy = MULTIRES_POLICIES["easy"](None)
    c = MultiResourceCluster(MultiResourceConfig())
    c.reset(jobs)
    c.step(easy(c))  # job 0 (oldest, fits)
    assert easy(c) == c.slots.index(2)  # job 2 ends (step 3) before job 1's reservation (10)
    m = run_episode(MultiResourceConfig(), jobs, easy)
    assert m.unfinished == 0


def test_configuration_errors() -> None:
    with pytest.raises(ConfigError, match="time_horizon"):
        MultiResourceConfig(time_horizon=10)
    with pytest.raises(ConfigError, match="load must be"):
        MultiResourceConfig().with_load(1.9)  # above DeepRM's 184.5 % with p <= 1
    cfg = MultiResourceConfig(workload=DeepRMWorkload(load=0.4), visible_slots=3)
    assert MultiResourceConfig.from_dict(cfg.to_dict()) == cfg


def test_nothing_imports_torch() -> None:
    code = (
        "import sys, gridtrace, gridtrace.cli, gridtrace.sim.rl\n"
        "gridtrace.cli._build_parser()\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
        "assert 'stable_baselines3' not in sys.modules, 'sb3 imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_policy_that_only_waits_is_truncated_with_lower_bounds() -> None:
    cfg = MultiResourceConfig()
    jobs = multires_sequences(cfg, 1, rng=4)[0]
    m = run_episode(cfg, jobs, lambda c: c.config.visible_slots)
    assert m.jobs > 0
    assert m.unfinished == m.jobs  # nothing ever started
    assert m.makespan == jobs.steps + int(jobs.length.sum()) + 1  # the step limit
    assert m.mean_slowdown >= 1
    assert m.invalid_actions == 0


def test_ppo_without_the_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from gridtrace.sim.rl._ppo import require_ppo

    monkeypatch.setitem(sys.modules, "sb3_contrib", None)  # import fails as if not installed
    with pytest.raises(ConfigError, match=r"gridtrace\[ppo\]"):
        require_ppo()
