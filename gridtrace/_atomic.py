"""Writing outputs atomically: a temporary file in the same folder, then a rename.

A reader of the output, or a run killed at any moment, sees the old file or the new one, never half
of one: :func:`os.replace` within one folder is atomic on POSIX and Windows. The temporary file is
named ``.<name>.<random>.tmp`` (hidden, so folder scans of logs and outputs pass it by) and is
removed when the write fails; only a hard kill can leave one behind, beside an intact output.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TYPE_CHECKING = False  # typing's constant without importing typing (mypy knows the name)
if TYPE_CHECKING:  # pyarrow costs 0.2 s to import: the small parse path writes without it
    from typing import Any

    import pyarrow as pa

__all__ = ["atomic_path", "write_bytes", "write_parquet", "write_text"]

StrPath = str | os.PathLike[str]


@contextmanager
def atomic_path(path: StrPath) -> Iterator[Path]:
    r"""Yield a temporary path beside ``path``; on a clean exit it replaces ``path`` in one step.

    Parameters
    ----------
    path : str or path-like
        The output. Its folder must exist.

    Yields
    ------
    pathlib.Path
        Where to write. The file exists (empty, with the permissions a new file gets) so that
        writers that only open it in place can use it too.

    Examples
    --------
    >>> with atomic_path(tmp / "out.swf") as temporary:  # doctest: +SKIP
    ...     temporary.write_text("; Version: 2.2\\n")
    """
    target = Path(path)
    # os.urandom, not secrets: secrets imports random and hashlib, a tenth of a small parse
    temporary = target.with_name(f".{target.name}.{os.urandom(6).hex()}.tmp")
    # created with os.open, not tempfile, so that the umask (not 0600) sets the permissions
    descriptor = os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
    os.close(descriptor)
    try:
        yield temporary
        with temporary.open("rb") as handle:
            os.fsync(handle.fileno())
        temporary.replace(target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_bytes(path: StrPath, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_path(path) as temporary:
        temporary.write_bytes(data)


def write_text(path: StrPath, text: str) -> None:
    """Write ``text`` to ``path`` atomically, as UTF-8 with Unix line ends."""
    with atomic_path(path) as temporary, temporary.open("w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def write_parquet(table: pa.Table, path: StrPath, **options: Any) -> None:
    """Write ``table`` to ``path`` as Parquet, atomically (``options`` go to ``write_table``)."""
    import pyarrow.parquet as pq

    with atomic_path(path) as temporary:
        pq.write_table(table, temporary, **options)
