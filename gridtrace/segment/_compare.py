"""Effect sizes between two groups of jobs: runtime KS distance, VO Jensen–Shannon, rate ratio.

With ten thousand jobs per group every test rejects, so the decisions use effect sizes; the
p-values (KS, χ² of the VO table) are reported beside them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as st

from gridtrace.stats._columns import F64, I64

__all__ = ["Group", "Thresholds", "compare", "js_divergence", "ks_distance_sorted"]


@dataclass(frozen=True, slots=True)
class Thresholds:
    """When two adjacent groups of jobs differ materially (parsers.md §11, step 4).

    Attributes
    ----------
    runtime_ks : float, default 0.1
        KS distance of log runtimes.
    vo_jsd : float, default 0.05
        Jensen–Shannon divergence (base 2) of the VO shares.
    rate_ratio : float, default 0.2
        Arrival rates differ by more than this relative amount (±20 %).
    cores_ratio : float, default 0.2
        Mean cores per job differ by more than this relative amount.
    """

    runtime_ks: float = 0.1
    vo_jsd: float = 0.05
    rate_ratio: float = 0.2
    cores_ratio: float = 0.2


@dataclass(frozen=True)
class Group:
    """The jobs of rows [start, stop) of a trace, as the comparisons need them."""

    start: int
    stop: int
    log_run: F64
    vo_counts: I64
    rate: float
    mean_cores: float

    @classmethod
    def of(
        cls,
        submit: F64,
        log_run: F64,
        vo_codes: I64,
        cores: F64,
        labels: int,
        start: int,
        stop: int,
    ) -> Group:
        """Summarise rows [start, stop)."""
        span = float(submit[stop - 1] - submit[start])
        jobs = stop - start
        return cls(
            start=start,
            stop=stop,
            log_run=log_run[start:stop],
            vo_counts=np.bincount(vo_codes[start:stop], minlength=labels).astype(np.int64),
            rate=(jobs - 1) / span if span > 0 and jobs > 1 else math.nan,
            mean_cores=float(cores[start:stop].mean()),
        )


def js_divergence(p: F64 | I64, q: F64 | I64) -> float:
    """Jensen–Shannon divergence, base 2 (0 = same shares, 1 = disjoint), of two count vectors."""
    a = np.asarray(p, dtype=np.float64)
    b = np.asarray(q, dtype=np.float64)
    if a.sum() <= 0 or b.sum() <= 0:
        return math.nan
    a, b = a / a.sum(), b / b.sum()
    m = (a + b) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        left = np.where(a > 0, a * np.log2(a / m), 0.0).sum()
        right = np.where(b > 0, b * np.log2(b / m), 0.0).sum()
    return float(max(0.0, (left + right) / 2))


def ks_distance_sorted(sample: F64, reference_sorted: F64, grid: F64, reference_cdf: F64) -> float:
    """KS distance of ``sample`` to a reference known by its CDF on ``grid`` (all its values).

    Exact when every value of ``sample`` is in ``grid``, as for a segment of the whole log.
    """
    if sample.size == 0 or reference_sorted.size == 0:
        return math.nan
    cdf = np.searchsorted(np.sort(sample), grid, side="right") / sample.size
    return float(np.max(np.abs(cdf - reference_cdf)))


def _log_ratio(a: float, b: float) -> float:
    if not (a > 0 and b > 0):
        return math.nan
    return abs(math.log(b / a))


def compare(a: Group, b: Group, thresholds: Thresholds) -> dict[str, Any]:
    """Effect sizes and p-values between two groups, and the signals that differ materially.

    Returns
    -------
    dict
        ``runtime_ks``, ``runtime_ks_p``, ``vo_jsd``, ``vo_chi2_p``, ``rate_ratio`` (b / a),
        ``cores_ratio`` (b / a), ``signals`` (subset of "arrivals", "runtime", "vo_mix",
        "cores") and ``score`` (the largest effect over its threshold; < 1 means mergeable).
    """
    ks = st.ks_2samp(a.log_run, b.log_run, method="asymp")
    jsd = js_divergence(a.vo_counts, b.vo_counts)
    table = np.vstack((a.vo_counts, b.vo_counts))
    table = table[:, table.sum(axis=0) > 0]
    chi2_p = 1.0
    if table.shape[1] > 1:
        chi2_p = float(st.chi2_contingency(table, correction=False).pvalue)
    rate = _log_ratio(a.rate, b.rate)
    cores = _log_ratio(a.mean_cores, b.mean_cores)
    effects = {
        "arrivals": rate / math.log1p(thresholds.rate_ratio),
        "runtime": float(ks.statistic) / thresholds.runtime_ks,
        "vo_mix": jsd / thresholds.vo_jsd,
        "cores": cores / math.log1p(thresholds.cores_ratio),
    }
    signals = [name for name, value in effects.items() if value >= 1.0]
    finite = [v for v in effects.values() if math.isfinite(v)]
    return {
        "runtime_ks": float(ks.statistic),
        "runtime_ks_p": float(ks.pvalue),
        "vo_jsd": jsd,
        "vo_chi2_p": chi2_p,
        "rate_ratio": b.rate / a.rate if a.rate > 0 else math.nan,
        "cores_ratio": b.mean_cores / a.mean_cores if a.mean_cores > 0 else math.nan,
        "signals": signals,
        "score": max(finite) if finite else 0.0,
    }
