"""SWF/GWF headers honoured, status fields holding exit codes recognised (issue 16, items 1, 2).

What a user relies on: the header's keys come out as the log wrote them (no bogus keys from
wrapped lines), travel with the jobs table through Parquet, the VO mapping and anonymisation,
give the trace its processor count, and are written back so that read -> export -> read is exact;
a status column of exit codes is read as exit codes, said, flagged and counted, and a clean log
is never mistaken for one.
"""

from __future__ import annotations

import dataclasses
import json
import string
import warnings
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings

from gridtrace.errors import DataQualityWarning
from gridtrace.logs import (
    VOMapping,
    VORule,
    anonymize_table,
    build_trace,
    read_gwf,
    read_swf,
    write_gwf,
    write_swf,
)
from gridtrace.logs._anonymize import anonymize_result
from gridtrace.logs._swf import (
    EXIT_CODE_MIN_ROWS,
    FLAGS,
    HEADER_METADATA_KEY,
    log_headers,
    parse_swf_header,
    processors_of_headers,
)
from gridtrace.schema import read_table, trace_metadata

from .test_gwf import _line as gwf_line
from .test_swf import _same

JOB = "1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1"


def _swf(tmp_path: Path, text: str, name: str = "site.swf", **kwargs: Any) -> Any:
    path = tmp_path / name
    path.write_text(text)
    return read_swf(path, **kwargs)


# ------------------------------------------------------------------ what a header key is


def test_keys_without_spaces_and_a_version_that_is_not_a_number(tmp_path: Path) -> None:
    header = _swf(tmp_path, ";MaxProcs:128\n;  MaxNodes :64\n; Version: 2.2a\n" + JOB + "\n").info[
        "swf_header"
    ]
    assert header == {"MaxProcs": 128, "MaxNodes": 64, "Version": "2.2a"}


def test_a_wrapped_value_continues_its_key_and_makes_no_url_key(tmp_path: Path) -> None:
    # the literal lines of CTC-SP2, OSC-Clust, KTH-SP2 ... (a URL wrapped under Information)
    # and CEA-Curie (a Note wrapped with a tab, its second line starting 'see:')
    text = (
        "; Information: http://www.tc.cornell.edu/\n"
        ";              http://www.cs.huji.ac.il/labs/parallel/workload/\n"
        "; Note: Curie is composed of 3 types of nodes: thin, fat, and hybrid,\n"
        ";\tsee: http://www-hpc.cea.fr/en/complexe/tgcc-curie.htm\n"
        "; Note: THIS IS A CLEANED VERSION OF THE LOG!\n"
        ";       The filter used to produce it was\n"
        ";         user=135 and (job>=47421 and job<=50307) (2080 jobs removed)\n"
        ";\n"
        ";         http://after.a.blank.line/\n"
        "; Queues: these are actually LoadLeveler classes\n" + JOB + "\n"
    )
    result = _swf(tmp_path, text)
    header = result.info["swf_header"]
    assert "http" not in header
    assert "see" not in header
    assert header["Information"] == (
        "http://www.tc.cornell.edu/\nhttp://www.cs.huji.ac.il/labs/parallel/workload/"
    )
    assert header["Note"] == [
        "Curie is composed of 3 types of nodes: thin, fat, and hybrid,\n"
        "see: http://www-hpc.cea.fr/en/complexe/tgcc-curie.htm",
        "THIS IS A CLEANED VERSION OF THE LOG!\nThe filter used to produce it was\n"
        "user=135 and (job>=47421 and job<=50307) (2080 jobs removed)",
    ]
    assert header["_text"] == ["http://after.a.blank.line/"]  # a blank comment ends a value
    assert header["Queues"] == "these are actually LoadLeveler classes"  # a word, a colon
    attrs = [dict(a) for a in result.records.column("attrs").to_pylist()]
    assert attrs[1] == {
        "continues": "Information",
        "text": "http://www.cs.huji.ac.il/labs/parallel/workload/",
    }


def test_numbers_keep_their_comments_and_later_comments_are_no_header(tmp_path: Path) -> None:
    text = (
        ";        MaxNodes: 70  (dual)\n"
        ";        TimeZone: 3600\t # DEPRECATED; use TimeZoneString + tzset()\n"
        + JOB
        + "\n; MaxProcs: 4\n; UnixStartTime: 99\n"  # comments below the jobs set nothing
    )
    result = _swf(tmp_path, text)
    assert result.info["swf_header"] == {
        "MaxNodes": 70,
        "TimeZone": 3600,
        "_comments": {
            "MaxNodes": "(dual)",
            "TimeZone": "# DEPRECATED; use TimeZoneString + tzset()",
        },
    }
    assert "TIME_RELATIVE" in result.jobs.column("flags")[0].as_py()
    assert result.records.column("record_type").to_pylist() == ["H", "H", "J", "H", "H"]


def test_parse_swf_header_reads_loose_lines() -> None:
    lines = ["MaxProcs: 10", "#  Note: a", "#        b", "#   c", "12:30 is no key"]
    assert parse_swf_header(lines) == {
        "MaxProcs": 10,
        "Note": "a\nb",
        "_text": ["c", "12:30 is no key"],  # c is not indented under the value
    }


# ------------------------------------------------------------------ the header travels


def _lpc_like(tmp_path: Path) -> Path:
    path = tmp_path / "lpc.swf"
    path.write_text(
        "; Version: 2.2\n; MaxNodes: 70 (dual)\n; MaxProcs: 140\n; UnixStartTime: 1091615532\n"
        "; TimeZoneString: Europe/Paris\n; Acknowledge: Jane Doe - jdoe AT example.org\n"
        "1 0 4 16 1 2 0 1 7200 -1 1 1 3 -1 2 1 -1 -1\n"
        "2 5 6 8 1 2 0 1 7200 -1 1 2 4 -1 2 1 -1 -1\n"
    )
    return path


def test_the_header_survives_parquet_vo_mapping_and_anonymisation(tmp_path: Path) -> None:
    result = read_swf(_lpc_like(tmp_path))
    header = result.info["swf_header"]
    assert log_headers(result.jobs) == ("swf", [header])
    parquet = tmp_path / "jobs.parquet"
    pq.write_table(result.jobs, parquet)
    assert log_headers(read_table(parquet, "jobs")) == ("swf", [header])
    mapped = VOMapping(rules=(VORule("group", "3", "atlas"),)).apply(result.jobs)
    assert log_headers(mapped) == ("swf", [header])
    hidden = anonymize_table(mapped, b"a key of sixteen bytes")
    assert hidden.column("user").to_pylist() != mapped.column("user").to_pylist()
    whole = anonymize_result(dataclasses.replace(result, jobs=mapped), b"a key of sixteen bytes")
    # anonymised, the header keeps its plain values and loses the free text naming someone
    for table in (hidden, whole.jobs):
        log_format, (kept,) = log_headers(table)
        assert log_format == "swf"
        assert "Acknowledge" not in kept
        assert "Jane" not in str(table.schema.metadata)
        for key in ("Version", "MaxProcs", "UnixStartTime", "TimeZoneString"):
            assert kept[key] == header[key]
    # and so the trace built from any of them has the header's P
    for jobs in (read_table(parquet, "jobs"), mapped, hidden):
        meta = trace_metadata(build_trace(jobs))
        assert meta["cores"] == 140
        assert meta["provenance"]["cores_source"] == "header"
        assert meta["provenance"]["cores_estimate"] == "SWF header MaxProcs"


def test_processors_of_headers() -> None:
    assert processors_of_headers([{"MaxProcs": 128, "MaxNodes": 64}]) == (128, "MaxProcs")
    assert processors_of_headers([{"MaxNodes": 256}]) == (
        256,
        "MaxNodes (no MaxProcs: one processor per node)",
    )
    assert processors_of_headers([{"MaxProcs": "many"}, {}]) is None
    assert processors_of_headers([{"MaxProcs": [16, 32]}]) == (16, "MaxProcs")
    p, why = processors_of_headers([{"MaxProcs": 16}, {"MaxProcs": 32}]) or (0, "")
    assert (p, "largest of 2 files" in why) == (32, True)


def test_trace_cores_given_header_or_largest_job(tmp_path: Path, caplog: Any) -> None:
    path = _lpc_like(tmp_path)
    jobs = read_swf(path).jobs
    assert trace_metadata(build_trace(jobs, cores=7))["provenance"]["cores_source"] == "given"
    small = tmp_path / "small.swf"
    small.write_text("; MaxProcs: 2\n1 0 4 16 8 -1 -1 8 -1 -1 1 1 1 -1 1 -1 -1 -1\n")
    meta = trace_metadata(build_trace(read_swf(small).jobs))
    assert meta["cores"] == 8  # a job bigger than the header's machine: P is the largest job
    assert "raised to the largest job" in meta["provenance"]["cores_estimate"]
    assert "the log's header gives 2 processors" in caplog.text
    nothing = tmp_path / "none.swf"
    nothing.write_text("1 0 4 16 8 -1 -1 8 -1 -1 1 1 1 -1 1 -1 -1 -1\n")
    meta = trace_metadata(build_trace(read_swf(nothing).jobs))
    assert meta["provenance"]["cores_source"] == "estimated"


def test_a_gwf_header_is_read_carried_and_written_back(tmp_path: Path) -> None:
    path = tmp_path / "grid.gwf"
    path.write_text(
        "# Version: 1.0\n# MaxProcs: 400\n# Information: http://gwa.ewi.tudelft.nl/\n"
        "#               http://example.org/more\n"
        + gwf_line(JobID="1", SubmitTime="10", WaitTime="0", RunTime="5", NProcs="2")
        + "\n"
    )
    first = read_gwf(path)
    assert first.info["gwf_header"] == {
        "Version": "1.0",
        "MaxProcs": 400,
        "Information": "http://gwa.ewi.tudelft.nl/\nhttp://example.org/more",
    }
    assert trace_metadata(build_trace(first.jobs))["cores"] == 400
    again = read_gwf(write_gwf(first.jobs, tmp_path / "again.gwf"))
    assert again.info["gwf_header"] == first.info["gwf_header"]


# ------------------------------------------------------------------ read -> export -> read


_word = st.text(string.ascii_lowercase + string.digits + "./()=-_", min_size=1, max_size=10)
_text_line = st.lists(_word, min_size=1, max_size=5).map(" ".join)
_value = st.lists(_text_line, min_size=1, max_size=3).map("\n".join)
_custom_key = st.from_regex(r"[A-Z][a-z]{2,8}", fullmatch=True).filter(
    lambda k: k not in {"Queue", "Partition", "Version", "Note"}
)


@st.composite
def _header(draw: st.DrawFn) -> dict[str, Any]:
    header: dict[str, Any] = {"Version": draw(st.sampled_from(["2.2", "2.2a", "2", "v3-beta"]))}
    for key in ("Computer", "Installation", "Acknowledge", "Information", "Conversion"):
        if draw(st.booleans()):
            header[key] = draw(_value)
    for key in ("MaxNodes", "MaxProcs", "MaxRuntime", "MaxMemory"):
        if draw(st.booleans()):
            header[key] = draw(st.integers(1, 10**6))
    if draw(st.booleans()):
        header["TimeZoneString"] = draw(st.sampled_from(["Europe/Paris", "US/Pacific", "UTC"]))
    for key in draw(st.lists(_custom_key, max_size=2, unique=True)):
        header[key] = draw(_value)
    notes = draw(st.lists(_value, max_size=3))
    if notes:
        header["Note"] = notes if len(notes) > 1 else notes[0]
    comments = {k: "(" + draw(_word) + ")" for k in ("MaxNodes",) if k in header}
    if comments and draw(st.booleans()):
        header["_comments"] = comments
    free = draw(st.lists(_text_line.map(lambda t: "- " + t), max_size=2))
    if free:
        header["_text"] = free
    return header


@st.composite
def _job_lines(draw: st.DrawFn) -> list[str]:
    lines = []
    submit = 0
    for number in range(1, draw(st.integers(1, 12)) + 1):
        submit += draw(st.integers(0, 10**5))
        wait = draw(st.one_of(st.just(-1), st.integers(0, 10**5)))
        run = draw(st.one_of(st.just(-1), st.integers(0, 10**6)))
        procs = draw(st.one_of(st.just(-1), st.integers(1, 512)))
        cpu = draw(st.one_of(st.just("-1"), st.floats(0, 1e5).map(lambda x: f"{x:.2f}")))
        mem = draw(st.one_of(st.just(-1), st.integers(0, 10**7)))
        status = draw(st.sampled_from([-1, 0, 1, 1, 1, 5]))
        user, group, queue = (draw(st.integers(-1, 60)) for _ in range(3))
        fields = [number, submit, wait, run, procs, cpu, mem, procs, -1, -1, status]
        fields += [user, group, -1, queue, -1, -1, -1]
        lines.append(" ".join(str(f) for f in fields))
    return lines


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(header=_header(), lines=_job_lines(), origin=st.one_of(st.none(), st.integers(0, 2**31)))
def test_read_export_read_is_exact_header_included(
    tmp_path: Path, header: dict[str, Any], lines: list[str], origin: int | None
) -> None:
    if origin is not None:
        header = {**header, "UnixStartTime": origin}
    # the log, written by hand-style lines (keys left-aligned, wrapped values indented)
    text = []
    for key, value in header.items():
        if key in ("_comments", "_text"):
            continue
        for item in value if isinstance(value, list) else [value]:
            first, *more = str(item).split("\n")
            comment = header.get("_comments", {}).get(key)
            text.append(f"; {key}: {first}" + (f"  {comment}" if comment else ""))
            text += [";" + " " * (len(key) + 3) + line for line in more]
    text += [f"; {line}" for line in header.get("_text", [])]
    log = tmp_path / "log.swf"
    log.write_text("\n".join([*text, *lines]) + "\n")
    first = read_swf(log, status="swf")
    assert first.info["swf_header"] == header  # every key, as written
    exported = write_swf(first.jobs, tmp_path / "exported.swf")  # the header from the table
    assert dict(exported.adjusted) == {}
    second = read_swf(exported, status="swf", site=first.jobs.column("site")[0].as_py())
    assert second.info["swf_header"] == first.info["swf_header"]
    _same(first.jobs, second.jobs)
    assert second.jobs.column("flags").equals(first.jobs.column("flags"))


def test_an_export_of_selected_jobs_keeps_the_logs_counts_and_says_so(tmp_path: Path) -> None:
    result = read_swf(_lpc_like(tmp_path))
    again = read_swf(write_swf(result.jobs.slice(0, 1), tmp_path / "one.swf"))
    header = again.info["swf_header"]
    assert header["MaxProcs"] == 140
    assert (
        header["Note"]
        == "1 of the 2 jobs read from the log are written; MaxJobs and MaxRecords describe the log"
    )


def test_the_metadata_is_json_with_format_headers_and_jobs(tmp_path: Path) -> None:
    jobs = read_swf(_lpc_like(tmp_path)).jobs
    stored = json.loads((jobs.schema.metadata or {})[HEADER_METADATA_KEY])
    assert stored["format"] == "swf"
    assert stored["jobs"] == 2
    assert stored["headers"][0]["MaxProcs"] == 140


# ------------------------------------------------------------------ exit codes in the status


def _exit_code_log(n: int, odd_every: int) -> str:
    """A log whose status holds exit codes: mostly 0, some 1, every odd_every-th another code."""
    codes = [2, 126, 127, 137, 143, 265]
    lines = ["; UnixStartTime: 1000000000"]
    for i in range(n):
        code = codes[i // odd_every % len(codes)] if i % odd_every == 0 else (1 if i % 7 else 0)
        lines.append(f"{i + 1} {i * 10} 0 60 1 -1 -1 1 -1 -1 {code} 1 1 -1 1 -1 -1 -1")
    return "\n".join(lines) + "\n"


def test_a_status_of_exit_codes_is_recognised_read_flagged_and_counted(tmp_path: Path) -> None:
    with pytest.warns(DataQualityWarning, match=r"codes\.swf: 10 of 200 known statuses"):
        result = _swf(tmp_path, _exit_code_log(200, 20), name="codes.swf")
    jobs = result.jobs.to_pylist()
    for row in jobs:
        assert row["flags"] == ["STATUS_AS_EXIT_CODE"]
        assert row["state"] == ("COMPLETED" if row["exit_code"] == 0 else "FAILED")
    assert {row["exit_code"] for row in jobs} == {0, 1, 2, 126, 127, 137, 143, 265}
    summary = result.summary()
    assert summary["job_flags"] == {"STATUS_AS_EXIT_CODE": 200}
    assert summary["swf_exit_code_files"] == [str(tmp_path / "codes.swf")]
    # the user may force either reading
    forced = _swf(tmp_path, _exit_code_log(200, 20), name="codes.swf", status="swf")
    assert forced.summary()["job_flags"]["STATUS_NONSTANDARD"] == 10
    ones = _swf(tmp_path, "1 0 0 1 1 -1 -1 1 -1 -1 0 1 1 -1 1 -1 -1 -1\n", status="exit_code")
    assert ones.jobs.column("state").to_pylist() == ["COMPLETED"]


def test_a_handful_of_odd_statuses_leaves_a_log_read_as_swf(tmp_path: Path) -> None:
    # 1000 jobs, three stray statuses: enough rows (EXIT_CODE_MIN_ROWS) but 0.3 % of them
    odd = {5: 126, 9: 3, 500: 7}
    lines = [
        f"{i} {i} 0 60 1 -1 -1 1 -1 -1 {odd.get(i, i % 2)} 1 1 -1 1 -1 -1 -1" for i in range(1000)
    ]
    assert len(odd) >= EXIT_CODE_MIN_ROWS
    result = _swf(tmp_path, "\n".join(lines) + "\n")
    assert result.info["swf_exit_code_files"] == []
    assert result.summary()["job_flags"] == {"TIME_RELATIVE": 1000, "STATUS_NONSTANDARD": 3}
    assert result.jobs.column("exit_code").drop_null().to_pylist() == [126, 3, 7]


def test_partial_executions_when_the_header_declares_them(tmp_path: Path) -> None:
    body = "".join(
        f"{i} {i} 0 10 1 -1 -1 1 -1 -1 {s} 1 1 -1 1 -1 -1 -1\n"
        for i, s in enumerate([2, 3, 2, 4], start=1)
    )
    declared = _swf(tmp_path, "; MaxJobs: 2\n; MaxRecords: 4\n" + body)
    assert declared.jobs.column("state").to_pylist() == [
        "REQUEUED",
        "COMPLETED",
        "REQUEUED",
        "FAILED",
    ]
    assert all(
        f == ["TIME_RELATIVE", "PARTIAL_EXECUTION"] for f in declared.jobs["flags"].to_pylist()
    )
    again = read_swf(write_swf(declared.jobs, tmp_path / "again.swf"))
    assert again.jobs.column("state").equals(declared.jobs.column("state"))
    # without the header's word, 2-4 are no SWF status (and four of four: exit codes)
    with pytest.warns(DataQualityWarning):
        plain = _swf(tmp_path, body, name="plain.swf")
    assert plain.jobs.column("state").to_pylist() == ["FAILED"] * 4


def test_a_gwf_status_of_exit_codes_is_recognised(tmp_path: Path) -> None:
    rows = [
        gwf_line(JobID=str(i), SubmitTime=str(10 + i), WaitTime="0", RunTime="5", Status=code)
        for i, code in enumerate(["0", "0", "1", "127", "2", "0", "137", "0"])
    ]
    path = tmp_path / "grid.gwf"
    path.write_text("\n".join(rows) + "\n")
    with pytest.warns(DataQualityWarning, match="grid.gwf"):
        result = read_gwf(path)
    assert result.jobs.column("state").to_pylist().count("COMPLETED") == 4
    assert result.info["gwf_exit_code_files"] == [str(path)]


def test_every_flag_the_readers_set_is_explained(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seen: set[str] = set()
        for text in (
            _exit_code_log(50, 5),
            "; MaxJobs: 1\n; MaxRecords: 2\n"
            "2 0 0 10 1 -1 -1 1 -1 -1 2 1 1 -1 1 -1 -1 -1\n"
            "1 -1 0 10.5 1 -1 -1 -1 -1 5 5 1 1 -1 1 -1 -1 -1\r\n"
            "\x00\x003 5 -1 -1 9e20 -1 -1 1 -1 -1 5 1 1 -1 1 -1 -1 -1\n"
            "3 5 -1 -1 9e20 -1 -1 1 -1 -1 5 1 1 -1 1 -1 -1 -1\n"
            "4 5 -1 -1 9e20 -1 -1 1 -1 -1 5 1 1 -1 1 -1 -1 -1\n"
            "5 1 -1 -1 1 -1 -1 1 -1 -1 5 1 1 -1 1 -1 -1 -1\n"
            "; Note: caf\xe9\n",
        ):
            path = tmp_path / "flags.swf"
            path.write_bytes(text.encode("latin-1"))
            result = read_swf(path, errors="skip")
            seen |= set(result.summary()["job_flags"]) | set(result.summary()["record_flags"])
    assert seen <= set(FLAGS)
    assert {"NUL_STRIPPED", "CRLF", "DUPLICATE", "NEVER_RAN", "OUT_OF_RANGE", "ROUNDED"} <= seen
    assert {"STATUS_AS_EXIT_CODE", "PARTIAL_EXECUTION", "MEM_REQ_FROM_ALLOC", "UNSORTED"} <= seen
    assert all(np.char.str_len(list(FLAGS.values())) > 20)


@pytest.mark.realdata
def test_real_logs_are_not_exit_code_files_and_get_their_headers_p(real_data: Path) -> None:
    expected = {
        "CEA-Curie-2011-2.1-cln.swf.gz": 93312,
        "CTC-SP2-1996-3.1-cln.swf.gz": 338,
        "HPC2N-2002-2.2-cln.swf.gz": 240,
        "KTH-SP2-1996-2.1-cln.swf.gz": 100,
        "LANL-CM5-1994-4.1-cln.swf.gz": 1024,
        "LCG-2005-1.swf.gz": 24515,
        "LLNL-Atlas-2006-2.1-cln.swf.gz": 9216,
        "LLNL-Thunder-2007-1.1-cln.swf.gz": 4008,
        "LPC-EGEE-2004-1.2-cln.swf.gz": 140,
        "NASA-iPSC-1993-3.1-cln.swf.gz": 128,
        "OSC-Clust-2000-3.1-cln.swf.gz": 178,
        "RICC-2010-2.swf.gz": 8192,
        "lublin_256.swf.gz": 256,  # MaxNodes: the model's header has no MaxProcs
        "lublin_256_new2.swf.gz": 256,
    }
    for name, cores in expected.items():
        result = read_swf(real_data / "swf" / name)
        assert result.info["swf_exit_code_files"] == [], name
        assert "STATUS_AS_EXIT_CODE" not in result.summary()["job_flags"], name
        assert not {k for k in result.info["swf_header"] if k[0].islower()}, name  # no "http"
        meta = trace_metadata(build_trace(result.jobs))
        assert (meta["cores"], meta["provenance"]["cores_source"]) == (cores, "header"), name


def test_every_flag_the_gwf_reader_sets_is_explained(tmp_path: Path) -> None:
    from gridtrace.logs._gwf import FLAGS as GWF_FLAGS

    job = gwf_line(JobID="1", SubmitTime="20", WaitTime="-5", RunTime="-1", Status="5")
    lines = [
        job,
        "\x00\x00" + gwf_line(JobID="2", SubmitTime="10", WaitTime="1", RunTime="7.5") + "\r",
        gwf_line(
            JobID="3", SubmitTime="30", WaitTime="-1", RunTime="-1", NProcs="2", ReqMemory="4"
        ),
        job,
        "# Note: caf\xe9",
    ]
    path = tmp_path / "flags.gwf"
    path.write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    summary = read_gwf(path).summary()
    seen = set(summary["job_flags"]) | set(summary["record_flags"])
    assert seen <= set(GWF_FLAGS)
    assert {"NEGATIVE_WAIT", "UNSORTED", "NEVER_RAN", "ROUNDED", "NUL_STRIPPED", "CRLF"} <= seen
    assert {"DUPLICATE", "NON_UTF8", "MEM_REQ_FROM_ALLOC"} <= seen
