"""Export a ``trace`` table as a ``jobs`` table, so that :func:`gridtrace.logs.write_swf` writes it.

A trace has float seconds from its origin; a ``jobs`` table (and SWF) has whole seconds and UTC
instants. The conversion rounds ``submit_s`` and ``run_s`` to the nearest second (rows whose value
changed are flagged ``ROUNDED``), places submissions at ``origin + submit_s``, and fills what a
trace does not know with nulls (start and end times: a synthetic job has not been scheduled; SWF
then writes −1). A trace whose origin is the synthetic one (1970-01-01) has no real time: every row
is flagged ``TIME_RELATIVE`` and the SWF file has no ``UnixStartTime``.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from gridtrace.schema import JOBS, conform, trace_metadata, validate

if TYPE_CHECKING:
    from gridtrace.logs._swf import ExportResult

__all__ = ["trace_to_jobs", "write_trace_swf"]


def trace_to_jobs(trace: pa.Table) -> pa.Table:
    """Convert a ``trace`` table to a ``jobs`` table (one completed attempt per job).

    Parameters
    ----------
    trace : pyarrow.Table
        A ``trace`` table with its metadata.

    Returns
    -------
    pyarrow.Table
        A ``jobs`` table: ``job_seq`` = job_id + 1, ``group`` and ``vo`` = the trace's VO,
        ``cores_req`` = ``cores_alloc`` = cores, state COMPLETED, ``source_format`` "trace",
        ``src_file`` ``"trace:<site>"`` and ``src_line`` the row number (from 1).
    """
    from gridtrace.models._synth import SYNTHETIC_ORIGIN

    validate(trace, "trace")
    meta = trace_metadata(trace)
    n = trace.num_rows
    origin = dt.datetime.fromisoformat(meta["origin"])
    origin_s = int(origin.timestamp())
    submit = np.asarray(trace.column("submit_s").to_numpy(zero_copy_only=False), dtype=np.float64)
    run = np.asarray(trace.column("run_s").to_numpy(zero_copy_only=False), dtype=np.float64)
    submit_whole = np.rint(submit)
    run_whole = np.rint(run)
    rounded = (submit_whole != submit) | (run_whole != run)
    relative = meta["origin"] == SYNTHETIC_ORIGIN
    flags: list[list[str] | None] = []
    for r in rounded:
        row = (["ROUNDED"] if r else []) + (["TIME_RELATIVE"] if relative else [])
        flags.append(row or None)
    ids = trace.column("job_id").to_numpy(zero_copy_only=False)
    key = pa.array([str(int(i)) for i in ids], pa.string())
    wall = trace.column("walltime_req_s").to_numpy(zero_copy_only=False)
    wait = trace.column("wait_s").to_numpy(zero_copy_only=False)
    site = str(meta["site"])
    table = pa.table(
        {
            "site": pa.array([site] * n, pa.string()),
            "source_format": pa.array(["trace"] * n, pa.string()),
            "job_key": key,
            "job_id_raw": key,
            "job_seq": pa.array(np.asarray(ids, dtype=np.int64) + 1),
            "attempt": pa.array(np.ones(n, dtype=np.int16)),
            "n_attempts": pa.array(np.ones(n, dtype=np.int16)),
            "user": trace.column("user").combine_chunks(),
            "group": trace.column("vo").combine_chunks(),
            "vo": trace.column("vo").combine_chunks(),
            "queue": trace.column("queue").combine_chunks(),
            "partition": trace.column("partition").combine_chunks(),
            "submit_time": pa.array((submit_whole + origin_s).astype(np.int64), pa.int64()).cast(
                pa.timestamp("s", tz="UTC")
            ),
            "wait_s": pa.array(np.rint(wait), pa.float64(), from_pandas=True).cast(pa.int64()),
            "run_s": pa.array(run_whole.astype(np.int64)),
            "walltime_req_s": pa.array(np.rint(wall), pa.float64(), from_pandas=True).cast(
                pa.int64()
            ),
            "cores_req": trace.column("cores").combine_chunks(),
            "cores_alloc": trace.column("cores").combine_chunks(),
            "state": pa.array(["COMPLETED"] * n, pa.string()),
            "src_file": pa.array([f"trace:{site}"] * n, pa.string()),
            "src_line": pa.array(np.arange(1, n + 1, dtype=np.int64)),
            "flags": pa.array(flags, pa.list_(pa.string())),
        }
    )
    return conform(table, JOBS)


def write_trace_swf(
    trace: pa.Table, path: str | os.PathLike[str], *, header: Mapping[str, Any] | None = None
) -> ExportResult:
    """Write a ``trace`` table as an SWF file (via :func:`trace_to_jobs` and ``write_swf``).

    Parameters
    ----------
    trace : pyarrow.Table
        A ``trace`` table with its metadata.
    path : str or path-like
        The SWF file to write.
    header : mapping, optional
        Extra SWF header entries; ``Computer`` (the site), ``MaxProcs`` (the trace's P) and
        ``TimeZoneString`` (the trace's ``tz``, where it has one) are set unless given, and a
        ``Note`` says the times were rounded to whole seconds.

    Returns
    -------
    ExportResult
        The file written (it stands for its path), the rows written and the values rounded.
    """
    from gridtrace.logs import write_swf

    meta = trace_metadata(trace)
    given = dict(header or {})
    notes = given.pop("Note", [])
    notes = list(notes) if isinstance(notes, list | tuple) else [notes]
    notes.append(f"gridtrace trace {meta['site']}: submit and run times rounded to whole seconds")
    zone = meta["provenance"].get("tz") if isinstance(meta["provenance"], dict) else None
    out: dict[str, Any] = {
        "Computer": meta["site"],
        **({"TimeZoneString": zone} if isinstance(zone, str) and zone else {}),
        "MaxProcs": int(meta["cores"]),
        **given,
        "Note": notes,
    }
    return write_swf(trace_to_jobs(trace), path, header=out)
