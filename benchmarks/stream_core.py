"""Benchmark the readers' per-file tokenisers on two source trees: lines per second, and ratios.

Measures ``tokenize_<fmt>_file(path, site=...)`` in-process (after one warm-up call, which loads
the compiled kernels) for each format and input, on this checkout and on another checkout of the
package (``--base``, e.g. a worktree of ``main``), alternating the two in every round so that both
see the same load on a shared machine. Each round runs a child process per tree
(``PYTHONPATH=<tree>``) that times ``--calls`` calls and keeps the fastest; the figure reported is
the median over ``--rounds`` rounds, with the ratio tree / base.

Inputs: real logs from ``GRIDTRACE_REAL_DATA`` (SWF: RICC-2010-2, gzip; SGE: the UCSF Wynton
accounting file repeated to ``--lines`` lines; Slurm: the two XDMoD sacct dumps, gzip; LSF: the
XDMoD fixture repeated to ``--lsf-lines`` lines; TORQUE: the 30 daily files of the VSC month
2016-06, decompressed into one file) and generated files: a plain SWF file of ``--lines`` jobs,
a plain TORQUE log of ``--lines`` lines (the synthetic site of ``parse_torque.py``, with its
broken lines, its daily files joined into one), and ``condor_history -json`` (one attribute a
line) and ``-jsonl`` files of ``--condor-ads`` job ads (no real HTCondor history is available).

Each row gives the median of the rounds and, in brackets, the range (slowest to fastest round).

``--sge-passes`` times, on this tree only, the two passes of the SGE reader apart: the first
(``sge_width``: the field-count histogram) and the whole ``tokenize_sge_file`` (both passes).

Usage::

    GRIDTRACE_REAL_DATA=../shared/data .venv/bin/python benchmarks/stream_core.py \\
        --base ../wt-stream-base --rounds 3
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
from typing import Any

try:
    from _machine import describe_machine
    from parse_formats import _synthetic_swf_text
    from parse_torque import generate as _torque_days
except ImportError:  # run from another folder
    from benchmarks._machine import describe_machine
    from benchmarks.parse_formats import _synthetic_swf_text
    from benchmarks.parse_torque import generate as _torque_days

HERE = Path(__file__).resolve().parent.parent


def _repeat_lines(source: Path, target: Path, lines: int, skip_comments: bool = True) -> Path:
    from gridtrace.logs._io import read_log_bytes

    body = [
        line
        for line in read_log_bytes(source).splitlines()
        if not (skip_comments and line.startswith(b"#"))
    ]
    out = (body * (lines // max(len(body), 1) + 1))[:lines]
    target.write_bytes(b"\n".join(out) + b"\n")
    return target


def _condor_ad(i: int) -> dict[str, Any]:
    """A job ClassAd as ``condor_history`` writes it (attributes of the HTCondor manual)."""
    return {
        "ClusterId": 100_000 + i // 10, "ProcId": i % 10, "Owner": f"user{i % 37}",
        "AccountingGroup": f"group_vo{i % 5}.prod.user{i % 37}", "JobBatchName": f"batch{i % 11}",
        "QDate": 1_700_000_000 + 13 * i, "JobStartDate": 1_700_000_100 + 13 * i,
        "JobCurrentStartDate": 1_700_000_100 + 13 * i, "CompletionDate": 1_700_003_700 + 13 * i,
        "EnteredCurrentStatus": 1_700_003_700 + 13 * i, "RemoteWallClockTime": 3600.0,
        "RemoteUserCpu": 3000.0 + i % 100, "RemoteSysCpu": 50.0, "RequestCpus": 1 + i % 8,
        "RequestMemory": 2048, "ResidentSetSize_RAW": 1_048_000 + i, "JobStatus": 4,
        "ExitBySignal": False, "ExitCode": i % 3, "NumJobStarts": 1,
        "LastRemoteHost": f"slot1_{i % 16}@wn{i % 400:03d}.example.org",
        "RequestDisk": "/Expr(DiskUsage)/",
    }  # fmt: skip


def _condor_files(work: Path, ads: int) -> tuple[Path, Path]:
    """``condor_history -json`` (one attribute a line) and ``-jsonl`` files of ``ads`` ads."""
    pretty, lines = work / "history.json", work / "history.jsonl"
    with pretty.open("w") as json_out, lines.open("w") as jsonl_out:
        json_out.write("[\n")
        for i in range(ads):
            ad = _condor_ad(i)
            body = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in ad.items())
            json_out.write(("" if i == 0 else ",\n") + "{\n" + body + "\n}\n")
            jsonl_out.write(json.dumps(ad) + "\n")
        json_out.write("]\n")
    return pretty, lines


def build_inputs(work: Path, args: argparse.Namespace) -> list[tuple[str, str, Path]]:
    """``(format, label, path)`` of every input."""
    inputs: list[tuple[str, str, Path]] = []
    swf = work / "generated.swf"
    swf.write_bytes(_synthetic_swf_text(args.lines, 7))
    inputs.append(("swf", f"generated, {args.lines:,} jobs, plain", swf))
    torque = work / "generated.torque"
    days = _torque_days(work / "torque-days", args.lines, 17)
    torque.write_bytes(b"".join(day.read_bytes() for day in days))
    inputs.append(("torque", f"generated, {args.lines:,} lines, plain", torque))
    pretty, jsonl = _condor_files(work, args.condor_ads)
    inputs.append(("htcondor", f"generated -json, {args.condor_ads:,} ads", pretty))
    inputs.append(("htcondor", f"generated -jsonl, {args.condor_ads:,} ads", jsonl))
    real = os.environ.get("GRIDTRACE_REAL_DATA")
    if not real:
        return inputs
    data = Path(real)
    inputs.append(("swf", "real: RICC-2010-2.swf.gz", data / "swf" / "RICC-2010-2.swf.gz"))
    sge = _repeat_lines(
        data / "other" / "sge" / "ucsf-wynton-sge-8.1.9-accounting", work / "sge.log", args.lines
    )
    inputs.append(("sge", f"real, repeated: Wynton, {args.lines:,} lines", sge))
    for name in ("xdmod-phillips-sacct.log.gz", "xdmod-pozidriv-sacct.log.gz"):
        inputs.append(("slurm", f"real: {name}", data / "other" / "slurm" / name))
    lsf = _repeat_lines(
        data / "other" / "lsf" / "xdmod-shredder-lsf-fixture.log", work / "lsf.log", args.lsf_lines
    )
    inputs.append(("lsf", f"real, repeated: XDMoD fixture, {args.lsf_lines:,} lines", lsf))
    vsc = sorted((data / "torque" / "vsc-kuleuven-2016-06").glob("*.gz"))
    if vsc:
        month = work / "vsc-2016-06.torque"
        month.write_bytes(b"".join(gzip.decompress(day.read_bytes()) for day in vsc))
        inputs.append(("torque", f"real: VSC 2016-06, {len(vsc)} days in one file", month))
    return inputs


def child(fmt: str, path: Path, calls: int) -> dict[str, Any]:
    """Time ``calls`` calls of the tokeniser (after a warm-up); the fastest and the line count."""
    import importlib

    module = importlib.import_module(f"gridtrace.logs._{fmt}")
    tokenize = getattr(module, f"tokenize_{fmt}_file")
    parsed = tokenize(path, site="bench")
    best = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        tokenize(path, site="bench")
        best = min(best, time.perf_counter() - start)
    return {"seconds": best, "lines": parsed.lines_read, "module": module.__file__}


def _run(tree: Path, fmt: str, path: Path, calls: int) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    code = (
        "import json, sys; sys.path.insert(1, sys.argv[1]); from stream_core import child; "
        "print(json.dumps(child(sys.argv[2], __import__('pathlib').Path(sys.argv[3]), "
        "int(sys.argv[4]))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent), fmt, str(path), str(calls)],
        env=env,
        cwd=tree,  # python -c puts the working folder first on the path
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    if not str(result["module"]).startswith(str(tree)):
        msg = f"{result['module']} is not under {tree}"
        raise RuntimeError(msg)
    return result


def sge_passes(path: Path, calls: int) -> dict[str, float]:
    """The fastest of ``calls`` calls: the first pass alone, and both passes (on this tree)."""
    from gridtrace.logs._sge import sge_width, tokenize_sge_file

    tokenize_sge_file(path, site="bench")
    first = whole = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        sge_width(path)
        first = min(first, time.perf_counter() - start)
        start = time.perf_counter()
        tokenize_sge_file(path, site="bench")
        whole = min(whole, time.perf_counter() - start)
    return {"first_pass_s": first, "both_passes_s": whole}


def main(argv: list[str] | None = None) -> None:
    """Measure, then print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the other source tree")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--lsf-lines", type=int, default=20_000)
    parser.add_argument("--condor-ads", type=int, default=20_000)
    parser.add_argument("--only", nargs="*", default=None, help="formats to measure")
    parser.add_argument(
        "--sge-passes", action="store_true", help="time the SGE reader's two passes apart"
    )
    args = parser.parse_args(argv)
    trees = {"this": HERE, "base": args.base.resolve()}
    print(describe_machine())
    print(f"this tree: {HERE}; base: {trees['base']}\n")
    print("| format | input | lines | base lines/s (range) | this lines/s (range) | this / base |")
    print("|---|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        if args.sge_passes:
            for fmt, label, path in build_inputs(Path(tmp), args):
                if fmt == "sge":
                    times = sge_passes(path, args.calls)
                    share = times["first_pass_s"] / times["both_passes_s"]
                    print(
                        f"sge {label}: first pass {times['first_pass_s']:.3f} s, both passes "
                        f"{times['both_passes_s']:.3f} s: the first is {share:.0%} of the read"
                    )
            return
        for fmt, label, path in build_inputs(Path(tmp), args):
            if args.only and fmt not in args.only:
                continue
            seconds: dict[str, list[float]] = {"this": [], "base": []}
            lines = 0
            for _ in range(args.rounds):
                for name, tree in trees.items():
                    result = _run(tree, fmt, path, args.calls)
                    seconds[name].append(result["seconds"])
                    lines = int(result["lines"])
            rate = {name: lines / statistics.median(values) for name, values in seconds.items()}
            spread = {
                name: f"{lines / max(values):,.0f}-{lines / min(values):,.0f}"
                for name, values in seconds.items()
            }
            print(
                f"| {fmt} | {label} | {lines:,} | {rate['base']:,.0f} ({spread['base']}) | "
                f"{rate['this']:,.0f} ({spread['this']}) | {rate['this'] / rate['base']:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
