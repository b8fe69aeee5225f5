"""The summary of a parse (``parse-summary.json``), from plain lists.

Shared by :meth:`gridtrace.logs.ParseResult.summary` and the small parse path
(:mod:`gridtrace.logs._small_parse`), which holds its tables as Python lists.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain

TYPE_CHECKING = False  # typing's constant without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["parse_summary"]


def parse_summary(
    *,
    files: int,
    lines_read: int,
    record_types: Iterable[str | None],
    record_flags: Iterable[Sequence[str] | None],
    job_states: Iterable[str | None],
    job_flags: Iterable[Sequence[str] | None],
    reasons: Sequence[str | None],
    tz_offset_s: int | None,
    input_findings: Mapping[str, Any],
    info: Mapping[str, Any],
) -> dict[str, Any]:
    """Return the summary :meth:`~gridtrace.logs.ParseResult.summary` gives, from plain lists.

    Counts by record type, job state, flag and quarantine reason, in plain JSON types, in the
    order ``parse-summary.json`` holds them.
    """
    types = Counter(record_types)
    states = Counter(job_states)
    lines_parsed = sum(types.values())
    lines_quarantined = len(reasons)
    return {
        "files": files,
        "lines_read": lines_read,
        "lines_parsed": lines_parsed,
        "lines_quarantined": lines_quarantined,
        "reconciled": lines_read == lines_parsed + lines_quarantined,
        "records_by_type": dict(sorted(types.items())),
        "record_flags": _sorted_counts(record_flags),
        "jobs": sum(states.values()),
        "jobs_by_state": dict(sorted(states.items())),
        "job_flags": _sorted_counts(job_flags),
        "quarantine_reasons": dict(sorted(Counter(reasons).items())),
        "tz_offset_s": tz_offset_s,
        "input": dict(input_findings),
        **info,
    }


def _sorted_counts(lists: Iterable[Sequence[str] | None]) -> dict[str, int]:
    # one Counter over all the flags (counted in C), not an update per row
    counted = Counter(chain.from_iterable(flags for flags in lists if flags))
    return dict(sorted(counted.items()))
