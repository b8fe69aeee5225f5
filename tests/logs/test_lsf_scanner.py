"""The LSF scanner's byte classes and number tests decide as the reference does.

The scanner tells a number, a count, a JSON escape and a byte above 127 from the classes of a
token's bytes ORed, walking the token only when they cannot tell. These tests check the class
table byte by byte against the rules it stands for, and compare the scanner's tables with the
reference's on records whose checked fields, counts and host rusage entries are replaced by
number-like tokens (signs, dots, exponents, leading zeros, other scripts' digits, quoted).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _lsf_fast
from gridtrace.logs._lsf import split_lsf_record
from tests.logs.test_lsf_fast import LSF10, LSF91, RECORDS, _same, _serialise

pytestmark = pytest.mark.skipif(not _lsf_fast.HAVE_NUMBA, reason="numba is not installed")


@pytest.mark.parametrize("utf8", [True, False])
def test_byte_classes_follow_their_rules(utf8: bool) -> None:
    table = _lsf_fast._classes(utf8=utf8)
    for byte in range(256):
        bits = int(table[byte])
        char = bytes([byte])
        assert bool(bits & _lsf_fast._C_NONDIGIT) == (not char.isdigit())
        assert bool(bits & _lsf_fast._C_NONNUM) == (re.fullmatch(rb"[0-9+\-.eE]", char) is None)
        assert bool(bits & _lsf_fast._C_HIGH) == (byte > 127)
        # as it is in a JSON string: printable ASCII but quote and backslash
        assert bool(bits & _lsf_fast._C_UNSAFE) == (re.fullmatch(rb"[ !#-\[\]-~]", char) is None)
        assert bool(bits & _lsf_fast._C_QUOTE) == (char == b'"')
        assert bool(bits & _lsf_fast._C_STOP) == (char in b" \n")
        bad_quoted = byte < 32 or byte == 127 or (byte > 127 and not utf8)
        assert bool(bits & _lsf_fast._C_BAD_QUOTED) == bad_quoted
        bad_bare = char not in b" \n" and (byte < 33 or byte > 126 or char == b'"')
        assert bool(bits & _lsf_fast._C_BAD_BARE) == bad_bare


_NUMBERISH = st.one_of(
    st.sampled_from(
        ["0", "-1", "-0", "+5", "5.", ".5", "1e5", "1E+5", "1e", "e5", "-", "+", ".", "٣", "00012"]
    ),
    st.from_regex(r"[-+]?[0-9]{0,12}(\.[0-9]{0,3})?([eE][-+]?[0-9]{0,2})?", fullmatch=True),
    st.from_regex(r"[0-9a-z.*-]{1,8}", fullmatch=True),
)


@st.composite
def _numberish_records(draw: st.DrawFn) -> str:
    record = draw(st.sampled_from(RECORDS))
    tokens, quoted = split_lsf_record(record)
    # LSF 9.1's host rusage (2 entries of 6 tokens) sits after the counts at 67..; elsewhere the
    # checked head (2..10), the host lists (22..), hostFactor and the tail's counts
    hot = [*range(2, 11), *range(22, 30), *range(len(tokens) - 40, len(tokens))]
    if record is LSF91:
        start = tokens.index("n1", 60)
        hot += list(range(start - 1, start + 16))
    for _ in range(draw(st.integers(1, 4))):
        k = draw(st.sampled_from([k for k in hot if 0 <= k < len(tokens)]))
        tokens[k] = draw(_NUMBERISH)
        quoted[k] = draw(st.booleans()) and draw(st.booleans())  # mostly bare, as logged
    return _serialise(tokens, quoted)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_numberish_records(), min_size=1, max_size=6))
def test_number_like_fields_match_the_reference(lines: list[str]) -> None:
    _same(("\n".join(lines) + "\n").encode())


def test_fixed_records_are_all_read_by_the_scanner() -> None:
    from gridtrace.logs._lsf import _LAYOUT

    data = "".join(line + "\n" for line in (LSF10, LSF91) * 3).encode()
    scan: Any = _lsf_fast.scan_lsf(data, _LAYOUT, utf8=True)
    assert scan is not None
    assert scan.fast.all()
    assert len(scan.values) == int(scan.counts.sum())
    _same(data)
