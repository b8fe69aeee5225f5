"""The Batsim writer and numbers JSON cannot hold: inf and NaN never reach the workload file.

A trace built elsewhere may hold an infinite run time, a NaN or infinite submit time, or an
infinite walltime (a float that overflowed); JSON has no such number (``json.dumps`` writes
``Infinity`` and ``NaN``, which Batsim's parser refuses). Such a row is left out, or its walltime
left out, and counted; the other rows are written as before.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pyarrow as pa
from hypothesis import HealthCheck, given, settings

from gridtrace.logs._batsim import write_batsim
from gridtrace.schema import TRACE, with_trace_metadata


def _trace(rows: list[dict[str, Any]], cores: int = 8) -> pa.Table:
    table = pa.Table.from_pylist([{"interactive": False, **r} for r in rows], schema=TRACE)
    return with_trace_metadata(
        table, origin="2024-01-01T00:00:00Z", site="s", cores=cores, tau_s=900.0, provenance={}
    )


def _strict_load(path: Any) -> Any:
    """Load JSON as Batsim would: no Infinity, no NaN."""

    def refuse(token: str) -> None:
        raise ValueError(token)

    return json.loads(Path(path).read_text(), parse_constant=refuse)


def test_rows_with_times_that_are_not_finite_are_left_out_and_counted(tmp_path: Path) -> None:
    inf, nan = math.inf, math.nan
    rows: list[dict[str, Any]] = [
        {"job_id": 1, "submit_s": 0.0, "run_s": 10.0, "cores": 1, "walltime_req_s": 60.0},
        {"job_id": 2, "submit_s": 5.0, "run_s": inf, "cores": 1, "walltime_req_s": None},
        {"job_id": 3, "submit_s": nan, "run_s": 10.0, "cores": 1, "walltime_req_s": None},
        {"job_id": 4, "submit_s": inf, "run_s": 10.0, "cores": 1, "walltime_req_s": None},
        {"job_id": 5, "submit_s": 7.0, "run_s": 20.0, "cores": 2, "walltime_req_s": inf},
        {"job_id": 6, "submit_s": 8.0, "run_s": nan, "cores": 2, "walltime_req_s": None},
        {"job_id": 7, "submit_s": -1e308, "run_s": 10.0, "cores": 2, "walltime_req_s": None},
        {"job_id": 8, "submit_s": 9.0, "run_s": 1e300, "cores": 2, "walltime_req_s": 1e300},
    ]
    result = write_batsim(_trace(rows), tmp_path / "w.json")
    workload = _strict_load(result)
    assert [job["id"] for job in workload["jobs"]] == ["1", "5"]
    assert "walltime" not in workload["jobs"][1]
    assert dict(result.left_out) == {
        "with no run time": 1,
        "with a run or submit time that is not finite (or beyond 2^53 s)": 5,
    }
    assert dict(result.adjusted) == {
        "walltimes not finite (or beyond 2^53 s), left out (no limit)": 1
    }
    assert (result.rows_in, result.rows_written) == (8, 2)


_times = st.one_of(
    st.floats(0, 1e7, allow_nan=False),
    st.sampled_from([math.inf, -math.inf, math.nan, 1e308, -1e308, 2.0**53, -1.0, 0.0]),
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(
        st.tuples(_times, _times, st.integers(1, 8), st.one_of(st.none(), _times)),
        min_size=1,
        max_size=10,
    )
)
def test_any_times_give_a_file_batsim_can_parse(
    tmp_path: Path, rows: list[tuple[float, float, int, float | None]]
) -> None:
    table = _trace(
        [
            {"job_id": i, "submit_s": s, "run_s": r, "cores": c, "walltime_req_s": w}
            for i, (s, r, c, w) in enumerate(rows)
        ]
    )
    result = write_batsim(table, tmp_path / "w.json")
    workload = _strict_load(result)  # never Infinity nor NaN
    assert result.rows_written + result.rows_left_out == len(rows)
    assert sum(result.left_out.values()) == result.rows_left_out
    for job in workload["jobs"]:
        assert math.isfinite(job["subtime"])
        assert job.get("walltime", 1.0) > 0
    for profile in workload["profiles"].values():
        assert math.isfinite(profile["delay"])
        assert profile["delay"] > 0
