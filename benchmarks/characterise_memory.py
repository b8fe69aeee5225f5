"""Peak memory and CPU time of ``characterise_parquet`` on a jobs file, this tree against a base.

Each measurement runs ``gridtrace.stats.characterise_parquet(PATH, cores=..., tz=...)`` in its own
child process (``PYTHONPATH=<tree>``, pinned with ``taskset -c CPU`` when ``--cpu`` is given),
and reads that child's own resource usage with ``os.wait4``: ``peak_rss_mb`` is its
``ru_maxrss``, ``cpu_s`` its user + system time. The trees alternate in every round so that both
see the same load on a shared machine; each row reports the median over ``--rounds`` rounds and
the range. The child writes ``stats.to_dict()`` as JSON; the last round's outputs of the two
trees are compared with a relative tolerance (``--rtol``, default 1e-9) and the paths whose
values differ at all, or beyond the tolerance, are listed.

Usage::

    .venv/bin/python benchmarks/characterise_memory.py JOBS.parquet --base ../wt-base \\
        --cores 16000 --tz Europe/Paris --rounds 3 --cpu 0 --out OUTDIR
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
stats = characterise_parquet(sys.argv[1], cores=int(sys.argv[2]), tz=sys.argv[3])
write_text(sys.argv[4], json.dumps(stats.to_dict(), sort_keys=True))
"""


def measure(tree: Path, args: argparse.Namespace, out: Path) -> dict[str, float]:
    """Run one characterisation in a child process; its peak RSS, CPU and wall time."""
    # -P and cwd: the tree on PYTHONPATH is the one imported, not the current folder
    command = [sys.executable, "-P", "-c", CHILD, str(args.jobs.resolve()), str(args.cores)]
    command.append(args.tz)
    command.append(str(out.resolve()))
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
    args = parser.parse_args()
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
