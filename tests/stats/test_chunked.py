"""The trace and the characterisation of a jobs.parquet read in batches equal the in-memory ones."""

from __future__ import annotations

import datetime as dt
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gridtrace.cli import main
from gridtrace.demo import write_demo_site
from gridtrace.errors import ConfigError, DataQualityWarning
from gridtrace.logs import build_trace
from gridtrace.schema import conform
from gridtrace.stats import characterise, characterise_parquet, trace_from_parquet


@pytest.fixture(scope="module")
def demo_jobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo site's log parsed by ``gridtrace parse`` (probes flagged, a truncated record)."""
    base = tmp_path_factory.mktemp("demo")
    write_demo_site(base / "log", n_jobs=1200)
    with warnings.catch_warnings():  # the planted bad lines are quarantined, with a warning
        warnings.simplefilter("ignore", DataQualityWarning)
        code = main(["-q", "parse", str(base / "log"), "-o", str(base / "out"), "--no-progress"])
    assert code == 0
    return base / "out" / "jobs.parquet"


def _same_trace(path: Path, **options: object) -> None:
    whole = build_trace(pq.read_table(path), **options)  # type: ignore[arg-type]
    for batch_rows in (1, 97, 10**6):
        chunked = trace_from_parquet(path, batch_rows=batch_rows, **options)  # type: ignore[arg-type]
        assert chunked.equals(whole)
        assert chunked.schema.metadata == whole.schema.metadata


def test_demo_trace_from_batches_is_the_whole_table_trace(demo_jobs: Path) -> None:
    assert pq.read_metadata(demo_jobs).num_rows > 1200
    _same_trace(demo_jobs, cores=80, tz="Europe/Paris")
    _same_trace(demo_jobs, cores=80, tau_s=600.0, exclude_monitoring=False)


def test_demo_characterisation_from_batches_is_the_in_memory_one(demo_jobs: Path) -> None:
    whole = characterise(build_trace(pq.read_table(demo_jobs), cores=80, tz="Europe/Paris"))
    chunked = characterise_parquet(demo_jobs, cores=80, tz="Europe/Paris", batch_rows=200)
    assert chunked.to_dict() == whole.to_dict()
    assert chunked.jobs > 1000
    assert chunked.timezone == "Europe/Paris"
    window = (3600.0, 5 * 86400.0)
    whole_window = characterise(
        build_trace(pq.read_table(demo_jobs), cores=80, tz="Europe/Paris"), window=window
    )
    assert (
        characterise_parquet(
            demo_jobs, cores=80, tz="Europe/Paris", batch_rows=300, window=window
        ).to_dict()
        == whole_window.to_dict()
    )


T0 = dt.datetime(2024, 3, 25, tzinfo=dt.UTC)


def _row(seq: int, attempt: int = 0, **changes: object) -> dict[str, object]:
    row: dict[str, object] = {
        "site": "s",
        "source_format": "torque",
        "job_key": f"s:{seq}.{attempt}",
        "job_id_raw": f"{seq}.ce",
        "job_seq": seq,
        "attempt": attempt,
        "n_attempts": 1,
        "user": f"u{seq % 3}",
        "vo": f"vo{seq % 2}",
        "queue": "q",
        "submit_time": T0 + dt.timedelta(seconds=10 * seq),
        "queue_time": T0 + dt.timedelta(seconds=10 * seq + 1),
        "start_time": T0 + dt.timedelta(seconds=10 * seq + 30),
        "end_time": T0 + dt.timedelta(seconds=10 * seq + 90),
        "run_s": 60,
        "cores_alloc": 2,
        "cores_req": 2,
        "walltime_req_s": 3600,
        "state": "COMPLETED",
        "src_file": "f",
        "src_line": seq,
        "flags": [],
    }
    row.update(changes)
    return row


def test_edge_cases_in_small_row_groups(tmp_path: Path) -> None:
    """Requeued attempts, archive jobs without a start, equal submits, defaulted cores, probes."""
    rows = [
        _row(5),
        _row(5, attempt=1, queue_time=T0 + dt.timedelta(seconds=95)),  # submitted at its qtime
        _row(6, attempt=1, queue_time=None),  # requeued without a queue time: its submit
        _row(7, start_time=None, end_time=None),  # archive: runtime, no start, no wait
        _row(8, submit_time=None),  # submitted when it started
        _row(9, cores_alloc=None, cores_req=None),  # counts as 1 core, logged
        _row(10, cores_alloc=None),  # the request
        _row(11, state="DELETED", run_s=None, start_time=None),
        _row(12, run_s=None),
        _row(13, flags=["MONITORING"]),
        _row(3, submit_time=T0 + dt.timedelta(seconds=50)),  # ties with job 5 on submit
        _row(4, array_index=2, submit_time=T0 + dt.timedelta(seconds=50)),
        _row(4, array_index=1, submit_time=T0 + dt.timedelta(seconds=50)),
        _row(2, job_seq=None, submit_time=T0 + dt.timedelta(seconds=50)),
    ]
    path = tmp_path / "jobs.parquet"
    pq.write_table(conform(pa.Table.from_pylist(rows), "jobs"), path, row_group_size=3)
    _same_trace(path, cores=8)
    _same_trace(path, cores=8, exclude_monitoring=False, provenance={"from": "test"})
    trace = trace_from_parquet(path, cores=8, batch_rows=2)
    meta = trace.schema.metadata or {}
    assert b'"jobs_with_cores_defaulted_to_1": 1' in meta[b"provenance"]
    assert trace.num_rows == 11


def test_refusals(tmp_path: Path) -> None:
    path = tmp_path / "jobs.parquet"
    pq.write_table(conform(pa.Table.from_pylist([_row(1, run_s=None)]), "jobs"), path)
    with pytest.raises(ConfigError, match="no job"):
        trace_from_parquet(path, cores=8)
    with pytest.raises(ConfigError, match="cores"):
        trace_from_parquet(path, cores=0)
    with pytest.raises(ConfigError, match="batch_rows"):
        trace_from_parquet(path, cores=8, batch_rows=0)
