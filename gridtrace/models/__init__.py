"""Workload models: arrival and runtime models, fit quality, seed presets, synthetic traces.

The seed presets (:data:`PRESETS`: PE-1 … PE-4, MMPP-1/2, MM50-20/40/50) reproduce the synthetic
workloads of the research, and :data:`DEEPRM_PRESETS` (DeepRM-10 … DeepRM-180) that of the deep-RL
paper DeepRM; :func:`generate_preset_trace` turns one into a ``trace`` table that the simulator
(:mod:`gridtrace.sim`) replays.
"""

from __future__ import annotations

from gridtrace.models._arrivals import (
    ArrivalModel,
    PiecewisePoissonArrivals,
    PoissonArrivals,
    arrival_epochs,
)
from gridtrace.models._deeprm import (
    DEEPRM_PRESETS,
    DeepRMJobs,
    DeepRMWorkload,
    deeprm_jobs,
    deeprm_trace,
    get_deeprm,
)
from gridtrace.models._export import trace_to_jobs, write_trace_swf
from gridtrace.models._mmpp import (
    MMPPArrivals,
    MMPPSelection,
    PoissonHMMArrivals,
    embedded_phase_law,
    mmpp_iat_acf,
    mmpp_idc,
    mmpp_moments,
    select_mmpp,
)
from gridtrace.models._presets import ARRIVAL_KINDS, PRESETS, Preset, get_preset
from gridtrace.models._quality import (
    HeldOutScore,
    LjungBox,
    ReplicaBand,
    RuntimeFit,
    anderson_darling,
    heldout_log_likelihood,
    ks_statistic,
    ljung_box,
    replica_band,
    runtime_fit,
)
from gridtrace.models._runtimes import (
    EmpiricalRuntime,
    ExponentialRuntime,
    GammaRuntime,
    HyperExponentialRuntime,
    LogNormalRuntime,
    RuntimeModel,
    WeibullRuntime,
    hk_collapse,
    runtime_model_from_dict,
    select_hyperexponential,
)
from gridtrace.models._synth import (
    SYNTHETIC_ORIGIN,
    ctmc_mmpp_arrival_times,
    generate_preset_trace,
    mmpp_arrival_times,
    mmpp_exponential_trace,
    poisson_exponential_trace,
)
from gridtrace.models._workload import RUNTIME_FAMILIES, WorkloadModel, arrival_model_from_dict

__all__ = [
    "ARRIVAL_KINDS",
    "DEEPRM_PRESETS",
    "PRESETS",
    "RUNTIME_FAMILIES",
    "SYNTHETIC_ORIGIN",
    "ArrivalModel",
    "DeepRMJobs",
    "DeepRMWorkload",
    "EmpiricalRuntime",
    "ExponentialRuntime",
    "GammaRuntime",
    "HeldOutScore",
    "HyperExponentialRuntime",
    "LjungBox",
    "LogNormalRuntime",
    "MMPPArrivals",
    "MMPPSelection",
    "PiecewisePoissonArrivals",
    "PoissonArrivals",
    "PoissonHMMArrivals",
    "Preset",
    "ReplicaBand",
    "RuntimeFit",
    "RuntimeModel",
    "WeibullRuntime",
    "WorkloadModel",
    "anderson_darling",
    "arrival_epochs",
    "arrival_model_from_dict",
    "ctmc_mmpp_arrival_times",
    "deeprm_jobs",
    "deeprm_trace",
    "embedded_phase_law",
    "generate_preset_trace",
    "get_deeprm",
    "get_preset",
    "heldout_log_likelihood",
    "hk_collapse",
    "ks_statistic",
    "ljung_box",
    "mmpp_arrival_times",
    "mmpp_exponential_trace",
    "mmpp_iat_acf",
    "mmpp_idc",
    "mmpp_moments",
    "poisson_exponential_trace",
    "replica_band",
    "runtime_fit",
    "runtime_model_from_dict",
    "select_hyperexponential",
    "select_mmpp",
    "trace_to_jobs",
    "write_trace_swf",
]
