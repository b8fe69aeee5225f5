"""The result of a simulation: the per-job table and its summary, and their files."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from numpy.typing import NDArray

from gridtrace._atomic import write_parquet, write_text
from gridtrace.errors import SchemaError
from gridtrace.schema import SIM_RESULT, conform, trace_metadata, with_trace_metadata

__all__ = ["SIM_METADATA_KEYS", "SimulationResult", "read_result", "sim_metadata"]

SIM_METADATA_KEYS = ("policy", "cores", "site", "origin", "tau_s", "provenance")
"""Parquet key-value metadata of a ``sim_result`` table.

``provenance`` is JSON: ``{"trace": <the trace's provenance>, "simulation": {...}}``.
"""


def with_sim_metadata(
    table: pa.Table,
    *,
    policy: str,
    cores: int,
    site: str,
    origin: str,
    tau_s: float,
    provenance: Mapping[str, Any],
) -> pa.Table:
    """Attach the ``sim_result`` metadata: the trace keys and the policy (SIM_METADATA_KEYS)."""
    table = with_trace_metadata(
        table, origin=origin, site=site, cores=cores, tau_s=tau_s, provenance=provenance
    )
    return table.replace_schema_metadata(
        {**(table.schema.metadata or {}), b"policy": policy.encode()}
    )


def sim_metadata(table: pa.Table) -> dict[str, Any]:
    """Read the metadata written by the simulator onto a ``sim_result`` table.

    Raises
    ------
    SchemaError
        If a key is missing.
    """
    raw = table.schema.metadata or {}
    if b"policy" not in raw:
        raise SchemaError("sim_result table has no metadata key(s)", ["policy"])
    return {"policy": raw[b"policy"].decode(), **trace_metadata(table)}


def _json_safe(value: Any) -> Any:
    """Replace non-finite floats by None and numpy scalars by Python ones: strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.generic):
        return _json_safe(value.item())
    return value


@dataclass(frozen=True, eq=False)
class SimulationResult:
    """What :func:`~gridtrace.sim.simulate` returns.

    Parameters
    ----------
    jobs : pyarrow.Table
        One row per job (schema :data:`gridtrace.schema.SIM_RESULT`), in (submit_s, job_id)
        order, with the metadata of :data:`SIM_METADATA_KEYS`.
    summary : dict
        Per-class and per-VO statistics, utilisation, makespan and the run's settings (JSON types;
        see :func:`~gridtrace.sim.summarise`, plus ``policy``, ``cores``, ``site``, ``tau_s``,
        ``engine``, ``vo_shares``, ``provenance`` and the pool-size series ``pool_size``, see
        :attr:`pool_timeline`).
    """

    jobs: pa.Table
    summary: dict[str, Any]

    @property
    def policy(self) -> str:
        """The policy's name."""
        return str(self.summary["policy"])

    @property
    def pool_timeline(self) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """The pool size over time: (times, sizes) of the summary's ``pool_size`` series.

        ``sizes[k]`` cores are provisioned from ``times[k]`` until ``times[k + 1]`` (the last one
        until the run's end). The first entry is the first event (the first submit) with the
        initial P; every later entry is a change of the pool size. Both arrays are empty for an
        empty trace.

        Raises
        ------
        SchemaError
            If the summary has no ``pool_size`` series.
        """
        series = self.summary.get("pool_size")
        if not isinstance(series, Mapping) or "time_s" not in series or "size" not in series:
            raise SchemaError("the summary has no pool_size series", ["pool_size"])
        times = np.asarray(series["time_s"], dtype=np.float64)
        sizes = np.asarray(series["size"], dtype=np.int64)
        return times, sizes

    @property
    def metadata(self) -> dict[str, Any]:
        """The parsed metadata of :attr:`jobs` (see :func:`sim_metadata`)."""
        return sim_metadata(self.jobs)

    def write(
        self, parquet_path: str | PathLike[str], summary_json_path: str | PathLike[str]
    ) -> None:
        """Write the jobs as Parquet and the summary as JSON (parent folders are created).

        Each file is written to a temporary file beside it and renamed, and the summary last
        (the old one removed first): a summary present means the jobs beside it are complete
        and of the same run, whenever the run was stopped.
        """
        parquet = Path(parquet_path)
        summary = Path(summary_json_path)
        parquet.parent.mkdir(parents=True, exist_ok=True)
        summary.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(_json_safe(self.summary), indent=2, sort_keys=True, allow_nan=False)
        summary.unlink(missing_ok=True)
        write_parquet(self.jobs, parquet)
        write_text(summary, text + "\n")


def read_result(
    parquet_path: str | PathLike[str], summary_json_path: str | PathLike[str]
) -> SimulationResult:
    """Read a result written by :meth:`SimulationResult.write`.

    Raises
    ------
    SchemaError
        If the Parquet file is not a ``sim_result`` table.
    """
    table = pq.read_table(Path(parquet_path))
    table = conform(table, SIM_RESULT)
    summary = json.loads(Path(summary_json_path).read_text(encoding="utf-8"))
    return SimulationResult(jobs=table, summary=summary)
