"""Peak memory and CPU time of ``characterise_parquet`` on a jobs file, this tree against a base.

Each measurement runs ``gridtrace.stats.characterise_parquet(PATH, cores=..., tz=...)`` in its own
child process (``PYTHONPATH=<tree>``, pinned with ``taskset -c CPU`` when ``--cpu`` is given),
and reads that child's own resource usage with ``os.wait4``: ``peak_rss_mb`` is its
``ru_maxrss``, ``cpu_s`` its user + system time. The trees alternate in every round so that both
see the same load on a shared machine; each row reports the median over ``--rounds`` rounds and
the range. The child writes ``stats.to_dict()`` as JSON; the last round's outputs of the two
trees are compared with a relative tolerance (``--rtol``, default 1e-9) and the paths whose
values differ at all, or beyond the tolerance, are listed.

``--memory-budget BYTES`` is passed to this tree's ``characterise_parquet`` only (the base may
not know it): a small budget forces the out-of-core path. ``--generate N`` first writes an
EGEE-like jobs file of N jobs to JOBS.parquet (vectorised, seeded; 4 VOs, 48 users, submit
times a Poisson process of about 5.6 s gaps with ties, rows in time order by row groups of
~370k, 2 % of probes flagged MONITORING, 1 % never started) when it does not exist.

Usage::

    .venv/bin/python benchmarks/characterise_memory.py JOBS.parquet --base ../wt-base \\
        --cores 16000 --tz Europe/Paris --rounds 3 --cpu 0 --out OUTDIR
    .venv/bin/python benchmarks/characterise_memory.py DIR/jobs-2M.parquet --generate 2000000 \\
        --base ../wt-base --memory-budget 33554432 --rounds 2 --cpu 0 --out OUTDIR
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHILD = """
import json, sys
import gridtrace
from gridtrace._atomic import write_text
from gridtrace.stats import characterise_parquet
print("gridtrace from", gridtrace.__file__, file=sys.stderr)
budget = {"memory_budget": int(sys.argv[5])} if len(sys.argv) > 5 else {}
stats = characterise_parquet(sys.argv[1], cores=int(sys.argv[2]), tz=sys.argv[3], **budget)
write_text(sys.argv[4], json.dumps(stats.to_dict(), sort_keys=True))
"""


def generate(path: Path, n: int, seed: int = 17) -> None:
    """Write an EGEE-like ``jobs.parquet`` of ``n`` jobs (see the module docstring)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from gridtrace._atomic import atomic_path
    from gridtrace.schema import conform

    rng = np.random.default_rng(seed)
    vos = np.array(["prdatl", "cmsprd", "lhcbprd", "biomed"], dtype=object)
    users = np.array([f"p{v[:3]}{i:03d}" for v in vos for i in range(12)], dtype=object)
    t0 = np.datetime64("2024-03-25T00:00:00", "s")
    group = 370_000
    now = 0
    with atomic_path(path) as temporary:
        writer: pq.ParquetWriter | None = None
        for first in range(0, n, group):
            k = min(group, n - first)
            seq = np.arange(first, first + k)
            gaps = rng.exponential(5.6, k).round().astype(np.int64)
            submit = now + np.cumsum(gaps)
            now = int(submit[-1])
            vo = rng.choice(4, k, p=[0.4, 0.3, 0.2, 0.1])
            user = vo * 12 + rng.integers(0, 12, k)
            run = np.where(rng.random(k) < 0.33, rng.integers(1, 900, k), rng.lognormal(8.8, 1, k))
            run = np.minimum(run.round(), 172_800).astype(np.int64)
            wait = rng.exponential(600, k).round().astype(np.int64)
            started = rng.random(k) >= 0.01
            cores = rng.choice([1, 1, 1, 8], k)

            def stamp(offsets: Any, valid: Any) -> Any:
                stamps = t0 + offsets.astype("timedelta64[s]")
                return pa.array(stamps, mask=~valid).cast(pa.timestamp("s", tz="UTC"))

            every = np.ones(k, dtype=bool)
            table = pa.table(
                {
                    "site": pa.array(["egee"] * k),
                    "source_format": pa.array(["torque"] * k),
                    "job_key": pa.array(np.char.add("egee:", seq.astype(str)).astype(object)),
                    "job_id_raw": pa.array(np.char.add(seq.astype(str), ".ce").astype(object)),
                    "job_seq": pa.array(seq),
                    "attempt": pa.array(np.zeros(k, dtype=np.int16)),
                    "n_attempts": pa.array(np.ones(k, dtype=np.int16)),
                    "user": pa.array(users[user]),
                    "vo": pa.array(vos[vo]),
                    "queue": pa.array(["grid"] * k),
                    "submit_time": stamp(submit, every),
                    "start_time": stamp(submit + wait, started),
                    "end_time": stamp(submit + wait + run, started),
                    "run_s": pa.array(run),
                    "cores_alloc": pa.array(cores),
                    "walltime_req_s": pa.array(np.full(k, 172_800)),
                    "state": pa.array(np.where(started, "COMPLETED", "FAILED").astype(object)),
                    "src_file": pa.array(["log"] * k),
                    "src_line": pa.array(seq),
                    "flags": pa.array([["MONITORING"] if s % 50 == 0 else [] for s in seq]),
                }
            )
            table = conform(table, "jobs")
            if writer is None:
                writer = pq.ParquetWriter(str(temporary), table.schema)
            writer.write_table(table, row_group_size=group)
        if writer is not None:
            writer.close()


def measure(tree: Path, args: argparse.Namespace, out: Path) -> dict[str, float]:
    """Run one characterisation in a child process; its peak RSS, CPU and wall time."""
    # -P and cwd: the tree on PYTHONPATH is the one imported, not the current folder
    command = [sys.executable, "-P", "-c", CHILD, str(args.jobs.resolve()), str(args.cores)]
    command.append(args.tz)
    command.append(str(out.resolve()))
    if args.memory_budget is not None and tree == args.tree.resolve():
        command.append(str(args.memory_budget))
    if args.cpu is not None:
        command = ["taskset", "-c", str(args.cpu), *command]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    child = subprocess.Popen(command, env=env, cwd=tree)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        msg = f"characterisation in {tree} failed (status {status})"
        raise RuntimeError(msg)
    return {
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "wall_s": wall,
    }


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key in sorted(value):
            yield from _leaves(value[key], f"{path}/{key}")
    elif isinstance(value, list):
        yield f"{path}#len", len(value)
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}[{i}]")
    else:
        yield path, value


def compare(base: Any, tree: Any, rtol: float) -> dict[str, Any]:
    """Paths whose values differ at all, and those beyond ``rtol`` (relative)."""
    left, right = dict(_leaves(base)), dict(_leaves(tree))
    differ, beyond = [], []
    worst = 0.0
    for path in sorted(set(left) | set(right)):
        a, b = left.get(path), right.get(path)
        if a == b:
            continue
        differ.append(path)
        numbers = isinstance(a, float | int) and isinstance(b, float | int)
        if numbers and not isinstance(a, bool):
            scale = max(abs(a), abs(b))
            relative = abs(a - b) / scale if scale else 0.0
            worst = max(worst, relative)
            if relative <= rtol:
                continue
        beyond.append(path)
    return {
        "values": len(left),
        "differ": len(differ),
        "differ_paths": differ[:200],
        "beyond_rtol": beyond[:200],
        "max_relative": worst,
    }


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> int:
    """Measure both trees, alternately, and print one JSON document."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("jobs", type=Path, help="a jobs.parquet (as gridtrace parse writes it)")
    parser.add_argument("--base", type=Path, required=True, help="the baseline source tree")
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--cores", type=int, default=16000)
    parser.add_argument("--tz", default="Europe/Paris")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu", type=int, default=None, help="pin each child to this CPU")
    parser.add_argument("--rtol", type=float, default=1e-9)
    parser.add_argument("--only", choices=("base", "tree"), default=None)
    parser.add_argument("--out", type=Path, required=True, help="folder of the JSON outputs")
    parser.add_argument("--memory-budget", type=int, default=None, help="this tree only, bytes")
    parser.add_argument("--generate", type=int, default=None, help="write N jobs to JOBS first")
    args = parser.parse_args()
    if args.generate is not None and not args.jobs.exists():
        generate(args.jobs, args.generate)
    args.out.mkdir(parents=True, exist_ok=True)
    trees = {"base": args.base.resolve(), "tree": args.tree.resolve()}
    if args.only:
        trees = {args.only: trees[args.only]}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for round_ in range(args.rounds):
        for name, tree in trees.items():
            result = measure(tree, args, args.out / f"{name}.json")
            runs[name].append(result)
            print(json.dumps({"round": round_, "tree": name, **result}), flush=True)
    report: dict[str, Any] = {"jobs_file": str(args.jobs), "load": os.getloadavg()}
    for name, results in runs.items():
        report[name] = {key: _summary([r[key] for r in results]) for key in results[0]}
    if len(trees) == 2:
        base = json.loads((args.out / "base.json").read_text())
        tree = json.loads((args.out / "tree.json").read_text())
        report["outputs"] = compare(base, tree, args.rtol)
        ratio = report["tree"]["peak_rss_mb"]["median"] / report["base"]["peak_rss_mb"]["median"]
        report["peak_rss_ratio"] = ratio if math.isfinite(ratio) else None
        report["cpu_ratio"] = report["tree"]["cpu_s"]["median"] / report["base"]["cpu_s"]["median"]
    print(json.dumps(report, indent=1), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
