"""The TORQUE modules' start-up shortcuts give what the plain calls give.

Arrow arrays are built from numpy buffers (``pa.array`` of a numpy array imports ``numpy.ma``),
and the out-of-core format is built at its first access.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import gridtrace.logs._torque as torque
from gridtrace.logs._spill import SpillFormat, spill_format
from gridtrace.logs._torque_jobs import _Attrs, _bools, _distinct, _from_numpy, _index


@pytest.mark.parametrize("type_", [pa.int16(), pa.int32(), pa.int64(), pa.float64()])
@pytest.mark.parametrize("with_nulls", [False, True])
def test_numbers_from_buffers_equal_pa_array(type_: pa.DataType, with_nulls: bool) -> None:
    rng = np.random.default_rng(17)
    for n in (0, 1, 7, 8, 9, 1000):
        values = rng.integers(-30000, 30000, size=n)
        null = rng.random(n) < 0.3 if with_nulls else None
        got = _from_numpy(values, type_, null)
        got.validate(full=True)
        want = pa.array(values, pa.int64(), mask=null).cast(type_)
        assert got.equals(want)
        assert got.null_count == want.null_count


def test_strided_and_narrow_positions_become_int64() -> None:
    positions = np.arange(20, dtype=np.int32).reshape(10, 2)[:, 1]
    got = _index(positions, positions > 15)
    assert got.type == pa.int64()
    assert got.to_pylist() == [1, 3, 5, 7, 9, 11, 13, 15, None, None]


def test_booleans_from_buffers_equal_pa_array() -> None:
    rng = np.random.default_rng(3)
    for n in (0, 1, 8, 13, 1001):
        values = rng.random(n) < 0.5
        got = _bools(values)
        got.validate(full=True)
        assert got.equals(pa.array(values, pa.bool_()))


def test_distinct_is_np_unique() -> None:
    rng = np.random.default_rng(5)
    for n in (0, 1, 2, 50):
        values = rng.integers(0, 10, size=n)
        assert np.array_equal(_distinct(values), np.unique(values))


def test_the_spill_format_is_built_once_at_first_use() -> None:
    spill = spill_format("torque")
    assert isinstance(spill, SpillFormat)
    assert spill.name == "torque"
    assert spill is torque.TORQUE_SPILL is spill_format("torque")
    with pytest.raises(AttributeError):
        _ = torque.NOT_AN_ATTRIBUTE


def _column_positions(attrs: _Attrs, key: str, *sources: np.ndarray) -> np.ndarray:
    """The former per-key lookup: one key's column gathered for each source."""
    table = attrs.index[key]
    out = np.where(sources[0] >= 0, table[np.maximum(sources[0], 0)], -1)
    for rows in sources[1:]:
        more = np.where(rows >= 0, table[np.maximum(rows, 0)], -1)
        out = np.where(out >= 0, out, more)
    return out


def test_positions_from_gathered_rows_equal_the_per_key_lookup() -> None:
    rng = np.random.default_rng(11)
    keys = ["user", "queue", "start", "end", "exec_host"]
    maps = []
    for _ in range(300):
        entries = [(k, "" if rng.random() < 0.1 else f"v{rng.integers(9)}") for k in keys]
        entries += [("other", "x")]
        maps.append([entries[i] for i in rng.permutation(len(entries))[: rng.integers(0, 7)]])
    attrs = _Attrs.extract(pa.array(maps, pa.map_(pa.string(), pa.string())), keys)
    sources = [rng.integers(-1, 300, size=120) for _ in range(3)]
    combos = (sources[:1], sources[:2], sources, sources[1:])
    want = {
        (k, i): _column_positions(attrs, k, *used) for k in keys for i, used in enumerate(combos)
    }
    for gathered in (False, True):
        if gathered:
            attrs.gather_rows(*sources[:2])
            attrs.gather_rows(*sources)
            assert len(attrs.gathered) == 2
        for _ in range(2):
            for key in keys:
                for i, used in enumerate(combos):
                    got = attrs.positions(key, *used)
                    assert np.array_equal(got, want[key, i])
                    got[:] = -7  # a caller's change does not reach the kept positions
    attrs.forget_rows()
    assert not attrs.gathered
    assert np.array_equal(attrs.positions("user", *sources), want["user", 2])


def test_narrowing_after_wrapping_is_checked_as_pa_array_checks_it() -> None:
    values = np.array([1, 40_000])
    with pytest.raises(pa.ArrowInvalid):
        pa.array(values, pa.int16())
    with pytest.raises(pa.ArrowInvalid):
        _from_numpy(values, pa.int64()).cast(pa.int16())
