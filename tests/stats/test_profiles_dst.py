"""Local-time profiles across daylight-saving changes: no dip at the skipped hour, no bump at
the repeated one (issue 13, item 6)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from gridtrace.schema import conform, with_trace_metadata
from gridtrace.stats import arrival_profiles, characterise

ZONE = "Europe/Paris"


def steady_trace(origin: str, days: int) -> pa.Table:
    """One arrival every 15 real minutes for ``days`` days from ``origin`` (a Monday, UTC)."""
    submit = np.arange(0.0, days * 86_400.0, 900.0)
    n = submit.size
    table = pa.table(
        {
            "job_id": pa.array(range(n), pa.int64()),
            "submit_s": pa.array(submit, pa.float64()),
            "run_s": pa.array([60.0] * n, pa.float64()),
            "cores": pa.array([1] * n, pa.int32()),
            "vo": pa.array(["a"] * n, pa.string()),
            "user": pa.array(["u"] * n, pa.string()),
            "interactive": pa.array([True] * n),
            "wait_s": pa.array([None] * n, pa.float64()),
        }
    )
    return with_trace_metadata(
        conform(table, "trace"), origin=origin, site="dst", cores=4, tau_s=900.0, provenance={}
    )


def rows(profiles: pa.Table, kind: str) -> list[dict[str, object]]:
    return [r for r in profiles.to_pylist() if r["profile"] == kind]


@pytest.mark.parametrize(
    ("origin", "hour_2"),
    [
        # 2024-03-31 02:00 CET -> 03:00 CEST: local 02:00 occurs on 13 of the 14 days
        ("2024-03-25T00:00:00+00:00", 13),
        # 2024-10-27 03:00 CEST -> 02:00 CET: local 02:00 occurs twice that day, 15 times
        ("2024-10-21T00:00:00+00:00", 15),
    ],
)
def test_a_steady_arrival_rate_gives_a_flat_profile_across_a_dst_change(
    origin: str, hour_2: int
) -> None:
    stats = characterise(steady_trace(origin, 14), tz=ZONE)
    assert stats.timezone == ZONE
    daily = rows(stats.profiles, "daily")
    assert daily[2]["occurrences"] == hour_2
    assert daily[2]["jobs"] == 4 * hour_2  # four arrivals in each real hour
    # every local hour, the skipped and the repeated one included, shows the same rate
    assert {r["per_hour"] for r in daily} == {4.0}
    weekly = rows(stats.profiles, "weekly")
    assert {r["per_hour"] for r in weekly} == {4.0}
    sunday_2am = weekly[6 * 24 + 2]
    # two Sundays in the span, one of them the change: 0 + 1 in spring, 2 + 1 in autumn
    assert sunday_2am["occurrences"] == hour_2 - 12
    assert sum(r["occurrences"] for r in daily) == 14 * 24  # real hours in the span


def test_wall_clock_counting_shows_the_dip_the_zone_removes() -> None:
    trace = steady_trace("2024-03-25T00:00:00+00:00", 14)
    instants = pd.to_datetime(
        pd.Timestamp("2024-03-25T00:00:00Z").value // 10**9
        + trace.column("submit_s").to_numpy().astype(np.int64),
        unit="s",
        utc=True,
    )
    local = pd.DatetimeIndex(instants).tz_convert(ZONE).tz_localize(None)
    local_s = np.asarray(local.values.astype("datetime64[s]").astype(np.int64))
    naive = rows(arrival_profiles(local_s), "daily")
    assert naive[2]["per_hour"] < 4.0  # 52 arrivals over 14 wall-clock 02:00s: the old dip
    real = rows(arrival_profiles(local_s, ZONE), "daily")
    assert real[2]["per_hour"] == 4.0
    # without a zone nothing changes for a trace in UTC
    utc = rows(arrival_profiles(local_s), "weekly")
    assert [r["occurrences"] for r in utc] == [
        r["occurrences"] for r in rows(arrival_profiles(local_s, "UTC"), "weekly")
    ]
