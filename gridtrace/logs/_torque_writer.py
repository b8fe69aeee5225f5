"""The TORQUE accounting-log writer: ``jobs`` back to daily accounting files.

Each attempt becomes the records a TORQUE server writes for it: Q when it is queued, S when it
starts, D when it is deleted, and E (or R for a rerun) when it ends, each stamped in the site's
local time, with times as UTC epochs. Reading the files back gives the same jobs.

Two paths give the same bytes: :func:`torque_records` builds one job's records at a time in
Python (the reference), :func:`torque_lines` builds every line column by column with Arrow
string kernels (what :func:`write_torque` uses; about 5x faster, so a benchmark can write tens
of millions of jobs). A table the columnar path cannot write exactly goes through the reference.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeAlias, cast
from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gridtrace._atomic import write_bytes
from gridtrace._log import library_logger
from gridtrace.errors import ConfigError
from gridtrace.logs._io import StrPath

__all__ = [
    "day_texts",
    "format_duration",
    "format_exec_host",
    "torque_day_texts",
    "torque_lines",
    "torque_records",
    "write_torque",
]

logger = library_logger(__name__)

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
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    by_day = torque_day_texts(jobs, tz=tz, exec_host=exec_host)
    for name, lines in (extra_lines or {}).items():
        by_day[name] = by_day.get(name, b"") + b"".join(line + b"\n" for line in lines)
    written = []
    for day in sorted(by_day):
        path = out / day
        write_bytes(path, by_day[day])
        written.append(path)
    return written


# --- the columnar writer: the same text as the per-job records, built column by column ---

_LINES_SCHEMA = pa.schema(
    cast(
        "list[pa.Field[Any]]",
        [
            pa.field("epoch", pa.int64()),
            pa.field("order", pa.int8()),
            pa.field("job_id_raw", pa.string()),
            pa.field("row", pa.int64()),
            pa.field("day", pa.string()),
            pa.field("line", pa.large_string()),
        ],
    )
)
_SORT_KEYS: list[tuple[str, Literal["ascending", "descending"]]] = [
    (key, "ascending") for key in ("day", "epoch", "order", "job_id_raw", "row")
]
_STRING_COLUMNS = ("user", "group", "account", "job_name", "queue")
_INT_COLUMNS = (
    "attempt",
    "nodes_req",
    "cores_req",
    "cores_alloc",
    "mem_req_bytes",
    "mem_used_bytes",
    "vmem_used_bytes",
    "exit_code",
)
_DURATION_COLUMNS = ("walltime_req_s", "walltime_used_s", "cpu_time_s")
_TIME_COLUMNS = ("submit_time", "queue_time", "eligible_time", "start_time", "end_time")
_UNWRITABLE = '["\\n\\r]'
_I64 = np.ndarray[Any, np.dtype[np.int64]]
_BOOL = np.ndarray[Any, np.dtype[np.bool_]]
_Arr: TypeAlias = "pa.Array[Any]"
_NULL_TEXT = pa.scalar(None, pa.string())


class _NotColumnar(Exception):
    """The table holds something only the per-job reference writes exactly (or refuses)."""


def _fn(name: str, *args: object, options: pc.FunctionOptions | None = None) -> _Arr:
    """Call an Arrow compute function by name (strings become scalars), as an array."""
    values = [pa.scalar(a) if isinstance(a, str) else a for a in args]
    return cast("_Arr", pc.call_function(name, values, options))


def _concat(*parts: object) -> _Arr:
    """Element-wise concatenation; null where any part is null."""
    return _fn("binary_join_element_wise", *parts, "")


def _numpy_bool(array: object) -> _BOOL:
    return np.asarray(cast("_Arr", array).to_numpy(zero_copy_only=False), dtype=bool)


def _valid(array: _Arr) -> _BOOL:
    return _numpy_bool(array.is_valid())


def _ints(array: _Arr) -> _I64:
    """Read an integer column as int64, nulls as 0."""
    filled = _fn("coalesce", array.cast(pa.int64()), pa.scalar(0, pa.int64()))
    return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=np.int64)


def _has_unwritable(array: _Arr) -> bool:
    found = _fn("match_substring_regex", array, options=pc.MatchSubstringOptions(_UNWRITABLE))
    return bool(_numpy_bool(_fn("coalesce", found, pa.scalar(value=False))).any())


def torque_day_texts(
    jobs: pa.Table, *, tz: str = "UTC", exec_host: Sequence[str | None] | None = None
) -> dict[str, bytes]:
    """Build the text of each daily file (``YYYYMMDD`` in ``tz``) that :func:`write_torque` writes.

    Built column by column (:func:`torque_lines`); a table the columnar path cannot write
    exactly (a value with a double quote or a line end, which the per-job writer refuses,
    columns of unexpected types, NaN durations, years outside 1000-9999) goes through the
    per-job reference (:func:`torque_records`) instead, so the result is the same either way.
    """
    if exec_host is not None and len(exec_host) != jobs.num_rows:
        msg = f"exec_host has {len(exec_host)} entries for {jobs.num_rows} jobs"
        raise ConfigError(msg)
    try:
        lines = torque_lines(jobs, tz=tz, exec_host=exec_host)
    except _NotColumnar as why:
        logger.debug("TORQUE writer: per-job path (%s)", why)
        return _reference_day_texts(jobs, tz=tz, exec_host=exec_host)
    return day_texts(lines)


def _reference_day_texts(
    jobs: pa.Table, *, tz: str = "UTC", exec_host: Sequence[str | None] | None = None
) -> dict[str, bytes]:
    """Build :func:`torque_day_texts` one Python record at a time (the reference)."""
    zone = ZoneInfo(tz)
    # ties between jobs break by id, so the files do not depend on the table's row order
    records = sorted(torque_records(jobs, exec_host), key=lambda r: (r[0], r[1], r[3]))
    by_day: dict[str, list[bytes]] = {}
    for epoch, _order, record_type, jid, message in records:
        local = dt.datetime.fromtimestamp(epoch, zone)
        stamp = local.strftime("%m/%d/%Y %H:%M:%S")
        line = f"{stamp};{record_type};{jid};{message}\n".encode()
        by_day.setdefault(local.strftime("%Y%m%d"), []).append(line)
    return {day: b"".join(lines) for day, lines in by_day.items()}


def day_texts(lines: pa.Table) -> dict[str, bytes]:
    """Join a :func:`torque_lines` table (or several concatenated) into each day's text.

    Within a day the records are in (epoch, order, job id) order, then by row, as
    :func:`write_torque` writes them; every line ends with a line end.
    """
    if lines.num_rows == 0:
        return {}
    ordered = lines.sort_by(_SORT_KEYS)
    end, nothing = pa.scalar("\n", pa.large_string()), pa.scalar("", pa.large_string())
    text = _fn("binary_join_element_wise", ordered.column("line").combine_chunks(), end, nothing)
    days = ordered.column("day").combine_chunks()
    ends = _numpy_bool(_fn("not_equal", days[1:], days[:-1]))
    cuts = [0, *(np.flatnonzero(ends) + 1).tolist(), len(days)]
    offset_buffer, data_buffer = text.buffers()[1], text.buffers()[2]
    if offset_buffer is None or data_buffer is None:  # pragma: no cover - a non-empty array
        return {}
    offsets = np.frombuffer(memoryview(offset_buffer), dtype=np.int64)[text.offset :]
    data = memoryview(data_buffer)
    out: dict[str, bytes] = {}
    for first, last in itertools.pairwise(cuts):
        out[str(days[first].as_py())] = bytes(data[int(offsets[first]) : int(offsets[last])])
    return out


def torque_lines(
    jobs: pa.Table, *, tz: str = "UTC", exec_host: Sequence[str | None] | None = None
) -> pa.Table:
    """Build every record of every job as a line, with vectorised string operations.

    Parameters
    ----------
    jobs : pyarrow.Table
        A ``jobs`` table, as :func:`torque_records` takes it.
    tz : str, default "UTC"
        The site's IANA zone for the record stamps and days.
    exec_host : sequence of str or None, optional
        As in :func:`write_torque`.

    Returns
    -------
    pyarrow.Table
        ``epoch``, ``order`` (Q, S, D, R, E), ``job_id_raw``, ``row`` (the job's row),
        ``day`` (``YYYYMMDD`` local) and ``line`` (without its line end), one row per record,
        unsorted; :func:`day_texts` sorts and joins them. Each line is the one
        :func:`torque_records` gives for that record.

    Raises
    ------
    _NotColumnar
        If the table needs the per-job writer (see :func:`torque_day_texts`).
    """
    n = jobs.num_rows
    if n == 0:
        return _LINES_SCHEMA.empty_table()
    col = {name: jobs.column(name).combine_chunks() for name in jobs.column_names}
    _check_types(col)
    for name in _STRING_COLUMNS:
        if _has_unwritable(col[name]):
            msg = f"{name} has a quote or a line end"
            raise _NotColumnar(msg)
    epochs = {name: _epochs(col[name]) for name in _TIME_COLUMNS}
    jid = _fn("coalesce", col["job_id_raw"].cast(pa.string()), "None")
    user = col["user"]
    identity = _join(
        [
            _token("user", user),
            _token("group", col["group"]),
            _token("account", col["account"]),
            _token("jobname", col["job_name"]),
            _token("queue", col["queue"]),
            _token("ctime", _int_text(*epochs["submit_time"])),
            _token("qtime", _int_text(*epochs["queue_time"])),
            _token("etime", _int_text(*epochs["eligible_time"])),
        ]
    )
    requests = _join(
        [
            *_core_tokens(col["nodes_req"], col["cores_req"]),
            _token("Resource_List.walltime", _duration_text(col["walltime_req_s"])),
            _token("Resource_List.mem", _memory_text(col["mem_req_bytes"])),
        ]
    )
    start, start_ok = epochs["start_time"]
    end, end_ok = epochs["end_time"]
    started = start_ok & (start > 0)
    exec_token = _token("exec_host", _slots(col, exec_host))
    parts: list[pa.Table] = []

    def add(mask: _BOOL, epoch: _I64, kind: str, message: _Arr) -> None:
        rows = np.flatnonzero(mask)
        if rows.size:
            parts.append(
                pa.table(
                    {
                        "epoch": pa.array(epoch[rows]),
                        "order": pa.array(np.full(rows.size, _ORDER[kind], dtype=np.int8)),
                        "kind": pa.array([kind] * rows.size, pa.string()),
                        "job_id_raw": jid.take(rows),
                        "row": pa.array(rows),
                        "message": message.take(rows),
                    }
                )
            )

    requeued = _numpy_bool(_fn("coalesce", _fn("not_equal", col["attempt"], 0), False))
    submit, submit_ok = epochs["submit_time"]
    queued, queued_ok = epochs["queue_time"]
    q_ok = np.where(requeued, queued_ok, submit_ok)
    add(q_ok, np.where(requeued, queued, submit), "Q", _join([_token("queue", col["queue"])]))
    start_token = _token("start", _int_text(start, started))
    add(started, start, "S", _join([identity, start_token, exec_token, requests]))
    gone = _fn("coalesce", _fn("is_in", col["state"], options=_GONE), False)
    named = _fn("coalesce", _fn("not_equal", user, ""), False)
    requestor = _fn("if_else", named, _concat(user, "@localhost"), _NULL_TEXT)
    add(_numpy_bool(gone) & end_ok, end, "D", _join([_token("requestor", requestor)]))
    rerun = _numpy_bool(_fn("coalesce", _fn("equal", col["end_record_type"], "R"), False))
    add(end_ok & rerun, end, "R", pa.nulls(n, pa.string()))
    usage = _join(
        [
            _token("resources_used.cput", _duration_text(col["cpu_time_s"])),
            _token("resources_used.mem", _memory_text(col["mem_used_bytes"])),
            _token("resources_used.vmem", _memory_text(col["vmem_used_bytes"])),
            _token("resources_used.walltime", _duration_text(col["walltime_used_s"])),
        ]
    )
    ending = _join(
        [
            identity,
            _token("start", _int_text(np.where(started, start, 0), np.ones(n, dtype=bool))),
            exec_token,
            requests,
            _token("end", _int_text(end, end_ok)),
            _token("Exit_status", col["exit_code"].cast(pa.string())),
            _fn("if_else", pa.array(started), usage, _NULL_TEXT),
        ]
    )
    add(end_ok & ~rerun, end, "E", ending)
    if not parts:
        return _LINES_SCHEMA.empty_table()
    records = pa.concat_tables(parts)
    epoch_np = np.asarray(records.column("epoch").to_numpy(), dtype=np.int64)
    stamp_time = pa.array(_local_seconds(epoch_np, tz), pa.timestamp("s"))
    stamp = _fn("strftime", stamp_time, options=pc.StrftimeOptions("%m/%d/%Y %H:%M:%S"))
    day = _fn("strftime", stamp_time, options=pc.StrftimeOptions("%Y%m%d"))
    message = _fn("coalesce", records.column("message"), "")
    line = _fn(
        "binary_join_element_wise",
        stamp,
        records.column("kind"),
        records.column("job_id_raw"),
        message,
        ";",
    )
    return pa.table(
        [
            records.column("epoch"),
            records.column("order"),
            records.column("job_id_raw"),
            records.column("row"),
            day,
            line.cast(pa.large_string()),
        ],
        schema=_LINES_SCHEMA,
    )


_GONE = pc.SetLookupOptions(pa.array(["CANCELLED", "DELETED"]))


def _check_types(col: Mapping[str, _Arr]) -> None:
    def fail(name: str) -> None:
        msg = f"column {name} has type {col[name].type}"
        raise _NotColumnar(msg)

    for name in (*_STRING_COLUMNS, "state", "end_record_type", "job_id_raw"):
        if not (pa.types.is_string(col[name].type) or pa.types.is_null(col[name].type)):
            fail(name)
    for name in _INT_COLUMNS:
        if not (pa.types.is_integer(col[name].type) or pa.types.is_null(col[name].type)):
            fail(name)
    for name in _DURATION_COLUMNS:
        kind = col[name].type
        if pa.types.is_floating(kind):
            if bool(_numpy_bool(_fn("coalesce", _fn("is_nan", col[name]), False)).any()):
                fail(name)
        elif not (pa.types.is_integer(kind) or pa.types.is_null(kind)):
            fail(name)
    for name in _TIME_COLUMNS:
        if not (pa.types.is_timestamp(col[name].type) or pa.types.is_null(col[name].type)):
            fail(name)
    hosts = col["exec_hosts"].type
    if not pa.types.is_null(hosts) and not (
        pa.types.is_list(hosts) and pa.types.is_string(hosts.value_type)
    ):
        fail("exec_hosts")


def _epochs(array: _Arr) -> tuple[_I64, _BOOL]:
    """Whole UTC seconds (``int(datetime.timestamp())``) and where they are known."""
    valid = _valid(array)
    if pa.types.is_null(array.type):
        return np.zeros(len(array), dtype=np.int64), valid
    unit = cast("pa.TimestampType", array.type).unit
    raw = _ints(array.cast(pa.timestamp(unit)))
    per_s = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[unit]
    # datetime.timestamp() is exact to the microsecond; int() truncates towards zero
    micro = raw * (10**6 // per_s) if per_s <= 10**6 else raw // (per_s // 10**6)
    seconds = np.where(micro >= 0, micro // 10**6, -((-micro) // 10**6))
    return seconds.astype(np.int64), valid


def _int_text(values: _I64, valid: _BOOL) -> _Arr:
    return pa.array(values, mask=~valid).cast(pa.string())


def _token(key: str, values: _Arr) -> _Arr:
    """``key=value``, the value quoted if it has a space; null where the value is null or ""."""
    text = values.cast(pa.string())
    empty = _fn("coalesce", _fn("equal", text, ""), True)
    spaced = _fn("match_substring", text, options=pc.MatchSubstringOptions(" "))
    quoted = _fn("if_else", spaced, _concat('"', text, '"'), text)
    kept = _fn("if_else", empty, _NULL_TEXT, quoted)
    return _concat(f"{key}=", kept)


def _join(tokens: Sequence[_Arr]) -> _Arr:
    """Tokens joined by spaces, skipping nulls; null where every token is null.

    (``binary_join_element_wise(..., null_handling="skip")`` drops the rows where every
    input is null, so each token brings its own trailing space, cut off at the end.)
    """
    spaced = [_fn("coalesce", _concat(t, " "), "") for t in tokens]
    joined = _concat(*spaced)
    empty = _fn("equal", joined, "")
    cut = _fn("utf8_slice_codeunits", joined, options=pc.SliceOptions(0, -1))
    return _fn("if_else", empty, _NULL_TEXT, cut)


def _duration_text(array: _Arr) -> _Arr:
    """``HH:MM:SS`` of ``int(seconds)``; null where unknown or negative."""
    if pa.types.is_null(array.type):
        return pa.nulls(len(array), pa.string())
    valid = _valid(array)
    if pa.types.is_integer(array.type):
        total = _ints(array)
        keep = valid & (total >= 0)
    else:
        filled = _fn("coalesce", array.cast(pa.float64()), pa.scalar(0.0))
        numbers = np.asarray(filled.to_numpy(zero_copy_only=False), dtype=np.float64)
        keep = valid & (numbers >= 0)
        total = np.trunc(np.where(keep, numbers, 0.0)).astype(np.int64)
    hours, rest = np.divmod(total, 3600)
    minutes, secs = np.divmod(rest, 60)
    pad = pc.PadOptions(2, "0")
    return _fn(
        "binary_join_element_wise",
        _fn("utf8_lpad", _int_text(hours, keep), options=pad),
        _fn("utf8_lpad", _int_text(minutes, keep), options=pad),
        _fn("utf8_lpad", _int_text(secs, keep), options=pad),
        ":",
    )


def _memory_text(array: _Arr) -> _Arr:
    """``Nkb`` for whole KiB, else ``Nb``; null where unknown."""
    if pa.types.is_null(array.type):
        return pa.nulls(len(array), pa.string())
    valid = _valid(array)
    values = _ints(array)
    whole = pa.array(values % 1024 == 0)
    kb = _concat(_int_text(values // 1024, valid), "kb")
    return _fn("if_else", whole, kb, _concat(_int_text(values, valid), "b"))


def _core_tokens(nodes: _Arr, cores: _Arr) -> list[_Arr]:
    """Build the tokens of :func:`_core_request`: ``nodes=N:ppn=P``, else ``procs``, ``nodect``."""
    nodes_ok, cores_ok = _valid(nodes), _valid(cores)
    node_v, core_v = _ints(nodes), _ints(cores)
    safe = np.where(node_v >= 1, node_v, 1)
    even = cores_ok & nodes_ok & (node_v >= 1) & (core_v % safe == 0)
    spec = _concat(_int_text(node_v, even), ":ppn=", _int_text(core_v // safe, even))
    return [
        _token("Resource_List.nodes", spec),
        _token("Resource_List.procs", _int_text(core_v, cores_ok & ~even)),
        _token("Resource_List.nodect", _int_text(node_v, nodes_ok & ~even)),
    ]


def _slots(col: Mapping[str, _Arr], given: Sequence[str | None] | None) -> _Arr:
    """``exec_host`` per row: the given value where non-empty, else :func:`format_exec_host`."""
    hosts = col["exec_hosts"]
    n = len(hosts)
    if pa.types.is_null(hosts.type):
        derived: _Arr = pa.array([""] * n, pa.string())
    else:
        lists = cast("pa.ListArray[Any]", _fn("coalesce", hosts, pa.scalar([], hosts.type)))
        lengths = _ints(_fn("list_value_length", lists))
        flat = _fn("coalesce", _fn("list_flatten", lists), "None")
        if _has_unwritable(flat):
            msg = "exec_hosts has a quote or a line end"
            raise _NotColumnar(msg)
        parent = _ints(_fn("list_parent_indices", lists))
        bounds = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        position = np.arange(len(flat), dtype=np.int64) - bounds[:-1][parent]
        cores = col["cores_alloc"]
        core_v = _ints(cores)
        total = np.where(_valid(cores), np.maximum(core_v, lengths), lengths)
        base, extra = np.divmod(total, np.where(lengths > 0, lengths, 1))
        count = base[parent] + (position < extra[parent])
        single = count == 1
        many = _concat("/0-", _int_text(count - 1, ~single))
        parts = _concat(flat, _fn("if_else", pa.array(single), "/0", many))
        grouped = pa.ListArray.from_arrays(
            cast("pa.Int32Array", pa.array(bounds.astype(np.int32))), parts
        )
        derived = _fn("binary_join", grouped, "+")
    if given is None:
        return derived
    logged = pa.array(list(given), pa.string())
    if _has_unwritable(logged):
        msg = "exec_host has a quote or a line end"
        raise _NotColumnar(msg)
    use = _fn("coalesce", _fn("not_equal", logged, ""), False)
    return _fn("if_else", use, logged, derived)


def _local_seconds(epochs: _I64, tz: str) -> _I64:
    """UTC epochs as local wall-clock seconds, with the offsets Python's zoneinfo gives."""
    if epochs.size == 0:
        return epochs
    zone = ZoneInfo(tz)

    def offset(epoch: int) -> int:
        local_offset = dt.datetime.fromtimestamp(epoch, zone).utcoffset()
        return 0 if local_offset is None else int(local_offset.total_seconds())

    hours, inverse = np.unique(epochs // 3600, return_inverse=True)
    first = np.array([offset(int(h) * 3600) for h in hours], dtype=np.int64)
    last = np.array([offset(int(h) * 3600 + 3599) for h in hours], dtype=np.int64)
    offsets = first[inverse]
    for i in np.flatnonzero((first != last)[inverse]).tolist():  # a change inside the hour
        offsets[i] = offset(int(epochs[i]))
    local = epochs + offsets
    years = (local // 86400).astype("datetime64[D]").astype("datetime64[Y]").astype(np.int64)
    if years.min() < 1000 - 1970 or years.max() > 9999 - 1970:
        msg = "a year outside 1000-9999"
        raise _NotColumnar(msg)
    return np.asarray(local, dtype=np.int64)
