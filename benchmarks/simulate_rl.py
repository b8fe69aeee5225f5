"""Decisions per second of the RL scheduling supervisor inside the simulator, end to end.

    .venv/bin/python benchmarks/simulate_rl.py --repeat 5
    .venv/bin/python benchmarks/simulate_rl.py --repeat 5 --reward slowdown

One MM50-20 draw (6,000 single-core jobs on 50 cores, rho 0.99) replayed by ``simulate`` under
the SARSA scheduler with an MLP (16 hidden units) or an ESN (100 units) Q-function: frozen greedy
(no refit) and learning (epsilon 0.05, refit every 500 decisions on a 5,000-row window), with
oracle runtimes (every waiting job is a candidate, one batched Q call per decision) and with the
class-median estimator (one candidate per (VO, interactive) class). Baseline in the same run:
the same trace under HRRN through the same general event loop (a heuristic that ranks every
waiting job at each decision). Reports decisions/s (one decision elects one job: 6,000 per run),
the median and the range over the repeats, and the queue lengths the decisions saw. ``--reward``
picks the scheduler's reward: the research's λ_s W + (1 − λ_s) F (``w-f``, default) or the
per-interval slowdown penalty (``slowdown``); the learned policies, hence the queues, differ.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from gridtrace.models import generate_preset_trace
from gridtrace.sim import simulate
from gridtrace.sim.rl import (
    ESNQ,
    MLPQ,
    QueueSlowdownReward,
    ResponsivenessFairnessReward,
    Reward,
    SarsaScheduler,
    SchedulingFeatures,
)

try:
    from _machine import describe_machine
except ImportError:  # run from another folder
    from benchmarks._machine import describe_machine

SHARES = {"vo1": 0.7, "vo2": 0.2, "vo3": 0.05, "vo4": 0.05}


def make_agent(kind: str, learning: bool, reward_name: str) -> SarsaScheduler:
    feats = SchedulingFeatures(list(SHARES), 50)
    net, explore = np.random.SeedSequence(0).spawn(2)
    q = (
        MLPQ(feats.n_state, feats.n_action, rng=np.random.default_rng(net))
        if kind == "mlp"
        else ESNQ(feats.n_state, feats.n_action, rng=np.random.default_rng(net))
    )
    reward: Reward = (
        QueueSlowdownReward()
        if reward_name == "slowdown"
        else ResponsivenessFairnessReward(0.5, SHARES)
    )
    return SarsaScheduler(
        q,
        feats,
        reward,
        rng=np.random.default_rng(explore),
        learning=learning,
        epsilon=0.05 if learning else 0.0,
    )


def timed(run: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--reward", choices=("w-f", "slowdown"), default="w-f")
    args = parser.parse_args()
    trace = generate_preset_trace("MM50-20", rng=1)
    n = trace.num_rows
    by = {"by": ("vo", "interactive")}
    print(describe_machine())
    print(f"reward: {args.reward}")
    print("| run | decisions/s (median) | range | queue p50 / p95 / max |")
    print("|---|---:|---:|---:|")
    base = timed(lambda: simulate(trace, policy="hrrn", fast_path=False), args.repeat)
    med = statistics.median(base)
    print(
        f"| HRRN, general loop (baseline) | {n / med:,.0f} | "
        f"{n / max(base):,.0f} – {n / min(base):,.0f} | |"
    )
    for kind in ("mlp", "esn"):
        for learning in (False, True):
            for estimator in ("oracle", "median"):
                agent = make_agent(kind, learning, args.reward)
                options = by if estimator == "median" else None

                def run(a: SarsaScheduler = agent, e: str = estimator, o: object = options) -> None:
                    a.clear_log()
                    simulate(trace, policy=a, estimator=e, estimator_options=o)  # type: ignore[arg-type]

                times = timed(run, args.repeat)
                queue = agent.decision_log()["queue_length"].to_numpy()
                p50, p95 = np.percentile(queue, [50, 95])
                label = f"{kind.upper()}, {'learning' if learning else 'frozen'}, {estimator}"
                m = statistics.median(times)
                print(
                    f"| {label} | {n / m:,.0f} ({m / med:.2f}× HRRN time) | "
                    f"{n / max(times):,.0f} – {n / min(times):,.0f} | "
                    f"{p50:.0f} / {p95:.0f} / {queue.max()} |"
                )


if __name__ == "__main__":
    main()
