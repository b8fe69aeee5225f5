"""``gridtrace parse`` of a small TORQUE input in pure Python writes what the Arrow path writes.

Each case runs the command twice in this process: as users get it (the small path answers or
declines) and with the small path switched off; the three tables, the summary file and the
printed lines must be the same, and the small path must have answered where it should.
"""

from __future__ import annotations

import gzip
import json
import os
import warnings
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from gridtrace import cli
from gridtrace.logs import _small_parse

from ._small_spy import spy_on_small_parse

TABLES = ("records.parquet", "jobs.parquet", "quarantine.parquet")

CLEAN = (
    "05/03/2024 10:00:00;Q;202.pbs01;queue=grid\n"
    "05/03/2024 10:05:00;D;202.pbs01;requestor=alice@ui01\n"
    "05/03/2024 12:00:00;S;200.pbs01;user=bob group=cms queue=grid ctime=1714730000 "
    "qtime=1714730000 etime=1714730000 start=1714730100 exec_host=n002/0-3 "
    "Resource_List.nodes=1:ppn=4\n"
    "05/03/2024 12:00:00;E;200.pbs01;user=bob group=cms queue=grid ctime=1714730000 "
    "qtime=1714730000 etime=1714730000 start=1714730100 exec_host=n002/0-3 end=1714737600 "
    "Exit_status=0 resources_used.walltime=02:05:00 total_execution_slots=4\n"
    "05/03/2024 12:30:00;E;201.pbs01;user=carol group=dteam queue=grid ctime=1714730000 "
    "start=1714731000 exec_host=n003/0+n004/0 end=1714739400 Exit_status=271 "
    "Resource_List.walltime=02:00:00 resources_used.walltime=02:20:00 Resource_List.mem=2gb "
    "resources_used.mem=1048576kb resources_used.cput=01:00:00\n"
)


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[str]]:
    """Run the command; return its status, what it printed and the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = cli.main(args)
    return code, capsys.readouterr().out, [str(w.message) for w in caught]


def _both(
    paths: list[Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    *extra: str,
) -> bool:
    """Run both paths on ``paths``; assert they wrote the same; return whether small answered."""
    answered = spy_on_small_parse(monkeypatch)
    small_out, arrow_out = tmp_path / "small", tmp_path / "arrow"
    names = [str(p) for p in paths]
    small = _run(["parse", *names, "-o", str(small_out), *extra], capsys)
    monkeypatch.setattr(cli, "_small_parse", lambda args: None)
    arrow = _run(["parse", *names, "-o", str(arrow_out), *extra], capsys)
    assert small[0] == arrow[0]
    assert small[1].replace(str(small_out), "OUT") == arrow[1].replace(str(arrow_out), "OUT")
    assert small[2] == arrow[2]
    for name in TABLES:
        got, want = pq.read_table(small_out / name), pq.read_table(arrow_out / name)
        assert got.schema == want.schema, name
        assert got.to_pylist() == want.to_pylist(), name
    summaries = [(out / "parse-summary.json").read_text() for out in (small_out, arrow_out)]
    assert summaries[0] == summaries[1]
    return bool(answered) and answered[-1]


def test_a_clean_day_is_read_by_the_small_path_as_by_the_arrow_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "20240503"
    log.write_text(CLEAN)
    assert _both([log], tmp_path, capsys, monkeypatch)


def test_a_progress_bar_asked_for_leaves_a_small_input_to_the_small_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "20240503"
    log.write_text(CLEAN)
    assert _both([log], tmp_path, capsys, monkeypatch, "--progress")


def test_gzip_days_in_a_folder_and_vo_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    lines = CLEAN.splitlines(keepends=True)
    (folder / "20240504.gz").write_bytes(gzip.compress("".join(lines[3:]).encode()))
    (folder / "20240503").write_text("".join(lines[:3]))
    assert _both([folder], tmp_path, capsys, monkeypatch, "--vo", "group:cm.*=cms-vo")


@pytest.mark.parametrize(
    "damage",
    [
        b"garbage without separators\n",
        b"05/03/2024 13:00:00;E;203.pbs01;user=dave ctime=1714730000 start=17147",  # cut off
        b"05/03/2024 13:00:00;E;204.pbs01;user=\xe9ric queue=grid end=1714739400\r\n",
        b"\x00\x00\x0005/03/2024 13:00:00;Q;205.pbs01;queue=grid\n",
        b"host1:05/03/2024 13:00:00;Q;206.pbs01;queue=grid\n",
    ],
)
def test_damaged_lines_give_the_arrow_paths_tables_whichever_path_reads_them(
    damage: bytes,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = tmp_path / "20240503"
    log.write_bytes(CLEAN.encode() + damage)
    _both([log], tmp_path, capsys, monkeypatch)


def test_a_large_input_is_left_to_the_arrow_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "20240503"
    log.write_text(CLEAN)
    monkeypatch.setattr(_small_parse, "SMALL_PARSE_BYTES", 100)
    assert not _both([log], tmp_path, capsys, monkeypatch)


REAL = os.environ.get("GRIDTRACE_REAL_DATA")
VSC = Path(REAL or ".") / "torque" / "vsc-kuleuven-2016-06"


@pytest.mark.skipif(not REAL, reason="GRIDTRACE_REAL_DATA is not set")
@pytest.mark.parametrize("day", ["20160601.gz", "20160614.gz", "20160630.gz"])
def test_real_days_are_read_by_the_small_path_as_by_the_arrow_path(
    day: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _both([VSC / day], tmp_path, capsys, monkeypatch)


@pytest.mark.skipif(not REAL, reason="GRIDTRACE_REAL_DATA is not set")
def test_real_files_of_other_sites_give_the_arrow_paths_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for index, path in enumerate(sorted((Path(REAL or ".") / "torque").iterdir())):
        if path.is_file():
            _both([path], tmp_path / str(index), capsys, monkeypatch)


def test_summary_file_is_plain_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "20240503"
    log.write_text(CLEAN)
    assert cli.main(["parse", str(log), "-o", str(tmp_path / "out")]) == 0
    summary = json.loads((tmp_path / "out" / "parse-summary.json").read_text())
    assert summary["reconciled"] is True
    assert summary["jobs"] == 3  # 202 deleted, 200 and 201 ended
    capsys.readouterr()


@pytest.mark.parametrize("name", ["torque", "pbspro", "pbs", "openpbs"])
def test_the_small_paths_flag_catalog_is_the_registrys(name: str) -> None:
    from gridtrace.logs import flag_meanings
    from gridtrace.logs._torque_flags import torque_flag_meanings

    assert torque_flag_meanings(name) == flag_meanings(name)


@pytest.mark.parametrize(
    "argv",
    [["parse", "x", "-o", "y"], ["-v", "--traceback", "simulate", "t"], ["--help"], ["nope"], []],
)
def test_a_run_builds_its_own_commands_options_and_help_lists_all(argv: list[str]) -> None:
    parser = cli._build_parser(argv)
    full = cli._build_parser([])
    chosen = next((word for word in argv if not word.startswith("-")), None)
    subparsers = next(a for a in parser._actions if a.dest == "command")
    full_subparsers = next(a for a in full._actions if a.dest == "command")
    built = list(subparsers.choices)  # type: ignore[arg-type]
    assert built == ([chosen] if chosen in cli._COMMANDS else list(cli._COMMANDS))
    for name in built:
        mine = subparsers.choices[name].format_help()  # type: ignore[index]
        assert mine == full_subparsers.choices[name].format_help()  # type: ignore[index]


@pytest.mark.parametrize("columns", [None, "100", "0", "wide", "-5"])
def test_help_is_wrapped_to_the_width_shutil_gives(
    columns: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert cli._help_width() == shutil.get_terminal_size().columns - 2
