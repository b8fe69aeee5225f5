"""Whole parses of real logs by today's readers and by those of an older revision, interleaved.

    git worktree add --detach ../old-d34 d34c69e
    .venv/bin/python benchmarks/parse_against.py --old ../old-d34 --new .

Each measurement runs in its own process pinned to core 1: one warm-up parse (kernels compiled
or loaded), then one timed ``parse_logs``; the two versions alternate, 5 times each; medians.
The older checkout is imported from its folder (the editable install's finder is removed first).
Needs the real data (``GRIDTRACE_REAL_DATA``, default ``../shared/data``).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

CODE = r"""
import time, warnings, sys, json, os
sys.meta_path = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
sys.path.insert(0, os.environ["GRIDTRACE_CHECKOUT"])
warnings.simplefilter("ignore")
import gridtrace
from gridtrace.logs import parse_logs
p = sys.argv[1]
kw = json.loads(sys.argv[2])
parse_logs([p], **kw)
t = time.perf_counter(); r = parse_logs([p], **kw); dt = time.perf_counter() - t
print(json.dumps({"s": dt, "lines": r.lines_read, "file": gridtrace.__file__}))
"""

DATA = (
    ("torque/vsc-kuleuven-2016-06", {}),
    ("swf/LPC-EGEE-2004-1.2-cln.swf.gz", {}),
    ("other/slurm/xdmod-pozidriv-sacct.log.gz", {"tz": "UTC"}),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="checkout of the older revision")
    parser.add_argument("--new", default=".", help="checkout of today's revision")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    root = Path(os.environ.get("GRIDTRACE_REAL_DATA", "../shared/data"))
    for name, kw in DATA:
        times: dict[str, list[float]] = {"old": [], "new": []}
        lines = 0
        for _ in range(args.repeat):
            for tag in ("old", "new"):
                checkout = str(Path(getattr(args, tag)).resolve())
                env = {**os.environ, "GRIDTRACE_CHECKOUT": checkout}
                out = subprocess.run(
                    [
                        "taskset",
                        "-c",
                        "1",
                        sys.executable,
                        "-c",
                        CODE,
                        str(root / name),
                        json.dumps(kw),
                    ],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                found = json.loads(out.stdout.strip().splitlines()[-1])
                if not found["file"].startswith(checkout):
                    raise SystemExit(f"imported {found['file']}, not {checkout}")
                times[tag].append(found["s"])
                lines = found["lines"]
        old, new = statistics.median(times["old"]), statistics.median(times["new"])
        print(
            f"{name}: {lines} lines; old {old:.3f} s ({lines / old:,.0f} lines/s, "
            f"{min(times['old']):.3f}-{max(times['old']):.3f}); new {new:.3f} s "
            f"({lines / new:,.0f} lines/s, {min(times['new']):.3f}-{max(times['new']):.3f}); "
            f"new/old {new / old:.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
