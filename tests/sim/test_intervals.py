"""Intervals of a mean over seeds: inside the metric's range, deterministic, edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from gridtrace.errors import ConfigError
from gridtrace.sim import Interval, mean_interval


def test_no_values_gives_no_mean() -> None:
    r = mean_interval([], bounds=(0.0, 1.0))
    assert (r.mean, r.low, r.high, r.std, r.n, r.n_dropped) == (None, None, None, None, 0, 0)
    assert r.method == "no-values"
    assert mean_interval([None, math.nan]).n_dropped == 2


def test_one_value_gives_a_mean_without_interval() -> None:
    r = mean_interval([0.7, math.nan, None, math.inf])
    assert (r.mean, r.low, r.high, r.std) == (0.7, None, None, None)
    assert (r.n, r.n_dropped, r.method) == (1, 3, "single-value")


@pytest.mark.parametrize("values", [[0.3, 0.9], [0.3, 0.9, 0.5], [0.3, 0.9, 0.5, 0.4]])
def test_two_to_four_values_give_their_range(values: list[float]) -> None:
    r = mean_interval(values, bounds=(0.0, 1.0))
    assert r.method == "expanded-percentile-bootstrap"
    assert (r.low, r.high) == (min(values), max(values))
    assert r.mean == pytest.approx(float(np.mean(values)))
    assert r.n == len(values)


def test_all_equal_values_give_a_point() -> None:
    r = mean_interval([1.0] * 7, bounds=(0.0, 1.0))
    assert (r.mean, r.low, r.high, r.std, r.method) == (1.0, 1.0, 1.0, 0.0, "all-values-equal")
    # 0.1 summed seven times is not 0.7 exactly: the mean must still be the value itself
    r = mean_interval([0.1] * 7)
    assert r.mean == r.low == r.high == 0.1


def test_about_as_wide_as_the_t_interval_for_ten_seeds() -> None:
    x = np.linspace(0.5, 0.95, 10)
    r = mean_interval(x, bounds=(0.0, 1.0))
    half = sps.t.ppf(0.975, 9) * x.std(ddof=1) / math.sqrt(10)
    assert r.low is not None
    assert r.high is not None
    assert r.high - r.low == pytest.approx(2 * half, rel=0.1)
    assert r.std == pytest.approx(float(x.std(ddof=1)))


def test_near_the_bound_the_t_interval_leaves_the_range_and_this_does_not() -> None:
    w = [1.0, 1.0, 1.0, 0.99, 1.0, 0.6, 1.0, 1.0, 1.0, 1.0]
    half = sps.t.ppf(0.975, 9) * np.std(w, ddof=1) / math.sqrt(10)
    assert np.mean(w) + half > 1.0  # what the old t-interval reported
    r = mean_interval(w, bounds=(0.0, 1.0))
    assert r.high is not None
    assert r.high <= 1.0
    assert r.low is not None
    assert r.low >= 0.6


def test_deterministic_with_a_seed_and_independent_of_call_order() -> None:
    x = [0.2, 0.4, 0.45, 0.9, 0.55, 0.61, 0.3]
    a = mean_interval(x, seed=3)
    mean_interval([5.0, 6.0, 7.0, 8.0, 9.0], seed=3)  # draws in between change nothing
    b = mean_interval(x, seed=3)
    assert a == b
    assert isinstance(a, Interval)
    assert a.to_dict()["seed"] == 3
    c = mean_interval(x, seed=4)
    assert (c.low, c.high) != (a.low, a.high)
    assert a.resamples == 9999


def test_values_outside_the_bounds_are_an_error_round_off_is_not() -> None:
    with pytest.raises(ConfigError, match="outside the metric's range"):
        mean_interval([0.5, 1.2], bounds=(0.0, 1.0))
    r = mean_interval([1.0 + 1e-12, 0.5, 0.8], bounds=(0.0, 1.0))
    assert r.high is not None
    assert r.high <= 1.0
    with pytest.raises(ConfigError, match="low <= high"):
        mean_interval([0.5], bounds=(1.0, 0.0))
    with pytest.raises(ConfigError, match="level"):
        mean_interval([0.5], level=1.0)
    with pytest.raises(ConfigError, match="resamples"):
        mean_interval([0.5], resamples=0)


def test_many_values_use_bounded_memory() -> None:
    x = np.random.default_rng(1).uniform(0.0, 1.0, size=20_000)
    r = mean_interval(x, bounds=(0.0, 1.0), resamples=200)
    assert r.low is not None
    assert r.high is not None
    assert r.low < 0.5 < r.high


_unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
_waits = st.floats(min_value=0.0, max_value=1e7, allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(st.one_of(_unit, st.none(), st.just(math.nan)), max_size=40),
    level=st.floats(min_value=0.5, max_value=0.999),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_interval_never_leaves_the_unit_range(
    values: list[float | None], level: float, seed: int
) -> None:
    r = mean_interval(values, level=level, bounds=(0.0, 1.0), resamples=500, seed=seed)
    finite = [v for v in values if v is not None and math.isfinite(v)]
    assert r.n == len(finite)
    assert r.n + r.n_dropped == len(values)
    if r.n >= 2:
        assert r.low is not None
        assert r.high is not None
        assert r.mean is not None
        assert 0.0 <= min(finite) <= r.low <= r.mean <= r.high <= max(finite) <= 1.0
    else:
        assert r.low is None
        assert r.high is None


@settings(max_examples=100, deadline=None)
@given(values=st.lists(_waits, min_size=2, max_size=30))
def test_interval_of_waits_stays_non_negative(values: list[float]) -> None:
    r = mean_interval(values, bounds=(0.0, math.inf), resamples=300)
    assert r.low is not None
    assert r.high is not None
    assert r.mean is not None
    assert 0.0 <= min(values) <= r.low <= r.mean <= r.high <= max(values)
