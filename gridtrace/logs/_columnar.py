"""Columnar building blocks shared by the line-per-job readers (SWF, GWF).

Each helper builds Arrow columns from numpy arrays or from a few Python objects, never one Python
object per row, so that a reader's cost stays in its compiled or vectorised parts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from gridtrace.logs._text import decode_line
from gridtrace.schema import JOBS, QUARANTINE, RECORDS

__all__ = [
    "STAMP_RANGE_S",
    "as_text",
    "fitted_numbers",
    "int_or_null",
    "interleave",
    "offsets_of",
    "quarantine_table",
    "records_table",
    "repeat_string",
    "split_lines",
    "stamps_out_of_range",
    "string_array",
]

# the pyarrow-stubs' overloads are narrower than these constructions: arrays are typed loosely
_pa: Any = pa
Arr: TypeAlias = Any
I64 = npt.NDArray[np.int64]
Bool = npt.NDArray[np.bool_]

# A merged table is left in this many chunks at most (see interleave).
_MAX_CHUNKS = 64

STAMP_RANGE_S = (-62_135_596_800, 253_402_300_799)
"""The epoch seconds a ``timestamp[s]`` column may hold: 0001-01-01 to 9999-12-31 UTC.

A stamp outside them fits int64 but no Python ``datetime`` (``to_pylist``, ``as_py`` fail on
it): a reader nulls and flags it like any number its column cannot hold."""


def split_lines(data: bytes) -> list[bytes]:
    r"""Split a file's content at ``\\n``; a final line end does not start another line."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def as_text(lines: Arr) -> tuple[Arr, Bool]:
    """Decode a binary array; lines that are not UTF-8 take ``decode_line``'s fallback.

    Returns the string array and a mask, True where the fallback (Windows-1252, else Latin-1)
    decoded the line.
    """
    try:
        return lines.cast(pa.string()), np.zeros(len(lines), dtype=bool)
    except pa.ArrowInvalid:
        raw = lines.to_pylist()
        bad = np.zeros(len(raw), dtype=bool)
        text: list[str] = []
        for i, line in enumerate(raw):
            decoded, bad[i] = decode_line(line)
            text.append(decoded)
        return _pa.array(text, pa.string()), bad


def repeat_string(value: str, n: int) -> Arr:
    """Return a string array of ``n`` copies of ``value``, built without Python objects per row."""
    return _pa.array([value], pa.string()).take(_pa.array(np.zeros(n, dtype=np.int32)))


def offsets_of(counts: npt.NDArray[np.integer[Any]]) -> I64:
    """Return the ``len(counts) + 1`` offsets of consecutive runs of the given lengths."""
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets


def string_array(offsets: npt.NDArray[np.int32], data: npt.NDArray[np.uint8]) -> Arr:
    """Wrap 32-bit ``offsets`` (``n + 1`` of them) and UTF-8 ``data`` as a string array, no copy.

    The caller guarantees that the data is valid UTF-8 between the offsets.
    """
    n = len(offsets) - 1
    return _pa.StringArray.from_buffers(n, _pa.py_buffer(offsets), _pa.py_buffer(data))


def _file_columns(
    site: str, source_format: str, src_file: str, lines: Sequence[int] | I64
) -> list[Arr]:
    """Return the first four columns of ``records`` and ``quarantine``: where rows come from."""
    n = len(lines)
    return [
        repeat_string(site, n),
        repeat_string(source_format, n),
        repeat_string(src_file, n),
        _pa.array(lines, pa.int64()),
    ]


def records_table(
    *,
    site: str,
    source_format: str,
    src_file: str,
    lines: I64,
    record_type: str | Arr,
    job_id_raw: Arr,
    attrs: Arr,
    flags: Arr | None = None,
    raw: Arr | None = None,
    stamp: Arr | None = None,
) -> pa.Table:
    """Build ``records`` rows of one file; ``stamp_utc`` null (the assembler sets it).

    ``record_type`` is one string for every row, or an array of one per row; ``flags``,
    ``raw`` and ``stamp`` are null when None.
    """
    n = len(lines)
    return pa.Table.from_arrays(
        [
            *_file_columns(site, source_format, src_file, lines),
            repeat_string(record_type, n) if isinstance(record_type, str) else record_type,
            pa.nulls(n, pa.string()) if stamp is None else stamp,
            pa.nulls(n, pa.timestamp("s", tz="UTC")),
            job_id_raw,
            attrs,
            pa.nulls(n, pa.list_(pa.string())) if flags is None else flags,
            pa.nulls(n, pa.binary()) if raw is None else raw,
        ],
        schema=RECORDS,
    )


def quarantine_table(
    *,
    site: str,
    source_format: str,
    src_file: str,
    lines: Sequence[int] | I64,
    reasons: Sequence[str],
    raw: Sequence[bytes],
) -> pa.Table:
    """Build ``quarantine`` rows of one file: a line number, a reason and the bytes each."""
    return pa.Table.from_arrays(
        [
            *_file_columns(site, source_format, src_file, lines),
            _pa.array(reasons, pa.string()),
            _pa.array(raw, pa.binary()),
        ],
        schema=QUARANTINE,
    )


def interleave(fast: pa.Table, fast_lines: I64, other: pa.Table) -> pa.Table:
    """Merge two tables of rows, each in ``src_line`` order, into one table in line order.

    When ``other`` is small, ``fast`` is cut around its rows into zero-copy slices, so the result
    may have several chunks per column; past a few dozen rows the two are sorted into one.

    Parameters
    ----------
    fast : pyarrow.Table
        The bulk of the rows, in line order.
    fast_lines : numpy.ndarray
        ``fast``'s ``src_line`` values.
    other : pyarrow.Table
        The other rows (same schema), in line order, none on a line of ``fast``.

    Returns
    -------
    pyarrow.Table
        All rows, in line order.
    """
    if other.num_rows == 0:
        return fast
    if fast.num_rows == 0:
        return other
    other_lines = np.asarray(other.column("src_line").to_numpy(), dtype=np.int64)
    if len(other_lines) > _MAX_CHUNKS:  # many pieces: one sort of the whole is cheaper
        order = np.argsort(np.concatenate([fast_lines, other_lines]), kind="stable")
        return pa.concat_tables([fast, other]).take(_pa.array(order))
    cuts = np.searchsorted(fast_lines, other_lines)  # fast rows before each other row
    pieces = []
    done = 0
    r = 0
    while r < len(cuts):
        cut = int(cuts[r])
        if cut > done:
            pieces.append(fast.slice(done, cut - done))
            done = cut
        run_end = r + 1
        while run_end < len(cuts) and cuts[run_end] == cut:
            run_end += 1
        pieces.append(other.slice(r, run_end - r))
        r = run_end
    if done < fast.num_rows:
        pieces.append(fast.slice(done))
    merged = pa.concat_tables(pieces)
    return merged.combine_chunks() if len(pieces) > _MAX_CHUNKS else merged


def fitted_numbers(
    columns: Mapping[str, npt.NDArray[np.float64]],
) -> tuple[list[npt.NDArray[np.float64]], npt.NDArray[np.bool_]]:
    """Null (NaN) the numbers too large for their ``jobs`` column; say on which rows.

    A float beyond its column's integer range would fail the cast (int32) or wrap silently (int64)
    when made an integer, and a stamp outside :data:`STAMP_RANGE_S` is no date (``to_pylist``
    fails on it): a damaged count, id or time must cost that value, flagged by the reader
    (``VALUE_UNREADABLE``), never the file nor a wrong number.

    Parameters
    ----------
    columns : mapping of str to ndarray
        ``jobs`` column name → that column's numbers (NaN where unknown, all of one length); the
        integer width comes from the ``jobs`` schema.

    Returns
    -------
    values : list of ndarray
        The arrays in the mapping's order, a copy with NaN where a value did not fit (the array
        itself otherwise).
    beyond : ndarray of bool
        The rows where any value did not fit.
    """
    out: list[npt.NDArray[np.float64]] = []
    beyond = np.zeros(len(next(iter(columns.values()))) if columns else 0, dtype=bool)
    for name, values in columns.items():
        kind = JOBS.field(name).type
        if pa.types.is_timestamp(kind):  # the jobs table's stamps are epoch seconds
            bad = stamps_out_of_range(values)
        else:
            limit = 2.0 ** (kind.bit_width - 1)
            with np.errstate(invalid="ignore"):
                rounded = np.round(values)
                bad = (rounded >= limit) | (rounded < -limit)
        if bad.any():
            beyond |= bad
            values = np.where(bad, np.nan, values)
        out.append(values)
    return out, beyond


def stamps_out_of_range(values: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
    """Where epoch seconds (NaN unknown) lie outside :data:`STAMP_RANGE_S`, once rounded."""
    low, high = STAMP_RANGE_S
    with np.errstate(invalid="ignore"):
        rounded = np.round(values)
        return (rounded < low) | (rounded > high)


def int_or_null(values: npt.NDArray[np.float64], dtype: pa.DataType) -> Any:
    """Make an integer column of ``dtype`` from floats: rounded, null where NaN.

    The values must fit ``dtype`` (see :func:`fitted_numbers`).
    """
    known = ~np.isnan(values)
    return _pa.array(np.where(known, np.round(values), 0).astype(np.int64), mask=~known).cast(dtype)
