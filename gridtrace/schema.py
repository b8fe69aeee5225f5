"""Arrow schemas of gridtrace's tables, and their validation.

Four tables flow through the pipeline (see DESIGN.md, "Tables"):

``records``
    One row per accounting line, lossless: the layer every other table is derived from.
``jobs``
    One row per execution attempt. Times are UTC, durations seconds, memory bytes, sizes cores.
``trace``
    What the models and the simulator consume: one row per job, sorted by (submit, id), with the
    trace's origin, site, cores P and interactive threshold τ in the Parquet metadata.
``sim_result``
    One row per simulated job.

``segments``
    One row per stable period of a trace, as cut by :mod:`gridtrace.segment`.

``quarantine`` holds the lines a parser could not read, so that nothing is lost.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gridtrace.errors import SchemaError

__all__ = [
    "JOBS",
    "JOB_STATES",
    "QUARANTINE",
    "RECORDS",
    "SCHEMAS",
    "SEGMENTS",
    "SIM_RESULT",
    "TRACE",
    "TRACE_METADATA_KEYS",
    "conform",
    "empty_table",
    "read_table",
    "trace_metadata",
    "validate",
    "with_trace_metadata",
]

_UTC = pa.timestamp("s", tz="UTC")


def _fields(*fields: pa.Field[Any]) -> list[pa.Field[Any]]:
    return list(fields)


_FLAGS = pa.list_(pa.string())

RECORDS = pa.schema(
    _fields(
        pa.field("site", pa.string(), nullable=False),
        pa.field("source_format", pa.string(), nullable=False),
        pa.field("src_file", pa.string(), nullable=False),
        pa.field("src_line", pa.int64(), nullable=False),
        pa.field("record_type", pa.string(), nullable=False),
        pa.field("stamp", pa.string()),  # the record's own time stamp, exactly as logged
        pa.field("stamp_utc", _UTC),  # that stamp placed in UTC with the site's inferred offset
        pa.field("job_id_raw", pa.string()),
        pa.field("attrs", pa.map_(pa.string(), pa.string())),
        pa.field("flags", _FLAGS),
        # the line's bytes, kept only when the line needed repair (non-UTF-8, control characters,
        # truncation), so that the original is always recoverable
        pa.field("raw", pa.binary()),
    )
)

QUARANTINE = pa.schema(
    _fields(
        pa.field("site", pa.string(), nullable=False),
        pa.field("source_format", pa.string(), nullable=False),
        pa.field("src_file", pa.string(), nullable=False),
        pa.field("src_line", pa.int64(), nullable=False),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("raw", pa.binary(), nullable=False),
    )
)

JOB_STATES = (
    "COMPLETED",  # ran and ended normally (exit code 0)
    "FAILED",  # ran, or tried to, and ended with an error
    "CANCELLED",  # deleted by a user or an operator while running
    "TIMEOUT",  # killed at its walltime limit
    "REQUEUED",  # this attempt ended and the job was queued again
    "NODE_FAIL",  # ended because a node it ran on failed (Slurm)
    "PREEMPTED",  # ended because a higher-priority job took its cores (Slurm)
    "DELETED",  # never ran: removed while queued
    "RUNNING",  # started, no end record in the log
    "PENDING",  # queued, no start and no end record in the log
    "UNKNOWN",
)

JOBS = pa.schema(
    _fields(
        pa.field("site", pa.string(), nullable=False),
        pa.field("source_format", pa.string(), nullable=False),
        pa.field("job_key", pa.string(), nullable=False),
        pa.field("job_id_raw", pa.string(), nullable=False),
        pa.field("job_seq", pa.int64()),
        pa.field("array_index", pa.int32()),
        pa.field("attempt", pa.int16(), nullable=False),
        pa.field("n_attempts", pa.int16(), nullable=False),
        pa.field("user", pa.string()),
        pa.field("group", pa.string()),
        pa.field("account", pa.string()),
        pa.field("vo", pa.string()),
        pa.field("queue", pa.string()),
        # a machine partition, or in grid logs the site / computing element the job ran at
        pa.field("partition", pa.string()),
        pa.field("job_name", pa.string()),
        pa.field("submit_time", _UTC),
        pa.field("queue_time", _UTC),
        pa.field("eligible_time", _UTC),
        pa.field("start_time", _UTC),
        pa.field("end_time", _UTC),
        pa.field("wait_s", pa.int64()),
        pa.field("run_s", pa.int64()),
        pa.field("walltime_used_s", pa.int64()),
        pa.field("walltime_req_s", pa.int64()),
        pa.field("cpu_time_s", pa.float64()),
        pa.field("nodes_req", pa.int32()),
        pa.field("cores_req", pa.int32()),
        pa.field("gpus_req", pa.int32()),
        pa.field("nodes_alloc", pa.int32()),
        pa.field("cores_alloc", pa.int32()),
        pa.field("gpus_alloc", pa.int32()),
        pa.field("exec_hosts", pa.list_(pa.string())),
        pa.field("mem_req_bytes", pa.int64()),
        pa.field("mem_used_bytes", pa.int64()),
        pa.field("vmem_used_bytes", pa.int64()),
        pa.field("exit_code", pa.int32()),
        pa.field("exit_signal", pa.int32()),
        pa.field("state", pa.string(), nullable=False),
        pa.field("end_record_type", pa.string()),
        pa.field("tz_offset_s", pa.int32()),
        pa.field("src_file", pa.string(), nullable=False),
        pa.field("src_line", pa.int64(), nullable=False),
        pa.field("flags", _FLAGS),
    )
)

TRACE = pa.schema(
    _fields(
        pa.field("job_id", pa.int64(), nullable=False),
        pa.field("submit_s", pa.float64(), nullable=False),
        pa.field("run_s", pa.float64(), nullable=False),
        pa.field("cores", pa.int32(), nullable=False),
        pa.field("walltime_req_s", pa.float64()),
        pa.field("vo", pa.string()),
        pa.field("user", pa.string()),
        pa.field("queue", pa.string()),
        pa.field("partition", pa.string()),
        pa.field("interactive", pa.bool_(), nullable=False),
        pa.field("wait_s", pa.float64()),  # as logged, where the source has it
    )
)

TRACE_METADATA_KEYS = ("origin", "site", "cores", "tau_s", "provenance")

SIM_RESULT = pa.schema(
    _fields(
        pa.field("job_id", pa.int64(), nullable=False),
        pa.field("submit_s", pa.float64(), nullable=False),
        pa.field("start_s", pa.float64(), nullable=False),
        pa.field("end_s", pa.float64(), nullable=False),
        pa.field("wait_s", pa.float64(), nullable=False),
        pa.field("run_s", pa.float64(), nullable=False),
        pa.field("cores", pa.int32(), nullable=False),
        pa.field("vo", pa.string()),
        pa.field("interactive", pa.bool_(), nullable=False),
        pa.field("responsiveness", pa.float64(), nullable=False),  # W = run / (run + wait)
        pa.field("bounded_slowdown", pa.float64(), nullable=False),  # τ_bsld = 10 s
        pa.field("fairness", pa.float64()),  # F at the job's election, when VO shares are set
    )
)

SEGMENTS = pa.schema(
    _fields(
        pa.field("segment_id", pa.int32(), nullable=False),
        # the segment is rows [row_start, row_stop) of the trace it was cut from
        pa.field("row_start", pa.int64(), nullable=False),
        pa.field("row_stop", pa.int64(), nullable=False),
        # t0 = first submit; t1 = the next segment's first submit (the last segment: its last)
        pa.field("t0_s", pa.float64(), nullable=False),
        pa.field("t1_s", pa.float64(), nullable=False),
        pa.field("start_time", _UTC),
        pa.field("end_time", _UTC),
        pa.field("jobs", pa.int64(), nullable=False),
        pa.field("hosts", pa.int32()),  # hosts that started a job; null without host data
        pa.field("cores", pa.int32(), nullable=False),  # P used for U and ρ
        pa.field("arrival_rate_per_s", pa.float64()),
        pa.field("mean_interarrival_s", pa.float64()),
        pa.field("mean_run_s", pa.float64(), nullable=False),
        pa.field("median_run_s", pa.float64(), nullable=False),
        pa.field("utilisation", pa.float64()),  # U = mean run / mean inter-arrival / P
        pa.field("rho", pa.float64()),  # core-weighted ρ
        pa.field("interactive_fraction", pa.float64(), nullable=False),
        pa.field("vo_shares", pa.string(), nullable=False),  # JSON object {vo: share}
        pa.field("pool_stable", pa.bool_(), nullable=False),
        # what caused the boundary at the segment's start: "start", or "pool", "arrivals",
        # "runtime", "vo_mix", "cores" joined by "+"
        pa.field("reason", pa.string(), nullable=False),
        pa.field("runtime_ks_to_log", pa.float64()),  # KS distance of log runtimes to the log's
        pa.field("vo_jsd_to_log", pa.float64()),  # Jensen–Shannon divergence to the log's VO mix
        pa.field("diagnostics", pa.string(), nullable=False),  # JSON: effect sizes, p-values
    )
)

SCHEMAS: Mapping[str, pa.Schema] = {
    "records": RECORDS,
    "quarantine": QUARANTINE,
    "jobs": JOBS,
    "trace": TRACE,
    "sim_result": SIM_RESULT,
    "segments": SEGMENTS,
}


def _schema(name_or_schema: str | pa.Schema) -> tuple[str, pa.Schema]:
    if isinstance(name_or_schema, pa.Schema):
        return "table", name_or_schema
    try:
        return name_or_schema, SCHEMAS[name_or_schema]
    except KeyError:
        known = ", ".join(sorted(SCHEMAS))
        msg = f"unknown table {name_or_schema!r}; known tables: {known}"
        raise SchemaError(msg) from None


def empty_table(name_or_schema: str | pa.Schema) -> pa.Table:
    """Return a table with no rows and the named schema."""
    return _schema(name_or_schema)[1].empty_table()


def validate(table: pa.Table, name_or_schema: str | pa.Schema) -> pa.Table:
    """Check that ``table`` has exactly the columns, types and non-null columns of a schema.

    Parameters
    ----------
    table : pyarrow.Table
        The table to check. Its schema metadata is ignored.
    name_or_schema : str or pyarrow.Schema
        A key of :data:`SCHEMAS` or a schema.

    Returns
    -------
    pyarrow.Table
        ``table`` unchanged, so calls can be chained.

    Raises
    ------
    SchemaError
        Listing every missing, extra or mistyped column and every non-nullable column with nulls.
    """
    name, schema = _schema(name_or_schema)
    problems: list[str] = []
    have = set(table.column_names)
    for field in schema:
        if field.name not in have:
            problems.append(f"missing column {field.name!r}")
            continue
        column = table.column(field.name)
        if not column.type.equals(field.type):
            problems.append(f"column {field.name!r} is {column.type}, expected {field.type}")
        elif not field.nullable and column.null_count:
            problems.append(f"column {field.name!r} has {column.null_count} nulls")
    extra = sorted(have - set(schema.names))
    problems.extend(f"unexpected column {c!r}" for c in extra)
    if table.column_names != schema.names and not problems:
        problems.append(f"columns out of order: {table.column_names}")
    if problems:
        raise SchemaError(f"{name} table does not match its schema", problems)
    return table


def conform(table: pa.Table, name_or_schema: str | pa.Schema) -> pa.Table:
    """Cast ``table`` to a schema (columns selected and ordered, types cast), then validate it.

    Missing nullable columns are added as nulls; missing non-nullable columns are an error.
    """
    name, schema = _schema(name_or_schema)
    columns = []
    for field in schema:
        if field.name in table.column_names:
            column = table.column(field.name)
            if not column.type.equals(field.type):
                column = column.cast(field.type)
            columns.append(column)
        elif field.nullable:
            columns.append(pa.nulls(table.num_rows, field.type))
        else:
            raise SchemaError(f"{name} table has no column {field.name!r}")
    conformed = pa.Table.from_arrays(columns, schema=schema)
    if table.schema.metadata:
        conformed = conformed.replace_schema_metadata(table.schema.metadata)
    return validate(conformed, schema)


def read_table(path: str | os.PathLike[str], name_or_schema: str | pa.Schema) -> pa.Table:
    """Read a Parquet file and conform it to a schema.

    Parquet has no seconds unit, so ``timestamp[s]`` columns come back as milliseconds; this
    casts them (and nothing else that would lose information) back and validates the table.
    """
    _, schema = _schema(name_or_schema)
    table = pq.read_table(os.fspath(path))
    for field in schema:
        if field.name not in table.column_names:
            continue
        have = table.schema.field(field.name).type
        if pa.types.is_timestamp(have) and have != field.type and field.type.tz == have.tz:
            index = table.column_names.index(field.name)
            table = table.set_column(index, field.name, table.column(field.name).cast(field.type))
    return validate(table, name_or_schema)


def with_trace_metadata(
    table: pa.Table,
    *,
    origin: str,
    site: str,
    cores: int,
    tau_s: float,
    provenance: Mapping[str, Any],
) -> pa.Table:
    """Attach the trace metadata (origin UTC ISO-8601, site, cores P, τ, provenance) to a table."""
    metadata = {
        b"origin": origin.encode(),
        b"site": site.encode(),
        b"cores": str(int(cores)).encode(),
        b"tau_s": repr(float(tau_s)).encode(),
        b"provenance": json.dumps(dict(provenance), sort_keys=True, default=str).encode(),
    }
    return table.replace_schema_metadata(metadata)


def trace_metadata(table: pa.Table) -> dict[str, Any]:
    """Read the trace metadata written by :func:`with_trace_metadata`.

    Raises
    ------
    SchemaError
        If a key is missing.
    """
    raw = table.schema.metadata or {}
    missing = [k for k in TRACE_METADATA_KEYS if k.encode() not in raw]
    if missing:
        raise SchemaError("trace has no metadata key(s)", missing)
    return {
        "origin": raw[b"origin"].decode(),
        "site": raw[b"site"].decode(),
        "cores": int(raw[b"cores"]),
        "tau_s": float(raw[b"tau_s"]),
        "provenance": json.loads(raw[b"provenance"]),
    }
