"""Keyed pseudonyms: determinism, key sensitivity, host-list syntax, and no original name left."""

from __future__ import annotations

import json
import logging
import re
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridtrace.cli import main
from gridtrace.errors import ConfigError
from gridtrace.logs import (
    VOMapping,
    anonymize_table,
    build_trace,
    execution_slots,
    parse_logs,
)
from gridtrace.logs._anonymize import (
    anonymize_result,
    key_from_env,
    key_id,
    pseudonym,
    read_key_file,
)
from gridtrace.schema import (
    conform,
    empty_table,
    trace_metadata,
    validate,
    with_trace_metadata,
)

KEY = b"a-test-key-of-more-than-16-bytes"
OTHER_KEY = b"another-test-key-of-32-bytes...."
PSEUDONYM = re.compile(r"[ugajhv]-[0-9a-f]{12}")

TORQUE = (
    b"05/02/2024 10:00:00;Q;301.pbs01.example.org;queue=grid\n"
    b"05/02/2024 10:01:00;S;301.pbs01.example.org;user=alice group=atlas account=proj7 "
    b"jobname=run.sh queue=grid ctime=1714644000 qtime=1714644000 etime=1714644000 "
    b"start=1714644060 owner=alice@ui01.example.org exec_host=r3i1n9/0-19+r3i1n10/0-3 "
    b"Resource_List.nodes=r3i1n9:ppn=20+1:ppn=4\n"
    b"05/02/2024 11:00:00;D;302.pbs01.example.org;requestor=bob@ui02.example.org\n"
    b"05/03/2024 09:00:00;E;301.pbs01.example.org;user=alice group=atlas account=proj7 "
    b"jobname=run.sh queue=grid ctime=1714644000 qtime=1714644000 etime=1714644000 "
    b"start=1714644060 owner=alice@ui01.example.org exec_host=r3i1n9/0-19+r3i1n10/0-3 "
    b"end=1714726800 Exit_status=0 resources_used.mem=2500mb resources_used.walltime=22:53:00\n"
    b"05/03/2024 09:00:01;E;303.pbs01.example.org;user=carol\x00 group=atlas stray_alice_token "
    b"end=1714726801 Exit_status=0\n"
    b"this line names alice and r3i1n9 but is no accounting line\n"
)

SLURM = (
    "1001|1001|ub-hpc|general|normal|proj7|atlas|5000|alice|5001|2024-05-02T10:00:00|"
    "2024-05-02T10:00:00|2024-05-02T10:01:00|2024-05-02T12:01:00|02:00:00|0:0|COMPLETED|2|8|8|"
    "4Gn|cpu=8,mem=8G,node=2|cpu=8,mem=8G,node=2|03:00:00|cpn-[01-02]|run.sh\n"
    "1002|1002|ub-hpc|general|normal|proj7|atlas|5000|bob|5002|2024-05-02T10:00:00|"
    "2024-05-02T10:00:00|2024-05-02T10:01:00|2024-05-02T10:11:00|00:10:00|0:0|"
    "CANCELLED by 5001|1|1|1|1Gn|cpu=1,mem=1G,node=1|cpu=1,mem=1G,node=1|01:00:00|cpn-03|x\n"
)


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _strings_in(table: pa.Table) -> list[str]:
    """Every string, binary (decoded) and metadata value anywhere in a table."""
    found: list[str] = []

    def walk(array: Any) -> None:
        kind = array.type
        if pa.types.is_map(kind):
            walk(array.keys)
            walk(array.items)
        elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
            walk(array.flatten())
        elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
            found.extend(v for v in array.to_pylist() if v is not None)
        elif pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            found.extend(v.decode("utf-8", "replace") for v in array.to_pylist() if v is not None)

    for column in table.columns:
        for chunk in column.chunks:
            walk(chunk)
    for k, v in (table.schema.metadata or {}).items():
        found.extend([k.decode(), v.decode("utf-8", "replace")])
    return found


def _leaks(tables: list[pa.Table], originals: set[str]) -> set[str]:
    text = "\n".join(s for table in tables for s in _strings_in(table))
    return {name for name in originals if name in text}


# ---------------------------------------------------------------------------- pseudonyms


def test_pseudonym_has_kind_prefix_and_48_bits() -> None:
    assert re.fullmatch(r"u-[0-9a-f]{12}", pseudonym("alice", "user", KEY))
    assert pseudonym("r3i1n9", "host", KEY).startswith("h-")
    assert pseudonym("atlas", "vo", KEY).startswith("v-")


def test_same_key_and_value_give_the_same_pseudonym() -> None:
    assert pseudonym("alice", "user", KEY) == pseudonym("alice", "user", bytes(KEY))


def test_another_key_gives_another_pseudonym() -> None:
    assert pseudonym("alice", "user", KEY) != pseudonym("alice", "user", OTHER_KEY)


def test_kind_is_part_of_the_hash() -> None:
    # a user and a group of the same name are not linked through their pseudonyms
    assert pseudonym("alice", "user", KEY)[2:] != pseudonym("alice", "group", KEY)[2:]


def test_empty_string_stays_empty() -> None:
    assert pseudonym("", "user", KEY) == ""


@pytest.mark.parametrize("key", [b"", bytearray()])
def test_empty_key_is_refused(key: bytes) -> None:
    with pytest.raises(ConfigError, match="empty"):
        pseudonym("alice", "user", key)


def test_text_key_is_refused() -> None:
    with pytest.raises(ConfigError, match="bytes"):
        anonymize_table(empty_table("jobs"), "secret")  # type: ignore[arg-type]


def test_short_key_is_used_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="gridtrace.logs._anonymize"):
        assert pseudonym("alice", "user", b"short").startswith("u-")
    assert "only 5 bytes" in caplog.text


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown kind"):
        anonymize_table(empty_table("jobs"), KEY, kinds={"user", "email"})


def test_unknown_table_is_refused() -> None:
    with pytest.raises(ConfigError, match="only gridtrace's own tables"):
        anonymize_table(pa.table({"user": ["alice"], "note": ["x"]}), KEY)


def test_key_id_is_stable_and_says_nothing_of_the_key() -> None:
    assert key_id(KEY) == key_id(KEY) != key_id(OTHER_KEY)
    assert re.fullmatch(r"[0-9a-f]{12}", key_id(KEY))


# ---------------------------------------------------------------------------- trace and jobs


def _trace(users: list[str | None], vos: list[str | None] | None = None) -> pa.Table:
    size = len(users)
    return conform(
        pa.table(
            {
                "job_id": pa.array(range(size), pa.int64()),
                "submit_s": pa.array([float(i) for i in range(size)]),
                "run_s": pa.array([1.0] * size),
                "cores": pa.array([1] * size, pa.int32()),
                "vo": pa.array(vos if vos is not None else [None] * size, pa.string()),
                "user": pa.array(users, pa.string()),
                "queue": pa.array(["grid"] * size),
                "interactive": pa.array([True] * size),
            }
        ),
        "trace",
    )


def test_100k_distinct_names_get_100k_distinct_pseudonyms() -> None:
    names = [f"user{i:06d}" for i in range(100_000)]
    out = anonymize_table(_trace(names), KEY)
    users = out.column("user").to_pylist()
    assert len(set(users)) == 100_000
    assert all(PSEUDONYM.fullmatch(u) for u in users[:1000])
    assert users[12345] == pseudonym("user012345", "user", KEY)


def test_trace_nulls_stay_null_and_vo_is_kept_by_default() -> None:
    out = anonymize_table(_trace(["alice", None, "alice"], ["atlas", "cms", None]), KEY)
    validate(out, "trace")
    users = out.column("user").to_pylist()
    assert users[0] == users[2] == pseudonym("alice", "user", KEY)
    assert users[1] is None
    assert out.column("vo").to_pylist() == ["atlas", "cms", None]
    meta = json.loads(out.schema.metadata[b"gridtrace.anonymized"])
    assert meta == {
        "scheme": "hmac-sha256-48",
        "kinds": ["account", "group", "host", "job_name", "user"],
        "src_file": "name",
        "key_id": key_id(KEY),
    }


def test_src_file_keeps_the_name_or_a_pseudonym_and_provenance_loses_its_folders() -> None:
    jobs = anonymize_table(_jobs_with_files(), KEY)
    assert jobs.column("src_file").to_pylist() == ["20240503.gz", "20240503.gz", "x.log"]
    hidden = anonymize_table(_jobs_with_files(), KEY, src_file="pseudonym")
    first, second, third = hidden.column("src_file").to_pylist()
    assert first == second != third  # the same name, the same pseudonym
    assert re.fullmatch(r"f-[0-9a-f]{12}", first)
    with pytest.raises(ConfigError, match="src_file must be one of name, pseudonym"):
        anonymize_table(_jobs_with_files(), KEY, src_file="path")
    trace = with_trace_metadata(
        _trace(["alice"], ["atlas"]),
        origin="2024-05-02T00:00:00+00:00",
        site="s",
        cores=4,
        tau_s=900.0,
        provenance={"jobs_table": "/home/alice/traces/s/jobs.parquet"},
    )
    meta = trace_metadata(anonymize_table(trace, KEY))
    assert meta["provenance"]["jobs_table"] == "jobs.parquet"


def _jobs_with_files() -> pa.Table:
    paths = ["/home/alice/logs/20240503.gz", "logs/20240503.gz", "C:\\logs\\x.log"]
    return conform(
        pa.table(
            {
                "site": ["s"] * 3,
                "source_format": ["slurm"] * 3,
                "job_key": ["a", "b", "c"],
                "job_id_raw": ["1", "2", "3"],
                "attempt": pa.array([0] * 3, pa.int16()),
                "n_attempts": pa.array([1] * 3, pa.int16()),
                "state": ["COMPLETED"] * 3,
                "src_file": paths,
                "src_line": [1, 2, 3],
            }
        ),
        "jobs",
    )


def test_vo_is_pseudonymised_when_asked() -> None:
    out = anonymize_table(_trace(["alice"], ["atlas"]), KEY, kinds={"user", "vo"})
    assert out.column("vo").to_pylist() == [pseudonym("atlas", "vo", KEY)]


def test_trace_metadata_is_kept() -> None:
    table = _trace(["alice"]).replace_schema_metadata({b"site": b"lpc"})
    assert anonymize_table(table, KEY).schema.metadata[b"site"] == b"lpc"


def test_same_pseudonyms_in_separately_anonymised_tables(tmp_path: Path) -> None:
    result = parse_logs(_write(tmp_path, "acct", TORQUE), errors="skip")
    jobs = anonymize_table(result.jobs, KEY)
    trace = anonymize_table(build_trace(result.jobs, cores=100), KEY)
    assert set(trace.column("user").to_pylist()) <= set(jobs.column("user").to_pylist())
    assert pseudonym("alice", "user", KEY) in trace.column("user").to_pylist()


def test_jobs_columns_and_torque_server_are_pseudonymised(tmp_path: Path) -> None:
    result = parse_logs(_write(tmp_path, "acct", TORQUE), errors="skip", anonymize=KEY)
    validate(result.jobs, "jobs")
    job = next(j for j in result.jobs.to_pylist() if j["job_seq"] == 301)
    assert job["user"] == pseudonym("alice", "user", KEY)
    assert job["group"] == pseudonym("atlas", "group", KEY)
    assert job["account"] == pseudonym("proj7", "account", KEY)
    assert job["job_name"] == pseudonym("run.sh", "job_name", KEY)
    assert job["exec_hosts"] == [
        pseudonym("r3i1n9", "host", KEY),
        pseudonym("r3i1n10", "host", KEY),
    ]
    assert job["job_id_raw"] == "301." + pseudonym("pbs01.example.org", "host", KEY)
    assert job["queue"] == "grid"
    assert job["run_s"] == 1714726800 - 1714644060


def test_exec_hosts_element_with_slots_keeps_its_syntax() -> None:
    jobs = conform(
        pa.table(
            {
                "site": ["s"],
                "source_format": ["slurm"],
                "job_key": ["k"],
                "job_id_raw": ["1"],
                "attempt": pa.array([0], pa.int16()),
                "n_attempts": pa.array([1], pa.int16()),
                "exec_hosts": pa.array([["r3i1n9/0-19+r3i1n10/0-3", "n5"]]),
                "state": ["COMPLETED"],
                "src_file": ["f"],
                "src_line": [1],
            }
        ),
        "jobs",
    )
    (hosts,) = anonymize_table(jobs, KEY).column("exec_hosts").to_pylist()
    a, b, c = (pseudonym(h, "host", KEY) for h in ("r3i1n9", "r3i1n10", "n5"))
    assert hosts == [f"{a}/0-19+{b}/0-3", c]


def test_vo_copied_from_the_group_is_the_group_pseudonym(tmp_path: Path) -> None:
    result = parse_logs(_write(tmp_path, "acct", TORQUE), errors="skip")
    jobs = VOMapping().apply(result.jobs)  # fallback: VO = group name, flag VO_FROM_GROUP
    out = anonymize_table(jobs, KEY)
    group = pseudonym("atlas", "group", KEY)
    assert set(out.column("vo").to_pylist()) == {group, None}  # job 302 has no group
    mapped = VOMapping.from_dict({"rules": [{"field": "group", "pattern": "at.*", "vo": "atlas"}]})
    assert set(anonymize_table(mapped.apply(result.jobs), KEY).column("vo").to_pylist()) == {
        "atlas",
        None,
    }


# ---------------------------------------------------------------------------- records


def test_torque_records_keep_slot_syntax_and_drop_raw_and_free_text(tmp_path: Path) -> None:
    plain = parse_logs(_write(tmp_path, "acct", TORQUE), errors="skip")
    result = anonymize_result(plain, KEY)
    validate(result.records, "records")
    assert result.lines_read == result.lines_parsed + result.lines_quarantined == 6
    assert result.records.column("raw").null_count == result.records.num_rows
    s_record = dict(result.records.column("attrs")[1].as_py())
    a, b = pseudonym("r3i1n9", "host", KEY), pseudonym("r3i1n10", "host", KEY)
    assert s_record["exec_host"] == f"{a}/0-19+{b}/0-3"
    assert s_record["Resource_List.nodes"] == f"{a}:ppn=20+1:ppn=4"
    owner = pseudonym("alice", "user", KEY) + "@" + pseudonym("ui01.example.org", "host", KEY)
    assert s_record["owner"] == owner
    e_record = dict(result.records.column("attrs")[3].as_py())
    assert e_record["resources_used.mem"] == "2500mb"
    assert e_record["resources_used.walltime"] == "22:53:00"
    assert e_record["Exit_status"] == "0"
    # the bare token is a key of its own in the records: dropped
    bad = dict(result.records.column("attrs")[4].as_py())
    assert "stray_alice_token" not in bad
    assert bad["user"] == pseudonym("carol", "user", KEY)
    # the slots still count the same
    assert sorted(map(len, execution_slots(result.records).values())) == sorted(
        map(len, execution_slots(plain.records).values())
    )
    assert result.quarantine.column("raw").to_pylist() == [b""]
    assert result.quarantine.column("src_line").to_pylist() == [6]
    assert not _leaks(
        [result.records, result.jobs, result.quarantine],
        {"alice", "bob", "carol", "atlas", "proj7", "run.sh", "r3i1n9", "r3i1n10", "ui01", "pbs01"},
    )


def test_slurm_records_nodelist_uid_and_cancelled_by(tmp_path: Path) -> None:
    path = _write(tmp_path, "sacct.log", SLURM.encode())
    result = parse_logs(path, format="slurm", tz="UTC", anonymize=KEY)
    first, second = (dict(a) for a in result.records.column("attrs").to_pylist())
    hosts = [pseudonym(h, "host", KEY) for h in ("cpn-01", "cpn-02")]
    assert first["NodeList"] == ",".join(hosts)
    assert result.jobs.column("exec_hosts").to_pylist()[0] == hosts
    assert first["UID"] == pseudonym("5001", "user", KEY)
    assert first["GID"] == pseudonym("5000", "group", KEY)
    assert first["ReqTRES"] == "cpu=8,mem=8G,node=2"
    assert first["Submit"] == "2024-05-02T10:00:00"
    assert second["State"] == "CANCELLED by " + pseudonym("5001", "user", KEY)
    assert result.jobs.column("state").to_pylist() == ["COMPLETED", "CANCELLED"]
    assert not _leaks([result.records, result.jobs], {"alice", "bob", "proj7", "cpn-0", "5001"})


def test_swf_user_and_group_ids_are_pseudonymised(tmp_path: Path) -> None:
    swf = (
        b"; Version: 2.2\n; Acknowledge: Dr. Alice Example\n; MaxProcs: 16\n"
        b"1 0 10 100 4 -1 -1 4 200 -1 1 17 3 5 1 -1 -1 -1\n"
    )
    result = parse_logs(_write(tmp_path, "x.swf", swf), format="swf", anonymize=KEY)
    assert result.jobs.column("user").to_pylist() == [pseudonym("17", "user", KEY)]
    header = [dict(a) for a in result.records.column("attrs").to_pylist()[:3]]
    assert header == [{"Version": "2.2"}, {}, {"MaxProcs": "16"}]
    job = dict(result.records.column("attrs")[3].as_py())
    assert job["group_id"] == pseudonym("3", "group", KEY)
    assert job["executable_id"] == pseudonym("5", "job_name", KEY)
    assert job["run_time"] == "100"


def test_records_of_a_format_without_rules_keep_no_attrs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    records = parse_logs(_write(tmp_path, "acct", TORQUE), errors="skip").records
    records = records.set_column(
        1, "source_format", pa.array(["lsf-future"] * records.num_rows, pa.string())
    )
    with caplog.at_level(logging.WARNING, logger="gridtrace.logs._anonymize"):
        out = anonymize_table(records, KEY)
    assert all(not a for a in out.column("attrs").to_pylist())
    assert "no anonymisation rules" in caplog.text


def test_sliced_records_table_is_anonymised_row_for_row(tmp_path: Path) -> None:
    records = parse_logs(_write(tmp_path, "acct", TORQUE), errors="skip").records
    whole = anonymize_table(records, KEY)
    part = anonymize_table(records.slice(1, 2), KEY)
    assert part.column("attrs").to_pylist() == whole.column("attrs").to_pylist()[1:3]


# ---------------------------------------------------------------------------- no leak (property)

_NAME = st.from_regex(r"zq[a-z0-9_]{3,8}", fullmatch=True)
_HOST = st.from_regex(r"zh[a-z0-9-]{3,8}", fullmatch=True)


@settings(max_examples=40, deadline=None)
@given(
    users=st.lists(_NAME, min_size=1, max_size=4),
    group=_NAME,
    account=_NAME,
    jobname=_NAME,
    hosts=st.lists(_HOST, min_size=1, max_size=3),
    server=_HOST,
)
def test_no_original_name_survives_anywhere(
    users: list[str], group: str, account: str, jobname: str, hosts: list[str], server: str
) -> None:
    exec_host = "+".join(f"{h}/0-1" for h in hosts)
    lines = []
    for i, user in enumerate(users):
        seq = 100 + i
        lines.append(
            f"05/03/2024 09:00:0{i};E;{seq}.{server};user={user} group={group} "
            f"account={account} jobname={jobname} queue=grid ctime=1714644000 "
            f"qtime=1714644000 etime=1714644000 start=1714644060 owner={user}@{server} "
            f"exec_host={exec_host} Resource_List.neednodes={hosts[0]}:ppn=2 "
            f"end=1714726800 Exit_status=0 {user}"
        )
        lines.append(f"05/03/2024 09:00:0{i};D;{seq}.{server};requestor={user}@{hosts[0]}")
        lines.append(f"garbage {user} {hosts[0]}\x00")
    slurm_lines = [
        f"{200 + i}|{200 + i}|c|p|q|{account}|{group}|77|{user}|88|2024-05-02T10:00:00|"
        f"2024-05-02T10:00:00|2024-05-02T10:01:00|2024-05-02T10:11:00|00:10:00|0:0|"
        f"COMPLETED|1|1|1|1Gn|cpu=1|cpu=1|01:00:00|{hosts[0]}|{jobname}"
        for i, user in enumerate(users)
    ]
    originals = {*users, group, account, jobname, *hosts, server}
    with tempfile.TemporaryDirectory() as folder:
        torque = Path(folder, "acct")
        torque.write_text("\n".join(lines) + "\n")
        sacct = Path(folder, "sacct")
        sacct.write_text("\n".join(slurm_lines) + "\nbroken line of " + users[0] + "\n")
        tables = []
        for path, fmt in ((torque, "torque"), (sacct, "slurm")):
            result = parse_logs(path, format=fmt, tz="UTC", errors="skip", anonymize=KEY)
            assert result.lines_read == result.lines_parsed + result.lines_quarantined
            assert result.jobs.num_rows == len(users)
            tables += [result.records, result.jobs, result.quarantine]
            tables.append(anonymize_table(build_trace(result.jobs, cores=8), KEY))
    assert not _leaks(tables, originals)


# ---------------------------------------------------------------------------- keys and CLI


def test_key_file_loses_one_trailing_newline(tmp_path: Path) -> None:
    assert read_key_file(_write(tmp_path, "k", KEY + b"\n")) == KEY
    assert read_key_file(_write(tmp_path, "k2", KEY + b"\r\n")) == KEY
    with pytest.raises(ConfigError, match="empty"):
        read_key_file(_write(tmp_path, "k3", b"\n"))


def test_key_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GT_TEST_KEY", KEY.decode())
    assert key_from_env("GT_TEST_KEY") == KEY
    monkeypatch.setenv("GT_TEST_KEY", "")
    with pytest.raises(ConfigError, match="GT_TEST_KEY"):
        key_from_env("GT_TEST_KEY")


def test_parse_logs_refuses_an_empty_key_before_reading(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="empty"):
        parse_logs(tmp_path / "missing", anonymize=b"")


def test_cli_parse_and_anonymize_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = _write(tmp_path, "acct", TORQUE)
    key_file = _write(tmp_path, "key", KEY + b"\n")
    common = ["--no-progress", "--errors", "skip"]
    assert main(["-q", "parse", str(log), "-o", str(tmp_path / "plain"), *common]) == 0
    assert (
        main(
            [
                "-q",
                "parse",
                str(log),
                "-o",
                str(tmp_path / "anon"),
                "--anonymize-key-file",
                str(key_file),
                *common,
            ]
        )
        == 0
    )
    monkeypatch.setenv("GT_TEST_KEY", KEY.decode())
    plain = tmp_path / "plain"
    tables = [str(plain / f"{name}.parquet") for name in ("jobs", "records", "quarantine")]
    assert (
        main(["anonymize", *tables, "-o", str(tmp_path / "later"), "--key-env", "GT_TEST_KEY"]) == 0
    )
    for name in ("jobs", "records", "quarantine"):
        at_parse = pq.read_table(tmp_path / "anon" / f"{name}.parquet")
        later = pq.read_table(tmp_path / "later" / f"{name}.parquet")
        assert later.equals(at_parse), name
    jobs = pq.read_table(tmp_path / "anon" / "jobs.parquet")
    assert jobs.column("vo").to_pylist()[0] == pseudonym("atlas", "group", KEY)
    assert not _leaks(
        [
            pq.read_table(tmp_path / "anon" / f"{n}.parquet")
            for n in ("jobs", "records", "quarantine")
        ],
        {"alice", "bob", "r3i1n9", "ui01", "pbs01"},
    )


def test_cli_anonymize_pseudonymise_vo_and_kinds(tmp_path: Path) -> None:
    path = tmp_path / "trace.parquet"
    pq.write_table(_trace(["alice"], ["atlas"]), path)
    key_file = _write(tmp_path, "key", KEY)
    args = ["anonymize", str(path), "-o", str(tmp_path / "out"), "--key-file", str(key_file)]
    assert main([*args, "--kinds", "host", "--pseudonymise-vo"]) == 0
    out = pq.read_table(tmp_path / "out" / "trace.parquet")
    assert out.column("user").to_pylist() == ["alice"]  # not among the kinds asked
    assert out.column("vo").to_pylist() == [pseudonym("atlas", "vo", KEY)]


@pytest.mark.parametrize(
    "extra",
    [
        [],  # no key at all
        ["--key-file", "KEYFILE", "--key-env", "GT_TEST_KEY"],  # two keys
        ["--key-file", "EMPTY"],
        ["--key-env", "GT_UNSET_VARIABLE_FOR_TEST"],
        ["--key-file", "KEYFILE", "--kinds", "user,email"],
    ],
)
def test_cli_anonymize_refuses_bad_keys_and_kinds(
    tmp_path: Path, extra: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "trace.parquet"
    pq.write_table(_trace(["alice"]), path)
    files = {"KEYFILE": _write(tmp_path, "key", KEY), "EMPTY": _write(tmp_path, "empty", b"")}
    extra = [str(files.get(arg, arg)) for arg in extra]
    assert main(["anonymize", str(path), "-o", str(tmp_path / "out"), *extra]) == 2
    assert not (tmp_path / "out" / "trace.parquet").exists()


def test_cli_anonymize_refuses_to_overwrite_its_input(tmp_path: Path) -> None:
    path = tmp_path / "trace.parquet"
    pq.write_table(_trace(["alice"]), path)
    key = _write(tmp_path, "key", KEY)
    assert main(["anonymize", str(path), "-o", str(tmp_path), "--key-file", str(key)]) == 2
    assert pq.read_table(path).column("user").to_pylist() == ["alice"]


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("relative", "options"),
    [
        ("torque/vsc-kuleuven-2016-06", {}),
        ("torque/ncar-laramie-pbspro-20180212", {}),
        ("other/slurm/xdmod-phillips-sacct.log.gz", {"format": "slurm", "tz": "UTC"}),
    ],
)
def test_real_logs_keep_no_user_group_or_host_name(
    real_data: Path, relative: str, options: dict[str, Any]
) -> None:
    plain = parse_logs(real_data / relative, errors="skip", **options)
    result = anonymize_result(plain, KEY)
    assert result.lines_read == result.lines_parsed + result.lines_quarantined
    assert result.jobs.num_rows == plain.jobs.num_rows
    public = set(plain.jobs.column("queue").to_pylist())  # queues are kept; skip names like them
    names: set[str] = set()
    for column in ("user", "group", "account"):
        names.update(v for v in plain.jobs.column(column).to_pylist() if v)
    for hosts in plain.jobs.column("exec_hosts").to_pylist():
        names.update(hosts or ())
    names = {n for n in names if len(n) >= 5 and n not in public}
    assert len(names) > 10
    assert not _leaks([result.jobs, result.records, result.quarantine], names)
    users = plain.jobs.column("user").to_pylist()
    anonymous = result.jobs.column("user").to_pylist()
    assert len(set(anonymous)) == len(set(users))
    assert all(a == pseudonym(u, "user", KEY) for u, a in zip(users, anonymous, strict=True) if u)


# ---------------------------------------------------------------------------- SGE, LSF, HTCondor


def _names_of(plain: Any) -> set[str]:
    """User, group, account, job and host names of a result's jobs (5 characters or more)."""
    names: set[str] = set()
    for column in ("user", "group", "account", "job_name"):
        names.update(v for v in plain.jobs.column(column).to_pylist() if v)
    for hosts in plain.jobs.column("exec_hosts").to_pylist():
        names.update(hosts or ())
    public = set(plain.jobs.column("queue").to_pylist())  # queues are kept
    return {n for n in names if len(n) >= 5 and n not in public}


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("relative", "log_format", "expected"),
    [
        ("other/sge/ucsf-wynton-sge-8.1.9-accounting", "sge", {"owner09", "cc-id2", "project4"}),
        ("other/sge/xdmod-shredder-sge-fixture.log", "sge", set()),
        ("other/sge/xdmod-shredder-uge-fixture.log", "sge", set()),
        (
            "other/lsf/xdmod-shredder-lsf-fixture.log",
            "lsf",
            {"anonuser", "anonproject", "host1201-ib", "hostlogin4-ib", "abcde0040"},
        ),
    ],
)
def test_real_sge_and_lsf_logs_keep_no_name(
    real_data: Path, relative: str, log_format: str, expected: set[str]
) -> None:
    plain = parse_logs(real_data / relative, format=log_format, errors="skip")
    result = anonymize_result(plain, KEY)
    assert result.lines_read == result.lines_parsed + result.lines_quarantined
    assert result.jobs.num_rows == plain.jobs.num_rows > 0
    names = _names_of(plain) | expected
    assert _leaks([plain.records, plain.jobs], names) == names  # they were there
    assert not _leaks([result.records, result.jobs], names)
    users = plain.jobs.column("user").to_pylist()
    anonymous = result.jobs.column("user").to_pylist()
    assert all(a == pseudonym(u, "user", KEY) for u, a in zip(users, anonymous, strict=True) if u)


@pytest.mark.realdata
def test_lsf_host_lists_are_pseudonymised_entry_by_entry(real_data: Path) -> None:
    path = real_data / "other/lsf/xdmod-shredder-lsf-fixture.log"
    result = parse_logs(path, format="lsf", anonymize=KEY)
    attrs = dict(result.records.column("attrs")[0].as_py())
    assert json.loads(attrs["execHosts"])[0] == "16*" + pseudonym("host1201-ib", "host", KEY)
    assert attrs["userName"] == pseudonym("anonuser", "user", KEY)
    assert attrs["fromHost"] == pseudonym("hostlogin4-ib", "host", KEY)
    assert attrs["queue"] == "regular"
    assert "cwd" not in attrs
    assert "command" not in attrs
    assert attrs["eventTime"] == "1389683139"


HTCONDOR_ADS = (
    b'{"ClusterId": 1234, "ProcId": 0, "GlobalJobId": "ce01.example.org#1234.0#1700000000", '
    b'"Owner": "alice", "User": "alice@example.org", "AccountingGroup": '
    b'"group_atlas.prod.alice", "AcctGroupUser": "alice", "JobBatchName": "sim-batch", '
    b'"Cmd": "/home/alice/run.sh", "Iwd": "/home/alice/work", "Args": "--user alice", '
    b'"x509userproxysubject": "/DC=org/CN=Alice Example", "QDate": 1700000000, '
    b'"JobCurrentStartDate": 1700000100, "CompletionDate": 1700003700, "JobStatus": 4, '
    b'"ExitCode": 0, "ExitBySignal": false, "RequestCpus": 8, '
    b'"RemoteHost": "slot1_3@wn042.example.org", "LastRemoteHost": "slot1_3@wn042.example.org"}\n'
    b'{"ClusterId": 1235, "ProcId": 1, "Owner": "bob", "QDate": 1700000000, "JobStatus": 3, '
    b'"AcctGroup": "cms", "LastRemoteHost": "slot2@wn043.example.org"}\n'
)


def test_htcondor_records_and_jobs_keep_no_name(tmp_path: Path) -> None:
    path = _write(tmp_path, "history.jsonl", HTCONDOR_ADS)
    plain = parse_logs(path, format="htcondor")
    result = parse_logs(path, format="htcondor", anonymize=KEY)
    names = {"alice", "bob", "Alice", "wn042", "wn043", "example.org", "atlas", "sim-batch", "cms"}
    assert _leaks([plain.records, plain.jobs], names) == names
    assert not _leaks([result.records, result.jobs], names)
    first = dict(result.records.column("attrs")[0].as_py())
    assert first["Owner"] == pseudonym("alice", "user", KEY)
    assert first["LastRemoteHost"] == "slot1_3@" + pseudonym("wn042.example.org", "host", KEY)
    assert first["GlobalJobId"] == pseudonym("ce01.example.org", "host", KEY) + "#1234.0#1700000000"
    assert (first["QDate"], first["ExitBySignal"], first["RequestCpus"]) == (
        "1700000000",
        "false",
        "8",
    )
    assert not {"Iwd", "Args", "x509userproxysubject"} & set(first)
    assert result.jobs.column("user").to_pylist() == [
        pseudonym("alice", "user", KEY),
        pseudonym("bob", "user", KEY),
    ]
    assert result.jobs.column("exec_hosts").to_pylist() == [
        [pseudonym("wn042.example.org", "host", KEY)],
        [pseudonym("wn043.example.org", "host", KEY)],
    ]
