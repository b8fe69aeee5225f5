"""Out-of-core assembly keeps memory bounded: 4x the log does not take 4x the memory.

Each size runs in a fresh process (Arrow's pool keeps its peak for the process's life): daily
files of the same size, partitions of the same size (their count grows with the log), merge
windows of the same size. The peak of Python and numpy allocations (tracemalloc) and of Arrow's
memory pool must grow well below the 4x an in-memory assembly takes.

The same holds for ONE big file of a format spilled by byte ranges (Grid Engine ``accounting``,
Slurm ``sacct``): ranges of the same size, so a file 4x larger is 4x the ranges, not a 4x task.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

_MEASURE = r"""
import json, sys, tracemalloc
from pathlib import Path
import pyarrow as pa
from gridtrace.logs._spill import spill_parse

folder, n_jobs, per_file = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
folder.mkdir(parents=True)
files = []
for day in range(0, n_jobs, per_file):
    lines = []
    for i in range(day, day + per_file):
        t = 1714644000 + i
        lines.append(f"05/02/2024 10:00:00;Q;{i}.pbs01;queue=grid")
        lines.append(
            f"05/02/2024 10:01:00;S;{i}.pbs01;user=u{i % 97} group=g{i % 7} queue=grid "
            f"ctime={t} qtime={t} etime={t} start={t + 60} exec_host=n{i % 50}/{i % 8}"
        )
        lines.append(
            f"05/02/2024 11:00:00;E;{i}.pbs01;user=u{i % 97} group=g{i % 7} queue=grid "
            f"ctime={t} qtime={t} etime={t} start={t + 60} exec_host=n{i % 50}/{i % 8} "
            f"end={t + 3600} Exit_status=0 resources_used.walltime=00:59:00"
        )
    path = folder / "log" / f"2024{day // per_file + 1:04d}"
    path.parent.mkdir(exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    files.append(str(path))
pool = pa.default_memory_pool()
tracemalloc.start()
result = spill_parse(
    "torque", files, folder / "out", site="s", partitions=n_jobs // per_file,
    window_rows=3 * per_file,
)
python_peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"python": python_peak, "arrow": pool.max_memory(),
                  "jobs": result.summary["jobs"]}))
"""


def _peaks(tmp_path: Path, n_jobs: int, per_file: int) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(tmp_path / str(n_jobs)), str(n_jobs), str(per_file)],
        check=True,
        capture_output=True,
        text=True,
    )
    peaks: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    assert peaks["jobs"] == n_jobs
    return peaks


@pytest.mark.slow
def test_peak_memory_of_the_spill_path_does_not_grow_with_the_log(tmp_path: Path) -> None:
    small = _peaks(tmp_path, 20_000, per_file=5_000)
    large = _peaks(tmp_path, 80_000, per_file=5_000)
    # in memory, 4x the lines take 4x the memory; here the steps hold one file, one partition
    # or one window, the same size in both runs (what grows: per-file facts, a few bytes each)
    assert large["python"] < 1.6 * small["python"], (small, large)
    assert large["arrow"] < 1.6 * small["arrow"], (small, large)


_MEASURE_ONE_FILE = r"""
import json, sys, tracemalloc
from pathlib import Path
import pyarrow as pa
from gridtrace.logs import _ranges
from gridtrace.logs._sge import SGE_FIELDS
from gridtrace.logs._slurm import SLURM_FIELDS
from gridtrace.logs._spill import spill_parse

fmt, folder, n_jobs = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
folder.mkdir(parents=True)
path = folder / "log"
if fmt == "sge":
    fields, sep, head = SGE_FIELDS[:45], ":", ""
    varying = dict(
        qname="q{q}.q", hostname="node{h}", owner="u{u}", job_number="{job}",
        submission_time="{t}", start_time="{t1}", end_time="{t2}", ru_wallclock="3600",
        granted_pe="NONE", slots="1", cpu="3520.75", pe_taskid="NONE",
    )
    steps = [{}]
else:
    fields, sep = SLURM_FIELDS, "|"
    head = "|".join(SLURM_FIELDS) + "\n"
    varying = dict(
        JobID="{job}{step}", JobIDRaw="{job}{step}", Cluster="hpc", Partition="p", User="u{u}",
        State="COMPLETED", ExitCode="0:0", Submit="2024-05-03T10:00:00",
        Eligible="2024-05-03T10:00:00", Start="2024-05-03T10:01:00",
        End="2024-05-03T11:01:00", Elapsed="01:00:00", NCPUS="4", NNodes="1", NodeList="n{h}",
    )
    steps = [{"step": ""}, {"step": ".batch"}]
template = sep.join(varying.get(f, "0" if fmt == "sge" else "") for f in fields) + "\n"
with path.open("w") as out:
    out.write(head)
    for i in range(n_jobs):
        t = 1714723000 + i
        for step in steps:
            out.write(template.format(
                q=i % 4, h=i % 300, u=i % 211, job=100000 + i, t=t, t1=t + 100, t2=t + 3700,
                **step,
            ))
size = path.stat().st_size
# ranges start after a multiple of 100,000 lines (the garbage test's window): a smaller one
# here lets small files be split into many ranges (this clean log has no garbage to find)
_ranges._ALIGN_LINES = 2_000
# a reader loads its compiled kernels once a process has read enough lines: load them before
# measuring and use them at both sizes, so that numba's one-off import is not taken for growth
from gridtrace.logs import _sge
_sge._KERNEL_MIN_LINES = 0
_sge._compile_kernel()
pool = pa.default_memory_pool()
tracemalloc.start()
result = spill_parse(
    fmt, [str(path)], folder / "out", site="s", tz="UTC", split_bytes=1 << 17,
    partitions=max(1, size >> 17), window_rows=2_000,
)
python_peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"python": python_peak, "arrow": pool.max_memory(),
                  "jobs": result.summary["jobs"],
                  "ranges": result.summary["byte_ranges"]["ranges"], "bytes": size}))
"""


def _one_file_peaks(tmp_path: Path, fmt: str, n_jobs: int) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE_ONE_FILE, fmt, str(tmp_path / str(n_jobs)), str(n_jobs)],
        check=True,
        capture_output=True,
        text=True,
    )
    peaks: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    assert peaks["jobs"] == n_jobs
    return peaks


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["sge", "slurm"])
def test_peak_memory_of_one_big_file_does_not_grow_with_the_file(tmp_path: Path, fmt: str) -> None:
    small = _one_file_peaks(tmp_path, fmt, 8_000)
    large = _one_file_peaks(tmp_path, fmt, 32_000)
    assert large["ranges"] > 3 * small["ranges"], (small, large)  # split, not one task
    # each step holds one range, one partition or one window: the same size in both runs
    assert large["python"] < 1.6 * small["python"], (small, large)
    assert large["arrow"] < 1.6 * small["arrow"], (small, large)


_MEASURE_ONE_LSF_FILE = r"""
import json, sys, tracemalloc
from pathlib import Path
import pyarrow as pa
from gridtrace.logs._spill import spill_parse

folder, n_jobs = Path(sys.argv[1]), int(sys.argv[2])
folder.mkdir(parents=True)
path = folder / "lsb.acct"
template = (
    '"JOB_FINISH" "10.1" {t2} {job} 1500 33816578 4 {t} 0 0 {t1} "u{u}" "normal" "" "" "" '
    '"login1" "/home/u{u}" "" "out.%J" "" "{t}.{job}" 0 1 "4*node{h}" 64 12.5 "sim run" '
    '"./run.sh" 3000.5 99.5 204800 0 -1 0 0 1000 0 0 0 0 -1 0 0 0 10 2 -1 "" "physics" 0 4 '
    '"" "" 0 409600 819200 "" "" "" "" 0 "" 0 "" -1 "/physics/u{u}" "" "" "" -1 "" "" 6160 "" '
    '{t1} "" "" 2 1032 "0" 1033 "0" 0 7200 0 300000 "select[type == local] span[hosts=1] " "" '
    '-1 "" -1 0 "" 0 0 "" 3500 "/home/u{u}" 0 "" 0.000000 0.00 0.00 0.00 0.00 4 "node{h}" '
    '"node{h}" "node{h}" "node{h}" -1 0 0 0 0 0\n'
)
with path.open("w") as out:
    for i in range(n_jobs):
        t = 1714723000 + i
        out.write(template.format(job=100000 + i, t=t, t1=t + 100, t2=t + 3700, u=i % 211,
                                  h=i % 300))
pool = pa.default_memory_pool()
tracemalloc.start()
# batches of 1 MiB of records, windows of 2 MiB, partitions of 64 MiB of records (one here):
# only the file's count of batches and windows grows with it
result = spill_parse(
    "lsf", [str(path)], folder / "out", site="s", tz="UTC", batch_bytes=1 << 20,
    window_bytes=2 << 20, partitions=max(1, path.stat().st_size >> 21),
)
python_peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"python": python_peak, "arrow": pool.max_memory(),
                  "jobs": result.summary["jobs"], "bytes": path.stat().st_size}))
"""


def _lsf_file_peaks(tmp_path: Path, n_jobs: int) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE_ONE_LSF_FILE, str(tmp_path / str(n_jobs)), str(n_jobs)],
        check=True,
        capture_output=True,
        text=True,
    )
    peaks: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    assert peaks["jobs"] == n_jobs
    return peaks


@pytest.mark.slow
def test_peak_memory_of_one_big_lsf_file_does_not_grow_with_the_file(tmp_path: Path) -> None:
    # LSF is not split by byte ranges (a record may span lines): its spill task streams the
    # file, batch by batch, so 4x the file is 4x the batches, not a 4x task
    small = _lsf_file_peaks(tmp_path, 4_000)
    large = _lsf_file_peaks(tmp_path, 16_000)
    assert large["bytes"] > 3.9 * small["bytes"]
    assert large["python"] < 1.6 * small["python"], (small, large)
    assert large["arrow"] < 1.6 * small["arrow"], (small, large)
