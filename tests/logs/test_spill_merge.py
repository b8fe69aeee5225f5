"""The merge of the out-of-core assembly on the workers: windows stitched into one file each.

``stitch_parquet`` joins Parquet files by copying their row groups and rewriting the footer;
what a user relies on is that the file reads back as the concatenation of the parts, by any
row group, with its statistics. ``spill_parse`` merges its windows as worker tasks: with one
process and with two, and with many small windows, it writes the same tables.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from gridtrace.demo import write_demo_site
from gridtrace.errors import DataQualityWarning, GridtraceError
from gridtrace.logs import parse_logs
from gridtrace.logs._parquet_stitch import StitchError, stitch_parquet
from gridtrace.logs._spill import _run, _Workers, spill_parse

TABLES = ("records", "jobs", "quarantine")


def _table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": pa.array(np.arange(rows, dtype=np.int64) + seed * 1000),
            "x": pa.array(rng.normal(size=rows), pa.float64()),
            "name": pa.array([f"job-{i % 7}" if i % 5 else None for i in range(rows)], pa.string()),
            "flags": pa.array([["A", "B"][: i % 3] for i in range(rows)], pa.list_(pa.string())),
            "when": pa.array(np.arange(rows) * 1000, pa.timestamp("ms", tz="UTC")),
            "ok": pa.array([bool(i % 2) for i in range(rows)], pa.bool_()),
        }
    )


def _write_parts(folder: Path, tables: list[pa.Table], **options: object) -> list[Path]:
    paths = []
    for i, table in enumerate(tables):
        path = folder / f"part-{i}.parquet"
        pq.write_table(table, path, **options)  # type: ignore[arg-type]
        paths.append(path)
    return paths


@pytest.mark.parametrize(
    "options",
    [{}, {"compression": "zstd"}, {"row_group_size": 70}, {"use_dictionary": False}],
    ids=["default", "zstd", "row-groups", "plain"],
)
def test_stitched_parts_read_back_as_their_concatenation(tmp_path: Path, options: dict) -> None:
    tables = [_table(rows, seed) for seed, rows in enumerate([300, 1, 0, 257, 40])]
    parts = _write_parts(tmp_path, tables, **options)
    target = tmp_path / "all.parquet"
    assert stitch_parquet(parts, target) == 598
    expected = pa.concat_tables(tables)
    got = pq.read_table(target)
    assert got.schema.equals(expected.schema, check_metadata=False)
    assert got.equals(expected)
    # every row group reads on its own, at its place, and keeps its statistics
    stitched = pq.ParquetFile(target)
    groups = [g for part in parts for g in range(pq.ParquetFile(part).num_row_groups)]
    assert stitched.num_row_groups == len(groups)
    start = 0
    for g in range(stitched.num_row_groups):
        group = stitched.read_row_group(g)
        assert group.equals(expected.slice(start, group.num_rows))
        stats = stitched.metadata.row_group(g).column(0).statistics
        if group.num_rows:
            assert stats.min == pc.min(group.column("id")).as_py()
        start += group.num_rows
    # a filter by statistics reads the right rows
    assert pq.read_table(target, filters=[("id", ">=", 3000)]).equals(
        expected.filter(pc.greater_equal(expected.column("id"), 3000))
    )


def test_one_part_is_copied_unchanged_in_what_it_reads(tmp_path: Path) -> None:
    parts = _write_parts(tmp_path, [_table(50, 1)])
    stitch_parquet(parts, tmp_path / "one.parquet")
    assert pq.read_table(tmp_path / "one.parquet").equals(pq.read_table(parts[0]))
    assert (tmp_path / "one.parquet").stat().st_size == parts[0].stat().st_size


def test_parts_of_another_schema_or_not_parquet_are_refused(tmp_path: Path) -> None:
    parts = _write_parts(tmp_path, [_table(5, 1), _table(5, 2).drop_columns(["x"])])
    with pytest.raises(StitchError, match="another schema"):
        stitch_parquet(parts, tmp_path / "bad.parquet")
    text = tmp_path / "text.parquet"
    text.write_text("not a parquet file at all")
    with pytest.raises(StitchError) as raised:
        stitch_parquet([text], tmp_path / "bad.parquet")
    assert isinstance(raised.value, GridtraceError)
    assert isinstance(raised.value, ValueError)
    with pytest.raises(StitchError):
        stitch_parquet([], tmp_path / "bad.parquet")


# --------------------------------------------------------------------------------------------
# the merge as worker tasks


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("demo") / "log"
    write_demo_site(folder, n_jobs=400, cores=16, seed=11)
    return folder


@pytest.mark.parametrize("workers", [1, 2])
def test_small_windows_merged_by_workers_give_the_in_memory_tables(
    demo: Path, tmp_path: Path, workers: int
) -> None:
    files = sorted(str(p) for p in demo.iterdir())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        memory = parse_logs(files)
        done = spill_parse(
            "torque",
            files,
            tmp_path,
            site=memory.records.column("site")[0].as_py(),
            workers=workers,
            partitions=3,
            window_rows=97,
        )
    assert done.summary["jobs"] == memory.jobs.num_rows
    for name in TABLES:
        sink = io.BytesIO()  # Parquet keeps second stamps as milliseconds: compare both so
        pq.write_table(getattr(memory, name), sink)
        expected = pq.read_table(io.BytesIO(sink.getvalue()))
        got = pq.read_table(tmp_path / f"{name}.parquet")
        assert got.schema.equals(expected.schema), name
        assert got.num_rows == expected.num_rows, name
        for column in expected.column_names:
            assert got.column(column).equals(expected.column(column)), (name, column)
    # many windows: many row groups, and the spill folder is gone
    assert pq.ParquetFile(tmp_path / "records.parquet").num_row_groups > 3
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def _square(x: int) -> int:
    return x * x


def _fail_at(x: int, bad: int) -> int:
    if x >= bad:
        msg = f"task {x} failed"
        raise ValueError(msg)
    return x


def test_tasks_shared_with_a_pool_worker_come_back_in_order(tmp_path: Path) -> None:
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as executor:
        pool = _Workers(executor, 1, share=True, name="torque")
        assert _run(pool, _square, [(i,) for i in range(40)]) == [i * i for i in range(40)]
        assert _run(pool, _square, []) == []
        with pytest.raises(ValueError, match="task 5 failed"):  # the first in order
            _run(pool, _fail_at, [(i, 5) for i in range(12)])
        assert _run(pool, _square, [(3,)]) == [9]  # the pool still works after a failure
        # started largest first, returned in the calls' order
        costs = [float(i % 7) for i in range(30)]
        assert _run(pool, _square, [(i,) for i in range(30)], costs) == [i * i for i in range(30)]
        with pytest.raises(ValueError, match="task 5 failed"):  # still the first in order
            _run(pool, _fail_at, [(i, 5) for i in range(12)], [float(-i) for i in range(12)])


def test_a_failed_merge_leaves_the_outputs_as_they_were(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gridtrace.logs._spill as spill_module

    files = sorted(str(p) for p in demo.iterdir())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        spill_parse("torque", files, tmp_path, site="s", partitions=3, window_rows=97)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    merge = spill_module._merge_window

    def fail_late(folder: str, table: str, window: int, partitions: int) -> str | None:
        if table == "jobs" and window == 2:  # the records' output is stitched by then
            msg = "merge failed"
            raise OSError(msg)
        return merge(folder, table, window, partitions)

    monkeypatch.setattr(spill_module, "_merge_window", fail_late)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        with pytest.raises(OSError, match="merge failed"):
            spill_parse("torque", files, tmp_path, site="s", partitions=3, window_rows=97)
    # no output replaced, no temporary file or spill folder left
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
