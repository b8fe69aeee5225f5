"""The summary of a parse (``parse-summary.json``), from plain lists.

Shared by :meth:`gridtrace.logs.ParseResult.summary` and the small parse path
(:mod:`gridtrace.logs._small_parse`), which holds its tables as Python lists.
"""

from __future__ import annotations

from _json import encode_basestring_ascii  # json.encoder's own (C), without json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain

TYPE_CHECKING = False  # typing's constant without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["parse_summary", "summary_json"]


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


class _NotPlain(Exception):
    """A value :func:`summary_json` leaves to :mod:`json` (raised and caught here only)."""


def summary_json(summary: Mapping[str, Any]) -> str:
    """Return ``json.dumps(summary, indent=2)`` and a newline, for plain data, without json.

    Importing :mod:`json` (its decoder and scanner compile their patterns) costs some 5 M
    instructions, 2% of ``gridtrace parse`` of one day's file, which only writes its summary.
    dicts with ``str`` keys, lists, tuples, ``str``, ``int``, ``float``, ``bool`` and None are
    written here as :mod:`json` writes them (ASCII only, ``NaN`` and ``Infinity`` allowed);
    anything else (another type, a subclass, a key that is not a ``str``) is left to
    :func:`json.dumps`.

    Parameters
    ----------
    summary : mapping
        The summary.

    Returns
    -------
    str
        The JSON text, with a final newline.
    """
    try:
        parts: list[str] = []
        _write(summary, "\n", parts)
    except _NotPlain:
        import json

        return json.dumps(summary, indent=2) + "\n"
    parts.append("\n")
    return "".join(parts)


def _write(value: object, newline: str, parts: list[str]) -> None:
    """Append the JSON text of ``value`` at the indent ``newline`` ends with to ``parts``."""
    kind = type(value)  # exact types: json writes some subclasses its own way
    if isinstance(value, str) and kind is str:
        parts.append(encode_basestring_ascii(value))
    elif value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, int) and kind is int:
        parts.append(int.__repr__(value))
    elif isinstance(value, float) and kind is float:
        parts.append(_float_text(value))
    elif isinstance(value, dict) and kind is dict:
        if not value:
            parts.append("{}")
            return
        inner = newline + "  "
        opening = "{"
        for key, item in value.items():
            if type(key) is not str:  # json's conversions of other keys: left to it
                raise _NotPlain
            parts.append(opening + inner + encode_basestring_ascii(key) + ": ")
            _write(item, inner, parts)
            opening = ","
        parts.append(newline + "}")
    elif isinstance(value, list | tuple) and kind in (list, tuple):
        if not value:
            parts.append("[]")
            return
        inner = newline + "  "
        opening = "["
        for item in value:
            parts.append(opening + inner)
            _write(item, inner, parts)
            opening = ","
        parts.append(newline + "]")
    else:
        raise _NotPlain


def _float_text(value: float) -> str:
    """Write a float as :mod:`json` does (``allow_nan``: NaN, Infinity, -Infinity)."""
    if value != value:
        return "NaN"
    if value == float("inf"):
        return "Infinity"
    if value == -float("inf"):
        return "-Infinity"
    return float.__repr__(value)
