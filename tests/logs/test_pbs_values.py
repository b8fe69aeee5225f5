"""The TORQUE / PBS value parsers: durations, sizes, exec_host, exec_vnode, nodes and select."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gridtrace.logs._pbs_values import (
    MEMORY_UNITS,
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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3600", (3600, None)),  # TORQUE >= 5.1.2 writes seconds (parsers.md §9.11)
        ("01:00:00", (3600, None)),
        ("2:00:00:00", (172800, None)),  # four parts: days first
        ("1+02:00:00", (93600, None)),
        ("05:30", (330, None)),  # MM:SS
        ("19:23:4", (69784, None)),  # single-digit seconds, RAL Tier-1 (apel test_pbs.py)
        ("96:00:00", (345600, None)),
        ("00:00:01.50", (1, None)),  # fractions dropped
        ("1:02:03:04", (93784, None)),  # pbsacct reads 93783
        ("-342359:-42:-21", (None, "negative")),
        ("-1", (None, "negative")),
        ("", (None, "unreadable")),
        ("abc", (None, "unreadable")),
        ("1:2:3:4:5", (None, "unreadable")),
        ("1+02:00", (None, "unreadable")),
        ("01::00", (None, "unreadable")),
    ],
)
def test_parse_duration(text: str, expected: tuple[int | None, str | None]) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("15240kb", (15_605_760, None)),
        ("1993mb", (2_089_811_968, None)),
        ("4gb", (4_294_967_296, None)),
        ("4GB", (4_294_967_296, None)),  # case-insensitive
        ("1tb", (1024**4, None)),
        ("2kw", (16_384, None)),  # words are 8 bytes
        ("3w", (24, None)),
        ("1024b", (1024, None)),
        ("12.27M", (12_866_027, "nonstandard")),  # floor(12.27 * 2**20)
        ("295.56M", (309_917_122, "nonstandard")),
        ("4G", (4_294_967_296, "nonstandard")),
        ("1.5gb", (1_610_612_736, "nonstandard")),
        ("1024", (1024, "guessed")),
        ("0", (0, None)),  # zero needs no unit
        ("lots", (None, "unreadable")),
        ("-5kb", (None, "unreadable")),
        ("", (None, "unreadable")),
    ],
)
def test_parse_memory(text: str, expected: tuple[int | None, str | None]) -> None:
    assert parse_memory(text) == expected


def test_parse_memory_unitless_unit_is_configurable() -> None:
    assert parse_memory("1024", "kb") == (1024 * 1024, "guessed")
    assert parse_memory("2", "w") == (16, "guessed")
    assert {"b", "kb", "mb", "gb", "tb", "w", "kw", "mw", "gw", "tw"} <= MEMORY_UNITS


@given(st.integers(min_value=0, max_value=10**9), st.sampled_from(sorted(MEMORY_UNITS)))
def test_parse_memory_integer_units_round_trip(number: int, unit: str) -> None:
    power = "bkmgtp".index(unit[0]) if len(unit) == 2 else 0
    factor = 1024**power * (8 if unit.endswith("w") else 1)
    assert parse_memory(f"{number}{unit}") == (number * factor, None)
    assert parse_memory(f"{number}{unit.upper()}") == (number * factor, None)


@pytest.mark.parametrize(
    ("text", "hosts", "cores"),
    [
        ("n1/0-3+n2/0-3", ("n1", "n2"), 8),  # §9.8
        ("b391/0-1,5,11", ("b391",), 4),
        ("i02n33/7+i02n33/6+i02n32/7+i02n32/6", ("i02n33", "i02n32"), 4),
        (
            "r5i1n6/0-19+r5i1n7/0-19+r5i1n9/0-19+r5i1n10/0-19",
            ("r5i1n6", "r5i1n7", "r5i1n9", "r5i1n10"),
            80,
        ),
        ("c1/0*13+c2/0*13", ("c1", "c2"), 26),  # PBS Pro counts
        ("c1/0-3+c2/0-7", ("c1", "c2"), 12),  # xdmod fixture, 2995.pbs
        ("gpu07/0*0", ("gpu07",), 0),  # PBS Pro: the real count is in exec_vnode
        ("[hostname_2]/0*0", ("[hostname_2]",), 0),
        ("lcg1277.gridpp.rl.ac.uk/5", ("lcg1277.gridpp.rl.ac.uk",), 1),
        ("n1/0-3+n1/2-5", ("n1",), 6),  # overlapping ranges: distinct (host, core) pairs
        ("n1/0+n1/0", ("n1",), 1),
    ],
)
def test_parse_exec_host(text: str, hosts: tuple[str, ...], cores: int) -> None:
    assert parse_exec_host(text) == ExecHost(hosts, cores)


@pytest.mark.parametrize("text", ["n1", "n1/", "/0", "n1/3-1", "n1/a", "n1/0*x", "n1/0++n2/0"])
def test_parse_exec_host_unreadable(text: str) -> None:
    assert parse_exec_host(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "(gpu07[1]:ncpus=24:ngpus=2+gpu07[0]:ncpus=24:ngpus=2)",
            ExecHost(("gpu07",), 48, 4),
        ),
        ("(c1:ncpus=13)+(c2:ncpus=13)", ExecHost(("c1", "c2"), 26, 0)),
        (
            "([hostname_2][1]:mem=190000128kb:ngpus=2:ncpus=24+[hostname_2][0]:ngpus=2:ncpus=24)",
            ExecHost(("[hostname_2]",), 48, 4),
        ),
        ("(r1i0n2:ncpus=12)", ExecHost(("r1i0n2",), 12, 0)),
        ("(n1:ncpus=x)", None),
        ("(:ncpus=1)", None),
    ],
)
def test_parse_exec_vnode(text: str, expected: ExecHost | None) -> None:
    assert parse_exec_vnode(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2:ppn=8", NodeRequest(2, 16, 0)),  # §9.10
        ("2:ppn=4+4:ppn=1", NodeRequest(6, 12, 0)),
        ("n0815:ppn=4", NodeRequest(1, 4, 0)),
        ("1:ppn=28:gpus=1:default", NodeRequest(1, 28, 1)),
        ("1:ivybridge:ppn=20", NodeRequest(1, 20, 0)),  # VSC: feature before ppn
        ("2", NodeRequest(2, 2, 0)),  # no ppn: one core per node
        ("r1i0n2+r1i0n3", NodeRequest(2, 2, 0)),  # host names
        ("1:ppn=24:gpu=4:reqmem=128849018880:gpu", NodeRequest(1, 24, 4)),  # xdmod 10711 nodect
        ("2:ppn=2:gpus=2", NodeRequest(2, 4, 4)),
    ],
)
def test_parse_nodes_spec(text: str, expected: NodeRequest) -> None:
    assert parse_nodes_spec(text) == expected


@pytest.mark.parametrize("text", ["", "1:ppn=x", ":ppn=4", "0:ppn=4", "2:ppn=", "1+", "1:p p"])
def test_parse_nodes_spec_unreadable(text: str) -> None:
    assert parse_nodes_spec(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2:ncpus=8:mem=4gb", NodeRequest(2, 16, 0, 8 * 1024**3)),  # §9.19
        ("5:ncpus=13", NodeRequest(5, 65, 0)),
        ("64:ncpus=36:mpiprocs=2:ompthreads=18", NodeRequest(64, 2304, 0)),
        ("1:mpiprocs=48:ncpus=48:ngpus=4:mem=185547mb", NodeRequest(1, 48, 4, 185547 * 1024**2)),
        ("2:ncpus=12:test=hi girish", NodeRequest(2, 24, 0)),  # NCAR: quoted value with a space
        ("ncpus=4", NodeRequest(1, 4, 0)),
        (
            "1:ncpus=2+2:ncpus=4:mem=1gb",
            NodeRequest(3, 10, 0),
        ),  # memory only when every chunk has it
        ("1:ncpus=1:mem=12.5M", NodeRequest(1, 1, 0, 13_107_200, "nonstandard")),
    ],
)
def test_parse_select(text: str, expected: NodeRequest) -> None:
    assert parse_select(text) == expected


@pytest.mark.parametrize("text", ["x", "2:ncpus=a", "1:mem=lots", "1:flag"])
def test_parse_select_unreadable(text: str) -> None:
    assert parse_select(text) is None


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (0, (None, False)),
        (1, (None, False)),
        (128, (None, False)),
        (137, (9, True)),  # §9.22: shell's 128 + SIGKILL
        (143, (15, True)),
        (256, (None, False)),
        (265, (9, False)),
        (271, (15, False)),  # §9.6
        (-1, (None, False)),
        (-11, (None, False)),
    ],
)
def test_exit_signal(status: int, expected: tuple[int | None, bool]) -> None:
    assert exit_signal(status) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("123[4].pbs01.example.org", (123, 4, False)),
        ("123[].pbs01.example.org", (123, None, True)),
        ("123-4.srv", (123, 4, False)),
        ("20316337.hpc-p-svcs-10.icts.hpc.kuleuven.be", (20316337, None, False)),
        ("7904", (7904, None, False)),
        ("3073070.[hostname_1]", (3073070, None, False)),
        ("license", None),
        ("0000000006db25b0", None),  # VSC 2016-06-17: a pointer logged as the id
    ],
)
def test_parse_job_id(text: str, expected: tuple[int, int | None, bool] | None) -> None:
    assert parse_job_id(text) == expected
