"""The report's RL section: VO-target settings, reward names and further sections in the page."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from gridtrace.errors import ConfigError
from gridtrace.models import generate_preset_trace
from gridtrace.report import render_workload_report, rl_section
from gridtrace.report._glossary import gloss_policy
from gridtrace.sim.rl import ExperimentConfig, run_experiment

HOSTILE = "<script>alert(1)</script>"
INFEASIBLE = {"vo1": 0.4, "vo2": 0.2, "vo3": 0.2, "vo4": 0.2}
# every id="..." of the page (not data-id= or xlink:id=), and every local reference to one
ID = re.compile(r'(?<![\w:-])id="([^"]*)"')
REF = re.compile(r'(?:href="#|url\(#)([^")]+)')
SVG = re.compile(r"<svg\b.*?</svg>", re.S)
SMALL = {"eval_seeds": 2, "train_draws": 1, "warmup_jobs": 50, "drain_jobs": 50}
# the figures drawn from run_experiment's report series (a rigid scheduling experiment)
SERIES_FIGURES = [
    "fig-rl-learning",
    "fig-rl-action-mix",
    "fig-rl-w-time",
    "fig-rl-cdfs",
    "fig-rl-fairness-windows",
]


@pytest.fixture(scope="module")
def own() -> dict[str, Any]:
    """A real summary under the preset's own targets, with the slowdown-reward variants."""
    return run_experiment("MM50-20", ExperimentConfig(size=600, **SMALL)).summary


@pytest.fixture(scope="module")
def infeasible() -> dict[str, Any]:
    """A real run under the research's infeasible targets, with its reward only."""
    config = ExperimentConfig(size=600, rewards=("w-f",), **SMALL)
    return run_experiment("MM50-20", config, vo_shares=INFEASIBLE, targets="infeasible").summary


@pytest.fixture(scope="module")
def trace() -> pa.Table:
    return generate_preset_trace("MM50-20", rng=0, size=600)


def between(html: str, start: str, end: str | None = None) -> str:
    part = html.split(start, 1)[1]
    return part.split(end, 1)[0] if end else part


def assert_ids_unique_and_resolved(html: str) -> list[str]:
    ids = ID.findall(html)
    assert ids
    twice = {k: n for k, n in Counter(ids).items() if n > 1}
    assert not twice, sorted(twice)[:10]
    dangling = set(REF.findall(html)) - set(ids)
    assert not dangling, sorted(dangling)[:10]
    return ids


# --- rl_section ---------------------------------------------------------------------------------


def test_own_targets_title_and_reward_fact(own) -> None:
    section = rl_section(own)
    assert section["targets"] is None
    assert section["vo_shares"] == {"vo1": 0.7, "vo2": 0.2, "vo3": 0.05, "vo4": 0.05}
    title = "VO targets: the workload's own (vo1 0.70, vo2 0.20, vo3 0.05, vo4 0.05)"
    assert section["title"] == title
    assert section["facts"]["VO targets"] == (
        title.removeprefix("VO targets: ") + ", the preset's arrival mix"
    )
    assert section["facts"]["reward"] == (
        "w-f (the research's reward λ_s W + (1 − λ_s) F): rl-mlp (λ_s 0.5), rl-esn (λ_s 0.5); "
        "queue-slowdown (not the research's: the per-time slowdown penalty of DeepRM): "
        "rl-mlp-slowdown, rl-esn-slowdown"
    )
    assert [(a["variant"], a["reward"]) for a in section["agents"]] == [
        ("rl-mlp", "w-f"),
        ("rl-esn", "w-f"),
        ("rl-mlp-slowdown", "queue-slowdown"),
        ("rl-esn-slowdown", "queue-slowdown"),
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
    assert section["facts"]["VO targets"] == section["title"].removeprefix("VO targets: ")
    assert section["facts"]["reward"] == (
        "w-f (the research's reward λ_s W + (1 − λ_s) F): rl-mlp (λ_s 0.5), rl-esn (λ_s 0.5)"
    )
    assert section["agents"][-1] == {
        "variant": "rl-esn",
        "reward": "w-f",
        "scheduler": infeasible["agents"]["rl-esn"]["scheduler"],
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


# --- the page -----------------------------------------------------------------------------------


def test_further_targets_follow_the_main_section(own, infeasible, trace, tmp_path: Path) -> None:
    out = tmp_path / "MM50-20" / "index.html"
    main, extra = rl_section(own), rl_section(infeasible)
    render_workload_report(
        "MM50-20", trace=trace, results={}, out_path=out, rl=main, rl_targets=[extra]
    )
    html = out.read_text(encoding="utf-8")
    assert "<script" not in html.lower()
    ids = assert_ids_unique_and_resolved(html)
    rl = between(html, '<section id="rl">', "</section>")
    # the main section keeps its ids; the further one has them suffixed with its label
    # (the further section draws only the figures that locate a flagged pathology: none here)
    assert ID.findall(SVG.sub("", rl)) == [
        "rl-table2",
        "rl-published",
        "rl-shares",
        "fig-rl-fairness",
        *SERIES_FIGURES,
        "rl-targets-infeasible",
        "rl-table2-infeasible",
        "rl-shares-infeasible",
        "fig-rl-fairness-infeasible",
    ]
    assert "rl-table2" in ids
    head, tail = rl.split('<h3 id="rl-targets-infeasible">', 1)
    # the main section: its targets as a fact, under the h2
    assert "<h2>RL</h2>" in head
    assert (
        "<dt>VO targets</dt><dd>the workload&#39;s own (vo1 0.70, vo2 0.20, vo3 0.05, vo4 0.05)"
        in head
    )
    assert "<dt>reward</dt><dd>w-f (the research&#39;s reward" in head
    # the further section: its heading with the shares, verdict, tables and figure
    assert tail.startswith("VO targets: infeasible (vo1 0.40, vo2 0.20, vo3 0.20, vo4 0.20)</h3>")
    assert f"<strong>Verdict.</strong> {extra['verdict'][:40]}" in tail
    assert '<h4 id="rl-table2-infeasible">Wait and responsiveness per class</h4>' in tail
    assert tail.count("<tr>") - 2 == len(extra["table2"]) + len(extra["shares"])
    for row in extra["shares"]:
        cell = gloss_policy(row["policy"])  # the name, explained on hover
        assert f'<td class="text">{cell}</td><td>{row["w_over_0_9"]}</td>' in tail
    assert "queue-slowdown (not the research&#39;s" in head
    # only the settings that differ from the main section's: the rewards, not the seed
    facts = between(tail, "<dl>", "</dl>")
    assert "<dt>reward</dt><dd>w-f (the research&#39;s reward" in facts
    assert "queue-slowdown" not in tail
    assert "<dt>workload source</dt>" not in facts
    assert "<dt>root seed</dt>" not in facts
    assert "<dt>VO targets</dt>" not in facts  # in its heading
    assert "Settings not listed are those of the experiment above." in tail
    assert "<table>" not in facts
    # the published numbers of the main section are not repeated under other targets
    assert main["published"] is not None
    assert head.count('<td class="published">') == len(main["published"]["rows"])
    assert 'class="side-by-side"' not in tail


def test_further_targets_without_a_main_section_and_hostile_labels(
    own, infeasible, trace, tmp_path: Path
) -> None:
    first = rl_section(own)
    hostile = rl_section({**infeasible, "targets": HOSTILE})
    again = rl_section(infeasible)
    out = tmp_path / "r.html"
    render_workload_report(
        "MM50-20",
        trace=trace,
        results={},
        out_path=out,
        rl_targets=[first, hostile, rl_section(infeasible), again],
    )
    html = out.read_text(encoding="utf-8")
    assert HOSTILE not in html
    assert "VO targets: &lt;script&gt;alert(1)&lt;/script&gt; (vo1 0.40," in html
    assert_ids_unique_and_resolved(html)
    headings = re.findall(r'<h3 id="(rl-targets[^"]*)">', html)
    assert headings == [
        "rl-targets-own",
        "rl-targets-script-alert-1-script",
        "rl-targets-infeasible",
        "rl-targets-infeasible-2",
    ]
    rl = between(html, '<section id="rl">', "</section>")
    assert "No RL experiment for this workload yet." in rl
    # the first setting stands in for the main section: all its settings and the full captions
    first_part = between(rl, 'id="rl-targets-own"', 'id="rl-targets-script')
    assert "<dt>root seed</dt>" in first_part
    assert "The layout of the research's Table 2" in first_part
    assert rl.count("The layout of the research's Table 2") == 1


def test_rl_targets_must_be_rl_sections(own, trace, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"rl_targets\[0\]"):
        render_workload_report(
            "MM50-20",
            trace=trace,
            results={},
            out_path=tmp_path / "x.html",
            rl_targets=[{"verdict": "x"}],
        )
    assert not (tmp_path / "x.html").exists()


# --- figures from run_experiment's report series (issue 13 item 3) -----------------------------

ADDED_SERIES = (
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
def elastic() -> dict[str, Any]:
    """A real EGEE-analogue run on a preset: rigid and elastic agents, frozen only."""
    config = ExperimentConfig(experiment="egee", size=600, modes=("frozen",), **SMALL)
    return run_experiment("PE-1", config).summary


def test_series_figures_are_drawn_and_not_empty(own) -> None:
    section = rl_section(own)
    figs = {f["id"]: f for f in section["figures"]}
    assert list(figs) == ["fig-rl-fairness", *SERIES_FIGURES]
    assert section["missing_figures"] == []
    for f in figs.values():
        svg = str(f["svg"])
        assert svg.startswith("<svg")
        assert svg.count("<path") > 10
        assert f["caption"]
    # agents and baselines on one figure: every frozen agent and baseline in the legend
    cdfs = str(figs["fig-rl-cdfs"]["svg"])
    for name in ("fifo", "sjf", "easy", "rl-mlp (frozen)", "rl-esn-slowdown (frozen)"):
        assert name in cdfs
    assert "(continuing)" not in cdfs
    assert "inverse CDFs of W" in figs["fig-rl-cdfs"]["caption"]


def test_an_old_summary_renders_and_says_what_is_missing(own, trace, tmp_path: Path) -> None:
    series = {k: v for k, v in own["series"].items() if k not in ADDED_SERIES}
    old = {**own, "series": series}
    section = rl_section(old)
    assert [f["id"] for f in section["figures"]] == ["fig-rl-fairness"]
    missing = section["missing_figures"]
    assert [m.split(":")[0] for m in missing] == [
        "learning curves",
        "action mix over time",
        "wait and W distributions per class",
        "F over sliding windows",
    ]
    assert all("rerun" in m for m in missing)
    out = tmp_path / "old.html"
    render_workload_report("MM50-20", trace=trace, results={}, out_path=out, rl=section)
    rl = between(out.read_text(encoding="utf-8"), '<section id="rl">', "</section>")
    assert "Not drawn: learning curves: not recorded in this summary" in rl
    assert 'id="fig-rl-fairness"' in rl
    assert 'id="fig-rl-cdfs"' not in rl


def test_elastic_runs_get_the_pool_figure(elastic) -> None:
    section = rl_section(elastic)
    ids = [f["id"] for f in section["figures"]]
    assert ids[:2] == ["fig-rl-fairness", "fig-rl-elastic"]
    assert "fig-rl-pool" in ids
    pool = next(f for f in section["figures"] if f["id"] == "fig-rl-pool")
    assert "ela-ora-0.5 (frozen)" in str(pool["svg"])
    assert "utilisation" in pool["caption"]


def test_each_flagged_pathology_is_marked_where_it_happens(elastic, trace, tmp_path) -> None:
    s = json.loads(json.dumps(elastic))
    run = "ela-ora-0.5 (frozen)"
    row = next(a for a in s["aggregate"] if a["variant"] == "ela-ora-0.5")
    row["metrics"]["interactive_w_mean"]["mean"] = 0.02  # a W collapse
    row["metrics"]["interactive_wait_mean_s"]["mean"] = 2.5 * 86_400.0  # waits over a day
    series = s["series"]
    t0 = series["time_origin_s"]
    series["flags"][run] = [{"code": "POOL_AT_FLOOR", "message": "at floor", "seed_index": 0}]
    series["pool"][run]["floor_spans"] = [{"seed_index": 0, "spans": [[t0 + 3600, t0 + 7200]]}]
    series["long_waits"][run] = [
        {"seed_index": 0, "count": 3, "submit_s": [t0 + 10.0] * 3, "wait_s": [2e5, 3e5, 4e5]}
    ]
    mix = series["action_mix"]["policies"][run]
    mix["interactive_w_mean"] = [0.01 if v is not None else None for v in mix["interactive_w_mean"]]

    section = rl_section(s)
    figs = {f["id"]: f for f in section["figures"]}
    assert figs["fig-rl-w-time"]["locates"] == "collapse"
    assert run in figs["fig-rl-w-time"]["caption"].split("collapsed (", 1)[1]
    assert "of a policy flagged as collapsed" in str(figs["fig-rl-w-time"]["svg"])
    assert figs["fig-rl-cdfs"]["locates"] == "collapse"
    assert run in figs["fig-rl-cdfs"]["caption"]
    assert figs["fig-rl-pool"]["locates"] == "floor"
    assert (
        f"POOL_AT_FLOOR: at the floor for over 10 % of the run) of {run}"
        in (figs["fig-rl-pool"]["caption"])
    )
    assert "at the floor (POOL_AT_FLOOR)" in str(figs["fig-rl-pool"]["svg"])
    assert figs["fig-rl-long-waits"]["locates"] == "wait"
    assert run in figs["fig-rl-long-waits"]["caption"]
    flags = section["headline"]["flags"]
    floor = [f for f in flags if f.startswith("pool at its floor (POOL_AT_FLOOR) in ")]
    assert len(floor) == 1
    assert "ela-ora-0.5" in floor[0]
    assert any(f.startswith(f"{run}: interactive W collapsed") for f in flags)

    # a further VO-target section draws only the figures that locate a flag
    out = tmp_path / "flagged.html"
    render_workload_report(
        "PE-1", trace=trace, results={}, out_path=out, rl=rl_section(elastic), rl_targets=[section]
    )
    html = out.read_text(encoding="utf-8")
    assert_ids_unique_and_resolved(html)
    tail = html.split('id="rl-targets', 1)[1]
    drawn = re.findall(r'<figure id="(fig-rl-[^"]*)"', tail)
    assert "fig-rl-learning-own" not in drawn
    for name in ("w-time", "cdfs", "pool", "long-waits"):
        assert any(d.startswith(f"fig-rl-{name}-") for d in drawn), drawn
