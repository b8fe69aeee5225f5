"""The multi-resource setup as a Gymnasium environment (imports gymnasium: the ``rl`` extra).

:class:`MultiResourceEnv` wraps :class:`~gridtrace.sim.rl._multires.MultiResourceCluster`; the
semantics (actions, masking, reward, observation) are in :mod:`gridtrace.sim.rl._multires`.
A step is one action: a start (reward 0, time stands still) or a wait (one step elapses, reward
−Σ 1/p_j). Every episode draws a fresh job sequence from the environment's ``np_random`` (seeded
by ``reset(seed=...)``), unless ``reset(options={"jobs": ...})`` gives one.
:meth:`MultiResourceEnv.action_masks` is what sb3-contrib's ``MaskablePPO`` reads.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium
import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

from gridtrace.errors import ConfigError
from gridtrace.models import DeepRMJobs, deeprm_jobs
from gridtrace.sim.rl._multires import MultiResourceCluster, MultiResourceConfig

__all__ = ["MultiResourceEnv"]


class MultiResourceEnv(gymnasium.Env[NDArray[np.float32], np.int64]):
    """DeepRM's multi-resource cluster as a Gymnasium environment.

    Parameters
    ----------
    config : MultiResourceConfig, optional
        The setup (default: DeepRM's defaults at 100 % load).

    Attributes
    ----------
    cluster : MultiResourceCluster
        The simulator (read it for the jobs' start and end steps after an episode).
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium's own attribute

    def __init__(self, config: MultiResourceConfig | None = None) -> None:
        self.config = config if config is not None else MultiResourceConfig()
        rows, width = self.config.image_shape
        self.observation_space = spaces.Box(0.0, 1.0, shape=(rows, width), dtype=np.float32)
        self.action_space = spaces.Discrete(self.config.n_actions)
        self.cluster = MultiResourceCluster(self.config)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[NDArray[np.float32], dict[str, Any]]:
        """Start an episode on a fresh sequence (or ``options["jobs"]``, a ``DeepRMJobs``)."""
        super().reset(seed=seed)
        jobs = (options or {}).get("jobs")
        if jobs is None:
            jobs = deeprm_jobs(
                self.config.workload, steps=self.config.episode_steps, rng=self.np_random
            )
        elif not isinstance(jobs, DeepRMJobs):
            raise ConfigError(f"options['jobs'] must be DeepRMJobs, got {type(jobs).__name__}")
        self.cluster.reset(jobs)
        return self.cluster.observation(), self._info()

    def step(
        self, action: np.int64 | int
    ) -> tuple[NDArray[np.float32], SupportsFloat, bool, bool, dict[str, Any]]:
        """Carry out one action (an invalid one is a wait; ``info["valid"]`` says which)."""
        reward, valid = self.cluster.step(int(action))
        c = self.cluster
        info = self._info()
        info["valid"] = valid
        if c.done or c.truncated:
            info["metrics"] = c.metrics().to_dict()
        return c.observation(), float(reward), c.done, c.truncated, info

    def action_masks(self) -> NDArray[np.bool_]:
        """Return the valid actions now (``MaskablePPO`` calls this)."""
        return self.cluster.action_masks()

    def _info(self) -> dict[str, Any]:
        c = self.cluster
        return {"time": c.time, "action_mask": c.action_masks(), "jobs": c.n_jobs}
