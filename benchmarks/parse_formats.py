"""Benchmark every registered log reader: lines per second on one core, file to ``jobs``.

For each format of ``gridtrace.logs.available_formats()`` an *input builder* makes the files to
read (real logs when ``GRIDTRACE_REAL_DATA`` names the data folder, generated ones otherwise);
a format without a builder is listed as not measured, so a format added later needs only a builder
in ``BUILDERS``. Each input is measured in its own child process pinned to one core:

* ``parse_logs(files, format=name, workers=1, errors="skip")``, from the files (decompression
  included) to the ``records``, ``jobs`` and ``quarantine`` tables;
* a plain baseline on the same files, alternated with the reader in every repeat so that both see
  the same load: read and decompress (``read_log_bytes``), split the lines with ``bytes.split``
  and each line into its whitespace-separated fields with ``bytes.split``, in Python;
* decompression alone (``read_log_bytes``), reported separately.

Medians over ``--repeat`` runs after one warm-up (which compiles or loads the numba kernels), with
the min-max interval; the ratio reader / baseline (in lines/s) is the figure that survives a noisy
shared machine.

Usage::

    GRIDTRACE_REAL_DATA=/path/to/data .venv/bin/python benchmarks/parse_formats.py --repeat 7
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
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

try:
    from _machine import describe_machine
except ImportError:  # run from another folder
    from benchmarks._machine import describe_machine


@dataclass(frozen=True)
class Input:
    """Files for one measurement of one format."""

    name: str  # a short label, e.g. "real: RICC-2010-2"
    paths: tuple[Path, ...]
    note: str
    tz: str | None = None  # the site's zone, for formats whose stamps carry none


Builder = Callable[[Path, argparse.Namespace, Path | None], list[Input]]


# --- input builders ------------------------------------------------------------------------------


def _synthetic_swf_text(lines: int, seed: int) -> bytes:
    """An SWF v2.2 file of ``lines`` jobs in the shape of a cluster log (a few decimal fields)."""
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(70.0, lines)).astype(np.int64)
    procs = rng.choice([1, 2, 4, 8, 16, 32, 64, 128, 256], lines)
    run = rng.lognormal(7.0, 2.0, lines).astype(np.int64)
    columns = [
        np.arange(1, lines + 1),
        submit,
        rng.lognormal(5.0, 2.5, lines).astype(np.int64),
        run,
        procs,
        np.where(rng.random(lines) < 0.3, -1, np.round(run * rng.random(lines), 2)),
        np.where(rng.random(lines) < 0.5, -1, rng.integers(1000, 4_000_000, lines)),
        procs,
        rng.choice([3600, 86400, 259200], lines),
        np.where(rng.random(lines) < 0.5, -1, rng.integers(1000, 4_000_000, lines)),
        rng.choice([1, 1, 1, 1, 0, 5], lines),
        rng.integers(1, 400, lines),
        rng.integers(1, 40, lines),
        np.full(lines, -1),
        rng.integers(1, 6, lines),
        np.full(lines, -1),
        np.full(lines, -1),
        np.full(lines, -1),
    ]
    text = [" ".join(str(v) for v in row) for row in zip(*columns, strict=True)]
    header = "; Version: 2.2\n; Computer: synthetic\n; UnixStartTime: 1262304000\n"
    return (header + "\n".join(text) + "\n").encode()


def build_swf(work: Path, args: argparse.Namespace, real: Path | None) -> list[Input]:
    if real is not None:
        path = real / "swf" / "RICC-2010-2.swf.gz"
        return [Input("real: RICC-2010-2.swf.gz", (path,), "447,814 lines, gzip")]
    path = work / "synthetic.swf.gz"
    path.write_bytes(gzip.compress(_synthetic_swf_text(args.swf_lines, args.seed), 6))
    return [Input(f"generated, {args.swf_lines:,} jobs", (path,), "gzip")]


def build_gwf(work: Path, args: argparse.Namespace, real: Path | None) -> list[Input]:
    del real
    from gridtrace.logs import read_swf, write_gwf

    swf = work / "for-gwf.swf"
    swf.write_bytes(_synthetic_swf_text(args.gwf_lines, args.seed + 1))
    path = write_gwf(read_swf(swf, site="synthetic").jobs, work / "synthetic.gwf").path
    swf.unlink()
    return [Input(f"generated, {args.gwf_lines:,} jobs", (path,), "written by write_gwf, plain")]


def build_torque(work: Path, args: argparse.Namespace, real: Path | None) -> list[Input]:
    try:
        from parse_torque import generate
    except ImportError:  # run from another folder
        from benchmarks.parse_torque import generate

    paths = generate(work / "torque", args.torque_lines, args.seed)
    inputs = [Input(f"generated, {args.torque_lines:,} lines", tuple(paths), "parse_torque's mix")]
    if real is not None:
        folder = real / "torque" / "vsc-kuleuven-2016-06"
        files = tuple(sorted(folder.iterdir()))
        inputs.append(Input("real: vsc-kuleuven-2016-06", files, f"{len(files)} gzip files"))
    return inputs


def build_slurm(work: Path, args: argparse.Namespace, real: Path | None) -> list[Input]:
    """The two XDMoD sacct dumps, repeated with renumbered job ids up to ``--slurm-lines``."""
    if real is None:
        return []
    from gridtrace.logs._io import read_log_bytes

    folder = real / "other" / "slurm"
    lines: list[bytes] = []
    for name in ("xdmod-phillips-sacct.log.gz", "xdmod-pozidriv-sacct.log.gz"):
        lines.extend(read_log_bytes(folder / name).splitlines())
    out: list[bytes] = []
    copy = 0
    while len(out) < args.slurm_lines:
        for line in lines:  # copy k: JobID and JobIDRaw prefixed by k, so no id repeats
            job, raw, rest = line.split(b"|", 2)
            out.append(
                b"|".join([b"%d%s" % (copy, job.zfill(9)), b"%d%s" % (copy, raw.zfill(9)), rest])
            )
        copy += 1
    path = work / "slurm-sacct.log"
    path.write_bytes(b"\n".join(out) + b"\n")
    note = f"phillips + pozidriv ({len(lines):,} lines) × {copy}, job ids renumbered, plain"
    return [Input(f"real, repeated: {len(out):,} lines", (path,), note, tz="UTC")]


BUILDERS: dict[str, Builder] = {
    "torque": build_torque,
    "swf": build_swf,
    "gwf": build_gwf,
    "slurm": build_slurm,
}
"""Input builders by format name; a format added to the registry needs one here."""


# --- measurement (child process) -----------------------------------------------------------------


def _pin_one_core() -> None:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import pyarrow as pa

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)


def _baseline(paths: tuple[Path, ...]) -> int:
    from gridtrace.logs._io import read_log_bytes

    fields = 0
    for path in paths:
        for line in read_log_bytes(path).split(b"\n"):
            fields += len(line.split())
    return fields


def _decompress(paths: tuple[Path, ...]) -> int:
    from gridtrace.logs._io import read_log_bytes

    return sum(len(read_log_bytes(p)) for p in paths)


def child(fmt: str, paths: tuple[Path, ...], repeat: int, tz: str | None) -> dict[str, Any]:
    _pin_one_core()
    from gridtrace.logs import parse_logs

    warnings.simplefilter("ignore")  # quarantined lines warn, by design

    def read() -> Any:
        return parse_logs(list(paths), format=fmt, site="bench", tz=tz, workers=1, errors="skip")

    start = time.perf_counter()
    result = read()  # warm-up: compiles or loads the kernels
    first = time.perf_counter() - start
    reader: list[float] = []
    reader_cpu: list[float] = []
    baseline: list[float] = []
    decompress: list[float] = []
    for _ in range(repeat):  # alternated, so that both see the same load
        for times, function in ((baseline, _baseline), (reader, None), (decompress, _decompress)):
            start = time.perf_counter()
            cpu = time.process_time()
            if function is None:
                result = read()
                reader_cpu.append(time.process_time() - cpu)
            else:
                function(paths)
            times.append(time.perf_counter() - start)
    return {
        "lines": result.lines_read,
        "jobs": result.jobs.num_rows,
        "quarantined": result.lines_quarantined,
        "first_call_s": first,
        "reader_s": reader,
        "reader_cpu_s": reader_cpu,
        "baseline_s": baseline,
        "decompress_s": decompress,
    }


# --- driver --------------------------------------------------------------------------------------


def _run_child(fmt: str, item: Input, repeat: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", fmt, "--repeat", str(repeat)]
    command += ["--tz", item.tz] if item.tz else []
    command += [str(p) for p in item.paths]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr else "failed"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}–{max(values):.3f})"


def report(rows: list[tuple[str, Input | None, dict[str, Any]]]) -> str:
    out = [
        "| format | input | lines | reader s, median (min–max) | reader lines/s "
        "| reader CPU s | baseline lines/s | reader / baseline | decompress s |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for fmt, item, r in rows:
        if item is None or "error" in r:
            why = r.get("error", "no input builder")
            out.append(f"| {fmt} | {item.name if item else '—'} | | {why} | | | | | |")
            continue
        lines = r["lines"]
        reader = statistics.median(r["reader_s"])
        base = statistics.median(r["baseline_s"])
        ratios = [b / t for b, t in zip(r["baseline_s"], r["reader_s"], strict=True)]
        out.append(
            f"| {fmt} | {item.name} | {lines:,} | {_spread(r['reader_s'])} | {lines / reader:,.0f} "
            f"| {statistics.median(r['reader_cpu_s']):.3f} | {lines / base:,.0f} "
            f"| {statistics.median(ratios):.2f} "
            f"({min(ratios):.2f}–{max(ratios):.2f}) | {statistics.median(r['decompress_s']):.3f} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement (median)")
    parser.add_argument("--formats", nargs="*", help="only these formats (default: all)")
    parser.add_argument("--seed", type=int, default=20100501)
    parser.add_argument("--swf-lines", type=int, default=447_794, help="generated SWF jobs")
    parser.add_argument("--gwf-lines", type=int, default=200_000, help="generated GWF jobs")
    parser.add_argument("--torque-lines", type=int, default=200_000, help="generated TORQUE lines")
    parser.add_argument("--slurm-lines", type=int, default=200_000, help="repeated sacct lines")
    parser.add_argument("--json", type=Path, help="also write the raw timings here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--tz", help=argparse.SUPPRESS)
    parser.add_argument("paths", nargs="*", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, tuple(args.paths), args.repeat, args.tz)))
        return

    from gridtrace.logs import available_formats

    folder = os.environ.get("GRIDTRACE_REAL_DATA")
    real = Path(folder) if folder else None
    print(describe_machine())
    print(f"real data: {real or 'not set (generated inputs only)'}; repeats: {args.repeat}")
    rows: list[tuple[str, Input | None, dict[str, Any]]] = []
    raw: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="gridtrace-bench-") as tmp:
        for fmt in available_formats():
            if args.formats and fmt not in args.formats:
                continue
            builder = BUILDERS.get(fmt)
            if builder is None:
                rows.append((fmt, None, {}))
                continue
            work = Path(tmp) / fmt
            work.mkdir()
            inputs = builder(work, args, real)
            if not inputs:
                rows.append((fmt, None, {"error": "needs GRIDTRACE_REAL_DATA"}))
            for item in inputs:
                result = _run_child(fmt, item, args.repeat)
                rows.append((fmt, item, result))
                raw[f"{fmt}: {item.name}"] = {"note": item.note, **result}
                print(f"  measured {fmt}: {item.name} ({item.note})", flush=True)
    table = report(rows)
    print(table)
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
