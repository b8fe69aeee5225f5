"""numba kernels of EASY backfilling, greedy first-fit and conservative backfilling on a fixed pool.

They compute exactly what :func:`~gridtrace.sim.run_events` computes with
:class:`~gridtrace.sim.EasyBackfilling` or :class:`~gridtrace.sim.GreedyFirstFit` and a static
runtime estimator (same event order, same float operations); the tests compare both on random
traces. Data structures: the queue is a doubly linked list over rows (arrivals append, any job
may leave), completions come from a binary heap of true ends, and the running jobs are also kept
in an array sorted by estimated end for the shadow-time computation.

Conservative backfilling (:func:`conservative_starts`) has two kernels giving the same start times
and election order. The rebuilding one (``incremental=False``) rebuilds the availability profile at
every event exactly as :class:`~gridtrace.sim.ConservativeBackfilling` does, in two preallocated
arrays; the queued jobs holding a reservation stay sorted by (first reservation, row), and the
re-placement stops once every job left holds a reservation and needs more cores than are free
now (none of them could start, and their first reservations are already kept). The incremental
one (the default) keeps the profile, reservations included, from one event to the next and
re-places only the jobs whose reservation can change: from the first one (in reservation order)
placed before the current time or holding an estimate too small to move its start (its window
holds nothing, so the jobs placed after it may take its cores there), from the first new job
sorted before a job that was placed before it (a new reservation earlier than older ones) that
could move once the jobs after it are taken out (held jobs cannot: they only gain jobs before
them, and hold their windows), and all of them after a job ended before
its estimated end or a zero-length estimate started (the profile is then rebuilt). The jobs before
that point keep their reservations (those at the current time start if their cores are free):
the profile they were placed in only gained occupancy (the jobs started since), and a feasible
earliest start stays the earliest when occupancy is added. When no new job waits, it also stops
re-placing once none of the held jobs left can start now (each needs more cores than are free
now, or finds a step short of its cores before its estimate runs out): their re-placement
decides nothing at this event, since held jobs keep their first reservations whatever their
current one is, and the jobs not re-placed are re-placed at the next event that needs them.
Its earliest-fit query reads the profile 64 breakpoints at a time as bit masks of the steps short
of the job's cores and goes from one run of free steps to the next (trailing-zero counts), and its
profile helpers run without numba's reference counting; the answers are those of the linear scan.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["backfill_starts", "conservative_starts"]


def backfill_starts(
    submit_s: NDArray[np.float64],
    run_s: NDArray[np.float64],
    estimate_s: NDArray[np.float64],
    cores: NDArray[np.int64],
    total_cores: int,
    *,
    reserve: bool = True,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Start times and election order under EASY (``reserve``) or greedy first-fit.

    Parameters
    ----------
    submit_s, run_s : ndarray of float64
        Sorted by (submit_s, job_id).
    estimate_s : ndarray of float64
        r̂ per job (a static estimator: the runtime, or the requested walltime).
    cores : ndarray of int64
        Cores per job, each between 1 and ``total_cores``.
    total_cores : int
        P.
    reserve : bool, default True
        True: EASY backfilling (a reservation for the blocked head). False: greedy first-fit.

    Returns
    -------
    start_s : ndarray of float64
        Start time per row.
    elected : ndarray of int64
        Rows in election order.
    """
    from gridtrace.sim._kernels_jit import backfill_kernel

    result: tuple[NDArray[np.float64], NDArray[np.int64]] = backfill_kernel(
        np.ascontiguousarray(submit_s, dtype=np.float64),
        np.ascontiguousarray(run_s, dtype=np.float64),
        np.ascontiguousarray(estimate_s, dtype=np.float64),
        np.ascontiguousarray(cores, dtype=np.int64),
        int(total_cores),
        bool(reserve),
    )
    return result


def conservative_starts(
    submit_s: NDArray[np.float64],
    run_s: NDArray[np.float64],
    estimate_s: NDArray[np.float64],
    cores: NDArray[np.int64],
    total_cores: int,
    *,
    incremental: bool = True,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Start times and election order under conservative backfilling on a fixed pool.

    Parameters
    ----------
    submit_s, run_s : ndarray of float64
        Sorted by (submit_s, job_id).
    estimate_s : ndarray of float64
        r̂ per job (a static estimator: the runtime, or the requested walltime); finite.
    cores : ndarray of int64
        Cores per job, each between 1 and ``total_cores``.
    total_cores : int
        P.
    incremental : bool, default True
        True: keep the profile across events and re-place only the reservations that can
        change. False: rebuild it and re-place every reservation at each event. Same result.

    Returns
    -------
    start_s : ndarray of float64
        Start time per row.
    elected : ndarray of int64
        Rows in election order.
    """
    from gridtrace.sim._kernels_jit import conservative_kernel, conservative_kernel_inc

    args = (
        np.ascontiguousarray(submit_s, dtype=np.float64),
        np.ascontiguousarray(run_s, dtype=np.float64),
        np.ascontiguousarray(estimate_s, dtype=np.float64),
        np.ascontiguousarray(cores, dtype=np.int64),
        int(total_cores),
    )
    if incremental:
        start, elected, _ = conservative_kernel_inc(*args)
        return start, elected
    result: tuple[NDArray[np.float64], NDArray[np.int64]] = conservative_kernel(*args)
    return result
