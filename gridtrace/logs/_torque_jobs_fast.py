"""TORQUE / PBS job assembly: the compiled kernel that indexes the attribute maps of many records.

:meth:`gridtrace.logs._torque_jobs._Attrs.extract` finds, for every record, where the value of
each attribute it reads sits. On large inputs (from :data:`KERNEL_ROWS` records) this kernel
does it in one pass over the bytes of the keys, instead of ``pyarrow.compute.index_in`` over
every key, a scan for empty values and a scatter into the index table: the same table, a few
times faster. Small inputs keep the array path, so that reading one day's file loads no numba.
"""

from __future__ import annotations

import functools
import importlib.util
import threading
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import pyarrow as pa

__all__ = ["HAVE_NUMBA", "KERNEL_ROWS", "index_keys", "use_kernel"]

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
"""Whether the kernel can be compiled (else the array path is used at every size)."""

KERNEL_ROWS = 100_000
"""Records from which the kernel is used (loading numba costs about a second)."""

I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]
_compile_lock = threading.Lock()


def use_kernel(rows: int) -> bool:
    """Whether ``rows`` records are indexed with the kernel."""
    return HAVE_NUMBA and rows >= KERNEL_ROWS


def _index_keys(
    map_offsets: I64,
    key_offsets: npt.NDArray[np.int32],
    key_data: npt.NDArray[np.uint8],
    value_offsets: npt.NDArray[np.int32],
    wanted_data: npt.NDArray[np.uint8],
    wanted_offsets: I64,
    by_length: I64,
    key_ids: I64,
    drop_last: Bools,
    table: I64,
    row0: int,
    position0: int,
    keep: Bools,
) -> int:
    """Fill ``table[row0 + row, key]`` and ``keep``; return the number of values kept.

    An entry is kept when its key is one of the wanted ones, its value is not empty and it is
    not the last entry of a row marked in ``drop_last``. Kept values are numbered from
    ``position0`` in entry order. The wanted keys are listed by length (those of length ``L``
    are ``by_length[L]:by_length[L + 1]``) and compared from their last byte (they share long
    prefixes such as ``Resource_List.``).
    """
    longest = len(by_length) - 2
    kept = 0
    for row in range(len(map_offsets) - 1):
        first, stop = map_offsets[row], map_offsets[row + 1]
        for entry in range(first, stop):
            if value_offsets[entry + 1] == value_offsets[entry]:
                continue
            if drop_last[row] and entry == stop - 1:
                continue
            k0, k1 = key_offsets[entry], key_offsets[entry + 1]
            size = k1 - k0
            if size > longest:
                continue
            found = -1
            for key in range(by_length[size], by_length[size + 1]):
                w0 = wanted_offsets[key]
                same = True
                for i in range(size - 1, -1, -1):
                    if key_data[k0 + i] != wanted_data[w0 + i]:
                        same = False
                        break
                if same:
                    found = key
                    break
            if found < 0:
                continue
            table[row0 + row, key_ids[found]] = position0 + kept
            keep[entry] = True
            kept += 1
    return kept


@functools.cache
def _kernel() -> Any:
    import numba

    with _compile_lock:
        try:
            return numba.njit(cache=True, nogil=True)(_index_keys)
        except RuntimeError:  # pragma: no cover - no writable cache folder: compile each run
            return numba.njit(nogil=True)(_index_keys)


def _offsets(array: pa.Array[Any]) -> npt.NDArray[np.int32]:
    buffer = array.buffers()[1]
    if buffer is None:  # pragma: no cover - a string array always has offsets
        return np.zeros(len(array) + 1, dtype=np.int32)
    return np.frombuffer(
        memoryview(buffer), dtype=np.int32, count=len(array) + 1, offset=4 * array.offset
    )


def _data(array: pa.Array[Any]) -> npt.NDArray[np.uint8]:
    buffer = array.buffers()[2]
    if buffer is None:
        return np.zeros(1, dtype=np.uint8)
    return np.frombuffer(memoryview(buffer), dtype=np.uint8)


def index_keys(
    map_offsets: I64,
    names: pa.Array[Any],
    values: pa.Array[Any],
    keys: list[str],
    drop_last: Bools,
    table: I64,
    row0: int,
    position0: int,
) -> Bools | None:
    """Index one chunk's entries with the kernel; return which values are kept.

    ``map_offsets`` start at 0 and ``names`` and ``values`` are the chunk's keys and items
    sliced to them. Returns None when the kernel does not apply (not plain ``string`` arrays,
    or null keys or values): the caller then uses the array path.
    """
    if not (pa.types.is_string(names.type) and pa.types.is_string(values.type)):
        return None
    if names.null_count or values.null_count:
        return None
    # the wanted keys by length, each with its index in ``keys``
    encoded = sorted((key.encode(), i) for i, key in enumerate(keys))
    encoded.sort(key=lambda pair: len(pair[0]))
    lengths = np.array([len(key) for key, _ in encoded], dtype=np.int64)
    wanted_offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(lengths, out=wanted_offsets[1:])
    wanted_data = np.frombuffer(b"".join(key for key, _ in encoded) or b"\0", dtype=np.uint8)
    by_length = np.searchsorted(lengths, np.arange(int(lengths.max(initial=0)) + 2))
    key_ids = np.array([i for _, i in encoded], dtype=np.int64)
    keep = np.zeros(len(values), dtype=bool)
    kernel = _kernel()
    kernel(
        map_offsets,
        _offsets(names),
        _data(names),
        _offsets(values),
        wanted_data,
        wanted_offsets,
        by_length.astype(np.int64),
        key_ids,
        drop_last,
        table,
        row0,
        position0,
        keep,
    )
    return cast(Bools, keep)
