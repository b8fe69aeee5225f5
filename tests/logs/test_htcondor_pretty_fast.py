"""Pretty ``condor_history -json`` read by the kernel gives exactly the object scanner's rows.

Every check tokenises the same chunk twice, with the ads joined onto one line and read by the
``-jsonl`` kernel of :mod:`gridtrace.logs._htcondor_fast`, and by the object scanner alone
(numba switched off), and compares the records, the quarantine and the lines taken.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _htcondor_fast, read_htcondor
from gridtrace.logs._htcondor import _HTCondorState, _pretty_rows, _tokenize_htcondor_chunk
from gridtrace.logs._stream import Chunk

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
    "ExitBySignal": False,
    "Requirements": '/Expr((TARGET.Arch == "X86_64"))/',
    "LastRemoteHost": None,
}


def pretty(ads: list[dict[str, Any]]) -> str:
    """Write ``ads`` as ``condor_history -json`` does: one attribute a line, ``,`` between ads."""
    blocks = [
        "{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in ad.items()) + "\n}"
        for ad in ads
    ]
    return "[\n" + "\n,\n".join(blocks) + "\n]\n"


@contextmanager
def _no_numba() -> Iterator[None]:
    saved = _htcondor_fast.HAVE_NUMBA
    _htcondor_fast.HAVE_NUMBA = False
    try:
        yield
    finally:
        _htcondor_fast.HAVE_NUMBA = saved


def _tokens(data: bytes, final: bool, first_line: int) -> tuple[Any, Any, int]:
    lines = data.count(b"\n") + (bool(data) and not data.endswith(b"\n"))
    state = _HTCondorState()
    chunk = Chunk(data, first_line, lines, 0, final)
    records, bad = _tokenize_htcondor_chunk(chunk, state, site="s", src_file="f")
    return records, bad, state.taken


def same_rows(data: bytes, *, final: bool = True, first_line: int = 1) -> tuple[Any, int]:
    """Tokenise ``data`` with and without the kernel; return the records and lines taken."""
    _htcondor_fast.compile_kernel()  # chunks of any size go to the kernel once it is loaded
    fast, fast_bad, fast_taken = _tokens(data, final, first_line)
    with _no_numba():
        reference, bad, taken = _tokens(data, final, first_line)
    assert fast.equals(reference), data[:400]
    assert fast_bad.equals(bad)
    assert fast_taken == taken
    return reference, taken


def test_pretty_ads_are_read_by_the_kernel() -> None:
    data = pretty([{**AD, "ProcId": k} for k in range(4)]).encode()
    joined = _htcondor_fast.join_pretty(data, final=True)
    assert joined is not None
    assert joined.first.tolist() == [1, 15, 29, 43]  # "[", then 13 lines and "," an ad
    assert joined.last.tolist() == [13, 27, 41, 55]
    assert _pretty_rows(Chunk(data, 1, data.count(b"\n"), 0, True), "s", "f") is not None
    records, taken = same_rows(data)
    assert taken == records.num_rows == data.count(b"\n")
    types = records.column("record_type").to_pylist()
    assert types[:3] == ["SEP", "AD", "CONT"]
    assert types.count("AD") == 4
    cont = records.filter(records.column("record_type").to_numpy(zero_copy_only=False) == "CONT")
    assert cont.column("attrs")[0].as_py() == [("record_line", "2")]
    assert cont.column("job_id_raw")[0].as_py() == "1234.0"
    ad = dict(records.column("attrs")[1].as_py())
    assert ad["RemoteUserCpu"] == "3000.5"
    assert ad["ExitBySignal"] == "false"
    assert ad["LastRemoteHost"] is None


def test_an_ad_open_at_the_chunk_end_is_left_to_the_next() -> None:
    data = pretty([{**AD, "ProcId": k} for k in range(3)]).encode()
    cut = data[: data.index(b'"Owner"', data.index(b'"ProcId": 2'))]
    records, taken = same_rows(cut, final=False, first_line=7)
    assert taken == cut[: cut.rindex(b"\n{")].count(b"\n") + 1
    assert records.column("record_type").to_pylist().count("AD") == 2
    # the same text as the file's end: a cut ad, which only the object scanner recovers
    records, _ = same_rows(cut, final=True)
    assert "TRUNCATED" in str(records.column("flags").to_pylist())


@pytest.mark.parametrize(
    "text",
    [
        '[{\n"ClusterId": 1,\n"ProcId": 2\n}]\n',  # brackets on the ad's lines
        '{\n"ClusterId": 1,\n"ProcId": 2\n},\n{\n"ClusterId": 1,\n"ProcId": 3\n}\n',
        '{\n"ClusterId": 1,\n"ProcId": 2\n}\n\n\n  \n{\n"ClusterId": 1,\n"ProcId": 3}\n',
        '{\n"ClusterId": 1\n,\n"ProcId": 2\n}\n',  # a comma on a line of its own inside
        '{\n"ClusterId": 1,\n"ProcId": "a\nb"\n}\n',  # a line end inside a string
        '{\n"ClusterId": 1,\n"ProcId": "a\tb"\n}\n',  # a tab inside a string
        '{\n"ClusterId": 1,\n"L": [1,\n2],\n"ProcId": 2\n}\n',  # a list over two lines
        '{\n"ClusterId": 1,\n"N": {"a": 1\n},\n"ProcId": 2\n}\n',  # a nested ad ending a line
        '{\n"ClusterId": 1,\r\n"ProcId": 2\n}\n',  # CR LF
        '{\n"ClusterId": 1,\n"ProcId": 2\n}\r\n',
        '{\n"ClusterId": 1,\n"ProcId": 2\n}\n\x00\n',  # a NUL fragment between ads
        '{\n"ClusterId": 1,\n"ProcId": 2,\n}\n',  # a trailing comma
        '{\n"ClusterId": 1,\n"ProcId": 2\n}\ngarbage\n{\n"ClusterId": 1,\n"ProcId": 3\n}\n',
        '{\n"ClusterId": 1,\n"ProcId": 2\n} {"ClusterId": 1, "ProcId": 3}\n',
        '{\n"ClusterId": 1,\n"ClusterId": 2,\n"ProcId": 2\n}\n',  # a key twice
        '{\n"ProcId": 2\n}\n',  # no ClusterId
        '{\n"ClusterId": 1,\n"ProcId": 2\n}',  # no line end after the last brace
        '{\n"ClusterId": 1,\n"ProcId": 2\n}\n{\n"ClusterId": 1,\n"ProcId": 2\n}\n',  # a copy
    ],
)
def test_odd_pretty_text_matches_the_object_scanner(text: str) -> None:
    same_rows(text.encode())


_VALUE = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.text(alphabet='ab "\\/é}{,[]', max_size=5),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.dictionaries(st.sampled_from(["A", "B", "Owner", "QDate"]), _VALUE, max_size=3),
        min_size=1,
        max_size=4,
    ),
    st.data(),
)
def test_generated_pretty_ads_match_the_object_scanner(
    extras: list[dict[str, Any]], data: st.DataObject
) -> None:
    ads = [{"ClusterId": 7, "ProcId": k, **extra} for k, extra in enumerate(extras)]
    text = pretty(ads)
    if data.draw(st.booleans()):  # a damage somewhere
        at = data.draw(st.integers(0, len(text)))
        extra = data.draw(st.sampled_from(["\n", "}", ",", "{", '"', "\r", "\t", "]", " "]))
        text = text[:at] + extra + text[at:]
    final = data.draw(st.booleans())
    same_rows(text.encode(), final=final, first_line=data.draw(st.integers(1, 30)))


def test_read_htcondor_same_result_either_way(tmp_path: Path) -> None:
    ads = [{**AD, "ProcId": k % 40, "QDate": 1_700_000_000 + k % 40} for k in range(45)]
    ads[5] = {**ads[5], "Owner": "b\u00e9a"}
    path = tmp_path / "history.json"
    path.write_text(pretty(ads))
    fast = read_htcondor(path, errors="skip")
    with _no_numba():
        reference = read_htcondor(path, errors="skip")
    assert fast.records.equals(reference.records)
    assert fast.jobs.equals(reference.jobs)
    assert fast.quarantine.equals(reference.quarantine)
    assert fast.lines_read == reference.lines_read == path.read_text().count("\n")
    assert fast.info == reference.info
