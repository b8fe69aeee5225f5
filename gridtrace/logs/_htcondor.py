r"""The HTCondor history reader: ``condor_history -json`` / ``-jsonl`` into ``records``, ``jobs``.

``condor_history -json`` writes one JSON array of job ClassAds, each object spread over many
lines (one attribute a line); ``-jsonl`` writes one object per line. Both are read the same way:
the file is scanned object by object, whatever the line breaks, and every object is one
``records`` row of type ``AD`` whose ``attrs`` map the attribute names onto their values (strings
as they are, numbers and booleans as JSON text, lists and nested ads as JSON). Unevaluated
expressions, which HTCondor writes as ``"/Expr(...)/"`` strings, stay as such. A chunk of the
file whose every line is one whole job ad or JSON punctuation (``-jsonl``) is read a line at a
time, one ``json`` call a line, which gives the same rows faster (integers are kept as written,
which is what ``json.dumps`` writes for every integer, ``-0`` written ``0`` as it does).

Lines and counts
----------------
Every physical line gets one row, so that lines read = parsed + quarantined: the line where an ad
starts holds its ``AD`` row, its other lines are rows of type ``CONT`` (``job_id_raw`` of the ad,
``attrs["record_line"]`` its first line), and lines holding only JSON punctuation (``[``, ``]``,
``,``) or blanks are rows of type ``SEP``. A line on which several ads start (compact output such
as ``[{…},{…}]``) holds one row per ad, so a "line" in the counts is then one ad. An object that
is not valid JSON goes to quarantine (reason with the JSON error, at the line where it starts;
its other lines follow with reason ``inside the broken object of line N``), and reading resumes
at the next line that starts with ``{`` at column 0; so does text that is not an object. A valid
ad without ``ClusterId`` and ``ProcId`` is quarantined the same way (not a job ad), and so is an
ad whose key or text value holds a ``\u`` escape of half a UTF-16 surrogate pair without its
other half (``"\ud83d"`` alone): Python's JSON decoder accepts it, but the lone surrogate it gives
is not a character, and no UTF-8 text (no Parquet string) can hold it.

Jobs (HTCondor manual, job ClassAd attributes)
----------------------------------------------
One row per ad. ``job_id_raw`` ``ClusterId.ProcId``, ``job_seq`` ClusterId, ``array_index``
ProcId; ``user`` Owner; ``account`` AcctGroup, else AccountingGroup without its trailing
``.user`` (``group_atlas.prod.alice`` → ``group_atlas.prod``: the VO-like part that a
:class:`~gridtrace.logs.VOMapping` on ``account`` maps); ``job_name`` JobBatchName.
Times (UTC epochs): ``submit_time`` QDate; ``start_time`` JobCurrentStartDate (the last run),
else JobStartDate (flag ``START_FROM_FIRST_RUN``); ``end_time`` CompletionDate when positive, else
EnteredCurrentStatus for a job that left the queue after starting (flag
``END_FROM_STATUS_TIME``); ``wait_s`` = start − submit, ``run_s`` = end − start;
``walltime_used_s`` RemoteWallClockTime (cumulative over runs; flag ``WALLTIME_MISMATCH`` when
more than 60 s from run_s for a job that started once); ``cpu_time_s`` RemoteUserCpu +
RemoteSysCpu. Sizes: ``cores_req`` RequestCpus, ``cores_alloc`` CpusProvisioned, else RequestCpus
for a job that started (flag ``CORES_ALLOC_FROM_REQUEST``); ``gpus_req`` RequestGpus,
``gpus_alloc`` GpusProvisioned; ``exec_hosts`` the host of LastRemoteHost, else RemoteHost
(``slot1_2@node7`` → ``node7``), ``nodes_alloc`` their count; ``mem_req_bytes`` RequestMemory
(MiB) × 2²⁰, ``mem_used_bytes`` ResidentSetSize_RAW, else ResidentSetSize (KiB) × 1024. Exit:
``ExitBySignal`` true → ``exit_signal`` ExitSignal, else ``exit_code`` ExitCode.

States from JobStatus: 4 (Completed) → COMPLETED with exit code 0, FAILED otherwise; 3 (Removed)
→ CANCELLED when it started, DELETED when not; 1 (Idle) → PENDING; 2 (Running) → RUNNING;
5 (Held) → PENDING with flag ``HELD``; 6 (Transferring output) → RUNNING, flag
``TRANSFERRING_OUTPUT``; 7 (Suspended) → RUNNING, flag ``SUSPENDED``; others UNKNOWN, flag
``STATUS_NONSTANDARD``. A job that is not finished has no end time.

Attempts: the history holds one ad per job, describing its last run. ``attempt`` is
NumJobStarts − 1 and ``n_attempts`` NumJobStarts (at least 1); when the job started more than
once, the earlier runs are not in the file: flag ``ATTEMPT_UNLOGGED``. The same job id and QDate
in several ads (overlapping history files) are flagged ``DUPLICATE``.

Every other fallback is flagged too (``HOST_FROM_REMOTE_HOST``, ``MEM_USED_ROUNDED``,
``EXIT_CODE_MISSING``, ``NUM_STARTS_MISSING``, ``ACCOUNT_GROUP_WHOLE``, ``EXPRESSION``,
``VALUE_UNREADABLE``, ...): :data:`FLAGS` says what each flag means.

Damaged bytes
-------------
* A line holding NUL bytes (what a crash or a log rotation leaves) is a fragment: quarantined,
  never part of a job (an ad touching it is quarantined); ``info["nul_lines"]`` and
  ``info["nul_bytes"]`` count them.
* Bytes that are not UTF-8 are decoded as Windows-1252 (else Latin-1), flag ``NON_UTF8`` on the
  record and the job, the bytes kept in ``records.raw``.
* CR LF line ends are JSON blank space; the rows of such lines are flagged ``CRLF``.
* The file's last ad cut short by the end of the file (decoding fails only because the text
  ends): the attributes followed by a ``,`` are kept (the last one may have lost characters, a
  number cut short still reads as a number), flag ``TRUNCATED``, or the object is quarantined
  when ClusterId and ProcId did not survive. An ad broken anywhere else is quarantined.
* An ad repeating an earlier one attribute for attribute (overlapping history files) makes no
  job: the first copy's job and the later copies (in ``records``) are flagged
  ``DUPLICATE_LINE`` (``info["duplicate_lines"]``).
* A record's ``stamp`` (CompletionDate, else EnteredCurrentStatus) beyond the largest 64-bit
  integer stays as text, with a null ``stamp_utc``.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from gridtrace._log import library_logger
from gridtrace.logs import _htcondor_fast
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
from gridtrace.logs._columnar import (
    fitted_numbers,
    int_or_null,
    interleave,
    quarantine_table,
    string_array,
)
from gridtrace.logs._prefilter import may_repeat
from gridtrace.logs._stream import Chunk, LineFormat, file_reader, file_tokenizer
from gridtrace.logs._text import NUL_FRAGMENT_REASON, decode_line, nul_fragment_counts
from gridtrace.schema import JOBS, QUARANTINE, RECORDS

__all__ = [
    "FLAGS",
    "assemble_htcondor",
    "looks_like_htcondor",
    "read_htcondor",
    "tokenize_htcondor_file",
]

FLAGS: Mapping[str, str] = {
    # the ad (records; all but CRLF are copied to the job made from it)
    "NON_UTF8": (
        "the ad held bytes that are not UTF-8: decoded as Windows-1252 (Latin-1 where it has "
        "no character); the original bytes are in records.raw"
    ),
    "CRLF": "records: the line ended in CR LF (a Windows copy); the CR is JSON blank space",
    "TRUNCATED": (
        "the file's last ad was cut short by the end of the file (a crash): the attributes "
        "followed by a ',' are kept, the last one and the rest are null; state UNKNOWN unless "
        "JobStatus (and, for a completed job, ExitCode) survived; the bytes are in records.raw"
    ),
    "DUPLICATE_LINE": (
        "the ad was written more than once, attribute for attribute (overlapping history "
        "files): the job is made from the first copy; each later copy stays in records with "
        "this flag and makes no job"
    ),
    # jobs
    "DUPLICATE": (
        "another ad has the same job id and QDate but differs elsewhere: both rows are kept"
    ),
    "ATTEMPT_UNLOGGED": (
        "NumJobStarts > 1: the earlier runs are not in the history; attempt is "
        "NumJobStarts - 1, walltime_used_s (RemoteWallClockTime) covers every run"
    ),
    "NUM_STARTS_MISSING": "no NumJobStarts for a job that started: attempt 0 of 1 assumed",
    "START_FROM_FIRST_RUN": "no JobCurrentStartDate: start_time is JobStartDate (the first run)",
    "END_FROM_STATUS_TIME": (
        "no CompletionDate for a job that left the queue after starting: end_time is "
        "EnteredCurrentStatus"
    ),
    "END_BEFORE_START": "end before start: run_s null",
    "WALLTIME_MISMATCH": (
        "|RemoteWallClockTime - (end - start)| > 60 s for a job that started once: run_s is "
        "end - start"
    ),
    "CORES_ALLOC_FROM_REQUEST": "no CpusProvisioned: cores_alloc is RequestCpus (job started)",
    "HOST_FROM_REMOTE_HOST": "no LastRemoteHost: exec_hosts is the host of RemoteHost",
    "ACCOUNT_GROUP_WHOLE": (
        "no AcctGroup and AccountingGroup does not end in .<user>: account is AccountingGroup whole"
    ),
    "MEM_USED_ROUNDED": (
        "no ResidentSetSize_RAW: mem_used_bytes is ResidentSetSize, which HTCondor rounds up"
    ),
    "EXIT_CODE_MISSING": (
        "JobStatus 4 (completed) without ExitCode and not by a signal: state COMPLETED assumed"
    ),
    "HELD": "JobStatus 5 (held): state PENDING",
    "TRANSFERRING_OUTPUT": "JobStatus 6 (transferring output): state RUNNING",
    "SUSPENDED": "JobStatus 7 (suspended): state RUNNING",
    "STATUS_NONSTANDARD": "JobStatus missing or not 1-7: state UNKNOWN",
    "EXPRESSION": "an attribute read into a job column is an unevaluated expression: null",
    "VALUE_UNREADABLE": (
        "an attribute read into a job column is not a number (or does not fit the column): null; "
        "a NumJobStarts that is no count or above 32767: attempt 0 of 1"
    ),
}
"""Every flag this reader sets on a row, with what it means (see ``flag_meanings``)."""

logger = library_logger(__name__)

_MAX_STARTS = float(np.iinfo(np.int16).max)  # n_attempts is an int16 column

_pc: Any = pc
_pa: Any = pa
Arr: TypeAlias = Any
F64 = npt.NDArray[np.float64]
Bool = npt.NDArray[np.bool_]

_DECODER = json.JSONDecoder()
_SKIP = re.compile(r"[\s,\[\]]*")
_OBJECT_LINE = re.compile(r"^\{", re.MULTILINE)
# the \u escape of a UTF-16 surrogate (U+D800 to U+DFFF): alone, json decodes it to a lone
# surrogate; only text holding one is checked further (_has_lone_surrogate)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
LONE_SURROGATE_REASON = (
    "a \\u escape stands for half of a UTF-16 surrogate pair (U+D800 to U+DFFF) without its "
    "other half: not a character, so the ad cannot be stored as UTF-8 text; write the character "
    "itself, or both halves of its pair"
)
_KEYS = (b'"ClusterId"', b'"ProcId"', b'"QDate"', b'"GlobalJobId"', b'"JobStatus"')


def looks_like_htcondor(head: bytes) -> bool:
    """Whether the first bytes of a (decompressed) file look like ``condor_history -json(l)``.

    True when the text starts (after blanks) with ``[`` or ``{`` and names a job attribute
    (``ClusterId``, ``ProcId``, ``QDate``, ``GlobalJobId`` or ``JobStatus``) as a JSON key.
    """
    stripped = head.lstrip()
    if not stripped.startswith((b"[", b"{")):
        return False
    return any(key in stripped for key in _KEYS)


# --------------------------------------------------------------------------- tokeniser


def _value(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if value is None:
        return None
    return json.dumps(value)


def _float_text(text: str) -> str:
    """Write the number ``text`` as ``json.dumps`` does (``1.50`` → ``1.5``)."""
    value = float(text)
    shown = repr(value)
    return shown if shown[-1].isdigit() else json.dumps(value)


# Numbers come back as their text, as json.dumps writes them (integers as written but -0), so
# that only booleans and nested values are left to convert, and the rows of a line are the
# object scanner's whichever way a chunk is read
def _int_text(text: str) -> str:
    """Write the integer ``text`` as ``json.dumps`` does (``-0`` → ``0``; others as written)."""
    return "0" if text == "-0" else text


_TEXT_DECODER = json.JSONDecoder(parse_int=_int_text, parse_float=_float_text)
_PLAIN = (str, type(None))
_BOOL = {True: "true", False: "false"}


def _has_lone_surrogate(obj: dict[Any, Any]) -> bool:
    """Whether a key or a text value of the decoded ad ``obj`` holds a lone surrogate.

    Nested values need no check: they are stored as ``json.dumps`` writes them, which escapes it.
    """
    for key, value in obj.items():
        for text in (key, value):
            if isinstance(text, str):
                try:
                    text.encode()
                except UnicodeEncodeError:
                    return True
    return False


def _line_attrs(line: str) -> dict[str, str | None] | None:
    """Read the attrs of a job ad written on one line; None when the line is not exactly that."""
    try:
        obj = _TEXT_DECODER.decode(line)
    except json.JSONDecodeError:
        return None
    if not (isinstance(obj, dict) and "ClusterId" in obj and "ProcId" in obj):
        return None
    if "\\u" in line and _SURROGATE_ESCAPE.search(line) and _has_lone_surrogate(obj):
        return None  # for the object scanner, which quarantines it
    types = set(map(type, obj.values()))
    if types.issubset(_PLAIN):
        return obj
    if types.issubset((*_PLAIN, bool)):
        for key, value in obj.items():
            if value is True or value is False:
                obj[key] = _BOOL[value]
        return obj
    # lists and nested ads: encode them from a plain decoding, as the object scanner does
    return {str(key): _value(value) for key, value in _DECODER.decode(line).items()}


def _repeat(value: str, n: int) -> Arr:
    """Return ``n`` copies of ``value`` as a string array, built from its buffers."""
    encoded = value.encode()
    if not encoded or n * len(encoded) >= 1 << 31:
        return _pa.array([value], pa.string()).take(_pa.array(np.zeros(n, dtype=np.int32)))
    offsets = np.arange(0, (n + 1) * len(encoded), len(encoded), dtype=np.int32)
    return string_array(offsets, np.frombuffer(encoded * n, dtype=np.uint8))


class _Rows:
    def __init__(self) -> None:
        self.lines: list[int] = []
        self.types: list[str] = []
        self.stamps: list[str | None] = []
        self.job_ids: list[str | None] = []
        self.offsets: list[int] = [0]
        self.keys: list[str] = []
        self.values: list[str | None] = []
        self.flags: list[list[str] | None] = []
        self.raw: list[bytes | None] = []

    def add(
        self,
        line: int,
        record_type: str,
        attrs: dict[str, str | None] | None = None,
        *,
        stamp: str | None = None,
        job_id: str | None = None,
        flags: list[str] | None = None,
        raw: bytes | None = None,
    ) -> None:
        self.lines.append(line)
        self.types.append(record_type)
        self.stamps.append(stamp)
        self.job_ids.append(job_id)
        if attrs:
            self.keys.extend(attrs)
            self.values.extend(attrs.values())
        self.offsets.append(len(self.keys))
        self.flags.append(flags or None)
        self.raw.append(raw)

    def drop_from(self, line: int) -> None:
        """Drop the rows of lines ``line`` and after (the last rows added)."""
        keep = len(self.lines)
        while keep and self.lines[keep - 1] >= line:
            keep -= 1
        del self.lines[keep:], self.types[keep:], self.stamps[keep:], self.job_ids[keep:]
        del self.offsets[keep + 1 :], self.flags[keep:], self.raw[keep:]
        del self.keys[self.offsets[-1] :], self.values[self.offsets[-1] :]

    def table(self, site: str, src_file: str) -> pa.Table:
        n = len(self.lines)
        empty = np.array([self.offsets[i] == self.offsets[i + 1] for i in range(n)], dtype=bool)
        table = _records_table(
            site,
            src_file,
            _pa.array(self.lines, pa.int64()),
            _pa.array(self.types, pa.string()),
            _pa.array(self.stamps, pa.string()),
            _pa.array(self.job_ids, pa.string()),
            _pa.MapArray.from_arrays(
                _pa.array(self.offsets, pa.int32()),
                _pa.array(self.keys, pa.string()),
                _pa.array(self.values, pa.string()),
                mask=_pa.array(empty) if n else None,
            ),
            _pa.array(self.flags, pa.list_(pa.string())),
            _pa.array(self.raw, pa.binary()),
        )
        if n and bool(np.any(np.diff(np.asarray(self.lines)) < 0)):
            table = table.take(_pc.sort_indices(table, [("src_line", "ascending")]))
        return table


_INT64_MAX = str(np.iinfo(np.int64).max)


def _epoch_text(stamps: Arr) -> Arr:
    """Return where ``stamps`` are epochs: digits only, at most the largest int64.

    A larger stamp (a CompletionDate past 2**63 - 1 s) is kept as text, with no ``stamp_ts``.
    """
    digits = _pc.fill_null(_pc.match_substring_regex(stamps, r"^\d+$"), False)
    longest = _pc.max(_pc.utf8_length(stamps)).as_py()
    if longest is None or longest < len(_INT64_MAX):
        return digits
    significant = _pc.utf8_ltrim(_pc.fill_null(stamps, ""), "0")
    length = _pc.utf8_length(significant)
    width = len(_INT64_MAX)
    fits = _pc.or_(
        _pc.less(length, width),
        _pc.and_(_pc.equal(length, width), _pc.less_equal(significant, _INT64_MAX)),
    )
    return _pc.and_(digits, fits)


def _records_table(
    site: str,
    src_file: str,
    lines: Arr,
    types: Arr,
    stamps: Arr,
    job_ids: Arr,
    attrs: Arr,
    flags: Arr,
    raw: Arr,
    epochs: Arr | None = None,
) -> pa.Table:
    """Build ``records`` rows from their columns (the site, format, file and epoch added).

    ``epochs``, when given, are the stamps as ``timestamp[s, UTC]`` (else read from them).
    """
    n = len(lines)
    if epochs is None:
        texts = _pc.if_else(_epoch_text(stamps), stamps, None)
        epochs = texts.cast(pa.int64()).cast(pa.timestamp("s", tz="UTC"))
    return pa.Table.from_arrays(
        [
            _repeat(site, n),
            _repeat("htcondor", n),
            _repeat(src_file, n),
            lines,
            types,
            stamps,
            epochs,
            job_ids,
            attrs,
            flags,
            raw,
        ],
        schema=RECORDS,
    )


def _decode(data: bytes) -> tuple[str, list[bytes], list[bool]]:
    r"""Text of the file, its raw lines, and which lines were not UTF-8.

    A line that is not UTF-8 is decoded by :func:`decode_line`'s stated fallback (Windows-1252,
    else Latin-1); the text keeps one ``\n`` per line end, so that offsets map to lines.
    """
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    try:
        text = data.decode("utf-8")
        return text, lines, [False] * len(lines)
    except UnicodeDecodeError:
        pass
    decoded = [decode_line(line) for line in lines]
    text = "\n".join(line for line, _ in decoded)
    if data.endswith(b"\n"):
        text += "\n"
    return text, lines, [repaired for _, repaired in decoded]


def _line_flags(k: int, crlf: list[bool], extra: list[str] | None = None) -> list[str] | None:
    """Return the flags of the row of line ``k`` (0-based)."""
    flags = list(extra or ())
    if crlf[k]:
        flags.append("CRLF")
    return flags or None


def _cut_by_the_end(text: str, err: json.JSONDecodeError) -> bool:
    """Whether decoding failed only because the text ended (a last object cut short)."""
    if err.msg.startswith("Unterminated string"):
        return True  # no closing quote (nor line end) before the end of the text
    return err.pos >= len(text.rstrip())


def _skip_blanks(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _surviving_members(text: str, pos: int) -> dict[str, Any]:
    """Read the members of an object at ``pos`` that the end of the text cut short.

    A member is kept when a ``,`` follows its value: the last one before the end may have lost
    characters (a number cut short still reads as a number), so it is dropped.
    """
    members: dict[str, Any] = {}
    i = pos + 1
    n = len(text)
    while True:
        i = _skip_blanks(text, i)
        if i >= n or text[i] != '"':
            break
        try:
            key, i = _DECODER.raw_decode(text, i)
        except json.JSONDecodeError:
            break
        i = _skip_blanks(text, i)
        if i >= n or text[i] != ":":
            break
        try:
            value, i = _DECODER.raw_decode(text, _skip_blanks(text, i + 1))
        except json.JSONDecodeError:
            break
        i = _skip_blanks(text, i)
        if i >= n or text[i] != ",":
            break
        members[key] = value
        i += 1
    return members


def _tokenize_lines(
    text: str,
    raw_lines: list[bytes],
    non_utf8: list[bool],
    site: str,
    src_file: str,
    base: int,
    only: Iterable[int] | None = None,
) -> pa.Table | None:
    """Tokenise lines of one job ad a line (``-jsonl``) with one ``json`` call a line.

    Returns None, to leave the lines to the object scanner, unless every line is a complete job
    ad or only blanks and JSON punctuation: then both ways give the same rows. ``base`` is the
    number of the file's lines before these; ``only`` the lines (0-based) to read, when not all.
    """
    lines = text.split("\n")
    if len(lines) > len(raw_lines):
        lines.pop()  # the newline ending the last line starts no line
    if len(lines) != len(raw_lines):
        return None
    if "\x00" in text:
        return None  # lines holding NUL bytes are quarantined by the object scanner
    rows = _Rows()
    any_non_utf8 = any(non_utf8)
    crlf = [line.endswith(b"\r") for line in raw_lines] if "\r" in text else [False] * len(lines)
    for k in range(len(lines)) if only is None else only:
        line = lines[k]
        if not line.lstrip().startswith("{"):
            if _SKIP.fullmatch(line) is None:
                return None
            rows.add(base + k + 1, "SEP", flags=_line_flags(k, crlf))
            continue
        attrs = _line_attrs(line)
        if attrs is None:
            return None
        stamp = attrs.get("CompletionDate")
        if stamp is None or stamp == "0":
            stamp = attrs.get("EnteredCurrentStatus")
        bad_bytes = any_non_utf8 and non_utf8[k]
        rows.add(
            base + k + 1,
            "AD",
            attrs,
            stamp=stamp,
            job_id=f"{attrs['ClusterId']}.{attrs['ProcId']}",
            flags=_line_flags(k, crlf, ["NON_UTF8"] if bad_bytes else None),
            raw=raw_lines[k] if bad_bytes else None,
        )
    return rows.table(site, src_file)


Decoded: TypeAlias = tuple[str, list[bytes], list[bool]]
"""What :func:`_decode` gives: the text, the raw lines, which lines were not UTF-8."""


def _tokenize_jsonl(
    chunk: Chunk,
    text: str,
    raw_lines: list[bytes],
    non_utf8: list[bool],
    site: str,
    src_file: str,
    *,
    kernel: bool,
) -> pa.Table | None:
    """Tokenise a chunk of one ad a line as :func:`_tokenize_lines`, clean lines by the kernel.

    With ``kernel``, the lines :mod:`gridtrace.logs._htcondor_fast` recognises are read by it,
    the others by :func:`_tokenize_lines`; the rows are the same. None as there.
    """
    return _jsonl_rows(chunk, lambda: (text, raw_lines, non_utf8), site, src_file, kernel=kernel)


def _jsonl_rows(
    chunk: Chunk, decode: Callable[[], Decoded], site: str, src_file: str, *, kernel: bool
) -> pa.Table | None:
    """Tokenise a chunk as :func:`_tokenize_jsonl` does, decoding it only for declined lines.

    ``decode`` gives the chunk decoded (:func:`_decode`); it is not called when the kernel
    reads every line (it checks that strings are UTF-8 and declines the lines that are not).
    """
    base = chunk.first_line - 1
    scan = None
    if kernel:  # a line holding NUL bytes is declined, then left to the object scanner
        scan = _htcondor_fast.scan_jsonl(chunk.data)
    if scan is None or not scan.fast.any() or scan.lines != chunk.lines:
        text, raw_lines, non_utf8 = decode()
        return _tokenize_lines(text, raw_lines, non_utf8, site, src_file, base)
    declined = np.flatnonzero(~scan.fast)
    lines = np.flatnonzero(scan.fast) + 1 + base
    if not len(declined):
        return _fast_ads(scan, lines, site, src_file)
    text, raw_lines, non_utf8 = decode()
    if len(raw_lines) != scan.lines:
        return _tokenize_lines(text, raw_lines, non_utf8, site, src_file, base)
    others = _tokenize_lines(
        text, raw_lines, non_utf8, site, src_file, base, only=declined.tolist()
    )
    if others is None:
        return None
    return interleave(_fast_ads(scan, lines, site, src_file), lines, others)


_FLOAT_TEXT: dict[str, str] = {}
"""Real numbers as ``json.dumps`` writes them, by their text in the file (values repeat)."""


def _fast_ads(scan: _htcondor_fast.JsonlScan, lines: Any, site: str, src_file: str) -> pa.Table:
    """Build the ``AD`` rows of the kernel's clean lines, at file lines ``lines``."""
    values = scan.values
    rewrite = np.flatnonzero(scan.rewrite)
    if len(rewrite):
        texts = values.take(_pa.array(rewrite)).to_pylist()
        if len(_FLOAT_TEXT) > 100_000:
            _FLOAT_TEXT.clear()
        memo = _FLOAT_TEXT
        written = [memo.get(t) or memo.setdefault(t, _float_text(t)) for t in texts]
        values = _pc.replace_with_mask(values, _pa.array(scan.rewrite), _pa.array(written))
    n = len(scan.members)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(scan.members, out=offsets[1:])
    epochs = None
    if not len(rewrite) and scan.vdata is not None:
        job_ids, stamps, epochs = _htcondor_fast.ids_and_stamps(scan)
    else:

        def value_of(j: int) -> Arr:
            at = scan.where[:, j]
            return values.take(_pa.array(at, mask=at < 0))

        cluster, proc, completion, entered = (value_of(j) for j in range(4))
        no_completion = _pc.or_(_pc.is_null(completion), _pc.equal(completion.fill_null(""), "0"))
        stamps = _pc.if_else(no_completion, entered, completion)
        job_ids = _pc.binary_join_element_wise(
            cluster.fill_null("None"), proc.fill_null("None"), pa.scalar(".", pa.string())
        )
    return _records_table(
        site,
        src_file,
        _pa.array(np.asarray(lines, dtype=np.int64), pa.int64()),
        _repeat("AD", n),
        stamps,
        job_ids,
        _pa.MapArray.from_arrays(_pa.array(offsets, pa.int32()), scan.keys, values),
        pa.nulls(n, pa.list_(pa.string())),
        pa.nulls(n, pa.binary()),
        epochs,
    )


def _looks_pretty(data: bytes) -> bool:
    """Whether the first ``{`` of ``data`` ends its line (pretty ``-json``, one member a line)."""
    at = data.find(b"{")
    if at < 0:
        return False
    end = data.find(b"\n", at)
    return end >= 0 and not data[at + 1 : end].strip(b" \t")


def _pretty_rows(chunk: Chunk, site: str, src_file: str) -> tuple[pa.Table, int] | None:
    """Tokenise a pretty ``-json`` chunk by the kernel: its rows and the lines they take.

    Each ad is joined onto one line (:func:`~gridtrace.logs._htcondor_fast.join_pretty`) and
    read by the ``-jsonl`` kernel: its ``AD`` row is that line's, its other lines ``CONT`` rows
    naming it, the lines between ads ``SEP`` rows, as the object scanner writes them. An ad
    left open at the end of the chunk is left to the next. None, for the object scanner to read
    the chunk, unless every ad is one the kernel reads.
    """
    joined = _htcondor_fast.join_pretty(chunk.data, final=chunk.final)
    if joined is None or not len(joined.first):
        return None
    scan = _htcondor_fast.scan_jsonl(joined.data)
    if scan is None or len(scan.members) != len(joined.first) or not scan.fast[joined.row].all():
        return None
    base = chunk.first_line - 1
    ad_lines = joined.first + 1 + base
    ads = _fast_ads(scan, ad_lines, site, src_file)
    taken = joined.taken
    # the ad's other lines (CONT, naming its first line and id), then the rest (SEP)
    spans = joined.last - joined.first
    n_cont = int(spans.sum())
    owner = np.repeat(np.arange(len(spans)), spans)
    starts = np.cumsum(spans) - spans
    cont = np.arange(n_cont, dtype=np.int64) - np.repeat(starts - joined.first - 1, spans)
    covered = np.zeros(taken, dtype=bool)
    covered[joined.first] = True
    covered[cont] = True
    sep = np.flatnonzero(~covered)
    pick = _pa.array(owner)
    named = _pa.array(ad_lines, pa.int64()).cast(pa.string()).take(pick)
    timestamps = pa.timestamp("s", tz="UTC")
    cont_rows = _records_table(
        site,
        src_file,
        _pa.array(cont + 1 + base, pa.int64()),
        _repeat("CONT", n_cont),
        pa.nulls(n_cont, pa.string()),
        ads.column("job_id_raw").take(pick),
        _pa.MapArray.from_arrays(
            _pa.array(np.arange(n_cont + 1, dtype=np.int32)), _repeat("record_line", n_cont), named
        ),
        pa.nulls(n_cont, pa.list_(pa.string())),
        pa.nulls(n_cont, pa.binary()),
        pa.nulls(n_cont, timestamps),
    )
    n_sep = len(sep)
    sep_rows = _records_table(
        site,
        src_file,
        _pa.array(sep + 1 + base, pa.int64()),
        _repeat("SEP", n_sep),
        pa.nulls(n_sep, pa.string()),
        pa.nulls(n_sep, pa.string()),
        pa.nulls(n_sep, RECORDS.field("attrs").type),
        pa.nulls(n_sep, pa.list_(pa.string())),
        pa.nulls(n_sep, pa.binary()),
        pa.nulls(n_sep, timestamps),
    )
    order = np.argsort(np.concatenate([joined.first, cont, sep]), kind="stable")
    rows = pa.concat_tables([ads, cont_rows, sep_rows]).take(_pa.array(order))
    return rows, taken


@dataclass
class _HTCondorState:
    """How many lines of its chunk the last call tokenised (an ad left open is carried on)."""

    taken: int = 0


def _tokenize_htcondor_chunk(
    chunk: Chunk, state: _HTCondorState, *, site: str, src_file: str
) -> tuple[pa.Table, pa.Table]:
    """Tokenise one chunk: the rows of its lines up to the first ad left open at its end."""
    decoded: list[Decoded] = []

    def decode() -> Decoded:
        if not decoded:
            decoded.append(_decode(chunk.data))
        return decoded[0]

    base = chunk.first_line - 1  # lines before the chunk
    kernel = _htcondor_fast.HAVE_NUMBA and (
        _htcondor_fast.kernel_ready() or chunk.lines >= _htcondor_fast.SMALL_INPUT_LINES
    )
    if kernel and _looks_pretty(chunk.data):
        pretty = _pretty_rows(chunk, site, src_file)
        if pretty is not None:
            state.taken = pretty[1]
            return pretty[0], QUARANTINE.empty_table()
    fast = _jsonl_rows(chunk, decode, site, src_file, kernel=kernel)
    if fast is not None:
        state.taken = fast.num_rows
        return fast, QUARANTINE.empty_table()
    text, raw_lines, non_utf8 = decode()
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    n_physical = len(raw_lines)
    if starts and starts[-1] == len(text) and len(starts) > n_physical:
        starts.pop()  # the newline ending the last line starts no line

    def line_of(offset: int) -> int:
        return bisect_right(starts, offset) - 1  # 0-based

    rows = _Rows()
    bad_lines: list[int] = []
    reasons: list[str] = []
    nul = [b"\x00" in line for line in raw_lines] if "\x00" in text else [False] * n_physical
    crlf = [line.endswith(b"\r") for line in raw_lines] if "\r" in text else [False] * n_physical
    # per line: the ad (first line, id) it belongs to, and whether it is taken (ad start or
    # quarantine); rows for the other lines (CONT, SEP) are made once every object is placed
    owner: list[tuple[int, str] | None] = [None] * n_physical
    taken = [False] * n_physical
    pos = 0
    end_text = len(text)
    open_from = n_physical  # the first line carried into the next chunk

    def ad_start(k: int) -> int:
        """Return the first line of what ``k`` belongs to: the next chunk starts there."""
        while (belongs := owner[k]) is not None:
            k = belongs[0] - 1 - base
        return k

    while True:
        pos = _SKIP.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= end_text:
            break
        first = line_of(pos)
        obj: Any = None
        end = pos
        error = ""
        cut = False  # the object was cut short by the end of the file
        if text[pos] == "{":
            try:
                obj, end = _DECODER.raw_decode(text, pos)
            except json.JSONDecodeError as err:
                if not chunk.final and _cut_by_the_end(text, err):
                    open_from = ad_start(first)  # the rest of the ad is in the next chunk
                    break
                error = f"broken JSON object: {err.msg} (line {err.lineno + base})"
                last_object = _OBJECT_LINE.search(text, pos + 1) is None
                if last_object and not any(nul[first:]) and _cut_by_the_end(text, err):
                    obj = _surviving_members(text, pos)
                    end = end_text
                    cut = True
                    error = (
                        ""
                        if "ClusterId" in obj and "ProcId" in obj
                        else "the file's last object was cut short before ClusterId and "
                        "ProcId: nothing to recover"
                    )
        else:
            error = "not a JSON object"
        if not error and not (isinstance(obj, dict) and "ClusterId" in obj and "ProcId" in obj):
            error = "ClassAd without ClusterId and ProcId: not a job ad"
        if not error and any(nul[first : line_of(end - 1) + 1]):
            error = NUL_FRAGMENT_REASON
        if not error and _SURROGATE_ESCAPE.search(text, pos, end) and _has_lone_surrogate(obj):
            error = LONE_SURROGATE_REASON
        if error:
            resume = starts[first + 1] if first + 1 < n_physical else end_text
            found = _OBJECT_LINE.search(text, resume)
            if found is None and not chunk.final:
                open_from = ad_start(first)  # the broken object may go on in the next chunk
                break
            stop = found.start() if found else end_text
            last = max(first, line_of(stop - 1))
            if taken[first]:
                # text after an ad on the ad's own line: that line already has its row, and a
                # second row would count it twice; say where it is instead
                logger.warning(
                    "%s:%d: %s after the ad on this line; ignored",
                    src_file,
                    base + first + 1,
                    error,
                )
            for k in range(first, last + 1):
                if not taken[k]:
                    taken[k] = True
                    bad_lines.append(k)
                    reasons.append(
                        error
                        if k == first
                        else f"inside the broken object of line {base + first + 1}"
                    )
            pos = stop
            continue
        last = line_of(end - 1)
        attrs = {str(key): _value(value) for key, value in obj.items()}
        job_id = f"{attrs['ClusterId']}.{attrs['ProcId']}"
        bad_bytes = any(non_utf8[first : last + 1])
        stamp = attrs.get("CompletionDate")
        if stamp in (None, "0"):
            stamp = attrs.get("EnteredCurrentStatus")
        extra = (["NON_UTF8"] if bad_bytes else []) + (["TRUNCATED"] if cut else [])
        rows.add(
            base + first + 1,
            "AD",
            attrs,
            stamp=stamp,
            job_id=job_id,
            flags=_line_flags(first, crlf, extra),
            raw=b"\n".join(raw_lines[first : last + 1]) if bad_bytes or cut else None,
        )
        taken[first] = True
        for k in range(first + 1, last + 1):
            owner[k] = (base + first + 1, job_id)
        pos = end
    if open_from < n_physical:
        rows.drop_from(base + open_from + 1)
        kept = [i for i, k in enumerate(bad_lines) if k < open_from]
        bad_lines = [bad_lines[i] for i in kept]
        reasons = [reasons[i] for i in kept]
    for k in range(open_from):
        if taken[k]:
            continue
        belongs = owner[k]
        if belongs is None:
            rows.add(base + k + 1, "SEP", flags=_line_flags(k, crlf))
        else:
            rows.add(
                base + k + 1,
                "CONT",
                {"record_line": str(belongs[0])},
                job_id=belongs[1],
                flags=_line_flags(k, crlf),
            )
    state.taken = open_from
    records = rows.table(site, src_file)
    order = np.argsort(np.asarray(bad_lines, dtype=np.int64), kind="stable")
    quarantine = quarantine_table(
        site=site,
        source_format="htcondor",
        src_file=src_file,
        lines=[base + bad_lines[i] + 1 for i in order],
        reasons=[NUL_FRAGMENT_REASON if nul[bad_lines[i]] else reasons[i] for i in order],
        raw=[raw_lines[bad_lines[i]] for i in order],
    )
    return records, quarantine


HTCONDOR_STREAM: LineFormat[_HTCondorState] = LineFormat(
    "htcondor", _HTCondorState, _tokenize_htcondor_chunk, lambda state: state.taken
)
"""The HTCondor format (``-json`` objects over lines, ``-jsonl``) for the streaming core."""


tokenize_htcondor_file = file_tokenizer(
    "htcondor",
    HTCONDOR_STREAM,
    what="one ``condor_history -json`` or ``-jsonl`` file",
    notes="""
        An ad still open at a chunk's end, or a broken object whose quarantined lines run to the
        next line starting with ``{``, is carried whole into the next chunk (from the first line
        of the ad it shares a line with, if any), so no ad is cut and the rows are those of
        reading the file in one piece. A broken object that never ends is carried to the end of
        the file (memory then grows with it; the line guard stops a file that is almost all
        garbage).
    """,
    rows="ad (at its first line) and per other line of the file (``CONT``, ``SEP``)",
    others="line of a broken object",
)


# --------------------------------------------------------------------------- assembler


def _numpy(array: Arr, dtype: Any = np.float64) -> npt.NDArray[Any]:
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=dtype)


_JOB_ATTRS = (
    "ClusterId",
    "ProcId",
    "QDate",
    "JobStartDate",
    "JobCurrentStartDate",
    "CompletionDate",
    "EnteredCurrentStatus",
    "RemoteWallClockTime",
    "RemoteUserCpu",
    "RemoteSysCpu",
    "RequestCpus",
    "CpusProvisioned",
    "RequestGpus",
    "GpusProvisioned",
    "RequestMemory",
    "ResidentSetSize_RAW",
    "ResidentSetSize",
    "JobStatus",
    "ExitCode",
    "ExitSignal",
    "NumJobStarts",
    "ExitBySignal",
    "LastRemoteHost",
    "RemoteHost",
    "Owner",
    "AcctGroupUser",
    "AcctGroup",
    "AccountingGroup",
    "JobBatchName",
)


_STATES = ("UNKNOWN", "FAILED", "COMPLETED", "CANCELLED", "DELETED", "PENDING", "RUNNING")


def _hosts(remote: Arr) -> Arr:
    """Return the host of each ``slot@host`` (the text after the last ``@``), null where none.

    Worked out once per distinct value (a history names each slot many times).
    """
    if isinstance(remote, pa.ChunkedArray):
        remote = remote.combine_chunks()
    encoded = _pc.dictionary_encode(remote)
    host = _pc.replace_substring_regex(encoded.dictionary, r"(?s)^.*@", "")
    return _pc.if_else(_pc.equal(host, ""), None, host).take(encoded.indices)


def _nonempty(values: Arr) -> Bool:
    return _numpy(_pc.not_equal(_pc.fill_null(values, ""), ""), bool)


def _accounts(acct: Arr, full: Arr, owner: Arr, member: Arr) -> tuple[Arr, Bool]:
    """Return the account of each job, and where it is AccountingGroup whole (module text).

    AcctGroup when set, else AccountingGroup without ``.<AcctGroupUser or Owner>``. The suffix
    is taken off once per distinct pair of AccountingGroup and user (a few in a history).
    """
    n = len(acct)
    has_acct = _nonempty(acct)
    use_full = ~has_acct & _nonempty(full)
    from_group = np.zeros(n, dtype=bool)
    rows = np.flatnonzero(use_full)
    if not len(rows):
        return _pc.if_else(_pa.array(has_acct), acct, None), from_group
    pick = _pa.array(rows)
    who = _pc.fill_null(owner.take(pick), "")
    member = member.take(pick)
    who = _pc.if_else(_pc.equal(_pc.fill_null(member, ""), ""), who, member)
    groups = _pc.dictionary_encode(full.take(pick))
    users = _pc.dictionary_encode(who)
    group_codes = np.asarray(groups.indices, dtype=np.int64)
    user_codes = np.asarray(users.indices, dtype=np.int64)
    pairs, inverse = np.unique(
        group_codes * len(users.dictionary) + user_codes, return_inverse=True
    )
    group_names = groups.dictionary.to_pylist()
    user_names = users.dictionary.to_pylist()
    kept_names: list[str] = []
    whole = np.zeros(len(pairs), dtype=bool)
    for k, pair in enumerate(pairs.tolist()):
        name = group_names[pair // len(user_names)]
        user = user_names[pair % len(user_names)]
        kept = name.removesuffix("." + user) if user else name
        kept_names.append(kept)
        whole[k] = kept == name  # no ".<user>" to strip: the whole name is taken
    from_group[rows] = whole[inverse.ravel()]
    kept_column = np.zeros(n, dtype=np.int64)
    kept_column[rows] = inverse.ravel()
    kept_array = _pa.array(kept_names, pa.string()).take(_pa.array(kept_column))
    account = _pc.if_else(
        _pa.array(has_acct), acct, _pc.if_else(_pa.array(use_full), kept_array, None)
    )
    return account, from_group


def _shared(ids: Arr, qdate: F64, among: Bool | None = None) -> Bool:
    """Return the rows whose job id and QDate another row has too (NaN equal to NaN).

    ``among``, when given, holds every row that may share them (the others are known not to).
    """
    n = len(qdate)
    if among is not None:
        out = np.zeros(n, dtype=bool)
        rows = np.flatnonzero(among)
        if len(rows) >= 2:
            out[rows] = _shared(ids.take(_pa.array(rows)), qdate[rows])
        return out
    if n < 2:
        return np.zeros(n, dtype=bool)
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    id_codes = np.asarray(
        _pc.dictionary_encode(ids, null_encoding="encode").indices, dtype=np.int64
    )
    qdates, q_codes = np.unique(qdate, return_inverse=True)
    _, inverse, counts = np.unique(
        id_codes * len(qdates) + q_codes.ravel(), return_inverse=True, return_counts=True
    )
    shared: Bool = counts[inverse.ravel()] > 1
    return shared


_NUMERIC = _JOB_ATTRS[: _JOB_ATTRS.index("ExitBySignal")]
"""The attributes read as numbers, first in :data:`_JOB_ATTRS`."""
_NUMBER = r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$"


def _read_number(text: Arr) -> tuple[F64, Bool, Bool]:
    """Read a column of attribute values as numbers: the numbers, expressions, other text."""
    values = _pc.fill_null(text, "")
    numeric = _pc.match_substring_regex(values, _NUMBER)
    out = _numpy(_pc.if_else(numeric, values, None).cast(pa.float64()).fill_null(np.nan))
    is_expr = _numpy(_pc.starts_with(values, "/Expr("), bool)
    other = _numpy(_pc.invert(numeric), bool) & _numpy(_pc.not_equal(values, ""), bool)
    other &= _numpy(_pc.not_equal(values, "null"), bool)
    return out, is_expr, other & ~is_expr


class _AdValues:
    """The attributes of :data:`_JOB_ATTRS` in the ``attrs`` of the ads, as text and numbers.

    ``expression`` and ``unreadable`` are the rows where a number is an unevaluated expression
    or other text. With ``kernel`` (by default from
    :data:`~gridtrace.logs._htcondor_fast.SMALL_INPUT_LINES` ads, or once it is loaded) the
    compiled kernel finds the keys and reads the numbers, chunk by chunk; a
    column holding a number it leaves (an exponent, many digits) is read as below. Otherwise
    the columns come from :func:`~gridtrace.logs._attrs.attr_columns` and are read by Arrow.
    """

    def __init__(self, attrs: Arr, n: int, *, kernel: bool | None = None) -> None:
        self.expression = np.zeros(n, dtype=bool)
        self.unreadable = np.zeros(n, dtype=bool)
        self.plain: Bool | None = None  # ClusterId and ProcId written -?[0-9]+ (kernel only)
        self._rows: npt.NDArray[np.int64] | None = None
        self._gathered = False
        self._all_texts: dict[str, Arr] = {}
        self._numbers: dict[str, F64] = {}
        self._texts: dict[str, Arr] = {}
        self._found: list[_htcondor_fast.JobValues] = []
        chunks: list[Arr] = (
            [c for c in attrs.chunks if len(c)] if isinstance(attrs, pa.ChunkedArray) else [attrs]
        )
        if kernel is None:
            kernel = _htcondor_fast.kernel_ready() or n >= _htcondor_fast.SMALL_INPUT_LINES
        kernel = (
            kernel
            and n > 0
            and _htcondor_fast.HAVE_NUMBA
            and all(
                c.type.key_type == pa.string() and c.type.item_type == pa.string() for c in chunks
            )
        )
        found = (
            [_htcondor_fast.job_values(c, list(_JOB_ATTRS), len(_NUMERIC), 2) for c in chunks]
            if kernel
            else []
        )
        if kernel and all(f is not None for f in found):
            self._chunks = chunks
            self._found = [f for f in found if f is not None]
            self.expression = np.concatenate([f.expression for f in self._found])
            self.unreadable = np.concatenate([f.unreadable for f in self._found])
            self.plain = np.concatenate([f.plain for f in self._found])
            for j, key in enumerate(_NUMERIC):
                if any(bool(f.slow[j]) for f in self._found):
                    self._read(key)
                else:
                    self._numbers[key] = np.concatenate([f.numbers[j] for f in self._found])
        else:
            self._texts = attr_columns(attrs, _JOB_ATTRS)
            for key in _NUMERIC:
                self._read(key)

    def _read(self, key: str) -> None:
        self._numbers[key], is_expr, other = _read_number(self.text(key))
        self.expression |= is_expr
        self.unreadable |= other

    def keep(self, rows: npt.NDArray[np.int64]) -> None:
        """Keep only ``rows`` (in this order): every value asked for after is of those rows."""
        self.expression = self.expression[rows]
        self.unreadable = self.unreadable[rows]
        if self.plain is not None:
            self.plain = self.plain[rows]
        self._numbers = {key: values[rows] for key, values in self._numbers.items()}
        pick = _pa.array(rows)
        self._texts = {key: values.take(pick) for key, values in self._texts.items()}
        self._rows = rows if self._rows is None else self._rows[rows]

    def _all_rows(self, key: str) -> Arr:
        j = _JOB_ATTRS.index(key)
        if not self._gathered:
            # the text attributes in one pass over the maps (a row's values lie close)
            self._gathered = True
            names = list(_JOB_ATTRS[_JOB_ATTRS.index("LastRemoteHost") :])
            texts = _htcondor_fast.gather_texts(
                self._chunks, self._found, [_JOB_ATTRS.index(name) for name in names]
            )
            if texts is not None:
                self._all_texts = dict(zip(names, texts, strict=True))
        if key in self._all_texts:
            return self._all_texts.pop(key)
        parts = [
            c.items.take(_pa.array(f.pos[j], mask=f.pos[j] < 0))
            for c, f in zip(self._chunks, self._found, strict=True)
        ]
        return pa.concat_arrays(parts) if len(parts) != 1 else parts[0]

    def text(self, key: str) -> Arr:
        """Return the values of ``key`` (null where absent)."""
        if key not in self._texts:
            texts = self._all_rows(key)
            if self._rows is not None:
                texts = texts.take(_pa.array(self._rows))
            self._texts[key] = texts
        return self._texts[key]

    def _kinds(self, key: str) -> npt.NDArray[np.int8]:
        j = _JOB_ATTRS.index(key)
        kinds = np.concatenate([f.kinds[j] for f in self._found])
        return kinds if self._rows is None else kinds[self._rows]

    def missing(self, key: str) -> Bool:
        """Return where ``key`` is absent or null."""
        if self._found:
            missing: Bool = self._kinds(key) == 0
            return missing
        return _numpy(_pc.is_null(self.text(key)), bool)

    def is_true(self, key: str) -> Bool:
        """Return where ``key`` is ``true``."""
        if self._found:
            true: Bool = self._kinds(key) == 2
            return true
        return _numpy(_pc.equal(_pc.fill_null(self.text(key), ""), "true"), bool)

    def num(self, key: str) -> F64:
        """Return the values of the numeric ``key`` (NaN where absent or not a number)."""
        return self._numbers[key]

    def may_share(self) -> Bool | None:
        """Return the rows that may share their job id and QDate (or whole map) with another.

        A row whose ClusterId and ProcId are integers written plainly has the job id of another
        only when both hold the same numbers (the id is ``ClusterId.ProcId``, one dot): such a
        row whose ClusterId, ProcId and QDate no other such row has is left out. The others are
        all kept. None without the kernel (no ``plain``).
        """
        if self.plain is None:
            return None
        plain = self.plain
        shared = _htcondor_fast.shared_triples(
            self.num("ClusterId"), self.num("ProcId"), self.num("QDate"), plain
        )
        if shared is None:  # pragma: no cover
            return None
        out: Bool = shared | ~plain
        return out


def _jobs(rec: pa.Table, repeated: Bool, ad_values: _AdValues | None = None) -> pa.Table:
    n = rec.num_rows
    if ad_values is None:
        ad_values = _AdValues(rec.column("attrs"), n)
    text = ad_values.text
    num = ad_values.num
    expression = ad_values.expression
    unreadable = ad_values.unreadable

    boolean = ad_values.is_true

    cluster = num("ClusterId")
    proc = num("ProcId")
    qdate = num("QDate")
    first_start = num("JobStartDate")
    current_start = num("JobCurrentStartDate")
    completion = num("CompletionDate")
    entered = num("EnteredCurrentStatus")
    wallclock = num("RemoteWallClockTime")
    user_cpu = num("RemoteUserCpu")
    sys_cpu = num("RemoteSysCpu")
    req_cpus = num("RequestCpus")
    cpus_prov = num("CpusProvisioned")
    req_gpus = num("RequestGpus")
    gpus_prov = num("GpusProvisioned")
    req_mem = num("RequestMemory")
    rss_raw = num("ResidentSetSize_RAW")
    rss = num("ResidentSetSize")
    status = num("JobStatus")
    exit_code_v = num("ExitCode")
    exit_signal_v = num("ExitSignal")
    starts = num("NumJobStarts")
    by_signal = boolean("ExitBySignal")
    record_flags = rec.column("flags")
    truncated = flag_mask(record_flags, "TRUNCATED")

    missing = ad_values.missing

    start = np.where(current_start > 0, current_start, np.nan)
    from_first = np.isnan(start) & (first_start > 0)
    start = np.where(from_first, first_start, start)
    started = ~np.isnan(start)
    code = np.nan_to_num(status, nan=-1).astype(np.int64)
    finished = np.isin(code, [3, 4])
    end = np.where(finished & (completion > 0), completion, np.nan)
    from_status = finished & started & np.isnan(end) & (entered > 0)
    end = np.where(from_status, entered, end)
    end = np.where(started, end, np.nan)
    run = end - start
    negative = run < 0
    run = np.where(negative, np.nan, run)
    wait = start - qdate
    # a NumJobStarts that is no count (negative, fractional) or too large for the int16 attempt
    # columns is damaged: flagged unreadable, and the job is then its attempt 0 of 1, as when the
    # count is missing (cast as it was, 40000 would have wrapped to a negative attempt)
    starts_bad = ~np.isnan(starts) & (
        (starts < 0) | (starts > _MAX_STARTS) | (starts != np.floor(starts))
    )
    n_starts = np.where(np.isnan(starts) | starts_bad, 0, starts)
    restarted = n_starts > 1
    mismatch = ~restarted & ~np.isnan(run) & ~np.isnan(wallclock) & (np.abs(wallclock - run) > 60)
    cpu = user_cpu + sys_cpu
    cores_alloc = np.where(~np.isnan(cpus_prov), cpus_prov, np.nan)
    cores_guess = np.isnan(cores_alloc) & started & ~np.isnan(req_cpus)
    cores_alloc = np.where(cores_guess, req_cpus, cores_alloc)
    mem_req = req_mem * 2.0**20
    rss_rounded = np.isnan(rss_raw) & ~np.isnan(rss)
    mem_used = np.where(~np.isnan(rss_raw), rss_raw, rss) * 1024.0
    exit_code = np.where(finished & started & ~by_signal, exit_code_v, np.nan)
    exit_signal = np.where(finished & by_signal, exit_signal_v, np.nan)

    state = np.full(n, _STATES.index("UNKNOWN"), dtype=np.int8)
    ok = (code == 4) & ((exit_code == 0) | (np.isnan(exit_code) & ~by_signal))
    state[code == 4] = _STATES.index("FAILED")
    state[ok] = _STATES.index("COMPLETED")
    state[(code == 3) & started] = _STATES.index("CANCELLED")
    state[(code == 3) & ~started] = _STATES.index("DELETED")
    state[code == 1] = _STATES.index("PENDING")
    state[code == 5] = _STATES.index("PENDING")
    state[np.isin(code, [2, 6, 7])] = _STATES.index("RUNNING")
    status_lost = truncated & missing("JobStatus")  # cut off with the file's last object
    nonstandard = ~np.isin(code, [1, 2, 3, 4, 5, 6, 7]) & ~status_lost
    exit_missing = (code == 4) & np.isnan(exit_code) & ~by_signal
    exit_lost = exit_missing & truncated & missing("ExitCode")  # cut off: not known, not 0
    state[exit_lost] = _STATES.index("UNKNOWN")
    exit_missing &= ~exit_lost
    starts_missing = started & np.isnan(starts)

    last_host = _hosts(text("LastRemoteHost"))
    host = _pc.coalesce(last_host, _hosts(text("RemoteHost")))
    has_host = _numpy(_pc.is_valid(host), bool)
    host_fallback = _numpy(_pc.is_null(last_host), bool) & has_host
    host_offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(has_host, out=host_offsets[1:])
    exec_hosts = _pa.ListArray.from_arrays(
        _pa.array(host_offsets), host.drop_null(), mask=_pa.array(~has_host)
    )
    nodes = np.where(has_host, 1.0, np.nan)

    user = text("Owner")
    account, from_group = _accounts(
        text("AcctGroup"), text("AccountingGroup"), user, text("AcctGroupUser")
    )

    id_column = rec.column("job_id_raw")
    duplicate = _shared(id_column, qdate, ad_values.may_share())
    # a number too large for its column (a damaged field) is null and flagged, never wrapped
    fitted, too_big = fitted_numbers(
        {
            "job_seq": cluster,
            "array_index": proc,
            "submit_time": qdate,
            "start_time": start,
            "end_time": end,
            "wait_s": wait,
            "run_s": run,
            "walltime_used_s": wallclock,
            "cores_req": req_cpus,
            "gpus_req": req_gpus,
            "nodes_alloc": nodes,
            "cores_alloc": cores_alloc,
            "gpus_alloc": gpus_prov,
            "mem_req_bytes": mem_req,
            "mem_used_bytes": mem_used,
            "exit_code": exit_code,
            "exit_signal": exit_signal,
        }
    )
    (
        cluster,
        proc,
        qdate,
        start,
        end,
        wait,
        run,
        wallclock,
        req_cpus,
        req_gpus,
        nodes,
        cores_alloc,
        gpus_prov,
        mem_req,
        mem_used,
        exit_code,
        exit_signal,
    ) = fitted
    masks: list[tuple[str, Bool]] = [
        ("NON_UTF8", flag_mask(record_flags, "NON_UTF8")),
        ("TRUNCATED", truncated),
        ("DUPLICATE_LINE", repeated),
        ("DUPLICATE", duplicate),
        ("ATTEMPT_UNLOGGED", restarted),
        ("START_FROM_FIRST_RUN", from_first),
        ("END_FROM_STATUS_TIME", from_status),
        ("END_BEFORE_START", negative),
        ("WALLTIME_MISMATCH", mismatch),
        ("CORES_ALLOC_FROM_REQUEST", cores_guess),
        ("HOST_FROM_REMOTE_HOST", host_fallback),
        ("ACCOUNT_GROUP_WHOLE", from_group),
        ("MEM_USED_ROUNDED", rss_rounded),
        ("EXIT_CODE_MISSING", exit_missing),
        ("NUM_STARTS_MISSING", starts_missing),
        ("HELD", code == 5),
        ("TRANSFERRING_OUTPUT", code == 6),
        ("SUSPENDED", code == 7),
        ("STATUS_NONSTANDARD", nonstandard),
        ("EXPRESSION", expression),
        ("VALUE_UNREADABLE", unreadable | too_big | starts_bad),
    ]
    flags = flag_array(n, masks)

    site = rec.column("site").combine_chunks() if n else _pa.array([], pa.string())
    src_file = rec.column("src_file").combine_chunks() if n else _pa.array([], pa.string())
    src_line = _numpy(rec.column("src_line").combine_chunks(), np.int64) if n else np.zeros(0)
    ids = _pc.fill_null(id_column.combine_chunks() if n else _pa.array([], pa.string()), "")
    submit_text = _pc.if_else(
        _pa.array(np.isnan(qdate)),
        "unknown",
        _pa.array(np.nan_to_num(qdate).astype(np.int64)).cast(pa.string()),
    )
    job_key = _pc.binary_join_element_wise(site, ":", ids, "@", submit_text, "")
    attempt = np.maximum(n_starts, 1) - 1
    ts = pa.timestamp("s", tz="UTC")

    def times(values: F64) -> Arr:
        return int_or_null(np.where(values > 0, values, np.nan), pa.int64()).cast(ts)

    def blank_null(array: Arr) -> Arr:
        return _pc.if_else(_pc.equal(_pc.fill_null(array, ""), ""), None, array)

    columns: dict[str, Any] = {
        "site": site,
        "source_format": _repeat("htcondor", n),
        "job_key": job_key,
        "job_id_raw": ids,
        "job_seq": int_or_null(cluster, pa.int64()),
        "array_index": int_or_null(proc, pa.int32()),
        "attempt": _pa.array(attempt.astype(np.int16), pa.int16()),
        "n_attempts": _pa.array((attempt + 1).astype(np.int16), pa.int16()),
        "user": blank_null(user),
        "account": blank_null(account),
        "job_name": blank_null(text("JobBatchName")),
        "submit_time": times(qdate),
        "start_time": times(start),
        "end_time": times(end),
        "wait_s": int_or_null(wait, pa.int64()),
        "run_s": int_or_null(run, pa.int64()),
        "walltime_used_s": int_or_null(np.where(started, wallclock, np.nan), pa.int64()),
        "cpu_time_s": _pa.array(cpu, pa.float64(), from_pandas=True),
        "cores_req": int_or_null(req_cpus, pa.int32()),
        "gpus_req": int_or_null(req_gpus, pa.int32()),
        "nodes_alloc": int_or_null(nodes, pa.int32()),
        "cores_alloc": int_or_null(cores_alloc, pa.int32()),
        "gpus_alloc": int_or_null(gpus_prov, pa.int32()),
        "exec_hosts": exec_hosts,
        "mem_req_bytes": int_or_null(mem_req, pa.int64()),
        "mem_used_bytes": int_or_null(mem_used, pa.int64()),
        "exit_code": int_or_null(exit_code, pa.int32()),
        "exit_signal": int_or_null(exit_signal, pa.int32()),
        "state": _pa.array(_STATES, pa.string()).take(_pa.array(state)),
        "src_file": src_file,
        "src_line": _pa.array(src_line, pa.int64()),
        "flags": flags,
    }
    return pa.Table.from_arrays(
        [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in JOBS], schema=JOBS
    )


def assemble_htcondor(parts: Sequence[FileParse], *, tz: str | None = None) -> ParseResult:
    """Assemble tokenised HTCondor history files, in reading order, into a :class:`ParseResult`.

    ``tz`` is accepted for the registry and ignored: HTCondor times are UTC epochs.

    Returns
    -------
    ParseResult
        ``info`` holds ``format`` and ``htcondor_ads`` (the number of job ads read).
    """
    del tz
    records = parts_records(parts)
    quarantine = parts_quarantine(parts)
    is_ad = _numpy(_pc.equal(records.column("record_type"), "AD"), bool)
    ad_rows = np.flatnonzero(is_ad)
    all_ads = records if len(ad_rows) == records.num_rows else records.take(_pa.array(ad_rows))
    ad_values = _AdValues(all_ads.column("attrs"), len(ad_rows))
    # only ads that may share their id and QDate can be copies; without the kernel's numbers,
    # only ads sharing their id and stamp (both read from the attrs)
    maybe = ad_values.may_share()
    if maybe is None:
        among = may_repeat(records, is_ad)
    else:
        among = np.zeros(records.num_rows, dtype=bool)
        among[ad_rows[maybe]] = True
    copies, repeated = repeated_rows(records.column("attrs"), among)
    if copies.any():
        flags = append_flag(records.column("flags"), copies, "DUPLICATE_LINE")
        records = records.set_column(records.schema.get_field_index("flags"), "flags", flags)
    kept = np.flatnonzero(~copies[ad_rows])
    rows = ad_rows[kept]
    if len(kept) != len(ad_rows):
        ad_values.keep(kept)
    ads = records if len(rows) == records.num_rows else records.take(_pa.array(rows))
    jobs = _jobs(ads, repeated[rows], ad_values)
    return result_of_parts(
        parts,
        records=records,
        jobs=jobs,
        quarantine=quarantine,
        info={
            "format": "htcondor",
            "htcondor_ads": int(is_ad.sum()),
            "duplicate_lines": int(copies.sum()),
            **nul_fragment_counts(quarantine),
        },
    )


read_htcondor = file_reader(
    "htcondor",
    tokenize_htcondor_file,
    assemble_htcondor,
    what="``condor_history -json`` / ``-jsonl`` files",
    unreadable="broken objects",
    first_bad="line of the first broken object",
    returns="one ``jobs`` row per job ad",
    examples="""
        >>> result = read_htcondor("history.json", site="t2")  # doctest: +SKIP
        >>> result.jobs.column("job_id_raw").to_pylist()[:2]  # doctest: +SKIP
        ['1234.0', '1234.1']
    """,
)
