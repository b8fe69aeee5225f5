"""Workload characterisation: what a site's jobs look like.

:func:`characterise` computes, for a trace or a time window of it, the statistics the research
relies on: jobs, span, cores P, interactive fraction, runtime distributions per class and VO,
inter-arrival distribution, the service-request process, the utilisation factor U and the
core-weighted ρ, the IDC curve, the inter-arrival ACF, daily and weekly arrival profiles in the
site's local time, VO and user shares, flurries, and the as-logged wait and W per class.

>>> from gridtrace.stats import characterise
>>> stats = characterise(trace)  # doctest: +SKIP
>>> stats.utilisation, stats.interactive_fraction  # doctest: +SKIP
"""

from __future__ import annotations

from gridtrace.stats._characterise import WorkloadStats, characterise, shares
from gridtrace.stats._chunked import (
    JOBS_COLUMNS_OF_TRACE,
    characterise_parquet,
    trace_from_parquet,
)
from gridtrace.stats._columns import DEFAULT_TAU_S, TraceArrays, resolve_zone, trace_arrays
from gridtrace.stats._measures import (
    QUANTILES,
    core_weighted_load,
    distribution_summary,
    idc_curve,
    interarrival_acf,
    log_bin_edges,
    log_histogram,
    service_requests,
    utilisation_factor,
)
from gridtrace.stats._profiles import (
    FlurryCriteria,
    arrival_profiles,
    find_flurries,
    local_seconds,
)

__all__ = [
    "DEFAULT_TAU_S",
    "JOBS_COLUMNS_OF_TRACE",
    "QUANTILES",
    "FlurryCriteria",
    "TraceArrays",
    "WorkloadStats",
    "arrival_profiles",
    "characterise",
    "characterise_parquet",
    "core_weighted_load",
    "distribution_summary",
    "find_flurries",
    "idc_curve",
    "interarrival_acf",
    "local_seconds",
    "log_bin_edges",
    "log_histogram",
    "resolve_zone",
    "service_requests",
    "shares",
    "trace_arrays",
    "trace_from_parquet",
    "utilisation_factor",
]
