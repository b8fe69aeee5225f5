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
fairness over sliding windows (``fairness_windows``, :func:`windowed_fairness`)
    The cumulative F above weighs a job's election against everything elected since the start
    of the run, so over a long run it converges to the run's final shares, which every policy
    that runs the same jobs reaches. The windowed F looks at one window of time at a time. A
    window of length L (daily 86 400 s, weekly 604 800 s) covers the elections (a job is elected
    at its start_s) in [a, a + L); its F is
    1 − max_k (w_k − S_k)⁺ / max_k w_k with S_k the fraction of the core-seconds (run × cores)
    elected in the window that went to VO k: only that window's elections count, none before.
    Windows start at the first election t₀ and every ``step`` after it (daily: every 3 600 s,
    weekly: every 86 400 s; :data:`FAIRNESS_WINDOWS`), and there are as many as needed for the
    last to reach past the last election t₁: every election lies in a window, and only the last
    window extends past t₁, by less than one step. A run shorter than L has one window. A window
    in which no core-second was elected (no election, or zero-length jobs only) is skipped: it
    has no F, and is not counted as 1. Per run the summary gives the number of windows with an
    F, their mean and their minimum. Like every other statistic of the summary it uses the
    measured jobs only (warm-up and drain jobs left out). As for the cumulative F, the targets
    are normalised to sum 1 and VOs without a target (or without a VO) count in the core-seconds
    of the window only.
utilisation
    Σ run·cores / (P · span) with span = last end − first submit, over every simulated job.
makespan
    last end − first submit (the same interval as the utilisation's span).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import ArrayLike, NDArray

from gridtrace._shares import normalised_shares
from gridtrace.errors import ConfigError

__all__ = [
    "BSLD_TAU_S",
    "FAIRNESS_WINDOWS",
    "INTERACTIVE_WAIT_S",
    "NO_VO",
    "WindowedFairness",
    "bounded_slowdown",
    "fairness_at_election",
    "responsiveness",
    "summarise",
    "windowed_fairness",
]

BSLD_TAU_S = 10.0
"""τ of the bounded slowdown, in seconds."""

INTERACTIVE_WAIT_S = 120.0
"""The summary reports the share of interactive jobs that waited less than this, in seconds."""

NO_VO = "(none)"
"""Key of the jobs without a VO in the per-VO summary."""

FAIRNESS_WINDOWS: Final[Mapping[str, tuple[float, float]]] = {
    "daily": (86_400.0, 3_600.0),
    "weekly": (604_800.0, 86_400.0),
}
"""Sliding windows of the summary's windowed F: name → (length, step), seconds."""


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


@dataclass(frozen=True, slots=True)
class WindowedFairness:
    """F over sliding windows of one run (see the module docstring).

    Attributes
    ----------
    length_s, step_s : float
        Window length and step, seconds.
    start_s : ndarray of float64
        Start of each window with an F, seconds (windows without core-seconds are left out).
    value : ndarray of float64
        F of each of those windows, in [0, 1].
    n_elections : ndarray of int64
        Elections in each of those windows.
    n_skipped : int
        Windows left out because no core-second was elected in them.
    """

    length_s: float
    step_s: float
    start_s: NDArray[np.float64]
    value: NDArray[np.float64]
    n_elections: NDArray[np.int64]
    n_skipped: int

    @property
    def n_windows(self) -> int:
        """Windows with an F."""
        return int(self.value.shape[0])

    def describe(self) -> dict[str, Any]:
        """Return ``length_s``, ``step_s``, ``n_windows``, ``n_skipped``, ``mean`` and ``min``."""
        some = self.n_windows > 0
        return {
            "length_s": self.length_s,
            "step_s": self.step_s,
            "n_windows": self.n_windows,
            "n_skipped": self.n_skipped,
            "mean": float(np.mean(self.value)) if some else None,
            "min": float(np.min(self.value)) if some else None,
        }


def windowed_fairness(
    elected_s: ArrayLike,
    run_s: ArrayLike,
    cores: ArrayLike,
    vo: Sequence[str | None] | pa.Array[Any] | pa.ChunkedArray[Any],
    vo_shares: Mapping[str, float],
    *,
    length_s: float,
    step_s: float,
) -> WindowedFairness:
    """Return F over sliding windows of length ``length_s`` moved by ``step_s``.

    Parameters
    ----------
    elected_s : array_like
        Election (start) time of each job, seconds; any order.
    run_s, cores : array_like
        Per job; the job's core-seconds run × cores count in the windows holding its election.
    vo : sequence of str or None, or pyarrow array
        Per job VO.
    vo_shares : mapping of str to float
        Target shares w (normalised here).
    length_s, step_s : float
        Window length and step, seconds, both > 0.

    Returns
    -------
    WindowedFairness

    Raises
    ------
    ConfigError
        If the lengths are not positive and finite or the columns differ in length.

    Examples
    --------
    Equal targets. Day one serves only ``a``, day two ``a`` and ``b`` alike: F 0, then 1.

    >>> r = windowed_fairness(
    ...     [0.0, 3600.0, 86400.0, 90000.0], [100.0] * 4, [1] * 4, ["a", "a", "a", "b"],
    ...     {"a": 1, "b": 1}, length_s=86400.0, step_s=86400.0)
    >>> r.value.tolist(), r.n_elections.tolist()
    ([0.0, 1.0], [2, 2])
    """
    if not (0.0 < length_s < math.inf and 0.0 < step_s < math.inf):
        raise ConfigError(f"length_s and step_s must be > 0 and finite, got {length_s}, {step_s}")
    t = np.asarray(elected_s, dtype=np.float64)
    served = np.asarray(run_s, dtype=np.float64) * np.asarray(cores, dtype=np.float64)
    n = t.shape[0]
    if served.shape != (n,):
        raise ConfigError("elected_s, run_s and cores must have one value per job")
    names, w = normalised_shares(vo_shares)
    empty = WindowedFairness(
        length_s, step_s, np.empty(0), np.empty(0), np.empty(0, dtype=np.int64), 0
    )
    if n == 0:
        return empty
    vo_arr = vo if isinstance(vo, pa.Array | pa.ChunkedArray) else pa.array(list(vo), pa.string())
    if len(vo_arr) != n:
        raise ConfigError("vo must have one value per job")
    codes = _vo_codes(vo_arr, names)
    order = np.argsort(t, kind="stable")
    t, served, codes = t[order], served[order], codes[order]
    t0, t1 = float(t[0]), float(t[-1])
    m = math.floor(max(0.0, t1 - t0 - length_s) / step_s) + 1
    if t0 + (m - 1) * step_s + length_s <= t1:  # the last election must lie in a window
        m += 1
    starts = t0 + step_s * np.arange(m, dtype=np.float64)
    lo = np.searchsorted(t, starts, side="left")
    hi = np.searchsorted(t, starts + length_s, side="left")
    cum = np.concatenate(([0.0], np.cumsum(served)))
    total = cum[hi] - cum[lo]
    keep = total > 0.0
    denom = np.where(keep, total, 1.0)
    deficit = np.zeros(m, dtype=np.float64)
    for k in range(len(names)):
        if w[k] == 0.0:
            continue
        cum_k = np.concatenate(([0.0], np.cumsum(np.where(codes == k, served, 0.0))))
        np.maximum(deficit, w[k] - (cum_k[hi] - cum_k[lo]) / denom, out=deficit)
    value = np.clip(1.0 - deficit / w.max(), 0.0, 1.0)
    return WindowedFairness(
        length_s,
        step_s,
        starts[keep],
        value[keep],
        (hi - lo)[keep].astype(np.int64),
        int(m - keep.sum()),
    )


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


def _shares_of(jobs: pa.Table) -> Mapping[str, float] | None:
    """Return the ``vo_shares`` the simulator wrote into the provenance of a ``sim_result``."""
    raw = (jobs.schema.metadata or {}).get(b"provenance")
    if raw is None:
        return None
    try:
        shares = json.loads(raw)["simulation"]["vo_shares"]
    except (ValueError, KeyError, TypeError):
        return None
    return shares if isinstance(shares, Mapping) and shares else None


def _fairness_windows(
    part: pa.Table, vo_shares: Mapping[str, float] | None
) -> dict[str, dict[str, Any] | None]:
    """Return the windowed F of the summary, one entry per :data:`FAIRNESS_WINDOWS`."""
    shares = vo_shares if vo_shares is not None else _shares_of(part)
    out: dict[str, dict[str, Any] | None] = {}
    for name, (length, step) in FAIRNESS_WINDOWS.items():
        if not shares:
            out[name] = None
            continue
        out[name] = windowed_fairness(
            part.column("start_s").to_numpy(),
            part.column("run_s").to_numpy(),
            part.column("cores").to_numpy(),
            part.column("vo"),
            shares,
            length_s=length,
            step_s=step,
        ).describe()
    return out


def summarise(
    jobs: pa.Table,
    *,
    cores: int,
    warmup_jobs: int = 500,
    drain_jobs: int = 500,
    vo_shares: Mapping[str, float] | None = None,
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
    vo_shares : mapping of str to float, optional
        Target VO shares, for the windowed F; default the ``vo_shares`` the simulator wrote into
        the table's provenance metadata (``provenance["simulation"]["vo_shares"]``), if any.

    Returns
    -------
    dict
        JSON types only (missing values are None). Keys: ``n_simulated``, ``n_measured``,
        ``exclusion`` (warmup_jobs, drain_jobs, applied, note), ``classes`` (``interactive``,
        ``batch``, ``all`` → statistics), ``vos`` (VO → statistics; jobs without a VO under
        :data:`NO_VO`), ``interactive_wait_under_120s``, ``fairness`` (None without VO shares:
        ``mean``, ``median``, ``min`` of the cumulative F at election and, per window of
        :data:`FAIRNESS_WINDOWS`, ``daily`` and ``weekly``: ``length_s``, ``step_s``,
        ``n_windows``, ``n_skipped``, ``mean``, ``min`` of the windowed F; None when the shares
        are unknown), ``utilisation``, ``span_s``, ``makespan_s``, ``first_submit_s``,
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
            **_fairness_windows(part, vo_shares),
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
