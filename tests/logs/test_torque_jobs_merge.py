"""The fast and slow attempts put in group order: the same rows as a stable sort of both.

:func:`gridtrace.logs._torque_jobs._attempts` cuts most job groups into attempts vectorised and
the others record by record, then puts all attempts in group order. Both parts come in group
order, so a merge places them; it must give what the stable sort of the two parts did, also with
groups of several attempts, equal groups in both parts and parts out of order.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gridtrace.logs._torque_jobs import _merge_by_group

_GROUPS = st.lists(st.integers(0, 30), max_size=40)


def _part(groups: list[int], tag: int) -> dict[str, np.ndarray]:
    group = np.asarray(groups, dtype=np.int64)
    # a second field that tells every row apart: which part, and where in it
    return {"group": group, "row": tag * 1000 + np.arange(len(group), dtype=np.int64)}


@settings(max_examples=300, deadline=None)
@given(_GROUPS, _GROUPS, st.booleans())
def test_merge_is_the_stable_sort_of_both_parts(a: list[int], b: list[int], ordered: bool) -> None:
    if ordered:
        a, b = sorted(a), sorted(b)
    first, second = _part(a, 1), _part(b, 2)
    merged = _merge_by_group(first, second)
    both = {name: np.concatenate([first[name], second[name]]) for name in first}
    by_group = np.argsort(both["group"], kind="stable")
    for name in first:
        assert merged[name].dtype == np.int64
        assert merged[name].tolist() == both[name][by_group].tolist()
