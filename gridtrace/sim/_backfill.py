"""Backfilling policies (``shared/reference/sim.md`` §2.10, §2.11, §2.13), primary order FIFO.

The running jobs' *estimated* ends are start + r̂ as estimated at their start; an estimated end
that has already passed counts as ``now`` (the job is expected to end at any moment).

EASY (Lifka; Mu'alem & Feitelson)
    Start jobs in queue order while the head fits. If the head does not fit, compute its shadow
    time T_s — the earliest estimated end at which enough cores are free for it (counting every
    job that ends at T_s) — and the extra cores E = free at T_s − n_head. Then any later job may
    start now if it fits now and (now + r̂_j ≤ T_s, or n_j ≤ E — the latter consuming E).
    Recomputed at every event. If the head can never fit the current pool (elastic pools),
    T_s = ∞ and every fitting job may start.
Conservative
    Every queued job gets a reservation: the earliest time from which its cores are free for r̂_j
    in the availability profile left by the running jobs and the reservations placed before it.
    A new job is placed after every job already holding a reservation, in queue order. At every
    event the profile is rebuilt (compressed) by placing the jobs in the order of their first
    reservations, so a job can only move earlier: with exact estimates no job starts after its
    first reservation. (Rebuilding in queue order instead lets an earlier-queued job take the slot
    of a later one that was reserved before it, which the property tests caught.) A job starts
    now if its reservation is now.
Greedy first-fit (no reservation)
    Scan the queue in order and start every job that fits. This is what AccaSim calls "EASY
    backfilling"; it makes no reservation, so a wide job may starve.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gridtrace.sim._engine import ClusterState, JobRows, QueueView

__all__ = ["ConservativeBackfilling", "EasyBackfilling", "GreedyFirstFit"]


class GreedyFirstFit:
    """Start every queued job that fits, in queue order — no reservation (not EASY)."""

    name = "greedy-first-fit"

    def select(self, queue: QueueView, state: ClusterState, now: float) -> list[int]:
        """Return the jobs that fit, scanning in (submit, id) order."""
        free = state.free_cores
        cores = queue.cores
        chosen: list[int] = []
        for row in queue:
            need = cores[row]
            if need <= free:
                chosen.append(row)
                free -= need
                if free == 0:
                    break
        return chosen


class EasyBackfilling:
    """EASY backfilling with FIFO primary order (see the module docstring).

    Attributes
    ----------
    reservations : dict of int to float
        Row → the shadow time computed when the job first was the blocked head.
    """

    name = "easy"

    def __init__(self) -> None:
        self.reservations: dict[int, float] = {}

    def reset(self, jobs: JobRows) -> None:
        """Forget the reservations of a previous run."""
        self.reservations = {}

    def select(self, queue: QueueView, state: ClusterState, now: float) -> list[int]:
        """Start the fitting prefix, then backfill behind the blocked head."""
        free = state.free_cores
        cores = queue.cores
        chosen: list[int] = []
        rows = iter(queue)
        head = -1
        for row in rows:
            need = cores[row]
            if need > free:
                head = row
                break
            chosen.append(row)
            free -= need
        if head < 0 or free == 0:
            return chosen
        # shadow time of the head, from the estimated ends (including this instant's starts)
        ends = [(e if e > now else now, cores[r]) for r, e in state.running.items()]
        ends.extend((now + state.estimate(r), cores[r]) for r in chosen)
        ends.sort()
        need = cores[head]
        avail = free
        shadow = math.inf
        extra = 0
        i, m = 0, len(ends)
        while i < m:
            t = ends[i][0]
            while i < m and ends[i][0] == t:
                avail += ends[i][1]
                i += 1
            if avail >= need:
                shadow, extra = t, avail - need
                break
        if head not in self.reservations:
            self.reservations[head] = shadow
        for row in rows:
            need = cores[row]
            if need > free:
                continue
            if now + state.estimate(row) <= shadow:
                chosen.append(row)
                free -= need
            elif need <= extra:
                chosen.append(row)
                free -= need
                extra -= need
            else:
                continue
            if free == 0:
                break
        return chosen


class ConservativeBackfilling:
    """Conservative backfilling with FIFO priority order (see the module docstring).

    The availability profile is rebuilt at every decision, so a decision costs O(Q · B) for Q
    queued jobs and B breakpoints; it stops early once no core is left free now.

    Attributes
    ----------
    reservations : dict of int to float
        Row → the first reservation the job received.
    """

    name = "conservative"

    def __init__(self) -> None:
        self.reservations: dict[int, float] = {}

    def reset(self, jobs: JobRows) -> None:
        """Forget the reservations of a previous run."""
        self.reservations = {}

    def select(self, queue: QueueView, state: ClusterState, now: float) -> list[int]:
        """Re-place the reservations in their order, then new jobs; start those due now."""
        cores = queue.cores
        # profile: free[i] cores during [times[i], times[i + 1]), the last one open-ended
        ends = sorted((e if e > now else now, cores[r]) for r, e in state.running.items())
        times = [now]
        free = [state.free_cores]
        for t, c in ends:
            if t == times[-1]:
                free[-1] += c
            else:
                times.append(t)
                free.append(free[-1] + c)
        chosen: list[int] = []
        now_free = state.free_cores  # also counts zero-length jobs started now
        reservations = self.reservations
        held = sorted((reservations[r], r) for r in queue if r in reservations)
        order = [r for _, r in held]
        order.extend(r for r in queue if r not in reservations)
        for row in order:
            if free[0] == 0:
                break
            need = cores[row]
            dur = state.estimate(row)
            start = _earliest(times, free, need, dur)
            if start < 0:
                continue  # never fits this pool
            t0 = times[start]
            if row not in reservations:
                reservations[row] = t0
            _reserve(times, free, start, _end(t0, dur), need)
            if t0 == now and need <= now_free:
                chosen.append(row)
                now_free -= need
        return chosen


def _end(start: float, dur: float) -> float:
    """End of a reservation; a zero-length job holds its cores for the smallest float step.

    It does hold them at its start instant, so a later job that would overlap that instant must
    not be placed before it.
    """
    return start + dur if dur > 0 else math.nextafter(start, math.inf)


def _earliest(times: list[float], free: list[int], need: int, dur: float) -> int:
    """Index of the first breakpoint from which ``need`` cores are free for ``dur``, or −1."""
    m = len(times)
    i = 0
    while i < m:
        if free[i] < need:
            i += 1
            continue
        end = _end(times[i], dur)
        k = i + 1
        while k < m and times[k] < end:
            if free[k] < need:
                break
            k += 1
        else:
            return i
        i = k + 1  # every start before breakpoint k overlaps the shortage at k
    return -1


def _reserve(times: list[float], free: list[int], i: int, end: float, need: int) -> None:
    """Take ``need`` cores from breakpoint ``i`` up to ``end`` (adding a breakpoint at ``end``)."""
    m = len(times)
    k = i
    while k < m and times[k] < end:
        k += 1
    if (k == m or times[k] > end) and end > times[i]:
        times.insert(k, end)
        free.insert(k, free[k - 1])
    if end == times[i]:  # zero-length job: holds its cores at that instant only
        return
    for j in range(i, k):
        free[j] -= need
