"""TORQUE / PBS job assembly: the compiled kernel that indexes the attribute maps of many records.

:meth:`gridtrace.logs._torque_jobs._Attrs.extract` finds, for every record, where the value of
each attribute it reads sits. On large inputs (from :data:`KERNEL_ROWS` records) this kernel
does it in one pass over the bytes of the keys, instead of ``pyarrow.compute.index_in`` over
every key, a scan for empty values and a scatter into the index table: the same table, a few
times faster. Small inputs keep the array path, so that reading one day's file loads no numba.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from gridtrace.logs._kernels import HAVE_NUMBA, LazyKernel

__all__ = [
    "EXEC_HOST_KERNEL_ROWS",
    "HAVE_NUMBA",
    "KERNEL_ROWS",
    "applies",
    "combined_keys",
    "exec_hosts",
    "first_positions",
    "first_seen_numbers",
    "gather_strings",
    "group_summary",
    "index_keys",
    "job_id_keys",
    "job_id_parts",
    "local_stamps",
    "measured_offsets",
    "read_values",
    "seen_more_than_once",
    "stable_order",
    "string_offsets",
    "use_kernel",
    "value_hashes",
    "visits",
]


KERNEL_ROWS = 100_000
"""Records from which the kernel is used (loading numba costs about a second)."""

I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

# The kernels' functions, callees first: plain Python until first use (see _compile_kernel).
_KERNEL = (
    "_read_one",
    "_entry_column",
    "_same_keys",
    "_index_keys",
    "_read_number",
    "_parse_exec_hosts",
    "_read_values",
    "_first_positions",
    "_string_sizes",
    "_copy_strings",
    "_hash_values",
    "_counting_order",
    "_number_keys",
    "_seen_counts",
    "_parse_job_ids",
    "_pack_and_hash",
    "_days_from_civil",
    "_parse_stamps",
    "_group_summary",
    "_combine",
    "_measure_offsets",
)
_ENTRY_POINTS = frozenset(
    {
        "_index_keys",
        "_parse_exec_hosts",
        "_read_values",
        "_first_positions",
        "_string_sizes",
        "_copy_strings",
        "_hash_values",
        "_counting_order",
        "_number_keys",
        "_seen_counts",
        "_parse_job_ids",
        "_pack_and_hash",
        "_parse_stamps",
        "_group_summary",
        "_combine",
        "_measure_offsets",
    }
)
_LAZY = LazyKernel(globals(), _KERNEL, _ENTRY_POINTS)
_compile_kernel = _LAZY.compile


def use_kernel(rows: int) -> bool:
    """Whether ``rows`` records are indexed with the kernel."""
    return HAVE_NUMBA and rows >= KERNEL_ROWS


def _index_keys(
    map_offsets: I64,
    key_offsets: npt.NDArray[np.int32],
    key_data: npt.NDArray[np.uint8],
    key_words: npt.NDArray[np.uint64],
    value_offsets: npt.NDArray[np.int32],
    wanted_data: npt.NDArray[np.uint8],
    wanted_words: npt.NDArray[np.uint64],
    wanted_offsets: I64,
    slots: I64,
    key_ids: I64,
    drop_last: Bools,
    table: npt.NDArray[np.integer[Any]],
    row0: int,
    position0: int,
    value_data: npt.NDArray[np.uint8],
    integer_of: I64,
    integers: I64,
    others: I64,
) -> None:
    """Fill ``table[row0 + row, key]`` with ``position0 +`` the number of the entry kept, else −1.

    Every row of the chunk is written whole (−1 where no entry of the key is kept), and so is
    ``integers[:, row0 + row]`` (``NA`` where not read): neither needs filling beforehand.

    An entry is kept when its key is one of the wanted ones, its value is not empty and it is
    not the last entry of a row marked in ``drop_last``. Nothing is copied: the caller puts
    the chunks' values one after the other, so that ``position0 + entry`` is the value's place
    among them. The wanted keys (not empty) are listed by length and last byte: those of
    length ``L`` ending in byte ``b`` are ``slots[256 * L + b]:slots[256 * L + b + 1]``, most
    often one. A key of 8 bytes or more is then compared 8 bytes at a time (``key_words[i]``
    and ``wanted_words[i]`` are the 8 bytes from byte ``i``): its last and first 8 bytes, then
    those between. Few, predictable branches per entry: the keys' lengths vary from entry to
    entry, and a loop over a key's bytes mispredicts at its end. A row with the keys, in
    order, of the last row with as many entries (most rows of a record type: a log writes its
    keys in one order) takes that row's columns, its keys compared as one span 8 bytes at a time
    instead of looked up one by one.

    A key with ``integer_of[key] = k >= 0`` is also read as an integer (:data:`INTEGER`) into
    ``integers[k, row0 + row]`` as its value is indexed (the bytes are at hand): a later entry
    of the key overwrites it, as in ``table``; ``others[k]`` counts the values in another form
    (even those a later entry replaces: the caller then reads that key by another path).
    """
    longest = len(slots) // 256 - 2
    # the columns of the last row of each entry count (up to _LAYOUTS): the key layout of a
    # record type, which most rows of that type repeat (then compared, not looked up, key by key)
    layout_first = np.full(_LAYOUTS + 1, -1, dtype=np.int64)
    layout_columns = np.empty((_LAYOUTS + 1, _LAYOUTS), dtype=np.int64)
    for row in range(len(map_offsets) - 1):
        # the row's cells are written here, the absent ones too: the caller need not fill the
        # table first (a pass over all of its memory, which this one writes anyway)
        for column in range(table.shape[1]):
            table[row0 + row, column] = -1
        for k in range(integers.shape[0]):
            integers[k, row0 + row] = _NA
        first, stop = map_offsets[row], map_offsets[row + 1]
        count = stop - first
        cached = 0 < count <= _LAYOUTS
        hit = (
            cached
            and layout_first[count] >= 0
            and _same_keys(key_offsets, key_data, key_words, first, layout_first[count], count)
        )
        for entry in range(first, stop):
            if hit:
                column = layout_columns[count, entry - first]
            else:
                column = _entry_column(
                    key_data,
                    key_words,
                    key_offsets[entry],
                    key_offsets[entry + 1],
                    wanted_data,
                    wanted_words,
                    wanted_offsets,
                    slots,
                    key_ids,
                    longest,
                )
                if cached:
                    layout_columns[count, entry - first] = column
            if column < 0:
                continue
            if value_offsets[entry + 1] == value_offsets[entry]:
                continue
            if drop_last[row] and entry == stop - 1:
                continue
            table[row0 + row, column] = position0 + entry
            k = integer_of[column]
            if k >= 0:
                number = _read_one(value_data, value_offsets[entry], value_offsets[entry + 1], 0)
                if number == _OTHER:
                    others[k] += 1
                    integers[k, row0 + row] = _NA
                else:
                    integers[k, row0 + row] = number
        if cached and not hit:
            layout_first[count] = first


_LAYOUTS = 64
"""Rows of up to this many entries have their key layout remembered by :func:`_index_keys`."""


def _entry_column(
    key_data: npt.NDArray[np.uint8],
    key_words: npt.NDArray[np.uint64],
    k0: int,
    k1: int,
    wanted_data: npt.NDArray[np.uint8],
    wanted_words: npt.NDArray[np.uint64],
    wanted_offsets: I64,
    slots: I64,
    key_ids: I64,
    longest: int,
) -> int:
    """Return the column of the key ``key_data[k0:k1]`` among the wanted keys (−1: not wanted).

    See :func:`_index_keys` for how the wanted keys are laid out and compared.
    """
    size = k1 - k0
    if size > longest or size == 0:
        return -1
    slot = size * 256 + key_data[k1 - 1]
    for key in range(slots[slot], slots[slot + 1]):
        w0 = wanted_offsets[key]
        same = True
        if size >= 8:
            same = (key_words[k1 - 8] == wanted_words[w0 + size - 8]) & (
                key_words[k0] == wanted_words[w0]
            )
            if same and size > 16:
                for i in range(8, size - 8, 8):
                    if key_words[k0 + i] != wanted_words[w0 + i]:
                        same = False
                        break
        else:
            for i in range(size - 2, -1, -1):
                if key_data[k0 + i] != wanted_data[w0 + i]:
                    same = False
                    break
        if same:
            return int(key_ids[key])
    return -1


def _same_keys(
    key_offsets: npt.NDArray[np.int32],
    key_data: npt.NDArray[np.uint8],
    key_words: npt.NDArray[np.uint64],
    a: int,
    b: int,
    count: int,
) -> bool:
    """Whether the ``count`` entries from ``a`` have the keys of those from ``b``, in order.

    The same lengths, then the same bytes: the keys of a row lie side by side, so the two
    spans are compared 8 bytes at a time.
    """
    base_a, base_b = key_offsets[a], key_offsets[b]
    for j in range(1, count + 1):
        if key_offsets[a + j] - base_a != key_offsets[b + j] - base_b:
            return False
    span = key_offsets[a + count] - base_a
    if span < 8:
        same = True
        for i in range(span):
            if key_data[base_a + i] != key_data[base_b + i]:
                same = False
                break
        return same
    for i in range(0, span - 8, 8):
        if key_words[base_a + i] != key_words[base_b + i]:
            return False
    return bool(key_words[base_a + span - 8] == key_words[base_b + span - 8])


def _words(data: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint64]:
    """``out[i]``: the 8 bytes of ``data`` from byte ``i`` (a view, unaligned; padded if short)."""
    if len(data) < 8:
        data = np.concatenate([data, np.zeros(8, dtype=np.uint8)])
    return np.ndarray(shape=(len(data) - 7,), dtype=np.uint64, buffer=data, strides=(1,))


def _offsets(array: pa.Array[Any]) -> npt.NDArray[np.int32]:
    buffer = array.buffers()[1]
    if buffer is None:  # pragma: no cover - a string array always has offsets
        return np.zeros(len(array) + 1, dtype=np.int32)
    return np.frombuffer(
        memoryview(buffer), dtype=np.int32, count=len(array) + 1, offset=4 * array.offset
    )


string_offsets = _offsets
"""The offsets of a string array's values (a view of its buffer)."""


def _data(array: pa.Array[Any]) -> npt.NDArray[np.uint8]:
    buffer = array.buffers()[2]
    if buffer is None:
        return np.zeros(1, dtype=np.uint8)
    return np.frombuffer(memoryview(buffer), dtype=np.uint8)


@functools.lru_cache(maxsize=8)
def _wanted_keys(keys: tuple[str, ...]) -> tuple[npt.NDArray[np.uint8], I64, I64, I64]:
    """Lay out the wanted keys: bytes, offsets, slots by length and last byte, indices.

    Made once per list of keys (not once per chunk: a log has hundreds of chunks).
    """
    encoded = sorted(
        (len(key.encode()) * 256 + key.encode()[-1], key.encode(), i)
        for i, key in enumerate(keys)
        if key
    )
    slot_of = np.array([slot for slot, _, _ in encoded], dtype=np.int64)
    lengths = np.array([len(key) for _, key, _ in encoded], dtype=np.int64)
    wanted_offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(lengths, out=wanted_offsets[1:])
    wanted_data = np.frombuffer(b"".join(key for _, key, _ in encoded) + bytes(8), dtype=np.uint8)
    longest = int(lengths.max(initial=0))
    slots = np.searchsorted(slot_of, np.arange((longest + 2) * 256 + 1)).astype(np.int64)
    key_ids = np.array([i for _, _, i in encoded], dtype=np.int64)
    for array in (wanted_data, wanted_offsets, slots, key_ids):
        array.flags.writeable = False
    return wanted_data, wanted_offsets, slots, key_ids


def index_keys(
    map_offsets: I64,
    names: pa.Array[Any],
    values: pa.Array[Any],
    keys: list[str],
    drop_last: Bools,
    table: npt.NDArray[np.integer[Any]],
    row0: int,
    position0: int,
    integer_of: I64 | None = None,
    integers: I64 | None = None,
    others: I64 | None = None,
) -> None:
    """Index one chunk's entries with the kernel (see :func:`_index_keys`).

    ``map_offsets`` start at 0 and ``names`` and ``values`` are the chunk's keys and items
    sliced to them, plain ``string`` arrays without nulls (see :func:`applies`); a kept entry
    ``e`` of the chunk gets position ``position0 + e``, and the chunk's rows of ``table`` are
    written whole (−1 where no entry is kept): it may come unfilled (``numpy.empty``). An
    empty key is never wanted (no attribute has an empty name). ``integer_of``, ``integers``
    and ``others``: the keys also read as integers, where, and their values in another form
    (see :func:`_index_keys`).
    """
    wanted_data, wanted_offsets, slots, key_ids = _wanted_keys(tuple(keys))
    key_data = _data(names)
    _compile_kernel()
    _index_keys(
        map_offsets,
        _offsets(names),
        key_data,
        _words(key_data),
        _offsets(values),
        wanted_data,
        _words(wanted_data),
        wanted_offsets,
        slots,
        key_ids,
        drop_last,
        table,
        row0,
        position0,
        _data(values),
        np.full(len(keys), -1, dtype=np.int64) if integer_of is None else integer_of,
        np.empty((0, 1), dtype=np.int64) if integers is None else integers,
        np.zeros(1, dtype=np.int64) if others is None else others,
    )


def applies(names: pa.Array[Any], values: pa.Array[Any]) -> bool:
    """Whether :func:`index_keys` reads a chunk's ``names`` and ``values`` (keys and items)."""
    if not (pa.types.is_string(names.type) and pa.types.is_string(values.type)):
        return False
    return not (names.null_count or values.null_count)


# --------------------------------------------------------------------------------------------
# exec_host

EXEC_HOST_KERNEL_ROWS = 20_000
"""exec_host values (attempts) from which :func:`exec_hosts` is used (a 100k-line log has ~20k)."""

_SLASH, _PLUS, _COMMA, _DASH, _STAR = 47, 43, 44, 45, 42
_ZERO, _NINE, _PRINTABLE_LOW, _PRINTABLE_HIGH = 48, 57, 33, 126
_MAX_DIGITS = 9
_SORT_IN_PLACE = 32
"""A row's intervals up to this many are sorted by insertion (else by ``np.argsort``)."""


def _read_number(data: npt.NDArray[np.uint8], start: int, stop: int) -> tuple[int, int]:
    """Read 1 to 9 ASCII digits from ``start``: (value, end), or (-1, start) for none or more."""
    value = 0
    position = start
    while position < stop and _ZERO <= data[position] <= _NINE:
        value = value * 10 + (data[position] - _ZERO)
        position += 1
    if position == start or position - start > _MAX_DIGITS:
        return -1, start
    return value, position


def _parse_exec_hosts(
    offsets: npt.NDArray[np.int32],
    data: npt.NDArray[np.uint8],
    valid: Bools,
    ok: Bools,
    cores: I64,
    host_counts: I64,
    host_starts: I64,
    host_stops: I64,
    interval_host: I64,
    interval_low: I64,
    interval_high: I64,
    order: I64,
) -> int:
    """Read ``host/slots+...`` values; return the number of (row, host) pairs written.

    The syntax and result of :func:`_fast_exec_hosts <gridtrace.logs._torque_jobs>`: hosts of
    printable ASCII without ``/`` or ``+``, slots of comma-separated ``i``, ``i-j`` (``j >= i``)
    or ``i*n``, numbers of 1 to 9 ASCII digits. A row in another form gets ``ok`` false.
    ``interval_*`` and ``order`` are room for one row's intervals (at least half its bytes,
    plus one): given, not grown here (an array reassigned in the loop costs several times the
    parse itself).
    """
    n_hosts = 0
    small_keys = np.empty(_SORT_IN_PLACE, dtype=np.int64)
    for row in range(len(valid)):
        if not valid[row]:
            continue
        start, stop = offsets[row], offsets[row + 1]
        first_host = n_hosts
        n_intervals = 0
        counted = 0
        good = stop > start
        position = start
        while good and position < stop:
            host_start = position
            while position < stop and data[position] != _SLASH and data[position] != _PLUS:
                byte = data[position]
                if byte < _PRINTABLE_LOW or byte > _PRINTABLE_HIGH:
                    good = False
                    break
                position += 1
            if not good or position == host_start or position >= stop or data[position] != _SLASH:
                good = False
                break
            host_stop = position
            position += 1  # the slash
            # the host's number among the row's distinct hosts
            size = host_stop - host_start
            host = -1
            for other in range(first_host, n_hosts):
                if host_stops[other] - host_starts[other] != size:
                    continue
                same = True
                for i in range(size):
                    if data[host_starts[other] + i] != data[host_start + i]:
                        same = False
                        break
                if same:
                    host = other - first_host
                    break
            if host < 0:
                host = n_hosts - first_host
                host_starts[n_hosts] = host_start
                host_stops[n_hosts] = host_stop
                n_hosts += 1
            # the slots: items up to the next + or the end
            while True:
                low, position = _read_number(data, position, stop)
                if low < 0:
                    good = False
                    break
                high = low
                if position < stop and (data[position] == _DASH or data[position] == _STAR):
                    operator = data[position]
                    high, position = _read_number(data, position + 1, stop)
                    if high < 0 or (operator == _DASH and high < low):
                        good = False
                        break
                    if operator == _STAR:
                        counted += high
                        high = -1  # no interval
                if high >= 0:
                    interval_host[n_intervals] = host
                    interval_low[n_intervals] = low
                    interval_high[n_intervals] = high
                    n_intervals += 1
                if position >= stop:
                    break
                if data[position] == _COMMA:
                    position += 1
                    continue
                if data[position] == _PLUS:
                    position += 1
                    if position >= stop:
                        good = False  # a trailing +: an empty part
                    break
                good = False
                break
        if not good:
            n_hosts = first_host
            continue
        # the distinct (host, index) pairs: the union of each host's intervals
        if n_intervals > _SORT_IN_PLACE:
            keys = interval_host[:n_intervals] * (1 << 31) + interval_low[:n_intervals]
            by_key = np.argsort(keys)
            for k in range(n_intervals):
                order[k] = by_key[k]
        else:  # few intervals (the usual case): sorted in place, no allocation per row
            for k in range(n_intervals):
                key = interval_host[k] * (1 << 31) + interval_low[k]
                at = k
                while at > 0 and small_keys[at - 1] > key:
                    small_keys[at] = small_keys[at - 1]
                    order[at] = order[at - 1]
                    at -= 1
                small_keys[at] = key
                order[at] = k
        total = counted
        reach = -1
        previous_host = -1
        for visit in range(n_intervals):
            k = order[visit]
            if interval_host[k] != previous_host:
                previous_host = interval_host[k]
                reach = -1
            low, high = interval_low[k], interval_high[k]
            if high > reach:
                total += high - max(low - 1, reach)
                reach = high
        ok[row] = True
        cores[row] = total
        host_counts[row] = n_hosts - first_host
    return n_hosts


def exec_hosts(text: pa.Array[Any]) -> tuple[I64, pa.Array[Any], I64, Bools] | None:
    """Read ``exec_host`` values with the kernel, as ``_fast_exec_hosts`` does with arrays.

    Returns the (row, host) pairs in order, each row's cores (``-1`` where not read) and which
    rows were read; None when ``text`` is not a plain ``string`` array.
    """
    if not pa.types.is_string(text.type):
        return None
    n = len(text)
    offsets = _offsets(text)
    data = _data(text)
    valid = (
        np.ones(n, dtype=bool)
        if not text.null_count
        else np.asarray(text.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    )
    used = data[int(offsets[0]) : int(offsets[-1])]
    room = n + int(np.count_nonzero(used == _PLUS))
    ok = np.zeros(n, dtype=bool)
    cores = np.full(n, -1, dtype=np.int64)
    counts = np.zeros(n, dtype=np.int64)
    starts = np.empty(room, dtype=np.int64)
    stops = np.empty(room, dtype=np.int64)
    # a row's intervals: each takes a digit and a separator, but the last one
    longest = int(np.diff(offsets).max(initial=0)) // 2 + 1
    intervals = [np.empty(longest, dtype=np.int64) for _ in range(4)]
    _compile_kernel()
    total = _parse_exec_hosts(offsets, data, valid, ok, cores, counts, starts, stops, *intervals)
    starts, stops = starts[:total], stops[:total]
    sizes = stops - starts
    name_offsets = np.zeros(total + 1, dtype=np.int32)
    np.cumsum(sizes, out=name_offsets[1:])
    spans = np.repeat(starts - name_offsets[:-1], sizes) + np.arange(int(sizes.sum()))
    buffers = [
        None,
        pa.array(name_offsets, pa.int32()).buffers()[1],
        pa.array(data[spans], pa.uint8()).buffers()[1],
    ]
    names = pa.Array.from_buffers(pa.string(), total, buffers)
    rows = np.repeat(np.arange(n, dtype=np.int64), counts)
    return rows, names, cores, ok


# --------------------------------------------------------------------------------------------
# the order rows are visited in


def _visits(order: I64 | None, rows: int) -> I64:
    if order is None:
        return np.arange(rows, dtype=np.int64)
    return np.ascontiguousarray(order, dtype=np.int64)


def visits(records: I64) -> I64:
    """Order attempts by ``records`` (a record row each): their values' order in memory.

    The kernels that read several values of every attempt (:func:`first_positions`,
    :func:`read_values`, :func:`gather_strings`) visit the attempts in this order: the
    records' table rows and values are then read forwards through memory, where the
    processor's prefetching finds them, instead of at random (a cache miss each).
    """
    return np.argsort(records, kind="stable").astype(np.int64)


# --------------------------------------------------------------------------------------------
# numbers read in place: integers, durations and memory sizes at given value positions

INTEGER, DURATION, MEMORY = 0, 1, 2
"""What :func:`read_values` reads: ``-?\\d{1,18}``; ``\\d{1,12}`` or ``\\d{1,9}:\\d{1,2}:\\d{1,2}``;
``\\d{1,12}[kmgtp]?[bw]`` (any case) below 2**62 bytes."""

_COLON, _MINUS = 58, 45
_LOWER = 32  # ASCII letter | 32: its lower case
_NA = np.iinfo(np.int64).min
_OTHER = _NA + 1


def _read_one(data: npt.NDArray[np.uint8], start: int, stop: int, mode: int) -> int:
    """Read ``data[start:stop]`` as ``mode`` says (see :data:`INTEGER`); :data:`_OTHER` if not."""
    cursor = start
    negative = False
    if mode == 0 and cursor < stop and data[cursor] == _MINUS:
        negative = True
        cursor += 1
    first = 0
    digits = 0
    while cursor < stop and _ZERO <= data[cursor] <= _NINE:
        first = first * 10 + (data[cursor] - _ZERO)
        digits += 1
        cursor += 1
        if digits > 18:
            break
    if digits == 0:
        return _OTHER
    if mode == 0:
        if cursor != stop or digits > 18:
            return _OTHER
        return -first if negative else first
    elif mode == 1:
        if cursor == stop:
            if digits > 12:
                return _OTHER
            return first
        if digits > 9 or data[cursor] != _COLON:
            return _OTHER
        total = first * 3600
        good = True
        for scale in (60, 1):
            cursor += 1
            part = 0
            size = 0
            while cursor < stop and _ZERO <= data[cursor] <= _NINE and size < 3:
                part = part * 10 + (data[cursor] - _ZERO)
                size += 1
                cursor += 1
            if (
                size == 0
                or size > 2
                or (scale == 60 and (cursor >= stop or data[cursor] != _COLON))
            ):
                good = False
                break
            total += part * scale
        if not good or cursor != stop:
            return _OTHER
        return total
    else:
        if digits > 12 or cursor >= stop:
            return _OTHER
        factor = 1
        letter = data[cursor] | _LOWER
        power = -1
        if letter == 107:  # k
            power = 1
        elif letter == 109:  # m
            power = 2
        elif letter == 103:  # g
            power = 3
        elif letter == 116:  # t
            power = 4
        elif letter == 112:  # p
            power = 5
        if power > 0:
            cursor += 1
            for _ in range(power):
                factor *= 1024
        if cursor + 1 != stop:
            return _OTHER
        letter = data[cursor] | _LOWER
        if letter == 119:  # w
            factor *= 8
        elif letter != 98:  # b
            return _OTHER
        if float(first) * float(factor) >= 2.0**62:
            return _OTHER
        return first * factor


def _read_values(
    offsets: npt.NDArray[np.int32],
    data: npt.NDArray[np.uint8],
    positions: npt.NDArray[np.integer[Any]],
    columns: I64,
    modes: I64,
    out: I64,
    others: I64,
    order: I64,
) -> None:
    """Read, for each row of ``positions``, the values at its ``columns`` (−1: none, NA).

    ``out[k, row]`` gets the number at ``positions[row, columns[k]]`` read as ``modes[k]``
    says; ``others[k]`` counts the values of column ``k`` in another form (their ``out`` is
    NA): the caller then reads that column by the reference path. A row's values lie side by
    side in ``data`` (one record's entries are numbered in turn): row by row, they are read
    from one or two cache lines instead of one miss per value. Rows are visited in ``order``
    (their records' order, so that the values are read in the order they lie in memory).
    """
    for visit in range(len(order)):
        row = order[visit]
        for k in range(len(columns)):
            position = positions[row, columns[k]]
            out[k, row] = _NA
            if position < 0:
                continue
            value = _read_one(data, offsets[position], offsets[position + 1], modes[k])
            if value == _OTHER:
                others[k] += 1
            else:
                out[k, row] = value


def read_values(
    values: pa.Array[Any],
    positions: npt.NDArray[np.integer[Any]],
    columns: Sequence[int],
    modes: Sequence[int],
    order: I64 | None = None,
) -> list[I64 | None]:
    """Read the numbers at ``positions[:, columns]`` of ``values`` with the kernel (NA where −1).

    ``order``, a permutation of the rows, is the order they are read in (see :func:`visits`).

    Returns one array per column, None for a column with a value in another form (or all None
    when ``values`` is not a plain ``string`` array without nulls): the caller then reads that
    column by its reference path.
    """
    if not pa.types.is_string(values.type) or values.null_count:
        return [None] * len(columns)
    rows = positions.shape[0]
    out = np.empty((len(columns), rows), dtype=np.int64)
    others = np.zeros(len(columns), dtype=np.int64)
    if rows:
        _compile_kernel()
        _read_values(
            _offsets(values),
            _data(values),
            np.ascontiguousarray(positions),
            np.asarray(columns, dtype=np.int64),
            np.asarray(modes, dtype=np.int64),
            out,
            others,
            _visits(order, rows),
        )
    return [None if others[k] else out[k] for k in range(len(columns))]


# --------------------------------------------------------------------------------------------
# positions of every key for a list of source records


def _first_positions(
    table: npt.NDArray[np.integer[Any]],
    sources: I64,
    out: npt.NDArray[np.integer[Any]],
    order: I64,
) -> None:
    """``out[key, i]``: ``table[r, key]`` of the first ``r`` of ``sources[:, i]`` that has it.

    −1 when none has it (a source of −1 is no record). Row by row, in ``order``: each source's
    table row is read whole, one or two cache lines, instead of a miss per key.
    """
    for visit in range(len(order)):
        i = order[visit]
        for key in range(table.shape[1]):
            out[key, i] = -1
        for s in range(sources.shape[0]):
            row = sources[s, i]
            if row < 0:
                continue
            for key in range(table.shape[1]):
                if out[key, i] < 0:
                    out[key, i] = table[row, key]


def first_positions(
    table: npt.NDArray[np.integer[Any]], sources: Sequence[I64], order: I64 | None = None
) -> npt.NDArray[np.integer[Any]]:
    """For each key (column of ``table``) and row, its position in the first source that has it.

    What ``table[sources[0]]``, then ``table[sources[1]]`` where still −1, ... give (a source
    row of −1 is none), transposed: a line per key. ``order``: as in :func:`read_values`.
    """
    stacked = np.ascontiguousarray(
        np.vstack([np.asarray(rows, dtype=np.int64) for rows in sources])
    )
    out = np.empty((table.shape[1], stacked.shape[1]), dtype=table.dtype)
    _compile_kernel()
    _first_positions(np.ascontiguousarray(table), stacked, out, _visits(order, stacked.shape[1]))
    return out


# --------------------------------------------------------------------------------------------
# strings of several keys gathered row by row


def _string_sizes(
    offsets: npt.NDArray[np.int32],
    positions: npt.NDArray[np.integer[Any]],
    sizes: I64,
    order: I64,
) -> None:
    """``sizes[k, i]``: the length of the value at ``positions[k, i]`` (0 for −1), in ``order``."""
    for visit in range(len(order)):
        i = order[visit]
        for k in range(positions.shape[0]):
            position = positions[k, i]
            sizes[k, i] = 0 if position < 0 else offsets[position + 1] - offsets[position]


def _copy_strings(
    offsets: npt.NDArray[np.int32],
    data: npt.NDArray[np.uint8],
    positions: npt.NDArray[np.integer[Any]],
    out_offsets: npt.NDArray[np.int32],
    out_data: npt.NDArray[np.uint8],
    bases: I64,
    order: I64,
) -> None:
    """Copy the value at ``positions[k, i]`` to ``out_data[bases[k] + out_offsets[k, i]:]``."""
    for visit in range(len(order)):
        i = order[visit]
        for k in range(positions.shape[0]):
            position = positions[k, i]
            if position < 0:
                continue
            cursor = bases[k] + out_offsets[k, i]
            for byte in range(offsets[position], offsets[position + 1]):
                out_data[cursor] = data[byte]
                cursor += 1


def gather_strings(
    values: pa.Array[Any], positions: npt.NDArray[np.integer[Any]], order: I64 | None = None
) -> list[pa.Array[Any]] | None:
    """``values.take(positions[k])`` for every line ``k`` (null where −1), row by row.

    ``order``: as in :func:`read_values`.

    The values of one record lie side by side: gathering every key of a row at once reads
    them from a cache line or two instead of a miss per key and value. None when ``values`` is
    not a plain ``string`` array without nulls, or a line's strings would not fit one array.
    """
    if not pa.types.is_string(values.type) or values.null_count:
        return None
    keys, rows = positions.shape
    source_offsets = _offsets(values)
    sizes = np.empty((keys, rows), dtype=np.int64)
    _compile_kernel()
    visits = _visits(order, rows)
    _string_sizes(source_offsets, positions, sizes, visits)
    totals = sizes.sum(axis=1)
    if rows and int(totals.max()) >= np.iinfo(np.int32).max:
        return None
    out_offsets = np.zeros((keys, rows + 1), dtype=np.int32)
    np.cumsum(sizes, axis=1, out=out_offsets[:, 1:])
    bases = np.zeros(keys + 1, dtype=np.int64)
    np.cumsum(totals, out=bases[1:])
    out_data = np.empty(max(int(bases[-1]), 1), dtype=np.uint8)
    _copy_strings(source_offsets, _data(values), positions, out_offsets, out_data, bases, visits)
    arrays: list[pa.Array[Any]] = []
    for k in range(keys):
        missing = positions[k] < 0
        nulls = int(np.count_nonzero(missing))
        validity = pa.py_buffer(np.packbits(~missing, bitorder="little").data) if nulls else None
        buffers = [
            validity,
            pa.py_buffer(out_offsets[k].data),
            pa.py_buffer(out_data[int(bases[k]) : max(int(bases[k + 1]), int(bases[k]) + 1)].data),
        ]
        arrays.append(pa.Array.from_buffers(pa.string(), rows, buffers, null_count=nulls))
    return arrays


# --------------------------------------------------------------------------------------------
# a hash of the value at each position (what two equal values share)

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


def _hash_values(
    offsets: npt.NDArray[np.int32],
    data: npt.NDArray[np.uint8],
    positions: npt.NDArray[np.integer[Any]],
    out: npt.NDArray[np.uint64],
) -> None:
    """``out[i]``: the FNV-1a hash of the value at ``positions[i]``, 0 where −1 (no value)."""
    for i in range(len(positions)):
        position = positions[i]
        if position < 0:
            out[i] = 0
            continue
        h = _FNV_OFFSET
        for byte in range(offsets[position], offsets[position + 1]):
            h = (h ^ np.uint64(data[byte])) * _FNV_PRIME
        out[i] = h


def value_hashes(
    values: pa.Array[Any], positions: npt.NDArray[np.integer[Any]]
) -> npt.NDArray[np.uint64] | None:
    """Hash ``values[positions]`` (0 where −1) in 64 bits; None if not a plain string array.

    Equal values get equal hashes (different ones almost always different ones): enough to
    pick candidate duplicates, which are then compared in full.
    """
    if not pa.types.is_string(values.type) or values.null_count:
        return None
    out = np.empty(len(positions), dtype=np.uint64)
    _compile_kernel()
    _hash_values(_offsets(values), _data(values), np.ascontiguousarray(positions), out)
    return out


# --------------------------------------------------------------------------------------------
# a stable order of small integer codes


def _counting_order(codes: I64, starts: I64, out: I64) -> None:
    """Place each row after the rows of smaller codes and the earlier rows of its own code.

    ``starts[c]`` is where code ``c``'s rows begin in ``out`` (advanced as rows are placed).
    """
    for row in range(len(codes)):
        code = codes[row]
        out[starts[code]] = row
        starts[code] += 1


def stable_order(codes: I64, size: int) -> I64:
    """``np.argsort(codes, kind="stable")`` for ``codes`` in ``0 .. size - 1``, by counting."""
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    starts = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(codes, minlength=size), out=starts[1:])
    out = np.empty(len(codes), dtype=np.int64)
    _compile_kernel()
    _counting_order(codes, starts, out)
    return out


# --------------------------------------------------------------------------------------------
# integer keys numbered in order of first appearance, and keys seen more than once

_PROBE_BUDGET = 8
"""Probes per key a hash table may take on average before its pass gives up (see below)."""


def _table_size(keys: int) -> int:
    """Slots for ``keys`` keys: a power of two, at most half of them taken."""
    size = 16
    while size < 2 * keys:
        size *= 2
    return size


def _number_keys(
    keys: I64, near: I64, slot_keys: I64, slot_codes: I64, out: I64, budget: int
) -> int:
    """``out[i]``: the number of ``keys[i]`` in order of first appearance; return how many.

    An open-addressing table whose slot is ``near[i]`` (masked): a key's neighbours in time
    (job ids numbered in turn) take neighbouring slots, read from the cache, instead of a
    miss each. Returns −1 when the probes exceed ``budget`` (keys that crowd a few slots):
    the caller then numbers them another way.
    """
    mask = len(slot_keys) - 1
    distinct = 0
    probes = 0
    for i in range(len(keys)):
        key = keys[i]
        slot = near[i] & mask
        while True:
            code = slot_codes[slot]
            if code < 0:
                slot_keys[slot] = key
                slot_codes[slot] = distinct
                out[i] = distinct
                distinct += 1
                break
            if slot_keys[slot] == key:
                out[i] = code
                break
            slot = (slot + 1) & mask
            probes += 1
        if probes > budget:
            return -1
    return distinct


def _seen_counts(
    keys: I64, near: I64, slot_keys: I64, slot_near: I64, slot_counts: I64, slot_of: I64
) -> bool:
    """Count each pair (``keys[i]``, ``near[i]``) in a table placed by ``near``; ``slot_of``: where.

    Returns False when the probes exceed :data:`_PROBE_BUDGET` per pair.
    """
    mask = len(slot_keys) - 1
    budget = _PROBE_BUDGET * len(keys) + 1024
    probes = 0
    for i in range(len(keys)):
        key = keys[i]
        hint = near[i]
        slot = hint & mask
        while True:
            if slot_counts[slot] == 0:
                slot_keys[slot] = key
                slot_near[slot] = hint
                slot_counts[slot] = 1
                break
            if slot_keys[slot] == key and slot_near[slot] == hint:
                slot_counts[slot] += 1
                break
            slot = (slot + 1) & mask
            probes += 1
        slot_of[i] = slot
        if probes > budget:
            return False
    return True


def _near_slots(keys: I64) -> I64:
    """Give each key a slot that keeps neighbours together: its low bits mixed with its high ones.

    Packed job ids (:func:`job_id_keys`: sequence above bit 31, index below) and small codes
    both fall, one after the other, into consecutive slots.
    """
    unsigned = keys.view(np.uint64)
    mixed: npt.NDArray[np.uint64] = unsigned ^ (unsigned >> np.uint64(31))
    return mixed.view(np.int64)


def first_seen_numbers(keys: I64) -> I64 | None:
    """Give ``keys`` numbers in order of first appearance (``pandas.factorize(keys)[0]``).

    None when the keys crowd the hash table (the caller then uses pandas).
    """
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    size = _table_size(len(keys))
    slot_keys = np.empty(size, dtype=np.int64)
    slot_codes = np.full(size, -1, dtype=np.int64)
    out = np.empty(len(keys), dtype=np.int64)
    _compile_kernel()
    budget = _PROBE_BUDGET * len(keys) + 1024
    if _number_keys(keys, _near_slots(keys), slot_keys, slot_codes, out, budget) < 0:
        return None
    return out


def seen_more_than_once(keys: I64, near: I64) -> Bools | None:
    """Which rows' pairs (``keys``, ``near``) occur more than once (``duplicated(keep=False)``).

    ``near`` also places each pair in the hash table (see :func:`_number_keys`): for keys that
    are hashes, a column whose neighbours in time are near (a stamp), that equal keys share
    where it matters. None when the pairs crowd the table.
    """
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    size = _table_size(len(keys))
    slot_keys = np.empty(size, dtype=np.int64)
    slot_near = np.empty(size, dtype=np.int64)
    slot_counts = np.zeros(size, dtype=np.int64)
    slot_of = np.empty(len(keys), dtype=np.int64)
    hints = np.ascontiguousarray(near, dtype=np.int64)
    _compile_kernel()
    if not _seen_counts(keys, hints, slot_keys, slot_near, slot_counts, slot_of):
        return None
    return np.asarray(slot_counts[slot_of] > 1, dtype=bool)


# --------------------------------------------------------------------------------------------
# job ids: sequence number, array index, whether an array's parent

_OPEN, _CLOSE, _DOT, _NEWLINE, _ASCII = 91, 93, 46, 10, 128


def _parse_job_ids(
    offsets: npt.NDArray[np.int32],
    data: npt.NDArray[np.uint8],
    seq: I64,
    index: I64,
    matched: Bools,
    parent: Bools,
) -> int:
    r"""Read ids as ``^(\d{1,18})(?:\[(\d{0,9})\]|-(\d{1,9}))?(?:\..*)?$`` does.

    ``seq`` and ``index`` get the numbers (``NA`` when not matched, or no index: ``[]`` has
    none), ``matched`` whether the id has that form, ``parent`` whether it starts with
    ``\d+\[\]``. Returns the number of ids with a byte this does not read as the
    regular expression would (a newline or a byte beyond ASCII): the caller then uses it.
    """
    unsure = 0
    for row in range(len(seq)):
        start, stop = offsets[row], offsets[row + 1]
        seq[row] = _NA
        index[row] = _NA
        matched[row] = False
        parent[row] = False
        for byte in range(start, stop):
            if data[byte] == _NEWLINE or data[byte] >= _ASCII:
                unsure += 1
                break
        position = start
        value = 0
        while position < stop and _ZERO <= data[position] <= _NINE:
            if position - start < 19:
                value = value * 10 + (data[position] - _ZERO)
            position += 1
        digits = position - start
        if digits and position + 1 < stop:
            parent[row] = data[position] == _OPEN and data[position + 1] == _CLOSE
        if digits == 0 or digits > 18:
            continue
        number = _NA
        good = True
        if position < stop and (data[position] == _OPEN or data[position] == _MINUS):
            bracket = data[position] == _OPEN
            cursor = position + 1
            part = 0
            while cursor < stop and _ZERO <= data[cursor] <= _NINE and cursor - position <= 10:
                part = part * 10 + (data[cursor] - _ZERO)
                cursor += 1
            size = cursor - position - 1
            if bracket:
                if size > 9 or cursor >= stop or data[cursor] != _CLOSE:
                    good = False
                else:
                    if size:
                        number = part
                    cursor += 1
            elif size == 0 or size > 9:
                good = False
            else:
                number = part
            position = cursor
        if good and position < stop and data[position] != _DOT:
            good = False
        if good:
            matched[row] = True
            seq[row] = value
            index[row] = number
    return unsure


def job_id_parts(ids: pa.Array[Any]) -> tuple[I64, I64, Bools, Bools] | None:
    """Sequence number, array index, matched and parent of each id (see :func:`_parse_job_ids`).

    None when ``ids`` is not a plain ``string`` array without nulls, or an id holds a byte the
    kernel does not read as the regular expression would.
    """
    if not pa.types.is_string(ids.type) or ids.null_count:
        return None
    n = len(ids)
    seq = np.empty(n, dtype=np.int64)
    index = np.empty(n, dtype=np.int64)
    matched = np.empty(n, dtype=bool)
    parent = np.empty(n, dtype=bool)
    _compile_kernel()
    if _parse_job_ids(_offsets(ids), _data(ids), seq, index, matched, parent):
        return None
    return seq, index, matched, parent


def _pack_and_hash(
    offsets: npt.NDArray[np.int32],
    data: npt.NDArray[np.uint8],
    seq: I64,
    index: I64,
    packed: I64,
    hashed: npt.NDArray[np.uint64],
) -> bool:
    """``packed``: (sequence, index) in one integer; ``hashed``: FNV-1a of each id's bytes.

    ``packed`` is ``seq << 31`` plus ``index + 1`` (0 without an index), −1 without a
    sequence; returns False (``packed`` unusable) when a sequence reaches ``2**32``.
    """
    fits = True
    for row in range(len(seq)):
        h = _FNV_OFFSET
        for byte in range(offsets[row], offsets[row + 1]):
            h = (h ^ np.uint64(data[byte])) * _FNV_PRIME
        hashed[row] = h
        number = seq[row]
        if number == _NA:
            packed[row] = -1
            continue
        if number >= 1 << 32:
            fits = False
        packed[row] = (number << 31) + (0 if index[row] == _NA else index[row] + 1)
    return fits


def job_id_keys(
    ids: pa.Array[Any], seq: I64, index: I64
) -> tuple[I64 | None, npt.NDArray[np.uint64]]:
    """Each id's (sequence, index) packed in one integer (None if they do not fit), and hash.

    ``seq`` and ``index`` are :func:`job_id_parts`'s; the hash is :func:`value_hashes`'s.
    """
    n = len(ids)
    packed = np.empty(n, dtype=np.int64)
    hashed = np.empty(n, dtype=np.uint64)
    _compile_kernel()
    fits = _pack_and_hash(_offsets(ids), _data(ids), seq, index, packed, hashed)
    return (packed if fits else None), hashed


# --------------------------------------------------------------------------------------------
# local stamps ``MM/DD/YYYY HH:MM:SS``

_STAMP_SIZE = 19
_STAMP_DIGITS = (0, 1, 3, 4, 6, 7, 8, 9, 11, 12, 14, 15, 17, 18)
_STAMP_MARKS = ((2, 47), (5, 47), (10, 32), (13, 58), (16, 58))  # / / space : :
_MIN_YEAR = 1000


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    y = year - 1 if month <= 2 else year
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (month - 3 if month > 2 else month + 9) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _parse_stamps(
    offsets: npt.NDArray[np.int32],
    data: npt.NDArray[np.uint8],
    valid: Bools,
    out: I64,
    done: Bools,
) -> None:
    """Read each valid stamp of exactly the form ``MM/DD/YYYY HH:MM:SS`` as seconds (naive).

    Only a real date and time of day (a year from 1000, a day its month has, seconds up to
    59) is read (``done``); any other stamp is left to ``strptime``.
    """
    for row in range(len(out)):
        done[row] = False
        if not valid[row]:
            continue
        start = offsets[row]
        if offsets[row + 1] - start != _STAMP_SIZE:
            continue
        good = True
        for at in _STAMP_DIGITS:
            byte = data[start + at]
            if byte < _ZERO or byte > _NINE:
                good = False
                break
        if not good:
            continue
        for at, mark in _STAMP_MARKS:
            if data[start + at] != mark:
                good = False
                break
        if not good:
            continue
        month = (data[start] - _ZERO) * 10 + data[start + 1] - _ZERO
        day = (data[start + 3] - _ZERO) * 10 + data[start + 4] - _ZERO
        year = (
            (data[start + 6] - _ZERO) * 1000
            + (data[start + 7] - _ZERO) * 100
            + (data[start + 8] - _ZERO) * 10
            + data[start + 9]
            - _ZERO
        )
        hour = (data[start + 11] - _ZERO) * 10 + data[start + 12] - _ZERO
        minute = (data[start + 14] - _ZERO) * 10 + data[start + 15] - _ZERO
        second = (data[start + 17] - _ZERO) * 10 + data[start + 18] - _ZERO
        if month < 1 or month > 12 or day < 1 or year < _MIN_YEAR:
            continue
        if hour > 23 or minute > 59 or second > 59:
            continue
        days_in_month = 31
        if month == 2:
            leap = (year % 4 == 0 and year % 100 != 0) or year % 400 == 0
            days_in_month = 29 if leap else 28
        elif month == 4 or month == 6 or month == 9 or month == 11:
            days_in_month = 30
        if day > days_in_month:
            continue
        out[row] = (
            _days_from_civil(int(year), int(month), int(day)) * 86400
            + hour * 3600
            + minute * 60
            + second
        )
        done[row] = True


def local_stamps(stamps: pa.Array[Any]) -> tuple[I64, Bools] | None:
    """Naive seconds of the stamps the kernel reads, and which (see :func:`_parse_stamps`).

    None when ``stamps`` is not a plain ``string`` array.
    """
    if not pa.types.is_string(stamps.type):
        return None
    n = len(stamps)
    valid = (
        np.ones(n, dtype=bool)
        if not stamps.null_count
        else np.asarray(stamps.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    )
    out = np.full(n, _NA, dtype=np.int64)
    done = np.empty(n, dtype=bool)
    _compile_kernel()
    _parse_stamps(_offsets(stamps), _data(stamps), valid, out, done)
    return out, done


# --------------------------------------------------------------------------------------------
# what each job group holds: record counts by type, ctime range, last and first rows


def _group_summary(
    order: I64,
    heads: I64,
    rtype: I64,
    ctime: I64,
    codes: I64,
    counts: I64,
    ct_low: I64,
    ct_high: I64,
    last_kind: I64,
    last_s: I64,
    last_q: I64,
    first_q: I64,
) -> None:
    """Summarise each group ``order[heads[g]:heads[g + 1]]`` (record rows, ascending) in one pass.

    ``codes`` are the record types of :data:`_Q`, :data:`_S`, :data:`_E`, :data:`_D`,
    :data:`_R`, :data:`_A <gridtrace.logs._torque_jobs>` in that order; ``counts[t, g]``
    counts group ``g``'s records of type ``codes[t]``. ``ct_low``/``ct_high``: the smallest
    ctime other than ``NA`` (else the largest int64) and the largest (``NA`` if none);
    ``last_kind`` the type of its last record; ``last_s``/``last_q`` its last S/Q row (−1),
    ``first_q`` its first Q row (−1).
    """
    big = np.iinfo(np.int64).max
    groups = len(heads)
    for g in range(groups):
        start = heads[g]
        stop = heads[g + 1] if g + 1 < groups else len(order)
        for t in range(len(codes)):
            counts[t, g] = 0
        low, high = big, _NA
        s_row, q_last, q_first = -1, -1, -1
        for i in range(start, stop):
            row = order[i]
            kind = rtype[row]
            for t in range(len(codes)):
                if kind == codes[t]:
                    counts[t, g] += 1
            value = ctime[row]
            if value != _NA and value < low:
                low = value
            if value > high:
                high = value
            if kind == codes[1] and row > s_row:
                s_row = row
            if kind == codes[0]:
                if row > q_last:
                    q_last = row
                if q_first < 0 or row < q_first:
                    q_first = row
        ct_low[g] = low
        ct_high[g] = high
        last_kind[g] = rtype[order[stop - 1]]
        last_s[g] = s_row
        last_q[g] = q_last
        first_q[g] = q_first


def group_summary(
    order: I64, heads: I64, rtype: I64, ctime: I64, codes: Sequence[int]
) -> tuple[I64, I64, I64, I64, I64, I64, I64]:
    """Summarise the groups: counts by type (a line per code), ctime range, last and first rows.

    What ``np.add.reduceat``, ``np.minimum.reduceat`` and ``np.maximum.reduceat`` over the
    groups give (see :func:`_group_summary`), in one pass instead of a dozen.
    """
    groups = len(heads)
    counts = np.empty((len(codes), groups), dtype=np.int64)
    ct_low, ct_high, last_kind, last_s, last_q, first_q = (
        np.empty(groups, dtype=np.int64) for _ in range(6)
    )
    _compile_kernel()
    _group_summary(
        np.ascontiguousarray(order, dtype=np.int64),
        np.ascontiguousarray(heads, dtype=np.int64),
        rtype,
        ctime,
        np.asarray(codes, dtype=np.int64),
        counts,
        ct_low,
        ct_high,
        last_kind,
        last_s,
        last_q,
        first_q,
    )
    return counts, ct_low, ct_high, last_kind, last_s, last_q, first_q


# --------------------------------------------------------------------------------------------
# integer columns combined into one 64-bit key per row

_MIX = 1_000_003


def _combine(columns: tuple[I64, ...], out: npt.NDArray[np.uint64]) -> None:
    """``out[i]``: ``key = key * 1_000_003 ^ column[i]`` over the columns, in 64 bits."""
    mix = np.uint64(_MIX)
    for i in range(len(out)):
        key = np.uint64(0)
        for column in columns:
            key = key * mix ^ np.uint64(column[i])
        out[i] = key


def combined_keys(columns: Sequence[I64]) -> npt.NDArray[np.uint64]:
    """Combine integer ``columns`` row by row as :func:`_duplicate_lines` does, in one pass.

    What ``key = key * 1_000_003 ^ column.astype(np.int64).view(np.uint64)`` over the columns
    gives (a wrapping 64-bit product), without a temporary array per column and operation.
    """
    arrays = tuple(np.ascontiguousarray(column, dtype=np.int64) for column in columns)
    out = np.empty(len(arrays[0]) if arrays else 0, dtype=np.uint64)
    _compile_kernel()
    _combine(arrays, out)
    return out


# --------------------------------------------------------------------------------------------
# each record's offset from UTC, measured on its own epoch and carried along its file


def _measure_offsets(
    naive: I64,
    epoch: I64,
    segment: I64,
    quarter: int,
    max_offset: int,
    max_residual: int,
    unplaced: int,
    own: I64,
    offset: I64,
    bins: I64,
) -> int:
    """Measure and carry offsets as ``_measure <gridtrace.logs._torque_jobs>`` does (no zone).

    ``own``: the offset a record measures on its own epoch (rounded to ``quarter``, plausible
    within ``max_offset`` and ``max_residual``; else ``NA``); ``offset``: its own, else the
    nearest measured before it in its file (``segment``, runs in order), else after it, else
    ``unplaced``; ``NA`` where the stamp is unreadable. ``bins[q]`` counts the records that
    measured ``(q - max_offset // quarter) * quarter``. Returns the implausible measurements.
    (The forward pass keeps the offset measured before each record in ``offset``, which the
    backward pass reads at each record before writing it.)
    """
    steps = max_offset // quarter
    n = len(naive)
    outliers = 0
    last = _NA
    current = -1
    for i in range(n):
        value = _NA
        if naive[i] != _NA and epoch[i] != _NA and epoch[i] > 0:
            raw = naive[i] - epoch[i]
            rounded = (raw + quarter // 2) // quarter * quarter
            if abs(rounded) <= max_offset and abs(raw - rounded) <= max_residual:
                value = rounded
                bins[rounded // quarter + steps] += 1
            else:
                outliers += 1
        own[i] = value
        if segment[i] != current:
            current = segment[i]
            last = _NA
        if value != _NA:
            last = value
        offset[i] = last
    following = _NA
    current = -1
    for i in range(n - 1, -1, -1):
        if segment[i] != current:
            current = segment[i]
            following = _NA
        if own[i] != _NA:
            following = own[i]
        before = offset[i]
        if naive[i] == _NA:
            offset[i] = _NA
        elif own[i] != _NA:
            offset[i] = own[i]
        elif before != _NA:
            offset[i] = before
        elif following != _NA:
            offset[i] = following
        else:
            offset[i] = unplaced
    return outliers


def measured_offsets(
    naive: I64,
    epoch: I64,
    segment: I64,
    quarter: int,
    max_offset: int,
    max_residual: int,
    unplaced: int,
) -> tuple[I64, I64, int, I64]:
    """Own offsets, carried offsets, outliers and counts by offset (see :func:`_measure_offsets`).

    ``segment`` must number runs of rows in order (non-decreasing).
    """
    n = len(naive)
    own = np.empty(n, dtype=np.int64)
    offset = np.empty(n, dtype=np.int64)
    bins = np.zeros(2 * (max_offset // quarter) + 1, dtype=np.int64)
    _compile_kernel()
    outliers = _measure_offsets(
        np.ascontiguousarray(naive, dtype=np.int64),
        np.ascontiguousarray(epoch, dtype=np.int64),
        np.ascontiguousarray(segment, dtype=np.int64),
        quarter,
        max_offset,
        max_residual,
        unplaced,
        own,
        offset,
        bins,
    )
    return own, offset, int(outliers), bins
