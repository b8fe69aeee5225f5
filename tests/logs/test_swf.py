"""The SWF reader and writer: one test per quirk of the PWA logs, round trips, and the real logs."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings

from gridtrace.errors import LogParseError
from gridtrace.logs import detect_format, parse_logs, read_swf, write_swf
from gridtrace.logs._swf import SWF_FIELDS, looks_like_swf, parse_swf_header
from gridtrace.schema import JOBS, conform, validate

# the columns an SWF file carries (everything else in ``jobs`` is null or provenance)
SWF_COLUMNS = (
    "job_id_raw",
    "job_seq",
    "user",
    "group",
    "queue",
    "submit_time",
    "start_time",
    "end_time",
    "wait_s",
    "run_s",
    "walltime_used_s",
    "walltime_req_s",
    "cores_req",
    "cores_alloc",
    "mem_req_bytes",
    "mem_used_bytes",
    "exit_code",
    "state",
    "tz_offset_s",
)

UTC = dt.UTC


def _read(tmp_path: Path, text: str, **kwargs: Any) -> Any:
    path = tmp_path / "site.swf"
    path.write_text(text)
    return read_swf(path, **kwargs)


def _row(result: Any, index: int = 0) -> dict[str, Any]:
    return dict(result.jobs.slice(index, 1).to_pylist()[0])


def _at(seconds: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, tz=UTC)


# ------------------------------------------------------------------ one test per quirk


def test_first_job_line_is_kept(tmp_path: Path) -> None:
    # parsers.md §9 item 25: evalys drops the first non-comment line
    result = _read(tmp_path, "1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    validate(result.jobs, "jobs")
    assert result.jobs.num_rows == 1
    job = _row(result)
    assert job["job_id_raw"] == "1"
    assert job["job_seq"] == 1
    assert (job["wait_s"], job["run_s"], job["walltime_req_s"]) == (10, 100, 200)
    assert (job["cores_alloc"], job["cores_req"]) == (4, 4)
    assert job["state"] == "COMPLETED"
    assert job["submit_time"] == _at(0)
    assert job["start_time"] == _at(10)
    assert job["end_time"] == _at(110)
    assert job["flags"] == ["TIME_RELATIVE"]


def test_times_from_unix_start_time(tmp_path: Path) -> None:
    text = "; UnixStartTime: 1000000000\n1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
    job = _row(_read(tmp_path, text))
    assert job["submit_time"] == _at(1_000_000_000)
    assert job["end_time"] == _at(1_000_000_110)
    assert job["flags"] is None


def test_minus_one_is_null_everywhere(tmp_path: Path) -> None:
    # data.md, SWF quirk 3: the LCG log has no wait and no status
    line = "188041    950392      -1   11499    1      -1      -1   -1   14400      -1 -1  190    6   -1 -1 76     -1      -1"  # noqa: E501 - a literal log line
    job = _row(_read(tmp_path, "; UnixStartTime: 1132444800\n" + line + "\n"))
    assert job["wait_s"] is None
    assert job["start_time"] is None
    assert job["end_time"] is None
    assert job["run_s"] == 11499
    assert job["cpu_time_s"] is None
    assert job["mem_used_bytes"] is None
    assert job["mem_req_bytes"] is None
    assert job["cores_req"] is None
    assert job["queue"] is None
    assert (job["user"], job["group"]) == ("190", "6")
    assert job["state"] == "UNKNOWN"
    assert job["account"] is None  # the partition (76) stays in the records


def test_fractional_fields(tmp_path: Path) -> None:
    # data.md, SWF quirk 2: the CTC log writes the CPU time with decimals
    line = "    1        0 588530    937  306 142.00    -1   -1  35100    -1  1  97  -1 307  3 -1 -1 -1"  # noqa: E501 - a literal log line
    job = _row(_read(tmp_path, line + "\n2 5 10.6 20 1 0.5 1.5 1 -1 -1 1 1 1 -1 1 -1 -1 -1\n"))
    assert job["cpu_time_s"] == pytest.approx(142.0 * 306)
    assert job["cores_alloc"] == 306
    assert job["wait_s"] == 588530
    other = _row(_read(tmp_path, "2 5 10.6 20 1 0.5 1.5 1 -1 -1 1 1 1 -1 1 -1 -1 -1\n"))
    assert other["wait_s"] == 11  # rounded, and said so
    assert other["cpu_time_s"] == 0.5
    assert other["mem_used_bytes"] == 1536
    assert "ROUNDED" in other["flags"]


def test_memory_is_per_processor_kilobytes(tmp_path: Path) -> None:
    job = _row(_read(tmp_path, "1 0 0 10 4 -1 100 8 -1 50 1 1 1 -1 1 -1 -1 -1\n"))
    assert job["mem_used_bytes"] == 100 * 4 * 1024  # used memory × allocated procs
    assert job["mem_req_bytes"] == 50 * 8 * 1024  # requested memory × requested procs


def test_status_five_without_run_time_never_ran(tmp_path: Path) -> None:
    # data.md, SWF quirk 3: LPC cancelled jobs have run −1 and procs 0
    line = " 10153  3634297   84930      -1 0     -1      -1 1     -1     -1 5 -1 -1 -1 2 2 -1 -1"
    job = _row(_read(tmp_path, line + "\n"))
    assert job["state"] == "DELETED"
    assert job["start_time"] is None
    assert job["end_time"] is None
    assert job["run_s"] is None
    assert job["wait_s"] == 84930  # as logged
    assert job["cores_alloc"] == 0
    ran = _row(_read(tmp_path, "1 0 5 60 1 -1 -1 1 -1 -1 5 1 1 -1 1 -1 -1 -1\n"))
    assert ran["state"] == "CANCELLED"
    assert ran["end_time"] == _at(65)


@pytest.mark.parametrize(("status", "state"), [(1, "COMPLETED"), (0, "FAILED"), (-1, "UNKNOWN")])
def test_standard_status(tmp_path: Path, status: int, state: str) -> None:
    job = _row(_read(tmp_path, f"1 0 5 60 1 -1 -1 1 -1 -1 {status} 1 1 -1 1 -1 -1 -1\n"))
    assert job["state"] == state
    assert job["exit_code"] is None


def test_nonstandard_status_is_kept_and_flagged(tmp_path: Path) -> None:
    # data.md, SWF quirk 5: one PWA log stores raw exit codes in the status field
    job = _row(_read(tmp_path, "1 0 5 60 1 -1 -1 1 -1 -1 126 1 1 -1 1 -1 -1 -1\n"))
    assert job["state"] == "UNKNOWN"
    assert job["exit_code"] == 126
    assert "STATUS_NONSTANDARD" in job["flags"]


def test_unsorted_input_is_sorted_and_flagged(tmp_path: Path) -> None:
    text = (
        "1 100 0 10 1 -1 -1 1 -1 -1 1 1 1 -1 1 -1 -1 -1\n"
        "2 50 0 10 1 -1 -1 1 -1 -1 1 1 1 -1 1 -1 -1 -1\n"
        "3 200 0 10 1 -1 -1 1 -1 -1 1 1 1 -1 1 -1 -1 -1\n"
    )
    result = _read(tmp_path, "; UnixStartTime: 0\n" + text)
    assert result.jobs.column("job_seq").to_pylist() == [2, 1, 3]
    assert result.jobs.column("src_line").to_pylist() == [3, 2, 4]
    assert result.jobs.column("flags").to_pylist() == [["UNSORTED"], None, None]
    assert result.info["swf_unsorted_rows"] == 1


def test_unknown_submit_goes_last(tmp_path: Path) -> None:
    # data.md, SWF quirk 4: LLNL-Thunder has records with submit −1
    text = (
        "  298   283646     -1     14   32     -1    -1   32   1800    -1  1  37  -1  78 -1  2 -1 -1\n"  # noqa: E501 - a literal log line
        "  299       -1     -1     -1   -1     -1    -1   -1     -1    -1  1  36  -1  66 -1  2 -1 -1\n"  # noqa: E501 - a literal log line
        "  300   283650     -1     14   32     -1    -1   32   1800    -1  1  37  -1  78 -1  2 -1 -1\n"  # noqa: E501 - a literal log line
    )
    result = _read(tmp_path, text)
    assert result.jobs.column("job_seq").to_pylist() == [298, 300, 299]
    last = _row(result, 2)
    assert last["submit_time"] is None
    assert "SUBMIT_UNKNOWN" in last["flags"]
    assert result.jobs.column("job_key").to_pylist()[2] == "site:299@unknown"


def test_cleaned_log_keeps_its_job_numbers(tmp_path: Path) -> None:
    # data.md, SWF quirk 4: LPC starts at job 9933 and submit 3 585 977 s
    text = (
        ";   UnixStartTime: 1091615532\n"
        "  9933  3585977       4      16 1      2       0 1   7200     -1 1  1  1 -1 2 1 -1 -1\n"
        "  9935  3585997       6       8 1      2       0 1   7200     -1 1  1  1 -1 2 1 -1 -1\n"
    )
    result = _read(tmp_path, text)
    assert result.jobs.column("job_seq").to_pylist() == [9933, 9935]
    assert _row(result)["submit_time"] == _at(1091615532 + 3585977)
    assert _row(result)["job_key"] == f"site:9933@{1091615532 + 3585977}"


def test_free_text_header(tmp_path: Path) -> None:
    # data.md, SWF quirk 1, literal lines: right-aligned keys, trailing comments, no key
    text = (
        ";        MaxNodes: 70  (dual)\n"
        ";        TimeZone: 3600\t # DEPRECATED; use TimeZoneString + tzset()\n"
        ";         submit<=2006-12-18 00:00:00 (1434 jobs removed)\n"
        "; Partition:  8 cclcgceli02.in2p3.fr\n"
        "; Partition:  9 rl.ac.uk\n"
        ";         Version: 2.2a\n"
        ";\n"
        ";    j|       s|      w|\n"
        "1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
    )
    result = _read(tmp_path, text)
    header = result.info["swf_header"]
    assert header["MaxNodes"] == 70
    assert header["TimeZone"] == 3600
    assert header["Partition"] == ["8 cclcgceli02.in2p3.fr", "9 rl.ac.uk"]
    assert header["Version"] == "2.2a"
    assert header["_text"] == [
        "submit<=2006-12-18 00:00:00 (1434 jobs removed)",
        "j|       s|      w|",
    ]
    assert "UnixStartTime" not in header
    records = result.records
    assert records.column("record_type").to_pylist() == ["H"] * 8 + ["J"]
    attrs = [dict(a) for a in records.column("attrs").to_pylist()]
    assert attrs[0] == {"MaxNodes": "70  (dual)"}
    assert attrs[2] == {"text": "submit<=2006-12-18 00:00:00 (1434 jobs removed)"}
    assert attrs[6] == {"text": ""}
    assert list(attrs[8]) == list(SWF_FIELDS)
    assert attrs[8]["status"] == "1"


def test_parse_swf_header_never_fails() -> None:
    header = parse_swf_header(["; Note: a", "Note: b: c", ";", ": no key", "; UnixStartTime: soon"])
    assert header == {"Note": ["a", "b: c"], "_text": [": no key"], "UnixStartTime": "soon"}


def test_time_zone_string_gives_offsets(tmp_path: Path) -> None:
    text = (
        "; UnixStartTime: 1091615532\n;  TimeZoneString: Europe/Paris\n"
        "1 0 0 1 1 -1 -1 1 -1 -1 1 1 1 -1 1 -1 -1 -1\n"
        "2 15000000 0 1 1 -1 -1 1 -1 -1 1 1 1 -1 1 -1 -1 -1\n"
    )
    result = _read(tmp_path, text)
    assert result.jobs.column("tz_offset_s").to_pylist() == [7200, 3600]  # August, December


def test_quarantine_and_reconciliation(tmp_path: Path) -> None:
    text = (
        "; Version: 2.2\n"
        "1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
        "\n"
        "2 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1\n"
        "3 0 10 abc 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
        "4 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1"
    )
    with pytest.warns(UserWarning, match="3 of 6 lines quarantined"):
        result = _read(tmp_path, text)
    assert result.lines_read == 6
    assert result.lines_read == result.lines_parsed + result.lines_quarantined
    assert result.jobs.column("job_seq").to_pylist() == [1, 4]
    assert result.quarantine.column("src_line").to_pylist() == [3, 4, 5]
    assert result.quarantine.column("reason").to_pylist() == [
        "blank line",
        "expected 18 numeric fields, found 17",
        "non-numeric field in a job line",
    ]
    assert result.quarantine.column("raw").to_pylist()[2].startswith(b"3 0 10 abc")
    with pytest.raises(LogParseError, match=r"site\.swf:3: blank line"):
        _read(tmp_path, text, errors="raise")


def test_registry_recognises_swf(tmp_path: Path) -> None:
    path = tmp_path / "x.swf"
    path.write_text("; Version: 2.2\n1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert detect_format(path) == "swf"
    assert parse_logs(path, site="x").jobs.num_rows == 1
    assert looks_like_swf(b"1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert not looks_like_swf(b"05/03/2024 10:00:00;Q;202.pbs01;queue=grid\n")
    assert not looks_like_swf(b"; just a comment\n")
    assert not looks_like_swf(b"")


# ------------------------------------------------------------------ writer


def _jobs(rows: list[dict[str, Any]]) -> pa.Table:
    base = {
        "site": "s",
        "source_format": "swf",
        "attempt": 0,
        "n_attempts": 1,
        "src_file": "f",
        "src_line": 1,
    }
    filled = [{**base, "job_key": f"s:{i}", "job_id_raw": str(i), **r} for i, r in enumerate(rows)]
    return conform(pa.Table.from_pylist(filled, schema=JOBS), "jobs")


def test_writer_header_and_fields(tmp_path: Path) -> None:
    jobs = _jobs(
        [
            {
                "job_seq": 7,
                "submit_time": _at(1_000_000_100),
                "wait_s": 5,
                "run_s": 60,
                "cores_alloc": 4,
                "cpu_time_s": 10.0,
                "user": "alice",
                "queue": "grid",
                "state": "COMPLETED",
            },
            {
                "job_seq": 3,
                "submit_time": _at(1_000_000_000),
                "state": "DELETED",
                "user": "bob",
                "queue": "short",
            },
        ]
    )
    given = {"TimeZoneString": "UTC", "Computer": "c"}
    written = write_swf(jobs, tmp_path / "out.swf", header=given)
    assert (written.rows_in, written.rows_written, dict(written.adjusted)) == (2, 2, {})
    path = written.path
    lines = path.read_text().splitlines()
    header = parse_swf_header(line for line in lines if line.startswith(";"))
    assert header["Version"] == "2.2"
    assert header["UnixStartTime"] == 1_000_000_000
    assert header["TimeZoneString"] == "UTC"
    assert header["Computer"] == "c"
    assert (header["MaxJobs"], header["MaxRecords"]) == (2, 2)
    assert "MaxNodes" not in header
    assert "MaxProcs" not in header  # the largest job is no machine size: nothing is guessed
    assert header["Queue"] == ["2 grid", "1 short"] or header["Queue"] == ["1 short", "2 grid"]
    assert any("gridtrace" in note for note in header["Note"])
    body = [line for line in lines if not line.startswith(";")]
    assert body == [
        "3 0 -1 -1 -1 -1 -1 -1 -1 -1 5 1 -1 -1 1 -1 -1 -1",
        "7 100 5 60 4 2.5 -1 -1 -1 -1 1 2 -1 -1 2 -1 -1 -1",
    ]
    back = read_swf(path).jobs
    assert back.column("state").to_pylist() == ["DELETED", "COMPLETED"]
    assert back.column("cpu_time_s").to_pylist() == [None, 10.0]


def test_writer_keeps_nonstandard_status(tmp_path: Path) -> None:
    result = _read(tmp_path, "1 0 5 60 1 -1 -1 1 -1 -1 126 1 1 -1 1 -1 -1 -1\n")
    path = write_swf(result.jobs, tmp_path / "back.swf").path
    assert "TIME_RELATIVE" in _row(read_swf(path))["flags"]
    assert path.read_text().splitlines()[-1] == "1 0 5 60 1 -1 -1 1 -1 -1 126 1 1 -1 1 -1 -1 -1"


def test_writer_empty_table(tmp_path: Path) -> None:
    path = write_swf(JOBS.empty_table(), tmp_path / "empty.swf")
    result = read_swf(path)
    assert result.jobs.num_rows == 0
    assert result.info["swf_header"]["MaxJobs"] == 0


# ------------------------------------------------------------------ round trips


def _same(a: pa.Table, b: pa.Table, columns: tuple[str, ...] = SWF_COLUMNS) -> None:
    for name in columns:
        assert a.column(name).combine_chunks().equals(b.column(name).combine_chunks()), name
    cpu_a = a.column("cpu_time_s").to_numpy().astype(float)
    cpu_b = b.column("cpu_time_s").to_numpy().astype(float)
    np.testing.assert_allclose(cpu_a, cpu_b, rtol=1e-12, atol=1e-9, equal_nan=True)


_maybe = st.one_of(st.none(), st.integers(0, 10**6))


@st.composite
def _job_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    n = draw(st.integers(1, 20))
    rows: list[dict[str, Any]] = []
    for i in range(n):
        submit = draw(st.integers(10**9, 10**9 + 10**7))
        state = draw(st.sampled_from(["COMPLETED", "FAILED", "CANCELLED", "UNKNOWN", "DELETED"]))
        wait = draw(_maybe)
        run = {"DELETED": st.none(), "CANCELLED": st.integers(0, 10**6)}.get(state, _maybe)
        run = draw(run)
        start = None if wait is None or state == "DELETED" else submit + wait
        end = None if start is None or run is None else start + run
        cores = draw(st.one_of(st.none(), st.integers(1, 4096)))
        req = draw(st.one_of(st.none(), st.integers(1, 4096)))
        per_proc_kb = draw(st.one_of(st.none(), st.integers(0, 10**7)))
        rows.append(
            {
                "job_seq": i + 1,
                "job_id_raw": str(i + 1),
                "user": draw(st.one_of(st.none(), st.integers(0, 500).map(str))),
                "group": draw(st.one_of(st.none(), st.integers(0, 50).map(str))),
                "queue": draw(st.one_of(st.none(), st.integers(0, 9).map(str))),
                "submit_time": _at(submit),
                "start_time": None if start is None else _at(start),
                "end_time": None if end is None else _at(end),
                "wait_s": wait,
                "run_s": run,
                "walltime_used_s": run,
                "walltime_req_s": draw(_maybe),
                "cores_alloc": cores,
                "cores_req": req,
                "cpu_time_s": None
                if cores is None
                else draw(
                    st.one_of(st.none(), st.floats(0, 1e9, allow_nan=False, allow_subnormal=False))
                ),
                "mem_used_bytes": None
                if cores is None or per_proc_kb is None
                else per_proc_kb * cores * 1024,
                "state": state,
            }
        )
    rows.sort(key=lambda r: r["submit_time"])
    return rows


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=_job_rows())
def test_jobs_write_read_round_trip(tmp_path: Path, rows: list[dict[str, Any]]) -> None:
    jobs = _jobs(rows)
    path = write_swf(jobs, tmp_path / "rt.swf")
    back = read_swf(path).jobs
    _same(jobs, back, tuple(c for c in SWF_COLUMNS if c != "tz_offset_s"))
    # the only flag: a DELETED job (status 5, no run time) is read back as one that never ran
    deleted = np.array([s == "DELETED" for s in back.column("state").to_pylist()])
    flags = back.column("flags").to_pylist()
    assert [f for f, d in zip(flags, deleted, strict=True) if d] == [["NEVER_RAN"]] * deleted.sum()
    assert all(f is None for f, d in zip(flags, deleted, strict=True) if not d)


_field = st.one_of(st.just("-1"), st.integers(0, 10**6).map(str))
_fraction = st.one_of(_field, st.floats(0, 1e5, allow_nan=False).map(lambda x: f"{x:.2f}"))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(
        st.tuples(
            st.integers(-1, 10**6),
            st.lists(_field, min_size=3, max_size=3),
            # a decimal CPU time, whole KB of memory: the fields SWF writes as they are read
            st.tuples(_fraction, _field),
            st.lists(_field, min_size=3, max_size=3),
            st.sampled_from(["-1", "0", "1", "5", "126"]),
            st.lists(_field, min_size=7, max_size=7),
        ),
        min_size=1,
        max_size=20,
    ),
    origin=st.one_of(st.none(), st.integers(0, 2 * 10**9)),
)
# no submit time known: the header's UnixStartTime stands (CI once drew this and saw it rewritten)
@example(lines=[(-1, ["-1"] * 3, ("-1", "-1"), ["-1"] * 3, "-1", ["-1"] * 7)], origin=1)
def test_read_write_read_is_stable(
    tmp_path: Path, lines: list[tuple[Any, ...]], origin: int | None
) -> None:
    body = []
    for number, (submit, first, fractions, requested, status, rest) in enumerate(lines):
        fields = [str(number + 1), str(submit), *first, *fractions, *requested, status, *rest]
        body.append(" ".join(fields))
    header = "" if origin is None else f"; UnixStartTime: {origin}\n"
    first = _read(tmp_path, header + "\n".join(body) + "\n", status="swf")
    path = write_swf(first.jobs, tmp_path / "again.swf", header=first.info["swf_header"])
    second = read_swf(path, site="site", status="swf")
    _same(first.jobs, second.jobs)
    assert second.info["swf_header"] == first.info["swf_header"]


# ------------------------------------------------------------------ real data

REAL_SWF = {
    "CEA-Curie-2011-2.1-cln.swf.gz": 312_826,
    "CTC-SP2-1996-3.1-cln.swf.gz": 77_222,
    "HPC2N-2002-2.2-cln.swf.gz": 202_871,
    "KTH-SP2-1996-2.1-cln.swf.gz": 28_476,
    "LANL-CM5-1994-4.1-cln.swf.gz": 122_060,
    "LCG-2005-1.swf.gz": 188_041,
    "LLNL-Atlas-2006-2.1-cln.swf.gz": 43_778,
    "LLNL-Thunder-2007-1.1-cln.swf.gz": 121_039,
    "LPC-EGEE-2004-1.2-cln.swf.gz": 234_889,
    "NASA-iPSC-1993-3.1-cln.swf.gz": 18_239,
    "OSC-Clust-2000-3.1-cln.swf.gz": 36_097,
    "RICC-2010-2.swf.gz": 447_794,
    "lublin_256.swf.gz": 10_000,
    "lublin_256_new2.swf.gz": 10_000,
}


@pytest.mark.realdata
def test_every_real_file_is_listed(real_data: Path) -> None:
    assert {p.name for p in (real_data / "swf").iterdir()} == set(REAL_SWF)


@pytest.mark.realdata
@pytest.mark.parametrize("name", sorted(REAL_SWF))
def test_real_file_parses_and_round_trips(real_data: Path, tmp_path: Path, name: str) -> None:
    path = real_data / "swf" / name
    assert detect_format(path) == "swf"
    first = read_swf(path)
    validate(first.jobs, "jobs")
    assert first.jobs.num_rows == REAL_SWF[name]
    assert first.lines_quarantined == 0
    assert first.lines_read == first.lines_parsed
    header = first.info["swf_header"]
    if name.startswith("lublin"):
        assert "UnixStartTime" not in header
    else:
        assert isinstance(header["UnixStartTime"], int)
        assert header["MaxJobs"] >= REAL_SWF[name]  # a cleaned log keeps the original count
    assert first.info["swf_exit_code_files"] == []  # no PWA log holds exit codes
    assert first.jobs.column("exit_code").null_count == first.jobs.num_rows
    # the header travels in the table (and so in jobs.parquet): written back without passing it
    parquet = tmp_path / "jobs.parquet"
    pq.write_table(first.jobs, parquet)
    out = write_swf(pq.read_table(parquet), tmp_path / name.removesuffix(".gz"))
    assert out.rows_written == REAL_SWF[name]
    assert dict(out.adjusted) == {}
    second = read_swf(out, site=first.jobs.column("site")[0].as_py())
    assert second.lines_quarantined == 0
    _same(first.jobs, second.jobs)
    assert second.info["swf_header"] == header  # exact, header included


@pytest.mark.realdata
def test_real_quirks(real_data: Path) -> None:
    lpc = read_swf(real_data / "swf" / "LPC-EGEE-2004-1.2-cln.swf.gz")
    assert lpc.jobs.column("job_seq")[0].as_py() == 9933
    assert lpc.info["swf_header"]["MaxNodes"] == 70
    assert lpc.tz_offset_s in (3600, 7200)
    thunder = read_swf(real_data / "swf" / "LLNL-Thunder-2007-1.1-cln.swf.gz")
    submit = thunder.jobs.column("submit_time").drop_null().cast(pa.int64()).to_numpy()
    assert (np.diff(submit) >= 0).all()
    assert thunder.jobs.column("wait_s").null_count == thunder.jobs.num_rows


def test_crlf_and_non_utf8_header(tmp_path: Path) -> None:
    path = tmp_path / "site.swf"
    path.write_bytes(
        b"; Installation: Universit\xe9\r\n; UnixStartTime: 10\r\n"
        b"1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\r\n"
    )
    result = read_swf(path)
    assert result.lines_quarantined == 0
    assert _row(result)["submit_time"] == _at(10)
    # Latin-1 bytes are decoded by the stated fallback (Windows-1252) and flagged
    assert result.info["swf_header"]["Installation"] == "Université"
    assert result.records.column("flags").to_pylist() == [["NON_UTF8", "CRLF"], ["CRLF"], ["CRLF"]]
    assert result.records.column("raw")[0].as_py() == b"; Installation: Universit\xe9\r"


def test_values_beyond_the_column_range_are_null_and_flagged(tmp_path: Path) -> None:
    # found by the fuzzer: 4e8 KB per processor × 3e7 processors × 1024 overflows int64, and
    # 3e9 processors does not fit the int32 core columns; neither may wrap around or crash
    text = (
        "1 0 0 0 0 0 0 30000000 0 .4E9 0 0 0 0 0 0 0 0\n"
        "2 0 0 0 3000000000 -1 -1 4 -1 -1 1 1 1 -1 1 -1 -1 -1\n"
        "3 0 0 10 4 -1 -1 4 -1 -1 1 1 1 -1 1 -1 -1 -1\n"
    )
    jobs = _read(tmp_path, text).jobs.to_pylist()
    assert jobs[0]["mem_req_bytes"] is None
    assert jobs[0]["cores_req"] == 30_000_000
    assert jobs[1]["cores_alloc"] is None
    assert "OUT_OF_RANGE" in jobs[0]["flags"]
    assert "OUT_OF_RANGE" in jobs[1]["flags"]
    assert "OUT_OF_RANGE" not in (jobs[2]["flags"] or [])
    assert jobs[2]["cores_alloc"] == 4
