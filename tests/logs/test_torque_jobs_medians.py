"""The median stamp of a file: the same with the stamp kernel as with ``strptime`` alone.

Large logs read their files' stamps with the assembly's kernel to put the files in time order;
stamps it does not read (other forms, impossible dates, nulls) go to ``strptime``, and an
unreadable stamp counts in neither. The medians, and so the file order, do not change.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridtrace.logs import _torque, _torque_jobs, _torque_jobs_fast

pytestmark = pytest.mark.skipif(not _torque_jobs_fast.HAVE_NUMBA, reason="numba is not installed")

_STAMPS = st.one_of(
    st.builds(
        "{:02d}/{:02d}/{:04d} {:02d}:{:02d}:{:02d}".format,
        st.integers(0, 13),
        st.integers(0, 32),
        st.integers(900, 2400),
        st.integers(0, 24),
        st.integers(0, 60),
        st.integers(0, 61),
    ),
    st.sampled_from(
        ["02/29/2024 12:00:00", "02/29/2023 12:00:00", "1/2/2024 3:04:05", "", "x", None]
    ),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_STAMPS, max_size=20), min_size=1, max_size=4))
def test_median_stamp_is_the_same_with_the_kernel(chunks: list[list[str | None]]) -> None:
    column = pa.chunked_array([pa.array(chunk, pa.string()) for chunk in chunks], pa.string())
    fast = _torque_jobs.median_stamp(column, kernel=True)
    slow = _torque_jobs.median_stamp(column, kernel=False)
    assert fast == slow
    records = pa.table({"stamp": column})
    assert _torque._median_stamp(records, kernel=True) == _torque._median_stamp(records) == slow
