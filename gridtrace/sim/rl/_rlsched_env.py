"""RLScheduler's scheduling loop with the choice of job left to an agent (issue 15, item 3).

First piece of the RLScheduler PPO setup: :func:`rlscheduler_decisions` is the loop of
:func:`gridtrace.sim.simulate_rlscheduler_window` (its semantics are in
:mod:`gridtrace.sim._rlscheduler`) written as a generator. At every decision it yields the
current time, the waiting jobs (window-local indices, in the loop's list order) and the free
nodes, and the caller sends back the job to schedule. What follows is RLScheduler's: the chosen
job stays chosen until it fits (time advances by arrivals and releases), with backfilling around
its reservation when ``backfill`` is set; RLScheduler's RL environment
(``HPCSimPickJobs.py``: ``step`` → ``schedule``) has the same structure.

A caller choosing the first job of ``sorted(queue, key=...)`` with one of the static keys (FCFS,
SJF, F1) reproduces the heuristic loop exactly (equal keys keep the list order in both; tested).
WFP3 and UNICEP re-rank by the current wait, and the heuristic loop's in-place sorts then decide
ties between equal keys from the previous ranking; an agent sees the list in arrival order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass

import numpy as np

from gridtrace.errors import ConfigError, SimulationError
from gridtrace.sim._rlscheduler import BSLD_TAU_S, WINDOW_JOBS, RLSchedulerWorkload

__all__ = ["RLSchedulerDecision", "rlscheduler_decisions", "run_rlscheduler_agent"]


@dataclass(frozen=True, slots=True)
class RLSchedulerDecision:
    """What the agent sees at one decision.

    Attributes
    ----------
    now : float
        Simulated time, seconds.
    queue : tuple of int
        Waiting jobs (window-local indices), in the loop's list order (arrival order, re-sorted
        by submit time during backfilling).
    free_nodes : int
        Idle nodes.
    """

    now: float
    queue: tuple[int, ...]
    free_nodes: int


def rlscheduler_decisions(
    workload: RLSchedulerWorkload,
    first: int,
    *,
    backfill: bool = False,
    window: int = WINDOW_JOBS,
) -> Generator[RLSchedulerDecision, int, tuple[list[int], list[float]]]:
    """Yield RLScheduler's decisions on jobs ``first … first + window − 1``; send the choice.

    Returns (as the generator's value) the jobs in start order and the start time of every
    job of the window, by local index.

    Raises
    ------
    ConfigError
        If the window is not inside the workload, or a job sent back is not waiting.
    """
    if window < 1 or first < 0 or first + window > len(workload):
        msg = f"window {first}…{first + window - 1} is not inside the {len(workload)} jobs"
        raise ConfigError(msg)
    part = slice(first, first + window)
    submit = workload.submit_s[part].tolist()
    run = workload.run_s[part].tolist()
    request = workload.request_s[part].tolist()
    cores = workload.cores[part].tolist()
    nodes = workload.nodes[part].tolist()
    procs_per_node = workload.procs_per_node
    size = window
    start = [math.nan] * size
    finish = [math.nan] * size
    estimate = [math.nan] * size
    order: list[int] = []
    queue: list[int] = [0]
    running: list[int] = []
    free = workload.max_nodes
    now = submit[0]
    arrival = 1

    def launch(j: int) -> None:
        nonlocal free
        start[j] = now
        finish[j] = now + run[j]
        estimate[j] = now + request[j]
        free -= nodes[j]
        running.append(j)
        order.append(j)

    def step() -> None:
        nonlocal now, arrival, free
        if running:
            running.sort(key=finish.__getitem__)
            release = finish[running[0]]
        else:
            release = math.inf
        if arrival < size and submit[arrival] <= release:
            now = max(now, submit[arrival])
            queue.append(arrival)
            arrival += 1
        else:
            if not running:  # pragma: no cover - nodes are checked by the workload
                raise SimulationError("no running job to release and no arrival left")
            now = max(now, release)
            free += nodes[running.pop(0)]

    while True:
        head = yield RLSchedulerDecision(now, tuple(queue), free)
        if head not in queue:
            raise ConfigError(f"job {head} is not waiting (queue {queue[:8]}…)")
        if nodes[head] > free:
            if backfill:
                running.sort(key=estimate.__getitem__)
                shadow = now
                free_procs = free * procs_per_node
                for r in running:
                    free_procs += nodes[r] * procs_per_node
                    shadow = estimate[r]
                    if free_procs >= cores[head]:
                        break
                while nodes[head] > free:
                    queue.sort(key=submit.__getitem__)
                    for c in list(queue):
                        if now + request[c] < shadow and nodes[c] <= free:
                            launch(c)
                            queue.remove(c)
                    step()
            else:
                while nodes[head] > free:
                    step()
        launch(head)
        queue.remove(head)
        if not queue:
            if arrival >= size:
                break
            while not queue:
                step()
    return order, start


def run_rlscheduler_agent(
    workload: RLSchedulerWorkload,
    first: int,
    choose: Callable[[RLSchedulerDecision], int],
    *,
    backfill: bool = False,
    window: int = WINDOW_JOBS,
) -> float:
    """Schedule one window with ``choose`` picking every job; return its mean bounded slowdown.

    The mean is RLScheduler's: bounded slowdown max(1, (w + r) / max(r, 10 s)) summed over the
    window's jobs in start order, divided by the window size.
    """
    decisions = rlscheduler_decisions(workload, first, backfill=backfill, window=window)
    decision = next(decisions)
    try:
        while True:
            decision = decisions.send(choose(decision))
    except StopIteration as stop:
        order = np.asarray(stop.value[0], dtype=np.int64)
        start = np.asarray(stop.value[1], dtype=np.float64)
    part = slice(first, first + window)
    submit = workload.submit_s[part]
    run = workload.run_s[part]
    bsld = np.maximum(1.0, (start - submit + run) / np.maximum(run, BSLD_TAU_S))[order]
    mean = 0.0
    for b in bsld.tolist():
        mean += b / window
    return mean
