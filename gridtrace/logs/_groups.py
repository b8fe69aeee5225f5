"""Grouping of integer columns with numpy alone: the few pandas operations the readers need.

pandas takes about 0.4 s to import, which ``gridtrace parse`` of one day's file should not pay.
Each function here gives what the pandas call named in its docstring gives on integer columns
(``tests/logs/test_groups.py`` checks them against pandas). numpy groups by sorting, pandas by
hashing, which is ten times faster on a million rows: from :data:`PANDAS_ROWS` rows on, the
functions call pandas, whose import is then a small part of the time.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = ["PANDAS_ROWS", "duplicated", "first_seen_codes", "segment_bfill", "segment_ffill"]

PANDAS_ROWS = 100_000
"""Rows from which the groupings are left to pandas (same results, faster on many rows)."""

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]


def _row_codes(columns: tuple[npt.NDArray[np.integer], ...]) -> tuple[I64, I64]:
    """Codes of equal rows (sorted order) and, per code, the first row that has it."""
    n = len(columns[0])
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if len(columns) == 1:  # a plain sort: several times faster than rows of one column
        keys = np.asarray(columns[0], dtype=np.int64)
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    else:
        stacked = np.stack([np.asarray(c, dtype=np.int64) for c in columns], axis=1)
        _, first, inverse = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
    return np.asarray(inverse, dtype=np.int64).reshape(n), np.asarray(first, dtype=np.int64)


def first_seen_codes(*columns: npt.NDArray[np.integer]) -> I64:
    """Give each distinct row of integer columns a number, in order of first appearance.

    What ``pd.factorize`` gives on one column, and ``DataFrame.groupby(cols, sort=False).ngroup()``
    on several.
    """
    if len(columns[0]) >= PANDAS_ROWS:
        import pandas as pd

        if len(columns) == 1:
            return np.asarray(pd.factorize(np.asarray(columns[0]))[0], dtype=np.int64)
        frame = pd.DataFrame({str(i): np.asarray(c) for i, c in enumerate(columns)})
        codes = frame.groupby(list(frame.columns), sort=False).ngroup().to_numpy()
        return np.asarray(codes, dtype=np.int64)
    inverse, first = _row_codes(columns)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first), dtype=np.int64)
    return rank[inverse]


def duplicated(
    *columns: npt.NDArray[np.integer], keep: Literal["first", "none"] = "first"
) -> Bools:
    """Rows equal to an earlier row (``keep="first"``) or to any other row (``keep="none"``).

    What ``DataFrame.duplicated(keep="first")`` and ``DataFrame.duplicated(keep=False)`` give.
    """
    if len(columns[0]) >= PANDAS_ROWS:
        import pandas as pd

        frame = pd.DataFrame({str(i): np.asarray(c) for i, c in enumerate(columns)})
        found = frame.duplicated(keep="first" if keep == "first" else False).to_numpy()
        return np.asarray(found, dtype=bool)
    inverse, first = _row_codes(columns)
    if keep == "first":
        return np.asarray(first[inverse] != np.arange(len(inverse)), dtype=bool)
    counts = np.bincount(inverse, minlength=len(first))
    return np.asarray(counts[inverse] > 1, dtype=bool)


def segment_ffill(values: F64, segment: npt.NDArray[np.integer]) -> F64:
    """Carry the last non-NaN value forward within each segment: ``Series.groupby(seg).ffill()``."""
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    if n == 0:
        return values.copy()
    segment = np.asarray(segment)
    if bool(np.all(segment[1:] >= segment[:-1])):  # runs in order (a file's lines): no sort
        order = None
        sorted_values, sorted_segment = values, segment
    else:
        order = np.argsort(segment, kind="stable")
        sorted_values = values[order]
        sorted_segment = segment[order]
    position = np.arange(n, dtype=np.int64)
    starts = np.ones(n, dtype=bool)
    starts[1:] = sorted_segment[1:] != sorted_segment[:-1]
    segment_start = np.maximum.accumulate(np.where(starts, position, 0))
    last = np.maximum.accumulate(np.where(np.isnan(sorted_values), -1, position))
    found = last >= segment_start
    filled: F64 = np.where(found, sorted_values[np.maximum(last, 0)], np.nan)
    if order is None:
        return filled
    result = np.empty(n, dtype=np.float64)
    result[order] = filled
    return result


def segment_bfill(values: F64, segment: npt.NDArray[np.integer]) -> F64:
    """Carry the next non-NaN value backward within each segment: ``groupby(seg).bfill()``."""
    values = np.asarray(values, dtype=np.float64)
    segment = np.asarray(segment)
    backwards = segment[::-1]
    if len(segment) > 1 and bool(np.all(segment[1:] >= segment[:-1])):
        # runs in order: number them along the reversed rows, so that no sort is needed
        change = np.zeros(len(segment), dtype=np.int64)
        change[1:] = backwards[1:] != backwards[:-1]
        backwards = np.cumsum(change)
    return segment_ffill(values[::-1], backwards)[::-1].copy()
