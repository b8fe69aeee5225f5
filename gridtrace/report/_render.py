"""Rendering of the per-workload HTML reports, the index page and the ``reports/all`` manifest.

Every page is one self-contained HTML file: inline CSS, nothing fetched from the network (its
Content-Security-Policy says so to the browser too), so it opens offline in any browser. A report
runs no script; the index runs one inline table sorter, allowed by its hash. Each report opens
with a verdict (``#verdict``): at most five lines, numbers first. The templates are package data
(``gridtrace/report/templates/*.html.j2``) rendered by Jinja2 with autoescaping on, so every string
taken from a log (VO, user, site, provenance) is escaped.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from functools import lru_cache
from os import PathLike
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import jinja2
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from markupsafe import Markup, escape

from gridtrace import __version__
from gridtrace._atomic import write_text
from gridtrace._log import library_logger
from gridtrace.errors import ConfigError, SchemaError
from gridtrace.report import _figures as figures
from gridtrace.report._contention import contention_section
from gridtrace.report._glossary import GLOSSARY, NAMES, abbr, gloss_policy
from gridtrace.schema import SEGMENTS, TRACE, conform, trace_metadata
from gridtrace.sim import INTERACTIVE_WAIT_S, SimulationResult, mean_interval
from gridtrace.stats import WorkloadStats, characterise

__all__ = [
    "ResultLike",
    "check_report_link",
    "check_workload_name",
    "render_index",
    "render_workload_report",
    "write_manifest",
]

logger = library_logger(__name__)

ResultLike = SimulationResult | tuple[pa.Table | None, Mapping[str, Any]]
"""A simulation result, or a ``(jobs, summary)`` pair as read back from disk."""

_CLASSES = ("interactive", "batch", "all")
_CLASS_METRICS = (
    "n",
    "wait_mean_s",
    "wait_std_s",
    "wait_median_s",
    "wait_max_s",
    "responsiveness_mean",
    "responsiveness_std",
    "responsiveness_median",
)
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+=@-]*$")
# an id prefix the page sets (figure ids, suffixed), and a character a suffix may not hold
_SAFE_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_NOT_ID = re.compile(r"[^a-z0-9_]+")
# an SVG element's id, and a local reference to one (xlink:href="#x", href="#x", url(#x))
_SVG_ID = re.compile(r'(?<![\w:-])id="([^"]+)"')
_SVG_REF = re.compile(r'((?<![\w:-])id="|href="#|url\(#)([^")]+)(?=[")])')
# the keys render_workload_report reads from an rl_section() mapping
_RL_KEYS = ("title", "verdict", "facts", "table2", "shares", "published", "figures", "has_es")


def check_workload_name(workload: str) -> str:
    """Return ``workload`` if it can name a report folder, else raise.

    Raises
    ------
    ConfigError
        For ``"all"`` (reserved for the manifest ``reports/all``) and for names that are not a
        single safe path component (letters, digits and ``_ . + = @ -``, not starting with a dot).
    """
    if workload == "all":
        raise ConfigError("no workload may be named 'all': reports/all is the run's manifest")
    if not _SAFE_NAME.match(workload):
        raise ConfigError(
            f"workload name {workload!r} is not a safe folder name "
            "(use letters, digits and _ . + = @ -, not starting with a dot)"
        )
    return workload


# --- formatting filters -------------------------------------------------------------------------


def _is_missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and not math.isfinite(x))


def _num(x: Any, digits: int = 1) -> str:
    if _is_missing(x):
        return "—"
    return f"{float(x):,.{digits}f}"


def _thousands(x: Any) -> str:
    if _is_missing(x):
        return "—"
    return f"{round(float(x)):,d}"


def _pct(x: Any) -> str:
    if _is_missing(x):
        return "—"
    return f"{100.0 * float(x):.1f} %"


def _duration(x: Any) -> str:
    if _is_missing(x):
        return "—"
    s = float(x)
    if s < 120:
        human = f"{s:.1f} s"
    elif s < 7200:
        human = f"{s / 60:.1f} min"
    elif s < 172_800:
        human = f"{s / 3600:.1f} h"
    else:
        human = f"{s / 86_400:.1f} days"
    return f"{human} ({s:,.0f} s)"


def _cell(x: Any, digits: int = 1) -> str:
    """Format an aggregate cell as ``mean [low, high] n=k`` (``mean n=1`` without an interval).

    The interval is :func:`gridtrace.sim.mean_interval`'s: inside the values' range, so inside
    the metric's; no ``±`` (a symmetric half-width would leave the range of a bounded metric).
    """
    if not isinstance(x, Mapping):
        return _num(x, digits)
    if _is_missing(x.get("mean")):
        return "—"
    text = _num(x["mean"], digits)
    low, high = x.get("low"), x.get("high")
    if not (_is_missing(low) or _is_missing(high)):
        text += f" [{_num(low, digits)}, {_num(high, digits)}]"
    if x.get("n") is not None:
        text += f" n={int(x['n'])}"
    return text


def _pct_cell(x: Any) -> str:
    """Format an aggregate cell of a fraction as percentages, as :func:`_cell` does."""
    if not isinstance(x, Mapping):
        return _pct(x)
    if _is_missing(x.get("mean")):
        return "—"
    text = f"{100.0 * float(x['mean']):.1f}"
    low, high = x.get("low"), x.get("high")
    if low is not None and high is not None and not (_is_missing(low) or _is_missing(high)):
        text += f" [{100.0 * float(low):.1f}, {100.0 * float(high):.1f}]"
    text += " %"
    if x.get("n") is not None:
        text += f" n={int(x['n'])}"
    return text


def _scoped_svg(svg: str, prefix: str) -> Markup:
    """Prefix the ids an inline SVG defines, and its references to them, with ``prefix-``.

    matplotlib numbers the elements of every figure the same way (``figure_1``, ``axes_1``, ...)
    and names markers and clip paths by a hash of their shape, so two figures on one page would
    share ids; prefixed with the figure's own id they are unique in the page.

    Raises
    ------
    ConfigError
        If ``prefix`` is not a plain id (a letter, then letters, digits, ``_`` and ``-``).
    GridtraceError
        If the SVG is not safe to inline (:func:`gridtrace.report._figures.inline_svg`).
    """
    if not _SAFE_ID.match(prefix):
        raise ConfigError(f"not a plain element id: {prefix!r}")
    text = str(svg)
    defined = set(_SVG_ID.findall(text))

    def scope(m: re.Match[str]) -> str:
        name = m.group(2)
        return m.group(1) + (f"{prefix}-{name}" if name in defined else name)

    return figures.inline_svg(_SVG_REF.sub(scope, text) if defined else text)


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("gridtrace.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        num=_num,
        thousands=_thousands,
        pct=_pct,
        duration=_duration,
        cell=_cell,
        pctcell=_pct_cell,
        scoped_svg=_scoped_svg,
        policy=gloss_policy,
    )
    env.globals.update(
        version=__version__,
        glossary=GLOSSARY,
        glossary_policies=NAMES,
        abbr=abbr,
        # the page's Content-Security-Policy: no script at all, unless a page passes its own
        script_source="'none'",
    )
    return env


def _write(path: Path, text: str) -> None:
    # atomic: a reader (or a run killed mid-write) sees the old page or the new one, never half
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, text)


def check_report_link(href: str) -> str:
    """Return ``href`` if it is a relative link that stays inside the reports folder.

    The index takes its links from the key-figure JSON files beside the reports; a link from
    there must not run script (``javascript:``), leave for another site (``http://``, ``//host``)
    or point outside the folder (an absolute path, ``..`` above the index). Percent-escapes are
    undone before the check, as a browser does.

    Raises
    ------
    ConfigError
        Naming the link and what is wrong with it.
    """
    problem = None
    if not href or any(ord(c) < 0x20 or c in "\\\x7f" for c in href) or href != href.strip():
        problem = "it is empty or holds spaces at its ends, control characters or backslashes"
    else:
        parts = urlsplit(href)
        path = unquote(parts.path)
        if parts.scheme or parts.netloc:
            problem = f"it names a scheme or host ({parts.scheme or '//' + parts.netloc})"
        elif path.startswith("/"):
            problem = "it is an absolute path"
        else:
            depth = 0
            for segment in path.split("/"):
                depth += {"..": -1, ".": 0, "": 0}.get(segment, 1)
                if depth < 0:
                    problem = "it leaves the reports folder ('..')"
                    break
    if problem is not None:
        msg = (
            f"report link {href!r} refused: {problem}; an index links only to pages inside the "
            "reports folder, by relative paths such as '<workload>/index.html'"
        )
        raise ConfigError(msg)
    return href


# --- the workload section -----------------------------------------------------------------------


def _describe_trace(trace: pa.Table) -> dict[str, Any]:
    table = conform(trace, TRACE)
    try:
        meta: dict[str, Any] = trace_metadata(table)
    except SchemaError:
        meta = {"origin": None, "site": None, "cores": None, "tau_s": 900.0, "provenance": {}}
    n = table.num_rows
    submit = table.column("submit_s").to_numpy()
    run = table.column("run_s").to_numpy()
    work = run * table.column("cores").to_numpy().astype(np.float64)
    inter = np.asarray(table.column("interactive").to_numpy(zero_copy_only=False), dtype=bool)
    span = float(submit.max() - submit.min()) if n else math.nan
    cores = meta["cores"]
    offered = float(work.sum() / (cores * span)) if n and cores and span and span > 0 else None
    vos: list[dict[str, Any]] = []
    if n:
        encoded = table.column("vo").combine_chunks().dictionary_encode()
        idx = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.float64)
        codes = np.where(np.isnan(idx), -1, idx).astype(np.int64)
        names: list[tuple[int, str]] = list(enumerate(map(str, encoded.dictionary.to_pylist())))
        if np.any(codes < 0):
            names.append((-1, "(none)"))
        total_work = float(work.sum())
        for k, name in names:
            mask = codes == k
            count = int(mask.sum())
            vos.append(
                {
                    "name": name,
                    "jobs": count,
                    "job_share": count / n,
                    "work_share": float(work[mask].sum()) / total_work if total_work > 0 else None,
                    "interactive_share": float(inter[mask].mean()) if count else None,
                }
            )
        vos.sort(key=lambda v: (-v["jobs"], v["name"]))
    users = int(pc.count_distinct(table.column("user"), mode="only_valid").as_py())
    return {
        "site": meta["site"] if meta["site"] is not None else "—",
        "origin": meta["origin"] if meta["origin"] is not None else "—",
        "cores": cores,
        "tau_s": meta["tau_s"],
        "jobs": n,
        "span_s": span,
        "interactive_share": float(inter.mean()) if n else None,
        "mean_run_s": float(run.mean()) if n else None,
        "offered_load": offered,
        "users": users,
        "vos": vos,
        "provenance": json.dumps(meta["provenance"], indent=2, sort_keys=True, default=str),
        "synthetic": _synthetic_origin(meta["provenance"]),
    }


def _synthetic_origin(provenance: Any) -> dict[str, Any] | None:
    """Say what a synthetic trace is drawn from (generator, preset, seed); None for a log's.

    A synthetic trace has no users, no calendar (its origin is a placeholder, 1970-01-01) and
    no local time, so the report leaves those out and says what the trace is drawn from.
    """
    if not isinstance(provenance, Mapping) or "generator" not in provenance:
        return None
    preset = provenance.get("preset_parameters")
    description = preset.get("description") if isinstance(preset, Mapping) else None
    return {
        "generator": str(provenance["generator"]),
        "preset": provenance.get("preset"),
        "description": description,
        "seed": provenance.get("seed"),
    }


def _figure(caption: str, svg: str, ident: str) -> dict[str, Any]:
    return {"id": ident, "caption": caption, "svg": figures.inline_svg(svg)}


def _stats_view(stats: WorkloadStats, *, synthetic: bool = False) -> dict[str, Any]:
    """Collect the facts and figures of a characterisation for the Workload section.

    A ``synthetic`` trace has no calendar: its daily and weekly profiles (of a relative clock)
    are left out.
    """
    tau = stats.tau_s
    figs = [
        _figure(
            f"Runtime CDF per class on a log axis; look at how far the batch curve sits from "
            f"the interactive one on either side of τ = {tau:g} s.",
            figures.runtime_cdf_svg(stats.runtime_hist, tau_s=tau),
            "fig-runtime-cdf",
        ),
        _figure(
            "CDF of the time between submissions against an exponential of the same mean; a "
            "steeper start and a longer tail than the dashed curve mean bursty arrivals.",
            figures.interarrival_cdf_svg(stats.interarrival_hist, mean_s=stats.mean_interarrival_s),
            "fig-interarrival-cdf",
        ),
    ]
    if stats.service_requests.num_rows:
        figs.append(
            _figure(
                "Work submitted per bin (top) and the load it offers the P cores (bottom); look "
                "for periods above capacity 1, where queues must build up.",
                figures.service_series_svg(
                    stats.service_requests,
                    cores=stats.cores,
                    rho=stats.rho,
                    bin_s=_bin_width(stats.service_requests),
                ),
                "fig-service-series",
            )
        )
    if stats.idc.num_rows:
        figs.append(
            _figure(
                "Index of dispersion for counts against the window length; Poisson arrivals stay "
                "on the dashed line at 1, bursty ones climb above it as the window grows.",
                figures.idc_svg(stats.idc),
                "fig-idc",
            )
        )
    if not synthetic:
        figs.append(
            _figure(
                f"Mean arrivals per hour by hour of day and of week in {stats.timezone} "
                f"({stats.timezone_source}), each hour divided by how often the trace covers it; "
                "look for working-hours peaks and quiet weekends.",
                figures.profiles_svg(stats.profiles, timezone=stats.timezone),
                "fig-profiles",
            )
        )
    wait = None
    if stats.wait is not None:
        wait = [
            {"name": cls, **dict(stats.wait.get(cls) or {})}
            for cls in _CLASSES
            if isinstance(stats.wait.get(cls), Mapping)
        ]
    return {
        "cores": stats.cores,
        "cores_source": stats.cores_source,
        "span_s": stats.span_s,
        "interactive_fraction": stats.interactive_fraction,
        "arrival_rate_per_h": stats.arrival_rate_per_s * 3600.0,
        "mean_interarrival_s": stats.mean_interarrival_s,
        "utilisation": stats.utilisation,
        "rho": stats.rho,
        "users": stats.users,
        "timezone": stats.timezone,
        "flurries": stats.flurries.num_rows,
        "flurry_rows": stats.flurries.slice(0, 20).to_pylist(),
        "wait": wait,
        "notes": list(stats.notes),
        "figures": figs,
    }


def _bin_width(service_requests: pa.Table) -> float:
    start = service_requests.column("bin_start_s").to_numpy()
    return float(start[1] - start[0]) if start.size > 1 else 10_000.0


_REASONS = {
    "start": "first segment",
    "pool": "machine pool changed",
    "arrivals": "arrival rate changed",
    "runtime": "runtime distribution changed",
    "vo_mix": "VO mix changed",
    "cores": "cores per job changed",
}


def _boundary_evidence(diagnostics: str | None) -> str:
    try:
        found = json.loads(diagnostics or "{}").get("boundary") or {}
    except (json.JSONDecodeError, AttributeError):
        return ""
    parts = []
    if found.get("rate_ratio") is not None:
        parts.append(f"rate ×{float(found['rate_ratio']):.2f}")
    if found.get("runtime_ks") is not None:
        parts.append(f"runtime KS {float(found['runtime_ks']):.3f}")
    if found.get("vo_jsd") is not None:
        parts.append(f"VO JSD {float(found['vo_jsd']):.3f}")
    if found.get("cores_ratio") is not None:
        parts.append(f"cores/job ×{float(found['cores_ratio']):.2f}")
    return ", ".join(parts)


def _top_shares(shares: Mapping[str, Any], top: int = 3) -> str:
    return ", ".join(f"{k} {100 * float(v):.0f} %" for k, v in list(shares.items())[:top])


def _segments_view(segments: pa.Table, segmentation: Mapping[str, Any] | None) -> dict[str, Any]:
    """Prepare the segments table: each boundary's reason, the selected segment marked."""
    table = conform(segments, SEGMENTS)
    info = dict(segmentation or {})
    choice = info.get("choice") if isinstance(info.get("choice"), Mapping) else None
    selected = int(choice["segment_id"]) if choice and "segment_id" in choice else None
    rows = []
    for row in table.to_pylist():
        reasons = [r for r in str(row["reason"]).split("+") if r]
        try:
            vo = json.loads(row["vo_shares"] or "{}")
        except json.JSONDecodeError:
            vo = {}
        for key in ("start_time", "end_time"):
            if row.get(key) is not None:
                row[key] = row[key].strftime("%Y-%m-%d %H:%M")
        rows.append(
            {
                **row,
                "reason_text": "; ".join(_REASONS.get(r, r) for r in reasons),
                "evidence": _boundary_evidence(row.get("diagnostics")),
                "top_vos": ", ".join(
                    f"{k} {100 * float(v):.0f} %" for k, v in list(vo.items())[:3]
                ),
                "selected": row["segment_id"] == selected,
            }
        )
    params = info.get("params") if isinstance(info.get("params"), Mapping) else {}
    return {
        "rows": rows,
        "selected": selected,
        "explanation": str(choice.get("explanation", "")) if choice else "",
        "eligible": bool(choice.get("eligible")) if choice else None,
        "notes": [str(n) for n in info.get("notes") or []],
        "pool_source": info.get("pool_source"),
        "min_jobs": (params or {}).get("min_jobs"),
    }


# --- the scheduling section ---------------------------------------------------------------------


def _summary_of(result: object) -> Mapping[str, Any]:
    """Return the summary of a result, checked at run time (lists read from JSON are fine)."""
    if isinstance(result, SimulationResult):
        return result.summary
    if isinstance(result, tuple | list) and len(result) == 2 and isinstance(result[1], Mapping):
        return result[1]
    raise ConfigError(f"expected a SimulationResult or a (jobs, summary) pair, got {result!r}")


def _aggregate(values: Sequence[Any]) -> dict[str, Any]:
    """Mean over seeds and its 95 % interval (:func:`gridtrace.sim.mean_interval`).

    Keys ``mean``, ``low``, ``high`` (None with fewer than 2 values; inside the range of the
    values, so of the metric), ``half`` ((high − low) / 2), ``k`` and ``n`` (values used),
    ``method``.
    """
    r = mean_interval([None if _is_missing(v) else float(v) for v in values])
    half = None if r.low is None or r.high is None else (r.high - r.low) / 2.0
    return {
        "mean": r.mean,
        "low": r.low,
        "high": r.high,
        "half": half,
        "k": r.n,
        "n": r.n,
        "method": r.method,
    }


def _policy_rows(results: Mapping[str, Sequence[ResultLike]]) -> list[dict[str, Any]]:
    rows = []
    for policy, runs in results.items():
        summaries = [_summary_of(r) for r in runs]
        if not summaries:
            continue
        classes = []
        for cls in _CLASSES:
            per_seed = [s.get("classes", {}).get(cls, {}) for s in summaries]
            cell = {m: _aggregate([p.get(m) for p in per_seed]) for m in _CLASS_METRICS}
            classes.append({"name": cls, **cell})
        fair = [(s.get("fairness") or {}).get("mean") for s in summaries]
        rows.append(
            {
                "name": str(policy),
                "seeds": len(summaries),
                "classes": classes,
                "interactive_wait_under_120s": _aggregate(
                    [s.get("interactive_wait_under_120s") for s in summaries]
                ),
                "utilisation": _aggregate([s.get("utilisation") for s in summaries]),
                "bsld_mean": _aggregate(
                    [s.get("classes", {}).get("all", {}).get("bsld_mean") for s in summaries]
                ),
                "fairness_mean": _aggregate(fair),
                "exclusion_note": (summaries[0].get("exclusion") or {}).get("note", ""),
            }
        )
    return rows


def _jobs_of(result: object) -> pa.Table | None:
    if isinstance(result, SimulationResult):
        return result.jobs
    if isinstance(result, tuple | list) and len(result) == 2 and isinstance(result[0], pa.Table):
        return result[0]
    return None


def _measured(jobs: pa.Table, summary: Mapping[str, Any]) -> pa.Table:
    """Keep the rows the summary's statistics cover (warm-up and drain jobs left out)."""
    exclusion = summary.get("exclusion") or {}
    if not exclusion.get("applied"):
        return jobs
    lo = int(exclusion.get("warmup_jobs") or 0)
    hi = jobs.num_rows - int(exclusion.get("drain_jobs") or 0)
    return jobs.slice(lo, max(hi - lo, 0))


def _column(table: pa.Table, name: str) -> npt.NDArray[np.float64]:
    return np.asarray(table.column(name).to_numpy(zero_copy_only=False), dtype=np.float64)


def _scheduling_figures(results: Mapping[str, Sequence[ResultLike]]) -> list[dict[str, Any]]:
    """CDF of interactive wait, inverse CDF of W (seeds pooled) and F over time (first seed)."""
    waits: dict[str, npt.NDArray[np.float64]] = {}
    resp: dict[str, dict[str, npt.NDArray[np.float64]]] = {"interactive": {}, "all": {}}
    fairness: dict[str, tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]] = {}
    pooled = False
    for policy, runs in results.items():
        parts = []
        for run in runs:
            jobs = _jobs_of(run)
            if jobs is not None and jobs.num_rows:
                parts.append(_measured(jobs, _summary_of(run)))
        if not parts:
            continue
        pooled = pooled or len(parts) > 1
        jobs = pa.concat_tables(parts)
        inter = np.asarray(jobs.column("interactive").to_numpy(zero_copy_only=False), dtype=bool)
        w = _column(jobs, "responsiveness")
        waits[str(policy)] = _column(jobs, "wait_s")[inter]
        resp["interactive"][str(policy)] = w[inter]
        resp["all"][str(policy)] = w
        first = parts[0]
        if first.column("fairness").null_count < first.num_rows:
            fairness[str(policy)] = (_column(first, "start_s"), _column(first, "fairness"))
    if not waits:
        return []
    seeds = "jobs of every seed pooled" if pooled else "one run per policy"
    under = f"{INTERACTIVE_WAIT_S:g} s"
    out = [
        _figure(
            f"CDF of the interactive jobs' wait per policy ({seeds}, warm-up and drain left "
            f"out); the height of each curve at the {under} line is the share that waited "
            "under two minutes.",
            figures.interactive_wait_cdf_svg(waits, threshold_s=INTERACTIVE_WAIT_S),
            "fig-interactive-wait-cdf",
        ),
        _figure(
            f"Responsiveness W = run / (run + wait) of the measured jobs sorted from worst to "
            f"best, per policy ({seeds}), zoomed on the jobs that waited (W < 1); the earlier a "
            "curve reaches 1, the fewer jobs waited.",
            figures.responsiveness_inverse_cdf_svg(resp),
            "fig-w-inverse-cdf",
        ),
    ]
    if fairness:
        out.append(
            _figure(
                "Fairness F at each election (mean per time bin) under the target VO shares, "
                "first seed of each policy, warm-up and drain left out; look for dips, where "
                "a VO fell behind its share.",
                figures.fairness_over_time_svg(fairness),
                "fig-fairness",
            )
        )
    return out


def _best(rows: Sequence[Mapping[str, Any]], cls: str, metric: str, *, highest: bool) -> str | None:
    scored = []
    for row in rows:
        cell = next(c for c in row["classes"] if c["name"] == cls)[metric]
        if cell["mean"] is not None:
            scored.append((-cell["mean"] if highest else cell["mean"], row["name"]))
    return min(scored)[1] if scored else None


_WORD = re.compile(r"[a-z0-9][a-z0-9_+-]*")


def _our_metric(rows: Sequence[Mapping[str, Any]], label: str, metric: str) -> tuple[str, Any]:
    """Find the policy a published label names and our cell of the metric it names.

    The policy is the first of ours whose name is a word of the label (``FIFO, seed paper`` →
    ``fifo``); the metric is read from its name: a class (interactive, batch, else all) and
    W / responsiveness, bounded slowdown, or wait (mean, median, max). (None, None) if either
    is not found.
    """
    words = set(_WORD.findall(label.lower()))
    row = next((r for r in rows if str(r["name"]).lower() in words), None)
    if row is None:
        return "—", None
    name = metric.lower()
    cls = next((c for c in ("interactive", "batch") if c in name), "all")
    stat = next((s for s in ("median", "max", "std") if s in name), "mean")
    mwords = set(_WORD.findall(name)) | set(name.split())
    if "w" in mwords or "responsiveness" in name:
        key = f"responsiveness_{stat}" if stat != "max" else None
    elif "wait" in name:
        key = f"wait_{stat}_s"
    else:
        key = None
    if key is None or f"{key}" not in _CLASS_METRICS:
        return str(row["name"]), None
    return str(row["name"]), _policy_cell(row, cls, key)


def _published_table(
    published: Mapping[str, Mapping[str, Any]] | None, rows: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """Lay published numbers beside ours (one row per number), as the RL section's side by side."""
    if not published:
        return None
    out = []
    for label, metrics in published.items():
        for metric, value in metrics.items():
            policy, cell = _our_metric(rows, str(label), str(metric))
            number = isinstance(value, int | float) and not isinstance(value, bool)
            shown = _num(value, 3) if number else ("—" if value is None else str(value))
            diff = agreement = None
            ours = "—"
            if cell is not None and not _is_missing(cell.get("mean")):
                ours = _cell(cell, 3)
                if number:
                    diff = f"{float(cell['mean']) - float(value):+,.3f}"
                    lo, hi = cell.get("low"), cell.get("high")
                    lo = cell["mean"] if _is_missing(lo) else lo
                    hi = cell["mean"] if _is_missing(hi) else hi
                    inside = float(lo) <= float(value) <= float(hi)
                    agreement = "reproduced" if inside else "not reproduced"
            out.append(
                {
                    "label": str(label),
                    "ours_label": policy,
                    "metric": str(metric),
                    "published": shown,
                    "ours": ours,
                    "difference": diff or "—",
                    "agreement": agreement or "no run of ours",
                    "reason": (
                        "the published setup is not recorded beside this number"
                        if agreement == "not reproduced"
                        else ""
                    ),
                }
            )
    compared = [r for r in out if r["agreement"] != "no run of ours"]
    return {
        "rows": out,
        "reproduced": sum(r["agreement"] == "reproduced" for r in compared),
        "compared": len(compared),
    }


# --- the RL section ----------------------------------------------------------------------------


def _rl_suffix(targets: Any, used: set[str]) -> str:
    """Return an id suffix ``-<label>`` for a VO-target setting not yet in ``used``; add it."""
    label = "own" if targets is None else str(targets)
    base = "-" + (_NOT_ID.sub("-", label.lower()).strip("-") or "targets")
    suffix, k = base, 2
    while suffix in used:
        suffix, k = f"{base}-{k}", k + 1
    used.add(suffix)
    return suffix


def _rl_targets_view(
    rl: Mapping[str, Any] | None, rl_targets: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Lay out the further VO-target settings of the RL section, each with its id suffix.

    A setting shows the facts and published numbers that differ from those of the section
    above it (the main section, else the first setting), and not its VO targets (its heading).
    """
    used = {""}
    out: list[dict[str, Any]] = []
    reference = rl
    for i, section in enumerate(rl_targets):
        if not isinstance(section, Mapping):
            raise ConfigError(f"rl_targets[{i}] is not a mapping: {section!r}")
        missing = [k for k in _RL_KEYS if k not in section]
        if missing:
            raise ConfigError(
                f"rl_targets[{i}] is not an rl_section() mapping (no {', '.join(missing)})"
            )
        facts = {k: v for k, v in section["facts"].items() if k != "VO targets"}
        published = section["published"]
        if reference is not None:
            above = reference.get("facts", {})
            facts = {k: v for k, v in facts.items() if above.get(k) != v}
            above_pub = reference.get("published")
            if published == above_pub or (
                isinstance(published, Mapping)
                and isinstance(above_pub, Mapping)
                and published.get("key") == above_pub.get("key")
                and published.get("source") == above_pub.get("source")
            ):
                published = None  # the same published numbers: shown once, above
        out.append(
            {
                "section": {**section, "facts": facts, "published": published},
                "suffix": _rl_suffix(section.get("targets"), used),
                "full": reference is None,
            }
        )
        if reference is None:
            reference = section
    return out


# --- the verdict --------------------------------------------------------------------------------

_VERDICT_FLAGS_SHOWN = 4
_EQUAL_F = 1e-3
"""Mean F of every policy within this of each other: F is called the same for every policy."""


def _interval_text(mean: Any, low: Any, high: Any, n: Any, digits: int = 3) -> str:
    """``mean [low, high] n=k`` (the interval left out when missing)."""
    if _is_missing(mean):
        return "—"
    text = f"{float(mean):.{digits}f}"
    if not (_is_missing(low) or _is_missing(high)):
        text += f" [{float(low):.{digits}f}, {float(high):.{digits}f}]"
    if n is not None:
        text += f" n={int(n)}"
    return text


def _margin_text(mean: Any, low: Any, high: Any, n: Any) -> str:
    """Format a margin as :func:`_interval_text`, with 4 decimals where 3 would show -0.000."""
    values = [abs(float(v)) for v in (mean, low, high) if not _is_missing(v) and float(v) != 0]
    digits = 4 if values and min(values) < 0.0005 else 3
    return _interval_text(mean, low, high, n, digits)


def _kind(described: Mapping[str, Any], workload: str) -> str:
    """``preset`` (a synthetic draw), ``demo`` (the generated demo site) or ``site`` (a log)."""
    if described["synthetic"] is not None:
        return "preset"
    if str(described["site"]).lower() == "demo" or workload.lower().startswith("demo"):
        return "demo"
    return "site"


def _period(described: Mapping[str, Any]) -> str:
    """Return the submission span; for a log, its dates (UTC) too."""
    span = described["span_s"]
    days = "—" if _is_missing(span) else f"{float(span) / 86_400:,.1f} days"
    if described["synthetic"] is None:
        try:
            start = datetime.fromisoformat(str(described["origin"]))
        except ValueError:
            return days
        if not _is_missing(span):
            end = start + timedelta(seconds=float(span))
            return f"{start:%Y-%m-%d} to {end:%Y-%m-%d} ({days})"
    return days


def _policy_cell(row: Mapping[str, Any], cls: str, metric: str) -> Mapping[str, Any]:
    return next(c for c in row["classes"] if c["name"] == cls)[metric]  # type: ignore[no-any-return]


def _ranked(rows: Sequence[Mapping[str, Any]], get: Any) -> list[tuple[str, Mapping[str, Any]]]:
    """Policies with a value, best (highest mean) first."""
    scored = [(str(r["name"]), get(r)) for r in rows]
    scored = [(name, c) for name, c in scored if not _is_missing(c.get("mean"))]
    return sorted(scored, key=lambda x: (-float(x[1]["mean"]), x[0]))


def _overlaps(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    lo_a, hi_a = a.get("low", a["mean"]), a.get("high", a["mean"])
    lo_b, hi_b = b.get("low", b["mean"]), b.get("high", b["mean"])
    if any(_is_missing(x) for x in (lo_a, hi_a, lo_b, hi_b)):
        return bool(a["mean"] == b["mean"])
    return bool(float(lo_a) <= float(hi_b) and float(lo_b) <= float(hi_a))


def _best_text(ranked: list[tuple[str, Mapping[str, Any]]]) -> str:
    """``sjf 0.904 [0.90, 0.91] n=3`` and the policies within noise of it."""
    name, best = ranked[0]
    text = (
        f"{name} {_interval_text(best['mean'], best.get('low'), best.get('high'), best.get('n'))}"
    )
    tied = [n for n, c in ranked[1:] if _overlaps(best, c)]
    intervals = not (_is_missing(best.get("low")) or _is_missing(best.get("high")))
    if tied and intervals:
        text += f" (within noise of {', '.join(tied)}: intervals overlap)"
    elif tied:
        text += f" (tied with {', '.join(tied)})"
    return text


def _same_runs(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two policies gave the same waits and W on every class (same seeds)."""
    for ca, cb in zip(a["classes"], b["classes"], strict=True):
        for m in ("wait_mean_s", "wait_max_s", "responsiveness_mean"):
            x, y = ca[m].get("mean"), cb[m].get("mean")
            if _is_missing(x) != _is_missing(y) or (
                not _is_missing(x) and not math.isclose(float(x), float(y), rel_tol=1e-9)
            ):
                return False
    return True


def _contention_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """RL's margin on interactive W over the contention regimes of one workload.

    Returns ``text``, the regime quoted (the highest target load), its ``value`` and
    ``outcome``, and the count of regimes per outcome; None without a margin.
    """
    margins = [
        (r, r["metrics"]["interactive_w_mean"]["margin"])
        for r in rows
        if r["metrics"]["interactive_w_mean"]["margin"].get("value") is not None
    ]
    if not margins:
        return None
    outcomes: dict[str, int] = {}
    for _, m in margins:
        outcomes[str(m.get("outcome"))] = outcomes.get(str(m.get("outcome")), 0) + 1
    row, m = max(margins, key=lambda x: (float(x[0]["target"] or 0.0), x[0]["how"]))
    against = row["metrics"]["interactive_w_mean"]["best"].get("policy") or m.get("against")
    quoted = _margin_text(m["value"], m.get("ci_low"), m.get("ci_high"), m.get("n"))
    counts = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
    text = (
        f"under contention ({len(margins)} regime{'s' if len(margins) != 1 else ''}: {counts}); "
        f"at {row['label']}, RL − {against}: {quoted} ({m.get('outcome')})"
    )
    return {"text": text, "value": float(m["value"]), "outcome": m.get("outcome")}


def _contention_flags(summaries: Sequence[Mapping[str, Any]]) -> list[str]:
    """Count the contention experiments' flags by code, with the policies and regimes raising them.

    ``POOL_AT_FLOOR: rl-elastic, threshold (67 runs in 10 of 11 regimes)``.
    """
    runs: dict[str, int] = {}
    policies: dict[str, set[str]] = {}
    regimes: dict[str, set[int]] = {}
    for i, summary in enumerate(summaries):
        for policy, raised in (summary.get("flags") or {}).items():
            for flag in raised or ():
                code = str(flag.get("code", "flag")) if isinstance(flag, Mapping) else str(flag)
                runs[code] = runs.get(code, 0) + 1
                policies.setdefault(code, set()).add(str(policy))
                regimes.setdefault(code, set()).add(i)
    return [
        f"{code}: {', '.join(sorted(policies[code]))} ({n} run{'s' if n != 1 else ''} in "
        f"{len(regimes[code])} of {len(summaries)} contention regimes)"
        for code, n in sorted(runs.items(), key=lambda x: (-x[1], x[0]))
    ]


def _verdict(
    workload: str,
    described: Mapping[str, Any],
    stats: WorkloadStats | None,
    trace: pa.Table,
    rows: Sequence[Mapping[str, Any]],
    rl: Mapping[str, Any] | None,
    rl_targets: Sequence[Mapping[str, Any]],
    contention: Sequence[Mapping[str, Any]],
    published: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """Build the verdict block (at most five lines, numbers first) and the key figures."""
    kind = _kind(described, workload)
    u = stats.utilisation if stats is not None else described["offered_load"]
    what = {
        "preset": f"synthetic draw of the preset {described['site']}",
        "demo": "the generated demo site's log",
        "site": f"site {described['site']}",
    }[kind]
    period = _period(described)
    load = f"U = {_num(u, 3)}"
    rho = stats.rho if stats is not None else None
    if rho is not None and not _is_missing(u) and not _is_missing(rho) and abs(rho - u) > 0.1 * rho:
        # U counts every job as one core: on a site with parallel jobs the load is ρ
        load = f"ρ = {_num(rho, 3)} (U = {_num(u, 3)} counts a job as one core)"
    lines = [
        {
            "label": "Workload",
            "text": (
                f"{_thousands(described['jobs'])} jobs · P = {_thousands(described['cores'])} "
                f"cores · {load} · {period} · {what}"
            ),
        }
    ]
    notes: list[str] = []
    tags: list[str] = []  # the notes in a few words, for the index
    best_w = best_f = None
    if rows:
        seeds = max(r["seeds"] for r in rows)
        ranked_w = _ranked(rows, lambda r: _policy_cell(r, "interactive", "responsiveness_mean"))
        ranked_f = _ranked(rows, lambda r: r["fairness_mean"])
        parts = []
        if ranked_w:
            best_w = {"policy": ranked_w[0][0], "text": _best_text(ranked_w)}
            parts.append(f"best on interactive W: {best_w['text']}")
        if ranked_f:
            means = [float(c["mean"]) for _, c in ranked_f]
            if len(ranked_f) > 1 and max(means) - min(means) < _EQUAL_F:
                best_f = {"policy": None, "text": f"the same for every policy ({means[0]:.3f})"}
                parts.append(f"F {best_f['text']}")
                tags.append("F equal for every policy (cumulative)")
                notes.append(
                    "F is the same for every policy: it is cumulative (each VO's usage since the "
                    "start against its target share), and every policy that keeps the cores "
                    "busy delivers the same work, so the order of the jobs barely moves it"
                )
            else:
                best_f = {"policy": ranked_f[0][0], "text": _best_text(ranked_f)}
                parts.append(f"best on F: {best_f['text']}")
        else:
            parts.append("F not measured (no VO target shares)")
        by_name = {r["name"]: r for r in rows}
        if "easy" in by_name and "fifo" in by_name and _same_runs(by_name["easy"], by_name["fifo"]):
            cores = trace.column("cores").to_numpy() if trace.num_rows else np.zeros(0)
            if cores.size and int(cores.max()) <= 1:
                tags.append("EASY = FIFO (serial jobs)")
                notes.append(
                    "EASY equals FIFO: every job is serial (1 core), so the job at the head of "
                    "the queue starts as soon as any core frees and there is never a hole to "
                    "backfill"
                )
            else:
                tags.append("EASY = FIFO")
                notes.append("EASY equals FIFO on these runs: backfilling found no hole to fill")
        lines.append(
            {
                "label": "Scheduling",
                "text": f"over the Scheduling section's {seeds} seed{'s' if seeds != 1 else ''}: "
                + "; ".join(parts),
            }
        )
    else:
        lines.append({"label": "Scheduling", "text": "no simulation results for this workload"})
    rl_parts = []
    margin = None
    flags: list[str] = []
    headlines = [s["headline"] for s in (rl, *rl_targets) if s and s.get("headline")]
    if headlines:
        head = headlines[0]
        m, b = head.get("margin"), head.get("best_baseline")
        if m is not None:
            mode = f" ({m['mode']})" if m.get("mode") else ""
            quoted = _margin_text(m["value"], m.get("ci_low"), m.get("ci_high"), m.get("n"))
            against = str(m["against"])
            if b is not None and b["policy"] != against:  # RL was not compared with the best
                best_text = _interval_text(b["mean"], b.get("ci_low"), b.get("ci_high"), b.get("n"))
                against += (
                    f" (the best baseline RL was compared with; best: {b['policy']} {best_text})"
                )
            rl_parts.append(
                f"{m['variant']}{mode} − {against} on interactive W: {quoted} "
                f"({m.get('outcome')}; paired, RL evaluation seeds)"
            )
            margin = {"text": f"{quoted} ({m.get('outcome')})", "value": m["value"]}
            margin["outcome"] = m.get("outcome")
        elif b is not None:
            rl_parts.append(f"best baseline {b['policy']}; no RL run compared with it")
        for h in headlines:
            flags.extend(h.get("flags") or [])
    crow = [contention_row(c) for c in contention]
    cont = _contention_summary(crow)
    if cont is not None:
        rl_parts.append(cont["text"])
        if margin is None:
            margin = {"text": cont["text"], "value": cont["value"], "outcome": cont["outcome"]}
    flags.extend(_contention_flags(contention))
    lines.append(
        {
            "label": "RL",
            "text": "; ".join(rl_parts) if rl_parts else "no RL experiment on this workload",
        }
    )
    sides = [s["published"] for s in (rl, *rl_targets) if s and s.get("published")]
    if published:
        sides.append(published)
    agreement = None
    if sides:
        done = sum(int(s.get("reproduced") or 0) for s in sides)
        total = sum(int(s.get("compared") or 0) for s in sides)
        missed = sorted(
            {
                str(r.get("label"))
                for s in sides
                for r in s.get("rows") or ()
                if r.get("agreement") == "not reproduced"
            }
        )
        text = f"{done} of {total} published numbers reproduced (inside our interval)"
        if not total:
            text = "published numbers given, but none matches a run of ours (see the tables)"
        if missed:
            text += f"; not: {', '.join(missed)} — the side-by-side tables say why"
        agreement = {"text": text, "reproduced": done, "compared": total}
        lines.append({"label": "Published", "text": text})
    else:
        lines.append({"label": "Published", "text": "no published numbers for this workload"})
    shown = flags[:_VERDICT_FLAGS_SHOWN]
    if len(flags) > len(shown):
        shown.append(f"and {len(flags) - len(shown)} more (RL and contention sections)")
    flag_text = "; ".join(shown) if shown else "none"
    if notes:
        flag_text += ". Note: " + ". ".join(notes)
    lines.append({"label": "Flags", "text": flag_text})
    return {
        "lines": lines,
        "kind": kind,
        "period": period,
        "u": u,
        "best_w": best_w,
        "best_f": best_f,
        "rl_margin": margin,
        "published": agreement,
        "flags": flags,
        "notes": notes,
        "tags": tags,
    }


def _key_figure(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Return the index's small multiple: interactive W per policy with its interval and n."""
    out = []
    for r in rows:
        c = _policy_cell(r, "interactive", "responsiveness_mean")
        if not _is_missing(c.get("mean")):
            out.append(
                {
                    "policy": str(r["name"]),
                    "mean": float(c["mean"]),
                    "low": c.get("low"),
                    "high": c.get("high"),
                    "n": c.get("n"),
                }
            )
    return out


def render_workload_report(
    workload: str,
    *,
    trace: pa.Table,
    results: Mapping[str, Sequence[ResultLike]],
    out_path: str | PathLike[str],
    published: Mapping[str, Mapping[str, Any]] | None = None,
    stats: WorkloadStats | None = None,
    tz: str | None = None,
    segments: pa.Table | None = None,
    segmentation: Mapping[str, Any] | None = None,
    model: Mapping[str, Any] | None = None,
    rl: Mapping[str, Any] | None = None,
    rl_targets: Sequence[Mapping[str, Any]] | None = None,
    contention: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Write the self-contained HTML report of one workload.

    Parameters
    ----------
    workload : str
        The workload's name (not ``"all"``; see :func:`check_workload_name`).
    trace : pyarrow.Table
        The workload's ``trace`` table (with its metadata, for P, τ and the provenance).
    results : mapping of str to sequence of results
        Policy name → one result per seed: :class:`~gridtrace.sim.SimulationResult` objects or
        ``(jobs, summary)`` pairs (only the summary is read; ``jobs`` may be None).
    out_path : path
        The HTML file to write, normally ``reports/<workload>/index.html``; if it is an existing
        folder, ``index.html`` is written inside it. Parent folders are created.
    published : mapping, optional
        Numbers from the research to show beside ours (a ``side-by-side`` table in the
        Scheduling section): row label (e.g. ``"FIFO, seed paper"``) → {metric name → value}.
        Ours is the policy whose name is a word of the label, and the metric named (class:
        interactive, batch or all; W / responsiveness or wait; mean, median, std or max); a
        number without a match is shown with "no run of ours".
    stats : WorkloadStats, optional
        The workload's characterisation; default :func:`gridtrace.stats.characterise` of
        ``trace`` (with ``tz``). If the trace cannot be characterised (no P), the Workload
        section shows the basic facts only and says why.
    tz : str, optional
        IANA zone of the daily and weekly profiles when ``stats`` is computed here.
    segments : pyarrow.Table, optional
        The site's ``segments`` table (:func:`gridtrace.segment.segment`), shown with each
        boundary's reason.
    segmentation : mapping, optional
        The ``segmentation.json`` written beside it: ``choice`` (``segment_id``,
        ``explanation``, as :meth:`gridtrace.segment.SegmentChoice.to_dict`), ``notes``,
        ``params``, ``pool_source``. The chosen segment is highlighted with its explanation.
    model : mapping, optional
        The Model section: :func:`gridtrace.report.fitted_model_section` (a fitted model's
        parameters, BIC table, held-out scores and fit figures) or
        :func:`gridtrace.report.preset_model_section` (a seed preset's given parameters).
    rl : mapping, optional
        The RL section: :func:`gridtrace.report.rl_section` of an RL experiment summary.
    rl_targets : sequence of mapping, optional
        Further RL sections (:func:`gridtrace.report.rl_section` outputs) of the same workload
        under other VO-target settings (e.g. ``"infeasible"`` shares), shown after ``rl``, each
        under its ``title`` with its verdict, tables and figures; its settings are shown where
        they differ from those above. Element ids get the setting's label as a suffix
        (``rl-table2-infeasible``); those of ``rl`` are unchanged.
    contention : sequence of mapping, optional
        The workload's contention experiment summaries (``summary.json`` of
        :func:`gridtrace.sim.rl.run_contention`, each optionally with its ``runs.parquet`` rows
        under ``runs``): a section after the RL one, a part per regime with its flags, margins
        and figures (:mod:`gridtrace.report._contention`); the verdict quotes RL's margin in
        them and their flags.

    Returns
    -------
    dict
        The key figures for the index page: ``workload``, ``href`` (relative to ``reports/``),
        ``path``, ``jobs``, ``cores``, ``utilisation`` (mean simulated utilisation under ``fifo``,
        else under the first policy; None without results), ``offered_load``,
        ``interactive_share``, ``best_policy_interactive_w`` (highest mean interactive W),
        ``best_policy_wait`` (lowest mean wait over all jobs), and for the index's comparison:
        ``kind`` (preset, demo or site), ``period``, ``u`` (utilisation factor U), ``best_w`` and
        ``best_f`` (``policy``, ``text``), ``rl_margin`` (``text``, ``value``, ``outcome``),
        ``published`` (``text``, ``reproduced``, ``compared``), ``flags``, ``verdict`` (the
        verdict's lines) and ``key_figure`` (interactive W per policy: ``policy``, ``mean``,
        ``low``, ``high``, ``n``).

    Raises
    ------
    ConfigError
        If the workload name is refused, a result is malformed or an ``rl_targets`` item is not
        an :func:`~gridtrace.report.rl_section` mapping.
    """
    check_workload_name(workload)
    targets_view = _rl_targets_view(rl, rl_targets or ())
    path = Path(out_path)
    if path.is_dir():
        path = path / "index.html"
    described = _describe_trace(trace)
    stats_note = None
    if stats is None:
        try:
            stats = characterise(trace, tz=tz)
        except (ConfigError, SchemaError) as exc:
            stats_note = f"workload statistics unavailable: {exc}"
            logger.warning("%s: %s", workload, stats_note)
    rows = _policy_rows(results)
    notes = sorted({r["exclusion_note"] for r in rows if r["exclusion_note"]})
    side = _published_table(published, rows)
    verdict = _verdict(
        workload,
        described,
        stats,
        trace,
        rows,
        rl,
        [x["section"] for x in targets_view],
        contention or (),
        side,
    )
    html = (
        _environment()
        .get_template("workload.html.j2")
        .render(
            workload=workload,
            trace=described,
            stats=(
                _stats_view(stats, synthetic=described["synthetic"] is not None)
                if stats is not None
                else None
            ),
            stats_note=stats_note,
            segments=_segments_view(segments, segmentation) if segments is not None else None,
            policies=rows,
            scheduling_figures=_scheduling_figures(results),
            multi_seed=any(r["seeds"] > 1 for r in rows),
            exclusion_note="; ".join(notes) or "none",
            published=side,
            verdict=verdict,
            model=model,
            rl=rl,
            rl_targets=targets_view,
            contention=contention_section(contention or ()),
        )
    )
    _write(path, html)
    logger.info("wrote the report of %s to %s", workload, path)
    reference = next((r for r in rows if r["name"] == "fifo"), rows[0] if rows else None)
    return {
        "workload": workload,
        "href": f"{workload}/index.html",
        "path": str(path),
        "jobs": described["jobs"],
        "cores": described["cores"],
        "utilisation": reference["utilisation"]["mean"] if reference else None,
        "offered_load": described["offered_load"],
        "interactive_share": described["interactive_share"],
        "best_policy_interactive_w": _best(
            rows, "interactive", "responsiveness_mean", highest=True
        ),
        "best_policy_wait": _best(rows, "all", "wait_mean_s", highest=False),
        **{k: verdict[k] for k in ("kind", "period", "u", "best_w", "best_f", "rl_margin")},
        "published": verdict["published"],
        "flags": verdict["flags"] + verdict["tags"],
        "verdict": [f"{line['label']}: {line['text']}" for line in verdict["lines"]],
        "key_figure": _key_figure(rows),
    }


_SORT_SCRIPT = """
document.querySelectorAll('table.sortable').forEach(function (table) {
  var heads = table.querySelectorAll('th.sortable');
  heads.forEach(function (th, col) {
    th.querySelector('button').addEventListener('click', function () {
      var up = th.getAttribute('aria-sort') !== 'ascending';
      heads.forEach(function (h) { h.removeAttribute('aria-sort'); });
      th.setAttribute('aria-sort', up ? 'ascending' : 'descending');
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var key = function (r) { return r.cells[col].getAttribute('data-sort') || ''; };
      rows.sort(function (a, b) {
        var x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
        var c = (isNaN(nx) || isNaN(ny)) ? x.localeCompare(y) : nx - ny;
        if (x === '' || y === '') { c = (x === '') - (y === ''); return c; }
        return up ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""
"""The index's only script: sorts a table by the clicked header (no network, no handlers in
the markup); the rows keep their order without it."""


def _script_hash(script: str) -> str:
    """Return the CSP source that allows exactly this inline script (``'sha256-...'``)."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return f"'sha256-{digest}'"


_MULTIPLE_ROW = 18
_MULTIPLE_LABEL = 96
_MULTIPLE_PLOT = 170


def _multiple_svg(points: Sequence[Mapping[str, Any]], title: str) -> Markup:
    """Draw one small multiple: interactive W per policy (bar, interval whisker) on [0, 1].

    Drawn here from numbers (not from SVG read back from a file), so the index inlines nothing
    it did not write; names are escaped.
    """
    height = _MULTIPLE_ROW * len(points) + 26
    width = _MULTIPLE_LABEL + _MULTIPLE_PLOT + 14
    x0 = _MULTIPLE_LABEL

    def x(v: float) -> float:
        return x0 + _MULTIPLE_PLOT * min(max(v, 0.0), 1.0)

    parts = [
        f'<svg viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}">'
    ]
    for i, p in enumerate(points):
        y = 4 + i * _MULTIPLE_ROW
        colour = escape(str(figures.policy_style(str(p["policy"]))["color"]))
        mean = float(p["mean"])
        tip = _interval_text(mean, p.get("low"), p.get("high"), p.get("n"))
        parts.append(
            f"<g><title>{escape(str(p['policy']))}: interactive W {escape(tip)}</title>"
            f'<text x="{x0 - 6}" y="{y + 12}" text-anchor="end" font-size="12" '
            f'fill="#1d2430">{escape(str(p["policy"])[:14])}</text>'
            f'<rect x="{x0}" y="{y + 3}" width="{x(mean) - x0:.1f}" height="11" '
            f'fill="{colour}" opacity="0.85"/>'
        )
        lo, hi = p.get("low"), p.get("high")
        if lo is not None and hi is not None and not (_is_missing(lo) or _is_missing(hi)):
            parts.append(
                f'<line x1="{x(float(lo)):.1f}" x2="{x(float(hi)):.1f}" y1="{y + 8.5}" '
                f'y2="{y + 8.5}" stroke="#1d2430" stroke-width="1.5"/>'
            )
        parts.append("</g>")
    axis_y = 4 + _MULTIPLE_ROW * len(points) + 2
    parts.append(
        f'<line x1="{x0}" x2="{x(1.0)}" y1="{axis_y}" y2="{axis_y}" stroke="#5b6575"/>'
        f'<text x="{x0}" y="{axis_y + 14}" font-size="11" fill="#5b6575">0</text>'
        f'<text x="{x(1.0)}" y="{axis_y + 14}" font-size="11" text-anchor="end" '
        f'fill="#5b6575">1</text>'
        f'<text x="{(x0 + x(1.0)) / 2:.0f}" y="{axis_y + 14}" font-size="11" '
        f'text-anchor="middle" fill="#5b6575">interactive W</text></svg>'
    )
    return Markup("".join(parts))


def _sort_key(value: Any) -> str:
    """Return a cell's ``data-sort``: a number as text, else lowercased text ('' if missing)."""
    if _is_missing(value):
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(float(value))
    return str(value).lower()


def render_index(
    entries: Sequence[Mapping[str, Any]],
    out_path: str | PathLike[str],
    contention: Sequence[Mapping[str, Any]] = (),
    pages: Sequence[Mapping[str, Any]] = (),
) -> None:
    """Write ``reports/index.html``: one comparable row per workload, sortable, and key figures.

    Each row shows the workload's kind (site, preset or demo), jobs, cores, U, the best
    baseline on interactive W and on F, RL's margin to the best baseline with its interval
    (from the workload's RL experiment, else from its contention experiments), the published
    agreement, flags and a link. A header click sorts the table (a few lines of inline script,
    nothing fetched). Below, a small multiple per workload: interactive W per policy.

    Parameters
    ----------
    entries : sequence of mapping
        The dicts returned by :func:`render_workload_report` (at least ``workload``; ``href``
        defaults to ``<workload>/index.html``, relative to the index page).
    out_path : path
        The HTML file to write.
    contention : sequence of mapping, optional
        ``summary.json`` of contention experiments (:func:`gridtrace.sim.rl.run_contention`):
        one row each, with the regime, the best baseline and RL's margin to it per metric.
    pages : sequence of mapping, optional
        Further report pages not tied to a workload, listed with their verdict: ``title``,
        ``href`` (relative, inside the reports folder) and ``verdict`` (lines of text), e.g. the
        entry :func:`gridtrace.report.render_ppo_report` returns.

    Raises
    ------
    ConfigError
        If a workload name is refused, or a link is not a relative path inside the reports
        folder (see :func:`check_report_link`).
    """
    experiments = sorted(
        (contention_row(summary) for summary in contention),
        key=lambda r: (r["workload"], r["how"], r["target"]),
    )
    rows = []
    for entry in entries:
        name = check_workload_name(str(entry["workload"]))
        row = {
            "jobs": None,
            "cores": None,
            "utilisation": None,
            "interactive_share": None,
            "best_policy_interactive_w": None,
            "best_policy_wait": None,
            "kind": None,
            "u": None,
            "best_w": None,
            "best_f": None,
            "rl_margin": None,
            "published": None,
            "flags": [],
            "key_figure": [],
            **entry,
        }
        row["workload"] = name
        row["href"] = check_report_link(str(entry.get("href") or f"{name}/index.html"))
        if not row["rl_margin"]:
            row["rl_margin"] = _contention_summary(
                [c for c in experiments if c["workload"] == name]
            )
        if row["best_w"] is None and row["best_policy_interactive_w"]:
            row["best_w"] = {"policy": row["best_policy_interactive_w"], "text": ""}
        row["key_figure"] = [
            p
            for p in row["key_figure"] or []
            if isinstance(p, Mapping) and not _is_missing(p.get("mean"))
        ]
        row["sort"] = {
            "workload": _sort_key(name),
            "kind": _sort_key(row["kind"]),
            "jobs": _sort_key(row["jobs"]),
            "cores": _sort_key(row["cores"]),
            "u": _sort_key(row["u"] if row["u"] is not None else row["utilisation"]),
            "best_w": _sort_key((row["best_w"] or {}).get("policy")),
            "best_f": _sort_key(
                (row["best_f"] or {}).get("policy") or (row["best_f"] or {}).get("text")
            ),
            "rl": _sort_key((row["rl_margin"] or {}).get("value")),
            "published": _sort_key(
                None
                if not row["published"] or not row["published"].get("compared")
                else row["published"]["reproduced"] / row["published"]["compared"]
            ),
            "flags": _sort_key(len(row["flags"] or [])),
        }
        row["multiple"] = (
            _multiple_svg(row["key_figure"], f"{name}: interactive W per policy")
            if row["key_figure"]
            else None
        )
        rows.append(row)
    rows.sort(key=lambda r: r["workload"])
    html = (
        _environment()
        .get_template("index.html.j2")
        .render(
            entries=rows,
            contention=experiments,
            contention_metrics=_CONTENTION_METRICS,
            pages=[
                {
                    "title": str(p["title"]),
                    "href": check_report_link(str(p["href"])),
                    "verdict": [str(line) for line in p.get("verdict") or []],
                }
                for p in pages
            ],
            sort_script=Markup(_SORT_SCRIPT),
            script_source=_script_hash(_SORT_SCRIPT),
        )
    )
    _write(Path(out_path), html)
    logger.info("wrote the index of %d workload(s) to %s", len(rows), out_path)


_CONTENTION_METRICS = {
    "interactive_w_mean": "interactive W",
    "all_w_mean": "all W",
    "fairness_daily_mean": "daily F",
}


def contention_row(summary: Mapping[str, Any]) -> dict[str, Any]:
    """One index row of a contention experiment: its regime, best baselines and RL's margins.

    Parameters
    ----------
    summary : mapping
        A contention experiment's ``summary.json``.

    Returns
    -------
    dict
        ``workload``, ``how``, ``target``, ``cores``, ``offered_load``, ``pool_source``, and per
        metric of :data:`_CONTENTION_METRICS` the best baseline (``policy``, ``mean``) and RL's
        margin to it (``value``, ``ci_low``, ``ci_high``, ``n``, ``outcome``), plus the codes of
        the flags raised (with how many runs raised each).
    """
    regime = summary.get("regime") or {}
    best = summary.get("best_baseline") or {}
    margins = summary.get("rl_margin") or {}
    flags: dict[str, int] = {}
    for raised in (summary.get("flags") or {}).values():
        for flag in raised:
            flags[flag["code"]] = flags.get(flag["code"], 0) + 1
    per_metric = {}
    for metric in _CONTENTION_METRICS:
        margin = (margins.get(metric) or {}).get("rl") or {}
        per_metric[metric] = {"best": best.get(metric) or {}, "margin": margin}
    how = str(regime.get("how", ""))
    target = regime.get("target_load")
    return {
        "workload": check_workload_name(str(summary.get("workload", ""))),
        "label": str(regime.get("label") or (how if target is None else f"{how}-{target:g}")),
        "how": how,
        "target": regime.get("target_load"),
        "cores": regime.get("cores"),
        "offered_load": regime.get("offered_load"),
        "pool_source": regime.get("pool_source"),
        "metrics": per_metric,
        "flags": flags,
    }


def write_manifest(paths: Sequence[str | PathLike[str]], out_path: str | PathLike[str]) -> None:
    """Write the manifest ``reports/all``: one report path per line, in the given order."""
    lines = [str(Path(p)) for p in paths]
    _write(Path(out_path), "".join(f"{line}\n" for line in lines))
