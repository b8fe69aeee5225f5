"""The HTCondor ``-jsonl`` kernel against the reference tokeniser, for the kernel's tests."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from gridtrace.logs._htcondor import _JOB_ATTRS, _NUMERIC, _AdValues, _decode, _tokenize_jsonl
from gridtrace.logs._stream import Chunk


def chunk_of(data: bytes, first_line: int = 1) -> Chunk:
    """Return ``data`` as one whole chunk starting at line ``first_line``."""
    lines = data.count(b"\n") + (bool(data) and not data.endswith(b"\n"))
    return Chunk(data, first_line, lines, 0, True)


def same_tokens(data: bytes, first_line: int = 1) -> Any:
    """Tokenise ``data`` with the kernel and with the reference alone; the tables must match.

    Returns the reference's records, or None where both decline the chunk.
    """
    chunk = chunk_of(data, first_line)
    text, raw_lines, non_utf8 = _decode(data)
    fast, reference = (
        _tokenize_jsonl(chunk, text, raw_lines, non_utf8, "s", "f", kernel=kernel)
        for kernel in (True, False)
    )
    if reference is None:
        assert fast is None
        return None
    assert fast is not None
    assert fast.combine_chunks().equals(reference.combine_chunks()), data[:400]
    return reference


def assert_same_ad_values(attrs: Any, *, split: bool = True) -> None:
    """Assert the attribute kernel reads ``attrs`` (an array of maps) as Arrow's reading does.

    The kernel reads the array cut in two chunks where ``split``; the reference reads it whole.
    """
    n = len(attrs)
    chunks = [attrs.slice(0, n // 2), attrs.slice(n // 2)] if split else [attrs]
    kernel = _AdValues(pa.chunked_array(chunks, attrs.type), n, kernel=True)
    reference = _AdValues(attrs, n, kernel=False)
    for key in _NUMERIC:
        same = np.array_equal(
            np.asarray(kernel.num(key)), np.asarray(reference.num(key)), equal_nan=True
        )
        assert same, key
    for key in _JOB_ATTRS:
        assert kernel.text(key).equals(reference.text(key)), key
    assert kernel.expression.tolist() == reference.expression.tolist()
    assert kernel.unreadable.tolist() == reference.unreadable.tolist()
