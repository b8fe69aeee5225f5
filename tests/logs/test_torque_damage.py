"""Fuzzing the TORQUE reader (issue 16, item 7): damage never crashes it, never loses a line.

Properties, on arbitrary bytes and on real lines damaged at random:

- tokenising and assembling never raise;
- lines read = lines parsed + lines quarantined, one row per physical line;
- the jobs of a valid file (ending with its line end) are unchanged by appending garbage to it,
  which lands in the quarantine only. Garbage here is any bytes whose lines hold no
  ``MM/DD/YYYY HH:MM:SS;T;`` record head: whatever else they hold (NULs, CRs, ``;``, ``=``,
  non-UTF-8, no final line end), they cannot form a record. A valid file without a final line end
  is left out: appending to it lengthens its last record, which is not garbage any more.

The real lines come from ``$GRIDTRACE_REAL_DATA/torque/`` (the VSC month's first day and the NCAR
day) when it is set; literal lines of the parser notes are used in any case.
"""

from __future__ import annotations

import gzip
import os
import re
from functools import cache
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import ParseResult, describe_flag
from gridtrace.logs._torque import FLAGS, assemble_torque
from gridtrace.logs._torque_fast import tokenize_torque
from gridtrace.schema import JOBS, QUARANTINE, RECORDS, validate

_HEAD = re.compile(rb"\d\d/\d\d/\d{4} \d\d:\d\d:\d\d;[A-Za-z];")

LITERAL = [
    b"05/03/2024 09:56:45;E;123[4].pbs01.example.org;user=alice group=atlas jobname=sim-4 "
    b"queue=grid ctime=1714723000 qtime=1714723000 etime=1714723000 start=1714723100 "
    b"exec_host=n001/3 Resource_List.walltime=02:00:00 end=1714730205 Exit_status=0 "
    b"resources_used.walltime=01:58:25",
    b"05/03/2024 10:00:00;Q;202.pbs01;queue=grid",
    b"05/03/2024 10:05:00;D;202.pbs01;requestor=alice@ui01",
    b"05/03/2024 12:00:00;S;200.pbs01;user=bob group=cms queue=grid ctime=1714730000 "
    b"qtime=1714730000 etime=1714730000 start=1714730100 exec_host=n002/0-3 "
    b"Resource_List.nodes=1:ppn=4",
    b"05/03/2024 12:00:00;E;200.pbs01;user=bob group=cms queue=grid ctime=1714730000 "
    b"qtime=1714730000 etime=1714730000 start=1714730100 exec_host=n002/0-3 end=1714737600 "
    b"Exit_status=-3 resources_used.walltime=02:05:00 total_execution_slots=4",
    b"05/03/2024 14:05:00;R;201.pbs01;",
    b"02/12/2018 00:00:00;L;license;floating license hour:0 day:0 month:2304 max:5184",
    b'02/12/2018 17:39:43;E;1048074.laadmin1;user=matthews account="SSSG0001" queue=regular '
    b"ctime=1518482382 start=1518482382 exec_host=r1i0n2/0*12 exec_vnode=(r1i0n2:ncpus=12) "
    b"Resource_List.ncpus=12 Resource_List.select=1:ncpus=12 end=1518482383 Exit_status=0",
]


@cache
def _real_lines() -> tuple[bytes, ...]:
    folder = os.environ.get("GRIDTRACE_REAL_DATA")
    if not folder:
        return ()
    torque = Path(folder) / "torque"
    found: list[bytes] = []
    day = torque / "vsc-kuleuven-2016-06" / "20160601.gz"
    if day.is_file():
        found += gzip.decompress(day.read_bytes()).split(b"\n")[:-1][:400]
    ncar = torque / "ncar-laramie-pbspro-20180212"
    if ncar.is_file():
        found += ncar.read_bytes().split(b"\n")[:-1]
    return tuple(found)


def _lines() -> list[bytes]:
    return LITERAL + list(_real_lines())


def parse(*files: bytes) -> ParseResult:
    parts = [
        tokenize_torque(data, src_file=f"2024050{i + 1}", site="fuzz")
        for i, data in enumerate(files)
    ]
    result = assemble_torque(parts)
    validate(result.records, RECORDS)
    validate(result.quarantine, QUARANTINE)
    validate(result.jobs, JOBS)
    expected = sum(len(data.split(b"\n")) - (data.endswith(b"\n") or not data) for data in files)
    assert result.lines_read == expected
    assert result.lines_read == result.lines_parsed + result.lines_quarantined
    for table in (result.records, result.jobs):  # every flag set is one FLAGS explains
        for flags in table.column("flags").to_pylist():
            assert all(describe_flag(flag, FLAGS) for flag in flags or ()), flags
    return result


# --- damage ----------------------------------------------------------------------------------

_BYTES = [b"\x00", b"\x00" * 300, b"\r", b"\r\n", b"\xe9", b"\xff\xfe", b"\x1b", b";", b"=", b'"']


@st.composite
def damaged_file(draw: st.DrawFn) -> bytes:
    """Consecutive real lines, each maybe damaged: cut, spliced with NULs, bytes put in or out,
    repeated, swapped; the file maybe cut anywhere (no final line end)."""
    pool = _lines()
    start = draw(st.integers(0, len(pool) - 1))
    lines = list(pool[start : start + draw(st.integers(1, 12))])
    for _ in range(draw(st.integers(0, 6))):
        i = draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        at = draw(st.integers(0, len(line)))
        how = draw(st.sampled_from(["cut", "nul", "insert", "delete", "repeat", "swap", "join"]))
        if how == "cut":
            lines[i] = line[:at]
        elif how == "nul":  # a cut record, NULs, then the next record, on one line
            lines[i] = line[:at] + b"\x00" * draw(st.integers(1, 64)) + lines[(i + 1) % len(lines)]
        elif how == "insert":
            lines[i] = line[:at] + draw(st.sampled_from(_BYTES) | st.binary(max_size=8)) + line[at:]
        elif how == "delete":
            lines[i] = line[:at] + line[at + draw(st.integers(1, 40)) :]
        elif how == "repeat":
            lines.insert(i, line)
        elif how == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        else:  # two lines joined: a lost line end
            lines[i] = line + lines[(i + 1) % len(lines)]
    data = b"\n".join(lines) + b"\n"
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return data


_SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@_SETTINGS
@given(data=st.binary(max_size=2000))
def test_arbitrary_bytes_never_crash(data: bytes) -> None:
    parse(data)


@_SETTINGS
@given(files=st.lists(damaged_file(), min_size=1, max_size=3))
def test_damaged_real_lines_never_crash_and_every_line_is_counted(files: list[bytes]) -> None:
    result = parse(*files)
    # what the reader makes of damage is always said: a quarantine reason or a flag
    for row in result.records.to_pylist():
        if row["raw"] is not None:
            assert row["flags"], row


# --- appending garbage -----------------------------------------------------------------------


def _not_a_record(line: bytes) -> bool:
    return _HEAD.search(line) is None


garbage_line = st.one_of(
    st.binary(max_size=120),
    st.sampled_from(
        [b"", b"\x00" * 512, b"\r", b"   ", b"x;E;1.srv;end=1", b"\xe9\xe8;;;=", b"12/31/2024"]
    ),
    st.text(max_size=80).map(lambda text: text.encode("utf-8", "surrogatepass")),
).map(lambda line: line.replace(b"\n", b" "))


@_SETTINGS
@given(
    start=st.integers(0, 10_000),
    length=st.integers(1, 60),
    garbage=st.lists(garbage_line.filter(_not_a_record), min_size=1, max_size=8),
    final_newline=st.booleans(),
)
def test_appending_garbage_to_a_valid_file_changes_no_job(
    start: int, length: int, garbage: list[bytes], final_newline: bool
) -> None:
    pool = _lines()
    start %= len(pool)
    valid = b"\n".join(pool[start : start + length]) + b"\n"
    tail = b"\n".join(garbage) + (b"\n" if final_newline else b"")
    clean, dirty = parse(valid), parse(valid + tail)
    assert dirty.jobs.equals(clean.jobs)
    assert dirty.records.equals(clean.records)
    added = len(garbage) - (not final_newline and garbage[-1] == b"")
    assert dirty.lines_quarantined == clean.lines_quarantined + added
    assert dirty.quarantine.slice(clean.lines_quarantined).column("raw").to_pylist() == [
        line for line in garbage[:added]
    ]


def test_real_lines_are_used_when_given() -> None:
    if not os.environ.get("GRIDTRACE_REAL_DATA"):
        pytest.skip("GRIDTRACE_REAL_DATA is not set: literal lines only")
    assert len(_real_lines()) > 400
    assert parse(b"\n".join(_real_lines()) + b"\n").jobs.num_rows > 100


def test_empty_input() -> None:
    result = parse(b"")
    assert (result.lines_read, result.jobs.num_rows) == (0, 0)
    assert isinstance(result.jobs, pa.Table)
