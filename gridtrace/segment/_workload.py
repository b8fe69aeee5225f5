"""Workload change points on a job-count grid (parsers.md §11, step 3).

The jobs of a pool-stable interval are cut into blocks of B consecutive submissions (the last
block takes the remainder). Per block: log arrival rate, median and IQR of log(1 + run_s),
centred-log-ratio shares of the top VOs plus "other", and log mean cores per job. Each feature is
divided by its noise scale (the robust spread of its first differences, so level shifts do not
inflate it) and ``ruptures.KernelCPD`` finds the change points with ``min_size`` = ⌈N_min / B⌉
blocks. The penalty is ``c · d · log(blocks)``; ``c`` is chosen on a grid by the elbow of cost
against number of breaks, and the whole curve is kept as the sensitivity record.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import ruptures as rpt

from gridtrace.stats._columns import F64, I64

__all__ = ["PENALTY_GRID", "block_features", "choose_elbow", "workload_breaks"]

PENALTY_GRID = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
"""Values of ``c`` tried by the elbow rule (never below the BIC-like c = 1)."""

_QUANTILES = (0.25, 0.5, 0.75)


def _block_quantiles(values: F64, block: I64, starts: I64, sizes: I64) -> F64:
    order = np.lexsort((values, block))
    ranked = values[order]
    out = np.empty((starts.size, len(_QUANTILES)))
    for j, q in enumerate(_QUANTILES):
        out[:, j] = ranked[starts + np.floor(q * (sizes - 1)).astype(np.int64)]
    return out


def block_features(
    submit: F64,
    log_run: F64,
    vo_index: I64,
    vo_groups: int,
    cores: F64,
    block_jobs: int,
) -> tuple[F64, I64, list[str]]:
    """Features of consecutive blocks of ``block_jobs`` jobs.

    Parameters
    ----------
    submit, log_run, cores : numpy.ndarray
        The interval's submit times, log(1 + run_s) and cores per job.
    vo_index : numpy.ndarray
        VO group of each job, 0 .. ``vo_groups`` − 1 (top VOs, then "other").
    vo_groups : int
        Number of VO groups.
    block_jobs : int
        B.

    Returns
    -------
    features : numpy.ndarray
        (blocks, d) raw features.
    starts : numpy.ndarray
        First row of each block, relative to the interval.
    names : list of str
        Feature names.
    """
    n = submit.size
    blocks = max(1, n // block_jobs)
    block = np.minimum(np.arange(n) // block_jobs, blocks - 1)
    starts = np.arange(blocks, dtype=np.int64) * block_jobs
    sizes = np.diff(np.r_[starts, n])
    last = np.r_[starts[1:], n] - 1
    duration = np.maximum(submit[last] - submit[starts], 1.0)
    rate = np.log(np.maximum(sizes - 1, 1) / duration)
    q = _block_quantiles(log_run, block, starts, sizes)
    counts = np.bincount(block * vo_groups + vo_index, minlength=blocks * vo_groups).reshape(
        blocks, vo_groups
    )
    logs = np.log(counts + 0.5)
    clr = logs - logs.mean(axis=1, keepdims=True)
    mean_cores = np.bincount(block, weights=cores, minlength=blocks) / sizes
    features = np.column_stack((rate, q[:, 1], q[:, 2] - q[:, 0], clr, np.log(mean_cores)))
    names = ["log_rate", "median_log_run", "iqr_log_run"]
    names += [f"clr_vo{k}" for k in range(vo_groups)] + ["log_mean_cores"]
    return features, starts, names


def standardise(features: F64) -> tuple[F64, list[int]]:
    """Divide each column by its noise scale; drop constant columns (their indices are kept)."""
    kept: list[int] = []
    columns: list[F64] = []
    for j in range(features.shape[1]):
        x = features[:, j]
        if x.size < 3 or np.ptp(x) <= 1e-12:
            continue
        d = np.diff(x)
        robust = 1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2.0)
        scale = max(robust, 0.1 * float(d.std()) / math.sqrt(2.0), 1e-9)
        kept.append(j)
        columns.append(x / scale)
    if not columns:
        return np.zeros((features.shape[0], 0)), kept
    return np.column_stack(columns), kept


def choose_elbow(curve: list[dict[str, Any]]) -> dict[str, Any]:
    """Pick the elbow of cost against number of breaks (largest gap below the chord).

    ``curve`` holds ``{"c", "breaks", "cost"}`` for increasing ``c``. Without an elbow (one
    distinct break count, or a straight curve) the smallest ``c`` (the BIC-like penalty) wins;
    the merge step then removes breaks that are not material.
    """
    by_breaks: dict[int, dict[str, Any]] = {}
    for point in curve:
        by_breaks.setdefault(int(point["breaks"]), point)  # smallest c for each break count
    points = sorted(by_breaks.values(), key=lambda p: int(p["breaks"]))
    if len(points) < 3:
        return curve[0]
    k = np.array([p["breaks"] for p in points], dtype=np.float64)
    cost = np.array([p["cost"] for p in points], dtype=np.float64)
    x = (k - k[0]) / (k[-1] - k[0])
    spread = cost.max() - cost.min()
    if not spread > 0:
        return curve[0]
    y = (cost - cost.min()) / spread
    gap = (1.0 - x) - y
    best = int(np.argmax(gap))
    return points[best] if gap[best] > 1e-9 else curve[0]


def workload_breaks(
    features: F64, *, min_blocks: int, kernel: str, penalty_scale: float | None
) -> tuple[list[int], dict[str, Any]]:
    """Change points of block features, as block indices where a new segment starts.

    Parameters
    ----------
    features : numpy.ndarray
        (blocks, d) raw features from :func:`block_features`.
    min_blocks : int
        Fewest blocks per segment.
    kernel : {"linear", "rbf"}
        ``ruptures.KernelCPD`` kernel: "linear" finds mean shifts, "rbf" any change of the
        feature distribution.
    penalty_scale : float or None
        ``c`` of the penalty; None chooses it by the elbow over :data:`PENALTY_GRID`.

    Returns
    -------
    breaks : list of int
        Block indices where a new segment starts.
    diagnostics : dict
        The penalty chosen and the cost curve.
    """
    blocks = features.shape[0]
    scaled, kept = standardise(features)
    info: dict[str, Any] = {"blocks": blocks, "features_used": len(kept)}
    if blocks < 2 * min_blocks or scaled.shape[1] == 0:
        info["reason"] = "too few blocks to split" if scaled.shape[1] else "features constant"
        return [], info
    dims = scaled.shape[1]
    base = dims * math.log(blocks) if kernel == "linear" else math.log(blocks)
    algo = rpt.KernelCPD(kernel=kernel, min_size=min_blocks).fit(scaled)
    grid = (penalty_scale,) if penalty_scale is not None else PENALTY_GRID
    curve: list[dict[str, Any]] = []
    found: dict[float, list[int]] = {}
    for c in grid:
        ends = [int(e) for e in algo.predict(pen=c * base)]
        found[c] = ends[:-1]
        cost = float(algo.cost.sum_of_costs(ends))
        curve.append({"c": c, "breaks": len(ends) - 1, "cost": cost})
    chosen = curve[0] if penalty_scale is not None else choose_elbow(curve)
    info.update({"penalty_base": base, "chosen_c": chosen["c"], "curve": curve})
    return found[float(chosen["c"])], info


def vo_groups(vo_codes: I64, labels: int, top: int) -> tuple[I64, npt.NDArray[np.int64], int]:
    """Map VO codes to the ``top`` most frequent VOs (by jobs, ties by code) plus "other"."""
    counts = np.bincount(vo_codes, minlength=labels)
    order = sorted(range(labels), key=lambda i: (-counts[i], i))
    chosen = [i for i in order[:top] if counts[i] > 0]
    lookup = np.full(max(labels, 1), len(chosen), dtype=np.int64)
    lookup[chosen] = np.arange(len(chosen))
    return lookup[vo_codes], np.array(chosen, dtype=np.int64), len(chosen) + 1
