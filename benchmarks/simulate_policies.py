"""Throughput of the simulator's policies, the numba EASY kernel against its Python reference.

    .venv/bin/python benchmarks/simulate_policies.py --jobs 1000000 --repeat 3

Conservative backfilling against another checkout (e.g. main before its kernel), same run:

    GRIDTRACE_REAL_DATA=../shared/data taskset -c 0 .venv/bin/python \
        benchmarks/simulate_policies.py --conservative-only --baseline-tree ../main-ref --repeat 5

runs ``simulate(policy="conservative")`` and its kernel alone (``conservative_starts`` on the
arrays ``simulate`` hands it) in this tree and, in a worker process importing ``gridtrace`` from
the baseline tree, on the same tables (synthetic; CTC-SP2 and HPC2N from ``swf/`` when
GRIDTRACE_REAL_DATA is set, with the oracle and the walltime estimator). The two trees alternate
run by run (the worker inherits the CPU pinning, and waits while this process runs); the script
checks that both give the same start times, and prints the medians, the min–max and the ratio of
the medians. Rates are jobs per CPU-second of the process (``time.process_time``; the machine may
be shared), with the wall-clock rates alongside; each tree runs once on a slice first
(compilation or cache load). ``--conservative-counters`` adds the incremental kernel's counters
in this tree (events at which a job waits, profile rebuilds, earliest-start scans, events at
which a new reservation sorted before held ones, reservations kept there, reservations released).

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
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

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


# run in the baseline tree, as a worker: one timed run per command read on stdin ("sim": the whole
# `simulate`; "kernel": `conservative_starts` alone on the arrays `simulate` hands it), so that the
# two trees alternate run by run; at EOF it saves the start times of its last runs
_BASELINE = """
import json, sys, time
import numpy as np, pyarrow.parquet as pq
import gridtrace
from gridtrace.sim import simulate
from gridtrace.sim._kernels import conservative_starts
table_path, arrays_path, procs, estimator, out_sim, out_kernel = sys.argv[1:7]
table = pq.read_table(table_path)
a = np.load(arrays_path)
args = (a["submit"], a["run"], a["est"], a["cores"], int(procs))
opts = {"missing": "oracle"} if estimator == "walltime" else {}
kw = dict(cores=int(procs), policy="conservative", estimator=estimator,
          estimator_options=opts, warmup_jobs=0, drain_jobs=0)
simulate(table.slice(0, 2000), **kw)  # compile (or load the cache) first
res = kern = None
print(json.dumps({"from": gridtrace.__file__}), flush=True)
for line in sys.stdin:
    t0, c0 = time.perf_counter(), time.process_time()
    if line.strip() == "sim":
        res = simulate(table, **kw)
    else:
        kern = conservative_starts(*args)
    print(json.dumps({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                      "engine": res.summary["engine"] if res is not None else ""}), flush=True)
np.save(out_sim, res.jobs.column("start_s").to_numpy())
np.save(out_kernel, kern[0])
"""


def kernel_arrays(table: pa.Table, estimator: str) -> dict[str, NDArray[Any]]:
    """The arrays `simulate` hands to `conservative_starts` (rows sorted by submit time, id)."""
    from gridtrace.sim._engine import _prepare, _static_estimates
    from gridtrace.sim._estimators import make_estimator

    prepared = _prepare(table)
    run = prepared.column("run_s").to_numpy()
    opts = {"missing": "oracle"} if estimator == "walltime" else {}
    est = _static_estimates(prepared, run, make_estimator(estimator, **opts))
    return {
        "submit": np.ascontiguousarray(prepared.column("submit_s").to_numpy(), dtype=np.float64),
        "run": np.ascontiguousarray(run, dtype=np.float64),
        "est": np.ascontiguousarray(est, dtype=np.float64),
        "cores": prepared.column("cores").to_numpy().astype(np.int64),
    }


def _ask(worker: subprocess.Popen[str], what: str) -> dict[str, Any]:
    """One timed run in the baseline worker: ``what`` is "sim" or "kernel"."""
    assert worker.stdin is not None
    assert worker.stdout is not None
    worker.stdin.write(what + "\n")
    worker.stdin.flush()
    reply: dict[str, Any] = json.loads(worker.stdout.readline())
    return reply


def _spread(n: int, secs: list[float]) -> tuple[float, float, float]:
    """Median, min and max of n / secs."""
    values = [n / s for s in secs]
    return statistics.median(values), min(values), max(values)


def _fmt(stats: tuple[float, float, float]) -> str:
    return f"{stats[0]:,.0f} ({stats[1]:,.0f}–{stats[2]:,.0f})"


def conservative_rows(
    workloads: list[tuple[str, int, pa.Table]], repeat: int, baseline_tree: str | None
) -> list[str]:
    """Markdown rows: conservative `simulate` and its kernel here and in the baseline tree.

    With a baseline tree the two trees alternate run by run (which one goes first alternates
    too) on the same tables and arrays; the rates are jobs per CPU-second of each process.
    """
    import pyarrow.parquet as pq

    from gridtrace.sim._kernels import conservative_starts

    out = []
    for label, procs, table in workloads:
        estimators = (
            ["oracle", "walltime"] if "walltime_req_s" in table.column_names else ["oracle"]
        )
        for estimator in estimators:
            opts = {"missing": "oracle"} if estimator == "walltime" else {}
            n = table.num_rows
            arrays = kernel_arrays(table, estimator)
            args = (arrays["submit"], arrays["run"], arrays["est"], arrays["cores"], procs)
            kw: dict[str, Any] = {
                "cores": procs,
                "policy": "conservative",
                "estimator": estimator,
                "estimator_options": opts,
                "warmup_jobs": 0,
                "drain_jobs": 0,
            }
            mine: dict[str, list[float]] = {"sim": [], "kernel": [], "sim_wall": []}
            theirs: dict[str, list[float]] = {"sim": [], "kernel": [], "sim_wall": []}
            with tempfile.TemporaryDirectory() as tmp:
                worker = None
                if baseline_tree is not None:
                    tpath, apath = str(Path(tmp) / "trace.parquet"), str(Path(tmp) / "a.npz")
                    pq.write_table(table, tpath)
                    np.savez(
                        apath,
                        submit=arrays["submit"],
                        run=arrays["run"],
                        est=arrays["est"],
                        cores=arrays["cores"],
                    )
                    env = dict(os.environ, PYTHONPATH=str(Path(baseline_tree).resolve()))
                    argv = [sys.executable, "-c", _BASELINE, tpath, apath, str(procs)]
                    argv += [estimator, str(Path(tmp) / "sim.npy"), str(Path(tmp) / "k.npy")]
                    worker = subprocess.Popen(
                        argv,
                        env=env,
                        cwd=baseline_tree,  # `python -c` puts the working directory first
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        text=True,
                    )
                    assert worker.stdout is not None
                    origin = json.loads(worker.stdout.readline())["from"]
                    if not str(origin).startswith(str(Path(baseline_tree).resolve())):
                        raise RuntimeError(f"the baseline imported gridtrace from {origin}")

                res = None
                kern = None
                base_engine = ""
                for r in range(repeat):
                    for turn in (0, 1) if r % 2 == 0 else (1, 0):
                        if turn == 1 and worker is not None:
                            got = _ask(worker, "sim")
                            theirs["sim"].append(got["cpu"])
                            theirs["sim_wall"].append(got["wall"])
                            base_engine = got["engine"]
                            theirs["kernel"].append(_ask(worker, "kernel")["cpu"])
                        elif turn == 0:
                            t0, c0 = time.perf_counter(), time.process_time()
                            res = simulate(table, **kw)
                            mine["sim_wall"].append(time.perf_counter() - t0)
                            mine["sim"].append(time.process_time() - c0)
                            c0 = time.process_time()
                            kern = conservative_starts(*args)
                            mine["kernel"].append(time.process_time() - c0)
                assert res is not None
                assert kern is not None
                same = "–"
                if worker is not None:
                    assert worker.stdin is not None
                    worker.stdin.close()
                    if worker.wait() != 0:
                        raise RuntimeError("the baseline worker failed")
                    ours_start = res.jobs.column("start_s").to_numpy()
                    base_start = np.load(Path(tmp) / "sim.npy")
                    base_kern = np.load(Path(tmp) / "k.npy")
                    same = (
                        "identical"
                        if np.array_equal(ours_start, base_start, equal_nan=True)
                        and np.array_equal(kern[0], base_kern, equal_nan=True)
                        else "DIFFERENT SCHEDULES"
                    )
            row = [f"{label}, {estimator}", f"{n:,}"]
            for key in ("sim", "kernel"):
                ours = _spread(n, mine[key])
                row.append(_fmt(ours))
                if theirs[key]:
                    base = _spread(n, theirs[key])
                    row += [_fmt(base), f"{ours[0] / base[0]:.2f}×"]
                else:
                    row += ["–", "–"]
            ours_sim = _spread(n, mine["sim"])[0]
            row.append("yes" if ours_sim >= 300_000 else "no")
            wall = _spread(n, mine["sim_wall"])[0]
            base_wall = f"{_spread(n, theirs['sim_wall'])[0]:,.0f}" if theirs["sim_wall"] else "–"
            row.append(f"{wall:,.0f} / {base_wall}")
            row.append(f"{res.summary['engine']} / {base_engine or '–'}, {same}")
            out.append("| " + " | ".join(row) + " |")
    return out


def conservative_counters(workloads: list[tuple[str, int, pa.Table]]) -> list[str]:
    """Markdown rows: the incremental kernel's counters in this tree, one run per case.

    Events at which a job waits, profile rebuilds (after an early end), earliest-start scans
    (placements, new jobs included), events at which a new reservation sorted before held ones,
    the reservations from there on kept in place (neither released nor re-placed), reservations
    released to be re-placed: where the kernel's time goes, independent of the load.
    """
    from gridtrace.sim._kernels_jit import conservative_kernel_inc

    out = []
    for label, procs, table in workloads:
        estimators = (
            ["oracle", "walltime"] if "walltime_req_s" in table.column_names else ["oracle"]
        )
        for estimator in estimators:
            a = kernel_arrays(table, estimator)
            stats = conservative_kernel_inc(a["submit"], a["run"], a["est"], a["cores"], procs)[2]
            cells = [f"{label}, {estimator}", f"{table.num_rows:,}"]
            cells += [f"{int(v):,}" for v in stats[:6]]
            out.append("| " + " | ".join(cells) + " |")
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
    parser.add_argument(
        "--conservative-counters",
        action="store_true",
        help="with --conservative-only: also print the kernel's counters (events, rebuilds, scans)",
    )
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
        warm = [(label, procs, table.slice(0, 2000)) for label, procs, table in workloads]
        conservative_rows(warm, 1, None)  # compile (or load the cache) first
        rows = conservative_rows(workloads, args.repeat, args.baseline_tree)
        print(describe_machine())
        print(
            "command: .venv/bin/python benchmarks/simulate_policies.py --conservative-only "
            f"--conservative-jobs {args.conservative_jobs} --repeat {args.repeat}"
            + (" --baseline-tree BASELINE" if args.baseline_tree else "")
        )
        print()
        print(
            "jobs per CPU-second, median (min–max) of the runs; `simulate` end to end, and the "
            "kernel alone on the arrays `simulate` hands it; the ratio is of the medians"
        )
        print()
        print(
            "| trace, estimator | jobs | `simulate` here | `simulate` baseline | ratio "
            "| kernel here | kernel baseline | ratio | `simulate` ≥ 300k | jobs per wall-s "
            "here / baseline | engines, schedules |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|")
        print("\n".join(rows))
        if args.conservative_counters:
            print()
            print("counters of the incremental kernel in this tree (one run per case)")
            print()
            print(
                "| trace, estimator | jobs | events at which a job waits | profile rebuilds "
                "| earliest-start scans | events with a new reservation before held ones "
                "| reservations kept there | reservations released |"
            )
            print("|---|---:|---:|---:|---:|---:|---:|---:|")
            print("\n".join(conservative_counters(workloads)))
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
