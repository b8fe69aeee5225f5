"""The HTCondor ``-jsonl`` kernel against the reference tokeniser, for the kernel's tests."""

from __future__ import annotations

from typing import Any

from gridtrace.logs._htcondor import _decode, _tokenize_jsonl
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
