r"""LSF ``JOB_FINISH`` lines: the compiled scanner behind :mod:`gridtrace.logs._lsf`.

Nearly every line of an ``lsb.acct`` file is a *clean* ``JOB_FINISH`` record: printable ASCII
(UTF-8 allowed inside quoted strings), fields separated by spaces, every string closed on its
line, and a layout the reader can follow to its end. :func:`scan_lsf` reads a chunk in three
compiled passes, each a small loop over the whole chunk (no Python per line or token):

1. **tokens**: one walk over the bytes splits every line into tokens, with one lookup per byte
   in a table of byte classes (:func:`_classes`): where a token stops, which bytes decline
   the line, and the classes of a token's bytes ORed (``tm``), from which the layout tells a
   number, a JSON escape or a byte above 127 without reading the token again. Each token's
   value (unquoted, a doubled quote made one) is written as it is read, the values of a
   chunk one after the other (``tb``, token ``t`` at ``tc[t]`` to ``tc[t + 1]``); a line the
   kernel cannot read is marked and its tokens dropped;
2. **layout**: each tokenised line is followed through the layout of
   :func:`gridtrace.logs._lsf._job_finish` (the fixed fields and their number checks, the two
   host lists, the counted sections of the tail with the host rusage width and the GPU entries,
   the unknown fields after them), giving its values as runs of tokens and counted sections,
   and the exact number of values and bytes they take;
3. **values**: the values are written into the buffers of an Arrow string array of exactly
   that size: a run of tokens is one copy of their values (its offsets shifted from ``tc``), a
   counted section its count and the JSON list of its tokens.

The layout's helpers take scalars where they can: numba passes each array to an inlined
function with atomic reference counts (14 ns a call with three arrays, against 0.5 ns with
scalars, measured), more than the test itself costs.

The working arrays of the passes are kept by each thread from one chunk to the next.

It *declines* every other line: another event, a comment, a blank or damaged line, a control
character or tab (the reference splits those by Python's rules), a byte above 127 outside a
string or in a chunk that is not UTF-8, CR LF, a string left open (a record spanning lines), a
line without a line end, a token glued to a quote, a record the reference quarantines, a counted
section whose JSON would need escapes, a count of more than nine digits. Those go to the
readable reference in :mod:`gridtrace.logs._lsf`, which holds the one definition of every
record, reason and flag; a declined line is always read right, only more slowly. The flags a
clean line can carry (``HOST_RUSAGE_WIDTH_GUESSED``, ``TAIL_UNPARSED``, ``EXTRA_FIELDS``) the
kernel sets itself, as bits.

numba is needed for the speed; without it the reader uses the reference for every line.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from gridtrace.logs._columnar import string_array
from gridtrace.logs._kernels import HAVE_NUMBA, LazyKernel

__all__ = [
    "EXTRA_FIELDS",
    "FNV_PRIME",
    "HAVE_NUMBA",
    "HOST_RUSAGE_WIDTH_GUESSED",
    "SMALL_INPUT_LINES",
    "TAIL_UNPARSED",
    "Layout",
    "LsfScan",
    "compile_kernel",
    "contains",
    "gather_strings",
    "kernel_ready",
    "name_runs",
    "read_numbers",
    "scan_lsf",
    "string_buffers",
    "string_hashes",
    "template_keys",
]


SMALL_INPUT_LINES = 2_000
"""A chunk of fewer lines is read by the reference until the kernel is loaded (no compile wait)."""

HOST_RUSAGE_WIDTH_GUESSED, TAIL_UNPARSED, EXTRA_FIELDS = 1, 2, 4
"""The flag bits of a clean line, in the order the reference appends the flags."""

U8 = npt.NDArray[np.uint8]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]
F64 = npt.NDArray[np.float64]

# token positions and values (at most 2.5 bytes per input byte: a one-byte entry of a counted
# section becomes '"a", ') must stay addressable by 32-bit offsets
_MAX_CHUNK = (1 << 31) // 8

_LF, _SPACE, _QUOTE, _BACKSLASH, _PLUS, _MINUS, _DOT, _ZERO, _NINE = (
    10,
    32,
    34,
    92,
    43,
    45,
    46,
    48,
    57,
)
_UPPER_A, _UPPER_Z, _UPPER_E, _LOWER_E, _UNDERSCORE, _TILDE = 65, 90, 69, 101, 95, 126
_COMMA, _OPEN, _CLOSE = 44, 91, 93

# tail sections, by kind: none (the last run), fixed width, host rusage, GPU rusage
KIND_NONE, KIND_FIXED, KIND_HOST_RUSAGE, KIND_GPU = range(4)

# The class bits of a byte (a token's are its bytes' ORed): what the layout asks of a token
# (a number? a JSON escape? a byte above 127?) and where the tokenizer stops or declines.
_C_NONDIGIT = 1  # not 0-9
_C_NONNUM = 2  # not in a number: 0-9 + - . e E
_C_HIGH = 4  # above 127
_C_UNSAFE = 8  # not as it is in a JSON string: all but printable ASCII without " and \
_C_QUOTE = 16
_C_STOP = 32  # ends a bare token: blank, line end
_C_BAD_QUOTED = 64  # declines a line in a string: control, DEL (above 127 unless UTF-8)
_C_BAD_BARE = 128  # declines a line in a bare token: control, quote, above 126


def _classes(utf8: bool) -> U8:
    """Return the class bits of every byte, for a chunk that is (or is not) UTF-8."""
    table = np.zeros(256, dtype=np.uint8)
    for byte in range(256):
        bits = 0
        if not _ZERO <= byte <= _NINE:
            bits |= _C_NONDIGIT
            if byte not in (_PLUS, _MINUS, _DOT, _UPPER_E, _LOWER_E):
                bits |= _C_NONNUM
        if byte > 127:
            bits |= _C_HIGH
        if not _SPACE <= byte <= _TILDE or byte in (_QUOTE, _BACKSLASH):
            bits |= _C_UNSAFE
        if byte == _QUOTE:
            bits |= _C_QUOTE
        if byte in (_SPACE, _LF):
            bits |= _C_STOP
        if byte < _SPACE or byte == 127 or (byte > 127 and not utf8):
            bits |= _C_BAD_QUOTED
        if not bits & _C_STOP and (byte < _SPACE or byte > _TILDE or byte == _QUOTE):
            bits |= _C_BAD_BARE
        table[byte] = bits
    return table


_pa: Any = pa

_CLASS_UTF8 = _classes(utf8=True)
_CLASS_ASCII = _classes(utf8=False)

_POW10 = np.array([10.0**k for k in range(23)])  # exact in float64

_JOB_FINISH = np.frombuffer(b"JOB_FINISH", dtype=np.uint8).copy()

# The kernel's functions, callees first; plain Python until compile_kernel replaces each by its
# numba compilation (importing numba costs half a second, paid only by a program reading LSF).
_KERNEL = (
    "_quick",
    "_is_int",
    "_is_number",
    "_numeric",
    "_count",
    "_plain_section",
    "_tokenize",
    "_layout",
    "_write",
    "_put_names",
    "_template_keys",
    "_touch_ahead",
    "_read_numbers",
    "_gather_sizes",
    "_gather",
    "_contains",
    "_string_hashes",
)
_ENTRY_POINTS = frozenset(
    {
        "_tokenize",
        "_layout",
        "_write",
        "_put_names",
        "_template_keys",
        "_read_numbers",
        "_gather_sizes",
        "_gather",
        "_contains",
        "_string_hashes",
    }
)
_LAZY = LazyKernel(globals(), _KERNEL, _ENTRY_POINTS)
compile_kernel = _LAZY.compile
kernel_ready = _LAZY.ready


class Layout(NamedTuple):
    """The ``JOB_FINISH`` layout of the reference, as arrays for the kernel.

    Attributes
    ----------
    head, middle : int
        Fields of the fixed runs before and after the two host lists.
    head_checks, middle_checks : numpy.ndarray of int64
        Positions (in their run) of the fields that must be numbers.
    head_real, middle_real : numpy.ndarray of bool
        Whether that field may be a real number (else an integer).
    run_plain, run_kind, run_width : numpy.ndarray of int64
        The tail: plain fields of each run, then the kind of the counted section after them
        (``KIND_*``) and its tokens per entry.
    """

    head: int
    middle: int
    head_checks: I64
    head_real: Bools
    middle_checks: I64
    middle_real: Bools
    run_plain: I64
    run_kind: I64
    run_width: I64


# --- the kernel --------------------------------------------------------------------------------


def _quick(m: int, a: int, b: int) -> int:
    """Whether a token of class bits ``m`` and value ``tb[a:b]`` is a number, from ``m`` alone.

    1: yes (digits only), 0: no (empty, or a byte no number holds), 2: :func:`_is_int` or
    :func:`_is_number` must walk its bytes (a sign, a dot, an exponent). Scalars only: the
    layout asks this of every checked token (a call passing arrays costs atomic counts).
    """
    if a == b or m & _C_NONNUM:
        return 0
    if m & _C_NONDIGIT == 0:
        return 1
    return 2


def _is_int(tb: U8, a: int, b: int) -> int:
    """``-?[0-9]+``: the reference's integer test on ASCII text (1 or 0)."""
    p = a
    if p < b and tb[p] == _MINUS:
        p += 1
    if p >= b:
        return 0
    while p < b:
        if tb[p] < _ZERO or tb[p] > _NINE:
            return 0
        p += 1
    return 1


def _is_number(tb: U8, a: int, b: int) -> int:
    r"""``[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?``: the reference's number test."""
    p = a
    if p < b and (tb[p] == _PLUS or tb[p] == _MINUS):
        p += 1
    digits = 0
    while p < b and _ZERO <= tb[p] <= _NINE:
        p += 1
        digits += 1
    if p < b and tb[p] == _DOT:
        p += 1
        while p < b and _ZERO <= tb[p] <= _NINE:
            p += 1
            digits += 1
    if digits == 0:
        return 0
    if p < b and (tb[p] == _UPPER_E or tb[p] == _LOWER_E):
        p += 1
        if p < b and (tb[p] == _PLUS or tb[p] == _MINUS):
            p += 1
        exp = 0
        while p < b and _ZERO <= tb[p] <= _NINE:
            p += 1
            exp += 1
        if exp == 0:
            return 0
    return 1 if p == b else 0


def _numeric(tb: U8, tm: U8, tc: I64, t: int, real: bool) -> int:
    """Whether token ``t`` is a number (``real``) or an integer, walking it only if need be."""
    a = tc[t]
    b = tc[t + 1]
    q = _quick(tm[t], a, b)
    if q == 2:
        q = _is_number(tb, a, b) if real else _is_int(tb, a, b)
    return q


def _count(tb: U8, tm: U8, tc: I64, t: int) -> int:
    """Return the count token ``t`` holds, -1 when it is none, -2 when the reference must decide.

    -1 is the reference's ``_Bad`` (not an integer, or negative); -2 a count of more than nine
    significant digits or with bytes above 127 (Python's digits include other scripts').
    """
    if tm[t] & _C_HIGH:  # Python's digits include other scripts': left to the reference
        return -2
    a = tc[t]
    b = tc[t + 1]
    q = _quick(tm[t], a, b)
    if q == 0 or (q == 2 and not _is_int(tb, a, b)):
        return -1
    negative = tb[a] == _MINUS
    p = a + 1 if negative else a
    while p < b - 1 and tb[p] == _ZERO:
        p += 1
    if b - p > 9:
        return -2
    value = 0
    while p < b:
        value = value * 10 + (tb[p] - _ZERO)
        p += 1
    if negative and value != 0:
        return -1
    return value


def _tokenize(
    buf: U8,
    cls: U8,
    line_first: I32,
    line_tokens: I32,
    tq: Bools,
    tm: U8,
    tc: I64,
    tb: U8,
) -> int:
    r"""Pass 1: split every line of ``buf`` into tokens, one pass over the bytes.

    Line ``i`` (split at ``\n``; a final ``\n`` starts no line) gets tokens ``line_first[i]``
    to ``line_first[i] + line_tokens[i]``: quoted (``tq``), the classes of its bytes ORed
    (``tm``, the ``_C_*`` bits of ``cls``), and its value (unquoted, a doubled quote made one)
    at ``tb[tc[t]:tc[t + 1]]``: the values of a line's tokens are written one after the other.
    A line the kernel cannot read (see the module's text) gets ``line_tokens[i] = -1``.
    ``cls`` gives each byte's class bits (:data:`_CLASS_UTF8` or :data:`_CLASS_ASCII`).
    Returns the number of lines.
    """
    n = buf.size
    line = 0
    nt = 0
    s = 0
    size = 0
    tc[0] = 0
    while s < n:
        first = nt
        size_first = size
        p = s
        ok = buf[s] == _QUOTE  # a quoted event name first (also: not a blank line)
        while ok:
            up = np.uint64(p)
            while up < np.uint64(n) and buf[up] == _SPACE:
                up += np.uint64(1)
            p = int(np.int64(up))
            if p >= n:  # no line end
                ok = False
                break
            c = buf[p]
            if c == _LF:
                break
            if c == _QUOTE:
                # the bytes of a string up to a quote: unsigned indices (no check for negative
                # ones in the loop that reads most of the input)
                uq = np.uint64(p + 1)
                us = np.uint64(size)
                un = np.uint64(n)
                um = np.uint8(0)
                while True:
                    while uq < un:
                        c = buf[uq]
                        k = cls[c]
                        if k & (_C_QUOTE | _C_BAD_QUOTED):
                            break
                        um |= k
                        tb[us] = c
                        us += np.uint64(1)
                        uq += np.uint64(1)
                    if (
                        uq + np.uint64(1) < un
                        and buf[uq] == _QUOTE
                        and buf[uq + np.uint64(1)] == _QUOTE
                    ):
                        um |= cls[_QUOTE]  # a doubled quote: one quote, the string goes on
                        tb[us] = _QUOTE
                        us += np.uint64(1)
                        uq += np.uint64(2)
                        continue
                    break
                q = int(np.int64(uq))
                size = int(np.int64(us))
                mask = int(np.int64(um))
                if q >= n or buf[q] != _QUOTE:  # left open, or a byte that declines
                    ok = False
                    break
                if q + 1 < n and buf[q + 1] != _SPACE and buf[q + 1] != _LF:  # glued
                    ok = False
                    break
                tq[nt] = True
                p = q + 1
            else:
                up = np.uint64(p)  # unsigned, as for a string
                us = np.uint64(size)
                un = np.uint64(n)
                um = np.uint8(0)
                while up < un:
                    c = buf[up]
                    k = cls[c]
                    if k & (_C_STOP | _C_BAD_BARE):
                        break
                    um |= k
                    tb[us] = c
                    us += np.uint64(1)
                    up += np.uint64(1)
                p = int(np.int64(up))
                size = int(np.int64(us))
                mask = int(np.int64(um))
                if p < n and cls[buf[p]] & _C_BAD_BARE:  # control, quote, > 126
                    ok = False
                    break
                tq[nt] = False
            tm[nt] = mask
            nt += 1
            tc[nt] = size
        if not ok:
            while p < n and buf[p] != _LF:
                p += 1
            nt = first
            size = size_first
        line_first[line] = first
        line_tokens[line] = nt - first if ok else -1
        line += 1
        s = p + 1
    return line


def _plain_section(tm: U8, tc: I64, first: int, end: int) -> int:
    """Bytes of the JSON list of tokens ``first`` to ``end``; -1 when one needs an escape."""
    mask = 0
    for t in range(first, end):
        mask |= tm[t]
    if mask & _C_UNSAFE:
        return -1
    return int(2 + 2 * max(end - first - 1, 0) + 2 * (end - first) + tc[end] - tc[first])


def _layout(
    tb: U8,
    head: int,
    middle: int,
    head_checks: I64,
    head_real: Bools,
    middle_checks: I64,
    middle_real: Bools,
    run_plain: I64,
    run_kind: I64,
    run_width: I64,
    job_finish: U8,
    lines: int,
    line_first: I32,
    line_tokens: I32,
    tq: Bools,
    tm: U8,
    tc: I64,
    fast: Bools,
    row_named: I64,
    row_values: I64,
    row_flags: I64,
    row_bytes: I64,
    item_first: I32,
    item_end: I32,
    item_section: Bools,
) -> tuple[int, int]:
    """Pass 2: follow the ``JOB_FINISH`` layout of each tokenised line, as the reference does.

    A clean line's values become items, in order: a run of tokens ``item_first`` to
    ``item_end`` (one value each), or a counted section (``item_section``: its count token
    ``item_first``, its entries up to ``item_end``; two values, the count and the JSON list).
    Sets ``fast`` per line and, per clean line, its named values, all values, flag bits and
    value bytes. Returns the clean lines and the items.
    """
    clean = 0
    m = 0
    for line in range(lines):
        fast[line] = False
        nt = line_tokens[line]
        if nt < 0:
            continue
        b = line_first[line]  # token j of the line is b + j
        # ---- the event: "JOB_FINISH"
        ok = nt >= 1 and tq[b] and tc[b + 1] - tc[b] == job_finish.size
        if ok:
            for k in range(job_finish.size):
                if tb[tc[b] + k] != job_finish[k]:
                    ok = False
                    break
        # ---- the fixed fields: head, the two host lists, middle
        pos = 0
        if ok:
            if nt < head:
                ok = False
            else:
                for k in range(head_checks.size):
                    t = b + head_checks[k]
                    q = _quick(tm[t], tc[t], tc[t + 1])
                    if q == 2:
                        q = _numeric(tb, tm, tc, t, head_real[k])
                    if q == 0:
                        ok = False
                        break
                pos = head
        for _lists in range(2):
            if not ok:
                break
            if pos >= nt:
                ok = False
                break
            count = _count(tb, tm, tc, b + pos)
            if count < 0 or pos + 1 + count > nt:
                ok = False
                break
            pos += 1 + count
        if ok:
            if pos + middle > nt:
                ok = False
            else:
                for k in range(middle_checks.size):
                    t = b + pos + middle_checks[k]
                    q = _quick(tm[t], tc[t], tc[t + 1])
                    if q == 2:
                        q = _numeric(tb, tm, tc, t, middle_real[k])
                    if q == 0:
                        ok = False
                        break
        # ---- the version's major number
        major = 0
        if ok:
            lo = tc[b + 1]
            hi = lo
            while hi < tc[b + 2] and tb[hi] != _DOT:
                hi += 1
            digits = hi > lo
            for k in range(lo, hi):
                if tb[k] > 127:
                    ok = False
                if tb[k] < _ZERO or tb[k] > _NINE:
                    digits = False
            if ok and digits:
                if hi - lo > 9:
                    ok = False
                else:
                    for k in range(lo, hi):
                        major = major * 10 + (tb[k] - _ZERO)
        if not ok:
            continue
        # ---- the items of the fixed fields
        m_line = m
        values = 0
        size = 0
        flags = 0
        pos = 0
        for stage in range(4):
            if stage == 0 or stage == 3:
                stop = pos + (head if stage == 0 else middle)
                item_first[m] = b + pos
                item_end[m] = b + stop
                item_section[m] = False
                m += 1
                size += tc[b + stop] - tc[b + pos]
                values += stop - pos
                pos = stop
            else:
                end = pos + 1 + _count(tb, tm, tc, b + pos)
                listed = _plain_section(tm, tc, b + pos + 1, b + end)
                if listed < 0:
                    ok = False
                    break
                item_first[m] = b + pos
                item_end[m] = b + end
                item_section[m] = True
                m += 1
                size += tc[b + pos + 1] - tc[b + pos] + listed
                values += 2
                pos = end
        # ---- the tail: runs of plain fields, each followed by a counted section
        if ok:
            for r in range(run_plain.size):
                stop = min(pos + run_plain[r], nt)
                if stop > pos:
                    item_first[m] = b + pos
                    item_end[m] = b + stop
                    item_section[m] = False
                    m += 1
                    size += tc[b + stop] - tc[b + pos]
                values += stop - pos
                pos = stop
                kind = run_kind[r]
                if pos >= nt or kind == KIND_NONE:
                    break
                count = _count(tb, tm, tc, b + pos)
                if count == -2:
                    ok = False
                    break
                bad = count < 0
                start = pos + 1
                end = start
                if not bad:
                    if kind == KIND_HOST_RUSAGE:
                        width = 5
                        for t in range(b + start, b + min(start + count * 6 + 4, nt)):
                            if tm[t] & _C_HIGH:  # other scripts' digits: the reference's
                                ok = False
                        if ok and count > 0:
                            fits = 0
                            fit = 0
                            for w in range(5, 7):
                                stop = start + count * w
                                if stop > nt:
                                    continue
                                good = True
                                for j in range(count):
                                    h = b + start + j * w
                                    q = _quick(tm[h], tc[h], tc[h + 1])
                                    if q == 1 or (q == 2 and _numeric(tb, tm, tc, h, True)):
                                        good = False  # a number where a host name must be
                                        break
                                    for t in range(h + 1, h + w):
                                        q = _quick(tm[t], tc[t], tc[t + 1])
                                        if q == 0 or (q == 2 and not _numeric(tb, tm, tc, t, True)):
                                            good = False
                                            break
                                    if not good:
                                        break
                                for j in range(3):
                                    t = b + stop + j
                                    if good and stop + j < nt:
                                        q = _quick(tm[t], tc[t], tc[t + 1])
                                        good = not tq[t] and (
                                            q == 1
                                            or (q == 2 and _numeric(tb, tm, tc, t, True) == 1)
                                        )
                                if good and stop + 3 < nt:
                                    good = tq[b + stop + 3]
                                if good:
                                    fits += 1
                                    fit = w
                            if fits == 0:
                                bad = True
                            elif fits == 1:
                                width = fit
                            else:
                                width = 5 if major >= 10 else 6
                                flags |= HOST_RUSAGE_WIDTH_GUESSED
                        end = start + count * width
                    elif kind == KIND_GPU:
                        q = start
                        for _entry in range(count):
                            if q + 1 >= nt:
                                bad = True
                                break
                            pairs = _count(tb, tm, tc, b + q + 1)
                            if pairs == -2:
                                ok = False
                                break
                            if pairs < 0:
                                bad = True
                                break
                            q += 2 + 2 * pairs
                        end = q
                    else:
                        end = start + count * run_width[r]
                    if end > nt:
                        bad = True
                if not ok:
                    break
                if bad:
                    flags |= TAIL_UNPARSED
                    break
                listed = _plain_section(tm, tc, b + pos + 1, b + end)
                if listed < 0:
                    ok = False
                    break
                item_first[m] = b + pos
                item_end[m] = b + end
                item_section[m] = True
                m += 1
                size += tc[b + pos + 1] - tc[b + pos] + listed
                values += 2
                pos = end
        if not ok:
            m = m_line  # drop this line's items
            continue
        named = values
        if pos < nt:  # unknown fields
            if not flags & TAIL_UNPARSED:
                flags |= EXTRA_FIELDS
            item_first[m] = b + pos
            item_end[m] = b + nt
            item_section[m] = False
            m += 1
            size += tc[b + nt] - tc[b + pos]
            values += nt - pos
        fast[line] = True
        row_named[clean] = named
        row_values[clean] = values
        row_flags[clean] = flags
        row_bytes[clean] = size
        clean += 1
    return clean, m


def _write(
    tb: U8,
    tc: I64,
    item_first: I32,
    item_end: I32,
    item_section: Bools,
    items: int,
    values_off: I32,
    values: U8,
) -> int:
    """Pass 3: write the items' values (a run as one copy; a section as count and list).

    Every index and count is unsigned (no check for negative ones; numba would make a float
    of a signed and an unsigned integer mixed, so none is).
    """
    one = np.uint64(1)
    v = np.uint64(0)
    nv = np.uint64(0)
    values_off[0] = 0
    for i in range(items):
        first = np.uint64(item_first[i])
        end = np.uint64(item_end[i])
        section = item_section[i]
        stop = first + one if section else end
        lo = np.uint64(tc[first])
        hi = np.uint64(tc[stop])
        for t in range(first + one, stop + one):  # the values of a run are side by side in tb
            nv += one
            values_off[nv] = np.uint64(tc[t]) - lo + v
        for k in range(lo, hi):
            values[v] = tb[k]
            v += one
        if not section:
            continue
        values[v] = _OPEN
        v += one
        for u in range(first + one, end):
            if u > first + one:
                values[v] = _COMMA
                values[v + one] = _SPACE
                v += np.uint64(2)
            values[v] = _QUOTE
            v += one
            for k in range(np.uint64(tc[u]), np.uint64(tc[u + one])):
                values[v] = tb[k]
                v += one
            values[v] = _QUOTE
            v += one
        values[v] = _CLOSE
        v += one
        nv += one
        values_off[nv] = v
    return int(np.int64(nv))


def _put_names(names: U8, names_off: I64, starts: I64, lengths: I64, out_off: I32, out: U8) -> None:
    """Write runs of names: run ``r`` is names ``starts[r]`` to ``starts[r] + lengths[r]``.

    The names of a run are consecutive in ``names``: each run is one copy of bytes. Unsigned
    indices throughout, as in :func:`_write`.
    """
    one = np.uint64(1)
    v = np.uint64(0)
    k = np.uint64(0)
    out_off[0] = 0
    for r in range(starts.size):
        first = np.uint64(starts[r])
        stop = first + np.uint64(lengths[r])
        lo = np.uint64(names_off[first])
        for j in range(first + one, stop + one):
            k += one
            out_off[k] = np.uint64(names_off[j]) - lo + v
        for b in range(lo, np.uint64(names_off[stop])):
            out[v] = names[b]
            v += one


def _template_keys(
    koff: I32,
    kdata: U8,
    starts: I64,
    ends: I64,
    valid: Bools,
    toff: I64,
    tdata: U8,
    at: I64,
    out: I64,
) -> bool:
    """Positions of the template's keys ``at`` in maps whose keys begin as the template's.

    Map ``row`` holds its keys ``starts[row]`` to ``ends[row]``; the template's key ``j`` is
    ``tdata[toff[j]:toff[j + 1]]``. Each valid map's first keys (as many as the template's, or
    all of a shorter map's) must be the template's, offsets and bytes compared whole (a loop
    without an early exit, as one compare of the row); then key ``at[j]`` is entry
    ``starts[row] + at[j]`` if the map holds that many, else absent (-1), as is every key of a
    null map. Returns False, as soon as a map differs, for the caller to search by name.
    """
    k = toff.size - 1
    for row in range(starts.shape[0]):
        start = starts[row]
        if valid.size and not valid[row]:
            for j in range(at.size):
                out[j, row] = -1
            continue
        m = min(ends[row] - start, k)
        base = koff[start]
        diff = 0
        first = np.uint64(start)  # unsigned indices: no check for negative ones (vectorised)
        for j in range(np.uint64(m + 1)):
            diff |= (koff[first + j] - base) ^ toff[j]
        if diff:
            return False
        same = np.uint8(0)  # kept in 8 bits: the loop is vectorised (4x faster than in 64)
        byte = np.uint64(base)
        for b in range(np.uint64(toff[m])):
            same = np.uint8(same | (kdata[byte + b] ^ tdata[b]))
        if same:
            return False
        for j in range(at.size):
            out[j, row] = start + at[j] if at[j] < m else -1
    return True


def _touch_ahead(offsets: I32, data: U8, index: I64, i: int) -> int:
    """Load the first byte of each string row ``i + _AHEAD`` of ``index`` picks; return their sum.

    Rows of a chunk's maps lie a kilobyte and more apart, too far for the hardware to fetch
    the next one ahead: each row's first loads wait on memory. Loading a later row's bytes
    early (a plain load, the sum returned so that it is kept) lets those waits overlap the
    work on this row: :func:`_read_numbers` of the benchmark's 100k rows took 0.82x the CPU
    time, paired in one process (AMD EPYC; 2 and 8 rows ahead measured no different from 4).
    :func:`_gather` was slower for it (1.08x) and does without.
    """
    row = i + _AHEAD
    if row >= index.shape[1]:
        return 0
    last = data.size - 1
    total = 0
    for j in range(index.shape[0]):
        p = index[j, row]
        if p >= 0:
            total += data[min(offsets[p], last)]
    return total


_AHEAD = 4


def _read_numbers(offsets: I32, data: U8, index: I64, out: F64, slow: Bools) -> int:
    r"""Read the strings at ``index`` (field, row; -1: none, NaN) as numbers, where that is exact.

    A string ``-?[0-9]+(\.[0-9]+)?`` of at most 15 digits is an integer below 2**53 divided by
    an exact power of ten: the division is correctly rounded, the value any exact parser
    gives. An empty string is NaN; every other string is left to the caller (``slow``). The
    fields of one row sit side by side in ``data``: they are read together, row by row.
    Returns the sum of :func:`_touch_ahead` (of no use but to keep its loads).
    """
    touched = 0
    for i in range(index.shape[1]):
        touched += _touch_ahead(offsets, data, index, i)
        for j in range(index.shape[0]):
            out[j, i] = np.nan
            slow[j, i] = False
            p = index[j, i]
            if p < 0:
                continue
            a = offsets[p]
            b = offsets[p + 1]
            if a == b:
                continue
            k = a
            negative = data[k] == _MINUS
            if negative:
                k += 1
            mantissa = 0
            digits = 0
            while k < b and _ZERO <= data[k] <= _NINE:
                mantissa = mantissa * 10 + (data[k] - _ZERO)
                digits += 1
                k += 1
                if digits > 15:
                    break
            fraction = 0
            if k < b and data[k] == _DOT and digits > 0:
                k += 1
                while k < b and _ZERO <= data[k] <= _NINE:
                    mantissa = mantissa * 10 + (data[k] - _ZERO)
                    fraction += 1
                    k += 1
                    if digits + fraction > 15:
                        break
                if fraction == 0:
                    k = -1  # "5.": left to the caller
            if digits == 0 or k != b or digits + fraction > 15:
                slow[j, i] = True
                continue
            value = float(mantissa)
            if fraction:
                value = value / _POW10[fraction]
            out[j, i] = -value if negative else value
    return touched


def read_numbers(strings: Any, index: I64) -> tuple[F64, Bools] | None:
    """Read the strings of ``strings`` at ``index`` (-1: absent) as numbers, in the kernel.

    ``index`` may be 2-D (field, row): the fields of a row are then read together.
    Returns the numbers (NaN where absent or empty) and where the kernel could not decide
    (to be read otherwise), shaped as ``index``; None when ``strings`` holds nulls or the kernel
    is not loaded.
    """
    if strings.null_count or not kernel_ready():
        return None
    offsets, data, _ = string_buffers(strings)
    index = np.ascontiguousarray(index, dtype=np.int64)
    shape = index.shape
    # (fields, rows), the fields counted: -1 cannot be inferred when there are no rows
    index = index.reshape(int(np.prod(shape[:-1], dtype=np.int64)), shape[-1])
    out = np.empty(index.shape, dtype=np.float64)
    slow = np.empty(index.shape, dtype=np.bool_)
    _read_numbers(offsets, data, index, out, slow)
    return out.reshape(shape), slow.reshape(shape)


def template_keys(attrs: Any, template: list[str], at: list[int]) -> I64 | None:
    """Child positions of the keys ``template[at[j]]`` in each map of ``attrs``, by position.

    For maps whose keys begin as ``template`` (a shorter map: its keys are the template's
    first), as the keys of an LSF record row do (:func:`name_runs`): the positions are then
    those of :func:`gridtrace.logs._attrs_fast.find_keys` (-1 where absent or null) without a
    search, after one compare of each map's first keys with the template.

    Parameters
    ----------
    attrs : pyarrow.MapArray
        A map<string, string> column in one chunk (a slice is fine).
    template : list of str
        The keys every map begins with (only the first ``max(at) + 1`` are compared).
    at : list of int
        The positions in ``template`` of the keys wanted.

    Returns
    -------
    numpy.ndarray of int64, shape (len(at), len(attrs)), or None
        None when a map's keys do not begin as the template's (or the kernel is not loaded).
    """
    if not kernel_ready() or not at:
        return None
    wanted = np.asarray(at, dtype=np.int64)
    toff, tdata = _encoded(tuple(template[: int(wanted.max()) + 1]))
    keys = attrs.keys
    koff, kdata, _ = string_buffers(keys)
    offsets = np.asarray(attrs.offsets, dtype=np.int64)
    valid = np.asarray(attrs.is_valid(), dtype=np.bool_) if attrs.null_count else _NO_NULLS
    out = np.empty((len(at), len(attrs)), dtype=np.int64)
    if not _template_keys(koff, kdata, offsets[:-1], offsets[1:], valid, toff, tdata, wanted, out):
        return None
    return out


_NO_NULLS = np.ones(0, dtype=np.bool_)


def _gather_sizes(offsets: I32, valid: Bools, index: I64, row: int, out_off: I32) -> None:
    """Offsets of the strings picked by ``index`` (column, row; -1 or invalid: none, empty).

    An empty ``valid`` stands for strings that are all valid.

    Written from row ``row`` of ``out_off`` on, going on from ``out_off[:, row]``.
    """
    for i in range(index.shape[1]):  # row by row: the fields of a row sit side by side
        for j in range(index.shape[0]):
            p = index[j, i]
            size = 0
            if p >= 0 and (valid.size == 0 or valid[p]):
                size = offsets[p + 1] - offsets[p]
            out_off[j, row + i + 1] = out_off[j, row + i] + size


def _gather(
    offsets: I32, data: U8, valid: Bools, index: I64, row: int, out_off: I32, base: I64, out: U8
) -> None:
    """Copy the strings picked by ``index``, column ``j`` at ``base[j] + out_off[j, row:]``.

    Row by row (all the columns of a row, then the next): the fields of a row sit side by side.
    (Loading rows ahead, as :func:`_read_numbers` does, made it slower: 1.08x, measured.)
    """
    for i in range(index.shape[1]):
        for j in range(index.shape[0]):
            p = index[j, i]
            if p < 0 or (valid.size and not valid[p]):
                continue
            w = np.uint64(base[j] + out_off[j, row + i])  # unsigned: no check for negative ones
            for k in range(np.uint64(offsets[p]), np.uint64(offsets[p + 1])):
                out[w] = data[k]
                w += np.uint64(1)


def _contains(offsets: I32, data: U8, valid: Bools, needle: U8, skip: I64, out: Bools) -> None:
    """Whether each valid string holds the bytes of ``needle`` (not empty; no ``valid``: all).

    Horspool's search: the window's last byte says how far the needle may move (``skip``, see
    :func:`_skips`), about its length on text that does not hold its bytes (the effective
    requirements of the benchmark, 7.3 MB: 5.2-6.7 ms a byte at a time, 1.0-1.4 ms so).
    """
    size = needle.size
    last = needle[size - 1]
    for i in range(offsets.size - 1):
        out[i] = False
        if valid.size and not valid[i]:
            continue
        stop = offsets[i + 1]
        a = offsets[i] + size - 1  # the window's last byte
        while a < stop:
            c = data[a]
            if c == last:
                same = True
                first = a - size + 1
                for k in range(size - 1):
                    if data[first + k] != needle[k]:
                        same = False
                        break
                if same:
                    out[i] = True
                    break
            a += skip[c]


_FNV_BASIS, FNV_PRIME, _NULL_BYTE = 14695981039346656037, 1099511628211, 0xFF


def _string_hashes(offsets: I32, data: U8, valid: Bools, out: npt.NDArray[np.uint64]) -> None:
    """FNV-1a hash (64 bits) of each string's bytes; a null hashes as the byte 0xFF alone.

    Every operand is unsigned (numba makes a float of a signed and an unsigned integer mixed);
    the products wrap modulo 2**64, as FNV-1a wants.
    """
    prime = np.uint64(FNV_PRIME)
    for i in range(offsets.size - 1):
        h = np.uint64(_FNV_BASIS)
        if valid.size and not valid[i]:
            h = (h ^ np.uint64(_NULL_BYTE)) * prime
        else:
            for k in range(np.uint64(offsets[i]), np.uint64(offsets[i + 1])):
                h = (h ^ np.uint64(data[k])) * prime
        out[i] = h


def string_hashes(strings: Any) -> npt.NDArray[np.uint64] | None:
    """Return a 64-bit hash of each string of ``strings`` (an array or chunked array).

    Equal strings hash equal (a null as no string does but by chance); different ones
    collide by chance only (FNV-1a). None when the kernel is not loaded.
    """
    if not kernel_ready():
        return None
    chunks = strings.chunks if isinstance(strings, pa.ChunkedArray) else [strings]
    out = np.empty(len(strings), dtype=np.uint64)
    row = 0
    for chunk in chunks:
        if len(chunk):
            offsets, data, valid = string_buffers(chunk)
            _string_hashes(offsets, data, valid, out[row : row + len(chunk)])
        row += len(chunk)
    return out


def string_buffers(strings: Any) -> tuple[I32, U8, Bools]:
    """Return the offsets (from the array offset), data and validity of strings, no copy.

    The validity is empty when no string is null.
    """
    validity, offsets_buffer, data_buffer = strings.buffers()[:3]
    n = len(strings)
    offsets = np.frombuffer(offsets_buffer, dtype=np.int32)[strings.offset : strings.offset + n + 1]
    data = (
        np.frombuffer(data_buffer, dtype=np.uint8)
        if data_buffer is not None and data_buffer.size
        else np.zeros(1, dtype=np.uint8)
    )
    if strings.null_count and validity is not None:
        valid = np.asarray(strings.is_valid(), dtype=np.bool_)
    else:
        valid = np.ones(0, dtype=np.bool_)
    return offsets, data, valid


def gather_strings(parts: list[tuple[Any, I64]]) -> list[Any] | None:
    """Take strings at each row of an index (-1: null) in the kernel, from several arrays.

    Each part is a string array and a 2-D index into it (column, row); column ``j`` of the
    result is the same as ``pa.concat_arrays([strings.take(pa.array(index[j],
    mask=index[j] < 0)) for strings, index in parts])``, in one pass over each part's rows
    (the fields of a row sit side by side) and without an index array or a copy each.
    None when the kernel is not loaded or the strings might not fit 32-bit offsets.
    """
    if not kernel_ready() or not parts:
        return None
    buffers = [string_buffers(strings) for strings, _ in parts]
    if sum(len(data) for _, data, _ in buffers) >= 1 << 31:  # may overflow the offsets
        return None
    indexes = [np.ascontiguousarray(index, dtype=np.int64) for _, index in parts]
    k = indexes[0].shape[0]
    n = sum(index.shape[1] for index in indexes)
    out_off = np.zeros((k, n + 1), dtype=np.int32)
    picked = np.empty((k, n), dtype=np.bool_)
    row = 0
    for (offsets, _, valid), index in zip(buffers, indexes, strict=True):
        _gather_sizes(offsets, valid, index, row, out_off)
        picked[:, row : row + index.shape[1]] = (index >= 0) & (
            valid[np.maximum(index, 0)] if valid.size else True
        )
        row += index.shape[1]
    base = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(out_off[:, n], out=base[1:])
    out = np.empty(max(int(base[k]), 1), dtype=np.uint8)
    row = 0
    for (offsets, data, valid), index in zip(buffers, indexes, strict=True):
        _gather(offsets, data, valid, index, row, out_off, base, out)
        row += index.shape[1]
    columns = []
    for j in range(k):
        nulls = n - int(np.count_nonzero(picked[j]))
        bitmap = _pa.py_buffer(np.packbits(picked[j], bitorder="little")) if nulls else None
        columns.append(
            _pa.StringArray.from_buffers(
                n,
                _pa.py_buffer(out_off[j]),
                _pa.py_buffer(out[base[j] : base[j + 1]]),
                bitmap,
                nulls,
            )
        )
    return columns


def contains(strings: Any, needle: str) -> Bools | None:
    """Whether each string of ``strings`` holds ``needle`` (null: False), in the kernel.

    The same as ``pc.match_substring(pc.fill_null(strings, ""), needle)``. None when the
    kernel is not loaded or ``needle`` is empty.
    """
    if not kernel_ready() or not needle:
        return None
    offsets, data, valid = string_buffers(strings)
    out = np.empty(len(strings), dtype=np.bool_)
    encoded = needle.encode()
    _contains(offsets, data, valid, np.frombuffer(encoded, dtype=np.uint8), _skips(encoded), out)
    return out


@functools.lru_cache(maxsize=16)
def _skips(needle: bytes) -> I64:
    """Horspool's table: for each byte, how far a window ending in it may move (read only).

    The distance from the byte's last place in the needle but the last to the needle's end,
    or the needle's length for a byte it does not hold there.
    """
    skip = np.full(256, len(needle), dtype=np.int64)
    for k, byte in enumerate(needle[:-1]):
        skip[byte] = len(needle) - 1 - k
    skip.flags.writeable = False
    return skip


@functools.lru_cache(maxsize=16)
def _encoded(names: tuple[str, ...]) -> tuple[I64, U8]:
    """Return the UTF-8 bytes of ``names`` one after the other and their offsets (read only).

    Cached: every chunk of a file asks for the same few lists of names (the keys of a
    ``JOB_FINISH`` row), which took 2 ms a chunk to encode.
    """
    encoded = [name.encode() for name in names]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(name) for name in encoded], out=offsets[1:])
    data = np.frombuffer(b"".join(encoded) or b"\0", dtype=np.uint8)
    offsets.flags.writeable = False
    return offsets, data


def name_runs(names: list[str], starts: I64, lengths: I64) -> Any:
    """Return the string array of runs of ``names`` (run ``r``: ``lengths[r]`` from ``starts[r]``).

    The keys of ``attrs`` maps, written by the kernel (which must be loaded: see
    :func:`kernel_ready`); None when they would not fit 32-bit offsets.
    """
    names_off, data = _encoded(tuple(names))
    total = int((names_off[starts + lengths] - names_off[starts]).sum())
    count = int(lengths.sum())
    if total >= 1 << 31:
        return None
    out = np.empty(total, dtype=np.uint8)
    out_off = np.empty(count + 1, dtype=np.int32)
    _put_names(data, names_off, starts, lengths, out_off, out)
    return string_array(out_off, out)


# --- the Python side ---------------------------------------------------------------------------


class _Scratch(threading.local):
    """A thread's working arrays, kept from one chunk to the next (no new pages each chunk)."""

    def __init__(self) -> None:
        self.arrays: dict[str, npt.NDArray[Any]] = {}

    @classmethod
    def get(cls) -> _Scratch:
        return _SCRATCH

    def array(self, name: str, size: int, dtype: Any) -> Any:
        """Return a working array of at least ``size`` items (its content left as it was).

        Arrays of more than :data:`_KEPT_BYTES` are not kept (a huge chunk's pages are freed).
        """
        kept = self.arrays.get(name)
        if kept is None or kept.size < size:
            kept = np.empty(max(size, 1), dtype=dtype)
            if kept.nbytes <= _KEPT_BYTES:
                self.arrays[name] = kept
        return kept


_KEPT_BYTES = 64 << 20


_SCRATCH = _Scratch()


def _is_utf8(data: bytes) -> bool:
    """Whether ``data`` is valid UTF-8."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class LsfScan(NamedTuple):
    """The clean lines of a chunk, as :func:`scan_lsf` found them.

    Attributes
    ----------
    lines : int
        Lines in the chunk.
    fast : numpy.ndarray of bool
        Per line: read by the kernel.
    named, counts, flags : numpy.ndarray of int64
        Per clean line, in line order: named values, all values, flag bits.
    values : pyarrow.StringArray
        The values of the clean lines, one after the other.
    """

    lines: int
    fast: Bools
    named: I64
    counts: I64
    flags: I64
    values: Any


def scan_lsf(data: bytes, layout: Layout, *, utf8: bool | None = None) -> LsfScan | None:
    """Find the clean ``JOB_FINISH`` lines of a chunk (see the module's text).

    Parameters
    ----------
    data : bytes
        Whole lines (the last one without a line end is never clean).
    layout : Layout
        The reference's ``JOB_FINISH`` layout.
    utf8 : bool, optional
        Whether ``data`` is valid UTF-8 (else a byte above 127 declines its line). None: found
        out only when a string the scanner keeps holds a byte above 127 (the chunk is then
        decoded once; most chunks are ASCII and never are).

    Returns
    -------
    LsfScan or None
        None when numba is missing or the chunk is too large for 32-bit offsets.
    """
    if len(data) > _MAX_CHUNK or not compile_kernel():
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    scratch = _Scratch.get()
    tokens = buf.size // 2 + 2  # a token and its blank take 2 bytes at least
    line_first = scratch.array("line_first", buf.size + 1, np.int32)  # a line takes a byte
    line_tokens = scratch.array("line_tokens", buf.size + 1, np.int32)
    tq = scratch.array("tq", tokens, np.bool_)
    tm = scratch.array("tm", tokens, np.uint8)
    tc = scratch.array("tc", tokens + 1, np.int64)
    tb = scratch.array("tb", buf.size, np.uint8)  # token values take no more than the input
    cls = _CLASS_ASCII if utf8 is False else _CLASS_UTF8
    lines = _tokenize(buf, cls, line_first, line_tokens, tq, tm, tc, tb)
    if utf8 is None and lines:
        kept = line_first[lines - 1] + max(int(line_tokens[lines - 1]), 0)
        if int(np.bitwise_or.reduce(tm[:kept], initial=0)) & _C_HIGH and not _is_utf8(data):
            lines = _tokenize(buf, _CLASS_ASCII, line_first, line_tokens, tq, tm, tc, tb)
    fast = np.empty(lines, dtype=np.bool_)
    row_named = np.empty(lines, dtype=np.int64)
    row_values = np.empty(lines, dtype=np.int64)
    row_flags = np.empty(lines, dtype=np.int64)
    row_bytes = np.empty(lines, dtype=np.int64)
    item_first = scratch.array("item_first", tokens, np.int32)
    item_end = scratch.array("item_end", tokens, np.int32)
    item_section = scratch.array("item_section", tokens, np.bool_)
    clean, items = _layout(
        tb,
        layout.head,
        layout.middle,
        layout.head_checks,
        layout.head_real,
        layout.middle_checks,
        layout.middle_real,
        layout.run_plain,
        layout.run_kind,
        layout.run_width,
        _JOB_FINISH,
        lines,
        line_first,
        line_tokens,
        tq,
        tm,
        tc,
        fast,
        row_named,
        row_values,
        row_flags,
        row_bytes,
        item_first,
        item_end,
        item_section,
    )
    counts = row_values[:clean]
    values_off = np.empty(int(counts.sum()) + 1, dtype=np.int32)
    values = np.empty(int(row_bytes[:clean].sum()), dtype=np.uint8)
    written = _write(tb, tc, item_first, item_end, item_section, items, values_off, values)
    if written != len(values_off) - 1 or values_off[-1] != len(values):  # pragma: no cover
        raise AssertionError("the LSF kernel wrote other values than it counted")
    return LsfScan(
        lines=lines,
        fast=fast,
        named=row_named[:clean],
        counts=counts,
        flags=row_flags[:clean],
        values=string_array(values_off, values),
    )
