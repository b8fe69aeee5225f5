"""Arrival models: the shared estimator base, homogeneous and piecewise-constant Poisson.

Every arrival model follows the same conventions: ``fit(times)`` returns the model, fitted
attributes end in ``_``, ``score(times)`` is the exact log density of the inter-arrival times
*conditional on the first arrival* (so every model is compared on the same footing), ``bic`` uses
the number of intervals, ``sample(size | horizon_s, rng=...)`` draws new arrival times, and
``to_dict`` / ``from_dict`` round-trip through JSON.

Same-second submissions
-----------------------
Accounting logs stamp submissions to the second, and job arrays submit hundreds of jobs in the same
second. Read literally, such ties are zero inter-arrival times, which a point-process fit explains
by a state with an absurd rate. With ``ties="batch"`` (the default) arrivals sharing a timestamp
form one *arrival epoch* of size b: the point process is fitted to the epochs, the batch sizes to
their empirical law (``batch_sizes_``, ``batch_counts_``), and ``sample`` gives each drawn epoch a
size drawn from that law. ``score`` is then the log density of the epochs; the batch sizes are
modelled identically by every arrival model, so they cancel in comparisons. With ``ties="keep"``
zero gaps enter the likelihood as they are (a density at 0).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Self

import numpy as np
import scipy.stats
from numpy.typing import ArrayLike, NDArray
from threadpoolctl import threadpool_limits

from gridtrace.errors import ConfigError, FitError, NotFittedError
from gridtrace.random import SeedLike, as_generator

__all__ = ["ArrivalModel", "PiecewisePoissonArrivals", "PoissonArrivals", "arrival_epochs"]

F64 = NDArray[np.float64]
TIES = ("batch", "keep")


def small_matrix_threads() -> threadpool_limits:
    """Limit BLAS to one thread while fitting: the models multiply k × k matrices.

    On a loaded machine a multi-threaded BLAS spends milliseconds waking its threads for each 2 × 2
    product (measured here: 16 ms per ``scipy.linalg.expm`` of a 2 × 2 matrix instead of 40 µs).
    The limit is restored on exit.
    """
    return threadpool_limits(limits=1, user_api="blas")


def arrival_epochs(times: ArrayLike) -> tuple[F64, NDArray[np.int64]]:
    """Collapse equal timestamps into epochs.

    Parameters
    ----------
    times : array_like
        Non-decreasing arrival times in seconds.

    Returns
    -------
    epochs : ndarray of float64
        The distinct times, increasing.
    sizes : ndarray of int64
        How many arrivals share each epoch.
    """
    t = np.asarray(times, dtype=np.float64)
    if t.size == 0:
        return t.copy(), np.zeros(0, dtype=np.int64)
    new = np.empty(t.shape[0], dtype=bool)
    new[0] = True
    np.not_equal(t[1:], t[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    sizes = np.diff(np.append(starts, t.shape[0])).astype(np.int64)
    return t[starts], sizes


def check_times(times: ArrayLike, *, minimum: int = 2) -> F64:
    """Validate arrival times: 1-D, finite, non-decreasing, at least ``minimum`` of them."""
    t = np.asarray(times, dtype=np.float64)
    if t.ndim != 1:
        raise FitError(f"arrival times must be one-dimensional, got shape {t.shape}")
    if t.shape[0] < minimum:
        raise FitError(f"need at least {minimum} arrival times, got {t.shape[0]}")
    if not np.all(np.isfinite(t)):
        raise FitError("arrival times must be finite")
    if np.any(np.diff(t) < 0):
        raise FitError("arrival times must be sorted (non-decreasing); sort the trace by submit_s")
    return t


class ArrivalModel(ABC):
    """Base of the arrival models: tie handling, validation, BIC, sampling of batches.

    Parameters
    ----------
    ties : {"batch", "keep"}, default "batch"
        How arrivals sharing a timestamp are treated (see the module docstring).
    """

    kind: ClassVar[str] = ""
    approximate: ClassVar[bool] = False

    def __init__(self, *, ties: str = "batch") -> None:
        self.ties = ties

    # --- hooks ---------------------------------------------------------------------------------

    @abstractmethod
    def _fit_epochs(self, epochs: F64) -> None: ...

    @abstractmethod
    def _score_epochs(self, epochs: F64) -> float: ...

    @abstractmethod
    def _sample_epochs(
        self, gen: np.random.Generator, size: int | None, horizon_s: float | None
    ) -> F64: ...

    @abstractmethod
    def _params(self) -> dict[str, Any]:
        """Return the constructor arguments (JSON types)."""

    @abstractmethod
    def _fitted(self) -> dict[str, Any]:
        """Return the fitted attributes (JSON types)."""

    @abstractmethod
    def _set_fitted(self, data: Mapping[str, Any]) -> None: ...

    @property
    @abstractmethod
    def n_parameters(self) -> int:
        """Number of free parameters counted by :meth:`bic`."""

    # --- the shared API -------------------------------------------------------------------------

    def _epochs(self, times: ArrayLike) -> tuple[F64, NDArray[np.int64]]:
        if self.ties not in TIES:
            raise ConfigError(f"ties must be one of {', '.join(TIES)}, got {self.ties!r}")
        t = check_times(times)
        if self.ties == "keep":
            return t, np.ones(t.shape[0], dtype=np.int64)
        epochs, sizes = arrival_epochs(t)
        if epochs.shape[0] < 2:
            raise FitError("fewer than two distinct arrival times")
        return epochs, sizes

    def fit(self, times: ArrayLike) -> Self:
        """Fit the model to arrival times.

        Parameters
        ----------
        times : array_like
            Non-decreasing arrival times in seconds (e.g. a trace's ``submit_s``).

        Returns
        -------
        self
        """
        epochs, sizes = self._epochs(times)
        values, counts = np.unique(sizes, return_counts=True)
        self.batch_sizes_ = values.astype(np.int64)
        self.batch_counts_ = counts.astype(np.int64)
        self.n_arrivals_ = int(sizes.sum())
        self.n_intervals_ = int(epochs.shape[0] - 1)
        with small_matrix_threads():
            self._fit_epochs(epochs)
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "batch_sizes_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted; call fit first")

    def score(self, times: ArrayLike) -> float:
        """Log density of the inter-arrival times (epochs with ``ties="batch"``).

        Parameters
        ----------
        times : array_like
            Non-decreasing arrival times in seconds; the first one is the conditioning arrival.

        Returns
        -------
        float
            Natural-log likelihood (densities in s⁻¹).
        """
        self._check_fitted()
        epochs, _ = self._epochs(times)
        with small_matrix_threads():
            return self._score_epochs(epochs)

    def bic(self, times: ArrayLike) -> float:
        """Bayesian information criterion ``−2 score + p ln n`` (n intervals, p parameters)."""
        epochs, _ = self._epochs(times)
        return -2.0 * self.score(times) + self.n_parameters * math.log(epochs.shape[0] - 1)

    def aic(self, times: ArrayLike) -> float:
        """Akaike information criterion ``−2 score + 2 p``."""
        return -2.0 * self.score(times) + 2.0 * self.n_parameters

    def sample(
        self, size: int | None = None, *, horizon_s: float | None = None, rng: SeedLike
    ) -> F64:
        """Draw arrival times from the fitted model.

        Parameters
        ----------
        size : int, optional
            Number of arrivals (jobs). Exactly one of ``size`` and ``horizon_s`` is given.
        horizon_s : float, optional
            Draw every arrival in ``(0, horizon_s]``.
        rng : int, SeedSequence, Generator or None
            Random source; split into two streams (epochs, batch sizes).

        Returns
        -------
        ndarray of float64
            Sorted arrival times in seconds after 0.
        """
        self._check_fitted()
        if (size is None) == (horizon_s is None):
            raise ConfigError("give exactly one of size and horizon_s")
        if size is not None and size < 0:
            raise ConfigError(f"size must be >= 0, got {size}")
        with small_matrix_threads():
            return self._sample(size, horizon_s, rng)

    def _sample(self, size: int | None, horizon_s: float | None, rng: SeedLike) -> F64:
        gen_epochs, gen_sizes = as_generator(rng).spawn(2)
        probs = self.batch_counts_ / self.batch_counts_.sum()
        mean_batch = float(np.dot(self.batch_sizes_, probs))
        if horizon_s is not None:
            epochs = self._sample_epochs(gen_epochs, None, float(horizon_s))
            batch = gen_sizes.choice(self.batch_sizes_, size=epochs.shape[0], p=probs)
            return np.repeat(epochs, batch)
        assert size is not None
        want = math.ceil(size / mean_batch) + 1
        while True:
            epochs = self._sample_epochs(gen_epochs, want, None)
            batch = gen_sizes.choice(self.batch_sizes_, size=epochs.shape[0], p=probs)
            if int(batch.sum()) >= size:
                return np.repeat(epochs, batch)[:size]
            want *= 2  # pragma: no cover - only when the batch draws fall far short

    def to_dict(self) -> dict[str, Any]:
        """Return the model (parameters and, once fitted, fitted values) as JSON types."""
        out: dict[str, Any] = {"kind": self.kind, "approximate": self.approximate}
        out["params"] = {"ties": self.ties, **self._params()}
        if hasattr(self, "batch_sizes_"):
            out["fitted"] = {
                "batch_sizes": self.batch_sizes_.tolist(),
                "batch_counts": self.batch_counts_.tolist(),
                "n_arrivals": self.n_arrivals_,
                "n_intervals": self.n_intervals_,
                **self._fitted(),
            }
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Rebuild a model from the output of :meth:`to_dict`."""
        if data.get("kind") != cls.kind:
            raise ConfigError(f"not a {cls.kind} model: kind {data.get('kind')!r}")
        model = cls(**dict(data["params"]))
        fitted = data.get("fitted")
        if fitted is not None:
            model.batch_sizes_ = np.asarray(fitted["batch_sizes"], dtype=np.int64)
            model.batch_counts_ = np.asarray(fitted["batch_counts"], dtype=np.int64)
            model.n_arrivals_ = int(fitted["n_arrivals"])
            model.n_intervals_ = int(fitted["n_intervals"])
            model._set_fitted(fitted)
        return model


class PoissonArrivals(ArrivalModel):
    """Homogeneous Poisson arrivals: λ̂ by maximum likelihood with an exact interval.

    Parameters
    ----------
    confidence : float, default 0.95
        Coverage of ``rate_interval_``.
    ties : {"batch", "keep"}, default "batch"
        See :class:`ArrivalModel`.

    Attributes
    ----------
    rate_ : float
        λ̂ = n / S, n intervals of total length S (conditional on the first arrival).
    rate_interval_ : tuple of float
        Exact equal-tailed interval: ``λ S ~ Gamma(n, 1)`` gives
        ``[G⁻¹(a/2; n) / S, G⁻¹(1 − a/2; n) / S]`` with a = 1 − confidence.
    log_likelihood_ : float
        Log-likelihood at λ̂.

    Examples
    --------
    >>> m = PoissonArrivals().fit([0.0, 1.0, 3.0, 6.0])
    >>> round(m.rate_, 4)
    0.5
    """

    kind = "poisson"

    def __init__(self, *, confidence: float = 0.95, ties: str = "batch") -> None:
        super().__init__(ties=ties)
        self.confidence = confidence

    @property
    def n_parameters(self) -> int:
        """One: the rate."""
        return 1

    def _fit_epochs(self, epochs: F64) -> None:
        if not 0.0 < self.confidence < 1.0:
            raise ConfigError(f"confidence must be in (0, 1), got {self.confidence}")
        n = epochs.shape[0] - 1
        span = float(epochs[-1] - epochs[0])
        if span <= 0.0:
            raise FitError("the arrivals span zero time")
        self.rate_ = n / span
        a = 1.0 - self.confidence
        self.rate_interval_ = (
            float(scipy.stats.gamma.ppf(a / 2.0, n)) / span,
            float(scipy.stats.gamma.ppf(1.0 - a / 2.0, n)) / span,
        )
        self.log_likelihood_ = self._score_epochs(epochs)

    def _score_epochs(self, epochs: F64) -> float:
        n = epochs.shape[0] - 1
        return float(n * math.log(self.rate_) - self.rate_ * float(epochs[-1] - epochs[0]))

    def _sample_epochs(
        self, gen: np.random.Generator, size: int | None, horizon_s: float | None
    ) -> F64:
        if size is not None:
            return np.cumsum(gen.standard_exponential(size) / self.rate_)
        assert horizon_s is not None
        count = int(gen.poisson(self.rate_ * horizon_s))
        return np.sort(gen.random(count) * horizon_s)

    def iat_cdf(self, t: ArrayLike) -> F64:
        """CDF of the inter-arrival time, ``1 − e^{−λ t}``."""
        tt = np.maximum(np.asarray(t, dtype=np.float64), 0.0)
        return np.asarray(-np.expm1(-self.rate_ * tt), dtype=np.float64)

    def _params(self) -> dict[str, Any]:
        return {"confidence": self.confidence}

    def _fitted(self) -> dict[str, Any]:
        return {
            "rate": self.rate_,
            "rate_interval": list(self.rate_interval_),
            "log_likelihood": self.log_likelihood_,
        }

    def _set_fitted(self, data: Mapping[str, Any]) -> None:
        self.rate_ = float(data["rate"])
        lo, hi = data["rate_interval"]
        self.rate_interval_ = (float(lo), float(hi))
        self.log_likelihood_ = float(data["log_likelihood"])


class PiecewisePoissonArrivals(ArrivalModel):
    """Non-homogeneous Poisson arrivals with a piecewise-constant periodic (daily/weekly) rate.

    The period is cut into ``n_buckets`` equal buckets (Lublin's 48 half-hours by default); the
    rate of bucket b is the number of arrivals that fell in it divided by the time the observation
    window spent in it.

    Parameters
    ----------
    period_s : float, default 86400
        The period: 86 400 s (daily profile) or 604 800 s (weekly).
    n_buckets : int, default 48
        Buckets per period.
    offset_s : float, default 0
        Position in the period of time 0 (e.g. the trace origin's seconds after local midnight;
        for a weekly profile, seconds after the start of the week).
    ties : {"batch", "keep"}, default "batch"
        See :class:`ArrivalModel`.

    Attributes
    ----------
    rates_ : ndarray, shape (n_buckets,)
        Rate per bucket, s⁻¹.
    unobserved_buckets_ : list of int
        Buckets the window never covered; they get the overall rate (listed, never silent).
    log_likelihood_ : float
        Log-likelihood at the fit.
    """

    kind = "piecewise_poisson"

    def __init__(
        self,
        *,
        period_s: float = 86_400.0,
        n_buckets: int = 48,
        offset_s: float = 0.0,
        ties: str = "batch",
    ) -> None:
        super().__init__(ties=ties)
        self.period_s = period_s
        self.n_buckets = n_buckets
        self.offset_s = offset_s

    @property
    def n_parameters(self) -> int:
        """One rate per bucket."""
        return int(self.n_buckets)

    def _check(self) -> None:
        if not (self.period_s > 0 and self.n_buckets >= 1):
            raise ConfigError("period_s must be > 0 and n_buckets >= 1")

    @property
    def _width(self) -> float:
        return float(self.period_s) / int(self.n_buckets)

    def _exposure(self, start: float, stop: float) -> F64:
        """Time the window [start, stop] spends in each bucket."""
        return self._exposure_to(stop) - self._exposure_to(start)

    def _exposure_to(self, t: float) -> F64:
        u = t + self.offset_s
        periods = math.floor(u / self.period_s)
        within = u - periods * self.period_s
        w = self._width
        edges = np.arange(self.n_buckets) * w
        partial = np.clip(within - edges, 0.0, w)
        return np.asarray(periods * w + partial, dtype=np.float64)

    def _bucket(self, t: F64) -> NDArray[np.int64]:
        phase = np.mod(t + self.offset_s, self.period_s)
        return np.minimum((phase // self._width).astype(np.int64), self.n_buckets - 1)

    def _fit_epochs(self, epochs: F64) -> None:
        self._check()
        exposure = self._exposure(float(epochs[0]), float(epochs[-1]))
        counts = np.bincount(self._bucket(epochs[1:]), minlength=self.n_buckets).astype(float)
        seen = exposure > 0
        overall = counts.sum() / exposure.sum()
        rates = np.full(self.n_buckets, overall)
        rates[seen] = counts[seen] / exposure[seen]
        self.rates_ = rates
        self.unobserved_buckets_ = [int(b) for b in np.flatnonzero(~seen)]
        self.log_likelihood_ = self._score_epochs(epochs)

    def _cumulative(self, t: F64) -> F64:
        """Integrated intensity from time 0 to t (vectorised)."""
        w = self._width
        within_cum = np.concatenate([[0.0], np.cumsum(self.rates_ * w)])
        mass = within_cum[-1]

        def upto(u: F64) -> F64:
            periods = np.floor(u / self.period_s)
            phase = u - periods * self.period_s
            j = np.minimum((phase // w).astype(np.int64), self.n_buckets - 1)
            return np.asarray(
                periods * mass + within_cum[j] + self.rates_[j] * (phase - j * w), dtype=np.float64
            )

        return upto(np.asarray(t, dtype=np.float64) + self.offset_s) - upto(
            np.asarray([self.offset_s])
        )

    def _score_epochs(self, epochs: F64) -> float:
        lam = self.rates_[self._bucket(epochs[1:])]
        with np.errstate(divide="ignore"):
            logs = float(np.sum(np.log(lam)))
        ends = self._cumulative(np.asarray([epochs[0], epochs[-1]]))
        return logs - float(ends[1] - ends[0])

    def _invert(self, targets: F64) -> F64:
        """Return the times at which the integrated intensity from 0 reaches ``targets``."""
        w = self._width
        within_cum = np.concatenate([[0.0], np.cumsum(self.rates_ * w)])
        mass = within_cum[-1]
        base = self._cumulative(np.zeros(1))[0]  # 0 by construction
        absolute = targets + base + self._upto_offset(within_cum, mass)
        periods = np.floor(absolute / mass)
        rem = absolute - periods * mass
        j = np.searchsorted(within_cum, rem, side="right") - 1
        j = np.clip(j, 0, self.n_buckets - 1)
        phase = j * w + (rem - within_cum[j]) / self.rates_[j]
        return np.asarray(periods * self.period_s + phase - self.offset_s, dtype=np.float64)

    def _upto_offset(self, within_cum: F64, mass: float) -> float:
        u = float(self.offset_s)
        periods = math.floor(u / self.period_s)
        phase = u - periods * self.period_s
        w = self._width
        j = min(int(phase // w), self.n_buckets - 1)
        return float(periods * mass + within_cum[j] + self.rates_[j] * (phase - j * w))

    def _sample_epochs(
        self, gen: np.random.Generator, size: int | None, horizon_s: float | None
    ) -> F64:
        if not np.any(self.rates_ > 0):
            raise FitError("every bucket has rate 0: nothing to sample")
        if size is not None:
            return self._invert(np.cumsum(gen.standard_exponential(size)))
        assert horizon_s is not None
        total = float(self._cumulative(np.asarray([horizon_s]))[0])
        count = int(gen.poisson(total))
        return self._invert(np.sort(gen.random(count) * total))

    def _params(self) -> dict[str, Any]:
        return {"period_s": self.period_s, "n_buckets": self.n_buckets, "offset_s": self.offset_s}

    def _fitted(self) -> dict[str, Any]:
        return {
            "rates": self.rates_.tolist(),
            "unobserved_buckets": list(self.unobserved_buckets_),
            "log_likelihood": self.log_likelihood_,
        }

    def _set_fitted(self, data: Mapping[str, Any]) -> None:
        self.rates_ = np.asarray(data["rates"], dtype=np.float64)
        self.unobserved_buckets_ = [int(b) for b in data["unobserved_buckets"]]
        self.log_likelihood_ = float(data["log_likelihood"])
