r"""Slurm field values read by a compiled scanner: the fast path of :mod:`gridtrace.logs._slurm`.

The assembler reads numbers, times, durations, TRES lists, memory sizes and exit codes out of
``sacct`` text. The reference (:mod:`gridtrace.logs._slurm`) does that with one Arrow regular
expression per field and key, each making struct and string arrays; :func:`scan_values` walks
each value's bytes once in a numba kernel instead, straight from the buffers of the ``attrs``
strings, and writes numbers.

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

import functools
import importlib.util
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from gridtrace.logs._kernels import compile_functions

__all__ = [
    "HAVE_NUMBA",
    "SMALL_INPUT_LINES",
    "TIME_DECLINED",
    "TIME_NONE",
    "TIME_PLAIN",
    "Text",
    "compile_kernel",
    "kernel_ready",
    "scan_durations",
    "scan_exit_codes",
    "scan_floats",
    "scan_job_ids",
    "scan_req_mem",
    "scan_times",
    "scan_tres",
    "scan_tres_size",
    "text_view",
    "use_kernel",
]

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
"""Whether the compiled kernel is available."""

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
    "_size",
    "_times",
    "_durations",
    "_floats",
    "_tres",
    "_tres_size",
    "_req_mem",
    "_exit_codes",
    "_job_ids",
)
_ENTRY_POINTS = frozenset(
    {
        "_times",
        "_durations",
        "_floats",
        "_tres",
        "_tres_size",
        "_req_mem",
        "_exit_codes",
        "_job_ids",
    }
)


@functools.cache
def compile_kernel() -> bool:
    """Compile the kernel on first use (from numba's disk cache after the first run ever).

    Returns
    -------
    bool
        False when numba is not installed (the reader then uses the reference for every value).
    """
    if not HAVE_NUMBA:  # pragma: no cover
        return False
    compile_functions(globals(), _KERNEL, _ENTRY_POINTS)
    return True


def kernel_ready() -> bool:
    """Whether this process has compiled (or loaded) the kernel already."""
    return compile_kernel.cache_info().currsize > 0


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
        The array's character bytes, its ``len + 1`` offsets, and which values are not null.
    rows
        For each row, the index of its value in the array.
    """

    __slots__ = ("data", "offsets", "rows", "valid")

    def __init__(self, data: U8, offsets: I64, valid: Bools, rows: I64) -> None:
        self.data = data
        self.offsets = offsets
        self.valid = valid
        self.rows = rows


def text_view(array: Any, rows: I64 | None = None) -> Text:
    """Return a :class:`Text` of a pyarrow string array (``rows`` default: every value)."""
    n = len(array)
    buffers = array.buffers()
    width = np.int64 if array.type == pa.large_string() else np.int32
    offsets = np.frombuffer(buffers[1], dtype=width, count=array.offset + n + 1)
    offsets64: I64 = offsets[array.offset :].astype(np.int64)
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


def _digit_run(data: U8, a: int, b: int) -> int:
    """Return the end of the ASCII digits from ``a`` (``a`` when none), before ``b``."""
    i = a
    while i < b and 48 <= data[i] <= 57:
        i += 1
    return i


def _decimal(data: U8, a: int, b: int, pow10: F64) -> float:
    """Return the float of the ASCII digits ``data[a:b]`` (at most 15 of them)."""
    value = 0
    for i in range(a, b):
        value = value * 10 + (int(data[i]) - 48)
    result: float = float(value) / pow10[0]
    return result


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _times(data: U8, offsets: I64, valid: Bools, rows: I64, epoch: F64, status: I8) -> None:
    """Plain ``YYYY-MM-DDTHH:MM:SS`` values: naive epoch seconds, or their status."""
    days_in = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    for j in range(len(rows)):
        r = rows[j]
        epoch[j] = np.nan
        status[j] = 0
        if not valid[r]:
            continue
        a = offsets[r]
        b = offsets[r + 1]
        if b - a < 19:
            continue
        ok = True
        for k in range(19):
            c = data[a + k]
            if k == 4 or k == 7:
                ok = ok and c == 45
            elif k == 10:
                ok = ok and c == 84
            elif k == 13 or k == 16:
                ok = ok and c == 58
            else:
                ok = ok and 48 <= c <= 57
        if not ok:
            continue
        if b - a > 19:  # a fraction or an offset: the reference reads it
            status[j] = 2
            continue
        year = 0
        for k in range(4):
            year = year * 10 + (int(data[a + k]) - 48)
        month = (int(data[a + 5]) - 48) * 10 + int(data[a + 6]) - 48
        day = (int(data[a + 8]) - 48) * 10 + int(data[a + 9]) - 48
        hour = (int(data[a + 11]) - 48) * 10 + int(data[a + 12]) - 48
        minute = (int(data[a + 14]) - 48) * 10 + int(data[a + 15]) - 48
        second = (int(data[a + 17]) - 48) * 10 + int(data[a + 18]) - 48
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        if (
            year < 1000
            or not 1 <= month <= 12
            or day < 1
            or day > days_in[month - 1]
            or (month == 2 and day == 29 and not leap)
            or hour > 23
            or minute > 59
            or second > 59
        ):
            status[j] = 2
            continue
        days = _days_from_civil(year, month, day)
        epoch[j] = float(days * 86400 + hour * 3600 + minute * 60 + second)
        status[j] = 1


def _durations(
    data: U8, offsets: I64, valid: Bools, rows: I64, pow10: F64, out: F64, declined: Bools
) -> None:
    """``[[D-]H:]M:S[.F]`` values as seconds (NaN for any other text)."""
    # up to four digit runs separated by - : : and an optional .fraction
    starts = np.zeros(4, np.int64)
    ends = np.zeros(4, np.int64)
    seps = np.zeros(4, np.int64)
    for j in range(len(rows)):
        r = rows[j]
        out[j] = np.nan
        declined[j] = False
        if not valid[r]:
            continue
        a = offsets[r]
        b = offsets[r + 1]
        count = 0
        i = a
        good = True
        while True:
            e = _digit_run(data, i, b)
            if e == i or count == 4 or e - i > 15:
                declined[j] = e - i > 15
                good = False
                break
            starts[count] = i
            ends[count] = e
            count += 1
            if e == b or data[e] == 46:
                seps[count - 1] = 0
                i = e
                break
            seps[count - 1] = int(data[e])
            i = e + 1
        if not good:
            continue
        frac_a = i
        frac_b = i
        if i < b:  # a fraction
            frac_a = i + 1
            frac_b = _digit_run(data, frac_a, b)
            if frac_b == frac_a or frac_b != b:
                continue
            if frac_b - frac_a > 15:
                declined[j] = True
                continue
        # the separators: 45 is -, 58 is :
        if count == 2:
            if seps[0] != 58:
                continue
            d_i, h_i, m_i, s_i = -1, -1, 0, 1
        elif count == 3:
            if seps[0] != 58 or seps[1] != 58:
                continue
            d_i, h_i, m_i, s_i = -1, 0, 1, 2
        elif count == 4:
            if seps[0] != 45 or seps[1] != 58 or seps[2] != 58:
                continue
            d_i, h_i, m_i, s_i = 0, 1, 2, 3
        else:
            continue
        total = 0.0
        unit = (86400.0, 3600.0, 60.0, 1.0)
        for k, which in enumerate((d_i, h_i, m_i, s_i)):
            part = 0.0
            if which >= 0:
                part = _decimal(data, starts[which], ends[which], pow10[:1])
            total += part * unit[k]
        if frac_b > frac_a:
            total += _decimal(data, frac_a, frac_b, pow10[frac_b - frac_a :])
        out[j] = total


def _floats(
    data: U8, offsets: I64, valid: Bools, rows: I64, pow10: F64, out: F64, declined: Bools
) -> None:
    """``D+[.D+]`` values as floats; NaN for text that cannot be one, declined when unsure."""
    for j in range(len(rows)):
        r = rows[j]
        out[j] = np.nan
        declined[j] = False
        if not valid[r]:
            continue
        a = offsets[r]
        b = offsets[r + 1]
        e = _digit_run(data, a, b)
        if e > a and e == b:  # D+
            if b - a <= 15:
                out[j] = _decimal(data, a, e, pow10[:1])
            else:
                declined[j] = True
            continue
        if e > a and data[e] == 46:
            f = _digit_run(data, e + 1, b)
            if f > e + 1 and f == b:  # D+.D+
                if b - a - 1 <= 15:
                    value = _decimal(data, a, e, pow10[:1]) * pow10[f - e - 1]
                    value += _decimal(data, e + 1, f, pow10[:1])
                    out[j] = value / pow10[f - e - 1]
                else:
                    declined[j] = True
                continue
        for i in range(a, b):  # white space or a sign: the reference decides
            c = data[i]
            if c <= 32 or c == 43 or c == 45 or c >= 128:
                declined[j] = True


def _tres(
    data: U8,
    offsets: I64,
    valid: Bools,
    rows: I64,
    keys: U8,
    key_offsets: I64,
    pow10: F64,
    out: F64,
    declined: Bools,
) -> None:
    """Write the counts of each key in ``key=N`` lists, else in ``key:type=N``; NaN where absent."""
    n_keys = len(key_offsets) - 1
    for j in range(len(rows)):
        r = rows[j]
        for q in range(n_keys):
            out[j, q] = np.nan
            declined[j, q] = False
        if not valid[r]:
            continue
        a = offsets[r]
        b = offsets[r + 1]
        for q in range(n_keys):
            ka = key_offsets[q]
            width = key_offsets[q + 1] - ka
            for typed in range(2):
                p = a
                found = False
                while p < b:
                    # p starts an entry: the text's start or just after a comma
                    hit = p + width <= b
                    if hit:
                        for k in range(width):
                            if data[p + k] != keys[ka + k]:
                                hit = False
                                break
                    if hit:
                        i = p + width
                        if typed == 1:
                            if i < b and data[i] == 58:
                                i += 1
                                while i < b and data[i] != 61 and data[i] != 44:
                                    i += 1
                            else:
                                i = b
                        if i < b and data[i] == 61:
                            e = _digit_run(data, i + 1, b)
                            if e > i + 1:
                                if e - i - 1 > 15:
                                    declined[j, q] = True
                                else:
                                    out[j, q] = _decimal(data, i + 1, e, pow10[:1])
                                found = True
                                break
                    while p < b and data[p] != 44:
                        p += 1
                    p += 1
                if found:
                    break


def _size(data: U8, a: int, b: int, pow10: F64, scale: F64, unit_letters: U8) -> tuple[float, int]:
    """``D+[.D+][KMGTP]`` → (value, unit code 0..5); value NaN if not a size, -1.0 if unsure."""
    e = _digit_run(data, a, b)
    if e == a:
        return np.nan, 0
    value = _decimal(data, a, e, pow10[:1]) if e - a <= 15 else -1.0
    if e < b and data[e] == 46:
        f = _digit_run(data, e + 1, b)
        if f == e + 1:
            return np.nan, 0
        if f - a - 1 <= 15 and value >= 0:
            value = (value * pow10[f - e - 1] + _decimal(data, e + 1, f, pow10[:1])) / pow10[
                f - e - 1
            ]
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


def _tres_size(
    data: U8,
    offsets: I64,
    valid: Bools,
    rows: I64,
    keys: U8,
    pow10: F64,
    scale: F64,
    unit_letters: U8,
    out: F64,
    declined: Bools,
) -> None:
    """Write the size after the first ``key=`` entry (``mem=4G``) in bytes, megabytes when bare."""
    width = len(keys)
    for j in range(len(rows)):
        r = rows[j]
        out[j] = np.nan
        declined[j] = False
        if not valid[r]:
            continue
        a = offsets[r]
        b = offsets[r + 1]
        p = a
        while p < b:
            hit = p + width < b
            if hit:
                for k in range(width):
                    if data[p + k] != keys[k]:
                        hit = False
                        break
            if hit and data[p + width] != 44:
                v = p + width
                e = v
                while e < b and data[e] != 44:
                    e += 1
                value, unit = _size(data, v, e, pow10, scale, unit_letters)
                if unit >= 0 and value == value:
                    if value < 0:
                        declined[j] = True
                    else:
                        out[j] = value * (scale[2] if unit == 0 else scale[unit])
                break
            while p < b and data[p] != 44:
                p += 1
            p += 1


def _req_mem(
    data: U8,
    offsets: I64,
    valid: Bools,
    rows: I64,
    pow10: F64,
    scale: F64,
    unit_letters: U8,
    value_out: F64,
    unit_out: I8,
    scope_out: I8,
    declined: Bools,
) -> None:
    """ReqMem ``D+[.D+][KMGTP][cn]``: value, unit code (0 none, 1..5 KMGTP), scope (0, c, n)."""
    for j in range(len(rows)):
        r = rows[j]
        value_out[j] = np.nan
        unit_out[j] = 0
        scope_out[j] = 0
        declined[j] = False
        if not valid[r]:
            continue
        a = offsets[r]
        b = offsets[r + 1]
        scope = 0
        if b > a and (data[b - 1] == 99 or data[b - 1] == 110):
            scope = int(data[b - 1])
            b -= 1
        value, unit = _size(data, a, b, pow10, scale, unit_letters)
        if unit < 0 or value != value:
            continue
        if value < 0:
            declined[j] = True
            continue
        value_out[j] = value
        unit_out[j] = unit
        scope_out[j] = scope


def _exit_codes(
    data: U8, offsets: I64, valid: Bools, rows: I64, pow10: F64, code: F64, signal: F64
) -> None:
    """``[-]D+:D+`` → exit code and signal (NaN where the text is not that)."""
    for j in range(len(rows)):
        r = rows[j]
        code[j] = np.nan
        signal[j] = np.nan
        if not valid[r]:
            continue
        a = offsets[r]
        b = offsets[r + 1]
        negative = a < b and data[a] == 45
        c0 = a + 1 if negative else a
        c1 = _digit_run(data, c0, b)
        if c1 == c0 or c1 >= b or data[c1] != 58:
            continue
        s1 = _digit_run(data, c1 + 1, b)
        if s1 == c1 + 1 or s1 != b:
            continue
        if c1 - c0 > 15 or s1 - c1 - 1 > 15:
            code[j] = -np.inf  # unsure: the reference reads it
            continue
        value = _decimal(data, c0, c1, pow10[:1])
        code[j] = -value if negative else value
        signal[j] = _decimal(data, c1 + 1, s1, pow10[:1])


def _job_ids(
    data: U8, offsets: I64, valid: Bools, rows: I64, pow10: F64, seq: F64, idx: F64, declined: Bools
) -> None:
    """JobIDs ``N``, ``N_I``, ``N+H``, ``N_I+H``: job number and array index; others declined."""
    for j in range(len(rows)):
        r = rows[j]
        seq[j] = np.nan
        idx[j] = np.nan
        declined[j] = True
        if not valid[r]:
            continue
        a = offsets[r]
        b = offsets[r + 1]
        e = _digit_run(data, a, b)
        if e == a or e - a > 15:
            continue
        i = e
        index = np.nan
        if i < b and data[i] == 95:  # _index
            f = _digit_run(data, i + 1, b)
            if f == i + 1 or f - i - 1 > 15:
                continue
            index = _decimal(data, i + 1, f, pow10[:1])
            i = f
        if i < b and data[i] == 43:  # +het
            f = _digit_run(data, i + 1, b)
            if f == i + 1:
                continue
            i = f
        if i != b:
            continue
        seq[j] = _decimal(data, a, e, pow10[:1])
        idx[j] = index
        declined[j] = False


# --------------------------------------------------------------------------- entry points


def _kernel(name: str) -> Any:
    return globals()[name]


def scan_times(text: Text) -> tuple[F64, I8]:
    """Return the naive epoch seconds of plain times, and each value's status.

    Status :data:`TIME_NONE`: not a time (the reference's ``^YYYY-MM-DDTHH:MM:SS`` does not
    match), :data:`TIME_PLAIN`: the epoch is set, :data:`TIME_DECLINED`: left to the reference.
    """
    n = len(text.rows)
    epoch = np.empty(n)
    status = np.empty(n, dtype=np.int8)
    _kernel("_times")(text.data, text.offsets, text.valid, text.rows, epoch, status)
    return epoch, status


def scan_durations(text: Text) -> tuple[F64, Bools]:
    """Return the seconds of ``[[D-]H:]M:S[.F]`` values (NaN otherwise), and the declined ones."""
    n = len(text.rows)
    out = np.empty(n)
    declined = np.empty(n, dtype=bool)
    _kernel("_durations")(text.data, text.offsets, text.valid, text.rows, _POW10, out, declined)
    return out, declined


def scan_floats(text: Text) -> tuple[F64, Bools]:
    """Return the numbers of the values (NaN where none), and the declined ones."""
    n = len(text.rows)
    out = np.empty(n)
    declined = np.empty(n, dtype=bool)
    _kernel("_floats")(text.data, text.offsets, text.valid, text.rows, _POW10, out, declined)
    return out, declined


def scan_tres(text: Text, keys: tuple[str, ...]) -> tuple[F64, Bools]:
    """Return each key's count in TRES lists (rows × keys; NaN where absent), and the declined."""
    encoded = [k.encode() for k in keys]
    key_bytes = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
    key_offsets = np.cumsum([0, *(len(k) for k in encoded)]).astype(np.int64)
    n = len(text.rows)
    out = np.empty((n, len(keys)))
    declined = np.empty((n, len(keys)), dtype=bool)
    _kernel("_tres")(
        text.data, text.offsets, text.valid, text.rows, key_bytes, key_offsets, _POW10, out,
        declined,
    )  # fmt: skip
    return out, declined


def scan_tres_size(text: Text, key: str) -> tuple[F64, Bools]:
    """Return the bytes of the first ``key=<size>`` entry (M when bare), and the declined."""
    n = len(text.rows)
    out = np.empty(n)
    declined = np.empty(n, dtype=bool)
    _kernel("_tres_size")(
        text.data, text.offsets, text.valid, text.rows,
        np.frombuffer((key + "=").encode(), dtype=np.uint8).copy(), _POW10, _SCALE,
        np.frombuffer(_UNIT_LETTERS, dtype=np.uint8).copy(), out, declined,
    )  # fmt: skip
    return out, declined


def scan_req_mem(text: Text) -> tuple[F64, I8, I8, Bools]:
    """Return ReqMem's value, unit code (0 none, 1..5 K..P), scope byte (0, ``c``, ``n``)."""
    n = len(text.rows)
    value = np.empty(n)
    unit = np.empty(n, dtype=np.int8)
    scope = np.empty(n, dtype=np.int8)
    declined = np.empty(n, dtype=bool)
    _kernel("_req_mem")(
        text.data, text.offsets, text.valid, text.rows, _POW10, _SCALE,
        np.frombuffer(_UNIT_LETTERS, dtype=np.uint8).copy(), value, unit, scope, declined,
    )  # fmt: skip
    return value, unit, scope, declined


def scan_job_ids(text: Text) -> tuple[F64, F64, Bools]:
    """Return the job numbers and array indices of plain JobIDs, and the declined ones.

    A declined JobID (an array range, a step, anything but ``N[_I][+H]``) is read by the
    reference; the others are their own attempt key.
    """
    n = len(text.rows)
    seq = np.empty(n)
    idx = np.empty(n)
    declined = np.empty(n, dtype=bool)
    _kernel("_job_ids")(text.data, text.offsets, text.valid, text.rows, _POW10, seq, idx, declined)
    return seq, idx, declined


def scan_exit_codes(text: Text) -> tuple[F64, F64, Bools]:
    """Return the exit codes and signals of ``[-]D:D`` values, and the declined ones."""
    n = len(text.rows)
    code = np.empty(n)
    signal = np.empty(n)
    _kernel("_exit_codes")(text.data, text.offsets, text.valid, text.rows, _POW10, code, signal)
    declined = np.isneginf(code)
    return code, signal, declined
