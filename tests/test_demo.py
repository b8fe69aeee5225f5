"""The demo site: its log parses back to the jobs it was written from."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from gridtrace.demo import write_demo_site
from gridtrace.errors import ConfigError, DataQualityWarning
from gridtrace.logs import build_trace, read_torque
from gridtrace.schema import trace_metadata

COLUMNS = [
    "job_id_raw",
    "user",
    "group",
    "queue",
    "submit_time",
    "start_time",
    "end_time",
    "cores_alloc",
    "exit_code",
    "state",
]


def test_demo_log_parses_back_to_its_jobs_across_the_dst_change(tmp_path: Path) -> None:
    demo = write_demo_site(tmp_path, n_jobs=2500, cores=40, seed=11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        parsed = read_torque(tmp_path, site="demo")
    assert parsed.lines_quarantined == demo.planted_bad_lines
    assert parsed.lines_read == parsed.lines_parsed + parsed.lines_quarantined
    # the log spans the change to summer time: both offsets are inferred from the records
    assert parsed.info["offsets_seen"].keys() == {"3600", "7200"}
    assert parsed.info["dst"] is True
    # the planted queue records of jobs that never got further are pending jobs, each flagged
    state = parsed.jobs.column("state").to_numpy(zero_copy_only=False)
    pending = parsed.jobs.filter(state == "PENDING").to_pylist()
    assert {j["job_id_raw"]: j["flags"][0] for j in pending} == dict(
        zip(demo.planted_pending, ["NUL_STRIPPED", "NON_UTF8", "CONTROL_CHARS"], strict=True)
    )
    assert parsed.summary()["record_flags"]["CUT_FRAGMENT"] == 1  # never a job
    assert parsed.info["nul_bytes_stripped"] == 1024
    # the end record cut by the crash: recovered, its end its own stamp, its exit status lost
    truth = demo.jobs.select(COLUMNS).to_pylist()
    for row in truth:
        if row["job_id_raw"] == demo.truncated_job:
            row.update(state="UNKNOWN", exit_code=None)
    (cut,) = [j for j in parsed.jobs.to_pylist() if j["job_id_raw"] == demo.truncated_job]
    assert {"TRUNCATED", "END_FROM_STAMP", "NO_NEWLINE"} <= set(cut["flags"])
    seen = parsed.jobs.filter(state != "PENDING")
    by_id = sorted(truth, key=lambda row: row["job_id_raw"])
    assert seen.select(COLUMNS).sort_by("job_id_raw").to_pylist() == by_id
    trace = build_trace(seen, records=parsed.records)
    assert trace_metadata(trace)["cores"] == 40


def test_same_seed_same_files(tmp_path: Path) -> None:
    first = write_demo_site(tmp_path / "a", n_jobs=200, cores=16, seed=5).files
    second = write_demo_site(tmp_path / "b", n_jobs=200, cores=16, seed=5).files
    assert [f.read_bytes() for f in first] == [f.read_bytes() for f in second]


def test_cores_must_fill_whole_nodes(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="multiple"):
        write_demo_site(tmp_path, cores=20)
