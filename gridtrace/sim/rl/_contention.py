"""Contention experiments: can the RL supervisor beat what a site would use instead? (issue 14).

Protocol (:func:`run_contention`)
---------------------------------
* **Regime.** A trace (a selected segment) is simulated on its own pool P, the cores the site had
  during the segment (:func:`gridtrace.segment.trace_pool`; its source is recorded), at a target
  offered load ρ* reached by compressing the arrivals at fixed P or by shrinking P at fixed
  arrivals (:func:`gridtrace.sim.set_load`; ``how`` is recorded). ``load=None`` keeps the trace
  as logged, and only then is the as-logged schedule (``native``) a baseline: on a transformed
  trace the logged start times describe another workload.
* **Split by time.** The submit-time span [t0, t1] is cut into three disjoint, ordered parts
  (default 50 / 20 / 30 %): the agents train on the first, the hyperparameters are chosen on the
  second, and everything reported is measured on the third. Each part is simulated on its own,
  starting from an empty cluster; the first and last ``min(warmup_jobs, n/10)`` /
  ``min(drain_jobs, n/10)`` jobs of each run are left out of the statistics.
* **Tuning.** A stated grid of candidates (Q approximator × reward: the research's
  λ_s W + (1 − λ_s) F for each λ_s, DeepRM's slowdown penalty, the research's time-utility
  functions, the slowdown penalty weighted towards interactive jobs; optionally ESN fitted-Q
  iteration after the SARSA episodes) is trained with
  ``tune_seeds`` seeds on the training part and evaluated frozen on the validation part; the
  candidate with the highest validation interactive mean W is chosen (ties: grid order). Only it is
  run on the test part, with ``seeds`` agent seeds (seed i: network / reservoir / exploration
  streams child i; the tuning runs' agents are reused for i < ``tune_seeds``, being the same).
* **Agent.** SARSA over the state features of :class:`~gridtrace.sim.rl.SchedulingFeatures` with
  the per-VO deficit entries (target share − decayed usage share), the runtime estimate r̂ in
  each action; the agent sees estimated runtimes (class median by (VO, interactive)), as do the
  baselines. Training: pre-training episode(s) electing by EDF (the research's), by SJF with
  estimates, or both (``pretrain``), then ``train_episodes`` SARSA episodes, all on the training
  part.
* **Rewards credited per job collapse.** With the research's W reward (and the time-utility
  reward) paid to the decision that starts the job, a long job earns W ≈ 1 whatever its wait,
  so Q ranks longer estimated classes first: on the LPC-EGEE segment at offered load 0.7 (EDF
  pre-training) the w-f (λ_s 0.5 and 1) and time-utility agents passed over the shortest
  estimate in 96-98 % of the decisions with a choice (mostly between two candidates): one
  policy, hence one validation W (0.706, below FIFO's 0.708). Rewards charged per waiting
  interval (slowdown, interactive-slowdown) elect the shortest estimate instead.
* **Baselines.** ``fifo``, ``sjf-est``, ``hrrn-est``, ``easy-est`` (class-median estimates) and
  ``fairshare`` (decayed usage against the VO targets); deterministic on a fixed trace, so each
  runs once on the test part and that one run is its number wherever it appears. Elastic
  (``elastic=True``): the threshold autoscaler and the best static pool chosen in hindsight on the
  test part (objective λ_e W̄ + (1 − λ_e) U), both with the ``elastic_scheduler`` baseline's
  scheduling, against the chosen RL scheduler with an RL provisioner, all scored on
  core-hours and W. The provisioner's W̄ counts the completed jobs only (``elastic_reward``
  "completed", the research's), or also the jobs waiting at each decision ("queue", see
  :class:`~gridtrace.sim.rl.ElasticProvisioner`); ``elastic_pretrain="threshold"`` lets the
  threshold autoscaler choose in the pre-training episodes.
* **Intervals.** The test period is cut into ``windows`` equal spans of submit time; a metric's
  value per window (the mean over the seeds for RL) is the unit of the 95 % expanded-percentile
  bootstrap (:func:`gridtrace.sim.mean_interval`, bounded by the metric's range). RL's margin to
  the best baseline (the baseline with the best mean over windows) is the paired difference per
  window; its sign is such that a positive margin means RL is better (higher W and F, lower wait
  and core-hours). Windows of one run are not independent (the queue carries over), so the
  interval is a block bootstrap with one block per window. The seed-to-seed spread of RL is given
  beside it (``seeds``), over whole test runs.

Summary (``summary.json``, schema ``gridtrace.rl-experiment/2``): everything the report reads of
schema 1 (``aggregate``, ``protocol``, ``agents``, ``seeds``, ``units``, ``series``, ``verdict``)
plus ``regime``, ``split``, ``metrics`` (per metric and policy: mean, interval and n over the
test windows, the whole-period value, RL's seed interval), ``best_baseline``, ``rl_margin``,
``baseline_spread``, ``flags``, ``tuning``, ``learning_curves`` and ``action_mix``.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
from numpy.typing import NDArray

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError
from gridtrace.schema import trace_metadata
from gridtrace.sim._engine import simulate
from gridtrace.sim._intervals import mean_interval
from gridtrace.sim._load import LoadedTrace, LoadMethod, offered_load, set_load
from gridtrace.sim._metrics import FAIRNESS_WINDOWS, windowed_fairness
from gridtrace.sim._pathologies import pathology_flags, w_below_fifo
from gridtrace.sim._provisioning import best_static_pool, make_provisioning
from gridtrace.sim._result import SimulationResult, _json_safe
from gridtrace.sim.rl._elastic import ElasticProvisioner
from gridtrace.sim.rl._experiments import (
    STREAMS,
    AgentSeeds,
    ExperimentResult,
    _child,
    _run_metrics,
    _runs_table,
    _seed_record,
    _service_shares,
    _stream,
    make_elastic_provisioner,
    make_rl_scheduler,
    seed_interval,
)
from gridtrace.sim.rl._features import SchedulingFeatures
from gridtrace.sim.rl._rewards import (
    InteractiveSlowdownReward,
    QueueSlowdownReward,
    ResponsivenessFairnessReward,
    Reward,
    TimeUtilityReward,
)
from gridtrace.sim.rl._scheduler import SarsaScheduler

__all__ = [
    "CONTENTION_BASELINES",
    "CONTENTION_METRICS",
    "CONTENTION_SCHEMA",
    "ContentionConfig",
    "Regime",
    "contention_regime",
    "run_contention",
    "time_splits",
]

logger = library_logger(__name__)

CONTENTION_SCHEMA = "gridtrace.rl-experiment/2"
"""Schema of a contention summary: schema 1's keys plus the contention keys."""

_EST: dict[str, Any] = {"estimator": "median", "estimator_options": {"by": ("vo", "interactive")}}
CONTENTION_BASELINES: dict[str, dict[str, Any]] = {
    "fifo": {"policy": "fifo"},
    "sjf-est": {"policy": "sjf", **_EST},
    "hrrn-est": {"policy": "hrrn", **_EST},
    "easy-est": {"policy": "easy", **_EST},
    "fairshare": {"policy": "fairshare"},
}
"""The information-matched baselines: name → :func:`~gridtrace.sim.simulate` arguments."""

HIGHER, LOWER = "higher", "lower"
CONTENTION_METRICS: dict[str, str] = {
    "interactive_w_mean": HIGHER,
    "all_w_mean": HIGHER,
    "fairness_daily_mean": HIGHER,
    "fairness_weekly_mean": HIGHER,
    "interactive_wait_mean_s": LOWER,
}
"""The metrics of the verdict and which direction is better (plus ``provisioned_core_h``, lower,
in elastic experiments)."""

REWARD_CHOICES = ("w-f", "slowdown", "time-utility", "interactive-slowdown")
RewardChoice = Literal["w-f", "slowdown", "time-utility", "interactive-slowdown"]
PRETRAIN_CHOICES: dict[str, tuple[str, ...]] = {
    "edf": ("edf",),
    "sjf": ("sjf",),
    "both": ("edf", "sjf"),
}
"""Pre-training: name → the behaviour rules of the first training episodes, in order."""


@dataclass(frozen=True)
class ContentionConfig:
    """Settings of one contention experiment (all written into the summary).

    Parameters
    ----------
    root_seed : int, default 0
    seeds : int, default 3
        Agent seeds on the test part (≥ 10 for the full runs).
    tune_seeds : int, default 1
        Agent seeds per candidate on the validation part.
    fractions : (float, float, float), default (0.5, 0.2, 0.3)
        Train / validation / test shares of the submit-time span.
    train_episodes : int, default 2
        SARSA episodes over the training part after the pre-training episode(s).
    pretrain : {"edf", "sjf", "both"}, default "edf"
        Pre-training: one episode electing by EDF (the research's), one by SJF with estimates
        (the best information-matched heuristic), or both (EDF, then SJF); the agent learns
        from these episodes but does not choose in them.
    q_kinds : tuple of str, default ("esn",)
        Q approximators in the tuning grid.
    rewards : tuple of str, default ("w-f", "slowdown", "time-utility", "interactive-slowdown")
        Reward kinds in the tuning grid (``interactive-slowdown``:
        :class:`~gridtrace.sim.rl._rewards.InteractiveSlowdownReward`).
    batch_weight : float, default 0.1
        Weight of a batch job's waiting in the ``interactive-slowdown`` reward.
    vo_features : {"targets", "none"}, default "targets"
        ``targets``: a feature slot per target VO (queued shares in the state, a VO one-hot in
        each action) and the per-VO deficits; ``none``: no per-VO entries at all, so the agent
        tells jobs apart by interactive flag, runtime estimate and cores only, as SJF-est does
        (a VO mix that shifts between the parts cannot then meet untrained VO weights).
    lambdas : tuple of float, default (0.5, 1.0)
        λ_s of the ``w-f`` candidates.
    fitted_q_iterations : int, default 0
        If > 0, the grid also holds ESN agents refitted offline by this many fitted-Q iterations
        after their SARSA episodes (``esn-fqi``).
    baselines : tuple of str
        Names in :data:`CONTENTION_BASELINES`.
    windows : int, default 10
        Test-period windows, the units of the intervals.
    mix_bins : int, default 20
        Time bins of the action mix.
    warmup_jobs, drain_jobs : int, default 500
        Jobs left out at each end of every run (capped at a tenth of its jobs).
    half_life_s : float, default 604800
        Half-life of the usage behind fairshare and the agent's deficit features.
    elastic : bool, default False
        Add the provisioning comparison (see the module docstring).
    lambda_e : float, default 0.5
    floor : int, default 30
    ceiling_factor : float, default 1.1
    interval_s : float, default 900
    static_levels : int, default 12
        Pool sizes tried by the best static pool (evenly spaced from floor to ceiling).
    threshold_options : mapping, optional
        Options of :class:`~gridtrace.sim.ThresholdAutoscaler` (default band 0.5–0.9, step 8,
        cooldown 1800 s).
    elastic_scheduler : str, default "sjf-est"
        The baseline scheduling of the threshold and static-pool runs.
    elastic_reward : {"completed", "queue"}, default "completed"
        W̄ of the RL provisioner's reward (:class:`~gridtrace.sim.rl.ElasticProvisioner`'s
        ``w_reward``): of the jobs completed in the interval, or also of the jobs waiting,
        priced at each decision.
    elastic_w_class : {"all", "interactive"}, default "all"
        The jobs W̄ counts with ``elastic_reward="queue"``.
    elastic_pretrain : {"threshold"} or None, default None
        Let the threshold autoscaler (the baseline's settings) choose the pool in the
        pre-training episodes while the provisioner learns, as the scheduler learns from SJF.
    floor_share : float, default 0.10
        ``POOL_AT_FLOOR`` above this share of the test period.
    agent_options : mapping, optional
        Extra keyword arguments of :class:`~gridtrace.sim.rl.SarsaScheduler`.
    """

    root_seed: int = 0
    seeds: int = 3
    tune_seeds: int = 1
    fractions: tuple[float, float, float] = (0.5, 0.2, 0.3)
    train_episodes: int = 2
    pretrain: str = "edf"
    q_kinds: tuple[str, ...] = ("esn",)
    rewards: tuple[str, ...] = REWARD_CHOICES
    lambdas: tuple[float, ...] = (0.5, 1.0)
    batch_weight: float = 0.1
    vo_features: str = "targets"
    fitted_q_iterations: int = 0
    baselines: tuple[str, ...] = tuple(CONTENTION_BASELINES)
    windows: int = 10
    mix_bins: int = 20
    warmup_jobs: int = 500
    drain_jobs: int = 500
    half_life_s: float = 7 * 86400.0
    elastic: bool = False
    lambda_e: float = 0.5
    floor: int = 30
    ceiling_factor: float = 1.1
    interval_s: float = 900.0
    static_levels: int = 12
    threshold_options: Mapping[str, Any] = field(default_factory=dict)
    elastic_scheduler: str = "sjf-est"
    elastic_reward: str = "completed"
    elastic_w_class: str = "all"
    elastic_pretrain: str | None = None
    floor_share: float = 0.10
    agent_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.seeds < 1 or self.tune_seeds < 1 or self.train_episodes < 1:
            raise ConfigError("seeds, tune_seeds and train_episodes must be >= 1")
        if min(self.fractions) <= 0:
            raise ConfigError(f"fractions must be three positive shares, got {self.fractions}")
        if abs(sum(self.fractions) - 1.0) > 1e-9:
            raise ConfigError(f"fractions must sum to 1, got {self.fractions}")
        unknown = set(self.baselines) - set(CONTENTION_BASELINES)
        if unknown or "fifo" not in self.baselines:
            raise ConfigError(
                f"baselines must include fifo and be among {sorted(CONTENTION_BASELINES)}, got "
                f"{list(self.baselines)}"
            )
        if self.elastic_reward not in ("completed", "queue"):
            raise ConfigError(f"elastic_reward must be completed or queue: {self.elastic_reward!r}")
        if self.elastic_w_class not in ("all", "interactive"):
            raise ConfigError(
                f"elastic_w_class must be all or interactive: {self.elastic_w_class!r}"
            )
        if self.elastic_pretrain not in (None, "threshold"):
            raise ConfigError(
                f"elastic_pretrain must be threshold or null: {self.elastic_pretrain!r}"
            )
        if self.elastic_scheduler not in CONTENTION_BASELINES:
            raise ConfigError(f"unknown elastic_scheduler {self.elastic_scheduler!r}")
        if set(self.rewards) - set(REWARD_CHOICES) or not self.rewards:
            raise ConfigError(f"rewards must be among {list(REWARD_CHOICES)}, got {self.rewards}")
        if set(self.q_kinds) - {"mlp", "esn"} or not self.q_kinds:
            raise ConfigError(f"q_kinds must be among mlp, esn, got {self.q_kinds}")
        if any(not 0.0 <= lam <= 1.0 for lam in self.lambdas):
            raise ConfigError(f"lambdas must be in [0, 1], got {self.lambdas}")
        if self.windows < 2 or self.mix_bins < 1:
            raise ConfigError("windows must be >= 2 and mix_bins >= 1")
        if self.fitted_q_iterations < 0:
            raise ConfigError("fitted_q_iterations must be >= 0")
        if self.pretrain not in PRETRAIN_CHOICES:
            raise ConfigError(
                f"pretrain must be among {list(PRETRAIN_CHOICES)}, got {self.pretrain!r}"
            )
        if self.vo_features not in ("targets", "none"):
            raise ConfigError(f"vo_features must be 'targets' or 'none', got {self.vo_features!r}")
        if not 0.0 <= self.batch_weight <= 1.0:
            raise ConfigError(f"batch_weight must be in [0, 1], got {self.batch_weight}")

    def to_dict(self) -> dict[str, Any]:
        """Return the settings as JSON types."""
        out = asdict(self)
        out["threshold_options"] = dict(self.threshold_options)
        out["agent_options"] = dict(self.agent_options)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

    def grid(self) -> list[Candidate]:
        """Return the tuning grid, in the order ties are broken."""
        out: list[Candidate] = []
        learners = ["sarsa"] + (["fqi"] if self.fitted_q_iterations > 0 else [])
        for learner in learners:
            for q in self.q_kinds:
                if learner == "fqi" and q != "esn":
                    continue
                for reward in self.rewards:
                    lams: tuple[float | None, ...] = self.lambdas if reward == "w-f" else (None,)
                    for lam in lams:
                        out.append(Candidate(q, reward, lam, learner))  # type: ignore[arg-type]
        return out


@dataclass(frozen=True)
class Candidate:
    """One point of the tuning grid."""

    q: str
    reward: RewardChoice
    lambda_s: float | None
    learner: Literal["sarsa", "fqi"] = "sarsa"

    @property
    def name(self) -> str:
        """Label, e.g. ``esn-w-f-0.5`` or ``esn-fqi-slowdown``."""
        q = f"{self.q}-fqi" if self.learner == "fqi" else self.q
        lam = f"-{self.lambda_s:g}" if self.lambda_s is not None else ""
        return f"{q}-{self.reward}{lam}"


@dataclass(frozen=True)
class Regime:
    """The pool and load a trace is simulated at.

    Attributes
    ----------
    trace : pyarrow.Table
        The (transformed) trace.
    cores : int
        P.
    pool_source, pool_note : str
        Where P₀ (the segment's pool) comes from.
    loaded : LoadedTrace or None
        How the load was set (None: as logged).
    """

    trace: pa.Table
    cores: int
    pool_source: str
    pool_note: str
    loaded: LoadedTrace | None

    @property
    def label(self) -> str:
        """``as-logged`` or ``<how>-<target>``."""
        if self.loaded is None:
            return "as-logged"
        return f"{self.loaded.how}-{self.loaded.target:g}"

    def describe(self) -> dict[str, Any]:
        """Return the regime as JSON types."""
        out: dict[str, Any] = {
            "label": self.label,
            "cores": self.cores,
            "pool_source": self.pool_source,
            "pool_note": self.pool_note,
            "transformed": self.loaded is not None,
        }
        if self.loaded is None:
            out.update(
                how="as-logged",
                target_load=None,
                offered_load=offered_load(self.trace, self.cores),
                source_cores=self.cores,
            )
        else:
            d = self.loaded.to_dict()
            out.update(
                how=d["how"],
                target_load=d["target"],
                offered_load=d["offered_load"],
                relative_error=d["relative_error"],
                factor=d["factor"],
                source_cores=d["source_cores"],
                source_load=d["source_load"],
                reached=d["reached"],
                definition=d["definition"],
            )
        return out


def contention_regime(
    trace: pa.Table,
    *,
    load: float | None,
    how: LoadMethod = "compress",
    pool_cores: int | None = None,
    pool_source: str = "trace metadata",
    pool_note: str = "",
    tolerance: float = 0.02,
) -> Regime:
    """Set a trace (a segment) on its pool at an offered load.

    Parameters
    ----------
    trace : pyarrow.Table
        A ``trace`` table.
    load : float or None
        Target offered load ρ*; None keeps the trace as logged.
    how : {"compress", "shrink"}, default "compress"
        See :func:`gridtrace.sim.set_load`.
    pool_cores : int, optional
        P₀, the segment's own pool (e.g. :func:`gridtrace.segment.trace_pool`); default the
        trace metadata's cores.
    pool_source, pool_note : str
        Where P₀ comes from (recorded).
    tolerance : float, default 0.02
        ``shrink``: the largest relative miss of ρ*.

    Returns
    -------
    Regime
    """
    cores = int(pool_cores if pool_cores is not None else trace_metadata(trace)["cores"])
    if load is None:
        return Regime(trace, cores, pool_source, pool_note, None)
    loaded = set_load(trace, load, how=how, cores=cores, tolerance=tolerance)
    return Regime(loaded.trace, loaded.cores, pool_source, pool_note, loaded)


def time_splits(
    trace: pa.Table, fractions: Sequence[float] = (0.5, 0.2, 0.3)
) -> tuple[list[pa.Table], dict[str, Any]]:
    """Cut a trace by submit time into consecutive, disjoint parts.

    Parameters
    ----------
    trace : pyarrow.Table
        A ``trace`` table.
    fractions : sequence of float, default (0.5, 0.2, 0.3)
        Shares of the submit-time span [t0, t1], in order (train, validation, test); they sum
        to 1.

    Returns
    -------
    (parts, split)
        The parts (metadata kept) and their spans: ``split[name]`` has ``start_s``, ``end_s``
        (the part's span [start_s, end_s), the last closed at t1), ``first_submit_s``,
        ``last_submit_s``, ``jobs`` and, with an origin, ``start_utc`` / ``end_utc``.

    Raises
    ------
    ConfigError
        If the shares are bad or a part is empty.

    Examples
    --------
    >>> import pyarrow as pa
    >>> t = pa.table({"job_id": list(range(10)), "submit_s": [float(i) for i in range(10)]})
    >>> parts, split = time_splits(t, (0.5, 0.2, 0.3))
    >>> [p.num_rows for p in parts], split["test"]["start_s"]
    ([5, 2, 3], 6.3)
    """
    shares = [float(f) for f in fractions]
    if min(shares) <= 0 or abs(sum(shares) - 1.0) > 1e-9:
        raise ConfigError(f"fractions must be positive and sum to 1, got {list(fractions)}")
    names = ("train", "validation", "test") if len(shares) == 3 else None
    trace = trace.sort_by([("submit_s", "ascending"), ("job_id", "ascending")])
    submit = np.asarray(trace.column("submit_s").to_numpy(), dtype=np.float64)
    t0, t1 = float(submit.min()), float(submit.max())
    cuts = t0 + (t1 - t0) * np.concatenate(([0.0], np.cumsum(shares)))
    cuts[-1] = t1
    origin = None
    try:
        origin = pd.Timestamp(trace_metadata(trace)["origin"])
    except Exception:
        origin = None
    parts: list[pa.Table] = []
    split: dict[str, Any] = {"fractions": shares}
    for k in range(len(shares)):
        last = k == len(shares) - 1
        lo, hi = float(cuts[k]), float(cuts[k + 1])
        mask = (submit >= lo) & ((submit <= hi) if last else (submit < hi))
        part = trace.filter(pa.array(mask))
        name = names[k] if names else f"part{k}"
        if part.num_rows == 0:
            raise ConfigError(f"the time split leaves the {name} part [{lo}, {hi}) empty")
        parts.append(part)
        sub = submit[mask]
        entry: dict[str, Any] = {
            "start_s": lo,
            "end_s": hi,
            "first_submit_s": float(sub.min()),
            "last_submit_s": float(sub.max()),
            "jobs": int(part.num_rows),
        }
        if origin is not None:
            entry["start_utc"] = (origin + pd.Timedelta(seconds=lo)).isoformat()
            entry["end_utc"] = (origin + pd.Timedelta(seconds=hi)).isoformat()
        split[name] = entry
    return parts, split


# --- runs and their metrics ----------------------------------------------------------------------


def _exclusion(n: int, config: ContentionConfig) -> tuple[int, int]:
    cap = n // 10
    return min(config.warmup_jobs, cap), min(config.drain_jobs, cap)


def _measured(result: SimulationResult, config: ContentionConfig) -> pa.Table:
    jobs = result.jobs
    warmup, drain = _exclusion(jobs.num_rows, config)
    return jobs.slice(warmup, jobs.num_rows - warmup - drain)


def _f64(col: Any) -> NDArray[np.float64]:
    arr = col.to_numpy(zero_copy_only=False)
    return np.asarray([np.nan if x is None else x for x in arr], dtype=np.float64)


def _window_metrics(
    result: SimulationResult,
    edges: NDArray[np.float64],
    config: ContentionConfig,
    vo_shares: Mapping[str, float] | None,
) -> dict[str, NDArray[np.float64]]:
    """Per test window (by submit time) the value of each metric; NaN where a window has none."""
    jobs = _measured(result, config)
    k = len(edges) - 1
    submit = jobs.column("submit_s").to_numpy()
    idx = np.clip(np.searchsorted(edges, submit, side="right") - 1, 0, k - 1)
    inter = np.asarray(jobs.column("interactive").to_numpy(zero_copy_only=False), dtype=bool)
    w = _f64(jobs.column("responsiveness"))
    wait = jobs.column("wait_s").to_numpy()

    def mean_by(values: NDArray[np.float64], mask: NDArray[np.bool_]) -> NDArray[np.float64]:
        ok = mask & np.isfinite(values)
        n = np.bincount(idx[ok], minlength=k)
        s = np.bincount(idx[ok], weights=values[ok], minlength=k)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, s / np.maximum(n, 1), np.nan)

    everyone = np.ones(len(w), dtype=bool)
    out = {
        "interactive_w_mean": mean_by(w, inter),
        "all_w_mean": mean_by(w, everyone),
        "interactive_wait_mean_s": mean_by(wait.astype(np.float64), inter),
    }
    for name, (length, step) in FAIRNESS_WINDOWS.items():
        values = np.full(k, np.nan)
        if vo_shares and jobs.num_rows:
            wf = windowed_fairness(
                jobs.column("start_s").to_numpy(),
                jobs.column("run_s").to_numpy(),
                jobs.column("cores").to_numpy(),
                jobs.column("vo"),
                vo_shares,
                length_s=length,
                step_s=step,
            )
            if wf.n_windows:
                j = np.clip(np.searchsorted(edges, wf.start_s, side="right") - 1, 0, k - 1)
                n = np.bincount(j, minlength=k)
                s = np.bincount(j, weights=wf.value, minlength=k)
                values = np.where(n > 0, s / np.maximum(n, 1), np.nan)
        out[f"fairness_{name}_mean"] = values
    # core-hours provisioned per window (the last window runs to the run's last end)
    times, sizes = result.pool_timeline
    end = float(np.max(result.jobs.column("end_s").to_numpy())) if result.jobs.num_rows else 0.0
    cost_edges = edges.copy()
    cost_edges[-1] = max(cost_edges[-1], end)
    cost = np.zeros(k)
    if len(times):
        starts = np.asarray(times, dtype=np.float64)
        stops = np.concatenate((starts[1:], [cost_edges[-1]]))
        for a, b, p in zip(starts, stops, np.asarray(sizes, dtype=np.float64), strict=True):
            lo = np.clip(cost_edges[:-1], a, b)
            hi = np.clip(cost_edges[1:], a, b)
            cost += p * (hi - lo)
    out["provisioned_core_h"] = cost / 3600.0
    return out


def _action_mix(
    result: SimulationResult, t0: float, t1: float, bins: int
) -> dict[str, list[float | None]]:
    """Share of the starts (for RL: of the decisions) that elected interactive jobs, per bin."""
    jobs = result.jobs
    start = jobs.column("start_s").to_numpy()
    inter = np.asarray(jobs.column("interactive").to_numpy(zero_copy_only=False), dtype=bool)
    edges = np.linspace(t0, t1, bins + 1)
    idx = np.clip(np.searchsorted(edges, start, side="right") - 1, 0, bins - 1)
    n = np.bincount(idx, minlength=bins)
    ni = np.bincount(idx[inter], minlength=bins)
    share = [float(a / b) if b else None for a, b in zip(ni, n, strict=True)]
    return {"interactive_share": share, "decisions": [float(x) for x in n]}


# --- series for the report's figures (additive: summary["series"]'s extra keys) -------------------

SERIES_POINTS = 240
"""Most points of any time series the summary keeps (the report draws them as they are)."""

QUANTILE_PROBS: tuple[float, ...] = tuple(
    [round(p, 4) for p in np.linspace(0.0, 0.99, 100)] + [0.992, 0.994, 0.996, 0.998, 0.999, 1.0]
)
"""Probabilities at which the wait and W quantiles of each class are kept."""

_LONG_WAITS_KEPT = 200


def _r(x: float) -> float | None:
    """Round to 5 significant digits for JSON (None for a non-finite value)."""
    return float(f"{x:.5g}") if math.isfinite(x) else None


def _thin(n: int, most: int = SERIES_POINTS) -> NDArray[np.int64]:
    """Return the indices of at most ``most`` evenly spread points of ``n`` (ends kept)."""
    if n <= most:
        return np.arange(n, dtype=np.int64)
    return np.unique(np.round(np.linspace(0, n - 1, most)).astype(np.int64))


def _step_integral(
    times: NDArray[np.float64], values: NDArray[np.float64], edges: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Integral over each bin of a step function (``values[k]`` from ``times[k]``, 0 before)."""
    if times.size == 0:
        return np.zeros(len(edges) - 1)
    cum = np.concatenate(([0.0], np.cumsum(values[:-1] * np.diff(times))))
    k = np.searchsorted(times, edges, side="right") - 1
    at = np.where(
        k >= 0,
        cum[np.maximum(k, 0)] + values[np.maximum(k, 0)] * (edges - times[np.maximum(k, 0)]),
        0.0,
    )
    return np.diff(at)


def _floor_spans(
    times: NDArray[np.float64], sizes: NDArray[np.int64], floor: int, end_s: float
) -> list[list[float]]:
    """Return the [start, end] spans (seconds) when the pool held at most ``floor`` cores."""
    spans: list[list[float]] = []
    stops = np.concatenate((times[1:], [end_s]))
    for a, b, p in zip(times, stops, sizes, strict=True):
        if p > floor or b <= a:
            continue
        if spans and a <= spans[-1][1]:
            spans[-1][1] = float(b)
        else:
            spans.append([float(a), float(b)])
    if len(spans) > SERIES_POINTS // 2:  # keep the longest, in time order
        keep = sorted(sorted(spans, key=lambda s: s[0] - s[1])[: SERIES_POINTS // 2])
        spans = keep
    return [[_r(a) or 0.0, _r(b) or 0.0] for a, b in spans]


def _pool_series(result: SimulationResult, t0: float, floor: int | None) -> dict[str, Any]:
    """Pool size (bin mean, min, max) and utilisation (busy / provisioned core-s) per time bin."""
    jobs = result.jobs
    times, sizes = result.pool_timeline
    end = float(np.max(jobs.column("end_s").to_numpy())) if jobs.num_rows else t0
    edges = np.linspace(t0, max(end, t0 + 1.0), SERIES_POINTS + 1)
    t = np.asarray(times, dtype=np.float64)
    p = np.asarray(sizes, dtype=np.float64)
    provisioned = _step_integral(t, p, edges)
    start = jobs.column("start_s").to_numpy()
    stop = jobs.column("end_s").to_numpy()
    cores = np.asarray(jobs.column("cores").to_numpy(), dtype=np.float64)
    ev = np.concatenate((start, stop))
    order = np.argsort(ev, kind="stable")
    busy = _step_integral(ev[order], np.cumsum(np.concatenate((cores, -cores))[order]), edges)
    width = np.diff(edges)
    lo = np.full(SERIES_POINTS, np.nan)
    hi = np.full(SERIES_POINTS, np.nan)
    if t.size:
        # the size in force at each bin's start, and every change inside the bin
        k0 = np.clip(np.searchsorted(t, edges[:-1], side="right") - 1, 0, t.size - 1)
        k1 = np.clip(np.searchsorted(t, edges[1:], side="left") - 1, 0, t.size - 1)
        for b in range(SERIES_POINTS):
            seg = p[k0[b] : max(k1[b], k0[b]) + 1]
            lo[b], hi[b] = float(seg.min()), float(seg.max())
    with np.errstate(invalid="ignore", divide="ignore"):
        util = np.where(provisioned > 0, busy / provisioned, np.nan)
    return {
        "time_s": [_r(x) for x in 0.5 * (edges[:-1] + edges[1:])],
        "pool_mean": [_r(x) for x in provisioned / width],
        "pool_min": [_r(x) for x in lo],
        "pool_max": [_r(x) for x in hi],
        "utilisation": [_r(x) for x in util],
        "floor": floor,
    }


def _quantiles(values: NDArray[np.float64]) -> list[float | None] | None:
    ok = values[np.isfinite(values)]
    if ok.size == 0:
        return None
    return [_r(float(x)) for x in np.quantile(ok, QUANTILE_PROBS)]


def _series(
    results: Mapping[str, Sequence[SimulationResult]],
    *,
    t0: float,
    edges: NDArray[np.float64],
    per_window: Mapping[str, Mapping[str, NDArray[np.float64]]],
    shares: Mapping[str, float],
    floor: int,
    config: ContentionConfig,
) -> dict[str, Any]:
    """Return what the report's contention figures draw (``summary["series"]``).

    Schema 1's ``fairness`` and ``elastic`` stay (empty); the other keys are added:

    ``distributions``: per policy and class the wait and W quantiles at :data:`QUANTILE_PROBS`,
    measured jobs of every run (all seeds) pooled. ``fairness_windows``: F over the sliding
    daily and weekly windows (first run). ``pool``: elastic runs' pool size and utilisation per
    time bin (first run) and, for every run, the spans at the floor. ``long_waits``: for every
    run, the interactive jobs that waited over a day (submit time, wait; the longest
    200). ``windows``: each policy's interactive mean W per test window (the intervals' units).
    """
    dist: dict[str, Any] = {}
    fair: dict[str, Any] = {}
    pool: dict[str, Any] = {}
    long_waits: dict[str, list[dict[str, Any]]] = {}
    for label, runs in results.items():
        measured = [_measured(r, config) for r in runs]
        inter = np.concatenate(
            [
                np.asarray(m.column("interactive").to_numpy(zero_copy_only=False), dtype=bool)
                for m in measured
            ]
        )
        wait = np.concatenate(
            [np.asarray(m.column("wait_s").to_numpy(), dtype=np.float64) for m in measured]
        )
        w = np.concatenate([_f64(m.column("responsiveness")) for m in measured])
        dist[label] = {
            cls: {"n": int(mask.sum()), "wait_s": _quantiles(wait[mask]), "w": _quantiles(w[mask])}
            for cls, mask in (("interactive", inter), ("batch", ~inter))
        }
        first = measured[0]
        fair[label] = {}
        for name, (length, step) in FAIRNESS_WINDOWS.items():
            wf = windowed_fairness(
                first.column("start_s").to_numpy(),
                first.column("run_s").to_numpy(),
                first.column("cores").to_numpy(),
                first.column("vo"),
                shares,
                length_s=length,
                step_s=step,
            )
            keep = _thin(wf.n_windows)
            fair[label][name] = {
                "length_s": length,
                "start_s": [_r(x) for x in wf.start_s[keep]],
                "value": [_r(x) for x in wf.value[keep]],
            }
        elastic_run = label in ("threshold", "rl-elastic")
        if label in ELASTIC:
            entry = _pool_series(runs[0], t0, floor if elastic_run else None)
            entry["floor_spans"] = []
            for i, r in enumerate(runs):
                if not elastic_run:
                    break
                times, sizes = r.pool_timeline
                end = float(np.max(r.jobs.column("end_s").to_numpy())) if r.jobs.num_rows else t0
                entry["floor_spans"].append(
                    {"seed_index": i, "spans": _floor_spans(times, sizes, floor, end)}
                )
            pool[label] = entry
        long_waits[label] = []
        for i, r in enumerate(runs):
            jobs = r.jobs
            ri = np.asarray(jobs.column("interactive").to_numpy(zero_copy_only=False), dtype=bool)
            rw = np.asarray(jobs.column("wait_s").to_numpy(), dtype=np.float64)
            over = np.flatnonzero(ri & (rw > 86_400.0))
            if over.size == 0:
                continue
            top = over[np.argsort(-rw[over], kind="stable")[:_LONG_WAITS_KEPT]]
            top = np.sort(top)
            sub = np.asarray(jobs.column("submit_s").to_numpy(), dtype=np.float64)
            long_waits[label].append(
                {
                    "seed_index": i,
                    "count": int(over.size),
                    "submit_s": [_r(x) for x in sub[top]],
                    "wait_s": [_r(x) for x in rw[top]],
                }
            )
    return {
        "fairness": {},
        "elastic": {},
        "definition": (
            "report series: wait and W quantiles per class (measured jobs, seeds pooled); "
            "F over sliding daily/weekly windows, elastic pool size and utilisation per time bin "
            "(first run; RL: first seed); pool-at-floor spans and interactive waits over a day "
            "for every run; interactive mean W per test window"
        ),
        "time_origin_s": t0,
        "quantile_probs": list(QUANTILE_PROBS),
        "distributions": dist,
        "fairness_windows": fair,
        "pool": pool,
        "long_waits": long_waits,
        "windows": {
            "edges_s": [_r(x) for x in edges],
            "interactive_w_mean": {
                label: [_r(float(x)) for x in pw["interactive_w_mean"]]
                for label, pw in per_window.items()
            },
        },
    }


# --- agents -------------------------------------------------------------------------------------


def _reward(c: Candidate, shares: Mapping[str, float] | None, batch_weight: float = 0.1) -> Reward:
    if c.reward == "slowdown":
        return QueueSlowdownReward()
    if c.reward == "interactive-slowdown":
        return InteractiveSlowdownReward(batch_weight=batch_weight)
    if c.reward == "time-utility":
        return TimeUtilityReward()
    lam = 1.0 if c.lambda_s is None else c.lambda_s
    if lam < 1.0 and not shares:
        raise ConfigError("the w-f reward with lambda_s < 1 needs VO target shares")
    return ResponsivenessFairnessReward(lam, shares if lam < 1.0 else None)


def _agent_seeds(root: int, i: int) -> AgentSeeds:
    return AgentSeeds(*(_child(_stream(root, s), i) for s in STREAMS[2:]))


@dataclass
class _Trained:
    agent: SarsaScheduler
    prov: ElasticProvisioner | None
    curve: list[dict[str, Any]]
    wall_s: float


def _train(
    c: Candidate,
    i: int,
    train: pa.Table,
    cores: int,
    shares: Mapping[str, float] | None,
    features: SchedulingFeatures,
    config: ContentionConfig,
    *,
    elastic: bool = False,
    tau_s: float = 900.0,
) -> _Trained:
    """Pre-training (EDF, SJF or both), then SARSA episodes on the training part; the curve."""
    t = time.perf_counter()
    seeds = _agent_seeds(config.root_seed, i)
    pre = PRETRAIN_CHOICES[config.pretrain]
    options = {"name": f"rl-{c.name}", "behaviour": pre[0], **dict(config.agent_options)}
    if c.learner == "fqi":
        options["keep_candidates"] = True
    reward = _reward(c, shares, config.batch_weight)
    agent = make_rl_scheduler(c.q, copy.deepcopy(features), reward, seeds, **options)
    prov = None
    if elastic:
        prov = make_elastic_provisioner(
            c.q,
            cores,
            seeds.child(1),
            lambda_e=config.lambda_e,
            floor=config.floor,
            ceiling_factor=config.ceiling_factor,
            interval_s=config.interval_s,
            tau_s=tau_s,
            w_reward=config.elastic_reward,
            w_class=config.elastic_w_class,
            name=f"rl-{c.name}-provisioner",
        )
        if config.elastic_pretrain == "threshold":
            teacher = _threshold(config, cores)
    warmup, drain = _exclusion(train.num_rows, config)
    curve = []
    episodes: list[str | None] = [*pre, *([None] * config.train_episodes)]
    for e, behaviour in enumerate(episodes):
        agent.behaviour = behaviour  # type: ignore[assignment]
        if prov is not None and config.elastic_pretrain == "threshold":
            prov.behaviour = teacher if behaviour is not None else None
        res = simulate(
            train,
            cores=cores,
            policy=agent,
            provisioning=prov,
            vo_shares=shares,
            warmup_jobs=warmup,
            drain_jobs=drain,
            **_EST,
        )
        agent.finish()
        store = agent.store_
        n = store.size
        mine = (store.episode[:n] == store.current_episode) & store.ready[:n]
        rewards = store.reward[:n][mine]
        cls = res.summary["classes"]
        curve.append(
            {
                "episode": e,
                "behaviour": behaviour or "sarsa",
                "decisions": int(mine.sum()),
                "return": float(rewards.sum()),
                "mean_reward": float(rewards.mean()) if rewards.size else None,
                "interactive_w_mean": cls["interactive"].get("responsiveness_mean"),
                "all_w_mean": cls["all"].get("responsiveness_mean"),
            }
        )
    if c.learner == "fqi":
        agent.fit_offline(iterations=config.fitted_q_iterations)
    agent.behaviour = None
    if prov is not None:
        prov.behaviour = None
    agent.clear_log()
    return _Trained(agent, prov, curve, time.perf_counter() - t)


def _frozen(trained: _Trained) -> tuple[SarsaScheduler, ElasticProvisioner | None]:
    agent, prov = copy.deepcopy((trained.agent, trained.prov))
    agent.learning = False
    agent.epsilon = 0.0
    if prov is not None:
        prov.learning = False
        prov.epsilon = 0.0
    return agent, prov


# --- the experiment ------------------------------------------------------------------------------


def run_contention(
    regime: Regime,
    config: ContentionConfig | None = None,
    *,
    name: str | None = None,
    vo_shares: Mapping[str, float] | None = None,
) -> ExperimentResult:
    """Run one contention experiment (module docstring) on a regime.

    Parameters
    ----------
    regime : Regime
        The trace on its pool at its load (:func:`contention_regime`).
    config : ContentionConfig, optional
    name : str, optional
        The workload's name in outputs (default the trace's site).
    vo_shares : mapping of str to float, optional
        VO targets of the fairness metric, fairshare and the agent's deficit features; default
        the training part's core-second shares of the top 8 VOs.

    Returns
    -------
    ExperimentResult
        ``runs`` (one row per test run: baselines once, RL per seed) and the summary.
    """
    config = config or ContentionConfig()
    t_start = time.perf_counter()
    trace, cores = regime.trace, regime.cores
    meta = trace_metadata(trace)
    wl_name = name or str(meta["site"])
    tau_s = float(meta["tau_s"])
    (train, val, test), split = time_splits(trace, config.fractions)
    # An elastic pool below the largest job could leave it queued on an idle cluster for good
    # (the engine then stops the run): the floor is raised to the largest job, and said so.
    largest = int(np.max(trace.column("cores").to_numpy(), initial=1))
    floor_note = None
    if config.elastic and largest > config.floor:
        floor_note = (
            f"floor raised from {config.floor} to {min(largest, cores)} cores: the largest job "
            "asks for that many"
        )
        logger.info("%s: %s", name or "contention", floor_note)
        config = replace(config, floor=min(largest, cores))
    shares = dict(vo_shares) if vo_shares else _service_shares(train)
    shares_source = "given" if vo_shares else "the training part's core-second shares (top 8)"
    if not shares:
        raise ConfigError(f"{wl_name}: no VO targets (the trace has no VOs); give vo_shares")
    if config.vo_features == "targets":
        features = SchedulingFeatures(
            list(shares), cores, tau_s=tau_s, vo_targets=shares, half_life_s=86400.0
        )
    else:  # every VO in the one "other" slot: no VO one-hot, no deficits
        features = SchedulingFeatures([], cores, tau_s=tau_s)
    baselines = list(config.baselines)
    if regime.loaded is None and "wait_s" in test.column_names and not test["wait_s"].null_count:
        baselines = ["native", *baselines]

    def sim(part: pa.Table, **kwargs: Any) -> SimulationResult:
        warmup, drain = _exclusion(part.num_rows, config)
        kwargs.setdefault("cores", cores)
        return simulate(part, vo_shares=shares, warmup_jobs=warmup, drain_jobs=drain, **kwargs)

    # --- tuning on the validation part
    tuning = []
    trained: dict[tuple[str, int], _Trained] = {}
    for c in config.grid():
        scores = []
        for i in range(config.tune_seeds):
            tr = _train(c, i, train, cores, shares, features, config, tau_s=tau_s)
            trained[(c.name, i)] = tr
            agent, _ = _frozen(tr)
            res = sim(val, policy=agent, **_EST)
            scores.append(res.summary["classes"]["interactive"].get("responsiveness_mean"))
        ok = [s for s in scores if s is not None]
        tuning.append(
            {
                "candidate": c.name,
                "q": c.q,
                "reward": c.reward,
                "lambda_s": c.lambda_s,
                "learner": c.learner,
                "validation_interactive_w_mean": float(np.mean(ok)) if ok else None,
                "per_seed": scores,
                "train_wall_s": float(
                    sum(trained[(c.name, i)].wall_s for i in range(config.tune_seeds))
                ),
            }
        )
        logger.info("%s: candidate %s, validation W_int %s", wl_name, c.name, scores)
    grid = config.grid()
    best_i = max(
        range(len(grid)),
        key=lambda j: (
            -math.inf
            if tuning[j]["validation_interactive_w_mean"] is None
            else tuning[j]["validation_interactive_w_mean"],
            -j,
        ),
    )
    chosen = grid[best_i]
    t_tuned = time.perf_counter()

    # --- test: baselines once, the chosen agent per seed
    t0 = float(split["test"]["start_s"])
    t1 = float(split["test"]["end_s"])
    edges = np.linspace(t0, t1, config.windows + 1)
    edges[-1] = np.nextafter(t1, math.inf)
    results: dict[str, list[SimulationResult]] = {}
    rows: list[dict[str, Any]] = []
    walls: dict[str, float] = {}

    def record(
        label: str,
        family: str,
        mode: str,
        i: int,
        res: SimulationResult,
        wall: float,
        estimator: str,
        provisioning: str,
        train_wall: float | None = None,
    ) -> None:
        warmup, drain = _exclusion(res.jobs.num_rows, config)
        rows.append(
            {
                "workload": wl_name,
                "variant": label,
                "family": family,
                "mode": mode,
                "seed_index": i,
                "eval_seed": None,
                "agent_seed": None if family != "rl" else str(i),
                "estimator": estimator,
                "provisioning": provisioning,
                **_run_metrics(res, warmup, drain),
                "wall_s": wall,
                "train_wall_s": train_wall,
            }
        )
        results.setdefault(label, []).append(res)
        walls[label] = walls.get(label, 0.0) + wall

    for b in baselines:
        spec = {"policy": "native"} if b == "native" else CONTENTION_BASELINES[b]
        t = time.perf_counter()
        extra = {"policy_options": {"half_life_s": config.half_life_s}} if b == "fairshare" else {}
        res = sim(test, **spec, **extra)
        record(
            b,
            "native" if b == "native" else "baseline",
            "baseline",
            0,
            res,
            time.perf_counter() - t,
            str(spec.get("estimator", "oracle")),
            "rigid",
        )
    curves = []
    rl_label = "rl"
    for i in range(config.seeds):
        known = trained.get((chosen.name, i))
        tr = (
            known
            if known is not None
            else _train(chosen, i, train, cores, shares, features, config, tau_s=tau_s)
        )
        curves.append({"seed_index": i, "episodes": tr.curve})
        agent, _ = _frozen(tr)
        t = time.perf_counter()
        res = sim(test, policy=agent, **_EST)
        record(
            rl_label, "rl", "frozen", i, res, time.perf_counter() - t, "median", "rigid", tr.wall_s
        )
    elastic_info: dict[str, Any] | None = None
    if config.elastic:
        elastic_info = _elastic_runs(
            chosen, train, test, cores, shares, features, config, tau_s, sim, record
        )
    metrics_names = dict(CONTENTION_METRICS)
    if config.elastic:
        metrics_names["provisioned_core_h"] = LOWER

    # --- per-window values, intervals, best baseline, margins, spread
    per_window: dict[str, dict[str, NDArray[np.float64]]] = {}
    for label, runs in results.items():
        wms = [_window_metrics(r, edges, config, shares) for r in runs]
        per_window[label] = {
            m: _nanmean_rows(np.vstack([w[m] for w in wms])) if len(wms) > 1 else wms[0][m]
            for m in wms[0]
        }
    overall = {label: _overall(rows, label) for label in results}
    rl_labels = [lab for lab in results if lab.startswith("rl")]
    base_labels = [lab for lab in results if lab not in rl_labels]
    metrics_out: dict[str, dict[str, Any]] = {}
    best: dict[str, Any] = {}
    margins: dict[str, Any] = {}
    spread: dict[str, Any] = {}
    for m, direction in metrics_names.items():
        lo_b, hi_b = _bounds(m)
        metrics_out[m] = {}
        for label in results:
            iv = mean_interval(per_window[label][m], bounds=(lo_b, hi_b))
            entry: dict[str, Any] = {
                "mean": iv.mean,
                "ci_low": iv.low,
                "ci_high": iv.high,
                "n": iv.n,
                "unit": "test window",
                "method": iv.method,
                "overall": overall[label].get(m),
            }
            if label in rl_labels:
                entry["seeds"] = seed_interval(
                    [r.get(m) for r in rows if r["variant"] == label], bounds=(lo_b, hi_b)
                )
            metrics_out[m][label] = entry
        groups = [("rigid", [r for r in rl_labels if r not in ELASTIC], _rigid(base_labels))]
        if config.elastic:
            groups.append(("elastic", ["rl-elastic"], [b for b in base_labels if b in ELASTIC]))
        for group, rls, pool in groups:
            if m == "provisioned_core_h" and group == "rigid":
                continue
            found = _best_and_margins(m, direction, pool, rls, metrics_out[m], per_window)
            if found is None:
                continue
            b_entry, m_entries, s_entry = found
            key = "" if group == "rigid" else "_elastic"
            best.setdefault(f"by{key}", {})[m] = b_entry
            for rl, entry in m_entries.items():
                margins.setdefault(m, {})[rl] = entry
            spread.setdefault(group, {})[m] = s_entry

    # --- flags
    flags: dict[str, list[dict[str, Any]]] = {}
    fifo_int = metrics_out["interactive_w_mean"].get("fifo")
    floor = min(config.floor, cores)
    for label, runs in results.items():
        fl: list[dict[str, Any]] = []
        elastic_run = label in ("threshold", "rl-elastic")
        for r in runs[:1] if label not in rl_labels else runs:
            for f in pathology_flags(
                r, floor=floor if elastic_run else None, floor_share=config.floor_share
            ):
                fl.append({**asdict(f), "seed_index": runs.index(r)})
        if label != "fifo" and fifo_int is not None:
            w = metrics_out["interactive_w_mean"][label]["mean"]
            low = w_below_fifo(w, fifo_int, label="interactive mean W") if w is not None else None
            if low is not None:
                fl.append(asdict(low))
        flags[label] = fl

    mix = {
        "bins": config.mix_bins,
        "time_s": (
            0.5
            * (
                np.linspace(t0, t1, config.mix_bins + 1)[:-1]
                + np.linspace(t0, t1, config.mix_bins + 1)[1:]
            )
        ).tolist(),
        "definition": "share of the starts (RL: of its decisions) that elected an interactive "
        "job, per equal time bin of the test period; first seed for RL",
        "policies": {
            label: _action_mix(runs[0], t0, t1, config.mix_bins) for label, runs in results.items()
        },
    }
    aggregate = _aggregate_rows(rows)
    wall_total = time.perf_counter() - t_start
    summary: dict[str, Any] = {
        "schema": CONTENTION_SCHEMA,
        "workload": wl_name,
        "experiment": "contention",
        "source": "trace",
        "cores": cores,
        "tau_s": tau_s,
        "vo_shares": shares,
        "vo_shares_source": shares_source,
        "targets": None,
        "regime": {
            **regime.describe(),
            "offered_load_test": offered_load(test, cores),
            "simulated_utilisation": {
                label: overall[label].get("utilisation") for label in results
            },
        },
        "split": split,
        "protocol": {
            "elastic_floor": (
                {"floor": config.floor, "note": floor_note} if config.elastic else None
            ),
            "training": (
                f"{_pretrain_text(config.pretrain)} then {config.train_episodes} SARSA "
                "episode(s) on the "
                f"train part ({split['train']['jobs']} jobs); estimated runtimes (class median "
                "by VO and interactive flag); "
                + (
                    "state with per-VO queue shares and deficits to the targets, VO one-hot in "
                    "the action"
                    if config.vo_features == "targets"
                    else "no per-VO features (vo_features='none')"
                )
            ),
            "vo_features": config.vo_features,
            "pretraining": (
                f"{_pretrain_text(config.pretrain)}: the agent learns from the episode(s) but "
                f"does not choose in them (behaviour {list(PRETRAIN_CHOICES[config.pretrain])})"
            ),
            "pretrain": config.pretrain,
            "evaluation": (
                f"the chosen candidate, frozen, on the test part ({split['test']['jobs']} jobs), "
                f"{config.seeds} agent seed(s); baselines once (deterministic)"
            ),
            "tuning": (
                f"{len(grid)} candidate(s) x {config.tune_seeds} seed(s) trained on train, "
                "scored on validation by interactive mean W; the best is reported on test"
            ),
            "modes": {"frozen": "learning off, epsilon 0"},
            "discounting": "per decision",
            "interval": (
                f"95 % expanded percentile bootstrap over {config.windows} equal test windows "
                "(block bootstrap; a policy's value per window is the mean over its seeds), "
                "within the metric's range; margins are paired per window"
            ),
            "exclusion": (
                f"first min({config.warmup_jobs}, n/10) and last min({config.drain_jobs}, n/10) "
                "jobs of each run left out of the statistics"
            ),
            "baselines": {b: _baseline_text(b) for b in baselines},
            "split": {
                "train_jobs": split["train"]["jobs"] + split["validation"]["jobs"],
                "t_split_s": split["test"]["start_s"],
                "eval_jobs": split["test"]["jobs"],
            },
            "config": config.to_dict(),
        },
        "seeds": {
            "root": config.root_seed,
            "streams": {s: _seed_record(_stream(config.root_seed, s)) for s in STREAMS},
            "agents": [_agent_seeds(config.root_seed, i).describe() for i in range(config.seeds)],
        },
        "agents": {
            rl_label: {
                "scheduler": trained.get((chosen.name, 0), _first(trained)).agent.describe(),
                "provisioner": None,
                "candidate": chosen.name,
                "features": list(features.names_state),
                "action_features": list(features.names_action),
            }
        },
        "units": {"mean_runtime_s": float(np.mean(test.column("run_s").to_numpy()))},
        "aggregate": aggregate,
        "comparison": [],
        "published": None,
        "metrics": metrics_out,
        "best_baseline": {
            **best.get("by", {}),
            **({"elastic": best["by_elastic"]} if "by_elastic" in best else {}),
        },
        "rl_margin": margins,
        "baseline_spread": {
            **spread.get("rigid", {}),
            **({"elastic": spread["elastic"]} if "elastic" in spread else {}),
        },
        "flags": flags,
        "tuning": {
            "grid": tuning,
            "chosen": chosen.name,
            "criterion": "validation interactive mean W (mean over tune seeds); ties: grid order",
            "budget": {
                "candidates": len(grid),
                "tune_seeds": config.tune_seeds,
                "train_episodes": config.train_episodes + len(PRETRAIN_CHOICES[config.pretrain]),
                "pretrain": config.pretrain,
                "train_jobs_per_episode": split["train"]["jobs"],
                "tuning_wall_s": t_tuned - t_start,
            },
        },
        "learning_curves": {"candidate": chosen.name, "seeds": curves},
        "action_mix": mix,
        "elastic": elastic_info,
        "wall_s": {"total": wall_total, "test_runs": walls},
        "series": _series(
            results,
            t0=t0,
            edges=edges,
            per_window=per_window,
            shares=shares,
            floor=floor,
            config=config,
        ),
    }
    summary["verdict"] = _verdict(summary)
    return ExperimentResult(runs=_runs_table(rows), summary=_json_safe(summary))


def _pretrain_text(pretrain: str) -> str:
    rules = {"edf": "EDF", "sjf": "SJF (estimated runtimes)"}
    names = [rules[b] for b in PRETRAIN_CHOICES[pretrain]]
    return " then ".join(names) + " pre-training episode" + ("s" if len(names) > 1 else "")


def _first(trained: Mapping[tuple[str, int], _Trained]) -> _Trained:
    return next(iter(trained.values()))


ELASTIC = frozenset({"threshold", "static-best", "rl-elastic"})
"""The runs on an elastic (or hindsight-static) pool: compared among themselves."""


def _nanmean_rows(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Column means over the finite entries (NaN where a column has none), without warnings."""
    ok = np.isfinite(x)
    n = ok.sum(axis=0)
    total = np.where(ok, x, 0.0).sum(axis=0)
    return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def _rigid(labels: Sequence[str]) -> list[str]:
    return [lab for lab in labels if lab not in ELASTIC]


def _best_and_margins(
    metric: str,
    direction: str,
    pool: Sequence[str],
    rls: Sequence[str],
    entries: Mapping[str, Mapping[str, Any]],
    per_window: Mapping[str, Mapping[str, NDArray[np.float64]]],
) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, Any]] | None:
    """Return the best of ``pool`` on ``metric``, each RL run's paired margin to it, the spread."""
    lo_b, hi_b = _bounds(metric)
    diff_bounds = (lo_b - hi_b, hi_b - lo_b)
    cands = [(lab, entries[lab]["mean"]) for lab in pool if entries[lab]["mean"] is not None]
    if not cands:
        return None
    sign = 1.0 if direction == HIGHER else -1.0
    best_label, best_value = max(cands, key=lambda kv: sign * kv[1])
    worst_label, worst_value = min(cands, key=lambda kv: sign * kv[1])
    best = {"policy": best_label, "mean": best_value, "direction": direction}
    margins = {}
    for rl in rls:
        d = sign * (per_window[rl][metric] - per_window[best_label][metric])
        iv = mean_interval(d, bounds=diff_bounds)
        margins[rl] = {
            "against": best_label,
            "value": iv.mean,
            "ci_low": iv.low,
            "ci_high": iv.high,
            "n": iv.n,
            "outcome": _outcome(iv.low, iv.high),
            "sign": "positive = RL better",
        }
    pairs = []
    for a in range(len(pool)):
        for b in range(a + 1, len(pool)):
            d = per_window[pool[a]][metric] - per_window[pool[b]][metric]
            iv = mean_interval(d, bounds=diff_bounds)
            pairs.append(
                {
                    "a": pool[a],
                    "b": pool[b],
                    "difference": iv.mean,
                    "ci_low": iv.low,
                    "ci_high": iv.high,
                    "separated": _outcome(iv.low, iv.high) != "within noise",
                }
            )
    spread = {
        "best": best_label,
        "worst": worst_label,
        "range": abs(best_value - worst_value),
        "separated_pairs": sum(bool(p["separated"]) for p in pairs),
        "pairs": pairs,
    }
    return best, margins, spread


def _bounds(metric: str) -> tuple[float, float]:
    if metric.endswith(("_s", "_core_h")):
        return 0.0, math.inf
    return 0.0, 1.0


def _outcome(lo: float | None, hi: float | None) -> str:
    if lo is not None and lo > 0:
        return "better"
    if hi is not None and hi < 0:
        return "worse"
    return "within noise"


def _overall(rows: Sequence[Mapping[str, Any]], label: str) -> dict[str, float | None]:
    mine = [r for r in rows if r["variant"] == label]
    out: dict[str, float | None] = {}
    for key in mine[0]:
        vals = [r[key] for r in mine if isinstance(r[key], float)]
        out[key] = float(np.mean(vals)) if vals else None
    return out


def _aggregate_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Return schema 1's ``aggregate``: per (variant, mode) the seed intervals of each metric."""
    from gridtrace.sim.rl._experiments import _aggregate

    return _aggregate(rows)


def _baseline_text(name: str) -> str:
    if name == "native":
        return "the logged start times (as-logged schedule)"
    spec = CONTENTION_BASELINES[name]
    if name == "fairshare":
        return "fair-share: oldest job of the VO furthest below its target (decayed usage)"
    est = spec.get("estimator", "oracle")
    return f"{spec['policy']}, {est} runtimes" + (
        " by (vo, interactive)" if est != "oracle" else ""
    )


def _threshold(config: ContentionConfig, cores: int) -> Any:
    """Return the threshold autoscaler of the elastic comparison (and of its pre-training)."""
    floor = min(config.floor, cores)
    ceiling = max(round(config.ceiling_factor * cores), floor)
    opts: dict[str, Any] = {"low": 0.5, "high": 0.9, "step": 8, "cooldown_s": 1800.0}
    opts.update(dict(config.threshold_options))
    return make_provisioning(
        "threshold", floor=floor, ceiling=ceiling, interval_s=config.interval_s, **opts
    )


def _elastic_runs(
    chosen: Candidate,
    train: pa.Table,
    test: pa.Table,
    cores: int,
    shares: Mapping[str, float],
    features: SchedulingFeatures,
    config: ContentionConfig,
    tau_s: float,
    sim: Any,
    record: Any,
) -> dict[str, Any]:
    """Threshold autoscaler, best static pool in hindsight and the RL provisioner on test."""
    spec = CONTENTION_BASELINES[config.elastic_scheduler]
    floor = min(config.floor, cores)
    ceiling = max(round(config.ceiling_factor * cores), floor)
    t = time.perf_counter()
    scaler = _threshold(config, cores)
    res = sim(test, provisioning=scaler, **spec)
    record(
        "threshold",
        "baseline",
        "baseline",
        0,
        res,
        time.perf_counter() - t,
        str(spec.get("estimator", "oracle")),
        "elastic",
    )
    t = time.perf_counter()
    warmup, drain = _exclusion(test.num_rows, config)
    search = best_static_pool(
        test,
        lambda_e=config.lambda_e,
        floor=floor,
        ceiling=ceiling,
        levels=config.static_levels,
        keep_results=True,
        vo_shares=shares,
        warmup_jobs=warmup,
        drain_jobs=drain,
        **spec,
    )
    record(
        "static-best",
        "baseline",
        "baseline",
        0,
        search.results[search.best_size],
        time.perf_counter() - t,
        str(spec.get("estimator", "oracle")),
        "static",
    )
    rl_cost = []
    for i in range(config.seeds):
        tr = _train(chosen, i, train, cores, shares, features, config, elastic=True, tau_s=tau_s)
        agent, prov = _frozen(tr)
        t = time.perf_counter()
        res = sim(test, policy=agent, provisioning=prov, **_EST)
        record(
            "rl-elastic",
            "rl",
            "frozen",
            i,
            res,
            time.perf_counter() - t,
            "median",
            "elastic",
            tr.wall_s,
        )
        prov_s = res.summary.get("provisioned_core_s")
        if prov_s is not None:
            rl_cost.append(prov_s / 3600.0)
    equal_cost = (
        search.best_within(float(np.mean(rl_cost)), "w_interactive_mean") if rl_cost else None
    )
    return {
        "scheduler": config.elastic_scheduler,
        "lambda_e": config.lambda_e,
        "floor": floor,
        "ceiling": ceiling,
        "threshold": scaler.describe() if hasattr(scaler, "describe") else None,
        "static_search": search.describe(),
        "static_at_rl_cost": None if equal_cost is None else asdict(equal_cost),
        "note": (
            "static-best is chosen in hindsight on the test part (an oracle, not a policy); "
            "static_at_rl_cost is the best interactive W among static pools costing no more "
            "than RL's mean core-hours"
        ),
    }


def _verdict(summary: Mapping[str, Any]) -> str:
    """Plain sentences: the regime, the baselines' spread and RL's margins."""
    reg = summary["regime"]
    parts = [
        f"{summary['workload']} contention experiment at {reg['label']} on {reg['cores']} cores "
        f"(offered load {reg['offered_load']:.3f}); chosen agent {summary['tuning']['chosen']}."
    ]
    sp = summary["baseline_spread"].get("interactive_w_mean")
    if sp:
        n_pairs = len(sp["pairs"])
        parts.append(
            f"Baselines' interactive W: best {sp['best']}, worst {sp['worst']}, range "
            f"{sp['range']:.3f}; {sp['separated_pairs']} of {n_pairs} pairs separated beyond "
            "their paired interval."
        )
    for m, by in summary["rl_margin"].items():
        for rl, mg in by.items():
            if mg["value"] is None:
                continue
            lo = "n/a" if mg["ci_low"] is None else f"{mg['ci_low']:.4g}"
            hi = "n/a" if mg["ci_high"] is None else f"{mg['ci_high']:.4g}"
            parts.append(
                f"{rl} vs {mg['against']} on {m}: margin {mg['value']:.4g} [{lo}, {hi}] "
                f"({mg['outcome']})."
            )
    raised = sorted({f["code"] for fl in summary["flags"].values() for f in fl})
    if raised:
        parts.append("Flags raised: " + ", ".join(raised) + ".")
    return " ".join(parts)
