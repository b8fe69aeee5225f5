"""Compiling a reader's numba kernel on first use: one rule for every scanner.

A kernel's functions stay plain Python until the first chunk large enough to pay for numba
(importing it costs half a second); then each is replaced, in its module, by its compilation,
cached on disk. Callees are inlined into the entry points: a call passing an array costs two
atomic reference counts.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Iterable, MutableMapping
from typing import Any, Literal

__all__ = ["HAVE_NUMBA", "LazyKernel", "compile_functions"]

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
"""Whether numba is installed (else every reader runs its numpy and Arrow paths)."""

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


class LazyKernel:
    """The numba kernel of one module, compiled on first use.

    Parameters
    ----------
    module : mapping
        The module's namespace (its ``globals()``).
    names : iterable of str
        The kernel's functions, callees first.
    entry_points : frozenset of str, optional
        Those called from Python, never inlined; by default every function.

    Examples
    --------
    A scanner module declares its kernel once and exports the two calls its reader needs::

        _LAZY = LazyKernel(globals(), _KERNEL, _ENTRY_POINTS)
        compile_kernel = _LAZY.compile
        kernel_ready = _LAZY.ready
    """

    def __init__(
        self,
        module: MutableMapping[str, Any],
        names: Iterable[str],
        entry_points: frozenset[str] | None = None,
    ) -> None:
        self._module = module
        self._names = tuple(names)
        self._entry_points = frozenset(self._names) if entry_points is None else entry_points
        self._compiled = False

    def compile(self) -> bool:
        """Compile the kernel if not yet done (from numba's disk cache after the first run ever).

        Returns
        -------
        bool
            False when numba is not installed: the caller then uses its reference path.
        """
        if not HAVE_NUMBA:  # pragma: no cover
            return False
        if not self._compiled:
            compile_functions(self._module, self._names, self._entry_points)
            self._compiled = True
        return True

    def ready(self) -> bool:
        """Whether this process has compiled (or loaded) the kernel already."""
        return self._compiled
