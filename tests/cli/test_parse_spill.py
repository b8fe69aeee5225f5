"""`gridtrace parse --spill`: the same outputs as in memory, and safe to kill."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from gridtrace.cli import main
from gridtrace.demo import write_demo_site
from gridtrace.errors import DataQualityWarning

OUTPUTS = ("records.parquet", "jobs.parquet", "quarantine.parquet")


@pytest.fixture(scope="module")
def demo_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("demo") / "log"
    write_demo_site(folder, n_jobs=300, cores=16, seed=3)
    return folder


def _parse(*args: str) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("always", DataQualityWarning)
        return main(["parse", *args, "--no-progress"])


@pytest.mark.parametrize("extra", [(), ("--vo", "group:g.*=atlas", "--tz", "Europe/Brussels")])
def test_spill_writes_the_same_parquet_and_summary(
    demo_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...]
) -> None:
    assert _parse(str(demo_log), "-o", str(tmp_path / "memory"), "--no-spill", *extra) == 0
    plain = capsys.readouterr().out
    spill = ("--spill", "--partitions", "3", "--workers", "2")
    assert _parse(str(demo_log), "-o", str(tmp_path / "spill"), *spill, *extra) == 0
    printed = capsys.readouterr().out
    assert "assembled out of core: records spilled by job id to 3 partition(s)" in printed
    # the console summary is the same apart from that line and the folder
    drop = ("assembled out of core", "tables written to")
    assert [x for x in printed.splitlines() if not x.startswith(drop)] == [
        x for x in plain.splitlines() if not x.startswith(drop)
    ]
    for name in OUTPUTS:
        expected = pq.read_table(tmp_path / "memory" / name)
        assert pq.read_table(tmp_path / "spill" / name).equals(expected), name
    summaries = [
        json.loads((tmp_path / d / "parse-summary.json").read_text()) for d in ("memory", "spill")
    ]
    assert summaries[0] == summaries[1]
    assert sorted(p.name for p in (tmp_path / "spill").iterdir()) == sorted(
        [*OUTPUTS, "parse-summary.json"]
    )


def test_spill_refuses_a_key_and_writes_nothing(demo_log: Path, tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_bytes(b"k" * 32)
    out = tmp_path / "out"
    status = _parse(str(demo_log), "-o", str(out), "--spill", "--anonymize-key-file", str(key))
    assert status == 2
    assert not out.exists() or not list(out.iterdir())


# --- outputs that survive a kill (mirrors tests/cli/test_parse_safety.py) ----------------------


def _daily_log(folder: Path, n_jobs: int, per_file: int) -> None:
    """A TORQUE log of ``3 n_jobs`` lines in daily files of ``per_file`` jobs."""
    folder.mkdir(parents=True, exist_ok=True)
    for day in range(0, n_jobs, per_file):
        lines = []
        for i in range(day, min(day + per_file, n_jobs)):
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
        (folder / f"202405{day // per_file + 1:02d}").write_text("\n".join(lines) + "\n")


def _state(out: Path) -> dict[str, tuple[int, ...]]:
    state: dict[str, tuple[int, ...]] = {name: (0,) for name in (*OUTPUTS, "parse-summary.json")}
    temporaries = 0
    for entry in out.iterdir():
        if entry.name in state:
            stat = entry.stat()
            state[entry.name] = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        elif entry.name.startswith(".") and entry.is_file():
            temporaries += 1
    state["temporaries"] = (temporaries,)
    return state


def _check_folder(out: Path, old: dict[str, int], new_lines: int) -> bool:
    """Every output present opens; a summary present agrees with its tables (old or new run)."""
    tables = {name: pq.read_table(out / name) for name in OUTPUTS if (out / name).exists()}
    summary_path = out / "parse-summary.json"
    if not summary_path.exists():
        return True
    summary = json.loads(summary_path.read_text())
    assert summary["lines_read"] in (old["lines_read"], new_lines)
    assert set(tables) == set(OUTPUTS)
    assert tables["records.parquet"].num_rows == summary["lines_parsed"]
    assert tables["jobs.parquet"].num_rows == summary["jobs"]
    assert tables["quarantine.parquet"].num_rows == summary["lines_quarantined"]
    return False


@pytest.mark.slow
def test_a_kill_of_a_spilled_parse_leaves_the_old_outputs_or_the_new(
    demo_log: Path, tmp_path: Path
) -> None:
    """SIGKILL a --spill parse as it writes over an older parse: never half a file."""
    big = tmp_path / "big"
    n_jobs = 20_000
    _daily_log(big, n_jobs, per_file=2_500)
    template = tmp_path / "old"
    assert _parse(str(demo_log), "-o", str(template)) == 0
    old = json.loads((template / "parse-summary.json").read_text())
    State = dict[str, tuple[int, ...]]

    def touched(name: str) -> Callable[[State, State], bool]:
        return lambda start, now: now[name] != start[name]

    moments = {
        "summary touched": touched("parse-summary.json"),
        "first temporary": lambda start, now: now["temporaries"] != (0,),
        "records touched": touched("records.parquet"),
        "jobs touched": touched("jobs.parquet"),
    }
    mid_write = []
    command = [sys.executable, "-m", "gridtrace", "parse", str(big), "--no-progress"]
    command += ["--spill", "--partitions", "8", "-o"]
    for label, moment in moments.items():
        out = tmp_path / label.replace(" ", "-")
        shutil.copytree(template, out)
        start = _state(out)
        process = subprocess.Popen([*command, str(out)], stdout=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while process.poll() is None and time.monotonic() < deadline:
                if moment(start, _state(out)):
                    process.send_signal(signal.SIGKILL)
                    break
                time.sleep(0.0005)
        finally:
            process.kill()
            process.wait()
        if _check_folder(out, old, 3 * n_jobs):
            mid_write.append(label)
    assert len(mid_write) >= 2, mid_write
    # a finished run over a killed one gives complete outputs (a left spill folder is harmless)
    out = tmp_path / "records-touched"
    assert _parse(str(big), "-o", str(out), "--spill", "--partitions", "8") == 0
    assert not _check_folder(out, old, 3 * n_jobs)
    assert json.loads((out / "parse-summary.json").read_text())["lines_read"] == 3 * n_jobs
