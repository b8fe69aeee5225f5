"""The work behind ``gridtrace fit``: fit a :class:`WorkloadModel`, write it, describe it."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from gridtrace._atomic import write_text
from gridtrace._log import library_logger
from gridtrace.errors import FitError
from gridtrace.models._arrivals import ArrivalModel, PoissonArrivals
from gridtrace.models._mmpp import MMPPArrivals
from gridtrace.models._quality import heldout_log_likelihood, replica_band
from gridtrace.models._workload import WorkloadModel
from gridtrace.schema import read_table

__all__ = ["fit_command", "heldout_arrivals"]


logger = library_logger(__name__)


def heldout_arrivals(
    model: WorkloadModel, trace: Any, *, train_fraction: float = 0.7
) -> dict[str, dict[str, Any]]:
    """Held-out log-likelihood per arrival of each stream's chosen model against Poisson.

    Each stream's model class (Poisson, or an MMPP with the selected k and the model's EM seed)
    is refitted on the first ``train_fraction`` of the stream *in time* and scored on the rest
    (:func:`heldout_log_likelihood`).

    Parameters
    ----------
    model : WorkloadModel
        A fitted model.
    trace : pyarrow.Table
        The trace it was fitted to.
    train_fraction : float, default 0.7
        Share of the time span used for fitting.

    Returns
    -------
    dict
        Stream name → :meth:`HeldOutScore.to_dict` (``model`` and ``poisson`` are the
        log-likelihoods per arrival) plus ``"arrival_model"`` (the chosen label).
    """
    model._check_fitted()
    submit = np.asarray(trace.column("submit_s").to_numpy(zero_copy_only=False), np.float64)
    run = np.asarray(trace.column("run_s").to_numpy(zero_copy_only=False), np.float64)
    vo = list(trace.column("vo").to_pylist())
    order = np.argsort(submit, kind="stable")
    out: dict[str, dict[str, Any]] = {}
    for stream in model.streams_:
        mask = model._score_mask(stream, vo, run <= model.tau_s_)
        times = submit[order[mask[order]]]
        fresh: ArrivalModel
        if isinstance(stream.model, MMPPArrivals):
            fresh = MMPPArrivals(
                int(stream.model.n_states), rng=model.rng, max_iter=int(model.mmpp_max_iter)
            )
        else:
            fresh = PoissonArrivals()
        choice = model.arrival_choice_[stream.name]
        try:
            score = heldout_log_likelihood(times, fresh, train_fraction=train_fraction)
        except FitError as exc:
            # a short trace leaves too few arrivals in one part: say so, the fit itself stands
            logger.warning("stream %s: no held-out score (%s)", stream.name, exc)
            out[stream.name] = {
                "arrival_model": choice,
                **dict.fromkeys(("model", "poisson", "gain", "n_train", "n_test", "split_s")),
                "unavailable": str(exc),
            }
            continue
        out[stream.name] = {"arrival_model": choice, **score.to_dict()}
    return out


def _fmt(value: float | None) -> str:
    return "failed" if value is None or not math.isfinite(value) else f"{value:.1f}"


def _p(value: float) -> str:
    return f"{value:.2g}" if value >= 1e-300 else "< 1e-300"


def _dependence_line(lb: Mapping[str, Any] | None) -> str | None:
    """Describe a stream's Ljung-Box test (``WorkloadModel.arrival_dependence_``) in a line."""
    if not lb:
        return None
    if "unavailable" in lb:
        return f"  Ljung-Box on inter-arrival times: not tested ({lb['unavailable']})"
    verdict = (
        "dependent gaps, evidence for an MMPP over Poisson"
        if lb["pvalue"] < 0.05
        else "no evidence against independent gaps (Poisson)"
    )
    return (
        f"  Ljung-Box on inter-arrival times ({lb['n_gaps']} gaps, {lb['lags']} lags): "
        f"Q = {lb['statistic']:.1f}, p = {_p(lb['pvalue'])}, lag-1 ACF {lb['acf'][0]:.3f}: "
        f"{verdict}"
    )


def _fit_line(gof: Mapping[str, Any] | None) -> str | None:
    """Describe a class's goodness of fit (``WorkloadModel.runtime_gof_``) in a line."""
    if not gof:
        return None
    line = (
        f"  fit: KS D = {gof['ks_d']:.4f} ({gof['ks_d'] / gof['ks_noise']:.2g} x its noise "
        f"{gof['ks_noise']:.4f} at n = {gof['n']}), A2 = {gof['ad_a2']:.3g}"
    )
    lf = gof.get("lilliefors")
    if lf:
        bound = "<=" if lf["pvalue"] <= 0.001 else "="
        line += f"; Lilliefors exponential on {lf['on']}: D = {lf['statistic']:.4f}, "
        line += f"p {bound} {lf['pvalue']:.2g}"
    return line


def fit_command(
    trace_path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    arrivals: str = "auto",
    k_max: int = 3,
    seed: int = 0,
    streams: str = "site",
    per_vo: bool = False,
    name: str | None = None,
    replicas: int = 20,
) -> list[str]:
    """Fit a workload model to a trace file, write ``OUT/<name>.json`` and a fit summary.

    Parameters
    ----------
    trace_path : path
        A trace ``.parquet``.
    out : path
        Output folder; receives ``<name>.json`` (the model, :meth:`WorkloadModel.to_dict`) and
        ``<name>.fit-summary.json`` (summary with each stream's Ljung-Box test and each class's
        goodness of fit, BIC table, held-out scores, notes), each written atomically (a
        temporary file renamed: a killed fit leaves the old file or the new one).
    arrivals, k_max, streams, per_vo
        As in :class:`WorkloadModel`.
    seed : int, default 0
        Seed of the randomised MMPP EM starts.
    name : str, optional
        Model name (default: the trace file's stem).
    replicas : int, default 20
        Synthetic traces drawn over the trace's horizon for the IDC(t) and ACF band
        (:func:`replica_band`, seeded with ``seed``; stored as ``replica_band`` in the fit
        summary); 0 skips it.

    Returns
    -------
    list of str
        The summary lines to print.
    """
    path = Path(trace_path)
    trace = read_table(path, "trace")
    trace = trace.replace_schema_metadata(pq.read_schema(path).metadata)
    label = name or path.name.removesuffix(".parquet")
    model = WorkloadModel(
        arrivals=arrivals, k_max=k_max, streams=streams, per_vo=per_vo, name=label, rng=seed
    ).fit(trace)
    heldout = heldout_arrivals(model, trace)
    band = None
    if replicas:
        try:
            band = replica_band(model, trace, replicas=replicas, rng=seed)
        except FitError as exc:
            logger.warning("no replica band (%s)", exc)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    model_path = folder / f"{label}.json"
    write_text(model_path, json.dumps(model.to_dict(), allow_nan=False) + "\n")
    summary = {
        "summary": model.summary(),
        "bic_table": model.bic_table_,
        "heldout_arrivals": heldout,
        "fit_notes": model.fit_notes_,
        "replica_band": band.to_dict() if band is not None else None,
        "trace": str(path),
    }
    write_text(
        folder / f"{label}.fit-summary.json",
        json.dumps(summary, indent=2, allow_nan=False, default=str) + "\n",
    )
    lines = [
        f"{trace.num_rows} jobs, P = {model.cores_}, tau = {model.tau_s_:g} s, "
        f"interactive fraction {model.interactive_fraction_:.4f}"
    ]
    for stream in model.streams_:
        choice = model.arrival_choice_[stream.name]
        if isinstance(stream.model, MMPPArrivals):
            rates = ", ".join(f"{r:.4g}" for r in stream.model.rates_)
            params = f"rates [{rates}]/s, stationary {stream.model.stationary_rate_:.4g}/s"
        else:
            assert isinstance(stream.model, PoissonArrivals)
            params = f"rate {stream.model.rate_:.4g}/s"
        bics = model.bic_table_["arrivals"][stream.name]
        table = ", ".join(f"{k} {_fmt(v)}" for k, v in bics.items())
        lines.append(f"arrivals [{stream.name}]: {choice}, {params}; BIC {table}")
        dependence = _dependence_line(model.arrival_dependence_.get(stream.name))
        if dependence:
            lines.append(dependence)
        h = heldout[stream.name]
        if h.get("unavailable"):
            lines.append(
                f"  held-out LL per arrival (last 30 %): not available ({h['unavailable']})"
            )
        else:
            lines.append(
                f"  held-out LL per arrival (last 30 %): {h['model']:.4f} vs Poisson "
                f"{h['poisson']:.4f} (gain {h['gain']:+.4f} nats, {h['n_test']} intervals)"
            )
    for job_class, family in model.runtime_labels_.items():
        bic = model.bic_table_["runtimes"][job_class]
        refused = model.runtime_excluded_.get(job_class, {})
        lines.append(
            f"runtimes [{job_class}]: {family} (BIC {_fmt(bic.get(family))}; "
            + ", ".join(
                f"{k} {_fmt(v)}{' refused' if k in refused else ''}"
                for k, v in bic.items()
                if k != family
            )
            + ")"
        )
        fit = _fit_line(model.runtime_gof_.get(job_class))
        if fit:
            lines.append(fit)
        for candidate, reason in refused.items():
            lines.append(f"  {candidate} {reason}")
    if band is not None:
        width = 100 * (band.quantiles[2] - band.quantiles[0])
        idc_in, acf_in = int(band.idc_inside.sum()), int(band.acf_inside.sum())
        lines.append(
            f"replica band ({band.replicas} draws, {width:g} %): trace IDC(t) inside at "
            f"{idc_in}/{band.windows_s.shape[0]} windows, inter-arrival ACF at "
            f"{acf_in}/{band.lags.shape[0]} lags"
        )
    if model.fit_notes_:
        lines.append(f"{len(model.fit_notes_)} fit note(s) in {label}.fit-summary.json")
    lines.append(f"model written to {model_path}")
    return lines
