"""HTCondor ads whose JSON escapes a lone UTF-16 surrogate: quarantined, never a crash.

``json`` decodes ``"\\ud83d"`` (half of a surrogate pair, without its other half) to a lone
surrogate, which no UTF-8 text can hold: Arrow refused it and ``read_htcondor`` stopped on the
whole file. Such an ad is quarantined with a reason saying what to fix; a whole pair, and text
that only looks like an escape (an escaped backslash before ``ud83d``), read as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gridtrace.logs import _htcondor_fast, read_htcondor
from gridtrace.logs._htcondor import LONE_SURROGATE_REASON

from ._htcondor_compare import same_tokens

GOOD = {"ClusterId": 7, "ProcId": 0, "Owner": "alice", "CompletionDate": 1_700_000_000}


def _ads_text(owners: list[str]) -> list[str]:
    """One ``-jsonl`` line per owner, written as raw JSON text (the escapes as given)."""
    return [
        f'{{"ClusterId": {100 + k}, "ProcId": 0, "Owner": "{owner}", '
        f'"CompletionDate": {1_700_000_000 + k}}}'
        for k, owner in enumerate(owners)
    ]


OWNERS = [
    "plain",
    "a\\ud83db",  # a lone high surrogate
    "\\ude00",  # a lone low surrogate
    "\\ud83d\\ude00",  # a whole pair: one character
    "x\\\\ud800",  # an escaped backslash, then text: no escape at all
    "\\uD83Dz",  # upper-case hex, lone
]
LONE = {2, 3, 6}  # their lines (1-based)


@pytest.fixture(params=["kernel", "no kernel"])
def kernel(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "no kernel":
        monkeypatch.setattr(_htcondor_fast, "HAVE_NUMBA", False)
    return str(request.param)


def test_jsonl_lone_surrogates_are_quarantined_with_a_reason(tmp_path: Path, kernel: str) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(_ads_text(OWNERS)) + "\n", encoding="ascii")
    with pytest.warns(UserWarning, match="surrogate"):
        result = read_htcondor(path)
    quarantine = result.quarantine.to_pydict()
    assert set(quarantine["src_line"]) == LONE
    assert set(quarantine["reason"]) == {LONE_SURROGATE_REASON}
    assert result.lines_read == len(OWNERS) == result.records.num_rows + result.quarantine.num_rows
    owners = sorted(result.jobs.column("user").to_pylist())
    assert owners == sorted(["plain", "\U0001f600", "x\\ud800"])


def test_pretty_json_lone_surrogate_quarantines_its_ad_lines(tmp_path: Path, kernel: str) -> None:
    bad = json.dumps({**GOOD, "ProcId": 1, "Owner": "PLACE"}, indent=1)
    bad = bad.replace("PLACE", "b\\udbff")
    text = "[\n" + json.dumps(GOOD, indent=1) + ",\n" + bad + "\n]\n"
    path = tmp_path / "history.json"
    path.write_text(text, encoding="ascii")
    with pytest.warns(UserWarning, match="surrogate"):
        result = read_htcondor(path)
    lines = text.count("\n")
    assert result.lines_read == lines == result.records.num_rows + result.quarantine.num_rows
    assert result.jobs.column("job_id_raw").to_pylist() == ["7.0"]
    # as for any broken object: its lines, and the "]" after it (up to the next ad), quarantined
    first_bad = text.count("\n", 0, text.index(bad)) + 1
    assert result.quarantine.column("src_line").to_pylist() == list(range(first_bad, lines + 1))
    reasons = result.quarantine.column("reason").to_pylist()
    assert reasons[0] == LONE_SURROGATE_REASON
    assert set(reasons[1:]) == {f"inside the broken object of line {first_bad}"}


def test_a_lone_surrogate_in_a_key_is_quarantined_too(tmp_path: Path, kernel: str) -> None:
    path = tmp_path / "history.jsonl"
    good = json.dumps(GOOD)
    path.write_text(good + "\n" + good[:-1] + ', "K\\udc00": 1}\n', encoding="ascii")
    with pytest.warns(UserWarning, match="surrogate"):
        result = read_htcondor(path)
    assert result.quarantine.column("reason").to_pylist() == [LONE_SURROGATE_REASON]
    assert result.records.num_rows == 1


def test_the_kernel_and_the_line_reader_agree_on_a_lone_surrogate() -> None:
    # hypothesis found it (test_htcondor_words_fast): the line reader crashed in Arrow
    line = '{"ClusterId": 1, "ProcId": 0, "K": "\\u0001\\ud83d\\\\ude00"}\n'
    assert same_tokens((json.dumps(GOOD) + "\n" + line).encode()) is None  # both leave it
