"""The Batsim workload writer: a ``jobs`` or ``trace`` table as a Batsim workload JSON file.

A Batsim workload (``oar-team/batsim:docs/input-workload.rst``, ``shared/reference/parsers.md``
§5.3) is one JSON object::

    {"nb_res": 4,
     "jobs": [{"id": "1", "subtime": 0.0, "res": 2, "walltime": 900.0, "profile": "delay_60"}],
     "profiles": {"delay_60": {"type": "delay", "delay": 60.0}}}

Jobs are delay jobs: each distinct run time is one profile, named ``delay_<seconds>``. Times are
float seconds, ``subtime`` relative to the first submit written.

What Batsim accepts, and what is done about the rest (Batsim checks its input with assertions
that abort the whole simulation: ``src/profiles.cpp`` and ``src/jobs.cpp`` of oar-team/batsim):

- a delay profile's ``delay`` must be strictly positive. A run time of 0 is what a log writes
  for a job shorter than its clock's second (SWF: "a run time of 0 means the job ran for less
  than 0.5 seconds"), so such a job is kept, with the delay raised to ``min_delay`` (0.5 s by
  default, the longest such a job can have run): leaving it out would change the workload's
  arrivals and job count. The jobs raised are counted in the result.
- ``walltime`` must be −1 (none) or strictly positive: a requested time of 0 or less is left
  out of the job (no limit), counted. A walltime below the delay is kept (Batsim kills the job at
  its walltime, as the site's scheduler would have), counted as a warning.
- ``res`` must be a non-negative integer: a job without a positive core count is left out.
- JSON has no infinity or NaN: a trace row whose run or submit time is not finite (or beyond
  2^53 s, where differences of two of them overflow) is left out, such a walltime is left out of
  its job (no limit); both are counted.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from gridtrace._atomic import write_text
from gridtrace._log import library_logger
from gridtrace.errors import ConfigError, SchemaError
from gridtrace.logs._io import StrPath
from gridtrace.logs._swf import (
    F64,
    ExportResult,
    _floats,
    _strings,
    log_headers,
    processors_of_headers,
)
from gridtrace.schema import trace_metadata

__all__ = ["DEFAULT_MIN_DELAY_S", "write_batsim"]

logger = library_logger(__name__)

_PROFILES = ("delay",)

DEFAULT_MIN_DELAY_S = 0.5
"""The delay of a job whose run time is 0 s: the most it can have run (SWF rounds to seconds)."""

_RAISED = "delays raised to {min_delay:g} s (run time 0: Batsim needs a positive delay)"
_NO_WALLTIME = "walltimes not positive, left out (no limit)"
_SHORT_WALLTIME = "kept with a walltime below the run time (Batsim kills them at the walltime)"
_INFINITE_WALLTIME = "walltimes not finite (or beyond 2^53 s), left out (no limit)"
_NOT_FINITE = "with a run or submit time that is not finite (or beyond 2^53 s)"
_LIMIT_S = 2.0**53  # seconds beyond which a time is damage (SWF's and GWF's bound too)


def _beyond(values: F64) -> npt.NDArray[np.bool_]:
    """Where values are infinite or beyond :data:`_LIMIT_S` (NaN is not)."""
    with np.errstate(invalid="ignore"):
        return np.abs(values) > _LIMIT_S


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


class _Selection:
    """The jobs to write, with the reasons others were left out."""

    def __init__(
        self,
        ids: list[str],
        submit: F64,
        run: F64,
        res: F64,
        walltime: F64,
        nb_res: int,
        left_out: dict[str, int],
    ) -> None:
        self.ids, self.submit, self.run, self.res, self.walltime = ids, submit, run, res, walltime
        self.nb_res = nb_res
        self.left_out = left_out


def _from_trace(trace: pa.Table, nb_res: int | None) -> _Selection:
    if nb_res is None:
        try:
            nb_res = int(trace_metadata(trace)["cores"])
        except SchemaError as exc:
            msg = f"the trace has no metadata giving its cores P ({exc}); pass nb_res"
            raise ConfigError(msg) from None
    run = _floats(trace, "run_s")
    res = _floats(trace, "cores")
    submit = _floats(trace, "submit_s")
    infinite = _beyond(run) | np.isnan(submit) | _beyond(submit)
    keep = ~np.isnan(run) & (run >= 0) & (res > 0) & ~infinite
    left_out = {
        "with no run time": int((np.isnan(run) | (run < 0)).sum()),
        _NOT_FINITE: int((infinite & ~np.isnan(run) & ~(run < 0)).sum()),
        "with no core count": int(((run >= 0) & ~infinite & ~(res > 0)).sum()),
    }
    rows = np.flatnonzero(keep)
    ids = trace.column("job_id").to_pylist()
    return _Selection(
        [str(ids[i]) for i in rows],
        submit[rows],
        run[rows],
        res[rows],
        _floats(trace, "walltime_req_s")[rows],
        nb_res,
        left_out,
    )


def _from_jobs(jobs: pa.Table, nb_res: int | None) -> _Selection:
    submit = _floats(jobs, "submit_time")
    run = _floats(jobs, "run_s")
    run = np.where(np.isnan(run), _floats(jobs, "end_time") - _floats(jobs, "start_time"), run)
    alloc = _floats(jobs, "cores_alloc")
    res = np.where(alloc > 0, alloc, _floats(jobs, "cores_req")).astype(np.float64)
    state = _strings(jobs, "state")
    never_ran = np.array([s in ("DELETED", "PENDING") for s in state], dtype=bool)
    ran = ~never_ran & ~np.isnan(run) & (run >= 0)
    placed = ran & ~np.isnan(submit) & (res > 0)
    left_out = {
        "never ran or no run time": int((~ran).sum()),
        "with no submit time": int((ran & np.isnan(submit)).sum()),
        "with no core count": int((ran & ~np.isnan(submit) & ~(res > 0)).sum()),
    }
    keep = np.flatnonzero(placed)
    raw = _strings(jobs, "job_id_raw")
    ids = [raw[i] or str(i + 1) for i in keep]
    res_kept = res[keep]
    if nb_res is None:
        stored_format, headers = log_headers(jobs)
        stated = processors_of_headers(headers) if stored_format in ("swf", "gwf") else None
        if stated is not None:
            nb_res = stated[0]
            logger.info("Batsim workload: nb_res %d from the log's header (%s)", *stated)
        else:
            nb_res = int(res_kept.max()) if len(res_kept) else 1
            logger.warning(
                "Batsim workload: nb_res not given and no log header states it; using the "
                "largest job, %d cores (pass nb_res to set the platform size)",
                nb_res,
            )
    return _Selection(
        ids,
        submit[keep],
        run[keep],
        res_kept,
        _floats(jobs, "walltime_req_s")[keep],
        nb_res,
        left_out,
    )


def write_batsim(
    jobs_or_trace: pa.Table,
    path: StrPath,
    *,
    nb_res: int | None = None,
    profile: str = "delay",
    min_delay: float = DEFAULT_MIN_DELAY_S,
) -> ExportResult:
    """Write a ``jobs`` or ``trace`` table as a Batsim workload JSON file of delay jobs, atomically.

    From a ``trace`` table (``gridtrace.schema.TRACE``) every row with a run time and a core
    count is a job: ``id`` is ``job_id``, ``res`` ``cores``, the delay ``run_s``. From a
    ``jobs`` table only the attempts that ran are written: a known, non-negative ``run_s`` (or
    end − start), a submit time and a core count (``cores_alloc``, else ``cores_req``), state not
    DELETED or PENDING. ``id`` is then ``job_id_raw``; a repeated id (several attempts of one
    job) gets ``/1``, ``/2``, ... added. ``subtime`` is the submit time in seconds after the first
    submit written, ``walltime`` the requested walltime where known and positive, and jobs are
    sorted by (subtime, row). Every row left out and every value changed to satisfy Batsim is
    counted in the result, by reason (see the module notes), and logged.

    Parameters
    ----------
    jobs_or_trace : pyarrow.Table
        A ``jobs`` table (has ``submit_time``) or a ``trace`` table (has ``submit_s``).
    path : str or path-like
        The JSON file to write, replaced in one step.
    nb_res : int, optional
        Machines of the platform. Defaults, for a trace, to the cores P of its metadata
        (:func:`gridtrace.schema.trace_metadata`) and, for a jobs table, to the processors its
        log's header states (``MaxProcs``, else ``MaxNodes``), else the largest job (with a
        logged warning).
    profile : {"delay"}, default "delay"
        The profile type; only delay profiles (one per distinct run time) are written.
    min_delay : float, default 0.5
        The delay of a job whose run time is 0 (Batsim refuses a delay that is not positive).

    Returns
    -------
    ExportResult
        The file (it stands for its path), the jobs written, the rows left out and the values
        adjusted, by reason.

    Raises
    ------
    ConfigError
        If the table is neither kind, ``nb_res`` or ``min_delay`` is not positive, ``nb_res`` is
        missing from a trace's metadata, the profile type is not supported, or a job asks for
        more than ``nb_res`` resources (naming the first such job).
    """
    if profile not in _PROFILES:
        msg = f"profile must be one of {', '.join(_PROFILES)}, not {profile!r}"
        raise ConfigError(msg)
    if not min_delay > 0:
        msg = f"min_delay must be positive (Batsim refuses a delay of 0), not {min_delay}"
        raise ConfigError(msg)
    names = set(jobs_or_trace.column_names)
    if {"job_id", "submit_s", "run_s", "cores"} <= names:
        chosen = _from_trace(jobs_or_trace, nb_res)
    elif "submit_time" in names:
        chosen = _from_jobs(jobs_or_trace, nb_res)
    else:
        msg = "write_batsim needs a jobs table (submit_time, ...) or a trace table (submit_s, ...)"
        raise ConfigError(msg)
    if chosen.nb_res < 1:
        msg = f"nb_res must be at least 1, not {chosen.nb_res}"
        raise ConfigError(msg)
    res, submit, walltime = chosen.res, chosen.submit, chosen.walltime
    too_big = np.flatnonzero(res > chosen.nb_res)
    if len(too_big):
        first = int(too_big[0])
        msg = (
            f"job {chosen.ids[first]!r} asks for {int(res[first])} resources but the platform "
            f"has nb_res={chosen.nb_res}; {len(too_big)} job(s) are too big (raise nb_res or "
            "drop them)"
        )
        raise ConfigError(msg)

    raised = chosen.run <= 0
    delay = np.where(raised, float(min_delay), chosen.run)
    no_walltime = ~np.isnan(walltime) & (walltime <= 0)
    infinite_walltime = _beyond(walltime) & (walltime > 0)
    walltime = np.where(no_walltime | infinite_walltime, np.nan, walltime)
    short = ~np.isnan(walltime) & (walltime < delay)

    order = np.lexsort((np.arange(len(submit)), submit))
    origin = float(submit[order[0]]) if len(order) else 0.0
    ids = _unique_ids([chosen.ids[i] for i in order])
    records: list[dict[str, Any]] = []
    profiles: dict[str, dict[str, Any]] = {}
    for job_id, i in zip(ids, order.tolist(), strict=True):
        name = _profile_name(float(delay[i]))
        profiles.setdefault(name, {"type": "delay", "delay": float(delay[i])})
        job: dict[str, Any] = {
            "id": job_id,
            "subtime": float(submit[i]) - origin,
            "res": int(res[i]),
        }
        if not np.isnan(walltime[i]):
            job["walltime"] = float(walltime[i])
        job["profile"] = name
        records.append(job)
    workload = {"nb_res": int(chosen.nb_res), "jobs": records, "profiles": profiles}
    target = Path(path)
    write_text(target, json.dumps(workload, indent=1) + "\n")
    adjusted = {
        _RAISED.format(min_delay=min_delay): int(raised.sum()),
        _NO_WALLTIME: int(no_walltime.sum()),
        _INFINITE_WALLTIME: int(infinite_walltime.sum()),
        _SHORT_WALLTIME: int(short.sum()),
    }
    result = ExportResult(
        path=target,
        format="batsim",
        rows_in=jobs_or_trace.num_rows,
        rows_written=len(records),
        left_out={why: count for why, count in chosen.left_out.items() if count},
        adjusted={what: count for what, count in adjusted.items() if count},
    )
    if result.rows_left_out:
        logger.warning("Batsim workload: %s", result.describe())
    elif result.adjusted:
        logger.info("Batsim workload: %s", result.describe())
    logger.debug("wrote %d Batsim jobs, %d profiles to %s", len(records), len(profiles), target)
    return result
