"""The LSF assembler's prefilter of repeated records hashes in the kernel, as ``may_repeat`` joins.

:func:`gridtrace.logs._lsf._may_repeat` picks the ``JOB_FINISH`` rows whose job id and stamp
another row shares by a 64-bit hash of each (:func:`gridtrace.logs._lsf_fast.string_hashes`)
instead of joining and dictionary-encoding the texts. It may pick more rows than
:func:`gridtrace.logs._prefilter.may_repeat` (a hash shared by chance), never fewer, and
``repeated_rows`` answers the same from either. These tests check both, on ids and stamps with
nulls, empty texts and near-equal texts, over several chunks.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridtrace.logs import _lsf, _lsf_fast
from gridtrace.logs._attrs import repeated_rows
from gridtrace.logs._prefilter import may_repeat

pytestmark = pytest.mark.skipif(not _lsf_fast.HAVE_NUMBA, reason="numba is not installed")

# few texts, so that rows share them often; "1" and "11" or "" and null must stay apart
_TEXT = st.one_of(st.none(), st.sampled_from(["", "1", "11", "12[3]", "1700000000", "é"]))


def _records(ids: list[str | None], stamps: list[str | None], cut: int) -> pa.Table:
    """A table of the two columns both prefilters read, in two chunks cut at ``cut``."""

    def column(values: list[str | None]) -> pa.ChunkedArray:
        cut_at = min(cut, len(values))
        return pa.chunked_array(
            [pa.array(values[:cut_at], pa.string()), pa.array(values[cut_at:], pa.string())]
        )

    return pa.table({"job_id_raw": column(ids), "stamp": column(stamps)})


@pytest.fixture(scope="module", autouse=True)
def _kernel() -> None:
    assert _lsf_fast.compile_kernel()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(_TEXT, _TEXT, st.booleans()), min_size=0, max_size=40),
    st.integers(0, 40),
)
def test_the_kernel_picks_every_row_may_repeat_picks(
    rows: list[tuple[str | None, str | None, bool]], cut: int
) -> None:
    records = _records([r[0] for r in rows], [r[1] for r in rows], cut)
    among = np.array([r[2] for r in rows], dtype=bool)
    expected = may_repeat(records, among)
    picked = _lsf._may_repeat(records, among)
    assert not (expected & ~picked).any()  # never fewer
    assert not (picked & ~among).any()  # only rows it may compare
    # without a hash shared by chance (none among these few texts), exactly the same rows
    np.testing.assert_array_equal(picked, expected)


def test_repeated_rows_answers_the_same_from_either() -> None:
    keys = pa.array(["jobId", "eventTime", "x"] * 6)
    values = pa.array(
        ["1", "5", "a", "1", "5", "a", "1", "5", "b", "2", "5", "a", "2", "5", "a", "1", "6", "a"]
    )
    attrs = pa.MapArray.from_arrays(pa.array(np.arange(0, 19, 3), pa.int32()), keys, values)
    records = _records(["1", "1", "1", "2", "2", "1"], ["5", "5", "5", "5", "5", "6"], 2)
    among = np.ones(6, dtype=bool)
    picked = _lsf._may_repeat(records, among)
    np.testing.assert_array_equal(picked, [True, True, True, True, True, False])
    for got, want in zip(
        repeated_rows(attrs, picked), repeated_rows(attrs, may_repeat(records, among)), strict=True
    ):
        np.testing.assert_array_equal(got, want)
    copies, repeated = repeated_rows(attrs, picked)
    np.testing.assert_array_equal(copies, [False, True, False, False, True, False])
    np.testing.assert_array_equal(repeated, [True, False, False, True, False, False])


def test_equal_strings_hash_equal_across_chunks_and_nulls_apart() -> None:
    texts = ["", None, "a", "ab", "a", None, "", "ab" * 50]
    whole = _lsf_fast.string_hashes(pa.array(texts, pa.string()))
    chunked = _lsf_fast.string_hashes(
        pa.chunked_array([pa.array(texts[:3], pa.string()), pa.array(texts[3:], pa.string())])
    )
    sliced = _lsf_fast.string_hashes(pa.array(["x", *texts], pa.string()).slice(1))
    assert whole is not None
    assert chunked is not None
    assert sliced is not None
    np.testing.assert_array_equal(whole, chunked)
    np.testing.assert_array_equal(whole, sliced)
    assert whole[2] == whole[4]  # "a"
    assert whole[0] == whole[6]  # ""
    assert whole[1] == whole[5]  # null
    assert len({int(h) for h in whole}) == 5  # "", null, "a", "ab", "ab" * 50
