"""Damaged logs, for the Slurm, Grid Engine, LSF and HTCondor readers.

What a user relies on when a log was hurt by a crash, a rotation, a copy or an editor: the jobs the
damage did not touch come out exactly as from the undamaged log; the damaged ones are recovered as
far as their bytes allow and flagged, or quarantined with a reason, never made up; every line is
counted once. Each damage case is applied to a copy of a shared real log (``GRIDTRACE_REAL_DATA``;
HTCondor has none, so a crafted history stands in) and to small literal lines that need no real
data. The hypothesis tests at the end fuzz the same four readers: arbitrary bytes and arbitrary
damage of real lines never crash and always reconcile, and garbage appended to a valid log leaves
its jobs alone.
"""

from __future__ import annotations

import ast
import gzip
import json
import re
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from gridtrace.logs import (
    ParseResult,
    _htcondor,
    _lsf,
    _sge,
    _slurm,
    describe_flag,
    read_htcondor,
    read_lsf,
    read_sge,
    read_slurm,
)
from gridtrace.logs._flags import COMMON_FLAGS
from gridtrace.schema import validate

NUL_REASON = "NUL bytes in the line (a crash or a log rotation left them): a fragment, not a record"

READERS: dict[str, Callable[..., ParseResult]] = {
    "slurm": lambda path, **kw: read_slurm(path, tz="UTC", **kw),
    "sge": read_sge,
    "lsf": read_lsf,
    "htcondor": read_htcondor,
}
MODULES: dict[str, ModuleType] = {"slurm": _slurm, "sge": _sge, "lsf": _lsf, "htcondor": _htcondor}
FLAGS: dict[str, Mapping[str, str]] = {fmt: module.FLAGS for fmt, module in MODULES.items()}
JOB_RECORDS = {"J", "STEP", "PE", "JOB_FINISH", "AD", "CONT", "CONTINUATION"}
"""Record types that make (or belong to) a job; garbage must never become one of them."""

# ------------------------------------------------------------------ the logs


def _real(real_data: Path, fmt: str) -> list[bytes]:
    """The lines of the shared real log of ``fmt``, each with its line end."""
    name = {
        "slurm": "slurm/xdmod-phillips-sacct.log.gz",
        "sge": "sge/ucsf-wynton-sge-8.1.9-accounting",
        "lsf": "lsf/xdmod-shredder-lsf-fixture.log",
    }[fmt]
    data = (real_data / "other" / name).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.splitlines(keepends=True)


HTCONDOR_ADS: list[dict[str, Any]] = [
    {
        "ClusterId": 1234,
        "ProcId": proc,
        "GlobalJobId": f"ce01.example.org#1234.{proc}#1700000000",
        "Owner": owner,
        "AccountingGroup": f"group_atlas.prod.{owner}",
        "JobBatchName": "sim-batch",
        "QDate": 1700000000 + proc,
        "JobStartDate": 1700000100 + proc,
        "JobCurrentStartDate": 1700000100 + proc,
        "CompletionDate": 1700003700 + 60 * proc,
        "EnteredCurrentStatus": 1700003700 + 60 * proc,
        "RemoteWallClockTime": 3600.0 + 59 * proc,
        "RemoteUserCpu": 3000.0,
        "RemoteSysCpu": 50.0,
        "RequestCpus": 8,
        "CpusProvisioned": 8,
        "RequestMemory": 2048,
        "ResidentSetSize_RAW": 1048000,
        "JobStatus": 4,
        "ExitBySignal": False,
        "ExitCode": (proc + 1) % 2,
        "NumJobStarts": 1,
        "LastRemoteHost": f"slot1_{proc}@wn04{proc}.example.org",
    }
    for proc, owner in enumerate(["alice", "bob", "carol", "dave", "erin"])
]


def _htcondor_lines() -> list[bytes]:
    """A crafted ``condor_history -json`` file (one attribute a line), as lines with ends."""
    blocks = []
    for ad in HTCONDOR_ADS:
        body = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in ad.items())
        blocks.append("{\n" + body + "\n}")
    text = "[\n" + "\n,\n".join(blocks) + "\n]\n"
    return text.encode().splitlines(keepends=True)


def _read(fmt: str, folder: Path, data: bytes, name: str = "log") -> ParseResult:
    path = folder / name
    path.write_bytes(data)
    result = READERS[fmt](path, site="site", errors="skip")
    _check_counts(result, data)
    return result


def _check_counts(result: ParseResult, data: bytes) -> None:
    validate(result.records, "records")
    validate(result.quarantine, "quarantine")
    validate(result.jobs, "jobs")
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    assert result.lines_read == lines == result.lines_parsed + result.lines_quarantined
    seen = result.records.column("src_line").to_pylist()
    seen += result.quarantine.column("src_line").to_pylist()
    assert sorted(seen) == list(range(1, lines + 1))  # every line once


def _described(fmt: str, result: ParseResult) -> None:
    """Every flag on a row is explained in the reader's FLAGS (or the common catalog)."""
    catalog = {**COMMON_FLAGS, **FLAGS[fmt]}
    for table in (result.records, result.jobs):
        for flags in table.column("flags").to_pylist():
            for flag in flags or ():
                assert describe_flag(flag, catalog), f"{fmt}: flag {flag} is not in FLAGS"


def _key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return (row["job_id_raw"], row["array_index"], row["attempt"], row["submit_time"])


def _same_except(
    clean: ParseResult, damaged: ParseResult, changed: set[str]
) -> list[dict[str, Any]]:
    """Assert both parses have the same jobs but those of the ``changed`` job ids.

    ``src_file`` and ``src_line`` are left out (the damage may shift lines). Returns the damaged
    parse's rows of the changed job ids.
    """

    def split(result: ParseResult) -> tuple[dict[tuple[Any, ...], dict[str, Any]], list[Any]]:
        kept: dict[tuple[Any, ...], dict[str, Any]] = {}
        other: list[dict[str, Any]] = []
        for row in result.jobs.to_pylist():
            row = {k: v for k, v in row.items() if k not in {"src_file", "src_line"}}
            if row["job_id_raw"] in changed:
                other.append(row)
            else:
                assert _key(row) not in kept
                kept[_key(row)] = row
        return kept, other

    clean_kept, _ = split(clean)
    damaged_kept, damaged_other = split(damaged)
    assert damaged_kept.keys() == clean_kept.keys()
    for key, row in clean_kept.items():
        assert damaged_kept[key] == row, key
    return damaged_other


def _row_of(result: ParseResult, job_id: str) -> dict[str, Any]:
    (row,) = [r for r in result.jobs.to_pylist() if r["job_id_raw"] == job_id]
    return dict(row)


def _flags(row: Mapping[str, Any]) -> set[str]:
    return set(row["flags"] or ())


# ------------------------------------------------------------------ one damage at a time

FIELDS = {"slurm": b"|", "sge": b":", "lsf": b" ", "htcondor": b","}


def _job_id(fmt: str, line: bytes) -> str:
    text = line.decode()
    if fmt == "slurm":
        return text.split("|")[0]
    if fmt == "sge":
        fields = text.split(":")
        return fields[5] if fields[35] == "0" else f"{fields[5]}.{fields[35]}"
    return text.split()[3]  # lsf


def _target(fmt: str, lines: list[bytes]) -> int:
    """A line in the middle of the log whose job id no other line has, and that ran."""
    data = [i for i, line in enumerate(lines) if not line.startswith(b"#")]
    ids = [_job_id(fmt, lines[i]) for i in data]
    for i, job in zip(data[len(data) // 2 :], ids[len(data) // 2 :], strict=True):
        if ids.count(job) == 1 and (fmt != "sge" or lines[i].split(b":")[9] != b"0"):
            return i
    return data[-1]


DAMAGES = ("nul_start", "nul_inside", "latin1", "crlf", "duplicate", "no_newline")
LINE_FORMATS = ("slurm", "sge", "lsf")


def _damage(kind: str, lines: list[bytes], k: int) -> bytes:
    """Damage line ``k`` (0-based) of ``lines`` as ``kind`` says; return the file's bytes."""
    out = list(lines)
    line = out[k]
    if kind == "nul_start":  # a rotation left NUL padding before a record
        out[k] = b"\x00" * 37 + line
    elif kind == "nul_inside":  # a crash zeroed a block in the middle of a record
        out[k] = line[:20] + b"\x00" * 512 + line[40:]
    elif kind == "crlf":  # a Windows copy
        out = [x.rstrip(b"\n") + b"\r\n" for x in out]
    elif kind == "duplicate":  # a copied block, or two overlapping files concatenated
        out.insert(k + 1, line)
    elif kind == "no_newline":  # an editor, or head -c at a line end
        out[-1] = out[-1].rstrip(b"\n")
    return b"".join(out)


SYNTHETIC: dict[str, list[bytes]] = {
    "slurm": [
        b"%d|%d|hpc|batch|normal|physics|phys|500|alice|1500|2024-05-03T10:00:00|"
        b"2024-05-03T10:00:01|2024-05-03T10:01:40|2024-05-03T11:01:40|01:00:00|0:0|COMPLETED|"
        b"2|16|16|2000Mc|billing=16,cpu=16,mem=32000M,node=2|billing=16,cpu=16,mem=32000M,node=2|"
        b"02:00:00|n[01-02]|sim\n" % (job, job)
        for job in (1001, 1002, 1003)
    ],
    "sge": [
        b"# Version: 8.1.9\n",
        *(
            b"long.q:n01:atlas:alice:sim.sh:%d:sge:0:1714723000:1714723100:1714726700:0:0:3600:"
            b"3500.5:20.25:2048:0:0:0:0:0:0:0:0:0:0:0:0:0:0:proj1:defaultdepartment:NONE:1:0:"
            b"3520.75:12.5:0.002:-l h_rt=7200,mem_free=2G:0.000000:NONE:2147483648.000000:0:0\n"
            % job
            for job in (4711, 4712, 4713)
        ),
    ],
    "lsf": [
        b'"JOB_FINISH" "10.1" 1700003600 %d 1500 33816578 4 1700000000 0 0 1700000100 "alice" '
        b'"normal" "span[hosts=1]" "" "" "login1" "/home/alice" "" "out.%%J" "" '
        b'"1700000000.%d" 0 1 "4*node07" 64 12.5 "sim" "./run.sh" 3000.5 99.5 204800 0 -1 0 0 '
        b'1000 0 0 0 0 -1 0 0 0 10 2 -1 "" "physics" 0 4 "" "" 0 409600 819200 "" "" "" "" 0 "" '
        b'0 "" -1 "/physics/alice" "" "" "" -1 "" "" 6160 "" 1700000100 "" "" 2 1032 "0" 1033 '
        b'"0" 0 7200 0 300000 "select[type == local] span[hosts=1] " "" -1 "" -1 0 "" 0 0 "" '
        b'3500 "/home/alice" 0 "" 0.000000 0.00 0.00 0.00 0.00 4 "node07" "node07" "node07" '
        b'"node07" -1 0 0 0 0 0\n' % (job, job)
        for job in (5001, 5002, 5003)
    ],
}
"""Three jobs in each line format, written from the formats' documentation (no real data)."""


@pytest.mark.parametrize("fmt", LINE_FORMATS)
@pytest.mark.parametrize("kind", DAMAGES)
def test_damaged_synthetic_log(tmp_path: Path, fmt: str, kind: str) -> None:
    _check_damage(fmt, SYNTHETIC[fmt], kind, tmp_path)


@pytest.mark.realdata
@pytest.mark.parametrize("fmt", LINE_FORMATS)
@pytest.mark.parametrize("kind", DAMAGES)
def test_damaged_copy_of_a_real_log(real_data: Path, tmp_path: Path, fmt: str, kind: str) -> None:
    _check_damage(fmt, _real(real_data, fmt), kind, tmp_path)


def _check_damage(fmt: str, lines: list[bytes], kind: str, tmp_path: Path) -> None:
    """Damage one line of ``lines`` as ``kind`` says; check what the reader makes of it."""
    clean = _read(fmt, tmp_path, b"".join(lines), "clean")
    k = _target(fmt, lines)
    if kind == "no_newline":
        k = len(lines) - 1
    data = _damage(kind, lines, k)
    damaged = _read(fmt, tmp_path, data, "damaged")
    _described(fmt, damaged)
    job = _job_id(fmt, lines[k])  # LSF: the fixture's two records are both this job
    rows = _same_except(clean, damaged, {job})
    before = [
        {k2: v for k2, v in r.items() if k2 not in {"src_file", "src_line"}}
        for r in clean.jobs.to_pylist()
        if r["job_id_raw"] == job
    ]
    if kind in {"nul_start", "nul_inside"}:
        # a fragment: quarantined, counted, never a job
        assert len(rows) == len(before) - 1
        (bad,) = damaged.quarantine.to_pylist()
        expected = (k + 1, NUL_REASON, data.split(b"\n")[k])
        assert (bad["src_line"], bad["reason"], bad["raw"]) == expected
        nul_bytes = 37 if kind == "nul_start" else 512
        assert (damaged.info["nul_lines"], damaged.info["nul_bytes"]) == (1, nul_bytes)
        assert damaged.summary()["quarantine_reasons"] == {NUL_REASON: 1}
    elif kind == "crlf":
        assert rows == before
        assert damaged.summary()["record_flags"].get("CRLF") == len(lines)
    elif kind == "duplicate":
        assert damaged.lines_read == len(lines) + 1
        if fmt == "sge":  # the attempt logged twice is folded, the later copy kept
            assert len(rows) == 1
            assert _flags(rows[0]) - _flags(before[0]) == {"DUPLICATE"}
            assert damaged.summary()["record_flags"] == {"DUPLICATE_DROPPED": 1}
        else:
            assert len(rows) == len(before)
            assert damaged.info["duplicate_lines"] == 1
            assert damaged.summary()["record_flags"] == {"DUPLICATE_LINE": 1}
            assert {"DUPLICATE_LINE"} <= set().union(*(_flags(r) for r in rows))
        assert damaged.quarantine.num_rows == 0
    elif kind == "no_newline":
        assert len(rows) == len(before)
        last = [r for r in rows if "NO_NEWLINE" in _flags(r) or "TRUNCATED" in _flags(r)]
        assert len(last) == 1
        if fmt == "lsf":  # LSF ends every record with a line end: without one it was cut
            assert "TRUNCATED" in _flags(last[0])
        else:
            assert _flags(last[0]) == _flags(before[-1]) | {"NO_NEWLINE"}
            assert {**last[0], "flags": None} == {**before[-1], "flags": None}


@pytest.mark.realdata
@pytest.mark.parametrize("fmt", LINE_FORMATS)
def test_latin1_bytes_in_a_real_log(real_data: Path, tmp_path: Path, fmt: str) -> None:
    lines = _real(real_data, fmt)
    clean = _read(fmt, tmp_path, b"".join(lines), "clean")
    k = _target(fmt, lines)
    separator, position = {"slurm": (b"|", 8), "sge": (b":", 3), "lsf": (b" ", 11)}[fmt]
    fields = lines[k].split(separator)
    old = fields[position].strip(b'"')
    new = old[:2] + b"\xe9" + old[2:]  # Latin-1 e-acute inside the user name
    fields[position] = fields[position].replace(old, new)
    damaged_line = separator.join(fields)
    data = b"".join([*lines[:k], damaged_line, *lines[k + 1 :]])
    damaged = _read(fmt, tmp_path, data, "damaged")
    _described(fmt, damaged)
    job = _job_id(fmt, lines[k])
    rows = _same_except(clean, damaged, {job})
    changed = [r for r in rows if r["user"] != old.decode()]
    assert len(changed) == 1
    assert changed[0]["user"] == old[:2].decode() + "é" + old[2:].decode()
    assert "NON_UTF8" in _flags(changed[0])
    (record,) = [r for r in damaged.records.to_pylist() if r["flags"] and "NON_UTF8" in r["flags"]]
    assert record["raw"] == damaged_line.rstrip(b"\n")  # the original bytes, kept
    assert damaged.quarantine.num_rows == 0


# where to cut the last line of each real log, and what the recovered job must hold
CUTS: dict[str, list[tuple[str, bytes, int, str]]] = {
    # (name, the text the cut falls in, offset into it, outcome)
    "slurm": [
        ("in State", b"|FAILED|", 4, "state lost"),
        ("in End", b"|2017-01-01T23:55:05|", 8, "end lost"),
        ("after NCPUS", b"|8|8|2147486648Mn", 3, "sizes partly lost"),
        ("in JobID", b"197199|197199|", 3, "quarantined"),
        ("in the last field", b"c7b43\n", 3, "last field cut"),
    ],
    "sge": [
        ("in end_time", b":1508964719:", 5, "state lost"),
        ("in category", b":NONE:0:NONE:49229824", 2, "category lost"),
        ("in maxvmem", b":49229824:0:0\n", 4, "maxvmem lost"),
        ("in job_number", b":425:sge:", 2, "quarantined"),
    ],
}


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("fmt", "name"), [(fmt, cut[0]) for fmt, cuts in CUTS.items() for cut in cuts]
)
def test_last_record_cut_short_in_a_real_log(
    real_data: Path, tmp_path: Path, fmt: str, name: str
) -> None:
    lines = _real(real_data, fmt)
    clean = _read(fmt, tmp_path, b"".join(lines), "clean")
    ((_, marker, offset, outcome),) = [c for c in CUTS[fmt] if c[0] == name]
    last = lines[-1]
    cut_line = last[: last.index(marker) + offset]
    data = b"".join([*lines[:-1], cut_line])
    damaged = _read(fmt, tmp_path, data, "damaged")
    _described(fmt, damaged)
    job = _job_id(fmt, last)
    # a Grid Engine record cut before task_number keeps the job number alone as its id
    rows = _same_except(clean, damaged, {job, job.split(".")[0]})
    before = _row_of(clean, job)
    if outcome == "last field cut":  # every field is there: read as written, flagged
        (row,) = rows
        assert _flags(row) == _flags(before) | {"NO_NEWLINE"}
        assert row["job_name"] == before["job_name"][:-2]
        return
    if outcome == "quarantined":
        assert rows == []
        (bad,) = damaged.quarantine.to_pylist()
        assert bad["raw"] == cut_line
        assert "cut short" in bad["reason"]
        return
    (row,) = rows
    assert "TRUNCATED" in _flags(row)
    (record,) = [r for r in damaged.records.to_pylist() if r["flags"] and "TRUNCATED" in r["flags"]]
    assert record["raw"] == cut_line
    kept = ("user", "queue", "submit_time", "start_time")
    assert {c: row[c] for c in kept} == {c: before[c] for c in kept}
    if outcome == "state lost":
        assert (row["state"], row["cores_alloc"]) == ("UNKNOWN", None)
        if fmt == "slurm":
            assert row["end_time"] == before["end_time"]  # End came before State
        else:
            assert row["end_time"] is None
    elif outcome == "end lost":
        assert (row["state"], row["end_time"], row["run_s"]) == ("UNKNOWN", None, None)
    else:
        assert row["state"] == before["state"]
        assert (row["end_time"], row["run_s"]) == (before["end_time"], before["run_s"])
        lost = {
            "sizes partly lost": ("cores_req", "walltime_req_s", "job_name"),
            "category lost": ("cores_req", "vmem_used_bytes"),
            "maxvmem lost": ("vmem_used_bytes",),
        }[outcome]
        assert all(row[c] is None for c in lost)
        assert all(before[c] is not None for c in lost)


@pytest.mark.realdata
def test_lsf_fixture_cut_and_doubled(real_data: Path, tmp_path: Path) -> None:
    # the fixture's two JOB_FINISH records are one job (same id, submit, start and event time)
    first, second = _real(real_data, "lsf")
    clean = _read("lsf", tmp_path, first + second, "clean")
    assert [_flags(r) for r in clean.jobs.to_pylist()] == [{"DUPLICATE"}, {"DUPLICATE"}]
    # cut inside the execution host list: the record ends before it, the times survive
    cut = second[: second.index(b'"host3"') + 3]
    damaged = _read("lsf", tmp_path, first + cut, "cut")
    _described("lsf", damaged)
    kept, recovered = damaged.jobs.to_pylist()
    assert kept == clean.jobs.to_pylist()[0] | {"src_file": kept["src_file"]}
    assert _flags(recovered) == {"TRUNCATED", "DUPLICATE"}
    assert recovered["state"] == "UNKNOWN"  # jStatus comes after the host list
    assert (recovered["start_time"], recovered["end_time"]) == (
        kept["start_time"],
        kept["end_time"],
    )
    assert (recovered["exec_hosts"], recovered["cores_alloc"]) == (None, None)
    assert recovered["cores_req"] == 128
    # cut before the job id: nothing to recover
    damaged = _read("lsf", tmp_path, first + second[:30], "cut-early")
    assert damaged.jobs.num_rows == 1
    assert "before its job id" in damaged.quarantine.column("reason")[0].as_py()
    # the second record written twice: one job from it, flagged, the copy kept in records
    doubled = _read("lsf", tmp_path, first + second + second, "doubled")
    assert doubled.jobs.num_rows == 2
    assert _flags(doubled.jobs.to_pylist()[1]) == {"DUPLICATE", "DUPLICATE_LINE"}
    assert doubled.records.column("flags").to_pylist() == [None, None, ["DUPLICATE_LINE"]]


# ------------------------------------------------------------------ HTCondor, crafted


@pytest.mark.parametrize("kind", DAMAGES)
def test_damaged_copy_of_a_crafted_htcondor_history(tmp_path: Path, kind: str) -> None:
    lines = _htcondor_lines()
    clean = _read("htcondor", tmp_path, b"".join(lines), "clean")
    assert clean.jobs.num_rows == len(HTCONDOR_ADS)
    k = next(i for i, line in enumerate(lines) if b'"Owner": "carol"' in line)  # ad 1234.2
    if kind == "duplicate":  # the whole ad written twice (overlapping history files)
        start = max(i for i in range(k) if lines[i] == b"{\n")
        stop = next(i for i in range(k, len(lines)) if lines[i] == b"}\n")
        data = b"".join([*lines[: stop + 1], b",\n", *lines[start : stop + 1], *lines[stop + 1 :]])
    else:
        data = _damage(kind, lines, k)
    damaged = _read("htcondor", tmp_path, data, "damaged")
    _described("htcondor", damaged)
    rows = _same_except(clean, damaged, {"1234.2"})
    before = _row_of(clean, "1234.2")
    del before["src_file"], before["src_line"]
    if kind in {"nul_start", "nul_inside"}:
        assert rows == []  # the ad touching the NUL line is no job
        reasons = damaged.summary()["quarantine_reasons"]
        assert reasons[NUL_REASON] == 1
        assert damaged.info["nul_lines"] == 1
    elif kind == "duplicate":
        assert rows == [{**before, "flags": ["DUPLICATE_LINE"]}]
        assert damaged.info["duplicate_lines"] == 1
    else:  # CR LF line ends and a missing final line end change nothing in a JSON history
        assert rows == [before]
        assert damaged.quarantine.num_rows == 0


@pytest.mark.parametrize("attribute", ["Owner", "QDate", "JobStatus", "LastRemoteHost", "ProcId"])
def test_crafted_htcondor_history_cut_short(tmp_path: Path, attribute: str) -> None:
    lines = _htcondor_lines()
    text = b"".join(lines)
    clean = _read("htcondor", tmp_path, text, "clean")
    # the file ends inside the last ad, one character into the attribute's value
    at = text.rindex(f'"{attribute}": '.encode()) + len(attribute) + 5
    damaged = _read("htcondor", tmp_path, text[:at], "cut")
    _described("htcondor", damaged)
    rows = _same_except(clean, damaged, {"1234.4"})
    if attribute == "ProcId":  # the job id did not survive: quarantined, reason given
        assert rows == []
        assert "before ClusterId and ProcId" in damaged.quarantine.column("reason")[0].as_py()
        return
    (row,) = rows
    before = _row_of(clean, "1234.4")
    assert "TRUNCATED" in _flags(row)
    order = list(HTCONDOR_ADS[4])
    lost_from = order.index(attribute)
    column = {"Owner": "user", "QDate": "submit_time", "LastRemoteHost": "exec_hosts"}
    for name, col in column.items():
        expected = before[col] if order.index(name) < lost_from else None
        assert row[col] == expected, name
    status_lost = order.index("JobStatus") >= lost_from
    assert row["state"] == ("UNKNOWN" if status_lost else before["state"])
    records = damaged.records.to_pylist()
    (record,) = [r for r in records if r["flags"] and "TRUNCATED" in r["flags"]]
    assert record["raw"] == text[text.rindex(b"{\n") : at]


@pytest.mark.parametrize("fmt", [*LINE_FORMATS, "htcondor"])
def test_a_cut_anywhere_in_the_last_record_recovers_only_what_survived(
    tmp_path: Path, fmt: str
) -> None:
    # wherever a crash cuts the file, every value of the recovered job is the undamaged
    # job's value or null (state UNKNOWN at worst); nothing is made up, nothing else changes
    lines = _htcondor_lines()[:-1] if fmt == "htcondor" else SYNTHETIC[fmt]
    head = b"".join(lines[:-1])
    last = b"".join(lines[-1:]) if fmt != "htcondor" else b"".join(lines[-24:])
    if fmt == "htcondor":
        head = b"".join(lines[:-24])
    clean = _read(fmt, tmp_path, head + last, "clean")
    final = clean.jobs.to_pylist()[-1]
    job = final["job_id_raw"]
    allowed = {*(final["flags"] or ()), "TRUNCATED", "NO_NEWLINE"}
    if fmt == "htcondor":  # a lost attribute has its documented fallback, flagged
        allowed |= {"START_FROM_FIRST_RUN", "NUM_STARTS_MISSING", "CORES_ALLOC_FROM_REQUEST"}
    step = 1 if len(last) < 400 else 3
    for cut in range(1, len(last) - 1, step):
        data = head + last[:cut]
        damaged = _read(fmt, tmp_path, data, "cut")
        _described(fmt, damaged)
        rows = _same_except(clean, damaged, {job})
        if not rows:  # quarantined, with the reason
            assert damaged.quarantine.num_rows >= 1
            continue
        (row,) = rows
        assert _flags(row) <= allowed, cut
        assert _flags(row) & {"TRUNCATED", "NO_NEWLINE"}, cut
        for column, value in row.items():
            if column in {"flags", "job_key", "src_file", "src_line"} or value is None:
                continue
            if column == "state" and value == "UNKNOWN":
                continue
            if column == "job_name" and "NO_NEWLINE" in _flags(row):
                assert final[column].startswith(value), cut  # the last field, maybe cut
                continue
            assert value == final[column], (cut, column)


# ------------------------------------------------------------------ fuzzing

FUZZ = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
FORMATS = (*LINE_FORMATS, "htcondor")


def _synthetic(fmt: str) -> list[bytes]:
    return _htcondor_lines() if fmt == "htcondor" else SYNTHETIC[fmt]


def _sources(fmt: str, real_data: Path | None) -> list[bytes]:
    """Valid lines of ``fmt``: the head of the shared real log when there is one."""
    if real_data is None or fmt == "htcondor":
        return _synthetic(fmt)
    return _real(real_data, fmt)[:40]


def _parse_bytes(fmt: str, data: bytes) -> ParseResult:
    with tempfile.TemporaryDirectory() as folder:
        return _read(fmt, Path(folder), data)


@st.composite
def _damaged(draw: st.DrawFn, lines: list[bytes]) -> bytes:
    """Valid lines, repeated and reordered, then hurt a few times in arbitrary ways."""
    data = bytearray(b"".join(draw(st.lists(st.sampled_from(lines), min_size=1, max_size=8))))
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(data)))
        kind = draw(
            st.sampled_from(["insert", "delete", "flip", "nul", "latin1", "crlf", "cut", "dup"])
        )
        if kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 40))]
        elif kind == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "nul":
            data[at:at] = b"\x00" * draw(st.integers(1, 600))
        elif kind == "latin1":
            data[at:at] = draw(st.sampled_from([b"\xe9", b"\xff", b"\x81", b"\xc3"]))
        elif kind == "crlf":
            data = bytearray(data.replace(b"\n", b"\r\n", 1))
        elif kind == "cut":
            del data[at:]
        elif kind == "dup":
            end = data.find(b"\n", at)
            start = data.rfind(b"\n", 0, at) + 1
            if end >= 0:
                data[end + 1 : end + 1] = data[start : end + 1]
    return bytes(data)


def _fuzz_damage(fmt: str, lines: list[bytes]) -> None:
    @FUZZ
    @given(data=_damaged(lines))
    def run(data: bytes) -> None:
        result = _parse_bytes(fmt, data)  # counts checked: every line read once
        _described(fmt, result)
        assert all(result.quarantine.column("reason").to_pylist())

    run()


@pytest.mark.parametrize("fmt", FORMATS)
def test_arbitrary_damage_never_crashes_and_reconciles(fmt: str) -> None:
    _fuzz_damage(fmt, _synthetic(fmt))


@pytest.mark.realdata
@pytest.mark.parametrize("fmt", LINE_FORMATS)
def test_arbitrary_damage_of_real_lines_never_crashes_and_reconciles(
    real_data: Path, fmt: str
) -> None:
    _fuzz_damage(fmt, _sources(fmt, real_data))


@pytest.mark.parametrize("fmt", FORMATS)
@FUZZ
@given(data=st.binary(max_size=3000))
def test_arbitrary_bytes_never_crash(fmt: str, data: bytes) -> None:
    assume(data[:2] != b"\x1f\x8b" and data[:3] != b"BZh" and data[:6] != b"\xfd7zXZ\x00")
    assume(data[:4] != b"(\xb5/\xfd")  # compressed starts are refused whole (test_fuzz.py)
    result = _parse_bytes(fmt, data)
    _described(fmt, result)


_GARBAGE = st.one_of(
    st.binary(max_size=400),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=200).map(str.encode),
    st.lists(st.sampled_from([b"|", b":", b" ", b'"', b"{", b"}", b"\n", b"#", b"x", b"1"])).map(
        b"".join
    ),
)


def _fuzz_garbage(fmt: str, lines: list[bytes]) -> None:
    valid = b"".join(lines)
    clean = _parse_bytes(fmt, valid)
    n_lines = clean.lines_read
    clean_jobs = clean.jobs.drop_columns(["src_file"]).to_pylist()

    @FUZZ
    @given(garbage=_GARBAGE)
    @example(garbage=b".|")  # Slurm: a cut-short step line of no job
    def run(garbage: bytes) -> None:
        assume(b"ClusterId" not in garbage)  # an ad of its own would be a job, rightly
        result = _parse_bytes(fmt, valid + garbage)
        jobs = result.jobs.drop_columns(["src_file"]).to_pylist()
        assert jobs[: len(clean_jobs)] == clean_jobs  # the valid file's jobs, unchanged
        extra = jobs[len(clean_jobs) :]
        if garbage.endswith(b"\n") or not garbage:
            assert extra == []
        else:  # a last line without a line end is read as a record a crash cut short
            assert len(extra) <= 1
            assert all(_flags(row) & {"TRUNCATED", "NO_NEWLINE"} for row in extra)
        records = result.records.filter(
            result.records.column("src_line").to_numpy() > n_lines  # the garbage's lines
        )
        kinds = set(records.column("record_type").to_pylist())
        if kinds & JOB_RECORDS and not extra:
            # garbage stays out of the job records, but for a last line without a line end:
            # the one record a crash cut short, flagged (Slurm reads ".|" as a step of no job)
            assert garbage, kinds
            assert not garbage.endswith(b"\n"), kinds
            assert records.num_rows == 1
            assert all(_flags(row) & {"TRUNCATED", "NO_NEWLINE"} for row in records.to_pylist())

    run()


@pytest.mark.parametrize("fmt", FORMATS)
def test_garbage_appended_to_a_valid_log_leaves_its_jobs_alone(fmt: str) -> None:
    _fuzz_garbage(fmt, _synthetic(fmt))


@pytest.mark.realdata
@pytest.mark.parametrize("fmt", LINE_FORMATS)
def test_garbage_appended_to_a_real_log_leaves_its_jobs_alone(real_data: Path, fmt: str) -> None:
    _fuzz_garbage(fmt, _sources(fmt, real_data))


# ------------------------------------------------------------------ every flag explained

_FLAG_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$")


def _flag_literals(module: ModuleType) -> set[str]:
    """The flag names a reader's source sets.

    Found where flags are made: ``("FLAG", mask)`` pairs in a list, ``("STATE", "FLAG")`` pairs
    of a state map, ``append("FLAG")``/``append_flag(..., "FLAG")``, ``flags=["FLAG"]``, a list
    assigned to a name holding "flag", and tuples of names a loop copies flags by.
    """
    tree = ast.parse(Path(str(module.__file__)).read_text())
    found: set[str] = set()

    def name(node: ast.AST) -> str | None:
        text = node.value if isinstance(node, ast.Constant) else None
        return text if isinstance(text, str) and _FLAG_NAME.match(text) else None

    def names(node: ast.AST) -> set[str]:
        return {str(name(e)) for e in ast.walk(node) if name(e)}

    for node in ast.walk(tree):
        if isinstance(node, ast.List):
            for item in node.elts:
                pair = isinstance(item, ast.Tuple) and len(item.elts) == 2
                if pair and name(item.elts[0]) and not isinstance(item.elts[1], ast.Constant):
                    found.add(str(name(item.elts[0])))  # ("FLAG", mask)
        elif isinstance(node, ast.Tuple) and len(node.elts) == 2:
            if name(node.elts[0]) and name(node.elts[1]):
                found.add(str(name(node.elts[1])))  # ("STATE", "FLAG") of a state map
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in {"append_flag", "append"} and node.args and name(node.args[-1]):
                found.add(str(name(node.args[-1])))
            for keyword in node.keywords:
                if keyword.arg == "flags":
                    found |= names(keyword.value)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            labels = [t.id for t in targets if isinstance(t, ast.Name)]
            if any("flag" in label for label in labels) and node.value is not None:
                for part in ast.walk(node.value):
                    if isinstance(part, ast.List):
                        found |= names(part)
        elif isinstance(node, ast.For | ast.comprehension):
            loop = node.iter
            if isinstance(loop, ast.Tuple) and loop.elts and all(name(e) for e in loop.elts):
                found |= names(loop)
    return found


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_flag_a_reader_can_set_is_explained(fmt: str) -> None:
    module = MODULES[fmt]
    catalog = {**COMMON_FLAGS, **FLAGS[fmt]}
    literals = _flag_literals(module)
    assert {"NON_UTF8", "TRUNCATED"} <= literals  # the scan finds the flags it should
    missing = sorted(flag for flag in literals if describe_flag(flag, catalog) is None)
    assert missing == [], f"{fmt}: flags set but not in FLAGS: {missing}"
    unused = sorted(flag for flag in FLAGS[fmt] if not flag.endswith("*") and flag not in literals)
    assert unused == [], f"{fmt}: FLAGS explains flags the reader never sets: {unused}"
    for flag, meaning in FLAGS[fmt].items():
        assert _FLAG_NAME.match(flag.removesuffix("_*")), flag
        assert isinstance(meaning, str), flag
        assert meaning.strip(), flag
