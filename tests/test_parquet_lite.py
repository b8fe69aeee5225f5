"""The pure-Python Parquet writer: its files read back as the files pyarrow writes."""

from __future__ import annotations

import base64
import gzip
import hashlib
import math
import os
import re
import subprocess
import sys
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gridtrace
import gridtrace._parquet_lite as lite
from gridtrace import schema as gschema
from gridtrace._parquet_lite import (
    JOBS_COLUMNS,
    QUARANTINE_COLUMNS,
    RECORDS_COLUMNS,
    Column,
    _gzip,
    _known_arrow,
    write_table,
)
from gridtrace._parquet_lite_rare import arrow_schema_base64
from gridtrace.errors import GridtraceError, SchemaError

ARROW_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "binary": pa.binary(),
    "int64": pa.int64(),
    "int32": pa.int32(),
    "int16": pa.int16(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "timestamp_s_utc": pa.timestamp("s", tz="UTC"),
    "list_string": pa.list_(pa.string()),
    "map_string_string": pa.map_(pa.string(), pa.string()),
}
KINDS = tuple(ARROW_TYPES)

Data = Mapping[str, Sequence[object]]


def arrow_schema(spec: Sequence[Column]) -> pa.Schema:
    return pa.schema([pa.field(c.name, ARROW_TYPES[c.kind], c.nullable) for c in spec])


def columns_equal(left: pa.ChunkedArray, right: pa.ChunkedArray) -> bool:
    """Equal values and nulls; floats compared bit for bit (NaN equals itself, -0.0 is not 0.0)."""
    if pa.types.is_floating(left.type) and pa.types.is_floating(right.type):
        left_bits = left.combine_chunks().view(pa.int64())
        right_bits = right.combine_chunks().view(pa.int64())
        return bool(left_bits.equals(right_bits))
    return bool(left.equals(right))


def tables_equal(left: pa.Table, right: pa.Table) -> bool:
    if not left.schema.equals(right.schema, check_metadata=True):
        return False
    return all(columns_equal(a, b) for a, b in zip(left.columns, right.columns, strict=True))


def write_both(tmp: Path, spec: Sequence[Column], data: Data) -> tuple[Path, Path, pa.Table]:
    """Write ``data`` with write_table and with pyarrow; return both paths and pyarrow's table."""
    mine, theirs = tmp / "lite.parquet", tmp / "pyarrow.parquet"
    write_table(mine, spec, data)
    expected = pa.table(dict(data), schema=arrow_schema(spec))
    pq.write_table(expected, theirs)
    return mine, theirs, expected


def assert_reads_as_pyarrow_writes(tmp: Path, spec: Sequence[Column], data: Data) -> None:
    mine, theirs, expected = write_both(tmp, spec, data)
    got, want = pq.read_table(mine), pq.read_table(theirs)
    assert got.schema.equals(want.schema, check_metadata=True), (got.schema, want.schema)
    assert tables_equal(got, want)
    # the values are those given: cast back (timestamp[ms] -> [s]) they are the intended table
    assert tables_equal(got.cast(expected.schema), expected)
    assert pq.ParquetFile(mine).schema.equals(pq.ParquetFile(theirs).schema)
    assert pq.ParquetFile(mine).metadata.num_rows == len(expected)
    stored = pq.ParquetFile(mine).metadata.metadata[b"ARROW:schema"]
    assert base64.b64decode(stored) == expected.schema.serialize().to_pybytes()
    # a reader that seeks to one column chunk, or reads in batches, finds the same values
    last = expected.column_names[-1]
    source = pq.ParquetFile(mine, pre_buffer=False)
    assert tables_equal(source.read_row_group(0, columns=[last]), want.select([last]))
    batches = list(source.iter_batches(batch_size=7, use_threads=False))
    assert tables_equal(pa.Table.from_batches(batches, schema=want.schema), want)


# ---------------------------------------------------------------------------------------------
# values of every kind, with the edge cases a user's data has

TEXT = st.text(max_size=12)  # any code point but surrogates: NUL, astral characters, ...
KEYS = st.sampled_from(["a", "b", ""]) | TEXT  # a few keys, so that maps repeat them
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "string": TEXT,
    "binary": st.binary(max_size=12),
    "int64": st.integers(-(2**63), 2**63 - 1),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "int16": st.integers(-(2**15), 2**15 - 1),
    "float64": st.floats(),  # NaN, ±inf, -0.0, subnormals
    "bool": st.booleans(),
    "timestamp_s_utc": st.integers(-(2**63 // 1000), (2**63 - 1) // 1000),
    "list_string": st.lists(st.none() | TEXT, max_size=4),
    "map_string_string": st.lists(st.tuples(KEYS, st.none() | TEXT), max_size=4),
}


@st.composite
def tables(draw: st.DrawFn, max_rows: int = 20) -> tuple[list[Column], dict[str, list[object]]]:
    names = draw(st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=8, unique=True))
    spec = [Column(name, draw(st.sampled_from(KINDS)), draw(st.booleans())) for name in names]
    rows = draw(st.integers(0, max_rows))
    data: dict[str, list[object]] = {}
    for column in spec:
        value = VALUES[column.kind]
        if column.nullable:
            value = st.none() | value
        data[column.name] = draw(st.lists(value, min_size=rows, max_size=rows))
    return spec, data


@settings(max_examples=200)
@given(table=tables())
def test_random_tables_read_back_as_pyarrow_writes_them(
    tmp_path_factory: pytest.TempPathFactory,
    table: tuple[list[Column], dict[str, list[object]]],
) -> None:
    spec, data = table
    assert_reads_as_pyarrow_writes(tmp_path_factory.mktemp("t"), spec, data)


def random_values(rng: np.random.Generator, kind: str, rows: int) -> list[object]:
    """Values of a kind from a seeded generator, for tables too long to draw with hypothesis."""

    def text() -> str:
        # mostly ASCII, sometimes any code point but surrogates, sometimes long
        length = int(rng.integers(0, 300 if rng.random() < 0.05 else 12))
        top = 0x10FFFF if rng.random() < 0.2 else 0x7F
        codes = rng.integers(0, top + 1, size=length)
        return "".join(chr(c) if not 0xD800 <= c < 0xE000 else "x" for c in codes)

    def one() -> object:
        if kind == "string":
            return text()
        if kind == "binary":
            return rng.bytes(int(rng.integers(0, 12)))
        if kind in ("int64", "int32", "int16"):
            bits = int(kind[3:])
            return int(rng.integers(-(2 ** (bits - 1)), 2 ** (bits - 1), dtype=np.int64))
        if kind == "float64":
            special = [math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324]
            pick = rng.random()
            return special[int(rng.integers(len(special)))] if pick < 0.1 else float(rng.normal())
        if kind == "bool":
            return bool(rng.random() < 0.5)
        if kind == "timestamp_s_utc":
            return int(rng.integers(-(2**40), 2**40))
        if kind == "list_string":
            return [None if rng.random() < 0.1 else text() for _ in range(rng.integers(0, 4))]
        keys = ["a", "b", "c"]
        return [
            (keys[int(rng.integers(3))], None if rng.random() < 0.1 else text())
            for _ in range(rng.integers(0, 4))
        ]

    null_share = float(rng.choice([0.0, 0.01, 0.5, 1.0]))
    return [None if rng.random() < null_share else one() for _ in range(rows)]


VALUE_OF: dict[str, object] = {
    "string": "s",
    "binary": b"b",
    "int64": 1,
    "int32": 1,
    "int16": 1,
    "float64": 1.0,
    "bool": True,
    "timestamp_s_utc": 1,
    "list_string": ["s"],
    "map_string_string": [("k", "v")],
}


def random_table(
    rng: np.random.Generator, spec: Sequence[Column], rows: int
) -> dict[str, list[object]]:
    data = {}
    for column in spec:
        values = random_values(rng, column.kind, rows)
        if not column.nullable:
            values = [VALUE_OF[column.kind] if v is None else v for v in values]
        data[column.name] = values
    return data


@settings(max_examples=6)
@given(seed=st.integers(0, 2**32 - 1))
def test_thousands_of_rows(tmp_path_factory: pytest.TempPathFactory, seed: int) -> None:
    rng = np.random.default_rng(seed)
    spec = [Column(f"{k}_{n}", k, n) for k in KINDS for n in (True, False)]
    data = random_table(rng, spec, int(rng.integers(1000, 5000)))
    assert_reads_as_pyarrow_writes(tmp_path_factory.mktemp("t"), spec, data)


def test_edge_values_of_every_kind(tmp_path: Path) -> None:
    spec = [Column(kind, kind) for kind in KINDS]
    data: dict[str, list[object]] = {
        "string": ["", "\0", "é𝄞🎉", "a" * 255, "a" * 256, "ü" * 300, None],
        "binary": [b"", b"\0\xff", None, b"x" * 1000, b"y", b"z", b""],
        "int64": [-(2**63), 2**63 - 1, 0, -1, None, 1, 2],
        "int32": [-(2**31), 2**31 - 1, 0, None, -1, 1, 2],
        "int16": [-(2**15), 2**15 - 1, 0, None, -1, 1, 2],
        "float64": [math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, None],
        "bool": [True, False, None, True, True, False, True],
        "timestamp_s_utc": [-(2**63 // 1000), (2**63 - 1) // 1000, 0, None, -1, 1, 1_700_000_000],
        "list_string": [[], None, [None], [""], ["a", None, "b"], ["é𝄞"] * 20, []],
        "map_string_string": [
            [],
            None,
            [("k", None)],
            [("k", "1"), ("k", "2")],
            [("", "")],
            [],
            [],
        ],
    }
    assert_reads_as_pyarrow_writes(tmp_path, spec, data)


def test_tuples_are_taken_as_lists(tmp_path: Path) -> None:
    spec = [Column("l", "list_string"), Column("m", "map_string_string")]
    write_table(tmp_path / "t.parquet", spec, {"l": [("a", "b"), ()], "m": [(("k", "v"),), []]})
    table = pq.read_table(tmp_path / "t.parquet")
    assert table.column("l").to_pylist() == [["a", "b"], []]
    assert table.column("m").to_pylist() == [[("k", "v")], []]


def test_any_sequence_is_a_column(tmp_path: Path) -> None:
    # lists and tuples take the quick check; another sequence (a range, a UserList) the full one
    from collections import UserList

    spec = [Column("i", "int64", False), Column("s", "string"), Column("t", "timestamp_s_utc")]
    data = {"i": range(3), "s": ("a", None, "c"), "t": UserList([0, None, 2])}
    assert_reads_as_pyarrow_writes(tmp_path, spec, {k: list(v) for k, v in data.items()})
    write_table(tmp_path / "seq.parquet", spec, data)
    assert (tmp_path / "seq.parquet").read_bytes() == (tmp_path / "lite.parquet").read_bytes()


def test_ints_are_taken_as_floats_when_a_double_holds_them(tmp_path: Path) -> None:
    spec = [Column("f", "float64")]
    write_table(tmp_path / "t.parquet", spec, {"f": [1, 2**53, -(2**53), 0.5, None]})
    values = pq.read_table(tmp_path / "t.parquet").column("f").to_pylist()
    assert values == [1.0, 2.0**53, -(2.0**53), 0.5, None]


def test_the_gridtrace_tables_are_gridtrace_schema_tables() -> None:
    for spec, expected in [
        (RECORDS_COLUMNS, gschema.RECORDS),
        (JOBS_COLUMNS, gschema.JOBS),
        (QUARANTINE_COLUMNS, gschema.QUARANTINE),
    ]:
        assert arrow_schema(spec).equals(expected, check_metadata=True)
        assert arrow_schema(spec).serialize().equals(expected.serialize())


def test_the_arrow_schemas_kept_for_the_parse_tables_are_pyarrows() -> None:
    # the three tables of `gridtrace parse` are written with their ARROW:schema values kept as
    # constants, without building them: they must be the ones built and the ones pyarrow gives
    for spec in (RECORDS_COLUMNS, JOBS_COLUMNS, QUARANTINE_COLUMNS):
        kept = _known_arrow(spec)
        assert kept is not None
        assert kept == arrow_schema_base64(spec)
        assert base64.b64decode(kept) == arrow_schema(spec).serialize().to_pybytes()


def test_an_equal_spec_of_other_columns_writes_the_same_file(tmp_path: Path) -> None:
    # a spec made of other Column objects is checked and its Arrow schema built, not taken from
    # the constants: the file is the same
    rows = random_table(np.random.default_rng(5), JOBS_COLUMNS, 5)
    copy = [Column(c.name, c.kind, c.nullable) for c in JOBS_COLUMNS]
    assert _known_arrow(tuple(copy)) is None
    write_table(tmp_path / "kept.parquet", JOBS_COLUMNS, rows)
    write_table(tmp_path / "built.parquet", copy, rows)
    assert (tmp_path / "kept.parquet").read_bytes() == (tmp_path / "built.parquet").read_bytes()


# The bytes of a few small tables, as the first version of this writer (main at 4cd9420) wrote
# them: a change of the layout, even one pyarrow reads back alike, shows here first.
PINNED: dict[str, tuple[list[Column], Data, int, str]] = {
    "flat": (
        [
            Column("s", "string", False),
            Column("b", "binary"),
            Column("i", "int64"),
            Column("j", "int32"),
            Column("k", "int16"),
            Column("f", "float64"),
            Column("t", "timestamp_s_utc"),
            Column("o", "bool"),
        ],
        {
            "s": ["a", "\u00e9", ""],
            "b": [b"\x00", None, b"xy"],
            "i": [1, None, -(2**63)],
            "j": [None, None, 7],
            "k": [-3, 4, None],
            "f": [0.5, None, 2],
            "t": [0, 1467331200, None],
            "o": [True, None, False],
        },
        1380,
        "c934aca0f69ea1470afe0c2cfe5b1162c4dbf96d650c95647f512890993008b3",
    ),
    "nested": (
        [Column("l", "list_string"), Column("m", "map_string_string", False)],
        {
            "l": [["a", None], None, [], ("b",)],
            "m": [[("k", "v")], [], [("k", None), ("x", "y")], []],
        },
        951,
        "4640a98453b9a5d541319f850bc20591ca83910abbb2a495ed591968562f03ac",
    ),
    "empty": (
        [
            Column("s", "string", False),
            Column("l", "list_string"),
            Column("m", "map_string_string"),
        ],
        {"s": [], "l": [], "m": []},
        895,
        "bb269a20814d54689406fe6fe1f0921be05d0a536d7c66fd28bf8ec5effde608",
    ),
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_small_tables_are_written_byte_for_byte_as_before(tmp_path: Path, name: str) -> None:
    spec, data, size, digest = PINNED[name]
    # uncompressed: deflate's bytes may differ between zlib builds, its pages' contents cannot
    write_table(tmp_path / "t.parquet", spec, data, compression=None)
    written = (tmp_path / "t.parquet").read_bytes()
    assert (len(written), hashlib.sha256(written).hexdigest()) == (size, digest)
    assert_reads_as_pyarrow_writes(tmp_path, spec, data)  # and they are still right


@pytest.mark.parametrize(
    ("name", "spec"),
    [("records", RECORDS_COLUMNS), ("jobs", JOBS_COLUMNS), ("quarantine", QUARANTINE_COLUMNS)],
)
@pytest.mark.parametrize("rows", [0, 1, 400])
def test_gridtrace_reads_the_tables_back(
    tmp_path: Path, name: str, spec: tuple[Column, ...], rows: int
) -> None:
    data = random_table(np.random.default_rng(rows), spec, rows)
    write_table(tmp_path / "t.parquet", spec, data)
    table = gschema.read_table(tmp_path / "t.parquet", name)  # validates the schema
    expected = pa.table(data, schema=gschema.SCHEMAS[name])
    pq.write_table(expected, tmp_path / "pyarrow.parquet")
    assert tables_equal(table, gschema.read_table(tmp_path / "pyarrow.parquet", name))
    # pyarrow reads a map's entries back named after the column, from its own files too
    assert tables_equal(table.cast(expected.schema), expected)
    assert_reads_as_pyarrow_writes(tmp_path, spec, data)


def python_columns(table: pa.Table, spec: Sequence[Column]) -> dict[str, list[object]]:
    """A table's columns as the Python values write_table takes."""
    data = {}
    for column in spec:
        values = table.column(column.name)
        if column.kind == "timestamp_s_utc":
            values = values.cast(pa.int64())
        data[column.name] = values.to_pylist()
    return data


@pytest.mark.realdata
def test_a_parsed_torque_day_reads_back_as_pyarrow_writes_it(
    tmp_path: Path, real_data: Path
) -> None:
    from gridtrace.logs import parse_logs

    day = real_data / "torque" / "vsc-kuleuven-2016-06" / "20160601.gz"
    result = parse_logs([day], site="vsc")
    assert len(result.jobs) > 100
    for name, table, spec in [
        ("records", result.records, RECORDS_COLUMNS),
        ("jobs", result.jobs, JOBS_COLUMNS),
        ("quarantine", result.quarantine, QUARANTINE_COLUMNS),
    ]:
        path = tmp_path / f"{name}.parquet"
        write_table(path, spec, python_columns(table, spec))
        pq.write_table(table, tmp_path / "pyarrow.parquet")
        assert tables_equal(pq.read_table(path), pq.read_table(tmp_path / "pyarrow.parquet"))
        assert tables_equal(gschema.read_table(path, name).cast(table.schema), table)


def test_pandas_reads_the_file(tmp_path: Path) -> None:
    data = random_table(np.random.default_rng(50), JOBS_COLUMNS, 50)
    mine, theirs, _ = write_both(tmp_path, JOBS_COLUMNS, data)
    pd.testing.assert_frame_equal(pd.read_parquet(mine), pd.read_parquet(theirs))


# ---------------------------------------------------------------------------------------------
# bad input


SPEC = [
    Column("name", "string", False),
    Column("size", "int64"),
    Column("hosts", "list_string"),
    Column("attrs", "map_string_string", False),
]


def good() -> dict[str, list[object]]:
    return {
        "name": ["a", "b", "c"],
        "size": [1, None, 3],
        "hosts": [["h"], None, []],
        "attrs": [[("k", "v")], [], [("k", None)]],
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"name": ["a", None, "c"]}, "column 'name', row 1: null in a column that is not"),
        ({"name": ["a", "b", 3]}, "column 'name', row 2: expected a str, got int 3"),
        ({"name": ["a", b"b", "c"]}, "column 'name', row 1: expected a str, got bytes"),
        ({"name": ["a", "\ud800", "c"]}, "column 'name', row 1: '\\ud800' is not encodable"),
        ({"size": [1, True, 3]}, "column 'size', row 1: expected an int, got bool True"),
        ({"size": [1, 2.0, 3]}, "column 'size', row 1: expected an int, got float"),
        ({"size": [1, 2**63, 3]}, "column 'size', row 1: 9223372036854775808 is out of range"),
        ({"hosts": [["h"], "h", []]}, "column 'hosts', row 1: expected a list of str, got str"),
        ({"hosts": [["h"], None, ["a", 1]]}, "column 'hosts', row 2: expected a list of str"),
        ({"attrs": [[("k", "v")], None, []]}, "column 'attrs', row 1: null in a column"),
        ({"attrs": [[], [("k",)], []]}, "column 'attrs', row 1: expected a list of (str, str"),
        ({"attrs": [[], [], [(None, "v")]]}, "column 'attrs', row 2: map keys must be str"),
        ({"attrs": [[], [], [("k", 1)]]}, "column 'attrs', row 2: map values must be str or"),
        ({"attrs": [[], [("k", "\udfff")], []]}, "column 'attrs', row 1: '\\udfff' is not"),
        ({"size": [1, 2]}, "column 'size' has 2 rows, column 'name' has 3"),
        ({"extra": [1, 2, 3]}, "unexpected column(s) 'extra'"),
        ({"size": None}, "column 'size' is missing"),
        ({"name": "abc"}, "column 'name': expected a sequence of values, got str"),
        ({"size": {1, 2, 3}}, "column 'size': expected a sequence of values, got set"),
    ],
)
def test_bad_values_are_named_by_column_and_row(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    data = good() | change
    data = {k: v for k, v in data.items() if v is not None}
    with pytest.raises(SchemaError, match=re.escape(message)):
        write_table(tmp_path / "t.parquet", SPEC, data)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("kind", "value", "message"),
    [
        ("int32", 2**31, "2147483648 is out of range for int32"),
        ("int16", -(2**15) - 1, "-32769 is out of range for int16"),
        ("timestamp_s_utc", 2**63 // 1000 + 1, "is out of range for timestamp_s_utc"),
        ("timestamp_s_utc", -(2**63 // 1000) - 1, "is out of range for timestamp_s_utc"),
        ("float64", 2**53 + 1, "is not exactly representable as a float"),
        ("float64", "1.0", "expected a float, got str '1.0'"),
        ("bool", 1, "expected a bool, got int 1"),
        ("binary", "x", "expected bytes, got str 'x'"),
        ("timestamp_s_utc", 1.5, "expected an int"),
    ],
)
def test_values_out_of_their_kind(tmp_path: Path, kind: str, value: object, message: str) -> None:
    with pytest.raises(SchemaError, match=f"column 'c', row 1: .*{re.escape(message)}"):
        write_table(tmp_path / "t.parquet", [Column("c", kind)], {"c": [None, value]})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ([], "at least one column"),
        ([Column("a", "int8")], "unknown kind 'int8'"),  # type: ignore[arg-type]
        ([Column("a", "string"), Column("a", "int64")], "'a' appears twice"),
        ([("a", "string", True)], "expected a Column"),
        ([Column("", "string")], "has no name"),
        ([Column("a\udc80", "string")], "is not valid UTF-8"),
        ([Column("a", "string", 1)], "nullable must be a bool"),  # type: ignore[arg-type]
    ],
)
def test_bad_specs(tmp_path: Path, spec: list[Column], message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        write_table(tmp_path / "t.parquet", spec, {"a": [1]})


def test_the_errors_are_value_errors_of_gridtrace(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="row 0") as caught:
        write_table(tmp_path / "t.parquet", [Column("a", "int64", False)], {"a": [None]})
    assert isinstance(caught.value, GridtraceError)


# ---------------------------------------------------------------------------------------------
# atomicity


def test_bad_values_leave_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    out = tmp_path / "jobs.parquet"
    write_table(out, SPEC, good())
    before = out.read_bytes()
    with pytest.raises(SchemaError):
        write_table(out, SPEC, good() | {"attrs": [[], [], [("k", 1)]]})  # the last column
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["jobs.parquet"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "jobs.parquet"
    write_table(out, SPEC, good())
    before = out.read_bytes()

    class DiskFull:
        """The temporary file's handle: half of the file goes in, then the error."""

        def __init__(self, name: str, mode: str) -> None:
            self.file = open(name, mode)  # noqa: PTH123, SIM115

        def __enter__(self) -> DiskFull:
            return self

        def __exit__(self, *exc: object) -> None:
            self.file.close()

        def write(self, data: bytes) -> int:
            self.file.write(data[: len(data) // 2])
            raise OSError(28, "No space left on device")

    # the writer opens its temporary file with open(), by name (it imports no pathlib)
    monkeypatch.setattr(lite, "open", DiskFull, raising=False)
    with pytest.raises(OSError, match="No space left"):
        write_table(out, SPEC, good() | {"name": ["x", "y", "z"]})
    monkeypatch.undo()
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["jobs.parquet"]
    assert pq.read_table(out).column("name").to_pylist() == ["a", "b", "c"]


# ---------------------------------------------------------------------------------------------
# imports


def test_the_module_imports_neither_numpy_nor_pyarrow() -> None:
    root = Path(gridtrace.__file__).parent.parent
    code = (
        "import sys, gridtrace._parquet_lite\n"
        "heavy = {'numpy', 'pyarrow', 'pandas'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    env = os.environ | {"PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.strip() == "[]"


def test_writing_the_parse_tables_loads_no_spec_code(tmp_path: Path) -> None:
    # their Arrow schemas are constants: neither the flatbuffer builder nor base64 is loaded
    root = Path(gridtrace.__file__).parent.parent
    code = (
        "import sys, pathlib\n"
        "from gridtrace._parquet_lite import *\n"
        "out = pathlib.Path(sys.argv[1])\n"
        "for spec in (RECORDS_COLUMNS, JOBS_COLUMNS, QUARANTINE_COLUMNS):\n"
        "    write_table(out / spec[-1].name, spec, {c.name: [] for c in spec})\n"
        "print(sorted(m for m in sys.modules if m.endswith(('_parquet_lite_rare', 'binascii'))))\n"
    )
    env = os.environ | {"PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert done.stdout.strip() == "[]"
    assert len(list(tmp_path.iterdir())) == 2  # records and jobs both end with flags


def test_pages_are_deflated_by_default_and_read_back_the_same(tmp_path: Path) -> None:
    spec = [Column("s", "string", False), Column("m", "map_string_string"), Column("n", "int64")]
    rows = 2000
    data: dict[str, list[Any]] = {
        "s": [f"E;{i % 7}.srv;user=u{i % 13} queue=grid" for i in range(rows)],
        "m": [[("queue", "grid"), ("user", f"u{i % 13}")] for i in range(rows)],
        "n": [i * 1000 for i in range(rows)],
    }
    write_table(tmp_path / "packed.parquet", spec, data)
    write_table(tmp_path / "plain.parquet", spec, data, compression=None)
    packed, plain = (
        pq.ParquetFile(tmp_path / "packed.parquet"),
        pq.ParquetFile(tmp_path / "plain.parquet"),
    )
    assert packed.metadata.row_group(0).column(0).compression == "GZIP"
    assert plain.metadata.row_group(0).column(0).compression == "UNCOMPRESSED"
    assert (tmp_path / "packed.parquet").stat().st_size * 5 < (
        tmp_path / "plain.parquet"
    ).stat().st_size
    assert packed.read().equals(plain.read())
    assert_reads_as_pyarrow_writes(tmp_path, spec, data)


def test_an_unknown_compression_is_refused_before_writing(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="compression"):
        write_table(tmp_path / "t.parquet", [Column("n", "int64")], {"n": [1]}, compression="zstd")
    assert not list(tmp_path.iterdir())


@given(body=st.binary(max_size=5000) | st.text(max_size=3000).map(str.encode))
def test_a_page_is_deflated_as_a_compress_object_deflates_it(body: bytes) -> None:
    """One ``zlib.compress`` call gives the gzip member a compress object and its flush give."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    assert _gzip(body) == packer.compress(body) + packer.flush()
    assert gzip.decompress(_gzip(body)) == body
