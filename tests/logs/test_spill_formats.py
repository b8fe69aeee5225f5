"""Out-of-core assembly of Slurm, SGE and LSF logs: the same tables and summary as in memory.

Each format gets generated logs spread over several files with the shapes whose records must meet
in one partition (steps, array tasks and ranges, het components, requeues, PE slaves, retries,
copies of lines, unreadable lines), parsed both ways and compared column by column.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.demo import write_demo_site
from gridtrace.errors import DataQualityWarning
from gridtrace.logs import parse_logs, parse_logs_to
from gridtrace.logs._sge import SGE_FIELDS
from gridtrace.logs._slurm import SLURM_FIELDS

TABLES = ("records", "jobs", "quarantine")


def _through_parquet(table: pa.Table) -> pa.Table:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return pq.read_table(io.BytesIO(sink.getvalue()))


def same_as_in_memory(paths: Any, out: Path, **options: Any) -> dict[str, Any]:
    """Parse both ways; assert equal tables (every column, same row order) and summaries."""
    tz = options.pop("tz", None)
    fmt = options.pop("format", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        memory = parse_logs(paths, tz=tz, format=fmt)
        spilled = parse_logs_to(paths, out, tz=tz, format=fmt, **options)
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


def _spread(
    folder: Path, lines: list[str], files: int, rng: np.random.Generator, **kw: Any
) -> list[Path]:
    """Write the lines over ``files`` files, each line to a random file (order kept in each)."""
    folder.mkdir(parents=True, exist_ok=True)
    where = rng.integers(0, files, len(lines))
    paths = []
    for k in range(files):
        path = folder / f"{kw.get('stem', 'log')}-{k:02d}{kw.get('suffix', '')}"
        body = [kw["head"]] if kw.get("head") else []
        body += [line for line, w in zip(lines, where, strict=True) if w == k]
        path.write_bytes(("\n".join(body) + "\n").encode())
        paths.append(path)
    return paths


# --------------------------------------------------------------------------------------------
# Slurm

SLURM_BASE: dict[str, str] = {
    "JobID": "1001",
    "JobIDRaw": "1001",
    "Cluster": "hpc",
    "Partition": "batch",
    "QOS": "normal",
    "Account": "physics",
    "Group": "phys",
    "GID": "500",
    "User": "alice",
    "UID": "1500",
    "Submit": "2024-05-03T10:00:00",
    "Eligible": "2024-05-03T10:00:01",
    "Start": "2024-05-03T10:01:40",
    "End": "2024-05-03T11:01:40",
    "Elapsed": "01:00:00",
    "ExitCode": "0:0",
    "State": "COMPLETED",
    "NNodes": "2",
    "NCPUS": "16",
    "ReqCPUS": "16",
    "ReqMem": "2000Mc",
    "ReqTRES": "billing=16,cpu=16,mem=32000M,node=2",
    "AllocTRES": "billing=16,cpu=16,mem=32000M,node=2",
    "Timelimit": "02:00:00",
    "NodeList": "n[01-02]",
    "JobName": "sim",
    "MaxRSS": "",
}
SLURM_HEAD = "|".join([*SLURM_FIELDS, "MaxRSS"])


def _iso(epoch: int) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _slurm_line(**overrides: str) -> str:
    values = {**SLURM_BASE, **overrides}
    return "|".join(values[name] for name in [*SLURM_FIELDS, "MaxRSS"])


def slurm_lines(n_jobs: int, seed: int) -> list[str]:
    """Jobs with steps, arrays (tasks and ranges), het components, requeues, copies, bad lines."""
    rng = np.random.default_rng(seed)
    t0 = 1_714_723_200
    lines: list[str] = []
    for i in range(n_jobs):
        seq = 5000 + i if rng.random() > 0.15 else 5000 + int(rng.integers(0, i + 1))
        submit = t0 + int(rng.integers(0, 86_400))
        start = submit + int(rng.integers(0, 3600))
        end = start + int(rng.integers(1, 7200))
        shape = rng.choice(["plain", "task", "range", "het", "requeue", "pending", "odd"])
        job_id = str(seq)
        if shape == "task":
            job_id = f"{seq}_{int(rng.integers(0, 5))}"
        elif shape == "range":
            job_id = f"{seq}_[{int(rng.integers(0, 3))}-{int(rng.integers(3, 6))}]"
        elif shape == "het":
            job_id = f"{seq}+{int(rng.integers(0, 2))}"
        elif shape == "odd":
            job_id = f"x{seq}"
        times = {"Submit": _iso(submit), "Eligible": _iso(submit), "Start": _iso(start)}
        times["End"] = _iso(end)
        state = str(rng.choice(["COMPLETED", "FAILED", "CANCELLED by 500", "TIMEOUT"]))
        user = f"u{i % 7}"
        if shape in ("pending", "range"):
            line = _slurm_line(
                JobID=job_id,
                JobIDRaw=str(seq),
                State="PENDING",
                Start="Unknown",
                End="Unknown",
                Submit=_iso(submit),
                Eligible=_iso(submit),
                User=user,
                NodeList="None assigned",
            )
            lines.append(line)
            continue
        if shape == "requeue":
            lines.append(
                _slurm_line(JobID=job_id, JobIDRaw=str(seq), State="REQUEUED", User=user, **times)
            )
            later = {**times, "Start": _iso(end + 60), "End": _iso(end + 600)}
            lines.append(
                _slurm_line(JobID=job_id, JobIDRaw=str(seq), State=state, User=user, **later)
            )
        else:
            cluster = "hpc" if rng.random() < 0.8 else "gpu"
            lines.append(
                _slurm_line(
                    JobID=job_id,
                    JobIDRaw=str(seq),
                    State=state,
                    User=user,
                    Cluster=cluster,
                    **times,
                )
            )
        for step in ("batch", "0")[: int(rng.integers(0, 3))]:
            rss = f"{int(rng.integers(1, 9000))}K"
            lines.append(
                _slurm_line(JobID=f"{job_id}.{step}", JobIDRaw=f"{seq}.{step}", MaxRSS=rss, **times)
            )
        if rng.random() < 0.1:
            lines.append(lines[-1])  # a copy of a line
        if rng.random() < 0.05:
            lines.append(f"{seq}|garbage")
    if n_jobs:
        lines.append(_slurm_line(JobID="999999.batch", JobIDRaw="999999.batch"))  # orphan step
    return lines


@pytest.fixture(scope="module")
def slurm_log(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    rng = np.random.default_rng(17)
    folder = tmp_path_factory.mktemp("slurm")
    return _spread(
        folder, slurm_lines(300, 5), 4, rng, head=SLURM_HEAD, stem="hpc", suffix=".sacct"
    )


@pytest.mark.parametrize(
    ("partitions", "workers"),
    [
        (1, 1),
        (3, 1),
        (64, 1),
        pytest.param(1, 2, marks=pytest.mark.slow),
        pytest.param(3, 2, marks=pytest.mark.slow),
        pytest.param(64, 2, marks=pytest.mark.slow),
    ],
)
def test_slurm_spilled_equals_in_memory(
    slurm_log: list[Path], tmp_path: Path, partitions: int, workers: int
) -> None:
    summary = same_as_in_memory(
        slurm_log, tmp_path / "out", tz="UTC", partitions=partitions, workers=workers
    )
    assert summary["format"] == "slurm"
    assert summary["slurm_steps"] > 0
    assert summary["slurm_orphan_steps"] >= 1
    assert summary["slurm_array_ranges"] > 0
    assert summary["duplicate_lines"] > 0
    assert summary["slurm_clusters"] == ["gpu", "hpc"]
    assert "files_reordered" not in summary
    assert summary["job_flags"].get("STEPS_FOLDED", 0) > 0


def test_slurm_offsets_count_like_in_memory(tmp_path: Path) -> None:
    lines = [
        _slurm_line(
            JobID=str(10 + i),
            Submit=f"2024-05-03T10:00:00{off}",
            Eligible=f"2024-05-03T10:00:00{off}",
            Start=f"2024-05-03T10:01:00{off}",
            End=f"2024-05-03T11:00:00{off}",
        )
        for i, off in enumerate(["+02:00", "+01:00", "+01:00", "+02:00", "+02:00", "+01:00"])
    ]
    paths = _spread(
        tmp_path / "in", lines, 2, np.random.default_rng(1), stem="hpc", suffix=".sacct"
    )
    summary = same_as_in_memory(paths, tmp_path / "out", partitions=5)
    assert summary["tz_offset_s"] == 3600  # a tie: the smaller offset, as in memory


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    n_jobs=st.integers(0, 40),
    seed=st.integers(0, 2**16),
    files=st.integers(1, 4),
    partitions=st.sampled_from([1, 2, 3, 7, 64]),
)
def test_slurm_generated_logs_spilled_equal_in_memory(
    tmp_path_factory: pytest.TempPathFactory, n_jobs: int, seed: int, files: int, partitions: int
) -> None:
    folder = tmp_path_factory.mktemp("gen")
    lines = slurm_lines(n_jobs, seed) or [SLURM_HEAD]
    paths = _spread(
        folder / "in",
        lines,
        files,
        np.random.default_rng(seed),
        head=SLURM_HEAD,
        stem="hpc",
        suffix=".sacct",
    )
    same_as_in_memory(paths, folder / "out", tz="UTC", partitions=partitions)


# --------------------------------------------------------------------------------------------
# SGE

SGE_BASE: dict[str, str] = {
    "qname": "long.q",
    "hostname": "n01",
    "group": "atlas",
    "owner": "alice",
    "job_name": "sim.sh",
    "job_number": "4711",
    "account": "sge",
    "priority": "0",
    "submission_time": "1714723000",
    "start_time": "1714723100",
    "end_time": "1714726700",
    "failed": "0",
    "exit_status": "0",
    "ru_wallclock": "3600",
    "ru_utime": "3500.5",
    "ru_stime": "20.25",
    "ru_maxrss": "2048",
    **{name: "0" for name in SGE_FIELDS[17:31]},
    "project": "proj1",
    "department": "defaultdepartment",
    "granted_pe": "NONE",
    "slots": "1",
    "task_number": "0",
    "cpu": "3520.75",
    "mem": "12.5",
    "io": "0.002",
    "category": "-l h_rt=7200,mem_free=2G",
    "iow": "0.000000",
    "pe_taskid": "NONE",
    "maxvmem": "2147483648.000000",
    "arid": "0",
    "ar_submission_time": "0",
}
SGE_HEADERS = ("# Version: 8.1.9\n# \n# DO NOT MODIFY THIS FILE MANUALLY!\n# ", "# Version: 8.1.6")


def _sge_line(**overrides: str) -> str:
    values = {**SGE_BASE, **overrides}
    return ":".join(values[name] for name in SGE_FIELDS[:45])


def sge_lines(n_jobs: int, seed: int) -> list[str]:
    """Jobs with array tasks, retries, PE slaves, copies, reused numbers and zero submit times."""
    rng = np.random.default_rng(seed)
    t0 = 1_714_723_000
    lines: list[str] = []
    for i in range(n_jobs):
        number = str(4000 + i if rng.random() > 0.15 else 4000 + int(rng.integers(0, i + 1)))
        submit = t0 + int(rng.integers(0, 86_400))
        start = submit + int(rng.integers(1, 3600))
        end = start + int(rng.integers(1, 7200))
        task = str(int(rng.integers(1, 4))) if rng.random() < 0.3 else "0"
        ms = rng.random() < 0.1
        scale = 1000 if ms else 1
        base = {
            "job_number": number,
            "task_number": task,
            "submission_time": str(submit * scale),
            "start_time": str(start * scale),
            "end_time": str(end * scale),
            "owner": f"u{i % 5}",
            "hostname": f"n{i % 6:02d}",
        }
        shape = rng.choice(["plain", "retry", "pe", "zero_submit"])
        if shape == "retry":
            lines.append(_sge_line(**{**base, "failed": "26 : opening input/output file"}))
            base = {
                **base,
                "start_time": str((end + 10) * scale),
                "end_time": str((end + 99) * scale),
            }
        if shape == "pe":
            for k in range(int(rng.integers(1, 4))):
                slave = {
                    **base,
                    "granted_pe": "mpi",
                    "submission_time": "0",
                    "pe_taskid": f"{k + 1}.n{k:02d}",
                    "hostname": f"n{k + 10:02d}",
                }
                lines.append(_sge_line(**slave))
            base = {**base, "granted_pe": "mpi", "slots": "8", "category": "-pe mpi 8"}
        if shape == "zero_submit":
            lines.append(_sge_line(**{**base, "failed": "1 : assumedly before job"}))
            base = {**base, "submission_time": "0"}
        lines.append(_sge_line(**base))
        if rng.random() < 0.1:
            lines.append(lines[-1])  # a record written twice
        if rng.random() < 0.05:
            lines.append("4711:not:enough")
    if n_jobs:
        lines.append(_sge_line(job_number="888888", pe_taskid="1.n02"))  # orphan slave
    return lines


def _sge_files(folder: Path, lines: list[str], files: int, seed: int) -> list[Path]:
    rng = np.random.default_rng(seed)
    paths = _spread(folder, lines, files, rng, stem="wynton", suffix=".accounting")
    for k, path in enumerate(paths):  # a version header on some files
        if k % 2 == 0:
            path.write_bytes(SGE_HEADERS[(k // 2) % 2].encode() + b"\n" + path.read_bytes())
    return paths


@pytest.fixture(scope="module")
def sge_log(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return _sge_files(tmp_path_factory.mktemp("sge"), sge_lines(300, 3), 5, 11)


@pytest.mark.parametrize(
    ("partitions", "workers"),
    [
        (1, 1),
        (3, 1),
        (64, 1),
        pytest.param(1, 2, marks=pytest.mark.slow),
        pytest.param(3, 2, marks=pytest.mark.slow),
        pytest.param(64, 2, marks=pytest.mark.slow),
    ],
)
def test_sge_spilled_equals_in_memory(
    sge_log: list[Path], tmp_path: Path, partitions: int, workers: int
) -> None:
    summary = same_as_in_memory(
        sge_log, tmp_path / "out", format="sge", partitions=partitions, workers=workers
    )
    assert summary["format"] == "sge"
    assert summary["sge_versions"] == ["8.1.9", "8.1.6"]
    assert summary["sge_pe_slaves"] > 0
    assert summary["sge_orphan_pe_slaves"] == 1
    assert summary["sge_duplicates_folded"] > 0
    assert len(summary["sge_millisecond_files"]) > 1


@settings(max_examples=10, deadline=None)
@given(
    n_jobs=st.integers(0, 30),
    seed=st.integers(0, 2**16),
    files=st.integers(1, 4),
    partitions=st.sampled_from([1, 3, 64]),
)
def test_sge_generated_logs_spilled_equal_in_memory(
    tmp_path_factory: pytest.TempPathFactory, n_jobs: int, seed: int, files: int, partitions: int
) -> None:
    folder = tmp_path_factory.mktemp("gen")
    lines = sge_lines(n_jobs, seed) or [SGE_HEADERS[1]]
    paths = _sge_files(folder / "in", lines, files, seed)
    same_as_in_memory(paths, folder / "out", format="sge", partitions=partitions)


# --------------------------------------------------------------------------------------------
# LSF

LSF_HEAD = (
    '"JOB_FINISH" "10.1" {event} {job} 1500 33816578 4 {submit} 0 0 {start} "{user}" '
    '"normal" "span[hosts=1]" "" "" "login1" "/home/alice" "" "out.%J" "" "{submit}.{job}"'
)
LSF_REST = (
    '0 1 "4*node07" '
    '64 12.5 "sim ""fast"" run" "./run.sh" 3000.5 99.5 204800 0 -1 0 0 1000 0 0 0 0 -1 0 0 0 '
    '10 2 -1 "" "physics" 0 4 "" "" 0 409600 819200 '
    '"" "" "" "" 0 "" 0 "" -1 "/physics/alice" "" "" "" -1 "" "" 6160 "" {start} "" "" '
    '2 1032 "0" 1033 "0" 0 7200 0 300000 "select[type == local] span[hosts=1] " "" -1 "" -1 0 '
    '"" 0 0 "" 3500 "/home/alice" 0 "" 0.000000 0.00 0.00 0.00 0.00 4 "node07" "node07" '
    '"node07" "node07" -1 0 0 0 0 0'
)


def _lsf_line(job: int, submit: int, start: int, event: int, user: str) -> str:
    values = {"job": job, "submit": submit, "start": start, "event": event, "user": user}
    return (LSF_HEAD + " " + LSF_REST).format(**values)


def lsf_lines(n_jobs: int, seed: int) -> list[str]:
    """JOB_FINISH records with requeues (one id, one submit), reused ids, copies, bad lines."""
    rng = np.random.default_rng(seed)
    t0 = 1_700_000_000
    lines: list[str] = []
    for i in range(n_jobs):
        job = 5000 + i if rng.random() > 0.15 else 5000 + int(rng.integers(0, i + 1))
        submit = t0 + int(rng.integers(0, 86_400))
        start = submit + int(rng.integers(1, 3600))
        event = start + int(rng.integers(1, 7200))
        if rng.random() < 0.15:  # an earlier attempt of the same job
            lines.append(_lsf_line(job, submit, start, event - 1, f"u{i % 4}"))
            start, event = event + 10, event + 500
        lines.append(_lsf_line(job, submit, start, event, f"u{i % 4}"))
        if rng.random() < 0.1:
            lines.append(lines[-1])
        if rng.random() < 0.05:
            lines.append('"JOB_FINISH" "10.1" garbage')
    return lines


@pytest.fixture(scope="module")
def lsf_log(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    rng = np.random.default_rng(23)
    folder = tmp_path_factory.mktemp("lsf")
    return _spread(folder, lsf_lines(300, 9), 3, rng, stem="hpc", suffix=".lsb.acct")


@pytest.mark.parametrize(
    ("partitions", "workers"),
    [
        (1, 1),
        (3, 1),
        (64, 1),
        pytest.param(1, 2, marks=pytest.mark.slow),
        pytest.param(3, 2, marks=pytest.mark.slow),
        pytest.param(64, 2, marks=pytest.mark.slow),
    ],
)
def test_lsf_spilled_equals_in_memory(
    lsf_log: list[Path], tmp_path: Path, partitions: int, workers: int
) -> None:
    summary = same_as_in_memory(
        lsf_log, tmp_path / "out", format="lsf", partitions=partitions, workers=workers
    )
    assert summary["format"] == "lsf"
    assert summary["duplicate_lines"] > 0
    assert summary["jobs_by_state"].get("REQUEUED", 0) > 0


@settings(max_examples=10, deadline=None)
@given(
    n_jobs=st.integers(0, 30),
    seed=st.integers(0, 2**16),
    files=st.integers(1, 3),
    partitions=st.sampled_from([1, 3, 64]),
)
def test_lsf_generated_logs_spilled_equal_in_memory(
    tmp_path_factory: pytest.TempPathFactory, n_jobs: int, seed: int, files: int, partitions: int
) -> None:
    folder = tmp_path_factory.mktemp("gen")
    lines = lsf_lines(n_jobs, seed) or [
        _lsf_line(1, 1_700_000_000, 1_700_000_100, 1_700_000_200, "a")
    ]
    paths = _spread(
        folder / "in", lines, files, np.random.default_rng(seed), stem="hpc", suffix=".lsb.acct"
    )
    same_as_in_memory(paths, folder / "out", format="lsf", partitions=partitions)


# --------------------------------------------------------------------------------------------
# on a dask.distributed cluster (parse_logs_to(..., scheduler=ADDRESS))


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        processes=True, n_workers=2, threads_per_worker=1, dashboard_address=":0"
    ) as cluster:
        yield cluster.scheduler_address


@pytest.mark.slow
def test_torque_on_a_cluster_equals_in_memory(scheduler: str, tmp_path: Path) -> None:
    write_demo_site(tmp_path / "log", n_jobs=200, cores=16, seed=3)
    same_as_in_memory(tmp_path / "log", tmp_path / "out", partitions=3, scheduler=scheduler)


@pytest.mark.slow
def test_slurm_on_a_cluster_equals_in_memory(scheduler: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    paths = _spread(
        tmp_path / "in", slurm_lines(150, 4), 3, rng, head=SLURM_HEAD, stem="hpc", suffix=".sacct"
    )
    summary = same_as_in_memory(
        paths, tmp_path / "out", tz="UTC", partitions=7, scheduler=scheduler
    )
    assert summary["slurm_steps"] > 0


@pytest.mark.slow
def test_sge_and_lsf_on_a_cluster_equal_in_memory(scheduler: str, tmp_path: Path) -> None:
    sge = _sge_files(tmp_path / "sge", sge_lines(100, 4), 3, 4)
    same_as_in_memory(sge, tmp_path / "sge-out", format="sge", partitions=3, scheduler=scheduler)
    rng = np.random.default_rng(3)
    lsf = _spread(tmp_path / "lsf", lsf_lines(100, 4), 2, rng, stem="hpc", suffix=".lsb.acct")
    same_as_in_memory(lsf, tmp_path / "lsf-out", format="lsf", partitions=3, scheduler=scheduler)


# --------------------------------------------------------------------------------------------
# the real logs (GRIDTRACE_REAL_DATA: the shared data folder; skipped when unset)


def _real(*parts: str) -> Path:
    root = os.environ.get("GRIDTRACE_REAL_DATA")
    if not root:
        pytest.skip("GRIDTRACE_REAL_DATA is not set")
    path = Path(root).joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is missing")
    return path


@pytest.mark.parametrize("partitions", [3, 64])
@pytest.mark.parametrize(
    ("folder", "options"),
    [
        ("slurm", {"tz": "UTC"}),
        ("sge", {"format": "sge"}),
        ("lsf", {"format": "lsf"}),
    ],
)
def test_the_real_logs_spilled_equal_in_memory(
    tmp_path: Path, folder: str, options: dict[str, Any], partitions: int
) -> None:
    files = sorted(p for p in _real("other", folder).iterdir() if not p.name.startswith("."))
    for path in files:  # each file alone, then the folder (files of different layouts)
        out = tmp_path / path.name
        same_as_in_memory([path], out, partitions=partitions, **options)
    same_as_in_memory(_real("other", folder), tmp_path / "all", partitions=partitions, **options)


def test_slurm_ids_that_name_one_job_differently_meet(tmp_path: Path) -> None:
    """Leading zeros, ranges and task ids, het parts and their steps: one key, one partition."""
    ids = ["0123_4", "123_[1-5]", "123_4.batch", "123+0", "123+0.0", "123+1", "123.extern"]
    ids += ["00123", "abc_1", "abc_1.batch", "9007199254740993", "9007199254740992"]
    lines = [_slurm_line(JobID=job_id, MaxRSS=f"{i + 1}K") for i, job_id in enumerate(ids)]
    for files in (1, 3):
        paths = _spread(
            tmp_path / f"in{files}", lines, files, np.random.default_rng(files),
            head=SLURM_HEAD, stem="hpc", suffix=".sacct",
        )  # fmt: skip
        for partitions in (2, 64):
            out = tmp_path / f"out{files}-{partitions}"
            same_as_in_memory(paths, out, tz="UTC", partitions=partitions)


# --------------------------------------------------------------------------------------------
# a whole file spilled as it is tokenised (LSF), and merge windows sized in bytes


@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_lsf_spilled_batch_by_batch_equals_in_memory(
    tmp_path: Path, lsf_log: list[Path], workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gridtrace.logs import _spill
    from gridtrace.logs._spill import spill_parse

    monkeypatch.setattr(_spill, "_FEW_RECORDS", 1)  # windows sized by these small files too
    files = [str(p) for p in lsf_log]
    # a record spanning lines, an over-long line (the read guard's row) and a bad line
    extra = tmp_path / "in" / "odd.lsb.acct"
    extra.parent.mkdir()
    lines = lsf_lines(40, 5)
    span = lines[3].replace('"sim ""fast"" run"', '"sim\nfast run"')
    odd = [*lines[:3], span, "x" * (2 << 20), *lines[4:]]
    extra.write_text("\n".join(odd) + "\n")
    files.append(str(extra))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        memory = parse_logs(files, format="lsf")
        done = spill_parse(
            "lsf",
            files,
            tmp_path / "out",
            site=memory.records.column("site")[0].as_py(),
            workers=workers,
            partitions=3,
            batch_bytes=4_000,  # a chunk of 4 kB of text: many batches in each file
            window_bytes=50_000,  # a dozen records a window: many windows
        )
    for name in TABLES:
        expected = _through_parquet(getattr(memory, name))
        got = pq.read_table(tmp_path / "out" / f"{name}.parquet")
        assert got.schema.equals(expected.schema), name
        assert got.num_rows == expected.num_rows, name
        for column in expected.column_names:
            assert got.column(column).equals(expected.column(column)), (name, column)
    summary = memory.summary()
    assert {k: v for k, v in done.summary.items() if k != "files"} == {
        k: summary[k] for k in done.summary if k != "files"
    }
    assert summary["lines_quarantined"] > 0
    assert any("too long" in r for r in summary["quarantine_reasons"])
    assert pq.ParquetFile(tmp_path / "out" / "records.parquet").num_row_groups > 10
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".")]


def test_merge_windows_are_sized_in_bytes(
    tmp_path: Path, lsf_log: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gridtrace.logs import _spill
    from gridtrace.logs._spill import _window_rows, spill_parse

    # a small file's bytes count as spread over 4,096 records: its fixed costs do not make
    # every window small
    few = _spill._Spilled("f", 10, 10, pa.table({}), {}, 10 * 3000)
    many = _spill._Spilled("g", 100_000, 100_000, pa.table({}), {}, 100_000 * 400)
    assert _window_rows([few, many], 1 << 17, 64 << 20) == 1 << 17  # 400 bytes a record
    assert _window_rows([few, many], 1 << 17, 4 << 20) == (4 << 20) // 400
    assert _window_rows([few, many], 1 << 17, None) == 1 << 17
    monkeypatch.setattr(_spill, "_FEW_RECORDS", 1)  # windows sized by these small files too
    files = [str(p) for p in lsf_log]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        wide = spill_parse("lsf", files, tmp_path / "a", site="s", partitions=2)
        narrow = spill_parse(
            "lsf", files, tmp_path / "b", site="s", partitions=2, window_bytes=200_000
        )
    assert wide.summary == narrow.summary
    groups = [pq.ParquetFile(tmp_path / d / "records.parquet").num_row_groups for d in "ab"]
    assert groups[0] == 1  # ~400 records of a few kB: one window of 64 MiB
    assert groups[1] > 3  # 200 kB a window: a few dozen records each
    for name in TABLES:
        a = pq.read_table(tmp_path / "a" / f"{name}.parquet")
        assert a.equals(pq.read_table(tmp_path / "b" / f"{name}.parquet")), name
