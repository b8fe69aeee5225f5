"""The compiled shortcuts of the HTCondor assembler give the tables of the reference paths.

Ads are compared for copies (``DUPLICATE_LINE``) and shared ids (``DUPLICATE``) only where their
ClusterId, ProcId and QDate numbers meet, unless an id is not two plain integers; the text
attributes of the jobs are gathered in one pass over the maps. Each is checked against what it
replaces: ``numpy.unique``, Arrow's ``take``, and a whole read without numba, on ids whose dots
split differently (``"1.2"`` and ``3`` against ``1`` and ``"2.3"``).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _htcondor_fast, read_htcondor
from gridtrace.logs._htcondor import _JOB_ATTRS, _NUMERIC, _AdValues

pytestmark = pytest.mark.skipif(not _htcondor_fast.HAVE_NUMBA, reason="numba is not installed")

_SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_FLOAT = st.sampled_from([0.0, -0.0, 1.0, 2.0, 1e300, -3.5, math.nan, 1700000000.0])


@_SETTINGS
@given(st.lists(st.tuples(_FLOAT, _FLOAT, _FLOAT, st.booleans()), max_size=20))
def test_shared_triples_are_the_rows_numpy_finds_repeated(
    rows: list[tuple[float, float, float, bool]],
) -> None:
    x, y, z = (np.array([r[k] for r in rows], dtype=np.float64) for k in range(3))
    among = np.array([r[3] for r in rows], dtype=bool)
    shared = _htcondor_fast.shared_triples(x, y, z, among)
    assert shared is not None

    def key(k: int) -> tuple[Any, ...]:  # NaN equal to NaN, -0.0 to 0.0
        return tuple("nan" if math.isnan(v) else v + 0.0 for v in (x[k], y[k], z[k]))

    keys = [key(k) for k in range(len(rows)) if among[k]]
    expected = [bool(among[k]) and keys.count(key(k)) > 1 for k in range(len(rows))]
    assert shared.tolist() == expected


_TEXT = st.one_of(st.none(), st.text(alphabet="ab@.é\x1f ", max_size=6))
_MAP = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from([*_JOB_ATTRS[-8:], "Other", "ClusterId"]), _TEXT, max_size=6),
)


@_SETTINGS
@given(st.lists(_MAP, max_size=12), st.integers(1, 3))
def test_gathered_texts_are_the_values_arrow_takes(
    rows: list[dict[str, str | None] | None], repeat: int
) -> None:
    attrs = pa.array(
        [list(r.items()) if r is not None else None for r in rows * repeat],
        pa.map_(pa.string(), pa.string()),
    )
    n = len(attrs)
    chunks = [attrs.slice(0, n // 3), attrs.slice(n // 3)]
    found = [_htcondor_fast.job_values(c, list(_JOB_ATTRS), len(_NUMERIC), 2) for c in chunks]
    assert all(f is not None for f in found)
    values = [f for f in found if f is not None]
    names = list(range(len(_JOB_ATTRS) - 8, len(_JOB_ATTRS)))
    texts = _htcondor_fast.gather_texts(chunks, values, names)
    assert texts is not None
    for j, gathered in zip(names, texts, strict=True):
        gathered.validate(full=True)
        parts = zip(chunks, values, strict=True)
        taken = pa.concat_arrays(
            [c.items.take(pa.array(f.pos[j], mask=f.pos[j] < 0)) for c, f in parts]
        )
        assert gathered.equals(taken), _JOB_ATTRS[j]
    reference = _AdValues(attrs, n, kernel=False)
    kernel = _AdValues(pa.chunked_array(chunks, attrs.type), n, kernel=True)
    for name in _JOB_ATTRS:
        assert kernel.text(name).equals(reference.text(name)), name


# ids whose text is the same with the dot in another place, or the same number written
# otherwise: only the text decides whether two ads share an id
_ID_PART = st.sampled_from([1, 2, 3, 7, -0, "1.2", "2.3", "1", "3", "007", 1.5, "x.1", None])


@st.composite
def _ad(draw: st.DrawFn) -> dict[str, Any]:
    ad: dict[str, Any] = {
        "ClusterId": draw(_ID_PART),
        "ProcId": draw(_ID_PART),
        "QDate": draw(st.sampled_from([1_700_000_000, 1_700_000_001, -0.0, 0, None, "q"])),
        "JobStatus": 4,
    }
    if draw(st.booleans()):
        ad["Owner"] = draw(st.sampled_from(["alice", "bob"]))
    return ad


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ad(), min_size=1, max_size=10), st.lists(st.integers(0, 9), max_size=4))
def test_copies_and_shared_ids_match_a_read_without_numba(
    tmp_path_factory: pytest.TempPathFactory, ads: list[dict[str, Any]], again: list[int]
) -> None:
    lines = [json.dumps(ad) for ad in ads] + [json.dumps(ads[k % len(ads)]) for k in again]
    path = tmp_path_factory.mktemp("condor") / "history.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_htcondor_fast, "SMALL_INPUT_LINES", 0)
        fast = read_htcondor(path, errors="skip")
        patch.setattr(_htcondor_fast, "HAVE_NUMBA", False)
        reference = read_htcondor(path, errors="skip")
    assert fast.records.equals(reference.records)
    assert fast.jobs.equals(reference.jobs)
    assert fast.info == reference.info


def test_ids_split_at_another_dot_are_shared() -> None:
    # "1.2" + "." + "3" and 1 + "." + "2.3" are the same id text, "1.2.3"
    attrs = pa.array(
        [
            [("ClusterId", "1.2"), ("ProcId", "3"), ("QDate", "5")],
            [("ClusterId", "1"), ("ProcId", "2.3"), ("QDate", "5")],
            [("ClusterId", "1"), ("ProcId", "2"), ("QDate", "5")],
        ],
        pa.map_(pa.string(), pa.string()),
    )
    values = _AdValues(attrs, 3, kernel=True)
    maybe = values.may_share()
    assert maybe is not None
    assert maybe.tolist() == [True, True, False]  # not plain integers: compared by their text


_STAMP = st.sampled_from(
    [
        None,
        0,
        -0,
        "0",
        "",
        "007",
        "12a",
        1_700_000_000,
        2**63 - 1,
        2**63,
        "9223372036854775807",
        "00009223372036854775807",
        "9223372036854775808",
        "99999999999999999999",
        "-5",
        "é",
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_STAMP, _STAMP, st.booleans(), st.booleans()), min_size=1, max_size=8))
def test_ids_stamps_and_epochs_match_a_read_without_numba(
    tmp_path_factory: pytest.TempPathFactory,
    stamps: list[tuple[Any, Any, bool, bool]],
) -> None:
    lines = []
    for k, (completion, entered, has_completion, null_id) in enumerate(stamps):
        ad: dict[str, Any] = {"ClusterId": None if null_id else 5, "ProcId": k}
        if has_completion:
            ad["CompletionDate"] = completion
        ad["EnteredCurrentStatus"] = entered
        lines.append(json.dumps(ad))
    path = tmp_path_factory.mktemp("condor") / "history.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_htcondor_fast, "SMALL_INPUT_LINES", 0)
        fast = read_htcondor(path, errors="skip")
        patch.setattr(_htcondor_fast, "HAVE_NUMBA", False)
        reference = read_htcondor(path, errors="skip")
    assert fast.records.equals(reference.records)
    assert fast.jobs.equals(reference.jobs)
