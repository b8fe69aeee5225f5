"""Start-up: ``gridtrace parse`` of one day's TORQUE file against pbsacct and pbsparse.

    GRIDTRACE_REAL_DATA=../shared/data .venv/bin/python benchmarks/startup.py \
        --peers-python ../bench-peers-venv/bin/python --repeat 7

Installs nothing. The peers run in their own virtual environment, made beforehand with pip::

    python3.11 -m venv ../bench-peers-venv
    ../bench-peers-venv/bin/pip install pbsacct pbsparse

Two measurements, on the VSC month (``torque/vsc-kuleuven-2016-06``, decompressed first into a
temporary folder so that every tool reads the same plain files; pbsacct cannot read gzip):

1. **Whole process** on one day's file (default ``20160614``, 378 lines): the wall time of a fresh
   interpreter that reads the file, from its start to its exit. ``gridtrace parse`` also writes
   its three Parquet tables and its summary; the peers build their job objects and count them.
   Each tool runs in two states: *first call* (``PYTHONPYCACHEPREFIX`` and ``NUMBA_CACHE_DIR``
   point to new empty folders, so no byte-code and no compiled kernel can be reused) and *warm*
   (the same folders for every run, filled by an untimed run); byte-code is written in both
   (``PYTHONDONTWRITEBYTECODE`` is dropped). The tools alternate within each
   repeat, so they share the machine's load; medians with min-max.
2. **In process**, the whole month (58,904 lines): each tool in its own process reads it once
   untimed, then ``--repeat`` times timed; lines/s from the median. The job ids with an end (E)
   record that gridtrace finds are compared with each peer's: a peer *loses* the ids it does not
   give as ended jobs, and *crashes* on the files whose reading raises (they are skipped, counted).

``--old DIR`` adds the gridtrace of another checkout (e.g. a worktree of main) as a baseline.
Both gridtrace rows run the same command, each with its own tree first on ``PYTHONPATH`` (this
script's checkout, and ``--old``'s) and from an empty working folder (``-c`` puts the working
folder first on ``sys.path``), so that neither imports the editable install of another checkout;
each row's child says which ``gridtrace/__init__.py`` it imports before anything is timed, and
the script stops if that is not its tree's. ``--whole-only`` leaves out the month in process.
``--floor`` adds what a tool that writes Parquet with pyarrow pays whole-process at the least: an
interpreter that imports numpy, ``pyarrow.compute`` and ``pyarrow.parquet`` and writes three
one-row tables, nothing else; once as such (pyarrow imports pandas at its first conversion) and
once with pandas kept out, as ``gridtrace parse`` does for TORQUE files.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _machine import describe_machine

VSC = "torque/vsc-kuleuven-2016-06"

# --- whole process: what each tool's fresh interpreter runs ----------------------------------

GRIDTRACE_CLI = "from gridtrace.cli import main; raise SystemExit(main())"

WHICH_GRIDTRACE = "import gridtrace; print(gridtrace.__file__)"
HERE = Path(__file__).resolve().parent.parent  # the checkout this script belongs to

PBSACCT_DAY = r"""
import sys, pbsacct
jobs = pbsacct.jobs_from_files(sys.argv[1:])
print(len(jobs), "jobs")
"""

PBSPARSE_DAY = r"""
import sys, pbsparse
ids = set()
for path in sys.argv[1:]:
    for record in pbsparse.get_pbs_records(path, process=True):
        ids.add(record.id)
print(len(ids), "jobs")
"""

PYARROW_FLOOR = r"""
import sys
from pathlib import Path
if sys.argv[2] == "no-pandas":  # pyarrow would import pandas at its first conversion (0.3-0.4 s)
    class NoPandas:
        def find_spec(self, name, path=None, target=None):
            if name == "pandas":
                raise ImportError("pandas left out")
    sys.meta_path.insert(0, NoPandas())
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
for name in ("records", "jobs", "quarantine"):
    table = pa.table({"n": pc.add(pa.array(np.arange(1)), 1)})
    pq.write_table(table, out / f"{name}.parquet")
"""

# --- in process: the month, timed after one untimed read; ended job ids and crashes ---------

GRIDTRACE_MONTH = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
from gridtrace.logs import read_torque
import pyarrow.compute as pc
files, repeat = sys.argv[2:], int(sys.argv[1])
def run():
    return read_torque(files, site="vsc")
result = run()
times = []
for _ in range(repeat):
    t = time.perf_counter(); result = run(); times.append(time.perf_counter() - t)
records = result.records
ended = records.filter(pc.equal(records.column("record_type"), "E"))
ids = sorted(set(ended.column("job_id_raw").to_pylist()))
print(json.dumps({"times": times, "lines": result.lines_read, "ended": ids, "crashed": []}))
"""

PBSACCT_MONTH = r"""
import json, sys, time, logging
logging.disable(logging.CRITICAL)
import pbsacct
files, repeat = sys.argv[2:], int(sys.argv[1])
def run():
    jobs, crashed = {}, []
    for path in files:
        try:
            jobs.update(pbsacct.records_to_jobs(pbsacct.raw_data_from_file(path)))
        except Exception as exc:
            crashed.append({"file": path, "error": repr(exc)[:200]})
    return jobs, crashed
jobs, crashed = run()
times = []
for _ in range(repeat):
    t = time.perf_counter(); jobs, crashed = run(); times.append(time.perf_counter() - t)
lines = sum(open(p, "rb").read().count(b"\n") for p in files)
ids = sorted(j for j, info in jobs.items() if info.get_state() == "E")
print(json.dumps({"times": times, "lines": lines, "ended": ids, "crashed": crashed}))
"""

PBSPARSE_MONTH = r"""
import json, sys, time
import pbsparse
files, repeat = sys.argv[2:], int(sys.argv[1])
def run():
    ended, crashed = set(), []
    for path in files:
        try:
            for record in pbsparse.get_pbs_records(path, process=True):
                if record.type == "E":
                    ended.add(record.id)
        except Exception as exc:
            crashed.append({"file": path, "error": repr(exc)[:200]})
    return ended, crashed
ended, crashed = run()
times = []
for _ in range(repeat):
    t = time.perf_counter(); ended, crashed = run(); times.append(time.perf_counter() - t)
lines = sum(open(p, "rb").read().count(b"\n") for p in files)
print(json.dumps({"times": times, "lines": lines, "ended": sorted(ended), "crashed": crashed}))
"""


def _decompress(source: Path, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for path in sorted(source.glob("*.gz")):
        plain = folder / path.name.removesuffix(".gz")
        plain.write_bytes(gzip.decompress(path.read_bytes()))
        files.append(plain)
    return files


def _tools(
    args: argparse.Namespace, day: Path, out: Path
) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Each tool's whole-process command on ``day`` and the environment it adds."""
    tools: dict[str, tuple[list[str], dict[str, str]]] = {
        "gridtrace": (
            [sys.executable, "-c", GRIDTRACE_CLI, "parse", str(day), "-o", str(out / "new")],
            {"PYTHONPATH": _first_on_path(HERE)},
        )
    }
    if args.old:
        tools["gridtrace (old)"] = (
            [sys.executable, "-c", GRIDTRACE_CLI, "parse", str(day), "-o", str(out / "old")],
            {"PYTHONPATH": _first_on_path(Path(args.old).resolve())},
        )
    if args.floor:
        tools["numpy + pyarrow, 3 tiny tables"] = (
            [sys.executable, "-c", PYARROW_FLOOR, str(out / "floor"), "pandas"],
            {},
        )
        tools["the same, pandas kept out"] = (
            [sys.executable, "-c", PYARROW_FLOOR, str(out / "floor-np"), "no-pandas"],
            {},
        )
    if args.peers_python:
        tools["pbsacct"] = ([args.peers_python, "-c", PBSACCT_DAY, str(day)], {})
        tools["pbsparse"] = ([args.peers_python, "-c", PBSPARSE_DAY, str(day)], {})
    return tools


def _first_on_path(tree: Path) -> str:
    """``PYTHONPATH`` with ``tree`` first: it comes before site-packages (and editable installs)."""
    return os.pathsep.join([str(tree), *filter(None, [os.environ.get("PYTHONPATH")])])


def _check_trees(tools: dict[str, tuple[list[str], dict[str, str]]], cwd: Path) -> None:
    """Stop unless each gridtrace row's child imports the gridtrace of its own tree."""
    for name, (command, extra) in tools.items():
        if "PYTHONPATH" not in extra:
            continue
        tree = extra["PYTHONPATH"].split(os.pathsep)[0]
        found = subprocess.run(
            [command[0], "-c", WHICH_GRIDTRACE],
            env={**os.environ, **extra},
            cwd=cwd,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        print(f"{name}: imports {found}")
        if Path(found).resolve() != Path(tree, "gridtrace", "__init__.py").resolve():
            raise SystemExit(f"{name} imports {found}, not the gridtrace of {tree}")


def _wall(command: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - start


def _summary(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def whole_process(
    args: argparse.Namespace, day: Path, scratch: Path
) -> dict[str, dict[str, list[float]]]:
    tools = _tools(args, day, scratch / "out")
    empty = scratch / "empty"  # the children's working folder: nothing in it to import
    empty.mkdir()
    _check_trees(tools, empty)
    warm_dirs = {
        name: (scratch / f"warm-pyc-{i}", scratch / f"warm-numba-{i}")
        for i, name in enumerate(tools)
    }
    # byte-code is written (PYTHONDONTWRITEBYTECODE dropped), as in a user's shell
    unset = ("PYTHONPYCACHEPREFIX", "NUMBA_CACHE_DIR", "PYTHONDONTWRITEBYTECODE")
    base = {k: v for k, v in os.environ.items() if k not in unset}

    def env_for(name: str, state: str, run: int) -> dict[str, str]:
        if state == "warm":
            pyc, kernels = warm_dirs[name]
        else:
            pyc, kernels = scratch / f"cold-{run}-{name}-pyc", scratch / f"cold-{run}-{name}-numba"
        pyc.mkdir(parents=True, exist_ok=True)
        kernels.mkdir(parents=True, exist_ok=True)
        return {
            **base,
            **tools[name][1],
            "PYTHONPYCACHEPREFIX": str(pyc),
            "NUMBA_CACHE_DIR": str(kernels),
        }

    for name, (command, _) in tools.items():  # fill the warm caches, untimed
        _wall(command, env_for(name, "warm", 0), empty)
    times: dict[str, dict[str, list[float]]] = {
        name: {"first call": [], "warm": []} for name in tools
    }
    names = list(tools)
    for run in range(args.repeat):
        order = names[run % len(names) :] + names[: run % len(names)]  # rotate who goes first
        for state in ("first call", "warm"):
            for name in order:
                command = tools[name][0]
                times[name][state].append(_wall(command, env_for(name, state, run), empty))
    return times


def in_process(args: argparse.Namespace, files: list[Path]) -> dict[str, dict[str, object]]:
    scripts = {"gridtrace": (sys.executable, GRIDTRACE_MONTH)}
    if args.peers_python:
        scripts["pbsacct"] = (args.peers_python, PBSACCT_MONTH)
        scripts["pbsparse"] = (args.peers_python, PBSPARSE_MONTH)
    found: dict[str, dict[str, object]] = {}
    for name, (python, script) in scripts.items():
        done = subprocess.run(
            [python, "-c", script, str(args.repeat), *map(str, files)],
            env={**os.environ, "PYTHONPATH": _first_on_path(HERE)},
            cwd=files[0].parent,  # no gridtrace there to shadow PYTHONPATH
            check=True,
            capture_output=True,
            text=True,
        )
        found[name] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("GRIDTRACE_REAL_DATA", "../shared/data"))
    parser.add_argument("--day", default="20160614", help="the VSC day read whole-process")
    parser.add_argument("--peers-python", help="python of the environment holding the peers")
    parser.add_argument("--old", help="another gridtrace checkout, measured as a baseline")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--whole-only", action="store_true", help="leave out the month read in process"
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also time a process that only imports numpy and pyarrow and writes 3 tiny tables",
    )
    args = parser.parse_args()
    source = Path(args.data) / VSC
    print(describe_machine())
    if not args.peers_python:
        print("no --peers-python: the peers are left out")
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        files = _decompress(source, scratch / "vsc")
        day = scratch / "vsc" / args.day
        lines = day.read_bytes().count(b"\n")
        print(
            f"\n## whole process, {day.name} ({lines} lines), seconds: "
            f"median (min-max) of {args.repeat}\n"
        )
        times = whole_process(args, day, scratch)
        print("| tool | first call | warm |")
        print("|---|---|---|")
        for name, states in times.items():
            print(f"| {name} | {_summary(states['first call'])} | {_summary(states['warm'])} |")
        if "pbsacct" in times:
            for name in [n for n in times if n not in ("pbsacct", "pbsparse")]:
                for state in ("first call", "warm"):
                    mine = statistics.median(times[name][state])
                    ratios = ", ".join(
                        f"{peer} {mine / statistics.median(times[peer][state]):.2f}x"
                        for peer in ("pbsacct", "pbsparse")
                    )
                    print(f"{name}, {state}: time / peer's = {ratios}")

        if args.whole_only:
            return
        month = in_process(args, files)
        print(
            f"\n## in process, the VSC month ({len(files)} files): "
            f"median (min-max) of {args.repeat}\n"
        )
        print(
            "| tool | lines | seconds | lines/s | ended jobs | lost vs gridtrace "
            "| files crashed on |"
        )
        print("|---|---:|---|---:|---:|---:|---:|")
        reference = set(month["gridtrace"]["ended"])
        for name, got in month.items():
            seconds = got["times"]
            ended = set(got["ended"])
            rate = got["lines"] / statistics.median(seconds)
            lost = len(reference - ended)
            crashed = got["crashed"]
            print(
                f"| {name} | {got['lines']:,} | {_summary(seconds)} | {rate:,.0f} "
                f"| {len(ended):,} | {lost:,} | {len(crashed)} |"
            )
            for entry in crashed[:3]:
                print(f"  {name} crashed on {entry['file']}: {entry['error']}")


if __name__ == "__main__":
    main()
