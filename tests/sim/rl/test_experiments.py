"""The RL experiment protocol: splits, seeds, determinism, schema, intervals, CLI, report."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from gridtrace.cli import main
from gridtrace.errors import ConfigError
from gridtrace.models import generate_preset_trace
from gridtrace.report import render_workload_report, rl_section
from gridtrace.sim import simulate
from gridtrace.sim.rl._experiments import (
    RUN_COLUMNS,
    RUN_METRICS,
    SUMMARY_SCHEMA,
    ExperimentConfig,
    _preset_workload,
    run_experiment,
    seed_interval,
    time_split,
)

TINY = {"train_draws": 1, "eval_seeds": 2, "size": 300, "warmup_jobs": 20, "drain_jobs": 20}


@pytest.fixture(scope="module")
def mm50() -> tuple[dict[str, Any], pa.Table]:
    config = ExperimentConfig(**TINY, q_kinds=("mlp",))
    result = run_experiment("MM50-20", config)
    return result.summary, result.runs


def test_seed_interval_on_a_hand_example() -> None:
    r = seed_interval([1.0, 2.0, 3.0])
    # mean 2, s = 1; with three seeds the bootstrap interval is their range
    assert r["mean"] == pytest.approx(2.0)
    assert r["std"] == pytest.approx(1.0)
    assert (r["ci_low"], r["ci_high"]) == (1.0, 3.0)
    assert r["n"] == 3
    assert r["method"] == "expanded-percentile-bootstrap"
    one = seed_interval([0.7, math.nan, None])
    assert one == {
        "mean": 0.7,
        "std": None,
        "ci_low": None,
        "ci_high": None,
        "n": 1,
        "n_dropped": 2,
        "method": "single-value",
    }
    assert seed_interval([])["mean"] is None
    # a W near 1: the interval stays in [0, 1]
    w = seed_interval([1.0, 1.0, 0.98, 1.0, 0.7, 1.0, 1.0, 1.0, 0.99, 1.0], bounds=(0.0, 1.0))
    assert 0.7 <= w["ci_low"] <= w["mean"] <= w["ci_high"] <= 1.0


def test_time_split_is_disjoint_and_complete() -> None:
    trace = generate_preset_trace("PE-1", rng=3, size=500)
    train, evaluate, t_split = time_split(trace, 0.4)
    assert train.num_rows + evaluate.num_rows == trace.num_rows
    assert max(train.column("submit_s").to_pylist()) < t_split
    assert min(evaluate.column("submit_s").to_pylist()) >= t_split
    assert not set(train.column("job_id").to_pylist()) & set(evaluate.column("job_id").to_pylist())
    assert evaluate.schema.metadata == trace.schema.metadata  # P, tau, site survive the split
    with pytest.raises(ConfigError):
        time_split(trace, 1.0)


def test_preset_training_and_evaluation_draws_are_disjoint() -> None:
    config = ExperimentConfig(train_draws=2, eval_seeds=3, size=200)
    wl = _preset_workload("MM50-20", config)
    keys = [tuple(s["spawn_key"]) for s in wl.seeds["training"] + wl.seeds["evaluation"]]
    assert len(set(keys)) == 5
    submits = [wl.train(i).column("submit_s").to_numpy() for i in range(2)]
    submits += [wl.evaluate(i).column("submit_s").to_numpy() for i in range(3)]
    for a in range(5):
        for b in range(a + 1, 5):
            assert not np.array_equal(submits[a], submits[b])
    # a draw is a function of its seed alone
    assert wl.evaluate(1).equals(wl.evaluate(1))
    assert wl.train(0).equals(_preset_workload("MM50-20", config).train(0))


def test_summary_schema_and_runs_table(mm50: tuple[dict[str, Any], pa.Table]) -> None:
    summary, runs = mm50
    assert summary["schema"] == SUMMARY_SCHEMA
    assert summary["protocol"]["discounting"] == "per decision"
    assert set(summary["protocol"]["modes"]) == {"frozen", "continuing"}
    assert runs.column_names == list(RUN_COLUMNS)
    variants = set(runs.column("variant").to_pylist())
    baselines = {"fifo", "sjf", "sjf-est", "hrrn", "edf", "easy"}
    assert variants == baselines | {"rl-mlp", "rl-mlp-slowdown"}
    # 6 baselines + 2 RL variants x 2 modes, on each of the 2 evaluation seeds
    assert runs.num_rows == (6 + 2 * 2) * 2
    rewards = {v: d["reward"] for v, d in summary["protocol"]["variants"].items()}
    assert "the research's" in rewards["rl-mlp"]
    assert "not the research's" in rewards["rl-mlp-slowdown"]
    slow = summary["agents"]["rl-mlp-slowdown"]["scheduler"]["reward"]
    assert slow["name"] == "queue-slowdown"
    assert "*-slowdown" in summary["verdict"]
    assert summary["targets"] is None
    assert summary["vo_shares_source"] == "the preset's arrival mix"
    assert len(summary["seeds"]["evaluation"]) == 2
    assert len(summary["seeds"]["agents"]) == 2
    for agg in summary["aggregate"]:
        assert agg["n"] == 2
        assert set(agg["metrics"]) == set(RUN_METRICS)
        w = agg["metrics"]["interactive_w_mean"]
        assert 0.0 <= w["ci_low"] <= w["mean"] <= w["ci_high"] <= 1.0
        assert w["n"] == 2
        assert w["method"] in {"expanded-percentile-bootstrap", "all-values-equal"}
    # windowed F per run, beside the cumulative F
    for col in ("fairness_daily_mean", "fairness_daily_min", "fairness_weekly_mean"):
        vals = [v for v in runs.column(col).to_pylist() if v is not None]
        assert vals
        assert all(0.0 <= v <= 1.0 for v in vals)
    assert all(v >= 1 for v in runs.column("fairness_daily_windows").to_pylist())
    sched = summary["agents"]["rl-mlp"]["scheduler"]
    assert sched["discounting"] == "per decision"
    assert sched["behaviour"] is None  # EDF pre-training is over
    pairs = {(c["baseline"], c["metric"]) for c in summary["comparison"]}
    assert pairs == {
        ("sjf-est", "interactive_w_mean"),
        ("hrrn", "interactive_w_mean"),
        ("fifo", "interactive_w_mean"),
        ("fifo", "batch_w_mean"),
    }
    assert all(c["outcome"] in {"better", "worse", "within noise"} for c in summary["comparison"])
    assert all(
        c["negligible"] == (abs(c["mean_difference"]) < 0.005) for c in summary["comparison"]
    )
    assert "sjf-est" in summary["verdict"]
    assert "hrrn" in summary["verdict"]
    pub = summary["published"]
    assert pub["key"] == "MM50-20"
    fifo = next(r for r in pub["rows"] if r["variant"] == "fifo")
    assert fifo["label"] == "published"
    assert fifo["wait_mean_es"] == pytest.approx(923.0 / 503.0)
    assert summary["units"]["mean_runtime_s"] == pytest.approx(900.0 / -math.log(0.8))
    json.dumps(summary, allow_nan=False)  # strict JSON


def test_baselines_see_the_same_draws_as_the_agents(mm50: tuple[dict[str, Any], pa.Table]) -> None:
    _, runs = mm50
    seeds = {}
    for row in runs.to_pylist():
        seeds.setdefault(row["seed_index"], set()).add(row["eval_seed"])
    assert all(len(s) == 1 for s in seeds.values())
    assert len({next(iter(s)) for s in seeds.values()}) == 2


def test_same_seed_gives_the_same_summary(mm50: tuple[dict[str, Any], pa.Table]) -> None:
    summary, runs = mm50
    again = run_experiment("MM50-20", ExperimentConfig(**TINY, q_kinds=("mlp",)))
    assert json.dumps(again.summary, sort_keys=True) == json.dumps(summary, sort_keys=True)
    timing = {"wall_s", "train_wall_s"}
    keep = [c for c in RUN_COLUMNS if c not in timing]
    assert again.runs.select(keep).equals(runs.select(keep))
    other = run_experiment("MM50-20", ExperimentConfig(**TINY, q_kinds=("mlp",), root_seed=1))
    assert other.summary["seeds"]["evaluation"] != summary["seeds"]["evaluation"]


def test_egee_experiment_on_a_time_split_trace() -> None:
    trace = generate_preset_trace("PE-1", rng=5, size=600)
    # a logged schedule to replay as "native": FIFO's own waits
    logged = simulate(trace, policy="fifo", warmup_jobs=0, drain_jobs=0).jobs
    trace = trace.set_column(trace.column_names.index("wait_s"), "wait_s", logged.column("wait_s"))
    config = ExperimentConfig(
        experiment="egee",
        train_draws=1,
        eval_seeds=2,
        rigid_lambdas=(1.0,),
        elastic_lambdas=(1.0,),
        baselines=("fifo", "sjf-est", "hrrn"),
        warmup_jobs=20,
        drain_jobs=20,
        published="LPC-EGEE",
    )
    result = run_experiment(trace, config, name="pe1-trace", vo_shares={"vo1": 0.5, "vo2": 0.5})
    summary, runs = result.summary, result.runs
    split = summary["protocol"]["split"]
    assert split["train_submit_s"][1] < split["t_split_s"] <= split["eval_submit_s"][0]
    assert split["train_jobs"] + split["eval_jobs"] == 600
    agg = {(a["variant"], a["mode"]): a for a in summary["aggregate"]}
    assert agg[("native", "baseline")]["n"] == 1  # deterministic on a fixed trace: run once
    assert agg[("fifo", "baseline")]["n"] == 1
    for name in ("rig-ora-1", "rig-est-1", "ela-ora-1", "ela-est-1"):
        assert agg[(name, "frozen")]["n"] == 2
    assert summary["seeds"]["evaluation"] == []  # seeds vary the agents only
    assert len({json.dumps(s) for s in summary["seeds"]["agents"]}) == 2
    elastic = summary["series"]["elastic"]["ela-ora-1 (frozen)"]
    prov = summary["agents"]["ela-ora-1"]["provisioner"]
    sizes = np.asarray(elastic["pool_size"])
    assert sizes.size > 0
    assert sizes.min() >= prov["floor"]
    assert sizes.max() <= prov["ceiling"]
    ela = runs.filter(pc.equal(runs["variant"], "ela-ora-1"))
    assert set(ela.column("provisioning").to_pylist()) == {"elastic"}
    assert summary["published"]["rows"][0]["variant"] == "native"

    section = rl_section(summary)
    ids = [f["id"] for f in section["figures"]]
    assert ids[:2] == ["fig-rl-fairness", "fig-rl-elastic"]
    assert "fig-rl-pool" in ids  # the report series' figures follow (issue 13 item 3)


def test_cli_rl_on_a_tiny_preset(tmp_path: Path) -> None:
    out = tmp_path / "rl"
    args = ["rl", "--preset", "PE-1", "--size", "300", "--eval-seeds", "2"]
    assert main([*args, "--train-draws", "1", "-o", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["schema"] == SUMMARY_SCHEMA
    assert summary["published"]["key"] == "PE-1"
    assert "setup difference" in summary["published"]["finding"]  # issue 14 item 9
    runs = pq.read_table(out / "runs.parquet")
    assert runs.num_rows == (6 + 4 * 2) * 2
    assert json.loads(runs.schema.metadata[b"rl_summary"]) == summary
    assert main(["rl", "--preset", "PE-1", "-o", str(out), "--eval-seeds", "0"]) == 2


def test_report_shows_the_rl_section(mm50: tuple[dict[str, Any], pa.Table], tmp_path: Path) -> None:
    summary, _ = mm50
    trace = generate_preset_trace("MM50-20", rng=1, size=300)
    path = tmp_path / "index.html"
    render_workload_report(
        "MM50-20", trace=trace, results={}, out_path=path, rl=rl_section(summary)
    )
    html = path.read_text()
    assert 'id="rl-table2"' in html
    assert 'id="fig-rl-fairness"' in html
    assert 'class="side-by-side"' in html  # published numbers beside ours
    assert "E[S]" in html
    assert summary["verdict"].split(";")[0] in html
    with pytest.raises(ConfigError):
        rl_section({"schema": "something else"})


def test_a_trace_without_shares_takes_them_from_its_training_part() -> None:
    trace = generate_preset_trace("PE-1", rng=8, size=400)
    config = ExperimentConfig(
        train_draws=1, eval_seeds=1, q_kinds=("mlp",), baselines=("fifo", "hrrn")
    )
    summary = run_experiment(trace, config).summary
    assert summary["vo_shares_source"].startswith("the training part")
    assert sum(summary["vo_shares"].values()) == pytest.approx(1.0)
    train, _, _ = time_split(trace, 0.5)
    work = {}
    for vo, run in zip(train["vo"].to_pylist(), train["run_s"].to_pylist(), strict=True):
        work[vo] = work.get(vo, 0.0) + run
    top = max(work, key=lambda v: work[v])
    assert summary["vo_shares"][top] == pytest.approx(work[top] / sum(work.values()))
    no_vo = trace.set_column(
        trace.column_names.index("vo"), "vo", pa.nulls(trace.num_rows, pa.string())
    )
    with pytest.raises(ConfigError, match="needs VO shares"):
        run_experiment(no_vo, config)


def _agg(variant: str, mode: str, w: float, core_h: float) -> dict[str, Any]:
    metric = {"mean": w, "ci_low": w, "ci_high": w, "n": 3, "std": 0.0}
    return {
        "variant": variant,
        "mode": mode,
        "metrics": {"interactive_w_mean": metric, "provisioned_core_h": {"mean": core_h}},
    }


def _cmp(variant: str, baseline: str, diff: float) -> dict[str, Any]:
    return {
        "variant": variant,
        "mode": "frozen",
        "baseline": baseline,
        "metric": "interactive_w_mean",
        "mean_difference": diff,
        "ci_low": diff - 0.001,
        "ci_high": diff + 0.001,
        "outcome": "better" if diff - 0.001 > 0 else "within noise",
        "negligible": abs(diff) < 0.005,
    }


def test_verdict_never_calls_a_negligible_difference_a_win() -> None:
    from gridtrace.sim.rl._experiments import _verdict

    aggregate = [
        _agg("fifo", "baseline", 0.95, 100.0),
        _agg("sjf-est", "baseline", 0.95, 100.0),
        _agg("hrrn", "baseline", 0.95, 100.0),
        _agg("ela", "frozen", 0.952, 103.0),
        _agg("rig", "frozen", 0.97, 100.0),
    ]
    comparison = [_cmp("ela", b, 0.002) for b in ("sjf-est", "hrrn", "fifo")]
    comparison += [_cmp("rig", b, 0.02) for b in ("sjf-est", "hrrn", "fifo")]
    text = _verdict("w", ExperimentConfig(experiment="egee", eval_seeds=3), aggregate, comparison)
    assert "RL beats the strong baselines here: rig (frozen)." in text
    assert "(negligible): ela (frozen), with 103 % of FIFO's core-hours." in text


def test_infeasible_vo_targets_change_fairness_not_the_draws(
    mm50: tuple[dict[str, Any], pa.Table],
) -> None:
    # the research's infeasible weights against the preset's arrival mix 0.7/0.2/0.05/0.05
    _, runs = mm50
    infeasible = {"vo1": 0.4, "vo2": 0.2, "vo3": 0.2, "vo4": 0.2}
    config = ExperimentConfig(**TINY, q_kinds=("mlp",), rewards=("w-f",))
    other = run_experiment("MM50-20", config, vo_shares=infeasible, targets="infeasible")
    assert other.summary["targets"] == "infeasible"
    assert other.summary["vo_shares"] == infeasible
    assert other.summary["vo_shares_source"] == "given"
    assert set(other.runs.column("variant").to_pylist()) == {
        "fifo",
        "sjf",
        "sjf-est",
        "hrrn",
        "edf",
        "easy",
        "rl-mlp",
    }

    def fifo(table: pa.Table, column: str) -> list[float]:
        return table.filter(pc.equal(table["variant"], "fifo")).column(column).to_pylist()

    # the same evaluation draws: FIFO's schedule is the same, its fairness against other targets
    # is not (FIFO serves the arrival mix, so the feasible targets are met better)
    assert fifo(other.runs, "interactive_wait_mean_s") == fifo(runs, "interactive_wait_mean_s")
    f_feasible, f_infeasible = fifo(runs, "fairness_mean"), fifo(other.runs, "fairness_mean")
    assert all(a > b for a, b in zip(f_feasible, f_infeasible, strict=True))
    with pytest.raises(ConfigError, match="does not draw"):
        run_experiment("MM50-20", config, vo_shares={"vo9": 1.0})
    with pytest.raises(ConfigError, match="rewards"):
        ExperimentConfig(rewards=("slowdown",))
