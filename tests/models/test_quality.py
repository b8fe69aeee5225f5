"""IDC(t) and inter-arrival ACF against a band of model replicas; Ljung-Box; runtime fit."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pytest
import scipy.stats
from statsmodels.stats.diagnostic import acorr_ljungbox, lilliefors
from statsmodels.tsa.stattools import acf

from gridtrace.errors import ConfigError, FitError
from gridtrace.models import (
    ExponentialRuntime,
    MMPPArrivals,
    PoissonArrivals,
    ReplicaBand,
    WorkloadModel,
    anderson_darling,
    ctmc_mmpp_arrival_times,
    generate_preset_trace,
    replica_band,
)
from gridtrace.models._quality import (
    LJUNG_BOX_LAGS,
    LjungBox,
    RuntimeFit,
    ljung_box,
    runtime_fit,
)
from gridtrace.stats import idc_curve, interarrival_acf

# the reference MMPP(2) of models.md §5: IDC(36000 s) ≈ 200, strongly bursty
RATES = np.array([0.02, 0.2])
GEN = np.array([[-1 / 3600, 1 / 3600], [1 / 900, -1 / 900]])


@pytest.fixture(scope="module")
def bursty() -> np.ndarray:
    times, _ = ctmc_mmpp_arrival_times(RATES, GEN, size=5000, rng=3)
    return times


@pytest.fixture(scope="module")
def mmpp(bursty: np.ndarray) -> MMPPArrivals:
    return MMPPArrivals(2, rng=0).fit(bursty)


def test_trace_curves_are_the_reports_idc_and_acf(bursty: np.ndarray, mmpp: MMPPArrivals) -> None:
    band = replica_band(mmpp, bursty, replicas=4, lags=30, rng=0)
    reference = idc_curve(bursty)
    np.testing.assert_array_equal(band.windows_s, reference.column("t_s").to_numpy())
    np.testing.assert_allclose(band.idc_trace, reference.column("idc").to_numpy(), rtol=1e-12)
    acf = interarrival_acf(bursty, lags=30).column("acf").to_numpy()
    # statsmodels' FFT against gridtrace.stats' numpy FFT: equal to rounding (absolute: the ACF
    # of a Poisson-like stretch is near 0, where a relative tolerance means nothing)
    np.testing.assert_allclose(band.acf_trace, acf, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(band.lags, np.arange(1, 31))
    assert band.horizon_s == pytest.approx(bursty[-1] - bursty[0])
    assert band.trace_size == 5000
    assert np.all(band.idc_low <= band.idc_median)
    assert np.all(band.idc_median <= band.idc_high)
    assert np.all(band.acf_low <= band.acf_high)


def test_band_holds_a_trace_drawn_from_the_same_model(
    bursty: np.ndarray, mmpp: MMPPArrivals
) -> None:
    # a trace drawn from the model is exchangeable with the replicas: with 20 replicas and the
    # 2.5/97.5 % quantiles a point is inside with probability ≈ 0.86; curves are correlated
    # across windows, so one draw can be far out: judge the median over ten seeded draws
    horizon = float(bursty[-1] - bursty[0])
    idc, acf = [], []
    for seed in range(10):
        drawn = mmpp.sample(horizon_s=horizon, rng=1000 + seed)
        band = replica_band(mmpp, drawn, replicas=20, rng=seed)
        idc.append(band.idc_inside_fraction)
        acf.append(band.acf_inside_fraction)
    assert np.median(idc) >= 0.8
    assert np.median(acf) >= 0.8
    assert np.mean(idc) >= 0.65
    assert np.mean(acf) >= 0.7


def test_a_poisson_band_excludes_a_bursty_trace_at_long_windows(bursty: np.ndarray) -> None:
    poisson = PoissonArrivals().fit(bursty)
    band = replica_band(poisson, bursty, replicas=20, rng=1)
    long = band.windows_s >= 600.0
    assert long.sum() >= 10
    assert not band.idc_inside[long].any()
    assert np.all(band.idc_trace[long] > 5 * band.idc_high[long])
    # Poisson gaps are uncorrelated: the trace's lag-1 ACF (≈ 0.35) is far above the band
    assert not band.acf_inside[0]
    assert band.acf_trace[0] > 0.2 > band.acf_high[0]


def test_band_is_deterministic_per_seed(bursty: np.ndarray, mmpp: MMPPArrivals) -> None:
    first = replica_band(mmpp, bursty, replicas=5, rng=7).to_dict()
    assert replica_band(mmpp, bursty, replicas=5, rng=7).to_dict() == first
    assert replica_band(mmpp, bursty, replicas=5, rng=np.random.SeedSequence(7)).to_dict() == first
    assert replica_band(mmpp, bursty, replicas=5, rng=8).to_dict() != first


def test_workload_model_replicas_are_its_sampled_submissions() -> None:
    trace = generate_preset_trace("PE-1", rng=11, size=3000)
    model = WorkloadModel(arrivals="poisson", runtime_families=["exponential"]).fit(trace)
    seed = np.random.SeedSequence(5)
    band = replica_band(model, trace, replicas=3, rng=seed)
    # replica i is model.sample(horizon_s=..., rng=children[i]).submit_s
    children = np.random.SeedSequence(5).spawn(3)
    manual = [
        model.sample(horizon_s=band.horizon_s, rng=c).column("submit_s").to_numpy()
        for c in children
    ]
    assert band.replica_size_median == float(np.median([m.shape[0] for m in manual]))
    for child, expected in zip(np.random.SeedSequence(5).spawn(3), manual, strict=True):
        np.testing.assert_array_equal(
            model.sample_arrivals(horizon_s=band.horizon_s, rng=child), expected
        )
    # a table and its submission times give the same band
    times = trace.column("submit_s").to_numpy()
    assert replica_band(model, times, replicas=3, rng=5).to_dict() == band.to_dict()
    assert band.idc_inside_fraction >= 0.5  # Poisson fitted to Poisson


def test_band_round_trips_through_json(bursty: np.ndarray, mmpp: MMPPArrivals) -> None:
    band = replica_band(mmpp, bursty[:40], replicas=3, lags=60, rng=0)
    assert np.isnan(band.acf_trace[-1])  # 39 gaps leave the last lags empty
    data = json.loads(json.dumps(band.to_dict(), allow_nan=False))
    back = ReplicaBand.from_dict(data)
    assert back.to_dict() == band.to_dict()
    assert back.idc_inside_fraction == band.idc_inside_fraction
    with pytest.raises(ConfigError, match="not a replica band"):
        ReplicaBand.from_dict({"replicas": 3})


def test_band_refuses_bad_arguments(mmpp: MMPPArrivals) -> None:
    times = np.array([0.0, 10.0, 30.0, 31.0, 50.0])
    with pytest.raises(ConfigError, match="replicas"):
        replica_band(mmpp, times, replicas=1)
    with pytest.raises(ConfigError, match="lags"):
        replica_band(mmpp, times, lags=0)
    with pytest.raises(ConfigError, match="quantiles"):
        replica_band(mmpp, times, quantiles=(0.5, 0.1, 0.9))
    with pytest.raises(ConfigError, match="windows_s"):
        replica_band(mmpp, times, windows_s=[-1.0])
    with pytest.raises(FitError, match="two arrivals"):
        replica_band(mmpp, np.array([3.0]))
    empty = pa.table({"submit_s": pa.array([5.0, 5.0])})
    with pytest.raises(FitError, match="two arrivals"):
        replica_band(mmpp, empty)


# --- Ljung-Box: are the inter-arrival times independent? -----------------------------------------


def test_ljung_box_rejects_on_a_bursty_mmpp_and_not_on_poisson(bursty: np.ndarray) -> None:
    strong = ljung_box(bursty)
    assert strong.lags == LJUNG_BOX_LAGS
    assert strong.n_gaps == np.unique(bursty).shape[0] - 1
    # the MMPP's lag-1 gap autocorrelation is ≈ 0.35: Q is in the thousands, χ²_20 at 5 % is 31
    assert strong.acf[0] > 0.2
    assert strong.statistic > 20 * scipy.stats.chi2.ppf(0.95, strong.lags)
    assert strong.pvalue < 1e-12
    assert strong.rejects()
    # Poisson arrivals: independent gaps. Over 40 seeded traces the test rejects at about its
    # level (5 %, so 2 of 40 expected; 6 would be 1 in 100), and Q averages its 20 degrees of
    # freedom
    stats = []
    for seed in range(40):
        times = np.cumsum(np.random.default_rng(seed).exponential(30.0, 2000))
        stats.append(ljung_box(times))
    assert sum(s.rejects() for s in stats) <= 6
    assert np.mean([s.statistic for s in stats]) == pytest.approx(20.0, rel=0.2)
    assert all(abs(s.acf[0]) < 0.1 for s in stats)


def test_ljung_box_is_statsmodels_own() -> None:
    gaps = np.random.default_rng(3).exponential(5.0, 300)
    gaps[1::2] += 0.5 * gaps[::2]  # some lag-1 memory
    times = np.concatenate([[0.0], np.cumsum(gaps)])
    result = ljung_box(times, lags=10)
    reference = acorr_ljungbox(gaps, lags=[10], return_df=True)
    assert result.statistic == pytest.approx(float(reference["lb_stat"].iloc[0]), rel=1e-10)
    assert result.pvalue == pytest.approx(float(reference["lb_pvalue"].iloc[0]), rel=1e-8)
    np.testing.assert_allclose(result.acf, acf(gaps, nlags=10, fft=False)[1:], rtol=1e-9)
    # and the textbook formula Q = n (n + 2) Σ ρ_k² / (n − k)
    n = gaps.shape[0]
    rho = np.asarray(result.acf)
    q = n * (n + 2) * np.sum(rho**2 / (n - np.arange(1, 11)))
    assert result.statistic == pytest.approx(q, rel=1e-12)
    back = LjungBox.from_dict(json.loads(json.dumps(result.to_dict())))
    assert back == result


def test_ljung_box_tests_epochs_and_refuses_what_it_cannot_test() -> None:
    # job arrays: equal stamps are one arrival epoch for the arrival models, so for the test too
    times = np.repeat(np.cumsum(np.random.default_rng(4).exponential(10.0, 500)), 3)
    by_epoch = ljung_box(times)
    assert (by_epoch.ties, by_epoch.n_gaps) == ("batch", 499)
    every_gap = ljung_box(times, ties="keep")
    assert every_gap.n_gaps == 1499
    assert every_gap.rejects()  # runs of zero gaps are strong dependence of the raw gaps
    assert ljung_box(times[:180], lags=50).lags == 11  # 59 gaps: at most a fifth of them
    with pytest.raises(FitError, match="too few"):
        ljung_box(np.arange(8.0))
    with pytest.raises(FitError, match="all equal"):
        ljung_box(np.arange(40.0))
    with pytest.raises(ConfigError, match="ties"):
        ljung_box(times, ties="drop")
    with pytest.raises(ConfigError, match="lags"):
        ljung_box(times, lags=0)


# --- goodness of fit of runtime models -----------------------------------------------------------


def test_runtime_fit_reports_effect_sizes_beside_their_noise() -> None:
    gen = np.random.default_rng(5)
    x = gen.exponential(1000.0, 5000)
    right = ExponentialRuntime().fit(x)
    fit = runtime_fit(x, right.cdf)
    assert fit.n == 5000
    assert fit.ks_noise == pytest.approx(1.358 / math.sqrt(5000))
    reference = scipy.stats.kstest(x, right.cdf)
    assert fit.ks_d == pytest.approx(float(reference.statistic), rel=1e-12)
    assert fit.ks_pvalue == pytest.approx(float(reference.pvalue), rel=1e-9)
    assert fit.ad_a2 == pytest.approx(anderson_darling(x, right.cdf))
    assert fit.ks_d < fit.ks_noise  # the true family: D is sampling noise
    assert "effect sizes" in fit.note
    # a lognormal sample against a fitted exponential: D several times its noise
    y = gen.lognormal(6.0, 1.5, 5000)
    wrong = runtime_fit(y, ExponentialRuntime().fit(y).cdf)
    assert wrong.ks_d > 5 * wrong.ks_noise
    assert wrong.ad_a2 > 10 * fit.ad_a2
    assert RuntimeFit.from_dict(json.loads(json.dumps(wrong.to_dict()))) == wrong


def test_lilliefors_tests_the_exponential_excess_over_tau() -> None:
    # batch runtimes of exponential jobs: memoryless, run − τ is exponential with the same rate
    gen = np.random.default_rng(6)
    batch = 900.0 + gen.exponential(5000.0, 4000)
    model = ExponentialRuntime().fit(batch - 900.0)
    fit = runtime_fit(batch, lambda v: model.cdf(v - 900.0), exponential_from=900.0)
    assert fit.lilliefors is not None
    d, p = lilliefors(batch - 900.0, dist="exp", pvalmethod="table")
    assert fit.lilliefors["statistic"] == pytest.approx(float(d), rel=1e-12)
    assert fit.lilliefors["pvalue"] == pytest.approx(float(p))
    assert fit.lilliefors["pvalue"] > 0.05
    assert fit.lilliefors["on"] == "run − 900 s of 4000 uncensored runtimes"
    # lognormal batch runtimes: rejected (the table's p-value stops at 0.001)
    other = 900.0 + gen.lognormal(8.0, 1.0, 4000)
    lf = runtime_fit(other, lambda v: model.cdf(v - 900.0), exponential_from=900.0).lilliefors
    assert lf is not None
    assert lf["pvalue"] <= 0.001
    # censored runtimes are left out, and counted
    censored = batch >= 12_000.0
    capped = runtime_fit(np.minimum(batch, 12_000.0), model.cdf, censored=censored)
    assert (capped.n, capped.n_censored) == (int((~censored).sum()), int(censored.sum()))
    with pytest.raises(FitError, match="too few"):
        runtime_fit([5.0], model.cdf)
