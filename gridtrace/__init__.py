"""gridtrace: batch and grid accounting logs to job tables, workload models and simulations.

The stages are subpackages: :mod:`gridtrace.logs` (readers and writers), :mod:`gridtrace.models`
(arrival and runtime models, seed presets), :mod:`gridtrace.sim` (the site simulator) and
:mod:`gridtrace.report` (HTML reports). Importing ``gridtrace`` itself stays cheap.
"""

from __future__ import annotations

import logging
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("gridtrace")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0+unknown"

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = ["__version__"]
