"""characterise_parquet out of core: the in-memory figures, to the bit, in chunks and runs."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.errors import ConfigError
from gridtrace.logs import build_trace
from gridtrace.schema import conform
from gridtrace.stats import _characterise, _outofcore, characterise, characterise_parquet
from gridtrace.stats._exact import (
    PairwiseSum,
    Selection,
    median_of,
    median_ranks,
    quantile_of,
    quantile_ranks,
)
from gridtrace.stats._measures import QUANTILES
from gridtrace.stats._outofcore import characterise_out_of_core

T0 = dt.datetime(2024, 3, 25, tzinfo=dt.UTC)


def _jobs(
    n: int, seed: int, *, spread: int = 3, run_values: tuple[int, ...] = (0, 5, 900, 901, 3600)
) -> pa.Table:
    """``n`` attempts: equal submits, requeues, probes, never-ran and deleted jobs, null keys."""
    rng = np.random.default_rng(seed)
    seq = np.arange(n)
    submit = rng.integers(0, max(n // spread, 1), n)  # one-second ticks: ties
    wait = rng.integers(0, 600, n)
    run = rng.choice(run_values, n) + rng.integers(0, 3, n)
    started = rng.random(n) < 0.9
    attempt = (rng.random(n) < 0.1).astype(np.int16)

    def times(offsets: np.ndarray[Any, Any], valid: np.ndarray[Any, Any]) -> pa.Array[Any]:
        stamps = np.datetime64(T0.replace(tzinfo=None), "s") + offsets.astype("timedelta64[s]")
        return pa.array(stamps, mask=~valid).cast(pa.timestamp("s", tz="UTC"))

    vos = np.array(["atlas", "cms", "", "lhcb"], dtype=object)
    users = np.array([f"u{i}" for i in range(5)], dtype=object)
    cores = rng.choice([1, 2, 8], n)
    columns: dict[str, Any] = {
        "site": ["s"] * n,
        "source_format": ["torque"] * n,
        "job_key": [f"s:{s % 7}.{a}" for s, a in zip(seq, attempt, strict=True)],
        "job_id_raw": [f"{s}.ce" for s in seq],
        "job_seq": pa.array(seq % 5, mask=seq % 13 == 0),
        "array_index": pa.array((seq % 3).astype(np.int32), mask=seq % 2 == 0),
        "attempt": attempt,
        "n_attempts": (attempt + 1).astype(np.int16),
        "user": pa.array(users[rng.integers(0, 5, n)], mask=rng.random(n) < 0.1),
        "vo": pa.array(vos[rng.integers(0, 4, n)], mask=rng.random(n) < 0.1),
        "queue": ["q"] * n,
        "submit_time": times(submit, rng.random(n) < 0.95),
        "queue_time": times(submit + rng.integers(0, 50, n), rng.random(n) < 0.8),
        "start_time": times(submit + wait, started),
        "end_time": times(submit + wait + run, started),
        "run_s": pa.array(run, mask=rng.random(n) < 0.05),
        "cores_alloc": pa.array(cores, mask=seq % 11 == 0),
        "cores_req": pa.array(cores, mask=seq % 23 == 0),
        "walltime_req_s": [3600] * n,
        "state": rng.choice(["COMPLETED", "FAILED", "DELETED"], n, p=[0.85, 0.1, 0.05]).tolist(),
        "src_file": ["f"] * n,
        "src_line": seq,
        "flags": [["MONITORING"] if s % 29 == 0 else [] for s in seq],
    }
    return conform(pa.table(columns), "jobs")


def _write(table: pa.Table, path: Path, seed: int = 0) -> Path:
    order = np.random.default_rng(seed).permutation(table.num_rows)  # any order in the file
    pq.write_table(table.take(pa.array(order)), path, row_group_size=max(table.num_rows // 3, 1))
    return path


def _in_memory(path: Path, **options: Any) -> dict[str, Any]:
    given_ = {name: options.pop(name) for name in ("tz", "tau_s") if name in options}
    options.pop("batch_rows", None)
    trace = build_trace(pq.read_table(path), cores=16, **given_)
    return characterise(trace, **options).to_dict()


def _out_of_core(
    path: Path, chunk_rows: int, run_rows: int, counts: dict[str, int] | None = None, **options: Any
) -> dict[str, Any]:
    tau = float(options.pop("tau_s", 900.0))
    tz = options.pop("tz", None)
    stats = characterise_out_of_core(
        path,
        cores=16,
        tau_s=tau,
        tz=tz,
        exclude_monitoring=True,
        batch_rows=int(options.pop("batch_rows", 64)),
        chunk_rows=chunk_rows,
        run_rows=run_rows,
        counts=counts,
        window=options.pop("window", None),
        bin_s=options.pop("bin_s", 10_000.0),
        acf_lags=options.pop("acf_lags", 50),
    )
    assert not options
    return stats.to_dict()


# ---------------------------------------------------------------- the exact pieces


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-1e12, 1e12, allow_nan=False), max_size=600),
    st.integers(1, 50),
    st.sampled_from([128, 256, 1 << 14]),
)
def test_a_pairwise_sum_in_chunks_is_numpys_sum(
    values: list[float], chunk: int, block: int
) -> None:
    array = np.array(values, dtype=np.float64)
    summed = PairwiseSum(array.size, block=block)
    for first in range(0, array.size, chunk):
        summed.add(array[first : first + chunk])
    assert summed.result() == np.add.reduce(array)
    assert np.float64(summed.result()) / max(array.size, 1) == (array.mean() if array.size else 0.0)


@pytest.mark.parametrize("n", [129, 1000, 4097, 70_001])
def test_long_pairwise_sums(n: int) -> None:
    array = np.random.default_rng(n).standard_normal(n) * 1e6 + 1e12
    summed = PairwiseSum(n, block=128)
    for first in range(0, n, 777):
        summed.add(array[first : first + 777])
    assert summed.result() == np.add.reduce(array)
    deviations = array - array.mean()
    squares = PairwiseSum(n, block=256)
    squares.add(deviations * deviations)
    assert np.sqrt(np.float64(squares.result()) / n) == array.std()


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.one_of(st.integers(-5, 200).map(float), st.floats(-1e6, 1e6, allow_nan=False)),
        min_size=1,
        max_size=400,
    ),
    st.integers(1, 4),
)
def test_quantiles_by_selection_are_numpys(values: list[float], limit: int) -> None:
    array = np.array(values, dtype=np.float64)
    n = array.size
    previous, following, gamma = quantile_ranks(n, np.asarray(QUANTILES))
    p95 = quantile_ranks(n, np.asarray([0.95]))
    wanted = [*previous, *following, *median_ranks(n), p95[0][0], p95[1][0]]
    selection = Selection(n, [int(r) for r in wanted], limit=limit)  # tiny: bins are split
    while not selection.done:
        for first in range(0, n, 37):
            selection.add(array[first : first + 37])
        selection.end_pass()
    assert selection.passes <= 5
    at = selection.values
    got = quantile_of(
        np.array([at[int(r)] for r in previous]), np.array([at[int(r)] for r in following]), gamma
    )
    assert got.tolist() == np.quantile(array, QUANTILES).tolist()
    p95_value = quantile_of(np.array([at[int(p95[0][0])]]), np.array([at[int(p95[1][0])]]), p95[2])
    assert float(p95_value[0]) == float(np.quantile(array, 0.95))
    assert median_of(np.array([at[r] for r in median_ranks(n)])) == float(np.median(array))


# ---------------------------------------------------------------- the figures


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    n=st.integers(1, 260),
    seed=st.integers(0, 10**6),
    spread=st.sampled_from([1, 3, 50]),
    chunk_rows=st.integers(1, 40),
    run_rows=st.integers(1, 90),
    options=st.sampled_from(
        [
            {},
            {"tz": "Europe/Paris", "tau_s": 600.0, "bin_s": 3600.0, "acf_lags": 5},
            {"window": (30.0, 90.0)},
            {"window": (10.0**7, 2.0 * 10**7)},  # no job in the window
            {"tz": "America/New_York", "batch_rows": 7},
        ]
    ),
)
def test_out_of_core_figures_are_the_in_memory_ones(
    tmp_path: Path,
    n: int,
    seed: int,
    spread: int,
    chunk_rows: int,
    run_rows: int,
    options: dict[str, Any],
) -> None:
    path = _write(_jobs(n, seed, spread=spread), tmp_path / f"jobs-{seed}-{n}.parquet", seed)
    try:
        whole = _in_memory(path, **dict(options))
    except ConfigError:  # no job ran: both say so
        with pytest.raises(ConfigError, match="no job"):
            _out_of_core(path, chunk_rows, run_rows, **options)
        return
    assert _out_of_core(path, chunk_rows, run_rows, **options) == whole


def test_one_job_equal_runtimes_and_monitoring_left_out(tmp_path: Path) -> None:
    some = _jobs(40, 3, run_values=(600,))  # equal runtimes: quantiles between equal values
    one = _write(some.slice(1, 1), tmp_path / "one.parquet")
    if pq.read_table(one).column("run_s").null_count == 0:
        assert _out_of_core(one, 1, 1) == _in_memory(one)
    path = _write(some, tmp_path / "equal.parquet")
    assert _out_of_core(path, 3, 7) == _in_memory(path)
    stats = characterise_parquet(path, cores=16, memory_budget=1)  # the budget forces it
    assert stats.to_dict() == _in_memory(path)


def test_a_span_too_long_for_the_ticks_is_ordered_by_the_seconds(tmp_path: Path) -> None:
    table = _jobs(300, 4)
    submit = table.column("submit_time").combine_chunks()
    late = pa.array([i % 40 == 0 for i in range(300)])  # some jobs 40 years later
    shifted = pc.if_else(late, pc.add(submit, pa.scalar(dt.timedelta(days=40 * 365))), submit)
    table = table.set_column(table.schema.get_field_index("submit_time"), "submit_time", shifted)
    path = _write(conform(table, "jobs"), tmp_path / "long.parquet")
    counts: dict[str, int] = {}
    assert _out_of_core(path, 17, 60, counts) == _in_memory(path)
    assert counts["respilled"] == 1


def test_empty_file_and_no_job_that_ran(tmp_path: Path) -> None:
    empty = tmp_path / "empty.parquet"
    pq.write_table(_jobs(10, 1).slice(0, 0), empty)
    with pytest.raises(ConfigError, match="no job"):
        _out_of_core(empty, 4, 4)
    never = _jobs(50, 9).drop_columns(["run_s"])
    never = never.append_column("run_s", pa.nulls(50, pa.int64()))
    path = tmp_path / "never.parquet"
    pq.write_table(conform(never, "jobs"), path)
    with pytest.raises(ConfigError, match="no job"):
        characterise_parquet(path, cores=16, memory_budget=1)


def test_long_traces_sum_the_acf_lag_by_lag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(_jobs(900, 5, spread=1), tmp_path / "jobs.parquet")
    monkeypatch.setattr(_characterise, "ACF_FFT_MAX", 64)
    monkeypatch.setattr(_outofcore, "ACF_FFT_MAX", 64)
    whole = _in_memory(path, acf_lags=20)
    got = _out_of_core(path, 50, 200, acf_lags=20)
    acf_whole = whole["curves"].pop("acf")
    acf_got = got["curves"].pop("acf")
    assert got == whole  # every other figure to the bit
    assert len(acf_got) == len(acf_whole) == 20
    for a, b in zip(acf_got, acf_whole, strict=True):
        assert a["lag"] == b["lag"]
        assert a["acf"] == pytest.approx(b["acf"], rel=1e-9, abs=1e-12)


def test_chunks_and_runs_are_bounded_and_the_spill_folder_goes(tmp_path: Path) -> None:
    """Runs of ``run_rows`` jobs, chunks of ``chunk_rows`` at most, whatever the file's size."""
    spill = tmp_path / "spill"
    spill.mkdir()
    seen: dict[int, dict[str, int]] = {}
    for n in (2000, 8000):
        path = _write(_jobs(n, 7), tmp_path / f"jobs-{n}.parquet")
        ran = characterise_parquet(path, cores=16).jobs
        counts: dict[str, int] = {}
        original = _outofcore._Store.chunks
        largest = [0]

        def chunks(self: Any, _original: Any = original, _largest: list[int] = largest) -> Any:
            for chunk in _original(self):
                _largest[0] = max(_largest[0], chunk["submit"].size)
                yield chunk

        try:
            _outofcore._Store.chunks = chunks  # type: ignore[method-assign]
            stats = characterise_out_of_core(
                path,
                cores=16,
                tau_s=900.0,
                tz=None,
                exclude_monitoring=True,
                batch_rows=256,
                chunk_rows=100,
                run_rows=500,
                spill_dir=spill,
                counts=counts,
            )
        finally:
            _outofcore._Store.chunks = original  # type: ignore[method-assign]
        assert stats.jobs == ran
        all_ran = stats.jobs  # no window: every job that ran is in the sorted file
        # a run is cut once it holds run_rows jobs: at most one batch of the file more
        assert -(-all_ran // (500 + 256)) <= counts["runs"] <= -(-all_ran // 500)
        assert largest[0] <= 100
        assert counts["chunks"] >= -(-all_ran // 100)
        assert counts["passes"] <= 6
        assert list(spill.iterdir()) == []  # the temporary folder is removed
        seen[n] = counts
    assert seen[8000]["runs"] > 3 * seen[2000]["runs"] - 2
