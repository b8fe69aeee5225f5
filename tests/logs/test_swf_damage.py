"""SWF and GWF logs with damaged bytes, and fuzzed (issue 16, items 3 and 7).

Crafted cases first (NUL runs, bytes that are not UTF-8, CR LF, a last line cut short, repeated
lines), then each damage applied to a copy of a shared real log, then hypothesis properties: any
bytes or any damage of real lines never crash a reader, every line is read once (lines read =
parsed + quarantined), and a valid file's jobs do not change when garbage is appended to it.
"""

from __future__ import annotations

import gzip
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

from gridtrace.errors import DataQualityWarning
from gridtrace.logs import read_gwf, read_swf
from gridtrace.logs._swf import tokenize_swf, tokenize_swf_reference
from gridtrace.schema import validate

from .test_gwf import _line as gwf_line

JOB = b"1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1"
HEADER = b"; Version: 2.2\n; UnixStartTime: 1091615532\n; MaxProcs: 140\n"
GWF_JOB = gwf_line(JobID="7", SubmitTime="1100000000", WaitTime="3", RunTime="50").encode()

Reader = Callable[..., Any]


def _other(job: bytes) -> bytes:
    """Another job: the same line with job number 9."""
    return b"9" + job[job.index(b" ") :]


def _without_file(table: pa.Table) -> pa.Table:
    return table.drop_columns(["src_file"])


def _read(tmp_path: Path, data: bytes, reader: Reader = read_swf, name: str = "x.log") -> Any:
    path = tmp_path / name
    path.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        warnings.simplefilter("ignore", UserWarning)
        result = reader(path, errors="skip")
    _reconciles(result)
    return result


def _reconciles(result: Any) -> None:
    assert result.lines_read == result.lines_parsed + result.lines_quarantined
    lines = sorted(
        result.records.column("src_line").to_pylist()
        + result.quarantine.column("src_line").to_pylist()
    )
    assert lines == list(range(1, result.lines_read + 1))  # every line once
    validate(result.records, "records")
    validate(result.jobs, "jobs")
    validate(result.quarantine, "quarantine")


# ------------------------------------------------------------------ crafted damage


@pytest.mark.parametrize(("reader", "job"), [(read_swf, JOB), (read_gwf, GWF_JOB)])
def test_nul_runs_around_a_line_are_stripped_and_flagged(
    tmp_path: Path, reader: Reader, job: bytes
) -> None:
    data = b"\x00" * 40 + job + b"\n" + _other(job) + b"\x00\x00\n"
    result = _read(tmp_path, data, reader)
    assert result.jobs.num_rows == 2
    assert result.lines_quarantined == 0
    assert result.summary()["job_flags"]["NUL_STRIPPED"] == 2
    assert result.summary()["record_flags"]["NUL_STRIPPED"] == 2
    assert result.records.column("raw").to_pylist()[0] == b"\x00" * 40 + job  # bytes kept


@pytest.mark.parametrize(("reader", "job"), [(read_swf, JOB), (read_gwf, GWF_JOB)])
def test_a_fragment_with_nul_bytes_is_never_a_job(
    tmp_path: Path, reader: Reader, job: bytes
) -> None:
    # a crash: half a line, the preallocated zeros, then the next line written after restart
    fragment = job[:17] + b"\x00" * 30 + job
    data = job + b"\n" + fragment + b"\n" + b"\x00" * 512 + b"\n"
    result = _read(tmp_path, data, reader)
    assert result.jobs.num_rows == 1
    reasons = result.quarantine.column("reason").to_pylist()
    assert reasons[0].startswith("NUL bytes between the text of the line")
    assert reasons[1].startswith("only NUL bytes")
    assert result.quarantine.column("raw").to_pylist() == [fragment, b"\x00" * 512]


def test_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    data = HEADER + b"; Installation: Universit\xe9 de Clermont\n" + JOB + b"\n"
    data += JOB.replace(b" 1 1 -1 ", b" 1 \xe9 -1 ") + b"\n"
    result = _read(tmp_path, data)
    assert result.info["swf_header"]["Installation"] == "Université de Clermont"
    assert result.summary()["record_flags"] == {"NON_UTF8": 1}
    assert result.jobs.num_rows == 1  # a job line that is not ASCII holds no 18 numbers
    assert result.quarantine.column("raw").to_pylist() == [JOB.replace(b" 1 1 -1 ", b" 1 \xe9 -1 ")]


@pytest.mark.parametrize(("reader", "job"), [(read_swf, JOB), (read_gwf, GWF_JOB)])
def test_crlf_line_ends(tmp_path: Path, reader: Reader, job: bytes) -> None:
    data = (b"; Version: 2.2\n" + job + b"\n").replace(b"\n", b"\r\n")
    result = _read(tmp_path, data, reader)
    assert result.jobs.num_rows == 1
    assert result.summary()["record_flags"] == {"CRLF": 2}
    assert result.jobs.column("flags").to_pylist() in ([None], [["TIME_RELATIVE"]])


@pytest.mark.parametrize(("reader", "job"), [(read_swf, JOB), (read_gwf, GWF_JOB)])
def test_a_last_line_cut_short(tmp_path: Path, reader: Reader, job: bytes) -> None:
    cut = _read(tmp_path, job + b"\n" + job[: len(job) // 2], reader)
    assert cut.jobs.num_rows == 1
    (reason,) = cut.quarantine.column("reason").to_pylist()
    assert reason.startswith("the file's last line has no line end: cut short")
    whole = _read(tmp_path, job + b"\n" + _other(job), reader)
    assert whole.jobs.num_rows == 2  # all its fields are there: a job, though unterminated


@pytest.mark.parametrize(("reader", "job"), [(read_swf, JOB), (read_gwf, GWF_JOB)])
def test_repeated_lines_make_one_job(tmp_path: Path, reader: Reader, job: bytes) -> None:
    other = _other(job)
    result = _read(tmp_path, job + b"\n" + other + b"\n" + job + b"\n  " + job + b"\n", reader)
    assert result.jobs.num_rows == 2
    assert result.lines_parsed == 4
    flags = result.records.column("flags").to_pylist()
    assert flags == [None, None, ["DUPLICATE"], ["DUPLICATE"]]
    key = "swf_duplicate_lines" if reader is read_swf else "gwf_duplicate_lines"
    assert result.info[key] == 2


# ------------------------------------------------------------------ damaged copies of real logs


def _real_head(real_data: Path, lines: int = 400) -> bytes:
    data = gzip.decompress((real_data / "swf" / "LPC-EGEE-2004-1.2-cln.swf.gz").read_bytes())
    return b"\n".join(data.split(b"\n")[:lines]) + b"\n"


@pytest.mark.realdata
def test_each_damage_on_a_copy_of_a_real_log(real_data: Path, tmp_path: Path) -> None:
    clean = _real_head(real_data)
    base = _read(tmp_path, clean)
    n_jobs = base.jobs.num_rows
    assert base.lines_quarantined == 0
    body = clean.split(b"\n")
    first_job = next(i for i, line in enumerate(body) if line and not line.startswith(b";"))

    def damaged(edit: Callable[[list[bytes]], list[bytes]]) -> Any:
        return _read(tmp_path, b"\n".join(edit(list(body))))

    def nul_lead(lines: list[bytes]) -> list[bytes]:
        lines[first_job + 3] = b"\x00" * 64 + lines[first_job + 3]
        return lines

    def nul_fragment(lines: list[bytes]) -> list[bytes]:
        lines[first_job + 3] = lines[first_job + 3][:12] + b"\x00" * 64 + lines[first_job + 4]
        return lines

    def latin1(lines: list[bytes]) -> list[bytes]:
        lines[1] = lines[1] + b" \xe9t\xe9"
        return lines

    def crlf(lines: list[bytes]) -> list[bytes]:
        return [line + b"\r" if line else line for line in lines]

    def cut(lines: list[bytes]) -> list[bytes]:
        return [*lines[:-2], lines[-2][:10]]  # the last job line cut, no line end

    def duplicated(lines: list[bytes]) -> list[bytes]:
        return [
            *lines[: first_job + 10],
            *lines[first_job + 5 : first_job + 10],
            *lines[first_job + 10 :],
        ]

    result = damaged(nul_lead)
    assert (result.jobs.num_rows, result.summary()["job_flags"].get("NUL_STRIPPED")) == (
        n_jobs,
        1,
    )
    result = damaged(nul_fragment)  # the line cut and the line after it: one job lost, said
    assert result.jobs.num_rows == n_jobs - 1
    assert result.quarantine.column("reason")[0].as_py().startswith("NUL bytes between")
    result = damaged(latin1)
    assert result.summary()["record_flags"] == {"NON_UTF8": 1}
    assert result.jobs.equals(base.jobs)
    result = damaged(crlf)
    assert result.summary()["record_flags"]["CRLF"] == result.lines_parsed
    assert result.jobs.column("run_s").equals(base.jobs.column("run_s"))
    result = damaged(cut)
    assert result.jobs.num_rows == n_jobs - 1
    assert result.quarantine.column("reason")[0].as_py().startswith("the file's last line")
    result = damaged(duplicated)
    assert result.jobs.num_rows == n_jobs
    assert result.summary()["record_flags"] == {"DUPLICATE": 5}


# ------------------------------------------------------------------ fuzz


FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
SWF_LINES = [
    b"; Version: 2.2",
    b"; UnixStartTime: 1136070000",
    b"; Information: http://a.example/",
    b";              http://b.example/",
    JOB,
    b"2 5 -1 3600.5 16 3500 1024 16 7200 2048 0 18 3 -1 2 1 1 60",
    b"3 7 0 0 1 -1 -1 1 60 -1 5 17 3 5 1 -1 -1 -1",
]
GWF_LINES = [b"# Version: 1.0", GWF_JOB, GWF_JOB.replace(b"7 ", b"8 ", 1)]


@st.composite
def _damaged(draw: st.DrawFn, lines: list[bytes]) -> bytes:
    """Real lines, each maybe cut, padded with NULs, given foreign bytes or CR, or repeated."""
    out: list[bytes] = []
    for line in draw(st.lists(st.sampled_from(lines), min_size=1, max_size=10)):
        kind = draw(st.sampled_from(["keep", "cut", "nul", "bytes", "cr", "twice", "splice"]))
        if kind == "cut":
            line = line[: draw(st.integers(0, len(line)))]
        elif kind == "nul":
            at = draw(st.integers(0, len(line)))
            line = line[:at] + b"\x00" * draw(st.integers(1, 40)) + line[at:]
        elif kind == "bytes":
            at = draw(st.integers(0, len(line)))
            line = line[:at] + draw(st.binary(min_size=1, max_size=4)) + line[at:]
        elif kind == "cr":
            line += b"\r"
        elif kind == "twice":
            out.append(line)
        elif kind == "splice":
            line = line[: draw(st.integers(0, len(line)))] + draw(st.sampled_from(lines))
        out.append(line)
    return b"\n".join(out) + draw(st.sampled_from([b"", b"\n", b"\r\n"]))


def _fuzz_read(data: bytes, reader: Reader) -> Any:
    with tempfile.TemporaryDirectory() as folder:
        return _read(Path(folder), data, reader)


@pytest.mark.parametrize("reader", [read_swf, read_gwf], ids=["swf", "gwf"])
def test_arbitrary_bytes_never_crash(reader: Reader) -> None:
    @FUZZ
    @given(data=st.binary(max_size=3000))
    def run(data: bytes) -> None:
        if data[:2] == b"\x1f\x8b" or data[:3] in (b"BZh", b"\xfd7z") or data[:4] == b"(\xb5/\xfd":
            return  # a compressed file's magic: refused whole (tests/logs/test_fuzz.py)
        _fuzz_read(data, reader)

    run()


@pytest.mark.parametrize(
    ("reader", "lines"), [(read_swf, SWF_LINES), (read_gwf, GWF_LINES)], ids=["swf", "gwf"]
)
def test_arbitrary_damage_of_valid_lines_never_crashes(reader: Reader, lines: list[bytes]) -> None:
    @FUZZ
    @given(data=_damaged(lines))
    def run(data: bytes) -> None:
        result = _fuzz_read(data, reader)
        # no job is made from a line with NUL bytes between its text
        bad = [
            i + 1 for i, line in enumerate(data.split(b"\n")) if b"\x00" in line.strip(b"\x00 \t\r")
        ]
        assert not set(bad) & set(result.jobs.column("src_line").to_pylist())

    run()


@st.composite
def _garbage(draw: st.DrawFn, lines: list[bytes]) -> bytes:
    """Lines no reader can take for a job: random bytes, crash fragments, halves of job lines."""
    jobs = [line for line in lines if not line.startswith((b";", b"#"))]
    out = []
    for _ in range(draw(st.integers(1, 6))):
        line = draw(st.sampled_from(jobs))
        kind = draw(st.sampled_from(["bytes", "fragment", "half"]))
        if kind == "bytes":
            out.append(draw(st.binary(max_size=200)))
        elif kind == "fragment":  # half a line, NULs, then a whole line: what a crash leaves
            cut = draw(st.integers(1, len(line) - 1))
            out.append(line[:cut] + b"\x00" * draw(st.integers(1, 64)) + line)
        else:
            out.append(line[: draw(st.integers(0, len(line) // 2))])
    return b"\n".join(out) + draw(st.sampled_from([b"", b"\n"]))


@pytest.mark.parametrize(
    ("reader", "lines"), [(read_swf, SWF_LINES), (read_gwf, GWF_LINES)], ids=["swf", "gwf"]
)
def test_garbage_appended_to_a_valid_file_changes_no_job(
    reader: Reader, lines: list[bytes]
) -> None:
    valid = b"\n".join(lines) + b"\n"
    base = _fuzz_read(valid, reader)
    key = "swf_header" if reader is read_swf else "gwf_header"

    @FUZZ
    @given(garbage=_garbage(lines))
    def run(garbage: bytes) -> None:
        result = _fuzz_read(valid + garbage, reader)
        assert _without_file(result.jobs).equals(_without_file(base.jobs))  # jobs unchanged
        assert result.info[key] == base.info[key]  # comments below the jobs are no header
        assert _without_file(result.records.slice(0, len(lines))).equals(
            _without_file(base.records)
        )
        # every line of the garbage is quarantined, or is a comment (kept, setting nothing)
        added = result.records.slice(len(lines))
        assert set(added.column("record_type").to_pylist()) <= {"H"}
        assert result.lines_quarantined + added.num_rows == result.lines_read - len(lines)

    run()


@FUZZ
@given(data=_damaged(SWF_LINES))
def test_the_compiled_scanner_reads_damage_as_the_reference(data: bytes) -> None:
    fast = tokenize_swf(data, site="s", src_file="f")
    ref = tokenize_swf_reference(data, site="s", src_file="f")
    assert fast.lines_read == ref.lines_read
    for name in ref.records.column_names:
        a = fast.records.column(name).combine_chunks()
        assert a.equals(ref.records.column(name).combine_chunks()), name
    assert fast.quarantine.combine_chunks().equals(ref.quarantine.combine_chunks())
