"""Benchmark the LSF, HTCondor and Grid Engine readers against a plain Python baseline.

Each benchmark writes a file of about ``--lines`` lines, then measures on one core, as medians
over ``--repeat`` runs, the full read (``read_lsf``, ``read_htcondor``, ``read_sge``) and, in the
same process, a *baseline*: reading the same file and splitting every line into its fields with
``bytes.split`` (the least any reader must do). The ratio reader / baseline is what to compare
between machines; lines per second depend on the machine and its load.

Inputs:

* **LSF**: the two ``JOB_FINISH`` records of XDMoD's fixture (LSF 9.1, 130 fields, host rusage,
  a multi-kilobyte command with doubled quotes) when ``GRIDTRACE_REAL_DATA`` is set, and an
  LSF 10.1 record written for the tests, alternating, each copy with its own ``jobId``.
* **HTCondor**: ``condor_history -jsonl``, one ad of 60 attributes a line (the test ad plus
  typical bookkeeping attributes), each with its own ``ClusterId``, ``ProcId`` and
  ``GlobalJobId``; and the same ads as pretty ``-json`` (one attribute a line). With
  ``--varied``, every number, host, id and argument of an ad varies (seeded), so that no
  value repeats the ad before's.
* **SGE**: the UCSF Wynton ``accounting`` file (1,000 records, needs ``GRIDTRACE_REAL_DATA``),
  repeated with job numbers shifted per copy.

Usage::

    GRIDTRACE_REAL_DATA=/path/to/data .venv/bin/python benchmarks/parse_formats_extra.py \
        [--lines 100000] [--repeat 3] [--only lsf htcondor sge] [--varied]

or from Python: ``bench_lsf(folder)``, ``bench_htcondor(folder)``, ``bench_sge(folder)``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

try:
    from _machine import machine
except ImportError:  # run from another folder
    from benchmarks._machine import machine

from gridtrace.logs import read_htcondor, read_lsf, read_sge

# ------------------------------------------------------------------ inputs

LSF10_RECORD = (
    '"JOB_FINISH" "10.1" 1700003600 5001 1500 33816578 4 1700000000 0 0 1700000100 "alice" '
    '"normal" "span[hosts=1]" "" "" "login1" "/home/alice" "" "out.%J" "" "1700000000.5001" '
    '0 1 "4*node07" '
    '64 12.5 "sim ""fast"" run" "./run.sh" 3000.5 99.5 204800 0 -1 0 0 1000 0 0 0 0 -1 0 0 0 '
    '10 2 -1 "" "physics" 0 4 "" "" 0 409600 819200 '
    '"" "" "" "" 0 "" 0 "" -1 "/physics/alice" "" "" "" -1 "" "" 6160 "" 1700000100 "" "" '
    '2 1032 "0" 1033 "0" 0 7200 0 300000 "select[type == local] span[hosts=1] " "" -1 "" -1 0 '
    '"" 0 0 "" 3500 "/home/alice" 0 "" 0.000000 0.00 0.00 0.00 0.00 4 "node07" "node07" '
    '"node07" "node07" -1 0 0 0 0 0'
)
_LSF_HEAD = re.compile(r'^("JOB_FINISH" "[^"]*" \d+ )(\d+)( )')

HTCONDOR_AD: dict[str, Any] = {
    "ClusterId": 1234,
    "ProcId": 0,
    "GlobalJobId": "ce01.example.org#1234.0#1700000000",
    "MyType": "Job",
    "JobUniverse": 5,
    "Owner": "alice",
    "User": "alice@example.org",
    "AccountingGroup": "group_atlas.prod.alice",
    "JobBatchName": "sim-batch",
    "Cmd": "/home/alice/run.sh",
    "Iwd": "/home/alice/work",
    "Args": "--events 1000 --seed 42",
    "Environment": "OMP_NUM_THREADS=8 X509_USER_PROXY=/tmp/x509up_u1500",
    "In": "/dev/null",
    "Out": "_condor_stdout",
    "Err": "_condor_stderr",
    "QDate": 1700000000,
    "JobStartDate": 1700000100,
    "JobCurrentStartDate": 1700000100,
    "JobCurrentStartExecutingDate": 1700000102,
    "CompletionDate": 1700003700,
    "EnteredCurrentStatus": 1700003700,
    "LastMatchTime": 1700000099,
    "LastJobLeaseRenewal": 1700003690,
    "RemoteWallClockTime": 3600.0,
    "CumulativeSlotTime": 3600.0,
    "CommittedTime": 3600,
    "RemoteUserCpu": 3000.0,
    "RemoteSysCpu": 50.0,
    "RequestCpus": 8,
    "CpusProvisioned": 8,
    "RequestMemory": 2048,
    "MemoryProvisioned": 2048,
    "RequestDisk": "/Expr(DiskUsage)/",
    "DiskUsage": 125000,
    "DiskUsage_RAW": 123456,
    "ResidentSetSize": 1048576,
    "ResidentSetSize_RAW": 1048000,
    "ImageSize": 1200000,
    "ImageSize_RAW": 1190000,
    "RequestGpus": 1,
    "GpusProvisioned": 1,
    "JobStatus": 4,
    "LastJobStatus": 2,
    "ExitBySignal": False,
    "ExitCode": 0,
    "ExitStatus": 0,
    "NumJobStarts": 1,
    "NumShadowStarts": 1,
    "NumJobMatches": 1,
    "JobRunCount": 1,
    "JobPrio": 0,
    "NiceUser": False,
    "WantRemoteIO": True,
    "ShouldTransferFiles": "YES",
    "WhenToTransferOutput": "ON_EXIT",
    "Requirements": '/Expr((TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX"))/',
    "StartdPrincipal": "execute-side@matchsession/10.0.0.42",
    "RemoteHost": "slot1_3@wn042.example.org",
    "LastRemoteHost": "slot1_3@wn042.example.org",
}


def _source_lines(real_data: Path | None, kind: str) -> list[str]:
    if kind == "lsf":
        lines = [LSF10_RECORD]
        if real_data is not None:
            fixture = real_data / "other" / "lsf" / "xdmod-shredder-lsf-fixture.log"
            lines = [line for line in fixture.read_text().splitlines() if line] + lines
        return lines
    raise ValueError(kind)


def write_lsf(path: Path, lines: int, real_data: Path | None) -> int:
    """Write ``lines`` JOB_FINISH records (fixture and test records, distinct job ids)."""
    source = _source_lines(real_data, "lsf")
    out = []
    for k in range(lines):
        record = source[k % len(source)]
        out.append(_LSF_HEAD.sub(lambda m, k=k: f"{m[1]}{100_000 + k}{m[3]}", record, count=1))
    path.write_text("\n".join(out) + "\n")
    return lines


def _ads(count: int, *, varied: bool = False) -> list[dict[str, Any]]:
    ads = []
    rng = np.random.default_rng(20260) if varied else None
    for k in range(count):
        cluster, proc = 1000 + k // 10, k % 10
        ad = {
            **HTCONDOR_AD,
            "ClusterId": cluster,
            "ProcId": proc,
            "GlobalJobId": f"ce01.example.org#{cluster}.{proc}#1700000000",
            "QDate": 1_700_000_000 + k,
        }
        if rng is not None:
            ad.update(_varied_values(rng, k, cluster, proc))
        ads.append(ad)
    return ads


def _varied_values(rng: np.random.Generator, k: int, cluster: int, proc: int) -> dict[str, Any]:
    """Values of an ad whose every number, host, id and argument differs from the ad before."""

    def n(low: int, high: int) -> int:
        return int(rng.integers(low, high))

    qdate = 1_700_000_000 + 37 * k + n(0, 37)
    start = qdate + n(1, 86_400)
    run = n(1, 200_000)
    end = start + run
    node = f"wn{n(1, 9_999):04d}.site{n(1, 99)}.example.org"
    slot = f"slot1_{n(1, 128)}@{node}"
    user = f"user{n(1, 5_000)}"
    cpus = n(1, 65)
    memory = n(100, 500_000)
    rss = n(1_000, 50_000_000)
    image = n(1_000, 90_000_000)
    disk = n(1_000, 90_000_000)
    return {
        "GlobalJobId": f"ce{n(1, 99):02d}.example.org#{cluster}.{proc}#{qdate - n(0, 1000)}",
        "Owner": user,
        "User": f"{user}@example.org",
        "AccountingGroup": f"group_{n(1, 50)}.prod.{user}",
        "JobBatchName": f"batch-{n(1, 10**9)}",
        "Cmd": f"/home/{user}/run{n(1, 10**6)}.sh",
        "Iwd": f"/home/{user}/work/{n(1, 10**9)}",
        "Args": f"--events {n(1, 10**6)} --seed {n(1, 10**9)}",
        "Environment": f"OMP_NUM_THREADS={cpus} X509_USER_PROXY=/tmp/x509up_u{n(1000, 60000)}",
        "QDate": qdate,
        "JobStartDate": start - n(0, 100),
        "JobCurrentStartDate": start,
        "JobCurrentStartExecutingDate": start + n(0, 10),
        "CompletionDate": end,
        "EnteredCurrentStatus": end + n(0, 5),
        "LastMatchTime": start - n(1, 10),
        "LastJobLeaseRenewal": end - n(1, 1_000),
        "RemoteWallClockTime": float(run + n(0, 30)),
        "CumulativeSlotTime": float(run + n(0, 60)),
        "CommittedTime": run,
        "RemoteUserCpu": round(run * cpus * float(rng.random()), 2),
        "RemoteSysCpu": round(run * float(rng.random()) / 10, 2),
        "RequestCpus": cpus,
        "CpusProvisioned": cpus,
        "RequestMemory": memory,
        "MemoryProvisioned": memory + n(0, 1024),
        "DiskUsage": disk,
        "DiskUsage_RAW": disk - n(0, 1000),
        "ResidentSetSize": rss,
        "ResidentSetSize_RAW": rss - n(0, 1000),
        "ImageSize": image,
        "ImageSize_RAW": image - n(0, 1000),
        "RequestGpus": n(0, 9),
        "GpusProvisioned": n(0, 9),
        "ExitCode": n(0, 3),
        "ExitStatus": n(0, 256),
        "NumJobStarts": n(1, 4),
        "NumShadowStarts": n(1, 4),
        "NumJobMatches": n(1, 5),
        "JobRunCount": n(1, 4),
        "JobPrio": n(-20, 20),
        "StartdPrincipal": f"execute-side@matchsession/10.{n(0, 256)}.{n(0, 256)}.{n(1, 255)}",
        "RemoteHost": slot,
        "LastRemoteHost": slot,
    }


def write_htcondor_jsonl(path: Path, lines: int, *, varied: bool = False) -> int:
    """Write ``lines`` ads as ``condor_history -jsonl`` (one ad a line; see ``--varied``)."""
    path.write_text("".join(json.dumps(ad) + "\n" for ad in _ads(lines, varied=varied)))
    return lines


def write_htcondor_json(path: Path, lines: int, *, varied: bool = False) -> int:
    """Write pretty ``condor_history -json`` of about ``lines`` lines (one attribute a line)."""
    per_ad = len(HTCONDOR_AD) + 2
    blocks = []
    for ad in _ads(max(1, lines // per_ad), varied=varied):
        body = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in ad.items())
        blocks.append("{\n" + body + "\n}")
    text = "[\n" + "\n,\n".join(blocks) + "\n]\n"
    path.write_text(text)
    return text.count("\n")


def write_sge(path: Path, lines: int, real_data: Path) -> int:
    """Write the UCSF accounting file repeated to ``lines`` lines, job numbers shifted per copy."""
    source = real_data / "other" / "sge" / "ucsf-wynton-sge-8.1.9-accounting"
    text = source.read_text().splitlines()
    header = [line for line in text if line.startswith("#")]
    records = [line for line in text if line and not line.startswith("#")]
    out = list(header)
    copy = 0
    while len(out) < lines:
        for line in records[: lines - len(out)]:
            fields = line.split(":")
            fields[5] = str(int(fields[5]) + 1_000_000 * copy)
            out.append(":".join(fields))
        copy += 1
    path.write_text("\n".join(out) + "\n")
    return len(out)


# ------------------------------------------------------------------ measuring


def _median_seconds(run: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds over ``repeat`` runs."""
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        run()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu)


def _baseline(path: Path, separator: bytes | None) -> int:
    """Read the file and split every line into fields: the floor any reader stands on."""
    fields = 0
    for line in path.read_bytes().split(b"\n"):
        fields += len(line.split(separator))
    return fields


def _pin_one_core() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def _measure(
    path: Path, count: int, read: Callable[[], Any], separator: bytes | None, repeat: int
) -> dict[str, Any]:
    result = read()
    assert result.lines_read == result.lines_parsed + result.lines_quarantined
    reader, reader_cpu = _median_seconds(read, repeat)
    base, _ = _median_seconds(lambda: _baseline(path, separator), repeat)
    return {
        "lines": count,
        "jobs": result.jobs.num_rows,
        "quarantined": result.lines_quarantined,
        "repeat": repeat,
        "load_average_1min": round(os.getloadavg()[0], 2),
        "read_s": round(reader, 3),
        "read_lines_per_s": round(count / reader),
        "read_lines_per_cpu_s": round(count / reader_cpu),
        "baseline_lines_per_s": round(count / base),
        "read_over_baseline": round(reader / base, 1),
    }


def bench_lsf(
    folder: Path, *, lines: int = 100_000, repeat: int = 3, real_data: Path | None = None
) -> dict[str, Any]:
    """Time ``read_lsf`` on ``lines`` generated JOB_FINISH records, on one core."""
    _pin_one_core()
    path = folder / "bench.lsb.acct"
    count = write_lsf(path, lines, real_data)
    return _measure(path, count, lambda: read_lsf(path, errors="raise"), None, repeat)


def bench_htcondor(
    folder: Path,
    *,
    lines: int = 100_000,
    repeat: int = 3,
    pretty: bool = False,
    varied: bool = False,
) -> dict[str, Any]:
    """Time ``read_htcondor`` on ``-jsonl`` (or pretty ``-json``) of about ``lines`` lines."""
    _pin_one_core()
    path = folder / ("bench.history.json" if pretty else "bench.history.jsonl")
    count = (write_htcondor_json if pretty else write_htcondor_jsonl)(path, lines, varied=varied)
    return _measure(path, count, lambda: read_htcondor(path, errors="raise"), b",", repeat)


def bench_sge(
    folder: Path, real_data: Path, *, lines: int = 100_000, repeat: int = 3
) -> dict[str, Any]:
    """Time ``read_sge`` on the UCSF accounting file repeated to ``lines`` lines, one core."""
    _pin_one_core()
    path = folder / "accounting"
    count = write_sge(path, lines, real_data)
    return _measure(path, count, lambda: read_sge(path, errors="raise"), b":", repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--only", nargs="+", default=["lsf", "htcondor", "sge"], choices=["lsf", "htcondor", "sge"]
    )
    parser.add_argument(
        "--varied",
        action="store_true",
        help="HTCondor ads whose every number, host, id and argument varies (seeded), "
        "instead of ads repeating most values",
    )
    args = parser.parse_args()
    data = os.environ.get("GRIDTRACE_REAL_DATA")
    real_data = Path(data) if data else None
    figures: dict[str, Any] = {"machine": machine()}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if "lsf" in args.only:
            figures["lsf"] = bench_lsf(
                folder, lines=args.lines, repeat=args.repeat, real_data=real_data
            )
        if "htcondor" in args.only:
            tag = "_varied" if args.varied else ""
            figures[f"htcondor_jsonl{tag}"] = bench_htcondor(
                folder, lines=args.lines, repeat=args.repeat, varied=args.varied
            )
            figures[f"htcondor_json{tag}"] = bench_htcondor(
                folder, lines=args.lines, repeat=args.repeat, pretty=True, varied=args.varied
            )
        if "sge" in args.only:
            if real_data is None:
                figures["sge"] = "skipped: set GRIDTRACE_REAL_DATA"
            else:
                figures["sge"] = bench_sge(folder, real_data, lines=args.lines, repeat=args.repeat)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
