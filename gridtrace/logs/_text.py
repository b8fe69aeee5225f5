"""Decoding log bytes that are not UTF-8: one stated fallback for every reader.

Logs are UTF-8 nearly everywhere, but user and job names written by older tools arrive in a
Windows or ISO-8859 code page. A line that is not valid UTF-8 is decoded as Windows-1252 (the
superset of Latin-1 that Western sites' tools write), byte by byte as Latin-1 where Windows-1252
has no character (0x81, 0x8D, 0x8F, 0x90, 0x9D). Either way the reader flags the value
``NON_UTF8`` and keeps the original bytes, so that nothing is lost and nothing is silent.
"""

from __future__ import annotations

__all__ = ["NON_UTF8", "decode_line"]

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
