"""Time to characterise and segment a trace of a million jobs, on one core.

    .venv/bin/python benchmarks/segment.py --jobs 1000000 --repeat 3

Workload: Poisson arrivals and exponential runtimes over five phases of equal size, with an
arrival-rate step, a runtime shift, a VO-mix switch and a back-to-start phase; six VOs, 1–4
cores per job, as-logged waits (so the pool proxy runs too). Reports, per repeat, the time of
``characterise`` and of ``segment`` (with its default elbow penalty search) and their sum; the
bar is 30 s for both together.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyarrow as pa

from gridtrace.schema import conform, with_trace_metadata
from gridtrace.segment import segment
from gridtrace.stats import characterise

try:
    from _machine import describe_machine
except ImportError:  # run from another folder
    from benchmarks._machine import describe_machine

VOS = ["atlas", "cms", "lhcb", "alice", "biomed", "dteam"]


def make_trace(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    phase = np.minimum(np.arange(n) * 5 // n, 4)
    rate = np.array([0.05, 0.1, 0.1, 0.1, 0.05])[phase]
    mean_run = np.array([1000.0, 1000.0, 3000.0, 3000.0, 1000.0])[phase]
    mixes = np.array(
        [
            [0.4, 0.3, 0.1, 0.1, 0.05, 0.05],
            [0.4, 0.3, 0.1, 0.1, 0.05, 0.05],
            [0.4, 0.3, 0.1, 0.1, 0.05, 0.05],
            [0.1, 0.1, 0.4, 0.3, 0.05, 0.05],
            [0.4, 0.3, 0.1, 0.1, 0.05, 0.05],
        ]
    )
    cumulative = mixes.cumsum(axis=1)[phase]
    vo = (rng.random(n)[:, None] > cumulative).sum(axis=1)
    submit = np.cumsum(rng.exponential(1.0 / rate))
    run = np.round(rng.exponential(mean_run))
    table = pa.table(
        {
            "job_id": pa.array(np.arange(n, dtype=np.int64)),
            "submit_s": pa.array(submit - submit[0]),
            "run_s": pa.array(run),
            "cores": pa.array(rng.integers(1, 5, n).astype(np.int32)),
            "vo": pa.array(np.array(VOS)[np.minimum(vo, 5)]),
            "user": pa.array(np.char.add("u", rng.integers(0, 500, n).astype(str))),
            "interactive": pa.array(run <= 900),
            "wait_s": pa.array(np.round(rng.exponential(300.0, n))),
        }
    )
    return with_trace_metadata(
        conform(table, "trace"),
        origin="2005-01-03T00:00:00+00:00",
        site="bench",
        cores=400,
        tau_s=900.0,
        provenance={"tz": "Europe/Paris"},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    trace = make_trace(args.jobs)
    stats_s, segment_s = [], []
    segments = 0
    for _ in range(args.repeat):
        start = time.perf_counter()
        characterise(trace)
        middle = time.perf_counter()
        result = segment(trace)
        end = time.perf_counter()
        stats_s.append(middle - start)
        segment_s.append(end - middle)
        segments = result.segments.num_rows
    total = [a + b for a, b in zip(stats_s, segment_s, strict=True)]
    print(describe_machine())
    print(
        f"command: .venv/bin/python benchmarks/segment.py --jobs {args.jobs} --repeat {args.repeat}"
    )
    print()
    print("| step | median s | min – max s |")
    print("|---|---|---|")
    for name, values in (("characterise", stats_s), ("segment", segment_s), ("both", total)):
        print(
            f"| {name} | {statistics.median(values):.2f} | {min(values):.2f} – {max(values):.2f} |"
        )
    print(f"\n{args.jobs:,} jobs -> {segments} segments; bar: both <= 30 s")


if __name__ == "__main__":
    main()
