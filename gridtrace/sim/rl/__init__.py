"""The RL supervisor: SARSA scheduling and elastic provisioning over MLP or ESN Q-functions.

The scheduling MDP (:class:`SchedulingFeatures`, :class:`SarsaScheduler`) elects one waiting job
per decision; the provisioning MDP (:class:`ElasticProvisioner`) chooses the pool size every
15 minutes. Both learn by SARSA with batch refits (:func:`sarsa_refit`) of a Q approximator
(:class:`MLPQ`, :class:`ESNQ`); the ESN can also be fitted offline by fitted-Q iteration
(:func:`fitted_q_iteration`). The same MDPs are Gymnasium environments
(:func:`make_scheduling_env`, :func:`make_provisioning_env`; optional ``rl`` extra). Both agents
are ordinary :class:`~gridtrace.sim.Policy` /
:class:`~gridtrace.sim.ProvisioningPolicy` objects: pass them to :func:`gridtrace.sim.simulate`.
:func:`run_contention` runs the contention experiments of issue 14 (a segment on its own pool at
a set offered load; train / validation / test by time; information-matched baselines; RL's
margin to the best of them). :func:`run_experiment` runs the research's experiments against
the baselines (training and evaluation on disjoint draws or time ranges, frozen and continuing
modes, 95 % intervals).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gridtrace.sim.rl._contention import (
    CONTENTION_BASELINES,
    CONTENTION_METRICS,
    CONTENTION_SCHEMA,
    ContentionConfig,
    Regime,
    contention_regime,
    run_contention,
    time_splits,
)
from gridtrace.sim.rl._elastic import ElasticProvisioner, ProvisioningFeatures, interval_reward
from gridtrace.sim.rl._experiments import (
    BASELINES,
    PUBLISHED,
    RUN_COLUMNS,
    SUMMARY_SCHEMA,
    AgentSeeds,
    ExperimentConfig,
    ExperimentResult,
    make_elastic_provisioner,
    make_rl_scheduler,
    run_experiment,
    seed_interval,
    time_split,
)
from gridtrace.sim.rl._features import SchedulingFeatures
from gridtrace.sim.rl._fitted_q import FittedQResult, fitted_q_iteration
from gridtrace.sim.rl._gym import make_provisioning_env, make_scheduling_env
from gridtrace.sim.rl._multires import (
    MULTIRES_METRICS,
    MULTIRES_POLICIES,
    EpisodeMetrics,
    MultiResourceCluster,
    MultiResourceConfig,
    MultiResPolicy,
    evaluate_multires,
    multires_sequences,
    run_episode,
    summarise_multires,
)
from gridtrace.sim.rl._ppo import (
    PPOConfig,
    PPORun,
    evaluate_ppo,
    load_ppo,
    ppo_policy,
    save_ppo,
    train_ppo,
)
from gridtrace.sim.rl._qfunctions import ESNQ, MLPQ, QFunction
from gridtrace.sim.rl._rewards import (
    IntervalReward,
    QueueSlowdownReward,
    ResponsivenessFairnessReward,
    Reward,
    TimeUtilityReward,
)
from gridtrace.sim.rl._rlsched_env import (
    RLSchedulerDecision,
    rlscheduler_decisions,
    run_rlscheduler_agent,
)
from gridtrace.sim.rl._sarsa import sarsa_refit, sarsa_targets
from gridtrace.sim.rl._scheduler import SarsaScheduler
from gridtrace.sim.rl._transitions import TransitionStore

if TYPE_CHECKING:
    from gridtrace.sim.rl._gym_envs import ProvisioningEnv as ProvisioningEnv
    from gridtrace.sim.rl._gym_envs import SchedulingEnv as SchedulingEnv
    from gridtrace.sim.rl._multires_env import MultiResourceEnv as MultiResourceEnv
    from gridtrace.sim.rl._rlsched_policy import (
        RLSchedulerKernelPolicy as RLSchedulerKernelPolicy,
    )
    from gridtrace.sim.rl._rlsched_ppo import RLSchedPPOConfig as RLSchedPPOConfig
    from gridtrace.sim.rl._rlsched_ppo import RLSchedPPORun as RLSchedPPORun
    from gridtrace.sim.rl._rlsched_ppo import RLSchedulerEnv as RLSchedulerEnv
    from gridtrace.sim.rl._rlsched_ppo import RLSchedulerObserver as RLSchedulerObserver
    from gridtrace.sim.rl._rlsched_ppo import evaluate_rlsched_ppo as evaluate_rlsched_ppo
    from gridtrace.sim.rl._rlsched_ppo import load_rlsched_ppo as load_rlsched_ppo
    from gridtrace.sim.rl._rlsched_ppo import run_observed_agent as run_observed_agent
    from gridtrace.sim.rl._rlsched_ppo import save_rlsched_ppo as save_rlsched_ppo
    from gridtrace.sim.rl._rlsched_ppo import train_rlsched_ppo as train_rlsched_ppo

_RLSCHED_PPO = (
    "RLSchedPPOConfig",
    "RLSchedPPORun",
    "RLSchedulerEnv",
    "RLSchedulerObserver",
    "evaluate_rlsched_ppo",
    "load_rlsched_ppo",
    "run_observed_agent",
    "save_rlsched_ppo",
    "train_rlsched_ppo",
)
"""Names of RLScheduler's PPO setup (need gymnasium: imported on first use)."""

__all__ = [
    "BASELINES",
    "CONTENTION_BASELINES",
    "CONTENTION_METRICS",
    "CONTENTION_SCHEMA",
    "ESNQ",
    "MLPQ",
    "MULTIRES_METRICS",
    "MULTIRES_POLICIES",
    "PUBLISHED",
    "RUN_COLUMNS",
    "SUMMARY_SCHEMA",
    "AgentSeeds",
    "ContentionConfig",
    "ElasticProvisioner",
    "EpisodeMetrics",
    "ExperimentConfig",
    "ExperimentResult",
    "FittedQResult",
    "IntervalReward",
    "MultiResPolicy",
    "MultiResourceCluster",
    "MultiResourceConfig",
    "MultiResourceEnv",
    "PPOConfig",
    "PPORun",
    "ProvisioningFeatures",
    "QFunction",
    "QueueSlowdownReward",
    "RLSchedPPOConfig",
    "RLSchedPPORun",
    "RLSchedulerDecision",
    "RLSchedulerEnv",
    "RLSchedulerKernelPolicy",
    "RLSchedulerObserver",
    "Regime",
    "ResponsivenessFairnessReward",
    "Reward",
    "SarsaScheduler",
    "SchedulingFeatures",
    "TimeUtilityReward",
    "TransitionStore",
    "contention_regime",
    "evaluate_multires",
    "evaluate_ppo",
    "evaluate_rlsched_ppo",
    "fitted_q_iteration",
    "interval_reward",
    "load_ppo",
    "load_rlsched_ppo",
    "make_elastic_provisioner",
    "make_provisioning_env",
    "make_rl_scheduler",
    "make_scheduling_env",
    "multires_sequences",
    "ppo_policy",
    "rlscheduler_decisions",
    "run_contention",
    "run_episode",
    "run_experiment",
    "run_observed_agent",
    "run_rlscheduler_agent",
    "sarsa_refit",
    "sarsa_targets",
    "save_ppo",
    "save_rlsched_ppo",
    "seed_interval",
    "summarise_multires",
    "time_split",
    "time_splits",
    "train_ppo",
    "train_rlsched_ppo",
]


def __getattr__(name: str) -> Any:
    # the Gymnasium classes need the optional `rl` extra: imported on first use only
    if name in ("SchedulingEnv", "ProvisioningEnv"):
        from gridtrace.sim.rl._gym import require_gymnasium

        require_gymnasium()
        from gridtrace.sim.rl import _gym_envs

        return getattr(_gym_envs, name)
    if name == "MultiResourceEnv":
        from gridtrace.sim.rl._gym import require_gymnasium

        require_gymnasium()
        from gridtrace.sim.rl import _multires_env

        return _multires_env.MultiResourceEnv
    if name in _RLSCHED_PPO:
        from gridtrace.sim.rl._gym import require_gymnasium

        require_gymnasium()
        from gridtrace.sim.rl import _rlsched_ppo

        return getattr(_rlsched_ppo, name)
    if name == "RLSchedulerKernelPolicy":
        from gridtrace.sim.rl._ppo import require_ppo

        require_ppo()
        from gridtrace.sim.rl import _rlsched_policy

        return _rlsched_policy.RLSchedulerKernelPolicy
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
