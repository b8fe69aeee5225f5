"""Writing outputs atomically: a temporary file in the same folder, then a rename.

A reader of the output, or a run killed at any moment, sees the old file or the new one, never half
of one: :func:`os.replace` within one folder is atomic on POSIX and Windows. The temporary file is
named ``.<name>.<random>.tmp`` (hidden, so folder scans of logs and outputs pass it by) and is
removed when the write fails; only a hard kill can leave one behind, beside an intact output.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's constant without importing typing (mypy knows the name)
if TYPE_CHECKING:  # pyarrow costs 0.2 s to import: the small parse path writes without it
    from pathlib import Path
    from types import TracebackType
    from typing import Any

    import pyarrow as pa

__all__ = ["atomic_name", "atomic_path", "path_text", "write_bytes", "write_parquet", "write_text"]

StrPath = str | os.PathLike[str]


def path_text(path: StrPath) -> str:
    """Return ``str(pathlib.Path(path))``: the path as pathlib spells it, without pathlib.

    Importing :mod:`pathlib` (and urllib.parse, ipaddress, fnmatch) costs some 17 M instructions,
    7% of ``gridtrace parse`` of one day's file, whose paths need only their text. On POSIX
    this spells a path as pathlib does: empty and ``.`` parts dropped, a trailing slash too, two
    leading slashes kept (one or three and more are one), ``.`` for nothing; elsewhere pathlib
    is asked.

    Parameters
    ----------
    path : str or path-like
        The path.

    Returns
    -------
    str
        ``str(pathlib.Path(path))``.
    """
    text = os.fspath(path)
    if os.name != "posix" or not isinstance(text, str):
        from pathlib import Path

        return str(Path(text))
    root = ""
    if text.startswith("/"):
        root = "//" if text.startswith("//") and not text.startswith("///") else "/"
    return root + "/".join(part for part in text.split("/") if part and part != ".") or "."


class _Atomic:
    """The context of :func:`atomic_name`: the temporary file's name, then the rename."""

    __slots__ = ("target", "temporary")

    def __init__(self, path: StrPath) -> None:
        self.target = path_text(path)
        folder, slash, name = self.target.rpartition("/")
        # os.urandom, not secrets: secrets imports random and hashlib, a tenth of a small parse
        hidden = f".{name}.{os.urandom(6).hex()}.tmp"
        if self.target in ("/", "//", "."):  # no name: pathlib says so (a ValueError)
            from pathlib import Path

            hidden = str(Path(self.target).with_name(hidden))
        self.temporary = folder + slash + hidden

    def __enter__(self) -> str:
        # created with os.open, not tempfile, so that the umask (not 0600) sets the permissions
        descriptor = os.open(self.temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        os.close(descriptor)
        return self.temporary

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if kind is None:
                # os and open, not pathlib: see path_text
                with open(self.temporary, "rb") as handle:  # noqa: PTH123
                    os.fsync(handle.fileno())
                os.replace(self.temporary, self.target)  # noqa: PTH105
                return
        except BaseException:
            self._remove()
            raise
        self._remove()  # the body raised: its exception goes on

    def _remove(self) -> None:
        # not contextlib.suppress: contextlib is one more module to load
        try:  # noqa: SIM105
            os.unlink(self.temporary)  # noqa: PTH108
        except FileNotFoundError:
            pass


class _AtomicPath(_Atomic):
    __slots__ = ()

    def __enter__(self) -> Path:  # type: ignore[override]  # a Path, not its name
        from pathlib import Path

        return Path(super().__enter__())


def atomic_name(path: StrPath) -> _Atomic:
    """Return a context giving the name of a temporary file beside ``path``, as :func:`atomic_path`.

    The same as :func:`atomic_path`, with the temporary file's name as a ``str`` (what a writer
    that opens it itself needs, without pathlib).

    Parameters
    ----------
    path : str or path-like
        The output. Its folder must exist.

    Returns
    -------
    context manager
        Entered, it gives the temporary file's name; on a clean exit the file replaces
        ``path`` in one step, and on an exception it is removed.
    """
    return _Atomic(path)


def atomic_path(path: StrPath) -> _AtomicPath:
    r"""Yield a temporary path beside ``path``; on a clean exit it replaces ``path`` in one step.

    Parameters
    ----------
    path : str or path-like
        The output. Its folder must exist.

    Returns
    -------
    context manager
        Entered, it gives where to write, a :class:`pathlib.Path`. The file exists (empty,
        with the permissions a new file gets) so that writers that only open it in place can
        use it too.

    Examples
    --------
    >>> with atomic_path(tmp / "out.swf") as temporary:  # doctest: +SKIP
    ...     temporary.write_text("; Version: 2.2\\n")
    """
    return _AtomicPath(path)


def write_bytes(path: StrPath, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_name(path) as temporary, open(temporary, "wb") as handle:  # noqa: PTH123
        handle.write(data)


def write_text(path: StrPath, text: str) -> None:
    """Write ``text`` to ``path`` atomically, as UTF-8 with Unix line ends."""
    with (
        atomic_name(path) as temporary,
        open(temporary, "w", encoding="utf-8", newline="\n") as f,  # noqa: PTH123
    ):
        f.write(text)


def write_parquet(table: pa.Table, path: StrPath, **options: Any) -> None:
    """Write ``table`` to ``path`` as Parquet, atomically (``options`` go to ``write_table``)."""
    import pyarrow.parquet as pq

    with atomic_path(path) as temporary:
        pq.write_table(table, temporary, **options)
