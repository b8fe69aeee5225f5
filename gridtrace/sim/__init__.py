"""The site simulator: one queue, an elastic pool of identical cores, rigid jobs, policies.

:func:`simulate` replays a ``trace`` table under a policy, a runtime estimator and optionally a
provisioning policy, and returns a :class:`SimulationResult` (per-job table plus summary).
Policies are strategy objects behind the :class:`Policy` protocol; the built-in ones are listed in
:data:`POLICIES` (exact definitions in :mod:`gridtrace.sim._policies` and
:mod:`gridtrace.sim._backfill`), the estimators in :data:`ESTIMATORS`.
:func:`set_load` and :func:`load_sweep` set a trace's offered load (compressed arrivals or a
smaller pool) for contention experiments.
:func:`rlscheduler_table` is a separate RLScheduler-compatible evaluation mode that reproduces
that paper's heuristic table (its loading rules, windows, loop and backfilling variant).
Elastic baselines: :class:`ThresholdAutoscaler` (a step-scaling autoscaler, also by name through
:func:`make_provisioning`) and :func:`best_static_pool` (the fixed pool chosen in hindsight);
:func:`pathology_flags` and :func:`w_below_fifo` flag what a mean hides.
:func:`erlang_c`, :func:`erlang_c_mean_wait`, :func:`fifo_class_responsiveness` and
:func:`relaxation_time` are the steady-state M/M/c anchors the FIFO runs are checked against.
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
from gridtrace.sim._load import (
    DEFAULT_LOADS,
    LoadedTrace,
    LoadUnreachableError,
    load_sweep,
    offered_load,
    set_load,
)
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
from gridtrace.sim._pathologies import (
    INTERACTIVE_WAIT_OVER_DAY,
    POOL_AT_FLOOR,
    W_BELOW_FIFO,
    PathologyFlag,
    pathology_flags,
    time_at_floor,
    w_below_fifo,
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
from gridtrace.sim._provisioning import (
    PROVISIONING,
    FixedPool,
    ProvisioningPolicy,
    ScheduledPool,
    StaticPoolScore,
    StaticPoolSearch,
    ThresholdAutoscaler,
    best_static_pool,
    make_provisioning,
)
from gridtrace.sim._queueing import (
    erlang_c,
    erlang_c_mean_wait,
    fifo_class_responsiveness,
    relaxation_time,
)
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
    "DEFAULT_LOADS",
    "ESTIMATORS",
    "FAIRNESS_WINDOWS",
    "INTERACTIVE_WAIT_OVER_DAY",
    "INTERACTIVE_WAIT_S",
    "NO_VO",
    "POLICIES",
    "POOL_AT_FLOOR",
    "PROVISIONING",
    "RLSCHEDULER_POLICIES",
    "RLSCHEDULER_TABLE_COLUMNS",
    "SIM_METADATA_KEYS",
    "W_BELOW_FIFO",
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
    "LoadUnreachableError",
    "LoadedTrace",
    "OracleEstimator",
    "PathologyFlag",
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
    "StaticPoolScore",
    "StaticPoolSearch",
    "TetrisPolicy",
    "ThresholdAutoscaler",
    "WalltimeEstimator",
    "WindowedFairness",
    "backfill_starts",
    "best_static_pool",
    "bounded_slowdown",
    "erlang_c",
    "erlang_c_mean_wait",
    "fairness_at_election",
    "fifo_class_responsiveness",
    "fifo_multi_core_starts",
    "fifo_single_core_starts",
    "iter_decisions",
    "job_rows",
    "legacy_gym_random_state",
    "load_sweep",
    "make_estimator",
    "make_policy",
    "make_provisioning",
    "mean_interval",
    "offered_load",
    "pathology_flags",
    "read_result",
    "read_rlscheduler_swf",
    "relaxation_time",
    "responsiveness",
    "rlscheduler_table",
    "rlscheduler_window_starts",
    "rlscheduler_workload",
    "run_events",
    "set_load",
    "sim_metadata",
    "simulate",
    "simulate_rlscheduler_window",
    "summarise",
    "time_at_floor",
    "w_below_fifo",
    "windowed_fairness",
]
