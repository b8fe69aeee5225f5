"""Reading a trace's columns and metadata as numpy arrays, once, for the vectorised statistics."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from gridtrace.errors import ConfigError, SchemaError

__all__ = [
    "DEFAULT_TAU_S",
    "F64",
    "I64",
    "TraceArrays",
    "category_codes",
    "json_safe",
    "resolve_zone",
    "schema_of",
    "trace_arrays",
]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

DEFAULT_TAU_S = 900.0
"""The research's interactive threshold τ, used when neither the caller nor the trace gives one."""

_NO_LABEL = "(none)"
"""Label of a null VO or user in shares and per-VO tables."""

_ZONE_KEYS = ("tz", "timezone", "time_zone", "TimeZoneString")


@dataclass(frozen=True)
class TraceArrays:
    """The columns of a trace (or a window of it) that the statistics use, as numpy arrays.

    Attributes
    ----------
    submit, run, cores, wait : numpy.ndarray
        ``submit_s``, ``run_s``, ``cores`` (float64) and ``wait_s`` (NaN where unknown).
    vo_codes, user_codes : numpy.ndarray
        Integer codes into ``vo_labels`` and ``user_labels`` (a null value has its own label).
    vo_labels, user_labels : tuple of str
        The distinct VOs and users, in order of first appearance.
    origin : pandas.Timestamp or None
        The trace origin (UTC) from the metadata, if any.
    metadata : dict
        The raw trace metadata that could be read (empty when the table has none).
    """

    submit: F64
    run: F64
    cores: F64
    wait: F64
    vo_codes: I64
    vo_labels: tuple[str, ...]
    user_codes: I64
    user_labels: tuple[str, ...]
    origin: pd.Timestamp | None
    metadata: dict[str, Any]

    def __len__(self) -> int:
        return int(self.submit.size)

    def take(self, rows: slice | npt.NDArray[np.bool_] | I64) -> TraceArrays:
        """Return the same arrays restricted to ``rows`` (labels kept, so codes stay comparable)."""
        return TraceArrays(
            submit=self.submit[rows],
            run=self.run[rows],
            cores=self.cores[rows],
            wait=self.wait[rows],
            vo_codes=self.vo_codes[rows],
            vo_labels=self.vo_labels,
            user_codes=self.user_codes[rows],
            user_labels=self.user_labels,
            origin=self.origin,
            metadata=self.metadata,
        )


def schema_of(*fields: pa.Field[Any]) -> pa.Schema:
    """Build an Arrow schema from fields of mixed types."""
    return pa.schema(list(fields))


def category_codes(column: pa.ChunkedArray[Any] | pa.Array[Any]) -> tuple[I64, tuple[str, ...]]:
    """Integer codes and labels of a string column; nulls get the label ``"(none)"``."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if len(array) == 0:
        return np.zeros(0, dtype=np.int64), ()
    encoded = cast("pa.DictionaryArray[Any, Any]", pc.dictionary_encode(array.cast(pa.string())))
    labels = [str(v) for v in encoded.dictionary.to_pylist()]
    indices = cast("pa.Array[Any]", encoded.indices)
    if indices.null_count:
        filled = cast("pa.Array[Any]", pc.fill_null(indices, pa.scalar(len(labels), indices.type)))
        codes = filled.to_numpy().astype(np.int64)
        labels.append(_NO_LABEL)
    else:
        codes = indices.to_numpy().astype(np.int64)
    return codes, tuple(labels)


def _metadata(table: pa.Table) -> dict[str, Any]:
    raw = table.schema.metadata or {}
    out: dict[str, Any] = {}
    for key, value in raw.items():
        name = key.decode(errors="replace")
        text = value.decode(errors="replace")
        if name == "provenance":
            try:
                out[name] = json.loads(text)
            except json.JSONDecodeError:
                out[name] = text
        else:
            out[name] = text
    return out


def _float_column(table: pa.Table, name: str, *, required: bool) -> F64:
    if name not in table.column_names:
        if required:
            raise SchemaError("trace table lacks a column", [name])
        return np.full(table.num_rows, np.nan)
    column = table.column(name).cast(pa.float64())
    if required and column.null_count:
        raise SchemaError("trace column has nulls", [f"{name}: {column.null_count}"])
    filled = column.to_numpy(zero_copy_only=False) if column.null_count == 0 else None
    if filled is None:
        nan = pa.scalar(math.nan, pa.float64())
        filled = cast("pa.ChunkedArray[Any]", pc.fill_null(column, nan)).to_numpy()
    return np.asarray(filled, dtype=np.float64)


def trace_arrays(table: pa.Table) -> TraceArrays:
    """Read a ``trace`` table's columns into :class:`TraceArrays`.

    Only ``submit_s`` and ``run_s`` are required; a missing ``cores`` counts as 1 core per job,
    a missing ``vo``, ``user`` or ``wait_s`` as unknown.

    Raises
    ------
    SchemaError
        If ``submit_s`` or ``run_s`` is missing or has nulls, or ``submit_s`` is not sorted.
    """
    submit = _float_column(table, "submit_s", required=True)
    run = _float_column(table, "run_s", required=True)
    if submit.size > 1 and bool(np.any(np.diff(submit) < 0)):
        raise SchemaError("trace is not sorted by submit_s", ["submit_s decreases"])
    if "cores" in table.column_names:
        cores = _float_column(table, "cores", required=False)
        cores = np.where(np.isnan(cores), 1.0, cores)
    else:
        cores = np.ones(table.num_rows)
    wait = _float_column(table, "wait_s", required=False)
    rows = table.num_rows
    if "vo" in table.column_names:
        vo_codes, vo_labels = category_codes(table.column("vo"))
    else:
        vo_codes, vo_labels = np.zeros(rows, dtype=np.int64), (_NO_LABEL,) if rows else ()
    if "user" in table.column_names:
        user_codes, user_labels = category_codes(table.column("user"))
    else:
        user_codes, user_labels = np.zeros(rows, dtype=np.int64), (_NO_LABEL,) if rows else ()
    metadata = _metadata(table)
    origin = None
    if "origin" in metadata:
        try:
            origin = pd.Timestamp(metadata["origin"])
        except ValueError as exc:
            raise SchemaError("trace metadata origin is not a time", [str(exc)]) from None
        origin = origin.tz_localize("UTC") if origin.tzinfo is None else origin.tz_convert("UTC")
    return TraceArrays(
        submit=submit,
        run=run,
        cores=cores,
        wait=wait,
        vo_codes=vo_codes,
        vo_labels=vo_labels,
        user_codes=user_codes,
        user_labels=user_labels,
        origin=origin,
        metadata=metadata,
    )


def resolve_zone(tz: str | None, metadata: dict[str, Any]) -> tuple[str, str]:
    """Choose the time zone of local-time profiles, and say where it came from.

    Order: the ``tz`` argument, then a zone named in the trace metadata or its provenance (keys
    ``tz``, ``timezone``, ``time_zone``, ``TimeZoneString``), else UTC.

    Returns
    -------
    zone : str
        An IANA zone name.
    source : str
        ``"argument"``, ``"metadata:<key>"`` or ``"default: UTC (no zone in the metadata)"``.
    """
    if tz is not None:
        return _check_zone(tz), "argument"
    provenance = metadata.get("provenance")
    places: list[tuple[str, dict[str, Any]]] = [("metadata", metadata)]
    if isinstance(provenance, dict):
        places.append(("provenance", provenance))
    for where, mapping in places:
        for key in _ZONE_KEYS:
            value = mapping.get(key)
            if isinstance(value, str) and value:
                return _check_zone(value), f"{where}:{key}"
    return "UTC", "default: UTC (no zone in the metadata)"


def _check_zone(zone: str) -> str:
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        msg = f"unknown time zone {zone!r}; give an IANA name such as 'Europe/Paris'"
        raise ConfigError(msg) from None
    return zone


def json_safe(value: Any) -> Any:
    """Plain JSON types: NaN and infinities become None, numpy scalars Python numbers."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return [json_safe(v) for v in value.tolist()]
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return value
