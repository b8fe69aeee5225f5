"""The site simulator: one queue, an elastic pool of identical cores, rigid jobs, policies.

:func:`simulate` replays a ``trace`` table under a policy, a runtime estimator and optionally a
provisioning policy, and returns a :class:`SimulationResult` (per-job table plus summary).
Policies are strategy objects behind the :class:`Policy` protocol; the built-in ones are listed in
:data:`POLICIES` (exact definitions in :mod:`gridtrace.sim._policies` and
:mod:`gridtrace.sim._backfill`), the estimators in :data:`ESTIMATORS`.
:func:`rlscheduler_table` is a separate RLScheduler-compatible evaluation mode that reproduces
that paper's heuristic table (its loading rules, windows, loop and backfilling variant).
"""

from __future__ import annotations

from gridtrace.sim._backfill import ConservativeBackfilling, EasyBackfilling, GreedyFirstFit
from gridtrace.sim._engine import (
    ClusterState,
    EventRun,
    JobRows,
    Policy,
    QueueView,
    StateFeatures,
    fifo_multi_core_starts,
    fifo_single_core_starts,
    iter_decisions,
    job_rows,
    run_events,
    simulate,
)
from gridtrace.sim._estimators import (
    ESTIMATORS,
    ClassMedianEstimator,
    OracleEstimator,
    RuntimeEstimator,
    WalltimeEstimator,
    make_estimator,
)
from gridtrace.sim._intervals import Interval, mean_interval
from gridtrace.sim._kernels import backfill_starts
from gridtrace.sim._metrics import (
    BSLD_TAU_S,
    FAIRNESS_WINDOWS,
    INTERACTIVE_WAIT_S,
    NO_VO,
    WindowedFairness,
    bounded_slowdown,
    fairness_at_election,
    responsiveness,
    summarise,
    windowed_fairness,
)
from gridtrace.sim._policies import (
    POLICIES,
    AsLoggedReplay,
    FairSharePolicy,
    FifoPolicy,
    PolicyConfig,
    PriorityPolicy,
    RandomPolicy,
    TetrisPolicy,
    make_policy,
)
from gridtrace.sim._provisioning import FixedPool, ProvisioningPolicy, ScheduledPool
from gridtrace.sim._result import SIM_METADATA_KEYS, SimulationResult, read_result, sim_metadata
from gridtrace.sim._rlscheduler import (
    RLSCHEDULER_POLICIES,
    RLSCHEDULER_TABLE_COLUMNS,
    RLSchedulerWindow,
    RLSchedulerWorkload,
    legacy_gym_random_state,
    read_rlscheduler_swf,
    rlscheduler_table,
    rlscheduler_window_starts,
    rlscheduler_workload,
    simulate_rlscheduler_window,
)

__all__ = [
    "BSLD_TAU_S",
    "ESTIMATORS",
    "FAIRNESS_WINDOWS",
    "INTERACTIVE_WAIT_S",
    "NO_VO",
    "POLICIES",
    "RLSCHEDULER_POLICIES",
    "RLSCHEDULER_TABLE_COLUMNS",
    "SIM_METADATA_KEYS",
    "AsLoggedReplay",
    "ClassMedianEstimator",
    "ClusterState",
    "ConservativeBackfilling",
    "EasyBackfilling",
    "EventRun",
    "FairSharePolicy",
    "FifoPolicy",
    "FixedPool",
    "GreedyFirstFit",
    "Interval",
    "JobRows",
    "OracleEstimator",
    "Policy",
    "PolicyConfig",
    "PriorityPolicy",
    "ProvisioningPolicy",
    "QueueView",
    "RLSchedulerWindow",
    "RLSchedulerWorkload",
    "RandomPolicy",
    "RuntimeEstimator",
    "ScheduledPool",
    "SimulationResult",
    "StateFeatures",
    "TetrisPolicy",
    "WalltimeEstimator",
    "WindowedFairness",
    "backfill_starts",
    "bounded_slowdown",
    "fairness_at_election",
    "fifo_multi_core_starts",
    "fifo_single_core_starts",
    "iter_decisions",
    "job_rows",
    "legacy_gym_random_state",
    "make_estimator",
    "make_policy",
    "mean_interval",
    "read_result",
    "read_rlscheduler_swf",
    "responsiveness",
    "rlscheduler_table",
    "rlscheduler_window_starts",
    "rlscheduler_workload",
    "run_events",
    "sim_metadata",
    "simulate",
    "simulate_rlscheduler_window",
    "summarise",
    "windowed_fairness",
]
