"""SWF and GWF numbers out of range or damaged: each costs its value (null, ``OUT_OF_RANGE``), never
the file, the rest of its line, nor a wrong number.

Inputs a real site could write or damage could make: values beyond int32 (cores) and int64
(ids, times, sizes), ``1e308`` and ``1e400`` (inf once parsed), stamps beyond the years 1-9999,
negative counts, sizes and durations, and the harmless spellings ``-0``, ``+5`` and ``007``.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

from gridtrace.errors import DataQualityWarning
from gridtrace.logs import read_gwf, read_swf, write_swf
from gridtrace.logs._columnar import STAMP_RANGE_S
from gridtrace.logs._gwf import GWF_FIELDS
from gridtrace.logs._swf import SWF_FIELDS, processors_of_headers
from gridtrace.schema import JOBS

ORIGIN = 1_091_615_532
HEADER = f"; UnixStartTime: {ORIGIN}\n; TimeZoneString: Europe/Paris\n"
CLEAN = "1 0 10 100 4 20 1000 4 200 2000 1 7 8 -1 3 2 -1 -1"
OTHER = "2 5 10 100 4 20 1000 4 200 2000 1 7 8 -1 3 2 -1 -1"

_SWF_INDEX = {name: k for k, name in enumerate(SWF_FIELDS)}
_TIMES = ("submit_time", "start_time", "end_time")


def _line(base: str = CLEAN, **fields: str) -> str:
    tokens = base.split()
    for name, value in fields.items():
        tokens[_SWF_INDEX[name]] = value
    return " ".join(tokens)


def _read(tmp_path: Path, text: str, reader: Any = read_swf, name: str = "site.swf") -> Any:
    path = tmp_path / name
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        result = reader(path, errors="skip")
    assert result.lines_read == result.lines_parsed + result.lines_quarantined
    return result


def _rows(jobs: pa.Table) -> list[dict[str, Any]]:
    """Every row as Python values; the times as epoch seconds (what a user sees either way)."""
    rows: list[dict[str, Any]] = jobs.to_pylist()  # never fails: every stamp is a datetime
    for c in _TIMES:
        for row, stamp in zip(rows, jobs.column(c).cast(pa.int64()).to_pylist(), strict=True):
            row[c] = stamp
    return rows


def _job(result: Any, job: str) -> dict[str, Any]:
    (row,) = [r for r in _rows(result.jobs) if r["job_id_raw"] == job]
    return row


def _swf(tmp_path: Path, **fields: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read a damaged line and a clean one; return the damaged job and the clean job."""
    result = _read(tmp_path, HEADER + _line(**fields) + "\n" + OTHER + "\n")
    assert result.jobs.num_rows == 2
    return _job(result, "1"), _job(result, "2")


# ------------------------------------------------------------------ SWF, crafted


def test_a_clean_line_reads_as_before(tmp_path: Path) -> None:
    job, _ = _swf(tmp_path)
    assert job["flags"] is None
    assert job["submit_time"] == ORIGIN
    assert (job["wait_s"], job["run_s"], job["cores_alloc"]) == (10, 100, 4)
    assert (job["mem_used_bytes"], job["mem_req_bytes"]) == (1000 * 4 * 1024, 2000 * 4 * 1024)
    assert (job["user"], job["group"], job["queue"], job["partition"]) == ("7", "8", "3", "2")


@pytest.mark.parametrize("value", ["1e19", "9223372036854775808", "99999999999999999999", "1e308"])
@pytest.mark.parametrize(
    ("field", "column"),
    [
        ("user_id", "user"),
        ("group_id", "group"),
        ("queue_id", "queue"),
        ("partition_id", "partition"),
    ],
)
def test_an_id_beyond_2_53_is_null_never_wrapped(
    tmp_path: Path, field: str, column: str, value: str
) -> None:
    # it was the text of int64's minimum, -9223372036854775808
    job, other = _swf(tmp_path, **{field: value})
    assert job[column] is None
    assert "OUT_OF_RANGE" in job["flags"]
    assert job["run_s"] == 100  # the rest of the line is kept
    assert other["flags"] is None


@pytest.mark.parametrize("value", ["1e308", "1e400", "-1e400"])
def test_a_cpu_time_that_overflows_is_null_not_inf(tmp_path: Path, value: str) -> None:
    job, _ = _swf(tmp_path, average_cpu_time=value)
    assert job["cpu_time_s"] is None
    assert "OUT_OF_RANGE" in job["flags"]
    assert job["cores_alloc"] == 4


@pytest.mark.parametrize(
    ("field", "value", "nulls"),
    [
        # a submit beyond the year 9999 (but within int64) broke to_pylist and every tz offset
        ("submit_time", "1e15", ("submit_time", "start_time", "end_time")),
        ("submit_time", "999999999999", ("submit_time", "start_time", "end_time")),
        ("submit_time", "-99999999999", ("submit_time", "start_time", "end_time")),
        ("submit_time", "1e400", ("submit_time", "start_time", "end_time")),
        ("wait_time", "999999999999", ("start_time", "end_time")),
        ("wait_time", "1e308", ("wait_s", "start_time", "end_time")),
        ("run_time", "999999999999", ("end_time",)),
        ("run_time", "9223372036854775808", ("run_s", "walltime_used_s", "end_time")),
    ],
)
def test_times_beyond_the_years_1_to_9999_are_null(
    tmp_path: Path, field: str, value: str, nulls: tuple[str, ...]
) -> None:
    job, other = _swf(tmp_path, **{field: value})
    for column in nulls:
        assert job[column] is None, column
    assert "OUT_OF_RANGE" in job["flags"]
    assert job["cores_alloc"] == 4
    assert other["tz_offset_s"] == 7200  # the other rows' offsets are still computed
    low, high = STAMP_RANGE_S
    for row in (job, other):
        assert all(row[c] is None or low <= row[c] <= high for c in _TIMES)


@pytest.mark.parametrize(
    ("field", "value", "nulls"),
    [
        ("allocated_procs", "2147483648", ("cores_alloc", "mem_used_bytes", "cpu_time_s")),
        ("allocated_procs", "99999999999999999999", ("cores_alloc", "mem_used_bytes")),
        ("requested_procs", "2147483648", ("cores_req", "mem_req_bytes")),
        ("used_memory", "1e308", ("mem_used_bytes",)),
        ("requested_memory", "99999999999999999tb", ()),  # not a number: the line is quarantined
        ("requested_time", "1e19", ("walltime_req_s",)),
        ("status", "2147483648", ("exit_code",)),
        ("status", "1e400", ("exit_code",)),
    ],
)
def test_counts_and_sizes_beyond_their_columns_are_null(
    tmp_path: Path, field: str, value: str, nulls: tuple[str, ...]
) -> None:
    result = _read(tmp_path, HEADER + _line(**{field: value}) + "\n" + OTHER + "\n")
    if not nulls:
        assert result.jobs.num_rows == 1
        assert result.quarantine.column("reason").to_pylist() == ["non-numeric field in a job line"]
        return
    job = _job(result, "1")
    for column in nulls:
        assert job[column] is None, column
    assert "OUT_OF_RANGE" in job["flags"]
    assert job["wait_s"] == 10


@pytest.mark.parametrize(
    ("field", "value", "nulls"),
    [
        ("run_time", "-5", ("run_s", "walltime_used_s", "end_time")),
        ("allocated_procs", "-4", ("cores_alloc", "mem_used_bytes", "cpu_time_s")),
        ("requested_procs", "-4", ("cores_req", "mem_req_bytes")),
        ("used_memory", "-1000", ("mem_used_bytes",)),
        ("requested_memory", "-2", ("mem_req_bytes",)),
        ("requested_time", "-200", ("walltime_req_s",)),
        ("average_cpu_time", "-20", ("cpu_time_s",)),
    ],
)
def test_negative_counts_sizes_and_durations_are_null(
    tmp_path: Path, field: str, value: str, nulls: tuple[str, ...]
) -> None:
    job, _ = _swf(tmp_path, **{field: value})
    for column in nulls:
        assert job[column] is None, column
    assert "OUT_OF_RANGE" in job["flags"]
    assert job["submit_time"] == ORIGIN


def test_a_negative_wait_is_kept_and_flagged(tmp_path: Path) -> None:
    job, _ = _swf(tmp_path, wait_time="-5")
    assert (job["wait_s"], job["start_time"], job["end_time"]) == (-5, ORIGIN - 5, ORIGIN + 95)
    assert job["flags"] == ["NEGATIVE_WAIT"]


def test_minus_one_stays_unknown_without_a_flag(tmp_path: Path) -> None:
    job, _ = _swf(tmp_path, run_time="-1", allocated_procs="-1", requested_time="-1.0")
    assert (job["run_s"], job["cores_alloc"], job["walltime_req_s"]) == (None, None, None)
    assert job["flags"] is None


@pytest.mark.parametrize(
    ("value", "expected"), [("-0", 0), ("+5", 5), ("007", 7), ("5.", 5), ("0.5e1", 5)]
)
def test_harmless_spellings_read_as_their_number(tmp_path: Path, value: str, expected: int) -> None:
    job, _ = _swf(tmp_path, run_time=value, allocated_procs=value)
    assert (job["run_s"], job["cores_alloc"]) == (expected, expected)
    assert job["flags"] is None


@pytest.mark.parametrize("value", ["inf", "nan", "0x1F", "1,5", "5s"])
def test_text_that_is_no_decimal_number_quarantines_the_line(tmp_path: Path, value: str) -> None:
    result = _read(tmp_path, HEADER + _line(run_time=value) + "\n" + OTHER + "\n")
    assert result.jobs.column("job_id_raw").to_pylist() == ["2"]
    assert result.quarantine.column("reason").to_pylist() == ["non-numeric field in a job line"]


def test_blank_padding_is_no_damage(tmp_path: Path) -> None:
    padded = "  " + _line().replace(" ", " \t  ") + "   "
    result = _read(tmp_path, HEADER + padded + "\n")
    assert _rows(result.jobs)[0]["run_s"] == 100
    assert result.jobs.column("flags").to_pylist() == [None]


@pytest.mark.parametrize("origin", ["1e400", "1e300", "99999999999999999999", "-99999999999"])
def test_a_damaged_unix_start_time_costs_the_times_not_the_file(
    tmp_path: Path, origin: str
) -> None:
    # 1e400 crashed the read (int of inf)
    result = _read(tmp_path, f"; UnixStartTime: {origin}\n{CLEAN}\n{OTHER}\n")
    for job in _rows(result.jobs):
        assert (job["submit_time"], job["start_time"], job["end_time"]) == (None, None, None)
        assert job["flags"] == ["OUT_OF_RANGE"]
        assert job["run_s"] == 100


def test_processor_counts_of_a_damaged_header_are_ignored() -> None:
    assert processors_of_headers([{"MaxProcs": math.inf, "MaxNodes": 64}]) == (
        64,
        "MaxNodes (no MaxProcs: one processor per node)",
    )
    assert processors_of_headers([{"MaxProcs": 1e300}]) is None


def test_the_fast_path_and_the_reference_agree_on_damaged_numbers(tmp_path: Path) -> None:
    # a clean job line goes through the compiled scanner; the same with a CR goes through it too,
    # and a line it declines (a comment before it) is read by the reference: same jobs
    lines = [
        _line(user_id="1e19"),
        _line(OTHER, average_cpu_time="1e308"),
        _line(_line(job_number="3"), submit_time="1e15"),
        _line(_line(job_number="4"), allocated_procs="-4"),
    ]
    (tmp_path / "nul").mkdir()
    fast = _read(tmp_path, HEADER + "\n".join(lines) + "\n")
    slow = _read(
        tmp_path, HEADER + "\n".join(f"{line}\x00" for line in lines) + "\n", name="nul/site.swf"
    )
    columns = [c for c in JOBS.names if c not in ("src_file", "flags", "job_key")]
    assert fast.jobs.select(columns).equals(slow.jobs.select(columns))
    flags = [
        [f for f in row if f != "NUL_STRIPPED"] for row in slow.jobs.column("flags").to_pylist()
    ]
    assert fast.jobs.column("flags").to_pylist() == flags


# ------------------------------------------------------------------ GWF, crafted


def _gwf_line(**fields: str) -> str:
    values = dict.fromkeys(GWF_FIELDS, "-1")
    values.update(
        JobID="7",
        SubmitTime="1100000000",
        WaitTime="3",
        RunTime="50",
        NProcs="2",
        ReqNProcs="2",
        UsedMemory="100",
        ReqMemory="200",
        AverageCPUTimeUsed="10",
        ReqTime="100",
        Status="1",
        UserID="U1",
    )
    values.update(fields)
    return " ".join(values[name] for name in GWF_FIELDS)


def _gwf(tmp_path: Path, **fields: str) -> dict[str, Any]:
    text = _gwf_line(JobID="8") + "\n" + _gwf_line(**fields) + "\n"
    result = _read(tmp_path, text, read_gwf, "grid.gwf")
    assert result.jobs.num_rows == 2
    assert _job(result, "8")["flags"] is None
    (row,) = [r for r in _rows(result.jobs) if r["job_id_raw"] != "8"]
    return row


@pytest.mark.parametrize(
    ("field", "value", "nulls"),
    [
        ("SubmitTime", "1e17", ("submit_time", "start_time", "end_time")),
        ("SubmitTime", "999999999999", ("submit_time", "start_time", "end_time")),
        ("WaitTime", "999999999999", ("start_time", "end_time")),
        ("RunTime", "-5", ("run_s", "end_time")),
        ("RunTime", "1e400", ("run_s", "end_time")),
        ("NProcs", "2147483648", ("cores_alloc", "mem_used_bytes", "cpu_time_s")),
        ("NProcs", "-2", ("cores_alloc", "mem_used_bytes", "cpu_time_s")),
        ("ReqNProcs", "99999999999", ("cores_req", "mem_req_bytes")),
        ("AverageCPUTimeUsed", "1e308", ("cpu_time_s",)),
        ("UsedMemory", "-100", ("mem_used_bytes",)),
        ("ReqMemory", "9223372036854775808", ("mem_req_bytes",)),
        ("ReqTime", "-100", ("walltime_req_s",)),
        ("Status", "2147483648", ("exit_code",)),
    ],
)
def test_gwf_numbers_beyond_their_columns_are_null(
    tmp_path: Path, field: str, value: str, nulls: tuple[str, ...]
) -> None:
    job = _gwf(tmp_path, **{field: value})
    for column in nulls:
        assert job[column] is None, column
    assert "OUT_OF_RANGE" in job["flags"]
    assert job["user"] == "U1"


def test_gwf_negative_wait_is_still_kept_and_flagged(tmp_path: Path) -> None:
    job = _gwf(tmp_path, WaitTime="-20")
    assert job["wait_s"] == -20
    assert job["flags"] == ["NEGATIVE_WAIT"]


@pytest.mark.parametrize(
    ("job_id", "seq"),
    [("+5", 5), ("007", 7), ("-0", 0), ("99999999999999999999", None), ("0x1F", None)],
)
def test_gwf_job_ids(tmp_path: Path, job_id: str, seq: int | None) -> None:
    # '+5' failed the whole read (Arrow's int64 cast reads no leading +)
    job = _gwf(tmp_path, JobID=job_id)
    assert (job["job_id_raw"], job["job_seq"]) == (job_id, seq)


# ------------------------------------------------------------------ properties

_INT32 = 2**31 - 1
_tokens = st.one_of(
    st.just("-1"),
    st.integers(0, 10**6).map(str),
    st.integers(-(10**25), 10**25).map(str),
    st.sampled_from(
        ["1e308", "-1e308", "1e400", "-1e400", "-0", "+5", "007", "2147483648", "1e15", "4e15"]
    ),
    st.sampled_from([str(2**53), str(2**53 + 2), str(2**63), str(_INT32), str(_INT32 + 1)]),
    st.floats(-1e20, 1e20, allow_nan=False).map(repr),
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.lists(_tokens, min_size=18, max_size=18), min_size=1, max_size=8))
def test_any_swf_numbers_cost_values_never_the_read(tmp_path: Path, lines: list[list[str]]) -> None:
    body = "\n".join(" ".join([str(i + 1), *fields[1:]]) for i, fields in enumerate(lines))
    result = _read(tmp_path, HEADER + body + "\n")
    rows = _rows(result.jobs)  # never fails: every stamp is a datetime
    assert result.lines_parsed == 2 + result.jobs.num_rows + result.info["swf_duplicate_lines"]
    low, high = STAMP_RANGE_S
    for row in rows:
        assert all(row[c] is None or low <= row[c] <= high for c in _TIMES)
        for column in ("cores_alloc", "cores_req", "exit_code"):
            assert row[column] is None or -(2**31) <= row[column] <= _INT32
        for column in ("run_s", "walltime_req_s", "mem_used_bytes", "mem_req_bytes"):
            assert row[column] is None or 0 <= row[column] <= 2**53
        assert row["cpu_time_s"] is None or 0 <= row["cpu_time_s"] <= 2**53
        for column in ("user", "group", "queue", "partition"):
            assert row[column] is None or not row[column].startswith("-92233720368547758")
        fields = [float(t) for t in lines[int(row["job_id_raw"]) - 1]]
        run = fields[3]
        if run == -1:
            assert row["run_s"] is None
        elif math.isfinite(run) and 0 <= round(run) <= 2**53:
            assert row["run_s"] == round(run)
        else:
            assert row["run_s"] is None
            assert "OUT_OF_RANGE" in row["flags"]
        alloc = fields[4]
        if alloc != -1 and not (math.isfinite(alloc) and 0 <= round(alloc) <= _INT32):
            assert row["cores_alloc"] is None
            assert "OUT_OF_RANGE" in row["flags"]


@st.composite
def _edge_jobs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Jobs whose values sit at the edges of their columns (and of the SWF writer's ints)."""
    rows = []
    for i in range(draw(st.integers(1, 6))):
        cores = draw(st.sampled_from([1, 4096, _INT32]))
        rows.append(
            {
                "job_seq": i + 1,
                "job_id_raw": str(i + 1),
                "submit_time": draw(st.integers(0, STAMP_RANGE_S[1] // 2)),
                "wait_s": draw(st.integers(0, 10**9)),
                "run_s": draw(st.integers(0, 10**9)),
                "walltime_req_s": draw(st.integers(0, 2**53)),
                "cores_alloc": cores,
                "cores_req": cores,
                "mem_used_bytes": cores * 1024 * draw(st.integers(0, 2**53 // (1024 * _INT32))),
                "user": str(draw(st.integers(0, 2**53))),
                "state": "COMPLETED",
            }
        )
    return rows


def _filler(field: pa.Field[Any], n: int) -> Any:
    if field.nullable:
        return pa.nulls(n, field.type)
    if pa.types.is_string(field.type):
        return pa.array(["site"] * n, field.type)
    return pa.array([0] * n, field.type)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_edge_jobs())
def test_values_at_the_column_edges_round_trip(tmp_path: Path, rows: list[dict[str, Any]]) -> None:
    rows = sorted(rows, key=lambda r: r["submit_time"])
    for row in rows:
        row["start_time"] = row["submit_time"] + row["wait_s"]
        row["end_time"] = row["start_time"] + row["run_s"]
    columns = {name: [row[name] for row in rows] for name in rows[0]}
    n = len(rows)
    given = {name: pa.array(values).cast(JOBS.field(name).type) for name, values in columns.items()}
    jobs = pa.Table.from_arrays(
        [given[f.name] if f.name in given else _filler(f, n) for f in JOBS], schema=JOBS
    )
    back = read_swf(write_swf(jobs, tmp_path / "edge.swf")).jobs
    for name in columns:
        assert back.column(name).to_pylist() == jobs.column(name).to_pylist(), name
    assert back.column("flags").to_pylist() == [None] * len(rows)
