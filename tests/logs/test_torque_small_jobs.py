"""The small-input TORQUE assembly (plain Python) gives the Arrow path's tables, or declines.

Differential tests: every input is assembled by :func:`assemble_torque_jobs` (the reference)
and by :func:`assemble_torque_small`; the small path must return ``None`` or the same jobs
(every column, flag lists in order), the same records' ``stamp_utc`` and flags, the same
``info`` and ``tz_offset_s``. On the real VSC month (each day alone and all together) it must
accept; on generated logs it may decline, rarely on realistic ones.
"""

from __future__ import annotations

import datetime as dt
import gzip
import inspect
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.errors import ConfigError
from gridtrace.logs import _torque_attempts, _torque_jobs, _torque_jobs_fast
from gridtrace.logs._columnar import STAMP_RANGE_S
from gridtrace.logs._io import expand_log_paths, read_log_bytes
from gridtrace.logs._torque_lines import tokenize_torque_reference
from gridtrace.logs._torque_small_jobs import (
    _STAMP_RANGE,
    JOBS_COLUMNS,
    _days,
    _Decline,
    assemble_torque_small,
)
from gridtrace.logs._torque_writer import write_torque
from gridtrace.schema import JOBS, RECORDS

from . import test_torque_jobs
from ._small_jobs_compare import compare, python_records
from .test_torque_damage import damaged_file
from .test_torque_jobs_entries import _log as entries_log
from .test_torque_jobs_kernel import _log as kernel_log
from .test_torque_jobs_kernel import kernel_from
from .test_torque_writer import jobs_tables

VSC = "vsc-kuleuven-2016-06"
NCAR = "ncar-laramie-pbspro-20180212"
XDMOD = "xdmod-shredder-pbs-fixture.log"


def records_of(*files: bytes, names: tuple[str, ...] = ()) -> pa.Table:
    """Tokenise files (named ``names``, else by position) as one log."""
    parts = [
        tokenize_torque_reference(data, src_file=names[i] if names else f"2024050{i + 1}", site="s")
        for i, data in enumerate(files)
    ]
    return pa.concat_tables([p.records for p in parts])


def lines(*text: str) -> bytes:
    return "".join(f"{line}\n" for line in text).encode()


E_LINE = (
    "05/03/2024 12:10:05;E;{id};user=u group=g queue=q ctime=1714730000 qtime=1714730001 "
    "etime=1714730002 start=1714730100 exec_host={host} Resource_List.walltime=02:00:00 "
    "end=1714730205 Exit_status={status} {extra}"
)


def ended(extra: str = "", *, status: str = "0", host: str = "n001/3", job: str = "1.srv") -> str:
    """An E line; a key of ``extra`` the line has replaces its value (else it is added)."""
    line = E_LINE.format(id=job, status=status, host="HOST", extra="").rstrip()
    head, _, message = line.rpartition(";")
    pairs = dict(token.split("=", 1) for token in message.split())
    pairs["exec_host"] = host  # as given: it may be quoted and hold blanks
    for token in extra.split():
        key, _, value = token.partition("=")
        pairs[key] = value
    return f"{head};" + " ".join(f"{k}={v}" for k, v in pairs.items())


# --------------------------------------------------------------------------------------------
# the module itself


def test_the_columns_and_ranges_are_those_of_the_schema() -> None:
    assert tuple(JOBS.names) == JOBS_COLUMNS
    assert _STAMP_RANGE == STAMP_RANGE_S


def test_the_small_path_imports_neither_numpy_nor_pyarrow() -> None:
    code = (
        "import sys\n"
        "import gridtrace.logs._torque_small_jobs\n"
        "heavy = {'numpy', 'pyarrow', 'pandas', 'numba', 'scipy'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"


def test_the_attempt_builder_is_the_arrow_paths() -> None:
    from gridtrace.logs import _torque_small_jobs

    assert _torque_jobs._Builder is _torque_attempts._Builder
    assert _torque_small_jobs._Builder is _torque_attempts._Builder


@given(st.integers(1, 9999), st.integers(0, 13), st.integers(0, 32))
def test_stamp_dates_are_the_calendars(year: int, month: int, day: int) -> None:
    text = f"{month:02d}/{day:02d}/{year:04d}"
    try:
        expected: int | None = dt.date(year, month, day).toordinal() - 719_163
    except ValueError:
        expected = None
    try:
        got: int | None = _days(text)
    except _Decline:
        got = None
    assert got == expected


def test_no_records() -> None:
    assert compare(records_of(b""))


def test_an_unknown_memory_unit_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        assemble_torque_small(python_records(records_of(lines(ended()))), unitless_memory="xb")


# --------------------------------------------------------------------------------------------
# values the Arrow path reads vectorised: where its reading and the parsers could differ


@pytest.mark.parametrize(
    "extra",
    [
        "resources_used.walltime=90 resources_used.cput=1:2:3",
        "resources_used.walltime=1+02:00:00 resources_used.cput=00:00:01.50",
        "resources_used.walltime=-1:00:00 resources_used.cput=-5",
        "resources_used.walltime=2:00:00:00 Resource_List.walltime=5:00",
        "resources_used.walltime=1234567890123 resources_used.cput=12:99:99",
        "resources_used.walltime=abc resources_used.cput=1:2:3:4:5",
        "resources_used.mem=12.27M resources_used.vmem=1024",
        "resources_used.mem=2kw resources_used.vmem=0",
        "resources_used.mem=99999999999pb resources_used.vmem=9999999999999kb",
        "resources_used.mem=4GB resources_used.vmem=1.5gb Resource_List.mem=x",
        "Resource_List.nodect=2:ppn=4",
        "Resource_List.nodect=abc Resource_List.nodes=2:ppn=3",
        "Resource_List.nodes=1:ppn=many",
        "Resource_List.select=2:ncpus=8:mem=4gb Resource_List.mem=8gb",
        "Resource_List.select=2:ncpus=8:mem=4000 Resource_List.ngpus=1",
        "Resource_List.select=2:ncpus=8:mem=4.5g",
        "Resource_List.pmem=2500mb Resource_List.nodes=2:ppn=4",
        "exec_vnode=(n1[0]:ncpus=4:ngpus=1+n1[1]:ncpus=4)",
        "exec_vnode=(n1:ncpus=x)",
        "total_execution_slots=8 unique_node_count=2 resources_used.ncpus=4",
        "project=_pbs_project_default",
        "project=proj",
        "account=acc project=proj",
        "Exit_status=abc",
        "Exit_status=+5",
        "Exit_status=0+1",
        "Exit_status=99999999999",
        "ctime=253402300800",
        "ctime=253402300799 qtime=99999999999 etime=100000000000",
        "end=253402300800",
        "end=253402300799 start=99999999999",
        "start=0",
        "end=-5",
    ],
)
def test_values_in_every_form(extra: str) -> None:
    # a later key wins in the tokeniser only as REPEATED_KEY: put the variants in a second job
    data = lines(ended(), ended(extra, job="2.srv"), ended(extra, job="3.srv", status="271"))
    assert compare(records_of(data))


@pytest.mark.parametrize(
    "host",
    [
        "n1/0-3+n2/0*2",
        "n1/0+n1/1+n1/2",
        "n1/0,2,4-7",
        "c1/0*13+c2/0*13",
        "n1/3-1",
        "n1/0+",
        "/0",
        "n1/0--1",
        "a/b/0",
        "nö/0-3+n2/1",
        '"n 1/0"',
        '"n1/0 "',
        "n1/0000000001",
        "n1/0-1234567",
    ],
)
def test_exec_host_forms(host: str) -> None:
    assert compare(records_of(lines(ended(host=host), ended(host="n2/0", job="2.srv"))))


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (ended(status="0x10"), "hexadecimal: read or not by context"),
        (ended(status="1234567890123456789"), "19 digits: read or not by context"),
        (ended(host="n1/0-999999999+n2/0-999999999+n3/0-999999999"), "cores beyond int32"),
        (ended(host='" n1/0"'), "a blank before the host, kept by the vectorised reading"),
        (ended().replace("05/03/2024", "02/30/2024"), "no such date"),
        (ended().replace("12:10:05", "12:10:60"), "no such second"),
    ],
)
def test_declines_what_it_does_not_reproduce(line: str, why: str) -> None:
    records = records_of(lines(line, ended(job="2.srv")))
    assert assemble_torque_small(python_records(records)) is None, why


def test_memory_without_unit_in_the_callers_unit() -> None:
    data = lines(ended("resources_used.mem=1024 Resource_List.select=1:mem=10"))
    for unit in ("b", "kb", "MW"):
        assert compare(records_of(data), unitless_memory=unit)


@pytest.mark.parametrize("key", ["queue", "exec_host", "start", "Exit_status", "user"])
def test_a_null_value_is_a_value_as_in_the_arrow_path(key: str) -> None:
    data = lines(
        "05/03/2024 12:00:00;Q;1.srv;queue=routed",
        "05/03/2024 12:01:00;S;1.srv;user=u queue=q start=1714730100 exec_host=n1/0",
        ended(),
        "05/03/2024 12:00:00;Q;2.srv;queue=routed",
        "05/03/2024 12:01:00;S;2.srv;user=u queue=q start=1714730100 exec_host=n1/0",
    )
    py = python_records(records_of(data))
    for row in (2, 4):  # the E of job 1, the S of job 2
        py["attrs"][row] = [(k, None if k == key else v) for k, v in py["attrs"][row]]
    assert compare(pa.table(py, schema=RECORDS))


def test_records_without_a_stamp_are_flagged_unreadable() -> None:
    data = lines(
        "05/03/2024 12:00:00;Q;1.srv;queue=q",
        "05/03/2024 12:00:01;Q;1.srv;queue=q",
        ended(),
        ended(job="2.srv"),
    )
    py = python_records(records_of(data))
    py["stamp"][0] = None  # the Q of job 1: its submit time came from its stamp
    py["stamp"][3] = None  # the E of job 2
    assert compare(pa.table(py, schema=RECORDS))


def test_files_without_epochs_and_without_a_zone() -> None:
    data = lines(
        "05/03/2024 12:00:00;Q;7.srv;queue=q",
        "05/03/2024 12:00:05;D;7.srv;requestor=u@h",
        "05/03/2024 12:00:09;Q;8[3].srv;queue=q",
    )
    assert compare(records_of(data))
    # a second file with epochs: the first is placed with the dominant offset
    assert compare(records_of(data, lines(ended()), names=("20240503", "20240504")))


# --------------------------------------------------------------------------------------------
# every hand-written example of the Arrow path's tests, through both paths


def _zero_argument_tests(module: Any) -> list[Callable[[], None]]:
    return [
        f
        for name, f in sorted(vars(module).items())
        if name.startswith("test_") and callable(f) and not inspect.signature(f).parameters
    ]


_EXAMPLES = _zero_argument_tests(test_torque_jobs)


@pytest.mark.parametrize("example", _EXAMPLES, ids=[f.__name__ for f in _EXAMPLES])
def test_the_arrow_paths_examples(
    example: Callable[[], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    module = sys.modules[example.__module__]
    reference = module.assemble_torque_jobs

    def both(records: pa.Table, **kwargs: Any) -> Any:
        result = reference(records, **kwargs)
        # (not while a test turns the Arrow path's vectorised cut off: its info counts differ)
        if kwargs.get("tz") is None and _torque_jobs._FAST_PATH:
            seen.append(compare(records, unitless_memory=kwargs.get("unitless_memory", "b")))
        return result

    monkeypatch.setattr(module, "assemble_torque_jobs", both)
    example()
    if not seen:
        pytest.skip("assembles with a zone only (the small path takes none)")
    _count("examples", all(seen))


# --------------------------------------------------------------------------------------------
# generated logs

_DECLINED: Counter[str] = Counter()


def _count(kind: str, accepted: bool) -> None:
    _DECLINED[f"{kind}:{'accepted' if accepted else 'declined'}"] += 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries_log())
def test_fuzzed_logs_of_reruns_aborts_deletes_copies_and_array_jobs(files: list[bytes]) -> None:
    accepted = compare(records_of(*files))
    _count("entries", accepted)
    assert accepted  # clean lines of every shape: nothing to decline


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernel_log())
def test_fuzzed_logs_with_odd_values_and_cut_off_last_lines(log: tuple[list[bytes], bool]) -> None:
    _count("odd values", compare(records_of(*log[0])))


@pytest.mark.skipif(not _torque_jobs_fast.HAVE_NUMBA, reason="numba is not installed")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernel_log())
def test_fuzzed_logs_against_the_arrow_paths_kernels(log: tuple[list[bytes], bool]) -> None:
    # large inputs are assembled with the compiled kernels: the same tables, the same answer
    with kernel_from(0):
        _count("odd values, kernels", compare(records_of(*log[0])))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(damaged_file(), min_size=1, max_size=3))
def test_damaged_real_lines(files: list[bytes]) -> None:
    _count("damaged", compare(records_of(*files)))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(jobs=jobs_tables(), tz=st.sampled_from(["UTC", "Europe/Paris", "Asia/Kolkata"]))
def test_logs_of_the_writer(
    jobs: pa.Table, tz: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("written")
    write_torque(jobs, folder, tz=tz)
    files = sorted(folder.iterdir())
    records = records_of(*(f.read_bytes() for f in files), names=tuple(f.name for f in files))
    assert compare(records)  # what the writer writes is the common case


@pytest.mark.parametrize("tz", ["Europe/Paris", "Asia/Kathmandu", "UTC"])
def test_the_demo_site(tmp_path: Path, tz: str) -> None:
    from gridtrace.demo import write_demo_site

    write_demo_site(tmp_path, n_jobs=400, cores=40, seed=3, tz=tz)
    files = sorted(p for p in tmp_path.iterdir() if p.is_file())
    records = records_of(*(f.read_bytes() for f in files), names=tuple(f.name for f in files))
    assert records.num_rows > 400
    assert compare(records)  # its cut-off last E record included


# --------------------------------------------------------------------------------------------
# real logs


def _real(real_data: Path, name: str) -> pa.Table:
    path = real_data / "torque" / name
    if not path.exists():
        pytest.skip(f"{path} is missing")
    parts = [
        tokenize_torque_reference(read_log_bytes(f), src_file=f.name, site="site").records
        for f in expand_log_paths(path)
    ]
    return pa.concat_tables(parts)


@pytest.mark.realdata
@pytest.mark.parametrize("day", [f"201606{d:02d}" for d in range(1, 31)])
def test_every_real_vsc_day_alone_is_accepted_and_equal(real_data: Path, day: str) -> None:
    source = real_data / "torque" / VSC / f"{day}.gz"
    if not source.is_file():
        pytest.skip(f"{source} is missing")
    data = gzip.decompress(source.read_bytes())
    assert compare(tokenize_torque_reference(data, src_file=day, site="vsc").records)


@pytest.mark.realdata
def test_the_real_vsc_month_is_accepted_and_equal(real_data: Path) -> None:
    records = _real(real_data, VSC)
    assert records.num_rows == 58_904
    assert compare(records)


@pytest.mark.realdata
@pytest.mark.skipif(not _torque_jobs_fast.HAVE_NUMBA, reason="numba is not installed")
def test_the_real_vsc_month_equals_the_arrow_paths_kernels(real_data: Path) -> None:
    records = _real(real_data, VSC)
    with kernel_from(0):
        assert compare(records)


@pytest.mark.realdata
@pytest.mark.parametrize("name", [NCAR, XDMOD])
def test_the_other_real_logs_are_equal_or_declined(real_data: Path, name: str) -> None:
    records = _real(real_data, name)
    for unit in ("b", "kb"):  # XDMoD reads memory without a unit as kb
        compare(records, unitless_memory=unit)
