"""The TORQUE writer: jobs -> accounting lines, and parse -> write -> parse round trips."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.errors import ConfigError
from gridtrace.logs import read_torque, write_torque
from gridtrace.logs._torque_writer import format_duration, format_exec_host
from gridtrace.schema import conform

EPOCH0 = 1_700_000_000
NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_.-", min_size=1, max_size=8)
HOSTS = [f"n{i:03d}" for i in range(1, 9)]


def _utc(epoch: int | None) -> dt.datetime | None:
    return None if epoch is None else dt.datetime.fromtimestamp(epoch, dt.UTC)


@st.composite
def job_specs(draw: st.DrawFn, seq: int) -> dict[str, object]:
    submit = EPOCH0 + draw(st.integers(0, 30 * 86400))
    state = draw(st.sampled_from(["COMPLETED", "FAILED", "DELETED"]))
    ran = state != "DELETED"
    wait = draw(st.integers(0, 86400))
    run = draw(st.integers(0, 3 * 86400))
    hosts = draw(st.lists(st.sampled_from(HOSTS), min_size=1, max_size=3, unique=True))
    cores = draw(st.integers(len(hosts), 8 * len(hosts)))
    end = submit + wait + run if ran else submit + wait
    name = draw(NAME)
    if draw(st.booleans()):
        name = f"{name} {draw(NAME)}"  # a space: written quoted, read back whole
    return {
        "site": "rt",
        "source_format": "torque",
        "job_key": f"rt:{seq}",
        "job_id_raw": f"{seq}.pbs01",
        "job_seq": seq,
        "attempt": 0,
        "n_attempts": 1,
        "user": draw(NAME),
        "group": draw(NAME),
        "account": draw(st.none() | NAME),
        "queue": draw(NAME),
        "job_name": name,
        "submit_time": _utc(submit),
        "queue_time": _utc(submit),
        "eligible_time": _utc(submit),
        "start_time": _utc(submit + wait) if ran else None,
        "end_time": _utc(end),
        "walltime_req_s": draw(st.none() | st.integers(60, 10 * 86400)),
        "walltime_used_s": run if ran else None,
        "nodes_req": len(hosts),
        "cores_req": cores,
        "nodes_alloc": len(hosts) if ran else None,
        "cores_alloc": cores if ran else None,
        "exec_hosts": hosts if ran else None,
        "mem_req_bytes": draw(st.none() | st.integers(1, 2**40)),
        "exit_code": 0 if state == "COMPLETED" else draw(st.integers(1, 127)),
        "state": state,
        "end_record_type": "E",
        "src_file": "generated",
        "src_line": 0,
        "flags": [],
    }


@st.composite
def jobs_tables(draw: st.DrawFn) -> pa.Table:
    n = draw(st.integers(1, 12))
    seqs = draw(st.lists(st.integers(1, 10**7), min_size=n, max_size=n, unique=True))
    return conform(pa.Table.from_pylist([draw(job_specs(seq)) for seq in seqs]), "jobs")


# what a TORQUE log carries and a parse must give back exactly
ROUND_TRIP = [
    "job_id_raw",
    "job_seq",
    "user",
    "group",
    "account",
    "queue",
    "job_name",
    "submit_time",
    "queue_time",
    "eligible_time",
    "start_time",
    "end_time",
    "walltime_req_s",
    "cores_alloc",
    "nodes_alloc",
    "exec_hosts",
    "mem_req_bytes",
    "exit_code",
    "state",
]


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by([("job_seq", "ascending"), ("attempt", "ascending")])


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(jobs=jobs_tables(), tz=st.sampled_from(["UTC", "Europe/Paris", "America/Chicago"]))
def test_write_parse_write_parse_is_a_round_trip(
    jobs: pa.Table, tz: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    first = tmp_path_factory.mktemp("first")
    second = tmp_path_factory.mktemp("second")
    write_torque(jobs, first, tz=tz)
    parsed = read_torque(first, site="rt", tz=tz, errors="raise")
    assert parsed.lines_read == parsed.lines_parsed
    # the parse recovers what was written ...
    assert _sorted(parsed.jobs).select(ROUND_TRIP).equals(_sorted(jobs).select(ROUND_TRIP))
    # ... and parse -> write -> parse changes nothing, down to the bytes of the files
    write_torque(parsed.jobs, second, tz=tz)
    assert _files(second) == _files(first)
    again = read_torque(second, site="rt", tz=tz, errors="raise")
    keep = [c for c in again.jobs.column_names if c != "src_file"]
    assert _sorted(again.jobs).select(keep).equals(_sorted(parsed.jobs).select(keep))


def _row(seq: int, **changes: object) -> dict[str, object]:
    row: dict[str, object] = {
        "site": "rt",
        "source_format": "torque",
        "job_key": f"rt:{seq}",
        "job_id_raw": f"{seq}.pbs01",
        "attempt": 0,
        "n_attempts": 1,
        "user": "alice",
        "group": "atlas",
        "queue": "grid",
        "job_name": "job",
        "state": "COMPLETED",
        "exit_code": 0,
        "src_file": "generated",
        "src_line": 0,
        "flags": [],
    }
    row.update(changes)
    return row


def test_files_are_daily_in_local_time_and_records_ordered(tmp_path: Path) -> None:
    late = EPOCH0 - EPOCH0 % 86400 + 86400 - 1800  # 23:30 UTC = 00:30 next day in Paris (CET)
    row = _row(
        5,
        submit_time=_utc(late - 3600),  # 23:30 in Paris, the day before
        queue_time=_utc(late - 3600),
        eligible_time=_utc(late - 3600),
        start_time=_utc(late),
        end_time=_utc(late + 3600),
        exec_hosts=["n001"],
        cores_alloc=1,
        nodes_alloc=1,
        cores_req=1,
        nodes_req=1,
    )
    files = write_torque(conform(pa.Table.from_pylist([row]), "jobs"), tmp_path, tz="Europe/Paris")
    assert [f.name for f in files] == ["20231114", "20231115"]
    lines = b"".join(f.read_bytes() for f in files).decode().splitlines()
    assert [line.split(";")[1] for line in lines] == ["Q", "S", "E"]
    assert lines[0].startswith("11/14/2023 23:30:00;Q;5.pbs01;queue=grid")
    assert lines[1].startswith("11/15/2023 00:30:00;S;5.pbs01;")


def test_values_that_cannot_be_written_are_refused(tmp_path: Path) -> None:
    row = _row(9, job_name='say "hi"', submit_time=_utc(EPOCH0), end_time=_utc(EPOCH0 + 5))
    with pytest.raises(ConfigError, match=r"job 9\.pbs01"):
        write_torque(conform(pa.Table.from_pylist([row]), "jobs"), tmp_path)


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "00:00:00"), (3661, "01:01:01"), (400000, "111:06:40")]
)
def test_durations(seconds: int, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize(
    ("hosts", "cores", "text"),
    [(["a"], 1, "a/0"), (["a"], 4, "a/0-3"), (["a", "b"], 5, "a/0-2+b/0-1"), ([], 3, "")],
)
def test_exec_host_spreads_cores(hosts: list[str], cores: int, text: str) -> None:
    assert format_exec_host(hosts, cores) == text
