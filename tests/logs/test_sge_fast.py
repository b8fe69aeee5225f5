"""The Grid Engine assembler takes its record rows by slices: the same rows as ``take``."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from gridtrace.logs import _sge
from gridtrace.logs._sge import _take_runs


@given(st.sets(st.integers(0, 199), max_size=200), st.integers(1, 5))
def test_slices_give_the_rows_take_gives(picked: set[int], chunks: int) -> None:
    n = 200
    table = pa.table(
        {
            "line": np.arange(n),
            "attrs": pa.array(
                [[("k", str(i))] for i in range(n)], pa.map_(pa.string(), pa.string())
            ),
        }
    )
    bounds = np.linspace(0, n, chunks + 1).astype(int)
    table = pa.concat_tables([table.slice(int(a), int(b - a)) for a, b in pairwise(bounds)])
    rows = np.array(sorted(picked), dtype=np.int64)
    assert _take_runs(table, rows).equals(table.take(pa.array(rows, pa.int64())))


def test_many_runs_fall_back_to_take() -> None:
    table = pa.table({"line": np.arange(1000)})
    rows = np.arange(0, 1000, 2)
    assert len(rows) > _sge._MAX_RUNS
    assert _take_runs(table, rows).column("line").to_pylist() == list(range(0, 1000, 2))
