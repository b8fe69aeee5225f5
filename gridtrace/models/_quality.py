"""Fit quality: KS D and Anderson–Darling A² as effect sizes, held-out log-likelihood vs Poisson.

With 1e5 observations every goodness-of-fit test rejects; the statistics themselves (D, A²) and the
held-out log-likelihood per arrival say *how much* better one model is, which is what matters.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from gridtrace.errors import FitError
from gridtrace.models._arrivals import ArrivalModel, PoissonArrivals, check_times

__all__ = [
    "HeldOutScore",
    "anderson_darling",
    "heldout_log_likelihood",
    "ks_statistic",
]

F64 = NDArray[np.float64]
Cdf = Callable[[F64], F64]


def _sorted_cdf(x: ArrayLike, cdf: Cdf) -> tuple[F64, int]:
    xs = np.sort(np.asarray(x, dtype=np.float64).ravel())
    if xs.size == 0:
        raise FitError("no observations")
    return np.asarray(cdf(xs), dtype=np.float64), int(xs.size)


def ks_statistic(x: ArrayLike, cdf: Cdf) -> float:
    """Kolmogorov–Smirnov distance ``D = sup |F_n − F|`` between a sample and a model CDF.

    Parameters
    ----------
    x : array_like
        Observations.
    cdf : callable
        The model CDF, vectorised (e.g. ``model.cdf`` or ``model.iat_cdf``).

    Returns
    -------
    float
        D in [0, 1]. Ties in ``x`` are handled as steps of the empirical CDF.
    """
    xs = np.sort(np.asarray(x, dtype=np.float64).ravel())
    if xs.size == 0:
        raise FitError("no observations")
    f = np.asarray(cdf(xs), dtype=np.float64)
    n = xs.size
    # the empirical CDF jumps at the last copy of each value
    last = np.append(xs[1:] != xs[:-1], True)
    first = np.insert(xs[1:] != xs[:-1], 0, True)
    upper = (np.arange(1, n + 1) / n)[last] - f[last]
    lower = f[first] - (np.arange(n) / n)[first]
    return float(max(upper.max(), lower.max(), 0.0))


def anderson_darling(x: ArrayLike, cdf: Cdf) -> float:
    """Anderson–Darling statistic ``A² = −n − (1/n) Σ (2i − 1) [ln F(x_i) + ln(1 − F(x_{n+1−i}))]``.

    Parameters
    ----------
    x : array_like
        Observations.
    cdf : callable
        The model CDF, vectorised.

    Returns
    -------
    float
        A² (CDF values are clipped to [1e-300, 1 − 1e-16] so atoms do not give infinities).
    """
    f, n = _sorted_cdf(x, cdf)
    f = np.clip(f, 1e-300, 1.0 - 1e-16)
    i = np.arange(1, n + 1)
    s = np.sum((2 * i - 1) * (np.log(f) + np.log1p(-f[::-1])))
    return float(-n - s / n)


@dataclass(frozen=True, slots=True)
class HeldOutScore:
    """Held-out log-likelihood per arrival of a model and of the Poisson baseline.

    Attributes
    ----------
    model : float
        Model log-likelihood per scored interval on the test part.
    poisson : float
        The same for a Poisson process fitted on the same training part.
    gain : float
        ``model − poisson`` (nats per arrival; > 0: the model predicts better).
    n_train, n_test : int
        Arrivals in the training part and intervals scored in the test part.
    split_s : float
        The time that separates the parts.
    """

    model: float
    poisson: float
    gain: float
    n_train: int
    n_test: int
    split_s: float

    def to_dict(self) -> dict[str, Any]:
        """JSON types."""
        return asdict(self)


def heldout_log_likelihood(
    times: ArrayLike, model: ArrivalModel, *, train_fraction: float = 0.7
) -> HeldOutScore:
    """Fit on the first part of the trace *in time*, score on the rest, against Poisson.

    Parameters
    ----------
    times : array_like
        Sorted arrival times in seconds.
    model : ArrivalModel
        An arrival model; a copy is fitted (the argument is left untouched).
    train_fraction : float, default 0.7
        Share of the time span used for fitting.

    Returns
    -------
    HeldOutScore
        Per-arrival log-likelihoods on the test part (which starts at the last training arrival,
        the conditioning one, so that no interval is lost). Both models use the same ``ties``
        treatment as ``model``, and the count of scored intervals is that of ``model``'s epochs.
    """
    t = check_times(times)
    if not 0.0 < train_fraction < 1.0:
        raise FitError(f"train_fraction must be in (0, 1), got {train_fraction}")
    split = float(t[0] + train_fraction * (t[-1] - t[0]))
    cut = int(np.searchsorted(t, split, side="right"))
    train, test = t[:cut], t[cut - 1 :]
    fitted = copy.deepcopy(model).fit(train)
    baseline = PoissonArrivals(ties=model.ties).fit(train)
    scored, _ = fitted._epochs(test)
    n_test = int(scored.shape[0] - 1)
    if n_test < 1:
        raise FitError("the test part has no interval to score")
    m = fitted.score(test) / n_test
    p = baseline.score(test) / n_test
    return HeldOutScore(
        model=m,
        poisson=p,
        gain=m - p if math.isfinite(m) and math.isfinite(p) else math.nan,
        n_train=int(train.shape[0]),
        n_test=n_test,
        split_s=split,
    )
