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
    "shape": "shape",
    "scale": "scale (s)",
    "zero_fraction": "zero-runtime fraction",
}


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

    ``excluded`` maps candidates left out of the choice (collapsed hyperexponentials) to why;
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


def _floats(table: pa.Table, name: str) -> npt.NDArray[np.float64]:
    return np.asarray(table.column(name).to_numpy(zero_copy_only=False), dtype=np.float64)


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
        ``kind`` ``"fitted"``, ``facts`` (name → text), ``arrivals`` and ``runtimes`` (parameter
        rows), ``bic`` (rows with the chosen candidate of each stream and class marked),
        ``heldout`` (log-likelihood per arrival against Poisson), ``notes`` and ``figures``
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
    for job_class, entry in summary.get("runtimes", {}).items():
        params = entry.get("parameters", {})
        runtimes.append(
            {
                "job_class": job_class,
                "family": entry["family"],
                "parameters": "; ".join(
                    f"{_RUNTIME_PARAMS.get(k, k)} = {_g(v)}" for k, v in params.items()
                )
                or "—",
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
    tau = float(summary.get("tau_s", 900.0))
    figs = [
        {
            "id": "fig-model-qq",
            "caption": (
                f"Runtime quantiles of the trace against {drawn.num_rows:,d} synthetic jobs drawn "
                f"from the model, per class (τ = {tau:g} s); points off the dashed diagonal show "
                "where the fitted family misses."
            ),
            "svg": figures.inline_svg(figures.runtime_qq_svg(pairs)),
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
