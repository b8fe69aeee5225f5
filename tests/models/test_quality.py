"""IDC(t) and inter-arrival ACF of a trace against a band of model replicas."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from gridtrace.errors import ConfigError, FitError
from gridtrace.models import (
    MMPPArrivals,
    PoissonArrivals,
    ReplicaBand,
    WorkloadModel,
    ctmc_mmpp_arrival_times,
    generate_preset_trace,
    replica_band,
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
    np.testing.assert_allclose(band.acf_trace, acf, rtol=1e-12)
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
