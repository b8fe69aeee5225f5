"""The TORQUE / OpenPBS / PBS Pro accounting-log reader.

Reading is two steps. Each file is tokenised on its own into ``records`` and ``quarantine`` (this is
what runs in parallel, one file per worker, so memory stays bounded by the largest file); then the
records of all files, in time order, are assembled into ``jobs``, because a job's Q, S and E
records routinely sit in different daily files.

Files given out of time order (``20240503`` before ``20240502``, or rotation names such as
``accounting.1`` and ``accounting.2``, where the larger number is older) are put in the order of
their records' stamps before assembly; the summary counts them (``files_reordered``) and a
warning names the order taken. :data:`FLAGS` explains every flag the reader sets.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gridtrace._log import library_logger
from gridtrace.logs._base import (
    FileParse,
    ParseResult,
    parts_quarantine,
    parts_records,
    result_of_parts,
)
from gridtrace.logs._io import ReadReport, StrPath, guarded_pieces
from gridtrace.logs._stream import (
    DEFAULT_CHUNK_BYTES,
    Chunk,
    LineFormat,
    RangeSplit,
    file_reader,
    file_tokenizer,
)
from gridtrace.logs._torque_fast import contains_any, tokenize_torque_any
from gridtrace.logs._torque_flags import FLAGS
from gridtrace.logs._torque_jobs import (
    assemble_torque_jobs,
    assemble_torque_partition,
    file_stamps,
    measure_file_offsets,
    median_stamp,
    merge_placement,
    torque_partition_keys,
)
from gridtrace.logs._torque_jobs_fast import use_kernel
from gridtrace.logs._torque_lines import looks_like_torque
from gridtrace.logs._torque_pure import FLAVOUR_SNIFF_BYTES, PBSPRO_MARKERS, time_order

if TYPE_CHECKING:  # imported at first use: reading a file in memory needs none of _spill
    from gridtrace.logs._spill import PartitionAssembly, SpillFormat

__all__ = [
    "FLAGS",
    "TORQUE_SPILL",
    "assemble_torque",
    "in_time_order",
    "looks_like_torque",
    "read_torque",
    "time_order",
    "tokenize_torque_file",
]


logger = library_logger(__name__)

_PBSPRO_MARKERS = PBSPRO_MARKERS
_STAMP_FORMAT = "%m/%d/%Y %H:%M:%S"
_FLAVOUR_SNIFF_BYTES = FLAVOUR_SNIFF_BYTES
_LONGEST_MARKER = max(len(marker) for marker in _PBSPRO_MARKERS)


@dataclass
class _TorqueState:
    """What a TORQUE file's chunks share: the file (for the sniff) and its flavour."""

    path: StrPath
    flavour: str | None = None  # "torque" or "pbspro", decided at the first chunk


def _flavour_of(path: StrPath, first: Chunk) -> str:
    """Return the flavour of a file from its first :data:`_FLAVOUR_SNIFF_BYTES` bytes.

    ``first`` is the file's first chunk, the start of those bytes. When it is shorter and not
    the last, the rest of the head is the start of the next chunk, which the core holds already
    (``first.ahead``): no copy of the chunk, no second read. Only when the next chunk does not
    complete the head either (chunks much smaller than the head) is the head read again,
    through the same line guard, so that the flavour is that of the whole-file read whatever
    the chunk size (its findings are left to the tokenising pass, which reports them).

    The markers are searched by the compiled kernel when the file is tokenised by it (a file
    of several chunks, or a process that has loaded it), else by ``bytes`` searches.
    """
    data = first.data
    load = not first.final  # several chunks: the kernel tokenises them
    head = data if len(data) <= _FLAVOUR_SNIFF_BYTES else data[:_FLAVOUR_SNIFF_BYTES]
    if contains_any(head, _PBSPRO_MARKERS, load=load):
        return "pbspro"
    if first.final or len(head) >= _FLAVOUR_SNIFF_BYTES:
        return "torque"
    rest = _FLAVOUR_SNIFF_BYTES - len(head)
    if len(first.ahead) >= rest:
        # the head's last bytes along, in case a marker could straddle the two chunks
        tail = head[len(head) - _LONGEST_MARKER + 1 :] if len(head) >= _LONGEST_MARKER else head
        seam = tail + first.ahead[:rest]
        return "pbspro" if contains_any(seam, _PBSPRO_MARKERS, load=load) else "torque"
    pieces, size = [], 0
    for piece, _ in guarded_pieces(path, ReadReport(str(path), None), _FLAVOUR_SNIFF_BYTES):
        pieces.append(piece)
        size += len(piece)
        if size >= _FLAVOUR_SNIFF_BYTES:
            break
    head = b"".join(pieces)[:_FLAVOUR_SNIFF_BYTES]
    return "pbspro" if contains_any(head, _PBSPRO_MARKERS, load=load) else "torque"


def _tokenize_torque_chunk(
    chunk: Chunk, state: _TorqueState, *, site: str, src_file: str
) -> tuple[pa.Table, pa.Table]:
    """Tokenise one chunk of a TORQUE file: its ``records`` and ``quarantine`` rows."""
    if state.flavour is None:
        state.flavour = _flavour_of(state.path, chunk)
    parsed = tokenize_torque_any(
        chunk.data,
        src_file=src_file,
        site=site,
        source_format=state.flavour,
        first_line=chunk.first_line,
        whole=chunk.index == 0 and chunk.final,
        lines=chunk.lines,
    )
    return parsed.records, parsed.quarantine


def torque_stream(path: StrPath, *, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> LineFormat[Any]:
    """Return the TORQUE/PBS format of one file for the streaming core.

    Parameters
    ----------
    path : str or path-like
        The file (its flavour is sniffed from its head at the first chunk).
    chunk_bytes : int
        Decompressed bytes per chunk (not needed by the spec; the core's signature).

    Returns
    -------
    LineFormat
        For :func:`~gridtrace.logs._stream.tokenize_stream` or
        :func:`~gridtrace.logs._stream.write_stream` on that file.
    """
    return dataclasses.replace(TORQUE_STREAM, new_state=partial(_TorqueState, path))


TORQUE_STREAM: LineFormat[_TorqueState] = LineFormat(
    "torque",
    partial(_TorqueState, ""),
    _tokenize_torque_chunk,
    split=RangeSplit(
        head=partial(_flavour_of, first=Chunk(b"", 1, 0, 0, final=False)), start=_TorqueState
    ),
)
"""The TORQUE/PBS format for the streaming core (a file's own spec is :func:`torque_stream`'s).

A big file is split anywhere: each line is a record, and every range is read in the flavour
of the file's first 4 MiB."""


tokenize_torque_file = file_tokenizer(
    "torque",
    torque_stream,
    what="one TORQUE/PBS accounting file",
    notes="""
        Each chunk goes through the compiled kernel, except a process's first lines, read
        without it when the file is one chunk (see
        :func:`~gridtrace.logs._torque_fast.tokenize_torque_any`): the same rows, sooner.

        The flavour (``torque`` or ``pbspro``) recorded in ``source_format`` is recognised from
        markers only PBS Pro writes (licence records, ``exec_vnode``, ``run_count``) in the
        file's first 4 MiB, whatever the chunk size.
    """,
    rows="accounting line",
)


def _median_stamp(records: pa.Table, *, kernel: bool = False) -> float | None:
    """Return the median local stamp of a file's records, in seconds (None when it has none).

    ``kernel``: the stamps of the usual form read by the assembly's kernel (for a large log:
    the same seconds as ``strptime``, a third of the time).
    """
    if records.num_rows == 0:
        return None
    stamps = records.column("stamp")
    if kernel:
        return median_stamp(stamps, kernel=True)
    parsed = pc.strptime(stamps, format=_STAMP_FORMAT, unit="s", error_is_null=True)
    seconds = pc.drop_null(parsed.cast(pa.int64())).to_numpy()
    return float(np.median(seconds)) if len(seconds) else None


def in_time_order(parts: Sequence[FileParse]) -> tuple[list[FileParse], int]:
    """Order tokenised files by the median stamp of their records; say how many moved.

    Files in time order, and files with equal medians (a copy of a file), keep the order given;
    a file without readable records stays after the one before it.
    """
    ordered, moved, _ = _time_ordered(parts)
    return ordered, moved


def _time_ordered(
    parts: Sequence[FileParse],
) -> tuple[list[FileParse], int, np.ndarray[Any, np.dtype[np.int64]] | None]:
    """:func:`in_time_order`, and the stamps it read (naive seconds, in the new order).

    With the kernel (a large log) every file's stamps are read for its median, as the assembly
    reads them (:func:`~gridtrace.logs._torque_jobs.file_stamps`): kept, in the files' new
    order, so that the assembly does not read them again. None without the kernel.
    """
    kernel = use_kernel(sum(part.records.num_rows for part in parts))
    if not kernel:
        medians = [_median_stamp(part.records) for part in parts]
        order, moved = time_order(medians, [part.src_file for part in parts])
        return [parts[i] for i in order], moved, None
    stamps = [file_stamps(part.records.column("stamp"), kernel=True) for part in parts]
    medians = [median_stamp(seconds, kernel=True) for seconds in stamps]
    order, moved = time_order(medians, [part.src_file for part in parts])
    naive = np.concatenate([stamps[i] for i in order] or [np.empty(0, dtype=np.int64)])
    return [parts[i] for i in order], moved, naive


def _nul_bytes(*columns: pa.ChunkedArray[Any]) -> int:
    total = 0
    for column in columns:
        found = pc.sum(pc.count_substring(column, "\x00")).as_py()
        total += int(found or 0)
    return total


def assemble_torque(
    parts: Sequence[FileParse], *, tz: str | None = None, unitless_memory: str = "b"
) -> ParseResult:
    """Assemble tokenised files into a :class:`ParseResult`, in the time order of their records.

    Parameters
    ----------
    parts : sequence of FileParse
        The tokenised files, in any order (see :func:`in_time_order`).
    tz : str, optional
        The site's IANA zone (see :func:`read_torque`).
    unitless_memory : str, default "b"
        The unit of memory values logged without one.

    Returns
    -------
    ParseResult
        Its ``info`` adds ``files_reordered`` (files moved into time order) and
        ``nul_bytes_stripped`` (NUL bytes removed from parsed lines or found in quarantined
        ones) to the assembly's facts.
    """
    parts, moved, naive = _time_ordered(parts)
    records = parts_records(parts)
    quarantine = parts_quarantine(parts)
    assembly = assemble_torque_jobs(records, tz=tz, unitless_memory=unitless_memory, naive=naive)
    return result_of_parts(
        parts,
        records=assembly.records,
        jobs=assembly.jobs,
        quarantine=quarantine,
        tz_offset_s=assembly.tz_offset_s,
        info={
            "format": "torque",
            **assembly.info,
            "files_reordered": moved,
            "nul_bytes_stripped": _nul_bytes(records.column("raw"), quarantine.column("raw")),
        },
    )


read_torque = file_reader(
    "torque",
    tokenize_torque_file,
    assemble_torque,
    what="TORQUE / OpenPBS / PBS Pro accounting logs",
    paths="""
        Files and directories of daily files (plain or gzip/bzip2/xz, detected by content).
        Directories are read in the date order of their file names.
    """,
    assemble_options=["tz", "unitless_memory"],
    options_doc="""
        tz : str, optional
            The site's IANA time zone (e.g. ``"Europe/Brussels"``). Times always come from the
            epochs in the log; the zone only places the records that carry nothing but their
            local stamp. Without it the offset is inferred from the records that carry both.
        unitless_memory : str, default "b"
            The unit assumed for memory values logged without one (each such value is
            flagged).
    """,
    first_bad="unreadable line, naming its file and line",
    examples="""
        >>> result = read_torque("/var/spool/torque/server_priv/accounting")  # doctest: +SKIP
        >>> result.summary()["lines_quarantined"]  # doctest: +SKIP
        0
    """,
)


# --------------------------------------------------------------------------------------------
# out-of-core assembly (gridtrace.logs._spill)

# the facts of assemble_torque_jobs that are counts: summed over partitions
_PLACEMENT_KEYS = frozenset(
    {"tz", "tz_offset_s", "tz_source", "offsets_seen", "offset_outliers", "dst"}
    | {"zone_offset_mismatches", "dst_ambiguous_records", "dst_gap_records"}
)


def _spill_prepare(
    part: FileParse, tz: str | None
) -> tuple[dict[str, np.ndarray[Any, Any]], dict[str, Any]]:
    placed = measure_file_offsets(part.records, tz)
    facts = {
        **placed.facts,
        "median_stamp": _median_stamp(part.records),
        "nul_bytes": _nul_bytes(part.records.column("raw"), part.quarantine.column("raw")),
    }
    return {"_offset": placed.offset, "_dst": placed.dst}, facts


def _spill_context(
    facts: list[dict[str, Any]], tz: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    dominant, info = merge_placement(facts, tz)
    return {"dominant": dominant}, {"tz": tz, "tz_offset_s": dominant, **info}


def _spill_assemble(
    records: pa.Table,
    columns: dict[str, np.ndarray[Any, Any]],
    context: dict[str, Any],
    tz: str | None,
) -> PartitionAssembly:
    from gridtrace.logs._spill import PartitionAssembly

    assembly = assemble_torque_partition(
        records, columns["_offset"], columns["_dst"], tz=tz, dominant=context["dominant"]
    )
    return PartitionAssembly(
        assembly.records, assembly.jobs, assembly.job_first_rows, assembly.info
    )


def _spill_merge_info(
    infos: list[dict[str, Any]], placement: dict[str, Any], facts: list[dict[str, Any]]
) -> dict[str, Any]:
    """Return the facts of :func:`assemble_torque`: placement from the first pass, counts summed."""
    full = [info for info in infos if "attempts" in info]  # partitions that had records
    nul_bytes = sum(f["nul_bytes"] for f in facts)
    if not full:
        tz = placement["tz"]
        return {
            "format": "torque",
            "tz": tz,
            "tz_source": "given" if tz else None,
            "files_reordered": 0,
            "nul_bytes_stripped": nul_bytes,
        }
    merged: dict[str, Any] = {"format": "torque", **placement}
    for key in full[0]:
        if key in _PLACEMENT_KEYS:
            continue
        if key == "jobs_by_state":
            states: dict[str, int] = {}
            for info in full:
                for state, count in info[key].items():
                    states[state] = states.get(state, 0) + count
            merged[key] = dict(sorted(states.items()))
        else:
            merged[key] = sum(info[key] for info in full)
    merged["files_reordered"] = 0
    merged["nul_bytes_stripped"] = nul_bytes
    return merged


TORQUE_SPILL: SpillFormat
"""How :func:`gridtrace.logs._spill.spill_parse` reads TORQUE/PBS logs out of core.

Built at first use (a module ``__getattr__``), so that importing this module for an in-memory
read does not import :mod:`gridtrace.logs._spill` (~12 ms); the same object on every access.

Facts of :func:`assemble_torque` and how the spill path keeps them exact: the stamp placement
(offsets measured, carried along each file, zone and DST flags) is per file, done in the spill
pass; the dominant offset (the fallback of files without any, and ``tz_offset_s``), the offsets
seen, outliers and DST counts are summed from every file's counts; duplicate lines meet in one
partition (same id, same hash), so ``duplicate_lines`` and the ``DUPLICATE`` flags are exact; the
other counts (attempts, jobs, states, truncated records, ...) are per job and summed; the file
order (``files_reordered``) comes from each file's median stamp.
"""


def _torque_spill() -> SpillFormat:
    from gridtrace.logs._spill import SpillFormat

    return SpillFormat(
        name="torque",
        prepare=_spill_prepare,
        keys=torque_partition_keys,
        context=_spill_context,
        assemble=_spill_assemble,
        merge_info=_spill_merge_info,
    )


def __getattr__(name: str) -> Any:
    """Build :data:`TORQUE_SPILL` at its first access (the registry looks it up by name)."""
    if name == "TORQUE_SPILL":
        spill = _torque_spill()
        globals()[name] = spill  # later accesses find it without this function
        return spill
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
