"""The Batsim workload writer: a ``jobs`` or ``trace`` table as a Batsim workload JSON file.

A Batsim workload (``oar-team/batsim:docs/input-workload.rst``, ``shared/reference/parsers.md``
§5.3) is one JSON object::

    {"nb_res": 4,
     "jobs": [{"id": "1", "subtime": 0.0, "res": 2, "walltime": 900.0, "profile": "delay_60"}],
     "profiles": {"delay_60": {"type": "delay", "delay": 60.0}}}

Jobs are delay jobs: each distinct run time is one profile, named ``delay_<seconds>``. Times are
float seconds, ``subtime`` relative to the first submit written.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from gridtrace.errors import ConfigError, SchemaError
from gridtrace.logs._io import StrPath
from gridtrace.logs._swf import F64, _floats, _strings
from gridtrace.schema import trace_metadata

__all__ = ["write_batsim"]

logger = logging.getLogger(__name__)

_PROFILES = ("delay",)


def _profile_name(delay: float) -> str:
    return f"delay_{int(delay)}" if float(delay).is_integer() else f"delay_{delay!r}"


def _unique_ids(ids: list[str]) -> list[str]:
    """Make ids unique: a repeated id (attempts, reused numbers) gets ``/1``, ``/2``, ... added."""
    seen: Counter[str] = Counter(ids)
    if all(count == 1 for count in seen.values()):
        return ids
    taken = set(ids)
    occurrence: Counter[str] = Counter()
    out: list[str] = []
    for job_id in ids:
        occurrence[job_id] += 1
        if seen[job_id] == 1 or occurrence[job_id] == 1:
            out.append(job_id)
            continue
        k = occurrence[job_id] - 1
        candidate = f"{job_id}/{k}"
        while candidate in taken:
            k += 1
            candidate = f"{job_id}/{k}"
        taken.add(candidate)
        out.append(candidate)
    return out


def _from_trace(trace: pa.Table, nb_res: int | None) -> tuple[list[str], F64, F64, F64, F64, int]:
    if nb_res is None:
        try:
            nb_res = int(trace_metadata(trace)["cores"])
        except SchemaError as exc:
            msg = f"the trace has no metadata giving its cores P ({exc}); pass nb_res"
            raise ConfigError(msg) from None
    ids = [str(v) for v in trace.column("job_id").to_pylist()]
    return (
        ids,
        _floats(trace, "submit_s"),
        _floats(trace, "run_s"),
        _floats(trace, "cores"),
        _floats(trace, "walltime_req_s"),
        nb_res,
    )


def _from_jobs(jobs: pa.Table, nb_res: int | None) -> tuple[list[str], F64, F64, F64, F64, int]:
    n = jobs.num_rows
    submit = _floats(jobs, "submit_time")
    run = _floats(jobs, "run_s")
    run = np.where(np.isnan(run), _floats(jobs, "end_time") - _floats(jobs, "start_time"), run)
    alloc = _floats(jobs, "cores_alloc")
    res = np.where(alloc > 0, alloc, _floats(jobs, "cores_req")).astype(np.float64)
    state = _strings(jobs, "state")
    never_ran = np.array([s in ("DELETED", "PENDING") for s in state], dtype=bool)
    ran = ~never_ran & ~np.isnan(run) & (run >= 0)
    placed = ran & ~np.isnan(submit) & (res > 0)
    dropped = {
        "never ran or no run time": int((~ran).sum()),
        "no submit time": int((ran & np.isnan(submit)).sum()),
        "no core count": int((ran & ~np.isnan(submit) & ~(res > 0)).sum()),
    }
    if n - int(placed.sum()):
        logger.warning(
            "Batsim workload: %d of %d jobs left out (%s)",
            n - int(placed.sum()),
            n,
            ", ".join(f"{count} {why}" for why, count in dropped.items() if count),
        )
    keep = np.flatnonzero(placed)
    raw = _strings(jobs, "job_id_raw")
    ids = [raw[i] or str(i + 1) for i in keep]
    res_kept = res[keep]
    if nb_res is None:
        nb_res = int(res_kept.max()) if len(res_kept) else 1
        logger.warning(
            "Batsim workload: nb_res not given; using the largest job, %d cores (pass nb_res to "
            "set the platform size)",
            nb_res,
        )
    return ids, submit[keep], run[keep], res_kept, _floats(jobs, "walltime_req_s")[keep], nb_res


def write_batsim(
    jobs_or_trace: pa.Table,
    path: StrPath,
    *,
    nb_res: int | None = None,
    profile: str = "delay",
) -> Path:
    """Write a ``jobs`` or ``trace`` table as a Batsim workload JSON file of delay jobs.

    From a ``trace`` table (``gridtrace.schema.TRACE``) every row is a job: ``id`` is
    ``job_id``, ``res`` ``cores``, the delay ``run_s``. From a ``jobs`` table only the attempts
    that ran are written: a known, non-negative ``run_s`` (or end − start), a submit time and a
    core count (``cores_alloc``, else ``cores_req``), state not DELETED or PENDING; the others are
    left out and counted in a logged warning. ``id`` is then ``job_id_raw``; a repeated id (several
    attempts of one job) gets ``/1``, ``/2``, ... added. ``subtime`` is the submit time in
    seconds after the first submit written, ``walltime`` the requested walltime where known (as
    logged: Batsim kills a job whose delay exceeds it), and jobs are sorted by (subtime, row).

    Parameters
    ----------
    jobs_or_trace : pyarrow.Table
        A ``jobs`` table (has ``submit_time``) or a ``trace`` table (has ``submit_s``).
    path : str or path-like
        The JSON file to write.
    nb_res : int, optional
        Machines of the platform. Defaults, for a trace, to the cores P of its metadata
        (:func:`gridtrace.schema.trace_metadata`) and, for a jobs table, to the largest job
        (with a logged warning).
    profile : {"delay"}, default "delay"
        The profile type; only delay profiles (one per distinct run time) are written.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    ConfigError
        If the table is neither kind, ``nb_res`` is not positive or missing from a trace's
        metadata, the profile type is not supported, or a job asks for more than ``nb_res``
        resources (naming the first such job).
    """
    if profile not in _PROFILES:
        msg = f"profile must be one of {', '.join(_PROFILES)}, not {profile!r}"
        raise ConfigError(msg)
    names = set(jobs_or_trace.column_names)
    if {"job_id", "submit_s", "run_s", "cores"} <= names:
        ids, submit, run, res, walltime, nb_res = _from_trace(jobs_or_trace, nb_res)
    elif "submit_time" in names:
        ids, submit, run, res, walltime, nb_res = _from_jobs(jobs_or_trace, nb_res)
    else:
        msg = "write_batsim needs a jobs table (submit_time, ...) or a trace table (submit_s, ...)"
        raise ConfigError(msg)
    if nb_res < 1:
        msg = f"nb_res must be at least 1, not {nb_res}"
        raise ConfigError(msg)
    too_big = np.flatnonzero(res > nb_res)
    if len(too_big):
        first = int(too_big[0])
        msg = (
            f"job {ids[first]!r} asks for {int(res[first])} resources but the platform has "
            f"nb_res={nb_res}; {len(too_big)} job(s) are too big (raise nb_res or drop them)"
        )
        raise ConfigError(msg)

    order = np.lexsort((np.arange(len(submit)), submit))
    origin = float(submit[order[0]]) if len(order) else 0.0
    ids = _unique_ids([ids[i] for i in order])
    records: list[dict[str, Any]] = []
    profiles: dict[str, dict[str, Any]] = {}
    for job_id, i in zip(ids, order.tolist(), strict=True):
        delay = float(run[i])
        name = _profile_name(delay)
        profiles.setdefault(name, {"type": "delay", "delay": delay})
        job: dict[str, Any] = {
            "id": job_id,
            "subtime": float(submit[i]) - origin,
            "res": int(res[i]),
        }
        if not np.isnan(walltime[i]):
            job["walltime"] = float(walltime[i])
        job["profile"] = name
        records.append(job)
    workload = {"nb_res": int(nb_res), "jobs": records, "profiles": profiles}
    target = Path(path)
    with target.open("w", encoding="utf-8", newline="\n") as handle:
        json.dump(workload, handle, indent=1)
        handle.write("\n")
    logger.debug("wrote %d Batsim jobs, %d profiles to %s", len(records), len(profiles), target)
    return target
