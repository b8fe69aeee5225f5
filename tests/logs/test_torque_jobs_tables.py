"""The assembly's hash tables: numbering keys and finding repeated ones as pandas does.

:func:`first_seen_numbers` gives ``pandas.factorize``'s codes, and :func:`seen_more_than_once`
``DataFrame.duplicated(keep=False)`` of the keys and their slot hints (equal keys with other
hints are not repeats), both through :mod:`gridtrace.logs._groups` (checked against pandas): for
keys in time order, at random and packed like job ids, whatever the hints. Keys that crowd a
few slots make them give up (None) instead of probing on, and the assembly's own wrapper then
numbers them the other way.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridtrace.logs import _groups, _torque_jobs, _torque_jobs_fast

pytestmark = pytest.mark.skipif(not _torque_jobs_fast.HAVE_NUMBA, reason="numba is not installed")

_KEYS = st.lists(
    st.one_of(
        st.integers(-3, 40),
        st.integers(-(2**63), 2**63 - 1),
        st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 5)).map(lambda p: (p[0] << 31) + p[1]),
    ),
    max_size=300,
)


@settings(max_examples=200, deadline=None)
@given(_KEYS)
def test_keys_are_numbered_as_pandas_numbers_them(keys: list[int]) -> None:
    column = np.array(keys, dtype=np.int64)
    numbered = _torque_jobs_fast.first_seen_numbers(column)
    assert numbered is not None
    np.testing.assert_array_equal(numbered, _groups.first_seen_codes(column))


@settings(max_examples=200, deadline=None)
@given(_KEYS, st.data())
def test_repeated_keys_are_those_pandas_finds(keys: list[int], data: st.DataObject) -> None:
    column = np.array(keys, dtype=np.int64)
    near = np.array(
        data.draw(
            st.lists(st.integers(-(2**63), 2**63 - 1), min_size=len(keys), max_size=len(keys))
        ),
        dtype=np.int64,
    )
    for hint in (near, column, np.zeros(len(keys), dtype=np.int64)):
        found = _torque_jobs_fast.seen_more_than_once(column, hint)
        assert found is not None
        np.testing.assert_array_equal(found, _groups.duplicated(column, hint, keep="none"))


def test_keys_in_one_slot_give_up_and_are_numbered_the_other_way() -> None:
    # distinct keys whose slot hints are all equal: one long run of probes
    crowded = np.arange(5000, dtype=np.int64) << 40
    assert _torque_jobs_fast.first_seen_numbers(crowded) is None
    same_slot = np.zeros(len(crowded), dtype=np.int64)
    assert _torque_jobs_fast.seen_more_than_once(crowded, same_slot) is None
    saved = _torque_jobs_fast.KERNEL_ROWS
    try:
        _torque_jobs_fast.KERNEL_ROWS = 0
        np.testing.assert_array_equal(_torque_jobs._first_seen(crowded), np.arange(5000))
    finally:
        _torque_jobs_fast.KERNEL_ROWS = saved


def test_a_large_log_of_job_ids_is_numbered_in_one_pass() -> None:
    rng = np.random.default_rng(20240503)
    seq = 4_000_000 + np.cumsum(rng.integers(0, 3, size=200_000))
    index = np.where(rng.random(len(seq)) < 0.1, rng.integers(0, 50, size=len(seq)), -1)
    packed = (seq << 31) + index + 1
    numbered = _torque_jobs_fast.first_seen_numbers(packed)
    assert numbered is not None
    np.testing.assert_array_equal(numbered, _groups.first_seen_codes(packed))
