"""The ``-jsonl`` kernel's eight-bytes-at-a-time paths give the reference's rows.

The kernel reads a string's plain bytes a word at a time and compares a line's keys with the
previous line's a word at a time; these checks put the bytes that stop a word (quote,
backslash, control byte, non-ASCII, a key differing in one byte) at every place of a word, on
lines long enough for the word paths, and compare the rows with the reference tokeniser's.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _htcondor_fast

from ._htcondor_compare import same_tokens

pytestmark = pytest.mark.skipif(not _htcondor_fast.HAVE_NUMBA, reason="numba is not installed")

_KEYS = ["ClusterId", "ProcId", "EnteredCurrentStatus", "Owner", "In", "GlobalJobId", "Abcdefgh"]
_PLAIN = "abcdefghijklmnopqrstuvwxyz0123456789 #@./"


def _line(values: list[str], keys: list[str] = _KEYS) -> str:
    return json.dumps({"ClusterId": 7, "ProcId": 1, **dict(zip(keys[2:], values, strict=True))})


def test_strings_of_every_length_are_read_by_the_kernel() -> None:
    # a plain run of 0..24 bytes before each kind of byte that stops a word, escaped by
    # json.dumps or written raw (UTF-8)
    lines = []
    for stop in ['"', "\\", "\n", "\x01", "\x1f", "é", "\u2028", "😀", "~"]:
        for length in range(25):
            text = _PLAIN[:length] + stop + _PLAIN[: 24 - length]
            lines.append(_line([text, "x", "y", "z", "w"]))
            ad = {"ClusterId": 7, "ProcId": 1, "Owner": text}
            lines.append(json.dumps(ad, ensure_ascii=False))
    data = ("\n".join(lines) + "\n").encode()
    records = same_tokens(data)
    scan = _htcondor_fast.scan_jsonl(data)
    assert scan is not None
    # the kernel reads every line but those with a \u escape (json.dumps writes one for a
    # control byte and, by default, for what is not ASCII)
    assert scan.fast.tolist() == ["\\u" not in line for line in lines]
    assert scan.fast.sum() > len(lines) // 2
    first = dict(records.column("attrs")[0].as_py())
    assert first["EnteredCurrentStatus"] == '"' + _PLAIN[:24]


def test_a_key_differing_in_any_byte_is_found() -> None:
    base = [_PLAIN[:9], "alice", "/in", "ce#1.0#17", "v"]
    lines = [_line(base)]
    for key in range(2, len(_KEYS)):
        for at in range(len(_KEYS[key])):
            keys = list(_KEYS)
            keys[key] = keys[key][:at] + "Z" + keys[key][at + 1 :]
            lines += [_line(base, keys), _line(base)]
    lines.append(_line(base, [*_KEYS[:2], "Owner", "EnteredCurrentStatus", *_KEYS[4:]]))
    data = ("\n".join(lines) + "\n").encode()
    records = same_tokens(data)
    scan = _htcondor_fast.scan_jsonl(data)
    assert scan is not None
    assert scan.fast.all()
    keys_read = [[k for k, _ in row] for row in records.column("attrs").to_pylist()]
    assert keys_read[1][2] == "ZnteredCurrentStatus"
    assert keys_read[-1][2:4] == ["Owner", "EnteredCurrentStatus"]


_TEXT = st.text(alphabet=_PLAIN + '"\\\n\t\x01\x7fé\u2028😀', max_size=30)
_NAME = st.text(alphabet='abcXYZ_é"\\', min_size=1, max_size=20)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_NAME, min_size=5, max_size=5, unique=True),
    st.lists(st.tuples(st.lists(_TEXT, min_size=5, max_size=5), st.integers(0, 4)), max_size=6),
    st.booleans(),
    st.integers(0, 200),
    st.sampled_from(["", '"', "\\", "\x00", "\xff", "\r", "a"]),
)
def test_long_keys_and_strings_match_the_reference(
    names: list[str],
    rows: list[tuple[list[str], int]],
    ascii_only: bool,
    at: int,
    extra: str,
) -> None:
    # lines of one layout but for a key changed on some, and one stray byte in the text
    keys = ["ClusterId", "ProcId", *names]
    lines = []
    for values, changed in rows:
        these = list(keys)
        these[2 + changed] = these[2 + changed][::-1]
        for layout in (keys, these):
            ad = {"ClusterId": 1, "ProcId": 2, **dict(zip(layout[2:], values, strict=True))}
            lines.append(json.dumps(ad, ensure_ascii=ascii_only))
    text = "\n".join(lines) + "\n"
    at = min(at, len(text))
    data = text[:at].encode() + extra.encode("latin-1") + text[at:].encode()
    same_tokens(data)


# values that repeat from line to line, or nearly: the kernel copies a value whose text and the
# byte after it are the previous clean line's, and must decode the others
_NEAR = st.sampled_from(
    [
        "1234",
        "12345",
        "-0",
        "0",
        "1.50",
        "1.5",
        "1e5",
        "3600.0",
        "true",
        "false",
        "null",
        '"ab"',
        '"ab\\""',
        '"ab\\\\"',
        '"/Expr(x)/"',
        '"é"',
        '"' + _PLAIN + '"',
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(_NEAR, min_size=3, max_size=3), min_size=1, max_size=8),
    st.lists(st.sampled_from([", ", ",", " , "]), min_size=3, max_size=3),
    st.sampled_from([": ", ":", " :  "]),
    st.lists(st.integers(0, 7), max_size=2),
)
def test_repeated_values_match_the_reference(
    rows: list[list[str]], commas: list[str], colon: str, broken: list[int]
) -> None:
    lines = []
    for k, values in enumerate(rows):
        keys = ['"ClusterId"', '"ProcId"', '"QDate"', '"Args"', '"CompletionDate"']
        texts = ["7", str(k), *values]
        body = "".join(
            key + colon + text + (commas[j % 3] if j < 4 else "")
            for j, (key, text) in enumerate(zip(keys, texts, strict=True))
        )
        line = "{" + body + ("}" if k % 2 else " }")
        if k in broken:
            line = line[:-1]  # not closed: declined, and not the line the next is compared with
        lines.append(line)
    data = ("\n".join(lines) + "\n").encode()
    same_tokens(data)
