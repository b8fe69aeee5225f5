"""RLScheduler's loop driven by an agent: choosing like a static heuristic reproduces it exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gridtrace.errors import ConfigError
from gridtrace.sim import read_rlscheduler_swf, simulate_rlscheduler_window
from gridtrace.sim._rlscheduler import RLSchedulerWorkload, _policy_key
from gridtrace.sim.rl._rlsched_env import (
    RLSchedulerDecision,
    rlscheduler_decisions,
    run_rlscheduler_agent,
)


def synthetic(n: int = 400, seed: int = 0) -> RLSchedulerWorkload:
    g = np.random.default_rng(seed)
    submit = np.cumsum(g.exponential(60.0, n)).round()
    run = g.lognormal(5.0, 1.5, n).round() + 1
    return RLSchedulerWorkload(
        job_id=np.arange(1, n + 1),
        submit_s=submit,
        run_s=run,
        request_s=run * g.uniform(1.0, 3.0, n).round(1),
        cores=g.choice([1, 1, 2, 4, 8, 16, 32, 64], n),
        max_nodes=64,
        max_procs=64,
    )


def heuristic_agent(workload: RLSchedulerWorkload, first: int, window: int, policy: str):
    part = slice(first, first + window)
    key = _policy_key(
        policy,
        False,
        workload.submit_s[part].tolist(),
        workload.request_s[part].tolist(),
        workload.cores[part].tolist(),
    )

    def choose(d: RLSchedulerDecision) -> int:
        return min(d.queue, key=key(d.now))  # min keeps the first of equal keys, like the sort

    return choose


@pytest.mark.parametrize("backfill", [False, True])
@pytest.mark.parametrize("policy", ["FCFS", "SJF", "F1"])
def test_agent_choosing_like_a_heuristic_reproduces_it(policy: str, backfill: bool) -> None:
    wl = synthetic()
    for first in (0, 100):
        window = 256
        want = simulate_rlscheduler_window(
            wl, first, policy=policy, backfill=backfill, window=window
        ).bsld_mean
        got = run_rlscheduler_agent(
            wl, first, heuristic_agent(wl, first, window, policy), backfill=backfill, window=window
        )
        assert got == want


def test_decisions_show_the_queue_and_refuse_a_job_not_waiting() -> None:
    wl = synthetic(50)
    gen = rlscheduler_decisions(wl, 0, window=50)
    d = next(gen)
    assert d.queue == (0,)
    assert d.free_nodes == 64
    with pytest.raises(ConfigError, match="not waiting"):
        gen.send(7)


@pytest.mark.realdata
@pytest.mark.parametrize("trace", ["lublin_256.swf.gz", "lublin_256_new2.swf.gz"])
def test_lublin_window_matches_the_heuristic_loop(real_data: Path, trace: str) -> None:
    path = real_data / "swf" / trace
    if not path.is_file():
        pytest.skip(f"{path} is missing")
    wl = read_rlscheduler_swf(path)
    first = 1981  # the first of RLScheduler's 10 evaluation windows
    for backfill in (False, True):
        want = simulate_rlscheduler_window(wl, first, policy="SJF", backfill=backfill).bsld_mean
        got = run_rlscheduler_agent(
            wl, first, heuristic_agent(wl, first, 1024, "SJF"), backfill=backfill
        )
        assert got == want


def test_the_synthetic_window_is_contended_so_choices_matter() -> None:
    wl = synthetic()
    means = {
        (p, b): simulate_rlscheduler_window(wl, 0, policy=p, backfill=b, window=256).bsld_mean
        for p in ("FCFS", "SJF", "F1")
        for b in (False, True)
    }
    assert len(set(means.values())) == 6
    newest_first = run_rlscheduler_agent(wl, 0, lambda d: d.queue[-1], window=256)
    assert newest_first not in means.values()
