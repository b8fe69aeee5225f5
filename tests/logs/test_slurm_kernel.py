"""The Slurm kernel (:mod:`gridtrace.logs._slurm_fast`) reads every field as the reference does.

Each field reader is run twice on generated values, once by the kernel (with the reference for
the values it declines) and once by the reference alone, and the two must agree to the bit:
times (plain, with offsets or fractions, ``Unknown``/``None``/empty, out of range), durations,
counts, TRES lists with and without the key, memory sizes with units, exit codes. Whole files
of generated lines, and the real sacct dumps, must give the same tables either way.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _slurm, _slurm_fast, parse_logs
from gridtrace.logs._slurm import SLURM_FIELDS, _Clock, _Column, read_slurm

pytestmark = pytest.mark.skipif(not _slurm_fast.HAVE_NUMBA, reason="numba is not installed")


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    assert _slurm_fast.compile_kernel()


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal to the bit, NaN where the other is NaN (and -0.0 apart from 0.0)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind != "f":
        return bool(np.array_equal(a, b))
    return bool(
        np.array_equal(a.view(np.int64), b.view(np.int64))
        or (
            np.array_equal(np.isnan(a), np.isnan(b))
            and np.array_equal(np.nan_to_num(a), np.nan_to_num(b))
            and np.array_equal(np.signbit(a), np.signbit(b))
        )
    )


def _both(texts: list[str | None], read: object) -> None:
    """``read(column, fast)`` by the kernel and by the reference: the same arrays."""
    array = pa.array(texts, pa.string())
    try:
        slow = read(_Column.of(array), False)  # type: ignore[operator]
    except pa.ArrowInvalid:  # the reference fails on a count padded with blanks: so must the kernel
        with pytest.raises(pa.ArrowInvalid):
            read(_Column.of(array), True)  # type: ignore[operator]
        return
    fast = read(_Column.of(array), True)  # type: ignore[operator]
    if not isinstance(fast, (tuple, list)):
        fast, slow = (fast,), (slow,)
    for f, s in zip(fast, slow, strict=True):
        assert _same(f, s), (texts, f, s)


_DIGITS = st.text(alphabet="0123456789", min_size=1, max_size=18)
_JUNK = st.text(alphabet="0123456789-:.+ \tTZKMGTPcn,=٣é", max_size=14)


def _two(low: int, high: int) -> st.SearchStrategy[str]:
    return st.integers(low, high).map(lambda v: f"{v:02d}")


_TIME = st.one_of(
    st.none(),
    st.sampled_from(["", "Unknown", "None", " Unknown", "2024-02-29T12:00:00"]),
    st.builds(
        lambda y, mo, d, h, mi, s, tail: f"{y:04d}-{mo}-{d}T{h}:{mi}:{s}{tail}",
        st.integers(0, 9999),
        _two(0, 13),
        _two(0, 32),
        _two(0, 25),
        _two(0, 61),
        _two(0, 61),
        st.sampled_from(["", "", "", "Z", "+01:00", "-0530", ".250", ".5+02:00", "x", " "]),
    ),
    _JUNK,
)


@given(st.lists(_TIME, max_size=25), st.sampled_from(["UTC", "America/New_York"]))
def test_times_as_the_reference_reads_them(texts: list[str | None], tz: str) -> None:
    array = pa.array(texts, pa.string())
    clock = _Clock(tz)
    try:
        slow = clock.read(_Column.of(array), fast=False)
    except ValueError as err:  # the reference fails on a date out of range with an offset
        with pytest.raises(type(err)):
            clock.read(_Column.of(array), fast=True)
        return
    fast = clock.read(_Column.of(array), fast=True)
    for f, s in zip(fast, slow, strict=True):
        assert _same(f, s), (texts, f, s)


_DURATION = st.one_of(
    st.none(),
    st.sampled_from(["UNLIMITED", "Partition_Limit", "", "1-02:03:04", "00:05:00.250", "59:59"]),
    st.sampled_from(["1-02:03", "1-2:3:4:5", "::", "1:2:", "1:2.", "1:2.3.4", "-1:00", "1:2:3.x"]),
    st.builds(
        lambda d, h, m, s, f: f"{d}{h}{m}:{s}{f}",
        st.one_of(st.just(""), _DIGITS.map(lambda v: v + "-")),
        st.one_of(st.just(""), _DIGITS.map(lambda v: v + ":")),
        _DIGITS,
        _DIGITS,
        st.one_of(st.just(""), _DIGITS.map(lambda v: "." + v)),
    ),
    _JUNK,
)


@given(st.lists(_DURATION, max_size=25))
def test_durations_as_the_reference_reads_them(texts: list[str | None]) -> None:
    _both(texts, _slurm._read_durations)


_COUNT = st.one_of(
    st.none(),
    _DIGITS,
    st.builds(lambda a, b: f"{a}.{b}", _DIGITS, _DIGITS),
    st.sampled_from(["", " 4", "4 ", "+4", "-4", "4.", ".5", "1e3", "0", "-0", "٣"]),
    _JUNK,
)


@given(st.lists(_COUNT, max_size=25))
def test_counts_as_the_reference_reads_them(texts: list[str | None]) -> None:
    _both(texts, _slurm._read_floats)


_TRES_PART = st.one_of(
    st.sampled_from(
        [
            "cpu=8",
            "node=2",
            "gres/gpu=2",
            "gres/gpu:v100=4",
            "mem=4G",
            "mem=62.50G",
            "mem=",
            "billing=8",
            "cpu=",
            "cpu=x",
            "gres/gpu:=3",
            "gres/gpu:a:b=1",
            "mem=4Q",
            "mem=1.5",
        ]
    ),
    st.builds(
        lambda k, v: f"{k}={v}", st.sampled_from(["cpu", "node", "mem", "gres/gpu"]), _DIGITS
    ),
    st.text(alphabet="cpunodemgres/:v10=,٣KMG.", max_size=12),
)
_TRES = st.one_of(st.none(), st.lists(_TRES_PART, max_size=5).map(",".join))


@given(st.lists(_TRES, max_size=25))
def test_tres_as_the_reference_reads_them(texts: list[str | None]) -> None:
    _both(texts, lambda column, fast: _slurm._read_tres(column, ("node", "cpu", "gres/gpu"), fast))
    _both(texts, lambda column, fast: _slurm._read_tres_size(column, "mem", fast))


_MEM = st.one_of(
    st.none(),
    st.builds(
        lambda v, f, u, s: f"{v}{f}{u}{s}",
        _DIGITS,
        st.one_of(st.just(""), _DIGITS.map(lambda v: "." + v)),
        st.sampled_from(["", "K", "M", "G", "T", "P", "Q"]),
        st.sampled_from(["", "c", "n", "x"]),
    ),
    st.sampled_from(["2147486648Mn", "0", "0n", "", "c", "4Gcn", "1.G", " 4G"]),
    _JUNK,
)


@given(st.lists(_MEM, max_size=25))
def test_req_mem_as_the_reference_reads_it(texts: list[str | None]) -> None:
    _both(texts, _slurm._read_req_mem)


_EXIT = st.one_of(
    st.none(),
    st.builds(lambda s, c, g: f"{s}{c}:{g}", st.sampled_from(["", "-", "+"]), _DIGITS, _DIGITS),
    st.sampled_from(["0:0", "1:0", "0:15", "-1:0", ":0", "0:", "0:0:0", ""]),
    _JUNK,
)


@given(st.lists(_EXIT, max_size=25))
def test_exit_codes_as_the_reference_reads_them(texts: list[str | None]) -> None:
    _both(texts, _slurm._read_exit_codes)


# --------------------------------------------------------------------------- whole files

_JOB_ID = st.one_of(
    st.sampled_from(["1001", "1001_7", "1001_[1-3,5%2]", "1001+1", "1001.batch", "1001_7.0", "x"]),
    st.builds(lambda a, b: f"{a}_{b}", st.integers(1, 50), st.integers(0, 9)),
    st.integers(1, 50).map(str),
)
# values the reference reads without failing (it raises on a count padded with blanks, and on a
# date out of range with an offset)
# counts small enough that no product of them overflows a column (the reference raises then)
_SMALL = st.text(alphabet="0123456789", min_size=1, max_size=4)
_FILE_COUNT = st.one_of(
    _SMALL, st.builds(lambda a, b: f"{a}.{b}", _SMALL, _DIGITS), st.sampled_from(["", "x", "٣"])
)
_FILE_MEM = st.builds(
    lambda v, u, c: f"{v}{u}{c}",
    _SMALL,
    st.sampled_from(["", "M", "G", "Q"]),
    st.sampled_from(["", "c", "n"]),
)
_FILE_EXIT = st.one_of(
    st.builds(lambda s, c, g: f"{s}{c}:{g}", st.sampled_from(["", "-"]), _SMALL, _SMALL),
    st.sampled_from(["", "0:0", ":0", "0:0:0", "x"]),
)
_FILE_TIME = st.one_of(
    st.sampled_from(
        ["", "Unknown", "None", "2024-03-31T02:30:00", "2024-10-27T02:30:00", "2024-02-30T01:00:00"]
    ),
    st.builds(
        lambda d, h, tail: f"2024-03-{d:02d}T{h:02d}:15:00{tail}",
        st.integers(1, 31),
        st.integers(0, 23),
        st.sampled_from(["", "", "", "Z", "+01:00", ".5"]),
    ),
)
_FIELDS = {
    "JobID": _JOB_ID,
    "Submit": _FILE_TIME,
    "Start": _FILE_TIME,
    "End": _FILE_TIME,
    "Elapsed": _DURATION.map(lambda t: t or ""),
    "Timelimit": _DURATION.map(lambda t: t or ""),
    "NNodes": _FILE_COUNT,
    "NCPUS": _FILE_COUNT,
    "ReqCPUS": _FILE_COUNT,
    "ReqMem": _FILE_MEM,
    "ReqTRES": _TRES.map(lambda t: t or ""),
    "AllocTRES": _TRES.map(lambda t: t or ""),
    "ExitCode": _FILE_EXIT,
    "State": st.sampled_from(["COMPLETED", "FAILED", "RUNNING", "PENDING", "CANCELLED by 5", "x"]),
}
_LINE = st.fixed_dictionaries(
    {k: v.filter(lambda t: "|" not in t and "\n" not in t) for k, v in _FIELDS.items()}
)


def _file_line(values: dict[str, str]) -> str:
    base = dict.fromkeys(SLURM_FIELDS, "x")
    base.update(Eligible="2024-05-03T10:00:01", NodeList="n[01-02]", JobName="job")
    base.update(values)
    return "|".join(base[name] for name in SLURM_FIELDS)


def _read_both(path: Path, monkeypatch: pytest.MonkeyPatch, tz: str = "UTC") -> bool:
    """Read a file by the kernel and by the reference; False when the reference fails."""
    with monkeypatch.context() as patch:
        patch.setattr(_slurm_fast, "use_kernel", lambda lines: False)
        try:
            slow = read_slurm(path, tz=tz)
        except Exception as err:  # the reference fails: so must the kernel, the same way
            patch.setattr(_slurm_fast, "use_kernel", lambda lines: True)
            with pytest.raises(type(err)):
                read_slurm(path, tz=tz)
            return False
    with monkeypatch.context() as patch:
        patch.setattr(_slurm_fast, "use_kernel", lambda lines: True)
        fast = read_slurm(path, tz=tz)
    for name in ("jobs", "records", "quarantine"):
        assert getattr(fast, name).equals(getattr(slow, name)), name
    assert fast.info == slow.info
    return True


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(_LINE, min_size=1, max_size=12), tz=st.sampled_from(["UTC", "Europe/Paris"]))
def test_generated_files_give_the_same_tables(
    lines: list[dict[str, str]], tz: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "sacct.log"
    path.write_text("\n".join(_file_line(v) for v in lines) + "\n", encoding="utf-8")
    _read_both(path, monkeypatch, tz)  # else both raise the same error


def test_big_files_use_the_kernel_and_small_ones_the_reference() -> None:
    assert _slurm_fast.use_kernel(_slurm_fast.SMALL_INPUT_LINES)
    # once loaded, the kernel reads every size of input
    assert _slurm_fast.kernel_ready()
    assert _slurm_fast.use_kernel(1)


def _real_files() -> list[Path]:
    folder = os.environ.get("GRIDTRACE_REAL_DATA")
    if not folder:
        return []
    return sorted((Path(folder) / "other" / "slurm").glob("*.log*"))


@pytest.mark.slow
@pytest.mark.parametrize("path", _real_files(), ids=lambda p: p.name)
@pytest.mark.parametrize("tz", ["UTC", "America/New_York"])
def test_real_files_give_the_same_tables(
    path: Path, tz: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _read_both(path, monkeypatch, tz)


@pytest.mark.skipif(not _real_files(), reason="GRIDTRACE_REAL_DATA is not set")
def test_real_files_are_there() -> None:
    assert len(_real_files()) >= 2


_ID = st.one_of(
    st.none(),
    st.builds(
        lambda seq, idx, het, step: f"{seq}{idx}{het}{step}",
        _DIGITS,
        st.one_of(
            st.just(""),
            _DIGITS.map(lambda v: "_" + v),
            st.sampled_from(["_[1-3]", "_[1,4-9%2]", "_1-7:3", "_[", "_", "_4-6"]),
        ),
        st.one_of(st.just(""), _DIGITS.map(lambda v: "+" + v), st.just("+")),
        st.sampled_from(["", "", ".batch", ".0", ".extern", "."]),
    ),
    st.sampled_from(["", "x", "12x", "_1", "+1", "٣"]),
    _JUNK,
)


@given(st.lists(_ID, max_size=25))
def test_job_ids_as_the_reference_reads_them(texts: list[str | None]) -> None:
    array = pa.array(texts, pa.string())
    seq, idx, rows, ranges, key = _slurm._read_ids(_Column.of(array), True)
    s_seq, s_idx, s_rows, s_ranges, s_key = _slurm._read_ids(_Column.of(array), False)
    assert _same(seq, s_seq)
    assert _same(idx, s_idx)
    assert rows.tolist() == s_rows.tolist()
    assert ranges == s_ranges
    assert key.equals(s_key)


def _base_line(**values: str) -> str:
    base = {
        "JobID": "1001", "JobIDRaw": "1001", "Cluster": "hpc", "Partition": "batch",
        "QOS": "normal", "Account": "phys", "Group": "phys", "GID": "500", "User": "alice",
        "UID": "1500", "Submit": "2024-05-03T10:00:00", "Eligible": "2024-05-03T10:00:01",
        "Start": "2024-05-03T10:01:40", "End": "2024-05-03T11:01:40", "Elapsed": "01:00:00",
        "ExitCode": "0:0", "State": "COMPLETED", "NNodes": "2", "NCPUS": "16", "ReqCPUS": "16",
        "ReqMem": "2000Mc", "ReqTRES": "cpu=16,mem=32000M,node=2",
        "AllocTRES": "cpu=16,mem=32000M,node=2", "Timelimit": "02:00:00",
        "NodeList": "n[01-02]", "JobName": "sim",
    }  # fmt: skip
    base.update(values)
    return "|".join(base[name] for name in SLURM_FIELDS)


def test_damaged_and_mixed_files_give_the_same_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Steps, requeues, arrays, CRLF, non-UTF-8 bytes, a cut last line, two layouts at once."""
    plain = tmp_path / "a.sacct"
    lines = [
        _base_line(),
        _base_line(JobID="1001.batch", MaxRSS="1G"),
        _base_line(JobID="1002", State="REQUEUED", End="2024-05-03T10:30:00"),
        _base_line(JobID="1002", Submit="2024-05-03T10:31:00", State="FAILED"),
        _base_line(JobID="1003_[1-3,7%2]", State="PENDING", Start="Unknown", End="Unknown"),
        _base_line(JobID="1004_5", ReqMem="2147486648Mn", ExitCode="1:15"),
        _base_line(JobID="1005+1", Elapsed="1-00:00:00.500", Timelimit="UNLIMITED"),
        _base_line(JobID="1006", Start="2024-05-03T10:01:40+02:00", NNodes="x"),
        _base_line(),  # a copy of line 1
    ]
    body = "\n".join(lines).encode() + b"\r\n" + _base_line(User="j\xe9").encode("latin-1")
    plain.write_bytes(body + b"\n" + _base_line(JobID="1007").encode()[:150])
    headed = tmp_path / "b.sacct"
    headed.write_text(
        "JobID|State|Submit|Start|End|NCPUS|ReqTRES\n"
        "2001|COMPLETED|2024-05-03T10:00:00|2024-05-03T10:00:05|2024-05-03T10:10:05|4|cpu=4\n"
        "2002|RUNNING|2024-05-03T10:00:00|2024-05-03T10:00:05|Unknown|8|gres/gpu:a100=2\n",
        encoding="utf-8",
    )
    for paths in ([plain], [headed], [plain, headed]):
        results = []
        for fast in (True, False):
            with monkeypatch.context() as patch:
                patch.setattr(_slurm_fast, "use_kernel", lambda lines, fast=fast: fast)
                results.append(parse_logs(paths, format="slurm", site="s", tz="UTC", workers=1))
        for name in ("jobs", "records", "quarantine"):
            assert getattr(results[0], name).equals(getattr(results[1], name)), name
        assert results[0].info == results[1].info


@pytest.mark.parametrize(
    ("values", "column", "expected"),
    [
        ({"NCPUS": " 4"}, "cores_alloc", 4),  # blanks around a count
        ({"NCPUS": "99999999999"}, "cores_alloc", None),  # beyond int32
        ({"NNodes": "3000000000"}, "nodes_alloc", None),
        ({"ExitCode": "99999999999:0"}, "exit_code", None),
        ({"ReqMem": "99999999999999999Mc"}, "mem_req_bytes", None),  # beyond int64 bytes
        ({"JobID": "99999999999999999999", "JobIDRaw": "99999999999999999999"}, "job_seq", None),
        ({"Start": "0000-00-00T00:00:00Z"}, "start_time", None),  # an offset, no real date
        ({"Start": "2024-05-03T10:01:40+99:00"}, "start_time", None),  # an offset out of range
    ],
)
def test_a_damaged_value_costs_that_value_not_the_file(
    values: dict[str, str],
    column: str,
    expected: object,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "damaged.sacct"
    path.write_text(_base_line() + "\n" + _base_line(**{"JobID": "1002", **values}) + "\n")
    assert _read_both(path, monkeypatch)  # kernel and reference agree, neither raises
    result = read_slurm(path, tz="UTC")
    assert result.lines_read == result.jobs.num_rows == 2
    assert result.jobs.column(column)[1].as_py() == expected
    if expected is None:
        assert "VALUE_UNREADABLE" in result.jobs.column("flags")[1].as_py()
    assert "VALUE_UNREADABLE" not in (result.jobs.column("flags")[0].as_py() or [])
