"""Every registered reader, fuzzed: it never crashes, loses no line, and names file and line.

Parametrised over :func:`gridtrace.logs.available_formats`, so a format registered later (in the
package or through an entry point) is fuzzed as soon as :data:`SAMPLES` holds valid lines of it;
until then its cases are skipped with a message saying so. Each strategy feeds a reader bytes
derived from valid lines (truncated, shuffled, with another delimiter, NUL bytes, CR LF endings)
or plain random bytes, with ``errors="skip"`` (must not raise) and ``errors="raise"`` (may raise
only :class:`LogParseError`, naming the file and a quarantined line).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import tempfile
import tracemalloc
import zlib
from pathlib import Path

import pyarrow.compute as pc
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.errors import LogParseError, UnknownFormatError
from gridtrace.logs import available_formats, detect_compression, parse_logs, read_log_bytes
from gridtrace.logs._io import (
    GARBAGE_WINDOW_BYTES,
    GARBAGE_WINDOW_LINES,
    KEPT_RAW_BYTES,
    MAX_LINE_BYTES,
)
from gridtrace.schema import validate

_GWF_JOB = (
    b"1 1108892424 3 57 2 50.5 1024 2 900 -1 1 U1 G1 -1 0 -1 fs0 fs0 UNITARY "
    b"-1 -1 -1 -1 -1 -1 -1 -1 atlas -1"
)

_LSF_FINISH = (
    b'"JOB_FINISH" "10.1" 1700003600 5001 1500 33816578 4 1700000000 0 0 1700000100 "alice" '
    b'"normal" "span[hosts=1]" "" "" "login1" "/home/alice" "" "out.%J" "" "1700000000.5001" '
    b'0 1 "4*node07" 64 12.5 "sim ""fast"" run" "./run.sh" 3000.5 99.5 204800 0 -1 0 0 1000 '
    b'0 0 0 0 -1 0 0 0 10 2 -1 "" "physics" 0 4 "" "" 0 409600 819200 "" "" "" "" 0 "" 0 "" '
    b'-1 "/physics/alice" "" "" "" -1 "" "" 6160 "" 1700000100 "" "" 2 1032 "0" 1033 "0" 0 '
    b'7200 0 300000 "select[type == local] span[hosts=1] " "" -1 "" -1 0 "" 0 0 "" 3500 '
    b'"/home/alice" 0 "" 0.000000 0.00 0.00 0.00 0.00 4 "node07" "node07" "node07" "node07" '
    b"-1 0 0 0 0 0"
)

SAMPLES: dict[str, list[bytes]] = {
    "torque": [
        b"05/02/2024 10:00:00;Q;301.pbs01;queue=grid",
        b"05/02/2024 10:01:00;S;301.pbs01;user=u group=g queue=grid ctime=1714644000 "
        b"qtime=1714644000 etime=1714644000 start=1714644060 exec_host=n1/0-3+n2/0",
        b"05/03/2024 09:00:00;E;301.pbs01;user=u group=g jobname=run.sh queue=grid "
        b"ctime=1714644000 qtime=1714644000 etime=1714644000 start=1714644060 "
        b"exec_host=n1/0-3+n2/0 Resource_List.walltime=24:00:00 Resource_List.mem=4gb "
        b"resources_used.mem=2500mb resources_used.walltime=22:53:00 end=1714726800 "
        b"Exit_status=0",
        b"05/02/2024 11:00:00;D;302.pbs01;requestor=root@pbs01",
        b"05/02/2024 11:00:01;A;303.pbs01;",
        b'02/12/2018 00:00:00;E;304.pbs01;user=v group=g jobname="my job" queue=q '
        b"ctime=1518393600 qtime=1518393600 etime=1518393600 start=1518393601 "
        b"exec_host=r1i0n0/0*36 exec_vnode=(r1i0n0:ncpus=36) run_count=1 end=1518397201 "
        b"Exit_status=-3",
        b"02/12/2018 00:00:00;L;license;floating license hour:0 day:0 month:2304 max:5184",
    ],
    "slurm": [
        b"1001|1001|ub-hpc|general|normal|proj7|atlas|5000|alice|5001|2024-05-02T10:00:00|"
        b"2024-05-02T10:00:00|2024-05-02T10:01:00|2024-05-02T12:01:00|02:00:00|0:0|COMPLETED|"
        b"2|8|8|4Gn|cpu=8,mem=8G,node=2|cpu=8,mem=8G,node=2|03:00:00|cpn-[01-02]|run.sh",
        b"1002_[1,4-6%2]|1002|ub-hpc|general|normal|proj7|atlas|5000|bob|5002|"
        b"2024-05-02T10:00:00|Unknown|None|Unknown|00:00:00|0:0|PENDING|1|1|1|1000Mc|"
        b"cpu=1,node=1||UNLIMITED|None assigned|arr",
        b"1003|1003|ub-hpc|general|normal|proj7|atlas|5000|bob|5002|2024-05-02T10:00:00|"
        b"2024-05-02T10:00:00|2024-05-02T10:01:00|2024-05-02T10:11:00|1-00:10:00.5|0:15|"
        b"CANCELLED by 5001|1|1|1|1Gn|cpu=1,mem=1G,node=1|cpu=1,mem=1G,node=1|01:00:00|"
        b"cpn-03|x",
        b"1004|1004|ub-hpc|general|normal|proj7|atlas|5000|carol|5003|2024-05-02T10:00:00|"
        b"2024-05-02T10:00:00|2024-05-02T10:01:00|Unknown|00:05:00|0:0|RUNNING|1|4|4|2G|"
        b"cpu=4,node=1|cpu=4,node=1|Partition_Limit|gpu1|job 4",
    ],
    "swf": [
        b"; Version: 2.2",
        b"; UnixStartTime: 1136070000",
        b"; MaxProcs: 256",
        b"1 0 10 100 4 -1 -1 4 200 -1 1 17 3 5 1 -1 -1 -1",
        b"2 5 -1 3600.5 16 3500 1024 16 7200 2048 0 18 3 -1 2 1 1 60",
        b"3 7 0 0 1 -1 -1 1 60 -1 5 17 3 5 1 -1 -1 -1",
    ],
    "gwf": [
        b"# Version: 1.0",
        b"# JobID SubmitTime WaitTime RunTime NProcs AverageCPUTimeUsed UsedMemory ReqNProcs "
        b"ReqTime ReqMemory Status UserID GroupID ExecutableID QueueID PartitionID OrigSiteID "
        b"LastRunSiteID JobStructure JobStructureParams UsedNetwork UsedLocalDiskSpace "
        b"UsedResources ReqPlatform ReqNetwork ReqLocalDiskSpace ReqResources VOID ProjectID",
        _GWF_JOB,
        b"2 1108892500 -1 -1 4 -1 -1 4 900 -1 5 U2 G1 -1 0 -1 fs0 -1 UNITARY "
        b"-1 -1 -1 -1 -1 -1 -1 -1 -1 -1",
        b"L1 1132444800 -1 11499 1 -1 -1 -1 14400 -1 -1 atlas001 atlas -1 long -1 "
        b"ce01.cern.ch ce01.cern.ch UNITARY -1 -1 -1 -1 -1 -1 -1 -1 atlas -1",
    ],
    "sge": [  # from tests/logs/test_sge.py
        b"# Version: 8.1.9",
        b"# DO NOT MODIFY THIS FILE MANUALLY!",
        b"long.q:n01:atlas:alice:sim.sh:4711:sge:0:1714723000:1714723100:1714726700:0:0:3600:"
        b"3500.5:20.25:2048:0:0:0:0:0:0:0:0:0:0:0:0:0:0:proj1:defaultdepartment:NONE:1:0:"
        b"3520.75:12.5:0.002:-l h_rt=7200,mem_free=2G:0.000000:NONE:2147483648.000000:0:0",
        b"long.q:n02:atlas:bob:mpi.sh:4712:sge:0:1714723000:1714723100:1714726700:0:0:3600:"
        b"3500.5:20.25:2048:0:0:0:0:0:0:0:0:0:0:0:0:0:0:proj1:defaultdepartment:mpi:8:3:"
        b"3520.75:12.5:0.002:-pe mpi 8 -l h_rt=7200:0.000000:NONE:2147483648.000000:0:0",
    ],
    "lsf": [  # the LSF 10.1 record of tests/logs/test_lsf.py, then an lsb.events record
        _LSF_FINISH,
        _LSF_FINISH.replace(b" 5001 1500 ", b" 5002 1500 ").replace(b'"sim ""fast"" run"', b'"x"'),
        b'"JOB_NEW" "10.1" 1700000000 5003 1500 33816578 1 1700000000 0 0 0 "alice" "normal"',
    ],
    "htcondor": [  # -jsonl, from tests/logs/test_htcondor.py
        b'{"ClusterId": 1234, "ProcId": 0, "GlobalJobId": "ce01.example.org#1234.0#1700000000", '
        b'"Owner": "alice", "AccountingGroup": "group_atlas.prod.alice", "JobBatchName": "sim", '
        b'"Cmd": "/home/alice/run.sh", "QDate": 1700000000, "JobStartDate": 1700000100, '
        b'"JobCurrentStartDate": 1700000100, "CompletionDate": 1700003700, '
        b'"EnteredCurrentStatus": 1700003700, "RemoteWallClockTime": 3600.0, '
        b'"RemoteUserCpu": 3000.0, "RemoteSysCpu": 50.0, "RequestCpus": 8, "RequestMemory": '
        b'2048, "ResidentSetSize": 1048576, "RequestDisk": "/Expr(DiskUsage)/", "JobStatus": 4, '
        b'"ExitBySignal": false, "ExitCode": 0, "NumJobStarts": 1, '
        b'"LastRemoteHost": "slot1_3@wn042.example.org"}',
        b'{"ClusterId": 1235, "ProcId": 2, "Owner": "bob", "QDate": 1700000000, '
        b'"JobStatus": 3, "Args": ["a", 1], "RemoteHost": "slot1@wn7"}',
    ],
}
"""Valid lines of each format; a format without an entry here is not fuzzed (skipped)."""

DELIMITERS: dict[str, bytes] = {
    "torque": b";",
    "slurm": b"|",
    "swf": b" ",
    "gwf": b" ",
    "sge": b":",
    "lsf": b" ",
    "htcondor": b",",
}
"""The field separator the wrong-delimiter strategy swaps out (default: a space)."""

KNOWN_FAILURES: dict[tuple[str, str], str] = {}
"""(format, strategy) pairs that crash a reader another helper is rewriting: strict xfail."""

FORMATS = available_formats()
STRATEGIES = ("random_bytes", "truncated", "shuffled", "wrong_delimiter", "nul_bytes", "crlf")
FUZZ = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _samples(log_format: str) -> list[bytes]:
    samples = SAMPLES.get(log_format)
    if not samples:
        pytest.skip(
            f"no sample lines for log format {log_format!r}: add valid lines to SAMPLES in "
            "tests/logs/test_fuzz.py to fuzz its reader"
        )
    return samples


def _expected_lines(data: bytes) -> int:
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def _decompresses(data: bytes) -> bool:
    """Whether the standard decompressor of ``data``'s kind reads it to its end."""
    kind = detect_compression(data[:8])
    try:
        if kind == "gzip":
            gzip.decompress(data)
        elif kind == "bz2":
            bz2.decompress(data)
        elif kind == "xz":
            lzma.decompress(data)
        elif kind == "zstd":
            stream = zstandard.ZstdDecompressor().decompressobj()
            stream.decompress(data)
            return bool(stream.eof)
    except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error, zstandard.ZstdError):
        return False
    return True


def _check(log_format: str, data: bytes) -> None:
    """Read ``data`` as ``log_format``; assert the reader's guarantees."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "fuzz.log")
        path.write_bytes(data)
        result = parse_logs(path, format=log_format, site="fuzz", tz="UTC", errors="skip")
        lines = result.lines_read
        reasons = result.quarantine.column("reason").to_pylist()
        broken = [r for r in reasons if r.startswith("compressed stream broken")]
        if detect_compression(data[:8]):
            # bytes that start like a compressed file: read as far as the stream goes, and the
            # unreadable rest is one quarantine row, the file's last
            assert len(broken) == (0 if _decompresses(data) else 1)
        else:
            assert lines == _expected_lines(data)
            assert not broken
        assert result.lines_read == result.lines_parsed + result.lines_quarantined
        parsed = result.records.column("src_line").to_pylist()
        quarantined = result.quarantine.column("src_line").to_pylist()
        assert sorted(parsed + quarantined) == list(range(1, lines + 1))  # each line once
        if broken:
            assert quarantined[reasons.index(broken[0])] == lines
        assert set(result.quarantine.column("src_file").to_pylist()) <= {str(path)}
        assert all(reasons)
        validate(result.records, "records")
        validate(result.quarantine, "quarantine")
        validate(result.jobs, "jobs")
        if not quarantined:
            parse_logs(path, format=log_format, site="fuzz", tz="UTC", errors="raise")
            return
        with pytest.raises(LogParseError) as caught:
            parse_logs(path, format=log_format, site="fuzz", tz="UTC", errors="raise")
        assert caught.value.path == str(path)
        assert caught.value.lineno == min(quarantined)
        assert f"{path}:{caught.value.lineno}: " in str(caught.value)


def _join(lines: list[bytes], final_newline: bool) -> bytes:
    return b"\n".join(lines) + (b"\n" if final_newline and lines else b"")


@st.composite
def _truncated(draw: st.DrawFn, samples: list[bytes]) -> bytes:
    lines = draw(st.lists(st.sampled_from(samples), min_size=1, max_size=8))
    cut = [line[: draw(st.integers(0, len(line)))] for line in lines]
    whole = [draw(st.booleans()) for _ in lines]  # keep some lines intact
    return _join(
        [a if keep else b for a, b, keep in zip(lines, cut, whole, strict=True)],
        draw(st.booleans()),
    )


@st.composite
def _shuffled(draw: st.DrawFn, samples: list[bytes]) -> bytes:
    lines = draw(st.permutations(samples * 2))
    return _join(list(lines), draw(st.booleans()))


@st.composite
def _wrong_delimiter(draw: st.DrawFn, samples: list[bytes], delimiter: bytes) -> bytes:
    other = draw(st.sampled_from([b",", b"\t", b";", b"|", b" ", b"  ", b""]))
    lines = draw(st.lists(st.sampled_from(samples), min_size=1, max_size=6))
    swap = [draw(st.booleans()) for _ in lines]
    return _join(
        [
            line.replace(delimiter, other) if s else line
            for line, s in zip(lines, swap, strict=True)
        ],
        draw(st.booleans()),
    )


@st.composite
def _nul_bytes(draw: st.DrawFn, samples: list[bytes]) -> bytes:
    data = bytearray(_join(draw(st.lists(st.sampled_from(samples), min_size=1, max_size=6)), True))
    for position in draw(st.lists(st.integers(0, len(data)), min_size=1, max_size=5)):
        data[position:position] = draw(st.sampled_from([b"\x00", b"\x00\x00", b"\x7f", b"\xff"]))
    return bytes(data)


@st.composite
def _crlf(draw: st.DrawFn, samples: list[bytes]) -> bytes:
    lines = draw(st.lists(st.sampled_from(samples), min_size=1, max_size=6))
    ends = [draw(st.sampled_from([b"\r\n", b"\n", b"\r\n\r\n", b" \r\n"])) for _ in lines]
    return b"".join(line + end for line, end in zip(lines, ends, strict=True))


def _strategy(name: str, log_format: str) -> st.SearchStrategy[bytes]:
    if name == "random_bytes":
        magic = st.sampled_from([b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"(\xb5/\xfd", b""])
        return st.one_of(st.binary(max_size=2000), st.tuples(magic, st.binary()).map(b"".join))
    samples = _samples(log_format)
    if name == "truncated":
        return _truncated(samples)
    if name == "shuffled":
        return _shuffled(samples)
    if name == "wrong_delimiter":
        return _wrong_delimiter(samples, DELIMITERS.get(log_format, b" "))
    if name == "nul_bytes":
        return _nul_bytes(samples)
    return _crlf(samples)


def _cases() -> list[object]:
    cases: list[object] = []
    for log_format in FORMATS:
        for name in STRATEGIES:
            reason = KNOWN_FAILURES.get((log_format, name))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            cases.append(pytest.param(log_format, name, marks=marks, id=f"{log_format}-{name}"))
    return cases


@pytest.mark.parametrize(("log_format", "strategy"), _cases())
def test_reader_survives_fuzzing(log_format: str, strategy: str) -> None:
    if strategy != "random_bytes":
        _samples(log_format)  # skip early, before hypothesis runs

    @FUZZ
    @given(data=_strategy(strategy, log_format))
    def run(data: bytes) -> None:
        _check(log_format, data)

    run()


@pytest.mark.parametrize("log_format", [f for f in FORMATS if f in SAMPLES])
def test_samples_are_valid_lines(log_format: str) -> None:
    """The samples themselves parse without a single quarantined line."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "sample.log")
        path.write_bytes(_join(SAMPLES[log_format], True))
        result = parse_logs(path, format=log_format, tz="UTC", errors="raise")
    assert result.lines_quarantined == 0
    assert result.lines_parsed == len(SAMPLES[log_format])
    assert result.jobs.num_rows > 0


def _zstd(data: bytes) -> bytes:
    return bytes(zstandard.ZstdCompressor().compress(data))


_LINE = SAMPLES["torque"][0] + b"\n"
_MANY = b"".join(
    _LINE.replace(b"301.", b"%d." % (1000 + i)) for i in range(4000)
)  # ~170 kB: enough for a stream to break in its middle


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        # mtime=0: the bytes (and so the test id) must not change with the clock, or the
        # pytest-xdist workers collect different tests
        ("gzip", gzip.compress(_LINE, mtime=0)[:-9]),  # no trailer
        ("gzip", b"\x1f\x8b" + b"\x00" * 20),
        ("gzip", gzip.compress(_MANY, mtime=0)[:4000]),  # cut in the middle of the stream
        ("bz2", b"BZh9 not really bzip2"),
        ("bz2", b"BZh"),  # truncated: ValueError from bz2
        # bzip2 decompresses whole blocks (here 100 kB): cut in the last of several
        ("bz2", (lambda b: b[: len(b) * 9 // 10])(bz2.compress(_MANY * 4, compresslevel=1))),
        ("xz", b"\xfd7zXZ\x00garbage"),
        ("xz", lzma.compress(_MANY)[:1500]),
        ("zstd", (lambda b: b[: len(b) * 9 // 10])(_zstd(_MANY * 4))),  # blocks of 128 kB
        ("zstd", b"(\xb5/\xfd garbage"),
    ],
    ids=[
        "gzip-truncated",
        "gzip-zeros",
        "gzip-cut",
        "bz2-garbage",
        "bz2-truncated",
        "bz2-cut",
        "xz-garbage",
        "xz-cut",
        "zstd-cut",
        "zstd-garbage",
    ],
)
def test_corrupt_compressed_file_is_read_as_far_as_it_goes(
    tmp_path: Path, kind: str, data: bytes
) -> None:
    # regression: these raised EOFError / BadGzipFile / OSError / LZMAError from the reader, then
    # refused the whole file: now its readable lines are kept and its rest is one quarantine row
    path = tmp_path / "accounting.gz"
    path.write_bytes(data)
    result = parse_logs(path, format="torque", errors="skip")
    rows = result.quarantine.to_pylist()
    tail = rows[-1]
    assert tail["reason"].startswith(f"compressed stream broken: the {kind} stream ends after ")
    assert tail["src_file"] == str(path)
    assert tail["src_line"] == result.lines_read
    assert result.lines_read == result.lines_parsed + result.lines_quarantined
    if len(data) > 500:  # cut in its middle: the lines before the break are read
        assert result.lines_parsed > 10
    with pytest.raises(LogParseError, match=f"{path}:") as caught:
        parse_logs(path, format="torque", errors="raise")
    assert caught.value.path == str(path)
    # outside parse_logs and the read_* functions, the shared reader refuses it, clearly
    with pytest.raises(UnknownFormatError, match=f"starts like a {kind} file but cannot be"):
        read_log_bytes(path)


def _sample_file(log_format: str, copies: int) -> bytes:
    lines = _samples(log_format)
    return _join(lines * copies, True)


@pytest.mark.parametrize("log_format", [f for f in FORMATS if f in SAMPLES])
def test_truncated_gzip_among_good_files_loses_no_good_line(
    tmp_path: Path, log_format: str
) -> None:
    """One damaged daily file: its readable part and every other file are read; one row says why."""
    folder = tmp_path / "daily"
    folder.mkdir()
    good = _sample_file(log_format, 1)
    (folder / "20240501").write_bytes(good)
    (folder / "20240503.gz").write_bytes(gzip.compress(good, mtime=0))
    packed = gzip.compress(_sample_file(log_format, 400), mtime=0)
    (folder / "20240502.gz").write_bytes(packed[: len(packed) // 2])
    alone = parse_logs([folder / "20240501", folder / "20240503.gz"], format=log_format, tz="UTC")
    result = parse_logs(
        folder, format=log_format, site=alone.jobs["site"][0].as_py(), tz="UTC", errors="skip"
    )
    assert result.lines_read == result.lines_parsed + result.lines_quarantined
    damaged = str(folder / "20240502.gz")
    for table, whole in ((result.records, alone.records), (result.quarantine, alone.quarantine)):
        kept = table.filter(pc.not_equal(table["src_file"], damaged))
        assert kept.select(["src_file", "src_line"]).equals(whole.select(["src_file", "src_line"]))
    rows = result.quarantine.filter(pc.equal(result.quarantine["src_file"], damaged))
    assert rows["reason"][-1].as_py().startswith("compressed stream broken: the gzip stream")
    from_damaged = result.records.filter(pc.equal(result.records["src_file"], damaged))
    assert from_damaged.num_rows > len(_samples(log_format))  # read up to the break
    assert result.summary()["input"]["files_broken"][0]["file"] == damaged


@pytest.mark.parametrize("log_format", [f for f in FORMATS if f in SAMPLES])
def test_a_tiny_gzip_of_blank_lines_is_stopped_after_one_window(
    tmp_path: Path, log_format: str
) -> None:
    """2 kB of gzip, two million blank lines: 100,000 quarantined, then one row for the rest."""
    path = tmp_path / "blank.gz"
    path.write_bytes(gzip.compress(b"\n" * 2_000_000, mtime=0))
    assert path.stat().st_size < 4096
    result = parse_logs(path, format=log_format, errors="skip", tz="UTC")
    assert result.lines_read == GARBAGE_WINDOW_LINES + 1
    assert result.lines_read == result.lines_parsed + result.lines_quarantined
    last = result.quarantine.slice(result.quarantine.num_rows - 1).to_pylist()[0]
    assert last["src_line"] == GARBAGE_WINDOW_LINES + 1
    assert last["reason"].startswith("reading stopped after line 100,000: 100,000 of the last")
    assert result.summary()["input"]["files_stopped"][0]["line"] == GARBAGE_WINDOW_LINES + 1


def test_a_gzip_of_zeros_is_stopped_in_bounded_memory(tmp_path: Path) -> None:
    """1 MB of gzip, 1 GiB of NUL bytes on one line: stopped after 256 MiB, memory bounded."""
    path = tmp_path / "zeros.gz"
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    with path.open("wb") as out:
        for _ in range(1024):
            out.write(packer.compress(block))
        out.write(packer.flush())
    tracemalloc.start()
    try:
        result = parse_logs(path, format="torque", errors="skip")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20
    (row,) = result.quarantine.to_pylist()
    assert (result.lines_read, result.lines_parsed) == (1, 0)
    assert row["reason"].startswith("reading stopped after line 0: 1 of the last 1 lines")
    assert f"{GARBAGE_WINDOW_BYTES:,} bytes" in row["reason"]
    assert row["raw"] == bytes(KEPT_RAW_BYTES)


@pytest.mark.parametrize("log_format", [f for f in FORMATS if f in SAMPLES])
def test_an_over_long_line_is_quarantined_with_its_length(tmp_path: Path, log_format: str) -> None:
    lines = _samples(log_format)
    long_line = lines[-1] + b" " + b"x" * (MAX_LINE_BYTES + 10)
    path = tmp_path / "long.log"
    path.write_bytes(_join([*lines, long_line, *lines], True))
    result = parse_logs(path, format=log_format, errors="skip", tz="UTC")
    n = len(lines)
    assert result.lines_read == 2 * n + 1
    assert result.lines_read == result.lines_parsed + result.lines_quarantined
    (row,) = result.quarantine.filter(pc.equal(result.quarantine["src_line"], n + 1)).to_pylist()
    assert row["reason"] == (
        f"line too long: {len(long_line):,} bytes, over the limit of {MAX_LINE_BYTES:,}; "
        f"not parsed, its first {KEPT_RAW_BYTES:,} bytes kept"
    )
    assert row["raw"] == long_line[:KEPT_RAW_BYTES]
    assert n + 1 not in result.records["src_line"].to_pylist()
    assert result.summary()["input"]["lines_cut"] == 1
    with pytest.raises(LogParseError, match=f"{path}:{n + 1}: line of"):
        read_log_bytes(path)  # on its own, the shared reader never cuts silently


def test_blank_lines_below_the_share_do_not_stop_a_file(tmp_path: Path) -> None:
    """A log with long runs of blank lines (98 % of a window) is read to its end."""
    good = _join(_samples("torque"), True)
    path = tmp_path / "gappy"
    path.write_bytes((b"\n" * 98_000 + good * 300) * 3)
    result = parse_logs(path, format="torque", errors="skip")
    assert result.lines_read == _expected_lines(path.read_bytes())
    assert not result.summary()["input"]["files_stopped"]
