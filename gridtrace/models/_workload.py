"""The workload model: arrival streams, runtime models per class (and VO), the VO mix, cores.

:class:`WorkloadModel` composes the pieces of :mod:`gridtrace.models` into one estimator that is
fitted to a ``trace`` table and samples new ``trace`` tables from it.

How the class mix is preserved
------------------------------
A job is *interactive* when its runtime is at most τ (the trace's ``tau_s``). Two ways to
reproduce the interactive fraction f were considered:

1. fit one runtime model to every job and let the class follow from the sampled runtime — f is then
   whatever the fitted family puts below τ, which for a bimodal grid workload is far off (a
   lognormal fitted to LPC-EGEE-2004 misses f by several points);
2. **(used)** estimate f directly (the share of jobs with ``run_s <= tau_s``), fit one runtime
   model per class *truncated to the class range* — interactive on (0, τ], batch on (τ, ∞) —
   by maximising the truncated likelihood ``Σ log f(x) − n log P(class range)``, and sample a
   job's class first (Bernoulli f), then its runtime from its class model conditioned on the class
   range (inverse CDF of a uniform scaled into ``[0, F(τ)]`` or ``[F(τ), 1]``).

With (2) the sampled interactive fraction is Binomial(n, f)/n by construction, and each class keeps
its own shape. The ``interactive`` column of a sampled trace is still computed from the sampled
runtime (``run_s <= tau_s``), never drawn separately; the conditioning makes the two agree. A
plain (untruncated) fit to one class would be biased: an exponential fitted to the runtimes below
τ has a rate that is too high, so its truncated mean would fall short of the class mean — this is
why the fits maximise the truncated likelihood. The runtime density of a job is then
``f · g_I(x) / G_I(τ)`` below τ and ``(1 − f) · g_B(x) / (1 − G_B(τ))`` above.

Censoring: batch runtimes at or above a walltime limit that is itself above τ are right-censored
there (terms ``log S(c) − log S(τ)``). Interactive runtimes are not censored.

How the families are fitted to a class: the exponential in closed form (batch: the excess over τ
is exponential, by memorylessness; interactive: the rate whose truncated mean is the class mean,
held flat at μτ = 0.05 when the runtimes barely decrease); a hyperexponential H_k directly on the
class range (:class:`~gridtrace.models.HyperExponentialRuntime` with ``upper_s=τ`` or
``lower_s=τ``), so that its weights are shares of the class's jobs and its phase means lie in the
data's range; it is left out of the BIC choice when refused (a phase the data cannot hold), and the
choice falls to fewer phases. Lognormal, Weibull and gamma move from their plain fit to the
truncated maximum by Nelder–Mead.

Fit quality: every class's chosen model carries KS D (beside its sampling noise), A² and, for the
batch class, Lilliefors' exponential test of run − τ (``runtime_gof_``); every arrival stream the
Ljung-Box test of its inter-arrival times (``arrival_dependence_``), the evidence for an MMPP.

Random streams
--------------
``sample`` splits its seed with :meth:`numpy.random.SeedSequence.spawn` into four streams, in this
order: arrivals (one child per arrival stream), runtimes (class uniforms, then runtime uniforms),
vos, cores — so the same seed gives the same table, and changing e.g. the cores law leaves the
arrivals and runtimes bit-identical.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

import numpy as np
import pyarrow as pa
import scipy.optimize
import scipy.special
from numpy.typing import NDArray

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError, ConvergenceWarning, FitError, NotFittedError
from gridtrace.models._arrivals import ArrivalModel, PiecewisePoissonArrivals, PoissonArrivals
from gridtrace.models._mmpp import MMPPArrivals, PoissonHMMArrivals, select_mmpp
from gridtrace.models._quality import ljung_box, runtime_fit
from gridtrace.models._runtimes import (
    HK_FLAT_WIDTHS,
    EmpiricalRuntime,
    ExponentialRuntime,
    GammaRuntime,
    HyperExponentialRuntime,
    LogNormalRuntime,
    RuntimeModel,
    WeibullRuntime,
    runtime_model_from_dict,
)
from gridtrace.models._synth import _seed_record
from gridtrace.random import SeedLike, as_seed_sequence
from gridtrace.schema import TRACE, conform, trace_metadata, validate, with_trace_metadata

__all__ = ["RUNTIME_FAMILIES", "WorkloadModel", "arrival_model_from_dict"]

logger = library_logger(__name__)

F64 = NDArray[np.float64]
RUNTIME_FAMILIES = ("exponential", "hyperexponential", "lognormal", "weibull", "gamma", "empirical")
"""Runtime families a :class:`WorkloadModel` can choose from (``empirical`` has no BIC)."""
_DEFAULT_FAMILIES = ("exponential", "hyperexponential", "lognormal", "weibull", "gamma")
ARRIVAL_CHOICES = ("auto", "poisson", "mmpp")
STREAM_CHOICES = ("site", "class", "vo")
CLASSES = ("interactive", "batch")
_SAMPLE_STREAMS = ("arrivals", "runtimes", "vos", "cores")
_FORMAT_VERSION = 1

_ARRIVAL_KINDS: dict[str, type[ArrivalModel]] = {
    cls.kind: cls
    for cls in (PoissonArrivals, PiecewisePoissonArrivals, MMPPArrivals, PoissonHMMArrivals)
}


def arrival_model_from_dict(data: Mapping[str, Any]) -> ArrivalModel:
    """Rebuild any arrival model from its :meth:`ArrivalModel.to_dict` output.

    Parameters
    ----------
    data : mapping
        The dict written by ``to_dict``.

    Returns
    -------
    ArrivalModel
        The model of the recorded ``kind``.
    """
    try:
        cls = _ARRIVAL_KINDS[str(data["kind"])]
    except KeyError:
        raise ConfigError(f"unknown arrival model kind {data.get('kind')!r}") from None
    return cls.from_dict(data)


def _dependence(times: F64) -> dict[str, Any]:
    """Test a stream's inter-arrival times for independence (Ljung-Box), or say why not."""
    try:
        return ljung_box(times).to_dict()
    except FitError as exc:
        return {"unavailable": str(exc)}


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _none_to_nan(value: Any) -> float:
    return math.nan if value is None else float(value)


# --- truncated runtime fits ----------------------------------------------------------------------

FLAT_RATE_TAU = 1.0 / HK_FLAT_WIDTHS
"""The least μτ of an exponential on the interactive class (0, τ], as for a hyperexponential's
phases (:data:`~gridtrace.models._runtimes.HK_FLAT_WIDTHS`): when the runtimes barely decrease
the likelihood rises towards μ = 0 (the uniform law), which no positive rate attains; held at
μτ = 0.05 the density varies by 5 % over the class range, and the model is flagged flat."""


def _theta(model: RuntimeModel) -> F64:
    """Free parameters of a fitted two-parameter runtime model, unconstrained."""
    if isinstance(model, LogNormalRuntime | WeibullRuntime | GammaRuntime):
        return np.asarray([math.log(model.shape_), math.log(model.scale_)])
    raise FitError(f"{type(model).__name__} has no truncated fit by search")


def _set_theta(model: RuntimeModel, theta: F64) -> None:
    if isinstance(model, LogNormalRuntime | WeibullRuntime | GammaRuntime):
        model.shape_ = float(math.exp(theta[0]))
        model.scale_ = float(math.exp(theta[1]))


def _cdf_below(model: RuntimeModel, x: F64) -> F64:
    """CDF without cancellation where it is small (a rate → 0 limit makes ``1 − S`` useless)."""
    if isinstance(model, HyperExponentialRuntime):
        return model.cdf(x)
    if isinstance(model, ExponentialRuntime):
        return np.asarray(-np.expm1(-model.rate_ * x), dtype=np.float64)
    if isinstance(model, LogNormalRuntime | WeibullRuntime | GammaRuntime):
        return np.asarray(model._frozen().cdf(x), dtype=np.float64)
    return np.asarray(-np.expm1(model.logsf(x)), dtype=np.float64)


def _class_log_mass(model: RuntimeModel, job_class: str, tau_s: float) -> float:
    """``log P(class range)`` under ``model``: ``log G(τ)`` or ``log(1 − G(τ))``.

    0 for a hyperexponential fitted on the class range itself (its law is the class's).
    """
    if job_class == "batch":
        return float(np.asarray(model.logsf(np.asarray([tau_s])))[0])
    below = float(_cdf_below(model, np.asarray([tau_s]))[0])
    return math.log(below) if below > 0.0 else -math.inf


def _class_cdf(model: RuntimeModel, job_class: str, tau_s: float) -> Callable[[F64], F64]:
    """Return the CDF of a class's runtimes: the model conditioned on the class range."""
    if job_class == "interactive":
        mass = float(_cdf_below(model, np.asarray([tau_s]))[0])

        def below(x: F64) -> F64:
            return np.asarray(np.clip(_cdf_below(model, x) / mass, 0.0, 1.0), dtype=np.float64)

        return below
    log_mass = _class_log_mass(model, job_class, tau_s)

    def above(x: F64) -> F64:
        with np.errstate(over="ignore"):
            tail = np.minimum(np.asarray(model.logsf(x), dtype=np.float64) - log_mass, 0.0)
        return np.asarray(np.where(x <= tau_s, 0.0, -np.expm1(tail)), dtype=np.float64)

    return above


def _truncated_loglik(
    model: RuntimeModel, x: F64, censored: NDArray[np.bool_], job_class: str, tau_s: float
) -> float:
    mass = _class_log_mass(model, job_class, tau_s)
    if not math.isfinite(mass):
        return -math.inf
    with np.errstate(all="ignore"):
        total = float(np.sum(model.logpdf(x[~censored])))
        if censored.any():
            total += float(np.sum(model.logsf(x[censored])))
    value = total - x.shape[0] * mass
    return value if math.isfinite(value) else -math.inf


def _fit_truncated(
    model: RuntimeModel, x: F64, censored: NDArray[np.bool_], job_class: str, tau_s: float
) -> float:
    """Move a plain two-parameter fit to the maximum of the truncated likelihood (Nelder–Mead)."""
    start = _theta(model)

    def objective(theta: F64) -> float:
        if np.any(np.abs(theta) > 700):
            return math.inf
        _set_theta(model, theta)
        ll = _truncated_loglik(model, x, censored, job_class, tau_s)
        return -ll if math.isfinite(ll) else math.inf

    f0 = objective(start)
    result = scipy.optimize.minimize(
        objective,
        start,
        method="Nelder-Mead",
        options={"maxiter": 400 * start.shape[0], "xatol": 1e-7, "fatol": 1e-9, "adaptive": True},
    )
    best = result.x if float(result.fun) <= f0 else start
    _set_theta(model, np.asarray(best, dtype=np.float64))
    ll = _truncated_loglik(model, x, censored, job_class, tau_s)
    model.log_likelihood_ = ll
    if not result.success:
        raise _NotConverged(f"truncated fit: {result.message}")
    return ll


class _NotConverged(Exception):
    """Internal: a truncated fit stopped at its iteration cap (reported as a note)."""


def _truncated_exponential_mean(a: float) -> float:
    """Mean of Exp(μ) truncated to (0, τ], in units of τ, at a = μτ > 0: 1/a − 1/(e^a − 1)."""
    return 1.0 / a - math.exp(-a) / -math.expm1(-a)


def _fit_class_exponential(
    run_s: F64, censor_s: F64 | None, job_class: str, tau_s: float, floor_s: float | None
) -> tuple[ExponentialRuntime, float, str | None]:
    """Fit the exponential to a class range: the truncated likelihood's maximum, in closed form.

    Batch (τ, ∞): memoryless, the excess over τ is exponential: μ = (uncensored jobs) / Σ (x − τ).
    Interactive (0, τ]: μ solves "mean of the truncated exponential = mean runtime", which has a
    root only when the runtimes decrease on average (mean < τ/2); μ is held at least at
    :data:`FLAT_RATE_TAU` / τ, where it is flat on the class range, and a note says so.

    Returns
    -------
    model, log-likelihood, note
    """
    model = ExponentialRuntime(floor_s=floor_s)
    x, censored, floored = model._prepare(run_s, censor_s)
    note = None
    if job_class == "batch":
        excess = float(np.sum(x - tau_s))
        if not excess > 0:
            raise FitError("every batch runtime is at τ")
        rate = float((~censored).sum()) / excess
    else:
        mean = float(x.mean()) / tau_s
        a_min = FLAT_RATE_TAU
        if mean >= _truncated_exponential_mean(a_min):
            rate = a_min / tau_s
            note = (
                f"interactive exponential: the runtimes barely decrease on (0, {tau_s:g} s] "
                f"(mean {mean * tau_s:.4g} s, τ/2 for a flat law): the rate is held at its "
                f"bound {rate:.3g}/s, flat on the class range"
            )
        else:
            a = scipy.optimize.brentq(
                lambda v: _truncated_exponential_mean(v) - mean, a_min, 2.0 / mean + 10.0
            )
            rate = float(a) / tau_s
    model.rate_ = rate
    model.n_samples_ = int(x.shape[0])
    model.n_censored_ = int(censored.sum())
    model.n_floored_ = floored
    ll = _truncated_loglik(model, x, censored, job_class, tau_s)
    model.log_likelihood_ = ll
    return model, ll, note


def _make_family(family: str, k: int, floor_s: float | None) -> RuntimeModel:
    if family == "exponential":
        return ExponentialRuntime(floor_s=floor_s)
    if family == "lognormal":
        return LogNormalRuntime(floor_s=floor_s)
    if family == "weibull":
        return WeibullRuntime(floor_s=floor_s)
    if family == "gamma":
        return GammaRuntime(floor_s=floor_s)
    return EmpiricalRuntime(floor_s=floor_s)


def _class_hk(
    k: int, job_class: str, tau_s: float, floor_s: float | None, rng: int | None
) -> HyperExponentialRuntime:
    """Make an H_k on the class range: (0, τ] for interactive jobs, (τ, ∞) for batch ones."""
    if job_class == "interactive":
        return HyperExponentialRuntime(k, upper_s=tau_s, floor_s=floor_s, rng=rng)
    return HyperExponentialRuntime(k, lower_s=tau_s, floor_s=floor_s, rng=rng)


def _on_class_range(model: HyperExponentialRuntime, job_class: str, tau_s: float) -> bool:
    """Whether an H_k was fitted on the class range itself (its weights are the class's)."""
    if job_class == "interactive":
        return model.upper_s is not None and float(model.upper_s) == tau_s
    return float(model.lower_s) == tau_s and model.upper_s is None


@dataclass(slots=True)
class _RuntimeChoice:
    model: RuntimeModel
    label: str
    bic: dict[str, float | None]
    notes: list[str]
    excluded: dict[str, str]
    gof: dict[str, Any] | None = None


def _class_phase_weights(model: HyperExponentialRuntime, job_class: str, tau_s: float) -> F64:
    """Weights of the phases of an H_k *on a class range*: ``w_j P_j(range) / Σ_i w_i P_i(range)``.

    These are the weights of the law actually sampled and scored for the class (interactive:
    (0, τ], batch: (τ, ∞)). An H_k fitted on the class range has them as its weights; one fitted
    on (0, ∞) (models written before the bounded fit) is converted.
    """
    if _on_class_range(model, job_class, tau_s):
        return np.asarray(model.weights_, dtype=np.float64)
    rates = model.rates_
    with np.errstate(divide="ignore"):
        if job_class == "interactive":
            log_mass = np.log(-np.expm1(-rates * tau_s))
        else:
            log_mass = -rates * tau_s
        log_w = np.log(model.weights_) + log_mass
    top = float(np.max(log_w))
    w = np.exp(log_w - top)
    return np.asarray(w / w.sum(), dtype=np.float64)


def _class_phase_means(model: HyperExponentialRuntime, job_class: str, tau_s: float) -> F64:
    """Mean runtime of each H_k phase on the class range (s)."""
    if _on_class_range(model, job_class, tau_s):
        return model.phase_means_s_
    mu = model.rates_
    if job_class == "batch":
        return np.asarray(tau_s + 1.0 / mu, dtype=np.float64)
    a = mu * tau_s
    return np.asarray(tau_s * (1.0 / a - np.exp(-a) / -np.expm1(-a)), dtype=np.float64)


def _exponential_class_mean(model: ExponentialRuntime, job_class: str, tau_s: float) -> float:
    """Mean runtime of the exponential on the class range (s)."""
    if job_class == "batch":
        return tau_s + 1.0 / model.rate_
    return tau_s * _truncated_exponential_mean(model.rate_ * tau_s)


def _select_runtime(
    run_s: F64,
    censor_s: F64 | None,
    job_class: str,
    tau_s: float,
    families: Sequence[str],
    k_max: int,
    floor_s: float | None,
    rng: int | None = 0,
) -> _RuntimeChoice:
    """Fit every candidate family to one class (truncated likelihood) and pick the lowest BIC.

    A hyperexponential H_k is fitted on the class range itself; when it is refused (a phase the
    data cannot hold: ``HyperExponentialRuntime.refused_``) it stays in the BIC table but is left
    out of the choice, which so falls to fewer phases; when every H_k is refused and the
    exponential (H_1) was not a candidate, it is fitted and used.
    """
    n = int(run_s.shape[0])
    notes: list[str] = []
    bic: dict[str, float | None] = {}
    fitted: dict[str, tuple[RuntimeModel, bool]] = {}
    excluded: dict[str, str] = {}
    candidates: list[tuple[str, str, int]] = []
    for family in families:
        if family == "hyperexponential":
            candidates.extend((f"hyperexponential(k={k})", family, k) for k in range(2, k_max + 1))
        elif family != "empirical":
            candidates.append((family, family, 1))

    def eligible() -> dict[str, float]:
        return {k: v for k, v in bic.items() if v is not None and k not in excluded}

    def fit_exponential(label: str) -> None:
        model, ll, note = _fit_class_exponential(run_s, censor_s, job_class, tau_s, floor_s)
        if note:
            notes.append(note)
        bic[label] = -2.0 * ll + model.n_parameters * math.log(n) if math.isfinite(ll) else None
        fitted[label] = (model, True)

    for label, family, k in candidates:
        converged = True
        model: RuntimeModel
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                if family == "exponential":
                    fit_exponential(label)
                    continue
                if family == "hyperexponential":
                    model = _class_hk(k, job_class, tau_s, floor_s, rng)
                    model.fit(run_s, censor_s=censor_s)
                    ll = float(model.log_likelihood_)
                else:
                    model = _make_family(family, k, floor_s)
                    model.fit(run_s, censor_s=censor_s)
                    x, censored, _ = model._prepare(run_s, censor_s)
                    try:
                        ll = _fit_truncated(model, x, censored, job_class, tau_s)
                    except _NotConverged as exc:
                        converged = False
                        ll = float(model.log_likelihood_)
                        notes.append(f"{job_class} {label}: {exc}")
            except (FitError, ValueError, FloatingPointError, np.linalg.LinAlgError) as exc:
                notes.append(f"{job_class} {label}: fit failed ({exc})")
                bic[label] = None
                continue
        for w in caught:
            converged = converged and not issubclass(w.category, ConvergenceWarning)
            notes.append(f"{job_class} {label}: {w.category.__name__}: {w.message}")
        if not math.isfinite(ll):
            notes.append(f"{job_class} {label}: no finite truncated likelihood")
            bic[label] = None
            continue
        bic[label] = -2.0 * ll + model.n_parameters * math.log(n)
        fitted[label] = (model, converged)
        if isinstance(model, HyperExponentialRuntime) and model.refused_:
            excluded[label] = f"refused: {model.refused_}"
            notes.append(
                f"{job_class} {label}: refused, left out of the BIC choice ({model.refused_})"
            )
    if not eligible() and excluded and "exponential" not in families:
        # every H_k refused: drop to H_1, the exponential
        notes.append(f"{job_class}: every hyperexponential refused; using H1 (exponential)")
        fit_exponential("exponential")
    usable = eligible()
    if not usable:
        if "empirical" not in families:
            raise FitError(
                f"no runtime family could be fitted to the {n} {job_class} jobs: "
                + "; ".join(notes)
            )
        model = EmpiricalRuntime(floor_s=floor_s).fit(run_s)
        bic["empirical"] = None
        return _RuntimeChoice(model, "empirical", bic, notes, excluded)
    label = min(usable, key=lambda key: usable[key])
    model, converged = fitted[label]
    if not converged:
        warnings.warn(
            f"the selected {job_class} runtime model {label} did not converge; see fit_notes_",
            ConvergenceWarning,
            stacklevel=4,
        )
    choice = _RuntimeChoice(model, label, bic, notes, excluded)
    choice.gof = _class_gof(model, run_s, censor_s, job_class, tau_s, notes)
    return choice


def _class_gof(
    model: RuntimeModel,
    run_s: F64,
    censor_s: F64 | None,
    job_class: str,
    tau_s: float,
    notes: list[str],
) -> dict[str, Any] | None:
    """Goodness of fit of a class's chosen model on the class's runtimes (as fitted)."""
    try:
        x, censored, _ = model._prepare(run_s, censor_s)
        fit = runtime_fit(
            x,
            _class_cdf(model, job_class, tau_s),
            censored=censored,
            exponential_from=tau_s if job_class == "batch" else None,
        )
    except (FitError, ValueError) as exc:
        notes.append(f"{job_class}: no goodness of fit ({exc})")
        return None
    return fit.to_dict()


def _sample_runtimes(model: RuntimeModel, u: F64, job_class: str, tau_s: float) -> F64:
    """Inverse-CDF draws conditioned on the class range (u uniform in [0, 1))."""
    if u.shape[0] == 0:
        return np.zeros(0)
    f_tau = float(_cdf_below(model, np.asarray([tau_s]))[0])
    if job_class == "interactive":
        target = u * f_tau
        if isinstance(model, HyperExponentialRuntime):  # bisection on the cancellation-free CDF
            lo, hi = np.zeros_like(u), np.full_like(u, tau_s)
            for _ in range(64):
                mid = 0.5 * (lo + hi)
                below = _cdf_below(model, mid) < target
                lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
            x = 0.5 * (lo + hi)
        else:
            x = model.ppf(target)
        return np.asarray(np.clip(x, 0.0, tau_s), dtype=np.float64)
    x = model.ppf(f_tau + u * (1.0 - f_tau))
    return np.asarray(np.maximum(x, np.nextafter(tau_s, math.inf)), dtype=np.float64)


# --- arrival streams -----------------------------------------------------------------------------


@dataclass(slots=True)
class _Stream:
    """One arrival stream: its model, the VO law of its jobs and, for class streams, the class."""

    name: str
    model: ArrivalModel
    vo_names: list[str | None]
    vo_probs: F64
    job_class: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model": self.model.to_dict(),
            "vo_names": list(self.vo_names),
            "vo_probs": self.vo_probs.tolist(),
            "job_class": self.job_class,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> _Stream:
        return cls(
            name=str(data["name"]),
            model=arrival_model_from_dict(data["model"]),
            vo_names=[None if v is None else str(v) for v in data["vo_names"]],
            vo_probs=np.asarray(data["vo_probs"], dtype=np.float64),
            job_class=None if data["job_class"] is None else str(data["job_class"]),
        )


def _categorical(values: Sequence[str | None]) -> tuple[list[str | None], F64, list[int]]:
    """Distinct values in order of first appearance, their shares and counts."""
    counts: dict[str | None, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    names = list(counts)
    total = sum(counts.values())
    return names, np.asarray([counts[v] / total for v in names]), [counts[v] for v in names]


def _column(trace: pa.Table, name: str) -> list[Any]:
    return list(trace.column(name).to_pylist())


def _floats(trace: pa.Table, name: str) -> F64:
    column = trace.column(name).cast(pa.float64())
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)


# --- the model -----------------------------------------------------------------------------------


class WorkloadModel:
    """A fitted generative model of a site's workload: arrivals, runtimes, VOs, cores.

    Parameters
    ----------
    arrivals : {"auto", "poisson", "mmpp"}, default "auto"
        Arrival model of every stream. ``"poisson"``: homogeneous Poisson. ``"mmpp"``: an MMPP
        fitted by exact EM (:class:`MMPPArrivals`, fitted α) with k ∈ {2 … ``k_max``} chosen by
        BIC. ``"auto"``: k ∈ {1 … ``k_max``} by BIC, k = 1 being Poisson.
    k_max : int, default 3
        Largest number of MMPP phases tried.
    streams : {"site", "class", "vo"}, default "site"
        ``"site"``: one arrival stream for the whole site; each job then draws its VO from the
        site's VO mix and its class from the interactive fraction. ``"class"``: one stream per
        class (interactive, batch), each with its own VO mix; the class is the stream's.
        ``"vo"``: one stream per VO with at least ``min_vo_jobs`` jobs, plus one stream ``"other"``
        pooling the rest (with their VO mix). Streams are sampled independently and merged.
    per_vo : bool, default False
        Also fit the interactive fraction and the runtime models per VO (for VOs with at least
        ``min_vo_jobs`` jobs in the class); other VOs use the class models.
    runtime_families : sequence of str, default all but "empirical"
        Candidate families (see :data:`RUNTIME_FAMILIES`); the lowest BIC of the truncated
        likelihood wins. ``"hyperexponential"`` adds H_2 … H_{runtime_k_max} (H_1 is
        ``"exponential"``). ``"empirical"`` has no likelihood: it is used only when no other
        family was asked for or could be fitted.
    runtime_k_max : int, default 3
        Largest hyperexponential order.
    min_vo_jobs : int, default 100
        Smallest number of jobs for a per-VO stream or per-VO runtime model.
    censor : bool, default True
        Treat batch runtimes at or above their walltime request (when it exceeds τ) as censored.
    floor_s : float or None, default 1.0
        Runtimes below it are raised to it before fitting (logs hold 0-s runtimes; every family
        sees the same data so the BICs compare). Counted in ``n_floored_`` of each runtime model.
    name : str, optional
        Workload name (default: the fitted trace's ``site``); sampled traces are ``"<name>-synth"``.
    mmpp_max_iter : int, default 1000
        EM iteration cap of every MMPP fit; the direct maximisation after EM then finishes the
        fit. An MMPP that ends short of a maximum (scaled gradient norm above its ``grad_tol``)
        is a note, and a :class:`~gridtrace.errors.ConvergenceWarning` when it is the one
        selected.
    rng : int or None, default 0
        Seed of the randomised MMPP EM starts and hyperexponential starts (fitting is
        deterministic for an int).

    Attributes
    ----------
    name_ : str
        The workload name.
    tau_s_ : float
        τ of the fitted trace (its metadata).
    cores_ : int
        P of the fitted trace.
    n_fit_jobs_ : int
        Jobs in the fitted trace.
    span_s_ : float
        Time from its first to its last submission.
    streams_ : list
        The arrival streams (name, fitted arrival model, VO law, class).
    vo_names_, vo_probs_ : list, ndarray
        The site's VO mix (categorical; ``None`` is a job without VO).
    interactive_fraction_ : float
        f = share of jobs with ``run_s <= tau_s``.
    interactive_fraction_vo_ : dict
        f per VO (``per_vo`` only).
    runtime_models_ : dict of str to RuntimeModel
        Class → model (truncated to the class range at sampling and scoring).
    runtime_labels_ : dict of str to str
        Class → chosen family label, e.g. ``"hyperexponential(k=2)"``.
    runtime_models_vo_ : dict
        (VO, class) → model (``per_vo`` only).
    cores_values_, cores_probs_ : ndarray
        Empirical law of cores per job.
    bic_table_ : dict
        ``{"arrivals": {stream: {candidate: BIC}}, "runtimes": {class or "vo/class":
        {family: BIC}}}`` (None where a candidate failed).
    arrival_choice_ : dict of str to str
        Stream → chosen arrival model label (``"poisson"`` or ``"mmpp(k=2)"``, ...).
    runtime_excluded_ : dict
        ``{class or "vo/class": {candidate: reason}}``: candidates left out of the BIC choice,
        i.e. hyperexponentials refused on the class range (a phase expected to hold fewer than
        ten jobs, two phases with the same rate there, or a phase whose mean is pinned at a
        bound of the data's range: see :attr:`HyperExponentialRuntime.refused_`). Their BIC
        stays in ``bic_table_``.
    runtime_gof_ : dict
        ``{class or "vo/class": RuntimeFit.to_dict()}``: how far the chosen model's CDF is from
        the class's runtimes (KS D beside its sampling noise, A², and for the batch class
        Lilliefors' exponential test of run − τ; see ``gridtrace.models._quality.runtime_fit``).
    arrival_dependence_ : dict
        ``{stream: LjungBox.to_dict()}``: the Ljung-Box test that the stream's inter-arrival
        times are independent (a rejection is the evidence for an MMPP over Poisson), or
        ``{"unavailable": reason}`` for a stream too short to test.
    fit_notes_ : list of str
        Warnings and failures of the candidate fits (nothing is dropped silently).

    Examples
    --------
    >>> from gridtrace.models import generate_preset_trace
    >>> trace = generate_preset_trace("PE-1", rng=0, size=2000)
    >>> m = WorkloadModel(arrivals="poisson", runtime_families=["exponential"]).fit(trace)
    >>> m.sample(500, rng=1).num_rows
    500
    """

    def __init__(
        self,
        *,
        arrivals: str = "auto",
        k_max: int = 3,
        streams: str = "site",
        per_vo: bool = False,
        runtime_families: Sequence[str] = _DEFAULT_FAMILIES,
        runtime_k_max: int = 3,
        min_vo_jobs: int = 100,
        censor: bool = True,
        floor_s: float | None = 1.0,
        name: str | None = None,
        mmpp_max_iter: int = 1000,
        rng: int | None = 0,
    ) -> None:
        self.arrivals = arrivals
        self.k_max = k_max
        self.streams = streams
        self.per_vo = per_vo
        self.runtime_families = runtime_families
        self.runtime_k_max = runtime_k_max
        self.min_vo_jobs = min_vo_jobs
        self.censor = censor
        self.floor_s = floor_s
        self.name = name
        self.mmpp_max_iter = mmpp_max_iter
        self.rng = rng

    # --- parameters ------------------------------------------------------------------------------

    def _params(self) -> dict[str, Any]:
        return {
            "arrivals": self.arrivals,
            "k_max": self.k_max,
            "streams": self.streams,
            "per_vo": self.per_vo,
            "runtime_families": list(self.runtime_families),
            "runtime_k_max": self.runtime_k_max,
            "min_vo_jobs": self.min_vo_jobs,
            "censor": self.censor,
            "floor_s": self.floor_s,
            "name": self.name,
            "mmpp_max_iter": self.mmpp_max_iter,
            "rng": self.rng,
        }

    def _check_params(self) -> None:
        if self.arrivals not in ARRIVAL_CHOICES:
            raise ConfigError(
                f"arrivals must be one of {', '.join(ARRIVAL_CHOICES)}, got {self.arrivals!r}"
            )
        if self.streams not in STREAM_CHOICES:
            raise ConfigError(
                f"streams must be one of {', '.join(STREAM_CHOICES)}, got {self.streams!r}"
            )
        if int(self.k_max) < (2 if self.arrivals == "mmpp" else 1):
            raise ConfigError(f"k_max must be >= 2 for MMPP arrivals, got {self.k_max}")
        unknown = set(self.runtime_families) - set(RUNTIME_FAMILIES)
        if unknown or not self.runtime_families:
            raise ConfigError(
                f"runtime_families must be a non-empty subset of {', '.join(RUNTIME_FAMILIES)}; "
                f"unknown: {', '.join(sorted(unknown)) or 'none'}"
            )
        if int(self.runtime_k_max) < 2 and "hyperexponential" in self.runtime_families:
            raise ConfigError(f"runtime_k_max must be >= 2, got {self.runtime_k_max}")
        if int(self.min_vo_jobs) < 2:
            raise ConfigError(f"min_vo_jobs must be >= 2, got {self.min_vo_jobs}")

    # --- fit -------------------------------------------------------------------------------------

    def fit(self, trace: pa.Table) -> Self:
        """Fit every component to a ``trace`` table.

        Parameters
        ----------
        trace : pyarrow.Table
            A ``trace`` table with its metadata (τ and P are read from it).

        Returns
        -------
        self

        Raises
        ------
        FitError
            If the trace is too small for a component (e.g. a class with fewer than 2 jobs or a
            stream with fewer than 3 distinct submission times).
        """
        self._check_params()
        validate(trace, "trace")
        meta = trace_metadata(trace)
        tau = float(meta["tau_s"])
        if trace.num_rows < 3:
            raise FitError(f"need at least 3 jobs to fit a workload model, got {trace.num_rows}")
        submit = _floats(trace, "submit_s")
        run = _floats(trace, "run_s")
        vo = _column(trace, "vo")
        interactive = run <= tau
        notes: list[str] = []
        self.name_ = str(self.name or meta["site"])
        self.tau_s_ = tau
        self.cores_ = int(meta["cores"])
        self.n_fit_jobs_ = int(trace.num_rows)
        self.span_s_ = float(submit.max() - submit.min())
        self.vo_names_, self.vo_probs_, vo_counts = _categorical(vo)
        self.interactive_fraction_ = float(interactive.mean())
        cores_values, cores_counts = np.unique(
            trace.column("cores").to_numpy(zero_copy_only=False), return_counts=True
        )
        self.cores_values_ = cores_values.astype(np.int64)
        self.cores_probs_ = cores_counts / cores_counts.sum()

        # arrivals
        order = np.argsort(submit, kind="stable")
        arrival_bic: dict[str, dict[str, float | None]] = {}
        self.arrival_choice_: dict[str, str] = {}
        self.arrival_dependence_: dict[str, dict[str, Any]] = {}
        self.streams_: list[_Stream] = []
        for stream_name, mask, job_class in self._stream_masks(vo, interactive, vo_counts):
            idx = order[mask[order]]
            names, probs, _ = _categorical([vo[i] for i in idx])
            model, label, table = self._fit_arrivals(submit[idx], stream_name, notes)
            arrival_bic[stream_name] = table
            self.arrival_choice_[stream_name] = label
            self.streams_.append(_Stream(stream_name, model, names, probs, job_class))
            self.arrival_dependence_[stream_name] = _dependence(submit[idx])

        # runtimes
        walltime = _floats(trace, "walltime_req_s")
        runtime_bic: dict[str, dict[str, float | None]] = {}
        self.runtime_excluded_: dict[str, dict[str, str]] = {}
        self.runtime_gof_: dict[str, dict[str, Any]] = {}
        self.runtime_models_: dict[str, RuntimeModel] = {}
        self.runtime_labels_: dict[str, str] = {}
        for job_class in CLASSES:
            mask = interactive if job_class == "interactive" else ~interactive
            if not mask.any():
                continue
            choice = self._fit_class(run[mask], walltime[mask], job_class, notes)
            self.runtime_models_[job_class] = choice.model
            self.runtime_labels_[job_class] = choice.label
            runtime_bic[job_class] = choice.bic
            if choice.excluded:
                self.runtime_excluded_[job_class] = choice.excluded
            if choice.gof is not None:
                self.runtime_gof_[job_class] = choice.gof
        self.interactive_fraction_vo_: dict[str | None, float] = {}
        self.runtime_models_vo_: dict[tuple[str | None, str], RuntimeModel] = {}
        self.runtime_labels_vo_: dict[tuple[str | None, str], str] = {}
        if self.per_vo:
            vo_arr = np.asarray(vo, dtype=object)
            for name, count in zip(self.vo_names_, vo_counts, strict=True):
                if name is None or count < int(self.min_vo_jobs):
                    continue
                in_vo = vo_arr == name
                self.interactive_fraction_vo_[name] = float(interactive[in_vo].mean())
                for job_class in CLASSES:
                    cls_mask = in_vo & (interactive if job_class == "interactive" else ~interactive)
                    if int(cls_mask.sum()) < int(self.min_vo_jobs):
                        continue
                    choice = self._fit_class(run[cls_mask], walltime[cls_mask], job_class, notes)
                    self.runtime_models_vo_[(name, job_class)] = choice.model
                    self.runtime_labels_vo_[(name, job_class)] = choice.label
                    runtime_bic[f"{name}/{job_class}"] = choice.bic
                    if choice.excluded:
                        self.runtime_excluded_[f"{name}/{job_class}"] = choice.excluded
                    if choice.gof is not None:
                        self.runtime_gof_[f"{name}/{job_class}"] = choice.gof
        self.bic_table_ = {"arrivals": arrival_bic, "runtimes": runtime_bic}
        self.fit_notes_ = notes
        for note in notes:
            logger.info("fit note: %s", note)
        return self

    def _stream_masks(
        self, vo: list[str | None], interactive: NDArray[np.bool_], vo_counts: list[int]
    ) -> list[tuple[str, NDArray[np.bool_], str | None]]:
        n = len(vo)
        if self.streams == "site":
            return [("site", np.ones(n, dtype=bool), None)]
        if self.streams == "class":
            return [(c, interactive if c == "interactive" else ~interactive, c) for c in CLASSES]
        vo_arr = np.asarray(vo, dtype=object)
        out: list[tuple[str, NDArray[np.bool_], str | None]] = []
        rest = np.ones(n, dtype=bool)
        for name, count in zip(self.vo_names_, vo_counts, strict=True):
            if name is not None and count >= int(self.min_vo_jobs):
                mask = vo_arr == name
                rest &= ~mask
                out.append((f"vo:{name}", mask, None))
        if rest.any():
            out.append(("other", rest, None))
        return out

    def _fit_arrivals(
        self, times: F64, stream: str, notes: list[str]
    ) -> tuple[ArrivalModel, str, dict[str, float | None]]:
        if np.unique(times).shape[0] < 3:
            raise FitError(
                f"arrival stream {stream!r} has fewer than 3 distinct submission times; "
                "use streams='site' or a larger min_vo_jobs"
            )
        poisson = PoissonArrivals().fit(times)
        n_int = poisson.n_intervals_
        poisson_bic = -2.0 * poisson.log_likelihood_ + math.log(n_int)
        if self.arrivals == "poisson":
            return poisson, "poisson", {"poisson": poisson_bic}
        k_max = int(self.k_max)
        # the EM needs 2k² intervals: do not try more phases than the stream supports
        while k_max > 1 and n_int < 2 * k_max * k_max:
            k_max -= 1
        if k_max < 2 and self.arrivals == "mmpp":
            raise FitError(f"arrival stream {stream!r}: {n_int} intervals are too few for an MMPP")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            selection = select_mmpp(times, k_max, rng=self.rng, max_iter=int(self.mmpp_max_iter))
        unconverged = {k for k, m in selection.models.items() if not m.converged_}
        for w in caught:
            notes.append(f"arrivals {stream}: {w.category.__name__}: {w.message}")
        table: dict[str, float | None] = {"poisson": poisson_bic}
        table.update({f"mmpp(k={k})": _finite_or_none(v) for k, v in selection.bic.items()})
        ks = [k for k in selection.bic if k >= (2 if self.arrivals == "mmpp" else 1)]
        best = min(ks, key=lambda k: selection.bic[k])
        if best == 1:
            return poisson, "poisson", table
        if best in unconverged:
            warnings.warn(
                f"the selected MMPP(k={best}) of stream {stream!r} did not reach a maximum "
                "(scaled gradient norm above its grad_tol)",
                ConvergenceWarning,
                stacklevel=3,
            )
        return selection.models[best], f"mmpp(k={best})", table

    def _fit_class(
        self, run: F64, walltime: F64, job_class: str, notes: list[str]
    ) -> _RuntimeChoice:
        if run.shape[0] < 2:
            raise FitError(f"only {run.shape[0]} {job_class} job(s): too few to fit a runtime")
        censor: F64 | None = None
        if self.censor and job_class == "batch":
            limit = np.where(walltime > self.tau_s_, walltime, np.inf)
            censor = np.where(np.isfinite(limit), limit, np.inf)
            if not np.any(run >= censor):
                censor = None
        choice = _select_runtime(
            run,
            censor,
            job_class,
            self.tau_s_,
            list(self.runtime_families),
            int(self.runtime_k_max),
            self.floor_s,
            self.rng,
        )
        notes.extend(choice.notes)
        return choice

    # --- checks ----------------------------------------------------------------------------------

    def _check_fitted(self) -> None:
        if not hasattr(self, "streams_"):
            raise NotFittedError("WorkloadModel is not fitted; call fit first")

    def _runtime_model(self, vo: str | None, job_class: str) -> RuntimeModel:
        return self.runtime_models_vo_.get((vo, job_class), self.runtime_models_[job_class])

    def _fraction(self, vo: str | None) -> float:
        return self.interactive_fraction_vo_.get(vo, self.interactive_fraction_)

    # --- sample ----------------------------------------------------------------------------------

    def sample(
        self,
        size: int | None = None,
        *,
        horizon_s: float | None = None,
        rng: SeedLike,
        provenance: Mapping[str, Any] | None = None,
    ) -> pa.Table:
        """Draw a synthetic ``trace`` table.

        Parameters
        ----------
        size : int, optional
            Number of jobs (the first ``size`` arrivals of the merged streams). Exactly one of
            ``size`` and ``horizon_s`` is given.
        horizon_s : float, optional
            Draw every job submitted in ``(0, horizon_s]``.
        rng : int, SeedSequence, Generator or None
            Random source, split into the streams arrivals, runtimes, vos, cores (module
            docstring); the same int seed gives the same table.
        provenance : mapping, optional
            Extra provenance entries (e.g. the model file), merged into the record.

        Returns
        -------
        pyarrow.Table
            A ``trace`` table sorted by submission, job ids 0 … n − 1, with metadata: origin
            1970-01-01 UTC, site ``"<name>-synth"``, the fitted P and τ, and a provenance naming
            the model, its summary and the seed.
        """
        from gridtrace.models._synth import SYNTHETIC_ORIGIN

        children = self._sample_streams(size, horizon_s, rng)
        gens = {k: np.random.default_rng(c) for k, c in zip(_SAMPLE_STREAMS, children, strict=True)}
        times, stream_of = self._draw_arrivals(size, horizon_s, children[0])
        n = int(times.shape[0])

        # VOs: one uniform per job, mapped through its stream's VO law
        u_vo = gens["vos"].random(n)
        vo_labels = np.empty(n, dtype=object)
        for i, stream in enumerate(self.streams_):
            sel = stream_of == i
            cum = np.cumsum(stream.vo_probs)
            pick = np.minimum(np.searchsorted(cum, u_vo[sel] * cum[-1], side="right"), len(cum) - 1)
            vo_labels[sel] = np.asarray(stream.vo_names, dtype=object)[pick]

        # classes, then runtimes conditioned on the class range
        u_class = gens["runtimes"].random(n)
        u_run = gens["runtimes"].random(n)
        fixed = [s.job_class for s in self.streams_]
        frac = np.asarray([self._fraction(v) for v in vo_labels], dtype=np.float64)
        for i, c in enumerate(fixed):
            if c is not None:
                frac[stream_of == i] = 1.0 if c == "interactive" else 0.0
        is_int = u_class < frac
        run = np.empty(n, dtype=np.float64)
        keys: dict[tuple[str | None, str], list[int]] = {}
        for j in range(n):
            c = "interactive" if is_int[j] else "batch"
            v = vo_labels[j] if (vo_labels[j], c) in self.runtime_models_vo_ else None
            keys.setdefault((v, c), []).append(j)
        for (v, c), rows in sorted(keys.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
            idx = np.asarray(rows, dtype=np.int64)
            model = self._runtime_model(v, c)
            run[idx] = _sample_runtimes(model, u_run[idx], c, self.tau_s_)

        cores = gens["cores"].choice(self.cores_values_, size=n, p=self.cores_probs_)
        table = pa.table(
            {
                "job_id": pa.array(np.arange(n, dtype=np.int64)),
                "submit_s": pa.array(times),
                "run_s": pa.array(run),
                "cores": pa.array(cores.astype(np.int32)),
                "vo": pa.array(list(vo_labels), pa.string()),
                "interactive": pa.array(run <= self.tau_s_),
            }
        )
        record: dict[str, Any] = {
            "generator": "WorkloadModel.sample",
            "model": self.summary(),
            "seed": _seed_record(rng),
            "streams": list(_SAMPLE_STREAMS),
            "size": size,
            "horizon_s": horizon_s,
        }
        record.update(provenance or {})
        return with_trace_metadata(
            conform(table, TRACE),
            origin=SYNTHETIC_ORIGIN,
            site=f"{self.name_}-synth",
            cores=self.cores_,
            tau_s=self.tau_s_,
            provenance=record,
        )

    def sample_arrivals(
        self, size: int | None = None, *, horizon_s: float | None = None, rng: SeedLike
    ) -> F64:
        """Draw only the merged arrival times, exactly as :meth:`sample` would.

        ``sample_arrivals(..., rng=s)`` equals the ``submit_s`` column of
        ``sample(..., rng=s)`` for the same int or SeedSequence ``s`` (the arrivals are the first
        of the four random streams), without the cost of runtimes, VOs and cores.

        Parameters
        ----------
        size, horizon_s, rng
            As in :meth:`sample`.

        Returns
        -------
        ndarray of float64
            Sorted arrival times in seconds after 0.
        """
        children = self._sample_streams(size, horizon_s, rng)
        return self._draw_arrivals(size, horizon_s, children[0])[0]

    def _sample_streams(
        self, size: int | None, horizon_s: float | None, rng: SeedLike
    ) -> list[np.random.SeedSequence]:
        """Check a sampling request and split ``rng`` into the four sampling streams."""
        self._check_fitted()
        if (size is None) == (horizon_s is None):
            raise ConfigError("give exactly one of size and horizon_s")
        if size is not None and size < 0:
            raise ConfigError(f"size must be >= 0, got {size}")
        if horizon_s is not None and not (math.isfinite(horizon_s) and horizon_s > 0):
            raise ConfigError(f"horizon_s must be a positive finite number, got {horizon_s}")
        return as_seed_sequence(rng).spawn(len(_SAMPLE_STREAMS))

    def _draw_arrivals(
        self, size: int | None, horizon_s: float | None, seq: np.random.SeedSequence
    ) -> tuple[F64, NDArray[np.int64]]:
        """Arrival times of every stream, merged and sorted, and the stream of each arrival."""
        times_parts: list[F64] = []
        stream_parts: list[NDArray[np.int64]] = []
        for i, (stream, s) in enumerate(
            zip(self.streams_, seq.spawn(len(self.streams_)), strict=True)
        ):
            if size == 0:
                t = np.zeros(0)
            else:
                t = stream.model.sample(size, horizon_s=horizon_s, rng=np.random.default_rng(s))
            times_parts.append(t)
            stream_parts.append(np.full(t.shape[0], i, dtype=np.int64))
        times = np.concatenate(times_parts) if times_parts else np.zeros(0)
        stream_of = np.concatenate(stream_parts) if stream_parts else np.zeros(0, np.int64)
        order = np.argsort(times, kind="stable")
        if size is not None:
            order = order[:size]
        return times[order], stream_of[order]

    # --- score and BIC ---------------------------------------------------------------------------

    def score_components(self, trace: pa.Table) -> dict[str, float]:
        """Log-likelihood of a trace split into its arrival and runtime parts.

        Arrivals: the sum over streams of each stream's log density of its inter-arrival times
        (epochs, conditional on its first arrival; see :class:`ArrivalModel`). Runtimes: per job
        ``log f + log g_I(x) − log G_I(τ)`` or ``log(1 − f) + log g_B(x) − log(1 − G_B(τ))`` with
        the trace's runtimes floored at ``floor_s`` (no censoring: held-out scoring). Per-VO
        streams and models apply to the trace's VOs; other VOs fall in ``"other"`` / the class
        models.

        Returns
        -------
        dict
            ``arrivals``, ``runtimes``, ``total`` (nats), ``jobs`` and ``per_job``
            (``total / jobs``).
        """
        self._check_fitted()
        validate(trace, "trace")
        submit = _floats(trace, "submit_s")
        run = _floats(trace, "run_s")
        vo = _column(trace, "vo")
        interactive = run <= self.tau_s_
        n = int(trace.num_rows)
        order = np.argsort(submit, kind="stable")
        arrivals = 0.0
        for stream in self.streams_:
            mask = self._score_mask(stream, vo, interactive)
            times = submit[order[mask[order]]]
            if np.unique(times).shape[0] >= 2:
                arrivals += stream.model.score(times)
        x = run if self.floor_s is None else np.maximum(run, float(self.floor_s))
        runtimes = 0.0
        vo_arr = np.asarray(vo, dtype=object)
        groups: dict[tuple[str | None, str], NDArray[np.bool_]] = {}
        for c in CLASSES:
            in_c = interactive if c == "interactive" else ~interactive
            for v in {key[0] for key in self.runtime_models_vo_ if key[1] == c}:
                m = in_c & (vo_arr == v)
                groups[(v, c)] = m
                in_c = in_c & ~m
            groups[(None, c)] = in_c
        for (v, c), mask in groups.items():
            if not mask.any():
                continue
            if c not in self.runtime_models_:
                return {
                    "arrivals": arrivals,
                    "runtimes": -math.inf,
                    "total": -math.inf,
                    "jobs": float(n),
                    "per_job": -math.inf,
                }
            model = self._runtime_model(v, c)
            ll = _truncated_loglik(model, x[mask], np.zeros(int(mask.sum()), bool), c, self.tau_s_)
            runtimes += ll
        fr = np.asarray([self._fraction(v) for v in vo], dtype=np.float64)
        with np.errstate(divide="ignore"):
            runtimes += float(np.sum(np.where(interactive, np.log(fr), np.log1p(-fr))))
        total = arrivals + runtimes
        return {
            "arrivals": float(arrivals),
            "runtimes": float(runtimes),
            "total": float(total),
            "jobs": float(n),
            "per_job": float(total / n) if n else math.nan,
        }

    def _score_mask(
        self, stream: _Stream, vo: list[str | None], interactive: NDArray[np.bool_]
    ) -> NDArray[np.bool_]:
        if self.streams == "site":
            return np.ones(len(vo), dtype=bool)
        if self.streams == "class":
            return interactive if stream.job_class == "interactive" else ~interactive
        own = {s.name.removeprefix("vo:") for s in self.streams_ if s.name.startswith("vo:")}
        if stream.name == "other":
            return np.asarray([v is None or v not in own for v in vo], dtype=bool)
        name = stream.name.removeprefix("vo:")
        return np.asarray([v == name for v in vo], dtype=bool)

    def score(self, trace: pa.Table) -> float:
        """Log-likelihood per job of a (held-out) trace: arrivals plus runtimes.

        Parameters
        ----------
        trace : pyarrow.Table
            A ``trace`` table, typically the part of the trace not used for fitting.

        Returns
        -------
        float
            ``score_components(trace)["per_job"]`` in nats per job.
        """
        return self.score_components(trace)["per_job"]

    def bic(self) -> float:
        """BIC of the fitted model: the sum of its selected components' BICs.

        The arrival streams' BICs (on their intervals), the class runtime models' BICs (truncated
        likelihood, on the class counts), and the Bernoulli class term
        ``−2 (n_I ln f + n_B ln(1 − f)) + ln n``. Per-VO runtime models are not added (they
        re-model jobs already counted by the class models).
        """
        self._check_fitted()
        total = 0.0
        for stream in self.streams_:
            value = self.bic_table_["arrivals"][stream.name][self.arrival_choice_[stream.name]]
            total += math.nan if value is None else value
        for c, label in self.runtime_labels_.items():
            value = self.bic_table_["runtimes"][c].get(label)
            total += math.nan if value is None else value
        f = self.interactive_fraction_
        n = self.n_fit_jobs_
        n_i = round(f * n)
        bern = 0.0
        if 0 < n_i < n:
            bern = -2.0 * (n_i * math.log(f) + (n - n_i) * math.log1p(-f))
        return total + bern + math.log(n)

    # --- description and serialisation -----------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """Describe the model compactly (JSON): arrivals per stream, runtime families, fit quality.

        Each arrival stream carries its Ljung-Box test (``ljung_box``: are the inter-arrival
        times independent?), each class's runtime model its parameters on the class range
        (hyperexponential: ``rates``, ``class_weights`` and ``phase_means_s``; exponential:
        ``rate`` and ``class_mean_s``, with ``flat_on_class_range`` when the interactive
        runtimes do not decrease) and its ``goodness_of_fit`` (:attr:`runtime_gof_`).
        """
        self._check_fitted()
        streams = []
        for s in self.streams_:
            entry: dict[str, Any] = {"name": s.name, "model": self.arrival_choice_[s.name]}
            if isinstance(s.model, MMPPArrivals):
                entry["rates"] = s.model.rates_.tolist()
                entry["generator"] = s.model.generator_.tolist()
                entry["stationary_rate"] = s.model.stationary_rate_
                entry["fit"] = {
                    "start_vector": s.model.start_vector_,
                    "log_likelihood": s.model.log_likelihood_,
                    "gradient_norm": s.model.gradient_norm_,
                    "converged": bool(s.model.converged_),
                    "best_start": s.model.best_start_,
                    "starts": len(s.model.starts_),
                }
            elif isinstance(s.model, PoissonArrivals):
                entry["rate"] = s.model.rate_
            if s.name in self.arrival_dependence_:
                entry["ljung_box"] = copy.deepcopy(self.arrival_dependence_[s.name])
            streams.append(entry)
        runtimes = {}
        for c, model in self.runtime_models_.items():
            params = self._class_parameters(model, c)
            runtimes[c] = {"family": self.runtime_labels_[c], "parameters": params}
            if c in self.runtime_gof_:
                runtimes[c]["goodness_of_fit"] = copy.deepcopy(self.runtime_gof_[c])
        return {
            "name": self.name_,
            "tau_s": self.tau_s_,
            "cores": self.cores_,
            "interactive_fraction": self.interactive_fraction_,
            "arrival_streams": streams,
            "runtimes": runtimes,
            "runtime_excluded": copy.deepcopy(self.runtime_excluded_),
            "vo_shares": {
                str(v): float(p) for v, p in zip(self.vo_names_, self.vo_probs_, strict=True)
            },
            "bic": _finite_or_none(self.bic()),
        }

    def _class_parameters(self, model: RuntimeModel, job_class: str) -> dict[str, Any]:
        """Return a class model's parameters as the class range sees them (see :meth:`summary`)."""
        tau = self.tau_s_
        if isinstance(model, HyperExponentialRuntime):
            params: dict[str, Any] = {"rates": model.rates_.tolist()}
            if not _on_class_range(model, job_class, tau):  # written before the bounded fit
                params["weights"] = model.weights_.tolist()
            params["class_weights"] = _class_phase_weights(model, job_class, tau).tolist()
            params["phase_means_s"] = _class_phase_means(model, job_class, tau).tolist()
            if _on_class_range(model, job_class, tau) and model.flat_phases_.any():
                params["flat_phases"] = model.flat_phases_.tolist()
            return params
        if isinstance(model, ExponentialRuntime):
            params = {"rate": model.rate_}
            params["class_mean_s"] = _exponential_class_mean(model, job_class, tau)
            if job_class == "interactive" and model.rate_ * tau <= FLAT_RATE_TAU * (1 + 1e-9):
                params["flat_on_class_range"] = True
            return params
        d = model.to_dict().get("fitted", {})
        return {k: v for k, v in d.items() if k in ("shape", "scale", "zero_fraction")}

    def to_dict(self) -> dict[str, Any]:
        """Return the model as JSON types (``json.dumps(..., allow_nan=False)`` accepts it)."""
        out: dict[str, Any] = {
            "kind": "workload",
            "format_version": _FORMAT_VERSION,
            "params": self._params(),
        }
        if not hasattr(self, "streams_"):
            return out
        out["fitted"] = {
            "name": self.name_,
            "tau_s": self.tau_s_,
            "cores": self.cores_,
            "n_fit_jobs": self.n_fit_jobs_,
            "span_s": self.span_s_,
            "streams": [s.to_dict() for s in self.streams_],
            "arrival_choice": dict(self.arrival_choice_),
            "vo_names": list(self.vo_names_),
            "vo_probs": self.vo_probs_.tolist(),
            "interactive_fraction": self.interactive_fraction_,
            "interactive_fraction_vo": [
                {"vo": v, "fraction": f} for v, f in self.interactive_fraction_vo_.items()
            ],
            "runtime_models": {c: m.to_dict() for c, m in self.runtime_models_.items()},
            "runtime_labels": dict(self.runtime_labels_),
            "runtime_models_vo": [
                {
                    "vo": v,
                    "class": c,
                    "label": self.runtime_labels_vo_[(v, c)],
                    "model": m.to_dict(),
                }
                for (v, c), m in self.runtime_models_vo_.items()
            ],
            "cores_values": self.cores_values_.tolist(),
            "cores_probs": self.cores_probs_.tolist(),
            "bic_table": copy.deepcopy(self.bic_table_),
            "runtime_excluded": copy.deepcopy(self.runtime_excluded_),
            "runtime_gof": copy.deepcopy(self.runtime_gof_),
            "arrival_dependence": copy.deepcopy(self.arrival_dependence_),
            "fit_notes": list(self.fit_notes_),
        }
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkloadModel:
        """Rebuild a model from :meth:`to_dict` (sampling with a seed gives the same table)."""
        if data.get("kind") != "workload":
            raise ConfigError(f"not a workload model: kind {data.get('kind')!r}")
        if int(data.get("format_version", 0)) != _FORMAT_VERSION:
            raise ConfigError(
                f"workload model format {data.get('format_version')!r} is not {_FORMAT_VERSION}"
            )
        params = dict(data["params"])
        params["runtime_families"] = tuple(params["runtime_families"])
        model = cls(**params)
        fitted = data.get("fitted")
        if fitted is None:
            return model
        model.name_ = str(fitted["name"])
        model.tau_s_ = float(fitted["tau_s"])
        model.cores_ = int(fitted["cores"])
        model.n_fit_jobs_ = int(fitted["n_fit_jobs"])
        model.span_s_ = float(fitted["span_s"])
        model.streams_ = [_Stream.from_dict(s) for s in fitted["streams"]]
        model.arrival_choice_ = {str(k): str(v) for k, v in fitted["arrival_choice"].items()}
        model.vo_names_ = [None if v is None else str(v) for v in fitted["vo_names"]]
        model.vo_probs_ = np.asarray(fitted["vo_probs"], dtype=np.float64)
        model.interactive_fraction_ = float(fitted["interactive_fraction"])
        model.interactive_fraction_vo_ = {
            e["vo"]: float(e["fraction"]) for e in fitted["interactive_fraction_vo"]
        }
        model.runtime_models_ = {
            str(c): runtime_model_from_dict(m) for c, m in fitted["runtime_models"].items()
        }
        model.runtime_labels_ = {str(c): str(v) for c, v in fitted["runtime_labels"].items()}
        model.runtime_models_vo_ = {}
        model.runtime_labels_vo_ = {}
        for e in fitted["runtime_models_vo"]:
            key = (e["vo"], str(e["class"]))
            model.runtime_models_vo_[key] = runtime_model_from_dict(e["model"])
            model.runtime_labels_vo_[key] = str(e["label"])
        model.cores_values_ = np.asarray(fitted["cores_values"], dtype=np.int64)
        model.cores_probs_ = np.asarray(fitted["cores_probs"], dtype=np.float64)
        model.bic_table_ = copy.deepcopy(dict(fitted["bic_table"]))
        # absent from models written before the collapse check
        model.runtime_excluded_ = {
            str(k): {str(c): str(r) for c, r in v.items()}
            for k, v in (fitted.get("runtime_excluded") or {}).items()
        }
        # absent from models written before the fit-quality statistics
        model.runtime_gof_ = copy.deepcopy(dict(fitted.get("runtime_gof") or {}))
        model.arrival_dependence_ = copy.deepcopy(dict(fitted.get("arrival_dependence") or {}))
        model.fit_notes_ = [str(s) for s in fitted["fit_notes"]]
        return model
