"""`gridtrace parse --spill` on Slurm, SGE and LSF logs: the same Parquet as without."""

from __future__ import annotations

import importlib.util
import json
import warnings
from pathlib import Path
from types import ModuleType

import numpy as np
import pyarrow.parquet as pq
import pytest

from gridtrace.cli import main
from gridtrace.errors import DataQualityWarning

OUTPUTS = ("records.parquet", "jobs.parquet", "quarantine.parquet")


def _generators() -> ModuleType:
    """The log generators of tests/logs/test_spill_formats.py (tests are not a package)."""
    path = Path(__file__).parents[1] / "logs" / "test_spill_formats.py"
    spec = importlib.util.spec_from_file_location("_spill_format_logs", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _parse(*args: str) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        return main(["parse", *args, "--no-progress"])


def _log(fmt: str, folder: Path) -> tuple[list[Path], tuple[str, ...]]:
    gen = _generators()
    rng = np.random.default_rng(5)
    if fmt == "slurm":
        lines = gen.slurm_lines(120, 1)
        paths = gen._spread(folder, lines, 3, rng, head=gen.SLURM_HEAD, stem="hpc", suffix=".sacct")
        return paths, ("--tz", "UTC")
    if fmt == "sge":
        return gen._sge_files(folder, gen.sge_lines(120, 1), 3, 5), ("--format", "sge")
    lines = gen.lsf_lines(120, 1)
    paths = gen._spread(folder, lines, 3, rng, stem="hpc", suffix=".lsb.acct")
    return paths, ("--format", "lsf")


@pytest.mark.parametrize("fmt", ["slurm", "sge", "lsf"])
def test_spill_writes_the_same_parquet_and_summary(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths, extra = _log(fmt, tmp_path / "in")
    names = [str(p) for p in paths]
    assert _parse(*names, "-o", str(tmp_path / "memory"), "--no-spill", *extra) == 0
    capsys.readouterr()
    spill = ("--spill", "--partitions", "5")
    assert _parse(*names, "-o", str(tmp_path / "spill"), *spill, *extra) == 0
    assert "assembled out of core" in capsys.readouterr().out
    for name in OUTPUTS:
        expected = pq.read_table(tmp_path / "memory" / name)
        assert pq.read_table(tmp_path / "spill" / name).equals(expected), name
    summaries = [
        json.loads((tmp_path / d / "parse-summary.json").read_text()) for d in ("memory", "spill")
    ]
    assert summaries[0] == summaries[1]
    assert summaries[0]["format"] == fmt


@pytest.mark.slow
def test_spill_on_a_dask_scheduler_writes_the_same_parquet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    distributed = pytest.importorskip("distributed")
    paths, extra = _log("slurm", tmp_path / "in")
    names = [str(p) for p in paths]
    assert _parse(*names, "-o", str(tmp_path / "memory"), "--no-spill", *extra) == 0
    with distributed.LocalCluster(
        processes=True, n_workers=2, threads_per_worker=1, dashboard_address=":0"
    ) as cluster:
        address = cluster.scheduler_address
        spill = ("--spill", "--partitions", "4", "--scheduler", address)
        assert _parse(*names, "-o", str(tmp_path / "spill"), *spill, *extra) == 0
    assert f"assembled on the dask cluster at {address}" in capsys.readouterr().out
    for name in OUTPUTS:
        expected = pq.read_table(tmp_path / "memory" / name)
        assert pq.read_table(tmp_path / "spill" / name).equals(expected), name
