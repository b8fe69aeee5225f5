"""The job attribute kernel reuses a value written as in the row before: same columns as Arrow's.

``_htcondor_fast.job_values`` does not read again a numeric value whose text is the previous
row's; these checks put each kind of value (numbers, expressions, text, nulls, numbers left to
the caller) in runs of rows, with nearly equal values between them, and compare every column
with the reference's Arrow reading.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _htcondor_fast
from gridtrace.logs._htcondor import _AdValues

from ._htcondor_compare import assert_same_ad_values

pytestmark = pytest.mark.skipif(not _htcondor_fast.HAVE_NUMBA, reason="numba is not installed")

# values that equal the one before or nearly (a digit more, another sign, a prefix)
_TEXTS = [
    "1700000000",
    "17000000001",
    "1700000000.5",
    "-5",
    "5",
    "-0",
    "3600.0",
    "3600.00",
    "1e5",
    "+5",
    "/Expr(a)/",
    "/Expr(",
    "slot1@host",
    "null",
    "",
    "true",
]
_VALUE = st.one_of(st.none(), st.sampled_from(_TEXTS))
_NAMES = ["ClusterId", "ProcId", "QDate", "RequestCpus", "ExitCode", "ExitBySignal", "Owner"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.lists(_VALUE, min_size=len(_NAMES), max_size=len(_NAMES)), st.integers(1, 3)),
        min_size=1,
        max_size=6,
    ),
    st.booleans(),
)
def test_runs_of_repeated_values_read_as_arrow_reads(
    runs: list[tuple[list[str | None], int]], split: bool
) -> None:
    rows = []
    for values, times in runs:
        row = [(k, v) for k, v in zip(_NAMES, values, strict=True)]
        rows += [row] * times
    assert_same_ad_values(pa.array(rows, pa.map_(pa.string(), pa.string())), split=split)


def test_a_repeated_expression_flags_every_row() -> None:
    row = [("ClusterId", "1"), ("ProcId", "0"), ("QDate", "/Expr(now)/"), ("ExitCode", "x")]
    attrs = pa.array([row, row, row], pa.map_(pa.string(), pa.string()))
    values = _AdValues(attrs, 3, kernel=True)
    assert values.expression.tolist() == [True, True, True]
    assert values.unreadable.tolist() == [True, True, True]
    assert np.isnan(values.num("QDate")).all()
    assert values.num("ClusterId").tolist() == [1.0, 1.0, 1.0]
