"""Poisson and piecewise Poisson arrivals, runtime models, fit-quality helpers."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.stats

from gridtrace.errors import FitError, NotFittedError
from gridtrace.models import (
    EmpiricalRuntime,
    ExponentialRuntime,
    GammaRuntime,
    HyperExponentialRuntime,
    LogNormalRuntime,
    MMPPArrivals,
    PiecewisePoissonArrivals,
    PoissonArrivals,
    WeibullRuntime,
    anderson_darling,
    arrival_epochs,
    ctmc_mmpp_arrival_times,
    heldout_log_likelihood,
    hk_collapse,
    ks_statistic,
    runtime_model_from_dict,
    select_hyperexponential,
)

# --- Poisson ------------------------------------------------------------------------------------


def test_poisson_mle_and_exact_interval_on_literal_times() -> None:
    m = PoissonArrivals().fit([0.0, 1.0, 3.0, 6.0])
    assert m.rate_ == pytest.approx(0.5)
    lo, hi = m.rate_interval_
    assert lo == pytest.approx(scipy.stats.chi2.ppf(0.025, 6) / 12)
    assert hi == pytest.approx(scipy.stats.chi2.ppf(0.975, 6) / 12)
    assert m.log_likelihood_ == pytest.approx(3 * math.log(0.5) - 3)
    assert m.bic([0.0, 1.0, 3.0, 6.0]) == pytest.approx(-2 * m.log_likelihood_ + math.log(3))


def test_poisson_interval_covers_the_true_rate_95_percent_of_the_time() -> None:
    gen = np.random.default_rng(17)
    reps, hits = 2000, 0
    for _ in range(reps):
        times = np.cumsum(gen.exponential(1 / 0.3, 21))
        lo, hi = PoissonArrivals().fit(times).rate_interval_
        hits += lo <= 0.3 <= hi
    # binomial sd at 95 % over 2000 reps is 0.49 %: 3 sd either side
    assert 0.935 <= hits / reps <= 0.965


def test_poisson_unfitted_and_bad_input() -> None:
    with pytest.raises(NotFittedError):
        PoissonArrivals().score([0.0, 1.0])
    with pytest.raises(FitError, match="at least 2"):
        PoissonArrivals().fit([1.0])
    with pytest.raises(FitError, match="distinct"):
        PoissonArrivals().fit([3.0, 3.0, 3.0])


def test_poisson_sample_is_deterministic_and_has_the_rate() -> None:
    m = PoissonArrivals().fit(np.cumsum(np.random.default_rng(1).exponential(2.0, 5000)))
    a, b = m.sample(20_000, rng=3), m.sample(20_000, rng=3)
    np.testing.assert_array_equal(a, b)
    assert 20_000 / a[-1] == pytest.approx(m.rate_, rel=0.03)
    h = m.sample(horizon_s=1e4, rng=4)
    assert h.max() <= 1e4
    assert h.shape[0] == pytest.approx(1e4 * m.rate_, rel=0.05)


def test_arrival_epochs_groups_equal_stamps() -> None:
    epochs, sizes = arrival_epochs([1.0, 1.0, 2.0, 5.0, 5.0, 5.0])
    assert epochs.tolist() == [1.0, 2.0, 5.0]
    assert sizes.tolist() == [2, 1, 3]


def test_batch_sizes_are_kept_and_resampled() -> None:
    times = [0.0, 0.0, 0.0, 4.0, 10.0, 10.0, 13.0]
    m = PoissonArrivals().fit(times)
    assert m.n_intervals_ == 3
    assert m.n_arrivals_ == 7
    assert m.batch_sizes_.tolist() == [1, 2, 3]
    assert m.batch_counts_.tolist() == [2, 1, 1]
    assert m.rate_ == pytest.approx(3 / 13)
    assert PoissonArrivals(ties="keep").fit(times).rate_ == pytest.approx(6 / 13)


# --- piecewise Poisson ----------------------------------------------------------------------------


def test_piecewise_poisson_rates_on_a_literal_two_bucket_example() -> None:
    # period 100 s, 2 buckets; window 0 → 200 covers each bucket for 100 s
    times = [0.0, 10.0, 20.0, 30.0, 60.0, 110.0, 120.0, 130.0, 140.0, 200.0]
    m = PiecewisePoissonArrivals(period_s=100.0, n_buckets=2).fit(times)
    # arrivals after the first: bucket 0 gets 10, 20, 30, 110, 120, 130, 140 and 200 (phase 0)
    assert m.rates_.tolist() == pytest.approx([8 / 100, 1 / 100])
    expected = 8 * math.log(0.08) + math.log(0.01) - (0.08 * 100 + 0.01 * 100)
    assert m.log_likelihood_ == pytest.approx(expected)
    assert m.unobserved_buckets_ == []


def test_piecewise_poisson_recovers_a_daily_profile_and_samples_it() -> None:
    truth = PiecewisePoissonArrivals(n_buckets=4, offset_s=3600.0)
    truth.fit(np.arange(0.0, 86_400.0 * 2, 100.0))
    truth.rates_ = np.array([0.01, 0.05, 0.1, 0.02])
    times = truth.sample(horizon_s=86_400.0 * 30, rng=2)
    fit = PiecewisePoissonArrivals(n_buckets=4, offset_s=3600.0).fit(times)
    np.testing.assert_allclose(fit.rates_, truth.rates_, rtol=0.05)
    assert fit.score(times) > PoissonArrivals().fit(times).score(times) + 1000
    back = PiecewisePoissonArrivals.from_dict(json.loads(json.dumps(fit.to_dict())))
    assert back.to_dict() == fit.to_dict()
    np.testing.assert_array_equal(back.sample(50, rng=1), fit.sample(50, rng=1))


def test_piecewise_poisson_lists_buckets_it_never_saw() -> None:
    m = PiecewisePoissonArrivals(period_s=100.0, n_buckets=4).fit([0.0, 10.0, 20.0, 40.0])
    assert m.unobserved_buckets_ == [2, 3]
    assert m.rates_[2] == pytest.approx(3 / 40)


# --- runtimes -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("f", "mu"), [(0.1, 1.1707e-4), (0.5, 7.7016e-4)])
def test_exponential_from_interactive_fraction_matches_the_presets(f: float, mu: float) -> None:
    m = ExponentialRuntime.from_interactive_fraction(f, 900.0)
    assert f"{m.rate_:.4e}" == f"{mu:.4e}"
    assert m.cdf(900.0) == pytest.approx(f)
    back = ExponentialRuntime.from_dict(json.loads(json.dumps(m.to_dict())))
    assert back.rate_ == m.rate_


def test_exponential_censored_mle() -> None:
    m = ExponentialRuntime().fit([1.0, 2.0, 10.0, 10.0], censor_s=10.0)
    assert m.n_censored_ == 2
    assert m.rate_ == pytest.approx(2 / 23)
    x = np.random.default_rng(5).exponential(1000.0, 50_000)
    naive = ExponentialRuntime().fit(np.minimum(x, 800.0))
    cens = ExponentialRuntime().fit(x, censor_s=800.0)
    assert cens.rate_ == pytest.approx(1e-3, rel=0.02)
    assert naive.rate_ > 1.5e-3  # treating the limit as a runtime biases the mean low


def h2_sample(n: int, seed: int) -> np.ndarray:
    gen = np.random.default_rng(seed)
    short = gen.random(n) < 0.3
    return np.where(short, gen.exponential(60.0, n), gen.exponential(20_000.0, n))


def test_h2_recovered_within_1_5_percent_at_1e4() -> None:
    # models.md §3.5/§5.9: the mean parameter error (over p, μ1, μ2), median over 20 replicates;
    # per parameter the short phase's rate alone has a 1.8 % standard error at N = 1e4
    errs = []
    for r in range(20):
        m = HyperExponentialRuntime(2).fit(h2_sample(10_000, 50 + r))
        assert m.converged_
        errs.append(
            [abs(m.weights_[0] / 0.3 - 1), abs(m.rates_[0] * 60 - 1), abs(m.rates_[1] * 20_000 - 1)]
        )
    assert np.median(np.mean(errs, axis=1)) <= 0.015, np.median(errs, axis=0)
    assert np.all(np.median(errs, axis=0) <= 0.025), np.median(errs, axis=0)


def test_bic_picks_h2_on_h2_data_and_h1_on_exponential_data() -> None:
    # and without a ConvergenceWarning (an error here): the bounded H3 fit meets its tolerance
    best, bic = select_hyperexponential(h2_sample(5000, 60), k_max=3)
    assert best.n_phases == 2
    assert set(bic) == {1, 2, 3}
    best1, _ = select_hyperexponential(np.random.default_rng(2).exponential(50.0, 5000), k_max=3)
    assert best1.n_phases == 1


def test_hk_collapse_names_a_phase_without_jobs_and_equal_rates() -> None:
    # a phase holding less than one of the n runtimes
    reason = hk_collapse([0.9995, 0.0005], [1e-2, 1e-4], 1000)
    assert reason is not None
    assert "holds 0.5 of 1000 runtimes" in reason
    assert hk_collapse([0.999, 0.001], [1e-2, 1e-4], 1000) is None  # exactly one job: kept
    # two rates within 1 % are one phase (SCV − 1 ≤ 2.5e−5), 2 % apart are not
    assert "same rate within 1 %" in str(hk_collapse([0.4, 0.6], [1.000e-3, 0.995e-3], 5000))
    assert hk_collapse([0.4, 0.6], [1.00e-3, 0.98e-3], 5000) is None
    # on a bounded range (0, τ], two rates both ≪ 1/τ are the same flat phase
    flat = [6.39e-15, 7.8e-39]
    assert hk_collapse([0.5, 0.5], flat, 500) is None
    assert "same on (0, 900 s]" in str(hk_collapse([0.5, 0.5], flat, 500, span_s=900.0))
    # the demo's interactive H2 after its truncated fit: raw weights [3.5e-11, 1] look collapsed,
    # but on (0, 900 s] the phases hold 83 % and 17 % of the 1,330 jobs (an exponential and a
    # flat phase): judged on the class range, it is not collapsed
    rates = [5.889966505097482e-3, 7.958641655178186e-15]
    assert "holds" in str(hk_collapse([3.471e-11, 1.0], rates, 1330))
    mass = np.array([3.471e-11, 1.0]) * -np.expm1(-np.array(rates) * 900.0)
    assert mass / mass.sum() == pytest.approx([0.828, 0.172], abs=1e-3)
    assert hk_collapse(mass / mass.sum(), rates, 1330, span_s=900.0) is None


def test_h3_on_h2_data_is_refused_and_the_choice_falls_to_h2(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # 200 runtimes of an H2: a third phase has nothing to hold (which degenerate form the best H3
    # takes, a phase without runtimes or two phases at one rate, is the optimiser's business)
    gen = np.random.default_rng(0)
    slow = gen.random(200) < 0.3
    x = np.where(slow, gen.exponential(5000.0, 200), gen.exponential(100.0, 200))
    h3 = HyperExponentialRuntime(3).fit(x)
    assert h3.refused_ is not None
    assert h3.collapsed_ == h3.refused_  # the former name
    h2 = HyperExponentialRuntime(2).fit(x)
    assert h2.refused_ is None
    with caplog.at_level("INFO", logger="gridtrace.models._runtimes"):
        best, bic = select_hyperexponential(x, k_max=3)
    assert best.n_phases == 2
    assert set(bic) == {1, 2, 3}  # the refused H3 keeps its BIC in the table
    assert "H3 left out of the BIC choice: refused" in caplog.text
    # the verdict is part of the model's JSON; older models read as written
    d = h3.to_dict()
    assert d["fitted"]["refused"] == h3.refused_
    assert runtime_model_from_dict(json.loads(json.dumps(d))).to_dict() == d
    collapsed = json.loads(json.dumps(d))
    collapsed["fitted"]["collapsed"] = collapsed["fitted"].pop("refused")
    older = runtime_model_from_dict(collapsed)
    assert isinstance(older, HyperExponentialRuntime)
    assert older.refused_ == h3.refused_
    del collapsed["fitted"]["collapsed"]
    old = runtime_model_from_dict(collapsed)
    assert isinstance(old, HyperExponentialRuntime)
    assert old.refused_ is None


def test_h2_with_censoring_recovers_the_long_phase() -> None:
    x = h2_sample(20_000, 61)
    m = HyperExponentialRuntime(2).fit(x, censor_s=30_000.0)
    assert m.n_censored_ > 1000
    assert m.rates_[1] * 20_000 == pytest.approx(1.0, rel=0.05)
    assert m.weights_[0] == pytest.approx(0.3, rel=0.05)


def test_censored_lognormal_recovers_what_the_naive_fit_biases_low() -> None:
    gen = np.random.default_rng(8)
    x = np.exp(gen.normal(7.0, 1.5, 20_000))
    limit = float(np.exp(8.0))  # about 25 % censored
    cens = LogNormalRuntime().fit(x, censor_s=limit)
    naive = LogNormalRuntime().fit(np.minimum(x, limit))
    assert cens.mu_ == pytest.approx(7.0, abs=0.05)
    assert cens.sigma_ == pytest.approx(1.5, rel=0.03)
    assert naive.mu_ < 6.9
    assert naive.sigma_ < 1.35


@pytest.mark.parametrize(
    ("cls", "dist", "shape"),
    [(WeibullRuntime, scipy.stats.weibull_min, 0.7), (GammaRuntime, scipy.stats.gamma, 0.5)],
)
def test_weibull_and_gamma_recover_their_parameters(cls: type, dist: object, shape: float) -> None:
    x = dist.rvs(shape, scale=3000.0, size=20_000, random_state=np.random.default_rng(9))  # type: ignore[attr-defined]
    m = cls().fit(x)
    assert m.shape_ == pytest.approx(shape, rel=0.03)
    assert m.scale_ == pytest.approx(3000.0, rel=0.05)
    back = runtime_model_from_dict(json.loads(json.dumps(m.to_dict())))
    assert back.to_dict() == m.to_dict()
    assert back.score(x) == m.score(x)


def test_zero_runtimes_need_an_explicit_floor() -> None:
    x = [0.0, 3.0, 40.0, 500.0]
    with pytest.raises(FitError, match="floor_s"):
        LogNormalRuntime().fit(x)
    m = LogNormalRuntime(floor_s=1.0).fit(x)
    assert m.n_floored_ == 1


def test_empirical_runtime_keeps_zeros_and_the_data_range() -> None:
    x = np.array([0.0, 0.0, 10.0, 100.0, 1000.0, 10_000.0])
    m = EmpiricalRuntime().fit(x)
    assert m.zero_fraction_ == pytest.approx(1 / 3)
    draws = m.sample(10_000, rng=1)
    assert np.mean(draws == 0) == pytest.approx(1 / 3, abs=0.02)
    pos = draws[draws > 0]
    assert pos.min() >= 10.0 * (1 - 1e-12)
    assert pos.max() <= 10_000.0 * (1 + 1e-12)
    # log-space interpolation: the median of the positive part is the geometric middle
    assert np.median(pos) == pytest.approx(math.sqrt(100.0 * 1000.0), rel=0.1)
    np.testing.assert_array_equal(m.sample(100, rng=2), m.sample(100, rng=2))
    back = runtime_model_from_dict(json.loads(json.dumps(m.to_dict())))
    np.testing.assert_array_equal(back.sample(100, rng=2), m.sample(100, rng=2))


@pytest.mark.parametrize("cls", [ExponentialRuntime, HyperExponentialRuntime, LogNormalRuntime])
def test_runtime_json_round_trip(cls: type) -> None:
    x = h2_sample(2000, 70)
    m = cls().fit(x)
    data = json.loads(json.dumps(m.to_dict()))
    back = runtime_model_from_dict(data)
    assert back.to_dict() == m.to_dict()
    np.testing.assert_array_equal(back.sample(50, rng=4), m.sample(50, rng=4))


# --- fit quality --------------------------------------------------------------------------------


def test_ks_statistic_equals_scipy() -> None:
    x = np.random.default_rng(3).exponential(2.0, 500)
    m = ExponentialRuntime().fit(x)
    assert ks_statistic(x, m.cdf) == pytest.approx(
        scipy.stats.kstest(x, m.cdf).statistic, rel=1e-12
    )


def test_ks_statistic_handles_ties_as_steps() -> None:
    # uniform CDF on [0, 1]; sample {0.5, 0.5}: the ECDF jumps from 0 to 1 at 0.5
    assert ks_statistic([0.5, 0.5], lambda v: v) == pytest.approx(0.5)


def test_anderson_darling_on_a_literal_example() -> None:
    x = [0.2, 0.5, 0.9]  # against U(0, 1): F = x
    f = np.array(x)
    s = sum((2 * i - 1) * (math.log(f[i - 1]) + math.log(1 - f[3 - i])) for i in (1, 2, 3))
    assert anderson_darling(x, lambda v: v) == pytest.approx(-3 - s / 3)


def test_heldout_gain_is_large_on_mmpp_data_and_nil_on_poisson_data() -> None:
    gen = np.array([[-1 / 3600, 1 / 3600], [1 / 900, -1 / 900]])
    times, _ = ctmc_mmpp_arrival_times([0.02, 0.2], gen, size=20_000, rng=3)
    model = MMPPArrivals(2, count_hmm_start=False)
    score = heldout_log_likelihood(times, model)
    assert not hasattr(model, "rates_")  # the argument is not fitted
    assert score.gain > 0.2
    assert score.n_train + score.n_test == times.shape[0]
    poisson_times = np.cumsum(np.random.default_rng(4).exponential(10.0, 20_000))
    flat = heldout_log_likelihood(poisson_times, MMPPArrivals(1))
    assert abs(flat.gain) < 0.01
    assert json.loads(json.dumps(score.to_dict()))["gain"] == score.gain


def test_mmpp_iat_cdf_gives_a_small_ks_distance_on_its_own_data() -> None:
    gen = np.array([[-1 / 3600, 1 / 3600], [1 / 900, -1 / 900]])
    times, _ = ctmc_mmpp_arrival_times([0.02, 0.2], gen, size=20_000, rng=6)
    gaps = np.diff(times)
    mmpp = MMPPArrivals(2, count_hmm_start=False).fit(times)
    poisson = PoissonArrivals().fit(times)
    assert ks_statistic(gaps, mmpp.iat_cdf) < 0.015
    assert ks_statistic(gaps, poisson.iat_cdf) > 0.1
    assert anderson_darling(gaps, mmpp.iat_cdf) < anderson_darling(gaps, poisson.iat_cdf)
