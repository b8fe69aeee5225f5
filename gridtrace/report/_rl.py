"""The report's RL section: an RL experiment's summary as tables, verdict and figures.

:func:`rl_section` turns the ``summary.json`` of :func:`gridtrace.sim.rl.run_experiment` into the
mapping :func:`gridtrace.report.render_workload_report` takes as ``rl``: a Table-2 layout (wait
mean/std/max and W mean per class, per policy and evaluation mode), the protocol's shares and
utilisations, the published numbers beside ours (:func:`side_by_side`: published value, ours
with its interval and n, the difference and why they differ), a numbers-first headline
(:func:`rl_headline`), the experiment's verdict and the figures: F at election over time and
the elastic runs' pool per decision, and from the summary's report series (written by
run_experiment since it keeps them) learning curves per RL variant, the action mix and the
interactive W over time, wait CDFs and inverse W CDFs per class with agents and baselines on
one figure, F over sliding daily and weekly windows, pool size and utilisation per time bin,
and the interactive waits over a day. Each flagged pathology (an interactive mean wait over a
day, an interactive mean W below 0.05, the pool at its floor) is marked on the figure that
locates it, and said in its caption. An old summary without the series still renders, with a
note on what is not drawn.

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

__all__ = ["headline_text", "rl_headline", "rl_section", "side_by_side"]

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


def _value(x: Any) -> float | None:
    """Return ``x`` as a float, None if it is missing or not finite."""
    return None if _missing(x) else float(x)


def _ci(
    m: Mapping[str, Any] | None,
    digits: int,
    scale: float = 1.0,
    bounds: tuple[float, float] | None = None,
) -> str:
    """Format an aggregate metric as ``mean [low, high] n=k`` (``mean n=1`` with one value).

    The interval is the summary's (an expanded percentile bootstrap within the values' range);
    with ``bounds`` (the metric's range, before ``scale``) it is also clipped to that range, so
    that a summary written by an older version (t-intervals) cannot show W above 1.
    """
    if not m or _missing(m.get("mean")):
        return "—"
    text = f"{float(m['mean']) * scale:,.{digits}f}"
    lo, hi = m.get("ci_low"), m.get("ci_high")
    if lo is not None and hi is not None and not (_missing(lo) or _missing(hi)):
        low, high = float(lo), float(hi)
        if bounds is not None:
            low, high = max(low, bounds[0]), min(high, bounds[1])
        text += f" [{low * scale:,.{digits}f}, {high * scale:,.{digits}f}]"
    n = m.get("n")
    if n is not None:
        text += f" n={int(n)}"
    return text


_UNIT = (0.0, 1.0)
_WAIT = (0.0, math.inf)


def _label(row: Mapping[str, Any]) -> str:
    if row["family"] == "rl":
        return f"{row['variant']} ({row['mode']})"
    return str(row["variant"])


# a published metric key → (our metric suffix, its name on the page, digits, its range)
_PUBLISHED_METRICS = {
    "wait_mean_s": ("wait_mean_s", "wait mean (s)", 0, _WAIT),
    "wait_std_s": ("wait_std_s", "wait std (s)", 0, _WAIT),
    "wait_max_s": ("wait_max_s", "wait max (s)", 0, _WAIT),
    "w_mean": ("w_mean", "W mean", 3, _UNIT),
}
# why our numbers differ from the published ones, in plain words, per published setup and
# family of the row (the long findings are in gridtrace.sim.rl.PUBLISHED[key]["finding"])
_REASONS = {
    ("MM50-20", "baseline"): (
        "setup differs: the paper's M/M/50 jobs ran about 0.4–2.8 ks on average, ours 4,033 s "
        "(the research's own μ rule), and a run of thousands of jobs at ρ 0.99 is far from "
        "steady state; compare the order of the policies, not the values"
    ),
    ("MM50-20", "rl"): (
        "setup differs: our jobs are longer (see FIFO) and the paper's RL features, reward "
        "credit and training are not given"
    ),
    ("PE-1", "baseline"): (
        "same preset; the published 0.45 is a low draw (our FIFO draws: median 0.58, 10 % at or "
        "below 0.45) or the steady state at ρ 0.969"
    ),
    ("PE-1", "rl"): (
        "the research's reward credits a job's W to the decision that elects it, so the agent "
        "ranks long jobs first; the published gains need a reward credit, features or training "
        "the reference notes do not give"
    ),
    ("LPC-EGEE", "baseline"): (
        "different jobs: published on an EGEE site's own 2006 trace, ours is an LPC-EGEE-2004 "
        "segment (same kind of site)"
    ),
    ("LPC-EGEE", "rl"): (
        "different jobs (an LPC-EGEE-2004 segment, not the published 2006 trace) and an RL "
        "setup the papers do not give in full"
    ),
}


def _ours_for(variant: str, aggregate: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Return our aggregate rows that a published variant compares with.

    RL rows: frozen, the research's reward; the generic ``rl``, ``rigid rl`` and ``elastic rl``
    match every such variant.
    """

    def frozen(a: Mapping[str, Any]) -> bool:
        return bool(a["family"] != "rl" or a["mode"] == "frozen")

    name = variant.lower()
    exact = [a for a in aggregate if a["variant"] == name and frozen(a)]
    if exact:
        return exact
    prefix = {"rl": "rl-", "rigid rl": "rig-", "elastic rl": "ela-"}.get(name)
    if prefix is None:
        return []
    return [
        a
        for a in aggregate
        if a["family"] == "rl"
        and frozen(a)
        and str(a["variant"]).startswith(prefix)
        and not str(a["variant"]).endswith("slowdown")
    ]


def _agreement(value: float, bound: str, ours: Mapping[str, Any]) -> str:
    """Say ``reproduced`` if the published value lies in our interval (``>=``: below its top)."""
    mean, lo, hi = (_value(ours.get(k)) for k in ("mean", "ci_low", "ci_high"))
    if mean is None:
        return "no run of ours"
    if lo is None or hi is None:
        lo = hi = mean
    if bound == ">=":
        return "reproduced" if hi >= value else "not reproduced"
    return "reproduced" if lo <= value <= hi else "not reproduced"


def side_by_side(
    published: Mapping[str, Any] | None,
    aggregate: Sequence[Mapping[str, Any]],
    mean_runtime_s: float | None = None,
) -> dict[str, Any] | None:
    """Lay the published numbers beside ours: one row per published number and run of ours.

    Parameters
    ----------
    published : mapping, optional
        The summary's ``published`` (a copy of :data:`gridtrace.sim.rl.PUBLISHED` ``[key]``).
    aggregate : sequence of mapping
        The summary's ``aggregate`` rows.
    mean_runtime_s : float, optional
        Our E[S]: with the published one, mean waits are also compared in units of E[S].

    Returns
    -------
    dict or None
        ``source``, ``note``, ``finding`` (the long account, or None), ``key`` and ``rows``:
        ``label`` (published variant and class), ``metric``, ``published`` (text), ``ours``
        (``mean [low, high] n=k``, our variant named), ``difference`` (ours − published),
        ``agreement`` (``reproduced``, ``not reproduced`` or ``no run of ours``) and ``reason``;
        and ``reproduced`` / ``compared`` (counts of rows). None without published numbers.
    """
    if not published:
        return None
    key = str(published.get("key") or "")
    es_pub = published.get("mean_runtime_s")
    rows = []
    for row in published.get("rows", []):
        variant, cls = str(row["variant"]), str(row["class"])
        ours_rows = _ours_for(variant, aggregate)
        family = "baseline" if variant in ("fifo", "native", "sjf", "hrrn", "easy") else "rl"
        reason = _REASONS.get((key, family)) or str(published.get("setup_note") or "")
        metrics = [(m, float(row[m])) for m in _PUBLISHED_METRICS if row.get(m) is not None]
        if es_pub and mean_runtime_s and row.get("wait_mean_s") is not None:
            metrics.append(("wait_mean_es", float(row["wait_mean_s"]) / float(es_pub)))
        for metric, value in metrics:
            if metric == "wait_mean_es":
                suffix, name, digits, bounds = "wait_mean_s", "wait mean (E[S])", 3, _WAIT
                scale = 1.0 / float(mean_runtime_s or 1.0)
            else:
                suffix, name, digits, bounds = _PUBLISHED_METRICS[metric]
                scale = 1.0
            bound = str(row.get("bound") or "")
            shown = f"{bound}{value:,.{digits}f}".strip()
            for ours in ours_rows or [{}]:
                m = (ours or {}).get("metrics", {}).get(f"{cls}_{suffix}") if ours else None
                if m and not _missing(m.get("mean")):
                    scaled = {
                        k: (float(v) * scale if isinstance(v, int | float) else v)
                        for k, v in m.items()
                        if k in ("mean", "ci_low", "ci_high")
                    }
                    scaled["n"] = m.get("n")
                    diff = float(scaled["mean"]) - value
                    agreement = _agreement(value, bound, scaled)
                    text = _ci(m, digits, scale, bounds)
                    label = _label(ours)
                else:
                    diff, agreement, text, label = None, "no run of ours", "—", "—"
                rows.append(
                    {
                        "label": f"{variant} ({cls})",
                        "ours_label": label,
                        "metric": name,
                        "published": shown,
                        "ours": text,
                        "difference": "—" if diff is None else f"{diff:+,.{digits}f}",
                        "agreement": agreement,
                        "reason": reason if agreement != "reproduced" else "",
                    }
                )
    compared = [r for r in rows if r["agreement"] != "no run of ours"]
    return {
        "source": published.get("source"),
        "note": published.get("setup_note"),
        "finding": published.get("finding"),
        "key": key,
        "rows": rows,
        "reproduced": sum(r["agreement"] == "reproduced" for r in compared),
        "compared": len(compared),
    }


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


_DAY_S = 86_400.0
_COLLAPSE_W = 0.05
"""An interactive mean W below this is flagged as a collapse (jobs wait far longer than run)."""


def _margin_of(entry: Mapping[str, Any], variant: str, mode: str | None) -> dict[str, Any]:
    return {
        "variant": variant,
        "mode": mode,
        "against": entry.get("against") or entry.get("baseline"),
        "value": entry.get("value", entry.get("mean_difference")),
        "ci_low": entry.get("ci_low"),
        "ci_high": entry.get("ci_high"),
        "n": entry.get("n"),
        "outcome": entry.get("outcome"),
    }


def flag_counts(flags: Mapping[str, Any] | None) -> dict[str, int]:
    """Count the flags of a summary's ``flags`` (policy → raised flags) by code."""
    out: dict[str, int] = {}
    for raised in (flags or {}).values():
        for flag in raised or ():
            code = str(flag.get("code", "flag")) if isinstance(flag, Mapping) else str(flag)
            out[code] = out.get(code, 0) + 1
    return out


def rl_headline(summary: Mapping[str, Any], metric: str = "interactive_w_mean") -> dict[str, Any]:
    """Return the numbers a verdict quotes from an RL experiment summary.

    Parameters
    ----------
    summary : mapping
        An RL experiment ``summary.json`` (``gridtrace.rl-experiment/*``; a contention
        experiment's too).
    metric : str, default "interactive_w_mean"
        The criterion (higher is better).

    Returns
    -------
    dict
        ``seeds`` (evaluation seeds of the baselines' numbers), ``best_baseline`` (``policy``,
        ``mean``, ``ci_low``, ``ci_high``, ``n``: the baseline with the highest mean, the
        as-logged schedule left out), ``margin`` (RL − baseline, paired: ``variant``, ``mode``,
        ``against``, ``value``, ``ci_low``, ``ci_high``, ``n``, ``outcome``; the RL variant with
        the largest margin; None without a comparison) and ``flags`` (plain-words pathologies:
        interactive mean waits over a day, an interactive W collapse, the summary's own flags).
    """
    aggregate: Sequence[Mapping[str, Any]] = summary.get("aggregate") or []
    baselines = [
        a
        for a in aggregate
        if a.get("family") == "baseline"
        and not _missing((a["metrics"].get(metric) or {}).get("mean"))
    ]
    best = None
    if baselines:
        top = max(baselines, key=lambda a: float(a["metrics"][metric]["mean"]))
        m = top["metrics"][metric]
        best = {
            "policy": str(top["variant"]),
            "mean": m.get("mean"),
            "ci_low": m.get("ci_low"),
            "ci_high": m.get("ci_high"),
            "n": m.get("n"),
        }
    margin = None
    given = (summary.get("rl_margin") or {}).get(metric) or {}
    candidates = [_margin_of(e, str(v), None) for v, e in given.items() if isinstance(e, Mapping)]
    if not candidates:
        compared = [c for c in summary.get("comparison") or [] if c.get("metric") == metric]
        if compared:
            names = {str(c["baseline"]) for c in compared}
            against = best["policy"] if best and best["policy"] in names else None
            if against is None:  # the best of the baselines RL was compared with
                ranked = [a for a in baselines if str(a["variant"]) in names]
                ranked.sort(key=lambda a: -float(a["metrics"][metric]["mean"]))
                against = str(ranked[0]["variant"]) if ranked else str(compared[0]["baseline"])
            candidates = [
                _margin_of(c, str(c["variant"]), str(c["mode"]))
                for c in compared
                if c["baseline"] == against and c.get("mean_difference") is not None
            ]
    candidates = [c for c in candidates if not _missing(c["value"])]
    if candidates:
        margin = max(candidates, key=lambda c: float(c["value"]))
    flags = []
    for a in aggregate:
        if a.get("family") != "rl":
            continue
        wait = _value((a["metrics"].get("interactive_wait_mean_s") or {}).get("mean"))
        w = _value((a["metrics"].get(metric) or {}).get("mean"))
        if wait is not None and wait > _DAY_S:
            flags.append(f"{_label(a)}: interactive mean wait {wait / _DAY_S:.1f} days")
        if metric == "interactive_w_mean" and w is not None and w < _COLLAPSE_W:
            flags.append(f"{_label(a)}: interactive W collapsed to {w:.3f}")
    for code, count in flag_counts(summary.get("flags")).items():
        flags.append(f"{code} ({count} run{'s' if count != 1 else ''})")
    if "flags" not in summary:  # run_experiment: its runs' pool-at-floor flags (the series)
        floor: dict[str, int] = {}
        for label, raised in ((summary.get("series") or {}).get("flags") or {}).items():
            n = sum(1 for f in raised or () if f.get("code") == "POOL_AT_FLOOR")
            if n:
                variant = str(label).split(" (")[0]
                floor[variant] = floor.get(variant, 0) + n
        if floor:
            total = sum(floor.values())
            flags.append(
                f"pool at its floor (POOL_AT_FLOOR) in {total} run{'s' if total != 1 else ''} "
                f"of {', '.join(floor)}"
            )
    seeds = (summary.get("protocol") or {}).get("config", {}).get("eval_seeds")
    return {
        "seeds": seeds if seeds is not None else (best or {}).get("n"),
        "best_baseline": best,
        "margin": margin,
        "flags": flags,
    }


def _short(m: Mapping[str, Any] | None, value: str) -> str:
    """Format ``value`` / ``ci_low`` / ``ci_high`` / ``n`` of ``m`` as ``x [lo, hi] n=k``."""
    if not m or _missing(m.get(value)):
        return "—"
    vals = [m.get(value), m.get("ci_low"), m.get("ci_high")]
    small = [abs(x) for x in map(_value, vals) if x is not None and x != 0.0]
    digits = 4 if small and min(small) < 0.0005 else 3
    return _ci({"mean": m[value], "ci_low": vals[1], "ci_high": vals[2], "n": m.get("n")}, digits)


def headline_text(headline: Mapping[str, Any]) -> str:
    """One line, numbers first: the best baseline, RL's margin to it, and the flags."""
    parts = []
    best, margin = headline.get("best_baseline"), headline.get("margin")
    if best:
        parts.append(f"best baseline on interactive W: {best['policy']} {_short(best, 'mean')}")
    if margin:
        mode = f" ({margin['mode']})" if margin.get("mode") else ""
        against = str(margin["against"])
        if best and best["policy"] != against:
            against += " (the best baseline it was compared with)"
        parts.append(
            f"best RL {margin['variant']}{mode} − {against}: "
            f"{_short(margin, 'value')} ({margin.get('outcome')}, paired)"
        )
    flags = headline.get("flags") or []
    parts.append("flags: " + ("; ".join(flags) if flags else "none"))
    return "; ".join(parts)


_NO_SERIES = (
    "not recorded in this summary (written before run_experiment kept the report series; "
    "rerun the RL experiment to draw it)"
)


def _pathologies(summary: Mapping[str, Any]) -> dict[str, list[str]]:
    """Run labels flagged per pathology: a mean wait over a day, a W collapse, the pool at floor."""
    out: dict[str, list[str]] = {"wait": [], "collapse": [], "floor": []}
    for a in summary.get("aggregate") or []:
        m = a.get("metrics") or {}
        wait = _value((m.get("interactive_wait_mean_s") or {}).get("mean"))
        w = _value((m.get("interactive_w_mean") or {}).get("mean"))
        if wait is not None and wait > _DAY_S:
            out["wait"].append(_label(a))
        if w is not None and w < _COLLAPSE_W:
            out["collapse"].append(_label(a))
    flags = (summary.get("series") or {}).get("flags") or {}
    out["floor"] = [
        str(k) for k, v in flags.items() if any(f.get("code") == "POOL_AT_FLOOR" for f in v or ())
    ]
    return out


def _shown(names: Sequence[str], modes: Sequence[str], keep: Sequence[str]) -> list[str]:
    """Keep the baselines, the RL runs of the first mode and the flagged runs in ``keep``.

    With more than four RL runs in the first mode (the EGEE analogue's variants) only those
    whose reward weighs fairness (λ 0.5) stay, as in the F-over-time figure.
    """
    first = f"({modes[0] if modes else 'frozen'})"
    rl = [n for n in names if n.endswith(first)]
    if len(rl) > 4:
        rl = [n for n in rl if "-0.5 " in n]
    return [n for n in names if "(" not in n or n in rl or n in keep]


def _series_figures(summary: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """Return the RL section's figures from ``summary["series"]`` and notes on those missing.

    Parameters
    ----------
    summary : mapping
        A :func:`gridtrace.sim.rl.run_experiment` summary.

    Returns
    -------
    tuple of (list of dict, list of str)
        The figures (``id``, ``caption``, ``svg``, ``locates``: the flagged pathology it shows,
        or None) and, for an old summary without the series, what is not drawn and why.
    """
    series = summary.get("series") or {}
    flagged = _pathologies(summary)
    modes = list(((summary.get("protocol") or {}).get("config") or {}).get("modes") or [])
    origin = float(series.get("time_origin_s") or 0.0)
    first = f"first evaluation seed; RL in {modes[0] if modes else 'frozen'} mode"
    figs: list[dict[str, Any]] = []
    missing: list[str] = []

    def add(name: str, caption: str, svg: str, locates: str | None = None) -> None:
        figs.append(
            {
                "id": f"fig-rl-{name}",
                "caption": caption,
                "svg": figures.inline_svg(svg),
                "locates": locates,
            }
        )

    curves = series.get("learning_curves")
    if curves and len(curves) > 4:  # the EGEE analogue: λ 0.5 and the flagged variants
        runs = {n.split(" (")[0] for n in flagged["collapse"] + flagged["wait"] + flagged["floor"]}
        curves = {k: v for k, v in curves.items() if k.endswith("-0.5") or k in runs}
    if curves:
        add(
            "learning",
            "Learning curves per RL variant (colour): the return (sum of the rewards paid by "
            "the end of the episode) and the interactive mean W of each training episode, the "
            "mean over the agent seeds, the band from their minimum to their maximum (on the "
            "EGEE analogue: the λ 0.5 variants and any flagged one). Grey: pre-training "
            "episodes, where EDF chose and the agent only learned.",
            figures.learning_curves_by_variant_svg(curves),
        )
    else:
        missing.append(f"learning curves: {_NO_SERIES}")
    mix = series.get("action_mix") or {}
    if mix.get("policies"):
        pol = mix["policies"]
        add(
            "action-mix",
            f"Action mix over time ({first}): the share of the starts that elected an "
            "interactive job, per time bin. RL agents that hold interactive jobs back sit "
            "below the baselines. A gap is a bin without starts.",
            figures.action_mix_svg(
                mix["time_s"],
                {k: pol[k]["interactive_share"] for k in _shown(list(pol), modes, [])},
                origin_s=origin,
            ),
        )
        collapsed = [k for k in flagged["collapse"] if k in pol]
        w_time = {
            k: pol[k]["interactive_w_mean"]
            for k in _shown(list(pol), modes, collapsed)
            if "interactive_w_mean" in pol[k]
        }
        if w_time:
            note = (
                " Circled: bins below 0.05 of the runs whose interactive mean W collapsed ("
                + ", ".join(collapsed)
                + ")."
                if collapsed
                else " No run's interactive mean W fell below 0.05."
            )
            add(
                "w-time",
                f"Interactive mean W of the jobs started in each time bin ({first}); dashed: "
                "the collapse threshold 0.05." + note,
                figures.interactive_w_over_time_svg(
                    mix["time_s"], w_time, origin_s=origin, flagged=collapsed
                ),
                "collapse" if collapsed else None,
            )
    else:
        missing.append(f"action mix over time: {_NO_SERIES}")
    dist = series.get("distributions")
    if dist:
        names = _shown(list(dist), modes, flagged["collapse"] + flagged["wait"])
        marked = [n for n in flagged["collapse"] + flagged["wait"] if n in names]
        add(
            "cdfs",
            "Wait CDFs (top) and inverse CDFs of W (bottom) per class, agents and baselines on "
            "the same axes: measured jobs of every evaluation seed pooled. Further right on top "
            "is longer waiting; lower at the bottom is worse W (the bottom panels zoom in on the "
            "jobs with W below 1)."
            + (
                " Flagged runs (interactive mean wait over a day or W below 0.05): "
                + ", ".join(marked)
                + "."
                if marked
                else ""
            ),
            figures.class_distributions_svg(series["quantile_probs"], {k: dist[k] for k in names}),
            "collapse" if flagged["collapse"] else None,
        )
    else:
        missing.append(f"wait and W distributions per class: {_NO_SERIES}")
    fair = series.get("fairness_windows")
    if fair:
        add(
            "fairness-windows",
            f"Fairness F over sliding daily (1-day windows moved by 1 h) and weekly (7-day "
            f"windows moved by 1 day) windows, at each window's start ({first}). Identical "
            "lines mean the policies served the VOs alike.",
            figures.windowed_fairness_svg(
                {k: fair[k] for k in _shown(list(fair), modes, [])}, origin_s=origin
            ),
        )
    elif "fairness_windows" not in series:
        missing.append(f"F over sliding windows: {_NO_SERIES}")
    pools = {k: v for k, v in (series.get("pool") or {}).items() if v.get("time_s")}
    if pools:
        at_floor = [k for k in flagged["floor"] if k in pools]
        elsewhere = [k for k in flagged["floor"] if k not in pools]
        spans: list[Sequence[float]] = []
        for label in at_floor:
            for run in series["pool"][label].get("floor_spans") or []:
                if run.get("seed_index") == 0:
                    spans += run.get("spans") or []
        add(
            "pool",
            f"Elastic runs ({first}): the pool size (mean per time bin, band from its minimum "
            "to its maximum; dashed: the floor; dotted: P) and the utilisation (busy over "
            "provisioned core-seconds). "
            + (
                "Shaded: the spans the pool held its floor (POOL_AT_FLOOR: at the floor for "
                "over 10 % of the run) of " + ", ".join(at_floor) + ", first seed."
                if at_floor
                else "No run drawn held the pool at its floor for over 10 % of its time."
            )
            + (
                " Also flagged POOL_AT_FLOOR (not drawn): " + ", ".join(elsewhere) + "."
                if elsewhere
                else ""
            ),
            figures.pool_series_svg(
                pools,
                origin_s=origin,
                pool_cores=summary.get("cores"),
                floor_spans=spans,
                floor_label="at the floor (POOL_AT_FLOOR)",
            ),
            "floor" if flagged["floor"] else None,
        )
    elif (series.get("elastic") or {}) and "pool" not in series:
        missing.append(f"pool size and utilisation per time bin, spans at the floor: {_NO_SERIES}")
    waits = {k: v for k, v in (series.get("long_waits") or {}).items() if v}
    waits = {k: waits[k] for k in _shown(list(waits), modes, flagged["wait"])}
    if waits:
        over = flagged["wait"]
        add(
            "long-waits",
            "Interactive jobs that waited more than a day (dashed line), at their submit time "
            "(first evaluation seed, the longest 100 per run). Runs whose interactive mean wait "
            f"is over a day: {', '.join(over) or 'none'}.",
            figures.long_waits_svg(waits, origin_s=origin),
            "wait" if over else None,
        )
    elif flagged["wait"] and "long_waits" not in series:
        missing.append(f"where the interactive waits over a day happen: {_NO_SERIES}")
    return figs, missing


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
        ``reward`` name), ``figures`` (each ``id``, ``caption``, ``svg`` and ``locates``: the
        flagged pathology it shows, or None), ``missing_figures`` (what an old summary cannot
        draw, and why), ``has_es``, ``targets`` (the VO-target setting's label,
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
                    "wait_mean_s": _ci(m[f"{c}_wait_mean_s"], 0, bounds=_WAIT),
                    "wait_std_s": _ci(m[f"{c}_wait_std_s"], 0, bounds=_WAIT),
                    "wait_max_s": _ci(m[f"{c}_wait_max_s"], 0, bounds=_WAIT),
                    "wait_mean_es": _ci(m[f"{c}_wait_mean_s"], 3, 1.0 / es) if es else "—",
                    "w_mean": _ci(m[f"{c}_w_mean"], 3, bounds=_UNIT),
                    "first": i == 0,
                }
            )
        shares.append(
            {
                "policy": label,
                "w_over_0_9": _ci(m["interactive_w_over_0_9"], 1, 100.0, _UNIT),
                "wait_under_120s": _ci(m["interactive_wait_under_120s"], 1, 100.0, _UNIT),
                "fairness": _ci(m["fairness_mean"], 3, bounds=_UNIT),
                "utilisation": _ci(m["utilisation"], 3, bounds=_WAIT),
                "elastic_utilisation": _ci(m["elastic_utilisation"], 3, bounds=_UNIT),
                "core_h": _ci(m["provisioned_core_h"], 0, bounds=_WAIT),
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
    pub = side_by_side(summary.get("published"), aggregate, es)
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
                "locates": None,
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
                "locates": None,
            }
        )
    new_figs, missing = _series_figures(summary)
    figs += new_figs
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
        "headline": (headline := rl_headline(summary)),
        "headline_text": headline_text(headline),
        "agents": agents,
        "figures": figs,
        "missing_figures": missing,
        "has_es": bool(es),
        "targets": targets,
        "vo_shares": vo_shares,
        "title": f"VO targets: {setting}",
    }
