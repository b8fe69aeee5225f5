"""Exact MMPP EM: closed forms, likelihood, kernel vs reference, recovery, BIC, serialisation."""

from __future__ import annotations

import json
import logging
import math
import time

import numpy as np
import pytest

from gridtrace.errors import ConvergenceWarning, FitError
from gridtrace.models import (
    MMPPArrivals,
    PoissonHMMArrivals,
    ctmc_mmpp_arrival_times,
    get_preset,
    mmpp_arrival_times,
    mmpp_iat_acf,
    mmpp_idc,
    mmpp_moments,
    select_mmpp,
)
from gridtrace.models._arrivals import small_matrix_threads
from gridtrace.models._mmpp import embedded_phase_law
from gridtrace.models._mmpp_kernel import (
    forward_backward,
    forward_backward_reference,
    log_likelihood,
    log_likelihood_naive,
)

# the reference model of models.md §3.1 / §5.3
RATES = np.array([0.02, 0.2])
GEN = np.array([[-1 / 3600, 1 / 3600], [1 / 900, -1 / 900]])
NO_CAP_WARNING = pytest.mark.filterwarnings("ignore::gridtrace.errors.ConvergenceWarning")


def reference_times(n: int, seed: int) -> np.ndarray:
    times, _ = ctmc_mmpp_arrival_times(RATES, GEN, size=n, rng=seed)
    return times


# --- closed forms (models.md §5.3, §5.4) -------------------------------------------------------


def test_closed_form_moments_and_acf_match_the_reference_values() -> None:
    m1, m2, m3 = mmpp_moments(RATES, GEN)
    assert m1 == pytest.approx(17.857, abs=5e-4)
    assert m2 / m1**2 - 1 == pytest.approx(3.5426, abs=5e-5)
    assert m3 == pytest.approx(2.0965e5, rel=5e-5)
    assert mmpp_iat_acf(RATES, GEN, [1, 2, 5]) == pytest.approx(
        [0.35201, 0.34530, 0.32592], abs=5e-6
    )


def test_closed_form_idc_matches_heffes_lucantoni() -> None:
    idc = mmpp_idc(RATES, GEN, [60, 600, 3600, 36000, 1e12])
    assert idc == pytest.approx([6.403, 43.859, 107.822, 131.637, 134.303], abs=5e-4)
    # the MMPP(2) formula of §5.4 itself, at an arbitrary t
    r12, r21 = GEN[0, 1], GEN[1, 0]
    r = r12 + r21
    lbar = (RATES[0] * r21 + RATES[1] * r12) / r
    t = 1234.5
    expected = 1 + 2 * (RATES[0] - RATES[1]) ** 2 * r12 * r21 / (r**3 * lbar) * (
        1 - (1 - math.exp(-r * t)) / (r * t)
    )
    assert mmpp_idc(RATES, GEN, [t])[0] == pytest.approx(expected, rel=1e-10)


def sample_stats(times: np.ndarray) -> tuple[float, float, float, float]:
    x = np.diff(times)
    m1 = x.mean()
    scv = x.var() / m1**2
    d = x - m1
    acf1 = float(d[:-1] @ d[1:] / (d @ d))
    width = 600.0
    counts = np.bincount((times // width).astype(np.int64))[:-1]
    return float(m1), float(scv), acf1, float(counts.var() / counts.mean())


def check_against_closed_forms(n: int, seed: int, tol: float) -> None:
    m1, scv, acf1, idc600 = sample_stats(reference_times(n, seed))
    assert m1 == pytest.approx(17.857, rel=tol)
    assert scv == pytest.approx(3.5426, rel=2 * tol)
    assert acf1 == pytest.approx(0.35201, rel=3 * tol)
    assert idc600 == pytest.approx(43.859, rel=3 * tol)


def test_generated_sample_matches_closed_forms() -> None:
    check_against_closed_forms(300_000, 11, 0.05)


@pytest.mark.slow
def test_long_generated_sample_matches_closed_forms() -> None:
    check_against_closed_forms(2_000_000, 12, 0.02)


# --- likelihood and E-step ---------------------------------------------------------------------


def test_fast_likelihood_equals_the_naive_expm_product() -> None:
    t = np.diff(reference_times(2001, 5))
    alpha = np.array([0.8, 0.2])
    fast = log_likelihood(t, RATES, GEN, alpha)
    with small_matrix_threads():  # 2000 tiny expm calls: keep BLAS from waking its threads
        naive = log_likelihood_naive(t, RATES, GEN, alpha)
    assert fast == pytest.approx(naive, rel=1e-12)


def test_fast_likelihood_survives_gaps_that_underflow_every_exponential() -> None:
    import scipy.linalg

    t = np.array([10.0, 50_000.0, 3.0, 0.0, 86_400.0 * 3])
    alpha = np.array([0.5, 0.5])
    d0 = GEN - np.diag(RATES)
    shift = float(np.max(np.linalg.eigvals(d0).real))
    # the naive product, with each expm rescaled by e^{-shift t} so that it stays representable
    row, total = alpha.copy(), 0.0
    for tn in t:
        row = row @ scipy.linalg.expm((d0 - shift * np.eye(2)) * tn) @ np.diag(RATES)
        total += math.log(row.sum()) + shift * tn
        row /= row.sum()
    assert log_likelihood(t, RATES, GEN, alpha) == pytest.approx(total, rel=1e-10)


@pytest.mark.parametrize(
    ("rates", "gen"),
    [
        (RATES, GEN),
        # a cyclic 3-phase chain: D0 has complex eigenvalues, the kernel runs in complex numbers
        (
            np.array([0.05, 0.06, 0.07]),
            np.array([[-0.1, 0.1, 0.0], [0.0, -0.1, 0.1], [0.1, 0.0, -0.1]]),
        ),
    ],
)
def test_numba_kernel_agrees_with_the_van_loan_reference(
    rates: np.ndarray, gen: np.ndarray
) -> None:
    rng = np.random.default_rng(3)
    t = np.round(rng.exponential(15.0, 600))  # 1-s resolution: zeros and repeated lengths
    alpha = np.full(rates.shape[0], 1 / rates.shape[0])
    d = np.linalg.eigvals(gen - np.diag(rates))
    if rates.shape[0] == 3:
        assert np.abs(d.imag).max() > 1e-3
    fast = forward_backward(t, rates, gen, alpha)
    slow = forward_backward_reference(t, rates, gen, alpha)
    assert fast.log_likelihood == pytest.approx(slow.log_likelihood, rel=1e-12)
    np.testing.assert_allclose(fast.time_in_phase, slow.time_in_phase, rtol=1e-9)
    np.testing.assert_allclose(fast.jumps, slow.jumps, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(fast.arrivals, slow.arrivals, rtol=1e-9)
    np.testing.assert_allclose(fast.initial, slow.initial, rtol=1e-9)
    np.testing.assert_allclose(fast.first_backward, slow.first_backward, rtol=1e-9)
    # invariants: expected time adds up to the span, expected arrivals to the count
    assert fast.time_in_phase.sum() == pytest.approx(t.sum(), rel=1e-10)
    assert fast.arrivals.sum() == pytest.approx(t.shape[0], rel=1e-10)


def test_first_backward_vector_is_the_likelihood_given_each_first_phase() -> None:
    # what an estimated α is profiled on: β_i ∝ density of the intervals given phase i first
    t = np.diff(reference_times(800, 6))
    given = np.array([log_likelihood(t, RATES, GEN, np.eye(2)[i]) for i in range(2)])
    expected = np.exp(given - given.max())
    expected /= expected.sum()
    for alpha in (np.array([0.5, 0.5]), np.array([0.9, 0.1])):
        np.testing.assert_allclose(
            forward_backward(t, RATES, GEN, alpha).first_backward, expected, rtol=1e-9
        )


def test_reference_kernel_fit_equals_fast_fit() -> None:
    times = reference_times(1500, 8)
    kw = {"count_hmm_start": False, "n_random_starts": 0, "polish": False}
    fast = MMPPArrivals(2, **kw).fit(times)
    slow = MMPPArrivals(2, kernel="reference", max_iter=fast.n_iter_, **kw).fit(times)
    np.testing.assert_allclose(fast.rates_, slow.rates_, rtol=1e-7)
    np.testing.assert_allclose(fast.generator_, slow.generator_, rtol=1e-6)


# --- EM ----------------------------------------------------------------------------------------


@NO_CAP_WARNING
def test_fitted_alpha_em_never_decreases_the_log_likelihood() -> None:
    times = reference_times(5000, 21)
    m = MMPPArrivals(
        2, count_hmm_start=False, n_random_starts=0, tol=0.0, max_iter=60, polish=False
    )
    m.fit(times)
    trace = np.asarray(m.log_likelihood_trace_)
    assert trace.shape[0] >= 20
    steps = np.diff(trace)
    assert np.all(steps >= -1e-10 * abs(trace[0])), steps.min()
    assert trace[-1] > trace[0]


def test_hitting_the_iteration_cap_is_reported() -> None:
    times = reference_times(5000, 21)
    m = MMPPArrivals(
        2, count_hmm_start=False, n_random_starts=0, n_init_iter=2, max_iter=3, polish=False
    )
    with pytest.warns(ConvergenceWarning, match="cap of 3"):
        m.fit(times)
    assert m.converged_ is False
    assert m.n_iter_ == 3
    assert m.em_stop_ == "cap"
    assert m.to_dict()["fitted"]["cap_hit"] is True


def test_the_direct_maximisation_takes_over_from_a_capped_em() -> None:
    # the same capped EM, then the direct maximisation: it ends at a maximum, so no warning
    times = reference_times(5000, 21)
    capped = MMPPArrivals(
        2, count_hmm_start=False, n_random_starts=0, n_init_iter=2, max_iter=3, polish=False
    )
    with pytest.warns(ConvergenceWarning):
        capped.fit(times)
    m = MMPPArrivals(2, count_hmm_start=False, n_random_starts=0, n_init_iter=2, max_iter=3)
    m.fit(times)
    assert m.em_stop_ == "cap"
    assert m.converged_
    assert m.gradient_norm_ <= m.grad_tol
    assert m.log_likelihood_ >= capped.log_likelihood_
    assert m.log_likelihood_ == pytest.approx(MMPPArrivals(2).fit(times).log_likelihood_, abs=1e-3)


def test_a_capped_direct_maximisation_is_reported() -> None:
    times = reference_times(5000, 21)
    m = MMPPArrivals(
        2, count_hmm_start=False, n_random_starts=0, n_init_iter=1, max_iter=1, polish_max_iter=1
    )
    with pytest.warns(ConvergenceWarning, match="direct maximisation stopped"):
        m.fit(times)
    assert m.converged_ is False
    assert m.gradient_norm_ > m.grad_tol
    assert m.n_polish_iter_ == 1


def test_fitted_alpha_em_is_monotone_at_three_states() -> None:
    times = reference_times(3000, 22)
    m = MMPPArrivals(3, count_hmm_start=False, n_random_starts=0, max_iter=80).fit(times)
    steps = np.diff(m.log_likelihood_trace_)
    assert np.all(steps >= -1e-9 * abs(m.log_likelihood_trace_[0]))


def test_one_state_fit_is_the_poisson_mle() -> None:
    times = np.array([0.0, 2.0, 3.0, 7.0, 8.5])
    m = MMPPArrivals(1).fit(times)
    assert m.rates_[0] == pytest.approx(4 / 8.5)
    assert m.log_likelihood_ == pytest.approx(4 * math.log(4 / 8.5) - 4)
    assert m.converged_
    assert m.n_iter_ == 0


def test_states_are_sorted_by_rate_and_alpha_is_reported() -> None:
    m = MMPPArrivals(2).fit(reference_times(4000, 4))
    assert m.rates_[0] < m.rates_[1]
    assert m.start_vector_ == "estimated"
    # at the maximum an estimated α is a point mass (models.md §4.2)
    assert m.alpha_.max() == pytest.approx(1.0, abs=1e-9)
    names = [s["name"] for s in m.starts_]
    assert names == ["quantiles", "kmeans", "count_hmm", "moments", "random0", "random1"]
    assert m.best_start_ in names
    assert m.converged_
    assert m.gradient_norm_ <= m.grad_tol


def test_stationary_alpha_is_polished_to_at_least_the_em_value() -> None:
    times = reference_times(4000, 5)
    kw = {"count_hmm_start": False, "n_random_starts": 0}
    fitted = MMPPArrivals(2, **kw).fit(times)
    stat = MMPPArrivals(2, alpha="stationary", **kw).fit(times)
    assert stat.start_vector_ == "stationary"
    np.testing.assert_allclose(stat.alpha_, embedded_phase_law(stat.rates_, stat.generator_))
    assert stat.converged_
    em_only = max(stat.log_likelihood_trace_)
    assert stat.log_likelihood_ >= em_only - 1e-9 * abs(em_only)
    # fitting α can only gain, and by little (one initial phase)
    assert fitted.log_likelihood_ >= stat.log_likelihood_ - 1e-6 * abs(stat.log_likelihood_)
    assert fitted.log_likelihood_ - stat.log_likelihood_ < 5.0
    np.testing.assert_allclose(stat.rates_, fitted.rates_, rtol=0.02)


def relative_errors(m: MMPPArrivals) -> np.ndarray:
    return np.abs(
        np.array(
            [
                m.rates_[0] / RATES[0],
                m.rates_[1] / RATES[1],
                m.generator_[0, 1] / GEN[0, 1],
                m.generator_[1, 0] / GEN[1, 0],
            ]
        )
        - 1
    )


def check_recovery(n: int, reps: int, rate_tol: float, switch_tol: float, p90: float) -> None:
    errs = np.array(
        [relative_errors(MMPPArrivals(2).fit(reference_times(n, 100 + r))) for r in range(reps)]
    )
    med = np.median(errs, axis=0)
    assert np.all(med[:2] <= rate_tol), med
    assert np.all(med[2:] <= switch_tol), med
    assert np.all(np.percentile(errs[:, 2:], 90, axis=0) <= p90), errs


def test_recovery_of_the_reference_model_at_1e4() -> None:
    # models.md §4.5: rates ≤ 2 %, switching ≤ 15 % (median), p90 ≤ 45 %, over ≥ 10 replicates
    check_recovery(10_000, 10, 0.02, 0.15, 0.45)


def test_recovery_of_the_reference_model_at_1e5() -> None:
    check_recovery(100_000, 10, 0.01, 0.06, 0.10)


# --- model selection (models.md §5.7) -------------------------------------------------------------


def test_bic_picks_one_state_on_poisson_data() -> None:
    times = np.cumsum(np.random.default_rng(7).exponential(10.0, 10_000))
    sel = select_mmpp(times, k_max=2)
    assert sel.n_states == 1
    assert set(sel.bic) == {1, 2}


def test_bic_picks_two_states_on_the_reference_model() -> None:
    sel = select_mmpp(reference_times(10_000, 9), k_max=2)
    assert sel.n_states == 2
    assert sel.to_dict()["selected"] == 2


@pytest.mark.parametrize("name", ["MMPP-1", "MMPP-2"])
def test_bic_picks_one_state_on_the_thesis_mmpps_with_hour_sojourns(name: str) -> None:
    rates = get_preset(name).arrival_rates
    gen = np.array([[-1 / 3600, 1 / 3600], [1 / 3600, -1 / 3600]])
    times, _ = ctmc_mmpp_arrival_times(rates, gen, size=10_000, rng=13)
    assert select_mmpp(times, k_max=2).n_states == 1


def test_bic_picks_one_state_on_the_thesis_preset_chain() -> None:
    p = get_preset("MMPP-1")
    times, _ = mmpp_arrival_times(10_000, p.arrival_rates, p.switch_probabilities, rng=14)
    assert select_mmpp(times, k_max=2).n_states == 1


@pytest.mark.slow
@pytest.mark.parametrize("n", [10_000, 100_000])
def test_bic_guard_at_both_sizes(n: int) -> None:
    times = np.cumsum(np.random.default_rng(n).exponential(10.0, n))
    assert select_mmpp(times, k_max=3).n_states == 1
    low = np.array([[-1 / 3600, 1 / 3600], [1 / 900, -1 / 900]])
    lc, _ = ctmc_mmpp_arrival_times([0.05, 0.1], low, size=n, rng=n + 1)
    assert select_mmpp(lc, k_max=3).n_states == 2
    for name in ("MMPP-1", "MMPP-2"):
        hour = np.array([[-1 / 3600, 1 / 3600], [1 / 3600, -1 / 3600]])
        t, _ = ctmc_mmpp_arrival_times(get_preset(name).arrival_rates, hour, size=n, rng=n + 2)
        assert select_mmpp(t, k_max=2).n_states == 1


# --- ties, serialisation, determinism -----------------------------------------------------------


def test_same_second_submissions_are_fitted_as_batches() -> None:
    times = np.floor(reference_times(3000, 30))
    m = MMPPArrivals(2, count_hmm_start=False).fit(times)
    epochs = np.unique(times)
    assert m.n_intervals_ == epochs.shape[0] - 1
    assert m.n_arrivals_ == times.shape[0]
    assert int((m.batch_sizes_ * m.batch_counts_).sum()) == times.shape[0]
    assert m.batch_sizes_.max() > 1
    assert m.score(times) == pytest.approx(m.score(epochs))
    drawn = m.sample(2000, rng=1)
    assert drawn.shape == (2000,)
    assert np.all(np.diff(drawn) >= 0)
    assert np.any(np.diff(drawn) == 0)  # batches come back


def test_ties_keep_fits_zero_gaps_literally() -> None:
    times = np.array([0.0, 0.0, 5.0, 9.0, 9.0, 9.0, 30.0, 31.0, 60.0, 61.0, 61.0, 100.0])
    m = MMPPArrivals(1, ties="keep").fit(times)
    assert m.n_intervals_ == 11
    assert m.rates_[0] == pytest.approx(11 / 100.0)
    assert MMPPArrivals(1).fit(times).n_intervals_ == 7  # 8 distinct times


def test_unsorted_times_are_rejected() -> None:
    with pytest.raises(FitError, match="sorted"):
        MMPPArrivals(2).fit([0.0, 5.0, 3.0])


def test_json_round_trip_is_exact() -> None:
    times = reference_times(3000, 31)
    m = MMPPArrivals(2, count_hmm_start=False).fit(times)
    data = json.loads(json.dumps(m.to_dict()))
    back = MMPPArrivals.from_dict(data)
    assert back.to_dict() == m.to_dict()
    assert back.score(times) == m.score(times)
    assert data["fitted"]["start_vector"] == "estimated"
    assert data["fitted"]["alpha"] == m.alpha_.tolist()
    np.testing.assert_array_equal(back.sample(100, rng=3), m.sample(100, rng=3))


def test_fit_and_sample_are_deterministic_per_seed() -> None:
    times = reference_times(3000, 32)
    a = MMPPArrivals(2, rng=5).fit(times)
    b = MMPPArrivals(2, rng=5).fit(times)
    assert a.to_dict() == b.to_dict()
    np.testing.assert_array_equal(a.sample(500, rng=9), b.sample(500, rng=9))
    assert not np.array_equal(a.sample(500, rng=9), a.sample(500, rng=10))
    np.testing.assert_array_equal(reference_times(100, 1), reference_times(100, 1))


def test_sample_by_horizon_has_the_stationary_rate() -> None:
    m = MMPPArrivals(2, count_hmm_start=False).fit(reference_times(5000, 33))
    drawn = m.sample(horizon_s=2e6, rng=4)
    assert drawn.max() <= 2e6
    assert drawn.shape[0] / 2e6 == pytest.approx(m.stationary_rate_, rel=0.05)


def test_a_near_absorbing_phase_draws_only_what_is_asked() -> None:
    # a fitted exit rate of 1e-9/s makes one sojourn ~1e9 s long: the draw is cut at the
    # horizon (or at what the size needs), so it neither draws ~2e7 discarded arrivals nor
    # changes the law: from phase 1, N(0, 1000 s] is Poisson(0.02 × 1000 = 20)
    rates, gen = [0.0, 0.02], [[-1e-2, 1e-2], [1e-9, -1e-9]]
    start = time.perf_counter()
    counts = [
        ctmc_mmpp_arrival_times(rates, gen, horizon_s=1000.0, initial=[0, 1], rng=s)[0].shape[0]
        for s in range(2000)
    ]
    assert np.mean(counts) == pytest.approx(20.0, abs=0.4)  # 4 standard errors
    assert np.var(counts) == pytest.approx(20.0, rel=0.15)
    times, _ = ctmc_mmpp_arrival_times(rates, gen, size=50_000, initial=[0, 1], rng=1)
    assert times.shape[0] == 50_000
    assert times[-1] == pytest.approx(50_000 / 0.02, rel=0.02)
    assert time.perf_counter() - start < 5.0


# --- the count-HMM path --------------------------------------------------------------------------


def test_poisson_hmm_is_labelled_approximate_and_converts_to_a_generator() -> None:
    times = reference_times(20_000, 40)
    m = PoissonHMMArrivals(2, bin_s=60.0, n_restarts=2).fit(times)
    q = m.generator_
    assert np.all(q - np.diag(np.diag(q)) >= 0)
    np.testing.assert_allclose(q.sum(axis=1), 0.0, atol=1e-15)
    assert m.generator_method_ == "logm"
    assert m.resolution_ok_  # 60 s ≤ 900 s / 15
    np.testing.assert_allclose(m.rates_, RATES, rtol=0.05)
    d = m.to_dict()
    assert d["approximate"] is True
    assert d["kind"] == "poisson_hmm"
    back = PoissonHMMArrivals.from_dict(json.loads(json.dumps(d)))
    assert back.to_dict() == d


def test_generator_from_transitions_is_the_matrix_log() -> None:
    import scipy.linalg

    from gridtrace.models._mmpp import _generator_from_transitions

    q = np.array([[-0.3, 0.2, 0.1], [0.05, -0.1, 0.05], [0.2, 0.2, -0.4]])
    p = scipy.linalg.expm(q * 2.0)
    back, method, clipped, note = _generator_from_transitions(p, 2.0)
    np.testing.assert_allclose(back, q, atol=1e-12)
    assert method == "logm"
    assert clipped == 0.0
    assert note is None


def test_poisson_hmm_flags_a_bin_too_coarse_for_the_sojourns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("INFO", logger="gridtrace.models._mmpp"):
        m = PoissonHMMArrivals(2, bin_s=900.0, n_restarts=1).fit(reference_times(20_000, 41))
    assert not m.resolution_ok_
    (note,) = [n for n in m.notes_ if "not well under" in n]
    assert note.startswith("bin 900 s is not well under the shortest fitted sojourn")
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned == [f"count HMM k=2: {n}" for n in m.notes_]


def test_poisson_hmm_says_when_it_hit_its_cap(caplog: pytest.LogCaptureFixture) -> None:
    times = reference_times(20_000, 42)
    with (
        caplog.at_level("INFO", logger="gridtrace.models._mmpp"),
        pytest.warns(ConvergenceWarning, match="cap of 3 iterations"),
    ):
        m = PoissonHMMArrivals(3, bin_s=60.0, n_restarts=1, n_iter=3).fit(times)
    # hmmlearn's monitor calls a fit that reached n_iter "converged"; this one is not
    assert m.n_iter_ == 3
    assert m.converged_ is False
    assert m.notes_[0].startswith("stopped at its cap of 3 iterations (last gain ")
    info = [r.getMessage() for r in caplog.records if r.levelname == "INFO"]
    assert any("3 of at most 3 iterations, not converged" in line for line in info)
    assert PoissonHMMArrivals.from_dict(json.loads(json.dumps(m.to_dict()))).notes_ == m.notes_


def test_count_hmm_start_is_logged_as_a_start(caplog: pytest.LogCaptureFixture) -> None:
    # the demo site's arrivals are Poisson-like: the count HMM's transition matrix then has no
    # real logarithm and its bin is coarse for what it finds; as a start of the exact EM that is
    # information (INFO), not a warning, and hmmlearn's own logger says nothing
    times = np.cumsum(np.random.default_rng(3).exponential(176.0, 4000))
    with caplog.at_level("DEBUG"):
        MMPPArrivals(2, rng=0, max_iter=5000).fit(times)
    mine = [r for r in caplog.records if r.name == "gridtrace.models._mmpp"]
    assert [r for r in mine if r.levelno >= logging.WARNING] == []
    (start,) = [r.getMessage() for r in mine if "count-HMM start" in r.getMessage()]
    assert start.startswith("MMPP k=2: count-HMM start (only seeds the exact EM): ")
    assert "of at most 50 iterations" in start
    assert "generator by the first-order (P - I)/bin" in start
    assert not [r for r in caplog.records if r.name.startswith("hmmlearn")]
    assert logging.getLogger("hmmlearn").propagate  # restored after the fit


def test_hmmlearn_records_are_taken_in_and_said_once(caplog: pytest.LogCaptureFixture) -> None:
    from gridtrace.models._mmpp import _hmmlearn_notes, _hmmlearn_records

    base = logging.getLogger("hmmlearn.base")
    records: list[logging.LogRecord] = []
    with caplog.at_level("DEBUG"), _hmmlearn_records(records):
        for delta in (-1e-12, -0.5, -2.0):
            base.warning(
                "Model is not converging.  Current: -1000 is not greater than -999. Delta is %s",
                delta,
            )
        for _ in range(2):
            base.warning("Some rows of transmat_ have zero sum because no transition was seen.")
    assert len(records) == 5
    assert not [r for r in caplog.records if r.name.startswith("hmmlearn")]
    notes = _hmmlearn_notes(records, -1000.0)
    assert notes == [
        "hmmlearn (restart 1): Some rows of transmat_ have zero sum because no transition was "
        "seen.",
        "EM log-likelihood decreased by up to 2 (restart 1): numerical trouble in hmmlearn, "
        "which EM itself never does",
    ]
