"""A Parquet writer in pure Python, for small tables written by a process that imports no pyarrow.

``gridtrace parse`` of a small log spends most of its time importing numpy and pyarrow (0.2 s
warm, 0.67 s on a first call), more than the whole run of pure-Python peers. This module writes
the same tables with the standard library only, so that a small input can take a path that imports
neither. A file written here reads back with ``pyarrow.parquet.read_table`` as the table pyarrow
itself would have written from the same values: same Parquet schema, same Arrow schema (the
``ARROW:schema`` key holds the bytes ``pyarrow.Schema.serialize`` gives), same values.

The file is the simplest layout pyarrow reads: one row group, one version-1 data page per column
chunk, deflated by zlib (the GZIP codec, level 1; ``compression=None`` stores it as it is), PLAIN
values, levels in the RLE / bit-packed hybrid, the footer in the Thrift compact protocol. There
are no statistics, dictionaries or page indexes, which would cost writing time; deflated, the
files are still smaller than pyarrow's snappy ones on parsed TORQUE logs (a real day's records:
15 kB against 21 kB; 3 to 10 times larger stored as they are).

A process that runs this once (``gridtrace parse`` of a small log) pays for compiling and loading
it as much as for writing: the footer's column-only parts come from byte templates, the Arrow
schemas of the three tables ``gridtrace parse`` writes are constants, and what only another spec
or a bad value needs is in :mod:`gridtrace._parquet_lite_rare`, loaded only then.

Only the standard library is imported, and gridtrace modules that import nothing else.
"""

from __future__ import annotations

import os
import zlib
from _struct import Struct, pack  # not struct: its wrapper module is one more to load
from _struct import error as StructError  # type: ignore[attr-defined]  # (not in typeshed)
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from itertools import chain, compress, repeat
from operator import is_, is_not, itemgetter, mul

from gridtrace._atomic import atomic_name  # imports pyarrow only for its own Parquet writer
from gridtrace.errors import SchemaError

# typing is not imported at run time (~12 M instructions, 5% of `gridtrace parse` of one day's
# file): its names are for mypy (TYPE_CHECKING, which mypy takes as true), cast is an identity
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final, Literal, NamedTuple, TypeAlias, cast
else:

    def cast(_type: object, value: object) -> object:
        """Return ``value``: typing.cast at run time (for mypy, the real one)."""
        return value


__all__ = [
    "JOBS_COLUMNS",
    "KINDS",
    "QUARANTINE_COLUMNS",
    "RECORDS_COLUMNS",
    "Column",
    "write_table",
]

KINDS = (
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
)
"""The kinds of column :func:`write_table` writes (:data:`Kind`'s values, in its order)."""

if TYPE_CHECKING:  # the same names (a test compares them with KINDS)
    Kind: TypeAlias = Literal[
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

    class _ColumnFields(NamedTuple):
        name: str
        kind: Kind
        nullable: bool = True

else:  # a plain namedtuple (typing.NamedTuple would import typing)
    _ColumnFields = namedtuple("Column", ("name", "kind", "nullable"), defaults=(True,))


class Column(_ColumnFields):
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

    __slots__ = ()


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
# The parts of the footer that depend on the columns only, in the Thrift compact protocol, where
# a field's header is one byte: (the increase of its id << 4) | its type (5 i32, 6 i64, 8 binary,
# 9 list, 12 struct). pyarrow reads the footer's schema from the ARROW:schema key: the base64 of
# the IPC message pyarrow.Schema.serialize gives, built by gridtrace._parquet_lite_rare, whose
# bytes for the three tables of `gridtrace parse` are kept here (a test checks them), so that
# writing those builds no flatbuffer and loads no more code.

_RECORDS_ARROW: Final = (
    b"/////xgDAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAEAAAAVP7//wQAAAALAAAAxAIAAIACAABQAgAAEAIAAOAB"
    b"AAC0AQAAYAEAADABAACEAAAALAAAAAQAAAB0/v//AAABBBAAAAAUAAAABAAAAAAAAAADAAAAcmF3AGT9//+Y/v//"
    b"AAABDBQAAAAcAAAABAAAAAEAAAAUAAAABQAAAGZsYWdzAAAAkP3//8T+//8AAAEFEAAAABgAAAAEAAAAAAAAAAQA"
    b"AABpdGVtAAAAALj9///s/v//AAABERQAAAAcAAAABAAAAAEAAAAUAAAABQAAAGF0dHJzAAAA5P3//xz+//8AAAAN"
    b"GAAAACAAAAAEAAAAAgAAAEAAAAAUAAAABwAAAGVudHJpZXMAFP7//0j///8AAAEFEAAAABgAAAAEAAAAAAAAAAUA"
    b"AAB2YWx1ZQAAADz+//90/v//AAAABRAAAAAUAAAABAAAAAAAAAADAAAAa2V5AGD+//+U////AAABBRAAAAAcAAAA"
    b"BAAAAAAAAAAKAAAAam9iX2lkX3JhdwAAjP7//8D///8AAAEKEAAAACQAAAAEAAAAAAAAAAkAAABzdGFtcF91dGMA"
    b"AAAIAAgAAAAEAAgAAAAEAAAAAwAAAFVUQwAQABQACAAGAAcADAAAABAAEAAAAAAAAQUQAAAAGAAAAAQAAAAAAAAA"
    b"BQAAAHN0YW1wAAAABP///zz///8AAAAFEAAAABwAAAAEAAAAAAAAAAsAAAByZWNvcmRfdHlwZQAw////aP///wAA"
    b"AAIQAAAAJAAAAAQAAAAAAAAACAAAAHNyY19saW5lAAAAAAgADAAIAAcACAAAAAAAAAFAAAAApP///wAAAAUQAAAA"
    b"HAAAAAQAAAAAAAAACAAAAHNyY19maWxlAAAAAJj////Q////AAAABRAAAAAgAAAABAAAAAAAAAANAAAAc291cmNl"
    b"X2Zvcm1hdAAAAMj///8QABQACAAAAAcADAAAABAAEAAAAAAAAAUQAAAAHAAAAAQAAAAAAAAABAAAAHNpdGUAAAAA"
    b"BAAEAAQAAAA="
)
_JOBS_ARROW: Final = (
    b"/////6AJAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAEAAAAVPn//wQAAAArAAAASAkAAAQJAADYCAAAqAgAAGwI"
    b"AAAkCAAA8AcAALgHAACMBwAAYAcAADQHAAAMBwAA4AYAALAGAACABgAAPAYAAAAGAADABQAAhAUAAEgFAAAUBQAA"
    b"4AQAAKQEAABoBAAALAQAAPQDAAC8AwAAhAMAAEwDAAAUAwAA3AIAAIACAABEAgAACAIAAMwBAACUAQAAXAEAADAB"
    b"AAD8AAAAxAAAAJQAAABcAAAABAAAAED4//8AAAEMFAAAABwAAAAEAAAAAQAAABQAAAAFAAAAZmxhZ3MAAABo9///"
    b"bPj//wAAAQUQAAAAGAAAAAQAAAAAAAAABAAAAGl0ZW0AAAAAkPf//8j3//8AAAACEAAAABwAAAAEAAAAAAAAAAgA"
    b"AABzcmNfbGluZQAAAACI+P//AAAAAUAAAAD89///AAAABRAAAAAcAAAABAAAAAAAAAAIAAAAc3JjX2ZpbGUAAAAA"
    b"8Pf///T4//8AAAECEAAAABwAAAAEAAAAAAAAAAsAAAB0el9vZmZzZXRfcwDo+P//AAAAASAAAAAo+f//AAABBRAA"
    b"AAAgAAAABAAAAAAAAAAPAAAAZW5kX3JlY29yZF90eXBlAFT4//+M+P//AAAABRAAAAAYAAAABAAAAAAAAAAFAAAA"
    b"c3RhdGUAAAB8+P//gPn//wAAAQIQAAAAHAAAAAQAAAAAAAAACwAAAGV4aXRfc2lnbmFsAHT5//8AAAABIAAAALT5"
    b"//8AAAECEAAAABwAAAAEAAAAAAAAAAkAAABleGl0X2NvZGUAAACo+f//AAAAASAAAADo+f//AAABAhAAAAAgAAAA"
    b"BAAAAAAAAAAPAAAAdm1lbV91c2VkX2J5dGVzAOD5//8AAAABQAAAACD6//8AAAECEAAAACAAAAAEAAAAAAAAAA4A"
    b"AABtZW1fdXNlZF9ieXRlcwAAGPr//wAAAAFAAAAAWPr//wAAAQIQAAAAIAAAAAQAAAAAAAAADQAAAG1lbV9yZXFf"
    b"Ynl0ZXMAAABQ+v//AAAAAUAAAACQ+v//AAABDBQAAAAgAAAABAAAAAEAAAAYAAAACgAAAGV4ZWNfaG9zdHMAALz5"
    b"///A+v//AAABBRAAAAAYAAAABAAAAAAAAAAEAAAAaXRlbQAAAADk+f//6Pr//wAAAQIQAAAAHAAAAAQAAAAAAAAA"
    b"CgAAAGdwdXNfYWxsb2MAANz6//8AAAABIAAAABz7//8AAAECEAAAABwAAAAEAAAAAAAAAAsAAABjb3Jlc19hbGxv"
    b"YwAQ+///AAAAASAAAABQ+///AAABAhAAAAAcAAAABAAAAAAAAAALAAAAbm9kZXNfYWxsb2MARPv//wAAAAEgAAAA"
    b"hPv//wAAAQIQAAAAHAAAAAQAAAAAAAAACAAAAGdwdXNfcmVxAAAAAHj7//8AAAABIAAAALj7//8AAAECEAAAABwA"
    b"AAAEAAAAAAAAAAkAAABjb3Jlc19yZXEAAACs+///AAAAASAAAADs+///AAABAhAAAAAcAAAABAAAAAAAAAAJAAAA"
    b"bm9kZXNfcmVxAAAA4Pv//wAAAAEgAAAAIPz//wAAAQMQAAAAJAAAAAQAAAAAAAAACgAAAGNwdV90aW1lX3MAAAAA"
    b"BgAIAAYABgAAAAAAAgBY/P//AAABAhAAAAAgAAAABAAAAAAAAAAOAAAAd2FsbHRpbWVfcmVxX3MAAFD8//8AAAAB"
    b"QAAAAJD8//8AAAECEAAAACAAAAAEAAAAAAAAAA8AAAB3YWxsdGltZV91c2VkX3MAiPz//wAAAAFAAAAAyPz//wAA"
    b"AQIQAAAAGAAAAAQAAAAAAAAABQAAAHJ1bl9zAAAAuPz//wAAAAFAAAAA+Pz//wAAAQIQAAAAGAAAAAQAAAAAAAAA"
    b"BgAAAHdhaXRfcwAA6Pz//wAAAAFAAAAAKP3//wAAAQoQAAAAHAAAAAQAAAAAAAAACAAAAGVuZF90aW1lAAAAABz/"
    b"//8EAAAAAwAAAFVUQwBg/f//AAABChAAAAAcAAAABAAAAAAAAAAKAAAAc3RhcnRfdGltZQAAVP///wQAAAADAAAA"
    b"VVRDAJj9//8AAAEKEAAAACAAAAAEAAAAAAAAAA0AAABlbGlnaWJsZV90aW1lAAAAkP///wQAAAADAAAAVVRDANT9"
    b"//8AAAEKEAAAABwAAAAEAAAAAAAAAAoAAABxdWV1ZV90aW1lAADI////BAAAAAMAAABVVEMADP7//wAAAQoQAAAA"
    b"JAAAAAQAAAAAAAAACwAAAHN1Ym1pdF90aW1lAAgACAAAAAQACAAAAAQAAAADAAAAVVRDAEz+//8AAAEFEAAAABwA"
    b"AAAEAAAAAAAAAAgAAABqb2JfbmFtZQAAAAB0/f//eP7//wAAAQUQAAAAHAAAAAQAAAAAAAAACQAAAHBhcnRpdGlv"
    b"bgAAAKD9//+k/v//AAABBRAAAAAYAAAABAAAAAAAAAAFAAAAcXVldWUAAADI/f//zP7//wAAAQUQAAAAFAAAAAQA"
    b"AAAAAAAAAgAAAHZvAADs/f//8P7//wAAAQUQAAAAGAAAAAQAAAAAAAAABwAAAGFjY291bnQAFP7//xj///8AAAEF"
    b"EAAAABgAAAAEAAAAAAAAAAUAAABncm91cAAAADz+//9A////AAABBRAAAAAYAAAABAAAAAAAAAAEAAAAdXNlcgAA"
    b"AABk/v//nP7//wAAAAIQAAAAHAAAAAQAAAAAAAAACgAAAG5fYXR0ZW1wdHMAAFz///8AAAABEAAAAND+//8AAAAC"
    b"EAAAABgAAAAEAAAAAAAAAAcAAABhdHRlbXB0AIz///8AAAABEAAAAMz///8AAAECEAAAABwAAAAEAAAAAAAAAAsA"
    b"AABhcnJheV9pbmRleADA////AAAAASAAAAAQABQACAAGAAcADAAAABAAEAAAAAAAAQIQAAAAIAAAAAQAAAAAAAAA"
    b"BwAAAGpvYl9zZXEACAAMAAgABwAIAAAAAAAAAUAAAAB8////AAAABRAAAAAcAAAABAAAAAAAAAAKAAAAam9iX2lk"
    b"X3JhdwAAcP///6j///8AAAAFEAAAABgAAAAEAAAAAAAAAAcAAABqb2Jfa2V5AJj////Q////AAAABRAAAAAgAAAA"
    b"BAAAAAAAAAANAAAAc291cmNlX2Zvcm1hdAAAAMj///8QABQACAAAAAcADAAAABAAEAAAAAAAAAUQAAAAHAAAAAQA"
    b"AAAAAAAABAAAAHNpdGUAAAAABAAEAAQAAAAAAAAA"
)
_QUARANTINE_ARROW: Final = (
    b"/////2gBAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAMAAAACAAIAAAABAAIAAAABAAAAAYAAAAMAQAAyAAAAJgA"
    b"AABYAAAALAAAAAQAAAAc////AAAABBAAAAAUAAAABAAAAAAAAAADAAAAcmF3AAj///9A////AAAABRAAAAAYAAAA"
    b"BAAAAAAAAAAGAAAAcmVhc29uAAAw////aP///wAAAAIQAAAAJAAAAAQAAAAAAAAACAAAAHNyY19saW5lAAAAAAgA"
    b"DAAIAAcACAAAAAAAAAFAAAAApP///wAAAAUQAAAAHAAAAAQAAAAAAAAACAAAAHNyY19maWxlAAAAAJj////Q////"
    b"AAAABRAAAAAgAAAABAAAAAAAAAANAAAAc291cmNlX2Zvcm1hdAAAAMj///8QABQACAAAAAcADAAAABAAEAAAAAAA"
    b"AAUQAAAAHAAAAAQAAAAAAAAABAAAAHNpdGUAAAAABAAEAAQAAAA="
)
_KNOWN: Final = (
    (RECORDS_COLUMNS, _RECORDS_ARROW),
    (JOBS_COLUMNS, _JOBS_ARROW),
    (QUARANTINE_COLUMNS, _QUARANTINE_ARROW),
)


def _varint(value: int) -> bytes:
    if value < 0x80:  # most lengths, counts and small numbers: one byte
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _int(value: int) -> bytes:
    """Encode a Thrift i32 or i64 (zigzag varint)."""
    return _varint(value << 1 if value >= 0 else ((-value) << 1) - 1)


def _list_header(size: int, element_type: int) -> bytes:
    if size < 15:
        return bytes((size << 4 | element_type,))
    return bytes((0xF0 | element_type,)) + _varint(size)


# Parquet's physical type (parquet.thrift) of each flat kind, zigzag-encoded
_PHYSICAL: Final = {
    "string": b"\x0c",  # BYTE_ARRAY
    "binary": b"\x0c",
    "int64": b"\x04",  # INT64
    "int32": b"\x02",  # INT32
    "int16": b"\x02",
    "float64": b"\x0a",  # DOUBLE
    "bool": b"\x00",  # BOOLEAN
    "timestamp_s_utc": b"\x04",
}
# a SchemaElement after its name (field 4): the converted type (field 6), the logical type (field
# 10, a union whose field id says which type) and the struct's end, for the kinds pyarrow annotates
_UTF8_END: Final = b"\x25\x00\x4c\x1c\x00\x00\x00"  # UTF8; STRING
_ANNOTATED_END: Final = {
    "string": _UTF8_END,
    "int16": b"\x25\x20\x4c\xac\x13\x10\x11\x00\x00\x00",  # INT_16; INTEGER(16, signed)
    # TIMESTAMP_MILLIS; TIMESTAMP(isAdjustedToUTC, MILLIS)
    "timestamp_s_utc": b"\x25\x12\x4c\x8c\x11\x1c\x1c\x00\x00\x00\x00\x00",
}
# the elements below a list or a map: a group (no type, repeated, children) and its strings
# (BYTE_ARRAY, optional or required, UTF8); the annotations of the list or map itself (LIST, MAP)
_LIST_ELEMENTS: Final = b"\x35\x04\x18\x04list\x15\x02\x00" + (
    b"\x15\x0c\x25\x02\x18\x07element" + _UTF8_END
)
_LIST_END: Final = b"\x15\x02\x15\x06\x4c\x3c\x00\x00\x00"
_MAP_ELEMENTS: Final = (
    b"\x35\x04\x18\x09key_value\x15\x04\x00"
    + (b"\x15\x0c\x25\x00\x18\x03key" + _UTF8_END)
    + (b"\x15\x0c\x25\x02\x18\x05value" + _UTF8_END)
)
_MAP_END: Final = b"\x15\x02\x15\x02\x4c\x2c\x00\x00\x00"

_CREATED_BY: Final = b"gridtrace parquet-lite version 1"


# What a table's footer needs that depends on its columns only, computed once per spec: the
# schema list (FileMetaData field 2, as encoded after field 1), FileMetaData fields 5 to 7 (as
# encoded after field 4), and each ColumnChunk's start up to ColumnMetaData field 4, for a table
# with rows and for one without (a plain tuple: a NamedTuple class costs 0.3 ms to create)
_Layout = tuple[bytes, bytes, tuple[bytes, ...], tuple[bytes, ...]]


def _known_arrow(columns: tuple[Column, ...]) -> bytes | None:
    """Return the ARROW:schema value of one of the three tables of `gridtrace parse`, or None."""
    for spec, arrow in _KNOWN:
        # the same Column objects: a spec that only compares equal (1 for True) is checked
        if len(columns) == len(spec) and all(map(is_, columns, spec)):
            return arrow
    return None


@lru_cache(maxsize=32)
def _layout(columns: tuple[Column, ...]) -> _Layout:
    """Encode the SchemaElements (the root first, depth first), the column chunks' starts, etc."""
    arrow = _known_arrow(columns)
    if arrow is None:
        from gridtrace._parquet_lite_rare import arrow_schema_base64

        arrow = arrow_schema_base64(columns)
    # the root: required (0), its name, its number of children
    elements = [b"\x35\x00\x18\x06schema\x15" + _int(len(columns)) + b"\x00"]
    leaves: list[tuple[bytes, tuple[bytes, ...]]] = []  # physical type, path
    for column in columns:
        name = column.name.encode()
        # repetition (OPTIONAL or REQUIRED) and name, as after field 1 (type) or after none
        named = (b"\x02" if column.nullable else b"\x00") + b"\x18" + _varint(len(name)) + name
        if column.kind == "list_string":
            elements += (b"\x35" + named + _LIST_END, _LIST_ELEMENTS)
            leaves.append((b"\x0c", (name, b"list", b"element")))
        elif column.kind == "map_string_string":
            elements += (b"\x35" + named + _MAP_END, _MAP_ELEMENTS)
            leaves.append((b"\x0c", (name, b"key_value", b"key")))
            leaves.append((b"\x0c", (name, b"key_value", b"value")))
        else:
            physical = _PHYSICAL[column.kind]
            end = _ANNOTATED_END.get(column.kind, b"\x00")
            elements.append(b"\x15" + physical + b"\x25" + named + end)
            leaves.append((physical, (name,)))
    n_elements = (
        len(columns)
        + 1
        + sum({"list_string": 2, "map_string_string": 3}.get(column.kind, 0) for column in columns)
    )
    schema = b"\x19" + _list_header(n_elements, 12) + b"".join(elements)
    tail = b"".join(
        [
            b"\x19\x1c\x18\x0cARROW:schema\x18",  # key_value_metadata: one KeyValue
            _varint(len(arrow)),
            arrow,
            b"\x00\x18",  # created_by
            _varint(len(_CREATED_BY)),
            _CREATED_BY,
            b"\x19" + _list_header(len(leaves), 12),  # column orders: the types' own orders
            b"\x1c\x00\x00" * len(leaves),
        ]
    )
    # ColumnChunk: file_offset 0 (deprecated), ColumnMetaData: type, encodings (RLE and PLAIN, or
    # RLE only, as pyarrow lists for a chunk without pages), path, codec UNCOMPRESSED
    starts: list[bytes] = []
    empty_starts: list[bytes] = []
    for physical, path in leaves:
        pieces = [b"\x19", _list_header(len(path), 8)]
        for part in path:
            pieces += (_varint(len(part)), part)
        path_bytes = b"".join(pieces)  # the codec (field 4) follows, set per file
        starts.append(b"\x26\x00\x1c\x15" + physical + b"\x19\x25\x06\x00" + path_bytes)
        empty_starts.append(b"\x26\x00\x1c\x15" + physical + b"\x19\x15\x06" + path_bytes)
    return schema, tail, tuple(starts), tuple(empty_starts)


# ---------------------------------------------------------------------------------------------
# Values: checked, then encoded


def _bad(column: Column, row: int, problem: str) -> SchemaError:
    return SchemaError(f"column {column.name!r}, row {row}: {problem}")


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


_U32: Final = Struct("<I").pack


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
    if len(texts) > 1 and texts.count(texts[0]) == len(texts):
        # one value throughout (site, format, file): encoded once, repeated; count compares by
        # identity first, so this costs a C-speed scan
        return _texts(texts[:1]) * len(texts)
    if "".join(texts).isascii():
        # the usual case, and several times faster: ASCII text is its own UTF-8 and latin-1, so
        # the lengths and the texts can be joined as one string and encoded once
        parts = [""] * (2 * len(texts))
        parts[::2] = map(_PREFIXES.__getitem__, map(len, texts))
        parts[1::2] = texts
        return "".join(parts).encode("latin-1")
    return _byte_arrays(list(map(str.encode, texts)))


def _encode_plain(column: Column, values: Sequence[object], present: list[object]) -> bytes:
    """PLAIN-encode the non-null values of a flat column, checking their types and ranges."""
    kind = column.kind
    count = len(present)
    types = set(map(type, present))
    if kind == "string":
        if not types <= _STR:
            from gridtrace import _parquet_lite_rare as rare

            raise rare.first_bad(column, values, _STR)
        try:
            return _texts(cast("list[str]", present))
        except UnicodeEncodeError:
            from gridtrace import _parquet_lite_rare as rare

            raise rare.unencodable(column, values) from None
    if kind == "binary":
        if not types <= _BYTES:
            from gridtrace import _parquet_lite_rare as rare

            raise rare.first_bad(column, values, _BYTES)
        return _byte_arrays(cast("list[bytes]", present))
    if kind == "bool":
        if not types <= _BOOL:
            from gridtrace import _parquet_lite_rare as rare

            raise rare.first_bad(column, values, _BOOL)
        return _bits(bytes(cast("list[bool]", present)))
    if kind == "float64":
        if not types <= _FLOAT:
            if not types <= _FLOAT | _INT:
                from gridtrace import _parquet_lite_rare as rare

                raise rare.first_bad(column, values, _FLOAT | _INT)
            for row, value in enumerate(values):
                # pyarrow refuses an int a double cannot hold exactly; so does this
                if type(value) is int and abs(value) > 2**53:
                    raise _bad(column, row, f"{value} is not exactly representable as a float")
        return pack(f"<{count}d", *present)
    # integers and timestamps
    if not types <= _INT:
        from gridtrace import _parquet_lite_rare as rare

        raise rare.first_bad(column, values, _INT)
    ints = cast("list[int]", present)
    low, high = _RANGES[kind]
    # struct checks the ranges of int32 and int64 itself; int16 and timestamps are narrower
    if count and kind in ("int16", "timestamp_s_utc") and (min(ints) < low or max(ints) > high):
        from gridtrace import _parquet_lite_rare as rare

        raise rare.out_of_range(column, values, low, high)
    if kind == "timestamp_s_utc":
        ints = list(map(mul, ints, repeat(1000)))
    try:
        return pack(f"<{count}{'i' if kind in ('int32', 'int16') else 'q'}", *ints)
    except StructError:
        from gridtrace import _parquet_lite_rare as rare

        raise rare.out_of_range(column, values, low, high) from None


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
    flags = bytes(map(is_not, values, repeat(None)))
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
        from gridtrace import _parquet_lite_rare as rare

        raise rare.first_bad(column, values, _LISTS)
    rows = cast("Sequence[Sequence[object] | None]", values)
    if _NONE in types:
        lengths = [-1 if row is None else len(row) for row in rows]
        rows = [row for row in rows if row]
    else:
        lengths = list(map(len, cast("Sequence[Sequence[object]]", rows)))
    reps = b"".join(map(_REPS.__getitem__, lengths))
    defs = b"".join(map(_DEFS[column.nullable].__getitem__, lengths))
    return reps, defs, list(chain.from_iterable(cast("list[Sequence[object]]", rows)))


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
        from gridtrace import _parquet_lite_rare as rare

        got = rare.describe(items[index])
        problem = f"expected a list of str or None, got an item {got}"
        from gridtrace import _parquet_lite_rare as rare

        raise rare.bad_item(column, reps, defs, index, problem)
    try:
        encoded = _texts(texts)
    except UnicodeEncodeError:
        from gridtrace import _parquet_lite_rare as rare

        raise rare.unencodable(column, values) from None
    width = max_def.bit_length()
    return _levels(reps, 1) + _levels(defs, width) + encoded, len(reps)


_FIRST: Final = itemgetter(0)
_SECOND: Final = itemgetter(1)


def _map_pages(
    column: Column, values: Sequence[object], key_max_def: int
) -> tuple[tuple[bytes, int], tuple[bytes, int]]:
    reps, defs, pairs = _nested(column, values)

    if not set(map(type, pairs)) <= _LISTS or not set(map(len, pairs)) <= {2}:  # type: ignore[arg-type]
        index = next(
            i
            for i, pair in enumerate(pairs)
            if type(pair) not in _LISTS or len(pair) != 2  # type: ignore[arg-type]
        )
        from gridtrace import _parquet_lite_rare as rare

        problem = (
            f"expected {rare.EXPECTED[column.kind]}, got an item {rare.describe(pairs[index])}"
        )
        raise rare.bad_item(column, reps, defs, index, problem)
    entries = cast("list[tuple[object, object]]", pairs)
    keys = list(map(_FIRST, entries))
    texts = list(map(_SECOND, entries))
    if not set(map(type, keys)) <= _STR:
        index = next(i for i, key in enumerate(keys) if type(key) is not str)
        from gridtrace import _parquet_lite_rare as rare

        problem = f"map keys must be str, got {rare.describe(keys[index])}"
        raise rare.bad_item(column, reps, defs, index, problem)
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
        from gridtrace import _parquet_lite_rare as rare

        problem = f"map values must be str or None, got {rare.describe(texts[index])}"
        raise rare.bad_item(column, reps, defs, index, problem)
    try:
        key_values = _texts(cast("list[str]", keys))
        value_values = _texts(cast("list[str]", texts))
    except UnicodeEncodeError:
        from gridtrace import _parquet_lite_rare as rare

        raise rare.unencodable(column, values) from None
    rep_levels = _levels(reps, 1)
    key_levels = _levels(defs, key_max_def.bit_length())
    value_levels = _levels(value_defs, (key_max_def + 1).bit_length())
    return (
        (rep_levels + key_levels + key_values, len(reps)),
        (rep_levels + value_levels + value_values, len(reps)),
    )


# pieces of Thrift compact encoding written per page and per column chunk, where a field header
# is one byte: (the increase of the field id << 4) | the field's type (5 i32, 6 i64, 9 list, ...)
_I64_NEXT: Final = b"\x16"
_PAGE_END: Final = b"\x15\x00\x15\x06\x15\x06\x00\x00"  # encoding PLAIN, levels RLE, two ends
_ONE_PAGE_STATS: Final = b"\x49\x1c\x15\x00\x15\x00\x15\x02\x00\x00\x00"  # 1 data page, PLAIN
_NO_PAGE_STATS: Final = b"\x49\x0c\x00\x00"


# a page's size is a Thrift i32; the tables written here are far smaller
_MAX_PAGE: Final = 2**31 - 1


def _page_header(body_size: int, stored_size: int, num_values: int) -> bytes:
    """Return a PageHeader: a version-1 data page, PLAIN values, RLE levels.

    ``body_size`` is the page's size before compression, ``stored_size`` after.
    """
    return (
        b"\x15\x00\x15"
        + _int(body_size)
        + b"\x15"
        + _int(stored_size)
        + b"\x2c\x15"
        + _int(num_values)
        + _PAGE_END
    )


_CODECS: Final[dict[str | None, bytes]] = {None: b"\x15\x00", "gzip": b"\x15\x04"}
"""ColumnMetaData field 4, the codec: UNCOMPRESSED (0) or GZIP (2), zigzag-encoded."""


def _gzip(body: bytes) -> bytes:
    # level 1: a real day's records (1.3 MB) shrink to 110 kB in ~6 ms (level 6: 81 kB, 18 ms);
    # wbits 31: the gzip wrapper Parquet names. One call (the bytes compressobj + flush give, a
    # test checks) rather than an object per page: a small parse writes some 55 pages
    return zlib.compress(body, 1, wbits=31)


def _encode(
    columns: tuple[Column, ...], data: Mapping[str, Sequence[object]], compression: str | None
) -> bytes:
    """Encode the whole Parquet file in memory; raise SchemaError before anything is written."""
    if _known_arrow(columns) is None:
        from gridtrace._parquet_lite_rare import check_spec

        check_spec(columns)
    schema, tail, chunk_starts, empty_chunk_starts = _layout(columns)
    # the usual call: a list or tuple per column, no other key, all of one length; anything
    # else is checked value by value, with a message naming what is wrong
    given = [data.get(column.name) for column in columns]
    if (
        len(data) != len(columns)
        or not set(map(type, given)) <= _LISTS
        or len(set(map(len, cast("list[Sequence[object]]", given)))) != 1
    ):
        from gridtrace import _parquet_lite_rare as rare

        rare.check_data(columns, data)
    n_rows = len(data[columns[0].name])

    pages: list[tuple[bytes, int]] = []
    for column in columns:
        values = data[column.name]
        # a list's items and a map's keys are one and two levels below the column's own
        if column.kind == "list_string":
            pages.append(_list_page(column, values, column.nullable + 2))
        elif column.kind == "map_string_string":
            pages.extend(_map_pages(column, values, column.nullable + 1))
        else:
            pages.append(_flat_page(column, values))

    codec = _CODECS[compression]
    parts: list[bytes] = [b"PAR1"]
    position = 4
    unpacked_total = 0
    chunks: list[bytes] = []
    if n_rows:
        for start, (body, num_values) in zip(chunk_starts, pages, strict=True):
            if len(body) > _MAX_PAGE:
                raise SchemaError(f"a column holds more than {_MAX_PAGE} bytes, more than a page")
            stored = body if compression is None else _gzip(body)
            header = _page_header(len(body), len(stored), num_values)
            parts += (header, stored)
            unpacked = _int(len(header) + len(body))
            packed = _int(len(header) + len(stored))
            chunks += (start, codec, _I64_NEXT, _int(num_values), _I64_NEXT, unpacked)
            chunks += (_I64_NEXT, packed, b"\x26", _int(position), _ONE_PAGE_STATS)
            position += len(header) + len(stored)
            unpacked_total += len(header) + len(body)
    else:  # as pyarrow does: no pages, every size and offset 0
        for start in empty_chunk_starts:
            chunks += (start, codec, b"\x16\x00\x16\x00\x16\x00\x26\x00", _NO_PAGE_STATS)
    # RowGroup field 1: the column chunks
    row_group = [b"\x19", _list_header(len(chunk_starts), 12), *chunks]
    # total byte size (uncompressed), rows, the first page's offset, total compressed size, end
    row_group += (b"\x16", _int(unpacked_total), b"\x16", _int(n_rows))
    row_group += (b"\x26", _int(4 if n_rows else 0), b"\x16", _int(position - 4), b"\x00")
    footer = b"".join([b"\x15\x04", schema, b"\x16", _int(n_rows), b"\x19\x1c", *row_group, tail])
    parts += (footer, b"\x00", _U32(len(footer) + 1), b"PAR1")
    return b"".join(parts)


def write_table(
    path: str | os.PathLike[str],
    columns_spec: Sequence[Column],
    columns: Mapping[str, Sequence[object]],
    compression: str | None = "gzip",
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
    compression : {"gzip", None}, default "gzip"
        How each page is stored: deflated (level 1, the Parquet GZIP codec; a real TORQUE day's
        records take 110 kB instead of 1.3 MB, for ~6 ms) or as it is.

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
    if compression not in _CODECS:
        raise SchemaError(f"compression is 'gzip' or None, not {compression!r}")
    data = _encode(tuple(columns_spec), columns, compression)
    # open, not pathlib's: a small parse imports no pathlib (gridtrace._atomic.path_text)
    with atomic_name(path) as temporary, open(temporary, "wb") as handle:  # noqa: PTH123
        handle.write(data)
