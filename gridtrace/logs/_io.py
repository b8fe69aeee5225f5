"""Reading log files: compression detected by magic bytes, directories expanded in date order."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import re
import zlib
from collections.abc import Iterable
from pathlib import Path

from gridtrace.errors import UnknownFormatError

__all__ = ["default_site_name", "detect_compression", "expand_log_paths", "read_log_bytes"]

_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)

StrPath = str | os.PathLike[str]


def detect_compression(head: bytes) -> str | None:
    """Name the compression of a file from its first bytes (``None`` for plain text)."""
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    return None


def read_log_bytes(path: StrPath) -> bytes:
    """Read a whole log file, decompressing gzip, bzip2 or xz whatever its name says.

    Parameters
    ----------
    path : str or path-like
        The file.

    Returns
    -------
    bytes
        The decompressed content.

    Raises
    ------
    UnknownFormatError
        For zstd-compressed files (decompress them with ``zstd -d`` first), and for files that
        start like a compressed file but cannot be decompressed (truncated or corrupt): no line
        of them can be read, so there is nothing to quarantine line by line.
    """
    raw = Path(path).read_bytes()
    kind = detect_compression(raw[:8])
    try:
        if kind == "gzip":
            return gzip.decompress(raw)
        if kind == "bz2":
            return bz2.decompress(raw)
        if kind == "xz":
            return lzma.decompress(raw)
    except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error) as exc:
        msg = (
            f"{path}: starts like a {kind} file but cannot be decompressed ({exc}); "
            "repair or decompress it first"
        )
        raise UnknownFormatError(msg) from exc
    if kind == "zstd":
        msg = f"{path}: zstd-compressed logs are not supported; run `zstd -d {path}` first"
        raise UnknownFormatError(msg)
    return raw


_DIGITS = re.compile(r"\d+")


def _date_key(path: Path) -> tuple[str, str]:
    # daily files are named by date (20240503, 20240503.gz): order by the digits in the name,
    # never by modification time, which copies and restores change
    digits = "".join(_DIGITS.findall(path.name.split(".", 1)[0]))
    return (digits.zfill(16), path.name)


def expand_log_paths(paths: StrPath | Iterable[StrPath]) -> list[Path]:
    """Expand files and directories into the ordered list of log files to read.

    Directories contribute every regular, non-hidden file directly inside them, ordered by the
    date in the file name (then by name). Files named explicitly keep the order given.

    Raises
    ------
    FileNotFoundError
        If a path does not exist.
    """
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    files: list[Path] = []
    for item in paths:
        path = Path(item)
        if path.is_dir():
            inside = [p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")]
            files.extend(sorted(inside, key=_date_key))
        elif path.is_file():
            files.append(path)
        else:
            msg = f"{path}: no such file or directory"
            raise FileNotFoundError(msg)
    return files


def default_site_name(paths: StrPath | Iterable[StrPath]) -> str:
    """Name the site when none is given: the first path's name up to its first dot."""
    first = paths if isinstance(paths, str | os.PathLike) else next(iter(paths), "site")
    return Path(first).name.split(".", 1)[0] or "site"
