"""Checks of the published M/M/50 and PE-1 numbers against queueing theory and finite FIFO runs.

    .venv/bin/python benchmarks/published_checks.py                 # ~15 s on one core
    .venv/bin/python benchmarks/published_checks.py --mm50-seeds 400 --pe1-seeds 100 --json out.json
    .venv/bin/python benchmarks/published_checks.py --rl 2:0.5:0.8,8:0.5:0.8,2:1:0.8,2:0.5:0

M/M/50 (preset MM50-20: ρ 0.99, f 0.2, τ 900 s, μ = −ln(1 − f)/τ, E[S] = 4033 s). Erlang C gives
the steady-state FIFO mean wait 1.834 E[S], so the published FIFO mean 923 s "implies" E[S] = 503 s
only if the published run was in steady state. The script simulates strict FIFO on fresh draws of
the preset at the given run lengths (every job measured, no warm-up: a run that starts empty, as a
published single run does) and reports, over the seeds, the interactive mean wait in units of
E[S] and the shape of the wait distribution (std / mean, max / mean: free of the time unit), next
to the published 923 / 552 / 2361 s. It then keeps the runs whose shape is within ``--match`` of the
published one and reports the E[S] those runs imply (923 s / their mean wait in E[S] units).

PE-1 (P 80, ρ 0.95, f 0.1). Erlang C and the steady-state FIFO mean W of the interactive jobs
(:func:`gridtrace.sim.fifo_class_responsiveness`), the load at which that W would be the thesis's
0.45, and strict FIFO over fresh 10,000-job draws (the first and last 500 jobs excluded, as in the
RL experiments): median and range of the interactive mean W, and the share of draws at or below
0.45; and LJF on the same draws.

RL (``--rl``, off by default). :func:`gridtrace.sim.rl.run_experiment` on PE-1 for each
``draws:lambda_s:gamma`` setting (frozen evaluation, baseline FIFO, the research's reward and the
DeepRM slowdown reward): the interactive W of each agent and its paired difference from FIFO.
The findings in ``gridtrace.sim.rl.PUBLISHED`` also used ``2:0.5:0.99``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize

from gridtrace.models import generate_preset_trace, get_preset
from gridtrace.sim import (
    erlang_c,
    erlang_c_mean_wait,
    fifo_class_responsiveness,
    relaxation_time,
    simulate,
)

logger = logging.getLogger("published_checks")

PUBLISHED_MM50 = {"wait_mean_s": 923.0, "wait_std_s": 552.0, "wait_max_s": 2361.0}
PUBLISHED_PE1_FIFO_W = 0.45


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median, 2.5 % and 97.5 % quantiles, min and max."""
    x = np.asarray(values, dtype=float)
    lo, med, hi = np.percentile(x, [2.5, 50.0, 97.5])
    return {
        "median": float(med),
        "p2_5": float(lo),
        "p97_5": float(hi),
        "min": float(x.min()),
        "max": float(x.max()),
    }


def fmt(s: dict[str, float], digits: int = 3) -> str:
    return (
        f"median {s['median']:.{digits}f}, 95 % range {s['p2_5']:.{digits}f}–"
        f"{s['p97_5']:.{digits}f} (min {s['min']:.{digits}f}, max {s['max']:.{digits}f})"
    )


def mm50_checks(seeds: int, sizes: Sequence[int], root_seed: int, match: float) -> dict[str, Any]:
    preset = get_preset("MM50-20")
    es = 1.0 / preset.service_rate
    c, rho = preset.cores, preset.rho
    per_es = erlang_c_mean_wait(c, rho * c, 1.0)
    cc = erlang_c(c, rho * c)
    theta_es = c * (1.0 - rho)  # rate of the conditional wait, per E[S]
    ss_std = math.sqrt(2.0 * cc - cc * cc) / theta_es
    out: dict[str, Any] = {
        "preset": preset.name,
        "cores": c,
        "rho": rho,
        "mean_service_s": es,
        "erlang_c": cc,
        "steady_wait_mean_per_es": per_es,
        "steady_wait_std_over_mean": ss_std / per_es,
        "published_implies_es_if_steady_s": PUBLISHED_MM50["wait_mean_s"] / per_es,
        "ours_steady_wait_mean_s": per_es * es,
        "published_mean_per_our_es": PUBLISHED_MM50["wait_mean_s"] / es,
        "relaxation_time_per_es": relaxation_time(c, rho, 1.0),
        "runs": {},
    }
    logger.info("== M/M/50 (%s): P %d, rho %.2f, E[S] = 1/mu = %.1f s", preset.name, c, rho, es)
    logger.info(
        "Erlang C: C(50, %.1f) = %.4f; E[Wq] = C / (c mu (1 - rho)) = %.4f E[S]; "
        "steady-state std/mean of the wait %.3f",
        rho * c,
        cc,
        per_es,
        ss_std / per_es,
    )
    logger.info(
        "published FIFO 923 s: E[S] = 923 / %.4f = %.1f s if in steady state; with our E[S] "
        "steady state is %.0f s, and 923 s = %.3f E[S]",
        per_es,
        out["published_implies_es_if_steady_s"],
        out["ours_steady_wait_mean_s"],
        out["published_mean_per_our_es"],
    )
    pub_shape = (
        PUBLISHED_MM50["wait_std_s"] / PUBLISHED_MM50["wait_mean_s"],
        PUBLISHED_MM50["wait_max_s"] / PUBLISHED_MM50["wait_mean_s"],
    )
    logger.info(
        "published shape: std/mean %.3f, max/mean %.3f; relaxation time ~ %.0f E[S]",
        *pub_shape,
        out["relaxation_time_per_es"],
    )
    for size in sizes:
        rows = []
        for seed in np.random.SeedSequence([root_seed, size]).spawn(seeds):
            trace = generate_preset_trace(preset, rng=seed, size=size)
            inter = simulate(trace, warmup_jobs=0, drain_jobs=0).summary["classes"]["interactive"]
            m = inter["wait_mean_s"]
            rows.append((m / es, inter["wait_std_s"] / m, inter["wait_max_s"] / m))
        r = np.asarray(rows)
        mean_es, std_ratio, max_ratio = r[:, 0], r[:, 1], r[:, 2]
        shaped = (np.abs(std_ratio / pub_shape[0] - 1.0) < match) & (
            np.abs(max_ratio / pub_shape[1] - 1.0) < match
        )
        span_es = size / (rho * c)
        run: dict[str, Any] = {
            "seeds": seeds,
            "span_per_es": span_es,
            "wait_mean_per_es": spread(mean_es),
            "std_over_mean": spread(std_ratio),
            "max_over_mean": spread(max_ratio),
            "share_at_or_below_published_with_our_es": float(
                np.mean(mean_es <= out["published_mean_per_our_es"])
            ),
            "share_at_or_below_steady": float(np.mean(mean_es <= per_es)),
            "shape_matched_runs": int(shaped.sum()),
        }
        logger.info(
            "-- %d jobs (span %.0f E[S] = %.2f relaxation times), %d seeds, FIFO from empty",
            size,
            span_es,
            span_es / out["relaxation_time_per_es"],
            seeds,
        )
        logger.info("interactive mean wait / E[S]: %s", fmt(run["wait_mean_per_es"]))
        logger.info("std / mean: %s", fmt(run["std_over_mean"]))
        logger.info("max / mean: %s", fmt(run["max_over_mean"]))
        logger.info(
            "share of runs at or below %.3f E[S] (923 s with our E[S]): %.3f; at or below the "
            "steady state %.3f E[S]: %.3f",
            out["published_mean_per_our_es"],
            run["share_at_or_below_published_with_our_es"],
            per_es,
            run["share_at_or_below_steady"],
        )
        for label, target in (
            ("our E[S]", out["published_mean_per_our_es"]),
            ("E[S] 503 s", per_es),
        ):
            near = np.abs(mean_es / target - 1.0) < 0.25
            if near.sum() >= 3:
                run[f"shape_near_{label}"] = {
                    "runs": int(near.sum()),
                    "std_over_mean": spread(std_ratio[near]),
                    "max_over_mean": spread(max_ratio[near]),
                }
                logger.info(
                    "runs whose mean is within 25 %% of 923 s under %s (%d): std/mean %s; "
                    "max/mean %s",
                    label,
                    int(near.sum()),
                    fmt(spread(std_ratio[near]), 2),
                    fmt(spread(max_ratio[near]), 2),
                )
        if shaped.sum() >= 3:
            implied = PUBLISHED_MM50["wait_mean_s"] / mean_es[shaped]
            run["shape_matched_implied_es_s"] = spread(implied)
            logger.info(
                "runs within %.0f %% of the published std/mean and max/mean: %d; the E[S] they "
                "imply (923 s / mean): %s",
                100 * match,
                int(shaped.sum()),
                fmt(spread(implied), 0),
            )
        out["runs"][str(size)] = run
    return out


def pe1_checks(seeds: int, root_seed: int) -> dict[str, Any]:
    preset = get_preset("PE-1")
    c, rho, mu, tau = preset.cores, preset.rho, preset.service_rate, preset.tau_s
    steady_w = fifo_class_responsiveness(c, rho, mu, 0.0, tau)
    rho_045 = optimize.brentq(
        lambda r: fifo_class_responsiveness(c, r, mu, 0.0, tau) - PUBLISHED_PE1_FIFO_W,
        rho,
        0.9999,
    )
    out: dict[str, Any] = {
        "preset": preset.name,
        "cores": c,
        "rho": rho,
        "service_rate": mu,
        "arrival_rate": preset.arrival_rate,
        "erlang_c": erlang_c(c, rho * c),
        "steady_wait_mean_s": erlang_c_mean_wait(c, preset.arrival_rate, mu),
        "steady_interactive_w": steady_w,
        "steady_batch_w": fifo_class_responsiveness(c, rho, mu, tau),
        "rho_for_published_fifo_w": rho_045,
        "relaxation_time_per_es": relaxation_time(c, rho, 1.0),
    }
    logger.info(
        "== PE-1: P %d, rho %.2f, mu %.4e, lambda %.4e, E[S] %.0f s",
        c,
        rho,
        mu,
        preset.arrival_rate,
        1 / mu,
    )
    logger.info(
        "Erlang C: C = %.4f, E[Wq] = %.1f s; steady-state FIFO mean W: interactive %.4f, batch "
        "%.4f; interactive W would be 0.45 at rho %.4f; relaxation time ~ %.0f E[S]",
        out["erlang_c"],
        out["steady_wait_mean_s"],
        steady_w,
        out["steady_batch_w"],
        rho_045,
        out["relaxation_time_per_es"],
    )
    ws, batch, ljf_w, ljf_wait = [], [], [], []
    for seed in np.random.SeedSequence([root_seed, 80]).spawn(seeds):
        trace = generate_preset_trace(preset, rng=seed)
        classes = simulate(trace).summary["classes"]
        ws.append(classes["interactive"]["responsiveness_mean"])
        batch.append(classes["batch"]["responsiveness_mean"])
        ljf = simulate(trace, policy="ljf").summary["classes"]["interactive"]
        ljf_w.append(ljf["responsiveness_mean"])
        ljf_wait.append(ljf["wait_mean_s"])
    out["fifo_interactive_w"] = spread(ws)
    out["fifo_batch_w"] = spread(batch)
    out["share_at_or_below_published"] = float(np.mean(np.asarray(ws) <= PUBLISHED_PE1_FIFO_W))
    out["seeds"] = seeds
    logger.info("FIFO interactive mean W over %d draws: %s", seeds, fmt(out["fifo_interactive_w"]))
    logger.info("FIFO batch mean W: %s", fmt(out["fifo_batch_w"]))
    logger.info("share of draws at or below 0.45: %.3f", out["share_at_or_below_published"])
    out["ljf_interactive_w"] = spread(ljf_w)
    out["ljf_interactive_wait_s"] = spread(ljf_wait)
    logger.info(
        "LJF (what the RL with the research's reward resembles): interactive W %s; interactive "
        "mean wait %s s",
        fmt(out["ljf_interactive_w"]),
        fmt(out["ljf_interactive_wait_s"], 0),
    )
    return out


def rl_checks(settings: Sequence[str], eval_seeds: int, root_seed: int) -> dict[str, Any]:
    """RL on PE-1 against FIFO on paired draws, one experiment per ``draws:lambda_s:gamma``."""
    from gridtrace.sim.rl import ExperimentConfig, run_experiment

    out: dict[str, Any] = {}
    for setting in settings:
        draws, lam, gamma = setting.split(":")
        config = ExperimentConfig(
            root_seed=root_seed,
            train_draws=int(draws),
            eval_seeds=eval_seeds,
            modes=("frozen",),
            baselines=("fifo",),
            lambda_s=float(lam),
            rewards=("w-f", "slowdown"),
            agent_options={"gamma": float(gamma)},
        )
        runs = run_experiment("PE-1", config).runs.to_pandas()
        fifo = runs[runs.variant == "fifo"].set_index("seed_index")
        rows: dict[str, Any] = {}
        logger.info(
            "== RL on PE-1: %s training draws, lambda_s %s, gamma %s, %d paired draws (frozen)",
            draws,
            lam,
            gamma,
            eval_seeds,
        )
        for variant in sorted(set(runs.variant) - {"fifo"}):
            v = runs[runs.variant == variant].set_index("seed_index")
            diff = (v.interactive_w_mean - fifo.interactive_w_mean).to_numpy()
            rows[variant] = {
                "interactive_w": spread(v.interactive_w_mean.to_numpy()),
                "interactive_wait_s": spread(v.interactive_wait_mean_s.to_numpy()),
                "all_w": spread(v.all_w_mean.to_numpy()),
                "paired_diff_vs_fifo": spread(diff),
                "better_than_fifo": int((diff > 0).sum()),
            }
            logger.info(
                "%s: interactive W median %.3f (FIFO %.3f); paired difference %s; better on "
                "%d/%d; interactive wait median %.0f s; all-jobs W median %.3f (FIFO %.3f)",
                variant,
                rows[variant]["interactive_w"]["median"],
                float(fifo.interactive_w_mean.median()),
                fmt(rows[variant]["paired_diff_vs_fifo"]),
                rows[variant]["better_than_fifo"],
                eval_seeds,
                rows[variant]["interactive_wait_s"]["median"],
                rows[variant]["all_w"]["median"],
                float(fifo.all_w_mean.median()),
            )
        out[setting] = rows
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mm50-seeds", type=int, default=200)
    parser.add_argument(
        "--mm50-sizes", default="6000", help="comma-separated run lengths (jobs), e.g. 2000,6000"
    )
    parser.add_argument("--pe1-seeds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=2026, help="root seed")
    parser.add_argument(
        "--match", type=float, default=0.15, help="relative tolerance of the shape match"
    )
    parser.add_argument(
        "--rl",
        default="",
        help=(
            "also run the RL on PE-1: comma-separated draws:lambda_s:gamma settings, e.g. "
            "2:0.5:0.8,8:0.5:0.8 (about 1-3 min of CPU each at 10 draws)"
        ),
    )
    parser.add_argument("--rl-seeds", type=int, default=10, help="RL evaluation draws")
    parser.add_argument("--rl-root-seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the numbers to this JSON file")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sizes = [int(s) for s in args.mm50_sizes.split(",")]
    result = {
        "mm50": mm50_checks(args.mm50_seeds, sizes, args.seed, args.match),
        "pe1": pe1_checks(args.pe1_seeds, args.seed),
    }
    if args.rl:
        result["rl"] = rl_checks(args.rl.split(","), args.rl_seeds, args.rl_root_seed)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
