"""Throughput of the simulator's policies, the numba EASY kernel against its Python reference.

    .venv/bin/python benchmarks/simulate_policies.py --jobs 1000000 --repeat 3

Workloads: (1) synthetic rigid multi-core jobs on P = 256 cores — Poisson arrivals, exponential
runtimes (mean 1000 s), cores 2^k with k uniform on 0…6 (mean 18.1), load ρ = 0.9; (2) Lublin-1
(10,000 jobs, 256 cores, estimate = runtime) when GRIDTRACE_REAL_DATA holds
``swf/lublin_256.swf.gz``. Reports the median and the min–max over the repeats, in jobs per
second: ``simulate`` end to end (tables, metrics, summary), the kernel alone (compiled before
timing), and the readable Python policies in the general event loop on a slice, in the same run.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

from gridtrace.sim import backfill_starts, simulate

try:
    from _machine import describe_machine
except ImportError:  # run from another folder
    from benchmarks._machine import describe_machine

CORES = 256


def synthetic(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    cores = (2 ** rng.integers(0, 7, n)).astype(np.int32)
    run = rng.exponential(1000.0, n)
    rate = 0.9 * CORES / (1000.0 * float(np.mean(2.0 ** np.arange(7))))
    submit = np.cumsum(rng.exponential(1 / rate, n))
    return pa.table(
        {
            "job_id": pa.array(np.arange(n, dtype=np.int64)),
            "submit_s": pa.array(submit),
            "run_s": pa.array(run),
            "cores": pa.array(cores),
            "interactive": pa.array(run <= 900.0),
        }
    )


def lublin_1() -> pa.Table | None:
    root = os.environ.get("GRIDTRACE_REAL_DATA")
    path = Path(root) / "swf" / "lublin_256.swf.gz" if root else None
    if path is None or not path.is_file():
        return None
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


def kernel_alone(table: pa.Table, *, reserve: bool) -> Callable[[], object]:
    submit = table["submit_s"].to_numpy()
    run = table["run_s"].to_numpy()
    need = table["cores"].to_numpy().astype(np.int64)
    return lambda: backfill_starts(submit, run, run, need, CORES, reserve=reserve)


def sim(table: pa.Table, policy: str, *, fast_path: bool = True) -> Callable[[], object]:
    return lambda: simulate(
        table, cores=CORES, policy=policy, warmup_jobs=0, drain_jobs=0, fast_path=fast_path
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--baseline-jobs", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n, m = args.jobs, min(args.baseline_jobs, args.jobs)
    big = synthetic(n)
    small = big.slice(0, m)
    kernel_alone(small.slice(0, 100), reserve=True)()  # compile (or load the cache) first
    results: list[tuple[str, list[float]]] = [
        ("EASY kernel alone, synthetic", rates(n, args.repeat, kernel_alone(big, reserve=True))),
        ("EASY `simulate` end to end, synthetic", rates(n, args.repeat, sim(big, "easy"))),
        (
            "greedy first-fit `simulate` end to end, synthetic",
            rates(n, args.repeat, sim(big, "greedy-first-fit")),
        ),
        (
            f"EASY kernel alone, synthetic ({m:,} jobs)",
            rates(m, args.repeat, kernel_alone(small, reserve=True)),
        ),
        (
            f"EASY Python reference (event loop), synthetic ({m:,} jobs)",
            rates(m, args.repeat, sim(small, "easy", fast_path=False)),
        ),
    ]
    for policy in ("fifo", "sjf", "sjf-strict", "hrrn", "greedy-first-fit", "conservative"):
        fast = policy in ("fifo", "greedy-first-fit")
        results.append(
            (
                f"{policy}, general event loop, synthetic ({m:,} jobs)",
                rates(m, args.repeat, sim(small, policy, fast_path=not fast)),
            )
        )
    lublin = lublin_1()
    if lublin is not None:
        k = lublin.num_rows
        results += [
            (
                "EASY kernel alone, Lublin-1",
                rates(k, args.repeat, kernel_alone(lublin, reserve=True)),
            ),
            ("EASY `simulate` end to end, Lublin-1", rates(k, args.repeat, sim(lublin, "easy"))),
            (
                "EASY Python reference (event loop), Lublin-1",
                rates(k, args.repeat, sim(lublin, "easy", fast_path=False)),
            ),
            (
                "strict SJF, general event loop, Lublin-1",
                rates(k, args.repeat, sim(lublin, "sjf-strict")),
            ),
        ]
    print(describe_machine())
    print(
        "command: .venv/bin/python benchmarks/simulate_policies.py "
        f"--jobs {n} --baseline-jobs {m} --repeat {args.repeat}"
    )
    print()
    print("| path | median jobs/s | min – max |")
    print("|---|---|---|")
    for name, values in results:
        print(row(name, values))
    by_name = {name: statistics.median(values) for name, values in results}
    ratio = (
        by_name[f"EASY kernel alone, synthetic ({m:,} jobs)"]
        / by_name[f"EASY Python reference (event loop), synthetic ({m:,} jobs)"]
    )
    print(f"\nEASY kernel / Python reference, synthetic: {ratio:.0f}x")
    if lublin is not None:
        ratio = (
            by_name["EASY kernel alone, Lublin-1"]
            / by_name["EASY Python reference (event loop), Lublin-1"]
        )
        print(f"EASY kernel / Python reference, Lublin-1: {ratio:.0f}x")


if __name__ == "__main__":
    main()
