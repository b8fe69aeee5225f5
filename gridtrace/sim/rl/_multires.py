"""The deep-RL grid scheduler's multi-resource setup (issue 15): cluster, heuristics, evaluation.

The research's later paper trains PPO on DeepRM's multi-resource toy cluster. This module is that
cluster as a discrete-time simulator (:class:`MultiResourceCluster`), the heuristic baselines on
it (:data:`MULTIRES_POLICIES`: SJF, Packer, Tetris*, EASY, FIFO, random) and the evaluation of any
policy on fixed job sequences (:func:`evaluate_multires`). The Gymnasium environment over the same
simulator is :class:`~gridtrace.sim.rl._multires_env.MultiResourceEnv` (the ``rl`` extra); PPO is
in :mod:`gridtrace.sim.rl._ppo` (the ``ppo`` extra). Nothing here imports gymnasium or torch.

The setup, and where it departs from the issue text
---------------------------------------------------
- **Jobs** are DeepRM's, drawn by :func:`gridtrace.models.deeprm_jobs` from a
  :class:`~gridtrace.models.DeepRMWorkload` (the project's model of ``hongzimao/deeprm``): 2
  resource types of 10 units each, 80 % short jobs of 1 … 3 steps, else 10 … 15 steps, a
  dominant resource type with a demand of 5 … 10 units and 1 … 2 units of every other type,
  Bernoulli arrivals (at most one job per step). The issue's "10 resources" is read as DeepRM's
  10 units (slots) per resource type, and its "demands U[1, 5] or U[10, 15]" cannot be followed:
  a demand of 11 … 15 units never fits on 10 units and such a job could never run. We follow the
  DeepRM code, as :mod:`gridtrace.models._deeprm` does (its docstring gives the reasoning); the
  workload's fields keep every number configurable.
- **Loads** 10 % … 190 %: with at most one arrival per step the workload's largest load is
  ``DeepRMWorkload.max_load`` = 184.5 %; :class:`DeepRMWorkload` refuses more. The published
  190 % point is compared with our largest load, labelled as such.
- **Time** is in steps. An episode draws arrivals over ``episode_steps`` steps (DeepRM's
  ``simu_len``; default 50, the paper is silent) and runs until every job has finished, or is
  truncated at ``max_steps`` (default: the arrival steps plus the sum of all lengths, which any
  policy that ever starts a job when one fits reaches after the last completion).
- **Actions** (DeepRM): ``0 … M−1`` start the job in visible queue slot i *now*; ``M`` waits
  (time advances one step). Several jobs can be started in one step: time only advances on a
  wait. A job starts only if its demand fits the free units of every type now (DeepRM's code
  may also place a job at a later time within the image horizon; here a job only starts now, as
  in the project's simulator, so that "valid" has one meaning and masking is exact). An invalid
  action (empty slot, or a job that does not fit) is never carried out: it is treated as a wait,
  as DeepRM's environment does, and counted in ``invalid_actions``. :meth:`action_masks` lists
  the valid actions (wait is always valid).
- **Queue**: M visible slots (default 5, DeepRM's ``num_nw``; the paper is silent) hold the
  oldest waiting jobs; later arrivals wait in the backlog, oldest first into a freed slot. The
  backlog is unbounded (DeepRM drops arrivals when its 60 places are full; with 50 arrival steps
  at most 50 jobs ever wait, so this never binds with the defaults); the image shows its first
  ``backlog_size`` jobs.
- **Reward** at a wait: −Σ 1/p_j over the jobs in the system (running or waiting) during the step
  that elapses, p_j the job's length; 0 for a start. A job is counted at every step from its
  arrival to its completion, so the undiscounted return of a finished episode is −Σ_j slowdown_j
  (DeepRM counts the jobs after the step instead, one step later).
- **Observation** (DeepRM's image, values in [0, 1], float32, shape ``(T, width)`` with
  ``T = time_horizon``): for each resource type, the cluster's occupancy over the next T steps
  (``res_slot`` columns: row t marks the units in use t steps from now), then each visible slot's
  job (``max_job_size`` columns: ``len`` rows of ``demand`` units); then the backlog
  (``ceil(backlog_size / T)`` columns, one cell per waiting job, row by row). DeepRM's extra
  column (time since the last arrival) is left out.

Baselines (:data:`MULTIRES_POLICIES`) see what the agent sees: the visible slots and the cluster.
Because the slots hold the oldest waiting jobs, "oldest visible" is "oldest waiting".
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError
from gridtrace.models import DeepRMJobs, DeepRMWorkload, deeprm_jobs
from gridtrace.random import SeedLike, as_generator, as_seed_sequence
from gridtrace.sim._intervals import Interval, mean_interval

__all__ = [
    "MULTIRES_METRICS",
    "MULTIRES_POLICIES",
    "EpisodeMetrics",
    "MultiResPolicy",
    "MultiResourceCluster",
    "MultiResourceConfig",
    "evaluate_multires",
    "multires_sequences",
    "run_episode",
    "summarise_multires",
]

logger = library_logger(__name__)

MultiResPolicy = Callable[["MultiResourceCluster"], int]
"""A policy: given the cluster (read only), return an action (a slot index, or ``M`` to wait)."""

MULTIRES_METRICS = ("mean_slowdown", "makespan", "mean_turnaround", "mean_wait")
"""Per-episode metrics of :class:`EpisodeMetrics`, in steps (slowdown has no unit)."""


@dataclass(frozen=True, slots=True)
class MultiResourceConfig:
    """The multi-resource cluster, its queue, its image and its episodes.

    Parameters
    ----------
    workload : DeepRMWorkload
        Jobs and load (resource types ``num_res`` × ``res_slot`` units; see the module
        docstring). Default: DeepRM's defaults at 100 % load.
    visible_slots : int, default 5
        M, queue slots the agent can pick from (DeepRM's ``num_nw``; the paper is silent).
    backlog_size : int, default 60
        Backlog places shown in the image (DeepRM's ``backlog_size``).
    time_horizon : int, default 20
        T, rows of the image (DeepRM's ``time_horizon``); at least the longest job.
    episode_steps : int, default 50
        Steps with a Bernoulli arrival per episode (DeepRM's ``simu_len``; the paper is silent).
    max_steps : int, optional
        Truncate an episode after this many steps; default the arrival steps plus the sum of the
        episode's job lengths.
    """

    workload: DeepRMWorkload = field(default_factory=lambda: DeepRMWorkload(load=1.0))
    visible_slots: int = 5
    backlog_size: int = 60
    time_horizon: int = 20
    episode_steps: int = 50
    max_steps: int | None = None

    def __post_init__(self) -> None:
        if self.visible_slots < 1:
            raise ConfigError(f"visible_slots must be >= 1, got {self.visible_slots}")
        if self.backlog_size < 0:
            raise ConfigError(f"backlog_size must be >= 0, got {self.backlog_size}")
        if self.time_horizon < self.workload.max_job_len:
            raise ConfigError(
                f"time_horizon ({self.time_horizon}) must be >= the longest job "
                f"({self.workload.max_job_len})"
            )
        if self.episode_steps < 1:
            raise ConfigError(f"episode_steps must be >= 1, got {self.episode_steps}")
        if self.max_steps is not None and self.max_steps < 1:
            raise ConfigError(f"max_steps must be >= 1, got {self.max_steps}")

    @property
    def backlog_columns(self) -> int:
        """Image columns of the backlog: ``ceil(backlog_size / time_horizon)``."""
        return -(-self.backlog_size // self.time_horizon)

    @property
    def image_shape(self) -> tuple[int, int]:
        """``(T, width)`` of the observation."""
        w = self.workload
        per_type = w.res_slot + self.visible_slots * w.max_job_size
        return self.time_horizon, w.num_res * per_type + self.backlog_columns

    @property
    def n_actions(self) -> int:
        """M + 1: a visible slot, or wait (the last action)."""
        return self.visible_slots + 1

    def with_load(self, load: float) -> MultiResourceConfig:
        """Return the same setup at another load (the workload's other fields kept)."""
        w = asdict(self.workload)
        w.update(load=float(load), name="")
        return MultiResourceConfig(
            workload=DeepRMWorkload(**w),
            visible_slots=self.visible_slots,
            backlog_size=self.backlog_size,
            time_horizon=self.time_horizon,
            episode_steps=self.episode_steps,
            max_steps=self.max_steps,
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the parameters as JSON types (the workload as its own fields)."""
        d = asdict(self)
        d["workload"] = asdict(self.workload)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MultiResourceConfig:
        """Inverse of :meth:`to_dict`."""
        d = dict(data)
        workload = DeepRMWorkload(**dict(d.pop("workload", {"load": 1.0})))
        return cls(workload=workload, **d)


def multires_sequences(
    config: MultiResourceConfig, count: int, *, rng: SeedLike
) -> list[DeepRMJobs]:
    """Draw ``count`` job sequences of ``config.episode_steps`` steps each.

    Parameters
    ----------
    config : MultiResourceConfig
    count : int
        Sequences to draw.
    rng : int, SeedSequence, Generator or None
        Root seed; sequence i uses the i-th child of its :class:`numpy.random.SeedSequence`.

    Returns
    -------
    list of DeepRMJobs
    """
    if count < 0:
        raise ConfigError(f"count must be >= 0, got {count}")
    children = as_seed_sequence(rng).spawn(count)
    return [deeprm_jobs(config.workload, steps=config.episode_steps, rng=c) for c in children]


@dataclass(frozen=True, slots=True)
class EpisodeMetrics:
    """What one policy did on one job sequence (times in steps).

    Attributes
    ----------
    jobs : int
        Jobs in the sequence.
    unfinished : int
        Jobs not finished when the episode was truncated (their completion is taken as the
        truncation step, so the metrics are then lower bounds).
    mean_slowdown : float
        Mean of (completion − arrival) / length.
    makespan : float
        Last completion step (steps from 0).
    mean_turnaround : float
        Mean of completion − arrival.
    mean_wait : float
        Mean of start − arrival (a job never started waits until the truncation step).
    total_reward : float
        Sum of the rewards (−Σ slowdown for a finished episode).
    decisions : int
        Actions taken (starts, waits and invalid actions).
    invalid_actions : int
        Invalid actions, treated as waits.
    """

    jobs: int
    unfinished: int
    mean_slowdown: float
    makespan: float
    mean_turnaround: float
    mean_wait: float
    total_reward: float
    decisions: int
    invalid_actions: int

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a JSON-ready dict."""
        return asdict(self)


class MultiResourceCluster:
    """DeepRM's cluster, queue slots and backlog as a discrete-time simulator.

    Semantics in the module docstring. Use :meth:`reset` with a job sequence, then
    :meth:`step` (or :meth:`start` / :meth:`wait`) until :attr:`done` or :attr:`truncated`.

    Parameters
    ----------
    config : MultiResourceConfig
    """

    def __init__(self, config: MultiResourceConfig) -> None:
        self.config = config
        w = config.workload
        self.capacity = np.full(w.num_res, w.res_slot, dtype=np.int64)
        self._empty_jobs = DeepRMJobs(
            step=np.zeros(0, np.int64),
            length=np.zeros(0, np.int64),
            demand=np.zeros((0, w.num_res), np.int64),
            dominant=np.zeros(0, np.int64),
            steps=0,
        )
        self.reset(self._empty_jobs)

    # --- state --------------------------------------------------------------------------------

    def reset(self, jobs: DeepRMJobs) -> None:
        """Start an episode on ``jobs`` at step 0 (the jobs arriving at step 0 are queued)."""
        w = self.config.workload
        if jobs.demand.shape[1:] != (w.num_res,):
            raise ConfigError(
                f"jobs have {jobs.demand.shape[1:]} resource types, the cluster {w.num_res}"
            )
        if jobs.length.size and (
            int(jobs.length.max()) > self.config.time_horizon
            or int(jobs.demand.max()) > w.res_slot
            or int(jobs.length.min()) < 1
        ):
            raise ConfigError("a job is longer than the horizon, or larger than the cluster")
        self.jobs = jobs
        n = int(jobs.step.shape[0])
        self.n_jobs = n
        self._arrival = jobs.step.astype(np.int64)
        self._length = jobs.length.astype(np.int64)
        self._demand = jobs.demand.astype(np.int64)
        self._inv_length = 1.0 / self._length.astype(np.float64)
        self.start_step = np.full(n, -1, dtype=np.int64)
        self.end_step = np.full(n, -1, dtype=np.int64)
        self.time = 0
        self.slots: list[int] = [-1] * self.config.visible_slots
        self.backlog: deque[int] = deque()
        self.running: list[int] = []
        self.used = np.zeros((self.config.time_horizon, w.num_res), dtype=np.int64)
        self._next = 0
        self.finished = 0
        self.total_reward = 0.0
        self.decisions = 0
        self.invalid_actions = 0
        arrivals_end = max(int(self._arrival[-1]) + 1 if n else 0, jobs.steps)
        self.max_steps = (
            self.config.max_steps
            if self.config.max_steps is not None
            else arrivals_end + int(self._length.sum()) + 1
        )
        self._admit()

    def _admit(self) -> None:
        """Queue the jobs arriving at the current step (first free slot, else the backlog)."""
        arrival, t = self._arrival, self.time
        while self._next < self.n_jobs and arrival[self._next] <= t:
            j = self._next
            self._next += 1
            try:
                self.slots[self.slots.index(-1)] = j
            except ValueError:
                self.backlog.append(j)

    @property
    def free(self) -> NDArray[np.int64]:
        """Free units of each resource type now."""
        return np.asarray(self.capacity - self.used[0], dtype=np.int64)

    @property
    def done(self) -> bool:
        """Every job of the sequence has arrived and finished."""
        return self.finished == self.n_jobs

    @property
    def truncated(self) -> bool:
        """The step limit is reached before every job finished."""
        return not self.done and self.time >= self.max_steps

    def length(self, job: int) -> int:
        """Length of ``job`` in steps."""
        return int(self._length[job])

    def demand(self, job: int) -> NDArray[np.int64]:
        """Demand of ``job`` (units of each resource type)."""
        return np.asarray(self._demand[job], dtype=np.int64)

    def fits(self, job: int) -> bool:
        """Whether ``job`` fits the free units now."""
        return bool(np.all(self._demand[job] <= self.capacity - self.used[0]))

    def action_masks(self) -> NDArray[np.bool_]:
        """Return the valid actions: slots holding a job that fits now, and wait (always)."""
        free = self.capacity - self.used[0]
        mask = np.zeros(self.config.n_actions, dtype=bool)
        for i, j in enumerate(self.slots):
            if j >= 0 and bool(np.all(self._demand[j] <= free)):
                mask[i] = True
        mask[-1] = True
        return mask

    def free_profile(self) -> NDArray[np.int64]:
        """Free units at each of the next T steps, shape ``(T, num_res)`` (running jobs only)."""
        return np.asarray(self.capacity[None, :] - self.used, dtype=np.int64)

    # --- transitions --------------------------------------------------------------------------

    def start(self, slot: int) -> bool:
        """Start the job in ``slot`` now if that is valid; return whether it started."""
        if not 0 <= slot < len(self.slots):
            return False
        j = self.slots[slot]
        if j < 0 or not self.fits(j):
            return False
        length = int(self._length[j])
        self.used[:length] += self._demand[j]
        self.start_step[j] = self.time
        self.end_step[j] = self.time + length
        self.running.append(j)
        self.slots[slot] = self.backlog.popleft() if self.backlog else -1
        return True

    def in_system_penalty(self) -> float:
        """Σ 1/p_j over the jobs running or waiting now (the reward of a wait is its negative)."""
        inv = self._inv_length
        total = 0.0
        for j in self.running:
            total += inv[j]
        for j in self.slots:
            if j >= 0:
                total += inv[j]
        for j in self.backlog:
            total += inv[j]
        return float(total)

    def wait(self) -> float:
        """Let one step elapse; return its reward (−Σ 1/p_j over the jobs in the system)."""
        reward = -self.in_system_penalty()
        self.time += 1
        self.used[:-1] = self.used[1:]
        self.used[-1] = 0
        t = self.time
        still: list[int] = []
        for j in self.running:
            if self.end_step[j] <= t:
                self.finished += 1
            else:
                still.append(j)
        self.running = still
        self._admit()
        return reward

    def step(self, action: int) -> tuple[float, bool]:
        """Carry out ``action``; return (reward, whether it was valid).

        ``action < M`` starts that slot's job when valid; ``M`` (wait) and any invalid action let
        one step elapse.
        """
        self.decisions += 1
        m = self.config.visible_slots
        if 0 <= action < m and self.start(action):
            return 0.0, True
        valid = action == m
        if not valid:
            self.invalid_actions += 1
        reward = self.wait()
        self.total_reward += reward
        return reward, valid

    # --- observation --------------------------------------------------------------------------

    def observation(self) -> NDArray[np.float32]:
        """DeepRM's image of the cluster, the visible slots and the backlog (module docstring)."""
        cfg = self.config
        w = cfg.workload
        t_rows, width = cfg.image_shape
        image = np.zeros((t_rows, width), dtype=np.float32)
        col = 0
        cols = np.arange(max(w.res_slot, w.max_job_size))
        for r in range(w.num_res):
            image[:, col : col + w.res_slot] = cols[None, : w.res_slot] < self.used[:, r, None]
            col += w.res_slot
            for j in self.slots:
                if j >= 0:
                    image[: self._length[j], col : col + self._demand[j, r]] = 1.0
                col += w.max_job_size
        shown = min(len(self.backlog), cfg.backlog_size)
        if shown:
            bc = cfg.backlog_columns
            cells = np.zeros(t_rows * bc, dtype=np.float32)
            cells[:shown] = 1.0
            image[:, col : col + bc] = cells.reshape(t_rows, bc)
        return image

    # --- results ------------------------------------------------------------------------------

    def metrics(self) -> EpisodeMetrics:
        """Return the episode's metrics (:class:`EpisodeMetrics`); unfinished jobs end now."""
        n = self.n_jobs
        if n == 0:
            return EpisodeMetrics(0, 0, math.nan, 0.0, math.nan, math.nan, 0.0, self.decisions, 0)
        end = np.where(self.end_step >= 0, self.end_step, self.time).astype(np.float64)
        end = np.where(end > self.time, self.time, end) if self.truncated else end
        start = np.where(self.start_step >= 0, self.start_step, self.time).astype(np.float64)
        arrival = self._arrival.astype(np.float64)
        turnaround = end - arrival
        unfinished = int(np.count_nonzero((self.end_step < 0) | (self.end_step > self.time)))
        return EpisodeMetrics(
            jobs=n,
            unfinished=unfinished if self.truncated else 0,
            mean_slowdown=float(np.mean(turnaround / self._length)),
            makespan=float(end.max()),
            mean_turnaround=float(turnaround.mean()),
            mean_wait=float(np.mean(start - arrival)),
            total_reward=self.total_reward,
            decisions=self.decisions,
            invalid_actions=self.invalid_actions,
        )


# --- heuristics -------------------------------------------------------------------------------


def _fitting(c: MultiResourceCluster) -> list[tuple[int, int]]:
    """(slot, job) of the visible jobs that fit now."""
    free = c.free
    return [(i, j) for i, j in enumerate(c.slots) if j >= 0 and bool(np.all(c.demand(j) <= free))]


def _wait(c: MultiResourceCluster) -> int:
    return c.config.visible_slots


def sjf_policy(c: MultiResourceCluster) -> int:
    """Shortest fitting visible job first (ties: the older job); wait when none fits."""
    fit = _fitting(c)
    if not fit:
        return _wait(c)
    return min(fit, key=lambda s: (c.length(s[1]), s[1]))[0]


def tetris_score(c: MultiResourceCluster, knob: float) -> int:
    """DeepRM's Packer / Tetris*: knob · ⟨free, demand⟩ / max + (1 − knob) · (1/len) / max.

    Both terms are normalised by their largest value among the fitting visible jobs
    (``hongzimao/deeprm`` ``other_agents.py:get_packer_sjf_action``); the highest score starts,
    ties to the older job. knob = 1 is Packer.
    """
    fit = _fitting(c)
    if not fit:
        return _wait(c)
    free = c.free.astype(np.float64)
    align = np.array([float(free @ c.demand(j)) for _, j in fit])
    short = np.array([1.0 / c.length(j) for _, j in fit])
    score = knob * align / max(align.max(), 1e-12) + (1 - knob) * short / short.max()
    best = max(range(len(fit)), key=lambda k: (score[k], -fit[k][1]))
    return fit[best][0]


def packer_policy(c: MultiResourceCluster) -> int:
    """DeepRM's Packer: the fitting job best aligned with the free resources."""
    return tetris_score(c, 1.0)


def tetris_policy(c: MultiResourceCluster) -> int:
    """DeepRM's Tetris* with knob 0.5 (Packer and SJF scores weighed equally)."""
    return tetris_score(c, 0.5)


def _oldest(c: MultiResourceCluster) -> tuple[int, int] | None:
    waiting = [(j, i) for i, j in enumerate(c.slots) if j >= 0]
    if not waiting:
        return None
    j, i = min(waiting)
    return i, j


def fifo_policy(c: MultiResourceCluster) -> int:
    """Strict FIFO: start the oldest waiting job when it fits, else wait."""
    head = _oldest(c)
    if head is None or not c.fits(head[1]):
        return _wait(c)
    return head[0]


def easy_policy(c: MultiResourceCluster) -> int:
    """EASY backfilling, multi-resource, on the visible jobs.

    The oldest job starts when it fits. Otherwise it gets a reservation at the first step at
    which every resource type has its demand free (from the running jobs' ends), and a younger
    visible job that fits now starts (oldest first) when it ends by then or leaves the oldest
    job's demand free at the reserved step.
    """
    head = _oldest(c)
    if head is None:
        return _wait(c)
    hslot, hjob = head
    if c.fits(hjob):
        return hslot
    profile = c.free_profile()
    need = c.demand(hjob)
    ok = np.flatnonzero(np.all(profile >= need[None, :], axis=1))
    shadow = int(ok[0]) if ok.size else profile.shape[0]
    extra = profile[shadow] - need if ok.size else np.zeros_like(need)
    for slot, j in sorted(_fitting(c), key=lambda s: s[1]):
        if c.length(j) <= shadow or bool(np.all(c.demand(j) <= extra)):
            return slot
    return _wait(c)


def make_random_policy(rng: SeedLike) -> MultiResPolicy:
    """Uniform choice among the valid actions (wait included), from an explicit generator."""
    gen = as_generator(rng)

    def random_policy(c: MultiResourceCluster) -> int:
        valid = np.flatnonzero(c.action_masks())
        return int(valid[gen.integers(valid.size)])

    return random_policy


MULTIRES_POLICIES: Mapping[str, Callable[[SeedLike], MultiResPolicy]] = {
    "sjf": lambda _rng: sjf_policy,
    "packer": lambda _rng: packer_policy,
    "tetris": lambda _rng: tetris_policy,
    "easy": lambda _rng: easy_policy,
    "fifo": lambda _rng: fifo_policy,
    "random": make_random_policy,
}
"""Baselines by name: a factory taking a seed (only ``random`` uses it) and returning a policy."""


# --- evaluation -------------------------------------------------------------------------------


def run_episode(
    config: MultiResourceConfig, jobs: DeepRMJobs, policy: MultiResPolicy
) -> EpisodeMetrics:
    """Run ``policy`` on one job sequence until every job finished (or the step limit)."""
    c = MultiResourceCluster(config)
    c.reset(jobs)
    while not c.done and not c.truncated:
        c.step(int(policy(c)))
    return c.metrics()


def evaluate_multires(
    config: MultiResourceConfig,
    sequences: Sequence[DeepRMJobs],
    policies: Mapping[str, MultiResPolicy],
) -> list[dict[str, Any]]:
    """Run every policy on every sequence (the same sequences for all).

    Returns
    -------
    list of dict
        One row per (policy, sequence): ``policy``, ``sequence``, ``load`` and the fields of
        :class:`EpisodeMetrics`.
    """
    rows: list[dict[str, Any]] = []
    for name, policy in policies.items():
        for k, jobs in enumerate(sequences):
            m = run_episode(config, jobs, policy)
            rows.append(
                {"policy": name, "sequence": k, "load": config.workload.load, **m.to_dict()}
            )
            if m.unfinished:
                logger.warning(
                    "%s left %d of %d jobs unfinished on sequence %d (truncated)",
                    name,
                    m.unfinished,
                    m.jobs,
                    k,
                )
    return rows


def summarise_multires(
    rows: Sequence[Mapping[str, Any]], *, reference: str = "sjf"
) -> list[dict[str, Any]]:
    """Mean and 95 % interval of each metric per (load, policy), and slowdown relative to SJF.

    ``slowdown_vs_<reference>`` is mean slowdown / the reference's mean slowdown − 1 per
    sequence (paired), with its interval; the published −45 % (100 %) and −54 % (190 %) are of
    this form.
    """
    out: list[dict[str, Any]] = []
    keys = sorted({(float(r["load"]), str(r["policy"])) for r in rows})
    by = {(float(r["load"]), str(r["policy"]), int(r["sequence"])): r for r in rows}
    for load, policy in keys:
        mine = sorted(
            (int(r["sequence"]), r)
            for r in rows
            if float(r["load"]) == load and r["policy"] == policy
        )
        entry: dict[str, Any] = {"load": load, "policy": policy, "sequences": len(mine)}
        for metric in MULTIRES_METRICS:
            iv: Interval = mean_interval(
                [float(r[metric]) for _, r in mine], bounds=(0.0, math.inf)
            )
            entry[metric] = iv.mean
            entry[f"{metric}_low"] = iv.low
            entry[f"{metric}_high"] = iv.high
        ratios = [
            float(r["mean_slowdown"]) / float(by[(load, reference, k)]["mean_slowdown"]) - 1.0
            for k, r in mine
            if (load, reference, k) in by
        ]
        iv = mean_interval(ratios, bounds=(-1.0, math.inf))
        entry[f"slowdown_vs_{reference}"] = iv.mean
        entry[f"slowdown_vs_{reference}_low"] = iv.low
        entry[f"slowdown_vs_{reference}_high"] = iv.high
        entry["unfinished"] = sum(int(r["unfinished"]) for _, r in mine)
        out.append(entry)
    return out
