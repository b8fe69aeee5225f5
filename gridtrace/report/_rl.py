"""The report's RL section: an RL experiment's summary as tables, verdict and figures.

:func:`rl_section` turns the ``summary.json`` of :func:`gridtrace.sim.rl.run_experiment` into the
mapping :func:`gridtrace.report.render_workload_report` takes as ``rl``: a Table-2 layout (wait
mean/std/max and W mean per class, per policy and evaluation mode), the protocol's shares and
utilisations, the published numbers beside ours (labelled), the verdict sentence and the
figures (F over time; pool size and utilisation over time of the elastic runs).

A workload's experiments run under more than one setting of the VO target shares (its own, and
e.g. an "infeasible" one that asks for shares its arrivals cannot give): the summary's
``targets`` labels the setting (None: the workload's own) and ``vo_shares`` gives the shares, and
the section carries both as its ``title``. Its ``reward`` fact names each RL variant's reward, so
that rows trained on the research's reward (``w-f``) are told apart from the others.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from gridtrace.errors import ConfigError
from gridtrace.report import _figures as figures

__all__ = ["rl_section"]

_CLASSES = ("interactive", "batch", "all")
# F-over-time lines: the reference baselines and the frozen RL runs (the figure stays readable)
_F_BASELINES = ("native", "fifo", "sjf-est", "hrrn")
# what each reward is, for the reward fact (the names of gridtrace.sim.rl's rewards)
_REWARDS = {
    "w-f": "the research's reward λ_s W + (1 − λ_s) F",
    "time-utility": "the time-utility functions of the research's earliest variant",
    "queue-slowdown": "not the research's: the per-time slowdown penalty of DeepRM",
}
# how a title names the workload's own target shares (summary targets None)
_OWN_TARGETS = "the workload's own"


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and not math.isfinite(x))


def _ci(m: Mapping[str, Any] | None, digits: int, scale: float = 1.0) -> str:
    """Format an aggregate metric as mean ± half-width (just the mean with one seed)."""
    if not m or _missing(m.get("mean")):
        return "—"
    text = f"{float(m['mean']) * scale:,.{digits}f}"
    lo, hi = m.get("ci_low"), m.get("ci_high")
    if lo is not None and hi is not None and not (_missing(lo) or _missing(hi)):
        text += f" ± {(float(hi) - float(lo)) / 2.0 * scale:,.{digits}f}"
    return text


def _label(row: Mapping[str, Any]) -> str:
    if row["family"] == "rl":
        return f"{row['variant']} ({row['mode']})"
    return str(row["variant"])


def _published_rows(published: Mapping[str, Any] | None) -> list[dict[str, str]]:
    if not published:
        return []
    out = []
    for row in published.get("rows", []):
        cells = {}
        for key in ("wait_mean_s", "wait_std_s", "wait_max_s"):
            cells[key] = "—" if key not in row else f"{float(row[key]):,.0f}"
        es = row.get("wait_mean_es")
        cells["wait_mean_es"] = "—" if es is None else f"{float(es):.3f}"
        w = row.get("w_mean")
        cells["w_mean"] = "—" if w is None else f"{row.get('bound', '')}{float(w):.2f}".strip()
        out.append({"label": f"{row['variant']}, {row['class']}", **cells})
    return out


def _shares_text(vo_shares: Mapping[str, Any] | None) -> str:
    """Format target shares as ``vo1 0.70, vo2 0.20`` (``none`` without shares)."""
    if not vo_shares:
        return "none"
    return ", ".join(f"{vo} {float(share):.2f}" for vo, share in vo_shares.items())


def _targets_text(targets: str | None, vo_shares: Mapping[str, Any] | None) -> str:
    """Name a VO-target setting with its shares: ``infeasible (vo1 0.40, vo2 0.20, ...)``."""
    label = _OWN_TARGETS if targets is None else targets
    return f"{label} ({_shares_text(vo_shares)})"


def _reward_of(agent: Mapping[str, Any]) -> tuple[str, str]:
    """Return an agent's reward name and a parameter note (the λ_s of ``w-f``)."""
    reward = (agent.get("scheduler") or {}).get("reward") or {}
    name = str(reward.get("name") or "not recorded")
    lam = reward.get("lambda_s")
    note = f" (λ_s {float(lam):g})" if name == "w-f" and lam is not None else ""
    return name, note


def _reward_fact(agents: Mapping[str, Any]) -> str | None:
    """One line naming each RL variant's reward, grouped by reward (None without agents)."""
    groups: dict[str, list[str]] = {}
    for variant, agent in agents.items():
        name, note = _reward_of(agent)
        groups.setdefault(name, []).append(f"{variant}{note}")
    if not groups:
        return None
    parts = []
    for name, variants in groups.items():
        what = _REWARDS.get(name)
        head = f"{name} ({what})" if what else name
        parts.append(f"{head}: {', '.join(variants)}")
    return "; ".join(parts)


def rl_section(summary: Mapping[str, Any]) -> dict[str, Any]:
    """Build the RL section from an RL experiment summary.

    Parameters
    ----------
    summary : mapping
        The ``summary.json`` of :func:`gridtrace.sim.rl.run_experiment` (schema
        ``gridtrace.rl-experiment/1``).

    Returns
    -------
    dict
        ``facts`` (among them ``VO targets`` and ``reward``: each RL variant's reward),
        ``verdict``, ``table2`` (rows of policy/mode × class), ``shares`` (one row per
        policy/mode), ``published`` (rows and note, or None), ``agents`` (each with its
        ``reward`` name), ``figures``, ``has_es``, ``targets`` (the VO-target setting's label,
        None for the workload's own), ``vo_shares`` (the target shares, or None) and ``title``
        (e.g. ``VO targets: infeasible (vo1 0.40, vo2 0.20, ...)``).

    Raises
    ------
    ConfigError
        If the summary is not an RL experiment summary.
    """
    if not str(summary.get("schema", "")).startswith("gridtrace.rl-experiment/"):
        raise ConfigError("not an RL experiment summary (schema gridtrace.rl-experiment/*)")
    es = summary.get("units", {}).get("mean_runtime_s")
    aggregate: Sequence[Mapping[str, Any]] = summary["aggregate"]
    table2 = []
    shares = []
    for row in aggregate:
        m = row["metrics"]
        label = _label(row)
        for i, c in enumerate(_CLASSES):
            table2.append(
                {
                    "policy": label if i == 0 else "",
                    "n": row["n"] if i == 0 else "",
                    "class": c,
                    "wait_mean_s": _ci(m[f"{c}_wait_mean_s"], 0),
                    "wait_std_s": _ci(m[f"{c}_wait_std_s"], 0),
                    "wait_max_s": _ci(m[f"{c}_wait_max_s"], 0),
                    "wait_mean_es": _ci(m[f"{c}_wait_mean_s"], 3, 1.0 / es) if es else "—",
                    "w_mean": _ci(m[f"{c}_w_mean"], 3),
                    "first": i == 0,
                }
            )
        shares.append(
            {
                "policy": label,
                "w_over_0_9": _ci(m["interactive_w_over_0_9"], 1, 100.0),
                "wait_under_120s": _ci(m["interactive_wait_under_120s"], 1, 100.0),
                "fairness": _ci(m["fairness_mean"], 3),
                "utilisation": _ci(m["utilisation"], 3),
                "elastic_utilisation": _ci(m["elastic_utilisation"], 3),
                "core_h": _ci(m["provisioned_core_h"], 0),
            }
        )
    protocol = summary.get("protocol", {})
    targets = summary.get("targets")
    if targets is not None and not isinstance(targets, str):
        raise ConfigError(f"the summary's targets must be a label or null, got {targets!r}")
    vo_shares = summary.get("vo_shares")
    vo_shares = {str(vo): float(share) for vo, share in vo_shares.items()} if vo_shares else None
    setting = _targets_text(targets, vo_shares)
    source = summary.get("vo_shares_source")
    facts = {
        "experiment": summary.get("experiment"),
        "VO targets": setting if source in (None, "given") else f"{setting}, {source}",
        "reward": _reward_fact(summary.get("agents", {})),
        "workload source": summary.get("source"),
        "training": protocol.get("training"),
        "pre-training": protocol.get("pretraining"),
        "evaluation": protocol.get("evaluation"),
        "modes": "; ".join(f"{k}: {v}" for k, v in protocol.get("modes", {}).items()),
        "discounting": protocol.get("discounting"),
        "intervals": protocol.get("interval"),
        "root seed": summary.get("seeds", {}).get("root"),
        "E[S] of the evaluation workload": "—" if not es else f"{float(es):,.0f} s",
    }
    split = protocol.get("split")
    if split:
        facts["time split"] = (
            f"train {split['train_jobs']:,} jobs before t = {split['t_split_s']:,.0f} s, "
            f"evaluate {split['eval_jobs']:,} jobs from then on"
        )
    published = summary.get("published")
    pub = None
    if published:
        pub = {
            "source": published.get("source"),
            "note": published.get("setup_note"),
            "rows": _published_rows(published),
        }
    series = summary.get("series", {})
    figs = []
    f_series = series.get("fairness", {})
    frozen = [name for name in f_series if name.endswith("(frozen)")]
    if len(frozen) > 4:  # the egee variants: keep those whose reward weighs fairness (0.5)
        frozen = [name for name in frozen if "-0.5 " in name][:4]
    fairness = {
        name: (s["time_s"], s["value"])
        for name, s in f_series.items()
        if name in _F_BASELINES or name in frozen
    }
    if any(len(t) for t, _ in fairness.values()):
        figs.append(
            {
                "id": "fig-rl-fairness",
                "caption": (
                    "Fairness F at election over time on the first evaluation seed: reference "
                    "baselines and the frozen RL agents (on the EGEE analogue, those whose "
                    "reward weighs fairness, λ 0.5)."
                ),
                "svg": figures.inline_svg(figures.fairness_over_time_svg(fairness)),
            }
        )
    elastic = series.get("elastic", {})
    if elastic:
        figs.append(
            {
                "id": "fig-rl-elastic",
                "caption": (
                    "Elastic runs on the first evaluation seed: the pool size chosen at each "
                    "decision and the utilisation U of the interval before it."
                ),
                "svg": figures.inline_svg(
                    figures.elastic_series_svg(elastic, pool_cores=summary.get("cores"))
                ),
            }
        )
    agents = [
        {
            "variant": name,
            "reward": _reward_of(a)[0],
            "scheduler": a.get("scheduler"),
            "provisioner": a.get("provisioner"),
        }
        for name, a in summary.get("agents", {}).items()
    ]
    return {
        "facts": {k: v for k, v in facts.items() if v is not None},
        "verdict": summary.get("verdict", ""),
        "table2": table2,
        "shares": shares,
        "published": pub,
        "agents": agents,
        "figures": figs,
        "has_es": bool(es),
        "targets": targets,
        "vo_shares": vo_shares,
        "title": f"VO targets: {setting}",
    }
