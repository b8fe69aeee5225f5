"""The fields the LSF jobs need are found in the ``attrs`` maps by position, as by name.

:func:`gridtrace.logs._lsf_fast.template_keys` finds a ``JOB_FINISH`` row's fields where the
reader writes them (its keys in order), after one compare of each map's first keys with the
template; a map whose keys differ makes it answer None, for the search by name
(:func:`gridtrace.logs._attrs_fast.find_keys`). These tests check that whenever it answers,
the positions are those of the search, on maps of every kind the reader writes (rows cut
short, unknown fields after the named ones, null maps, slices) and on maps whose keys were
changed; and that the jobs' fields read either way are the same.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _attrs_fast, _lsf, _lsf_fast, read_lsf
from tests.logs.test_lsf_fast import RECORDS

pytestmark = pytest.mark.skipif(not _lsf_fast.HAVE_NUMBA, reason="numba is not installed")

_WANTED = [*_lsf._TEXT_ATTRS, *_lsf._NUMBER_ATTRS]
_FINISH_NAMES = len(_lsf._FINISH_KEYS)


def _maps(
    rows: list[tuple[int, int, int, bool]], damage: list[tuple[int, int]], start: int
) -> pa.MapArray:
    """Maps with the keys the reader writes (kind, named, unknown, null), some keys changed."""
    which = np.array([r[0] for r in rows], dtype=np.int64)
    named = np.array([r[1] for r in rows], dtype=np.int64)
    named[which >= 2] = np.minimum(named[which >= 2], 1)  # one name: text, record_line
    unknown = np.array([r[2] for r in rows], dtype=np.int64)
    keys = _lsf._keys(which, named, unknown).to_pylist()
    for position, how in damage:  # a key changed: renamed, or swapped with the next
        if not keys:
            break
        k = position % len(keys)
        if how == 0:
            keys[k] = keys[k][::-1] + "x"[: len(keys[k]) < 2]
        elif how == 1 and k + 1 < len(keys):
            keys[k], keys[k + 1] = keys[k + 1], keys[k]
        else:
            keys[k] = keys[k].upper()
    sizes = named + unknown
    offsets = np.zeros(len(rows) + 1, dtype=np.int32)
    np.cumsum(sizes, out=offsets[1:])
    items = [f"v{k}" for k in range(len(keys))]
    maps = pa.MapArray.from_arrays(
        pa.array(offsets, pa.int32()),
        pa.array(keys, pa.string()),
        pa.array(items, pa.string()),
        mask=pa.array([r[3] for r in rows]),
    )
    return maps.slice(min(start, len(maps)))


_ROW = st.tuples(
    st.sampled_from([0, 0, 0, 1, 2, 3]),  # mostly JOB_FINISH rows
    st.one_of(st.just(_FINISH_NAMES), st.integers(0, _FINISH_NAMES)),
    st.integers(0, 3),
    st.booleans(),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_ROW, min_size=1, max_size=25),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 2)), max_size=2),
    st.integers(0, 3),
)
def test_positions_are_those_of_the_search_by_name(
    rows: list[tuple[int, int, int, bool]], damage: list[tuple[int, int]], start: int
) -> None:
    assert _lsf_fast.compile_kernel()
    assert _attrs_fast.compile_kernel()
    maps = _maps(rows, damage, start)
    found = _lsf_fast.template_keys(maps, list(_lsf._FINISH_KEYS), _lsf._FINISH_AT)
    searched = _attrs_fast.find_keys(maps, _WANTED)
    if found is not None:
        assert np.array_equal(found, searched)
    # JOB_FINISH rows are found by position unless unknown fields follow a row cut short
    # before the fields wanted (null maps are not read)
    last = max(_lsf._FINISH_AT)
    plain = all(r[3] or (r[0] == 0 and (r[2] == 0 or r[1] > last)) for r in rows[start:])
    if plain and not damage:
        assert found is not None


def test_a_map_with_other_keys_is_left_to_the_search() -> None:
    assert _lsf_fast.compile_kernel()
    keys = list(_lsf._FINISH_KEYS)
    keys[3], keys[4] = keys[4], keys[3]  # jobId and userId swapped
    maps = pa.MapArray.from_arrays(
        pa.array([0, len(keys)], pa.int32()), pa.array(keys), pa.array(keys)
    )
    assert _lsf_fast.template_keys(maps, list(_lsf._FINISH_KEYS), _lsf._FINISH_AT) is None
    # a map of other names of the same lengths: the bytes are compared, not only the sizes
    same_sizes = ["x" * len(key) for key in _lsf._FINISH_KEYS]
    maps = pa.MapArray.from_arrays(
        pa.array([0, len(keys)], pa.int32()), pa.array(same_sizes), pa.array(keys)
    )
    assert _lsf_fast.template_keys(maps, list(_lsf._FINISH_KEYS), _lsf._FINISH_AT) is None


def test_jobs_fields_by_position_match_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "lsb.acct"
    lines = [r.replace(" 5001 ", f" {5001 + k} ", 1) for k, r in enumerate(RECORDS * 20)]
    lines[3] = lines[3][:400]  # cut: fewer fields
    lines[5] = lines[5] + ' 7 "x" 3.5'  # unknown fields after the named ones
    lines[8] = lines[8].replace(' "" "" 2 1032', ' "" "" x 1032')  # the tail left unparsed
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(_lsf_fast, "SMALL_INPUT_LINES", 0)
    monkeypatch.setattr(_attrs_fast, "MIN_ROWS", 0)
    attrs = read_lsf(path, errors="skip").records.column("attrs")
    assert _lsf_fast.compile_kernel()
    answers = []
    template_keys = _lsf_fast.template_keys

    def counted(*args: object) -> object:
        answers.append(template_keys(*args))
        return answers[-1]

    monkeypatch.setattr(_lsf_fast, "template_keys", counted)
    by_position = _lsf._finish_values(attrs)
    assert any(answer is not None for answer in answers)  # the rows were found by position
    monkeypatch.setattr(_lsf_fast, "template_keys", lambda *args: None)
    by_name = _lsf._finish_values(attrs)
    for name in _lsf._TEXT_ATTRS:
        assert by_position[0][name].equals(by_name[0][name]), name
    for name in _lsf._NUMBER_ATTRS:
        for got, expected in zip(by_position[1][name], by_name[1][name], strict=True):
            assert np.array_equal(got, expected, equal_nan=got.dtype.kind == "f"), name
