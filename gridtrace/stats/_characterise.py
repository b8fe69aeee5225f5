"""``characterise``: every workload statistic of a trace (or a time window of it) in one pass."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError
from gridtrace.stats._columns import (
    DEFAULT_TAU_S,
    F64,
    I64,
    TraceArrays,
    json_safe,
    resolve_zone,
    schema_of,
    trace_arrays,
)
from gridtrace.stats._measures import (
    core_weighted_load,
    distribution_summary,
    idc_curve,
    interarrival_acf,
    log_bin_edges,
    log_histogram,
    service_requests,
    utilisation_factor,
)
from gridtrace.stats._profiles import (
    FlurryCriteria,
    arrival_profiles,
    find_flurries,
    local_seconds,
)

__all__ = ["WorkloadStats", "characterise", "characterise_arrays", "shares", "shares_of_totals"]

logger = library_logger(__name__)

_DAY = 86_400
_NONE: F64 = np.zeros(0)
"""Stands for an array released once its figures are computed."""
_NONE_CODES: I64 = np.zeros(0, dtype=np.int64)
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]
_LOCAL_CHUNK = 1 << 20
"""Jobs taken at a time by the figures computed in chunks (local times, W, flurry counts)."""

QUICK_WAIT_S = 120.0
"""The research's "waited under two minutes" threshold for interactive jobs."""

TOP_USERS = 20


@dataclass(frozen=True)
class WorkloadStats:
    """What a workload is: the statistics of a trace or of a time window of it.

    Attributes
    ----------
    site : str
        From the trace metadata (``"unknown"`` without it).
    window : tuple of float
        The [start, end) window of ``submit_s`` characterised, seconds from the trace origin.
    jobs : int
        Jobs in the window.
    span_s : float
        Last minus first submit time.
    cores : int
        The site's cores P used for U and ρ; ``cores_source`` says where it came from.
    tau_s : float
        Interactive threshold; ``tau_source`` says where it came from.
    interactive_fraction : float
        Share of jobs with ``run_s <= tau_s``.
    arrival_rate_per_s, mean_interarrival_s, mean_run_s : float
        λ = (jobs − 1) / span, its inverse, and the mean runtime.
    utilisation : float
        U = mean runtime / mean inter-arrival / P.
    rho : float
        Core-weighted ρ = E[run × cores] / mean inter-arrival / P.
    runtime : dict
        ``{"class": {"interactive"|"batch"|"all": summary}, "vo": {vo: summary}}``, each summary
        the count, mean, std, SCV, min, max and quantiles p05…p99 of ``run_s``.
    interarrival : dict
        The same summary for the inter-arrival times, plus the share of zero gaps.
    vo_shares, vo_work_shares : dict
        Share of jobs and of core-seconds per VO, largest first.
    users : int
        Distinct users; ``user_shares`` holds the largest ``TOP_USERS`` by jobs.
    timezone, timezone_source : str
        The zone of the daily and weekly profiles and of the flurry days, and its source.
    wait : dict or None
        Per class, the as-logged wait (mean, median, p95, max), mean and median
        W = run / (run + wait) and the share that waited under 120 s; None when no job has a
        logged wait. A job with run = wait = 0 has W = 1 (it did not wait).
    notes : tuple of str
        How inferred values were obtained, and anything the reader must know.
    runtime_hist, interarrival_hist : pyarrow.Table
        Log-scale histograms: ``group_kind`` ("class" or "vo"; "all" for inter-arrivals),
        ``group``, ``bin_lo_s``, ``bin_hi_s``, ``jobs``.
    service_requests : pyarrow.Table
        See :func:`gridtrace.stats.service_requests`.
    idc, acf, profiles, flurries : pyarrow.Table
        See :func:`idc_curve`, :func:`interarrival_acf`, :func:`arrival_profiles`,
        :func:`find_flurries`.
    """

    site: str
    window: tuple[float, float]
    jobs: int
    span_s: float
    cores: int
    cores_source: str
    tau_s: float
    tau_source: str
    interactive_fraction: float
    arrival_rate_per_s: float
    mean_interarrival_s: float
    mean_run_s: float
    utilisation: float
    rho: float
    runtime: Mapping[str, Any]
    interarrival: Mapping[str, Any]
    vo_shares: Mapping[str, float]
    vo_work_shares: Mapping[str, float]
    users: int
    user_shares: Mapping[str, float]
    timezone: str
    timezone_source: str
    wait: Mapping[str, Any] | None
    notes: tuple[str, ...]
    runtime_hist: pa.Table = field(repr=False)
    interarrival_hist: pa.Table = field(repr=False)
    service_requests: pa.Table = field(repr=False)
    idc: pa.Table = field(repr=False)
    acf: pa.Table = field(repr=False)
    profiles: pa.Table = field(repr=False)
    flurries: pa.Table = field(repr=False)

    _TABLES = (
        "runtime_hist",
        "interarrival_hist",
        "service_requests",
        "idc",
        "acf",
        "profiles",
        "flurries",
    )

    def to_dict(self, *, curves: bool = True) -> dict[str, Any]:
        """Plain JSON types (NaN becomes null); with ``curves``, the tables as lists of rows."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            if name in self._TABLES:
                continue
            value = getattr(self, name)
            out[name] = dict(value) if isinstance(value, Mapping) else value
        if curves:
            out["curves"] = {name: getattr(self, name).to_pylist() for name in self._TABLES}
        safe: dict[str, Any] = json_safe(out)
        return safe


def shares(codes: I64, labels: tuple[str, ...], weights: F64 | None = None) -> dict[str, float]:
    """Share of each label (by count, or by ``weights``), largest first, ties by label."""
    if codes.size == 0:
        return {}
    return shares_of_totals(np.bincount(codes, weights=weights, minlength=len(labels)), labels)


def shares_of_totals(totals: np.ndarray[Any, Any], labels: tuple[str, ...]) -> dict[str, float]:
    """:func:`shares` from each label's total (jobs, or summed weights), indexed by code."""
    whole = float(totals.sum())
    if not whole > 0:
        return {}
    order = sorted(range(len(labels)), key=lambda i: (-totals[i], labels[i]))
    return {labels[i]: float(totals[i] / whole) for i in order if totals[i] > 0}


def _tau(tau_s: float | None, metadata: Mapping[str, Any]) -> tuple[float, str]:
    if tau_s is not None:
        source = "argument"
    elif "tau_s" in metadata:
        tau_s, source = float(metadata["tau_s"]), "metadata"
    else:
        tau_s, source = DEFAULT_TAU_S, "default (900 s)"
    if not tau_s > 0:
        msg = f"tau_s must be positive, not {tau_s}"
        raise ConfigError(msg)
    return float(tau_s), source


def _cores(cores: int | None, metadata: Mapping[str, Any]) -> tuple[int, str]:
    if cores is not None:
        value, source = int(cores), "argument"
    elif "cores" in metadata:
        value = int(metadata["cores"])
        how = metadata.get("provenance", {})
        how = how.get("cores_estimate") if isinstance(how, dict) else None
        source = f"metadata ({how})" if how else "metadata"
    else:
        msg = "the trace has no cores P in its metadata; pass cores="
        raise ConfigError(msg)
    if value < 1:
        msg = f"cores must be at least 1, not {value}"
        raise ConfigError(msg)
    return value, source


def _window(
    arrays: TraceArrays, window: tuple[float, float] | None
) -> tuple[TraceArrays, tuple[float, float]]:
    if window is None:
        end = float(arrays.submit[-1]) if len(arrays) else 0.0
        start = float(arrays.submit[0]) if len(arrays) else 0.0
        return arrays, (start, math.nextafter(end, math.inf))
    start, end = float(window[0]), float(window[1])
    if not end > start:
        msg = f"window must have end > start, not {window}"
        raise ConfigError(msg)
    lo, hi = np.searchsorted(arrays.submit, [start, end], side="left")
    return arrays.take(slice(int(lo), int(hi))), (start, end)


def _histogram_rows(
    kind: str, group: str, values: F64, edges: F64, rows: dict[str, list[Any]]
) -> None:
    counts = log_histogram(values, edges)
    rows["group_kind"].extend([kind] * counts.size)
    rows["group"].extend([group] * counts.size)
    rows["bin_lo_s"].extend(edges[:-1].tolist())
    rows["bin_hi_s"].extend(edges[1:].tolist())
    rows["jobs"].extend(counts.tolist())


_HIST_SCHEMA = schema_of(
    pa.field("group_kind", pa.string()),
    pa.field("group", pa.string()),
    pa.field("bin_lo_s", pa.float64()),
    pa.field("bin_hi_s", pa.float64()),
    pa.field("jobs", pa.int64()),
)


def _classes(interactive: np.ndarray[Any, np.dtype[np.bool_]]) -> dict[str, Any]:
    return {"interactive": interactive, "batch": ~interactive, "all": slice(None)}


def _responsiveness(run: F64, wait: F64, rows: BoolArray | None, jobs: int) -> F64:
    """W = run / (run + wait) of the ``rows`` (clipped waits; 1 when both are 0), in order.

    Computed ``_LOCAL_CHUNK`` jobs at a time, element by element as a whole-array expression
    would, so that no temporary array of the class's size is made besides the result.
    """
    out = np.empty(jobs)
    done = 0
    for first in range(0, run.size, _LOCAL_CHUNK):
        part = slice(first, first + _LOCAL_CHUNK)
        keep = slice(None) if rows is None else rows[part]
        r = run[part][keep]
        total = r + np.maximum(wait[part][keep], 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[done : done + r.size] = np.where(total > 0, r / total, 1.0)
        done += r.size
    return out


def _wait(
    arrays: TraceArrays, interactive: np.ndarray[Any, np.dtype[np.bool_]]
) -> dict[str, Any] | None:
    known = ~np.isnan(arrays.wait)
    jobs_with_wait = int(np.count_nonzero(known))
    if not jobs_with_wait:
        return None
    out: dict[str, Any] = {"jobs_with_wait": jobs_with_wait}
    everything = jobs_with_wait == known.size
    for name, rows in _classes(interactive).items():
        if isinstance(rows, slice):
            mask = None if everything else known
        else:
            mask = rows if everything else known & rows
        jobs = known.size if mask is None else int(np.count_nonzero(mask))
        if not jobs:
            out[name] = {"jobs": 0}
            continue
        # the means first, in the trace's order; then the median and p95 partition in place
        # (they depend on the values only): one array of the class at a time
        wait = arrays.wait.copy() if mask is None else arrays.wait[mask]
        np.maximum(wait, 0.0, out=wait)
        summary: dict[str, Any] = {
            "jobs": jobs,
            "wait_mean_s": float(wait.mean()),
            "wait_median_s": math.nan,
            "wait_p95_s": math.nan,
            "wait_max_s": float(wait.max()),
            "responsiveness_mean": math.nan,
            "responsiveness_median": math.nan,
            "waited_under_120s": float(np.mean(wait < QUICK_WAIT_S)),
        }
        summary["wait_median_s"] = float(np.median(wait, overwrite_input=True))
        summary["wait_p95_s"] = float(np.quantile(wait, 0.95, overwrite_input=True))
        del wait
        responsiveness = _responsiveness(arrays.run, arrays.wait, mask, jobs)
        summary["responsiveness_mean"] = float(responsiveness.mean())
        summary["responsiveness_median"] = float(np.median(responsiveness, overwrite_input=True))
        out[name] = summary
        del responsiveness, mask
    negative = int(np.count_nonzero(arrays.wait < 0))
    if negative:
        out["negative_waits_counted_as_zero"] = negative
    return out


ACF_FFT_MAX = 1 << 23
"""Largest FFT (points) the inter-arrival ACF is computed with.

The FFT of :func:`interarrival_acf` takes about four arrays of float64 the size of the next
power of two above twice the jobs (2^26 points, 2 GiB, at 17 million jobs; 190 MB at 2
million, measured). Above this size (about 4.2 million jobs) the same
biased autocovariance is summed lag by lag (``np.dot`` of the centred gaps with themselves
shifted), which needs no memory beyond the centred gaps; the two differ by rounding only (the
sums are taken in another order).
"""


def _acf(submit: F64, lags: int) -> pa.Table:
    """Compute :func:`interarrival_acf`, in bounded memory for long traces."""
    size = 1 << int(2 * (submit.size - 1) - 1).bit_length() if submit.size > 1 else 0
    if size <= ACF_FFT_MAX:
        return interarrival_acf(submit, lags=lags)
    centred = np.diff(submit)
    centred -= centred.mean()
    lags = min(lags, centred.size - 1)
    autocov = np.array(
        [float(np.dot(centred, centred))]
        + [float(np.dot(centred[:-k], centred[k:])) for k in range(1, lags + 1)]
    )
    schema = schema_of(pa.field("lag", pa.int64()), pa.field("acf", pa.float64()))
    if not autocov[0] > 0:
        return schema.empty_table()
    lag = pa.array(np.arange(1, lags + 1, dtype=np.int64))
    return pa.table({"lag": lag, "acf": pa.array(autocov[1:] / autocov[0])}, schema=schema)


def _local_seconds(arrays: TraceArrays, zone: str) -> tuple[I64, str]:
    """:func:`local_seconds` of the arrivals, converted ``_LOCAL_CHUNK`` at a time."""
    out = np.empty(len(arrays), dtype=np.int64)
    clock = local_seconds(arrays.take(slice(0, 0)), zone)[1]
    for first in range(0, len(arrays), _LOCAL_CHUNK):
        rows = slice(first, first + _LOCAL_CHUNK)
        out[rows] = local_seconds(arrays.take(rows), zone)[0]
    return out, clock


def characterise(
    trace: pa.Table,
    *,
    window: tuple[float, float] | None = None,
    cores: int | None = None,
    tau_s: float | None = None,
    tz: str | None = None,
    bin_s: float = 10_000.0,
    idc_points: int = 30,
    acf_lags: int = 50,
    flurries: FlurryCriteria | None = None,
) -> WorkloadStats:
    """Characterise a trace, or the jobs submitted in a window of it.

    Parameters
    ----------
    trace : pyarrow.Table
        A ``trace`` table sorted by ``submit_s`` (metadata as written by ``build_trace``).
    window : (float, float), optional
        Keep jobs with ``start <= submit_s < end`` (seconds from the trace origin).
    cores : int, optional
        The site's cores P; default the trace metadata's ``cores``.
    tau_s : float, optional
        Interactive threshold; default the metadata's ``tau_s``, else 900 s. ``interactive`` is
        recomputed as ``run_s <= tau_s``.
    tz : str, optional
        IANA zone of the daily and weekly profiles; default a zone named in the metadata, else
        UTC (``timezone_source`` says which).
    bin_s : float, default 10,000
        Bin of the service-request process, seconds.
    idc_points, acf_lags : int
        Grid points of the IDC curve and lags of the inter-arrival ACF.
    flurries : FlurryCriteria, optional
        When a user's day is a flurry (reported, never removed).

    Returns
    -------
    WorkloadStats

    Raises
    ------
    ConfigError
        If P is neither given nor in the metadata, or a parameter is out of range.
    SchemaError
        If the trace lacks ``submit_s`` or ``run_s`` or is not sorted.
    """
    return characterise_arrays(
        trace_arrays(trace),
        window=window,
        cores=cores,
        tau_s=tau_s,
        tz=tz,
        bin_s=bin_s,
        idc_points=idc_points,
        acf_lags=acf_lags,
        flurries=flurries,
    )


def characterise_arrays(
    everything: TraceArrays | list[TraceArrays],
    *,
    window: tuple[float, float] | None = None,
    cores: int | None = None,
    tau_s: float | None = None,
    tz: str | None = None,
    bin_s: float = 10_000.0,
    idc_points: int = 30,
    acf_lags: int = 50,
    flurries: FlurryCriteria | None = None,
) -> WorkloadStats:
    """Characterise the jobs of a trace's arrays: the figures of :func:`characterise`.

    :func:`characterise` reads a trace table into :class:`TraceArrays` and calls this;
    :func:`gridtrace.stats.characterise_parquet` builds the arrays from a ``jobs`` file
    batch by batch and calls it too, so both paths compute every figure by the same code.
    The arrays may hold ``cores`` and the codes in narrower integer types: every use widens
    them exactly. The figures are computed one after the other, each taking a few temporary
    arrays of the jobs' size at most (the largest, the IDC curve's, about 37 bytes a job at 17
    million jobs), never a copy of the whole.

    Parameters
    ----------
    everything : TraceArrays or list of one TraceArrays
        The trace's arrays, sorted by ``submit``. Given in a one-item list, which this empties,
        the arrays are released as soon as the figures that need them are computed (wait,
        then runtimes, cores and VOs, then the arrival times and users), so that the peak is
        the arrays plus the largest figure's temporary arrays.
    window, cores, tau_s, tz, bin_s, idc_points, acf_lags, flurries
        As in :func:`characterise`.

    Returns
    -------
    WorkloadStats
    """
    # in a list, the arrays are ours alone: each goes once its figures are done
    whole = everything.pop() if isinstance(everything, list) else everything
    del everything
    arrays, bounds = _window(whole, window)
    metadata = whole.metadata
    del whole
    p, cores_source = _cores(cores, metadata)
    tau, tau_source = _tau(tau_s, metadata)
    zone, zone_source = resolve_zone(tz, metadata)
    notes: list[str] = []
    n = len(arrays)
    span = float(arrays.submit[-1] - arrays.submit[0]) if n else 0.0
    mean_gap = span / (n - 1) if n > 1 else math.nan
    if n < 2:
        notes.append(f"only {n} job(s): rates, U and ρ are undefined")
    interactive = arrays.run <= tau
    wait = _wait(arrays, interactive)
    arrays = replace(arrays, wait=_NONE)

    run = arrays.run
    runtime: dict[str, Any] = {"class": {}, "vo": {}}
    edges = log_bin_edges(float(run.max()) if n else 1.0)
    hist_rows: dict[str, list[Any]] = {k: [] for k in _HIST_SCHEMA.names}
    for name, rows in _classes(interactive).items():
        values = run[rows]
        runtime["class"][name] = distribution_summary(values)
        _histogram_rows("class", name, values, edges, hist_rows)
        del values  # one class's copy at a time
    interactive_fraction = float(interactive.mean()) if n else math.nan
    del interactive
    vo_shares = shares(arrays.vo_codes, arrays.vo_labels)
    for vo in vo_shares:
        values = run[arrays.vo_codes == arrays.vo_labels.index(vo)]
        runtime["vo"][vo] = distribution_summary(values)
        _histogram_rows("vo", vo, values, edges, hist_rows)
        del values
    work = run * arrays.cores
    vo_work_shares = shares(arrays.vo_codes, arrays.vo_labels, work)
    del work
    submit = arrays.submit
    mean_run_s = float(run.mean()) if n else math.nan
    utilisation = utilisation_factor(run, submit, p)
    rho = core_weighted_load(run, arrays.cores, submit, p)
    requests = service_requests(submit, run, arrays.cores, cores=p, bin_s=bin_s)
    del run
    arrays = replace(arrays, run=_NONE, cores=_NONE, vo_codes=_NONE_CODES)

    local_s, clock = _local_seconds(arrays, zone)
    if arrays.origin is None:
        notes.append(clock)
    profiles = arrival_profiles(local_s, None if arrays.origin is None else zone)
    flurry_table = find_flurries(arrays, local_s, flurries)
    del local_s
    if flurry_table.num_rows:
        notes.append(
            f"{flurry_table.num_rows} flurry day(s) found (reported in 'flurries', not removed)"
        )
    user_all = shares(arrays.user_codes, arrays.user_labels)
    del arrays  # the submit times are left

    ia_rows: dict[str, list[Any]] = {k: [] for k in _HIST_SCHEMA.names}
    gaps = np.diff(submit)
    _histogram_rows(
        "all", "all", gaps, log_bin_edges(float(gaps.max()) if gaps.size else 1.0), ia_rows
    )
    interarrival: dict[str, Any] = distribution_summary(gaps)
    interarrival["zero_share"] = float(np.mean(gaps == 0)) if gaps.size else math.nan
    del gaps
    idc = idc_curve(submit, points=idc_points)
    acf = _acf(submit, acf_lags)
    del submit

    notes.append(f"{cores_source}: P = {p}")
    return WorkloadStats(
        site=str(metadata.get("site", "unknown")),
        window=bounds,
        jobs=n,
        span_s=span,
        cores=p,
        cores_source=cores_source,
        tau_s=tau,
        tau_source=tau_source,
        interactive_fraction=interactive_fraction,
        arrival_rate_per_s=1.0 / mean_gap if mean_gap > 0 else math.nan,
        mean_interarrival_s=mean_gap,
        mean_run_s=mean_run_s,
        utilisation=utilisation,
        rho=rho,
        runtime=runtime,
        interarrival=interarrival,
        vo_shares=vo_shares,
        vo_work_shares=vo_work_shares,
        users=len(user_all),
        user_shares=dict(list(user_all.items())[:TOP_USERS]),
        timezone=zone,
        timezone_source=zone_source,
        wait=wait,
        notes=tuple(notes),
        runtime_hist=pa.table(hist_rows, schema=_HIST_SCHEMA),
        interarrival_hist=pa.table(ia_rows, schema=_HIST_SCHEMA),
        service_requests=requests,
        idc=idc,
        acf=acf,
        profiles=profiles,
        flurries=flurry_table,
    )
