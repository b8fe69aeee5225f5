"""The report's Model section: a fitted workload model, or the parameters of a seed preset.

:func:`fitted_model_section` turns what ``gridtrace fit`` writes (the ``<name>.fit-summary.json``
of :func:`gridtrace.models._fitcli.fit_command`) plus the fitted trace and a synthetic trace drawn
from the model into the tables and figures of the section; :func:`preset_model_section` shows a
seed preset's given parameters instead. Both return a plain mapping that
:func:`gridtrace.report.render_workload_report` takes as ``model``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from gridtrace.errors import ConfigError
from gridtrace.models import Preset, ReplicaBand, get_preset
from gridtrace.report import _figures as figures
from gridtrace.schema import TRACE, conform
from gridtrace.stats import idc_curve

__all__ = ["fitted_model_section", "preset_model_section"]

_RUNTIME_PARAMS = {
    "rate": "rate (1/s)",
    "rates": "phase rates (1/s)",
    "weights": "phase weights",
    "class_weights": "phase weights on the class range",
    "phase_means_s": "phase means on the class range (s)",
    "class_mean_s": "mean on the class range (s)",
    "shape": "shape",
    "scale": "scale (s)",
    "zero_fraction": "zero-runtime fraction",
}

NEGLIGIBLE_WEIGHT = 1e-6
"""A hyperexponential phase of a smaller weight is left out of the parameters shown (and said)."""

FIT_QUALITY_CAPTION = (
    "How far each class's chosen runtime model is from its runtimes: look at KS D against its "
    "sampling noise (D well above the noise is a real misfit, the largest CDF gap) and at A² "
    "for the tails; with thousands of runtimes every p-value rejects, so these effect sizes are "
    "what to read. Lilliefors tests the research's exponential on the batch jobs' run − τ."
)
DEPENDENCE_CAPTION = (
    "Ljung-Box test that each stream's inter-arrival times (between distinct submission times) "
    "are independent, as Poisson arrivals are: a rejection (small p, a lag-1 autocorrelation "
    "well above 0) is the evidence for an MMPP; with many gaps read the autocorrelation too."
)


def _g(value: Any) -> str:
    """Four significant digits; lists element-wise; missing values as a dash."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        return "[" + ", ".join(_g(v) for v in value) + "]"
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, bool | str):
        return str(value)
    return f"{float(value):.4g}"


def _bic(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "failed"
    return f"{float(value):,.1f}"


def _bic_rows(
    kind: str,
    group: str,
    table: Mapping[str, Any],
    chosen: str,
    excluded: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Rows of one stream's or class's BIC table; ΔBIC from the best candidate that could be chosen.

    ``excluded`` maps candidates left out of the choice (refused hyperexponentials) to why;
    their row says so instead of a ΔBIC.
    """
    left_out = dict(excluded or {})

    def finite(value: Any) -> bool:
        return value is not None and math.isfinite(float(value))

    eligible = [float(v) for c, v in table.items() if finite(v) and c not in left_out]
    best = min(eligible) if eligible else None
    rows = []
    for candidate, value in table.items():
        ok = finite(value) and candidate not in left_out
        rows.append(
            {
                "kind": kind,
                "group": group,
                "candidate": candidate,
                "bic": _bic(value),
                "delta": _g(float(value) - best) if ok and best is not None else "—",
                "chosen": candidate == chosen,
                "note": f"left out: {left_out[candidate]}" if candidate in left_out else "",
            }
        )
    return rows


def _p(value: Any, *, table: bool = False) -> str:
    """Format a p-value with its relation: "= 0.29", "≤ 0.001" (a bound of Lilliefors' table)."""
    if value is None or not math.isfinite(float(value)):
        return "—"
    p = float(value)
    if table and p <= 0.001:
        return "≤ 0.001"
    if table and p >= 0.99:
        return "≥ 0.99"
    if p == 0.0:
        return "< 1e-300"
    return f"= {p:.1e}" if p < 1e-4 else f"= {p:.3g}"


def _runtime_parameters(params: Mapping[str, Any], tau: float) -> str:
    """Format a class model's parameters: flat phases say so, weights are the class range's.

    The raw weights of a truncated fit (models written before the bounded fit) give way to the
    weights on the class range.
    """
    shown = dict(params)
    weights = shown.get("class_weights", shown.get("weights"))
    dropped: list[float] = []
    if isinstance(weights, Sequence) and not isinstance(weights, str) and len(weights) > 1:
        keep = [float(w) >= NEGLIGIBLE_WEIGHT for w in weights]
        if not all(keep) and any(keep):
            # a phase of weight ~0 draws no job: its mean (often absurd) is no fact of the data
            dropped = [float(w) for w, k in zip(weights, keep, strict=True) if not k]
            for key, value in list(shown.items()):
                listed = isinstance(value, Sequence) and not isinstance(value, str)
                if listed and len(value) == len(keep):
                    shown[key] = [v for v, k in zip(value, keep, strict=True) if k]
    flat = shown.pop("flat_phases", None)
    flat_class = bool(shown.pop("flat_on_class_range", False))
    if "class_weights" in shown:
        shown.pop("weights", None)
    parts = []
    for key, value in shown.items():
        if key == "rates" and flat:
            text = (
                "["
                + ", ".join(
                    "flat" if is_flat else _g(rate)
                    for rate, is_flat in zip(value, flat, strict=True)
                )
                + "]"
            )
        elif key == "rate" and flat_class:
            text = f"flat on (0, {tau:g} s]"
        else:
            text = _g(value)
        parts.append(f"{_RUNTIME_PARAMS.get(key, key)} = {text}")
    if dropped:
        parts.append(
            f"{len(dropped)} phase(s) of weight {_g(dropped)} left out: under "
            f"{NEGLIGIBLE_WEIGHT:g}, no job is drawn from them and their mean means nothing"
        )
    return "; ".join(parts) or "—"


def _fit_quality_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per class with a goodness of fit (``WorkloadModel.summary()``)."""
    rows = []
    for job_class, entry in (summary.get("runtimes") or {}).items():
        gof = entry.get("goodness_of_fit")
        if not gof:
            continue
        d, noise = float(gof["ks_d"]), float(gof["ks_noise"])
        lf = gof.get("lilliefors")
        rows.append(
            {
                "job_class": job_class,
                "family": entry.get("family"),
                "n": f"{int(gof['n']):,d}",
                "n_censored": f"{int(gof.get('n_censored', 0)):,d}",
                "ks_d": _g(d),
                "ks_noise": _g(noise),
                "ks_ratio": _g(d / noise) if noise > 0 else "—",
                "ks_p": _p(gof.get("ks_pvalue")),
                "ad_a2": _g(gof.get("ad_a2")),
                "lilliefors": (
                    f"D = {_g(lf['statistic'])}, p {_p(lf['pvalue'], table=True)} "
                    f"({lf.get('on', '')})"
                    if lf
                    else "—"
                ),
            }
        )
    return rows


def _dependence_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per arrival stream with a Ljung-Box result (``WorkloadModel.summary()``)."""
    rows = []
    for stream in summary.get("arrival_streams") or []:
        lb = stream.get("ljung_box")
        if not lb:
            continue
        row: dict[str, Any] = {"stream": str(stream["name"]), "model": stream.get("model")}
        if "unavailable" in lb:
            row.update(dict.fromkeys(("lags", "n_gaps", "q", "p", "acf1"), "—"))
            row["verdict"] = f"not tested: {lb['unavailable']}"
        else:
            rejects = float(lb["pvalue"]) < 0.05
            row.update(
                {
                    "lags": int(lb["lags"]),
                    "n_gaps": f"{int(lb['n_gaps']):,d}",
                    "q": _g(lb["statistic"]),
                    "p": _p(lb["pvalue"]),
                    "acf1": _g(lb["acf"][0]) if lb.get("acf") else "—",
                    "verdict": (
                        "dependent gaps: evidence for an MMPP over Poisson"
                        if rejects
                        else "no evidence against independent gaps (Poisson)"
                    ),
                }
            )
        rows.append(row)
    return rows


def _floats(table: pa.Table, name: str) -> npt.NDArray[np.float64]:
    return np.asarray(table.column(name).to_numpy(zero_copy_only=False), dtype=np.float64)


def walltime_limit(table: pa.Table) -> float | None:
    """Return the site's walltime limit as the log shows it: the largest walltime request.

    None when the trace has no ``walltime_req_s`` column or no positive request in it.
    """
    if "walltime_req_s" not in table.column_names:
        return None
    wall = _floats(table, "walltime_req_s")
    wall = wall[np.isfinite(wall) & (wall > 0)]
    return float(wall.max()) if wall.size else None


def _beyond_limit_text(synthetic_run: npt.NDArray[np.float64], limit_s: float) -> str:
    """Say how many synthetic runtimes exceed the walltime limit, and why they can."""
    n = int(synthetic_run.size)
    over = int(np.sum(synthetic_run > limit_s))
    share = f" ({100 * over / n:.2g} %)" if n and over else ""
    longest = float(synthetic_run.max()) if n else math.nan
    text = (
        f"{over:,d} of {n:,d} synthetic jobs{share} run longer than the site's walltime limit "
        f"of {limit_s:,.0f} s ({limit_s / 3600:.3g} h, the largest request in the log); the "
        f"longest draw is {longest:,.0f} s"
    )
    if over:
        text += (
            ". The fit treats batch runtimes at their request as censored (they ran at least "
            "that long) and the sampler does not truncate at the limit, so these draws are jobs "
            "the site would have killed at the limit; a simulation replays them in full"
        )
    return text


def _runtimes_by_class(table: pa.Table) -> dict[str, npt.NDArray[np.float64]]:
    run = _floats(table, "run_s")
    inter = np.asarray(table.column("interactive").to_numpy(zero_copy_only=False), dtype=bool)
    return {"interactive": run[inter], "batch": run[~inter]}


def fitted_model_section(
    fit_summary: Mapping[str, Any], *, trace: pa.Table, synthetic: pa.Table
) -> dict[str, Any]:
    """Build the Model section of a fitted workload.

    Parameters
    ----------
    fit_summary : mapping
        The ``<name>.fit-summary.json`` written by ``gridtrace fit``: ``summary``
        (:meth:`gridtrace.models.WorkloadModel.summary`), ``bic_table``, ``heldout_arrivals``,
        ``fit_notes`` and ``replica_band`` (:meth:`gridtrace.models.ReplicaBand.to_dict`).
    trace : pyarrow.Table
        The ``trace`` table the model was fitted to.
    synthetic : pyarrow.Table
        A ``trace`` table drawn from the model (:meth:`WorkloadModel.sample`).

    Returns
    -------
    dict
        ``kind`` ``"fitted"``, ``facts`` (name → text, with a line per stream's Ljung-Box test
        and per class's runtime fit), ``arrivals`` and ``runtimes`` (parameter rows: weights and
        means of hyperexponential phases on the class range, flat phases named so), ``bic``
        (rows with the chosen candidate of each stream and class marked, refused ones with their
        reason), ``heldout`` (log-likelihood per arrival against Poisson), ``fit_quality`` (per
        class: KS D, its noise and their ratio, A², Lilliefors) with ``fit_quality_caption``,
        ``dependence`` (per stream: Ljung-Box Q, p, lag-1 ACF, verdict) with
        ``dependence_caption``, ``notes`` and ``figures``
        (as ``{"id", "caption", "svg"}``): the runtime QQ plot, then, when the summary has a
        ``replica_band``, IDC(t) and the inter-arrival ACF of the trace over the band of the
        model's replicas; a summary without one (written before the band existed) gets IDC(t)
        of the trace against the one synthetic trace instead, and no ACF figure.

    Raises
    ------
    ConfigError
        If the fit summary lacks ``summary`` or ``bic_table``.
    """
    try:
        summary = fit_summary["summary"]
        bic_table = fit_summary["bic_table"]
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"not a fit summary (missing {exc}): expected gridtrace fit's") from exc
    heldout = dict(fit_summary.get("heldout_arrivals") or {})
    arrivals = []
    bic_rows: list[dict[str, Any]] = []
    for stream in summary.get("arrival_streams", []):
        name = str(stream["name"])
        rates = stream.get("rates")
        k = len(rates) if rates is not None else 1
        arrivals.append(
            {
                "stream": name,
                "model": stream["model"],
                "k": k,
                "rates": _g(rates if rates is not None else stream.get("rate")),
                "mean_rate_per_h": _g(
                    3600.0 * float(stream.get("stationary_rate", stream.get("rate")) or math.nan)
                ),
                "generator": _g(stream["generator"]) if "generator" in stream else "—",
            }
        )
        table = bic_table.get("arrivals", {}).get(name, {})
        bic_rows += _bic_rows("arrivals", name, table, str(stream["model"]))
    runtimes = []
    tau = float(summary.get("tau_s", 900.0))
    for job_class, entry in summary.get("runtimes", {}).items():
        params = entry.get("parameters", {})
        runtimes.append(
            {
                "job_class": job_class,
                "family": entry["family"],
                "parameters": _runtime_parameters(params, tau),
            }
        )
        table = bic_table.get("runtimes", {}).get(job_class, {})
        left_out = (summary.get("runtime_excluded") or {}).get(job_class)
        bic_rows += _bic_rows("runtimes", job_class, table, str(entry["family"]), left_out)
    held = [
        {
            "stream": name,
            "model": h.get("arrival_model"),
            "n_train": h.get("n_train"),
            "n_test": h.get("n_test"),
            "ll_model": _g(h.get("model")),
            "ll_poisson": _g(h.get("poisson")),
            "gain": _g(h.get("gain")),
        }
        for name, h in heldout.items()
    ]
    observed = conform(trace, TRACE)
    drawn = conform(synthetic, TRACE)
    obs_runs = _runtimes_by_class(observed)
    syn_runs = _runtimes_by_class(drawn)
    pairs = {c: (obs_runs[c], syn_runs[c]) for c in ("interactive", "batch")}
    limit_s = walltime_limit(observed)
    fit_quality = _fit_quality_rows(summary)
    dependence = _dependence_rows(summary)
    ks_text = "; ".join(
        f"KS D {r['job_class']} {r['ks_d']} ({r['ks_ratio']} × its noise)" for r in fit_quality
    )
    figs = [
        {
            "id": "fig-model-qq",
            "caption": (
                f"Runtime quantiles of the trace against {drawn.num_rows:,d} synthetic jobs drawn "
                f"from the model, per class (τ = {tau:g} s); points off the dashed diagonal show "
                "where the fitted family misses"
                + (f" ({ks_text})." if ks_text else ".")
                + (
                    f" Red dotted lines: the site's walltime limit ({limit_s:,.0f} s); "
                    + _beyond_limit_text(_floats(drawn, "run_s"), limit_s)
                    + "."
                    if limit_s is not None
                    else ""
                )
            ),
            "svg": figures.inline_svg(figures.runtime_qq_svg(pairs, walltime_s=limit_s)),
        },
    ]
    band_data = fit_summary.get("replica_band")
    band = ReplicaBand.from_dict(band_data) if band_data else None
    if band is not None:
        width = f"{100 * (band.quantiles[2] - band.quantiles[0]):g} %"
        figs += [
            {
                "id": "fig-model-idc",
                "caption": (
                    f"IDC(t) of the trace over the {width} band of {band.replicas} synthetic "
                    "traces drawn from the model on the same horizon; inside at "
                    f"{int(band.idc_inside.sum())} of {band.windows_s.shape[0]} windows."
                ),
                "svg": figures.inline_svg(figures.model_idc_band_svg(band)),
            },
            {
                "id": "fig-model-acf",
                "caption": (
                    f"Autocorrelation of the trace's inter-arrival times over the {width} band "
                    f"of the same {band.replicas} model replicas; inside at "
                    f"{int(band.acf_inside.sum())} of {band.lags.shape[0]} lags."
                    + "".join(
                        f" Ljung-Box ({r['stream']}): Q({r['lags']}) = {r['q']}, p {r['p']}, "
                        f"{r['verdict']}."
                        for r in dependence
                        if r["p"] != "—"
                    )
                ),
                "svg": figures.inline_svg(figures.model_acf_band_svg(band)),
            },
        ]
    else:
        obs_submit = np.sort(_floats(observed, "submit_s"))
        syn_submit = np.sort(_floats(drawn, "submit_s"))
        trace_idc = idc_curve(obs_submit)
        if trace_idc.num_rows:
            t = trace_idc.column("t_s").to_numpy()
            synthetic_idc = idc_curve(syn_submit, t_min=float(t[0]), t_max=float(t[-1]))
        else:
            synthetic_idc = idc_curve(syn_submit)
        figs.append(
            {
                "id": "fig-model-idc",
                "caption": (
                    "IDC(t) of the trace against one synthetic trace on the same windows (this "
                    "fit summary has no replica band); Poisson stays at 1."
                ),
                "svg": figures.inline_svg(figures.model_idc_svg(trace_idc, synthetic_idc)),
            }
        )
    facts = {
        "Fitted jobs": f"{observed.num_rows:,d}",
        "Synthetic jobs": f"{drawn.num_rows:,d}",
        "Cores P": _g(summary.get("cores")),
        "Interactive threshold τ": f"{tau:g} s",
        "Interactive fraction": _g(summary.get("interactive_fraction")),
        "VO shares": ", ".join(
            f"{v} {100 * float(p):.1f} %" for v, p in (summary.get("vo_shares") or {}).items()
        )
        or "—",
        "Total BIC": _bic(summary.get("bic")),
    }
    if limit_s is not None:
        facts["Synthetic runtimes beyond the walltime limit"] = _beyond_limit_text(
            _floats(drawn, "run_s"), limit_s
        )
    for r in dependence:
        facts[f"Ljung-Box, {r['stream']} inter-arrivals"] = (
            r["verdict"]
            if r["p"] == "—"
            else f"Q({r['lags']}) = {r['q']}, p {r['p']}, lag-1 ACF {r['acf1']}: {r['verdict']}"
        )
    for r in fit_quality:
        text = (
            f"KS D = {r['ks_d']}, {r['ks_ratio']} × its sampling noise {r['ks_noise']} "
            f"(n = {r['n']}); A² = {r['ad_a2']}"
        )
        if r["lilliefors"] != "—":
            text += f"; Lilliefors exponential: {r['lilliefors']}"
        facts[f"Runtime fit, {r['job_class']} ({r['family']})"] = text
    if band is not None:
        facts["IDC(t) inside the replica band"] = (
            f"{int(band.idc_inside.sum())} of {band.windows_s.shape[0]} windows"
        )
        facts["Inter-arrival ACF inside the replica band"] = (
            f"{int(band.acf_inside.sum())} of {band.lags.shape[0]} lags"
        )
    return {
        "kind": "fitted",
        "facts": facts,
        "arrivals": arrivals,
        "runtimes": runtimes,
        "bic": bic_rows,
        "heldout": held,
        "fit_quality": fit_quality,
        "fit_quality_caption": FIT_QUALITY_CAPTION,
        "dependence": dependence,
        "dependence_caption": DEPENDENCE_CAPTION,
        "notes": [str(n) for n in fit_summary.get("fit_notes") or []],
        "figures": figs,
    }


def preset_model_section(preset: Preset | str) -> dict[str, Any]:
    """Build the Model section of a seed preset: its given parameters, nothing fitted.

    Parameters
    ----------
    preset : Preset or str
        The preset or its name (:func:`gridtrace.models.get_preset`).

    Returns
    -------
    dict
        ``kind`` ``"preset"``, ``label`` ("seed preset (not fitted)"), ``description`` and
        ``parameters`` (rows of name, value).
    """
    p = get_preset(preset) if isinstance(preset, str) else preset
    rows = [
        ("arrival process", p.arrival),
        ("cores P", f"{p.cores:,d}"),
        ("jobs per draw", f"{p.size:,d}"),
        ("interactive fraction f", _g(p.interactive_fraction)),
        ("interactive threshold τ (s)", _g(p.tau_s)),
        ("service rate μ = −ln(1 − f)/τ (1/s)", _g(p.service_rate)),
        ("offered load ρ per phase", _g(list(p.rhos))),
        ("arrival rate λ per phase (1/s)", _g(list(p.arrival_rates))),
        ("long-run arrival rate (1/s)", _g(p.arrival_rate)),
        ("long-run offered load ρ", _g(p.rho)),
    ]
    if p.switch_probabilities:
        rows.append(("phase switch probabilities", _g(list(p.switch_probabilities))))
        rows.append(("phase probabilities at arrivals", _g(list(p.phase_probabilities))))
    rows.append(("VO weights", ", ".join(f"{v} {_g(w)}" for v, w in p.vo_shares.items()) or "—"))
    return {
        "kind": "preset",
        "label": "seed preset (not fitted)",
        "name": p.name,
        "description": p.description,
        "parameters": [{"name": n, "value": v} for n, v in rows],
    }
