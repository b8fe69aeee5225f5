"""Every stage as a sub-command, chained by hand on the demo site, as the README shows."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest

from gridtrace.cli import main
from gridtrace.demo import write_demo_site
from gridtrace.errors import DataQualityWarning
from gridtrace.schema import read_table, trace_metadata


@pytest.fixture(scope="module")
def demo_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("demo") / "log"
    write_demo_site(folder, n_jobs=300, cores=16, seed=3)
    return folder


def test_stages_chain_from_log_to_index(
    demo_log: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    traces, sim, reports = tmp_path / "traces", tmp_path / "sim", tmp_path / "reports"
    site = traces / "demo"
    args = ["parse", str(demo_log), "-o", str(site), "--no-progress"]
    with warnings.catch_warnings():
        # on the command line a data-quality warning is a log line, not an exception
        warnings.simplefilter("always", DataQualityWarning)
        assert main([*args, "--vo", "group:(prd)?atl.*=atlas", "--vo", "group:dteam=dteam"]) == 0
    assert re.search(r"20240325: 2 of \d+ lines quarantined \(first: line \d+", caplog.text)
    out = capsys.readouterr().out
    assert "2 quarantined" in out
    summary = json.loads((site / "parse-summary.json").read_text())
    assert summary["reconciled"]
    jobs = read_table(site / "jobs.parquet", "jobs")
    assert "atlas" in jobs.column("vo").to_pylist()

    assert main(["trace", str(site / "jobs.parquet"), "-o", str(traces), "--name", "demo"]) == 0
    trace = read_table(traces / "demo.parquet", "trace")
    assert trace_metadata(trace)["cores"] == 16  # every slot of the 2 nodes was used

    assert (
        main(["synth", "--preset", "PE-1", "--seed", "4", "--size", "300", "-o", str(traces)]) == 0
    )
    synth = traces / "PE-1-synth-seed4.parquet"
    assert read_table(synth, "trace").num_rows == 300

    segments = site / "segments"
    args = ["segment", str(traces / "demo.parquet"), "--jobs", str(site / "jobs.parquet")]
    assert main([*args, "-o", str(segments), "--min-jobs", "4", "--block-jobs", "2"]) == 0
    read_table(segments / "segments.parquet", "segments")

    for workload, path in (("demo", traces / "demo.parquet"), ("PE-1", synth)):
        run_dir = sim / workload / "fifo"
        args = [
            "simulate",
            str(path),
            "-o",
            str(run_dir),
            "--seed",
            "4",
            "--warmup",
            "10",
            "--drain",
            "10",
        ]
        assert main(args) == 0
        read_table(run_dir / "seed4.parquet", "sim_result")
        args = [
            "report",
            str(run_dir / "seed4.parquet"),
            "--trace",
            str(path),
            "--workload",
            workload,
            "-o",
            str(reports / workload),
        ]
        if workload == "demo":
            args += ["--segments", str(segments), "--tz", "Europe/Paris"]
        assert main(args) == 0
    demo_report = (reports / "demo" / "index.html").read_text()
    assert "<h3>Segments</h3>" in demo_report
    assert 'class="selected"' in demo_report
    assert "hour of day (h, local time in Europe/Paris)" in demo_report
    figures = [str(reports / w / "key-figures.json") for w in ("demo", "PE-1")]
    assert main(["index", *figures, "-o", str(reports)]) == 0
    assert (reports / "all").read_text().split() == [
        "reports/demo/index.html",
        "reports/PE-1/index.html",
    ]
    assert "PE-1/index.html" in (reports / "index.html").read_text()


def test_errors_are_reported_without_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert main(["parse", str(tmp_path / "missing"), "-o", str(tmp_path / "out")]) == 2
    assert "no such file" in caplog.text
    assert main(["synth", "--preset", "PE-9", "--seed", "1", "-o", str(tmp_path)]) == 2
    assert "PE-1" in caplog.text  # the message lists the presets that exist


def test_errors_raise_names_file_and_line(
    demo_log: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert main(["parse", str(demo_log), "-o", str(tmp_path), "--errors", "raise"]) == 2
    assert f"{sorted(demo_log.iterdir())[0]}:" in caplog.text
