"""The streaming reader core: chunk size changes no row, memory stays bounded, counts reconcile."""

from __future__ import annotations

import bz2
import gzip
import lzma
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings

from gridtrace.errors import ConfigError
from gridtrace.logs._base import FileParse, tokenize_guarded
from gridtrace.logs._gwf import GWF_FIELDS, GWF_STREAM, tokenize_gwf_file
from gridtrace.logs._htcondor import HTCONDOR_STREAM, tokenize_htcondor_file
from gridtrace.logs._io import MAX_LINE_BYTES, ReadReport, read_log_bytes
from gridtrace.logs._lsf import LSF_STREAM, tokenize_lsf_file
from gridtrace.logs._sge import SGE_FIELDS, sge_stream, sge_width, tokenize_sge_file
from gridtrace.logs._slurm import SLURM_STREAM, tokenize_slurm_file
from gridtrace.logs._stream import (
    DEFAULT_CHUNK_BYTES,
    ChunkCountError,
    LineFormat,
    StreamStats,
    iter_chunks,
    tokenize_stream,
    write_stream,
)
from gridtrace.logs._swf import SWF_STREAM, tokenize_swf, tokenize_swf_file

CHUNK_SIZES = (64, 1000, 4096, DEFAULT_CHUNK_BYTES)

SWF_HEADER = (
    b"; Version: 2.2\n"
    b"; Computer: a cluster\n"
    b"; Information: http://example.org/a\n"
    b";              http://example.org/b\n"
    b";              and a third line of the same value\n"
    b"; UnixStartTime: 1091615532\n"
    b"; MaxProcs: 140  (dual)\n"
    b";       two processors a node\n"
    b"; Note: free text\n"
)


def _swf_job(i: int) -> bytes:
    return f"{i} {10 * i} 5 {100 + i % 7} 4 -1 -1 4 3600 -1 1 {1 + i % 5} 1 -1 1 -1 -1 -1".encode()


def _damaged_swf(jobs: int = 300) -> bytes:
    """An SWF log with every repair the readers count: CRLF, NULs, non-UTF-8, junk, no end."""
    lines = [SWF_HEADER.rstrip(b"\n")]
    for i in range(1, jobs + 1):
        line = _swf_job(i)
        if i % 17 == 0:
            line += b"\r"
        if i % 23 == 0:
            line = b"\x00\x00" + line + b"\x00"
        if i % 29 == 0:
            line = b"\x00\x00\x00"
        if i % 31 == 0:
            line = b"; caf\xe9 comment"
        if i % 37 == 0:
            line = b"not a job at all"
        if i % 41 == 0:
            line = b""
        if i == jobs // 2:
            line = b";   a comment in the middle"
        lines.append(line)
    return b"\n".join(lines) + b"\n" + _swf_job(jobs + 1)[:9]  # the last line is cut short


def _slurm_log(jobs: int = 200) -> bytes:
    header = b"JobID|JobIDRaw|User|State|Submit|Start|End|NCPUS|JobName"
    lines = [header]
    for i in range(1, jobs + 1):
        line = (
            f"{i}|{i}|u{i % 5}|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:01:00|"
            f"2024-01-01T00:0{2 + i % 5}:00|{1 + i % 8}|job|with|pipes {i}"
        ).encode()
        if i % 11 == 0:
            line += b"\r"
        if i % 13 == 0:
            line = line.replace(b"u", b"\xe9", 1)
        if i % 19 == 0:
            line = b"\x00\x00" + line
        if i % 23 == 0:
            line = b""
        if i % 29 == 0:
            line = b"|only|three"
        lines.append(line)
        if i % 7 == 0:
            lines.append(f"{i}.batch|{i}.batch||COMPLETED||||1|batch".encode())
    return b"\n".join(lines) + b"\n" + b"999|999|u|RUNN"


_LSF_TAIL = (  # the end of a JOB_FINISH record of LSF 10.1, as in test_lsf.py
    '"" "physics" 0 4 "" "" 0 409600 819200 '
    '"" "" "" "" 0 "" 0 "" -1 "/physics/alice" "" "" "" -1 "" "" 6160 "" 1700000100 "" "" '
    '2 1032 "0" 1033 "0" 0 7200 0 300000 "select[type == local] span[hosts=1] " "" -1 "" -1 0 '
    '"" 0 0 "" 3500 "/home/alice" 0 "" 0.000000 0.00 0.00 0.00 0.00 4 "node07" "node07" '
    '"node07" "node07" -1 0 0 0 0 0'
)


def _lsf_log(records: int = 120) -> bytes:
    """An LSF log of JOB_FINISH records, some with a quoted string over several lines."""
    lines = [b"# lsb.acct written for the streaming tests"]
    for i in range(1, records + 1):
        command = f"./run{i}.sh" if i % 6 else "line one\nline two\n\nline four"
        record = (
            f'"JOB_FINISH" "10.1" {1700003600 + i} {5000 + i} 1500 33816578 4 1700000000 0 0 '
            f'1700000100 "alice" "normal" "" "" "" "login1" "/home/alice" "" "" "" "{i}" '
            f'0 1 "4*node07" 64 12.5 "sim {i}" "{command}" 3000.5 99.5 204800 0 -1 0 0 1000 '
            "0 0 0 0 -1 0 0 0 10 2 -1 " + _LSF_TAIL
        ).encode()
        if i % 11 == 0:
            record = record.replace(b"alice", b"al\xefce")
        if i % 13 == 0:
            record += b"\r"
        if i % 17 == 0:
            record = b"\x00\x00" + record
        if i % 19 == 0:
            record = b""
        if i % 23 == 0:
            record = b'"JOB_FINISH" "10.1" "never closed\nand on\n"JOB_FINISH" 1'
        lines.append(record)
    return b"\n".join(lines) + b"\n" + b'"JOB_FINISH" "10.1" 1700009999 77 "cut'


def _gwf_log(jobs: int = 250) -> bytes:
    """A GWF log with a header (continuation lines included) and damaged job lines."""
    lines = [
        b"# Version: 1.0",
        b"# Information: http://example.org/a",
        b"#              http://example.org/b",
        ("# " + " ".join(GWF_FIELDS)).encode(),
    ]
    for i in range(1, jobs + 1):
        line = (
            f"{i} {1108892424 + 60 * i} 3 {50 + i % 9} 2 50.5 1024 2 900 -1 1 U{i % 4} G1 -1 0 "
            "-1 fs0 fs0 UNITARY -1 -1 -1 -1 -1 -1 -1 -1 -1 -1"
        ).encode()
        if i % 13 == 0:
            line += b"\r"
        if i % 17 == 0:
            line = line.replace(b" U", b" \xe9U", 1)
        if i % 19 == 0:
            line = b"\x00\x00" + line
        if i % 23 == 0:
            line = b""
        if i % 29 == 0:
            line = b"1 2 3"
        if i == jobs // 2:
            line = b"# a comment in the middle"
        lines.append(line)
    return b"\n".join(lines) + b"\n" + b"999 11088"


def _sge_job(i: int, width: int = 45, name: str = "sim.sh") -> bytes:
    """One Grid Engine record of ``width`` fields (45: Son of Grid Engine 8.1.x)."""
    values = {name_: "0" for name_ in SGE_FIELDS}
    values.update(
        qname="long.q", hostname=f"n{i % 9:02d}", group="atlas", owner=f"u{i % 5}",
        job_name=name, job_number=str(1000 + i), account="sge",
        submission_time=str(1714723000 + i), start_time=str(1714723100 + i),
        end_time=str(1714726700 + i), ru_wallclock="3600", ru_maxrss="2048", project="proj1",
        department="defaultdepartment", granted_pe="NONE", slots="1", cpu="3520.75",
        category="-l h_rt=7200", pe_taskid="NONE", maxvmem="2147483648.0",
    )  # fmt: skip
    fields = [values[f] for f in SGE_FIELDS] + [str(i)] * (width - len(SGE_FIELDS))
    return ":".join(fields[:width]).encode()


def _sge_log(jobs: int = 250) -> bytes:
    """An SGE accounting file with a header and every damage the reader handles."""
    lines = [b"# Version: 8.1.9", b"# ", b"# DO NOT MODIFY THIS FILE MANUALLY!", b"# "]
    for i in range(1, jobs + 1):
        line = _sge_job(i)
        if i % 11 == 0:
            line += b"\r"
        if i % 13 == 0:
            line = line.replace(b"sim.sh", b"caf\xe9.sh")
        if i % 17 == 0:
            line = _sge_job(i, name="run:x")  # one surplus ':' re-aligned
        if i % 19 == 0:
            line = b"\x00\x00" + line
        if i % 23 == 0:
            line = b""
        if i % 29 == 0:
            line = b"1:2:3"
        if i % 31 == 0:
            line = _sge_job(i, width=47)  # Univa's extra fields
        if i % 37 == 0:
            line = _sge_job(i, name="a:b").replace(b":3600:", b":zz:")  # no placement fits
        if i == jobs // 2:
            line = b"# a comment in the middle"
        lines.append(line)
    return b"\n".join(lines) + b"\n" + _sge_job(jobs + 1)[:120]  # the last line is cut short


def _condor_ad(i: int, **extra: object) -> dict[str, object]:
    return {
        "ClusterId": 1000 + i, "ProcId": i % 3, "Owner": f"u{i % 4}", "QDate": 1700000000 + i,
        "JobStatus": 4, "CompletionDate": 1700003600 + i, "RemoteWallClockTime": 3600.0,
        "RequestCpus": 1 + i % 8, "ExitBySignal": False, "Nested": {"a": [1, 2.5]}, **extra,
    }  # fmt: skip


def _condor_log(ads: int = 60) -> bytes:
    """``condor_history -json`` (one attribute a line) then ``-jsonl``, damaged in every way."""
    import json

    out = [b"["]
    for i in range(1, ads + 1):
        body = ",\n".join(
            f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in _condor_ad(i).items()
        ).encode()
        if i % 7 == 0:
            body = body.replace(b'"Owner": ', b'"Owner" ', 1)  # a broken object
        if i % 11 == 0:
            body = body.replace(b'"u', b'"\xe9', 1)
        if i % 13 == 0:
            body = body.replace(b",\n", b",\r\n")
        if i % 17 == 0:
            body = body.replace(b"JobStatus", b"Job\x00Status")
        out.append(b"{\n" + body + b"\n}" + (b"" if i == ads else b"\n,"))
        if i % 19 == 0:
            out.append(b"not json at all")
        if i % 23 == 0:  # two ads on one line (compact output), then one a line
            out.append(json.dumps([_condor_ad(i + 500), _condor_ad(i + 600)]).encode() + b",")
    out.append(b"]")
    for i in range(1, ads + 1):
        line = json.dumps(_condor_ad(i + 1000, Zero=0)).encode()
        if i % 5 == 0:
            line = line.replace(b'"Zero": 0', b'"Zero": -0')
        if i % 9 == 0:
            line = line[: len(line) // 2]  # a broken line
        out.append(line)
    last = "\n".join(f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in _condor_ad(9999).items())
    cut = last.index('": "u') + 5
    return b"\n".join(out) + b"\n{\n" + last[:cut].encode()  # the last ad is cut short


Tokenize = Callable[..., FileParse]
FORMATS: dict[str, tuple[Tokenize, Callable[[], bytes]]] = {
    "swf": (tokenize_swf_file, _damaged_swf),
    "slurm": (tokenize_slurm_file, _slurm_log),
    "lsf": (tokenize_lsf_file, _lsf_log),
    "gwf": (tokenize_gwf_file, _gwf_log),
    "sge": (tokenize_sge_file, _sge_log),
    "htcondor": (tokenize_htcondor_file, _condor_log),
}


def _write(path: Path, data: bytes, compression: str | None) -> Path:
    packed = {
        None: lambda d: d,
        "gzip": gzip.compress,
        "bz2": bz2.compress,
        "xz": lzma.compress,
    }[compression](data)
    path.write_bytes(packed)
    return path


def _guarded(tokenize: Tokenize, path: Path, fmt: str, **options: Any) -> FileParse:
    return tokenize_guarded(tokenize, path, site="s", source_format=fmt, **options)


def _same(a: FileParse, b: FileParse) -> None:
    assert a.lines_read == b.lines_read
    assert a.records.num_rows == b.records.num_rows
    assert a.records.equals(b.records)
    assert a.quarantine.equals(b.quarantine)


# --------------------------------------------------------------------------- chunk-size invariance


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("compression", [None, "gzip", "bz2", "xz"])
def test_chunk_size_changes_no_row(tmp_path: Path, fmt: str, compression: str | None) -> None:
    tokenize, make = FORMATS[fmt]
    path = _write(tmp_path / f"log.{fmt}", make(), compression)
    default = _guarded(tokenize, path, fmt)
    assert default.quarantine.num_rows > 0  # the generated log is damaged in every way
    assert default.records.num_rows > 100
    for size in CHUNK_SIZES:
        stats = StreamStats()
        _same(_guarded(tokenize, path, fmt, chunk_bytes=size, stats=stats), default)
        if size < 1000:
            assert stats.chunks > 10


def _flagged(parsed: FileParse, flag: str) -> int:
    return sum(flag in (f or ()) for f in parsed.records.column("flags").to_pylist())


def test_every_sge_repair_is_made_whatever_the_chunk(tmp_path: Path) -> None:
    path = _write(tmp_path / "accounting", _sge_log(), None)
    default = tokenize_sge_file(path, site="s")
    for flag in ("CRLF", "NON_UTF8", "FIELD_SHIFT_REALIGNED", "EXTRA_FIELDS", "TRUNCATED"):
        assert _flagged(default, flag) > 0, flag
    reasons = " ".join(default.quarantine.column("reason").to_pylist())
    for reason in ("NUL bytes", "blank line", "no placement", "fewer than the 43"):
        assert reason in reasons, reason
    for size in (1, 64, 333):
        stats = StreamStats()
        _same(tokenize_sge_file(path, site="s", chunk_bytes=size, stats=stats), default)
        assert stats.reconciled


def test_every_htcondor_case_is_read_whatever_the_chunk(tmp_path: Path) -> None:
    path = _write(tmp_path / "history.json", _condor_log(), None)
    default = tokenize_htcondor_file(path, site="s")
    types = default.records.column("record_type").to_pylist()
    assert {"AD", "CONT", "SEP"} <= set(types)
    for flag in ("CRLF", "NON_UTF8", "TRUNCATED"):
        assert _flagged(default, flag) > 0, flag
    reasons = " ".join(default.quarantine.column("reason").to_pylist())
    for reason in ("NUL bytes", "broken JSON object", "inside the broken object", "not a JSON"):
        assert reason in reasons, reason
    assert default.lines_read > _condor_log().count(b"\n") + 1  # two ads on a line: two units
    for size in (1, 64, 333, 1000):
        stats = StreamStats()
        _same(tokenize_htcondor_file(path, site="s", chunk_bytes=size, stats=stats), default)
        assert stats.reconciled
        assert stats.lines_read == default.lines_read


def test_htcondor_ads_cut_at_every_boundary(tmp_path: Path) -> None:
    """Every chunk size up to the file's: boundaries fall on every line, ads never cut."""
    data = _condor_log(4)
    path = _write(tmp_path / "history.json", data, None)
    default = tokenize_htcondor_file(path, site="s")
    assert default.records.num_rows > 40
    for size in range(1, len(data) + 2):
        _same(tokenize_htcondor_file(path, site="s", chunk_bytes=size), default)


@st.composite
def _condor_logs(draw: st.DrawFn) -> bytes:
    kinds = st.sampled_from(
        [
            b"[",
            b"]",
            b",",
            b"",
            b"{",
            b"}",
            b"},",
            b"} x",
            b'  "ClusterId": 5,',
            b'  "ProcId": 0',
            b'  "Owner": "\xe9"',
            b'  "Owner" "bob",',
            b'{"ClusterId": 1, "ProcId": 2}',
            b'{"ClusterId": 1, "ProcId": -0}\r',
            b'[{"ClusterId": 1, "ProcId": 2}, {"ClusterId": 1, "ProcId": 3}]',
            b'{"ClusterId": 1, "ProcId": 2}, {"ClusterId": 3,',
            b'{"ClusterId": 1, "ProcId": 2} {"ClusterId": 3, "ProcId": 4}',
            b'{"MyType": "Machine"}',
            b"\x00{",
            b"garbage",
        ]
    )
    lines = draw(st.lists(kinds, max_size=40))
    ending = draw(st.sampled_from([b"\n", b"", b"\r\n"]))
    return b"\n".join(lines) + (ending if lines else b"")


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=_condor_logs(), size=st.integers(min_value=1, max_value=300))
def test_any_chunk_size_gives_the_htcondor_rows_of_one_piece(
    tmp_path: Path, data: bytes, size: int
) -> None:
    path = _write(tmp_path / "gen.json", data, None)
    whole = tokenize_htcondor_file(path, site="s", chunk_bytes=1 << 30)
    stats = StreamStats()
    _same(tokenize_htcondor_file(path, site="s", chunk_bytes=size, stats=stats), whole)
    assert stats.reconciled


def test_htcondor_jsonl_rows_do_not_depend_on_the_lines_around(tmp_path: Path) -> None:
    """One ad a line reads the same whether a chunk takes the fast path or the scanner."""
    import json

    lines = [
        json.dumps(_condor_ad(i, Zero=0)).replace('"Zero": 0', '"Zero": -0') for i in range(40)
    ]
    clean = _write(tmp_path / "clean.json", ("\n".join(lines) + "\n").encode(), None)
    broken = _write(
        tmp_path / "broken.json", ("\n".join([*lines, "{broken"]) + "\n").encode(), None
    )
    fast = tokenize_htcondor_file(clean, site="s").records
    slow = tokenize_htcondor_file(broken, site="s").records.slice(0, 40)
    assert fast.column("attrs").equals(slow.column("attrs"))
    assert dict(fast.column("attrs")[0].as_py())["Zero"] == "0"


def test_a_format_that_loses_lines_is_refused(tmp_path: Path) -> None:
    """A format claiming more lines than its rows account for fails loudly, never silently."""
    path = _write(tmp_path / "h.json", _condor_log(3), None)
    greedy = LineFormat(
        "htcondor",
        HTCONDOR_STREAM.new_state,
        HTCONDOR_STREAM.tokenize,
        lambda state: state.taken + 1,
    )
    with pytest.raises(ChunkCountError, match="lines"):
        tokenize_stream(path, greedy, site="s", chunk_bytes=64)


def test_sge_width_is_the_files_not_the_chunks(tmp_path: Path) -> None:
    """A line read in the first chunk is re-aligned to the usual count of the whole file."""
    early = _sge_job(1, width=47, name="run:x")  # 48 fields: one surplus over 47, three over 45
    body = [early] + [_sge_job(i) for i in range(2, 5)] + [_sge_job(i, 47) for i in range(5, 40)]
    path = _write(tmp_path / "accounting", b"\n".join(body) + b"\n", "gzip")
    assert sge_width(path) == 47
    assert sge_width(path, chunk_bytes=1) == 47
    default = tokenize_sge_file(path, site="s")
    assert default.records.num_rows == 39  # realigned to 47 (it is ambiguous against 45)
    assert _flagged(default, "FIELD_SHIFT_REALIGNED") == 1
    for size in (1, 64, 1000):
        _same(tokenize_sge_file(path, site="s", chunk_bytes=size), default)


def test_sge_width_from_the_version_line_without_good_lines(tmp_path: Path) -> None:
    old = b"# Version: 6.1u4\n" + b"# a comment\n" * 40 + b"1:2:3\n"
    new = b"# Version: 8.1.9\n" + b"1:2:3\n"
    assert sge_width(_write(tmp_path / "old", old, None), chunk_bytes=16) == 43
    assert sge_width(_write(tmp_path / "new", new, None), chunk_bytes=16) == 45
    assert sge_width(_write(tmp_path / "empty", b"", None)) == 45


def test_the_streaming_writer_writes_sge_in_two_passes(tmp_path: Path) -> None:
    data = _sge_log() + b"\n" + b"x" * (MAX_LINE_BYTES + 5) + b"\n" + _sge_log(20)
    path = _write(tmp_path / "accounting.gz", data, "gzip")
    out_records, out_quarantine = tmp_path / "r.parquet", tmp_path / "q.parquet"
    spec = sge_stream(path, chunk_bytes=300)
    stats = write_stream(path, spec, out_records, out_quarantine, site="s", chunk_bytes=300)
    parsed = _guarded(tokenize_sge_file, path, "sge")
    quarantine = pq.read_table(out_quarantine)
    records = pq.read_table(out_records)
    assert any(r.startswith("line too long") for r in quarantine.column("reason").to_pylist())
    assert quarantine.equals(parsed.quarantine.cast(quarantine.schema))
    assert records.equals(parsed.records.cast(records.schema))
    assert stats.reconciled
    assert stats.chunks > 10
    assert stats.lines_read == parsed.lines_read


def test_an_lsf_record_over_lines_is_never_cut_by_a_chunk(tmp_path: Path) -> None:
    path = _write(tmp_path / "lsb.acct", _lsf_log(), None)
    default = tokenize_lsf_file(path, site="s")
    flags = default.records.column("flags").to_pylist()
    assert sum("MULTILINE" in (f or ()) for f in flags) >= 10
    for size in (1, 64, 300):
        stats = StreamStats()
        _same(tokenize_lsf_file(path, site="s", chunk_bytes=size, stats=stats), default)
        assert stats.reconciled


def test_swf_chunks_give_the_rows_of_the_file_read_whole(tmp_path: Path) -> None:
    data = _damaged_swf()
    path = _write(tmp_path / "log.swf", data, None)
    whole = tokenize_swf(data, site="s", src_file=str(path))
    for size in CHUNK_SIZES:
        _same(tokenize_swf_file(path, site="s", chunk_bytes=size), whole)


def test_an_swf_header_cut_by_chunks_folds_as_one(tmp_path: Path) -> None:
    """Continuation lines of a header value, each in its own chunk, still continue it."""
    path = _write(tmp_path / "log.swf", SWF_HEADER + _swf_job(1) + b"\n", None)
    parsed = tokenize_swf_file(path, site="s", chunk_bytes=1)
    attrs = parsed.records.column("attrs").to_pylist()
    assert attrs[3] == [("continues", "Information"), ("text", "http://example.org/b")]
    from gridtrace.logs import read_swf

    header = read_swf(path, site="s").info["swf_header"]
    info = header if "Information" in header else next(iter(header.values()))
    assert info["Information"] == (
        "http://example.org/a\nhttp://example.org/b\nand a third line of the same value"
    )
    assert info["MaxProcs"] == 140


def test_an_over_long_line_is_quarantined_whatever_the_chunk(tmp_path: Path) -> None:
    data = SWF_HEADER + _swf_job(1) + b"\n" + b"9" * (MAX_LINE_BYTES + 10) + b"\n"
    path = _write(tmp_path / "long.swf", data + _swf_job(2) + b"\n", "gzip")
    default = _guarded(tokenize_swf_file, path, "swf")
    reasons = default.quarantine.column("reason").to_pylist()
    assert any(reason.startswith("line too long") for reason in reasons)
    for size in (64, 4096):
        _same(_guarded(tokenize_swf_file, path, "swf", chunk_bytes=size), default)


@st.composite
def _swf_logs(draw: st.DrawFn) -> bytes:
    kinds = st.sampled_from(
        [
            b"; Version: 2.2",
            b";          continued",
            b"; MaxNodes: 12 (dual)",
            b";",
            b"",
            b"\x00\x00",
            b"1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18",
            b"1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18\r",
            b"\x001 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18\x00",
            b"1 2 3 \xe9",
            b"; \xff\xfe header",
            b"garbage",
        ]
    )
    lines = draw(st.lists(kinds, max_size=40))
    ending = draw(st.sampled_from([b"\n", b"", b"\r\n"]))
    return b"\n".join(lines) + (ending if lines else b"")


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=_swf_logs(), size=st.integers(min_value=1, max_value=300))
def test_any_chunk_size_gives_the_rows_of_one_piece(tmp_path: Path, data: bytes, size: int) -> None:
    path = _write(tmp_path / "gen.swf", data, None)
    whole = tokenize_swf(read_log_bytes(path), site="s", src_file=str(path))
    _same(tokenize_swf_file(path, site="s", chunk_bytes=size), whole)


# --------------------------------------------------------------------------- chunks and memory


def _greedy_chunks(data: bytes, size: int) -> int:
    """Chunks of whole lines packed greedily up to ``size`` bytes (a longer line alone)."""
    chunks = 0
    held = 0
    for line in data.splitlines(keepends=True):
        if held and held + len(line) > size:
            chunks += 1
            held = 0
        held += len(line)
    return chunks + (1 if held or not chunks else 0)


def _generated_swf(path: Path, jobs: int) -> Path:
    rng = np.random.default_rng(17)
    runs = rng.integers(1, 100_000, jobs)
    body = "\n".join(
        f"{i} {10 * i} 5 {int(runs[i - 1])} 4 -1 -1 4 3600 -1 1 3 1 -1 1 -1 -1 -1"
        for i in range(1, jobs + 1)
    )
    path.write_bytes(SWF_HEADER + body.encode() + b"\n")
    return path


def test_chunks_are_whole_lines_packed_up_to_the_size(tmp_path: Path) -> None:
    path = _generated_swf(tmp_path / "g.swf", 5000)
    data = path.read_bytes()
    for size in (64, 1000, 65536):
        report = ReadReport(str(path), None)
        chunks = list(iter_chunks(path, report, chunk_bytes=size))
        assert b"".join(chunk.data for chunk in chunks) == data
        assert len(chunks) == _greedy_chunks(data, size)
        assert max(len(chunk.data) for chunk in chunks) <= size
        assert [c.first_line for c in chunks] == list(
            np.cumsum([1] + [c.lines for c in chunks[:-1]])
        )
        assert chunks[-1].final
        assert not any(c.final for c in chunks[:-1])
        assert sum(c.lines for c in chunks) == report.lines == data.count(b"\n")


def test_a_chunk_size_below_one_byte_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.swf", _swf_job(1) + b"\n", None)
    with pytest.raises(ConfigError, match="chunk_bytes"):
        tokenize_swf_file(path, site="s", chunk_bytes=0)


def test_an_empty_file_is_one_empty_chunk(tmp_path: Path) -> None:
    path = _write(tmp_path / "empty.swf", b"", None)
    stats = StreamStats()
    parsed = tokenize_stream(path, SWF_STREAM, site="s", stats=stats)
    assert stats.chunks == 1
    assert parsed.lines_read == 0
    _same(parsed, tokenize_swf(b"", site="s", src_file=str(path)))


def _stream_to_parquet(src: Path, out: Path, size: int) -> StreamStats:
    return write_stream(
        src, SWF_STREAM, out / "records.parquet", out / "quarantine.parquet", site="s",
        chunk_bytes=size,
    )  # fmt: skip


def test_the_streaming_writer_writes_the_guarded_tables(tmp_path: Path) -> None:
    jobs = 200_000
    path = _generated_swf(tmp_path / "big.swf", jobs)
    size = 1 << 18
    stats = _stream_to_parquet(path, tmp_path, size)
    data = path.read_bytes()
    assert stats.chunks == _greedy_chunks(data, size)
    assert stats.largest_chunk <= size
    assert stats.lines_read == jobs + SWF_HEADER.count(b"\n")
    assert stats.reconciled
    parsed = _guarded(tokenize_swf_file, path, "swf")
    records = pq.read_table(tmp_path / "records.parquet")
    assert pq.ParquetFile(tmp_path / "records.parquet").num_row_groups >= stats.chunks
    assert records.num_rows == parsed.records.num_rows
    assert records.equals(parsed.records.cast(records.schema))
    assert not list(tmp_path.glob(".*.tmp"))


def test_the_streaming_writer_adds_the_reads_findings(tmp_path: Path) -> None:
    data = SWF_HEADER + b"9" * (MAX_LINE_BYTES + 3) + b"\n" + _swf_job(1) + b"\n"
    path = _write(tmp_path / "bad.swf.gz", data * 2, "gzip")
    broken = tmp_path / "broken.swf.gz"
    broken.write_bytes(path.read_bytes()[:-40])  # a gzip stream cut before its end
    for src in (path, broken):
        stats = _stream_to_parquet(src, tmp_path, 4096)
        parsed = _guarded(tokenize_swf_file, src, "swf")
        quarantine = pq.read_table(tmp_path / "quarantine.parquet")
        assert quarantine.equals(parsed.quarantine.cast(quarantine.schema))
        records = pq.read_table(tmp_path / "records.parquet")
        assert records.equals(parsed.records.cast(records.schema))
        assert stats.reconciled
        assert stats.lines_read == parsed.lines_read
        assert stats.lines_quarantined == parsed.quarantine.num_rows


def test_the_streaming_writer_carries_lsf_records_over_chunks(tmp_path: Path) -> None:
    """An LSF record open at a chunk's end, and an over-long line, land as when read whole."""
    data = _lsf_log() + b"\n" + b"x" * (MAX_LINE_BYTES + 5) + b"\n" + _lsf_log(20)
    path = _write(tmp_path / "lsb.acct.gz", data, "gzip")
    out_records, out_quarantine = tmp_path / "r.parquet", tmp_path / "q.parquet"
    stats = write_stream(path, LSF_STREAM, out_records, out_quarantine, site="s", chunk_bytes=300)
    parsed = _guarded(tokenize_lsf_file, path, "lsf")
    quarantine = pq.read_table(out_quarantine)
    records = pq.read_table(out_records)
    assert any(r.startswith("line too long") for r in quarantine.column("reason").to_pylist())
    assert quarantine.equals(parsed.quarantine.cast(quarantine.schema))
    assert records.equals(parsed.records.cast(records.schema))
    assert stats.reconciled
    assert stats.lines_read == parsed.lines_read


def _peak(path: Path, out: Path, size: int) -> int:
    tracemalloc.start()
    try:
        _stream_to_parquet(path, out, size)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_streaming_writer_carries_htcondor_ads_over_chunks(tmp_path: Path) -> None:
    data = _condor_log() + b"\n" + b"x" * (MAX_LINE_BYTES + 5) + b"\n" + _condor_log(9)
    path = _write(tmp_path / "history.json.xz", data, "xz")
    out_records, out_quarantine = tmp_path / "r.parquet", tmp_path / "q.parquet"
    stats = write_stream(
        path, HTCONDOR_STREAM, out_records, out_quarantine, site="s", chunk_bytes=300
    )
    parsed = _guarded(tokenize_htcondor_file, path, "htcondor")
    quarantine = pq.read_table(out_quarantine)
    records = pq.read_table(out_records)
    assert any(r.startswith("line too long") for r in quarantine.column("reason").to_pylist())
    assert quarantine.equals(parsed.quarantine.cast(quarantine.schema))
    assert records.equals(parsed.records.cast(records.schema))
    assert stats.reconciled
    assert stats.chunks > 10
    assert stats.lines_read == parsed.lines_read


def test_peak_memory_does_not_grow_with_the_file(tmp_path: Path) -> None:
    small = _generated_swf(tmp_path / "small.swf", 50_000)
    large = _generated_swf(tmp_path / "large.swf", 200_000)
    size = 1 << 16
    _stream_to_parquet(small, tmp_path, size)  # warm-up: kernels and imports
    peak_small = _peak(small, tmp_path, size)
    peak_large = _peak(large, tmp_path, size)
    assert large.stat().st_size > 3.5 * small.stat().st_size
    # the decompressed block (1 MiB) and one chunk, not the file (about 4 and 15 MB)
    assert peak_large < 1.5 * peak_small + (1 << 20)
    assert peak_large < large.stat().st_size / 2


# --------------------------------------------------------------------------- counts


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_counts_reconcile_per_chunk_and_per_file(tmp_path: Path, fmt: str) -> None:
    make = FORMATS[fmt][1]
    path = _write(tmp_path / f"log.{fmt}", make(), None)
    specs: dict[str, LineFormat[Any]] = {
        "swf": SWF_STREAM,
        "slurm": SLURM_STREAM,
        "lsf": LSF_STREAM,
        "gwf": GWF_STREAM,
        "htcondor": HTCONDOR_STREAM,
    }
    spec = sge_stream(path) if fmt == "sge" else specs[fmt]
    stats = StreamStats()
    parsed = tokenize_stream(path, spec, site="s", chunk_bytes=200, stats=stats)
    assert stats.reconciled
    assert stats.chunks == len(stats.per_chunk) > 5
    assert sum(lines for lines, _, _ in stats.per_chunk) == parsed.lines_read
    assert stats.lines_parsed == parsed.records.num_rows
    assert stats.lines_quarantined == parsed.quarantine.num_rows
    lines = pa.concat_arrays(
        [
            parsed.records.column("src_line").combine_chunks(),
            parsed.quarantine.column("src_line").combine_chunks(),
        ]
    ).to_pylist()
    if fmt == "htcondor":  # a line holding two ads has two rows: a count is one row
        lines = sorted(set(lines))
        assert len(lines) < parsed.lines_read
    assert sorted(lines) == list(range(1, len(lines) + 1))
    if fmt != "htcondor":
        assert len(lines) == parsed.lines_read
