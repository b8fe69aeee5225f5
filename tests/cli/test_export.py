"""gridtrace export: a jobs table to SWF / GWF, a jobs or trace table to Batsim."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest

from gridtrace.cli import main
from gridtrace.demo import write_demo_site
from gridtrace.errors import DataQualityWarning
from gridtrace.logs import read_gwf, read_swf, write_batsim, write_swf
from gridtrace.schema import read_table, trace_metadata


@pytest.fixture(scope="module")
def parsed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("export")
    write_demo_site(base / "log", n_jobs=200, cores=16, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        assert main(["parse", str(base / "log"), "-o", str(base / "site"), "--no-progress"]) == 0
    assert main(["trace", str(base / "site/jobs.parquet"), "-o", str(base), "--name", "t"]) == 0
    return base


def test_jobs_export_to_swf_and_gwf_read_back(parsed: Path) -> None:
    jobs = read_table(parsed / "site/jobs.parquet", "jobs")
    for fmt, reader in (("swf", read_swf), ("gwf", read_gwf)):
        out = parsed / f"site.{fmt}"
        assert main(["export", str(parsed / "site/jobs.parquet"), "--to", fmt, "-o", str(out)]) == 0
        again = reader(out).jobs
        assert again.num_rows == jobs.num_rows
        # the runtimes of the jobs that ran survive the text format
        assert sorted(r for r in again.column("run_s").to_pylist() if r is not None) == sorted(
            r for r in jobs.column("run_s").to_pylist() if r is not None
        )


def test_trace_export_to_batsim(parsed: Path) -> None:
    trace = read_table(parsed / "t.parquet", "trace")
    out = parsed / "t.json"
    assert main(["export", str(parsed / "t.parquet"), "--to", "batsim", "-o", str(out)]) == 0
    workload = json.loads(out.read_text())
    assert len(workload["jobs"]) == trace.num_rows
    assert workload["nb_res"] >= max(trace.column("cores").to_pylist())


def test_a_trace_cannot_be_exported_as_swf(parsed: Path, caplog: pytest.LogCaptureFixture) -> None:
    out = parsed / "t.swf"
    assert main(["export", str(parsed / "t.parquet"), "--to", "swf", "-o", str(out)]) != 0
    assert "SWF export takes a jobs table" in caplog.text
    assert not out.exists()


# ------------------------------------------------------------------ what other tools read

# AccaSim's SWF reader, as parsers.md §4 describes it: one regular expression of 18 numeric
# fields, every field an integer but the average CPU time (field 6). Written here from that
# description: a line it does not match whole is a job AccaSim misreads or drops.
_INTEGER = r"(-?\d+)"
_ACCASIM_LINE = re.compile(
    r"\s*" + r"\s+".join([_INTEGER] * 5 + [r"(-?\d+(?:\.\d+)?)"] + [_INTEGER] * 12) + r"\s*"
)


def accasim_fields(path: Path) -> list[tuple[str, ...]]:
    """The job lines of an SWF file as AccaSim's one-regex reader takes them; fails otherwise."""
    rows = []
    for line in path.read_text().splitlines():
        if line.startswith(";"):
            continue
        match = _ACCASIM_LINE.fullmatch(line)
        assert match is not None, f"AccaSim would misread: {line!r}"
        rows.append(match.groups())
    return rows


def test_swf_export_of_a_torque_site_is_integers_where_swf_says_integers(
    parsed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = read_table(parsed / "site/jobs.parquet", "jobs")
    out = parsed / "accasim.swf"
    assert main(["export", str(parsed / "site/jobs.parquet"), "--to", "swf", "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"{jobs.num_rows} of {jobs.num_rows} rows written as swf" in said
    fields = accasim_fields(out)
    back = read_swf(out).jobs
    assert len(fields) == back.num_rows == jobs.num_rows
    # what AccaSim reads is what gridtrace reads: run time and processors, line by line
    assert [int(f[3]) for f in fields] == [
        -1 if r is None else r for r in back["run_s"].to_pylist()
    ]
    assert [int(f[4]) for f in fields] == [
        -1 if c is None else c for c in back["cores_alloc"].to_pylist()
    ]
    header = read_swf(out).info["swf_header"]
    assert "MaxProcs" not in header  # a TORQUE log states no machine size: none is guessed
    assert main(["export", str(parsed / "site/jobs.parquet"), "--to", "swf", "-o", str(out),
                 "--cores", "16"]) == 0  # fmt: skip
    assert read_swf(out).info["swf_header"]["MaxProcs"] == 16


SWF_LOG = """\
; Version: 2.2a
;MaxProcs:128
;  MaxNodes :64
; UnixStartTime: 1100000000
; TimeZoneString: Europe/Paris
; Information: http://example.org/a
;              http://www.cs.huji.ac.il/labs/parallel/workload/
1 0 10 3600 64 3500.5 1024 64 7200 2048 1 1 1 -1 1 -1 -1 -1
2 30 5 0 1 -1 -1 1 60 -1 1 2 1 -1 1 -1 -1 -1
3 40 -1 -1 8 -1 -1 8 60 -1 5 2 1 -1 1 -1 -1 -1
4 50 0 100 128 -1 -1 128 600 -1 0 1 1 -1 1 -1 -1 -1
"""


def test_an_swf_log_through_parse_trace_simulate_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "site.swf"
    log.write_text(SWF_LOG)
    site = tmp_path / "site"
    assert main(["parse", str(log), "-o", str(site), "--no-progress"]) == 0
    jobs = read_table(site / "jobs.parquet", "jobs")
    assert main(["trace", str(site / "jobs.parquet"), "-o", str(tmp_path), "--name", "t"]) == 0
    said = capsys.readouterr().out
    assert "P = 128 cores (SWF header MaxProcs)" in said  # the header's, not the jobs' peak
    trace = tmp_path / "t.parquet"
    assert trace_metadata(read_table(trace, "trace"))["provenance"]["cores_source"] == "header"
    sim = ["simulate", str(trace), "-o", str(tmp_path / "sim"), "--warmup", "0", "--drain", "0"]
    assert main(sim) == 0
    assert "P = 128 cores, the trace's (SWF header MaxProcs)" in capsys.readouterr().out
    assert main([*sim, "--cores", "200"]) == 0
    assert "P = 200 cores (--cores)" in capsys.readouterr().out

    # the header travelled in jobs.parquet and is written back: read -> export -> read is exact
    out = tmp_path / "again.swf"
    assert main(["export", str(site / "jobs.parquet"), "--to", "swf", "-o", str(out)]) == 0
    first, second = read_swf(log), read_swf(out)
    assert second.info["swf_header"] == first.info["swf_header"]
    assert "http" not in first.info["swf_header"]
    assert second.jobs.column("run_s").equals(jobs.column("run_s"))

    # Batsim: the job that never ran is left out, the 0-s job gets a positive delay, and both
    # are said; nb_res is the header's
    out = tmp_path / "w.json"
    assert main(["export", str(site / "jobs.parquet"), "--to", "batsim", "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert "3 of 4 rows written as batsim" in said
    assert "1 left out (1 never ran or no run time)" in said
    assert "1 delays raised to 0.5 s" in said
    workload = json.loads(out.read_text())
    assert workload["nb_res"] == 128
    assert all(p["delay"] > 0 for p in workload["profiles"].values())


@pytest.mark.realdata
def test_real_vsc_month_exports_read_right(real_data: Path, tmp_path: Path) -> None:
    # issue 16: this month's SWF export had fractional KB that AccaSim misread (6,172 of 11,399
    # jobs), and its Batsim export said "11399 rows written" with 2,141 jobs left out
    from gridtrace.logs import parse_logs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        result = parse_logs(
            real_data / "torque" / "vsc-kuleuven-2016-06", format="torque", tz="Europe/Brussels"
        )
    jobs = result.jobs
    swf = write_swf(jobs, tmp_path / "vsc.swf")
    assert swf.rows_written == jobs.num_rows
    fields = accasim_fields(swf.path)
    back = read_swf(swf).jobs
    assert len(fields) == jobs.num_rows
    assert [int(f[3]) for f in fields] == [
        -1 if r is None else r for r in back["run_s"].to_pylist()
    ]
    assert sum(swf.adjusted.values()) > 0  # memory in bytes does not divide into whole KB
    batsim = write_batsim(jobs, tmp_path / "vsc.json", nb_res=10_000)
    assert batsim.rows_written + sum(batsim.left_out.values()) == jobs.num_rows
    assert batsim.rows_left_out > 0
    workload = json.loads(batsim.path.read_text())
    assert len(workload["jobs"]) == batsim.rows_written
    assert all(p["delay"] > 0 for p in workload["profiles"].values())
