"""The out-of-time-order warning of ``gridtrace parse``: logged once, whichever path reads.

The small TORQUE path reads the files before it knows whether its assembly takes them; when
the assembly declines, the Arrow path reads them again and warns itself, so the small reading
must not have warned already.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gridtrace import cli

from ._small_spy import spy_on_small_parse

# one job per day, the days named (and given) in the wrong order
LATE = (
    "05/04/2024 12:00:00;E;301.pbs01;user=bob group=cms queue=grid ctime=1714816000 "
    "start=1714816100 exec_host=n002/0-3 end=1714824000 Exit_status={status}\n"
)
EARLY = (
    "05/03/2024 12:00:00;E;300.pbs01;user=bob group=cms queue=grid ctime=1714730000 "
    "start=1714730100 exec_host=n002/0-3 end=1714737600 Exit_status=0\n"
)
WARNING = "files were given out of time order"


def _parse(
    tmp_path: Path, status: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], bool]:
    """Parse the two days; return the warnings logged and whether the small path answered."""
    late, early = tmp_path / "20240503", tmp_path / "20240504"
    late.write_text(LATE.format(status=status))
    early.write_text(EARLY)
    answered = spy_on_small_parse(monkeypatch)
    with caplog.at_level(logging.WARNING):
        code = cli.main(["parse", str(late), str(early), "-o", str(tmp_path / "out")])
    assert code == 0
    said = [r.getMessage() for r in caplog.records if WARNING in r.getMessage()]
    return said, answered == [True]


def test_the_small_path_warns_once_of_files_out_of_time_order(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    said, small = _parse(tmp_path, "0", caplog, monkeypatch)
    assert small
    names = f"{tmp_path / '20240504'}, {tmp_path / '20240503'}"
    assert said == [
        "2 of 2 files were given out of time order; read in the order of their records' "
        f"stamps: {names}"
    ]
    capsys.readouterr()


def test_a_reading_the_small_assembly_declines_is_warned_of_once(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # a hexadecimal exit status: the Arrow path reads it by context, so the small assembly
    # declines after the small reading took the files (and put them in time order)
    said, small = _parse(tmp_path, "0x10", caplog, monkeypatch)
    assert not small
    assert len(said) == 1
    assert said[0].startswith("2 of 2 files were given out of time order")
    capsys.readouterr()
