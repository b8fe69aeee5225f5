"""``characterise_parquet`` out of core: memory bounded by a chunk size, not by the jobs.

The in-memory path of :func:`gridtrace.stats.characterise_parquet` holds 30 to 36 bytes a job
(and about 50 at its peak). This path holds a few chunks of rows instead:

1. **Runs.** The jobs file is read in batches; of each job that ran it keeps the trace's sort keys
   (submit ticks, ``job_seq``, ``array_index``, ``attempt``, ``job_key``, its row) and the values
   the figures need (wait, runtime, cores, VO and user codes). Every ``run_rows`` jobs are sorted
   by those keys and written to an Arrow IPC file in a temporary folder (removed at the end).
   Ticks of a millisecond or a microsecond over less than 2^30 s order and tie the jobs as the
   trace's float seconds do; otherwise the file is read again and sorted by those seconds.
2. **Merge.** The runs are merged by chunks into one file in trace order: each round takes, of
   every run, the rows up to the smallest last key of the runs' loaded chunks (found by bisection),
   sorts them together and writes them; about ``run_rows`` rows of all the runs are loaded at
   once. Only the jobs submitted in ``window`` are kept. (One merge level: with thousands of runs
   the rounds get small and slow; a second level is not written.)
3. **Figures.** Every figure of :func:`gridtrace.stats.characterise` is computed in passes over that
   file, a chunk at a time, exactly as the in-memory code computes it: the means and standard
   deviations by :class:`gridtrace.stats._exact.PairwiseSum` (numpy's summation tree, so equal to
   the bit), sums numpy takes element by element (``bincount`` weights) in order, counts and
   histograms added up, the quantiles by :class:`gridtrace.stats._exact.Selection` (2 to 4
   passes), the inter-arrival gaps, IDC window counts and ACF lag products with the carry of the
   previous chunk. The ACF of more than ``ACF_FFT_MAX`` points (about 4.2 million jobs) is summed
   lag by lag as in memory (equal to rounding); at or below it the submit times are held (at most
   32 MiB) and the same FFT is run, which takes up to about 300 MB at 4.2 million jobs (about
   160 MB at 2 million): a bound, but not the budget's.

Memory is the chunks (``chunk_rows``), one run being sorted (``run_rows``), the file's batches
and a few fixed tables (65,536 counts per figure with quantiles, per-day and per-bin sums),
whatever the jobs. Measured (``benchmarks/characterise_memory.py``, generated EGEE-like files,
one core, the interpreter's ~115 MB included): with a 32 MiB budget, 2, 8 and 17 million jobs
peak at 217 (ACF summed by lags), 218 and 220 MB (2 million with its FFT ACF: 414 MB); with the
default 256 MiB, 8 and 17 million peak at 449 and 453 MB against 510 and 859 MB in memory. The
CPU is 1.4 to 1.6 times the in-memory path's at the default budget and 2.1 to 3.2 times at 32 MiB
(more runs: one merge level).
"""

from __future__ import annotations

import bisect
import math
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError
from gridtrace.stats._characterise import (
    _HIST_SCHEMA,
    ACF_FFT_MAX,
    QUICK_WAIT_S,
    TOP_USERS,
    WorkloadStats,
    _cores,
    _tau,
    shares_of_totals,
)
from gridtrace.stats._chunked import (
    _ARRIVAL_COLUMNS,
    _PER_SECOND,
    _SORT_KEYS,
    _batches,
    _Labels,
    _open,
    _ran,
    _seconds,
    _ticks_and_wait,
    _with_metadata,
)
from gridtrace.stats._columns import (
    _NO_LABEL,
    F64,
    I64,
    TraceArrays,
    resolve_zone,
    schema_of,
    trace_arrays,
)
from gridtrace.stats._exact import (
    PairwiseSum,
    Selection,
    median_of,
    median_ranks,
    quantile_of,
    quantile_ranks,
)
from gridtrace.stats._measures import QUANTILES, interarrival_acf, log_bin_edges
from gridtrace.stats._profiles import (
    _DAY,
    FLURRY_SCHEMA,
    FlurryCriteria,
    local_seconds,
    profiles_of_counts,
)

__all__ = ["characterise_out_of_core"]

logger = library_logger(__name__)

_COLUMNS = (*_ARRIVAL_COLUMNS, "cores_alloc", "cores_req", "vo", "user", *_SORT_KEYS)
_ORDER = ("order", "job_seq", "array_index", "attempt", "job_key", "row")
_CLASSES = ("interactive", "batch", "all")


# ---------------------------------------------------------------- runs and merge


@dataclass
class _Spilled:
    """What the runs' read learnt of the file."""

    runs: list[Path] = field(default_factory=list)
    jobs: int = 0
    low: int = 0
    high: int = 0
    monitoring: int = 0
    cores_defaulted: int = 0
    site: str | None = None
    vos: _Labels = field(default_factory=_Labels)
    users: _Labels = field(default_factory=_Labels)


def _write(table: pa.Table, path: Path, batch_rows: int) -> None:
    """Write ``table`` as an Arrow IPC file of batches of ``batch_rows`` rows."""
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=max(batch_rows, 1)):
            writer.write_batch(batch)


def _sorted(table: pa.Table) -> pa.Table:
    order = pc.sort_indices(table, sort_keys=[(name, "ascending") for name in _ORDER])
    return table.take(order)


def _spill_runs(
    source: pq.ParquetFile,
    folder: Path,
    *,
    unit: str,
    batch_rows: int,
    exclude_monitoring: bool,
    run_rows: int,
    merge_rows: int,
    origin: int | None,
) -> _Spilled:
    """Read the file once; write its jobs that ran as sorted runs of ``run_rows`` jobs.

    The jobs are ordered by their submit ticks when ``origin`` is None (see
    :func:`_ticks_order_as_seconds`), else by their float seconds from ``origin``.
    """
    per_s = _PER_SECOND[unit]
    out = _Spilled()
    parts: list[pa.Table] = []
    held = 0

    def flush() -> None:
        nonlocal held
        if not parts:
            return
        run = _sorted(pa.concat_tables(parts))
        parts.clear()
        held = 0
        path = folder / f"run-{len(out.runs):05d}.arrow"
        _write(run, path, merge_rows)
        out.runs.append(path)
        pa.default_memory_pool().release_unused()

    for batch in _batches(source, batch_rows, _COLUMNS):
        if out.site is None and batch.num_rows:
            out.site = str(batch.column("site")[0].as_py())
        ran, monitoring = _ran(batch, exclude_monitoring)
        out.monitoring += monitoring
        used = batch.filter(ran)
        del batch
        k = used.num_rows
        if not k:
            continue
        ticks, wait = _ticks_and_wait(used, unit)
        job = pc.coalesce(used.column("cores_alloc"), used.column("cores_req"))
        out.cores_defaulted += job.null_count
        cores = pc.coalesce(job, pa.scalar(1, job.type)).cast(pa.int32())
        order = pa.array(ticks if origin is None else _seconds(ticks - origin, per_s))
        low, high = int(ticks.min()), int(ticks.max())
        out.low = low if out.jobs == 0 else min(out.low, low)
        out.high = high if out.jobs == 0 else max(out.high, high)
        part = {
            "order": order,
            **{name: used.column(name) for name in _SORT_KEYS},
            "row": pa.array(np.arange(out.jobs, out.jobs + k, dtype=np.int64)),
            "ticks": pa.array(ticks),
            "wait": pa.array(wait),
            "run": used.column("run_s").cast(pa.float64()),
            "cores": cores,
            "vo": pa.array(out.vos.encode(used.column("vo"))),
            "user": pa.array(out.users.encode(used.column("user"))),
        }
        parts.append(pa.Table.from_arrays(list(part.values()), names=list(part)))
        out.jobs += k
        held += k
        if held >= run_rows:
            flush()
    flush()
    return out


def _ticks_order_as_seconds(spilled: _Spilled, per_s: int) -> bool:
    """Whether ordering by the ticks orders and ties the jobs as their float seconds do.

    The trace orders by ``_seconds(ticks - origin)``, a float. Two distinct ticks give
    distinct floats when a tick is at least twice the float's spacing at the span: true for
    milliseconds or microseconds over less than 2^30 s (34 years); equal ticks, equal floats.
    """
    return per_s <= 10**6 and (spilled.high - spilled.low) < per_s * 2**30


class _Keys(Sequence[tuple[Any, ...]]):
    """The sort keys of a sorted table's rows, as tuples Python compares like Arrow's sort.

    Built row by row when asked (a bisection asks for a few): a null sorts after every value.
    """

    def __init__(self, table: pa.Table) -> None:
        self._size = table.num_rows
        self._columns = [table.column(name) for name in _ORDER]
        self.order = np.asarray(table.column("order").to_numpy())  # the first key, no nulls

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            raise TypeError("no slices")
        values = [column[i].as_py() for column in self._columns]
        return tuple((v is None, v) for v in values)


def _merge(runs: list[Path], counts: dict[str, int]) -> Iterator[pa.Table]:
    """Yield the rows of the sorted ``runs`` in sorted order, a merged chunk at a time."""
    files = [pa.OSFile(str(path), "rb") for path in runs]
    try:
        readers = [pa.ipc.open_file(f) for f in files]
        taken = [0] * len(runs)
        pending: list[pa.Table | None] = [None] * len(runs)
        while True:
            for r, reader in enumerate(readers):
                table = pending[r]
                empty = table is None or table.num_rows == 0
                if empty and taken[r] < reader.num_record_batches:
                    pending[r] = pa.Table.from_batches([reader.get_batch(taken[r])])
                    taken[r] += 1
            live = [r for r, t in enumerate(pending) if t is not None and t.num_rows]
            if not live:
                return
            more = [r for r in live if taken[r] < readers[r].num_record_batches]
            if more:
                views = {r: _Keys(cast("pa.Table", pending[r])) for r in live}
                # the smallest last key: by the first key, then whole keys among those tied
                low = min(views[r].order[-1] for r in more)
                bound = min(views[r][len(views[r]) - 1] for r in more if views[r].order[-1] == low)
                cut = {}
                for r in live:  # rows of a smaller first key are before, of a larger after
                    start = int(np.searchsorted(views[r].order, low, side="left"))
                    stop = int(np.searchsorted(views[r].order, low, side="right"))
                    cut[r] = bisect.bisect_right(views[r], bound, start, stop)
            else:
                cut = {r: cast("pa.Table", pending[r]).num_rows for r in live}
            parts = []
            for r in live:
                table = cast("pa.Table", pending[r])
                if cut[r]:
                    parts.append(table.slice(0, cut[r]))
                pending[r] = table.slice(cut[r])
            counts["merge_rounds"] = counts.get("merge_rounds", 0) + 1
            yield _sorted(pa.concat_tables(parts))
    finally:
        for f in files:
            f.close()


# ---------------------------------------------------------------- the sorted jobs


@dataclass
class _Store:
    """The jobs in trace order (window applied), in an Arrow IPC file of chunks."""

    path: Path
    jobs: int
    first: float
    last: float
    run_max: float
    interactive: int
    vo_counts: I64
    known: dict[str, int]
    user_count: int
    vo_labels: tuple[str, ...]
    user_labels: tuple[str, ...]
    vo_lookup: I64
    user_lookup: I64

    def chunks(self) -> Iterator[dict[str, np.ndarray[Any, Any]]]:
        """Yield the chunks as numpy arrays (codes in trace order), each read from the file."""
        with pa.OSFile(str(self.path), "rb") as f:
            reader = pa.ipc.open_file(f)
            for i in range(reader.num_record_batches):
                batch = reader.get_batch(i)
                chunk = {
                    name: np.asarray(batch.column(name).to_numpy(zero_copy_only=False))
                    for name in ("submit", "wait", "run", "cores", "vo", "user")
                }
                chunk["vo"] = self.vo_lookup[chunk["vo"].astype(np.int64) + 1]
                chunk["user"] = self.user_lookup[chunk["user"].astype(np.int64) + 1]
                yield chunk


def _trace_order(first: dict[int, int], labels: _Labels) -> tuple[I64, tuple[str, ...]]:
    """Codes (by file code + 1, 0 for a null) of labels in order of first appearance."""
    names = ["", *labels.codes]
    seen = sorted((row, code) for code, row in first.items() if code >= 0)
    lookup = np.zeros(len(labels.codes) + 1, dtype=np.int64)
    out: list[str] = []
    for _, code in seen:
        lookup[code + 1] = len(out)
        out.append(names[code + 1])
    if -1 in first:
        lookup[0] = len(out)
        out.append(_NO_LABEL)
    return lookup, tuple(out)


def _first_rows(codes: np.ndarray[Any, Any], offset: int, first: dict[int, int]) -> None:
    seen, at = np.unique(codes, return_index=True)
    for code, row in zip(seen.tolist(), at.tolist(), strict=True):
        first.setdefault(int(code), row + offset)


def _write_chunks(
    writer: pa.ipc.RecordBatchFileWriter,
    held: list[pa.Table],
    chunk_rows: int,
    counts: dict[str, int],
    *,
    end: bool,
) -> tuple[list[pa.Table], int]:
    """Write the held rows in batches of ``chunk_rows`` (and the remainder at the ``end``)."""
    if not held:
        return [], 0
    table = pa.concat_tables(held).combine_chunks()
    whole = table.num_rows if end else table.num_rows // chunk_rows * chunk_rows
    for batch in table.slice(0, whole).to_batches(max_chunksize=chunk_rows):
        writer.write_batch(batch)
        counts["chunks"] = counts.get("chunks", 0) + 1
    rest = table.slice(whole)
    return ([rest], rest.num_rows) if rest.num_rows else ([], 0)


def _store(
    spilled: _Spilled,
    folder: Path,
    *,
    unit: str,
    window: tuple[float, float] | None,
    tau: float,
    chunk_rows: int,
    counts: dict[str, int],
) -> tuple[_Store, int, tuple[float, float]]:
    """Merge the runs into the trace-ordered file; count what the figures' passes need."""
    per_s = _PER_SECOND[unit]
    path = folder / "sorted.arrow"
    schema = schema_of(
        pa.field("submit", pa.float64()),
        pa.field("wait", pa.float64()),
        pa.field("run", pa.float64()),
        pa.field("cores", pa.int32()),
        pa.field("vo", pa.int32()),
        pa.field("user", pa.int32()),
    )
    origin: int | None = None
    done = jobs = interactive = 0
    first = last = 0.0
    run_max = -math.inf
    run_nan = False
    vo_first: dict[int, int] = {}
    user_first: dict[int, int] = {}
    vo_counts: dict[int, int] = {}
    known = dict.fromkeys(_CLASSES, 0)
    held: list[pa.Table] = []
    held_rows = 0
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
        for merged in _merge(spilled.runs, counts):
            ticks = np.asarray(merged.column("ticks").to_numpy(), dtype=np.int64)
            if origin is None:
                origin = int(ticks[0])
            submit = _seconds(ticks - origin, per_s)
            vo = np.asarray(merged.column("vo").to_numpy(), dtype=np.int32)
            user = np.asarray(merged.column("user").to_numpy(), dtype=np.int32)
            _first_rows(vo, done, vo_first)
            _first_rows(user, done, user_first)
            done += merged.num_rows
            if window is not None:
                keep = (submit >= window[0]) & (submit < window[1])
                merged = merged.filter(pa.array(keep))
                submit, vo, user = submit[keep], vo[keep], user[keep]
            if not merged.num_rows:
                continue
            run = np.asarray(merged.column("run").to_numpy(), dtype=np.float64)
            wait = np.asarray(merged.column("wait").to_numpy(), dtype=np.float64)
            if jobs == 0:
                first = float(submit[0])
            last = float(submit[-1])
            jobs += int(submit.size)
            run_nan |= bool(np.isnan(run).any())
            run_max = max(run_max, float(run.max()))
            quick = run <= tau
            interactive += int(np.count_nonzero(quick))
            has = ~np.isnan(wait)
            known["interactive"] += int(np.count_nonzero(has & quick))
            known["batch"] += int(np.count_nonzero(has & ~quick))
            known["all"] += int(np.count_nonzero(has))
            codes, n_code = np.unique(vo, return_counts=True)
            for code, n_jobs in zip(codes.tolist(), n_code.tolist(), strict=True):
                vo_counts[code] = vo_counts.get(code, 0) + n_jobs
            table = pa.table(
                {
                    "submit": pa.array(submit),
                    "wait": pa.array(wait),
                    "run": pa.array(run),
                    "cores": merged.column("cores").combine_chunks(),
                    "vo": pa.array(vo),
                    "user": pa.array(user),
                },
                schema=schema,
            )
            held.append(table)
            held_rows += table.num_rows
            if held_rows >= chunk_rows:  # whole chunks written, the rest kept for the next
                held, held_rows = _write_chunks(writer, held, chunk_rows, counts, end=False)
        _write_chunks(writer, held, chunk_rows, counts, end=True)
    for run_path in spilled.runs:  # merged: their space is given back now
        run_path.unlink()
    if done != spilled.jobs:
        msg = f"merged {done} jobs of the {spilled.jobs} spilled"
        raise RuntimeError(msg)
    vo_lookup, vo_labels = _trace_order(vo_first, spilled.vos)
    user_lookup, user_labels = _trace_order(user_first, spilled.users)
    by_code = np.zeros(len(vo_labels), dtype=np.int64)
    for code, n_jobs in vo_counts.items():
        by_code[vo_lookup[code + 1]] += n_jobs
    if window is None:
        bounds = (first, math.nextafter(last, math.inf)) if jobs else (0.0, math.nextafter(0.0, 1))
    else:
        bounds = (float(window[0]), float(window[1]))
    store = _Store(
        path=path,
        jobs=jobs,
        first=first,
        last=last,
        run_max=math.nan if run_nan else run_max,
        interactive=interactive,
        vo_counts=by_code,
        known=known,
        user_count=len(user_labels),
        vo_labels=vo_labels,
        user_labels=user_labels,
        vo_lookup=vo_lookup,
        user_lookup=user_lookup,
    )
    return store, int(origin or 0), bounds


# ---------------------------------------------------------------- figures, streamed


class _Dist:
    """One figure's values: their sum (mean), squared deviations (std), extremes, ranks."""

    def __init__(self, n: int, ranks: Sequence[int], *, spread: bool) -> None:
        self.n = n
        self.sum = PairwiseSum(n)
        self.squares = PairwiseSum(n) if spread else None
        self.low = math.inf
        self.high = -math.inf
        self.nan = False
        self.select = Selection(n, ranks)
        self.mean = math.nan

    def first(self, values: F64) -> None:
        if not values.size:
            return
        self.sum.add(values)
        if np.isnan(values).any():
            self.nan = True
        else:
            self.low = min(self.low, float(values.min()))
            self.high = max(self.high, float(values.max()))
        self.select.add(values)

    def end_first(self) -> None:
        if self.n:
            self.mean = float(np.float64(self.sum.result()) / self.n)
        self.select.end_pass()

    def second(self, values: F64) -> None:
        if self.squares is not None and values.size:
            deviation = values - np.float64(self.mean)
            self.squares.add(deviation * deviation)

    def value_at(self, rank: int) -> float:
        return math.nan if self.nan else self.select.values[rank]

    def extreme(self, high: bool) -> float:
        if self.nan:
            return math.nan
        return self.high if high else self.low


def _summary(dist: _Dist) -> dict[str, float]:
    """:func:`distribution_summary` of a figure's values."""
    if dist.n == 0:
        return {"count": 0.0}
    mean = dist.mean
    squares = cast("PairwiseSum", dist.squares).result()
    std = float(np.sqrt(np.float64(squares) / dist.n))
    out = {
        "count": float(dist.n),
        "mean": mean,
        "std": std,
        "scv": (std / mean) ** 2 if mean > 0 else math.nan,
        "min": dist.extreme(high=False),
        "max": dist.extreme(high=True),
    }
    previous, following, gamma = quantile_ranks(dist.n, np.asarray(QUANTILES))
    values = quantile_of(
        np.array([dist.value_at(int(r)) for r in previous]),
        np.array([dist.value_at(int(r)) for r in following]),
        gamma,
    )
    for q, v in zip(QUANTILES, values, strict=True):
        out[f"p{round(q * 100):02d}"] = float(v)
    return out


def _summary_ranks(n: int) -> list[int]:
    if n == 0:
        return []
    previous, following, _ = quantile_ranks(n, np.asarray(QUANTILES))
    return [int(r) for r in (*previous, *following)]


def _wait_ranks(n: int) -> list[int]:
    if n == 0:
        return []
    previous, following, _ = quantile_ranks(n, np.asarray([0.95]))
    return [*median_ranks(n), int(previous[0]), int(following[0])]


def _sequential(total: float, values: F64) -> float:
    """``total`` plus ``values`` one after the other (as ``bincount`` adds its weights)."""
    if not values.size:
        return total
    return float(np.cumsum(np.concatenate(([total], values)))[-1])


def _segment_sums(totals: F64, index: I64, values: F64) -> None:
    """Add ``values`` to ``totals[index]`` one after the other (``index`` sorted ascending)."""
    if not index.size:
        return
    starts = np.flatnonzero(np.concatenate(([True], index[1:] != index[:-1])))
    ends = np.append(starts[1:], index.size)
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        at = int(index[start])
        totals[at] = _sequential(float(totals[at]), values[start:end])


class _Windows:
    """IDC counts of one window length, in order, into the pairwise sum of their deviations."""

    def __init__(self, t: float, windows: int, piece: int) -> None:
        self.t = t
        self.windows = windows
        self.piece = piece
        self.total = 0
        self.mean = math.nan
        self.squares: PairwiseSum | None = None
        self.emitted = 0
        self.partial = 0

    def count(self, index: I64) -> None:
        self.total += int(np.count_nonzero(index < self.windows))

    def start_second(self) -> None:
        self.mean = float(np.float64(self.total) / self.windows)
        self.squares = PairwiseSum(self.windows)

    def _feed(self, start: int, stop: int, at: I64, counts: I64) -> None:
        """Feed the windows [start, stop): ``counts`` at ``at`` (sorted), zero elsewhere."""
        summer = cast("PairwiseSum", self.squares)
        for low in range(start, stop, self.piece):
            high = min(low + self.piece, stop)
            dense = np.zeros(high - low, dtype=np.int64)
            lo, hi = np.searchsorted(at, [low, high])
            dense[at[lo:hi] - low] = counts[lo:hi]
            deviation = dense - np.float64(self.mean)
            summer.add(deviation * deviation)

    def second(self, index: I64) -> None:
        index = index[index < self.windows]
        if not index.size:
            return
        starts = np.flatnonzero(np.concatenate(([True], index[1:] != index[:-1])))
        at = index[starts]  # sorted arrivals: the windows' counts are run lengths
        counts = np.diff(np.append(starts, index.size))
        if int(at[0]) == self.emitted:
            counts[0] += self.partial
        else:
            self._feed(
                self.emitted, self.emitted + 1, np.array([self.emitted]), np.array([self.partial])
            )
        # every window before the chunk's last one is complete; the last may go on
        top = int(at[-1])
        start = self.emitted if int(at[0]) == self.emitted else self.emitted + 1
        self._feed(start, top, at[:-1], counts[:-1])
        self.emitted, self.partial = top, int(counts[-1])

    def variance(self) -> float:
        self._feed(
            self.emitted, self.emitted + 1, np.array([self.emitted]), np.array([self.partial])
        )
        self._feed(self.emitted + 1, self.windows, np.zeros(0, np.int64), np.zeros(0, np.int64))
        squares = cast("PairwiseSum", self.squares).result()
        return float(np.float64(squares) / (self.windows - 1))


_IDC_SCHEMA = schema_of(
    pa.field("t_s", pa.float64()),
    pa.field("windows", pa.int64()),
    pa.field("mean_count", pa.float64()),
    pa.field("idc", pa.float64()),
)
_ACF_SCHEMA = schema_of(pa.field("lag", pa.int64()), pa.field("acf", pa.float64()))
_REQUESTS_SCHEMA = schema_of(
    pa.field("bin_start_s", pa.float64()),
    pa.field("jobs", pa.int64()),
    pa.field("work_core_s", pa.float64()),
    pa.field("offered_load", pa.float64()),
)


def _idc_grid(store: _Store, points: int, piece: int) -> list[_Windows]:
    """List the window lengths of :func:`idc_curve` (defaults) with ten windows or more."""
    n = store.jobs
    if n < 2 or store.last <= store.first:
        return []
    span = float(np.float64(store.last) - np.float64(store.first))
    low = max(1.0, span / (n - 1))
    high = span / 10
    if not high > low:
        return []
    grid = np.unique(np.logspace(math.log10(low), math.log10(high), points))
    out = []
    for t in grid:
        windows = int(span // t)
        if windows >= 10:
            out.append(_Windows(float(t), windows, piece))
    return out


class _Flurries:
    """(user, local day) counts merged chunk by chunk, as :func:`find_flurries` merges them."""

    def __init__(self, users: int) -> None:
        self.users = max(users, 1)
        self.keys = np.zeros(0, dtype=np.int64)
        self.first = np.zeros(0, dtype=np.float64)
        self.counts = np.zeros(0, dtype=np.int64)
        self.days: dict[int, int] = {}

    def add(self, local_s: I64, user: I64, submit: F64) -> None:
        if not local_s.size:
            return
        day = local_s // _DAY
        found, per_day = np.unique(day, return_counts=True)
        for d, k in zip(found.tolist(), per_day.tolist(), strict=True):
            self.days[d] = self.days.get(d, 0) + k
        chunk = day * self.users + user.astype(np.int64)
        new_keys, new_first, new_counts = np.unique(chunk, return_index=True, return_counts=True)
        keys, where = np.unique(np.concatenate((self.keys, new_keys)), return_inverse=True)
        first = np.empty(keys.size, dtype=np.float64)
        first[where[self.keys.size :]] = submit[new_first]
        first[where[: self.keys.size]] = self.first  # an earlier chunk's first job comes first
        total = np.zeros(keys.size, dtype=np.int64)
        np.add.at(total, where, np.concatenate((self.counts, new_counts)))
        self.keys, self.first, self.counts = keys, first, total

    def table(self, labels: tuple[str, ...], rules: FlurryCriteria) -> pa.Table:
        if not self.days:
            return FLURRY_SCHEMA.empty_table()
        first_day = min(self.days)
        day_totals = np.zeros(max(self.days) - first_day + 1, dtype=np.int64)
        for d, k in self.days.items():
            day_totals[d - first_day] = k
        median_day = float(np.median(day_totals[day_totals > 0]))
        key_day = self.keys // self.users - first_day
        share = self.counts / day_totals[key_day]
        ratio = self.counts / median_day
        hit = (
            (self.counts >= rules.min_jobs)
            & (share >= rules.min_day_share)
            & (ratio >= rules.min_ratio)
        )
        rows = np.flatnonzero(hit)
        dates = pd.to_datetime((key_day[rows] + first_day) * _DAY, unit="s")
        return pa.table(
            {
                "user": [labels[int(k % self.users)] for k in self.keys[rows]],
                "day": [d.date().isoformat() for d in dates],
                "jobs": pa.array(self.counts[rows].astype(np.int64)),
                "day_jobs": pa.array(day_totals[key_day[rows]].astype(np.int64)),
                "day_share": pa.array(share[rows]),
                "ratio_to_median_day": pa.array(ratio[rows]),
                "first_submit_s": pa.array(self.first[rows]),
            },
            schema=FLURRY_SCHEMA,
        )


def _profiles(daily: I64, weekly: I64, jobs: int, span: I64, zone: str | None) -> pa.Table:
    """:func:`arrival_profiles` from its counts (``span``: the first and last local second)."""
    return profiles_of_counts(daily, weekly, jobs, span, zone)


def _hist_rows(rows: dict[str, list[Any]], kind: str, group: str, counts: I64, edges: F64) -> None:
    rows["group_kind"].extend([kind] * counts.size)
    rows["group"].extend([group] * counts.size)
    rows["bin_lo_s"].extend(edges[:-1].tolist())
    rows["bin_hi_s"].extend(edges[1:].tolist())
    rows["jobs"].extend(counts.astype(np.int64).tolist())


def _histogram(values: F64, edges: F64) -> I64:
    return np.histogram(values, bins=edges)[0].astype(np.int64)


def characterise_out_of_core(
    path: str | os.PathLike[str],
    *,
    cores: int,
    tau_s: float,
    tz: str | None,
    exclude_monitoring: bool,
    batch_rows: int,
    chunk_rows: int,
    run_rows: int,
    spill_dir: str | os.PathLike[str] | None = None,
    counts: dict[str, int] | None = None,
    window: tuple[float, float] | None = None,
    cores_option: int | None = None,
    tau_option: float | None = None,
    tz_option: str | None = None,
    bin_s: float = 10_000.0,
    idc_points: int = 30,
    acf_lags: int = 50,
    flurries: FlurryCriteria | None = None,
) -> WorkloadStats:
    """Characterise a jobs file in passes over its jobs sorted on disk (see the module doc).

    ``counts`` (if given) receives the runs written, merge rounds, chunks and passes made.
    """
    counts = {} if counts is None else counts
    if chunk_rows < 1 or run_rows < 1:
        msg = f"chunk_rows and run_rows must be at least 1, not {chunk_rows} and {run_rows}"
        raise ConfigError(msg)
    if window is not None and not float(window[1]) > float(window[0]):
        msg = f"window must have end > start, not {window}"
        raise ConfigError(msg)
    if bin_s <= 0:
        msg = f"bin_s must be positive, not {bin_s}"
        raise ConfigError(msg)
    source, unit, zone_of_file = _open(path, cores=cores, tau_s=tau_s, batch_rows=batch_rows)
    rows_in_file = int(source.metadata.num_rows)
    # the file's batches are sized by the budget too: Arrow's reading of a batch keeps
    # memory in proportion (about 50 MB more at 65,536 rows than at 16,384, measured)
    batch_rows = min(batch_rows, max(chunk_rows // 2, 1024))
    runs_expected = max(1, -(-rows_in_file // run_rows))
    merge_rows = max(run_rows // runs_expected, 256)  # the runs loaded at once: ~run_rows
    folder = Path(tempfile.mkdtemp(prefix="gridtrace-characterise-", dir=spill_dir))
    try:

        def spill(origin: int | None) -> _Spilled:
            return _spill_runs(
                source,
                folder,
                unit=unit,
                batch_rows=batch_rows,
                exclude_monitoring=exclude_monitoring,
                run_rows=run_rows,
                merge_rows=merge_rows,
                origin=origin,
            )

        spilled = spill(None)
        if spilled.jobs and not _ticks_order_as_seconds(spilled, _PER_SECOND[unit]):
            for run_path in spilled.runs:  # again, ordered by the float seconds themselves
                run_path.unlink()
            spilled = spill(spilled.low)
            counts["respilled"] = 1
        counts["runs"] = len(spilled.runs)
        if spilled.jobs == 0:
            msg = "no job in the table ran (no attempt with a start, an end and a runtime)"
            raise ConfigError(msg)
        # the metadata the in-memory path writes (the origin is the first job's submit)
        empty = pa.table(
            {"submit_s": pa.array([], pa.float64()), "run_s": pa.array([], pa.float64())}
        )
        origin_ticks = spilled.low
        labelled = trace_arrays(
            _with_metadata(
                empty,
                origin=pd.Timestamp(origin_ticks, unit=unit, tz=zone_of_file),
                site=spilled.site,
                cores=cores,
                tau_s=tau_s,
                provenance=None,
                tz=tz,
                counts=(rows_in_file, spilled.jobs, spilled.monitoring, spilled.cores_defaulted),
            )
        )
        metadata = labelled.metadata
        p, cores_source = _cores(cores_option, metadata)
        tau, tau_source = _tau(tau_option, metadata)
        zone, zone_source = resolve_zone(tz_option, metadata)
        store, _, bounds = _store(
            spilled,
            folder,
            unit=unit,
            window=window,
            tau=tau,
            chunk_rows=chunk_rows,
            counts=counts,
        )
        return _figures(
            store,
            labelled,
            bounds=bounds,
            p=p,
            cores_source=cores_source,
            tau=tau,
            tau_source=tau_source,
            zone=zone,
            zone_source=zone_source,
            bin_s=bin_s,
            idc_points=idc_points,
            acf_lags=acf_lags,
            flurries=flurries,
            chunk_rows=chunk_rows,
            counts=counts,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _figures(
    store: _Store,
    labelled: TraceArrays,
    *,
    bounds: tuple[float, float],
    p: int,
    cores_source: str,
    tau: float,
    tau_source: str,
    zone: str,
    zone_source: str,
    bin_s: float,
    idc_points: int,
    acf_lags: int,
    flurries: FlurryCriteria | None,
    chunk_rows: int,
    counts: dict[str, int],
) -> WorkloadStats:
    """Every figure of ``characterise_arrays``, in passes over ``store``."""
    n = store.jobs
    notes: list[str] = []
    span = float(np.float64(store.last) - np.float64(store.first)) if n else 0.0
    mean_gap = span / (n - 1) if n > 1 else math.nan
    if n < 2:
        notes.append(f"only {n} job(s): rates, U and ρ are undefined")
    n_class = {"interactive": store.interactive, "batch": n - store.interactive, "all": n}
    jobs_with_wait = store.known["all"]
    everything = jobs_with_wait == n
    run_d = {c: _Dist(n_class[c], _summary_ranks(n_class[c]), spread=True) for c in _CLASSES}
    present = [int(c) for c in np.flatnonzero(store.vo_counts)]
    vo_d = {
        c: _Dist(int(store.vo_counts[c]), _summary_ranks(int(store.vo_counts[c])), spread=True)
        for c in present
    }
    gap_n = max(n - 1, 0)
    gap_d = _Dist(gap_n, _summary_ranks(gap_n), spread=True)
    wait_n = {c: store.known[c] for c in _CLASSES}
    wait_d = {c: _Dist(wait_n[c], _wait_ranks(wait_n[c]), spread=False) for c in _CLASSES}
    resp_d = {
        c: _Dist(wait_n[c], median_ranks(wait_n[c]) if wait_n[c] else [], spread=False)
        for c in _CLASSES
    }
    work_sum = PairwiseSum(n)
    quick_wait = dict.fromkeys(_CLASSES, 0)
    negative = zero_gaps = 0
    edges = log_bin_edges(store.run_max if n else 1.0)
    run_hist = {c: np.zeros(edges.size - 1, dtype=np.int64) for c in _CLASSES}
    vo_hist = {c: np.zeros(edges.size - 1, dtype=np.int64) for c in present}
    vo_work = np.zeros(len(store.vo_labels), dtype=np.float64)
    user_jobs = np.zeros(len(store.user_labels), dtype=np.int64)
    bins = int((np.float64(store.last) - np.float64(store.first)) // bin_s) + 1 if n else 0
    bin_jobs = np.zeros(bins, dtype=np.int64)
    bin_work = np.zeros(bins, dtype=np.float64)
    daily = np.zeros(24, dtype=np.int64)
    weekly = np.zeros(168, dtype=np.int64)
    local_low, local_high = None, None
    flurry = _Flurries(len(store.user_labels))
    idc = _idc_grid(store, idc_points, chunk_rows)
    acf_size = 1 << int(2 * (n - 1) - 1).bit_length() if n > 1 else 0
    acf_held: list[F64] | None = [] if acf_size <= ACF_FFT_MAX else None
    clock = local_seconds(labelled.take(slice(0, 0)), zone)[1]
    if labelled.origin is None:
        notes.append(clock)
    first_submit = np.float64(store.first)

    def values(
        chunk: dict[str, np.ndarray[Any, Any]], previous: float | None, need: set[Any] | None = None
    ) -> dict[Any, F64]:
        """Each figure's values in this chunk (in trace order); only ``need``'s if given."""

        def wanted(name: tuple[Any, ...]) -> bool:
            return need is None or name in need

        run = chunk["run"]
        wait = chunk["wait"]
        quick = run <= tau
        rows = {"interactive": quick, "batch": ~quick, "all": None}
        out: dict[Any, F64] = {}
        has = ~np.isnan(wait)
        for c in _CLASSES:
            selected = rows[c]
            if wanted(("run", c)):
                out[("run", c)] = run if selected is None else run[selected]
            if not (wanted(("wait", c)) or wanted(("resp", c))):
                continue
            if selected is None:
                mask = None if everything else has
            else:
                mask = selected if everything else (has & selected)
            w = wait.copy() if mask is None else wait[mask]
            np.maximum(w, 0.0, out=w)
            out[("wait", c)] = w
            r = run if mask is None else run[mask]
            total = r + np.maximum(wait if mask is None else wait[mask], 0.0)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[("resp", c)] = np.where(total > 0, r / total, 1.0)
        for code in present:
            if wanted(("vo", code)):
                out[("vo", code)] = run[chunk["vo"] == code]
        if wanted(("gap",)):
            submit = chunk["submit"]
            if previous is None:
                out[("gap",)] = np.diff(submit)
            else:
                out[("gap",)] = np.diff(np.concatenate(([previous], submit)))
        return out

    def dists() -> dict[Any, _Dist]:
        out: dict[Any, _Dist] = {}
        for c in _CLASSES:
            out[("run", c)] = run_d[c]
            out[("wait", c)] = wait_d[c]
            out[("resp", c)] = resp_d[c]
        for code in present:
            out[("vo", code)] = vo_d[code]
        out[("gap",)] = gap_d
        return out

    everyone = dists()
    # ---- pass 1: sums, counts, extremes, histograms, the first count of the quantiles
    previous: float | None = None
    for chunk in store.chunks():
        got = values(chunk, previous)
        for name, dist in everyone.items():
            dist.first(got[name])
        run, submit, job_cores = chunk["run"], chunk["submit"], chunk["cores"]
        for c in _CLASSES:
            run_hist[c] += _histogram(got[("run", c)], edges)
            quick_wait[c] += int(np.count_nonzero(got[("wait", c)] < QUICK_WAIT_S))
        for code in present:
            vo_hist[code] += _histogram(got[("vo", code)], edges)
        negative += int(np.count_nonzero(chunk["wait"] < 0))
        zero_gaps += int(np.count_nonzero(got[("gap",)] == 0))
        work = run * job_cores
        work_sum.add(np.asarray(work, dtype=np.float64))
        wide = np.asarray(job_cores, dtype=np.float64)
        work_f = run * wide
        vo = chunk["vo"]
        for c in np.unique(vo).tolist():
            vo_work[c] = _sequential(float(vo_work[c]), work_f[vo == c])
        user_jobs += np.bincount(chunk["user"], minlength=user_jobs.size)
        index = ((submit - first_submit) // bin_s).astype(np.int64)
        bin_jobs += np.bincount(index, minlength=bins)
        _segment_sums(bin_work, index, run * job_cores)
        part = TraceArrays(
            submit=submit,
            run=run,
            cores=run,
            wait=run,
            vo_codes=chunk["vo"],
            vo_labels=store.vo_labels,
            user_codes=chunk["user"],
            user_labels=store.user_labels,
            origin=labelled.origin,
            metadata=labelled.metadata,
        )
        local_s = local_seconds(part, zone)[0]
        hour = (local_s // 3600) % 24
        weekday = ((local_s // _DAY) + 3) % 7
        daily += np.bincount(hour, minlength=24)
        weekly += np.bincount(weekday * 24 + hour, minlength=168)
        low, high = int(local_s.min()), int(local_s.max())
        local_low = low if local_low is None else min(local_low, low)
        local_high = high if local_high is None else max(local_high, high)
        flurry.add(local_s, chunk["user"], submit)
        offset = submit - first_submit
        for windows in idc:
            windows.count((offset // windows.t).astype(np.int64))
        if acf_held is not None:
            acf_held.append(submit.copy())
        previous = float(submit[-1])
    counts["passes"] = 1
    for dist in everyone.values():
        dist.end_first()
    for windows in idc:
        windows.start_second()
    gap_edges = log_bin_edges(gap_d.extreme(high=True) if gap_n else 1.0)
    gap_hist = np.zeros(gap_edges.size - 1, dtype=np.int64)
    acf_sums: list[float] = []
    lags = min(acf_lags, gap_n - 1)
    carry = np.zeros(0, dtype=np.float64)
    if acf_held is None:
        acf_sums = [0.0] * (lags + 1)
    # ---- pass 2: squared deviations, the IDC counts' deviations, ACF lags, the quantiles
    previous = None
    for chunk in store.chunks():
        got = values(chunk, previous)
        for name, dist in everyone.items():
            dist.second(got[name])
            dist.select.add(got[name])
        gaps = got[("gap",)]
        gap_hist += _histogram(gaps, gap_edges)
        submit = chunk["submit"]
        offset = submit - first_submit
        for windows in idc:
            windows.second((offset // windows.t).astype(np.int64))
        if acf_held is None and gaps.size:
            centred = gaps - np.float64(gap_d.mean)
            joined = np.concatenate((carry, centred))
            start = carry.size
            for k in range(lags + 1):
                low = max(start - k, 0)
                acf_sums[k] += float(np.dot(joined[low : joined.size - k], joined[low + k :]))
            carry = joined[-lags:] if lags > 0 else joined[:0]
        previous = float(submit[-1])
    counts["passes"] = 2
    for dist in everyone.values():
        dist.select.end_pass()
    # ---- further passes: only while a quantile's bin is still being searched
    while not all(dist.select.done for dist in everyone.values()):
        previous = None
        searched = {name for name, dist in everyone.items() if not dist.select.done}
        for chunk in store.chunks():
            got = values(chunk, previous, searched)
            for name in searched:
                everyone[name].select.add(got[name])
            previous = float(chunk["submit"][-1])
        for dist in everyone.values():
            if not dist.select.done:
                dist.select.end_pass()
        counts["passes"] += 1

    # ---- the figures, as characterise_arrays puts them together
    wait: dict[str, Any] | None = None
    if jobs_with_wait:
        wait = {"jobs_with_wait": jobs_with_wait}
        for c in _CLASSES:
            dist = wait_d[c]
            if not dist.n:
                wait[c] = {"jobs": 0}
                continue
            middle = np.array([dist.value_at(r) for r in median_ranks(dist.n)])
            prev95, next95, gamma95 = quantile_ranks(dist.n, np.asarray([0.95]))
            p95 = quantile_of(
                np.array([dist.value_at(int(prev95[0]))]),
                np.array([dist.value_at(int(next95[0]))]),
                gamma95,
            )
            resp = resp_d[c]
            wait[c] = {
                "jobs": dist.n,
                "wait_mean_s": dist.mean,
                "wait_median_s": median_of(middle),
                "wait_p95_s": float(p95[0]),
                "wait_max_s": dist.extreme(high=True),
                "responsiveness_mean": resp.mean,
                "responsiveness_median": median_of(
                    np.array([resp.value_at(r) for r in median_ranks(resp.n)])
                ),
                "waited_under_120s": float(np.float64(quick_wait[c]) / dist.n),
            }
        if negative:
            wait["negative_waits_counted_as_zero"] = negative
    hist_rows: dict[str, list[Any]] = {k: [] for k in _HIST_SCHEMA.names}
    runtime: dict[str, Any] = {"class": {}, "vo": {}}
    for c in _CLASSES:
        runtime["class"][c] = _summary(run_d[c])
        _hist_rows(hist_rows, "class", c, run_hist[c], edges)
    interactive_fraction = float(np.float64(store.interactive) / n) if n else math.nan
    vo_shares = shares_of_totals(store.vo_counts, store.vo_labels) if n else {}
    for vo_name in vo_shares:
        code = store.vo_labels.index(vo_name)
        runtime["vo"][vo_name] = _summary(vo_d[code])
        _hist_rows(hist_rows, "vo", vo_name, vo_hist[code], edges)
    vo_work_shares = shares_of_totals(vo_work, store.vo_labels) if n else {}
    mean_run_s = run_d["all"].mean if n else math.nan
    gap = (store.last - store.first) / (n - 1) if n >= 2 else math.nan
    utilisation = rho = math.nan
    if n >= 2 and gap > 0:
        utilisation = float(np.float64(run_d["all"].mean) / gap / p)
        rho = float(np.float64(np.float64(work_sum.result()) / n) / gap / p)
    if n:
        columns = {
            "bin_start_s": pa.array(first_submit + bin_s * np.arange(bins, dtype=np.float64)),
            "jobs": pa.array(bin_jobs),
            "work_core_s": pa.array(bin_work),
            "offered_load": pa.array(bin_work / (p * bin_s)),
        }
        requests = pa.table(columns, schema=_REQUESTS_SCHEMA)
    else:
        requests = _REQUESTS_SCHEMA.empty_table()
    span_local = (
        np.array([local_low, local_high], dtype=np.int64) if n else np.zeros(0, dtype=np.int64)
    )
    profiles = _profiles(daily, weekly, n, span_local, None if labelled.origin is None else zone)
    flurry_table = flurry.table(store.user_labels, flurries or FlurryCriteria())
    if flurry_table.num_rows:
        notes.append(
            f"{flurry_table.num_rows} flurry day(s) found (reported in 'flurries', not removed)"
        )
    user_all = shares_of_totals(user_jobs, store.user_labels) if n else {}
    ia_rows: dict[str, list[Any]] = {k: [] for k in _HIST_SCHEMA.names}
    _hist_rows(ia_rows, "all", "all", gap_hist, gap_edges)
    interarrival: dict[str, Any] = _summary(gap_d)
    interarrival["zero_share"] = float(np.float64(zero_gaps) / gap_n) if gap_n else math.nan
    idc_rows: dict[str, list[float]] = {"t_s": [], "windows": [], "mean_count": [], "idc": []}
    for windows in idc:
        mean = windows.mean
        variance = windows.variance()
        idc_rows["t_s"].append(windows.t)
        idc_rows["windows"].append(windows.windows)
        idc_rows["mean_count"].append(mean)
        idc_rows["idc"].append(float(variance / mean) if mean > 0 else math.nan)
    idc_table = pa.table(idc_rows, schema=_IDC_SCHEMA)
    if acf_held is not None:
        submit_all = np.concatenate(acf_held) if acf_held else np.zeros(0)
        acf = interarrival_acf(submit_all, lags=acf_lags)
        del submit_all
    elif lags < 1 or not acf_sums[0] > 0:
        acf = _ACF_SCHEMA.empty_table()
    else:
        autocov = np.array(acf_sums)
        acf = pa.table(
            {
                "lag": pa.array(np.arange(1, lags + 1, dtype=np.int64)),
                "acf": pa.array(autocov[1:] / autocov[0]),
            },
            schema=_ACF_SCHEMA,
        )
    notes.append(f"{cores_source}: P = {p}")
    metadata = labelled.metadata
    return WorkloadStats(
        site=str(metadata.get("site", "unknown")),
        window=bounds,
        jobs=n,
        span_s=span,
        cores=p,
        cores_source=cores_source,
        tau_s=tau,
        tau_source=tau_source,
        interactive_fraction=interactive_fraction,
        arrival_rate_per_s=1.0 / mean_gap if mean_gap > 0 else math.nan,
        mean_interarrival_s=mean_gap,
        mean_run_s=mean_run_s,
        utilisation=utilisation,
        rho=rho,
        runtime=runtime,
        interarrival=interarrival,
        vo_shares=vo_shares,
        vo_work_shares=vo_work_shares,
        users=len(user_all),
        user_shares=dict(list(user_all.items())[:TOP_USERS]),
        timezone=zone,
        timezone_source=zone_source,
        wait=wait,
        notes=tuple(notes),
        runtime_hist=pa.table(hist_rows, schema=_HIST_SCHEMA),
        interarrival_hist=pa.table(ia_rows, schema=_HIST_SCHEMA),
        service_requests=requests,
        idc=idc_table,
        acf=acf,
        profiles=profiles,
        flurries=flurry_table,
    )
