"""Fast work on the ``attrs`` and ``flags`` columns of a ``records`` table.

:func:`attr_columns` extracts columns from the ``attrs`` maps; :func:`attr_fingerprints` gives
each map a text that is equal exactly when two maps are (a record written twice);
:func:`flag_array` builds a ``flags`` column from boolean masks, :func:`flag_mask` says which rows
of one carry a flag and :func:`append_flag` adds a flag to chosen rows. All are vectorised: no
Python work per row.


``pyarrow.compute.map_lookup`` scans every entry of every map for each key it is asked for;
on a file of 100,000 records of 100 attributes that is 10⁷ string comparisons per key. The
readers write a record's attributes in a fixed order, so a key usually sits at the same position
in every map: :func:`attr_columns` guesses that position from one record, checks the key found
there in every row (one vectorised comparison) and looks the key up the slow way only in the
rows where the guess was wrong.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["append_flag", "attr_columns", "attr_fingerprints", "flag_array", "flag_mask"]

_pc: Any = pc
_pa: Any = pa

_GUESSES = 4  # layouts tried (from the first row still unmatched) before the generic lookup


def _layout(keys: Any, start: int, length: int) -> dict[str, int]:
    layout: dict[str, int] = {}
    for position, key in enumerate(keys.slice(start, length).to_pylist()):
        layout.setdefault(str(key), position)
    return layout


def _first_positions(attrs: Any, rows: Any, names: list[str]) -> tuple[Any, Any, Any]:
    """Child positions of the first entry of each of ``names`` in the maps of ``rows``.

    One hashed pass (``pyarrow.compute.index_in``) over the keys of those maps, whatever their
    layout; returns, for every hit, the name's number, the row and the child position, in child
    order (so the first hit of a name in a row is its first entry). Hits may also come from
    rows other than ``rows`` (when most rows are asked for, the whole child array is read).
    """
    offsets = np.asarray(attrs.offsets, dtype=np.int64)
    keys = attrs.keys
    value_set = _pa.array(names, pa.string())
    if 4 * len(rows) > len(offsets) - 1:  # most rows: the whole window, no copy
        base = int(offsets[0])
        codes = _pc.index_in(keys.slice(base, int(offsets[-1]) - base), value_set=value_set)
        hit = np.flatnonzero(np.asarray(codes.is_valid()))
        position = hit + base
        row = np.searchsorted(offsets, position, side="right") - 1
    else:
        starts = offsets[rows]
        sizes = offsets[rows + 1] - starts
        total = int(sizes.sum())
        # the child positions of the chosen maps, map after map
        first = np.zeros(len(rows), dtype=np.int64)
        np.cumsum(sizes[:-1], out=first[1:])
        owner = np.repeat(np.arange(len(rows)), sizes)
        everywhere = np.arange(total, dtype=np.int64) - first[owner] + starts[owner]
        codes = _pc.index_in(keys.take(_pa.array(everywhere)), value_set=value_set)
        hit = np.flatnonzero(np.asarray(codes.is_valid()))
        position = everywhere[hit]
        row = rows[owner[hit]]
    code = np.asarray(codes.drop_null(), dtype=np.int64)
    return code, row, position


def _use_kernel(attrs: Any) -> bool:
    """Whether to find the keys with the compiled kernel: from ``MIN_ROWS`` maps, or once loaded."""
    from gridtrace.logs import _attrs_fast

    if not _attrs_fast.HAVE_NUMBA or attrs.type.key_type != pa.string():
        return False
    if len(attrs) < _attrs_fast.MIN_ROWS and not _attrs_fast.kernel_ready():
        return False
    return _attrs_fast.compile_kernel()


def attr_columns(attrs: Any, names: Iterable[str]) -> dict[str, Any]:
    """Look up each key of ``names`` in every map of ``attrs`` (null where absent).

    Parameters
    ----------
    attrs : pyarrow.MapArray or ChunkedArray of map<string, string>
        The ``attrs`` column; keys are expected to be unique within a map, as every reader
        writes them (with a repeated key, the one at the guessed position may be returned
        instead of the first).
    names : iterable of str
        The keys wanted.

    Returns
    -------
    dict of str to pyarrow.StringArray
        One array per key, as long as ``attrs``: the same values as
        ``pyarrow.compute.map_lookup(attrs, key, "first")``.

    Notes
    -----
    From :data:`~gridtrace.logs._attrs_fast.MIN_ROWS` maps (or once it is loaded) a compiled
    kernel finds every key in one pass over the maps. Below, each key is first read at the
    positions guessed from a few rows' layouts (one vectorised
    comparison per guess); the rows where no guess held, for all keys at once, are then looked
    up in one hashed pass over their keys (a key absent from every map costs no more than one
    present everywhere).
    """
    if isinstance(attrs, pa.ChunkedArray):
        attrs = attrs.combine_chunks()
    n = len(attrs)
    wanted = list(dict.fromkeys(names))
    if not n:
        return {name: _pa.array([], pa.string()) for name in wanted}
    items = attrs.items
    if _use_kernel(attrs):
        from gridtrace.logs._attrs_fast import find_keys

        index = find_keys(attrs, wanted)
        return {
            name: items.take(_pa.array(index[j], mask=index[j] < 0))
            for j, name in enumerate(wanted)
        }
    offsets = np.asarray(attrs.offsets, dtype=np.int64)
    starts = offsets[:-1]
    lengths = np.diff(offsets)
    valid = np.asarray(attrs.is_valid()) & (lengths > 0)
    keys = attrs.keys
    layouts: list[dict[str, int]] = []
    indexes: dict[str, Any] = {}
    founds: dict[str, Any] = {}
    for name in wanted:
        found = np.zeros(n, dtype=bool)
        index = np.zeros(n, dtype=np.int64)
        for attempt in range(_GUESSES):
            todo = valid & ~found
            if not todo.any():
                break
            if attempt == len(layouts):
                row = int(np.flatnonzero(todo)[0])
                layouts.append(_layout(keys, int(starts[row]), int(lengths[row])))
            position = layouts[attempt].get(name)
            if position is None:
                continue
            have = todo & (lengths > position)
            guess = np.where(have, starts + position, 0)
            hit = have & np.asarray(_pc.equal(keys.take(_pa.array(guess)), name).fill_null(False))
            index[hit] = guess[hit]
            found |= hit
        indexes[name] = index
        founds[name] = found
    missing = [name for name in wanted if (valid & ~founds[name]).any()]
    if missing:
        pending = np.zeros(n, dtype=bool)
        for name in missing:
            pending |= valid & ~founds[name]
        code, row, position = _first_positions(attrs, np.flatnonzero(pending), missing)
        if len(code):
            order = np.argsort(code, kind="stable")  # by name, child order kept within a name
            code, row, position = code[order], row[order], position[order]
            bounds = np.searchsorted(code, np.arange(len(missing) + 1))
            for j, name in enumerate(missing):
                rows_j = row[bounds[j] : bounds[j + 1]]
                positions_j = position[bounds[j] : bounds[j + 1]]
                if not len(rows_j):
                    continue
                first = np.ones(len(rows_j), dtype=bool)
                first[1:] = rows_j[1:] != rows_j[:-1]
                rows_j, positions_j = rows_j[first], positions_j[first]
                keep = valid[rows_j] & ~founds[name][rows_j]  # a guess that held is kept
                indexes[name][rows_j[keep]] = positions_j[keep]
                founds[name][rows_j[keep]] = True
    return {name: items.take(_pa.array(indexes[name], mask=~founds[name])) for name in wanted}


_SEP = "\x1f"  # unit separator: joins the keys, and the values, of one map
_NULL = "\x1e"  # stands for a null value


def _children_holding(part: Any, first: int, stop: int, char: str) -> Any:
    """Positions, among ``first:stop`` of a string array, of the non-null strings holding ``char``.

    A scan of the data buffer's bytes (``char`` is one ASCII byte), then a search of the
    strings those bytes fall in: no work per string unless the byte occurs.
    """
    _, offsets_buffer, data_buffer = part.buffers()[:3]
    if data_buffer is None or stop <= first:
        return np.zeros(0, dtype=np.int64)
    width = np.int64 if pa.types.is_large_string(part.type) else np.int32
    offsets = np.frombuffer(offsets_buffer, dtype=width)[part.offset : part.offset + len(part) + 1]
    low, high = int(offsets[first]), int(offsets[stop])
    data = np.frombuffer(data_buffer, dtype=np.uint8)[low:high]
    hits = np.flatnonzero(data == ord(char)) + low
    if not len(hits):
        return np.zeros(0, dtype=np.int64)
    children = np.unique(np.searchsorted(offsets, hits, side="right") - 1)
    if part.null_count:
        children = children[np.asarray(part.is_valid(), dtype=bool)[children]]
    return children.astype(np.int64)


def attr_fingerprints(attrs: Any) -> Any:
    """Return one text per map of ``attrs``, equal for two maps exactly when the maps are equal.

    Two maps are equal when they hold the same keys with the same values in the same order (a
    record written twice). The text joins the keys, then the values; a map holding the separator
    (U+001F) in a key or value gets its pairs in JSON instead, so that two different maps never
    share a text and two equal ones always do.

    Parameters
    ----------
    attrs : pyarrow.MapArray or ChunkedArray of map<string, string>
        The ``attrs`` column.

    Returns
    -------
    pyarrow.LargeStringArray
        One text per row (a null map gives the text of an empty map, the empty text).
    """
    if isinstance(attrs, pa.ChunkedArray):
        attrs = attrs.combine_chunks()
    n = len(attrs)
    if not n:
        return _pa.array([], pa.large_string())
    offsets = _pa.array(np.asarray(attrs.offsets, dtype=np.int64), pa.int64())
    keys = attrs.keys.cast(pa.large_string())
    values = _pc.fill_null(attrs.items.cast(pa.large_string()), _NULL)
    sep = pa.scalar(_SEP, pa.large_string())
    key_text = _pc.binary_join(_pa.LargeListArray.from_arrays(offsets, keys), sep)
    value_text = _pc.binary_join(_pa.LargeListArray.from_arrays(offsets, values), sep)
    both = pa.scalar(_SEP + _SEP, pa.large_string())
    text = _pc.binary_join_element_wise(key_text, value_text, both)
    # the keys and items are the whole child arrays, also when ``attrs`` is a slice
    bounds = np.asarray(attrs.offsets, dtype=np.int64)
    holds_sep = np.zeros(n, dtype=bool)
    for part in (attrs.keys, attrs.items):
        children = _children_holding(part, int(bounds[0]), int(bounds[-1]), _SEP)
        if len(children):
            holds_sep[np.searchsorted(bounds, children, side="right") - 1] = True
    empty = (bounds[1:] == bounds[:-1]) | ~np.asarray(attrs.is_valid(), dtype=bool)
    holds_sep &= ~empty
    if empty.any():  # no other text is empty: each holds two separators, or starts with _NULL
        blank = _pa.repeat(pa.scalar("", pa.large_string()), int(empty.sum()))
        text = _pc.replace_with_mask(text, _pa.array(empty), blank)
    if holds_sep.any():
        # such a map's text is its pairs in JSON: no U+001F left (JSON escapes it), while every
        # other text holds the two separators joining keys and values, so no text is shared
        rows = np.flatnonzero(holds_sep)
        maps = attrs.take(_pa.array(rows)).to_pylist()
        unique = _pa.array(
            [_NULL + _NULL + json.dumps([list(pair) for pair in m]) for m in maps],
            pa.large_string(),
        )
        text = _pc.replace_with_mask(text, _pa.array(holds_sep), unique)
    return text


def repeated_rows(attrs: Any, among: Any) -> tuple[Any, Any]:
    """Find the rows whose map repeats an earlier row's exactly (a record written twice).

    Parameters
    ----------
    attrs : pyarrow.MapArray or ChunkedArray of map<string, string>
        The ``attrs`` column.
    among : numpy.ndarray of bool
        The rows to compare (the others are never a copy nor copied).

    Returns
    -------
    copies : numpy.ndarray of bool
        The later copies.
    repeated : numpy.ndarray of bool
        The first rows of maps that have later copies.
    """
    among = np.asarray(among, dtype=bool)
    n = len(among)
    copies = np.zeros(n, dtype=bool)
    repeated = np.zeros(n, dtype=bool)
    rows = np.flatnonzero(among)
    if len(rows) < 2:
        return copies, repeated
    if isinstance(attrs, pa.ChunkedArray):
        attrs = attrs.combine_chunks()
    codes = np.asarray(
        attr_fingerprints(attrs.take(_pa.array(rows))).dictionary_encode().indices, np.int64
    )
    _, first = np.unique(codes, return_index=True)
    is_first = np.zeros(len(rows), dtype=bool)
    is_first[first] = True
    counts = np.bincount(codes)
    copies[rows[~is_first]] = True
    repeated[rows[is_first & (counts[codes] > 1)]] = True
    return copies, repeated


def append_flag(flags: Any, mask: Any, name: str) -> Any:
    """Add ``name`` at the end of the flag list of every row where ``mask`` is True.

    Parameters
    ----------
    flags : pyarrow.ListArray or ChunkedArray of list<string>
        A ``flags`` column (null for a row without flags).
    mask : numpy.ndarray of bool
        The rows to flag.
    name : str
        The flag.

    Returns
    -------
    pyarrow.ListArray
        The column with the flag added; rows without any flag stay null.
    """
    if isinstance(flags, pa.ChunkedArray):
        flags = flags.combine_chunks()
    mask = np.asarray(mask, dtype=bool)
    if not mask.any():
        return flags
    n = len(flags)
    old_counts = np.asarray(_pc.list_value_length(flags).fill_null(0), dtype=np.int64)
    new_counts = old_counts + mask
    new_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(new_counts, out=new_offsets[1:])
    flat = _pc.list_flatten(flags)
    pool = pa.concat_arrays([flat.cast(pa.string()), _pa.array([name], pa.string())])
    index = np.full(int(new_offsets[-1]), len(flat), dtype=np.int64)  # the new flag by default
    old_rows = np.repeat(np.arange(n), old_counts)
    old_starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(old_counts, out=old_starts[1:])
    position = new_offsets[old_rows] + (np.arange(len(flat)) - old_starts[old_rows])
    index[position] = np.arange(len(flat))
    values = pool.take(_pa.array(index))
    return _pa.ListArray.from_arrays(
        _pa.array(new_offsets.astype(np.int32)), values, mask=_pa.array(new_counts == 0)
    )


def flag_array(n: int, masks: Sequence[tuple[str, Any]]) -> Any:
    """Build a ``list<string>`` flags column: each row's flags in ``masks`` order, null for none.

    Parameters
    ----------
    n : int
        The number of rows.
    masks : sequence of (str, numpy.ndarray of bool)
        Each flag with the rows that carry it.
    """
    rows_parts = [np.flatnonzero(np.asarray(mask, dtype=bool)) for _, mask in masks]
    rows = np.concatenate(rows_parts) if rows_parts else np.zeros(0, np.int64)
    if not len(rows):
        return pa.nulls(n, pa.list_(pa.string()))
    which = np.repeat(np.arange(len(masks)), [len(r) for r in rows_parts])
    order = np.argsort(rows, kind="stable")
    values = _pa.array([name for name, _ in masks], pa.string()).take(_pa.array(which[order]))
    counts = np.bincount(rows, minlength=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    return _pa.ListArray.from_arrays(_pa.array(offsets), values, mask=_pa.array(counts == 0))


def flag_mask(flags: Any, name: str) -> Any:
    """Return a numpy boolean mask: True on the rows of ``flags`` that carry ``name``."""
    if isinstance(flags, pa.ChunkedArray):
        flags = flags.combine_chunks()
    n = len(flags)
    out = np.zeros(n, dtype=bool)
    if not n or flags.null_count == n:
        return out
    flat = _pc.list_flatten(flags)
    hit = np.asarray(_pc.equal(flat, name).fill_null(False), dtype=bool)
    if hit.any():
        parents = np.asarray(_pc.list_parent_indices(flags), dtype=np.int64)
        out[parents[hit]] = True
    return out
