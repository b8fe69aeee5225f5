"""Concatenate Parquet files of one schema into one file without decoding their pages.

The out-of-core merge (:mod:`gridtrace.logs._spill`) encodes its windows in parallel, one small
Parquet file each, and this module joins them: the bytes of every file's row groups are copied
as they are, one after the other, and a new footer lists them all. pyarrow cannot copy a row group
between files without decoding it, so the footer (Thrift compact protocol, ``parquet.thrift``'s
``FileMetaData``) is read and written here: every absolute offset it holds (the row group's and
the column chunk's file offsets, the data, index and dictionary page offsets, the bloom filter,
column index and offset index offsets) is moved by where the file's bytes land, and the row
groups' ordinals are renumbered (left out past 32,767, the largest an ordinal can be). Pages
hold no absolute offsets, so nothing else changes.

Only what the merge writes is accepted: plain (unencrypted) files that carry their column chunks
themselves (no ``file_path``) and share one schema and one key-value metadata (the Arrow schema);
anything else raises :class:`StitchError` rather than guessing.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gridtrace.errors import GridtraceError

__all__ = ["ParquetStitcher", "StitchError", "stitch_parquet"]

_MAGIC = b"PAR1"

# compact protocol types
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(1, 13)


class StitchError(GridtraceError, ValueError):
    """The Parquet files cannot be joined without decoding them."""


@dataclass
class _Field:
    """One field of a Thrift struct: its id, compact type and value (kept in the order read)."""

    id: int
    type: int
    value: Any


@dataclass
class _List:
    """A Thrift list or set: its element type and elements."""

    type: int
    elem: int
    items: list[Any]


@dataclass
class _Map:
    """A Thrift map: its key and value types and pairs."""

    key: int
    val: int
    items: list[tuple[Any, Any]]


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def byte(self) -> int:
        if self.at >= len(self.data):
            msg = "Parquet footer ends inside a value"
            raise StitchError(msg)
        value = self.data[self.at]
        self.at += 1
        return value

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, kind: int) -> Any:
        if kind in (_TRUE, _FALSE, _BYTE):  # a bool inside a list is one byte, kept as read
            return self.byte()
        if kind in (_I16, _I32, _I64):
            return self.zigzag()
        if kind == _DOUBLE:
            raw = self.data[self.at : self.at + 8]
            self.at += 8
            return raw
        if kind == _BINARY:
            size = self.varint()
            raw = self.data[self.at : self.at + size]
            self.at += size
            return raw
        if kind in (_LIST, _SET):
            head = self.byte()
            size, elem = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            return _List(kind, elem, [self.value(elem) for _ in range(size)])
        if kind == _MAP:
            size = self.varint()
            if not size:
                return _Map(0, 0, [])
            types = self.byte()
            key, val = types >> 4, types & 0x0F
            return _Map(key, val, [(self.value(key), self.value(val)) for _ in range(size)])
        if kind == _STRUCT:
            return self.struct()
        msg = f"unknown Thrift compact type {kind}"
        raise StitchError(msg)

    def struct(self) -> list[_Field]:
        fields: list[_Field] = []
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return fields
            delta, kind = head >> 4, head & 0x0F
            number = last + delta if delta else self.zigzag()
            value = None if kind in (_TRUE, _FALSE) else self.value(kind)
            fields.append(_Field(number, kind, value))
            last = number


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def varint(self, n: int) -> None:
        while n > 0x7F:
            self.out.append((n & 0x7F) | 0x80)
            n >>= 7
        self.out.append(n)

    def zigzag(self, n: int) -> None:
        self.varint((n << 1) ^ (n >> 63))

    def value(self, kind: int, value: Any) -> None:
        if kind in (_TRUE, _FALSE, _BYTE):
            self.out.append(value)
        elif kind in (_I16, _I32, _I64):
            self.zigzag(value)
        elif kind == _DOUBLE:
            self.out += value
        elif kind == _BINARY:
            self.varint(len(value))
            self.out += value
        elif kind in (_LIST, _SET):
            size = len(value.items)
            if size < 15:
                self.out.append(size << 4 | value.elem)
            else:
                self.out.append(0xF0 | value.elem)
                self.varint(size)
            for item in value.items:
                self.value(value.elem, item)
        elif kind == _MAP:
            self.varint(len(value.items))
            if value.items:
                self.out.append(value.key << 4 | value.val)
                for key, val in value.items:
                    self.value(value.key, key)
                    self.value(value.val, val)
        else:
            self.struct(value)

    def struct(self, fields: list[_Field]) -> None:
        last = 0
        for one in fields:
            delta = one.id - last
            if 0 < delta <= 15:
                self.out.append(delta << 4 | one.type)
            else:
                self.out.append(one.type)
                self.zigzag(one.id)
            if one.type not in (_TRUE, _FALSE):
                self.value(one.type, one.value)
            last = one.id
        self.out.append(0)


def _get(fields: list[_Field], number: int) -> _Field | None:
    return next((f for f in fields if f.id == number), None)


def _shift(fields: list[_Field], numbers: Sequence[int], by: int) -> None:
    for one in fields:
        if one.id in numbers:
            one.value += by


# parquet.thrift field ids
_FILE_SCHEMA, _FILE_ROWS, _FILE_GROUPS, _FILE_KEY_VALUES, _FILE_ENCRYPTION = 2, 3, 4, 5, 8
_GROUP_COLUMNS, _GROUP_OFFSET, _GROUP_ORDINAL = 1, 5, 7
_MAX_ORDINAL = (1 << 15) - 1
_CHUNK_PATH, _CHUNK_META, _CHUNK_CRYPTO, _CHUNK_ENCRYPTED = 1, 3, 8, 9
_CHUNK_OFFSETS = (2, 4, 6)  # file_offset, offset_index_offset, column_index_offset
_META_OFFSETS = (9, 10, 11, 14)  # data, index, dictionary page offsets, bloom filter offset


def _footer(path: Path) -> tuple[list[_Field], int]:
    """Return a Parquet file's ``FileMetaData`` and where its footer starts."""
    with path.open("rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        if size < 12:
            msg = f"{path.name} is too short to be a Parquet file"
            raise StitchError(msg)
        handle.seek(size - 8)
        tail = handle.read(8)
        if tail[4:] != _MAGIC:
            msg = f"{path.name} is not a plain Parquet file (encrypted or truncated)"
            raise StitchError(msg)
        length = struct.unpack("<I", tail[:4])[0]
        start = size - 8 - length
        handle.seek(start)
        reader = _Reader(handle.read(length))
    meta = reader.struct()
    if reader.at != length:
        msg = f"the footer of {path.name} has {length - reader.at} bytes after its metadata"
        raise StitchError(msg)
    return meta, start


def _moved_groups(meta: list[_Field], by: int, first_ordinal: int) -> list[list[_Field]]:
    groups_field = _get(meta, _FILE_GROUPS)
    groups: list[list[_Field]] = groups_field.value.items if groups_field else []
    for ordinal, group in enumerate(groups, first_ordinal):
        _shift(group, (_GROUP_OFFSET,), by)
        for one in group:
            if one.id == _GROUP_ORDINAL:
                one.value = ordinal
        if ordinal > _MAX_ORDINAL:  # an i16, optional (only encryption uses it): left out
            group[:] = [one for one in group if one.id != _GROUP_ORDINAL]
        columns = _get(group, _GROUP_COLUMNS)
        for chunk in columns.value.items if columns else []:
            if any(f.id in (_CHUNK_PATH, _CHUNK_CRYPTO, _CHUNK_ENCRYPTED) for f in chunk):
                msg = "a column chunk in another file or encrypted cannot be stitched"
                raise StitchError(msg)
            _shift(chunk, _CHUNK_OFFSETS, by)
            meta_data = _get(chunk, _CHUNK_META)
            if meta_data is not None:
                _shift(meta_data.value, _META_OFFSETS, by)
    return groups


def _encoded(kind: int, value: Any) -> bytes:
    writer = _Writer()
    writer.value(kind, value)
    return bytes(writer.out)


class ParquetStitcher:
    """Join Parquet files into one, a file at a time, as they come (see :func:`stitch_parquet`).

    Parameters
    ----------
    target : path
        The file written (replaced if it exists): its bytes are written as each part is added,
        its footer by :meth:`close`.

    Examples
    --------
    >>> with ParquetStitcher(tmp / "all.parquet") as stitcher:  # doctest: +SKIP
    ...     stitcher.add(tmp / "a.parquet")
    ...     stitcher.add(tmp / "b.parquet")
    ...     rows = stitcher.close()
    """

    def __init__(self, target: str | Path) -> None:
        self.target = Path(target)
        self.rows = 0
        self.parts = 0
        self._groups: list[list[_Field]] = []
        self._first: list[_Field] | None = None
        self._first_name = ""
        self._same: tuple[bytes, bytes] | None = None
        self._out = self.target.open("wb")
        self._out.write(_MAGIC)

    def __enter__(self) -> ParquetStitcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self._out.close()  # a footer only by close(): a file left unclosed is no Parquet file

    def add(self, part: str | Path) -> None:
        """Append the row groups of one Parquet file (of the schema of the first one added).

        Raises
        ------
        StitchError
            If ``part`` is not a plain Parquet file, or its schema differs from the first's.
        """
        path = Path(part)
        meta, footer_start = _footer(path)
        if _get(meta, _FILE_ENCRYPTION) is not None:
            msg = f"{path.name} is encrypted"
            raise StitchError(msg)
        schema, key_values = _get(meta, _FILE_SCHEMA), _get(meta, _FILE_KEY_VALUES)
        this = (
            _encoded(_LIST, schema.value) if schema else b"",
            _encoded(_LIST, key_values.value) if key_values else b"",
        )
        if self._same is None:
            self._first, self._same, self._first_name = meta, this, path.name
        elif this != self._same:
            msg = f"{path.name} has another schema than {self._first_name}"
            raise StitchError(msg)
        count = _get(meta, _FILE_ROWS)
        self.rows += count.value if count else 0
        out = self._out
        # the part's data lies between its magic and its footer; it lands at out.tell()
        self._groups += _moved_groups(meta, out.tell() - len(_MAGIC), len(self._groups))
        with path.open("rb") as source:
            source.seek(len(_MAGIC))
            remaining = footer_start - len(_MAGIC)
            while remaining:
                block = source.read(min(remaining, 1 << 22))
                if not block:
                    msg = f"{path.name} ends before its footer"
                    raise StitchError(msg)
                out.write(block)
                remaining -= len(block)
        self.parts += 1

    def close(self) -> int:
        """Write the footer and close the file; return its rows.

        Raises
        ------
        StitchError
            If no part was added.
        """
        if self._first is None:
            self._out.close()
            msg = "no Parquet file to stitch"
            raise StitchError(msg)
        meta = []
        for one in self._first:
            if one.id == _FILE_ROWS:
                one = _Field(one.id, one.type, self.rows)
            elif one.id == _FILE_GROUPS:
                one = _Field(one.id, one.type, _List(_LIST, _STRUCT, self._groups))
            meta.append(one)
        writer = _Writer()
        writer.struct(meta)
        self._out.write(bytes(writer.out))
        self._out.write(struct.pack("<I", len(writer.out)))
        self._out.write(_MAGIC)
        self._out.close()
        return self.rows


def stitch_parquet(parts: Sequence[str | Path], target: str | Path) -> int:
    """Write the row groups of ``parts``, in order, as one Parquet file ``target``.

    Parameters
    ----------
    parts : sequence of path
        Parquet files of one schema (and one key-value metadata), at least one.
    target : path
        The file written (replaced if it exists).

    Returns
    -------
    int
        The rows of ``target``.

    Raises
    ------
    StitchError
        If a part is not a plain Parquet file, or the parts' schemas differ.
    """
    if not parts:
        msg = "no Parquet file to stitch"
        raise StitchError(msg)
    with ParquetStitcher(target) as stitcher:
        for path in parts:
            stitcher.add(path)
        return stitcher.close()
