"""The pieces every reader's assembly shares to build its :class:`ParseResult`."""

from __future__ import annotations

import pyarrow as pa

from gridtrace.logs._base import (
    FileParse,
    dominant_offset,
    parts_quarantine,
    parts_records,
    result_of_parts,
)
from gridtrace.schema import JOBS, QUARANTINE, RECORDS


def _jobs_with_offsets(offsets: list[int | None]) -> pa.Table:
    columns = {f.name: pa.nulls(len(offsets), f.type) for f in JOBS}
    columns["tz_offset_s"] = pa.array(offsets, JOBS.field("tz_offset_s").type)
    return pa.Table.from_pydict(columns, schema=JOBS)


def test_dominant_offset_is_the_most_common_and_the_smallest_of_equals() -> None:
    assert dominant_offset(_jobs_with_offsets([3600, 7200, 7200, None])) == 7200
    assert dominant_offset(_jobs_with_offsets([7200, 3600, None, None])) == 3600
    assert dominant_offset(_jobs_with_offsets([-18000, 3600, 3600, -18000])) == -18000


def test_dominant_offset_is_none_without_offsets() -> None:
    assert dominant_offset(_jobs_with_offsets([None, None])) is None
    assert dominant_offset(JOBS.empty_table()) is None


def test_no_parts_give_empty_tables_and_zero_counts() -> None:
    records, quarantine = parts_records([]), parts_quarantine([])
    assert records.schema == RECORDS
    assert records.num_rows == 0
    assert quarantine.schema == QUARANTINE
    assert quarantine.num_rows == 0
    result = result_of_parts(
        [], records=records, jobs=JOBS.empty_table(), quarantine=quarantine, info={}
    )
    assert result.files == ()
    assert result.lines_read == 0
    assert result.tz_offset_s is None


def test_parts_are_joined_in_reading_order_and_their_lines_counted() -> None:
    def part(name: str, lines: int) -> FileParse:
        rows = {f.name: pa.nulls(1, f.type) for f in QUARANTINE}
        rows["src_file"] = pa.array([name])
        quarantined = pa.Table.from_pydict(rows, schema=QUARANTINE)
        return FileParse(name, RECORDS.empty_table(), quarantined, lines)

    parts = [part("a.log", 4), part("b.log", 7)]
    quarantine = parts_quarantine(parts)
    assert quarantine.column("src_file").to_pylist() == ["a.log", "b.log"]
    result = result_of_parts(
        parts,
        records=parts_records(parts),
        jobs=JOBS.empty_table(),
        quarantine=quarantine,
        info={"format": "x"},
        tz_offset_s=3600,
    )
    assert result.files == ("a.log", "b.log")
    assert result.lines_read == 11
    assert result.tz_offset_s == 3600
    assert result.info == {"format": "x"}
