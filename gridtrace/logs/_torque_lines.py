r"""TORQUE / OpenPBS / PBS Pro accounting lines: the readable, line-by-line tokeniser.

An accounting line is ``MM/DD/YYYY HH:MM:SS;<type>;<id>;<message>``, where the message is a list
of space-separated ``key=value`` tokens (PBS Pro quotes values that contain spaces) and may itself
contain ``;``. This module turns one line into one ``records`` row, or into a quarantine reason.
It is the reference implementation: the vectorised fast path must give identical rows, and it
handles every line the fast path declines (quotes, control characters, non-UTF-8 bytes, ...).

Flags set here (``records.flags``), in this order:

``CRLF``
    The line ended in CR LF (a file that passed through Windows); the CR was removed.
``NUL_STRIPPED``
    The line held a run of NUL bytes (what a crash or a log rotation leaves) followed by a
    record; the record is the text after the last run (the raw line is kept).
``NUL_INSIDE``
    NUL bytes stood inside the line, with text before them and text after them that does not
    start a record: one record with stray NULs. They were removed and the rest parsed (the raw
    line is kept); the record may have lost bytes.
``CUT_FRAGMENT``
    Text stood before the NUL run and a record after it: the text is the cut-off start of
    another record. It is never parsed
    and never makes a job; its bytes are in the row's ``raw``. One physical line stays one row:
    the row is the intact record that follows the run, since that is the line's only readable
    record, and the fragment travels with it in ``raw`` (a second row would break lines read =
    parsed + quarantined).
``NON_UTF8``
    Bytes that are not UTF-8 were decoded as Windows-1252 (else Latin-1) by
    :func:`~gridtrace.logs._text.decode_line` (the raw line is kept).
``CONTROL_CHARS``
    Control bytes other than NUL were removed before parsing (the raw line is kept).
``FILE_PREFIX``
    A ``name:`` prefix, as left by ``grep`` over many files, preceded the stamp and was removed.
``BARE_TOKEN``
    A token without ``=``; it is kept as a key with an empty value.
``REPEATED_KEY``
    A key appeared more than once; its values are joined with ``+`` (TORQUE 6.1 ``tasks=``).
``NO_NEWLINE``
    The last line of the file has no line end. Its values are used as logged: it has every key
    its record type always has, so it was most likely written whole.
``TRUNCATED``
    The last line has no line end and lacks a key its record type always has (E: ``end``,
    ``Exit_status``; S: ``start``, ``exec_host``), or stops on the value of one (which may be
    cut: ``Exit_status=1`` of ``Exit_status=137``): a crash cut it. It is kept (raw included) and
    used as far as its keys go, except its last value, which may be cut (unless the line ends
    in a space).

A last line without a line end that stops before its message (no ``;`` after the job id) may
hold a cut job id: it is quarantined, never a job. So are lines with nothing but NUL bytes, and
lines whose only text is a fragment before a NUL run.
"""

from __future__ import annotations

import re
from collections import namedtuple

from gridtrace.logs._text import NON_UTF8, decode_line

TYPE_CHECKING = False  # typing's constant without importing typing (mypy knows the name)
if TYPE_CHECKING:  # imported where used: the small TORQUE path tokenises without pyarrow
    from typing import Any, NamedTuple

    from gridtrace.logs._base import FileParse

__all__ = [
    "TorqueLine",
    "looks_like_torque",
    "parse_torque_line",
    "split_message",
    "tokenize_torque_columns",
    "tokenize_torque_reference",
]

_LINE = re.compile(
    r"(?:(?P<prefix>[^;/\s]+):)?"
    r"(?P<stamp>(?P<mon>\d{2})/(?P<day>\d{2})/(?P<year>\d{4}) "
    r"(?P<hh>\d{2}):(?P<mm>\d{2}):(?P<ss>\d{2}))"
    r";(?P<type>[A-Za-z]);(?P<id>[^;]*)(?:;(?P<msg>.*))?",
    re.DOTALL,
)
# compiled on first use (re caches it), like _HEAD: clean lines never need it
_CONTROL = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"
# the same characters as bytes (NUL among them): UTF-8, Windows-1252 and Latin-1 decode each
# to itself and no other byte to one of them, so data without them gives lines without them
_CONTROL_BYTES = bytes([*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])

# Record types whose message is free text rather than key=value tokens (PBS Pro licence records).
FREE_TEXT_TYPES = frozenset({"L"})
# Keys a record type always carries; a last line without one of them was cut off.
ALWAYS_KEYS: dict[str, tuple[str, ...]] = {
    "E": ("end", "Exit_status"),
    "S": ("start", "exec_host"),
}
_NUL = b"\x00"
# the start of a record: what must follow a NUL run for the text before it to be a fragment
_HEAD = rb"\s*(?:[^;/\s]+:)?\d{2}/\d{2}/\d{4} \d{2}:\d{2}:\d{2};[A-Za-z];"
REASON_NUL_ONLY = "NUL bytes only (what a crash or a log rotation leaves)"
REASON_FRAGMENT = "cut-off record fragment before a NUL run (a crash or a log rotation)"
REASON_ID_CUT = "last line cut off before its message: the job id may be incomplete"


if TYPE_CHECKING:

    class _TorqueLineFields(NamedTuple):
        record_type: str
        stamp: str
        job_id_raw: str | None
        attrs: dict[str, str]
        flags: tuple[str, ...]
        keep_raw: bool

else:  # a plain namedtuple: typing.NamedTuple would import typing
    _TorqueLineFields = namedtuple(
        "TorqueLine", ("record_type", "stamp", "job_id_raw", "attrs", "flags", "keep_raw")
    )


class TorqueLine(_TorqueLineFields):
    """One accounting line, tokenised.

    Attributes
    ----------
    record_type : str
        The one-letter record type (Q, S, E, D, A, R, L, ...).
    stamp : str
        The record's local time stamp, exactly as logged.
    job_id_raw : str or None
        The job identifier as logged; ``None`` for record types that carry no job id.
    attrs : dict of str to str
        The message's ``key=value`` tokens, quotes removed; free-text messages under ``message``.
    flags : tuple of str
        What was repaired or inferred while reading the line.
    keep_raw : bool
        Whether the raw bytes must be stored because the text shown differs from them.
    """

    __slots__ = ()


def split_message(message: str) -> list[str]:
    """Split a message into tokens on spaces, keeping double-quoted runs (with spaces) whole."""
    if '"' not in message:
        return message.split()
    tokens: list[str] = []
    current: list[str] = []
    quoted = False
    for char in message:
        if char == '"':
            quoted = not quoted
            current.append(char)
        elif char == " " and not quoted:
            if current:
                tokens.append("".join(current))
                current = []
        else:
            current.append(char)
    if current:
        tokens.append("".join(current))
    return tokens


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
        return value[1:-1]
    return value


def parse_torque_line(raw: bytes, *, last_without_newline: bool = False) -> TorqueLine | str:
    """Tokenise one accounting line.

    Parameters
    ----------
    raw : bytes
        The line without its line end.
    last_without_newline : bool, default False
        The line is the file's last and had no line end (a crash may have cut it off).

    Returns
    -------
    TorqueLine or str
        The tokenised line, or the reason it must be quarantined.
    """
    parsed = _parse_line(raw, last_without_newline)
    if isinstance(parsed, str):
        return parsed
    record_type, stamp, job_id, attrs, flags, keep_raw = parsed
    return TorqueLine(record_type, stamp, job_id, attrs, tuple(flags), keep_raw)


_Fields = tuple[str, str, str | None, dict[str, str], list[str], bool]


def _parse_line(raw: bytes, last_without_newline: bool, clean: bool = False) -> _Fields | str:
    """Do :func:`parse_torque_line`'s work: its fields as a tuple (flags a list), or a reason.

    ``clean`` says the line holds none of :data:`_CONTROL_BYTES` (nor NUL): nothing to look for.
    """
    flags: list[str] = []
    keep_raw = False
    if raw.endswith(b"\r"):
        raw = raw[:-1]
        flags.append("CRLF")
    prefix = ""
    if not clean and _NUL in raw:
        keep_raw = True
        cut = raw.rfind(_NUL)
        fragment, tail = raw[:cut].replace(_NUL, b""), raw[cut + 1 :]
        if not tail.strip():
            return REASON_FRAGMENT if fragment.strip() else REASON_NUL_ONLY
        if fragment.strip() and not re.match(_HEAD, tail):
            # NULs inside one record (its text goes on after them): removed, the rest parsed
            flags.append("NUL_INSIDE")
            raw = raw.replace(_NUL, b"")
        else:
            flags.append("NUL_STRIPPED")
            if fragment.strip():
                flags.append("CUT_FRAGMENT")
            raw = tail
            prefix = "after a NUL run: "
    text, repaired = decode_line(raw)
    if repaired:
        flags.append(NON_UTF8)
        keep_raw = True
    # printable ASCII (the common line) holds no control byte: a quicker test than the search
    if not clean and not (text.isascii() and text.isprintable()) and re.search(_CONTROL, text):
        text = re.sub(_CONTROL, "", text)
        flags.append("CONTROL_CHARS")
        keep_raw = True
    reason = _parse_text(text, flags, last_without_newline)
    if isinstance(reason, str):
        return prefix + reason
    record_type, stamp, job_id, attrs, prefixed = reason
    return record_type, stamp, job_id, attrs, flags, keep_raw or prefixed or "TRUNCATED" in flags


def _parse_text(
    text: str, flags: list[str], last_without_newline: bool
) -> tuple[str, str, str | None, dict[str, str], bool] | str:
    """Parse decoded, cleaned text; append flags; return the fields or a quarantine reason."""
    if not text or text.isspace():  # what ``not text.strip()`` says, without a copy
        return "blank line"
    match = _LINE.fullmatch(text)
    if match is None:
        if text.count(";") < 3:
            return "not a TORQUE/PBS accounting line: fewer than 3 ';' separators"
        return "not a TORQUE/PBS accounting line: no 'MM/DD/YYYY HH:MM:SS' stamp at the start"
    # every group in one call (the pattern's order), not one lookup by name each
    prefix, stamp, mon, day, _, hh, mm, ss, record_type, job_id, message = match.groups()
    if not (1 <= int(mon) <= 12 and 1 <= int(day) <= 31):
        return f"impossible date in stamp {stamp!r}"
    if int(hh) > 23 or int(mm) > 59 or int(ss) > 60:
        return f"impossible time in stamp {stamp!r}"
    if prefix is not None:
        flags.append("FILE_PREFIX")
    attrs: dict[str, str] = {}
    last_key = ""
    if last_without_newline and message is None and record_type not in FREE_TEXT_TYPES:
        return REASON_ID_CUT
    if record_type in FREE_TEXT_TYPES:
        job_id = None
        if message:
            attrs["message"] = message
    else:
        attrs, last_key = _message_attrs(message or "", flags)
    if last_without_newline:
        flags.append("NO_NEWLINE")
        always = ALWAYS_KEYS.get(record_type, ())
        # the line stops on the value of such a key: that value may be cut
        stops_on_one = last_key in always and not text.endswith((" ", "\t"))
        if stops_on_one or any(k not in attrs for k in always):
            flags.append("TRUNCATED")
    return record_type, stamp, job_id, attrs, prefix is not None


def _message_attrs(message: str, flags: list[str]) -> tuple[dict[str, str], str]:
    """Return a message's ``key=value`` tokens as attributes, and the last token's key."""
    if '"' not in message:
        # the common message, in C: no quotes to remove, every token a key=value (else dict
        # raises on a token split in one), no key repeated; otherwise read token by token
        tokens = message.split()
        try:
            # a list of the splits: twice as quick as dict(map(methodcaller(...), tokens))
            attrs = dict([token.split("=", 1) for token in tokens])
        except ValueError:
            attrs = {}
        if len(attrs) == len(tokens):
            return attrs, tokens[-1].partition("=")[0] if tokens else ""
    attrs = {}
    last_key = ""
    for token in split_message(message):
        key, sep, value = token.partition("=")
        last_key = key
        if not sep:
            if "BARE_TOKEN" not in flags:
                flags.append("BARE_TOKEN")
            attrs.setdefault(token, "")
            continue
        value = _unquote(value)
        if key in attrs:
            attrs[key] = f"{attrs[key]}+{value}"
            if "REPEATED_KEY" not in flags:
                flags.append("REPEATED_KEY")
        else:
            attrs[key] = value
    return attrs, last_key


def split_lines(data: bytes) -> tuple[list[bytes], bool]:
    """Split file content into lines; say whether the last line lacked a line end."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
        return lines, False
    return lines, bool(lines)


def tokenize_torque_columns(
    data: bytes,
    *,
    src_file: str,
    site: str,
    source_format: str = "torque",
    first_line: int = 1,
) -> tuple[dict[str, list[Any]], dict[str, list[Any]], int]:
    """Tokenise a whole file, or a chunk of whole lines of one, into Python columns.

    What :func:`tokenize_torque_reference` does, without pyarrow: its arguments, and its tables
    as ``{column: values}`` in schema order (``attrs`` a list of ``(key, value)`` pairs,
    ``stamp_utc`` None).

    Returns
    -------
    records : dict of str to list
        The ``records`` columns.
    quarantine : dict of str to list
        The ``quarantine`` columns.
    lines : int
        The lines of ``data``: the two tables' rows together.
    """
    lines, last_open = split_lines(data)
    r_line: list[object] = []
    r_type: list[object] = []
    r_stamp: list[object] = []
    r_id: list[object] = []
    r_attrs: list[object] = []
    r_flags: list[object] = []
    r_raw: list[object] = []
    q_line: list[object] = []
    q_reason: list[object] = []
    q_raw: list[object] = []
    last = len(lines) - 1
    # one look over the data spares each line its own search for control bytes (the usual file
    # has none)
    clean = len(data.translate(None, _CONTROL_BYTES)) == len(data)
    for index, raw in enumerate(lines):
        parsed = _parse_line(raw, last_open and index == last, clean)
        if isinstance(parsed, str):
            q_line.append(first_line + index)
            q_reason.append(parsed)
            q_raw.append(raw)
            continue
        record_type, stamp, job_id, attrs, flags, keep_raw = parsed
        r_line.append(first_line + index)
        r_type.append(record_type)
        r_stamp.append(stamp)
        r_id.append(job_id)
        r_attrs.append(list(attrs.items()))
        r_flags.append(flags)
        r_raw.append(raw if keep_raw else None)
    n, q = len(r_line), len(q_line)
    records: dict[str, list[Any]] = {
        "site": [site] * n,
        "source_format": [source_format] * n,
        "src_file": [src_file] * n,
        "src_line": r_line,
        "record_type": r_type,
        "stamp": r_stamp,
        "stamp_utc": [None] * n,
        "job_id_raw": r_id,
        "attrs": r_attrs,
        "flags": r_flags,
        "raw": r_raw,
    }
    quarantine: dict[str, list[Any]] = {
        "site": [site] * q,
        "source_format": [source_format] * q,
        "src_file": [src_file] * q,
        "src_line": q_line,
        "reason": q_reason,
        "raw": q_raw,
    }
    return records, quarantine, len(lines)


def tokenize_torque_reference(
    data: bytes,
    *,
    src_file: str,
    site: str,
    source_format: str = "torque",
    first_line: int = 1,
) -> FileParse:
    """Tokenise a whole file, or a chunk of whole lines of one, line by line (the reference).

    Parameters
    ----------
    data : bytes
        The decompressed file content, or a chunk of its lines (only the file's last chunk may
        end without a line end).
    src_file : str
        The file's name, recorded in every row.
    site : str
        The site name recorded in every row.
    source_format : str, default "torque"
        Recorded in every row.
    first_line : int, default 1
        The number in the file of the first line of ``data``.

    Returns
    -------
    FileParse
        ``records`` (``stamp_utc`` left null: placing stamps needs the whole log) and
        ``quarantine``; their row counts add up to the file's line count.
    """
    import pyarrow as pa

    from gridtrace.logs._base import FileParse
    from gridtrace.schema import QUARANTINE, RECORDS

    rec, quarantine, lines = tokenize_torque_columns(
        data, src_file=src_file, site=site, source_format=source_format, first_line=first_line
    )
    return FileParse(
        src_file=src_file,
        records=pa.Table.from_pydict(rec, schema=RECORDS),
        quarantine=pa.Table.from_pydict(quarantine, schema=QUARANTINE),
        lines_read=lines,
    )


def looks_like_torque(head: bytes) -> bool:
    """Whether the first bytes of a (decompressed) file look like TORQUE/PBS accounting lines.

    Here, beside the line parser it uses, so that recognising a TORQUE file imports nothing more.
    """
    lines = [line for line in head.split(b"\n")[:20] if line.strip()]
    if len(lines) > 1:
        lines = lines[:-1]  # the last line of a head may be cut in the middle
    good = sum(not isinstance(parse_torque_line(line), str) for line in lines)
    return bool(lines) and 2 * good > len(lines)
