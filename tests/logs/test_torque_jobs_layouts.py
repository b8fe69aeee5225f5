"""The key index's remembered layouts: rows that repeat a layout are indexed as if looked up.

The kernel remembers the keys of the last row of each entry count and gives a row with the same
keys, in the same order, that row's columns. These logs are made of a few layouts repeated many
times, with near misses (a key of the same length differing in one byte, at its start, middle
or end; two keys swapped; a key split at another place; a layout's keys in another row length),
repeated keys, empty values and cut last values: the index, the values and the epochs read
while indexing are those of the reference (array) path.
"""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _torque_jobs, _torque_jobs_fast

pytestmark = pytest.mark.skipif(not _torque_jobs_fast.HAVE_NUMBA, reason="numba is not installed")

_MAP = pa.map_(pa.string(), pa.string())

# layouts of a log's record types, and near misses of them
_S = ["user", "group", "queue", "ctime", "start", "exec_host", "Resource_List.walltime"]
_E = [*_S, "session", "end", "Exit_status", "resources_used.walltime", "resources_used.mem"]
_LAYOUTS = [
    ["queue"],
    ["requestor"],
    _S,
    _E,
    ["user", "group", "queue", "ctime", "start", "exec_host", "Resource_List.wallTime"],
    ["user", "group", "queue", "ctime", "start", "exec_host", "Xesource_List.walltime"],
    ["user", "group", "queue", "ctime", "start", "exec_host", "Resource_Xist.walltime"],
    ["group", "user", "queue", "ctime", "start", "exec_host", "Resource_List.walltime"],
    ["usergroup", "", "queue", "ctime", "start", "exec_host", "Resource_List.walltime"],
    ["use", "rgroup", "queue", "ctime", "start", "exec_host", "Resource_List.walltime"],
    ["user", "group", "queue", "ctime", "start", "start", "Resource_List.walltime"],
    ["user", "group", "queue", "ctime", "start", "exec_host", "Resource_List.walltimf"],
    ["qtime", "etime", "end", "end", "x", "Exit_status", "unique_node_count"],
    [*_E[:-1], "resources_used.vmem"],
    ["queue", "user"],
    ["queuf", "user"],
    ["end", "start"],
    ["ctime", "qtime", "etime", "start", "end", "Exit_status", "x"],
]
_VALUES = st.sampled_from(
    ["", "1", "-7", "1714723400", "abc", "12:00:00", "\u00e9t\u00e9", "9" * 20]
)


@st.composite
def _rows(draw: st.DrawFn) -> list[list[tuple[str, str]]]:
    layouts = draw(st.lists(st.integers(0, len(_LAYOUTS) - 1), min_size=1, max_size=60))
    rows = []
    for layout in layouts:
        keys = _LAYOUTS[layout]
        rows.append([(key, draw(_VALUES)) for key in keys])
    return rows


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_rows(), st.data())
def test_repeated_layouts_index_as_the_reference(
    rows: list[list[tuple[str, str]]], data: st.DataObject
) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(rows)), max_size=3)))
    bounds = [0, *cuts, len(rows)]
    chunks = [pa.array(rows[a:b], _MAP) for a, b in itertools.pairwise(bounds)]
    column = pa.chunked_array(chunks, _MAP)
    drop = np.array(data.draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows))))
    keys = _torque_jobs._KEYS
    epochs = ["start", "end", "ctime"]
    saved = _torque_jobs_fast.KERNEL_ROWS
    try:
        _torque_jobs_fast.KERNEL_ROWS = 0
        fast = _torque_jobs._Attrs.extract(column, keys, drop_last=drop, epochs=epochs)
        _torque_jobs_fast.KERNEL_ROWS = 10**12
        slow = _torque_jobs._Attrs.extract(column, keys, drop_last=drop, epochs=epochs)
        assert fast.kernel
        assert not slow.kernel
        assert fast.values.equals(slow.values)
        for key, positions in slow.index.items():
            np.testing.assert_array_equal(fast.index[key], positions, err_msg=key)
        for key in epochs:
            np.testing.assert_array_equal(fast.epochs(key), slow.epochs(key), err_msg=key)
    finally:
        _torque_jobs_fast.KERNEL_ROWS = saved


def test_a_log_of_one_layout_is_indexed_whole() -> None:
    """Every row after the first takes the first one's columns: each key's last value is kept."""
    row = [(key, str(1714723400 + i)) for i, key in enumerate(_E)] + [("start", "5")]
    column = pa.chunked_array([pa.array([row] * 50, _MAP)], _MAP)
    saved = _torque_jobs_fast.KERNEL_ROWS
    try:
        _torque_jobs_fast.KERNEL_ROWS = 0
        attrs = _torque_jobs._Attrs.extract(column, _torque_jobs._KEYS, epochs=["start", "end"])
    finally:
        _torque_jobs_fast.KERNEL_ROWS = saved
    width = len(row)
    np.testing.assert_array_equal(attrs.index["user"], np.arange(50) * width)
    np.testing.assert_array_equal(attrs.index["start"], np.arange(50) * width + width - 1)
    np.testing.assert_array_equal(attrs.epochs("start"), np.full(50, 5))
    np.testing.assert_array_equal(attrs.epochs("end"), np.full(50, 1714723400 + _E.index("end")))
    session = np.arange(50) * width + _E.index("session")  # not a wanted key: never indexed
    assert not np.isin(np.concatenate(list(attrs.index.values())), session).any()
