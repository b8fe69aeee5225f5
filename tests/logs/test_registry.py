"""Format detection, the registry, and parallel parsing with dask."""

from __future__ import annotations

import gzip
import lzma
from pathlib import Path

import pytest

from gridtrace.errors import ConfigError, UnknownFormatError
from gridtrace.logs import (
    LogFormat,
    available_formats,
    detect_format,
    get_format,
    parse_logs,
    read_torque,
    register_format,
)

DAY1 = (
    b"05/02/2024 10:00:00;Q;301.pbs01;queue=grid\n"
    b"05/02/2024 10:01:00;S;301.pbs01;user=u group=g queue=grid ctime=1714644000 "
    b"qtime=1714644000 etime=1714644000 start=1714644060 exec_host=n1/0\n"
)
DAY2 = (
    b"05/03/2024 09:00:00;E;301.pbs01;user=u group=g queue=grid ctime=1714644000 "
    b"qtime=1714644000 etime=1714644000 start=1714644060 exec_host=n1/0 end=1714726800 "
    b"Exit_status=0\n"
)


@pytest.fixture
def rotated(tmp_path: Path) -> Path:
    folder = tmp_path / "accounting"
    folder.mkdir()
    (folder / "20240502").write_bytes(DAY1)
    (folder / "20240503.xz").write_bytes(lzma.compress(DAY2))
    (folder / "20240504.gz").write_bytes(gzip.compress(b""))
    return folder


def test_torque_is_registered_under_its_aliases() -> None:
    assert "torque" in available_formats()
    assert get_format("pbspro") is get_format("torque")
    with pytest.raises(UnknownFormatError, match=r"available: .*torque"):
        get_format("lsf-9000")


def test_format_is_detected_from_content_even_compressed(rotated: Path, tmp_path: Path) -> None:
    assert detect_format(rotated / "20240503.xz") == "torque"
    other = tmp_path / "notes.txt"
    other.write_text("hello\nworld\n")
    with pytest.raises(UnknownFormatError, match="--format"):
        detect_format(other)


def test_job_spread_over_rotated_compressed_files_is_assembled(rotated: Path) -> None:
    result = parse_logs(rotated)
    assert result.files == tuple(
        str(rotated / n) for n in ("20240502", "20240503.xz", "20240504.gz")
    )
    assert result.lines_read == 3
    (job,) = result.jobs.to_pylist()
    assert job["state"] == "COMPLETED"
    assert job["run_s"] == 1714726800 - 1714644060
    assert result.jobs.column("site").to_pylist() == ["accounting"]


def test_two_dask_workers_give_the_same_tables_as_one_process(rotated: Path) -> None:
    pytest.importorskip("distributed")
    here = parse_logs(rotated, site="s", workers=1)
    there = parse_logs(rotated, site="s", workers=2)
    assert there.records.equals(here.records)
    assert there.jobs.equals(here.jobs)
    assert there.files == here.files


def test_parse_logs_equals_read_torque(rotated: Path) -> None:
    assert parse_logs(rotated, site="x").jobs.equals(read_torque(rotated, site="x").jobs)


def test_registering_a_taken_name_needs_replace() -> None:
    torque = get_format("torque")
    clash = LogFormat(
        name="torque",
        description="x",
        looks_like=lambda head: False,
        tokenize_file=torque.tokenize_file,
        assemble=torque.assemble,
    )
    with pytest.raises(ConfigError, match="already registered"):
        register_format(clash)


def test_bad_worker_count_and_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        parse_logs(tmp_path, workers=0)
    with pytest.raises(FileNotFoundError, match="no log files"):
        parse_logs(tmp_path)


def test_an_existing_dask_scheduler_is_used_when_named(rotated: Path) -> None:
    distributed = pytest.importorskip("distributed")
    here = parse_logs(rotated, site="s")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
    ) as cluster:
        there = parse_logs(rotated, site="s", scheduler=cluster.scheduler_address)
    assert there.jobs.equals(here.jobs)
    assert there.lines_read == here.lines_read
