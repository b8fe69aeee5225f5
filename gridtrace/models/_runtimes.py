"""Runtime models: exponential, hyperexponential (EM), lognormal, Weibull, gamma, empirical.

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
"""

from __future__ import annotations

import itertools
import logging
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Self

import numpy as np
import scipy.special
import scipy.stats
from numpy.typing import ArrayLike, NDArray

from gridtrace.errors import ConfigError, ConvergenceWarning, FitError, NotFittedError
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

logger = logging.getLogger(__name__)

F64 = NDArray[np.float64]
B = NDArray[np.bool_]

HK_RATE_RTOL = 1e-2
"""Two H_k phases whose rates differ by less than this (relatively) are one phase: their mixture's
squared coefficient of variation exceeds 1 by at most ``HK_RATE_RTOL² / 4`` = 2.5e−5, which no
runtime sample can tell from an exponential."""


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
        A phase whose weight times n is below this holds less than one job.

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
    """Hyperexponential H_k (a mixture of k exponentials) fitted by EM, with censoring.

    Parameters
    ----------
    n_phases : int, default 2
        k.
    max_iter : int, default 1000
        EM cap (reported through ``converged_``).
    tol : float, default 1e-10
        Relative log-likelihood change that stops EM.
    floor_s : float, optional
        See :class:`RuntimeModel`.

    Attributes
    ----------
    weights_ : ndarray, shape (k,)
        Mixing probabilities p_j.
    rates_ : ndarray, shape (k,)
        Phase rates μ_j in s⁻¹, decreasing (shortest phase first).
    n_iter_ : int
    converged_ : bool
    collapsed_ : str or None
        Why the fit is effectively an H_{k−1} (:func:`hk_collapse`: a phase holding less than one
        runtime, or two phases with the same rate), None when it is not. A collapsed H_k has
        about the likelihood of H_{k−1} with more parameters; :func:`select_hyperexponential`
        (and :class:`~gridtrace.models.WorkloadModel`, on the class range) leave it out of the
        BIC choice.

    Notes
    -----
    EM starts from the k quantile-groups of the data. E-step responsibilities are
    ``p_j f_j(x)`` for complete runtimes and ``p_j S_j(c)`` for censored ones. In the complete data
    a censored runtime is one event whose expected length in phase j is ``c + 1/μ_j``
    (memorylessness); the M-step divides events by expected exposure.
    """

    kind = "hyperexponential"
    positive_support = False

    def __init__(
        self,
        n_phases: int = 2,
        *,
        max_iter: int = 1000,
        tol: float = 1e-10,
        floor_s: float | None = None,
    ) -> None:
        super().__init__(floor_s=floor_s)
        self.n_phases = n_phases
        self.max_iter = max_iter
        self.tol = tol

    @property
    def n_parameters(self) -> int:
        """2k − 1."""
        return 2 * int(self.n_phases) - 1

    def _fit(self, x: F64, censored: B) -> None:
        import warnings

        k = int(self.n_phases)
        if k < 1:
            raise ConfigError(f"n_phases must be >= 1, got {k}")
        order = np.argsort(x)
        groups = np.array_split(order, k)
        rates = np.asarray([1.0 / max(float(x[g].mean()), 1e-12) for g in groups])
        weights = np.full(k, 1.0 / k)
        obs = ~censored
        previous = -math.inf
        self.converged_ = False
        it = 0
        for it in range(1, int(self.max_iter) + 1):  # noqa: B007 - reported after the loop
            log_w = np.log(weights)[None, :] - rates[None, :] * x[:, None]
            log_w = log_w + np.where(obs[:, None], np.log(rates)[None, :], 0.0)
            top = log_w.max(axis=1, keepdims=True)
            resp = np.exp(log_w - top)
            total = resp.sum(axis=1, keepdims=True)
            resp /= total
            ll = float(np.sum(np.log(total)) + top.sum())
            # complete data: every runtime is an event; a censored one lasts c + 1/μ_j in phase j
            events = resp.sum(axis=0)
            exposure = (resp * (x[:, None] + np.where(censored[:, None], 1.0 / rates, 0.0))).sum(
                axis=0
            )
            weights = np.maximum(resp.sum(axis=0) / x.shape[0], 1e-300)
            rates = np.maximum(events, 1e-300) / exposure
            if math.isfinite(previous) and abs(ll - previous) <= self.tol * abs(previous):
                self.converged_ = True
                break
            previous = ll
        self.n_iter_ = it
        order_r = np.argsort(-rates)
        self.rates_ = rates[order_r]
        self.weights_ = weights[order_r] / weights.sum()
        self.collapsed_ = (
            hk_collapse(self.weights_, self.rates_, int(x.shape[0])) if k > 1 else None
        )
        if self.collapsed_:
            logger.debug("H%d EM on %d runtimes is collapsed: %s", k, x.shape[0], self.collapsed_)
        if not self.converged_:
            warnings.warn(
                f"H{k} EM hit its cap of {self.max_iter} iterations",
                ConvergenceWarning,
                stacklevel=3,
            )

    def logpdf(self, x: ArrayLike) -> F64:
        """Log density."""
        xx = np.asarray(x, dtype=np.float64)[..., None]
        return np.asarray(
            scipy.special.logsumexp(np.log(self.weights_ * self.rates_) - self.rates_ * xx, axis=-1)
        )

    def logsf(self, x: ArrayLike) -> F64:
        """Log survival."""
        xx = np.asarray(x, dtype=np.float64)[..., None]
        return np.asarray(
            scipy.special.logsumexp(np.log(self.weights_) - self.rates_ * xx, axis=-1)
        )

    def ppf(self, u: ArrayLike) -> F64:
        """Quantiles (bisection on the CDF; exact to 1e-10 relative)."""
        uu = np.asarray(u, dtype=np.float64)
        target = np.log1p(-uu)
        lo = np.zeros_like(uu)
        hi = np.full_like(
            uu, -float(np.min(np.log1p(-np.minimum(uu, 1 - 1e-16)))) / self.rates_.min()
        )
        hi = np.maximum(hi, 1.0)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            above = self.logsf(mid) > target
            lo = np.where(above, mid, lo)
            hi = np.where(above, hi, mid)
            if np.all(hi - lo <= 1e-10 * np.maximum(hi, 1e-300)):
                break
        return np.asarray(0.5 * (lo + hi))

    def sample(self, size: int, *, rng: SeedLike) -> F64:
        """Draw runtimes: a phase by weight, then an exponential of its rate."""
        self._check_fitted()
        gen = as_generator(rng)
        phase = gen.choice(self.rates_.shape[0], size=int(size), p=self.weights_)
        return np.asarray(gen.standard_exponential(int(size)) / self.rates_[phase])

    def _params(self) -> dict[str, Any]:
        return {"n_phases": self.n_phases, "max_iter": self.max_iter, "tol": self.tol}

    def _fitted(self) -> dict[str, Any]:
        return {
            "weights": self.weights_.tolist(),
            "rates": self.rates_.tolist(),
            "n_iter": self.n_iter_,
            "converged": self.converged_,
            "collapsed": self.collapsed_,
        }

    def _set_fitted(self, data: Mapping[str, Any]) -> None:
        self.weights_ = np.asarray(data["weights"], dtype=np.float64)
        self.rates_ = np.asarray(data["rates"], dtype=np.float64)
        self.n_iter_ = int(data["n_iter"])
        self.converged_ = bool(data["converged"])
        collapsed = data.get("collapsed")  # absent from models written before the check
        self.collapsed_ = None if collapsed is None else str(collapsed)


def select_hyperexponential(
    run_s: ArrayLike, k_max: int = 4, *, censor_s: ArrayLike | None = None, **kwargs: Any
) -> tuple[HyperExponentialRuntime, dict[int, float]]:
    """Fit H_1 … H_{k_max} and return the one with the lowest BIC and the BIC table.

    A collapsed H_k (``collapsed_`` set: effectively an H_{k−1}) keeps its BIC in the table but
    is not chosen; the exclusion is logged (INFO).
    """
    fits: dict[int, HyperExponentialRuntime] = {}
    bic: dict[int, float] = {}
    n = np.asarray(run_s).size
    for k in range(1, int(k_max) + 1):
        m = HyperExponentialRuntime(k, **kwargs).fit(run_s, censor_s=censor_s)
        fits[k] = m
        bic[k] = -2.0 * m.log_likelihood_ + m.n_parameters * math.log(n)
        if m.collapsed_:
            logger.info("H%d left out of the BIC choice: collapsed (%s)", k, m.collapsed_)
    usable = [k for k in bic if fits[k].collapsed_ is None]
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
