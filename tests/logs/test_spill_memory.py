"""Out-of-core assembly keeps memory bounded: 4x the log does not take 4x the memory.

Each size runs in a fresh process (Arrow's pool keeps its peak for the process's life): daily
files of the same size, partitions of the same size (their count grows with the log), merge
windows of the same size. The peak of Python and numpy allocations (tracemalloc) and of Arrow's
memory pool must grow well below the 4x an in-memory assembly takes.
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
