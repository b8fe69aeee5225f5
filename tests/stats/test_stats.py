"""Workload statistics on hand-checked and synthetic traces."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from gridtrace.errors import ConfigError, SchemaError
from gridtrace.schema import conform, with_trace_metadata
from gridtrace.stats import (
    FlurryCriteria,
    characterise,
    core_weighted_load,
    idc_curve,
    interarrival_acf,
    resolve_zone,
    service_requests,
    utilisation_factor,
)


def trace_of(
    submit: list[float],
    run: list[float],
    *,
    cores: list[int] | None = None,
    vo: list[str | None] | None = None,
    user: list[str] | None = None,
    wait: list[float | None] | None = None,
    site_cores: int = 4,
    origin: str = "2021-03-01T00:00:00+00:00",  # a Monday
    provenance: dict[str, object] | None = None,
) -> pa.Table:
    n = len(submit)
    table = pa.table(
        {
            "job_id": pa.array(range(n), pa.int64()),
            "submit_s": pa.array(submit, pa.float64()),
            "run_s": pa.array(run, pa.float64()),
            "cores": pa.array(cores or [1] * n, pa.int32()),
            "vo": pa.array(vo or ["a"] * n, pa.string()),
            "user": pa.array(user or ["u"] * n, pa.string()),
            "interactive": pa.array([r <= 900 for r in run]),
            "wait_s": pa.array(wait or [None] * n, pa.float64()),
        }
    )
    return with_trace_metadata(
        conform(table, "trace"),
        origin=origin,
        site="hand",
        cores=site_cores,
        tau_s=900.0,
        provenance=provenance or {},
    )


def test_utilisation_factor_hand_example() -> None:
    # mean run 200 s, mean gap (20 − 0) / 2 = 10 s, P = 4: U = 200 / 10 / 4
    assert utilisation_factor([100.0, 300.0, 200.0], [0.0, 10.0, 20.0], 4) == 5.0
    # gaps 30 and 90: the mean gap is 60, not the mean of 1/gap
    assert utilisation_factor([60.0, 60.0, 60.0], [0.0, 30.0, 120.0], 1) == pytest.approx(1.0)
    assert np.isnan(utilisation_factor([1.0], [0.0], 1))
    with pytest.raises(ConfigError):
        utilisation_factor([1.0, 2.0], [0.0, 1.0], 0)


def test_core_weighted_load_hand_example() -> None:
    # E[run × cores] = (200 + 1200) / 2 = 700, mean gap 50, P = 10
    assert core_weighted_load([100.0, 300.0], [2, 4], [0.0, 50.0], 10) == pytest.approx(1.4)
    # single-core jobs: ρ = U
    assert core_weighted_load([100.0, 300.0], [1, 1], [0.0, 50.0], 10) == utilisation_factor(
        [100.0, 300.0], [0.0, 50.0], 10
    )


def test_characterise_hand_trace() -> None:
    trace = trace_of(
        [0.0, 10.0, 20.0, 30.0],
        [100.0, 2000.0, 300.0, 1000.0],
        cores=[1, 2, 1, 1],
        vo=["a", "b", "a", None],
        wait=[0.0, 100.0, 300.0, None],
    )
    stats = characterise(trace)
    assert stats.jobs == 4
    assert stats.span_s == 30.0
    assert stats.cores == 4
    assert stats.cores_source == "metadata"
    assert stats.interactive_fraction == 0.5
    assert stats.mean_interarrival_s == 10.0
    assert stats.utilisation == pytest.approx(850.0 / 10.0 / 4)
    assert stats.rho == pytest.approx((100 + 4000 + 300 + 1000) / 4 / 10.0 / 4)
    assert stats.vo_shares == {"a": 0.5, "(none)": 0.25, "b": 0.25}
    assert stats.runtime["class"]["interactive"]["count"] == 2
    assert stats.runtime["class"]["batch"]["mean"] == 1500.0
    wait = stats.wait
    assert wait is not None
    assert wait["jobs_with_wait"] == 3
    assert wait["interactive"]["wait_mean_s"] == 150.0  # waits 0 and 300
    assert wait["interactive"]["responsiveness_mean"] == pytest.approx((1.0 + 0.5) / 2)
    assert wait["interactive"]["waited_under_120s"] == 0.5
    assert wait["batch"]["responsiveness_mean"] == pytest.approx(2000 / 2100)
    text = json.dumps(stats.to_dict(), allow_nan=False)
    assert '"utilisation"' in text


def test_window_keeps_the_jobs_submitted_in_it() -> None:
    trace = trace_of([0.0, 10.0, 20.0, 30.0, 40.0], [1.0, 2.0, 3.0, 4.0, 5.0])
    stats = characterise(trace, window=(10.0, 40.0))
    assert stats.jobs == 3
    assert stats.mean_run_s == 3.0
    with pytest.raises(ConfigError, match="window"):
        characterise(trace, window=(5.0, 5.0))


def test_tau_and_cores_arguments_override_the_metadata() -> None:
    trace = trace_of([0.0, 10.0], [100.0, 2000.0])
    stats = characterise(trace, tau_s=3000.0, cores=2)
    assert stats.interactive_fraction == 1.0
    assert stats.tau_source == "argument"
    assert stats.cores == 2
    assert stats.cores_source == "argument"
    with pytest.raises(ConfigError, match="cores"):
        characterise(trace.replace_schema_metadata(None))


def test_unsorted_trace_is_refused() -> None:
    trace = trace_of([10.0, 0.0], [1.0, 1.0])
    with pytest.raises(SchemaError, match="not sorted"):
        characterise(trace)


def test_idc_of_a_poisson_process_is_one() -> None:
    rng = np.random.default_rng(42)
    submit = np.cumsum(rng.exponential(10.0, 200_000))
    curve = idc_curve(submit, points=20)
    idc = curve.column("idc").to_numpy()
    assert curve.num_rows >= 15
    # sampling error of a variance over ≥ 10 windows is large at the longest windows
    assert np.all(np.abs(idc[curve.column("windows").to_numpy() >= 1000] - 1.0) < 0.1)
    assert np.all(np.abs(idc - 1.0) < 0.6)


def test_idc_of_a_bursty_process_grows() -> None:
    rng = np.random.default_rng(3)
    # two-state modulated arrivals: exponential sojourns of mean 2,000 s, at rate 1 or 0.01
    times, now = [], 0.0
    for k in range(400):
        length = rng.exponential(2_000.0)
        n = rng.poisson(length * (1.0 if k % 2 else 0.01))
        times.append(now + rng.uniform(0, length, n))
        now += length
    submit = np.sort(np.concatenate(times))
    idc = idc_curve(submit, points=20).column("idc").to_numpy()
    assert idc[-1] > 10.0


@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_idc_counted_in_chunks_is_the_one_pass_count(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gridtrace.stats import _measures

    rng = np.random.default_rng(11)
    submit = np.cumsum(rng.exponential(5.0, 5_000))
    submit[100:110] = submit[100]  # equal arrivals on a window edge or inside one
    whole = idc_curve(submit, points=25)
    monkeypatch.setattr(_measures, "_IDC_CHUNK", chunk)
    assert idc_curve(submit, points=25).equals(whole)
    assert whole.num_rows >= 20


def test_idc_refuses_arrivals_before_the_first() -> None:
    with pytest.raises(ConfigError, match="must be sorted"):
        idc_curve(np.array([10.0, 5.0, 20.0, 30.0, 40.0]), t_min=1.0, min_windows=2)


def test_acf_of_independent_gaps_is_small_and_of_periodic_gaps_alternates() -> None:
    rng = np.random.default_rng(5)
    acf = interarrival_acf(np.cumsum(rng.exponential(1.0, 50_000)), lags=10)
    assert np.all(np.abs(acf.column("acf").to_numpy()) < 0.02)
    alternating = np.cumsum(np.tile([1.0, 3.0], 500))
    acf2 = interarrival_acf(alternating, lags=2).column("acf").to_numpy()
    assert acf2[0] == pytest.approx(-1.0, abs=0.01)
    assert acf2[1] == pytest.approx(1.0, abs=0.01)
    assert interarrival_acf([0.0, 1.0], lags=5).num_rows == 0


def test_service_requests_per_bin() -> None:
    submit = np.array([0.0, 5.0, 12.0, 31.0])
    table = service_requests(
        submit,
        np.array([10.0, 20.0, 30.0, 40.0]),
        np.array([1.0, 2.0, 1.0, 1.0]),
        cores=2,
        bin_s=10,
    )
    assert table.column("jobs").to_pylist() == [2, 1, 0, 1]
    assert table.column("work_core_s").to_pylist() == [50.0, 30.0, 0.0, 40.0]
    assert table.column("offered_load").to_pylist() == [2.5, 1.5, 0.0, 2.0]


def test_profiles_use_the_local_zone_when_the_metadata_names_it() -> None:
    # 2021-03-01 09:00 UTC is 10:00 in Paris (CET), a Monday
    trace = trace_of([9 * 3600.0], [1.0], provenance={"tz": "Europe/Paris"})
    stats = characterise(trace)
    assert stats.timezone == "Europe/Paris"
    assert stats.timezone_source == "provenance:tz"
    daily = stats.profiles.filter(pa.compute.equal(stats.profiles.column("profile"), "daily"))
    assert daily.column("jobs").to_pylist()[10] == 1
    weekly = stats.profiles.filter(pa.compute.equal(stats.profiles.column("profile"), "weekly"))
    assert weekly.column("jobs").to_pylist()[10] == 1  # Monday 10:00
    utc = characterise(trace_of([9 * 3600.0], [1.0]))
    assert utc.timezone == "UTC"
    assert utc.timezone_source.startswith("default")


def test_unknown_zone_is_an_error() -> None:
    with pytest.raises(ConfigError, match="time zone"):
        resolve_zone("Mars/Olympus", {})


def test_flurry_is_reported_not_removed() -> None:
    # ten quiet days of 20 jobs from two users, then one day where "burst" submits 500 jobs
    submit: list[float] = []
    users: list[str] = []
    for day in range(10):
        for k in range(20):
            submit.append(day * 86_400.0 + k * 1000.0)
            users.append("quiet" if k % 2 else "other")
    burst_day = 10 * 86_400.0
    submit += [burst_day + k for k in range(500)]
    users += ["burst"] * 500
    trace = trace_of(submit, [10.0] * len(submit), user=users)
    stats = characterise(trace)
    assert stats.jobs == len(submit)  # nothing removed
    flurries = stats.flurries.to_pylist()
    assert len(flurries) == 1
    assert flurries[0]["user"] == "burst"
    assert flurries[0]["day"] == "2021-03-11"
    assert flurries[0]["jobs"] == 500
    assert flurries[0]["ratio_to_median_day"] == pytest.approx(25.0)
    strict = characterise(trace, flurries=FlurryCriteria(min_jobs=1000))
    assert strict.flurries.num_rows == 0
    with pytest.raises(ConfigError):
        FlurryCriteria(min_day_share=0.0)


def test_weekly_profile_divides_by_how_often_each_hour_occurs() -> None:
    from gridtrace.stats import arrival_profiles

    # 8 days from Monday 1970-01-05 00:00 to Monday 1970-01-12 23:00 UTC, one arrival per hour:
    # Monday is covered twice, so it holds twice the arrivals but the same rate
    start = 4 * 86_400
    local = np.arange(start, start + 8 * 86_400, 3600, dtype=np.int64)
    table = arrival_profiles(local).to_pylist()
    weekly = [row for row in table if row["profile"] == "weekly"]
    assert (weekly[0]["jobs"], weekly[0]["occurrences"]) == (2, 2)
    assert (weekly[24]["jobs"], weekly[24]["occurrences"]) == (1, 1)
    assert {row["per_hour"] for row in weekly} == {1.0}
    daily = [row for row in table if row["profile"] == "daily"]
    assert {row["occurrences"] for row in daily} == {8}
    assert {row["per_hour"] for row in daily} == {1.0}
