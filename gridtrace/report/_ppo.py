"""The PPO page: DeepRM's multi-resource setup, PPO against the baselines at every load.

:func:`render_ppo_report` writes ``reports/ppo-deeprm/index.html`` from what the pipeline's
``ppo_train`` and ``ppo_evaluate`` rules wrote (the agents' ``config.json`` and the
``evaluation.json`` of each load): a verdict, the learning curve, mean slowdown against load for
every policy (the paper's figure), a table per load, and the published result beside ours.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError
from gridtrace.models import DeepRMWorkload
from gridtrace.report import _figures as figures
from gridtrace.report._render import _environment, _scoped_svg, _write

__all__ = ["PUBLISHED_PPO", "render_ppo_report", "render_rlsched_ppo_report"]

logger = library_logger(__name__)

PUBLISHED_PPO: dict[float, float] = {1.0: -0.45, 1.9: -0.54}
"""The paper's PPO mean slowdown relative to SJF, by offered load."""

_REASON_COMMON = (
    "10 units per resource type, as in DeepRM's code; the paper's training budget is not "
    "stated, ours is {budget} steps at this load"
)
_REASON_MAX = (
    "190 % is unreachable with Bernoulli arrivals (at most a job per step): the highest load is "
    "{max_pct:.1f} %, so ours is at {max_pct:.1f} %; "
)


def _pct(x: float | None, *, sign: bool = True) -> str:
    if x is None or not math.isfinite(x):
        return "n/a"
    if not sign:
        return f"{100 * x:.1f} %"
    return f"{100 * x:+.0f} %".replace("-", "\u2212")  # a true minus sign, as the paper prints


def _load_pct(load: float) -> str:
    return (
        f"{100 * load:.1f} %"
        if abs(100 * load - round(100 * load)) > 1e-9
        else f"{100 * load:.0f} %"
    )


def _interval(row: Mapping[str, Any], key: str, *, percent: bool) -> str:
    mean, low, high = row.get(key), row.get(f"{key}_low"), row.get(f"{key}_high")
    if mean is None:
        return "n/a"
    if percent:
        return f"{_pct(mean)} [{_pct(low)}, {_pct(high)}] n={row.get('sequences')}"
    lo = "n/a" if low is None else f"{low:.2f}"
    hi = "n/a" if high is None else f"{high:.2f}"
    return f"{mean:.2f} [{lo}, {hi}] n={row.get('sequences')}"


def _load_of(config: Mapping[str, Any]) -> float:
    return float(config["multires"]["workload"]["load"])


def render_ppo_report(
    configs: Sequence[Mapping[str, Any]],
    evaluations: Sequence[Mapping[str, Any]],
    out_path: str | PathLike[str],
) -> dict[str, Any]:
    """Write the PPO page and return its entry for the index page.

    Parameters
    ----------
    configs : sequence of mapping
        Each trained agent's ``config.json`` (:func:`gridtrace.sim.rl.save_ppo`), one per load.
    evaluations : sequence of mapping
        Each load's ``evaluation.json`` (``gridtrace ppo evaluate`` or the pipeline's
        ``ppo_evaluate``): ``summary`` rows of :func:`gridtrace.sim.rl.summarise_multires`.
    out_path : path
        The HTML file to write (the pipeline's ``reports/ppo-deeprm/index.html``).

    Returns
    -------
    dict
        ``title``, ``href`` (relative to the reports folder) and ``verdict`` (lines of text).

    Raises
    ------
    ConfigError
        If there is no evaluation, or one lacks PPO or SJF.
    """
    summary = [dict(r) for e in evaluations for r in e.get("summary", [])]
    if not summary:
        raise ConfigError("the PPO page needs at least one evaluation with a summary")
    loads = sorted({float(r["load"]) for r in summary})
    by = {(float(r["load"]), str(r["policy"])): r for r in summary}
    for load in loads:
        for name in ("ppo", "sjf"):
            if (load, name) not in by:
                raise ConfigError(f"the evaluation at load {load:g} has no {name} row")
    trained = {_load_of(c): c for c in configs}
    workload = next(iter(configs), {}).get("multires", {}).get("workload", {"load": 1.0})
    max_load = DeepRMWorkload(**workload).max_load

    per_load = []
    for load in loads:
        ppo, sjf = by[(load, "ppo")], by[(load, "sjf")]
        rows = [r for (x, _), r in by.items() if x == load]
        best = min(rows, key=lambda r: float(r["mean_slowdown"]))
        config = trained.get(load, {})
        per_load.append(
            {
                "load": _load_pct(load),
                "ppo": _interval(ppo, "mean_slowdown", percent=False),
                "sjf": _interval(sjf, "mean_slowdown", percent=False),
                "best": f"{best['policy']} {float(best['mean_slowdown']):.2f}",
                "vs_sjf": _interval(ppo, "slowdown_vs_sjf", percent=True),
                "steps": config.get("timesteps"),
                "seconds": (
                    f"{float(config['train_seconds']):.1f} s"
                    if config.get("train_seconds") is not None
                    else "—"
                ),
                "unfinished": ppo.get("unfinished", 0),
            }
        )

    side = []
    for published_load, published in PUBLISHED_PPO.items():
        ours_load = min(published_load, max_load)
        found = next((x for x in loads if abs(x - ours_load) < 1e-6), None)
        reason = ""
        if published_load > max_load:
            reason = _REASON_MAX.format(max_pct=100 * max_load)
        budget = trained.get(found, {}).get("timesteps") if found is not None else None
        reason += _REASON_COMMON.format(budget=f"{budget:,}" if budget else "no")
        if found is None:
            side.append(
                {
                    "setting": f"PPO vs SJF, {_load_pct(published_load)} load",
                    "published_load": _load_pct(published_load),
                    "published": _pct(published),
                    "ours_load": _load_pct(ours_load),
                    "ours": "not run (load not configured)",
                    "difference": "—",
                    "reason": reason,
                }
            )
            continue
        row = by[(found, "ppo")]
        mean = row.get("slowdown_vs_sjf")
        diff = (
            "n/a"
            if mean is None
            else f"{100 * (float(mean) - published):+.0f} percentage points".replace("-", "\u2212")
        )
        side.append(
            {
                "setting": f"PPO vs SJF, {_load_pct(published_load)} load",
                "published_load": _load_pct(published_load),
                "published": _pct(published),
                "ours_load": _load_pct(found),
                "ours": _interval(row, "slowdown_vs_sjf", percent=True),
                "difference": diff,
                "reason": reason,
            }
        )

    verdict = _verdict(loads, by, trained, side)
    curves = [
        (_load_pct(load), trained[load].get("learning_curve") or []) for load in sorted(trained)
    ]
    figs = {
        "curve": _scoped_svg(figures.ppo_learning_curve_svg(curves), "fig-curve"),
        "loads": _scoped_svg(figures.slowdown_vs_load_svg(summary), "fig-loads"),
    }
    any_config = next(iter(trained.values()), {})
    html = (
        _environment()
        .get_template("ppo.html.j2")
        .render(
            verdict=verdict,
            per_load=per_load,
            side=side,
            figures=figs,
            ppo=any_config.get("ppo", {}),
            multires=any_config.get("multires", {}),
            versions=any_config.get("versions", {}),
            sequences=min(int(r.get("sequences", 0)) for r in summary),
            max_load=_load_pct(max_load),
        )
    )
    _write(Path(out_path), html)
    logger.info("wrote the PPO page (%d loads) to %s", len(loads), out_path)
    return {
        "title": "PPO on DeepRM's multi-resource setup",
        "href": "ppo-deeprm/index.html",
        "verdict": verdict,
    }


def _verdict(
    loads: Sequence[float],
    by: Mapping[tuple[float, str], Mapping[str, Any]],
    trained: Mapping[float, Mapping[str, Any]],
    side: Sequence[Mapping[str, str]],
) -> list[str]:
    """At most five lines, numbers first."""
    lines = [
        f"{s['ours'].split(' [')[0]} mean slowdown vs SJF at {s['ours_load']} "
        f"(published {s['published']} at {s['published_load']})"
        for s in side
        if not s["ours"].startswith("not run")
    ]
    wins = sum(1 for x in loads if (by[(x, "ppo")].get("slowdown_vs_sjf_high") or math.inf) < 0)
    lines.append(
        f"{wins} of {len(loads)} loads: PPO's mean slowdown below SJF's with 95 % confidence"
    )
    best = [
        min((r for (y, _), r in by.items() if y == x), key=lambda r: float(r["mean_slowdown"]))
        for x in loads
    ]
    lines.append(
        "Lowest mean slowdown: "
        + ", ".join(f"{r['policy']} at {_load_pct(x)}" for x, r in zip(loads, best, strict=True))
    )
    steps = sorted({int(c.get("timesteps", 0)) for c in trained.values()})
    if steps:
        budget = ", ".join(f"{s:,}" for s in steps)
        lines.append(f"{budget} training steps per load (the paper does not state its budget)")
    return lines[:5]


# --- RLScheduler's PPO setup (issue 15, item 3) ------------------------------------------------

_RLSCHED_REASON = (
    "RLScheduler trained {published_budget}; ours {steps} steps ({settings}). Same windows, "
    "loading rules and heuristic columns as RLScheduler's table"
)


def _bsld(p: Mapping[str, Any]) -> str:
    mean, low, high = p.get("mean"), p.get("low"), p.get("high")
    if mean is None:
        return "n/a"
    if low is None or high is None:
        return f"{float(mean):.2f}"
    return f"{float(mean):.2f} [{float(low):.2f}, {float(high):.2f}]"


def render_rlsched_ppo_report(
    configs: Sequence[Mapping[str, Any]],
    evaluations: Sequence[Mapping[str, Any]],
    out_path: str | PathLike[str],
) -> dict[str, Any]:
    """Write the page of RLScheduler's PPO setup and return its entry for the index page.

    Parameters
    ----------
    configs : sequence of mapping
        Each trained agent's ``config.json`` (:func:`gridtrace.sim.rl.save_rlsched_ppo`).
    evaluations : sequence of mapping
        ``evaluation.json`` files of ``gridtrace ppo evaluate --setup rlscheduler``: each has
        ``evaluations``, one per evaluated trace (:func:`gridtrace.sim.rl.evaluate_rlsched_ppo`).
    out_path : path
        The HTML file (the pipeline's ``reports/ppo-rlscheduler/index.html``).

    Returns
    -------
    dict
        ``title``, ``href`` and ``verdict`` (lines of text).

    Raises
    ------
    ConfigError
        If there is no evaluation.
    """
    evs = [dict(e) for doc in evaluations for e in doc.get("evaluations", [])]
    if not evs:
        raise ConfigError("the RLScheduler PPO page needs at least one evaluation")

    def agent(e: Mapping[str, Any]) -> str:
        return f"{e['trained_on']}, {'with' if e['backfill'] else 'no'} backfilling"

    steps_of = {(str(c.get("trace")), bool(c.get("ppo", {}).get("backfill"))): c for c in configs}
    side, tables, verdict = [], [], []
    for e in evs:
        by = {str(p["label"]): p for p in e["policies"]}
        tables.append(
            {
                "title": f"{e['trace']}: agent trained on {agent(e)}",
                "rows": [{"label": k, "value": _bsld(p)} for k, p in by.items()],
            }
        )
        if e["trace"] != e["trained_on"]:
            continue
        config = steps_of.get((str(e["trained_on"]), bool(e["backfill"])), {})
        ppo = config.get("ppo", {})
        settings = (
            f"{ppo.get('trajectories')} episodes per update, {ppo.get('n_epochs')} epochs, "
            f"minibatch {ppo.get('batch_size') or 'all'}"
        )
        published = e.get("published_rl")
        side.append(
            {
                "trace": e["trace"],
                "backfill": "yes" if e["backfill"] else "no",
                "published": "—" if published is None else f"{float(published):.2f}",
                "ours": _bsld(by["PPO"]),
                "sjf": _bsld(by.get("SJF", {})),
                "f1": _bsld(by.get("F1", {})),
                "steps": config.get("timesteps"),
                "reason": _RLSCHED_REASON.format(
                    published_budget="for thousands of epochs of 100 episodes",
                    steps=f"{int(config.get('timesteps') or 0):,}",
                    settings=settings,
                ),
            }
        )
        mean = by["PPO"].get("mean")
        if mean is not None:
            verdict.append(
                f"{e['trace']} ({'with' if e['backfill'] else 'no'} backfilling): PPO "
                f"{float(mean):.2f} after {int(config.get('timesteps') or 0):,} steps "
                f"(published {side[-1]['published']}; SJF {side[-1]['sjf'].split(' [')[0]}, "
                f"F1 {side[-1]['f1'].split(' [')[0]})"
            )
    agents = sorted({agent(e) for e in evs})
    eval_traces = sorted({str(e["trace"]) for e in evs})
    cell = {(agent(e), str(e["trace"])): _bsld(e["policies"][0]) for e in evs}
    matrix = [{"agent": a, "cells": [cell.get((a, t), "—") for t in eval_traces]} for a in agents]
    curves = [
        (
            f"{c.get('trace')}{' (backfilling)' if c.get('ppo', {}).get('backfill') else ''}",
            c.get("learning_curve") or [],
        )
        for c in configs
    ]
    figs = {"curve": _scoped_svg(figures.ppo_learning_curve_svg(curves), "fig-curve")}
    any_config = next(iter(configs), {})
    html = (
        _environment()
        .get_template("ppo_rlscheduler.html.j2")
        .render(
            verdict=verdict[:5] or ["no agent was evaluated on its own training trace"],
            side=side,
            tables=tables,
            matrix=matrix,
            eval_traces=eval_traces,
            figures=figs,
            ppo=any_config.get("ppo", {}),
            versions=any_config.get("versions", {}),
            window=evs[0].get("window", 1024),
            sequence=any_config.get("ppo", {}).get("sequence", 256),
        )
    )
    _write(Path(out_path), html)
    logger.info("wrote the RLScheduler PPO page (%d evaluations) to %s", len(evs), out_path)
    return {
        "title": "PPO on RLScheduler's setup",
        "href": "ppo-rlscheduler/index.html",
        "verdict": verdict[:5],
    }
