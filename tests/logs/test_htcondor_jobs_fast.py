"""The compiled HTCondor paths give the tables of the reference paths, value for value.

Three layers are checked on generated ads: the ``-jsonl`` scanner (real numbers left as written
only when ``json.dumps`` writes them so), the kernel reading the job attributes out of the
``attrs`` maps (against Arrow's parsing, ``_attrs.attr_columns``), and the vectorised host,
account, duplicate and state columns (against the per-job Python rules they replace). A whole
read with the kernels is compared with one without numba.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _htcondor_fast, read_htcondor
from gridtrace.logs._htcondor import (
    _JOB_ATTRS,
    _accounts,
    _hosts,
    _shared,
)

from ._htcondor_compare import assert_same_ad_values

pytestmark = pytest.mark.skipif(not _htcondor_fast.HAVE_NUMBA, reason="numba is not installed")

_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# numbers of every JSON form, and text that is almost a number
_NUMBER_TEXT = st.one_of(
    st.integers(-(10**25), 10**25).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(json.dumps),
    st.sampled_from(
        [
            "0",
            "-0",
            "0.0",
            "-0.0",
            "1.50",
            "1e5",
            "1E+5",
            "2.5e-3",
            "3600.0",
            "0.0001",
            "0.00001",
            "123456789012345.6",
            "1234567890123456.7",
            "12345678901234567",
            "9007199254740993",
            "0.1000000000000000055511151231257827",
            "1" + "0" * 22 + ".5",
            "+5",
            ".5",
            "5.",
            "-",
            "-.5",
            "1.2.3",
            "1e",
            "007",
            " 5",
            "5 ",
            "0x10",
            "true",
            "false",
            "null",
            "",
            "/Expr(a + b)/",
            "/Expr(",
            "/Exp",
            "Infinity",
            "NaN",
            "é",
        ]
    ),
)


def _json_value(text: str) -> Any:
    """``text`` as a JSON number when it is one, else as a string."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if text != text.strip():
        return text
    if isinstance(value, float) and not math.isfinite(value):
        return text  # Infinity and NaN are not JSON: the kernel declines them
    return value if isinstance(value, int | float) else text


@_SETTINGS
@given(st.lists(_NUMBER_TEXT, min_size=1, max_size=8))
def test_numbers_kept_as_written_are_what_json_dumps_writes(texts: list[str]) -> None:
    # the kernel keeps a number's text unless json.dumps may write it otherwise; it then
    # lists it for the reader to rewrite (integers are never rewritten: -0 is written 0)
    numbers = [t for t in texts if isinstance(_json_value(t), int | float)]
    line = "{" + ", ".join(f'"a{k}": {t}' for k, t in enumerate(numbers))
    line += (", " if numbers else "") + '"ClusterId": 1, "ProcId": 0}\n'
    scan = _htcondor_fast.scan_jsonl(line.encode())
    assert scan is not None
    assert scan.fast.tolist() == [True]
    values = scan.values.to_pylist()
    for k, text in enumerate(numbers):
        value = json.loads(text)
        if isinstance(value, int):
            assert not scan.rewrite[k]
            assert values[k] == ("0" if text == "-0" else text)
        elif scan.rewrite[k]:
            assert values[k] == text
        else:
            assert values[k] == text == json.dumps(value), text


def _attrs_array(rows: list[dict[str, str | None] | None]) -> Any:
    return pa.array(
        [list(r.items()) if r is not None else None for r in rows],
        pa.map_(pa.string(), pa.string()),
    )


_ROW = st.one_of(
    st.none(),
    st.dictionaries(
        st.one_of(st.sampled_from(_JOB_ATTRS), st.text(alphabet="ACJOQRab", max_size=5)),
        st.one_of(st.none(), _NUMBER_TEXT),
        max_size=10,
    ),
)


@_SETTINGS
@given(st.lists(_ROW, max_size=12), st.integers(1, 4))
def test_the_attribute_kernel_reads_what_arrow_reads(
    rows: list[dict[str, str | None] | None], repeat: int
) -> None:
    # repeated rows take the kernel's same-layout path
    assert_same_ad_values(_attrs_array(rows * repeat))


def _host_of(remote: str | None) -> str | None:
    # the rule before vectorising: the text after the last "@", None when empty
    if not remote:
        return None
    return remote.rpartition("@")[2] or None


_HOST = st.one_of(st.none(), st.text(alphabet="@ab.\n_1é", max_size=6))
_NAME = st.one_of(st.none(), st.sampled_from(["", "alice", "bob", "a.b"]))
_GROUP = st.one_of(
    st.none(), st.sampled_from(["", "grp.alice", "grp.bob", "alice", ".alice", "g.a.b", "grp."])
)


@_SETTINGS
@given(st.lists(st.tuples(_HOST, _HOST), max_size=12))
def test_hosts_are_the_text_after_the_last_at(pairs: list[tuple[str | None, str | None]]) -> None:
    last = _hosts(pa.array([p[0] for p in pairs], pa.string())).to_pylist()
    current = _hosts(pa.array([p[1] for p in pairs], pa.string())).to_pylist()
    assert last == [_host_of(p[0]) for p in pairs]
    assert current == [_host_of(p[1]) for p in pairs]


@_SETTINGS
@given(st.lists(st.tuples(_NAME, _GROUP, _NAME, _NAME), max_size=12))
def test_accounts_follow_the_group_rules(
    rows: list[tuple[str | None, str | None, str | None, str | None]],
) -> None:
    expected: list[str | None] = []
    whole: list[bool] = []
    for acct, full, who, member in rows:  # the rule before vectorising
        if acct:
            expected.append(acct)
            whole.append(False)
        elif full:
            suffix = "." + (member or who or "")
            kept = full.removesuffix(suffix) if suffix != "." else full
            expected.append(kept)
            whole.append(kept == full)
        else:
            expected.append(None)
            whole.append(False)
    columns = [pa.array([r[k] for r in rows], pa.string()) for k in range(4)]
    account, from_group = _accounts(*columns)
    assert account.to_pylist() == expected
    assert from_group.tolist() == whole


@_SETTINGS
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.sampled_from(["1.0", "1.1", ""])),
            st.sampled_from([1.0, 2.0, math.nan, 0.0, -0.0]),
        ),
        max_size=12,
    )
)
def test_shared_ids_and_qdates_are_found(rows: list[tuple[str | None, float]]) -> None:
    ids = pa.chunked_array([pa.array([r[0] for r in rows], pa.string())])
    qdate = np.array([r[1] for r in rows], dtype=np.float64)

    def key(row: tuple[str | None, float]) -> tuple[str | None, float | str]:
        return row[0], "nan" if math.isnan(row[1]) else row[1] + 0.0

    keys = [key(r) for r in rows]
    assert _shared(ids, qdate).tolist() == [keys.count(k) > 1 for k in keys]


# numbers that fit the job columns (int32 ones too): beyond, the reader fails either way
_VALUE = st.one_of(
    st.integers(-3, 3),
    st.integers(-(2**31) + 1, 2**31 - 1),
    st.floats(-1e9, 1e9),
    st.sampled_from([1.5, 1e5, -0.0, 3600.0, 0.1, 1e-7, "/Expr(x)/", "7", "", "true", "1e3"]),
    st.booleans(),
    st.none(),
    st.text(alphabet='ab@."\\/é\t\x1f', max_size=5),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.sampled_from("ab"), st.integers(), max_size=1),
)


@st.composite
def _ad(draw: st.DrawFn) -> dict[str, Any]:
    ad: dict[str, Any] = {
        "ClusterId": draw(st.integers(0, 9)),
        "ProcId": draw(st.integers(0, 3)),
        "JobStatus": draw(st.one_of(st.integers(0, 8), _VALUE)),
        "QDate": draw(st.integers(1_700_000_000, 1_700_000_009)),
    }
    keys = draw(st.lists(st.sampled_from(_JOB_ATTRS), max_size=8))
    for key in keys:
        ad[key] = draw(_VALUE)
    if draw(st.booleans()):
        ad["CompletionDate"] = draw(st.one_of(st.integers(0, 2**40), _VALUE))
    return ad


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ad(), min_size=1, max_size=8), st.integers(1, 3), st.booleans())
def test_whole_reads_match_without_numba(
    tmp_path_factory: pytest.TempPathFactory,
    ads: list[dict[str, Any]],
    repeat: int,
    crlf: bool,
) -> None:
    path = tmp_path_factory.mktemp("condor") / "history.jsonl"
    lines = [json.dumps(ad, ensure_ascii=k % 2 == 0) for k, ad in enumerate(ads * repeat)]
    if crlf:
        lines[0] += "\r"
    path.write_text("\n".join(lines) + "\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_htcondor_fast, "SMALL_INPUT_LINES", 0)
        fast = read_htcondor(path, errors="skip")
        patch.setattr(_htcondor_fast, "HAVE_NUMBA", False)
        reference = read_htcondor(path, errors="skip")
    assert fast.records.equals(reference.records)
    assert fast.jobs.equals(reference.jobs)
    assert fast.quarantine.equals(reference.quarantine)


def test_a_completion_date_beyond_int64_is_kept_as_text(tmp_path: Path) -> None:
    # it used to stop the read (the stamp was cast to int64): now the stamp stays text
    base = {"ClusterId": 1, "JobStatus": 4, "QDate": 1_700_000_000, "ExitCode": 0}
    stamps = [2**64, 2**63 - 1, 2**63, 1_700_000_200]
    lines = [json.dumps({**base, "ProcId": k, "CompletionDate": v}) for k, v in enumerate(stamps)]
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(lines) + "\n")
    for numba in (True, False):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_htcondor_fast, "SMALL_INPUT_LINES", 0)
            patch.setattr(_htcondor_fast, "HAVE_NUMBA", numba)
            result = read_htcondor(path, errors="raise")
        records = result.records
        assert records.column("stamp").to_pylist() == [str(v) for v in stamps]
        epochs = records.column("stamp_utc").cast(pa.int64()).to_pylist()
        assert epochs == [None, 2**63 - 1, None, 1_700_000_200]
        assert result.jobs.num_rows == 4
