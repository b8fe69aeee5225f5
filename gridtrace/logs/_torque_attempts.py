"""TORQUE / PBS job assembly: the pieces that are plain Python, shared by both assemblers.

:mod:`gridtrace.logs._torque_jobs` (Arrow and numpy) and :mod:`gridtrace.logs._torque_small_jobs`
(the small-input path, standard library only) import them from here, so that the two paths cut
attempts with ONE implementation: the flag and state names, the record-type and attempt-kind
codes, the attempt builder's bits, the attribute keys read, and the record-by-record attempt
builder :class:`_Builder` with :func:`_split_by_ctime`. This module imports neither numpy nor
pyarrow.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's constant without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

NA = -(2**63)
"""Missing value in the int64 arrays used internally (``np.iinfo(np.int64).min``)."""
_INT32_RANGE = (-(2**31), 2**31 - 1)
"""What a count or a status read by ``ints`` may hold: its jobs column is int32."""

JOB_FLAGS = (
    "ID_REUSE",
    "DUPLICATE",
    "DUPLICATE_END",
    "RERUN",
    "ATTEMPT_UNLOGGED",
    "START_RETRIED",
    "DELETED_BY_USER",
    "ABORTED",
    "END_RECORD_TRUNCATED",
    "TRUNCATED",
    "END_FROM_STAMP",
    "FROM_S_RECORD",
    "NO_NEWLINE",
    "NUL_STRIPPED",
    "NUL_INSIDE",
    "NON_UTF8",
    "CONTROL_CHARS",
    "NO_END_RECORD",
    "SUBMIT_UNKNOWN",
    "TIME_FROM_STAMP",
    "TZ_ASSUMED_UTC",
    "DST_AMBIGUOUS",
    "DST_GAP",
    "NEVER_STARTED",
    "EXEC_FAILED",
    "SIGNAL_INFERRED",
    "TIMEOUT_INFERRED",
    "NEG_WALLTIME",
    "NEG_CPUTIME",
    "WALLTIME_MISMATCH",
    "END_BEFORE_START",
    "START_BEFORE_SUBMIT",
    "NO_EXIT_STATUS",
    "UNIT_NONSTANDARD",
    "UNIT_GUESSED",
    "MEM_FROM_PMEM",
    "NODESPEC_UNPARSED",
    "NODESPEC_FROM_NODECT",
    "GPUS_ALLOC_FROM_REQUEST",
    "CORES_CONFLICT",
    "NODES_CONFLICT",
    "CORES_REQ_CONFLICT",
    "NODES_REQ_CONFLICT",
    "GPUS_REQ_CONFLICT",
    "MEM_REQ_CONFLICT",
    "CORES_REQ_MISMATCH",
    "ACCOUNT_FROM_PROJECT",
    "VALUE_UNREADABLE",
)
"""Every flag :func:`assemble_torque_jobs` sets (``VALUE_UNREADABLE`` carries ``:<key>``)."""

# record flags a job carries when one of the records it takes values from has them
_RECORD_FLAGS_ON_JOBS = (
    "TRUNCATED",
    "NO_NEWLINE",
    "NUL_STRIPPED",
    "NUL_INSIDE",
    "NON_UTF8",
    "CONTROL_CHARS",
)
# the attributes an attempt closed by a cut-off E record may take from its S record instead
_FROM_S_KEYS = (
    "start",
    "exec_host",
    "exec_vnode",
    "total_execution_slots",
    "unique_node_count",
)

# record types
_Q, _S, _E, _D, _R, _A = 1, 2, 3, 4, 5, 6
_TYPE_CODES = {"Q": _Q, "S": _S, "E": _E, "D": _D, "R": _R, "A": _A}

# how an attempt ended: the record type that closed it, or S (running) / Q (pending)
_K_E, _K_R, _K_A, _K_D, _K_S, _K_Q = 0, 1, 2, 3, 4, 5
_END_TYPE_NAMES = ("E", "R", "A", "D", "", "")

# bits set by the attempt builder
_B_ID_REUSE = 1 << 0
_B_DUPLICATE = 1 << 1
_B_DUP_END = 1 << 2
_B_RERUN = 1 << 3
_B_UNLOGGED = 1 << 4
_B_START_RETRIED = 1 << 5
_B_DELETED = 1 << 6
_B_ABORTED = 1 << 7
_B_TRUNCATED = 1 << 8
_B_LATER = 1 << 9
_BIT_FLAGS = (
    (_B_ID_REUSE, "ID_REUSE"),
    (_B_DUPLICATE, "DUPLICATE"),
    (_B_DUP_END, "DUPLICATE_END"),
    (_B_RERUN, "RERUN"),
    (_B_UNLOGGED, "ATTEMPT_UNLOGGED"),
    (_B_START_RETRIED, "START_RETRIED"),
    (_B_DELETED, "DELETED_BY_USER"),
    (_B_ABORTED, "ABORTED"),
    (_B_TRUNCATED, "END_RECORD_TRUNCATED"),
)

_QUARTER_HOUR = 900
_MAX_OFFSET_S = 14 * 3600
_MAX_RESIDUAL_S = 300
_WALLTIME_TOLERANCE_S = 60
_STAMP_FORMAT = "%m/%d/%Y %H:%M:%S"
_PBS_DEFAULT_PROJECT = "_pbs_project_default"
# a job id: sequence number, then an array index ``[i]`` (``[]`` for a parent) or ``-i``, then
# the server; read by Arrow's regular expressions (RE2: ``\d`` is ASCII) and by ``re`` with
# ``re.ASCII``, matched whole
_JOB_ID_PATTERN = r"(?P<seq>\d{1,18})(?:\[(?P<bracket>\d{0,9})\]|-(?P<dash>\d{1,9}))?(?:\..*)?"
_PARENT_PATTERN = r"\d+\[\]"  # an array parent's id starts so (matched at the start)
# the forms of durations and sizes read without the parsers of _pbs_values (which give the
# same values for them), matched whole, as for ids
_SECONDS_PATTERN = r"\d{1,12}"
_HMS_PATTERN = r"\d{1,9}:\d{1,2}:\d{1,2}"
_MEMORY_PATTERN = r"(?P<number>\d{1,12})(?P<unit>[kKmMgGtTpP]?[bBwW])"
_MEMORY_FACTORS = {
    p + k: 1024**i * (8 if k == "w" else 1)
    for i, p in enumerate(("", "k", "m", "g", "t", "p"))
    for k in ("b", "w")
}

# attributes read from the records
_TEXT_KEYS = ("user", "group", "account", "project", "queue", "jobname")
_EPOCH_KEYS = ("ctime", "qtime", "etime", "start", "end")
_INT_KEYS = (
    "Exit_status",
    "total_execution_slots",
    "unique_node_count",
    "resources_used.ncpus",
    "Resource_List.procs",
    "Resource_List.ncpus",
    "Resource_List.ngpus",
    "Resource_List.gpus",
    "Resource_List.gpu",
)
_SPEC_KEYS = (
    "Resource_List.nodes",
    "Resource_List.neednodes",
    "Resource_List.nodect",
    "Resource_List.select",
    "Resource_List.walltime",
    "Resource_List.mem",
    "Resource_List.pmem",
)
_USED_KEYS = (
    "exec_host",
    "exec_vnode",
    "resources_used.walltime",
    "resources_used.cput",
    "resources_used.mem",
    "resources_used.vmem",
)
_KEYS = _TEXT_KEYS + _EPOCH_KEYS + _INT_KEYS + _SPEC_KEYS + _USED_KEYS
# attributes of the attempt's own timing and usage: from the closing record (and its duplicate)
_OWN_KEYS = frozenset(
    {"start", "end", "Exit_status", "total_execution_slots", "unique_node_count"}
    | {"resources_used.ncpus"}
    | set(_USED_KEYS)
)


_STATES = (
    "CANCELLED",
    "COMPLETED",
    "DELETED",
    "FAILED",
    "PENDING",
    "REQUEUED",
    "RUNNING",
    "TIMEOUT",
    "UNKNOWN",
)
"""The states of an attempt, by name: a state's code is its place here."""
_STATE_CODE = {name: code for code, name in enumerate(_STATES)}


# --------------------------------------------------------------------------------------------
# attempts

_FIELDS = (
    "group",
    "number",
    "total",
    "kind",
    "primary",
    "dup",
    "s",
    "first_q",
    "last_q",
    "bits",
    "ctime",
)


class _Builder:
    """Cuts the records of the jobs that need it into attempts, record by record."""

    def __init__(
        self,
        rtype: Mapping[int, int] | Sequence[int],
        ctime: Mapping[int, int] | Sequence[int],
        start: Mapping[int, int] | Sequence[int],
        end: Mapping[int, int] | Sequence[int],
        truncated: Mapping[int, bool] | Sequence[bool],
    ) -> None:
        """Take the per-record values by row: maps of some rows, or lists of every row."""
        self.rtype = rtype
        self.ctime = ctime
        self.start = start
        self.end = end
        self.truncated = truncated
        self.out: dict[str, list[int]] = {name: [] for name in _FIELDS}
        self.counts = {"rerun_records": 0, "records_after_end": 0}

    def group(self, group: int, rows: list[int], bits: int) -> None:
        """Add the attempts of one job group (records of one id, in log order)."""
        distinct = {self.ctime[r] for r in rows if self.ctime[r] != NA}
        if len(distinct) <= 1:
            self.job(group, next(iter(distinct)) if distinct else NA, rows, bits)
            return
        for ctime, part in _split_by_ctime(rows, self.ctime):
            self.job(group, ctime, part, bits | _B_ID_REUSE)

    def job(self, group: int, ctime: int, rows: list[int], base_bits: int) -> None:
        """Add the attempts of one job."""
        out = self.out
        rtype, start, end = self.rtype, self.start, self.end
        first = len(out["group"])
        number = n_s = 0
        s_row = closer = first_q = last_q = last_e = -1
        d_seen = a_seen = q_in_attempt = False
        pending = 0

        def emit(kind: int, primary: int, bits: int) -> None:
            nonlocal number, s_row, n_s, d_seen, a_seen, closer, q_in_attempt, pending
            bits |= base_bits | pending
            bits |= (_B_START_RETRIED if n_s > 1 else 0) | (_B_DELETED if d_seen else 0)
            bits |= _B_ABORTED if a_seen else 0
            for name, value in (
                ("group", group),
                ("number", number),
                ("total", 0),
                ("kind", kind),
                ("primary", primary),
                ("dup", -1),
                ("s", s_row),
                ("first_q", first_q),
                ("last_q", last_q),
                ("bits", bits),
                ("ctime", ctime),
            ):
                out[name].append(value)
            number += 1
            s_row = closer = -1
            n_s = pending = 0
            d_seen = a_seen = q_in_attempt = False

        for row in rows:
            kind = rtype[row]
            if kind == _E:
                previous = out["primary"][last_e] if last_e >= 0 else -1
                if previous >= 0 and s_row < 0 and self.truncated[previous]:
                    # the E that closed the attempt was cut off; a later one (a complete copy,
                    # from an overlapping file) replaces it
                    out["primary"][last_e] = row
                    out["bits"][last_e] |= _B_TRUNCATED
                    continue
                if (
                    previous >= 0
                    and s_row < 0
                    and start[row] == start[previous]
                    and end[row] == end[previous]
                ):  # the same end logged twice: one attempt
                    if out["dup"][last_e] < 0:
                        out["dup"][last_e] = row
                    out["bits"][last_e] |= _B_DUP_END
                    continue
                emit(_K_E, row, 0)
                last_e = len(out["group"]) - 1
            elif kind == _S:
                s_row = row
                n_s += 1
            elif kind == _Q:
                first_q = row if first_q < 0 else first_q
                last_q = row
                q_in_attempt = True
            elif kind in (_D, _A):
                d_seen |= kind == _D
                a_seen |= kind == _A
                closer = row
            elif kind == _R:
                self.counts["rerun_records"] += 1
                last_e = -1
                if s_row >= 0:
                    emit(_K_R, row, _B_RERUN)
                else:  # the attempt it ends left no S in the log
                    number += 1
                    pending |= _B_UNLOGGED
        if s_row >= 0 or (closer >= 0 and (len(out["group"]) == first or q_in_attempt)):
            if closer >= 0:
                emit(_K_A if rtype[closer] == _A else _K_D, closer, 0)
            else:
                emit(_K_S, s_row, 0)
        elif closer >= 0:
            self.counts["records_after_end"] += 1
        elif q_in_attempt:
            emit(_K_Q, last_q, 0)
        last = len(out["group"]) - 1
        for i in range(first, last + 1):
            out["total"][i] = number
            if i < last:
                out["bits"][i] |= _B_LATER


def _split_by_ctime(
    rows: list[int], ctime: Mapping[int, int] | Sequence[int]
) -> list[tuple[int, list[int]]]:
    """Split one id's records by ``ctime``; records without one join the next (else previous)."""
    filled = [ctime[r] for r in rows]
    following = NA
    for i in range(len(filled) - 1, -1, -1):
        if filled[i] == NA:
            filled[i] = following
        else:
            following = filled[i]
    preceding = NA
    for i, value in enumerate(filled):
        if value == NA:
            filled[i] = preceding
        else:
            preceding = value
    parts: dict[int, list[int]] = {}
    for row, value in zip(rows, filled, strict=True):
        parts.setdefault(value, []).append(row)
    return list(parts.items())
