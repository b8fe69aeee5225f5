"""The constant string columns of the LSF tables (site, format, file, record type)."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from gridtrace.logs._lsf import _repeat


@given(st.text(max_size=12), st.integers(0, 50))
def test_a_repeated_value_is_the_list_of_it(value: str, n: int) -> None:
    column = _repeat(value, n)
    column.validate(full=True)
    assert column.type == pa.string()
    assert column.equals(pa.array([value] * n, pa.string()))
