"""``parse-summary.json`` written without json: the same bytes as ``json.dumps(indent=2)``."""

from __future__ import annotations

import enum
import json
import math

from hypothesis import given
from hypothesis import strategies as st

from gridtrace.logs._summary import summary_json

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(st.dictionaries(st.text(), VALUES, max_size=6))
def test_any_plain_summary_is_written_as_json_writes_it(summary: dict[str, object]) -> None:
    assert summary_json(summary) == json.dumps(summary, indent=2) + "\n"


class Level(enum.IntEnum):
    LOW = 1


def test_what_json_writes_its_own_way_is_left_to_it() -> None:
    odd: dict[str, object] = {
        "int_key": {1: "a", 2.5: "b", None: "c", False: "d"},
        "int_enum": Level.LOW,
        "floats": [math.nan, math.inf, -math.inf, -0.0, 1e300],
        "text": 'é\u2028\x00"\\',
        "empty": [{}, [], ()],
    }
    assert summary_json(odd) == json.dumps(odd, indent=2) + "\n"
