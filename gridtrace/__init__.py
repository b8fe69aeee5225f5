"""gridtrace: batch and grid accounting logs to job tables, workload models and simulations.

The stages are subpackages: :mod:`gridtrace.logs` (readers and writers), :mod:`gridtrace.models`
(arrival and runtime models, seed presets), :mod:`gridtrace.sim` (the site simulator) and
:mod:`gridtrace.report` (HTML reports). Importing ``gridtrace`` itself stays cheap.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)

if TYPE_CHECKING:
    from typing import Any

# logging's NullHandler on the "gridtrace" logger, as a library should: added now when logging
# is loaded, else by the first gridtrace logger that logs (gridtrace._log); importing logging
# here would cost a tenth of `gridtrace parse` of one day's file, which logs nothing
if "logging" in sys.modules:
    from gridtrace._log import add_null_handler

    add_null_handler()


def __getattr__(name: str) -> Any:
    # the version is looked up on first use: importlib.metadata costs some 20 ms at start-up
    if name != "__version__":
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("gridtrace")
    except PackageNotFoundError:  # running from a source tree that was not installed
        found = "0+unknown"
    globals()["__version__"] = found
    return found


__all__ = ["__version__"]
