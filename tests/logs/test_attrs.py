"""attr_columns gives what pyarrow's map_lookup gives, whatever the layout of the maps."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given
from hypothesis import strategies as st

from gridtrace.logs._attrs import (
    append_flag,
    attr_columns,
    attr_fingerprints,
    flag_array,
    flag_mask,
    repeated_rows,
)

MAP = pa.map_(pa.string(), pa.string())
KEYS = [f"k{j}" for j in range(6)]


def test_same_layout_reads_by_position() -> None:
    attrs = pa.array([[("a", "1"), ("b", "2")], [("a", "3"), ("b", None)], None, []], MAP)
    got = attr_columns(attrs, ["a", "b", "c"])
    assert got["a"].to_pylist() == ["1", "3", None, None]
    assert got["b"].to_pylist() == ["2", None, None, None]
    assert got["c"].to_pylist() == [None, None, None, None]


def test_reordered_and_sliced_maps() -> None:
    attrs = pa.array([[("a", "1"), ("b", "2")], [("b", "4"), ("a", "5")], [("b", "6")]], MAP)
    assert attr_columns(attrs, ["a"])["a"].to_pylist() == ["1", "5", None]
    assert attr_columns(attrs.slice(1), ["b"])["b"].to_pylist() == ["4", "6"]
    chunked = pa.chunked_array([attrs.slice(0, 1), attrs.slice(1)])
    assert attr_columns(chunked, ["b"])["b"].to_pylist() == ["2", "4", "6"]


_ROW = st.one_of(
    st.none(),
    st.permutations(KEYS).flatmap(
        lambda keys: st.integers(0, len(keys)).flatmap(
            lambda size: st.tuples(
                *(st.tuples(st.just(k), st.none() | st.text(max_size=3)) for k in keys[:size])
            )
        )
    ),
)


@given(st.lists(_ROW, max_size=12), st.integers(0, 3))
def test_matches_map_lookup(
    rows: list[tuple[tuple[str, str | None], ...] | None], cut: int
) -> None:
    attrs = pa.array([list(r) if r is not None else None for r in rows], MAP).slice(cut)
    got = attr_columns(attrs, [*KEYS, "missing"])
    for key, values in got.items():
        assert values.equals(pc.map_lookup(attrs, key, "first"))


def test_fingerprints_are_equal_exactly_for_equal_maps() -> None:
    attrs = pa.array(
        [
            [("a", "1"), ("b", "2")],
            [("a", "1"), ("b", "2")],
            [("a", "1"), ("b", None)],
            [("a", "1"), ("b", "")],
            [("b", "2"), ("a", "1")],
            [("a", "1\x1f"), ("b", "2")],
            [("a", "1\x1f"), ("b", "2")],
            None,
        ],
        MAP,
    )
    prints = attr_fingerprints(attrs).to_pylist()
    assert prints[0] == prints[1]
    assert len(set(prints[1:6])) == 5  # null vs empty, key order, a separator inside: all differ
    assert prints[5] == prints[6]  # a record holding the separator, written twice, is one map


@given(st.lists(_ROW, max_size=12), st.integers(0, 3))
def test_fingerprints_match_python_equality(
    rows: list[tuple[tuple[str, str | None], ...] | None], cut: int
) -> None:
    attrs = pa.array([list(r) if r is not None else None for r in rows], MAP).slice(cut)
    prints = attr_fingerprints(attrs).to_pylist()
    maps = [tuple(m or ()) for m in attrs.to_pylist()]
    for i in range(len(maps)):
        for j in range(len(maps)):
            assert (prints[i] == prints[j]) == (maps[i] == maps[j])


@given(
    st.lists(st.none() | st.lists(st.sampled_from(["A", "B", "C"]), max_size=3), max_size=10),
    st.data(),
)
def test_append_flag_adds_at_the_end_of_the_chosen_rows(
    rows: list[list[str] | None], data: st.DataObject
) -> None:
    mask = data.draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows)))
    flags = pa.array(rows, pa.list_(pa.string()))
    got = append_flag(flags, np.array(mask, dtype=bool), "NEW").to_pylist()
    if not any(mask):
        assert got == rows
        return
    expected = [[*(r or []), "NEW"] if m else (r or None) for r, m in zip(rows, mask, strict=True)]
    assert got == expected


def test_flag_array_and_flag_mask() -> None:
    flags = flag_array(
        4, [("A", np.array([1, 0, 1, 0], bool)), ("B", np.array([1, 0, 0, 0], bool))]
    )
    assert flags.to_pylist() == [["A", "B"], None, ["A"], None]
    assert flag_mask(flags, "A").tolist() == [True, False, True, False]
    assert flag_mask(flags, "C").tolist() == [False] * 4
    assert flag_array(2, []).to_pylist() == [None, None]
    assert flag_mask(pa.chunked_array([flags.slice(1)]), "B").tolist() == [False] * 3


def test_repeated_rows_finds_later_copies_among_the_chosen_rows() -> None:
    attrs = pa.array(
        [[("a", "1")], [("a", "2")], [("a", "1")], [("a", "1")], [("a", "2")], [("a", "3")]], MAP
    )
    among = np.array([True, True, True, True, False, True])
    copies, repeated = repeated_rows(attrs, among)
    assert copies.tolist() == [False, False, True, True, False, False]
    assert repeated.tolist() == [True, False, False, False, False, False]
    none, nothing = repeated_rows(attrs, np.zeros(6, dtype=bool))
    assert not none.any()
    assert not nothing.any()
