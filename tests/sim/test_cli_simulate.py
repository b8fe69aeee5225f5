"""`gridtrace simulate --policy NAME --estimator NAME`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gridtrace.cli import main
from gridtrace.schema import read_table


def test_simulate_with_policy_and_estimator(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = tmp_path / "traces"
    args = ["synth", "--preset", "PE-1", "--seed", "3", "--size", "400", "-o", str(traces)]
    assert main(args) == 0
    trace = traces / "PE-1-synth-seed3.parquet"
    out = tmp_path / "sim" / "sjf-median"
    args = ["simulate", str(trace), "-o", str(out), "--policy", "sjf", "--estimator", "median"]
    assert main([*args, "--seed", "2", "--warmup", "10", "--drain", "10"]) == 0
    assert "P = 80 cores, the trace's" in capsys.readouterr().out  # where P came from
    table = read_table(out / "seed2.parquet", "sim_result")
    assert table.num_rows == 400
    summary = json.loads((out / "seed2.summary.json").read_text())
    assert summary["policy"] == "sjf"
    assert summary["estimator"] == "median"
    assert sum(summary["estimator_settings"]["sources"].values()) > 0

    args = ["simulate", str(trace), "-o", str(tmp_path / "r"), "--policy", "random"]
    assert main([*args, "--seed", "5"]) == 0
    first = read_table(tmp_path / "r" / "seed5.parquet", "sim_result")
    assert main([*args, "--seed", "5"]) == 0  # the seed drives the random policy
    assert read_table(tmp_path / "r" / "seed5.parquet", "sim_result").equals(first)

    assert main(["simulate", str(trace), "-o", str(out), "--estimator", "psychic"]) == 2
    assert "known: median, oracle, walltime" in caplog.text
