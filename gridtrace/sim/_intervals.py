"""Intervals of a mean over seeds that stay inside the metric's range.

Method (:func:`mean_interval`)
------------------------------
The *expanded percentile bootstrap* of the mean (Hesterberg 2015): ``resamples`` resamples of the
``n`` values, drawn with replacement by a :class:`numpy.random.Generator` built from ``seed``; the
interval is the pair of quantiles of the resampled means at α′/2 and 1 − α′/2, where
α′/2 = Φ(−√(n / (n − 1)) · t_{1 − α/2, n − 1}) and α = 1 − ``level``. The expansion widens the
plain percentile interval (α′ < α), which is too narrow for few values, to about the width of
the Student-t interval, so that a difference "separated from zero" needs about the evidence a
t-interval asks for. A resampled mean lies between the smallest and the largest value, so the
interval does too: it never leaves the metric's range (W and F in [0, 1], waits ≥ 0).

``bounds`` states that range. A value outside it is an error; one within round-off (1e-9,
relative) of a finite bound is moved onto it. The interval is finally clipped to [min, max] of
the values and widened to hold the mean: guards against round-off in the resampled means.

Small samples. With 2 to 4 values α′/2 is below the chance of drawing one value ``n`` times,
so the interval is the range [min, max] of the values: all that few seeds can say. With one
value there is no interval (``low`` and ``high`` None); with none there is no mean either.
All-equal values give the degenerate interval [x, x]. None and non-finite values are dropped and
counted (``n_dropped``); ``n`` counts the values used.

Determinism. The resamples depend only on ``seed``, ``n`` and ``resamples``, never on a global
random state or on call order, so the same values give the same interval wherever they are
summarised (a baseline shown in two tables shows the same numbers).

References
----------
T. C. Hesterberg, "What Teachers Should Know About the Bootstrap: Resampling in the Undergraduate
Statistics Curriculum", The American Statistician 69(4), 371-386, 2015 (the "expanded
percentile interval").
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from gridtrace.errors import ConfigError

__all__ = [
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "INTERVAL_METHODS",
    "Interval",
    "mean_interval",
]

DEFAULT_RESAMPLES: Final = 9999
"""Bootstrap resamples of :func:`mean_interval`."""

DEFAULT_SEED: Final = 0
"""Seed of the resamples of :func:`mean_interval` (fixed, so a summary is reproducible)."""

BOOTSTRAP: Final = "expanded-percentile-bootstrap"
CONSTANT: Final = "all-values-equal"
SINGLE: Final = "single-value"
EMPTY: Final = "no-values"
INTERVAL_METHODS: Final = (BOOTSTRAP, CONSTANT, SINGLE, EMPTY)
"""The values of :attr:`Interval.method`."""

_ROUND_OFF: Final = 1e-9
"""Relative distance from a bound within which a value counts as on it."""

_CHUNK_DRAWS: Final = 1 << 20
"""Indices drawn at a time: memory stays bounded whatever ``n``."""


@dataclass(frozen=True, slots=True)
class Interval:
    """The mean of some values and an interval of it (see the module docstring).

    Attributes
    ----------
    mean : float or None
        Mean of the values used; None without any.
    std : float or None
        Their sample standard deviation (ddof 1); None with fewer than two values.
    low, high : float or None
        The interval; None with fewer than two values.
    n : int
        Values used.
    n_dropped : int
        Values dropped (None, NaN, ±inf).
    level : float
        Nominal coverage.
    method : str
        One of :data:`INTERVAL_METHODS`.
    resamples : int
        Bootstrap resamples drawn (0 when no bootstrap ran).
    seed : int
        Seed of the resamples.
    """

    mean: float | None
    std: float | None
    low: float | None
    high: float | None
    n: int
    n_dropped: int
    level: float
    method: str
    resamples: int
    seed: int

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a JSON-ready dict."""
        return asdict(self)


def _finite_values(values: Iterable[float | None]) -> tuple[NDArray[np.float64], int]:
    kept: list[float] = []
    dropped = 0
    for v in values:
        x = math.nan if v is None else float(v)
        if math.isfinite(x):
            kept.append(x)
        else:
            dropped += 1
    return np.asarray(kept, dtype=np.float64), dropped


def _within(x: NDArray[np.float64], lo: float, hi: float) -> NDArray[np.float64]:
    """Check that ``x`` lies in [lo, hi]; values within round-off of a bound are moved onto it."""
    if not lo <= hi:
        raise ConfigError(f"bounds must be (low, high) with low <= high, got ({lo!r}, {hi!r})")
    tol_lo = _ROUND_OFF * max(1.0, abs(lo)) if math.isfinite(lo) else 0.0
    tol_hi = _ROUND_OFF * max(1.0, abs(hi)) if math.isfinite(hi) else 0.0
    outside = x[(x < lo - tol_lo) | (x > hi + tol_hi)]
    if outside.size:
        raise ConfigError(
            f"{outside.size} value(s) outside the metric's range [{lo:g}, {hi:g}], "
            f"e.g. {float(outside[0])!r}"
        )
    return np.clip(x, lo, hi)


def _bootstrap_means(x: NDArray[np.float64], resamples: int, seed: int) -> NDArray[np.float64]:
    """Means of ``resamples`` resamples of ``x`` with replacement, drawn from ``seed`` alone."""
    n = int(x.shape[0])
    rng = np.random.default_rng(seed)
    rows = max(1, _CHUNK_DRAWS // n)
    out = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, rows):
        stop = min(start + rows, resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = x[idx].mean(axis=1)
    return out


def _expanded_alpha(n: int, level: float) -> float:
    """α′/2 = Φ(−√(n / (n − 1)) t_{1 − α/2, n − 1}) of the expanded percentile interval."""
    from scipy import stats as sps  # ~1 s to import: only when an interval is computed

    t = float(sps.t.ppf(0.5 + level / 2.0, n - 1))
    return float(sps.norm.cdf(-math.sqrt(n / (n - 1)) * t))


def mean_interval(
    values: Iterable[float | None],
    *,
    level: float = 0.95,
    bounds: tuple[float, float] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Interval:
    """Return the mean of ``values`` and an interval of it inside their range.

    Parameters
    ----------
    values : iterable of float or None
        One value per seed (or per paired difference). None and non-finite values are dropped
        and counted.
    level : float, default 0.95
        Nominal coverage, in (0, 1).
    bounds : (float, float), optional
        The metric's range: ``(0.0, 1.0)`` for W and F, ``(0.0, math.inf)`` for waits,
        ``(-1.0, 1.0)`` for a difference of two W. The values are checked against it; the
        interval lies inside the values' own range, hence inside ``bounds``.
    resamples : int, default 9999
        Bootstrap resamples.
    seed : int, default 0
        Seed of the resamples. An int, not a Generator: the interval of the same values must
        not depend on what was drawn before.

    Returns
    -------
    Interval

    Raises
    ------
    ConfigError
        If ``level`` is not in (0, 1), ``resamples`` < 1, ``bounds`` is not ordered, or a
        value lies outside ``bounds``.

    Examples
    --------
    >>> r = mean_interval([0.9, 0.95, 1.0, 1.0, 0.85, 0.97, 1.0, 0.99], bounds=(0.0, 1.0))
    >>> r.n, r.method, round(r.mean, 4)
    (8, 'expanded-percentile-bootstrap', 0.9575)
    >>> 0.85 <= r.low <= r.mean <= r.high <= 1.0
    True
    >>> mean_interval([0.4, None, float("nan")]).n_dropped
    2
    """
    if not 0.0 < level < 1.0:
        raise ConfigError(f"level must be in (0, 1), got {level!r}")
    if resamples < 1:
        raise ConfigError(f"resamples must be >= 1, got {resamples!r}")
    x, dropped = _finite_values(values)
    if bounds is not None:
        x = _within(x, float(bounds[0]), float(bounds[1]))
    n = int(x.shape[0])

    def result(
        mean: float | None, std: float | None, low: float | None, high: float | None, how: str
    ) -> Interval:
        drawn = resamples if how == BOOTSTRAP else 0
        return Interval(mean, std, low, high, n, dropped, level, how, drawn, seed)

    if n == 0:
        return result(None, None, None, None, EMPTY)
    x_min, x_max = float(x.min()), float(x.max())
    # round-off may put sum / n just outside [min, max]; the exact mean never is
    mean = min(max(float(x.mean()), x_min), x_max)
    if n == 1:
        return result(mean, None, None, None, SINGLE)
    if x_min == x_max:
        return result(x_min, 0.0, x_min, x_max, CONSTANT)
    means = _bootstrap_means(x, resamples, seed)
    a = _expanded_alpha(n, level)
    q_lo, q_hi = np.quantile(means, [a, 1.0 - a])
    low = min(max(float(q_lo), x_min), mean)
    high = max(min(float(q_hi), x_max), mean)
    return result(mean, float(np.std(x, ddof=1)), low, high, BOOTSTRAP)
