"""Exceptions and warnings raised by gridtrace.

Every error derives from :class:`GridtraceError`; each specific class also inherits the builtin a
caller would naturally catch (``ValueError``, ``RuntimeError``, ...), so ``except ValueError`` keeps
working for code that does not know gridtrace.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "ConvergenceWarning",
    "DataQualityWarning",
    "FitError",
    "GridtraceError",
    "GridtraceWarning",
    "LogParseError",
    "NotFittedError",
    "SchemaError",
    "SimulationError",
    "UnknownFormatError",
]


class GridtraceError(Exception):
    """Root of every exception gridtrace raises."""


class LogParseError(GridtraceError, ValueError):
    """A line of an accounting log could not be read.

    Parameters
    ----------
    message : str
        What is wrong and what to do about it.
    path : str
        The file the line came from.
    lineno : int
        1-based line number in that file.
    line : bytes
        The raw line, as read.
    """

    def __init__(self, message: str, *, path: str, lineno: int, line: bytes = b"") -> None:
        self.path = path
        self.lineno = lineno
        self.line = line
        super().__init__(f"{path}:{lineno}: {message}")


class UnknownFormatError(GridtraceError, ValueError):
    """The format of a log could not be recognised, or no reader is registered for it."""


class SchemaError(GridtraceError, ValueError):
    """A table does not match its Arrow schema.

    Parameters
    ----------
    message : str
        Summary of the mismatch.
    failure_cases : list of str, optional
        One entry per offending column or value.
    """

    def __init__(self, message: str, failure_cases: list[str] | None = None) -> None:
        self.failure_cases = list(failure_cases or [])
        detail = "; ".join(self.failure_cases)
        super().__init__(f"{message}: {detail}" if detail else message)


class ConfigError(GridtraceError, ValueError):
    """A configuration value is missing, malformed or inconsistent."""


class NotFittedError(GridtraceError, ValueError, AttributeError):
    """A model was used before ``fit`` was called."""


class SimulationError(GridtraceError, RuntimeError):
    """The simulator reached a state its semantics forbid."""


class GridtraceWarning(UserWarning):
    """Root of every warning gridtrace emits."""


class DataQualityWarning(GridtraceWarning):
    """Input data was readable but questionable (quarantined lines, guessed units, ...)."""


class FitError(GridtraceError, ValueError):
    """Data cannot be fitted by a model (too few points, unsorted times, values out of support)."""


class ConvergenceWarning(GridtraceWarning):
    """An iterative fit stopped at its iteration cap before meeting its tolerance."""
