"""A Parquet writer in pure Python, for small tables written by a process that imports no pyarrow.

``gridtrace parse`` of a small log spends most of its time importing numpy and pyarrow (0.2 s
warm, 0.67 s on a first call), more than the whole run of pure-Python peers. This module writes
the same tables with the standard library only, so that a small input can take a path that imports
neither. A file written here reads back with ``pyarrow.parquet.read_table`` as the table pyarrow
itself would have written from the same values: same Parquet schema, same Arrow schema (the
``ARROW:schema`` key holds the bytes ``pyarrow.Schema.serialize`` gives), same values.

The file is the simplest layout pyarrow reads: one row group, one uncompressed version-1 data page
per column chunk, PLAIN values, levels in the RLE / bit-packed hybrid, the footer in the Thrift
compact protocol. There are no statistics, dictionaries, compression or page indexes, which would
cost writing time; the files are larger than pyarrow's (3 to 10 times on parsed TORQUE logs).

Only the standard library is imported, and gridtrace modules that import nothing else.
"""

from __future__ import annotations

import binascii
import os
import struct
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from itertools import chain, compress
from operator import itemgetter
from typing import Final, Literal, NamedTuple, cast, get_args

from gridtrace._atomic import atomic_path  # imports pyarrow only for its own Parquet writer
from gridtrace.errors import SchemaError

__all__ = [
    "JOBS_COLUMNS",
    "QUARANTINE_COLUMNS",
    "RECORDS_COLUMNS",
    "Column",
    "Kind",
    "write_table",
]

Kind = Literal[
    "string",
    "binary",
    "int64",
    "int32",
    "int16",
    "float64",
    "bool",
    "timestamp_s_utc",
    "list_string",
    "map_string_string",
]
_KINDS: Final = frozenset(get_args(Kind))


class Column(NamedTuple):
    """One column of a table: its name, its kind and whether it may hold nulls.

    Parameters
    ----------
    name : str
        The column's name.
    kind : str
        What the column holds and the Arrow type it is read back as:

        - ``"string"``: ``str`` (``string``); ``"binary"``: ``bytes`` (``binary``);
        - ``"int64"``, ``"int32"``, ``"int16"``: ``int`` (``int64``, ``int32``, ``int16``);
        - ``"float64"``: ``float`` (``double``; an ``int`` is taken when a double holds it
          exactly); ``"bool"``: ``bool`` (``bool``);
        - ``"timestamp_s_utc"``: ``int`` seconds since the epoch (``timestamp[s, tz=UTC]``);
        - ``"list_string"``: a list of ``str`` or ``None`` (``list<string>``);
        - ``"map_string_string"``: a list of ``(key, value)`` pairs in order, keys ``str``,
          values ``str`` or ``None`` (``map<string, string>``).
    nullable : bool, default True
        Whether a value may be ``None`` (a null list or map is ``None``; ``[]`` is empty).
    """

    name: str
    kind: Kind
    nullable: bool = True


# ---------------------------------------------------------------------------------------------
# The three tables `gridtrace parse` writes, as gridtrace.schema defines them (which imports
# pyarrow, so it is not imported here; a test checks that the two agree).

_S: Final = "string"
_TS: Final = "timestamp_s_utc"

RECORDS_COLUMNS: Final[tuple[Column, ...]] = (
    Column("site", _S, False),
    Column("source_format", _S, False),
    Column("src_file", _S, False),
    Column("src_line", "int64", False),
    Column("record_type", _S, False),
    Column("stamp", _S),
    Column("stamp_utc", _TS),
    Column("job_id_raw", _S),
    Column("attrs", "map_string_string"),
    Column("flags", "list_string"),
    Column("raw", "binary"),
)

QUARANTINE_COLUMNS: Final[tuple[Column, ...]] = (
    Column("site", _S, False),
    Column("source_format", _S, False),
    Column("src_file", _S, False),
    Column("src_line", "int64", False),
    Column("reason", _S, False),
    Column("raw", "binary", False),
)

JOBS_COLUMNS: Final[tuple[Column, ...]] = (
    Column("site", _S, False),
    Column("source_format", _S, False),
    Column("job_key", _S, False),
    Column("job_id_raw", _S, False),
    Column("job_seq", "int64"),
    Column("array_index", "int32"),
    Column("attempt", "int16", False),
    Column("n_attempts", "int16", False),
    Column("user", _S),
    Column("group", _S),
    Column("account", _S),
    Column("vo", _S),
    Column("queue", _S),
    Column("partition", _S),
    Column("job_name", _S),
    Column("submit_time", _TS),
    Column("queue_time", _TS),
    Column("eligible_time", _TS),
    Column("start_time", _TS),
    Column("end_time", _TS),
    Column("wait_s", "int64"),
    Column("run_s", "int64"),
    Column("walltime_used_s", "int64"),
    Column("walltime_req_s", "int64"),
    Column("cpu_time_s", "float64"),
    Column("nodes_req", "int32"),
    Column("cores_req", "int32"),
    Column("gpus_req", "int32"),
    Column("nodes_alloc", "int32"),
    Column("cores_alloc", "int32"),
    Column("gpus_alloc", "int32"),
    Column("exec_hosts", "list_string"),
    Column("mem_req_bytes", "int64"),
    Column("mem_used_bytes", "int64"),
    Column("vmem_used_bytes", "int64"),
    Column("exit_code", "int32"),
    Column("exit_signal", "int32"),
    Column("state", _S, False),
    Column("end_record_type", _S),
    Column("tz_offset_s", "int32"),
    Column("src_file", _S, False),
    Column("src_line", "int64", False),
    Column("flags", "list_string"),
)


# ---------------------------------------------------------------------------------------------
# Thrift compact protocol (the Parquet footer and page headers)

_CT_TRUE: Final = 1
_CT_FALSE: Final = 2
_CT_BYTE: Final = 3
_CT_I32: Final = 5
_CT_I64: Final = 6
_CT_BINARY: Final = 8
_CT_LIST: Final = 9
_CT_STRUCT: Final = 12


def _varint(value: int) -> bytes:
    if value < 0x80:  # most lengths, counts and small numbers: one byte
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _zigzag(value: int) -> int:
    return value << 1 if value >= 0 else ((-value) << 1) - 1


class _Thrift:
    """A Thrift compact-protocol encoder: fields are written in increasing id order by callers."""

    __slots__ = ("_last", "_stack", "out")

    def __init__(self, *, after: int = 0) -> None:
        self.out = bytearray()
        self._last = after  # the id of the field written before, within the current struct
        self._stack: list[int] = []

    def _field(self, fid: int, ctype: int) -> None:
        delta = fid - self._last
        if 0 < delta <= 15:
            self.out.append(delta << 4 | ctype)
        else:
            self.out.append(ctype)
            self.out += _varint(_zigzag(fid))
        self._last = fid

    def i8(self, fid: int, value: int) -> None:
        self._field(fid, _CT_BYTE)
        self.out.append(value & 0xFF)

    def i32(self, fid: int, value: int) -> None:
        self._field(fid, _CT_I32)
        self.out += _varint(_zigzag(value))

    def i64(self, fid: int, value: int) -> None:
        self._field(fid, _CT_I64)
        self.out += _varint(_zigzag(value))

    def binary(self, fid: int, value: bytes) -> None:
        self._field(fid, _CT_BINARY)
        self.out += _varint(len(value))
        self.out += value

    def boolean(self, fid: int, value: bool) -> None:
        self._field(fid, _CT_TRUE if value else _CT_FALSE)

    def begin_struct(self, fid: int) -> None:
        self._field(fid, _CT_STRUCT)
        self.begin_element()

    def begin_element(self) -> None:
        """Start a struct that is an element of a list (it has no field header)."""
        self._stack.append(self._last)
        self._last = 0

    def end_struct(self) -> None:
        self.out.append(0)
        self._last = self._stack.pop()

    def empty_struct(self, fid: int) -> None:
        self.begin_struct(fid)
        self.end_struct()

    def begin_list(self, fid: int, element_ctype: int, size: int) -> None:
        self._field(fid, _CT_LIST)
        if size < 15:
            self.out.append(size << 4 | element_ctype)
        else:
            self.out.append(0xF0 | element_ctype)
            self.out += _varint(size)

    def i32_list(self, fid: int, values: Sequence[int]) -> None:
        self.begin_list(fid, _CT_I32, len(values))
        for value in values:
            self.out += _varint(_zigzag(value))

    def binary_list(self, fid: int, values: Sequence[bytes]) -> None:
        self.begin_list(fid, _CT_BINARY, len(values))
        for value in values:
            self.out += _varint(len(value))
            self.out += value


# Parquet's enums (parquet.thrift)
_BOOLEAN, _INT32, _INT64, _DOUBLE, _BYTE_ARRAY = 0, 1, 2, 5, 6
_REQUIRED, _OPTIONAL, _REPEATED = 0, 1, 2
_UTF8, _MAP, _LIST, _TIMESTAMP_MILLIS, _INT_16 = 0, 1, 3, 9, 16  # converted types
_PLAIN, _RLE = 0, 3
_DATA_PAGE = 0
_UNCOMPRESSED = 0
# SchemaElement.logicalType is a union: the field id says which logical type it is
_LT_STRING, _LT_MAP, _LT_LIST, _LT_TIMESTAMP, _LT_INTEGER = 1, 2, 3, 8, 10

# the physical type of each flat kind, and the annotations (converted, logical) pyarrow adds
_PHYSICAL: Final = {
    "string": _BYTE_ARRAY,
    "binary": _BYTE_ARRAY,
    "int64": _INT64,
    "int32": _INT32,
    "int16": _INT32,
    "float64": _DOUBLE,
    "bool": _BOOLEAN,
    "timestamp_s_utc": _INT64,
}
_ANNOTATIONS: Final = {
    "string": (_UTF8, _LT_STRING),
    "int16": (_INT_16, _LT_INTEGER),
    "timestamp_s_utc": (_TIMESTAMP_MILLIS, _LT_TIMESTAMP),
}
_STRING_ELEMENT: Final = {"physical": _BYTE_ARRAY, "converted": _UTF8, "logical": _LT_STRING}

_CREATED_BY: Final = b"gridtrace parquet-lite version 1"


# ---------------------------------------------------------------------------------------------
# The Arrow schema, as the IPC message pyarrow stores under ARROW:schema. A flatbuffer is built
# from its end towards its start; the bytes equal pyarrow's only if tables, strings and vectors
# are created in Arrow C++'s order, each table's fields added largest first (the order flatc's
# generated Create* functions use) and identical vtables shared, as flatbuffers' builder does.


class _FlatBuilder:
    """A flatbuffer builder; offsets count bytes from the buffer's end, as in flatbuffers."""

    __slots__ = ("_fields", "_minalign", "_vtables", "buf")

    def __init__(self) -> None:
        self.buf = bytearray()
        self._minalign = 1
        self._vtables: list[int] = []
        self._fields: list[tuple[int, int]] = []

    def _pad(self, count: int) -> None:
        if count:
            self.buf[0:0] = bytes(count)

    def _align(self, size: int) -> None:
        self._minalign = max(self._minalign, size)
        self._pad(-len(self.buf) % size)

    def _prealign(self, length: int, alignment: int) -> None:
        self._minalign = max(self._minalign, alignment)
        self._pad(-(len(self.buf) + length) % alignment)

    def _push(self, fmt: str, value: int) -> int:
        data = struct.pack(fmt, value)
        self._align(len(data))
        self.buf[0:0] = data
        return len(self.buf)

    def _refer_to(self, offset: int) -> int:
        self._align(4)
        return len(self.buf) - offset + 4

    def string(self, text: str) -> int:
        data = text.encode()
        self._prealign(len(data) + 1, 4)
        self.buf[0:0] = data + b"\0"
        return self._push("<I", len(data))

    def offsets(self, items: Sequence[int]) -> int:
        self._prealign(4 * len(items), 4)
        for item in reversed(items):
            self._push("<I", self._refer_to(item))
        return self._push("<I", len(items))

    def start(self) -> int:
        self._fields = []
        return len(self.buf)

    def scalar(self, slot: int, fmt: str, value: int, default: int = 0) -> None:
        if value != default:  # flatbuffers leaves out a field that has its default value
            self._fields.append((slot, self._push(fmt, value)))

    def offset(self, slot: int, offset: int) -> None:
        if offset:
            self._fields.append((slot, self._push("<I", self._refer_to(offset))))

    def end(self, start: int) -> int:
        table = self._push("<i", 0)
        size = max([4 + 2 * slot for slot, _ in self._fields], default=2) + 2
        vtable = bytearray(max(size, 4))
        struct.pack_into("<HH", vtable, 0, len(vtable), table - start)
        for slot, at in self._fields:
            struct.pack_into("<H", vtable, 4 + 2 * slot, table - at)
        used = 0
        for earlier in self._vtables:
            begin = len(self.buf) - earlier
            if self.buf[begin : begin + len(vtable)] == vtable:
                used = earlier
                break
        if not used:
            self.buf[0:0] = vtable
            used = len(self.buf)
            self._vtables.append(used)
        struct.pack_into("<i", self.buf, len(self.buf) - table, used - table)
        return table

    def finish(self, root: int) -> bytes:
        self._prealign(4, self._minalign)
        self._push("<I", self._refer_to(root))
        return bytes(self.buf)


# Arrow's Type union, MessageHeader union and enums (Schema.fbs, Message.fbs)
_FB_INT, _FB_FLOAT, _FB_BINARY, _FB_UTF8, _FB_BOOL = 2, 3, 4, 5, 6
_FB_TIMESTAMP, _FB_LIST, _FB_STRUCT, _FB_MAP = 10, 12, 13, 17
_FB_DOUBLE: Final = 2
_FB_HEADER_SCHEMA: Final = 1
_FB_METADATA_V5: Final = 4


def _fb_empty(builder: _FlatBuilder) -> int:
    return builder.end(builder.start())


def _fb_field(
    builder: _FlatBuilder,
    name: str,
    nullable: bool,
    kind: str,
) -> int:
    children: list[int] = []
    if kind == "string":
        type_id, type_offset = _FB_UTF8, _fb_empty(builder)
    elif kind == "binary":
        type_id, type_offset = _FB_BINARY, _fb_empty(builder)
    elif kind == "bool":
        type_id, type_offset = _FB_BOOL, _fb_empty(builder)
    elif kind in ("int64", "int32", "int16"):
        start = builder.start()
        builder.scalar(0, "<i", int(kind[3:]))  # bitWidth
        builder.scalar(1, "<B", 1)  # is_signed
        type_id, type_offset = _FB_INT, builder.end(start)
    elif kind == "float64":
        start = builder.start()
        builder.scalar(0, "<h", _FB_DOUBLE)  # precision
        type_id, type_offset = _FB_FLOAT, builder.end(start)
    elif kind == "timestamp_s_utc":
        timezone = builder.string("UTC")
        start = builder.start()
        builder.offset(1, timezone)
        builder.scalar(0, "<h", 0)  # unit SECOND is the default, so it is left out
        type_id, type_offset = _FB_TIMESTAMP, builder.end(start)
    elif kind == "list_string":
        children.append(_fb_field(builder, "item", True, "string"))
        type_id, type_offset = _FB_LIST, _fb_empty(builder)
    elif kind == "map_string_string":
        children.append(_fb_field(builder, "entries", False, "map_entries"))
        start = builder.start()
        builder.scalar(0, "<B", 0)  # keysSorted: false
        type_id, type_offset = _FB_MAP, builder.end(start)
    elif kind == "map_entries":
        children.append(_fb_field(builder, "key", False, "string"))
        children.append(_fb_field(builder, "value", True, "string"))
        type_id, type_offset = _FB_STRUCT, _fb_empty(builder)
    else:  # pragma: no cover - kinds are checked before
        raise SchemaError(f"unknown column kind {kind!r}")
    name_offset = builder.string(name)
    children_offset = builder.offsets(children)
    start = builder.start()
    builder.offset(5, children_offset)
    builder.offset(3, type_offset)
    builder.offset(0, name_offset)
    builder.scalar(2, "<B", type_id)
    builder.scalar(1, "<B", int(nullable))
    return builder.end(start)


def _arrow_schema_message(columns: Sequence[Column]) -> bytes:
    """Build the Arrow IPC message of the schema (what ``pyarrow.Schema.serialize`` returns)."""
    builder = _FlatBuilder()
    fields = [_fb_field(builder, c.name, c.nullable, c.kind) for c in columns]
    fields_offset = builder.offsets(fields)
    start = builder.start()
    builder.offset(1, fields_offset)  # endianness Little is the default
    schema = builder.end(start)
    start = builder.start()
    builder.offset(2, schema)  # header
    builder.scalar(0, "<h", _FB_METADATA_V5)  # version
    builder.scalar(1, "<B", _FB_HEADER_SCHEMA)  # header_type
    flatbuffer = builder.finish(builder.end(start))
    # the encapsulated message: continuation marker, length, flatbuffer, padding to 8 bytes
    padding = -(8 + len(flatbuffer)) % 8
    return struct.pack("<Ii", 0xFFFFFFFF, len(flatbuffer) + padding) + flatbuffer + bytes(padding)


# ---------------------------------------------------------------------------------------------
# The Parquet schema and the parts of the footer that depend on the columns only


class _Leaf(NamedTuple):
    """One Parquet leaf column: where it is, its physical type and its levels."""

    path: tuple[bytes, ...]
    physical: int
    max_def: int
    max_rep: int


def _schema_elements(thrift: _Thrift, columns: Sequence[Column]) -> list[_Leaf]:
    """Write the SchemaElements (the root first, depth first) and return the leaves."""
    leaves: list[_Leaf] = []

    def element(
        name: bytes,
        repetition: int,
        *,
        physical: int | None = None,
        children: int = 0,
        converted: int | None = None,
        logical: int | None = None,
    ) -> None:
        thrift.begin_element()
        if physical is not None:
            thrift.i32(1, physical)
        thrift.i32(3, repetition)
        thrift.binary(4, name)
        if children:
            thrift.i32(5, children)
        if converted is not None:
            thrift.i32(6, converted)
        if logical == _LT_INTEGER:
            thrift.begin_struct(10)
            thrift.begin_struct(_LT_INTEGER)
            thrift.i8(1, 16)  # bitWidth
            thrift.boolean(2, True)  # isSigned
            thrift.end_struct()
            thrift.end_struct()
        elif logical == _LT_TIMESTAMP:
            thrift.begin_struct(10)
            thrift.begin_struct(_LT_TIMESTAMP)
            thrift.boolean(1, True)  # isAdjustedToUTC
            thrift.begin_struct(2)  # unit: the union's field 1 is MILLIS
            thrift.empty_struct(1)
            thrift.end_struct()
            thrift.end_struct()
            thrift.end_struct()
        elif logical is not None:
            thrift.begin_struct(10)
            thrift.empty_struct(logical)
            thrift.end_struct()
        thrift.end_struct()

    n_elements = 1
    for column in columns:
        n_elements += {"list_string": 3, "map_string_string": 4}.get(column.kind, 1)
    thrift.begin_list(2, _CT_STRUCT, n_elements)
    element(b"schema", _REQUIRED, children=len(columns))
    for column in columns:
        name = column.name.encode()
        repetition = _OPTIONAL if column.nullable else _REQUIRED
        top_def = int(column.nullable)
        kind = column.kind
        if kind == "list_string":
            element(name, repetition, children=1, converted=_LIST, logical=_LT_LIST)
            element(b"list", _REPEATED, children=1)
            element(b"element", _OPTIONAL, **_STRING_ELEMENT)
            path = (name, b"list", b"element")
            leaves.append(_Leaf(path, _BYTE_ARRAY, top_def + 2, 1))
        elif kind == "map_string_string":
            element(name, repetition, children=1, converted=_MAP, logical=_LT_MAP)
            element(b"key_value", _REPEATED, children=2)
            element(b"key", _REQUIRED, **_STRING_ELEMENT)
            element(b"value", _OPTIONAL, **_STRING_ELEMENT)
            leaves.append(_Leaf((name, b"key_value", b"key"), _BYTE_ARRAY, top_def + 1, 1))
            leaves.append(_Leaf((name, b"key_value", b"value"), _BYTE_ARRAY, top_def + 2, 1))
        else:
            converted, logical = _ANNOTATIONS.get(kind, (None, None))
            physical = _PHYSICAL[kind]
            element(name, repetition, physical=physical, converted=converted, logical=logical)
            leaves.append(_Leaf((name,), physical, top_def, 0))
    return leaves


class _Layout(NamedTuple):
    """What a table's footer needs that depends on its columns only, computed once per schema."""

    schema: bytes  # FileMetaData field 2, the schema list, as encoded after field 1
    tail: bytes  # FileMetaData fields 5 to 7, as encoded after field 4
    leaves: tuple[_Leaf, ...]
    # each ColumnChunk's start up to ColumnMetaData field 4, for a table with rows and without
    chunk_starts: tuple[bytes, ...]
    empty_chunk_starts: tuple[bytes, ...]


def _check_spec(columns: Sequence[object]) -> None:
    """Check a column spec given by a caller, whose types no type checker may have seen."""
    if not columns:
        raise SchemaError("a table needs at least one column")
    seen: set[str] = set()
    for position, column in enumerate(columns):
        if not isinstance(column, Column):
            msg = f"column {position} is a {type(column).__name__}, expected a Column"
            raise SchemaError(msg)
        name, kind, nullable = cast("tuple[object, object, object]", column)
        if not isinstance(name, str) or not name:
            raise SchemaError(f"column {position} has no name: {name!r}")
        if not name.isascii():
            try:
                name.encode()
            except UnicodeEncodeError:
                raise SchemaError(f"column {position}: name {name!r} is not valid UTF-8") from None
        if kind not in _KINDS:
            known = ", ".join(sorted(_KINDS))
            raise SchemaError(f"column {name!r} has unknown kind {kind!r}; known: {known}")
        if not isinstance(nullable, bool):
            raise SchemaError(f"column {name!r}: nullable must be a bool, got {nullable!r}")
        if name in seen:
            raise SchemaError(f"column {name!r} appears twice")
        seen.add(name)


def _chunk_start(leaf: _Leaf, encodings: tuple[int, ...]) -> bytes:
    thrift = _Thrift()  # a ColumnChunk, an element of RowGroup.columns
    thrift.i64(2, 0)  # file_offset: deprecated, pyarrow writes 0
    thrift.begin_struct(3)  # ColumnMetaData
    thrift.i32(1, leaf.physical)
    thrift.i32_list(2, encodings)
    thrift.binary_list(3, leaf.path)
    thrift.i32(4, _UNCOMPRESSED)
    return bytes(thrift.out)


@lru_cache(maxsize=32)
def _layout(columns: tuple[Column, ...]) -> _Layout:
    thrift = _Thrift(after=1)  # FileMetaData field 1 (version) precedes the schema
    leaves = _schema_elements(thrift, columns)
    schema = bytes(thrift.out)

    thrift = _Thrift(after=4)  # FileMetaData field 4 (row groups) precedes these
    thrift.begin_list(5, _CT_STRUCT, 1)  # key_value_metadata
    thrift.begin_element()
    thrift.binary(1, b"ARROW:schema")
    thrift.binary(2, binascii.b2a_base64(_arrow_schema_message(columns), newline=False))
    thrift.end_struct()
    thrift.binary(6, _CREATED_BY)
    thrift.begin_list(7, _CT_STRUCT, len(leaves))  # column orders: the types' own orders
    for _ in leaves:
        thrift.begin_element()
        thrift.empty_struct(1)
        thrift.end_struct()
    return _Layout(
        schema,
        bytes(thrift.out),
        tuple(leaves),
        tuple(_chunk_start(leaf, (_RLE, _PLAIN)) for leaf in leaves),
        # pyarrow writes a column chunk without pages for an empty table, and lists RLE only
        tuple(_chunk_start(leaf, (_RLE,)) for leaf in leaves),
    )


# ---------------------------------------------------------------------------------------------
# Values: checked, then encoded


def _describe(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _bad(column: Column, row: int, problem: str) -> SchemaError:
    return SchemaError(f"column {column.name!r}, row {row}: {problem}")


_EXPECTED: Final[dict[str, str]] = {
    "string": "a str",
    "binary": "bytes",
    "int64": "an int",
    "int32": "an int",
    "int16": "an int",
    "float64": "a float",
    "bool": "a bool",
    "timestamp_s_utc": "an int (seconds since the epoch)",
    "list_string": "a list of str",
    "map_string_string": "a list of (str, str or None) pairs",
}
_RANGES: Final[dict[str, tuple[int, int]]] = {
    "int64": (-(2**63), 2**63 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int16": (-(2**15), 2**15 - 1),
    # stored in milliseconds, as pyarrow stores timestamp[s] (Parquet has no seconds unit)
    "timestamp_s_utc": (-(2**63 // 1000), (2**63 - 1) // 1000),
}
_STR: Final = frozenset({str})
_BYTES: Final = frozenset({bytes, bytearray})
_INT: Final = frozenset({int})
_FLOAT: Final = frozenset({float})
_BOOL: Final = frozenset({bool})
_LISTS: Final = frozenset({list, tuple})


def _first_bad(column: Column, values: Sequence[object], ok: frozenset[type]) -> SchemaError:
    """Return the error for the first value (or null) of ``values`` whose type is not in ``ok``."""
    for row, value in enumerate(values):
        if value is None:
            if not column.nullable:
                return _bad(column, row, "null in a column that is not nullable")
        elif type(value) not in ok:
            return _bad(column, row, f"expected {_EXPECTED[column.kind]}, got {_describe(value)}")
    raise AssertionError("no bad value")  # pragma: no cover - called only when there is one


def _out_of_range(column: Column, values: Sequence[object], low: int, high: int) -> SchemaError:
    for row, value in enumerate(values):
        if isinstance(value, int) and not low <= value <= high:
            return _bad(column, row, f"{value} is out of range for {column.kind}")
    raise AssertionError("no value out of range")  # pragma: no cover


_U32: Final = struct.Struct("<I").pack


class _Prefixes(dict[int, str]):
    """A length as four latin-1 characters, which encode to its four little-endian bytes."""

    def __missing__(self, length: int) -> str:
        prefix = self[length] = _U32(length).decode("latin-1")
        return prefix


_PREFIXES: Final = _Prefixes()


def _byte_arrays(items: Sequence[bytes | bytearray]) -> bytes:
    """PLAIN BYTE_ARRAY values: each one's length (4 bytes, little-endian) then its bytes."""
    # interleaved by slice assignment and joined once: no Python-level loop over the items
    parts: list[bytes | bytearray] = [b""] * (2 * len(items))
    parts[::2] = map(_U32, map(len, items))
    parts[1::2] = items
    return b"".join(parts)


def _texts(texts: list[str]) -> bytes:
    """PLAIN BYTE_ARRAY values of strings, as UTF-8; raises UnicodeEncodeError (surrogates)."""
    if "".join(texts).isascii():
        # the usual case, and several times faster: ASCII text is its own UTF-8 and latin-1, so
        # the lengths and the texts can be joined as one string and encoded once
        parts = [""] * (2 * len(texts))
        parts[::2] = map(_PREFIXES.__getitem__, map(len, texts))
        parts[1::2] = texts
        return "".join(parts).encode("latin-1")
    return _byte_arrays(list(map(str.encode, texts)))


def _unencodable(column: Column, values: Sequence[object]) -> SchemaError:
    """Return the error for the first string (or list or map item) that UTF-8 cannot encode."""
    for row, value in enumerate(values):
        texts: list[object] = [value]
        if type(value) in _LISTS:
            texts = [t for item in cast("list[object]", value) for t in _items(item)]
        for text in texts:
            if type(text) is str:
                try:
                    text.encode()
                except UnicodeEncodeError as exc:
                    return _bad(column, row, f"{text!r} is not encodable as UTF-8: {exc.reason}")
    raise AssertionError("no unencodable string")  # pragma: no cover


def _items(item: object) -> tuple[object, ...]:
    return cast("tuple[object, ...]", item) if type(item) in _LISTS else (item,)


def _encode_plain(column: Column, values: Sequence[object], present: list[object]) -> bytes:
    """PLAIN-encode the non-null values of a flat column, checking their types and ranges."""
    kind = column.kind
    count = len(present)
    types = set(map(type, present))
    if kind == "string":
        if not types <= _STR:
            raise _first_bad(column, values, _STR)
        try:
            return _texts(cast("list[str]", present))
        except UnicodeEncodeError:
            raise _unencodable(column, values) from None
    if kind == "binary":
        if not types <= _BYTES:
            raise _first_bad(column, values, _BYTES)
        return _byte_arrays(cast("list[bytes]", present))
    if kind == "bool":
        if not types <= _BOOL:
            raise _first_bad(column, values, _BOOL)
        return _bits(bytes(cast("list[bool]", present)))
    if kind == "float64":
        if not types <= _FLOAT:
            if not types <= _FLOAT | _INT:
                raise _first_bad(column, values, _FLOAT | _INT)
            for row, value in enumerate(values):
                # pyarrow refuses an int a double cannot hold exactly; so does this
                if type(value) is int and abs(value) > 2**53:
                    raise _bad(column, row, f"{value} is not exactly representable as a float")
        return struct.pack(f"<{count}d", *present)
    # integers and timestamps
    if not types <= _INT:
        raise _first_bad(column, values, _INT)
    ints = cast("list[int]", present)
    low, high = _RANGES[kind]
    if count and kind in ("int16", "timestamp_s_utc") and (min(ints) < low or max(ints) > high):
        raise _out_of_range(column, values, low, high)
    if kind == "timestamp_s_utc":
        ints = [value * 1000 for value in ints]
    try:  # struct checks the range of int32 and int64 itself
        return struct.pack(f"<{count}{'i' if kind in ('int32', 'int16') else 'q'}", *ints)
    except struct.error:
        raise _out_of_range(column, values, low, high) from None


# byte value v -> the ASCII digit of v, so that levels (bytes) read as a number in base 2**width
_DIGITS: Final = bytes.maketrans(bytes(range(10)), b"0123456789")


def _bits(values: bytes, width: int = 1) -> bytes:
    """Bit-pack values of ``width`` bits, the first in the lowest bits, padded to 8 values."""
    if not values:
        return b""
    # read right to left, the values are the digits of one number in base 2**width, which is
    # exactly the bit-packed layout once written as little-endian bytes
    number = int(values[::-1].translate(_DIGITS), 1 << width)
    return number.to_bytes((len(values) + 7) // 8 * width, "little")


def _levels(levels: bytes, width: int) -> bytes:
    """Encode levels in the RLE / bit-packed hybrid, prefixed by their length (data page v1)."""
    count = len(levels)
    if not count:
        return _U32(0)
    if levels.count(levels[:1]) == count:  # one run: the usual case (no nulls, flat lists)
        encoded = _varint(count << 1) + levels[:1]
    else:  # one bit-packed run of ceil(count / 8) groups of 8 values
        encoded = _varint((count + 7) // 8 << 1 | 1) + _bits(levels, width)
    return _U32(len(encoded)) + encoded


def _flat_page(column: Column, values: Sequence[object]) -> tuple[bytes, int]:
    """Return the data page body of a column that is not a list or a map, and its value count."""
    n_rows = len(values)
    if not column.nullable:
        if None in values:  # `in` compares by identity first: a C-speed scan
            row = next(row for row, value in enumerate(values) if value is None)
            raise _bad(column, row, "null in a column that is not nullable")
        present = values if isinstance(values, list) else list(values)
        return _encode_plain(column, values, present), n_rows
    if None not in values:  # no nulls: one run of n_rows ones, without building them
        run = _varint(n_rows << 1) + b"\x01"
        present = values if isinstance(values, list) else list(values)
        return _U32(len(run)) + run + _encode_plain(column, values, present), n_rows
    flags = bytes([value is not None for value in values])
    present = list(compress(values, flags))
    return _levels(flags, 1) + _encode_plain(column, values, present), n_rows


class _Runs(dict[int, bytes]):
    """The levels of one row of a list or map column, by its length (-1 for a null), cached."""

    def __init__(self, levels: Callable[[int], bytes]) -> None:
        super().__init__()
        self._levels = levels

    def __missing__(self, length: int) -> bytes:
        levels = self[length] = self._levels(length)
        return levels


# repetition levels: 0 starts a row, 1 continues it
_REPS: Final = _Runs(lambda n: b"\x00" + b"\x01" * (n - 1) if n > 0 else b"\x00")
# definition levels, for a column that is not nullable and one that is: a null row has 0, an
# empty one the column's top level, each item one more (where the items' own levels start)
_DEFS: Final = (
    _Runs(lambda n: b"\x01" * n if n > 0 else b"\x00"),
    _Runs(lambda n: b"\x02" * n if n > 0 else (b"\x01" if n == 0 else b"\x00")),
)
_NONE: Final = type(None)
_LISTS_OR_NONE: Final = _LISTS | {_NONE}


def _nested(column: Column, values: Sequence[object]) -> tuple[bytes, bytes, list[object]]:
    """Walk a list or map column: its repetition levels, its rows' levels and its items."""
    types = set(map(type, values))
    if not types <= _LISTS_OR_NONE or (_NONE in types and not column.nullable):
        raise _first_bad(column, values, _LISTS)
    rows = cast("Sequence[Sequence[object] | None]", values)
    if _NONE in types:
        lengths = [-1 if row is None else len(row) for row in rows]
        rows = [row for row in rows if row]
    else:
        lengths = list(map(len, cast("Sequence[Sequence[object]]", rows)))
    reps = b"".join(map(_REPS.__getitem__, lengths))
    defs = b"".join(map(_DEFS[column.nullable].__getitem__, lengths))
    return reps, defs, list(chain.from_iterable(cast("list[Sequence[object]]", rows)))


def _row_of_item(reps: bytes, defs: bytes, nullable: bool, index: int) -> int:
    """Return the row of the ``index``-th item, for an error message."""
    item_level = int(nullable) + 1
    row = -1
    seen = -1
    for rep, level in zip(reps, defs, strict=True):
        row += rep == 0
        seen += level == item_level
        if seen == index:
            return row
    raise AssertionError("no such item")  # pragma: no cover


def _list_page(column: Column, values: Sequence[object], max_def: int) -> tuple[bytes, int]:
    reps, defs, items = _nested(column, values)
    item_level = max_def - 1  # a null item's level; a present one's is max_def
    types = set(map(type, items))
    if types <= _STR:
        texts = cast("list[str]", items)
        defs = defs.replace(bytes((item_level,)), bytes((max_def,)))
    elif types <= {str, _NONE}:
        texts = [item for item in cast("list[str | None]", items) if item is not None]
        present = iter([item is not None for item in items])
        defs = bytes([level + next(present) if level == item_level else level for level in defs])
    else:
        index = next(i for i, item in enumerate(items) if type(item) not in {str, _NONE})
        row = _row_of_item(reps, defs, column.nullable, index)
        got = _describe(items[index])
        raise _bad(column, row, f"expected a list of str or None, got an item {got}")
    try:
        encoded = _texts(texts)
    except UnicodeEncodeError:
        raise _unencodable(column, values) from None
    width = max_def.bit_length()
    return _levels(reps, 1) + _levels(defs, width) + encoded, len(reps)


_FIRST: Final = itemgetter(0)
_SECOND: Final = itemgetter(1)


def _map_pages(
    column: Column, values: Sequence[object], key_max_def: int
) -> tuple[tuple[bytes, int], tuple[bytes, int]]:
    reps, defs, pairs = _nested(column, values)

    def bad(index: int, problem: str) -> SchemaError:
        return _bad(column, _row_of_item(reps, defs, column.nullable, index), problem)

    if not set(map(type, pairs)) <= _LISTS or not set(map(len, pairs)) <= {2}:  # type: ignore[arg-type]
        index = next(
            i
            for i, pair in enumerate(pairs)
            if type(pair) not in _LISTS or len(pair) != 2  # type: ignore[arg-type]
        )
        raise bad(
            index, f"expected {_EXPECTED[column.kind]}, got an item {_describe(pairs[index])}"
        )
    entries = cast("list[tuple[object, object]]", pairs)
    keys = list(map(_FIRST, entries))
    texts = list(map(_SECOND, entries))
    if not set(map(type, keys)) <= _STR:
        index = next(i for i, key in enumerate(keys) if type(key) is not str)
        raise bad(index, f"map keys must be str, got {_describe(keys[index])}")
    entry = key_max_def  # an entry's level: its key is there; its value's level is one more
    types = set(map(type, texts))
    if types <= _STR:
        value_defs = defs.replace(bytes((entry,)), bytes((entry + 1,)))
    elif types <= {str, _NONE}:
        present = [text is not None for text in texts]
        texts = [text for text in texts if text is not None]
        if len(present) == len(defs):  # every row has entries: no null or empty map
            value_defs = bytes([entry + flag for flag in present])
        else:
            flags = iter(present)
            value_defs = bytes([lv + next(flags) if lv == entry else lv for lv in defs])
    else:
        index = next(i for i, text in enumerate(texts) if type(text) not in {str, _NONE})
        raise bad(index, f"map values must be str or None, got {_describe(texts[index])}")
    try:
        key_values = _texts(cast("list[str]", keys))
        value_values = _texts(cast("list[str]", texts))
    except UnicodeEncodeError:
        raise _unencodable(column, values) from None
    rep_levels = _levels(reps, 1)
    key_levels = _levels(defs, key_max_def.bit_length())
    value_levels = _levels(value_defs, (key_max_def + 1).bit_length())
    return (
        (rep_levels + key_levels + key_values, len(reps)),
        (rep_levels + value_levels + value_values, len(reps)),
    )


def _int(value: int) -> bytes:
    """Encode a Thrift i32 or i64 (zigzag varint)."""
    return _varint(_zigzag(value))


# pieces of Thrift compact encoding written per page and per column chunk, where a field header
# is one byte: (the increase of the field id << 4) | the field's type (5 i32, 6 i64, 9 list, ...)
_I64_NEXT: Final = b"\x16"
_PAGE_END: Final = b"\x15\x00\x15\x06\x15\x06\x00\x00"  # encoding PLAIN, levels RLE, two ends
_ONE_PAGE_STATS: Final = b"\x49\x1c\x15\x00\x15\x00\x15\x02\x00\x00\x00"  # 1 data page, PLAIN
_NO_PAGE_STATS: Final = b"\x49\x0c\x00\x00"


# a page's size is a Thrift i32; the tables written here are far smaller
_MAX_PAGE: Final = 2**31 - 1


def _page_header(body_size: int, num_values: int) -> bytes:
    """Return a PageHeader: a version-1 data page, PLAIN values, RLE levels, no compression."""
    size = _int(body_size)
    return b"\x15\x00\x15" + size + b"\x15" + size + b"\x2c\x15" + _int(num_values) + _PAGE_END


def _encode(columns: tuple[Column, ...], data: Mapping[str, Sequence[object]]) -> bytes:
    """Encode the whole Parquet file in memory; raise SchemaError before anything is written."""
    _check_spec(columns)
    layout = _layout(columns)
    names = {column.name for column in columns}
    unexpected = sorted(str(name) for name in data if name not in names)
    if unexpected:
        raise SchemaError(f"unexpected column(s) {', '.join(map(repr, unexpected))}")
    n_rows = -1
    first = ""
    for column in columns:
        if column.name not in data:
            raise SchemaError(f"column {column.name!r} is missing")
        values = data[column.name]
        if isinstance(values, str | bytes | bytearray) or not isinstance(values, Sequence):
            got = type(values).__name__
            raise SchemaError(f"column {column.name!r}: expected a sequence of values, got {got}")
        length = len(values)
        if n_rows < 0:
            n_rows, first = length, column.name
        elif length != n_rows:
            msg = f"column {column.name!r} has {length} rows, column {first!r} has {n_rows}"
            raise SchemaError(msg)

    pages: list[tuple[bytes, int]] = []
    leaves = iter(layout.leaves)
    for column in columns:
        leaf = next(leaves)
        values = data[column.name]
        if column.kind == "list_string":
            pages.append(_list_page(column, values, leaf.max_def))
        elif column.kind == "map_string_string":
            pages.extend(_map_pages(column, values, leaf.max_def))
            next(leaves)
        else:
            pages.append(_flat_page(column, values))

    parts: list[bytes] = [b"PAR1"]
    position = 4
    chunks: list[bytes] = []
    if n_rows:
        for start, (body, num_values) in zip(layout.chunk_starts, pages, strict=True):
            if len(body) > _MAX_PAGE:
                raise SchemaError(f"a column holds more than {_MAX_PAGE} bytes, more than a page")
            header = _page_header(len(body), num_values)
            parts += (header, body)
            size = _int(len(header) + len(body))
            chunks += (start, _I64_NEXT, _int(num_values), _I64_NEXT, size, _I64_NEXT, size)
            chunks += (b"\x26", _int(position), _ONE_PAGE_STATS)  # data page offset, stats
            position += len(header) + len(body)
    else:  # as pyarrow does: no pages, every size and offset 0
        for start in layout.empty_chunk_starts:
            chunks += (start, b"\x16\x00\x16\x00\x16\x00\x26\x00", _NO_PAGE_STATS)
    total = _int(position - 4)
    n_chunks = len(layout.leaves)
    columns_header = (
        bytes((n_chunks << 4 | _CT_STRUCT,)) if n_chunks < 15 else b"\xfc" + _varint(n_chunks)
    )
    row_group = [b"\x19", columns_header, *chunks]  # RowGroup field 1: the column chunks
    # total byte size, rows, the file offset of the first page, total compressed size, end
    row_group += (b"\x16", total, b"\x16", _int(n_rows), b"\x26", _int(4 if n_rows else 0))
    row_group += (b"\x16", total, b"\x00")
    footer = b"".join(
        [b"\x15\x04", layout.schema, b"\x16", _int(n_rows), b"\x19\x1c", *row_group, layout.tail]
    )
    parts += (footer, b"\x00", _U32(len(footer) + 1), b"PAR1")
    return b"".join(parts)


def write_table(
    path: str | os.PathLike[str],
    columns_spec: Sequence[Column],
    columns: Mapping[str, Sequence[object]],
) -> None:
    """Write a table to a Parquet file, atomically, with the standard library only.

    The file reads back with ``pyarrow.parquet.read_table`` as the table pyarrow writes from the
    same values and schema. (pyarrow reads both back with ``timestamp[ms]`` for ``timestamp[s]``,
    as Parquet has no seconds; :func:`gridtrace.schema.read_table` casts them back.)

    Parameters
    ----------
    path : str or path-like
        The output file. Its folder must exist; an existing file is replaced in one step.
    columns_spec : sequence of Column
        The columns, in the file's order: name, kind and nullability.
    columns : mapping of str to sequence
        Each column's values by name, all of the same length (which may be 0). See
        :class:`Column` for the Python values each kind takes; ``None`` is a null.

    Raises
    ------
    SchemaError
        When the spec is invalid, a column is missing or unexpected or has another length than
        the first, or a value has the wrong type, is out of its type's range or is a null in a
        column that is not nullable (the message names the column and the row). Nothing is
        written then: the whole file is encoded before the output is opened.

    Examples
    --------
    >>> spec = [Column("name", "string", False), Column("size", "int64")]
    >>> values = {"name": ["a", "b"], "size": [1, None]}
    >>> write_table(tmp / "t.parquet", spec, values)  # doctest: +SKIP
    """
    data = _encode(tuple(columns_spec), columns)
    with atomic_path(path) as temporary:
        temporary.write_bytes(data)
