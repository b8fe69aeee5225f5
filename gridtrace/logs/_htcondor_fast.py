r"""HTCondor ``-jsonl`` lines and job attributes: the compiled kernels behind ``_htcondor``.

``condor_history -jsonl`` writes one job ad a line: a flat JSON object of string, number,
boolean and null values. :func:`scan_jsonl` walks a chunk's bytes once in a numba kernel,
recognises those lines and writes their keys and values straight into the buffers of Arrow
string arrays, in the reference's text form: strings unescaped, integers as written (``-0`` as
``0``), ``true``/``false``, null as null. A real number is kept as written when that is what
``json.dumps`` writes (at most 15 significant digits, no exponent, no trailing zero but in
``x.0``, from 1e-4 to below 1e16); the others are listed, for the caller to rewrite with
Python's shortest float repr (``1.50`` → ``1.5``, ``1e5`` → ``100000.0``).

The ads of a history share their layout: a line whose text from each value to the next key's
value is the previous clean line's has its keys, so they are compared, not decoded, and copied
in one block; a line of another layout is checked by a hash of each key (no key twice). A value
written as on the previous clean line (with the byte after it) is copied from that line's,
not decoded: most attributes of the ads of one history (paths, commands, requirements) repeat.

It *declines* every other line: not a flat object on its own line, blanks around it other than
spaces and tabs, a nested value, ``NaN``/``Infinity``, a ``\u`` escape, a control character or
CR, bytes that are not UTF-8, a key seen twice in the ad (Python's ``dict`` keeps the last value
at the first place), a missing ``ClusterId`` or ``ProcId``, anything that is not strict JSON.
Those go to the reference in :mod:`gridtrace.logs._htcondor`, which holds the one definition of
every row; a declined line is always read right, only more slowly.

:func:`job_values` finds the attributes a job is made of in the ``attrs`` maps (the layout of
the previous map reused when its keys are the same) and reads the numeric ones as floats
(exactly: digits below 2**53 over a power of ten up to 1e22), leaving any other form of number
to the caller's Arrow parsing.

For the records of the clean lines, :func:`ids_and_stamps` writes ``job_id_raw``, ``stamp`` and
its epoch straight from the value buffers. For the jobs, :func:`gather_texts` copies the text
attributes of every map in one pass (a map's values lie close together), and
:func:`shared_triples` finds, in one hashed pass, the ads whose ClusterId, ProcId and QDate
numbers meet: only those can share their job id, or be copies of each other, so only those are
compared by their text.

numba is needed for the speed; without it the reader uses the reference for every line.
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from gridtrace.logs._columnar import string_array
from gridtrace.logs._kernels import HAVE_NUMBA, LazyKernel

__all__ = [
    "HAVE_NUMBA",
    "NAMES",
    "SMALL_INPUT_LINES",
    "JobValues",
    "JsonlScan",
    "PrettyJoin",
    "compile_kernel",
    "gather_texts",
    "ids_and_stamps",
    "job_values",
    "join_pretty",
    "kernel_ready",
    "scan_jsonl",
    "shared_triples",
]


SMALL_INPUT_LINES = 2_000
"""A chunk of fewer lines is read by the reference until the kernel is loaded (no compile wait)."""

NAMES = ("ClusterId", "ProcId", "CompletionDate", "EnteredCurrentStatus")
"""The attributes whose value positions the kernel reports, in this order."""

U8 = npt.NDArray[np.uint8]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]
F64 = npt.NDArray[np.float64]
I8 = npt.NDArray[np.int8]
U64 = npt.NDArray[np.uint64]

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
_ONE = np.uint64(1)
_EIGHT = np.uint64(8)
_LOW_BITS = np.uint64(0x0101010101010101)  # one in each byte, for the bit tricks of _needs_look
_HIGH_BITS = np.uint64(0x8080808080808080)
_QUOTES = np.uint64(0x2222222222222222)
_BACKSLASHES = np.uint64(0x5C5C5C5C5C5C5C5C)
_SPACES = np.uint64(0x2020202020202020)
_EXPR = np.frombuffer(b"/Expr(", dtype=np.uint8).copy()
_TRUE = np.frombuffer(b"true", dtype=np.uint8).copy()
_EXACT = 1 << 53  # integers below are floats exactly
_INT64_MAX = np.iinfo(np.int64).max
_POWERS = np.array([10.0**k for k in range(23)], dtype=np.float64)  # exact as floats
_EMPTY = np.zeros(0, dtype=np.uint8)
_NONE = np.frombuffer(b"None", dtype=np.uint8).copy()

_KERNEL = (
    "_load8",
    "_store8",
    "_needs_look",
    "_same_bytes",
    "_string",
    "_copy",
    "_copy_words",
    "_copy_from",
    "_scan_chunk",
    "_equal_bytes",
    "_is_expression",
    "_job_values",
    "_epoch",
    "_ids_and_stamps",
    "_text_sizes",
    "_gather",
    "_shared_triples",
    "_is_separator",
    "_join_pretty",
)
_ENTRY_POINTS = frozenset(
    {
        "_scan_chunk",
        "_job_values",
        "_ids_and_stamps",
        "_text_sizes",
        "_gather",
        "_shared_triples",
        "_join_pretty",
    }
)
_LAZY = LazyKernel(globals(), _KERNEL, _ENTRY_POINTS)
compile_kernel = _LAZY.compile
kernel_ready = _LAZY.ready


# --- the kernel --------------------------------------------------------------------------------


def _load8(buf: U8, i: np.uint64) -> np.uint64:
    """Return the eight bytes of ``buf`` from ``i`` as one little-endian word.

    Written byte by byte, which the compiler turns into one load (numba has no unaligned view).
    """
    return (
        np.uint64(buf[i])
        | (np.uint64(buf[i + _ONE]) << np.uint64(8))
        | (np.uint64(buf[i + np.uint64(2)]) << np.uint64(16))
        | (np.uint64(buf[i + np.uint64(3)]) << np.uint64(24))
        | (np.uint64(buf[i + np.uint64(4)]) << np.uint64(32))
        | (np.uint64(buf[i + np.uint64(5)]) << np.uint64(40))
        | (np.uint64(buf[i + np.uint64(6)]) << np.uint64(48))
        | (np.uint64(buf[i + np.uint64(7)]) << np.uint64(56))
    )


def _store8(out: U8, i: np.uint64, word: np.uint64) -> None:
    """Write the eight bytes of ``word`` (little-endian) to ``out`` from ``i``."""
    for k in range(8):
        out[i + np.uint64(k)] = np.uint8((word >> np.uint64(8 * k)) & np.uint64(0xFF))


def _needs_look(word: np.uint64) -> bool:
    """Whether a byte of ``word`` is a quote, a backslash, below 0x20 or from 0x80.

    The bit tricks of "Bit Twiddling Hacks" (haszero, hasless): exact on whether any byte is
    one, which is all that is asked (the bytes are then looked at one by one).
    """
    quotes = word ^ _QUOTES
    backslashes = word ^ _BACKSLASHES
    flags = (
        ((quotes - _LOW_BITS) & ~quotes)
        | ((backslashes - _LOW_BITS) & ~backslashes)
        | ((word - _SPACES) & ~word)
        | word
    )
    return bool(flags & _HIGH_BITS)


def _same_bytes(buf: U8, a: np.uint64, b: np.uint64, length: np.uint64) -> bool:
    """Whether ``buf[a:a + length]`` and ``buf[b:b + length]`` hold the same bytes.

    Eight bytes at a time (the last word overlapping the one before), no early exit: the
    keys of a line are those of the line before but rarely.
    """
    if length < _EIGHT:
        for k in range(length):  # noqa: SIM110 - numba
            if buf[a + k] != buf[b + k]:
                return False
        return True
    diff = np.uint64(0)
    at = np.uint64(0)
    while at + _EIGHT < length:
        diff |= _load8(buf, a + at) ^ _load8(buf, b + at)
        at += _EIGHT
    at = length - _EIGHT
    diff |= _load8(buf, a + at) ^ _load8(buf, b + at)
    return bool(diff == np.uint64(0))


def _string(buf: U8, p: int, n: int, out: U8, o: int) -> tuple[int, int]:
    r"""Decode the JSON string whose opening quote is at ``p`` into ``out`` from ``o``.

    Returns the position after the closing quote and the new end of ``out``; ``(-1, o)`` when
    the string is declined (not closed on the line, a ``\\u`` or unknown escape, a control byte,
    bytes that are not UTF-8).
    """
    q = p + 1
    while q < n:
        # a run of plain bytes, on unsigned positions (no negative-index test per byte): eight
        # at a time while no byte of the word needs a look, then one at a time
        qu = np.uint64(q)
        ou = np.uint64(o)
        nu = np.uint64(n)
        while qu + _EIGHT <= nu:
            word = _load8(buf, qu)
            if _needs_look(word):
                break
            _store8(out, ou, word)
            ou += _EIGHT
            qu += _EIGHT
        while qu < nu:
            c = buf[qu]
            if c == _QUOTE or c == _BACKSLASH or c < _SPACE or c >= 0x80:  # noqa: SIM109 - numba
                break
            out[ou] = c
            ou += _ONE
            qu += _ONE
        q = int(np.int64(qu))
        o = int(np.int64(ou))
        if q >= n:
            break
        c = buf[q]
        if c == _QUOTE:
            return q + 1, o
        if c == _BACKSLASH:
            if q + 1 >= n or _ESCAPED[buf[q + 1]] == 0:
                return -1, o
            out[o] = _ESCAPED[buf[q + 1]]
            o += 1
            q += 2
            continue
        if c < _SPACE:
            return -1, o
        # one UTF-8 sequence, checked as Python's decoder does (no overlong form, no
        # surrogate, nothing above U+10FFFF)
        if 0xC2 <= c <= 0xDF:
            size = 2
            low, high = 0x80, 0xBF
        elif 0xE0 <= c <= 0xEF:
            size = 3
            low = 0xA0 if c == 0xE0 else 0x80
            high = 0x9F if c == 0xED else 0xBF
        elif 0xF0 <= c <= 0xF4:
            size = 4
            low = 0x90 if c == 0xF0 else 0x80
            high = 0x8F if c == 0xF4 else 0xBF
        else:
            return -1, o
        if q + size > n or buf[q + 1] < low or buf[q + 1] > high:
            return -1, o
        for k in range(2, size):
            if buf[q + k] < 0x80 or buf[q + k] > 0xBF:
                return -1, o
        for k in range(size):
            out[o + k] = buf[q + k]
        o += size
        q += size
    return -1, o


def _copy(data: U8, source: int, target: int, length: int) -> None:
    """Copy ``length`` bytes of ``data`` from ``source`` to ``target`` (the two do not overlap)."""
    su = np.uint64(source)
    tu = np.uint64(target)
    for k in range(np.uint64(length)):
        data[tu + k] = data[su + k]


def _copy_words(data: U8, source: int, target: int, length: int) -> None:
    """Copy ``length`` bytes of ``data`` from ``source`` to ``target``, from ``source + length``.

    Eight bytes at a time where ``data`` has room for the last word, which writes up to seven
    bytes past the copy (the next value overwrites them; the caller reports no byte past its
    end) and reads up to seven past the source (before ``target``, or written just now).
    """
    su = np.uint64(source)
    tu = np.uint64(target)
    lu = np.uint64(length)
    if tu + lu + _EIGHT > np.uint64(data.size):
        for k in range(lu):
            data[tu + k] = data[su + k]
        return
    at = np.uint64(0)
    while at < lu:
        _store8(data, tu + at, _load8(data, su + at))
        at += _EIGHT


def _copy_from(data: U8, source: int, out: U8, target: int, length: int) -> None:
    """Copy ``length`` bytes of ``data`` from ``source`` to ``out`` from ``target``."""
    su = np.uint64(source)
    tu = np.uint64(target)
    for k in range(np.uint64(length)):
        out[tu + k] = data[su + k]


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
    rewrite: Bools,
    seg_from: I32,
    seg_to: I32,
    table_line: I64,
    table_hash: I64,
    stamp0: int,
    names: U8,
    name_off: I64,
    literals: U8,
    val_to: I32,
) -> tuple[int, int, int]:
    r"""Scan the lines of ``buf`` (split at ``\n``; a final ``\n`` starts no line).

    Sets ``fast[i]`` for each line; for the k-th clean line, ``members[k]`` is its attribute
    count and ``where[k, j]`` the position (among all values) of the value of ``NAMES[j]``, -1
    when absent. Keys and values go to their buffers; ``valid`` is False for a null value,
    ``rewrite`` True for a real number that ``json.dumps`` writes otherwise than it is written.
    ``seg_from``/``seg_to``/``val_to`` hold, per member, where its key starts, its value is
    reached and its value ends; ``table_line`` and ``table_hash`` (a power of two long) are a
    hash table of the keys of a line, its entries stamped with ``stamp0`` + the line's number
    + 1 (stamps of earlier calls must be smaller).
    Returns the lines, the clean lines and the members written.

    A line holding the keys of the clean line before it, in the same order, has no key twice
    and the names where that line had them: the keys are compared as they are read. Other
    lines are checked once read, by a hash of each key. A member whose text from its key to
    the byte after its value is that line's has its value too, copied from that line's.
    """
    n = buf.size
    n_names = name_off.size - 1
    slots = table_line.size
    line = 0
    clean = 0
    m = 0  # members written
    ko = 0  # key bytes written
    vo = 0  # value bytes written
    keys_off[0] = 0
    values_off[0] = 0
    prev_m0 = 0  # the members of the last clean line: prev_m0 .. prev_m0 + prev_count
    prev_count = -1
    prev_where = np.full(n_names, -1, dtype=np.int64)  # relative to the line's first member
    line_where = np.full(n_names, -1, dtype=np.int64)
    s = 0
    while s < n:
        m_line = m
        ko_line = ko
        vo_line = vo
        same = True  # the keys so far are the last clean line's
        p = s
        while p < n and (buf[p] == _SPACE or buf[p] == _TAB):
            p += 1
        ok = p < n and buf[p] == _OPEN
        if ok:
            p += 1  # not past the line's end: a blank line ends where it starts
        first = True
        closed = False
        while ok:
            i = m - m_line
            copied = False
            if same and i < prev_count:
                # the key, the value and the byte after it as on the last clean line: the same
                # key and value (the byte after ends the value there), copied, not decoded
                pm = np.uint64(prev_m0 + i)
                mu = np.uint64(m)
                from_ = seg_from[pm]
                whole = val_to[pm] + 1 - from_
                if p + whole <= n and _same_bytes(
                    buf, np.uint64(p), np.uint64(from_), np.uint64(whole)
                ):
                    copied = True
                    length = seg_to[pm] - from_
                    seg_from[mu] = p
                    seg_to[mu] = p + length
                    p += whole - 1
                    ko += keys_off[pm + _ONE] - keys_off[pm]
                    a = values_off[pm]
                    b = values_off[pm + _ONE]
                    _copy_words(values, a, vo, b - a)
                    vo += b - a
                    valid[mu] = valid[pm]
                    rewrite[mu] = rewrite[pm]
            if same and not copied:
                if i < prev_count:
                    # the text from here to the value as on the last clean line: same key
                    from_ = seg_from[prev_m0 + i]
                    length = seg_to[prev_m0 + i] - from_
                    same = p + length <= n and _same_bytes(
                        buf, np.uint64(p), np.uint64(from_), np.uint64(length)
                    )
                else:
                    same = False
                if same:
                    seg_from[m] = p
                    p += length
                    seg_to[m] = p
                    ko += keys_off[prev_m0 + i + 1] - keys_off[prev_m0 + i]
                else:
                    # write the keys skipped so far, then read on key by key
                    _copy(keys, keys_off[prev_m0], ko_line, ko - ko_line)
            if not same:
                seg_from[m] = p
                while p < n and (buf[p] == _SPACE or buf[p] == _TAB):
                    p += 1
                if p >= n:
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
                p, ko = _string(buf, p, n, keys, ko)
                if p < 0:
                    ok = False
                    break
                while p < n and (buf[p] == _SPACE or buf[p] == _TAB):
                    p += 1
                if p >= n or buf[p] != _COLON:
                    ok = False
                    break
                p += 1
                seg_to[m] = p
            while not copied and p < n and (buf[p] == _SPACE or buf[p] == _TAB):
                p += 1
            if p >= n:
                ok = False
                break
            # the value
            c = buf[p]
            if copied:
                pass
            elif c == _QUOTE:
                valid[m] = True
                rewrite[m] = False
                p, vo = _string(buf, p, n, values, vo)
                if p < 0:
                    ok = False
                    break
            elif c == _MINUS or (_ZERO <= c <= _NINE):
                valid[m] = True
                rewrite[m] = False
                a = p
                if c == _MINUS:
                    p += 1
                if p >= n or buf[p] < _ZERO or buf[p] > _NINE:
                    ok = False
                    break
                i0 = p
                if buf[p] == _ZERO:
                    p += 1
                else:
                    while p < n and _ZERO <= buf[p] <= _NINE:
                        p += 1
                i1 = p
                is_real = False
                f0 = p
                f1 = p
                if p < n and buf[p] == _DOT:
                    is_real = True
                    p += 1
                    f0 = p
                    while p < n and _ZERO <= buf[p] <= _NINE:
                        p += 1
                    f1 = p
                    if f1 == f0:
                        ok = False
                        break
                if p < n and (buf[p] == _UPPER_E or buf[p] == _LOWER_E):
                    is_real = True
                    rewrite[m] = True  # json.dumps writes no exponent below 1e16
                    p += 1
                    if p < n and (buf[p] == _PLUS or buf[p] == _MINUS):
                        p += 1
                    digits = 0
                    while p < n and _ZERO <= buf[p] <= _NINE:
                        p += 1
                        digits += 1
                    if digits == 0:
                        ok = False
                        break
                elif is_real:
                    # written as repr writes it: at most 15 significant digits (so no shorter
                    # text gives the same float), no trailing zero but in "x.0", below 1e16
                    # and from 1e-4 (repr writes others with an exponent)
                    lead = -1
                    last = -1
                    for k in range(i0, f1):
                        d = buf[k]
                        if d != _DOT and d != _ZERO:
                            if lead < 0:
                                lead = k
                            last = k
                    sig = 0
                    if lead >= 0:
                        sig = last - lead + 1 - (1 if lead < i1 <= last else 0)
                    if (
                        sig > 15
                        or i1 - i0 > 16
                        or (f1 - f0 > 1 and buf[f1 - 1] == _ZERO)
                        or (lead >= f0 and lead - f0 >= 4)
                    ):
                        rewrite[m] = True
                if not is_real and p - a == 2 and buf[a] == _MINUS and buf[a + 1] == _ZERO:
                    a += 1  # -0 is written 0
                _copy_from(buf, a, values, vo, p - a)
                vo += p - a
            else:
                valid[m] = True
                rewrite[m] = False
                # true, false or null
                a = 0 if c == 116 else 4 if c == 102 else 9 if c == 110 else -1  # t, f, n
                b = 4 if a == 0 else 9 if a == 4 else 13
                if a < 0 or p + b - a > n:
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
            # unsigned positions from here: no negative-index test per access
            mu = np.uint64(m)
            val_to[mu] = p
            m += 1
            keys_off[mu + _ONE] = ko
            values_off[mu + _ONE] = vo
            first = False
            pu = np.uint64(p)
            nu = np.uint64(n)
            while pu < nu and (buf[pu] == _SPACE or buf[pu] == _TAB):
                pu += _ONE
            if pu < nu and buf[pu] == _COMMA:
                pu += _ONE
                while pu < nu and (buf[pu] == _SPACE or buf[pu] == _TAB):
                    pu += _ONE
                p = int(np.int64(pu))
                if pu < nu and buf[pu] == _CLOSE:
                    ok = False  # a trailing comma
                continue
            p = int(np.int64(pu))
            if p < n and buf[p] == _CLOSE:
                closed = True
                p += 1
                break
            ok = False
        if ok:
            while p < n and (buf[p] == _SPACE or buf[p] == _TAB):
                p += 1
            ok = closed and p < n and buf[p] == _LF
        count = m - m_line
        if ok and same:
            _copy(keys, keys_off[prev_m0], ko_line, ko - ko_line)
        if ok:
            if same and count == prev_count:
                for j in range(n_names):
                    line_where[j] = prev_where[j]
            else:
                # another layout: look for a key seen twice, and for the names, by hash
                ok = 2 * count <= slots
                stamp = stamp0 + line + 1
                for j in range(n_names):
                    line_where[j] = -1
                for i in range(count if ok else 0):
                    a = keys_off[m_line + i]
                    b = keys_off[m_line + i + 1]
                    h = np.int64(1469598103934665603)
                    for k in range(a, b):
                        h = (h ^ np.int64(keys[k])) * np.int64(1099511628211)
                    slot = h & (slots - 1)
                    while table_line[slot] == stamp:
                        if table_hash[slot] == h:
                            ok = False  # a key seen twice (or a hash collision): the reference's
                            break
                        slot = (slot + 1) & (slots - 1)
                    if not ok:
                        break
                    table_line[slot] = stamp
                    table_hash[slot] = h
                    for j in range(n_names):
                        c0 = name_off[j]
                        if name_off[j + 1] - c0 == b - a:
                            equal = True
                            for k in range(b - a):
                                if keys[a + k] != names[c0 + k]:
                                    equal = False
                                    break
                            if equal:
                                line_where[j] = i
            ok = ok and line_where[0] >= 0 and line_where[1] >= 0
        if ok:
            fast[line] = True
            members[clean] = count
            for j in range(n_names):
                prev_where[j] = line_where[j]
                where[clean, j] = m_line + line_where[j] if line_where[j] >= 0 else -1
            prev_m0 = m_line
            prev_count = count
            clean += 1
        else:
            fast[line] = False
            m = m_line
            ko = ko_line
            vo = vo_line
            if p < s:
                p = s  # a string declined: p was set to -1
        while p < n and buf[p] != _LF:
            p += 1
        line += 1
        s = p + 1
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
    rewrite : numpy.ndarray of bool
        Per value: a real number that ``json.dumps`` writes otherwise (``1.50``, ``1e5``),
        as written in the file.
    voff, vdata, valid : numpy.ndarray
        The offsets, bytes and validity of ``values`` (for :func:`ids_and_stamps`).
    """

    lines: int
    fast: Bools
    members: I64
    where: I64
    keys: Any
    values: Any
    rewrite: Bools
    voff: I32 | None = None
    vdata: U8 | None = None
    valid: Bools | None = None


_TABLE_SLOTS = 4096  # a line of more than half as many attributes goes to the reference
_KEEP_SCRATCH = 1 << 24  # scratch space for chunks up to this size is kept for the next chunk


class _Scratch:
    """The kernel's working arrays for chunks of up to ``size`` bytes.

    Kept per thread between chunks: fresh memory costs a page fault per 4 KiB written, as much
    as the scan itself. The kernel writes every entry it reports, so none is cleared.
    """

    def __init__(self, size: int) -> None:
        lines = size + 1  # a line takes at least its \n, but for the last
        ads = size // 16 + 1  # a clean ad line takes at least {"ClusterId":0,"ProcId":0}\n
        most = size // 4 + 1  # an attribute takes "":0, at least 5 bytes with its comma
        self.size = size
        self.fast = np.empty(lines, dtype=np.bool_)
        self.members = np.empty(ads, dtype=np.int64)
        self.where = np.empty((ads, len(NAMES)), dtype=np.int64)
        self.keys_off = np.empty(most + 1, dtype=np.int32)
        self.values_off = np.empty(most + 1, dtype=np.int32)
        self.keys = np.empty(size + 1, dtype=np.uint8)
        self.values = np.empty(size + 1, dtype=np.uint8)
        self.valid = np.empty(most, dtype=np.bool_)
        self.rewrite = np.empty(most, dtype=np.bool_)
        self.seg_from = np.empty(most, dtype=np.int32)
        self.seg_to = np.empty(most, dtype=np.int32)
        self.val_to = np.empty(most, dtype=np.int32)
        self.table_line = np.zeros(_TABLE_SLOTS, dtype=np.int64)
        self.table_hash = np.zeros(_TABLE_SLOTS, dtype=np.int64)
        self.stamp = 0  # lines scanned with this table: a stamp per line, never reused


_local = threading.local()


def _scratch(size: int) -> _Scratch:
    kept: _Scratch | None = getattr(_local, "scratch", None)
    if kept is not None and kept.size >= size:
        return kept
    if size > _KEEP_SCRATCH:
        return _Scratch(size)
    scratch = _Scratch(size + size // 4)  # room for the carried lines of the next chunks
    _local.scratch = scratch
    return scratch


def scan_jsonl(data: bytes) -> JsonlScan | None:
    """Find the clean ad lines of a chunk (see the module's text).

    Returns
    -------
    JsonlScan or None
        None when numba is missing or the chunk is too large for 32-bit offsets.
    """
    if len(data) > _MAX_CHUNK or not compile_kernel():
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    work = _scratch(buf.size)
    keys_off, values_off, keys, values = work.keys_off, work.values_off, work.keys, work.values
    lines, clean, m = _scan_chunk(
        buf,
        work.fast,
        work.members,
        work.where,
        keys_off,
        keys,
        values_off,
        values,
        work.valid,
        work.rewrite,
        work.seg_from,
        work.seg_to,
        work.table_line,
        work.table_hash,
        work.stamp,
        _NAME_BYTES,
        _NAME_OFFSETS,
        _LITERALS,
        work.val_to,
    )
    work.stamp += lines
    key_array = string_array(keys_off[: m + 1].copy(), keys[: keys_off[m]].copy())
    voff = values_off[: m + 1].copy()
    vdata = values[: values_off[m]].copy()
    value_array = string_array(voff, vdata)
    mask = work.valid[:m].copy()
    if not mask.all():
        value_array = _pa.StringArray.from_buffers(
            m, *value_array.buffers()[1:], _pa.py_buffer(np.packbits(mask, bitorder="little"))
        )
    return JsonlScan(
        lines=lines,
        fast=work.fast[:lines].copy(),
        members=work.members[:clean].copy(),
        where=work.where[:clean].copy(),
        keys=key_array,
        values=value_array,
        rewrite=work.rewrite[:m].copy(),
        voff=voff,
        vdata=vdata,
        valid=mask,
    )


def _epoch(vdata: U8, a: int, b: int) -> int:
    """Return the stamp ``vdata[a:b]`` as an epoch, -1 unless digits up to the largest int64."""
    if a >= b:
        return -1
    while a < b - 1 and vdata[a] == _ZERO:
        a += 1
    if b - a > 19:
        return -1
    value = 0
    for k in range(a, b):
        d = vdata[k]
        if d < _ZERO or d > _NINE:
            return -1
        if b - a == 19 and value > (_INT64_MAX - (d - _ZERO)) // 10:
            return -1
        value = value * 10 + (d - _ZERO)
    return value


def _ids_and_stamps(
    voff: I32, vdata: U8, valid: Bools, where: I64
) -> tuple[I32, U8, I32, U8, Bools, I64]:
    """Write each clean line's job id and stamp as string arrays (offsets, bytes, stamp valid).

    The id is ``ClusterId.ProcId`` (``None`` for a null value); the stamp CompletionDate unless
    it is null, absent or ``0``, else EnteredCurrentStatus (null when that is null or absent).
    The last array is the stamp as an epoch, -1 where it is not digits up to the largest int64.
    """
    n = where.shape[0]
    id_off = np.empty(n + 1, dtype=np.int32)
    stamp_off = np.empty(n + 1, dtype=np.int32)
    stamp_valid = np.empty(n, dtype=np.bool_)
    epochs = np.full(n, -1, dtype=np.int64)
    id_size = 0
    stamp_size = 0
    for k in range(n):
        for j in range(2):
            c = where[k, j]
            id_size += voff[c + 1] - voff[c] if valid[c] else 4
        id_size += 1
        c = where[k, 2]
        if c < 0 or not valid[c] or (voff[c + 1] - voff[c] == 1 and vdata[voff[c]] == _ZERO):
            c = where[k, 3]
        if c >= 0 and valid[c]:
            stamp_size += voff[c + 1] - voff[c]
    ids = np.empty(id_size, dtype=np.uint8)
    stamps = np.empty(stamp_size, dtype=np.uint8)
    o = 0
    t = 0
    id_off[0] = 0
    stamp_off[0] = 0
    for k in range(n):
        for j in range(2):
            if j == 1:
                ids[o] = _DOT
                o += 1
            c = where[k, j]
            if valid[c]:
                for b in range(voff[c], voff[c + 1]):
                    ids[o] = vdata[b]
                    o += 1
            else:
                for b in range(4):
                    ids[o] = _NONE[b]
                    o += 1
        id_off[k + 1] = o
        c = where[k, 2]
        if c < 0 or not valid[c] or (voff[c + 1] - voff[c] == 1 and vdata[voff[c]] == _ZERO):
            c = where[k, 3]
        stamp_valid[k] = c >= 0 and valid[c]
        if stamp_valid[k]:
            for b in range(voff[c], voff[c + 1]):
                stamps[t] = vdata[b]
                t += 1
            epochs[k] = _epoch(vdata, voff[c], voff[c + 1])
        stamp_off[k + 1] = t
    return id_off, ids, stamp_off, stamps, stamp_valid, epochs


def ids_and_stamps(scan: JsonlScan) -> tuple[Any, Any, Any]:
    """Return the job ids, stamps and stamp epochs of the clean lines of ``scan``.

    ``job_id_raw`` is ``ClusterId.ProcId`` (``None`` for a null), the stamp CompletionDate
    unless null, absent or ``0``, else EnteredCurrentStatus; values as the kernel wrote them
    (the caller rewrites no real number among them: see ``JsonlScan.rewrite``). The epochs
    (``timestamp[s, UTC]``) are null where the stamp is not digits up to the largest int64.
    """
    if scan.valid is None or scan.voff is None or scan.vdata is None:
        msg = "the scan kept no value buffers"
        raise ValueError(msg)
    id_off, ids, stamp_off, stamps, stamp_valid, epochs = _ids_and_stamps(
        scan.voff, scan.vdata, scan.valid, scan.where
    )
    nulls = len(stamp_valid) - int(np.count_nonzero(stamp_valid))
    bitmap = _pa.py_buffer(np.packbits(stamp_valid, bitorder="little")) if nulls else None
    stamp_array = _pa.StringArray.from_buffers(
        len(stamp_valid), _pa.py_buffer(stamp_off), _pa.py_buffer(stamps), bitmap, nulls
    )
    epoch_array = _pa.array(epochs, pa.timestamp("s", tz="UTC"), mask=epochs < 0)
    return string_array(id_off, ids), stamp_array, epoch_array


# --- pretty -json: each ad over many lines, joined into one --------------------------------------


def _is_separator(c: np.uint8) -> bool:
    """Whether ``c`` is what the reference skips between ads on a line (blank, ``,``, ``[``, ``]``).

    Only spaces and tabs count as blanks here (a CR, a form feed: the chunk is declined).
    """
    return bool(c == _SPACE or c == _TAB or c == _COMMA or c == 91 or c == 93)  # noqa: SIM109 - numba


def _join_pretty(
    buf: U8, out: U8, first: I64, last: I64, row: I64, final: bool
) -> tuple[int, int, int, int, bool]:
    r"""Copy ``buf`` to ``out`` with each ad spread over lines written on one line.

    An ad starts on a line holding separators (:func:`_is_separator`) then ``{``; it ends on the
    first line from there whose last byte but separators is ``}``. Its inner line ends become
    tabs (JSON blank space, which :func:`_scan_chunk` declines inside a string, as the
    reference declines a line end there), the separators before its ``{`` and after its ``}``
    spaces. The other lines must hold separators only (``SEP`` rows).
    For the k-th ad, ``first[k]``/``last[k]`` are its lines and ``row[k]`` its line in ``out``.
    Returns the lines, the ads, the byte and line where an ad left open at the end starts
    (the end when none), and False when the chunk is declined: a line that is neither, or
    (``final``) an ad still open at the end.
    """
    n = buf.size
    line = 0
    ads = 0
    rows = 0
    inside = False
    open_at = n
    s = 0
    while s < n:
        e = s
        while e < n and buf[e] != _LF:
            e += 1
        p = s
        if not inside:
            while p < e and _is_separator(buf[p]):
                out[p] = _SPACE
                p += 1
            if p == e:
                if e < n:
                    out[e] = _LF
                line += 1
                rows += 1
                s = e + 1
                continue
            if buf[p] != _OPEN:
                return line, ads, n, line, False
            inside = True
            open_at = s
            first[ads] = line
            row[ads] = rows
        for k in range(p, e):
            out[k] = buf[k]
        q = e
        while q > p and _is_separator(buf[q - 1]):
            q -= 1
        if q > p and buf[q - 1] == _CLOSE:
            for k in range(q, e):
                out[k] = _SPACE
            last[ads] = line
            ads += 1
            rows += 1
            inside = False
            if e < n:
                out[e] = _LF
        elif e < n:
            out[e] = _TAB
        line += 1
        s = e + 1
    if inside:
        if final:
            return line, ads, n, line, False
        return line, ads, open_at, first[ads], True
    return line, ads, n, line, True


class PrettyJoin(NamedTuple):
    """The ads of a pretty ``-json`` chunk, each joined onto one line (see :func:`join_pretty`).

    Attributes
    ----------
    data : bytes
        The chunk's bytes up to ``taken`` lines, each ad on one line (:func:`scan_jsonl` input).
    taken : int
        Lines of the chunk before the ad left open at its end (all of them when none).
    first, last : numpy.ndarray of int64
        Per ad, its first and last line in the chunk (0-based).
    row : numpy.ndarray of int64
        Per ad, its line in ``data``.
    """

    data: bytes
    taken: int
    first: I64
    last: I64
    row: I64


def join_pretty(data: bytes, *, final: bool) -> PrettyJoin | None:
    """Write each ad of a pretty ``-json`` chunk on one line, for :func:`scan_jsonl`.

    Returns
    -------
    PrettyJoin or None
        None when numba is missing, or the chunk holds a line that is neither part of an ad
        nor separators only, or (``final``) ends inside an ad: the reference reads it.
    """
    if len(data) > _MAX_CHUNK or not compile_kernel():
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    out = np.empty(buf.size, dtype=np.uint8)
    most = data.count(b"\n") + 1  # an ad takes a line at least
    first = np.empty(most, dtype=np.int64)
    last = np.empty(most, dtype=np.int64)
    row = np.empty(most, dtype=np.int64)
    lines, ads, end, taken, ok = _join_pretty(buf, out, first, last, row, final)
    if not ok:
        return None
    del lines
    return PrettyJoin(out[:end].tobytes(), taken, first[:ads], last[:ads], row[:ads])


# --- the attributes a job is made of -------------------------------------------------------------


def _equal_bytes(data: U8, a: int, b: int, length: int) -> bool:
    """Whether ``data[a:a + length]`` and ``data[b:b + length]`` hold the same bytes.

    No early exit: the loop is one the compiler vectorises (the bytes are equal but rarely).
    """
    au = np.uint64(a)
    bu = np.uint64(b)
    diff = np.uint8(0)
    for ku in range(np.uint64(length)):
        diff |= data[au + ku] ^ data[bu + ku]
    return bool(diff == 0)


def _is_expression(vdata: U8, a: int, b: int) -> bool:
    """Whether ``vdata[a:b]`` starts as an unevaluated expression does (``/Expr(``)."""
    k = 0
    while k < 6 and a + k < b and vdata[a + k] == _EXPR[k]:
        k += 1
    return k == 6


def _job_values(
    koff: I32,
    kdata: U8,
    voff: I32,
    vdata: U8,
    vbits: U8,
    vbit0: int,
    starts: I64,
    ends: I64,
    rows_valid: Bools,
    noff: I64,
    ndata: U8,
    n_numeric: int,
    powers: F64,
    pos: I64,
    kinds: I8,
    numbers: F64,
    expression: Bools,
    unreadable: Bools,
    slow: Bools,
    n_plain: int,
    plain: Bools,
) -> None:
    """Find the wanted keys in every map and read the first ``n_numeric`` of them as numbers.

    ``pos[j, row]`` is the child position of the first entry of name ``j`` (-1 where absent),
    ``kinds[j, row]`` 0 where it is absent or null, 2 where it is ``true``, 1 otherwise;
    ``numbers[j, row]`` its value as a float (NaN where null, absent or not a number),
    ``expression`` and ``unreadable`` the rows where a number is ``/Expr(...`` or other text.
    A value this kernel does not read for sure (an exponent, more than 15 digits, a leading
    ``+`` or ``.``, a digit followed by other text) sets ``slow[j]``: the caller reads that
    name's column again its own way. ``vbits`` (from bit ``vbit0``) is the values' validity
    bitmap, empty when none is null. A map with the keys of the map before it, in the same
    order, has them at the same places (one comparison of the key bytes).
    ``plain[row]`` says whether the first ``n_plain`` names all hold an integer written plainly
    (digits, perhaps after a ``-``).

    A numeric value written as the same name's in the row before is not read again: its number
    and what it sets (``expression``, ``unreadable``) are that row's.
    """
    n = starts.size
    m = noff.size - 1
    rel = np.full(m, -1, dtype=np.int64)
    # per numeric name, the last value read: where, how long, its number, what it set
    # (0 nothing, 1 expression, 2 unreadable)
    last_at = np.zeros(n_numeric, dtype=np.int64)
    last_size = np.full(n_numeric, -1, dtype=np.int64)
    last_number = np.full(n_numeric, np.nan, dtype=np.float64)
    last_set = np.zeros(n_numeric, dtype=np.int8)
    prev_start = 0
    prev_count = -1
    for row in range(n):
        start = starts[row]
        count = ends[row] - start
        if not rows_valid[row] or count <= 0:
            for j in range(m):
                pos[j, row] = -1
                kinds[j, row] = 0
            for j in range(n_numeric):
                numbers[j, row] = np.nan
            plain[row] = n_plain == 0
            continue
        same = count == prev_count
        if same:
            a0 = koff[prev_start]
            b0 = koff[start]
            if koff[start + count] - b0 != koff[prev_start + count] - a0:
                same = False
            else:
                # no early exit: a loop the compiler vectorises (the keys are the same but rarely)
                moved = 0
                for i in range(1, count):
                    moved |= (koff[prev_start + i] - a0) ^ (koff[start + i] - b0)
                same = moved == 0
            if same:
                same = _equal_bytes(kdata, a0, b0, koff[start + count] - b0)
        if not same:
            for j in range(m):
                rel[j] = -1
            for child in range(start, start + count):
                a = koff[child]
                length = koff[child + 1] - a
                for j in range(m):
                    if rel[j] >= 0 or noff[j + 1] - noff[j] != length:
                        continue
                    equal = True
                    c0 = noff[j]
                    for k in range(length):
                        if kdata[a + k] != ndata[c0 + k]:
                            equal = False
                            break
                    if equal:
                        rel[j] = child - start
            prev_start = start
            prev_count = count
        else:
            prev_start = start
        # unsigned positions below: no negative-index test per array access
        ru = np.uint64(row)
        for j in range(m):
            ju = np.uint64(j)
            c = start + rel[ju] if rel[ju] >= 0 else -1
            pos[ju, ru] = c
            kind = 0
            if c >= 0:
                cu = np.uint64(c)
                kind = 1
                if vbits.size:
                    bit = vbit0 + c
                    if (vbits[bit >> 3] >> (bit & 7)) & 1 == 0:
                        kind = 0  # null
                if kind and voff[cu + _ONE] - voff[cu] == 4:
                    au = np.uint64(voff[cu])
                    if (
                        vdata[au] == _TRUE[0]
                        and vdata[au + _ONE] == _TRUE[1]
                        and vdata[au + np.uint64(2)] == _TRUE[2]
                        and vdata[au + np.uint64(3)] == _TRUE[3]
                    ):
                        kind = 2
            kinds[ju, ru] = kind
        is_plain = True
        for j in range(n_plain):
            c = pos[j, row]
            if kinds[j, row] == 0:
                is_plain = False
                break
            a = voff[c]
            b = voff[c + 1]
            if a < b and vdata[a] == _MINUS:
                a += 1
            if a >= b:
                is_plain = False
                break
            for k in range(a, b):
                if vdata[k] < _ZERO or vdata[k] > _NINE:
                    is_plain = False
                    break
            if not is_plain:
                break
        plain[row] = is_plain
        for j in range(n_numeric):
            ju = np.uint64(j)
            numbers[ju, ru] = np.nan
            if kinds[ju, ru] == 0:
                continue
            cu = np.uint64(pos[ju, ru])
            a = voff[cu]
            b = voff[cu + _ONE]
            if a == b:
                continue
            if b - a == last_size[ju] and _equal_bytes(vdata, last_at[ju], a, b - a):
                numbers[ju, ru] = last_number[ju]
                if last_set[ju] == 1:
                    expression[ru] = True
                elif last_set[ju] == 2:
                    unreadable[ru] = True
                continue
            last_at[ju] = a
            last_size[ju] = b - a
            last_number[ju] = np.nan
            last_set[ju] = 0
            first = vdata[np.uint64(a)]
            if first == _MINUS or (_ZERO <= first <= _NINE):
                p = a + 1 if first == _MINUS else a
                mantissa = np.int64(0)
                scale = 0
                digits = 0
                fraction = False
                ok = p < b
                while p < b and ok:
                    d = vdata[np.uint64(p)]
                    if _ZERO <= d <= _NINE:
                        mantissa = mantissa * 10 + (d - _ZERO)
                        if mantissa >= _EXACT:
                            ok = False
                        if fraction:
                            scale += 1
                        digits += 1
                    elif d == _DOT and not fraction and digits > 0:
                        fraction = True
                        digits = 0
                    else:
                        ok = False
                    p += 1
                if not ok or digits == 0 or scale > 22:
                    slow[j] = True
                    continue
                value = np.float64(mantissa) / powers[scale]
                numbers[j, row] = -value if first == _MINUS else value
                last_number[j] = numbers[j, row]
            elif first == _PLUS or first == _DOT:  # noqa: SIM109 - numba
                slow[j] = True
            elif _is_expression(vdata, a, b):
                expression[row] = True
                last_set[j] = 1
            elif not (
                b - a == 4
                and vdata[a] == 110
                and vdata[a + 1] == 117
                and vdata[a + 2] == 108
                and vdata[a + 3] == 108
            ):
                unreadable[row] = True  # not "null"
                last_set[j] = 2


def job_values(attrs: Any, names: list[str], n_numeric: int, n_plain: int = 0) -> JobValues | None:
    """Find ``names`` in the maps of one ``attrs`` chunk; read the first ``n_numeric`` as numbers.

    Parameters
    ----------
    attrs : pyarrow.MapArray
        A map<string, string> array in one chunk (a slice is fine).
    names : list of str
        The keys wanted, the numeric ones first.
    n_numeric : int
        How many of ``names`` are numbers.
    n_plain : int, default 0
        How many of the first ``names`` must be plain integers for a row's ``plain`` to be True.

    Returns
    -------
    JobValues or None
        None when numba is missing.
    """
    if not compile_kernel():  # pragma: no cover
        return None
    n = len(attrs)
    keys = attrs.keys
    items = attrs.items
    _, koffsets, kbytes = keys.buffers()[:3]
    koff = np.frombuffer(koffsets, dtype=np.int32)[keys.offset : keys.offset + len(keys) + 1]
    kdata = np.frombuffer(kbytes, dtype=np.uint8) if kbytes is not None else _EMPTY
    vbitmap, voffsets, vbytes = items.buffers()[:3]
    voff = np.frombuffer(voffsets, dtype=np.int32)[items.offset : items.offset + len(items) + 1]
    vdata = np.frombuffer(vbytes, dtype=np.uint8) if vbytes is not None else _EMPTY
    vbits = np.frombuffer(vbitmap, dtype=np.uint8) if vbitmap is not None else _EMPTY
    offsets = np.asarray(attrs.offsets, dtype=np.int64)
    encoded = [name.encode() for name in names]
    noff = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=noff[1:])
    ndata = np.frombuffer(b"".join(encoded) or b"\0", dtype=np.uint8)
    pos = np.empty((len(names), n), dtype=np.int64)
    kinds = np.empty((len(names), n), dtype=np.int8)
    numbers = np.empty((n_numeric, n), dtype=np.float64)
    expression = np.zeros(n, dtype=np.bool_)
    unreadable = np.zeros(n, dtype=np.bool_)
    slow = np.zeros(n_numeric, dtype=np.bool_)
    plain = np.empty(n, dtype=np.bool_)
    _job_values(
        koff,
        kdata,
        voff,
        vdata,
        vbits,
        items.offset,
        offsets[:-1],
        offsets[1:],
        np.asarray(attrs.is_valid(), dtype=np.bool_),
        noff,
        ndata,
        n_numeric,
        _POWERS,
        pos,
        kinds,
        numbers,
        expression,
        unreadable,
        slow,
        n_plain,
        plain,
    )
    return JobValues(pos, kinds, numbers, expression, unreadable, slow, plain)


class JobValues(NamedTuple):
    """What :func:`job_values` read.

    Attributes
    ----------
    pos : numpy.ndarray of int64, shape (names, rows)
        Child position of each name's entry, -1 where absent.
    kinds : numpy.ndarray of int8, shape (names, rows)
        0 where the value is absent or null, 2 where it is ``true``, 1 otherwise.
    numbers : numpy.ndarray of float64, shape (numeric names, rows)
        The numbers (NaN where null, absent or not a number).
    expression, unreadable : numpy.ndarray of bool
        Per row: a numeric name's value is ``/Expr(...``, or other text.
    slow : numpy.ndarray of bool
        Per numeric name: some value was left for the caller to read.
    plain : numpy.ndarray of bool
        Per row: the first ``n_plain`` names hold integers written plainly (``-?[0-9]+``).
    """

    pos: I64
    kinds: I8
    numbers: F64
    expression: Bools
    unreadable: Bools
    slow: Bools
    plain: Bools


# --- text columns and shared keys ----------------------------------------------------------------


def _text_sizes(voff: I32, pos: I64, kinds: I8, sel: I64, sizes: I64) -> None:
    """Add to ``sizes[k]`` the bytes of the values of name ``sel[k]`` (where not absent/null)."""
    for k in range(sel.size):
        j = sel[k]
        total = 0
        for row in range(pos.shape[1]):
            if kinds[j, row] != 0:
                total += voff[pos[j, row] + 1] - voff[pos[j, row]]
        sizes[k] += total


def _gather(
    voff: I32, vdata: U8, pos: I64, kinds: I8, sel: I64, out_off: I64, out: U8, row0: int
) -> None:
    """Copy the values of the names ``sel`` to ``out``, row by row (a row's values lie close).

    Name ``sel[k]`` of row ``row0 + i`` goes to ``out`` from ``out_off[k, row0 + i]``; its end
    is written to ``out_off[k, row0 + i + 1]`` (no bytes where absent or null). Bytes go eight
    at a time where ``vdata`` has them: up to seven bytes past a value are written, which the
    next value of the name overwrites (the caller leaves eight spare bytes after each name's).
    """
    size = np.uint64(vdata.size)
    for i in range(pos.shape[1]):
        for k in range(sel.size):
            j = sel[k]
            o = out_off[k, row0 + i]
            if kinds[j, i] != 0:
                a = voff[pos[j, i]]
                length = voff[pos[j, i] + 1] - a
                au = np.uint64(a)
                ou = np.uint64(o)
                lu = np.uint64(length)
                if au + lu + _EIGHT <= size:
                    at = np.uint64(0)
                    while at < lu:
                        _store8(out, ou + at, _load8(vdata, au + at))
                        at += _EIGHT
                else:
                    for b in range(lu):
                        out[ou + b] = vdata[au + b]
                o += length
            out_off[k, row0 + i + 1] = o


def gather_texts(chunks: list[Any], found: list[JobValues], names: list[int]) -> list[Any] | None:
    """Return the values of the names ``names`` in the maps of ``chunks``, null where absent.

    One string array per name: the same as taking ``found[k].pos[j]`` (masked where absent)
    from each chunk's items and concatenating. None when numba is missing or a name's bytes
    would not fit 32-bit offsets.
    """
    if not compile_kernel():  # pragma: no cover
        return None
    n = sum(len(f.plain) for f in found)
    sel = np.asarray(names, dtype=np.int64)
    views = []
    sizes = np.zeros(len(sel), dtype=np.int64)
    for chunk, f in zip(chunks, found, strict=True):
        items = chunk.items
        _, voffsets, vbytes = items.buffers()[:3]
        voff = np.frombuffer(voffsets, dtype=np.int32)[items.offset : items.offset + len(items) + 1]
        vdata = np.frombuffer(vbytes, dtype=np.uint8) if vbytes is not None else _EMPTY
        _text_sizes(voff, f.pos, f.kinds, sel, sizes)
        views.append((voff, vdata))
    if len(sel) and int(sizes.max()) >= 1 << 31:
        return None
    base = np.zeros(len(sel) + 1, dtype=np.int64)
    np.cumsum(sizes + 8, out=base[1:])  # eight spare bytes after each name's (see _gather)
    out_off = np.empty((len(sel), n + 1), dtype=np.int64)
    out_off[:, 0] = base[:-1]
    out = np.empty(max(int(base[-1]), 1), dtype=np.uint8)
    row0 = 0
    for (voff, vdata), f in zip(views, found, strict=True):
        _gather(voff, vdata, f.pos, f.kinds, sel, out_off, out, row0)
        row0 += f.pos.shape[1]
    arrays = []
    for k, j in enumerate(names):
        valid = np.concatenate([f.kinds[j] != 0 for f in found]) if found else np.zeros(0, bool)
        nulls = n - int(np.count_nonzero(valid))
        bitmap = _pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
        offsets = (out_off[k] - base[k]).astype(np.int32)
        data = out[base[k] : base[k] + sizes[k]]
        arrays.append(
            _pa.StringArray.from_buffers(
                n, _pa.py_buffer(offsets), _pa.py_buffer(data), bitmap, nulls
            )
        )
    return arrays


def _shared_triples(x: U64, y: U64, z: U64, among: Bools, table: I64, out: Bools) -> None:
    """Set ``out`` on the rows of ``among`` whose ``(x, y, z)`` another row of ``among`` has.

    ``table`` (a power of two long, more than the rows) is filled with -1.
    """
    slots = table.size
    for row in range(x.size):
        if not among[row]:
            continue
        kx = x[row]
        ky = y[row]
        kz = z[row]
        # the bits of a float (trailing zeros in the mantissa) mixed as murmur3's fmix64 does
        h = kx ^ (ky * np.uint64(0x9E3779B97F4A7C15)) ^ (kz * np.uint64(0xC2B2AE3D27D4EB4F))
        h ^= h >> np.uint64(33)
        h *= np.uint64(0xFF51AFD7ED558CCD)
        h ^= h >> np.uint64(33)
        h *= np.uint64(0xC4CEB9FE1A85EC53)
        h ^= h >> np.uint64(33)
        slot = np.int64(h & np.uint64(slots - 1))
        found = False
        while table[slot] >= 0:
            other = table[slot]
            if x[other] == kx and y[other] == ky and z[other] == kz:
                out[row] = True
                out[other] = True
                found = True
                break
            slot = (slot + 1) & (slots - 1)
        if not found:
            table[slot] = row


def _bits(values: F64) -> U64:
    """Return the bits of ``values``, the same for every NaN and for both zeros."""
    canonical = np.where(np.isnan(values), np.nan, values) + 0.0
    return np.ascontiguousarray(canonical, dtype=np.float64).view(np.uint64)


def shared_triples(x: F64, y: F64, z: F64, among: Bools) -> Bools | None:
    """Return the rows of ``among`` whose ``(x, y, z)`` another row of ``among`` has.

    NaN equals NaN, -0.0 equals 0.0.

    Returns
    -------
    numpy.ndarray of bool or None
        None when numba is missing.
    """
    if not compile_kernel():  # pragma: no cover
        return None
    n = len(x)
    slots = 1 << max(4, (2 * n).bit_length())
    out = np.zeros(n, dtype=np.bool_)
    _shared_triples(
        _bits(x),
        _bits(y),
        _bits(z),
        np.ascontiguousarray(among, dtype=np.bool_),
        np.full(slots, -1, dtype=np.int64),
        out,
    )
    return out
