"""Benchmark the TORQUE/PBS reader on a realistic synthetic log.

Generates a log of daily files (record mix of a real TORQUE month: ~36 % Q, ~42 % S, ~19 % E,
~3 % D, a few A and R; start and end records of 300-500 bytes with 25-40 key=value tokens,
multi-host ``exec_host`` ranges and lists, durations in seconds and in HH:MM:SS, and a few quoted
and broken lines), then measures, as medians over ``--repeat`` runs:

* tokenisation alone, reference vs fast, on the same files in the same run (one core);
* the full normalised parse, ``gridtrace.logs.read_torque`` (one core), and its peak memory;
* ``gridtrace.logs.parse_logs(..., workers=N)`` for N = 1 and 2 (dask threads, the default, and
  dask processes), and the speed-up.

Each measurement runs in its own child process, pinned to one core where the measure is "one
core", so that peak memory (``ru_maxrss``) belongs to that measurement alone. Functions not yet in
the package are reported as missing, and the rest is still measured.

Usage::

    .venv/bin/python benchmarks/parse_torque.py [--lines 1000000] [--repeat 3] [--out-dir DIR]

``--reuse`` reads the log an earlier run left in ``--out-dir`` instead of generating it again.

With ``--baseline CHECKOUT`` (e.g. ``git worktree add --detach ../base main``) it measures instead
tokenisation and job assembly apart, in process after a warm-up run, for this checkout and the
baseline, alternating over ``--rounds`` rounds (every other round in reverse order), each in a
child process pinned to one core: wall and CPU seconds, user and system CPU apart and the page
faults (``getrusage``) of each step.

``--keep-freed-memory yes`` (or ``both``, to measure each checkout both ways in the same run)
starts the children with allocator settings that keep freed memory in the process instead of
returning it to the OS, so that the next large array reuses pages already mapped rather than
faulting in fresh zeroed ones: :data:`KEEP_FREED_MEMORY` (Arrow's mimalloc pool does not purge;
glibc malloc neither trims the heap nor maps large blocks apart). They are process-wide settings,
read at start-up from the environment; gridtrace itself never sets them. They trade memory held
between calls for system time: a user who reads large logs in a long-lived process can set the
same variables before starting Python.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

try:
    from _machine import machine
except ImportError:  # run from another folder
    from benchmarks._machine import machine

SITE = "synth"
TZ_OFFSET_S = 7200  # the site's clocks run at UTC+2 (stamps are local, epochs UTC)
T0 = 1_709_251_200  # 2024-03-01 00:00:00 UTC
SERVER = "pbs01.hpc"
USERS = [f"vsc{30000 + i}" for i in range(400)]
QUEUES = ["q1h", "q24h", "q72h", "q7d", "debug"]
ROUTING_QUEUE = "qdef"
PPN = np.array([1, 4, 8, 16, 20, 28, 36])
KEEP_FREED_MEMORY = {
    "MIMALLOC_PURGE_DELAY": "-1",  # Arrow's default pool (mimalloc): never purge freed pages
    "MALLOC_TRIM_THRESHOLD_": str(16 << 30),  # glibc: do not give the heap's top back to the OS
    "MALLOC_MMAP_THRESHOLD_": str(1 << 30),  # glibc: blocks below 1 GiB from the heap, not mmap
}
"""The environment of ``--keep-freed-memory``: freed memory stays mapped for the next call."""
WORKER_RUNS = (
    ("workers1", "workers=1"),
    ("workers2", "workers=2 (threads)"),
    ("workers2processes", "workers=2, processes=True"),
)


# --- the synthetic log ---------------------------------------------------------------------------


def _stamp(epoch: int) -> str:
    return time.strftime("%m/%d/%Y %H:%M:%S", time.gmtime(epoch + TZ_OFFSET_S))


def _hms(seconds: int) -> str:
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _exec_host(rng: np.random.Generator, nodes: int, ppn: int) -> str:
    """One of TORQUE's exec_host forms: ranges per node (>= 5), per-core lists (<= 4), mixed."""
    hosts = [
        f"r{rng.integers(1, 6)}i{rng.integers(0, 4)}n{rng.integers(0, 40)}" for _ in range(nodes)
    ]
    form = rng.random()
    if form < 0.7:
        return "+".join(f"{h}/0-{ppn - 1}" if ppn > 1 else f"{h}/0" for h in hosts)
    if form < 0.9 and nodes * ppn <= 16:
        return "+".join(f"{h}/{core}" for h in hosts for core in range(ppn - 1, -1, -1))
    return "+".join(f"{h}/0-1,5,11" for h in hosts)


def _job_lines(rng: np.random.Generator, seq: int, qtime: int) -> list[tuple[int, str]]:
    """The records of one job, as (UTC epoch, line) pairs."""
    job = f"{seq}.{SERVER}"
    user = USERS[int(rng.integers(len(USERS)))]
    queue = QUEUES[int(rng.integers(len(QUEUES)))]
    out = [
        (qtime, f"{_stamp(qtime)};Q;{job};queue={ROUTING_QUEUE if rng.random() < 0.9 else queue}")
    ]
    if out[0][1].endswith(ROUTING_QUEUE):  # routing queues log a second Q, with the real queue
        out.append((qtime, f"{_stamp(qtime)};Q;{job};queue={queue}"))
    nodes = 1 if rng.random() < 0.7 else int(rng.integers(2, 5))
    ppn = int(rng.choice(PPN))
    walltime_req = int(rng.choice([3600, 86400, 259200, 604800]))
    account = f"lp_project{int(rng.integers(60))}"
    if rng.random() < 0.002:  # a PBS Pro habit: quoted values
        account = '"my proj"'
    head = (
        f"user={user} group={user} account={account} jobname=j{seq % 9973}.sh "
        f"queue={queue} ctime={qtime} qtime={qtime} etime={qtime}"
    )
    resources = (
        f"Resource_List.mem={ppn * 4}gb Resource_List.neednodes={nodes}:ppn={ppn} "
        f"Resource_List.nodect={nodes} Resource_List.nodes={nodes}:ppn={ppn} "
        f"Resource_List.pmem=2500mb "
        f"Resource_List.vmem={ppn * 6}gb Resource_List.walltime={_hms(walltime_req)}"
    )
    if rng.random() < 0.05:  # deleted while queued: D, then an E with start=0 and no usage
        t = qtime + int(rng.integers(10, 3600))
        out.append((t, f"{_stamp(t)};D;{job};requestor={user}@ln1"))
        out.append(
            (t, f"{_stamp(t)};E;{job};{head} start=0 {resources} session=0 end={t} Exit_status=271")
        )
        return out
    start = qtime + int(rng.lognormal(5, 2))
    run = min(int(rng.lognormal(7, 1.8)) + 1, walltime_req + 60)
    end = start + run
    exec_host = _exec_host(rng, nodes, ppn)
    s_body = f"{head} start={start} owner={user}@ln1 exec_host={exec_host} {resources} "
    retries = int(rng.poisson(1.2))  # S storms: the start is retried every 30-50 s
    for k in range(retries, -1, -1):
        t = start - 40 * k
        out.append((t, f"{_stamp(t)};S;{job};{s_body}"))
    if rng.random() < 0.002:  # a rerun: R, then a new start
        out.append((start + 5, f"{_stamp(start + 5)};R;{job};"))
    if rng.random() < 0.001:
        out.append((start + 7, f"{_stamp(start + 7)};A;{job};"))
    exit_status = 0 if rng.random() < 0.85 else int(rng.choice([1, 137, 271, -1, -11]))
    if rng.random() < 0.11:  # deleted while running
        out.append((end, f"{_stamp(end)};D;{job};requestor={user}@ln1"))
        exit_status = 271
    cores = nodes * ppn
    cput = int(run * cores * rng.random())
    if rng.random() < 0.7:  # TORQUE >= 5.1 logs durations in seconds, older ones in HH:MM:SS
        used_walltime, used_cput = str(run), str(cput)
    else:
        used_walltime, used_cput = _hms(run), _hms(cput)
    e_body = (
        f"{head} start={start} owner={user}@ln1 exec_host={exec_host} {resources} "
        f"session={int(rng.integers(1000, 60000))} total_execution_slots={cores} "
        f"unique_node_count={nodes} end={end} Exit_status={exit_status} "
        f"resources_used.cput={used_cput} resources_used.energy_used=0 "
        f"resources_used.mem={int(rng.integers(1000, 9_000_000))}kb "
        f"resources_used.vmem={int(rng.integers(1000, 20_000_000))}kb "
        f"resources_used.walltime={used_walltime}"
    )
    out.append((end, f"{_stamp(end)};E;{job};{e_body}"))
    return out


def _anomalies(rng: np.random.Generator, line: str) -> str:
    """Break a line the way real logs are broken (NUL padding, Latin-1 bytes, garbage, blank)."""
    kind = int(rng.integers(4))
    if kind == 0:
        return "\x00\x00\x00" + line
    if kind == 1:
        return line.replace("jobname=", "jobname=r\udce9sultat_", 1)  # written as a bare 0xE9
    if kind == 2:
        return line[: len(line) // 3]  # a line cut short: usually quarantined
    return ""


def generate(out_dir: Path, n_lines: int, seed: int) -> list[Path]:
    """Write about ``n_lines`` lines of daily accounting files into ``out_dir``; return them."""
    rng = np.random.default_rng(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("2*"):
        old.unlink()
    records: list[tuple[int, str]] = []
    qtime = T0
    seq = 4_000_000
    while len(records) < n_lines * 1.02:  # then keep the earliest n_lines: a log ends mid-stream
        qtime += int(rng.exponential(15.0))
        seq += 1
        records.extend(_job_lines(rng, seq, qtime))
    order = np.argsort(np.array([t for t, _ in records], dtype=np.int64), kind="stable")
    lines = [records[i] for i in order[:n_lines]]
    broken = set(rng.choice(len(lines), size=max(1, n_lines // 5000), replace=False).tolist())
    by_day: dict[str, list[bytes]] = {}
    for index, (t, line) in enumerate(lines):
        if index in broken:
            line = _anomalies(rng, line)
        day = time.strftime("%Y%m%d", time.gmtime(t + TZ_OFFSET_S))
        by_day.setdefault(day, []).append(line.encode("utf-8", errors="surrogateescape"))
    paths = []
    for day, day_lines in sorted(by_day.items()):
        path = out_dir / day
        path.write_bytes(b"\n".join(day_lines) + b"\n")
        paths.append(path)
    return paths


def describe(paths: list[Path]) -> dict[str, Any]:
    """Record mix, bytes and tokens per line of start and end records, to check the realism."""
    kinds: Counter[str] = Counter()
    size: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    n_bytes = 0
    for path in paths:
        data = path.read_bytes()
        n_bytes += len(data)
        for line in data.split(b"\n"):
            parts = line.split(b";", 3)
            kind = parts[1].decode("ascii", "replace") if len(parts) > 2 else "?"
            kinds[kind] += 1
            size[kind] += len(line)
            tokens[kind] += len(parts[3].split()) if len(parts) > 3 else 0
    lines = sum(kinds.values()) - len(paths)  # each file's final empty split
    kinds["?"] -= len(paths)
    mix = {k: float(f"{100 * v / lines:.2g}") for k, v in kinds.most_common() if v}
    per_line = {k: (round(size[k] / kinds[k]), round(tokens[k] / kinds[k])) for k in "SE"}
    return {"files": len(paths), "lines": lines, "bytes": n_bytes, "mix": mix, "S/E": per_line}


# --- measurements (each in a child process) ------------------------------------------------------


def _pin_one_core() -> None:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import pyarrow as pa

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)


def _timed(function: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def _memory_mb(field: str) -> float:
    """``VmHWM`` (peak) or ``VmRSS`` (now) of this process, in MB.

    Not ``ru_maxrss``: Linux carries it over from the parent across fork and exec, so a child would
    report the generator's memory.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # pragma: no cover


def _reset_peak() -> None:
    """Start ``VmHWM`` afresh from the current RSS (Linux >= 4.0), to measure one phase's peak."""
    # not Linux, or not allowed: the peak then includes the earlier phases
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def child_tokenize(paths: list[Path], repeat: int, reference_lines: int) -> dict[str, Any]:
    """Tokenisation alone: the reference on the first files, the fast path on those and on all."""
    _pin_one_core()
    from gridtrace.logs._torque_lines import tokenize_torque_reference

    try:
        from gridtrace.logs._torque_fast import tokenize_torque
    except ImportError as exc:
        return {"error": f"fast tokeniser missing: {exc}"}
    contents = [p.read_bytes() for p in paths]
    counts = [c.count(b"\n") for c in contents]
    sample: list[bytes] = []
    sample_lines = 0
    for content, count in zip(contents, counts, strict=True):
        if sample_lines >= reference_lines:
            break
        sample.append(content)
        sample_lines += count
    start = time.perf_counter()
    tokenize_torque(contents[0][:10_000], src_file="warm-up", site=SITE)  # compile (or load) it
    first_call = time.perf_counter() - start

    def run(tokenize: Callable[..., Any], files: list[bytes]) -> int:
        return sum(tokenize(c, src_file="f", site=SITE).lines_read for c in files)

    # Peak memory of tokenising the largest file alone, as one worker does, above what it holds
    # (first, before other runs leave freed memory in the allocator's pools).
    largest = max(contents, key=len)
    rss_before = _memory_mb("VmRSS")
    _reset_peak()
    tokenize_torque(largest, src_file="largest", site=SITE)
    file_peak = _memory_mb("VmHWM") - rss_before
    reference_s, _ = _timed(lambda: run(tokenize_torque_reference, sample), repeat)
    fast_sample_s, _ = _timed(lambda: run(tokenize_torque, sample), repeat)
    fast_all_s, lines = _timed(lambda: run(tokenize_torque, contents), repeat)
    return {
        "sample_lines": sample_lines,
        "reference_s": reference_s,
        "fast_sample_s": fast_sample_s,
        "all_lines": lines,
        "fast_all_s": fast_all_s,
        "first_call_s": first_call,
        "largest_file_mb": len(largest) / 1e6,
        "file_peak_mb": file_peak,
    }


def child_read(paths: list[Path], repeat: int) -> dict[str, Any]:
    """The full normalised parse on one core, and its peak memory."""
    _pin_one_core()
    try:
        from gridtrace.logs import read_torque
    except ImportError as exc:
        return {"error": f"gridtrace.logs.read_torque missing: {exc}"}
    import warnings

    warnings.simplefilter("ignore")  # the broken lines warn, by design
    start = time.perf_counter()
    read_torque(paths[:1], site=SITE)  # warm-up: compile (or load) the kernels
    first_call = time.perf_counter() - start
    rss_warm = _memory_mb("VmRSS")
    _reset_peak()
    seconds, result = _timed(lambda: read_torque(paths, site=SITE), repeat)
    return {
        "seconds": seconds,
        "lines": result.lines_read,
        "quarantined": result.lines_quarantined,
        "jobs": result.jobs.num_rows,
        "first_call_s": first_call,
        "peak_mb": _memory_mb("VmHWM"),
        "warm_mb": rss_warm,
    }


def child_split(paths: list[Path], repeat: int) -> dict[str, Any]:
    """Tokenise and assemble, timed apart, on one core, in process after a full warm-up run.

    The warm-up reads every file once, so that the compiled kernels of both steps (loaded only
    for large inputs) are in place; wall and CPU seconds, user and system CPU and minor page
    faults of each step of each run are reported (a run's result is dropped before the next).
    """
    _pin_one_core()
    import warnings

    import pyarrow as pa

    from gridtrace.logs._torque import assemble_torque, tokenize_torque_file

    warnings.simplefilter("ignore")

    def usage() -> tuple[float, float, float, float]:
        used = resource.getrusage(resource.RUSAGE_SELF)
        return time.perf_counter(), used.ru_utime, used.ru_stime, used.ru_minflt

    def run() -> tuple[list[float], list[float], Any]:
        before = usage()
        parts = [tokenize_torque_file(p, site=SITE) for p in paths]
        middle = usage()
        result = assemble_torque(parts)
        after = usage()
        del parts
        tokenise = [b - a for a, b in zip(before, middle, strict=True)]
        assemble = [b - a for a, b in zip(middle, after, strict=True)]
        return tokenise, assemble, result

    start = time.perf_counter()
    run()
    first_call = time.perf_counter() - start
    runs = []
    lines = jobs = 0
    for _ in range(repeat):
        tokenise, assemble, result = run()
        lines, jobs = result.lines_read, result.jobs.num_rows
        del result  # not held through the next run
        runs.append((tokenise, assemble))
    out: dict[str, Any] = {"lines": lines, "jobs": jobs}
    out["first_call_s"] = first_call
    out["allocator"] = {
        "arrow_pool": pa.default_memory_pool().backend_name,
        **{key: os.environ[key] for key in KEEP_FREED_MEMORY if key in os.environ},
    }
    for step, at in (("tokenise", 0), ("assemble", 1)):
        for i, what in enumerate(("wall", "user", "sys", "minflt")):
            out[f"{step}_{what}"] = [r[at][i] for r in runs]
        out[f"{step}_cpu"] = [r[at][1] + r[at][2] for r in runs]
    out["total_wall"] = [r[0][0] + r[1][0] for r in runs]
    out["total_cpu"] = [r[0][1] + r[0][2] + r[1][1] + r[1][2] for r in runs]
    out["peak_mb"] = _memory_mb("VmHWM")
    return out


def child_workers(paths: list[Path], repeat: int, workers: int, processes: bool) -> dict[str, Any]:
    """``parse_logs`` with ``workers`` (dask start-up included, as a user sees it)."""
    try:
        from gridtrace.logs import parse_logs
    except ImportError as exc:
        return {"error": f"gridtrace.logs.parse_logs missing: {exc}"}
    import logging
    import warnings

    warnings.simplefilter("ignore")
    logging.getLogger("distributed").setLevel(logging.ERROR)
    parse_logs(paths[:1], format="torque", site=SITE, workers=1)  # warm-up, as for read_torque
    seconds, result = _timed(
        lambda: parse_logs(paths, format="torque", site=SITE, workers=workers, processes=processes),
        repeat,
    )
    return {"seconds": seconds, "lines": result.lines_read, "workers": workers}


def _run_child(
    args: argparse.Namespace,
    mode: str,
    *extra: str,
    root: Path | None = None,
    keep_freed: bool | None = None,
) -> dict[str, Any]:
    """Run one measurement in a child process (importing gridtrace from ``root`` if given).

    ``keep_freed`` (default: ``--keep-freed-memory yes``) starts it with :data:`KEEP_FREED_MEMORY`.
    """
    command = [sys.executable, __file__, "--child", mode, "--out-dir", str(args.out_dir)]
    command += ["--repeat", str(args.repeat), "--reference-lines", str(args.reference_lines)]
    command += list(extra)
    if keep_freed is None:
        keep_freed = args.keep_freed_memory == "yes"
    env = {key: value for key, value in os.environ.items() if key not in KEEP_FREED_MEMORY}
    if keep_freed:
        env.update(KEEP_FREED_MEMORY)
    if root is not None:
        env["PYTHONPATH"] = str(root)
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {done.returncode}: {last}"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# --- report --------------------------------------------------------------------------------------


def _rate(lines: int, seconds: float) -> str:
    return f"{lines / seconds:,.0f}"


def report(args: argparse.Namespace, log: dict[str, Any], results: dict[str, Any]) -> None:
    print("## TORQUE/PBS parse benchmark\n")
    print(f"Command: `{shlex.join([Path(sys.executable).name, *sys.argv])}`  ")
    for key, value in machine().items():
        print(f"{key}: {value}  ")
    mix = ", ".join(f"{kind} {share:g}" for kind, share in log["mix"].items())
    (s_bytes, s_tokens), (e_bytes, e_tokens) = log["S/E"]["S"], log["S/E"]["E"]
    print(
        f"\nLog: {log['lines']:,} lines, {log['bytes'] / 1e6:,.0f} MB, {log['files']} daily files."
        f" Record mix (%): {mix}. S lines {s_bytes} bytes and {s_tokens} tokens on average,"
        f" E lines {e_bytes} bytes and {e_tokens} tokens.\n"
    )
    print(f"Medians over {args.repeat} runs.\n")
    print("| measure | lines | seconds | lines/s | notes |")
    print("|---|---:|---:|---:|---|")
    tok = results["tokenize"]
    if "error" in tok:
        print(f"| tokenise | | | | {tok['error']} |")
    else:
        ratio = tok["reference_s"] / tok["fast_sample_s"]
        print(
            f"| tokenise, reference (1 core) | {tok['sample_lines']:,} | {tok['reference_s']:.2f} |"
            f" {_rate(tok['sample_lines'], tok['reference_s'])} | first files only |"
        )
        print(
            f"| tokenise, fast (1 core) | {tok['sample_lines']:,} | {tok['fast_sample_s']:.2f} |"
            f" {_rate(tok['sample_lines'], tok['fast_sample_s'])} | same files: **{ratio:.1f}x** |"
        )
        print(
            f"| tokenise, fast (1 core) | {tok['all_lines']:,} | {tok['fast_all_s']:.2f} |"
            f" {_rate(tok['all_lines'], tok['fast_all_s'])} | all files; first call"
            f" {tok['first_call_s']:.1f} s (kernel compile or cache load); largest file"
            f" ({tok['largest_file_mb']:.0f} MB) peaks at +{tok['file_peak_mb']:.0f} MB RSS |"
        )
    full = results["read"]
    if "error" in full:
        print(f"| read_torque (1 core) | | | | not measured: {full['error']} |")
    else:
        print(
            f"| read_torque, full parse (1 core) | {full['lines']:,} | {full['seconds']:.2f} |"
            f" {_rate(full['lines'], full['seconds'])} | {full['jobs']:,} jobs,"
            f" {full['quarantined']} quarantined; peak RSS {full['peak_mb']:,.0f} MB"
            f" ({full['warm_mb']:,.0f} MB before) |"
        )
    for key, label in WORKER_RUNS:
        run = results[key]
        if "error" in run:
            print(f"| parse_logs, {label} | | | | not measured: {run['error']} |")
            continue
        note = "in process, no dask" if key == "workers1" else "dask start-up included"
        if key != "workers1" and "error" not in results["workers1"]:
            note += f"; speed-up **{results['workers1']['seconds'] / run['seconds']:.2f}x**"
        print(
            f"| parse_logs, {label} | {run['lines']:,} | {run['seconds']:.2f} |"
            f" {_rate(run['lines'], run['seconds'])} | {note} |"
        )


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def compare_split(args: argparse.Namespace, log: dict[str, Any]) -> None:
    """Tokenise vs assembly of this checkout and of ``--baseline``, alternating, one core."""
    here = Path(__file__).resolve().parent.parent
    modes = {"no": [False], "yes": [True], "both": [False, True]}[args.keep_freed_memory]
    checkouts = [
        (label + (", freed memory kept" if keep else ""), root, keep)
        for keep in modes
        for label, root in (("baseline", args.baseline.resolve()), ("this checkout", here))
    ]
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in checkouts}
    for round_ in range(args.rounds):
        # every other round in the reverse order (ABBA): a drift in the machine's load over a
        # round does not always fall on the same checkout
        for label, root, keep in checkouts if round_ % 2 == 0 else checkouts[::-1]:
            runs[label].append(_run_child(args, "split", root=root, keep_freed=keep))
    print("## TORQUE/PBS: tokenise vs assembly, this checkout against a baseline\n")
    print(f"Command: `{shlex.join([Path(sys.executable).name, *sys.argv])}`  ")
    for key, value in machine().items():
        print(f"{key}: {value}  ")
    print(f"load average before: {os.getloadavg()[0]:.1f}  ")
    print(
        f"\nLog: {log['lines']:,} lines, {log['files']} daily files. {args.rounds} rounds, the two"
        f" checkouts alternating (every other round in reverse order), each a child process"
        f" pinned to one core, {args.repeat} runs"
        " after a full warm-up run; medians (ranges) over all runs, seconds.\n"
    )
    print(
        "| checkout | lines/s (wall) | lines/s (CPU) | lines per CPU-s (range) | tokenise s |"
        " assembly s | tokenise share | tokenise CPU s | assembly CPU s | first call s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, root, _ in checkouts:
        done = [r for r in runs[label] if "error" not in r]
        if not done:
            print(f"| {label} ({root.name}) | | | | | | | {runs[label][0]['error']} |")
            continue
        merged = {
            k: [v for r in done for v in r[k]] for k in done[0] if isinstance(done[0][k], list)
        }
        lines = done[0]["lines"]
        wall = statistics.median(merged["total_wall"])
        cpu = statistics.median(merged["total_cpu"])
        share = statistics.median(
            t / (t + a)
            for t, a in zip(merged["tokenise_wall"], merged["assemble_wall"], strict=True)
        )
        first = statistics.median(r["first_call_s"] for r in done)
        per_cpu = [lines / c for c in merged["total_cpu"]]
        print(
            f"| {label} ({root.name}) | {lines / wall:,.0f} | {lines / cpu:,.0f} |"
            f" {statistics.median(per_cpu):,.0f} ({min(per_cpu):,.0f}-{max(per_cpu):,.0f}) |"
            f" {_spread(merged['tokenise_wall'])} | {_spread(merged['assemble_wall'])} |"
            f" {share:.0%} | {_spread(merged['tokenise_cpu'])} |"
            f" {_spread(merged['assemble_cpu'])} | {first:.1f} |"
        )
    print(
        "\nCPU seconds split into user and system time, and minor page faults (thousands),"
        " medians (ranges); peak RSS of the child (MB, median):\n"
    )
    print(
        "| checkout | tokenise user s | tokenise sys s | tokenise faults k | assembly user s |"
        " assembly sys s | assembly faults k | peak MB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, root, _ in checkouts:
        done = [r for r in runs[label] if "error" not in r and "assemble_user" in r]
        if not done:
            continue
        merged = {
            k: [v for r in done for v in r[k]] for k in done[0] if isinstance(done[0][k], list)
        }
        faults = {k: [v / 1000 for v in merged[k]] for k in ("tokenise_minflt", "assemble_minflt")}
        print(
            f"| {label} ({root.name}) | {_spread(merged['tokenise_user'])} |"
            f" {_spread(merged['tokenise_sys'])} | {_spread(faults['tokenise_minflt'])} |"
            f" {_spread(merged['assemble_user'])} | {_spread(merged['assemble_sys'])} |"
            f" {_spread(faults['assemble_minflt'])} |"
            f" {statistics.median(r['peak_mb'] for r in done):,.0f} |"
        )
    if args.json_out is not None:
        args.json_out.write_text(json.dumps(runs, indent=1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000, help="lines to generate")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument("--out-dir", type=Path, help="where to write the log (default: temp dir)")
    parser.add_argument("--seed", type=int, default=20240301)
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="read the log already in --out-dir (written by an earlier run) instead of a new one",
    )
    parser.add_argument(
        "--reference-lines",
        type=int,
        default=150_000,
        help="lines the (slow) reference tokeniser is timed on",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="a checkout (e.g. a worktree of main) to compare tokenise vs assembly against",
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (--baseline)")
    parser.add_argument(
        "--keep-freed-memory",
        choices=("no", "yes", "both"),
        default="no",
        help="start the children with KEEP_FREED_MEMORY's allocator settings (both: each way)",
    )
    parser.add_argument(
        "--json-out", type=Path, help="also write every run's figures here (--baseline)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--processes", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        paths = sorted(args.out_dir.glob("2*"))
        if args.child == "tokenize":
            result = child_tokenize(paths, args.repeat, args.reference_lines)
        elif args.child == "read":
            result = child_read(paths, args.repeat)
        elif args.child == "split":
            result = child_split(paths, args.repeat)
        else:
            result = child_workers(paths, args.repeat, args.workers, args.processes)
        print(json.dumps(result))
        return

    with tempfile.TemporaryDirectory(prefix="gridtrace-bench-") as scratch:
        if args.out_dir is None:
            args.out_dir = Path(scratch)
        start = time.perf_counter()
        paths = sorted(args.out_dir.glob("2*")) if args.reuse else []
        if not paths:
            paths = generate(args.out_dir, args.lines, args.seed)
            print(
                f"generated {len(paths)} files in {time.perf_counter() - start:.0f} s",
                file=sys.stderr,
            )
        log = describe(paths)
        if args.baseline is not None:
            compare_split(args, log)
            return
        results = {"tokenize": _run_child(args, "tokenize")}
        results["read"] = _run_child(args, "read")
        for key, _label in WORKER_RUNS:
            extra = ["--workers", key[len("workers")]]
            if key.endswith("processes"):
                extra.append("--processes")
            results[key] = _run_child(args, "workers", *extra)
        report(args, log, results)


if __name__ == "__main__":
    main()
