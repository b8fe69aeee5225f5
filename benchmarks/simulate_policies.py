"""Throughput of the simulator's policies, the numba EASY kernel against its Python reference.

    .venv/bin/python benchmarks/simulate_policies.py --jobs 1000000 --repeat 3

Conservative backfilling against another checkout (e.g. main before its kernel), same run:

    GRIDTRACE_REAL_DATA=../shared/data .venv/bin/python benchmarks/simulate_policies.py \
        --conservative-only --baseline-tree ../main-ref --repeat 3

runs ``simulate(policy="conservative")`` in this tree and, in a subprocess importing
``gridtrace`` from the baseline tree, on the same tables (synthetic; CTC-SP2 and HPC2N from
``swf/`` when GRIDTRACE_REAL_DATA is set, with the oracle and the walltime estimator), checks that
both give the same start times, and prints the medians and their ratio. Rates are jobs per
CPU-second of the process (``time.process_time``; the machine may be shared), with the wall-clock
rates alongside; each tree runs the simulation once on a slice first (compilation or cache load).

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
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
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


def swf_log(name: str) -> tuple[int, pa.Table] | None:
    """A cleaned SWF log of GRIDTRACE_REAL_DATA/swf: (MaxProcs, trace with walltime_req_s).

    Cores: the allocated processors, else the requested ones; jobs with a negative runtime or
    submit time, or more cores than MaxProcs, are dropped; a requested time <= 0 is unknown.
    """
    root = os.environ.get("GRIDTRACE_REAL_DATA")
    path = Path(root) / "swf" / name if root else None
    if path is None or not path.is_file():
        return None
    procs = 0
    rows = []
    with gzip.open(path, "rt") as fh:
        for line in fh:
            if line.startswith(";"):
                found = re.match(r";\s*MaxProcs:\s*(\d+)", line)
                if found:
                    procs = int(found.group(1))
                continue
            f = line.split()
            if f:
                rows.append([float(x) for x in f[:9]])
    a = np.asarray(rows)
    cores = np.where(a[:, 4] > 0, a[:, 4], a[:, 7])
    keep = (a[:, 3] >= 0) & (a[:, 1] >= 0) & (cores >= 1) & (cores <= procs)
    a, cores = a[keep], cores[keep]
    return procs, pa.table(
        {
            "job_id": pa.array(a[:, 0].astype(np.int64)),
            "submit_s": pa.array(a[:, 1]),
            "run_s": pa.array(a[:, 3]),
            "cores": pa.array(cores.astype(np.int32)),
            "walltime_req_s": pa.array(np.where(a[:, 8] > 0, a[:, 8], np.nan)),
            "interactive": pa.array(a[:, 3] <= 900.0),
        }
    )


# run in the baseline tree: times simulate(policy="conservative") and saves the start times
_BASELINE = """
import json, sys, time
import numpy as np, pyarrow.parquet as pq
import gridtrace
from gridtrace.sim import simulate
table_path, procs, estimator, repeat, out = sys.argv[1:6]
table = pq.read_table(table_path)
opts = {"missing": "oracle"} if estimator == "walltime" else {}
kw = dict(cores=int(procs), policy="conservative", estimator=estimator,
          estimator_options=opts, warmup_jobs=0, drain_jobs=0)
simulate(table.slice(0, 2000), **kw)  # compile (or load the cache) first
secs, cpu = [], []
for _ in range(int(repeat)):
    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate(table, **kw)
    secs.append(time.perf_counter() - t0)
    cpu.append(time.process_time() - c0)
np.save(out, res.jobs.column("start_s").to_numpy())
print(json.dumps({"secs": secs, "cpu": cpu, "engine": res.summary["engine"],
                  "from": gridtrace.__file__}))
"""


def conservative_rows(
    workloads: list[tuple[str, int, pa.Table]], repeat: int, baseline_tree: str | None
) -> list[str]:
    """Markdown rows: conservative `simulate` here and in the baseline tree, same tables."""
    import pyarrow.parquet as pq

    out = []
    for label, procs, table in workloads:
        estimators = (
            ["oracle", "walltime"] if "walltime_req_s" in table.column_names else ["oracle"]
        )
        for estimator in estimators:
            opts = {"missing": "oracle"} if estimator == "walltime" else {}
            n = table.num_rows
            secs, cpu = [], []
            res = None
            for _ in range(repeat):
                t0, c0 = time.perf_counter(), time.process_time()
                res = simulate(
                    table,
                    cores=procs,
                    policy="conservative",
                    estimator=estimator,
                    estimator_options=opts,
                    warmup_jobs=0,
                    drain_jobs=0,
                )
                secs.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
            assert res is not None
            ours = statistics.median(n / s for s in cpu)
            ours_wall = statistics.median(n / s for s in secs)
            base_txt, ratio_txt, base_wall_txt = "–", "–", "–"
            if baseline_tree is not None:
                with tempfile.TemporaryDirectory() as tmp:
                    tpath = str(Path(tmp) / "trace.parquet")
                    spath = str(Path(tmp) / "start.npy")
                    pq.write_table(table, tpath)
                    env = dict(os.environ, PYTHONPATH=str(Path(baseline_tree).resolve()))
                    argv = [sys.executable, "-c", _BASELINE, tpath, str(procs), estimator]
                    argv += [str(repeat), spath]
                    done = subprocess.run(
                        argv,
                        env=env,
                        cwd=baseline_tree,  # `python -c` puts the working directory first
                        check=True,
                        capture_output=True,
                        text=True,
                    )
                    info = json.loads(done.stdout.strip().splitlines()[-1])
                    if not str(info["from"]).startswith(str(Path(baseline_tree).resolve())):
                        raise RuntimeError(f"the baseline imported gridtrace from {info['from']}")
                    theirs = np.load(spath)
                mine = res.jobs.column("start_s").to_numpy()
                same = bool(np.array_equal(mine, theirs, equal_nan=True))
                base = statistics.median(n / s for s in info["cpu"])
                base_wall = statistics.median(n / s for s in info["secs"])
                base_txt = f"{base:,.0f} ({info['engine']})"
                base_wall_txt = f"{base_wall:,.0f}"
                ratio_txt = f"{ours / base:.2f}x" + (
                    " identical" if same else " DIFFERENT SCHEDULES"
                )
            target = "yes" if ours >= 300_000 else "no"
            out.append(
                f"| {label}, {estimator} | {n:,} | {ours:,.0f} ({res.summary['engine']}) | "
                f"{base_txt} | {ratio_txt} | {target} | {ours_wall:,.0f} / {base_wall_txt} |"
            )
    return out


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
    parser.add_argument("--conservative-only", action="store_true")
    parser.add_argument("--conservative-jobs", type=int, default=200_000)
    parser.add_argument("--baseline-tree", help="a checkout whose gridtrace is the baseline")
    args = parser.parse_args()
    if args.conservative_only:
        workloads = [(f"synthetic (P = {CORES})", CORES, synthetic(args.conservative_jobs))]
        for name, label in (
            ("CTC-SP2-1996-3.1-cln.swf.gz", "CTC-SP2"),
            ("HPC2N-2002-2.2-cln.swf.gz", "HPC2N"),
        ):
            log = swf_log(name)
            if log is not None:
                workloads.append((f"{label} (P = {log[0]})", log[0], log[1]))
        conservative_rows(workloads[:1], 1, None)  # compile (or load the cache) first
        rows = conservative_rows(workloads, args.repeat, args.baseline_tree)
        print(describe_machine())
        print(
            "command: .venv/bin/python benchmarks/simulate_policies.py --conservative-only "
            f"--conservative-jobs {args.conservative_jobs} --repeat {args.repeat}"
            + (" --baseline-tree BASELINE" if args.baseline_tree else "")
        )
        print()
        print(
            "| trace, estimator | jobs | median jobs per CPU-s here | median jobs per CPU-s "
            "baseline | ratio, schedules | ≥ 300k | median jobs per wall-s here / baseline |"
        )
        print("|---|---:|---:|---:|---:|---|---:|")
        print("\n".join(rows))
        return
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
