"""What reading a log needs before its bytes: the input limits, compression, the files to read.

Kept apart from :mod:`gridtrace.logs._io` (the guarded reading of a file's bytes, which
re-exports every name here), so that the small TORQUE path of ``gridtrace parse``, which reads
with its own loop, loads and compiles only this part: a first call compiles every module it
imports from source.
"""

from __future__ import annotations

import errno
import os
import re
from collections import namedtuple
from collections.abc import Iterable
from stat import S_ISDIR as _S_ISDIR
from stat import S_ISREG as _S_ISREG

TYPE_CHECKING = False  # typing's constant without importing typing (mypy knows the name)
if TYPE_CHECKING:
    import bz2
    import gzip
    import lzma
    from pathlib import Path
    from typing import IO, Any, NamedTuple

__all__ = [
    "COMPRESSED_RATIO",
    "GARBAGE_SHARE",
    "GARBAGE_WINDOW_BYTES",
    "GARBAGE_WINDOW_LINES",
    "INPUT_LIMITS",
    "KEPT_RAW_BYTES",
    "MAX_LINE_BYTES",
    "REASON_LINE_TOO_LONG",
    "REASON_STOPPED",
    "REASON_STREAM_BROKEN",
    "LogFiles",
    "StrPath",
    "default_site_name",
    "detect_compression",
    "expand_log_paths",
    "input_findings",
    "log_text_bytes",
    "open_decompressed",
    "quarantined_lines_warning",
    "scan_log_names",
    "scan_log_paths",
]

MAX_LINE_BYTES = 1 << 20
"""Longest line handed to a reader, in bytes (1 MiB); longer ones are quarantined (length given)."""

KEPT_RAW_BYTES = 4096
"""Bytes of an over-long line, or of the rest of a stopped file, kept in its quarantine row."""

GARBAGE_WINDOW_LINES = 100_000
"""Lines in one window of the garbage test."""

GARBAGE_WINDOW_BYTES = 256 << 20
"""Decompressed bytes after which a window of the garbage test ends, if its lines have not."""

GARBAGE_SHARE = 0.99
"""Share of garbage lines in a window that stops reading."""

REASON_LINE_TOO_LONG = "line too long"
"""Start of the quarantine reason of a line longer than ``MAX_LINE_BYTES``."""
REASON_STREAM_BROKEN = "compressed stream broken"
"""Start of the quarantine reason of the unreadable rest of a damaged compressed file."""
REASON_STOPPED = "reading stopped"
"""Start of the quarantine reason of the rest of a file the garbage test stopped."""

INPUT_LIMITS: dict[str, float] = {
    "max_line_bytes": MAX_LINE_BYTES,
    "kept_raw_bytes": KEPT_RAW_BYTES,
    "garbage_window_lines": GARBAGE_WINDOW_LINES,
    "garbage_window_bytes": GARBAGE_WINDOW_BYTES,
    "garbage_share_to_stop": GARBAGE_SHARE,
}
"""The limits every file is read under, as summaries state them."""

# the bytes a garbage line is made of (blank, whitespace or NUL only)
_JUNK = b" \t\r\x0b\x0c\x00"

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


def open_decompressed(
    raw: IO[bytes], kind: str
) -> tuple[gzip.GzipFile | bz2.BZ2File | lzma.LZMAFile, tuple[type[Exception], ...]]:
    """Open a gzip, bz2 or xz stream on ``raw``; say what it raises when the data is broken.

    Each decompressor is imported for the files that need it (importing this module stays
    cheap). Shared by :func:`gridtrace.logs._io.guarded_pieces` and the small TORQUE path, so
    that both read a stream alike and take the same exceptions for a broken one.

    Returns
    -------
    stream : gzip.GzipFile or bz2.BZ2File or lzma.LZMAFile
        The decompressed stream (the caller closes it).
    broken : tuple of exception classes
        What reading it raises for a truncated or corrupt stream.
    """
    broken: tuple[type[Exception], ...] = (OSError, EOFError, ValueError)
    if kind == "gzip":
        import gzip
        import zlib

        return gzip.GzipFile(fileobj=raw, mode="rb"), (*broken, zlib.error)
    if kind == "bz2":
        import bz2

        return bz2.BZ2File(raw, mode="rb"), broken
    import lzma

    return lzma.LZMAFile(raw, mode="rb"), (*broken, lzma.LZMAError)


# ------------------------------------------------------------------------------ findings


def quarantined_lines_warning(
    src_file: str, quarantined: int, lines_read: int, first_line: int, first_reason: str
) -> str:
    """Return the warning a file's quarantined lines get under ``errors="warn"``."""
    return (
        f"{src_file}: {quarantined} of {lines_read} lines quarantined (first: line {first_line}, "
        f"{first_reason}); they are kept in the quarantine table"
    )


def input_findings(lines_cut: int, ended: Iterable[tuple[str, int, str]]) -> dict[str, Any]:
    """Return the ``input`` part of a parse summary: the limits, and what they caught.

    Parameters
    ----------
    lines_cut : int
        Quarantine rows whose reason starts with :data:`REASON_LINE_TOO_LONG`.
    ended : iterable of (str, int, str)
        ``(src_file, src_line, reason)`` of the quarantine rows whose reason starts with
        :data:`REASON_STREAM_BROKEN` or :data:`REASON_STOPPED`, in table order.

    Returns
    -------
    dict
        ``limits`` (:data:`INPUT_LIMITS`), ``lines_cut``, ``files_broken`` and ``files_stopped``
        (each a list of ``{"file", "line", "reason"}``).
    """
    broken: list[dict[str, Any]] = []
    stopped: list[dict[str, Any]] = []
    for file, line, reason in ended:
        if reason.startswith(REASON_STREAM_BROKEN):
            broken.append({"file": file, "line": line, "reason": reason})
        elif reason.startswith(REASON_STOPPED):
            stopped.append({"file": file, "line": line, "reason": reason})
    return {
        "limits": dict(INPUT_LIMITS),
        "lines_cut": lines_cut,
        "files_broken": broken,
        "files_stopped": stopped,
    }


# ------------------------------------------------------------------------------ paths


# compiled on first use (re caches them): a named file never needs them
_DIGITS = r"\d+"
_ROTATED = r"^(?P<stem>.+?)\.(?P<n>\d{1,3})(?:\.(?:gz|bz2|xz|zst))?$"


def _date_key(name: str) -> tuple[str, str, int, str]:
    # daily files are named by date (20240503, 20240503.gz): order by the digits in the name,
    # never by modification time, which copies and restores change. logrotate's names
    # (accounting, accounting.1, accounting.2.gz) number back in time: the larger, the older
    rotated = re.match(_ROTATED, name)
    stem, age = (rotated["stem"], int(rotated["n"])) if rotated else (name, 0)
    digits = "".join(re.findall(_DIGITS, stem.split(".", 1)[0]))
    return (digits.zfill(16), stem.split(".", 1)[0], -age, name)


if TYPE_CHECKING:

    class _LogFilesFields(NamedTuple):
        files: list[Path]
        skipped: list[tuple[str, str]]

else:  # a plain namedtuple: typing.NamedTuple would import typing
    _LogFilesFields = namedtuple("LogFiles", ("files", "skipped"))


class LogFiles(_LogFilesFields):
    """The files a set of paths names, and what was passed by.

    Attributes
    ----------
    files : list of pathlib.Path
        The files to read: named files in the order given, a folder's files in date order.
    skipped : list of (str, str)
        Each entry of a folder that is not read, with why: a sub-folder (folders are not read
        recursively; name it to read it), a hidden file, or not a regular file.
    """

    __slots__ = ()


COMPRESSED_RATIO = 8
"""A compressed log (by suffix) is taken as this many times its size in text."""
_COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".zstd")


def log_text_bytes(path: StrPath) -> float:
    """Return about how many bytes of log text ``path`` holds, without reading it.

    A compressed file (by suffix) counts :data:`COMPRESSED_RATIO` times its size.
    """
    from pathlib import Path

    compressed = str(path).lower().endswith(_COMPRESSED_SUFFIXES)
    return float(Path(path).stat().st_size * (COMPRESSED_RATIO if compressed else 1))


def scan_log_paths(paths: StrPath | Iterable[StrPath]) -> LogFiles:
    """Expand files and directories into the files to read, saying what was passed by.

    Raises
    ------
    FileNotFoundError
        If a path does not exist.
    """
    from pathlib import Path

    names, skipped = scan_log_names(paths)
    return LogFiles([Path(name) for name in names], skipped)


def scan_log_names(
    paths: StrPath | Iterable[StrPath],
) -> tuple[list[str], list[tuple[str, str]]]:
    """Do what :func:`scan_log_paths` does, giving each file's path as pathlib spells it.

    The small TORQUE path of ``gridtrace parse`` reads the names; it imports no pathlib (see
    :func:`gridtrace._atomic.path_text`). Each test of a path is pathlib's: its
    :func:`os.stat`, following links, where an error saying the path is missing or not a
    folder (or a loop of links) means "no" and any other error is raised.

    Returns
    -------
    tuple
        The files to read, and the entries passed by with why (:class:`LogFiles`' fields).

    Raises
    ------
    FileNotFoundError
        If a path does not exist.
    """
    from gridtrace._atomic import path_text

    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    files: list[str] = []
    skipped: list[tuple[str, str]] = []
    for item in paths:
        path = path_text(item)
        mode = _mode(path)
        if mode is not None and _S_ISDIR(mode):
            inside = []
            folder = "" if path == "." else path if path.endswith("/") else path + "/"
            # pathlib sorts a folder's paths by their parts: by name, the folder being one
            for name in sorted(os.listdir(path)):  # noqa: PTH208  # (not pathlib: see above)
                entry = folder + name
                if name.startswith("."):  # before its stat, as scan_log_paths always did
                    skipped.append((entry, "hidden"))
                    continue
                found = _mode(entry)
                if found is not None and _S_ISDIR(found):
                    skipped.append((entry, "a sub-folder (name it to read it)"))
                elif found is None or not _S_ISREG(found):
                    skipped.append((entry, "not a regular file"))
                else:
                    inside.append((_date_key(name), entry))
            files.extend(entry for _, entry in sorted(inside, key=_first))
        elif mode is not None and _S_ISREG(mode):
            files.append(path)
        elif mode is not None:
            msg = f"{path}: not a regular file or folder"
            raise FileNotFoundError(msg)
        else:
            msg = f"{path}: no such file or directory"
            raise FileNotFoundError(msg)
    return files, skipped


def _first(pair: tuple[tuple[str, str, int, str], str]) -> tuple[str, str, int, str]:
    return pair[0]


# the errors pathlib's is_dir, is_file and exists take for "no" (pathlib._IGNORED_ERRNOS)
_MISSING_ERRNOS = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


def _mode(path: str) -> int | None:
    """Return the ``st_mode`` of ``path`` (links followed), or None as pathlib would say no."""
    try:
        return os.stat(path).st_mode  # noqa: PTH116  # (not pathlib: see scan_log_names)
    except OSError as exc:
        if exc.errno not in _MISSING_ERRNOS:
            raise
        return None
    except ValueError:  # a NUL in the name: pathlib's tests say no
        return None


def expand_log_paths(paths: StrPath | Iterable[StrPath]) -> list[Path]:
    """Expand files and directories into the ordered list of log files to read.

    Directories contribute every regular, non-hidden file directly inside them, ordered by the
    date in the file name (then by name); :func:`scan_log_paths` also says what it passed by.
    Files named explicitly keep the order given.

    Raises
    ------
    FileNotFoundError
        If a path does not exist.
    """
    return scan_log_paths(paths).files


def default_site_name(paths: StrPath | Iterable[StrPath]) -> str:
    """Name the site when none is given: the first path's name up to its first dot."""
    from gridtrace._atomic import path_text

    first = paths if isinstance(paths, str | os.PathLike) else next(iter(paths), "site")
    text = path_text(first)
    name = "" if text in ("/", "//", ".") else text.rpartition("/")[2]  # pathlib's name
    return name.split(".", 1)[0] or "site"
