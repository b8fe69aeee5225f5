"""Provisioning policies: how many cores the (elastic) pool holds.

The engine asks a provisioning policy for a pool size at each of its decision times, after the
completions and arrivals of that instant and before the scheduling decision. The pool never
shrinks below the cores in use: a smaller request is clamped to them (the running jobs keep their
cores; the pool does not shrink later on its own).

Besides the fixed and the scheduled pool, this module holds the two non-RL baselines of the
elastic experiments: :class:`ThresholdAutoscaler`, a reactive threshold rule as cloud autoscalers
apply it, deciding at the RL controller's decision times from the same exact integrals; and
:func:`best_static_pool`, the fixed pool size chosen in hindsight on the evaluated trace for the
RL controller's objective λ_e W̄ + (1 − λ_e) U.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError, SchemaError, SimulationError

if TYPE_CHECKING:
    from gridtrace.sim._engine import ClusterState, JobRows, QueueView
    from gridtrace.sim._result import SimulationResult

__all__ = [
    "PROVISIONING",
    "FixedPool",
    "ProvisioningPolicy",
    "ScheduledPool",
    "StaticPoolScore",
    "StaticPoolSearch",
    "ThresholdAutoscaler",
    "best_static_pool",
    "make_provisioning",
]

logger = library_logger(__name__)

PROVISIONING = ("fixed", "scheduled", "threshold")
"""Names accepted by :func:`make_provisioning`."""


@runtime_checkable
class ProvisioningPolicy(Protocol):
    """Chooses the pool size P at its own decision times.

    Attributes
    ----------
    name : str
        Identifier written into results.

    Notes
    -----
    A policy may also have an ``every_starts`` attribute (int or None): the engine then asks it
    again, at the same instant, as soon as that many jobs have started since its last decision,
    besides its own decision times (``next_decision`` is called after every decision).
    """

    name: str

    def next_decision(self, after: float) -> float:
        """Return the first decision time strictly after ``after`` (``math.inf`` if none)."""
        ...

    def pool_size(self, queue: QueueView, state: ClusterState, now: float) -> int:
        """Return the pool size wanted from ``now`` on (clamped to the cores in use)."""
        ...


class FixedPool:
    """A pool that never changes: no provisioning decision at all."""

    name = "fixed"

    def next_decision(self, after: float) -> float:
        """Return ``math.inf``: there is no decision."""
        return math.inf

    def pool_size(self, queue: QueueView, state: ClusterState, now: float) -> int:
        """Return the current size (never called by the engine)."""
        return state.pool_size


class ScheduledPool:
    """Pool sizes set at given times (a step function), from the initial size of the run.

    Parameters
    ----------
    changes : sequence of (time_s, size)
        At ``time_s`` the pool becomes ``size`` cores (or the cores in use, if more). Times must be
        distinct and finite, sizes >= 0.

    Examples
    --------
    >>> pool = ScheduledPool([(3600.0, 40), (7200.0, 80)])
    >>> pool.next_decision(-math.inf), pool.next_decision(3600.0), pool.next_decision(7200.0)
    (3600.0, 7200.0, inf)
    """

    name = "scheduled"

    def __init__(self, changes: Sequence[tuple[float, int]]) -> None:
        steps = sorted((float(t), int(size)) for t, size in changes)
        times = [t for t, _ in steps]
        if any(not math.isfinite(t) for t in times) or len(set(times)) != len(times):
            raise ConfigError(f"pool change times must be finite and distinct: {times}")
        if any(size < 0 for _, size in steps):
            raise ConfigError("pool sizes must be >= 0")
        self.changes = steps
        self._times = times

    def next_decision(self, after: float) -> float:
        """Return the first change time strictly after ``after``."""
        k = bisect.bisect_right(self._times, after)
        return self._times[k] if k < len(self._times) else math.inf

    def pool_size(self, queue: QueueView, state: ClusterState, now: float) -> int:
        """Return the size of the last change at or before ``now``."""
        k = bisect.bisect_right(self._times, now) - 1
        return self.changes[k][1] if k >= 0 else state.pool_size


def next_multiple(first: float, interval_s: float, after: float) -> float:
    """Return the first time ``first + k × interval_s`` (k ≥ 0) strictly after ``after``.

    Decision times of the provisioning controllers (this module's autoscaler and
    :class:`~gridtrace.sim.rl.ElasticProvisioner`). The division can round k down by one, so
    the result is stepped up until it is past ``after``: returning ``after`` itself would make
    the engine ask again at the same instant forever.
    """
    if after < first:
        return first
    k = math.floor((after - first) / interval_s)
    t = first + k * interval_s
    while t <= after:
        k += 1
        t = first + k * interval_s
    return t


class ThresholdAutoscaler:
    """A threshold (step-scaling) autoscaler with a target utilisation band and a cooldown.

    At each decision it measures the utilisation of the interval since its previous decision,
    U = core-seconds used / core-seconds provisioned, exactly, from
    :class:`~gridtrace.sim.ClusterState`'s integral ``busy_core_s`` (the pool size cannot change
    between two of its decisions, so the provisioned core-seconds are the pool size times the
    interval's length). Then, in this order:

    1. within ``cooldown_s`` of its last change of the pool size (t − t_change < cooldown_s), it
       keeps the pool as it is;
    2. if U > ``high``, or (with ``queue_cores``) the queued jobs need at least ``queue_cores``
       more cores than are idle, it grows the pool by the step;
    3. else if U < ``low`` and no queued job is held back (the queued jobs need no more cores
       than are idle; this test is dropped when ``queue_cores`` is None), it shrinks the pool by
       the step;
    4. the size is clamped to [max(``floor``, cores in use), ``ceiling``]; a size different from
       the current one is a change, and starts the cooldown.

    The step is ``step`` cores, or, with ``step_fraction``, max(``step``, ⌈``step_fraction`` ×
    pool size⌉) cores. The first decision (at the first arrival) has no interval to measure: only
    the queue test and the clamp apply there.

    Decision times are those of the RL controller (:class:`~gridtrace.sim.rl.ElasticProvisioner`)
    with the same ``interval_s`` and ``every_jobs``: every ``interval_s`` from the first arrival,
    or, with ``every_jobs`` = m, also as soon as m jobs have started since the last decision (the
    clock then restarts at each decision). It sees no more than the agent: the cluster state and
    the queue at its decision times. A decision at the same instant as the previous one (possible
    with ``every_jobs``) has an empty interval; U is then the instantaneous cores in use / pool.

    This is the rule of cloud "step scaling" policies: AWS Application Auto Scaling adds or
    removes capacity in steps when a metric alarm breaches a threshold (``AdjustmentType``
    ``ChangeInCapacity`` ↔ ``step``; ``PercentChangeInCapacity`` with ``MinAdjustmentMagnitude``
    ↔ ``step_fraction`` with ``step``) and waits a ``Cooldown`` after a scaling activity; the
    band [``low``, ``high``] plays the role of the tolerance around the target utilisation in
    AWS target tracking and in the Kubernetes Horizontal Pod Autoscaler, whose stabilisation
    window the cooldown replaces (a single cooldown for both directions, and a fixed step rather
    than HPA's proportional desired = ⌈current × metric / target⌉).

    Parameters
    ----------
    ceiling : int
        Largest pool size (>= floor).
    floor : int, default 30
        Smallest pool size (>= 0); the pool is never below it nor below the cores in use.
    low, high : float, default 0.5 and 0.9
        The target utilisation band, 0 <= low < high <= 1 (U is at most 1, so ``high`` = 1 leaves
        growth to the queue test).
    step : int, default 8
        Cores added or removed per change (the least change with ``step_fraction``), >= 1.
    step_fraction : float, optional
        If given (in (0, 1]), the step is max(step, ⌈step_fraction × pool size⌉).
    interval_s : float, default 900
        Time between decisions (with ``every_jobs``: the longest time between decisions), > 0.
    cooldown_s : float, default 0
        After a change, no further change for this long (>= 0).
    queue_cores : int or None, default 1
        Grow when the queued jobs need at least this many cores more than are idle (>= 1); None
        ignores the queue and scales on U alone.
    every_jobs : int, optional
        Also decide once this many jobs have started since the last decision (>= 1).
    name : str, default "threshold"
        Written into results.

    Attributes
    ----------
    every_starts : int or None
        ``every_jobs``, under the name the engine reads.
    decisions_, changes_ : int
        Decisions and changes of the pool size of the current run.
    history_ : list of tuple
        (time, size, U, W̄) of every decision of the current run, as the RL controller's
        ``history_``: the size chosen, the interval's U (NaN at the first decision) and the mean
        W of the jobs completed in the interval (of the run so far if none did, 1 if none has).

    References
    ----------
    AWS, "StepScalingPolicyConfiguration", Application Auto Scaling API Reference,
    https://docs.aws.amazon.com/autoscaling/application/APIReference/API_StepScalingPolicyConfiguration.html
    (AdjustmentType, MinAdjustmentMagnitude, Cooldown).
    Kubernetes, "Horizontal Pod Autoscaling",
    https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/ (algorithm,
    tolerance, stabilisation window).

    Examples
    --------
    >>> scaler = ThresholdAutoscaler(ceiling=88, low=0.5, high=0.9, step=8, cooldown_s=1800.0)
    >>> scaler.describe()["band"]
    [0.5, 0.9]
    """

    def __init__(
        self,
        *,
        ceiling: int,
        floor: int = 30,
        low: float = 0.5,
        high: float = 0.9,
        step: int = 8,
        step_fraction: float | None = None,
        interval_s: float = 900.0,
        cooldown_s: float = 0.0,
        queue_cores: int | None = 1,
        every_jobs: int | None = None,
        name: str = "threshold",
    ) -> None:
        if not 0 <= floor <= ceiling:
            raise ConfigError(f"need 0 <= floor <= ceiling, got floor {floor}, ceiling {ceiling}")
        if not 0.0 <= low < high <= 1.0:
            raise ConfigError(f"need 0 <= low < high <= 1, got low {low}, high {high}")
        if step < 1:
            raise ConfigError(f"step must be >= 1 core, got {step}")
        if step_fraction is not None and not 0.0 < step_fraction <= 1.0:
            raise ConfigError(f"step_fraction must be in (0, 1], got {step_fraction}")
        if not (math.isfinite(interval_s) and interval_s > 0):
            raise ConfigError(f"interval_s must be finite and > 0, got {interval_s}")
        if not (math.isfinite(cooldown_s) and cooldown_s >= 0):
            raise ConfigError(f"cooldown_s must be finite and >= 0, got {cooldown_s}")
        if queue_cores is not None and queue_cores < 1:
            raise ConfigError(f"queue_cores must be >= 1 or None, got {queue_cores}")
        if every_jobs is not None and every_jobs < 1:
            raise ConfigError(f"every_jobs must be >= 1 or None, got {every_jobs}")
        self.floor = int(floor)
        self.ceiling = int(ceiling)
        self.low = float(low)
        self.high = float(high)
        self.step = int(step)
        self.step_fraction = None if step_fraction is None else float(step_fraction)
        self.interval_s = float(interval_s)
        self.cooldown_s = float(cooldown_s)
        self.queue_cores = None if queue_cores is None else int(queue_cores)
        self.every_starts = None if every_jobs is None else int(every_jobs)
        self.name = name
        self.decisions_ = 0
        self.changes_ = 0
        self.history_: list[tuple[float, int, float, float]] = []
        self._first = 0.0
        self._last: tuple[float, float, int, float] | None = None
        self._changed_at = -math.inf

    def describe(self) -> dict[str, Any]:
        """Return the settings and the decision counts (JSON types)."""
        return {
            "name": self.name,
            "kind": "threshold",
            "floor": self.floor,
            "ceiling": self.ceiling,
            "band": [self.low, self.high],
            "step": self.step,
            "step_fraction": self.step_fraction,
            "interval_s": self.interval_s,
            "cooldown_s": self.cooldown_s,
            "queue_cores": self.queue_cores,
            "every_jobs": self.every_starts,
            "decisions": self.decisions_,
            "changes": self.changes_,
        }

    def reset(self, jobs: JobRows) -> None:
        """Start a run: decisions from the first arrival on, no cooldown, an empty history."""
        self._first = float(jobs.submit_s[0]) if len(jobs.submit_s) else 0.0
        self._last = None
        self._changed_at = -math.inf
        self.decisions_ = 0
        self.changes_ = 0
        self.history_ = []

    def next_decision(self, after: float) -> float:
        """Return the next decision time (the RL controller's clock, see the class docstring)."""
        if self.every_starts is None:
            return next_multiple(self._first, self.interval_s, after)
        return self._first if after == -math.inf else after + self.interval_s

    def step_cores(self, size: int) -> int:
        """Return the cores one step adds to or removes from a pool of ``size`` cores."""
        if self.step_fraction is None:
            return self.step
        return max(self.step, math.ceil(self.step_fraction * size))

    def pool_size(self, queue: QueueView, state: ClusterState, now: float) -> int:
        """Return the pool size from ``now`` on (see the class docstring)."""
        current = state.pool_size
        u, w_bar = self._measure(state, now)
        target = current
        if now - self._changed_at >= self.cooldown_s:
            held_back = 0
            if self.queue_cores is not None:
                cores = queue.cores
                held_back = sum(cores[row] for row in queue) - state.free_cores
            grow = u > self.high or (self.queue_cores is not None and held_back >= self.queue_cores)
            if grow:
                target = current + self.step_cores(current)
            elif u < self.low and held_back <= 0:
                target = current - self.step_cores(current)
            target = min(target, self.ceiling)
            target = max(target, self.floor, state.in_use)
        if target != current:
            self._changed_at = now
            self.changes_ += 1
        self._last = (now, state.busy_core_s, state.completed, state.completed_w)
        self.history_.append((now, target, u, w_bar))
        self.decisions_ += 1
        return target

    def _measure(self, state: ClusterState, now: float) -> tuple[float, float]:
        """Return (U, W̄) of the interval since the last decision (U NaN before the first)."""
        if self._last is None:
            w_bar = state.completed_w / state.completed if state.completed else 1.0
            return math.nan, w_bar
        t0, busy0, done0, w0 = self._last
        if now > t0:
            provisioned = state.pool_size * (now - t0)
            used = state.busy_core_s - busy0
            u = min(1.0, used / provisioned) if provisioned > 0 else 1.0
        else:
            u = state.in_use / state.pool_size if state.pool_size else 1.0
        done = state.completed - done0
        if done:
            w_bar = (state.completed_w - w0) / done
        else:
            w_bar = state.completed_w / state.completed if state.completed else 1.0
        return u, w_bar


def make_provisioning(
    name: str | ProvisioningPolicy | None, *, cores: int | None = None, **options: Any
) -> ProvisioningPolicy:
    """Return a provisioning policy by name (see :data:`PROVISIONING`), or pass one through.

    Parameters
    ----------
    name : str, ProvisioningPolicy or None
        ``"fixed"`` (or None): :class:`FixedPool`; ``"scheduled"``: :class:`ScheduledPool`
        (option ``changes``); ``"threshold"``: :class:`ThresholdAutoscaler`. A policy object is
        returned as it is (then no option may be given).
    cores : int, optional
        The site's P. For ``"threshold"`` without a ``ceiling`` option, the ceiling is
        round(1.1 P), the RL controller's default, and the floor (default 30) is capped at P.
    **options
        Keyword arguments of the class.

    Raises
    ------
    ConfigError
        If the name is unknown, an option is bad or missing, or the ceiling cannot be set.

    Examples
    --------
    >>> make_provisioning("threshold", cores=80, cooldown_s=1800.0).ceiling
    88
    """
    if name is None or name == "fixed":
        if options:
            raise ConfigError(f"the fixed pool takes no options, got {sorted(options)}")
        return FixedPool()
    if not isinstance(name, str):
        if options:
            raise ConfigError("options are only for a provisioning policy given by name")
        return name
    if name == "scheduled":
        if set(options) != {"changes"}:
            raise ConfigError("the scheduled pool takes exactly one option, changes")
        return ScheduledPool(options["changes"])
    if name == "threshold":
        opts = dict(options)
        if "ceiling" not in opts:
            if cores is None:
                raise ConfigError("the threshold autoscaler needs a ceiling (or cores=P)")
            opts["ceiling"] = round(1.1 * cores)
            opts["floor"] = min(int(opts.get("floor", 30)), cores)
        try:
            return ThresholdAutoscaler(**opts)
        except TypeError as exc:
            raise ConfigError(f"bad option of the threshold autoscaler: {exc}") from None
    known = ", ".join(PROVISIONING)
    raise ConfigError(f"unknown provisioning policy {name!r}; known: {known}")


StaticMetric = Literal["objective", "w_mean", "w_interactive_mean"]


@dataclass(frozen=True, slots=True)
class StaticPoolScore:
    """The scores of one fixed pool size (a row of :class:`StaticPoolSearch`).

    Attributes
    ----------
    size : int
        Pool size P, cores.
    feasible : bool
        False if a job needs more cores than ``size`` (then it was not simulated and every score
        is None).
    provisioned_core_h : float or None
        Cost: P × (last end − first submit) / 3600, core-hours (the summary's
        ``provisioned_core_s``).
    utilisation : float or None
        U = core-seconds used / core-seconds provisioned over the run (``elastic_utilisation``).
    w_mean, w_interactive_mean : float or None
        Mean W of all / interactive measured jobs (warm-up and drain excluded as in the summary).
    wait_interactive_mean_s : float or None
        Mean wait of the measured interactive jobs, seconds.
    objective : float or None
        λ_e ``w_mean`` + (1 − λ_e) ``utilisation``.
    """

    size: int
    feasible: bool
    provisioned_core_h: float | None = None
    utilisation: float | None = None
    w_mean: float | None = None
    w_interactive_mean: float | None = None
    wait_interactive_mean_s: float | None = None
    objective: float | None = None


@dataclass(frozen=True, eq=False)
class StaticPoolSearch:
    """What :func:`best_static_pool` returns: every size's scores and the one chosen.

    Attributes
    ----------
    scores : tuple of StaticPoolScore
        One per candidate size, ascending.
    best_size : int
        The size with the highest objective (the smallest of equal ones: the cheapest).
    lambda_e : float
        Weight of W̄ in the objective.
    results : dict of int to SimulationResult
        The simulation of every feasible size, if ``keep_results`` was true (else empty).
    """

    scores: tuple[StaticPoolScore, ...]
    best_size: int
    lambda_e: float
    results: Mapping[int, SimulationResult] = field(default_factory=dict)

    @property
    def best(self) -> StaticPoolScore:
        """The scores of :attr:`best_size`."""
        return self.score_of(self.best_size)

    def score_of(self, size: int) -> StaticPoolScore:
        """Return the scores of pool size ``size``.

        Raises
        ------
        KeyError
            If ``size`` was not a candidate.
        """
        for row in self.scores:
            if row.size == size:
                return row
        raise KeyError(size)

    def best_within(
        self, max_core_h: float, metric: StaticMetric = "objective"
    ) -> StaticPoolScore | None:
        """Return the best size by ``metric`` among those costing at most ``max_core_h``.

        For comparisons at equal cost: given the core-hours an elastic controller provisioned,
        the best static pool that was not more expensive (None if every size costs more). Ties
        go to the cheaper size.
        """
        best: StaticPoolScore | None = None
        for row in self.scores:
            value = getattr(row, metric)
            if value is None or row.provisioned_core_h is None:
                continue
            if row.provisioned_core_h > max_core_h:
                continue
            if best is None or value > getattr(best, metric):
                best = row
        return best

    def to_table(self) -> pa.Table:
        """Return the scores as a table, one row per size, with a ``chosen`` column."""
        names = [
            "size",
            "feasible",
            "provisioned_core_h",
            "utilisation",
            "w_mean",
            "w_interactive_mean",
            "wait_interactive_mean_s",
            "objective",
        ]
        columns: dict[str, Any] = {
            "size": pa.array([r.size for r in self.scores], pa.int64()),
            "feasible": pa.array([r.feasible for r in self.scores], pa.bool_()),
        }
        for name in names[2:]:
            columns[name] = pa.array([getattr(r, name) for r in self.scores], pa.float64())
        columns["chosen"] = pa.array([r.size == self.best_size for r in self.scores])
        return pa.table(columns)

    def describe(self) -> dict[str, Any]:
        """Return the search as JSON types: λ_e, the chosen size and every size's scores."""
        return {
            "lambda_e": self.lambda_e,
            "objective": "lambda_e * W_mean + (1 - lambda_e) * U",
            "best_size": self.best_size,
            "scores": [asdict(r) for r in self.scores],
        }


def _static_sizes(
    trace: pa.Table,
    sizes: Sequence[int] | None,
    floor: int,
    ceiling: int | None,
    levels: int | None,
) -> list[int]:
    """Return the candidate sizes of :func:`best_static_pool`, ascending and distinct."""
    if sizes is not None:
        out = sorted({int(s) for s in sizes})
        if not out or out[0] < 1:
            raise ConfigError(f"sizes must be a non-empty set of sizes >= 1, got {list(sizes)}")
        return out
    if ceiling is None:
        from gridtrace.schema import trace_metadata

        try:
            p = int(trace_metadata(trace)["cores"])
        except SchemaError:
            raise ConfigError("the trace has no metadata: pass ceiling= or sizes=") from None
        ceiling = max(round(1.1 * p), min(floor, p))
        floor = min(floor, p)
    lo = max(1, int(floor))
    if ceiling < lo:
        raise ConfigError(f"need 1 <= floor <= ceiling, got floor {floor}, ceiling {ceiling}")
    if levels is None:
        return list(range(lo, int(ceiling) + 1))
    if levels < 2:
        raise ConfigError(f"levels must be >= 2 or None, got {levels}")
    grid = np.unique(np.round(np.linspace(lo, ceiling, levels)).astype(np.int64))
    return [int(s) for s in grid]


def best_static_pool(
    trace: pa.Table,
    *,
    lambda_e: float = 0.5,
    sizes: Sequence[int] | None = None,
    floor: int = 30,
    ceiling: int | None = None,
    levels: int | None = None,
    keep_results: bool = False,
    **simulate_options: Any,
) -> StaticPoolSearch:
    """Choose in hindsight the fixed pool size that scores best on ``trace``.

    Every candidate size P is simulated as a fixed pool on the whole ``trace`` (the evaluated
    period, known in advance: this is an oracle baseline for an elastic controller, not a
    policy one could run). The score is the RL elastic controller's objective on the run,
    λ_e W̄ + (1 − λ_e) U, with W̄ the mean W of the measured jobs (the summary's
    ``classes.all.responsiveness_mean``, warm-up and drain excluded) and U the core-seconds used
    over the core-seconds provisioned from the first submit to the last end (the summary's
    ``elastic_utilisation``). The agent's reward averages the same two quantities per decision
    interval; on a fixed pool the run's U is exactly the time-weighted mean of the intervals'.

    Parameters
    ----------
    trace : pyarrow.Table
        A ``trace`` table (as for :func:`~gridtrace.sim.simulate`).
    lambda_e : float, default 0.5
        Weight of W̄, in [0, 1].
    sizes : sequence of int, optional
        The candidate sizes. Default: every integer from ``floor`` to ``ceiling``, or ``levels``
        sizes evenly spaced between them (rounded, as the RL controller's levels).
    floor : int, default 30
        Smallest candidate (capped at the trace's P when the ceiling comes from it).
    ceiling : int, optional
        Largest candidate; default round(1.1 P) with P from the trace metadata (the RL
        controller's default).
    levels : int, optional
        Number of evenly spaced sizes instead of every integer (>= 2).
    keep_results : bool, default False
        Keep every size's :class:`~gridtrace.sim.SimulationResult` in ``results``.
    **simulate_options
        Passed to :func:`~gridtrace.sim.simulate` for every size (``policy``, ``estimator``,
        ``vo_shares``, ``warmup_jobs``, ``drain_jobs``, ...; not ``cores`` nor
        ``provisioning``). Pass ``rng`` as an int, not a Generator, so that every size sees the
        same random numbers.

    Returns
    -------
    StaticPoolSearch
        Every size's cost in core-hours, U, mean W (all and interactive), interactive mean wait
        and objective; the chosen size; ``best_within(core_h)`` for comparisons at equal cost.

    Raises
    ------
    ConfigError
        If λ_e or the sizes are bad, or ``cores``/``provisioning`` is among the options.
    SimulationError
        If no candidate size holds the trace's largest job.

    Examples
    --------
    >>> from gridtrace.models import generate_preset_trace
    >>> trace = generate_preset_trace("PE-1", rng=7, size=2000)
    >>> search = best_static_pool(trace, lambda_e=0.5, levels=3)
    >>> [row.size for row in search.scores], search.best_size
    ([30, 59, 88], 88)
    """
    from gridtrace.sim._engine import simulate

    if not 0.0 <= lambda_e <= 1.0:
        raise ConfigError(f"lambda_e must be in [0, 1], got {lambda_e}")
    bad = {"cores", "provisioning"} & set(simulate_options)
    if bad:
        raise ConfigError(f"best_static_pool sets {sorted(bad)} itself")
    candidates = _static_sizes(trace, sizes, floor, ceiling, levels)
    biggest = int(pc.max(trace.column("cores")).as_py() or 0) if trace.num_rows else 0
    scores: list[StaticPoolScore] = []
    results: dict[int, SimulationResult] = {}
    for size in candidates:
        if size < biggest:
            scores.append(StaticPoolScore(size=size, feasible=False))
            continue
        result = simulate(trace, cores=size, **simulate_options)
        summary = result.summary
        classes = summary["classes"]
        u = summary.get("elastic_utilisation")
        w = classes["all"].get("responsiveness_mean")
        prov = summary.get("provisioned_core_s")
        objective = None if u is None or w is None else lambda_e * w + (1.0 - lambda_e) * u
        scores.append(
            StaticPoolScore(
                size=size,
                feasible=True,
                provisioned_core_h=None if prov is None else prov / 3600.0,
                utilisation=u,
                w_mean=w,
                w_interactive_mean=classes["interactive"].get("responsiveness_mean"),
                wait_interactive_mean_s=classes["interactive"].get("wait_mean_s"),
                objective=objective,
            )
        )
        if keep_results:
            results[size] = result
    scored = [r for r in scores if r.objective is not None]
    if not scored:
        raise SimulationError(
            f"no candidate pool size holds the largest job ({biggest} cores): {candidates}"
        )
    best = max(scored, key=lambda r: (r.objective, -r.size))
    logger.info(
        "best static pool for lambda_e=%.3g: %d cores (objective %.4f) of %d candidates",
        lambda_e,
        best.size,
        best.objective,
        len(candidates),
    )
    return StaticPoolSearch(
        scores=tuple(scores), best_size=best.size, lambda_e=float(lambda_e), results=results
    )
