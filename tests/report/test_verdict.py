"""The verdict block at the top of a report, the side-by-side tables and bounded intervals."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from gridtrace.models import generate_preset_trace
from gridtrace.report import render_workload_report, rl_section
from gridtrace.sim import simulate
from gridtrace.sim.rl import ExperimentConfig, run_experiment

SMALL = {"eval_seeds": 2, "train_draws": 1, "warmup_jobs": 50, "drain_jobs": 50}
INTERVAL = re.compile(r"(-?[\d,]+\.\d+) \[(-?[\d,]+\.\d+), (-?[\d,]+\.\d+)\] n=(\d+)")


@pytest.fixture(scope="module")
def mm50() -> tuple[pa.Table, dict[str, list[Any]]]:
    traces = [generate_preset_trace("MM50-20", rng=s, size=600) for s in (1, 2)]
    results = {
        p: [simulate(t, policy=p, warmup_jobs=50, drain_jobs=50) for t in traces]
        for p in ("fifo", "sjf", "easy")
    }
    return traces[0], results


@pytest.fixture(scope="module")
def summary() -> dict[str, Any]:
    config = ExperimentConfig(size=600, rewards=("w-f",), **SMALL)
    return run_experiment("MM50-20", config).summary


def verdict_of(html: str) -> str:
    return html.split('<section id="verdict"', 1)[1].split("</section>", 1)[0]


def contention_summary(workload: str) -> dict[str, Any]:
    return {
        "workload": workload,
        "regime": {"how": "shrink", "target_load": 0.95, "cores": 30, "offered_load": 0.94},
        "best_baseline": {"interactive_w_mean": {"policy": "sjf-est", "mean": 0.5}},
        "rl_margin": {
            "interactive_w_mean": {
                "rl": {
                    "against": "sjf-est",
                    "value": -0.04,
                    "ci_low": -0.07,
                    "ci_high": -0.01,
                    "n": 10,
                    "outcome": "worse",
                }
            }
        },
        "flags": {"rl-elastic": [{"code": "POOL_AT_FLOOR"}, {"code": "POOL_AT_FLOOR"}]},
    }


def test_verdict_of_a_preset_with_rl_and_published(mm50, summary, tmp_path: Path) -> None:
    trace, results = mm50
    out = tmp_path / "MM50-20" / "index.html"
    key = render_workload_report(
        "MM50-20", trace=trace, results=results, out_path=out, rl=rl_section(summary)
    )
    html = out.read_text(encoding="utf-8")
    # first in the page: right after the title, before the contents and every section
    assert html.index('<section id="verdict"') < html.index('<nav class="toc"')
    block = verdict_of(html)
    lines = re.findall(r"<li>(.*?)</li>", block, re.S)
    assert 1 <= len(lines) <= 5
    labels = [re.match(r"<strong>(\w+)\.</strong>", line).group(1) for line in lines]
    assert labels == ["Workload", "Scheduling", "RL", "Published", "Flags"]
    # numbers first: jobs, P and U, and what the workload is
    assert lines[0].startswith("<strong>Workload.</strong> 600 jobs · P = 50 cores · U = ")
    assert "synthetic draw of the preset MM50-20" in lines[0]
    assert key["kind"] == "preset"
    # the best policy on interactive W with its interval and n (2 seeds)
    assert "best on interactive W: sjf " in lines[1]
    assert INTERVAL.search(lines[1]).group(4) == "2"
    # EASY equals FIFO on this serial workload, and the verdict says why
    assert "EASY equals FIFO: every job is serial (1 core)" in lines[4]
    # RL's margin to the best baseline, paired, with its interval and n
    margin = key["rl_margin"]
    assert margin is not None
    assert margin["outcome"] in ("better", "worse", "within noise")
    assert " − " in lines[2]
    assert "on interactive W" in lines[2]
    assert INTERVAL.search(lines[2]).group(4) == "2"
    # MM50-20 has published numbers: how many are reproduced, and which are not
    assert re.search(r"\d+ of \d+ published numbers reproduced", lines[3])
    assert key["published"]["compared"] >= 3
    # the RL section opens with the same numbers in one line; its long verdict is folded away
    rl = html.split('<section id="rl">', 1)[1]
    assert rl.index("<strong>In short.</strong> best baseline on interactive W: ") < rl.index(
        "<summary>The experiment's verdict in full</summary>"
    )


def test_verdict_of_a_site_with_contention(mm50, tmp_path: Path) -> None:
    _, results = mm50
    demo = generate_preset_trace("MM50-20", rng=5, size=600)
    key = render_workload_report(
        "lpc-segment",
        trace=demo,
        results=results,
        out_path=tmp_path / "r.html",
        contention=[contention_summary("lpc-segment")],
    )
    block = verdict_of((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert "under contention (1 regime: worse 1)" in block
    assert "RL − sjf-est: -0.040 [-0.070, -0.010] n=10 (worse)" in block
    assert "POOL_AT_FLOOR: rl-elastic (2 runs in 1 of 1 contention regimes)" in block
    assert "at shrink-0.95, RL − sjf-est" in block
    assert key["rl_margin"]["value"] == pytest.approx(-0.04)
    assert "no published numbers for this workload" in block


def test_verdict_without_rl_or_results(tmp_path: Path) -> None:
    trace = generate_preset_trace("PE-1", rng=0, size=800)
    key = render_workload_report("PE-1", trace=trace, results={}, out_path=tmp_path / "r.html")
    block = verdict_of((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert "<strong>RL.</strong> no RL experiment on this workload" in block
    assert "<strong>Scheduling.</strong> no simulation results" in block
    assert "<strong>Flags.</strong> none" in block
    assert key["rl_margin"] is None
    assert key["key_figure"] == []


def test_f_the_same_for_every_policy_is_said_and_explained(tmp_path: Path) -> None:
    trace = generate_preset_trace("PE-1", rng=0, size=1500)
    shares = {"vo1": 0.7, "vo2": 0.2, "vo3": 0.05, "vo4": 0.05}
    results = {
        p: [simulate(trace, policy=p, vo_shares=shares, warmup_jobs=100, drain_jobs=100)]
        for p in ("fifo", "sjf")
    }
    # both runs end with every VO served: F, cumulative, hardly differs
    f = [r[0].summary["fairness"]["mean"] for r in results.values()]
    assert abs(f[0] - f[1]) < 1e-3, f
    render_workload_report("PE-1", trace=trace, results=results, out_path=tmp_path / "r.html")
    block = verdict_of((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert "F the same for every policy" in block
    assert "it is cumulative" in block


def test_intervals_stay_in_range_and_show_n(mm50, summary, tmp_path: Path) -> None:
    """Every W and F interval on the page lies in [0, 1]; no ± anywhere; n beside each."""
    trace, results = mm50
    section = rl_section(summary)
    for row in section["table2"]:
        m = INTERVAL.fullmatch(row["w_mean"])
        assert m, row["w_mean"]
        mean, low, high = (float(m.group(i)) for i in (1, 2, 3))
        assert 0.0 <= low <= mean <= high <= 1.0
        assert int(m.group(4)) == 2
    for row in section["shares"]:
        m = INTERVAL.fullmatch(row["fairness"])
        if m:
            assert 0.0 <= float(m.group(2)) <= float(m.group(3)) <= 1.0
    # an older summary with a t-interval beyond 1 is clipped, not shown outside the range
    wide = {**summary, "aggregate": [dict(a) for a in summary["aggregate"]]}
    first = wide["aggregate"][0]
    first["metrics"] = {
        **first["metrics"],
        "interactive_w_mean": {"mean": 0.874, "ci_low": 0.655, "ci_high": 1.094, "n": 3},
    }
    assert rl_section(wide)["table2"][0]["w_mean"] == "0.874 [0.655, 1.000] n=3"
    render_workload_report(
        "MM50-20", trace=trace, results=results, out_path=tmp_path / "r.html", rl=section
    )
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "±" not in html
    assert "script-src &#39;none&#39;" in html  # a report runs no script at all
    scheduling = html.split('<section id="scheduling">', 1)[1].split("</section>", 1)[0]
    cells = INTERVAL.findall(scheduling)
    assert cells
    assert all(n == "2" for *_, n in cells)


def test_side_by_side_tables(mm50, summary, tmp_path: Path) -> None:
    trace, results = mm50
    section = rl_section(summary)
    side = section["published"]
    assert side is not None
    assert side["key"] == "MM50-20"
    # one row per published number and run of ours; the generic "rl" matches each RL variant
    variants = {(r["label"], r["ours_label"]) for r in side["rows"]}
    assert ("fifo (interactive)", "fifo") in variants
    assert ("rl (interactive)", "rl-mlp (frozen)") in variants
    assert ("rl (interactive)", "rl-esn (frozen)") in variants
    for r in side["rows"]:
        assert r["agreement"] in ("reproduced", "not reproduced")
        if r["agreement"] == "not reproduced":
            assert r["reason"]  # a plain-words reason where the numbers disagree
        assert re.fullmatch(r"-?[\d,.]+( \[-?[\d,.]+, -?[\d,.]+\])? n=\d+", r["ours"])
    wait = next(
        r for r in side["rows"] if r["metric"] == "wait mean (s)" and r["ours_label"] == "fifo"
    )
    assert wait["published"] == "923"
    ours = float(wait["ours"].split()[0].replace(",", ""))
    assert wait["difference"] == f"{ours - 923:+,.0f}"
    assert any(r["metric"] == "wait mean (E[S])" for r in side["rows"])
    render_workload_report(
        "MM50-20",
        trace=trace,
        results=results,
        out_path=tmp_path / "r.html",
        rl=section,
        published={"FIFO, seed paper": {"interactive W mean": 0.62}},
    )
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert html.count('<table class="side-by-side">') == 2
    assert "What we found when the numbers disagreed" in html
    scheduling = html.split('<h3 id="scheduling-published">', 1)[1].split("</table>", 1)[0]
    fifo_w = results["fifo"]
    mean = sum(r.summary["classes"]["interactive"]["responsiveness_mean"] for r in fifo_w) / 2
    assert f"{mean - 0.62:+,.3f}" in scheduling
    assert '<td class="published">0.620</td>' in scheduling


def _agg(variant: str, family: str, mode: str, w: float, low: float, high: float) -> dict:
    metric = {"mean": w, "ci_low": low, "ci_high": high, "n": 10}
    return {
        "variant": variant,
        "family": family,
        "mode": mode,
        "metrics": {"interactive_w_mean": metric},
    }


def test_side_by_side_of_the_egee_analogue_reads_bounds_and_generic_names() -> None:
    """'rigid rl' and 'elastic rl' match every such variant (frozen); '>=' rows compare the top."""
    from gridtrace.report._rl import side_by_side
    from gridtrace.sim.rl import PUBLISHED

    published = {**PUBLISHED["LPC-EGEE"], "key": "LPC-EGEE"}
    aggregate = [
        _agg("native", "native", "baseline", 0.62, 0.62, 0.62),
        _agg("rig-est-0.5", "rl", "frozen", 0.70, 0.65, 0.75),
        _agg("rig-est-0.5", "rl", "continuing", 0.99, 0.98, 1.0),  # not compared: learning on
        _agg("rig-est-slowdown", "rl", "frozen", 0.99, 0.98, 1.0),  # not the research's reward
        _agg("ela-ora-1", "rl", "frozen", 0.97, 0.95, 0.99),
    ]
    side = side_by_side(published, aggregate)
    assert side is not None
    rows = {(r["label"], r["ours_label"]): r for r in side["rows"]}
    assert set(rows) == {
        ("native (interactive)", "native"),
        ("rigid rl (interactive)", "rig-est-0.5 (frozen)"),
        ("elastic rl (interactive)", "ela-ora-1 (frozen)"),
    }
    native = rows[("native (interactive)", "native")]
    assert native["published"] == "0.630"
    assert native["ours"] == "0.620 [0.620, 0.620] n=10"
    assert native["difference"] == "-0.010"
    assert native["agreement"] == "not reproduced"
    assert "2006" in native["reason"]  # a different trace, said in plain words
    elastic = rows[("elastic rl (interactive)", "ela-ora-1 (frozen)")]
    assert elastic["published"] == ">=0.960"
    assert elastic["agreement"] == "reproduced"  # our interval reaches 0.96
    assert elastic["reason"] == ""
    assert (side["reproduced"], side["compared"]) == (1, 3)


def test_one_seed_says_tied_not_within_noise(tmp_path: Path) -> None:
    trace = generate_preset_trace("MM50-20", rng=3, size=600)
    results = {
        p: [simulate(trace, policy=p, warmup_jobs=50, drain_jobs=50)] for p in ("fifo", "easy")
    }
    render_workload_report(
        "MM50-20",
        trace=trace,
        results=results,
        out_path=tmp_path / "r.html",
        published={"nobody's policy": {"interactive W mean": 0.5}},
    )
    block = verdict_of((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert re.search(
        r"best on interactive W: (easy|fifo) [\d.]+ n=1 \(tied with (easy|fifo)\)", block
    )
    assert "within noise" not in block  # one seed: no interval, no noise to speak of
    assert "published numbers given, but none matches a run of ours" in block


def test_rl_margin_is_against_the_best_baseline_it_was_compared_with(
    mm50, summary, tmp_path: Path
) -> None:
    from gridtrace.report._rl import rl_headline

    head = rl_headline(summary)
    compared = {c["baseline"] for c in summary["comparison"]}
    assert head["margin"]["against"] in compared
    best_compared = max(
        (a for a in summary["aggregate"] if a["variant"] in compared and a["family"] == "baseline"),
        key=lambda a: a["metrics"]["interactive_w_mean"]["mean"],
    )
    assert head["margin"]["against"] == best_compared["variant"]
    # the margin quoted is the best RL variant's (largest paired difference)
    margins = [
        c["mean_difference"]
        for c in summary["comparison"]
        if c["baseline"] == head["margin"]["against"] and c["metric"] == "interactive_w_mean"
    ]
    assert head["margin"]["value"] == max(margins)
    # a better baseline that RL was not compared with is named beside the margin
    trace, results = mm50
    section = rl_section(summary)
    best = {"policy": "oracle-x", "mean": 0.99, "ci_low": 0.98, "ci_high": 1.0, "n": 2}
    section["headline"] = {**section["headline"], "best_baseline": best}
    render_workload_report(
        "MM50-20", trace=trace, results=results, out_path=tmp_path / "r.html", rl=section
    )
    block = verdict_of((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert (
        "(the best baseline RL was compared with; best: oracle-x 0.990 [0.980, 1.000] n=2)" in block
    )


def test_verdict_gives_rho_where_parallel_jobs_make_u_misleading(tmp_path: Path) -> None:
    # U counts each job as one core; with 8-core jobs the cores are loaded 8x more than U says
    trace = generate_preset_trace("MM50-20", rng=3, size=400)
    cores = pa.array([8] * trace.num_rows, pa.int32())
    index = trace.schema.get_field_index("cores")
    trace = trace.set_column(index, trace.schema.field("cores"), cores)
    out = tmp_path / "index.html"
    render_workload_report("parallel", trace=trace, results={}, out_path=out)
    first = re.findall(r"<li>(.*?)</li>", verdict_of(out.read_text(encoding="utf-8")), re.S)[0]
    found = re.search(r"ρ = ([\d.]+) \(U = ([\d.]+) counts a job as one core\)", first)
    assert found is not None
    rho, u = (float(x) for x in found.groups())
    assert rho == pytest.approx(8 * u, rel=0.01)
