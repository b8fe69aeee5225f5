"""TORQUE job assembly: the attribute index numbers the entries of the maps, nothing copied.

* a position is an entry's number among the chunks' values put one after the other: the value
  found there is the key's last non-empty value in the record (a cut-off last one left out),
  with the kernel as without it;
* beyond what one string array holds, only the values read are kept (the older copy): the same
  values at the positions, and the same tables;
* the 64-bit hashes that pick duplicate-line candidates are equal for equal values;
* whole assemblies of fuzzed logs with repeated lines and queues that differ within a job:
  the same tables with the kernels as without, and with the kept-values copy;
* the counting sort of the job groups is the stable argsort, and the first appearances of the
  groups are what ``np.unique`` gives.
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
from gridtrace.logs._torque_jobs import assemble_torque_jobs

from .test_torque_jobs_kernel import _records, _stamp, assert_same, kernel_from

pytestmark = pytest.mark.skipif(not _torque_jobs_fast.HAVE_NUMBA, reason="numba is not installed")


@contextmanager
def kept_values_only() -> Iterator[None]:
    """Index as if the values did not fit one string array: the kept ones copied, no kernel."""
    saved = _torque_jobs._STRING_BYTES
    _torque_jobs._STRING_BYTES = 0
    try:
        yield
    finally:
        _torque_jobs._STRING_BYTES = saved


_KEY = st.sampled_from(["user", "queue", "start", "end", "exec_host", "session", "x", "owner"])
_VALUE = st.sampled_from(["", "1", "abc", "n1/0-3", "\u00e9t\u00e9", "q1"])
_MAPS = st.lists(st.lists(st.tuples(_KEY, _VALUE), max_size=6), min_size=1, max_size=12)
_MAP_TYPE = pa.map_(pa.string(), pa.string())


def _column(maps: list[list[tuple[str, str]]], cuts: list[int]) -> pa.ChunkedArray:
    bounds = [0, *sorted(cuts), len(maps)]
    chunks = [pa.array(maps[a:b], _MAP_TYPE) for a, b in itertools.pairwise(bounds)]
    return pa.chunked_array(chunks, _MAP_TYPE)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_MAPS, st.data())
def test_positions_point_at_each_keys_last_value(
    maps: list[list[tuple[str, str]]], data: st.DataObject
) -> None:
    column = _column(maps, data.draw(st.lists(st.integers(0, len(maps)), max_size=3)))
    drop = np.array(data.draw(st.lists(st.booleans(), min_size=len(maps), max_size=len(maps))))
    keys = _torque_jobs._KEYS
    extracted = []
    for rows in (0, 10**12):  # the kernel, then the array path
        with kernel_from(rows):
            extracted.append(_torque_jobs._Attrs.extract(column, keys, drop_last=drop))
    with kept_values_only():
        copied = _torque_jobs._Attrs.extract(column, keys, drop_last=drop)
    for row, entries in enumerate(maps):
        used = entries[:-1] if drop[row] and entries else entries
        expected = {key: value for key, value in used if value}  # the last non-empty one
        for key in keys:
            for attrs in (*extracted, copied):
                position = int(attrs.index[key][row])
                if key in expected:
                    assert attrs.values[position].as_py() == expected[key], key
                else:
                    assert position == -1, key
    fast, slow = extracted
    assert fast.values.equals(slow.values)
    for key, positions in slow.index.items():
        np.testing.assert_array_equal(fast.index[key], positions, err_msg=key)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=5), min_size=1, max_size=30), st.data())
def test_value_hashes_are_equal_for_equal_values(texts: list[str], data: st.DataObject) -> None:
    values = pa.array(texts, pa.string())
    picked = data.draw(st.lists(st.integers(-1, len(texts) - 1), max_size=40))
    positions = np.array(picked, dtype=np.int32)
    hashes = _torque_jobs_fast.value_hashes(values, positions)
    assert hashes is not None
    for i, j in itertools.combinations(range(len(picked)), 2):
        if picked[i] >= 0 and picked[j] >= 0 and texts[picked[i]] == texts[picked[j]]:
            assert hashes[i] == hashes[j]
    assert (hashes[positions < 0] == 0).all()
    # an array with nulls is left to the codes
    assert _torque_jobs_fast.value_hashes(pa.array(["a", None]), np.zeros(1, np.int32)) is None


# --------------------------------------------------------------------------------------------
# whole assemblies: repeated lines, routing queues, damaged values

_BASE = 1714723200  # 2024-05-03 08:00 UTC
_EXTRA = st.sampled_from(
    [
        "",
        "queue=q9",
        "queue=",
        "start=abc",
        "Exit_status=-11",
        "resources_used.mem=12.5gb",
        "user=u user=v",
        "ctime=99999999999999999999",
        "session=4 owner=u@h",
    ]
)


@st.composite
def _log(draw: st.DrawFn) -> list[bytes]:
    lines = []
    for seq in range(draw(st.integers(1, 10))):
        ctime = _BASE + seq * 13
        job = f"{seq}{draw(st.sampled_from(['', '[1]', '-2']))}.srv"
        common = f"user=u{seq % 3} ctime={ctime} qtime={ctime} etime={ctime}"
        t = ctime
        # routed: two Q records in the same second with different queues
        for queue in draw(st.lists(st.sampled_from(["qdef", "q1", "q2"]), min_size=1, max_size=3)):
            lines.append((t, f"Q;{job};queue={queue}"))
        for kind in draw(st.lists(st.sampled_from("SSEDRA"), min_size=1, max_size=5)):
            t += draw(st.integers(0, 90))
            extra = draw(_EXTRA)
            if kind == "S":
                body = f"{common} queue=q1 start={t} exec_host=n{seq % 3}/0-3 {extra}"
            elif kind == "E":
                body = (
                    f"{common} queue=q1 start={ctime + 1} end={t} Exit_status={seq % 3} "
                    f"exec_host=n{seq % 3}/0-3 resources_used.walltime=00:00:{t % 60:02d} {extra}"
                )
            else:
                body = extra
            lines.append((t, f"{kind};{job};{body}".rstrip()))
    lines.sort(key=lambda pair: pair[0])
    text = [f"{_stamp(epoch)};{line}\n".encode() for epoch, line in lines]
    for at in draw(st.lists(st.integers(0, len(text) - 1), max_size=3)):
        text.insert(at, text[at])  # byte-identical lines
    split = draw(st.integers(0, len(text)))  # jobs spanning two files
    return [b"".join(text[:split]), b"".join(text[split:])]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_log())
def test_fuzzed_logs_assemble_the_same_with_entries_numbered(files: list[bytes]) -> None:
    records = _records(files)
    with kernel_from(0):
        fast = assemble_torque_jobs(records)
    with kernel_from(10**12):
        slow = assemble_torque_jobs(records)
    with kept_values_only():
        copied = assemble_torque_jobs(records)
    assert_same(fast, slow)
    assert_same(fast, copied)


# --------------------------------------------------------------------------------------------
# the sorts the attempts no longer need


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=60))
def test_counting_order_is_the_stable_argsort(codes: list[int]) -> None:
    array = np.array(codes, dtype=np.int64)
    expected = np.argsort(array, kind="stable")
    np.testing.assert_array_equal(_torque_jobs_fast.stable_order(array, 7), expected)
    with kernel_from(0):
        np.testing.assert_array_equal(_torque_jobs._stable_order(array, 7), expected)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 9), max_size=60))
def test_first_appearances_are_the_unique_first_indices(values: list[int]) -> None:
    # codes numbered in order of first appearance, as the job groups are
    numbering: dict[int, int] = {}
    codes = np.array([numbering.setdefault(v, len(numbering)) for v in values], dtype=np.int64)
    expected = np.unique(codes, return_index=True)[1]
    np.testing.assert_array_equal(_torque_jobs._first_appearances(codes), expected)
