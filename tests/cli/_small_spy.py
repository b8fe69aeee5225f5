"""Which path answered a ``gridtrace parse``: a spy on the small TORQUE path, for its tests."""

from __future__ import annotations

import pytest

from gridtrace.logs import _small_parse


def spy_on_small_parse(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Wrap the small path's entry; return the list each call appends to (True: it answered)."""
    answered: list[bool] = []
    original = _small_parse.parse_torque_small

    def spy(*args: object, **kwargs: object) -> _small_parse.SmallParse | None:
        found = original(*args, **kwargs)  # type: ignore[arg-type]
        answered.append(found is not None)
        return found

    monkeypatch.setattr(_small_parse, "parse_torque_small", spy)
    return answered
