"""Keep pyarrow from importing pandas in a ``gridtrace parse`` that reads only TORQUE logs.

pyarrow's first conversion of a Python value (``pa.scalar``, ``pa.array``, ``pa.table``) asks
whether the value is a pandas object and, to know, imports pandas: 0.3-0.4 s, as much as the rest
of ``gridtrace parse`` of one day's TORQUE file. :func:`defer_pandas_check` lets pyarrow's two
first checks (its Python-level one and its C++ conversion's) find no pandas: pyarrow then never
imports pandas by itself and does not recognise pandas objects (``pd.NA``, ``pd.NaT``, a Series)
among Python values. So it is called only where no pandas object can reach pyarrow: by
``gridtrace parse`` when every input is a TORQUE file, no zone is given (placing stamps in a
zone uses pandas) and no anonymisation is asked for. A library user's process is left alone.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

__all__ = ["defer_pandas_check"]


class _NoPandas(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "pandas":
            msg = "pandas left out by gridtrace parse"
            raise ImportError(msg)
        return None


def defer_pandas_check() -> bool:
    """Let pyarrow's checks for pandas find none, unless pandas is imported already.

    Returns
    -------
    bool
        Whether the checks were made without pandas (False: pandas was imported already).
    """
    if "pandas" in sys.modules:
        return False
    import pyarrow as pa

    blocker = _NoPandas()
    sys.meta_path.insert(0, blocker)
    try:
        pa.scalar(None, pa.null())  # pyarrow's Python-level check, made once
        pa.array([0, None])  # its C++ conversion's, made once (type inferred)
    finally:
        sys.meta_path.remove(blocker)
    return "pandas" not in sys.modules
