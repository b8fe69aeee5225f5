"""Benchmark an EGEE-scale TORQUE log: generate, parse + assemble (out of core and in memory),
characterise; wall time and peak memory of each step.

The log is written as a grid site writes it: one accounting file per local day, named
``YYYYMMDD`` (gzip by default, ``YYYYMMDD.gz``), with the demo site's workload (its VO profiles,
run-time and core draws of :mod:`gridtrace.demo`) and its writer
(:func:`gridtrace.logs._torque_writer.torque_records`, the records a TORQUE server writes for each
job: Q, S, E). Jobs are generated in chunks in submit order and a day's file is written once no
later job can log in it (every record of a job comes at or after its submit), so the log is
streamed to disk, never held whole: memory is one chunk plus the two days a 48 h job can span.
The demo site's FIFO simulator is left out (it holds every job); a job waits an exponential time
(mean 10 min) and runs on a random node of 8 cores.

Each measured step runs in its own child process, started from a fresh wrapper process, so that
``ru_maxrss`` of the wrapper's children is that step's alone: it is the peak resident memory of
the step's largest process (with ``--workers`` above 1 the workers are separate processes;
``peak_tree_rss_mb``, sampled with psutil when it is installed, is the sum over the tree).

Steps:

* ``spill``: ``gridtrace parse LOG --spill --workers W`` (out-of-core assembly), with the peak
  disk space of its output folder (spill files and outputs, sampled each second);
* ``memory``: ``gridtrace parse LOG --no-spill`` (the in-memory path), only for
  ``--jobs`` up to ``--memory-jobs`` (it takes about 3 GB per million lines);
* ``scaling`` (with ``--scaling 1,2``, instead of the other steps): the spill step at each
  worker count on the same log, one after the other in the same run; ``speedup`` is the wall
  time of the first count over each one's, ``cpu_s`` the CPU time of the whole process tree
  (user + system, the wrapper's reaped children) and ``lines_per_cpu_s`` the lines read per
  CPU second (what a shared machine does not distort as much as wall time); ``--repeat N``
  runs the counts N times over, and ``scaling_summary`` gives the median and range of each
  count's wall time, CPU time, peak memory and speedup over the first count; ``steps`` holds
  each step's wall and CPU time as ``spill_parse`` logs them (run with ``-v``);
* ``characterise``: the jobs table of the spill step (the columns a trace needs) to a trace
  (:func:`gridtrace.logs.build_trace`, without records) and :func:`gridtrace.stats.characterise`.

Usage::

    .venv/bin/python benchmarks/egee_scale.py --jobs 1000000 --workers 2 --out-dir DIR
    .venv/bin/python benchmarks/egee_scale.py --jobs 1000000 --out-dir DIR --reuse  # same log
    .venv/bin/python benchmarks/egee_scale.py  # 17 million jobs (~50 M lines, ~2 GB gzip)
    .venv/bin/python benchmarks/egee_scale.py --jobs 200000 --scaling 1,2 --out-dir DIR
    .venv/bin/python benchmarks/egee_scale.py --jobs 200000 --scaling 1,2 --repeat 3 --reuse \\
        --partitions 8 --out-dir DIR
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gzip
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa

from gridtrace._atomic import atomic_path
from gridtrace.demo import DEMO_VOS, _job_row, _runtimes_and_cores
from gridtrace.logs._torque_writer import torque_records
from gridtrace.random import spawn_generators
from gridtrace.schema import conform

TZ = "Europe/Paris"
ORIGIN = dt.datetime(2024, 3, 25, tzinfo=dt.UTC)  # the demo site's origin
NODES = 2000  # 16,000 cores: a large EGEE site
CORES_PER_NODE = 8
MAX_SPAN_S = 3 * 86400  # a job's records lie within its submit + wait + 48 h walltime
CHUNK_JOBS = 50_000


def _jobs_chunk(first: int, submit_s: np.ndarray, rng: np.random.Generator) -> pa.Table:
    """Jobs ``first``, ``first + 1``, ... submitted at ``submit_s`` (seconds from ORIGIN)."""
    n = len(submit_s)
    shares = np.array([vo.share for vo in DEMO_VOS])
    vo_index = rng.choice(len(DEMO_VOS), size=n, p=shares / shares.sum())
    run_s, cores = _runtimes_and_cores(vo_index, rng)
    wait = rng.exponential(600.0, size=n).round()
    fate = rng.choice(3, size=n, p=[0.95, 0.04, 0.01])
    run_s = np.where(fate == 2, 48 * 3600, run_s)
    nodes = rng.integers(1, NODES + 1, size=n)
    user = rng.integers(1, 13, size=n)
    rows = []
    for i in range(n):
        vo = DEMO_VOS[int(vo_index[i])]
        code = 271 if fate[i] == 2 else (1 if fate[i] == 1 else 0)
        rows.append(
            _job_row(
                first + i - 1000,  # _job_row numbers ids from 1000
                float(submit_s[i]),
                float(submit_s[i] + wait[i]),
                float(run_s[i]),
                int(cores[i]),
                [f"wn{int(nodes[i]):04d}"],
                vo.group,
                f"{vo.user_prefix}{int(user[i]):03d}",
                vo.queue,
                code,
            )
        )
    return conform(pa.Table.from_pylist(rows), "jobs")


def generate(out: Path, n_jobs: int, *, days: int, seed: int, compress: bool) -> dict[str, Any]:
    """Write the log's daily files into ``out``, streaming; return what was written."""
    out.mkdir(parents=True, exist_ok=True)
    zone = ZoneInfo(TZ)
    (rng_arrival, rng_jobs) = spawn_generators(seed, 2)
    rate = n_jobs / (days * 86400.0)
    pending: dict[str, list[tuple[int, int, str, bytes]]] = {}
    files = lines = 0
    size = 0

    def flush(before_epoch: float | None) -> None:
        nonlocal files, lines, size
        origin = ORIGIN.timestamp()
        for day in sorted(pending):
            end = dt.datetime.strptime(day, "%Y%m%d").replace(tzinfo=zone) + dt.timedelta(days=1)
            if before_epoch is not None and end.timestamp() > before_epoch + origin:
                continue
            records = sorted(pending.pop(day), key=lambda r: (r[0], r[1], r[2]))
            data = b"".join(line for *_, line in records)
            path = out / (f"{day}.gz" if compress else day)
            with atomic_path(path) as temporary:
                if compress:
                    with gzip.open(temporary, "wb", compresslevel=1) as handle:
                        handle.write(data)
                else:
                    temporary.write_bytes(data)
            files += 1
            lines += len(records)
            size += path.stat().st_size

    now = 0.0
    for first in range(0, n_jobs, CHUNK_JOBS):
        count = min(CHUNK_JOBS, n_jobs - first)
        submit_s = now + np.cumsum(rng_arrival.exponential(1.0 / rate, size=count)).round()
        now = float(submit_s[-1])
        for epoch, order, rtype, jid, message in torque_records(
            _jobs_chunk(first + 1000, submit_s, rng_jobs)
        ):
            local = dt.datetime.fromtimestamp(epoch, zone)
            line = f"{local:%m/%d/%Y %H:%M:%S};{rtype};{jid};{message}\n".encode()
            pending.setdefault(f"{local:%Y%m%d}", []).append((epoch, order, jid, line))
        flush(now)  # later jobs log nothing before their submit, at or after now
    flush(None)
    return {"files": files, "lines": lines, "bytes_on_disk": size, "jobs": n_jobs}


_WRAPPER = r"""
import json, resource, subprocess, sys, threading, time
command = json.loads(sys.argv[1])
peak_tree = [0]
started = time.perf_counter()
process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
def sample():
    try:
        import psutil
    except ImportError:
        return
    root = psutil.Process(process.pid)
    while process.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
            peak_tree[0] = max(peak_tree[0], sum(p.memory_info().rss for p in tree))
        except psutil.Error:
            pass
        time.sleep(0.2)
thread = threading.Thread(target=sample, daemon=True)
thread.start()
status = process.wait()
wall = time.perf_counter() - started
thread.join(1)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"status": status, "wall_s": wall, "peak_rss_mb": usage.ru_maxrss / 1024,
                  "cpu_s": usage.ru_utime + usage.ru_stime,
                  "peak_tree_rss_mb": peak_tree[0] / 2**20 or None}))
"""


def _folder_bytes(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        with contextlib.suppress(OSError):
            total += path.stat().st_size if path.is_file() else 0
    return total


def measure(
    command: list[str], watch: Path | None = None, *, stderr: list[str] | None = None
) -> dict[str, Any]:
    """Run ``command`` under a fresh wrapper: its wall time, peak memory (and disk of ``watch``).

    The command's standard error is appended to ``stderr`` when given.
    """
    peak_disk = [0]
    stop = threading.Event()

    def sample() -> None:
        while watch is not None and not stop.wait(1.0):
            peak_disk[0] = max(peak_disk[0], _folder_bytes(watch))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        done = subprocess.run(
            [sys.executable, "-c", _WRAPPER, json.dumps(command)],
            check=True,
            capture_output=True,
            text=True,
        )
    finally:
        stop.set()
        thread.join()
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if stderr is not None:
        stderr.append(done.stderr)
    if watch is not None:  # sampled each second: the spill folder and the outputs
        result["peak_disk_mb"] = peak_disk[0] / 2**20
    if result["status"] != 0:
        msg = f"{' '.join(command)} exited with {result['status']}"
        raise RuntimeError(msg)
    return result


_CHARACTERISE = r"""
import sys
import pyarrow.parquet as pq
from gridtrace.logs import build_trace
from gridtrace.stats import characterise
# only what build_trace reads (with cores given): not hosts, names, files, memory
columns = [
    "site", "job_seq", "array_index", "attempt", "job_key", "submit_time", "queue_time",
    "start_time", "end_time", "run_s", "state", "flags", "cores_alloc", "cores_req",
    "walltime_req_s", "vo", "user", "queue", "partition",
]
jobs = pq.read_table(sys.argv[1], columns=columns)
trace = build_trace(jobs, tau_s=900.0, cores=16000, tz="Europe/Paris")
del jobs
stats = characterise(trace)
print(trace.num_rows, stats.utilisation)
"""


def scaling(gridtrace: list[str], base: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Measure the spill step at each worker count of ``--scaling`` on the same log.

    The counts are run in the order given, ``--repeat`` times over. ``speedup`` is the wall time
    of the last run with the first count over this run's (the pair measured closest in time).
    """
    runs: list[dict[str, Any]] = []
    counts = [int(w) for w in args.scaling.split(",")] * args.repeat
    for workers in counts:
        out = base / f"spill-{workers}"
        shutil.rmtree(out, ignore_errors=True)
        command = [*gridtrace, "-o", str(out), "--spill", "--workers", str(workers)]
        if args.partitions:
            command += ["--partitions", str(args.partitions)]
        command[command.index("-q")] = "-v"  # the steps' times are logged (debug)
        log: list[str] = []
        run = {"workers": workers, "load_avg_1min": os.getloadavg()[0]}
        run |= measure(command, stderr=log)
        run["steps"] = steps(log[0])
        lines = json.loads((out / "parse-summary.json").read_text())["lines_read"]
        run["lines_read"] = lines
        run["lines_per_s"] = lines / run["wall_s"]
        run["lines_per_cpu_s"] = lines / run["cpu_s"] if run["cpu_s"] else None
        before = [r for r in runs if r["workers"] == counts[0]]
        run["speedup"] = before[-1]["wall_s"] / run["wall_s"] if before else 1.0
        runs.append(run)
        print("scaling", json.dumps(run), flush=True)
    return runs


_STEP = re.compile(
    r"step (\w+): (\d+) tasks, ([\d.]+) s wall, ([\d.]+) CPU s in tasks "
    r"\((\d+), ([\d.]+) CPU s in this process\)"
)


def steps(log: str) -> dict[str, dict[str, float]]:
    """The steps of ``spill_parse`` its debug log times: wall and CPU s, and what ran where.

    ``cpu_s`` is the CPU time of the step's tasks in every process, ``driver_cpu_s`` in the
    process that runs ``spill_parse`` (one of the workers), ``driver_tasks`` how many it ran.
    Empty for a version of gridtrace that does not log them.
    """
    found: dict[str, dict[str, float]] = {}
    for match in _STEP.finditer(log):
        name, tasks, wall, cpu, here, here_cpu = match.groups()
        found[name] = {
            "tasks": int(tasks),
            "wall_s": float(wall),
            "cpu_s": float(cpu),
            "driver_tasks": int(here),
            "driver_cpu_s": float(here_cpu),
        }
    return found


def scaling_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians and ranges per worker count, and of each count's speedup over the first."""

    def spread(values: list[float]) -> dict[str, float]:
        return {"median": float(np.median(values)), "min": min(values), "max": max(values)}

    first = runs[0]["workers"]
    summary: dict[str, Any] = {}
    for workers in dict.fromkeys(r["workers"] for r in runs):
        mine = [r for r in runs if r["workers"] == workers]
        one: dict[str, Any] = {"runs": len(mine)}
        for key in ("wall_s", "cpu_s", "peak_rss_mb", "peak_tree_rss_mb", "load_avg_1min"):
            values = [r[key] for r in mine if r.get(key) is not None]
            if values:
                one[key] = spread(values)
        if workers != first:
            one["speedup"] = spread([r["speedup"] for r in mine])
            walls = sum(r["wall_s"] for r in runs if r["workers"] == first)
            one["speedup_of_the_sums"] = (
                walls
                / sum(r["wall_s"] for r in mine)
                * (len(mine) / len([r for r in runs if r["workers"] == first]))
            )
        summary[str(workers)] = one
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=17_000_000)
    parser.add_argument("--days", type=int, default=0, help="default: 15,500 jobs a day")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--plain", action="store_true", help="plain text files, not gzip")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--partitions", type=int, help="default: from the input size")
    parser.add_argument("--memory-jobs", type=int, default=2_000_000)
    parser.add_argument("--out-dir", type=Path, help="default: a temporary folder")
    parser.add_argument("--results", type=Path, help="also write the results as JSON here")
    parser.add_argument(
        "--reuse", action="store_true", help="measure the log already in OUT_DIR/log"
    )
    parser.add_argument(
        "--scaling",
        help="comma-separated worker counts: measure only the spill step at each (e.g. 1,2)",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="with --scaling: run the worker counts this often"
    )
    args = parser.parse_args()
    days = args.days or max(1, round(args.jobs / 15_500))
    base = args.out_dir or Path(tempfile.mkdtemp(prefix="egee-"))
    log = base / "log"
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "jobs": args.jobs,
        "days": days,
    }
    started = time.perf_counter()
    if args.reuse and log.is_dir() and any(log.iterdir()):
        results["generate"] = {"reused": str(log), "files": len(list(log.iterdir()))}
    else:
        results["generate"] = generate(
            log, args.jobs, days=days, seed=args.seed, compress=not args.plain
        )
        results["generate"]["wall_s"] = time.perf_counter() - started
    print(json.dumps(results["generate"]), flush=True)
    gridtrace = [sys.executable, "-m", "gridtrace", "-q", "parse", str(log), "--no-progress"]
    if args.scaling:
        results["scaling"] = scaling(gridtrace, base, args)
        results["scaling_summary"] = scaling_summary(results["scaling"])
        text = json.dumps(results, indent=2)
        print(text)
        if args.results:
            args.results.write_text(text + "\n")
        return
    spill = [*gridtrace, "-o", str(base / "spill"), "--spill", "--workers", str(args.workers)]
    if args.partitions:
        spill += ["--partitions", str(args.partitions)]
    shutil.rmtree(base / "spill", ignore_errors=True)  # so its peak disk is this run's alone
    results["spill"] = measure(spill, watch=base / "spill")
    print("spill", json.dumps(results["spill"]), flush=True)
    if args.jobs <= args.memory_jobs:
        memory = [*gridtrace, "-o", str(base / "memory"), "--no-spill"]
        results["memory"] = measure(memory)
        print("memory", json.dumps(results["memory"]), flush=True)
        import pyarrow.parquet as pq

        for name in ("jobs", "quarantine"):
            same = pq.read_table(base / "spill" / f"{name}.parquet").equals(
                pq.read_table(base / "memory" / f"{name}.parquet")
            )
            results[f"{name}_tables_equal"] = same
        for key in ("wall_s", "peak_rss_mb"):
            results[f"spill_over_memory_{key}"] = results["spill"][key] / results["memory"][key]
    jobs_table = str(base / "spill" / "jobs.parquet")
    results["characterise"] = measure([sys.executable, "-c", _CHARACTERISE, jobs_table])
    print("characterise", json.dumps(results["characterise"]), flush=True)
    summary = json.loads((base / "spill" / "parse-summary.json").read_text())
    results["lines_read"] = summary["lines_read"]
    results["job_rows"] = summary["jobs"]
    text = json.dumps(results, indent=2)
    print(text)
    if args.results:
        args.results.write_text(text + "\n")


if __name__ == "__main__":
    main()
