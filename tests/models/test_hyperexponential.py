"""The bounded hyperexponential fit: recovery, the phase count BIC picks, stability, ranges.

Tolerances are stated against what a user relies on (parameters of known mixtures, the phase
count, the same answer on slightly different data), never against one optimiser's last digits.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.integrate

from gridtrace.errors import ConfigError, FitError
from gridtrace.models import (
    HyperExponentialRuntime,
    runtime_model_from_dict,
    select_hyperexponential,
)
from gridtrace.models._runtimes import HK_FLAT_WIDTHS, HK_MIN_PHASE_JOBS

H3_WEIGHTS = np.array([0.5, 0.35, 0.15])
H3_MEANS = np.array([30.0, 1000.0, 30_000.0])
H2_WEIGHTS = np.array([0.3, 0.7])
H2_MEANS = np.array([60.0, 20_000.0])


def mixture(n: int, weights: np.ndarray, means: np.ndarray, seed: int) -> np.ndarray:
    gen = np.random.default_rng(seed)
    phase = gen.choice(weights.shape[0], size=n, p=weights)
    return gen.exponential(means[phase])


def check_proper(m: HyperExponentialRuntime, n: int) -> None:
    """What a proper fit promises: phases inside the bounds, each holding enough runtimes."""
    assert m.refused_ is None
    lo, hi = m.mean_bounds_s_
    means = 1.0 / m.rates_
    assert np.all((means >= lo) & (means <= hi * (1 + 1e-9)))
    assert np.all(m.weights_ * n >= HK_MIN_PHASE_JOBS)
    assert m.weights_.sum() == pytest.approx(1.0)
    assert m.log_likelihood_ == pytest.approx(max(m.start_log_likelihoods_))
    assert m.converged_


# --- recovery and the phase count ----------------------------------------------------------------


def test_h3_is_recovered_and_chosen_at_2e4() -> None:
    # over ten seeds at N = 2e4 the largest errors were 0.007 on the weights and 3 %, 3 %, 7 %
    # on the rates (the long phase holds 15 % of the runtimes): the tolerances leave a margin
    x = mixture(20_000, H3_WEIGHTS, H3_MEANS, 101)
    best, bic = select_hyperexponential(x, k_max=4)
    assert best.n_phases == 3
    assert set(bic) == {1, 2, 3, 4}
    check_proper(best, x.shape[0])
    np.testing.assert_allclose(best.weights_, H3_WEIGHTS, atol=0.02)
    errors = np.abs(best.rates_ * H3_MEANS - 1.0)
    assert np.all(errors <= [0.06, 0.06, 0.15]), errors


@pytest.mark.parametrize(("n", "seed"), [(5000, 201), (5000, 202), (20_000, 203)])
def test_h2_is_recovered_and_chosen_from_5e3_to_2e4(n: int, seed: int) -> None:
    x = mixture(n, H2_WEIGHTS, H2_MEANS, seed)
    best, _ = select_hyperexponential(x, k_max=3)
    assert best.n_phases == 2
    check_proper(best, n)
    # at N = 5e3 the short phase (1,500 runtimes) has a 2.6 % standard error on its rate
    np.testing.assert_allclose(best.weights_, H2_WEIGHTS, atol=0.025)
    np.testing.assert_allclose(best.rates_ * H2_MEANS, 1.0, rtol=0.08)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bic_picks_one_phase_on_exponential_runtimes(seed: int) -> None:
    x = np.random.default_rng(seed).exponential(700.0, 10_000)
    best, bic = select_hyperexponential(x, k_max=3)
    assert best.n_phases == 1
    assert best.rates_[0] * 700.0 == pytest.approx(1.0, rel=0.04)
    # whatever the optimum of an H2 on one exponential is, it does not beat H1 by BIC
    assert bic[1] < bic[2]


# --- stability -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("weights", "means", "k_max"), [(H2_WEIGHTS, H2_MEANS, 3), (H3_WEIGHTS, H3_MEANS, 4)]
)
def test_same_answer_after_a_1_percent_jitter_or_dropping_2_percent(
    weights: np.ndarray, means: np.ndarray, k_max: int
) -> None:
    x = mixture(10_000 if k_max == 3 else 20_000, weights, means, 301)
    gen = np.random.default_rng(7)
    base, _ = select_hyperexponential(x, k_max=k_max)
    jittered, _ = select_hyperexponential(x * gen.uniform(0.99, 1.01, x.shape[0]), k_max=k_max)
    subsample, _ = select_hyperexponential(x[gen.random(x.shape[0]) >= 0.02], k_max=k_max)
    for other in (jittered, subsample):
        assert other.n_phases == base.n_phases == weights.shape[0]
        np.testing.assert_allclose(other.weights_, base.weights_, atol=0.01)
        np.testing.assert_allclose(other.rates_, base.rates_, rtol=0.02)


def test_the_fit_is_deterministic_and_its_starts_are_seeded() -> None:
    x = mixture(3000, H3_WEIGHTS, H3_MEANS, 5)
    a = HyperExponentialRuntime(3, n_init=5, rng=4).fit(x)
    b = HyperExponentialRuntime(3, n_init=5, rng=4).fit(x)
    assert a.to_dict() == b.to_dict()
    assert len(a.start_log_likelihoods_) == 5
    # more starts can only find a higher optimum (the first three starts are shared)
    c = HyperExponentialRuntime(3, n_init=3, rng=4).fit(x)
    assert a.log_likelihood_ >= c.log_likelihood_ - 1e-6


# --- ranges: the classes of a workload -----------------------------------------------------------


@pytest.mark.parametrize(
    ("lower", "upper", "means"), [(0.0, 900.0, [100.0, 3000.0]), (900.0, None, [1000.0, 10_000.0])]
)
def test_the_law_on_a_range_is_a_proper_distribution(
    lower: float, upper: float | None, means: list[float]
) -> None:
    x = mixture(20_000, np.array([0.5, 0.5]), np.array(means), 8)
    x = x[x <= upper] if upper is not None else x[x > lower]
    m = HyperExponentialRuntime(2, lower_s=lower, upper_s=upper).fit(x)
    check_proper(m, x.shape[0])
    top = upper if upper is not None else lower + 40 / float(m.rates_.min())
    total, _ = scipy.integrate.quad(lambda v: math.exp(m.logpdf(v)), lower, top, limit=200)
    assert total == pytest.approx(1.0, abs=1e-6)
    assert float(m.cdf(lower)) == 0.0
    assert float(m.cdf(top)) == pytest.approx(1.0, abs=1e-9)
    assert float(np.exp(m.logsf(lower))) == pytest.approx(1.0)
    u = np.array([0.01, 0.3, 0.5, 0.9, 0.999])
    np.testing.assert_allclose(m.cdf(m.ppf(u)), u, atol=1e-8)
    draws = m.sample(50_000, rng=2)
    assert draws.min() >= lower
    if upper is not None:
        assert draws.max() <= upper
    # the phase means on the range weighted by the weights give the range's mean
    assert draws.mean() == pytest.approx(float(m.weights_ @ m.phase_means_s_), rel=0.02)
    assert x.mean() == pytest.approx(float(m.weights_ @ m.phase_means_s_), rel=0.03)
    back = runtime_model_from_dict(json.loads(json.dumps(m.to_dict(), allow_nan=False)))
    assert back.to_dict() == m.to_dict()
    np.testing.assert_array_equal(back.sample(100, rng=3), m.sample(100, rng=3))


def test_each_class_range_recovers_its_phases() -> None:
    # interactive piece (0, 900] of an H2 with both means inside it; the weights are the shares
    # of the piece's runtimes, whatever the H2 puts beyond τ
    x = mixture(20_000, np.array([0.4, 0.6]), np.array([30.0, 400.0]), 9)
    piece = x[x <= 900.0]
    m = HyperExponentialRuntime(2, upper_s=900.0).fit(piece)
    check_proper(m, piece.shape[0])
    np.testing.assert_allclose(m.rates_, [1 / 30.0, 1 / 400.0], rtol=0.06)
    share = np.array([0.4, 0.6 * -math.expm1(-900.0 / 400.0)])
    np.testing.assert_allclose(m.weights_, share / share.sum(), atol=0.02)
    # batch piece (900, ∞) of another H2, censored at a walltime limit of 60,000 s: memoryless,
    # the excess over τ keeps the rates
    y = mixture(20_000, np.array([0.5, 0.5]), np.array([2000.0, 20_000.0]), 10) + 900.0
    b = HyperExponentialRuntime(2, lower_s=900.0).fit(y, censor_s=60_000.0)
    assert b.n_censored_ > 100
    check_proper(b, y.shape[0])
    np.testing.assert_allclose(b.rates_, [1 / 2000.0, 1 / 20_000.0], rtol=0.08)
    np.testing.assert_allclose(b.weights_, [0.5, 0.5], atol=0.02)


def test_a_flat_piece_on_a_bounded_range_is_a_flagged_flat_phase() -> None:
    # on (0, 900]: short jobs (mean 60 s) and jobs spread evenly over the range (as the bottom of
    # a phase of very long jobs is). The even ones are held at the bound of a phase mean, flagged
    # flat, with their share and their mean on the range, instead of the rate of 1e-13/s and raw
    # weight of 5e-8 an unbounded fit drifts to
    gen = np.random.default_rng(11)
    even = gen.random(8000) < 0.3
    piece = np.where(
        even, gen.uniform(0.0, 900.0, 8000), np.minimum(gen.exponential(60.0, 8000), 900.0)
    )
    m = HyperExponentialRuntime(2, upper_s=900.0).fit(piece)
    check_proper(m, piece.shape[0])
    assert m.flat_phases_.tolist() == [False, True]
    assert m.rates_[1] == pytest.approx(1.0 / (HK_FLAT_WIDTHS * 900.0))
    assert m.weights_[1] == pytest.approx(0.3, abs=0.02)
    assert m.phase_means_s_[1] == pytest.approx(450.0, rel=0.02)  # flat: the middle of the range
    assert m.rates_[0] * 60.0 == pytest.approx(1.0, rel=0.06)
    # a third phase has nothing to hold (two flat phases are one)
    assert HyperExponentialRuntime(3, upper_s=900.0).fit(piece).refused_ is not None


def test_a_phase_beyond_the_walltime_limit_is_refused() -> None:
    # 10 % of the jobs never finish: killed at their 20,000 s limit. An H2 would put them in a
    # phase of mean beyond every runtime the log holds: refused, and the choice stays at H1
    gen = np.random.default_rng(12)
    run = 900.0 + gen.exponential(2000.0, 5000)
    stuck = gen.random(5000) < 0.1
    run = np.where(stuck, 20_000.0, np.minimum(run, 20_000.0))
    h2 = HyperExponentialRuntime(2, lower_s=900.0).fit(run, censor_s=20_000.0)
    assert h2.refused_ is not None
    assert "pinned at the largest runtime or walltime limit (19100 s past 900 s)" in h2.refused_
    assert h2.mean_bounds_s_[1] == pytest.approx(19_100.0)


def test_an_atom_of_zeros_is_no_phase() -> None:
    # 20 % of the jobs failed at once (0 s): without a floor an H2 puts them in a phase whose
    # mean runs to the lower bound; refused, so the atom is not dressed up as an exponential
    gen = np.random.default_rng(13)
    x = np.where(gen.random(4000) < 0.2, 0.0, gen.exponential(500.0, 4000))
    h2 = HyperExponentialRuntime(2).fit(x)
    assert h2.refused_ is not None
    assert "half the smallest runtime" in h2.refused_


def test_range_and_argument_errors() -> None:
    x = np.array([10.0, 20.0, 950.0])
    with pytest.raises(FitError, match="outside the range"):
        HyperExponentialRuntime(1, upper_s=900.0).fit(x)
    with pytest.raises(FitError, match="outside the range"):
        HyperExponentialRuntime(1, lower_s=900.0).fit(x)
    with pytest.raises(ConfigError, match="upper_s"):
        HyperExponentialRuntime(1, lower_s=900.0, upper_s=100.0).fit(x)
    with pytest.raises(ConfigError, match="censoring"):
        HyperExponentialRuntime(1, upper_s=1000.0).fit(x, censor_s=900.0)
    with pytest.raises(ConfigError, match="n_init"):
        HyperExponentialRuntime(2, n_init=0).fit(x)
    with pytest.raises(FitError, match="lower end"):
        HyperExponentialRuntime(1).fit([0.0, 0.0])
    with pytest.raises(FitError, match="too few for 3 phases"):
        HyperExponentialRuntime(3).fit([1.0, 2.0])


def test_models_written_before_ranges_read_as_a_plain_hk() -> None:
    # the JSON of a model from before the bounded fit: no range, no bounds, "collapsed"
    old = {
        "kind": "hyperexponential",
        "params": {"floor_s": None, "n_phases": 2, "max_iter": 1000, "tol": 1e-10},
        "fitted": {
            "n_samples": 100,
            "n_censored": 0,
            "n_floored": 0,
            "log_likelihood": -700.0,
            "weights": [0.3, 0.7],
            "rates": [0.01, 0.0001],
            "n_iter": 12,
            "converged": True,
            "collapsed": None,
        },
    }
    m = runtime_model_from_dict(old)
    assert isinstance(m, HyperExponentialRuntime)
    assert (m.lower_s, m.upper_s, m.refused_) == (0.0, None, None)
    assert m.flat_phases_.tolist() == [False, False]
    x = np.array([10.0, 1000.0])
    expected = np.log(0.3 * 0.01 * np.exp(-0.01 * x) + 0.7 * 1e-4 * np.exp(-1e-4 * x))
    np.testing.assert_allclose(m.logpdf(x), expected, rtol=1e-12)
