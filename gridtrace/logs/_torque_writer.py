"""The TORQUE accounting-log writer: ``jobs`` back to daily accounting files.

Each attempt becomes the records a TORQUE server writes for it: Q when it is queued, S when it
starts, D when it is deleted, and E (or R for a rerun) when it ends, each stamped in the site's
local time, with times as UTC epochs. Reading the files back gives the same jobs.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa

from gridtrace._atomic import write_bytes
from gridtrace.errors import ConfigError
from gridtrace.logs._io import StrPath

__all__ = ["format_duration", "format_exec_host", "torque_records", "write_torque"]

_ORDER = {"Q": 0, "S": 1, "D": 2, "R": 3, "E": 4}


def format_duration(seconds: float) -> str:
    """Seconds as TORQUE's ``HH:MM:SS`` (hours may exceed 99)."""
    total = int(seconds)
    if total < 0:
        msg = f"a duration cannot be negative: {seconds}"
        raise ValueError(msg)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}"


def format_exec_host(hosts: list[str], cores: int | None) -> str:
    """``host/0-k`` per host, the cores spread as evenly as they go (first hosts get the rest)."""
    if not hosts:
        return ""
    total = len(hosts) if cores is None else max(int(cores), len(hosts))
    base, extra = divmod(total, len(hosts))
    parts = []
    for index, host in enumerate(hosts):
        count = base + (1 if index < extra else 0)
        parts.append(f"{host}/0" if count == 1 else f"{host}/0-{count - 1}")
    return "+".join(parts)


def _memory(value: int | None) -> str | None:
    if value is None:
        return None
    return f"{value // 1024}kb" if value % 1024 == 0 else f"{value}b"


def _epoch(value: dt.datetime | None) -> int | None:
    return None if value is None else int(value.timestamp())


def _check_value(key: str, value: str, job: str) -> str:
    if any(c in value for c in '"\n\r'):
        msg = f"job {job}: {key}={value!r} cannot be written to a TORQUE log (quote or line end)"
        raise ConfigError(msg)
    return f'"{value}"' if " " in value else value


def _message(pairs: Iterable[tuple[str, Any]], job: str) -> str:
    tokens = []
    for key, value in pairs:
        if value is None or value == "":
            continue
        tokens.append(f"{key}={_check_value(key, str(value), job)}")
    return " ".join(tokens)


def torque_records(
    jobs: pa.Table, exec_host: Sequence[str | None] | None = None
) -> Iterator[tuple[int, int, str, str, str]]:
    """Yield ``(epoch, order, record_type, job_id_raw, message)`` for every record of every job.

    ``order`` keeps a job's records in their natural sequence when they share a second.
    ``exec_host`` optionally gives each row's ``exec_host`` value as the server would log it
    (the slot indices a ``jobs`` table does not keep); ``None`` entries are derived.
    """
    if exec_host is not None and len(exec_host) != jobs.num_rows:
        msg = f"exec_host has {len(exec_host)} entries for {jobs.num_rows} jobs"
        raise ConfigError(msg)
    for index, job in enumerate(jobs.to_pylist()):
        yield from _job_records(job, None if exec_host is None else exec_host[index])


def _job_records(
    job: Mapping[str, Any], exec_host: str | None
) -> Iterator[tuple[int, int, str, str, str]]:
    jid = str(job["job_id_raw"])
    submit = _epoch(job["submit_time"])
    queued = _epoch(job["queue_time"])
    eligible = _epoch(job["eligible_time"])
    start = _epoch(job["start_time"])
    end = _epoch(job["end_time"])
    hosts = list(job["exec_hosts"] or [])
    slots = exec_host or format_exec_host(hosts, job["cores_alloc"])
    identity = [
        ("user", job["user"]),
        ("group", job["group"]),
        ("account", job["account"]),
        ("jobname", job["job_name"]),
        ("queue", job["queue"]),
        ("ctime", submit),
        ("qtime", queued),
        ("etime", eligible),
    ]
    requests = [
        *_core_request(job["nodes_req"], job["cores_req"]),
        ("Resource_List.walltime", _maybe_duration(job["walltime_req_s"])),
        ("Resource_List.mem", _memory(job["mem_req_bytes"])),
    ]
    # a requeued attempt is queued again at its qtime; the first at its ctime
    queue_stamp = queued if job["attempt"] else submit
    if queue_stamp is not None:
        yield queue_stamp, _ORDER["Q"], "Q", jid, _message([("queue", job["queue"])], jid)
    started = start is not None and start > 0
    if start is not None and started:
        running = [("start", start), ("exec_host", slots)]
        yield start, _ORDER["S"], "S", jid, _message([*identity, *running, *requests], jid)
    state = job["state"]
    if state in ("CANCELLED", "DELETED") and end is not None:
        requestor = f"{job['user']}@localhost" if job["user"] else None
        yield end, _ORDER["D"], "D", jid, _message([("requestor", requestor)], jid)
    if end is None:
        return
    if job["end_record_type"] == "R":
        yield end, _ORDER["R"], "R", jid, ""
        return
    usage = [
        ("resources_used.cput", _maybe_duration(job["cpu_time_s"])),
        ("resources_used.mem", _memory(job["mem_used_bytes"])),
        ("resources_used.vmem", _memory(job["vmem_used_bytes"])),
        ("resources_used.walltime", _maybe_duration(job["walltime_used_s"])),
    ]
    ending = [
        ("start", start if started else 0),
        ("exec_host", slots or None),
        *requests,
        ("end", end),
        ("Exit_status", job["exit_code"]),
        *(usage if started else []),
    ]
    yield end, _ORDER["E"], "E", jid, _message([*identity, *ending], jid)


def _maybe_duration(seconds: float | None) -> str | None:
    return None if seconds is None or seconds < 0 else format_duration(seconds)


def _core_request(nodes: int | None, cores: int | None) -> list[tuple[str, Any]]:
    """``nodes=N:ppn=P`` when the cores split evenly over the nodes, else ``procs`` (+ nodect)."""
    if cores is None:
        return [("Resource_List.nodect", nodes)]
    if nodes is not None and nodes >= 1 and cores % nodes == 0:
        return [("Resource_List.nodes", f"{nodes}:ppn={cores // nodes}")]
    return [("Resource_List.procs", cores), ("Resource_List.nodect", nodes)]


def write_torque(
    jobs: pa.Table,
    out_dir: StrPath,
    *,
    tz: str = "UTC",
    exec_host: Sequence[str | None] | None = None,
    extra_lines: Mapping[str, Iterable[bytes]] | None = None,
) -> list[Path]:
    """Write a ``jobs`` table as TORQUE daily accounting files named ``YYYYMMDD``.

    Parameters
    ----------
    jobs : pyarrow.Table
        A ``jobs`` table. Rows without a submit time are skipped.
    out_dir : path
        Folder for the daily files (created).
    tz : str, default "UTC"
        The site's IANA zone: record stamps and file days are local time, epochs are UTC.
    exec_host : sequence of str or None, optional
        Each row's ``exec_host`` as logged, with its slot indices; derived from ``exec_hosts``
        and ``cores_alloc`` (``host/0-k``) where not given.
    extra_lines : mapping of file name to lines, optional
        Raw lines appended to the named daily files (used to plant malformed lines in demos).

    Returns
    -------
    list of Path
        The files written, in date order (each atomically: a temporary file, then a rename).

    Raises
    ------
    ConfigError
        If a value cannot be represented in the format (a double quote or a line end).
    """
    zone = ZoneInfo(tz)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # ties between jobs break by id, so the files do not depend on the table's row order
    records = sorted(torque_records(jobs, exec_host), key=lambda r: (r[0], r[1], r[3]))
    by_day: dict[str, list[bytes]] = {}
    for epoch, _order, record_type, jid, message in records:
        local = dt.datetime.fromtimestamp(epoch, zone)
        stamp = local.strftime("%m/%d/%Y %H:%M:%S")
        line = f"{stamp};{record_type};{jid};{message}".encode()
        by_day.setdefault(local.strftime("%Y%m%d"), []).append(line)
    for name, lines in (extra_lines or {}).items():
        by_day.setdefault(name, []).extend(lines)
    written = []
    for day in sorted(by_day):
        path = out / day
        write_bytes(path, b"".join(line + b"\n" for line in by_day[day]))
        written.append(path)
    return written
