"""Steps per second of the multi-resource environment and of PPO on it (issue 15).

    .venv/bin/python benchmarks/ppo_steps.py
    .venv/bin/python benchmarks/ppo_steps.py --seconds 5 --updates 10

Needs the ``ppo`` extra. Measured, in one process, on DeepRM's setup at 100 % load
(``MultiResourceConfig()``), every case a fresh object with fixed seeds:

* ``cluster``: the plain Python simulator (``MultiResourceCluster.step`` + ``observation`` +
  ``action_masks``), random valid actions: the baseline of the ratios;
* ``env``: the same through the Gymnasium ``MultiResourceEnv.step``;
* ``dummy×24`` / ``subproc×24``: sb3's ``DummyVecEnv`` / ``SubprocVecEnv`` of 24 environments,
  the masks fetched as MaskablePPO fetches them (``get_action_masks``), a random valid action
  per environment; steps counted over all 24;
* ``ppo dummy`` / ``ppo subproc``: ``train_ppo`` with the paper's hyper-parameters
  (24 actors × 64 steps, 4 epochs) for ``--updates`` updates; steps = actions of all actors;
* ``inference``: decisions of a (briefly trained) policy on the cluster, ``predict`` with the
  mask, deterministic, torch on one thread.

steps/s = steps / wall seconds; "per CPU-s" divides by this process's CPU time instead (it does
not count the ``SubprocVecEnv`` workers' CPU). The machine is shared: wall figures move with the
other load, the ratios against the baseline of the same run less so.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import describe_machine


def timed(fn: Callable[[], int]) -> tuple[int, float, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    n = fn()
    return n, time.perf_counter() - w0, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="per environment case")
    parser.add_argument("--updates", type=int, default=5, help="PPO updates per training case")
    args = parser.parse_args()

    import sb3_contrib
    import stable_baselines3
    import torch
    from sb3_contrib.common.maskable.utils import get_action_masks

    from gridtrace.sim.rl import (
        MultiResourceCluster,
        MultiResourceConfig,
        PPOConfig,
        multires_sequences,
        ppo_policy,
        train_ppo,
    )
    from gridtrace.sim.rl._multires_env import MultiResourceEnv
    from gridtrace.sim.rl._ppo import make_vec_env

    torch.set_num_threads(1)
    cfg = MultiResourceConfig()
    rng = np.random.default_rng(0)
    seqs = multires_sequences(cfg, 200, rng=1)
    results: list[tuple[str, int, float, float]] = []

    def cluster_loop() -> int:
        c = MultiResourceCluster(cfg)
        n, k, end = 0, 0, time.perf_counter() + args.seconds
        c.reset(seqs[0])
        while time.perf_counter() < end:
            for _ in range(100):
                valid = np.flatnonzero(c.action_masks())
                c.step(int(valid[rng.integers(valid.size)]))
                c.observation()
                n += 1
                if c.done or c.truncated:
                    k = (k + 1) % len(seqs)
                    c.reset(seqs[k])
        return n

    def env_loop() -> int:
        env = MultiResourceEnv(cfg)
        env.reset(seed=0)
        n, end = 0, time.perf_counter() + args.seconds
        while time.perf_counter() < end:
            for _ in range(100):
                valid = np.flatnonzero(env.action_masks())
                _, _, term, trunc, _ = env.step(int(valid[rng.integers(valid.size)]))
                n += 1
                if term or trunc:
                    env.reset()
        return n

    def vec_loop(kind: str) -> Callable[[], int]:
        def run() -> int:
            vec = make_vec_env(cfg, 24, kind)
            vec.seed(0)
            vec.reset()
            n, end = 0, time.perf_counter() + args.seconds
            try:
                while time.perf_counter() < end:
                    masks = get_action_masks(vec)
                    actions = np.array(
                        [int(rng.choice(np.flatnonzero(m))) for m in masks], dtype=np.int64
                    )
                    vec.step(actions)
                    n += 24
            finally:
                vec.close()
            return n

        return run

    results.append(("cluster (plain Python loop)", *timed(cluster_loop)))
    results.append(("env (Gymnasium step)", *timed(env_loop)))
    results.append(("dummy×24 (DummyVecEnv)", *timed(vec_loop("dummy"))))
    results.append(("subproc×24 (SubprocVecEnv)", *timed(vec_loop("subproc"))))
    budget = 24 * 64 * args.updates
    trained = None
    for kind in ("dummy", "subproc"):
        ppo = PPOConfig(total_timesteps=budget, vec_env=kind)  # type: ignore[arg-type]

        def train(ppo: PPOConfig = ppo) -> int:
            nonlocal trained
            trained = train_ppo(cfg, ppo, seed=0)
            return int(trained.model.num_timesteps)

        results.append((f"ppo {kind} (train_ppo, {args.updates} updates)", *timed(train)))
    assert trained is not None
    policy = ppo_policy(trained.model)

    def inference() -> int:
        c = MultiResourceCluster(cfg)
        n, k, end = 0, 0, time.perf_counter() + args.seconds
        c.reset(seqs[0])
        while time.perf_counter() < end:
            c.step(policy(c))
            n += 1
            if c.done or c.truncated:
                k = (k + 1) % len(seqs)
                c.reset(seqs[k])
        return n

    results.append(("inference (predict with mask)", *timed(inference)))

    print(describe_machine())
    print(
        f"stable-baselines3 {stable_baselines3.__version__}, sb3-contrib "
        f"{sb3_contrib.__version__}, torch {torch.__version__} (1 thread)"
    )
    base = results[0][1] / results[0][2]
    print("| case | steps | wall s | steps/s | ratio to cluster | per CPU-s |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, n, wall, cpu in results:
        rate = n / wall
        print(
            f"| {name} | {n:,} | {wall:.2f} | {rate:,.0f} | {rate / base:.2f}× | "
            f"{n / max(cpu, 1e-9):,.0f} |"
        )
    ppo_rate = next(n / w for name, n, w, _ in results if name.startswith("ppo dummy"))
    default = PPOConfig().total_timesteps
    print(
        f"\nthe default budget ({default:,} steps, 200 updates) at the 'ppo dummy' rate: "
        f"{default / ppo_rate / 60:.1f} min"
    )


if __name__ == "__main__":
    main()
