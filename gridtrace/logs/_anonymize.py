"""Keyed pseudonyms for user, group, account, job and host names, so a site can publish a trace.

Every identifying name is replaced by a *pseudonym*: a prefix naming its kind and the first 12 hex
digits (48 bits) of HMAC-SHA256 over the kind and the name, keyed with bytes the site supplies and
keeps secret::

    alice     -> u-3f9a1c2b7d04     (user)
    atlas001  -> g-…  (group)   SSSG0001 -> a-…  (account)   run.sh -> j-…  (job name)
    r1i0n9    -> h-…  (host)    atlas    -> v-…  (VO, only when asked)

The same key and the same name give the same pseudonym in every file and every run, so traces
anonymised apart still join; without the key a pseudonym cannot be reversed or recomputed (a plain
hash of a user name could be, by hashing a list of names). The kind is part of the hashed message:
user ``alice`` and group ``alice`` get unrelated pseudonyms. There is no default key, and an empty
key is refused. Null stays null and the empty string stays empty. With 48 bits two names collide
with probability about n²/2⁴⁹ (10⁻⁵ for 100 000 names of one kind); a collision within one call is
detected and raised as :class:`ConfigError` rather than silently merging two users.

What each table keeps
---------------------
``jobs``
    ``user``, ``group``, ``account``, ``job_name`` and every host of ``exec_hosts`` are replaced
    (an element written with slots, ``r3i1n9/0-19+r3i1n10/0-3``, keeps its slot syntax). The
    TORQUE/PBS server in ``job_id_raw`` (``123.server.example.org``) becomes a host pseudonym
    (``123.h-…``). ``vo`` is kept: VO names are public in grid computing and the workload analyses
    group by them. Two exceptions: ``kinds`` containing ``"vo"`` pseudonymises every VO, and a VO
    that a :class:`~gridtrace.logs.VOMapping` copied from the group, user or account column (flag
    ``VO_FROM_GROUP`` …) is pseudonymised like that column, since it *is* that name. ``site``,
    ``queue``, times, sizes, states and flags are kept.
``trace``
    ``user`` replaced, ``vo`` as above (a trace has no flags: build it from anonymised ``jobs``,
    or pass ``kinds`` with ``"vo"``, when VOs were taken from group names).
``records``
    The raw bytes are dropped (``raw`` is null). In ``attrs``, the values of the keys each format
    names identifying (TORQUE ``user``, ``owner=user@host``, ``exec_host``, ``exec_vnode``,
    ``Resource_List.nodes``; Slurm ``User``, ``UID``, ``NodeList``, ``CANCELLED by <uid>``; SWF
    and GWF ``user_id``/``UserID`` …) are pseudonymised, host lists keeping their syntax (a Slurm
    ``NodeList`` is written expanded, comma-separated, so that its hosts match ``exec_hosts``).
    A few keys known to be harmless (queue, partition, QOS, TRES …) are kept. Every other key is
    kept only when its value is a plain number, duration, size or date; free text (TORQUE
    ``message``, SWF ``Acknowledge`` headers, an unknown sacct field) is dropped. A format with
    no rules here (a reader added later) keeps no ``attrs`` at all, with a warning in the log:
    add its rules to ``_RECORD_RULES``. Row count, ``src_line``, ``record_type``, ``stamp`` and
    ``flags`` are untouched, so lines read = parsed + quarantined still holds.
``quarantine``
    ``raw`` becomes empty bytes (an unreadable line can hold any name); line stays; in the
    reason, a quoted value (``impossible date in stamp '…'``) is replaced by ``'…'``.
``sim_result``
    ``vo`` as above.

``src_file`` (in ``jobs``, ``records`` and ``quarantine``) keeps only what ``src_file`` asks:
the file's name without its folders (``"name"``, the default: ``/home/alice/logs/20240503.gz``
becomes ``20240503.gz``), or a keyed pseudonym of that name (``"pseudonym"``: ``f-…``), for
sites whose file names themselves name someone. Paths in the metadata of a trace
(``provenance``: ``jobs_table``, ``model_file``) are reduced the same way, and
:func:`anonymize_result` does the same to the files, skipped paths and reasons a parse lists
in its ``info`` (and so in its summary), keeping of a log's header only its plain values.

The table's schema metadata gains ``gridtrace.anonymized``: the scheme, the kinds replaced and a
key id (an HMAC of a fixed text), so that two files can be checked to share a key without it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import replace
from pathlib import Path, PurePath
from typing import Any, Final, Literal, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError
from gridtrace.logs._base import ParseResult
from gridtrace.logs._slurm import expand_hostlist
from gridtrace.logs._swf import HEADER_METADATA_KEY
from gridtrace.schema import SCHEMAS

__all__ = [
    "ALL_KINDS",
    "DEFAULT_KINDS",
    "SRC_FILE_MODES",
    "anonymize_result",
    "anonymize_table",
    "check_key",
    "key_from_env",
    "key_id",
    "pseudonym",
    "read_key_file",
]

logger = library_logger(__name__)

_pa: Any = pa  # the pyarrow stubs lack the overloads used here (int32 map offsets, ...)
_pc: Any = pc

Kind = Literal["user", "group", "account", "job_name", "host", "vo"]

ALL_KINDS: Final[tuple[Kind, ...]] = ("user", "group", "account", "job_name", "host", "vo")
"""Every kind of name that can be pseudonymised."""

DEFAULT_KINDS: Final[frozenset[Kind]] = frozenset({"user", "group", "account", "job_name", "host"})
"""The kinds replaced unless told otherwise: every name but the (public) VO."""

SrcFileMode = Literal["name", "pseudonym"]
SRC_FILE_MODES: Final[tuple[SrcFileMode, ...]] = ("name", "pseudonym")
"""What an anonymised ``src_file`` keeps: the file's name, or a keyed pseudonym of it."""

_PREFIX: Final[dict[str, str]] = {
    "user": "u",
    "group": "g",
    "account": "a",
    "job_name": "j",
    "host": "h",
    "vo": "v",
}
_FILE_PREFIX = "f"
_HEX_DIGITS = 12  # 48 bits
_SCHEME = "hmac-sha256-48"
_METADATA_KEY = b"gridtrace.anonymized"
_TORQUE_FORMATS = frozenset({"torque", "pbspro"})


def check_key(key: object) -> bytes:
    """Return ``key`` if it can key the pseudonyms; raise :class:`ConfigError` if it is empty.

    Raises
    ------
    ConfigError
        If ``key`` is not bytes or is empty.
    """
    if not isinstance(key, bytes | bytearray):
        msg = f"the anonymisation key must be bytes, not {type(key).__name__}"
        raise ConfigError(msg)
    if not key:
        msg = "the anonymisation key is empty; give a secret of at least 16 random bytes"
        raise ConfigError(msg)
    if len(key) < 16:
        logger.warning(
            "the anonymisation key has only %d bytes; 16 or more random bytes resist guessing",
            len(key),
        )
    return bytes(key)


def read_key_file(path: str | os.PathLike[str]) -> bytes:
    """Read a key from a file: its bytes, less one trailing newline (LF or CR LF).

    Raises
    ------
    ConfigError
        If the file holds no key.
    FileNotFoundError
        If there is no such file.
    """
    data = Path(path).read_bytes()
    data = data.removesuffix(b"\n").removesuffix(b"\r")
    if not data:
        msg = f"{path}: the key file is empty; write a secret of at least 16 random bytes to it"
        raise ConfigError(msg)
    return check_key(data)


def key_from_env(name: str) -> bytes:
    """Read a key from the environment variable ``name`` (its value, encoded as the OS does).

    Raises
    ------
    ConfigError
        If the variable is unset or empty.
    """
    value = os.environ.get(name)
    if not value:
        msg = f"environment variable {name} holds no anonymisation key (unset or empty)"
        raise ConfigError(msg)
    return check_key(os.fsencode(value))


def key_id(key: bytes) -> str:
    """Return a short public fingerprint of ``key`` (an HMAC of a fixed text) to compare keys."""
    return hmac.new(check_key(key), b"gridtrace key id", hashlib.sha256).hexdigest()[:_HEX_DIGITS]


def pseudonym(value: str, kind: str, key: bytes) -> str:
    """Return the pseudonym of one name.

    Parameters
    ----------
    value : str
        The name as it appears in the table.
    kind : {"user", "group", "account", "job_name", "host", "vo"}
        What the name is; it picks the prefix and is hashed with the name.
    key : bytes
        The secret key.

    Returns
    -------
    str
        ``<prefix>-<12 hex digits>``; the empty string stays empty.

    Examples
    --------
    >>> pseudonym("alice", "user", b"0123456789abcdef")[:2]
    'u-'
    >>> pseudonym("alice", "user", b"k" * 16) == pseudonym("alice", "user", b"k" * 16)
    True
    """
    return _Pseudonymizer(check_key(key), frozenset(ALL_KINDS)).name(value, _check_kind(kind))


def _check_kind(kind: str) -> Kind:
    for known in ALL_KINDS:
        if kind == known:
            return known
    msg = f"unknown kind of name {kind!r}; kinds are {', '.join(ALL_KINDS)}"
    raise ConfigError(msg)


def _check_kinds(kinds: Iterable[str]) -> frozenset[Kind]:
    if isinstance(kinds, str):
        kinds = [kinds]
    return frozenset(_check_kind(kind) for kind in kinds)


class _Pseudonymizer:
    """Names to pseudonyms under one key, cached, with collisions detected."""

    def __init__(self, key: bytes, kinds: frozenset[Kind]) -> None:
        self.kinds = kinds
        self._base = {
            kind: hmac.new(key, kind.encode() + b"\x00", hashlib.sha256) for kind in ALL_KINDS
        }
        self._forward: dict[Kind, dict[str, str]] = {kind: {} for kind in ALL_KINDS}
        self._backward: dict[Kind, dict[str, str]] = {kind: {} for kind in ALL_KINDS}
        self._file = hmac.new(key, b"file\x00", hashlib.sha256)
        self.src_file: SrcFileMode = "name"

    def file(self, path: str) -> str:
        """Reduce a file's path to its name, or to a pseudonym of its name."""
        name = re.split(r"[\\/]", path.rstrip("/\\"))[-1]
        if self.src_file == "name" or not name:
            return name
        mac = self._file.copy()
        mac.update(name.encode("utf-8", "surrogatepass"))
        return f"{_FILE_PREFIX}-{mac.hexdigest()[:_HEX_DIGITS]}"

    def name(self, value: str, kind: Kind) -> str:
        if kind not in self.kinds or not value:
            return value
        known = self._forward[kind].get(value)
        if known is not None:
            return known
        mac = self._base[kind].copy()
        mac.update(value.encode("utf-8", "surrogatepass"))
        result = f"{_PREFIX[kind]}-{mac.hexdigest()[:_HEX_DIGITS]}"
        other = self._backward[kind].setdefault(result, value)
        if other != value:
            msg = (
                f"two {kind} names share the pseudonym {result}; anonymise with another key "
                "(48-bit pseudonyms collide about once in 10^5 sets of 10^5 names)"
            )
            raise ConfigError(msg)
        self._forward[kind][value] = result
        return result

    # composite values -----------------------------------------------------------------

    def hostlist(self, text: str) -> str:
        """``r1/0-19+r2/0-3``, ``(r1:ncpus=4)+(r2:ncpus=4)``, ``r1*36``: hosts replaced."""
        return "+".join(self._host_part(part) for part in text.split("+"))

    def _host_part(self, part: str) -> str:
        match = _HOST_PART.match(part)
        if match is None:  # pragma: no cover - the pattern matches every string
            return part
        return match["open"] + self.name(match["host"], "host") + match["rest"]

    def nodespec(self, text: str) -> str:
        """TORQUE ``nodes=``: ``2:ppn=8+node12:ppn=4:bigmem``; a non-count first item is a host."""
        out = []
        for part in text.split("+"):
            first, colon, rest = part.partition(":")
            if first and not first.isdigit() and "=" not in first:
                first = self.name(first, "host")
            out.append(first + colon + rest)
        return "+".join(out)

    def select(self, text: str) -> str:
        """Replace ``host=``/``vnode=`` values of a PBS Pro ``select=`` (``1:ncpus=4:host=r1``)."""
        return _HOST_ASSIGNMENT.sub(lambda m: m[1] + self.name(m[2], "host"), text)

    def user_at_host(self, text: str) -> str:
        """``alice@ui01.example.org`` → ``u-…@h-…``; a value without ``@`` is a user."""
        user, at, host = text.rpartition("@")
        if not at:
            return self.name(text, "user")
        return f"{self.name(user, 'user')}@{self.name(host, 'host')}"

    def slurm_nodelist(self, text: str) -> str:
        """Slurm ``node[01-03],gpu1`` → the hosts, expanded, replaced, comma-separated."""
        try:
            hosts = expand_hostlist(text)
        except ValueError:
            return self.name(text, "host")  # unreadable: replaced whole
        if not hosts:
            return text  # "None assigned" or empty
        return ",".join(self.name(host, "host") for host in hosts)

    def slurm_state(self, text: str) -> str:
        """Replace the uid in ``CANCELLED by 5012`` (who cancelled) by a user pseudonym."""
        state, by, who = text.partition(" by ")
        return state + by + self.name(who, "user") if by else text

    def lsf_hosts(self, text: str) -> str:
        """Replace the hosts of an LSF host list stored as JSON (``["16*n1", "n2"]``)."""
        try:
            entries = json.loads(text)
        except ValueError:
            return self.name(text, "host")  # unreadable: replaced whole
        if not isinstance(entries, list):
            return self.name(text, "host")
        out = []
        for entry in entries:
            count, star, host = str(entry).partition("*")
            if star and count.isdigit():
                out.append(f"{count}*{self.name(host, 'host')}")
            else:
                out.append(self.name(str(entry), "host"))
        return json.dumps(out)

    def slot_at_host(self, text: str) -> str:
        """HTCondor ``slot1_3@wn042.example.org`` → ``slot1_3@h-…`` (a bare value is a host)."""
        slot, at, host = text.rpartition("@")
        return f"{slot}@{self.name(host, 'host')}" if at else self.name(text, "host")

    def condor_global_id(self, text: str) -> str:
        """HTCondor ``GlobalJobId`` ``schedd.example.org#1234.0#1700000000``: schedd replaced."""
        schedd, hash_, rest = text.partition("#")
        return self.name(schedd, "host") + hash_ + rest

    def torque_job_id(self, text: str) -> str:
        """``123[4].server.example.org`` → ``123[4].h-…``."""
        seq, dot, server = text.partition(".")
        return seq + dot + self.name(server, "host") if dot and server else text


_HOST_PART = re.compile(r"(?P<open>\(?)(?P<host>[^/:()*+]*)(?P<rest>.*)", re.DOTALL)
_HOST_ASSIGNMENT = re.compile(r"((?:^|[:+])(?:host|vnode)=)([^:+]*)")

# A value with nothing in it that can name anyone: numbers (with a unit suffix of up to two
# letters: 2500mb, 16G, 3000Mc), durations and exit codes ([DD-]HH:MM:SS, 0:15), ISO dates.
_PLAIN = (
    r"(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?[A-Za-z]{0,2}"
    r"|(?:\d+-)?\d+(?::\d+){1,2}(?:\.\d+)?"
    r"|\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?)?(?:Z|[+-]\d\d:?\d\d)?)?"
)
_FIELD_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*")


# ------------------------------------------------------------------------------ records rules

_Action = str  # "keep", "drop", "plain", a kind, or the name of a _Pseudonymizer method

_TORQUE_RULES: dict[str, _Action] = {
    "user": "user",
    "group": "group",
    "account": "account",
    "project": "account",
    "jobname": "job_name",
    "owner": "user_at_host",
    "requestor": "user_at_host",
    "exec_host": "hostlist",
    "exec_vnode": "hostlist",
    "Resource_List.nodes": "nodespec",
    "Resource_List.neednodes": "nodespec",
    "Resource_List.select": "select",
    "Resource_List.exec_vnode": "hostlist",
    "queue": "keep",
    "Resource_List.place": "keep",
    "Resource_List.partition": "keep",
    "Resource_List.qos": "keep",
    "message": "drop",
}
_SWF_RULES: dict[str, _Action] = {
    "user_id": "user",
    "group_id": "group",
    "executable_id": "job_name",
    "TimeZoneString": "keep",
    "TimeZone": "keep",
    "StartTime": "keep",
    "EndTime": "keep",
    "Version": "keep",
    "Computer": "keep",
    "Installation": "keep",
    "Preemption": "keep",
}
_GWF_RULES: dict[str, _Action] = {
    **{k: v for k, v in _SWF_RULES.items() if not k.endswith("_id")},
    "UserID": "user",
    "GroupID": "group",
    "ExecutableID": "job_name",
    "ProjectID": "account",
    "VOID": "vo",
    "QueueID": "keep",
    "PartitionID": "keep",
    "OrigSiteID": "keep",
    "LastRunSiteID": "keep",
    "GWFVersion": "keep",
}
_SLURM_RULES: dict[str, _Action] = {
    "User": "user",
    "UID": "user",
    "Group": "group",
    "GID": "group",
    "Account": "account",
    "JobName": "job_name",
    "NodeList": "slurm_nodelist",
    "State": "slurm_state",
    "JobID": "keep",
    "JobIDRaw": "keep",
    "Cluster": "keep",
    "Partition": "keep",
    "QOS": "keep",
    "ReqTRES": "keep",
    "AllocTRES": "keep",
    "Start": "keep",
    "End": "keep",
    "Submit": "keep",
    "Eligible": "keep",
    "Timelimit": "keep",
}

_SGE_RULES: dict[str, _Action] = {
    "owner": "user",
    "group": "group",
    "account": "account",
    "project": "account",
    "department": "account",
    "job_name": "job_name",
    "hostname": "host",
    "category": "drop",  # -l/-q/-U lists can name hosts, queues on hosts and users
    "qname": "keep",
    "granted_pe": "keep",
    "pe_taskid": "keep",
    "version": "keep",
    "text": "drop",
}
_LSF_RULES: dict[str, _Action] = {
    "userName": "user",
    "userId": "user",
    "mailUser": "drop",
    "jobName": "job_name",
    "projectName": "account",
    "licenseProject": "account",
    "fromHost": "host",
    "askedHosts": "lsf_hosts",
    "execHosts": "lsf_hosts",
    "allocSlots": "lsf_hosts",
    "hostRusage": "drop",  # host names among numbers
    "gRusage": "drop",
    "networkAlloc": "drop",
    "submitEXT": "drop",
    "finishKVP": "drop",
    "storageInfoV": "drop",
    "indexRange": "keep",
    "eventType": "keep",
    "version": "keep",
    "queue": "keep",
    "app": "keep",
    "sla": "keep",
    "srcCluster": "keep",
    "dstCluster": "keep",
    "hostFactor": "keep",
}
"""LSF ``attrs`` (see ``_lsf.py``): paths (``cwd``, ``outFile``, ``jobGroupName``...), commands and
resource requirements are not plain, so the open-key rule drops them."""
_HTCONDOR_RULES: dict[str, _Action] = {
    "Owner": "user",
    "User": "user_at_host",
    "AcctGroupUser": "user",
    "AcctGroup": "account",
    "AccountingGroup": "account",
    "JobBatchName": "job_name",
    "Cmd": "job_name",
    "RemoteHost": "slot_at_host",
    "LastRemoteHost": "slot_at_host",
    "ClientMachine": "host",
    "RemotePool": "host",
    "LastRemotePool": "host",
    "GlobalJobId": "condor_global_id",
    "x509UserProxyVOName": "vo",
    "Iwd": "drop",
    "StartdPrincipal": "drop",
    "MyType": "keep",
    "TargetType": "keep",
    "ExitBySignal": "keep",
    "ShouldTransferFiles": "keep",
    "WhenToTransferOutput": "keep",
}
"""HTCondor job ClassAd attributes; other string attributes (arguments, environment, paths,
proxy subjects, expressions) are dropped by the open-key rule."""

_TORQUE_PLAIN_KEYS = frozenset(
    {
        "ctime",
        "qtime",
        "etime",
        "start",
        "end",
        "session",
        "Exit_status",
        "exit_status",
        "run_count",
        "eligible_time",
        "alt_id",
        "total_execution_slots",
        "unique_node_count",
    }
)
_RECORD_RULES: dict[str, tuple[Mapping[str, _Action], Callable[[str], bool]]] = {
    # format -> (rules per attrs key, which other keys may stay when their value is plain)
    "torque": (
        _TORQUE_RULES,
        lambda k: (
            k.startswith(("Resource_List.", "resources_used.", "resource_assigned."))
            or k in _TORQUE_PLAIN_KEYS
        ),
    ),
    "swf": (_SWF_RULES, lambda k: _FIELD_NAME.fullmatch(k) is not None),
    "gwf": (_GWF_RULES, lambda k: _FIELD_NAME.fullmatch(k) is not None),
    "slurm": (_SLURM_RULES, lambda k: _FIELD_NAME.fullmatch(k) is not None),
    "sge": (_SGE_RULES, lambda k: _FIELD_NAME.fullmatch(k) is not None),
    "lsf": (_LSF_RULES, lambda k: _FIELD_NAME.fullmatch(k) is not None),
    "htcondor": (_HTCONDOR_RULES, lambda k: _FIELD_NAME.fullmatch(k) is not None),
}
"""How to anonymise the ``records`` attrs of each ``source_format``. A format missing here keeps
no attrs in anonymised records; a reader's author adds its identifying keys here."""
_RECORD_RULES["pbspro"] = _RECORD_RULES["torque"]

# ------------------------------------------------------------------------------ vectorised maps


def _map_unique(array: pa.Array[Any], convert: Callable[[str], str]) -> pa.Array[Any]:
    """Apply ``convert`` once per distinct value of a string array; nulls stay null."""
    if len(array) == 0:
        return array
    encoded = cast("pa.DictionaryArray[Any, Any]", pc.dictionary_encode(array))
    dictionary: list[Any] = encoded.dictionary.to_pylist()
    converted: Any = _pa.array([convert(str(v)) for v in dictionary], array.type)
    result: pa.Array[Any] = converted.take(encoded.indices)
    return result


def _whole(column: pa.ChunkedArray[Any] | pa.Array[Any]) -> pa.Array[Any]:
    if isinstance(column, pa.ChunkedArray):
        chunks = column.chunks or [_pa.array([], column.type)]
        whole: pa.Array[Any] = _pa.concat_arrays(chunks)
        return whole
    return column


def _strings(column: pa.ChunkedArray[Any], convert: Callable[[str], str]) -> pa.Array[Any]:
    return _map_unique(_whole(column), convert)


def _lists(column: pa.ChunkedArray[Any], convert: Callable[[str], str]) -> pa.Array[Any]:
    lists = cast("pa.ListArray[Any]", _whole(column))
    values = _map_unique(lists.values, convert)
    return pa.ListArray.from_arrays(
        lists.offsets, values, type=lists.type, mask=lists.is_null() if lists.null_count else None
    )


def _numpy(array: pa.Array[Any] | pa.ChunkedArray[Any]) -> np.ndarray[Any, Any]:
    return _whole(array).to_numpy(zero_copy_only=False)


# ------------------------------------------------------------------------------ per table


def _table_kind(table: pa.Table) -> str:
    names = set(table.column_names)
    for name, schema in SCHEMAS.items():
        if names == set(schema.names):
            return name
    known = ", ".join(SCHEMAS)
    msg = (
        f"cannot anonymise a table with columns {sorted(names)}: only gridtrace's own tables "
        f"({known}) are known, so that no column is published unchecked"
    )
    raise ConfigError(msg)


def anonymize_table(
    table: pa.Table,
    key: bytes,
    *,
    kinds: Collection[str] = DEFAULT_KINDS,
    src_file: str = "name",
) -> pa.Table:
    """Replace the names in a gridtrace table by keyed pseudonyms.

    Parameters
    ----------
    table : pyarrow.Table
        A ``jobs``, ``trace``, ``records``, ``quarantine`` or ``sim_result`` table (recognised by
        its columns). What each keeps is listed in :mod:`gridtrace.logs._anonymize`.
    key : bytes
        The secret key; the same key gives the same pseudonyms in every table and run.
    kinds : collection of str, default every kind but ``"vo"``
        The kinds of names to replace: ``user``, ``group``, ``account``, ``job_name``, ``host``,
        ``vo``. Free text and raw bytes are dropped whatever the kinds.
    src_file : {"name", "pseudonym"}, default "name"
        What ``src_file`` keeps of the path: the file's name, or a keyed pseudonym of it.

    Returns
    -------
    pyarrow.Table
        The same schema and rows, names replaced, with ``gridtrace.anonymized`` in the metadata.

    Raises
    ------
    ConfigError
        If the key is empty, a kind or ``src_file`` mode is unknown, the table is not one of
        gridtrace's, or two names of one kind would share a pseudonym.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from gridtrace.schema import conform
    >>> jobs = conform(pa.table({"site": ["s"], "source_format": ["slurm"], "job_key": ["k"],
    ...     "job_id_raw": ["1"], "attempt": pa.array([0], pa.int16()),
    ...     "n_attempts": pa.array([1], pa.int16()), "user": ["alice"], "state": ["COMPLETED"],
    ...     "src_file": ["f"], "src_line": [1]}), "jobs")
    >>> anonymize_table(jobs, b"a secret of 16 bytes").column("user")[0].as_py()[:2]
    'u-'
    """
    return _anonymize(table, _pseudonymizer(key, kinds, src_file), key)


def _pseudonymizer(key: bytes, kinds: Collection[str], src_file: str) -> _Pseudonymizer:
    pseudo = _Pseudonymizer(check_key(key), _check_kinds(kinds))
    for mode in SRC_FILE_MODES:
        if src_file == mode:
            pseudo.src_file = mode
            return pseudo
    msg = f"src_file must be one of {', '.join(SRC_FILE_MODES)}, not {src_file!r}"
    raise ConfigError(msg)


def anonymize_result(
    result: ParseResult,
    key: bytes,
    *,
    kinds: Collection[str] = DEFAULT_KINDS,
    src_file: str = "name",
) -> ParseResult:
    """Anonymise the ``records``, ``jobs`` and ``quarantine`` of a parse with one key.

    The file paths of ``files`` and of ``info`` (skipped entries, files that failed, the
    findings of each format) keep what ``src_file`` asks, reasons lose their quoted values, and
    a log header in ``info`` keeps only its plain values, so that the summary written beside the
    tables names nobody either. The counts are unchanged (no row is removed), so the result
    still reconciles. See :func:`anonymize_table` for the parameters.
    """
    pseudo = _pseudonymizer(key, kinds, src_file)
    return replace(
        result,
        records=_anonymize(result.records, pseudo, key),
        jobs=_anonymize(result.jobs, pseudo, key),
        quarantine=_anonymize(result.quarantine, pseudo, key),
        files=tuple(pseudo.file(f) for f in result.files),
        info=_scrub_info(result.info, pseudo, _paths_of(result)),
    )


_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_FILE_KEYS = frozenset({"file", "path", "src_file", "jobs_table", "model_file", "trace_file"})
_REASON_KEYS = frozenset({"reason", "why", "first_reason"})


def _redact(text: str) -> str:
    """Replace the quoted values of a reason (``'alice'``, ``"r1i0n9"``) by ``'…'``."""
    return _QUOTED.sub("'…'", text)


def _paths_of(result: ParseResult) -> list[str]:
    """Every path a parse names, and their folders, longest first (to replace in free text)."""
    paths: set[str] = set()
    for path in result.files:
        paths.add(path)
        parent = str(PurePath(path).parent)
        while parent not in {"/", ".", ""} and parent not in paths:
            paths.add(parent)
            parent = str(PurePath(parent).parent)
    return sorted(paths, key=len, reverse=True)


def _scrub_info(value: Any, pseudo: _Pseudonymizer, paths: list[str], key: str = "") -> Any:
    """``info`` with paths reduced, reasons redacted and headers kept plain (see above)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for name, item in value.items():
            if name.endswith("_header") and isinstance(item, dict):
                out[name] = _plain_header(item, pseudo)
            else:  # keys too: a count by reason is keyed by the reason
                key_text = _scrub_info(str(name), pseudo, paths, "reason")
                scrubbed = _scrub_info(item, pseudo, paths, str(name))
                if isinstance(out.get(key_text), int) and isinstance(scrubbed, int):
                    scrubbed += out[key_text]  # two reasons that differed only in a value
                out[key_text] = scrubbed
        return out
    if isinstance(value, list | tuple):
        return [_scrub_info(item, pseudo, paths, key) for item in value]
    if not isinstance(value, str):
        return value
    if key in _FILE_KEYS or key == "files":
        return pseudo.file(value)
    if key in _REASON_KEYS:
        value = _redact(value)
    for path in paths:  # a path inside free text: reduce it too
        if path in value:
            value = value.replace(path, pseudo.file(path))
    return value


def _plain_header(header: Mapping[str, Any], pseudo: _Pseudonymizer) -> dict[str, Any]:
    """Keep the entries of a log header that name nobody: harmless keys and plain values."""
    rules = {**_SWF_RULES, **_GWF_RULES}
    out: dict[str, Any] = {}
    for name, value in header.items():
        action = rules.get(name)
        if isinstance(value, bool | int | float) or value is None or action == "keep":
            out[name] = value
        elif action in _PREFIX and isinstance(value, str):
            out[name] = pseudo.name(value, cast(Kind, action))
        elif isinstance(value, str) and re.fullmatch(_PLAIN, value.strip()):
            out[name] = value
    return out


def _scrub_metadata(metadata: Mapping[bytes, bytes], pseudo: _Pseudonymizer) -> dict[bytes, bytes]:
    """Table metadata with the paths it holds (a trace's provenance) reduced to names."""
    out: dict[bytes, bytes] = {}
    for name, raw in metadata.items():
        try:
            value = json.loads(raw)
        except ValueError:
            out[name] = raw
            continue
        scrubbed = _scrub_info(value, pseudo, [])
        if name == HEADER_METADATA_KEY and isinstance(scrubbed, dict):
            # a log's header travels with its jobs: keep, as in info, only what names nobody
            headers = scrubbed.get("headers") or []
            scrubbed = {**scrubbed, "headers": [_plain_header(h, pseudo) for h in headers]}
        out[name] = raw if scrubbed == value else json.dumps(scrubbed).encode()
    return out


def _anonymize(table: pa.Table, pseudo: _Pseudonymizer, key: bytes) -> pa.Table:
    kind = _table_kind(table)
    if kind == "jobs":
        out = _anonymize_jobs(table, pseudo)
    elif kind == "trace":
        out = _set(table, "user", _strings(table.column("user"), _named(pseudo, "user")))
        out = _set(out, "vo", _vo(table, pseudo, flags=None))
    elif kind == "records":
        out = _anonymize_records(table, pseudo)
    elif kind == "quarantine":
        out = _set(table, "raw", pa.repeat(pa.scalar(b"", pa.binary()), table.num_rows))
        out = _set(out, "reason", _strings(table.column("reason"), _redact))
    else:  # sim_result
        out = _set(table, "vo", _vo(table, pseudo, flags=None))
    if "src_file" in table.column_names:
        out = _set(out, "src_file", _strings(table.column("src_file"), pseudo.file))
    metadata = _scrub_metadata(table.schema.metadata or {}, pseudo)
    metadata[_METADATA_KEY] = json.dumps(
        {
            "scheme": _SCHEME,
            "kinds": sorted(pseudo.kinds),
            "src_file": pseudo.src_file,
            "key_id": key_id(key),
        },
        sort_keys=True,
    ).encode()
    return out.replace_schema_metadata(metadata)


def _set(table: pa.Table, name: str, values: pa.Array[Any]) -> pa.Table:
    index = table.schema.get_field_index(name)
    return table.set_column(index, table.schema.field(index), values)


def _named(pseudo: _Pseudonymizer, kind: Kind) -> Callable[[str], str]:
    return lambda value: pseudo.name(value, kind)


def _anonymize_jobs(jobs: pa.Table, pseudo: _Pseudonymizer) -> pa.Table:
    out = jobs
    for column, kind in (
        ("user", "user"),
        ("group", "group"),
        ("account", "account"),
        ("job_name", "job_name"),
    ):
        out = _set(out, column, _strings(jobs.column(column), _named(pseudo, cast(Kind, kind))))
    out = _set(out, "exec_hosts", _lists(jobs.column("exec_hosts"), pseudo.hostlist))
    out = _set(out, "vo", _vo(jobs, pseudo, flags=jobs.column("flags")))
    torque = pc.is_in(jobs.column("source_format"), pa.array(sorted(_TORQUE_FORMATS)))
    return _set(out, "job_id_raw", _where(jobs.column("job_id_raw"), torque, pseudo.torque_job_id))


def _where(
    column: pa.ChunkedArray[Any], rows: pa.ChunkedArray[Any] | pa.Array[Any], convert: Any
) -> pa.Array[Any]:
    """``convert`` applied to the values of the rows selected, the others kept."""
    values = _whole(column)
    mask = _whole(rows)
    if not pc.any(mask).as_py():
        return values
    result: pa.Array[Any] = _pc.replace_with_mask(
        values, mask, _map_unique(values.filter(mask), convert)
    )
    return result


def _vo(table: pa.Table, pseudo: _Pseudonymizer, flags: pa.ChunkedArray[Any] | None) -> Any:
    vo = table.column("vo")
    if "vo" in pseudo.kinds:
        return _strings(vo, _named(pseudo, "vo"))
    out = _whole(vo)
    if flags is None:
        return out
    # a VO copied from the group, user or account column is that name: replace it like it
    sources: tuple[Kind, ...] = ("group", "user", "account")
    for source in sources:
        flag = f"VO_FROM_{source.upper()}"
        has = _has_flag(flags, flag)
        if pc.any(has).as_py():
            out = _where(pa.chunked_array([out]), has, _named(pseudo, source))
    return out


def _has_flag(flags: pa.ChunkedArray[Any], flag: str) -> pa.Array[Any]:
    lists = cast("pa.ListArray[Any]", _whole(flags))
    if len(lists) == 0:
        return pa.array([], pa.bool_())
    hit = _numpy(_pc.equal(lists.flatten(), flag)).astype(bool)
    hit_rows = _numpy(pc.list_parent_indices(lists))[hit]
    out = np.zeros(len(lists), dtype=bool)
    out[hit_rows] = True
    return pa.array(out)


def _anonymize_records(records: pa.Table, pseudo: _Pseudonymizer) -> pa.Table:
    formats = _whole(records.column("source_format"))
    torque = pc.is_in(formats, pa.array(sorted(_TORQUE_FORMATS)))
    out = _set(
        records, "job_id_raw", _where(records.column("job_id_raw"), torque, pseudo.torque_job_id)
    )
    out = _set(out, "attrs", _attrs(_whole(records.column("attrs")), formats, pseudo))
    return _set(out, "raw", pa.nulls(records.num_rows, pa.binary()))


def _attrs(attrs: pa.Array[Any], formats: pa.Array[Any], pseudo: _Pseudonymizer) -> pa.Array[Any]:
    maps = cast("pa.MapArray[Any, Any]", attrs)
    if len(maps) == 0:
        return maps
    offsets = _numpy(maps.offsets).astype(np.int64)
    keys, items = maps.keys, maps.items
    # each entry's row, for the entries the (possibly sliced) map array uses
    entry_row = np.full(len(keys), -1, dtype=np.int64)
    used = slice(int(offsets[0]), int(offsets[-1]))
    entry_row[used] = np.repeat(np.arange(len(maps)), np.diff(offsets))
    format_codes = cast("pa.DictionaryArray[Any, Any]", pc.dictionary_encode(formats))
    format_names = format_codes.dictionary.to_pylist()
    entry_format = np.full(len(keys), -1, dtype=np.int64)
    entry_format[used] = _numpy(format_codes.indices)[entry_row[used]]
    key_codes = cast("pa.DictionaryArray[Any, Any]", pc.dictionary_encode(keys))
    key_names = key_codes.dictionary.to_pylist()
    entry_key = _numpy(key_codes.indices).astype(np.int64)

    # one action per (format, key) pair, looked up per entry through a small table
    n_keys = max(len(key_names), 1)
    names: list[_Action] = []
    table = np.zeros(len(format_names) * n_keys + 1, dtype=np.int64)  # last slot: unused entry
    for code in np.unique(entry_format[entry_format >= 0] * n_keys + entry_key[entry_format >= 0]):
        action = _action(str(format_names[int(code) // n_keys]), str(key_names[int(code) % n_keys]))
        if action not in names:
            names.append(action)
        table[int(code)] = names.index(action)
    combo = np.where(entry_format >= 0, entry_format * n_keys + entry_key, len(table) - 1)
    table[-1] = -1
    entry_action = table[combo]
    keep = np.zeros(len(keys), dtype=bool)
    positions: list[np.ndarray[Any, Any]] = []
    replacements: list[pa.Array[Any]] = []
    for number, action in enumerate(names):
        where = entry_action == number
        if action == "drop":
            continue
        if action == "keep":
            keep |= where
            continue
        chosen = np.flatnonzero(where)
        values = items.take(chosen)
        if action == "plain":
            keep[chosen[_is_plain(values)]] = True
            continue
        positions.append(chosen)
        replacements.append(_map_unique(values, _converter(pseudo, action)))
        keep |= where
    new_items = items
    if positions:
        order = np.argsort(np.concatenate(positions), kind="stable")
        mask = np.zeros(len(keys), dtype=bool)
        mask[np.concatenate(positions)] = True
        combined = _pa.concat_arrays(replacements).take(pa.array(order))
        new_items = _pc.replace_with_mask(items, pa.array(mask), combined)
    kept = np.concatenate([[0], np.cumsum(keep)])
    anonymized: pa.Array[Any] = _pa.MapArray.from_arrays(
        pa.array(kept[offsets], pa.int32()),
        keys.filter(pa.array(keep)),
        new_items.filter(pa.array(keep)),
        type=maps.type,
        mask=maps.is_null() if maps.null_count else None,
    )
    return anonymized


def _is_plain(values: pa.Array[Any]) -> np.ndarray[Any, Any]:
    """Whether each value is plain (nulls are); the regex runs once per distinct value."""
    encoded: Any = _pc.dictionary_encode(values)
    plain = _pc.match_substring_regex(encoded.dictionary, f"^{_PLAIN}$")
    return _numpy(_pc.fill_null(plain.take(encoded.indices), True)).astype(bool)


_warned_formats: set[str] = set()


def _action(source_format: str, name: str) -> _Action:
    rules = _RECORD_RULES.get(source_format)
    if rules is None:
        if source_format not in _warned_formats:
            _warned_formats.add(source_format)
            logger.warning(
                "no anonymisation rules for records of format %r: their attrs are dropped",
                source_format,
            )
        return "drop"
    by_key, open_key = rules
    if name in by_key:
        return by_key[name]
    return "plain" if open_key(name) else "drop"


def _converter(pseudo: _Pseudonymizer, action: str) -> Callable[[str], str]:
    if action in _PREFIX:
        return _named(pseudo, cast(Kind, action))
    method: Callable[[str], str] = getattr(pseudo, action)
    return method
