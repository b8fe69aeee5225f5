"""Benchmark the Grid Engine accounting reader on the UCSF Wynton file, repeated to ~200k lines.

The real file (1,000 records, ``other/sge/ucsf-wynton-sge-8.1.9-accounting`` under
``GRIDTRACE_REAL_DATA``) is written out again and again below its ``#`` header until the target
line count is reached. By default each copy's job numbers are shifted by 10⁶ × copy, so every
record stays a distinct job (plain repetition would make every copy a duplicate of the first,
which the reader folds); ``--plain`` repeats the lines unchanged. Reports, as medians over
``--repeat`` runs on one core, the tokenisation alone (:func:`tokenize_sge_file`) and the full
normalised read (:func:`read_sge`), in lines per second.

Usage::

    GRIDTRACE_REAL_DATA=/path/to/data .venv/bin/python benchmarks/parse_sge.py \
        [--lines 200000] [--repeat 5] [--plain]

or from Python: ``bench_sge(path_to_ucsf_file, lines=200_000, repeat=5)``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from gridtrace.logs import read_sge
from gridtrace.logs._sge import SGE_FIELDS, tokenize_sge_file

_JOB = SGE_FIELDS.index("job_number")


def build_file(source: Path, target: Path, lines: int, *, renumber: bool = True) -> int:
    """Write ``source``'s header, then its records repeated up to ``lines`` lines; return count."""
    text = source.read_text()
    header = [line for line in text.splitlines() if line.startswith("#")]
    records = [line for line in text.splitlines() if line and not line.startswith("#")]
    out = list(header)
    copy = 0
    while len(out) < lines:
        for line in records:
            if len(out) >= lines:
                break
            if renumber and copy:
                fields = line.split(":")
                fields[_JOB] = str(int(fields[_JOB]) + 1_000_000 * copy)
                line = ":".join(fields)
            out.append(line)
        copy += 1
    target.write_text("\n".join(out) + "\n")
    return len(out)


def _median_seconds(run: Any, repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds (CPU time is what a busy shared machine cannot inflate)."""
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        run()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu)


def bench_sge(
    source: Path, *, lines: int = 200_000, repeat: int = 5, renumber: bool = True
) -> dict[str, Any]:
    """Measure the reader on ``source`` repeated to ``lines`` lines, pinned to one core.

    Returns
    -------
    dict
        ``lines``, ``jobs``, the machine's load, and for tokenising and for the full read the
        median wall seconds, lines per wall second and lines per CPU second.
    """
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "accounting"
        count = build_file(source, path, lines, renumber=renumber)
        result = read_sge(path, site="bench", errors="raise")
        tokenize, tokenize_cpu = _median_seconds(
            lambda: tokenize_sge_file(path, site="bench"), repeat
        )
        full, full_cpu = _median_seconds(
            lambda: read_sge(path, site="bench", errors="raise"), repeat
        )
    return {
        "lines": count,
        "jobs": result.jobs.num_rows,
        "repeat": repeat,
        "load_average_1min": round(os.getloadavg()[0], 2),
        "tokenize_s": round(tokenize, 3),
        "tokenize_lines_per_s": round(count / tokenize),
        "tokenize_lines_per_cpu_s": round(count / tokenize_cpu),
        "read_s": round(full, 3),
        "read_lines_per_s": round(count / full),
        "read_lines_per_cpu_s": round(count / full_cpu),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--plain", action="store_true", help="repeat lines unchanged")
    args = parser.parse_args()
    data = os.environ.get("GRIDTRACE_REAL_DATA")
    if not data:
        parser.error("set GRIDTRACE_REAL_DATA to the folder holding other/sge/")
    source = Path(data) / "other" / "sge" / "ucsf-wynton-sge-8.1.9-accounting"
    figures = bench_sge(source, lines=args.lines, repeat=args.repeat, renumber=not args.plain)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
