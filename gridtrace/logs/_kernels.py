"""Compiling a reader's numba kernel on first use: one rule for the LSF and HTCondor scanners.

A kernel's functions stay plain Python until the first chunk large enough to pay for numba
(importing it costs half a second); then each is replaced, in its module, by its compilation,
cached on disk. Callees are inlined into the entry points: a call passing an array costs two
atomic reference counts.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, MutableMapping
from typing import Any, Literal

__all__ = ["compile_functions"]

_lock = threading.Lock()


def compile_functions(
    module: MutableMapping[str, Any], names: Iterable[str], entry_points: frozenset[str]
) -> None:
    """Replace each function ``names`` of ``module`` (its ``globals()``) by its compilation.

    Parameters
    ----------
    module : mapping
        The module's namespace.
    names : iterable of str
        The kernel's functions, callees first.
    entry_points : frozenset of str
        Those called from Python (not inlined).
    """
    import numba
    from numba.core.dispatcher import Dispatcher

    with _lock:  # two threads must not wrap a function twice
        for name in names:
            if isinstance(module[name], Dispatcher):
                continue
            inline: Literal["never", "always"] = "never" if name in entry_points else "always"
            try:
                module[name] = numba.njit(cache=True, nogil=True, inline=inline)(module[name])
            except RuntimeError:  # pragma: no cover - no writable cache folder: compile each run
                module[name] = numba.njit(nogil=True, inline=inline)(module[name])
