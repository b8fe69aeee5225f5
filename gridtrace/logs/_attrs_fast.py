"""A compiled kernel finding keys in the maps of an ``attrs`` column, for large columns.

:func:`find_keys` gives, for each wanted key and each map, the child position of the key's
entry (-1 where absent). A key is first looked for where the previous map held it (the readers
write a record's attributes in a fixed order), then by a scan of the map's keys from the start.
The functions stay plain Python until :func:`compile_kernel` replaces them by their numba
compilation, cached on disk: :func:`~gridtrace.logs._attrs.attr_columns` asks for it only from
:data:`MIN_ROWS` maps, so that reading a small file never imports numba.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from gridtrace.logs._kernels import HAVE_NUMBA, LazyKernel

__all__ = ["HAVE_NUMBA", "MIN_ROWS", "compile_kernel", "find_keys", "kernel_ready"]


MIN_ROWS = 20_000
"""From this many maps ``attr_columns`` compiles (or loads) the kernel."""

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
Bools = npt.NDArray[np.bool_]

_KERNEL = ("_find_keys",)
_ENTRY_POINTS = frozenset({"_find_keys"})
_LAZY = LazyKernel(globals(), _KERNEL, _ENTRY_POINTS)
compile_kernel = _LAZY.compile
kernel_ready = _LAZY.ready


def _find_keys(
    koff: I32, kdata: U8, starts: I64, ends: I64, valid: Bools, noff: I64, ndata: U8, out: I64
) -> None:
    m = noff.shape[0] - 1
    guess = np.full(m, -1, dtype=np.int64)  # each key's position in the last map holding it
    for row in range(starts.shape[0]):
        start = starts[row]
        end = ends[row]
        for j in range(m):
            found = -1
            if valid[row]:
                b = noff[j]
                length = noff[j + 1] - b
                g = start + guess[j]
                if guess[j] >= 0 and g < end and koff[g + 1] - koff[g] == length:
                    a = koff[g]
                    same = True
                    for i in range(length):
                        if kdata[a + i] != ndata[b + i]:
                            same = False
                            break
                    if same:
                        found = g
                if found < 0:  # scan the map's keys from the start: the first entry wins
                    for child in range(start, end):
                        a = koff[child]
                        if koff[child + 1] - a != length:
                            continue
                        same = True
                        for i in range(length):
                            if kdata[a + i] != ndata[b + i]:
                                same = False
                                break
                        if same:
                            found = child
                            break
                if found >= 0:
                    guess[j] = found - start
            out[j, row] = found


def find_keys(attrs: Any, names: list[str]) -> I64:
    """Child positions of each of ``names`` in each map of ``attrs`` (-1 where absent or null).

    Parameters
    ----------
    attrs : pyarrow.MapArray
        A map<string, string> column in one chunk (a slice is fine).
    names : list of str
        The keys wanted.

    Returns
    -------
    numpy.ndarray of int64, shape (len(names), len(attrs))
        The positions in ``attrs.keys`` / ``attrs.items``. A key repeated within a map gives
        the entry where the previous map held it, if that entry holds the key, else the first.
    """
    n = len(attrs)
    keys = attrs.keys
    _, key_offsets, key_data = keys.buffers()[:3]
    koff = np.frombuffer(key_offsets, dtype=np.int32)[keys.offset : keys.offset + len(keys) + 1]
    kdata = (
        np.frombuffer(key_data, dtype=np.uint8) if key_data is not None else np.zeros(1, np.uint8)
    )
    offsets = np.asarray(attrs.offsets, dtype=np.int64)
    valid = np.asarray(attrs.is_valid(), dtype=np.bool_)
    encoded = [name.encode() for name in names]
    noff = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=noff[1:])
    ndata = np.frombuffer(b"".join(encoded) or b"\0", dtype=np.uint8)
    out = np.empty((len(names), n), dtype=np.int64)
    _find_keys(koff, kdata, offsets[:-1], offsets[1:], valid, noff, ndata, out)
    return out
