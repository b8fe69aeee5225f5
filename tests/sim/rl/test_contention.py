"""The contention protocol (issue 14): regime, disjoint splits, baselines, margins, flags."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gridtrace.errors import ConfigError
from gridtrace.models import generate_preset_trace
from gridtrace.sim.rl import (
    CONTENTION_BASELINES,
    CONTENTION_SCHEMA,
    ContentionConfig,
    contention_regime,
    run_contention,
    time_splits,
)

QUICK = ContentionConfig(
    seeds=2,
    tune_seeds=1,
    train_episodes=1,
    rewards=("w-f", "slowdown"),
    lambdas=(0.5,),
    warmup_jobs=50,
    drain_jobs=50,
    windows=5,
)


@pytest.fixture(scope="module")
def trace():  # type: ignore[no-untyped-def]
    return generate_preset_trace("PE-1", rng=11, size=1500)


@pytest.fixture(scope="module")
def summary(trace):  # type: ignore[no-untyped-def]
    regime = contention_regime(trace, load=0.9, how="compress", pool_cores=80)
    return run_contention(regime, QUICK, name="pe1").summary


def test_splits_are_disjoint_ordered_and_cover_the_trace(trace) -> None:  # type: ignore[no-untyped-def]
    parts, split = time_splits(trace, (0.5, 0.2, 0.3))
    assert sum(p.num_rows for p in parts) == trace.num_rows
    ids = [set(p.column("job_id").to_pylist()) for p in parts]
    assert not ids[0] & ids[1]
    assert not ids[1] & ids[2]
    assert not ids[0] & ids[2]
    assert split["train"]["last_submit_s"] < split["validation"]["first_submit_s"]
    assert split["validation"]["last_submit_s"] < split["test"]["first_submit_s"]
    assert split["train"]["end_s"] == split["validation"]["start_s"]
    assert "start_utc" in split["test"]


def test_bad_fractions_are_refused(trace) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError):
        time_splits(trace, (0.5, 0.6, 0.3))
    with pytest.raises(ConfigError):
        ContentionConfig(fractions=(0.5, 0.5, 0.0))


def test_summary_has_every_key(summary) -> None:  # type: ignore[no-untyped-def]
    assert summary["schema"] == CONTENTION_SCHEMA
    for key in (
        "regime",
        "split",
        "metrics",
        "best_baseline",
        "rl_margin",
        "baseline_spread",
        "flags",
        "learning_curves",
        "action_mix",
        "tuning",
        "aggregate",
        "protocol",
        "verdict",
    ):
        assert key in summary, key
    # the report's schema-1 reads still work
    assert summary["schema"].startswith("gridtrace.rl-experiment/")
    assert {"train_jobs", "t_split_s", "eval_jobs"} <= set(summary["protocol"]["split"])


def test_transformed_regime_is_recorded_and_native_dropped(summary) -> None:  # type: ignore[no-untyped-def]
    reg = summary["regime"]
    assert reg["transformed"]
    assert reg["how"] == "compress"
    assert reg["cores"] == 80
    assert reg["target_load"] == 0.9
    assert abs(reg["offered_load"] / 0.9 - 1) < 0.02
    assert "native" not in summary["metrics"]["interactive_w_mean"]


def test_baselines_present_and_margin_against_the_best(summary) -> None:  # type: ignore[no-untyped-def]
    w = summary["metrics"]["interactive_w_mean"]
    assert set(CONTENTION_BASELINES) <= set(w)
    assert w["rl"]["seeds"]["n"] == 2
    best = summary["best_baseline"]["interactive_w_mean"]
    means = {b: w[b]["mean"] for b in CONTENTION_BASELINES}
    assert best["policy"] == max(means, key=lambda b: means[b])
    margin = summary["rl_margin"]["interactive_w_mean"]["rl"]
    assert margin["against"] == best["policy"]
    assert margin["value"] == pytest.approx(w["rl"]["mean"] - best["mean"], abs=1e-9)
    # a lower-is-better metric: the margin's sign still says "positive = RL better"
    wait = summary["rl_margin"]["interactive_wait_mean_s"]["rl"]
    best_wait = summary["best_baseline"]["interactive_wait_mean_s"]
    rl_wait = summary["metrics"]["interactive_wait_mean_s"]["rl"]["mean"]
    assert wait["value"] == pytest.approx(best_wait["mean"] - rl_wait, rel=1e-9)
    spread = summary["baseline_spread"]["interactive_w_mean"]
    assert len(spread["pairs"]) == 10


def test_learning_curves_and_action_mix(summary) -> None:  # type: ignore[no-untyped-def]
    curves = summary["learning_curves"]["seeds"]
    assert len(curves) == 2
    assert [e["behaviour"] for e in curves[0]["episodes"]] == ["edf", "sarsa"]
    assert all("return" in e and "interactive_w_mean" in e for e in curves[0]["episodes"])
    mix = summary["action_mix"]
    assert len(mix["policies"]["rl"]["interactive_share"]) == mix["bins"]
    assert summary["tuning"]["chosen"] in {g["candidate"] for g in summary["tuning"]["grid"]}


def test_sjf_pretraining_and_the_interactive_reward_are_recorded(trace) -> None:  # type: ignore[no-untyped-def]
    regime = contention_regime(trace, load=0.9, how="compress", pool_cores=80)
    cfg = ContentionConfig(
        seeds=1,
        tune_seeds=1,
        train_episodes=1,
        pretrain="both",
        rewards=("interactive-slowdown",),
        batch_weight=0.2,
        warmup_jobs=50,
        drain_jobs=50,
        windows=5,
    )
    s = run_contention(regime, cfg, name="pe1").summary
    episodes = s["learning_curves"]["seeds"][0]["episodes"]
    assert [e["behaviour"] for e in episodes] == ["edf", "sjf", "sarsa"]
    assert s["tuning"]["budget"]["train_episodes"] == 3
    assert s["tuning"]["budget"]["pretrain"] == "both"
    assert s["protocol"]["pretrain"] == "both"
    assert "EDF then SJF" in s["protocol"]["training"]
    reward = s["agents"]["rl"]["scheduler"]["reward"]
    assert reward["name"] == "interactive-slowdown"
    assert reward["batch_weight"] == 0.2
    assert s["tuning"]["chosen"] == "esn-interactive-slowdown"
    assert s["protocol"]["vo_features"] == "targets"
    assert any(f.startswith("deficit_") for f in s["agents"]["rl"]["features"])
    with pytest.raises(ConfigError, match="pretrain"):
        ContentionConfig(pretrain="lifo")
    with pytest.raises(ConfigError, match="batch_weight"):
        ContentionConfig(batch_weight=-1.0)


def test_no_vo_features(trace) -> None:  # type: ignore[no-untyped-def]
    regime = contention_regime(trace, load=0.9, how="compress", pool_cores=80)
    cfg = ContentionConfig(
        seeds=1,
        train_episodes=1,
        pretrain="sjf",
        vo_features="none",
        rewards=("slowdown",),
        warmup_jobs=50,
        drain_jobs=50,
        windows=5,
    )
    s = run_contention(regime, cfg, name="pe1").summary
    assert s["protocol"]["vo_features"] == "none"
    assert s["agents"]["rl"]["features"] == [
        "running_work",
        "next_free",
        "backlog_work",
        "idle_cores",
        "queued_share_other",
    ]
    assert [e["behaviour"] for e in s["learning_curves"]["seeds"][0]["episodes"]] == [
        "sjf",
        "sarsa",
    ]
    with pytest.raises(ConfigError, match="vo_features"):
        ContentionConfig(vo_features="some")


def test_each_candidate_trains_on_its_own_reward(trace) -> None:  # type: ignore[no-untyped-def]
    # the lead of issue 14: w-f 0.5, w-f 1 and time-utility tuned to almost the same W on LPC.
    # Not a wiring defect: each candidate's agent carries its own reward and learns its own Q.
    from gridtrace.sim.rl._contention import Candidate, _train
    from gridtrace.sim.rl._experiments import _service_shares
    from gridtrace.sim.rl._features import SchedulingFeatures

    regime = contention_regime(trace, load=0.9, how="compress", pool_cores=80)
    (train, _, _), _ = time_splits(regime.trace)
    shares = _service_shares(train)
    assert shares
    feats = SchedulingFeatures(list(shares), 80, vo_targets=shares)
    cfg = ContentionConfig(train_episodes=1, warmup_jobs=50, drain_jobs=50)
    names, readouts = [], []
    for c in (
        Candidate("esn", "w-f", 0.5),
        Candidate("esn", "w-f", 1.0),
        Candidate("esn", "time-utility", None),
    ):
        tr = _train(c, 0, train, 80, shares, feats, cfg)
        assert tr.agent.behaviour is None
        assert tr.agent.refits_ > 0
        names.append((tr.agent.reward.name, getattr(tr.agent.reward, "lambda_s", None)))
        readouts.append(np.asarray(tr.agent.qfunction.readout_).copy())  # type: ignore[attr-defined]
    assert names == [("w-f", 0.5), ("w-f", 1.0), ("time-utility", None)]
    assert not np.allclose(readouts[0], readouts[1])
    assert not np.allclose(readouts[1], readouts[2])


def test_flags_raised_on_a_crafted_pathological_run(trace) -> None:  # type: ignore[no-untyped-def]
    # offered load 8 on 10 cores: interactive jobs behind days of backlog under FIFO
    regime = contention_regime(trace, load=8.0, how="compress", pool_cores=10)
    s = run_contention(regime, QUICK, name="overload").summary
    codes = {f["code"] for f in s["flags"]["fifo"]}
    assert "INTERACTIVE_WAIT_OVER_DAY" in codes


def test_the_as_logged_regime_keeps_the_trace() -> None:
    t = generate_preset_trace("PE-1", rng=2, size=300)
    reg = contention_regime(t, load=None, pool_cores=80)
    assert reg.loaded is None
    assert reg.label == "as-logged"
    assert reg.describe()["how"] == "as-logged"
    shrunk = contention_regime(t, load=0.8, how="shrink", pool_cores=80)
    assert shrunk.cores != 80 or shrunk.loaded is not None
    np.testing.assert_array_equal(
        shrunk.trace.column("submit_s").to_numpy(), t.column("submit_s").to_numpy()
    )


REAL = os.environ.get("GRIDTRACE_REAL_DATA")


@pytest.mark.slow
@pytest.mark.skipif(not REAL, reason="GRIDTRACE_REAL_DATA is not set")
def test_lpc_egee_segment_at_the_research_regime(tmp_path: Path) -> None:
    from gridtrace.logs import VOMapping, build_trace, parse_logs
    from gridtrace.segment import (
        SegmentParams,
        SelectionCriteria,
        segment,
        segment_trace,
        select_segment,
        trace_pool,
    )

    path = Path(str(REAL)) / "swf" / "LPC-EGEE-2004-1.2-cln.swf.gz"
    res = parse_logs(path, format="swf", site="lpc", tz="Europe/Paris", workers=1)
    jobs = VOMapping.from_dict({"fallback_field": "group"}).apply(res.jobs)
    full = build_trace(jobs, tau_s=900.0, cores=140, tz="Europe/Paris")
    seg = segment(full, jobs=jobs, cores=140, params=SegmentParams(min_jobs=10000))
    choice = select_segment(seg.segments, SelectionCriteria(min_jobs=10000))
    wl = segment_trace(full, seg.segments, int(choice.to_dict()["segment_id"]), cores=140)
    pool = trace_pool(jobs, wl)
    regime = contention_regime(
        wl, load=0.56, how="shrink", pool_cores=pool.cores, pool_source=pool.source
    )
    assert 70 <= regime.cores <= 90  # the research's EGEE site: 81 cores at U ~ 0.56
    cfg = ContentionConfig(seeds=2, tune_seeds=1, train_episodes=1, rewards=("slowdown",))
    s = run_contention(regime, cfg, name="lpc-segment").summary
    assert s["regime"]["pool_source"] == pool.source
    assert s["split"]["test"]["jobs"] > 1000
    assert "interactive_w_mean" in s["rl_margin"]


def test_the_full_config_builds_a_contention_config() -> None:
    # config/rl-contention.yaml's settings (all but the workloads) are ContentionConfig's
    import yaml  # type: ignore[import-untyped]

    path = Path(__file__).resolve().parents[3] / "config" / "rl-contention.yaml"
    settings: dict[str, Any] = dict(yaml.safe_load(path.read_text())["rl"]["contention"])
    settings.pop("workloads")
    tuples = {"fractions", "q_kinds", "rewards", "lambdas", "baselines"}
    kwargs: dict[str, Any] = {k: tuple(v) if k in tuples else v for k, v in settings.items()}
    cfg = ContentionConfig(**kwargs)
    assert cfg.pretrain == "sjf"
    assert "interactive-slowdown" in {c.reward for c in cfg.grid()}
    assert (cfg.elastic_reward, cfg.elastic_pretrain) == ("queue", "threshold")
    # LCG-2005 runs one site (its partition), not the 170 sites on their summed processors
    workloads = yaml.safe_load(path.read_text())["rl"]["contention"]["workloads"]
    assert workloads["lcg"]["settings"]["partition"] == "lxgate13.cern.ch"


def test_an_elastic_floor_below_the_largest_job_is_raised_to_it(trace) -> None:  # type: ignore[no-untyped-def]
    import dataclasses

    import pyarrow as pa

    # one late job asks for 60 cores: a pool held at the default floor (30) would leave it queued
    # on an idle cluster once the arrivals end (the engine stops such a run)
    cores = trace.column("cores").to_numpy().copy()
    cores[-10] = 60
    wide = trace.set_column(trace.schema.get_field_index("cores"), "cores", pa.array(cores))
    regime = contention_regime(wide, load=0.9, how="compress", pool_cores=80)
    cfg = dataclasses.replace(QUICK, seeds=1, rewards=("slowdown",), elastic=True)
    s = run_contention(regime, cfg, name="pe1").summary
    assert s["protocol"]["elastic_floor"]["floor"] == 60
    assert "largest job" in s["protocol"]["elastic_floor"]["note"]
    assert s["elastic"]
