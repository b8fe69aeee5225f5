"""Value parsers for TORQUE / OpenPBS / PBS Pro accounting attributes.

Every parser takes the attribute's text exactly as logged and never raises on bad input: it
returns the normalised value (seconds, bytes, counts) or ``None``, together with a *problem*
word the caller turns into a ``jobs.flags`` entry. The parsers are pure and cheap, so the job
assembler calls them once per distinct string (see :func:`gridtrace.logs._torque_jobs`).

A count too large for the ``jobs`` column it feeds is unreadable, never a wrong value or a
failed read: a node, core or GPU count beyond int32 (2^31 − 1) makes the request or allocation
``None`` (an ``exec_host`` range such as ``0-99999999999`` is counted without being
enumerated), a ``select`` whose memory sum is beyond int64 too; an ``Exit_status`` beyond int32
has no signal; a job id whose number is beyond int64 (array index beyond int32) is ``None``.
Durations and sizes are exact Python ints of any size: the caller treats one beyond its int64
column as unreadable.

Problems reported (second element of the returned pair):

``"negative"``
    A duration with a negative part (``-342359:-42:-21``): the value is ``None``.
``"unreadable"``
    The text does not have the attribute's syntax: the value is ``None``.
``"nonstandard"``
    Memory written in a form PBS does not document (a decimal, or a multiplier without ``b``/``w``,
    as in ``12.27M``): read as binary multiples of bytes, the value is kept.
``"guessed"``
    Memory without a unit: read in the caller's default unit, the value is kept.

Forms accepted
--------------
Durations (:func:`parse_duration`)
    ``SS`` (TORQUE >= 5.1 writes ``resources_used`` in seconds), ``MM:SS``, ``HH:MM:SS``,
    ``DD:HH:MM:SS`` (four parts: the first is days) and ``D+HH:MM:SS``; the seconds may carry a
    fraction, which is dropped.
Memory (:func:`parse_memory`)
    An integer and a unit ``b, kb, mb, gb, tb, pb`` (powers of 1024) or ``w, kw, mw, gw, tw, pw``
    (words of 8 bytes), any case.
``exec_host`` (:func:`parse_exec_host`)
    ``+``-separated ``host/slots`` where slots is a comma list of indices ``5``, ranges ``0-3``
    and PBS Pro ``index*ncpus`` counts.
``exec_vnode`` (:func:`parse_exec_vnode`)
    ``+``-separated chunks in parentheses, each ``+``-separated ``vnode:res=value:...``; vnodes
    ``host[i]`` collapse to ``host``.
``Resource_List.nodes`` (:func:`parse_nodes_spec`)
    ``+``-separated parts ``count|hostname[:ppn=N][:gpus=N][:feature...]``.
``Resource_List.select`` (:func:`parse_select`)
    ``+``-separated chunks ``[count:]res=value[:res=value...]``.
"""

from __future__ import annotations

import re
from collections import namedtuple

TYPE_CHECKING = False  # typing's constant without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from decimal import Decimal
    from typing import Literal, NamedTuple, TypeAlias

    Problem: TypeAlias = Literal["negative", "unreadable", "nonstandard", "guessed"]

__all__ = [
    "MEMORY_UNITS",
    "ExecHost",
    "NodeRequest",
    "exit_signal",
    "parse_duration",
    "parse_exec_host",
    "parse_exec_vnode",
    "parse_job_id",
    "parse_memory",
    "parse_nodes_spec",
    "parse_select",
]

_MAX_INT64 = 2**63 - 1  # seconds and bytes: the int64 jobs columns
_MAX_INT32 = 2**31 - 1  # nodes, cores, GPUs, exit codes: the int32 jobs columns

_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5, "e": 6}
MEMORY_UNITS: frozenset[str] = frozenset({p + s for p in _POWERS if p != "e" for s in ("b", "w")})
"""The unit suffixes PBS documents (lower case); ``unitless_memory`` must be one of them."""

# Patterns as text, compiled on first use (re caches them): the small TORQUE path uses a few,
# and compiling all at import cost some 3 ms a process. Flags are inline.
_DURATION_PART = r"-?\d+"
_SECONDS_PART = r"-?(?:\d+(?:\.\d*)?|\.\d+)"
_MEMORY = r"(?i)\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgtpe]?)([bw]?)\s*"
_INT = r"\d+"
_HOSTNAME = r"[A-Za-z\[][\w.\-\[\]]*"
_FEATURE = r"[\w.\-]+"
_EXEC_HOST_PART = r"([^+/]+)/(\d+)(?:-(\d+))?"
_SIMPLE_EXEC_HOST = r"[^+/,*]+/\d+(?:-\d+)?(?:\+[^+/,*]+/\d+(?:-\d+)?)*"
_VNODE_SUFFIX = r"\[\d+\]$"
_JOB_ID = r"(?s)(\d+)(?:\[(\d*)\]|-(\d+))?(?:\..*)?"
# Below this many digits int() reads a whole number (the interpreter refuses 4,300 and more by
# default); a longer one, or a decimal, goes through Decimal as before.
_INT_DIGITS = 4000
# A product below this is exact in Decimal's default context (28 significant digits).
_EXACT_DECIMAL = 10**28


def _decimal(text: str) -> Decimal:
    """Return ``Decimal(text)``, importing decimal (some 2 ms at start-up) on first use."""
    from decimal import Decimal

    return Decimal(text)


def parse_duration(text: str) -> tuple[int | None, Problem | None]:
    """Read a PBS duration into whole seconds.

    Parameters
    ----------
    text : str
        ``3600``, ``01:00:00``, ``05:00``, ``2:00:00:00`` (days), ``1+02:00:00`` or with a
        fractional second ``00:00:01.50``.

    Returns
    -------
    tuple of (int or None, str or None)
        The seconds, and ``"negative"`` or ``"unreadable"`` when the value is ``None``.

    Examples
    --------
    >>> parse_duration("2:00:00:00")
    (172800, None)
    >>> parse_duration("-342359:-42:-21")
    (None, 'negative')
    """
    text = text.strip()
    days = 0
    head, plus, text = text.rpartition("+")
    if plus:
        if not re.fullmatch(_DURATION_PART, head):
            return None, "unreadable"
        days = int(head)
        if days < 0:
            return None, "negative"
    parts = text.split(":")
    if not 1 <= len(parts) <= 4 or (plus and len(parts) != 3):
        return None, "unreadable"
    *whole, last = parts
    if not all(re.fullmatch(_DURATION_PART, p) for p in whole) or not re.fullmatch(
        _SECONDS_PART, last
    ):
        return None, "unreadable"
    if any(p.startswith("-") for p in parts):
        return None, "negative"
    numbers = [int(p) for p in whole]
    # a whole number of seconds (the usual form) needs no Decimal
    numbers.append(
        int(last) if "." not in last and len(last) < _INT_DIGITS else int(_decimal(last))
    )
    weights = (86400, 3600, 60, 1)[4 - len(numbers) :]
    return days * 86400 + sum(n * w for n, w in zip(numbers, weights, strict=True)), None


def parse_memory(text: str, unitless: str = "b") -> tuple[int | None, Problem | None]:
    """Read a PBS size into bytes.

    Parameters
    ----------
    text : str
        ``15240kb``, ``4gb``, ``2kw`` (words of 8 bytes), ``12.27M``, ``1024``.
    unitless : str, default "b"
        The unit (one of :data:`MEMORY_UNITS`) of a number written without one; PBS documents
        bytes, XDMoD assumes ``kb``.

    Returns
    -------
    tuple of (int or None, str or None)
        Bytes, rounded down, and a problem: ``"nonstandard"`` for decimals or a multiplier without
        ``b``/``w`` (read as binary multiples of bytes), ``"guessed"`` for a number without unit
        (other than 0), ``"unreadable"`` when the value is ``None``.

    Examples
    --------
    >>> parse_memory("12.27M")
    (12866027, 'nonstandard')
    >>> parse_memory("2kw")
    (16384, None)
    """
    match = re.fullmatch(_MEMORY, text)
    if match is None:
        return None, "unreadable"
    number, power, kind = match.groups()
    problem: Problem | None = None
    whole = "." not in number and len(number) < _INT_DIGITS
    if not power and not kind:
        power, kind = unitless[:-1], unitless[-1]
        if (int(number) if whole else _decimal(number)) != 0:
            problem = "guessed"
    elif not kind or "." in number:
        problem = "nonstandard"
    factor = 1024 ** _POWERS[power.lower()] * (8 if kind.lower() == "w" else 1)
    if whole:
        # exact in int, and so in Decimal when it fits its 28 digits; a larger product is
        # rounded there as before
        product = int(number) * factor
        if product < _EXACT_DECIMAL:
            return product, problem
    return int(_decimal(number) * factor), problem


if TYPE_CHECKING:

    class _ExecHostFields(NamedTuple):
        hosts: tuple[str, ...]
        cores: int
        gpus: int | None = None

else:  # a plain namedtuple: typing.NamedTuple would import typing
    _ExecHostFields = namedtuple("ExecHost", ("hosts", "cores", "gpus"), defaults=(None,))


class ExecHost(_ExecHostFields):
    """Hosts and cores of an ``exec_host`` or ``exec_vnode`` value.

    Attributes
    ----------
    hosts : tuple of str
        Distinct hosts, in the order they first appear.
    cores : int
        Cores: distinct (host, index) pairs plus the ``*ncpus`` counts (``exec_host``), or the
        sum of ``ncpus`` (``exec_vnode``).
    gpus : int or None
        Sum of ``ngpus`` (``exec_vnode`` only).
    """

    __slots__ = ()


def parse_exec_host(text: str) -> ExecHost | None:
    """Read an ``exec_host`` value; ``None`` when it has not the ``host/slots+...`` syntax.

    Examples
    --------
    >>> parse_exec_host("b391/0-1,5,11")
    ExecHost(hosts=('b391',), cores=4, gpus=None)
    >>> parse_exec_host("c1/0*13+c2/0*13").cores
    26
    """
    text = text.strip()
    if re.fullmatch(_SIMPLE_EXEC_HOST, text):  # one index or range per host: no set needed
        parts = re.findall(_EXEC_HOST_PART, text)
        hosts = tuple(dict.fromkeys(host for host, _, _ in parts))
        if len(hosts) == len(parts) and all(
            not high or int(high) >= int(low) for _, low, high in parts
        ):
            cores = sum(int(high) - int(low) + 1 if high else 1 for _, low, high in parts)
            return ExecHost(hosts, cores) if cores <= _MAX_INT32 else None
    pairs: dict[str, list[tuple[int, int]]] = {}
    counted = 0
    for chunk in text.split("+"):
        host, sep, slots = chunk.rpartition("/")
        if not sep or not host or not slots:
            return None
        ranges = pairs.setdefault(host, [])
        for item in slots.split(","):
            first, star, count = item.partition("*")
            if star:
                if not (re.fullmatch(_INT, first) and re.fullmatch(_INT, count)):
                    return None
                counted += int(count)
                continue
            low, dash, high = item.partition("-")
            if not re.fullmatch(_INT, low) or (dash and not re.fullmatch(_INT, high)):
                return None
            if dash and int(high) < int(low):
                return None
            ranges.append((int(low), int(high) if dash else int(low)))
    cores = counted + sum(_distinct(ranges) for ranges in pairs.values())
    return ExecHost(tuple(pairs), cores) if cores <= _MAX_INT32 else None


def _distinct(ranges: list[tuple[int, int]]) -> int:
    """Count the distinct integers of inclusive ranges, without enumerating them."""
    total = 0
    reach = -1  # the highest index counted so far
    for low, high in sorted(ranges):
        if high > reach:
            total += high - max(low, reach + 1) + 1
            reach = high
    return total


def parse_exec_vnode(text: str) -> ExecHost | None:
    """Read a PBS Pro ``exec_vnode`` value; ``None`` when it cannot be read.

    Vnodes named ``host[i]`` collapse to ``host``; cores and GPUs are the sums of ``ncpus`` and
    ``ngpus`` over all vnodes.

    Examples
    --------
    >>> parse_exec_vnode("(gpu07[1]:ncpus=24:ngpus=2+gpu07[0]:ncpus=24:ngpus=2)")
    ExecHost(hosts=('gpu07',), cores=48, gpus=4)
    """
    hosts: dict[str, None] = {}
    cores = 0
    gpus = 0
    for vnode in text.strip().replace("(", "").replace(")", "").split("+"):
        name, *resources = vnode.split(":")
        if not name:
            return None
        hosts[re.sub(_VNODE_SUFFIX, "", name)] = None
        for resource in resources:
            key, _, value = resource.partition("=")
            if key in ("ncpus", "ngpus"):
                if not re.fullmatch(_INT, value):
                    return None
                if key == "ncpus":
                    cores += int(value)
                else:
                    gpus += int(value)
    if cores > _MAX_INT32 or gpus > _MAX_INT32:
        return None
    return ExecHost(tuple(hosts), cores, gpus)


if TYPE_CHECKING:

    class _NodeRequestFields(NamedTuple):
        nodes: int
        cores: int
        gpus: int
        mem_bytes: int | None = None
        mem_problem: Problem | None = None

else:  # a plain namedtuple: typing.NamedTuple would import typing
    _NodeRequestFields = namedtuple(
        "NodeRequest",
        ("nodes", "cores", "gpus", "mem_bytes", "mem_problem"),
        defaults=(None, None),
    )


class NodeRequest(_NodeRequestFields):
    """Nodes, cores, GPUs and memory requested by a ``nodes`` spec or a ``select`` statement.

    ``mem_bytes`` is set only for ``select`` chunks that carry ``mem=``; ``mem_problem`` says
    how that memory was read.
    """

    __slots__ = ()


def parse_nodes_spec(text: str) -> NodeRequest | None:
    """Read a TORQUE ``Resource_List.nodes`` spec; ``None`` when it cannot be read.

    Each ``+``-part is a node count or a host name, then ``:``-separated ``ppn=``, ``gpus=``
    (or ``gpu=``), other ``key=value`` resources (ignored) and node features (ignored). A part
    without ``ppn`` asks for one core per node.

    Examples
    --------
    >>> parse_nodes_spec("2:ppn=4+4:ppn=1")
    NodeRequest(nodes=6, cores=12, gpus=0, mem_bytes=None, mem_problem=None)
    >>> parse_nodes_spec("n0815:ppn=4").cores
    4
    """
    nodes = cores = gpus = 0
    for part in text.strip().split("+"):
        first, *options = part.split(":")
        if re.fullmatch(_INT, first):
            count = int(first)
            if count == 0:
                return None
        elif re.fullmatch(_HOSTNAME, first):
            count = 1
        else:
            return None
        ppn = 1
        per_node_gpus = 0
        for option in options:
            key, sep, value = option.partition("=")
            if not sep:
                if not re.fullmatch(_FEATURE, key):
                    return None
                continue
            if key in ("ppn", "gpus", "gpu"):
                if not re.fullmatch(_INT, value):
                    return None
                if key == "ppn":
                    ppn = int(value)
                else:
                    per_node_gpus = int(value)
        nodes += count
        cores += count * ppn
        gpus += count * per_node_gpus
    if max(nodes, cores, gpus) > _MAX_INT32:
        return None
    return NodeRequest(nodes, cores, gpus)


def parse_select(text: str, unitless: str = "b") -> NodeRequest | None:
    """Read a PBS Pro ``Resource_List.select`` statement; ``None`` when it cannot be read.

    ``nodes`` is the number of chunks (PBS Pro may place several chunks on one host), ``cores``
    the sum of count × ``ncpus`` (default 1), ``gpus`` of count × ``ngpus``, ``mem_bytes`` of
    count × ``mem`` when every chunk gives ``mem``.

    Examples
    --------
    >>> parse_select("2:ncpus=8:mem=4gb")
    NodeRequest(nodes=2, cores=16, gpus=0, mem_bytes=8589934592, mem_problem=None)
    """
    nodes = cores = gpus = 0
    mem_total: int | None = 0
    mem_problem: Problem | None = None
    for chunk in text.strip().split("+"):
        first, *resources = chunk.split(":")
        if re.fullmatch(_INT, first):
            count = int(first)
        elif "=" in first:
            count = 1
            resources.insert(0, first)
        else:
            return None
        ncpus = 1
        ngpus = 0
        mem: int | None = None
        for resource in resources:
            key, sep, value = resource.partition("=")
            if not sep:
                return None
            if key in ("ncpus", "ngpus"):
                if not re.fullmatch(_INT, value):
                    return None
                if key == "ncpus":
                    ncpus = int(value)
                else:
                    ngpus = int(value)
            elif key == "mem":
                mem, problem = parse_memory(value, unitless)
                if mem is None:
                    return None
                mem_problem = mem_problem or problem
        nodes += count
        cores += count * ncpus
        gpus += count * ngpus
        mem_total = None if mem is None or mem_total is None else mem_total + count * mem
    if max(nodes, cores, gpus) > _MAX_INT32 or (mem_total or 0) > _MAX_INT64:
        return None
    return NodeRequest(nodes, cores, gpus, mem_total, mem_problem if mem_total else None)


def exit_signal(status: int) -> tuple[int | None, bool]:
    """Derive the signal that ended a job from its TORQUE/PBS ``Exit_status``.

    Returns
    -------
    tuple of (int or None, bool)
        ``status − 256`` for ``status > 256`` (the server saw the job killed by a signal);
        ``status − 128`` for 129..255 (a shell reporting 128 + signal: inferred, second element
        ``True``); otherwise ``None``, also for a status beyond int32 (no exit code holds it).
        Negative values are TORQUE ``JOB_EXEC_*`` codes.

    Examples
    --------
    >>> exit_signal(271)
    (15, False)
    >>> exit_signal(137)
    (9, True)
    """
    if not -_MAX_INT32 - 1 <= status <= _MAX_INT32:
        return None, False
    if status > 256:
        return status - 256, False
    if 128 < status < 256:
        return status - 128, True
    return None, False


def parse_job_id(text: str) -> tuple[int, int | None, bool] | None:
    """Split a job id into (sequence number, array index, is array parent).

    ``123.srv`` → (123, None, False); ``123[4].srv`` → (123, 4, False); ``123[].srv`` → (123,
    None, True); the TORQUE 2.x form ``123-4.srv`` → (123, 4, False). ``None`` when the id does
    not start with digits, or its number is beyond int64 (its index beyond int32).

    Examples
    --------
    >>> parse_job_id("123[4].pbs01.example.org")
    (123, 4, False)
    """
    match = re.fullmatch(_JOB_ID, text)
    if match is None:
        return None
    seq, bracket, dash = match.groups()
    number = int(seq)
    index = bracket or dash
    if number > _MAX_INT64 or (index and int(index) > _MAX_INT32):
        return None
    if bracket is not None:
        return (number, None, True) if bracket == "" else (number, int(bracket), False)
    return number, None if dash is None else int(dash), False
