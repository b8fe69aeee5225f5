"""Decoding log bytes that are not UTF-8: one stated fallback for every reader.

Logs are UTF-8 nearly everywhere, but user and job names written by older tools arrive in a
Windows or ISO-8859 code page. A line that is not valid UTF-8 is decoded as Windows-1252 (the
superset of Latin-1 that Western sites' tools write), byte by byte as Latin-1 where Windows-1252
has no character (0x81, 0x8D, 0x8F, 0x90, 0x9D). Either way the reader flags the value
``NON_UTF8`` and keeps the original bytes, so that nothing is lost and nothing is silent.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's constant without importing typing (mypy knows the name)
if TYPE_CHECKING:  # imported where used: decode_line serves the small TORQUE path without them
    from typing import Any

    import numpy as np
    import pyarrow as pa
    from numpy.typing import NDArray

__all__ = [
    "NON_UTF8",
    "NUL_FRAGMENT_REASON",
    "decode_line",
    "nul_fragment_counts",
    "nul_lines",
    "split_lines",
]

NUL_FRAGMENT_REASON = (
    "NUL bytes in the line (a crash or a log rotation left them): a fragment, not a record"
)
"""The quarantine reason of a line holding NUL bytes, in the readers that set such lines aside
whole (Slurm, SGE, LSF, HTCondor; TORQUE and SWF read the text around the NULs instead)."""

NON_UTF8 = "NON_UTF8"
"""The flag of a value decoded by the fallback."""


def decode_line(raw: bytes) -> tuple[str, bool]:
    r"""Decode ``raw`` as UTF-8, else Windows-1252, else Latin-1.

    Returns
    -------
    text : str
        The decoded text.
    repaired : bool
        True when the bytes were not valid UTF-8 and the fallback decoded them.

    Examples
    --------
    >>> decode_line("gaëndalf".encode())
    ('gaëndalf', False)
    >>> decode_line(b"ga\xebndalf")
    ('gaëndalf', True)
    """
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        pass
    try:
        return raw.decode("cp1252"), True
    except UnicodeDecodeError:
        return raw.decode("latin-1"), True


def split_lines(data: bytes) -> tuple[list[bytes], NDArray[np.bool_], bool]:
    r"""Split a file into lines: ``(lines, ended by CR LF, last line without line end)``.

    One ``\r`` before the ``\n`` (or at the end of the file) is removed from a line.

    Examples
    --------
    >>> lines, crlf, no_newline = split_lines(b"a\r\nb\nc")
    >>> lines, crlf.tolist(), no_newline
    ([b'a', b'b', b'c'], [True, False, False], True)
    """
    import numpy as np

    lines = data.split(b"\n")
    no_newline = bool(lines) and lines[-1] != b""
    if not no_newline:
        lines.pop()
    crlf = np.zeros(len(lines), dtype=bool)
    if b"\r" in data:
        for i, line in enumerate(lines):
            if line.endswith(b"\r"):
                lines[i] = line[:-1]
                crlf[i] = True
    return lines, crlf, no_newline


def nul_lines(lines: list[bytes], data: bytes) -> NDArray[np.bool_]:
    """Which of a file's lines hold a NUL byte (one scan of the file when none does)."""
    import numpy as np

    if b"\x00" not in data:
        return np.zeros(len(lines), dtype=bool)
    return np.fromiter((b"\x00" in line for line in lines), dtype=bool, count=len(lines))


def nul_fragment_counts(quarantine: pa.Table) -> dict[str, int]:
    """Count the lines quarantined as NUL fragments (``nul_lines``) and the NUL bytes they held."""
    import pyarrow.compute as pc

    compute: Any = pc  # pyarrow's stubs take no binary pattern for count_substring
    nul = compute.equal(quarantine.column("reason"), NUL_FRAGMENT_REASON)
    raw = quarantine.column("raw").filter(nul)
    nul_bytes = compute.sum(compute.count_substring(raw, b"\x00")).as_py() if len(raw) else 0
    return {"nul_lines": len(raw), "nul_bytes": int(nul_bytes or 0)}
