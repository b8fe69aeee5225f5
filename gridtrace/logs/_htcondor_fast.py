r"""HTCondor ``-jsonl`` lines: the compiled scanner behind :mod:`gridtrace.logs._htcondor`.

``condor_history -jsonl`` writes one job ad a line: a flat JSON object of string, number,
boolean and null values. :func:`scan_jsonl` walks a chunk's bytes once in a numba kernel,
recognises those lines and writes their keys and values straight into the buffers of Arrow
string arrays, in the reference's text form: strings unescaped, integers as written (``-0`` as
``0``), ``true``/``false``, null as null. Real numbers are written as they appear and listed,
for the caller to rewrite as ``json.dumps`` does (``1.50`` → ``1.5``), which needs Python's
shortest float repr.

It *declines* every other line: not a flat object on its own line, blanks around it other than
spaces and tabs, a nested value, ``NaN``/``Infinity``, a ``\u`` escape, a control character or
CR, a key seen twice in the ad (Python's ``dict`` keeps the last value at the first place), a
missing ``ClusterId`` or ``ProcId``, anything that is not strict JSON. Those go to the reference
in :mod:`gridtrace.logs._htcondor`, which holds the one definition of every row; a declined line
is always read right, only more slowly.

numba is needed for the speed; without it the reader uses the reference for every line.
"""

from __future__ import annotations

import functools
import importlib.util
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from gridtrace.logs._columnar import string_array
from gridtrace.logs._kernels import compile_functions

__all__ = [
    "HAVE_NUMBA",
    "NAMES",
    "SMALL_INPUT_LINES",
    "JsonlScan",
    "compile_kernel",
    "kernel_ready",
    "scan_jsonl",
]

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
"""Whether the compiled kernel is available."""

SMALL_INPUT_LINES = 2_000
"""A chunk of fewer lines is read by the reference until the kernel is loaded (no compile wait)."""

NAMES = ("ClusterId", "ProcId", "CompletionDate", "EnteredCurrentStatus")
"""The attributes whose value positions the kernel reports, in this order."""

U8 = npt.NDArray[np.uint8]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

_pa: Any = pa  # the stubs' from_buffers and py_buffer are narrower than their uses here
_MAX_CHUNK = (1 << 31) // 2  # keys and values, each at most the chunk, on 32-bit offsets

_LF, _TAB, _SPACE, _QUOTE, _BACKSLASH, _COMMA, _COLON, _MINUS, _PLUS, _DOT = (
    10,
    9,
    32,
    34,
    92,
    44,
    58,
    45,
    43,
    46,
)
_ZERO, _NINE, _OPEN, _CLOSE, _UPPER_E, _LOWER_E = 48, 57, 123, 125, 69, 101
_ESCAPED = np.zeros(256, dtype=np.uint8)  # what a backslash escape stands for (0: declined)
for _k, _v in zip(b'"\\/bfnrt', b'"\\/\b\f\n\r\t', strict=True):
    _ESCAPED[_k] = _v
_NAME_BYTES = np.frombuffer("".join(NAMES).encode(), dtype=np.uint8).copy()
_NAME_OFFSETS = np.cumsum([0] + [len(name) for name in NAMES]).astype(np.int64)
_LITERALS = np.frombuffer(b"truefalsenull", dtype=np.uint8).copy()

_KERNEL = ("_string", "_scan_chunk")
_ENTRY_POINTS = frozenset({"_scan_chunk"})


@functools.cache
def compile_kernel() -> bool:
    """Compile the kernel on first use (from numba's disk cache after the first run ever).

    Returns
    -------
    bool
        False when numba is not installed (the reader then uses the reference for every line).
    """
    if not HAVE_NUMBA:  # pragma: no cover
        return False
    compile_functions(globals(), _KERNEL, _ENTRY_POINTS)
    return True


def kernel_ready() -> bool:
    """Whether this process has compiled (or loaded) the kernel already."""
    return compile_kernel.cache_info().currsize > 0


# --- the kernel --------------------------------------------------------------------------------


def _string(buf: U8, p: int, e: int, out: U8, o: int) -> tuple[int, int]:
    r"""Decode the JSON string whose opening quote is at ``p`` into ``out`` from ``o``.

    Returns the position after the closing quote and the new end of ``out``; ``(-1, o)`` when
    the string is declined (not closed on the line, a ``\\u`` or unknown escape, a control byte).
    """
    q = p + 1
    while q < e:
        c = buf[q]
        if c == _QUOTE:
            return q + 1, o
        if c == _BACKSLASH:
            if q + 1 >= e or _ESCAPED[buf[q + 1]] == 0:
                return -1, o
            out[o] = _ESCAPED[buf[q + 1]]
            o += 1
            q += 2
            continue
        if c < _SPACE:
            return -1, o
        out[o] = c
        o += 1
        q += 1
    return -1, o


def _scan_chunk(
    buf: U8,
    fast: Bools,
    members: I64,
    where: I64,
    keys_off: I32,
    keys: U8,
    values_off: I32,
    values: U8,
    valid: Bools,
    real: Bools,
    hashes: I64,
    names: U8,
    name_off: I64,
    literals: U8,
) -> tuple[int, int, int]:
    r"""Scan the lines of ``buf`` (split at ``\n``; a final ``\n`` starts no line).

    Sets ``fast[i]`` for each line; for the k-th clean line, ``members[k]`` is its attribute
    count and ``where[k, j]`` the position (among all values) of the value of ``NAMES[j]``, -1
    when absent. Keys and values go to their buffers; ``valid`` is False for a null value,
    ``real`` True for a real number (written as it appears). ``hashes`` is scratch space.
    Returns the lines, the clean lines and the members written.
    """
    n = buf.size
    n_names = name_off.size - 1
    line = 0
    clean = 0
    m = 0  # members written
    ko = 0  # key bytes written
    vo = 0  # value bytes written
    keys_off[0] = 0
    values_off[0] = 0
    s = 0
    while s < n:
        e = s
        while e < n and buf[e] != _LF:
            e += 1
        m_line = m
        ko_line = ko
        vo_line = vo
        for j in range(n_names):
            where[clean, j] = -1
        p = s
        while p < e and (buf[p] == _SPACE or buf[p] == _TAB):
            p += 1
        ok = e < n and p < e and buf[p] == _OPEN
        p += 1
        first = True
        closed = False
        while ok:
            while p < e and (buf[p] == _SPACE or buf[p] == _TAB):
                p += 1
            if p >= e:
                ok = False
                break
            if buf[p] == _CLOSE:
                if not first:
                    ok = False  # a comma before the brace
                closed = True
                p += 1
                break
            if buf[p] != _QUOTE:
                ok = False
                break
            # the key
            k0 = ko
            p, ko = _string(buf, p, e, keys, ko)
            if p < 0:
                ok = False
                break
            h = np.int64(1469598103934665603)
            for k in range(k0, ko):
                h = (h ^ np.int64(keys[k])) * np.int64(1099511628211)
            for j in range(m_line, m):
                if hashes[j] == h:
                    ok = False  # a key seen twice (or a hash collision): the reference's
            if not ok:
                break
            hashes[m] = h
            for j in range(n_names):
                a = name_off[j]
                if name_off[j + 1] - a == ko - k0:
                    same = True
                    for k in range(ko - k0):
                        if keys[k0 + k] != names[a + k]:
                            same = False
                            break
                    if same:
                        where[clean, j] = m
            while p < e and (buf[p] == _SPACE or buf[p] == _TAB):
                p += 1
            if p >= e or buf[p] != _COLON:
                ok = False
                break
            p += 1
            while p < e and (buf[p] == _SPACE or buf[p] == _TAB):
                p += 1
            if p >= e:
                ok = False
                break
            # the value
            c = buf[p]
            valid[m] = True
            real[m] = False
            if c == _QUOTE:
                p, vo = _string(buf, p, e, values, vo)
                if p < 0:
                    ok = False
                    break
            elif c == _MINUS or (_ZERO <= c <= _NINE):
                a = p
                if c == _MINUS:
                    p += 1
                if p >= e or buf[p] < _ZERO or buf[p] > _NINE:
                    ok = False
                    break
                if buf[p] == _ZERO:
                    p += 1
                else:
                    while p < e and _ZERO <= buf[p] <= _NINE:
                        p += 1
                if p < e and buf[p] == _DOT:
                    real[m] = True
                    p += 1
                    digits = 0
                    while p < e and _ZERO <= buf[p] <= _NINE:
                        p += 1
                        digits += 1
                    if digits == 0:
                        ok = False
                        break
                if p < e and (buf[p] == _UPPER_E or buf[p] == _LOWER_E):
                    real[m] = True
                    p += 1
                    if p < e and (buf[p] == _PLUS or buf[p] == _MINUS):
                        p += 1
                    digits = 0
                    while p < e and _ZERO <= buf[p] <= _NINE:
                        p += 1
                        digits += 1
                    if digits == 0:
                        ok = False
                        break
                if not real[m] and p - a == 2 and buf[a] == _MINUS and buf[a + 1] == _ZERO:
                    a += 1  # -0 is written 0
                for k in range(a, p):
                    values[vo] = buf[k]
                    vo += 1
            else:
                # true, false or null
                a = 0 if c == 116 else 4 if c == 102 else 9 if c == 110 else -1  # t, f, n
                b = 4 if a == 0 else 9 if a == 4 else 13
                if a < 0 or p + b - a > e:
                    ok = False
                    break
                for k in range(b - a):
                    if buf[p + k] != literals[a + k]:
                        ok = False
                        break
                if not ok:
                    break
                if a == 9:
                    valid[m] = False
                else:
                    for k in range(a, b):
                        values[vo] = literals[k]
                        vo += 1
                p += b - a
            m += 1
            keys_off[m] = ko
            values_off[m] = vo
            first = False
            while p < e and (buf[p] == _SPACE or buf[p] == _TAB):
                p += 1
            if p < e and buf[p] == _COMMA:
                p += 1
                while p < e and (buf[p] == _SPACE or buf[p] == _TAB):
                    p += 1
                if p < e and buf[p] == _CLOSE:
                    ok = False  # a trailing comma
                continue
            if p < e and buf[p] == _CLOSE:
                closed = True
                p += 1
                break
            ok = False
        if ok:
            ok = closed
            while p < e and (buf[p] == _SPACE or buf[p] == _TAB):
                p += 1
            ok = ok and p == e and where[clean, 0] >= 0 and where[clean, 1] >= 0
        if ok:
            fast[line] = True
            members[clean] = m - m_line
            clean += 1
        else:
            fast[line] = False
            m = m_line
            ko = ko_line
            vo = vo_line
        line += 1
        s = e + 1
    return line, clean, m


# --- the Python side ---------------------------------------------------------------------------


class JsonlScan(NamedTuple):
    """The clean ad lines of a chunk, as :func:`scan_jsonl` found them.

    Attributes
    ----------
    lines : int
        Lines in the chunk.
    fast : numpy.ndarray of bool
        Per line: read by the kernel.
    members : numpy.ndarray of int64
        Per clean line: attributes.
    where : numpy.ndarray of int64, shape (clean lines, len(NAMES))
        Position among ``values`` of each of :data:`NAMES`, -1 when absent.
    keys, values : pyarrow.StringArray
        All attributes of the clean lines, one line after the other.
    real : numpy.ndarray of bool
        Per value: a real number, as written.
    """

    lines: int
    fast: Bools
    members: I64
    where: I64
    keys: Any
    values: Any
    real: Bools


def scan_jsonl(data: bytes) -> JsonlScan | None:
    """Find the clean ad lines of a chunk of valid UTF-8 (see the module's text).

    Returns
    -------
    JsonlScan or None
        None when numba is missing or the chunk is too large for 32-bit offsets.
    """
    if len(data) > _MAX_CHUNK or not compile_kernel():
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    size = buf.size
    bound = int(np.count_nonzero(buf == _LF)) + 1
    most = size // 4 + bound + 1  # an attribute takes "":0, at least 5 bytes with its comma
    fast = np.zeros(bound, dtype=np.bool_)
    members = np.zeros(bound, dtype=np.int64)
    where = np.empty((bound, len(NAMES)), dtype=np.int64)
    keys_off = np.empty(most + 1, dtype=np.int32)
    values_off = np.empty(most + 1, dtype=np.int32)
    keys = np.empty(size + 1, dtype=np.uint8)
    values = np.empty(size + 1, dtype=np.uint8)
    valid = np.empty(most, dtype=np.bool_)
    real = np.empty(most, dtype=np.bool_)
    hashes = np.empty(most, dtype=np.int64)
    lines, clean, m = _scan_chunk(
        buf,
        fast,
        members,
        where,
        keys_off,
        keys,
        values_off,
        values,
        valid,
        real,
        hashes,
        _NAME_BYTES,
        _NAME_OFFSETS,
        _LITERALS,
    )
    key_array = string_array(keys_off[: m + 1].copy(), keys[: keys_off[m]].copy())
    value_array = string_array(values_off[: m + 1].copy(), values[: values_off[m]].copy())
    mask = valid[:m]
    if not mask.all():
        value_array = _pa.StringArray.from_buffers(
            m, *value_array.buffers()[1:], _pa.py_buffer(np.packbits(mask, bitorder="little"))
        )
    return JsonlScan(
        lines=lines,
        fast=fast[:lines],
        members=members[:clean],
        where=where[:clean],
        keys=key_array,
        values=value_array,
        real=real[:m].copy(),
    )
