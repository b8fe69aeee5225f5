"""The small-input path of the TORQUE reader (no numba) gives the tables of the compiled kernel.

``gridtrace parse`` of one day's file reads it with the reference tokeniser, so as not to import
numba and load the kernel (issue 17, item 4); a larger input, or one read after the kernel is
loaded, goes through the kernel. Whatever the path, the tables must be the same.
"""

from __future__ import annotations

import gzip
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.errors import DataQualityWarning
from gridtrace.logs import ParseResult, read_torque
from gridtrace.logs import _torque_fast as fast

from .test_torque_damage import damaged_file

VSC = "vsc-kuleuven-2016-06"


def _read(paths: list[Path], *, kernel: bool, monkeypatch: pytest.MonkeyPatch) -> ParseResult:
    with monkeypatch.context() as patch:
        if kernel:
            patch.setattr(fast, "SMALL_INPUT_LINES", 0)
        else:
            patch.setattr(fast, "_kernel_ready", lambda: False)
            patch.setattr(fast, "SMALL_INPUT_LINES", 1 << 62)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataQualityWarning)
            return read_torque(paths, site="site")


def _assert_same(a: ParseResult, b: ParseResult) -> None:
    assert a.records.equals(b.records)
    assert a.jobs.equals(b.jobs)
    assert a.quarantine.equals(b.quarantine)
    assert a.summary() == b.summary()


def test_the_path_follows_the_lines_read(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(fast, "_kernel_ready", lambda: False)
    monkeypatch.setattr(fast, "_reference_lines", 0)
    monkeypatch.setattr(fast, "SMALL_INPUT_LINES", 10)
    monkeypatch.setattr(fast, "tokenize_torque", lambda data, **_: calls.append("kernel"))
    monkeypatch.setattr(
        fast, "tokenize_torque_reference", lambda data, **_: calls.append("reference")
    )
    names = {"src_file": "f", "site": "s"}
    for lines in (4, 4, 4, 30, 1):
        fast.tokenize_torque_any(b"x\n" * lines, **names)
    # 4 + 4 lines by the reference; 4 more would reach 10; a file of 30 alone too
    assert calls == ["reference", "reference", "kernel", "kernel", "reference"]


@pytest.mark.realdata
@pytest.mark.parametrize("day", ["20160601", "20160614", "20160616", "20160630"])
def test_both_paths_give_the_same_tables_on_a_real_day(
    real_data: Path, tmp_path: Path, day: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = real_data / "torque" / VSC / f"{day}.gz"
    if not source.is_file():
        pytest.skip(f"{source} is missing")
    path = tmp_path / day
    path.write_bytes(gzip.decompress(source.read_bytes()))
    kernel = _read([path], kernel=True, monkeypatch=monkeypatch)
    small = _read([path], kernel=False, monkeypatch=monkeypatch)
    assert kernel.jobs.num_rows > 0
    _assert_same(kernel, small)


@pytest.mark.realdata
def test_both_paths_give_the_same_tables_on_the_real_month(
    real_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = real_data / "torque" / VSC
    if not folder.is_dir():
        pytest.skip(f"{folder} is missing")
    files = sorted(folder.glob("*.gz"))
    _assert_same(
        _read(files, kernel=True, monkeypatch=monkeypatch),
        _read(files, kernel=False, monkeypatch=monkeypatch),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(damaged_file(), min_size=1, max_size=3))
def test_both_paths_give_the_same_tables_on_damaged_files(files: list[bytes]) -> None:
    names = {"site": "fuzz", "source_format": "torque"}
    for i, data in enumerate(files):
        kernel = fast.tokenize_torque(data, src_file=f"f{i}", **names)
        small = fast.tokenize_torque_reference(data, src_file=f"f{i}", **names)
        assert kernel.records.equals(small.records)
        assert kernel.quarantine.equals(small.quarantine)
        assert kernel.lines_read == small.lines_read
