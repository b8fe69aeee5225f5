"""The report's RL section: an RL experiment's summary as tables, verdict and figures.

:func:`rl_section` turns the ``summary.json`` of :func:`gridtrace.sim.rl.run_experiment` into the
mapping :func:`gridtrace.report.render_workload_report` takes as ``rl``: a Table-2 layout (wait
mean/std/max and W mean per class, per policy and evaluation mode), the protocol's shares and
utilisations, the published numbers beside ours (labelled), the verdict sentence and the
figures (F over time; pool size and utilisation over time of the elastic runs).
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
        ``facts``, ``verdict``, ``table2`` (rows of policy/mode × class), ``shares`` (one row
        per policy/mode), ``published`` (rows and note, or None), ``agents`` and ``figures``.

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
    facts = {
        "experiment": summary.get("experiment"),
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
    }
