"""Per-job metrics and the per-class / per-VO summary of a simulation.

Definitions (DESIGN.md "Metrics", ``shared/reference/sim.md`` §2.1)
------------------------------------------------------------------
wait
    start − submit.
responsiveness W
    run / (run + wait); W = 1 when run + wait = 0 (a zero-length job that did not wait).
bounded slowdown
    max(1, (wait + run) / max(run, τ_bsld)) with τ_bsld = 10 s.
fairness F at the election of job j
    1 − max_k (w_k − S_kj)⁺ / max_k w_k, where w are the target VO shares (normalised to sum 1)
    and S_kj is the fraction of the core-seconds (run × cores) of the jobs elected before j that
    went to VO k. Before any core-second has been elected there is nothing to be unfair about and
    F = 1. VOs without a target share count in the denominator only.
utilisation
    Σ run·cores / (P · span) with span = last end − first submit, over every simulated job.
makespan
    last end − first submit (the same interval as the utilisation's span).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import ArrayLike, NDArray

from gridtrace._shares import normalised_shares
from gridtrace.errors import ConfigError

__all__ = [
    "BSLD_TAU_S",
    "INTERACTIVE_WAIT_S",
    "NO_VO",
    "bounded_slowdown",
    "fairness_at_election",
    "responsiveness",
    "summarise",
]

BSLD_TAU_S = 10.0
"""τ of the bounded slowdown, in seconds."""

INTERACTIVE_WAIT_S = 120.0
"""The summary reports the share of interactive jobs that waited less than this, in seconds."""

NO_VO = "(none)"
"""Key of the jobs without a VO in the per-VO summary."""


def responsiveness(run_s: ArrayLike, wait_s: ArrayLike) -> NDArray[np.float64]:
    """Return W = run / (run + wait) per job, with W = 1 where run + wait = 0.

    Examples
    --------
    >>> responsiveness([100.0, 0.0, 0.0], [300.0, 5.0, 0.0]).tolist()
    [0.25, 0.0, 1.0]
    """
    run = np.asarray(run_s, dtype=np.float64)
    wait = np.asarray(wait_s, dtype=np.float64)
    total = run + wait
    out = np.ones_like(total)
    np.divide(run, total, out=out, where=total > 0)
    return out


def bounded_slowdown(
    run_s: ArrayLike, wait_s: ArrayLike, *, tau_s: float = BSLD_TAU_S
) -> NDArray[np.float64]:
    """Return max(1, (wait + run) / max(run, tau_s)) per job.

    Examples
    --------
    >>> bounded_slowdown([100.0, 1.0, 50.0], [300.0, 19.0, 0.0]).tolist()
    [4.0, 2.0, 1.0]
    """
    run = np.asarray(run_s, dtype=np.float64)
    wait = np.asarray(wait_s, dtype=np.float64)
    return np.maximum(1.0, (wait + run) / np.maximum(run, tau_s))


def fairness_at_election(
    run_s: ArrayLike,
    cores: ArrayLike,
    vo: Sequence[str | None] | pa.Array[Any] | pa.ChunkedArray[Any],
    vo_shares: Mapping[str, float],
    *,
    elected: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """Return the fairness F of every job at its election (see the module docstring).

    Parameters
    ----------
    run_s, cores : array_like
        Per job, in row order.
    vo : sequence of str or None, or pyarrow array
        Per job VO.
    vo_shares : mapping of str to float
        Target shares w (normalised here).
    elected : array_like of int, optional
        Rows in election order; defaults to row order (what strict FIFO does).

    Returns
    -------
    ndarray of float64
        F per row, in [0, 1].

    Examples
    --------
    Two VOs with equal targets; the first job goes to ``a``, so when the second is elected ``b``
    has received nothing: F = 1 − 0.5 / 0.5 = 0.

    >>> fairness_at_election([10.0, 10.0, 10.0], [1, 1, 1], ["a", "a", "b"], {"a": 1, "b": 1})
    array([1., 0., 0.])
    """
    run = np.asarray(run_s, dtype=np.float64)
    n = run.shape[0]
    served_rows = run * np.asarray(cores, dtype=np.float64)
    order = np.arange(n) if elected is None else np.asarray(elected, dtype=np.int64)
    if order.shape != (n,):
        raise ConfigError(f"elected must list each of the {n} rows once")
    names, w = normalised_shares(vo_shares)
    if n == 0:
        return np.empty(0, dtype=np.float64)
    vo_arr = vo if isinstance(vo, pa.Array | pa.ChunkedArray) else pa.array(list(vo), pa.string())
    codes = _vo_codes(vo_arr, names)
    served = served_rows[order]
    codes_o = codes[order]
    before_total = np.concatenate(([0.0], np.cumsum(served)[:-1]))
    nothing_yet = before_total <= 0.0
    denom = np.where(nothing_yet, 1.0, before_total)
    deficit = np.zeros(n, dtype=np.float64)
    for k in range(len(names)):
        if w[k] == 0.0:
            continue
        mine = np.where(codes_o == k, served, 0.0)
        before_k = np.concatenate(([0.0], np.cumsum(mine)[:-1]))
        np.maximum(deficit, w[k] - before_k / denom, out=deficit)
    f_order = 1.0 - deficit / w.max()
    f_order[nothing_yet] = 1.0
    out = np.empty(n, dtype=np.float64)
    out[order] = np.clip(f_order, 0.0, 1.0)
    return out


def _vo_codes(vo: pa.Array[Any] | pa.ChunkedArray[Any], names: Sequence[str]) -> NDArray[np.int64]:
    """Index of each job's VO in ``names``; −1 for a VO without a target or a null VO."""
    idx = pc.index_in(vo, value_set=pa.array(list(names), pa.string()))
    return _codes_or_minus_one(idx.to_numpy(zero_copy_only=False))


def _codes_or_minus_one(values: NDArray[Any]) -> NDArray[np.int64]:
    """Integer codes from an Arrow index array converted to numpy (nulls became NaN)."""
    as_float = np.asarray(values, dtype=np.float64)
    return np.where(np.isnan(as_float), -1, as_float).astype(np.int64)


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _group_stats(
    wait: NDArray[np.float64], w: NDArray[np.float64], bsld: NDArray[np.float64]
) -> dict[str, Any]:
    n = int(wait.shape[0])
    if n == 0:
        keys = (
            "wait_mean_s",
            "wait_std_s",
            "wait_median_s",
            "wait_p95_s",
            "wait_max_s",
            "responsiveness_mean",
            "responsiveness_std",
            "responsiveness_median",
            "bsld_mean",
        )
        return {"n": 0, **dict.fromkeys(keys)}
    std_w = float(np.std(wait, ddof=1)) if n > 1 else math.nan
    std_r = float(np.std(w, ddof=1)) if n > 1 else math.nan
    return {
        "n": n,
        "wait_mean_s": _finite(float(np.mean(wait))),
        "wait_std_s": _finite(std_w),
        "wait_median_s": _finite(float(np.median(wait))),
        "wait_p95_s": _finite(float(np.percentile(wait, 95))),
        "wait_max_s": _finite(float(np.max(wait))),
        "responsiveness_mean": _finite(float(np.mean(w))),
        "responsiveness_std": _finite(std_r),
        "responsiveness_median": _finite(float(np.median(w))),
        "bsld_mean": _finite(float(np.mean(bsld))),
    }


def summarise(
    jobs: pa.Table,
    *,
    cores: int,
    warmup_jobs: int = 500,
    drain_jobs: int = 500,
) -> dict[str, Any]:
    """Summarise a ``sim_result`` table: per class, per VO, utilisation and makespan.

    Parameters
    ----------
    jobs : pyarrow.Table
        Schema :data:`gridtrace.schema.SIM_RESULT`, rows in (submit_s, job_id) order.
    cores : int
        P, for the utilisation.
    warmup_jobs, drain_jobs : int, default 500
        The first ``warmup_jobs`` and the last ``drain_jobs`` rows (by submit order) are left out
        of the statistics. If that would leave no job, nothing is left out and the summary says so.

    Returns
    -------
    dict
        JSON types only (missing values are None). Keys: ``n_simulated``, ``n_measured``,
        ``exclusion`` (warmup_jobs, drain_jobs, applied, note), ``classes`` (``interactive``,
        ``batch``, ``all`` → statistics), ``vos`` (VO → statistics; jobs without a VO under
        :data:`NO_VO`), ``interactive_wait_under_120s``, ``fairness`` (mean, median, min; None
        without VO shares), ``utilisation``, ``span_s``, ``makespan_s``, ``first_submit_s``,
        ``last_end_s``. The statistics are ``n``, ``wait_{mean,std,median,p95,max}_s``,
        ``responsiveness_{mean,std,median}`` and ``bsld_mean`` (std with ddof = 1).
    """
    if warmup_jobs < 0 or drain_jobs < 0:
        raise ConfigError("warmup_jobs and drain_jobs must be >= 0")
    n = jobs.num_rows
    submit = jobs.column("submit_s").to_numpy()
    end = jobs.column("end_s").to_numpy()
    run = jobs.column("run_s").to_numpy()
    used = jobs.column("cores").to_numpy().astype(np.float64)
    if warmup_jobs + drain_jobs < n:
        lo, hi, applied = warmup_jobs, n - drain_jobs, True
        note = f"first {warmup_jobs} and last {drain_jobs} jobs by submit order excluded"
    else:
        lo, hi, applied = 0, n, False
        note = (
            f"trace too small ({n} jobs) to exclude {warmup_jobs} warm-up and {drain_jobs} "
            "drain jobs: no job excluded"
        )
    part = jobs.slice(lo, hi - lo)
    wait = part.column("wait_s").to_numpy()
    resp = part.column("responsiveness").to_numpy()
    bsld = part.column("bounded_slowdown").to_numpy()
    inter = np.asarray(part.column("interactive").to_numpy(zero_copy_only=False), dtype=bool)
    classes = {
        "interactive": _group_stats(wait[inter], resp[inter], bsld[inter]),
        "batch": _group_stats(wait[~inter], resp[~inter], bsld[~inter]),
        "all": _group_stats(wait, resp, bsld),
    }
    vos: dict[str, Any] = {}
    encoded = part.column("vo").combine_chunks().dictionary_encode()
    codes = _codes_or_minus_one(encoded.indices.to_numpy(zero_copy_only=False))
    names = [str(v) for v in encoded.dictionary.to_pylist()]
    for k, name in [*enumerate(names), (-1, NO_VO)]:
        mask = codes == k
        if k >= 0 or mask.any():
            vos[name] = _group_stats(wait[mask], resp[mask], bsld[mask])
    vos = dict(sorted(vos.items()))
    n_inter = int(inter.sum())
    under = float(np.mean(wait[inter] < INTERACTIVE_WAIT_S)) if n_inter else None
    fair_col = part.column("fairness")
    fairness: dict[str, Any] | None = None
    if part.num_rows and fair_col.null_count < part.num_rows:
        f = fair_col.drop_null().to_numpy()
        fairness = {
            "mean": float(np.mean(f)),
            "median": float(np.median(f)),
            "min": float(np.min(f)),
        }
    if n:
        first_submit = float(submit.min())
        last_end = float(end.max())
        span = last_end - first_submit
        util = float(np.sum(run * used) / (cores * span)) if span > 0 else None
    else:
        first_submit = last_end = span = math.nan
        util = None
    return {
        "n_simulated": n,
        "n_measured": hi - lo,
        "exclusion": {
            "warmup_jobs": warmup_jobs,
            "drain_jobs": drain_jobs,
            "applied": applied,
            "note": note,
        },
        "classes": classes,
        "vos": vos,
        "interactive_wait_under_120s": under,
        "fairness": fairness,
        "utilisation": util,
        "span_s": _finite(span),
        "makespan_s": _finite(span),
        "first_submit_s": _finite(first_submit),
        "last_end_s": _finite(last_end),
    }
