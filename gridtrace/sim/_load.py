"""Offered load of a trace, and setting it: compress the arrivals or shrink the pool.

Definition
----------
The *offered load* of a trace on P cores is

    ρ = Σ_j run_j · cores_j / (P · S),   S = last submit − first submit,

the core-seconds the jobs ask for over the core-seconds the pool offers while they arrive. It
depends only on the arrivals, never on a schedule. (:func:`gridtrace.stats.core_weighted_load`,
the ``rho`` column of a ``segments`` table, divides the mean work by the mean gap S / (n − 1)
instead: it is ρ · (n − 1) / n, 0.01 % lower at 10,000 jobs.) With single-core jobs ρ is the
research's utilisation factor U = E[run] / (E[inter-arrival] · P), up to the same factor.

The simulator's utilisation (:func:`gridtrace.sim.summarise`) divides the same core-seconds by
P · (last end − first submit): the arrival span plus the *drain tail* D = last end − last
submit, during which nothing arrives. Hence, for any schedule,

    U_sim = ρ · S / (S + D) ≤ ρ.

Under a stable load (ρ < 1) D is about the wait and runtime of the last jobs, so U_sim → ρ as the
trace grows; grid logs with multi-day batch jobs keep D at a few days, which on a two-week
segment costs U_sim several per cent. At ρ ≥ 1 the backlog grows with the trace, D with it, and
U_sim stays near 1 while ρ does not.

Two ways to set ρ to a target ρ*
--------------------------------
``compress``
    Keep P; multiply every inter-arrival gap by one factor c = ρ / ρ*, measured from the first
    submit: submit'_j = t_0 + c (submit_j − t_0). c < 1 compresses, c > 1 stretches. Job order
    and ties are kept exactly (the map is increasing; equal submits stay equal), ρ* is reached
    up to rounding.
``shrink``
    Keep the arrivals; pick the integer P closest to Σ run·cores / (S ρ*), never below the
    largest job's cores. The achieved ρ differs from ρ* by the integer rounding of P (under
    1 / (2P) relatively); when that, or the largest job, keeps it farther than a tolerance from
    ρ*, the target is *unreachable*: :class:`LoadUnreachableError` is raised, or, on request,
    the nearest pool is returned with ``reached = False``.

Either way runtimes, cores, job ids, row order and every column other than ``submit_s``
(``compress``) are untouched. The as-logged ``wait_s`` is kept too but no longer describes the
transformed trace: an as-logged ("native") replay of it is meaningless.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from gridtrace.errors import ConfigError, SchemaError
from gridtrace.schema import trace_metadata, with_trace_metadata

__all__ = [
    "DEFAULT_LOADS",
    "LoadUnreachableError",
    "LoadedTrace",
    "load_sweep",
    "offered_load",
    "set_load",
]

LoadMethod = Literal["compress", "shrink"]
"""How :func:`set_load` reaches its target: scale the gaps, or pick the pool size."""

LOAD_METHODS: tuple[LoadMethod, ...] = ("compress", "shrink")

DEFAULT_LOADS = (0.5, 0.7, 0.85, 0.95)
"""The offered loads of the contention sweep (issue 14)."""

DEFAULT_TOLERANCE = 0.02
"""Largest relative miss |ρ / ρ* − 1| that counts as reaching the target."""


class LoadUnreachableError(ConfigError):
    """The target offered load cannot be reached within the tolerance.

    Attributes
    ----------
    target : float
        ρ* asked for.
    nearest_cores : int
        The admissible pool whose load is closest to the target.
    nearest_load : float
        ρ on that pool.
    """

    def __init__(
        self, message: str, *, target: float, nearest_cores: int, nearest_load: float
    ) -> None:
        self.target = target
        self.nearest_cores = nearest_cores
        self.nearest_load = nearest_load
        super().__init__(message)


@dataclass(frozen=True)
class LoadedTrace:
    """A trace set to an offered load, and how.

    Attributes
    ----------
    trace : pyarrow.Table
        The transformed trace; its metadata has ``cores`` = P and ``provenance["load"]`` =
        :meth:`to_dict`.
    how : {"compress", "shrink"}
        Which transformation was used.
    cores : int
        P to simulate it on.
    target : float
        ρ* asked for.
    offered_load : float
        ρ achieved (:func:`offered_load` of ``trace`` on ``cores``).
    factor : float
        ``compress``: the gap factor c (new gap = c · old gap). ``shrink``: the pool factor
        P / P₀.
    source_cores : int
        P₀, the pool of the trace before the transformation.
    source_load : float
        ρ of the untouched trace on P₀.
    reached : bool
        |offered_load / target − 1| ≤ ``tolerance``; False only for a nearest pool returned on
        request.
    tolerance : float
        The relative tolerance used.
    """

    trace: pa.Table
    how: LoadMethod
    cores: int
    target: float
    offered_load: float
    factor: float
    source_cores: int
    source_load: float
    reached: bool
    tolerance: float

    @property
    def relative_error(self) -> float:
        """offered_load / target − 1."""
        return self.offered_load / self.target - 1.0

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types (everything but the table)."""
        return {
            "how": self.how,
            "cores": self.cores,
            "target": self.target,
            "offered_load": self.offered_load,
            "relative_error": self.relative_error,
            "factor": self.factor,
            "source_cores": self.source_cores,
            "source_load": self.source_load,
            "reached": self.reached,
            "tolerance": self.tolerance,
            "definition": "sum(run_s * cores) / (cores P * (last submit - first submit))",
        }


def _arrays(trace: pa.Table) -> tuple[np.ndarray[Any, np.dtype[np.float64]], float, int]:
    """Submit times, total work Σ run·cores and the largest job, with checks."""
    for name in ("submit_s", "run_s", "cores"):
        if name not in trace.column_names:
            msg = f"the trace has no column {name!r}"
            raise ConfigError(msg)
        if trace.column(name).null_count:
            msg = f"the trace's {name} column has nulls"
            raise ConfigError(msg)
    submit = np.asarray(trace.column("submit_s").to_numpy(), dtype=np.float64)
    run = np.asarray(trace.column("run_s").to_numpy(), dtype=np.float64)
    cores = np.asarray(trace.column("cores").to_numpy(), dtype=np.float64)
    if not (np.isfinite(submit).all() and np.isfinite(run).all()):
        msg = "the trace's submit_s and run_s must be finite"
        raise ConfigError(msg)
    if submit.size < 2:
        msg = f"a trace of {submit.size} job(s) has no arrival span: its offered load is undefined"
        raise ConfigError(msg)
    work = float(np.sum(run * cores))
    return submit, work, int(cores.max())


def _span(submit: np.ndarray[Any, np.dtype[np.float64]]) -> float:
    span = float(submit.max() - submit.min())
    if not span > 0:
        msg = "every job of the trace arrives at the same instant: its offered load is undefined"
        raise ConfigError(msg)
    return span


def offered_load(trace: pa.Table, cores: int | None = None) -> float:
    """Return the offered load ρ = Σ run·cores / (P · (last submit − first submit)).

    Parameters
    ----------
    trace : pyarrow.Table
        A ``trace`` table (any row order).
    cores : int, optional
        P; default the trace metadata's ``cores``.

    Returns
    -------
    float
        ρ (see the module docstring for its relation to the simulated utilisation).

    Raises
    ------
    ConfigError
        If P is not positive or unknown, or the trace has fewer than two jobs or a zero span.

    Examples
    --------
    Three one-core jobs of 50 s arriving over 100 s on 2 cores: 150 / (2 · 100).

    >>> import pyarrow as pa
    >>> t = pa.table({"submit_s": [0.0, 40.0, 100.0], "run_s": [50.0] * 3, "cores": [1, 1, 1]})
    >>> offered_load(t, cores=2)
    0.75
    """
    pool = _pool_of(trace, cores)
    submit, work, _ = _arrays(trace)
    return work / (pool * _span(submit))


def _pool_of(trace: pa.Table, cores: int | None) -> int:
    if cores is None:
        try:
            cores = int(trace_metadata(trace)["cores"])
        except SchemaError as exc:
            msg = "the trace has no cores P in its metadata; pass cores="
            raise ConfigError(msg) from exc
    if isinstance(cores, bool) or int(cores) != cores or cores < 1:
        msg = f"cores must be a positive integer, not {cores!r}"
        raise ConfigError(msg)
    return int(cores)


def _check_target(load: float) -> float:
    target = float(load)
    if not (math.isfinite(target) and target > 0):
        msg = f"the target offered load must be positive and finite, not {load!r}"
        raise ConfigError(msg)
    return target


def _compressed(
    submit: np.ndarray[Any, np.dtype[np.float64]], factor: float
) -> np.ndarray[Any, np.dtype[np.float64]]:
    """submit'_j = t_0 + c (submit_j − t_0); refuses when rounding would merge two arrivals."""
    t0 = float(submit.min())
    out = t0 + factor * (submit - t0)
    order = np.argsort(submit, kind="stable")
    before, after = submit[order], out[order]
    distinct = np.diff(before) > 0
    if np.any(np.diff(after)[distinct] <= 0):
        msg = (
            f"a gap factor of {factor:.3g} merges distinct submit times at float64 resolution; "
            "the job order would not be kept"
        )
        raise ConfigError(msg)
    return out


def _best_pool(work: float, span: float, target: float, smallest: int) -> int:
    """Return the integer P ≥ ``smallest`` whose load is nearest ``target`` (ties: larger P)."""
    ideal = work / (span * target)
    candidates = {max(smallest, math.floor(ideal)), max(smallest, math.ceil(ideal))}
    return min(candidates, key=lambda p: (abs(work / (p * span) / target - 1.0), -p))


def set_load(
    trace: pa.Table,
    load: float,
    *,
    how: LoadMethod = "compress",
    cores: int | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    on_unreachable: Literal["raise", "nearest"] = "raise",
) -> LoadedTrace:
    """Set a trace's offered load ρ to ``load``, by compressing its arrivals or shrinking P.

    See the module docstring for the definition of ρ and the two methods.

    Parameters
    ----------
    trace : pyarrow.Table
        A ``trace`` table (e.g. a selected segment, :func:`gridtrace.segment.segment_trace`).
    load : float
        The target ρ* (> 0; above 1 is an overload).
    how : {"compress", "shrink"}, default "compress"
        ``compress``: P fixed, inter-arrival gaps scaled by one factor. ``shrink``: arrivals
        fixed, the integer P chosen.
    cores : int, optional
        P₀, the segment's pool (e.g. :func:`gridtrace.segment.pool_during`): the pool kept by
        ``compress``, the reference of ``shrink``'s factor. Default the trace metadata's.
    tolerance : float, default 0.02
        Largest relative miss |ρ / ρ* − 1| accepted (``shrink`` only: ``compress`` is exact).
    on_unreachable : {"raise", "nearest"}, default "raise"
        ``shrink`` only, when no admissible P is within the tolerance: raise
        :class:`LoadUnreachableError`, or return the nearest P with ``reached = False``.

    Returns
    -------
    LoadedTrace
        The trace (metadata ``cores`` = P, ``provenance["load"]`` records how) and the figures.

    Raises
    ------
    ConfigError
        If an argument is bad, P₀ is unknown, a job needs more than P₀ cores (``compress``), or
        the trace has fewer than two jobs or a zero arrival span.
    LoadUnreachableError
        ``shrink`` with ``on_unreachable="raise"``: the target needs a pool smaller than the
        largest job, or no integer P is within the tolerance.

    Examples
    --------
    >>> import pyarrow as pa
    >>> t = pa.table({"submit_s": [0.0, 40.0, 100.0], "run_s": [50.0] * 3, "cores": [1, 1, 1]})
    >>> out = set_load(t, 0.5, cores=2)  # 0.75 -> 0.5: gaps × 1.5
    >>> out.trace.column("submit_s").to_pylist(), out.factor, out.offered_load
    ([0.0, 60.0, 150.0], 1.5, 0.5)
    >>> out = set_load(t, 0.5, how="shrink", cores=2)  # 150 core-s / (P · 100 s) = 0.5: P = 3
    >>> out.cores, out.offered_load
    (3, 0.5)
    """
    if how not in LOAD_METHODS:
        msg = f"how must be one of {LOAD_METHODS}, not {how!r}"
        raise ConfigError(msg)
    if not (math.isfinite(tolerance) and tolerance >= 0):
        msg = f"tolerance must be a non-negative number, not {tolerance!r}"
        raise ConfigError(msg)
    if on_unreachable not in ("raise", "nearest"):
        msg = f"on_unreachable must be 'raise' or 'nearest', not {on_unreachable!r}"
        raise ConfigError(msg)
    target = _check_target(load)
    source_cores = _pool_of(trace, cores)
    submit, work, largest = _arrays(trace)
    span = _span(submit)
    source_load = work / (source_cores * span)
    if how == "compress":
        if largest > source_cores:
            msg = f"a job needs {largest} cores, more than the pool's {source_cores}"
            raise ConfigError(msg)
        factor = source_load / target
        new_submit = _compressed(submit, factor)
        index = trace.column_names.index("submit_s")
        table = trace.set_column(
            index, trace.schema.field(index), pa.array(new_submit, pa.float64())
        )
        pool = source_cores
        achieved = work / (pool * _span(new_submit))
    else:
        table = trace
        pool = _best_pool(work, span, target, max(largest, 1))
        achieved = work / (pool * span)
        factor = pool / source_cores
    # compress is exact up to rounding, whatever the tolerance
    reached = abs(achieved / target - 1.0) <= max(tolerance, 1e-9)
    if not reached and on_unreachable == "raise":
        if work / (max(largest, 1) * span) < target * (1.0 - tolerance):
            why = (
                f"it needs a pool of {work / (span * target):.1f} cores, smaller than the "
                f"largest job ({largest} cores); the highest load reachable by shrinking is "
                f"{work / (max(largest, 1) * span):.4f}"
            )
        else:
            why = f"the nearest integer pool, {pool} cores, gives {achieved:.4f}"
        msg = (
            f"offered load {target} is not reachable by shrinking the pool within "
            f"{tolerance:.0%}: {why}. Compress the arrivals instead (how='compress')"
        )
        raise LoadUnreachableError(msg, target=target, nearest_cores=pool, nearest_load=achieved)
    result = LoadedTrace(
        trace=table,
        how=how,
        cores=pool,
        target=target,
        offered_load=achieved,
        factor=factor,
        source_cores=source_cores,
        source_load=source_load,
        reached=reached,
        tolerance=tolerance,
    )
    return _with_metadata(result)


def _with_metadata(result: LoadedTrace) -> LoadedTrace:
    """Record the load in the trace metadata (a table without trace metadata is left as is)."""
    try:
        meta = trace_metadata(result.trace)
    except SchemaError:
        return result
    provenance = dict(meta["provenance"]) if isinstance(meta["provenance"], dict) else {}
    provenance["load"] = result.to_dict()
    table = with_trace_metadata(
        result.trace,
        origin=meta["origin"],
        site=meta["site"],
        cores=result.cores,
        tau_s=meta["tau_s"],
        provenance=provenance,
    )
    return replace(result, trace=table)


def load_sweep(
    trace: pa.Table,
    loads: Iterable[float] = DEFAULT_LOADS,
    *,
    how: LoadMethod | Iterable[LoadMethod] = LOAD_METHODS,
    cores: int | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    on_unreachable: Literal["raise", "nearest"] = "raise",
) -> list[LoadedTrace]:
    """Set a trace to each of several offered loads, by each method asked for.

    Parameters
    ----------
    trace : pyarrow.Table
        A ``trace`` table.
    loads : iterable of float, default (0.5, 0.7, 0.85, 0.95)
        Target loads ρ*.
    how : str or iterable of str, default ("compress", "shrink")
        The methods (see :func:`set_load`).
    cores, tolerance, on_unreachable
        As in :func:`set_load`.

    Returns
    -------
    list of LoadedTrace
        One per (method, load), methods outer, in the order given.
    """
    methods: tuple[LoadMethod, ...] = (how,) if isinstance(how, str) else tuple(how)
    targets = tuple(loads)
    return [
        set_load(
            trace, load, how=m, cores=cores, tolerance=tolerance, on_unreachable=on_unreachable
        )
        for m in methods
        for load in targets
    ]
