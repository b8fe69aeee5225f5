"""The site simulator: one queue, P identical cores, rigid jobs, pluggable policies.

:func:`simulate` replays a ``trace`` table under a policy and returns a :class:`SimulationResult`
(per-job table plus summary). Policies are strategy objects behind the :class:`Policy` protocol;
the built-in ones are listed in :data:`POLICIES` (for now strict FIFO).
:func:`rlscheduler_table` is a separate RLScheduler-compatible evaluation mode that reproduces
that paper's heuristic table (its loading rules, windows, loop and backfilling variant).
"""

from __future__ import annotations

from gridtrace.sim._engine import (
    POLICIES,
    FifoPolicy,
    JobRows,
    Policy,
    QueueView,
    fifo_multi_core_starts,
    fifo_single_core_starts,
    make_policy,
    run_events,
    simulate,
)
from gridtrace.sim._metrics import (
    BSLD_TAU_S,
    INTERACTIVE_WAIT_S,
    NO_VO,
    bounded_slowdown,
    fairness_at_election,
    responsiveness,
    summarise,
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
    "INTERACTIVE_WAIT_S",
    "NO_VO",
    "POLICIES",
    "RLSCHEDULER_POLICIES",
    "RLSCHEDULER_TABLE_COLUMNS",
    "SIM_METADATA_KEYS",
    "FifoPolicy",
    "JobRows",
    "Policy",
    "QueueView",
    "RLSchedulerWindow",
    "RLSchedulerWorkload",
    "SimulationResult",
    "bounded_slowdown",
    "fairness_at_election",
    "fifo_multi_core_starts",
    "fifo_single_core_starts",
    "legacy_gym_random_state",
    "make_policy",
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
]
