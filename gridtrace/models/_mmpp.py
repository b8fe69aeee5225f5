"""Markov-modulated Poisson arrivals: exact continuous-time EM, the count-HMM path, closed forms.

:class:`MMPPArrivals` fits a k-phase MMPP to inter-arrival times by Rydén's exact EM (Rydén 1996,
*An EM algorithm for estimation in Markov-modulated Poisson processes*, CSDA 21). Its E-step is
:func:`gridtrace.models._mmpp_kernel.forward_backward`: an eigendecomposition of D0 once per
iteration and a compiled scaled forward–backward pass, O(N k²) per iteration.

:class:`PoissonHMMArrivals` is the fast *approximate* path: a discrete-time Poisson HMM
(``hmmlearn.hmm.PoissonHMM``) on counts per bin, converted to continuous time with
``Q = logm(P) / Δ``. Its error is a bias of order Δ / (shortest sojourn) that does not
shrink with N.

The closed forms (:func:`mmpp_moments`, :func:`mmpp_iat_acf`, :func:`mmpp_idc`) follow the MAP
formulas of the reference notes (models.md §5): embedded phase law φ,
``E[X^n] = n! φ (−D0)^{−n} 1``, lag-k correlation from ``φ (−D0)^{−1} P^k (−D0)^{−1} 1``
with ``P = (−D0)^{−1} D1``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg
import scipy.optimize
from numpy.typing import ArrayLike, NDArray

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError, ConvergenceWarning, FitError
from gridtrace.models._arrivals import ArrivalModel, check_times
from gridtrace.models._mmpp_kernel import (
    EStep,
    eigen_condition,
    forward_backward,
    forward_backward_reference,
    log_likelihood,
)
from gridtrace.models._synth import ctmc_mmpp_arrival_times, stationary_law
from gridtrace.random import as_generator

__all__ = [
    "MMPPArrivals",
    "MMPPSelection",
    "PoissonHMMArrivals",
    "embedded_phase_law",
    "mmpp_iat_acf",
    "mmpp_idc",
    "mmpp_moments",
    "select_mmpp",
]

logger = library_logger(__name__)

F64 = NDArray[np.float64]
# Above this condition number of D0's eigenvectors the E-step uses the Van Loan reference.
_MAX_CONDITION = 1e8
# The log-likelihood is Σ log c_n + d_max Σ t, and float64 finds D0's eigenvalues only to about
# ε ‖D0‖: parameters for which ε ‖D0‖₁ Σ t exceeds this (nats) cannot be evaluated, and EM or the
# direct maximisation would otherwise climb on rounding error (a phase of rate 1e14 s⁻¹ scored
# 10,000 nats above the maximum).
_MAX_ROUNDING_NATS = 1e-4


# --- closed forms -------------------------------------------------------------------------------


def _d0(rates: ArrayLike, generator: ArrayLike) -> tuple[F64, F64, F64]:
    lam = np.asarray(rates, dtype=np.float64)
    q = np.asarray(generator, dtype=np.float64)
    return lam, q, q - np.diag(lam)


def embedded_phase_law(rates: ArrayLike, generator: ArrayLike) -> F64:
    """Stationary phase law just after an arrival, ``φ = π Λ / (π λ)``."""
    lam, q, _ = _d0(rates, generator)
    pi = stationary_law(q)
    w = pi * lam
    return np.asarray(w / w.sum(), dtype=np.float64)


def mmpp_moments(rates: ArrayLike, generator: ArrayLike, orders: Sequence[int] = (1, 2, 3)) -> F64:
    """Stationary moments of the inter-arrival time, ``E[X^n] = n! φ (−D0)^{−n} 1``.

    Parameters
    ----------
    rates : array_like, shape (k,)
        λ per phase, s⁻¹.
    generator : array_like, shape (k, k)
        Generator Q of the phase chain.
    orders : sequence of int, default (1, 2, 3)
        The moments wanted.

    Returns
    -------
    ndarray
        One moment per order, in s^n.
    """
    _, _, d0 = _d0(rates, generator)
    phi = embedded_phase_law(rates, generator)
    inv = np.linalg.inv(-d0)
    ones = np.ones(d0.shape[0])
    out = []
    for n in orders:
        out.append(math.factorial(n) * float(phi @ np.linalg.matrix_power(inv, n) @ ones))
    return np.asarray(out)


def mmpp_iat_acf(rates: ArrayLike, generator: ArrayLike, lags: Sequence[int] = (1,)) -> F64:
    """Autocorrelation of consecutive inter-arrival times at the given lags."""
    lam, _, d0 = _d0(rates, generator)
    phi = embedded_phase_law(rates, generator)
    inv = np.linalg.inv(-d0)
    p = inv @ np.diag(lam)
    ones = np.ones(d0.shape[0])
    m1, m2 = mmpp_moments(rates, generator, (1, 2))
    var = m2 - m1 * m1
    out = []
    for k in lags:
        joint = float(phi @ inv @ np.linalg.matrix_power(p, k) @ inv @ ones)
        out.append((joint - m1 * m1) / var)
    return np.asarray(out)


def mmpp_idc(rates: ArrayLike, generator: ArrayLike, t: ArrayLike) -> F64:
    """Index of dispersion for counts ``Var N(t) / E N(t)`` of the stationary MMPP.

    Uses the MAP count variance (Neuts; Lucantoni): with D = D0 + D1, π its stationary law,
    λ̄ = π D1 1 and ``D# = (1π − D)^{−1}``,
    ``Var N(t) = (λ̄ − 2λ̄² + 2 π D1 D# D1 1) t − 2 π D1 (I − e^{Dt}) D#² D1 1``.
    """
    lam, q, _ = _d0(rates, generator)
    k = lam.shape[0]
    pi = stationary_law(q)
    d1 = np.diag(lam)
    mean_rate = float(pi @ lam)
    ones = np.ones(k)
    dsharp = np.linalg.inv(np.outer(ones, pi) - q)
    linear = mean_rate - 2.0 * mean_rate**2 + 2.0 * float(pi @ d1 @ dsharp @ d1 @ ones)
    out = []
    for s in np.atleast_1d(np.asarray(t, dtype=np.float64)):
        transient = float(
            pi @ d1 @ (np.eye(k) - scipy.linalg.expm(q * s)) @ dsharp @ dsharp @ d1 @ ones
        )
        var = linear * s - 2.0 * transient
        out.append(var / (mean_rate * s))
    return np.asarray(out)


# --- the shared MMPP machinery -----------------------------------------------------------------


def _sort_states(rates: F64, generator: F64, alpha: F64) -> tuple[F64, F64, F64]:
    order = np.argsort(rates, kind="stable")
    return rates[order], generator[np.ix_(order, order)], alpha[order]


def _generator_from_offdiag(off: F64) -> F64:
    q = off.copy()
    np.fill_diagonal(q, 0.0)
    np.fill_diagonal(q, -q.sum(axis=1))
    return q


class _MMPPBase(ArrivalModel):
    """Scoring, sampling and serialisation shared by the exact and the count-HMM MMPP."""

    rates_: F64
    generator_: F64

    def __init__(self, n_states: int = 2, *, ties: str = "batch") -> None:
        super().__init__(ties=ties)
        self.n_states = n_states

    @property
    def n_parameters(self) -> int:
        """k² (k rates and k(k − 1) generator entries; the initial phase law is not counted)."""
        return int(self.n_states) ** 2

    def _score_epochs(self, epochs: F64) -> float:
        phi = embedded_phase_law(self.rates_, self.generator_)
        return log_likelihood(np.diff(epochs), self.rates_, self.generator_, phi)

    def _sample_epochs(
        self, gen: np.random.Generator, size: int | None, horizon_s: float | None
    ) -> F64:
        times, _ = ctmc_mmpp_arrival_times(
            self.rates_, self.generator_, size=size, horizon_s=horizon_s, rng=gen
        )
        return times

    @property
    def stationary_rate_(self) -> float:
        """Long-run arrival rate π λ, s⁻¹."""
        return float(stationary_law(self.generator_) @ self.rates_)

    def iat_cdf(self, t: ArrayLike) -> F64:
        """Stationary CDF of the inter-arrival time, ``1 − φ e^{D0 t} 1``."""
        tt = np.maximum(np.asarray(t, dtype=np.float64), 0.0)
        d0 = self.generator_ - np.diag(self.rates_)
        d, v = np.linalg.eig(d0)
        phi = embedded_phase_law(self.rates_, self.generator_)
        left = phi @ v
        right = np.linalg.solve(v, np.ones(d0.shape[0]))
        surv = (np.exp(np.multiply.outer(tt, d)) * (left * right)).sum(axis=-1).real
        return np.asarray(np.clip(1.0 - surv, 0.0, 1.0), dtype=np.float64)


# --- exact EM -----------------------------------------------------------------------------------

START_VECTORS = ("estimated", "stationary")
# the hyper-parameter's spellings: "fitted" is the older name of "estimated"
_START_VECTOR_OF = {"estimated": "estimated", "fitted": "estimated", "stationary": "stationary"}
# The direct maximisation moves each log-parameter at most this far from where it starts
# (a factor e^10 ≈ 2.2e4): far enough for any polish of an EM fixed point, near enough that no
# trial point overflows or makes D0 numerically defective.
_BOX = 10.0
# The direct maximisation takes no rate (arrival or switching) below this many events per span
# of the trace (one EM left lower may stay where it is): below it a rate changes the
# log-likelihood by less than about as much, so a maximum on the boundary (a silent phase, a
# transition that never happens) is reached in finitely many steps.
_FLOOR_EVENTS = 1e-4
# EM hands over to the direct maximisation when each of its last _SLOW_STEPS gains is at least
# _SLOW_RATIO of the one before: it is converging linearly at that rate or slower, which would
# take tens to hundreds more iterations (the missing information is large).
_SLOW_STEPS = 3
_SLOW_RATIO = 0.8
_EM_STOPS = {
    "tolerance": "met tol",
    "slow": "handed over: converging slowly",
    "decrease": "handed over: a stationary-α step lowered the likelihood",
    "cap": "hit max_iter",
    "error": "stopped by a numerical error",
    "closed form": "closed form",
}
# Rounds of the direct maximisation (each rescaled at its start).
_ROUNDS = 50
_ROUND_ITER = 30


@dataclass(slots=True)
class _Start:
    """One EM run: its current parameters, the best point it has evaluated, and its cost."""

    name: str
    rates: F64
    generator: F64
    alpha: F64
    status: str = "ok"
    stats: EStep | None = None  # the E-step of the current parameters, once evaluated
    trace: list[float] = field(default_factory=list)
    n_iter: int = 0
    em_stop: str = ""  # "" (going on), "tolerance", "slow", "decrease", "cap", "error"
    best: tuple[F64, F64, F64] | None = None
    best_stats: EStep | None = None
    best_ll: float = -math.inf
    screen_ll: float = -math.inf
    final_ll: float | None = None
    optimum: _Optimum | None = None

    def record(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "log_likelihood": _finite(self.screen_ll),
            "n_iter": self.n_iter,
            "em_stop": self.em_stop or None,
            "em_log_likelihood": None if self.final_ll is None else _finite(self.final_ll),
            "log_likelihood_final": (
                None if self.optimum is None else _finite(self.optimum.log_likelihood)
            ),
            "direct": None
            if self.optimum is None
            else {
                "n_iter": self.optimum.n_iter,
                "n_evaluations": self.optimum.n_evaluations,
                "gradient_norm": _finite(self.optimum.gradient_norm),
                "message": self.optimum.message,
            },
        }


@dataclass(frozen=True, slots=True)
class _Optimum:
    """Where the direct maximisation (or, if it could not do better, EM) ended."""

    rates: F64
    generator: F64
    alpha: F64
    log_likelihood: float
    gradient_norm: float
    n_iter: int
    n_evaluations: int
    message: str
    improved: bool


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _stationary_alpha_gradient(post: F64, rates: F64, q: F64) -> F64:
    """``Σ_i post_i ∂ log φ_i / ∂θ`` for θ = (log λ, log q_ab, a ≠ b), φ = π Λ / (π λ).

    With Z = (1π − Q)⁻¹, ``∂π/∂q_ab = π_a (Z_b· − Z_a·)``; λ enters φ only through Λ and πλ.
    """
    k = rates.shape[0]
    pi = stationary_law(q)
    mean_rate = float(pi @ rates)
    z = np.linalg.inv(np.outer(np.ones(k), pi) - q)
    phi = pi * rates / mean_rate
    w = np.divide(post, pi, out=np.zeros(k), where=pi > 0.0)
    c = z @ (w - rates / mean_rate)
    mask = ~np.eye(k, dtype=bool)
    dq = q * pi[:, None] * (c[None, :] - c[:, None])
    return np.concatenate([post - phi * float(post.sum()), dq[mask]])


def log_likelihood_gradient(stats: EStep, rates: F64, generator: F64, *, stationary: bool) -> F64:
    """Gradient of the exact log-likelihood in log-parameters, from one E-step.

    By Fisher's identity the gradient of the observed log-likelihood is the posterior expectation
    of the complete-data score: ``∂ℓ/∂log λ_i = A_i − λ_i T_i`` and
    ``∂ℓ/∂log q_ij = M_ij − q_ij T_i`` (A arrivals, T time, M jumps, as in :class:`EStep`).
    With a stationary α = φ(θ) the dependence of α on θ is added.

    Parameters
    ----------
    stats : EStep
        The E-step at (rates, generator) and the α used.
    rates, generator : ndarray
        The parameters.
    stationary : bool
        Whether α is the stationary embedded law φ(θ) (else α is held fixed).

    Returns
    -------
    ndarray, shape (k²,)
        The k rate components, then the off-diagonal generator entries in row-major order.
    """
    k = rates.shape[0]
    mask = ~np.eye(k, dtype=bool)
    grad = np.concatenate(
        [
            stats.arrivals - rates * stats.time_in_phase,
            (stats.jumps - generator * stats.time_in_phase[:, None])[mask],
        ]
    )
    if stationary:
        grad = grad + _stationary_alpha_gradient(stats.initial, rates, generator)
    return grad


class MMPPArrivals(_MMPPBase):
    """k-phase MMPP fitted by exact continuous-time EM on inter-arrival times, from many starts.

    The fit runs in three stages:

    1. **Starts.** Built in: rates at quantiles of windowed local rates (``quantiles``), 1-D
       k-means on the windowed log-rates (``kmeans``), the count-HMM solution (``count_hmm``),
       the moment-matched MMPP(2) (``moments``, k = 2), and the fitted (k − 1)-phase MMPP with
       one phase split in two (``split<i>``, one per phase, k ≥ 3; see ``nested_start``); or the
       user's ``init``. Plus
       ``n_random_starts`` random ones drawn from ``rng`` (rates log-uniform over the range of
       the local rates, sojourns log-uniform between a few inter-arrival times and a tenth of the
       span). EM runs ``n_init_iter`` iterations from each.
    2. **EM** from the ``n_full_runs`` best of them, each then **maximised directly**:
       L-BFGS-B on the log-parameters with the exact log-likelihood and its exact gradient
       (Fisher's identity, plus the derivative of a stationary α), each log-parameter scaled by
       the square root of its expected count (arrivals for a rate, jumps for a switching rate),
       so that the scaled gradient measures how far the maximum is. It stops when that
       gradient's max-norm is at most ``grad_tol`` (by a quadratic model, the likelihood is then
       within about ``k² grad_tol² / 2`` of the local maximum; more on a flat ridge). It never
       lowers the likelihood: when it cannot do better, EM's answer is kept. EM hands over to it
       early when EM converges slowly (each of its last three gains at least 0.8 of the one
       before). It moves no rate below 1e-4 events per span of the trace (or below EM's value, if
       lower), so that a maximum on the boundary (a silent phase, a transition that never
       happens) is reached.
    3. The run with the highest log-likelihood wins.

    Parameters
    ----------
    n_states : int, default 2
        Number of phases k.
    alpha : {"estimated", "stationary"}, default "estimated"
        The start vector α, the phase law just after the first (conditioning) arrival.
        ``"estimated"`` (older spelling ``"fitted"``): α is a parameter; EM then never lowers
        the likelihood, and at the maximum α is a point mass on the phase from which the data
        are likeliest. ``"stationary"``: α is held at the embedded stationary law φ(θ); EM alone
        is then not monotone (its M-step ignores how α depends on θ, models.md §4.2), and the
        direct maximisation takes the dependence into account. Either way :meth:`score` uses the
        fitted ``alpha_``.
    max_iter : int, default 300
        Cap on the EM iterations of each full run.
    tol : float, default 1e-8
        EM stops when the relative log-likelihood change falls below ``tol``.
    n_init_iter : int, default 8
        EM iterations given to every start before the best are chosen.
    n_random_starts : int or "auto", default "auto"
        Random starts added to the others; ``"auto"``: 2 for k ≤ 2 (the built-in starts already
        find the maximum there), ``4 k`` for k ≥ 3, where EM has local maxima.
    n_full_runs : int or "auto", default "auto"
        How many of the best starts run to convergence and are maximised directly; ``"auto"``: 1
        for k ≤ 2, 3 for k ≥ 3.
    init : "auto" or sequence of (rates, generator), default "auto"
        The starting points besides the random ones: ``"auto"`` for the built-in ones, or the
        caller's own (e.g. a previous fit's ``(rates_, generator_)``).
    count_hmm_start : bool, default True
        With ``init="auto"``, add the :class:`PoissonHMMArrivals` solution as a start.
    nested_start : bool, default True
        With ``init="auto"`` and k ≥ 3, fit the (k − 1)-phase MMPP first (with these settings)
        and add it as k − 1 starts, each splitting one of its phases into two of rates 0.9 and 1.1
        times the phase's (the switching rates into the phase shared between the two halves,
        those out of it kept). The best of them always runs to the end, so that a k-phase fit
        does not end below the (k − 1)-phase one, a family it contains: without them the k ≥ 3
        starts can all lie in worse basins than the smaller model's.
    polish : bool, default True
        Run the direct maximisation after EM.
    grad_tol : float, default 1e-3
        Stop the direct maximisation when the scaled gradient (see above) has max-norm
        ``≤ grad_tol``; ``converged_`` says whether it did.
    polish_max_iter : int, default 500
        Iteration cap of the direct maximisation.
    kernel : {"fast", "reference"}, default "fast"
        E-step implementation (the reference is the slow Van Loan one, for checking).
    rng : int, SeedSequence, Generator or None, default 0
        Source of the random starts and of hmmlearn's seed; the same seed gives the same fit.
    ties : {"batch", "keep"}, default "batch"
        See :class:`~gridtrace.models.ArrivalModel`.

    Attributes
    ----------
    rates_ : ndarray, shape (k,)
        Arrival rate per phase, s⁻¹, increasing.
    generator_ : ndarray, shape (k, k)
        Generator Q of the phase chain.
    start_vector_ : str
        ``"estimated"`` or ``"stationary"``: which α the fit and :meth:`score` use.
    alpha_ : ndarray, shape (k,)
        That α.
    log_likelihood_ : float
        Exact log-likelihood of the training intervals at the fit, with ``alpha_``
        (equal to ``score`` of the training times).
    log_likelihood_trace_ : list of float
        Log-likelihood at each EM iteration of the winning run (its short run included).
    n_iter_ : int
        EM iterations of the winning run.
    em_stop_ : str
        Why that EM run stopped: ``"tolerance"`` (it met ``tol``), ``"slow"`` (it was
        converging linearly at a rate of 0.8 per iteration or slower, and handed over to the
        direct maximisation), ``"decrease"`` (stationary α only: an EM step lowered the
        likelihood; handed over), ``"cap"`` (``max_iter``), ``"error"``.
    polished_ : bool
        Whether the direct maximisation raised the likelihood (and its answer was kept).
    n_polish_iter_ : int
        Iterations of the winning run's direct maximisation (0 without it).
    gradient_norm_ : float
        Max-norm of the scaled gradient of the log-likelihood at the answer (see above; for an
        estimated α, with respect to the rates and the generator, α being a point mass already
        at its own maximum).
    converged_ : bool
        Whether the answer is a maximum to the stated tolerance: ``gradient_norm_ ≤ grad_tol``
        (with ``polish``), else whether EM met ``tol``.
    starts_ : list of dict
        Every start: ``name``, ``status``, ``log_likelihood`` after the short run,
        ``n_iter`` (EM), ``em_stop``, and for the full runs ``em_log_likelihood`` (at the end of
        EM), ``log_likelihood_final`` (after the direct maximisation) and ``direct`` (its
        iterations, E-step evaluations, final scaled gradient norm and stopping message).
    best_start_ : str
        The winning start.

    Examples
    --------
    >>> from gridtrace.models import ctmc_mmpp_arrival_times
    >>> q = [[-1 / 3600, 1 / 3600], [1 / 900, -1 / 900]]
    >>> t, _ = ctmc_mmpp_arrival_times([0.02, 0.2], q, size=5000, rng=1)
    >>> m = MMPPArrivals(2, count_hmm_start=False).fit(t)
    >>> m.rates_.round(2).tolist()
    [0.02, 0.2]
    >>> m.converged_, m.start_vector_
    (True, 'estimated')
    """

    kind = "mmpp"

    def __init__(
        self,
        n_states: int = 2,
        *,
        alpha: str = "estimated",
        max_iter: int = 300,
        tol: float = 1e-8,
        n_init_iter: int = 8,
        n_random_starts: int | str = "auto",
        n_full_runs: int | str = "auto",
        init: str | Sequence[tuple[ArrayLike, ArrayLike]] = "auto",
        count_hmm_start: bool = True,
        nested_start: bool = True,
        polish: bool = True,
        grad_tol: float = 1e-3,
        polish_max_iter: int = 500,
        kernel: str = "fast",
        rng: int | None = 0,
        ties: str = "batch",
    ) -> None:
        super().__init__(n_states, ties=ties)
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.n_init_iter = n_init_iter
        self.n_random_starts = n_random_starts
        self.n_full_runs = n_full_runs
        self.init = init
        self.count_hmm_start = count_hmm_start
        self.nested_start = nested_start
        self.polish = polish
        self.grad_tol = grad_tol
        self.polish_max_iter = polish_max_iter
        self.kernel = kernel
        self.rng = rng

    # --- scoring --------------------------------------------------------------------------------

    def _score_epochs(self, epochs: F64) -> float:
        return log_likelihood(np.diff(epochs), self.rates_, self.generator_, self.alpha_)

    # --- EM -------------------------------------------------------------------------------------

    @property
    def _stationary(self) -> bool:
        return _START_VECTOR_OF[str(self.alpha)] == "stationary"

    def _estep(self, t: F64, rates: F64, q: F64, alpha: F64) -> EStep:
        d0 = q - np.diag(rates)
        rounding = float(np.finfo(np.float64).eps * np.abs(d0).sum(axis=0).max() * t.sum())
        if not rounding <= _MAX_ROUNDING_NATS:
            raise FloatingPointError(
                f"rates up to {float(np.abs(d0).max()):.3g}/s over {float(t.sum()):.3g} s: the "
                f"likelihood is lost to rounding (about {rounding:.2g} nats)"
            )
        if self.kernel == "reference":
            return forward_backward_reference(t, rates, q, alpha)
        if eigen_condition(q - np.diag(rates)) > _MAX_CONDITION:
            logger.debug("D0 is close to defective: this E-step uses the Van Loan reference")
            return forward_backward_reference(t, rates, q, alpha)
        return forward_backward(t, rates, q, alpha)

    def _mstep(self, stats: EStep) -> tuple[F64, F64, F64]:
        total = float(stats.time_in_phase.sum())
        time = np.maximum(stats.time_in_phase, 1e-300 * max(total, 1.0))
        new_rates = np.maximum(stats.arrivals / time, 0.0)
        new_q = _generator_from_offdiag(stats.jumps / time[:, None])
        alpha = embedded_phase_law(new_rates, new_q) if self._stationary else stats.initial
        return new_rates, new_q, alpha

    def _advance(
        self, t: F64, s: _Start, budget: int, *, hand_over: bool = False, final: bool = False
    ) -> None:
        """Run up to ``budget`` EM iterations of ``s``, keeping the best point evaluated.

        An iteration evaluates the current parameters (E-step), checks the stopping rules, and
        moves to the M-step's parameters, which the next iteration evaluates; a run stopped by its
        budget keeps those last, unevaluated, parameters for a later continuation. With
        ``hand_over`` EM also stops once it crawls (see :data:`_SLOW_RATIO`) or, with a
        stationary α, once a step lowers the likelihood: the direct maximisation does better.
        A ``final`` run that spends its budget records the stop as ``"cap"``.
        """
        used = 0
        while used < budget and s.em_stop == "":
            if s.stats is None:
                stats = self._estep(t, s.rates, s.generator, s.alpha)
                used += 1
                s.n_iter += 1
                ll = stats.log_likelihood
                s.trace.append(ll)
                s.stats = stats
                if ll > s.best_ll:
                    s.best, s.best_ll = (s.rates, s.generator, s.alpha), ll
                    s.best_stats = stats
                s.em_stop = self._em_stop(s.trace, hand_over)
                if s.em_stop:
                    return
            s.rates, s.generator, s.alpha = self._mstep(s.stats)
            s.stats = None
        if final and not s.em_stop:
            s.em_stop = "cap"

    def _em_stop(self, trace: Sequence[float], hand_over: bool) -> str:
        """Why EM stops after this log-likelihood trace ("" to go on)."""
        if len(trace) < 2 or not math.isfinite(trace[-2]):
            return ""
        gains = np.diff(np.asarray(trace[-(_SLOW_STEPS + 2) :]))
        if abs(float(gains[-1])) <= float(self.tol) * abs(trace[-2]):
            return "tolerance"
        if not hand_over:
            return ""
        if gains[-1] < 0.0:
            return "decrease"
        if gains.shape[0] == _SLOW_STEPS + 1 and bool(np.all(gains > 0.0)):
            ratios = gains[1:] / gains[:-1]
            if bool(np.all(ratios >= _SLOW_RATIO)):
                return "slow"
        return ""

    # --- the direct maximisation ----------------------------------------------------------------

    def _point(self, t: F64, rates: F64, q: F64, alpha: F64) -> _Point:
        stats = self._estep(t, rates, q, alpha)
        grad = log_likelihood_gradient(stats, rates, q, stationary=self._stationary)
        return _Point(rates, q, alpha, stats, grad)

    def _maximise(
        self, t: F64, rates: F64, q: F64, alpha: F64, ll0: float, stats: EStep | None = None
    ) -> _Optimum:
        """Maximise the exact log-likelihood directly from an EM answer; never lower it.

        Rounds of L-BFGS-B on the log-parameters, each scaled by √(expected count) at the
        round's start and boxed to ±``_BOX`` around it, until the scaled gradient at the answer
        (counts taken there) is at most ``grad_tol``, a round gains nothing, or the iteration
        budget is spent. With an estimated α the parameter α is profiled out: at fixed (λ, Q) the
        best α is the point mass on the phase with the largest backward density, so α is held
        there while (λ, Q) move, and moved after each round if another phase has become best.
        """
        k = rates.shape[0]
        mask = ~np.eye(k, dtype=bool)
        stationary = self._stationary
        floor = _FLOOR_EVENTS / float(t.sum())
        # exact zeros (underflow) get a value whose log is finite and whose effect is nil
        r0 = np.maximum(rates, 1e-12 * floor)
        q0 = _generator_from_offdiag(np.where(mask, np.maximum(q, 1e-12 * floor), 0.0))
        a0 = embedded_phase_law(r0, q0) if stationary else alpha
        unchanged = (
            np.array_equal(r0, rates) and np.array_equal(q0, q) and np.array_equal(a0, alpha)
        )
        if stats is not None and unchanged:  # EM's own E-step of this point
            grad = log_likelihood_gradient(stats, r0, q0, stationary=stationary)
            current, n_eval = _Point(r0, q0, a0, stats, grad), 0
        else:
            current, n_eval = self._point(t, r0, q0, a0), 1
        if not stationary:
            current, moved = self._profile_alpha(t, current)
            n_eval += int(moved)
        if current.log_likelihood >= ll0:
            best = current
        else:  # the floors cost something: EM's own answer is the baseline
            best = self._point(t, rates, q, alpha)
            n_eval += 1
        n_iter = 0
        budget = int(self.polish_max_iter)
        message = "the EM answer is already a maximum"
        for _ in range(_ROUNDS):
            if current.norm <= float(self.grad_tol) or n_iter >= budget:
                break
            run = _LogObjective(self, t, current, math.log(floor))
            result = scipy.optimize.minimize(
                run,
                run.u0,
                jac=True,
                method="L-BFGS-B",
                bounds=run.bounds,
                options={
                    "maxiter": min(budget - n_iter, _ROUND_ITER),
                    "gtol": float(self.grad_tol),
                    "ftol": 1e-13,
                    "maxcor": 20,
                },
            )
            n_iter += int(result.nit)
            n_eval += run.n_evaluations
            message = str(result.message)
            end = run.point(np.asarray(result.x, dtype=np.float64))
            if end is None:
                end = self._point(t, *run.unpack(np.asarray(result.x) / run.scale), run.alpha)
                n_eval += 1
            if not stationary:
                end, moved = self._profile_alpha(t, end)
                n_eval += int(moved)
            gain = end.log_likelihood - current.log_likelihood
            if gain >= 0.0:
                current = end
            if current.log_likelihood >= best.log_likelihood:
                best = current
            if not gain > 0.0:
                break
        improved = best.log_likelihood > ll0
        if not improved:
            message = f"kept the EM answer ({message})"
        return _Optimum(
            best.rates,
            best.generator,
            best.alpha,
            best.log_likelihood,
            best.norm,
            n_iter,
            n_eval,
            message,
            improved,
        )

    def _profile_alpha(self, t: F64, point: _Point) -> tuple[_Point, bool]:
        """Move an estimated α to the point mass on the phase the data make likeliest."""
        mass = _point_mass(point.stats.first_backward)
        if np.array_equal(mass, point.alpha):
            return point, False
        moved = self._point(t, point.rates, point.generator, mass)
        if moved.log_likelihood >= point.log_likelihood:
            logger.debug(
                "MMPP direct maximisation: the estimated α moves to phase %d", int(np.argmax(mass))
            )
            return moved, True
        return point, True

    # --- starts ---------------------------------------------------------------------------------

    def _n_random(self, k: int) -> int:
        n = self.n_random_starts
        if n == "auto":
            return 2 if k <= 2 else 4 * k
        if isinstance(n, str) or int(n) < 0:
            raise ConfigError(f"n_random_starts must be 'auto' or an int >= 0, got {n!r}")
        return int(n)

    def _n_full(self, k: int) -> int:
        n = self.n_full_runs
        if n == "auto":
            return 1 if k <= 2 else 3
        if isinstance(n, str) or int(n) < 1:
            raise ConfigError(f"n_full_runs must be 'auto' or an int >= 1, got {n!r}")
        return int(n)

    def _starts(self, t: F64, epochs: F64, gen: np.random.Generator) -> list[_Start]:
        k = int(self.n_states)
        starts: list[_Start] = []
        if isinstance(self.init, str):
            if self.init != "auto":
                raise ConfigError("init must be 'auto' or a sequence of (rates, generator) pairs")
            starts.append(self._make("quantiles", *_quantile_start(t, k)))
            starts.append(self._make("kmeans", *_kmeans_start(t, k)))
            if self.count_hmm_start:
                starts.append(self._count_hmm_start(epochs, k, gen))
            if k == 2:
                try:
                    r, q = moment_matched_mmpp2(t)
                    starts.append(self._make("moments", r, q))
                except FitError as exc:
                    starts.append(_failed("moments", k, f"infeasible: {exc}"))
            if self.nested_start and k >= 3:  # for k = 2 the built-in starts find the maximum
                starts.extend(self._split_starts(epochs, k, gen))
        else:
            for i, (given_rates, given_q) in enumerate(self.init):
                r = np.asarray(given_rates, dtype=np.float64)
                g = np.asarray(given_q, dtype=np.float64)
                if r.shape != (k,) or g.shape != (k, k):
                    raise ConfigError(
                        f"init[{i}]: want rates of shape ({k},) and a ({k}, {k}) generator, got "
                        f"{r.shape} and {g.shape}"
                    )
                if np.any(r < 0) or np.any(g - np.diag(np.diag(g)) < 0):
                    raise ConfigError(f"init[{i}]: rates and off-diagonal rates must be >= 0")
                starts.append(self._make(f"init{i}", r, _generator_from_offdiag(g)))
        for i in range(self._n_random(k)):
            starts.append(self._make(f"random{i}", *_random_start(t, k, gen)))
        return starts

    def _split_starts(self, epochs: F64, k: int, gen: np.random.Generator) -> list[_Start]:
        params = {**self._params(), "n_states": k - 1, "rng": int(gen.integers(2**31 - 1))}
        smaller = type(self)(**params)
        try:
            with warnings.catch_warnings():
                # a starting point only: whether the smaller fit converged is not the result
                warnings.simplefilter("ignore", ConvergenceWarning)
                smaller._fit_epochs(epochs)
        except FitError as exc:
            logger.info("MMPP k=%d: no (k-1)-phase start (%s)", k, exc)
            return [_failed("split", k, f"the {k - 1}-phase fit failed: {exc}")]
        return [
            self._make(f"split{i}", *split_phase(smaller.rates_, smaller.generator_, i))
            for i in range(k - 1)
        ]

    def _count_hmm_start(self, epochs: F64, k: int, gen: np.random.Generator) -> _Start:
        try:
            hmm = PoissonHMMArrivals(
                k,
                n_restarts=1,
                n_iter=50,
                max_bins=20_000,
                rng=int(gen.integers(2**31 - 1)),
                ties="keep",
            )
            hmm._as_start = True  # its notes are about a starting point: INFO, not WARNING
            with warnings.catch_warnings():
                # an initialiser only: its own convergence and resolution are not the result
                warnings.simplefilter("ignore", ConvergenceWarning)
                hmm.fit(epochs)
            return self._make("count_hmm", hmm.rates_, hmm.generator_)
        except (FitError, np.linalg.LinAlgError, ValueError) as exc:
            logger.info("MMPP k=%d: no count-HMM start (%s)", k, exc)
            return _failed("count_hmm", k, f"failed: {exc}")

    def _make(self, name: str, rates: ArrayLike, q: ArrayLike) -> _Start:
        r = np.asarray(rates, dtype=np.float64).copy()
        g = np.asarray(q, dtype=np.float64).copy()
        alpha = embedded_phase_law(r, g) if self._stationary else np.full(r.shape[0], 1 / r.size)
        return _Start(name, r, g, alpha)

    # --- fit ------------------------------------------------------------------------------------

    def _check_params(self) -> int:
        k = int(self.n_states)
        if k < 1:
            raise ConfigError(f"n_states must be >= 1, got {k}")
        if self.alpha not in _START_VECTOR_OF:
            raise ConfigError(
                f"alpha must be one of {', '.join(START_VECTORS)}, got {self.alpha!r}"
            )
        if self.kernel not in ("fast", "reference"):
            raise ConfigError(f"kernel must be 'fast' or 'reference', got {self.kernel!r}")
        if not (self.grad_tol > 0 and self.tol >= 0):
            raise ConfigError("grad_tol must be > 0 and tol >= 0")
        self._n_random(k)
        self._n_full(k)
        return k

    def _fit_epochs(self, epochs: F64) -> None:
        k = self._check_params()
        t = np.diff(epochs)
        if float(t.sum()) <= 0.0:
            raise FitError("the arrivals span zero time")
        self.start_vector_ = _START_VECTOR_OF[str(self.alpha)]
        if k == 1:
            self._fit_poisson(t)
            return
        if t.shape[0] < 2 * k * k:
            raise FitError(f"{t.shape[0]} intervals are too few for a {k}-phase MMPP")
        gen = as_generator(self.rng)
        starts = self._starts(t, epochs, gen)
        for s in starts:
            if s.status == "ok":
                self._safely(t, s, int(self.n_init_iter))
                s.screen_ll = s.best_ll
        usable = [s for s in starts if s.best is not None and math.isfinite(s.best_ll)]
        if not usable:
            raise FitError("every EM start failed: " + "; ".join(s.status for s in starts))
        usable.sort(key=lambda s: s.best_ll, reverse=True)
        finalists = usable[: self._n_full(k)]
        nested = [s for s in usable if s.name.startswith("split")]
        if nested and nested[0] not in finalists:  # the guard against ending below k − 1 phases
            finalists.append(nested[0])
        for s in finalists:
            if not s.em_stop:  # the short run stopped at its budget: go on
                budget = max(int(self.max_iter) - s.n_iter, 0)
                self._safely(t, s, budget, hand_over=bool(self.polish), final=True)
            s.final_ll = s.best_ll
            assert s.best is not None
            rates, q, alpha = s.best
            if self.polish:
                try:
                    s.optimum = self._maximise(t, rates, q, alpha, s.best_ll, s.best_stats)
                except (FloatingPointError, np.linalg.LinAlgError) as exc:
                    logger.info("MMPP k=%d: no direct maximisation from %s (%s)", k, s.name, exc)
                    s.status = f"direct maximisation failed: {exc}"
            if s.optimum is None:
                at = self._point(t, rates, q, alpha)
                s.optimum = _Optimum(
                    rates,
                    q,
                    alpha,
                    s.best_ll,
                    at.norm,
                    0,
                    1,
                    "no direct maximisation" + ("" if self.polish else " (polish=False)"),
                    False,
                )
        winner = max(finalists, key=lambda s: s.optimum.log_likelihood if s.optimum else -math.inf)
        self._set_answer(winner, starts)

    def _safely(
        self, t: F64, s: _Start, budget: int, *, hand_over: bool = False, final: bool = False
    ) -> None:
        try:
            self._advance(t, s, budget, hand_over=hand_over, final=final)
        except (FloatingPointError, np.linalg.LinAlgError) as exc:
            if s.best is None:
                s.status = f"failed: {exc}"
            else:  # keep the best point it reached
                s.status = f"stopped: {exc}"
                s.em_stop = "error"

    def _fit_poisson(self, t: F64) -> None:
        rate = t.shape[0] / float(t.sum())
        self.rates_ = np.asarray([rate])
        self.generator_ = np.zeros((1, 1))
        self.alpha_ = np.ones(1)
        self.log_likelihood_ = t.shape[0] * math.log(rate) - rate * float(t.sum())
        self.log_likelihood_trace_ = [self.log_likelihood_]
        self.n_iter_ = 0
        self.em_stop_ = "closed form"
        self.polished_ = False
        self.n_polish_iter_ = 0
        self.gradient_norm_ = 0.0  # the closed form is the maximum
        self.converged_ = True
        self.starts_ = [
            {"name": "closed_form", "status": "ok", "log_likelihood": self.log_likelihood_}
        ]
        self.best_start_ = "closed_form"

    def _set_answer(self, winner: _Start, starts: Sequence[_Start]) -> None:
        k = int(self.n_states)
        opt = winner.optimum
        assert opt is not None
        self.rates_, self.generator_, self.alpha_ = _sort_states(
            opt.rates, opt.generator, opt.alpha
        )
        self.log_likelihood_ = float(opt.log_likelihood)
        self.log_likelihood_trace_ = [float(x) for x in winner.trace]
        self.n_iter_ = int(winner.n_iter)
        self.em_stop_ = winner.em_stop
        self.polished_ = bool(opt.improved)
        self.n_polish_iter_ = int(opt.n_iter)
        self.gradient_norm_ = float(opt.gradient_norm)
        if self.polish:
            self.converged_ = bool(self.gradient_norm_ <= float(self.grad_tol))
        else:
            self.converged_ = self.em_stop_ == "tolerance"
        self.starts_ = [s.record() for s in starts]
        self.best_start_ = winner.name
        if not self.converged_:
            if self.polish:
                text = (
                    f"MMPP (k={k}): the direct maximisation stopped at scaled gradient norm "
                    f"{self.gradient_norm_:.3g} > grad_tol {self.grad_tol:g} after "
                    f"{self.n_polish_iter_} iterations ({opt.message}); converged_ is False"
                )
            elif self.em_stop_ == "cap":
                text = (
                    f"MMPP EM (k={k}) hit its cap of {self.max_iter} iterations before the "
                    f"relative tolerance {self.tol:g}; converged_ is False"
                )
            else:
                text = f"MMPP EM (k={k}) stopped: {winner.status}; converged_ is False"
            warnings.warn(text, ConvergenceWarning, stacklevel=4)
        logger.info(
            "MMPP k=%d: ll %.6f from start %s (best of %d); EM %d iterations (%s), direct "
            "maximisation %d iterations (%s), scaled gradient norm %.3g",
            k,
            self.log_likelihood_,
            self.best_start_,
            len(starts),
            self.n_iter_,
            _EM_STOPS.get(self.em_stop_, self.em_stop_),
            self.n_polish_iter_,
            "raised the likelihood" if self.polished_ else "kept EM's answer",
            self.gradient_norm_,
        )

    # --- serialisation ----------------------------------------------------------------------------

    def _params(self) -> dict[str, Any]:
        init: Any = self.init
        if not isinstance(init, str):
            init = [
                [np.asarray(r, dtype=np.float64).tolist(), np.asarray(q, dtype=np.float64).tolist()]
                for r, q in init
            ]
        return {
            "n_states": self.n_states,
            "alpha": self.alpha,
            "max_iter": self.max_iter,
            "tol": self.tol,
            "n_init_iter": self.n_init_iter,
            "n_random_starts": self.n_random_starts,
            "n_full_runs": self.n_full_runs,
            "init": init,
            "count_hmm_start": self.count_hmm_start,
            "nested_start": self.nested_start,
            "polish": self.polish,
            "grad_tol": self.grad_tol,
            "polish_max_iter": self.polish_max_iter,
            "kernel": self.kernel,
            "rng": self.rng,
        }

    def _fitted(self) -> dict[str, Any]:
        return {
            "rates": self.rates_.tolist(),
            "generator": self.generator_.tolist(),
            "start_vector": self.start_vector_,
            "alpha": self.alpha_.tolist(),
            "log_likelihood": self.log_likelihood_,
            "log_likelihood_trace": list(self.log_likelihood_trace_),
            "n_iter": self.n_iter_,
            "em_stop": self.em_stop_,
            "cap_hit": self.em_stop_ == "cap",
            "polished": self.polished_,
            "n_polish_iter": self.n_polish_iter_,
            "gradient_norm": self.gradient_norm_,
            "converged": self.converged_,
            "starts": list(self.starts_),
            "best_start": self.best_start_,
            "e_step": "eigendecomposition of D0 once per iteration; Van Loan if defective",
            "maximisation": (
                "L-BFGS-B on log-parameters scaled by sqrt(expected counts), exact gradient; "
                "gradient_norm is the max-norm of that scaled gradient"
            ),
        }

    def _set_fitted(self, data: Mapping[str, Any]) -> None:
        self.rates_ = np.asarray(data["rates"], dtype=np.float64)
        k = self.rates_.shape[0]
        self.generator_ = np.asarray(data["generator"], dtype=np.float64).reshape(k, k)
        # models written before the start vector was named kept it as initial_probabilities
        self.alpha_ = np.asarray(data.get("alpha", data.get("initial_probabilities")), np.float64)
        mode = data.get("start_vector", data.get("alpha_mode", "estimated"))
        self.start_vector_ = _START_VECTOR_OF[str(mode)]
        self.log_likelihood_ = float(data["log_likelihood"])
        self.log_likelihood_trace_ = [float(x) for x in data["log_likelihood_trace"]]
        self.n_iter_ = int(data["n_iter"])
        self.converged_ = bool(data["converged"])
        # models written before the direct maximisation had only EM's convergence
        default_stop = "tolerance" if self.converged_ else "cap"
        self.em_stop_ = str(data.get("em_stop", default_stop))
        self.polished_ = bool(data.get("polished", False))
        self.n_polish_iter_ = int(data.get("n_polish_iter", 0))
        norm = data.get("gradient_norm")
        self.gradient_norm_ = math.nan if norm is None else float(norm)
        self.starts_ = [dict(s) for s in data["starts"]]
        self.best_start_ = str(data["best_start"])


@dataclass(frozen=True, slots=True)
class _Point:
    """Parameters with their E-step and log-parameter gradient."""

    rates: F64
    generator: F64
    alpha: F64
    stats: EStep
    grad: F64

    @property
    def log_likelihood(self) -> float:
        return float(self.stats.log_likelihood)

    @property
    def norm(self) -> float:
        return _scaled_norm(self.stats, self.grad)


class _LogObjective:
    """``−(ℓ(θ) − ℓ_origin)`` and its gradient in scaled log-parameters ``u = θ · scale``.

    The scale is √(expected count) at the origin (arrivals for a rate, jumps for a switching
    rate, at least 1), which makes the Hessian near the maximum roughly the identity. A trial
    point the kernel cannot evaluate (overflow, a singular matrix) gets ``+inf``, which L-BFGS-B
    answers by shortening its step; it is logged at DEBUG, never warned. The last few points
    evaluated are kept so that the answer's E-step need not be computed again.
    """

    def __init__(self, model: MMPPArrivals, t: F64, origin: _Point, log_floor: float) -> None:
        k = origin.rates.shape[0]
        self.model = model
        self.t = t
        self.k = k
        self.mask = ~np.eye(k, dtype=bool)
        self.alpha = origin.alpha
        self.origin_ll = origin.log_likelihood
        counts = np.concatenate([origin.stats.arrivals, origin.stats.jumps[self.mask]])
        self.scale = np.sqrt(np.maximum(counts, 1.0))
        theta = np.concatenate([np.log(origin.rates), np.log(origin.generator[self.mask])])
        self.u0 = theta * self.scale
        # a rate already under the floor (EM put it there) may stay, but not go lower
        lower = np.maximum(theta - _BOX, np.minimum(theta, log_floor))
        self.bounds = list(zip(lower * self.scale, (theta + _BOX) * self.scale, strict=True))
        self.n_evaluations = 0
        self._recent: dict[bytes, _Point] = {self.u0.tobytes(): origin}

    def unpack(self, theta: F64) -> tuple[F64, F64]:
        off = np.zeros((self.k, self.k))
        off[self.mask] = np.exp(theta[self.k :])
        return np.exp(theta[: self.k]), _generator_from_offdiag(off)

    def point(self, u: F64) -> _Point | None:
        return self._recent.get(np.asarray(u, dtype=np.float64).tobytes())

    def __call__(self, u: F64) -> tuple[float, F64]:
        u = np.asarray(u, dtype=np.float64)
        found = self.point(u)
        if found is None:
            r, g = self.unpack(u / self.scale)
            try:
                with np.errstate(over="raise", divide="raise", invalid="raise"):
                    a = embedded_phase_law(r, g) if self.model._stationary else self.alpha
                    found = self.model._point(self.t, r, g, a)
            except (FloatingPointError, np.linalg.LinAlgError, ValueError) as exc:
                logger.debug("MMPP direct maximisation: trial point rejected (%s)", exc)
                return math.inf, np.zeros_like(u)
            self.n_evaluations += 1
            if len(self._recent) >= 4:
                self._recent.pop(next(iter(self._recent)))
            self._recent[u.tobytes()] = found
        ll = found.log_likelihood
        if not (math.isfinite(ll) and bool(np.all(np.isfinite(found.grad)))):
            return math.inf, np.zeros_like(u)
        return -(ll - self.origin_ll), -found.grad / self.scale


def _scaled_norm(stats: EStep, grad: F64) -> float:
    """Max-norm of the gradient, each component over √(its expected count, at least 1)."""
    k = stats.arrivals.shape[0]
    counts = np.concatenate([stats.arrivals, stats.jumps[~np.eye(k, dtype=bool)]])
    return float(np.max(np.abs(grad / np.sqrt(np.maximum(counts, 1.0)))))


def _point_mass(post: F64) -> F64:
    out = np.zeros(post.shape[0])
    out[int(np.argmax(post))] = 1.0
    return out


def split_phase(rates: ArrayLike, generator: ArrayLike, phase: int) -> tuple[F64, F64]:
    """Embed a (k − 1)-phase MMPP in k phases by splitting one phase in two.

    The halves have rates 0.9 and 1.1 times the phase's (so that EM can move them apart; with
    equal rates the halves are lumpable and EM would keep them equal), each keeps the phase's
    switching rates to the other phases, the rates into the phase are shared equally between
    them, and each switches to the other at half its total exit rate (or at the mean exit rate
    of the chain when the phase never leaves).

    Parameters
    ----------
    rates : array_like, shape (k - 1,)
        Arrival rates of the smaller MMPP.
    generator : array_like, shape (k - 1, k - 1)
        Its generator.
    phase : int
        The phase to split; its second half becomes the last phase.

    Returns
    -------
    rates, generator : ndarray
        The k-phase parameters.
    """
    r = np.asarray(rates, dtype=np.float64)
    q = np.asarray(generator, dtype=np.float64)
    m = r.shape[0]
    if not 0 <= phase < m:
        raise ConfigError(f"phase must be in [0, {m}), got {phase}")
    off = q - np.diag(np.diag(q))
    new_rates = np.append(r, 1.1 * r[phase])
    new_rates[phase] = 0.9 * r[phase]
    new_off = np.zeros((m + 1, m + 1))
    new_off[:m, :m] = off
    new_off[:m, phase] = off[:, phase] / 2.0  # into the phase: shared between the halves
    new_off[:m, m] = off[:, phase] / 2.0
    new_off[m, :m] = off[phase, :]  # out of the phase: each half keeps it
    exit_rate = float(off[phase].sum())
    if exit_rate <= 0.0:
        exits = off.sum(axis=1)
        exit_rate = float(exits[exits > 0].mean()) if np.any(exits > 0) else 1.0 / 3600.0
    new_off[phase, m] = new_off[m, phase] = exit_rate / 2.0
    return new_rates, _generator_from_offdiag(new_off)


def _failed(name: str, k: int, status: str) -> _Start:
    return _Start(name, np.ones(k), np.zeros((k, k)), np.ones(k) / k, status=status)


def _windows(t: F64) -> tuple[F64, F64, int]:
    """Return sums of m consecutive inter-arrival times, their log local rates log(m / sum), m."""
    n = t.shape[0]
    m = int(min(max(5, n // 400), 50))
    windows = n // m
    sums = t[: windows * m].reshape(windows, m).sum(axis=1)
    local = m / np.maximum(sums, 1e-12 * max(float(t.mean()), 1e-300))
    return sums, np.log(local), m


def _labelled_start(t: F64, k: int, sums: F64, labels: NDArray[np.int64], m: int) -> F64:
    """Switching rates from the window labels: moves between labels per time spent (smoothed)."""
    windows = sums.shape[0]
    time_in = np.bincount(labels, weights=sums, minlength=k)
    moves = np.zeros((k, k))
    np.add.at(moves, (labels[:-1], labels[1:]), 1.0)
    np.fill_diagonal(moves, 0.0)
    total = float(t.sum())
    off = (moves + 0.5) / np.maximum(time_in, total / windows)[:, None]
    return _generator_from_offdiag(off)


def _quantile_start(t: F64, k: int) -> tuple[F64, F64]:
    """Rates at k quantiles of windowed local rates; switching rates from the window labels."""
    sums, logs, m = _windows(t)
    rates = np.exp(np.quantile(logs, (np.arange(k) + 0.5) / k))
    if np.unique(rates).shape[0] < k:  # flat data: spread the rates a little
        rates = float(np.exp(np.median(logs))) * np.exp(np.linspace(-0.3, 0.3, k))
    labels = np.argmin(np.abs(logs[:, None] - np.log(rates)[None, :]), axis=1)
    return np.asarray(rates, dtype=np.float64), _labelled_start(t, k, sums, labels, m)


def _kmeans_start(t: F64, k: int) -> tuple[F64, F64]:
    """1-D k-means (Lloyd, from the quantiles) on windowed log local rates.

    Each cluster's rate is its maximum-likelihood value given the labels (intervals over time);
    switching rates come from the window labels.
    """
    sums, logs, m = _windows(t)
    centres = np.quantile(logs, (np.arange(k) + 0.5) / k)
    labels = np.zeros(logs.shape[0], dtype=np.int64)
    for _ in range(100):
        labels = np.argmin(np.abs(logs[:, None] - centres[None, :]), axis=1)
        counts = np.bincount(labels, minlength=k)
        means = np.bincount(labels, weights=logs, minlength=k) / np.maximum(counts, 1)
        new = np.where(counts > 0, means, centres)
        if np.array_equal(new, centres):
            break
        centres = new
    counts = np.bincount(labels, minlength=k).astype(np.float64)
    time_in = np.bincount(labels, weights=sums, minlength=k)
    overall = float(labels.shape[0] * m / max(float(sums.sum()), 1e-300))
    rates = np.where(counts > 0, m * counts / np.maximum(time_in, 1e-300), overall)
    if np.unique(rates).shape[0] < k:
        rates = overall * np.exp(np.linspace(-0.3, 0.3, k))
    return np.asarray(rates, dtype=np.float64), _labelled_start(t, k, sums, labels, m)


def _random_start(t: F64, k: int, gen: np.random.Generator) -> tuple[F64, F64]:
    """Rates log-uniform over the local rates' 1–99 % range (widened); random sojourns.

    Each phase's exit rate is log-uniform between ten sojourns per span and a fifth of its
    arrival rate (a sojourn of about five arrivals), split over the other phases by a flat
    Dirichlet draw.
    """
    _, logs, _ = _windows(t)
    lo, hi = np.quantile(logs, [0.01, 0.99])
    lo, hi = float(lo) - 0.5, float(hi) + 0.5
    rates = np.sort(np.exp(gen.uniform(lo, hi, k)))
    span = float(t.sum())
    off = np.zeros((k, k))
    for i in range(k):
        low = math.log(10.0 / span)
        high = max(math.log(rates[i] / 5.0), low + 1.0)
        exit_rate = math.exp(gen.uniform(low, high))
        share = gen.dirichlet(np.ones(k - 1))
        off[i, np.arange(k) != i] = exit_rate * share
    return rates, _generator_from_offdiag(off)


def _sample_acf(t: F64, lags: Sequence[int]) -> F64:
    x = t - t.mean()
    var = float(x @ x)
    return np.asarray([float(x[:-lag] @ x[lag:]) / var for lag in lags])


def moment_matched_mmpp2(t: ArrayLike) -> tuple[F64, F64]:
    """Fit an MMPP(2) matching the inter-arrival mean, SCV, third moment and lag-1/10/100 ACF.

    Least squares on log-parameters against the closed forms; used as an EM start.

    Raises
    ------
    FitError
        If the data are outside what an MMPP(2) can reproduce (SCV ≤ 1 or lag-1 ACF outside
        [0, 0.5)), named in the message.
    """
    x = np.asarray(t, dtype=np.float64)
    m1 = float(x.mean())
    m2 = float(np.mean(x * x))
    m3 = float(np.mean(x**3))
    scv = m2 / m1**2 - 1.0
    lags = [lag for lag in (1, 10, 100) if lag < x.shape[0] // 10]
    acf = _sample_acf(x, lags)
    if scv <= 1.0:
        raise FitError(f"SCV {scv:.3f} <= 1: no MMPP(2) has it")
    if not 0.0 <= acf[0] < 0.5:
        raise FitError(f"lag-1 ACF {acf[0]:.3f} outside [0, 0.5)")
    r0, q0 = _quantile_start(x, 2)
    theta0 = np.log(np.concatenate([r0, [q0[0, 1], q0[1, 0]]]))

    def residuals(theta: F64) -> F64:
        e = np.exp(theta)
        q = np.asarray([[-e[2], e[2]], [e[3], -e[3]]])
        mm = mmpp_moments(e[:2], q, (1, 2, 3))
        model_scv = mm[1] / mm[0] ** 2 - 1.0
        ac = mmpp_iat_acf(e[:2], q, lags)
        return np.concatenate(
            [
                [math.log(mm[0] / m1), math.log(max(model_scv, 1e-12) / scv)],
                [math.log(mm[2] / m3) / 3.0],
                10.0 * (ac - acf),
            ]
        )

    # a start only: a hundred evaluations place it; more cost seconds on 2 × 2 matrices
    result = scipy.optimize.least_squares(residuals, theta0, method="trf", max_nfev=100)
    e = np.exp(result.x)
    return e[:2].copy(), np.asarray([[-e[2], e[2]], [e[3], -e[3]]])


# --- the count-HMM path -------------------------------------------------------------------------


class PoissonHMMArrivals(_MMPPBase):
    """Approximate MMPP: a Poisson HMM on counts per bin (``hmmlearn.hmm.PoissonHMM``).

    Counts of arrivals in bins of width Δ are fitted by a discrete-time Poisson HMM (state
    constant within a bin), then converted: rates λ/Δ, generator ``Q = logm(P) / Δ``. The result
    is *approximate*: its bias grows with Δ / (shortest sojourn) and does not shrink with N, so Δ
    should be well under the shortest sojourn (≤ 1/15 of it); ``resolution_ok_`` checks that on
    the fitted model. Scoring and sampling use the exact MMPP likelihood of the converted model.

    Parameters
    ----------
    n_states : int, default 2
        Number of phases.
    bin_s : float, optional
        Bin width Δ in seconds; by default three mean inter-arrival times, widened so that there
        are at most ``max_bins`` bins.
    n_restarts : int, default 5
        Independent hmmlearn fits (different seeds); the best count log-likelihood wins.
    n_iter : int, default 200
        hmmlearn's iteration cap (its default of 10 is far too low).
    tol : float, default 1e-4
        hmmlearn's tolerance on the log-likelihood gain.
    max_bins : int, default 200000
        Upper bound on the number of bins.
    rng : int or None, default 0
        Seed from which every restart's ``random_state`` is drawn (never the global RNG).
    ties : {"batch", "keep"}, default "batch"
        See :class:`~gridtrace.models.ArrivalModel`.

    Attributes
    ----------
    rates_, generator_ : ndarray
        The converted continuous-time parameters (states sorted by rate).
    transition_matrix_ : ndarray
        hmmlearn's per-bin transition matrix P.
    bin_s_ : float
        Δ used.
    generator_method_ : str
        ``"logm"``, or ``"first-order"`` ((P − I)/Δ) when logm(P) is not a valid generator.
    generator_clipped_ : float
        Largest negative off-diagonal entry of logm(P)/Δ set to 0 (0 when none).
    resolution_ok_ : bool
        Whether Δ ≤ shortest fitted mean sojourn / 15.
    count_log_likelihood_ : float
        hmmlearn's log-likelihood of the counts (not comparable with :meth:`score`).
    converged_ : bool
        Whether the best restart stopped because its log-likelihood gain fell under ``tol``
        (hmmlearn's own ``monitor_.converged`` is also true when it merely hit ``n_iter``).
    n_iter_ : int
        Its iterations.
    notes_ : list of str
        What the fit could not do as asked: the iteration cap, a coarse bin, a first-order
        generator, a log-likelihood decrease, hmmlearn's own warnings. Logged as warnings (INFO
        when the fit is only the count-HMM start of :class:`MMPPArrivals`).

    Notes
    -----
    hmmlearn's log records are taken in during the fit and said again here, once, with their
    context; a log-likelihood "decrease" of rounding size (under 1e−9 relative) is dropped.
    """

    kind = "poisson_hmm"
    approximate = True
    _as_start = False  # set by MMPPArrivals on the count-HMM start it fits

    def __init__(
        self,
        n_states: int = 2,
        *,
        bin_s: float | None = None,
        n_restarts: int = 5,
        n_iter: int = 200,
        tol: float = 1e-4,
        max_bins: int = 200_000,
        rng: int | None = 0,
        ties: str = "batch",
    ) -> None:
        super().__init__(n_states, ties=ties)
        self.bin_s = bin_s
        self.n_restarts = n_restarts
        self.n_iter = n_iter
        self.tol = tol
        self.max_bins = max_bins
        self.rng = rng

    def _fit_epochs(self, epochs: F64) -> None:
        from hmmlearn.hmm import PoissonHMM

        k = int(self.n_states)
        span = float(epochs[-1] - epochs[0])
        if span <= 0:
            raise FitError("the arrivals span zero time")
        width = (
            float(self.bin_s)
            if self.bin_s is not None
            else max(3.0 * span / (epochs.shape[0] - 1), span / int(self.max_bins))
        )
        if not width > 0:
            raise ConfigError(f"bin_s must be > 0, got {self.bin_s}")
        n_bins = math.ceil(span / width)
        if n_bins < 10 * k:
            raise FitError(f"{n_bins} bins are too few for a {k}-state count HMM")
        counts = np.bincount(
            np.minimum(((epochs[1:] - epochs[0]) // width).astype(np.int64), n_bins - 1),
            minlength=n_bins,
        ).reshape(-1, 1)
        gen = as_generator(self.rng)
        best: Any = None
        best_score = -math.inf
        best_restart = 0
        records: list[logging.LogRecord] = []
        restarts = max(int(self.n_restarts), 1)
        with _hmmlearn_records(records):
            for restart in range(restarts):
                first = len(records)
                model = PoissonHMM(
                    n_components=k,
                    n_iter=int(self.n_iter),
                    tol=float(self.tol),
                    random_state=int(gen.integers(2**31 - 1)),
                )
                model.fit(counts)
                score = float(model.score(counts))
                if score > best_score:
                    best, best_score, best_restart = model, score, restart
                for record in records[first:]:
                    record.restart = restart
        notes = _hmmlearn_notes(records, best_score)
        lam = np.asarray(best.lambdas_, dtype=np.float64).reshape(k) / width
        p = np.asarray(best.transmat_, dtype=np.float64)
        q, method, clipped, generator_note = _generator_from_transitions(p, width)
        if generator_note:
            notes.append(generator_note)
        self.bin_s_ = width
        self.transition_matrix_ = p
        self.generator_method_ = method
        self.generator_clipped_ = clipped
        self.count_log_likelihood_ = best_score
        history = [float(h) for h in best.monitor_.history]
        gain = history[-1] - history[-2] if len(history) >= 2 else math.nan
        self.n_iter_ = int(best.monitor_.iter)
        # hmmlearn calls a fit that hit n_iter "converged": only a gain under tol counts here
        self.converged_ = bool(abs(gain) < float(self.tol))
        rates, q, _ = _sort_states(lam, q, np.ones(k) / k)
        order = np.argsort(lam, kind="stable")
        self.transition_matrix_ = p[np.ix_(order, order)]
        self.rates_, self.generator_ = rates, q
        leave = -np.diag(q)
        shortest = float(np.min(1.0 / leave[leave > 0])) if np.any(leave > 0) else math.inf
        self.resolution_ok_ = bool(width <= shortest / 15.0)
        if not self.resolution_ok_:
            notes.append(
                f"bin {width:.3g} s is not well under the shortest fitted sojourn "
                f"{shortest:.3g} s (wanted <= 1/15 of it): the conversion to continuous time "
                "is biased"
            )
        if not self.converged_:
            notes.insert(
                0,
                f"stopped at its cap of {self.n_iter} iterations (last gain {gain:.3g} > tol "
                f"{self.tol:g})",
            )
        self.notes_ = notes
        status = (
            f"converged (last gain {gain:.3g} < tol {self.tol:g})"
            if self.converged_
            else "not converged"
        )
        summary = (
            f"{n_bins} bins of {width:.3g} s, best of {restarts} restart(s) (#{best_restart + 1}): "
            f"{self.n_iter_} of at most {self.n_iter} iterations, {status}"
        )
        if self._as_start:
            logger.info(
                "MMPP k=%d: count-HMM start (only seeds the exact EM): %s%s",
                k,
                summary,
                "".join(f"; {n}" for n in notes),
            )
        else:
            logger.info("count HMM k=%d: %s", k, summary)
            for note in notes:
                logger.warning("count HMM k=%d: %s", k, note)
            if not self.converged_:
                warnings.warn(
                    f"PoissonHMM stopped at its cap of {self.n_iter} iterations",
                    ConvergenceWarning,
                    stacklevel=3,
                )
        self.log_likelihood_ = self._score_epochs(epochs)

    def _params(self) -> dict[str, Any]:
        return {
            "n_states": self.n_states,
            "bin_s": self.bin_s,
            "n_restarts": self.n_restarts,
            "n_iter": self.n_iter,
            "tol": self.tol,
            "max_bins": self.max_bins,
            "rng": self.rng,
        }

    def _fitted(self) -> dict[str, Any]:
        return {
            "rates": self.rates_.tolist(),
            "generator": self.generator_.tolist(),
            "transition_matrix": self.transition_matrix_.tolist(),
            "bin_s": self.bin_s_,
            "generator_method": self.generator_method_,
            "generator_clipped": self.generator_clipped_,
            "resolution_ok": self.resolution_ok_,
            "count_log_likelihood": self.count_log_likelihood_,
            "log_likelihood": self.log_likelihood_,
            "converged": self.converged_,
            "n_iter": self.n_iter_,
            "notes": list(self.notes_),
        }

    def _set_fitted(self, data: Mapping[str, Any]) -> None:
        self.rates_ = np.asarray(data["rates"], dtype=np.float64)
        k = self.rates_.shape[0]
        self.generator_ = np.asarray(data["generator"], dtype=np.float64).reshape(k, k)
        self.transition_matrix_ = np.asarray(data["transition_matrix"], dtype=np.float64)
        self.bin_s_ = float(data["bin_s"])
        self.generator_method_ = str(data["generator_method"])
        self.generator_clipped_ = float(data["generator_clipped"])
        self.resolution_ok_ = bool(data["resolution_ok"])
        self.count_log_likelihood_ = float(data["count_log_likelihood"])
        self.log_likelihood_ = float(data["log_likelihood"])
        self.converged_ = bool(data["converged"])
        self.n_iter_ = int(data["n_iter"])
        self.notes_ = [str(n) for n in data.get("notes", [])]  # absent in older models


class _Collect(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.DEBUG)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def _hmmlearn_records(records: list[logging.LogRecord]) -> Iterator[None]:
    """Take in hmmlearn's log records instead of letting them reach the application's handlers."""
    hmm_logger = logging.getLogger("hmmlearn")
    handler = _Collect(records)
    saved = (hmm_logger.propagate, hmm_logger.level)
    hmm_logger.addHandler(handler)
    hmm_logger.propagate = False
    hmm_logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        hmm_logger.removeHandler(handler)
        hmm_logger.propagate, level = saved
        hmm_logger.setLevel(level)


_DECREASE = re.compile(r"not converging.*Delta is (\S+)", re.S)


def _hmmlearn_notes(records: Sequence[logging.LogRecord], log_likelihood: float) -> list[str]:
    """Say hmmlearn's warnings once each, with their restart; drop rounding-size decreases."""
    notes: list[str] = []
    worst: tuple[float, int] | None = None
    for record in records:
        if record.levelno < logging.WARNING:
            continue
        text = record.getMessage()
        restart = int(getattr(record, "restart", 0)) + 1
        found = _DECREASE.search(text)
        if found:
            delta = float(found.group(1))
            if abs(delta) <= 1e-9 * max(abs(log_likelihood), 1.0):
                logger.debug("count HMM restart %d: rounding-size decrease %.3g", restart, delta)
                continue
            if worst is None or delta < worst[0]:
                worst = (delta, restart)
            continue
        note = f"hmmlearn (restart {restart}): {' '.join(text.split())}"
        if note not in notes:
            notes.append(note)
    if worst is not None:
        notes.append(
            f"EM log-likelihood decreased by up to {-worst[0]:.3g} (restart {worst[1]}): "
            "numerical trouble in hmmlearn, which EM itself never does"
        )
    return notes


def _principal_log(p: F64) -> NDArray[Any]:
    """Principal matrix logarithm of P.

    By eigendecomposition when P is well diagonalisable; otherwise ``scipy.linalg.logm``, whose
    1-norm estimator draws from NumPy's *global* random state for matrices of size ≥ 3, so that
    state is saved and restored around the call.
    """
    w, v = np.linalg.eig(p)
    if float(np.linalg.cond(v)) < 1e8 and not np.any((w.real <= 0) & (np.abs(w.imag) < 1e-12)):
        return np.asarray(v @ np.diag(np.log(w.astype(np.complex128))) @ np.linalg.inv(v))
    state = np.random.get_state()  # noqa: NPY002 - saved only to undo logm's use of it
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # logm's own accuracy warning
            return np.asarray(scipy.linalg.logm(p))
    finally:
        np.random.set_state(state)  # noqa: NPY002


def _generator_from_transitions(p: F64, width: float) -> tuple[F64, str, float, str | None]:
    """``logm(P) / Δ`` checked to be a generator; else the first-order ``(P − I) / Δ``.

    Returns the generator, the method (``"logm"`` or ``"first-order"``), the largest negative
    off-diagonal entry set to 0, and a note saying why the first-order form was used (None for
    ``"logm"``); the caller logs the note in its context.
    """
    k = p.shape[0]
    log = _principal_log(p)
    scale = 1.0 / width
    if np.iscomplexobj(log):
        if float(np.max(np.abs(log.imag))) > 1e-9:
            note = (
                "logm(P) is complex (P has eigenvalues off the positive real axis): "
                "generator by the first-order (P - I)/bin"
            )
            return (p - np.eye(k)) / width, "first-order", 0.0, note
        log = log.real
    q = log / width
    off = q - np.diag(np.diag(q))
    worst = float(-off.min()) if off.min() < 0 else 0.0
    if worst > 1e-3 * scale:
        note = (
            f"logm(P)/bin has off-diagonal entries down to {-worst:.3g}: not a generator; "
            "generator by the first-order (P - I)/bin"
        )
        return (p - np.eye(k)) / width, "first-order", 0.0, note
    q = _generator_from_offdiag(np.maximum(off, 0.0))
    return q, "logm", worst, None


# --- model selection ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MMPPSelection:
    """The result of :func:`select_mmpp`.

    Attributes
    ----------
    best : MMPPArrivals
        The model with the lowest BIC.
    models : dict of int to MMPPArrivals
        Every fitted model by its number of phases.
    bic : dict of int to float
        BIC per number of phases (``−2 log L + k² ln n``).
    """

    best: MMPPArrivals
    models: dict[int, MMPPArrivals]
    bic: dict[int, float]

    @property
    def n_states(self) -> int:
        """The selected k."""
        return int(self.best.n_states)

    def to_dict(self) -> dict[str, Any]:
        """JSON types: the BIC table, the selected k and every model."""
        return {
            "selected": self.n_states,
            "bic": {str(k): v for k, v in self.bic.items()},
            "models": {str(k): m.to_dict() for k, m in self.models.items()},
        }


def select_mmpp(times: ArrayLike, k_max: int = 4, **kwargs: Any) -> MMPPSelection:
    """Fit MMPPs with 1 … ``k_max`` phases and choose k by BIC.

    Parameters
    ----------
    times : array_like
        Sorted arrival times in seconds.
    k_max : int, default 4
        Largest number of phases tried.
    **kwargs
        Passed to every :class:`MMPPArrivals`.

    Returns
    -------
    MMPPSelection
        The selected model, all fits and the BIC table. BIC on HMMs is a heuristic: also compare
        the IDC curves (:func:`mmpp_idc`) before trusting k.
    """
    check_times(times)
    if k_max < 1:
        raise ConfigError(f"k_max must be >= 1, got {k_max}")
    models: dict[int, MMPPArrivals] = {}
    bic: dict[int, float] = {}
    for k in range(1, int(k_max) + 1):
        model = MMPPArrivals(k, **kwargs).fit(times)
        models[k] = model
        bic[k] = -2.0 * model.log_likelihood_ + model.n_parameters * math.log(model.n_intervals_)
    best_k = min(bic, key=lambda k: bic[k])
    return MMPPSelection(best=models[best_k], models=models, bic=bic)
