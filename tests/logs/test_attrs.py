"""attr_columns gives what pyarrow's map_lookup gives, whatever the layout of the maps."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given
from hypothesis import strategies as st

from gridtrace.logs._attrs import attr_columns

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
