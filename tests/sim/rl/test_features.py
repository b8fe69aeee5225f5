"""The per-VO deficit entries of the scheduling state (issue 14, item 4)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from gridtrace.errors import ConfigError
from gridtrace.models import generate_preset_trace
from gridtrace.sim import simulate
from gridtrace.sim.rl import SchedulingFeatures


def test_without_targets_the_state_is_unchanged() -> None:
    f = SchedulingFeatures(["a", "b"], 10)
    assert not f.has_deficits
    assert f.n_state == 4 + 3
    assert not any(n.startswith("deficit_") for n in f.names_state)


def test_deficits_follow_the_decayed_usage_by_hand() -> None:
    h = 1000.0
    f = SchedulingFeatures(["a", "b"], 10, vo_targets={"a": 1, "b": 1}, half_life_s=h)
    assert f.n_state == 4 + 3 + 3
    assert f.names_state[-3:] == ("deficit_a", "deficit_b", "deficit_other")
    f.bind(np.array([0, 1, 2]), [2, 1, 4])
    # no usage yet: the deficits are the targets
    s = SimpleNamespace(now=0.0, running={})
    np.testing.assert_allclose(f.deficits(s), [0.5, 0.5, 0.0])  # type: ignore[arg-type]
    # job 0 (VO a, 2 cores) runs from t = 0 to H: a holds all the usage
    s = SimpleNamespace(now=0.0, running={0: 1e9})
    f.deficits(s)  # type: ignore[arg-type]
    s = SimpleNamespace(now=h, running={1: 1e9})
    np.testing.assert_allclose(f.deficits(s), [-0.5, 0.5, 0.0])  # type: ignore[arg-type]
    # then job 1 (VO b, 1 core) for H: a's usage halves to 1/rate, b gets 1 * (1 - 1/2) / rate
    # = 0.5 / rate, a had 2 * 0.5 / rate = 1 / rate, halved: 0.5 / rate. Equal shares.
    s = SimpleNamespace(now=2 * h, running={})
    np.testing.assert_allclose(f.deficits(s), [0.0, 0.0, 0.0], atol=1e-12)  # type: ignore[arg-type]


def test_unknown_target_vo_goes_to_the_other_slot() -> None:
    f = SchedulingFeatures(["a"], 10, vo_targets={"a": 3, "z": 1})
    f.bind(np.array([0]), [1])
    np.testing.assert_allclose(
        f.deficits(SimpleNamespace(now=0.0, running={})),  # type: ignore[arg-type]
        [0.75, 0.25],
    )


def test_bad_targets_and_half_life_are_refused() -> None:
    with pytest.raises(ConfigError):
        SchedulingFeatures(["a"], 10, vo_targets={"a": 0.0})
    with pytest.raises(ConfigError):
        SchedulingFeatures(["a"], 10, vo_targets={"a": 1.0}, half_life_s=0.0)


def test_an_agent_with_deficit_features_runs() -> None:
    from gridtrace.sim.rl import AgentSeeds, QueueSlowdownReward, make_rl_scheduler

    trace = generate_preset_trace("PE-1", rng=3, size=600)
    shares = {"vo1": 0.4, "vo2": 0.2, "vo3": 0.2, "vo4": 0.2}
    f = SchedulingFeatures(list(shares), 80, vo_targets=shares)
    seeds = AgentSeeds(*(np.random.SeedSequence(1, spawn_key=(k,)) for k in range(3)))
    agent = make_rl_scheduler("mlp", f, QueueSlowdownReward(), seeds)
    res = simulate(trace, policy=agent, cores=80, warmup_jobs=0, drain_jobs=0)
    assert res.jobs.num_rows == 600
    assert agent.decisions_ == 600
