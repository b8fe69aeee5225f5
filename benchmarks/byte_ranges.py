"""Benchmark one big plain log parsed by byte ranges: 1 against 2 process workers, same run.

Generates one plain file (SWF by default, or GWF, TORQUE, SGE) of ``--lines`` lines and runs
``parse_logs(path, format=..., workers=W, processes=True, split_bytes=S)`` in a fresh child
process for each configuration, the configurations taken in turn in every repeat (so that each
sees the same load on a shared machine). The configurations:

* ``w1``: one worker: the file read in this process, in one piece (no dask);
* ``w2-split``: two dask process workers, the file split into byte ranges of ``--split-bytes``;
* ``w2-whole`` (with ``--whole``): two dask process workers, the file one task (today's
  per-file parallelism: one file keeps one worker busy);
* ``w1-split`` (with ``--w1-split``): one worker, the file split (with ``--spill``: one range
  at a time in this process, so that memory is bounded by the range, not by the file).

With ``--spill``, each child runs ``parse_logs_to`` instead (out-of-core assembly: the workers
write the records to spill files, nothing is shipped back; process workers of a local pool, so
``--warm`` does not apply; ``w2-split`` splits only Slurm and SGE files, hence ``--format sge``).

With ``--warm``, each child first starts its dask cluster (for two workers) and parses the
file's first 3,000 lines once on it, and on each worker in the worker's own process (or
in-process, for one worker), so that ``parse_s`` leaves out the cluster's start and the loading
of the readers' modules and compiled kernels, tokenising and assembling: what a long-lived
cluster (``--scheduler``) pays per file. The cluster is started with dask's defaults, as a
user's would be; with ``--own-workers``, as ``parse_logs`` starts its own local workers
(without the nanny's ``MALLOC_TRIM_THRESHOLD_``, see ``gridtrace.logs._registry``).

For each run: ``parse_s``, the wall time of the ``parse_logs`` call (tokenise, ship the records
back, join and assemble); ``parse_cpu_driver_s``, the CPU seconds of the call in the child (with
``--warm``, its local cluster's scheduler included), ``parse_cpu_sum_s`` with every worker's
(``--warm`` only: measured on each worker before and after the call) and ``parse_cpu_critical_s``,
the child's and the busiest worker's: the call's length on an idle machine, at best; with
``--warm``, ``parse_cpu_busy_sum_s`` and ``parse_cpu_busy_critical_s``, the same less the CPU the
processes spend idle over the call's wall time (the rates measured over ``--idle-s`` seconds before
it: a dask scheduler's and workers' timers, which a loaded machine's longer wall times swell);
``hand_over_mb`` (``--warm``, two workers), the bytes of the files the workers wrote to hand their
tables over; ``process_s``, the wall time of the child process (imports and the dask cluster's
start and stop included); ``cpu_s``, user + system CPU of the child and of every process it reaped
(the dask workers included), from ``wait4``; ``peak_rss_mb``, the child's own peak resident memory.
Reported: the median and range over ``--repeats`` of each, the ratio of ``w1``'s median ``parse_s``
to each configuration's (above 1: faster than one worker), and of ``w1``'s CPU to each
configuration's summed CPU (``cpu_sum_vs_w1``: the work added) and critical path
(``speedup_critical_path_vs_w1``: the speed-up the load of a shared machine hides), and the same of
the busy CPU (``busy_cpu_sum_vs_w1``, ``speedup_busy_critical_path_vs_w1``).

With ``--baseline TREE`` (another checkout, e.g. ``git worktree add --detach ../base main``),
every configuration also runs with ``PYTHONPATH=TREE`` (its gridtrace, this script), in turn
with this checkout's, labelled ``base:<config>``; each configuration of this checkout then
also gets ``speedup_parse_vs_baseline``, the baseline's median ``parse_s`` over its own.

Usage::

    .venv/bin/python benchmarks/byte_ranges.py --lines 2000000 --repeats 3 --out-dir DIR
    .venv/bin/python benchmarks/byte_ranges.py --lines 2000000 --warm --out-dir DIR
    .venv/bin/python benchmarks/byte_ranges.py --format gwf --lines 1000000 --warm --out-dir DIR
    .venv/bin/python benchmarks/byte_ranges.py --format torque --lines 1000000 --whole
    .venv/bin/python benchmarks/byte_ranges.py --format sge --spill --whole --lines 1000000
    .venv/bin/python benchmarks/byte_ranges.py --whole --baseline ../base --out-dir DIR
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

try:
    from _machine import describe_machine
except ImportError:  # run from another folder
    from benchmarks._machine import describe_machine

HERE = Path(__file__).resolve().parent.parent
BASE_LABEL = "base:"


def _swf_lines(start: int, count: int) -> bytes:
    return "".join(
        f"{i} {10 * i} {i % 600} {60 + (7 * i) % 86400} {1 + i % 64} {i % 3600}.5 -1 "
        f"{1 + i % 64} {3600 * (1 + i % 24)} -1 1 {1 + i % 97} {1 + i % 11} -1 {1 + i % 4} "
        f"{1 + i % 3} -1 -1\n"
        for i in range(start, start + count)
    ).encode()


def _gwf_lines(start: int, count: int) -> bytes:
    """GWF job lines (29 fields), names as a grid log writes them."""
    return "".join(
        f"{i} {10 * i} {i % 600} {60 + (7 * i) % 86400} {1 + i % 64} {i % 3600}.5 -1 "
        f"{1 + i % 64} {3600 * (1 + i % 24)} -1 1 user{i % 97} grp{i % 11} -1 q{i % 4} -1 "
        f"site{i % 3} site{i % 5} -1 -1 -1 -1 -1 -1 -1 -1 -1 vo{i % 7} -1\n"
        for i in range(start, start + count)
    ).encode()


def _torque_lines(start: int, count: int) -> bytes:
    """Q, S and E records of ``count // 3`` jobs, as a TORQUE server writes them."""
    out = []
    for j in range(start // 3, (start + count) // 3):
        day = 1 + (j // 40000) % 28
        clock = f"06/{day:02d}/2016 {(j // 1700) % 24:02d}:{(j // 28) % 60:02d}:{j % 60:02d}"
        job = f"{1000000 + j}.master.example.org"
        submit = 1464739200 + j * 2
        user = f"user{j % 211}"
        out.append(f"{clock};Q;{job};queue=q{j % 4}\n")
        out.append(
            f"{clock};S;{job};user={user} group=grp{j % 17} jobname=run{j % 977} queue=q{j % 4} "
            f"ctime={submit} qtime={submit} etime={submit} start={submit + 60} "
            f"owner={user}@login{j % 3}.example.org exec_host=node{j % 300:03d}/{j % 8} "
            "Resource_List.neednodes=1:ppn=1 Resource_List.nodect=1 Resource_List.nodes=1:ppn=1 "
            "Resource_List.walltime=24:00:00\n"
        )
        out.append(
            f"{clock};E;{job};user={user} group=grp{j % 17} jobname=run{j % 977} queue=q{j % 4} "
            f"ctime={submit} qtime={submit} etime={submit} start={submit + 60} "
            f"owner={user}@login{j % 3}.example.org exec_host=node{j % 300:03d}/{j % 8} "
            "Resource_List.neednodes=1:ppn=1 Resource_List.nodect=1 Resource_List.nodes=1:ppn=1 "
            f"Resource_List.walltime=24:00:00 session={4000 + j % 30000} end={submit + 3660} "
            f"Exit_status=0 resources_used.cput=00:{j % 60:02d}:00 resources_used.mem={j % 9000}kb "
            f"resources_used.vmem={j % 19000}kb resources_used.walltime=01:00:00\n"
        )
    return "".join(out).encode()


def _sge_lines(start: int, count: int) -> bytes:
    """Grid Engine ``accounting`` records (Son of Grid Engine 8.1.x, 45 fields)."""
    from gridtrace.logs._sge import SGE_FIELDS

    out = []
    for i in range(start, start + count):
        values = dict.fromkeys(SGE_FIELDS, "0")
        values.update(
            qname=f"q{i % 4}.q", hostname=f"node{i % 300:03d}", group=f"grp{i % 17}",
            owner=f"user{i % 211}", job_name=f"run{i % 977}.sh", job_number=str(100000 + i),
            account="sge", submission_time=str(1714723000 + i), start_time=str(1714723100 + i),
            end_time=str(1714726700 + i), ru_wallclock="3600", project="proj1",
            department="defaultdepartment", granted_pe="NONE", slots="1", cpu="3520.75",
            category="-l h_rt=7200", pe_taskid="NONE", maxvmem="2147483648.0",
        )  # fmt: skip
        out.append(":".join(values[f] for f in SGE_FIELDS) + "\n")
    return "".join(out).encode()


def generate(path: Path, fmt: str, lines: int) -> Path:
    """Write a plain ``fmt`` file of ``lines`` lines (SWF: a header first), in blocks."""
    make = {"swf": _swf_lines, "gwf": _gwf_lines, "torque": _torque_lines, "sge": _sge_lines}[fmt]
    block = 300_000
    with path.open("wb") as out:
        if fmt == "swf":
            out.write(b"; Version: 2.2\n; Computer: a generated cluster\n; MaxProcs: 64\n")
        if fmt == "gwf":
            out.write(b"# Computer: a generated grid\n# JobID SubmitTime WaitTime RunTime\n")
        for start in range(1 if fmt in ("swf", "gwf") else 0, lines, block):
            out.write(make(start, min(block, lines - start)))
    return path


def _child(args: argparse.Namespace) -> None:
    import resource
    import warnings

    from gridtrace.logs import parse_logs

    warnings.simplefilter("ignore")
    split = args.split_bytes if args.config.endswith("split") else None
    workers = 1 if args.config.startswith("w1") else 2
    options: dict[str, Any] = {"workers": workers, "processes": True}
    cluster = client = None
    if args.warm:
        if workers > 1:
            import dask
            from distributed import Client, LocalCluster

            from gridtrace.logs import _registry

            # --own-workers: the settings parse_logs starts its own local workers with
            own = getattr(_registry, "_OWN_WORKERS_ENVIRON", {}) if args.own_workers else {}
            with dask.config.set(own):
                cluster = LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
                )
            client = Client(cluster)
            options = {"scheduler": cluster.scheduler_address}
        head = Path(args.path).with_name(f"warm-{Path(args.path).name}")
        with Path(args.path).open("rb") as whole:
            head.write_bytes(b"".join(whole.readline() for _ in range(3000)))
        parse_logs(head, format=args.format, site="bench", split_bytes=None, **options)
        if client is not None:  # each worker also reads and assembles it whole, in itself
            client.run(_read_here, str(head), args.format)
    idle = _idle_rates(client, args.idle_s) if args.warm else (0.0, 0.0)
    if client is not None:
        client.run(_count_hand_over)
    workers_before = client.run(_cpu_s) if client is not None else {}
    cpu_before = _cpu_s()
    start = time.perf_counter()
    if args.spill:
        from gridtrace.logs import parse_logs_to

        spilled = parse_logs_to(
            args.path,
            Path(args.path).with_name(f"out-{args.config}"),
            format=args.format,
            site="bench",
            workers=workers,
            split_bytes=split,
        )
        parse_s = time.perf_counter() - start
        counts = spilled.summary
        seen = (counts["lines_read"], counts["lines_parsed"], counts["jobs"])
        byte_ranges = counts.get("byte_ranges")
    else:
        result = parse_logs(
            args.path, format=args.format, site="bench", split_bytes=split, **options
        )
        parse_s = time.perf_counter() - start
        seen = (result.lines_read, result.records.num_rows, result.jobs.num_rows)
        byte_ranges = result.info.get("byte_ranges")
    driver_cpu = _cpu_s() - cpu_before
    worker_cpu = []
    known = workers == 1 or client is not None  # cold: the workers' CPU is not measured
    handed = None
    if client is not None:
        after = client.run(_cpu_s)
        worker_cpu = [after[w] - workers_before[w] for w in sorted(after)]
        handed = sum(client.run(_handed_bytes).values()) / 1e6
    out = {
        "parse_s": parse_s,
        # CPU seconds of the parse (--warm only for the workers): this process (the driver,
        # and a local cluster's scheduler), each worker; the critical path is the driver's
        # plus the busiest worker's, what an idle machine would take at best
        "parse_cpu_driver_s": driver_cpu,
        "parse_cpu_workers_s": worker_cpu,
        "parse_cpu_sum_s": driver_cpu + sum(worker_cpu) if known else None,
        "parse_cpu_critical_s": driver_cpu + max(worker_cpu, default=0.0) if known else None,
        # the same less what the processes spend idle (a dask scheduler's and workers' timers)
        # over the call's wall time: on a loaded machine the wall time, so the idle CPU, swells
        "idle_cpu_per_s": {"driver": idle[0], "worker": idle[1]},
        "parse_cpu_busy_sum_s": (
            driver_cpu + sum(worker_cpu) - parse_s * (idle[0] + idle[1] * len(worker_cpu))
            if known
            else None
        ),
        "parse_cpu_busy_critical_s": (
            driver_cpu
            + max(worker_cpu, default=0.0)
            - parse_s * (idle[0] + idle[1] * bool(worker_cpu))
            if known
            else None
        ),
        "lines": seen[0],
        "records": seen[1],
        "jobs": seen[2],
        "byte_ranges": byte_ranges,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        # bytes the workers wrote to hand their tables over (--warm, two workers)
        "hand_over_mb": handed,
    }
    print("RESULT " + json.dumps(out), flush=True)
    if client is not None:
        client.close()
    if cluster is not None:
        cluster.close()


def _read_here(path: str, fmt: str) -> int:
    """Parse a file in this process (a worker's warm-up: its assembly's imports and kernels)."""
    import warnings

    from gridtrace.logs import parse_logs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return parse_logs(path, format=fmt, site="bench", split_bytes=None).jobs.num_rows


def _count_hand_over() -> None:
    """On a worker: count the bytes of the files its tasks hand their tables over in.

    The count is kept on the reader's module: this script's own globals are copied with the
    function sent to the worker.
    """
    from gridtrace.logs import _registry

    write = getattr(_registry._write_table, "__wrapped__", _registry._write_table)

    def counted(path: Any, table: Any) -> None:
        write(path, table)
        _registry.__dict__["_bench_handed"] += Path(path).stat().st_size

    counted.__wrapped__ = write  # type: ignore[attr-defined]
    _registry._write_table = counted
    _registry.__dict__["_bench_handed"] = 0


def _handed_bytes() -> int:
    from gridtrace.logs import _registry

    return int(_registry.__dict__.get("_bench_handed", 0))


def _idle_rates(client: Any, seconds: float) -> tuple[float, float]:
    """CPU seconds per second this process and the busiest worker spend idle, over ``seconds``."""
    workers = client.run(_cpu_s) if client is not None else {}
    mine, start = _cpu_s(), time.perf_counter()
    time.sleep(seconds)
    after = client.run(_cpu_s) if client is not None else {}
    wall = time.perf_counter() - start
    busiest = max((after[w] - workers[w] for w in after), default=0.0)
    return (_cpu_s() - mine) / wall, busiest / wall


def _cpu_s() -> float:
    """User + system CPU seconds of this process (its threads included)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _run(
    path: Path,
    fmt: str,
    config: str,
    split_bytes: int,
    warm: bool,
    spill: bool,
    tree: Path,
    idle_s: float,
    own_workers: bool = False,
) -> dict[str, Any]:
    command = [
        sys.executable, __file__, "--child", "--path", str(path), "--format", fmt,
        "--config", config, "--split-bytes", str(split_bytes), *(["--warm"] if warm else []),
        *(["--spill"] if spill else []), "--idle-s", str(idle_s),
        *(["--own-workers"] if own_workers else []),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert child.stdout is not None
    text = child.stdout.read().decode()
    _, status, usage = os.wait4(child.pid, 0)
    process_s = time.perf_counter() - start
    if status:
        msg = f"{config} failed (status {status})"
        raise RuntimeError(msg)
    line = next(x for x in text.splitlines() if x.startswith("RESULT "))
    got: dict[str, Any] = json.loads(line[len("RESULT ") :])
    got.update(process_s=process_s, cpu_s=usage.ru_utime + usage.ru_stime)
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=["swf", "gwf", "torque", "sge"], default="swf")
    parser.add_argument("--lines", type=int, default=2_000_000)
    parser.add_argument("--split-bytes", type=int, default=16 << 20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--whole", action="store_true", help="also 2 workers, file unsplit")
    parser.add_argument("--w1-split", action="store_true", help="also 1 worker, file split")
    parser.add_argument("--warm", action="store_true", help="time a started, warmed cluster")
    parser.add_argument(
        "--idle-s", type=float, default=5.0, help="with --warm: seconds idle CPU is measured over"
    )
    parser.add_argument(
        "--own-workers",
        action="store_true",
        help="with --warm: start the cluster as parse_logs starts its own local workers "
        "(without dask's MALLOC_TRIM_THRESHOLD_), not with dask's defaults",
    )
    parser.add_argument("--spill", action="store_true", help="parse_logs_to (out of core)")
    parser.add_argument("--out-dir", type=Path, default=Path("benchmark-byte-ranges"))
    parser.add_argument(
        "--baseline",
        type=Path,
        help="another checkout (e.g. a git worktree of main): every configuration also runs "
        f"on its gridtrace, in turn with this one's, labelled {BASE_LABEL}<config>",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args)
        return
    args.out_dir.mkdir(parents=True, exist_ok=True)
    path = args.out_dir / f"big-{args.lines}.{args.format}"
    if not path.exists():
        generate(path, args.format, args.lines)
    configs = ["w1", "w2-split"] + (["w2-whole"] if args.whole else [])
    configs += ["w1-split"] if args.w1_split else []
    trees = {"": HERE}
    if args.baseline is not None:  # every configuration on both trees, in turn
        trees[BASE_LABEL] = args.baseline.resolve()
    labelled = [(f"{label}{c}", c, tree) for c in configs for label, tree in trees.items()]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in labelled}
    load = [os.getloadavg()]
    for repeat in range(args.repeats):
        order = labelled if repeat % 2 == 0 else labelled[::-1]  # alternate who goes first
        for name, config, tree in order:
            got = _run(
                path, args.format, config, args.split_bytes, args.warm, args.spill, tree,
                args.idle_s, args.own_workers,
            )  # fmt: skip
            runs[name].append(got)
            print(name, json.dumps({k: v for k, v in got.items() if k != "byte_ranges"}))
        load.append(os.getloadavg())
    summary: dict[str, Any] = {
        "machine": describe_machine(),
        "file": {"format": args.format, "lines": args.lines, "bytes": path.stat().st_size},
        "split_bytes": args.split_bytes,
        "warm": args.warm,
        "own_workers": args.own_workers,
        "spill": args.spill,
        "repeats": args.repeats,
        "baseline": str(args.baseline) if args.baseline is not None else None,
        "loadavg_1_5_15": load,
        "configs": {},
    }
    for config, got in runs.items():
        label = BASE_LABEL if config.startswith(BASE_LABEL) else ""
        base = statistics.median(r["parse_s"] for r in runs[f"{label}w1"])
        entry: dict[str, Any] = {}
        for key in (
            "parse_s", "process_s", "cpu_s", "peak_rss_mb", "parse_cpu_driver_s",
            "parse_cpu_sum_s", "parse_cpu_critical_s", "parse_cpu_busy_sum_s",
            "parse_cpu_busy_critical_s", "hand_over_mb",
        ):  # fmt: skip
            values = [r.get(key) for r in got]
            if None in values:
                continue
            entry[key] = {
                "median": round(statistics.median(values), 2),
                "min": round(min(values), 2),
                "max": round(max(values), 2),
            }
        entry["speedup_parse_vs_w1"] = round(base / entry["parse_s"]["median"], 2)
        # on a loaded machine wall times measure the load: CPU ratios against one worker
        w1_cpu = statistics.median(r["parse_cpu_sum_s"] for r in runs[f"{label}w1"])
        if "parse_cpu_sum_s" in entry:
            entry["cpu_sum_vs_w1"] = round(entry["parse_cpu_sum_s"]["median"] / w1_cpu, 2)
            entry["speedup_critical_path_vs_w1"] = round(
                w1_cpu / entry["parse_cpu_critical_s"]["median"], 2
            )
            w1_busy = statistics.median(r["parse_cpu_busy_sum_s"] for r in runs[f"{label}w1"])
            entry["busy_cpu_sum_vs_w1"] = round(
                entry["parse_cpu_busy_sum_s"]["median"] / w1_busy, 2
            )
            entry["speedup_busy_critical_path_vs_w1"] = round(
                w1_busy / entry["parse_cpu_busy_critical_s"]["median"], 2
            )
        if label == "" and f"{BASE_LABEL}{config}" in runs:
            baseline = statistics.median(r["parse_s"] for r in runs[f"{BASE_LABEL}{config}"])
            entry["speedup_parse_vs_baseline"] = round(baseline / entry["parse_s"]["median"], 2)
        entry["byte_ranges"] = got[0]["byte_ranges"]
        entry["same_counts"] = len({(r["lines"], r["records"], r["jobs"]) for r in got}) == 1
        summary["configs"][config] = entry
    counts = {(r["lines"], r["records"], r["jobs"]) for got in runs.values() for r in got}
    summary["every_config_same_counts"] = len(counts) == 1
    text = json.dumps(summary, indent=2)
    (args.out_dir / "byte_ranges.json").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
