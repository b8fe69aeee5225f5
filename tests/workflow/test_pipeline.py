"""The pipeline end to end on the small config in .test/, as a new user would run it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from gridtrace.schema import read_table, trace_metadata

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.workflow

WORKLOAD_FIGURES = [
    "fig-runtime-cdf",
    "fig-interarrival-cdf",
    "fig-service-series",
    "fig-idc",
    "fig-profiles",
]
SCHEDULING_FIGURES = ["fig-interactive-wait-cdf", "fig-w-inverse-cdf", "fig-fairness"]
MODEL_FIGURES = ["fig-model-qq", "fig-model-idc", "fig-model-acf"]
RL_FIGURES = [
    "fig-rl-fairness",
    "fig-rl-learning",
    "fig-rl-action-mix",
    "fig-rl-w-time",
    "fig-rl-cdfs",
    "fig-rl-fairness-windows",
]
# drawn where a pathology is flagged (a wait over a day, the pool at its floor), to locate it
RL_LOCATING_FIGURES = {"fig-rl-long-waits", "fig-rl-pool"}
SVG = re.compile(r"<svg\b.*?</svg>", re.S)
# an axis label names its unit (or kind) in parentheses: "runtime (s, log scale)"
AXIS_LABEL = re.compile(r"<text\b[^>]*>([^<]*\([^<]*\)[^<]*)</text>")


def _snakemake(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "snakemake", *args]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, (
        f"{' '.join(command)}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    )
    return done


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("pipeline")
    shutil.copytree(REPO / ".test" / "config", work / "config")
    _snakemake(
        "reports/all",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(work),
        "--configfile",
        str(work / "config" / "config.yaml"),
        "--cores",
        "2",
        "--show-failed-logs",
        cwd=work,
    )
    return work


def test_every_workload_has_a_report_and_the_manifest_lists_them(run_dir: Path) -> None:
    workloads = ["PE-1", "MM50-20", "demo"]
    manifest = (run_dir / "reports" / "all").read_text().split()
    for workload in workloads:
        html = run_dir / "reports" / workload / "index.html"
        assert html.is_file()
        assert str(Path("reports") / workload / "index.html") in manifest
        text = html.read_text()
        assert "<script" not in text
        assert "http://" not in text
        assert "https://" not in text
    index = (run_dir / "reports" / "index.html").read_text()
    for workload in workloads:
        assert f"{workload}/index.html" in index


def test_reports_show_the_workload_and_scheduling_figures(run_dir: Path) -> None:
    for workload in ("PE-1", "MM50-20", "demo"):
        text = (run_dir / "reports" / workload / "index.html").read_text()
        ids = re.findall(r'<figure id="([^"]+)">', text)
        model = MODEL_FIGURES if workload == "demo" else []
        # a preset has no local clock: its report leaves the daily and weekly profiles out
        workload_figures = [
            f for f in WORKLOAD_FIGURES if workload == "demo" or f != "fig-profiles"
        ]
        before_rl = workload_figures + model + SCHEDULING_FIGURES
        assert ids[: len(before_rl)] == before_rl, (workload, ids)
        rl = ids[len(before_rl) :]
        if workload != "MM50-20":
            assert rl == [], (workload, ids)
        else:
            # .test runs RL on MM50-20, on its own VO targets and on the infeasible ones; the
            # infeasible section draws its F over time and the figures locating its flags
            assert rl[: len(RL_FIGURES)] == RL_FIGURES, ids
            rest = rl[len(RL_FIGURES) :]
            assert "fig-rl-fairness-infeasible" in rest, ids
            cut = rest.index("fig-rl-fairness-infeasible")
            own, further = rest[:cut], rest[cut + 1 :]
            assert set(own) <= RL_LOCATING_FIGURES, ids
            assert {f.removesuffix("-infeasible") for f in further} <= RL_LOCATING_FIGURES, ids
        svgs = SVG.findall(text)
        assert len(svgs) == len(ids)
        for svg in svgs:
            assert "<script" not in svg.lower()
            assert len(AXIS_LABEL.findall(svg)) >= 2, (workload, svg[:200])
        for policy in ("fifo", "sjf", "easy"):
            assert f'<td class="text">{policy}</td>' in text
        # presets are drawn anew per seed (pooled); a site's deterministic policies run once
        pooled = "one run per policy" if workload == "demo" else "jobs of every seed pooled"
        assert pooled in text
        assert "Utilisation factor U" in text
        assert "Core-weighted ρ" in text


def test_demo_site_is_segmented_and_its_report_shows_the_segments(run_dir: Path) -> None:
    segments = read_table(run_dir / "traces" / "demo" / "segments.parquet", "segments")
    assert segments.num_rows >= 1
    assert min(segments.column("jobs").to_pylist()) >= 200 or segments.num_rows == 1
    summary = json.loads((run_dir / "traces" / "demo" / "segmentation.json").read_text())
    assert summary["params"]["min_jobs"] == 200
    chosen = summary["choice"]["segment_id"]
    text = (run_dir / "reports" / "demo" / "index.html").read_text()
    assert "<h3>Segments</h3>" in text
    assert re.findall(r'<tr class="selected">\s*<td class="text">(\d+)', text) == [str(chosen)]
    assert "start: first segment" in text
    assert "As logged (the site's own scheduler)" in text
    assert "<h3>Segments</h3>" not in (run_dir / "reports" / "PE-1" / "index.html").read_text()


def test_rl_experiments_are_run_and_reported(run_dir: Path) -> None:
    mm50 = json.loads((run_dir / "sim" / "MM50-20" / "rl" / "summary.json").read_text())
    assert mm50["schema"] == "gridtrace.rl-experiment/1"
    assert mm50["experiment"] == "scheduling"
    assert len(mm50["seeds"]["evaluation"]) == 2  # the .test config's eval_seeds
    assert mm50["published"]["key"] == "MM50-20"
    runs = pq.read_table(run_dir / "sim" / "MM50-20" / "rl" / "runs.parquet")
    assert set(runs.column("variant").to_pylist()) >= {
        "fifo",
        "sjf-est",
        "hrrn",
        "rl-mlp",
        "rl-esn",
        "rl-mlp-slowdown",
        "rl-esn-slowdown",
    }
    infeasible = json.loads(
        (run_dir / "sim" / "MM50-20" / "rl-infeasible" / "summary.json").read_text()
    )
    assert infeasible["targets"] == "infeasible"
    assert infeasible["vo_shares"] == {"vo1": 0.4, "vo2": 0.2, "vo3": 0.2, "vo4": 0.2}
    # the research's reward only: the slowdown reward's schedules do not depend on the targets
    assert set(infeasible["agents"]) == {"rl-mlp", "rl-esn"}
    mm50_html = (run_dir / "reports" / "MM50-20" / "index.html").read_text()
    assert '<h3 id="rl-targets-infeasible">VO targets: infeasible (vo1 0.40' in mm50_html
    egee = json.loads((run_dir / "sim" / "demo-segment" / "rl" / "summary.json").read_text())
    assert egee["source"] == "trace"
    assert {a["variant"] for a in egee["aggregate"]} >= {"native", "rig-est-1", "ela-ora-0.5"}
    assert egee["protocol"]["split"]["train_jobs"] > 0
    for workload in ("MM50-20", "demo-segment"):
        text = (run_dir / "reports" / workload / "index.html").read_text()
        assert 'id="rl-table2"' in text
        assert "Verdict." in text
    assert (
        'id="fig-rl-elastic"' in (run_dir / "reports" / "demo-segment" / "index.html").read_text()
    )
    # workloads without an RL experiment keep the placeholder
    assert (
        "No RL experiment for this workload yet."
        in (run_dir / "reports" / "PE-1" / "index.html").read_text()
    )


def test_the_selected_segment_is_a_workload_of_its_own(run_dir: Path) -> None:
    site = read_table(run_dir / "traces" / "demo.parquet", "trace")
    segment = read_table(run_dir / "traces" / "demo-segment.parquet", "trace")
    summary = json.loads((run_dir / "traces" / "demo" / "segmentation.json").read_text())
    segments = read_table(run_dir / "traces" / "demo" / "segments.parquet", "segments")
    row = segments.to_pylist()[
        segments.column("segment_id").to_pylist().index(summary["choice"]["segment_id"])
    ]
    assert segment.num_rows == row["row_stop"] - row["row_start"] == row["jobs"]
    assert (
        segment.column("job_id").to_pylist()
        == site.column("job_id").to_pylist()[row["row_start"] : row["row_stop"]]
    )
    # replayed on the site's cores, with the segment named in the provenance
    meta = trace_metadata(segment)
    assert meta["cores"] == trace_metadata(site)["cores"]
    assert meta["provenance"]["segment"]["segment_id"] == row["segment_id"]
    manifest = (run_dir / "reports" / "all").read_text().split()
    assert str(Path("reports") / "demo-segment" / "index.html") in manifest
    assert (run_dir / "sim" / "demo-segment" / "fifo" / "seed1.parquet").is_file()


def test_sites_are_fitted_and_drawn_and_presets_show_their_parameters(run_dir: Path) -> None:
    model = json.loads((run_dir / "models" / "demo.json").read_text())
    assert model["kind"] == "workload"
    assert model["params"]["k_max"] == 2  # the schema's default
    fit = json.loads((run_dir / "models" / "demo.fit-summary.json").read_text())
    chosen = fit["summary"]["arrival_streams"][0]["model"]
    assert chosen in fit["bic_table"]["arrivals"]["site"]
    # the IDC/ACF band of 20 model replicas that the report draws the trace over
    band = fit["replica_band"]
    assert band["replicas"] == 20
    assert len(band["idc"]["t_s"]) == len(band["idc"]["inside"]) > 0
    original = read_table(run_dir / "traces" / "demo.parquet", "trace")
    synthetic = read_table(run_dir / "traces" / "demo-synth.parquet", "trace")
    assert synthetic.num_rows == original.num_rows == model["fitted"]["n_fit_jobs"]
    swf = (run_dir / "traces" / "demo-synth.swf").read_text().splitlines()
    assert sum(1 for line in swf if line.strip() and not line.startswith(";")) == (
        synthetic.num_rows
    )
    for workload in ("demo-segment",):
        assert (run_dir / "models" / f"{workload}.json").is_file()
        assert (run_dir / "traces" / f"{workload}-synth.parquet").is_file()
    assert not (run_dir / "models" / "PE-1.json").exists()
    text = (run_dir / "reports" / "demo" / "index.html").read_text()
    model_html = text.split('<section id="model">')[1].split("</section>")[0]
    assert '<h3 id="model-bic">BIC</h3>' in model_html
    # one chosen candidate per arrival stream and per runtime class
    assert model_html.count("<strong>chosen</strong>") == 1 + len(fit["summary"]["runtimes"])
    assert f'<td class="text">{chosen}</td>' in model_html
    assert "Held-out log-likelihood" in model_html
    preset = (run_dir / "reports" / "PE-1" / "index.html").read_text()
    preset_html = preset.split('<section id="model">')[1].split("</section>")[0]
    assert "seed preset (not fitted)" in preset_html
    assert "BIC" not in preset_html


def test_demo_site_is_parsed_back_with_every_line_accounted_for(run_dir: Path) -> None:
    summary = json.loads((run_dir / "traces" / "demo" / "parse-summary.json").read_text())
    assert summary["reconciled"]
    assert summary["lines_read"] == summary["lines_parsed"] + summary["lines_quarantined"]
    assert summary["lines_quarantined"] == 2  # the two planted unreadable lines
    assert summary["record_flags"].get("TRUNCATED") == 1
    assert summary["record_flags"].get("NON_UTF8") == 1
    assert summary["record_flags"].get("CONTROL_CHARS") == 1
    jobs = read_table(run_dir / "traces" / "demo" / "jobs.parquet", "jobs")
    vos = set(jobs.column("vo").to_pylist())
    assert {"atlas", "cms", "lhcb", "biomed", "dteam", "ops"} <= vos
    trace = read_table(run_dir / "traces" / "demo.parquet", "trace")
    assert not set(trace.column("vo").to_pylist()) & {"dteam", "ops"}
    assert trace_metadata(trace)["cores"] == 40


def test_outputs_match_their_schemas(run_dir: Path) -> None:
    for path in (run_dir / "sim").rglob("seed*.parquet"):
        read_table(path, "sim_result")
    for path in (run_dir / "traces").glob("*-synth-seed*.parquet"):
        read_table(path, "trace")


def test_rerunning_a_synthetic_draw_with_its_seed_gives_the_same_table(run_dir: Path) -> None:
    target = "traces/PE-1-synth-seed1.parquet"
    before = pq.read_table(run_dir / target)
    _snakemake(
        target,
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(run_dir),
        "--configfile",
        str(run_dir / "config" / "config.yaml"),
        "--cores",
        "1",
        "--forcerun",
        "synth_preset",
        cwd=run_dir,
    )
    assert pq.read_table(run_dir / target).equals(before)


def test_snakemake_report_builds(run_dir: Path) -> None:
    _snakemake(
        "reports/all",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(run_dir),
        "--configfile",
        str(run_dir / "config" / "config.yaml"),
        "--report",
        str(run_dir / "snakemake-report.html"),
        cwd=run_dir,
    )
    assert (run_dir / "snakemake-report.html").stat().st_size > 0


@pytest.mark.realdata
def test_real_data_config_runs_on_the_real_logs(real_data: Path, tmp_path: Path) -> None:
    config = (REPO / "config" / "real-data.yaml").read_text()
    (tmp_path / "config").mkdir()
    local = tmp_path / "config" / "real-data.yaml"
    # the RL experiment on the LPC segment with 2 evaluation seeds instead of 10 (about 11 min):
    # this test checks that the pipeline runs on the real logs, not the experiment's intervals
    assert "  eval_seeds: 10\n" in config
    config = config.replace("  eval_seeds: 10\n", "  eval_seeds: 2\n")
    local.write_text(config.replace("../shared/data", str(real_data)))
    _snakemake(
        "reports/all",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(tmp_path),
        "--configfile",
        str(local),
        "--cores",
        "2",
        cwd=tmp_path,
    )
    assert (tmp_path / "reports" / "all").read_text().split() == [
        f"reports/{workload}/index.html"
        for workload in (
            *("vsc", "ncar", "lpc", "lcg"),
            *("vsc-segment", "ncar-segment", "lpc-segment", "lcg-segment"),
        )
    ]
    vsc = json.loads((tmp_path / "traces" / "vsc" / "parse-summary.json").read_text())
    assert (vsc["lines_read"], vsc["lines_quarantined"], vsc["files"]) == (58_904, 0, 30)
    ncar = json.loads((tmp_path / "traces" / "ncar" / "parse-summary.json").read_text())
    assert (ncar["lines_read"], ncar["lines_quarantined"]) == (132, 0)
    lpc = read_table(tmp_path / "traces" / "lpc-segment.parquet", "trace")
    assert lpc.num_rows >= 10_000
    assert trace_metadata(lpc)["cores"] == 140
    text = (tmp_path / "reports" / "lpc-segment" / "index.html").read_text()
    for policy in ("native", "fifo", "sjf", "hrrn", "easy"):
        assert f'<td class="text">{policy}</td>' in text
    # LCG-2005 logged no start times: nothing to replay as logged, the other policies run
    assert not (tmp_path / "sim" / "lcg" / "native").exists()
    lcg = (tmp_path / "reports" / "lcg" / "index.html").read_text()
    assert '<td class="text">fifo</td>' in lcg


def test_ppo_trains_evaluates_and_has_its_page(run_dir: Path) -> None:
    # .test/config: one load (100 %), a tiny budget, 2 evaluation sequences
    folder = run_dir / "sim" / "ppo-deeprm" / "load-100"
    assert (folder / "policy.zip").stat().st_size > 0
    config = json.loads((folder / "config.json").read_text())
    assert config["algorithm"] == "sb3_contrib.MaskablePPO"
    assert config["learning_curve"]
    evaluation = json.loads((folder / "evaluation.json").read_text())
    policies = {r["policy"] for r in evaluation["summary"]}
    assert {"ppo", "sjf", "packer", "tetris", "easy", "fifo", "random"} <= policies
    assert {r["sequences"] for r in evaluation["summary"]} == {2}
    manifest = (run_dir / "reports" / "all").read_text().split()
    assert str(Path("reports") / "ppo-deeprm" / "index.html") in manifest
    page = (run_dir / "reports" / "ppo-deeprm" / "index.html").read_text()
    assert '<table class="side-by-side">' in page
    assert '<section id="verdict"' in page
    for fig in ("fig-curve", "fig-loads"):
        assert re.search(rf'<figure id="{fig}">\s*<svg\b', page), fig
    assert 'href="ppo-deeprm/index.html"' in (run_dir / "reports" / "index.html").read_text()


def test_ppo_rlscheduler_trains_on_the_demo_trace_and_has_its_page(run_dir: Path) -> None:
    # the default config's RLScheduler setup on traces/demo-synth.swf, shrunk by .test/config
    folder = run_dir / "sim" / "ppo-rlscheduler" / "demo-synth-nobf"
    assert (folder / "policy.zip").stat().st_size > 0
    evaluation = json.loads((folder / "evaluation.json").read_text())
    assert evaluation["setup"] == "rlscheduler"
    (entry,) = evaluation["evaluations"]
    assert (entry["trace"], entry["window"], len(entry["window_starts"])) == ("demo-synth", 128, 2)
    labels = {p["label"] for p in entry["policies"]}
    assert {"PPO", "FCFS", "SJF", "F1"} <= labels
    for policy in entry["policies"]:
        assert policy["low"] <= policy["mean"] <= policy["high"], policy["label"]
    manifest = (run_dir / "reports" / "all").read_text().split()
    assert str(Path("reports") / "ppo-rlscheduler" / "index.html") in manifest
    index = (run_dir / "reports" / "index.html").read_text()
    assert 'href="ppo-rlscheduler/index.html"' in index
