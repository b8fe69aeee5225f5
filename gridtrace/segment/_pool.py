"""Machine-pool boundaries: level shifts of the daily host and core counts, confirmed by host sets.

Two sources, the best available is used (``PoolSignal.source`` says which):

``hosts``
    A ``jobs`` table with ``exec_hosts``. Per day, the hosts that ran at least one job (a job
    occupies its hosts on every day from its start to its end) and the cores of those hosts,
    each host counted with its capacity (the peak number of cores its jobs held at once over the
    whole log; a multi-host job spreads its cores evenly). Level shifts of (hosts, cores) found
    by ``ruptures.Pelt(model="l1")`` are confirmed when the Jaccard index of the host sets of the
    weeks either side is below a threshold (default 0.9).
``peak-cores-in-use``
    Only a trace with as-logged waits: per day, the peak number of cores in use (start =
    submit + wait). The capacity only shows when jobs queue, so only *saturated* days count:
    days on which at least 10 jobs started after waiting 600 s or more (quiet days would
    otherwise look like a smaller pool). Level shifts of the saturated days' peaks are
    confirmed when the maximum peak over the saturated days of the windows either side differs
    by at least a relative threshold (default 10 %). This stays a proxy: a scheduler's per-group
    limits can make jobs wait with cores idle.

Without hosts and without waits there is no pool signal; the segmentation says so.

:func:`pool_during` (and :func:`segment_pool`, :func:`trace_pool`) turn the same signals into the
cores P a site had during one span — the pool to simulate a selected segment on — falling back to
the log header's processor count where the jobs name no hosts and never saturated the site.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import ruptures as rpt

from gridtrace.errors import ConfigError, SchemaError
from gridtrace.logs._swf import log_headers, processors_of_headers
from gridtrace.schema import trace_metadata
from gridtrace.stats._columns import F64, I64, TraceArrays

__all__ = [
    "PoolBoundary",
    "PoolEstimate",
    "PoolSignal",
    "pool_boundaries",
    "pool_during",
    "pool_from_jobs",
    "pool_from_trace",
    "segment_pool",
    "select_partition",
    "trace_pool",
]

DAY_S = 86_400.0
Bool2D = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class PoolSignal:
    """Daily pool measurements on the trace's clock.

    Attributes
    ----------
    source : str
        ``"hosts"`` or ``"peak-cores-in-use"``.
    day0_s : float
        Start of day 0 (UTC midnight, or the first submit without an origin), trace seconds.
    hosts, cores : numpy.ndarray
        Per day: hosts seen and their cores (``hosts`` source), or NaN hosts and the peak cores in
        use (proxy source).
    active : numpy.ndarray of bool
        Days that carry the signal: a job running (hosts), or saturated (proxy).
    presence : numpy.ndarray of bool or None
        (days, hosts) matrix: host seen on day; None for the proxy.
    host_names : tuple of str
        Column labels of ``presence``.
    capacity : numpy.ndarray
        Cores of each host (its peak concurrent cores); empty for the proxy.
    host_start_s, host_codes : numpy.ndarray
        For each (job, host) pair of the jobs table: the job's start (trace seconds) and host
        code; used to count the hosts and cores of a segment. Empty for the proxy.
    """

    source: str
    day0_s: float
    hosts: F64
    cores: F64
    active: npt.NDArray[np.bool_]
    presence: Bool2D | None
    host_names: tuple[str, ...]
    capacity: F64
    host_start_s: F64
    host_codes: I64

    def hosts_and_cores(self, t0: float, t1: float) -> tuple[int | None, int | None]:
        """Hosts that started a job in [t0, t1) and the sum of their capacities."""
        if self.source != "hosts":
            return None, None
        rows = (self.host_start_s >= t0) & (self.host_start_s < t1)
        seen = np.unique(self.host_codes[rows])
        return int(seen.size), round(float(self.capacity[seen].sum()))


@dataclass(frozen=True)
class PoolBoundary:
    """A confirmed change of the machine pool, at the start of a day.

    Attributes
    ----------
    time_s : float
        Trace seconds of the day start where the new pool level begins.
    day : int
        Its day index.
    before, after : dict
        Level either side (median daily hosts and cores, or maximum peak cores in use).
    evidence : dict
        The confirming statistic (Jaccard index of the host sets, or the relative change of the
        peaks) and its threshold.
    """

    time_s: float
    day: int
    before: dict[str, float]
    after: dict[str, float]
    evidence: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types."""
        return {
            "time_s": self.time_s,
            "day": self.day,
            "before": self.before,
            "after": self.after,
            "evidence": self.evidence,
        }


def _epoch_seconds(column: pa.ChunkedArray[Any]) -> F64:
    seconds = pc.cast(column.cast(pa.timestamp("s", tz="UTC")), pa.int64())
    filled = cast("pa.ChunkedArray[Any]", pc.fill_null(seconds, pa.scalar(-(2**62), pa.int64())))
    values = np.asarray(filled.to_numpy(), dtype=np.float64)
    values[values <= -(2.0**62)] = np.nan
    return values


def _group_max_cumsum(keys: I64, times: F64, delta: F64, groups: int) -> F64:
    """Per key, the maximum running sum of ``delta`` in time order (negatives first at ties)."""
    if keys.size == 0:
        return np.zeros(groups)
    order = np.lexsort((delta, times, keys))
    k, d = keys[order], delta[order]
    running = np.cumsum(d)
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    before = running[starts] - d[starts]
    lengths = np.diff(np.r_[starts, k.size])
    running -= np.repeat(before, lengths)
    out = np.zeros(groups)
    out[k[starts]] = np.maximum.reduceat(running, starts)
    return out


def pool_from_jobs(jobs: pa.Table, *, origin_s: float, day0_s: float) -> PoolSignal | None:
    """Daily hosts and cores from a ``jobs`` table's ``exec_hosts``; None when no job has hosts.

    Parameters
    ----------
    jobs : pyarrow.Table
        A ``jobs`` table.
    origin_s : float
        The trace origin, Unix seconds: the pool is placed on the trace's clock.
    day0_s : float
        Start of day 0 on the trace's clock.
    """
    started = pc.and_(
        pc.is_valid(jobs.column("start_time")), pc.is_valid(jobs.column("exec_hosts"))
    )
    used = jobs.filter(started)
    if used.num_rows == 0:
        return None
    lists = cast("pa.ListArray[Any]", used.column("exec_hosts").combine_chunks())
    flat = pc.list_flatten(lists)
    if len(flat) == 0:
        return None
    parents = np.asarray(pc.list_parent_indices(lists).to_numpy(), dtype=np.int64)
    encoded = cast("pa.DictionaryArray[Any, Any]", pc.dictionary_encode(flat))
    names = tuple(str(v) for v in encoded.dictionary.to_pylist())
    codes = np.asarray(cast("pa.Array[Any]", encoded.indices).to_numpy(), dtype=np.int64)
    start = _epoch_seconds(used.column("start_time")) - origin_s
    end = _epoch_seconds(used.column("end_time")) - origin_s
    end = np.where(np.isnan(end) | (end < start), start, end)
    alloc = used.column("cores_alloc").cast(pa.float64())
    cores_col = cast("pa.ChunkedArray[Any]", pc.fill_null(alloc, pa.scalar(1.0, pa.float64())))
    job_cores = np.asarray(cores_col.to_numpy(), dtype=np.float64)
    per_job_hosts = np.bincount(parents, minlength=used.num_rows).astype(np.float64)
    share = np.ceil(job_cores[parents] / per_job_hosts[parents])
    pair_start, pair_end = start[parents], end[parents]
    capacity = _group_max_cumsum(
        np.r_[codes, codes],
        np.r_[pair_start, pair_end],
        np.r_[share, -share],
        len(names),
    )
    capacity = np.maximum(capacity, 1.0)
    first_day = np.maximum(np.floor((pair_start - day0_s) / DAY_S), 0).astype(np.int64)
    last_day = np.maximum(np.floor((pair_end - day0_s) / DAY_S), 0).astype(np.int64)
    days = int(last_day.max()) + 1
    hosts = len(names)
    marks = np.bincount(first_day * hosts + codes, minlength=(days + 1) * hosts)
    marks -= np.bincount((last_day + 1) * hosts + codes, minlength=(days + 1) * hosts)
    presence = np.cumsum(marks.reshape(days + 1, hosts), axis=0)[:days] > 0
    return PoolSignal(
        source="hosts",
        day0_s=day0_s,
        hosts=presence.sum(axis=1).astype(np.float64),
        cores=presence.astype(np.float64) @ capacity,
        active=np.asarray(presence.any(axis=1), dtype=np.bool_),
        presence=presence,
        host_names=names,
        capacity=capacity,
        host_start_s=pair_start,
        host_codes=codes,
    )


SATURATED_WAIT_S = 600.0
SATURATED_MIN_JOBS = 10


def pool_from_trace(arrays: TraceArrays, *, day0_s: float) -> PoolSignal | None:
    """Daily peak cores in use on saturated days, from a trace's logged waits.

    None when half the waits are unknown.
    """
    known = ~np.isnan(arrays.wait)
    if known.sum() < max(2, 0.5 * len(arrays)):
        return None
    start = arrays.submit[known] + np.maximum(arrays.wait[known], 0.0)
    end = start + arrays.run[known]
    cores = arrays.cores[known]
    times = np.r_[start, end]
    delta = np.r_[cores, -cores]
    order = np.lexsort((delta, times))
    times, running = times[order], np.cumsum(delta[order])
    event_day = np.maximum(np.floor((times - day0_s) / DAY_S), 0).astype(np.int64)
    days = int(event_day.max()) + 1
    peak = np.zeros(days)
    starts = np.flatnonzero(np.r_[True, event_day[1:] != event_day[:-1]])
    peak[event_day[starts]] = np.maximum.reduceat(running, starts)
    # level carried into each day from the last event before it
    last_before = np.searchsorted(event_day, np.arange(days), side="left") - 1
    carried = np.where(last_before >= 0, running[np.maximum(last_before, 0)], 0.0)
    peak = np.maximum(peak, carried)
    start_day = np.maximum(np.floor((start - day0_s) / DAY_S), 0).astype(np.int64)
    queued = np.bincount(start_day[arrays.wait[known] >= SATURATED_WAIT_S], minlength=days)[:days]
    saturated = (peak > 0) & (queued >= SATURATED_MIN_JOBS)
    return PoolSignal(
        source="peak-cores-in-use",
        day0_s=day0_s,
        hosts=np.full(days, np.nan),
        cores=peak,
        active=np.asarray(saturated, dtype=np.bool_),
        presence=None,
        host_names=(),
        capacity=np.zeros(0),
        host_start_s=np.zeros(0),
        host_codes=np.zeros(0, dtype=np.int64),
    )


def _noise_scale(values: F64) -> float:
    diffs = np.diff(values)
    level = float(np.median(np.abs(values))) if values.size else 0.0
    if diffs.size == 0:
        return max(level * 0.01, 1.0)
    mad = float(np.median(np.abs(diffs - np.median(diffs))))
    return max(1.4826 * mad / math.sqrt(2.0), level * 0.01, 1e-9)


def pool_boundaries(
    signal: PoolSignal,
    *,
    penalty_scale: float = 1.0,
    min_days: int = 7,
    window_days: int = 7,
    jaccard_max: float = 0.9,
    proxy_change_min: float = 0.1,
) -> tuple[list[PoolBoundary], list[dict[str, Any]]]:
    """Find and confirm machine-pool boundaries.

    Parameters
    ----------
    signal : PoolSignal
        From :func:`pool_from_jobs` or :func:`pool_from_trace`.
    penalty_scale : float, default 1
        ``c`` in the Pelt penalty ``c · d · log(days)`` on noise-standardised daily levels.
    min_days : int, default 7
        Shortest pool period, in active days.
    window_days : int, default 7
        Days either side compared by the confirmation (twice that for the proxy).
    jaccard_max : float, default 0.9
        A candidate is confirmed when the host sets either side overlap less than this.
    proxy_change_min : float, default 0.1
        Proxy only: confirmed when the maximum peak either side differs by this relative amount.

    Returns
    -------
    boundaries : list of PoolBoundary
        Confirmed boundaries, in time order.
    candidates : list of dict
        Every candidate with its evidence and whether it was confirmed (for the diagnostics).
    """
    days = np.flatnonzero(signal.active)
    if signal.source == "hosts":
        levels = np.column_stack((signal.hosts[days], signal.cores[days]))
    else:
        levels = signal.cores[days][:, None]
    if days.size < 2 * min_days:
        return [], []
    scaled = levels / np.array([_noise_scale(levels[:, j]) for j in range(levels.shape[1])])
    penalty = penalty_scale * scaled.shape[1] * math.log(days.size)
    ends = rpt.Pelt(model="l1", min_size=min_days, jump=1).fit(scaled).predict(pen=penalty)
    boundaries: list[PoolBoundary] = []
    candidates: list[dict[str, Any]] = []
    for end in ends[:-1]:
        day = int(days[end])
        evidence, before, after, confirmed = _confirm(
            signal, day, window_days, jaccard_max, proxy_change_min
        )
        candidates.append({"day": day, "confirmed": confirmed, **evidence})
        if confirmed:
            time_s = signal.day0_s + day * DAY_S
            boundaries.append(PoolBoundary(time_s, day, before, after, evidence))
    return boundaries, candidates


def _confirm(
    signal: PoolSignal, day: int, window: int, jaccard_max: float, proxy_min: float
) -> tuple[dict[str, Any], dict[str, float], dict[str, float], bool]:
    if signal.presence is not None:
        lo, hi = max(0, day - window), min(signal.presence.shape[0], day + window)
        left = signal.presence[lo:day].any(axis=0)
        right = signal.presence[day:hi].any(axis=0)
        union = int((left | right).sum())
        jaccard = float((left & right).sum() / union) if union else 1.0
        before = {
            "hosts": float(np.median(signal.hosts[lo:day])),
            "cores": float(np.median(signal.cores[lo:day])),
        }
        after = {
            "hosts": float(np.median(signal.hosts[day:hi])),
            "cores": float(np.median(signal.cores[day:hi])),
        }
        evidence = {"signal": "hosts", "jaccard": jaccard, "threshold": jaccard_max}
        return evidence, before, after, jaccard < jaccard_max
    lo, hi = max(0, day - 2 * window), min(signal.cores.size, day + 2 * window)
    left_days = signal.active[lo:day]
    right_days = signal.active[day:hi]
    left_peak = float(signal.cores[lo:day][left_days].max()) if left_days.any() else 0.0
    right_peak = float(signal.cores[day:hi][right_days].max()) if right_days.any() else 0.0
    change = abs(right_peak - left_peak) / max(left_peak, right_peak, 1.0)
    evidence = {"signal": "peak-cores-in-use", "relative_change": change, "threshold": proxy_min}
    before, after = {"peak_cores": left_peak}, {"peak_cores": right_peak}
    return evidence, before, after, change >= proxy_min


# --------------------------------------------------------------------------- pool of one span

TimeLike = pd.Timestamp | str | float | int
"""An instant: a timestamp (naive means UTC), an ISO-8601 string, or Unix seconds."""


@dataclass(frozen=True)
class PoolEstimate:
    """The cores a site had during a span, and where the figure comes from.

    Attributes
    ----------
    cores : int
        P for the span.
    source : str
        ``"hosts"`` (the hosts that ran a job during the span, each with its capacity),
        ``"peak-cores-in-use"`` (the highest number of cores in use on the span's saturated
        days: a lower bound of the pool, tight when the site was full), ``"header"`` (the
        processors the SWF/GWF header states for the whole log) or ``"peak-demand"`` (one site
        of a grid log without start times: the cores in use had every job started at its
        submit, see :func:`select_partition`).
    start, end : pandas.Timestamp
        The span [start, end), UTC (``end`` is None for an open end).
    hosts : int or None
        Hosts seen in the span (``hosts`` source only).
    detail : dict
        The evidence, JSON types: ``jobs_in_span``; per source tried, its figures (daily cores,
        saturated days, peak cores in use over the whole span, the header's count and key);
        without start times, ``peak_demand_without_waits`` (the cores in use had every job
        started at its submit: what a pool without queueing would need).
    note : str
        One line for a report: the figure, its source and its caveat.
    """

    cores: int
    source: str
    start: pd.Timestamp
    end: pd.Timestamp | None
    hosts: int | None
    detail: dict[str, Any]
    note: str

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types."""
        return {
            "cores": self.cores,
            "source": self.source,
            "start": self.start.isoformat(),
            "end": None if self.end is None else self.end.isoformat(),
            "hosts": self.hosts,
            "detail": self.detail,
            "note": self.note,
        }


def _unix(value: TimeLike | None, *, name: str) -> float:
    if value is None:
        return math.inf
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError) as exc:
        msg = f"{name} must be a timestamp, an ISO-8601 string or Unix seconds, not {value!r}"
        raise ConfigError(msg) from exc
    if pd.isna(cast("Any", stamp)):
        msg = f"{name} is not a time: {value!r}"
        raise ConfigError(msg)
    if stamp.tzinfo is None:
        stamp = stamp.tz_localize("UTC")
    return float(stamp.timestamp())


def _stamp(seconds: float) -> pd.Timestamp | None:
    if not math.isfinite(seconds):
        return None
    return pd.Timestamp(seconds, unit="s", tz="UTC")


def _job_cores(table: pa.Table) -> F64:
    alloc = table.column("cores_alloc").cast(pa.float64())
    req = table.column("cores_req").cast(pa.float64())
    filled = pc.fill_null(pc.coalesce(alloc, req), pa.scalar(1.0, pa.float64()))
    return np.asarray(cast("pa.ChunkedArray[Any]", filled).to_numpy(), dtype=np.float64)


def _hosts_in_span(jobs: pa.Table, t0: float, t1: float) -> tuple[dict[str, Any], int, int] | None:
    """Hosts running a job in [t0, t1) and their cores; None when no job names hosts."""
    starts = _epoch_seconds(jobs.column("start_time"))
    finite = starts[np.isfinite(starts)]
    if finite.size == 0:
        return None
    day0 = math.floor(float(finite.min()) / DAY_S) * DAY_S
    signal = pool_from_jobs(jobs, origin_s=0.0, day0_s=day0)
    if signal is None:
        return None
    # the (job, host) pairs in pool_from_jobs's order, with their ends
    started = pc.and_(
        pc.is_valid(jobs.column("start_time")), pc.is_valid(jobs.column("exec_hosts"))
    )
    used = jobs.filter(started)
    lists = cast("pa.ListArray[Any]", used.column("exec_hosts").combine_chunks())
    parents = np.asarray(pc.list_parent_indices(lists).to_numpy(), dtype=np.int64)
    start = _epoch_seconds(used.column("start_time"))[parents]
    end = _epoch_seconds(used.column("end_time"))[parents]
    end = np.where(np.isnan(end) | (end < start), start, end)
    running = (start < t1) & ((end > t0) | (start >= t0))
    seen = np.unique(signal.host_codes[running])
    first_day = max(0, math.floor((t0 - day0) / DAY_S))
    last_day = signal.cores.size if not math.isfinite(t1) else math.ceil((t1 - day0) / DAY_S)
    days = np.arange(first_day, min(last_day, signal.cores.size))
    days = days[signal.active[days]] if days.size else days
    daily = signal.cores[days]
    detail = {
        "hosts": int(seen.size),
        "cores": round(float(signal.capacity[seen].sum())),
        "capacity_rule": "each host's peak concurrent cores over the whole jobs table",
        "days_with_jobs": int(days.size),
        "daily_cores_median": float(np.median(daily)) if daily.size else None,
        "daily_cores_min": float(daily.min()) if daily.size else None,
        "daily_cores_max": float(daily.max()) if daily.size else None,
        "hosts_in_log": len(signal.host_names),
    }
    return detail, int(seen.size), round(float(signal.capacity[seen].sum()))


def _peak_in_use(jobs: pa.Table, t0: float, t1: float) -> dict[str, Any] | None:
    """Peak cores in use per UTC day of [t0, t1), and which days were saturated."""
    start = _epoch_seconds(jobs.column("start_time"))
    end = _epoch_seconds(jobs.column("end_time"))
    ok = np.isfinite(start) & np.isfinite(end)
    if not ok.any():
        return None
    cores = _job_cores(jobs)[ok]
    start, end = start[ok], np.maximum(end[ok], start[ok])
    wait_col = cast(
        "pa.ChunkedArray[Any]",
        pc.fill_null(jobs.column("wait_s").cast(pa.float64()), pa.scalar(math.nan)),
    )
    wait = np.asarray(wait_col.to_numpy(), dtype=np.float64)[ok]
    times = np.r_[start, end]
    delta = np.r_[cores, -cores]
    order = np.lexsort((delta, times))  # a core is freed before it is taken at equal times
    times, running = times[order], np.cumsum(delta[order])
    stop = min(t1, float(times[-1]))
    first = max(t0, float(times[0]))
    if not stop > first:
        return None
    queued_start = np.sort(start[wait >= SATURATED_WAIT_S])
    day = math.floor(first / DAY_S) * DAY_S
    peaks: list[float] = []
    saturated: list[float] = []
    while day < stop:
        lo, hi = max(day, first), min(day + DAY_S, stop)
        i, j = np.searchsorted(times, lo, "left"), np.searchsorted(times, hi, "left")
        level = float(running[i - 1]) if i > 0 else 0.0
        peak = max(level, float(running[i:j].max())) if j > i else level
        queued = np.searchsorted(queued_start, hi, "left") - np.searchsorted(
            queued_start, lo, "left"
        )
        peaks.append(peak)
        if queued >= SATURATED_MIN_JOBS and peak > 0:
            saturated.append(peak)
        day += DAY_S
    return {
        "days": len(peaks),
        "saturated_days": len(saturated),
        "saturated_rule": (
            f"at least {SATURATED_MIN_JOBS} jobs started after waiting {SATURATED_WAIT_S:.0f} s "
            "or more"
        ),
        "peak_saturated": max(saturated) if saturated else None,
        "peak_all_days": max(peaks),
        "saturated_daily_peak_median": float(np.median(saturated)) if saturated else None,
    }


def _jobs_in_span(jobs: pa.Table, t0: float, t1: float) -> int:
    """Jobs submitted in [t0, t1) or running during it."""
    submit = _epoch_seconds(jobs.column("submit_time"))
    start = _epoch_seconds(jobs.column("start_time"))
    end = _epoch_seconds(jobs.column("end_time"))
    end = np.where(np.isnan(end), start, end)
    submitted = (submit >= t0) & (submit < t1)
    running = (start < t1) & ((end > t0) | (start >= t0))
    return int(np.count_nonzero(submitted | running))


def _peak_demand(jobs: pa.Table, t0: float, t1: float) -> float | None:
    """Peak cores in use in [t0, t1) had every job started at its submit (no start times)."""
    submit = _epoch_seconds(jobs.column("submit_time"))
    run_col = pc.fill_null(jobs.column("run_s").cast(pa.float64()), pa.scalar(math.nan))
    run = np.asarray(cast("pa.ChunkedArray[Any]", run_col).to_numpy(), dtype=np.float64)
    ok = np.isfinite(submit) & np.isfinite(run)
    if not ok.any():
        return None
    cores = _job_cores(jobs)[ok]
    begin, finish = submit[ok], submit[ok] + np.maximum(run[ok], 0.0)
    times = np.r_[begin, finish]
    delta = np.r_[cores, -cores]
    order = np.lexsort((delta, times))
    times, running = times[order], np.cumsum(delta[order])
    i, j = np.searchsorted(times, t0, "left"), np.searchsorted(times, t1, "left")
    level = float(running[i - 1]) if i > 0 else 0.0
    return max(level, float(running[i:j].max())) if j > i else level


def pool_during(
    jobs: pa.Table,
    start: TimeLike,
    end: TimeLike | None,
    *,
    min_saturated_days: int = 1,
    use_header: bool = True,
) -> PoolEstimate:
    """Return the cores a site had during [start, end), from a ``jobs`` table.

    The first source that applies wins, and :attr:`PoolEstimate.source` says which:

    1. ``hosts``: the hosts that ran a job at some time in the span (a job started before and
       still running counts), each counted with its capacity (its peak concurrent cores over the
       whole table, a multi-host job spreading its cores evenly — as :func:`pool_from_jobs`).
    2. ``peak-cores-in-use``: without hosts, the highest number of cores in use (start to end) on
       the span's *saturated* UTC days (at least 10 jobs started after waiting 600 s or more),
       when there are at least ``min_saturated_days``. A lower bound of the pool, tight when the
       site was full; per-group limits of the site's scheduler can keep it below the pool.
    3. ``header``: the processors the SWF/GWF header states (``MaxProcs``, else ``MaxNodes``;
       :func:`gridtrace.logs.processors_of_headers`) — the whole log's machine, not the span's.

    Parameters
    ----------
    jobs : pyarrow.Table
        A ``jobs`` table (as read, with its header metadata for SWF/GWF logs).
    start, end : timestamp, ISO-8601 string or Unix seconds
        The span; a naive timestamp is UTC. ``end`` None leaves it open.
    min_saturated_days : int, default 1
        Fewest saturated days for the peak-in-use proxy.
    use_header : bool, default True
        False for one site's jobs cut from a grid log (:func:`select_partition`), whose header
        counts every site's processors: instead of the header, the last source is then
        ``peak-demand``, the peak cores in use in the span had every job started at its submit
        (the pool at which no job of the span waits; no smaller pool is supported by the log).

    Returns
    -------
    PoolEstimate

    Raises
    ------
    ConfigError
        If the span is empty or no job was submitted or ran in it, or no source applies (no
        hosts, no saturated day in the span, no header count).
    """
    t0, t1 = _unix(start, name="start"), _unix(end, name="end")
    if not t1 > t0:
        msg = f"the span must have end > start, not [{start!r}, {end!r})"
        raise ConfigError(msg)
    if min_saturated_days < 1:
        msg = f"min_saturated_days must be at least 1, not {min_saturated_days}"
        raise ConfigError(msg)
    span = pd.Timestamp(t0, unit="s", tz="UTC"), _stamp(t1)
    jobs_in_span = _jobs_in_span(jobs, t0, t1)
    if jobs_in_span == 0:
        msg = (
            f"no job was submitted or ran in [{start!r}, {end!r}): the span has no pool to measure"
        )
        raise ConfigError(msg)
    detail: dict[str, Any] = {"jobs_in_span": jobs_in_span}
    log_format, headers = log_headers(jobs)
    stated = processors_of_headers(headers) if headers else None
    if stated is not None:
        detail["header"] = {"format": log_format, "processors": stated[0], "key": stated[1]}
    found = _hosts_in_span(jobs, t0, t1)
    if found is not None:
        host_detail, hosts, cores = found
        detail["hosts"] = host_detail
        if hosts:
            note = (
                f"{cores} cores on the {hosts} hosts that ran jobs in the span "
                "(each host counted with its peak concurrent cores)"
            )
            return PoolEstimate(cores, "hosts", *span, hosts, detail, note)
    proxy = _peak_in_use(jobs, t0, t1)
    if proxy is not None:
        detail["peak-cores-in-use"] = proxy
        if proxy["saturated_days"] >= min_saturated_days:
            cores = round(float(proxy["peak_saturated"]))
            note = (
                f"{cores} cores: the peak in use on {proxy['saturated_days']} saturated day(s) "
                "of the span (a lower bound of the pool, tight when the site was full)"
            )
            if stated is not None and cores > stated[0]:
                note += f"; above the header's {stated[0]} processors"
            return PoolEstimate(cores, "peak-cores-in-use", *span, None, detail, note)
    else:
        demand = _peak_demand(jobs, t0, t1)
        if demand is not None:
            detail["peak_demand_without_waits"] = demand
    if not use_header:
        demand = _peak_demand(jobs, t0, t1)
        if demand is not None and demand >= 1:
            cores = round(demand)
            detail["peak_demand_without_waits"] = demand
            note = (
                f"{cores} cores: the peak in use had every job of the span started at its submit "
                "(one site of a grid log without start times or hosts; the header's count is the "
                "whole grid's)"
            )
            return PoolEstimate(cores, "peak-demand", *span, None, detail, note)
    if stated is not None and use_header:
        note = (
            f"{stated[0]} cores: the log header's {stated[1]} (the whole log's machine; no hosts "
            "and no saturated day to measure the span's own pool)"
        )
        return PoolEstimate(stated[0], "header", *span, None, detail, note)
    msg = (
        "no pool for the span: the jobs name no hosts in it, fewer than "
        f"{min_saturated_days} of its days were saturated, and the table carries no SWF/GWF "
        "header count; give P explicitly"
    )
    raise ConfigError(msg)


def segment_pool(jobs: pa.Table, segments: pa.Table, segment_id: int) -> PoolEstimate:
    """Return the pool of one row of a ``segments`` table (:func:`pool_during` on its span).

    The span is [start_time, end_time) of the row, open-ended for the last segment (its
    ``end_time`` is its own last submit, the start of no next segment).

    Raises
    ------
    ConfigError
        If there is no such segment or its times are unknown (a trace without origin).
    """
    ids = segments.column("segment_id").to_pylist()
    if segment_id not in ids:
        msg = f"no segment {segment_id}; segments are {ids}"
        raise ConfigError(msg)
    row = segments.slice(ids.index(segment_id), 1).to_pylist()[0]
    if row["start_time"] is None:
        msg = f"segment {segment_id} has no start time (the trace has no origin)"
        raise ConfigError(msg)
    last = int(segment_id) == max(int(cast("int", i)) for i in ids)
    return pool_during(jobs, row["start_time"], None if last else row["end_time"])


def trace_pool(jobs: pa.Table, trace: pa.Table, *, use_header: bool = True) -> PoolEstimate:
    """Return the pool during a trace's arrivals (e.g. a segment cut by ``segment_trace``).

    The span runs from the trace's first submit to one second after its last (submit times are
    whole seconds in the logs), placed on the clock by the trace metadata's origin.
    ``use_header`` as in :func:`pool_during` (False for one site of a grid log).

    Raises
    ------
    ConfigError
        If the trace has no metadata or no jobs.
    """
    try:
        origin = pd.Timestamp(trace_metadata(trace)["origin"]).timestamp()
    except SchemaError as exc:
        msg = "the trace has no metadata (origin) to place its submit times"
        raise ConfigError(msg) from exc
    if trace.num_rows == 0:
        msg = "the trace has no jobs"
        raise ConfigError(msg)
    submit = np.asarray(trace.column("submit_s").to_numpy(), dtype=np.float64)
    return pool_during(
        jobs,
        origin + float(submit.min()),
        origin + float(submit.max()) + 1.0,
        use_header=use_header,
    )


def select_partition(jobs: pa.Table, trace: pa.Table, partition: str) -> tuple[pa.Table, pa.Table]:
    """Keep one site (partition) of a grid log: its jobs and their rows of the trace.

    A grid log such as LCG-2005 (SWF) holds many sites; its ``partition`` field names the site
    (the computing element, e.g. ``lxgate13.cern.ch``; the SWF header's ``Partition:`` lines).
    Simulating the whole log on the sum of the sites' processors puts no job in any queue; one
    site on its own pool does (its pool: :func:`trace_pool` with ``use_header=False``).

    Parameters
    ----------
    jobs : pyarrow.Table
        The ``jobs`` table of the log, with its ``partition`` column.
    trace : pyarrow.Table
        A trace of the same log, with its ``partition`` column; its metadata is kept.
    partition : str
        The site's partition name, as in the ``partition`` column.

    Returns
    -------
    (pyarrow.Table, pyarrow.Table)
        The site's jobs and trace rows, in their original order.

    Raises
    ------
    ConfigError
        If either table has no ``partition`` column or no job of the trace ran on ``partition``.
    """
    for name, table in (("jobs", jobs), ("trace", trace)):
        if "partition" not in table.column_names:
            msg = f"the {name} table has no partition column: no site to select"
            raise ConfigError(msg)

    def keep(table: pa.Table) -> pa.Table:
        names = table.column("partition").to_pylist()
        return table.filter(pa.array([name == partition for name in names], pa.bool_()))

    site_jobs, site_trace = keep(jobs), keep(trace)
    if site_trace.num_rows == 0:
        names = pc.unique(trace.column("partition")).to_pylist()[:10]
        msg = f"no job of the trace ran on partition {partition!r} (some partitions: {names})"
        raise ConfigError(msg)
    return site_jobs, site_trace
