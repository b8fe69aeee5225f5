"""PBS/TORQUE values out of range: a count beyond int32 in a node spec, a select, exec_host or
exec_vnode costs that value (unreadable, flagged by the TORQUE reader), never the read.

Before, ``Resource_List.nodes=99999999999:ppn=4``, ``exec_host=c1/0*99999999999`` and the like
failed the whole TORQUE read in an int32 cast, and ``exec_host=c1/0-3000000000,5`` enumerated
three billion indices. The parsers are tested alone, then through the TORQUE reader, then by
properties (a hypothesis round trip through the TORQUE writer for values within the columns).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import read_torque, write_torque
from gridtrace.logs._pbs_values import (
    ExecHost,
    NodeRequest,
    exit_signal,
    parse_duration,
    parse_exec_host,
    parse_exec_vnode,
    parse_job_id,
    parse_memory,
    parse_nodes_spec,
    parse_select,
)
from gridtrace.schema import conform

from .test_torque_writer import ROUND_TRIP, _sorted, job_specs

INT32 = 2**31 - 1
INT64 = 2**63 - 1

# ------------------------------------------------------------------ the parsers


@pytest.mark.parametrize(
    "text",
    [
        "99999999999:ppn=4",
        "1:ppn=99999999999",
        "3000000000",
        "2:ppn=6:gpus=99999999999",
        "65536:ppn=32768",  # each fits int32, the product does not
    ],
)
def test_a_node_spec_beyond_int32_is_unreadable(text: str) -> None:
    assert parse_nodes_spec(text) is None


def test_a_node_spec_at_the_int32_edge_is_read() -> None:
    assert parse_nodes_spec(f"1:ppn={INT32}") == NodeRequest(1, INT32, 0)
    assert parse_nodes_spec("007:ppn=04") == NodeRequest(7, 28, 0)


@pytest.mark.parametrize(
    "text",
    [
        "99999999999:ncpus=4",
        f"2:ncpus={INT32}",
        "1:ngpus=99999999999",
        "2:ncpus=8:mem=9999999999999999tb",  # the memory sum is beyond int64
    ],
)
def test_a_select_beyond_its_columns_is_unreadable(text: str) -> None:
    assert parse_select(text) is None


def test_a_select_within_its_columns_is_read() -> None:
    assert parse_select(f"1:ncpus={INT32}:mem=4gb") == NodeRequest(1, INT32, 0, 4 * 2**30)


@pytest.mark.parametrize(
    "text",
    [
        "c1/0-99999999999",
        "c1/0*99999999999",
        f"c1/0*{INT32}+c2/0",
        "c1/0-3000000000,5",  # enumerated three billion indices before
        "c1/0-2147483647,0-5+c2/1",
    ],
)
def test_exec_host_beyond_int32_cores_is_unreadable(text: str) -> None:
    assert parse_exec_host(text) is None


@pytest.mark.parametrize(
    ("text", "cores"),
    [
        ("c1/0-3,2-5+c2/0", 7),  # overlapping ranges count each index once
        ("c1/5,0-9,3-4,9", 10),
        ("c1/0-2147483646,0", INT32),
        ("c1/7+c1/7", 1),
        ("c1/0*13+c2/0*13", 26),
    ],
)
def test_exec_host_counts_distinct_indices_without_enumerating(text: str, cores: int) -> None:
    result = parse_exec_host(text)
    assert result is not None
    assert result.cores == cores


@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20)), min_size=1, max_size=8))
def test_exec_host_interval_count_equals_the_set_count(ranges: list[tuple[int, int]]) -> None:
    text = "h/" + ",".join(f"{low}-{low + width}" for low, width in ranges) + "+g/0"
    expected = len({i for low, width in ranges for i in range(low, low + width + 1)}) + 1
    assert parse_exec_host(text) == ExecHost(("h", "g"), expected)


@pytest.mark.parametrize(
    "text", ["(c1:ncpus=99999999999)", "(c1:ncpus=2147483647+c2:ncpus=1)", "(g:ngpus=3000000000)"]
)
def test_exec_vnode_beyond_int32_is_unreadable(text: str) -> None:
    assert parse_exec_vnode(text) is None


@pytest.mark.parametrize("status", [2**31, -(2**31) - 1, 99999999999, 2**63])
def test_an_exit_status_beyond_int32_has_no_signal(status: int) -> None:
    assert exit_signal(status) == (None, False)


def test_exit_signals_within_int32_are_unchanged() -> None:
    assert exit_signal(INT32) == (INT32 - 256, False)
    assert exit_signal(-(2**31)) == (None, False)
    assert exit_signal(137) == (9, True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("99999999999999999999.srv", None),
        (f"{INT64}.srv", (INT64, None, False)),
        ("5[3000000000].srv", None),
        ("5-3000000000.srv", None),
        (f"5[{INT32}].srv", (5, INT32, False)),
        ("007.srv", (7, None, False)),
    ],
)
def test_job_ids_beyond_their_columns(text: str, expected: Any) -> None:
    assert parse_job_id(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("99999999999999999999:00:00", 99999999999999999999 * 3600),  # exact; the caller nulls it
        ("9999999999999:00:00", 9999999999999 * 3600),
        ("-01:00:00", None),
        ("1e308", None),
        ("+5", None),
    ],
)
def test_durations_are_exact_or_none(text: str, expected: int | None) -> None:
    assert parse_duration(text)[0] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("-5gb", None),
        ("0x1Fkb", None),
        ("inf", None),
        (" 007kb ", 7 * 1024),
    ],
)
def test_sizes_are_exact_or_none(text: str, expected: int | None) -> None:
    assert parse_memory(text)[0] == expected


def test_a_size_beyond_int64_is_left_to_the_caller_to_null() -> None:
    size, problem = parse_memory("99999999999999999tb")
    assert size is not None
    assert size > INT64
    assert problem is None


# ------------------------------------------------------------------ through the TORQUE reader

BASE = {
    "user": "u",
    "group": "g",
    "queue": "q",
    "ctime": "1453756297",
    "qtime": "1453756297",
    "etime": "1453756297",
    "start": "1453766281",
    "exec_host": "c1/0-3+c2/0-7",
    "Resource_List.nodect": "2",
    "Resource_List.nodes": "2:ppn=6",
    "Resource_List.walltime": "00:02:43",
    "Resource_List.mem": "4gb",
    "end": "1453766437",
    "Exit_status": "0",
    "resources_used.mem": "664kb",
    "resources_used.walltime": "00:02:36",
}


def _torque(tmp_path: Path, **changes: str) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """Read a job with damaged attributes and a clean one; return both jobs and the result."""
    damaged = {**BASE, **changes}
    lines = [
        "01/26/2016 00:00:37;E;2995.pbs;" + " ".join(f"{k}={v}" for k, v in damaged.items()),
        "01/26/2016 00:00:37;E;2996.pbs;" + " ".join(f"{k}={v}" for k, v in BASE.items()),
    ]
    path = tmp_path / "20160126"
    path.write_text("\n".join(lines) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = read_torque(path, errors="skip")
    assert result.lines_read == result.lines_parsed + result.lines_quarantined == 2
    rows = {r["job_id_raw"]: r for r in result.jobs.to_pylist()}
    return rows["2995.pbs"], rows["2996.pbs"], result


@pytest.mark.parametrize(
    ("key", "value", "column", "flag"),
    [
        ("Resource_List.nodes", "99999999999:ppn=4", "cores_req", "NODESPEC_UNPARSED"),
        ("Resource_List.nodes", "1:ppn=99999999999", "cores_req", "NODESPEC_UNPARSED"),
        ("Resource_List.nodes", "3000000000", "nodes_req", "NODESPEC_UNPARSED"),
        ("Resource_List.nodes", "2:ppn=6:gpus=99999999999", "gpus_req", "NODESPEC_UNPARSED"),
        ("Resource_List.select", "99999999999:ncpus=4", None, "NODESPEC_UNPARSED"),
        ("exec_host", "c1/0-99999999999", "cores_alloc", "VALUE_UNREADABLE:exec_host"),
        ("exec_host", "c1/0*99999999999", "cores_alloc", "VALUE_UNREADABLE:exec_host"),
        ("exec_host", "c1/0-3000000000,5", "cores_alloc", "VALUE_UNREADABLE:exec_host"),
        ("exec_vnode", "(c1:ncpus=99999999999)", None, "VALUE_UNREADABLE:exec_vnode"),
        ("Resource_List.mem", "99999999999999999tb", "mem_req_bytes", None),
        ("Resource_List.walltime", "99999999999999999999:00:00", "walltime_req_s", None),
    ],
)
def test_torque_counts_beyond_their_columns_cost_the_value(
    tmp_path: Path, key: str, value: str, column: str | None, flag: str | None
) -> None:
    job, other, _ = _torque(tmp_path, **{key: value})
    flag = flag or f"VALUE_UNREADABLE:{key}"
    assert flag in job["flags"]
    if column in ("mem_req_bytes", "walltime_req_s", "cores_alloc"):
        assert job[column] is None
    for name in ("nodes_req", "cores_req", "gpus_req", "nodes_alloc", "cores_alloc"):
        assert job[name] is None or 0 <= job[name] <= INT32
    assert job["end_time"] == other["end_time"]  # the rest of the job is kept
    assert job["exit_code"] == 0
    assert other["flags"] in (None, [])


@pytest.mark.parametrize(
    ("key", "column"),
    [
        ("Exit_status", "exit_code"),
        ("Resource_List.ncpus", "cores_req"),
        ("Resource_List.nodect", "nodes_req"),
        ("Resource_List.ngpus", "gpus_req"),
        ("total_execution_slots", "cores_alloc"),
        ("resources_used.ncpus", "cores_alloc"),
        ("unique_node_count", "nodes_alloc"),
    ],
)
def test_torque_plain_counts_beyond_int32_cost_the_value(
    tmp_path: Path, key: str, column: str
) -> None:
    changes = {key: "99999999999", "exec_host": "", "Resource_List.nodes": ""}
    damaged = {k: v for k, v in {**BASE, **changes}.items() if v}
    line = "01/26/2016 00:00:37;E;2995.pbs;" + " ".join(f"{k}={v}" for k, v in damaged.items())
    path = tmp_path / "20160126"
    path.write_text(line + "\n")
    (job,) = read_torque(path, errors="skip").jobs.to_pylist()
    assert job[column] is None
    assert f"VALUE_UNREADABLE:{key}" in job["flags"]


def test_torque_stamps_beyond_the_year_9999_cost_the_value(tmp_path: Path) -> None:
    job, _, _ = _torque(tmp_path, ctime="999999999999")
    assert job["submit_time"] is None
    assert "VALUE_UNREADABLE:ctime" in job["flags"]


# ------------------------------------------------------------------ properties

_counts = st.one_of(
    st.integers(0, 64),
    st.integers(0, 2**40),
    st.sampled_from([INT32, INT32 + 1, 2**32, 99999999999]),
)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nodes=_counts, ppn=_counts, low=_counts, width=_counts, ncpus=_counts)
def test_any_counts_cost_the_value_never_the_read(
    tmp_path: Path, nodes: int, ppn: int, low: int, width: int, ncpus: int
) -> None:
    job, _, _ = _torque(
        tmp_path,
        **{
            "Resource_List.nodes": f"{nodes}:ppn={ppn}",
            "exec_host": f"c1/{low}-{low + width},0+c2/0*{ncpus}",
        },
    )
    spec = parse_nodes_spec(f"{nodes}:ppn={ppn}")
    host = parse_exec_host(f"c1/{low}-{low + width},0+c2/0*{ncpus}")
    if spec is None:
        assert "NODESPEC_UNPARSED" in job["flags"]
    if host is None:
        assert "VALUE_UNREADABLE:exec_host" in job["flags"]
    else:
        assert host.cores <= INT32
    for column in ("nodes_req", "cores_req", "cores_alloc", "nodes_alloc"):
        assert job[column] is None or 0 <= job[column] <= INT32


@st.composite
def _edge_jobs(draw: st.DrawFn) -> pa.Table:
    seqs = draw(st.lists(st.integers(1, 10**7), min_size=1, max_size=5, unique=True))
    rows = []
    for seq in seqs:
        row = draw(job_specs(seq))
        row["mem_req_bytes"] = draw(st.sampled_from([1, 2**40, 2**50, 2**61, 2**62 - 1024]))
        row["walltime_req_s"] = draw(st.sampled_from([60, 10**9, 10**12, 2**40]))
        rows.append(row)
    return conform(pa.Table.from_pylist(rows), "jobs")


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(jobs=_edge_jobs())
def test_sizes_and_durations_near_the_columns_edge_round_trip(
    jobs: pa.Table, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("edge")
    write_torque(jobs, folder)
    parsed = read_torque(folder, site="rt", errors="raise")
    assert parsed.lines_read == parsed.lines_parsed
    assert _sorted(parsed.jobs).select(ROUND_TRIP).equals(_sorted(jobs).select(ROUND_TRIP))
