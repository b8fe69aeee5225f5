"""attr_columns and attr_fingerprints give the same answers on every path, whatever the maps hold.

``attr_columns`` has three ways to find a key: the compiled kernel (large columns), the layout
guesses and a hashed pass over the keys the guesses missed (small columns). Each must give what
``pyarrow.compute.map_lookup(attrs, key, "first")`` gives, on maps with empty keys and values,
non-ASCII text, U+001F, null values, null and empty maps, slices and chunked columns.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridtrace.logs import _attrs, _attrs_fast, read_htcondor
from gridtrace.logs._attrs import attr_columns, attr_fingerprints, repeated_rows

MAP = pa.map_(pa.string(), pa.string())
_TEXT = st.text(alphabet=st.sampled_from(["a", "b", "\x1f", "\x1e", "é", "日", " "]), max_size=3)
_MAP = st.none() | st.lists(
    st.tuples(_TEXT, st.none() | _TEXT), max_size=6, unique_by=lambda pair: pair[0]
)
_NAMES = st.lists(_TEXT, min_size=1, max_size=6)

needs_numba = pytest.mark.skipif(not _attrs_fast.HAVE_NUMBA, reason="numba not installed")


def _column(rows: list[Any], cut: int, chunks: int) -> Any:
    attrs = pa.array(rows, MAP).slice(cut)
    if chunks and len(attrs):
        bounds = np.linspace(0, len(attrs), chunks + 1).astype(int)
        return pa.chunked_array([attrs.slice(a, b - a) for a, b in itertools.pairwise(bounds)], MAP)
    return attrs


def _by_path(attrs: Any, names: list[str], kernel: bool, monkeypatch: Any) -> dict[str, Any]:
    with monkeypatch.context() as patch:
        if kernel:
            patch.setattr(_attrs_fast, "MIN_ROWS", 0)
        else:
            patch.setattr(_attrs, "_use_kernel", lambda attrs: False)
        return attr_columns(attrs, names)


@needs_numba
@settings(max_examples=150)
@given(st.lists(_MAP, max_size=14), _NAMES, st.integers(0, 3), st.integers(0, 3))
def test_every_path_matches_map_lookup(
    rows: list[Any], names: list[str], cut: int, chunks: int
) -> None:
    attrs = _column(rows, cut, chunks)
    whole = attrs.combine_chunks() if isinstance(attrs, pa.ChunkedArray) else attrs
    mp = pytest.MonkeyPatch()
    kernel = _by_path(attrs, names, True, mp)
    arrays = _by_path(attrs, names, False, mp)
    assert list(kernel) == list(dict.fromkeys(names)) == list(arrays)
    for name in names:
        expected = pc.map_lookup(whole, name, "first")
        assert kernel[name].equals(expected)
        assert arrays[name].equals(expected)


@needs_numba
@given(st.lists(st.lists(st.tuples(st.sampled_from(["a", "b"]), _TEXT), max_size=4), max_size=8))
def test_a_repeated_key_gives_one_of_its_values(rows: list[list[tuple[str, str]]]) -> None:
    attrs = pa.array(rows, MAP)
    mp = pytest.MonkeyPatch()
    for kernel in (True, False):
        got = _by_path(attrs, ["a"], kernel, mp)["a"].to_pylist()
        for value, row in zip(got, rows, strict=True):
            held = [v for k, v in row if k == "a"]
            assert value in held if held else value is None


@needs_numba
def test_layouts_that_change_from_row_to_row(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(17)
    keys = [f"key{j}" for j in range(12)]
    rows: list[Any] = []
    for r in range(3_000):
        chosen = [k for k in keys if rng.random() < 0.8]
        if r % 7:  # a few blocks of rows keep one order, the others are shuffled
            rng.shuffle(chosen)
        rows.append([(k, f"{k}={r}") for k in chosen] if r % 11 else None)
    attrs = pa.array(rows, MAP)
    names = [*keys, "absent", ""]
    for kernel in (True, False):
        got = _by_path(attrs, names, kernel, monkeypatch)
        for name in names:
            assert got[name].equals(pc.map_lookup(attrs, name, "first"))


def test_small_columns_do_not_load_numba() -> None:
    script = (
        "import sys, pyarrow as pa\n"
        "from gridtrace.logs._attrs import attr_columns\n"
        "m = pa.array([[('a', '1')]] * 100, pa.map_(pa.string(), pa.string()))\n"
        "assert attr_columns(m, ['a'])['a'].to_pylist() == ['1'] * 100\n"
        "print('numba' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"


@settings(max_examples=150)
@given(st.lists(_MAP, max_size=12), st.integers(0, 3), st.integers(0, 3))
def test_fingerprints_tell_maps_apart_exactly(rows: list[Any], cut: int, chunks: int) -> None:
    attrs = _column(rows, cut, chunks)
    prints = attr_fingerprints(attrs).to_pylist()
    whole = attrs.combine_chunks() if isinstance(attrs, pa.ChunkedArray) else attrs
    maps = [tuple(m or ()) for m in whole.to_pylist()]
    assert len(prints) == len(maps)
    for i in range(len(maps)):
        for j in range(len(maps)):
            assert (prints[i] == prints[j]) == (maps[i] == maps[j])


@given(st.lists(_MAP, max_size=12), st.data())
def test_repeated_rows_against_python(rows: list[Any], data: st.DataObject) -> None:
    attrs = pa.array(rows, MAP)
    among = np.array(
        data.draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows))), dtype=bool
    )
    copies, repeated = repeated_rows(attrs, among)
    maps = [tuple(m or ()) for m in attrs.to_pylist()]
    seen: dict[tuple[Any, ...], int] = {}
    want_copies = np.zeros(len(rows), dtype=bool)
    want_repeated = np.zeros(len(rows), dtype=bool)
    for i in np.flatnonzero(among) if len(rows) > 1 else []:
        if maps[i] in seen:
            want_copies[i] = True
            want_repeated[seen[maps[i]]] = True
        else:
            seen[maps[i]] = i
    if among.sum() < 2:
        want_copies[:] = want_repeated[:] = False
    assert copies.tolist() == want_copies.tolist()
    assert repeated.tolist() == want_repeated.tolist()


@needs_numba
def test_read_htcondor_same_jobs_on_either_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(5)
    base = {
        "ClusterId": 1,
        "ProcId": 0,
        "GlobalJobId": "ce#1.0#1700000000",
        "Owner": "alice",
        "QDate": 1700000000,
        "JobStartDate": 1700000100,
        "CompletionDate": 1700003700,
        "RemoteWallClockTime": 3600.0,
        "RequestCpus": 8,
        "JobStatus": 4,
        "ExitCode": 0,
        "LastRemoteHost": "slot1@wn01",
    }
    lines = []
    for k in range(300):
        ad = {
            **base,
            "ProcId": k,
            "GlobalJobId": f"ce#1.{k}#1700000000",
            "QDate": 1_700_000_000 + k,
        }
        names = list(ad)
        if k % 3 == 0:  # ads of another layout: keys dropped or in another order
            rng.shuffle(names)
        if k % 5 == 0:
            names = [name for name in names if name not in ("ExitCode", "LastRemoteHost")]
        lines.append(json.dumps({name: ad[name] for name in names}))
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(_attrs_fast, "MIN_ROWS", 0)
    kernel = read_htcondor(path, errors="raise")
    monkeypatch.setattr(_attrs, "_use_kernel", lambda attrs: False)
    arrays = read_htcondor(path, errors="raise")
    assert kernel.jobs.equals(arrays.jobs)
    assert kernel.records.equals(arrays.records)
    assert kernel.jobs.num_rows == 300


@needs_numba
def test_a_null_map_over_entries_reads_as_null(monkeypatch: pytest.MonkeyPatch) -> None:
    attrs = pa.MapArray.from_arrays(
        pa.array([0, 1, 2, 3], pa.int32()),
        pa.array(["a", "a", "a"]),
        pa.array(["1", "\x1f", "1"]),
        mask=pa.array([False, True, False]),
    )
    for kernel in (True, False):
        assert _by_path(attrs, ["a"], kernel, monkeypatch)["a"].to_pylist() == ["1", None, "1"]
    prints = attr_fingerprints(attrs).to_pylist()
    assert prints[0] == prints[2] != prints[1]
    assert prints[1] == attr_fingerprints(pa.array([[]], MAP)).to_pylist()[0]
