"""The grid archive logs become traces: VO from the group field, LCG keeps its site partitions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from gridtrace.logs import VOMapping, build_trace, read_swf, write_swf
from gridtrace.schema import trace_metadata, validate

pytestmark = pytest.mark.realdata


def _trace(path: Path, cores: int, tz: str) -> tuple[pa.Table, pa.Table]:
    jobs = VOMapping(fallback_field="group").apply(read_swf(path).jobs)
    return jobs, build_trace(jobs, cores=cores, tz=tz, provenance={"log": path.name})


def test_lpc_egee_2004_trace_takes_vo_from_group(real_data: Path) -> None:
    jobs, trace = _trace(real_data / "swf/LPC-EGEE-2004-1.2-cln.swf.gz", 140, "Europe/Paris")
    validate(trace, "trace")
    meta = trace_metadata(trace)
    assert meta["cores"] == 140
    assert meta["provenance"]["tz"] == "Europe/Paris"
    # every job with a runtime and a submit time ran; the PWA marks jobs cancelled before they
    # started with status 5 and no runtime (DELETED)
    ran = pc.and_(pc.is_valid(jobs["run_s"]), pc.not_equal(jobs["state"], "DELETED"))
    assert trace.num_rows == pc.sum(pc.cast(ran, "int64")).as_py()
    assert trace.num_rows > 200_000
    # VO = the group field (8 known groups; −1 is unknown, so no VO)
    assert set(pc.unique(trace["vo"]).drop_null().to_pylist()) == set(
        pc.unique(jobs["group"]).drop_null().to_pylist()
    )
    assert len(pc.unique(trace["vo"]).drop_null()) == 8
    # queue and partition are named by the header (6 queues, 3 CEs)
    assert set(pc.unique(trace["queue"]).drop_null().to_pylist()) <= {
        "test",
        "short",
        "long",
        "day",
        "infinite",
        "batch",
    }
    assert set(pc.unique(trace["partition"]).to_pylist()) == {
        "clrglop195.in2p3.fr",
        "clrce01.in2p3.fr",
        "clrce02.in2p3.fr",
    }
    # waits are as logged: never negative, known for every job that started
    wait = trace["wait_s"].to_numpy(zero_copy_only=False)
    assert np.nanmin(wait) >= 0


def test_lcg_2005_trace_keeps_site_partitions_and_unknown_waits(
    real_data: Path, tmp_path: Path
) -> None:
    path = real_data / "swf/LCG-2005-1.swf.gz"
    jobs, trace = _trace(path, 24515, "Europe/London")
    validate(trace, "trace")
    # no job has a logged start, yet every one of the 188,041 ran (runtime known)
    assert jobs.column("start_time").null_count == jobs.num_rows == 188_041
    assert trace.num_rows == 188_041
    assert trace.column("wait_s").null_count == trace.num_rows
    # 170 sites (computing elements) as partitions, named as in the header
    partitions = pc.unique(trace["partition"]).to_pylist()
    assert len(partitions) == 170
    assert {"cclcgceli02.in2p3.fr", "rl.ac.uk", "lxgate13.cern.ch"} <= set(partitions)
    # 28 VOs from the group field
    assert len(pc.unique(trace["vo"]).drop_null()) == 28
    # jobs per site survive a write → read of the jobs table through SWF
    again = read_swf(write_swf(jobs, tmp_path / "lcg.swf")).jobs
    assert (
        pc.value_counts(again["partition"]).to_pylist()
        == pc.value_counts(jobs["partition"]).to_pylist()
    )
