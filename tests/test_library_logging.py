"""gridtrace as a library: its loggers carry the package's NullHandler, however logging loads.

``gridtrace/__init__.py`` adds the handler only when :mod:`logging` is already imported (the
small ``gridtrace parse`` path never imports it). Every module that imports :mod:`logging`
later takes its logger from ``gridtrace._log.library_logger``, which adds it; these tests hold
that for every module, and show the effect an application sees: no record on stderr from a
library it never configured logging for.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import gridtrace

PACKAGE = Path(gridtrace.__file__).parent


def test_no_module_takes_a_plain_named_logger() -> None:
    plain = re.compile(r"logging\.getLogger\(\s*__name__\s*\)")
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "_log.py" and plain.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], (
        "take the logger from gridtrace._log.library_logger (or get_logger), "
        f"not logging.getLogger(__name__): {offenders}"
    )


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )


def test_a_reader_imported_after_gridtrace_logs_nothing_to_stderr_unconfigured() -> None:
    # gridtrace first, logging not yet loaded: __init__ cannot add the handler itself
    done = _run(
        "import sys\n"
        "import gridtrace\n"
        "assert 'logging' not in sys.modules\n"
        "from gridtrace.logs import _lsf\n"
        "import logging\n"
        "handlers = logging.getLogger('gridtrace').handlers\n"
        "print(sum(isinstance(h, logging.NullHandler) for h in handlers))\n"
        "_lsf.logger.warning('a warning no handler was configured for')\n"
    )
    assert done.stdout.strip() == "1"
    assert "a warning no handler was configured for" not in done.stderr


def test_an_application_that_configures_logging_still_sees_the_records() -> None:
    done = _run(
        "import logging, sys\n"
        "import gridtrace\n"
        "from gridtrace.logs import _lsf\n"
        "logging.basicConfig(stream=sys.stdout, format='%(name)s %(message)s')\n"
        "_lsf.logger.warning('seen')\n"
    )
    assert done.stdout.strip() == "gridtrace.logs._lsf seen"
