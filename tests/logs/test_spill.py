"""Out-of-core assembly (gridtrace.logs._spill): the same tables and summary as in memory.

Every comparison reads the spill path's Parquet back and compares it with the in-memory tables
written to Parquet the same way (Parquet stores second stamps as milliseconds, in both paths).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import warnings
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.demo import write_demo_site
from gridtrace.errors import ConfigError, DataQualityWarning, LogParseError
from gridtrace.logs import parse_logs, parse_logs_to
from gridtrace.logs._torque_jobs import torque_partition_keys
from gridtrace.logs._torque_lines import tokenize_torque_reference

TABLES = ("records", "jobs", "quarantine")
BRUSSELS = ZoneInfo("Europe/Brussels")


def _through_parquet(table: pa.Table) -> pa.Table:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return pq.read_table(io.BytesIO(sink.getvalue()))


def same_as_in_memory(
    paths: Any, out: Path, *, tz: str | None = None, **options: Any
) -> dict[str, Any]:
    """Parse both ways; assert equal tables (values and order) and summaries."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        memory = parse_logs(paths, tz=tz)
        spilled = parse_logs_to(paths, out, tz=tz, **options)
    for name in TABLES:
        expected = _through_parquet(getattr(memory, name))
        got = pq.read_table(out / f"{name}.parquet")
        assert got.schema.equals(expected.schema), name
        assert got.num_rows == expected.num_rows, name
        for column in expected.column_names:
            assert got.column(column).equals(expected.column(column)), (name, column)
    summary = memory.summary()
    assert spilled.summary == summary
    assert json.loads((out / "parse-summary.json").read_text()) == json.loads(json.dumps(summary))
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # spill folder removed
    return summary


# --------------------------------------------------------------------------------------------
# a generated log with every shape a job can take across daily files


def _stamp(epoch: int) -> str:
    local = dt.datetime.fromtimestamp(epoch, BRUSSELS)
    return local.strftime("%m/%d/%Y %H:%M:%S")


def tricky_log(folder: Path, n_jobs: int, seed: int, *, days: int = 4) -> list[Path]:
    """Daily TORQUE files around the 2024 fall-back change, with every awkward job shape.

    Jobs span days (Q one day, S and E the next), array tasks (``12[3].srv`` and ``12-4.srv``)
    and parents (``12[].srv``), server suffixes that differ (``7.srv`` and ``7``), re-queued
    jobs (S, R, S, E), ids reused with another ctime, byte-identical copies of lines in a later
    file, deletions without an end, running and pending jobs, and a day of Q records only
    (placed with the dominant offset).
    """
    rng = np.random.default_rng(seed)
    start = int(dt.datetime(2024, 10, 26, tzinfo=dt.UTC).timestamp())
    day_s = 86400
    lines: dict[int, list[tuple[int, str]]] = {d: [] for d in range(days + 1)}

    def put(epoch: int, rtype: str, job: str, attrs: str) -> None:
        day = min((epoch - start) // day_s, days)
        lines[day].append((epoch, f"{_stamp(epoch)};{rtype};{job};{attrs}"))

    for i in range(n_jobs):
        seq = 1000 + i if rng.random() > 0.1 else 1000 + int(rng.integers(0, max(1, i + 1)))
        shape = rng.choice(["plain", "array", "requeue", "deleted", "running", "pending"])
        suffix = ".srv" if rng.random() < 0.8 else ""
        job = f"{seq}{suffix}"
        if shape == "array":
            job = f"{seq}[{int(rng.integers(0, 4))}].srv" if rng.random() < 0.7 else f"{seq}-2"
        ctime = start + int(rng.integers(0, (days - 1) * day_s))
        base = f"user=u{i % 13} group=g{i % 3} queue=q{i % 2} ctime={ctime} qtime={ctime}"
        put(ctime, "Q", job, f"queue=q{i % 2}")
        if shape == "array" and rng.random() < 0.3:
            put(ctime, "Q", f"{seq}[].srv", "queue=q0")
        if shape == "pending":
            continue
        begin = ctime + int(rng.integers(60, day_s))  # often the next day's file
        host = f"exec_host=n{i % 9}/{i % 4}"
        if shape == "deleted":
            put(begin, "D", job, "requestor=root@srv")
            continue
        put(begin, "S", job, f"{base} start={begin} {host}")
        if shape == "running":
            continue
        if shape == "requeue":
            put(begin + 30, "R", job, "")
            begin += 60
            put(begin, "S", job, f"{base} start={begin} {host}")
        end = begin + int(rng.integers(1, 7200))
        exit_status = int(rng.choice([0, 0, 0, 1, 271, -11]))
        put(
            end,
            "E",
            job,
            f"{base} start={begin} {host} end={end} Exit_status={exit_status} "
            f"resources_used.walltime=00:00:{(end - begin) % 60:02d}",
        )
    paths = []
    folder.mkdir(parents=True, exist_ok=True)
    for day, entries in lines.items():
        entries.sort(key=lambda e: e[0])
        text = [line for _, line in entries]
        if day == days:  # a crash cut the last line of the log
            text.append(f"{_stamp(start + day * day_s + 5)};E;1000.srv;user=u0 ctime={start} st")
        if day and lines[day - 1]:  # an overlapping copy: the previous day's last lines again
            text = [line for _, line in lines[day - 1][-3:]] + text
        name = (dt.datetime.fromtimestamp(start + day * day_s, dt.UTC)).strftime("%Y%m%d")
        path = folder / name
        path.write_text("\n".join(text) + ("\n" if day < days else ""))  # last: no line end
        paths.append(path)
    # a day of Q records only: no epoch to measure its offset on
    only_q = folder / "20241031"
    only_q.write_text(
        "10/31/2024 10:00:00;Q;99999.srv;queue=q0\n10/31/2024 10:00:01;L;license;x=1\n"
    )
    paths.append(only_q)
    return paths


@pytest.fixture(scope="module")
def tricky(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tricky") / "log"
    tricky_log(folder, 400, seed=5)
    return folder


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("demo") / "log"
    write_demo_site(folder, n_jobs=300, cores=16, seed=3)
    return folder


@pytest.mark.parametrize(("partitions", "workers"), [(1, 1), (3, 1), (64, 1), (3, 2), (64, 2)])
def test_the_tricky_log_spilled_equals_in_memory(
    tricky: Path, tmp_path: Path, partitions: int, workers: int
) -> None:
    summary = same_as_in_memory(tricky, tmp_path / "out", partitions=partitions, workers=workers)
    # the log really has the shapes it is meant to have
    flags = summary["job_flags"]
    for flag in ("ID_REUSE", "RERUN", "DUPLICATE", "DELETED_BY_USER"):
        assert flags.get(flag, 0) > 0, flag
    assert summary["truncated_records"] > 0
    assert summary["array_parent_records"] > 0
    assert summary["duplicate_lines"] > 0
    assert summary["jobs_by_state"]["RUNNING"] > 0
    assert summary["jobs_by_state"]["PENDING"] > 0
    assert summary["dst"]  # CEST and CET offsets both measured


def test_with_a_zone_given_dst_flags_and_offsets_are_the_same(tricky: Path, tmp_path: Path) -> None:
    summary = same_as_in_memory(tricky, tmp_path / "out", tz="Europe/Brussels", partitions=5)
    assert summary["tz_source"] == "given"


def test_files_given_out_of_time_order_are_read_in_time_order(tricky: Path, tmp_path: Path) -> None:
    files = sorted(p for p in tricky.iterdir())[::-1]
    summary = same_as_in_memory([str(f) for f in files], tmp_path / "out", partitions=3)
    assert summary["files_reordered"] > 0


@pytest.mark.parametrize("partitions", [1, 3, 64])
def test_the_demo_site_spilled_equals_in_memory(
    demo: Path, tmp_path: Path, partitions: int
) -> None:
    same_as_in_memory(demo, tmp_path / "out", partitions=partitions)


def test_a_log_without_any_epoch_is_read_as_utc_both_ways(tmp_path: Path) -> None:
    log = tmp_path / "20240501"
    log.write_text("05/01/2024 10:00:00;Q;1.srv;queue=a\n05/01/2024 10:00:05;Q;2.srv;queue=a\n")
    summary = same_as_in_memory(log, tmp_path / "out", partitions=2)
    assert summary["tz_source"] == "assumed_utc"


def test_a_file_of_garbage_only_is_quarantined_and_named_both_ways(tmp_path: Path) -> None:
    folder = tmp_path / "log"
    folder.mkdir()
    (folder / "20240501").write_text(
        "05/01/2024 10:00:00;Q;1.srv;queue=a\n05/01/2024 10:00:05;E;1.srv;ctime=1714557600 "
        "start=1714557605 end=1714557700 exec_host=n1/0 Exit_status=0\n"
    )
    (folder / "20240502").write_text("05/02/2024 10:00:00;Q;2.srv;queue=a\n")
    summary = same_as_in_memory(folder, tmp_path / "out", partitions=2)
    assert summary["lines_quarantined"] == 0


def test_partition_keys_put_every_record_of_a_job_together() -> None:
    text = (
        b"05/01/2024 10:00:00;Q;7.srv;queue=a\n"
        b"05/01/2024 10:00:00;Q;7;queue=a\n"
        b"05/01/2024 10:00:00;Q;7.other.host;queue=a\n"
        b"05/01/2024 10:00:00;Q;12[3].srv;queue=a\n"
        b"05/01/2024 10:00:00;Q;12-3.srv;queue=a\n"
        b"05/01/2024 10:00:00;Q;12[].srv;queue=a\n"
        b"05/01/2024 10:00:00;Q;12[].srv;queue=a\n"
        b"05/01/2024 10:00:00;Q;8.srv;queue=a\n"
    )
    records = tokenize_torque_reference(text, src_file="f", site="s").records
    keys = torque_partition_keys(records).tolist()
    assert keys[0] == keys[1] == keys[2]
    assert keys[3] == keys[4]
    assert keys[5] == keys[6]
    assert len({keys[0], keys[3], keys[5], keys[7]}) == 4
    # stable: the same in another call (and another process: no salted hash)
    assert torque_partition_keys(records).tolist() == keys


def test_a_format_without_out_of_core_assembly_is_refused(tmp_path: Path) -> None:
    swf = tmp_path / "x.swf"
    swf.write_text("; Version: 2.2\n1 0 10 100 4 -1 -1 4 200 -1 1 17 3 5 1 -1 -1 -1\n")
    with pytest.raises(ConfigError, match="no out-of-core assembly"):
        parse_logs_to(swf, tmp_path / "out")
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_bad_workers_and_partitions_are_refused(demo: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="workers"):
        parse_logs_to(demo, tmp_path / "a", workers=0)
    with pytest.raises(ConfigError, match="partitions"):
        parse_logs_to(demo, tmp_path / "b", partitions=0)


# --------------------------------------------------------------------------------------------
# small random logs


_LINE = st.tuples(
    st.integers(0, 5),  # job sequence number
    st.sampled_from(["Q", "S", "E", "D", "R", "A"]),
    st.integers(0, 2),  # file
    st.integers(0, 1),  # which of two ctimes (id reuse)
    st.integers(0, 3),  # array index, 0 for none
    st.booleans(),  # copy the line again (a duplicate)
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_LINE, min_size=1, max_size=40), st.integers(1, 7))
def test_random_small_logs_spilled_equal_in_memory(
    tmp_path_factory: pytest.TempPathFactory, lines: list[tuple[Any, ...]], partitions: int
) -> None:
    folder = tmp_path_factory.mktemp("random")
    files: list[list[str]] = [[], [], []]
    base = 1714557600
    for n, (seq, rtype, file, which, index, again) in enumerate(lines):
        ctime = base + 1000 * which
        epoch = base + 3600 * file + n
        job = f"{seq}[{index}].srv" if index else f"{seq}.srv"
        attrs = {
            "Q": "queue=a",
            "S": f"ctime={ctime} start={epoch} exec_host=n1/0",
            "E": f"ctime={ctime} start={epoch - 10} end={epoch} exec_host=n1/0 Exit_status=0",
            "D": "requestor=u@h",
            "R": "",
            "A": "",
        }[rtype]
        stamp = dt.datetime.fromtimestamp(epoch + 7200, dt.UTC).strftime("%m/%d/%Y %H:%M:%S")
        line = f"{stamp};{rtype};{job};{attrs}"
        files[file].append(line)
        if again:
            files[min(file + 1, 2)].append(line)
    for i, text in enumerate(files):
        (folder / f"2024050{i + 1}").write_text("".join(f"{line}\n" for line in text))
    same_as_in_memory(folder, folder / "out", partitions=partitions)


# --------------------------------------------------------------------------------------------
# the real VSC month


@pytest.mark.realdata
@pytest.mark.slow
def test_the_vsc_month_spilled_equals_in_memory(real_data: Path, tmp_path: Path) -> None:
    month = real_data / "torque" / "vsc-kuleuven-2016-06"
    if not month.exists():
        pytest.skip(f"{month} is missing")
    summary = same_as_in_memory(month, tmp_path / "out", partitions=8, workers=2)
    assert summary["jobs"] > 0


def test_errors_raise_leaves_an_earlier_output_as_it_was(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        parse_logs_to(demo, out, partitions=2)
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    with pytest.raises(LogParseError):  # the demo log has two unreadable lines
        parse_logs_to(demo, out, partitions=2, errors="raise")
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
