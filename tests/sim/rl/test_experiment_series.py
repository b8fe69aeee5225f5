"""run_experiment's report series: what the RL section's figures draw (issue 13 item 3)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from gridtrace.sim.rl import ExperimentConfig, run_experiment
from gridtrace.sim.rl._experiments import (
    MIX_BINS,
    POOL_BINS,
    REPORT_POINTS,
    _coarsen_pool,
    _ReportSeries,
)

SMALL = {"eval_seeds": 2, "train_draws": 1, "warmup_jobs": 50, "drain_jobs": 50}
ADDED = (
    "time_origin_s",
    "quantile_probs",
    "distributions",
    "learning_curves",
    "action_mix",
    "fairness_windows",
    "pool",
    "long_waits",
    "flags",
)


@pytest.fixture(scope="module")
def rigid() -> dict[str, Any]:
    return run_experiment("MM50-20", ExperimentConfig(size=600, **SMALL)).summary


@pytest.fixture(scope="module")
def elastic() -> dict[str, Any]:
    config = ExperimentConfig(experiment="egee", size=600, modes=("frozen",), **SMALL)
    return run_experiment("PE-1", config).summary


def labels(summary: dict[str, Any]) -> list[str]:
    return [
        a["variant"] if a["family"] != "rl" else f"{a['variant']} ({a['mode']})"
        for a in summary["aggregate"]
    ]


def floats(values: list[Any]) -> np.ndarray:
    return np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)


def test_series_are_added_and_the_old_keys_stay(rigid) -> None:
    series = rigid["series"]
    assert set(series) >= {"fairness", "elastic", *ADDED}
    assert set(series["fairness"]) == set(labels(rigid))  # schema-1 series unchanged
    assert series["elastic"] == {}
    json.dumps(rigid, allow_nan=False)  # strict JSON


def test_class_quantiles_of_every_run(rigid) -> None:
    series = rigid["series"]
    probs = series["quantile_probs"]
    assert probs[0] == 0.0
    assert probs[-1] == 1.0
    assert probs == sorted(probs)
    assert set(series["distributions"]) == set(labels(rigid))
    for per_class in series["distributions"].values():
        assert set(per_class) == {"interactive", "batch"}
        for entry in per_class.values():
            assert entry["n"] > 0
            wait, w = floats(entry["wait_s"]), floats(entry["w"])
            assert len(wait) == len(w) == len(probs)
            assert np.all(np.diff(wait) >= 0)
            assert wait[0] >= 0.0
            assert np.all(np.diff(w) >= 0)
            assert w[0] >= 0.0
            assert w[-1] <= 1.0


def test_learning_curves_per_variant_and_seed(rigid) -> None:
    curves = rigid["series"]["learning_curves"]
    assert set(curves) == set(rigid["agents"])
    for seeds in curves.values():
        assert [s["seed_index"] for s in seeds] == [0, 1]
        for s in seeds:
            eps = s["episodes"]
            # EDF pre-training, then one SARSA episode per training draw
            assert [e["behaviour"] for e in eps] == ["edf", "sarsa"]
            assert [e["episode"] for e in eps] == [0, 1]
            for e in eps:
                assert e["decisions"] > 0
                assert np.isfinite(e["return"])
                assert 0.0 <= e["interactive_w_mean"] <= 1.0


def test_action_mix_and_windowed_f_of_the_first_seed(rigid) -> None:
    series = rigid["series"]
    mix = series["action_mix"]
    shown = [n for n in labels(rigid) if not n.endswith("(continuing)")]
    assert list(mix["policies"]) == shown  # baselines and frozen agents, not continuing
    assert len(mix["time_s"]) == MIX_BINS
    assert mix["time_s"] == sorted(mix["time_s"])
    for entry in mix["policies"].values():
        for key in ("interactive_share", "interactive_w_mean"):
            values = floats(entry[key])
            assert len(values) == MIX_BINS
            ok = values[np.isfinite(values)]
            assert ok.size
            assert ok.min() >= 0.0
            assert ok.max() <= 1.0
    assert set(series["fairness_windows"]) == set(shown)
    for windows in series["fairness_windows"].values():
        assert set(windows) == {"daily", "weekly"}
        for w in windows.values():
            values = floats(w["value"])
            assert 0 < len(values) == len(w["start_s"]) <= REPORT_POINTS
            assert np.nanmin(values) >= 0.0
            assert np.nanmax(values) <= 1.0
    assert series["pool"] == {}  # no elastic run


def test_pool_series_floor_spans_and_flags_of_elastic_runs(elastic) -> None:
    series = elastic["series"]
    pools = series["pool"]
    elastic_runs = [n for n in labels(elastic) if n.startswith("ela-")]
    assert sorted(pools) == sorted(elastic_runs)
    for name, pool in pools.items():
        floor = elastic["agents"][name.split(" ")[0]]["provisioner"]["floor"]
        assert pool["floor"] == floor
        mean, lo, hi = floats(pool["pool_mean"]), floats(pool["pool_min"]), floats(pool["pool_max"])
        assert len(pool["time_s"]) == len(mean) <= POOL_BINS
        ok = np.isfinite(mean) & np.isfinite(lo) & np.isfinite(hi)
        assert np.all(lo[ok] <= mean[ok] + 1e-6)
        assert np.all(mean[ok] <= hi[ok] + 1e-6)
        assert np.nanmin(lo) >= floor
        util = floats(pool["utilisation"])
        assert np.nanmin(util) >= 0.0
        assert np.nanmax(util) <= 1.0 + 1e-9
        assert [r["seed_index"] for r in pool["floor_spans"]] == [0, 1]
        for run in pool["floor_spans"]:
            for a, b in run["spans"]:
                assert a < b
    for name, raised in series["flags"].items():
        assert name in labels(elastic)
        for f in raised:
            assert f["code"] in ("POOL_AT_FLOOR", "INTERACTIVE_WAIT_OVER_DAY")
            assert f["seed_index"] in (0, 1)
            if f["code"] == "POOL_AT_FLOOR":
                assert name in pools
    for runs in series["long_waits"].values():
        for run in runs:
            assert run["count"] >= len(run["wait_s"]) == len(run["submit_s"]) > 0
            assert min(run["wait_s"]) > 86_400.0


def test_learning_curves_are_downsampled() -> None:
    rs = _ReportSeries(ExperimentConfig(), None)
    curve = [{"episode": e, "return": float(e)} for e in range(5 * REPORT_POINTS)]
    rs.add_curve("rl-x", 0, curve)
    kept = rs.to_dict()["learning_curves"]["rl-x"][0]["episodes"]
    assert len(kept) <= REPORT_POINTS
    assert kept[0]["episode"] == 0
    assert kept[-1]["episode"] == 5 * REPORT_POINTS - 1
    assert [e["episode"] for e in kept] == sorted({e["episode"] for e in kept})


def test_pool_bins_merge_to_core_second_weighted_utilisation() -> None:
    pool = {
        "time_s": [1.0, 3.0, 5.0, 7.0],
        "pool_mean": [10.0, 30.0, None, 20.0],
        "pool_min": [10.0, 20.0, None, 20.0],
        "pool_max": [10.0, 40.0, None, 20.0],
        "utilisation": [1.0, 0.5, None, 0.25],
        "floor": 10,
    }
    merged = _coarsen_pool(pool, 2)
    assert merged["time_s"] == [2.0, 6.0]
    assert merged["pool_mean"] == [20.0, 20.0]
    assert merged["pool_min"] == [10.0, 20.0]
    assert merged["pool_max"] == [40.0, 20.0]
    # busy 10 + 15 core-units over 40 provisioned; the empty bin adds nothing
    assert merged["utilisation"] == [25.0 / 40.0, 0.25]
    assert merged["floor"] == 10
