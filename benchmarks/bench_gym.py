"""Steps per second of the Gymnasium environments (needs the ``rl`` extra).

    .venv/bin/python benchmarks/bench_gym.py --repeat 5

Workload: MM50-20 (6,000 single-core jobs on P = 50, ρ = 0.99, seed 1). One timed episode per
repeat, ``reset`` included, actions from a seeded Generator:

* ``SchedulingEnv`` with ``max_queue`` 100, oracle runtimes: uniform random slot indices (most are
  empty slots, elected as the oldest fitting job instead), random among the mask's feasible
  slots, and always slot 0 (FIFO); then the class-median estimator (runtime entries computed per
  visible job and step);
* ``ProvisioningEnv`` (FIFO in between, decisions every 900 s) with uniform random pool sizes:
  steps per second and simulated jobs per second.

Reports the median and the min–max over the repeats.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from gridtrace.models import generate_preset_trace
from gridtrace.sim.rl._gym import make_provisioning_env, make_scheduling_env

try:
    from _machine import describe_machine
except ImportError:  # run from another folder
    from benchmarks._machine import describe_machine


def episode(env: Any, pick: Callable[[dict[str, Any]], int]) -> tuple[int, float]:
    """Run one episode; return (steps, seconds)."""
    start = time.perf_counter()
    _, info = env.reset(seed=0)
    steps = 0
    done = False
    while not done:
        _, _, done, _, info = env.step(pick(info))
        steps += 1
    return steps, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    trace = generate_preset_trace("MM50-20", rng=1)
    rng = np.random.default_rng(0)

    def uniform(info: dict[str, Any]) -> int:
        return int(rng.integers(100))

    def feasible(info: dict[str, Any]) -> int:
        return int(rng.choice(np.flatnonzero(info["action_mask"])))

    cases: list[tuple[str, Any, Callable[[dict[str, Any]], int]]] = [
        ("scheduling, oracle, uniform random slot", make_scheduling_env(trace), uniform),
        ("scheduling, oracle, random feasible slot", make_scheduling_env(trace), feasible),
        ("scheduling, oracle, slot 0 (FIFO)", make_scheduling_env(trace), lambda i: 0),
        (
            "scheduling, class median, uniform random slot",
            make_scheduling_env(trace, estimator="median"),
            uniform,
        ),
    ]
    prov = make_provisioning_env(trace)
    size = int(prov.action_space.n)
    cases.append(("provisioning, FIFO, random pool size", prov, lambda i: int(rng.integers(size))))
    print(describe_machine())
    print(f"command: .venv/bin/python benchmarks/bench_gym.py --repeat {args.repeat}")
    print()
    print("| environment and actions | steps per episode | steps/s median | min – max | jobs/s |")
    print("|---|---|---|---|---|")
    for name, env, pick in cases:
        rates = []
        steps = 0
        for _ in range(args.repeat):
            steps, seconds = episode(env, pick)
            rates.append(steps / seconds)
        jobs = statistics.median(rates) * trace.num_rows / steps
        print(
            f"| {name} | {steps:,} | {statistics.median(rates):,.0f} "
            f"| {min(rates):,.0f} – {max(rates):,.0f} | {jobs:,.0f} |"
        )
        env.close()


if __name__ == "__main__":
    main()
