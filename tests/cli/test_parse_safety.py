"""`gridtrace parse` on inputs and moments a user does not choose: damage, mixtures, kills."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from gridtrace import logs
from gridtrace.cli import main
from gridtrace.demo import write_demo_site
from gridtrace.errors import DataQualityWarning
from gridtrace.logs import _registry, _small_parse, _torque_flags

OUTPUTS = ("records.parquet", "jobs.parquet", "quarantine.parquet")


@pytest.fixture(scope="module")
def demo_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("demo") / "log"
    write_demo_site(folder, n_jobs=300, cores=16, seed=3)
    return folder


def _parse(*args: str) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("always", DataQualityWarning)  # log lines on the command line
        return main(["parse", *args, "--no-progress"])


# --- outputs that survive a kill -----------------------------------------------------------------


def _big_log(path: Path, n_jobs: int) -> None:
    """A TORQUE log of ``3 n_jobs`` lines, written fast (no demo generator)."""
    lines = []
    for i in range(n_jobs):
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
    path.write_text("\n".join(lines) + "\n")


def _state(out: Path) -> dict[str, tuple[int, ...]]:
    """Each output's (inode, size, mtime), (0,) when absent, and the temporaries being written."""
    state: dict[str, tuple[int, ...]] = {name: (0,) for name in (*OUTPUTS, "parse-summary.json")}
    temporaries = 0
    with os.scandir(out) as entries:
        for entry in entries:
            if entry.name in state:
                stat = entry.stat()
                state[entry.name] = (entry.inode(), stat.st_size, stat.st_mtime_ns)
            elif entry.name.startswith("."):
                temporaries += 1
    state["temporaries"] = (temporaries,)
    return state


def _check_folder(out: Path, old: dict[str, Any], new_lines: int) -> bool:
    """Every output present opens; a summary present agrees with its tables (old or new run).

    Returns whether the folder was left mid-write (no summary).
    """
    tables = {name: pq.read_table(out / name) for name in OUTPUTS if (out / name).exists()}
    summary_path = out / "parse-summary.json"
    if not summary_path.exists():
        return True
    summary = json.loads(summary_path.read_text())
    assert summary["lines_read"] in (old["lines_read"], new_lines)
    assert set(tables) == set(OUTPUTS)  # a summary comes only after its three tables
    assert tables["records.parquet"].num_rows == summary["lines_parsed"]
    assert tables["jobs.parquet"].num_rows == summary["jobs"]
    assert tables["quarantine.parquet"].num_rows == summary["lines_quarantined"]
    return False


def test_a_kill_at_any_moment_leaves_the_old_outputs_or_the_new(
    demo_log: Path, tmp_path: Path
) -> None:
    """SIGKILL a parse as it writes over an older parse: never half a file, never a mixed set."""
    big = tmp_path / "big.log"
    n_jobs = 20_000  # 60,000 lines: a few seconds of parsing, here and in CI
    _big_log(big, n_jobs)
    template = tmp_path / "old"
    assert _parse(str(demo_log), "-o", str(template)) == 0
    old = json.loads((template / "parse-summary.json").read_text())
    assert old["lines_read"] != 3 * n_jobs
    State = dict[str, tuple[int, ...]]

    def summary_touched(start: State, now: State) -> bool:
        return now["parse-summary.json"] != start["parse-summary.json"]

    def temporary_seen(start: State, now: State) -> bool:
        return now["temporaries"] != (0,)

    def touched(name: str) -> Callable[[State, State], bool]:
        return lambda start, now: now[name] != start[name]

    # each moment is seen by polling the folder, so the kill lands at it or a little later
    moments = {
        "summary touched": summary_touched,
        "first temporary": temporary_seen,
        "records touched": touched("records.parquet"),
        "jobs touched": touched("jobs.parquet"),
    }
    mid_write = []
    command = [sys.executable, "-m", "gridtrace", "parse", str(big), "--no-progress", "-o"]
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
    # the kills must have landed while the outputs were being written, or nothing was tested
    assert len(mid_write) >= 2, mid_write


# --- damaged, mixed and unreadable inputs --------------------------------------------------------


def test_one_truncated_gzip_among_daily_files_is_read_up_to_its_break(
    demo_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "daily"
    shutil.copytree(demo_log, folder)
    damaged = sorted(folder.iterdir())[1]
    packed = gzip.compress(damaged.read_bytes(), mtime=0)
    damaged.unlink()
    (folder / f"{damaged.name}.gz").write_bytes(packed[: len(packed) * 2 // 3])
    out = tmp_path / "out"
    assert _parse(str(folder), "-o", str(out), "--errors", "skip") == 0
    printed = capsys.readouterr().out
    assert f"{folder / damaged.name}.gz:" in printed
    assert "compressed stream broken: the gzip stream ends after" in printed
    summary = json.loads((out / "parse-summary.json").read_text())
    assert summary["reconciled"]
    assert summary["files"] == len(list(demo_log.iterdir()))
    (broken,) = summary["input"]["files_broken"]
    assert broken["file"] == f"{folder / damaged.name}.gz"


def test_a_folder_of_mixed_formats_is_read_per_format_and_what_is_skipped_is_said(
    demo_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "mixed"
    shutil.copytree(demo_log, folder / "torque-days")
    first = sorted(demo_log.iterdir())[0]
    shutil.copy(first, folder / "20240325")
    (folder / "lublin.swf").write_text(
        "; Version: 2.2\n; UnixStartTime: 1136070000\n"
        "1 0 10 100 4 -1 -1 4 200 -1 1 17 3 5 1 -1 -1 -1\n"
        "2 5 -1 3600 16 3500 1024 16 7200 2048 0 18 3 -1 2 1 1 60\n"
    )
    (folder / "README").write_text("These are the accounting logs of our site.\n")
    (folder / ".index").write_text("x\n")
    out = tmp_path / "out"
    assert _parse(str(folder), "-o", str(out), "--tz", "UTC") == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "parse-summary.json").read_text())
    assert set(summary["by_format"]) == {"torque", "swf"}
    assert summary["by_format"]["swf"]["jobs"] == 2
    assert summary["jobs"] == summary["by_format"]["torque"]["jobs"] + 2
    skipped = {Path(e["path"]).name: e["why"] for e in summary["skipped"]}
    assert skipped == {
        "torque-days": "a sub-folder (name it to read it)",
        "README": "not recognised as any log format",
        ".index": "hidden",
    }
    for name, why in skipped.items():
        assert f"skipped {folder / name}: {why}" in printed
    formats = pq.read_table(out / "jobs.parquet", columns=["source_format"])
    assert set(formats.column("source_format").to_pylist()) == {"torque", "swf"}


def test_a_forced_wrong_format_fails_naming_the_files(
    demo_log: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = sorted(demo_log.iterdir())[0]
    out = tmp_path / "out"
    assert _parse(str(first), "-o", str(out), "--format", "slurm", "--tz", "UTC") == 1
    assert f"{first}: gave no record: none of its" in caplog.text
    assert "it looks like torque: leave out --format, or give --format torque" in caplog.text
    summary = json.loads((out / "parse-summary.json").read_text())  # written all the same
    assert summary["lines_parsed"] == 0
    assert [e["file"] for e in summary["files_failed"]] == [str(first)]
    assert pq.read_table(out / "quarantine.parquet").num_rows == summary["lines_read"]


def test_a_named_file_no_format_recognises_fails(
    demo_log: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a log\n")
    first = sorted(demo_log.iterdir())[0]
    assert _parse(str(first), str(notes), "-o", str(tmp_path / "out")) == 1
    assert f"{notes}: gave no record: not recognised as any log format" in caplog.text


def test_an_unreadable_file_is_one_line_and_status_2(
    demo_log: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = sorted(demo_log.iterdir())[0]

    def refuse(path: object, size: int = 65536) -> tuple[bytes, bool]:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(_registry, "read_log_head", refuse)
    # the Arrow path's reading is refused here; the small path (which leaves any OSError to
    # the Arrow path) would read the file itself
    monkeypatch.setattr(_small_parse, "SMALL_PARSE_BYTES", 0)
    out = tmp_path / "out"
    assert _parse(str(first), "-o", str(out)) == 2
    (record,) = [r for r in caplog.records if r.levelname == "ERROR"]
    assert record.getMessage() == (
        f"{first}: permission denied; make the file readable (and its folder searchable) for "
        "this user, or leave it out"
    )
    assert "Traceback" not in caplog.text
    assert not out.exists()
    with pytest.raises(PermissionError):
        main(["--traceback", "parse", str(first), "-o", str(out), "--no-progress"])


def test_flag_counts_are_printed_with_their_meaning(
    demo_log: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a catalog that explains one flag only: every other flag is said to be unexplained
    meaning = "the job belongs to a monitoring VO"
    monkeypatch.setattr(logs, "flag_meanings", lambda log_format=None: {"MONITORING": meaning})
    # the small parse path's catalog (TORQUE's alone, without the registry)
    monkeypatch.setattr(
        _torque_flags, "torque_flag_meanings", lambda log_format=None: {"MONITORING": meaning}
    )
    assert _parse(str(demo_log), "-o", str(tmp_path / "out")) == 0
    printed = capsys.readouterr().out
    summary = json.loads((tmp_path / "out" / "parse-summary.json").read_text())
    flags = summary["job_flags"]
    assert "MONITORING" in flags
    assert len(flags) > 1
    lines = {line.split()[0]: line for line in printed.splitlines() if line.startswith("  ")}
    for flag, count in flags.items():
        assert f" {count} " in lines[flag]
        assert lines[flag].endswith(meaning if flag == "MONITORING" else "(unexplained)")


def test_input_repairs_are_printed_with_their_counts(
    demo_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # two days given newest first; the newer one opens with a NUL run and ends with a copied line
    older, newer = sorted(demo_log.iterdir())[1:3]  # the first day holds NULs of its own
    damaged = tmp_path / "in"
    damaged.mkdir()
    shutil.copy(older, damaged / older.name)
    body = newer.read_bytes()
    last_line = body.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    (damaged / newer.name).write_bytes(b"\x00" * 5 + body + last_line + b"\n")
    out = tmp_path / "out"
    assert _parse(str(damaged / newer.name), str(damaged / older.name), "-o", str(out)) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "parse-summary.json").read_text())
    assert (summary["files_reordered"], summary["duplicate_lines"]) == (2, 1)
    assert summary["nul_bytes_stripped"] == 5
    repairs = next(line for line in printed.splitlines() if line.startswith("input repairs:"))
    assert "2 file(s) given out of time order" in repairs
    assert "1 byte-identical copies" in repairs
    assert "5 NUL bytes stripped" in repairs


# --- anonymised outputs --------------------------------------------------------------------------


def _texts(value: object) -> list[str]:
    """Every piece of text in a value read from a table (nested lists, maps, bytes)."""
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (*_texts(k), *_texts(v))]
    if isinstance(value, list | tuple):
        return [t for item in value for t in _texts(item)]
    if isinstance(value, bytes):
        return [value.decode("latin-1")]
    return [] if value is None else [str(value)]


@pytest.mark.parametrize("mode", ["name", "pseudonym"])
def test_anonymised_outputs_keep_no_name_and_no_path(
    demo_log: Path, tmp_path: Path, mode: str
) -> None:
    home = tmp_path / "home" / "gandalf-secret" / "accounting"
    shutil.copytree(demo_log, home)
    plain = tmp_path / "plain"
    assert _parse(str(home), "-o", str(plain)) == 0
    jobs = pq.read_table(plain / "jobs.parquet")
    names: set[str] = set()
    for column in ("user", "group", "account", "job_name"):
        names |= {v for v in jobs.column(column).to_pylist() if v}
    names |= {h for hosts in jobs.column("exec_hosts").to_pylist() if hosts for h in hosts}
    names |= {v.split(".", 1)[1] for v in jobs.column("job_id_raw").to_pylist()}  # the server
    names -= set(jobs.column("queue").to_pylist())  # queue names are kept, by design
    assert {"biome001", "wn01", "demo-ce", "cmsprd", "atlas_1001"} <= names

    key = tmp_path / "site.key"
    key.write_bytes(b"a secret of sixteen bytes or more\n")
    out = tmp_path / "public"
    args = ["-o", str(out), "--anonymize-key-file", str(key), "--anonymize-src-file", mode]
    assert _parse(str(home), *args) == 0
    texts: list[str] = []
    for name in OUTPUTS:
        table = pq.read_table(out / name)
        texts += _texts(table.to_pylist())
        texts += _texts(dict(table.schema.metadata or {}))
    texts.append((out / "parse-summary.json").read_text())
    blob = "\n".join(texts)
    for secret in (str(tmp_path), "gandalf-secret", "home/"):
        assert secret not in blob
    tokens = set(re.split(r"[^A-Za-z0-9_-]+", blob))
    assert not names & tokens
    src_files = set(pq.read_table(out / "jobs.parquet")["src_file"].to_pylist())
    days = {p.name for p in demo_log.iterdir()}
    if mode == "name":
        assert src_files <= days
    else:
        assert all(re.fullmatch(r"f-[0-9a-f]{12}", f) for f in src_files)
        assert not days & tokens
