"""Byte-range splits of one big file: every byte in one range, no record lost or duplicated."""

from __future__ import annotations

import gzip
import itertools
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings

from gridtrace.cli import main
from gridtrace.errors import ConfigError, DataQualityWarning
from gridtrace.logs import _ranges as ranges_module
from gridtrace.logs import parse_logs
from gridtrace.logs._base import FileParse
from gridtrace.logs._io import MAX_LINE_BYTES, REASON_LINE_TOO_LONG, REASON_STOPPED
from gridtrace.logs._ranges import (
    SPLIT_FORMATS,
    ByteRange,
    join_ranges,
    plan_ranges,
    range_seed,
    split_file,
    tokenize_range,
)
from gridtrace.logs._registry import _tokenize
from gridtrace.logs._sge import SGE_FIELDS
from gridtrace.logs._spill import spill_parse

SITE = "s"

# --------------------------------------------------------------------------- generated logs
# each damaged in the ways its reader repairs or quarantines: CRLF, NUL, non-UTF-8, blank,
# junk, and a last line cut short without a line end


def _damage(i: int, line: bytes) -> bytes:
    if i % 11 == 0:
        line += b"\r"
    if i % 19 == 0:
        line = b"\x00\x00" + line
    if i % 23 == 0:
        line = b""
    if i % 31 == 0:
        line = b"\xff\xfe not text \xe9"
    return line


_CLEAN_HEAD = 200  # SWF and GWF are recognised by their first 200 lines: damage comes after


def _swf(jobs: int = 400) -> bytes:
    lines = [b"; Version: 2.2", b"; Computer: a cluster", b"; MaxProcs: 140  (dual)", b";   two"]
    for i in range(1, jobs + 1):
        line = f"{i} {10 * i} 5 {100 + i % 7} 4 -1 -1 4 3600 -1 1 {1 + i % 5} 1 -1 1 -1 -1 -1"
        lines.append(_damage(i, line.encode()) if i > _CLEAN_HEAD else line.encode())
        if i % 97 == 0:  # a comment further down, continued on the next line
            lines += [b"; Note: a note", b";       going on"]
    return b"\n".join(lines) + b"\n401 40"


def _gwf(jobs: int = 400) -> bytes:
    lines = [b"# Version: 1.0", b"# Information: http://example.org/a", b"#    and more"]
    for i in range(1, jobs + 1):
        line = (
            f"{i} {1108892424 + 60 * i} 3 {50 + i % 9} 2 50.5 1024 2 900 -1 1 U{i % 4} G1 -1 0 "
            "-1 fs0 fs0 UNITARY -1 -1 -1 -1 -1 -1 -1 -1 -1 -1"
        )
        lines.append(_damage(i, line.encode()) if i > _CLEAN_HEAD else line.encode())
        if i % 89 == 0:
            lines += [b"# Note: a note", b"#       going on"]
    return b"\n".join(lines) + b"\n999 11088"


def _slurm(jobs: int = 300) -> bytes:
    lines = [b"JobID|JobIDRaw|User|State|Submit|Start|End|NCPUS|JobName"]
    for i in range(1, jobs + 1):
        line = (
            f"{i}|{i}|u{i % 5}|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:01:00|"
            f"2024-01-01T00:0{2 + i % 5}:00|{1 + i % 8}|job|with|pipes {i}"
        )
        lines.append(_damage(i, line.encode()))
        if i % 7 == 0:
            lines.append(f"{i}.batch|{i}.batch||COMPLETED||||1|batch".encode())
    return b"\n".join(lines) + b"\n999|999|u|RUNN"


def _sge_job(i: int, width: int = 45, name: str = "sim.sh") -> bytes:
    values = dict.fromkeys(SGE_FIELDS, "0")
    values.update(
        qname="long.q", hostname=f"n{i % 9:02d}", group="atlas", owner=f"u{i % 5}",
        job_name=name, job_number=str(1000 + i), account="sge",
        submission_time=str(1714723000 + i), start_time=str(1714723100 + i),
        end_time=str(1714726700 + i), ru_wallclock="3600", granted_pe="NONE", slots="1",
        cpu="3520.75", category="-l h_rt=7200", pe_taskid="NONE",
    )  # fmt: skip
    fields = [values[f] for f in SGE_FIELDS] + [str(i)] * (width - len(SGE_FIELDS))
    return ":".join(fields[:width]).encode()


def _sge(jobs: int = 300) -> bytes:
    lines = [b"# Version: 8.1.9", b"# ", b"# DO NOT MODIFY THIS FILE MANUALLY!"]
    for i in range(1, jobs + 1):
        line = _sge_job(i)
        if i % 17 == 0:
            line = _sge_job(i, name="run:x")  # a surplus ':' re-aligned to the file's width
        if i % 29 == 0:
            line = _sge_job(i, width=47)
        lines.append(_damage(i, line))
    return b"\n".join(lines) + b"\n" + _sge_job(jobs + 1)[:120]


def _torque(jobs: int = 200) -> bytes:
    lines = []
    for i in range(1, jobs + 1):
        stamp = f"05/0{1 + i % 3}/2024 10:{i % 60:02d}:00"
        job = f"{100 + i}.srv"
        end = (
            f"{stamp};E;{job};user=u{i % 4} group=g queue=batch ctime={1714550000 + i} "
            f"start={1714550400 + i} end={1714554000 + i} Exit_status=0 "
            "resources_used.walltime=01:00:00"
        )
        if i == jobs - 5:
            end += " run_count=1"  # a PBS Pro marker, late in the file: every range says pbspro
        lines.append(f"{stamp};Q;{job};queue=batch".encode())
        lines.append(_damage(i, f"{stamp};S;{job};user=u{i % 4} start={1714550400 + i}".encode()))
        lines.append(_damage(i + 1, end.encode()))
    return b"\n".join(lines) + b"\n05/03/2024 11:00:00;E;99"


LOGS: dict[str, Callable[[], bytes]] = {
    "swf": _swf,
    "gwf": _gwf,
    "slurm": _slurm,
    "sge": _sge,
    "torque": _torque,
}


def _here(function: Callable[..., Any], calls: list[tuple[Any, ...]]) -> list[Any]:
    return [function(*args) for args in calls]


def _read_ranges(name: str, ranges: list[ByteRange]) -> list[FileParse]:
    seed = range_seed(name, ranges, SITE, _here) if len(ranges) > 1 else None
    return [tokenize_range(name, rng, SITE, seed) for rng in ranges]


def _same(a: FileParse, b: FileParse) -> None:
    assert a.src_file == b.src_file
    assert a.lines_read == b.lines_read
    assert a.records.equals(b.records)
    assert a.quarantine.equals(b.quarantine)


def _check_cover(data: bytes, ranges: list[ByteRange]) -> None:
    """Every byte in exactly one range; ranges start at line starts, numbered from there."""
    assert ranges[0].start == 0
    assert ranges[-1].end == len(data)
    for before, after in itertools.pairwise(ranges):
        assert before.end == after.start
        assert before.start < before.end
    for i, rng in enumerate(ranges):
        assert (rng.index, rng.count) == (i, len(ranges))
        assert rng.first_line == data[: rng.start].count(b"\n") + 1
        if rng.start:
            assert data[rng.start - 1] == ord("\n")


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, bytes, FileParse]]:
    folder = tmp_path_factory.mktemp("logs")
    out = {}
    for name, make in LOGS.items():
        data = make()
        path = folder / f"log.{name}"
        path.write_bytes(data)
        whole = _tokenize(name, str(path), SITE)
        assert whole.quarantine.num_rows > 5  # damaged in every way
        out[name] = (path, data, whole)
    return out


# --------------------------------------------------------------------------- the property


@pytest.mark.parametrize("name", sorted(LOGS))
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cuts=st.lists(st.floats(0, 1), max_size=8))
def test_any_split_reads_as_the_whole_file(
    logs: dict[str, tuple[Path, bytes, FileParse]], name: str, cuts: list[float]
) -> None:
    path, data, whole = logs[name]
    at = [int(c * len(data)) for c in cuts]
    ranges = split_file(path, at, align_lines=1, may_start=ranges_module._may_start(name))
    _check_cover(data, ranges)
    parts = _read_ranges(name, ranges)
    for part in parts:  # lines read = parsed + quarantined, per range
        assert part.lines_read == part.records.num_rows + part.quarantine.num_rows
    _same(join_ranges(parts), whole)


def test_every_line_start_is_a_range(logs: dict[str, tuple[Path, bytes, FileParse]]) -> None:
    path, data, whole = logs["torque"]
    ranges = split_file(path, range(1, len(data)), align_lines=1)
    assert len(ranges) == data.count(b"\n") + 1  # one range a line: the last has no line end
    _check_cover(data, ranges)
    _same(join_ranges(_read_ranges("torque", ranges)), whole)
    assert set(whole.records.column("source_format").to_pylist()) == {"pbspro"}


@st.composite
def _swf_lines(draw: st.DrawFn) -> bytes:
    kinds = st.sampled_from(["job", "job", "job", "key", "more", "text", "blank", "crlf", "nul"])
    lines = []
    for i, kind in enumerate(draw(st.lists(kinds, min_size=0, max_size=40)), start=1):
        job = f"{i} {i} 5 100 4 -1 -1 4 3600 -1 1 1 1 -1 1 -1 -1 -1".encode()
        lines.append(
            {
                "job": job,
                "key": b"; MaxNodes: 12",
                "more": b";         (dual)",
                "text": b"; some words",
                "blank": b"",
                "crlf": job + b"\r",
                "nul": b"\x00" + job,
            }[kind]
        )
    end = draw(st.sampled_from([b"\n", b"", b"\n\n"]))
    return b"\n".join(lines) + end if lines else b""


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=_swf_lines(), cuts=st.lists(st.floats(0, 1), max_size=6))
def test_any_swf_log_any_split(tmp_path: Path, data: bytes, cuts: list[float]) -> None:
    path = tmp_path / "log.swf"
    path.write_bytes(data)
    ranges = split_file(path, [int(c * len(data)) for c in cuts], align_lines=1)
    _check_cover(data, ranges) if data else None
    _same(join_ranges(_read_ranges("swf", ranges)), _tokenize("swf", str(path), SITE))


def test_a_range_starts_only_after_a_job_line_in_swf_and_gwf(
    logs: dict[str, tuple[Path, bytes, FileParse]],
) -> None:
    for name in ("swf", "gwf"):
        path, data, _ = logs[name]
        ranges = split_file(path, range(1, len(data)), align_lines=1, may_start=None)
        starts = split_file(
            path, range(1, len(data)), align_lines=1, may_start=ranges_module._may_start(name)
        )
        assert len(starts) < len(ranges)  # comment and blank lines are never right before one
        for rng in starts[1:]:
            previous = data[: rng.start - 1].rsplit(b"\n", 1)[-1]
            assert previous.lstrip(b" \t\r\x00")[:1].isdigit()


def test_range_starts_follow_whole_windows(tmp_path: Path) -> None:
    path = tmp_path / "log.swf"
    data = b"".join(f"{i} 1\n".encode() for i in range(1, 1001))
    path.write_bytes(data)
    ranges = split_file(path, range(1, len(data), 97), align_lines=64)
    _check_cover(data, ranges)
    assert [r.first_line for r in ranges] == list(range(1, 1001, 64))


# --------------------------------------------------------------------------- edge files


def test_an_empty_file_is_one_empty_range(tmp_path: Path) -> None:
    path = tmp_path / "empty.swf"
    path.write_bytes(b"")
    (rng,) = split_file(path, [0, 1, 5], align_lines=1)
    assert (rng.start, rng.end, rng.first_line) == (0, 0, 1)
    _same(join_ranges(_read_ranges("swf", [rng])), _tokenize("swf", str(path), SITE))


def test_one_huge_line_is_one_range_quarantined_as_the_whole_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.swf"
    path.write_bytes(b"1 " * (MAX_LINE_BYTES // 2 + 10))  # one line, no line end, over the limit
    ranges = split_file(path, [10, 1000, MAX_LINE_BYTES], align_lines=1)
    assert len(ranges) == 1
    parsed = join_ranges(_read_ranges("swf", ranges))
    _same(parsed, _tokenize("swf", str(path), SITE))
    assert parsed.quarantine.column("reason")[0].as_py().startswith(REASON_LINE_TOO_LONG)


@pytest.mark.parametrize("name", ["swf", "torque", "sge"])
def test_an_over_long_line_between_ranges(tmp_path: Path, name: str) -> None:
    data = LOGS[name]()
    middle = data.index(b"\n", len(data) // 2) + 1
    data = data[:middle] + b"x" * (MAX_LINE_BYTES + 5) + b"\n" + data[middle:]
    path = tmp_path / f"long.{name}"
    path.write_bytes(data)
    cuts = [middle - 3, middle + 10, middle + MAX_LINE_BYTES + 6, len(data) - 100]
    ranges = split_file(path, cuts, align_lines=1, may_start=ranges_module._may_start(name))
    assert len(ranges) >= 3
    parts = _read_ranges(name, ranges)
    cut = [p for p in parts if REASON_LINE_TOO_LONG in str(p.quarantine.column("reason"))]
    assert len(cut) == 1  # the line is in one range, quarantined once
    _same(join_ranges(parts), _tokenize(name, str(path), SITE))


@pytest.mark.slow
def test_a_stopped_file_stops_at_the_same_line_whatever_the_split(tmp_path: Path) -> None:
    """The garbage test's windows fall on range starts: the stop and its row are the whole's."""
    job = "{} 10 5 100 4 -1 -1 4 3600 -1 1 1 1 -1 1 -1 -1 -1"
    lines = [job.format(i).encode() for i in range(1, 130_001)]
    lines += [b""] * 230_000 + [job.format(i).encode() for i in range(1, 50_000)]
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / "stops.swf"
    path.write_bytes(data)
    whole = _tokenize("swf", str(path), SITE)
    assert whole.quarantine.column("reason")[-1].as_py().startswith(REASON_STOPPED)
    for cuts in ([len(data) // 3], [len(data) // 4, len(data) // 2, len(data) - 10]):
        ranges = split_file(path, cuts, may_start=ranges_module._may_start("swf"))
        assert all((r.first_line - 1) % 100_000 == 0 for r in ranges)
        _same(join_ranges(_read_ranges("swf", ranges)), whole)


# --------------------------------------------------------------------------- what is not split


def test_compressed_and_other_formats_are_one_range_and_say_why(tmp_path: Path) -> None:
    data = _swf()
    packed = tmp_path / "log.swf.gz"
    packed.write_bytes(gzip.compress(data, mtime=0) + b"\x00" * len(data))  # big enough
    plain = tmp_path / "log.swf"
    plain.write_bytes(data)
    assert plan_ranges("swf", packed, 1000)[1] == "compressed"
    assert len(plan_ranges("swf", packed, 1000)[0]) == 1
    assert plan_ranges("lsf", plain, 1000)[1] == "format"
    assert plan_ranges("htcondor", plain, 1000)[1] == "format"
    assert plan_ranges("swf", plain, len(data))[1] == "small"
    assert set(SPLIT_FORMATS) == {"torque", "swf", "gwf", "slurm", "sge"}
    with pytest.raises(ConfigError):
        plan_ranges("swf", plain, 0)
    with pytest.raises(ConfigError):
        tokenize_range("lsf", ByteRange(str(plain), 0, 10, 1, 0, 1), SITE)


# --------------------------------------------------------------------------- on process workers


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Range starts at any line (exact for files of fewer lines than one garbage window)."""
    monkeypatch.setattr(ranges_module, "_ALIGN_LINES", 1)


def test_parse_logs_on_two_process_workers_equals_one(tmp_path: Path, small_windows: None) -> None:
    pytest.importorskip("distributed")
    folder = tmp_path / "site"
    folder.mkdir()
    for name, make in LOGS.items():
        (folder / f"a.{name}").write_bytes(make())
    (folder / "b.swf.gz").write_bytes(gzip.compress(_swf(3000), mtime=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        here = parse_logs(folder, site=SITE, tz="UTC")
        there = parse_logs(folder, site=SITE, tz="UTC", workers=2, processes=True, split_bytes=4096)
    assert there.info["byte_ranges"]["files_split"] == len(LOGS)
    assert there.info["byte_ranges"]["ranges"] > 3 * len(LOGS)
    assert there.info["byte_ranges"]["not_split_compressed"] == 1
    assert there.records.equals(here.records)
    assert there.jobs.equals(here.jobs)
    assert there.quarantine.equals(here.quarantine)
    assert there.files == here.files
    summary = there.summary()
    del summary["byte_ranges"]
    assert summary == here.summary()


@pytest.mark.parametrize("name", ["slurm", "sge"])
def test_spill_parse_by_ranges_on_two_workers_equals_one_whole(
    tmp_path: Path, small_windows: None, name: str
) -> None:
    files = [tmp_path / f"a.{name}", tmp_path / f"b.{name}"]
    files[0].write_bytes(LOGS[name]())
    files[1].write_bytes(LOGS[name]()[:5000])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        whole = spill_parse(
            name, [str(f) for f in files], tmp_path / "one", site=SITE, tz="UTC", partitions=3,
            split_bytes=None,
        )  # fmt: skip
        split = spill_parse(
            name, [str(f) for f in files], tmp_path / "two", site=SITE, tz="UTC", partitions=3,
            workers=2, split_bytes=4096,
        )  # fmt: skip
    counts = split.summary.pop("byte_ranges")
    assert counts["files_split"] == 2
    assert counts["ranges"] > 4
    assert split.summary == whole.summary
    for table in ("records", "jobs", "quarantine"):
        one = pq.read_table(tmp_path / "one" / f"{table}.parquet")
        two = pq.read_table(tmp_path / "two" / f"{table}.parquet")
        assert two.equals(one), table


def test_torque_is_spilled_whole(tmp_path: Path, small_windows: None) -> None:
    path = tmp_path / "20240501"
    path.write_bytes(_torque())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        done = spill_parse("torque", [str(path)], tmp_path / "out", site=SITE, split_bytes=4096)
    assert done.summary["byte_ranges"]["files_split"] == 0
    assert done.summary["byte_ranges"]["not_split_format"] == 1


def test_a_file_stopped_in_a_range_is_spilled_as_the_whole_read(tmp_path: Path) -> None:
    """The ranges after the one the garbage test stops in are dropped, as the whole read."""
    good = [_sge_job(i) for i in range(1, 5001)]
    lines = good + [b""] * 205_000 + [_sge_job(i) for i in range(6001, 8001)]
    path = tmp_path / "stops.sge"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        whole = spill_parse("sge", [str(path)], tmp_path / "one", site=SITE, split_bytes=None)
        split = spill_parse("sge", [str(path)], tmp_path / "two", site=SITE, split_bytes=1000)
    assert split.summary.pop("byte_ranges")["ranges"] == 3  # at lines 100,001 and 200,001
    assert split.summary == whole.summary
    assert whole.summary["lines_read"] == 200_001  # stopped after line 200,000: one row more
    for table in ("records", "jobs", "quarantine"):
        one = pq.read_table(tmp_path / "one" / f"{table}.parquet")
        assert pq.read_table(tmp_path / "two" / f"{table}.parquet").equals(one), table
    reasons = pq.read_table(tmp_path / "two" / "quarantine.parquet").column("reason")
    assert reasons[-1].as_py().startswith(REASON_STOPPED)


def test_gridtrace_parse_split_bytes(tmp_path: Path, small_windows: None) -> None:
    path = tmp_path / "a.slurm"
    path.write_bytes(_slurm())
    common = ["parse", str(path), "--spill", "--tz", "UTC", "--no-progress"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        assert main([*common, "-o", str(tmp_path / "one"), "--split-bytes", "0"]) == 0
        assert main([*common, "-o", str(tmp_path / "two"), "--split-bytes", "4096"]) == 0
    one = json.loads((tmp_path / "one" / "parse-summary.json").read_text())
    two = json.loads((tmp_path / "two" / "parse-summary.json").read_text())
    assert "byte_ranges" not in one
    assert two.pop("byte_ranges")["files_split"] == 1
    assert two == one


def test_ranges_are_equal_and_shared_evenly_among_the_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file cut for 2 workers gets an even number of ranges of about the same size."""
    monkeypatch.setattr(ranges_module, "_ALIGN_LINES", 1)  # a small file: cut at any line
    data = _swf(4000)
    path = tmp_path / "log.swf"
    path.write_bytes(data)
    split = len(data) * 2 // 9 + 1  # 5 ranges of at most `split` bytes
    alone, _ = plan_ranges("swf", path, split)
    shared, why = plan_ranges("swf", path, split, share_by=2)
    assert why is None
    assert len(alone) == 5
    assert len(shared) == 6
    sizes = [r.end - r.start for r in shared]
    assert max(sizes) <= split
    assert max(sizes) - min(sizes) < 200  # equal cuts, moved to line starts
    whole = tokenize_range("swf", ByteRange(str(path), 0, len(data), 1, 0, 1), SITE)
    _same(join_ranges(_read_ranges("swf", shared)), whole)
