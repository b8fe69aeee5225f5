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
    truth = demo.jobs.select(COLUMNS).sort_by("job_id_raw")
    # the two planted readable-but-damaged Q lines make jobs of their own, still pending
    seen = parsed.jobs.filter(
        parsed.jobs.column("state").to_numpy(zero_copy_only=False) != "PENDING"
    )
    assert seen.select(COLUMNS).sort_by("job_id_raw").equals(truth)
    trace = build_trace(seen, records=parsed.records)
    assert trace_metadata(trace)["cores"] == 40


def test_same_seed_same_files(tmp_path: Path) -> None:
    first = write_demo_site(tmp_path / "a", n_jobs=200, cores=16, seed=5).files
    second = write_demo_site(tmp_path / "b", n_jobs=200, cores=16, seed=5).files
    assert [f.read_bytes() for f in first] == [f.read_bytes() for f in second]


def test_cores_must_fill_whole_nodes(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="multiple"):
        write_demo_site(tmp_path, cores=20)
