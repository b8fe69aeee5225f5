"""The interactive-weighted slowdown reward (appended to gridtrace.sim.rl._rewards)."""

from __future__ import annotations

import numpy as np
import pytest

from gridtrace.errors import ConfigError
from gridtrace.models import generate_preset_trace
from gridtrace.sim import JobRows, simulate
from gridtrace.sim.rl import ESNQ, SarsaScheduler, SchedulingFeatures
from gridtrace.sim.rl._rewards import InteractiveSlowdownReward


def test_interactive_slowdown_by_hand() -> None:
    # job 0 (interactive, run 100 s) and job 1 (batch, run 30 s -> 60 s floor) wait 0 -> 40 s
    jobs = JobRows([0, 1], [0.0, 0.0], [100.0, 30.0], [1, 1], ["a", "a"], interactive=[True, False])
    reward = InteractiveSlowdownReward(floor_s=60.0, batch_weight=0.25)
    reward.reset(jobs)
    assert reward.advance(2, 40.0) == pytest.approx(-(40.0 / 100.0 + 0.25 * 40.0 / 60.0))
    reward.elect(0, 40.0)
    assert reward.advance(2, 100.0) == pytest.approx(-0.25 * 60.0 / 60.0)
    assert reward.describe()["batch_weight"] == 0.25
    with pytest.raises(ConfigError, match="batch_weight"):
        InteractiveSlowdownReward(batch_weight=2.0)
    with pytest.raises(ConfigError, match="interactive flags"):
        reward.reset(JobRows([0], [0.0], [1.0], [1], ["a"]))


@pytest.mark.parametrize("batch_weight", [0.0, 0.3])
def test_interactive_slowdown_sums_to_the_weighted_slowdown(batch_weight: float) -> None:
    # paid per interval, an episode's rewards sum to -sum_j weight_j wait_j / max(run_j, floor)
    trace = generate_preset_trace("PE-1", rng=2, size=800)
    feats = SchedulingFeatures(["a", "b"], 50)
    net, explore = np.random.SeedSequence(7).spawn(2)
    qf = ESNQ(feats.n_state, feats.n_action, rng=np.random.default_rng(net))
    reward = InteractiveSlowdownReward(60.0, batch_weight=batch_weight)
    agent = SarsaScheduler(qf, feats, reward, rng=np.random.default_rng(explore))
    result = simulate(trace, cores=50, policy=agent, warmup_jobs=0, drain_jobs=0)
    agent.finish()
    n = trace.num_rows
    assert agent.store_.ready[:n].all()
    jobs = result.jobs
    wait = jobs["wait_s"].to_numpy()
    run = jobs["run_s"].to_numpy()
    inter = np.asarray(jobs["interactive"].to_pylist(), dtype=bool)
    weight = np.where(inter, 1.0, batch_weight)
    assert wait[inter].sum() > 0  # the check is not vacuous
    expected = -np.sum(weight * wait / np.maximum(run, 60.0))
    assert agent.store_.reward[:n].sum() == pytest.approx(expected, rel=1e-9)
