"""Metric definitions on hand examples, the summary, and result files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from gridtrace.errors import ConfigError
from gridtrace.models import generate_preset_trace
from gridtrace.schema import with_trace_metadata
from gridtrace.sim import (
    FAIRNESS_WINDOWS,
    NO_VO,
    bounded_slowdown,
    fairness_at_election,
    read_result,
    responsiveness,
    simulate,
    summarise,
    windowed_fairness,
)


def test_responsiveness_definition() -> None:
    w = responsiveness([100.0, 900.0, 0.0, 0.0, 50.0], [300.0, 0.0, 10.0, 0.0, 50.0])
    np.testing.assert_allclose(w, [0.25, 1.0, 0.0, 1.0, 0.5])


def test_bounded_slowdown_definition() -> None:
    # run 100, wait 300 -> 4; run 1 (< 10 s), wait 19 -> 20 / 10 = 2; no wait -> 1;
    # run 0 wait 5 -> 5 / 10 -> bounded to 1; run 2 wait 48 -> 5
    b = bounded_slowdown([100.0, 1.0, 50.0, 0.0, 2.0], [300.0, 19.0, 0.0, 5.0, 48.0])
    np.testing.assert_allclose(b, [4.0, 2.0, 1.0, 1.0, 5.0])


def test_fairness_definition_by_hand() -> None:
    # targets a 0.5, b 0.3, c 0.2 (given as 5/3/2); core-seconds run x cores.
    run = [10.0, 10.0, 20.0, 5.0]
    cores = [1, 2, 1, 2]
    vo = ["a", "a", "b", None]
    f = fairness_at_election(run, cores, vo, {"a": 5, "b": 3, "c": 2})
    # job 0: nothing elected yet -> F = 1
    # job 1: S = (a 1.0); deficits b 0.3, c 0.2 -> 1 - 0.3/0.5 = 0.4
    # job 2: S = (a 30/30); same -> 0.4
    # job 3: S = a 30/50 = 0.6, b 20/50 = 0.4; deficits a 0, b 0, c 0.2 -> 1 - 0.2/0.5 = 0.6
    np.testing.assert_allclose(f, [1.0, 0.4, 0.4, 0.6])


def test_fairness_follows_election_order() -> None:
    run, cores, vo = [10.0, 10.0], [1, 1], ["a", "b"]
    shares = {"a": 1.0, "b": 1.0}
    np.testing.assert_allclose(fairness_at_election(run, cores, vo, shares), [1.0, 0.0])
    np.testing.assert_allclose(
        fairness_at_election(run, cores, vo, shares, elected=[1, 0]), [0.0, 1.0]
    )


def _trace(size: int, *, vo: list[str | None] | None = None) -> pa.Table:
    submit = np.arange(size, dtype=np.float64) * 10.0
    run = np.where(np.arange(size) % 2 == 0, 100.0, 2000.0)
    table = pa.table(
        {
            "job_id": pa.array(np.arange(size, dtype=np.int64)),
            "submit_s": pa.array(submit),
            "run_s": pa.array(run),
            "cores": pa.array(np.ones(size, dtype=np.int32)),
            "vo": pa.array(vo if vo is not None else ["x"] * size, pa.string()),
            "interactive": pa.array(run <= 900.0),
        }
    )
    return with_trace_metadata(
        table,
        origin="1970-01-01T00:00:00+00:00",
        site="hand",
        cores=1,
        tau_s=900.0,
        provenance={"seed": 3},
    )


def test_summary_by_hand() -> None:
    # P = 1; jobs every 10 s alternating 100 s / 2000 s: a growing queue.
    trace = _trace(4, vo=["a", "b", None, "a"])
    result = simulate(trace, warmup_jobs=0, drain_jobs=0)
    start = [0.0, 100.0, 2100.0, 2200.0]
    wait = [0.0, 90.0, 2080.0, 2170.0]
    assert result.jobs["start_s"].to_pylist() == start
    s = result.summary
    assert s["n_simulated"] == 4
    assert s["n_measured"] == 4
    inter = s["classes"]["interactive"]
    assert inter["n"] == 2
    assert inter["wait_mean_s"] == pytest.approx(1040.0)
    assert inter["wait_max_s"] == 2080.0
    assert inter["responsiveness_mean"] == pytest.approx((1.0 + 100 / 2180) / 2)
    assert s["classes"]["batch"]["wait_median_s"] == pytest.approx(1130.0)
    assert s["classes"]["all"]["wait_std_s"] == pytest.approx(np.std(wait, ddof=1))
    assert s["classes"]["all"]["wait_p95_s"] == pytest.approx(np.percentile(wait, 95))
    assert s["classes"]["all"]["bsld_mean"] == pytest.approx(
        np.mean([1.0, 2090 / 2000, 2180 / 100, 4170 / 2000])
    )
    assert s["interactive_wait_under_120s"] == 0.5
    assert set(s["vos"]) == {"a", "b", NO_VO}
    assert s["vos"]["a"]["n"] == 2
    assert s["vos"][NO_VO]["n"] == 1
    # utilisation: 4200 core-seconds over P = 1 and span 4200 - 0
    assert s["makespan_s"] == 4200.0
    assert s["utilisation"] == pytest.approx(1.0)
    assert s["fairness"] is None


def test_warmup_and_drain_exclusion() -> None:
    trace = _trace(10)
    result = simulate(trace, warmup_jobs=3, drain_jobs=2)
    s = result.summary
    assert s["exclusion"]["applied"] is True
    assert s["n_measured"] == 5
    waits = result.jobs["wait_s"].to_numpy()[3:8]
    assert s["classes"]["all"]["wait_mean_s"] == pytest.approx(waits.mean())
    # utilisation and makespan always cover the whole run
    assert s["makespan_s"] == pytest.approx(result.jobs["end_s"].to_numpy().max())


def test_too_small_trace_excludes_nothing_and_says_so() -> None:
    result = simulate(_trace(10))  # default 500 + 500
    s = result.summary
    assert s["exclusion"]["applied"] is False
    assert "too small" in s["exclusion"]["note"]
    assert s["n_measured"] == 10


def test_fairness_in_summary_and_table() -> None:
    trace = generate_preset_trace("PE-1", rng=5, size=3000)
    shares = {"vo1": 0.53, "vo2": 0.14, "vo3": 0.17, "vo4": 0.16}
    result = simulate(trace, vo_shares=shares)
    f = result.jobs["fairness"].to_numpy()
    assert f[0] == 1.0
    assert np.all((f >= 0) & (f <= 1))
    assert result.summary["fairness"]["mean"] > 0.8  # VOs drawn from their targets
    assert result.summary["vo_shares"] == pytest.approx(shares)


def test_write_and_read_round_trip(tmp_path: Path) -> None:
    trace = generate_preset_trace("MM50-20", rng=11, size=1500)
    result = simulate(trace, vo_shares={"vo1": 0.7, "vo2": 0.2, "vo3": 0.05, "vo4": 0.05})
    parquet = tmp_path / "sim" / "MM50-20" / "fifo" / "seed11.parquet"
    summary = tmp_path / "sim" / "MM50-20" / "fifo" / "summary.json"
    result.write(parquet, summary)
    back = read_result(parquet, summary)
    assert back.jobs.equals(result.jobs)
    assert back.metadata == result.metadata
    assert back.metadata["provenance"]["trace"]["preset"] == "MM50-20"
    assert back.metadata["provenance"]["trace"]["seed"] == 11
    assert back.summary == json.loads(summary.read_text())
    assert back.summary["classes"]["all"]["n"] == 500  # 1500 - 500 - 500
    assert back.policy == "fifo"


def test_summary_is_strict_json(tmp_path: Path) -> None:
    # one job: std undefined (None), p95 fine; no NaN may reach the JSON file
    result = simulate(_trace(1), warmup_jobs=0, drain_jobs=0)
    result.write(tmp_path / "r.parquet", tmp_path / "r.json")
    text = (tmp_path / "r.json").read_text()
    assert "NaN" not in text
    data = json.loads(text)
    assert data["classes"]["all"]["wait_std_s"] is None
    assert data["classes"]["batch"]["n"] == 0
    assert data["classes"]["batch"]["wait_mean_s"] is None
    assert math.isclose(data["utilisation"], 1.0)


def test_windowed_fairness_by_hand() -> None:
    # targets a 0.5, b 0.3, c 0.2 (given as 5/3/2); x has no target; windows of 10 s every 5 s.
    elected = [0.0, 2.0, 7.0, 9.0, 12.0, 14.0]
    run = [10.0, 5.0, 20.0, 10.0, 10.0, 5.0]
    cores = [1, 2, 1, 1, 1, 2]
    vo = ["a", "b", "a", "x", "c", "b"]
    r = windowed_fairness(elected, run, cores, vo, {"a": 5, "b": 3, "c": 2}, length_s=10, step_s=5)
    # t0 = 0, t1 = 14: [0, 10) ends before t1, so a second window [5, 15) holds the last election.
    # [0, 10): a 10 + 20, b 10, x 10 of 50 -> S a 0.6, b 0.2, c 0;
    #          deficits b 0.1, c 0.2 -> F = 1 - 0.2 / 0.5 = 0.6
    # [5, 15): a 20, x 10, c 10, b 10 of 50 -> S a 0.4, b 0.2, c 0.2;
    #          deficits a 0.1, b 0.1 -> F = 1 - 0.1 / 0.5 = 0.8
    np.testing.assert_allclose(r.value, [0.6, 0.8])
    np.testing.assert_array_equal(r.start_s, [0.0, 5.0])
    np.testing.assert_array_equal(r.n_elections, [4, 4])
    d = r.describe()
    assert d["n_windows"] == 2
    assert d["n_skipped"] == 0
    assert d["mean"] == pytest.approx(0.7)
    assert d["min"] == pytest.approx(0.6)
    # the same jobs in any row order
    perm = [5, 0, 3, 1, 4, 2]
    r2 = windowed_fairness(
        [elected[i] for i in perm],
        [run[i] for i in perm],
        [cores[i] for i in perm],
        [vo[i] for i in perm],
        {"a": 5, "b": 3, "c": 2},
        length_s=10,
        step_s=5,
    )
    np.testing.assert_allclose(r2.value, r.value)


def test_windowed_fairness_skips_windows_without_service() -> None:
    shares = {"a": 1.0, "b": 1.0}
    # [0, 5): a only -> 0; [5, 10): nothing -> skipped, not 1; [10, 15): b and a alike -> 1;
    # [15, 20): a zero-length job only -> skipped
    r = windowed_fairness(
        [0.0, 12.0, 13.0, 16.0],
        [4.0, 3.0, 3.0, 0.0],
        [1, 1, 1, 1],
        ["a", "b", "a", "a"],
        shares,
        length_s=5,
        step_s=5,
    )
    np.testing.assert_allclose(r.value, [0.0, 1.0])
    np.testing.assert_array_equal(r.start_s, [0.0, 10.0])
    assert r.n_skipped == 2
    # a run shorter than a window: one window of everything
    one = windowed_fairness(
        [0.0, 1.0], [1.0, 1.0], [1, 1], ["a", "b"], shares, length_s=86400, step_s=3600
    )
    np.testing.assert_allclose(one.value, [1.0])
    none = windowed_fairness([], [], [], [], shares, length_s=10, step_s=5)
    assert none.describe() == {
        "length_s": 10,
        "step_s": 5,
        "n_windows": 0,
        "n_skipped": 0,
        "mean": None,
        "min": None,
    }
    with pytest.raises(ConfigError, match="length_s"):
        windowed_fairness([0.0], [1.0], [1], ["a"], shares, length_s=0, step_s=5)


def _two_vo_backlog(n_per_vo: int = 192) -> pa.Table:
    """VO a submits n one-hour jobs at t = 0, VO b as many at t = 1 s."""
    n = 2 * n_per_vo
    table = pa.table(
        {
            "job_id": pa.array(np.arange(n, dtype=np.int64)),
            "submit_s": pa.array(np.r_[np.zeros(n_per_vo), np.ones(n_per_vo)]),
            "run_s": pa.array(np.full(n, 3600.0)),
            "cores": pa.array(np.ones(n, dtype=np.int32)),
            "vo": pa.array(["a"] * n_per_vo + ["b"] * n_per_vo, pa.string()),
            "interactive": pa.array(np.zeros(n, dtype=bool)),
        }
    )
    return with_trace_metadata(
        table,
        origin="1970-01-01T00:00:00+00:00",
        site="hand",
        cores=4,
        tau_s=900.0,
        provenance={"constructed": True},
    )


def test_windowed_fairness_tells_fifo_from_fairshare() -> None:
    # P = 4: FIFO serves a for 48 h, then b for 48 h; fair-share alternates. Both end with the
    # same service (a 0.5, b 0.5): the run as a whole is fair for both, not each day of it.
    shares = {"a": 0.5, "b": 0.5}
    trace = _two_vo_backlog()
    out = {}
    for policy in ("fifo", "fairshare"):
        result = simulate(
            trace, cores=4, policy=policy, vo_shares=shares, warmup_jobs=0, drain_jobs=0
        )
        out[policy] = result.summary["fairness"]
    assert set(FAIRNESS_WINDOWS) == {"daily", "weekly"}
    fifo, fair = out["fifo"], out["fairshare"]
    assert fifo["daily"]["n_windows"] == fair["daily"]["n_windows"] == 73  # 96 h, step 1 h
    # FIFO: every window that holds one VO only scores 0; those around the switch at 48 h more
    assert fifo["daily"]["min"] == 0.0
    assert fifo["daily"]["mean"] == pytest.approx(12 / 73)
    assert fair["daily"]["mean"] == pytest.approx(1.0)
    # the whole run fits in one weekly window, where both are fair
    assert fifo["weekly"]["n_windows"] == fair["weekly"]["n_windows"] == 1
    assert fifo["weekly"]["mean"] == fair["weekly"]["mean"] == pytest.approx(1.0)


def test_summary_windowed_fairness_reads_the_run_shares_and_uses_measured_jobs() -> None:
    trace = generate_preset_trace("PE-1", rng=5, size=3000)
    shares = {"vo1": 0.53, "vo2": 0.14, "vo3": 0.17, "vo4": 0.16}
    result = simulate(trace, vo_shares=shares, warmup_jobs=100, drain_jobs=100)
    part = result.jobs.slice(100, result.jobs.num_rows - 200)
    for name, (length, step) in FAIRNESS_WINDOWS.items():
        direct = windowed_fairness(
            part["start_s"].to_numpy(),
            part["run_s"].to_numpy(),
            part["cores"].to_numpy(),
            part["vo"],
            shares,
            length_s=length,
            step_s=step,
        )
        got = result.summary["fairness"][name]
        assert got == direct.describe()
        assert got["n_windows"] > 0
        assert 0.0 <= got["min"] <= got["mean"] <= 1.0
    # given explicitly, other shares give other numbers
    other = summarise(
        result.jobs, cores=80, warmup_jobs=100, drain_jobs=100, vo_shares={"vo1": 1.0}
    )
    assert other["fairness"]["daily"] != result.summary["fairness"]["daily"]
    # without any shares (no fairness column) there is no windowed F
    plain = simulate(trace, warmup_jobs=100, drain_jobs=100)
    assert plain.summary["fairness"] is None
