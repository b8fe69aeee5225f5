"""Narrowing the search for records written twice to the rows that can be copies.

:func:`~gridtrace.logs._attrs.repeated_rows` compares whole ``attrs`` maps, which costs a text
of every map. A reader whose ``job_id_raw`` and ``stamp`` are read from the map (the same map
gives the same id and stamp) can first keep only the rows sharing both with another row: the
others have no equal and are neither a copy nor copied, so the result is the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["may_repeat"]

_pc: Any = pc
_pa: Any = pa
_NULL = "\x1e"  # stands for a null id or stamp
_SEP = "\x1f"


def may_repeat(records: pa.Table, among: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """Return the rows of ``among`` whose ``job_id_raw`` and ``stamp`` another row shares.

    Parameters
    ----------
    records : pyarrow.Table
        A ``records`` table whose ``job_id_raw`` and ``stamp`` are functions of ``attrs`` on
        the rows of ``among``.
    among : numpy.ndarray of bool
        The rows that may be compared.

    Returns
    -------
    numpy.ndarray of bool
        A subset of ``among``, to pass to ``repeated_rows`` in its place.
    """
    rows = np.flatnonzero(among)
    if len(rows) < 2:
        return among
    pick = _pa.array(rows)
    key = _pc.binary_join_element_wise(
        _pc.fill_null(records.column("job_id_raw").take(pick), _NULL),
        _pc.fill_null(records.column("stamp").take(pick), _NULL),
        _SEP,
    )
    if isinstance(key, pa.ChunkedArray):
        key = key.combine_chunks()
    codes = np.asarray(_pc.dictionary_encode(key).indices, dtype=np.int64)
    shared = np.bincount(codes)[codes] > 1
    out = np.zeros(len(among), dtype=bool)
    out[rows[shared]] = True
    return out
