"""The MMPP fit at the global optimum: starts, the direct maximisation, the start vector.

What a user relies on (issue 16, item 4): the fit's log-likelihood is at least that of every start
it tried and of an independent maximiser run from it; EM stuck at a local maximum is escaped by
the other starts; ``score`` uses the start vector the fit used; no warning on ordinary data.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.optimize

from gridtrace.errors import ConfigError
from gridtrace.models import MMPPArrivals, ctmc_mmpp_arrival_times
from gridtrace.models._arrivals import small_matrix_threads
from gridtrace.models._mmpp import (
    _generator_from_offdiag,
    embedded_phase_law,
    log_likelihood_gradient,
    split_phase,
)
from gridtrace.models._mmpp_kernel import forward_backward, log_likelihood, log_likelihood_naive

RATES = np.array([0.02, 0.2])
GEN = np.array([[-1 / 3600, 1 / 3600], [1 / 900, -1 / 900]])

# A silent phase, a medium one and bursts: EM from a start that merges the two quiet phases and
# splits the bursts in two stops at a local maximum far below the global one.
ONOFF_RATES = np.array([0.0, 0.05, 1.0])
ONOFF_GEN = np.array(
    [[-1 / 600, 1 / 1200, 1 / 1200], [1 / 1800, -1 / 900, 1 / 1800], [1 / 60, 1 / 60, -1 / 30]]
)
MERGED_START = (
    np.array([0.03, 1.0, 5.0]),
    np.array([[-1e-3, 1e-3, 1e-6], [0.04, -0.04 - 1e-6, 1e-6], [1e-6, 1.0, -1.0 - 1e-6]]),
)


def random_mmpp(k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rates log-uniform on [0.01, 1] s⁻¹, switching rates log-uniform on [1/3600, 1/120] s⁻¹."""
    gen = np.random.default_rng(seed)
    rates = np.sort(np.exp(gen.uniform(math.log(0.01), math.log(1.0), k)))
    off = np.exp(gen.uniform(math.log(1 / 3600), math.log(1 / 120), (k, k)))
    return rates, _generator_from_offdiag(off)


def unpack(theta: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    off = np.zeros((k, k))
    off[~np.eye(k, dtype=bool)] = np.exp(theta[k:])
    return np.exp(theta[:k]), _generator_from_offdiag(off)


def profile_log_likelihood(t: np.ndarray, rates: np.ndarray, q: np.ndarray, start: str) -> float:
    """The exact log-likelihood maximised over α (estimated), or with α = φ (stationary)."""
    if start == "stationary":
        return log_likelihood(t, rates, q, embedded_phase_law(rates, q))
    k = rates.shape[0]
    return max(log_likelihood(t, rates, q, np.eye(k)[i]) for i in range(k))


def independent_maximum(t: np.ndarray, m: MMPPArrivals) -> float:
    """L-BFGS-B with finite-difference gradients (not the fit's analytic one), from the fit."""
    k = int(m.n_states)
    mask = ~np.eye(k, dtype=bool)
    theta0 = np.log(np.maximum(np.concatenate([m.rates_, m.generator_[mask]]), 1e-300))

    def minus(theta: np.ndarray) -> float:
        return -profile_log_likelihood(t, *unpack(theta, k), m.start_vector_)

    result = scipy.optimize.minimize(
        minus,
        theta0,
        method="L-BFGS-B",
        bounds=[(x - 5.0, x + 5.0) for x in theta0],  # free, but no overflow
        options={"ftol": 1e-15, "gtol": 1e-9, "maxiter": 2000},
    )
    return -float(result.fun)


# --- the gradient --------------------------------------------------------------------------------


@pytest.mark.parametrize("stationary", [False, True])
def test_the_log_parameter_gradient_is_exact(stationary: bool) -> None:
    k = 3
    rates, q = random_mmpp(k, 4)
    t = np.diff(ctmc_mmpp_arrival_times(rates, q, size=2000, rng=4)[0])
    fixed = np.array([0.2, 0.5, 0.3])
    theta = np.log(np.concatenate([rates, q[~np.eye(k, dtype=bool)]]))

    def ll(th: np.ndarray) -> float:
        r, g = unpack(th, k)
        return log_likelihood(t, r, g, embedded_phase_law(r, g) if stationary else fixed)

    alpha = embedded_phase_law(rates, q) if stationary else fixed
    grad = log_likelihood_gradient(
        forward_backward(t, rates, q, alpha), rates, q, stationary=stationary
    )
    h = 1e-5
    central = np.array([(ll(theta + h * e) - ll(theta - h * e)) / (2 * h) for e in np.eye(k * k)])
    np.testing.assert_allclose(grad, central, atol=1e-5 * max(1.0, float(np.abs(grad).max())))


# --- the property: no start, and no other maximiser, does better ---------------------------------


@pytest.mark.parametrize("start_vector", ["estimated", "stationary"])
@pytest.mark.parametrize(("k", "seed"), [(1, 0), (2, 0), (2, 1), (2, 2), (3, 0), (3, 1), (3, 2)])
def test_the_fit_is_at_least_every_start_and_an_independent_maximiser(
    k: int, seed: int, start_vector: str
) -> None:
    truth_k = max(k, 2)
    times, _ = ctmc_mmpp_arrival_times(*random_mmpp(truth_k, seed), size=3000, rng=seed)
    m = MMPPArrivals(k, alpha=start_vector).fit(times)  # any warning fails the test
    t = np.diff(times)
    assert m.converged_
    assert m.gradient_norm_ <= m.grad_tol
    assert m.score(times) == pytest.approx(m.log_likelihood_, abs=1e-8)
    tried = [
        value
        for start in m.starts_
        for key in ("log_likelihood", "em_log_likelihood", "log_likelihood_final")
        if (value := start.get(key)) is not None
    ]
    assert tried
    assert m.log_likelihood_ >= max(tried) - 1e-9 * abs(m.log_likelihood_)
    assert m.log_likelihood_ >= max(m.log_likelihood_trace_) - 1e-9 * abs(m.log_likelihood_)
    with small_matrix_threads():
        assert independent_maximum(t, m) - m.log_likelihood_ <= 1e-3
    if k > 1:  # more phases never fit worse: the k-phase family holds the (k − 1)-phase one
        fewer = MMPPArrivals(k - 1, alpha=start_vector).fit(times)
        assert m.log_likelihood_ >= fewer.log_likelihood_ - 1e-6


# --- a local maximum, and the escape from it -----------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2])
def test_the_multi_start_fit_escapes_a_local_maximum_of_em(seed: int) -> None:
    times, _ = ctmc_mmpp_arrival_times(ONOFF_RATES, ONOFF_GEN, size=5000, rng=seed)
    # EM from the merged start alone, then the direct maximisation: a true (local) maximum
    stuck = MMPPArrivals(3, init=[MERGED_START], n_random_starts=0).fit(times)
    assert stuck.best_start_ == "init0"
    assert stuck.converged_
    assert stuck.gradient_norm_ <= stuck.grad_tol
    with small_matrix_threads():
        assert independent_maximum(np.diff(times), stuck) - stuck.log_likelihood_ <= 1e-3
    # EM alone from it converges too, to the same place
    em_only = MMPPArrivals(3, init=[MERGED_START], n_random_starts=0, polish=False).fit(times)
    assert em_only.em_stop_ == "tolerance"
    assert em_only.log_likelihood_ == pytest.approx(stuck.log_likelihood_, abs=1.0)
    # the default starts find a far better maximum, and so do random starts beside the bad one
    default = MMPPArrivals(3).fit(times)
    escaped = MMPPArrivals(3, init=[MERGED_START]).fit(times)
    for m in (default, escaped):
        assert m.log_likelihood_ > stuck.log_likelihood_ + 100.0
        assert m.converged_
    assert escaped.best_start_ != "init0"
    assert escaped.log_likelihood_ == pytest.approx(default.log_likelihood_, abs=1e-2)
    # the good maximum has the quiet phase near silent and the true ordering of the rates
    assert default.rates_[0] < 0.005
    np.testing.assert_allclose(default.rates_[1:], ONOFF_RATES[1:], rtol=0.25)


# --- the start vector ----------------------------------------------------------------------------


def test_score_uses_the_estimated_start_vector() -> None:
    times, _ = ctmc_mmpp_arrival_times(RATES, GEN, size=1500, rng=3)
    m = MMPPArrivals(2).fit(times)
    assert m.start_vector_ == "estimated"
    t = np.diff(times)
    with small_matrix_threads():
        by_hand = log_likelihood_naive(t, m.rates_, m.generator_, m.alpha_)
        stationary = log_likelihood_naive(
            t, m.rates_, m.generator_, embedded_phase_law(m.rates_, m.generator_)
        )
    assert m.score(times) == pytest.approx(by_hand, rel=1e-12)
    assert m.log_likelihood_ == pytest.approx(by_hand, rel=1e-12)
    assert by_hand > stationary + 1e-6  # the estimated α is not the stationary one
    back = MMPPArrivals.from_dict(json.loads(json.dumps(m.to_dict())))
    assert back.start_vector_ == "estimated"
    assert back.score(times) == m.score(times)


def test_score_uses_the_stationary_start_vector_when_fitted_with_it() -> None:
    times, _ = ctmc_mmpp_arrival_times(RATES, GEN, size=1500, rng=3)
    m = MMPPArrivals(2, alpha="stationary").fit(times)
    assert m.start_vector_ == "stationary"
    np.testing.assert_allclose(m.alpha_, embedded_phase_law(m.rates_, m.generator_), rtol=1e-12)
    with small_matrix_threads():
        by_hand = log_likelihood_naive(np.diff(times), m.rates_, m.generator_, m.alpha_)
    assert m.score(times) == pytest.approx(by_hand, rel=1e-12)
    # estimating α can only gain, by at most what one first phase explains
    estimated = MMPPArrivals(2).fit(times)
    assert 0.0 <= estimated.log_likelihood_ - m.log_likelihood_ < 5.0


def test_an_older_model_file_scores_with_the_start_vector_it_was_fitted_with() -> None:
    times, _ = ctmc_mmpp_arrival_times(RATES, GEN, size=1500, rng=3)
    m = MMPPArrivals(2).fit(times)
    old = m.to_dict()
    fitted = old["fitted"]
    # the layout written before issue 16: α under initial_probabilities, its mode as alpha_mode
    fitted["initial_probabilities"] = fitted.pop("alpha")
    fitted["alpha_mode"] = "fitted"
    for key in ("start_vector", "em_stop", "n_polish_iter", "gradient_norm", "maximisation"):
        fitted.pop(key)
    old["params"] = {
        key: old["params"][key]
        for key in ("ties", "n_states", "max_iter", "tol", "n_init_iter", "count_hmm_start")
    } | {"alpha": "fitted", "n_random_starts": 2, "kernel": "fast", "rng": 0}
    back = MMPPArrivals.from_dict(old)
    assert back.start_vector_ == "estimated"
    np.testing.assert_array_equal(back.alpha_, m.alpha_)
    assert back.score(times) == m.score(times)
    assert math.isnan(back.gradient_norm_)


# --- boundaries, options -------------------------------------------------------------------------


def test_a_silent_phase_and_an_absent_transition_still_end_at_a_maximum() -> None:
    # on-off: the off rate heads for 0; a chain 0 ↔ 1 ↔ 2: the 0 ↔ 2 rates head for 0. Rates
    # are held at 1e-4 events per span, so the fit reaches its maximum instead of crawling.
    on_off = np.array([[-1 / 600, 1 / 600], [1 / 300, -1 / 300]])
    times, _ = ctmc_mmpp_arrival_times([0.0, 0.1], on_off, size=4000, rng=7)
    m = MMPPArrivals(2).fit(times)
    assert m.converged_
    assert m.rates_[0] < 1e-3 * m.rates_[1]
    assert m.rates_[1] == pytest.approx(0.1, rel=0.1)
    chain = np.array(
        [[-1 / 3600, 1 / 3600, 0.0], [1 / 900, -2 / 900, 1 / 900], [0.0, 1 / 120, -1 / 120]]
    )
    times, _ = ctmc_mmpp_arrival_times([0.01, 0.1, 1.0], chain, size=5000, rng=7)
    m = MMPPArrivals(3).fit(times)
    assert m.converged_
    with small_matrix_threads():
        assert independent_maximum(np.diff(times), m) - m.log_likelihood_ <= 1e-3


def test_the_same_seed_gives_the_same_fit_at_three_states() -> None:
    times, _ = ctmc_mmpp_arrival_times(*random_mmpp(3, 5), size=2000, rng=5)
    a = MMPPArrivals(3, rng=11).fit(times)
    b = MMPPArrivals(3, rng=11).fit(times)
    assert a.to_dict() == b.to_dict()
    names = [s["name"] for s in a.starts_]
    assert names[:5] == ["quantiles", "kmeans", "count_hmm", "split0", "split1"]
    assert len(a.starts_) == 5 + 12  # the built-in starts, the 2-phase fit split, 4k random ones
    finals = [s["name"] for s in a.starts_ if s["log_likelihood_final"] is not None]
    # the three best, and the best split start whenever it is not among them
    assert len(finals) in (3, 4)
    assert any(name.startswith("split") for name in finals)


def test_a_phase_split_keeps_the_smaller_chain() -> None:
    rates, q = random_mmpp(3, 4)
    r, g = split_phase(rates, q, 1)
    assert r.tolist() == pytest.approx([rates[0], 0.9 * rates[1], rates[2], 1.1 * rates[1]])
    np.testing.assert_allclose(g.sum(axis=1), 0.0, atol=1e-15)
    off, off3 = g - np.diag(np.diag(g)), q - np.diag(np.diag(q))
    # into the phase: shared by the halves; out of it: kept by each half
    np.testing.assert_allclose(off[[0, 2], 1] + off[[0, 2], 3], off3[[0, 2], 1])
    np.testing.assert_allclose(off[1, [0, 2]], off3[1, [0, 2]])
    np.testing.assert_allclose(off[3, [0, 2]], off3[1, [0, 2]])
    assert off[1, 3] == off[3, 1] > 0
    with pytest.raises(ConfigError, match="phase"):
        split_phase(rates, q, 3)


def test_parameters_whose_likelihood_is_lost_to_rounding_are_refused() -> None:
    # a flash phase (rate 1e14 s⁻¹, left at 2.6e15 s⁻¹): float64 puts D0's small eigenvalue at 0
    # instead of about -0.14, which once scored 10,000 nats above the maximum
    times, _ = ctmc_mmpp_arrival_times(*random_mmpp(3, 2), size=3000, rng=2)
    t = np.diff(times)
    stiff_rates = np.array([0.1437, 1.48e14])
    stiff_q = np.array([[-2.3e-5, 2.3e-5], [2.6e15, -2.6e15]])
    with pytest.raises(FloatingPointError, match="rounding"):
        MMPPArrivals(2)._estep(t, stiff_rates, stiff_q, np.array([1.0, 0.0]))
    fit = MMPPArrivals(2).fit(times)
    assert fit.converged_
    assert fit.rates_.max() < 1.0  # the data's fastest phase is 0.43 s⁻¹
    assert fit.log_likelihood_ == pytest.approx(
        log_likelihood_naive(t, fit.rates_, fit.generator_, fit.alpha_), abs=1e-6
    )


def test_the_caller_can_give_the_starts() -> None:
    times, _ = ctmc_mmpp_arrival_times(RATES, GEN, size=2000, rng=8)
    m = MMPPArrivals(2, init=[(RATES, GEN)], n_random_starts=0).fit(times)
    assert [s["name"] for s in m.starts_] == ["init0"]
    assert MMPPArrivals.from_dict(json.loads(json.dumps(m.to_dict()))).init == [
        [RATES.tolist(), GEN.tolist()]
    ]
    with pytest.raises(ConfigError, match="init\\[0\\]"):
        MMPPArrivals(2, init=[([1.0], GEN)]).fit(times)
    with pytest.raises(ConfigError, match="n_random_starts"):
        MMPPArrivals(2, n_random_starts=-1).fit(times)
    with pytest.raises(ConfigError, match="alpha"):
        MMPPArrivals(2, alpha="uniform").fit(times)


# --- real data -----------------------------------------------------------------------------------


def lpc_submit_times(folder: Path, n: int) -> np.ndarray:
    from gridtrace.logs import build_trace, read_swf

    with warnings.catch_warnings():  # the reader's notes on the log are not this test's subject
        warnings.simplefilter("ignore")
        result = read_swf(folder / "swf" / "LPC-EGEE-2004-1.2-cln.swf.gz")
        trace = build_trace(result.jobs)
    submit = np.sort(np.asarray(trace.column("submit_s").to_numpy(zero_copy_only=False), float))
    return submit[:n]


def test_real_inter_arrivals_fit_to_a_maximum_without_warnings(real_data: Path) -> None:
    times = lpc_submit_times(real_data, 20_000)
    fits = {k: MMPPArrivals(k).fit(times) for k in (1, 2, 3)}
    for k, m in fits.items():
        assert m.converged_, k
        assert m.gradient_norm_ <= m.grad_tol
        assert m.score(times) == pytest.approx(m.log_likelihood_, abs=1e-6)
    assert fits[3].log_likelihood_ >= fits[2].log_likelihood_ >= fits[1].log_likelihood_
    epochs = np.unique(times)
    with small_matrix_threads():
        assert independent_maximum(np.diff(epochs), fits[3]) - fits[3].log_likelihood_ <= 1e-3
