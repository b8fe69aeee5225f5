"""The PBS value parsers read whole numbers without Decimal, to the same values as with it."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from gridtrace.logs._pbs_values import _POWERS, parse_duration, parse_memory

_NUMBERS = st.one_of(
    st.integers(min_value=0, max_value=10**40).map(str),
    st.integers(min_value=0, max_value=10**6).map(lambda n: f"{n:012d}"),  # leading zeros
    st.from_regex(r"\d{1,30}\.\d{0,5}", fullmatch=True),
)


def _memory_by_decimal(number: str, power: str, kind: str, unitless: str) -> int:
    # the reading before whole numbers skipped Decimal: Decimal(number) × factor, rounded down
    if not power and not kind:
        power, kind = unitless[:-1], unitless[-1]
    factor = 1024 ** _POWERS[power.lower()] * (8 if kind.lower() == "w" else 1)
    return int(Decimal(number) * factor)


@given(
    _NUMBERS,
    st.sampled_from(["", "k", "M", "g", "T", "p", "e"]),
    st.sampled_from(["", "b", "W"]),
    st.sampled_from(["b", "kb", "mw"]),
)
def test_memory_is_read_as_decimal_reads_it(
    number: str, power: str, kind: str, unitless: str
) -> None:
    value, problem = parse_memory(f"{number}{power}{kind}", unitless)
    assert value == _memory_by_decimal(number, power, kind, unitless)
    guessed = not power and not kind and Decimal(number) != 0
    nonstandard = bool(power or kind) and (not kind or "." in number)
    assert problem == ("guessed" if guessed else "nonstandard" if nonstandard else None)


def test_a_huge_memory_is_rounded_as_decimal_rounds_it() -> None:
    # beyond Decimal's 28 digits the product is rounded there; the value stays what it was
    number = "9" * 30
    assert parse_memory(f"{number}kb") == (int(Decimal(number) * 1024), None)
    assert parse_memory(f"{number}kb")[0] != int(number) * 1024


@given(st.integers(min_value=0, max_value=10**30), st.sampled_from(["", ".5", ".", ".999"]))
def test_seconds_are_read_as_decimal_reads_them(seconds: int, fraction: str) -> None:
    assert parse_duration(f"{seconds}{fraction}") == (int(Decimal(f"{seconds}{fraction}")), None)
    assert parse_duration(f"1:02:{seconds:02d}{fraction}") == (3720 + seconds, None)


def test_seconds_with_more_digits_than_int_reads() -> None:
    text = "1" + "0" * 5000  # int() refuses a string this long; Decimal reads it
    assert parse_duration(text) == (int(Decimal(text)), None)
