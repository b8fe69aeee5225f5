"""The small TORQUE reading path (no numpy, no pyarrow) declines or equals the Arrow path.

:func:`read_torque_records_small` returns the ``records`` and ``quarantine`` columns that
``parse_logs`` has before it assembles jobs, and the summary facts reading fills in; for any input
it does not reproduce exactly it returns None. The oracle is the Arrow path itself: each file
tokenised as ``parse_logs`` tokenises it (``_registry._tokenize``: the guard, the streaming core,
the compiled kernel or the reference), put in time order by ``in_time_order`` and concatenated,
and ``parse_logs``'s own result for the quarantine, the files and the summary.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import subprocess
import sys
import tempfile
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import parse_logs
from gridtrace.logs._io import MAX_LINE_BYTES, StrPath, default_site_name, scan_log_paths
from gridtrace.logs._registry import _tokenize
from gridtrace.logs._torque import _median_stamp, in_time_order
from gridtrace.logs._torque_small_read import (
    SmallRecords,
    read_torque_records_small,
)
from gridtrace.logs._torque_small_read import (
    _median_stamp as small_median,
)
from gridtrace.schema import QUARANTINE, RECORDS

from .test_torque_damage import LITERAL, damaged_file

VSC = "vsc-kuleuven-2016-06"
BIG = 1 << 30  # max_bytes for inputs meant to be read whatever their size


def arrow_path(
    paths: StrPath | list[StrPath], site: str | None = None, format: str | None = None
) -> tuple[dict[str, Any], Any]:
    """Return the Arrow path's records before assembly (Python columns) and parse_logs' result."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = parse_logs(paths, site=site, format=format)
    given = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    site = site or default_site_name(given)
    parts = [_tokenize("torque", str(f), site) for f in scan_log_paths(given).files]
    parts, _ = in_time_order(parts)
    records = pa.concat_tables([p.records for p in parts]) if parts else RECORDS.empty_table()
    return records.to_pydict(), result


def assert_equal(small: SmallRecords, paths: StrPath | list[StrPath], **options: Any) -> None:
    """The small path's columns and facts are the Arrow path's."""
    records, result = arrow_path(paths, **options)
    assert result.info["format"] == "torque"
    assert list(small.records) == RECORDS.names
    assert list(small.quarantine) == QUARANTINE.names
    assert small.records == records
    assert small.quarantine == result.quarantine.to_pydict()
    assert small.files == list(result.files)
    summary = result.summary()
    assert len(small.files) == summary["files"]
    assert small.lines_read == summary["lines_read"]
    assert len(small.quarantine["reason"]) == summary["lines_quarantined"]
    assert (
        dict(sorted(Counter(small.quarantine["reason"]).items())) == (summary["quarantine_reasons"])
    )
    assert small.files_reordered == summary["files_reordered"]
    assert small.nul_bytes_stripped == summary["nul_bytes_stripped"]
    assert small.skipped == summary["skipped"]
    assert small.files_failed == summary["files_failed"]
    assert small.input == summary["input"]
    if records["site"]:
        assert small.site == records["site"][0]


def declined_or_equal(paths: StrPath | list[StrPath], **options: Any) -> SmallRecords | None:
    small = read_torque_records_small(paths, max_bytes=BIG, **options)
    if small is not None:
        assert_equal(small, paths, **options)
    return small


# --------------------------------------------------------------------------------------------
# real logs


def _real(real_data: Path, name: str) -> Path:
    path = real_data / "torque" / name
    if not path.exists():
        pytest.skip(f"{path} is missing")
    return path


@pytest.mark.realdata
def test_every_vsc_day_is_read_and_equal(real_data: Path) -> None:
    days = sorted(_real(real_data, VSC).glob("*.gz"))
    assert len(days) == 30
    for day in days:
        small = read_torque_records_small(day)  # the default limit: a day is small
        assert small is not None, day
        assert_equal(small, day)


@pytest.mark.realdata
def test_the_vsc_month_is_read_and_equal(real_data: Path) -> None:
    month = _real(real_data, VSC)
    small = read_torque_records_small(month, max_bytes=BIG)
    assert small is not None
    assert small.lines_read == 58_904
    assert_equal(small, month)
    # the days named out of order are read in time order, as the Arrow path reads them
    days = sorted(month.glob("*.gz"), reverse=True)[:3]
    small = read_torque_records_small(days, site="vsc")
    assert small is not None
    assert small.files_reordered == 2
    assert_equal(small, days, site="vsc")
    # a file named twice (a copy): both read, in the order given
    twice = [days[0], days[0], days[1]]
    small = read_torque_records_small(twice)
    assert small is not None
    assert small.files == [str(days[1]), str(days[0]), str(days[0])]
    assert_equal(small, twice)


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["ncar-laramie-pbspro-20180212", "xdmod-shredder-pbs-fixture.log"])
def test_the_other_real_files_are_declined_or_equal(real_data: Path, name: str) -> None:
    small = declined_or_equal(_real(real_data, name))
    if small is not None and name.startswith("ncar"):
        assert set(small.records["source_format"]) == {"pbspro"}


# --------------------------------------------------------------------------------------------
# damaged lines, compressions, several files, folders

DAMAGED = [
    LITERAL[1] + b"\r",  # CRLF
    b"05/03/2024 10:01:00;Q;20" + b"\x00" * 40 + LITERAL[2],  # NUL_STRIPPED, CUT_FRAGMENT
    b"05/03/2024 10:02:00;Q;203.pbs01;queue=gr\x00\x00id",  # NUL_INSIDE
    b"05/03/2024 10:03:00;Q;204.pbs01;queue=grid owner=g\xe9rard",  # NON_UTF8
    b"05/03/2024 10:04:00;Q;205.pbs01;queue=grid\x1b owner=x",  # CONTROL_CHARS
    b"20240503:05/03/2024 10:05:00;Q;206.pbs01;queue=grid",  # FILE_PREFIX
    b"05/03/2024 10:06:00;Q;207.pbs01;queue=grid lonely",  # BARE_TOKEN
    b"05/03/2024 10:07:00;S;208.pbs01;tasks=a tasks=b start=1 exec_host=n/0",  # REPEATED_KEY
    b"\x00\x00\x00",  # NUL bytes only
    b"",  # blank
    b"not an accounting line",
    b"13/03/2024 10:00:00;Q;209.pbs01;queue=grid",  # impossible date
    b"05/03/2024 10:08:00;E;210.pbs01;user=a start=1 exec_host=n/0 end=9 Exit_status=13",
]


def _write(path: Path, data: bytes, compression: str, cut: int | None = None) -> None:
    """Write ``data`` compressed; ``cut``: keep that many bytes of it (a broken stream)."""
    pack = {"plain": bytes, "gzip": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}
    path.write_bytes(pack[compression](data)[:cut])


@pytest.mark.parametrize("compression", ["plain", "gzip", "bz2", "xz"])
# the last line (an E record ending in Exit_status=13): ended; cut on Exit_status (TRUNCATED);
# unended after a whole last key (NO_NEWLINE only)
@pytest.mark.parametrize("ending", [b"\n", b"", b" queue=q"])
def test_damaged_lines_are_read_and_equal(tmp_path: Path, compression: str, ending: bytes) -> None:
    path = tmp_path / "20240503"
    _write(path, b"\n".join([*LITERAL, *DAMAGED]) + ending, compression)
    small = read_torque_records_small(path)
    assert small is not None  # each damage here is reproduced, not declined
    flags = Counter(flag for row in small.records["flags"] for flag in row)
    wanted = {"CRLF", "NUL_STRIPPED", "CUT_FRAGMENT", "NUL_INSIDE", "NON_UTF8", "CONTROL_CHARS"}
    wanted |= {"FILE_PREFIX", "BARE_TOKEN", "REPEATED_KEY"}
    assert wanted <= set(flags)
    assert flags["NO_NEWLINE"] == (ending != b"\n")
    assert flags["TRUNCATED"] == (ending == b"")
    assert small.nul_bytes_stripped > 0
    assert_equal(small, path)


def test_files_out_of_time_order_a_folder_and_what_it_passes_by(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "sub").mkdir()
    (folder / ".hidden").write_bytes(LITERAL[1] + b"\n")
    (folder / "20240501").write_bytes(b"\n".join(LITERAL[:6]) + b"\n")
    _write(folder / "20240502.gz", b"\n".join(LITERAL[6:]) + b"\n", "gzip")  # 2018: first
    (folder / "20240503").write_bytes(b"")  # empty: read as TORQUE, no line
    (folder / "20240504").write_bytes(b"\n\n")  # blank lines only: read, gives no record
    small = read_torque_records_small(folder, site="x")
    assert small is not None
    assert small.files_reordered > 0
    assert [entry["why"] for entry in small.skipped] == [
        "hidden",
        "a sub-folder (name it to read it)",
    ]
    assert [entry["file"] for entry in small.files_failed] == [str(folder / "20240504")]
    assert_equal(small, folder, site="x")
    # files named explicitly, with --format, and a site from the first path
    named = [folder / "20240501", folder / "20240502.gz"]
    small = read_torque_records_small(named, format="pbs")
    assert small is not None
    assert small.site == "20240501"
    assert_equal(small, named, format="pbs")
    # a file that gives no record, with --format: the advice needs the other formats' sniffs
    assert read_torque_records_small([*named, folder / "20240504"], format="pbs") is None


@st.composite
def log_folder(draw: st.DrawFn) -> list[tuple[str, bytes, str, int | None]]:
    """Files of damaged real lines (any dates, so any order), some empty, any compression."""
    files = []
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 9))  # mostly damaged TORQUE lines, recognised or not
        data = b"" if kind == 0 else draw(st.binary(max_size=40) if kind == 1 else damaged_file())
        compression = draw(st.sampled_from(["plain", "gzip", "bz2", "xz"]))
        cut = None
        if compression != "plain" and draw(st.integers(0, 9)) == 0:
            cut = draw(st.integers(0, 200))  # a broken compressed stream now and then
        files.append((f"202405{draw(st.integers(1, 28)):02d}.{i}", data, compression, cut))
    return files


_FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@given(log_folder())
@_FUZZ
def test_fuzzed_folders_are_declined_or_equal(
    files: list[tuple[str, bytes, str, int | None]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "site"
        folder.mkdir()
        for name, data, compression, cut in files:
            _write(folder / name, data, compression, cut)
        small = declined_or_equal(folder)
        if small is None:
            return
        listed = [str(f) for f in scan_log_paths(folder).files]
        assert small.file_lines == [(name, dict(small.file_lines)[name]) for name in listed]


_EXTRA = st.lists(st.sampled_from(DAMAGED) | st.binary(max_size=30), max_size=8)


@given(damaged_file(), _EXTRA, st.sampled_from(["plain", "gzip", "bz2", "xz"]))
@_FUZZ
def test_fuzzed_damage_after_a_clean_head_is_read_and_equal(
    damaged: bytes, extra: list[bytes], compression: str
) -> None:
    # 17 clean lines first: the file is recognised, so any decline would be the tokeniser's
    head = b"\n".join(LITERAL[:6] * 3)[: -len(LITERAL[5])]
    data = b"\n".join([head, *extra]) + b"\n" + damaged
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "20240503"
        _write(path, data, compression)
        small = read_torque_records_small(path)
        assert small is not None  # every damage of damaged_file and DAMAGED is reproduced
        assert_equal(small, path)


def _head_then_licence(at: int) -> bytes:
    """Q lines, then a PBS Pro licence record whose ``;L;`` starts at byte ``at``."""
    start = at - len("05/03/2024 10:00:00")  # where the licence line starts
    line = b"05/03/2024 10:00:00;Q;1.pbs01;queue=grid comment=" + b"c" * 2000 + b"\n"
    data = line * ((start - 4000) // len(line))  # 2,000 lines: few, for the tokenisers
    pad = start - len(data) - len(line)  # one longer Q line fills the rest exactly
    data += line[:-1] + b" x=" + b"y" * (pad - 3) + b"\n"
    assert len(data) == start
    return data + b"05/03/2024 10:00:00;L;license;floating license hour:0\n" + line


@pytest.mark.parametrize(("at", "flavour"), [((4 << 20) - 3, "pbspro"), ((4 << 20) - 2, "torque")])
def test_the_flavour_is_that_of_the_first_4_mib(tmp_path: Path, at: int, flavour: str) -> None:
    path = tmp_path / "20240503"
    path.write_bytes(_head_then_licence(at))
    small = read_torque_records_small(path, max_bytes=BIG)
    assert small is not None
    assert set(small.records["source_format"]) == {flavour}
    assert_equal(small, path)


# --------------------------------------------------------------------------------------------
# declined inputs


def test_what_the_small_path_declines(tmp_path: Path) -> None:
    good = b"\n".join(LITERAL) + b"\n"
    cases: dict[str, bytes] = {
        "broken.gz": gzip.compress(good)[:-12],  # a truncated gzip stream
        "long": LITERAL[1] + b" x=" + b"y" * MAX_LINE_BYTES + b"\n",  # an over-long line
        "zstd": b"\x28\xb5\x2f\xfd" + b"\x00" * 20,
        "swf": b"; Version: 2.2\n1 0 10 100 4 -1 -1 4 200 -1 1 1 1 1 1 1 -1 -1\n",
        "noise": b"hello world\n" * 5,
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        assert read_torque_records_small(path, max_bytes=BIG) is None, name
    plain = tmp_path / "20240503"
    plain.write_bytes(good)
    assert read_torque_records_small(plain, max_bytes=len(good) - 1) is None
    assert read_torque_records_small(plain, max_bytes=len(good)) is not None
    assert read_torque_records_small(plain, format="slurm") is None
    assert read_torque_records_small(tmp_path / "missing") is None
    empty = tmp_path / "empty"
    empty.mkdir()
    assert read_torque_records_small(empty) is None
    (empty / "20240501").write_bytes(b"")  # nothing recognised: parse_logs refuses
    assert read_torque_records_small(empty) is None
    # the broken stream, with a good file: declined, the Arrow path quarantines its rest
    assert read_torque_records_small([plain, tmp_path / "broken.gz"]) is None


def test_a_file_the_garbage_test_may_stop_is_declined_else_equal(tmp_path: Path) -> None:
    record = LITERAL[1] + b"\n"
    stopped = tmp_path / "20240501"
    stopped.write_bytes(record + b"\n" * 100_000 + record)
    assert read_torque_records_small(stopped, max_bytes=BIG) is None
    _, result = arrow_path(stopped)
    assert result.summary()["input"]["files_stopped"]  # the Arrow path did stop it
    kept = tmp_path / "20240502"
    kept.write_bytes((record + b"\n" * 89) * 1_112)  # 100,080 lines, 98,968 blank
    assert declined_or_equal(kept) is not None


# --------------------------------------------------------------------------------------------
# the median stamp, and the imports

_STAMP = st.builds(
    "{:02d}/{:02d}/{:04d} {:02d}:{:02d}:{:02d}".format,
    st.integers(1, 12),
    st.integers(1, 31),
    st.integers(0, 9999),
    st.integers(0, 23),
    st.integers(0, 59),
    st.integers(0, 60),
)


@given(st.lists(_STAMP | st.sampled_from(["02/29/2016 10:00:00", "02/31/2015 23:59:60"])))
def test_the_median_stamp_is_arrows_and_numpys(stamps: list[str]) -> None:
    table = pa.table({"stamp": pa.array(stamps, pa.string())})
    assert small_median(stamps) == _median_stamp(table)


def test_the_names_and_head_size_are_the_registrys() -> None:
    import inspect

    from gridtrace.logs import _torque_small_read as small
    from gridtrace.logs._io import read_log_head
    from gridtrace.logs._registry import get_format
    from gridtrace.logs._torque_pure import TORQUE_NAMES

    torque = get_format("torque")
    assert {torque.name, *torque.aliases} == TORQUE_NAMES
    assert inspect.signature(read_log_head).parameters["size"].default == small._HEAD_BYTES


def test_reading_imports_neither_numpy_nor_pyarrow(tmp_path: Path) -> None:
    path = tmp_path / "20240503.gz"  # 05/03/2024 from 10:00
    _write(path, b"\n".join([*LITERAL[1:6], *DAMAGED]) + b"\n", "gzip")
    other = tmp_path / "20240502"  # 05/03/2024 09:56: read first
    other.write_bytes(LITERAL[0] + b"\n")
    code = (
        "import sys\n"
        "from gridtrace.logs._torque_small_read import read_torque_records_small\n"
        f"small = read_torque_records_small([{str(path)!r}, {str(other)!r}])\n"
        "assert small is not None and small.files_reordered == 2\n"
        "assert 'bz2' not in sys.modules and 'lzma' not in sys.modules  # gzip only\n"
        "heavy = ('numpy', 'pyarrow', 'pandas', 'numba')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.strip() == "[]"
