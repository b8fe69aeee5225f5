"""The RL supervisor: SARSA scheduling and elastic provisioning over MLP or ESN Q-functions.

The scheduling MDP (:class:`SchedulingFeatures`, :class:`SarsaScheduler`) elects one waiting job
per decision; the provisioning MDP (:class:`ElasticProvisioner`) chooses the pool size every
15 minutes. Both learn by SARSA with batch refits (:func:`sarsa_refit`) of a Q approximator
(:class:`MLPQ`, :class:`ESNQ`); the ESN can also be fitted offline by fitted-Q iteration
(:func:`fitted_q_iteration`). Both are ordinary :class:`~gridtrace.sim.Policy` /
:class:`~gridtrace.sim.ProvisioningPolicy` objects: pass them to :func:`gridtrace.sim.simulate`.
"""

from __future__ import annotations

from gridtrace.sim.rl._elastic import ElasticProvisioner, ProvisioningFeatures
from gridtrace.sim.rl._features import SchedulingFeatures
from gridtrace.sim.rl._fitted_q import FittedQResult, fitted_q_iteration
from gridtrace.sim.rl._qfunctions import ESNQ, MLPQ, QFunction
from gridtrace.sim.rl._rewards import ResponsivenessFairnessReward, Reward, TimeUtilityReward
from gridtrace.sim.rl._sarsa import sarsa_refit, sarsa_targets
from gridtrace.sim.rl._scheduler import SarsaScheduler
from gridtrace.sim.rl._transitions import TransitionStore

__all__ = [
    "ESNQ",
    "MLPQ",
    "ElasticProvisioner",
    "FittedQResult",
    "ProvisioningFeatures",
    "QFunction",
    "ResponsivenessFairnessReward",
    "Reward",
    "SarsaScheduler",
    "SchedulingFeatures",
    "TimeUtilityReward",
    "TransitionStore",
    "fitted_q_iteration",
    "sarsa_refit",
    "sarsa_targets",
]
