"""Tasks on process workers (or a scheduler's) hand their tables over in files, then remove them."""

from __future__ import annotations

import logging
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from gridtrace.errors import ConfigError, DataQualityWarning
from gridtrace.logs import LogFormat, get_format, parse_logs, register_format
from gridtrace.logs import _ranges as ranges_module
from gridtrace.logs import _registry as registry
from gridtrace.logs._base import FileParse
from gridtrace.logs._registry import TASK_FOLDER_PREFIX, _hand_over, _tokenize

SITE = "s"


def _swf(jobs: int, first: int = 1) -> bytes:
    lines = [b"; Version: 2.2", b"; Computer: a cluster", b"; MaxProcs: 64"]
    for i in range(first, first + jobs):
        if i % 37 == 0:
            lines.append(b"this line is no job")  # quarantined
            continue
        lines.append(
            f"{i} {10 * i} {i % 600} {60 + 7 * i % 86400} {1 + i % 64} {i % 3600}.5 -1 "
            f"{1 + i % 64} 3600 -1 1 {1 + i % 97} {1 + i % 11} -1 {1 + i % 4} 1 -1 -1".encode()
        )
    return b"\n".join(lines) + b"\n"


@pytest.fixture
def logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two SWF files, big enough for several 4 kB ranges each (range starts at any line)."""
    monkeypatch.setattr(ranges_module, "_ALIGN_LINES", 1)
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "a.swf").write_bytes(_swf(600))
    (folder / "b.swf").write_bytes(_swf(300, first=601))
    return folder


def _left(spill_dir: Path) -> list[Path]:
    return sorted(spill_dir.rglob("*"))


def test_process_workers_hand_over_in_files_and_leave_none(
    logs: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("distributed")
    spill_dir = tmp_path / "hand"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        here = parse_logs(logs, format="swf", site=SITE, tz="UTC")
        with caplog.at_level(logging.DEBUG, logger="gridtrace.logs._registry"):
            there = parse_logs(
                logs,
                format="swf",
                site=SITE,
                tz="UTC",
                workers=2,
                processes=True,
                split_bytes=4096,
                spill_dir=spill_dir,
            )
    assert there.info["byte_ranges"]["files_split"] == 2
    tasks = there.info["byte_ranges"]["ranges"]
    assert tasks > 4
    # every task's tables came through the folder made in spill_dir, and it is gone
    assert f"{tasks} tasks' tables taken over from {spill_dir / TASK_FOLDER_PREFIX}" in caplog.text
    assert spill_dir.is_dir()
    assert _left(spill_dir) == []
    # the tables (mapped from the files, now deleted) are those of one worker
    assert there.records.equals(here.records)
    assert there.jobs.equals(here.jobs)
    assert there.quarantine.equals(here.quarantine)
    assert there.quarantine.num_rows > 0
    assert there.lines_read == here.lines_read
    assert there.files == here.files
    summary = there.summary()
    del summary["byte_ranges"]
    assert summary == here.summary()


_BOOM_DIR: list[Path] = []


def _tokenize_or_fail(path: str, *, site: str) -> FileParse:
    """SWF, but a file named ``bad.swf`` fails once other tasks wrote their tables."""
    if Path(path).name == "bad.swf":
        deadline = time.monotonic() + 30
        while not list(_BOOM_DIR[0].rglob("*.arrow")) and time.monotonic() < deadline:
            time.sleep(0.05)
        msg = f"{path}: this task fails"
        raise OSError(msg)
    tokenize: Any = get_format("swf").tokenize_file
    parsed: FileParse = tokenize(path, site=site)
    return parsed


def test_a_failing_task_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    distributed = pytest.importorskip("distributed")
    swf = get_format("swf")
    monkeypatch.setattr(registry, "_FORMATS", dict(registry._FORMATS))  # gone after the test
    register_format(
        LogFormat(
            name="swf-or-fail",
            description="SWF, but bad.swf fails",
            looks_like=lambda head: False,
            tokenize_file=_tokenize_or_fail,
            assemble=swf.assemble,
        )
    )
    folder = tmp_path / "site"
    folder.mkdir()
    for i in range(6):
        (folder / f"good{i}.swf").write_bytes(_swf(200, first=1 + 200 * i))
    (folder / "bad.swf").write_bytes(_swf(10))
    spill_dir = tmp_path / "hand"
    _BOOM_DIR[:] = [spill_dir]
    # a scheduler's workers (here threads of this process, so that they know the format
    # registered above) hand their tables over in files, as process workers do
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
        ) as cluster,
        pytest.raises(OSError, match="this task fails"),
    ):
        parse_logs(
            folder,
            format="swf-or-fail",
            site=SITE,
            scheduler=cluster.scheduler_address,
            spill_dir=spill_dir,
        )
    assert spill_dir.is_dir()
    assert _left(spill_dir) == []


def test_a_worker_that_does_not_see_the_folder_says_so(tmp_path: Path) -> None:
    log = tmp_path / "a.swf"
    log.write_bytes(_swf(20))
    unseen = tmp_path / "elsewhere" / f"{TASK_FOLDER_PREFIX}x"
    with pytest.raises(ConfigError, match="spill_dir on a file system every worker shares"):
        _hand_over(str(unseen), 0, _tokenize, ("swf", str(log), SITE))
    assert not unseen.parent.exists()  # a worker never makes the folder
