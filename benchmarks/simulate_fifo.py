"""Throughput of the strict-FIFO simulator, against its own general event loop in the same run.

    .venv/bin/python benchmarks/simulate_fifo.py --jobs 1000000 --repeat 5

Workload: M/M/50 at ρ = 0.95 (E[S] = 1000 s). Single-core jobs, and multi-core jobs drawing 1–8
cores (same load). Reports the median and the min–max over the repeats, in jobs per second, for
``simulate`` end to end (tables, metrics, summary) and for the FIFO kernels alone; the general
event loop (a policy callback per decision) runs on a slice in the same process as the baseline.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from gridtrace.models import poisson_exponential_trace
from gridtrace.sim import fifo_multi_core_starts, fifo_single_core_starts, simulate

try:
    from _machine import describe_machine
except ImportError:  # run from another folder
    from benchmarks._machine import describe_machine

SHARES = {"a": 0.7, "b": 0.2, "c": 0.05, "d": 0.05}


def rates(n: int, repeat: int, work: Callable[[], object]) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        out.append(n / (time.perf_counter() - start))
    return out


def row(name: str, values: list[float]) -> str:
    return (
        f"| {name} | {statistics.median(values):,.0f} | {min(values):,.0f} – {max(values):,.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--baseline-jobs", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n, cores = args.jobs, 50
    single = poisson_exponential_trace(
        n, 0.95 * cores / 1000.0, 1 / 1000.0, cores=cores, vo_shares=SHARES, rng=0
    )
    rng = np.random.default_rng(1)
    job_cores = rng.integers(1, 9, n).astype(np.int32)  # mean 4.5 cores: same load
    gaps = rng.exponential(1000.0 * 4.5 / (0.95 * cores), n)
    multi = single.set_column(3, "cores", pa.array(job_cores)).set_column(
        1, "submit_s", pa.array(np.cumsum(gaps))
    )
    submit, run = single["submit_s"].to_numpy(), single["run_s"].to_numpy()
    multi_submit = multi["submit_s"].to_numpy()
    m = min(args.baseline_jobs, n)
    results = [
        ("`simulate`, single-core, end to end", rates(n, args.repeat, lambda: simulate(single))),
        (
            "`simulate`, single-core, with fairness F",
            rates(n, args.repeat, lambda: simulate(single, vo_shares=SHARES)),
        ),
        (
            "`simulate`, multi-core (1–8 cores), end to end",
            rates(n, args.repeat, lambda: simulate(multi)),
        ),
        (
            "FIFO kernel alone, single-core",
            rates(n, args.repeat, lambda: fifo_single_core_starts(submit, run, cores)),
        ),
        (
            "FIFO kernel alone, multi-core",
            rates(
                n,
                args.repeat,
                lambda: fifo_multi_core_starts(
                    multi_submit, run, job_cores.astype(np.int64), cores
                ),
            ),
        ),
        (
            f"baseline: general event loop, single-core ({m:,} jobs)",
            rates(m, args.repeat, lambda: simulate(single.slice(0, m), fast_path=False)),
        ),
        (
            f"baseline: general event loop, multi-core ({m:,} jobs)",
            rates(m, args.repeat, lambda: simulate(multi.slice(0, m), fast_path=False)),
        ),
    ]
    print(describe_machine())
    print(
        f"command: .venv/bin/python benchmarks/simulate_fifo.py --jobs {n} --repeat {args.repeat}"
    )
    print()
    print("| path | median jobs/s | min – max |")
    print("|---|---|---|")
    for name, values in results:
        print(row(name, values))
    base = statistics.median(results[5][1])
    print(
        f"\nend-to-end single-core / general loop: {statistics.median(results[0][1]) / base:.1f}x"
    )


if __name__ == "__main__":
    main()
