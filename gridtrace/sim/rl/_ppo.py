"""PPO on the multi-resource setup with stable-baselines3 (the ``ppo`` extra; issue 15).

No PPO is written here: training is sb3-contrib's ``MaskablePPO`` (stable-baselines3's PPO with
invalid actions masked out of the policy's distribution, read from
:meth:`~gridtrace.sim.rl._multires_env.MultiResourceEnv.action_masks`) on vectorised
:class:`~gridtrace.sim.rl._multires_env.MultiResourceEnv`. torch and stable-baselines3 are
imported inside the functions, never when :mod:`gridtrace` or this module is imported.

Hyper-parameters (:class:`PPOConfig`)
-------------------------------------
The paper's: 24 actors (vectorised environments) × 64 steps per update, 4 epochs, learning rate
1e-3, clip 0.1, entropy coefficient 0.01, GAE with γ = 1 and λ = 0.95, separate policy and value
networks of one hidden layer of 20 ReLU units (``net_arch=dict(pi=[20], vf=[20])``). Where the
paper is silent we chose, and every choice is a field: minibatches of 384 (4 per update, the
OpenAI-baselines default), the value loss weight and gradient clipping at sb3's defaults (0.5,
0.5), the training budget ``total_timesteps`` (counted in actions of all actors together),
the environment's visible slots, backlog and episode length (:class:`MultiResourceConfig`).

Seeds
-----
``seed`` goes to sb3 (``MaskablePPO(seed=...)``), which seeds torch's global generator (network
initialisation and action sampling), the action space, and environment i with ``seed + i`` at
its first reset (every later episode draws its jobs from that environment's own generator).
sb3 also seeds Python's ``random`` and NumPy's global generator; the project never uses those,
and this module restores both after sb3 has touched them, so a caller's global state is
unchanged. Evaluation sequences come from their own seed (:func:`evaluate_ppo`), a different
stream from the training environments'. Runs are repeatable on one machine and library version;
torch does not promise bit-identical results across versions or devices.
"""

from __future__ import annotations

import io
import json
import math
import random
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from gridtrace import _atomic
from gridtrace._log import library_logger
from gridtrace.errors import ConfigError
from gridtrace.sim.rl._multires import (
    MULTIRES_POLICIES,
    MultiResourceCluster,
    MultiResourceConfig,
    MultiResPolicy,
    evaluate_multires,
    multires_sequences,
    summarise_multires,
)

__all__ = [
    "PPO_INSTALL_HINT",
    "PPOConfig",
    "PPORun",
    "evaluate_ppo",
    "load_ppo",
    "ppo_policy",
    "require_ppo",
    "save_ppo",
    "train_ppo",
]

if TYPE_CHECKING:
    from collections.abc import Callable

    from gridtrace.sim.rl._multires_env import MultiResourceEnv

logger = library_logger(__name__)

PPO_INSTALL_HINT = "pip install 'gridtrace[ppo]'"
"""How to install stable-baselines3, sb3-contrib and torch."""

POLICY_FILE = "policy.zip"
CONFIG_FILE = "config.json"


def require_ppo() -> None:
    """Import sb3-contrib (and so stable-baselines3 and torch), or raise a ConfigError.

    Raises
    ------
    ConfigError
        If they cannot be imported; the message says how to install them.
    """
    try:
        import sb3_contrib  # noqa: F401
        import stable_baselines3  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            f"PPO needs stable-baselines3 and sb3-contrib ({exc}): {PPO_INSTALL_HINT}"
        ) from exc


@dataclass(frozen=True, slots=True)
class PPOConfig:
    """PPO's settings (the paper's, plus the choices it leaves open; module docstring).

    Parameters
    ----------
    n_envs : int, default 24
        Actors (vectorised environments).
    n_steps : int, default 64
        Steps per actor per update.
    n_epochs : int, default 4
    learning_rate : float, default 1e-3
    clip_range : float, default 0.1
    ent_coef : float, default 0.01
    gamma : float, default 1.0
    gae_lambda : float, default 0.95
    hidden : int, default 20
        ReLU units of the one hidden layer of the policy and of the (separate) value network.
    batch_size : int, optional
        Minibatch size; default a quarter of ``n_envs · n_steps``.
    total_timesteps : int, default 307200
        Training budget in actions of all actors (200 updates of 24 × 64).
    vec_env : {"dummy", "subproc"}, default "dummy"
        sb3's ``DummyVecEnv`` (one process) or ``SubprocVecEnv`` (one process per actor). On
        2 cores the one-process form was faster (BENCHMARKS.md).
    torch_threads : int, default 1
        ``torch.set_num_threads`` for training (the networks are tiny; more threads only add
        overhead on a shared machine). 0 leaves torch's default.
    device : str, default "auto"
        torch device; "auto" uses a GPU when one is present.
    """

    n_envs: int = 24
    n_steps: int = 64
    n_epochs: int = 4
    learning_rate: float = 1e-3
    clip_range: float = 0.1
    ent_coef: float = 0.01
    gamma: float = 1.0
    gae_lambda: float = 0.95
    hidden: int = 20
    batch_size: int | None = None
    total_timesteps: int = 24 * 64 * 200
    vec_env: Literal["dummy", "subproc"] = "dummy"
    torch_threads: int = 1
    device: str = "auto"

    def __post_init__(self) -> None:
        for name in ("n_envs", "n_steps", "n_epochs", "hidden", "total_timesteps"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.vec_env not in ("dummy", "subproc"):
            raise ConfigError(f"vec_env must be 'dummy' or 'subproc', got {self.vec_env!r}")
        if self.batch_size is not None and self.batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.torch_threads < 0:
            raise ConfigError(f"torch_threads must be >= 0, got {self.torch_threads}")

    @property
    def minibatch(self) -> int:
        """The minibatch size used."""
        if self.batch_size is not None:
            return self.batch_size
        return max(1, self.n_envs * self.n_steps // 4)

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class PPORun:
    """A trained agent and what made it.

    Attributes
    ----------
    model : sb3_contrib.MaskablePPO
    env_config : MultiResourceConfig
    ppo_config : PPOConfig
    seed : int
    learning_curve : list of dict
        One row per update: ``timesteps``, ``episodes`` finished in it, their
        ``mean_slowdown`` and ``mean_reward`` (NaN when none finished).
    train_seconds : float
    """

    model: Any
    env_config: MultiResourceConfig
    ppo_config: PPOConfig
    seed: int
    learning_curve: list[dict[str, float]]
    train_seconds: float


@contextmanager
def _global_rngs_restored() -> Iterator[None]:
    """Undo sb3's seeding of Python's and NumPy's global generators (module docstring)."""
    py_state = random.getstate()
    np_state = np.random.get_state()  # noqa: NPY002 - saved only to be restored
    try:
        yield
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)  # noqa: NPY002


def _make_env(config: dict[str, Any]) -> MultiResourceEnv:
    """Build one environment (top-level, so that ``SubprocVecEnv`` can pickle the factory)."""
    from gridtrace.sim.rl._multires_env import MultiResourceEnv

    return MultiResourceEnv(MultiResourceConfig.from_dict(config))


def make_vec_env(env_config: MultiResourceConfig, n_envs: int, kind: str = "dummy") -> Any:
    """Return ``n_envs`` environments in sb3's ``DummyVecEnv`` or ``SubprocVecEnv``."""
    require_ppo()
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    factories: list[Callable[[], Any]] = [
        partial(_make_env, env_config.to_dict()) for _ in range(n_envs)
    ]
    if kind == "subproc":
        return SubprocVecEnv(factories)
    return DummyVecEnv(factories)


def _curve_callback(curve: list[dict[str, float]]) -> Any:
    from stable_baselines3.common.callbacks import BaseCallback

    class _Curve(BaseCallback):
        """Collect the finished episodes' metrics per update."""

        def __init__(self) -> None:
            super().__init__()
            self._slowdowns: list[float] = []
            self._rewards: list[float] = []

        def _on_step(self) -> bool:
            for info in self.locals.get("infos", ()):
                m = info.get("metrics")
                if m is not None:
                    self._slowdowns.append(float(m["mean_slowdown"]))
                    self._rewards.append(float(m["total_reward"]))
            return True

        def _on_rollout_end(self) -> None:
            n = len(self._slowdowns)
            curve.append(
                {
                    "timesteps": float(self.num_timesteps),
                    "episodes": float(n),
                    "mean_slowdown": float(np.mean(self._slowdowns)) if n else math.nan,
                    "mean_reward": float(np.mean(self._rewards)) if n else math.nan,
                }
            )
            self._slowdowns.clear()
            self._rewards.clear()

    return _Curve()


def train_ppo(
    env_config: MultiResourceConfig | None = None,
    ppo_config: PPOConfig | None = None,
    *,
    seed: int = 0,
) -> PPORun:
    """Train MaskablePPO on the multi-resource setup.

    Parameters
    ----------
    env_config : MultiResourceConfig, optional
        The setup (default 100 % load).
    ppo_config : PPOConfig, optional
        The paper's hyper-parameters by default.
    seed : int, default 0
        sb3's seed (module docstring).

    Returns
    -------
    PPORun

    Raises
    ------
    ConfigError
        If the ``ppo`` extra is missing.
    """
    require_ppo()
    import torch

    env_config = env_config if env_config is not None else MultiResourceConfig()
    cfg = ppo_config if ppo_config is not None else PPOConfig()
    given: tuple[object, object] = (env_config, cfg)  # checked: a swap is an easy mistake
    if not isinstance(given[0], MultiResourceConfig) or not isinstance(given[1], PPOConfig):
        raise ConfigError("train_ppo takes a MultiResourceConfig, then a PPOConfig")
    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    vec = make_vec_env(env_config, cfg.n_envs, cfg.vec_env)
    model, curve, seconds = fit_maskable_ppo(
        "MlpPolicy",
        vec,
        cfg.total_timesteps,
        "PPO",
        learning_rate=cfg.learning_rate,
        n_steps=cfg.n_steps,
        batch_size=cfg.minibatch,
        n_epochs=cfg.n_epochs,
        gamma=cfg.gamma,
        gae_lambda=cfg.gae_lambda,
        clip_range=cfg.clip_range,
        ent_coef=cfg.ent_coef,
        policy_kwargs={
            "net_arch": {"pi": [cfg.hidden], "vf": [cfg.hidden]},
            "activation_fn": torch.nn.ReLU,
        },
        seed=seed,
        device=cfg.device,
    )
    return PPORun(model, env_config, cfg, seed, curve, seconds)


def fit_maskable_ppo(
    policy: Any, vec: Any, total_timesteps: int, label: str, **options: Any
) -> tuple[Any, list[dict[str, float]], float]:
    """Build a MaskablePPO on ``vec``, train it and close ``vec``; return (model, curve, seconds).

    Both the construction and the training run with the global generators restored afterwards
    (sb3 seeds them); ``curve`` holds one row per update (:func:`_curve_callback`), and the
    rate is logged under ``label``. ``options`` go to ``MaskablePPO``.
    """
    from sb3_contrib import MaskablePPO

    curve: list[dict[str, float]] = []
    try:
        with _global_rngs_restored():
            model = MaskablePPO(policy, vec, verbose=0, **options)
        t0 = time.perf_counter()
        with _global_rngs_restored():
            model.learn(total_timesteps=total_timesteps, callback=_curve_callback(curve))
        seconds = time.perf_counter() - t0
    finally:
        vec.close()
    logger.info(
        "%s: %d timesteps in %.1f s (%.0f steps/s), %d updates",
        label,
        model.num_timesteps,
        seconds,
        model.num_timesteps / max(seconds, 1e-9),
        len(curve),
    )
    return model, curve, seconds


def save_ppo(run: PPORun, folder: str | Path) -> Path:
    """Save the policy in sb3's own format and the config that made it, atomically.

    Writes ``folder/policy.zip`` (``MaskablePPO.save``) and ``folder/config.json`` (the
    setup, the hyper-parameters, the seed, the library versions, the training time and the
    learning curve). Returns the folder.
    """
    record = {
        "algorithm": "sb3_contrib.MaskablePPO",
        "setup": "deeprm",
        "multires": run.env_config.to_dict(),
        "ppo": run.ppo_config.to_dict(),
        "seed": run.seed,
        "timesteps": int(run.model.num_timesteps),
        "train_seconds": run.train_seconds,
        "learning_curve": curve_to_json(run.learning_curve),
    }
    return save_model(run.model, folder, record)


def curve_to_json(curve: Sequence[Mapping[str, float]]) -> list[dict[str, float | None]]:
    """Return a learning curve with NaN written as None (JSON null)."""
    return [{k: (None if math.isnan(v) else v) for k, v in row.items()} for row in curve]


def curve_from_json(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, float]]:
    """Undo :func:`curve_to_json`."""
    return [{k: (math.nan if v is None else float(v)) for k, v in row.items()} for row in rows]


def save_model(model: Any, folder: str | Path, record: Mapping[str, Any]) -> Path:
    """Write ``model`` in sb3's format and ``record`` plus library versions as JSON, atomically.

    The shared part of :func:`save_ppo` and the RLScheduler setup's save; returns the folder.
    """
    import sb3_contrib
    import stable_baselines3
    import torch

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    model.save(buffer)
    _atomic.write_bytes(out / POLICY_FILE, buffer.getvalue())
    full = dict(record)
    full["versions"] = {
        "stable_baselines3": stable_baselines3.__version__,
        "sb3_contrib": sb3_contrib.__version__,
        "torch": torch.__version__,
    }
    _atomic.write_text(out / CONFIG_FILE, json.dumps(full, indent=2) + "\n")
    return out


def read_record(folder: str | Path) -> dict[str, Any]:
    """Return the ``config.json`` of a saved policy (``setup`` defaults to "deeprm").

    Raises
    ------
    ConfigError
        If the folder lacks ``policy.zip`` or ``config.json``.
    """
    path = Path(folder)
    if not (path / POLICY_FILE).is_file() or not (path / CONFIG_FILE).is_file():
        raise ConfigError(f"{path} holds no saved PPO policy ({POLICY_FILE} and {CONFIG_FILE})")
    record: dict[str, Any] = json.loads((path / CONFIG_FILE).read_text(encoding="utf-8"))
    record.setdefault("setup", "deeprm")
    return record


def load_model(folder: str | Path, *, device: str = "auto", torch_threads: int = 1) -> Any:
    """Load the ``MaskablePPO`` of ``folder/policy.zip`` (the shared part of the loaders)."""
    require_ppo()
    from sb3_contrib import MaskablePPO

    if torch_threads:
        import torch

        # one forward pass of a small network: extra threads only wait on each other
        torch.set_num_threads(torch_threads)
    with _global_rngs_restored():
        return MaskablePPO.load(Path(folder) / POLICY_FILE, device=device)


def load_ppo(folder: str | Path, *, device: str = "auto") -> PPORun:
    """Load what :func:`save_ppo` wrote.

    Raises
    ------
    ConfigError
        If the folder lacks ``policy.zip`` or ``config.json``, holds another setup's policy,
        or the ``ppo`` extra is missing.
    """
    require_ppo()
    record = read_record(folder)
    if record["setup"] != "deeprm":
        msg = f"{folder} holds a PPO policy of the {record['setup']!r} setup, not 'deeprm'"
        raise ConfigError(msg)
    ppo_config = PPOConfig(**record["ppo"])
    model = load_model(folder, device=device, torch_threads=ppo_config.torch_threads)
    return PPORun(
        model,
        MultiResourceConfig.from_dict(record["multires"]),
        ppo_config,
        int(record["seed"]),
        curve_from_json(record.get("learning_curve", [])),
        float(record.get("train_seconds", math.nan)),
    )


def ppo_policy(model: Any, *, deterministic: bool = True) -> MultiResPolicy:
    """Wrap a trained model as a policy of :func:`~gridtrace.sim.rl.evaluate_multires`.

    The model sees the cluster's image and its action mask; ``deterministic`` takes the most
    likely valid action (sampling would need torch's global generator).
    """

    def policy(c: MultiResourceCluster) -> int:
        action, _ = model.predict(
            c.observation(), action_masks=c.action_masks(), deterministic=deterministic
        )
        return int(action)

    return policy


def evaluate_ppo(
    run: PPORun,
    *,
    loads: Sequence[float] | None = None,
    sequences: int = 10,
    seed: int = 1,
    baselines: Sequence[str] = tuple(MULTIRES_POLICIES),
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Evaluate the agent and the baselines on the same fresh job sequences.

    Parameters
    ----------
    run : PPORun
    loads : sequence of float, optional
        Loads to evaluate at (the setup's other fields kept); default the training load.
    sequences : int, default 10
        Job sequences per load, drawn from ``seed`` (a stream the training never used).
    seed : int, default 1
        Root seed of the evaluation sequences (and of the random baseline).
    baselines : sequence of str
        Names in :data:`MULTIRES_POLICIES`.

    Returns
    -------
    rows, summary
        Per (policy, load, sequence) rows of :func:`evaluate_multires`, and the per
        (load, policy) summary of :func:`summarise_multires` with 95 % intervals and the
        slowdown relative to SJF.
    """
    unknown = [b for b in baselines if b not in MULTIRES_POLICIES]
    if unknown:
        raise ConfigError(f"unknown baselines {unknown}; known: {', '.join(MULTIRES_POLICIES)}")
    if sequences < 1:
        raise ConfigError(f"sequences must be >= 1, got {sequences}")
    load_list = list(loads) if loads else [run.env_config.workload.load]
    root = np.random.SeedSequence([seed, 15])  # 15: a stream of its own (issue 15)
    rows: list[dict[str, Any]] = []
    for load, child in zip(load_list, root.spawn(len(load_list)), strict=True):
        cfg = run.env_config.with_load(load)
        seq_seed, policy_seed = child.spawn(2)
        jobs = multires_sequences(cfg, sequences, rng=seq_seed)
        policies: dict[str, MultiResPolicy] = {"ppo": ppo_policy(run.model)}
        for name in baselines:
            policies[name] = MULTIRES_POLICIES[name](policy_seed)
        rows.extend(evaluate_multires(cfg, jobs, policies))
    return rows, summarise_multires(rows)


def summary_json(rows: Sequence[Mapping[str, Any]], summary: Sequence[Mapping[str, Any]]) -> str:
    """Return the evaluation as JSON text (NaN written as null)."""

    def clean(v: Any) -> Any:
        return None if isinstance(v, float) and not math.isfinite(v) else v

    data = {
        "published_slowdown_vs_sjf": {"1.0": -0.45, "1.9": -0.54},
        "summary": [{k: clean(v) for k, v in r.items()} for r in summary],
        "rows": [{k: clean(v) for k, v in r.items()} for r in rows],
    }
    return json.dumps(data, indent=2) + "\n"
