"""Helpers of the small TORQUE assembly's differential tests: run both paths, compare."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from gridtrace.logs._torque_jobs import TorqueAssembly, assemble_torque_jobs
from gridtrace.logs._torque_small_jobs import SmallAssembly, assemble_torque_small
from gridtrace.schema import RECORDS


def python_records(records: pa.Table) -> dict[str, list[Any]]:
    """The records in Python form, as the small path takes them (``stamp_utc`` all None)."""
    out = {name: records.column(name).to_pylist() for name in RECORDS.names if name != "stamp_utc"}
    out["stamp_utc"] = [None] * records.num_rows
    return {name: out[name] for name in RECORDS.names}


def python_columns(table: pa.Table) -> dict[str, list[Any]]:
    """A table's columns in Python form: timestamps as epoch seconds."""
    out = {}
    for field in table.schema:
        column = table.column(field.name)
        if pa.types.is_timestamp(field.type):
            column = column.cast(pa.int64())
        out[field.name] = column.to_pylist()
    return out


def compare(records: pa.Table, *, unitless_memory: str = "b") -> bool:
    """Assemble ``records`` both ways; assert the small path equals the Arrow path or declined.

    Returns whether the small path accepted the input.
    """
    oracle = assemble_torque_jobs(records, unitless_memory=unitless_memory)
    small = assemble_torque_small(python_records(records), unitless_memory=unitless_memory)
    if small is None:
        return False
    assert_same(oracle, small)
    return True


def assert_same(oracle: TorqueAssembly, small: SmallAssembly) -> None:
    """Assert every column, flag list, fact and offset agree."""
    expected = python_columns(oracle.jobs)
    assert list(small.jobs) == list(expected)
    for name, values in expected.items():
        got = small.jobs[name]
        assert len(got) == len(values), name
        for row, (a, b) in enumerate(zip(got, values, strict=True)):
            assert a == b, (name, row, a, b)
            assert type(a) is type(b), (name, row, a, b)
    placed = python_columns(oracle.records)
    assert small.stamp_utc == placed["stamp_utc"]
    assert small.flags == placed["flags"]
    assert small.tz_offset_s == oracle.tz_offset_s
    assert small.info == oracle.info
