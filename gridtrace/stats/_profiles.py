"""Arrivals in local time: daily and weekly profiles, and flurries (one user's anomalous burst)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from gridtrace.errors import ConfigError
from gridtrace.stats._columns import F64, I64, TraceArrays, schema_of

__all__ = ["FlurryCriteria", "arrival_profiles", "find_flurries", "local_seconds"]

_DAY = 86_400
_FLURRY_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class FlurryCriteria:
    """When one user's submissions on one local day count as a flurry.

    A flurry is reported, never removed: it is a fact about the log that a reader of the
    statistics (or of a segment) must know.

    Attributes
    ----------
    min_jobs : int, default 100
        The user submitted at least this many jobs that day.
    min_day_share : float, default 0.5
        ... and at least this fraction of the day's arrivals ...
    min_ratio : float, default 2.0
        ... and at least this many times the site's median arrivals per active day, so the day
        itself stands out.
    """

    min_jobs: int = 100
    min_day_share: float = 0.5
    min_ratio: float = 2.0

    def __post_init__(self) -> None:
        if self.min_jobs < 1 or not 0 < self.min_day_share <= 1 or self.min_ratio <= 0:
            msg = (
                "flurry criteria need min_jobs >= 1, 0 < min_day_share <= 1 and min_ratio > 0, "
                f"not {self}"
            )
            raise ConfigError(msg)


def local_seconds(arrays: TraceArrays, zone: str) -> tuple[I64, str]:
    """Seconds since 1970-01-01 on the site's local wall clock, for each arrival.

    Without an origin in the metadata, ``submit_s`` is taken as seconds from a Monday midnight
    UTC (1970-01-05) and the note says so.
    """
    if arrays.origin is None:
        return (arrays.submit + 4 * _DAY).astype(np.int64), (
            "the trace has no origin: times counted from a Monday 00:00 UTC"
        )
    base = arrays.origin.value // 1_000_000_000
    instants = pd.to_datetime(base + np.floor(arrays.submit).astype(np.int64), unit="s", utc=True)
    local = pd.DatetimeIndex(instants).tz_convert(zone).tz_localize(None)
    seconds = np.asarray(local.values.astype("datetime64[s]").astype(np.int64), dtype=np.int64)
    return seconds, f"local time in {zone}"


FLURRY_SCHEMA = schema_of(
    pa.field("user", pa.string()),
    pa.field("day", pa.string()),
    pa.field("jobs", pa.int64()),
    pa.field("day_jobs", pa.int64()),
    pa.field("day_share", pa.float64()),
    pa.field("ratio_to_median_day", pa.float64()),
    pa.field("first_submit_s", pa.float64()),
)
"""The columns of :func:`find_flurries`' table."""


def _hour_occurrences(local_s: I64, zone: str | None) -> tuple[I64, I64]:
    """Return how often each local hour of day and of week occurred between the arrivals.

    Without a zone every wall-clock hour of the span counts once. With one, the span is walked
    in real time (quarter-hour steps, so zones offset by 30 or 45 minutes count right) and each
    local hour counts the real hours it was on the clock: the hour skipped when clocks go
    forward counts 0 that day, the hour repeated when they go back counts 2.
    """
    if local_s.size == 0:
        return np.zeros(24, dtype=np.int64), np.zeros(168, dtype=np.int64)
    first_hour = int(local_s.min()) // 3600 * 3600
    last_hour = (int(local_s.max()) // 3600 + 1) * 3600
    if zone is None:
        hours = np.arange(first_hour // 3600, last_hour // 3600)
        daily = np.bincount(hours % 24, minlength=24)
        weekly = np.bincount((((hours // 24) + 3) % 7) * 24 + hours % 24, minlength=168)
        return daily.astype(np.int64), weekly.astype(np.int64)
    wall = pd.DatetimeIndex(pd.to_datetime([first_hour, last_hour], unit="s"))
    # the earliest real instant of the first hour, the latest of the last one's end
    start = wall[:1].tz_localize(zone, ambiguous=np.array([True]), nonexistent="shift_backward")
    stop = wall[1:].tz_localize(zone, ambiguous=np.array([False]), nonexistent="shift_forward")
    t0 = int(start.as_unit("s").asi8[0])
    t1 = int(stop.as_unit("s").asi8[0])
    quarters = pd.to_datetime(np.arange(t0, t1, 900), unit="s", utc=True)
    local = pd.DatetimeIndex(quarters).tz_convert(zone).tz_localize(None)
    q = np.asarray(local.values.astype("datetime64[s]").astype(np.int64), dtype=np.int64)
    hour = (q // 3600) % 24
    weekday = ((q // _DAY) + 3) % 7
    daily = np.rint(np.bincount(hour, minlength=24) / 4.0).astype(np.int64)
    weekly = np.rint(np.bincount(weekday * 24 + hour, minlength=168) / 4.0).astype(np.int64)
    return daily, weekly


def arrival_profiles(local_s: I64, zone: str | None = None) -> pa.Table:
    """Arrivals by hour of day (24 bins) and hour of week (168 bins, Monday 00:00 first).

    ``jobs`` counts the arrivals in a bin; ``per_hour`` divides them by how often that hour
    occurred between the first and the last arrival, so that a weekday the span covers once is
    not shown as a dip beside weekdays it covers twice. With the site's ``zone``, hours are
    counted in real time: on the day clocks go forward the skipped hour does not occur, on the
    day they go back the repeated hour occurs twice, so daylight-saving changes leave no dip
    or bump in ``per_hour``. Compare bins with ``per_hour``.

    Parameters
    ----------
    local_s : ndarray of int64
        Arrivals as seconds since 1970-01-01 on the local wall clock (:func:`local_seconds`).
    zone : str, optional
        The IANA zone ``local_s`` was converted to; None counts every wall-clock hour once
        (right for UTC and for traces without an origin).

    Returns
    -------
    pyarrow.Table
        Columns ``profile`` ("daily" or "weekly"), ``bin`` (hour), ``jobs``, ``fraction`` (of
        all arrivals), ``occurrences`` (real hours on the clock at that hour in the span) and
        ``per_hour`` (mean arrivals in one occurrence of it; null for an hour the span never
        covers).
    """
    hour = (local_s // 3600) % 24
    weekday = ((local_s // _DAY) + 3) % 7  # 1970-01-01 was a Thursday (Monday = 0)
    daily = np.bincount(hour, minlength=24)
    weekly = np.bincount(weekday * 24 + hour, minlength=168)
    return profiles_of_counts(daily, weekly, int(local_s.size), local_s, zone)


def profiles_of_counts(
    daily: I64, weekly: I64, arrivals: int, local_s: I64, zone: str | None
) -> pa.Table:
    """Return the table of :func:`arrival_profiles` from its bins' counts.

    ``local_s`` needs only the first and the last arrival (the span whose hours are counted);
    the out-of-core characterisation counts the bins chunk by chunk and passes the span.
    """
    total = max(arrivals, 1)
    seen_daily, seen_weekly = _hour_occurrences(local_s, zone)
    jobs = np.concatenate((daily, weekly)).astype(np.int64)
    seen = np.concatenate((seen_daily, seen_weekly)).astype(np.int64)
    per_hour = np.divide(jobs, seen, out=np.zeros(jobs.size), where=seen > 0)
    return pa.table(
        {
            "profile": ["daily"] * 24 + ["weekly"] * 168,
            "bin": pa.array(np.concatenate((np.arange(24), np.arange(168))).astype(np.int32)),
            "jobs": pa.array(jobs),
            "fraction": pa.array(jobs / total),
            "occurrences": pa.array(seen),
            "per_hour": pa.array(per_hour, mask=seen == 0),
        }
    )


def find_flurries(
    arrays: TraceArrays, local_s: I64, criteria: FlurryCriteria | None = None
) -> pa.Table:
    """Find (user, local day) pairs that meet the :class:`FlurryCriteria`.

    Returns
    -------
    pyarrow.Table
        Columns ``user``, ``day`` (local date, ISO), ``jobs``, ``day_jobs``, ``day_share``,
        ``ratio_to_median_day`` and ``first_submit_s``; sorted by day, then user.
    """
    rules = criteria or FlurryCriteria()
    schema = FLURRY_SCHEMA
    if local_s.size == 0:
        return schema.empty_table()
    # (user, day) pairs counted _FLURRY_CHUNK jobs at a time and merged into the pairs seen so
    # far: no copy of the jobs' day and key arrays (about 46 bytes a job at 17 million jobs)
    first_day = int(local_s.min()) // _DAY
    day_totals = np.zeros(int(local_s.max()) // _DAY - first_day + 1, dtype=np.int64)
    users = max(len(arrays.user_labels), 1)
    keys = first_row = counts = np.zeros(0, dtype=np.int64)
    for start in range(0, local_s.size, _FLURRY_CHUNK):
        day_index = local_s[start : start + _FLURRY_CHUNK] // _DAY - first_day
        day_totals += np.bincount(day_index, minlength=day_totals.size)
        chunk = day_index * users + arrays.user_codes[start : start + _FLURRY_CHUNK]
        new_keys, new_first, new_counts = np.unique(chunk, return_index=True, return_counts=True)
        keys, where = np.unique(np.concatenate((keys, new_keys)), return_inverse=True)
        merged = np.full(keys.size, local_s.size, dtype=np.int64)
        np.minimum.at(merged, where, np.concatenate((first_row, new_first + start)))
        total = np.zeros(keys.size, dtype=np.int64)
        np.add.at(total, where, np.concatenate((counts, new_counts)))
        first_row, counts = merged, total
    median_day = float(np.median(day_totals[day_totals > 0]))
    key_day = keys // users
    share = counts / day_totals[key_day]
    ratio = counts / median_day
    hit = (counts >= rules.min_jobs) & (share >= rules.min_day_share) & (ratio >= rules.min_ratio)
    rows = np.flatnonzero(hit)
    dates = pd.to_datetime((key_day[rows] + first_day) * _DAY, unit="s")
    submit: F64 = arrays.submit[first_row[rows]]
    return pa.table(
        {
            "user": [arrays.user_labels[int(k % users)] for k in keys[rows]],
            "day": [d.date().isoformat() for d in dates],
            "jobs": pa.array(counts[rows].astype(np.int64)),
            "day_jobs": pa.array(day_totals[key_day[rows]].astype(np.int64)),
            "day_share": pa.array(share[rows]),
            "ratio_to_median_day": pa.array(ratio[rows]),
            "first_submit_s": pa.array(submit),
        },
        schema=schema,
    )
