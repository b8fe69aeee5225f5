"""The attempts of LSF jobs whose ids are all distinct are found without sorting, as with it.

:func:`gridtrace.logs._lsf._attempts` answers at once (every row a first and only attempt, no
duplicate) when no job id repeats. These tests check that answer against the sorts' on the
same rows: two rows of a new id added to the end make the sorts run, and must leave the
answer of the others as it was; and that a repeated null id is not taken for distinct ids.
The ids are numbered (:func:`gridtrace.logs._lsf._id_codes`) by their hashes when those are
all different, else by a dictionary: the numbers are equal exactly where the ids are.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from gridtrace.logs import _lsf, _lsf_fast

_TIME = st.one_of(st.just(float("nan")), st.integers(0, 3).map(float))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_TIME, _TIME, _TIME, st.integers(0, 1)), min_size=0, max_size=30))
def test_distinct_ids_need_no_sort(rows: list[tuple[float, float, float, int]]) -> None:
    n = len(rows)
    submit = np.array([r[0] for r in rows], dtype=np.float64)
    event = np.array([r[1] for r in rows], dtype=np.float64)
    start = np.array([r[2] for r in rows], dtype=np.float64)
    file_no = np.array([r[3] for r in rows], dtype=np.int64)
    key = np.random.default_rng(n).permutation(n).astype(np.int64) - 1  # one row: no id (-1)
    line = np.arange(n, dtype=np.int64)
    quick = _lsf._attempts(key, submit, event, file_no, line, start)
    # the same rows and two of a new id: the sorts run for all
    more = _lsf._attempts(
        np.append(key, [n, n]),
        np.append(submit, [1.0, 1.0]),
        np.append(event, [2.0, 2.0]),
        np.append(file_no, [0, 0]),
        np.append(line, [n, n + 1]),
        np.append(start, [1.0, 1.0]),
    )
    for got, sorted_ in zip(quick, more, strict=True):
        np.testing.assert_array_equal(got, sorted_[:n])
    np.testing.assert_array_equal(more[0][n:], [0, 1])  # the new id's two attempts
    np.testing.assert_array_equal(more[2][n:], [True, True])  # same times: DUPLICATE


def test_two_rows_without_an_id_are_one_job() -> None:
    key = np.array([-1, -1, 0], dtype=np.int64)
    times = np.array([1.0, 1.0, 1.0])
    attempt, n_attempts, duplicate = _lsf._attempts(
        key, times, np.array([2.0, 3.0, 2.0]), np.zeros(3, np.int64), np.arange(3), times
    )
    np.testing.assert_array_equal(attempt, [0, 1, 0])
    np.testing.assert_array_equal(n_attempts, [2, 2, 1])
    np.testing.assert_array_equal(duplicate, [False, False, False])


_ID = st.one_of(st.none(), st.sampled_from(["", "1", "11", "1[2]", "2"]))


@settings(max_examples=200, deadline=None)
@given(st.lists(_ID, max_size=12))
def test_id_codes_equal_where_the_ids_are(ids: list[str | None]) -> None:
    # distinct ids are numbered by their hashes, repeated ones (or nulls) by the dictionary
    assert _lsf_fast.compile_kernel()
    codes = _lsf._id_codes(pa.array(ids, pa.string()))
    assert codes.dtype == np.int64
    assert len(codes) == len(ids)
    for i, a in enumerate(ids):
        for j, b in enumerate(ids):
            assert (codes[i] == codes[j]) == (a == b), (ids, codes)
