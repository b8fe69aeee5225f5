"""The contention section of a workload report (issue 13, item 3): every figure a researcher
wants per regime, and every flagged pathology shown where it happens."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gridtrace.models import generate_preset_trace
from gridtrace.report import render_workload_report
from gridtrace.report._contention import CONTENTION_FLAGS, contention_section
from gridtrace.sim.rl import ContentionConfig, contention_regime, run_contention

TINY = ContentionConfig(
    seeds=2,
    tune_seeds=1,
    train_episodes=1,
    rewards=("slowdown",),
    warmup_jobs=50,
    drain_jobs=50,
    windows=5,
    elastic=True,
    static_levels=4,
)
FULL_FIGURES = ("learning", "action-mix", "cdfs", "windows", "fairness", "pool")
SVG = re.compile(r"<svg\b.*?</svg>", re.S)


@pytest.fixture(scope="module")
def overload() -> dict[str, Any]:
    """A real summary: offered load 8 on 10 cores, so interactive jobs wait days under FIFO."""
    trace = generate_preset_trace("PE-1", rng=11, size=1500)
    regime = contention_regime(trace, load=8.0, how="compress", pool_cores=10)
    result = run_contention(regime, TINY, name="pe1")
    summary = dict(result.summary)
    summary["runs"] = result.runs.to_pylist()
    return summary


def with_every_flag(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary with a POOL_AT_FLOOR on threshold and a W_BELOW_FIFO on rl added."""
    s = copy.deepcopy(summary)
    start = float(s["split"]["test"]["start_s"])
    s["flags"]["threshold"] = [
        f for f in s["flags"]["threshold"] if f["code"] != "POOL_AT_FLOOR"
    ] + [
        {
            "code": "POOL_AT_FLOOR",
            "message": "pool at its floor of 10 cores for 50.0% of the period (more than 10%)",
            "value": 0.5,
            "limit": 0.1,
            "count": None,
            "seed_index": 0,
        }
    ]
    s["series"]["pool"]["threshold"]["floor_spans"] = [
        {"seed_index": 0, "spans": [[start + 3600.0, start + 7200.0]]}
    ]
    s["flags"]["rl"] = [
        *s["flags"]["rl"],
        {"code": "W_BELOW_FIFO", "message": "below", "value": 0.1, "limit": 0.2, "count": None},
    ]
    return s


def test_the_summary_keeps_the_series_the_figures_need(overload: dict[str, Any]) -> None:
    series = overload["series"]
    probs = np.asarray(series["quantile_probs"])
    assert probs[0] == 0.0
    assert probs[-1] == 1.0
    assert np.all(np.diff(probs) > 0)
    for policy, per_class in series["distributions"].items():
        for cls in ("interactive", "batch"):
            entry = per_class[cls]
            assert entry["n"] > 0, (policy, cls)
            wait = np.asarray(entry["wait_s"], dtype=float)
            w = np.asarray(entry["w"], dtype=float)
            assert wait.shape == w.shape == probs.shape
            assert np.all(np.diff(wait) >= 0)
            assert wait[0] >= 0
            assert np.all(np.diff(w) >= -1e-9)
            assert w[0] >= 0
            assert w[-1] <= 1
    # every interactive job that waited over a day under FIFO is counted where the flag is
    fifo_flag = next(f for f in overload["flags"]["fifo"] if f["code"].endswith("OVER_DAY"))
    (fifo_waits,) = series["long_waits"]["fifo"]
    assert fifo_waits["count"] == fifo_flag["count"]
    assert min(fifo_waits["wait_s"]) > 86_400
    assert max(fifo_waits["wait_s"]) == pytest.approx(fifo_flag["value"], rel=1e-4)
    # the elastic runs: pool and utilisation per time bin, a few hundred points at most
    for label in ("threshold", "static-best", "rl-elastic"):
        pool = series["pool"][label]
        assert 0 < len(pool["time_s"]) <= 300
        util = np.asarray(pool["utilisation"], dtype=float)
        assert np.nanmax(util) <= 1 + 1e-9
        assert np.nanmin(util) >= 0
    assert len(series["windows"]["edges_s"]) == TINY.windows + 1


def test_every_figure_is_present_and_drawn(overload: dict[str, Any]) -> None:
    section = contention_section([overload])
    assert section is not None
    (regime,) = section["regimes"]
    assert regime["full"]
    ids = [f["id"] for f in regime["figures"]]
    for name in FULL_FIGURES:
        assert f"{regime['id']}-{name}" in ids
    assert f"{regime['id']}-long-waits" in ids  # flagged in this regime
    for fig in regime["figures"]:
        svg = str(fig["svg"])
        assert svg.startswith("<svg"), fig["id"]
        assert svg.count("<path") > 10, fig["id"]
        assert fig["caption"]
    assert regime["missing"] == []
    assert len(regime["runs"]) == len(overload["runs"])
    metrics = {m["metric"] for m in regime["margins"]}
    assert {"interactive mean W", "core-hours provisioned"} <= metrics


def test_every_flag_is_listed_and_linked_to_the_figure_that_locates_it(
    overload: dict[str, Any], tmp_path: Path
) -> None:
    summary = with_every_flag(overload)
    section = contention_section([summary])
    assert section is not None
    (regime,) = section["regimes"]
    raised = {(p, f["code"]) for p, fl in summary["flags"].items() for f in fl}
    listed = {(f["policy"], f["code"]) for f in regime["flags"]}
    assert listed == raised
    assert {c for _, c in raised} == set(CONTENTION_FLAGS)
    figs = {f["id"]: f for f in regime["figures"]}
    for flag in regime["flags"]:
        assert flag["where"] in figs, flag
        assert flag["code"] in figs[flag["where"]]["caption"]
    pool = figs[f"{regime['id']}-pool"]
    assert "Shaded" in pool["caption"]
    assert "threshold" in pool["caption"]
    assert "at the floor (POOL_AT_FLOOR)" in str(pool["svg"])  # the shaded span's legend
    windows = figs[f"{regime['id']}-windows"]
    assert "W_BELOW_FIFO" in str(windows["svg"])

    out = tmp_path / "index.html"
    trace = generate_preset_trace("PE-1", rng=1, size=200)
    render_workload_report("pe1", trace=trace, results={}, out_path=out, contention=[summary])
    html = out.read_text()
    part = html.split('<section id="contention">')[1].split("</section>")[0]
    assert "<script" not in part.lower()
    for flag in regime["flags"]:
        assert f'href="#{flag["where"]}"' in part
        assert f'<figure id="{flag["where"]}">' in part
    for code in CONTENTION_FLAGS:
        assert f"<code>{code}</code>" in part
    # every figure inlined, none empty
    svgs = SVG.findall(part)
    assert len(svgs) == len(regime["figures"])
    assert all(len(svg) > 2000 for svg in svgs)
    # the RL section comes first, the contention section right after it
    assert html.index('<section id="rl">') < html.index('<section id="contention">')
    assert len(part.encode()) < 600_000  # one regime stays well inside a sane page


def test_a_summary_without_the_series_draws_what_it_can_and_says_why(
    overload: dict[str, Any],
) -> None:
    old = copy.deepcopy(overload)
    old["series"] = {"fairness": {}, "elastic": {}}
    section = contention_section([old])
    assert section is not None
    (regime,) = section["regimes"]
    ids = [f["id"].removeprefix(regime["id"] + "-") for f in regime["figures"]]
    assert ids == ["learning", "action-mix"]
    text = " ".join(regime["missing"])
    assert "wait and W distributions" in text
    assert "rerun the rl_contention rule" in text
    assert "pool size and utilisation" in text
    assert "interactive waits over a day" in text  # flagged, but not locatable
    assert all(f["where"] is None for f in regime["flags"])


def test_only_the_most_flagged_regimes_carry_every_figure(overload: dict[str, Any]) -> None:
    summaries = []
    for k, load in enumerate((0.5, 0.7, 0.85, 0.95)):
        s = copy.deepcopy(overload)
        s["regime"] = {**s["regime"], "label": f"compress-{load:g}", "target_load": load}
        if k != 1:
            s["flags"] = {p: [] for p in s["flags"]}
        summaries.append(s)
    section = contention_section(summaries, full_regimes=2)
    assert section is not None
    regimes = {r["label"]: r for r in section["regimes"]}
    assert list(regimes) == ["compress-0.5", "compress-0.7", "compress-0.85", "compress-0.95"]
    # the flagged regime first, then the highest load
    assert [r["full"] for r in regimes.values()] == [False, True, False, True]
    lean = regimes["compress-0.5"]
    assert lean["figures"] == []
    assert "keep the page small" in lean["missing"][-1]
    flagged = regimes["compress-0.7"]
    assert len(flagged["figures"]) >= len(FULL_FIGURES)
    assert contention_section([]) is None
