"""The report's SVG figures: deterministic, inlinable, labelled, thinned."""

from __future__ import annotations

import html
import re

import numpy as np
import pyarrow as pa
import pytest

from gridtrace.errors import GridtraceError
from gridtrace.models import generate_preset_trace
from gridtrace.report import _figures as fig
from gridtrace.stats import WorkloadStats, characterise

TEXT = re.compile(r"<text\b[^>]*>(.*?)</text>", re.S)
POLYLINE_POINTS = re.compile(r'<path d="M ([^"]*)"')


def texts(svg: str) -> list[str]:
    return [html.unescape(t).strip() for t in TEXT.findall(svg)]


def assert_inlinable(svg: str, *labels: str) -> None:
    assert svg.startswith("<svg ")
    for prologue in ("<?xml", "<!DOCTYPE", "<metadata"):
        assert prologue not in svg
    assert "http" not in svg
    assert "<script" not in svg.lower()
    fig.inline_svg(svg)
    shown = texts(svg)
    for label in labels:
        assert label in shown, (label, shown)


def longest_path(svg: str) -> int:
    return max(d.count("L ") + 1 for d in POLYLINE_POINTS.findall(svg))


@pytest.fixture(scope="module")
def stats() -> WorkloadStats:
    return characterise(generate_preset_trace("MMPP-1", rng=4, size=3000))


def test_runtime_cdf_has_units_and_is_deterministic(stats: WorkloadStats) -> None:
    svg = fig.runtime_cdf_svg(stats.runtime_hist, tau_s=900.0)
    assert_inlinable(
        svg, "runtime (s, log scale)", "jobs with runtime ≤ x (fraction)", "interactive"
    )
    assert "batch" in texts(svg)
    assert fig.runtime_cdf_svg(stats.runtime_hist, tau_s=900.0) == svg


def test_workload_figures_label_their_axes(stats: WorkloadStats) -> None:
    assert_inlinable(
        fig.interarrival_cdf_svg(stats.interarrival_hist, mean_s=stats.mean_interarrival_s),
        "time between consecutive submissions (s, log scale)",
        "gaps ≤ x (fraction)",
        "exponential, same mean",
    )
    service = fig.service_series_svg(stats.service_requests, cores=stats.cores, rho=stats.rho)
    assert_inlinable(
        service,
        "offered load",
        "(work / (P · bin))",
        "(core-h per bin)",
        f"ρ = {stats.rho:.2f}",
    )
    assert any("bin = 10,000 s (2.8 h)" in t for t in texts(service))
    assert_inlinable(
        fig.idc_svg(stats.idc),
        "window length t (s, log scale)",
        "IDC(t) (dimensionless, log scale)",
        "Poisson (IDC = 1)",
    )
    profiles = fig.profiles_svg(stats.profiles, timezone="Europe/Paris")
    assert_inlinable(
        profiles,
        "hour of day (h, local time in Europe/Paris)",
        "mean arrivals in that hour (jobs/h)",
        "day of week (hourly bins, local time in Europe/Paris)",
        "Mon",
    )


def test_service_series_merges_bins_beyond_the_limit() -> None:
    bins = 1234
    table = pa.table(
        {
            "bin_start_s": np.arange(bins) * 100.0,
            "jobs": np.ones(bins, dtype=np.int64),
            "work_core_s": np.full(bins, 4000.0),
            "offered_load": np.full(bins, 0.5),
        }
    )
    svg = fig.service_series_svg(table, cores=80, bin_s=100.0)
    # three bins merged into one: 300 s, load 3 × 4000 / (80 × 300) = 0.5
    assert any("bin = 300 s (0.1 h)" in t for t in texts(svg))
    assert longest_path(svg) <= 2 * fig.MAX_POINTS + 4


def test_scheduling_figures_thin_long_curves() -> None:
    rng = np.random.default_rng(5)
    waits = {"fifo": rng.exponential(300.0, 50_000), "sjf": np.zeros(10)}
    svg = fig.interactive_wait_cdf_svg(waits, threshold_s=120.0)
    assert_inlinable(
        svg, "wait of interactive jobs (s, log scale; < 1 s drawn at it)", "fifo", "sjf", "120 s"
    )
    assert longest_path(svg) <= fig.MAX_POINTS
    w = {"interactive": {"fifo": rng.uniform(size=20_000)}, "all": {"fifo": rng.uniform(size=9)}}
    svg = fig.responsiveness_inverse_cdf_svg(w)
    assert_inlinable(svg, "jobs, sorted by W (fraction)", "responsiveness W (0–1)")
    assert "interactive jobs" in texts(svg)
    assert "all jobs" in texts(svg)
    assert longest_path(svg) <= fig.MAX_POINTS
    times = np.sort(rng.uniform(0, 5 * 86_400, 30_000))
    svg = fig.fairness_over_time_svg({"fifo": (times, np.linspace(0.5, 1.0, times.size))})
    assert_inlinable(
        svg, "election time (days from the trace origin)", "fairness F at election (0–1)"
    )
    assert longest_path(svg) <= fig.MAX_POINTS


def test_ecdf_and_inverse_cdf_values() -> None:
    x, y = fig.ecdf_log([0.0, 0.5, 10.0, 100.0], floor=1.0, limit=3)
    np.testing.assert_allclose(x, [1.0, 10.0, 100.0])
    np.testing.assert_allclose(y, [0.5, 0.75, 1.0])  # waits under 1 s count at 1 s
    f, q = fig.inverse_cdf([0.2, 0.4, 0.6, 0.8, 1.0], limit=3)
    np.testing.assert_allclose(f, [0.0, 0.5, 1.0])
    np.testing.assert_allclose(q, [0.2, 0.6, 1.0])
    assert fig.thin_indices(10, 4).tolist() == [0, 3, 6, 9]
    assert fig.thin_indices(3, 4).tolist() == [0, 1, 2]
    assert fig.time_unit(3 * 86_400) == (3600.0, "h")
    assert fig.time_unit(3 * 86_400 + 1) == (86_400.0, "days")


def test_runtime_cdf_from_a_hand_histogram() -> None:
    hist = pa.table(
        {
            "group_kind": ["class"] * 3,
            "group": ["all"] * 3,
            "bin_lo_s": [0.0, 1.0, 10.0],
            "bin_hi_s": [1.0, 10.0, 100.0],
            "jobs": [1, 3, 0],
        }
    )
    x, y = fig._hist_cdf(hist, "class", "all")
    np.testing.assert_allclose(x, [1.0, 10.0])  # the empty tail is dropped
    np.testing.assert_allclose(y, [0.25, 1.0])


@pytest.mark.parametrize(
    "bad",
    [
        "<svg><script>alert(1)</script></svg>",
        '<svg><g onload="alert(1)"/></svg>',
        "<svg><foreignObject><div/></foreignObject></svg>",
        '<svg><a href="https://example.org/x">x</a></svg>',
        '<svg><image href="data:x"/></svg>',
        "<div><svg/></div>",
    ],
)
def test_inline_svg_refuses_unsafe_content(bad: str) -> None:
    with pytest.raises(GridtraceError):
        fig.inline_svg(bad)


def test_inline_svg_accepts_local_references() -> None:
    ok = '<svg role="img"><use xlink:href="#m1" x="1"/><path clip-path="url(#p1)"/></svg>'
    assert str(fig.inline_svg(ok)) == ok


def test_a_policy_keeps_its_colour_in_every_figure() -> None:
    POLICY_STYLES, policy_style = fig.POLICY_STYLES, fig.policy_style
    rng = np.random.default_rng(0)
    waits = rng.exponential(300.0, 200)
    fifo = POLICY_STYLES["fifo"][0]
    first = fig.interactive_wait_cdf_svg({"sjf": waits, "fifo": waits}, threshold_s=120.0)
    second = fig.interactive_wait_cdf_svg({"fifo": waits, "easy": waits}, threshold_s=120.0)
    assert f"stroke: {fifo}" in first
    assert f"stroke: {fifo}" in second
    # the modes of an RL variant share its colour; an unknown name always gets the same one
    assert policy_style("rig-est-0.5 (frozen)")["color"] == policy_style("rig-est-0.5")["color"]
    assert policy_style("rl-mlp (continuing)")["color"] == POLICY_STYLES["rl-mlp"][0]
    assert policy_style("my-policy") == policy_style("my-policy")


def test_a_day_without_submissions_is_drawn_as_a_gap() -> None:
    start = np.arange(30, dtype=np.float64) * 10_000.0
    work = np.full(30, 5e5)
    work[10:20] = 0.0  # 100,000 s without a submission: a gap
    work[25] = 0.0  # one quiet bin: a real zero
    table = pa.table({"bin_start_s": start, "work_core_s": work})
    svg = fig.service_series_svg(table, cores=40)
    assert "no submission for a day or more" in svg
    assert 'width="' not in svg.split(">", 1)[0]  # no fixed size: the page scales it
