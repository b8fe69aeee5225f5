"""The synthetic workload of the deep-RL scheduling paper DeepRM (Mao et al., HotNets 2016).

What the generator does
-----------------------
This follows the published code (``hongzimao/deeprm``: ``parameters.py`` for the defaults,
``job_distribution.py:Dist.bi_model_dist`` for a job, ``environment.py:generate_sequence_work``
for the arrivals and ``Env.__init__`` for the load), not a paraphrase of the paper. Time is
discrete, in *time steps*; the cluster has ``num_res`` = 2 resource types of ``res_slot`` = 10
slots each. At every step one job arrives with probability p (Bernoulli; at most one job per step).
A job has

- a length: with probability 0.8 a *short* job, uniform on the integers 1 … ⌊L/5⌋ = 3, else a
  *long* job, uniform on ⌊2L/3⌋ … L = 10 … 15, with ``max_job_len`` L = 15 (the code is Python 2,
  so ``job_len * 2 / 3`` and ``job_len / 5`` are integer divisions);
- a *dominant* resource, uniform among the ``num_res`` types, whose demand is uniform on
  ⌊S/2⌋ … S = 5 … 10 slots, and a demand uniform on 1 … ⌊S/5⌋ = 1 … 2 slots of every other type,
  with ``max_job_size`` S = 10.

The length and the demands are independent, so the load on resource type r, as the code computes
it (``Σ len · demand_r / res_slot / steps``), has the expectation

    load = p · E[len] · E[demand_r] / res_slot,
    E[len] = 0.8 · (1 + 3)/2 + 0.2 · (10 + 15)/2 = 4.1 steps,
    E[demand_r] = (1/2) · (5 + 10)/2 + (1/2) · (1 + 2)/2 = 4.5 slots,

i.e. load = 1.845 p on each type, and

    **p = load · res_slot / (E[len] · E[demand_r])** = load / 1.845

with the defaults (:attr:`DeepRMWorkload.arrival_probability`; the means are computed from the
parameters, not hard-coded).

Where the issue text and the code differ
----------------------------------------
- The issue says "cores uniform in [1, 5] or [10, 15]" on 10 resources; a demand of 10–15 cannot
  fit on 10 slots. The code has no such ranges: demands are per resource type, 5–10 slots on the
  dominant type and 1–2 on the other. We follow the code.
- "a load of 10 % … 190 %": with at most one job per step (p ≤ 1) the largest load the generator
  can produce is E[len] · E[demand_r] / res_slot = 184.5 %; 190 % is not reachable without
  changing the arrival process, and :class:`DeepRMWorkload` refuses a load above the maximum
  rather than bend it. The presets :data:`DEEPRM_PRESETS` are the loads 10 % … 180 % in steps of
  10 %.
- A ``trace`` table has one resource, ``cores`` on P identical cores: the trace carries the demand
  on one type (``resource``, default 0) as ``cores`` and P = ``res_slot``. Its load on P is the
  per-type load above. :func:`deeprm_jobs` returns every type's demand for a multi-resource use.
- The code's time step has no unit; ``time_unit_s`` (default 1 s) sets it. Runtimes are
  ``length · time_unit_s`` and a job arriving at step k is submitted at ``k · time_unit_s``.
- The interactive threshold τ defaults to the longest short job (⌊L/5⌋ steps, 3 s at 1 s per
  step), so that "interactive" is exactly DeepRM's short class.
- The code draws a job at step 0 that its environment never releases (it reads the sequence from
  step 1 on); here every drawn job is in the trace.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError
from gridtrace.random import SeedLike, as_seed_sequence
from gridtrace.schema import TRACE, conform, with_trace_metadata

__all__ = [
    "DEEPRM_PRESETS",
    "DeepRMJobs",
    "DeepRMWorkload",
    "deeprm_jobs",
    "deeprm_trace",
    "get_deeprm",
]

logger = library_logger(__name__)

_STREAMS = ("arrivals", "lengths", "demands")


def _uniform_mean(low: int, high: int) -> float:
    return (low + high) / 2.0


@dataclass(frozen=True, slots=True)
class DeepRMWorkload:
    """DeepRM's synthetic workload at one load (see the module docstring for every formula).

    Parameters
    ----------
    load : float
        Target load on each resource type, as DeepRM computes it (1.0 = 100 %); in
        (0, :attr:`max_load`].
    name : str, optional
        Identifier, used as the trace's ``site``; default ``"DeepRM-<load in %>"``.
    res_slot : int, default 10
        Slots per resource type (``parameters.py: res_slot``); the trace's P.
    num_res : int, default 2
        Resource types (``num_res``).
    max_job_len : int, default 15
        L, the longest job in steps (``max_job_len``); needs L ≥ 5.
    max_job_size : int, default 10
        S, the largest demand in slots (``max_job_size``); needs 5 ≤ S ≤ ``res_slot``.
    short_chance : float, default 0.8
        Probability of a short job (``job_small_chance``).
    time_unit_s : float, default 1.0
        Seconds per time step.
    tau_s : float, optional
        Interactive threshold; default the longest short job, ⌊L/5⌋ · ``time_unit_s``.
    resource : int, default 0
        The resource type whose demand becomes the trace's ``cores``.
    size : int, default 10000
        Jobs in a generated trace.
    """

    load: float
    name: str = ""
    res_slot: int = 10
    num_res: int = 2
    max_job_len: int = 15
    max_job_size: int = 10
    short_chance: float = 0.8
    time_unit_s: float = 1.0
    tau_s: float | None = None
    resource: int = 0
    size: int = 10_000

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", f"DeepRM-{100 * self.load:g}")
        if self.max_job_len < 5:
            raise ConfigError(f"max_job_len must be >= 5, got {self.max_job_len}")
        if not 5 <= self.max_job_size <= self.res_slot:
            raise ConfigError(
                f"max_job_size must be in [5, res_slot = {self.res_slot}], got {self.max_job_size}"
            )
        if self.num_res < 1 or not 0 <= self.resource < self.num_res:
            raise ConfigError(
                f"need num_res >= 1 and 0 <= resource < num_res, got {self.num_res}, "
                f"{self.resource}"
            )
        if not 0.0 <= self.short_chance <= 1.0:
            raise ConfigError(f"short_chance must be in [0, 1], got {self.short_chance}")
        if not (math.isfinite(self.time_unit_s) and self.time_unit_s > 0):
            raise ConfigError(f"time_unit_s must be positive, got {self.time_unit_s}")
        if self.tau_s is not None and not (math.isfinite(self.tau_s) and self.tau_s > 0):
            raise ConfigError(f"tau_s must be positive, got {self.tau_s}")
        if self.size < 1:
            raise ConfigError(f"size must be >= 1, got {self.size}")
        if not (math.isfinite(self.load) and 0.0 < self.load <= self.max_load * (1 + 1e-12)):
            raise ConfigError(
                f"load must be in (0, {self.max_load:.6g}], got {self.load}: with at most one "
                f"job per step (Bernoulli arrivals, p <= 1) DeepRM's generator cannot offer "
                f"more than E[len] E[demand] / res_slot = {100 * self.max_load:.4g} %"
            )

    # --- the generator's ranges (inclusive), as the Python 2 code computes them -----------------

    @property
    def short_lengths(self) -> tuple[int, int]:
        """Short job lengths, steps: 1 … ⌊L/5⌋."""
        return 1, self.max_job_len // 5

    @property
    def long_lengths(self) -> tuple[int, int]:
        """Long job lengths, steps: ⌊2L/3⌋ … L."""
        return self.max_job_len * 2 // 3, self.max_job_len

    @property
    def dominant_demands(self) -> tuple[int, int]:
        """Demand on the dominant type, slots: ⌊S/2⌋ … S."""
        return self.max_job_size // 2, self.max_job_size

    @property
    def other_demands(self) -> tuple[int, int]:
        """Demand on every other type, slots: 1 … ⌊S/5⌋."""
        return 1, self.max_job_size // 5

    # --- derived --------------------------------------------------------------------------------

    @property
    def mean_length(self) -> float:
        """E[len] in steps."""
        c = self.short_chance
        return c * _uniform_mean(*self.short_lengths) + (1 - c) * _uniform_mean(*self.long_lengths)

    @property
    def mean_demand(self) -> float:
        """E[demand] on one resource type, slots (the dominant type is uniform among them)."""
        d = 1.0 / self.num_res
        return d * _uniform_mean(*self.dominant_demands) + (1 - d) * _uniform_mean(
            *self.other_demands
        )

    @property
    def max_load(self) -> float:
        """The load at p = 1 (a job every step): ``E[len] · E[demand] / res_slot``."""
        return self.mean_length * self.mean_demand / self.res_slot

    @property
    def arrival_probability(self) -> float:
        """Bernoulli arrival probability per step: ``load · res_slot / (E[len] · E[demand])``."""
        return min(self.load / self.max_load, 1.0)

    @property
    def interactive_threshold_s(self) -> float:
        """τ in seconds (``tau_s``, or the longest short job)."""
        if self.tau_s is not None:
            return float(self.tau_s)
        return self.short_lengths[1] * self.time_unit_s

    def to_dict(self) -> dict[str, Any]:
        """Return the parameters and the derived values (JSON types)."""
        return {
            **asdict(self),
            "short_lengths": list(self.short_lengths),
            "long_lengths": list(self.long_lengths),
            "dominant_demands": list(self.dominant_demands),
            "other_demands": list(self.other_demands),
            "mean_length_steps": self.mean_length,
            "mean_demand_slots": self.mean_demand,
            "max_load": self.max_load,
            "arrival_probability": self.arrival_probability,
            "interactive_threshold_s": self.interactive_threshold_s,
        }


DEEPRM_PRESETS: Mapping[str, DeepRMWorkload] = MappingProxyType(
    {
        w.name: w
        for w in (
            DeepRMWorkload(load=pct / 100, name=f"DeepRM-{pct}") for pct in range(10, 181, 10)
        )
    }
)
"""DeepRM's workload at the loads 10 %, 20 % … 180 % (1 s per step, 10,000 jobs)."""


def get_deeprm(name: str) -> DeepRMWorkload:
    """Return the DeepRM preset called ``name`` (see :data:`DEEPRM_PRESETS`).

    Raises
    ------
    ConfigError
        If there is no such preset; the message lists the known ones.
    """
    try:
        return DEEPRM_PRESETS[name]
    except KeyError:
        known = ", ".join(DEEPRM_PRESETS)
        raise ConfigError(f"unknown DeepRM preset {name!r}; known: {known}") from None


@dataclass(frozen=True, slots=True, eq=False)
class DeepRMJobs:
    """Jobs drawn by :func:`deeprm_jobs`, in time steps and slots.

    Attributes
    ----------
    step : ndarray of int64
        Arrival step of each job (increasing; at most one job per step).
    length : ndarray of int64
        Length in steps.
    demand : ndarray of int64, shape (n, num_res)
        Slots of each resource type.
    dominant : ndarray of int64
        The dominant type of each job.
    steps : int
        Steps covered: ``steps`` when given, else the last arrival step + 1.
    """

    step: NDArray[np.int64]
    length: NDArray[np.int64]
    demand: NDArray[np.int64]
    dominant: NDArray[np.int64]
    steps: int

    def realised_load(self, res_slot: int) -> NDArray[np.float64]:
        """Load per resource type as DeepRM's code computes it: Σ len · demand / R / steps."""
        work = (self.length[:, None] * self.demand).sum(axis=0)
        return np.asarray(work / float(res_slot) / float(self.steps), dtype=np.float64)


def deeprm_jobs(
    workload: DeepRMWorkload,
    *,
    size: int | None = None,
    steps: int | None = None,
    rng: SeedLike,
) -> DeepRMJobs:
    """Draw DeepRM jobs: Bernoulli arrivals per step, bimodal lengths, a dominant resource.

    Parameters
    ----------
    workload : DeepRMWorkload
        The parameters (the load sets the arrival probability p).
    size : int, optional
        Number of jobs: the arrival steps are the partial sums of Geometric(p) gaps minus one,
        the same law as a Bernoulli trial at every step from step 0.
    steps : int, optional
        Number of steps, each with one Bernoulli(p) trial (DeepRM's ``simu_len``). Exactly one of
        ``size`` and ``steps`` is given.
    rng : int, SeedSequence, Generator or None
        Random source, split with :meth:`numpy.random.SeedSequence.spawn` into three streams in
        this order: arrivals, lengths, demands.

    Returns
    -------
    DeepRMJobs
    """
    if (size is None) == (steps is None):
        raise ConfigError("give exactly one of size and steps")
    if size is not None and size < 0:
        raise ConfigError(f"size must be >= 0, got {size}")
    if steps is not None and steps < 0:
        raise ConfigError(f"steps must be >= 0, got {steps}")
    gens = {
        k: np.random.default_rng(c)
        for k, c in zip(_STREAMS, as_seed_sequence(rng).spawn(len(_STREAMS)), strict=True)
    }
    p = workload.arrival_probability
    if size is not None:
        step = np.cumsum(gens["arrivals"].geometric(p, size)).astype(np.int64) - 1
        covered = int(step[-1]) + 1 if size else 0
    else:
        assert steps is not None
        step = np.flatnonzero(gens["arrivals"].random(steps) < p).astype(np.int64)
        covered = int(steps)
    n = int(step.shape[0])
    g = gens["lengths"]
    short = g.random(n) < workload.short_chance
    s_lo, s_hi = workload.short_lengths
    l_lo, l_hi = workload.long_lengths
    length = np.where(
        short, g.integers(s_lo, s_hi + 1, size=n), g.integers(l_lo, l_hi + 1, size=n)
    ).astype(np.int64)
    g = gens["demands"]
    k = workload.num_res
    dominant = g.integers(0, k, size=n).astype(np.int64)
    d_lo, d_hi = workload.dominant_demands
    o_lo, o_hi = workload.other_demands
    demand = g.integers(o_lo, o_hi + 1, size=(n, k)).astype(np.int64)
    demand[np.arange(n), dominant] = g.integers(d_lo, d_hi + 1, size=n)
    return DeepRMJobs(step=step, length=length, demand=demand, dominant=dominant, steps=covered)


def deeprm_trace(
    workload: DeepRMWorkload | str | float,
    *,
    rng: SeedLike,
    size: int | None = None,
    steps: int | None = None,
) -> pa.Table:
    """Generate a ``trace`` table of DeepRM's synthetic workload.

    Parameters
    ----------
    workload : DeepRMWorkload, str or float
        The workload, the name of a preset in :data:`DEEPRM_PRESETS`, or a target load (a
        :class:`DeepRMWorkload` with the published defaults at that load).
    rng : int, SeedSequence, Generator or None
        Random source (:func:`deeprm_jobs`); the same int seed always gives the same table.
    size : int, optional
        Number of jobs (default ``workload.size`` when ``steps`` is not given).
    steps : int, optional
        Number of time steps instead of a number of jobs.

    Returns
    -------
    pyarrow.Table
        A ``trace`` table: ``submit_s`` = step · ``time_unit_s``, ``run_s`` = length ·
        ``time_unit_s``, ``cores`` = the demand on ``workload.resource``, no VO; metadata site =
        the workload's name, cores = ``res_slot``, τ =
        :attr:`DeepRMWorkload.interactive_threshold_s` and a provenance with every
        parameter, p, the seed and the realised load per type.

    Examples
    --------
    >>> t = deeprm_trace(0.7, rng=0, size=1000)
    >>> t.num_rows, t.schema.metadata[b"cores"]
    (1000, b'10')
    """
    from gridtrace.models._synth import SYNTHETIC_ORIGIN, _seed_record

    if isinstance(workload, str):
        workload = get_deeprm(workload)
    elif not isinstance(workload, DeepRMWorkload):
        workload = DeepRMWorkload(load=float(workload))
    if size is None and steps is None:
        size = workload.size
    jobs = deeprm_jobs(workload, size=size, steps=steps, rng=rng)
    n = int(jobs.step.shape[0])
    unit = workload.time_unit_s
    run_s = jobs.length * unit
    tau = workload.interactive_threshold_s
    table = pa.table(
        {
            "job_id": pa.array(np.arange(n, dtype=np.int64)),
            "submit_s": pa.array(jobs.step * unit, pa.float64()),
            "run_s": pa.array(run_s, pa.float64()),
            "cores": pa.array(jobs.demand[:, workload.resource].astype(np.int32)),
            "interactive": pa.array(run_s <= tau),
        }
    )
    load = jobs.realised_load(workload.res_slot) if jobs.steps else np.full(workload.num_res, 0.0)
    logger.debug(
        "DeepRM %s: %d jobs over %d steps, p = %.6g, realised load %s",
        workload.name,
        n,
        jobs.steps,
        workload.arrival_probability,
        np.array2string(load, precision=4),
    )
    record = {
        "generator": "deeprm",
        "source": "hongzimao/deeprm job_distribution.py bi_model_dist, Bernoulli arrivals",
        "preset": workload.name,
        "preset_parameters": workload.to_dict(),
        "seed": _seed_record(rng),
        "streams": list(_STREAMS),
        "size": size,
        "steps": jobs.steps,
        "realised_load": load.tolist(),
    }
    return with_trace_metadata(
        conform(table, TRACE),
        origin=SYNTHETIC_ORIGIN,
        site=workload.name,
        cores=workload.res_slot,
        tau_s=tau,
        provenance=record,
    )
