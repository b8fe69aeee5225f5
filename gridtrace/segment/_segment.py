"""``segment``: cut a trace into stable, representative periods (parsers.md §11)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError
from gridtrace.schema import SEGMENTS, validate, with_trace_metadata
from gridtrace.segment._compare import Group, Thresholds, compare, js_divergence, ks_distance_sorted
from gridtrace.segment._pool import (
    DAY_S,
    PoolBoundary,
    PoolSignal,
    pool_boundaries,
    pool_from_jobs,
    pool_from_trace,
)
from gridtrace.segment._workload import block_features, vo_groups, workload_breaks
from gridtrace.stats._characterise import shares
from gridtrace.stats._columns import DEFAULT_TAU_S, F64, TraceArrays, json_safe, trace_arrays
from gridtrace.stats._measures import core_weighted_load, utilisation_factor

__all__ = ["SegmentParams", "Segmentation", "segment", "segment_trace"]

logger = library_logger(__name__)


@dataclass(frozen=True, slots=True)
class SegmentParams:
    """Every parameter of the segmentation; the result is a deterministic function of them.

    Attributes
    ----------
    min_jobs : int, default 10,000
        N_min: no segment has fewer jobs (unless the whole trace has).
    block_jobs : int, default 500
        B: jobs per block of the workload features.
    top_vos : int, default 5
        VOs with their own share feature; the rest are "other".
    kernel : {"linear", "rbf"}, default "linear"
        ``ruptures.KernelCPD`` kernel for the workload change points.
    penalty_scale : float or None, default None
        ``c`` of the penalty ``c · d · log(blocks)``; None chooses it by the elbow rule.
    thresholds : Thresholds
        Effect sizes below which adjacent segments are merged.
    pool_penalty_scale : float, default 1
        ``c`` of the pool change-point penalty.
    pool_min_days, pool_window_days : int, default 7
        Shortest pool period and the window of the confirmation, in days.
    pool_jaccard_max : float, default 0.9
        Host-set overlap below which a pool change is confirmed.
    pool_proxy_change_min : float, default 0.1
        Without hosts: relative change of peak cores in use that confirms a pool change.
    tau_s : float or None
        Interactive threshold; default the trace's, else 900 s.
    """

    min_jobs: int = 10_000
    block_jobs: int = 500
    top_vos: int = 5
    kernel: str = "linear"
    penalty_scale: float | None = None
    thresholds: Thresholds = field(default_factory=Thresholds)
    pool_penalty_scale: float = 1.0
    pool_min_days: int = 7
    pool_window_days: int = 7
    pool_jaccard_max: float = 0.9
    pool_proxy_change_min: float = 0.1
    tau_s: float | None = None

    def __post_init__(self) -> None:
        problems = []
        if self.min_jobs < 2:
            problems.append("min_jobs >= 2")
        if not 2 <= self.block_jobs <= self.min_jobs:
            problems.append("2 <= block_jobs <= min_jobs")
        if self.top_vos < 0:
            problems.append("top_vos >= 0")
        if self.kernel not in ("linear", "rbf"):
            problems.append("kernel 'linear' or 'rbf'")
        if self.penalty_scale is not None and not self.penalty_scale > 0:
            problems.append("penalty_scale > 0")
        if self.pool_min_days < 1 or self.pool_window_days < 1:
            problems.append("pool_min_days, pool_window_days >= 1")
        if self.tau_s is not None and not self.tau_s > 0:
            problems.append("tau_s > 0")
        if problems:
            msg = "segmentation parameters need " + ", ".join(problems)
            raise ConfigError(msg)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types."""
        out: dict[str, Any] = json_safe(asdict(self))
        return out


@dataclass(frozen=True)
class Segmentation:
    """The segments of a trace and how they were found.

    Attributes
    ----------
    segments : pyarrow.Table
        The ``segments`` table (:data:`gridtrace.schema.SEGMENTS`); its metadata holds
        ``segmentation``, the JSON of :meth:`info`.
    pool_source : str or None
        "hosts", "peak-cores-in-use" or None (pool not checked).
    pool_boundaries : tuple of PoolBoundary
        Confirmed pool changes (including those absorbed because their period was too short).
    notes : tuple of str
        What the reader must know (missing signals, absorbed pool changes, ...).
    diagnostics : dict
        Pool candidates, the per-interval penalty curves, and the merges.
    params : SegmentParams
    """

    segments: pa.Table
    pool_source: str | None
    pool_boundaries: tuple[PoolBoundary, ...]
    notes: tuple[str, ...]
    diagnostics: dict[str, Any]
    params: SegmentParams

    def info(self) -> dict[str, Any]:
        """Everything but the table, in plain JSON types."""
        out: dict[str, Any] = json_safe(
            {
                "params": self.params.to_dict(),
                "pool_source": self.pool_source,
                "pool_boundaries": [b.to_dict() for b in self.pool_boundaries],
                "notes": list(self.notes),
                "diagnostics": self.diagnostics,
            }
        )
        return out


@dataclass
class _Interval:
    start: int
    stop: int
    level: float
    pool_reason: str = "start"
    absorbed: tuple[int, ...] = ()


def _origin_s(arrays: TraceArrays) -> float | None:
    if arrays.origin is None:
        return None
    return float(arrays.origin.value // 1_000_000_000)


def _day0(arrays: TraceArrays) -> float:
    origin = _origin_s(arrays)
    if origin is None:
        return float(arrays.submit[0])
    return math.floor(origin / DAY_S) * DAY_S - origin


def _pool_intervals(
    arrays: TraceArrays, signal: PoolSignal | None, params: SegmentParams, notes: list[str]
) -> tuple[list[_Interval], list[PoolBoundary], list[dict[str, Any]]]:
    n = len(arrays)
    if signal is None:
        return [_Interval(0, n, math.nan)], [], []
    found, candidates = pool_boundaries(
        signal,
        penalty_scale=params.pool_penalty_scale,
        min_days=params.pool_min_days,
        window_days=params.pool_window_days,
        jaccard_max=params.pool_jaccard_max,
        proxy_change_min=params.pool_proxy_change_min,
    )
    cuts = [int(np.searchsorted(arrays.submit, b.time_s, side="left")) for b in found]
    edges = [0, *cuts, n]
    intervals: list[_Interval] = []
    days = signal.cores.size
    for i in range(len(edges) - 1):
        first_day = found[i - 1].day if i > 0 else 0
        last_day = found[i].day if i < len(found) else days
        active = signal.active[first_day:last_day]
        level = float(np.median(signal.cores[first_day:last_day][active])) if active.any() else 0.0
        reason = "pool" if i > 0 else "start"
        intervals.append(_Interval(edges[i], edges[i + 1], level, reason))
    intervals = [iv for iv in intervals if iv.stop > iv.start]
    while len(intervals) > 1:
        small = [i for i, iv in enumerate(intervals) if iv.stop - iv.start < params.min_jobs]
        if not small:
            break
        i = min(small, key=lambda k: (intervals[k].stop - intervals[k].start, k))
        neighbours = [j for j in (i - 1, i + 1) if 0 <= j < len(intervals)]
        j = min(neighbours, key=lambda k: (abs(intervals[k].level - intervals[i].level), k))
        a, b = sorted((i, j))
        left, right = intervals[a], intervals[b]
        notes.append(
            f"pool change at row {right.start} absorbed: the pool period of "
            f"{intervals[i].stop - intervals[i].start} jobs is shorter than min_jobs; "
            "the segment that contains it is marked pool_stable = false"
        )
        bigger = left if left.stop - left.start >= right.stop - right.start else right
        absorbed = (*left.absorbed, right.start, *right.absorbed)
        intervals[a : b + 1] = [
            _Interval(left.start, right.stop, bigger.level, left.pool_reason, absorbed)
        ]
    return intervals, found, candidates


def _as_log_run(run: F64) -> F64:
    return np.asarray(np.log1p(np.maximum(run, 0.0)), dtype=np.float64)


def segment(
    data: pa.Table,
    *,
    jobs: pa.Table | None = None,
    cores: int | None = None,
    params: SegmentParams | None = None,
) -> Segmentation:
    """Segment a trace into stable periods of at least ``min_jobs`` jobs.

    Steps (``shared/reference/parsers.md`` §11): machine-pool boundaries from the jobs' hosts
    (or, with only a trace, the daily peak cores in use), workload change points on blocks of
    B jobs inside each pool period, then merging of adjacent segments whose differences are
    small by effect size. Each segment records what caused the boundary at its start.

    Parameters
    ----------
    data : pyarrow.Table
        A ``trace`` table, or a ``jobs`` table (recognised by its ``job_key`` column; the trace
        is then built with :func:`gridtrace.logs.build_trace` and the pool read from its hosts).
    jobs : pyarrow.Table, optional
        With a trace: the ``jobs`` table it was built from, for the pool's hosts.
    cores : int, optional
        P for every segment's U and ρ; default each segment's pool cores when hosts are known,
        else the trace metadata's P.
    params : SegmentParams, optional

    Returns
    -------
    Segmentation

    Raises
    ------
    ConfigError
        If the trace is empty or P is unknown.
    """
    params = params or SegmentParams()
    notes: list[str] = []
    if "job_key" in data.column_names:
        from gridtrace.logs import build_trace

        jobs = data
        data = build_trace(jobs, tau_s=params.tau_s or DEFAULT_TAU_S, cores=cores)
        notes.append("trace built from the jobs table with build_trace (monitoring jobs left out)")
    arrays = trace_arrays(data)
    n = len(arrays)
    if n == 0:
        msg = "cannot segment an empty trace"
        raise ConfigError(msg)
    meta_cores = int(arrays.metadata["cores"]) if "cores" in arrays.metadata else None
    if cores is None and meta_cores is None:
        msg = "the trace has no cores P in its metadata; pass cores="
        raise ConfigError(msg)
    tau = params.tau_s or float(arrays.metadata.get("tau_s", DEFAULT_TAU_S))
    day0 = _day0(arrays)
    signal: PoolSignal | None = None
    origin = _origin_s(arrays)
    if jobs is not None and origin is not None:
        signal = pool_from_jobs(jobs, origin_s=origin, day0_s=day0)
        if signal is None:
            notes.append("the jobs table names no execution hosts")
    elif jobs is not None:
        notes.append("the trace has no origin: the jobs' hosts cannot be placed on its clock")
    if signal is None:
        signal = pool_from_trace(arrays, day0_s=day0)
        if signal is not None:
            notes.append(
                "no execution hosts: pool changes inferred from the daily peak cores in use "
                "(a proxy; not confirmed by host sets)"
            )
        else:
            notes.append("no execution hosts and too few logged waits: pool stability NOT checked")
    intervals, found, candidates = _pool_intervals(arrays, signal, params, notes)

    log_run = _as_log_run(arrays.run)
    labels = max(len(arrays.vo_labels), 1)
    vo_index, _, groups = vo_groups(arrays.vo_codes, labels, params.top_vos)
    min_blocks = math.ceil(params.min_jobs / params.block_jobs)
    cuts: list[tuple[int, str]] = []  # (start row, pool reason)
    absorbed = [row for iv in intervals for row in iv.absorbed]
    penalty_info: list[dict[str, Any]] = []
    for iv in intervals:
        cuts.append((iv.start, iv.pool_reason))
        rows = slice(iv.start, iv.stop)
        features, starts, names = block_features(
            arrays.submit[rows],
            log_run[rows],
            vo_index[rows],
            groups,
            arrays.cores[rows],
            params.block_jobs,
        )
        breaks, info = workload_breaks(
            features,
            min_blocks=min_blocks,
            kernel=params.kernel,
            penalty_scale=params.penalty_scale,
        )
        info.update({"rows": [iv.start, iv.stop], "features": names})
        penalty_info.append(info)
        cuts.extend((iv.start + int(starts[b]), "") for b in breaks)

    merged, merges = _merge(arrays, log_run, cuts, params.thresholds, labels)
    for piece in merged:
        inside = [r for r in absorbed if piece.group.start < r < piece.group.stop]
        piece.stable = signal is not None and not inside
    table = _table(arrays, log_run, merged, signal, cores, meta_cores, tau, params, labels)
    segmentation = Segmentation(
        segments=table,
        pool_source=None if signal is None else signal.source,
        pool_boundaries=tuple(found),
        notes=tuple(notes),
        diagnostics={
            "pool_candidates": candidates,
            "workload": penalty_info,
            "merges": merges,
        },
        params=params,
    )
    info_json = json.dumps(segmentation.info(), sort_keys=True).encode()
    meta = dict(table.schema.metadata or {})
    meta[b"segmentation"] = info_json
    return Segmentation(
        segments=table.replace_schema_metadata(meta),
        pool_source=segmentation.pool_source,
        pool_boundaries=segmentation.pool_boundaries,
        notes=segmentation.notes,
        diagnostics=segmentation.diagnostics,
        params=params,
    )


@dataclass
class _Piece:
    group: Group
    pool_reason: str
    signals: list[str]
    evidence: dict[str, Any]
    stable: bool = True


def _merge(
    arrays: TraceArrays,
    log_run: F64,
    cuts: list[tuple[int, str]],
    thresholds: Thresholds,
    labels: int,
) -> tuple[list[_Piece], list[dict[str, Any]]]:
    n = len(arrays)
    starts = [c[0] for c in cuts] + [n]

    def group(a: int, b: int) -> Group:
        return Group.of(arrays.submit, log_run, arrays.vo_codes, arrays.cores, labels, a, b)

    pieces = [_Piece(group(starts[i], starts[i + 1]), cuts[i][1], [], {}) for i in range(len(cuts))]
    comparisons: list[dict[str, Any] | None] = [None] * len(pieces)
    merges: list[dict[str, Any]] = []

    def refresh(i: int) -> None:
        # comparison of piece i with piece i - 1
        if i == 0 or i >= len(pieces):
            return
        comparisons[i] = compare(pieces[i - 1].group, pieces[i].group, thresholds)

    for i in range(1, len(pieces)):
        refresh(i)
    while True:
        mergeable = [
            i
            for i in range(1, len(pieces))
            if not pieces[i].pool_reason
            and comparisons[i] is not None
            and not comparisons[i]["signals"]  # type: ignore[index]
        ]
        if not mergeable:
            break
        i = min(mergeable, key=lambda k: (comparisons[k]["score"], k))  # type: ignore[index]
        left, right = pieces[i - 1], pieces[i]
        merges.append(
            {
                "rows": [left.group.start, right.group.start, right.group.stop],
                "score": comparisons[i]["score"],  # type: ignore[index]
            }
        )
        pieces[i - 1 : i + 1] = [
            _Piece(
                group(left.group.start, right.group.stop),
                left.pool_reason,
                [],
                {},
            )
        ]
        comparisons[i - 1 : i + 1] = [comparisons[i - 1]]
        refresh(i - 1)
        refresh(i)
    for i, piece in enumerate(pieces):
        found = comparisons[i]
        if found is not None:
            piece.signals = list(found["signals"])
            piece.evidence = {k: v for k, v in found.items() if k != "signals"}
    return pieces, merges


def _reason(piece: _Piece, first: bool) -> str:
    if first:
        return "start"
    parts = (["pool"] if piece.pool_reason == "pool" else []) + piece.signals
    return "+".join(parts) if parts else "pool"


def _table(
    arrays: TraceArrays,
    log_run: F64,
    pieces: list[_Piece],
    signal: PoolSignal | None,
    cores: int | None,
    meta_cores: int | None,
    tau: float,
    params: SegmentParams,
    labels: int,
) -> pa.Table:
    grid, counts = np.unique(log_run, return_counts=True)
    reference_cdf = np.cumsum(counts) / log_run.size
    all_vo = np.bincount(arrays.vo_codes, minlength=labels)
    origin = arrays.origin
    rows: dict[str, list[Any]] = {name: [] for name in SEGMENTS.names}
    for k, piece in enumerate(pieces):
        a, b = piece.group.start, piece.group.stop
        submit, run = arrays.submit[a:b], arrays.run[a:b]
        t0 = float(submit[0])
        t1 = float(arrays.submit[b]) if b < len(arrays) else float(submit[-1])
        hosts, pool_cores = (None, None)
        if signal is not None:
            hosts, pool_cores = signal.hosts_and_cores(t0, t1 if b < len(arrays) else math.inf)
        if cores is not None:
            p, source = cores, "argument"
        elif pool_cores:
            p, source = pool_cores, "hosts seen in the segment (peak cores per host)"
        else:
            p, source = int(meta_cores or 1), "trace metadata"
        half = a + (b - a) // 2
        first = Group.of(arrays.submit, log_run, arrays.vo_codes, arrays.cores, labels, a, half)
        second = Group.of(arrays.submit, log_run, arrays.vo_codes, arrays.cores, labels, half, b)
        halves = compare(first, second, params.thresholds) if b - a >= 4 else {}
        vo = shares(arrays.vo_codes[a:b], arrays.vo_labels)
        diagnostics = {
            "boundary": piece.evidence,
            "halves": halves,
            "cores_source": source,
        }
        rows["segment_id"].append(k)
        rows["row_start"].append(a)
        rows["row_stop"].append(b)
        rows["t0_s"].append(t0)
        rows["t1_s"].append(t1)
        rows["start_time"].append(None if origin is None else origin + pd.Timedelta(seconds=t0))
        rows["end_time"].append(None if origin is None else origin + pd.Timedelta(seconds=t1))
        rows["jobs"].append(b - a)
        rows["hosts"].append(hosts)
        rows["cores"].append(int(p))
        rows["arrival_rate_per_s"].append(piece.group.rate)
        rows["mean_interarrival_s"].append(
            float(submit[-1] - submit[0]) / (b - a - 1) if b - a > 1 else math.nan
        )
        rows["mean_run_s"].append(float(run.mean()))
        rows["median_run_s"].append(float(np.median(run)))
        rows["utilisation"].append(utilisation_factor(run, submit, p))
        rows["rho"].append(core_weighted_load(run, arrays.cores[a:b], submit, p))
        rows["interactive_fraction"].append(float(np.mean(run <= tau)))
        rows["vo_shares"].append(json.dumps(vo, sort_keys=False))
        rows["pool_stable"].append(piece.stable)
        rows["reason"].append(_reason(piece, k == 0))
        rows["runtime_ks_to_log"].append(
            ks_distance_sorted(log_run[a:b], log_run, grid, reference_cdf)
        )
        rows["vo_jsd_to_log"].append(
            js_divergence(np.bincount(arrays.vo_codes[a:b], minlength=labels), all_vo)
        )
        rows["diagnostics"].append(json.dumps(json_safe(diagnostics), sort_keys=True))
    table = pa.Table.from_pydict(rows, schema=SEGMENTS)
    return validate(table, SEGMENTS)


def segment_trace(
    trace: pa.Table,
    segments: pa.Table,
    segment_id: int,
    *,
    rebase: bool = True,
    cores: int | None = None,
) -> pa.Table:
    """Return the jobs of one segment as a trace of their own.

    Parameters
    ----------
    trace : pyarrow.Table
        The trace that was segmented.
    segments : pyarrow.Table
        Its ``segments`` table.
    segment_id : int
        Which segment.
    rebase : bool, default True
        Count ``submit_s`` from the segment's first job (the metadata origin moves with it);
        job ids are kept.
    cores : int, optional
        The cores P of the segment's trace; by default the segment's own pool estimate (the
        ``cores`` column). Pass the site's known P to replay the segment on the real pool; the
        estimate is kept in the provenance either way.

    Returns
    -------
    pyarrow.Table
        The rows of the segment, with trace metadata (cores P as above, the provenance naming
        the segment).
    """
    ids = segments.column("segment_id").to_pylist()
    if segment_id not in ids:
        msg = f"no segment {segment_id}; segments are {ids}"
        raise ConfigError(msg)
    row = segments.slice(ids.index(segment_id), 1).to_pylist()[0]
    part = trace.slice(row["row_start"], row["row_stop"] - row["row_start"])
    arrays = trace_arrays(trace)
    t0 = float(row["t0_s"])
    if rebase:
        submit = part.column("submit_s").to_numpy() - t0
        part = part.set_column(
            part.column_names.index("submit_s"), "submit_s", pa.array(submit, pa.float64())
        )
    origin = arrays.origin
    if origin is not None and rebase:
        origin = origin + pd.Timedelta(seconds=t0)
    metadata = arrays.metadata
    provenance = metadata.get("provenance")
    provenance = dict(provenance) if isinstance(provenance, dict) else {}
    provenance["segment"] = {
        "segment_id": segment_id,
        "rows": [row["row_start"], row["row_stop"]],
        "t0_s_in_source": t0,
        "reason": row["reason"],
        "source_origin": metadata.get("origin"),
        "source_site": metadata.get("site"),
        "pool_cores_estimate": int(row["cores"]),
    }
    return with_trace_metadata(
        part,
        origin=origin.isoformat() if origin is not None else "1970-01-01T00:00:00+00:00",
        site=str(metadata.get("site", "unknown")),
        cores=int(row["cores"]) if cores is None else cores,
        tau_s=float(metadata.get("tau_s", DEFAULT_TAU_S)),
        provenance=provenance,
    )
