"""PPO (sb3-contrib MaskablePPO) on the multi-resource setup: training, saving, CLI round trip."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gridtrace.cli import main
from gridtrace.errors import ConfigError
from gridtrace.sim.rl import (
    MultiResourceCluster,
    MultiResourceConfig,
    PPOConfig,
    evaluate_ppo,
    load_ppo,
    multires_sequences,
    ppo_policy,
    save_ppo,
    train_ppo,
)

pytest.importorskip("sb3_contrib")


def test_config_is_the_papers() -> None:
    c = PPOConfig()
    assert (c.n_envs, c.n_steps, c.n_epochs) == (24, 64, 4)
    assert (c.learning_rate, c.clip_range, c.ent_coef) == (1e-3, 0.1, 0.01)
    assert (c.gamma, c.gae_lambda, c.hidden) == (1.0, 0.95, 20)
    with pytest.raises(ConfigError):
        PPOConfig(vec_env="threads")  # type: ignore[arg-type]


def test_network_is_two_separate_20_unit_relu_layers() -> None:
    import torch

    run = train_ppo(ppo_config=PPOConfig(n_envs=2, n_steps=16, total_timesteps=32), seed=0)
    net = run.model.policy.mlp_extractor
    assert [m.out_features for m in net.policy_net if isinstance(m, torch.nn.Linear)] == [20]
    assert [m.out_features for m in net.value_net if isinstance(m, torch.nn.Linear)] == [20]
    assert any(isinstance(m, torch.nn.ReLU) for m in net.policy_net)
    assert run.model.gamma == 1.0


def test_same_seed_same_training(tmp_path: Path) -> None:
    cfg = PPOConfig(n_envs=2, n_steps=32, total_timesteps=128)
    a = train_ppo(seed=3, ppo_config=cfg)
    b = train_ppo(seed=3, ppo_config=cfg)
    for pa_, pb in zip(a.model.policy.parameters(), b.model.policy.parameters(), strict=True):
        assert bool((pa_ == pb).all())
    np.testing.assert_equal(a.learning_curve, b.learning_curve)  # NaN (no episode) == NaN
    # saved and loaded, it takes the same actions
    loaded = load_ppo(save_ppo(a, tmp_path / "p"))
    assert loaded.env_config == a.env_config
    assert loaded.ppo_config == a.ppo_config
    c = MultiResourceCluster(a.env_config)
    c.reset(multires_sequences(a.env_config, 1, rng=9)[0])
    first, again = ppo_policy(a.model), ppo_policy(loaded.model)
    for _ in range(50):
        act = first(c)
        assert act == again(c)
        c.step(act)


@pytest.mark.slow
def test_short_training_beats_random() -> None:
    # 10 updates of the paper's 24 x 64 at 100 % load, fixed seed; measured: PPO 8.8 vs random
    # 10.3 mean slowdown on 10 fresh sequences (SJF 3.4)
    run = train_ppo(ppo_config=PPOConfig(total_timesteps=24 * 64 * 10), seed=0)
    _, summary = evaluate_ppo(run, sequences=10, seed=1, baselines=("random", "sjf"))
    by = {s["policy"]: s for s in summary}
    assert by["ppo"]["mean_slowdown"] < by["random"]["mean_slowdown"]


def test_cli_train_then_evaluate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "policy"
    train = ["ppo", "train", "--timesteps", "256", "--envs", "2", "--load", "0.5", "--seed", "0"]
    assert main([*train, "-o", str(policy)]) == 0
    assert (policy / "policy.zip").is_file()
    config = json.loads((policy / "config.json").read_text())
    assert config["multires"]["workload"]["load"] == 0.5
    assert config["ppo"]["n_envs"] == 2
    assert config["seed"] == 0
    assert config["timesteps"] >= 256
    out = tmp_path / "eval"
    evaluate = ["ppo", "evaluate", "--sequences", "2", "--loads", "0.5,max"]
    assert main([*evaluate, str(policy), "-o", str(out)]) == 0
    result = json.loads((out / "evaluation.json").read_text())
    policies = {r["policy"] for r in result["summary"]}
    assert policies == {"ppo", "sjf", "packer", "tetris", "easy", "fifo", "random"}
    loads = sorted({r["load"] for r in result["summary"]})
    assert loads[0] == 0.5
    assert loads[1] == pytest.approx(MultiResourceConfig().workload.max_load)
    assert len(result["rows"]) == 7 * 2 * 2
    assert "vs SJF" in capsys.readouterr().out


def test_cli_evaluate_refuses_a_folder_without_a_policy(tmp_path: Path) -> None:
    assert main(["ppo", "evaluate", str(tmp_path), "-o", str(tmp_path / "e")]) == 2


def test_a_policy_saved_before_setups_existed_loads_as_deeprm(tmp_path: Path) -> None:
    run = train_ppo(ppo_config=PPOConfig(n_envs=2, n_steps=16, total_timesteps=32), seed=0)
    folder = save_ppo(run, tmp_path / "p")
    record = json.loads((folder / "config.json").read_text())
    assert record.pop("setup") == "deeprm"
    (folder / "config.json").write_text(json.dumps(record))  # as written before issue 15 item 3
    assert load_ppo(folder).env_config == run.env_config
