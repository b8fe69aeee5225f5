"""The pure helpers of benchmarks/peers.py and its gridtrace-side scripts (no peers needed)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "peers.py"

# job, submit, wait, run, alloc, cpu, mem, req procs, req time, req mem, status, user, ...
SWF = """; Version: 2.2
; MaxNodes: 8
; MaxProcs: 4
1 0 0 100 2 -1 512 2 200 1024 1 1 1 -1 -1 -1 -1 -1
2 10 0 50 -1 -1 -1 4 -1 -1 1 2 2 -1 -1 -1 -1 -1
3 20 0 0 1 -1 -1 1 60 -1 5 1 1 -1 -1 -1 -1 -1
4 30 0 40 8 -1 -1 8 60 -1 1 1 1 -1 -1 -1 -1 -1
5 40 0 30 1 -1 -1 -1 60 -1 1 3 3 -1 -1 -1 -1 -1
"""


@pytest.fixture(scope="module")
def peers() -> ModuleType:
    spec = importlib.util.spec_from_file_location("peers_benchmark", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_max_procs_prefers_procs_then_nodes(peers: ModuleType) -> None:
    assert peers.max_procs(SWF) == 4
    assert peers.max_procs("; MaxNodes: 70  (dual)\n") == 70
    assert peers.max_procs("1 0 0 1\n") == 0


def test_simulation_file_keeps_simulable_jobs_with_one_cores_and_estimate(
    peers: ModuleType,
) -> None:
    text, dropped = peers.simulation_file(SWF, 4, 10)
    rows = [line.split() for line in text.splitlines() if not line.startswith(";")]
    # job 3 has no runtime and job 4 needs more than MaxProcs: left out and counted
    assert [r[0] for r in rows] == ["1", "2", "5"]
    assert dropped == 2
    by_id = {r[0]: r for r in rows}
    assert by_id["2"][4] == by_id["2"][7] == "4"  # requested processors, else allocated
    assert by_id["5"][4] == by_id["5"][7] == "1"
    assert by_id["2"][8] == "50"  # a missing requested time becomes the runtime
    assert all(r[6] == r[9] == "-1" for r in rows)  # memory unknown for both simulators
    assert all(len(r) == 18 for r in rows)
    limited, _ = peers.simulation_file(SWF, 4, 2)
    assert len([line for line in limited.splitlines() if not line.startswith(";")]) == 2


def test_accasim_waits_reads_the_dispatching_plan(peers: ModuleType) -> None:
    plan = (
        "16;13;1970-01-07 22:40:22__5;1#6;1#__1970-01-07 22:41:22;"
        "1970-01-07 23:21:50;2;2;NA;3600;\n"
        "15;12;1970-01-07 22:37:30__1;1#__1970-01-07 22:37:30;"
        "1970-01-07 23:35:27;1;1;NA;539;\n"
    )
    assert peers.accasim_waits(plan) == {16: 60.0, 15: 0.0}


def test_arrival_counts_cover_first_to_last_arrival(peers: ModuleType) -> None:
    counts = peers.arrival_counts(np.array([100.0, 101.0, 159.0, 160.0, 400.0]), 60.0)
    assert counts.tolist() == [3, 1, 0, 0, 0, 1]
    assert counts.sum() == 5


def test_lost_and_summary(peers: ModuleType) -> None:
    assert peers.lost([1, 2, 3, 4], [4, 2]) == [1, 3]
    assert peers.summary([3.0, 1.0, 2.0]) == "2.000 (1.000-3.000)"


def test_gridtrace_scripts_read_and_simulate_the_same_file(
    peers: ModuleType, tmp_path: Path
) -> None:
    text, _ = peers.simulation_file(SWF, 4, 10)
    path = tmp_path / "small.swf"
    path.write_text(text)
    read = subprocess.run(
        [sys.executable, "-c", peers.GRIDTRACE_READ, str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert sorted(json.loads(read.stdout.splitlines()[-1])["ids"]) == [1, 2, 5]
    done = subprocess.run(
        [sys.executable, "-c", peers.GRIDTRACE_SIM, str(path), "4", "fifo"],
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(done.stdout.splitlines()[-1])
    waits = dict(zip(got["ids"], got["wait"], strict=True))
    # FIFO on 4 cores: job 2 (4 cores) waits for job 1 to end at 100; job 5 waits behind it
    assert waits == {1: 0.0, 2: 90.0, 5: 110.0}
