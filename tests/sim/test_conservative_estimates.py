"""``simulate(policy="conservative")`` takes the walltime estimates from the columns directly.

The kernel's estimates (the requested walltime where positive and finite, else the runtime) and
what the estimator reports (its fallback count, its refusal with ``missing="error"``) are those of
the event loop, whatever the walltime column holds: nulls, NaN, zeros, negative and infinite
values, walltimes shorter or longer than the runtime.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridtrace.errors import SimulationError
from gridtrace.sim import WalltimeEstimator, simulate
from gridtrace.sim._engine import _conservative_estimates, _prepare, _static_estimates

_WALLS = st.one_of(
    st.none(),
    st.sampled_from([math.nan, 0.0, -5.0, math.inf, -math.inf]),
    st.floats(0.5, 50.0, allow_nan=False),
    st.sampled_from([1e-300, 1e-79, 1e-20]),  # too small to move a start: reserve nothing
)


def _table(jobs: list[tuple[int, int, int, float | None]]) -> pa.Table:
    return pa.table(
        {
            "job_id": pa.array(np.arange(len(jobs), dtype=np.int64)),
            "submit_s": pa.array([float(j[0]) for j in jobs]),
            "run_s": pa.array([float(j[1]) for j in jobs]),
            "cores": pa.array([j[2] for j in jobs], pa.int32()),
            "walltime_req_s": pa.array([j[3] for j in jobs], pa.float64()),
            "interactive": pa.array([j[1] <= 10 for j in jobs]),
        }
    )


_JOBS = st.lists(
    st.tuples(st.integers(0, 30), st.integers(0, 20), st.integers(1, 4), _WALLS),
    min_size=1,
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(jobs=_JOBS)
def test_estimates_and_fallback_count_equal_the_estimators(
    jobs: list[tuple[int, int, int, float | None]],
) -> None:
    table = _prepare(_table(jobs))
    run = table.column("run_s").to_numpy()
    ref_est = WalltimeEstimator(missing="oracle")
    ref = _static_estimates(table, run, ref_est)
    fast_est = WalltimeEstimator(missing="oracle")
    fast = _conservative_estimates(table, run, fast_est)
    assert fast.tolist() == ref.tolist()
    assert fast_est.describe() == ref_est.describe()
    # both paths now share WalltimeEstimator.reset_arrays: the rule written out once more here
    walls = table.column("walltime_req_s").to_pylist()
    known = [w is not None and math.isfinite(w) and w > 0 for w in walls]
    rule = [w if k else r for w, k, r in zip(walls, known, run.tolist(), strict=True)]
    assert fast.tolist() == rule
    assert fast_est.describe()["oracle_fallback_jobs"] == known.count(False)


@settings(max_examples=100, deadline=None)
@given(jobs=_JOBS, total=st.integers(4, 8))
def test_simulate_with_walltimes_equals_the_event_loop(
    jobs: list[tuple[int, int, int, float | None]], total: int
) -> None:
    table = _table(jobs)
    kw = {
        "cores": total,
        "policy": "conservative",
        "estimator": "walltime",
        "estimator_options": {"missing": "oracle"},
        "warmup_jobs": 0,
        "drain_jobs": 0,
    }
    fast = simulate(table, **kw)  # type: ignore[arg-type]
    slow = simulate(table, fast_path=False, **kw)  # type: ignore[arg-type]
    # an infinite walltime is not a positive finite one: the runtime stands in for it
    assert fast.summary["engine"] == "conservative-kernel"
    assert fast.jobs.column("start_s").to_pylist() == slow.jobs.column("start_s").to_pylist()
    assert fast.summary["estimator_settings"] == slow.summary["estimator_settings"]


def test_missing_walltimes_are_refused_as_before() -> None:
    table = _table([(0, 5, 1, 10.0), (1, 5, 1, None), (2, 5, 1, 0.0)])
    with pytest.raises(SimulationError, match="2 of 3 jobs have no positive walltime_req_s"):
        simulate(table, cores=2, policy="conservative", estimator="walltime")
