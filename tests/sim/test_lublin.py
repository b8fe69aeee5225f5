"""Cross-simulator identity on Lublin-1 (sim.md §3.1): strict FIFO mean wait and makespan."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from gridtrace.sim import simulate

pytestmark = pytest.mark.realdata


def _lublin_1() -> Path:
    root = os.environ.get("GRIDTRACE_REAL_DATA")
    path = Path(root) / "swf" / "lublin_256.swf.gz" if root else None
    if path is None or not path.is_file():
        pytest.skip("set GRIDTRACE_REAL_DATA to the folder holding swf/lublin_256.swf.gz")
    return path


def _read_swf_rlscheduler_rules(path: Path) -> pa.Table:
    """Minimal SWF read with RLScheduler's loading rules: run < 0 -> 10, keep run > 0,
    cores = max(allocated, requested)."""
    rows = []
    with gzip.open(path, "rt") as fh:
        for line in fh:
            if line.startswith(";") or not line.strip():
                continue
            f = line.split()
            rows.append((float(f[0]), float(f[1]), float(f[3]), float(f[4]), float(f[7])))
    a = np.asarray(rows)
    run = np.where(a[:, 2] < 0, 10.0, a[:, 2])
    keep = run > 0
    return pa.table(
        {
            "job_id": pa.array(a[keep, 0].astype(np.int64)),
            "submit_s": pa.array(a[keep, 1]),
            "run_s": pa.array(run[keep]),
            "cores": pa.array(np.maximum(a[keep, 3], a[keep, 4]).astype(np.int32)),
            "interactive": pa.array(run[keep] <= 900.0),
        }
    )


@pytest.mark.parametrize("fast_path", [True, False], ids=["kernel", "events"])
def test_lublin_1_fifo_identity(fast_path: bool) -> None:
    trace = _read_swf_rlscheduler_rules(_lublin_1())
    assert trace.num_rows == 10_000
    result = simulate(trace, cores=256, warmup_jobs=0, drain_jobs=0, fast_path=fast_path)
    assert result.summary["classes"]["all"]["wait_mean_s"] == pytest.approx(2_388_443.76, abs=0.01)
    assert result.summary["makespan_s"] == 12_482_549.0


def _summary(policy: str, *, fast_path: bool = True) -> dict[str, float]:
    trace = _read_swf_rlscheduler_rules(_lublin_1())
    result = simulate(
        trace, cores=256, policy=policy, warmup_jobs=0, drain_jobs=0, fast_path=fast_path
    )
    s = result.summary
    return {
        "wait": s["classes"]["all"]["wait_mean_s"],
        "bsld": s["classes"]["all"]["bsld_mean"],
        "util": s["utilisation"],
        "makespan": s["makespan_s"],
    }


def test_lublin_1_strict_sjf_identity() -> None:
    # sim.md §3.1: strict SJF (oracle estimate, head-of-line blocking) 275,304.22 s / 11,359,058 s
    s = _summary("sjf-strict")
    assert round(s["wait"], 2) == 275_304.22
    assert s["makespan"] == 11_359_058.0


@pytest.mark.parametrize("fast_path", [True, False], ids=["kernel", "events"])
def test_lublin_1_easy_identity(fast_path: bool) -> None:
    # sim.md §3.1: true EASY 97,156.0 s, bsld 590.05, utilisation 0.936, makespan 8,730,698 s
    # (utilisation over makespan = last end - first submit)
    s = _summary("easy", fast_path=fast_path)
    assert round(s["wait"], 1) == 97_156.0
    assert round(s["bsld"], 2) == 590.05
    assert round(s["util"], 3) == 0.936
    assert s["makespan"] == 8_730_698.0


@pytest.mark.parametrize("fast_path", [True, False], ids=["kernel", "events"])
def test_lublin_1_greedy_first_fit_identity(fast_path: bool) -> None:
    # sim.md §0.3: AccaSim's "EBF" = greedy first-fit without reservation: 63,772.64 s / 8,966,268 s
    s = _summary("greedy-first-fit", fast_path=fast_path)
    assert round(s["wait"], 2) == 63_772.64
    assert s["makespan"] == 8_966_268.0
