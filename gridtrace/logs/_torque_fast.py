"""TORQUE / OpenPBS / PBS Pro accounting lines: the fast tokeniser, of a whole file or a chunk.

:func:`tokenize_torque` gives exactly the rows of
:func:`~gridtrace.logs._torque_lines.tokenize_torque_reference` (same rows, order, ``attrs`` entries
and order, flags, ``raw`` and quarantine), some twenty to thirty times faster.

How
---
Nearly every line of a real log is *clean*: printable ASCII, ``MM/DD/YYYY HH:MM:SS;T;id;`` at the
start, then ``key=value`` tokens with distinct keys. A compiled kernel (numba) walks the file's
bytes once, recognises those lines and copies their stamps, ids, keys and values straight into the
buffers of Arrow arrays, so no Python object is made per line or per token. Every other line
(NUL and other control characters, non-UTF-8 or any non-ASCII byte, a ``name:`` prefix, a bad
stamp, blank or garbage lines, free-text record types, bare tokens, repeated keys, the last line
when it has no line end) is *declined* and handed to
:func:`~gridtrace.logs._torque_lines.parse_torque_line`, the readable reference, so that there is
one definition of every repair and flag. The two sets of rows
are then put back in line order. The one flag a clean line can carry, ``CRLF`` (the line ended in
CR LF), the kernel sets itself, so that a file that passed through Windows stays on the fast path.

The kernel makes one pass over a chunk's bytes: the line count comes from the read, which counted
the lines already (:func:`tokenize_torque`'s ``lines``), and the room for tokens is guessed from
the chunk's size; only when either falls short are they counted and the pass made again. Ids,
keys and values are copied into scratch buffers as large as the chunk, then once more into
buffers of their exact size, so that the records table holds no scratch (and the allocator
reuses the scratch pages instead of mapping fresh ones for every chunk).

The kernel decides on the side of caution: a line it declines is always parsed right, only more
slowly. It does handle PBS Pro's double quotes itself (``account="my proj"``), since those are on
every end record of a PBS Pro log, with the reference's exact rule: a ``"`` toggles quoting, spaces
inside quotes do not split, a value is unquoted only when it starts and ends with ``"``.

numba is needed for the speed; without it :func:`tokenize_torque` falls back to the reference.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from gridtrace._log import library_logger
from gridtrace.logs._base import FileParse
from gridtrace.logs._kernels import HAVE_NUMBA, LazyKernel
from gridtrace.logs._torque_lines import (
    FREE_TEXT_TYPES,
    parse_torque_line,
    tokenize_torque_reference,
)
from gridtrace.schema import QUARANTINE, RECORDS

__all__ = [
    "HAVE_NUMBA",
    "SMALL_INPUT_LINES",
    "contains_any",
    "tokenize_torque",
    "tokenize_torque_any",
]

logger = library_logger(__name__)


# The kernel's functions, callees first. They are plain Python until first use, when
# _compile_kernel replaces each by its numba compilation: importing numba takes half a second,
# which only a program that reads TORQUE logs should pay.
_KERNEL = (
    "_count_lines",
    "_number",
    "_clean_head",
    "_line_end",
    "_key_hash",
    "_has_repeated_key",
    "_tokenize_chunk",
    "_has_marker",
)
_LAZY = LazyKernel(globals(), _KERNEL)
_compile_kernel = _LAZY.compile
_kernel_ready = _LAZY.ready

SMALL_INPUT_LINES = 20_000
"""Lines a process reads with the reference tokeniser before it loads the compiled kernel.

Importing numba and loading the kernel costs about a second with numba's cache warm and three to
five seconds without it; the reference reads some 50k lines/s. So a process's first lines (one
day's file of a site, typically) are read by the reference, which gives the same rows, and the
kernel is loaded once a file alone, or the lines read so far with it, reach this many lines.
"""
_reference_lines = 0
_reference_lock = threading.Lock()


U8 = npt.NDArray[np.uint8]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

_STAMP_LEN = 19  # "MM/DD/YYYY HH:MM:SS"
_HEAD_LEN = 22  # the stamp, then ";T;"
# Arrow string arrays have 32-bit offsets: a file is tokenised in pieces that stay well below 2 GiB.
_MAX_PIECE = 1 << 30
_MAX_OFFSET = (1 << 31) - 1
# The records of a file are left in this many chunks at most (see _interleave).
_MAX_CHUNKS = 64
# Slots of the hash set that finds a line's repeated keys; a line with more than half as many
# tokens is left to the reference.
_KEY_SLOTS = 4096
# Room for tokens before they are counted: one every this many bytes (real lines: one in ~23).
_TOKEN_BYTES = 8
# Byte values the kernel tests, named.
_LF, _CR, _SPACE, _QUOTE, _SLASH, _COLON, _SEMI, _EQUALS = 10, 13, 32, 34, 47, 58, 59, 61

# Classes of bytes in a message: most are _PLAIN, printable ASCII with no meaning to the tokeniser.
# Any byte below space or above '~' is _OTHER, CR included (a CR is allowed just before the LF).
_PLAIN, _BLANK, _SPECIAL, _NEWLINE, _OTHER = range(5)
_BYTE_CLASS = np.full(256, _OTHER, dtype=np.uint8)
_BYTE_CLASS[_SPACE + 1 : 127] = _PLAIN
_BYTE_CLASS[[_QUOTE, _EQUALS]] = _SPECIAL
_BYTE_CLASS[_SPACE] = _BLANK
_BYTE_CLASS[_LF] = _NEWLINE

# The record types whose message is free text: the kernel declines them (lookup table by byte).
_FREE_TEXT = np.zeros(256, dtype=np.bool_)
for _kind in FREE_TEXT_TYPES:
    _FREE_TEXT[ord(_kind)] = True


# --- the kernel --------------------------------------------------------------------------------


def _count_lines(buf: U8) -> tuple[int, bool, int]:
    """Count the lines as :func:`split_lines` does, and the ``=`` bytes (a bound on the tokens).

    Returns the number of lines, whether the last one has no line end, and the ``=`` count.
    """
    n_newlines = 0
    n_equals = 0
    for c in buf:  # branch-free, so that the compiler vectorises it
        n_newlines += c == _LF
        n_equals += c == _EQUALS
    last_open = buf.size > 0 and buf[buf.size - 1] != _LF
    return n_newlines + 1 if last_open else n_newlines, last_open, n_equals


def _number(buf: U8, p: int, width: int) -> int:
    """Read the ASCII decimal number in ``buf[p:p + width]``; -1 if a byte is not a digit."""
    value = 0
    for q in range(p, p + width):
        digit = int(buf[q]) - 48
        if digit < 0 or digit > 9:
            return -1
        value = 10 * value + digit
    return value


def _clean_head(buf: U8, s: int) -> bool:
    """Whether the line at ``s`` starts with a possible ``MM/DD/YYYY HH:MM:SS;T;``.

    The limits are those of the reference, which quarantines an impossible stamp. None of these
    bytes is a line end, so a match lies within the line.
    """
    if buf.size - s < _HEAD_LEN:
        return False
    if not (
        buf[s + 2] == _SLASH
        and buf[s + 5] == _SLASH
        and buf[s + 10] == _SPACE
        and buf[s + 13] == _COLON
        and buf[s + 16] == _COLON
        and buf[s + 19] == _SEMI
        and buf[s + 21] == _SEMI
    ):
        return False
    kind = buf[s + 20]
    if not (65 <= kind <= 90 or 97 <= kind <= 122):  # one ASCII letter
        return False
    month = _number(buf, s, 2)
    day = _number(buf, s + 3, 2)
    hour = _number(buf, s + 11, 2)
    minute = _number(buf, s + 14, 2)
    second = _number(buf, s + 17, 2)
    return (
        _number(buf, s + 6, 4) >= 0
        and 1 <= month <= 12
        and 1 <= day <= 31
        and 0 <= hour <= 23
        and 0 <= minute <= 59
        and 0 <= second <= 60
    )


def _line_end(buf: U8, q: int) -> int:
    """Find the first line end at or after ``q`` (the buffer's size if none)."""
    while q < buf.size and buf[q] != _LF:
        q += 1
    return q


def _key_hash(key_data: U8, lo: int, hi: int) -> int:
    """Hash the key ``key_data[lo:hi]`` from its length and three of its bytes.

    Equal keys hash equal, which is all the hash set needs; hashing every byte would cost more than
    the rare collision between different keys, which a byte comparison settles.
    """
    length = hi - lo
    if length == 0:
        return 0
    h = length * 131 + int(key_data[lo])
    h = h * 131 + int(key_data[lo + length // 2])
    return h * 131 + int(key_data[hi - 1])


def _has_repeated_key(
    key_offsets: I32,
    key_data: U8,
    first: int,
    last: int,
    line: int,
    slot_line: I64,
    slot_token: I64,
) -> bool:
    """Tell whether two of the keys ``first + 1 .. last``, those of line ``line``, are equal.

    An open-addressing hash set of the keys. A slot is taken when its ``slot_line`` is ``line``,
    so the table never needs clearing.
    """
    mask = slot_line.size - 1
    for k in range(first + 1, last + 1):
        lo = key_offsets[k - 1]
        length = key_offsets[k] - lo
        slot = _key_hash(key_data, lo, lo + length) & mask
        while slot_line[slot] == line:
            other = slot_token[slot]
            other_lo = key_offsets[other - 1]
            if key_offsets[other] - other_lo == length:
                same = True
                for d in range(length):
                    if key_data[lo + d] != key_data[other_lo + d]:
                        same = False
                        break
                if same:
                    return True
            slot = (slot + 1) & mask
        slot_line[slot] = line
        slot_token[slot] = k
    return False


def _tokenize_chunk(
    buf: U8, n_lines: int, open_from: int, token_room: int, free_text: Bools
) -> tuple[bool, I64, I64, Bools, U8, U8, I32, U8, I32, I32, U8, I32, U8, Bools]:
    """Tokenise every clean line straight into Arrow buffers, in one pass over the bytes.

    ``n_lines`` is the number of lines (the chunk's count, from the read) or more, and
    ``token_room`` the room for tokens (at least the ``=`` count plus :data:`_KEY_SLOTS`, to be
    sure); ``open_from`` is where the last line starts when it has no line end (the reference
    flags it: it is declined), else beyond the buffer. No pass to count either: when the lines
    outnumber ``n_lines`` or the tokens fill their room, the first result is False and the rest
    meaningless (the caller counts them and calls again).

    Returns that, the start and end (line end excluded) of every line, ``fast`` (per line:
    tokenised here, else declined), and for the fast lines in order: the record type bytes, the
    stamps (19 bytes each), offsets and bytes of the job ids, the offsets of each line's entries
    among the keys and values, offsets and bytes of the keys and of the values, and whether each
    fast line ended in CR LF.
    """
    starts = np.empty(n_lines, dtype=np.int64)
    ends = np.empty(n_lines, dtype=np.int64)
    fast = np.zeros(n_lines, dtype=np.bool_)
    kinds = np.empty(n_lines, dtype=np.uint8)
    crlf = np.zeros(n_lines, dtype=np.bool_)
    stamps = np.empty(n_lines * _STAMP_LEN, dtype=np.uint8)
    id_offsets = np.zeros(n_lines + 1, dtype=np.int32)
    map_offsets = np.zeros(n_lines + 1, dtype=np.int32)
    # Pages of these arrays beyond the tokens found are never written, so never mapped.
    key_offsets = np.empty(token_room + 1, dtype=np.int32)
    value_offsets = np.empty(token_room + 1, dtype=np.int32)
    key_offsets[0] = value_offsets[0] = 0
    # The ids, keys and values are parts of the input, so its size bounds each. Pages of these
    # buffers that are never written are never mapped: the bound costs address space, not memory.
    id_data = np.empty(buf.size, dtype=np.uint8)
    key_data = np.empty(buf.size, dtype=np.uint8)
    value_data = np.empty(buf.size, dtype=np.uint8)
    # The hash set that finds repeated keys; a line with more tokens than half of it is declined.
    slot_line = np.full(_KEY_SLOTS, -1, dtype=np.int64)
    slot_token = np.zeros(_KEY_SLOTS, dtype=np.int64)

    n_fast = n_tokens = n_id = n_key = n_value = 0
    size = buf.size
    done = True
    line = 0
    p = 0  # start of the current line
    while p < size:
        if line == n_lines or n_tokens + _KEY_SLOTS // 2 >= token_room:
            done = False  # more lines, or maybe more tokens, than room for them
            break
        s = p
        starts[line] = s
        # What this line has written so far, to be undone if it is declined half-way.
        id_mark, tokens_mark, key_mark, value_mark = n_id, n_tokens, n_key, n_value
        # the reference flags the last line without a line end
        clean = s < open_from and _clean_head(buf, s) and not free_text[buf[s + 20]]
        q = s + _HEAD_LEN if clean else s  # q never leaves the line
        # The job id: everything up to the next ';' (or the line end: no message).
        while clean:
            c = buf[q]
            if c in (_SEMI, _LF) or (c == _CR and buf[q + 1] == _LF):
                break
            if c < _SPACE or c > 126:
                clean = False
                break
            id_data[n_id] = c
            n_id += 1
            q += 1
        # The message: tokens split on spaces outside double quotes, each split on its first '='.
        if clean and buf[q] == _SEMI:
            q += 1
            in_token = in_value = quoted = False
            value_start = 0
            while True:
                c = buf[q]
                kind = _BYTE_CLASS[c]
                if kind == _PLAIN:
                    # Most bytes: copy the run of them in a tight loop. It stops at the line end
                    # at the latest, which this line has (only the file's last line may not).
                    in_token = True
                    if in_value:
                        while _BYTE_CLASS[buf[q]] == _PLAIN:
                            value_data[n_value] = buf[q]
                            n_value += 1
                            q += 1
                    else:
                        while _BYTE_CLASS[buf[q]] == _PLAIN:
                            key_data[n_key] = buf[q]
                            n_key += 1
                            q += 1
                    continue
                ends_line = kind == _NEWLINE or (c == _CR and buf[q + 1] == _LF)
                if ends_line or (kind == _BLANK and not quoted):
                    if in_token:
                        if not in_value:  # a bare token: the reference flags it
                            clean = False
                            break
                        # the reference's _unquote: strip one pair of enclosing quotes
                        if (
                            n_value - value_start >= 2
                            and value_data[value_start] == _QUOTE
                            and value_data[n_value - 1] == _QUOTE
                        ):
                            for d in range(value_start, n_value - 2):
                                value_data[d] = value_data[d + 1]
                            n_value -= 2
                        if n_tokens - tokens_mark == _KEY_SLOTS // 2:
                            clean = False  # too many for the hash set: left to the reference
                            break
                        n_tokens += 1
                        key_offsets[n_tokens] = n_key
                        value_offsets[n_tokens] = n_value
                        in_token = in_value = False
                    if ends_line:
                        break
                elif kind == _OTHER:
                    # Control and non-ASCII bytes: the reference decodes, cleans and splits on
                    # every kind of white space, so leave all of that to it.
                    clean = False
                    break
                else:  # '"', '=', or a space within quotes: part of the token
                    in_token = True
                    if c == _QUOTE:
                        quoted = not quoted
                    if in_value:
                        value_data[n_value] = c
                        n_value += 1
                    elif c == _EQUALS:
                        in_value = True
                        value_start = n_value
                    else:
                        key_data[n_key] = c
                        n_key += 1
                q += 1
        if clean and (
            _has_repeated_key(
                key_offsets, key_data, tokens_mark, n_tokens, line, slot_line, slot_token
            )
        ):
            clean = False  # the reference joins the values of a repeated key and flags it

        # q is still within the line: find its end (no cost for clean lines, already there).
        q = _line_end(buf, q if q > s else s)
        ends[line] = q
        p = q + 1
        if clean:
            fast[line] = True
            crlf[n_fast] = q > s and buf[q - 1] == _CR
            kinds[n_fast] = buf[s + 20]
            for d in range(_STAMP_LEN):
                stamps[n_fast * _STAMP_LEN + d] = buf[s + d]
            n_fast += 1
            id_offsets[n_fast] = n_id
            map_offsets[n_fast] = n_tokens
        else:
            n_id, n_tokens, n_key, n_value = id_mark, tokens_mark, key_mark, value_mark
        line += 1

    return (
        done,
        starts[:line],
        ends[:line],
        fast[:line],
        kinds[:n_fast],
        stamps[: n_fast * _STAMP_LEN],
        id_offsets[: n_fast + 1],
        id_data[:n_id].copy(),
        map_offsets[: n_fast + 1],
        key_offsets[: n_tokens + 1].copy(),
        key_data[:n_key].copy(),
        value_offsets[: n_tokens + 1].copy(),
        value_data[:n_value].copy(),
        crlf[:n_fast],
    )


def _has_marker(buf: U8, marker: U8) -> bool:
    """Whether ``marker`` (at least 2 bytes) occurs in ``buf``.

    A first pass, branch-free so that it vectorises, looks for the marker's first two bytes and
    its last one at their distances; only when that finds a place are the places checked whole.
    """
    last = marker.size - 1
    n = buf.size - last
    if n <= 0:
        return False
    a, b, z = marker[0], marker[1], marker[last]
    heads, seconds, lasts = buf[:n], buf[1 : n + 1], buf[last : n + last]
    seen = False
    for i in range(n):
        seen |= (heads[i] == a) & (seconds[i] == b) & (lasts[i] == z)
    if not seen:
        return False
    for i in range(n):
        if heads[i] == a and seconds[i] == b and lasts[i] == z:
            j = 2
            while j < last and buf[i + j] == marker[j]:
                j += 1
            if j >= last:
                return True
    return False


@functools.cache
def _marker_array(marker: bytes) -> U8:
    return np.frombuffer(marker, dtype=np.uint8)


def contains_any(data: bytes, markers: tuple[bytes, ...], *, load: bool = False) -> bool:
    """Whether one of ``markers`` (non-empty byte strings) occurs in ``data``.

    The compiled kernel's pass over the bytes when it is loaded (or ``load`` asks to load it: a
    caller that will tokenise with it anyway), else ``marker in data`` for each marker, which
    takes about ten times as long on a 4 MiB TORQUE head but needs no numba: the same answer.
    """
    short = any(len(marker) < 2 for marker in markers)  # the kernel reads two bytes at least
    if short or not (_kernel_ready() or (load and HAVE_NUMBA)) or not _compile_kernel():
        return any(marker in data for marker in markers)
    buf = np.frombuffer(data, dtype=np.uint8)
    return any(_has_marker(buf, _marker_array(marker)) for marker in markers)


# --- Arrow assembly ------------------------------------------------------------------------------


def _buffer(array: npt.NDArray[Any]) -> pa.Buffer:
    """Wrap a kernel output as an Arrow buffer, without copying."""
    return pa.py_buffer(array.data)


def _strings(offsets: I32, data: U8) -> pa.Array[Any]:
    """Return a string array over the kernel's buffers, without copying (the bytes are ASCII)."""
    return pa.Array.from_buffers(
        pa.string(), len(offsets) - 1, [None, _buffer(offsets), _buffer(data)]
    )


_NO_TEXT = pa.array([], pa.string())
_NO_RECORDS = RECORDS.empty_table()
_NO_QUARANTINE = QUARANTINE.empty_table()


# The last few constant columns built (site, flavour, file name), longest kept: a chunk's column
# is a zero-copy slice of one, so the chunks of a file share one buffer per value.
_CONSTANTS: dict[str, pa.Array[Any]] = {}
_CONSTANTS_KEPT = 8
_constants_lock = threading.Lock()


def _constant(value: str, n: int) -> pa.Array[Any]:
    """Return ``n`` times ``value`` as a string array (a slice of one built before, when long)."""
    built = _CONSTANTS.get(value)
    if built is None or len(built) < n:
        # a power of two: the chunks of a file, of slightly different sizes, share one column
        built = pa.repeat(pa.scalar(value, pa.string()), 1 << max(n - 1, 1).bit_length())
        with _constants_lock:
            if len(_CONSTANTS) >= _CONSTANTS_KEPT:
                _CONSTANTS.pop(next(iter(_CONSTANTS)), None)  # the oldest: another file's name
            _CONSTANTS[value] = built
    return built if len(built) == n else built.slice(0, n)


class _Tokens(NamedTuple):
    """What :func:`_tokenize_lines` returns, named."""

    starts: I64
    ends: I64
    fast: Bools
    kinds: U8
    stamps: U8
    id_offsets: I32
    ids: U8
    map_offsets: I32
    key_offsets: I32
    keys: U8
    value_offsets: I32
    values: U8
    crlf: Bools


def _fast_records(
    tokens: _Tokens, src_lines: I64, *, site: str, source_format: str, src_file: str
) -> pa.Table:
    """Build the ``records`` rows of the lines the kernel tokenised."""
    n = len(tokens.kinds)
    attrs_type = RECORDS.field("attrs").type
    entries = pa.StructArray.from_arrays(
        [
            _strings(tokens.key_offsets, tokens.keys),
            _strings(tokens.value_offsets, tokens.values),
        ],
        fields=[attrs_type.key_field, attrs_type.item_field],
    )
    attrs = pa.Array.from_buffers(
        attrs_type, n, [None, _buffer(tokens.map_offsets)], children=[entries]
    )
    # the only flag of a clean line: CRLF, where it ended in CR LF
    flag_offsets = np.zeros(n + 1, dtype=np.int32)
    if tokens.crlf.any():
        np.cumsum(tokens.crlf, out=flag_offsets[1:])
    n_crlf = int(flag_offsets[-1])
    flags = pa.Array.from_buffers(
        RECORDS.field("flags").type,
        n,
        [None, _buffer(flag_offsets)],
        children=[pa.repeat(pa.scalar("CRLF", pa.string()), n_crlf) if n_crlf else _NO_TEXT],
    )
    stamp_offsets = np.arange(0, _STAMP_LEN * (n + 1), _STAMP_LEN, dtype=np.int32)
    columns = {
        "site": _constant(site, n),
        "source_format": _constant(source_format, n),
        "src_file": _constant(src_file, n),
        "src_line": pa.array(src_lines),
        "record_type": _strings(np.arange(n + 1, dtype=np.int32), tokens.kinds),
        "stamp": _strings(stamp_offsets, tokens.stamps),
        "stamp_utc": pa.nulls(n, RECORDS.field("stamp_utc").type),
        "job_id_raw": _strings(tokens.id_offsets, tokens.ids),
        "attrs": attrs,
        "flags": flags,
        "raw": pa.nulls(n, pa.binary()),
    }
    return pa.Table.from_arrays(list(columns.values()), schema=RECORDS)


def _reference_rows(
    data: bytes,
    bounds: list[tuple[int, int, int]],
    last_open_line: int,
    *,
    site: str,
    source_format: str,
    src_file: str,
) -> tuple[pa.Table, pa.Table]:
    """Parse the declined lines ``(src_line, start, end)`` with the reference, as it would.

    Returns their ``records`` and ``quarantine`` rows, each in line order.
    """
    if not bounds:
        return _NO_RECORDS, _NO_QUARANTINE
    rec: dict[str, list[object]] = {name: [] for name in RECORDS.names}
    quarantine: dict[str, list[object]] = {name: [] for name in QUARANTINE.names}
    for src_line, start, end in bounds:
        raw = data[start:end]
        parsed = parse_torque_line(raw, last_without_newline=src_line == last_open_line)
        if isinstance(parsed, str):
            row: dict[str, object] = {"reason": parsed, "raw": raw}
            target = quarantine
        else:
            row = {
                "record_type": parsed.record_type,
                "stamp": parsed.stamp,
                "stamp_utc": None,
                "job_id_raw": parsed.job_id_raw,
                "attrs": list(parsed.attrs.items()),
                "flags": list(parsed.flags),
                "raw": raw if parsed.keep_raw else None,
            }
            target = rec
        row.update(site=site, source_format=source_format, src_file=src_file, src_line=src_line)
        for name, values in target.items():
            values.append(row[name])
    return (
        pa.Table.from_pydict(rec, schema=RECORDS) if rec["src_line"] else _NO_RECORDS,
        pa.Table.from_pydict(quarantine, schema=QUARANTINE)
        if quarantine["src_line"]
        else _NO_QUARANTINE,
    )


def _interleave(fast: pa.Table, fast_lines: I64, ref: pa.Table) -> pa.Table:
    """Merge two tables of rows, each in line order, into one table in line order.

    The reference rows are few: the fast table is cut around them into zero-copy slices, so the
    result may have several chunks per column (its rows are the same).
    """
    if ref.num_rows == 0:
        return fast
    if fast.num_rows == 0:
        return ref
    ref_lines = ref.column("src_line").to_numpy()
    # where each reference row goes: after this many fast rows
    cuts = np.searchsorted(fast_lines, ref_lines)
    pieces = []
    done_fast = 0
    r = 0
    while r < len(cuts):
        cut = int(cuts[r])
        if cut > done_fast:
            pieces.append(fast.slice(done_fast, cut - done_fast))
            done_fast = cut
        run_end = r + 1
        while run_end < len(cuts) and cuts[run_end] == cut:
            run_end += 1
        pieces.append(ref.slice(r, run_end - r))
        r = run_end
    if done_fast < fast.num_rows:
        pieces.append(fast.slice(done_fast))
    merged = pa.concat_tables(pieces)
    # A few chunks cost consumers nothing and copying a large table costs time; many small chunks
    # (a file full of anomalies) would slow every later computation down.
    return merged.combine_chunks() if len(pieces) > _MAX_CHUNKS else merged


def _pieces(data: bytes) -> Iterator[tuple[int, int]]:
    """Cut the content at line ends into pieces below :data:`_MAX_PIECE` bytes (32-bit offsets)."""
    start = 0
    while len(data) - start > _MAX_PIECE:
        cut = data.rfind(b"\n", start, start + _MAX_PIECE)
        if cut < 0:  # one line longer than a piece: take it whole, up to its end
            cut = data.find(b"\n", start + _MAX_PIECE)
            if cut < 0:
                break
        yield start, cut + 1
        start = cut + 1
    yield start, len(data)


def _tokenize_lines(
    buf: U8, n_lines: int, last_open: bool, n_equals: int, free_text: Bools
) -> tuple[I64, I64, Bools, U8, U8, I32, U8, I32, I32, U8, I32, U8, Bools]:
    """Tokenise ``buf`` as :func:`_tokenize_chunk` does, given its counts (:func:`_count_lines`).

    Returns the arrays of :class:`_Tokens`, in its order.
    """
    open_from = buf.size + 1
    if last_open:
        newlines = np.flatnonzero(buf == _LF)
        open_from = int(newlines[-1]) + 1 if len(newlines) else 0
    result = _tokenize_chunk(buf, n_lines, open_from, n_equals + _KEY_SLOTS, free_text)
    if not result[0]:  # pragma: no cover - n_lines is the count of _count_lines
        msg = f"{n_lines} lines given, more found"
        raise ValueError(msg)
    return result[1:]


def _tokens(data: bytes, start: int, end: int, lines: int | None) -> _Tokens:
    """Run the kernel on ``data[start:end]`` (``lines`` of them, when known)."""
    buf = np.frombuffer(data, dtype=np.uint8, count=end - start, offset=start)
    if end > start and data[end - 1] != _LF:  # the last line has no line end: declined
        open_from = max(data.rfind(b"\n", start, end) + 1 - start, 0)
    else:
        open_from = end - start + 1
    if lines is not None:  # the read counted them: no pass to count again
        room = len(buf) // _TOKEN_BYTES + _KEY_SLOTS
        result = _tokenize_chunk(buf, lines, open_from, room, _FREE_TEXT)
        if result[0]:
            return _Tokens(*result[1:])
    n_lines, _, n_equals = _count_lines(buf)
    result = _tokenize_chunk(buf, n_lines, open_from, n_equals + _KEY_SLOTS, _FREE_TEXT)
    return _Tokens(*result[1:])


def _tokenize_piece(
    data: bytes,
    start: int,
    end: int,
    first_line: int,
    lines: int | None = None,
    *,
    src_file: str,
    site: str,
    source_format: str,
) -> FileParse:
    tokens = _tokens(data, start, end, lines)
    n_lines = len(tokens.fast)
    last_open = end > start and data[end - 1] != _LF
    src_lines = np.arange(first_line, first_line + n_lines, dtype=np.int64)
    declined = np.flatnonzero(~tokens.fast)
    bounds = [
        (int(src_lines[i]), start + int(tokens.starts[i]), start + int(tokens.ends[i]))
        for i in declined
    ]
    last_open_line = first_line + n_lines - 1 if last_open else -1
    names = {"site": site, "source_format": source_format, "src_file": src_file}
    ref_records, quarantine = _reference_rows(data, bounds, last_open_line, **names)
    fast_lines = src_lines[tokens.fast] if len(declined) else src_lines
    records = _interleave(_fast_records(tokens, fast_lines, **names), fast_lines, ref_records)
    return FileParse(src_file=src_file, records=records, quarantine=quarantine, lines_read=n_lines)


_warned_no_numba = False


def _note_no_numba() -> None:
    global _warned_no_numba
    _warned_no_numba = True


def tokenize_torque(
    data: bytes,
    *,
    src_file: str,
    site: str,
    source_format: str = "torque",
    first_line: int = 1,
    lines: int | None = None,
) -> FileParse:
    """Tokenise a whole accounting file, or a chunk of whole lines of one, fast.

    The result is identical to that of
    :func:`~gridtrace.logs._torque_lines.tokenize_torque_reference`, whose arguments these are
    (a chunk is tokenised as the same lines of the whole file are; only the file's last chunk
    may end without a line end): clean lines are tokenised by a compiled kernel straight into
    Arrow buffers, every other line by the reference's
    :func:`~gridtrace.logs._torque_lines.parse_torque_line`.

    ``lines``, when the caller knows it (the streaming core counted the chunk's lines as it
    read them), spares the kernel a pass to count them; a wrong count costs that pass, never
    a wrong row.
    """
    names = {"src_file": src_file, "site": site, "source_format": source_format}
    if not _compile_kernel():  # pragma: no cover
        # numba is a declared dependency; without it the results are the same, only ~20x slower
        logger.log(
            logging.WARNING if not _warned_no_numba else logging.DEBUG,
            "numba is not installed: tokenising %s with the slow reference tokeniser",
            src_file,
        )
        _note_no_numba()
        return tokenize_torque_reference(data, first_line=first_line, **names)
    pieces = list(_pieces(data))
    if any(end - start > _MAX_OFFSET for start, end in pieces):  # pragma: no cover
        # A single line of more than a GiB: too long for 32-bit offsets, and surely corrupt.
        return tokenize_torque_reference(data, first_line=first_line, **names)
    if len(pieces) > 1:
        lines = None  # counted per piece
    parts = []
    for start, end in pieces:
        part = _tokenize_piece(data, start, end, first_line, lines, **names)
        parts.append(part)
        first_line += part.lines_read
    if len(parts) == 1:
        return parts[0]
    return FileParse(
        src_file=src_file,
        records=pa.concat_tables([p.records for p in parts]),
        quarantine=pa.concat_tables([p.quarantine for p in parts]),
        lines_read=sum(p.lines_read for p in parts),
    )


def tokenize_torque_any(
    data: bytes,
    *,
    src_file: str,
    site: str,
    source_format: str = "torque",
    first_line: int = 1,
    whole: bool = True,
    lines: int | None = None,
) -> FileParse:
    """Tokenise an accounting file by the path that finishes it soonest: same rows either way.

    The compiled kernel (:func:`tokenize_torque`) when it is loaded already, when ``data`` is
    one chunk of a file read in several (``whole=False``: a file larger than a chunk), or when
    this file and the lines read so far by the reference reach :data:`SMALL_INPUT_LINES`;
    otherwise the reference (:func:`~gridtrace.logs._torque_lines.tokenize_torque_reference`),
    which needs neither numba nor a compilation. The other arguments (``lines``: the lines of
    ``data``, when known) and the result are those of :func:`tokenize_torque`.
    """
    global _reference_lines
    names = {"src_file": src_file, "site": site, "source_format": source_format}
    if _kernel_ready() or not HAVE_NUMBA or not whole:
        return tokenize_torque(data, first_line=first_line, lines=lines, **names)
    newlines = data.count(b"\n")
    with _reference_lock:
        small = _reference_lines + newlines < SMALL_INPUT_LINES
        if small:
            _reference_lines += newlines
    if small:
        return tokenize_torque_reference(data, first_line=first_line, **names)
    return tokenize_torque(data, first_line=first_line, lines=lines, **names)
