"""What the pure-Python Parquet writer needs only rarely: another spec, and error messages.

:mod:`gridtrace._parquet_lite` keeps the Arrow schemas of the three tables ``gridtrace parse``
writes as constants and loads this module only for anything else: checking a spec of the caller's
own and building its Arrow schema (the IPC message pyarrow stores under ``ARROW:schema``), and
finding, once a column has failed, the row and value to name in the error. Kept apart, none of
this is compiled or loaded by a run that writes its tables without error.
Only the standard library is imported, and gridtrace modules that import nothing else.
"""

from __future__ import annotations

import binascii
import struct
from collections.abc import Mapping, Sequence
from typing import Final, cast

from gridtrace._parquet_lite import KINDS, Column
from gridtrace.errors import SchemaError

_KINDS: Final = frozenset(KINDS)
_LISTS: Final = frozenset({list, tuple})


def check_spec(columns: Sequence[object]) -> None:
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


def arrow_schema_message(columns: Sequence[Column]) -> bytes:
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


def arrow_schema_base64(columns: Sequence[Column]) -> bytes:
    """Return the ``ARROW:schema`` value of a Parquet file: the schema message, in base64."""
    return binascii.b2a_base64(arrow_schema_message(columns), newline=False)


# ---------------------------------------------------------------------------------------------
# Error messages: where a value is wrong, found again only once a column has failed


def bad(column: Column, row: int, problem: str) -> SchemaError:
    return SchemaError(f"column {column.name!r}, row {row}: {problem}")


def describe(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


EXPECTED: Final[dict[str, str]] = {
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


def first_bad(column: Column, values: Sequence[object], ok: frozenset[type]) -> SchemaError:
    """Return the error for the first value (or null) of ``values`` whose type is not in ``ok``."""
    for row, value in enumerate(values):
        if value is None:
            if not column.nullable:
                return bad(column, row, "null in a column that is not nullable")
        elif type(value) not in ok:
            return bad(column, row, f"expected {EXPECTED[column.kind]}, got {describe(value)}")
    raise AssertionError("no bad value")  # pragma: no cover - called only when there is one


def out_of_range(column: Column, values: Sequence[object], low: int, high: int) -> SchemaError:
    for row, value in enumerate(values):
        if isinstance(value, int) and not low <= value <= high:
            return bad(column, row, f"{value} is out of range for {column.kind}")
    raise AssertionError("no value out of range")  # pragma: no cover


def unencodable(column: Column, values: Sequence[object]) -> SchemaError:
    """Return the error for the first string (or list or map item) that UTF-8 cannot encode."""
    for row, value in enumerate(values):
        texts: list[object] = [value]
        if type(value) in _LISTS:
            texts = [t for item in cast("list[object]", value) for t in items(item)]
        for text in texts:
            if type(text) is str:
                try:
                    text.encode()
                except UnicodeEncodeError as exc:
                    return bad(column, row, f"{text!r} is not encodable as UTF-8: {exc.reason}")
    raise AssertionError("no unencodable string")  # pragma: no cover


def items(item: object) -> tuple[object, ...]:
    return cast("tuple[object, ...]", item) if type(item) in _LISTS else (item,)


def row_of_item(reps: bytes, defs: bytes, nullable: bool, index: int) -> int:
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


def bad_item(column: Column, reps: bytes, defs: bytes, index: int, problem: str) -> SchemaError:
    """Return the error for the ``index``-th item of a list or map column."""
    return bad(column, row_of_item(reps, defs, column.nullable, index), problem)


def check_data(columns: tuple[Column, ...], data: Mapping[str, Sequence[object]]) -> None:
    """Check that ``data`` has a sequence for each column and no other key, all of one length."""
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
