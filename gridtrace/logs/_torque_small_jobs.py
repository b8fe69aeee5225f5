"""TORQUE / PBS job assembly for small inputs, in plain Python (no numpy, no pyarrow).

:func:`assemble_torque_small` gives what
:func:`gridtrace.logs._torque_jobs.assemble_torque_jobs` gives without a zone (``tz=None``),
value for value and flag for flag, from the ``records`` in Python form (a list per column):
the records' ``stamp_utc`` and flags, the ``jobs`` columns (``vo`` left None), the dominant
offset and the same ``info``. It exists so that ``gridtrace parse`` of one day's file need not
import numpy and pyarrow (issue 17, item 4); read the Arrow module's docstring for what the
assembly does (identity, attempts, states, times, resources, damaged lines, flags).

It may decline: for an input whose result it does not reproduce exactly it returns ``None``
(the reason logged at DEBUG) and the caller takes the Arrow path. It declines

- a value read as an integer (epochs, ``Exit_status``, counts) that is not plain ASCII
  ``-?[0-9]{1,18}`` and not surely unreadable: the Arrow path reads such values (``0x10``,
  `` 5``, 19 digits) one way or another depending on the other values of the column;
- an ``exec_host`` with blanks before it, or one the parser rejects although every part has the
  ``host/slots`` form and its cores may exceed int32 (a count the vectorised reading keeps);
- a stamp that is not ``MM/DD/YYYY HH:MM:SS`` naming a real date and time (Arrow's ``strptime``
  and Python's ``datetime`` may disagree on those);
- a key logged twice in one record (the tokeniser joins repeated keys);
- values beyond what the Arrow path's int64 arithmetic holds (``pmem`` × cores, a CPU time
  beyond 2**53 seconds, more than 32767 attempts of one job).

The attempt builder, the codes and the key lists are those of the Arrow path
(:mod:`gridtrace.logs._torque_attempts`); the value parsers are those of
:mod:`gridtrace.logs._pbs_values`, which the Arrow path calls for the forms it does not read
vectorised.
"""

from __future__ import annotations

import re
from collections import Counter

from gridtrace._log import get_logger
from gridtrace._parquet_lite import JOBS_COLUMNS as JOBS_SPEC
from gridtrace.errors import ConfigError, GridtraceError
from gridtrace.logs import _pbs_values as pv
from gridtrace.logs._torque_attempts import (
    _A,
    _B_DELETED,
    _B_DUPLICATE,
    _B_LATER,
    _BIT_FLAGS,
    _D,
    _E,
    _END_TYPE_NAMES,
    _FROM_S_KEYS,
    _INT32_RANGE,
    _JOB_ID_PATTERN,
    _K_A,
    _K_D,
    _K_E,
    _K_Q,
    _K_R,
    _K_S,
    _MAX_OFFSET_S,
    _MAX_RESIDUAL_S,
    _MEMORY_FACTORS,
    _PARENT_PATTERN,
    _PBS_DEFAULT_PROJECT,
    _QUARTER_HOUR,
    _R,
    _RECORD_FLAGS_ON_JOBS,
    _S,
    _STATE_CODE,
    _STATES,
    _TYPE_CODES,
    _WALLTIME_TOLERANCE_S,
    JOB_FLAGS,
    NA,
    _Builder,
)
from gridtrace.logs._torque_pure import days_from_civil

TYPE_CHECKING = False  # typing's constant without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["JOBS_COLUMNS", "SmallAssembly", "assemble_torque_small"]

logger = get_logger(__name__)  # imports logging when it first logs (see gridtrace._log)

JOBS_COLUMNS = tuple(column.name for column in JOBS_SPEC)
"""The columns of :data:`gridtrace.schema.JOBS`, in its order (the writer's spec of them)."""

# the epochs a timestamp[s] column holds (gridtrace.logs._columnar.STAMP_RANGE_S, which imports
# numpy; a test checks they agree)
_STAMP_RANGE = (-62_135_596_800, 253_402_300_799)
_BIG = 2**62  # a duration or size the Arrow path reads as unreadable from here on
_EXACT_FLOAT = 2**53  # the largest integer an int64 → float64 cast keeps exactly
_MAX_ATTEMPTS = 2**15 - 1  # the int16 columns attempt and n_attempts
_UNPLACED = NA + 1

# what Arrow's string → int64 cast may accept beyond plain -?[0-9]{1,18} (long digit runs,
# hexadecimal): such a value is read or not depending on the other values of its column (one
# unreadable value sends the whole column through a stricter regular expression)
_CAST_INT = r"-?(?:[0-9]+|0[xX][0-9a-fA-F]+)"
# the patterns of the rare paths are compiled when first used (re caches them), not at import
_SPEC_LIKE = r"[0-9]+:"
_HOST_FORM = r"[^+]+/[0-9,*\-]+(?:\+[^+]+/[0-9,*\-]+)*"
# the patterns of ids, durations and sizes are matched by string methods in their usual forms
# (the same matches: a test checks), so a usual log compiles none of them (~0.6 ms)
_MEMORY_PREFIXES = frozenset("kKmMgGtTpP")
_MEMORY_LAST = frozenset("bBwW")
_RANK = {name: i for i, name in enumerate(JOB_FLAGS)}
# the integer and time columns of jobs, ``NA`` where null while they are built
_INT_COLUMNS = (
    "job_seq",
    "array_index",
    "submit_time",
    "queue_time",
    "eligible_time",
    "start_time",
    "end_time",
    "wait_s",
    "run_s",
    "walltime_used_s",
    "walltime_req_s",
    "nodes_req",
    "cores_req",
    "gpus_req",
    "nodes_alloc",
    "cores_alloc",
    "gpus_alloc",
    "mem_req_bytes",
    "mem_used_bytes",
    "vmem_used_bytes",
    "exit_code",
    "exit_signal",
    "tz_offset_s",
)


class _Decline(GridtraceError):
    """The small path does not reproduce this input exactly: the Arrow path must assemble it."""


class SmallAssembly:
    """What :func:`assemble_torque_small` returns.

    Attributes
    ----------
    stamp_utc : list of int or None
        Per record: its stamp placed in UTC, epoch seconds (None where unreadable).
    flags : list of list of str or None
        Per record: its flags after assembly (``DUPLICATE`` and ``STAMP_UNREADABLE`` added).
    jobs : dict of str to list
        The ``jobs`` columns (:data:`JOBS_COLUMNS`) in Python form; ``vo`` is None.
    tz_offset_s : int or None
        The dominant offset local stamp − UTC, in seconds.
    info : dict
        What :attr:`gridtrace.logs._torque_jobs.TorqueAssembly.info` holds.
    """

    __slots__ = ("flags", "info", "jobs", "stamp_utc", "tz_offset_s")

    def __init__(
        self,
        stamp_utc: list[int | None],
        flags: list[list[str] | None],
        jobs: dict[str, list[Any]],
        tz_offset_s: int | None,
        info: dict[str, Any],
    ) -> None:
        self.stamp_utc = stamp_utc
        self.flags = flags
        self.jobs = jobs
        self.tz_offset_s = tz_offset_s
        self.info = info


def assemble_torque_small(
    records: dict[str, list[Any]], *, unitless_memory: str = "b"
) -> SmallAssembly | None:
    """Assemble TORQUE/PBS records into jobs as the Arrow path does without a zone, or decline.

    Parameters
    ----------
    records : dict of str to list
        The ``records`` columns (schema :data:`gridtrace.schema.RECORDS`) in Python form, the
        records of all files in reading order: ``attrs`` a list of (key, value) pairs per
        record, ``flags`` a list of str (or None), ``raw`` bytes (or None); ``stamp_utc`` is
        not read.
    unitless_memory : str, default "b"
        Unit of memory values logged without one (``b``, ``kb``, ``mb``, ``w``, ...).

    Returns
    -------
    SmallAssembly or None
        What ``assemble_torque_jobs(pa.table(records, schema=RECORDS))`` gives, in Python
        form; None when this input is one the small path does not reproduce exactly (the
        reason is logged at DEBUG).

    Raises
    ------
    ConfigError
        For an unknown memory unit.

    Examples
    --------
    >>> line = (
    ...     "user=u queue=q ctime=1464732444 start=1464732494"
    ...     " exec_host=n1/0-3 end=1464732555 Exit_status=0"
    ... )
    >>> records = {
    ...     "site": ["s"], "source_format": ["torque"], "src_file": ["20160601"],
    ...     "src_line": [1], "record_type": ["E"], "stamp": ["06/01/2016 00:09:15"],
    ...     "stamp_utc": [None], "job_id_raw": ["7.srv"],
    ...     "attrs": [[tuple(kv.split("=", 1)) for kv in line.split()]],
    ...     "flags": [None], "raw": [None],
    ... }
    >>> done = assemble_torque_small(records)
    >>> done.jobs["state"], done.tz_offset_s
    (['COMPLETED'], 7200)
    """
    unit = unitless_memory.strip().lower()
    if unit not in pv.MEMORY_UNITS:
        known = ", ".join(sorted(pv.MEMORY_UNITS))
        raise ConfigError(f"unitless_memory {unitless_memory!r} is not one of: {known}")
    try:
        return _assemble(records, unit)
    except _Decline as reason:
        logger.debug("small TORQUE assembly declined: %s", reason)
        return None
    finally:  # what was read once per distinct id and day is kept for one call only
        _IDS.clear()
        _DAYS.clear()
        _CLOCKS.clear()


# --------------------------------------------------------------------------------------------
# values


def _int_value(text: str) -> int | None:
    """Read an integer as the Arrow path does (None: unreadable); decline where it may differ."""
    digits = text[1:] if text[:1] == "-" else text
    if len(digits) <= 18 and digits.isdigit() and digits.isascii():  # -?[0-9]{1,18}
        return int(text)
    if re.fullmatch(_CAST_INT, text):
        if digits.isdigit() and not -(2**63) <= int(text) < 2**63:
            return None  # beyond int64: no reading takes it
        raise _Decline(f"integer value {text!r} in a form the Arrow path reads by context")
    if any(c.isspace() for c in text):
        raise _Decline(f"integer value {text!r} with blanks, which the Arrow path may trim")
    return None


def _bounded_int(text: str, within: tuple[int, int]) -> int | None:
    value = _int_value(text)
    if value is None or not within[0] <= value <= within[1]:
        return None
    return value


def _fitted(read: tuple[int | None, pv.Problem | None]) -> tuple[int, str | None]:
    """Keep a parser's result as the Arrow path does: beyond 2**62 unreadable, problem named."""
    value, problem = read
    if value is not None and abs(value) >= _BIG:
        value = None
    if value is None and not problem:
        problem = "unreadable"
    return (NA if value is None else value), problem


def _digits(text: str, most: int) -> bool:
    r"""Whether ``text`` is 1 to ``most`` ASCII digits: what ``\d{1,most}`` matches (re.ASCII)."""
    return 0 < len(text) <= most and text.isdigit() and text.isascii()


def _duration(text: str) -> tuple[int, str | None]:
    """Seconds and problem; plain seconds and ``H:M:S`` read as the Arrow path reads them.

    The two forms are those of ``_SECONDS_PATTERN`` and ``_HMS_PATTERN``.
    """
    if _digits(text, 12):
        return int(text), None
    hours, colon, rest = text.partition(":")
    minutes, colon_too, seconds = rest.partition(":")
    if colon and colon_too and _digits(hours, 9) and _digits(minutes, 2) and _digits(seconds, 2):
        return int(hours) * 3600 + int(minutes) * 60 + int(seconds), None
    return _fitted(pv.parse_duration(text))


def _memory(text: str, unit: str) -> tuple[int, str | None]:
    """Bytes and problem; ``<integer><unit>`` (``_MEMORY_PATTERN``) read as the Arrow path does."""
    if text[-1:] in _MEMORY_LAST:
        # a unit letter before the last one belongs to the unit: the number has none
        cut = -2 if text[-2:-1] in _MEMORY_PREFIXES else -1
        if _digits(text[:cut], 12):
            size = int(text[:cut]) * _MEMORY_FACTORS[text[cut:].lower()]
            if size < _BIG:
                return size, None
    return _fitted(pv.parse_memory(text, unit))


_DAYS: dict[str, int] = {}
_CLOCKS: dict[str, int] = {}


def _naive(stamp: str | None) -> int:
    """Read a local stamp as naive seconds since the epoch (``NA`` for no stamp)."""
    if stamp is None:
        return NA
    day_text, clock = stamp[:10], stamp[10:]
    days = _DAYS.get(day_text)
    if days is None:
        days = _DAYS[day_text] = _days(day_text)
    seconds = _CLOCKS.get(clock)
    if seconds is None:
        seconds = _CLOCKS[clock] = _seconds(stamp, clock)
    return days * 86400 + seconds


def _seconds(stamp: str, clock: str) -> int:
    """Seconds since midnight of the `` HH:MM:SS`` part of a stamp."""
    if not (
        len(clock) == 9
        and clock[0] == " "
        and clock[3] == ":"
        and clock[6] == ":"
        and (digits := clock[1:3] + clock[4:6] + clock[7:9]).isdigit()
        and digits.isascii()
    ):
        raise _Decline(f"stamp {stamp!r} not in the MM/DD/YYYY HH:MM:SS form")
    hours, minutes, seconds = int(digits[:2]), int(digits[2:4]), int(digits[4:])
    if hours > 23 or minutes > 59 or seconds > 59:
        raise _Decline(f"stamp {stamp!r} names no time of day")
    return hours * 3600 + minutes * 60 + seconds


def _days(text: str) -> int:
    """Days since 1970-01-01 of a ``MM/DD/YYYY`` date (proleptic Gregorian)."""
    if not (
        len(text) == 10
        and text[2] == "/"
        and text[5] == "/"
        and (digits := text[:2] + text[3:5] + text[6:]).isdigit()
        and digits.isascii()
    ):
        raise _Decline(f"stamp date {text!r} not in the MM/DD/YYYY form")
    month, day, year = int(digits[:2]), int(digits[2:4]), int(digits[4:])
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    last = _MONTH_DAYS[month - 1] + (leap and month == 2) if 1 <= month <= 12 else 0
    if year < 1 or not 1 <= day <= last:
        raise _Decline(f"stamp date {text!r} names no date")
    return days_from_civil(year, month, day)


_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


# --------------------------------------------------------------------------------------------
# records


def _index(attrs: list[tuple[str, str | None]] | None, cut: bool) -> tuple[dict[str, str], int]:
    """Return a record's attributes as a dict (empty values left out), and their number.

    A cut-off line (``cut``) loses its last entry: that value may itself be cut. A null value
    stays (as in the Arrow path's index: the key is there, its value null).
    """
    if not attrs:
        return {}, 0
    pairs = attrs[:-1] if cut else attrs
    index: dict[str, Any] = dict(pairs)
    if len(index) != len(pairs):
        raise _Decline("a key logged twice in one record")
    if "" in index.values():  # an empty value is no value (bare tokens)
        index = {key: value for key, value in index.items() if value != ""}
    return index, len(attrs)


def _ends_in_blank(raw: bytes | None) -> bool:
    return raw is not None and raw.rstrip(b"\r")[-1:] in (b" ", b"\t")


class _Placed:
    """Per-record offsets and the placement facts (``_place`` of the Arrow path, no zone)."""

    __slots__ = ("dominant", "info", "offset")

    def __init__(self, offset: list[int], dominant: int | None, info: dict[str, Any]) -> None:
        self.offset = offset
        self.dominant = dominant
        self.info = info


def _place(naive: list[int], epoch: list[int], src_file: list[str]) -> _Placed:
    """Measure each record's offset on its own epoch; carry it along its file's lines."""
    n = len(naive)
    own = [NA] * n
    counts: dict[int, int] = {}
    outliers = 0
    for i in range(n):
        local, at = naive[i], epoch[i]
        if local == NA or at == NA or at <= 0:
            continue
        raw = local - at
        rounded = (raw + _QUARTER_HOUR // 2) // _QUARTER_HOUR * _QUARTER_HOUR
        if abs(rounded) <= _MAX_OFFSET_S and abs(raw - rounded) <= _MAX_RESIDUAL_S:
            own[i] = rounded
            counts[rounded] = counts.get(rounded, 0) + 1
        else:
            outliers += 1
    values = sorted(counts)
    dominant = None
    for value in values:  # the most records, the smallest of a tie
        if dominant is None or counts[value] > counts[dominant]:
            dominant = value
    offset = list(own)
    start = 0
    while start < n:  # each run of lines of one file: forward, then backward at its start
        stop = start + 1
        while stop < n and src_file[stop] == src_file[start]:
            stop += 1
        carried = NA
        for i in range(start, stop):
            if own[i] != NA:
                carried = own[i]
            else:
                offset[i] = carried
        carried = NA
        for i in range(stop - 1, start - 1, -1):
            if own[i] != NA:
                carried = own[i]
            elif offset[i] == NA:
                offset[i] = carried
        fallback = dominant if dominant is not None else 0
        for i in range(start, stop):
            if naive[i] == NA:
                offset[i] = NA
            elif offset[i] == NA:
                offset[i] = fallback  # the file measured none: the dominant offset, else UTC
        start = stop
    info: dict[str, Any] = {
        "offsets_seen": {str(v): counts[v] for v in values},
        "offset_outliers": outliers,
        "dst": len(values) > 1,
    }
    info["tz_source"] = "inferred" if dominant is not None else "assumed_utc"
    info["dst_ambiguous_records"] = 0
    info["dst_gap_records"] = 0
    return _Placed(offset, dominant, info)


_IDS: dict[str | None, tuple[int, int, bool, bool]] = {}


def _job_id(text: str | None) -> tuple[int, int, bool, bool]:
    """Sequence number, array index (``NA``), is-a-job (not a parent), is-array-parent."""
    parsed = _IDS.get(text)
    if parsed is not None:
        return parsed
    if text is None:
        parsed = (NA, NA, False, False)
    elif _digits(text.partition(".")[0], 18) and "\n" not in text:
        # the usual id, digits then a server name: what the patterns read it as (``.`` takes
        # any character but a line end); no array index, and no ``[]`` of a parent
        parsed = (int(text.partition(".")[0]), NA, True, False)
    else:
        found = re.fullmatch(_JOB_ID_PATTERN, text, re.ASCII)
        parent = re.match(_PARENT_PATTERN, text, re.ASCII) is not None
        if found is None:
            parsed = (NA, NA, False, parent)
        else:
            index_text = found.group("bracket") or found.group("dash") or ""
            index = int(index_text) if index_text else NA
            parsed = (int(found.group("seq")), index, not parent, parent)
    _IDS[text] = parsed
    return parsed


# --------------------------------------------------------------------------------------------
# the assembly


def _assemble(records: dict[str, list[Any]], unit: str) -> SmallAssembly:
    n = len(records["site"])
    if n == 0:
        empty: dict[str, list[Any]] = {name: [] for name in JOBS_COLUMNS}
        return SmallAssembly([], [], empty, None, {"tz": None, "tz_source": None})
    sites: list[str] = records["site"]
    type_names: list[str] = records["record_type"]
    ids: list[str | None] = records["job_id_raw"]
    stamps: list[str | None] = records["stamp"]
    all_attrs: list[list[tuple[str, str | None]] | None] = records["attrs"]
    record_flags: list[list[str] | None] = records["flags"]
    raws: list[bytes | None] = records["raw"]

    rtype = [_TYPE_CODES.get(t, 0) for t in type_names]
    truncated = [f is not None and "TRUNCATED" in f for f in record_flags]
    indexes: list[dict[str, str]] = []
    sizes: list[int] = []
    rec_start: list[int] = []
    rec_end: list[int] = []
    rec_ctime: list[int] = []
    for i in range(n):
        index, size = _index(all_attrs[i], truncated[i] and not _ends_in_blank(raws[i]))
        indexes.append(index)
        sizes.append(size)
        # the epochs of every record, the usual digits read here (else as any integer)
        for name, out in (("start", rec_start), ("end", rec_end), ("ctime", rec_ctime)):
            text = index.get(name)
            if text is None:
                out.append(NA)
            elif len(text) <= 11 and text.isdigit() and text.isascii():
                out.append(int(text))  # within the stamps' range
            else:
                read = _bounded_int(text, _STAMP_RANGE)
                out.append(NA if read is None else read)
    naive = [_naive(s) for s in stamps]
    epoch = [
        rec_end[i] if t == _E else rec_start[i] if t == _S else NA for i, t in enumerate(rtype)
    ]

    placed = _place(naive, epoch, records["src_file"])
    offset = placed.offset
    stamp_utc = [NA if o == NA else naive[i] - o for i, o in enumerate(offset)]
    info: dict[str, Any] = {"tz": None, "tz_offset_s": placed.dominant, **placed.info}

    # -- identity, byte-identical copies
    seq = [0] * n
    array_index = [0] * n
    is_job = [False] * n
    parent_count = 0
    for i in range(n):
        s, ix, job, parent = _job_id(ids[i])
        seq[i], array_index[i] = s, ix
        is_job[i] = job and rtype[i] != 0
        parent_count += parent
    duplicate = _duplicates(records, rtype, naive, rec_start, rec_end, sizes, indexes)
    n_dup = sum(duplicate)
    info["duplicate_lines"] = n_dup
    info["truncated_records"] = sum(truncated)
    info["truncated_end_records"] = sum(
        1 for i in range(n) if truncated[i] and is_job[i] and rtype[i] == _E
    )
    info["array_parent_records"] = parent_count
    info["records_without_job"] = sum(
        1 for i in range(n) if not is_job[i] and not _job_id(ids[i])[3]
    )

    # -- job groups: (site, seq, index), numbered in order of first appearance
    group_of: dict[tuple[str, int, int], int] = {}
    group_rows: list[list[int]] = []
    group_bits: list[int] = []
    for i in range(n):
        if not is_job[i]:
            continue
        key = (sites[i], seq[i], array_index[i])
        g = group_of.get(key)
        if g is None:
            g = group_of[key] = len(group_rows)
            group_rows.append([])
            group_bits.append(0)
        if duplicate[i]:
            group_bits[g] |= _B_DUPLICATE
        else:
            group_rows[g].append(i)
    builder = _Builder(rtype, rec_ctime, rec_start, rec_end, truncated)
    fast = slow = 0
    for g, rows in enumerate(group_rows):
        if not rows:
            continue
        if _fast_shape(rows, rtype, rec_ctime):
            fast += 1
        else:
            slow += 1
        builder.group(g, rows, group_bits[g])
    att = builder.out
    info.update(builder.counts)
    if fast or slow:  # the Arrow path counts the groups only when it has records to cut
        info.update(fast_path_groups=fast, slow_path_groups=slow)
    info["attempts"] = len(att["group"])
    info["duplicate_end_records"] = sum(1 for d in att["dup"] if d >= 0)

    jobs, job_info = _jobs(
        records,
        indexes,
        att,
        seq=seq,
        array_index=array_index,
        stamp_utc=stamp_utc,
        offset=offset,
        assumed_utc=placed.info["tz_source"] == "assumed_utc",
        unit=unit,
    )
    info.update(job_info)

    # -- records: the flags added here
    unreadable = [s == NA for s in naive]
    flags_out = record_flags
    if n_dup or any(unreadable):
        flags_out = []
        for i in range(n):
            row = list(record_flags[i] or ())
            if duplicate[i]:
                row.append("DUPLICATE")
            if unreadable[i]:
                row.append("STAMP_UNREADABLE")
            flags_out.append(row)
    # the Arrow path's warnings, once the input is known to be taken (else that path warns)
    if placed.info["offset_outliers"]:
        logger.warning(
            "%d records have a stamp and an epoch that disagree; not used",
            placed.info["offset_outliers"],
        )
    if placed.dominant is None:
        logger.warning("no zone given and no record with an epoch: stamps read as UTC")
    stamps_out: list[int | None] = [None if s == NA else s for s in stamp_utc]
    return SmallAssembly(stamps_out, list(flags_out), jobs, placed.dominant, info)


def _fast_shape(rows: list[int], rtype: list[int], ctime: list[int]) -> bool:
    """Whether the Arrow path cuts this job group with array operations (for ``info``)."""
    ctimes = {ctime[r] for r in rows if ctime[r] != NA}
    if len(ctimes) > 1:
        return False
    kinds = [rtype[r] for r in rows]
    if _R in kinds or _A in kinds:
        return False
    n_e = kinds.count(_E)
    if n_e == 1:
        return kinds[-1] == _E
    return n_e == 0 and _D not in kinds


def _duplicates(
    records: dict[str, list[Any]],
    rtype: list[int],
    naive: list[int],
    start: list[int],
    end: list[int],
    sizes: list[int],
    indexes: list[dict[str, str]],
) -> list[bool]:
    """Later copies of byte-identical lines, picked as the Arrow path picks them.

    Candidates share the key the Arrow path hashes (site, type, stamp, id, start, end, number of
    attributes, queue); among them a line is a copy when its site, type, stamp, id and
    attributes were seen before.
    """
    n = len(rtype)
    sites, ids, stamps = records["site"], records["job_id_raw"], records["stamp"]
    duplicate = [False] * n
    # a line whose stamp and id no other line has is no copy (counted in C: most lines)
    pairs = list(zip(stamps, ids, strict=True))
    shared = Counter(pairs)
    if len(shared) == n:
        return duplicate
    rows = [i for i in range(n) if shared[pairs[i]] > 1]
    keys = {
        i: (
            sites[i],
            rtype[i],
            naive[i],
            ids[i],
            start[i],
            end[i],
            sizes[i],
            indexes[i].get("queue"),
        )
        for i in rows
    }
    seen_keys = Counter(keys.values())
    types, attrs = records["record_type"], records["attrs"]
    seen: set[tuple[Any, ...]] = set()
    for i in rows:
        if seen_keys[keys[i]] < 2:
            continue
        full = (sites[i], types[i], stamps[i], ids[i], tuple(attrs[i] or ()))
        if full in seen:
            duplicate[i] = True
        else:
            seen.add(full)
    return duplicate


def _first(*values: int) -> int:
    for value in values:
        if value != NA:
            return value
    return NA


def _disagree(*values: int) -> bool:
    """Whether two of the known (not ``NA``) values differ."""
    first = NA
    for value in values:
        if value != NA:
            if first == NA:
                first = value
            elif value != first:
                return True
    return False


def _jobs(
    records: dict[str, list[Any]],
    indexes: list[dict[str, str]],
    att: dict[str, list[int]],
    *,
    seq: list[int],
    array_index: list[int],
    stamp_utc: list[int],
    offset: list[int],
    assumed_utc: bool,
    unit: str,
) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """Build the ``jobs`` columns and facts attempt by attempt (the Arrow ``_jobs_table``)."""
    out: dict[str, list[Any]] = {name: [] for name in JOBS_COLUMNS}
    n_att = len(att["group"])
    if n_att == 0:
        return out, {"jobs": 0, "jobs_by_state": {}}
    record_flags: list[list[str] | None] = records["flags"]
    # per record, the flags of its line that the jobs taking values from it carry
    on_jobs = frozenset(_RECORD_FLAGS_ON_JOBS)
    line_flags = [on_jobs.intersection(f) if f else frozenset() for f in record_flags]
    sites, formats = records["site"], records["source_format"]
    ids, src_files, src_lines = records["job_id_raw"], records["src_file"], records["src_line"]
    rows: list[tuple[Any, ...]] = []
    reader = _Reader(unit)
    ints, duration, memory = reader.ints, reader.duration, reader.memory
    hosts_read: dict[str, pv.ExecHost | None] = {}
    vnodes_read: dict[str, pv.ExecHost | None] = {}
    specs_read: dict[str, pv.NodeRequest | None] = {}
    selects_read: dict[str, pv.NodeRequest | None] = {}
    state_totals = [0] * len(_STATES)
    job_keys: set[str] = set()
    fields = ("kind", "primary", "dup", "s", "first_q", "last_q", "bits")
    attempts = zip(*(att[name] for name in fields), strict=True)
    for a, (kind, primary, dup, s_row, first_q, last_q, bits) in enumerate(attempts):
        if att["total"][a] > _MAX_ATTEMPTS:
            raise _Decline("a job with more attempts than an int16 holds")
        closed_by_e = kind == _K_E
        cut_e = closed_by_e and "TRUNCATED" in line_flags[primary]
        # each key from the first record that has it: the later dicts win in {**a, **b}
        own = other = closing = indexes[primary]
        if dup >= 0 and s_row >= 0:
            other = {**indexes[s_row], **indexes[dup], **closing}
        elif dup >= 0:
            other = {**indexes[dup], **closing}
        elif s_row >= 0:
            other = {**indexes[s_row], **closing}
        own_second = dup if closed_by_e and not cut_e else s_row
        if own_second >= 0:
            own = {**indexes[own_second], **closing}
        queue = other.get("queue")
        if "queue" not in other and last_q >= 0:  # (a null queue is a value, as in Arrow)
            queue = indexes[last_q].get("queue")
        flags = reader.begin()
        if bits:
            flags.update(name for bit, name in _BIT_FLAGS if bits & bit)
        for r in (primary, dup, s_row, last_q):
            if r >= 0 and line_flags[r]:
                flags.update(line_flags[r])
        if cut_e and s_row >= 0:
            for key in _FROM_S_KEYS:
                if key not in indexes[primary] and key in indexes[s_row]:
                    flags.add("FROM_S_RECORD")

        # -- times
        ctime = _first(ints(other, "ctime", _STAMP_RANGE), att["ctime"][a])
        qtime, etime = ints(other, "qtime", _STAMP_RANGE), ints(other, "etime", _STAMP_RANGE)
        start, end = ints(own, "start", _STAMP_RANGE), ints(own, "end", _STAMP_RANGE)
        exit_status = ints(own, "Exit_status")
        start = start if start > 0 else NA
        end = end if end > 0 else NA
        q_stamp = stamp_utc[first_q] if first_q >= 0 else NA
        submit_from_stamp = ctime == NA and q_stamp != NA
        submit = q_stamp if submit_from_stamp else ctime
        started = start != NA
        by_a_or_d = kind in (_K_A, _K_D)
        stamp_end = (kind == _K_R and end == NA) or (by_a_or_d and started) or (cut_e and end == NA)
        if stamp_end:
            end = stamp_utc[primary]
        if kind in (_K_S, _K_Q) or (by_a_or_d and not started):
            end = NA
        stamp_end = stamp_end and end != NA
        from_stamp = submit_from_stamp or stamp_end
        if cut_e and stamp_end:
            flags.add("END_FROM_STAMP")
        if submit == NA:
            flags.add("SUBMIT_UNKNOWN")

        # -- resources
        walltime_used = duration(own, "resources_used.walltime", "NEG_WALLTIME")
        walltime_req = duration(other, "Resource_List.walltime", "NEG_WALLTIME")
        cput = duration(own, "resources_used.cput", "NEG_CPUTIME")
        if cput != NA and abs(cput) > _EXACT_FLOAT:
            raise _Decline("a CPU time beyond what float64 holds exactly")
        mem_used = memory(own, "resources_used.mem")
        vmem_used = memory(own, "resources_used.vmem")
        mem_req = memory(other, "Resource_List.mem")
        pmem = memory(other, "Resource_List.pmem")

        # requests: Resource_List.nodes (neednodes, a nodes spec in nodect), select, procs, ncpus
        nodes_text = other.get("Resource_List.nodes") or other.get("Resource_List.neednodes")
        nodect_text = other.get("Resource_List.nodect")
        nodect = NA
        nodect_bad = False
        if nodect_text is not None:
            read_nodect = _bounded_int(nodect_text, _INT32_RANGE)
            nodect_bad = read_nodect is None
            nodect = NA if read_nodect is None else read_nodect
        from_nodect = (
            nodect_bad
            and nodes_text is None
            and nodect_text is not None
            and re.match(_SPEC_LIKE, nodect_text) is not None
        )
        if from_nodect:
            nodes_text = nodect_text
            flags.add("NODESPEC_FROM_NODECT")
        elif nodect_bad:
            flags.add("VALUE_UNREADABLE:Resource_List.nodect")
        spec = select = None
        if nodes_text is not None:
            if nodes_text not in specs_read:
                specs_read[nodes_text] = pv.parse_nodes_spec(nodes_text)
            spec = specs_read[nodes_text]
            if spec is None:
                flags.add("NODESPEC_UNPARSED")
        select_text = other.get("Resource_List.select")
        if select_text is not None:
            if select_text not in selects_read:
                selects_read[select_text] = pv.parse_select(select_text, unit)
            select = selects_read[select_text]
            if select is None:
                flags.add("NODESPEC_UNPARSED")
            elif select.mem_problem == "nonstandard":
                flags.add("UNIT_NONSTANDARD")
            elif select.mem_problem == "guessed":
                flags.add("UNIT_GUESSED")
        nodes_sources = (
            NA if spec is None else spec.nodes,
            nodect if nodect != NA and nodect > 0 else NA,
            NA if select is None else select.nodes,
        )
        cores_sources = (
            NA if spec is None else spec.cores,
            NA if select is None else select.cores,
            ints(other, "Resource_List.procs"),
            ints(other, "Resource_List.ncpus"),
        )
        gpus_sources = (
            ints(other, "Resource_List.ngpus"),
            ints(other, "Resource_List.gpus"),
            ints(other, "Resource_List.gpu"),
            NA if select is None else select.gpus,
            NA if spec is None else spec.gpus,
        )
        select_mem = NA if select is None or select.mem_bytes is None else select.mem_bytes
        if _disagree(*nodes_sources):
            flags.add("NODES_REQ_CONFLICT")
        if _disagree(*cores_sources):
            flags.add("CORES_REQ_CONFLICT")
        # a spec or select without gpus= asks for none: only a number it states can disagree
        stated = [g if g != NA and g > 0 else NA for g in gpus_sources[3:]]
        if _disagree(*gpus_sources[:3], *stated):
            flags.add("GPUS_REQ_CONFLICT")
        nodes_req, cores_req = _first(*nodes_sources), _first(*cores_sources)
        gpus_req = _first(*gpus_sources)
        if _disagree(mem_req, select_mem):
            flags.add("MEM_REQ_CONFLICT")
        mem_req = _first(mem_req, select_mem)
        if mem_req == NA and pmem != NA and cores_req != NA:
            mem_req = pmem * cores_req
            if not -(2**63) < mem_req < 2**63:
                raise _Decline("pmem × cores beyond int64")
            flags.add("MEM_FROM_PMEM")

        # allocation: exec_vnode, exec_host, total_execution_slots, resources_used.ncpus
        host_text = own.get("exec_host")
        has_exec = host_text is not None
        host = None
        if host_text is not None:
            if host_text not in hosts_read:
                hosts_read[host_text] = _exec_host(host_text)
            host = hosts_read[host_text]
            if host is None:
                flags.add("VALUE_UNREADABLE:exec_host")
        vnode_text = own.get("exec_vnode")
        vnode = None
        if vnode_text is not None:
            if vnode_text not in vnodes_read:
                vnodes_read[vnode_text] = pv.parse_exec_vnode(vnode_text)
            vnode = vnodes_read[vnode_text]
            if vnode is None:
                flags.add("VALUE_UNREADABLE:exec_vnode")
        host_cores = NA if host is None or host.cores <= 0 else host.cores
        alloc_sources = (
            NA if vnode is None or not vnode.cores else vnode.cores,
            host_cores,
            ints(own, "total_execution_slots"),
            ints(own, "resources_used.ncpus"),
        )
        cores_alloc = _first(*alloc_sources)
        if _disagree(*alloc_sources):
            flags.add("CORES_CONFLICT")
        gpus_alloc = NA if vnode is None or vnode.gpus is None else vnode.gpus
        hosts: list[str] | None = None
        if has_exec:
            hosts = None if host is None else list(host.hosts)
        elif vnode_text is not None:
            hosts = [] if vnode is None else list(vnode.hosts)
        node_sources = (NA if hosts is None else len(hosts), ints(own, "unique_node_count"))
        nodes_alloc = _first(*node_sources)
        if _disagree(*node_sources):
            flags.add("NODES_CONFLICT")
        if gpus_alloc == NA and has_exec and gpus_req != NA and gpus_req > 0:
            gpus_alloc = gpus_req
            flags.add("GPUS_ALLOC_FROM_REQUEST")
        if cores_alloc != NA and cores_req != NA and cores_alloc != cores_req:
            flags.add("CORES_REQ_MISMATCH")

        # -- exit status and state
        exit_known = exit_status != NA
        status = exit_status if exit_known else 0
        inferred = exit_known and 128 < status < 256
        signal = status - 256 if status > 256 else status - 128 if inferred else NA
        if inferred:
            flags.add("SIGNAL_INFERRED")
        deleted_seen = bool(bits & _B_DELETED)
        never_started = closed_by_e and not started and has_exec
        exec_failed = closed_by_e and started and not has_exec and exit_known and status < 0
        ran = started and end != NA and not never_started and not exec_failed
        run_s = end - start if ran else NA
        used_s = _first(walltime_used, run_s)
        over_limit = signal != NA and used_s != NA and walltime_req != NA
        over_limit = over_limit and used_s >= walltime_req
        if closed_by_e:
            if not started and not has_exec:
                state = "DELETED"
            elif never_started or exec_failed:
                state = "FAILED"
            elif status == -11 or over_limit:
                state = "TIMEOUT"
            elif deleted_seen:
                state = "CANCELLED"
            elif not exit_known:
                state = "UNKNOWN"
            elif status == 0:
                state = "COMPLETED"
            else:
                state = "FAILED"
            # a cut-off E without a start: whether the job ran is not known
            if cut_e and "start" not in own:
                state = "UNKNOWN"
            if state == "TIMEOUT" and status != -11:
                flags.add("TIMEOUT_INFERRED")
        elif kind == _K_R:
            state = "REQUEUED"
        elif by_a_or_d and not started:
            state = "DELETED"
        elif by_a_or_d and deleted_seen:
            state = "CANCELLED"
        elif kind == _K_A:
            state = "FAILED"
        elif kind == _K_S:
            state = "RUNNING"
        else:
            state = "PENDING"
        if bits & _B_LATER:
            state = "REQUEUED"
        if never_started:
            flags.add("NEVER_STARTED")
        if exec_failed:
            flags.add("EXEC_FAILED")
        if closed_by_e and started and not exit_known:
            flags.add("NO_EXIT_STATUS")
        if not closed_by_e and kind != _K_R:
            flags.add("NO_END_RECORD")

        # -- durations
        if run_s != NA and run_s < 0:
            run_s = NA
            flags.add("END_BEFORE_START")
        wait_s = start - submit if started and submit != NA else NA
        if wait_s != NA and wait_s < 0:
            flags.add("START_BEFORE_SUBMIT")
        if (
            walltime_used != NA
            and run_s != NA
            and abs(walltime_used - run_s) > _WALLTIME_TOLERANCE_S
        ):
            flags.add("WALLTIME_MISMATCH")
        if from_stamp:
            flags.add("TIME_FROM_STAMP")
            if assumed_utc:
                flags.add("TZ_ASSUMED_UTC")

        # -- identity and text columns
        account = other.get("account")
        project = other.get("project")
        if account is None and project is not None and project != _PBS_DEFAULT_PROJECT:
            account = project
            flags.add("ACCOUNT_FROM_PROJECT")
        site = sites[primary]
        job_seq, index = seq[primary], array_index[primary]
        key_submit = _first(att["ctime"][a], submit)
        job_key = (
            f"{site}:{job_seq}{'' if index == NA else f'[{index}]'}"
            f"@{'unknown' if key_submit == NA else key_submit}"
        )
        job_keys.add(job_key)
        state_totals[_STATE_CODE[state]] += 1
        end_type = _END_TYPE_NAMES[kind]
        row = (
            site,
            formats[primary],
            job_key,
            ids[primary],
            job_seq,
            None if index == NA else index,
            att["number"][a],
            att["total"][a],
            other.get("user"),
            other.get("group"),
            account,
            None,
            queue,
            None,  # TORQUE has one server, no partitions
            other.get("jobname"),
            submit,
            qtime if qtime != NA and qtime > 0 else NA,
            etime if etime != NA and etime > 0 else NA,
            start,
            end,
            wait_s,
            run_s,
            walltime_used,
            walltime_req,
            None if cput == NA else float(cput),
            nodes_req,
            cores_req,
            gpus_req,
            nodes_alloc,
            cores_alloc,
            gpus_alloc,
            hosts,
            mem_req,
            mem_used,
            vmem_used,
            exit_status,
            signal,
            state,
            end_type or None,
            offset[primary],
            src_files[primary],
            src_lines[primary],
            sorted(flags, key=_flag_rank) if flags else [],
        )
        rows.append(row)
    # one row per attempt, turned into columns at once
    for name, column in zip(JOBS_COLUMNS, zip(*rows, strict=True), strict=True):
        out[name] = list(column)
    for name in _INT_COLUMNS:
        out[name] = [None if value == NA else value for value in out[name]]
    return out, {
        "jobs": len(job_keys),
        "jobs_by_state": {_STATES[c]: t for c, t in enumerate(state_totals) if t},
    }


class _Reader:
    """Reads an attempt's values, and notes the flags they earn; parsed values kept per text.

    The values come from ``own`` (the closing record, then its duplicate E or its S: the
    attempt's own timing and usage) or ``other`` (the closing record, the duplicate E, the S),
    as the Arrow path takes them.
    """

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self.flags: set[str] = set()
        self.durations: dict[str, tuple[int, str | None]] = {}
        self.memories: dict[str, tuple[int, str | None]] = {}

    def begin(self) -> set[str]:
        """Start reading an attempt; return its (empty) set of flags."""
        self.flags = set()
        return self.flags

    def ints(self, values: dict[str, str], key: str, within: tuple[int, int] = _INT32_RANGE) -> int:
        value = values.get(key)
        if value is None:
            return NA
        if len(value) <= 11 and value.isdigit() and value.isascii():  # the usual form
            read: int | None = int(value)
        else:
            read = _int_value(value)
        if read is None or not within[0] <= read <= within[1]:
            self.flags.add(f"VALUE_UNREADABLE:{key}")
            return NA
        return read

    def _problem(self, key: str, problem: str | None, negative: str = "") -> None:
        if problem == "unreadable":
            self.flags.add(f"VALUE_UNREADABLE:{key}")
        elif problem == "negative":
            self.flags.add(negative or f"VALUE_UNREADABLE:{key}")
        elif problem == "nonstandard":
            self.flags.add("UNIT_NONSTANDARD")
        elif problem == "guessed":
            self.flags.add("UNIT_GUESSED")

    def duration(self, values: dict[str, str], key: str, negative: str) -> int:
        value = values.get(key)
        if value is None:
            return NA
        read = self.durations.get(value)
        if read is None:
            read = self.durations[value] = _duration(value)
        if read[1] is not None:
            self._problem(key, read[1], negative)
        return read[0]

    def memory(self, values: dict[str, str], key: str) -> int:
        value = values.get(key)
        if value is None:
            return NA
        read = self.memories.get(value)
        if read is None:
            read = self.memories[value] = _memory(value, self.unit)
        if read[1] is not None:
            self._problem(key, read[1])
        return read[0]


def _flag_rank(name: str) -> tuple[int, str]:
    return _RANK.get(name.split(":", 1)[0], len(_RANK)), name


def _exec_host(text: str) -> pv.ExecHost | None:
    """Read ``exec_host`` as the Arrow path does (its parser; decline where the two differ)."""
    if text[:1].isspace():  # the vectorised reading keeps it in the first host, the parser not
        raise _Decline(f"exec_host {text!r} with blanks before it")
    read = pv.parse_exec_host(text)
    if read is None and re.fullmatch(_HOST_FORM, text):
        # rejected for its syntax, the vectorised reading rejects it too; for a count beyond
        # int32 (which the cores of its items bound), that reading may keep it
        numbers = re.findall(r"[0-9]+", text)
        bound = sum(int(n) for n in numbers) + len(numbers)
        if bound > _INT32_RANGE[1]:
            raise _Decline(f"exec_host {text!r} may count cores beyond int32")
    return read
