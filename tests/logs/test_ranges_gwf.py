"""GWF split by byte ranges and assembled range by range (on workers): exactly the whole file's."""

from __future__ import annotations

import time
import warnings
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
from gridtrace.logs._ranges import (
    WORKER_ASSEMBLED,
    ByteRange,
    split_file,
)

from .test_ranges_assembly import (
    SITE,
    _same,
    exit_codes_said_once,
    handed_over_in_files,
)
from .test_ranges_assembly import _by_ranges as _by_ranges_of
from .test_ranges_assembly import _whole as _whole_of


def _whole(path: Path) -> ParseResult:
    return _whole_of(path, "gwf")


def _by_ranges(path: Path, ranges: list[ByteRange] | None, folder: str | None = None) -> Any:
    return _by_ranges_of(path, ranges, folder, "gwf")


# --------------------------------------------------------------------------- generated logs


def _job(i: int, submit: int, status: int = 1, user: str | None = None) -> bytes:
    who = user if user is not None else f"U{i % 3}"
    return (
        f"{i} {submit} 5 100 4 -1 -1 4 3600 -1 {status} {who} G1 -1 q{i % 2} -1 site{i % 3} "
        f"-1 -1 -1 -1 -1 -1 -1 -1 -1 -1 vo{i % 2} -1"
    ).encode()


_HEADS = {
    "plain": [b"# Version: 1.0", b"# Computer: a grid"],
    "columns": [b"# JobID SubmitTime WaitTime RunTime", b"#   and so on"],
    "semicolon": [b"; Note: a GWF header", b";        going on"],
    "none": [],
}
_KINDS = ["job"] * 6 + ["dup", "names", "late", "nosubmit", "exit", "key", "more", "blank"]
_KINDS += ["crlf", "nul", "garbage", "partial", "text_id"]


def _line(draw: st.DrawFn, kind: str, i: int, submit: int, jobs: list[bytes]) -> bytes:
    if kind == "dup":
        return jobs[draw(st.integers(0, len(jobs) - 1))] if jobs else _job(i, 5)
    if kind == "names":  # the numbers of an earlier job, another user: no repeat
        if not jobs:
            return _job(i, 5, user="other")
        fields = jobs[draw(st.integers(0, len(jobs) - 1))].rstrip(b"\r").split()
        fields[11] = draw(st.sampled_from([b"other", b"U0", b"U1x"]))
        return b" ".join(fields)
    if kind == "late":
        return _job(i, submit - draw(st.integers(15, 400)))
    if kind == "nosubmit":
        return _job(i, -1)
    if kind == "exit":
        return _job(i, submit, draw(st.sampled_from([2, 3, 7, 137])))
    fixed = {
        "key": b"# Note: a comment among jobs",
        "more": b"#        going on",
        "blank": b"",
        "crlf": _job(i, submit) + b"\r",
        "nul": b"\x00" + _job(i, submit),
        "garbage": b"this line is no job",
        "partial": _job(i, submit)[:9],
        "text_id": b"job-" + _job(i, submit),
    }
    return fixed.get(kind, _job(i, submit))


@st.composite
def _gwf_logs(draw: st.DrawFn) -> bytes:
    """A GWF log with what assembly reconciles over the file: repeats (names compared as text),
    late and unknown submits, statuses outside SWF's set, and damaged lines anywhere."""
    lines = list(_HEADS[draw(st.sampled_from(sorted(_HEADS)))])
    jobs: list[bytes] = []
    submit = 100
    for i, kind in enumerate(draw(st.lists(st.sampled_from(_KINDS), max_size=60)), start=1):
        submit += 10
        line = _line(draw, kind, i, submit, jobs)
        if line[:1].isdigit() and len(line.split()) == 29:  # whole job lines (not "partial")
            jobs.append(line)
        lines.append(line)
    end = draw(st.sampled_from([b"\n", b"", b"\n\n", b"\r\n"]))
    return b"\n".join(lines) + end if lines else b""


def test_gwf_is_assembled_on_the_workers() -> None:
    assert "gwf" in WORKER_ASSEMBLED


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=_gwf_logs(), cuts=st.lists(st.floats(0, 1), max_size=7))
def test_any_split_assembles_as_the_whole_file(
    tmp_path: Path, data: bytes, cuts: list[float]
) -> None:
    path = tmp_path / "log.gwf"
    path.write_bytes(data)
    at = [int(c * len(data)) for c in cuts]
    ranges = split_file(path, at, align_lines=1, may_start=ranges_module._may_start("gwf"))
    _same(_by_ranges(path, ranges), _whole(path))


def test_every_line_a_range_and_the_file_whole(tmp_path: Path) -> None:
    """Ranges of one line each (every line start after a job line), and the file read whole:
    repeats across ranges (and a line with another user's name, no repeat), late rows,
    exit codes, damaged lines, CRLF."""
    lines = [b"# Computer: a grid", b"# MaxJobs: 9"]
    lines += [_job(i, 100 * i) for i in range(1, 30)]
    lines += [_job(3, 300), _job(3, 300, user="someone"), _job(40, 50), b"garbage"]
    lines += [_job(41, -1), _job(42, 9000, 7), _job(43, 9100, 7), _job(44, 9100, 9)]
    lines += [_job(5, 500), b"", _job(45, 9200) + b"\r", _job(46, 9300)[:20]]
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / "log.gwf"
    path.write_bytes(data)
    whole = _whole(path)
    assert whole.info["gwf_duplicate_lines"] == 2
    assert whole.info["gwf_unsorted_rows"] > 0
    assert whole.info["gwf_exit_code_files"] == [str(path)]
    assert whole.info["gwf_orig_sites"] == ["site0", "site1", "site2"]
    assert whole.quarantine.num_rows >= 3
    may_start = ranges_module._may_start("gwf")
    ranges = split_file(path, range(1, len(data)), align_lines=1, may_start=may_start)
    assert len(ranges) > 30  # a range a line, but where a line start follows no job line
    _same(_by_ranges(path, ranges), whole)
    _same(_by_ranges(path, None), whole)  # one file, not split: one range read whole


def test_empty_ranges_a_range_without_jobs_and_an_empty_file(tmp_path: Path) -> None:
    data = b"\n".join([_job(1, 10), b"garbage", b"", b"# Note: x", _job(2, 20), _job(1, 10)])
    path = tmp_path / "log.gwf"
    path.write_bytes(data)
    cut = data.index(b"garbage")
    second = data.index(b"\n", data.index(b"# Note")) + 1
    ranges = [
        ByteRange(str(path), 0, cut, 1, 0, 4),
        ByteRange(str(path), cut, cut, 2, 1, 4),  # empty
        ByteRange(str(path), cut, second, 2, 2, 4),  # no job line in it
        ByteRange(str(path), second, len(data), 5, 3, 4),
    ]
    got = _by_ranges(path, ranges)
    _same(got, _whole(path))
    assert got.info["gwf_duplicate_lines"] == 1  # the last line repeats the first, 3 ranges on
    empty = tmp_path / "empty.gwf"
    empty.write_bytes(b"")
    _same(_by_ranges(empty, [ByteRange(str(empty), 0, 0, 1, 0, 1)]), _whole(empty))


def test_the_whole_file_says_it_holds_exit_codes_once(tmp_path: Path) -> None:
    exit_codes_said_once(tmp_path, "gwf", _job)


def test_tables_handed_over_in_files_are_the_same(tmp_path: Path) -> None:
    got = handed_over_in_files(tmp_path, "gwf", _job)
    assert got.jobs.num_rows == 299  # one repeat, no job lost


def test_names_hashed_alike_are_still_told_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Row hashes only find candidates: rows that differ only in a name are compared exactly."""
    monkeypatch.setattr(ranges_module, "_text_hashes", lambda values: np.zeros(len(values), "u8"))
    lines = [_job(i, 100 * i) for i in range(1, 40)]
    lines += [_job(3, 300, user="someone"), _job(4, 400), _job(5, 500, user="U2x")]
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / "log.gwf"
    path.write_bytes(data)
    ranges = split_file(path, range(1, len(data), 300), align_lines=1)
    assert len(ranges) > 5
    got = _by_ranges(path, ranges)
    assert got.info["gwf_duplicate_lines"] == 1  # _job(4, 400) only
    _same(got, _whole(path))


def test_no_record_lost_or_doubled(tmp_path: Path) -> None:
    """Every line once: job keys and source lines of the split read are the whole read's."""
    lines = [b"# Computer: a grid"] + [_job(i, 7 * (i % 90)) for i in range(1, 400)]
    data = b"\r\n".join(lines) + b"\r\n"
    path = tmp_path / "log.gwf"
    path.write_bytes(data)
    ranges = split_file(path, range(1, len(data), 997), align_lines=1)
    assert len(ranges) > 10
    got = _by_ranges(path, ranges)
    lines_seen = got.records.column("src_line").to_pylist()
    assert lines_seen == list(range(1, len(lines) + 1))
    assert sorted(got.jobs.column("src_line").to_pylist()) == list(range(2, len(lines) + 1))
    assert got.jobs.column("job_key").unique().to_pylist() == got.jobs.column("job_key").to_pylist()
    _same(got, _whole(path))


# --------------------------------------------------------------------------- on process workers


@pytest.mark.slow
def test_parse_logs_on_two_process_workers_assembles_gwf_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("distributed")
    monkeypatch.setattr(ranges_module, "_ALIGN_LINES", 1)
    lines = [b"# Computer: a grid"] + [_job(i, 10 * (i % 500)) for i in range(1, 3000)]
    lines += [_job(17, 170), b"garbage", _job(3001, -1, 9)]
    path = tmp_path / "a.gwf"
    path.write_bytes(b"\n".join(lines) + b"\n")
    spill_dir = tmp_path / "hand"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        here = parse_logs(path, site=SITE)
        there = parse_logs(
            path, site=SITE, workers=2, processes=True, split_bytes=20000, spill_dir=spill_dir
        )
    assert there.info["byte_ranges"]["files_split"] == 1
    assert there.info["byte_ranges"]["ranges"] >= 4
    assert there.records.equals(here.records)
    assert there.jobs.equals(here.jobs)
    assert there.jobs.schema.metadata == here.jobs.schema.metadata
    assert there.quarantine.equals(here.quarantine)
    assert there.info["gwf_duplicate_lines"] == here.info["gwf_duplicate_lines"] == 1
    summary = there.summary()
    del summary["byte_ranges"]
    assert summary == here.summary()
    assert sorted(spill_dir.rglob("*")) == []  # the hand-over files are gone


def test_a_range_failing_on_a_worker_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One range's assembly fails once others wrote their tables: the error comes back, and
    no table is left in the hand-over folder."""
    distributed = pytest.importorskip("distributed")
    from gridtrace.logs import _gwf

    monkeypatch.setattr(ranges_module, "_ALIGN_LINES", 1)
    lines = [_job(i, 10 * i) for i in range(1, 1500)]
    path = tmp_path / "a.gwf"
    path.write_bytes(b"\n".join(lines) + b"\n")
    spill_dir = tmp_path / "hand"
    assemble = _gwf._jobs_of_file

    def fail_last(records: Any, *args: Any, **kwargs: Any) -> Any:
        if records.num_rows and records.column("src_line")[-1].as_py() == len(lines):
            deadline = time.monotonic() + 30
            while not list(spill_dir.rglob("*.arrow")) and time.monotonic() < deadline:
                time.sleep(0.05)
            msg = "this range fails"
            raise OSError(msg)
        return assemble(records, *args, **kwargs)

    monkeypatch.setattr(_gwf, "_jobs_of_file", fail_last)
    # a scheduler's workers (threads of this process, so that they see the patch) hand their
    # tables over in files, as process workers do
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
        ) as cluster,
        pytest.raises(OSError, match="this range fails"),
    ):
        parse_logs(
            path,
            format="gwf",
            site=SITE,
            scheduler=cluster.scheduler_address,
            split_bytes=10000,
            spill_dir=spill_dir,
        )
    assert spill_dir.is_dir()
    assert sorted(spill_dir.rglob("*")) == []


def _fnv(text: str) -> int:
    digest = 0xCBF29CE484222325
    for byte in text.encode():
        digest = ((digest ^ byte) * 0x100000001B3) % (1 << 64)
    return digest ^ len(text.encode())


@settings(max_examples=60, deadline=None)
@given(words=st.lists(st.text(max_size=12), max_size=30), skip=st.integers(0, 5))
def test_text_hashes_are_the_strings_own(words: list[str], skip: int) -> None:
    """The same string hashes alike wherever it sits (sliced, large, chunked arrays)."""
    import pyarrow as pa

    want = [_fnv(w) for w in words[skip:]]
    plain = pa.array(words, pa.string()).slice(skip)
    large = pa.array(words, pa.large_string()).slice(skip)
    chunked = pa.chunked_array([pa.array(words[skip:], pa.string())], pa.string())
    for values in (plain, large, chunked):
        assert ranges_module._text_hashes(values).tolist() == want
