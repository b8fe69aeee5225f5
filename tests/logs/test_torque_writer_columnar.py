"""The columnar TORQUE writer gives the per-job writer's text, byte for byte."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridtrace.demo import write_demo_site
from gridtrace.errors import ConfigError
from gridtrace.logs import write_torque
from gridtrace.logs._torque_writer import (
    _reference_day_texts,
    day_texts,
    torque_day_texts,
    torque_lines,
)
from gridtrace.schema import conform

EPOCH0 = 1_711_839_600  # 2024-03-30 23:00 UTC: the night of Europe's spring DST change
NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_.-", min_size=0, max_size=6)
SPACED = st.builds(lambda a, b: f"{a} {b}", NAME, NAME)
TEXT = st.none() | NAME | SPACED
HOSTS = [f"wn{i:02d}" for i in range(1, 7)] + ["node a"]
STATES = ["COMPLETED", "FAILED", "CANCELLED", "DELETED", "TIMEOUT", "REQUEUED", "RUNNING"]
ZONES = ["UTC", "Europe/Paris", "America/Sao_Paulo", "Asia/Kolkata", "Australia/Lord_Howe"]


def _utc(epoch: int | None) -> dt.datetime | None:
    return None if epoch is None else dt.datetime.fromtimestamp(epoch, dt.UTC)


def _maybe(value: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.none() | value


@st.composite
def job_rows(draw: st.DrawFn, seq: int) -> dict[str, object]:
    # around midnights and DST changes, in several zones: stamps cross local day boundaries
    submit = EPOCH0 + draw(st.integers(-2 * 86400, 200 * 86400))
    start = draw(_maybe(st.integers(-1, 3 * 86400)))
    start_epoch = None if start is None else (0 if start < 0 else submit + start)
    end = draw(_maybe(st.integers(0, 3 * 86400)))
    hosts = draw(_maybe(st.lists(st.sampled_from(HOSTS), max_size=4, unique=True)))
    return {
        "site": "rt",
        "source_format": "torque",
        "job_key": f"rt:{seq}",
        "job_id_raw": f"{seq}.pbs01",
        "job_seq": seq,
        "attempt": draw(st.integers(0, 2)),
        "n_attempts": 3,
        "user": draw(TEXT),
        "group": draw(TEXT),
        "account": draw(TEXT),
        "queue": draw(TEXT),
        "job_name": draw(TEXT),
        "submit_time": _utc(draw(_maybe(st.just(submit)))),
        "queue_time": _utc(draw(_maybe(st.just(submit + 5)))),
        "eligible_time": _utc(draw(_maybe(st.just(submit + 9)))),
        "start_time": _utc(start_epoch),
        "end_time": _utc(None if end is None else submit + end),
        "walltime_req_s": draw(_maybe(st.integers(-5, 500 * 3600))),
        "walltime_used_s": draw(_maybe(st.integers(-5, 200 * 3600))),
        "cpu_time_s": draw(_maybe(st.floats(-3.0, 1e7, allow_nan=False))),
        "nodes_req": draw(_maybe(st.integers(-1, 4))),
        "cores_req": draw(_maybe(st.integers(-2, 64))),
        "cores_alloc": draw(_maybe(st.integers(0, 64))),
        "exec_hosts": hosts,
        "mem_req_bytes": draw(_maybe(st.integers(-(2**20), 2**40))),
        "mem_used_bytes": draw(_maybe(st.sampled_from([0, 1024, 1536, 2**30, 7]))),
        "vmem_used_bytes": draw(_maybe(st.integers(0, 2**34))),
        "exit_code": draw(_maybe(st.integers(-1, 271))),
        "state": draw(st.sampled_from(STATES)),
        "end_record_type": draw(st.sampled_from([None, "E", "R"])),
        "src_file": "generated",
        "src_line": 0,
        "flags": [],
    }


@st.composite
def tables(draw: st.DrawFn) -> tuple[pa.Table, list[str | None] | None]:
    n = draw(st.integers(1, 15))
    # repeated ids (attempts of one job) and equal stamps test the tie-breaking
    seqs = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))
    jobs = conform(pa.Table.from_pylist([draw(job_rows(seq)) for seq in seqs]), "jobs")
    logged = st.sampled_from([None, "", "wn01/0-3,6+wn02/1", "h/7"])
    exec_host = draw(st.none() | st.lists(logged, min_size=n, max_size=n))
    return jobs, exec_host


@settings(max_examples=100, deadline=None)
@given(case=tables(), tz=st.sampled_from(ZONES))
def test_columnar_text_is_the_per_job_text(
    case: tuple[pa.Table, list[str | None] | None], tz: str
) -> None:
    jobs, exec_host = case
    assert torque_day_texts(jobs, tz=tz, exec_host=exec_host) == _reference_day_texts(
        jobs, tz=tz, exec_host=exec_host
    )
    # the lines are built column by column, not through the per-job fallback
    assert torque_lines(jobs, tz=tz, exec_host=exec_host).num_rows == sum(
        text.count(b"\n")
        for text in _reference_day_texts(jobs, tz=tz, exec_host=exec_host).values()
    )


@settings(max_examples=30, deadline=None)
@given(case=tables(), tz=st.sampled_from(ZONES), cut=st.integers(0, 15))
def test_chunks_joined_give_the_whole_table_text(
    case: tuple[pa.Table, list[str | None] | None], tz: str, cut: int
) -> None:
    """Lines of row chunks, concatenated, give the same days (the benchmark streams chunks)."""
    jobs, _ = case
    cut = min(cut, jobs.num_rows)
    head = torque_lines(jobs.slice(0, cut), tz=tz)
    tail = torque_lines(jobs.slice(cut), tz=tz)
    tail = tail.set_column(3, "row", pa.compute.add(tail.column("row"), cut))
    assert day_texts(pa.concat_tables([head, tail])) == torque_day_texts(jobs, tz=tz)


def test_demo_site_log_is_byte_identical(tmp_path: Path) -> None:
    site = write_demo_site(tmp_path / "demo", n_jobs=1500)
    table = site.jobs
    for tz in ("Europe/Paris", "UTC"):
        assert torque_day_texts(table, tz=tz) == _reference_day_texts(table, tz=tz)
    written = write_torque(table, tmp_path / "again", tz="Europe/Paris")
    reference = _reference_day_texts(table, tz="Europe/Paris")
    assert {p.name: p.read_bytes() for p in written} == reference


def _one(**changes: object) -> pa.Table:
    row: dict[str, object] = {
        "site": "rt",
        "source_format": "torque",
        "job_key": "rt:9",
        "job_id_raw": "9.pbs01",
        "attempt": 0,
        "n_attempts": 1,
        "user": "alice",
        "queue": "grid",
        "state": "COMPLETED",
        "submit_time": _utc(EPOCH0),
        "start_time": _utc(EPOCH0 + 5),
        "end_time": _utc(EPOCH0 + 50),
        "src_file": "generated",
        "src_line": 0,
        "flags": [],
    }
    row.update(changes)
    return conform(pa.Table.from_pylist([row]), "jobs")


def test_a_quote_in_a_written_value_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"job 9\.pbs01"):
        write_torque(_one(job_name='say "hi"'), tmp_path)


def test_a_quote_in_a_value_never_written_is_no_error(tmp_path: Path) -> None:
    # a job that was only queued logs its queue alone: its name is never written
    table = _one(job_name='say "hi"', start_time=None, end_time=None, state="PENDING")
    (path,) = write_torque(table, tmp_path)
    assert path.read_bytes().endswith(b";Q;9.pbs01;queue=grid\n")


def test_extra_lines_follow_the_records(tmp_path: Path) -> None:
    (path,) = write_torque(_one(), tmp_path, extra_lines={"20240330": [b"junk"]})
    assert path.read_bytes().splitlines()[-1] == b"junk"
    assert len(path.read_bytes().splitlines()) == 4
