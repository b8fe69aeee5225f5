"""RLScheduler's PPO setup: environment, kernel policy, training, saving, evaluation, CLI."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from gridtrace.errors import ConfigError
from gridtrace.sim._rlscheduler import RLSchedulerWorkload
from gridtrace.sim.rl._rlsched_env import RLSchedulerDecision

pytest.importorskip("gymnasium")

from gridtrace.sim.rl._rlsched_ppo import (
    JOB_FEATURES,
    MAX_QUEUE_SIZE,
    MAX_WAIT_S,
    RLSchedPPOConfig,
    RLSchedulerEnv,
    RLSchedulerObserver,
    run_observed_agent,
)

CAP = 1.0 - 1e-5
PAD = [0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0]


def synthetic(n: int = 400, seed: int = 0, nodes: int = 64) -> RLSchedulerWorkload:
    """Jobs arriving faster than a small cluster serves them: a queue builds up."""
    g = np.random.default_rng(seed)
    submit = np.cumsum(g.exponential(30.0, n)).round()
    run = np.where(g.random(n) < 0.5, g.uniform(10, 60, n), g.uniform(2000, 4000, n)).round()
    return RLSchedulerWorkload(
        job_id=np.arange(1, n + 1),
        submit_s=submit,
        run_s=run,
        request_s=run,
        cores=g.choice([1, 2, 4, 8, 16], n),
        max_nodes=nodes,
        max_procs=nodes,
    )


def workload(submit: list[float], run: list[float], cores: list[int], nodes: int):
    n = len(submit)
    return RLSchedulerWorkload(
        job_id=np.arange(1, n + 1),
        submit_s=np.asarray(submit, dtype=np.float64),
        run_s=np.asarray(run, dtype=np.float64),
        request_s=np.asarray(run, dtype=np.float64),
        cores=np.asarray(cores, dtype=np.int64),
        max_nodes=nodes,
        max_procs=nodes,
    )


# --------------------------------------------------------------------------- environment


def test_check_env_passes_with_and_without_backfilling() -> None:
    from gymnasium.utils.env_checker import check_env

    for backfill in (False, True):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(RLSchedulerEnv(synthetic(), backfill=backfill, sequence=64))
        # the only remark allowed: the env has no render mode to test
        assert [str(w.message) for w in caught if "render" not in str(w.message)] == []


def test_observation_of_a_hand_built_queue() -> None:
    # 4 nodes; the longest run of the trace is 400 s
    wl = workload([0, 100, 200, 300], [400, 100, 50, 10], [1, 4, 2, 1], nodes=4)
    obs, mask, jobs = RLSchedulerObserver(wl, 0, 4).observe(
        RLSchedulerDecision(now=3700.0, queue=(2, 1, 3), free_nodes=2)
    )
    assert obs.shape == (MAX_QUEUE_SIZE, JOB_FEATURES)
    assert obs.dtype == np.float32
    assert jobs == [1, 2, 3]  # submit order
    want = [
        [3600 / MAX_WAIT_S, 100 / 400, CAP, 1, 1, 1, 1, 1e-5],  # 4 nodes > 2 free
        [3500 / MAX_WAIT_S, 50 / 400, 2 / 4, 1, 1, 1, 1, CAP],
        [3400 / MAX_WAIT_S, 10 / 400, 1 / 4, 1, 1, 1, 1, CAP],
    ]
    np.testing.assert_allclose(obs[:3], np.asarray(want, dtype=np.float32), rtol=1e-6)
    np.testing.assert_array_equal(obs[3:], np.tile(np.float32(PAD), (MAX_QUEUE_SIZE - 3, 1)))
    assert mask.tolist() == [True] * 3 + [False] * (MAX_QUEUE_SIZE - 3)
    # a wait beyond 12 h is capped below 1
    far, _, _ = RLSchedulerObserver(wl, 0, 4).observe(RLSchedulerDecision(1e6, (0,), 4))
    assert far[0, 0] == np.float32(CAP)


def test_a_long_queue_shows_sjf_and_smallest_jobs_alternately() -> None:
    n = 300
    wl = workload(
        list(range(n)),
        [float(1000 - i) for i in range(n)],
        [1 + (i * 7) % 16 for i in range(n)],
        16,
    )
    observer = RLSchedulerObserver(wl, 0, n)
    shown = observer.visible(list(range(n)))
    assert len(shown) == MAX_QUEUE_SIZE == len(set(shown))
    assert shown[0] == n - 1  # the shortest job
    smallest = min(range(n), key=lambda j: (wl.cores[j], wl.submit_s[j]))
    assert shown[1] == smallest


def test_reward_of_a_hand_computed_three_job_episode() -> None:
    # 2 nodes. Job 0 (2 nodes, 100 s) starts at 0; job 1 (1 node, 50 s, submitted at 10) and
    # job 2 (1 node, 5 s, submitted at 20) wait for it and both start at 100.
    # Bounded slowdowns: 1, (90 + 50) / 50 = 2.8, (80 + 5) / max(5, 10) = 8.5.
    wl = workload(
        [0, 10, 20, 30, 40, 50, 60, 70], [100, 50, 5, 1, 1, 1, 1, 1], [2, 1, 1] + [1] * 5, 2
    )
    env = RLSchedulerEnv(wl, sequence=3)
    env.reset(options={"start": 0})
    rewards, done, steps = [], False, 0
    while not done:
        _, reward, done, truncated, info = env.step(0)
        rewards.append(reward)
        steps += 1
        assert not truncated
    assert steps == 3
    assert rewards[:-1] == [0.0, 0.0]
    assert rewards[-1] == pytest.approx(-(1 + 2.8 + 8.5) / 3)
    assert info["bsld_mean"] == pytest.approx((1 + 2.8 + 8.5) / 3)


def test_episodes_start_where_rlscheduler_draws_them_from_the_seed() -> None:
    wl = synthetic()
    env = RLSchedulerEnv(wl, sequence=64)
    starts = [env.reset(seed=5)[1]["start"]] + [env.reset()[1]["start"] for _ in range(20)]
    assert all(64 <= s < len(wl) - 64 - 1 for s in starts)
    again = RLSchedulerEnv(wl, sequence=64)
    assert [again.reset(seed=5)[1]["start"]] + [
        again.reset()[1]["start"] for _ in range(20)
    ] == starts


@pytest.mark.parametrize("backfill", [False, True])
def test_random_masked_play_never_chooses_a_padded_slot(backfill: bool) -> None:
    env = RLSchedulerEnv(synthetic(nodes=16), backfill=backfill, sequence=128)
    g = np.random.default_rng(0)
    longest = 0
    for episode in range(3):
        obs, info = env.reset(seed=episode)
        done = False
        while not done:
            mask = env.action_masks()
            assert mask.any()
            assert np.all(obs[~mask] == np.float32(PAD))  # padded rows are exactly the masked
            longest = max(longest, int(mask.sum()))
            action = int(g.choice(np.flatnonzero(mask)))
            obs, _, done, _, info = env.step(action)
            assert info["valid"]
    assert longest > 1  # the agent had real choices


def test_a_padded_slot_takes_slot_zero_and_says_so() -> None:
    env = RLSchedulerEnv(synthetic(), sequence=64)
    env.reset(seed=0)
    _, _, _, _, info = env.step(MAX_QUEUE_SIZE - 1)
    assert info["valid"] is False


def test_too_short_a_trace_is_refused() -> None:
    with pytest.raises(ConfigError, match="no room"):
        RLSchedulerEnv(synthetic(100), sequence=64)


def test_choosing_the_shortest_visible_job_is_sjf_while_the_queue_fits() -> None:
    # With at most 128 queued jobs every waiting job is visible, so picking the shortest
    # request (earliest submit on ties) is RLScheduler's SJF.
    from gridtrace.sim import simulate_rlscheduler_window

    wl = synthetic(nodes=64)

    def sjf(obs: np.ndarray, mask: np.ndarray) -> int:
        return int(np.argmin(np.where(mask, obs[:, 1], np.inf)))

    for backfill in (False, True):
        got = run_observed_agent(wl, 50, sjf, backfill=backfill, window=128)
        want = simulate_rlscheduler_window(wl, 50, policy="SJF", backfill=backfill, window=128)
        assert got == pytest.approx(want.bsld_mean)


# --------------------------------------------------------------------------- PPO

sb3 = pytest.importorskip("sb3_contrib")

TINY = RLSchedPPOConfig(trajectories=2, sequence=32, n_epochs=2, batch_size=32, total_timesteps=128)


def test_config_defaults_are_rlschedulers() -> None:
    c = RLSchedPPOConfig()
    assert (c.trajectories, c.sequence, c.n_epochs) == (100, 256, 80)
    assert (c.learning_rate, c.clip_range, c.target_kl) == (3e-4, 0.2, 0.01)
    assert (c.gamma, c.gae_lambda, c.ent_coef) == (1.0, 0.97, 0.0)
    assert c.n_steps == 25600
    assert c.minibatch == 25600  # full-batch steps
    with pytest.raises(ConfigError):
        RLSchedPPOConfig(n_epochs=0)


def test_kernel_actor_is_permutation_equivariant_over_rows() -> None:
    import torch

    from gridtrace.sim.rl._rlsched_policy import RLSchedulerNets

    torch.manual_seed(0)
    nets = RLSchedulerNets()
    x = torch.rand(3, MAX_QUEUE_SIZE, JOB_FEATURES)
    perm = torch.from_numpy(np.random.default_rng(1).permutation(MAX_QUEUE_SIZE))
    scores = nets.forward_actor(x.reshape(3, -1))
    permuted = nets.forward_actor(x[:, perm].reshape(3, -1))
    torch.testing.assert_close(permuted, scores[:, perm])
    # the actor is one 8-32-16-8-1 MLP; the critic ends in 128-64-32-8 (+ the 8 -> 1 output)
    sizes = [m.out_features for m in nets.actor_kernel if isinstance(m, torch.nn.Linear)]
    assert sizes == [32, 16, 8, 1]
    sizes = [m.out_features for m in nets.critic_mlp if isinstance(m, torch.nn.Linear)]
    assert sizes == [64, 32, 8]


def test_same_seed_same_training_and_save_load_same_actions(tmp_path: Path) -> None:
    from gridtrace.sim.rl._rlsched_ppo import (
        load_rlsched_ppo,
        save_rlsched_ppo,
        train_rlsched_ppo,
    )

    wl = synthetic()
    a = train_rlsched_ppo(wl, TINY, seed=3)
    b = train_rlsched_ppo(wl, TINY, seed=3)
    for pa_, pb in zip(a.model.policy.parameters(), b.model.policy.parameters(), strict=True):
        assert bool((pa_ == pb).all())
    np.testing.assert_equal(a.learning_curve, b.learning_curve)
    assert a.model.policy.__class__.__name__ == "RLSchedulerKernelPolicy"
    loaded = load_rlsched_ppo(save_rlsched_ppo(a, tmp_path / "p"))
    assert loaded.config == a.config
    record = json.loads((tmp_path / "p" / "config.json").read_text())
    assert record["setup"] == "rlscheduler"
    env = RLSchedulerEnv(wl, sequence=64)
    obs, _ = env.reset(seed=1)
    for _ in range(40):
        mask = env.action_masks()
        x, _ = a.model.predict(obs, action_masks=mask, deterministic=True)
        y, _ = loaded.model.predict(obs, action_masks=mask, deterministic=True)
        assert int(x) == int(y)
        assert mask[int(x)]
        obs, _, done, _, _ = env.step(int(x))
        if done:
            obs, _ = env.reset()
    # the other setup's loader refuses it
    from gridtrace.sim.rl import load_ppo

    with pytest.raises(ConfigError, match="rlscheduler"):
        load_ppo(tmp_path / "p")


@pytest.mark.slow
def test_short_training_beats_random_on_a_fixed_seed() -> None:
    from gridtrace.sim.rl._rlsched_ppo import (
        model_chooser,
        train_rlsched_ppo,
    )

    wl = synthetic(1200, seed=4, nodes=32)
    # short episodes and a larger step than RLScheduler's 3e-4, to learn in ~16k actions
    cfg = RLSchedPPOConfig(
        trajectories=16,
        sequence=32,
        n_epochs=10,
        batch_size=128,
        learning_rate=1e-3,
        total_timesteps=16384,
    )
    run = train_rlsched_ppo(wl, cfg, seed=0)
    g = np.random.default_rng(0)

    def random_slot(obs: np.ndarray, mask: np.ndarray) -> int:
        return int(g.choice(np.flatnonzero(mask)))

    starts = range(200, 1000, 100)
    trained = np.mean(
        [run_observed_agent(wl, s, model_chooser(run.model), window=128) for s in starts]
    )
    rand = np.mean([run_observed_agent(wl, s, random_slot, window=128) for s in starts])
    assert trained < 0.5 * rand  # random ~412 on these windows; SJF ~30


# --------------------------------------------------------------------------- CLI


def write_swf(path: Path, wl: RLSchedulerWorkload) -> None:
    lines = [f"; MaxNodes: {wl.max_nodes}", f"; MaxProcs: {wl.max_procs}"]
    for i in range(len(wl)):
        run, req, cores = int(wl.run_s[i]), int(wl.request_s[i]), int(wl.cores[i])
        sub = int(wl.submit_s[i])
        lines.append(f"{i + 1} {sub} 0 {run} {cores} -1 -1 {cores} {req} -1 1 -1 -1 -1 -1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")


def test_cli_train_and_evaluate_round_trip(tmp_path: Path) -> None:
    from gridtrace.cli import main

    trace = tmp_path / "tiny.swf"
    write_swf(trace, synthetic(600))
    out = tmp_path / "agent"
    args = ["ppo", "train", "--setup", "rlscheduler", "--trace", str(trace), "-o", str(out)]
    args += ["--timesteps", "64", "--trajectories", "1", "--sequence", "64", "--epochs", "1"]
    assert main(args) == 0
    record = json.loads((out / "config.json").read_text())
    assert record["setup"] == "rlscheduler"
    assert record["trace"] == "tiny"
    ev = out  # the pipeline writes the evaluation beside the agent
    args = ["ppo", "evaluate", str(out), "--setup", "rlscheduler", "-o", str(ev)]
    args += ["--trace", str(trace), "--trace", str(trace), "--window", "128", "--windows", "3"]
    assert main(args) == 0
    result = json.loads((ev / "evaluation.json").read_text())
    assert [e["trace"] for e in result["evaluations"]] == ["tiny", "tiny"]
    labels = [p["label"] for p in result["evaluations"][0]["policies"]]
    assert labels[:2] == ["PPO", "FCFS"]
    assert {"SJF", "F1"} <= set(labels)
    for p in result["evaluations"][0]["policies"]:
        assert len(p["bsld"]) == 3
        assert p["low"] <= p["mean"] <= p["high"]
    # the report page from the agent's folder, with its entry for the index
    page, entry = tmp_path / "reports" / "index.html", tmp_path / "reports" / "entry.json"
    assert main(["ppo", "report", str(out), "-o", str(page), "--entry", str(entry)]) == 0
    html = page.read_text()
    assert "PPO on RLScheduler" in html
    assert "Generalisation" in html
    assert json.loads(entry.read_text())["href"] == "ppo-rlscheduler/index.html"
