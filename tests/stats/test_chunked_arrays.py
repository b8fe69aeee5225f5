"""characterise_parquet holds compact arrays, not the trace, and its figures are characterise's."""

from __future__ import annotations

import datetime as dt
import math
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from gridtrace.errors import ConfigError
from gridtrace.logs import build_trace
from gridtrace.schema import conform
from gridtrace.stats import (
    FlurryCriteria,
    TraceArrays,
    _characterise,
    _chunked,
    _profiles,
    characterise,
    characterise_parquet,
    find_flurries,
    interarrival_acf,
)

T0 = dt.datetime(2024, 3, 25, tzinfo=dt.UTC)


def _jobs(
    n: int,
    seed: int,
    *,
    vos: tuple[str | None, ...] = ("atlas", "cms", "", None),
    started: float = 0.9,
    state: str | None = None,
    core_counts: tuple[int, ...] = (1, 1, 2, 8),
    n_users: int = 7,
) -> pa.Table:
    """A jobs table of ``n`` attempts: equal submits, requeues, probes, nulls, empty VO."""
    rng = np.random.default_rng(seed)
    seq = np.arange(n)
    submit = rng.integers(0, max(n // 3, 2), n)  # one-second ticks: many equal submits
    wait = rng.integers(0, 3600, n)
    run = rng.choice([0, 5, 60, 600, 900, 901, 3600, 86400], n) + rng.integers(0, 30, n)
    start_ok = rng.random(n) < started
    attempt = (rng.random(n) < 0.05).astype(np.int16)
    states = rng.choice(["COMPLETED", "FAILED", "DELETED"], n, p=[0.85, 0.12, 0.03])
    vo_index = rng.integers(0, len(vos), n)
    users = [f"u{i}" for i in range(n_users)] + [None]
    user_index = rng.integers(0, len(users), n)
    cores = rng.choice(core_counts, n)

    def time(offsets: np.ndarray[Any, Any], mask: np.ndarray[Any, Any]) -> list[Any]:
        return [
            T0 + dt.timedelta(seconds=int(o)) if ok else None
            for o, ok in zip(offsets, mask, strict=True)
        ]

    columns: dict[str, Any] = {
        "site": ["s"] * n,
        "source_format": ["torque"] * n,
        "job_key": [f"s:{s}.{a}" for s, a in zip(seq, attempt, strict=True)],
        "job_id_raw": [f"{s}.ce" for s in seq],
        "job_seq": [None if s % 17 == 0 else int(s % 50) for s in seq],
        "array_index": [None if s % 3 else int(s % 4) for s in seq],
        "attempt": attempt,
        "n_attempts": (attempt + 1).astype(np.int16),
        "user": [users[i] for i in user_index],
        "vo": [vos[i] for i in vo_index],
        "queue": ["q"] * n,
        "submit_time": time(submit, rng.random(n) < 0.97),
        "queue_time": time(submit + rng.integers(0, 50, n), rng.random(n) < 0.8),
        "start_time": time(submit + wait, start_ok),
        "end_time": time(submit + wait + run, start_ok),
        "run_s": [int(r) if ok else None for r, ok in zip(run, rng.random(n) < 0.95, strict=True)],
        "cores_alloc": [int(c) if ok else None for c, ok in zip(cores, seq % 11 > 0, strict=True)],
        "cores_req": [int(c) if ok else None for c, ok in zip(cores, seq % 23 > 0, strict=True)],
        "walltime_req_s": [3600] * n,
        "state": [state] * n if state else states.tolist(),
        "src_file": ["f"] * n,
        "src_line": seq,
        "flags": [["MONITORING"] if s % 29 == 0 else [] for s in seq],
    }
    return conform(pa.table(columns), "jobs")


def _write(table: pa.Table, path: Path, *, row_group: int, seed: int = 0) -> Path:
    order = np.random.default_rng(seed).permutation(table.num_rows)  # any order in the file
    pq.write_table(table.take(pa.array(order)), path, row_group_size=row_group)
    return path


def _same(path: Path, batch_rows: int, **options: Any) -> None:
    given = {name: options.pop(name) for name in ("tz", "tau_s") if name in options}
    trace = build_trace(pq.read_table(path), cores=16, **given)
    whole = characterise(trace, **options).to_dict()
    chunked = characterise_parquet(path, cores=16, batch_rows=batch_rows, **given, **options)
    assert chunked.to_dict() == whole


def test_generated_tables_in_any_order_and_batch_size(tmp_path: Path) -> None:
    path = _write(_jobs(3000, 1), tmp_path / "jobs.parquet", row_group=700)
    for batch_rows in (64, 333, 10**6):
        _same(path, batch_rows)
    _same(path, 500, tz="Europe/Paris", tau_s=600.0, bin_s=3600.0, acf_lags=5)
    _same(path, 500, window=(100.0, 700.0))
    _same(path, 500, window=(10**7, 2 * 10**7))  # no job in the window


def test_batches_of_one_row(tmp_path: Path) -> None:
    path = _write(_jobs(120, 2), tmp_path / "jobs.parquet", row_group=1)
    _same(path, 1)
    path = _write(_jobs(120, 3), tmp_path / "grouped.parquet", row_group=50)
    _same(path, 1, tz="America/New_York")


def test_empty_or_missing_vo_and_one_job(tmp_path: Path) -> None:
    _same(_write(_jobs(400, 4, vos=("",)), tmp_path / "empty.parquet", row_group=90), 41)
    _same(_write(_jobs(400, 5, vos=(None,)), tmp_path / "null.parquet", row_group=90), 41)
    some = _jobs(30, 6, started=1.0, state="COMPLETED")
    one = some.filter(pc.is_valid(some.column("run_s"))).slice(1, 1)  # job 0 is a probe
    _same(_write(one, tmp_path / "one.parquet", row_group=1), 1)


def test_core_counts_beyond_int16(tmp_path: Path) -> None:
    table = _jobs(600, 11, core_counts=(1, 64, 40_000, 2**20))  # held as int32, not int16
    _same(_write(table, tmp_path / "wide.parquet", row_group=100), 70)


@pytest.mark.slow
def test_users_beyond_int16(tmp_path: Path) -> None:
    many = _jobs(60_000, 12, n_users=100_000)  # more than 32,767 distinct users: int32 codes
    _same(_write(many, tmp_path / "users.parquet", row_group=20_000), 7_000)


def test_all_failed_or_none_started(tmp_path: Path) -> None:
    failed = _write(_jobs(500, 7, state="FAILED"), tmp_path / "failed.parquet", row_group=128)
    _same(failed, 100)
    archive = _write(_jobs(500, 8, started=0.0), tmp_path / "archive.parquet", row_group=128)
    _same(archive, 100)  # runtimes without a start: no wait figures
    assert characterise_parquet(archive, cores=16).wait is None
    never = _jobs(50, 9, started=0.0).drop_columns(["run_s"])
    never = never.append_column("run_s", pa.nulls(50, pa.int64()))
    path = tmp_path / "never.parquet"
    pq.write_table(conform(never, "jobs"), path)
    with pytest.raises(ConfigError, match="no job"):
        characterise_parquet(path, cores=16)


def _trace_arrays(n: int, seed: int) -> TraceArrays:
    rng = np.random.default_rng(seed)
    submit = np.concatenate(
        (
            rng.uniform(0, 40 * 86_400, n),
            rng.uniform(3.1 * 86_400, 3.5 * 86_400, n // 10),  # two flurries
            rng.uniform(20.1 * 86_400, 20.3 * 86_400, n // 10),
        )
    )
    codes = rng.integers(0, 7, submit.size)
    codes[n : n + n // 10] = 2
    codes[n + n // 10 :] = 5
    order = np.argsort(submit, kind="stable")
    ones = np.ones(submit.size)
    return TraceArrays(
        submit=submit[order],
        run=ones,
        cores=ones,
        wait=ones,
        vo_codes=np.zeros(submit.size, dtype=np.int64),
        vo_labels=("v",),
        user_codes=codes[order],
        user_labels=tuple("abcdefg"),
        origin=pd.Timestamp("2024-03-25T00:00:00Z"),
        metadata={},
    )


@pytest.mark.parametrize("chunk", [1000, 4096, 1 << 20])
def test_flurries_counted_in_chunks_are_find_flurries(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    arrays = _trace_arrays(50_000, chunk)
    monkeypatch.setattr(_characterise, "_LOCAL_CHUNK", chunk)
    local_s, _ = _characterise._local_seconds(arrays, "Europe/Paris")
    for criteria in (None, FlurryCriteria(min_jobs=10, min_day_share=0.3, min_ratio=0.5)):
        monkeypatch.setattr(_profiles, "_FLURRY_CHUNK", local_s.size)
        whole = find_flurries(arrays, local_s, criteria)
        assert whole.num_rows >= 2
        monkeypatch.setattr(_profiles, "_FLURRY_CHUNK", chunk)
        assert find_flurries(arrays, local_s, criteria).equals(whole)


def test_acf_by_lags_matches_the_fft_one(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    submit = np.cumsum(rng.exponential(1.0, 20_000) * (1 + np.sin(np.arange(20_000) / 7)))
    fft = interarrival_acf(submit, lags=30).column("acf").to_numpy()
    monkeypatch.setattr(_characterise, "ACF_FFT_MAX", 0)
    lags = _characterise._acf(submit, 30)
    assert lags.column("lag").to_pylist() == list(range(1, 31))
    assert np.allclose(lags.column("acf").to_numpy(), fft, rtol=1e-9, atol=1e-12)
    assert _characterise._acf(np.array([0.0, 1.0, 2.0, 3.0]), 5).num_rows == 0  # equal gaps


def test_bounded_memory_in_small_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Many small batches; numpy's peak stays a few tens of bytes a job; same figures."""
    n = 30_000
    path = _write(_jobs(n, 10), tmp_path / "jobs.parquet", row_group=1000)
    whole = characterise(build_trace(pq.read_table(path), cores=16)).to_dict()
    for module, name in (
        (_characterise, "_LOCAL_CHUNK"),
        (_chunked, "_CHUNK"),
        (_profiles, "_FLURRY_CHUNK"),
    ):
        monkeypatch.setattr(module, name, 2048)
    monkeypatch.setattr(_characterise, "ACF_FFT_MAX", 0)
    batches = _chunked._batches
    sizes: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> Iterator[pa.Table]:
        for batch in batches(*args, **kwargs):
            sizes.append(batch.num_rows)
            yield batch

    monkeypatch.setattr(_chunked, "_batches", counted)
    tracemalloc.start()
    try:
        stats = characterise_parquet(path, cores=16, batch_rows=300)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert max(sizes) == 300
    # four reads of 30 groups of 4 batches: arrivals; the numeric keys of equal submits; the
    # job keys of those the numbers leave tied (job_seq repeats here); the jobs' other values
    assert len(sizes) == 4 * 30 * math.ceil(1000 / 300)
    assert sum(sizes) == 4 * n
    assert stats.jobs > n // 2
    assert peak < 100 * n + 2 * 2**20  # the trace table alone takes about 360 bytes a job
    figures = stats.to_dict()
    for name in ("acf",):  # summed lag by lag here: equal to rounding
        got = [row["acf"] for row in figures["curves"].pop(name)]
        want = [row["acf"] for row in whole["curves"].pop(name)]
        assert np.allclose(got, want, rtol=1e-9, atol=1e-12)
    assert figures == whole
