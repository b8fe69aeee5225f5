"""The fast paths of TORQUE job assembly give what the paths they replace give.

* exec_host read with array operations = :func:`gridtrace.logs._pbs_values.parse_exec_host`;
* the attribute maps indexed by the numba kernel (from ``KERNEL_ROWS`` records) = the array path;
* whole assemblies with the fast paths on = with them off, on generated lines and on the real
  VSC month (GRIDTRACE_REAL_DATA/torque).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _torque_jobs, _torque_jobs_fast, expand_log_paths
from gridtrace.logs._pbs_values import parse_exec_host
from gridtrace.logs._torque import tokenize_torque_file
from gridtrace.logs._torque_jobs import _KEYS, NA, TorqueAssembly, assemble_torque_jobs
from gridtrace.logs._torque_lines import tokenize_torque_reference

# --------------------------------------------------------------------------------------------
# exec_host

_HOSTS = st.sampled_from(
    [
        "n1",
        "n2",
        "r1i0n3",
        "gpu-07.cluster",
        "a,b",
        "x*y",
        "n 1",
        "",
        "\xa0n1",
        "n\u20031",
        "\u00e9",
    ]
)
_NUMBER = st.one_of(st.integers(0, 40), st.integers(0, 10**12)).map(str)
_ITEM = st.one_of(
    _NUMBER,
    st.tuples(_NUMBER, _NUMBER).map("-".join),
    st.tuples(_NUMBER, _NUMBER).map("*".join),
    st.sampled_from(["", "-3", "3-", "*2", "1-2-3", "\u0663", " 4"]),
)
_CHUNK = st.tuples(_HOSTS, st.lists(_ITEM, min_size=1, max_size=4).map(",".join)).map("/".join)
_EXEC_HOST = st.one_of(
    st.lists(_CHUNK, min_size=1, max_size=6).map("+".join),
    st.text(alphabet="n1/-,*+ 0", max_size=12),
)


def _parsed(text: pa.Array) -> dict[int, tuple[tuple[str, ...], int]]:
    """What the array path reads: row -> (hosts, cores), for the rows it reads."""
    rows, names, cores, done = _torque_jobs._fast_exec_hosts(text)
    out: dict[int, tuple[tuple[str, ...], int]] = {}
    for row in np.flatnonzero(done).tolist():
        hosts = tuple(names.filter(pa.array(rows == row)).to_pylist())
        out[row] = (hosts, int(cores[row]))
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), _EXEC_HOST), min_size=1, max_size=8))
def test_exec_host_array_path_reads_what_the_parser_reads(values: list[str | None]) -> None:
    read = _parsed(pa.array(values, pa.string()))
    for row, text in enumerate(values):
        if row not in read:
            continue  # left to the parser
        assert text is not None
        expected = parse_exec_host(text)
        assert expected is not None, text
        assert read[row] == (expected.hosts, expected.cores), text


def test_exec_host_array_path_reads_the_common_forms() -> None:
    values = [
        "n1/0-3",
        "n1/3+n1/2+n1/1+n1/0+n2/0",
        "b391/0-1,5,11",
        "c1/0*13+c2/0*13",
        "n1/0-3+n1/2-5",
        None,
    ]
    read = _parsed(pa.array(values, pa.string()))
    assert read == {
        0: (("n1",), 4),
        1: (("n1", "n2"), 5),
        2: (("b391",), 4),
        3: (("c1", "c2"), 26),
        4: (("n1",), 6),
    }


@pytest.mark.skipif(not _torque_jobs_fast.HAVE_NUMBA, reason="numba is not installed")
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), _EXEC_HOST), min_size=1, max_size=8))
def test_exec_host_kernel_reads_what_the_array_path_reads(values: list[str | None]) -> None:
    text = pa.array(values, pa.string())
    rows, names, cores, done = _torque_jobs._fast_exec_hosts(text)
    found = _torque_jobs_fast.exec_hosts(text)
    assert found is not None
    k_rows, k_names, k_cores, k_done = found
    np.testing.assert_array_equal(k_done, done)
    np.testing.assert_array_equal(np.where(k_done, k_cores, NA), cores)
    np.testing.assert_array_equal(k_rows, rows)
    assert k_names.to_pylist() == names.to_pylist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), _EXEC_HOST), min_size=1, max_size=8), st.booleans())
def test_exec_host_reads_the_chains_as_before(values: list[str | None], kernel: bool) -> None:
    """Every chain the old path read (hosts as logged) is read the same; the rest as parsed."""
    text = pa.array(values, pa.string())
    with kernel_from(0 if kernel else 10**12):
        rows, names, cores, done = _torque_jobs._simple_exec_hosts(text)
    old_rows, old_names, old_cores, old_done = _torque_jobs._chains(text)
    assert not (old_done & ~done).any()
    for row in np.flatnonzero(done).tolist():
        hosts = tuple(names.filter(pa.array(rows == row)).to_pylist())
        if old_done[row]:
            expected = tuple(old_names.filter(pa.array(old_rows == row)).to_pylist())
            assert (hosts, cores[row]) == (expected, old_cores[row])
        else:
            parsed = parse_exec_host(values[row] or "")
            assert parsed is not None
            assert (hosts, cores[row]) == (parsed.hosts, parsed.cores)


# --------------------------------------------------------------------------------------------
# the attribute index


@contextmanager
def kernel_from(rows: int) -> Iterator[None]:
    """Use the kernels from ``rows`` records (and exec_host values)."""
    saved = _torque_jobs_fast.KERNEL_ROWS, _torque_jobs_fast.EXEC_HOST_KERNEL_ROWS
    _torque_jobs_fast.KERNEL_ROWS = _torque_jobs_fast.EXEC_HOST_KERNEL_ROWS = rows
    try:
        yield
    finally:
        _torque_jobs_fast.KERNEL_ROWS, _torque_jobs_fast.EXEC_HOST_KERNEL_ROWS = saved


_KEY = st.sampled_from([*_KEYS[:12], "Resource_List.nodes", "session", "Resource_List.vm", "x"])
_ENTRY = st.tuples(_KEY, st.sampled_from(["", "1", "abc", "n1/0-3", "\u00e9t\u00e9"]))
_MAPS = st.lists(st.lists(_ENTRY, max_size=6), min_size=1, max_size=12)


@pytest.mark.skipif(not _torque_jobs_fast.HAVE_NUMBA, reason="numba is not installed")
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_MAPS, st.data())
def test_kernel_indexes_the_maps_as_the_array_path(
    maps: list[list[tuple[str, str]]], data: st.DataObject
) -> None:
    map_type = pa.map_(pa.string(), pa.string())
    cut = data.draw(st.integers(0, len(maps)))
    chunks = [pa.array(maps[:cut], map_type), pa.array(maps[cut:], map_type)]
    column = pa.chunked_array(chunks, map_type)
    drop_last = np.array(data.draw(st.lists(st.booleans(), min_size=len(maps))), dtype=bool)
    drop_last = drop_last[: len(maps)]
    with kernel_from(0):
        fast = _torque_jobs._Attrs.extract(column, _KEYS, drop_last=drop_last)
    with kernel_from(10**12):
        slow = _torque_jobs._Attrs.extract(column, _KEYS, drop_last=drop_last)
    assert fast.values.equals(slow.values)
    assert fast.index.keys() == slow.index.keys()
    for key, positions in slow.index.items():
        np.testing.assert_array_equal(fast.index[key], positions, err_msg=key)


# --------------------------------------------------------------------------------------------
# whole assemblies


@contextmanager
def slow_paths() -> Iterator[None]:
    """The paths the fast ones replace: no kernel, exec_host by the parser beyond the simple."""
    with kernel_from(10**12):
        _torque_jobs._EXEC_HOST_FAST = False
        try:
            yield
        finally:
            _torque_jobs._EXEC_HOST_FAST = True


def assert_same(fast: TorqueAssembly, slow: TorqueAssembly) -> None:
    assert fast.jobs.equals(slow.jobs)
    assert fast.records.equals(slow.records)
    assert fast.info == slow.info
    assert fast.tz_offset_s == slow.tz_offset_s
    np.testing.assert_array_equal(fast.job_first_rows, slow.job_first_rows)


_HOST_VALUES = st.sampled_from(
    [
        *("n1/0-3", "n1/3+n1/2+n1/1+n1/0", "n2/0-1,5,11", "c1/0*4+c2/0*4", "n1/5-2", "n1/0+n1/0"),
        *('"\u00a0n1/0+n1/1"', '"\u00a0n1/0"', "\u00e9t\u00e9/0-1+n1/0,1"),
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(_HOST_VALUES, st.sampled_from("SEQDR"), st.booleans()), max_size=10),
    st.booleans(),
)
def test_assembly_with_fast_paths_is_the_same(
    jobs: list[tuple[str, str, bool]], cut_last: bool
) -> None:
    lines = []
    for i, (host, kind, empty_user) in enumerate(jobs):
        stamp = f"05/03/2024 10:{i:02d}:00"
        user = "user= " if empty_user else "user=u "
        lines.append(
            f"{stamp};{kind};{i % 4}.p;{user}ctime=1714723200 start=1714723300 "
            f"exec_host={host} end=1714724000 Exit_status=0 Resource_List.nodes=1:ppn=4"
        )
    data = "".join(f"{line}\n" for line in lines).encode()
    if cut_last and data:
        data = data[: -len(b"Exit_status=0 Resource_List.nodes=1:ppn=4\n") + 3]
    records = tokenize_torque_reference(data, src_file="20240503", site="s").records
    with kernel_from(0):
        fast = assemble_torque_jobs(records)
    with slow_paths():
        slow = assemble_torque_jobs(records)
    assert_same(fast, slow)


@pytest.mark.realdata
@pytest.mark.slow
def test_real_vsc_month_same_with_fast_paths(real_data: Path) -> None:
    folder = real_data / "torque" / "vsc-kuleuven-2016-06"
    if not folder.exists():
        pytest.skip(f"{folder} is missing")
    parts = [tokenize_torque_file(f, site="vsc") for f in expand_log_paths(folder)]
    records = pa.concat_tables([p.records for p in parts])
    assert records.num_rows >= 1000
    for tz in (None, "Europe/Brussels"):
        with kernel_from(0):
            fast = assemble_torque_jobs(records, tz=tz)
        with slow_paths():
            slow = assemble_torque_jobs(records, tz=tz)
        assert_same(fast, slow)
        assert fast.jobs.num_rows > 0
        assert (fast.jobs.column("cores_alloc").to_numpy(zero_copy_only=False) != NA).any()


# --------------------------------------------------------------------------------------------
# carrying offsets along files: segments in order take no sort


def _fill_reference(values: list[float], segment: list[int], forward: bool) -> list[float]:
    out = [float("nan")] * len(values)
    rows = range(len(values)) if forward else range(len(values) - 1, -1, -1)
    last: dict[int, float] = {}
    for row in rows:
        if not np.isnan(values[row]):
            last[segment[row]] = values[row]
        out[row] = last.get(segment[row], float("nan"))
    return out


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.one_of(st.just(float("nan")), st.integers(-5, 5)), st.integers(0, 3))),
    st.booleans(),
)
def test_segment_fills_match_a_reference(rows: list[tuple[float, int]], in_order: bool) -> None:
    from gridtrace.logs._groups import segment_bfill, segment_ffill

    if in_order:
        rows = sorted(rows, key=lambda row: row[1])
    values = [float(v) for v, _ in rows]
    segment = [s for _, s in rows]
    array, codes = np.array(values, dtype=np.float64), np.array(segment, dtype=np.int64)
    np.testing.assert_array_equal(
        segment_ffill(array, codes), _fill_reference(values, segment, forward=True)
    )
    np.testing.assert_array_equal(
        segment_bfill(array, codes), _fill_reference(values, segment, forward=False)
    )
