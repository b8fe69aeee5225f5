"""The contention section of a workload report: what a researcher wants to see of each regime.

A contention experiment (:func:`gridtrace.sim.rl.run_contention`) pits the tuned RL agent
against information-matched baselines on the test part of a segment at one offered load (a
*regime*). The section shows, per regime: the facts of the regime, RL's margin to the best
baseline per metric, every pathology flagged and where it happens, and the figures — learning
curves, action mix over time, wait CDFs and inverse W CDFs per class for the agents and the
baselines on one figure, F over sliding daily and weekly windows, interactive mean W per test
window against FIFO's interval, interactive waits over a day on the time axis, and, for elastic
runs, pool size and utilisation over time with the spans at the floor shaded.

Everything is read from the experiment's ``summary.json`` (``series`` holds the report series;
a summary written before they existed gets the figures it can and a note on the others), plus
optionally the per-run rows of ``runs.parquet`` under the summary key ``runs`` (a list of row
mappings; see :data:`RUN_COLUMNS`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from gridtrace.report import _figures as figures

__all__ = ["CONTENTION_FLAGS", "FULL_REGIMES", "RUN_COLUMNS", "contention_section"]

CONTENTION_FLAGS: dict[str, str] = {
    "POOL_AT_FLOOR": (
        "the elastic pool held at most its floor for more than a tenth of the test period: a "
        "provisioner that starves the site to score on utilisation"
    ),
    "INTERACTIVE_WAIT_OVER_DAY": "at least one interactive job waited more than a day",
    "W_BELOW_FIFO": (
        "interactive mean W below the lower end of strict FIFO's 95 % interval: worse than the "
        "site's plainest scheduler"
    ),
}
"""Flag code → what it means, in plain words."""

RUN_COLUMNS: tuple[str, ...] = (
    "variant",
    "seed_index",
    "provisioning",
    "interactive_w_mean",
    "interactive_wait_mean_s",
    "interactive_wait_max_s",
    "all_w_mean",
    "fairness_daily_mean",
    "utilisation",
    "provisioned_core_h",
)
"""The columns of ``runs.parquet`` the section shows (read only these)."""

_METRICS: dict[str, str] = {
    "interactive_w_mean": "interactive mean W",
    "all_w_mean": "all jobs' mean W",
    "fairness_daily_mean": "F, daily windows",
    "fairness_weekly_mean": "F, weekly windows",
    "interactive_wait_mean_s": "interactive mean wait (s)",
    "provisioned_core_h": "core-hours provisioned",
}
FULL_REGIMES = 3
"""Regimes drawn with every figure in one report (see :func:`contention_section`)."""

_RL = ("rl", "rl-elastic")
_HOW_ORDER = {"as-logged": 0, "compress": 1, "shrink": 2}
_NO_SERIES = (
    "not recorded in this summary (written before run_contention kept the report series; "
    "rerun the rl_contention rule)"
)


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    x = float(value)
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}" if abs(x) < 1 else f"{x:.{digits + 1}g}"


def _interval(entry: Mapping[str, Any] | None) -> str:
    if not entry or entry.get("mean", entry.get("value")) is None:
        return "—"
    mean = entry.get("mean", entry.get("value"))
    lo, hi = entry.get("ci_low"), entry.get("ci_high")
    n = entry.get("n")
    text = _fmt(mean)
    if lo is not None and hi is not None:
        text += f" [{_fmt(lo)}, {_fmt(hi)}]"
    if n is not None:
        text += f" n={n}"
    return text


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", label)


def _seeds_text(seeds: Sequence[int | None], total: int | None) -> str:
    known = sorted({s for s in seeds if s is not None})
    if not known:
        return "whole period"
    listed = ", ".join(str(s) for s in known)
    return f"seed{'s' if len(known) > 1 else ''} {listed}" + (f" of {total}" if total else "")


def _flags(summary: Mapping[str, Any], fig_ids: Mapping[str, str]) -> list[dict[str, Any]]:
    seeds_total = (summary.get("protocol") or {}).get("config", {}).get("seeds")
    out = []
    for policy, raised in (summary.get("flags") or {}).items():
        by_code: dict[str, list[Mapping[str, Any]]] = {}
        for flag in raised:
            by_code.setdefault(str(flag["code"]), []).append(flag)
        for code, found in by_code.items():
            seeds = [f.get("seed_index") for f in found]
            total = seeds_total if policy in _RL else 1
            out.append(
                {
                    "policy": policy,
                    "code": code,
                    "meaning": CONTENTION_FLAGS.get(code, ""),
                    "message": str(found[0].get("message", "")),
                    "runs": _seeds_text(seeds, total) if policy in _RL else "its one run",
                    "where": fig_ids.get(code),
                }
            )
    return out


def _margins(summary: Mapping[str, Any]) -> list[dict[str, str]]:
    metrics = summary.get("metrics") or {}
    best = summary.get("best_baseline") or {}
    margins = summary.get("rl_margin") or {}
    rows = []
    for metric, name in _METRICS.items():
        if metric not in metrics:
            continue
        for rl in _RL:
            if rl not in metrics[metric]:
                continue
            group = best.get("elastic", {}) if rl == "rl-elastic" else best
            b = group.get(metric) or {}
            margin = (margins.get(metric) or {}).get(rl) or {}
            baseline = b.get("policy")
            rows.append(
                {
                    "metric": name,
                    "agent": rl,
                    "agent_value": _interval(metrics[metric][rl]),
                    "baseline": str(baseline) if baseline else "—",
                    "baseline_value": _interval(metrics[metric].get(baseline)) if baseline else "—",
                    "margin": _interval(margin),
                    "outcome": str(margin.get("outcome") or "—"),
                }
            )
    return rows


def _facts(summary: Mapping[str, Any]) -> dict[str, str]:
    reg = summary.get("regime") or {}
    test = (summary.get("split") or {}).get("test") or {}
    config = (summary.get("protocol") or {}).get("config") or {}
    period = f"{test.get('jobs', 0):,d} jobs"
    if test.get("start_utc"):
        period += f", {str(test['start_utc'])[:16]} to {str(test.get('end_utc', ''))[:16]} UTC"
    facts = {
        "Pool P": f"{reg.get('cores', '—')} cores ({reg.get('pool_source', '—')})",
        "Offered load": (
            f"{_fmt(reg.get('offered_load'))} overall, {_fmt(reg.get('offered_load_test'))} on "
            "the test part"
            + (
                f" (target {_fmt(reg.get('target_load'))}, by {reg.get('how')})"
                if reg.get("target_load") is not None
                else " (as logged)"
            )
        ),
        "Test period": period,
        "Chosen agent": (
            f"{(summary.get('tuning') or {}).get('chosen', '—')}, "
            f"{config.get('seeds', '—')} seed(s); intervals over {config.get('windows', '—')} "
            "test windows"
        ),
        "Training": str((summary.get("protocol") or {}).get("training", "—")),
    }
    return facts


def _regime_figures(
    summary: Mapping[str, Any],
    prefix: str,
    flags: Sequence[Mapping[str, Any]],
    *,
    full: bool = True,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Return the figures of one regime and notes on those that cannot be drawn.

    With ``full`` False only the figures that locate a flagged pathology are drawn.
    """
    series = summary.get("series") or {}
    test = (summary.get("split") or {}).get("test") or {}
    origin = float(series.get("time_origin_s", test.get("start_s", 0.0)) or 0.0)
    figs: list[dict[str, Any]] = []
    missing: list[str] = []
    flagged = {(f["policy"], f["code"]) for f in flags}

    codes = {c for _, c in flagged}
    locating = {
        "windows": "W_BELOW_FIFO",
        "long-waits": "INTERACTIVE_WAIT_OVER_DAY",
        "pool": "POOL_AT_FLOOR",
    }

    def wanted(name: str) -> bool:
        return full or locating.get(name) in codes

    def add(name: str, caption: str, svg: str) -> None:
        figs.append({"id": f"{prefix}-{name}", "caption": caption, "svg": figures.inline_svg(svg)})

    curves = summary.get("learning_curves") or {}
    if not wanted("learning"):
        pass
    elif curves.get("seeds"):
        add(
            "learning",
            f"Learning curves of the chosen agent ({curves.get('candidate', '?')}), one line per "
            "agent seed, on the train part: the return (sum of rewards) and the interactive and "
            "all jobs' mean W of each episode. Shaded: pre-training episodes, where a rule "
            "chose and the agent only learned.",
            figures.learning_curves_svg(curves["seeds"]),
        )
    else:
        missing.append("learning curves: none in this summary")
    mix = summary.get("action_mix") or {}
    if mix.get("policies") and wanted("action-mix"):
        add(
            "action-mix",
            "Action mix over the test period: the share of elections that chose an interactive "
            "job, per time bin, for each policy (RL: its first seed). A gap is a bin without "
            "elections.",
            figures.action_mix_svg(
                mix["time_s"],
                {k: v["interactive_share"] for k, v in mix["policies"].items()},
                origin_s=origin,
            ),
        )
    dist = series.get("distributions")
    if not wanted("cdfs"):
        pass
    elif dist:
        add(
            "cdfs",
            "Wait CDFs (top) and inverse CDFs of W (bottom) per class, the agents and the "
            "baselines on the same axes: measured jobs of the test part, all seeds pooled. "
            "Further right on top is longer waiting; lower at the bottom is worse W (the bottom "
            "panels zoom in on the share of jobs with W below 1).",
            figures.class_distributions_svg(series["quantile_probs"], dist),
        )
    else:
        missing.append(f"wait and W distributions: {_NO_SERIES}")
    windows = series.get("windows")
    if windows and wanted("windows"):
        fifo = ((summary.get("metrics") or {}).get("interactive_w_mean") or {}).get("fifo") or {}
        below = [p for p, c in flagged if c == "W_BELOW_FIFO"]
        add(
            "windows",
            "Interactive mean W in each test window (the units of the intervals) per policy "
            "(RL: mean over its seeds); dotted: the lower end of FIFO's 95 % interval."
            + (
                " Circled in red: windows below it of a policy flagged W_BELOW_FIFO ("
                + ", ".join(below)
                + ")."
                if below
                else ""
            ),
            figures.window_w_svg(
                windows["edges_s"],
                windows["interactive_w_mean"],
                origin_s=origin,
                fifo_low=fifo.get("ci_low"),
                flagged=below,
            ),
        )
    fair = series.get("fairness_windows")
    if not wanted("fairness"):
        pass
    elif fair:
        add(
            "fairness",
            "Fairness F over sliding daily (1-day windows moved by 1 h) and weekly (7-day "
            "windows moved by 1 day) windows of the test part, at each window's start, per policy "
            "(RL: first seed). "
            "Identical lines mean the policies served the VOs alike.",
            figures.windowed_fairness_svg(fair, origin_s=origin),
        )
    else:
        missing.append(f"F over sliding windows: {_NO_SERIES}")
    long_waits = {k: v for k, v in (series.get("long_waits") or {}).items() if v}
    waited = sorted({p for p, c in flagged if c == "INTERACTIVE_WAIT_OVER_DAY"})
    if long_waits and wanted("long-waits"):
        add(
            "long-waits",
            "INTERACTIVE_WAIT_OVER_DAY located: every interactive job that waited more than a "
            "day (the dashed line), at its submit time, per policy and run (the longest 200 per "
            f"run). Flagged: {', '.join(waited) or 'none'}.",
            figures.long_waits_svg(long_waits, origin_s=origin),
        )
    elif waited and "long_waits" not in series:
        missing.append(f"where the interactive waits over a day happen: {_NO_SERIES}")
    pools = series.get("pool") or {}
    elastic = summary.get("elastic") or {}
    if pools and wanted("pool"):
        at_floor = sorted({p for p, c in flagged if c == "POOL_AT_FLOOR"})
        spans: list[Sequence[float]] = []
        for label in at_floor:
            for run in (pools.get(label) or {}).get("floor_spans") or []:
                if run.get("seed_index") == 0:
                    spans += run.get("spans") or []
        add(
            "pool",
            "Elastic runs: the pool size (mean per time bin, band from its minimum to its "
            "maximum; dashed: the floor; dotted: P) and the utilisation (busy over provisioned "
            "core-seconds) over the test period (RL: first seed). "
            + (
                "Shaded: the spans the pool held its floor (POOL_AT_FLOOR, first run of "
                + ", ".join(at_floor)
                + ")."
                if at_floor
                else "No run was flagged POOL_AT_FLOOR."
            ),
            figures.pool_series_svg(
                pools,
                origin_s=origin,
                pool_cores=summary.get("cores"),
                floor_spans=spans,
                floor_label="at the floor (POOL_AT_FLOOR): " + ", ".join(at_floor),
            ),
        )
    elif elastic and wanted("pool"):
        missing.append(f"pool size and utilisation over time: {_NO_SERIES}")
    return figs, missing


def _runs_rows(summary: Mapping[str, Any]) -> list[dict[str, str]]:
    rows = []
    for row in summary.get("runs") or []:
        rows.append(
            {
                "variant": str(row.get("variant", "")),
                "seed": str(row.get("seed_index", "")),
                "provisioning": str(row.get("provisioning", "")),
                **{
                    c: _fmt(row.get(c))
                    for c in RUN_COLUMNS
                    if c not in ("variant", "seed_index", "provisioning")
                },
            }
        )
    return rows


def _order(summary: Mapping[str, Any]) -> tuple[str, int, float]:
    reg = summary.get("regime") or {}
    how = str(reg.get("how", ""))
    target = reg.get("target_load")
    return (str(summary.get("workload", "")), _HOW_ORDER.get(how, 9), float(target or 0.0))


def _priority(summary: Mapping[str, Any]) -> tuple[int, int, float]:
    """Sort key of the regimes drawn in full: most flags, then as logged, then highest load."""
    raised = sum(len(v) for v in (summary.get("flags") or {}).values())
    reg = summary.get("regime") or {}
    return (-raised, 0 if reg.get("how") == "as-logged" else 1, -float(reg.get("target_load") or 0))


def contention_section(
    summaries: Sequence[Mapping[str, Any]], *, full_regimes: int = FULL_REGIMES
) -> dict[str, Any] | None:
    """Build the contention section of a workload report, one part per regime.

    Parameters
    ----------
    summaries : sequence of mapping
        The workload's contention ``summary.json`` files (schema
        ``gridtrace.rl-experiment/2``), in any order; each may carry the per-run rows of its
        ``runs.parquet`` under ``runs`` (a list of mappings with the :data:`RUN_COLUMNS`).
    full_regimes : int, default FULL_REGIMES
        The regimes drawn with every figure (those with the most flags, then the as-logged
        one, then the highest loads); the others get their facts, flags, margins and the
        figures that locate their flags, so the page stays small with a dozen regimes.

    Returns
    -------
    dict or None
        None without summaries; else ``regimes``, a list (ordered by how the load was set, then
        by target load) of ``id``, ``label``, ``title``, ``verdict``, ``facts`` (name → text),
        ``margins`` (rows: metric, agent and its interval, best baseline and its interval, RL's
        margin and outcome), ``flags`` (rows: policy, code, meaning, message, runs, ``where``:
        the id of the figure that locates it, or None), ``figures`` (``{"id", "caption",
        "svg"}``), ``missing`` (what could not be drawn, and why) and ``runs`` (per-run rows,
        may be empty), ``full`` (drawn with every figure); and ``flag_count``, the flags raised
        over all regimes.
    """
    if not summaries:
        return None
    ranked = sorted(range(len(summaries)), key=lambda i: _priority(summaries[i]))
    full = {id(summaries[i]) for i in ranked[: max(full_regimes, 0)]}
    regimes: list[dict[str, Any]] = []
    for summary in sorted(summaries, key=_order):
        reg = summary.get("regime") or {}
        label = str(reg.get("label", "regime"))
        prefix = f"contention-{_slug(label)}"
        fig_ids = {
            "POOL_AT_FLOOR": f"{prefix}-pool",
            "INTERACTIVE_WAIT_OVER_DAY": f"{prefix}-long-waits",
            "W_BELOW_FIFO": f"{prefix}-windows",
        }
        flags = _flags(summary, fig_ids)
        drawn_in_full = id(summary) in full
        figs, missing = _regime_figures(summary, prefix, flags, full=drawn_in_full)
        if not drawn_in_full:
            missing.append(
                f"the other figures of this regime, to keep the page small (the {full_regimes} "
                "regimes with the most flags carry every figure)"
            )
        drawn = {f["id"] for f in figs}
        for flag in flags:
            if flag["where"] not in drawn:
                flag["where"] = None
        target = reg.get("target_load")
        title = (
            f"{label}: offered load {_fmt(target)} by {reg.get('how')} on {reg.get('cores')} cores"
            if target is not None
            else f"{label}: the trace as logged on {reg.get('cores')} cores"
        )
        regimes.append(
            {
                "id": prefix,
                "label": label,
                "title": title,
                "verdict": str(summary.get("verdict", "")),
                "facts": _facts(summary),
                "margins": _margins(summary),
                "flags": flags,
                "figures": figs,
                "missing": missing,
                "runs": _runs_rows(summary),
                "full": drawn_in_full,
            }
        )
    return {"regimes": regimes, "flag_count": sum(len(r["flags"]) for r in regimes)}
