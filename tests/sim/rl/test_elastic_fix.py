"""The RL provisioner's queue-priced reward and its pre-training on the threshold autoscaler."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from gridtrace.errors import ConfigError
from gridtrace.models import generate_preset_trace
from gridtrace.schema import with_trace_metadata
from gridtrace.sim import JobRows, QueueView, ThresholdAutoscaler, simulate
from gridtrace.sim.rl import MLPQ, ElasticProvisioner, ProvisioningFeatures
from gridtrace.sim.rl._elastic import interval_reward, queue_w


def make_trace(jobs: list[tuple[int, float, float, int]]) -> pa.Table:
    """Trace from (job_id, submit_s, run_s, cores) tuples."""
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
    return with_trace_metadata(
        table, origin="1970-01-01T00:00:00+00:00", site="t", cores=4, tau_s=900.0, provenance={}
    )


def _provisioner(**options: object) -> ElasticProvisioner:
    feats = ProvisioningFeatures(4)
    qf = MLPQ(feats.n_state, feats.n_action, rng=np.random.default_rng(0))
    return ElasticProvisioner(qf, feats, rng=np.random.default_rng(1), **options)  # type: ignore[arg-type]


def test_queue_w_by_hand() -> None:
    # rows 0 and 2 queued at t = 300: job 0 (run 100, submitted at 0) W = 100 / 400;
    # job 2 (run 2000, batch, submitted at 100) W = 2000 / 2200
    jobs = JobRows(
        [0, 1, 2], [0.0, 50.0, 100.0], [100.0, 10.0, 2000.0], [1, 1, 1], ["a"] * 3,
        interactive=[True, True, False],
    )  # fmt: skip
    view = QueueView({0: None, 2: None}, jobs)
    total, count = queue_w(view, 300.0)
    assert count == 2
    assert total == pytest.approx(0.25 + 2000 / 2200)
    assert queue_w(view, 300.0, interactive_only=True) == (pytest.approx(0.25), 1)


def test_the_queue_reward_prices_jobs_that_wait_now() -> None:
    # One core, a 1000-s batch job from t = 0, then ten 60-s interactive jobs at t = 10 queue
    # behind it. At the decision at t = 900 nothing has completed since t = 0: the default W̄
    # falls back to the run so far (1: no job has completed), the queue-priced one to the W the
    # waiting jobs would have if they started now, 60 / (60 + 890).
    trace = make_trace([(0, 0.0, 1000.0, 1)] + [(k, 10.0, 60.0, 1) for k in range(1, 11)])
    seen = {}
    for w_reward in ("completed", "queue"):
        prov = _provisioner(
            floor=1, ceiling=1, levels=2, interval_s=900.0, epsilon=0.0, learning=False,
            w_reward=w_reward, w_class="interactive", lambda_e=1.0,
        )  # fmt: skip
        simulate(trace, cores=1, provisioning=prov, warmup_jobs=0, drain_jobs=0)
        n = prov.store_.size
        assert n >= 2
        seen[w_reward] = prov.store_.reward[0]  # paid at t = 900 (λ_e = 1: the reward is W̄)
    assert seen["completed"] == pytest.approx(1.0)
    assert seen["queue"] == pytest.approx(60.0 / 950.0)


def test_interval_reward_with_pending_by_hand() -> None:
    class State:
        busy_core_s = 600.0
        completed, completed_w = 3, 2.0
        completed_interactive, completed_interactive_w = 2, 1.5

    last = (0.0, 0.0, 1, 0.5, 2)  # 2 cores over [0, 400): 800 core-s provisioned, 600 used
    reward, u, w_bar = interval_reward(State(), 400.0, last, 0.5, (0.6, 2))  # type: ignore[arg-type]
    # completed in the interval: 2 jobs, W 1.5; waiting: 2 jobs, W 0.6 -> W̄ = 2.1 / 4
    assert (u, w_bar) == (pytest.approx(0.75), pytest.approx(2.1 / 4))
    assert reward == pytest.approx(0.5 * 2.1 / 4 + 0.5 * 0.75)
    _, _, w_int = interval_reward(State(), 400.0, last, 0.5, (0.6, 2), interactive_only=True)  # type: ignore[arg-type]
    assert w_int == pytest.approx((1.0 + 0.6) / 3)  # last holds interactive counters (1, 0.5)


def test_pretraining_follows_the_threshold_autoscaler() -> None:
    trace = generate_preset_trace("PE-1", rng=3, size=1500)
    options = {"floor": 30, "ceiling": 88, "step": 8, "cooldown_s": 1800.0, "interval_s": 900.0}
    alone = simulate(trace, provisioning=ThresholdAutoscaler(**options))  # type: ignore[arg-type]
    feats = ProvisioningFeatures(80)
    qf = MLPQ(feats.n_state, feats.n_action, rng=np.random.default_rng(0))
    prov = ElasticProvisioner(
        qf, feats, rng=np.random.default_rng(1), floor=30, ceiling=88, interval_s=900.0,
        behaviour=ThresholdAutoscaler(**options),  # type: ignore[arg-type]
    )  # fmt: skip
    taught = simulate(trace, provisioning=prov)
    for a, b in zip(alone.pool_timeline, taught.pool_timeline, strict=True):
        np.testing.assert_array_equal(a, b)
    assert prov.refits_ > 0  # it learned while the autoscaler chose
    assert prov.describe()["behaviour"] == "threshold"


def test_bad_reward_options() -> None:
    with pytest.raises(ConfigError, match="w_reward"):
        _provisioner(floor=1, w_reward="started")
