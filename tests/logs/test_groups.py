"""The numpy groupings that replace pandas in the TORQUE assembly give what pandas gives."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _groups
from gridtrace.logs._groups import duplicated, first_seen_codes, segment_bfill, segment_ffill


@pytest.fixture(autouse=True, params=["numpy", "pandas"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test on both paths: numpy's (small inputs) and pandas' (from PANDAS_ROWS rows)."""
    monkeypatch.setattr(_groups, "PANDAS_ROWS", 1 << 62 if request.param == "numpy" else 0)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data(), st.integers(0, 40))
def test_first_seen_codes_is_groupby_ngroup_unsorted(data: st.DataObject, n: int) -> None:
    a = np.array(data.draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)), dtype=np.int64)
    b = np.array(data.draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)), dtype=np.int64)
    expected = pd.DataFrame({"a": a, "b": b}).groupby(["a", "b"], sort=False).ngroup().to_numpy()
    np.testing.assert_array_equal(first_seen_codes(a, b), expected)
    np.testing.assert_array_equal(first_seen_codes(a), pd.factorize(a)[0])


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data(), st.integers(0, 40))
def test_duplicated_is_pandas_duplicated(data: st.DataObject, n: int) -> None:
    a = np.array(data.draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)), dtype=np.int64)
    b = np.array(data.draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)), dtype=np.int64)
    frame = pd.DataFrame({"a": a, "b": b})
    np.testing.assert_array_equal(duplicated(a, b), frame.duplicated().to_numpy())
    np.testing.assert_array_equal(
        duplicated(a, keep="none"), pd.Series(a).duplicated(keep=False).to_numpy()
    )


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data(), st.integers(0, 40))
def test_segment_fills_are_groupby_fills(data: st.DataObject, n: int) -> None:
    value = st.one_of(st.just(float("nan")), st.integers(-5, 5).map(float))
    values = np.array(data.draw(st.lists(value, min_size=n, max_size=n)), dtype=np.float64)
    segment = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    by = pd.Series(values, dtype=np.float64).groupby(segment)
    np.testing.assert_array_equal(segment_ffill(values, segment), by.ffill().to_numpy())
    np.testing.assert_array_equal(segment_bfill(values, segment), by.bfill().to_numpy())
