"""Automatic segmentation of a trace into stable, representative periods.

The method is ``shared/reference/parsers.md`` §11: machine-pool boundaries (level shifts of the
daily host and core counts found by ``ruptures``, confirmed by host-set overlap), then workload
change points on blocks of jobs (arrival rate, runtime quantiles, VO shares, cores per job) with
a minimum segment size, then merging of adjacent segments whose differences are small by effect
size. Each boundary records the signal that caused it; the result is deterministic for given
:class:`SegmentParams`. :func:`select_segment` then picks the most representative segment.

>>> from gridtrace.segment import segment, select_segment, segment_trace
>>> result = segment(trace)  # doctest: +SKIP
>>> choice = select_segment(result.segments)  # doctest: +SKIP
>>> workload = segment_trace(trace, result.segments, choice.segment_id)  # doctest: +SKIP
"""

from __future__ import annotations

from gridtrace.segment._compare import Thresholds, js_divergence
from gridtrace.segment._pool import (
    PoolBoundary,
    PoolEstimate,
    PoolSignal,
    pool_during,
    pool_from_jobs,
    pool_from_trace,
    segment_pool,
    select_partition,
    trace_pool,
)
from gridtrace.segment._segment import Segmentation, SegmentParams, segment, segment_trace
from gridtrace.segment._select import SegmentChoice, SelectionCriteria, select_segment

__all__ = [
    "PoolBoundary",
    "PoolEstimate",
    "PoolSignal",
    "SegmentChoice",
    "SegmentParams",
    "Segmentation",
    "SelectionCriteria",
    "Thresholds",
    "js_divergence",
    "pool_during",
    "pool_from_jobs",
    "pool_from_trace",
    "segment",
    "segment_pool",
    "segment_trace",
    "select_partition",
    "select_segment",
    "trace_pool",
]
