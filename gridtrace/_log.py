"""Loggers that import :mod:`logging` when they first log, for the small ``gridtrace parse`` path.

Importing :mod:`logging` loads traceback, linecache, tokenize, string, threading and weakref:
some 30 M instructions, over a tenth of ``gridtrace parse`` of one day's file, which on its
plain path logs nothing. The modules of that path hold a :class:`LazyLogger` instead of a
:class:`logging.Logger`: it stands for ``logging.getLogger(name)`` and imports :mod:`logging`
at its first call, so every record still goes through the standard logger of that name (its
level, handlers and propagation, pytest's ``caplog``).

The ``gridtrace`` command configures logging the same way: :func:`defer_config` keeps the
configuration :func:`logging.basicConfig` and :func:`logging.captureWarnings` would make, and
applies it when anything is first logged or warned (:func:`configure`).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)

if TYPE_CHECKING:
    import logging
    from typing import Any

__all__ = [
    "LazyLogger",
    "add_null_handler",
    "configure",
    "defer_config",
    "get_logger",
    "library_logger",
]

_PACKAGE = "gridtrace"

# the deferred configuration of the command line: (level, format), or None when none is waiting
_pending: tuple[int, str] | None = None
# warnings.showwarning as it was before defer_config replaced it with _show_warning
_original_showwarning: Any = None


def add_null_handler() -> None:
    """Give the ``gridtrace`` logger its :class:`logging.NullHandler` (once).

    As a library should: records of gridtrace go nowhere, instead of to logging's last-resort
    handler on stderr, until the application configures logging.
    """
    import logging

    root = logging.getLogger(_PACKAGE)
    if not any(isinstance(handler, logging.NullHandler) for handler in root.handlers):
        root.addHandler(logging.NullHandler())


def library_logger(name: str) -> logging.Logger:
    """Return ``logging.getLogger(name)``, with the ``gridtrace`` logger's NullHandler in place.

    Every gridtrace module that imports :mod:`logging` at its own import takes its logger from
    here: ``gridtrace`` itself adds the handler only when :mod:`logging` is already loaded (see
    ``gridtrace/__init__.py``), so a module that loads it later must see that the handler is
    there, or its warnings would reach logging's last-resort handler on stderr in an
    application that never configured logging.

    Parameters
    ----------
    name : str
        The logger's name (a module's ``__name__``).

    Returns
    -------
    logging.Logger
        The standard logger of that name.
    """
    import logging

    add_null_handler()
    return logging.getLogger(name)


class LazyLogger:
    """``logging.getLogger(name)``, looked up (and :mod:`logging` imported) at the first call.

    Parameters
    ----------
    name : str
        The logger's name, as :func:`logging.getLogger` takes it (a module's ``__name__``).
    """

    __slots__ = ("_logger", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: logging.Logger | None = None

    @property
    def logger(self) -> logging.Logger:
        """The standard logger this one stands for (configured first if the command waits)."""
        found = self._logger
        if found is None:
            configure()
            import logging

            add_null_handler()
            found = self._logger = logging.getLogger(self.name)
        return found

    def isEnabledFor(self, level: int) -> bool:  # logging.Logger's name
        """Whether a record of ``level`` would be handled (:meth:`logging.Logger.isEnabledFor`)."""
        return self.logger.isEnabledFor(level)

    def debug(self, msg: object, *args: object, **kwargs: Any) -> None:
        """Log ``msg % args`` at DEBUG level (:meth:`logging.Logger.debug`)."""
        self.logger.debug(msg, *args, stacklevel=2, **kwargs)

    def info(self, msg: object, *args: object, **kwargs: Any) -> None:
        """Log ``msg % args`` at INFO level (:meth:`logging.Logger.info`)."""
        self.logger.info(msg, *args, stacklevel=2, **kwargs)

    def warning(self, msg: object, *args: object, **kwargs: Any) -> None:
        """Log ``msg % args`` at WARNING level (:meth:`logging.Logger.warning`)."""
        self.logger.warning(msg, *args, stacklevel=2, **kwargs)

    def error(self, msg: object, *args: object, **kwargs: Any) -> None:
        """Log ``msg % args`` at ERROR level (:meth:`logging.Logger.error`)."""
        self.logger.error(msg, *args, stacklevel=2, **kwargs)


def get_logger(name: str) -> LazyLogger:
    """Return a :class:`LazyLogger` for ``logging.getLogger(name)``.

    Parameters
    ----------
    name : str
        The logger's name (a module's ``__name__``).

    Returns
    -------
    LazyLogger
        It imports :mod:`logging` when it first logs.
    """
    return LazyLogger(name)


def defer_config(level: int, fmt: str) -> None:
    """Configure logging as ``basicConfig(level, format)`` and ``captureWarnings(True)`` would.

    Applied at the first record of a :class:`LazyLogger` or the first warning shown
    (:func:`configure`); at once when :mod:`logging` is already imported.

    Parameters
    ----------
    level : int
        The root logger's level (``logging.INFO``, ...: plain ints, so that the caller need not
        import :mod:`logging`).
    fmt : str
        The records' format.
    """
    global _pending, _original_showwarning
    _pending = (level, fmt)
    if "logging" in sys.modules:
        configure()
        return
    import warnings

    _original_showwarning = warnings.showwarning
    warnings.showwarning = _show_warning


def configure() -> None:
    """Apply the configuration :func:`defer_config` keeps, if one is waiting."""
    global _pending
    if _pending is None:
        return
    level, fmt = _pending
    _pending = None
    import logging
    import warnings

    if warnings.showwarning is _show_warning:
        # captureWarnings keeps the function it replaces, to restore: the original, not ours
        warnings.showwarning = _original_showwarning
    logging.basicConfig(level=level, format=fmt)
    logging.captureWarnings(True)


def release() -> None:
    """Undo :func:`defer_config`: stop capturing warnings (if logging was configured)."""
    global _pending
    if _pending is not None:  # never applied: put back the function we replaced
        _pending = None
        import warnings

        if warnings.showwarning is _show_warning:
            warnings.showwarning = _original_showwarning
        return
    if "logging" in sys.modules:
        import logging

        logging.captureWarnings(False)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """Configure logging (which then captures warnings), and show this warning through it."""
    import warnings

    configure()
    warnings.showwarning(message, category, filename, lineno, file, line)
