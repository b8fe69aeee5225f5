"""Benchmark an EGEE-scale TORQUE log: generate, parse + assemble (out of core and in memory),
characterise; wall time and peak memory of each step.

The log is written as a grid site writes it: one accounting file per local day, named
``YYYYMMDD`` (gzip level 1 by default, ``YYYYMMDD.gz``), with the demo site's workload (its VO
profiles, run-time and core draws of :mod:`gridtrace.demo`) and its TORQUE writer, column by
column (:func:`gridtrace.logs._torque_writer.torque_lines`, the Q, S and E records a TORQUE server
writes for each job, byte-identical to the per-job writer). Each generation day (a UTC day from
the origin) draws its jobs from its own seed, spawned from ``--seed`` with
``SeedSequence.spawn``: a day's count is fixed (``--jobs`` spread evenly), its submit times are
uniform in the day (a Poisson process given its count). ``--workers`` processes generate
contiguous day ranges; each streams its days to disk, writing a local day's file once no later
job of its range can log in it (every record of a job comes at or after its submit, and within
three days of it), and hands the few days that neighbouring ranges share to the parent, which
merges them. So the files are the same, byte for byte, whatever the number of processes, and
memory is a few days of records per process. The demo site's FIFO simulator is left out (it
holds every job); a job waits an exponential time (mean 10 min) and runs on a random node of 8
cores. ``--compare-generators`` times the former generator (Python rows and the per-job writer,
:func:`generate_per_job`) against this one on the same job count, in the same run.

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
  each step's wall and CPU time as ``spill_parse`` logs them (run with ``-v``), and
  ``outside_steps_s`` the wall time no step covers (start-up, listing the files, the facts
  between the steps); ``--baseline TREE`` runs each count with this gridtrace and with the one
  in TREE, one right after the other (who goes first alternates from one ``--repeat`` round to
  the next), each with its own summary;
* ``characterise``: the jobs table of the spill step to a trace read batch by batch
  (:func:`gridtrace.stats.characterise_parquet`: only the trace's values are held, a peak
  of about 260-370 bytes a job with the characterisation at 2 M jobs, against about 800 for
  the former path) and :func:`gridtrace.stats.characterise`; ``characterise_whole`` (up to
  ``--characterise-whole-jobs``) is the former path, the jobs columns a trace needs read whole
  and :func:`gridtrace.logs.build_trace`, and ``characterise_figures_equal`` says whether the
  two gave the same figures.

Usage::

    .venv/bin/python benchmarks/egee_scale.py --jobs 1000000 --workers 2 --out-dir DIR
    .venv/bin/python benchmarks/egee_scale.py --jobs 1000000 --out-dir DIR --reuse  # same log
    .venv/bin/python benchmarks/egee_scale.py  # 17 million jobs (~50 M lines, ~2 GB gzip)
    .venv/bin/python benchmarks/egee_scale.py --jobs 200000 --scaling 1,2 --out-dir DIR
    .venv/bin/python benchmarks/egee_scale.py --jobs 200000 --compare-generators --out-dir DIR
    .venv/bin/python benchmarks/egee_scale.py --jobs 200000 --scaling 1,2 --repeat 3 --reuse \\
        --partitions 8 --out-dir DIR
    .venv/bin/python benchmarks/egee_scale.py --jobs 1000000 --scaling 1,2 --repeat 3 --reuse \\
        --baseline ../gridtrace-main --out-dir DIR  # this tree and another, run by run
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import gzip
import itertools
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from gridtrace._atomic import atomic_path
from gridtrace.demo import DEMO_VOS, _job_row, _runtimes_and_cores
from gridtrace.logs._torque_writer import day_texts, torque_lines, torque_records
from gridtrace.random import spawn_generators
from gridtrace.schema import conform

TZ = "Europe/Paris"
ORIGIN = dt.datetime(2024, 3, 25, tzinfo=dt.UTC)  # the demo site's origin
NODES = 2000  # 16,000 cores: a large EGEE site
CORES_PER_NODE = 8
MAX_SPAN_S = 3 * 86400  # a job's records lie within its submit + wait + 48 h walltime
CHUNK_JOBS = 50_000


def _day_counts(n_jobs: int, days: int) -> tuple[np.ndarray, np.ndarray]:
    """Jobs submitted on each generation day (UTC days from ORIGIN) and the first job's index."""
    base, extra = divmod(n_jobs, days)
    counts = np.full(days, base, dtype=np.int64)
    counts[:extra] += 1
    return counts, np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)


def _text(values: np.ndarray) -> pa.Array:
    return pa.array(values).cast(pa.string())


def day_jobs(day: int, first: int, count: int, seed: np.random.SeedSequence) -> pa.Table:
    """The ``jobs`` rows of the jobs submitted on generation day ``day``, built column-wise.

    Job ``first + i`` (id ``1000 + first + i``) is submitted at a uniform time of the day (a
    Poisson process given its count); the fields are those of the demo site's rows
    (:func:`gridtrace.demo._job_row`): its VOs, run-time and core draws, an exponential wait
    (mean 10 min), a walltime kill for 1 % and a failure for 4 %, one random node of 8 cores.
    """
    rng = np.random.default_rng(seed)
    submit = day * 86400 + np.sort(rng.uniform(0.0, 86400.0, size=count)).round()
    shares = np.array([vo.share for vo in DEMO_VOS])
    vo_index = rng.choice(len(DEMO_VOS), size=count, p=shares / shares.sum())
    run_s, cores = _runtimes_and_cores(vo_index, rng)
    wait = rng.exponential(600.0, size=count).round()
    fate = rng.choice(3, size=count, p=[0.95, 0.04, 0.01])
    run_s = np.where(fate == 2, 48 * 3600, run_s).round()
    nodes = rng.integers(1, NODES + 1, size=count)
    user = rng.integers(1, 13, size=count)
    ids = 1000 + first + np.arange(count, dtype=np.int64)
    origin = int(ORIGIN.timestamp())
    submitted = (origin + submit).astype(np.int64)
    started = submitted + wait.astype(np.int64)
    ended = started + run_s.astype(np.int64)
    code = np.where(fate == 2, 271, np.where(fate == 1, 1, 0)).astype(np.int32)
    state = np.array(["COMPLETED", "FAILED", "TIMEOUT"])[fate]
    vo_pick = pa.array(vo_index)
    group = pa.array([vo.group for vo in DEMO_VOS]).take(vo_pick)
    queue = pa.array([vo.queue for vo in DEMO_VOS]).take(vo_pick)
    prefix = pa.array([vo.user_prefix for vo in DEMO_VOS]).take(vo_pick)
    number = pc.utf8_lpad(_text(user), 3, "0")
    hosts = pc.binary_join_element_wise("wn", pc.utf8_lpad(_text(nodes), 4, "0"), "")
    id_text = _text(ids)
    single = cores == 1
    seconds = pa.timestamp("s", tz="UTC")
    when = {
        name: pa.array(values, pa.int64()).cast(seconds)
        for name, values in (("submit", submitted), ("start", started), ("end", ended))
    }
    table = pa.table(
        {
            "site": pa.array(["demo"] * count),
            "source_format": pa.array(["torque"] * count),
            "job_key": pc.binary_join_element_wise("demo:", id_text, ""),
            "job_id_raw": pc.binary_join_element_wise(id_text, ".demo-ce", ""),
            "attempt": pa.array(np.zeros(count, dtype=np.int16)),
            "n_attempts": pa.array(np.ones(count, dtype=np.int16)),
            "user": pc.binary_join_element_wise(prefix, number, ""),
            "group": group,
            "queue": queue,
            "job_name": pc.binary_join_element_wise(queue, id_text, "_"),
            "submit_time": when["submit"],
            "queue_time": when["submit"],
            "eligible_time": when["submit"],
            "start_time": when["start"],
            "end_time": when["end"],
            "walltime_req_s": pa.array(np.full(count, 48 * 3600, dtype=np.int64)),
            "walltime_used_s": pa.array(run_s.astype(np.int64)),
            "cpu_time_s": pa.array(np.round(run_s * cores * 0.9)),
            "nodes_req": pa.array(np.ones(count, dtype=np.int32), mask=~single),
            "cores_req": pa.array(cores.astype(np.int32)),
            "nodes_alloc": pa.array(np.ones(count, dtype=np.int32)),
            "cores_alloc": pa.array(cores.astype(np.int32)),
            "exec_hosts": pa.ListArray.from_arrays(
                pa.array(np.arange(count + 1, dtype=np.int32)), hosts
            ),
            "mem_req_bytes": pa.array(2 * 1024**3 * cores.astype(np.int64)),
            "mem_used_bytes": pa.array(512 * 1024**2 * cores.astype(np.int64)),
            "exit_code": pa.array(code),
            "state": pa.array(state),
            "end_record_type": pa.array(["E"] * count),
            "src_file": pa.array(["demo"] * count),
            "src_line": pa.array(np.zeros(count, dtype=np.int64)),
        }
    )
    if count and int((ended - submitted).max()) >= MAX_SPAN_S:
        msg = f"a job of day {day} spans {MAX_SPAN_S} s or more: the day files' split assumes less"
        raise RuntimeError(msg)
    return conform(table, "jobs")


def _local_day(seconds_from_origin: float) -> str:
    moment = ORIGIN + dt.timedelta(seconds=seconds_from_origin)
    return moment.astimezone(ZoneInfo(TZ)).strftime("%Y%m%d")


def _write_day(path: Path, data: bytes, *, compress: bool) -> int:
    """Write one day's file atomically (gzip level 1, no name or time in its header)."""
    with atomic_path(path) as temporary, temporary.open("wb") as raw:
        if compress:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=1, mtime=0) as z:
                z.write(data)
        else:
            raw.write(data)
    return path.stat().st_size


def _generate_days(
    out: Path, first_day: int, last_day: int, *, n_jobs: int, days: int, seed: int, compress: bool
) -> dict[str, Any]:
    """Generate days [first_day, last_day) and write the daily files that they alone fill.

    A local day that jobs of other day ranges may also log in (the first days of the range,
    which earlier jobs still reach, and the days from the range's end on) is not written: its
    records go to ``out/boundary-<first_day>.parquet`` for :func:`generate` to merge.
    """
    counts, firsts = _day_counts(n_jobs, days)
    seeds = np.random.SeedSequence(seed).spawn(days)
    # earlier ranges log up to MAX_SPAN_S past their end; later ranges from their start on
    after = _local_day(first_day * 86400.0 + MAX_SPAN_S) if first_day > 0 else ""
    before = _local_day(last_day * 86400.0) if last_day < days else "99999999"
    pending: list[pa.Table] = []
    boundary: list[pa.Table] = []
    written = {"files": 0, "lines": 0, "bytes_on_disk": 0}
    for day in range(first_day, last_day):
        jobs = day_jobs(day, int(firsts[day]), int(counts[day]), seeds[day])
        lines = torque_lines(jobs, tz=TZ)
        rows = pc.add(lines.column("row"), pa.scalar(int(firsts[day]), pa.int64()))
        pending.append(lines.set_column(3, "row", rows))
        # jobs of later days log nothing before their submit
        done_before = _local_day((day + 1) * 86400.0) if day + 1 < last_day else "99999999"
        table = pa.concat_tables(pending)
        is_done = pc.less(table.column("day"), pa.scalar(done_before))
        finished, pending = table.filter(is_done), [table.filter(pc.invert(is_done))]
        inside = pc.and_(
            pc.greater(finished.column("day"), pa.scalar(after)),
            pc.less(finished.column("day"), pa.scalar(before)),
        )
        boundary.append(finished.filter(pc.invert(inside)))
        for name, data in day_texts(finished.filter(inside)).items():
            path = out / (f"{name}.gz" if compress else name)
            written["bytes_on_disk"] += _write_day(path, data, compress=compress)
            written["files"] += 1
            written["lines"] += data.count(b"\n")
    boundary.extend(pending)
    pq.write_table(pa.concat_tables(boundary), out / f"boundary-{first_day:06d}.parquet")
    return written


def generate(
    out: Path, n_jobs: int, *, days: int, seed: int, compress: bool, workers: int = 1
) -> dict[str, Any]:
    """Write the log's daily files into ``out``, streaming, in ``workers`` processes.

    Each process generates a contiguous range of days (each day from its own seed, spawned
    from ``seed``), so the files are the same, byte for byte, whatever ``workers``.
    """
    out.mkdir(parents=True, exist_ok=True)
    cuts = np.linspace(0, days, min(workers, days) + 1).round().astype(int).tolist()
    ranges = [(a, b) for a, b in itertools.pairwise(cuts) if b > a]
    options = {"n_jobs": n_jobs, "days": days, "seed": seed, "compress": compress}
    if len(ranges) == 1:
        parts = [_generate_days(out, *ranges[0], **options)]
    else:
        with ProcessPoolExecutor(len(ranges), mp_context=get_context("fork")) as pool:
            futures = [pool.submit(_generate_days, out, a, b, **options) for a, b in ranges]
            parts = [future.result() for future in futures]
    written = {key: sum(part[key] for part in parts) for key in parts[0]}
    sides = sorted(out.glob("boundary-*.parquet"))
    for name, data in day_texts(pa.concat_tables([pq.read_table(p) for p in sides])).items():
        path = out / (f"{name}.gz" if compress else name)
        written["bytes_on_disk"] += _write_day(path, data, compress=compress)
        written["files"] += 1
        written["lines"] += data.count(b"\n")
    for path in sides:
        path.unlink()
    return {**written, "jobs": n_jobs, "workers": len(ranges)}


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


def generate_per_job(
    out: Path, n_jobs: int, *, days: int, seed: int, compress: bool
) -> dict[str, Any]:
    """The former generator (the baseline): Python rows, the per-job writer, one process."""
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
    command: list[str],
    watch: Path | None = None,
    *,
    stderr: list[str] | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> dict[str, Any]:
    """Run ``command`` under a fresh wrapper: its wall time, peak memory (and disk of ``watch``).

    The command's standard error is appended to ``stderr`` when given; ``env`` replaces the
    environment and ``cwd`` the working folder.
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
            env=env,
            cwd=cwd,
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
import json, sys
import pyarrow.parquet as pq
from gridtrace.logs import build_trace
from gridtrace.stats import JOBS_COLUMNS_OF_TRACE, characterise, characterise_parquet
path, how, out = sys.argv[1:4]
if how == "batches":  # the jobs file read batch by batch: only the trace is held
    stats = characterise_parquet(path, cores=16000, tz="Europe/Paris")
else:  # the former path: the jobs columns a trace needs, whole, then build_trace
    jobs = pq.read_table(path, columns=list(JOBS_COLUMNS_OF_TRACE))
    trace = build_trace(jobs, tau_s=900.0, cores=16000, tz="Europe/Paris")
    del jobs
    stats = characterise(trace)
with open(out, "w") as handle:
    json.dump(stats.to_dict(), handle, sort_keys=True)
print(stats.jobs, stats.utilisation)
"""


def scaling(gridtrace: list[str], base: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Measure the spill step at each worker count of ``--scaling`` on the same log.

    The counts are run in the order given, ``--repeat`` times over. ``speedup`` is the wall time
    of the last run with the first count over this run's (the pair measured closest in time).
    With ``--baseline TREE``, each run is made twice in a row, with this gridtrace then with the
    one in ``TREE`` (``tree`` says which: ``"this"`` or ``"baseline"``); each tree's speedups are
    its own.
    """
    runs: list[dict[str, Any]] = []
    counts = [int(w) for w in args.scaling.split(",")] * args.repeat
    # ``python -m`` puts the working folder first on the path: each tree is run from its root
    this = Path(__file__).resolve().parents[1]
    trees = [("this", this)]
    if args.baseline:
        trees.append(("baseline", args.baseline.resolve()))
    per_round = len(counts) // args.repeat
    for k, workers in enumerate(counts):
        first = (k // per_round) % 2 == 0  # who goes first alternates from round to round
        for tree, root in trees if first else trees[::-1]:
            env = {**os.environ, "PYTHONPATH": str(root)}
            out = base / f"spill-{workers}"
            shutil.rmtree(out, ignore_errors=True)
            command = [*gridtrace, "-o", str(out), "--spill", "--workers", str(workers)]
            if args.partitions:
                command += ["--partitions", str(args.partitions)]
            command[command.index("-q")] = "-v"  # the steps' times are logged (debug)
            log: list[str] = []
            run = {"workers": workers, "tree": tree, "load_avg_1min": os.getloadavg()[0]}
            run |= measure(command, stderr=log, env=env, cwd=root)
            run["gridtrace"] = str(root)
            run["steps"] = steps(log[0])
            # what no step times: start-up, listing the files, the facts between the steps
            run["outside_steps_s"] = run["wall_s"] - sum(s["wall_s"] for s in run["steps"].values())
            lines = json.loads((out / "parse-summary.json").read_text())["lines_read"]
            run["lines_read"] = lines
            run["lines_per_s"] = lines / run["wall_s"]
            run["lines_per_cpu_s"] = lines / run["cpu_s"] if run["cpu_s"] else None
            before = [r for r in runs if r["workers"] == counts[0] and r["tree"] == tree]
            run["speedup"] = before[-1]["wall_s"] / run["wall_s"] if before else 1.0
            runs.append(run)
            print("scaling", json.dumps(run), flush=True)
    return runs


def _cpu_s() -> float:
    """CPU seconds (user + system) of this process and of its reaped children so far."""
    mine = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime


def compare_generators(base: Path, args: argparse.Namespace, days: int) -> list[dict[str, Any]]:
    """Time the former generator and the columnar one on the same job count, in this run."""
    runs: list[dict[str, Any]] = []
    options = {"days": days, "seed": args.seed, "compress": not args.plain}
    plans: list[tuple[str, Any]] = [("per-job", generate_per_job)]
    for workers in sorted({1, args.workers}):
        plans.append((f"columnar-{workers}", functools.partial(generate, workers=workers)))
    for name, function in plans:
        out = base / f"generate-{name}"
        shutil.rmtree(out, ignore_errors=True)
        cpu_before = _cpu_s()
        started = time.perf_counter()
        written = function(out, args.jobs, **options)
        wall = time.perf_counter() - started
        cpu = _cpu_s() - cpu_before
        run = {"generator": name, "wall_s": wall, "jobs_per_s": args.jobs / wall, **written}
        run["cpu_s"] = cpu  # this process and its reaped workers: what load distorts less
        run["jobs_per_cpu_s"] = args.jobs / cpu
        run["speedup_over_per_job"] = runs[0]["wall_s"] / wall if runs else 1.0
        run["cpu_ratio_per_job_over_this"] = runs[0]["cpu_s"] / cpu if runs else 1.0
        runs.append(run)
        print("generator", json.dumps(run), flush=True)
    return runs


_STEP = re.compile(
    r"step (\w+): (\d+) tasks, ([\d.]+) s wall, ([\d.]+) CPU s in tasks "
    r"\((\d+), ([\d.]+) CPU s in this process\)"
)
_OUTPUTS = re.compile(r"step write_outputs: ([\d.]+) s wall, ([\d.]+) CPU s")


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
    for match in _OUTPUTS.finditer(log):  # this process alone, after the tasks
        found["write_outputs"] = {"wall_s": float(match[1]), "cpu_s": float(match[2])}
    return found


def scaling_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians and ranges per worker count, and of each count's speedup over the first.

    With runs of two trees (``--baseline``), one summary per tree.
    """
    trees = list(dict.fromkeys(r.get("tree", "this") for r in runs))
    if len(trees) > 1:
        return {tree: scaling_summary([r for r in runs if r["tree"] == tree]) for tree in trees}

    def spread(values: list[float]) -> dict[str, float]:
        return {"median": float(np.median(values)), "min": min(values), "max": max(values)}

    first = runs[0]["workers"]
    summary: dict[str, Any] = {}
    for workers in dict.fromkeys(r["workers"] for r in runs):
        mine = [r for r in runs if r["workers"] == workers]
        one: dict[str, Any] = {"runs": len(mine)}
        keys = ("wall_s", "cpu_s", "peak_rss_mb", "peak_tree_rss_mb", "load_avg_1min")
        for key in (*keys, "outside_steps_s"):
            values = [r[key] for r in mine if r.get(key) is not None]
            if values:
                one[key] = spread(values)
        for step in dict.fromkeys(k for r in mine for k in r.get("steps", {})):
            for key in ("wall_s", "cpu_s"):
                values = [r["steps"][step][key] for r in mine if step in r.get("steps", {})]
                one[f"{step}_{key}"] = spread(values)
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
    parser.add_argument(
        "--characterise-whole-jobs",
        type=int,
        default=2_000_000,
        help="also characterise by the former path (the jobs columns read whole, about 1 GB a"
        " million jobs) up to this many jobs, and check that the figures are the same",
    )
    parser.add_argument("--out-dir", type=Path, help="default: a temporary folder")
    parser.add_argument("--results", type=Path, help="also write the results as JSON here")
    parser.add_argument(
        "--reuse", action="store_true", help="measure the log already in OUT_DIR/log"
    )
    parser.add_argument(
        "--compare-generators",
        action="store_true",
        help="only generate --jobs jobs with the former per-job generator and with the columnar"
        " one (1 and --workers processes), one after the other, and report jobs/s",
    )
    parser.add_argument(
        "--scaling",
        help="comma-separated worker counts: measure only the spill step at each (e.g. 1,2)",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="with --scaling: run the worker counts this often"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="with --scaling: a gridtrace source tree (e.g. a worktree of main) run right after"
        " each run of this one, on the same log, for ratios measured under the same load",
    )
    args = parser.parse_args()
    days = args.days or max(1, round(args.jobs / 15_500))
    base = (args.out_dir or Path(tempfile.mkdtemp(prefix="egee-"))).resolve()
    log = base / "log"
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "jobs": args.jobs,
        "days": days,
    }
    if args.compare_generators:
        results["generators"] = compare_generators(base, args, days)
        text = json.dumps(results, indent=2)
        print(text)
        if args.results:
            args.results.write_text(text + "\n")
        return
    started = time.perf_counter()
    if args.reuse and log.is_dir() and any(log.iterdir()):
        results["generate"] = {"reused": str(log), "files": len(list(log.iterdir()))}
    else:
        results["generate"] = generate(
            log, args.jobs, days=days, seed=args.seed, compress=not args.plain, workers=args.workers
        )
        results["generate"]["wall_s"] = time.perf_counter() - started
        results["generate"]["jobs_per_s"] = args.jobs / results["generate"]["wall_s"]
        # this process (the merge of shared days) and its largest worker, each its own peak
        for who, key in ((resource.RUSAGE_SELF, "self"), (resource.RUSAGE_CHILDREN, "workers")):
            results["generate"][f"peak_rss_mb_{key}"] = resource.getrusage(who).ru_maxrss / 1024
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
    figures = {how: base / f"characterise-{how}.json" for how in ("batches", "whole")}
    command = [sys.executable, "-c", _CHARACTERISE, jobs_table, "batches", str(figures["batches"])]
    results["characterise"] = measure(command)
    print("characterise", json.dumps(results["characterise"]), flush=True)
    if args.jobs <= args.characterise_whole_jobs:
        command[-2:] = ["whole", str(figures["whole"])]
        results["characterise_whole"] = measure(command)
        print("characterise_whole", json.dumps(results["characterise_whole"]), flush=True)
        same = json.loads(figures["batches"].read_text()) == json.loads(
            figures["whole"].read_text()
        )
        results["characterise_figures_equal"] = same
    summary = json.loads((base / "spill" / "parse-summary.json").read_text())
    results["lines_read"] = summary["lines_read"]
    results["job_rows"] = summary["jobs"]
    text = json.dumps(results, indent=2)
    print(text)
    if args.results:
        args.results.write_text(text + "\n")


if __name__ == "__main__":
    main()
