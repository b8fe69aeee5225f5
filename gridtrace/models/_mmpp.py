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

logger = logging.getLogger(__name__)

F64 = NDArray[np.float64]
ALPHA_MODES = ("fitted", "stationary")
# Above this condition number of D0's eigenvectors the E-step uses the Van Loan reference.
_MAX_CONDITION = 1e8


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


@dataclass(slots=True)
class _Start:
    name: str
    rates: F64
    generator: F64
    alpha: F64
    log_likelihood: float = -math.inf
    status: str = "ok"
    trace: list[float] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "log_likelihood": self.log_likelihood if math.isfinite(self.log_likelihood) else None,
        }


class MMPPArrivals(_MMPPBase):
    """k-phase MMPP fitted by exact continuous-time EM on inter-arrival times.

    Parameters
    ----------
    n_states : int, default 2
        Number of phases k.
    alpha : {"fitted", "stationary"}, default "fitted"
        Initial phase law α. ``"fitted"``: α is a parameter updated by EM (the log-likelihood then
        never decreases; at the maximum α is a point mass). ``"stationary"``: α is held at the
        embedded stationary law φ(θ); EM alone is then not monotone and stops short of the maximum,
        so its result is polished by L-BFGS on log-parameters with the exact likelihood and its
        exact gradient (Fisher identity). ``alpha_mode_`` and ``polished_`` say what was done.
    max_iter : int, default 300
        Iteration cap of the final EM run; hitting it is reported (``converged_`` False, a
        :class:`~gridtrace.errors.ConvergenceWarning`).
    tol : float, default 1e-8
        Stop when the relative log-likelihood change falls below ``tol``.
    n_init_iter : int, default 8
        EM iterations given to every start; the best start then runs to convergence.
    n_random_starts : int, default 2
        Extra starts: the quantile start with log-normal noise on every parameter.
    count_hmm_start : bool, default True
        Add the :class:`PoissonHMMArrivals` solution as a start.
    kernel : {"fast", "reference"}, default "fast"
        E-step implementation (the reference is the slow Van Loan one, for checking).
    rng : int, SeedSequence, Generator or None, default 0
        Source of the randomised starts and of hmmlearn's seed.
    ties : {"batch", "keep"}, default "batch"
        See :class:`~gridtrace.models.ArrivalModel`.

    Attributes
    ----------
    rates_ : ndarray, shape (k,)
        Arrival rate per phase, s⁻¹, increasing.
    generator_ : ndarray, shape (k, k)
        Generator Q of the phase chain.
    initial_probabilities_ : ndarray, shape (k,)
        α at the fit (fitted or stationary, see ``alpha_mode_``).
    alpha_mode_ : str
        ``"fitted"`` or ``"stationary"``.
    polished_ : bool
        Whether the stationary-α result was polished by direct maximisation.
    log_likelihood_ : float
        Exact log-likelihood of the training intervals at the fit (with α as fitted).
    log_likelihood_trace_ : list of float
        Log-likelihood before each M-step of the final run (its start's iterations included).
    n_iter_ : int
        EM iterations of the final run.
    converged_ : bool
        Whether the tolerance was met before the cap (False: the cap was hit).
    starts_ : list of dict
        Every start with its name, status and log-likelihood after ``n_init_iter`` iterations.
    best_start_ : str
        The start that was run to convergence.

    Examples
    --------
    >>> from gridtrace.models import ctmc_mmpp_arrival_times
    >>> q = [[-1 / 3600, 1 / 3600], [1 / 900, -1 / 900]]
    >>> t, _ = ctmc_mmpp_arrival_times([0.02, 0.2], q, size=5000, rng=1)
    >>> m = MMPPArrivals(2, count_hmm_start=False).fit(t)
    >>> m.rates_.round(2).tolist()
    [0.02, 0.2]
    """

    kind = "mmpp"

    def __init__(
        self,
        n_states: int = 2,
        *,
        alpha: str = "fitted",
        max_iter: int = 300,
        tol: float = 1e-8,
        n_init_iter: int = 8,
        n_random_starts: int = 2,
        count_hmm_start: bool = True,
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
        self.count_hmm_start = count_hmm_start
        self.kernel = kernel
        self.rng = rng

    # --- EM -------------------------------------------------------------------------------------

    def _estep(self, t: F64, rates: F64, q: F64, alpha: F64) -> EStep:
        if self.kernel == "reference":
            return forward_backward_reference(t, rates, q, alpha)
        if eigen_condition(q - np.diag(rates)) > _MAX_CONDITION:
            logger.debug("D0 is close to defective: this E-step uses the Van Loan reference")
            return forward_backward_reference(t, rates, q, alpha)
        return forward_backward(t, rates, q, alpha)

    def _alpha_for(self, rates: F64, q: F64, fitted: F64) -> F64:
        return fitted if self.alpha == "fitted" else embedded_phase_law(rates, q)

    def _mstep(self, stats: EStep, rates: F64, q: F64) -> tuple[F64, F64, F64]:
        total = float(stats.time_in_phase.sum())
        time = np.maximum(stats.time_in_phase, 1e-300 * max(total, 1.0))
        new_rates = np.maximum(stats.arrivals / time, 0.0)
        off = stats.jumps / time[:, None]
        new_q = _generator_from_offdiag(off)
        return new_rates, new_q, self._alpha_for(new_rates, new_q, stats.initial)

    def _run(self, t: F64, start: _Start, iterations: int) -> tuple[_Start, bool, int]:
        rates, q, alpha = start.rates, start.generator, start.alpha
        previous = -math.inf
        converged = False
        done = 0
        for _ in range(iterations):
            stats = self._estep(t, rates, q, alpha)
            ll = stats.log_likelihood
            start.trace.append(ll)
            done += 1
            if math.isfinite(previous) and abs(ll - previous) <= self.tol * abs(previous):
                converged = True
                start.log_likelihood = ll
                break
            previous = ll
            rates, q, alpha = self._mstep(stats, rates, q)
            start.rates, start.generator, start.alpha = rates, q, alpha
            start.log_likelihood = ll
        if not converged:  # the parameters were updated after the last evaluation
            start.log_likelihood = self._estep(t, rates, q, alpha).log_likelihood
            start.trace.append(start.log_likelihood)
        return start, converged, done

    # --- starts ---------------------------------------------------------------------------------

    def _starts(self, t: F64, epochs: F64, gen: np.random.Generator) -> list[_Start]:
        k = int(self.n_states)
        starts: list[_Start] = []
        base = _quantile_start(t, k)
        starts.append(self._make("quantiles", *base))
        if self.count_hmm_start:
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
                starts.append(self._make("count_hmm", hmm.rates_, hmm.generator_))
            except (FitError, np.linalg.LinAlgError, ValueError) as exc:
                logger.info("MMPP k=%d: no count-HMM start (%s)", k, exc)
                starts.append(_failed("count_hmm", k, f"failed: {exc}"))
        if k == 2:
            try:
                r, q = moment_matched_mmpp2(t)
                starts.append(self._make("moments", r, q))
            except FitError as exc:
                starts.append(_failed("moments", k, f"infeasible: {exc}"))
        for i in range(int(self.n_random_starts)):
            noise_r = np.exp(gen.normal(0.0, 0.5, k))
            noise_q = np.exp(gen.normal(0.0, 0.5, (k, k)))
            off = base[1] * noise_q
            starts.append(self._make(f"random{i}", base[0] * noise_r, _generator_from_offdiag(off)))
        return starts

    def _make(self, name: str, rates: ArrayLike, q: ArrayLike) -> _Start:
        r = np.asarray(rates, dtype=np.float64).copy()
        g = np.asarray(q, dtype=np.float64).copy()
        return _Start(name, r, g, embedded_phase_law(r, g))

    # --- fit ------------------------------------------------------------------------------------

    def _fit_epochs(self, epochs: F64) -> None:
        k = int(self.n_states)
        if k < 1:
            raise ConfigError(f"n_states must be >= 1, got {k}")
        if self.alpha not in ALPHA_MODES:
            raise ConfigError(f"alpha must be one of {', '.join(ALPHA_MODES)}, got {self.alpha!r}")
        if self.kernel not in ("fast", "reference"):
            raise ConfigError(f"kernel must be 'fast' or 'reference', got {self.kernel!r}")
        t = np.diff(epochs)
        if float(t.sum()) <= 0.0:
            raise FitError("the arrivals span zero time")
        self.alpha_mode_ = str(self.alpha)
        self.polished_ = False
        if k == 1:
            rate = t.shape[0] / float(t.sum())
            self.rates_ = np.asarray([rate])
            self.generator_ = np.zeros((1, 1))
            self.initial_probabilities_ = np.ones(1)
            self.log_likelihood_ = t.shape[0] * math.log(rate) - rate * float(t.sum())
            self.log_likelihood_trace_ = [self.log_likelihood_]
            self.n_iter_ = 0
            self.converged_ = True
            self.starts_ = [{"name": "closed_form", "status": "ok", "log_likelihood": None}]
            self.best_start_ = "closed_form"
            return
        if t.shape[0] < 2 * k * k:
            raise FitError(f"{t.shape[0]} intervals are too few for a {k}-phase MMPP")
        gen = as_generator(self.rng)
        starts = self._starts(t, epochs, gen)
        for s in starts:
            if s.status != "ok":
                continue
            try:
                self._run(t, s, int(self.n_init_iter))
            except (FloatingPointError, np.linalg.LinAlgError) as exc:
                s.status = f"failed: {exc}"
                s.log_likelihood = -math.inf
        usable = [s for s in starts if s.status == "ok" and math.isfinite(s.log_likelihood)]
        if not usable:
            raise FitError("every EM start failed: " + "; ".join(s.status for s in starts))
        best = max(usable, key=lambda s: s.log_likelihood)
        self.starts_ = [s.record() for s in starts]
        self.best_start_ = best.name
        remaining = max(int(self.max_iter) - int(self.n_init_iter), 0)
        best, converged, done = self._run(t, best, remaining)
        self.n_iter_ = int(self.n_init_iter) + done
        self.converged_ = converged
        rates, q, alpha = best.rates, best.generator, best.alpha
        ll = best.log_likelihood
        if self.alpha == "stationary":
            rates, q, ll = self._polish(t, rates, q)
            alpha = embedded_phase_law(rates, q)
            self.polished_ = True
        self.rates_, self.generator_, self.initial_probabilities_ = _sort_states(rates, q, alpha)
        self.log_likelihood_ = float(ll)
        self.log_likelihood_trace_ = [float(x) for x in best.trace]
        if not converged:
            warnings.warn(
                f"MMPP EM (k={k}) hit its cap of {self.max_iter} iterations before the relative "
                f"tolerance {self.tol:g}; converged_ is False",
                ConvergenceWarning,
                stacklevel=3,
            )
        logger.info(
            "MMPP k=%d: ll %.6f after %d iterations (converged %s, start %s)",
            k,
            self.log_likelihood_,
            self.n_iter_,
            converged,
            self.best_start_,
        )

    def _polish(self, t: F64, rates: F64, q: F64) -> tuple[F64, F64, float]:
        """Maximise the exact stationary-α likelihood by L-BFGS on log-parameters."""
        k = rates.shape[0]
        mask = ~np.eye(k, dtype=bool)

        def unpack(theta: F64) -> tuple[F64, F64]:
            r = np.exp(theta[:k])
            off = np.zeros((k, k))
            off[mask] = np.exp(theta[k:])
            return r, _generator_from_offdiag(off)

        def objective(theta: F64) -> tuple[float, F64]:
            r, g = unpack(theta)
            phi = embedded_phase_law(r, g)
            stats = self._estep(t, r, g, phi)
            grad_r = stats.arrivals - r * stats.time_in_phase
            grad_q = (stats.jumps - g * stats.time_in_phase[:, None])[mask]
            grad = np.concatenate([grad_r, grad_q])
            # d log φ / d θ by central differences: φ is a tiny k × k computation
            h = 1e-6
            for p in range(theta.shape[0]):
                up, down = theta.copy(), theta.copy()
                up[p] += h
                down[p] -= h
                dlog = (
                    np.log(embedded_phase_law(*unpack(up)))
                    - np.log(embedded_phase_law(*unpack(down)))
                ) / (2 * h)
                grad[p] += float(stats.initial @ dlog)
            return -stats.log_likelihood, -grad

        off0 = np.maximum(q[mask], 1e-12 * float(np.max(rates)))
        theta0 = np.concatenate([np.log(np.maximum(rates, 1e-300)), np.log(off0)])
        result = scipy.optimize.minimize(
            objective, theta0, jac=True, method="L-BFGS-B", options={"maxiter": 200}
        )
        r, g = unpack(result.x)
        ll = -float(result.fun)
        self.polish_message_ = str(result.message)
        return r, g, ll

    # --- serialisation ----------------------------------------------------------------------------

    def _params(self) -> dict[str, Any]:
        return {
            "n_states": self.n_states,
            "alpha": self.alpha,
            "max_iter": self.max_iter,
            "tol": self.tol,
            "n_init_iter": self.n_init_iter,
            "n_random_starts": self.n_random_starts,
            "count_hmm_start": self.count_hmm_start,
            "kernel": self.kernel,
            "rng": self.rng,
        }

    def _fitted(self) -> dict[str, Any]:
        return {
            "rates": self.rates_.tolist(),
            "generator": self.generator_.tolist(),
            "initial_probabilities": self.initial_probabilities_.tolist(),
            "alpha_mode": self.alpha_mode_,
            "polished": self.polished_,
            "log_likelihood": self.log_likelihood_,
            "log_likelihood_trace": list(self.log_likelihood_trace_),
            "n_iter": self.n_iter_,
            "converged": self.converged_,
            "cap_hit": not self.converged_,
            "starts": list(self.starts_),
            "best_start": self.best_start_,
            "e_step": "eigendecomposition of D0 once per iteration; Van Loan if defective",
        }

    def _set_fitted(self, data: Mapping[str, Any]) -> None:
        self.rates_ = np.asarray(data["rates"], dtype=np.float64)
        self.generator_ = np.asarray(data["generator"], dtype=np.float64).reshape(
            self.rates_.shape[0], self.rates_.shape[0]
        )
        self.initial_probabilities_ = np.asarray(data["initial_probabilities"], dtype=np.float64)
        self.alpha_mode_ = str(data["alpha_mode"])
        self.polished_ = bool(data["polished"])
        self.log_likelihood_ = float(data["log_likelihood"])
        self.log_likelihood_trace_ = [float(x) for x in data["log_likelihood_trace"]]
        self.n_iter_ = int(data["n_iter"])
        self.converged_ = bool(data["converged"])
        self.starts_ = [dict(s) for s in data["starts"]]
        self.best_start_ = str(data["best_start"])


def _failed(name: str, k: int, status: str) -> _Start:
    return _Start(name, np.ones(k), np.zeros((k, k)), np.ones(k) / k, status=status)


def _quantile_start(t: F64, k: int) -> tuple[F64, F64]:
    """Rates at k quantiles of windowed local rates; switching rates from the window labels."""
    n = t.shape[0]
    m = int(min(max(5, n // 400), 50))
    windows = n // m
    sums = t[: windows * m].reshape(windows, m).sum(axis=1)
    local = m / np.maximum(sums, 1e-12 * max(float(t.mean()), 1e-300))
    levels = (np.arange(k) + 0.5) / k
    rates = np.quantile(local, levels)
    if np.unique(rates).shape[0] < k:  # flat data: spread the rates a little
        rates = float(np.median(local)) * np.exp(np.linspace(-0.3, 0.3, k))
    labels = np.argmin(np.abs(np.log(local)[:, None] - np.log(rates)[None, :]), axis=1)
    time_in = np.bincount(labels, weights=sums, minlength=k)
    moves = np.zeros((k, k))
    np.add.at(moves, (labels[:-1], labels[1:]), 1.0)
    np.fill_diagonal(moves, 0.0)
    total = float(t.sum())
    off = (moves + 0.5) / np.maximum(time_in, total / windows)[:, None]
    return np.asarray(rates, dtype=np.float64), _generator_from_offdiag(off)


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

    result = scipy.optimize.least_squares(residuals, theta0, method="trf", max_nfev=400)
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
