r"""SWF job lines: the compiled scanner and number parser behind :mod:`gridtrace.logs._swf`.

Nearly every line of an SWF file is a *clean* job line: 18 ASCII decimal numbers separated by
spaces or tabs (a CR allowed at the very end). :func:`scan_swf` walks the file's bytes once in a
numba kernel, recognises those lines and copies their tokens and job numbers straight into the
buffers of Arrow string arrays, so no Python object is made per line or token. It *declines* every
other line (comments, blank lines, a wrong field count, a token that is not a decimal number, any
other byte): those go to the readable reference tokeniser in :mod:`gridtrace.logs._swf`, which
holds the one definition of every record, reason and flag. A declined line is always read right,
only more slowly.

A token is a number when it matches ``[-+]?(\\d+\\.?\\d*|\\.\\d+)([eE][-+]?\\d+)?``, the
reference's rule.

:func:`parse_numbers` turns such tokens (an Arrow string array) into floats. A token whose digits
fit in 2⁵³ and whose decimal exponent is within ±22 is computed as one exact integer times or
divided by one exact power of ten, a single correctly rounded operation (Clinger's fast path), so
the value is the one Arrow's cast gives; every other token is cast by Arrow itself.

numba is needed for the speed; without it the callers use the reference paths.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from gridtrace.logs._columnar import string_array
from gridtrace.logs._kernels import HAVE_NUMBA, LazyKernel

__all__ = ["FIELDS", "HAVE_NUMBA", "Scan", "compile_kernel", "parse_numbers", "scan_swf"]


FIELDS = 18
"""Fields of an SWF job line."""

U8 = npt.NDArray[np.uint8]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]

# Arrow string arrays have 32-bit offsets: a file is scanned in pieces well below 2 GiB, so that
# the values (at most the piece's bytes) and the 18 key names per line (a line has at least 36
# bytes, so at most 10 bytes of key per byte of piece) stay addressable.
_MAX_PIECE = 1 << 27

# Byte values the kernel tests, named.
_LF, _CR, _TAB, _SPACE, _PLUS, _MINUS, _DOT, _ZERO, _NINE, _E, _LOWER_E = (
    10,
    13,
    9,
    32,
    43,
    45,
    46,
    48,
    57,
    69,
    101,
)
_MAX_EXACT = 1 << 53  # integers up to here are exact doubles
_POW10 = np.array([10.0**k for k in range(23)], dtype=np.float64)  # exact up to 1e22

# The kernel's functions, callees first; plain Python until compile_kernel replaces each by its
# numba compilation (importing numba costs half a second, paid only by a program reading SWF).
_KERNEL = ("_scan_piece", "_parse_token", "_parse_tokens")
_ENTRY_POINTS = frozenset({"_scan_piece", "_parse_tokens"})
_LAZY = LazyKernel(globals(), _KERNEL, _ENTRY_POINTS)
compile_kernel = _LAZY.compile


# --- the kernel --------------------------------------------------------------------------------


# Byte classes for the scanner: the four that make up numbers, then those that end a token.
_DIGIT, _SIGN, _POINT, _EXP, _BLANK, _RETURN, _NEWLINE, _OTHER = range(8)
_CLASS = np.full(256, _OTHER, dtype=np.uint8)
_CLASS[_ZERO : _NINE + 1] = _DIGIT
_CLASS[[_PLUS, _MINUS]] = _SIGN
_CLASS[_DOT] = _POINT
_CLASS[[_E, _LOWER_E]] = _EXP
_CLASS[[_SPACE, _TAB]] = _BLANK
_CLASS[_CR] = _RETURN
_CLASS[_LF] = _NEWLINE

# The number grammar as an automaton over the first four classes. States: 0 start, 1 sign,
# 2 integer digits, 3 point without digits before, 4 digits and point, 5 fraction digits,
# 6 exponent mark, 7 exponent sign, 8 exponent digits, 9 not a number (absorbing).
_BAD = 9
_STEP = np.full((10, 4), _BAD, dtype=np.uint8)
_STEP[0, [_DIGIT, _SIGN, _POINT]] = (2, 1, 3)
_STEP[1, [_DIGIT, _POINT]] = (2, 3)
_STEP[2, [_DIGIT, _POINT, _EXP]] = (2, 4, 6)
_STEP[3, _DIGIT] = 5
_STEP[4, [_DIGIT, _EXP]] = (5, 6)
_STEP[5, [_DIGIT, _EXP]] = (5, 6)
_STEP[6, [_DIGIT, _SIGN]] = (8, 7)
_STEP[7, _DIGIT] = 8
_STEP[8, _DIGIT] = 8
_ACCEPT = np.zeros(10, dtype=np.bool_)
_ACCEPT[[2, 4, 5, 8]] = True


def _scan_piece(
    buf: U8,
    lo: int,
    hi: int,
    fast: Bools,
    starts: I64,
    ends: I64,
    values_off: I32,
    values: U8,
    ids_off: I32,
    ids: U8,
) -> tuple[int, int]:
    r"""Scan the lines of ``buf[lo:hi]`` (``hi`` is a line start or the buffer's end).

    For line ``i`` of the piece it sets ``starts[i]`` and ``ends[i]`` (the line's bytes, its
    ``\n`` left out) and ``fast[i]``, whether it is a clean job line; the tokens of clean lines
    are appended to ``values`` / ``values_off`` and their job numbers to ``ids`` / ``ids_off``.
    Returns the number of lines and of clean lines.
    """
    line = 0
    clean = 0
    v = 0  # bytes written to values
    d = 0  # bytes written to ids
    values_off[0] = 0
    ids_off[0] = 0
    s = lo
    while s < hi:
        p = s
        fields = 0
        ok = True
        v_line = v
        while True:
            while p < hi and (buf[p] == _SPACE or buf[p] == _TAB):
                p += 1
            if p >= hi or buf[p] == _LF:
                break
            if buf[p] == _CR:  # allowed only just before the line end
                ok = p + 1 >= hi or buf[p + 1] == _LF
                p += 1
                break
            if fields == FIELDS:
                ok = False
                break
            state = 0
            first = p
            while p < hi:
                c = buf[p]
                kind = _CLASS[c]
                if kind > _EXP:
                    break
                state = _STEP[state, kind]
                values[v] = c
                v += 1
                p += 1
            if not _ACCEPT[state] or (p < hi and _CLASS[buf[p]] == _OTHER):
                ok = False
                break
            if fields == 0:
                for k in range(first, p):
                    ids[d] = buf[k]
                    d += 1
            fields += 1
            values_off[clean * FIELDS + fields] = v
        if ok and fields == FIELDS:
            fast[line] = True
            clean += 1
            ids_off[clean] = d
        else:
            while p < hi and buf[p] != _LF:
                p += 1
            fast[line] = False
            v = v_line  # drop what this line wrote
            d = ids_off[clean]
        starts[line] = s
        ends[line] = p
        line += 1
        s = p + 1
    return line, clean


def _parse_token(data: U8, lo: int, hi: int, pow10: npt.NDArray[np.float64]) -> tuple[float, bool]:
    """Parse ``data[lo:hi]`` by the exact fast path; ``(0.0, False)`` when it does not apply."""
    p = lo
    negative = False
    if p < hi and (data[p] == _PLUS or data[p] == _MINUS):
        negative = data[p] == _MINUS
        p += 1
    mantissa = 0
    significant = 0
    scale = 0  # digits after the point
    digits = 0
    seen_dot = False
    while p < hi:
        c = data[p]
        if _ZERO <= c <= _NINE:
            digits += 1
            if seen_dot:
                scale += 1
            if mantissa > 0 or c != _ZERO:
                significant += 1
                if significant > 18:  # beyond what an int64 surely holds
                    return 0.0, False
                mantissa = mantissa * 10 + (c - _ZERO)
        elif c == _DOT and not seen_dot:
            seen_dot = True
        else:
            break
        p += 1
    if digits == 0:
        return 0.0, False
    exponent = 0
    if p < hi:
        if data[p] != _E and data[p] != _LOWER_E:
            return 0.0, False
        p += 1
        exp_negative = False
        if p < hi and (data[p] == _PLUS or data[p] == _MINUS):
            exp_negative = data[p] == _MINUS
            p += 1
        exp_digits = 0
        while p < hi and _ZERO <= data[p] <= _NINE:
            exponent = exponent * 10 + (data[p] - _ZERO)
            exp_digits += 1
            if exp_digits > 4:
                return 0.0, False
            p += 1
        if exp_digits == 0 or p != hi:
            return 0.0, False
        if exp_negative:
            exponent = -exponent
    exponent -= scale
    if mantissa > _MAX_EXACT or exponent > 22 or exponent < -22:
        return 0.0, False
    value = float(mantissa)
    if exponent > 0:
        value = value * pow10[exponent]
    elif exponent < 0:
        value = value / pow10[-exponent]
    return (-value if negative else value), True


def _parse_tokens(
    data: U8, offsets: I32, out: F64, done: Bools, pow10: F64, minus_one_nan: bool
) -> int:
    """Parse token ``j`` (``data[offsets[j]:offsets[j + 1]]``) into ``out[j % w, j // w]``.

    ``w`` is ``out.shape[0]``; a value of exactly -1 becomes NaN when ``minus_one_nan``. Tokens
    off the fast path are marked False in ``done`` (and left for the caller); returns their count.
    """
    width = out.shape[0]
    failures = 0
    j = 0
    for row in range(out.shape[1]):
        for field in range(width):
            lo = offsets[j]
            hi = offsets[j + 1]
            # the common case inline: an integer of at most 15 digits, maybe negative
            negative = hi > lo and data[lo] == _MINUS
            p = lo + negative
            whole = 0
            plain = 0 < hi - p <= 15
            while plain and p < hi:
                digit = int(data[p]) - _ZERO
                plain = 0 <= digit <= 9
                whole = whole * 10 + digit
                p += 1
            if plain:
                value = -float(whole) if negative else float(whole)
                done[j] = True
            else:
                value, ok = _parse_token(data, lo, hi, pow10)
                done[j] = ok
                failures += not ok
            if minus_one_nan and value == -1.0:
                value = np.nan
            out[field, row] = value
            j += 1
    return failures


# --- Python side -------------------------------------------------------------------------------


class Scan(NamedTuple):
    r"""The clean job lines of one piece of a file, as Arrow-ready buffers.

    Attributes
    ----------
    lines : int
        Lines in the piece.
    fast : numpy.ndarray
        Per line: whether it is a clean job line.
    starts, ends : numpy.ndarray
        Per line: its first byte and its end (the ``\\n`` left out), as offsets in the file.
    crlf : numpy.ndarray
        Per line: whether it ends in a CR (a CR LF line end, or a CR at the end of the file).
    values : pyarrow.StringArray
        The 18 tokens of every clean line, in order.
    ids : pyarrow.StringArray
        The first token (job number) of every clean line.
    """

    lines: int
    fast: Bools
    starts: I64
    ends: I64
    crlf: Bools
    values: Any
    ids: Any


def _pieces(buf: U8) -> Iterator[tuple[int, int]]:
    """Cut the content at line starts into pieces of at most :data:`_MAX_PIECE` bytes or so."""
    start = 0
    size = buf.size
    while size - start > _MAX_PIECE:
        newlines = np.flatnonzero(buf[start : start + _MAX_PIECE] == _LF)
        if len(newlines):
            cut = start + int(newlines[-1]) + 1
        else:  # one line longer than a piece: take it whole
            more = np.flatnonzero(buf[start + _MAX_PIECE :] == _LF)
            if not len(more):
                break
            cut = start + _MAX_PIECE + int(more[0]) + 1
        yield start, cut
        start = cut
    if start < size:
        yield start, size


def _trimmed(buffer: U8, used: int) -> U8:
    """Return ``buffer[:used]``, copied only when that frees more than half of the buffer."""
    return buffer[:used] if 2 * used >= buffer.size else buffer[:used].copy()


def scan_swf(data: bytes) -> list[Scan]:
    r"""Find the clean job lines of a file's content, piece by piece (see the module's text).

    Lines are split at ``\\n``; a final ``\\n`` does not start another line.

    Parameters
    ----------
    data : bytes
        The whole (decompressed) file.

    Returns
    -------
    list of Scan
        One per piece, in file order; their lines, concatenated, are the file's.
    """
    if not compile_kernel():  # pragma: no cover
        msg = "scan_swf needs numba"
        raise RuntimeError(msg)
    buf = np.frombuffer(data, dtype=np.uint8)
    scans: list[Scan] = []
    for lo, hi in _pieces(buf):
        piece = buf[lo:hi]
        bound = int(np.count_nonzero(piece == _LF)) + 1  # lines in the piece, at most
        fast = np.zeros(bound, dtype=np.bool_)
        starts = np.zeros(bound, dtype=np.int64)
        ends = np.zeros(bound, dtype=np.int64)
        values_off = np.zeros(bound * FIELDS + 1, dtype=np.int32)
        values = np.empty(hi - lo, dtype=np.uint8)
        ids_off = np.zeros(bound + 1, dtype=np.int32)
        ids = np.empty(hi - lo, dtype=np.uint8)
        lines, clean = _scan_piece(
            buf, lo, hi, fast, starts, ends, values_off, values, ids_off, ids
        )
        values_off = values_off[: clean * FIELDS + 1]
        ids_off = ids_off[: clean + 1]
        starts, ends = starts[:lines], ends[:lines]
        last = buf[np.maximum(ends - 1, 0)] if lines else np.zeros(0, dtype=np.uint8)
        scans.append(
            Scan(
                lines=lines,
                fast=fast[:lines],
                starts=starts,
                ends=ends,
                crlf=(ends > starts) & (last == _CR),
                # the data stays in its buffer unless that is mostly slack
                values=string_array(values_off, _trimmed(values, int(values_off[-1]))),
                ids=string_array(ids_off, ids[: ids_off[-1]].copy()),
            )
        )
    return scans


def _buffers(strings: Any) -> tuple[I32, U8]:
    """Return the offsets (``len + 1``, the array's own slice) and data of a string array."""
    buffers = strings.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[
        strings.offset : strings.offset + 1 + len(strings)
    ]
    data = (
        np.frombuffer(buffers[2], dtype=np.uint8)
        if buffers[2] is not None
        else np.zeros(0, np.uint8)
    )
    return offsets, data


def parse_numbers(strings: Any, *, width: int = 1, minus_one_nan: bool = False) -> F64:
    """Parse a string array of decimal numbers into floats, exactly as Arrow's cast does.

    Parameters
    ----------
    strings : pyarrow.StringArray
        Number tokens, no nulls; a multiple of ``width`` of them.
    width : int, default 1
        Tokens per row: token ``j`` goes to ``[j % width, j // width]`` of the result, so that
        each field of a row-major table of tokens comes out contiguous.
    minus_one_nan : bool, default False
        Whether a value of exactly -1 is returned as NaN (SWF's "unknown").

    Returns
    -------
    numpy.ndarray
        float64, shape ``(width, len(strings) // width)``.

    Raises
    ------
    pyarrow.ArrowInvalid
        If a token is not a number Arrow can cast.
    """
    rows = len(strings) // width
    if not compile_kernel() or strings.null_count:  # pragma: no cover
        flat = np.asarray(strings.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)
        if minus_one_nan:
            flat = np.where(flat == -1.0, np.nan, flat)
        return np.ascontiguousarray(flat.reshape(rows, width).T)
    offsets, data = _buffers(strings)
    out = np.empty((width, rows), dtype=np.float64)
    done = np.empty(len(strings), dtype=np.bool_)
    if _parse_tokens(data, offsets, out, done, _POW10, minus_one_nan):
        rest = np.flatnonzero(~done)
        cast = strings.take(pa.array(rest)).cast(pa.float64())
        values = np.asarray(cast.to_numpy(zero_copy_only=False), dtype=np.float64)
        if minus_one_nan:
            values = np.where(values == -1.0, np.nan, values)
        out[rest % width, rest // width] = values
    return out
