"""Peers side by side on real SWF logs: evalys (reading), AccaSim (simulating), hmmlearn (MMPP).

    GRIDTRACE_REAL_DATA=../shared/data .venv/bin/python benchmarks/peers.py \
        --peers-python ../bench-peers-venv/bin/python --repeat 3

Installs nothing. The peers run in their own virtual environment, made beforehand with pip::

    python3.11 -m venv ../bench-peers-venv && \\
        ../bench-peers-venv/bin/pip install -r benchmarks/peers-requirements.txt

Every log of ``--logs`` (under ``$GRIDTRACE_REAL_DATA/swf/``) is decompressed first into a
temporary folder, and every tool reads that same plain file. Each tool runs in its own process
(the peers with ``--peers-python``); within a repeat the tools take turns (the first one rotates),
so they share the machine's load; medians with min-max over ``--repeat``.

1. **Reading SWF**: ``gridtrace.logs.read_swf`` against ``evalys.workload.Workload.from_csv``.
   In process: a fresh process reads the file once untimed, then once timed. Whole process: a
   fresh interpreter from start to exit (``gridtrace parse FILE -o DIR``, which also writes its
   Parquet tables; evalys builds its data frame and counts it), after one untimed run of each
   (byte-code and compiled kernels cached, as in a user's second call). A peer *loses* the SWF
   job numbers gridtrace returns and it does not; it *crashes* when reading raises. evalys 4.0.7
   calls ``pandas.read_csv(delim_whitespace=True)``, which pandas 3 removed: it is run once as
   installed (the crash is reported), then measured with ``read_csv`` given ``sep=r"\\s+"`` in
   its place, what pandas 2 did with that argument.
2. **Simulating**: ``gridtrace.sim.simulate`` FIFO and EASY (estimate: the requested time)
   against AccaSim's ``FirstInFirstOut`` and ``EASYBackfilling`` with its ``FirstFit``
   allocator, on the first ``--sim-jobs`` jobs of each log of ``--sim-logs`` (AccaSim is slow).
   Both simulate the same file, written here: jobs with a positive runtime, a submit time >= 0,
   and 1 <= cores <= MaxProcs, where cores are the requested processors, else the allocated ones
   (AccaSim's own rule); memory fields set to -1 (unknown) and a requested time <= 0 replaced
   by the runtime, so that both see the same estimate; the machine is MaxProcs single-core
   nodes. Both times run from the file to the start times (gridtrace: ``numpy.loadtxt``, the
   table, ``simulate``; AccaSim: its reader, its simulation and its schedule file, which is
   where it gives the start times). AccaSim 1.1.3 cannot be imported on Python >= 3.10
   (``from collections import Mapping``): the ``collections.abc`` names are put back into
   ``collections`` before importing it. The mean waits of the two schedules are compared.
3. **MMPP fit**: ``gridtrace.models.MMPPArrivals`` (exact continuous-time EM plus direct
   maximisation on the inter-arrival times; it uses hmmlearn's count HMM as one of its starts)
   against ``hmmlearn.hmm.PoissonHMM`` on the arrival counts per ``--bin`` seconds (a discrete-time
   HMM of counts, what a user would fit instead), k = 2 and 3, on the first ``--mmpp-jobs`` submit
   times of ``--mmpp-log``. The two log-likelihoods are of different data (densities of
   inter-arrival times, probabilities of counts), so only the fitted rates per phase are set side
   by side.

Only the ratios of one run carry over when the machine is shared.
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
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _machine import describe_machine

LOGS = [
    "CTC-SP2-1996-3.1-cln",
    "HPC2N-2002-2.2-cln",
    "LPC-EGEE-2004-1.2-cln",
    "KTH-SP2-1996-2.1-cln",
]

# --- the processes each tool runs; every one prints one JSON line last ---------------------

GRIDTRACE_CLI = "from gridtrace.cli import main; raise SystemExit(main())"

GRIDTRACE_READ = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
from gridtrace.logs import read_swf
path = sys.argv[1]
read_swf(path)
t = time.perf_counter(); result = read_swf(path); seconds = time.perf_counter() - t
ids = result.jobs.column("job_seq").to_pylist()
print(json.dumps({"seconds": seconds, "ids": ids, "crashed": None}))
"""

EVALYS_SHIM = r"""
import pandas as pd
_read_csv = pd.read_csv
def read_csv(*args, **kwargs):
    if kwargs.pop("delim_whitespace", False):
        kwargs["sep"] = r"\s+"
    return _read_csv(*args, **kwargs)
pd.read_csv = read_csv
"""

EVALYS_READ = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
if sys.argv[2] == "shim":
    exec(sys.argv[3])
from evalys.workload import Workload
path = sys.argv[1]
try:
    Workload.from_csv(path)
    t = time.perf_counter(); w = Workload.from_csv(path); seconds = time.perf_counter() - t
    ids, crashed = [int(x) for x in w.df["jobID"]], None
except Exception as exc:
    seconds, ids, crashed = None, [], repr(exc)[:200]
print(json.dumps({"seconds": seconds, "ids": ids, "crashed": crashed}))
"""

EVALYS_WHOLE = r"""
import sys
exec(sys.argv[2])
from evalys.workload import Workload
print(len(Workload.from_csv(sys.argv[1]).df), "jobs")
"""

GRIDTRACE_SIM = r"""
import json, sys, time
import numpy as np, pyarrow as pa
from gridtrace.sim import simulate
path, procs, policy = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def run():
    a = np.loadtxt(path, comments=";", ndmin=2)
    table = pa.table({
        "job_id": pa.array(a[:, 0].astype(np.int64)),
        "submit_s": pa.array(a[:, 1]),
        "run_s": pa.array(a[:, 3]),
        "cores": pa.array(a[:, 7].astype(np.int32)),
        "walltime_req_s": pa.array(a[:, 8]),
        "interactive": pa.array(a[:, 3] <= 900.0),
    })
    estimator = "walltime" if policy == "easy" else "oracle"
    return simulate(table, cores=procs, policy=policy, estimator=estimator,
                    warmup_jobs=0, drain_jobs=0)
run()  # compiles or loads the kernels
t = time.perf_counter(); result = run(); seconds = time.perf_counter() - t
jobs = result.jobs
ids = jobs.column("job_id").to_pylist()
wait = (jobs.column("start_s").to_numpy() - jobs.column("submit_s").to_numpy()).tolist()
print(json.dumps({"seconds": seconds, "ids": ids, "wait": wait,
                  "engine": result.summary.get("engine")}))
"""

ACCASIM_SIM = r"""
import collections, collections.abc
for name in ("Mapping", "MutableMapping", "Sequence", "Iterable", "Callable"):
    setattr(collections, name, getattr(collections.abc, name))
import json, os, sys, time
from accasim.base.simulator_class import Simulator
from accasim.base.scheduler_class import FirstInFirstOut, EASYBackfilling
from accasim.base.allocator_class import FirstFit
path, procs, policy, folder = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
config = os.path.join(folder, "system.json")
with open(config, "w") as fh:
    json.dump({"groups": {"g0": {"core": 1}}, "resources": {"g0": procs},
               "equivalence": {"processor": {"core": 1}}, "start_time": 0}, fh)
t = time.perf_counter()
dispatcher = EASYBackfilling(FirstFit()) if policy == "easy" else FirstInFirstOut(FirstFit())
simulator = Simulator(path, config, dispatcher, RESULTS_FOLDER_PATH=os.path.join(folder, "out"),
                      show_statistics=False, statistics_output=False, LOG_LEVEL="ERROR")
files = simulator.start_simulation()
seconds = time.perf_counter() - t
with open(files["sched-"]) as fh:
    schedule = fh.read()
print(json.dumps({"seconds": seconds, "schedule": schedule}))
"""

GRIDTRACE_MMPP = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import numpy as np
from gridtrace.models import MMPPArrivals
times, k = np.load(sys.argv[1]), int(sys.argv[2])
MMPPArrivals(n_states=k, rng=0).fit(times[:500])  # compiles or loads the kernel
t = time.perf_counter(); model = MMPPArrivals(n_states=k, rng=0).fit(times)
seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds, "loglik": float(model.log_likelihood_),
                  "rates": sorted(model.rates_.tolist())}))
"""

HMMLEARN_MMPP = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import numpy as np
from hmmlearn.hmm import PoissonHMM
counts, k, width = np.load(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
X = counts.reshape(-1, 1)
PoissonHMM(n_components=k, random_state=0, n_iter=5).fit(X[:500])  # imports and warms up
t = time.perf_counter()
model = PoissonHMM(n_components=k, random_state=0, n_iter=300, tol=0.01).fit(X)
seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds, "loglik": float(model.score(X)),
                  "iterations": int(model.monitor_.iter), "cap": 300,
                  "rates": sorted((model.lambdas_[:, 0] / width).tolist())}))
"""

# --- pure helpers -----------------------------------------------------------------------------


def max_procs(header: str) -> int:
    """MaxProcs of an SWF header, else MaxNodes; 0 when neither is there."""
    for key in ("MaxProcs", "MaxNodes"):
        found = re.search(rf"^;\s*{key}:\s*(\d+)", header, re.MULTILINE)
        if found:
            return int(found.group(1))
    return 0


def simulation_file(text: str, procs: int, limit: int) -> tuple[str, int]:
    """The first ``limit`` simulable jobs of an SWF text, as SWF lines both simulators read.

    Kept: runtime > 0, submit >= 0, 1 <= cores <= ``procs`` (cores: the requested processors,
    else the allocated ones). Memory fields become -1; a requested time <= 0 becomes the runtime.
    Returns the text (header comment included) and the number of job lines left out before the
    limit was reached.
    """
    out = [f"; MaxProcs: {procs}"]
    dropped = 0
    for line in text.splitlines():
        fields = line.split()
        if not fields or line.lstrip().startswith(";"):
            continue
        if len(out) > limit:
            break
        f = [int(float(x)) for x in fields[:18]]
        cores = f[7] if f[7] > 0 else f[4]
        if f[3] <= 0 or f[1] < 0 or not 1 <= cores <= procs:
            dropped += 1
            continue
        f[4] = f[7] = cores
        f[6] = f[9] = -1
        if f[8] <= 0:
            f[8] = f[3]
        out.append(" ".join(map(str, f)))
    return "\n".join(out) + "\n", dropped


def accasim_waits(schedule: str) -> dict[int, float]:
    """Wait (s) per job id from AccaSim's dispatching plan (``sched-`` file, default format)."""
    waits = {}
    for line in schedule.splitlines():
        if not line.strip():
            continue
        job, _user, rest = line.split(";", 2)
        queued, _nodes, started = rest.split("__")[:3]
        started = started.split(";")[0]
        waits[int(job)] = (_stamp(started) - _stamp(queued)).total_seconds()
    return waits


def _stamp(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)


def arrival_counts(times: np.ndarray, width: float) -> np.ndarray:
    """Arrivals per interval of ``width`` seconds, from the first arrival to the last."""
    t = np.asarray(times, float) - float(np.min(times))
    return np.bincount((t // width).astype(np.int64)).astype(np.int64)


def summary(values: Sequence[float]) -> str:
    """``median (min-max)`` with three decimals."""
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def lost(reference: Sequence[int], got: Sequence[int]) -> list[int]:
    """Job numbers of ``reference`` that ``got`` lacks, sorted."""
    return sorted(set(reference) - set(got))


# --- running ----------------------------------------------------------------------------------


def _run(command: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1][:200]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _wall(command: list[str]) -> float | str:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or ["?"])[-1][:200]
    return time.perf_counter() - start


def _rotate(names: list[str], run: int) -> list[str]:
    return names[run % len(names) :] + names[: run % len(names)]


def reading(args: argparse.Namespace, plain: Path, scratch: Path) -> None:
    lines = sum(1 for line in plain.open("rb") if not line.lstrip().startswith(b";"))
    inproc: dict[str, list[str]] = {"gridtrace": [sys.executable, "-c", GRIDTRACE_READ, str(plain)]}
    whole: dict[str, list[str]] = {
        "gridtrace": [sys.executable, "-c", GRIDTRACE_CLI, "parse", str(plain), "-o"]
    }
    if args.peers_python:
        as_installed = _run([args.peers_python, "-c", EVALYS_READ, str(plain), "plain"])
        if as_installed.get("crashed"):
            print(f"evalys as installed crashes on {plain.name}: {as_installed['crashed']}")
        inproc["evalys"] = [args.peers_python, "-c", EVALYS_READ, str(plain), "shim", EVALYS_SHIM]
        whole["evalys"] = [args.peers_python, "-c", EVALYS_WHOLE, str(plain), EVALYS_SHIM]
    found: dict[str, dict[str, Any]] = {}
    seconds: dict[str, list[float]] = {name: [] for name in inproc}
    walls: dict[str, list[float]] = {name: [] for name in whole}
    crashes: dict[str, str] = {}

    def whole_command(name: str, run: int) -> list[str]:
        extra = [str(scratch / f"parse-{run}")] if name == "gridtrace" else []
        return whole[name] + extra

    for name in whole:  # untimed: byte-code and kernel caches filled
        _wall(whole_command(name, -1))
    for run in range(args.repeat):
        for name in _rotate(list(inproc), run):
            got = _run(inproc[name])
            if got.get("error") or got.get("crashed"):
                crashes[name] = got.get("error") or got["crashed"]
                continue
            seconds[name].append(got["seconds"])
            found.setdefault(name, got)
        for name in _rotate(list(whole), run):
            wall = _wall(whole_command(name, run))
            if isinstance(wall, str):
                crashes[name] = wall
            else:
                walls[name].append(wall)
    print(f"\n### reading {plain.name} ({lines:,} job lines)\n")
    print(
        "| tool | in process, s | lines/s | whole process, s | jobs | lost vs gridtrace | crashed |"
    )
    print("|---|---|---:|---|---:|---:|---|")
    reference = found.get("gridtrace", {}).get("ids", [])
    for name in inproc:
        got = found.get(name, {"ids": []})
        rate = f"{lines / statistics.median(seconds[name]):,.0f}" if seconds[name] else "-"
        missing = lost(reference, got["ids"])
        print(
            f"| {name} | {summary(seconds[name]) if seconds[name] else '-'} | {rate} "
            f"| {summary(walls[name]) if walls[name] else '-'} | {len(got['ids']):,} "
            f"| {len(missing):,} | {crashes.get(name, 'no')} |"
        )
        if missing and name != "gridtrace":
            print(f"  {name} loses e.g. job numbers {missing[:8]}")
    if seconds.get("evalys") and seconds["gridtrace"]:
        g, e = statistics.median(seconds["gridtrace"]), statistics.median(seconds["evalys"])
        wg, we = statistics.median(walls["gridtrace"]), statistics.median(walls["evalys"])
        print(f"\ngridtrace / evalys speed: in process {e / g:.2f}x, whole process {we / wg:.2f}x")


def simulating(args: argparse.Namespace, name: str, text: str, scratch: Path) -> None:
    procs = max_procs(text)
    content, dropped = simulation_file(text, procs, args.sim_jobs)
    path = scratch / f"{name}-sim.swf"
    path.write_text(content)
    jobs = content.count("\n") - 1
    tools = {"gridtrace": sys.executable}
    if args.peers_python:
        tools["AccaSim"] = args.peers_python
    print(
        f"\n### simulating the first {jobs:,} jobs of {name} on {procs} single-core nodes "
        f"({dropped} job lines left out before them)\n"
    )
    print("| policy | tool | seconds | jobs/s | mean wait, s | engine |")
    print("|---|---|---|---:|---:|---|")
    for policy in ("fifo", "easy"):
        # AccaSim's EASY protects no node for the blocked job (see BENCHMARKS.md): gridtrace's
        # greedy first-fit, which reserves nothing either, runs beside it
        runs = {f"gridtrace {policy}": policy, **({"AccaSim": policy} if args.peers_python else {})}
        if policy == "easy":
            runs["gridtrace greedy-first-fit"] = "greedy-first-fit"
        seconds: dict[str, list[float]] = {t: [] for t in runs}
        waits: dict[str, dict[int, float]] = {}
        notes: dict[str, str] = {}
        for run in range(args.repeat):
            for tool in _rotate(list(runs), run):
                if tool != "AccaSim":
                    command = [sys.executable, "-c", GRIDTRACE_SIM, str(path), str(procs)]
                    got = _run([*command, runs[tool]])
                else:
                    folder = scratch / f"accasim-{name}-{policy}-{run}"
                    folder.mkdir()
                    command = [tools[tool], "-c", ACCASIM_SIM, str(path), str(procs)]
                    got = _run([*command, policy, str(folder)], env={**os.environ, "TZ": "UTC"})
                if "error" in got:
                    notes[tool] = f"crashed: {got['error']}"
                    continue
                seconds[tool].append(got["seconds"])
                if tool != "AccaSim":
                    waits[tool] = dict(zip(got["ids"], got["wait"], strict=True))
                    notes[tool] = str(got.get("engine"))
                else:
                    waits[tool] = accasim_waits(got["schedule"])
                    notes.setdefault(tool, "")
        for tool in runs:
            if not seconds[tool]:
                print(f"| {policy} | {tool} | - | - | - | {notes.get(tool, '')} |")
                continue
            rate = len(waits[tool]) / statistics.median(seconds[tool])
            mean = float(np.mean(list(waits[tool].values())))
            print(
                f"| {policy} | {tool} | {summary(seconds[tool])} | {rate:,.0f} | {mean:,.0f} "
                f"| {notes.get(tool, '')} |"
            )
        if "AccaSim" not in waits:
            continue
        peer = waits["AccaSim"]
        for tool in [t for t in runs if t in waits and t != "AccaSim"]:
            mine = waits[tool]
            common = sorted(set(mine) & set(peer))
            a = np.array([mine[j] for j in common])
            b = np.array([peer[j] for j in common])
            ratio = statistics.median(seconds["AccaSim"]) / statistics.median(seconds[tool])
            print(
                f"\n{tool} against AccaSim {policy}: {ratio:,.0f}x its jobs/s; jobs in both "
                f"{len(common):,} (only in gridtrace's {len(set(mine) - set(peer))}, only in "
                f"AccaSim's {len(set(peer) - set(mine))}); same wait for {np.mean(a == b):.1%} "
                f"of jobs; mean |difference| {np.mean(np.abs(a - b)):,.0f} s; mean wait "
                f"{np.mean(a):,.0f} s against {np.mean(b):,.0f} s"
            )
        print()


def fitting(args: argparse.Namespace, text: str, scratch: Path) -> None:
    submits = []
    for line in text.splitlines():
        fields = line.split()
        if fields and not line.lstrip().startswith(";") and float(fields[1]) >= 0:
            submits.append(float(fields[1]))
            if len(submits) >= args.mmpp_jobs:
                break
    times = np.sort(np.asarray(submits))
    counts = arrival_counts(times, args.bin)
    np.save(scratch / "times.npy", times)
    np.save(scratch / "counts.npy", counts)
    tools = {"gridtrace": sys.executable}
    if args.peers_python:
        tools["hmmlearn"] = args.peers_python
    print(
        f"\n### MMPP fit, the first {times.size:,} submit times of {args.mmpp_log} "
        f"({counts.size:,} intervals of {args.bin:g} s for hmmlearn)\n"
    )
    print(
        "| k | tool | seconds | log-likelihood (of its own data) | rates per phase, 1/s | notes |"
    )
    print("|---:|---|---|---:|---|---|")
    for k in (2, 3):
        seconds: dict[str, list[float]] = {t: [] for t in tools}
        last: dict[str, dict[str, Any]] = {}
        for run in range(args.repeat):
            for tool in _rotate(list(tools), run):
                if tool == "gridtrace":
                    got = _run(
                        [sys.executable, "-c", GRIDTRACE_MMPP, str(scratch / "times.npy"), str(k)]
                    )
                else:
                    got = _run(
                        [
                            tools[tool],
                            "-c",
                            HMMLEARN_MMPP,
                            str(scratch / "counts.npy"),
                            str(k),
                            str(args.bin),
                        ]
                    )
                if "error" in got:
                    last[tool] = got
                    continue
                seconds[tool].append(got["seconds"])
                last[tool] = got
        for tool in tools:
            got = last.get(tool, {})
            if not seconds[tool]:
                print(f"| {k} | {tool} | - | - | - | crashed: {got.get('error')} |")
                continue
            rates = ", ".join(f"{r:.4g}" for r in got["rates"])
            note = (
                f"{got['iterations']} EM iterations"
                + (" (the cap)" if got["iterations"] >= got["cap"] else "")
                if tool == "hmmlearn"
                else "continuous time"
            )
            print(
                f"| {k} | {tool} | {summary(seconds[tool])} | {got['loglik']:,.1f} | {rates} "
                f"| {note} |"
            )
        if len(tools) == 2 and seconds["hmmlearn"] and seconds["gridtrace"]:
            ratio = statistics.median(seconds["gridtrace"]) / statistics.median(seconds["hmmlearn"])
            print(f"\nk = {k}: gridtrace's time / hmmlearn's = {ratio:.2f}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("GRIDTRACE_REAL_DATA", "../shared/data"))
    parser.add_argument("--peers-python", help="python of the environment holding the peers")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--logs", nargs="+", default=LOGS, help="SWF logs read (names in swf/)")
    parser.add_argument("--sim-logs", nargs="*", help="logs simulated (default: --logs)")
    parser.add_argument("--sim-jobs", type=int, default=20_000, help="jobs simulated per log")
    parser.add_argument("--mmpp-log", default="LPC-EGEE-2004-1.2-cln")
    parser.add_argument("--mmpp-jobs", type=int, default=20_000)
    parser.add_argument("--bin", type=float, default=60.0, help="hmmlearn's interval, seconds")
    parser.add_argument("--skip", nargs="*", default=[], choices=["read", "sim", "mmpp"])
    args = parser.parse_args()
    print(describe_machine())
    if not args.peers_python:
        print("no --peers-python: the peers are left out")
    sim_logs = args.logs if args.sim_logs is None else args.sim_logs
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        texts = {}
        for name in dict.fromkeys([*args.logs, *sim_logs, args.mmpp_log]):
            plain = scratch / f"{name}.swf"
            plain.write_bytes(
                gzip.decompress((Path(args.data) / "swf" / f"{name}.swf.gz").read_bytes())
            )
            texts[name] = plain
        if "read" not in args.skip:
            for name in args.logs:
                reading(args, texts[name], scratch)
        if "sim" not in args.skip:
            for name in sim_logs:
                simulating(args, name, texts[name].read_text(), scratch)
        if "mmpp" not in args.skip:
            fitting(args, texts[args.mmpp_log].read_text(), scratch)


if __name__ == "__main__":
    main()
