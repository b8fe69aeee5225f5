"""The IBM Spectrum LSF reader: ``lsb.acct`` (and ``lsb.events``) into ``records`` and ``jobs``.

An ``lsb.acct`` file holds one record per line, fields separated by blanks; strings are quoted
(``"regular"``), a quote inside a string is doubled (``"a ""b"" c"``), numbers are bare, and an
unavailable value is ``""`` for a string, ``0`` for a time or number and ``-1`` for a resource
usage (IBM, *lsb.acct*). The first field names the event; gridtrace reads ``JOB_FINISH`` (LSF 7
to 10) into jobs and keeps every other event (``EVENT_ADRSV_FINISH``, ``JOB_RESIZE``, and the
``JOB_NEW``, ``JOB_START``, … of an ``lsb.events`` file) in ``records`` only.

Reading is two steps, like every format of the registry: :func:`tokenize_lsf_file` turns one file
into ``records`` (record type = the event name; ``attrs`` map the documented field names onto the
values, unquoted) and ``quarantine``; :func:`assemble_lsf` turns the ``JOB_FINISH`` records into
``jobs``. Every time in the file is a UTC epoch, so no zone is needed.

The ``JOB_FINISH`` layout
-------------------------
The fields up to ``maxRSwap`` (:data:`LSF_REQUIRED_FIELDS`, with the two host lists) are present
in every version from LSF 7; a record with fewer is quarantined with the field it ends before.
Two counted lists sit among them: ``numAskedHosts`` followed by that many host names, and
``numExHosts`` followed by that many execution hosts, each either one slot (the host repeated per
slot) or ``N*host`` (``LSF_HPC_EXTENSIONS=SHORT_EVENTFILE``). Newer versions append fields
(:data:`LSF_TAIL_FIELDS`), with more counted sections: ``submitEXT`` (key, value), host rusage,
networks, allocated slots, index ranges, GPU rusage, storage, key-value pairs. A record may end
anywhere in that tail (older versions); fields after the last known one are kept as
``unknown1``, ``unknown2``, … and flagged ``EXTRA_FIELDS``, as XDMoD does; a tail section that
cannot be read (its count is not a number, or runs past the end) stops the tail there, the rest
kept as ``unknownN``, flag ``TAIL_UNPARSED``. Counted sections are stored in ``attrs`` as JSON
arrays of their tokens.

Two facts differ from IBM's 10.1 page and were checked against real records:

* A host rusage entry is six tokens in the LSF 9.1 record of XDMoD's fixture (host, mem, swap,
  utime, stime and one more; the utimes add up to ``ru_utime``), five in the 10.1 manual. The
  width is taken from the record: the one that leaves host names in host positions, numbers
  after them and the quoted ``effectiveResReq`` three fields after the section; when both fit,
  six before LSF 10 and five from 10 on, flag ``HOST_RUSAGE_WIDTH_GUESSED``.
* The manual lists ``options3`` before ``runLimit``; the records have the run limit first (43200
  in the 9.1 record of a job submitted with ``#BSUB -W 12:00``; −1 followed by the flag word 64
  in 10.1 records of jobs that ran 66 hours), so the fields are named in the order the records
  show.

Lines
-----
A record whose quoted string is not closed at the end of its line is joined with the following
lines (up to 10,000, or until a line that starts a new record) until it closes: the record is the
first line's ``records`` row (flag ``MULTILINE``), each further line a row of record type
``CONTINUATION`` pointing at it (``attrs["record_line"]``). A quote that never closes
quarantines the first line alone (reason ``unterminated quoted string``) and reading goes on with
the next. Blank lines and lines that are not an event record are quarantined; ``#`` lines (the
``lsb.events`` header) are records of type ``COMMENT``.

Damaged lines: a line holding NUL bytes (what a crash or a log rotation leaves) is a fragment,
quarantined and never a job (``info["nul_lines"]``, ``info["nul_bytes"]``); a record stops
joining lines at one. Lines that are not UTF-8 are decoded as Windows-1252 (else Latin-1), flag
``NON_UTF8``, the bytes kept in ``raw``. A CR before the line end is removed (flag ``CRLF``).
LSF ends every record with a line end, so a last line without one was cut by a crash: what
surely survived is kept (a string left open and the last field are dropped, the fields before
are read up to the first counted list that lost entries), flag ``TRUNCATED``, or the line is
quarantined when the job id did not survive. A record repeating an earlier one field for field
(a copied or overlapping file) makes no job: the first copy's job and the later copies (in
``records``) are flagged ``DUPLICATE_LINE`` (``info["duplicate_lines"]``).

Jobs (``shared/reference/parsers.md`` §8, LSF column)
----------------------------------------------------
``job_seq`` jobId, ``array_index`` idx (0 → null), ``job_id_raw`` ``jobId`` or ``jobId[idx]``;
``user`` userName, ``account`` projectName, ``queue``, ``job_name`` jobName; ``submit_time``
submitTime, ``eligible_time`` beginTime (when set), ``start_time`` startTime, ``end_time`` the
event time; ``wait_s``/``run_s`` from them; ``walltime_used_s`` runTime (LSF ≥ 9; flag
``WALLTIME_MISMATCH`` beyond 60 s from run_s), ``walltime_req_s`` runLimit (seconds; ≤ 0 →
null); ``cpu_time_s`` ru_utime + ru_stime (null when either is −1); ``cores_req`` numProcessors;
``cores_alloc`` the slots of the execution hosts (``16*n1`` counts 16, a repeated host one per
entry), ``nodes_alloc`` and ``exec_hosts`` the distinct hosts in order; ``mem_used_bytes``
maxRMem × 1024, ``vmem_used_bytes`` maxRSwap × 1024 (KB; −1 → null); ``gpus_req`` the
``ngpus_physical`` rusage of ``effectiveResReq`` (LSF 10, times the hosts when it ends in
``/host``, flag ``GPUS_PER_HOST``, as XDMoD reads it), and ``gpus_alloc`` the same for a job
that started (flag ``GPUS_ALLOC_FROM_REQUEST``); ``mem_req_bytes`` stays null (``rusage[mem=]``
units depend on ``LSF_UNIT_FOR_LIMITS``, which the log does not state). ``exitStatus`` is a wait
status: ``exit_code`` = status >> 8, or ``exit_signal`` = status & 0x7f when that is not 0
(33280 → exit code 130).

States: jStatus 64 (DONE) → COMPLETED; 32 (EXIT) → FAILED, refined by ``exitInfo`` (the
``TERM_*`` reason of ``lsbatch.h``): 5 TERM_RUNLIMIT → TIMEOUT, 1 TERM_PREEMPT → PREEMPTED,
8/9/14/15 (killed by owner or administrator, forced or not) → CANCELLED, each flagged with the
``TERM_*`` name; a job that never started (startTime 0) → DELETED with no start or end time.
Other jStatus values → UNKNOWN, flag ``STATUS_NONSTANDARD``. A job id (with index and submit
time) seen in several JOB_FINISH records makes attempts in event-time order; the earlier ones
become REQUEUED (flag ``STATE_WAS_<state>`` when they logged another state); identical event,
start and submit times are flagged ``DUPLICATE`` instead.

Every other value the reader decides is flagged too (``CORES_REQ_RANGE``, ``EXIT_NOT_STARTED``,
``EXIT_STATUS_CONFLICT``, ``END_BEFORE_START``, ``VALUE_UNREADABLE``, ...): :data:`FLAGS` says
what each flag means.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain
from operator import add
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from gridtrace._log import library_logger
from gridtrace.logs import _attrs_fast, _lsf_fast
from gridtrace.logs._attrs import (
    append_flag,
    attr_columns,
    flag_array,
    flag_mask,
    repeated_rows,
)
from gridtrace.logs._base import (
    FileParse,
    ParseResult,
    parts_quarantine,
    parts_records,
    result_of_parts,
)
from gridtrace.logs._columnar import fitted_numbers, int_or_null, interleave, quarantine_table
from gridtrace.logs._prefilter import may_repeat
from gridtrace.logs._stream import Chunk, LineFormat, file_reader, file_tokenizer
from gridtrace.logs._text import NUL_FRAGMENT_REASON, decode_line, nul_fragment_counts, split_lines
from gridtrace.schema import JOBS, QUARANTINE, RECORDS

__all__ = [
    "FLAGS",
    "LSF_REQUIRED_FIELDS",
    "LSF_TAIL_FIELDS",
    "assemble_lsf",
    "looks_like_lsf",
    "read_lsf",
    "split_lsf_record",
    "tokenize_lsf_file",
]

FLAGS: Mapping[str, str] = {
    # the record (records; all but CRLF are copied to the job made from it)
    "NON_UTF8": (
        "the record is not UTF-8: decoded as Windows-1252 (Latin-1 where it has no character); "
        "the original bytes are in records.raw"
    ),
    "CRLF": "records: the line ended in CR LF (a Windows copy); the CR was removed",
    "TRUNCATED": (
        "the file's last record has no line end (a crash cut it; LSF ends every record with "
        "one): a string left open and the last field are dropped, the fields before are kept "
        "up to the first counted list that lost entries, the rest are null; state UNKNOWN "
        "unless jStatus survived (no start or end either unless startTime did); the bytes are "
        "in records.raw"
    ),
    "MULTILINE": (
        "a quoted string spanned lines: the record is its first line's row, the others are "
        "CONTINUATION rows"
    ),
    "EXTRA_FIELDS": "fields after the last known one (a newer LSF), kept as unknown1, ...",
    "TAIL_UNPARSED": (
        "a counted section of the optional tail could not be read: the tail stops there, the "
        "rest kept as unknownN"
    ),
    "HOST_RUSAGE_WIDTH_GUESSED": (
        "host rusage entries fit both 5 and 6 tokens: 6 taken before LSF 10, 5 from 10 on"
    ),
    "DUPLICATE_LINE": (
        "the record was written more than once, field for field (a copied or overlapping "
        "file): the job is made from the first copy; each later copy stays in records with "
        "this flag and makes no job"
    ),
    # jobs
    "DUPLICATE": (
        "another JOB_FINISH record has the same job id, submit, start and event time but "
        "differs elsewhere: both rows are kept, neither is taken for a requeue"
    ),
    "STATE_WAS_*": (
        "an earlier attempt of a job finished several times, logged with the state the suffix "
        "names: its state is REQUEUED"
    ),
    "STATUS_NONSTANDARD": "jStatus is neither DONE (64) nor EXIT (32): state UNKNOWN",
    "EXIT_NOT_STARTED": "jStatus EXIT with startTime 0: the job never ran, state DELETED",
    "EXIT_STATUS_CONFLICT": (
        "jStatus DONE but exitStatus says a non-zero exit or a signal: state COMPLETED kept, "
        "exit_code/exit_signal as logged"
    ),
    "TERM_*": (
        "jStatus EXIT with the exitInfo reason the suffix names: PREEMPT → PREEMPTED, "
        "RUNLIMIT → TIMEOUT, OWNER/ADMIN/FORCE_OWNER/FORCE_ADMIN → CANCELLED"
    ),
    "CORES_REQ_RANGE": (
        "a processor range was asked (maxNumProcessors > numProcessors): cores_req is the "
        "minimum, numProcessors"
    ),
    "END_BEFORE_START": "the event time is before startTime: run_s null",
    "START_BEFORE_SUBMIT": "startTime before submitTime: wait_s negative, as logged",
    "WALLTIME_MISMATCH": "|runTime - (end - start)| > 60 s: run_s is end - start, runTime kept",
    "VALUE_UNREADABLE": "a field read into a job column is not a number: that value is null",
    "GPUS_PER_HOST": "ngpus_physical was per host (/host): gpus_req is it times the hosts",
    "GPUS_ALLOC_FROM_REQUEST": (
        "the log has no allocated GPU count: gpus_alloc is the request of a job that started"
    ),
}
"""Every flag this reader sets on a row, with what it means (see ``flag_meanings``)."""

logger = library_logger(__name__)

_pc: Any = pc
_pa: Any = pa
Arr: TypeAlias = Any
F64 = npt.NDArray[np.float64]
Bool = npt.NDArray[np.bool_]

# --------------------------------------------------------------------------- layout

_RUSAGE = (
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
    "ru_ioch",
    "ru_msgsnd",
    "ru_msgrcv",
    "ru_nsignals",
    "ru_nvcsw",
    "ru_nivcsw",
    "ru_exutime",
)
_HEAD = (
    "eventType",
    "version",
    "eventTime",
    "jobId",
    "userId",
    "options",
    "numProcessors",
    "submitTime",
    "beginTime",
    "termTime",
    "startTime",
    "userName",
    "queue",
    "resReq",
    "dependCond",
    "preExecCmd",
    "fromHost",
    "cwd",
    "inFile",
    "outFile",
    "errFile",
    "jobFile",
)
_MIDDLE = (
    "jStatus",
    "hostFactor",
    "jobName",
    "command",
    *_RUSAGE,
    "mailUser",
    "projectName",
    "exitStatus",
    "maxNumProcessors",
    "loginShell",
    "timeEvent",
    "idx",
    "maxRMem",
    "maxRSwap",
)
LSF_REQUIRED_FIELDS: tuple[str, ...] = (
    *_HEAD,
    "numAskedHosts",
    "askedHosts",
    "numExHosts",
    "execHosts",
    *_MIDDLE,
)
"""The ``JOB_FINISH`` fields every LSF 7–10 record has, in order (``askedHosts`` and ``execHosts``
stand for the counted host lists)."""

# a section: (count field, entries field, tokens per entry); 0 = special (host rusage, GPU)
_Section = tuple[str, str, int]
_TAIL: tuple[str | _Section, ...] = (
    "inFileSpool",
    "commandSpool",
    "rsvId",
    "sla",
    "exceptMask",
    "additionalInfo",
    "exitInfo",
    "warningAction",
    "warningTimePeriod",
    "chargedSAAP",
    "licenseProject",
    "app",
    "postExecCmd",
    "runtimeEstimation",
    "jobGroupName",
    "requeueEvalues",
    "options2",
    "resizeNotifyCmd",
    "lastResizeTime",
    "rsvId2",
    "jobDescription",
    ("submitEXTNum", "submitEXT", 2),
    ("numHostRusage", "hostRusage", 0),
    "runLimit",
    "options3",
    "avgMem",
    "effectiveResReq",
    "srcCluster",
    "srcJobId",
    "dstCluster",
    "dstJobId",
    "forwardTime",
    "flow_id",
    "acJobWaitTime",
    "totalProvisionTime",
    "outdir",
    "runTime",
    "subcwd",
    ("num_network", "networkAlloc", 2),
    "affinity",
    "serial_job_energy",
    "cpi",
    "gips",
    "gbs",
    "gflops",
    ("numAllocSlots", "allocSlots", 1),
    "ineligiblePendTime",
    ("indexRangeCnt", "indexRange", 3),
    "requeueTime",
    ("numGPURusages", "gRusage", 0),
    ("storageInfoC", "storageInfoV", 1),
    ("numKVP", "finishKVP", 2),
)
LSF_TAIL_FIELDS: tuple[str, ...] = tuple(
    name for item in _TAIL for name in ((item,) if isinstance(item, str) else item[:2])
)
"""The optional ``JOB_FINISH`` fields after ``maxRSwap`` (LSF 7.0.6 to 10.1), in record order."""


def _tail_runs() -> tuple[tuple[tuple[str, ...], _Section | None], ...]:
    """Cut the tail into runs of plain fields, each followed by a counted section (None last)."""
    runs: list[tuple[tuple[str, ...], _Section | None]] = []
    plain: list[str] = []
    for item in _TAIL:
        if isinstance(item, str):
            plain.append(item)
        else:
            runs.append((tuple(plain), item))
            plain = []
    runs.append((tuple(plain), None))
    return tuple(runs)


_TAIL_RUNS = _tail_runs()

# fields that must be numbers for the record to be aligned (else it is quarantined)
_INT_CHECKED = frozenset(
    {"eventTime", "jobId", "numProcessors", "submitTime", "beginTime", "startTime", "jStatus"}
)
_INT_CHECKED |= {"exitStatus", "idx"}
_FLOAT_CHECKED = frozenset({"hostFactor"})

_INT = re.compile(r"^-?\d+$")
_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")
_TOKEN = r'"(?:[^"]|"")*+"|[^\s"]++'
_VALID = re.compile(rf"[ \t]*+(?:(?:{_TOKEN})(?:[ \t]++(?:{_TOKEN}))*+)?[ \t]*+")
_FIND = re.compile(r'"((?:[^"]|"")*+)"|([^\s"]++)')
_RECORD_START = re.compile(r'^"[A-Z][A-Z0-9_]*" "[^"]*" \d')
_EVENT = re.compile(r"[A-Z][A-Z0-9_]*")
_JSON_PLAIN = re.compile(r"[ !#-\[\]-~]*")  # printable ASCII but quote and backslash
_MAX_JOIN = 10_000

_TERM = {
    1: ("PREEMPTED", "TERM_PREEMPT"),
    5: ("TIMEOUT", "TERM_RUNLIMIT"),
    8: ("CANCELLED", "TERM_FORCE_OWNER"),
    9: ("CANCELLED", "TERM_FORCE_ADMIN"),
    14: ("CANCELLED", "TERM_OWNER"),
    15: ("CANCELLED", "TERM_ADMIN"),
}
_STATES = (
    "UNKNOWN",
    "COMPLETED",
    "FAILED",
    "DELETED",
    "REQUEUED",
    *sorted({name for name, _ in _TERM.values()}),
)
_STATE_CODE = {name: k for k, name in enumerate(_STATES)}


class _Bad(Exception):
    """A record that cannot be read; the message is the quarantine reason."""


# --------------------------------------------------------------------------- tokens

_MARK = "\x00"  # stands for a quoted string in the fast splitter's view of a record

Quoted = Callable[[int], bool]
"""Whether the token at an index was quoted."""


def split_lsf_record(text: str) -> tuple[list[str], list[bool]]:
    r"""Split an LSF event record into its fields.

    Strings are quoted and a doubled quote inside one stands for a quote; bare tokens (numbers,
    host names) are taken as they are. Newlines inside a quoted string are kept.

    Parameters
    ----------
    text : str
        One record (a line, or several joined with ``\n`` when a string spans them).

    Returns
    -------
    tokens : list of str
        The field values, unquoted.
    quoted : list of bool
        Whether each field was quoted.

    Raises
    ------
    ValueError
        If the quoting is broken (a quote not closed, a quote inside a bare token, two tokens
        without a blank between them).

    Examples
    --------
    >>> split_lsf_record('"JOB_FINISH" "10.1" 12 "a ""b"" c" ""')
    (['JOB_FINISH', '10.1', '12', 'a "b" c', ''], [True, True, False, True, True])
    """
    tokens, quoted = _split(text)
    return tokens, [quoted(k) for k in range(len(tokens))]


def _split(text: str) -> tuple[list[str], Quoted]:
    """Split a record (as :func:`split_lsf_record`), the quoting as a function of the index."""
    fast = _split_fast(text)
    if fast is not None:
        return fast
    plain = _split_plain(text)
    if plain is not None:
        return plain[0], plain[1].__getitem__
    if _VALID.fullmatch(text) is None:
        msg = "unterminated quoted string" if text.count('"') % 2 else "malformed quoting"
        raise ValueError(msg)
    tokens: list[str] = []
    quoted: list[bool] = []
    for string, bare in _FIND.findall(text):
        if bare:
            tokens.append(bare)
            quoted.append(False)
        else:
            tokens.append(string.replace('""', '"') if '""' in string else string)
            quoted.append(True)
    return tokens, quoted.__getitem__


def _split_fast(text: str) -> tuple[list[str], Quoted] | None:
    """Split a well-formed record with C-level string operations; None to leave it to the others.

    Splitting on ``"`` alternates the text outside and inside strings. An empty outside piece
    between two strings is a doubled quote: the strings on either side are one. Each outside
    piece is split on blanks and the strings put between them. The record is left to
    :func:`_split_plain` and the regular expression (which decide the same way, more slowly, and
    also name the error) when the quotes are odd, the text holds a :data:`_MARK`, a string is not
    between spaces, or a record with doubled quotes has separators other than spaces and tabs
    (the regular expression's rule).
    """
    parts = text.split('"')
    if not len(parts) % 2 or _MARK in text:
        return None
    outside = parts[0::2]
    strings = parts[1::2]
    if "" in outside[1:-1]:
        spaced = "".join(outside).replace("\t", " ")
        if not (spaced.isascii() and spaced.isprintable()):
            return None
        for k in range(len(outside) - 2, 0, -1):
            if not outside[k]:
                strings[k - 1 : k + 1] = [strings[k - 1] + '"' + strings[k]]
                del outside[k]
    joined = _MARK.join(outside)
    count = len(strings)
    if joined.count(" " + _MARK) + joined.startswith(_MARK) != count:
        return None
    if joined.count(_MARK + " ") + joined.endswith(_MARK) != count:
        return None
    bare = list(map(str.split, outside))
    tokens = list(chain.from_iterable(chain.from_iterable(zip(bare, zip(strings), strict=False))))
    tokens.extend(bare[-1])
    # the k-th string follows the bare tokens of the first k + 1 outside pieces
    at = set(map(add, accumulate(map(len, bare)), range(count)))
    return tokens, at.__contains__


def _split_plain(text: str) -> tuple[list[str], list[bool]] | None:
    """Split a record without doubled quotes by splitting on quotes; None when it has some.

    Splitting on ``"`` alternates the text outside and inside strings. Without doubled quotes,
    every outside piece between two strings holds at least one blank at each end; a piece that
    does not (empty: a doubled quote; text glued to a quote) sends the record to the regular
    expression, as does an odd number of quotes.
    """
    parts = text.split('"')
    if not len(parts) % 2:
        return None
    last = len(parts) - 1
    tokens: list[str] = []
    quoted: list[bool] = []
    for k in range(0, last + 1, 2):
        piece = parts[k]
        after_string = k > 0
        before_string = k < last
        if piece:
            if after_string and not piece[0].isspace():
                return None
            if before_string and not piece[-1].isspace():
                return None
            bare = piece.split()
            tokens.extend(bare)
            quoted.extend([False] * len(bare))
        elif after_string and before_string:
            return None  # two quotes side by side: a doubled quote
        if before_string:
            tokens.append(parts[k + 1])
            quoted.append(True)
    return tokens, quoted


def looks_like_lsf(head: bytes) -> bool:
    """Whether the first bytes of a (decompressed) file look like ``lsb.acct``/``lsb.events``.

    True when the first line that is neither blank nor a ``#`` comment starts like an LSF event
    record: a quoted upper-case event name, a quoted version and an epoch.
    """
    start = re.compile(rb'^"[A-Z][A-Z0-9_]*" "[0-9][0-9.]*" \d+ ')
    for line in head.split(b"\n")[:20]:
        stripped = line.strip()
        if not stripped or stripped.startswith(b"#"):
            continue
        return start.match(stripped) is not None
    return False


# --------------------------------------------------------------------------- JOB_FINISH


def _is_int(value: str) -> bool:
    return value.isdecimal() or _INT.match(value) is not None


def _is_number(value: str) -> bool:
    return value.isdecimal() or _NUMBER.match(value) is not None


def _checks(names: tuple[str, ...]) -> tuple[tuple[int, str, bool], ...]:
    """List the fields of ``names`` that must be numbers: (index, name, float allowed)."""
    return tuple(
        (k, name, name in _FLOAT_CHECKED)
        for k, name in enumerate(names)
        if name in _INT_CHECKED or name in _FLOAT_CHECKED
    )


def _check_numbers(
    tokens: Sequence[str], start: int, checks: tuple[tuple[int, str, bool], ...]
) -> None:
    """Raise :class:`_Bad` at the first field of ``checks`` that is not a number."""
    for k, name, real in checks:
        value = tokens[start + k]
        if value.isdecimal():
            continue
        if not real and not _INT.match(value):
            msg = f"field {name} is not an integer: {value[:40]!r} (the record is misaligned)"
            raise _Bad(msg)
        if real and not _NUMBER.match(value):
            msg = f"field {name} is not a number: {value[:40]!r} (the record is misaligned)"
            raise _Bad(msg)


def _count(value: str, name: str) -> int:
    if not _is_int(value) or int(value) < 0:
        msg = f"{name} is not a count: {value[:40]!r} (the record is misaligned)"
        raise _Bad(msg)
    return int(value)


def _json_list(tokens: list[str]) -> str:
    """``json.dumps(tokens)``, without the encoder for tokens of printable ASCII."""
    if not tokens:
        return "[]"
    if _JSON_PLAIN.fullmatch("".join(tokens)):
        return '["' + '", "'.join(tokens) + '"]'
    return json.dumps(tokens)


def _host_rusage_width(
    tokens: Sequence[str], quoted: Quoted, pos: int, n: int, major: int
) -> tuple[int, bool]:
    """Tokens per host rusage entry (5 or 6) and whether it was guessed."""
    if n == 0:
        return 5, False
    fits: list[int] = []
    for width in (5, 6):
        end = pos + n * width
        if end > len(tokens):
            continue
        section = list(tokens[pos:end])
        hosts = section[::width]
        del section[::width]  # the numbers
        ok = not any(map(_is_number, hosts)) and (
            all(map(str.isdecimal, section)) or all(map(_is_number, section))
        )
        # after the section: runLimit, options3, avgMem bare numbers, effectiveResReq quoted
        for j in range(3):
            if end + j < len(tokens):
                ok = ok and not quoted(end + j) and _is_number(tokens[end + j])
        if end + 3 < len(tokens):
            ok = ok and quoted(end + 3)
        if ok:
            fits.append(width)
    if len(fits) == 1:
        return fits[0], False
    if not fits:
        raise _Bad("host rusage entries do not fit 5 or 6 fields")
    return (5 if major >= 10 else 6), True


def _gpu_section(tokens: Sequence[str], pos: int, n: int) -> int:
    """Return the position after ``n`` GPU rusage entries (host, numKVP, numKVP pairs)."""
    for _ in range(n):
        if pos + 1 >= len(tokens):
            raise _Bad("GPU rusage section runs past the end of the record")
        pairs = _count(tokens[pos + 1], "numKVP of a GPU rusage entry")
        pos += 2 + 2 * pairs
    if pos > len(tokens):
        raise _Bad("GPU rusage section runs past the end of the record")
    return pos


class _Cut(Exception):
    """The fields of a record cut short by the end of the file ran out here."""


def _job_finish(
    tokens: list[str], quoted: Quoted, *, cut: bool = False
) -> tuple[list[str], int, list[str]]:
    """Read a ``JOB_FINISH`` record; raise :class:`_Bad` when it cannot be read.

    Returns the values in the order of :data:`_FINISH_KEYS` followed by the unknown fields,
    how many of them are named by :data:`_FINISH_KEYS`, and the record's flags. With ``cut``
    (the end of the file cut the record short) the values stop where the fields run out, before
    a counted list that lost entries, instead of failing.
    """
    flags: list[str] = []
    n = len(tokens)

    def short(name: str) -> Exception:
        if cut:
            return _Cut()
        return _Bad(
            f"JOB_FINISH record ends after {n} fields, before {name} (at least "
            f"{len(LSF_REQUIRED_FIELDS) - 2} fields are needed)"
        )

    def fixed(names: tuple[str, ...], checks: tuple[tuple[int, str, bool], ...], pos: int) -> int:
        end = pos + len(names)
        if end > n:
            if cut:
                values.extend(tokens[pos:n])
                _check_numbers(tokens, pos, tuple(c for c in checks if pos + c[0] < n))
            raise short(names[n - pos])
        values.extend(tokens[pos:end])
        _check_numbers(tokens, pos, checks)
        return end

    def hosts(count_name: str, pos: int) -> int:
        if pos >= n:
            raise short(count_name)
        count = _count(tokens[pos], count_name)
        pos += 1
        if pos + count > n:
            if cut:
                raise _Cut()
            msg = f"{count_name} is {count} but the record ends after {n - pos} more fields"
            raise _Bad(msg)
        values.append(tokens[pos - 1])
        values.append(_json_list(tokens[pos : pos + count]))
        return pos + count

    values: list[str] = []
    try:
        pos = fixed(_HEAD, _HEAD_CHECKS, 0)
        pos = hosts("numAskedHosts", pos)
        pos = hosts("numExHosts", pos)
        pos = fixed(_MIDDLE, _MIDDLE_CHECKS, pos)
    except _Cut:
        return values, len(values), flags

    version = tokens[1].split(".", 1)[0]
    major = int(version) if version.isdigit() else 0
    stopped = False  # a section the end of the file cut: what follows it is not kept
    for names, section in _TAIL_RUNS:
        end = min(pos + len(names), n)
        values.extend(tokens[pos:end])
        pos = end
        if pos >= n or section is None:
            break
        count_name, list_name, width = section
        try:
            count = _count(tokens[pos], count_name)
            start = pos + 1
            if list_name == "hostRusage":
                width, guessed = _host_rusage_width(tokens, quoted, start, count, major)
                if guessed:
                    flags.append("HOST_RUSAGE_WIDTH_GUESSED")
                end = start + count * width
            elif list_name == "gRusage":
                end = _gpu_section(tokens, start, count)
            else:
                end = start + count * width
            if end > n:
                msg = f"{count_name} is {count} but the record ends first"
                raise _Bad(msg)
        except _Bad as bad:
            if cut:
                stopped = True  # the end of the file cut this section: the record ends here
                break
            logger.debug("tail of a JOB_FINISH record not read: %s", bad)
            flags.append("TAIL_UNPARSED")
            break
        values.append(tokens[pos])
        values.append(_json_list(tokens[start:end]))
        pos = end
    named = len(values)
    if pos < n and not stopped:
        if "TAIL_UNPARSED" not in flags:
            flags.append("EXTRA_FIELDS")
        values.extend(tokens[pos:])
    return values, named, flags


# --------------------------------------------------------------------------- tokeniser


def _names(kind: int, count: int) -> list[str]:
    """Name the first ``count`` attributes of a row of one kind (``_FINISH``, ``_OTHER``, ...)."""
    if kind == _FINISH:
        return list(_FINISH_KEYS[:count])
    if kind == _OTHER:
        return ["eventType", "version", "eventTime", *(f"f{k}" for k in range(3, count))][:count]
    if kind == _COMMENT:
        return ["text"][:count]
    if kind == _CONTINUATION:
        return ["record_line"][:count]
    return [f"unknown{k + 1}" for k in range(count)]


class _Rows:
    """Column lists of the ``records`` rows of one file.

    A row's ``attrs`` keys are the first ``k`` names of its kind (:func:`_names`) followed by the
    first ``j`` unknown-field names, so they are kept as counts and built with numpy at the end.
    """

    def __init__(self) -> None:
        self.lines: list[int] = []
        self.types: list[str] = []
        self.stamps: list[str | None] = []
        self.job_ids: list[str | None] = []
        self.values: list[str] = []
        self.kinds: list[int] = []
        self.named: list[int] = []
        self.unknown: list[int] = []
        self.flags: list[list[str] | None] = []
        self.raw: list[bytes | None] = []

    def add(
        self,
        line: int,
        record_type: str,
        kind: int,
        values: Sequence[str],
        named: int,
        *,
        stamp: str | None = None,
        job_id: str | None = None,
        flags: list[str] | None = None,
        raw: bytes | None = None,
    ) -> None:
        """Add a row whose attrs are ``values``, the first ``named`` named as ``kind`` says."""
        self.lines.append(line)
        self.types.append(record_type)
        self.stamps.append(stamp)
        self.job_ids.append(job_id)
        self.values.extend(values)
        self.kinds.append(kind)
        self.named.append(named)
        self.unknown.append(len(values) - named)
        self.flags.append(flags or None)
        self.raw.append(raw)

    def table(self, site: str, src_file: str, base: int = 0) -> pa.Table:
        named = np.asarray(self.named, dtype=np.int64)
        unknown = np.asarray(self.unknown, dtype=np.int64)
        return _records_table(
            site,
            src_file,
            np.asarray(self.lines, dtype=np.int64) + base,
            _pa.array(self.types, pa.string()),
            _pa.array(self.stamps, pa.string()),
            _pa.array(self.job_ids, pa.string()),
            _keys(np.asarray(self.kinds, dtype=np.int64), named, unknown),
            named + unknown,
            _pa.array(self.values, pa.string()),
            _pa.array(self.flags, pa.list_(pa.string())),
            _pa.array(self.raw, pa.binary()),
        )


def _keys(which: npt.NDArray[np.int64], named: npt.NDArray[np.int64], unknown: Any) -> Arr:
    """Build the ``attrs`` keys of rows, one row after the other.

    Row ``i`` has the first ``named[i]`` names of its kind ``which[i]`` (:func:`_names`), then
    the first ``unknown[i]`` unknown-field names.
    """
    if not len(which):
        return _pa.array([], pa.string())
    lists = [_names(k, int(named[which == k].max(initial=0))) for k in range(_UNKNOWN)]
    lists.append(_names(_UNKNOWN, int(unknown.max(initial=0))))
    base = np.cumsum([0] + [len(names) for names in lists])
    # each row is two runs of names, (start in the joined lists, length): named, unknown
    starts = np.column_stack([base[which], np.full(len(which), base[_UNKNOWN])]).ravel()
    lengths = np.column_stack([named, unknown]).ravel()
    if _lsf_fast.kernel_ready():
        keys = _lsf_fast.name_runs([name for names in lists for name in names], starts, lengths)
        if keys is not None:
            return keys
    run_of = np.repeat(np.arange(len(lengths)), lengths)
    first_of_run = np.cumsum(lengths) - lengths
    index = starts[run_of] + np.arange(int(lengths.sum())) - first_of_run[run_of]
    dictionary = _pa.array([name for names in lists for name in names], pa.string())
    keys = _pa.DictionaryArray.from_arrays(_pa.array(index, pa.int32()), dictionary)
    return keys.cast(pa.string())


def _records_table(
    site: str,
    src_file: str,
    lines: npt.NDArray[np.int64],
    types: Arr,
    stamps: Arr,
    job_ids: Arr,
    keys: Arr,
    sizes: npt.NDArray[np.int64],
    values: Arr,
    flags: Arr,
    raw: Arr,
    digits: Bool | None = None,
) -> pa.Table:
    """Build ``records`` rows: ``sizes`` attributes a row, keys and values one row after another.

    ``digits``, when given, says which stamps are all ASCII digits (else a regular expression
    finds them): those are epochs.
    """
    n = len(lines)
    if digits is None:
        digits = _pc.match_substring_regex(stamps, r"^\d+$")
    elif digits.all():
        digits = None
    epochs = stamps if digits is None else _pc.if_else(_pa.array(digits), stamps, None)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(sizes, out=offsets[1:])
    return pa.Table.from_arrays(
        [
            _repeat(site, n),
            _repeat("lsf", n),
            _repeat(src_file, n),
            _pa.array(lines, pa.int64()),
            types,
            stamps,
            epochs.cast(pa.int64()).cast(pa.timestamp("s", tz="UTC")),
            job_ids,
            _pa.MapArray.from_arrays(_pa.array(offsets, pa.int32()), keys, values),
            flags,
            raw,
        ],
        schema=RECORDS,
    )


_FINISH_KEYS: tuple[str, ...] = (*LSF_REQUIRED_FIELDS, *LSF_TAIL_FIELDS)
"""The attribute names of a ``JOB_FINISH`` row, in order (unknown fields follow)."""
_FINISH, _OTHER, _COMMENT, _CONTINUATION, _UNKNOWN = range(5)
_AT = {name: k for k, name in enumerate(_FINISH_KEYS)}


def _repeat(value: str, n: int) -> Arr:
    """Return ``value`` ``n`` times as a string array, written whole (a ``take``: ~0.1 ms)."""
    encoded = value.encode()
    if n * len(encoded) >= 1 << 31:  # pragma: no cover - past 32-bit offsets
        return _pa.array([value], pa.string()).take(_pa.array(np.zeros(n, dtype=np.int64)))
    offsets = np.arange(n + 1, dtype=np.int32) * np.int32(len(encoded))
    return _pa.StringArray.from_buffers(n, _pa.py_buffer(offsets), _pa.py_buffer(encoded * n))


def _decode(lines: list[bytes]) -> tuple[list[str], list[bool]]:
    """Decode the lines; those that are not UTF-8 by :func:`decode_line`'s stated fallback."""
    try:
        text = b"\n".join(lines).decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        split = text.split("\n") if lines else []
        return split, [False] * len(split)
    out: list[str] = []
    bad: list[bool] = []
    for line in lines:
        decoded, repaired = decode_line(line)
        out.append(decoded)
        bad.append(repaired)
    return out, bad


@dataclass(frozen=True)
class _Lines:
    """The decoded lines of one file and what is known about each."""

    text: list[str]
    raw: list[bytes]
    non_utf8: list[bool]
    crlf: list[bool]
    nul: list[bool]
    no_newline: bool
    base: int = 0  # lines of the file before these (they are a chunk of it)
    final: bool = True  # these end the file (else a record open at their end waits for more)

    def cut_at(self, last: int) -> bool:
        """Whether a record ending at line ``last`` (0-based) was cut by the end of the file."""
        return self.no_newline and last == len(self.text) - 1


_JOB_ID, _IDX = _AT["jobId"], _AT["idx"]
_HEAD_CHECKS = _checks(_HEAD)
_MIDDLE_CHECKS = _checks(_MIDDLE)


def _tokenize_lsf_chunk(
    chunk: Chunk, state: None, *, site: str, src_file: str
) -> tuple[pa.Table, pa.Table]:
    """Tokenise a chunk of an LSF file; stop before a record still open at its end.

    Clean ``JOB_FINISH`` lines go to the compiled scanner (:mod:`gridtrace.logs._lsf_fast`) once
    it is loaded or when the chunk is large enough to pay for loading it; the rows are those of
    the reference either way.
    """
    del state  # LSF needs none: a record open at the end of a chunk is carried on whole
    fast = _lsf_fast.HAVE_NUMBA and (
        _lsf_fast.kernel_ready() or chunk.lines >= _lsf_fast.SMALL_INPUT_LINES
    )
    return _tokenize_lsf_lines(chunk, site=site, src_file=src_file, fast=fast)


_LAYOUT = _lsf_fast.Layout(
    head=len(_HEAD),
    middle=len(_MIDDLE),
    head_checks=np.array([k for k, _, _ in _checks(_HEAD)], dtype=np.int64),
    head_real=np.array([real for _, _, real in _checks(_HEAD)], dtype=np.bool_),
    middle_checks=np.array([k for k, _, _ in _checks(_MIDDLE)], dtype=np.int64),
    middle_real=np.array([real for _, _, real in _checks(_MIDDLE)], dtype=np.bool_),
    run_plain=np.array([len(names) for names, _ in _TAIL_RUNS], dtype=np.int64),
    run_kind=np.array(
        [
            _lsf_fast.KIND_NONE
            if section is None
            else _lsf_fast.KIND_HOST_RUSAGE
            if section[1] == "hostRusage"
            else _lsf_fast.KIND_GPU
            if section[1] == "gRusage"
            else _lsf_fast.KIND_FIXED
            for _, section in _TAIL_RUNS
        ],
        dtype=np.int64,
    ),
    run_width=np.array([0 if s is None else s[2] for _, s in _TAIL_RUNS], dtype=np.int64),
)


def _tokenize_lsf_lines(
    chunk: Chunk, *, site: str, src_file: str, fast: bool
) -> tuple[pa.Table, pa.Table]:
    """Tokenise a chunk: clean lines by the compiled scanner when ``fast``, the rest here."""
    data = chunk.data
    base = chunk.first_line - 1
    scan = None
    if fast and data:
        scan = _lsf_fast.scan_lsf(data, _LAYOUT)  # decodes the chunk only if a string needs it
    if scan is None or not scan.fast.any():
        records, bad, _ = _reference_rows(chunk, site=site, src_file=src_file, fast=None)
        return records, bad
    others, bad, keep = _reference_rows(chunk, site=site, src_file=src_file, fast=scan.fast)
    rows = np.flatnonzero(keep[scan.fast])  # clean rows not taken by a record spanning lines
    lines = np.flatnonzero(keep) + 1 + base
    table = _fast_records(scan, rows, lines, site=site, src_file=src_file)
    return interleave(table, lines, others), bad


def _fast_records(
    scan: _lsf_fast.LsfScan, rows: npt.NDArray[np.int64], lines: Any, *, site: str, src_file: str
) -> pa.Table:
    """Build the ``records`` rows of the scanner's clean lines ``rows``, at file lines ``lines``."""
    counts = scan.counts
    starts = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    values = scan.values
    if len(rows) < len(counts):
        take = np.repeat(starts[rows], counts[rows]) + (
            np.arange(int(counts[rows].sum()))
            - np.repeat(np.cumsum(counts[rows]) - counts[rows], counts[rows])
        )
        values = values.take(_pa.array(take))
        named, counts, bits = scan.named[rows], counts[rows], scan.flags[rows]
        starts = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
    else:
        named, bits = scan.named, scan.flags
    n = len(counts)
    at = starts[:-1]
    fields = np.stack([at + 2, at + _JOB_ID, at + _IDX])
    picked = _lsf_fast.gather_strings([(values, fields)])
    if picked is None:  # pragma: no cover - the scanner ran: its kernel is loaded
        picked = [values.take(_pa.array(index)) for index in fields]
    stamps, job_seq, idx = picked
    job_ids = job_seq
    if not _plain_index(idx).all():  # an array index: "jobId[idx]"
        job_ids = _pc.if_else(
            _pc.is_in(idx, _pa.array(["0", ""])),
            job_seq,
            _pc.binary_join_element_wise(job_seq, "[", idx, "]", ""),
        )
    flags = flag_array(
        n,
        [
            ("HOST_RUSAGE_WIDTH_GUESSED", bits & _lsf_fast.HOST_RUSAGE_WIDTH_GUESSED),
            ("TAIL_UNPARSED", bits & _lsf_fast.TAIL_UNPARSED),
            ("EXTRA_FIELDS", bits & _lsf_fast.EXTRA_FIELDS),
        ],
    )
    return _records_table(
        site,
        src_file,
        np.asarray(lines, dtype=np.int64),
        _repeat("JOB_FINISH", n),
        stamps,
        job_ids,
        _keys(np.full(n, _FINISH, dtype=np.int64), named, counts - named),
        counts,
        values,
        flags,
        pa.nulls(n, pa.binary()),
        digits=_unsigned(stamps),
    )


def _unsigned(stamps: Arr) -> Bool:
    """Where a string array of integers (``-?[0-9]+``, as the scanner checks) has no sign."""
    if not len(stamps):
        return np.ones(0, dtype=bool)
    offsets, data, _ = _lsf_fast.string_buffers(stamps)
    first = data[np.minimum(offsets[:-1], len(data) - 1)]
    return np.asarray((np.diff(offsets) > 0) & (first != ord("-")))


def _plain_index(idx: Arr) -> Bool:
    """Where a string array (without nulls) holds ``"0"`` or ``""``: no array index."""
    offsets, data, _ = _lsf_fast.string_buffers(idx)
    sizes = np.diff(offsets)
    plain: Bool = np.asarray(sizes == 0)
    one = np.flatnonzero(sizes == 1)
    plain[one] = data[offsets[one]] == ord("0")
    return plain


@functools.cache
def _empty_records() -> pa.Table:
    """Return an empty ``records`` table, made once (``RECORDS.empty_table()`` takes ~1.6 ms).

    Tables are immutable, so every chunk the scanner read whole can share it.
    """
    return RECORDS.empty_table()


def _reference_rows(
    chunk: Chunk, *, site: str, src_file: str, fast: Bool | None
) -> tuple[pa.Table, pa.Table, Bool]:
    """Tokenise the lines of a chunk the scanner did not read (all lines without ``fast``).

    Returns their records and quarantine, and which of the ``fast`` lines keep their scanned
    row (not taken into a record spanning lines, nor after a record open at the chunk's end).
    """
    data = chunk.data
    base = chunk.first_line - 1
    if fast is not None and fast.all():  # every line scanned: nothing to split or decode
        return _empty_records(), QUARANTINE.empty_table(), fast.copy()
    raw_lines, crlf_lines, no_newline = split_lines(data)
    n_lines = len(raw_lines)
    keep = np.zeros(n_lines, dtype=bool) if fast is None else fast.copy()
    todo: Iterable[int] = range(n_lines) if fast is None else np.flatnonzero(~fast).tolist()
    rows = _Rows()
    bad_lines: list[int] = []
    reasons: list[str] = []
    if fast is None or not keep.all():
        crlf = crlf_lines.tolist()
        text, non_utf8 = _decode(raw_lines)
        nul = [b"\x00" in line for line in raw_lines] if b"\x00" in data else [False] * n_lines
        lines = _Lines(text, raw_lines, non_utf8, crlf, nul, no_newline, base, chunk.final)

        def quarantine(i: int, reason: str) -> None:
            bad_lines.append(i)
            reasons.append(reason)

        after = 0  # the first line not yet read
        for i in todo:
            if i < after:
                continue  # inside a record read already
            after = _line(lines, i, rows, quarantine)
            if after < 0:  # open at the end of the chunk: read again with the next
                keep[i:] = False
                break
            keep[i + 1 : after] = False

    records = rows.table(site, src_file, base)
    if records.num_rows and bool(np.any(np.diff(np.asarray(rows.lines)) < 0)):
        records = records.take(_pc.sort_indices(records, [("src_line", "ascending")]))
    order = np.argsort(np.asarray(bad_lines, dtype=np.int64), kind="stable")
    bad = quarantine_table(
        site=site,
        source_format="lsf",
        src_file=src_file,
        lines=[bad_lines[k] + 1 + base for k in order],
        reasons=[reasons[k] for k in order],
        raw=[raw_lines[bad_lines[k]] for k in order],
    )
    return records, bad, keep


def _line(lines: _Lines, i: int, rows: _Rows, quarantine: Callable[[int, str], None]) -> int:
    """Read line ``i`` (0-based) and the lines its record spans; return the next line to read.

    Returns -1, having added no row, for a record open at the end of a chunk.
    """
    line = lines.text[i]
    if lines.nul[i]:
        quarantine(i, NUL_FRAGMENT_REASON)
    elif not line.startswith('"'):
        stripped = line.strip()
        if not stripped:
            quarantine(i, "blank line")
        elif stripped.startswith("#"):
            flags = ["CRLF"] if lines.crlf[i] else None
            rows.add(i + 1, "COMMENT", _COMMENT, [stripped[1:].strip()], 1, flags=flags)
        elif not stripped.startswith('"'):
            quarantine(i, "not an LSF event record (no quoted event name first)")
        else:
            return _record(lines, i, rows, quarantine)
    else:
        return _record(lines, i, rows, quarantine)
    return i + 1


LSF_STREAM: LineFormat[None] = LineFormat("lsf", lambda: None, _tokenize_lsf_chunk)
"""The LSF format for the streaming core (records spanning lines carried on whole)."""


tokenize_lsf_file = file_tokenizer(
    "lsf",
    LSF_STREAM,
    what="one ``lsb.acct`` or ``lsb.events`` file",
    notes="A record whose quoted string spans lines is never cut by a chunk boundary.",
    rows="event line (and per continuation line of a record whose quoted string spans lines)",
)


def _cut_tokens(record: str) -> tuple[list[str], Quoted]:
    """Split a record the end of the file cut short, keeping only the fields that surely survived.

    A quoted string left open is dropped; so is the last field when the text does not end with
    a blank (it may have lost characters).

    Raises
    ------
    ValueError
        If the quoting before the cut is broken.
    """
    if record.count('"') % 2:
        record = record[: record.rfind('"')]
    tokens, quoted = _split(record)
    if tokens and record[-1:] not in {" ", "\t"}:
        tokens = tokens[:-1]
    return tokens, quoted


def _record(lines: _Lines, i: int, rows: _Rows, quarantine: Callable[[int, str], None]) -> int:
    """Read the event record starting at line ``i`` (0-based); return the next line to read.

    Returns -1, having added no row, for a record whose quoted string is still open at the end
    of lines that do not end the file (a chunk): it is read again with the lines that follow.
    """
    text = lines.text
    span = 1
    record = text[i]
    tokens: list[str] = []
    quoted: Quoted = bool
    cut = False
    reason = "unterminated quoted string"
    try:
        tokens, quoted = _split(record)
    except ValueError as err:
        if str(err) != "unterminated quoted string":
            if not lines.cut_at(i):
                quarantine(i, f"{err}: the fields cannot be separated")
                return i + 1
        else:
            while span < _MAX_JOIN and i + span < len(text):
                following = text[i + span]
                if _RECORD_START.match(following) or lines.nul[i + span]:
                    break
                record = record + "\n" + following
                span += 1
                try:
                    tokens, quoted = _split(record)
                except ValueError:
                    continue
                break
            if not tokens and not lines.final and span < _MAX_JOIN and i + span >= len(text):
                return -1
    if lines.cut_at(i + span - 1):
        # the end of the file cut this record (no line end): keep what surely survived
        cut = True
        try:
            tokens, quoted = _cut_tokens(record)
            reason = "the file's last record was cut short before its first field: nothing left"
        except ValueError as err:
            tokens = []
            reason = f"the file's last record was cut short and its quoting is broken ({err})"
    if not tokens:
        if not cut:
            quarantine(i, reason)
            return i + 1
        for k in range(span):
            quarantine(
                i + k, reason if k == 0 else f"inside the record of line {lines.base + i + 1}"
            )
        return i + span
    event = tokens[0] if quoted(0) else ""
    if not _EVENT.fullmatch(event):
        quarantine(i, "not an LSF event record (no quoted event name first)")
        return i + 1
    flags: list[str] = ["MULTILINE"] if span > 1 else []
    raw = None
    if any(lines.non_utf8[i : i + span]) or cut:
        raw = b"\n".join(lines.raw[i : i + span])
    if any(lines.non_utf8[i : i + span]):
        flags.append("NON_UTF8")
    if lines.crlf[i]:
        flags.append("CRLF")
    if cut:
        flags.append("TRUNCATED")
    if event == "JOB_FINISH":
        try:
            values, named, more = _job_finish(tokens, quoted, cut=cut)
            if cut and named <= _JOB_ID:
                raise _Bad(
                    "the file's last record was cut short before its job id: nothing to recover"
                )
        except _Bad as bad:
            for k in range(span):
                quarantine(
                    i + k,
                    str(bad) if k == 0 else f"inside the record of line {lines.base + i + 1}",
                )
            return i + span
        idx = values[_IDX] if named > _IDX else ""
        job_id = values[_JOB_ID] if idx in {"0", ""} else f"{values[_JOB_ID]}[{idx}]"
        rows.add(
            i + 1,
            event,
            _FINISH,
            values,
            named,
            stamp=values[2] if named > 2 else None,
            job_id=job_id,
            flags=flags + more,
            raw=raw,
        )
    else:
        job = tokens[3] if event.startswith("JOB_") and len(tokens) > 3 else None
        rows.add(
            i + 1,
            event,
            _OTHER,
            tokens,
            len(tokens),
            stamp=tokens[2] if len(tokens) > 2 else None,
            job_id=job if job is not None and _is_int(job) else None,
            flags=flags,
            raw=raw,
        )
    for k in range(1, span):
        more_flags = ["CRLF"] if lines.crlf[i + k] else None
        rows.add(
            i + k + 1,
            "CONTINUATION",
            _CONTINUATION,
            [str(lines.base + i + 1)],
            1,
            flags=more_flags,
        )
    return i + span


# --------------------------------------------------------------------------- assembler


def _numpy(array: Arr, dtype: Any = np.float64) -> npt.NDArray[Any]:
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=dtype)


def _floats(array: Arr) -> tuple[F64, Bool]:
    """Numbers of a string array (NaN where absent or unreadable) and where unreadable."""
    text = _pc.fill_null(array, "")
    numeric = _pc.match_substring_regex(text, r"^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$")
    # blanks around the number are allowed by the test above, not by Arrow's cast
    readable = _pc.utf8_trim_whitespace(_pc.if_else(numeric, text, None))
    values = _numpy(readable.cast(pa.float64()).fill_null(np.nan))
    unreadable = _numpy(_pc.and_(_pc.invert(numeric), _pc.not_equal(text, "")), bool)
    return values, unreadable


def _blank_null(array: Arr) -> Arr:
    return _pc.if_else(_pc.equal(_pc.fill_null(array, ""), ""), None, array)


def _hosts(text: str | None) -> tuple[list[str] | None, int]:
    """Distinct hosts in order and the slot count of an ``execHosts`` JSON list."""
    if not text:
        return None, 0
    entries = json.loads(text)
    seen: dict[str, None] = {}
    slots = 0
    for entry in entries:
        count, star, host = entry.partition("*")
        if star and count.isdigit():
            slots += int(count)
            seen.setdefault(host, None)
        else:
            slots += 1
            seen.setdefault(entry, None)
    return (list(seen) or None), slots


_JOB_ATTRS = (
    "eventTime",
    "jobId",
    "idx",
    "submitTime",
    "beginTime",
    "startTime",
    "numProcessors",
    "maxNumProcessors",
    "jStatus",
    "exitStatus",
    "exitInfo",
    "ru_utime",
    "ru_stime",
    "maxRMem",
    "maxRSwap",
    "runLimit",
    "runTime",
    "execHosts",
    "effectiveResReq",
    "userName",
    "projectName",
    "queue",
    "jobName",
)


_NUMBER_ATTRS = _JOB_ATTRS[:17]  # read as numbers; the others as text
_TEXT_ATTRS = (*_JOB_ATTRS[17:], "version")

_FINISH_AT = [_AT[name] for name in (*_TEXT_ATTRS, *_NUMBER_ATTRS)]
"""Where the fields the jobs need sit in a ``JOB_FINISH`` row's ``attrs`` (its keys in order)."""

Numbers: TypeAlias = tuple[F64, Bool, Bool]
"""A field read as numbers: the values (NaN where absent or unreadable), unreadable, absent."""


def _number_column(text: Arr) -> Numbers:
    values, bad = _floats(text)
    return values, bad, _numpy(_pc.is_null(text), bool)


def _finish_values(attrs: Any) -> tuple[dict[str, Arr], dict[str, Numbers]]:
    """Look up the fields the jobs need in the ``attrs`` maps, chunk by chunk.

    The text of :data:`_TEXT_ATTRS` and the numbers of :data:`_NUMBER_ATTRS`: the values of
    :func:`~gridtrace.logs._attrs.attr_columns` on the whole column read by :func:`_floats`,
    without combining the chunks (a copy of every key and value of every record). From
    ``MIN_ROWS`` maps, the numbers are read in the LSF kernel straight from the maps' values
    (those it cannot read exactly by :func:`_floats`), without a string column each. A chunk
    whose maps begin with the ``JOB_FINISH`` keys in order (as the reader writes them) has its
    fields found by position (:func:`~gridtrace.logs._lsf_fast.template_keys`), any other by
    name.
    """
    chunks: list[Any] = (
        [c for c in attrs.chunks if len(c)] if isinstance(attrs, pa.ChunkedArray) else [attrs]
    )
    kernel = (
        _attrs_fast.HAVE_NUMBA
        and _lsf_fast.HAVE_NUMBA
        and (len(attrs) >= _attrs_fast.MIN_ROWS or _lsf_fast.kernel_ready())
        and attrs.type.key_type == pa.string()
        and attrs.type.item_type == pa.string()
    )
    if kernel:
        kernel = _attrs_fast.compile_kernel() and _lsf_fast.compile_kernel()
    if not kernel or not chunks:
        columns = attr_columns(attrs, (*_TEXT_ATTRS, *_NUMBER_ATTRS))
        return (
            {name: columns[name] for name in _TEXT_ATTRS},
            {name: _number_column(columns[name]) for name in _NUMBER_ATTRS},
        )
    n = sum(len(chunk) for chunk in chunks)
    k = len(_NUMBER_ATTRS)
    values = np.empty((k, n), dtype=np.float64)
    bad = np.zeros((k, n), dtype=bool)
    absent = np.empty((k, n), dtype=bool)
    picks: list[tuple[Arr, npt.NDArray[np.int64]]] = []
    row = 0
    for chunk in chunks:
        index = _lsf_fast.template_keys(chunk, list(_FINISH_KEYS), _FINISH_AT)
        if index is None:  # keys not as the reader writes them: found by name
            index = _attrs_fast.find_keys(chunk, [*_TEXT_ATTRS, *_NUMBER_ATTRS])
        items = chunk.items
        picks.append((items, index[: len(_TEXT_ATTRS)]))
        at_all = index[len(_TEXT_ATTRS) :]
        end = row + len(chunk)
        absent[:, row:end] = at_all < 0
        read = _lsf_fast.read_numbers(items, at_all)  # the fields of a row together
        if read is None:
            for j in range(k):
                at = at_all[j]
                values[j, row:end], bad[j, row:end], absent[j, row:end] = _number_column(
                    items.take(_pa.array(at, mask=at < 0))
                )
        else:
            values[:, row:end] = read[0]
            for j, rows in enumerate(read[1]):
                if rows.any():
                    slow = np.flatnonzero(rows)
                    values[j, row + slow], bad[j, row + slow] = _floats(
                        items.take(_pa.array(at_all[j][slow]))
                    )
        row = end
    # the text fields of every chunk in one pass each, straight into one array per field
    gathered = _lsf_fast.gather_strings(picks)
    if gathered is None:
        gathered = [
            pa.concat_arrays(
                [items.take(_pa.array(index[j], mask=index[j] < 0)) for items, index in picks]
            )
            for j in range(len(_TEXT_ATTRS))
        ]
    return (
        dict(zip(_TEXT_ATTRS, gathered, strict=True)),
        {name: (values[j], bad[j], absent[j]) for j, name in enumerate(_NUMBER_ATTRS)},
    )


def _run_starts(order: npt.NDArray[np.intp], *columns: npt.NDArray[Any]) -> Bool:
    """Mark, in ``order``, the rows that differ from the row before in a column (NaN = NaN)."""
    first = np.ones(len(order), dtype=bool)
    same = np.ones(max(len(order) - 1, 0), dtype=bool)
    for column in columns:
        now, before = column[order][1:], column[order][:-1]
        equal = now == before
        if column.dtype.kind == "f":
            equal |= np.isnan(now) & np.isnan(before)
        same &= equal
    first[1:] = ~same
    return first


def _attempts(
    key: npt.NDArray[np.int64],
    submit: F64,
    event: F64,
    file_no: npt.NDArray[np.int64],
    line: npt.NDArray[Any],
    start: F64,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], Bool]:
    """Count the attempts of each job: one job id (``key``) and submit time (NaN = NaN).

    Returns each row's attempt (0-based, in event time, file and line order), the attempts of
    its job, and whether another row has the same id, submit, start and event time.
    """
    n = len(key)
    if not n or np.bincount(key + 1).max() <= 1:
        # every row its own job id (-1, no id, at most once): every group is one row, as the
        # sorts below would find (the benchmark's 100k rows: 0.3 ms, against 6.6 ms for them)
        return np.zeros(n, dtype=np.int64), np.ones(n, dtype=np.int64), np.zeros(n, dtype=bool)
    order = np.lexsort((line, file_no, event, submit, key))  # NaN last, stable
    attempt = np.zeros(n, dtype=np.int64)
    n_attempts = np.ones(n, dtype=np.int64)
    first = _run_starts(order, key, submit)  # a group: one job id and submit time
    group = np.cumsum(first) - 1
    group_start = np.flatnonzero(first)
    attempt[order] = np.arange(n) - group_start[group]
    n_attempts[order] = np.diff(np.append(group_start, n))[group]
    # rows whose id, submit, start and event time another row shares (NaN equal to NaN)
    order = np.lexsort((event, start, submit, key))
    first = _run_starts(order, key, submit, start, event)
    group = np.cumsum(first) - 1
    duplicate = np.zeros(n, dtype=bool)
    duplicate[order] = np.bincount(group, minlength=n)[group] > 1
    return attempt, n_attempts, duplicate


def _id_codes(ids: Arr) -> npt.NDArray[np.int64]:
    """Return integers equal exactly where the job ids are (nulls equal to each other).

    When the ids' hashes (:func:`~gridtrace.logs._lsf_fast.string_hashes`) are all
    different, so are the ids (two nulls hash alike): each row its own number. Else the
    dictionary codes (null: -1). The benchmark's 100k distinct ids: 2.5 ms, against 15 ms
    for the dictionary (medians of 11, one process).
    """
    hashes = _lsf_fast.string_hashes(ids) if len(ids) > 1 else None
    if hashes is not None:
        ordered = np.sort(hashes)
        if not np.any(ordered[1:] == ordered[:-1]):
            return np.arange(len(ids), dtype=np.int64)
    return np.asarray(_pc.dictionary_encode(ids).indices.fill_null(-1), dtype=np.int64)


def _jobs(
    rec: pa.Table,
    repeated: Bool,
    columns_of: Mapping[str, Arr],
    numbers: Mapping[str, Numbers],
) -> pa.Table:
    n = rec.num_rows

    def text(key: str) -> Arr:
        return columns_of[key]

    unreadable = np.zeros(n, dtype=bool)

    def num(key: str) -> F64:
        nonlocal unreadable
        values, bad, _ = numbers[key]
        unreadable |= bad
        return values

    event = num("eventTime")
    seq = num("jobId")
    idx = num("idx")
    submit = num("submitTime")
    begin = num("beginTime")
    start_logged = num("startTime")
    procs = num("numProcessors")
    max_procs = num("maxNumProcessors")
    jstatus = num("jStatus")
    exit_status = num("exitStatus")
    exit_info = num("exitInfo")
    utime = num("ru_utime")
    stime = num("ru_stime")
    max_rmem = num("maxRMem")
    max_rswap = num("maxRSwap")
    run_limit = num("runLimit")
    run_time = num("runTime")

    record_flags = rec.column("flags")
    truncated = flag_mask(record_flags, "TRUNCATED")
    # fields a record cut short by the end of the file lost are not known: no state from them
    start_lost = truncated & numbers["startTime"][2]
    status_lost = truncated & numbers["jStatus"][2]
    started = start_logged > 0
    start = np.where(started, start_logged, np.nan)
    end = np.where(started, event, np.nan)
    run = end - start
    end_before_start = run < 0
    run = np.where(end_before_start, np.nan, run)
    wait = start - submit
    start_before_submit = wait < 0
    eligible = np.where(begin > 0, begin, np.nan)
    walltime_used = np.where(started & (run_time >= 0), run_time, np.nan)
    mismatch = ~np.isnan(walltime_used) & ~np.isnan(run) & (np.abs(walltime_used - run) > 60)
    walltime_req = np.where(run_limit > 0, run_limit, np.nan)
    cpu = np.where((utime >= 0) & (stime >= 0), utime + stime, np.nan)
    mem_used = np.where(max_rmem >= 0, max_rmem * 1024, np.nan)
    vmem_used = np.where(max_rswap >= 0, max_rswap * 1024, np.nan)

    status = np.nan_to_num(exit_status, nan=0).astype(np.int64)
    known_exit = ~np.isnan(exit_status) & started
    by_signal = known_exit & ((status & 0x7F) != 0)
    exit_code = np.where(known_exit & ~by_signal, (status >> 8) & 0xFF, np.nan)
    exit_signal = np.where(by_signal, status & 0x7F, np.nan)

    js = np.nan_to_num(jstatus, nan=0).astype(np.int64)
    done = (js & 64) != 0
    failed = ((js & 32) != 0) & ~done
    # states as codes into _STATES (strings only for the column), TERM_* flags as codes into _TERM
    state = np.full(n, _STATE_CODE["UNKNOWN"], dtype=np.int8)
    state[done] = _STATE_CODE["COMPLETED"]
    state[failed] = _STATE_CODE["FAILED"]
    term_flag = np.full(n, -1, dtype=np.int8)
    info_code = np.nan_to_num(exit_info, nan=-1).astype(np.int64)
    for k, (code, (name, _)) in enumerate(_TERM.items()):
        hit = failed & (info_code == code)
        state[hit] = _STATE_CODE[name]
        term_flag[hit] = k
    nonstandard = ~done & ~failed & ~status_lost
    never = ~started & (done | failed) & ~start_lost
    exit_not_started = never & failed
    state[exit_not_started] = _STATE_CODE["DELETED"]
    state[start_lost] = _STATE_CODE["UNKNOWN"]
    exit_conflict = done & ((~np.isnan(exit_code) & (exit_code != 0)) | ~np.isnan(exit_signal))
    range_req = ~np.isnan(max_procs) & ~np.isnan(procs) & (procs > 0) & (max_procs > procs)
    # each distinct execHosts text is parsed once (a site has few host lists, repeated often)
    encoded = _pc.dictionary_encode(text("execHosts"))
    parsed = [_hosts(value) for value in encoded.dictionary.to_pylist()]
    listed_of: list[list[str] | None] = [listed for listed, _ in parsed] + [None]
    count_of = np.array([count for _, count in parsed] + [0], dtype=np.float64)
    nodes_of = np.array([len(listed) if listed else np.nan for listed in listed_of])
    codes = np.asarray(encoded.indices.fill_null(-1), dtype=np.int64)  # -1: no text
    # each row's list, taken from the distinct lists (the last one is None: no text)
    hosts = _pa.array(listed_of, pa.list_(pa.string())).take(
        _pa.array(np.where(started, codes, -1) % len(listed_of))
    )
    slots = np.where(started & (count_of[codes] > 0), count_of[codes], np.nan)
    nodes = np.where(started, nodes_of[codes], np.nan)

    # GPUs: the ngpus_physical rusage of the effective requirement, per host when "/host"
    # (the regular expression only on the requirements naming it: most name no GPU)
    requirements = text("effectiveResReq")
    gpus = np.full(n, np.nan)
    per_host = np.zeros(n, dtype=bool)
    listed = (
        _lsf_fast.contains(requirements, "ngpus_physical=")
        if isinstance(requirements, pa.Array)
        else None
    )
    if listed is None:
        requirements = _pc.fill_null(requirements, "")
        listed = _numpy(_pc.match_substring(requirements, "ngpus_physical="), bool)
    named = np.flatnonzero(listed)
    if len(named):
        requirements = _pc.fill_null(requirements, "")
        gpu_parts = _pc.extract_regex(
            requirements.take(_pa.array(named)),
            r"ngpus_physical=(?P<v>\d+(?:\.\d+)?)(?P<h>/host)?",
        )
        gpus[named] = _floats(_pc.fill_null(_pc.struct_field(gpu_parts, "v"), ""))[0]
        per_host[named] = _numpy(
            _pc.equal(_pc.fill_null(_pc.struct_field(gpu_parts, "h"), ""), "/host"), bool
        )
    gpus = np.where(per_host, gpus * np.where(np.isnan(nodes), np.nan, nodes), gpus)
    gpus = np.where(gpus > 0, gpus, np.nan)
    gpus_alloc = np.where(started, gpus, np.nan)

    # attempts: one job id (with index) and submit time, in event-time then line order
    # the job ids as numbers, equal where the ids are (null: -1): grouping needs no strings
    id_column = rec.column("job_id_raw").combine_chunks() if n else _pa.array([], pa.string())
    id_text = _id_codes(id_column)
    src_line = _numpy(rec.column("src_line").combine_chunks(), np.int64) if n else np.zeros(0)
    src_file = rec.column("src_file").combine_chunks() if n else _pa.array([], pa.string())
    files = src_file.dictionary_encode()
    file_no = (
        np.unique(_numpy(files.indices, np.int64), return_inverse=True)[1]
        if len(files.dictionary) > 1
        else np.zeros(n, np.int64)  # one file (or none): no sort
    )
    attempt, n_attempts, duplicate = _attempts(id_text, submit, event, file_no, src_line, start)
    earlier = (attempt < n_attempts - 1) & ~duplicate & started
    logged_state = state.copy()
    state = np.where(earlier, _STATE_CODE["REQUEUED"], state)
    was = earlier & (logged_state != _STATE_CODE["REQUEUED"])

    # a number too large for its column (a damaged field) is null and flagged, never wrapped
    fitted, too_big = fitted_numbers(
        {
            "job_seq": seq,
            "array_index": idx,
            "submit_time": submit,
            "eligible_time": eligible,
            "start_time": start,
            "end_time": end,
            "wait_s": wait,
            "run_s": run,
            "walltime_used_s": walltime_used,
            "walltime_req_s": walltime_req,
            "cores_req": procs,
            "gpus_req": gpus,
            "gpus_alloc": gpus_alloc,
            "nodes_alloc": nodes,
            "cores_alloc": slots,
            "mem_used_bytes": mem_used,
            "vmem_used_bytes": vmem_used,
            "exit_code": exit_code,
            "exit_signal": exit_signal,
        }
    )
    (
        seq,
        idx,
        submit,
        eligible,
        start,
        end,
        wait,
        run,
        walltime_used,
        walltime_req,
        procs,
        gpus,
        gpus_alloc,
        nodes,
        slots,
        mem_used,
        vmem_used,
        exit_code,
        exit_signal,
    ) = fitted
    masks: list[tuple[str, Bool]] = [
        (name, flag_mask(record_flags, name))
        for name in (
            "NON_UTF8",
            "TRUNCATED",
            "EXTRA_FIELDS",
            "TAIL_UNPARSED",
            "HOST_RUSAGE_WIDTH_GUESSED",
            "MULTILINE",
        )
    ]
    masks += [
        ("DUPLICATE_LINE", repeated),
        ("DUPLICATE", duplicate),
        ("STATUS_NONSTANDARD", nonstandard),
        ("EXIT_NOT_STARTED", exit_not_started),
        ("EXIT_STATUS_CONFLICT", exit_conflict),
        ("CORES_REQ_RANGE", range_req),
        ("END_BEFORE_START", end_before_start),
        ("START_BEFORE_SUBMIT", start_before_submit),
        ("WALLTIME_MISMATCH", mismatch),
        ("VALUE_UNREADABLE", unreadable | too_big),
        ("GPUS_PER_HOST", per_host & ~np.isnan(gpus)),
        ("GPUS_ALLOC_FROM_REQUEST", ~np.isnan(gpus_alloc)),
    ]
    terms = list(_TERM.values())
    for k in sorted(np.unique(term_flag[term_flag >= 0]).tolist(), key=lambda k: terms[k][1]):
        masks.append((terms[k][1], term_flag == k))
    for k in sorted(np.unique(logged_state[was]).tolist(), key=lambda k: _STATES[k]):
        masks.append((f"STATE_WAS_{_STATES[k]}", was & (logged_state == k)))
    flags = flag_array(n, masks)

    site = rec.column("site").combine_chunks() if n else _pa.array([], pa.string())
    base = _pc.fill_null(id_column, "")
    submit_text = _pc.if_else(
        _pa.array(np.isnan(submit)),
        "unknown",
        _pa.array(np.nan_to_num(submit).astype(np.int64)).cast(pa.string()),
    )
    job_key = _pc.binary_join_element_wise(site, ":", base, "@", submit_text, "")
    ts = pa.timestamp("s", tz="UTC")

    def times(values: F64) -> Arr:
        return int_or_null(values, pa.int64()).cast(ts)

    columns: dict[str, Any] = {
        "site": site,
        "source_format": _repeat("lsf", n),
        "job_key": job_key,
        "job_id_raw": base,
        "job_seq": int_or_null(seq, pa.int64()),
        "array_index": int_or_null(np.where(idx > 0, idx, np.nan), pa.int32()),
        "attempt": _pa.array(attempt.astype(np.int16), pa.int16()),
        "n_attempts": _pa.array(n_attempts.astype(np.int16), pa.int16()),
        "user": _blank_null(text("userName")),
        "account": _blank_null(text("projectName")),
        "queue": _blank_null(text("queue")),
        "job_name": _blank_null(text("jobName")),
        "submit_time": times(np.where(submit > 0, submit, np.nan)),
        "eligible_time": times(eligible),
        "start_time": times(start),
        "end_time": times(end),
        "wait_s": int_or_null(wait, pa.int64()),
        "run_s": int_or_null(run, pa.int64()),
        "walltime_used_s": int_or_null(walltime_used, pa.int64()),
        "walltime_req_s": int_or_null(walltime_req, pa.int64()),
        "cpu_time_s": _pa.array(cpu, pa.float64(), from_pandas=True),
        "cores_req": int_or_null(np.where(procs > 0, procs, np.nan), pa.int32()),
        "gpus_req": int_or_null(gpus, pa.int32()),
        "gpus_alloc": int_or_null(gpus_alloc, pa.int32()),
        "nodes_alloc": int_or_null(nodes, pa.int32()),
        "cores_alloc": int_or_null(slots, pa.int32()),
        "exec_hosts": _pa.array(hosts, pa.list_(pa.string())),
        "mem_used_bytes": int_or_null(mem_used, pa.int64()),
        "vmem_used_bytes": int_or_null(vmem_used, pa.int64()),
        "exit_code": int_or_null(exit_code, pa.int32()),
        "exit_signal": int_or_null(exit_signal, pa.int32()),
        "state": _pa.array(_STATES, pa.string()).take(_pa.array(state)),
        "end_record_type": _repeat("JOB_FINISH", n),
        "src_file": src_file,
        "src_line": _pa.array(src_line, pa.int64()),
        "flags": flags,
    }
    return pa.Table.from_arrays(
        [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in JOBS], schema=JOBS
    )


def _may_repeat(records: pa.Table, among: Bool) -> Bool:
    """Return the rows of ``among`` that may repeat another: a superset of ``may_repeat``'s.

    The rows whose ``job_id_raw`` and ``stamp`` (functions of ``attrs`` on ``JOB_FINISH``
    rows) hash as another row's, in the kernel: equal pairs always do, different ones by
    chance only, and a row taken by chance is only compared for nothing by ``repeated_rows``,
    whose answer stays exact. Without the kernel, ``may_repeat``, which takes, joins and
    dictionary-encodes the two texts (the benchmark's 100k rows: 32 ms, against 9 ms here;
    medians of 7, one process, AMD EPYC).
    """
    rows = np.flatnonzero(among)
    if len(rows) < 2:
        return among
    ids = _lsf_fast.string_hashes(records.column("job_id_raw"))
    stamps = _lsf_fast.string_hashes(records.column("stamp"))
    if ids is None or stamps is None:
        return may_repeat(records, among)
    # the pair's hash: FNV-1a style, the id's hash then the stamp's (uint64 wraps)
    pair = (ids[rows] * np.uint64(_lsf_fast.FNV_PRIME)) ^ stamps[rows]
    order = np.argsort(pair)
    ordered = pair[order]
    same = ordered[1:] == ordered[:-1]
    shared = np.zeros(len(rows), dtype=bool)
    shared[order[1:][same]] = True
    shared[order[:-1][same]] = True
    out = np.zeros(len(among), dtype=bool)
    out[rows[shared]] = True
    return out


def assemble_lsf(parts: Sequence[FileParse], *, tz: str | None = None) -> ParseResult:
    """Assemble tokenised LSF files, given in reading order, into a :class:`ParseResult`.

    ``tz`` is accepted for the registry and ignored: every LSF time is a UTC epoch.

    Returns
    -------
    ParseResult
        ``info`` holds ``format``, ``lsf_versions`` (record format versions seen) and
        ``lsf_events`` (records by event type).
    """
    del tz
    records = parts_records(parts)
    quarantine = parts_quarantine(parts)
    is_finish = _numpy(_pc.equal(records.column("record_type"), "JOB_FINISH"), bool)
    copies, repeated = repeated_rows(records.column("attrs"), _may_repeat(records, is_finish))
    if copies.any():
        flags = append_flag(records.column("flags"), copies, "DUPLICATE_LINE")
        records = records.set_column(records.schema.get_field_index("flags"), "flags", flags)
    rows = np.flatnonzero(is_finish & ~copies)
    finish = records if len(rows) == records.num_rows else records.take(_pa.array(rows))
    columns_of, numbers = _finish_values(finish.column("attrs"))
    jobs = _jobs(finish, repeated[rows], columns_of, numbers)
    versions: list[str] = []
    if finish.num_rows:
        found = columns_of["version"]
        versions = sorted(str(v) for v in _pc.unique(found).to_pylist() if v is not None)
    counted = _pc.value_counts(records.column("record_type"))
    events = dict(
        zip(counted.field("values").to_pylist(), counted.field("counts").to_pylist(), strict=True)
    )
    return result_of_parts(
        parts,
        records=records,
        jobs=jobs,
        quarantine=quarantine,
        info={
            "format": "lsf",
            "lsf_versions": versions,
            "lsf_events": dict(sorted(events.items())),
            "duplicate_lines": int(copies.sum()),
            **nul_fragment_counts(quarantine),
        },
    )


read_lsf = file_reader(
    "lsf",
    tokenize_lsf_file,
    assemble_lsf,
    what="LSF ``lsb.acct`` (or ``lsb.events``) files",
    returns="one ``jobs`` row per ``JOB_FINISH`` record",
    examples="""
        >>> result = read_lsf("lsb.acct.1", site="hpc")  # doctest: +SKIP
        >>> result.jobs.column("state").to_pylist()  # doctest: +SKIP
        ['COMPLETED', 'COMPLETED']
    """,
)
