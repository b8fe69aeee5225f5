"""TORQUE job assembly with its kernels gives the tables of the reference (array) path.

* numbers read in place (integers, durations, memory sizes) are what the string readers give,
  and a value in another form sends its whole column back to those readers;
* the key index gives the reference path's values and positions (each key's last kept value);
* whole assemblies of fuzzed logs (requeued jobs with several S records, E without S, D, A and
  R records, array jobs, jobs spanning files, repeated attributes, damaged values, a cut-off
  last line) and of a generated log: the same records, jobs, facts and offsets with the
  kernels as without.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _torque_jobs, _torque_jobs_fast
from gridtrace.logs._torque_jobs import NA, TorqueAssembly, assemble_torque_jobs
from gridtrace.logs._torque_lines import tokenize_torque_reference

pytestmark = pytest.mark.skipif(not _torque_jobs_fast.HAVE_NUMBA, reason="numba is not installed")


@contextmanager
def kernel_from(rows: int) -> Iterator[None]:
    """Use the kernels from ``rows`` records (and exec_host values)."""
    saved = _torque_jobs_fast.KERNEL_ROWS, _torque_jobs_fast.EXEC_HOST_KERNEL_ROWS
    _torque_jobs_fast.KERNEL_ROWS = _torque_jobs_fast.EXEC_HOST_KERNEL_ROWS = rows
    try:
        yield
    finally:
        _torque_jobs_fast.KERNEL_ROWS, _torque_jobs_fast.EXEC_HOST_KERNEL_ROWS = saved


@contextmanager
def reference_paths() -> Iterator[None]:
    """No kernel, exec_host by the parser beyond the simple chains."""
    with kernel_from(10**12):
        _torque_jobs._EXEC_HOST_FAST = False
        try:
            yield
        finally:
            _torque_jobs._EXEC_HOST_FAST = True


def assert_same(fast: TorqueAssembly, slow: TorqueAssembly) -> None:
    assert fast.jobs.schema == slow.jobs.schema
    for name in fast.jobs.column_names:
        assert fast.jobs.column(name).equals(slow.jobs.column(name)), name
    assert fast.records.equals(slow.records)
    assert fast.info == slow.info
    assert fast.tz_offset_s == slow.tz_offset_s
    np.testing.assert_array_equal(fast.job_first_rows, slow.job_first_rows)


# --------------------------------------------------------------------------------------------
# numbers read in place

_DIGITS = st.text(alphabet="0123456789", min_size=1, max_size=20)
_NUMBER_TEXT = st.one_of(
    _DIGITS,
    _DIGITS.map("-".__add__),
    st.tuples(_DIGITS, _DIGITS, _DIGITS).map(":".join),
    st.tuples(
        _DIGITS, st.sampled_from(["b", "kb", "MB", "gw", "Tb", "pW", "kB", "x", "k", ""])
    ).map("".join),
    st.sampled_from(["", " 5", "5 ", "+5", "0x1f", "1.5", "12.27M", "-0", "\u0663", "1:2", "1::2"]),
    st.text(alphabet="0123456789:-+ kmgbwKMGBW.", max_size=14),
)


def _reference(text: str, mode: int) -> tuple[int, bool]:
    """The value and whether it was read cleanly, by the string readers."""
    array = pa.array([text], pa.string())
    if mode == _torque_jobs_fast.INTEGER:
        values, bad = _torque_jobs._ints(array)
        return int(values[0]), not bad[0]
    if mode == _torque_jobs_fast.DURATION:
        values, found = _torque_jobs._durations(array)
    else:
        values, found = _torque_jobs._memory(array, "b")
    return int(values[0]), not any(len(rows) for rows in found.values())


@settings(max_examples=400, deadline=None)
@given(st.lists(_NUMBER_TEXT, min_size=1, max_size=6), st.sampled_from([0, 1, 2]))
def test_numbers_read_in_place_are_what_the_strings_give(texts: list[str], mode: int) -> None:
    values = pa.array(texts, pa.string())
    positions = np.arange(len(texts), dtype=np.int64).reshape(-1, 1)
    (read,) = _torque_jobs_fast.read_values(values, positions, [0], [mode])
    expected = [_reference(text, mode) for text in texts]
    if read is None:
        # given back: some value is not in the form the kernel reads
        return
    for text, got, (value, clean) in zip(texts, read.tolist(), expected, strict=True):
        assert clean, text  # the kernel reads only what the readers read without a problem
        assert got == value, text


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.integers(-(10**17), 10**17).map(lambda v: (str(v), 0)),
            st.integers(0, 10**12 - 1).map(lambda v: (str(v), 1)),
            st.tuples(st.integers(0, 10**9 - 1), st.integers(0, 99), st.integers(0, 99)).map(
                lambda t: (f"{t[0]:02d}:{t[1]:02d}:{t[2]}", 1)
            ),
            st.tuples(st.integers(0, 10**6), st.sampled_from(["b", "kb", "mb", "GB", "w"])).map(
                lambda t: (f"{t[0]}{t[1]}", 2)
            ),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_canonical_numbers_are_read_by_the_kernel(items: list[tuple[str, int]]) -> None:
    texts = [text for text, _ in items]
    values = pa.array(texts, pa.string())
    # each value in its own column (a row of positions), one row per value, −1 elsewhere
    positions = np.full((1, len(items)), -1, dtype=np.int64)
    positions[0] = np.arange(len(items))
    modes = [mode for _, mode in items]
    read = _torque_jobs_fast.read_values(values, positions, range(len(items)), modes)
    for (text, mode), got in zip(items, read, strict=True):
        assert got is not None, text
        assert int(got[0]) == _reference(text, mode)[0], text


def test_absent_values_are_missing() -> None:
    values = pa.array(["7", "8"], pa.string())
    positions = np.array([[1, -1], [-1, 0]], dtype=np.int32)
    first, second = _torque_jobs_fast.read_values(values, positions, [0, 1], [0, 0])
    assert first is not None
    assert second is not None
    assert first.tolist() == [8, NA]
    assert second.tolist() == [NA, 7]


# --------------------------------------------------------------------------------------------
# positions and strings gathered row by row


@settings(max_examples=150, deadline=None)
@given(st.data(), st.integers(1, 6), st.integers(0, 8), st.integers(1, 3))
def test_first_positions_and_strings_are_the_column_lookups(
    data: st.DataObject, n_records: int, n_rows: int, n_sources: int
) -> None:
    texts = data.draw(st.lists(st.text(max_size=4), min_size=1, max_size=20))
    values = pa.array(texts, pa.string())
    position = st.integers(-1, len(texts) - 1)
    cells = st.lists(position, min_size=n_records * 3, max_size=n_records * 3)
    table = np.array(data.draw(cells), dtype=np.int32).reshape(n_records, 3)
    record = st.integers(-1, n_records - 1)
    sources = [
        np.array(data.draw(st.lists(record, min_size=n_rows, max_size=n_rows)), dtype=np.int64)
        for _ in range(n_sources)
    ]
    by_key = _torque_jobs_fast.first_positions(table, sources)
    for key in range(3):
        expected = np.full(n_rows, -1, dtype=np.int64)
        for rows in sources:
            found = np.where(rows >= 0, table[np.maximum(rows, 0), key], -1)
            expected = np.where(expected >= 0, expected, found)
        np.testing.assert_array_equal(by_key[key], expected)
    strings = _torque_jobs_fast.gather_strings(values, by_key)
    assert strings is not None
    for key in range(3):
        assert strings[key].equals(_torque_jobs._take(values, by_key[key].astype(np.int64)))
        strings[key].validate(full=True)


# --------------------------------------------------------------------------------------------
# the key index copies the kept values

_KEY = st.sampled_from(
    ["user", "queue", "start", "end", "exec_host", "session", "x", "Exit_status"]
)
_MAPS = st.lists(
    st.lists(st.tuples(_KEY, st.sampled_from(["", "1", "abc", "\u00e9t\u00e9"])), max_size=6),
    min_size=1,
    max_size=10,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_MAPS, st.data())
def test_kernel_index_is_the_reference_index(
    maps: list[list[tuple[str, str]]], data: st.DataObject
) -> None:
    map_type = pa.map_(pa.string(), pa.string())
    cuts = sorted(data.draw(st.lists(st.integers(0, len(maps)), max_size=3)))
    bounds = [0, *cuts, len(maps)]
    chunks = [pa.array(maps[a:b], map_type) for a, b in itertools.pairwise(bounds)]
    column = pa.chunked_array(chunks, map_type)
    drop = np.array(data.draw(st.lists(st.booleans(), min_size=len(maps), max_size=len(maps))))
    keys = _torque_jobs._KEYS
    with kernel_from(0):
        fast = _torque_jobs._Attrs.extract(column, keys, drop_last=drop.astype(bool))
    with kernel_from(10**12):
        slow = _torque_jobs._Attrs.extract(column, keys, drop_last=drop.astype(bool))
    assert fast.values.equals(slow.values)
    for key, positions in slow.index.items():
        np.testing.assert_array_equal(fast.index[key], positions, err_msg=key)


# --------------------------------------------------------------------------------------------
# whole assemblies of fuzzed logs

_BASE = 1714723200  # 2024-05-03 08:00 UTC

_DAMAGED = st.sampled_from(
    [
        "Exit_status=abc",
        "Exit_status=+3",
        "Exit_status= 4",
        "Exit_status=271",
        "Exit_status=-11",
        "resources_used.walltime=1:2",
        "resources_used.walltime=-00:00:05",
        "resources_used.walltime=12345678901234",
        "resources_used.cput=3600",
        "resources_used.mem=12.5gb",
        "resources_used.mem=2048",
        "resources_used.vmem=9999999999999pb",
        "Resource_List.mem=4GB",
        "Resource_List.pmem=1gw",
        "Resource_List.walltime=1:00:00:00",
        "start=-5",
        "start=0",
        "ctime=99999999999999999999",
        "qtime=0x10",
        "end=253402300800",
        "total_execution_slots=4294967296",
        "unique_node_count=2",
        "Resource_List.ncpus=0*2",
        "Resource_List.procs=8",
        "Resource_List.ngpus=1",
        "user=u user=v",
        "start=1714723400 start=1714723500",
        "Exit_status=0 Exit_status=1",
        "exec_host=n1/0-3+n2/0*2",
        "exec_vnode=(n1:ncpus=4)",
        "Resource_List.select=2:ncpus=4:mem=2gb",
        "Resource_List.nodes=2:ppn=4",
    ]
)


@st.composite
def _job(draw: st.DrawFn, seq: int) -> list[tuple[int, str]]:
    """The lines of one job: (offset in seconds, line without stamp)."""
    array = draw(st.sampled_from(["", "", f"[{draw(st.integers(0, 3))}]", "-2"]))
    job_id = f"{seq}{array}.srv"
    ctime = _BASE + seq * 7
    common = f"user=u{seq % 3} queue=q{seq % 2} ctime={ctime} qtime={ctime + 1} etime={ctime + 2}"
    shape = draw(st.lists(st.sampled_from("QSSEDARE"), min_size=1, max_size=7))
    lines = []
    t = 10
    for kind in shape:
        t += draw(st.integers(1, 500))
        extra = " ".join(draw(st.lists(_DAMAGED, max_size=2)))
        start = ctime + t // 2
        if kind == "Q":
            body = f"queue=q{seq % 2}"
        elif kind == "S":
            body = f"{common} start={start} exec_host=n{seq % 5}/0-{seq % 4}"
        elif kind == "E":
            body = (
                f"{common} start={start} end={ctime + t} Exit_status={draw(st.integers(-3, 300))} "
                f"exec_host=n{seq % 5}/0-{seq % 4} resources_used.walltime=00:0{seq % 9}:1{t % 10} "
                f"resources_used.mem={t}kb resources_used.cput={t % 60} "
                f"Resource_List.walltime=01:00:00 Resource_List.nodes=1:ppn={1 + seq % 4}"
            )
        elif kind in "DA":
            body = "requestor=root@srv" if kind == "D" else ""
        else:  # R
            body = ""
        lines.append((t, f"{kind};{job_id};{body} {extra}".rstrip()))
    return lines


def _stamp(epoch: int) -> str:
    import datetime as dt

    local = dt.datetime.fromtimestamp(epoch + 7200, dt.UTC)  # the site logs CEST
    return local.strftime("%m/%d/%Y %H:%M:%S")


@st.composite
def _log(draw: st.DrawFn) -> tuple[list[bytes], bool]:
    n_jobs = draw(st.integers(1, 12))
    events = []
    for seq in range(n_jobs):
        for t, line in draw(_job(seq % max(1, n_jobs - 2))):  # a few ids logged twice
            events.append((_BASE + seq * 7 + t, line))
    events.sort(key=lambda pair: pair[0])
    text = [f"{_stamp(epoch)};{line}\n".encode() for epoch, line in events]
    if draw(st.booleans()) and len(text) > 1:
        text.append(text[draw(st.integers(0, len(text) - 1))])  # a repeated line
    split = draw(st.integers(0, len(text)))  # jobs spanning two files
    files = [b"".join(text[:split]), b"".join(text[split:])]
    cut = draw(st.booleans())
    if cut and files[1]:
        files[1] = files[1][: -draw(st.integers(1, min(30, len(files[1]))))]
    return files, cut


def _records(files: list[bytes]) -> pa.Table:
    names = ("20240503", "20240504")
    parts = [
        tokenize_torque_reference(data, src_file=name, site="s").records
        for data, name in zip(files, names, strict=True)
    ]
    return pa.concat_tables(parts)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_log(), st.sampled_from([None, "Europe/Brussels"]))
def test_fuzzed_logs_assemble_the_same_with_the_kernels(
    log: tuple[list[bytes], bool], tz: str | None
) -> None:
    records = _records(log[0])
    with kernel_from(0):
        fast = assemble_torque_jobs(records, tz=tz)
    with reference_paths():
        slow = assemble_torque_jobs(records, tz=tz)
    assert_same(fast, slow)


@pytest.mark.slow
def test_generated_log_assembles_the_same_with_the_kernels() -> None:
    rng = np.random.default_rng(17)
    lines = []
    for seq in range(3000):
        ctime = _BASE + seq * 11
        start = ctime + int(rng.integers(0, 600))
        end = start + int(rng.integers(1, 7200))
        host = f"n{int(rng.integers(0, 40))}/0-{int(rng.integers(0, 15))}"
        common = (
            f"user=u{seq % 17} group=g queue=q{seq % 3} ctime={ctime} qtime={ctime} etime={ctime}"
        )
        lines.append((ctime, f"Q;{seq}.srv;queue=q{seq % 3}"))
        lines.append((start, f"S;{seq}.srv;{common} start={start} exec_host={host}"))
        if seq % 50 == 0:  # requeued
            lines.append((start + 5, f"R;{seq}.srv;"))
            lines.append((start + 9, f"S;{seq}.srv;{common} start={start + 9} exec_host={host}"))
        if seq % 70 == 0:
            lines.append((end - 1, f"D;{seq}.srv;requestor=u@h"))
        lines.append(
            (
                end,
                f"E;{seq}.srv;{common} start={start} end={end} Exit_status={seq % 3} "
                f"exec_host={host} Resource_List.nodes=1:ppn=4 Resource_List.mem=4gb "
                f"Resource_List.walltime=02:00:00 resources_used.walltime={end - start} "
                f"resources_used.cput={(end - start) // 2} resources_used.mem={seq}kb "
                f"resources_used.vmem={seq * 2}kb",
            )
        )
    lines.sort(key=lambda pair: pair[0])
    data = b"".join(f"{_stamp(epoch)};{line}\n".encode() for epoch, line in lines)
    half = data.index(b"\n", len(data) // 2) + 1
    records = _records([data[:half], data[half:]])
    with kernel_from(0):
        fast = assemble_torque_jobs(records)
    with reference_paths():
        slow = assemble_torque_jobs(records)
    assert_same(fast, slow)
    assert fast.jobs.num_rows >= 3000
    assert (fast.jobs.column("mem_used_bytes").to_numpy(zero_copy_only=False) != NA).any()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(st.integers(0, 3), st.integers(0, 60), st.integers(0, 5)),
            min_size=1,
            max_size=80,
        ),
        min_size=1,
        max_size=5,
    )
)
def test_exec_host_kernel_counts_many_intervals_as_the_array_path(
    rows: list[list[tuple[int, int, int]]],
) -> None:
    # beyond 32 intervals a row's are sorted by np.argsort, below by insertion: same counts
    text = pa.array(
        ["+".join(f"n{h}/{low}-{low + width}" for h, low, width in row) for row in rows],
        pa.string(),
    )
    read = _torque_jobs_fast.exec_hosts(text)
    assert read is not None
    kernel_rows, kernel_names, kernel_cores, kernel_ok = read
    array_rows, array_names, array_cores, array_ok = _torque_jobs._fast_exec_hosts(text)
    np.testing.assert_array_equal(kernel_ok, array_ok)
    np.testing.assert_array_equal(kernel_cores[kernel_ok], array_cores[array_ok])
    np.testing.assert_array_equal(kernel_rows, array_rows)
    assert kernel_names.equals(array_names)
