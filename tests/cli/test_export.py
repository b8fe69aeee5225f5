"""gridtrace export: a jobs table to SWF / GWF, a jobs or trace table to Batsim."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from gridtrace.cli import main
from gridtrace.demo import write_demo_site
from gridtrace.errors import DataQualityWarning
from gridtrace.logs import read_gwf, read_swf
from gridtrace.schema import read_table


@pytest.fixture(scope="module")
def parsed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("export")
    write_demo_site(base / "log", n_jobs=200, cores=16, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        assert main(["parse", str(base / "log"), "-o", str(base / "site"), "--no-progress"]) == 0
    assert main(["trace", str(base / "site/jobs.parquet"), "-o", str(base), "--name", "t"]) == 0
    return base


def test_jobs_export_to_swf_and_gwf_read_back(parsed: Path) -> None:
    jobs = read_table(parsed / "site/jobs.parquet", "jobs")
    for fmt, reader in (("swf", read_swf), ("gwf", read_gwf)):
        out = parsed / f"site.{fmt}"
        assert main(["export", str(parsed / "site/jobs.parquet"), "--to", fmt, "-o", str(out)]) == 0
        again = reader(out).jobs
        assert again.num_rows == jobs.num_rows
        # the runtimes of the jobs that ran survive the text format
        assert sorted(r for r in again.column("run_s").to_pylist() if r is not None) == sorted(
            r for r in jobs.column("run_s").to_pylist() if r is not None
        )


def test_trace_export_to_batsim(parsed: Path) -> None:
    trace = read_table(parsed / "t.parquet", "trace")
    out = parsed / "t.json"
    assert main(["export", str(parsed / "t.parquet"), "--to", "batsim", "-o", str(out)]) == 0
    workload = json.loads(out.read_text())
    assert len(workload["jobs"]) == trace.num_rows
    assert workload["nb_res"] >= max(trace.column("cores").to_pylist())


def test_a_trace_cannot_be_exported_as_swf(parsed: Path, caplog: pytest.LogCaptureFixture) -> None:
    out = parsed / "t.swf"
    assert main(["export", str(parsed / "t.parquet"), "--to", "swf", "-o", str(out)]) != 0
    assert "SWF export takes a jobs table" in caplog.text
    assert not out.exists()
