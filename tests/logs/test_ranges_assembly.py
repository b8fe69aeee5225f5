"""SWF split by byte ranges and assembled range by range (on workers): exactly the whole file's."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from gridtrace.errors import DataQualityWarning
from gridtrace.logs import _ranges as ranges_module
from gridtrace.logs import parse_logs
from gridtrace.logs._base import ParseResult
from gridtrace.logs._gwf import assemble_gwf
from gridtrace.logs._ranges import (
    WORKER_ASSEMBLED,
    ByteRange,
    RangeAssembly,
    assembled_result,
    split_file,
)
from gridtrace.logs._registry import _tokenize
from gridtrace.logs._swf import assemble_swf

SITE = "s"


def _submit(function: Any, *args: Any) -> Any:
    return function(*args)  # in this process: a "future" is its result


def _gather(futures: list[Any]) -> list[Any]:
    return list(futures)


_ASSEMBLE = {"swf": assemble_swf, "gwf": assemble_gwf}


def _whole(path: Path, fmt: str = "swf") -> ParseResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        return _ASSEMBLE[fmt]([_tokenize(fmt, str(path), SITE)])


def _by_ranges(
    path: Path, ranges: list[ByteRange] | None, folder: str | None = None, fmt: str = "swf"
) -> Any:
    assembly = RangeAssembly(fmt, [(str(path), ranges)], SITE, [None], _submit, _gather, folder)
    (done,) = assembly.finish()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        return assembled_result(fmt, [done])


def _same(got: ParseResult, want: ParseResult) -> None:
    assert got.records.equals(want.records)
    assert got.jobs.equals(want.jobs)
    assert got.jobs.schema.metadata == want.jobs.schema.metadata  # the header
    assert got.quarantine.equals(want.quarantine)
    assert got.lines_read == want.lines_read
    assert got.lines_read == got.records.num_rows + got.quarantine.num_rows
    assert got.tz_offset_s == want.tz_offset_s
    assert got.info == want.info
    assert got.files == want.files


# --------------------------------------------------------------------------- generated logs


def _job(i: int, submit: int, status: int = 1) -> bytes:
    return f"{i} {submit} 5 100 4 -1 -1 4 3600 -1 {status} {1 + i % 3} 1 -1 1 -1 -1 -1".encode()


_HEADS = {
    "plain": [b"; Version: 2.2", b"; Computer: a cluster"],
    "zone": [b"; UnixStartTime: 1100000000", b"; TimeZoneString: Europe/Berlin"],
    "partial": [b"; MaxJobs: 5", b"; MaxRecords: 9", b";   (two records a job)"],
    "none": [],
}
_KINDS = ["job"] * 6 + ["dup", "late", "nosubmit", "exit", "key", "more", "blank", "crlf"]
_KINDS += ["nul", "garbage", "partial"]


def _line(draw: st.DrawFn, kind: str, i: int, submit: int, jobs: list[bytes]) -> bytes:
    if kind == "dup":
        return jobs[draw(st.integers(0, len(jobs) - 1))] if jobs else _job(i, 5)
    if kind == "late":
        return _job(i, submit - draw(st.integers(15, 400)))
    if kind == "nosubmit":
        return _job(i, -1)
    if kind == "exit":
        return _job(i, submit, draw(st.sampled_from([2, 3, 7, 137])))
    fixed = {
        "key": b"; Note: a comment among jobs",
        "more": b";        going on",
        "blank": b"",
        "crlf": _job(i, submit) + b"\r",
        "nul": b"\x00" + _job(i, submit),
        "garbage": b"this line is no job",
        "partial": _job(i, submit)[:9],
    }
    return fixed.get(kind, _job(i, submit))


@st.composite
def _swf_logs(draw: st.DrawFn) -> bytes:
    """An SWF log with what assembly reconciles over the file: repeats, late and unknown submits,
    statuses outside SWF's set, and damaged lines (quarantined) anywhere."""
    lines = list(_HEADS[draw(st.sampled_from(sorted(_HEADS)))])
    jobs: list[bytes] = []
    submit = 100
    for i, kind in enumerate(draw(st.lists(st.sampled_from(_KINDS), max_size=60)), start=1):
        submit += 10
        line = _line(draw, kind, i, submit, jobs)
        if line[:1].isdigit():
            jobs.append(line)
        lines.append(line)
    end = draw(st.sampled_from([b"\n", b"", b"\n\n"]))
    return b"\n".join(lines) + end if lines else b""


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=_swf_logs(), cuts=st.lists(st.floats(0, 1), max_size=7))
def test_any_split_assembles_as_the_whole_file(
    tmp_path: Path, data: bytes, cuts: list[float]
) -> None:
    path = tmp_path / "log.swf"
    path.write_bytes(data)
    at = [int(c * len(data)) for c in cuts]
    ranges = split_file(path, at, align_lines=1, may_start=ranges_module._may_start("swf"))
    _same(_by_ranges(path, ranges), _whole(path))


def test_every_line_a_range_and_the_file_whole(tmp_path: Path) -> None:
    """Ranges of one line each (every line start after a job line), and the file read whole."""
    lines = [b"; UnixStartTime: 1100000000", b"; MaxJobs: 9"]
    lines += [_job(i, 100 * i) for i in range(1, 30)]
    lines += [_job(3, 300), _job(40, 50), b"garbage", _job(41, -1), _job(42, 9000, 7)]
    lines += [_job(43, 9100, 7), _job(44, 9100, 9), _job(5, 500), b"", _job(45, 9200) + b"\r"]
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / "log.swf"
    path.write_bytes(data)
    whole = _whole(path)
    assert whole.info["swf_duplicate_lines"] == 2
    assert whole.info["swf_unsorted_rows"] > 0
    assert whole.info["swf_exit_code_files"] == [str(path)]
    may_start = ranges_module._may_start("swf")
    ranges = split_file(path, range(1, len(data)), align_lines=1, may_start=may_start)
    assert len(ranges) > 30  # a range a line, but where a line start follows no job line
    _same(_by_ranges(path, ranges), whole)
    _same(_by_ranges(path, None), whole)  # one file, not split: one range read whole


def test_a_range_without_jobs_and_an_empty_file(tmp_path: Path) -> None:
    data = b"\n".join([_job(1, 10), b"garbage", b"", b"; Note: x", _job(2, 20), _job(1, 10)])
    path = tmp_path / "log.swf"
    path.write_bytes(data)
    cut = data.index(b"garbage")
    second = data.index(b"\n", data.index(b"; Note")) + 1
    ranges = [
        ByteRange(str(path), 0, cut, 1, 0, 4),
        ByteRange(str(path), cut, cut, 2, 1, 4),  # empty
        ByteRange(str(path), cut, second, 2, 2, 4),  # no job line in it
        ByteRange(str(path), second, len(data), 5, 3, 4),
    ]
    _same(_by_ranges(path, ranges), _whole(path))
    empty = tmp_path / "empty.swf"
    empty.write_bytes(b"")
    _same(_by_ranges(empty, [ByteRange(str(empty), 0, 0, 1, 0, 1)]), _whole(empty))


def exit_codes_said_once(tmp_path: Path, fmt: str, job: Callable[..., bytes]) -> None:
    """Each range holds too few odd statuses to say so; the file, counted whole, does."""
    lines = [job(i, 10 * i, 7 if i % 40 == 0 else 1) for i in range(1, 201)]
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / f"log.{fmt}"
    path.write_bytes(data)
    ranges = split_file(path, range(1, len(data), len(data) // 10), align_lines=1)
    assert len(ranges) >= 8
    assembly = RangeAssembly(fmt, [(str(path), ranges)], SITE, [None], _submit, _gather)
    (done,) = assembly.finish()
    with pytest.warns(DataQualityWarning, match="5 of 200 known statuses") as seen:
        result = assembled_result(fmt, [done])
    assert len(seen) == 1
    assert result.info[f"{fmt}_exit_code_files"] == [str(path)]
    _same(result, _whole(path, fmt))


def handed_over_in_files(tmp_path: Path, fmt: str, job: Callable[..., bytes]) -> ParseResult:
    """Tables the ranges write to files, mapped and deleted: the whole read's."""
    lines = [job(i, 10 * (i % 50)) for i in range(1, 300)] + [job(7, 70)]
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / f"log.{fmt}"
    path.write_bytes(data)
    folder = tmp_path / "hand"
    folder.mkdir()
    ranges = split_file(path, range(1, len(data), 1000), align_lines=1)
    got: ParseResult = _by_ranges(path, ranges, str(folder), fmt)
    _same(got, _whole(path, fmt))
    assert list(folder.iterdir()) == []  # mapped, then deleted
    return got


def test_the_whole_file_says_it_holds_exit_codes_once(tmp_path: Path) -> None:
    exit_codes_said_once(tmp_path, "swf", _job)


def test_tables_handed_over_in_files_are_the_same(tmp_path: Path) -> None:
    handed_over_in_files(tmp_path, "swf", _job)


def test_swf_and_gwf_are_assembled_on_workers() -> None:
    # one line one job; TORQUE, Slurm and SGE spread a job over records in any range
    assert WORKER_ASSEMBLED == ("swf", "gwf")


# --------------------------------------------------------------------------- on dask workers


def _big_swf(folder: Path) -> Path:
    lines = [b"; Version: 2.2", b"; UnixStartTime: 1100000000", b"; TimeZoneString: UTC"]
    for i in range(1, 3001):
        lines.append(_job(i, 10 * i if i % 301 else 5 * i, 1 if i % 97 else 0))
        if i % 500 == 0:
            lines += [lines[-7], b"this line is no job"]  # a repeat and a damaged line
    path = folder / "a.swf"
    path.write_bytes(b"\n".join(lines) + b"\n")
    (folder / "b.swf").write_bytes(b"\n".join(lines[:40]) + b"\n")  # small: read whole
    return path


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranges_module, "_ALIGN_LINES", 1)


@pytest.mark.parametrize("processes", [False, True])
def test_parse_logs_on_two_workers_assembles_as_one(
    tmp_path: Path, small_windows: None, processes: bool
) -> None:
    pytest.importorskip("distributed")
    folder = tmp_path / "site"
    folder.mkdir()
    _big_swf(folder)
    spill_dir = tmp_path / "hand"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        here = parse_logs(folder, site=SITE)
        there = parse_logs(
            folder, site=SITE, workers=2, processes=processes, split_bytes=8192,
            spill_dir=spill_dir,
        )  # fmt: skip
    assert there.info["byte_ranges"]["files_split"] == 1
    assert there.info["byte_ranges"]["ranges"] > 5
    assert here.info["swf_duplicate_lines"] == 6
    for table in ("records", "jobs", "quarantine"):
        assert getattr(there, table).equals(getattr(here, table)), table
    summary = there.summary()
    del summary["byte_ranges"]
    assert summary == here.summary()
    assert there.info["swf_headers"] == here.info["swf_headers"]
    assert not spill_dir.exists() or list(spill_dir.rglob("*")) == []


def _fail_after_writing(prepared: Any, plan: Any) -> Any:
    """Assemble a range; the file's third range fails once its tables are written."""
    done = _ORIGINAL_ASSEMBLE(prepared, plan)
    if plan.task == 2:
        msg = "this range fails"
        raise OSError(msg)
    return done


_ORIGINAL_ASSEMBLE = ranges_module.assemble_range


def test_a_failing_range_leaves_no_file(
    tmp_path: Path, small_windows: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    distributed = pytest.importorskip("distributed")
    folder = tmp_path / "site"
    folder.mkdir()
    _big_swf(folder)
    (folder / "b.swf").unlink()
    monkeypatch.setattr(ranges_module, "assemble_range", _fail_after_writing)
    spill_dir = tmp_path / "hand"
    # a scheduler's workers (threads of this process, which see the patch) write in files
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
        ) as cluster,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", DataQualityWarning)
        with pytest.raises(OSError, match="this range fails"):
            _parse_on(folder, cluster.scheduler_address, spill_dir)
    assert spill_dir.is_dir()
    assert sorted(spill_dir.rglob("*")) == []


def _parse_on(folder: Path, scheduler: str, spill_dir: Path) -> None:
    parse_logs(folder, site=SITE, scheduler=scheduler, split_bytes=8192, spill_dir=spill_dir)


def test_no_record_lost_or_repeated(tmp_path: Path) -> None:
    """Every line is one record or one quarantine row, each once, whatever the split."""
    lines = [_job(i, 10 * i) for i in range(1, 400)]
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / "log.swf"
    path.write_bytes(data)
    for step in (97, 1000, 4099):
        ranges = split_file(path, range(1, len(data), step), align_lines=1)
        got = _by_ranges(path, ranges)
        assert np.array_equal(got.records.column("src_line").to_numpy(), np.arange(1, 400))
        assert np.array_equal(np.sort(got.jobs.column("src_line").to_numpy()), np.arange(1, 400))


# --------------------------------------------------------------------------- real logs


def _real_swf() -> list[Path]:
    import os

    root = os.environ.get("GRIDTRACE_REAL_DATA")
    if not root:
        pytest.skip("GRIDTRACE_REAL_DATA is not set")
    found = sorted((Path(root) / "swf").glob("*.swf.gz"))
    if not found:
        pytest.skip("no SWF log under GRIDTRACE_REAL_DATA/swf")
    return found


@pytest.mark.slow
def test_real_swf_logs_assemble_by_ranges_as_whole(tmp_path: Path) -> None:
    """The Parallel Workloads Archive's logs, unpacked, cut in 7 ranges: the whole file's tables."""
    import gzip

    for packed in _real_swf():
        path = tmp_path / packed.name.removesuffix(".gz")
        path.write_bytes(gzip.decompress(packed.read_bytes()))
        size = path.stat().st_size
        ranges = split_file(
            path,
            [size * k // 7 for k in range(1, 7)],
            align_lines=1,
            may_start=ranges_module._may_start("swf"),
        )
        assert len(ranges) > 1, packed.name
        _same(_by_ranges(path, ranges), _whole(path))
        path.unlink()


# --------------------------------------------------------------------------- own workers' allocator


def test_own_workers_are_spawned_without_the_nannys_malloc_trim_threshold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The nanny's default MALLOC_TRIM_THRESHOLD_ is dropped for the workers gridtrace starts
    (a user's own variable is still inherited); dask's config otherwise keeps it."""
    dask = pytest.importorskip("dask")
    nanny = pytest.importorskip("distributed.nanny")
    from gridtrace.logs import _registry

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    key = "distributed.nanny.pre-spawn-environ"
    assert "MALLOC_TRIM_THRESHOLD_" in nanny._get_env_variables(key)  # dask's default
    with dask.config.set(_registry._OWN_WORKERS_ENVIRON):
        assert "MALLOC_TRIM_THRESHOLD_" not in nanny._get_env_variables(key)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "1048576")
    with dask.config.set(_registry._OWN_WORKERS_ENVIRON):
        assert "MALLOC_TRIM_THRESHOLD_" not in nanny._get_env_variables(key)  # inherited instead
