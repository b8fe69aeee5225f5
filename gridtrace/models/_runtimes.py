"""Runtime models: exponential, hyperexponential, lognormal, Weibull, gamma, empirical.

Every model follows the estimator conventions: ``fit(run_s, censor_s=...)`` returns the model,
fitted attributes end in ``_``, ``score`` is the log-likelihood (censored terms included), ``bic``,
``cdf``/``logpdf``, ``sample(size, rng=...)``, ``to_dict``/``from_dict`` (JSON).

Right-censoring
---------------
Jobs killed at their walltime limit ran *at least* that long. Pass the limit as ``censor_s`` (one
value, or one per job): a runtime at or above its limit is treated as right-censored there, and the
parametric models maximise the censored likelihood (uncensored terms ``log f(x)``, censored terms
``log S(c)``). The empirical model does not model censoring: it replays the values, spike
included.

Zero runtimes
-------------
Logs hold runtimes of 0 s (jobs failing at once). The models with support (0, ∞) reject them
unless ``floor_s`` is given, in which case smaller values are raised to ``floor_s`` and counted in
``n_floored_``; nothing is changed silently.

Hyperexponentials without degenerate phases
-------------------------------------------
An H_k fitted by unconstrained maximum likelihood can end on degenerate phases (a rate of 1e−13/s
with a weight of 5e−8, a phase holding half a job), whose values depend on where the optimiser
stopped and so on the CPU. :class:`HyperExponentialRuntime` holds each phase's mean inside the
data's range, starts from several points, and says in ``refused_`` when the best fit still has a
phase the data cannot hold; :func:`select_hyperexponential` then falls to fewer phases.
"""

from __future__ import annotations

import itertools
import math
import warnings
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import numpy as np
import scipy.optimize
import scipy.special
import scipy.stats
from numpy.typing import ArrayLike, NDArray

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError, ConvergenceWarning, FitError, NotFittedError
from gridtrace.models._arrivals import small_matrix_threads
from gridtrace.random import SeedLike, as_generator

__all__ = [
    "EmpiricalRuntime",
    "ExponentialRuntime",
    "GammaRuntime",
    "HyperExponentialRuntime",
    "LogNormalRuntime",
    "RuntimeModel",
    "WeibullRuntime",
    "hk_collapse",
    "runtime_model_from_dict",
    "select_hyperexponential",
]

logger = library_logger(__name__)

F64 = NDArray[np.float64]
B = NDArray[np.bool_]

HK_RATE_RTOL = 1e-2
"""Two H_k phases whose rates differ by less than this (relatively) are one phase: their mixture's
squared coefficient of variation exceeds 1 by at most ``HK_RATE_RTOL² / 4`` = 2.5e−5, which no
runtime sample can tell from an exponential."""

HK_MIN_PHASE_JOBS = 10.0
"""Fewest runtimes a fitted H_k phase must be expected to hold: the rate of a phase seen in ten
runtimes is known to about ±30 %, and fewer say nothing a BIC could weigh."""

HK_FLAT_WIDTHS = 20.0
"""On a bounded range of width W (the interactive class, W = τ), phase means are held at most
``HK_FLAT_WIDTHS · W``. A phase at that bound varies by e^{−1/20} ≈ 5 % over the range: it is
*flat* there (its rate is not identified, its weight and its mean on the range are), the honest
form of the "rate 1e−13/s" phases an unbounded fit drifts to. It is kept, and flagged in
``flat_phases_``; on an open range a phase pinned at the largest runtime is refused instead."""

HK_BOUND_ATOL = 1e-3
"""A phase whose log mean lies within this of a bound of ``mean_bounds_s_`` is pinned there."""

_LOGIT_BOUND = 50.0
"""Weight logits are held in ±this: a phase at the bound holds a share of e^{−50} (refused)."""


def hk_collapse(
    weights: ArrayLike,
    rates: ArrayLike,
    n: int,
    *,
    span_s: float | None = None,
    rate_rtol: float = HK_RATE_RTOL,
    min_phase_jobs: float = 1.0,
) -> str | None:
    """Say whether a hyperexponential H_k is collapsed, i.e. effectively an H_{k−1}.

    One of the checks behind :attr:`HyperExponentialRuntime.refused_`.

    Parameters
    ----------
    weights, rates : array_like, shape (k,)
        Phase weights and rates (s⁻¹). For a class truncated to a range, pass the weights the
        phases have *on that range* (``w_j P_j(range) / Σ_i w_i P_i(range)``): the raw weights of a
        truncated fit can be ~1e−11 for a phase that holds a fifth of the jobs.
    n : int
        Number of runtimes fitted.
    span_s : float, optional
        Length of a bounded range (0, span_s] the runtimes live on (the interactive class, τ):
        two phases whose rates differ by less than ``rate_rtol / span_s`` have densities within a
        factor ``e^{rate_rtol}`` of each other over the whole range, so they are one phase there
        (e.g. two rates ≪ 1/τ, both flat on (0, τ]).
    rate_rtol : float, default :data:`HK_RATE_RTOL`
        Relative rate difference below which two phases are one.
    min_phase_jobs : float, default 1.0
        A phase whose weight times n is below this holds too few runtimes to be a phase (the
        fitter passes :data:`HK_MIN_PHASE_JOBS`).

    Returns
    -------
    str or None
        Why the mixture is collapsed (a phase holding too few jobs, or two phases with the same
        rate), or None when every phase is identified.
    """
    w = np.asarray(weights, dtype=np.float64).ravel()
    mu = np.asarray(rates, dtype=np.float64).ravel()
    reasons = []
    for j in np.argsort(w):
        if w[j] * n < min_phase_jobs:
            reasons.append(
                f"a phase (rate {mu[j]:.4g}/s) holds {w[j] * n:.3g} of {n} runtimes "
                f"(weight {w[j]:.3g})"
            )
    order = np.argsort(mu)
    for lo, hi in itertools.pairwise(order):
        gap = float(mu[hi] - mu[lo])
        if gap <= rate_rtol * float(mu[hi]):
            reasons.append(
                f"two phases have the same rate within {100 * rate_rtol:g} % "
                f"({mu[lo]:.6g}, {mu[hi]:.6g}/s)"
            )
        elif span_s is not None and gap * span_s <= rate_rtol:
            reasons.append(
                f"two phases (rates {mu[lo]:.4g}, {mu[hi]:.4g}/s) are the same on "
                f"(0, {span_s:g} s]: |Δμ| τ = {gap * span_s:.3g}"
            )
    return "; ".join(reasons) if reasons else None


class RuntimeModel(ABC):
    """Base of the runtime models: validation, censoring, BIC, serialisation.

    Parameters
    ----------
    floor_s : float, optional
        Runtimes below it are raised to it (counted in ``n_floored_``); required for data with
        zeros in models whose support excludes 0.
    """

    kind: ClassVar[str] = ""
    positive_support: ClassVar[bool] = True

    def __init__(self, *, floor_s: float | None = None) -> None:
        self.floor_s = floor_s

    # --- hooks ----------------------------------------------------------------------------------

    @abstractmethod
    def _fit(self, x: F64, censored: B) -> None: ...

    @abstractmethod
    def logpdf(self, x: ArrayLike) -> F64:
        """Log density at ``x`` (s⁻¹)."""

    @abstractmethod
    def logsf(self, x: ArrayLike) -> F64:
        """Log survival function at ``x``."""

    @abstractmethod
    def ppf(self, u: ArrayLike) -> F64:
        """Quantile function."""

    @abstractmethod
    def _params(self) -> dict[str, Any]: ...

    @abstractmethod
    def _fitted(self) -> dict[str, Any]: ...

    @abstractmethod
    def _set_fitted(self, data: Mapping[str, Any]) -> None: ...

    @property
    @abstractmethod
    def n_parameters(self) -> int:
        """Free parameters counted by :meth:`bic`."""

    # --- shared ---------------------------------------------------------------------------------

    def _prepare(self, run_s: ArrayLike, censor_s: ArrayLike | None) -> tuple[F64, B, int]:
        x = np.asarray(run_s, dtype=np.float64).ravel().copy()
        if x.size < 2:
            raise FitError(f"need at least 2 runtimes, got {x.size}")
        if not np.all(np.isfinite(x)) or np.any(x < 0):
            raise FitError("runtimes must be finite and >= 0")
        censored = np.zeros(x.shape[0], dtype=bool)
        if censor_s is not None:
            limit = np.broadcast_to(np.asarray(censor_s, dtype=np.float64), x.shape)
            censored = np.isfinite(limit) & (x >= limit)
            x = np.where(censored, limit, x)
        floored = 0
        if self.floor_s is not None:
            if not self.floor_s > 0:
                raise ConfigError(f"floor_s must be > 0, got {self.floor_s}")
            low = x < self.floor_s
            floored = int(low.sum())
            x[low] = self.floor_s
        if self.positive_support and np.any(x <= 0):
            raise FitError(
                f"{int(np.sum(x <= 0))} runtimes are <= 0 and {type(self).__name__} needs x > 0; "
                "pass floor_s (e.g. the log's 1-s resolution) or drop them"
            )
        if censored.all():
            raise FitError("every runtime is censored")
        return x, censored, floored

    def fit(self, run_s: ArrayLike, *, censor_s: ArrayLike | None = None) -> Self:
        """Fit the model.

        Parameters
        ----------
        run_s : array_like
            Runtimes in seconds.
        censor_s : float or array_like, optional
            Walltime limit(s): runtimes at or above it are right-censored there.

        Returns
        -------
        self
        """
        x, censored, floored = self._prepare(run_s, censor_s)
        self.n_floored_ = floored
        self.n_censored_ = int(censored.sum())
        self.n_samples_ = int(x.shape[0])
        self._fit(x, censored)
        self.log_likelihood_ = self._loglik(x, censored)
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "n_samples_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted; call fit first")

    def _loglik(self, x: F64, censored: B) -> float:
        total = 0.0
        if np.any(~censored):
            total += float(np.sum(self.logpdf(x[~censored])))
        if np.any(censored):
            total += float(np.sum(self.logsf(x[censored])))
        return total

    def score(self, run_s: ArrayLike, *, censor_s: ArrayLike | None = None) -> float:
        """Log-likelihood of runtimes (censored terms use the survival function)."""
        self._check_fitted()
        x, censored, _ = self._prepare(run_s, censor_s)
        return self._loglik(x, censored)

    def bic(self, run_s: ArrayLike, *, censor_s: ArrayLike | None = None) -> float:
        """``−2 score + p ln n``."""
        n = np.asarray(run_s).size
        return -2.0 * self.score(run_s, censor_s=censor_s) + self.n_parameters * math.log(n)

    def cdf(self, x: ArrayLike) -> F64:
        """Cumulative distribution function."""
        return np.asarray(-np.expm1(self.logsf(x)), dtype=np.float64)

    def sample(self, size: int, *, rng: SeedLike) -> F64:
        """Draw ``size`` runtimes (inverse CDF of uniforms from ``rng``)."""
        self._check_fitted()
        return self.ppf(as_generator(rng).random(int(size)))

    def to_dict(self) -> dict[str, Any]:
        """Return the model as JSON types."""
        out: dict[str, Any] = {"kind": self.kind, "params": {"floor_s": self.floor_s}}
        out["params"].update(self._params())
        if hasattr(self, "n_samples_"):
            out["fitted"] = {
                "n_samples": self.n_samples_,
                "n_censored": self.n_censored_,
                "n_floored": self.n_floored_,
                "log_likelihood": self.log_likelihood_,
                **self._fitted(),
            }
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Rebuild a model from :meth:`to_dict`."""
        if data.get("kind") != cls.kind:
            raise ConfigError(f"not a {cls.kind} model: kind {data.get('kind')!r}")
        model = cls(**dict(data["params"]))
        fitted = data.get("fitted")
        if fitted is not None:
            model.n_samples_ = int(fitted["n_samples"])
            model.n_censored_ = int(fitted["n_censored"])
            model.n_floored_ = int(fitted["n_floored"])
            model.log_likelihood_ = float(fitted["log_likelihood"])
            model._set_fitted(fitted)
        return model


class ExponentialRuntime(RuntimeModel):
    """Exponential runtimes; censored MLE ``μ̂ = (#uncensored) / Σ x``.

    Attributes
    ----------
    rate_ : float
        μ in s⁻¹.

    Examples
    --------
    >>> m = ExponentialRuntime.from_interactive_fraction(0.1, 900.0)
    >>> f"{m.rate_:.4e}"
    '1.1707e-04'
    """

    kind = "exponential"
    positive_support = False

    @property
    def n_parameters(self) -> int:
        """One."""
        return 1

    @classmethod
    def from_interactive_fraction(cls, fraction: float, tau_s: float = 900.0) -> ExponentialRuntime:
        """Build the research's exponential matched to an interactive fraction: μ = −ln(1 − f)/τ.

        Parameters
        ----------
        fraction : float
            f = P(run ≤ τ), in (0, 1).
        tau_s : float, default 900
            τ in seconds.

        Returns
        -------
        ExponentialRuntime
            A fitted-state model (``n_samples_`` 0) with that rate.
        """
        if not 0.0 < fraction < 1.0 or not tau_s > 0:
            raise ConfigError("need 0 < fraction < 1 and tau_s > 0")
        model = cls()
        model.rate_ = -math.log1p(-fraction) / tau_s
        model.n_samples_ = 0
        model.n_censored_ = 0
        model.n_floored_ = 0
        model.log_likelihood_ = math.nan
        return model

    def _fit(self, x: F64, censored: B) -> None:
        total = float(x.sum())
        if total <= 0:
            raise FitError("every runtime is 0")
        self.rate_ = float((~censored).sum()) / total

    def logpdf(self, x: ArrayLike) -> F64:
        """Log density."""
        return np.asarray(math.log(self.rate_) - self.rate_ * np.asarray(x, dtype=np.float64))

    def logsf(self, x: ArrayLike) -> F64:
        """Log survival."""
        return np.asarray(-self.rate_ * np.asarray(x, dtype=np.float64))

    def ppf(self, u: ArrayLike) -> F64:
        """Quantiles."""
        return np.asarray(-np.log1p(-np.asarray(u, dtype=np.float64)) / self.rate_)

    def _params(self) -> dict[str, Any]:
        return {}

    def _fitted(self) -> dict[str, Any]:
        return {"rate": self.rate_}

    def _set_fitted(self, data: Mapping[str, Any]) -> None:
        self.rate_ = float(data["rate"])

    def to_dict(self) -> dict[str, Any]:
        """JSON types (``log_likelihood`` is null for the f/τ constructor)."""
        out = super().to_dict()
        if "fitted" in out and not math.isfinite(out["fitted"]["log_likelihood"]):
            out["fitted"]["log_likelihood"] = None
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Rebuild from :meth:`to_dict`."""
        fitted = data.get("fitted")
        if fitted is not None and fitted.get("log_likelihood") is None:
            data = {**data, "fitted": {**fitted, "log_likelihood": math.nan}}
        return super().from_dict(data)


class HyperExponentialRuntime(RuntimeModel):
    """Hyperexponential H_k (a mixture of k exponentials) on a range, by bounded maximum likelihood.

    The law of a runtime x on the range ``(lower_s, upper_s]``: a phase j is drawn with
    probability ``weights_[j]``, then ``x − lower_s`` is exponential with rate ``rates_[j]``,
    truncated to the range's width ``W = upper_s − lower_s`` when ``upper_s`` is given. With the
    defaults (0, ∞) this is the usual H_k. A class range is fitted as it is sampled: the batch jobs
    of a trace, ``run > τ``, are ``HyperExponentialRuntime(k, lower_s=τ)`` (each phase's excess over
    τ is exponential, by memorylessness), the interactive jobs ``HyperExponentialRuntime(k,
    upper_s=τ)``. Either way the weights are the shares of the runtimes *on the range* that each
    phase holds, never a raw weight of a law mostly outside it.

    Parameters
    ----------
    n_phases : int, default 2
        k.
    lower_s : float, default 0
        Lower end of the range (runtimes below it are refused).
    upper_s : float, optional
        Upper end of the range (runtimes above it are refused); None for no upper end. Censoring
        needs an open range (no ``upper_s``).
    min_phase_jobs : float, default :data:`HK_MIN_PHASE_JOBS`
        A phase expected to hold fewer runtimes than this cannot be estimated: the fit is refused.
    n_init : int, default 3
        Starts of the optimiser: equal-count groups of the sorted runtimes, log-spaced quantiles,
        then ``n_init − 2`` random ones drawn from ``rng``. The best optimum is kept.
    rng : int or None, default 0
        Seed of the random starts (the fit is deterministic for an int).
    max_iter : int, default 1000
        Iteration cap of each optimiser run (reported through ``converged_``).
    tol : float, default 1e-10
        Relative change of the log-likelihood that stops an optimiser run.
    floor_s : float, optional
        See :class:`RuntimeModel`.

    Attributes
    ----------
    weights_ : ndarray, shape (k,)
        Share of the runtimes on the range that each phase holds.
    rates_ : ndarray, shape (k,)
        Phase rates μ_j in s⁻¹, decreasing (shortest phase first).
    mean_bounds_s_ : tuple of float
        (lo, hi): the bounds each phase's mean 1/μ_j (of ``x − lower_s``) is held in. lo is
        half the smallest positive ``x − lower_s``; hi is :data:`HK_FLAT_WIDTHS` times the
        range's width W when it is bounded, else the largest runtime (a censored one counted at
        its walltime limit).
    flat_phases_ : ndarray of bool, shape (k,)
        Phases at the upper bound of a bounded range: flat on it (uniform within 5 %); their
        rate is a bound, not an estimate, but their weight and mean on the range are.
    start_log_likelihoods_ : list of float
        The optimum reached from each start (``log_likelihood_`` is their maximum).
    n_iter_ : int
        Iterations of the optimiser run that reached the best optimum.
    converged_ : bool
        Whether that run met its tolerance (a projected gradient of zero at the bounds).
    refused_ : str or None
        Why this is not a proper H_k, or None when it is: a phase expected to hold fewer than
        ``min_phase_jobs`` runtimes, two phases with the same rate (:func:`hk_collapse`; two
        flat phases are one), or a phase whose mean sits at a bound of the data's range (on an
        open range a mean beyond the largest runtime or walltime limit, or anywhere a mean below
        half the smallest runtime, is no phase of the data).
        :func:`select_hyperexponential` and :class:`~gridtrace.models.WorkloadModel` leave a
        refused fit out of the BIC choice, so that the choice falls to fewer phases.

    Notes
    -----
    The fit maximises the log-likelihood (censored terms ``log S(c)``) over the log phase means,
    held in ``mean_bounds_s_``, and the weight logits, with L-BFGS-B and the analytic gradient, from
    ``n_init`` starts; equal runtimes are counted once with their multiplicity. Without the bounds
    the likelihood of a truncated or censored H_k keeps rising towards degenerate phases (a rate of
    1e−13/s holding a weight of 5e−8), whose values then depend on where an optimiser stops; with
    them every optimum is a point the data determine, or a bound that is a stated constant.
    """

    kind = "hyperexponential"
    positive_support = False

    def __init__(
        self,
        n_phases: int = 2,
        *,
        lower_s: float = 0.0,
        upper_s: float | None = None,
        min_phase_jobs: float = HK_MIN_PHASE_JOBS,
        n_init: int = 3,
        rng: int | None = 0,
        max_iter: int = 1000,
        tol: float = 1e-10,
        floor_s: float | None = None,
    ) -> None:
        super().__init__(floor_s=floor_s)
        self.n_phases = n_phases
        self.lower_s = lower_s
        self.upper_s = upper_s
        self.min_phase_jobs = min_phase_jobs
        self.n_init = n_init
        self.rng = rng
        self.max_iter = max_iter
        self.tol = tol

    @property
    def n_parameters(self) -> int:
        """2k − 1."""
        return 2 * int(self.n_phases) - 1

    @property
    def collapsed_(self) -> str | None:
        """Former name of :attr:`refused_` (kept for code written before the bounded fit)."""
        return self.refused_

    # --- the range -------------------------------------------------------------------------------

    def _width(self) -> float:
        """W = upper_s − lower_s (inf without an upper end)."""
        return math.inf if self.upper_s is None else float(self.upper_s) - float(self.lower_s)

    def _range_text(self) -> str:
        upper = "∞)" if self.upper_s is None else f"{float(self.upper_s):g} s]"
        return f"({float(self.lower_s):g} s, {upper}"

    def _log_q(self, rates: F64) -> F64:
        """Return log Q_j, Q_j = 1 − e^{−μ_j W}: the mass of phase j within the range's width."""
        width = self._width()
        if not math.isfinite(width):
            return np.zeros_like(rates)
        return np.asarray(np.log(-np.expm1(-rates * width)), dtype=np.float64)

    def _prepare(self, run_s: ArrayLike, censor_s: ArrayLike | None) -> tuple[F64, B, int]:
        lower = float(self.lower_s)
        if not (math.isfinite(lower) and lower >= 0.0):
            raise ConfigError(f"lower_s must be finite and >= 0, got {self.lower_s}")
        if self.upper_s is not None and not float(self.upper_s) > lower:
            raise ConfigError(f"upper_s must exceed lower_s, got {self.upper_s} <= {lower}")
        x, censored, floored = super()._prepare(run_s, censor_s)
        if np.any(x < lower) or (self.upper_s is not None and np.any(x > float(self.upper_s))):
            raise FitError(f"runtimes outside the range {self._range_text()} of the H_k")
        if censored.any() and self.upper_s is not None:
            raise ConfigError("censoring needs a range without an upper end (upper_s None)")
        return x, censored, floored

    # --- fit -------------------------------------------------------------------------------------

    def _fit(self, x: F64, censored: B) -> None:
        k = int(self.n_phases)
        if k < 1:
            raise ConfigError(f"n_phases must be >= 1, got {k}")
        if int(self.n_init) < 1:
            raise ConfigError(f"n_init must be >= 1, got {self.n_init}")
        if not float(self.min_phase_jobs) >= 0.0:
            raise ConfigError(f"min_phase_jobs must be >= 0, got {self.min_phase_jobs}")
        if x.shape[0] < k:
            raise FitError(f"{x.shape[0]} runtimes are too few for {k} phases")
        y = x - float(self.lower_s)
        width = self._width()
        positive = y[y > 0]
        if positive.size == 0:
            raise FitError(f"every runtime is at the lower end {float(self.lower_s):g} s")
        lo = 0.5 * float(positive.min())
        hi = HK_FLAT_WIDTHS * width if math.isfinite(width) else float(y.max())
        if not hi > lo:
            raise FitError("the runtimes have no spread to fit")
        self.mean_bounds_s_ = (lo, hi)
        problem = _HkProblem(y, censored, k, width, lo, hi)
        starts = problem.starts(int(self.n_init), as_generator(self.rng))
        runs = []
        with small_matrix_threads():
            for start in starts:
                runs.append(problem.maximise(start, int(self.max_iter), float(self.tol)))
        self.start_log_likelihoods_ = [float(r.log_likelihood) for r in runs]
        best = max(runs, key=lambda r: r.log_likelihood)
        rates, weights = problem.unpack(best.theta)
        order = np.argsort(-rates, kind="stable")
        self.rates_ = rates[order]
        self.weights_ = weights[order]
        self.n_iter_ = best.n_iter
        self.converged_ = best.converged
        log_means = np.asarray(best.theta[:k])[order]
        self.flat_phases_ = np.asarray(
            (log_means >= math.log(hi) - HK_BOUND_ATOL) & math.isfinite(width), dtype=np.bool_
        )
        self.refused_ = self._refusal(log_means, x.shape[0], censored)
        if self.refused_:
            logger.debug("H%d on %d runtimes is refused: %s", k, x.shape[0], self.refused_)
        if not self.converged_:
            warnings.warn(
                f"H{k} fit stopped before meeting its tolerance ({best.message})",
                ConvergenceWarning,
                stacklevel=3,
            )

    def _refusal(self, log_means: F64, n: int, censored: B) -> str | None:
        """Why the fitted H_k is not a proper one (see ``refused_``), None when it is."""
        lo, hi = self.mean_bounds_s_
        at_hi = [
            float(mu)
            for s, mu in zip(log_means, self.rates_, strict=True)
            if s >= math.log(hi) - HK_BOUND_ATOL
        ]
        at_lo = [
            float(mu)
            for s, mu in zip(log_means, self.rates_, strict=True)
            if s <= math.log(lo) + HK_BOUND_ATOL
        ]
        reasons = []
        if at_hi and not math.isfinite(self._width()):  # on a bounded range: a flat phase
            largest = "runtime or walltime limit" if censored.any() else "runtime"
            reasons.append(
                f"{_phases_text(at_hi)} pinned at the largest {largest} ({hi:g} s past "
                f"{float(self.lower_s):g} s): the data hold no such phase"
            )
        if at_lo:
            reasons.append(
                f"{_phases_text(at_lo)} pinned at {lo:g} s, half the smallest runtime: an atom of "
                "equal runtimes is no exponential phase"
            )
        if int(self.n_phases) > 1:
            width = self._width()
            collapse = hk_collapse(
                self.weights_,
                self.rates_,
                n,
                span_s=width if math.isfinite(width) else None,
                min_phase_jobs=float(self.min_phase_jobs),
            )
            if collapse:
                reasons.extend(r for r in collapse.split("; ") if r not in reasons)
        return "; ".join(reasons) if reasons else None

    # --- the law ---------------------------------------------------------------------------------

    def _y(self, x: ArrayLike) -> tuple[F64, NDArray[np.bool_]]:
        """``x − lower_s`` clipped into [0, W], and whether x was inside the range."""
        xx = np.asarray(x, dtype=np.float64)
        y = xx - float(self.lower_s)
        inside = y >= 0
        if self.upper_s is not None:
            inside &= xx <= float(self.upper_s)
        return np.asarray(np.clip(y, 0.0, self._width()), dtype=np.float64), inside

    def logpdf(self, x: ArrayLike) -> F64:
        """Log density (−inf outside the range)."""
        y, inside = self._y(x)
        log_w = np.log(self.weights_) + np.log(self.rates_) - self._log_q(self.rates_)
        with np.errstate(divide="ignore"):
            value = scipy.special.logsumexp(log_w - self.rates_ * y[..., None], axis=-1)
        return np.asarray(np.where(inside, value, -np.inf), dtype=np.float64)

    def logsf(self, x: ArrayLike) -> F64:
        """Log survival (0 below the range, −inf at and above its upper end)."""
        y, _ = self._y(x)
        width = self._width()
        with np.errstate(divide="ignore"):
            terms = np.log(self.weights_) - self.rates_ * y[..., None]
            if math.isfinite(width):
                rest = np.maximum(width - y, 0.0)[..., None]
                terms = terms + np.log(-np.expm1(-self.rates_ * rest)) - self._log_q(self.rates_)
            return np.asarray(scipy.special.logsumexp(terms, axis=-1), dtype=np.float64)

    def cdf(self, x: ArrayLike) -> F64:
        """CDF, without cancellation where it is small."""
        y, _ = self._y(x)
        q = np.exp(self._log_q(self.rates_))
        value = (-np.expm1(-y[..., None] * self.rates_) / q) @ self.weights_
        return np.asarray(np.clip(value, 0.0, 1.0), dtype=np.float64)

    def ppf(self, u: ArrayLike) -> F64:
        """Quantiles (bisection on the CDF; exact to 1e-10 relative)."""
        uu = np.asarray(u, dtype=np.float64)
        width = self._width()
        lo = np.zeros_like(uu)
        if math.isfinite(width):
            hi = np.full_like(uu, width)
        else:
            tail = -float(np.min(np.log1p(-np.minimum(uu, 1 - 1e-16)))) / float(self.rates_.min())
            hi = np.full_like(uu, max(tail, 1.0))
        lower = float(self.lower_s)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            below = self.cdf(lower + mid) < uu
            lo = np.where(below, mid, lo)
            hi = np.where(below, hi, mid)
            if np.all(hi - lo <= 1e-10 * np.maximum(hi, 1e-300)):
                break
        return np.asarray(lower + 0.5 * (lo + hi), dtype=np.float64)

    def sample(self, size: int, *, rng: SeedLike) -> F64:
        """Draw runtimes: a phase by weight, then its (truncated) exponential."""
        self._check_fitted()
        gen = as_generator(rng)
        phase = gen.choice(self.rates_.shape[0], size=int(size), p=self.weights_)
        mu = self.rates_[phase]
        if self.upper_s is None:
            y = gen.standard_exponential(int(size)) / mu
        else:
            q = np.exp(self._log_q(self.rates_))[phase]
            y = -np.log1p(-gen.random(int(size)) * q) / mu
        return np.asarray(float(self.lower_s) + y, dtype=np.float64)

    @property
    def phase_means_s_(self) -> F64:
        """Mean runtime of each phase on the range: ``lower_s + E[x − lower_s | phase]``."""
        self._check_fitted()
        mu = self.rates_
        width = self._width()
        mean = 1.0 / mu
        if math.isfinite(width):
            a = mu * width
            mean = mean - width / np.expm1(a)
        return np.asarray(float(self.lower_s) + mean, dtype=np.float64)

    # --- serialisation ---------------------------------------------------------------------------

    def _params(self) -> dict[str, Any]:
        return {
            "n_phases": self.n_phases,
            "lower_s": self.lower_s,
            "upper_s": self.upper_s,
            "min_phase_jobs": self.min_phase_jobs,
            "n_init": self.n_init,
            "rng": self.rng,
            "max_iter": self.max_iter,
            "tol": self.tol,
        }

    def _fitted(self) -> dict[str, Any]:
        return {
            "weights": self.weights_.tolist(),
            "rates": self.rates_.tolist(),
            "n_iter": self.n_iter_,
            "converged": self.converged_,
            "refused": self.refused_,
            "mean_bounds_s": list(self.mean_bounds_s_),
            "flat_phases": self.flat_phases_.tolist(),
            "start_log_likelihoods": list(self.start_log_likelihoods_),
        }

    def _set_fitted(self, data: Mapping[str, Any]) -> None:
        self.weights_ = np.asarray(data["weights"], dtype=np.float64)
        self.rates_ = np.asarray(data["rates"], dtype=np.float64)
        self.n_iter_ = int(data["n_iter"])
        self.converged_ = bool(data["converged"])
        # "collapsed": models written before the bounded fit; absent from older ones still
        refused = data.get("refused", data.get("collapsed"))
        self.refused_ = None if refused is None else str(refused)
        bounds = data.get("mean_bounds_s")
        self.mean_bounds_s_ = (
            (math.nan, math.nan) if bounds is None else (float(bounds[0]), float(bounds[1]))
        )
        self.start_log_likelihoods_ = [float(v) for v in data.get("start_log_likelihoods", [])]
        flat = data.get("flat_phases")
        self.flat_phases_ = np.asarray(
            [False] * self.rates_.shape[0] if flat is None else flat, dtype=np.bool_
        )


@dataclass(frozen=True, slots=True)
class _HkRun:
    """One optimiser run of :class:`_HkProblem`."""

    theta: F64
    log_likelihood: float
    n_iter: int
    converged: bool
    message: str


class _HkProblem:
    """The bounded H_k likelihood on ``y = x − lower_s`` and its gradient.

    θ = (s_1 … s_k, η_1 … η_{k−1}): s_j = log(1/μ_j) in [log lo, log hi], η the weight logits
    (η_k = 0) in [−:data:`_LOGIT_BOUND`, :data:`_LOGIT_BOUND`]. Equal values are counted once.
    """

    def __init__(self, y: F64, censored: B, k: int, width: float, lo: float, hi: float) -> None:
        self.k = k
        self.width = width
        self.lo, self.hi = lo, hi
        self.y_obs, self.c_obs = _unique_counts(y[~censored])
        self.y_cen, self.c_cen = _unique_counts(y[censored])
        self.n = float(y.shape[0])
        self.y_sorted = np.sort(y)
        self.bounds = [(math.log(lo), math.log(hi))] * k + [(-_LOGIT_BOUND, _LOGIT_BOUND)] * (k - 1)

    def unpack(self, theta: F64) -> tuple[F64, F64]:
        """Rates and weights of θ."""
        rates = np.exp(-theta[: self.k])
        logits = np.append(theta[self.k :], 0.0)
        weights = np.exp(logits - scipy.special.logsumexp(logits))
        return np.asarray(rates, dtype=np.float64), np.asarray(weights, dtype=np.float64)

    def _part(self, y: F64, counts: F64, log_c: F64, rates: F64) -> tuple[float, F64, F64]:
        """Σ counts · log Σ_j e^{log_c_j − μ_j y}, the responsibilities' sums R and Σ r y."""
        a = log_c[None, :] - y[:, None] * rates[None, :]
        top = a.max(axis=1)
        a -= top[:, None]
        np.exp(a, out=a)
        total = a.sum(axis=1)
        ll = float(counts @ (np.log(total) + top))
        a *= (counts / total)[:, None]
        return ll, a.sum(axis=0), y @ a

    def value_and_grad(self, theta: F64) -> tuple[float, F64]:
        """−log-likelihood per runtime and its gradient."""
        k = self.k
        rates, weights = self.unpack(theta)
        log_w = np.log(weights)
        if math.isfinite(self.width):
            a = rates * self.width
            log_q = np.log(-np.expm1(-a))
            d = a * np.exp(-a - log_q)  # d log Q_j / d log μ_j
        else:
            log_q = np.zeros(k)
            d = np.zeros(k)
        ll, r_obs, ry_obs = self._part(self.y_obs, self.c_obs, log_w + np.log(rates) - log_q, rates)
        g_log_rate = r_obs * (1.0 - d) - rates * ry_obs
        r_all = r_obs
        if self.y_cen.shape[0]:
            ll_c, r_cen, ry_cen = self._part(self.y_cen, self.c_cen, log_w, rates)
            ll += ll_c
            g_log_rate = g_log_rate - rates * ry_cen
            r_all = r_all + r_cen
        g_logit = r_all - self.n * weights
        grad = np.concatenate([-g_log_rate, g_logit[:-1]])  # s = −log μ
        return -ll / self.n, np.asarray(-grad / self.n, dtype=np.float64)

    def starts(self, n_init: int, gen: np.random.Generator) -> list[F64]:
        """Equal-count groups, log-spaced quantiles, then random starts."""
        k = self.k
        log_lo, log_hi = math.log(self.lo), math.log(self.hi)
        margin = 1e-3 * (log_hi - log_lo)
        groups = np.array_split(self.y_sorted, k)
        means = np.asarray([max(float(g.mean()), self.lo) for g in groups])
        out = [np.concatenate([np.log(means), np.zeros(k - 1)])]
        if n_init >= 2:
            positive = self.y_sorted[self.y_sorted > 0]
            q = np.quantile(positive, np.linspace(0.1, 0.9, k)) if k > 1 else [positive.mean()]
            out.append(np.concatenate([np.log(np.asarray(q, dtype=np.float64)), np.zeros(k - 1)]))
        for _ in range(n_init - len(out)):
            s = np.sort(gen.uniform(log_lo, log_hi, k))
            logits = np.log(gen.dirichlet(np.ones(k)))
            out.append(np.concatenate([s, logits[:-1] - logits[-1]]))
        for start in out:
            start[:k] = np.clip(start[:k], log_lo + margin, log_hi - margin)
        return out

    def maximise(self, start: F64, max_iter: int, tol: float) -> _HkRun:
        """Run L-BFGS-B from ``start``; converged at ``tol`` or a projected gradient of 0."""
        result = scipy.optimize.minimize(
            self.value_and_grad,
            start,
            jac=True,
            method="L-BFGS-B",
            bounds=self.bounds,
            options={"maxiter": max_iter, "ftol": tol, "gtol": 1e-9},
        )
        theta = np.asarray(result.x, dtype=np.float64)
        value, grad = self.value_and_grad(theta)
        low = np.asarray([b[0] for b in self.bounds])
        high = np.asarray([b[1] for b in self.bounds])
        projected = np.where((theta <= low) & (grad > 0), 0.0, grad)
        projected = np.where((theta >= high) & (projected < 0), 0.0, projected)
        converged = bool(result.success) or float(np.max(np.abs(projected))) <= 1e-6
        return _HkRun(theta, -value * self.n, int(result.nit), converged, str(result.message))


def _phases_text(rates: list[float]) -> str:
    listed = ", ".join(f"{mu:.4g}" for mu in rates)
    if len(rates) == 1:
        return f"a phase's mean (rate {listed}/s) is"
    return f"{len(rates)} phases' means (rates {listed}/s) are"


def _unique_counts(values: F64) -> tuple[F64, F64]:
    unique, counts = np.unique(values, return_counts=True)
    return np.asarray(unique, dtype=np.float64), counts.astype(np.float64)


def select_hyperexponential(
    run_s: ArrayLike, k_max: int = 4, *, censor_s: ArrayLike | None = None, **kwargs: Any
) -> tuple[HyperExponentialRuntime, dict[int, float]]:
    """Fit H_1 … H_{k_max} and return the proper one with the lowest BIC, and the BIC table.

    A refused H_k (``refused_`` set: a phase without runtimes, two phases with one rate, a phase
    mean at a bound of the data's range) keeps its BIC in the table but is not chosen, so that the
    choice falls to fewer phases; the exclusion is logged (INFO). ``kwargs`` go to
    :class:`HyperExponentialRuntime`.
    """
    fits: dict[int, HyperExponentialRuntime] = {}
    bic: dict[int, float] = {}
    n = np.asarray(run_s).size
    for k in range(1, int(k_max) + 1):
        m = HyperExponentialRuntime(k, **kwargs).fit(run_s, censor_s=censor_s)
        fits[k] = m
        bic[k] = -2.0 * m.log_likelihood_ + m.n_parameters * math.log(n)
        if m.refused_:
            logger.info("H%d left out of the BIC choice: refused (%s)", k, m.refused_)
    usable = [k for k in bic if fits[k].refused_ is None] or [1]
    best = min(usable, key=lambda k: bic[k])
    return fits[best], bic


class _ScipyRuntime(RuntimeModel):
    """A two-parameter scipy family with location 0, fitted by (censored) MLE."""

    dist: ClassVar[Any] = None

    @property
    def n_parameters(self) -> int:
        """Two (shape and scale)."""
        return 2

    def _frozen(self) -> Any:
        return self.dist(self.shape_, loc=0.0, scale=self.scale_)

    def _fit(self, x: F64, censored: B) -> None:
        if not censored.any():
            shape, _, scale = self.dist.fit(x, floc=0.0)
        else:
            data = scipy.stats.CensoredData(uncensored=x[~censored], right=x[censored])
            shape, _, scale = self.dist.fit(data, floc=0.0)
        self.shape_ = float(shape)
        self.scale_ = float(scale)

    def logpdf(self, x: ArrayLike) -> F64:
        """Log density."""
        return np.asarray(self._frozen().logpdf(x))

    def logsf(self, x: ArrayLike) -> F64:
        """Log survival."""
        return np.asarray(self._frozen().logsf(x))

    def ppf(self, u: ArrayLike) -> F64:
        """Quantiles."""
        return np.asarray(self._frozen().ppf(u))

    def _params(self) -> dict[str, Any]:
        return {}

    def _fitted(self) -> dict[str, Any]:
        return {"shape": self.shape_, "scale": self.scale_}

    def _set_fitted(self, data: Mapping[str, Any]) -> None:
        self.shape_ = float(data["shape"])
        self.scale_ = float(data["scale"])


class LogNormalRuntime(_ScipyRuntime):
    """Lognormal runtimes: log x ~ N(μ, σ²); closed-form MLE, censored MLE with censoring.

    Attributes
    ----------
    mu_, sigma_ : float
        Mean and standard deviation of log runtime (``shape_`` = σ, ``scale_`` = e^μ).
    """

    kind = "lognormal"
    dist = scipy.stats.lognorm

    def _fit(self, x: F64, censored: B) -> None:
        if not censored.any():
            logs = np.log(x)
            self.shape_ = float(logs.std())
            self.scale_ = float(math.exp(float(logs.mean())))
            if self.shape_ <= 0:
                raise FitError("every runtime is equal: no spread to fit")
            return
        super()._fit(x, censored)

    @property
    def mu_(self) -> float:
        """Mean of log runtime."""
        return math.log(self.scale_)

    @property
    def sigma_(self) -> float:
        """Standard deviation of log runtime."""
        return self.shape_


class WeibullRuntime(_ScipyRuntime):
    """Weibull runtimes (``shape_`` k, ``scale_``), MLE with location 0, censored when needed."""

    kind = "weibull"
    dist = scipy.stats.weibull_min


class GammaRuntime(_ScipyRuntime):
    """Gamma runtimes (``shape_`` a, ``scale_``), MLE with location 0, censored when needed."""

    kind = "gamma"
    dist = scipy.stats.gamma


class EmpiricalRuntime(RuntimeModel):
    """Empirical runtimes: inverse ECDF interpolated linearly in log space.

    Zeros are kept as an atom (``zero_fraction_``); positive runtimes are sampled by
    interpolating ``log x`` between order statistics, so draws stay inside the data range and
    respect its heavy tail. Censoring is not modelled: this is the "replay-like" model.

    Attributes
    ----------
    log_values_ : ndarray
        Sorted log of the positive runtimes.
    zero_fraction_ : float
        Share of zero runtimes.
    """

    kind = "empirical"
    positive_support = False

    @property
    def n_parameters(self) -> int:
        """The number of distinct values (for BIC; not meaningful for model choice)."""
        return int(self.log_values_.shape[0])

    def fit(self, run_s: ArrayLike, *, censor_s: ArrayLike | None = None) -> Self:
        """Store the runtimes; ``censor_s`` only counts the censored ones (``n_censored_``)."""
        x, censored, floored = self._prepare(run_s, censor_s)
        self.n_floored_ = floored
        self.n_censored_ = int(censored.sum())
        self.n_samples_ = int(x.shape[0])
        self._fit(x, censored)
        self.log_likelihood_ = math.nan
        return self

    def _fit(self, x: F64, censored: B) -> None:
        positive = x[x > 0]
        if positive.size == 0:
            raise FitError("no positive runtime")
        self.zero_fraction_ = float(np.mean(x <= 0))
        self.log_values_ = np.sort(np.log(positive))

    def _grid(self) -> F64:
        n = self.log_values_.shape[0]
        return np.asarray((np.arange(n) + 0.5) / n, dtype=np.float64)

    def ppf(self, u: ArrayLike) -> F64:
        """Quantiles: 0 below the zero atom, log-linear interpolation above."""
        uu = np.asarray(u, dtype=np.float64)
        z = self.zero_fraction_
        rel = np.clip((uu - z) / max(1.0 - z, 1e-300), 0.0, 1.0)
        out = np.exp(np.interp(rel, self._grid(), self.log_values_))
        return np.asarray(np.where(uu < z, 0.0, out))

    def logsf(self, x: ArrayLike) -> F64:
        """Log survival of the interpolated distribution."""
        xx = np.asarray(x, dtype=np.float64)
        with np.errstate(divide="ignore"):
            lx = np.log(np.maximum(xx, 1e-300))
            rel = np.interp(lx, self.log_values_, self._grid(), left=0.0, right=1.0)
            cdf = np.where(
                xx <= 0, self.zero_fraction_, self.zero_fraction_ + (1 - self.zero_fraction_) * rel
            )
            return np.asarray(np.log1p(-np.minimum(cdf, 1.0)))

    def logpdf(self, x: ArrayLike) -> F64:
        """Not defined for the empirical model (raises)."""
        raise FitError("the empirical runtime model has no density; compare it by KS/AD instead")

    def _params(self) -> dict[str, Any]:
        return {}

    def _fitted(self) -> dict[str, Any]:
        return {"log_values": self.log_values_.tolist(), "zero_fraction": self.zero_fraction_}

    def _set_fitted(self, data: Mapping[str, Any]) -> None:
        self.log_values_ = np.asarray(data["log_values"], dtype=np.float64)
        self.zero_fraction_ = float(data["zero_fraction"])

    def to_dict(self) -> dict[str, Any]:
        """JSON types (log-likelihood null: no density)."""
        out = super().to_dict()
        if "fitted" in out:
            out["fitted"]["log_likelihood"] = None
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Rebuild from :meth:`to_dict`."""
        fitted = data.get("fitted")
        if fitted is not None:
            data = {**data, "fitted": {**fitted, "log_likelihood": math.nan}}
        return super().from_dict(data)


_KINDS: dict[str, type[RuntimeModel]] = {
    cls.kind: cls
    for cls in (
        ExponentialRuntime,
        HyperExponentialRuntime,
        LogNormalRuntime,
        WeibullRuntime,
        GammaRuntime,
        EmpiricalRuntime,
    )
}


def runtime_model_from_dict(data: Mapping[str, Any]) -> RuntimeModel:
    """Rebuild any runtime model from its :meth:`RuntimeModel.to_dict` output."""
    try:
        cls = _KINDS[str(data["kind"])]
    except KeyError:
        raise ConfigError(f"unknown runtime model kind {data.get('kind')!r}") from None
    return cls.from_dict(data)
