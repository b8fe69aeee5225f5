"""Out-of-core assembly of Slurm, SGE and LSF logs: the SpillFormat of each.

Each format's own ``assemble_<fmt>`` runs unchanged on one partition's records (in their order
in the whole log); this module only says which records must meet in one partition, and how the
facts that the in-memory assembly computes over the whole table are kept exact.

Slurm (``sacct``)
    Records are grouped by the root of their ``JobID``: the text before the first ``_``, ``+``
    or ``.`` (a number when it is one, so ``0123`` meets ``123``, as their array keys do). A
    job's steps (``123.batch``, ``123.0``), its array tasks (``123_4``, and a range line
    ``123_[1-3]`` that expands to them), het components (``123+0``) and every copy of a line
    share it, so attempts, steps folded into their job, orphan steps, ``DUPLICATE`` rows and
    ``duplicate_lines`` are exact. ``slurm_clusters`` is the union of the partitions' names,
    the step, orphan, range and duplicate counts are summed; ``tz_offset_s`` (the most common
    job offset, the smallest on a tie) comes from the offsets counted per partition;
    ``nul_lines``/``nul_bytes`` are counted per file from its quarantine in the spill pass.
SGE (``accounting``)
    Records are grouped by ``job_number`` (as the number the assembly reads): a job's tasks,
    attempts, PE slave records and duplicated records meet, so folding, adopted submission
    times and attempts are exact. ``sge_versions`` (``# Version`` header lines, in order of
    first appearance) is read per file in the spill pass and merged in reading order;
    ``sge_millisecond_files`` is the union of the partitions' lists, in reading order; the
    other counts are summed.
LSF (``lsb.acct``)
    Records are grouped by ``job_id_raw`` (the text the assembly groups attempts by); copies of a
    line share it. ``lsf_versions`` is the sorted union, ``lsf_events`` and ``duplicate_lines``
    are summed. A file is not split by byte ranges (a record may span lines); it is spilled as
    the streaming core tokenises it, batch by batch (:attr:`SpillFormat.stream`), so a big file's
    spill task holds one batch of records, not the file's.

None of these formats reorders its files: the reading order is the order given.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from gridtrace.errors import GridtraceError
from gridtrace.logs._base import FileParse, ParseResult
from gridtrace.logs._spill import PartitionAssembly, SpillFormat
from gridtrace.logs._text import nul_fragment_counts
from gridtrace.logs._torque_jobs import _splitmix, _text_hashes
from gridtrace.schema import QUARANTINE

if TYPE_CHECKING:
    from gridtrace.logs._stream import LineFormat

__all__ = ["LSF_SPILL", "SGE_SPILL", "SLURM_SPILL", "job_first_rows"]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
Columns = dict[str, npt.NDArray[Any]]
Facts = dict[str, Any]

_OFFSETS = "_tz_offsets"  # a partition's job offsets, counted (Slurm): merged, then dropped


def _number_hashes(values: npt.NDArray[np.float64]) -> U64:
    """Return a stable hash of each number (NaN all alike, -0.0 as 0.0)."""
    clean = np.where(np.isnan(values), 0.0, values + 0.0).astype(np.float64)
    bits = clean.view(np.uint64)
    return _splitmix(np.where(np.isnan(values), np.uint64(0x5F3759DF), bits).astype(np.uint64))


def job_first_rows(records: pa.Table, jobs: pa.Table) -> I64:
    """Return, for each job row, the row of ``records`` its ``(src_file, src_line)`` names.

    The formats of this module make each job row from one record (one line), so the record's
    position in the whole log is where the job appears.
    """
    if not jobs.num_rows:
        return np.empty(0, np.int64)
    files = pc.unique(records.column("src_file").combine_chunks().cast(pa.string()))
    rec_file = pc.index_in(records.column("src_file").cast(pa.string()), value_set=files)
    job_file = pc.index_in(jobs.column("src_file").cast(pa.string()), value_set=files)
    rec_key = (
        np.asarray(rec_file.to_numpy(zero_copy_only=False), np.int64) << np.int64(40)
    ) + np.asarray(records.column("src_line").to_numpy(), np.int64)
    job_key = (
        np.asarray(job_file.to_numpy(zero_copy_only=False), np.int64) << np.int64(40)
    ) + np.asarray(jobs.column("src_line").to_numpy(), np.int64)
    order = np.argsort(rec_key, kind="stable")
    where = np.searchsorted(rec_key[order], job_key)
    found = order[np.minimum(where, len(order) - 1)]
    if not (rec_key[found] == job_key).all():  # pragma: no cover - a reader that changed
        msg = (
            "out-of-core assembly: a job row names no record of its partition (a defect of the "
            "reader, not of the log); parse without --spill and report it"
        )
        raise GridtraceError(msg)
    return np.asarray(found, dtype=np.int64)


def _nul_prepare(part: FileParse, tz: str | None) -> tuple[Columns, Facts]:
    del tz
    return {}, {"src_file": part.src_file, **nul_fragment_counts(part.quarantine)}


def _no_context(facts: list[Facts], tz: str | None) -> tuple[Facts, Facts]:
    del facts
    return {}, {"tz": tz}


def _assembled(
    assemble: Callable[..., ParseResult], records: pa.Table, tz: str | None
) -> ParseResult:
    part = FileParse("", records, QUARANTINE.empty_table(), records.num_rows)
    return assemble([part], tz=tz)


def _nul_counts(facts: list[Facts]) -> Facts:
    return {
        "nul_lines": sum(int(f["nul_lines"]) for f in facts),
        "nul_bytes": sum(int(f["nul_bytes"]) for f in facts),
    }


def _sum(infos: Sequence[Facts], key: str) -> int:
    return sum(int(info[key]) for info in infos)


# --------------------------------------------------------------------------------------------
# Slurm


def slurm_partition_keys(records: pa.Table) -> U64:
    """Return a stable hash per record: that of its ``JobID``'s root (see the module's text)."""
    from gridtrace.logs._slurm import _floats, _lookup

    if not records.num_rows:
        return np.empty(0, np.uint64)
    job_id = pc.fill_null(_lookup(records, "JobID"), "")
    root = pc.replace_substring_regex(job_id, r"[._+].*$", "")
    number = _floats(root)
    return np.where(np.isnan(number), _text_hashes(root), _number_hashes(number)).astype(np.uint64)


def _slurm_assemble(
    records: pa.Table, columns: Columns, context: Facts, tz: str | None
) -> PartitionAssembly:
    from gridtrace.logs._slurm import assemble_slurm

    del columns, context
    result = _assembled(assemble_slurm, records, tz)
    offsets = result.jobs.column("tz_offset_s").drop_null().to_numpy()
    values, counts = np.unique(offsets, return_counts=True)
    info = {**result.info, _OFFSETS: dict(zip(values.tolist(), counts.tolist(), strict=True))}
    return PartitionAssembly(
        result.records, result.jobs, job_first_rows(records, result.jobs), info
    )


def _slurm_merge_info(infos: list[Facts], first: Facts, facts: list[Facts]) -> Facts:
    offsets: Counter[int] = Counter()
    for info in infos:
        offsets.update(info[_OFFSETS])
    tz_offset: int | None = None
    if offsets:
        values = sorted(offsets)
        tz_offset = int(values[int(np.argmax([offsets[v] for v in values]))])
    clusters = sorted({c for info in infos for c in info["slurm_clusters"]})
    return {
        "format": "slurm",
        "tz": first["tz"],
        "slurm_clusters": clusters,
        "slurm_steps": _sum(infos, "slurm_steps"),
        "slurm_orphan_steps": _sum(infos, "slurm_orphan_steps"),
        "slurm_array_ranges": _sum(infos, "slurm_array_ranges"),
        "duplicate_lines": _sum(infos, "duplicate_lines"),
        **_nul_counts(facts),
        "tz_offset_s": tz_offset,
    }


SLURM_SPILL = SpillFormat(
    name="slurm",
    prepare=_nul_prepare,
    keys=slurm_partition_keys,
    context=_no_context,
    assemble=_slurm_assemble,
    merge_info=_slurm_merge_info,
    record_bytes=3.0,  # 1.2 kB of records a sacct line of ~400 bytes (real dumps, 2.4-3.4)
)
"""How :func:`gridtrace.logs._spill.spill_parse` reads Slurm ``sacct`` dumps out of core."""


# --------------------------------------------------------------------------------------------
# SGE


def sge_partition_keys(records: pa.Table) -> U64:
    """Return a stable hash per record: that of its ``job_number`` (``J`` and ``PE`` records)."""
    from gridtrace.logs._sge import _Fields

    n = records.num_rows
    keys = np.zeros(n, np.uint64)
    if not n:
        return keys
    kinds = records.column("record_type")
    rows = np.flatnonzero(
        np.asarray(pc.is_in(kinds, pa.array(["J", "PE"])).to_numpy(zero_copy_only=False), bool)
    )
    if len(rows):
        # one field of the attrs column, read in place chunk by chunk: taking the rows' records
        # first copied the whole table (its attrs map most of all), and combining the chunks
        # copied the map, which made the keys the peak of a spill task; a row that is not J or
        # PE gets a number here too, and keeps its key 0
        attrs = records.column("attrs")
        number = np.concatenate(
            [np.zeros(0)]
            + [_Fields(pa.table({"attrs": chunk})).number("job_number") for chunk in attrs.chunks]
        )
        keys[rows] = _number_hashes(number[rows])
    return keys


def _sge_prepare(part: FileParse, tz: str | None) -> tuple[Columns, Facts]:
    columns, facts = _nul_prepare(part, tz)
    heads = part.records.filter(pc.equal(part.records.column("record_type"), pa.scalar("H")))
    versions: list[str] = []
    for attrs in heads.column("attrs").to_pylist():
        for key, value in attrs or ():
            if key == "version" and value not in versions:
                versions.append(value)
    return columns, {**facts, "sge_versions": versions}


def _sge_assemble(
    records: pa.Table, columns: Columns, context: Facts, tz: str | None
) -> PartitionAssembly:
    from gridtrace.logs._sge import assemble_sge

    del columns, context
    result = _assembled(assemble_sge, records, tz)
    return PartitionAssembly(
        result.records, result.jobs, job_first_rows(records, result.jobs), dict(result.info)
    )


def _sge_merge_info(infos: list[Facts], first: Facts, facts: list[Facts]) -> Facts:
    del first
    versions: list[str] = []
    for fact in facts:
        versions.extend(v for v in fact["sge_versions"] if v not in versions)
    ms_files = {f for info in infos for f in info["sge_millisecond_files"]}
    ordered: list[str] = []
    for fact in facts:  # reading order, each file once
        if fact["src_file"] in ms_files and fact["src_file"] not in ordered:
            ordered.append(fact["src_file"])
    return {
        "format": "sge",
        "sge_versions": versions,
        "sge_millisecond_files": ordered,
        "sge_realigned": _sum(infos, "sge_realigned"),
        "sge_pe_slaves": _sum(infos, "sge_pe_slaves"),
        "sge_orphan_pe_slaves": _sum(infos, "sge_orphan_pe_slaves"),
        "sge_duplicates_folded": _sum(infos, "sge_duplicates_folded"),
        **_nul_counts(facts),
    }


SGE_SPILL = SpillFormat(
    name="sge",
    prepare=_sge_prepare,
    keys=sge_partition_keys,
    context=_no_context,
    assemble=_sge_assemble,
    merge_info=_sge_merge_info,
    record_bytes=4.0,  # about 1.1 kB of records a line of ~260 bytes (real files, 3.2-4.1)
)
"""How :func:`gridtrace.logs._spill.spill_parse` reads Grid Engine accounting files out of core."""


# --------------------------------------------------------------------------------------------
# LSF


def lsf_partition_keys(records: pa.Table) -> U64:
    """Return a stable hash per record: that of its ``job_id_raw``."""
    if not records.num_rows:
        return np.empty(0, np.uint64)
    return _text_hashes(records.column("job_id_raw").combine_chunks())


def _lsf_assemble(
    records: pa.Table, columns: Columns, context: Facts, tz: str | None
) -> PartitionAssembly:
    from gridtrace.logs._lsf import assemble_lsf

    del columns, context
    result = _assembled(assemble_lsf, records, tz)
    return PartitionAssembly(
        result.records, result.jobs, job_first_rows(records, result.jobs), dict(result.info)
    )


def _lsf_merge_info(infos: list[Facts], first: Facts, facts: list[Facts]) -> Facts:
    del first
    events: Counter[str] = Counter()
    for info in infos:
        events.update(info["lsf_events"])
    return {
        "format": "lsf",
        "lsf_versions": sorted({v for info in infos for v in info["lsf_versions"]}),
        "lsf_events": dict(sorted(events.items())),
        "duplicate_lines": _sum(infos, "duplicate_lines"),
        **_nul_counts(facts),
    }


def _lsf_stream(path: str) -> LineFormat[Any]:
    from gridtrace.logs._lsf import LSF_STREAM

    del path
    return LSF_STREAM


LSF_SPILL = SpillFormat(
    name="lsf",
    prepare=_nul_prepare,
    keys=lsf_partition_keys,
    context=_no_context,
    assemble=_lsf_assemble,
    merge_info=_lsf_merge_info,
    stream=_lsf_stream,
    record_bytes=4.3,  # 2.6 kB of records a JOB_FINISH line of ~610 bytes
)
"""How :func:`gridtrace.logs._spill.spill_parse` reads LSF ``lsb.acct`` files out of core."""
