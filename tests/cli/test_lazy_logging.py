"""``gridtrace parse`` imports logging only when it logs, and then says what it said before.

The command configures logging when something is first logged or warned
(:mod:`gridtrace._log`). Its output must not change: each run below is made twice in a fresh
interpreter, once as it is and once with :mod:`logging` imported beforehand (then the command
configures logging at its start, as it always did), and the two must print the same bytes.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from gridtrace import _log, cli

from .test_startup import LINES

_RUN = """
import json, sys
if sys.argv[1] == "preload":
    import logging
from gridtrace.cli import main
code = main(sys.argv[2:])
print(json.dumps({"code": code, "logging": "logging" in sys.modules}))
"""

# one job per day, the days given in the wrong order: the time-order warning (a logger's)
LATE = (
    "05/04/2024 12:00:00;E;301.pbs01;user=bob group=cms queue=grid ctime=1714816000 "
    "start=1714816100 exec_host=n002/0-3 end=1714824000 Exit_status=0\n"
)
EARLY = (
    "05/03/2024 12:00:00;E;300.pbs01;user=bob group=cms queue=grid ctime=1714730000 "
    "start=1714730100 exec_host=n002/0-3 end=1714737600 Exit_status=0\n"
)


def _run(preload: bool, *args: str) -> tuple[dict[str, object], str, str]:
    done = subprocess.run(
        [sys.executable, "-c", _RUN, "preload" if preload else "lazy", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    *printed, last = done.stdout.splitlines(keepends=True)
    found: dict[str, object] = json.loads(last)
    return found, "".join(printed), done.stderr


def _both(*args: str) -> tuple[dict[str, object], str, str]:
    """Run lazily and preloaded; check both print the same; return the lazy run's findings."""
    lazy = _run(False, *args)
    preloaded = _run(True, *args)
    assert lazy[0]["code"] == preloaded[0]["code"]
    assert lazy[1:] == preloaded[1:]
    return lazy


def test_a_plain_small_parse_does_not_import_logging(tmp_path: Path) -> None:
    log = tmp_path / "20240503"
    log.write_text(LINES)
    found, printed, said = _both("parse", str(log), "-o", str(tmp_path / "out"))
    assert found == {"code": 0, "logging": False}
    assert printed.startswith("4 lines read from 1 file(s): 4 parsed, 0 quarantined\n")
    assert said == ""


def test_a_quarantined_line_is_warned_of_through_logging(tmp_path: Path) -> None:
    log = tmp_path / "20240503"
    log.write_text(LINES + "this is not a TORQUE line\n")
    found, printed, said = _both("parse", str(log), "-o", str(tmp_path / "out"))
    assert found == {"code": 0, "logging": True}
    assert "1 quarantined" in printed
    assert said.startswith("WARNING py.warnings: ")
    assert "DataQualityWarning" in said


def test_a_loggers_warning_is_printed_as_before(tmp_path: Path) -> None:
    late, early = tmp_path / "20240503", tmp_path / "20240504"
    late.write_text(LATE)
    early.write_text(EARLY)
    found, _, said = _both("parse", str(late), str(early), "-o", str(tmp_path / "out"))
    assert found == {"code": 0, "logging": True}
    assert said.startswith("WARNING gridtrace.logs._torque: 2 of 2 files were given out of")


def test_quiet_leaves_the_warning_out(tmp_path: Path) -> None:
    late, early = tmp_path / "20240503", tmp_path / "20240504"
    late.write_text(LATE)
    early.write_text(EARLY)
    found, _, said = _both("-q", "parse", str(late), str(early), "-o", str(tmp_path / "out"))
    assert found["code"] == 0
    assert said == ""


def test_an_error_is_logged_in_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here"
    found, printed, said = _both("parse", str(missing), "-o", str(tmp_path / "out"))
    assert found == {"code": 2, "logging": True}
    assert printed == ""
    assert said.startswith(f"ERROR gridtrace.cli: {missing}")
    assert said.count("\n") == 1


def test_verbose_shows_why_the_small_path_declines(tmp_path: Path) -> None:
    log = tmp_path / "20240503"
    # a hexadecimal exit status: the small assembly declines it (logged at DEBUG level)
    log.write_text(LATE.replace("Exit_status=0", "Exit_status=0x10"))
    found, _, said = _both("-v", "parse", str(log), "-o", str(tmp_path / "out"))
    assert found == {"code": 0, "logging": True}
    assert "DEBUG gridtrace.logs._torque_small_jobs: small TORQUE assembly declined" in said


def test_the_levels_named_by_the_command_are_loggings() -> None:
    assert (cli._DEBUG, cli._INFO, cli._ERROR) == (logging.DEBUG, logging.INFO, logging.ERROR)


def test_a_lazy_logger_logs_through_the_standard_logger_of_its_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lazy = _log.get_logger("gridtrace.logs._lazy_test")
    with caplog.at_level(logging.DEBUG, logger="gridtrace.logs._lazy_test"):
        lazy.debug("read %d lines", 3)
        lazy.warning("a warning")
    assert lazy.logger is logging.getLogger("gridtrace.logs._lazy_test")
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("gridtrace.logs._lazy_test", logging.DEBUG, "read 3 lines"),
        ("gridtrace.logs._lazy_test", logging.WARNING, "a warning"),
    ]
    # the record names the caller, not the lazy logger's method
    assert {r.funcName for r in caplog.records} == {
        "test_a_lazy_logger_logs_through_the_standard_logger_of_its_name"
    }
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("gridtrace").handlers)


def test_a_library_import_keeps_the_null_handler() -> None:
    script = (
        "import logging, gridtrace\n"
        "print(any(isinstance(h, logging.NullHandler) "
        "for h in logging.getLogger('gridtrace').handlers))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300
    )
    assert done.stdout.strip() == "True"
