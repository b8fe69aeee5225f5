r"""Slurm field values read by a compiled scanner: the fast path of :mod:`gridtrace.logs._slurm`.

The assembler reads numbers, times, durations, TRES lists, memory sizes and exit codes out of
``sacct`` text. The reference (:mod:`gridtrace.logs._slurm`) does that with one Arrow regular
expression per field and key, each making struct and string arrays; :func:`scan_rows` walks
each line's values once in a numba kernel instead (every field of a line in one pass), straight
from the buffers of the ``attrs`` strings, and writes numbers.

The tokeniser splits a plain chunk of lines (:func:`split_fields`: every line with its fields
and a JobID, UTF-8, no CR nor NUL byte) into its fields in one pass, writing the Arrow offsets
and character buffers of the values directly; any other chunk is split by the reference.

A kernel reads exactly what the reference's pattern accepts and gives the same float: a number
of at most 15 digits is exact in a float64, and its division by a power of ten is the correctly
rounded value Arrow's string cast gives. Where it is not sure (more digits, a sign or white
space around a count, a time with an offset or a fraction, a date out of range) it *declines*
the value, and the reference reads the declined values only; a declined value is always read
right, only more slowly.

numba is needed for the speed; without it (or for a small input, before the kernel is loaded)
the reference reads everything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from gridtrace.logs._kernels import HAVE_NUMBA, LazyKernel

__all__ = [
    "HAVE_NUMBA",
    "KIND_DURATION",
    "KIND_EXIT",
    "KIND_FLOAT",
    "KIND_JOB_ID",
    "KIND_REQ_MEM",
    "KIND_TIME",
    "KIND_TRES",
    "KIND_TRES_SIZE",
    "SMALL_INPUT_LINES",
    "TIME_DECLINED",
    "TIME_NONE",
    "TIME_PLAIN",
    "Scan",
    "Text",
    "compile_kernel",
    "kernel_ready",
    "scan_durations",
    "scan_exit_codes",
    "scan_floats",
    "scan_job_ids",
    "scan_req_mem",
    "scan_rows",
    "scan_times",
    "scan_tres",
    "scan_tres_size",
    "split_fields",
    "text_view",
    "tres_key",
    "use_kernel",
]


SMALL_INPUT_LINES = 2_000
"""Fewer job lines are read by the reference until the kernel is loaded (no compile wait)."""

TIME_NONE, TIME_PLAIN, TIME_DECLINED = 0, 1, 2
"""A time value's status: not a time, a plain ``YYYY-MM-DDTHH:MM:SS``, left to the reference."""

U8 = npt.NDArray[np.uint8]
I8 = npt.NDArray[np.int8]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]

_MAX_DIGITS = 15  # at most 15 decimal digits are exact in a float64 (< 2**53)
_POW10 = np.array([10.0**k for k in range(_MAX_DIGITS + 1)])
_UNIT_LETTERS = b"KMGTP"
_SCALE = np.array([float(2**20), 2.0**10, 2.0**20, 2.0**30, 2.0**40, 2.0**50])  # "" then KMGTP

# The kernel's functions, callees first; plain Python until compile_kernel replaces each by its
# numba compilation (importing numba costs half a second, paid only by a program reading Slurm).
_KERNEL = (
    "_digit_run",
    "_decimal",
    "_days_from_civil",
    "_time1",
    "_duration1",
    "_float1",
    "_size",
    "_tres_all",
    "_req_mem1",
    "_exit1",
    "_job_id1",
    "_flush",
    "_scan",
    "_split_fields",
)
_ENTRY_POINTS = frozenset({"_scan", "_split_fields"})
_LAZY = LazyKernel(globals(), _KERNEL, _ENTRY_POINTS)
compile_kernel = _LAZY.compile
kernel_ready = _LAZY.ready


def use_kernel(lines: int) -> bool:
    """Whether to read ``lines`` job lines with the kernel (compiling it if needed)."""
    if not HAVE_NUMBA or not (kernel_ready() or lines >= SMALL_INPUT_LINES):
        return False
    return compile_kernel()


class Text:
    """The bytes of a string array, and which of its values each row reads.

    Parameters
    ----------
    data, offsets, valid
        The array's character bytes, its ``len + 1`` offsets (32- or 64-bit), and which values
        are not null.
    rows
        For each row, the index of its value in the array.
    """

    __slots__ = ("data", "done", "offsets", "rows", "valid")

    def __init__(self, data: U8, offsets: I64, valid: Bools, rows: I64) -> None:
        self.data = data
        self.offsets = offsets
        self.valid = valid
        self.rows = rows
        self.done: dict[tuple[int, int], Scan] = {}  # (kind, key): read already by scan_rows


def text_view(array: Any, rows: I64 | None = None) -> Text:
    """Return a :class:`Text` of a pyarrow string array (``rows`` default: every value)."""
    n = len(array)
    buffers = array.buffers()
    width = np.int64 if array.type == pa.large_string() else np.int32
    offsets = np.frombuffer(buffers[1], dtype=width, count=array.offset + n + 1)
    offsets64: Any = offsets[array.offset :]  # the kernel reads 32- or 64-bit offsets
    data = (
        np.frombuffer(buffers[2], dtype=np.uint8)
        if buffers[2] is not None
        else np.zeros(0, np.uint8)
    )
    valid = (
        np.ones(n, dtype=bool)
        if array.null_count == 0
        else np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    )
    return Text(data, offsets64, valid, np.arange(n, dtype=np.int64) if rows is None else rows)


# --------------------------------------------------------------------------- kernel functions
# Each reads one value, the bytes data[a:b]; _scan runs them over rows and fields.

KIND_TIME, KIND_DURATION, KIND_FLOAT, KIND_TRES, KIND_TRES_SIZE = range(5)
KIND_REQ_MEM, KIND_EXIT, KIND_JOB_ID = 5, 6, 7


def _digit_run(data: U8, a: int, b: int) -> int:
    """Return the end of the ASCII digits from ``a`` (``a`` when none), before ``b``."""
    i = a
    while i < b and 48 <= data[i] <= 57:
        i += 1
    return i


def _decimal(data: U8, a: int, b: int, scale: float) -> float:
    """Return the ASCII digits ``data[a:b]`` (at most 15) as a float, divided by ``scale``."""
    value = 0
    for i in range(a, b):
        value = value * 10 + (int(data[i]) - 48)
    result: float = float(value) / scale
    return result


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Return the days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _time1(data: U8, a: int, b: int) -> tuple[float, int]:
    """Read a plain ``YYYY-MM-DDTHH:MM:SS``: (naive epoch, status 0 none, 1 plain, 2 declined)."""
    if b - a < 19:
        return np.nan, 0
    for k in range(19):
        c = data[a + k]
        if k == 4 or k == 7:
            ok = c == 45
        elif k == 10:
            ok = c == 84
        elif k == 13 or k == 16:
            ok = c == 58
        else:
            ok = 48 <= c <= 57
        if not ok:
            return np.nan, 0
    if b - a > 19:  # a fraction or an offset: the reference reads it
        return np.nan, 2
    year = 0
    for k in range(4):
        year = year * 10 + (int(data[a + k]) - 48)
    month = (int(data[a + 5]) - 48) * 10 + int(data[a + 6]) - 48
    day = (int(data[a + 8]) - 48) * 10 + int(data[a + 9]) - 48
    hour = (int(data[a + 11]) - 48) * 10 + int(data[a + 12]) - 48
    minute = (int(data[a + 14]) - 48) * 10 + int(data[a + 15]) - 48
    second = (int(data[a + 17]) - 48) * 10 + int(data[a + 18]) - 48
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days_in = 31
    if month == 2:
        days_in = 29 if leap else 28
    elif month == 4 or month == 6 or month == 9 or month == 11:
        days_in = 30
    if (
        year < 1000
        or not 1 <= month <= 12
        or not 1 <= day <= days_in
        or hour > 23
        or minute > 59
        or second > 59
    ):
        return np.nan, 2
    days = _days_from_civil(year, month, day)
    return float(days * 86400 + hour * 3600 + minute * 60 + second), 1


def _duration1(data: U8, a: int, b: int, pow10: F64) -> tuple[float, int]:
    """Read ``[[D-]H:]M:S[.F]`` as seconds: (value or NaN, declined)."""
    # up to four digit runs: their starts, ends, and the separator after each (- or :)
    s0 = s1 = s2 = s3 = e0 = e1 = e2 = e3 = p0 = p1 = p2 = 0
    count = 0
    i = a
    while True:
        e = _digit_run(data, i, b)
        if e == i or count == 4:
            return np.nan, 0
        if e - i > 15:
            return np.nan, 1
        if count == 0:
            s0, e0 = i, e
        elif count == 1:
            s1, e1 = i, e
        elif count == 2:
            s2, e2 = i, e
        else:
            s3, e3 = i, e
        count += 1
        if e == b or data[e] == 46:
            i = e
            break
        if count == 1:
            p0 = int(data[e])
        elif count == 2:
            p1 = int(data[e])
        elif count == 3:
            p2 = int(data[e])
        else:
            return np.nan, 0
        i = e + 1
    frac_a = i
    frac_b = i
    if i < b:  # a fraction
        frac_a = i + 1
        frac_b = _digit_run(data, frac_a, b)
        if frac_b == frac_a or frac_b != b:
            return np.nan, 0
        if frac_b - frac_a > 15:
            return np.nan, 1
    # d, h, m, s as (start, end); absent parts are empty
    if count == 2 and p0 == 58:
        d_a, d_b, h_a, h_b, m_a, m_b, x_a, x_b = a, a, a, a, s0, e0, s1, e1
    elif count == 3 and p0 == 58 and p1 == 58:
        d_a, d_b, h_a, h_b, m_a, m_b, x_a, x_b = a, a, s0, e0, s1, e1, s2, e2
    elif count == 4 and p0 == 45 and p1 == 58 and p2 == 58:
        d_a, d_b, h_a, h_b, m_a, m_b, x_a, x_b = s0, e0, s1, e1, s2, e2, s3, e3
    else:
        return np.nan, 0
    total = 0.0  # in the reference's order of additions
    total += _decimal(data, d_a, d_b, 1.0) * 86400.0
    total += _decimal(data, h_a, h_b, 1.0) * 3600.0
    total += _decimal(data, m_a, m_b, 1.0) * 60.0
    total += _decimal(data, x_a, x_b, 1.0) * 1.0
    if frac_b > frac_a:
        total += _decimal(data, frac_a, frac_b, pow10[frac_b - frac_a])
    return total, 0


def _float1(data: U8, a: int, b: int, pow10: F64) -> tuple[float, int]:
    """Read ``D+[.D+]``: (value or NaN, declined: white space, a sign or too many digits)."""
    e = _digit_run(data, a, b)
    if e > a and e == b:  # D+
        if b - a <= 15:
            return _decimal(data, a, e, 1.0), 0
        return np.nan, 1
    if e > a and data[e] == 46:
        f = _digit_run(data, e + 1, b)
        if f > e + 1 and f == b:  # D+.D+
            if b - a - 1 <= 15:
                value = _decimal(data, a, e, 1.0) * pow10[f - e - 1]
                value += _decimal(data, e + 1, f, 1.0)
                return value / pow10[f - e - 1], 0
            return np.nan, 1
    for i in range(a, b):  # white space or a sign: the reference decides
        c = data[i]
        if c <= 32 or c == 43 or c == 45 or c >= 128:
            return np.nan, 1
    return np.nan, 0


def _size(data: U8, a: int, b: int, pow10: F64, unit_letters: U8) -> tuple[float, int]:
    """Read ``D+[.D+][KMGTP]``: (value, unit code 0..5); NaN if not a size, -1.0 if unsure."""
    e = _digit_run(data, a, b)
    if e == a:
        return np.nan, 0
    value = _decimal(data, a, e, 1.0) if e - a <= 15 else -1.0
    if e < b and data[e] == 46:
        f = _digit_run(data, e + 1, b)
        if f == e + 1:
            return np.nan, 0
        if f - a - 1 <= 15 and value >= 0:
            value = value * pow10[f - e - 1] + _decimal(data, e + 1, f, 1.0)
            value /= pow10[f - e - 1]
        else:
            value = -1.0
        e = f
    unit = 0
    if e < b:
        for k in range(5):
            if data[e] == unit_letters[k]:
                unit = k + 1
        if unit:
            e += 1
    return value, unit if e == b else -1


def _tres_all(
    data: U8,
    a: int,
    b: int,
    keys: U8,
    key_offsets: I64,
    pow10: F64,
    scale: F64,
    letters: U8,
    values: F64,
    flags: npt.NDArray[np.int64],
) -> None:
    """Read every TRES key of a list in one pass over its entries.

    Each key but the last gets its count from the first ``key=N`` entry, else the first
    ``key:type=N``; the last key (``mem``) gets the bytes of its first ``key=<size>`` entry,
    megabytes when bare. ``flags`` is 1 where the value is left to the reference.
    """
    n_keys = len(key_offsets) - 1
    for q in range(n_keys):
        values[q] = np.nan
        flags[q] = 0  # 0 not found, 1 plain found, 2 typed found (3: the size was found)
    declined = 0
    p = a
    while p <= b:
        e = p
        while e < b and data[e] != 44:
            e += 1
        for q in range(n_keys):
            if flags[q] == 1 or flags[q] == 3:
                continue
            ka = key_offsets[q]
            width = key_offsets[q + 1] - ka
            if p + width > b:
                continue
            hit = True
            for k in range(width):
                if data[p + k] != keys[ka + k]:
                    hit = False
                    break
            if not hit:
                continue
            i = p + width
            if q == n_keys - 1:  # the size: key=<not a comma>...
                if i + 1 < b and data[i] == 61 and data[i + 1] != 44:
                    value, unit = _size(data, i + 1, e, pow10, letters)
                    if unit < 0 or value != value:
                        values[q] = np.nan
                    elif value < 0:
                        values[q] = np.nan
                        declined |= 1 << q
                    else:
                        values[q] = value * (scale[2] if unit == 0 else scale[unit])
                    flags[q] = 3
                continue
            typed = 0
            if i < b and data[i] == 58:
                if flags[q] == 2:
                    continue  # a typed count was found already
                typed = 1
                i += 1
                while i < e and data[i] != 61:
                    i += 1
            if i < b and data[i] == 61:
                f = _digit_run(data, i + 1, b)
                if f > i + 1:
                    if f - i - 1 > 15:
                        values[q] = np.nan
                        declined |= 1 << q
                    else:
                        values[q] = _decimal(data, i + 1, f, 1.0)
                        declined &= ~(1 << q)
                    flags[q] = 2 if typed else 1
        p = e + 1
    for q in range(n_keys):
        flags[q] = (declined >> q) & 1


def _req_mem1(data: U8, a: int, b: int, pow10: F64, letters: U8) -> tuple[float, int, int, int]:
    """Read ReqMem ``D+[.D+][KMGTP][cn]``: (value, unit code, scope byte, declined)."""
    scope = 0
    if b > a and (data[b - 1] == 99 or data[b - 1] == 110):
        scope = int(data[b - 1])
        b -= 1
    value, unit = _size(data, a, b, pow10, letters)
    if unit < 0 or value != value:
        return np.nan, 0, 0, 0
    if value < 0:
        return np.nan, 0, 0, 1
    return value, unit, scope, 0


def _exit1(data: U8, a: int, b: int) -> tuple[float, float, int]:
    """Read ``[-]D+:D+``: (exit code, signal, declined); NaN where the text is not that."""
    negative = a < b and data[a] == 45
    c0 = a + 1 if negative else a
    c1 = _digit_run(data, c0, b)
    if c1 == c0 or c1 >= b or data[c1] != 58:
        return np.nan, np.nan, 0
    s1 = _digit_run(data, c1 + 1, b)
    if s1 == c1 + 1 or s1 != b:
        return np.nan, np.nan, 0
    if c1 - c0 > 15 or s1 - c1 - 1 > 15:
        return np.nan, np.nan, 1
    value = _decimal(data, c0, c1, 1.0)
    return (-value if negative else value), _decimal(data, c1 + 1, s1, 1.0), 0


def _job_id1(data: U8, a: int, b: int) -> tuple[float, float, int]:
    """Read a JobID ``N``, ``N_I``, ``N+H``, ``N_I+H``: (job number, index, declined)."""
    e = _digit_run(data, a, b)
    if e == a or e - a > 15:
        return np.nan, np.nan, 1
    i = e
    index = np.nan
    if i < b and data[i] == 95:  # _index
        f = _digit_run(data, i + 1, b)
        if f == i + 1 or f - i - 1 > 15:
            return np.nan, np.nan, 1
        index = _decimal(data, i + 1, f, 1.0)
        i = f
    if i < b and data[i] == 43:  # +het
        f = _digit_run(data, i + 1, b)
        if f == i + 1:
            return np.nan, np.nan, 1
        i = f
    if i != b:
        return np.nan, np.nan, 1
    return _decimal(data, a, e, 1.0), index, 0


def _scan(
    data: U8,
    offsets: I64,
    valid: Bools,
    lines: I64,
    where: I64,
    width: int,
    kinds: I64,
    params: I64,
    second: I64,
    keys: U8,
    key_offsets: I64,
    pow10: F64,
    scale: F64,
    letters: U8,
    v1: npt.NDArray[np.float64],
    v2: npt.NDArray[np.float64],
    c1: npt.NDArray[np.int8],
    c2: npt.NDArray[np.int8],
) -> None:
    """Read value ``lines[j] * width + where[t]`` as kind ``kinds[t]`` into ``v1, c1[j, t]``.

    A row's fields are read together (one pass over the lines' bytes). Outputs by kind: time
    (epoch, -, status); duration, count, TRES count or size (value, -, declined); ReqMem
    (value, scope byte, declined, unit); exit code (code, signal, declined); JobID (job number,
    index, declined), the second and fourth in ``v2, c2[j, second[t]]`` for the tasks with
    ``second[t] >= 0`` (the others have none). ``params[t]`` is the TRES key's index in
    ``key_offsets``.
    """
    n_tasks = len(kinds)
    tres_values = np.empty(len(key_offsets) - 1)
    tres_flags = np.empty(len(key_offsets) - 1, dtype=np.int64)
    tres_row = -1
    n = lines.shape[0]
    block = 512  # rows read into a small buffer, then written out task by task
    b1 = np.empty((block, n_tasks))
    b2 = np.empty((block, n_tasks))
    f1 = np.empty((block, n_tasks), dtype=np.int8)
    f2 = np.empty((block, n_tasks), dtype=np.int8)
    for j in range(n):
        if j % block == 0 and j:
            _flush(j - block, block, second, b1, b2, f1, f2, v1, v2, c1, c2)
        jj = j % block
        tres_row = -1
        row = lines[j] * width
        for t in range(n_tasks):
            r = row + where[t]
            kind = kinds[t]
            x = np.nan
            y = np.nan
            flag = 0
            unit = 0
            if not valid[r]:
                flag = 1 if kind == 7 else 0
            else:
                a = offsets[r]
                b = offsets[r + 1]
                if kind == 0:
                    x, flag = _time1(data, a, b)
                elif kind == 1:
                    x, flag = _duration1(data, a, b, pow10)
                elif kind == 2:
                    x, flag = _float1(data, a, b, pow10)
                elif kind == 3 or kind == 4:
                    if r != tres_row:  # every key of the list at once
                        _tres_all(
                            data, a, b, keys, key_offsets, pow10, scale, letters, tres_values,
                            tres_flags,
                        )  # fmt: skip
                        tres_row = r
                    x = tres_values[params[t]]
                    flag = tres_flags[params[t]]
                elif kind == 5:
                    x, unit, scope, flag = _req_mem1(data, a, b, pow10, letters)
                    y = float(scope)
                elif kind == 6:
                    x, y, flag = _exit1(data, a, b)
                else:
                    x, y, flag = _job_id1(data, a, b)
            b1[jj, t] = x
            b2[jj, t] = y
            f1[jj, t] = flag
            f2[jj, t] = unit
    if n:
        rest = n - (n - 1) // block * block
        _flush(n - rest, rest, second, b1, b2, f1, f2, v1, v2, c1, c2)


def _flush(
    j0: int,
    m: int,
    second: I64,
    b1: F64,
    b2: F64,
    f1: I8,
    f2: I8,
    v1: F64,
    v2: F64,
    c1: I8,
    c2: I8,
) -> None:
    """Write the buffered rows ``j0 .. j0 + m`` out, one task's values after another."""
    for t in range(b1.shape[1]):
        for jj in range(m):
            v1[t, j0 + jj] = b1[jj, t]
        for jj in range(m):
            c1[t, j0 + jj] = f1[jj, t]
        q = second[t]
        if q >= 0:
            for jj in range(m):
                v2[q, j0 + jj] = b2[jj, t]
            for jj in range(m):
                c2[q, j0 + jj] = f2[jj, t]


def _split_fields(
    data: U8,
    start: int,
    delimiter: int,
    n_fields: int,
    name_last: bool,
    job_pos: int,
    out: U8,
    offsets: npt.NDArray[np.int32],
    is_step: Bools,
) -> int:
    """Split the lines from ``data[start:]`` into fields, copying their bytes end to end.

    Line ``i``'s field ``k`` becomes ``out[offsets[i * n_fields + k]:offsets[... + 1]]``; a line
    with the job name last is split at most ``n_fields - 1`` times. Returns -1 when the data
    holds exactly ``len(is_step)`` lines, each plain (``n_fields`` fields and a JobID holding a
    printable ASCII byte, so neither blank nor without id), else the index of the first line
    that is not (``len(is_step)`` when the count is wrong): the caller then reads the chunk by
    the reference.
    """
    n = len(data)
    n_lines = len(is_step)
    pos = start
    w = 0
    for line in range(n_lines):
        if pos >= n:
            return line
        base = line * n_fields
        printable = False
        step = False
        field = 0
        while True:  # one field a turn, up to its delimiter or the line end
            offsets[base + field] = w
            last = name_last and field == n_fields - 1  # the job name keeps its delimiters
            if field == job_pos:
                while pos < n:
                    c = data[pos]
                    if c == 10 or (c == delimiter and not last):
                        break
                    if 33 <= c <= 126:
                        printable = True
                        if c == 46:
                            step = True
                    out[w] = c
                    w += 1
                    pos += 1
            else:
                while pos < n:
                    c = data[pos]
                    if c == 10 or (c == delimiter and not last):
                        break
                    out[w] = c
                    w += 1
                    pos += 1
            if pos < n and data[pos] == delimiter and not last:
                pos += 1
                field += 1
                if field >= n_fields:
                    return line
                continue
            pos += 1  # past the line end (or the data's end)
            break
        if field != n_fields - 1 or not printable:
            return line
        is_step[line] = step
    if pos < n:  # more lines than counted
        return n_lines
    offsets[n_lines * n_fields] = w
    return -1


# --------------------------------------------------------------------------- entry points

_TRES_KEYS = ("node", "cpu", "gres/gpu", "mem")
_TRES_BYTES = np.frombuffer("".join(_TRES_KEYS).encode(), dtype=np.uint8).copy()
_TRES_OFFSETS = np.cumsum([0, *(len(k) for k in _TRES_KEYS)]).astype(np.int64)
_LETTERS = np.frombuffer(_UNIT_LETTERS, dtype=np.uint8).copy()


def tres_key(key: str) -> int:
    """Return the parameter of a TRES key (node, cpu, gres/gpu, mem) for :func:`scan_rows`."""
    return _TRES_KEYS.index(key)


class Scan(NamedTuple):
    """What :func:`scan_rows` read, one column per task; or one task's values (:meth:`task`)."""

    v1: npt.NDArray[np.float64]
    v2: npt.NDArray[np.float64]
    c1: npt.NDArray[np.int8]
    c2: npt.NDArray[np.int8]
    second: I64 | None = None  # each task's column in v2 and c2 (-1: none, NaN and 0)
    nan: Any = None
    zero: Any = None

    def task(self, t: int) -> Scan:
        """Return task ``t``'s values (views)."""
        q = -1 if self.second is None else int(self.second[t])
        if q < 0:
            return Scan(self.v1[t], self.nan[0], self.c1[t], self.zero[0])
        return Scan(self.v1[t], self.v2[q], self.c1[t], self.c2[q])

    def take(self, rows: I64) -> Scan:
        """Return the values of ``rows`` (one task's)."""
        return Scan(self.v1[rows], self.v2[rows], self.c1[rows], self.c2[rows])


def scan_rows(
    text: Text, lines: I64, where: I64, width: int, tasks: Sequence[tuple[int, int]]
) -> Scan:
    """Read value ``lines[j] * width + where[t]`` of ``text`` as ``tasks[t] = (kind, TRES key)``.

    The values of one line are read together; the result has one row per task.
    """
    n = len(lines)
    k = len(tasks)
    kinds = np.array([t[0] for t in tasks], dtype=np.int64)
    params = np.array([t[1] for t in tasks], dtype=np.int64)
    paired = np.isin(kinds, [KIND_REQ_MEM, KIND_EXIT, KIND_JOB_ID])  # with a second output
    second = np.where(paired, np.cumsum(paired) - 1, -1).astype(np.int64)
    k2 = int(paired.sum())
    v1, c1 = np.empty((k, n)), np.empty((k, n), np.int8)
    v2, c2 = np.empty((k2, n)), np.empty((k2, n), np.int8)
    _kernel("_scan")(
        text.data, text.offsets, text.valid, np.ascontiguousarray(lines, dtype=np.int64),
        np.ascontiguousarray(where, dtype=np.int64), width, kinds, params, second, _TRES_BYTES,
        _TRES_OFFSETS, _POW10, _SCALE, _LETTERS, v1, v2, c1, c2,
    )  # fmt: skip
    # the tasks without a second output read NaN and 0 there, as one broadcast column
    nan = np.broadcast_to(np.full(1, np.nan), (1, n))
    zero = np.broadcast_to(np.zeros(1, np.int8), (1, n))
    return Scan(v1, v2, c1, c2, second, nan, zero)


class Split(NamedTuple):
    """What :func:`split_fields` made of a chunk's lines."""

    values: Any  # pyarrow.StringArray: every line's fields, line after line
    is_step: Bools  # the JobID holds a ``.``


def split_fields(
    data: bytes,
    start: int,
    n_lines: int,
    delimiter: int,
    n_fields: int,
    *,
    name_last: bool,
    job_pos: int,
) -> Split | None:
    """Split the ``n_lines`` lines of ``data`` from byte ``start`` into their fields.

    Returns None when a line is not plain (another field count, blank, no JobID): the caller
    reads the chunk by the reference. ``data`` must be valid UTF-8, hold no CR nor NUL byte, and
    be shorter than 2 GiB (32-bit offsets); ``delimiter`` is one ASCII byte, not the line end.
    """
    buffer = np.frombuffer(data, dtype=np.uint8)
    out = np.empty(max(len(data) - start, 1), dtype=np.uint8)
    offsets = np.empty(n_lines * n_fields + 1, dtype=np.int32)
    is_step = np.zeros(n_lines, dtype=bool)
    bad = _kernel("_split_fields")(
        buffer, start, delimiter, n_fields, name_last, job_pos, out, offsets, is_step
    )
    if bad >= 0:
        return None
    wrap: Any = pa.py_buffer
    values = pa.StringArray.from_buffers(
        n_lines * n_fields, wrap(offsets), wrap(out[: int(offsets[-1])])
    )
    return Split(values, is_step)


def _kernel(name: str) -> Any:
    return globals()[name]


def _one(text: Text, kind: int, key: int = 0) -> Scan:
    """One task over the rows of ``text``, or its result from a scan made already."""
    done: Scan | None = text.done.get((kind, key))
    if done is not None:
        return done
    return scan_rows(text, text.rows, np.zeros(1, np.int64), 1, [(kind, key)]).task(0)


def scan_times(text: Text) -> tuple[F64, I8]:
    """Return the naive epoch seconds of plain times, and each value's status.

    Status :data:`TIME_NONE`: not a time (the reference's ``^YYYY-MM-DDTHH:MM:SS`` does not
    match), :data:`TIME_PLAIN`: the epoch is set, :data:`TIME_DECLINED`: left to the reference.
    """
    scan = _one(text, KIND_TIME)
    return scan.v1.copy(), scan.c1.copy()


def scan_durations(text: Text) -> tuple[F64, Bools]:
    """Return the seconds of ``[[D-]H:]M:S[.F]`` values (NaN otherwise), and the declined ones."""
    scan = _one(text, KIND_DURATION)
    return scan.v1.copy(), scan.c1 != 0


def scan_floats(text: Text) -> tuple[F64, Bools]:
    """Return the numbers of the values (NaN where none), and the declined ones."""
    scan = _one(text, KIND_FLOAT)
    return scan.v1.copy(), scan.c1 != 0


def scan_tres(text: Text, keys: tuple[str, ...]) -> tuple[F64, Bools]:
    """Return each key's count in TRES lists (rows × keys; NaN where absent), and the declined."""
    scans = [_one(text, KIND_TRES, tres_key(key)) for key in keys]
    n = len(text.rows)
    values = np.stack([s.v1 for s in scans], axis=1) if scans else np.empty((n, 0))
    declined = np.stack([s.c1 != 0 for s in scans], axis=1) if scans else np.empty((n, 0), bool)
    return values, declined


def scan_tres_size(text: Text, key: str) -> tuple[F64, Bools]:
    """Return the bytes of the first ``key=<size>`` entry (M when bare), and the declined."""
    scan = _one(text, KIND_TRES_SIZE, tres_key(key))
    return scan.v1.copy(), scan.c1 != 0


def scan_req_mem(text: Text) -> tuple[F64, I8, I8, Bools]:
    """Return ReqMem's value, unit code (0 none, 1..5 K..P), scope byte (0, ``c``, ``n``)."""
    scan = _one(text, KIND_REQ_MEM)
    scope = np.nan_to_num(scan.v2).astype(np.int8)
    return scan.v1.copy(), scan.c2.copy(), scope, scan.c1 != 0


def scan_job_ids(text: Text) -> tuple[F64, F64, Bools]:
    """Return the job numbers and array indices of plain JobIDs, and the declined ones.

    A declined JobID (an array range, a step, anything but ``N[_I][+H]``) is read by the
    reference; the others are their own attempt key.
    """
    scan = _one(text, KIND_JOB_ID)
    return scan.v1.copy(), scan.v2.copy(), scan.c1 != 0


def scan_exit_codes(text: Text) -> tuple[F64, F64, Bools]:
    """Return the exit codes and signals of ``[-]D:D`` values, and the declined ones."""
    scan = _one(text, KIND_EXIT)
    return scan.v1.copy(), scan.v2.copy(), scan.c1 != 0
