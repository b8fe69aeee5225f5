"""Fit quality: KS D, Anderson–Darling A², Ljung-Box, held-out log-likelihood, replica bands.

With 1e4 observations and more every goodness-of-fit test rejects; the statistics themselves (D,
A²) and the held-out log-likelihood per arrival say *how much* better one model is, which is what
matters: :func:`runtime_fit` reports them as effect sizes beside the sampling noise of D.
:func:`ljung_box` tests whether the inter-arrival times are independent (the evidence for an MMPP
over Poisson), with statsmodels' autocorrelation and Ljung-Box test. :func:`replica_band` asks the
second-order question the marginal statistics cannot: does the model reproduce the trace's
burstiness (IDC at long windows) and the memory of its gaps (ACF)?
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from numpy.typing import ArrayLike, NDArray

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError, FitError
from gridtrace.models._arrivals import ArrivalModel, PoissonArrivals, arrival_epochs, check_times
from gridtrace.random import SeedLike, as_seed_sequence

if TYPE_CHECKING:
    from gridtrace.models._workload import WorkloadModel

__all__ = [
    "HeldOutScore",
    "LjungBox",
    "ReplicaBand",
    "RuntimeFit",
    "anderson_darling",
    "heldout_log_likelihood",
    "ks_statistic",
    "ljung_box",
    "replica_band",
    "runtime_fit",
]

logger = library_logger(__name__)

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


# --- independence of the gaps: Ljung-Box ---------------------------------------------------------

LJUNG_BOX_LAGS = 20
"""Default number of lags of :func:`ljung_box`: an MMPP's gap ACF decays geometrically, so the first
twenty lags hold its evidence; more lags add degrees of freedom and dilute it."""


@dataclass(frozen=True, slots=True)
class LjungBox:
    """The Ljung-Box test of independent inter-arrival times (Poisson arrivals have them).

    Attributes
    ----------
    lags : int
        L, the number of autocorrelations the statistic sums.
    statistic : float
        Q = n (n + 2) Σ_{k ≤ L} ρ̂_k² / (n − k), χ² with L degrees of freedom under independence
        (statsmodels' ``q_stat``, as :func:`statsmodels.stats.diagnostic.acorr_ljungbox`).
    pvalue : float
        P(χ²_L ≥ Q).
    n_gaps : int
        n, the inter-arrival times tested.
    acf : tuple of float
        ρ̂_1 … ρ̂_L (:func:`statsmodels.tsa.stattools.acf`), the effect behind Q: a lag-1 value of
        0.3 is strong memory, 0.01 a trace long enough to detect almost nothing.
    ties : str
        ``"batch"``: gaps between distinct submission times (epochs), as the arrival models
        see them; ``"keep"``: every gap, zeros included.
    """

    lags: int
    statistic: float
    pvalue: float
    n_gaps: int
    acf: tuple[float, ...]
    ties: str

    def rejects(self, alpha: float = 0.05) -> bool:
        """Whether independence is rejected at level ``alpha`` (evidence for an MMPP)."""
        return self.pvalue < alpha

    def to_dict(self) -> dict[str, Any]:
        """JSON types, with ``rejects_5pct``."""
        return {
            "lags": self.lags,
            "statistic": self.statistic,
            "pvalue": self.pvalue,
            "n_gaps": self.n_gaps,
            "acf": list(self.acf),
            "ties": self.ties,
            "rejects_5pct": self.rejects(0.05),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LjungBox:
        """Rebuild a result from :meth:`to_dict`."""
        try:
            return cls(
                lags=int(data["lags"]),
                statistic=float(data["statistic"]),
                pvalue=float(data["pvalue"]),
                n_gaps=int(data["n_gaps"]),
                acf=tuple(float(v) for v in data["acf"]),
                ties=str(data["ties"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"not a Ljung-Box result ({exc!r})") from exc


def ljung_box(times: ArrayLike, *, lags: int = LJUNG_BOX_LAGS, ties: str = "batch") -> LjungBox:
    """Ljung-Box test that the inter-arrival times of a stream are independent.

    A Poisson process has independent gaps; an MMPP's gaps are positively correlated (a short gap
    is followed by short ones while the chain stays in a fast phase). A rejection is the evidence
    for an MMPP over Poisson that the BIC choice and the held-out likelihood then weigh; with
    many gaps even a small autocorrelation rejects, so read ``acf`` as the effect size.

    Parameters
    ----------
    times : array_like
        Arrival times in seconds (sorted here).
    lags : int, default :data:`LJUNG_BOX_LAGS`
        L; fewer when the stream is short (at most a fifth of the gaps).
    ties : {"batch", "keep"}, default "batch"
        ``"batch"`` tests the gaps between distinct times, as the arrival models fit them (a job
        array submitted in one second is one arrival epoch); ``"keep"`` every gap.

    Returns
    -------
    LjungBox

    Raises
    ------
    ConfigError
        If ``lags`` < 1 or ``ties`` is unknown.
    FitError
        If there are fewer than 10 gaps, or they are all equal.
    """
    from statsmodels.tsa.stattools import q_stat

    if int(lags) < 1:
        raise ConfigError(f"lags must be >= 1, got {lags}")
    if ties not in ("batch", "keep"):
        raise ConfigError(f"ties must be 'batch' or 'keep', got {ties!r}")
    t = np.sort(np.asarray(times, dtype=np.float64).ravel())
    if not np.all(np.isfinite(t)):
        raise FitError("arrival times must be finite")
    if ties == "batch":
        t = arrival_epochs(t)[0]
    gaps = np.diff(t)
    n = int(gaps.shape[0])
    if n < 10:
        raise FitError(f"{n} inter-arrival times are too few for a Ljung-Box test (need 10)")
    if not float(np.var(gaps)) > 0.0:
        raise FitError("the inter-arrival times are all equal: no autocorrelation to test")
    lag = max(1, min(int(lags), n // 5))
    # statsmodels' Ljung-Box (q_stat) on its FFT autocorrelation: the Q of acorr_ljungbox, whose
    # own autocorrelation is a direct sum (over three minutes on LPC-EGEE's 2.2e5 gaps here)
    rho = _gap_acf(gaps, lag)
    q, p = q_stat(rho, n)
    return LjungBox(
        lags=lag,
        statistic=float(q[lag - 1]),
        pvalue=float(p[lag - 1]),
        n_gaps=n,
        acf=tuple(float(v) for v in rho),
        ties=ties,
    )


# --- goodness of fit of a runtime model ----------------------------------------------------------

EFFECT_SIZE_NOTE = (
    "effect sizes: with thousands of runtimes any small misfit rejects, so read D (the largest "
    "gap between the runtimes' and the model's CDF) against its sampling noise 1.36/√n, and A² "
    "(which weighs the tails); the p-values assume known parameters"
)
"""What the goodness-of-fit numbers mean, carried with them into summaries and the report."""


@dataclass(frozen=True, slots=True)
class RuntimeFit:
    """How far a runtime model's CDF is from the runtimes it was fitted to.

    Attributes
    ----------
    n : int
        Runtimes compared (the uncensored ones).
    n_censored : int
        Runtimes censored at their walltime limit, left out of the comparison.
    ks_d : float
        Kolmogorov–Smirnov D = sup |F_n − F| (:func:`scipy.stats.kstest`).
    ks_pvalue : float
        Its p-value for a fully specified model (conservative with fitted parameters).
    ks_noise : float
        1.358/√n: the 95 % quantile of D when the model is the truth; D well above it is a real
        misfit, D near it is sampling noise.
    ad_a2 : float
        Anderson–Darling A² (:func:`anderson_darling`).
    lilliefors : dict or None
        ``{"statistic", "pvalue", "on"}``: Lilliefors' test of an exponential with estimated
        rate (:func:`statsmodels.stats.diagnostic.lilliefors`, p-value from its table, bounded
        to [0.001, 0.99]) on the values ``on`` names; None where it does not apply.
    note : str
        How to read these numbers (:data:`EFFECT_SIZE_NOTE`).
    """

    n: int
    n_censored: int
    ks_d: float
    ks_pvalue: float
    ks_noise: float
    ad_a2: float
    lilliefors: dict[str, Any] | None
    note: str = EFFECT_SIZE_NOTE

    def to_dict(self) -> dict[str, Any]:
        """JSON types."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RuntimeFit:
        """Rebuild a result from :meth:`to_dict`."""
        try:
            lf = data.get("lilliefors")
            return cls(
                n=int(data["n"]),
                n_censored=int(data["n_censored"]),
                ks_d=float(data["ks_d"]),
                ks_pvalue=float(data["ks_pvalue"]),
                ks_noise=float(data["ks_noise"]),
                ad_a2=float(data["ad_a2"]),
                lilliefors=None if lf is None else dict(lf),
                note=str(data.get("note", EFFECT_SIZE_NOTE)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"not a runtime fit ({exc!r})") from exc


def runtime_fit(
    run_s: ArrayLike,
    cdf: Cdf,
    *,
    censored: ArrayLike | None = None,
    exponential_from: float | None = None,
) -> RuntimeFit:
    """Goodness of fit of a runtime model: KS D and p, its noise level, A², Lilliefors.

    Parameters
    ----------
    run_s : array_like
        The runtimes the model was fitted to (as fitted: floored, a censored one at its limit).
    cdf : callable
        The model's CDF on the runtimes' range (for a class, conditioned on the class range).
    censored : array_like of bool, optional
        Which runtimes are censored; they are left out (their true value is unknown).
    exponential_from : float, optional
        Also run Lilliefors' exponential test (rate estimated) on ``run_s − exponential_from``
        of the uncensored runtimes above it: for the batch class, ``τ`` tests the research's
        exponential runtimes (memoryless, so the excess over τ is exponential with the same rate).

    Returns
    -------
    RuntimeFit

    Raises
    ------
    FitError
        If fewer than two uncensored runtimes remain.
    """
    import scipy.stats
    from statsmodels.stats.diagnostic import lilliefors

    x = np.asarray(run_s, dtype=np.float64).ravel()
    cens = np.zeros(x.shape[0], dtype=bool) if censored is None else np.asarray(censored, bool)
    complete = np.sort(x[~cens])
    n = int(complete.shape[0])
    if n < 2:
        raise FitError(f"{n} uncensored runtimes are too few to compare with a model")
    ks = scipy.stats.kstest(complete, cdf)
    lf: dict[str, Any] | None = None
    if exponential_from is not None:
        excess = complete[complete > exponential_from] - exponential_from
        if excess.shape[0] >= 5 and float(np.ptp(excess)) > 0:
            d, p = lilliefors(excess, dist="exp", pvalmethod="table")
            lf = {
                "statistic": float(d),
                "pvalue": float(p),
                "on": f"run − {exponential_from:g} s of {excess.shape[0]} uncensored runtimes",
            }
    return RuntimeFit(
        n=n,
        n_censored=int(cens.sum()),
        ks_d=float(ks.statistic),
        ks_pvalue=float(ks.pvalue),
        ks_noise=1.358 / math.sqrt(n),
        ad_a2=anderson_darling(complete, cdf),
        lilliefors=lf,
    )


# --- IDC(t) and ACF against a band of model replicas ---------------------------------------------


def _idc_at(offsets: F64, windows_s: F64, span_s: float) -> F64:
    """IDC of arrivals at ``offsets`` ≥ 0 over consecutive complete windows of ``[0, span_s)``.

    The same estimator as :func:`gridtrace.stats.idc_curve` (counts per complete window, sample
    variance with ddof 1 over the mean); NaN where fewer than two windows fit or none is occupied.
    """
    out = np.full(windows_s.shape[0], np.nan)
    for i, t in enumerate(windows_s):
        windows = int(span_s // t)
        if windows < 2:
            continue
        index = (offsets // t).astype(np.int64)
        counts = np.bincount(index[index < windows], minlength=windows)
        mean = float(counts.mean())
        if mean > 0:
            out[i] = float(counts.var(ddof=1)) / mean
    return out


def _gap_acf(gaps: F64, lags: int) -> F64:
    """Sample autocorrelation of ``gaps`` at lags 1 … min(``lags``, n − 1) (statsmodels, FFT).

    The biased estimator (autocovariances over n), as :func:`gridtrace.stats.interarrival_acf`;
    empty with fewer than two gaps or when they are all equal.
    """
    from statsmodels.tsa.stattools import acf

    lags = min(int(lags), gaps.shape[0] - 1)
    if lags < 1 or not float(np.var(gaps)) > 0.0:
        return np.zeros(0)
    values = acf(gaps, nlags=lags, adjusted=False, fft=True, missing="none")
    return np.asarray(values[1:], dtype=np.float64)


def _acf_at(times: F64, lags: int) -> F64:
    """Inter-arrival ACF at lags 1..``lags`` (:func:`statsmodels.tsa.stattools.acf` of the gaps).

    NaN-padded where the gaps are too few for a lag; the same estimator as
    :func:`gridtrace.stats.interarrival_acf`, which the report's Workload section draws.
    """
    out = np.full(lags, np.nan)
    values = _gap_acf(np.diff(np.asarray(times, dtype=np.float64)), lags)
    out[: values.shape[0]] = values
    return out


def _nan_list(values: NDArray[Any]) -> list[float | None]:
    return [float(v) if math.isfinite(float(v)) else None for v in values]


def _nan_array(values: Any) -> F64:
    return np.asarray([math.nan if v is None else float(v) for v in values], dtype=np.float64)


@dataclass(frozen=True, slots=True, eq=False)
class ReplicaBand:
    """The IDC(t) and inter-arrival ACF of a trace against a pointwise band of model replicas.

    Attributes
    ----------
    replicas : int
        Number of synthetic traces drawn.
    horizon_s : float
        Time span of the trace (first to last arrival); each replica covers ``(0, horizon_s]``.
    quantiles : tuple of float
        The band's lower, middle and upper quantile (default 0.025, 0.5, 0.975).
    windows_s : ndarray
        IDC window lengths t (seconds).
    idc_trace, idc_low, idc_median, idc_high : ndarray
        The trace's IDC(t) and the replicas' pointwise quantiles at each window.
    idc_inside : ndarray of bool
        Whether ``idc_low ≤ idc_trace ≤ idc_high`` (False where any of them is NaN).
    lags : ndarray of int
        ACF lags 1 … L.
    acf_trace, acf_low, acf_median, acf_high : ndarray
        The trace's inter-arrival ACF and the replicas' pointwise quantiles at each lag.
    acf_inside : ndarray of bool
        Whether the trace's ACF lies in the band at each lag.
    replica_size_median : float
        Median number of arrivals per replica (the trace has ``trace_size``).
    trace_size : int
        Arrivals in the trace.
    """

    replicas: int
    horizon_s: float
    quantiles: tuple[float, float, float]
    windows_s: F64
    idc_trace: F64
    idc_low: F64
    idc_median: F64
    idc_high: F64
    idc_inside: NDArray[np.bool_]
    lags: NDArray[np.int64]
    acf_trace: F64
    acf_low: F64
    acf_median: F64
    acf_high: F64
    acf_inside: NDArray[np.bool_]
    replica_size_median: float
    trace_size: int

    @property
    def idc_inside_fraction(self) -> float:
        """Share of the windows where the trace's IDC is inside the band (NaN without windows)."""
        n = self.idc_inside.shape[0]
        return float(self.idc_inside.sum()) / n if n else math.nan

    @property
    def acf_inside_fraction(self) -> float:
        """Share of the lags where the trace's ACF is inside the band (NaN without lags)."""
        n = self.acf_inside.shape[0]
        return float(self.acf_inside.sum()) / n if n else math.nan

    def to_dict(self) -> dict[str, Any]:
        """JSON types (NaN as None)."""
        return {
            "replicas": self.replicas,
            "horizon_s": self.horizon_s,
            "quantiles": list(self.quantiles),
            "trace_size": self.trace_size,
            "replica_size_median": self.replica_size_median,
            "idc": {
                "t_s": self.windows_s.tolist(),
                "trace": _nan_list(self.idc_trace),
                "low": _nan_list(self.idc_low),
                "median": _nan_list(self.idc_median),
                "high": _nan_list(self.idc_high),
                "inside": self.idc_inside.tolist(),
            },
            "acf": {
                "lag": self.lags.tolist(),
                "trace": _nan_list(self.acf_trace),
                "low": _nan_list(self.acf_low),
                "median": _nan_list(self.acf_median),
                "high": _nan_list(self.acf_high),
                "inside": self.acf_inside.tolist(),
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReplicaBand:
        """Rebuild a band from :meth:`to_dict`."""
        try:
            idc, acf = data["idc"], data["acf"]
            low, mid, high = (float(q) for q in data["quantiles"])
            return cls(
                replicas=int(data["replicas"]),
                horizon_s=float(data["horizon_s"]),
                quantiles=(low, mid, high),
                windows_s=np.asarray(idc["t_s"], dtype=np.float64),
                idc_trace=_nan_array(idc["trace"]),
                idc_low=_nan_array(idc["low"]),
                idc_median=_nan_array(idc["median"]),
                idc_high=_nan_array(idc["high"]),
                idc_inside=np.asarray(idc["inside"], dtype=np.bool_),
                lags=np.asarray(acf["lag"], dtype=np.int64),
                acf_trace=_nan_array(acf["trace"]),
                acf_low=_nan_array(acf["low"]),
                acf_median=_nan_array(acf["median"]),
                acf_high=_nan_array(acf["high"]),
                acf_inside=np.asarray(acf["inside"], dtype=np.bool_),
                replica_size_median=float(data["replica_size_median"]),
                trace_size=int(data["trace_size"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"not a replica band ({exc!r})") from exc


def _band(values: F64, quantiles: tuple[float, float, float]) -> tuple[F64, F64, F64]:
    """Pointwise quantiles over the rows of ``values`` (replicas × points), ignoring NaNs."""
    out = np.full((3, values.shape[1]), np.nan)
    for j in range(values.shape[1]):
        column = values[:, j]
        column = column[np.isfinite(column)]
        if column.size:
            out[:, j] = np.quantile(column, quantiles)
    return out[0], out[1], out[2]


def _inside(trace: F64, low: F64, high: F64) -> NDArray[np.bool_]:
    with np.errstate(invalid="ignore"):
        return np.asarray((low <= trace) & (trace <= high), dtype=np.bool_)


def replica_band(
    model: WorkloadModel | ArrivalModel,
    trace: pa.Table | ArrayLike,
    *,
    replicas: int = 20,
    windows_s: ArrayLike | None = None,
    idc_points: int = 30,
    lags: int = 50,
    quantiles: tuple[float, float, float] = (0.025, 0.5, 0.975),
    rng: SeedLike = 0,
) -> ReplicaBand:
    """IDC(t) and inter-arrival ACF of a trace against a pointwise band of model replicas.

    ``replicas`` synthetic arrival sequences are drawn from the fitted ``model`` over the trace's
    horizon (its first to last arrival); IDC(t) is computed on the same windows for the trace
    and every replica (consecutive complete windows from the start, as in
    :func:`gridtrace.stats.idc_curve`), the inter-arrival ACF at lags 1 … ``lags`` as in
    :func:`gridtrace.stats.interarrival_acf`, and the band is the pointwise ``quantiles`` of the
    replicas. A model that reproduces the trace's second-order structure keeps the trace's curve
    inside the band at most windows and lags; a Poisson model fitted to bursty arrivals leaves the
    trace's IDC far above its band at long windows.

    Parameters
    ----------
    model : WorkloadModel or ArrivalModel
        A fitted model. A :class:`~gridtrace.models.WorkloadModel` draws its merged streams with
        :meth:`~gridtrace.models.WorkloadModel.sample_arrivals` (replica i is the ``submit_s`` of
        ``model.sample(horizon_s=..., rng=children[i])``); an arrival model its own
        :meth:`~gridtrace.models.ArrivalModel.sample`.
    trace : pyarrow.Table or array_like
        A ``trace`` table (its ``submit_s``) or arrival times in seconds; sorted here.
    replicas : int, default 20
        Number of synthetic traces (≥ 2). With 20, the 2.5 % and 97.5 % quantiles lie close to
        the replicas' minimum and maximum: a cheap band that is enough to see a miss by a factor.
    windows_s : array_like, optional
        IDC windows in seconds; by default those of ``idc_curve(trace, points=idc_points)``,
        i.e. the report's grid (mean inter-arrival time to a tenth of the span).
    idc_points : int, default 30
        Points of the default window grid.
    lags : int, default 50
        Largest ACF lag L.
    quantiles : tuple of float, default (0.025, 0.5, 0.975)
        Lower, middle and upper quantile of the band.
    rng : int, SeedSequence, Generator or None, default 0
        Random source, split with :meth:`numpy.random.SeedSequence.spawn` into one child per
        replica: the same int seed gives the same band, and replica i does not depend on the
        number of replicas.

    Returns
    -------
    ReplicaBand
        The trace's curves, the band and the per-window and per-lag "inside" flags.

    Raises
    ------
    ConfigError
        If ``replicas`` < 2, ``lags`` < 1 or the quantiles are not increasing in [0, 1].
    FitError
        If the trace has fewer than two arrivals or spans zero time.
    """
    from gridtrace.models._workload import WorkloadModel

    if int(replicas) < 2:
        raise ConfigError(f"replicas must be >= 2, got {replicas}")
    if int(lags) < 1:
        raise ConfigError(f"lags must be >= 1, got {lags}")
    if len(quantiles) != 3:
        raise ConfigError(f"quantiles must be three values, got {quantiles}")
    q = (float(quantiles[0]), float(quantiles[1]), float(quantiles[2]))
    if not 0.0 <= q[0] < q[1] < q[2] <= 1.0:
        raise ConfigError(f"quantiles must be increasing values in [0, 1], got {quantiles}")
    if isinstance(trace, pa.Table):
        column = trace.column("submit_s").to_numpy(zero_copy_only=False)
        times = np.sort(np.asarray(column, dtype=np.float64))
    else:
        times = np.sort(np.asarray(trace, dtype=np.float64).ravel())
    if times.shape[0] < 2 or not times[-1] > times[0]:
        raise FitError("the trace needs at least two arrivals spanning a positive time")
    horizon = float(times[-1] - times[0])
    if windows_s is None:
        from gridtrace.stats import idc_curve  # pandas: imported only when the windows are drawn

        windows = np.asarray(
            idc_curve(times, points=idc_points).column("t_s").to_numpy(), dtype=np.float64
        )
    else:
        windows = np.asarray(windows_s, dtype=np.float64).ravel()
        if windows.size and not np.all(np.isfinite(windows) & (windows > 0)):
            raise ConfigError("windows_s must be positive and finite")
    n_lags = int(lags)
    seq = as_seed_sequence(rng)
    idc = np.full((int(replicas), windows.shape[0]), np.nan)
    acf = np.full((int(replicas), n_lags), np.nan)
    sizes = np.zeros(int(replicas))
    for i, child in enumerate(seq.spawn(int(replicas))):
        if isinstance(model, WorkloadModel):
            drawn = model.sample_arrivals(horizon_s=horizon, rng=child)
        else:
            drawn = model.sample(horizon_s=horizon, rng=np.random.default_rng(child))
        sizes[i] = drawn.shape[0]
        idc[i] = _idc_at(drawn, windows, horizon)
        acf[i] = _acf_at(drawn, n_lags)
    idc_trace = _idc_at(times - times[0], windows, horizon)
    acf_trace = _acf_at(times, n_lags)
    idc_low, idc_mid, idc_high = _band(idc, q)
    acf_low, acf_mid, acf_high = _band(acf, q)
    logger.debug(
        "replica band: %d replicas over %.6g s, IDC inside at %d/%d windows, ACF at %d/%d lags",
        replicas,
        horizon,
        int(_inside(idc_trace, idc_low, idc_high).sum()),
        windows.shape[0],
        int(_inside(acf_trace, acf_low, acf_high).sum()),
        n_lags,
    )
    return ReplicaBand(
        replicas=int(replicas),
        horizon_s=horizon,
        quantiles=q,
        windows_s=windows,
        idc_trace=idc_trace,
        idc_low=idc_low,
        idc_median=idc_mid,
        idc_high=idc_high,
        idc_inside=_inside(idc_trace, idc_low, idc_high),
        lags=np.arange(1, n_lags + 1, dtype=np.int64),
        acf_trace=acf_trace,
        acf_low=acf_low,
        acf_median=acf_mid,
        acf_high=acf_high,
        acf_inside=_inside(acf_trace, acf_low, acf_high),
        replica_size_median=float(np.median(sizes)),
        trace_size=int(times.shape[0]),
    )
