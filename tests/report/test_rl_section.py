"""The report's RL section: VO-target settings, reward names and further sections in the page."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gridtrace.errors import ConfigError
from gridtrace.models import generate_preset_trace
from gridtrace.report import rl_section
from gridtrace.sim.rl import ExperimentConfig, QueueSlowdownReward, run_experiment

INFEASIBLE = {"vo1": 0.4, "vo2": 0.2, "vo3": 0.2, "vo4": 0.2}
SMALL = {"eval_seeds": 2, "train_draws": 1, "warmup_jobs": 50, "drain_jobs": 50}


@pytest.fixture(scope="module")
def own() -> dict[str, Any]:
    """A real summary under the preset's own targets (no ``targets`` key: as written so far)."""
    return run_experiment("MM50-20", ExperimentConfig(size=600, **SMALL)).summary


@pytest.fixture(scope="module")
def infeasible() -> dict[str, Any]:
    """A real run under infeasible targets (the preset's draw as a trace: presets use their own).

    Labelled as run_experiment will label it, with one more variant trained on the
    queue-slowdown reward (its agent description as the reward describes itself).
    """
    trace = generate_preset_trace("MM50-20", rng=5, size=1200)
    summary = copy.deepcopy(
        run_experiment(
            trace, ExperimentConfig(**SMALL), name="MM50-20", vo_shares=INFEASIBLE
        ).summary
    )
    summary["targets"] = "infeasible"
    agent = copy.deepcopy(summary["agents"]["rl-esn"])
    agent["scheduler"]["name"] = "rl-esn-slowdown"
    agent["scheduler"]["reward"] = QueueSlowdownReward().describe()
    summary["agents"]["rl-esn-slowdown"] = agent
    return summary


# --- rl_section ---------------------------------------------------------------------------------


def test_own_targets_title_and_reward_fact(own) -> None:
    section = rl_section(own)
    assert section["targets"] is None
    assert section["vo_shares"] == {"vo1": 0.7, "vo2": 0.2, "vo3": 0.05, "vo4": 0.05}
    title = "VO targets: the workload's own (vo1 0.70, vo2 0.20, vo3 0.05, vo4 0.05)"
    assert section["title"] == title
    assert section["facts"]["VO targets"] == title.removeprefix("VO targets: ")
    assert section["facts"]["reward"] == (
        "w-f (the research's reward λ_s W + (1 − λ_s) F): rl-mlp (λ_s 0.5), rl-esn (λ_s 0.5)"
    )
    assert [(a["variant"], a["reward"]) for a in section["agents"]] == [
        ("rl-mlp", "w-f"),
        ("rl-esn", "w-f"),
    ]
    # the keys the section had before stay
    for key in ("facts", "verdict", "table2", "shares", "published", "figures", "has_es"):
        assert key in section
    assert section["facts"]["experiment"] == "scheduling"
    assert len(section["table2"]) == 3 * len(own["aggregate"])


def test_infeasible_targets_and_a_reward_not_the_researchs(infeasible) -> None:
    section = rl_section(infeasible)
    assert section["targets"] == "infeasible"
    assert section["vo_shares"] == INFEASIBLE
    assert section["title"] == "VO targets: infeasible (vo1 0.40, vo2 0.20, vo3 0.20, vo4 0.20)"
    assert section["facts"]["reward"] == (
        "w-f (the research's reward λ_s W + (1 − λ_s) F): rl-mlp (λ_s 0.5), rl-esn (λ_s 0.5); "
        "queue-slowdown (not the research's: the per-time slowdown penalty of DeepRM): "
        "rl-esn-slowdown"
    )
    assert section["agents"][-1] == {
        "variant": "rl-esn-slowdown",
        "reward": "queue-slowdown",
        "scheduler": infeasible["agents"]["rl-esn-slowdown"]["scheduler"],
        "provisioner": None,
    }


def test_summary_without_shares_or_agents(own) -> None:
    bare = {**own, "vo_shares": None, "agents": {}}
    section = rl_section(bare)
    assert section["title"] == "VO targets: the workload's own (none)"
    assert "reward" not in section["facts"]
    traced = {**own, "vo_shares_source": "the training part's core-second shares (top 8 VOs)"}
    assert rl_section(traced)["facts"]["VO targets"].endswith(", " + traced["vo_shares_source"])


def test_targets_must_be_a_label(own) -> None:
    with pytest.raises(ConfigError, match="targets"):
        rl_section({**own, "targets": 1})
