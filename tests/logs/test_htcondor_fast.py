"""The compiled ``-jsonl`` scanner gives exactly the rows of the reference tokeniser.

Every check tokenises the same chunk twice, with clean ad lines read by the kernel of
:mod:`gridtrace.logs._htcondor_fast` and by the reference alone, and compares the tables whole.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _htcondor_fast, read_htcondor
from gridtrace.logs._htcondor import _tokenize_htcondor_chunk

from ._htcondor_compare import chunk_of, same_tokens

pytestmark = pytest.mark.skipif(not _htcondor_fast.HAVE_NUMBA, reason="numba is not installed")

AD: dict[str, Any] = {
    "ClusterId": 1234,
    "ProcId": 0,
    "GlobalJobId": "ce01.example.org#1234.0#1700000000",
    "Owner": "alice",
    "QDate": 1700000000,
    "CompletionDate": 1700003700,
    "RemoteWallClockTime": 3600.0,
    "RemoteUserCpu": 3000.50,
    "RequestCpus": 8,
    "JobStatus": 4,
    "ExitBySignal": False,
    "WantRemoteIO": True,
    "Requirements": '/Expr((TARGET.Arch == "X86_64"))/',
    "LastRemoteHost": None,
}


def test_clean_ads_are_read_by_the_kernel() -> None:
    lines = [json.dumps({**AD, "ProcId": k}) for k in range(5)]
    data = ("\n".join(lines) + "\n").encode()
    records = same_tokens(data)
    assert records.num_rows == 5
    scan = _htcondor_fast.scan_jsonl(data)
    assert scan is not None
    assert scan.fast.all()
    attrs = dict(records.column("attrs")[0].as_py())
    assert attrs["RemoteWallClockTime"] == "3600.0"
    assert attrs["RemoteUserCpu"] == "3000.5"
    assert attrs["ExitBySignal"] == "false"
    assert attrs["LastRemoteHost"] is None
    assert records.column("job_id_raw").to_pylist()[:2] == ["1234.0", "1234.1"]


def test_lines_the_kernel_declines_match_the_reference() -> None:
    good = json.dumps(AD)
    lines = [
        good,
        good + "\r",
        "  " + good + "\t",
        good.replace('"alice"', '"al\\u00e9ice"'),
        good.replace('"alice"', '"a\\"l\\\\i\\/c\\ne"'),
        good.replace('"alice"', '"gaëndalf"'),
        good.replace('"Owner"', '"ProcId"'),  # a key twice
        good.replace('"QDate": 1700000000', '"QDate": -0'),
        good.replace('"QDate": 1700000000', '"QDate": 1e5'),
        good.replace('"QDate": 1700000000', '"QDate": [1, 2]'),
        good.replace('"QDate": 1700000000', '"QDate": {"a": null}'),
        good.replace('"CompletionDate": 1700003700', '"CompletionDate": 0'),
        good.replace('"CompletionDate": 1700003700', '"CompletionDate": 1.7e9'),
        good.replace('"CompletionDate": 1700003700, ', ""),
        good.replace('"ClusterId": 1234', '"ClusterId": null'),
        good.replace('"ClusterId": 1234', '"ClusterId": true'),
        "[",
        ",",
        "",
        "]",
    ]
    same_tokens(("\n".join(lines) + "\n").encode())
    same_tokens(("\n".join(lines)).encode())
    assert same_tokens((good + "\n" + good.replace("1234", "01234") + "\n").encode()) is None
    assert (
        same_tokens((good + "\n" + good.replace('"ClusterId"', '"Cluster"') + "\n").encode())
        is None
    )
    same_tokens((good + "\n" + good.replace("alice", "al\x00ice") + "\n").encode())
    same_tokens((good + "\n" + good.replace("alice", "al\xe9ice") + "\n").encode("latin-1"))


_KEY = st.one_of(
    st.sampled_from(["ClusterId", "ProcId", "CompletionDate", "EnteredCurrentStatus", "Owner"]),
    st.text(alphabet='ab"\\/é\n\x01', max_size=4),
)
_VALUE = st.one_of(
    st.integers(-3, 3),
    st.integers(-(2**62), 2**62),  # beyond int64 the reference fails on a stamp (not the kernel)
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1.5, 1e20, -0.0, 3600.0, 0.1, 1e-7]),
    st.booleans(),
    st.none(),
    st.text(alphabet='ab "\\/é\t\n\x1f\u2028', max_size=5),
    st.lists(st.integers(), max_size=2),
)


@st.composite
def _ad_line(draw: st.DrawFn) -> str:
    members = [("ClusterId", draw(_VALUE)), ("ProcId", draw(_VALUE))]
    members += draw(st.lists(st.tuples(_KEY, _VALUE), max_size=6))
    order = draw(st.permutations(range(len(members))))
    ascii_only = draw(st.booleans())
    colon, comma = draw(st.sampled_from([(": ", ", "), (":", ","), (" : ", " ,\t")]))
    body = comma.join(
        json.dumps(members[k][0], ensure_ascii=ascii_only)
        + colon
        + json.dumps(members[k][1], ensure_ascii=ascii_only)
        for k in order
    )
    line = "{" + body + "}"
    if draw(st.booleans()):
        return line
    at = draw(st.integers(0, len(line)))
    extra = draw(st.sampled_from(["\r", "\x00", '"', " ", "é", "\t", ",", "}", "-0", "\\", "\n"]))
    return line[:at] + extra + line[at:]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ad_line(), min_size=1, max_size=6), st.booleans(), st.integers(1, 50))
def test_generated_ads_match_the_reference(lines: list[str], newline: bool, first: int) -> None:
    same_tokens(("\n".join(lines) + ("\n" if newline else "")).encode(), first)


def test_read_htcondor_same_jobs_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "history.jsonl"
    lines = [json.dumps({**AD, "ProcId": k, "QDate": 1_700_000_000 + k}) for k in range(50)]
    lines[3] = lines[3].replace('"alice"', '"al\\u00e9ice"')
    lines[7] = lines[2]  # a repeated ad
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(_htcondor_fast, "SMALL_INPUT_LINES", 0)
    fast = read_htcondor(path, errors="skip")
    monkeypatch.setattr(_htcondor_fast, "HAVE_NUMBA", False)
    reference = read_htcondor(path, errors="skip")
    assert fast.records.equals(reference.records)
    assert fast.jobs.equals(reference.jobs)
    assert fast.quarantine.equals(reference.quarantine)
    assert fast.lines_read == 50


def test_the_streaming_tokeniser_takes_every_line() -> None:
    from gridtrace.logs._htcondor import _HTCondorState

    data = "".join(json.dumps({**AD, "ProcId": k}) + "\n" for k in range(3)).encode()
    state = _HTCondorState()
    records, bad = _tokenize_htcondor_chunk(chunk_of(data), state, site="s", src_file="f")
    assert (records.num_rows, bad.num_rows, state.taken) == (3, 0, 3)
