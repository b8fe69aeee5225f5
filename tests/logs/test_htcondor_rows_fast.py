"""The HTCondor kernels give the reference tables, attribute by attribute and read by read.

Checked here: every job attribute ``job_values`` finds in the ``attrs`` maps (text, absent or
null, ``true``, number) against Arrow's reading of the maps, after keeping a subset of the rows
too; whole ``-jsonl`` reads against the reference without numba, on ads with their attributes in
any order, escaped quotes and ``\\u`` escapes, nested ClassAd values, missing attributes, numbers
written as strings, damaged lines that must be quarantined, and lines cut at chunk edges; and
the records' stamp epochs (``timestamp[s, UTC]``, null where the stamp is no epoch).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _htcondor_fast, read_htcondor
from gridtrace.logs._htcondor import _JOB_ATTRS, _NUMERIC, _AdValues, tokenize_htcondor_file

pytestmark = pytest.mark.skipif(not _htcondor_fast.HAVE_NUMBA, reason="numba is not installed")

_SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# values as the maps hold them: JSON text of every kind a ClassAd attribute takes
_TEXT = st.one_of(
    st.none(),
    st.sampled_from(
        ["true", "false", "True", "0", "-0", "7", "3600.0", "1e3", "+5", ".5", "/Expr(x)/", ""]
    ),
    st.sampled_from(['{"a": 1}', "[1, 2]", '"7"', "null", "é", 'a"b', "a\\u00e9"]),
    st.integers(-(2**40), 2**40).map(str),
    st.text(alphabet='ab@."\\/é\t ', max_size=5),
)
_MAP = st.one_of(
    st.none(),
    st.dictionaries(
        st.one_of(st.sampled_from(_JOB_ATTRS), st.sampled_from(["Other", "clusterid", ""])),
        _TEXT,
        max_size=12,
    ),
)


def _attrs(rows: list[dict[str, str | None] | None]) -> Any:
    return pa.array(
        [list(r.items()) if r is not None else None for r in rows],
        pa.map_(pa.string(), pa.string()),
    )


def _same(kernel: _AdValues, reference: _AdValues) -> None:
    for key in _NUMERIC:
        assert np.array_equal(kernel.num(key), reference.num(key), equal_nan=True), key
    for key in _JOB_ATTRS:
        assert kernel.missing(key).tolist() == reference.missing(key).tolist(), key
        assert kernel.is_true(key).tolist() == reference.is_true(key).tolist(), key
        assert kernel.text(key).equals(reference.text(key)), key
    assert kernel.expression.tolist() == reference.expression.tolist()
    assert kernel.unreadable.tolist() == reference.unreadable.tolist()


@_SETTINGS
@given(st.lists(_MAP, max_size=10), st.integers(1, 3), st.integers(0, 3))
def test_every_job_attribute_is_what_arrow_reads(
    rows: list[dict[str, str | None] | None], repeat: int, cuts: int
) -> None:
    attrs = _attrs(rows * repeat)  # repeated maps take the kernel's same-layout path
    n = len(attrs)
    edges = sorted({0, n, *(n * k // (cuts + 1) for k in range(1, cuts + 1))})
    chunked = pa.chunked_array(
        [attrs.slice(a, b - a) for a, b in itertools.pairwise(edges)] or [attrs],
        attrs.type,
    )
    kernel = _AdValues(chunked, n, kernel=True)
    reference = _AdValues(attrs, n, kernel=False)
    _same(kernel, reference)
    keep = np.arange(n - 1, -1, -2, dtype=np.int64)  # every other row, backwards
    kernel.keep(keep)
    reference.keep(keep)
    _same(kernel, reference)


def test_job_values_give_each_name_its_rows() -> None:
    rows: list[dict[str, str | None] | None] = [
        {"ClusterId": "1", "ProcId": "2", "Owner": "a"},
        {"ProcId": "3", "ExitBySignal": "true"},
    ]
    found = _htcondor_fast.job_values(_attrs(rows), list(_JOB_ATTRS), len(_NUMERIC), 2)
    assert found is not None
    j = _JOB_ATTRS.index
    assert found.pos.shape == (len(_JOB_ATTRS), 2)
    assert found.pos[j("ProcId")].tolist() == [1, 3]
    assert found.pos[j("ClusterId")].tolist() == [0, -1]
    assert found.kinds[j("ExitBySignal")].tolist() == [0, 2]
    assert found.numbers[j("ProcId")].tolist() == [2.0, 3.0]


# ------------------------------------------------------------------- whole -jsonl reads

_VALUE = st.one_of(
    st.integers(-3, 3),
    st.integers(1_700_000_000, 1_700_000_100),
    st.floats(-1e6, 1e6),
    st.sampled_from([1.5, 3600.0, "1700000050", "7", "", "true", "/Expr(x)/", 'q"u\\o"te']),
    st.booleans(),
    st.none(),
    st.text(alphabet='ab@."\\/é\u2603\t', max_size=5),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(
        st.sampled_from("ab"), st.one_of(st.integers(), st.text(max_size=2)), max_size=2
    ),
)


@st.composite
def _ad(draw: st.DrawFn) -> dict[str, Any]:
    ad: dict[str, Any] = {}
    if draw(st.integers(0, 9)):  # now and then an ad that is no job (no ClusterId)
        ad["ClusterId"] = draw(st.one_of(st.integers(0, 9), st.sampled_from(["4", None])))
    ad["ProcId"] = draw(st.integers(0, 3))
    for key in draw(st.lists(st.sampled_from(_JOB_ATTRS), max_size=8)):
        ad[key] = draw(_VALUE)
    if draw(st.booleans()):
        ad["JobStatus"] = draw(st.integers(1, 7))
        ad["CompletionDate"] = draw(st.one_of(st.integers(0, 2**40), st.just("1700000001")))
        ad["EnteredCurrentStatus"] = draw(st.integers(1_700_000_000, 1_700_000_009))
    items = list(ad.items())
    order = draw(st.permutations(range(len(items))))
    return dict(items[k] for k in order)  # the attributes in any order


_DAMAGE = st.sampled_from(
    ["{", '{"ClusterId": 1, "ProcId": ', "not json", '{"a": 1}{"b": 2}', "]", '{"ClusterId": 1}']
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.one_of(_ad(), _DAMAGE), min_size=1, max_size=10),
    st.integers(1, 3),
    st.booleans(),
    st.integers(24, 400),
)
def test_jsonl_reads_match_the_reference_at_any_chunk_size(
    tmp_path_factory: pytest.TempPathFactory,
    items: list[dict[str, Any] | str],
    repeat: int,
    ascii_only: bool,
    chunk_bytes: int,
) -> None:
    lines = [
        item if isinstance(item, str) else json.dumps(item, ensure_ascii=ascii_only)
        for item in items * repeat
    ]
    path: Path = tmp_path_factory.mktemp("condor") / "history.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_htcondor_fast, "SMALL_INPUT_LINES", 0)
        fast = read_htcondor(path, errors="skip")
        fast_chunks = tokenize_htcondor_file(path, site="s", chunk_bytes=chunk_bytes)
        patch.setattr(_htcondor_fast, "HAVE_NUMBA", False)
        reference = read_htcondor(path, errors="skip")
        reference_chunks = tokenize_htcondor_file(path, site="s", chunk_bytes=chunk_bytes)
    assert fast.records.equals(reference.records)
    assert fast.jobs.equals(reference.jobs)
    assert fast.quarantine.equals(reference.quarantine)
    assert fast.lines_read == fast.records.num_rows + fast.quarantine.num_rows == len(lines)
    assert fast_chunks.records.equals(reference_chunks.records)
    assert fast_chunks.quarantine.equals(reference_chunks.quarantine)
    # cut into chunks or not, the same rows
    whole = tokenize_htcondor_file(path, site="s")
    assert fast_chunks.records.equals(whole.records)
    assert fast_chunks.quarantine.equals(whole.quarantine)


def test_stamp_epochs_are_zoned_timestamps_null_where_not_epochs(tmp_path: Path) -> None:
    stamps: list[Any] = [1_700_000_200, "12", None, "x", 2**63, 0]
    lines = [
        json.dumps({"ClusterId": 1, "ProcId": k, "EnteredCurrentStatus": 5, "CompletionDate": v})
        for k, v in enumerate(stamps)
    ]
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_htcondor_fast, "SMALL_INPUT_LINES", 0)
        records = read_htcondor(path, errors="raise").records
    epochs = records.column("stamp_utc")
    assert epochs.type == pa.timestamp("s", tz="UTC")
    assert epochs.cast(pa.int64()).to_pylist() == [1_700_000_200, 12, 5, None, None, 5]
