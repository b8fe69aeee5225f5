"""Counting flags from plain lists gives what the Arrow path's counts give."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from gridtrace.logs._flags import flag_counts
from gridtrace.logs._small_parse import flag_counts_of
from gridtrace.logs._summary import parse_summary

FLAGS = st.sampled_from(["CRLF", "DUPLICATE", "NO_NEWLINE", "VO_UNMAPPED", "B", "A"])
ROWS = st.lists(
    st.tuples(st.sampled_from(["torque", "pbspro"]), st.none() | st.lists(FLAGS, max_size=4)),
    max_size=40,
)


@given(rows=ROWS)
def test_flag_counts_of_lists_are_the_arrow_tables(
    rows: list[tuple[str, list[str] | None]],
) -> None:
    formats = [source_format for source_format, _ in rows]
    flags = [row for _, row in rows]
    table = pa.table(
        {
            "source_format": pa.array(formats, pa.string()),
            "flags": pa.array(flags, pa.list_(pa.string())),
        }
    )
    got = flag_counts_of(formats, flags)
    assert got == flag_counts(table)
    assert [list(counts.items()) for counts in got.values()] == [
        list(counts.items()) for counts in flag_counts(table).values()
    ]  # the same order: formats by name, flags from the most set


@given(rows=ROWS)
def test_the_summarys_flag_counts_count_every_flag_of_every_row(
    rows: list[tuple[str, list[str] | None]],
) -> None:
    flags = [row for _, row in rows]
    summary = parse_summary(
        files=1,
        lines_read=len(rows),
        record_types=["E"] * len(rows),
        record_flags=flags,
        job_states=[],
        job_flags=iter(flags),  # any iterable, read once
        reasons=[],
        tz_offset_s=None,
        input_findings={},
        info={},
    )
    expected: Counter[str] = Counter()
    for row in flags:
        for flag in row or ():
            expected[flag] += 1
    assert summary["record_flags"] == summary["job_flags"] == dict(sorted(expected.items()))
    assert list(summary["record_flags"]) == sorted(expected)
