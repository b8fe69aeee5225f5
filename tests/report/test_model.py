"""The report's Model section: a fitted model's tables and figures, a preset's parameters."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from gridtrace.errors import ConfigError
from gridtrace.models import (
    PoissonArrivals,
    ctmc_mmpp_arrival_times,
    generate_preset_trace,
    get_preset,
    replica_band,
)
from gridtrace.report import fitted_model_section, preset_model_section, render_workload_report

SVG = re.compile(r"<svg\b.*?</svg>", re.S)
AXIS_LABEL = re.compile(r"<text\b[^>]*>([^<]*\([^<]*\)[^<]*)</text>")

FIT_SUMMARY: dict[str, Any] = {
    "summary": {
        "name": "site-a",
        "tau_s": 900.0,
        "cores": 80,
        "interactive_fraction": 0.09,
        "arrival_streams": [
            {
                "name": "site",
                "model": "mmpp(k=2)",
                "rates": [0.002, 0.02],
                "generator": [[-0.001, 0.001], [0.004, -0.004]],
                "stationary_rate": 0.0056,
            }
        ],
        "runtimes": {
            "interactive": {"family": "exponential", "parameters": {"rate": 0.0013}},
            "batch": {
                "family": "hyperexponential(k=2)",
                "parameters": {"rates": [1e-4, 1e-3], "weights": [0.3, 0.7]},
            },
        },
        "vo_shares": {"atlas": 0.6, "cms": 0.4},
        "bic": 12345.6,
    },
    "bic_table": {
        "arrivals": {"site": {"poisson": 5100.0, "mmpp(k=1)": 5100.0, "mmpp(k=2)": 5000.0}},
        "runtimes": {
            "interactive": {"exponential": 900.0, "lognormal": 910.5, "gamma": None},
            "batch": {"exponential": 7100.0, "hyperexponential(k=2)": 7000.0},
        },
    },
    "heldout_arrivals": {
        "site": {
            "arrival_model": "mmpp(k=2)",
            "model": -5.5,
            "poisson": -5.75,
            "gain": 0.25,
            "n_train": 349,
            "n_test": 150,
            "split_s": 1000.0,
        }
    },
    "fit_notes": ["EM hit its iteration cap <once>"],
}


@pytest.fixture(scope="module")
def traces() -> tuple[pa.Table, pa.Table]:
    return (
        generate_preset_trace("PE-1", rng=1, size=500),
        generate_preset_trace("PE-1", rng=2, size=400),
    )


def _model_html(path: Path) -> str:
    text = path.read_text()
    return text.split('<section id="model">')[1].split("</section>")[0]


def test_fitted_section_tables_and_chosen_marks(traces: tuple[pa.Table, pa.Table]) -> None:
    trace, synthetic = traces
    view = fitted_model_section(FIT_SUMMARY, trace=trace, synthetic=synthetic)
    assert view["kind"] == "fitted"
    assert view["facts"]["Fitted jobs"] == "500"
    assert view["facts"]["Synthetic jobs"] == "400"
    assert view["arrivals"] == [
        {
            "stream": "site",
            "model": "mmpp(k=2)",
            "k": 2,
            "rates": "[0.002, 0.02]",
            "mean_rate_per_h": "20.16",
            "generator": "[[-0.001, 0.001], [0.004, -0.004]]",
        }
    ]
    batch = view["runtimes"][1]
    assert batch["family"] == "hyperexponential(k=2)"
    assert batch["parameters"] == "phase rates (1/s) = [0.0001, 0.001]; phase weights = [0.3, 0.7]"
    chosen = [(r["kind"], r["group"], r["candidate"]) for r in view["bic"] if r["chosen"]]
    assert chosen == [
        ("arrivals", "site", "mmpp(k=2)"),
        ("runtimes", "interactive", "exponential"),
        ("runtimes", "batch", "hyperexponential(k=2)"),
    ]
    poisson = next(r for r in view["bic"] if r["candidate"] == "poisson")
    assert (poisson["bic"], poisson["delta"]) == ("5,100.0", "100")
    failed = next(r for r in view["bic"] if r["candidate"] == "gamma")
    assert (failed["bic"], failed["delta"]) == ("failed", "—")
    assert view["heldout"][0]["gain"] == "0.25"
    assert view["heldout"][0]["ll_poisson"] == "-5.75"


def test_collapsed_candidates_are_shown_as_left_out(
    traces: tuple[pa.Table, pa.Table], tmp_path: Path
) -> None:
    trace, synthetic = traces
    summary = json.loads(json.dumps(FIT_SUMMARY))
    reason = "collapsed: two phases have the same rate within 1 % (0.001, 0.001/s)"
    summary["bic_table"]["runtimes"]["batch"]["hyperexponential(k=3)"] = 6990.0
    summary["summary"]["runtime_excluded"] = {"batch": {"hyperexponential(k=3)": reason}}
    summary["summary"]["runtimes"]["batch"]["parameters"]["class_weights"] = [0.2, 0.8]
    view = fitted_model_section(summary, trace=trace, synthetic=synthetic)
    rows = {r["candidate"]: r for r in view["bic"] if r["group"] == "batch"}
    left = rows["hyperexponential(k=3)"]
    assert (left["bic"], left["delta"], left["chosen"]) == ("6,990.0", "—", False)
    assert left["note"] == f"left out: {reason}"
    # ΔBIC counts from the best candidate that could be chosen, the H2
    assert rows["hyperexponential(k=2)"]["delta"] == "0"
    assert rows["exponential"]["delta"] == "100"
    batch = view["runtimes"][1]["parameters"]
    assert "phase weights on the class range = [0.2, 0.8]" in batch
    out = tmp_path / "index.html"
    render_workload_report("site-a", trace=trace, results={}, out_path=out, model=view)
    assert f'<td class="text">left out: {reason}</td>' in _model_html(out)


def test_fitted_section_renders_safely_with_labelled_figures(
    traces: tuple[pa.Table, pa.Table], tmp_path: Path
) -> None:
    trace, synthetic = traces
    view = fitted_model_section(FIT_SUMMARY, trace=trace, synthetic=synthetic)
    out = tmp_path / "report" / "index.html"
    render_workload_report("site-a", trace=trace, results={}, out_path=out, model=view)
    text = out.read_text()
    assert "<script" not in text.lower()
    html = _model_html(out)
    assert re.findall(r'<figure id="([^"]+)">', html) == ["fig-model-qq", "fig-model-idc"]
    svgs = SVG.findall(html)
    assert len(svgs) == 2
    labels = [AXIS_LABEL.findall(svg) for svg in svgs]
    # the QQ plot has two panels, each with both axes labelled
    assert labels[0].count("trace runtime quantile (s, log scale)") == 2
    assert labels[0].count("synthetic runtime quantile (s, log scale)") == 2
    assert "window length t (s, log scale)" in labels[1]
    assert "IDC(t) (dimensionless, log scale)" in labels[1]
    # the chosen rows are marked, one per stream and class, and highlighted
    chosen_rows = re.findall(
        r'<tr class="selected"><td class="text">(\w+)</td><td class="text">([\w-]+)</td>\s*'
        r'<td class="text">([^<]+)</td>',
        html,
    )
    assert chosen_rows == [
        ("arrivals", "site", "mmpp(k=2)"),
        ("runtimes", "interactive", "exponential"),
        ("runtimes", "batch", "hyperexponential(k=2)"),
    ]
    assert html.count("<strong>chosen</strong>") == 3
    # text from the fit summary is escaped
    assert "&lt;once&gt;" in html
    assert "<once>" not in html


def test_figures_are_deterministic(traces: tuple[pa.Table, pa.Table]) -> None:
    trace, synthetic = traces
    first = fitted_model_section(FIT_SUMMARY, trace=trace, synthetic=synthetic)
    second = fitted_model_section(FIT_SUMMARY, trace=trace, synthetic=synthetic)
    assert [f["svg"] for f in first["figures"]] == [f["svg"] for f in second["figures"]]


def test_fitted_section_refuses_what_is_not_a_fit_summary(
    traces: tuple[pa.Table, pa.Table],
) -> None:
    trace, synthetic = traces
    with pytest.raises(ConfigError, match="not a fit summary"):
        fitted_model_section({"summary": {}}, trace=trace, synthetic=synthetic)


def test_fitted_section_draws_the_trace_over_the_replica_band(
    traces: tuple[pa.Table, pa.Table], tmp_path: Path
) -> None:
    trace, synthetic = traces
    # a Poisson model's band against a strongly bursty trace: IDC and ACF far outside it
    times, _ = ctmc_mmpp_arrival_times(
        [0.02, 0.2], [[-1 / 3600, 1 / 3600], [1 / 900, -1 / 900]], size=3000, rng=3
    )
    band = replica_band(PoissonArrivals().fit(times), times, replicas=20, lags=40, rng=0)
    summary = {**FIT_SUMMARY, "replica_band": band.to_dict()}
    view = fitted_model_section(summary, trace=trace, synthetic=synthetic)
    assert [f["id"] for f in view["figures"]] == ["fig-model-qq", "fig-model-idc", "fig-model-acf"]
    idc_in, acf_in = int(band.idc_inside.sum()), int(band.acf_inside.sum())
    n_windows = band.windows_s.shape[0]
    assert view["facts"]["IDC(t) inside the replica band"] == f"{idc_in} of {n_windows} windows"
    assert view["facts"]["Inter-arrival ACF inside the replica band"] == f"{acf_in} of 40 lags"
    idc_fig, acf_fig = view["figures"][1], view["figures"][2]
    assert "95 % band of 20 synthetic traces" in idc_fig["caption"]
    assert f"inside at {idc_in} of {n_windows} windows" in idc_fig["caption"]
    assert f"inside at {acf_in} of 40 lags" in acf_fig["caption"]
    idc_labels = AXIS_LABEL.findall(str(idc_fig["svg"]))
    acf_labels = AXIS_LABEL.findall(str(acf_fig["svg"]))
    assert "window length t (s, log scale)" in idc_labels
    assert "IDC(t) (dimensionless, log scale)" in idc_labels
    assert "lag k (inter-arrival times)" in acf_labels
    assert "gap ACF (dimensionless)" in acf_labels
    for svg in (str(idc_fig["svg"]), str(acf_fig["svg"])):
        assert "model: 95 % band of 20 replicas" in svg  # the shaded band's legend entry
        assert "trace outside the band" in svg
    again = fitted_model_section(
        json.loads(json.dumps(summary, allow_nan=False)), trace=trace, synthetic=synthetic
    )
    assert [f["svg"] for f in again["figures"]] == [f["svg"] for f in view["figures"]]
    out = tmp_path / "index.html"
    render_workload_report("site-a", trace=trace, results={}, out_path=out, model=view)
    html = _model_html(out)
    assert re.findall(r'<figure id="([^"]+)">', html) == [
        "fig-model-qq",
        "fig-model-idc",
        "fig-model-acf",
    ]


def test_preset_section_shows_the_given_parameters(tmp_path: Path) -> None:
    view = preset_model_section("PE-1")
    assert view["label"] == "seed preset (not fitted)"
    params = {p["name"]: p["value"] for p in view["parameters"]}
    assert params["service rate μ = −ln(1 − f)/τ (1/s)"] == "0.0001171"  # published 1.1707e−4
    assert params["arrival rate λ per phase (1/s)"] == "[0.008897]"  # published 8.8971e−3
    assert params["arrival process"] == "poisson"
    assert preset_model_section(get_preset("PE-1")) == view
    mmpp = {p["name"]: p["value"] for p in preset_model_section("MMPP-1")["parameters"]}
    assert "phase switch probabilities" in mmpp
    out = tmp_path / "index.html"
    trace = generate_preset_trace("PE-1", rng=1, size=200)
    render_workload_report("PE-1", trace=trace, results={}, out_path=out, model=view)
    html = _model_html(out)
    assert "seed preset (not fitted)" in html
    assert "BIC" not in html
    assert "<figure" not in html


def test_without_a_model_the_placeholder_stays(tmp_path: Path) -> None:
    out = tmp_path / "index.html"
    trace = generate_preset_trace("PE-1", rng=1, size=200)
    render_workload_report("PE-1", trace=trace, results={}, out_path=out)
    assert "No fitted model for this workload yet." in _model_html(out)


def _with_fit_quality() -> dict[str, Any]:
    summary = json.loads(json.dumps(FIT_SUMMARY))
    inner = summary["summary"]
    inner["arrival_streams"][0]["ljung_box"] = {
        "lags": 20,
        "statistic": 4321.5,
        "pvalue": 0.0,
        "n_gaps": 499,
        "acf": [0.35] + [0.1] * 19,
        "ties": "batch",
        "rejects_5pct": True,
    }
    inner["runtimes"]["interactive"]["goodness_of_fit"] = {
        "n": 45,
        "n_censored": 0,
        "ks_d": 0.1,
        "ks_pvalue": 0.72,
        "ks_noise": 0.2024,
        "ad_a2": 0.41,
        "lilliefors": None,
        "note": "effect sizes",
    }
    inner["runtimes"]["batch"]["goodness_of_fit"] = {
        "n": 455,
        "n_censored": 3,
        "ks_d": 0.19,
        "ks_pvalue": 1e-14,
        "ks_noise": 0.0637,
        "ad_a2": 12.5,
        "lilliefors": {"statistic": 0.21, "pvalue": 0.001, "on": "run − 900 s of 455 runtimes"},
        "note": "effect sizes",
    }
    return summary


def test_the_section_carries_ljung_box_and_the_runtime_fit(
    traces: tuple[pa.Table, pa.Table], tmp_path: Path
) -> None:
    trace, synthetic = traces
    summary = _with_fit_quality()
    times = trace.column("submit_s").to_numpy()
    band = replica_band(PoissonArrivals().fit(times), trace, replicas=4, rng=0)
    summary["replica_band"] = band.to_dict()
    view = fitted_model_section(summary, trace=trace, synthetic=synthetic)
    (dependence,) = view["dependence"]
    assert dependence["q"] == "4322"
    assert dependence["p"] == "< 1e-300"
    assert dependence["acf1"] == "0.35"
    assert dependence["verdict"] == "dependent gaps: evidence for an MMPP over Poisson"
    rows = {r["job_class"]: r for r in view["fit_quality"]}
    assert rows["batch"]["ks_ratio"] == "2.983"  # D against its sampling noise
    assert rows["batch"]["lilliefors"] == "D = 0.21, p ≤ 0.001 (run − 900 s of 455 runtimes)"
    assert rows["interactive"]["lilliefors"] == "—"
    assert "every p-value rejects" in view["fit_quality_caption"]
    assert "evidence for an MMPP" in view["dependence_caption"]
    facts = view["facts"]
    assert facts["Ljung-Box, site inter-arrivals"] == (
        "Q(20) = 4322, p < 1e-300, lag-1 ACF 0.35: dependent gaps: evidence for an MMPP over "
        "Poisson"
    )
    assert facts["Runtime fit, batch (hyperexponential(k=2))"].startswith(
        "KS D = 0.19, 2.983 × its sampling noise 0.0637 (n = 455); A² = 12.5; Lilliefors"
    )
    qq, _, acf_figure = view["figures"]
    assert "KS D batch 0.19 (2.983 × its noise)" in qq["caption"]
    assert "Ljung-Box (site): Q(20) = 4322, p < 1e-300, dependent gaps" in acf_figure["caption"]
    out = tmp_path / "index.html"
    render_workload_report("site-a", trace=trace, results={}, out_path=out, model=view)
    html = _model_html(out)
    assert "Ljung-Box, site inter-arrivals" in html
    assert "Runtime fit, batch (hyperexponential(k=2))" in html
    # and as tables, each with its caption
    assert '<table class="dependence">' in html
    assert "<td>4322</td><td>&lt; 1e-300</td><td>0.35</td>" in html
    assert '<table class="fit-quality">' in html
    assert "<td>2.983</td>" in html
    assert "look at KS D against its sampling noise" in html
    # a fit summary written before these statistics: no rows, no facts, same figures
    plain = fitted_model_section(FIT_SUMMARY, trace=trace, synthetic=synthetic)
    assert plain["fit_quality"] == []
    assert plain["dependence"] == []
    assert not any(k.startswith(("Ljung-Box", "Runtime fit")) for k in plain["facts"])


def test_runtime_parameters_show_the_class_range_and_flat_phases(
    traces: tuple[pa.Table, pa.Table],
) -> None:
    trace, synthetic = traces
    summary = json.loads(json.dumps(FIT_SUMMARY))
    summary["summary"]["runtimes"] = {
        "interactive": {
            "family": "hyperexponential(k=2)",
            "parameters": {
                "rates": [0.0164, 5.56e-5],
                "class_weights": [0.95, 0.05],
                "phase_means_s": [61.0, 446.2],
                "flat_phases": [False, True],
            },
        },
        "batch": {
            "family": "exponential",
            "parameters": {"rate": 5e-5, "class_mean_s": 20_900.0},
        },
    }
    view = fitted_model_section(summary, trace=trace, synthetic=synthetic)
    inter, batch = view["runtimes"]
    assert inter["parameters"] == (
        "phase rates (1/s) = [0.0164, flat]; phase weights on the class range = [0.95, 0.05]; "
        "phase means on the class range (s) = [61, 446.2]"
    )
    assert batch["parameters"] == "rate (1/s) = 5e-05; mean on the class range (s) = 2.09e+04"
    # an exponential held flat on (0, τ], and the raw weights of a model written before the
    # bounded fit (3.5e-11 for a phase holding a fifth of the class): neither shows as a number
    summary["summary"]["runtimes"] = {
        "interactive": {
            "family": "exponential",
            "parameters": {"rate": 5.56e-5, "class_mean_s": 446.2, "flat_on_class_range": True},
        },
        "batch": {
            "family": "hyperexponential(k=2)",
            "parameters": {
                "rates": [5.9e-3, 8e-15],
                "weights": [3.5e-11, 1.0],
                "class_weights": [0.83, 0.17],
            },
        },
    }
    view = fitted_model_section(summary, trace=trace, synthetic=synthetic)
    inter, batch = view["runtimes"]
    assert inter["parameters"] == (
        "rate (1/s) = flat on (0, 900 s]; mean on the class range (s) = 446.2"
    )
    assert "3.5e-11" not in batch["parameters"]
    assert "phase weights on the class range = [0.83, 0.17]" in batch["parameters"]


def test_a_phase_of_negligible_weight_is_left_out_and_said() -> None:
    from gridtrace.report._model import _runtime_parameters

    text = _runtime_parameters(
        {
            "rates": [1e-4, 5e-9, 1e-3],
            "weights": [0.3, 3.5e-11, 0.7],
            "phase_means_s": [1e4, 2e8, 1e3],
        },
        900.0,
    )
    assert "phase weights = [0.3, 0.7]" in text
    assert "2e+08" not in text  # the absurd mean of the empty phase
    assert "1 phase(s) of weight [3.5e-11] left out" in text


def test_the_qq_plot_draws_the_walltime_limit_and_counts_the_draws_beyond_it(
    traces: tuple[pa.Table, pa.Table],
) -> None:
    import numpy as np

    trace, synthetic = traces
    limit = 172_800.0  # 48 h, the largest request in the log
    wall = np.full(trace.num_rows, 3_600.0)
    wall[0] = limit
    logged = trace.set_column(
        trace.schema.get_field_index("walltime_req_s"),
        "walltime_req_s",
        pa.array(wall, pa.float64()),
    )
    run = synthetic.column("run_s").to_numpy().copy()
    batch = np.flatnonzero(run > 900.0)
    run[batch[:3]] = [2e6, 5e5, limit + 1.0]  # three draws beyond the limit
    run[batch[3]] = limit  # at the limit is within it
    drawn = synthetic.set_column(
        synthetic.schema.get_field_index("run_s"), "run_s", pa.array(run, pa.float64())
    )
    view = fitted_model_section(FIT_SUMMARY, trace=logged, synthetic=drawn)
    fact = view["facts"]["Synthetic runtimes beyond the walltime limit"]
    assert fact.startswith(f"3 of {drawn.num_rows:,d} synthetic jobs")
    assert "172,800 s (48 h" in fact
    assert "longest draw is 2,000,000 s" in fact
    assert "does not truncate" in fact
    qq = view["figures"][0]
    assert qq["id"] == "fig-model-qq"
    assert "walltime limit (172,800 s)" in qq["caption"]
    svg = str(qq["svg"])
    assert "walltime limit 172,800 s" in svg  # the legend entry of the drawn line
    assert "3 synthetic &gt; limit" in svg  # the batch panel's count
    # without requests in the log nothing is claimed
    plain = fitted_model_section(FIT_SUMMARY, trace=trace, synthetic=drawn)
    assert "Synthetic runtimes beyond the walltime limit" not in plain["facts"]
    assert "walltime limit" not in str(plain["figures"][0]["svg"])
    # the interactive panel (runtimes <= 900 s) is not stretched to the limit: one line pair
    assert str(qq["svg"]).count("synthetic &gt; limit") == 1
