r"""LSF ``JOB_FINISH`` lines: the compiled scanner behind :mod:`gridtrace.logs._lsf`.

Nearly every line of an ``lsb.acct`` file is a *clean* ``JOB_FINISH`` record: printable ASCII
(UTF-8 allowed inside quoted strings), fields separated by spaces, every string closed on its
line, and a layout the reader can follow to its end. :func:`scan_lsf` walks a chunk's bytes once
in a numba kernel, recognises those lines, follows the layout of
:func:`gridtrace.logs._lsf._job_finish` (the fixed fields and their number checks, the two host
lists, the counted sections of the tail with the host rusage width and the GPU entries, the
unknown fields after them) and writes the values (unquoted, a doubled quote made one, each
counted section as the JSON list of its tokens) straight into the buffers of an Arrow string
array, so no Python object is made per line or token.

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
import importlib.util
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from gridtrace.logs._columnar import string_array
from gridtrace.logs._kernels import compile_functions

__all__ = [
    "EXTRA_FIELDS",
    "HAVE_NUMBA",
    "HOST_RUSAGE_WIDTH_GUESSED",
    "SMALL_INPUT_LINES",
    "TAIL_UNPARSED",
    "Layout",
    "LsfScan",
    "compile_kernel",
    "kernel_ready",
    "scan_lsf",
]

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
"""Whether the compiled kernel is available."""

SMALL_INPUT_LINES = 2_000
"""A chunk of fewer lines is read by the reference until the kernel is loaded (no compile wait)."""

HOST_RUSAGE_WIDTH_GUESSED, TAIL_UNPARSED, EXTRA_FIELDS = 1, 2, 4
"""The flag bits of a clean line, in the order the reference appends the flags."""

U8 = npt.NDArray[np.uint8]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

# values (at most 4 bytes per input byte, see scan_lsf) must stay addressable by 32-bit offsets
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

# the bytes a counted section's JSON list takes as they are: printable ASCII but " and \
_PLAIN = np.zeros(256, dtype=np.bool_)
_PLAIN[_SPACE : _TILDE + 1] = True
_PLAIN[[_QUOTE, _BACKSLASH]] = False

_JOB_FINISH = np.frombuffer(b"JOB_FINISH", dtype=np.uint8).copy()

# The kernel's functions, callees first; plain Python until compile_kernel replaces each by its
# numba compilation (importing numba costs half a second, paid only by a program reading LSF).
_KERNEL = ("_is_int", "_is_number", "_count", "_put_tokens", "_put_section", "_scan_chunk")
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


def _is_int(buf: U8, a: int, b: int) -> bool:
    """``-?[0-9]+``: the reference's integer test on ASCII text."""
    p = a
    if p < b and buf[p] == _MINUS:
        p += 1
    if p >= b:
        return False
    while p < b:
        if buf[p] < _ZERO or buf[p] > _NINE:
            return False
        p += 1
    return True


def _is_number(buf: U8, a: int, b: int) -> bool:
    r"""``[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?``: the reference's number test."""
    p = a
    if p < b and (buf[p] == _PLUS or buf[p] == _MINUS):
        p += 1
    digits = 0
    while p < b and _ZERO <= buf[p] <= _NINE:
        p += 1
        digits += 1
    if p < b and buf[p] == _DOT:
        p += 1
        while p < b and _ZERO <= buf[p] <= _NINE:
            p += 1
            digits += 1
    if digits == 0:
        return False
    if p < b and (buf[p] == _UPPER_E or buf[p] == _LOWER_E):
        p += 1
        if p < b and (buf[p] == _PLUS or buf[p] == _MINUS):
            p += 1
        exp = 0
        while p < b and _ZERO <= buf[p] <= _NINE:
            p += 1
            exp += 1
        if exp == 0:
            return False
    return p == b


def _count(buf: U8, a: int, b: int) -> int:
    """Return the count a token holds, -1 when it is none, -2 when the reference must decide.

    -1 is the reference's ``_Bad`` (not an integer, or negative); -2 a count of more than nine
    significant digits or with bytes above 127 (Python's digits include other scripts').
    """
    for k in range(a, b):
        if buf[k] > 127:  # Python's digits include other scripts': left to the reference
            return -2
    if not _is_int(buf, a, b):
        return -1
    negative = buf[a] == _MINUS
    p = a + 1 if negative else a
    while p < b - 1 and buf[p] == _ZERO:
        p += 1
    if b - p > 9:
        return -2
    value = 0
    while p < b:
        value = value * 10 + (buf[p] - _ZERO)
        p += 1
    if negative and value != 0:
        return -1
    return value


def _put_tokens(
    buf: U8,
    ts: I64,
    te: I64,
    tx: Bools,
    first: int,
    stop: int,
    values: U8,
    v: int,
    off: I32,
    nv: int,
) -> tuple[int, int]:
    """Write tokens ``first`` to ``stop`` as values (a doubled quote made one); new ends."""
    for t in range(first, stop):
        k = ts[t]
        while k < te[t]:
            values[v] = buf[k]
            v += 1
            if tx[t] and buf[k] == _QUOTE:
                k += 1
            k += 1
        nv += 1
        off[nv] = v
    return v, nv


def _put_section(
    buf: U8, ts: I64, te: I64, pos: int, end: int, values: U8, v: int, off: I32, nv: int
) -> tuple[int, int, bool]:
    """Write a counted section: its count as written, then its tokens as a JSON list.

    The count is token ``pos``, the entries tokens ``pos + 1`` to ``end``; the flag returned is
    False when an entry needs a JSON escape (the line is left to the reference).
    """
    ok = True
    for k in range(ts[pos], te[pos]):
        values[v] = buf[k]
        v += 1
    nv += 1
    off[nv] = v
    values[v] = _OPEN
    v += 1
    for t in range(pos + 1, end):
        if t > pos + 1:
            values[v] = _COMMA
            values[v + 1] = _SPACE
            v += 2
        values[v] = _QUOTE
        v += 1
        for k in range(ts[t], te[t]):
            d = buf[k]
            if not _PLAIN[d]:
                ok = False
            values[v] = d
            v += 1
        values[v] = _QUOTE
        v += 1
    values[v] = _CLOSE
    v += 1
    nv += 1
    off[nv] = v
    return v, nv, ok


def _scan_chunk(
    buf: U8,
    utf8: bool,
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
    fast: Bools,
    row_named: I64,
    row_values: I64,
    row_flags: I64,
    values_off: I32,
    values: U8,
    ts: I64,
    te: I64,
    tq: Bools,
    tx: Bools,
) -> tuple[int, int, int]:
    r"""Scan the lines of ``buf`` (split at ``\n``; a final ``\n`` starts no line).

    Sets ``fast[i]`` for each line; for the k-th clean line, its values go to ``values`` /
    ``values_off`` and ``row_named[k]``, ``row_values[k]``, ``row_flags[k]`` say how many are
    named, how many in all, and its flag bits. ``ts``/``te``/``tq``/``tx`` are scratch space for
    one line's tokens (content start and end, quoted, holding a doubled quote). Returns the
    lines, the clean lines and the values written.
    """
    n = buf.size
    line = 0
    clean = 0
    nv = 0  # values written
    v = 0  # bytes written
    values_off[0] = 0
    s = 0
    while s < n:
        e = s
        while e < n and buf[e] != _LF:
            e += 1
        ok = e < n and e > s and buf[s] == _QUOTE  # a line end; a quoted event name first
        # ---- tokens
        nt = 0
        p = s
        while ok and p < e:
            c = buf[p]
            if c == _SPACE:
                p += 1
                continue
            if c == _QUOTE:
                a = p + 1
                q = a
                escaped = False
                closed = False
                while q < e:
                    d = buf[q]
                    if d == _QUOTE:
                        if q + 1 < e and buf[q + 1] == _QUOTE:
                            escaped = True
                            q += 2
                            continue
                        closed = True
                        break
                    if d < _SPACE or d == 127 or (d > 127 and not utf8):
                        ok = False
                        break
                    q += 1
                if not ok or not closed:
                    ok = False
                    break
                if q + 1 < e and buf[q + 1] != _SPACE:  # glued to what follows
                    ok = False
                    break
                ts[nt] = a
                te[nt] = q
                tq[nt] = True
                tx[nt] = escaped
                nt += 1
                p = q + 1
            else:
                a = p
                while p < e and buf[p] != _SPACE:
                    d = buf[p]
                    if d <= _SPACE or d >= 127 or d == _QUOTE:
                        ok = False
                        break
                    p += 1
                if not ok:
                    break
                ts[nt] = a
                te[nt] = p
                tq[nt] = False
                tx[nt] = False
                nt += 1
        # ---- the event: "JOB_FINISH"
        if ok:
            ok = nt >= 1 and tq[0] and te[0] - ts[0] == job_finish.size
            if ok:
                for k in range(job_finish.size):
                    if buf[ts[0] + k] != job_finish[k]:
                        ok = False
                        break
        # ---- the layout
        v_line = v
        nv_line = nv
        flags = 0
        named = 0
        pos = 0
        if ok:
            if nt < head:
                ok = False
            else:
                for k in range(head_checks.size):
                    t = head_checks[k]
                    if head_real[k]:
                        good = _is_number(buf, ts[t], te[t])
                    else:
                        good = _is_int(buf, ts[t], te[t])
                    if not good:
                        ok = False
                        break
                pos = head
        # the two host lists, then the middle run
        for _lists in range(2):
            if not ok:
                break
            if pos >= nt:
                ok = False
                break
            count = _count(buf, ts[pos], te[pos])
            if count < 0 or pos + 1 + count > nt:
                ok = False
                break
            pos += 1 + count
        if ok:
            if pos + middle > nt:
                ok = False
            else:
                for k in range(middle_checks.size):
                    t = pos + middle_checks[k]
                    if middle_real[k]:
                        good = _is_number(buf, ts[t], te[t])
                    else:
                        good = _is_int(buf, ts[t], te[t])
                    if not good:
                        ok = False
                        break
        # the version's major number
        major = 0
        if ok:
            a = ts[1]
            b = a
            while b < te[1] and buf[b] != _DOT:
                b += 1
            digits = b > a
            for k in range(a, b):
                if buf[k] > 127:
                    ok = False
                if buf[k] < _ZERO or buf[k] > _NINE:
                    digits = False
            if ok and digits:
                if b - a > 9:
                    ok = False
                else:
                    for k in range(a, b):
                        major = major * 10 + (buf[k] - _ZERO)
        # ---- write: the fixed part as a list of spans (token, or section start and end)
        # pieces are written in one walk: the start of the tail is `pos` after the middle run
        if ok:
            # items: head tokens, count + list, count + list, middle tokens
            pos = 0
            stage = 0
            while ok and stage < 4:
                if stage == 0 or stage == 3:
                    stop = pos + (head if stage == 0 else middle)
                    v, nv = _put_tokens(buf, ts, te, tx, pos, stop, values, v, values_off, nv)
                    pos = stop
                else:
                    end = pos + 1 + _count(buf, ts[pos], te[pos])
                    v, nv, ok = _put_section(buf, ts, te, pos, end, values, v, values_off, nv)
                    pos = end
                stage += 1
        # ---- the tail
        if ok:
            for r in range(run_plain.size):
                stop = min(pos + run_plain[r], nt)
                v, nv = _put_tokens(buf, ts, te, tx, pos, stop, values, v, values_off, nv)
                pos = stop
                kind = run_kind[r]
                if pos >= nt or kind == KIND_NONE:
                    break
                count = _count(buf, ts[pos], te[pos])
                if count == -2:
                    ok = False
                    break
                bad = count < 0
                start = pos + 1
                end = start
                if not bad:
                    if kind == KIND_HOST_RUSAGE:
                        width = 5
                        for t in range(start, min(start + count * 6 + 4, nt)):
                            for k in range(ts[t], te[t]):
                                if buf[k] > 127:  # other scripts' digits: the reference's
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
                                    h = start + j * w
                                    if _is_number(buf, ts[h], te[h]):
                                        good = False
                                        break
                                    for t in range(h + 1, h + w):
                                        if not _is_number(buf, ts[t], te[t]):
                                            good = False
                                            break
                                    if not good:
                                        break
                                for j in range(3):
                                    t = stop + j
                                    if good and t < nt:
                                        good = not tq[t] and _is_number(buf, ts[t], te[t])
                                if good and stop + 3 < nt:
                                    good = tq[stop + 3]
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
                            pairs = _count(buf, ts[q + 1], te[q + 1])
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
                v, nv, ok = _put_section(buf, ts, te, pos, end, values, v, values_off, nv)
                pos = end
        if ok:
            named = nv - nv_line
            if pos < nt:
                if not flags & TAIL_UNPARSED:
                    flags |= EXTRA_FIELDS
                v, nv = _put_tokens(buf, ts, te, tx, pos, nt, values, v, values_off, nv)
            fast[line] = True
            row_named[clean] = named
            row_values[clean] = nv - nv_line
            row_flags[clean] = flags
            clean += 1
        else:
            fast[line] = False
            v = v_line  # drop what this line wrote
            nv = nv_line
        line += 1
        s = e + 1
    return line, clean, nv


# --- the Python side ---------------------------------------------------------------------------


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


def scan_lsf(data: bytes, layout: Layout, *, utf8: bool) -> LsfScan | None:
    """Find the clean ``JOB_FINISH`` lines of a chunk (see the module's text).

    Parameters
    ----------
    data : bytes
        Whole lines (the last one without a line end is never clean).
    layout : Layout
        The reference's ``JOB_FINISH`` layout.
    utf8 : bool
        Whether ``data`` is valid UTF-8 (else a byte above 127 declines its line).

    Returns
    -------
    LsfScan or None
        None when numba is missing or the chunk is too large for 32-bit offsets.
    """
    if len(data) > _MAX_CHUNK or not compile_kernel():
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    size = buf.size
    bound = int(np.count_nonzero(buf == _LF)) + 1
    tokens = size // 2 + 2  # a token and its blank take 2 bytes at least
    # a value is at most its token; a counted list adds 4 bytes a token and 2 around
    values = np.empty(4 * size + 16, dtype=np.uint8)
    values_off = np.empty(2 * tokens + bound + 1, dtype=np.int32)  # a count makes two values
    fast = np.zeros(bound, dtype=np.bool_)
    row_named = np.zeros(bound, dtype=np.int64)
    row_values = np.zeros(bound, dtype=np.int64)
    row_flags = np.zeros(bound, dtype=np.int64)
    ts = np.empty(tokens, dtype=np.int64)  # scratch: one line's tokens
    te = np.empty(tokens, dtype=np.int64)
    tq = np.empty(tokens, dtype=np.bool_)
    tx = np.empty(tokens, dtype=np.bool_)
    lines, clean, nv = _scan_chunk(
        buf,
        utf8,
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
        fast,
        row_named,
        row_values,
        row_flags,
        values_off,
        values,
        ts,
        te,
        tq,
        tx,
    )
    values_off = values_off[: nv + 1]
    used = int(values_off[-1])
    return LsfScan(
        lines=lines,
        fast=fast[:lines],
        named=row_named[:clean],
        counts=row_values[:clean],
        flags=row_flags[:clean],
        values=string_array(values_off, values[:used].copy()),
    )
