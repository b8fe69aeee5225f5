"""RLScheduler's PPO setup: its environment, training and evaluation (issue 15, item 3).

Imports gymnasium (the ``rl`` extra); torch and stable-baselines3 (the ``ppo`` extra) are
imported inside the training and loading functions. The policy network is in
:mod:`gridtrace.sim.rl._rlsched_policy`, the PPO settings in :class:`RLSchedPPOConfig`.

Written from RLScheduler's ``HPCEnv`` (``HPCSimPickJobs.py`` of ``DIR-LAB/deep-batch-scheduler``,
its ``build_observation``, ``step`` and ``reset``) and its constants ``MAX_QUEUE_SIZE = 128``,
``JOB_FEATURES = 8``, ``JOB_SEQUENCE_SIZE = 256``, ``MAX_WAIT_TIME = 12 h``. The scheduling loop
itself is :func:`~gridtrace.sim.rl._rlsched_env.rlscheduler_decisions`, which reproduces
:func:`gridtrace.sim.simulate_rlscheduler_window` with and without backfilling.

Observation (:class:`RLSchedulerObserver`)
------------------------------------------
A ``(128, 8)`` float32 window; row i describes visible job i:

0. wait ``(now − submit) / 12 h``, capped at ``1 − 1e-5``;
1. requested time / the trace's longest run time, capped at ``1 − 1e-5``;
2. processors / ``MaxProcs``, capped at ``1 − 1e-5``;
3. – 6. requested memory, user, group and executable normalised by their maximum, or 1 when the
   trace does not record them (−1). :class:`~gridtrace.sim.RLSchedulerWorkload` does not carry
   these fields, so they are always 1 here: exact on the Lublin models (all −1), a difference
   from RLScheduler on traces that record them;
7. ``1 − 1e-5`` when the job fits the free nodes now, else ``1e-5``.

Padded rows are ``[0, 1, 1, 1, 1, 1, 1, 0]``, RLScheduler's padding, and the action mask is
false on them (RLScheduler's training loop builds its mask by recognising that row; a real job
cannot produce it, its features being capped below 1). The visible jobs are the queue in submit
order when it holds at most 128 jobs; otherwise RLScheduler alternates the next job by SJF
(requested time, submit) and the next by size (processors, submit), skipping jobs already
taken, until 128 are chosen (its third, "random" list is read from the SJF ranking, so nothing
is random).

Actions, episodes and reward (:class:`RLSchedulerEnv`)
------------------------------------------------------
An action is a slot of the window: its job becomes the chosen job of RLScheduler's loop (it
starts as soon as it fits; with ``backfill`` other jobs start around its reservation). An
episode schedules ``sequence`` jobs (256) starting at a job drawn from the environment's seeded
generator as RLScheduler does, uniformly in ``[sequence, n − sequence − 1)``; ``reset(options=
{"start": i})`` fixes it. Every step's reward is 0 except the last: minus the episode's mean
bounded slowdown (the bounded slowdowns summed in start order, each divided by ``sequence``;
RLScheduler's ``-rl_total`` for ``job_score_type = 0``). A padded slot is not a valid action;
RLScheduler would then "skip" (advance time); here it takes slot 0 instead and says so in
``info["valid"]`` (masked PPO never picks it).

Evaluation (:func:`evaluate_rlsched_ppo`)
-----------------------------------------
On RLScheduler's 10 evaluation windows of 1024 jobs (:func:`~gridtrace.sim.rlscheduler_table`'s
windows, seed 1), the agent taking the most likely valid slot at every decision, beside the
heuristic columns of the table and RLScheduler's published RL value (:data:`PUBLISHED_RL_BSLD`).
RLScheduler's test script (``compare-pick-jobs.py``) samples the slot from the policy instead
(``tf.multinomial``); the most likely slot keeps the evaluation repeatable without torch's
global generator.
An agent trained on one trace is evaluated on another by passing that trace's workload; the
observation is then normalised with the evaluated trace's longest run time and ``MaxProcs``, as
RLScheduler's test script does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final, SupportsFloat

import gymnasium
import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError
from gridtrace.sim._rlscheduler import (
    BSLD_TAU_S,
    WINDOW_JOBS,
    RLSchedulerWorkload,
    rlscheduler_table,
    rlscheduler_window_starts,
)
from gridtrace.sim.rl._rlsched_env import (
    RLSchedulerDecision,
    rlscheduler_decisions,
    run_rlscheduler_agent,
)

__all__ = [
    "JOB_FEATURES",
    "JOB_SEQUENCE_SIZE",
    "MAX_QUEUE_SIZE",
    "MAX_WAIT_S",
    "PUBLISHED_RL_BSLD",
    "RLSchedPPOConfig",
    "RLSchedPPORun",
    "RLSchedulerEnv",
    "RLSchedulerObserver",
    "evaluate_rlsched_ppo",
    "load_rlsched_ppo",
    "run_observed_agent",
    "save_rlsched_ppo",
    "train_rlsched_ppo",
]

logger = library_logger(__name__)

MAX_QUEUE_SIZE: Final = 128
"""Rows of RLScheduler's observation window."""
JOB_FEATURES: Final = 8
"""Features per row."""
JOB_SEQUENCE_SIZE: Final = 256
"""Jobs per training episode."""
MAX_WAIT_S: Final = 12 * 3600.0
"""RLScheduler's wait normalisation (``MAX_WAIT_TIME``), seconds."""

_CAP: Final = 1.0 - 1e-5
_PAD: Final = (0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0)


class RLSchedulerObserver:
    """Build RLScheduler's observation of jobs ``first … first + window − 1`` of a workload.

    Parameters
    ----------
    workload : RLSchedulerWorkload
    first, window : int
        The jobs of the episode (window-local indices in the decisions).

    Notes
    -----
    The run-time normalisation is the longest run time of the whole workload (RLScheduler's
    ``max_exec_time``), the processor one its ``MaxProcs``.
    """

    def __init__(self, workload: RLSchedulerWorkload, first: int, window: int) -> None:
        part = slice(first, first + window)
        self.submit = workload.submit_s[part].tolist()
        self.request = workload.request_s[part].tolist()
        self.cores = workload.cores[part].tolist()
        self.nodes = workload.nodes[part].tolist()
        max_run = float(workload.run_s.max()) if len(workload) else 1.0
        self._req_norm = [min(r / max_run, _CAP) for r in self.request]
        self._core_norm = [min(c / workload.max_procs, _CAP) for c in self.cores]

    def visible(self, queue: Sequence[int]) -> list[int]:
        """Return the visible jobs (module docstring), at most 128."""
        if len(queue) <= MAX_QUEUE_SIZE:
            return sorted(queue, key=self.submit.__getitem__)
        sub, req, cores = self.submit, self.request, self.cores
        by_sjf = sorted(queue, key=lambda j: (req[j], sub[j]))[:MAX_QUEUE_SIZE]
        by_size = sorted(queue, key=lambda j: (cores[j], sub[j]))[:MAX_QUEUE_SIZE]
        chosen: list[int] = []
        taken: set[int] = set()
        for a, b in zip(by_sjf, by_size, strict=True):
            for j in (a, b):
                if j not in taken and len(chosen) < MAX_QUEUE_SIZE:
                    chosen.append(j)
                    taken.add(j)
            if len(chosen) >= MAX_QUEUE_SIZE:
                break
        return chosen

    def observe(
        self, decision: RLSchedulerDecision
    ) -> tuple[NDArray[np.float32], NDArray[np.bool_], list[int]]:
        """Return the observation, the action mask and the visible jobs (slot → job)."""
        jobs = self.visible(decision.queue)
        obs = np.empty((MAX_QUEUE_SIZE, JOB_FEATURES), dtype=np.float32)
        obs[:] = _PAD
        now, free = decision.now, decision.free_nodes
        for i, j in enumerate(jobs):
            obs[i, 0] = min((now - self.submit[j]) / MAX_WAIT_S, _CAP)
            obs[i, 1] = self._req_norm[j]
            obs[i, 2] = self._core_norm[j]
            obs[i, 7] = _CAP if self.nodes[j] <= free else 1e-5
        mask = np.zeros(MAX_QUEUE_SIZE, dtype=np.bool_)
        mask[: len(jobs)] = True
        return obs, mask, jobs


def _mean_bsld(
    workload: RLSchedulerWorkload, first: int, window: int, order: list[int], start: list[float]
) -> float:
    """RLScheduler's mean bounded slowdown: per-job values / window, summed in start order."""
    part = slice(first, first + window)
    submit = workload.submit_s[part]
    run = workload.run_s[part]
    idx = np.asarray(order, dtype=np.int64)
    begin = np.asarray(start, dtype=np.float64)[idx]
    bsld = np.maximum(1.0, (begin - submit[idx] + run[idx]) / np.maximum(run[idx], BSLD_TAU_S))
    mean = 0.0
    for b in bsld.tolist():
        mean += b / window
    return mean


class RLSchedulerEnv(gymnasium.Env[NDArray[np.float32], np.int64]):
    """RLScheduler's job-picking environment (module docstring).

    Parameters
    ----------
    workload : RLSchedulerWorkload
        The trace, loaded with RLScheduler's rules.
    backfill : bool, default False
        RLScheduler's backfilling around the chosen job's reservation.
    sequence : int, default 256
        Jobs per episode.

    Attributes
    ----------
    first : int
        First job of the current episode.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium's own attribute

    def __init__(
        self, workload: RLSchedulerWorkload, *, backfill: bool = False, sequence: int = 256
    ) -> None:
        if sequence < 1 or len(workload) <= 2 * sequence + 1:
            msg = f"{len(workload)} jobs leave no room for episodes of {sequence} jobs"
            raise ConfigError(msg)
        self.workload = workload
        self.backfill = bool(backfill)
        self.sequence = int(sequence)
        self.observation_space = spaces.Box(
            0.0, 1.0, shape=(MAX_QUEUE_SIZE, JOB_FEATURES), dtype=np.float32
        )
        self.action_space = spaces.Discrete(MAX_QUEUE_SIZE)
        self.first = 0
        self._gen: Generator[RLSchedulerDecision, int, tuple[list[int], list[float]]] | None
        self._gen = None
        self._observer: RLSchedulerObserver | None = None
        self._mask = np.zeros(MAX_QUEUE_SIZE, dtype=np.bool_)
        self._jobs: list[int] = []
        self._obs = np.zeros((MAX_QUEUE_SIZE, JOB_FEATURES), dtype=np.float32)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[NDArray[np.float32], dict[str, Any]]:
        """Start an episode at a random job, or at ``options["start"]``."""
        super().reset(seed=seed)
        start = (options or {}).get("start")
        if start is None:
            n = len(self.workload)
            start = int(self.np_random.integers(self.sequence, n - self.sequence - 1))
        self.first = int(start)
        self._gen = rlscheduler_decisions(
            self.workload, self.first, backfill=self.backfill, window=self.sequence
        )
        self._observer = RLSchedulerObserver(self.workload, self.first, self.sequence)
        self._show(next(self._gen))
        return self._obs.copy(), {"start": self.first, "action_mask": self._mask.copy()}

    def _show(self, decision: RLSchedulerDecision) -> None:
        assert self._observer is not None
        self._obs, self._mask, self._jobs = self._observer.observe(decision)

    def step(
        self, action: np.int64 | int
    ) -> tuple[NDArray[np.float32], SupportsFloat, bool, bool, dict[str, Any]]:
        """Schedule the job in slot ``action`` (a padded slot takes slot 0; module docstring)."""
        if self._gen is None:
            raise ConfigError("call reset() before step()")
        a = int(action)
        valid = 0 <= a < len(self._jobs)
        job = self._jobs[a if valid else 0]
        try:
            self._show(self._gen.send(job))
        except StopIteration as stop:
            order, start = stop.value
            self._gen = None
            bsld = _mean_bsld(self.workload, self.first, self.sequence, order, start)
            self._mask = np.zeros(MAX_QUEUE_SIZE, dtype=np.bool_)
            self._obs = np.zeros((MAX_QUEUE_SIZE, JOB_FEATURES), dtype=np.float32)
            self._obs[:] = _PAD
            info = {
                "valid": valid,
                "bsld_mean": bsld,
                "action_mask": self._mask.copy(),
                # read by the learning-curve callback of gridtrace.sim.rl._ppo
                "metrics": {"mean_slowdown": bsld, "total_reward": -bsld},
            }
            return self._obs.copy(), -bsld, True, False, info
        info = {"valid": valid, "action_mask": self._mask.copy()}
        return self._obs.copy(), 0.0, False, False, info

    def action_masks(self) -> NDArray[np.bool_]:
        """Return the valid slots (``MaskablePPO`` calls this)."""
        if not self._mask.any():  # after the last step: any slot (the episode is over)
            return np.ones(MAX_QUEUE_SIZE, dtype=np.bool_)
        return self._mask.copy()


def run_observed_agent(
    workload: RLSchedulerWorkload,
    first: int,
    choose: Callable[[NDArray[np.float32], NDArray[np.bool_]], int],
    *,
    backfill: bool = False,
    window: int = WINDOW_JOBS,
) -> float:
    """Schedule one window with ``choose(observation, mask) → slot``; return its mean bsld."""
    observer = RLSchedulerObserver(workload, first, window)

    def pick(decision: RLSchedulerDecision) -> int:
        obs, mask, jobs = observer.observe(decision)
        slot = int(choose(obs, mask))
        return jobs[slot if 0 <= slot < len(jobs) else 0]

    return run_rlscheduler_agent(workload, first, pick, backfill=backfill, window=window)


# --------------------------------------------------------------------------- PPO


PUBLISHED_RL_BSLD: Final[dict[tuple[str, bool], float]] = {
    ("lublin_256", False): 254.67,
    ("lublin_256", True): 58.64,
    ("lublin_256_new2", False): 724.51,
    ("lublin_256_new2", True): 118.79,
}
"""RLScheduler's published RL column (mean bounded slowdown), by (trace stem, backfill)."""


def trace_stem(path: str | Path) -> str:
    """Return a trace's name without its ``.swf`` / ``.swf.gz`` suffixes."""
    name = Path(path).name
    for suffix in (".gz", ".swf"):
        name = name.removesuffix(suffix)
    return name


@dataclass(frozen=True, slots=True)
class RLSchedPPOConfig:
    """PPO's settings for the RLScheduler setup: RLScheduler's defaults where sb3 has them.

    RLScheduler (``ppo-pick-jobs.py``) collects ``trajectories`` whole episodes per epoch, then
    takes up to 80 full-batch Adam steps on the policy (learning rate 3e-4, stopped early when
    the approximate KL passes 1.5 × ``target_kl``) and 80 on the value network (learning rate
    1e-3), with γ = 1, λ = 0.97, clip 0.2, no entropy bonus, advantages normalised over the
    epoch. sb3's MaskablePPO differs in three ways, kept as they are:

    * one rollout is ``n_steps`` = ``trajectories × sequence / n_envs`` *actions* per
      environment, not whole episodes: an episode cut by the rollout's end is bootstrapped by
      the value network (an episode has at most ``sequence`` actions, fewer with backfilling);
    * one Adam optimiser and one learning rate for both networks (the two share no weights, so
      Adam's per-weight scaling makes this close to two optimisers with one learning rate; the
      value network then learns at 3e-4, not 1e-3);
    * the early stop on KL (sb3's ``target_kl``, also at 1.5 × target) stops the value
      network's epochs too, where RLScheduler always runs its 80.

    Parameters
    ----------
    trajectories : int, default 100
        Episodes per update (RLScheduler's ``--trajs``).
    sequence : int, default 256
        Jobs per episode (``JOB_SEQUENCE_SIZE``).
    n_envs : int, default 1
        Environments (RLScheduler runs one per MPI process; its default is one).
    n_epochs : int, default 80
        Passes over a rollout (``train_pi_iters``).
    batch_size : int, optional
        Minibatch; default the whole rollout (RLScheduler's full-batch steps).
    learning_rate : float, default 3e-4
    clip_range : float, default 0.2
    gamma : float, default 1.0
    gae_lambda : float, default 0.97
    target_kl : float, default 0.01
    ent_coef : float, default 0.0
    vf_coef : float, default 0.5
    max_grad_norm : float, default 1e10
        RLScheduler does not clip gradients; sb3 always does, so the bound is out of reach.
    total_timesteps : int, default 25600
        Budget in actions; the default is one RLScheduler epoch (RLScheduler's own run is 4000
        epochs by default).
    backfill : bool, default False
    torch_threads : int, default 1
    device : str, default "auto"
    """

    trajectories: int = 100
    sequence: int = JOB_SEQUENCE_SIZE
    n_envs: int = 1
    n_epochs: int = 80
    batch_size: int | None = None
    learning_rate: float = 3e-4
    clip_range: float = 0.2
    gamma: float = 1.0
    gae_lambda: float = 0.97
    target_kl: float = 0.01
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 1e10
    total_timesteps: int = 100 * JOB_SEQUENCE_SIZE
    backfill: bool = False
    torch_threads: int = 1
    device: str = "auto"

    def __post_init__(self) -> None:
        for name in ("trajectories", "sequence", "n_envs", "n_epochs", "total_timesteps"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.batch_size is not None and self.batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.torch_threads < 0:
            raise ConfigError(f"torch_threads must be >= 0, got {self.torch_threads}")

    @property
    def n_steps(self) -> int:
        """Actions per environment per rollout."""
        return max(1, self.trajectories * self.sequence // self.n_envs)

    @property
    def minibatch(self) -> int:
        """The minibatch size used (the whole rollout by default)."""
        return self.batch_size if self.batch_size is not None else self.n_steps * self.n_envs

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class RLSchedPPORun:
    """A trained RLScheduler-setup agent and what made it.

    Attributes
    ----------
    model : sb3_contrib.MaskablePPO
    config : RLSchedPPOConfig
    trace : str
        Name of the training trace (its file name without ``.swf[.gz]``).
    seed : int
    learning_curve : list of dict
        One row per update: ``timesteps``, ``episodes`` finished in it and their mean bounded
        slowdown ``mean_slowdown`` and ``mean_reward`` (NaN when none finished).
    train_seconds : float
    """

    model: Any
    config: RLSchedPPOConfig
    trace: str
    seed: int
    learning_curve: list[dict[str, float]]
    train_seconds: float


def _make_env(workload: RLSchedulerWorkload, backfill: bool, sequence: int) -> RLSchedulerEnv:
    """Build one environment (top-level, so that a factory pickles)."""
    return RLSchedulerEnv(workload, backfill=backfill, sequence=sequence)


def train_rlsched_ppo(
    workload: RLSchedulerWorkload,
    config: RLSchedPPOConfig | None = None,
    *,
    seed: int = 0,
    trace: str = "trace",
) -> RLSchedPPORun:
    """Train MaskablePPO with RLScheduler's kernel policy on a trace.

    Parameters
    ----------
    workload : RLSchedulerWorkload
        The training trace (episodes start at random jobs of it).
    config : RLSchedPPOConfig, optional
        RLScheduler's hyper-parameters by default (one epoch of budget).
    seed : int, default 0
        sb3's seed (network initialisation, action sampling, environment i seeded ``seed + i``);
        the global generators are restored afterwards, as in :func:`train_ppo`.
    trace : str
        The trace's name, kept with the agent.

    Returns
    -------
    RLSchedPPORun

    Raises
    ------
    ConfigError
        If the ``ppo`` extra is missing or the trace is too short for an episode.
    """
    from gridtrace.sim.rl._ppo import fit_maskable_ppo, require_ppo

    require_ppo()
    import torch
    from stable_baselines3.common.vec_env import DummyVecEnv

    from gridtrace.sim.rl._rlsched_policy import RLSchedulerKernelPolicy

    cfg = config if config is not None else RLSchedPPOConfig()
    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    RLSchedulerEnv(workload, sequence=cfg.sequence)  # checks the trace's length early
    factory = partial(_make_env, workload, cfg.backfill, cfg.sequence)
    vec = DummyVecEnv([factory] * cfg.n_envs)
    model, curve, seconds = fit_maskable_ppo(
        RLSchedulerKernelPolicy,
        vec,
        cfg.total_timesteps,
        "PPO (RLScheduler setup)",
        learning_rate=cfg.learning_rate,
        n_steps=cfg.n_steps,
        batch_size=cfg.minibatch,
        n_epochs=cfg.n_epochs,
        gamma=cfg.gamma,
        gae_lambda=cfg.gae_lambda,
        clip_range=cfg.clip_range,
        ent_coef=cfg.ent_coef,
        vf_coef=cfg.vf_coef,
        max_grad_norm=cfg.max_grad_norm,
        target_kl=cfg.target_kl,
        seed=seed,
        device=cfg.device,
    )
    return RLSchedPPORun(model, cfg, trace, seed, curve, seconds)


def save_rlsched_ppo(run: RLSchedPPORun, folder: str | Path) -> Path:
    """Save the agent in sb3's own format with its config (``config.json``), atomically."""
    from gridtrace.sim.rl._ppo import curve_to_json, save_model

    record = {
        "algorithm": "sb3_contrib.MaskablePPO",
        "setup": "rlscheduler",
        "policy": "gridtrace.sim.rl.RLSchedulerKernelPolicy",
        "trace": run.trace,
        "ppo": run.config.to_dict(),
        "seed": run.seed,
        "timesteps": int(run.model.num_timesteps),
        "train_seconds": run.train_seconds,
        "learning_curve": curve_to_json(run.learning_curve),
    }
    return save_model(run.model, folder, record)


def load_rlsched_ppo(folder: str | Path, *, device: str = "auto") -> RLSchedPPORun:
    """Load what :func:`save_rlsched_ppo` wrote.

    Raises
    ------
    ConfigError
        If the folder holds no saved policy, or one of another setup.
    """
    from gridtrace.sim.rl._ppo import curve_from_json, load_model, read_record

    record = read_record(folder)
    if record["setup"] != "rlscheduler":
        msg = f"{folder} holds a PPO policy of the {record['setup']!r} setup, not 'rlscheduler'"
        raise ConfigError(msg)
    cfg = RLSchedPPOConfig(**record["ppo"])
    model = load_model(folder, device=device, torch_threads=cfg.torch_threads)
    return RLSchedPPORun(
        model,
        cfg,
        str(record.get("trace", "trace")),
        int(record["seed"]),
        curve_from_json(record.get("learning_curve", [])),
        float(record.get("train_seconds", math.nan)),
    )


def model_chooser(
    model: Any, *, deterministic: bool = True
) -> Callable[[NDArray[np.float32], NDArray[np.bool_]], int]:
    """Wrap a trained model as ``choose(observation, mask) → slot`` (most likely valid slot)."""

    def choose(obs: NDArray[np.float32], mask: NDArray[np.bool_]) -> int:
        action, _ = model.predict(obs, action_masks=mask, deterministic=deterministic)
        return int(action)

    return choose


def evaluate_rlsched_ppo(
    run: RLSchedPPORun,
    workload: RLSchedulerWorkload,
    *,
    trace: str = "trace",
    backfill: bool | None = None,
    seed: int = 1,
    windows: int = 10,
    window: int = WINDOW_JOBS,
    job_slice: int = 0,
) -> dict[str, Any]:
    """Evaluate the agent beside the heuristics on RLScheduler's evaluation windows.

    The windows are those of :func:`~gridtrace.sim.rlscheduler_table` (same seed, size and
    job slice), so the heuristic columns are the table's. Each policy's mean bounded slowdown
    over the windows comes with a 95 % interval (expanded percentile bootstrap over the
    windows, :func:`gridtrace.sim._intervals.mean_interval`).

    Parameters
    ----------
    run : RLSchedPPORun
    workload : RLSchedulerWorkload
        The evaluation trace (the training trace or another: generalisation).
    trace : str
        Its name; ``lublin_256`` and ``lublin_256_new2`` get RLScheduler's published RL value.
    backfill : bool, optional
        Default the training setting.
    seed, windows, window, job_slice
        As :func:`~gridtrace.sim.rlscheduler_table`.

    Returns
    -------
    dict
        ``trace``, ``trained_on``, ``backfill``, ``window_starts``, ``published_rl`` (or
        None) and ``policies``: one dict per policy (``PPO`` first, then the table's columns)
        with ``label``, per-window ``bsld``, ``mean``, ``low``, ``high``.
    """
    from gridtrace.sim._intervals import mean_interval

    bf = run.config.backfill if backfill is None else bool(backfill)
    starts = rlscheduler_window_starts(
        len(workload), seed=seed, windows=windows, window=window, job_slice=job_slice
    )
    choose = model_chooser(run.model)
    ppo = [run_observed_agent(workload, int(s), choose, backfill=bf, window=window) for s in starts]
    table = rlscheduler_table(
        workload, seed=seed, windows=windows, window=window, job_slice=job_slice, backfill=(bf,)
    )
    columns: list[tuple[str, list[float]]] = [("PPO", ppo)]
    columns += [(str(r["label"]), list(r["bsld"])) for r in table.to_pylist()]
    policies = []
    for label, values in columns:
        iv = mean_interval(values, bounds=(1.0, math.inf))
        policies.append(
            {"label": label, "bsld": values, "mean": iv.mean, "low": iv.low, "high": iv.high}
        )
    return {
        "trace": trace,
        "trained_on": run.trace,
        "backfill": bf,
        "window": window,
        "window_starts": starts.tolist(),
        "published_rl": PUBLISHED_RL_BSLD.get((trace, bf)),
        "policies": policies,
    }
