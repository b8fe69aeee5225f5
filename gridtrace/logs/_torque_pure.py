"""The pure-Python pieces of the TORQUE reader that its two paths share.

:mod:`gridtrace.logs._torque` (the Arrow path) and :mod:`gridtrace.logs._torque_small_read` (the
small-input path, which imports neither numpy nor pyarrow) both take these from here, so that
the flavour sniff and the file order have one implementation.
"""

from __future__ import annotations

from collections.abc import Sequence

from gridtrace._log import get_logger

__all__ = [
    "FLAVOUR_SNIFF_BYTES",
    "PBSPRO_MARKERS",
    "TORQUE_NAMES",
    "days_from_civil",
    "file_order",
    "time_order",
    "warn_time_order",
]

# the name of the module time_order was written for: its warning keeps that logger (which
# imports logging when it first logs: see gridtrace._log)
logger = get_logger("gridtrace.logs._torque")

TORQUE_NAMES = frozenset({"torque", "pbs", "pbspro", "openpbs"})
"""The names ``--format`` takes for TORQUE: its registry entry's name and aliases (tested)."""

PBSPRO_MARKERS = (b";L;", b" exec_vnode=", b" run_count=")
"""Markers only PBS Pro writes: licence records, vnode allocations, run counts."""

FLAVOUR_SNIFF_BYTES = 4 << 20
"""The head of a file searched for :data:`PBSPRO_MARKERS`.

PBS Pro writes its markers from the first end record on; a whole-file scan costs half a
tokenise."""


def time_order(medians: Sequence[float | None], names: Sequence[str]) -> tuple[list[int], int]:
    """Return the reading order of files from their median stamps, and how many moved.

    What :func:`gridtrace.logs._torque.in_time_order` does, on the medians alone (the spill
    path keeps no records): :func:`file_order`, then :func:`warn_time_order` when files moved.
    """
    order, moved = file_order(medians)
    warn_time_order(moved, [names[i] for i in order])
    return order, moved


def file_order(medians: Sequence[float | None]) -> tuple[list[int], int]:
    """Return the reading order of files from their median stamps, and how many moved; no warning.

    Files in time order, and files with equal medians (a copy of a file), keep the order
    given; a file without readable records (median None) stays after the one before it.
    """
    keys: list[float] = []
    previous = float("-inf")
    for median in medians:
        previous = previous if median is None else median
        keys.append(previous)
    order = sorted(range(len(keys)), key=lambda i: (keys[i], i))
    return order, sum(i != j for i, j in enumerate(order))


def warn_time_order(moved: int, names_in_order: Sequence[str]) -> None:
    """Log that ``moved`` files were given out of time order (nothing when none was).

    The small TORQUE path calls it once its reading is taken (see
    :func:`gridtrace.logs._small_parse.parse_torque_small`): a reading it declines is read
    again by the Arrow path, which warns itself.
    """
    if moved:
        logger.warning(
            "%d of %d files were given out of time order; read in the order of their records' "
            "stamps: %s",
            moved,
            len(names_in_order),
            ", ".join(names_in_order),
        )


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a date of the proleptic Gregorian calendar (H. Hinnant's)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468
