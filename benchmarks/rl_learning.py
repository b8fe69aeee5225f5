"""Decisions per second of the RL scheduling supervisor while it learns, as the experiments run it.

    .venv/bin/python benchmarks/rl_learning.py --repeat 5
    .venv/bin/python benchmarks/rl_learning.py --repeat 5 --against /path/to/main/checkout

The workload and agents are those of the ``scheduling`` experiment (``gridtrace.sim.rl``'s
``run_experiment``): one PE-1 draw (10,000 jobs, 80 cores; ``--preset`` and ``--size`` change it),
the preset's VO shares as targets, reward λ_s W + (1 − λ_s) F with λ_s 0.5, oracle runtimes, and
agents built by ``make_rl_scheduler`` (``rl-mlp``: MLPQ(16); ``rl-esn``: ESNQ(100)) with the
scheduler's defaults (γ 0.8, η 0.2, refit every 500 decisions on the last 5,000 transitions).
Each case starts from a fresh, untrained agent with fixed seeds and replays the draw once with
``simulate``:

* ``learning``: ε 0.05 and the periodic SARSA refits (the training episodes and the
  ``continuing`` evaluation mode of the experiments);
* ``frozen``: ε 0 and no refit (the ``frozen`` evaluation mode);
* ``contention``: as ``learning``, with the contention experiments' agent: class-median runtime
  estimates over (VO, interactive) (one candidate per class), the interactive-slowdown reward
  (batch weight 0.1) paid per interval, no VO features.

``--contention`` times instead one whole ``run_contention`` (the workflow's quick default
settings: 2 seeds, 1 tune seed, SJF pre-training then 1 SARSA episode, rewards w-f and
slowdown, λ 0.5, ESN and MLP, fitted-Q) on a regime made from one draw of the preset
(``--size``, default 4,000 jobs, the demo's size) compressed to offered load 0.9, in seconds.

decisions/s = decisions taken / wall-clock seconds of the whole ``simulate`` call; "per
CPU-second" divides by the process's CPU time of the same call instead (``time.process_time``),
the figure to compare on a machine shared with other work. Reference in the same process: FIFO
on the same draw, by the dedicated kernel (``simulate``'s default) and through the general event
loop (``fast_path=False``), in jobs/s.

``--against DIR`` runs the same measurements with the ``gridtrace`` package found in ``DIR``
(e.g. a ``git worktree`` of main) in a separate process, alternating the two sources repeat by
repeat, so both see the same machine load. Medians and ranges over the repeats are printed as a
Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CASES = (
    "fifo-kernel",
    "fifo-loop",
    "mlp-frozen",
    "mlp-learning",
    "esn-frozen",
    "esn-learning",
    "mlp-contention",
    "esn-contention",
)
CONTENTION_SETTINGS = {  # the workflow's quick default (workflow/rules/common.smk)
    "seeds": 2,
    "tune_seeds": 1,
    "train_episodes": 1,
    "pretrain": "sjf",
    "vo_features": "none",
    "rewards": ("w-f", "slowdown"),
    "lambdas": (0.5,),
    "windows": 8,
}


def measure(preset_name: str, size: int | None) -> dict[str, Any]:
    """Run every case once in this process; return seconds, counts and queue lengths per case."""
    import numpy as np

    from gridtrace.models import generate_preset_trace, get_preset
    from gridtrace.sim import simulate
    from gridtrace.sim.rl import ResponsivenessFairnessReward, SchedulingFeatures
    from gridtrace.sim.rl._experiments import AgentSeeds, make_rl_scheduler

    preset = get_preset(preset_name)
    trace = generate_preset_trace(preset, rng=1, size=size)
    shares = dict(preset.vo_shares)
    feats = SchedulingFeatures(list(shares), preset.cores, tau_s=preset.tau_s)
    n = trace.num_rows

    from gridtrace.sim.rl._rewards import InteractiveSlowdownReward

    plain = SchedulingFeatures([], preset.cores, tau_s=preset.tau_s)  # vo_features none
    median = {"estimator": "median", "estimator_options": {"by": ("vo", "interactive")}}

    def agent(kind: str, learning: bool, contention: bool = False) -> Any:
        seeds = AgentSeeds(*np.random.SeedSequence(3).spawn(3))
        if contention:
            slowdown = InteractiveSlowdownReward(batch_weight=0.1)
            return make_rl_scheduler(kind, plain, slowdown, seeds, learning=True, epsilon=0.05)
        reward = ResponsivenessFairnessReward(0.5, shares)
        eps = 0.05 if learning else 0.0
        return make_rl_scheduler(kind, feats, reward, seeds, learning=learning, epsilon=eps)

    # warm-up: imports, numba caches, first-call costs
    small = generate_preset_trace(preset, rng=2, size=1500)
    for kind in ("mlp", "esn"):
        simulate(small, policy=agent(kind, True), vo_shares=shares)
        simulate(small, policy=agent(kind, True, True), vo_shares=shares, **median)
    simulate(small, vo_shares=shares)

    out: dict[str, Any] = {}
    for case in CASES:
        if case.startswith("fifo"):
            start, cpu = time.perf_counter(), time.process_time()
            simulate(trace, vo_shares=shares, fast_path=case == "fifo-kernel")
            out[case] = {
                "seconds": time.perf_counter() - start,
                "cpu_seconds": time.process_time() - cpu,
                "count": n,
            }
            continue
        kind, mode = case.split("-")
        a = agent(kind, mode != "frozen", mode == "contention")
        extra: dict[str, Any] = median if mode == "contention" else {}
        start, cpu = time.perf_counter(), time.process_time()
        simulate(trace, policy=a, vo_shares=shares, **extra)
        seconds = time.perf_counter() - start
        cpu_seconds = time.process_time() - cpu
        queue = a.decision_log()["queue_length"].to_numpy()
        out[case] = {
            "seconds": seconds,
            "cpu_seconds": cpu_seconds,
            "count": int(a.decisions_),
            "refits": int(a.refits_),
            "queue": [float(np.median(queue)), float(np.percentile(queue, 95)), int(queue.max())],
        }
    return out


def measure_contention(preset_name: str, size: int | None) -> dict[str, Any]:
    """Time one run_contention with the workflow's quick default settings; return seconds."""
    from gridtrace.models import generate_preset_trace, get_preset
    from gridtrace.sim.rl import ContentionConfig, contention_regime, run_contention

    preset = get_preset(preset_name)
    trace = generate_preset_trace(preset, rng=1, size=size or 4000)
    regime = contention_regime(trace, load=0.9, how="compress", pool_cores=preset.cores)
    config = ContentionConfig(**CONTENTION_SETTINGS)  # type: ignore[arg-type]
    # warm-up: imports, numba caches
    small = contention_regime(
        generate_preset_trace(preset, rng=2, size=1200), load=0.9, pool_cores=preset.cores
    )
    run_contention(small, config, vo_shares=dict(preset.vo_shares))
    start, cpu = time.perf_counter(), time.process_time()
    result = run_contention(regime, config, vo_shares=dict(preset.vo_shares))
    return {
        "contention": {
            "seconds": time.perf_counter() - start,
            "cpu_seconds": time.process_time() - cpu,
            "count": 1,
            "verdict": str(result.summary.get("verdict", "")),
        }
    }


def _worker(
    src: str | None, preset: str, size: int | None, contention: bool = False
) -> dict[str, Any]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--preset", preset]
    if size is not None:
        cmd += ["--size", str(size)]
    if contention:
        cmd += ["--contention"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _rates(runs: list[dict[str, Any]], clock: str) -> list[float]:
    return sorted(r["count"] / r[clock] for r in runs)


def _row(label: str, runs: list[dict[str, Any]], unit: str) -> str:
    rates = _rates(runs, "seconds")
    cpu = _rates(runs, "cpu_seconds")
    extra = ""
    if "queue" in runs[0]:
        q = runs[0]["queue"]
        extra = f" {q[0]:.0f} / {q[1]:.0f} / {q[2]} | {runs[0]['refits']} |"
    else:
        extra = " | |"
    return (
        f"| {label} | {statistics.median(rates):,.0f} {unit} | {rates[0]:,.0f} – {rates[-1]:,.0f} "
        f"| {statistics.median(cpu):,.0f} | {cpu[0]:,.0f} – {cpu[-1]:,.0f} |{extra}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--preset", default="PE-1")
    parser.add_argument("--size", type=int, default=None)
    parser.add_argument("--against", default=None, help="a checkout whose gridtrace to compare")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--contention", action="store_true", help="time one quick run_contention instead"
    )
    args = parser.parse_args()
    if args.worker:
        import gridtrace

        if args.contention:
            out = measure_contention(args.preset, args.size)
        else:
            out = measure(args.preset, args.size)
        out["package"] = str(Path(gridtrace.__file__).parent)
        print(json.dumps(out))
        return
    try:
        from _machine import describe_machine
    except ImportError:  # run from another folder
        from benchmarks._machine import describe_machine

    here = str(Path(__file__).resolve().parents[1])
    sources = {"this": here}
    if args.against:
        sources["against"] = str(Path(args.against).resolve())
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in sources}
    for _ in range(args.repeat):
        for name, src in sources.items():
            results[name].append(_worker(src, args.preset, args.size, args.contention))
    print(describe_machine())
    if args.contention:
        print(f"one run_contention, {args.preset} draw of {args.size or 4000} jobs at load 0.9")
        print(f"settings {CONTENTION_SETTINGS}; repeats {args.repeat}\n")
        print("| source | median wall s | range | median CPU s | range |")
        print("|---|---:|---:|---:|---:|")
        for name, runs in results.items():
            wall = sorted(r["contention"]["seconds"] for r in runs)
            cpu = sorted(r["contention"]["cpu_seconds"] for r in runs)
            print(
                f"| {name} | {statistics.median(wall):.1f} | {wall[0]:.1f} – {wall[-1]:.1f} "
                f"| {statistics.median(cpu):.1f} | {cpu[0]:.1f} – {cpu[-1]:.1f} |"
            )
        if args.against:
            med = {
                name: statistics.median(r["contention"]["cpu_seconds"] for r in runs)
                for name, runs in results.items()
            }
            print(f"\nCPU time, this / against: {med['this'] / med['against']:.2f}×")
        return
    print(f"workload: {args.preset}, size {args.size or 'preset'}; repeats {args.repeat}")
    for name in sources:
        print(f"\n{name}: {results[name][0]['package']}\n")
        print(
            "| case | median (wall) | range | per CPU-second | range | queue p50 / p95 / max "
            "| refits |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        runs = results[name]
        for case in CASES:
            unit = "jobs/s" if case.startswith("fifo") else "decisions/s"
            print(_row(case, [r[case] for r in runs], unit))
    if args.against:
        print("\n| case | this / against, wall (ratio of medians) | per CPU-second |")
        print("|---|---:|---:|")
        for case in CASES:
            ratio = []
            for clock in ("seconds", "cpu_seconds"):
                med = {
                    name: statistics.median(_rates([r[case] for r in runs], clock))
                    for name, runs in results.items()
                }
                ratio.append(med["this"] / med["against"])
            print(f"| {case} | {ratio[0]:.2f}× | {ratio[1]:.2f}× |")


if __name__ == "__main__":
    main()
