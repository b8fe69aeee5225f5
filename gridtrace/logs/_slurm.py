"""The Slurm ``sacct`` reader: ``--parsable2`` dumps into ``records`` and ``jobs``.

The expected export is the one Open XDMoD's ``xdmod-slurm-helper`` makes::

    TZ=UTC sacct --allusers --parsable2 --noheader --allocations --duplicates
        --format jobid,jobidraw,cluster,partition,qos,account,group,gid,user,uid,submit,eligible,
                 start,end,elapsed,exitcode,state,nnodes,ncpus,reqcpus,reqmem,reqtres,alloctres,
                 timelimit,nodelist,jobname

that is one line per job allocation, fields separated by ``|``, no header. A file may also start
with the header line ``sacct`` prints without ``--noheader`` (recognised by its field names, so
any ``--format`` works: fields are then taken by name), use another delimiter
(``--delimiter``), or hold step lines (``123.batch``, ``123.0``) when ``--allocations`` was left
out. Without a header line the 26 fields above (:data:`SLURM_FIELDS`) are assumed; pass
``header=`` to name the fields of another header-less layout.

Reading is two steps, like every format of the registry: :func:`tokenize_slurm_file` turns one
file into ``records`` (record type ``J`` for job/allocation lines, ``STEP`` for step lines, ``H``
for a header line; ``attrs`` maps the field names onto the values as written) and
``quarantine`` (blank lines, lines with too few fields, or too many when the job name is not the
last field, lines without a JobID); :func:`assemble_slurm` turns the records into ``jobs``.
Splitting, time, duration, TRES and memory parsing are vectorised (pyarrow compute, numpy,
pandas), or done by the numba kernel of :mod:`gridtrace.logs._slurm_fast` for inputs large
enough to load it (the same tables either way); Python runs per job only to expand array
ranges and host lists (cached per distinct value) and to attach flags.

Time zone
---------
sacct prints local times without an offset, so a time in the hour a clock falls back is
ambiguous. :func:`assemble_slurm` therefore needs ``tz`` (an IANA zone such as ``"UTC"`` or
``"America/New_York"``): times are localised with :mod:`zoneinfo`, an ambiguous time takes its
first (summer) occurrence with flag ``DST_AMBIGUOUS``, a time in a spring-forward gap is shifted
one hour later with flag ``DST_GAP``. Without ``tz`` it raises :class:`ConfigError` (pass
``tz``, or re-export with ``TZ=UTC sacct ...``), unless every time in the files carries its own
offset (``Z`` or ``+01:00``), in which case the offsets are used. XDMoD's helper sets
``TZ=UTC``, so its exports are read with ``tz="UTC"``.

Jobs (``shared/reference/parsers.md`` §8, Slurm column)
-------------------------------------------------------
* One row per execution attempt. With ``--duplicates`` a requeued job has one line per attempt,
  all with the same JobID; they become attempts 0, 1, … in submit order (then line order), the
  earlier ones with state ``REQUEUED``. ``submit_time`` is the first attempt's Submit,
  ``queue_time`` this attempt's Submit (Slurm resets it at a requeue), ``wait_s`` = start −
  queue_time, ``run_s`` = end − start, ``walltime_used_s`` = Elapsed, ``walltime_req_s`` =
  Timelimit (``UNLIMITED``, ``Partition_Limit`` → null).
* JobID ``123_4`` → ``job_seq`` 123, ``array_index`` 4. A range ``123_[1,4-9%2]`` (pending array
  tasks, printed as one line) is **expanded** into one row per index, as XDMoD does (its fixture
  ``accounting-logs-with-job-arrays`` expects ``[1, 4, 5, …, 9]``), each flagged
  ``ARRAY_RANGE_EXPANDED``; the ``%`` throttle is dropped.
* Rows with the same JobID, Submit, Start and End (files that overlap, array ranges that
  overlap) are not requeues: each keeps its own state and an attempt number, flagged
  ``DUPLICATE``; nothing is dropped.
* Step lines are folded into their job (the attempt running when the step started): the job's
  ``mem_used_bytes`` and ``vmem_used_bytes`` are the maxima of ``MaxRSS``/``MaxVMSize`` over the
  job line and its steps, when those fields were exported. Steps without a job line stay in
  ``records`` only (counted in ``info["slurm_orphan_steps"]``).
* ``state`` is the State's first word. ``CANCELLED by 500`` → CANCELLED with flag
  ``CANCELLED_BY`` (the full text, with the uid, stays in the ``records`` attrs); a cancelled job
  that never started is ``DELETED``. NODE_FAIL and PREEMPTED are kept as states; OUT_OF_MEMORY,
  BOOT_FAIL and SPECIAL_EXIT become FAILED and DEADLINE becomes TIMEOUT, each with a flag of its
  own name; SUSPENDED and RESIZING become RUNNING with their flag; an unknown state is UNKNOWN
  with flag ``STATE_NONSTANDARD``.
* Not ended (RUNNING, PENDING, or End ``Unknown``): no ``end_time``/``run_s``; a time in End of
  such a job (sacct prints the window end) is ignored with flag ``END_NOT_FINAL``.
* ``ExitCode`` ``0:15`` → ``exit_code`` 0, ``exit_signal`` 15.
* ``NNodes``/``NCPUS`` → ``nodes_alloc``/``cores_alloc`` (for a job that never started they are
  the request: ``nodes_req``/``cores_req`` then); ``ReqCPUS`` → ``cores_req``; ``ReqTRES``
  ``node=`` → ``nodes_req``, ``gres/gpu`` → ``gpus_req``; ``AllocTRES`` ``gres/gpu`` →
  ``gpus_alloc``; ``NodeList`` ``node[01-03,07]`` → ``exec_hosts`` (``None assigned`` → null).
* ``ReqMem`` (K/M/G/T/P, powers of 1024, M when no unit): a ``c`` suffix (old Slurm) is per CPU
  and is multiplied by the cores (flag ``MEM_PER_CPU``), ``n`` per node, multiplied by the nodes
  (flag ``MEM_PER_NODE``); no suffix is the job's total. Old Slurm sometimes leaks its per-CPU
  bit (2³¹) into the number (``2147486648Mn`` = 3000 MB per CPU): it is removed, the value
  taken per CPU, with flags ``MEM_PER_CPU`` and ``MEM_FLAG_BIT``. ``0`` (all of a node's memory)
  → null with flag ``MEM_REQ_ALL``.

Every other value the reader decides is flagged too: a fallback (``CORES_REQ_FROM_NCPUS``,
``NODES_REQ_FROM_NNODES``, ``SUBMIT_FROM_FIRST_ATTEMPT``), a conflict between fields resolved
(``CORES_REQ_CONFLICT``, ``CORES_ALLOC_CONFLICT``, ``NODES_ALLOC_CONFLICT``,
``MEM_REQ_CONFLICT`` against ReqTRES ``mem=``), a unit assumed (``MEM_UNIT_ASSUMED``,
``MEM_USED_UNIT_ASSUMED``), a logged time ignored (``END_NOT_FINAL``, ``START_NOT_FINAL``), a
value that cannot be read (``VALUE_UNREADABLE``, ``JOBID_NONSTANDARD``, ``ARRAY_RANGE_UNPARSED``,
``NODELIST_UNPARSED``). :data:`FLAGS` says what each flag means.

Damaged lines
-------------
* A line holding NUL bytes (what a crash or a log rotation leaves) is a fragment: quarantined,
  never a job; ``info["nul_lines"]`` and ``info["nul_bytes"]`` count them.
* Bytes that are not UTF-8 are decoded as Windows-1252 (else Latin-1), flag ``NON_UTF8`` on the
  record and the job, the original bytes in ``records.raw``.
* A line ending in CR LF loses its CR (record flag ``CRLF``).
* The file's last line without a line end: with all its fields it is read (flag ``NO_NEWLINE``:
  its last field may be cut); with fewer (a crash cut it) the fields before the last one present
  are kept and the others are null (flag ``TRUNCATED``, bytes in ``records.raw``; state UNKNOWN
  unless State survived), or it is quarantined when its JobID did not survive.
* A line repeating an earlier one field for field (a copied or overlapping export) makes no job:
  the first copy's job is flagged ``DUPLICATE_LINE``, the later copies stay in ``records`` with
  that flag (``info["duplicate_lines"]``).

``records``: ``stamp`` is the End field as logged (sacct has no record stamp of its own);
``stamp_utc`` is left null.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError
from gridtrace.logs import _slurm_fast
from gridtrace.logs._attrs import append_flag, flag_array, flag_mask, repeated_rows
from gridtrace.logs._base import (
    FileParse,
    ParseResult,
    dominant_offset,
    parts_quarantine,
    parts_records,
    result_of_parts,
)
from gridtrace.logs._columnar import (
    as_text,
    fitted_numbers,
    int_or_null,
    quarantine_table,
    records_table,
)
from gridtrace.logs._io import StrPath
from gridtrace.logs._prefilter import may_repeat
from gridtrace.logs._stream import (
    DEFAULT_CHUNK_BYTES,
    Chunk,
    LineFormat,
    RangeSplit,
    file_reader,
    file_tokenizer,
)
from gridtrace.logs._text import NUL_FRAGMENT_REASON, nul_fragment_counts, nul_lines, split_lines
from gridtrace.schema import JOBS

__all__ = [
    "FLAGS",
    "SLURM_FIELDS",
    "assemble_slurm",
    "expand_array_ids",
    "expand_hostlist",
    "looks_like_slurm",
    "read_slurm",
    "tokenize_slurm_file",
]

FLAGS: Mapping[str, str] = {
    # the line (records; copied to the job made from it)
    "NON_UTF8": (
        "the line is not UTF-8: decoded as Windows-1252 (Latin-1 where it has no character); "
        "the original bytes are in records.raw"
    ),
    "CRLF": "records: the line ended in CR LF (a Windows copy); the CR was removed",
    "NO_NEWLINE": (
        "the file's last line has no line end but all its fields: read as written, though its "
        "last field (JobName in XDMoD's layout) may have been cut short"
    ),
    "TRUNCATED": (
        "the file's last line has no line end and too few fields (a crash cut it): the fields "
        "before the last one present are kept, the rest are null, and the state is UNKNOWN "
        "unless the State field survived; the bytes are in records.raw"
    ),
    "DUPLICATE_LINE": (
        "the line was written more than once, field for field (a copied or overlapping "
        "export): the job is made from the first copy; each later copy stays in records with "
        "this flag and makes no job"
    ),
    # ids, attempts, arrays, steps
    "JOBID_NONSTANDARD": "the JobID is not NNN[_idx][.step]: job_seq is null, the key is the text",
    "ARRAY_RANGE_EXPANDED": (
        "the line stood for a range of array tasks (123_[1-3]): one row per index, as XDMoD "
        "does; the % throttle is dropped"
    ),
    "ARRAY_RANGE_UNPARSED": "the array range could not be read: one row, array_index null",
    "DUPLICATE": (
        "another row has the same JobID, Submit, Start and End (overlapping exports or array "
        "ranges) but differs elsewhere: not a requeue, both rows are kept with their own state"
    ),
    "SUBMIT_FROM_FIRST_ATTEMPT": (
        "a later attempt of a requeued job: submit_time is the first attempt's Submit (Slurm "
        "resets Submit at a requeue); this attempt's own Submit is queue_time"
    ),
    "STATE_WAS_*": (
        "an earlier attempt of a requeued job, logged with the state the suffix names: its "
        "state is REQUEUED"
    ),
    "STEPS_FOLDED": (
        "mem_used_bytes/vmem_used_bytes are the maxima over the job line and its step lines "
        "(each step goes to the attempt running when it started, else the last attempt)"
    ),
    # states
    "CANCELLED_BY": "State was 'CANCELLED by <uid>': state CANCELLED (the uid stays in records)",
    "CANCELLED_NOT_STARTED": "State CANCELLED but the job never started: state DELETED",
    "OUT_OF_MEMORY": "State OUT_OF_MEMORY: state FAILED",
    "BOOT_FAIL": "State BOOT_FAIL: state FAILED",
    "SPECIAL_EXIT": "State SPECIAL_EXIT: state FAILED",
    "DEADLINE": "State DEADLINE: state TIMEOUT",
    "REVOKED": "State REVOKED (a federated sibling ran instead): state CANCELLED",
    "SUSPENDED": "State SUSPENDED: state RUNNING",
    "RESIZING": "State RESIZING: state RUNNING",
    "STATE_NONSTANDARD": "State is none of Slurm's job states: state UNKNOWN",
    "END_UNKNOWN": (
        "End is Unknown although State says the job ended: state RUNNING if it started, else "
        "PENDING, no end_time"
    ),
    "END_NOT_FINAL": (
        "a job still running or pending: the time in End (sacct prints the window end) is "
        "ignored, end_time and run_s are null"
    ),
    "START_NOT_FINAL": (
        "a pending job: the time in Start (sacct's expected start) is ignored, start_time is null"
    ),
    # times
    "DST_AMBIGUOUS": (
        "a local time in the hour the clock falls back: its first (summer) occurrence is taken"
    ),
    "DST_GAP": "a local time in the hour the clock springs forward: shifted one hour later",
    "WALLTIME_MISMATCH": "|Elapsed - (end - start)| > 60 s: run_s is end - start, Elapsed kept",
    "VALUE_UNREADABLE": (
        "a time, duration or count field holds text that is not one (nor Unknown, None, "
        "UNLIMITED, Partition_Limit), or a number too large for its column: that value is null"
    ),
    # sizes
    "CORES_REQ_FROM_NCPUS": "never started and no ReqCPUS: cores_req is NCPUS (the request then)",
    "NODES_REQ_FROM_NNODES": (
        "never started and no node= in ReqTRES: nodes_req is NNodes (the request then)"
    ),
    "CORES_REQ_CONFLICT": "ReqCPUS and ReqTRES cpu= differ: cores_req is ReqCPUS",
    "CORES_ALLOC_CONFLICT": "NCPUS and AllocTRES cpu= differ: cores_alloc is NCPUS",
    "NODES_ALLOC_CONFLICT": (
        "NNodes differs from AllocTRES node= or from the hosts in NodeList: nodes_alloc is "
        "NNodes, exec_hosts the NodeList"
    ),
    "NODELIST_UNPARSED": "NodeList could not be expanded: exec_hosts is null",
    # memory
    "MEM_PER_CPU": (
        "ReqMem was per CPU (suffix c, or the 2^31 bit): mem_req_bytes is it times the "
        "allocated cores (the requested ones for a job that did not start)"
    ),
    "MEM_PER_NODE": (
        "ReqMem was per node (suffix n): mem_req_bytes is it times the allocated nodes (the "
        "requested ones for a job that did not start)"
    ),
    "MEM_FLAG_BIT": (
        "ReqMem held old Slurm's per-CPU bit (2^31): removed, and the value taken per CPU"
    ),
    "MEM_REQ_ALL": "ReqMem 0 (all of a node's memory): mem_req_bytes is null",
    "MEM_SCOPE_UNKNOWN": "ReqMem per CPU or node without a count to scale by: mem_req_bytes null",
    "MEM_UNIT_ASSUMED": "ReqMem has no unit: megabytes assumed (sacct's default unit)",
    "MEM_REQ_CONFLICT": (
        "mem_req_bytes from ReqMem differs by more than 1 % from ReqTRES mem=: ReqMem kept"
    ),
    "MEM_USED_UNIT_ASSUMED": "MaxRSS or MaxVMSize is a number without a unit: bytes assumed",
}
"""Every flag this reader sets on a row, with what it means (see ``flag_meanings``)."""

logger = library_logger(__name__)

_pc: Any = pc
_pa: Any = pa
Arr: TypeAlias = Any
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
Bool = npt.NDArray[np.bool_]

SLURM_FIELDS: tuple[str, ...] = (
    "JobID",
    "JobIDRaw",
    "Cluster",
    "Partition",
    "QOS",
    "Account",
    "Group",
    "GID",
    "User",
    "UID",
    "Submit",
    "Eligible",
    "Start",
    "End",
    "Elapsed",
    "ExitCode",
    "State",
    "NNodes",
    "NCPUS",
    "ReqCPUS",
    "ReqMem",
    "ReqTRES",
    "AllocTRES",
    "Timelimit",
    "NodeList",
    "JobName",
)
"""The 26 fields of XDMoD's export, in file order: the layout assumed without a header line."""

# sacct's own spelling of the fields gridtrace reads, by lower-case name
_CANONICAL = {name.lower(): name for name in (*SLURM_FIELDS, "MaxRSS", "MaxVMSize", "TotalCPU")}

_TIME = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"
_OFFSET = r"(?:Z|[+-]\d\d:?\d\d)$"
_DURATION = r"^(?:(?:(?P<d>\d+)-)?(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d+)(?:\.(?P<f>\d+))?$"
_UNITS = {"": 2**20, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}
_MEM = r"^(?P<v>\d+(?:\.\d+)?)(?P<u>[KMGTP]?)(?P<s>[cn]?)$"
_PER_CPU_BIT = 2**31

_STATE_MAP = {
    "COMPLETED": ("COMPLETED", None),
    "FAILED": ("FAILED", None),
    "CANCELLED": ("CANCELLED", None),
    "TIMEOUT": ("TIMEOUT", None),
    "REQUEUED": ("REQUEUED", None),
    "RUNNING": ("RUNNING", None),
    "PENDING": ("PENDING", None),
    "NODE_FAIL": ("NODE_FAIL", None),
    "PREEMPTED": ("PREEMPTED", None),
    "OUT_OF_MEMORY": ("FAILED", "OUT_OF_MEMORY"),
    "BOOT_FAIL": ("FAILED", "BOOT_FAIL"),
    "SPECIAL_EXIT": ("FAILED", "SPECIAL_EXIT"),
    "DEADLINE": ("TIMEOUT", "DEADLINE"),
    "SUSPENDED": ("RUNNING", "SUSPENDED"),
    "RESIZING": ("RUNNING", "RESIZING"),
    "REVOKED": ("CANCELLED", "REVOKED"),
}
_NOT_ENDED = frozenset({"RUNNING", "PENDING"})


# --------------------------------------------------------------------------- small parsers


def _hostlist_ranges(body: str) -> list[str]:
    out: list[str] = []
    for part in body.split(","):
        if "-" in part:
            lo, hi = part.split("-", 1)
            width = len(lo)
            out.extend(str(i).zfill(width) for i in range(int(lo), int(hi) + 1))
        else:
            out.append(part)
    return out


def expand_hostlist(text: str) -> list[str]:
    """Expand a Slurm host list: ``node[01-03,07],gpu1`` → ``[node01, …, node07, gpu1]``.

    Zero padding is kept, several bracket groups in one name give their product
    (``r[1-2]n[1-2]`` → 4 hosts); ``None assigned`` and the empty string give ``[]``.

    Raises
    ------
    ValueError
        If a bracket is not closed or a range bound is not a number.
    """
    text = text.strip()
    if not text or text == "None assigned":
        return []
    hosts: list[str] = []
    depth = 0
    start = 0
    names: list[str] = []
    for i, char in enumerate(text):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "," and depth == 0:
            names.append(text[start:i])
            start = i + 1
    names.append(text[start:])
    if depth:
        msg = f"unbalanced brackets in host list {text!r}"
        raise ValueError(msg)
    for name in names:
        pieces = re.split(r"\[([^\]]*)\]", name)
        choices = [
            [piece] if k % 2 == 0 else _hostlist_ranges(piece) for k, piece in enumerate(pieces)
        ]
        hosts.extend("".join(combo) for combo in product(*choices))
    return hosts


def expand_array_ids(text: str) -> list[int]:
    """Return the indices of an array range as sacct prints it: ``[1,4-6%2]`` → ``[1, 4, 5, 6]``.

    The brackets are optional, the ``%`` throttle and ``:step`` are honoured (``1-7:3`` →
    1, 4, 7).

    Raises
    ------
    ValueError
        If a part is not a number or a range.
    """
    body = text.strip().removeprefix("[").removesuffix("]").split("%", 1)[0]
    out: list[int] = []
    for part in body.split(","):
        step = 1
        if ":" in part:
            part, step_text = part.split(":", 1)
            step = int(step_text)
        if "-" in part:
            lo, hi = part.split("-", 1)
            out.extend(range(int(lo), int(hi) + 1, max(step, 1)))
        else:
            out.append(int(part))
    return out


def _numpy(array: Arr, dtype: Any = np.float64) -> npt.NDArray[Any]:
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=dtype)


def _floats(array: Arr) -> F64:
    """Numbers of a string array; anything not a number is NaN."""
    numeric = _pc.match_substring_regex(array, r"^\s*[-+]?\d+(?:\.\d+)?\s*$")
    # blanks around the number are allowed by the test above, not by Arrow's cast
    cleaned = _pc.utf8_trim_whitespace(_pc.if_else(numeric, array, None))
    return _numpy(cleaned.cast(pa.float64()).fill_null(np.nan))


def _digit_floats(array: Arr) -> F64:
    """Numbers of a string array of ASCII digits (``""`` as 0; NaN where null).

    What :func:`_floats` gives on such text, without its test of every value.
    """
    return _numpy(
        _pc.if_else(_pc.equal(array, ""), "0", array).cast(pa.float64()).fill_null(np.nan)
    )


def _durations(array: Arr) -> F64:
    """``[DD-][HH:]MM:SS[.ff]`` → seconds (NaN for UNLIMITED, Partition_Limit, blanks, ...)."""
    parts = _pc.extract_regex(_pc.fill_null(array, ""), _DURATION)
    valid = _numpy(_pc.is_valid(parts), bool)
    total = np.zeros(len(array))
    # the groups are digits (RE2's \d is ASCII), or empty when they did not take part
    for name, scale in (("d", 86400.0), ("h", 3600.0), ("m", 60.0), ("s", 1.0)):
        total += _digit_floats(_pc.struct_field(parts, name)) * scale
    fraction = _pc.struct_field(parts, "f")
    frac = _numpy(
        _pc.binary_join_element_wise("0.", _pc.if_else(_pc.equal(fraction, ""), "0", fraction), "")
        .cast(pa.float64())
        .fill_null(np.nan)
    )
    total += np.nan_to_num(frac)
    return np.where(valid, total, np.nan)


def _tres(array: Arr, key: str) -> F64:
    """Return the count of ``key`` in a TRES string (``cpu=8,gres/gpu=2``); NaN if absent."""
    text = _pc.fill_null(array, "")
    out = np.full(len(text), np.nan)
    # neither pattern matches a text without the key: read only the texts that hold it
    holds = _numpy(_pc.match_substring(text, key), bool)
    if not holds.any():
        return out
    rows = np.flatnonzero(holds)
    text = text.filter(_pa.array(holds))
    plain = _pc.extract_regex(text, rf"(?:^|,){re.escape(key)}=(?P<v>\d+)")
    first = _floats(_pc.fill_null(_pc.struct_field(plain, "v"), ""))
    out[rows] = first
    missing = np.isnan(first)
    if missing.any():
        typed = _pc.extract_regex(
            text.filter(_pa.array(missing)), rf"(?:^|,){re.escape(key)}:[^=,]*=(?P<v>\d+)"
        )
        out[rows[missing]] = _floats(_pc.fill_null(_pc.struct_field(typed, "v"), ""))
    return out


# --------------------------------------------------------------------------- tokeniser


def _is_header(fields: Sequence[str]) -> bool:
    names = {f.strip().lower() for f in fields}
    return "jobid" in names and bool(names & {"state", "submit", "jobidraw", "start"})


def looks_like_slurm(head: bytes) -> bool:
    """Whether the first bytes of a (decompressed) file look like a ``sacct --parsable2`` dump.

    True for a header line naming JobID, or when the first complete lines all have 26
    ``|``-separated fields (more when the job name holds ``|``) with a JobID and an ISO time.
    """
    lines = [line for line in head.split(b"\n")[:50] if line.strip()]
    if len(lines) > 1 and not head.endswith(b"\n"):
        lines = lines[:-1]
    if not lines:
        return False
    first = lines[0].decode("latin-1").split("|")
    if _is_header(first):
        return True
    time = re.compile(_TIME.encode())
    job = re.compile(rb"^\d+(?:[_+][\d\[\],%:-]+)?(?:\.[\w-]+)?$")
    for line in lines:
        fields = line.split(b"|")
        if len(fields) < len(SLURM_FIELDS) or not job.match(fields[0]):
            return False
        if not time.match(fields[10]):
            return False
    return True


_CUT_REASON = (
    "the file's last line has no line end and was cut short before its JobID was complete: "
    "nothing to recover"
)


def _repeat(value: str, n: int) -> Arr:
    return _pa.array([value], pa.string()).take(_pa.array(np.zeros(n, dtype=np.int32)))


@dataclass
class _SlurmState:
    """What a Slurm file's chunks share: the delimiter and the field order (from line 1)."""

    delimiter: str = "|"
    header: Sequence[str] | None = None  # the field names given by the caller
    names: list[str] | None = None  # the field order, decided by the first chunk
    header_line: bool = False  # line 1 is a header line


def _field_order(state: _SlurmState, text: Arr, nul: Bool) -> None:
    """Decide the field order of a file from the caller's header, else its first line."""
    if state.header is not None:
        state.names = [_CANONICAL.get(h.strip().lower(), h.strip()) for h in state.header]
    elif len(text) and not nul[0] and _is_header(str(text[0].as_py()).split(state.delimiter)):
        state.names = [
            _CANONICAL.get(h.strip().lower(), h.strip())
            for h in str(text[0].as_py()).split(state.delimiter)
        ]
        state.header_line = True
    else:
        state.names = list(SLURM_FIELDS)


def slurm_stream(
    path: StrPath,
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    delimiter: str = "|",
    header: Sequence[str] | None = None,
) -> LineFormat[_SlurmState]:
    """Return the Slurm format of one file for the streaming core, with the caller's layout.

    Parameters
    ----------
    path : str or path-like
        The file (not read here).
    chunk_bytes : int
        Decompressed bytes per chunk (not needed by the spec; the core's signature).
    delimiter : str, default "|"
        The field separator.
    header : sequence of str, optional
        The field names of a file without a header line.

    Returns
    -------
    LineFormat
        For :func:`~gridtrace.logs._stream.tokenize_stream` on that file.

    Raises
    ------
    ConfigError
        If ``delimiter`` is empty.
    """
    if not delimiter:
        raise ConfigError("the delimiter must not be empty")
    return LineFormat("slurm", lambda: _SlurmState(delimiter, header), _tokenize_slurm_chunk)


tokenize_slurm_file = file_tokenizer(
    "slurm",
    slurm_stream,
    what="one ``sacct --parsable2`` file",
    options=["delimiter", "header"],
    options_doc="""
        delimiter : str, default "|"
            The field separator (sacct's ``--delimiter``; may be several characters).
        header : sequence of str, optional
            The field names of a file without a header line. Default: a header line when the
            first line is one (recognised by its field names), else :data:`SLURM_FIELDS`.
    """,
    rows="""
        header, job or step line (when the last field is JobName, a job name holding the
        delimiter is kept whole: the line is split at most n − 1 times)
    """,
)


def _tokenize_slurm_chunk(
    chunk: Chunk, state: _SlurmState, *, site: str, src_file: str
) -> tuple[pa.Table, pa.Table]:
    """Tokenise one chunk of a Slurm file: its ``records`` and ``quarantine`` rows.

    A plain chunk (every line with its fields and a JobID, UTF-8, no CR nor NUL) is split by the
    kernel straight into the values' buffers when it is loaded; any other by the reference.
    """
    plain = _tokenize_plain(chunk, state, site=site, src_file=src_file)
    if plain is not None:
        return plain
    data = chunk.data
    delimiter = state.delimiter
    base = chunk.first_line - 1  # lines before the chunk
    raw_lines, crlf, no_newline = split_lines(data)
    nul = nul_lines(raw_lines, data)
    binary = _pa.array(raw_lines, pa.binary())
    text, non_utf8 = as_text(binary)

    if state.names is None:  # the file's first chunk
        _field_order(state, text, nul)
    names: list[str] = state.names or []
    header_line = state.header_line and chunk.first_line == 1
    first_row = 1 if header_line else 0
    n_fields = len(names)
    name_last = names[-1] == "JobName"
    job_pos = names.index("JobID") if "JobID" in names else 0

    body = text.slice(first_row)
    n_body = len(body)
    body_nul = nul[first_row:]
    max_splits = n_fields - 1 if name_last else None
    tokens = _pc.split_pattern(body, delimiter, max_splits=max_splits)
    counts = _numpy(_pc.list_value_length(tokens), np.int64)
    blank = _numpy(_pc.equal(_pc.utf8_trim_whitespace(body), ""), bool)
    flat = _pc.list_flatten(tokens)
    starts = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    first_tokens = (
        flat.take(_pa.array(np.minimum(starts[:-1], max(len(flat) - 1, 0))))
        if len(flat)
        else _pa.array([], pa.string())
    )
    no_id = ~blank & (counts >= 1)
    if len(first_tokens):
        no_id &= _numpy(_pc.equal(_pc.utf8_trim_whitespace(first_tokens), ""), bool)
    good = (counts == n_fields) & ~blank & ~no_id & ~body_nul

    # the last line without a line end: complete (flag NO_NEWLINE), or cut short by a crash
    # (flag TRUNCATED: the fields before the last one present are kept, the rest are null)
    cut: list[str | None] | None = None
    last = n_body - 1
    damaged = not n_body or good[last] or blank[last] or body_nul[last]
    if no_newline and not damaged and counts[last] < n_fields:
        present = tokens[last].as_py()[:-1]  # the last field present may be cut short
        if job_pos < len(present) and present[job_pos].strip():
            cut = [*present, *([None] * (n_fields - len(present)))]

    reasons: dict[int, str] = {}
    for j in np.flatnonzero(~good):
        if cut is not None and j == last:
            continue
        if body_nul[j]:
            reasons[int(j)] = NUL_FRAGMENT_REASON
        elif blank[j]:
            reasons[int(j)] = "blank line"
        elif no_newline and j == last and counts[j] < n_fields:
            reasons[int(j)] = _CUT_REASON
        elif counts[j] != n_fields:
            reasons[int(j)] = (
                f"expected {n_fields} {delimiter!r}-separated fields, found {int(counts[j])}"
            )
        else:
            reasons[int(j)] = "no JobID"

    rows = np.flatnonzero(good)
    keep = np.repeat(good, counts)
    if not len(flat):
        values = _pa.array([], pa.string())
    else:
        values = flat if keep.all() else flat.filter(_pa.array(keep))
    if cut is not None:
        rows = np.append(rows, last)
        values = pa.concat_arrays([values.cast(pa.string()), _pa.array(cut, pa.string())])
    n_rec = len(rows)
    job_ids = values.take(_pa.array(np.arange(job_pos, n_rec * n_fields, n_fields, dtype=np.int64)))
    is_step = _numpy(_pc.match_substring(job_ids, "."), bool)

    bad_text = non_utf8[first_row:][rows]
    truncated = np.zeros(n_rec, dtype=bool)
    last_line = np.zeros(n_rec, dtype=bool)
    if no_newline and n_rec and rows[-1] == last:
        last_line[-1] = True
        truncated[-1] = cut is not None
    keep_raw = bad_text | truncated
    if keep_raw.any():
        raw = binary.slice(first_row).take(_pa.array(rows))
        raw = _pc.if_else(_pa.array(keep_raw), raw, pa.scalar(None, pa.binary()))
    else:
        raw = pa.nulls(n_rec, pa.binary())
    bad_rows = sorted(reasons)
    quarantine = quarantine_table(
        site=site,
        source_format="slurm",
        src_file=src_file,
        lines=[i + 1 + first_row + base for i in bad_rows],
        reasons=[reasons[i] for i in bad_rows],
        raw=[raw_lines[i + first_row] for i in bad_rows],
    )
    lines = _Lines(rows + 1 + first_row + base, values, job_ids, is_step, raw)
    flags = [
        ("NON_UTF8", bad_text),
        ("CRLF", crlf[first_row:][rows]),
        ("TRUNCATED", truncated),
        ("NO_NEWLINE", last_line & ~truncated),
    ]
    records = _lines_records(names, lines, flags, site=site, src_file=src_file)
    if header_line:
        head = _header_record(
            names,
            site=site,
            src_file=src_file,
            line=1 + base,
            non_utf8=non_utf8[:1],
            crlf=crlf[:1],
            raw=binary.slice(0, 1),
        )
        records = pa.concat_tables([head, records])
    return records, quarantine


@dataclass
class _Lines:
    """A chunk's job and step lines, split: what ``records`` is made of."""

    line_no: I64
    values: Arr  # every line's fields, line after line
    job_ids: Arr
    is_step: Bool
    raw: Arr


def _lines_records(
    names: Sequence[str],
    lines: _Lines,
    flags: Sequence[tuple[str, Bool]],
    *,
    site: str,
    src_file: str,
) -> pa.Table:
    """Return the ``records`` rows of a chunk's split lines."""
    n_fields = len(names)
    n_rec = len(lines.line_no)
    attrs = _pa.MapArray.from_arrays(
        _pa.array(np.arange(0, (n_rec + 1) * n_fields, n_fields, dtype=np.int32)),
        _repeat_names(names, n_rec),
        lines.values,
    )
    record_type = _pc.if_else(_pa.array(lines.is_step), "STEP", "J")
    end_pos = names.index("End") if "End" in names else None
    stamp = (
        lines.values.take(_pa.array(np.arange(end_pos, n_rec * n_fields, n_fields, dtype=np.int64)))
        if end_pos is not None
        else pa.nulls(n_rec, pa.string())
    )
    return _records(
        site,
        src_file,
        lines.line_no,
        record_type,
        stamp,
        lines.job_ids,
        attrs,
        flag_array(n_rec, flags),
        lines.raw,
    )


def _header_record(
    names: Sequence[str],
    *,
    site: str,
    src_file: str,
    line: int,
    non_utf8: Bool,
    crlf: Bool,
    raw: Arr,
) -> pa.Table:
    """Return the ``records`` row of a header line: type ``H``, the field positions by name."""
    n_fields = len(names)
    return _records(
        site,
        src_file,
        np.array([line]),
        _pa.array(["H"]),
        pa.nulls(1, pa.string()),
        pa.nulls(1, pa.string()),
        _pa.MapArray.from_arrays(
            _pa.array([0, n_fields], pa.int32()),
            _pa.array(list(names), pa.string()),
            _pc.cast(_pa.array([str(i) for i in range(n_fields)]), pa.string()),
        ),
        flag_array(1, [("NON_UTF8", non_utf8), ("CRLF", crlf)]),
        _pc.if_else(_pa.array(non_utf8), raw, None),
    )


def _tokenize_plain(
    chunk: Chunk, state: _SlurmState, *, site: str, src_file: str
) -> tuple[pa.Table, pa.Table] | None:
    """Tokenise a plain chunk by the kernel; None when the chunk is not plain or too small.

    Plain: one-byte delimiter, UTF-8, no CR nor NUL byte, and every line (after a header line)
    with its fields and a JobID holding a printable ASCII character, so that no line is
    quarantined, none is repaired and none is blank. What it returns is what the reference
    returns for such a chunk, row for row.
    """
    data = chunk.data
    sep = state.delimiter.encode()
    no_newline = bool(data) and not data.endswith(b"\n")
    n_lines = chunk.lines  # the kernel checks it
    if (
        len(sep) != 1
        or sep == b"\n"
        or not n_lines
        or len(data) >= 2**31
        or not _slurm_fast.use_kernel(n_lines)
        or b"\r" in data
        or b"\x00" in data
        or not _is_utf8(data)
    ):
        return None
    base = chunk.first_line - 1
    if state.names is None:  # the file's first chunk
        first = data.split(b"\n", 1)[0].decode()
        _field_order(state, _pa.array([first], pa.string()), np.zeros(1, dtype=bool))
    names: list[str] = state.names or []
    header_line = state.header_line and chunk.first_line == 1
    start = data.index(b"\n") + 1 if header_line and b"\n" in data else 0
    n_body = n_lines - (1 if header_line else 0)
    if not n_body or (header_line and not start):
        return None
    n_fields = len(names)
    split = _slurm_fast.split_fields(
        data,
        start,
        n_body,
        sep[0],
        n_fields,
        name_last=names[-1] == "JobName",
        job_pos=names.index("JobID") if "JobID" in names else 0,
    )
    if split is None:
        return None
    job_pos = names.index("JobID") if "JobID" in names else 0
    values = split.values
    job_ids = values.take(_pa.array(np.arange(job_pos, n_body * n_fields, n_fields)))
    first_row = 1 if header_line else 0
    line_no = np.arange(1 + first_row + base, 1 + first_row + base + n_body, dtype=np.int64)
    lines = _Lines(line_no, values, job_ids, split.is_step, pa.nulls(n_body, pa.binary()))
    last_line = np.zeros(n_body, dtype=bool)
    last_line[-1] = no_newline
    records = _lines_records(
        names, lines, [("NO_NEWLINE", last_line)], site=site, src_file=src_file
    )
    if header_line:
        no = np.zeros(1, dtype=bool)
        head = _header_record(
            names,
            site=site,
            src_file=src_file,
            line=1 + base,
            non_utf8=no,
            crlf=no,
            raw=pa.nulls(1, pa.binary()),
        )
        records = pa.concat_tables([head, records])
    quarantine = quarantine_table(
        site=site, source_format="slurm", src_file=src_file, lines=[], reasons=[], raw=[]
    )
    return records, quarantine


def _is_utf8(data: bytes) -> bool:
    """Whether ``data`` is valid UTF-8 (ASCII at once)."""
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


_NAMES_MADE: dict[tuple[str, ...], Arr] = {}  # the longest run of names made, by layout
_NAMES_KEPT_BYTES = 16 << 20  # a longer run is not kept (a default chunk's takes ~2 MiB)


def _repeat_names(names: Sequence[str], n_rows: int) -> Arr:
    """Return the field names of ``n_rows`` rows, row after row, built from buffers.

    The chunks of a file have one layout and about as many rows: each takes a slice of the
    longest run made so far for its layout (a slice shares the buffers, so costs nothing).
    """
    layout = tuple(names)
    made = _NAMES_MADE.get(layout)
    if made is None or len(made) < n_rows * len(layout):
        made = _make_names(layout, n_rows + n_rows // 4)  # room for the chunks to come
        if made.nbytes > _NAMES_KEPT_BYTES:  # a huge chunk: not kept after it
            return made
        if len(_NAMES_MADE) > 8:  # a few layouts at once, at most
            _NAMES_MADE.clear()
        _NAMES_MADE[layout] = made
    return made.slice(0, n_rows * len(layout))


def _made_here(names: Sequence[str], keys: Arr) -> bool:
    """Whether ``keys`` is the start of the run of ``names`` this module made (so holds them).

    The run's buffers are never written after they are made: sharing them is proof enough.
    """
    made = _NAMES_MADE.get(tuple(names))
    if made is None or keys.offset or len(keys) > len(made) or keys.null_count:
        return False
    ours, theirs = made.buffers(), keys.buffers()
    return all(
        a is not None and b is not None and a.address == b.address
        for a, b in zip(ours[1:], theirs[1:], strict=True)
    )


def _make_names(names: Sequence[str], n_rows: int) -> Arr:
    """Return the field names of ``n_rows`` rows, row after row, built from buffers."""
    encoded = [name.encode() for name in names]
    row = b"".join(encoded)
    if n_rows * len(row) >= 2**31:  # beyond 32-bit offsets: the plain way
        return _pa.array(list(names), pa.string()).take(
            _pa.array(np.tile(np.arange(len(names)), n_rows))
        )
    starts = np.cumsum([0, *(len(e) for e in encoded)])[:-1]
    offsets = np.empty(n_rows * len(names) + 1, dtype=np.int32)
    offsets[:-1] = (np.arange(n_rows, dtype=np.int32)[:, None] * len(row) + starts).ravel()
    offsets[-1] = n_rows * len(row)
    data = np.tile(np.frombuffer(row, dtype=np.uint8), n_rows)
    return _pa.StringArray.from_buffers(
        n_rows * len(names), _pa.py_buffer(offsets), _pa.py_buffer(data)
    )


SLURM_STREAM: LineFormat[_SlurmState] = LineFormat(
    "slurm", _SlurmState, _tokenize_slurm_chunk, split=RangeSplit(first_line_state=True)
)
"""The Slurm format (``|``-separated, field order from line 1) for the streaming core.

A big file is split anywhere: a range after the first starts from the state after line 1."""


def _records(
    site: str,
    src_file: str,
    lines: I64,
    record_type: Arr,
    stamp: Arr,
    job_id_raw: Arr,
    attrs: Arr,
    flags: Arr,
    raw: Arr,
) -> pa.Table:
    return records_table(
        site=site, source_format="slurm", src_file=src_file, lines=lines, record_type=record_type,
        job_id_raw=job_id_raw, attrs=attrs, flags=flags, raw=raw, stamp=stamp,
    )  # fmt: skip


# --------------------------------------------------------------------------- assembler


def _zone(tz: str) -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as err:
        msg = f"unknown time zone {tz!r}: give an IANA name such as 'UTC' or 'Europe/Paris'"
        raise ConfigError(msg) from err


class _Clock:
    """Turns sacct's offset-less times into UTC epochs in one zone, flagging DST trouble."""

    def __init__(self, tz: str | None) -> None:
        self.zone = None if tz is None else _zone(tz)
        self.utc = self.zone is not None and self.zone.key in {"UTC", "Etc/UTC", "Etc/GMT", "GMT"}

    def __call__(self, text: Arr) -> tuple[F64, Bool, Bool, F64]:
        """``(epoch, ambiguous, gap, offset)`` of a string array (NaN where not a time)."""
        return self.read(_Column.of(text), fast=False)

    def read(self, column: _Column, *, fast: bool) -> tuple[F64, Bool, Bool, F64]:
        """``(epoch, ambiguous, gap, offset)`` of a column; plain times by the kernel if fast."""
        if fast:
            naive, status = _slurm_fast.scan_times(column.view())
            is_time = status != _slurm_fast.TIME_NONE
            with_offset = np.zeros(len(naive), dtype=bool)
            declined = np.flatnonzero(status == _slurm_fast.TIME_DECLINED)
            if len(declined):
                is_time[declined], with_offset[declined], naive[declined] = _time_parts(
                    column.subset(declined)
                )
        else:
            is_time, with_offset, naive = _time_parts(column.array())
        n = len(naive)
        ambiguous = np.zeros(n, dtype=bool)
        gap = np.zeros(n, dtype=bool)
        offset = np.full(n, np.nan)
        epoch = np.full(n, np.nan)
        plain = is_time & ~with_offset & ~np.isnan(naive)
        # a time with an offset but no real date (0000-00-00T00:00:00Z) stays NaN: unreadable
        with_offset &= ~np.isnan(naive)
        if with_offset.any():
            stamps = pd.to_datetime(
                pd.Series(column.subset(np.flatnonzero(with_offset)).to_pylist()),
                utc=True,
                format="ISO8601",
                errors="coerce",  # an offset out of range: NaT, so NaN, so unreadable
            )
            since = (stamps - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(seconds=1)
            epoch[with_offset] = since.to_numpy(dtype=np.float64)
            offset[with_offset] = naive[with_offset] - epoch[with_offset]
        if not plain.any():
            return epoch, ambiguous, gap, offset
        if self.zone is None:
            msg = (
                "sacct times carry no time zone: pass tz (the zone sacct ran in, e.g. tz='UTC' or "
                "tz='America/New_York'), or re-export with `TZ=UTC sacct ...`"
            )
            raise ConfigError(msg)
        if self.utc:
            epoch[plain] = naive[plain]
            offset[plain] = 0.0
            return epoch, ambiguous, gap, offset
        local = pd.DatetimeIndex(pd.to_datetime(naive[plain], unit="s"))
        early = local.tz_localize(self.zone, ambiguous=np.ones(len(local), bool), nonexistent="NaT")
        late = local.tz_localize(self.zone, ambiguous=np.zeros(len(local), bool), nonexistent="NaT")
        shifted = local.tz_localize(
            self.zone, ambiguous=np.ones(len(local), bool), nonexistent=pd.Timedelta(hours=1)
        )
        early_missing = np.asarray(early.isna(), dtype=bool)
        gap[plain] = early_missing
        ambiguous[plain] = np.asarray(early != late, dtype=bool) & ~early_missing
        seconds = shifted.as_unit("s").asi8.astype(np.float64)
        epoch[plain] = seconds
        offset[plain] = naive[plain] - seconds
        return epoch, ambiguous, gap, offset


def _time_parts(text: Arr) -> tuple[Bool, Bool, F64]:
    """``(is a time, carries an offset, naive epoch seconds)`` of a string array."""
    text = _pc.fill_null(text, "")
    is_time = _numpy(_pc.match_substring_regex(text, _TIME), bool)
    with_offset = _numpy(_pc.match_substring_regex(text, _TIME + r"(?:\.\d+)?" + _OFFSET), bool)
    naive_ts = _pc.strptime(
        _pc.utf8_slice_codeunits(text, 0, 19),
        format="%Y-%m-%dT%H:%M:%S",
        unit="s",
        error_is_null=True,
    )
    naive = _numpy(naive_ts.cast(pa.int64()).cast(pa.float64()).fill_null(np.nan))
    return is_time, with_offset, naive


def _sizes(array: Arr, default_unit: int) -> tuple[F64, Bool]:
    """Read sizes: ``1234K``, ``2G``, ``512`` → bytes (powers of 1024; NaN if not a size).

    Also returns which values had no unit (``default_unit`` taken).
    """
    parts = _pc.extract_regex(_pc.fill_null(array, ""), r"^(?P<v>\d+(?:\.\d+)?)(?P<u>[KMGTP]?)$")
    value = _floats(_pc.fill_null(_pc.struct_field(parts, "v"), ""))
    unit = _pc.fill_null(_pc.struct_field(parts, "u"), "")
    bare = _numpy(_pc.equal(unit, ""), bool) & ~np.isnan(value)
    scale = np.full(len(value), float(default_unit))
    for name, size in _UNITS.items():
        if name:
            scale[_numpy(_pc.equal(unit, name), bool)] = size
    return value * scale, bare


def _unreadable(text: Arr | _Column, parsed: F64, words: tuple[str, ...]) -> Bool:
    """Say where a field holds text that is not blank, not in ``words`` and not in ``parsed``."""
    column = text if isinstance(text, _Column) else _Column.of(text)
    out = np.isnan(parsed)
    rows = np.flatnonzero(out)  # only a value not read can be unreadable
    if len(rows):
        trimmed = _pc.utf8_trim_whitespace(_pc.fill_null(column.subset(rows), ""))
        known = _numpy(_pc.is_in(trimmed, _pa.array(["", *words], pa.string())), bool)
        out[rows] = ~known
    return out


def _req_mem(text: Arr) -> tuple[F64, npt.NDArray[np.int8], npt.NDArray[np.int8]]:
    """ReqMem's ``(value, unit code, scope byte)``: units 0 none, 1..5 K..P; scope 0, c or n."""
    mem = _pc.extract_regex(_pc.fill_null(text, ""), _MEM)
    value = _floats(_pc.fill_null(_pc.struct_field(mem, "v"), ""))
    unit_text = _pc.fill_null(_pc.struct_field(mem, "u"), "")
    scope_text = _pc.fill_null(_pc.struct_field(mem, "s"), "")
    unit = np.zeros(len(value), dtype=np.int8)
    for code, letter in enumerate("KMGTP", start=1):
        unit[_numpy(_pc.equal(unit_text, letter), bool)] = code
    scope = np.zeros(len(value), dtype=np.int8)
    for letter in "cn":
        scope[_numpy(_pc.equal(scope_text, letter), bool)] = ord(letter)
    return value, unit, scope


def _tres_size(text: Arr, key: str) -> F64:
    """Return the size of the first ``key=`` entry of TRES lists, in bytes (megabytes when bare)."""
    entry = _pc.extract_regex(_pc.fill_null(text, ""), rf"(?:^|,){re.escape(key)}=(?P<v>[^,]+)")
    return _sizes(_pc.struct_field(entry, "v"), _UNITS["M"])[0]


def _exit_codes(text: Arr) -> tuple[F64, F64]:
    """``(exit code, signal)`` of ExitCode texts ``0:15``."""
    parts = _pc.extract_regex(_pc.fill_null(text, ""), r"^(?P<c>-?\d+):(?P<s>\d+)$")
    code = _floats(_pc.fill_null(_pc.struct_field(parts, "c"), ""))
    signal = _floats(_pc.fill_null(_pc.struct_field(parts, "s"), ""))
    return code, signal


def _redo(declined: Bool, column: _Column, outs: Sequence[npt.NDArray[Any]], ref: Any) -> None:
    """Read the values the kernel declined with the reference ``ref``, into ``outs``."""
    rows = np.flatnonzero(declined)
    if not len(rows):
        return
    again = ref(column.subset(rows))
    for out, values in zip(outs, again if isinstance(again, tuple) else (again,), strict=True):
        out[rows] = values


def _no_sizes(n: int) -> tuple[F64, Bool]:
    return np.full(n, np.nan), np.zeros(n, dtype=bool)


_JOBID = (
    r"^(?P<seq>\d+)(?:_(?:(?P<idx>\d+)|(?P<rng>\[[^\]]*\]|[\d,%:-]+)))?(?:\+(?P<het>\d+))?"
    r"(?:\.(?P<step>.*))?$"
)


def _lookup(table: pa.Table, key: str) -> Arr:
    return _Fields(table)[key]


def _layout(chunks: Sequence[Any]) -> list[str] | None:
    """Return the field names if every map of ``chunks`` has the same keys in order, else None.

    Compares the keys' bytes and lengths with numpy rather than building them as strings.
    """
    names: list[str] | None = None
    for chunk in chunks:
        offsets = _numpy(chunk.offsets, np.int64)
        width = int(offsets[1] - offsets[0])
        keys = chunk.keys
        if (
            not width
            or chunk.offset
            or offsets[0]
            or int(offsets[-1]) != len(keys)
            or keys.null_count
            or keys.type != pa.string()
            or not (np.diff(offsets) == width).all()
        ):
            return None
        if names is None:
            names = [str(k) for k in keys.slice(0, width).to_pylist()]
        if len(names) != width:
            return None
        if _made_here(names, keys):
            continue
        expected = [name.encode() for name in names]
        row_bytes = sum(len(e) for e in expected)
        buffers = keys.buffers()
        key_offsets = np.frombuffer(buffers[1], np.int32, count=keys.offset + len(keys) + 1)[
            keys.offset :
        ]
        lengths = np.diff(key_offsets).reshape(len(chunk), width)
        if not (lengths == np.array([len(e) for e in expected])).all():
            return None
        first = int(key_offsets[0])
        data = np.frombuffer(buffers[2], np.uint8)[first : first + row_bytes * len(chunk)]
        if (
            len(data) != row_bytes * len(chunk)
            or not (
                data.reshape(len(chunk), row_bytes) == np.frombuffer(b"".join(expected), np.uint8)
            ).all()
        ):
            return None
    return names


class _Fields:
    """Field access on ``attrs``: positional when every row has the same keys (one file layout)."""

    def __init__(self, table: pa.Table) -> None:
        self.column: Any = table.column("attrs")
        self.n = len(self.column)
        self.positions: dict[str, int] | None = None
        self._attrs: Any = None
        self._items: Any = None
        self._view: _slurm_fast.Text | None = None
        chunks: list[Any] = [c for c in self.column.chunks if len(c)]
        names = _layout(chunks) if chunks else None
        if names is not None:
            self.positions = {name: i for i, name in enumerate(names)}
            self.width = len(names)
            self._items = (
                chunks[0].items if len(chunks) == 1 else pa.concat_arrays([c.items for c in chunks])
            )

    @property
    def attrs(self) -> Any:
        """The ``attrs`` maps as one array (combined on first use)."""
        if self._attrs is None:
            self._attrs = self.column.combine_chunks()
        return self._attrs

    @property
    def items(self) -> Any:
        """The values of every map, row after row."""
        return self._items if self._items is not None else self.attrs.items

    def index(self, key: str) -> I64 | None:
        """Where each row's ``key`` value is in ``attrs.items`` (None: not positional or absent)."""
        if self.positions is None or key not in self.positions:
            return None
        return np.arange(self.positions[key], self.n * self.width, self.width, dtype=np.int64)

    def view(self) -> _slurm_fast.Text:
        """Return the bytes of ``attrs.items``, for the kernel (made once)."""
        if self._view is None:
            self._view = _slurm_fast.text_view(self.items)
        return self._view

    def names(self) -> set[str]:
        """Return the field names present in any row."""
        if self.positions is not None:
            return set(self.positions)
        if not self.n:
            return set()
        return {str(k) for k in _pc.unique(self.attrs.keys).to_pylist()}

    def __getitem__(self, key: str) -> Arr:
        if not self.n:
            return _pa.array([], pa.string())
        if self.positions is not None:
            if key not in self.positions:
                return pa.nulls(self.n, pa.string())
            where = np.arange(self.positions[key], self.n * self.width, self.width, dtype=np.int64)
            return self.items.take(_pa.array(where))
        return _pc.map_lookup(self.attrs, key, "first")


class _Column:
    """One field of the job rows: its text whole or for some rows, or its bytes for the kernel.

    Parameters
    ----------
    fields : _Fields or None
        The lines' fields (None: ``whole`` is the column).
    name : str
        The field.
    take : numpy.ndarray of int64 or None
        The line of each row (None: one row per line).
    whole : pyarrow.StringArray, optional
        The column, when already made.
    """

    def __init__(self, fields: _Fields | None, name: str, take: I64 | None, whole: Arr = None):
        self.fields = fields
        self.name = name
        self.take = take
        self.whole = whole
        self._view: _slurm_fast.Text | None = None

    @classmethod
    def of(cls, array: Arr) -> _Column:
        """Return the column of a string array."""
        return cls(None, "", None, array)

    def _index(self) -> I64 | None:
        index = None if self.fields is None else self.fields.index(self.name)
        return index if index is None or self.take is None else index[self.take]

    def array(self) -> Arr:
        """Return the whole column (made once)."""
        if self.whole is None:
            assert self.fields is not None
            values = self.fields[self.name]
            self.whole = values if self.take is None else values.take(_pa.array(self.take))
        return self.whole

    def subset(self, rows: I64) -> Arr:
        """Return the values of ``rows``."""
        index = self._index() if self.whole is None else None
        if index is not None:
            assert self.fields is not None
            return self.fields.items.take(_pa.array(index[rows]))
        return self.array().take(_pa.array(rows))

    def absent(self) -> Bool:
        """Where the value is null (a field cut off with the file's last line)."""
        index = self._index() if self.whole is None else None
        if index is not None:
            assert self.fields is not None
            view = self.fields.view()
            return ~view.valid[index]
        return _numpy(_pc.is_null(self.array()), bool)

    def view(self) -> _slurm_fast.Text:
        """Return the column's bytes for the kernel (made once)."""
        if self._view is None:
            index = self._index() if self.whole is None else None
            if index is not None:
                assert self.fields is not None
                view = self.fields.view()
                self._view = _slurm_fast.Text(view.data, view.offsets, view.valid, index)
            else:
                self._view = _slurm_fast.text_view(self.array())
        return self._view


def _ids(job_id: Arr) -> tuple[F64, F64, Arr, Arr]:
    """``(job_seq, array_index, range text, attempt key)`` of JobIDs (steps map to their job).

    The range texts (null where none) and the keys are string arrays.
    """
    text = _pc.fill_null(job_id, "")
    parts = _pc.extract_regex(text, _JOBID)
    seq = _floats(_pc.fill_null(_pc.struct_field(parts, "seq"), ""))
    idx = _floats(_pc.fill_null(_pc.struct_field(parts, "idx"), ""))
    rng = _pc.struct_field(parts, "rng")
    ranges = _pc.if_else(_pc.equal(_pc.fill_null(rng, ""), ""), None, rng)
    base = _pc.split_pattern(text, ".", max_splits=1)
    base = _pc.list_element(base, 0) if len(text) else text
    key = _pc.if_else(_pc.is_valid(parts), base, text)
    return seq, idx, ranges, key


# what the kernel reads in one pass over each row: (field, kind, TRES key)
_SCANNED = (
    ("JobID", _slurm_fast.KIND_JOB_ID, ""),
    *((name, _slurm_fast.KIND_TIME, "") for name in ("Submit", "Eligible", "Start", "End")),
    *((name, _slurm_fast.KIND_DURATION, "") for name in ("Elapsed", "Timelimit")),
    *((name, _slurm_fast.KIND_FLOAT, "") for name in ("NNodes", "NCPUS", "ReqCPUS")),
    *(("ReqTRES", _slurm_fast.KIND_TRES, key) for key in ("node", "cpu", "gres/gpu")),
    ("ReqTRES", _slurm_fast.KIND_TRES_SIZE, "mem"),  # next to its list: read in the same pass
    *(("AllocTRES", _slurm_fast.KIND_TRES, key) for key in ("node", "cpu", "gres/gpu")),
    ("ReqMem", _slurm_fast.KIND_REQ_MEM, ""),
    ("ExitCode", _slurm_fast.KIND_EXIT, ""),
)


class _LineScan:
    """What the kernel read of every line in one pass (their fields' bytes are adjacent)."""

    def __init__(self, fields: _Fields) -> None:
        positions = fields.positions or {}
        tasks = [task for task in _SCANNED if task[0] in positions]
        where = np.array([positions[name] for name, _, _ in tasks], dtype=np.int64)
        self.kinds = [(kind, _slurm_fast.tres_key(key) if key else 0) for _, kind, key in tasks]
        self.names = [name for name, _, _ in tasks]
        self.done = _slurm_fast.scan_rows(
            fields.view(), np.arange(fields.n, dtype=np.int64), where, fields.width, self.kinds
        )

    def attach(self, column: _Column, take: I64 | None) -> _Column:
        """Leave the column's values read in its view, where the ``_read_*`` functions find them.

        ``take`` is the line of each of the column's rows (None: one row per line).
        """
        for t, name in enumerate(self.names):
            if name == column.name:
                done = self.done.task(t)
                column.view().done[self.kinds[t]] = done if take is None else done.take(take)
        return column


def _read_ids(column: _Column, fast: bool) -> tuple[F64, F64, I64, list[str], Arr]:
    """``(job_seq, array_index, rows with a range, their range texts, attempt key)``."""
    if not fast:
        seq, idx, ranges, key = _ids(column.array())
        rows = np.flatnonzero(_numpy(_pc.is_valid(ranges), bool))
        return seq, idx, rows, ranges.take(_pa.array(rows)).to_pylist(), key
    seq, idx, declined = _slurm_fast.scan_job_ids(column.view())
    key = _pc.fill_null(column.array(), "")
    rows = np.flatnonzero(declined)
    if not len(rows):
        return seq, idx, rows, [], key
    seq[rows], idx[rows], ranges, again = _ids(column.subset(rows))
    key = _pc.replace_with_mask(key, _pa.array(declined), again)
    with_range = _numpy(_pc.is_valid(ranges), bool)
    return seq, idx, rows[with_range], ranges.filter(_pa.array(with_range)).to_pylist(), key


def _read_durations(column: _Column, fast: bool) -> F64:
    if not fast:
        return _durations(column.array())
    out, declined = _slurm_fast.scan_durations(column.view())
    _redo(declined, column, (out,), _durations)
    return out


def _read_floats(column: _Column, fast: bool) -> F64:
    if not fast:
        return _floats(column.array())
    out, declined = _slurm_fast.scan_floats(column.view())
    _redo(declined, column, (out,), _floats)
    return out


def _read_tres(column: _Column, keys: tuple[str, ...], fast: bool) -> list[F64]:
    if not fast:
        text = column.array()
        return [_tres(text, key) for key in keys]
    out, declined = _slurm_fast.scan_tres(column.view(), keys)
    counts = [np.ascontiguousarray(out[:, q]) for q in range(len(keys))]
    for q, key in enumerate(keys):
        _redo(declined[:, q], column, (counts[q],), lambda t, key=key: _tres(t, key))
    return counts


def _read_req_mem(
    column: _Column, fast: bool
) -> tuple[F64, npt.NDArray[np.int8], npt.NDArray[np.int8]]:
    if not fast:
        return _req_mem(column.array())
    value, unit, scope, declined = _slurm_fast.scan_req_mem(column.view())
    _redo(declined, column, (value, unit, scope), _req_mem)
    return value, unit, scope


def _read_tres_size(column: _Column, key: str, fast: bool) -> F64:
    if not fast:
        return _tres_size(column.array(), key)
    out, declined = _slurm_fast.scan_tres_size(column.view(), key)
    _redo(declined, column, (out,), lambda text: _tres_size(text, key))
    return out


def _read_exit_codes(column: _Column, fast: bool) -> tuple[F64, F64]:
    if not fast:
        return _exit_codes(column.array())
    code, signal, declined = _slurm_fast.scan_exit_codes(column.view())
    _redo(declined, column, (code, signal), _exit_codes)
    return code, signal


def assemble_slurm(parts: Sequence[FileParse], *, tz: str | None = None) -> ParseResult:
    """Assemble tokenised sacct files, given in reading order, into a :class:`ParseResult`.

    Parameters
    ----------
    parts : sequence of FileParse
        What :func:`tokenize_slurm_file` returned for each file.
    tz : str, optional
        The IANA zone sacct ran in (``"UTC"`` for XDMoD exports). Required unless every time in
        the files carries an offset; see the module docstring.

    Returns
    -------
    ParseResult
        ``info`` holds ``format``, ``tz``, ``slurm_clusters`` (names seen),
        ``slurm_steps`` (step lines), ``slurm_orphan_steps`` (steps without a job line) and
        ``slurm_array_ranges`` (range lines expanded).

    Raises
    ------
    ConfigError
        If ``tz`` is missing while times have no offset, or names no known zone.
    """
    clock = _Clock(tz)
    records = parts_records(parts)
    quarantine = parts_quarantine(parts)
    kinds = _numpy(records.column("record_type").combine_chunks(), object)
    is_data = (kinds == "J") | (kinds == "STEP")
    # a line's JobID and End are read from its attrs: only lines sharing both can be copies
    copies, repeated = repeated_rows(records.column("attrs"), may_repeat(records, is_data))
    if copies.any():
        flags = append_flag(records.column("flags"), copies, "DUPLICATE_LINE")
        records = records.set_column(records.schema.get_field_index("flags"), "flags", flags)
    job_rows = np.flatnonzero((kinds == "J") & ~copies)
    step_rows = np.flatnonzero((kinds == "STEP") & ~copies)
    # taking every row of the table, or none, copies it for nothing
    job_rec = records if len(job_rows) == records.num_rows else records.take(_pa.array(job_rows))
    step_rec = records.slice(0, 0) if not len(step_rows) else records.take(_pa.array(step_rows))
    jobs, info = _jobs(job_rec, step_rec, clock, repeated[job_rows])
    info["duplicate_lines"] = int(copies.sum())
    info.update(nul_fragment_counts(quarantine))
    tz_offset = dominant_offset(jobs)
    return result_of_parts(
        parts,
        records=records,
        jobs=jobs,
        quarantine=quarantine,
        tz_offset_s=tz_offset,
        info={"format": "slurm", "tz": tz, **info},
    )


def _jobs(
    rec: pa.Table, steps: pa.Table, clock: _Clock, repeated: Bool
) -> tuple[pa.Table, dict[str, Any]]:
    n_lines = rec.num_rows
    fields = _Fields(rec)
    fast = _slurm_fast.use_kernel(n_lines)
    scan = _LineScan(fields) if fast and fields.positions is not None else None
    id_column = _Column(fields, "JobID", None)
    if scan is not None:
        scan.attach(id_column, None)
    seq, idx, range_rows, range_text, keys = _read_ids(id_column, fast)

    # expand array ranges (123_[1-3]) into one row per index, as XDMoD does
    repeats = np.ones(n_lines, dtype=np.int64)
    indices: dict[int, list[int]] = {}
    bad_range = np.zeros(n_lines, dtype=bool)
    for i, text in zip(range_rows.tolist(), range_text, strict=True):
        try:
            indices[i] = expand_array_ids(text)
        except ValueError:
            bad_range[i] = True
            continue
        repeats[i] = len(indices[i])
    take = np.repeat(np.arange(n_lines), repeats)
    n = len(take)
    array_index = idx[take]
    expanded = np.zeros(n, dtype=bool)
    if indices:
        starts = np.concatenate([[0], np.cumsum(repeats)[:-1]])
        for i, values in indices.items():
            array_index[starts[i] : starts[i] + len(values)] = values
            expanded[starts[i] : starts[i] + len(values)] = True
    # the attempt key: the JobID before its step, an array task's as job_seq_index
    key_text = keys if n == n_lines else keys.take(_pa.array(take))
    with_index = ~np.isnan(array_index)
    if with_index.any():
        seq_text = np.nan_to_num(seq[take][with_index]).astype(np.int64).astype(str)
        index_text = np.nan_to_num(array_index[with_index]).astype(np.int64).astype(str)
        key_text = _pc.replace_with_mask(
            key_text,
            _pa.array(with_index),
            _pa.array(np.char.add(np.char.add(seq_text, "_"), index_text), pa.string()),
        )
    key_code = (
        _numpy(key_text.dictionary_encode().indices, np.int64) if n else np.zeros(0, np.int64)
    )

    identity = n == n_lines
    columns_read: dict[str, _Column] = {"JobID": id_column} if identity else {}

    def column(name: str) -> _Column:
        if name not in columns_read:
            rows = None if identity else take
            columns_read[name] = _Column(fields, name, rows)
            if scan is not None:
                scan.attach(columns_read[name], rows)
        return columns_read[name]

    def col(name: str) -> Arr:
        return column(name).array()

    def absent(name: str) -> Bool:
        """Fields missing from the row (cut off with the file's last line): null, not blank."""
        return column(name).absent()

    rec_flags = rec.column("flags")
    truncated = flag_mask(rec_flags, "TRUNCATED")[take]
    carried: list[tuple[str, Bool]] = [
        (name, flag_mask(rec_flags, name)[take]) for name in ("NON_UTF8", "NO_NEWLINE")
    ]

    submit, amb_submit, gap_submit, offset = clock.read(column("Submit"), fast=fast)
    eligible, amb_elig, gap_elig, _ = clock.read(column("Eligible"), fast=fast)
    start, amb_start, gap_start, _ = clock.read(column("Start"), fast=fast)
    end_logged, amb_end, gap_end, _ = clock.read(column("End"), fast=fast)
    unreadable = np.zeros(n, dtype=bool)
    for name, parsed in (
        ("Submit", submit),
        ("Eligible", eligible),
        ("Start", start),
        ("End", end_logged),
    ):
        unreadable |= _unreadable(column(name), parsed, ("Unknown", "None"))
    src_line = _numpy(rec.column("src_line").combine_chunks(), np.int64)[take]
    src_file = rec.column("src_file").combine_chunks()
    src_file = src_file if identity else src_file.take(_pa.array(take))
    file_no = (
        np.unique(_numpy(src_file.dictionary_encode().indices, np.int64), return_inverse=True)[1]
        if n
        else np.zeros(0, np.int64)
    )

    # attempts: rows of one job id, in submit order, then file and line order (NaN last)
    order = np.lexsort((np.arange(n), src_line, file_no, submit, key_code))
    attempt = np.empty(n, dtype=np.int64)
    n_attempts = np.empty(n, dtype=np.int64)
    first_submit = np.empty(n)
    if n:
        sorted_code = key_code[order]
        opens = np.flatnonzero(np.r_[True, sorted_code[1:] != sorted_code[:-1]])
        sizes = np.diff(np.r_[opens, n])
        group_start = np.repeat(opens, sizes)
        attempt[order] = np.arange(n) - group_start
        n_attempts[order] = np.repeat(sizes, sizes)
        # the first known submit of the group: NaN ones sort last
        first_submit[order] = np.repeat(submit[order][opens], sizes)

    # state: the first word, "CANCELLED by 500" flagged
    # (each distinct State text is read once: a file holds a few dozen)
    state_texts = _pc.fill_null(col("State"), "").dictionary_encode()
    state_code = _numpy(state_texts.indices, np.int64)
    state_parts = _pc.extract_regex(state_texts.dictionary, r"^(?P<w>\S*)(?P<by>\s+by\s+\S+)?")
    words = _pc.fill_null(_pc.struct_field(state_parts, "w"), "").dictionary_encode()
    word_code = _numpy(words.indices, np.int64)[state_code]
    cancelled_by = _numpy(
        _pc.not_equal(_pc.fill_null(_pc.struct_field(state_parts, "by"), ""), ""), bool
    )[state_code]
    mapped = [
        _STATE_MAP.get(str(w).upper(), ("UNKNOWN", "STATE_NONSTANDARD"))
        for w in words.dictionary.to_pylist()
    ]
    # states and their flags as small codes into these names (numbers compare fast, texts not)
    state_names = sorted({m[0] for m in mapped} | {*_NOT_ENDED, "CANCELLED", "DELETED", "REQUEUED"})
    code = {name: i for i, name in enumerate(state_names)}
    running, pending, cancelled = code["RUNNING"], code["PENDING"], code["CANCELLED"]
    not_ended_codes = [running, pending]
    flag_names = sorted({m[1] for m in mapped if m[1]})
    state = np.array([code[m[0]] for m in mapped], dtype=np.int64)[word_code]
    state_flag = np.array([flag_names.index(m[1]) if m[1] else -1 for m in mapped], dtype=np.int64)[
        word_code
    ]
    state_cut = absent("State")  # a truncated line: the state is not known (flag TRUNCATED)
    state_flag[state_cut] = -1
    started = ~np.isnan(start)
    end_unknown = np.isnan(end_logged)
    fix_state = end_unknown & ~absent("End") & ~state_cut & ~np.isin(state, not_ended_codes)
    state = np.where(fix_state, np.where(started, running, pending), state)
    deleted = (state == cancelled) & ~started & ~absent("Start")
    state = np.where(deleted, code["DELETED"], state)
    # a row repeating another's id, submit, start and end (overlapping exports, overlapping array
    # ranges) is not a requeue: it keeps its state, flagged DUPLICATE
    # (only a job id with several rows can repeat: the others are left out of the comparison)
    duplicate = np.zeros(n, dtype=bool)
    shared = np.flatnonzero(n_attempts > 1)
    if len(shared):
        same = pd.DataFrame(
            {
                "key": key_code[shared],
                "submit": submit[shared],
                "start": start[shared],
                "end": end_logged[shared],
            }
        )
        duplicate[shared] = np.asarray(same.duplicated(keep=False), dtype=bool)
    earlier = (attempt < n_attempts - 1) & ~duplicate
    logged_state = state.copy()
    state = np.where(earlier, code["REQUEUED"], state)
    not_ended = np.isin(state, not_ended_codes)
    end_not_final = not_ended & ~end_unknown
    end = np.where(not_ended, np.nan, end_logged)
    start_not_final = (state == pending) & started
    start = np.where(state == pending, np.nan, start)
    started = ~np.isnan(start)
    from_first = (attempt > 0) & ~np.isnan(first_submit) & (first_submit != submit)

    run = end - start
    wait = start - submit
    elapsed = _read_durations(column("Elapsed"), fast)
    timelimit = _read_durations(column("Timelimit"), fast)
    unreadable |= _unreadable(column("Elapsed"), elapsed, ())
    unreadable |= _unreadable(column("Timelimit"), timelimit, ("UNLIMITED", "Partition_Limit"))
    mismatch = ~np.isnan(run) & ~np.isnan(elapsed) & (np.abs(run - elapsed) > 60)

    nnodes = _read_floats(column("NNodes"), fast)
    ncpus = _read_floats(column("NCPUS"), fast)
    reqcpus = _read_floats(column("ReqCPUS"), fast)
    for name, parsed in (("NNodes", nnodes), ("NCPUS", ncpus), ("ReqCPUS", reqcpus)):
        unreadable |= _unreadable(column(name), parsed, ())
    tres_nodes, tres_cpus, gpus_req = _read_tres(
        column("ReqTRES"), ("node", "cpu", "gres/gpu"), fast
    )
    alloc_nodes, alloc_cpus, alloc_gpus = _read_tres(
        column("AllocTRES"), ("node", "cpu", "gres/gpu"), fast
    )
    # a job that never started: its NNodes/NCPUS are the request, where ReqTRES/ReqCPUS are not
    nodes_req_fallback = np.isnan(tres_nodes) & ~started & ~np.isnan(nnodes)
    nodes_req = np.where(nodes_req_fallback, nnodes, tres_nodes)
    cores_req_fallback = np.isnan(reqcpus) & ~started & ~np.isnan(ncpus)
    cores_req = np.where(cores_req_fallback, ncpus, reqcpus)
    cores_req_conflict = ~np.isnan(reqcpus) & ~np.isnan(tres_cpus) & (reqcpus != tres_cpus)
    nodes_alloc = np.where(started, nnodes, np.nan)
    cores_alloc = np.where(started, ncpus, np.nan)
    cores_alloc_conflict = (
        ~np.isnan(cores_alloc) & ~np.isnan(alloc_cpus) & (cores_alloc != alloc_cpus)
    )
    gpus_alloc = np.where(started, alloc_gpus, np.nan)

    # memory request: value, unit, scope (c per CPU, n per node); old Slurm leaks its 2^31 bit
    mem_value, mem_unit, scope = _read_req_mem(column("ReqMem"), fast)
    flag_bit = mem_value >= _PER_CPU_BIT
    mem_value = np.where(flag_bit, mem_value - _PER_CPU_BIT, mem_value)
    per_cpu = flag_bit | (scope == ord("c"))
    per_node = ~flag_bit & (scope == ord("n"))
    cores_for_mem = np.where(np.isnan(cores_alloc), cores_req, cores_alloc)
    nodes_for_mem = np.where(np.isnan(nodes_alloc), nodes_req, nodes_alloc)
    factor = np.where(per_cpu, cores_for_mem, np.where(per_node, nodes_for_mem, 1.0))
    unit_bytes = np.array([_UNITS[u] for u in ("", *"KMGTP")], dtype=np.float64)[mem_unit]
    mem_all = mem_value == 0
    mem_req = np.where(mem_all, np.nan, mem_value * unit_bytes * factor)
    scope_unknown = ~np.isnan(mem_value) & ~mem_all & np.isnan(factor)
    unit_assumed = ~np.isnan(mem_value) & ~mem_all & (mem_unit == 0)
    tres_mem = _read_tres_size(column("ReqTRES"), "mem", fast)
    mem_conflict = (
        ~np.isnan(mem_req)
        & ~np.isnan(tres_mem)
        & (np.abs(mem_req - tres_mem) > 0.01 * np.fmax(mem_req, tres_mem))
    )

    exit_code, exit_signal = _read_exit_codes(column("ExitCode"), fast)

    # host lists: expanded once per distinct value
    node_values = col("NodeList").dictionary_encode()
    node_code = _numpy(node_values.indices.fill_null(-1), np.int64)
    distinct: list[str | None] = [*node_values.dictionary.to_pylist(), None]  # -1: null
    listed: list[list[str] | None] = []
    for node_text in distinct:
        try:
            listed.append(expand_hostlist(node_text or "") or None)
        except ValueError:
            listed.append(None)
    bad_distinct = np.array(
        [
            h is None and bool(t) and t != "None assigned"
            for t, h in zip(distinct, listed, strict=True)
        ]
    )
    count_distinct = np.array([len(h) if h else np.nan for h in listed], dtype=np.float64)
    bad_nodes = bad_distinct[node_code]
    n_hosts = count_distinct[node_code]
    hosts = _pa.array(listed, pa.list_(pa.string())).take(_pa.array(node_code % len(distinct)))
    nodes_alloc_conflict = ~np.isnan(nodes_alloc) & (
        (~np.isnan(alloc_nodes) & (alloc_nodes != nodes_alloc))
        | (~np.isnan(n_hosts) & (n_hosts != nodes_alloc))
    )

    # steps fold into the attempt running when they started: MaxRSS / MaxVMSize maxima
    present = fields.names()
    rss, rss_bare = _sizes(col("MaxRSS"), 1) if "MaxRSS" in present else _no_sizes(n)
    vmem, vmem_bare = _sizes(col("MaxVMSize"), 1) if "MaxVMSize" in present else _no_sizes(n)
    used_unit_assumed = (rss_bare & (rss > 0)) | (vmem_bare & (vmem > 0))
    folded = np.zeros(n, dtype=bool)
    orphans = 0
    if steps.num_rows:
        s_seq, s_idx, _, s_keys = _ids(_lookup(steps, "JobID"))
        s_start = clock(_lookup(steps, "Start"))[0]
        s_rss, s_rss_bare = _sizes(_lookup(steps, "MaxRSS"), 1)
        s_vmem, s_vmem_bare = _sizes(_lookup(steps, "MaxVMSize"), 1)
        by_key: dict[str, list[int]] = {}
        key_list = key_text.to_pylist()
        for row in order.tolist():
            by_key.setdefault(key_list[row], []).append(row)
        for j, k in enumerate(s_keys.to_pylist()):
            rows = by_key.get(k)
            if not rows:
                orphans += 1
                continue
            target = rows[-1]
            for row in rows:
                if not np.isnan(start[row]) and start[row] <= s_start[j]:
                    target = row
            if not np.isnan(s_rss[j]) and not s_rss[j] <= rss[target]:
                rss[target] = s_rss[j]
                folded[target] = True
                used_unit_assumed[target] |= bool(s_rss_bare[j] and s_rss[j] > 0)
            if not np.isnan(s_vmem[j]) and not s_vmem[j] <= vmem[target]:
                vmem[target] = s_vmem[j]
                folded[target] = True
                used_unit_assumed[target] |= bool(s_vmem_bare[j] and s_vmem[j] > 0)
        del s_seq, s_idx

    job_seq = seq[take]
    # a number too large for its column (a damaged field) is null and flagged, never wrapped
    fitted, too_big = fitted_numbers(
        {
            "job_seq": job_seq,
            "array_index": array_index,
            "wait_s": wait,
            "run_s": run,
            "walltime_used_s": elapsed,
            "walltime_req_s": timelimit,
            "nodes_req": nodes_req,
            "cores_req": cores_req,
            "gpus_req": gpus_req,
            "nodes_alloc": nodes_alloc,
            "cores_alloc": cores_alloc,
            "gpus_alloc": gpus_alloc,
            "mem_req_bytes": mem_req,
            "mem_used_bytes": rss,
            "vmem_used_bytes": vmem,
            "exit_code": exit_code,
            "exit_signal": exit_signal,
        }
    )
    (
        job_seq,
        array_index,
        wait,
        run,
        elapsed,
        timelimit,
        nodes_req,
        cores_req,
        gpus_req,
        nodes_alloc,
        cores_alloc,
        gpus_alloc,
        mem_req,
        rss,
        vmem,
        exit_code,
        exit_signal,
    ) = fitted
    unreadable |= too_big
    was = earlier & (logged_state != code["REQUEUED"])  # flag STATE_WAS_<the state logged>
    masks: list[tuple[str, Bool]] = [
        *carried,
        ("TRUNCATED", truncated),
        ("DUPLICATE_LINE", repeated[take]),
        ("ARRAY_RANGE_EXPANDED", expanded),
        ("DUPLICATE", duplicate),
        ("ARRAY_RANGE_UNPARSED", bad_range[take]),
        ("JOBID_NONSTANDARD", np.isnan(seq[take])),
        ("CANCELLED_BY", cancelled_by),
        ("CANCELLED_NOT_STARTED", deleted),
        ("END_UNKNOWN", fix_state),
        ("END_NOT_FINAL", end_not_final),
        ("START_NOT_FINAL", start_not_final),
        ("SUBMIT_FROM_FIRST_ATTEMPT", from_first),
        ("DST_AMBIGUOUS", amb_submit | amb_elig | amb_start | amb_end),
        ("DST_GAP", gap_submit | gap_elig | gap_start | gap_end),
        ("WALLTIME_MISMATCH", mismatch),
        ("MEM_PER_CPU", per_cpu & ~np.isnan(mem_req)),
        ("MEM_PER_NODE", per_node & ~np.isnan(mem_req)),
        ("MEM_FLAG_BIT", flag_bit),
        ("MEM_REQ_ALL", mem_all),
        ("MEM_SCOPE_UNKNOWN", scope_unknown),
        ("MEM_UNIT_ASSUMED", unit_assumed),
        ("MEM_REQ_CONFLICT", mem_conflict),
        ("MEM_USED_UNIT_ASSUMED", used_unit_assumed),
        ("STEPS_FOLDED", folded),
        ("NODELIST_UNPARSED", bad_nodes),
        ("CORES_REQ_FROM_NCPUS", cores_req_fallback),
        ("NODES_REQ_FROM_NNODES", nodes_req_fallback),
        ("CORES_REQ_CONFLICT", cores_req_conflict),
        ("CORES_ALLOC_CONFLICT", cores_alloc_conflict),
        ("NODES_ALLOC_CONFLICT", nodes_alloc_conflict),
        ("VALUE_UNREADABLE", unreadable),
    ]
    for k, name in enumerate(flag_names):
        mask = state_flag == k
        if mask.any():
            masks.append((name, mask))
    for name in sorted(state_names[k] for k in np.unique(logged_state[was])):
        masks.append(("STATE_WAS_" + name, was & (logged_state == code[name])))
    flags = flag_array(n, masks)

    site = rec.column("site").combine_chunks()
    site = site if identity else site.take(_pa.array(take))
    submit_text = _pc.fill_null(int_or_null(first_submit, pa.int64()).cast(pa.string()), "unknown")
    job_key = _pc.binary_join_element_wise(site, ":", key_text, "@", submit_text, "")
    ts = pa.timestamp("s", tz="UTC")

    def times(values: F64) -> Arr:
        return int_or_null(values, pa.int64()).cast(ts)

    empty = pa.nulls(n, pa.string())
    columns: dict[str, Any] = {
        "site": site,
        "source_format": _repeat("slurm", n),
        "job_key": job_key,
        "job_id_raw": col("JobID"),
        "job_seq": int_or_null(job_seq, pa.int64()),
        "array_index": int_or_null(array_index, pa.int32()),
        "attempt": _pa.array(attempt.astype(np.int16), pa.int16()),
        "n_attempts": _pa.array(n_attempts.astype(np.int16), pa.int16()),
        "user": _blank_null(col("User")),
        "group": _blank_null(col("Group")),
        "account": _blank_null(col("Account")),
        "queue": _blank_null(col("Partition")),
        "job_name": col("JobName") if n else empty,
        "submit_time": times(first_submit),
        "queue_time": times(submit),
        "eligible_time": times(eligible),
        "start_time": times(start),
        "end_time": times(end),
        "wait_s": int_or_null(wait, pa.int64()),
        "run_s": int_or_null(run, pa.int64()),
        "walltime_used_s": int_or_null(np.where(started, elapsed, np.nan), pa.int64()),
        "walltime_req_s": int_or_null(timelimit, pa.int64()),
        "nodes_req": int_or_null(nodes_req, pa.int32()),
        "cores_req": int_or_null(cores_req, pa.int32()),
        "gpus_req": int_or_null(gpus_req, pa.int32()),
        "nodes_alloc": int_or_null(nodes_alloc, pa.int32()),
        "cores_alloc": int_or_null(cores_alloc, pa.int32()),
        "gpus_alloc": int_or_null(gpus_alloc, pa.int32()),
        "exec_hosts": hosts,
        "mem_req_bytes": int_or_null(mem_req, pa.int64()),
        "mem_used_bytes": int_or_null(rss, pa.int64()),
        "vmem_used_bytes": int_or_null(vmem, pa.int64()),
        "exit_code": int_or_null(exit_code, pa.int32()),
        "exit_signal": int_or_null(exit_signal, pa.int32()),
        "state": _pa.array(state_names, pa.string()).take(_pa.array(state)),
        "tz_offset_s": int_or_null(offset, pa.int32()),
        "src_file": src_file,
        "src_line": _pa.array(src_line, pa.int64()),
        "flags": flags,
    }
    table = pa.Table.from_arrays(
        [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in JOBS], schema=JOBS
    )
    clusters = sorted(c for c in _pc.unique(fields["Cluster"]).to_pylist() if c)
    info = {
        "slurm_clusters": clusters,
        "slurm_steps": int(steps.num_rows),
        "slurm_orphan_steps": orphans,
        "slurm_array_ranges": len(indices),
    }
    return table, info


def _blank_null(array: Arr) -> Arr:
    """Return ``array`` with its empty strings null.

    A string array without nulls keeps its buffers: only a validity bitmap is added.
    """
    buffers = array.buffers()
    if (
        array.type != pa.string()
        or array.null_count
        or array.offset
        or not len(array)
        or buffers[2] is None
    ):
        return _pc.if_else(_pc.equal(_pc.fill_null(array, ""), ""), None, array)
    offsets = np.frombuffer(buffers[1], dtype=np.int32, count=len(array) + 1)
    filled = offsets[1:] != offsets[:-1]
    blanks = len(array) - int(np.count_nonzero(filled))
    if not blanks:
        return array
    bitmap = np.packbits(filled, bitorder="little")
    return _pa.StringArray.from_buffers(
        len(array), buffers[1], buffers[2], _pa.py_buffer(bitmap), blanks
    )


read_slurm = file_reader(
    "slurm",
    tokenize_slurm_file,
    assemble_slurm,
    what="``sacct --parsable2`` dumps",
    assemble_options=["tz"],
    tokenize_options=["delimiter", "header"],
    options_doc="""
        tz : str, optional
            The zone sacct ran in (``"UTC"`` for exports made with ``TZ=UTC``); required unless
            the times carry offsets. See the module docstring.
        delimiter : str, default "|"
            sacct's ``--delimiter``.
        header : sequence of str, optional
            Field names for header-less files in another layout than :data:`SLURM_FIELDS`.
    """,
    check=lambda tz, **_: tz is None or _zone(tz),
    raises="""
        ConfigError
            Without ``tz`` when the times have no offset.
    """,
    examples="""
        >>> result = read_slurm("sacct-2017.log.gz", site="ccr", tz="UTC")  # doctest: +SKIP
        >>> result.jobs.num_rows  # doctest: +SKIP
        4285
    """,
)
