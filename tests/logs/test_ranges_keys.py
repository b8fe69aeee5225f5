"""Hand-over files: a map column whose rows hold the same keys goes as its values, comes back whole.

Also the folder they go to (a memory file system when it has room), the order a file's ranges
are submitted in, and a range failing half-way through writing its files.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

from gridtrace.errors import DataQualityWarning
from gridtrace.logs import _ranges as ranges_module
from gridtrace.logs import _registry as registry
from gridtrace.logs import parse_logs
from gridtrace.logs._ranges import (
    RangeAssembly,
    _KeyRow,
    _pieces,
    _read_tables,
    _Repeats,
    _slimmed,
    _write_tables,
    prepare_range,
    split_file,
)
from gridtrace.schema import RECORDS

from .test_ranges_assembly import _by_ranges, _gather, _same, _submit, _whole

_ATTRS = RECORDS.field("attrs").type
_NAMES = ("job", "submit", "wait", "run")


def _maps(rows: list[list[tuple[str, str]] | None]) -> pa.Array:
    return pa.array(rows, type=_ATTRS)


def _table(chunks: list[list[list[tuple[str, str]] | None]]) -> pa.Table:
    """A table of one map column (chunked as given) and a number column, with metadata."""
    attrs = pa.chunked_array([_maps(c) for c in chunks], _ATTRS)
    n = len(attrs)
    schema = pa.schema(
        [pa.field("attrs", _ATTRS), pa.field("src_line", pa.int64(), nullable=False)],
        metadata={b"k": b"v"},
    )
    return pa.table([attrs, pa.array(range(1, n + 1), pa.int64())], schema=schema)


def _job_row(i: int, names: tuple[str, ...] = _NAMES) -> list[tuple[str, str]]:
    return [(name, str(i * 10 + k)) for k, name in enumerate(names)]


def _back(table: pa.Table, repeats: _Repeats | None = None) -> pa.Table:
    slim, uniform = _slimmed(table)
    return (repeats or _Repeats()).restored(slim, uniform)


def test_a_map_column_of_the_same_keys_goes_as_its_values_and_comes_back() -> None:
    table = _table([[_job_row(i) for i in range(300)], [_job_row(i) for i in range(300, 420)]])
    slim, uniform = _slimmed(table)
    assert [(i, field.name, value) for i, field, value in uniform] == [
        (0, "attrs", _KeyRow(_NAMES))
    ]
    assert slim.schema.field("attrs").type == pa.list_(pa.string(), len(_NAMES))
    assert slim.nbytes < table.nbytes * 0.7
    back = _Repeats().restored(slim, uniform)
    assert back.equals(table)
    assert back.schema.equals(table.schema, check_metadata=True)
    assert back.column("attrs").to_pylist() == table.column("attrs").to_pylist()


_ODD = {
    "order": _job_row(7, ("submit", "job", "wait", "run")),  # the same keys, another order
    "other": _job_row(7, ("job", "submit", "wait", "RUN")),  # one key differs, same length
    "longer": _job_row(7, ("job", "submit", "waits", "run")),  # one key longer
    "split": _job_row(7, ("jobs", "ubmit", "wait", "run")),  # the same bytes, cut elsewhere
    "fewer": _job_row(7, _NAMES[:3]),
    "more": _job_row(7, (*_NAMES, "extra")),
    "empty": [],
    "null": None,
}


@given(
    n=st.integers(1, 30),
    odd=st.sampled_from(sorted(_ODD)),
    at=st.integers(0, 29),
    sliced=st.booleans(),
)
def test_a_row_of_other_keys_keeps_the_map_whole(n: int, odd: str, at: int, sliced: bool) -> None:
    rows: list[list[tuple[str, str]] | None] = [_job_row(i) for i in range(n)]
    rows[at % n] = _ODD[odd]
    table = _table([[_job_row(99), *rows, _job_row(98)]])
    if sliced:  # a slice of a chunk: its offsets start inside the children
        table = table.slice(1, n + 1)
    slim, uniform = _slimmed(table)
    assert all(not isinstance(value, _KeyRow) for _, _, value in uniform)
    assert _Repeats().restored(slim, uniform).equals(table)


def test_empty_keys_keep_the_map_whole() -> None:
    table = _table([[[("", str(i)), ("", "x")] for i in range(10)]])
    slim, uniform = _slimmed(table)
    assert all(not isinstance(value, _KeyRow) for _, _, value in uniform)
    assert _Repeats().restored(slim, uniform).equals(table)


@given(n=st.integers(1, 30), start=st.integers(0, 5))
def test_a_slice_of_the_same_keys_comes_back(n: int, start: int) -> None:
    table = _table([[_job_row(i) for i in range(40)]]).slice(start, n)
    slim, uniform = _slimmed(table)
    assert any(isinstance(value, _KeyRow) for _, _, value in uniform)
    assert _Repeats().restored(slim, uniform).equals(table)


def test_the_keys_put_back_share_one_array_between_tables() -> None:
    repeats = _Repeats()
    a = _back(_table([[_job_row(i) for i in range(50)]]), repeats)
    b = _back(_table([[_job_row(i) for i in range(20)]]), repeats)
    c = _back(_table([[_job_row(i) for i in range(500)]]), repeats)  # larger: made again
    for got, rows in ((a, 50), (b, 20), (c, 500)):
        assert got.equals(_table([[_job_row(i) for i in range(rows)]]))
    keys = [t.column("attrs").chunk(0).keys.buffers()[2].address for t in (a, b)]
    assert keys[0] == keys[1]


def test_a_chunk_of_header_lines_is_written_whole_the_others_without_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ranges_module, "_KEYED_ROWS", 10)
    header = [[("Version", "2.2")], [("Computer", "a cluster")], _job_row(0)]
    jobs = [[_job_row(i) for i in range(1, 40)], [_job_row(i) for i in range(40, 70)]]
    other = [_job_row(i, ("a", "b")) for i in range(70, 80)]
    table = _table([header, *jobs, other, [_job_row(i) for i in range(80, 90)]])
    pieces = _pieces(table)
    assert [p.num_rows for p, _ in pieces] == [3, 69, 10, 10]
    assert [rows[0] for _, rows in pieces] == [
        None,
        _KeyRow(_NAMES),
        _KeyRow(("a", "b")),
        _KeyRow(_NAMES),
    ]
    written = _write_tables(str(tmp_path), 5, (table, table.slice(0, 0), table.slice(0, 2)))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "task-000005.jobs.arrow",
        "task-000005.quarantine.arrow",
        "task-000005.records.1.arrow",
        "task-000005.records.2.arrow",
        "task-000005.records.3.arrow",
        "task-000005.records.arrow",
    ]
    records, quarantine, jobs_back = _read_tables(written)
    assert records.equals(table)
    assert records.schema.equals(table.schema, check_metadata=True)
    assert quarantine.equals(table.slice(0, 0))
    assert jobs_back.equals(table.slice(0, 2))
    assert list(tmp_path.iterdir()) == []  # mapped, then deleted


def test_short_runs_of_the_same_keys_go_whole_with_their_neighbours(tmp_path: Path) -> None:
    """A comment line every few job lines: no file a run, the table goes whole."""
    chunks: list[list[list[tuple[str, str]] | None]] = []
    for k in range(30):
        chunks += [[_job_row(i) for i in range(5 * k, 5 * k + 5)], [[("Note", str(k))]]]
    table = _table(chunks)
    assert [(p.num_rows, rows) for p, rows in _pieces(table)] == [(180, {0: None})]
    written = _write_tables(str(tmp_path), 0, (table, table.slice(0, 0), table.slice(0, 0)))
    assert len(list(tmp_path.iterdir())) == 3
    assert _read_tables(written)[0].equals(table)


def _swf(jobs: int, first: int = 1, *, crlf: bool = False) -> bytes:
    lines = [b"; Version: 2.2", b"; Computer: a cluster", b"; MaxProcs: 64"]
    for i in range(first, first + jobs):
        if i % 37 == 0:
            lines.append(b"this line is no job")  # quarantined
            continue
        if i % 53 == 0:
            lines.append(b"; Note: a comment among jobs")
        lines.append(
            f"{i} {10 * i} {i % 600} {60 + 7 * i % 86400} {1 + i % 64} {i % 3600}.5 -1 "
            f"{1 + i % 64} 3600 -1 1 {1 + i % 97} {1 + i % 11} -1 {1 + i % 4} 1 -1 -1".encode()
        )
    end = b"\r\n" if crlf else b"\n"
    return end.join(lines) + end


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cuts=st.lists(st.integers(0, 60_000), max_size=6), crlf=st.booleans())
def test_any_split_of_a_real_sized_log_handed_over_is_the_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cuts: list[int], crlf: bool
) -> None:
    """Thousands of job lines a range (runs of chunks without their keys), comments among."""
    monkeypatch.setattr(ranges_module, "_KEYED_ROWS", 16)
    path = tmp_path / f"log-{crlf}.swf"
    if not path.exists():
        path.write_bytes(_swf(1500, crlf=crlf))
    may_start = ranges_module._may_start("swf")
    ranges = split_file(path, cuts, align_lines=1, may_start=may_start)
    with tempfile.TemporaryDirectory(dir=tmp_path) as folder:  # one a hypothesis example
        _same(_by_ranges(path, ranges, folder), _whole(path))
        assert list(Path(folder).iterdir()) == []


def test_ranges_are_submitted_largest_first(tmp_path: Path) -> None:
    path = tmp_path / "log.swf"
    path.write_bytes(_swf(400))
    size = path.stat().st_size
    cuts = [size // 10, size // 10 + 200, size // 2, size - 300]
    ranges = split_file(path, cuts, align_lines=1, may_start=ranges_module._may_start("swf"))
    order: list[Any] = []

    def submit(function: Any, *args: Any) -> Any:
        if function is prepare_range:
            order.append(args[2])
        return _submit(function, *args)

    assembly = RangeAssembly("swf", [(str(path), ranges)], "s", [None], submit, _gather)
    (done,) = assembly.finish()
    sizes = [r.end - r.start for r in order]
    assert sorted(order, key=lambda r: r.index) == ranges
    assert sizes == sorted(sizes, reverse=True)
    assert done.records.equals(_whole(path).records)


# --------------------------------------------------------------------------- the folder


def test_process_workers_hand_over_in_the_spill_dir_and_leave_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("distributed")
    monkeypatch.setattr(ranges_module, "_ALIGN_LINES", 1)
    spill = tmp_path / "spill"
    log = tmp_path / "site" / "a.swf"
    log.parent.mkdir()
    log.write_bytes(_swf(600))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        here = parse_logs(log, format="swf", site="s")
        there = parse_logs(
            log,
            format="swf",
            site="s",
            workers=2,
            processes=True,
            split_bytes=4096,
            spill_dir=spill,
        )
    assert there.info["byte_ranges"]["files_split"] == 1
    assert sorted(spill.rglob("*")) == []
    assert there.records.equals(here.records)
    assert there.jobs.equals(here.jobs)
    assert there.quarantine.equals(here.quarantine)


def test_a_range_failing_while_writing_its_files_leaves_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The third hand-over file fails: the parse raises, and no file of any range is left."""
    distributed = pytest.importorskip("distributed")
    monkeypatch.setattr(ranges_module, "_ALIGN_LINES", 1)
    log = tmp_path / "a.swf"
    log.write_bytes(_swf(600))
    written = [0]
    write = registry._write_table

    def failing(path: Path, table: pa.Table) -> None:
        write(path, table)
        written[0] += 1
        if written[0] == 3:
            msg = f"{path}: the disk is full"
            raise OSError(msg)

    monkeypatch.setattr(registry, "_write_table", failing)
    spill_dir = tmp_path / "hand"
    # threads of this process, so that they write through the failing writer above
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
        ) as cluster,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", DataQualityWarning)
        with pytest.raises(OSError, match="the disk is full"):
            parse_logs(
                log,
                format="swf",
                site="s",
                scheduler=cluster.scheduler_address,
                split_bytes=4096,
                spill_dir=spill_dir,
            )
    assert written[0] >= 3
    assert spill_dir.is_dir()
    assert sorted(spill_dir.rglob("*")) == []
