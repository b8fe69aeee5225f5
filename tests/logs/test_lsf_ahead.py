"""The LSF finishing kernels read the same with their loads made rows ahead, and names cached.

``_read_numbers`` loads the strings of a row a few rows ahead of the one it
works on (:func:`gridtrace.logs._lsf_fast._touch_ahead`): those loads must never change what is
read, nor read outside the strings (an index of -1, an empty string at the end of the data,
fewer rows than the distance ahead). The names of a row are encoded once per list
(``_encoded``, cached): the keys written and the positions found must be those of the names
given, whichever list was asked for before.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridtrace.logs import _lsf, _lsf_fast

pytestmark = pytest.mark.skipif(not _lsf_fast.HAVE_NUMBA, reason="numba is not installed")

_NUMBER = st.one_of(
    st.just(""),
    st.from_regex(r"-?[0-9]{1,16}(\.[0-9]{1,4})?", fullmatch=True),
    st.sampled_from(["x", "1e5", "5.", "-"]),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_NUMBER, min_size=1, max_size=20),
    st.integers(1, 4),
    st.integers(0, 3 * _lsf_fast._AHEAD),
    st.data(),
)
def test_numbers_of_many_fields_are_those_of_each_field_alone(
    texts: list[str], fields: int, rows: int, data: st.DataObject
) -> None:
    assert _lsf_fast.compile_kernel()
    strings = pa.array([*texts, ""], pa.string())  # an empty string last: offset = data size
    index = np.array(
        data.draw(
            st.lists(st.integers(-1, len(texts)), min_size=fields * rows, max_size=fields * rows)
        ),
        dtype=np.int64,
    ).reshape(fields, rows)
    read = _lsf_fast.read_numbers(strings, index)
    assert read is not None
    values, slow = read
    assert values.shape == slow.shape == (fields, rows)
    for j in range(fields):  # each field alone, and as the reference reads it
        alone = _lsf_fast.read_numbers(strings, index[j])
        assert alone is not None
        assert np.array_equal(values[j].view(np.int64), alone[0].view(np.int64))
        assert np.array_equal(slow[j], alone[1])
        picked = strings.take(pa.array(index[j], mask=index[j] < 0))
        expected, _ = _lsf._floats(picked)
        fast = ~slow[j]
        assert np.array_equal(values[j][fast].view(np.int64), expected[fast].view(np.int64))


def test_gathered_strings_at_the_end_of_the_data_and_fewer_rows_than_ahead() -> None:
    assert _lsf_fast.compile_kernel()
    strings = pa.array(["a", "bc", ""], pa.string())  # the last string: at the data's end
    for rows in range(2 * _lsf_fast._AHEAD + 1):
        index = (np.arange(2 * rows, dtype=np.int64).reshape(2, rows) % 4) - 1  # -1 to 2
        gathered = _lsf_fast.gather_strings([(strings, index)])
        assert gathered is not None
        for j, column in enumerate(gathered):
            column.validate(full=True)
            assert column.equals(strings.take(pa.array(index[j], mask=index[j] < 0)))


def test_names_written_are_those_asked_for_whichever_list_came_before() -> None:
    assert _lsf_fast.compile_kernel()
    first = ["jobId", "idx", "é"]
    second = ["queue", "", "userName", "jobId"]
    for names in (first, second, first, []):
        starts = np.array([0, 1], dtype=np.int64) if names else np.zeros(0, dtype=np.int64)
        lengths = np.array([len(names), len(names) - 1], dtype=np.int64) if names else starts
        keys = _lsf_fast.name_runs(names, starts, lengths)
        assert keys is not None
        assert keys.to_pylist() == [*names, *names[1:]]
    offsets, data = _lsf_fast._encoded(tuple(second))
    with pytest.raises(ValueError, match="read-only"):
        offsets[0] = 1  # shared by every caller: never written
    with pytest.raises(ValueError, match="read-only"):
        data[0] = 1
