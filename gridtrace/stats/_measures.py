"""Vectorised workload measures: load, burstiness (IDC, ACF), distributions, service requests."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from gridtrace.errors import ConfigError
from gridtrace.stats._columns import F64, schema_of

__all__ = [
    "QUANTILES",
    "core_weighted_load",
    "distribution_summary",
    "idc_curve",
    "interarrival_acf",
    "log_bin_edges",
    "log_histogram",
    "service_requests",
    "utilisation_factor",
]

_IDC_CHUNK = 1 << 20

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95, 0.99)
"""Quantiles reported for runtimes and inter-arrival times."""


def _mean_interarrival(submit: npt.ArrayLike) -> float:
    times = np.asarray(submit, dtype=np.float64)
    if times.size < 2:
        return math.nan
    return float((times[-1] - times[0]) / (times.size - 1))


def utilisation_factor(run_s: npt.ArrayLike, submit_s: npt.ArrayLike, cores: float) -> float:
    """Compute the research's utilisation factor U = mean(run_s) / mean(inter-arrival) / P.

    Parameters
    ----------
    run_s : array_like
        Runtimes of the jobs, seconds.
    submit_s : array_like
        Their submit times, sorted, seconds; the mean inter-arrival time is
        (last − first) / (jobs − 1), the mean of the consecutive gaps.
    cores : float
        The site's cores P.

    Returns
    -------
    float
        U; NaN with fewer than two jobs or a zero span.

    Examples
    --------
    >>> utilisation_factor([100.0, 300.0, 200.0], [0.0, 10.0, 20.0], cores=4)
    5.0
    """
    if cores <= 0:
        msg = f"cores must be positive, not {cores}"
        raise ConfigError(msg)
    runs = np.asarray(run_s, dtype=np.float64)
    gap = _mean_interarrival(submit_s)
    if runs.size < 2 or not gap > 0:
        return math.nan
    return float(runs.mean() / gap / cores)


def core_weighted_load(
    run_s: npt.ArrayLike, job_cores: npt.ArrayLike, submit_s: npt.ArrayLike, cores: float
) -> float:
    """Core-weighted load ρ = E[run_s × cores] / E[inter-arrival] / P.

    Equal to :func:`utilisation_factor` when every job uses one core.

    Examples
    --------
    >>> core_weighted_load([100.0, 300.0], [2, 4], [0.0, 50.0], cores=10)
    1.4
    """
    if cores <= 0:
        msg = f"cores must be positive, not {cores}"
        raise ConfigError(msg)
    work = np.asarray(run_s, dtype=np.float64) * np.asarray(job_cores, dtype=np.float64)
    gap = _mean_interarrival(submit_s)
    if work.size < 2 or not gap > 0:
        return math.nan
    return float(work.mean() / gap / cores)


def distribution_summary(values: F64) -> dict[str, float]:
    """Count, mean, standard deviation, squared coefficient of variation and quantiles."""
    if values.size == 0:
        return {"count": 0.0}
    mean = float(values.mean())
    std = float(values.std())
    out = {
        "count": float(values.size),
        "mean": mean,
        "std": std,
        "scv": (std / mean) ** 2 if mean > 0 else math.nan,
        "min": float(values.min()),
        "max": float(values.max()),
    }
    for q, v in zip(QUANTILES, np.quantile(values, QUANTILES), strict=True):
        out[f"p{round(q * 100):02d}"] = float(v)
    return out


def log_bin_edges(max_value: float, *, per_decade: int = 10) -> F64:
    """Bin edges ``[0, 1, 10^(1/k), ..., 10^D]`` seconds, D ≥ 7, covering ``max_value``.

    The fixed grid makes histograms of different traces comparable; ``[0, 1)`` holds zeros.
    """
    top = max(7, math.ceil(math.log10(max_value))) if max_value >= 1 else 7
    return np.concatenate(([0.0], np.logspace(0, top, top * per_decade + 1)))


def log_histogram(values: F64, edges: F64) -> npt.NDArray[np.int64]:
    """Count ``values`` in the bins of ``edges`` (the last bin closed on the right)."""
    counts, _ = np.histogram(values, bins=edges)
    return counts.astype(np.int64)


def _window_counts(times: npt.NDArray[np.float64], t: float, windows: int) -> npt.NDArray[np.int64]:
    """Arrivals in each of the first ``windows`` windows of length ``t`` from ``times[0]``.

    Counted ``_IDC_CHUNK`` arrivals at a time: the temporaries of one pass over all of them
    (offsets, window indices, a mask and its copy: about 33 bytes an arrival) were the largest
    allocation of a characterisation of 17 million jobs. Each chunk adds its counts over the
    windows it touches, so the counts are exactly those of one pass.
    """
    counts = np.zeros(windows, dtype=np.int64)
    for first in range(0, times.size, _IDC_CHUNK):
        index = ((times[first : first + _IDC_CHUNK] - times[0]) // t).astype(np.int64)
        index = index[index < windows]
        if index.size:
            low = int(index.min())
            if low < 0:
                msg = f"arrival times must be sorted: {times[first:].min()} is before {times[0]}"
                raise ConfigError(msg)
            counts[low : int(index.max()) + 1] += np.bincount(index - low)
    return counts


def idc_curve(
    submit_s: npt.ArrayLike,
    *,
    points: int = 30,
    t_min: float | None = None,
    t_max: float | None = None,
    min_windows: int = 10,
) -> pa.Table:
    """Index of dispersion for counts, IDC(t) = Var N(t) / E N(t), on a log grid of window sizes.

    N(t) counts the arrivals in consecutive, complete windows of length ``t`` from the first
    arrival. A Poisson process has IDC(t) = 1 at every t; bursty arrivals rise above 1.

    Parameters
    ----------
    submit_s : array_like
        Sorted arrival times, seconds.
    points : int, default 30
        Grid points, log-spaced from ``t_min`` to ``t_max``.
    t_min : float, optional
        Smallest window; default the mean inter-arrival time (at least 1 s).
    t_max : float, optional
        Largest window; default span / ``min_windows``.
    min_windows : int, default 10
        Windows sizes with fewer complete windows are left out.

    Returns
    -------
    pyarrow.Table
        Columns ``t_s``, ``windows``, ``mean_count``, ``idc``; empty with fewer than two arrivals.
    """
    times = np.asarray(submit_s, dtype=np.float64)
    schema = schema_of(
        pa.field("t_s", pa.float64()),
        pa.field("windows", pa.int64()),
        pa.field("mean_count", pa.float64()),
        pa.field("idc", pa.float64()),
    )
    if times.size < 2 or times[-1] <= times[0]:
        return schema.empty_table()
    span = float(times[-1] - times[0])
    low = t_min if t_min is not None else max(1.0, span / (times.size - 1))
    high = t_max if t_max is not None else span / min_windows
    if not high > low:
        return schema.empty_table()
    grid = np.unique(np.logspace(math.log10(low), math.log10(high), points))
    rows: dict[str, list[float]] = {"t_s": [], "windows": [], "mean_count": [], "idc": []}
    for t in grid:
        windows = int(span // t)
        if windows < min_windows:
            continue
        counts = _window_counts(times, t, windows)
        mean = float(counts.mean())
        rows["t_s"].append(float(t))
        rows["windows"].append(windows)
        rows["mean_count"].append(mean)
        rows["idc"].append(float(counts.var(ddof=1) / mean) if mean > 0 else math.nan)
    return pa.table(rows, schema=schema)


def interarrival_acf(submit_s: npt.ArrayLike, *, lags: int = 50) -> pa.Table:
    """Sample autocorrelation of the inter-arrival times at lags 1..``lags`` (FFT, biased).

    Returns
    -------
    pyarrow.Table
        Columns ``lag`` and ``acf``; empty when there are fewer than three arrivals or the gaps
        are all equal.
    """
    gaps = np.diff(np.asarray(submit_s, dtype=np.float64))
    schema = schema_of(pa.field("lag", pa.int64()), pa.field("acf", pa.float64()))
    lags = min(lags, gaps.size - 1)
    if lags < 1:
        return schema.empty_table()
    centred = gaps - gaps.mean()
    size = 1 << int(2 * gaps.size - 1).bit_length()
    spectrum = np.fft.rfft(centred, size)
    autocov = np.fft.irfft(spectrum * np.conj(spectrum), size)[: lags + 1]
    if not autocov[0] > 0:
        return schema.empty_table()
    acf = autocov[1:] / autocov[0]
    lag = pa.array(np.arange(1, lags + 1, dtype=np.int64))
    return pa.table({"lag": lag, "acf": pa.array(acf)}, schema=schema)


def service_requests(
    submit_s: F64, run_s: F64, job_cores: F64, *, cores: float, bin_s: float = 10_000.0
) -> pa.Table:
    """Compute the service-request process: work (run_s × cores) arriving in each bin.

    Bins of ``bin_s`` seconds start at the first arrival. ``offered_load`` is that work over
    the bin's capacity P × ``bin_s``; its mean over full bins is the core-weighted ρ.

    Returns
    -------
    pyarrow.Table
        Columns ``bin_start_s``, ``jobs``, ``work_core_s``, ``offered_load``.
    """
    if bin_s <= 0:
        msg = f"bin_s must be positive, not {bin_s}"
        raise ConfigError(msg)
    schema = schema_of(
        pa.field("bin_start_s", pa.float64()),
        pa.field("jobs", pa.int64()),
        pa.field("work_core_s", pa.float64()),
        pa.field("offered_load", pa.float64()),
    )
    if submit_s.size == 0:
        return schema.empty_table()
    start = float(submit_s[0])
    index = ((submit_s - start) // bin_s).astype(np.int64)
    bins = int(index[-1]) + 1
    jobs = np.bincount(index, minlength=bins).astype(np.int64)
    work = np.bincount(index, weights=run_s * job_cores, minlength=bins)
    columns = {
        "bin_start_s": pa.array(start + bin_s * np.arange(bins, dtype=np.float64)),
        "jobs": pa.array(jobs),
        "work_core_s": pa.array(work),
        "offered_load": pa.array(work / (cores * bin_s)),
    }
    return pa.table(columns, schema=schema)
