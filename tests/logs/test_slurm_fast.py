"""The Slurm assembler's shortcuts read TRES and durations as the plain patterns do."""

from __future__ import annotations

import math
import re

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from gridtrace.logs._slurm import _DURATION, _durations, _tres


def _tres_one(text: str | None, key: str) -> float:
    """The count of ``key`` in one TRES text, by Python's ``re`` (ASCII digits)."""
    text = text or ""
    for pattern in (rf"(?:^|,){re.escape(key)}=(\d+)", rf"(?:^|,){re.escape(key)}:[^=,]*=(\d+)"):
        found = re.search(pattern, text, re.ASCII)
        if found:
            return float(found[1])
    return math.nan


def _duration_one(text: str | None) -> float:
    found = re.match(_DURATION, text or "", re.ASCII)
    if not found:
        return math.nan
    d, h, m, s, f = (found[name] or "" for name in ("d", "h", "m", "s", "f"))
    return sum(float(v or "0") * k for v, k in ((d, 86400), (h, 3600), (m, 60), (s, 1))) + float(
        "0." + (f or "0")
    )


def _same(a: list[float], b: list[float]) -> bool:
    return all((math.isnan(x) and math.isnan(y)) or x == y for x, y in zip(a, b, strict=True))


_TRES_PART = st.one_of(
    st.sampled_from(["cpu=8", "node=2", "gres/gpu=2", "gres/gpu:v100=4", "mem=4G", "billing=8"]),
    st.text(alphabet="cpunode=gres/:v10,٣", max_size=10),
)


@given(st.lists(st.one_of(st.none(), st.lists(_TRES_PART, max_size=4).map(",".join)), max_size=20))
def test_tres_counts_as_the_patterns_read_them(texts: list[str | None]) -> None:
    array = pa.array(texts, pa.string())
    for key in ("cpu", "node", "gres/gpu"):
        assert _same(_tres(array, key).tolist(), [_tres_one(t, key) for t in texts])


_DURATION_TEXT = st.one_of(
    st.none(),
    st.sampled_from(["UNLIMITED", "Partition_Limit", "", "1-02:03:04", "00:05:00.250", "59:59"]),
    st.from_regex(r"(\d{1,3}-)?(\d{1,2}:)?\d{1,2}:\d{1,2}(\.\d{1,3})?", fullmatch=True),
    st.text(alphabet="0123456789-:.٣ ", max_size=12),
)


@given(st.lists(_DURATION_TEXT, max_size=20))
def test_durations_as_the_pattern_reads_them(texts: list[str | None]) -> None:
    array = pa.array(texts, pa.string())
    assert _same(_durations(array).tolist(), [_duration_one(t) for t in texts])
