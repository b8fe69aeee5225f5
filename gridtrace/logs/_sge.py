"""The Grid Engine ``accounting`` reader: Sun/Oracle SGE 6.x, Son of Grid Engine 8.1.x, Univa GE.

The file ``$SGE_ROOT/<cell>/common/accounting`` holds one line per finished job (per attempt, and
per parallel-environment task), fields separated by ``:``, preceded by ``#`` comment lines
(``# Version: 8.1.9``, ``# DO NOT MODIFY THIS FILE MANUALLY!``). The field count depends on the
version: 43 in SGE 6.0/6.1 (up to ``maxvmem``), 45 from SGE 6.2 and in Son of Grid Engine 8.1.x
(plus ``arid``, ``ar_submission_time``: :data:`SGE_FIELDS`), more in Univa Grid Engine 8.x, which
appends fields after those 45 (kept in ``attrs`` as ``field_46``, ``field_47``, …, flag
``EXTRA_FIELDS`` on the record) and, from 8.2, writes the three time stamps in **milliseconds**.

Reading is two steps, like every format of the registry: :func:`tokenize_sge_file` turns one
file into ``records`` (record type ``H`` for ``#`` lines, with ``attrs`` ``{"version": …}`` for
the version line and ``{"text": …}`` for the others; ``J`` for a job record; ``PE`` for a
parallel-environment slave record, one whose ``pe_taskid`` is not ``NONE``; ``attrs`` map
:data:`SGE_FIELDS` onto the values as written; ``stamp`` is ``end_time`` as written) and
``quarantine``; :func:`assemble_sge` turns the records of all files into ``jobs``. A line is
checked against one regular expression (every numeric field must hold a number); splitting and
column extraction are vectorised (pyarrow compute, numpy, pandas); Python runs per line only for
the lines that fail the check, and per distinct ``category`` string. Once a process has read
20,000 lines, compiled kernels (numba; a small file never loads it) take over the byte work and
give the same arrays: the field counts and the check of the first pass, the lines, split and
check of the second (no Python object per line), and the number and text fields of the
assembly, read chunk by chunk, each one walk of the bytes in order.

Colons inside fields
--------------------
Grid Engine does not escape ``:``, so a job name or account such as ``run:2`` shifts every later
column (ubccr/xdmod#172). A line that fails the check and has more fields than the file's usual
count (the most common count of the file's good lines; when it has none, 43 if its ``# Version``
line says 6.0 or 6.1, else 45) is re-aligned: the
``k`` surplus colons are put back, in every possible way, into the free-text fields (``job_name``,
``account``, ``category``; queue, host, user, group, project, department and PE names are object
names, which sge_types(5) forbids to hold ``:``), and the line is kept — with flag
``FIELD_SHIFT_REALIGNED`` on the record and the job, its bytes in ``raw`` — when exactly one
placement makes every numeric field a number. Otherwise it is quarantined, the reason saying how
many placements fitted (none, or several: ambiguous). A line with fewer than 43 fields, or one
that fails the check without surplus fields, is quarantined naming the first bad field.

Jobs (``shared/reference/parsers.md`` §8, SGE column)
-----------------------------------------------------
* A job is ``(job_number, task_number, submission_time)``: ``job_seq`` = ``job_number``,
  ``array_index`` = ``task_number`` (0, a job that is not an array, → null); ``job_id_raw`` is
  ``job_number`` or ``job_number.task_number``; ``job_key`` is ``"{site}:{job_id_raw}@{submit}"``
  (a job number reused after a wrap-around has another submit time, hence another key).
* **Retries.** Grid Engine writes one record per attempt to start a job ("If Sun Grid Engine
  tries to start a job multiple times, this may lead to multiple entries in the accounting file
  corresponding to the same job ID", accounting(5)). The records of one job become attempts 0,
  1, … in reading order (file, then line); every attempt but the last is ``REQUEUED`` (flag
  ``STATE_WAS_<state>`` when its own record says otherwise).
* **Duplicates.** Two job records with the same job, task, submission, start and end time, host,
  ``failed`` and ``exit_status`` (and a start time) are one attempt written twice (copied or
  overlapping files; the two records of XDMoD's SGE fixture differ only in ``category``): they
  are folded into one row, the later record's values kept, flag ``DUPLICATE``;
  ``info["sge_duplicates_folded"]`` counts the records dropped.
* **Parallel-environment slave records** (tight integration with ``accounting_summary FALSE``:
  one record per ``qrsh -inherit`` task, ``pe_taskid`` set, often with ``submission_time`` 0)
  are not jobs: each is folded into the attempt of the same ``job_number.task_number`` that was
  running when it started (else the job's last attempt). The attempt's ``cpu_time_s`` is the sum
  over its records, ``mem_used_bytes`` and ``vmem_used_bytes`` the maxima, ``exec_hosts`` the
  master's host then the slaves' distinct hosts; flag ``PE_SLAVES_FOLDED``. Slave records without
  a job record stay in ``records`` only (``info["sge_orphan_pe_slaves"]``).
* Times are UTC epochs (no zone is needed; ``tz`` is accepted and ignored). A stamp above 10¹¹ is
  in milliseconds (UGE ≥ 8.2) and is floored to seconds, as XDMoD does, flag
  ``TIME_MILLISECONDS``. ``submission_time`` 0 (failed jobs, slave records) is not a time: the
  submit time is taken from the job's other attempt when exactly one submit time is known for
  that job number and task (flags ``SUBMIT_TIME_ZERO`` and ``SUBMIT_FROM_ATTEMPT``), else it is
  null (flag ``SUBMIT_TIME_ZERO``). ``start_time``/``end_time`` 0 → null (flag ``NEVER_STARTED``).
  ``wait_s`` = start − submit, ``run_s`` = end − start, ``walltime_used_s`` = ``ru_wallclock``
  (flag ``WALLTIME_MISMATCH`` when it differs from ``run_s`` by more than 60 s).
* ``user`` = ``owner``, ``group``, ``queue`` = ``qname``, ``account`` = ``project`` (``NONE`` →
  null; the ``-A`` string, which defaults to ``sge``, stays in ``records``), ``job_name``.
* Cores: ``cores_alloc`` = ``slots`` for an attempt that started; ``cores_req`` = the count of
  ``-pe <name> <n>`` in ``category``, 1 for a job without ``-pe`` (a serial job has one slot); a
  slot range (``-pe mpi 4-8``) gives null with flag ``PE_RANGE``. ``nodes_alloc`` = the number of
  distinct hosts, except for a parallel job (``granted_pe`` set, more than one slot) without slave
  records, whose other hosts are not logged: ``exec_hosts`` is then the master host alone,
  ``nodes_alloc`` null, flag ``HOSTS_PARTIAL``.
* Requests from ``category`` ``-l`` lists: ``walltime_req_s`` = ``h_rt`` (else ``s_rt``; seconds
  or ``h:m:s``); ``mem_req_bytes`` = the first of ``m_mem_free``, ``mem_free``, ``h_vmem``,
  ``s_vmem``, ``virtual_free``, ``h_rss``, ``s_rss`` times ``slots`` (Grid Engine memory requests
  are per slot: flag ``MEM_PER_SLOT``). Memory specifiers follow sge_types(5): ``k``, ``m``,
  ``g``, ``t`` are powers of 1000, ``K``, ``M``, ``G``, ``T`` powers of 1024, no suffix bytes;
  ``INFINITY`` → null; anything else → null with flag ``MEM_UNPARSED``.
* Usage: ``cpu_time_s`` = ``cpu``; ``vmem_used_bytes`` = ``maxvmem`` (bytes);
  ``mem_used_bytes`` = ``ru_maxrss`` × 1024 (KiB on Linux); 0, which Grid Engine writes when it
  did not measure it, → null with flag ``MAXRSS_ZERO``.
* ``exit_code`` = ``exit_status`` as logged; a status of 128 + n is a job killed by signal n
  (accounting(5): 137 = SIGKILL): for 129–192 (signals 1–64, SIGRTMAX on Linux) ``exit_signal``
  = status − 128, flag ``SIGNAL_INFERRED``. 128 (no signal 0) and 193–255 (255 is ``exit -1``)
  stay exit codes.
* ``state``, from ``failed`` (sge_status(5)) and ``exit_status``: never started → ``FAILED``
  when ``failed`` ≠ 0, else ``DELETED``; ``failed`` 24 (migrating), 25 (rescheduling) and 30
  (application error, rescheduled) → ``REQUEUED``; killed by a signal or ``failed`` 37 (qmaster
  enforced h_rt, h_cpu or h_vmem) after running at least its ``h_rt`` → ``TIMEOUT``; any other
  ``failed`` ≠ 0 (100 "assumedly after job": killed by a signal, by ``qdel``, a limit or a node
  crash — the log does not say which) → ``FAILED``; ``exit_status`` 0 → ``COMPLETED``, else
  ``FAILED``. Every ``failed`` ≠ 0 adds flag ``SGE_FAILED_<code>``; the code is also in
  ``records``.

Every other value the reader decides is flagged too: a default filled (``CORES_REQ_SERIAL``), a
fallback taken (``WALLTIME_REQ_SOFT``, ``SUBMIT_FROM_ATTEMPT``), a conflict resolved
(``MEM_REQ_CONFLICT``, ``RESOURCE_REPEATED``), a state inferred (``TIMEOUT_INFERRED``), a value
that cannot be read (``MEM_UNPARSED``, ``WALLTIME_REQ_UNPARSED``, ``VALUE_UNREADABLE``).
:data:`FLAGS` says what each flag means.

Damaged lines
-------------
* A line holding NUL bytes (what a crash or a log rotation leaves) is a fragment: quarantined,
  never a job; ``info["nul_lines"]`` and ``info["nul_bytes"]`` count them.
* Bytes that are not UTF-8 are decoded as Windows-1252 (else Latin-1), flag ``NON_UTF8`` on the
  record and the job, the original bytes in ``records.raw``.
* A line ending in CR LF loses its CR (record flag ``CRLF``).
* The file's last line without a line end: with the file's usual field count it is read (flag
  ``NO_NEWLINE``); with fewer (a crash cut it; even a line that still has 43 fields, which would
  pass for SGE 6.0, when the file's lines have 45) the fields before the last one present are
  kept and the others are null (flag ``TRUNCATED``, bytes in ``records.raw``; state UNKNOWN
  when the fields it is read from were lost), or the line is quarantined when ``job_number``
  did not survive. A record is written when its job ends, so its end_time, if it survived, is
  the job's end.
* A record repeating another attempt's (see Duplicates above) is folded, and marked
  ``DUPLICATE_DROPPED`` in ``records``; never-started records written twice stay attempts,
  since Grid Engine writes one per failed start and two failed starts may look alike.

Throughput: ``benchmarks/parse_formats_extra.py`` (the UCSF Wynton file repeated, job numbers
shifted).
"""

from __future__ import annotations

import itertools
import re
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from gridtrace._log import library_logger
from gridtrace.logs._attrs import append_flag, flag_array, flag_mask
from gridtrace.logs._base import (
    FileParse,
    ParseResult,
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
from gridtrace.logs._io import ReadReport, StrPath
from gridtrace.logs._kernels import LazyKernel
from gridtrace.logs._stream import (
    DEFAULT_CHUNK_BYTES,
    Chunk,
    LineFormat,
    RangeSplit,
    file_reader,
    file_tokenizer,
    iter_chunks,
)
from gridtrace.logs._text import (
    NUL_FRAGMENT_REASON,
    decode_line,
    nul_fragment_counts,
    nul_lines,
    split_lines,
)
from gridtrace.schema import JOBS, RECORDS

__all__ = [
    "FLAGS",
    "SGE_FIELDS",
    "assemble_sge",
    "looks_like_sge",
    "parse_sge_memory",
    "read_sge",
    "sge_stream",
    "sge_width",
    "tokenize_sge_file",
]

FLAGS: Mapping[str, str] = {
    # the line (records; those marked * are copied to the job made from it)
    "NON_UTF8": (
        "the line is not UTF-8: decoded as Windows-1252 (Latin-1 where it has no character); "
        "the original bytes are in records.raw"
    ),
    "CRLF": "records: the line ended in CR LF (a Windows copy); the CR was removed",
    "NO_NEWLINE": (
        "the file's last line has no line end but all its fields: read as written, though its "
        "last field may have been cut short"
    ),
    "TRUNCATED": (
        "the file's last line has no line end and fewer fields than the file's other lines (a "
        "crash cut it): the fields before the last one present are kept, the rest are null; "
        "state UNKNOWN unless start_time, end_time, failed and exit_status survived; a record "
        "cut before task_number has the job number alone as its id, one cut before pe_taskid "
        "is taken as a job record; the bytes are in records.raw"
    ),
    "FIELD_SHIFT_REALIGNED": (
        "a ':' inside job_name, account or category shifted the fields: put back in the one "
        "placement that makes every numeric field a number; the bytes are in records.raw"
    ),
    "EXTRA_FIELDS": "records: fields after the 45 known ones (Univa), kept as field_46, ...",
    "DUPLICATE_DROPPED": (
        "records: a later record of the same attempt (same job, task, times, host, failed and "
        "exit status) follows, whose values the job holds; this one makes no job"
    ),
    # jobs
    "DUPLICATE": (
        "the attempt was logged twice (same job, task, times, host, failed, exit status; a "
        "copied or overlapping file): one row, the later record's values"
    ),
    "TIME_MILLISECONDS": (
        "a time stamp above 10^11 was in milliseconds (Univa >= 8.2): floored to seconds"
    ),
    "SUBMIT_TIME_ZERO": "submission_time 0 (failed job, PE slave): not a time",
    "SUBMIT_FROM_ATTEMPT": (
        "submission_time 0 or cut off: submit_time is that of the job's other attempt (the only "
        "one known for this job number and task)"
    ),
    "NEVER_STARTED": "start_time 0: the job never started, start and end null",
    "STATE_WAS_*": (
        "a retry: an earlier record of the job, whose own fields give the state the suffix "
        "names; its state is REQUEUED"
    ),
    "PE_SLAVES_FOLDED": (
        "parallel-environment slave records were folded in (to the attempt running when each "
        "started, else the last): cpu_time_s summed, memory maxima, their hosts added"
    ),
    "HOSTS_PARTIAL": (
        "a parallel job without slave records: exec_hosts is the master host alone, "
        "nodes_alloc null"
    ),
    "PE_RANGE": "the -pe request is a slot range (4-8): cores_req null",
    "CORES_REQ_SERIAL": (
        "no -pe request in category: a serial job, cores_req 1 (Grid Engine gives it one slot)"
    ),
    "SIGNAL_INFERRED": "exit_status 129-192 is 128 + a signal: exit_signal = status - 128",
    "TIMEOUT_INFERRED": (
        "killed by a signal or by qmaster (failed 37) after running at least its h_rt: "
        "state TIMEOUT (the log does not say why it was killed)"
    ),
    "SGE_FAILED_*": "the failed field held the code the suffix names (sge_status(5))",
    "END_BEFORE_START": "end_time before start_time: run_s null",
    "START_BEFORE_SUBMIT": "start_time before submission_time: wait_s negative, as logged",
    "WALLTIME_MISMATCH": (
        "|ru_wallclock - (end - start)| > 60 s: run_s is end - start, ru_wallclock kept"
    ),
    "WALLTIME_REQ_SOFT": "no h_rt in category: walltime_req_s is s_rt, the soft limit",
    "WALLTIME_REQ_UNPARSED": "h_rt (or s_rt) is not a time: walltime_req_s null",
    "MEM_PER_SLOT": "memory requests are per slot: mem_req_bytes is the request times slots",
    "MEM_UNPARSED": "the memory request is not a memory specifier: mem_req_bytes null",
    "MEM_REQ_CONFLICT": (
        "category names several memory resources with different values: the first of "
        "m_mem_free, mem_free, h_vmem, s_vmem, virtual_free, h_rss, s_rss is kept"
    ),
    "MEM_UNIT_BYTES": "the memory request has no unit: bytes, as sge_types(5) defines",
    "RESOURCE_REPEATED": "category names a -l resource twice with different values: first kept",
    "MAXRSS_ZERO": "ru_maxrss 0 (not measured): mem_used_bytes null",
    "VALUE_UNREADABLE": "a number field holds inf or nan: that value is null",
}
"""Every flag this reader sets on a row, with what it means (see ``flag_meanings``)."""

logger = library_logger(__name__)

# the pyarrow-stubs' overloads are narrower than these compute chains: arrays are typed loosely
_pc: Any = pc
_pa: Any = pa
Arr: TypeAlias = Any
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
U8 = npt.NDArray[np.uint8]
Bool = npt.NDArray[np.bool_]

SGE_FIELDS: tuple[str, ...] = (
    "qname",
    "hostname",
    "group",
    "owner",
    "job_name",
    "job_number",
    "account",
    "priority",
    "submission_time",
    "start_time",
    "end_time",
    "failed",
    "exit_status",
    "ru_wallclock",
    "ru_utime",
    "ru_stime",
    "ru_maxrss",
    "ru_ixrss",
    "ru_ismrss",
    "ru_idrss",
    "ru_isrss",
    "ru_minflt",
    "ru_majflt",
    "ru_nswap",
    "ru_inblock",
    "ru_oublock",
    "ru_msgsnd",
    "ru_msgrcv",
    "ru_nsignals",
    "ru_nvcsw",
    "ru_nivcsw",
    "project",
    "department",
    "granted_pe",
    "slots",
    "task_number",
    "cpu",
    "mem",
    "io",
    "category",
    "iow",
    "pe_taskid",
    "maxvmem",
    "arid",
    "ar_submission_time",
)
"""The 45 fields of SGE 6.2 / Son of Grid Engine 8.1.x in file order (SGE 6.0/6.1: the first 43)."""

_I = {name: i for i, name in enumerate(SGE_FIELDS)}
_MIN_FIELDS = 43  # SGE 6.0/6.1
_FULL = len(SGE_FIELDS)  # 45
_INT_FIELDS = frozenset(
    _I[n]
    for n in (
        "job_number",
        "priority",
        "submission_time",
        "start_time",
        "end_time",
        "failed",
        "exit_status",
        "slots",
        "task_number",
        "arid",
        "ar_submission_time",
    )
)
_NUM_FIELDS = frozenset(
    [*range(_I["ru_wallclock"], _I["ru_nivcsw"] + 1)]
    + [_I[n] for n in ("cpu", "mem", "io", "iow", "maxvmem")]
)
# free text that may hold a ':' (queue, host, user, group, PE, project and department names
# cannot)
# project and department are object names, which sge_types(5) forbids to hold ':'
_TEXT_FIELDS = tuple(_I[n] for n in ("job_name", "account", "category"))
_UNSIGNED = r"\d+"
_SIGNED = r"-?\d+"
_NUMBER = r"(?:-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|-?nan|-?inf)"


def _field_pattern(i: int) -> str:
    if i in _INT_FIELDS:
        return _SIGNED if i in (_I["priority"], _I["exit_status"], _I["failed"]) else _UNSIGNED
    if i in _NUM_FIELDS:
        return _NUMBER
    return "[^:]*"


_PATTERNS = [_field_pattern(i) for i in range(_FULL)]
# the same check, for the kernel: what each of the 45 fields holds
_TEXT, _UNSIGNED_KIND, _SIGNED_KIND, _NUMBER_KIND = range(4)
_KINDS = np.array(
    [
        {_UNSIGNED: _UNSIGNED_KIND, _SIGNED: _SIGNED_KIND, _NUMBER: _NUMBER_KIND}.get(p, _TEXT)
        for p in _PATTERNS
    ],
    dtype=np.int64,
)
# one pass per line: the first 43 fields, optionally arid and ar_submission_time, then anything
_LINE = (
    "^"
    + ":".join(_PATTERNS[:_MIN_FIELDS])
    + "(?::"
    + _PATTERNS[43]
    + "(?::"
    + _PATTERNS[44]
    + "(?::.*)?)?)?$"
)
# one field alone: a re-aligned free-text field may hold ':'
_FIELD_RES = [re.compile(f"^{p}$" if p != "[^:]*" else ".*", re.IGNORECASE) for p in _PATTERNS]
_LINE_RE = re.compile(_LINE.encode(), re.IGNORECASE)
# the same check on a line with its line end (LF, or CR LF: the one CR a line end loses)
_LINE_ENDED = _LINE.removesuffix("$") + r"\r?\n$"
_NEWLINE, _COLON, _HASH = ord("\n"), ord(":"), ord("#")

_MS_THRESHOLD = 1e11  # an epoch in seconds above 10^11 is after the year 5000: milliseconds
_MEM_KEYS = ("m_mem_free", "mem_free", "h_vmem", "s_vmem", "virtual_free", "h_rss", "s_rss")
_MEM_UNITS = {
    "": 1,
    "k": 10**3,
    "m": 10**6,
    "g": 10**9,
    "t": 10**12,
    "p": 10**15,
    "K": 2**10,
    "M": 2**20,
    "G": 2**30,
    "T": 2**40,
    "P": 2**50,
}
_MEM_RE = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)([kmgtpKMGTP]?)$")
_VERSION_RE = re.compile(r"^#\s*Version:\s*(\S+)")
_REQUEUE_CODES = (24, 25, 30)
_LIMIT_CODE = 37
_MAX_SIGNAL = 64  # SIGRTMAX on Linux: 193..255 are exit codes (255 is `exit -1`), not signals


# --------------------------------------------------------------------------- small parsers


def parse_sge_memory(text: str) -> float | None:
    """Bytes of a Grid Engine memory specifier (sge_types(5)).

    ``k``/``m``/``g``/``t`` multiply by powers of 1000, ``K``/``M``/``G``/``T`` by powers of
    1024, no suffix means bytes: ``2g`` → 2e9, ``1.000T`` → 1099511627776.0.

    Returns
    -------
    float or None
        None for ``INFINITY`` (no limit).

    Raises
    ------
    ValueError
        If the text is not a memory specifier.
    """
    value = text.strip()
    if value.upper() in {"INFINITY", "INF"}:
        return None
    match = _MEM_RE.match(value)
    if match is None:
        msg = f"not a Grid Engine memory specifier: {text!r}"
        raise ValueError(msg)
    return float(match.group(1)) * _MEM_UNITS[match.group(2)]


def _seconds(text: str) -> float | None:
    """Read a Grid Engine time specifier: seconds, or ``h:m:s`` with empty parts meaning 0."""
    value = text.strip()
    if value.upper() in {"INFINITY", "INF"}:
        return None
    if ":" in value:
        parts = value.split(":")
        if len(parts) != 3:
            msg = f"not a time specifier: {text!r}"
            raise ValueError(msg)
        h, m, s = (float(p) if p else 0.0 for p in parts)
        return h * 3600 + m * 60 + s
    return float(value)


class _Category:
    """What gridtrace reads from a ``category`` string (``-l h_rt=3600,mem_free=2G -pe smp 8``)."""

    __slots__ = (
        "mem_bad",
        "mem_conflict",
        "mem_no_unit",
        "mem_per_slot",
        "pe_range",
        "pe_slots",
        "repeated",
        "serial",
        "walltime",
        "walltime_bad",
        "walltime_soft",
    )

    def __init__(self, text: str) -> None:
        self.walltime: float | None = None
        self.walltime_bad = False
        self.walltime_soft = False
        self.mem_per_slot: float | None = None
        self.mem_bad = False
        self.mem_conflict = False
        self.mem_no_unit = False
        self.pe_slots: float | None = None
        self.pe_range = False
        self.serial = False
        self.repeated = False
        resources: dict[str, str] = {}
        words = text.split()
        pe_seen = False
        for i, word in enumerate(words):
            if word == "-l" and i + 1 < len(words):
                for item in words[i + 1].split(","):
                    key, sep, value = item.partition("=")
                    if sep:
                        kept = resources.setdefault(key.strip(), value.strip())
                        self.repeated |= kept != value.strip()
            elif word == "-pe" and i + 2 < len(words):
                pe_seen = True
                count = words[i + 2]
                if count.isdigit():
                    self.pe_slots = float(count)
                else:
                    self.pe_range = True
        if not pe_seen:
            self.pe_slots = 1.0  # Grid Engine gives a job without -pe one slot
            self.serial = True
        for key in ("h_rt", "s_rt"):
            if key in resources:
                try:
                    self.walltime = _seconds(resources[key])
                except ValueError:
                    self.walltime = None
                    self.walltime_bad = True
                self.walltime_soft = key == "s_rt"
                break
        chosen = False
        for key in _MEM_KEYS:
            if key not in resources:
                continue
            try:
                size = parse_sge_memory(resources[key])
            except ValueError:
                if not chosen:
                    self.mem_bad = True
                    chosen = True
                continue
            if not chosen:
                self.mem_per_slot = size
                self.mem_no_unit = size is not None and resources[key].strip()[-1:].isdigit()
                chosen = True
            elif not self.mem_bad and size != self.mem_per_slot:
                self.mem_conflict = True


# --------------------------------------------------------------------------- compiled kernels
#
# Byte loops replace the numpy and Arrow calls that cost most on a large file: counting the
# fields of every line (the first pass), splitting a UTF-8 chunk into lines and fields (the
# second), and reading the number and text fields of the records (the assembly). Each gives
# exactly what the calls it replaces give (``tests/logs/test_sge_kernels.py`` and
# ``tests/logs/test_sge_chunk_paths.py`` compare them). They stay plain Python
# until a process has read _KERNEL_MIN_LINES lines: importing numba costs half a second, which a
# small file must not pay.


_KERNEL = (
    "_check_line",
    "_line_fields",
    "_split_fields",
    "_chunk_fields",
    "_gather_fields",
    "_parse_numbers",
)
_ENTRY_POINTS = frozenset(
    {"_line_fields", "_split_fields", "_chunk_fields", "_gather_fields", "_parse_numbers"}
)
_LAZY = LazyKernel(globals(), _KERNEL, _ENTRY_POINTS)
_compile_kernel = _LAZY.compile
_KERNEL_MIN_LINES = 20_000
"""Lines a process reads before it loads the kernels (the numpy and Arrow paths give the same)."""
_plain_lines = 0
_plain_lock = threading.Lock()
# 10**k as floats, exact up to 10**22: m / 10**k is then correctly rounded (Clinger's fast path)
_POWERS = np.array([float(10**k) for k in range(23)], dtype=np.float64)
_MAX_MANTISSA = 10**15  # < 2**53: exact as a float


def _use_kernel(lines: int) -> bool:
    """Whether to run the kernels on ``lines`` lines: once the process has read enough of them."""
    global _plain_lines
    with _plain_lock:
        _plain_lines += lines
        ready = _plain_lines >= _KERNEL_MIN_LINES
    return ready and _compile_kernel()


def _line_fields(buffer: U8, n: int, kinds: I64) -> tuple[I64, I64, Bool, Bool]:
    """Line ends (after each LF), field counts, NUL bytes and field check of ``n`` lines.

    The ``n`` lines are those ending in a LF; bytes after the last LF are not a line here.
    The check is ``_LINE_ENDED``'s: the line, less its line end (LF, or CR LF), has at least 43
    ``:``-separated fields, the first 45 of them as ``kinds`` says.
    """
    ends = np.empty(n, dtype=np.int64)
    fields = np.ones(n, dtype=np.int64)
    nul = np.zeros(n, dtype=np.bool_)
    checked = np.zeros(n, dtype=np.bool_)
    start = 0
    line = 0
    count = 1  # the line's fields and NUL bytes so far: in registers, stored at its end
    zero = False
    for p in range(len(buffer)):
        if line >= n:
            break
        byte = buffer[p]
        if byte == 10:
            ends[line] = p + 1
            fields[line] = count
            nul[line] = zero
            stop = p - 1 if p > start and buffer[p - 1] == 13 else p
            checked[line] = _check_line(buffer, start, stop, kinds)
            start = p + 1
            line += 1
            count = 1
            zero = False
        elif byte == 58:
            count += 1
        elif byte == 0:
            zero = True
    return ends, fields, nul, checked


def _check_line(data: U8, a: int, b: int, kinds: I64) -> bool:
    r"""Whether the line ``data[a:b]`` (no line end) passes ``_LINE``: one walk of its bytes.

    At least 43 ``:``-separated fields, the first 45 as ``kinds`` says: text (anything but
    ``:``), ``\d+``, ``-?\d+``, or ``_NUMBER`` (a decimal with an optional exponent, or
    ``nan``/``inf`` in any case, each with an optional ``-``); the fields after the 45th are
    anything.
    """
    field = 0
    p = a
    while True:
        kind = kinds[field]
        if kind == 0:  # text
            while p < b and data[p] != 58:
                p += 1
        elif kind == 3:  # _NUMBER
            q = p + 1 if p < b and data[p] == 45 else p
            word = False
            if q + 3 <= b and (q + 3 == b or data[q + 3] == 58):
                c0, c1, c2 = data[q] | 32, data[q + 1] | 32, data[q + 2] | 32
                word = (c0 == 110 and c1 == 97 and c2 == 110) or (
                    c0 == 105 and c1 == 110 and c2 == 102
                )  # nan, inf
            if word:
                p = q + 3
            else:
                e = q
                while e < b and 48 <= data[e] <= 57:
                    e += 1
                whole = e > q
                fraction = False
                if e < b and data[e] == 46:  # .
                    e += 1
                    f = e
                    while e < b and 48 <= data[e] <= 57:
                        e += 1
                    fraction = e > f
                if not whole and not fraction:
                    return False
                if e < b and data[e] | 32 == 101:  # e, E
                    e += 1
                    if e < b and (data[e] == 43 or data[e] == 45):
                        e += 1
                    x = e
                    while e < b and 48 <= data[e] <= 57:
                        e += 1
                    if e == x:
                        return False
                p = e
        else:  # unsigned, or signed: digits after an optional '-'
            q = p + 1 if kind == 2 and p < b and data[p] == 45 else p
            e = q
            while e < b and 48 <= data[e] <= 57:
                e += 1
            if e == q:
                return False
            p = e
        if p < b and data[p] != 58:
            return False  # the field holds more than its column allows
        field += 1
        if field >= len(kinds):
            return True  # the 45 known fields are sound; the rest is anything
        if p >= b:
            return field >= 43
        p += 1


def _split_fields(
    offsets: I32, data: U8, first: int, n: int, colons: int, kinds: I64
) -> tuple[I32, I32, U8, Bool]:
    """Split ``n`` strings (``offsets[first:first + n + 1]`` into ``data``) at every ``:``.

    Returns the list offsets (fields per string), the fields' offsets and their bytes: the
    buffers of ``pc.split_pattern(strings, ":")``; ``colons`` is the count of ``:`` in them.
    And which strings pass the field check (``_LINE``, as :func:`_check_line`).
    """
    list_offsets = np.empty(n + 1, dtype=np.int32)
    value_offsets = np.empty(n + colons + 1, dtype=np.int32)
    values = np.empty(offsets[first + n] - offsets[first] - colons, dtype=np.uint8)
    checked = np.zeros(n, dtype=np.bool_)
    list_offsets[0] = 0
    value_offsets[0] = 0
    field = 0
    out = 0
    for i in range(n):
        a = offsets[first + i]
        b = offsets[first + i + 1]
        checked[i] = _check_line(data, a, b, kinds)
        for p in range(a, b):
            byte = data[p]
            if byte == 58:
                field += 1
                value_offsets[field] = out
            else:
                values[out] = byte
                out += 1
        field += 1
        value_offsets[field] = out
        list_offsets[i + 1] = field
    return list_offsets, value_offsets, values, checked


def _chunk_fields(
    buffer: U8, n: int, room: int, kinds: I64
) -> tuple[I64, I64, Bool, Bool, Bool, I32, I32, U8, int]:
    """Split a chunk's ``n`` lines, then each line's fields at ``:``, in one walk of its bytes.

    A line ends at a LF (the last one may have none); one CR before it is not part of the line
    (as :func:`~gridtrace.logs._text.split_lines`). Returns each line's start and stop in
    ``buffer`` (its line end left out), whether it ended in CR LF, held a NUL byte and passes
    the field check (``_LINE``, :func:`_check_line`), and the buffers of
    ``pc.split_pattern(lines, ":")``: list offsets, the fields' offsets and their bytes
    (``room`` for that many fields in all; the last value returned is the count of fields,
    and the fields' offsets are complete only when it is not above ``room``).
    """
    size = len(buffer)
    starts = np.empty(n, dtype=np.int64)
    stops = np.empty(n, dtype=np.int64)
    crlf = np.zeros(n, dtype=np.bool_)
    nul = np.zeros(n, dtype=np.bool_)
    checked = np.zeros(n, dtype=np.bool_)
    list_offsets = np.empty(n + 1, dtype=np.int32)
    value_offsets = np.empty(room + 1, dtype=np.int32)
    values = np.empty(size, dtype=np.uint8)
    list_offsets[0] = 0
    value_offsets[0] = 0
    field = 0
    out = 0
    p = 0
    for i in range(n):
        a = p
        while p < size:
            byte = buffer[p]
            if byte == 10:
                break
            if byte == 58:
                field += 1
                if field <= room:
                    value_offsets[field] = out
            else:
                if byte == 0:
                    nul[i] = True
                values[out] = byte
                out += 1
            p += 1
        stop = p
        if stop > a and buffer[stop - 1] == 13:
            stop -= 1
            out -= 1  # the CR was copied into the line's last field
            crlf[i] = True
        starts[i] = a
        stops[i] = stop
        checked[i] = _check_line(buffer, a, stop, kinds)
        field += 1
        if field <= room:
            value_offsets[field] = out
        list_offsets[i + 1] = field
        p += 1  # past the LF
    fields = value_offsets[: field + 1]
    return starts, stops, crlf, nul, checked, list_offsets, fields, values[:out], field


def _gather_fields(
    offsets: I32, data: U8, starts: I64, counts: I64, rows: I64, columns: I64
) -> tuple[I32, U8, I64]:
    """Copy the fields ``columns`` of the records ``rows``: the buffers of one string array each.

    Record ``r``'s field ``c`` is the string ``starts[r] + c`` (``offsets`` into ``data``), empty
    when ``counts[r] <= c``. Returns the offsets of each column's strings (one row each,
    starting at 0), their bytes end to end and where each column's bytes start. What ``take``
    of each column gives, in one walk of the records, which reads memory in order.
    """
    k = len(columns)
    m = len(rows)
    out_offsets = np.empty((k, m + 1), dtype=np.int32)
    sizes = np.zeros(k, dtype=np.int64)
    for j in range(k):
        out_offsets[j, 0] = 0
    for i in range(m):
        r = rows[i]
        for j in range(k):
            column = columns[j]
            if counts[r] > column:
                at = starts[r] + column
                sizes[j] += offsets[at + 1] - offsets[at]
            out_offsets[j, i + 1] = sizes[j]
    bases = np.zeros(k + 1, dtype=np.int64)
    for j in range(k):
        bases[j + 1] = bases[j] + sizes[j]
    out = np.empty(bases[k], dtype=np.uint8)
    for i in range(m):
        r = rows[i]
        for j in range(k):
            column = columns[j]
            if counts[r] > column:
                at = starts[r] + column
                a = offsets[at]
                o = bases[j] + out_offsets[j, i]
                for p in range(offsets[at + 1] - a):
                    out[o + p] = data[a + p]
    return out_offsets, out, bases


def _parse_numbers(
    offsets: I32, data: U8, starts: I64, counts: I64, columns: I64, powers: F64
) -> tuple[F64, Bool]:
    """Read the fields ``columns`` of every record as numbers, one record after the other.

    Record ``r``'s field ``c`` is the string ``starts[r] + c`` (``offsets`` into ``data``), absent
    when ``counts[r] <= c`` (NaN). Reads ``-?digits[.digits]`` with at most 15 digits, exactly
    (m / 10**k, both exact as floats); every other string is NaN and ``declined``, for the
    caller to read. Walking each record's fields in order reads memory in order, where one
    field at a time would jump a record's length at each step.
    """
    n = len(starts)
    k = len(columns)
    values = np.full((k, n), np.nan)
    declined = np.zeros((k, n), dtype=np.bool_)
    for r in range(n):
        for j in range(k):
            column = columns[j]
            if counts[r] <= column:
                continue
            a = offsets[starts[r] + column]
            b = offsets[starts[r] + column + 1]
            negative = a < b and data[a] == 45
            if negative:
                a += 1
            mantissa = 0
            digits = 0
            decimals = 0
            point = False
            ok = a < b
            for p in range(a, b):
                byte = data[p]
                if 48 <= byte <= 57:
                    mantissa = mantissa * 10 + (byte - 48)
                    digits += 1
                    if point:
                        decimals += 1
                    if digits > 15:
                        ok = False
                        break
                elif byte == 46 and not point:
                    point = True
                else:
                    ok = False
                    break
            if not ok or digits == 0:
                declined[j, r] = True
                continue
            value = mantissa / powers[decimals]
            values[j, r] = -value if negative else value
    return values, declined


# --------------------------------------------------------------------------- tokeniser


def looks_like_sge(head: bytes) -> bool:
    """Whether the first bytes of a (decompressed) file look like a Grid Engine accounting file.

    True when the complete non-comment lines among the first 50 all pass the field check (at
    least 43 ``:``-separated fields, numbers where numbers belong), allowing one bad line in
    ten; a head of ``#`` lines only is accepted when it holds the ``# Version:`` line and the
    ``DO NOT MODIFY THIS FILE MANUALLY`` warning Grid Engine writes.
    """
    lines = head.split(b"\n")[:50]
    if len(lines) > 1 and not head.endswith(b"\n"):
        lines = lines[:-1]
    lines = [line.rstrip(b"\r") for line in lines if line.strip()]
    data = [line for line in lines if not line.startswith(b"#")]
    if not data:
        text = b"\n".join(lines)
        return b"# Version:" in text and b"DO NOT MODIFY THIS FILE MANUALLY" in text
    good = sum(1 for line in data if _LINE_RE.match(line))
    return good >= 1 and good * 10 >= len(data) * 9


def _cut_fields(tokens: list[str]) -> tuple[list[str] | None, str]:
    """Read the fields of a last line cut short: all but the last one present, if they are sound.

    Returns ``(fields, "")``, or ``(None, reason)`` when ``job_number`` did not survive or a
    surviving field is not what its column holds.
    """
    fields = tokens[:-1]  # the last field present may be cut short
    if len(fields) <= _I["job_number"]:
        return None, (
            "the file's last line has no line end and was cut short before job_number: "
            "nothing to recover"
        )
    for i, token in enumerate(fields[:_FULL]):
        if not _FIELD_RES[i].match(token):
            return None, (
                f"the file's last line has no line end and was cut short; its field "
                f"{SGE_FIELDS[i]} {token[:40]!r} is not a number"
            )
    return fields, ""


def _numpy(array: Arr, dtype: Any = np.float64) -> npt.NDArray[Any]:
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=dtype)


def _repeat(value: str, n: int) -> Arr:
    return _pa.array([value], pa.string()).take(_pa.array(np.zeros(n, dtype=np.int32)))


def _first_bad_field(tokens: Sequence[str]) -> str | None:
    for i, token in enumerate(tokens[:_FULL]):
        if not _FIELD_RES[i].match(token):
            return f"{SGE_FIELDS[i]} {token[:40]!r} is not a number"
    return None


def _placements(k: int, slots: int) -> Iterable[tuple[int, ...]]:
    """Every way of putting ``k`` surplus colons into ``slots`` fields."""
    for cuts in itertools.combinations(range(k + slots - 1), slots - 1):
        bounds = (-1, *cuts, k + slots - 1)
        yield tuple(bounds[j + 1] - bounds[j] - 1 for j in range(slots))


def _realign(tokens: list[str], width: int) -> tuple[list[str] | None, str]:
    """Put surplus colons back into free-text fields; ``(fields, "")`` or ``(None, reason)``."""
    n = len(tokens)
    core = _FULL if width >= _FULL else _MIN_FIELDS
    surplus = n - width
    text_fields = [i for i in _TEXT_FIELDS if i < core]
    if surplus > 12:
        return None, f"{n} fields where {width} expected: too many to re-align"
    fits: list[list[str]] = []
    for extra in _placements(surplus, len(text_fields)):
        grow = dict(zip(text_fields, extra, strict=True))
        fields: list[str] = []
        pos = 0
        for i in range(core):
            take = 1 + grow.get(i, 0)
            fields.append(":".join(tokens[pos : pos + take]))
            pos += take
        fields.extend(tokens[pos:])
        if all(_FIELD_RES[i].match(fields[i]) for i in range(core)):
            fits.append(fields)
            if len(fits) > 1:
                break
    if len(fits) == 1:
        return fits[0], ""
    if not fits:
        return None, (
            f"{n} ':'-separated fields where {width} expected, and no placement of the "
            f"{surplus} surplus ':' in job_name/account/category makes the numeric fields "
            "numbers"
        )
    return None, (
        f"{n} ':'-separated fields where {width} expected: the {surplus} surplus ':' fit in "
        "more than one way into job_name/account/category (ambiguous)"
    )


@dataclass
class _SgeLines:
    """One chunk's lines, decoded and classified (everything a line says by itself).

    The reference path holds the lines as a list of bytes and a decoded string array; the
    kernel's path (a chunk that is all UTF-8) holds only where each line starts and stops in
    the chunk, and makes Python objects for the few lines that need them.
    """

    data: bytes
    raw_lines: list[bytes] | None
    starts: I64
    stops: I64
    crlf: Bool
    no_newline: bool
    nul: Bool
    binary: Arr | None
    text: Arr | None
    non_utf8: Bool
    blank: Bool
    comment: Bool
    checked: Bool
    tokens: Arr
    counts: I64

    @property
    def n(self) -> int:
        """The number of lines."""
        return len(self.crlf)

    def raw(self, row: int) -> bytes:
        """Return the bytes of line ``row`` (no line end)."""
        if self.raw_lines is not None:
            return self.raw_lines[row]
        return self.data[int(self.starts[row]) : int(self.stops[row])]

    def texts(self, rows: I64) -> list[str]:
        """Return the decoded lines ``rows``."""
        if self.text is not None:
            return [str(line) for line in self.text.take(_pa.array(rows)).to_pylist()]
        return [self.raw(int(row)).decode() for row in rows]  # the chunk is UTF-8

    def binary_take(self, rows: I64) -> Arr:
        """Return the bytes of the lines ``rows`` as a binary array."""
        if self.binary is not None:
            return self.binary.take(_pa.array(rows))
        return _pa.array([self.raw(int(row)) for row in rows], pa.binary())

    @property
    def good(self) -> Bool:
        """The lines that pass the field check (not blank, ``#``, nor a NUL fragment)."""
        return ~self.blank & ~self.comment & ~self.nul & self.checked

    @property
    def last_cut(self) -> Bool:
        """The last line, when it has no line end (only ever in a file's last chunk)."""
        cut = np.zeros(self.n, dtype=bool)
        if self.no_newline and len(cut):
            cut[-1] = True
        return cut


def _sge_lines(data: bytes, lines: int | None = None, width: int = _FULL) -> _SgeLines:
    """Split a chunk into lines and classify them; ``lines`` is their count, if known.

    ``width`` is the file's usual field count (the room the kernel first makes for fields).
    """
    if len(data) < 2**31 and _use_kernel(0) and _is_utf8(data):
        return _sge_lines_kernel(data, lines, width)
    raw_lines, crlf, no_newline = split_lines(data)
    n_lines = len(raw_lines)
    nul = nul_lines(raw_lines, data)
    binary = _pa.array(raw_lines, pa.binary())
    text, non_utf8 = as_text(binary)
    if n_lines:
        blank = _numpy(_pc.equal(_pc.utf8_trim_whitespace(text), ""), bool) & ~nul
        comment = _numpy(_pc.starts_with(text, "#"), bool) & ~nul
    else:
        blank = comment = np.zeros(0, dtype=bool)
    tokens, checked = _split_colons(text)
    counts = _numpy(_pc.list_value_length(tokens), np.int64) if n_lines else np.zeros(0, np.int64)
    none = np.zeros(0, dtype=np.int64)
    return _SgeLines(
        data, raw_lines, none, none, crlf, no_newline, nul, binary, text, non_utf8, blank,
        comment, checked, tokens, counts,
    )  # fmt: skip


def _is_utf8(data: bytes) -> bool:
    """Whether the bytes are UTF-8 (Arrow's check: no Python string is made)."""
    offsets = np.array([0, len(data)], dtype=np.int32)
    one = _pa.Array.from_buffers(
        pa.binary(), 1, [None, _pa.py_buffer(offsets), _pa.py_buffer(data)]
    )
    try:
        one.cast(pa.string())
    except pa.ArrowInvalid:
        return False
    return True


def _sge_lines_kernel(data: bytes, lines: int | None = None, width: int = _FULL) -> _SgeLines:
    """:func:`_sge_lines` of a UTF-8 chunk by the kernel (:func:`_chunk_fields`): same values.

    The lines are not copied into Python objects nor into a string array: only their fields
    are (the tokens), and the lines that fail the check are decoded one by one.
    """
    buffer = np.frombuffer(data, dtype=np.uint8)
    no_newline = bool(len(data)) and data[-1] != _NEWLINE
    n = int(np.count_nonzero(buffer == _NEWLINE)) + int(no_newline) if lines is None else lines
    room = (width + 1) * n
    split = _chunk_fields(buffer, n, room, _KINDS)
    if split[-1] > room:  # more fields than the file's usual count: again, with room for all
        split = _chunk_fields(buffer, n, split[-1], _KINDS)
    starts, stops, crlf, nul, checked, list_offsets, value_offsets, values, _ = split
    fields = _pa.StringArray.from_buffers(
        len(value_offsets) - 1, _pa.py_buffer(value_offsets), _pa.py_buffer(values)
    )
    tokens = _pa.ListArray.from_arrays(_pa.array(list_offsets), fields)
    counts = np.diff(list_offsets).astype(np.int64)
    first = buffer[np.minimum(starts, max(len(data) - 1, 0))] if n else np.zeros(0, np.uint8)
    comment = (stops > starts) & (first == _HASH) & ~nul
    # a line that passes the check has 43 fields, hence a ':': never blank
    blank = np.zeros(n, dtype=bool)
    unchecked = np.flatnonzero(~checked & ~nul)
    if len(unchecked):
        text = _pa.array([data[int(starts[i]) : int(stops[i])] for i in unchecked], pa.string())
        blank[unchecked] = _numpy(_pc.equal(_pc.utf8_trim_whitespace(text), ""), bool)
    return _SgeLines(
        data, None, starts, stops, crlf, no_newline, nul, None, None, np.zeros(n, dtype=bool),
        blank, comment, checked, tokens, counts,
    )  # fmt: skip


def _split_colons(text: Arr) -> tuple[Arr, Bool]:
    """Split lines at ``:`` and check their fields: ``pc.split_pattern`` and ``_LINE``'s match.

    By the kernel once it is loaded (the same arrays), else by Arrow.
    """
    n = len(text)
    if not n or text.null_count or text.type != pa.string() or not _use_kernel(0):
        checked = (
            _numpy(_pc.match_substring_regex(text, _LINE, ignore_case=True), bool)
            if n
            else np.zeros(0, dtype=bool)
        )
        return _pc.split_pattern(text, ":"), checked
    _, offsets_buffer, data_buffer = text.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int32)
    data = np.frombuffer(data_buffer, dtype=np.uint8)
    first = text.offset
    lo, hi = int(offsets[first]), int(offsets[first + n])
    colons = int(np.count_nonzero(data[lo:hi] == _COLON))
    list_offsets, value_offsets, values, checked = _split_fields(
        offsets, data, first, n, colons, _KINDS
    )
    fields = _pa.StringArray.from_buffers(
        len(value_offsets) - 1, _pa.py_buffer(value_offsets), _pa.py_buffer(values)
    )
    return _pa.ListArray.from_arrays(_pa.array(list_offsets), fields), checked


@dataclass
class _SgeState:
    """What every chunk of a file needs: the file's usual field count (from the first pass)."""

    width: int = _FULL


def _good_counts(data: bytes, lines: int | None = None) -> tuple[I64, bool]:
    """Field counts of a chunk's good lines that end in a line end; whether it says SGE 6.0/6.1.

    ``lines`` is the chunk's line count (the last one without its line end), if known.

    The first pass's share of :class:`_SgeLines`, without splitting the lines into Python
    objects nor into fields: the lines are slices of one buffer (their line ends included,
    which :data:`_LINE_ENDED` allows for), the ``:`` and NUL bytes are counted with numpy, and
    only the field check runs per line (the good lines are those :class:`_SgeLines` finds).
    """
    buffer = np.frombuffer(data, dtype=np.uint8)
    if lines is None:
        n = int(np.count_nonzero(buffer == _NEWLINE))
    else:  # the lines that end in a line end
        n = lines - int(bool(len(data)) and data[-1] != _NEWLINE)
    kernel = _use_kernel(n)
    if kernel:
        ends, kernel_fields, kernel_nul, kernel_checked = _line_fields(buffer, n, _KINDS)
    else:
        ends = np.flatnonzero(buffer == _NEWLINE) + 1
    offsets = np.zeros(n + 1, dtype=np.int64)
    offsets[1:] = ends
    starts = offsets[:-1]
    tail = data[offsets[-1] :]  # a last line without line end: never counted
    hashes = np.flatnonzero(buffer[starts] == _HASH) if n else np.zeros(0, dtype=np.int64)
    heads = [data[int(starts[i]) : int(ends[i]) - 1] for i in hashes]
    old = False
    for head in [*heads, tail] if tail.startswith(b"#") else heads:
        line = head[:-1] if head.endswith(b"\r") else head
        match = _VERSION_RE.match(decode_line(line)[0])
        if b"\x00" not in line and match and re.match(r"^6\.[01](?!\d)", match.group(1)):
            old = True
    if not n:
        return np.zeros(0, dtype=np.int64), old
    if kernel:
        fields = kernel_fields
        candidate = (fields >= _MIN_FIELDS) & (buffer[starts] != _HASH) & ~kernel_nul
    else:
        colons = np.flatnonzero(buffer == _COLON)  # a line's count: the colons between its ends
        fields = np.searchsorted(colons, ends) - np.searchsorted(colons, starts) + 1
        candidate = (fields >= _MIN_FIELDS) & (buffer[starts] != _HASH)
        nuls = np.flatnonzero(buffer == 0)
        if len(nuls):
            candidate &= np.searchsorted(nuls, ends) == np.searchsorted(nuls, starts)
    if not candidate.any():
        return np.zeros(0, dtype=np.int64), old
    if kernel:
        return fields[candidate & kernel_checked], old
    kind = pa.binary() if offsets[-1] < 2**31 else pa.large_binary()
    width = np.int32 if kind == pa.binary() else np.int64
    lines = _pa.Array.from_buffers(
        kind, n, [None, _pa.py_buffer(offsets.astype(width)), _pa.py_buffer(data)]
    )
    text, _ = as_text(lines)
    checked = _numpy(_pc.match_substring_regex(text, _LINE_ENDED, ignore_case=True), bool)
    return fields[candidate & checked], old


def sge_width(path: StrPath, *, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> int:
    """Return a Grid Engine file's usual field count: the first of the two streaming passes.

    The usual count is the most common field count of the file's good lines (the smallest, on
    a tie; the last line is left out when it has no line end), else 43 when a ``# Version``
    line says 6.0 or 6.1, else 45. It decides how a line with surplus ``:`` is re-aligned, so
    it must be known before the first line is tokenised, and no single chunk knows it: this
    pass reads the file through the same guarded chunks, keeping only a histogram of counts
    (constant memory), and :func:`tokenize_sge_file` tokenises in a second pass. The read's
    findings are left to the second pass, which reports them.

    Parameters
    ----------
    path : str or path-like
        The file.
    chunk_bytes : int
        Decompressed bytes per chunk.

    Returns
    -------
    int
        The field count the tokeniser re-aligns lines to.
    """
    report = ReadReport(str(path), None)  # findings: the second pass reports them
    return _width_of_shares([_width_share(iter_chunks(path, report, chunk_bytes=chunk_bytes))])


_WidthShare: TypeAlias = tuple[dict[int, int], bool]
"""A part of a file's share of :func:`sge_width`: its good lines' field counts (count → lines),
and whether a ``# Version`` line says SGE 6.0/6.1."""


def _width_share(chunks: Iterable[Chunk]) -> _WidthShare:
    """Count the field counts of the good lines of ``chunks`` (a file, or one range of it).

    The first pass of :func:`sge_width`, whole or by range (``SGE_STREAM.split.share``, run on
    workers: module-level). Constant memory: a histogram.
    """
    histogram: Counter[int] = Counter()
    old = False
    for chunk in chunks:
        counted, old_here = _good_counts(chunk.data, chunk.lines)
        old = old or old_here
        if len(counted):
            values, freq = np.unique(counted, return_counts=True)
            histogram.update(dict(zip(values.tolist(), freq.tolist(), strict=True)))
    return dict(histogram), old


def _width_of_shares(shares: Iterable[_WidthShare]) -> int:
    """Return the usual field count from the shares of a file's parts, in order.

    The most common count (the smallest, on a tie), else 43 when a part saw a ``# Version``
    line saying 6.0 or 6.1, else 45.
    """
    histogram: Counter[int] = Counter()
    old = False
    for counts, old_here in shares:
        histogram.update(counts)
        old = old or old_here
    if histogram:
        return min(histogram, key=lambda count: (-histogram[count], count))
    return _MIN_FIELDS if old else _FULL


def _range_state(path: str, width: int) -> _SgeState:
    """Return the state a range of a file starts from: the file's usual field count.

    ``SGE_STREAM.split.start``: ``width`` is what :func:`_width_of_shares` made of the ranges'
    shares; the path is not needed (the count is the whole file's).

    Parameters
    ----------
    path : str
        The file the range is part of (unused).
    width : int
        The file's usual field count.

    Returns
    -------
    _SgeState
        The tokeniser's state at that count.
    """
    del path
    return _SgeState(width)


def sge_stream(path: StrPath, *, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> LineFormat[_SgeState]:
    """Return the Grid Engine format of one file for the streaming core (first pass done).

    Parameters
    ----------
    path : str or path-like
        The file (its usual field count is read here, by :func:`sge_width`).
    chunk_bytes : int
        Decompressed bytes per chunk of the first pass.

    Returns
    -------
    LineFormat
        For :func:`~gridtrace.logs._stream.tokenize_stream` or
        :func:`~gridtrace.logs._stream.write_stream` on that file.
    """
    width = sge_width(path, chunk_bytes=chunk_bytes)
    return LineFormat("sge", lambda: _SgeState(width), _tokenize_sge_chunk)


tokenize_sge_file = file_tokenizer(
    "sge",
    sge_stream,
    what="one Grid Engine ``accounting`` file",
    notes="""
        It is read twice through the core's guarded chunks. Why: a line with surplus ``:`` is
        re-aligned to the file's usual field count, the most common count over the WHOLE file,
        which no chunk knows; reading the whole file at once (as before) would make memory grow
        with the file. So a first pass (:func:`sge_width`) keeps only a histogram of the field
        counts of the good lines (constant memory), and the second tokenises with the count
        known. Cost: the first pass decompresses the file once more and runs the field check on
        every line (counting and checking in one walk of the chunk's bytes once the kernels are
        loaded): before the kernels, about a third of the read (0.20 of 0.62 s for 200,000
        lines of the Wynton file; BENCHMARKS.md, "Streaming reader core").
    """,
    stats="Filled in with the chunks of the second pass and the counts per chunk.",
    rows="``#`` line (``H``), job record (``J``) or parallel-environment slave record (``PE``)",
    others="""
        other line (blank, too few fields, non-numeric where a number belongs, a ``:`` inside a
        field that cannot be placed uniquely)
    """,
)


def _tokenize_sge_chunk(
    chunk: Chunk, state: _SgeState, *, site: str, src_file: str
) -> tuple[pa.Table, pa.Table]:
    """Tokenise one chunk of a Grid Engine file: its ``records`` and ``quarantine`` rows."""
    lines = _sge_lines(chunk.data, chunk.lines, state.width)
    base = chunk.first_line - 1  # lines before the chunk
    crlf = lines.crlf
    non_utf8, counts, checked, tokens = lines.non_utf8, lines.counts, lines.checked, lines.tokens
    n_lines = lines.n
    comment = lines.comment
    data = ~lines.blank & ~comment & ~lines.nul
    good = data & checked
    last_cut = lines.last_cut
    width = state.width

    reasons: dict[int, str] = {}
    realigned: dict[int, list[str]] = {}
    truncated: dict[int, list[str]] = {}
    last = n_lines - 1
    if n_lines and lines.no_newline and data[last] and counts[last] < width:
        # a crash cut the last line: keep the fields that surely survived
        fields, why = _cut_fields(lines.texts(np.array([last]))[0].split(":"))
        if fields is None:
            reasons[last] = why
        else:
            truncated[last] = fields
        good[last] = False
        data[last] = False
    failed = np.flatnonzero(data & ~checked)
    for j, line in zip(failed, lines.texts(failed), strict=True):
        row = int(j)
        fields = line.split(":")
        if len(fields) < _MIN_FIELDS:
            reasons[row] = (
                f"{len(fields)} ':'-separated fields, fewer than the {_MIN_FIELDS} of the "
                "oldest layout (SGE 6.0)"
            )
            continue
        if len(fields) > width:
            fixed, why = _realign(fields, width)
            if fixed is not None:
                realigned[row] = fixed
                continue
            reasons[row] = why
            continue
        reasons[row] = (
            f"{len(fields)} ':'-separated fields: {_first_bad_field(fields) or 'malformed'}"
        )
    for j in np.flatnonzero(lines.blank):
        reasons[int(j)] = "blank line"
    for j in np.flatnonzero(lines.nul):
        reasons[int(j)] = NUL_FRAGMENT_REASON

    tables: list[pa.Table] = []
    comment_rows = np.flatnonzero(comment)
    if len(comment_rows):
        header_attrs: list[list[tuple[str, str]]] = []
        for line in lines.texts(comment_rows):
            match = _VERSION_RE.match(str(line))
            body = str(line)[1:].strip()
            header_attrs.append([("version", match.group(1))] if match else [("text", body)])
        bad = non_utf8[comment_rows]
        tables.append(
            _records(
                site,
                src_file,
                comment_rows + 1 + base,
                _repeat("H", len(comment_rows)),
                pa.nulls(len(comment_rows), pa.string()),
                pa.nulls(len(comment_rows), pa.string()),
                _pa.array(header_attrs, pa.map_(pa.string(), pa.string())),
                flag_array(
                    len(comment_rows),
                    [
                        ("NON_UTF8", bad),
                        ("CRLF", crlf[comment_rows]),
                        ("NO_NEWLINE", last_cut[comment_rows]),
                    ],
                ),
                _pc.if_else(
                    _pa.array(bad),
                    lines.binary_take(comment_rows),
                    pa.scalar(None, pa.binary()),
                ),
            )
        )
    good_rows = np.flatnonzero(good)
    if len(good_rows):
        first, last = int(good_rows[0]), int(good_rows[-1])
        contiguous = last - first + 1 == len(good_rows)
        tables.append(
            _job_records(
                site,
                src_file,
                good_rows,
                tokens.slice(first, len(good_rows))
                if contiguous
                else tokens.take(_pa.array(good_rows)),
                lines,
                [
                    ("NON_UTF8", non_utf8[good_rows]),
                    ("CRLF", crlf[good_rows]),
                    ("NO_NEWLINE", last_cut[good_rows]),
                ],
                base,
            )
        )
    # lines read another way: re-aligned (their line end, if any, flagged), or cut short
    for read, flag, ended in (
        (realigned, "FIELD_SHIFT_REALIGNED", True),
        (truncated, "TRUNCATED", False),
    ):
        if not read:
            continue
        rows = np.array(sorted(read), dtype=np.int64)
        masks = [("NON_UTF8", non_utf8[rows]), ("CRLF", crlf[rows])]
        if ended:
            masks.append(("NO_NEWLINE", last_cut[rows]))
        masks.append((flag, np.ones(len(rows), dtype=bool)))
        values = _pa.array([read[int(r)] for r in rows], pa.list_(pa.string()))
        tables.append(_job_records(site, src_file, rows, values, lines, masks, base))
    if tables:
        records = pa.concat_tables(tables)
        line_order = _numpy(records.column("src_line").combine_chunks(), np.int64)
        if len(tables) > 1 and (np.diff(line_order) < 0).any():
            records = records.take(_pa.array(np.argsort(line_order, kind="stable")))
    else:
        records = RECORDS.empty_table()
    bad_rows = sorted(reasons)
    quarantine = quarantine_table(
        site=site,
        source_format="sge",
        src_file=src_file,
        lines=[i + 1 + base for i in bad_rows],
        reasons=[reasons[i] for i in bad_rows],
        raw=[lines.raw(i) for i in bad_rows],
    )
    return records, quarantine


SGE_STREAM: LineFormat[_SgeState] = LineFormat(
    "sge",
    _SgeState,
    _tokenize_sge_chunk,
    split=RangeSplit(share=_width_share, combine=_width_of_shares, start=_range_state),
)
"""The Grid Engine format for the streaming core, at the default field count.

A file's own spec, with its usual field count, is :func:`sge_stream`'s. A big file is split
anywhere: a first pass by range sums the ranges' histograms of field counts, and every range
is read at the usual count of the whole file."""


def _job_records(
    site: str,
    src_file: str,
    rows: I64,
    tokens: Arr,
    lines: _SgeLines,
    masks: list[tuple[str, Bool]],
    base: int = 0,
) -> pa.Table:
    """``J``/``PE`` records of the chunk's ``lines`` at ``rows``, already split into fields.

    ``base`` is the number of the file's lines before the chunk.

    ``masks`` are the line's flags; ``EXTRA_FIELDS`` is added here. The bytes are kept in
    ``raw`` for a line flagged ``NON_UTF8``, ``FIELD_SHIFT_REALIGNED`` or ``TRUNCATED``.
    """
    n = len(rows)
    counts = _numpy(_pc.list_value_length(tokens), np.int64)
    values = _pc.list_flatten(tokens)
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    longest = int(counts.max()) if n else 0
    names = [*SGE_FIELDS, *(f"field_{i + 1}" for i in range(_FULL, longest))]
    keys = _field_names(counts, names)
    attrs = _pa.MapArray.from_arrays(_pa.array(starts.astype(np.int32)), keys, values)

    # a line cut short: the fields it lost are null
    job, task, pe_taskid, end_time = _take_fields(
        values, starts[:-1], counts, ("job_number", "task_number", "pe_taskid", "end_time")
    )
    job_id_raw = _pc.if_else(
        _pc.fill_null(_pc.equal(task, "0"), True),
        job,
        _pc.binary_join_element_wise(job, task, "."),
    )
    pe_taskid = _pc.fill_null(pe_taskid, "NONE")
    slave = _pc.invert(_pc.or_(_pc.equal(pe_taskid, "NONE"), _pc.equal(pe_taskid, "")))
    record_type = _pc.if_else(slave, "PE", "J")
    extra = counts > _FULL
    flags = flag_array(n, [*masks, ("EXTRA_FIELDS", extra)])
    keep_raw = np.zeros(n, dtype=bool)
    for name, mask in masks:
        if name in {"NON_UTF8", "FIELD_SHIFT_REALIGNED", "TRUNCATED"}:
            keep_raw |= mask
    raw = (
        _pc.if_else(
            _pa.array(keep_raw),
            lines.binary_take(np.where(keep_raw, rows, 0)),
            pa.scalar(None, pa.binary()),
        )
        if keep_raw.any()
        else pa.nulls(n, pa.binary())
    )
    return _records(
        site,
        src_file,
        rows + 1 + base,
        record_type,
        end_time,
        job_id_raw,
        attrs,
        flags,
        raw,
    )


def _take_fields(
    values: Arr, starts: I64, counts: I64, names: Sequence[str], rows: I64 | None = None
) -> list[Arr]:
    """Return the fields ``names`` of the records ``rows`` (default: all), null where absent.

    Record ``r``'s fields are ``values[starts[r]:starts[r] + counts[r]]``. By the kernel
    (:func:`_gather_fields`, one walk for all the names) once it is loaded, else by ``take``.
    """
    n = len(starts)
    columns = [_I[name] for name in names]
    if rows is None:
        rows = np.arange(n, dtype=np.int64)
    present = [counts[rows] > column for column in columns]
    if len(rows) and not values.null_count and values.type == pa.string() and _use_kernel(0):
        _, offsets_buffer, data_buffer = values.buffers()
        offsets = np.frombuffer(offsets_buffer, dtype=np.int32)[values.offset :]
        data = np.frombuffer(data_buffer, dtype=np.uint8)
        out_offsets, out, bases = _gather_fields(
            offsets, data, starts, counts, rows, np.array(columns, dtype=np.int64)
        )
        taken = [
            _pa.StringArray.from_buffers(
                len(rows),
                _pa.py_buffer(out_offsets[j]),
                _pa.py_buffer(out[int(bases[j]) : int(bases[j + 1])]),
            )
            for j in range(len(columns))
        ]
    else:
        taken = [
            values.take(_pa.array(np.where(here, starts[rows] + column, 0)))
            for column, here in zip(columns, present, strict=True)
        ]
    return [
        array if here.all() else _pc.if_else(_pa.array(here), array, None)
        for array, here in zip(taken, present, strict=True)
    ]


def _field_names(counts: I64, names: Sequence[str]) -> Arr:
    """Build the attrs keys: ``names[: counts[i]]`` for each row ``i``, concatenated."""
    n = len(counts)
    if n and (counts == counts[0]).all():
        # one layout: a slice of the row's names repeated (shared by the chunks of a file)
        width = int(counts[0])
        repeated = _repeated_names(tuple(names[:width]), n)
        if repeated is not None:
            return repeated.slice(0, width * n)
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    position = np.arange(int(starts[-1]), dtype=np.int64) - np.repeat(starts[:-1], counts)
    return _pa.array(list(names), pa.string()).take(_pa.array(position))


_KEYS_BYTES = 64 << 20  # the most a cached array of repeated names holds
_keys_cache: dict[tuple[str, ...], Arr] = {}


def _repeated_names(row: tuple[str, ...], n: int) -> Arr | None:
    """Return ``row`` repeated at least ``n`` times as one string array (None when too big).

    Built from buffers (a take would copy each name), and kept for the next chunks, which
    slice it: every chunk of a file has the same layout.
    """
    cached = _keys_cache.get(row)
    if cached is not None and len(cached) >= len(row) * n:
        return cached
    width = len(row)
    encoded = [name.encode() for name in row]
    row_bytes = b"".join(encoded)
    rows = max(n + n // 4, 1024)  # room for the next chunks, a little longer or shorter
    if len(row_bytes) * rows > _KEYS_BYTES:
        return None
    row_offsets = np.zeros(width, dtype=np.int32)
    np.cumsum([len(e) for e in encoded[:-1]], out=row_offsets[1:])
    offsets = np.empty(width * rows + 1, dtype=np.int32)
    grid = offsets[:-1].reshape(rows, width)
    np.add(row_offsets[None, :], len(row_bytes) * np.arange(rows, dtype=np.int32)[:, None],
           out=grid)  # fmt: skip
    offsets[-1] = len(row_bytes) * rows
    keys = _pa.StringArray.from_buffers(
        width * rows, _pa.py_buffer(offsets), _pa.py_buffer(row_bytes * rows)
    )
    if len(_keys_cache) > 8:
        _keys_cache.clear()
    _keys_cache[row] = keys
    return keys


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
        site=site, source_format="sge", src_file=src_file, lines=lines, record_type=record_type,
        job_id_raw=job_id_raw, attrs=attrs, flags=flags, raw=raw, stamp=stamp,
    )  # fmt: skip


# --------------------------------------------------------------------------- assembler


# the number fields _jobs reads, in file order (the kernel reads them in one pass)
_PARSED = tuple(
    sorted(
        (
            "job_number", "task_number", "submission_time", "start_time", "end_time", "failed",
            "exit_status", "cpu", "maxvmem", "ru_maxrss", "slots", "ru_wallclock",
        ),
        key=_I.__getitem__,
    )
)  # fmt: skip


_KEPT_TEXT = (
    "category",
    "granted_pe",
    "owner",
    "group",
    "project",
    "qname",
    "job_name",
    "job_number",
)
"""The text fields of the records :func:`_jobs` reads for the jobs."""


class _Fields:
    """Positional access to the aligned fields of ``J``/``PE`` records."""

    def __init__(self, table: pa.Table) -> None:
        # the values of the chunks' maps (their keys are not needed: not copied), read chunk by
        # chunk: copied end to end only when a caller needs them as one array (``items``)
        self._parts: list[tuple[Arr, I64, I64]] = []  # values, record starts, field counts
        bounds: list[I64] = [np.zeros(1, dtype=np.int64)]
        total = 0
        chunks: list[Any] = table.column("attrs").chunks
        for chunk in chunks:
            chunk_offsets = _numpy(chunk.offsets, np.int64)
            first, last = int(chunk_offsets[0]), int(chunk_offsets[-1])
            local = chunk_offsets - first
            self._parts.append((chunk.items.slice(first, last - first), local[:-1], np.diff(local)))
            bounds.append(chunk_offsets[1:] - first + total)
            total += last - first
        offsets = np.concatenate(bounds)
        self.n = len(offsets) - 1
        self._items: Any = None
        self.starts = offsets[:-1]
        self.counts = np.diff(offsets)
        self.unreadable = np.zeros(self.n, dtype=bool)  # a number field holding inf or nan
        self.parsed: dict[str, tuple[F64, Bool]] | None = None

    @property
    def items(self) -> Any:
        """The values of every record's fields, end to end (``starts`` index them)."""
        if self._items is None:
            items = [part[0] for part in self._parts]
            self._items = (
                (_pa.concat_arrays(items) if len(items) != 1 else items[0])
                if items
                else _pa.array([], pa.string())
            )
        return self._items

    def _parse(self) -> dict[str, tuple[F64, Bool]]:
        """Read the number fields :func:`_jobs` needs with the kernel (empty without it)."""
        parts = self._parts
        if any(v.null_count or v.type != pa.string() for v, _, _ in parts) or not _use_kernel(0):
            return {}
        columns = np.array([_I[name] for name in _PARSED], dtype=np.int64)
        read: list[tuple[F64, Bool]] = []
        for values, starts, counts in parts:
            _, offsets_buffer, data_buffer = values.buffers()
            offsets = np.frombuffer(offsets_buffer, dtype=np.int32)[values.offset :]
            data = np.frombuffer(data_buffer, dtype=np.uint8)
            read.append(_parse_numbers(offsets, data, starts, counts, columns, _POWERS))
        numbers = np.concatenate([r[0] for r in read], axis=1)
        declined = np.concatenate([r[1] for r in read], axis=1)
        return {name: (numbers[j], declined[j]) for j, name in enumerate(_PARSED)}

    def absent(self, name: str) -> Bool:
        """Rows without the field (a last line cut short)."""
        missing: Bool = self.counts <= _I[name]
        return missing

    def text(self, name: str, rows: I64 | None = None) -> Arr:
        """Return the field's strings (null where absent) of the records ``rows`` (default: all)."""
        return self.texts((name,), rows)[name]

    def texts(self, names: Sequence[str], rows: I64 | None = None) -> dict[str, Arr]:
        """Return the fields' strings (null where absent) of the records ``rows`` (default: all)."""
        if not self.n:
            return {name: _pa.array([], pa.string()) for name in names}
        if rows is None and len(self._parts) > 1:  # chunk by chunk, then end to end
            parts = [_take_fields(values, s, c, names) for values, s, c in self._parts]
            return {
                name: _pa.concat_arrays([part[j] for part in parts]) for j, name in enumerate(names)
            }
        taken = _take_fields(self.items, self.starts, self.counts, names, rows)
        return dict(zip(names, taken, strict=True))

    def number(self, name: str) -> F64:
        if not self.n:
            return np.zeros(0)
        if self.parsed is None:
            self.parsed = self._parse()
        if name in self.parsed:
            # the kernel read the plain numbers; Arrow (else Python) reads the others, as below
            values, declined = self.parsed[name]
            values = values.copy()
            if declined.any():
                where = self.starts[declined] + _I[name]
                values[declined] = _cast_numbers(self.items.take(_pa.array(where)))
        else:
            values = _cast_numbers(self.text(name))
        odd = ~np.isfinite(values) & ~self.absent(name)
        self.unreadable |= odd
        values[~np.isfinite(values)] = np.nan  # "inf", "-nan" as written by some versions
        return values


def _cast_numbers(text: Arr) -> F64:
    """Numbers of a string array: Arrow's cast, else Python's float (NaN where not a number)."""
    try:
        values: F64 = _numpy(text.cast(pa.float64()).fill_null(np.nan)).copy()
    except pa.ArrowInvalid:
        # a form Arrow's parser refuses: Python's float, NaN where not a number
        values = np.array([_to_float(v) for v in text.to_pylist()], dtype=np.float64)
    return values


def _to_float(text: str | None) -> float:
    if text is None:
        return np.nan
    try:
        return float(text)
    except ValueError:
        return np.nan


def _stamps(values: F64) -> tuple[F64, Bool]:
    """Epoch seconds (0 → NaN) and which values were milliseconds."""
    ms = values > _MS_THRESHOLD
    seconds = np.where(ms, np.floor(values / 1000.0), values)
    return np.where(seconds > 0, seconds, np.nan), ms


_MAX_RUNS = 64


def _take_runs(table: pa.Table, rows: npt.NDArray[np.int64]) -> pa.Table:
    """Return ``table.take(rows)`` (rows ascending) as slices when the rows form a few runs.

    The records of an accounting file are one run after its header lines: slicing shares
    their buffers, where ``take`` copies every attribute of every record.
    """
    if not len(rows):
        return table.slice(0, 0)
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    if len(breaks) >= _MAX_RUNS:
        return table.take(_pa.array(rows))
    starts = rows[np.concatenate([[0], breaks])]
    ends = rows[np.concatenate([breaks - 1, [len(rows) - 1]])] + 1
    return pa.concat_tables(
        [table.slice(int(a), int(b - a)) for a, b in zip(starts, ends, strict=True)]
    )


def assemble_sge(parts: Sequence[FileParse], *, tz: str | None = None) -> ParseResult:
    """Assemble tokenised accounting files, given in reading order, into a :class:`ParseResult`.

    Parameters
    ----------
    parts : sequence of FileParse
        What :func:`tokenize_sge_file` returned for each file.
    tz : str, optional
        Ignored: Grid Engine writes UTC epochs. Accepted so that every format assembles alike.

    Returns
    -------
    ParseResult
        ``info`` holds ``format``, ``sge_versions`` (from ``# Version`` lines),
        ``sge_millisecond_files`` (files with millisecond stamps), ``sge_realigned`` (records
        re-aligned after a ``:`` inside a field), ``sge_pe_slaves`` and
        ``sge_orphan_pe_slaves`` (slave records folded / without a job record) and
        ``sge_duplicates_folded``.
    """
    del tz
    records = parts_records(parts)
    quarantine = parts_quarantine(parts)
    kinds = records.column("record_type")
    heads = records.filter(_pc.equal(kinds, "H"))
    versions: list[str] = []
    for attrs in heads.column("attrs").to_pylist():
        for key, value in attrs or ():
            if key == "version" and value not in versions:
                versions.append(value)
    rows = np.flatnonzero(_numpy(_pc.is_in(kinds, _pa.array(["J", "PE"])), bool))
    rec = _take_runs(records, rows)
    jobs, info = _jobs(rec)
    dropped = info.pop("sge_dropped_copies")
    if dropped.any():
        marked = np.zeros(records.num_rows, dtype=bool)
        marked[rows[dropped]] = True
        flags = append_flag(records.column("flags"), marked, "DUPLICATE_DROPPED")
        records = records.set_column(records.schema.get_field_index("flags"), "flags", flags)
    info.update(nul_fragment_counts(quarantine))
    return result_of_parts(
        parts,
        records=records,
        jobs=jobs,
        quarantine=quarantine,
        info={"format": "sge", "sge_versions": versions, **info},
    )


def _int_text(values: F64) -> Arr:
    """Decimal strings of whole numbers (null where NaN)."""
    return int_or_null(values, pa.int64()).cast(pa.string())


def _pair_keys(job: F64, task: F64) -> I64 | None:
    """One integer per (job, task) pair, equal where the pairs are (a missing task too).

    None when a job number is missing, or a number is not a whole number in [0, 2**31): the
    caller then compares the pairs themselves.
    """
    if np.isnan(job).any():
        return None
    whole_task = np.where(np.isnan(task), -1.0, task)
    fits = (job >= 0) & (job < 2**31) & (whole_task >= -1) & (whole_task < 2**31)
    if not (
        fits.all()
        and (job == np.floor(job)).all()
        and (task == np.floor(task))[~np.isnan(task)].all()
    ):
        return None
    keys: I64 = job.astype(np.int64) * 2**32 + (whole_task.astype(np.int64) + 1)
    return keys


def _shared(job: F64, task: F64) -> Bool:
    """Which (job, task) pairs another record also holds (NaN equal to NaN, as in pandas)."""
    keys = _pair_keys(job, task)
    if keys is not None:  # one integer column: sorted, the repeated keys are neighbours
        ordered = np.sort(keys)
        repeated = ordered[1:][ordered[1:] == ordered[:-1]]
        by_key: Bool = np.isin(keys, repeated)
        return by_key
    pairs = pd.DataFrame({"job": job, "task": task})
    shared: Bool = pairs.duplicated(keep=False).to_numpy()
    return shared


def _jobs(rec: pa.Table) -> tuple[pa.Table, dict[str, Any]]:
    n_all = rec.num_rows
    get = _Fields(rec)
    is_slave = _numpy(_pc.equal(rec.column("record_type"), "PE").combine_chunks(), bool)
    src_line = _numpy(rec.column("src_line").combine_chunks(), np.int64)
    src_file_all = rec.column("src_file").combine_chunks()
    # records come in reading order: files in the order given, then lines; dictionary codes
    # number the files in order of first appearance
    file_codes = src_file_all.dictionary_encode()
    file_no = _numpy(file_codes.indices, np.int64) if n_all else np.zeros(0, np.int64)
    job_number = get.number("job_number")
    task = get.number("task_number")
    submit_raw = get.number("submission_time")
    start_raw = get.number("start_time")
    end_raw = get.number("end_time")
    submit_all, ms_submit = _stamps(submit_raw)
    start_all, ms_start = _stamps(start_raw)
    end_all, ms_end = _stamps(end_raw)
    ms_all = ms_submit | ms_start | ms_end
    # the text fields of every record in one walk (the kernel's); the jobs keep most records
    text_all = get.texts(("hostname", *_KEPT_TEXT))
    host_text = _pc.fill_null(text_all["hostname"], "")
    host_codes = host_text.dictionary_encode()
    host_no = _numpy(host_codes.indices, np.int64) if n_all else np.zeros(0, np.int64)
    failed_all = get.number("failed")
    exit_all = get.number("exit_status")
    cpu_all = get.number("cpu")
    vmem_all = get.number("maxvmem")
    rss_all = get.number("ru_maxrss") * 1024.0
    rec_flags = rec.column("flags")
    shifted_all = flag_mask(rec_flags, "FIELD_SHIFT_REALIGNED")
    non_utf8_all = flag_mask(rec_flags, "NON_UTF8")
    truncated_all = flag_mask(rec_flags, "TRUNCATED")
    no_newline_all = flag_mask(rec_flags, "NO_NEWLINE")
    # fields a cut last line lost are not known; the flags a 0 there would set are not set
    lost = {name: get.absent(name) for name in ("submission_time", "start_time", "category")}
    state_lost = get.absent("start_time") | get.absent("end_time")
    state_lost |= get.absent("failed") | get.absent("exit_status")

    masters = np.flatnonzero(~is_slave)
    slaves = np.flatnonzero(is_slave)

    # fold masters written twice (same job, task, times, host, failed, exit; started); only
    # records whose job and task another record shares can be copies
    later_copy = np.zeros(len(masters), dtype=bool)
    has_copy = np.zeros(len(masters), dtype=bool)
    shared = _shared(job_number[masters], task[masters])
    if shared.any():
        copies = masters[shared]
        frame = pd.DataFrame(
            {
                "job": job_number[copies],
                "task": task[copies],
                "submit": submit_raw[copies],
                "start": start_raw[copies],
                "end": end_raw[copies],
                "host": host_no[copies],
                "failed": failed_all[copies],
                "exit": exit_all[copies],
            }
        )
        started_c = start_raw[copies] > 0
        later_copy[shared] = frame.duplicated(keep="last").to_numpy() & started_c
        has_copy[shared] = frame.duplicated(keep=False).to_numpy() & started_c
    keep = masters[~later_copy]
    duplicate = has_copy[~later_copy]
    dropped = np.zeros(n_all, dtype=bool)
    dropped[masters[later_copy]] = True
    n = len(keep)
    take_keep = _pa.array(keep)

    job = job_number[keep]
    tsk = task[keep]
    submit = submit_all[keep].copy()
    start = start_all[keep]
    end = end_all[keep]
    ms = ms_all[keep].copy()
    submit_zero = np.isnan(submit)
    submit_lost = lost["submission_time"][keep]

    # submission_time 0: the job's other attempt's submit when exactly one is known
    adopted = np.zeros(n, dtype=bool)
    if submit_zero.any():
        zero = pd.DataFrame(
            {"job": job[submit_zero], "task": tsk[submit_zero], "row": np.flatnonzero(submit_zero)}
        )
        # only the records of those jobs can give a submit time (the merge below keeps no other)
        related = ~submit_zero
        keys = _pair_keys(job, tsk)
        if keys is not None:
            related &= np.isin(keys, keys[submit_zero])
        known = pd.DataFrame({"job": job, "task": tsk, "submit": submit})[related]
        known = known.merge(zero[["job", "task"]].drop_duplicates(), on=["job", "task"])
        counted = (
            known.drop_duplicates()
            .groupby(["job", "task"])["submit"]
            .agg(["first", "size"])
            .reset_index()
        )
        single = counted[counted["size"] == 1]
        matched = zero.merge(single, on=["job", "task"])
        matched_rows = matched["row"].to_numpy(dtype=np.int64)
        submit[matched_rows] = matched["first"].to_numpy(dtype=np.float64)
        adopted[matched_rows] = True

    # attempts: one job = (job, task, submit); attempts in reading order. A record whose job
    # and task no other shares is attempt 0 of 1; the others are sorted and counted
    attempt = np.zeros(n, dtype=np.int64)
    n_attempts = np.ones(n, dtype=np.int64)
    retried = _shared(job, tsk)
    several = np.flatnonzero(retried)
    order = pd.DataFrame(
        {
            "job": job[several],
            "task": np.nan_to_num(tsk[several], nan=-1.0),  # a cut line without task_number
            "submit": np.nan_to_num(submit[several], nan=-1.0),
            "file": file_no[keep][several],
            "line": src_line[keep][several],
            "row": several,
        }
    ).sort_values(["job", "task", "submit", "file", "line"], kind="stable")
    groups = order.groupby(["job", "task", "submit"], sort=False)
    rows_sorted = np.concatenate([order["row"].to_numpy(), np.flatnonzero(~retried)])
    attempt[order["row"].to_numpy()] = groups.cumcount().to_numpy()
    n_attempts[order["row"].to_numpy()] = groups["row"].transform("size").to_numpy()

    # PE slave records fold into the attempt running when they started
    cpu = cpu_all[keep].copy()
    vmem = vmem_all[keep].copy()
    rss = rss_all[keep].copy()
    extra_hosts: dict[int, list[str]] = {}
    slave_count = np.zeros(n, dtype=np.int64)
    orphans = 0
    if len(slaves):
        host_names = host_codes.dictionary.to_pylist()
        by_job: dict[tuple[float, float], list[int]] = {}
        for sorted_row in rows_sorted:
            by_job.setdefault((job[sorted_row], tsk[sorted_row]), []).append(int(sorted_row))
        for s in slaves:
            candidates = by_job.get((job_number[s], task[s]))
            if not candidates:
                orphans += 1
                continue
            target = candidates[-1]
            s_start = start_all[s]
            if not np.isnan(s_start):
                for candidate in candidates:
                    if not np.isnan(start[candidate]) and start[candidate] <= s_start:
                        target = candidate
            slave_count[target] += 1
            cpu[target] = np.nansum([cpu[target], cpu_all[s]])
            vmem[target] = np.fmax(vmem[target], vmem_all[s])
            rss[target] = np.fmax(rss[target], rss_all[s])
            ms[target] |= ms_all[s]
            shifted_all[keep[target]] |= shifted_all[s]
            non_utf8_all[keep[target]] |= non_utf8_all[s]
            master_host = host_names[host_no[keep[target]]]
            host = host_names[host_no[s]]
            known_hosts = extra_hosts.setdefault(target, [])
            if host and host != master_host and host not in known_hosts:
                known_hosts.append(host)

    kept_text = (
        text_all if n == n_all else {name: text_all[name].take(take_keep) for name in _KEPT_TEXT}
    )
    col = kept_text.__getitem__

    def kept(array: Arr) -> Arr:
        """Return the rows of the kept records (all of them, most often: no take then)."""
        return array if n == n_all else array.take(take_keep)

    master_host_text = kept(host_text)
    failed = failed_all[keep]
    status = exit_all[keep]
    slots = get.number("slots")[keep]
    wallclock = get.number("ru_wallclock")[keep]
    category_codes = _pc.fill_null(col("category"), "").dictionary_encode()
    parsed = [_Category(str(text)) for text in category_codes.dictionary.to_pylist()]
    code = _numpy(category_codes.indices, np.int64) if n else np.zeros(0, np.int64)

    def per_category(values: list[Any]) -> F64:
        by_row: F64 = np.asarray(values, dtype=np.float64)[code]
        return by_row

    walltime_req = per_category([np.nan if c.walltime is None else c.walltime for c in parsed])
    mem_slot = per_category([np.nan if c.mem_per_slot is None else c.mem_per_slot for c in parsed])
    category_lost = lost["category"][keep]
    pe_slots = per_category([np.nan if c.pe_slots is None else c.pe_slots for c in parsed])
    pe_slots = np.where(category_lost, np.nan, pe_slots)

    def category_flag(name: str) -> Bool:
        hit: Bool = per_category([getattr(c, name) for c in parsed]).astype(bool)
        return hit & ~category_lost

    mem_bad = category_flag("mem_bad")
    pe_range = category_flag("pe_range")

    started = ~np.isnan(start)
    ended = ~np.isnan(end)
    backwards = started & ended & (end < start)
    run = np.where(started & ended & ~backwards, end - start, np.nan)
    wait = np.where(started, start - submit, np.nan)
    early_start = started & ~np.isnan(submit) & (start < submit)
    walltime_used = np.where(started, wallclock, np.nan)
    mismatch = ~np.isnan(run) & ~np.isnan(walltime_used) & (np.abs(run - walltime_used) > 60)

    granted_pe = _pc.fill_null(col("granted_pe"), "NONE")
    has_pe = _numpy(_pc.invert(_pc.is_in(granted_pe, _pa.array(["NONE", ""]))), bool)
    parallel = has_pe & (slots > 1)
    partial = parallel & (slave_count == 0) & started
    has_host = _numpy(_pc.not_equal(master_host_text, ""), bool)
    n_hosts = has_host.astype(np.float64) + np.array(
        [len(extra_hosts.get(i, ())) for i in range(n)] if extra_hosts else np.zeros(n)
    )
    nodes_alloc = np.where(started & ~partial & (n_hosts > 0), n_hosts, np.nan)
    cores_alloc = np.where(started, slots, np.nan)
    mem_req = mem_slot * slots
    rss_zero = rss == 0
    rss = np.where(rss_zero, np.nan, rss)

    # exit status and state
    signal_inferred = (status > 128) & (status <= 128 + _MAX_SIGNAL)
    signal = np.where(signal_inferred, status - 128, np.nan)
    over_limit = (started & ~np.isnan(run) & ~np.isnan(walltime_req) & (run >= walltime_req)) & (
        signal_inferred | (failed == _LIMIT_CODE)
    )
    state_names = np.array(["FAILED", "DELETED", "REQUEUED", "TIMEOUT", "COMPLETED", "UNKNOWN"])
    unknown = state_lost[keep]  # a cut last line lost what the state is read from
    state_code = np.select(
        [
            unknown,
            ~started & (failed != 0),
            ~started,
            np.isin(failed, _REQUEUE_CODES),
            over_limit,
            failed != 0,
            status == 0,
        ],
        [5, 0, 1, 2, 3, 0, 4],
        default=0,
    )
    earlier = attempt < n_attempts - 1
    final_code = np.where(earlier, 2, state_code)
    start_lost = lost["start_time"][keep]
    # a number too large for its column (a damaged field) is null and flagged, never wrapped
    fitted, too_big = fitted_numbers(
        {
            "job_seq": job,
            "array_index": tsk,
            "submit_time": submit,
            "start_time": start,
            "end_time": end,
            "wait_s": wait,
            "run_s": run,
            "walltime_used_s": walltime_used,
            "walltime_req_s": walltime_req,
            "cores_req": pe_slots,
            "nodes_alloc": nodes_alloc,
            "cores_alloc": cores_alloc,
            "mem_req_bytes": mem_req,
            "mem_used_bytes": rss,
            "vmem_used_bytes": vmem,
            "exit_code": status,
            "exit_signal": signal,
        }
    )
    (
        job,
        tsk,
        submit,
        start,
        end,
        wait,
        run,
        walltime_used,
        walltime_req,
        pe_slots,
        nodes_alloc,
        cores_alloc,
        mem_req,
        rss,
        vmem,
        status,
        signal,
    ) = fitted
    masks: list[tuple[str, Bool]] = [
        ("NON_UTF8", non_utf8_all[keep]),
        ("TRUNCATED", truncated_all[keep]),
        ("NO_NEWLINE", no_newline_all[keep]),
        ("TIME_MILLISECONDS", ms),
        ("SUBMIT_TIME_ZERO", submit_zero & ~submit_lost),
        ("SUBMIT_FROM_ATTEMPT", adopted),
        ("NEVER_STARTED", ~started & ~start_lost),
        ("DUPLICATE", duplicate),
        ("FIELD_SHIFT_REALIGNED", shifted_all[keep]),
        ("PE_SLAVES_FOLDED", slave_count > 0),
        ("HOSTS_PARTIAL", partial),
        ("PE_RANGE", pe_range),
        ("SIGNAL_INFERRED", signal_inferred),
        ("END_BEFORE_START", backwards),
        ("START_BEFORE_SUBMIT", early_start),
        ("WALLTIME_MISMATCH", mismatch),
        ("MEM_PER_SLOT", ~np.isnan(mem_req)),
        ("MEM_UNPARSED", mem_bad),
        ("MEM_REQ_CONFLICT", category_flag("mem_conflict")),
        ("MEM_UNIT_BYTES", category_flag("mem_no_unit")),
        ("MAXRSS_ZERO", rss_zero),
        ("CORES_REQ_SERIAL", category_flag("serial")),
        ("RESOURCE_REPEATED", category_flag("repeated")),
        ("WALLTIME_REQ_SOFT", category_flag("walltime_soft")),
        ("WALLTIME_REQ_UNPARSED", category_flag("walltime_bad")),
        ("TIMEOUT_INFERRED", (final_code == 3)),
        ("VALUE_UNREADABLE", get.unreadable[keep] | too_big),
    ]
    for failed_code in sorted({int(c) for c in np.unique(failed[~np.isnan(failed)]) if c}):
        masks.append((f"SGE_FAILED_{failed_code}", failed == failed_code))
    for k, name in enumerate(state_names):
        if name != "REQUEUED":
            masks.append((f"STATE_WAS_{name}", earlier & (state_code == k)))

    site = kept(rec.column("site").combine_chunks())
    # a job number too large for job_seq keeps its text as the id
    job_seq = int_or_null(job, pa.int64())
    job_text = _pc.coalesce(job_seq.cast(pa.string()), col("job_number"))
    id_text = _pc.if_else(
        _pa.array(tsk > 0),
        _pc.binary_join_element_wise(job_text, _int_text(tsk), "."),
        job_text,
    )
    submit_seconds = int_or_null(submit, pa.int64())
    submit_text = _pc.fill_null(submit_seconds.cast(pa.string()), "unknown")
    job_key = _pc.binary_join_element_wise(site, ":", id_text, "@", submit_text, "")
    ts = pa.timestamp("s", tz="UTC")

    def times(values: F64) -> Arr:
        return int_or_null(values, pa.int64()).cast(ts)

    if extra_hosts:
        host_lists = [
            ([h] if h else []) + extra_hosts.get(i, [])
            for i, h in enumerate(master_host_text.to_pylist())
        ]
        exec_hosts = _pa.array([h or None for h in host_lists], pa.list_(pa.string()))
    else:
        exec_hosts = _pa.ListArray.from_arrays(
            _pa.array(np.arange(n + 1, dtype=np.int32)),
            master_host_text,
            mask=_pa.array(~has_host),
        )
    project = col("project")
    account = _pc.if_else(_pc.is_in(project, _pa.array(["NONE", ""])), None, project)
    columns: dict[str, Any] = {
        "site": site,
        "source_format": _repeat("sge", n),
        "job_key": job_key,
        "job_id_raw": id_text,
        "job_seq": job_seq,
        "array_index": int_or_null(np.where(tsk > 0, tsk, np.nan), pa.int32()),
        "attempt": _pa.array(attempt.astype(np.int16), pa.int16()),
        "n_attempts": _pa.array(n_attempts.astype(np.int16), pa.int16()),
        "user": col("owner"),
        "group": col("group"),
        "account": account,
        "queue": col("qname"),
        "job_name": col("job_name"),
        "submit_time": submit_seconds.cast(ts),
        "start_time": times(start),
        "end_time": times(end),
        "wait_s": int_or_null(wait, pa.int64()),
        "run_s": int_or_null(run, pa.int64()),
        "walltime_used_s": int_or_null(walltime_used, pa.int64()),
        "walltime_req_s": int_or_null(walltime_req, pa.int64()),
        "cpu_time_s": _pa.array(cpu, pa.float64(), from_pandas=True),
        "cores_req": int_or_null(pe_slots, pa.int32()),
        "nodes_alloc": int_or_null(nodes_alloc, pa.int32()),
        "cores_alloc": int_or_null(cores_alloc, pa.int32()),
        "exec_hosts": exec_hosts,
        "mem_req_bytes": int_or_null(mem_req, pa.int64()),
        "mem_used_bytes": int_or_null(rss, pa.int64()),
        "vmem_used_bytes": int_or_null(vmem, pa.int64()),
        "exit_code": int_or_null(status, pa.int32()),
        "exit_signal": int_or_null(signal, pa.int32()),
        "state": _pa.array(state_names).take(_pa.array(final_code)),
        "src_file": kept(src_file_all),
        "src_line": _pa.array(src_line[keep], pa.int64()),
        "flags": flag_array(n, masks),
    }
    table = pa.Table.from_arrays(
        [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in JOBS], schema=JOBS
    )
    ms_codes = np.unique(file_no[ms_all]) if n_all else np.zeros(0, np.int64)
    file_names = file_codes.dictionary.to_pylist() if n_all else []
    info = {
        "sge_dropped_copies": dropped,
        "sge_millisecond_files": [str(file_names[int(c)]) for c in ms_codes],
        "sge_realigned": int(shifted_all.sum()),
        "sge_pe_slaves": int(len(slaves) - orphans),
        "sge_orphan_pe_slaves": orphans,
        "sge_duplicates_folded": int(later_copy.sum()),
    }
    return table, info


read_sge = file_reader(
    "sge",
    tokenize_sge_file,
    assemble_sge,
    what="Grid Engine ``accounting`` files",
    paths="""
        Files (plain or gzip/bzip2/xz, detected by content) or folders of them, in reading
        order (a job's retries are numbered in that order).
    """,
    examples="""
        >>> result = read_sge("accounting", site="wynton")  # doctest: +SKIP
        >>> result.jobs.num_rows  # doctest: +SKIP
        1000
    """,
)
