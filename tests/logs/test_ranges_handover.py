"""Tables handed over in files, their one-value columns left out and put back: the same tables."""

from __future__ import annotations

import tempfile
from pathlib import Path

import hypothesis.strategies as st
import pyarrow as pa
from hypothesis import HealthCheck, given, settings

from gridtrace.logs import _ranges as ranges_module
from gridtrace.logs._ranges import (
    _read_tables,
    _repeated,
    _Repeats,
    _slimmed,
    _write_tables,
    split_file,
)

from .test_ranges_assembly import _by_ranges, _same, _swf_logs, _whole

_STAMP = pa.timestamp("s", tz="UTC")


def _table(n: int, odd_at: int | None = None) -> pa.Table:
    """Columns of one value, all null, and not: ``odd_at`` makes one row of a string differ."""
    src = ["f.swf"] * n
    if odd_at is not None:
        src[odd_at] = "g.swf"
    return pa.table(
        {
            "site": pa.array(["s"] * n, pa.string()),
            "src_file": pa.array(src, pa.string()),
            "src_line": pa.array(range(1, n + 1), pa.int64()),
            "stamp_utc": pa.nulls(n, _STAMP),
            "flags": pa.nulls(n, pa.list_(pa.string())),
            "attrs": pa.nulls(n, pa.map_(pa.string(), pa.string())),
            "raw": pa.array([b"x"] * n, pa.binary()),
            "some_null": pa.array([None] + ["a"] * (n - 1), pa.string()) if n else pa.array([]),
        },
        schema=pa.schema(
            [
                pa.field("site", pa.string(), nullable=False),
                pa.field("src_file", pa.string(), nullable=False),
                pa.field("src_line", pa.int64(), nullable=False),
                pa.field("stamp_utc", _STAMP),
                pa.field("flags", pa.list_(pa.string())),
                pa.field("attrs", pa.map_(pa.string(), pa.string())),
                pa.field("raw", pa.binary()),
                pa.field("some_null", pa.string()),
            ],
            metadata={b"k": b"v"},
        ),
    )


def test_one_value_columns_are_left_out_and_put_back() -> None:
    table = _table(50)
    slim, uniform = _slimmed(table)
    assert [table.schema.field(i).name for i, _, _ in uniform] == [
        "site", "src_file", "stamp_utc", "flags", "attrs", "raw",
    ]  # fmt: skip
    assert slim.nbytes < table.nbytes
    back = _Repeats().restored(slim, uniform)
    assert back.equals(table)
    assert back.schema.equals(table.schema, check_metadata=True)


@given(n=st.integers(1, 40), odd=st.integers(0, 39))
def test_a_column_differing_in_one_row_is_kept(n: int, odd: int) -> None:
    """A value differing anywhere, not only where the column is probed, keeps the column."""
    table = _table(n, odd % n)
    slim, uniform = _slimmed(table)
    names = {table.schema.field(i).name for i, _, _ in uniform}
    assert ("src_file" in names) == (n == 1)  # one row holds one value
    assert _Repeats().restored(slim, uniform).equals(table)


_FLAG_LISTS = st.one_of(
    st.none(), st.lists(st.sampled_from(["TIME_RELATIVE", "LATE", ""]) | st.none(), max_size=2)
)


@given(first=_FLAG_LISTS, other=_FLAG_LISTS, n=st.integers(1, 30), odd=st.integers(0, 29))
def test_a_list_column_of_one_value_is_left_out_and_put_back(
    first: list[str | None] | None, other: list[str | None] | None, n: int, odd: int
) -> None:
    """A flags column of one list in every row is left out; any row differing keeps it whole."""
    rows = [first] * n
    rows[odd % n] = other
    kind = pa.list_(pa.string())
    table = pa.table({"flags": pa.array(rows, kind), "src_line": pa.array(range(n), pa.int64())})
    slim, uniform = _slimmed(table)
    left_out = [table.schema.field(i).name for i, _, _ in uniform] == ["flags"]
    same = all(row == rows[0] for row in rows)
    short = rows[0] is None or (len(rows[0]) <= 1 and None not in rows[0])
    assert left_out == (same and short)
    back = _Repeats().restored(slim, uniform)
    assert back.equals(table)
    assert back.schema.equals(table.schema)


@given(value=_FLAG_LISTS | st.lists(st.text(max_size=3), max_size=4), n=st.integers(1, 20))
def test_a_list_repeated_is_pa_repeat_of_it(value: list[str | None] | None, n: int) -> None:
    # (n from 1: pa.repeat of an empty list 0 times raises; a table left out has rows)
    kind = pa.list_(pa.string())
    scalar = pa.scalar(value, kind)
    assert _repeated(scalar, n).equals(pa.repeat(scalar, n))


def test_an_empty_table_is_written_as_it_is() -> None:
    table = _table(0)
    slim, uniform = _slimmed(table)
    assert uniform == ()
    assert slim.equals(table)


def test_columns_put_back_share_one_array_of_the_largest_size() -> None:
    repeats = _Repeats(30)
    a, b = _slimmed(_table(30)), _slimmed(_table(12))
    first, second = repeats.restored(*a), repeats.restored(*b)
    assert first.equals(_table(30))
    assert second.equals(_table(12))
    assert first.column("src_file").chunk(0).buffers()[2].address == (
        second.column("src_file").chunk(0).buffers()[2].address
    )
    bigger = repeats.restored(*_slimmed(_table(45)))  # larger than planned: made again
    assert bigger.equals(_table(45))


def test_written_tables_come_back_the_same_and_their_files_go(tmp_path: Path) -> None:
    tables = (_table(20), _table(0), _table(7, 3))
    written = _write_tables(str(tmp_path), 3, tables)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "task-000003.jobs.arrow", "task-000003.quarantine.arrow", "task-000003.records.arrow",
    ]  # fmt: skip
    back = _read_tables(written)
    for got, want in zip(back, tables, strict=True):
        assert got.equals(want)
        assert got.schema.equals(want.schema, check_metadata=True)
    assert list(tmp_path.iterdir()) == []  # mapped, then deleted


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=_swf_logs(), cuts=st.lists(st.floats(0, 1), max_size=7))
def test_any_split_handed_over_in_files_is_the_whole_file(
    tmp_path: Path, data: bytes, cuts: list[float]
) -> None:
    """Header lines, repeats across ranges, CRLF, damaged lines, one-line and empty ranges."""
    with tempfile.TemporaryDirectory(dir=tmp_path) as where:
        path = Path(where) / "log.swf"
        path.write_bytes(data)
        folder = Path(where) / "hand"
        folder.mkdir()
        at = [int(c * len(data)) for c in cuts]
        ranges = split_file(path, at, align_lines=1, may_start=ranges_module._may_start("swf"))
        _same(_by_ranges(path, ranges, str(folder)), _whole(path))
        assert list(folder.iterdir()) == []
