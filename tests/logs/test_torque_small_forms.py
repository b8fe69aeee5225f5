"""The small assembly's string-method readings of ids, durations and sizes match the patterns.

:mod:`gridtrace.logs._torque_small_jobs` reads the usual forms without regular expressions (so
a usual log compiles none); whatever it reads so must be what the patterns of
:mod:`gridtrace.logs._torque_attempts` read, and what it leaves must go to the general readers.
"""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from gridtrace.logs import _pbs_values as pv
from gridtrace.logs import _torque_small_jobs as sj
from gridtrace.logs._torque_attempts import (
    _HMS_PATTERN,
    _JOB_ID_PATTERN,
    _MEMORY_FACTORS,
    _MEMORY_PATTERN,
    _PARENT_PATTERN,
    _SECONDS_PATTERN,
    NA,
)

# digits (ASCII and not), the separators and letters of the forms, and line ends
CHARS = st.sampled_from(list("0123456789:.-[]kKmMgGtTpPbBwWx \n\r٣²"))
TEXTS = st.text(CHARS, max_size=24)
DIGITS = st.text(st.sampled_from(list("0123456789")), min_size=1, max_size=20)


def _duration_by_patterns(text: str) -> tuple[int, str | None]:
    if re.fullmatch(_SECONDS_PATTERN, text, re.ASCII):
        return int(text), None
    if re.fullmatch(_HMS_PATTERN, text, re.ASCII):
        hours, minutes, seconds = text.split(":")
        return int(hours) * 3600 + int(minutes) * 60 + int(seconds), None
    return sj._fitted(pv.parse_duration(text))


def _memory_by_patterns(text: str) -> tuple[int, str | None]:
    found = re.fullmatch(_MEMORY_PATTERN, text, re.ASCII)
    if found is not None:
        size = int(found.group("number")) * _MEMORY_FACTORS[found.group("unit").lower()]
        if size < sj._BIG:
            return size, None
    return sj._fitted(pv.parse_memory(text, "b"))


def _job_id_by_patterns(text: str) -> tuple[int, int, bool, bool]:
    found = re.fullmatch(_JOB_ID_PATTERN, text, re.ASCII)
    parent = re.match(_PARENT_PATTERN, text, re.ASCII) is not None
    if found is None:
        return (NA, NA, False, parent)
    index_text = found.group("bracket") or found.group("dash") or ""
    return (int(found.group("seq")), int(index_text) if index_text else NA, not parent, parent)


@given(text=TEXTS | st.builds(":".join, st.lists(DIGITS, min_size=1, max_size=4)))
@example("01:02:03")
@example("123456789:59:59")
@example("1234567890:00:00")
@example("1:123:1")
@example("1234567890123")
@example("٣")
def test_durations_are_read_as_the_patterns_read_them(text: str) -> None:
    assert sj._duration(text) == _duration_by_patterns(text)


@given(text=TEXTS | st.builds(str.__add__, DIGITS, st.sampled_from(["b", "kb", "Mw", "kkb", "x"])))
@example("2gb")
@example("1048576kb")
@example("999999999999pb")
@example("b")
@example("kb")
def test_sizes_are_read_as_the_patterns_read_them(text: str) -> None:
    assert sj._memory(text, "b") == _memory_by_patterns(text)


@given(text=TEXTS | st.builds(str.__add__, DIGITS, st.sampled_from(["", ".srv", "[]", "[3].s"])))
@example("7.srv")
@example("7.srv\n")
@example("1234567890123456789.srv")
@example("12[].srv")
@example("12-3.srv")
@example(".srv")
def test_job_ids_are_read_as_the_patterns_read_them(text: str) -> None:
    try:
        assert sj._job_id(text) == _job_id_by_patterns(text)
    finally:
        sj._IDS.clear()  # the assembly keeps ids for one call only
