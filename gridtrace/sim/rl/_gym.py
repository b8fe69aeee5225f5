"""Gymnasium environments of the scheduling and the elastic provisioning MDPs (the ``rl`` extra).

gymnasium is optional: this module never imports it at import time, so ``gridtrace.sim.rl``
works without it. :func:`make_scheduling_env` and :func:`make_provisioning_env` import it (and the
environments' module, :mod:`gridtrace.sim.rl._gym_envs`) when called, and raise a
:class:`~gridtrace.errors.ConfigError` saying ``pip install 'gridtrace[rl]'`` when it is missing.

* :class:`~gridtrace.sim.rl._gym_envs.SchedulingEnv`: one step per scheduling decision; the agent
  picks one of the oldest ``max_queue`` waiting jobs.
* :class:`~gridtrace.sim.rl._gym_envs.ProvisioningEnv`: one step per provisioning decision (every
  15 min of simulated time); the agent picks the pool size, a fixed heuristic schedules.

Examples
--------
>>> from gridtrace.models import generate_preset_trace
>>> env = make_scheduling_env(generate_preset_trace("MM50-20", rng=1, size=200))
>>> obs, info = env.reset(seed=0)
>>> obs.shape == env.observation_space.shape, info["decisions"]
(True, 0)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gridtrace.errors import ConfigError

if TYPE_CHECKING:
    from gridtrace.sim.rl._gym_envs import ProvisioningEnv, SchedulingEnv, TraceSource

__all__ = ["INSTALL_HINT", "make_provisioning_env", "make_scheduling_env", "require_gymnasium"]

INSTALL_HINT = "pip install 'gridtrace[rl]'"
"""How to install the optional dependency of the environments."""


def require_gymnasium() -> None:
    """Import gymnasium, or raise a ConfigError saying how to install it.

    Raises
    ------
    ConfigError
        If gymnasium cannot be imported.
    """
    try:
        import gymnasium  # noqa: F401
    except ImportError as exc:
        msg = f"the Gymnasium environments need gymnasium ({exc}): {INSTALL_HINT}"
        raise ConfigError(msg) from exc


def make_scheduling_env(trace: TraceSource, **options: Any) -> SchedulingEnv:
    """Return a :class:`~gridtrace.sim.rl._gym_envs.SchedulingEnv` (needs gymnasium).

    Parameters
    ----------
    trace : pyarrow.Table or callable
        A trace table, or a callable drawing one from a numpy Generator (a fresh trace every
        episode).
    **options
        The keyword arguments of ``SchedulingEnv`` (``cores``, ``vo_shares``, ``reward``,
        ``estimator``, ``max_queue``, ...).

    Raises
    ------
    ConfigError
        If gymnasium is missing, or an option is bad.
    """
    require_gymnasium()
    from gridtrace.sim.rl._gym_envs import SchedulingEnv

    return SchedulingEnv(trace, **options)


def make_provisioning_env(trace: TraceSource, **options: Any) -> ProvisioningEnv:
    """Return a :class:`~gridtrace.sim.rl._gym_envs.ProvisioningEnv` (needs gymnasium).

    Parameters
    ----------
    trace : pyarrow.Table or callable
        A trace table, or a callable drawing one from a numpy Generator.
    **options
        The keyword arguments of ``ProvisioningEnv`` (``cores``, ``floor``, ``ceiling``,
        ``levels``, ``interval_s``, ``lambda_e``, ``scheduler``, ...).

    Raises
    ------
    ConfigError
        If gymnasium is missing, or an option is bad.
    """
    require_gymnasium()
    from gridtrace.sim.rl._gym_envs import ProvisioningEnv

    return ProvisioningEnv(trace, **options)
