"""HTML reports: content, escaping, self-containment, index and manifest."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pytest

from gridtrace.errors import ConfigError, GridtraceError
from gridtrace.models import generate_preset_trace
from gridtrace.report import render_index, render_workload_report, write_manifest
from gridtrace.report._render import _scoped_svg
from gridtrace.schema import SEGMENTS, trace_metadata, with_trace_metadata
from gridtrace.segment import SegmentParams, SelectionCriteria, segment, select_segment
from gridtrace.sim import read_result, simulate
from gridtrace.stats import characterise

HOSTILE = "<script>alert(1)</script>"

# a resource fetched from the network: src/href/url() pointing at http(s) or protocol-relative
REMOTE = re.compile(r"""(src|href)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?\s*(https?:)?//""", re.I)


def assert_self_contained(html: str) -> None:
    assert "<script" not in html.lower()
    assert "http://" not in html
    assert "https://" not in html
    assert not REMOTE.search(html)
    assert "<link" not in html.lower()


def hostile_trace() -> pa.Table:
    trace = generate_preset_trace("MM50-50", rng=3, size=1200, users_per_vo=2)
    vo = trace["vo"].to_pylist()
    vo[:50] = [HOSTILE] * 50
    user = trace["user"].to_pylist()
    user[:7] = ['"><img src=x onerror=alert(2)>'] * 7
    trace = trace.set_column(trace.schema.get_field_index("vo"), "vo", pa.array(vo, pa.string()))
    trace = trace.set_column(
        trace.schema.get_field_index("user"), "user", pa.array(user, pa.string())
    )
    meta = trace_metadata(trace)
    return with_trace_metadata(
        trace,
        origin=meta["origin"],
        site=f"site {HOSTILE}",
        cores=meta["cores"],
        tau_s=meta["tau_s"],
        provenance={**meta["provenance"], "src_file": f"/logs/{HOSTILE}.log"},
    )


@pytest.fixture(scope="module")
def pe1() -> tuple[pa.Table, dict[str, list[object]]]:
    trace = generate_preset_trace("PE-1", rng=0, size=2500)
    fifo = [simulate(generate_preset_trace("PE-1", rng=s, size=2500)) for s in range(3)]
    return trace, {"fifo": list(fifo)}


def test_workload_report_contains_the_numbers(pe1, tmp_path: Path) -> None:
    trace, results = pe1
    out = tmp_path / "reports" / "PE-1" / "index.html"
    key = render_workload_report(
        "PE-1",
        trace=trace,
        results=results,
        out_path=out,
        published={"FIFO, seed paper": {"interactive W mean": 0.62}},
    )
    html = out.read_text(encoding="utf-8")
    assert_self_contained(html)
    for section in ("Workload", "Model", "Scheduling", "RL"):
        assert f"<h2>{section}</h2>" in html
    assert "2,500" in html  # jobs
    assert "<dd>80</dd>" in html  # cores
    summaries = [r.summary for r in results["fifo"]]
    mean_wait = sum(s["classes"]["all"]["wait_mean_s"] for s in summaries) / 3
    assert f"{mean_wait:,.1f} [" in html  # mean [low, high] over the 3 seeds
    assert "published" in html
    assert "0.620" in html
    assert key["workload"] == "PE-1"
    assert key["jobs"] == 2500
    assert key["cores"] == 80
    assert key["best_policy_interactive_w"] == "fifo"
    assert key["best_policy_wait"] == "fifo"
    assert key["utilisation"] == pytest.approx(sum(s["utilisation"] for s in summaries) / 3)
    assert key["interactive_share"] == pytest.approx(
        sum(trace["interactive"].to_pylist()) / trace.num_rows
    )


def test_results_read_back_from_disk_and_best_policies(pe1, tmp_path: Path) -> None:
    trace, results = pe1
    r = results["fifo"][0]
    r.write(tmp_path / "s.parquet", tmp_path / "s.json")
    back = read_result(tmp_path / "s.parquet", tmp_path / "s.json")
    # a fake second policy, better on both criteria
    better = dict(back.summary)
    better["classes"] = {k: dict(v) for k, v in back.summary["classes"].items()}
    better["classes"]["interactive"]["responsiveness_mean"] = 0.99
    better["classes"]["all"]["wait_mean_s"] = 1.0
    (tmp_path / "PE-1").mkdir()
    key = render_workload_report(
        "PE-1",
        trace=trace,
        results={"fifo": [(back.jobs, back.summary)], "oracle": [(None, better)]},
        out_path=tmp_path / "PE-1",  # an existing folder: index.html is written inside
    )
    assert (tmp_path / "PE-1" / "index.html").is_file()
    assert key["best_policy_interactive_w"] == "oracle"
    assert key["best_policy_wait"] == "oracle"
    assert key["utilisation"] == pytest.approx(back.summary["utilisation"])  # FIFO's


def test_hostile_strings_are_escaped(tmp_path: Path) -> None:
    trace = hostile_trace()
    result = simulate(trace, vo_shares={HOSTILE: 1.0, "vo1": 1.0})
    out = tmp_path / "x" / "index.html"
    render_workload_report(
        "x",
        trace=trace,
        results={"fifo": [result]},
        out_path=out,
        published={HOSTILE: {HOSTILE: HOSTILE}},
    )
    html = out.read_text(encoding="utf-8")
    assert_self_contained(html)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img" not in html


def test_workload_named_all_is_refused(pe1, tmp_path: Path) -> None:
    trace, results = pe1
    with pytest.raises(ConfigError, match="all"):
        render_workload_report("all", trace=trace, results=results, out_path=tmp_path / "a.html")
    for bad in ("../up", "a/b", ".hidden", ""):
        with pytest.raises(ConfigError):
            render_workload_report(bad, trace=trace, results=results, out_path=tmp_path / "b.html")
    with pytest.raises(ConfigError):
        render_index([{"workload": "all"}], tmp_path / "index.html")


def test_report_without_results(tmp_path: Path) -> None:
    trace = generate_preset_trace("PE-2", rng=1, size=300)
    key = render_workload_report("PE-2", trace=trace, results={}, out_path=tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "No simulation results" in html
    assert key["utilisation"] is None
    assert key["best_policy_wait"] is None


def test_index_links_every_workload_and_manifest(pe1, tmp_path: Path) -> None:
    trace, results = pe1
    reports = tmp_path / "reports"
    entries = []
    for name in ("PE-1", "MM50-20", "lal_2006"):
        entries.append(
            render_workload_report(
                name, trace=trace, results=results, out_path=reports / name / "index.html"
            )
        )
    render_index(entries, reports / "index.html")
    html = (reports / "index.html").read_text(encoding="utf-8")
    # the index's one script is its inline table sorter: nothing else, nothing fetched
    assert html.lower().count("<script") == 1
    assert "<script>" in html
    assert_self_contained(re.sub(r"<script>.*?</script>", "", html, flags=re.S))
    for name in ("PE-1", "MM50-20", "lal_2006"):
        assert f'<a href="{name}/index.html">{name}</a>' in html
        assert (reports / name / "index.html").is_file()  # the relative link resolves
    assert "2,500" in html
    paths = [e["path"] for e in entries]
    write_manifest(paths, reports / "all")
    assert (reports / "all").read_text(encoding="utf-8").splitlines() == paths


@pytest.mark.parametrize(
    ("href", "why"),
    [
        ("javascript:alert(document.cookie)", "scheme"),
        ("http://example.org/report.html", "scheme"),
        ("//example.org/report.html", "host"),
        ("/etc/passwd", "absolute path"),
        ("../../outside.html", "leaves the reports folder"),
        ("PE-1/%2e%2e/%2e%2e/outside.html", "leaves the reports folder"),
        ("java\tscript:alert(1)", "control characters"),
    ],
)
def test_index_refuses_links_that_leave_the_reports(tmp_path: Path, href: str, why: str) -> None:
    """Links come from key-figure JSON files: only relative paths inside the folder are kept."""
    entry = {"workload": "PE-1", "href": href, "jobs": 10}
    with pytest.raises(ConfigError, match=f"report link .* refused: .*{why}"):
        render_index([entry], tmp_path / "index.html")
    assert not (tmp_path / "index.html").exists()
    render_index([{**entry, "href": "PE-1/./index.html"}], tmp_path / "index.html")
    assert 'href="PE-1/./index.html"' in (tmp_path / "index.html").read_text(encoding="utf-8")


def test_reports_are_written_whole(pe1, tmp_path: Path) -> None:
    """A report replaces the old page in one rename: no temporary file is left beside it."""
    trace, results = pe1
    out = tmp_path / "PE-1" / "index.html"
    out.parent.mkdir()
    out.write_text("an older report")
    render_workload_report("PE-1", trace=trace, results=results, out_path=out)
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in out.parent.iterdir()) == ["index.html"]


# --- figures, workload statistics and segments ---------------------------------------------------

SVG = re.compile(r"<svg\b.*?</svg>", re.S)
AXIS_LABEL = re.compile(r"<text\b[^>]*>([^<]*\([^<]*\)[^<]*)</text>")


def figure_ids(html: str) -> list[str]:
    return re.findall(r'<figure id="([^"]+)">', html)


def assert_ids_unique(html: str) -> None:
    """Every id in the page once (those inside the figures too), every #reference defined."""
    ids = re.findall(r'(?<![\w:-])id="([^"]*)"', html)
    assert len(ids) == len(set(ids)), sorted(i for i in set(ids) if ids.count(i) > 1)[:10]
    assert set(re.findall(r'(?:href="#|url\(#)([^")]+)', html)) <= set(ids)


def assert_every_svg_has_axis_labels(html: str) -> None:
    svgs = SVG.findall(html)
    assert svgs
    for svg in svgs:
        # every axis label names its unit or kind in parentheses; at least an x and a y label
        assert len(AXIS_LABEL.findall(svg)) >= 2, svg[:300]


def test_workload_and_scheduling_figures(pe1, tmp_path: Path) -> None:
    trace, _ = pe1
    shares = {"vo1": 0.53, "vo2": 0.14, "vo3": 0.17, "vo4": 0.16}
    runs = {
        "fifo": [simulate(trace, vo_shares=shares)],
        "sjf": [simulate(trace, policy="sjf", vo_shares=shares)],
    }
    out = tmp_path / "PE-1" / "index.html"
    render_workload_report("PE-1", trace=trace, results=runs, out_path=out)
    html = out.read_text(encoding="utf-8")
    assert_self_contained(html)
    assert figure_ids(html) == [
        "fig-runtime-cdf",
        "fig-interarrival-cdf",
        "fig-service-series",
        "fig-idc",
        # a preset has no calendar: no daily or weekly profile
        "fig-interactive-wait-cdf",
        "fig-w-inverse-cdf",
        "fig-fairness",
    ]
    assert html.count("<figcaption") == 7
    assert_every_svg_has_axis_labels(html)
    assert_ids_unique(html)
    assert "one run per policy" in html
    stats = characterise(trace)
    assert f"<dd>{stats.utilisation:,.3f}</dd>" in html  # U
    assert f"<dd>{stats.rho:,.3f}</dd>" in html  # core-weighted rho
    # drawn from a preset: it says so, and shows no users, flurries, time zone or 1970 origin
    assert "<strong>Synthetic.</strong> Drawn from the seed preset <code>PE-1</code>" in html
    for absent in ("Flurries (user-days", "<dt>Users</dt>", "Origin (UTC)", "Local time zone"):
        assert absent not in html
    # deterministic: the same inputs give the same bytes
    again = tmp_path / "again.html"
    render_workload_report("PE-1", trace=trace, results=runs, out_path=again)
    assert again.read_text(encoding="utf-8") == html


def test_svg_ids_are_scoped_by_the_figure() -> None:
    svg = (
        '<svg role="img"><defs><path id="m1" d="M0 0"/><clipPath id="p1"><rect/></clipPath>'
        '</defs><g id="figure_1"><use xlink:href="#m1" x="1"/><path clip-path="url(#p1)"/>'
        '<use xlink:href="#elsewhere"/></g></svg>'
    )
    scoped = str(_scoped_svg(svg, "fig-a"))
    assert re.findall(r' id="([^"]+)"', scoped) == ["fig-a-m1", "fig-a-p1", "fig-a-figure_1"]
    # references to ids the figure defines follow them; others are left alone
    assert re.findall(r'(?:href="#|url\(#)([^")]+)', scoped) == [
        "fig-a-m1",
        "fig-a-p1",
        "elsewhere",
    ]
    assert _scoped_svg('<svg role="img"><path d="M0 0"/></svg>', "fig-a") == (
        '<svg role="img"><path d="M0 0"/></svg>'
    )
    with pytest.raises(ConfigError):
        _scoped_svg(svg, '"><script>')
    with pytest.raises(GridtraceError):
        _scoped_svg("<svg><script>alert(1)</script></svg>", "fig-a")


def test_seeds_are_pooled_and_fairness_needs_vo_shares(pe1, tmp_path: Path) -> None:
    trace, results = pe1  # three seeds of FIFO without VO shares
    out = tmp_path / "r.html"
    render_workload_report("PE-1", trace=trace, results=results, out_path=out)
    html = out.read_text(encoding="utf-8")
    assert "jobs of every seed pooled" in html
    assert "fig-fairness" not in html
    assert "fig-w-inverse-cdf" in html


def test_summary_only_results_give_tables_but_no_per_job_figures(pe1, tmp_path: Path) -> None:
    trace, results = pe1
    summaries = {"fifo": [(None, r.summary) for r in results["fifo"]]}
    render_workload_report("PE-1", trace=trace, results=summaries, out_path=tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "fig-interactive-wait-cdf" not in html
    assert "fig-runtime-cdf" in html
    assert "W</abbr> mean" in html


def test_trace_without_cores_says_why_there_are_no_statistics(tmp_path: Path) -> None:
    trace = generate_preset_trace("PE-2", rng=1, size=300)
    bare = trace.replace_schema_metadata({})
    render_workload_report("PE-2", trace=bare, results={}, out_path=tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "workload statistics unavailable" in html
    assert "<svg" not in html


def segments_table(trace: pa.Table) -> pa.Table:
    one = segment(trace, params=SegmentParams(min_jobs=500, block_jobs=100)).segments
    first = one.to_pylist()[0]
    half = first["row_stop"] // 2
    second = {
        **first,
        "segment_id": 1,
        "row_start": half,
        "reason": "pool+runtime",
        "pool_stable": False,
        "vo_shares": json.dumps({HOSTILE: 0.6, "vo2": 0.4}),
        "diagnostics": json.dumps({"boundary": {"rate_ratio": 1.5, "runtime_ks": 0.25}}),
    }
    first = {**first, "row_stop": half}
    return pa.Table.from_pylist([first, second], schema=SEGMENTS)


def test_segments_table_marks_the_selected_segment(pe1, tmp_path: Path) -> None:
    trace, results = pe1
    segments = segments_table(trace)
    choice = select_segment(segments, SelectionCriteria(min_jobs=500))
    out = tmp_path / "demo" / "index.html"
    render_workload_report(
        "demo",
        trace=trace,
        results=results,
        out_path=out,
        segments=segments,
        segmentation={
            "choice": choice.to_dict(),
            "notes": ["a note"],
            "params": {"min_jobs": 500},
            "pool_source": "peak-cores-in-use",
        },
    )
    html = out.read_text(encoding="utf-8")
    assert_self_contained(html)
    assert "<h3>Segments</h3>" in html
    assert choice.segment_id == 0  # segment 1 fails the stable-pool criterion
    selected = re.findall(r'<tr class="selected">\s*<td class="text">(\d+)', html)
    assert selected == ["0"]
    assert "0 <strong>(selected)</strong>" in html
    assert "start: first segment" in html
    assert "pool+runtime: machine pool changed; runtime distribution changed" in html
    assert "rate ×1.50, runtime KS 0.250" in html
    assert choice.explanation.split(":")[0] in html
    assert "Segmentation notes: a note." in html
    assert "at least 500 jobs" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; 60 %" in html


def test_the_index_shows_each_contention_experiment_with_rl_margins(tmp_path: Path) -> None:
    summary = {
        "workload": "lpc-segment",
        "regime": {
            "how": "shrink",
            "target_load": 0.7,
            "cores": 65,
            "offered_load": 0.699,
            "pool_source": "peak-cores-in-use",
        },
        "best_baseline": {"interactive_w_mean": {"policy": "sjf-est", "mean": 0.498}},
        "rl_margin": {
            "interactive_w_mean": {
                "rl": {
                    "against": "sjf-est",
                    "value": -0.0396,
                    "ci_low": -0.0656,
                    "ci_high": -0.0155,
                    "n": 10,
                    "outcome": "worse",
                }
            }
        },
        "flags": {
            "fifo": [],
            "rl": [{"code": "INTERACTIVE_WAIT_OVER_DAY"}, {"code": "INTERACTIVE_WAIT_OVER_DAY"}],
        },
    }
    render_index([{"workload": "lpc-segment"}], tmp_path / "index.html", [summary])
    html = (tmp_path / "index.html").read_text()
    assert 'id="contention"' in html
    assert ">sjf-est</abbr> 0.498" in html  # the name explained on hover
    assert "-0.040 [-0.066, -0.015] n=10 (worse)" in html
    assert "INTERACTIVE_WAIT_OVER_DAY (2 runs)" in html
    # a metric without a margin shows a dash, not an empty interval
    assert "[, ]" not in html
    assert "None" not in html
    render_index([{"workload": "lpc-segment"}], tmp_path / "plain.html")
    assert 'id="contention"' not in (tmp_path / "plain.html").read_text()
