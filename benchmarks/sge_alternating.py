"""Grid Engine reader, lines per CPU second: this tree against a baseline tree, alternating.

Both trees read the same file (the UCSF Wynton ``accounting`` file repeated to ``--lines``
lines, job numbers shifted per copy: ``parse_formats_extra.write_sge``), each in a fresh
process pinned to one core, in turn, ``--rounds`` times; a process reads once to load its
compiled kernels, then ``--repeat`` times, and reports its median CPU seconds per read. The
figure to compare is the ratio of the two trees' medians, measured in the same run: lines per
CPU second depend on the machine and on its load.

Usage (from this tree; the baseline is another checkout, e.g. a detached worktree of main)::

    GRIDTRACE_REAL_DATA=../shared/data .venv/bin/python benchmarks/sge_alternating.py \\
        --baseline ../gridtrace-main [--lines 100000] [--rounds 5] [--repeat 3] [--core 0]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    from parse_formats_extra import write_sge
except ImportError:  # run from another folder
    from benchmarks.parse_formats_extra import write_sge

_CHILD = """
import json, statistics, sys, time
from gridtrace.logs import read_sge
path, repeat = sys.argv[1], int(sys.argv[2])
result = read_sge(path, errors="raise")  # loads the kernels
assert result.lines_read == result.lines_parsed + result.lines_quarantined
cpu = []
for _ in range(repeat):
    start = time.process_time()
    read_sge(path, errors="raise")
    cpu.append(time.process_time() - start)
print(json.dumps({"cpu_s": statistics.median(cpu), "lines": result.lines_read}))
"""


def _run(tree: Path, path: Path, repeat: int, core: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-P", "-c", _CHILD, str(path), str(repeat)]
    if hasattr(os, "sched_setaffinity"):
        command = ["taskset", "-c", str(core), *command]
    done = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True, check=True)
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--baseline", type=Path, required=True, help="the other tree")
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--core", type=int, default=0)
    args = parser.parse_args()
    data = os.environ.get("GRIDTRACE_REAL_DATA")
    if not data:
        sys.exit("set GRIDTRACE_REAL_DATA (the folder holding other/sge)")
    trees = {"this": Path(__file__).resolve().parent.parent, "baseline": args.baseline.resolve()}
    rates: dict[str, list[float]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "accounting"
        lines = write_sge(path, args.lines, Path(data))
        for _ in range(args.rounds):
            for name, tree in trees.items():
                figures = _run(tree, path, args.repeat, args.core)
                rates[name].append(lines / figures["cpu_s"])
    report = {
        "lines": lines,
        "load_average_1min": round(os.getloadavg()[0], 2),
        **{
            name: {
                "median_lines_per_cpu_s": round(statistics.median(values)),
                "range": [round(min(values)), round(max(values))],
            }
            for name, values in rates.items()
        },
        "ratio_of_medians": round(
            statistics.median(rates["this"]) / statistics.median(rates["baseline"]), 3
        ),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
