"""Damaged copies of the shared real TORQUE / PBS Pro logs (issue 16, item 3 and the conflicts).

Each test copies real files from ``$GRIDTRACE_REAL_DATA/torque/`` into a temporary folder, damages
the copy the way crashes, rotations and copies do, parses both, and checks that the job table is the
undamaged one except for the damaged jobs, which are recovered and flagged as the reader promises.
Nothing of the real data is kept in the repository.
"""

from __future__ import annotations

import gzip
import warnings
from pathlib import Path
from typing import Any

import pytest

from gridtrace.errors import DataQualityWarning
from gridtrace.logs import ParseResult, build_trace, read_torque

pytestmark = pytest.mark.realdata

VSC = "vsc-kuleuven-2016-06"
NCAR = "ncar-laramie-pbspro-20180212"
DAYS = ("20160601", "20160602", "20160603")


def parse(paths: Path | list[Path], **kwargs: Any) -> ParseResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        result = read_torque(paths, site="real", **kwargs)
    assert result.lines_read == result.lines_parsed + result.lines_quarantined
    return result


def vsc_days(real_data: Path, folder: Path) -> list[Path]:
    """Copy three VSC days into ``folder``, decompressed; return the files in date order."""
    source = real_data / "torque" / VSC
    if not source.is_dir():
        pytest.skip(f"{source} is missing")
    folder.mkdir(parents=True)
    files = []
    for day in DAYS:
        path = folder / day
        path.write_bytes(gzip.decompress((source / f"{day}.gz").read_bytes()))
        files.append(path)
    return files


def ncar_day(real_data: Path, folder: Path) -> Path:
    source = real_data / "torque" / NCAR
    if not source.is_file():
        pytest.skip(f"{source} is missing")
    folder.mkdir(parents=True)
    path = folder / NCAR
    path.write_bytes(source.read_bytes())
    return path


def by_attempt(result: ParseResult) -> dict[tuple[str, int], dict[str, Any]]:
    """Jobs keyed by (job_key, attempt), without the columns that name the copy's files."""
    rows = {}
    for row in result.jobs.to_pylist():
        row["src_file"] = Path(row["src_file"]).name
        rows[(row["job_key"], row["attempt"])] = row
    return rows


def assert_same_except(
    clean: ParseResult, damaged: ParseResult, changed: set[str], *, ignore: tuple[str, ...] = ()
) -> dict[tuple[str, int], dict[str, Any]]:
    """Every job of ``clean`` is in ``damaged`` unchanged but those of ``changed`` job ids; no
    job appears that ``clean`` does not have. Returns the damaged table by attempt."""
    before, after = by_attempt(clean), by_attempt(damaged)
    assert set(after) <= set(before), set(after) - set(before)  # no phantom job
    for key, row in before.items():
        if row["job_id_raw"] in changed:
            continue
        assert key in after, key
        kept = {k: v for k, v in after[key].items() if k not in ignore}
        assert kept == {k: v for k, v in row.items() if k not in ignore}, key
    return after


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[:-1]


def find(lines: list[bytes], kind: bytes, start: int = 0) -> int:
    return next(i for i in range(start, len(lines)) if lines[i][19:22] == b";" + kind + b";")


def job_id(line: bytes) -> str:
    return line.split(b";")[2].decode()


def test_nul_run_after_a_cut_record(real_data: Path, tmp_path: Path) -> None:
    clean_files = vsc_days(real_data, tmp_path / "clean")
    files = vsc_days(real_data, tmp_path / "damaged")
    lines = lines_of(files[1])
    # a crash cut an E record in the middle; on restart the server wrote its next record after a
    # run of NULs, on the same physical line; elsewhere a block of the file is only NULs
    cut_at = find(lines, b"E", 500)
    cut_job, next_job = job_id(lines[cut_at]), job_id(lines[cut_at + 1])
    merged = lines[cut_at][:150] + b"\x00" * 3000 + lines[cut_at + 1]
    damaged = [*lines[:cut_at], merged, *lines[cut_at + 2 :]]
    damaged.insert(1000, b"\x00" * 4096)
    files[1].write_bytes(b"\n".join(damaged) + b"\n")

    clean, result = parse(tmp_path / "clean"), parse(tmp_path / "damaged")
    assert clean_files[1].name == files[1].name
    assert result.lines_read == clean.lines_read  # one line merged into another, one added
    assert result.quarantine.column("reason").to_pylist() == [
        "NUL bytes only (what a crash or a log rotation leaves)"
    ]
    assert result.info["nul_bytes_stripped"] == 3000 + 4096
    after = assert_same_except(clean, result, {cut_job, next_job}, ignore=("src_line",))
    # the record after the NUL run is read whole; its job says its line was repaired
    (record,) = result.records.filter(
        [("CUT_FRAGMENT" in (f or [])) for f in result.records.column("flags").to_pylist()]
    ).to_pylist()
    assert record["job_id_raw"] == next_job
    assert record["raw"] == merged  # the fragment is recoverable
    next_rows = [r for r in after.values() if r["job_id_raw"] == next_job]
    clean_next = [r for r in by_attempt(clean).values() if r["job_id_raw"] == next_job]
    assert [r["state"] for r in next_rows] == [r["state"] for r in clean_next]
    assert all("NUL_STRIPPED" in r["flags"] for r in next_rows)
    # the cut E record is never a job: its job lost its end record, nothing was made up
    (cut,) = [r for r in after.values() if r["job_id_raw"] == cut_job]
    assert (cut["state"], cut["end_time"]) == ("RUNNING", None)
    assert "NO_END_RECORD" in cut["flags"]


def test_latin1_user_name(real_data: Path, tmp_path: Path) -> None:
    ncar_day(real_data, tmp_path / "clean")
    path = ncar_day(real_data, tmp_path / "damaged")
    data = path.read_bytes()
    assert data.count(b"user=matthews ") > 2
    path.write_bytes(data.replace(b"user=matthews ", b"user=ga\xe9ndalf "))

    clean, result = parse(tmp_path / "clean"), parse(tmp_path / "damaged")
    matthews = {r["job_id_raw"] for r in clean.jobs.to_pylist() if r["user"] == "matthews"}
    after = assert_same_except(clean, result, matthews)
    renamed = [r for r in after.values() if r["job_id_raw"] in matthews]
    assert renamed
    for row in renamed:
        assert row["user"] == "ga\u00e9ndalf"
        assert "NON_UTF8" in row["flags"]
        original = by_attempt(clean)[(row["job_key"], row["attempt"])]
        assert {k: v for k, v in row.items() if k not in ("user", "flags")} == {
            k: v for k, v in original.items() if k not in ("user", "flags")
        }
    flagged = [r for r in result.records.to_pylist() if "NON_UTF8" in r["flags"]]
    assert len(flagged) == data.count(b"user=matthews ")
    assert all(b"user=ga\xe9ndalf " in r["raw"] for r in flagged)  # the original bytes


def test_final_end_record_cut_short(real_data: Path, tmp_path: Path) -> None:
    clean_files = vsc_days(real_data, tmp_path / "clean")
    files = vsc_days(real_data, tmp_path / "damaged")
    lines = lines_of(files[1])
    last_e = max(i for i, line in enumerate(lines) if line[19:22] == b";E;")
    victim = job_id(lines[last_e])
    # both copies end with that E record; in the damaged one a crash cut it before end=
    clean_files[1].write_bytes(b"\n".join(lines[: last_e + 1]) + b"\n")
    files[1].write_bytes(b"\n".join(lines[:last_e]) + b"\n" + lines[last_e].split(b" end=")[0])

    clean, result = parse(tmp_path / "clean"), parse(tmp_path / "damaged")
    after = assert_same_except(clean, result, {victim})
    (before,) = [r for r in by_attempt(clean).values() if r["job_id_raw"] == victim]
    (job,) = [r for r in after.values() if r["job_id_raw"] == victim]
    assert before["state"] != "RUNNING"
    assert job["state"] == "UNKNOWN"  # Exit_status was cut off
    assert job["start_time"] == before["start_time"]
    assert job["cores_alloc"] == before["cores_alloc"]
    # the end is the record's own stamp, placed with the site's offset (CEST)
    assert abs((job["end_time"] - before["end_time"]).total_seconds()) <= 60
    assert job["run_s"] is not None
    assert {"TRUNCATED", "END_FROM_STAMP", "NO_NEWLINE"} <= set(job["flags"])
    assert result.summary()["record_flags"]["TRUNCATED"] == 1
    trace = build_trace(result.jobs, records=result.records)
    assert trace.num_rows == build_trace(clean.jobs, records=clean.records).num_rows


def test_crlf_line_ends(real_data: Path, tmp_path: Path) -> None:
    vsc_days(real_data, tmp_path / "clean")
    files = vsc_days(real_data, tmp_path / "damaged")
    files[0].write_bytes(files[0].read_bytes().replace(b"\n", b"\r\n"))
    clean, result = parse(tmp_path / "clean"), parse(tmp_path / "damaged")
    assert_same_except(clean, result, set())
    assert len(by_attempt(result)) == len(by_attempt(clean))
    assert result.summary()["record_flags"]["CRLF"] == len(lines_of(files[0]))


def test_duplicated_lines_and_overlapping_files(real_data: Path, tmp_path: Path) -> None:
    vsc_days(real_data, tmp_path / "clean")
    files = vsc_days(real_data, tmp_path / "damaged")
    lines = lines_of(files[1])
    # a block of lines written twice, and a rotated file that overlaps days 2 and 3
    repeated = lines[300:340]
    files[1].write_bytes(b"\n".join([*lines[:340], *repeated, *lines[340:]]) + b"\n")
    overlap = lines[-200:] + lines_of(files[2])[:150]
    (tmp_path / "damaged" / "accounting-overlap").write_bytes(b"\n".join(overlap) + b"\n")

    clean, result = parse(tmp_path / "clean"), parse(tmp_path / "damaged")
    added = len(repeated) + len(overlap)
    assert result.info["duplicate_lines"] == clean.info["duplicate_lines"] + added
    assert result.summary()["record_flags"]["DUPLICATE"] == added + clean.info["duplicate_lines"]
    # the first copy of a line is the one used, so src_file and src_line may name the overlap
    ignore = ("flags", "src_line", "src_file")
    after = assert_same_except(clean, result, set(), ignore=ignore)
    assert len(after) == len(by_attempt(clean))
    touched = {job_id(line) for line in repeated + overlap}
    for row in after.values():
        if row["job_id_raw"] in touched and row["attempt"] == row["n_attempts"] - 1:
            assert "DUPLICATE" in row["flags"]


def test_files_out_of_order(real_data: Path, tmp_path: Path) -> None:
    vsc_days(real_data, tmp_path / "clean")
    files = vsc_days(real_data, tmp_path / "damaged")
    clean = parse(tmp_path / "clean")
    # named explicitly, newest first
    reversed_ = parse(list(reversed(files)))
    assert reversed_.info["files_reordered"] == 2
    assert [Path(f).name for f in reversed_.files] == list(DAYS)
    assert_same_except(clean, reversed_, set())
    assert reversed_.jobs.num_rows == clean.jobs.num_rows
    # logrotate names: accounting (newest), accounting.1, accounting.2 (oldest)
    rotated = tmp_path / "rotated"
    rotated.mkdir()
    for name, path in zip(("accounting.2", "accounting.1", "accounting"), files, strict=True):
        path.rename(rotated / name)
    result = parse(rotated)
    assert result.info["files_reordered"] == 0  # the folder is listed oldest first
    assert [Path(f).name for f in result.files] == ["accounting.2", "accounting.1", "accounting"]
    assert_same_except(clean, result, set(), ignore=("src_file",))
    assert result.jobs.num_rows == clean.jobs.num_rows


def test_exec_host_and_slot_counts_disagree(real_data: Path, tmp_path: Path) -> None:
    vsc_days(real_data, tmp_path / "clean")
    files = vsc_days(real_data, tmp_path / "damaged")
    lines = lines_of(files[0])
    at = next(
        i
        for i, line in enumerate(lines)
        if b";E;" in line[:22] and b"exec_host=r" in line and b" total_execution_slots=20 " in line
    )
    victim = job_id(lines[at])
    lines[at] = lines[at].replace(b" total_execution_slots=20 ", b" total_execution_slots=16 ")
    files[0].write_bytes(b"\n".join(lines) + b"\n")
    clean, result = parse(tmp_path / "clean"), parse(tmp_path / "damaged")
    after = assert_same_except(clean, result, {victim})
    (job,) = [r for r in after.values() if r["job_id_raw"] == victim]
    (before,) = [r for r in by_attempt(clean).values() if r["job_id_raw"] == victim]
    assert job["cores_alloc"] == before["cores_alloc"] == 20  # the slots exec_host lists
    assert "CORES_CONFLICT" in job["flags"]
    assert "CORES_CONFLICT" not in before["flags"]


def test_pbspro_exec_vnode_and_exec_host_disagree(real_data: Path, tmp_path: Path) -> None:
    ncar_day(real_data, tmp_path / "clean")
    path = ncar_day(real_data, tmp_path / "damaged")
    lines = lines_of(path)
    at = next(
        i
        for i, line in enumerate(lines)
        if line[19:22] == b";E;" and b"exec_vnode=(r1i0n2:ncpus=12)" in line
    )
    victim = job_id(lines[at])
    lines[at] = lines[at].replace(b"exec_vnode=(r1i0n2:ncpus=12)", b"exec_vnode=(r1i0n2:ncpus=8)")
    path.write_bytes(b"\n".join(lines) + b"\n")
    clean, result = parse(tmp_path / "clean"), parse(tmp_path / "damaged")
    after = assert_same_except(clean, result, {victim})
    (job,) = [r for r in after.values() if r["job_id_raw"] == victim]
    assert job["cores_alloc"] == 8  # exec_vnode, the vnodes' own counts, comes first
    assert {"CORES_CONFLICT", "CORES_REQ_MISMATCH"} <= set(job["flags"])
