"""The report's figures: one function per figure, each returning a self-contained SVG string.

Figures are drawn with matplotlib's object API (no ``pyplot``, so no global figure state) and the
SVG backend, with text kept as text (``svg.fonttype: none``), a fixed ``svg.hashsalt`` and no date
or creator metadata, so the same data always give the same bytes. Every figure has labelled axes
with units; long curves are thinned to at most :data:`MAX_POINTS` points per line. The SVG is
stripped of its XML prologue, metadata and namespace declarations so that it can be inlined in
an HTML page (the HTML parser knows the SVG and XLink namespaces), and :func:`inline_svg` refuses
anything that could run script.
"""

from __future__ import annotations

import io
import math
import re
import warnings
import zlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import matplotlib as mpl
import numpy as np
import numpy.typing as npt
import pyarrow as pa
from markupsafe import Markup
from matplotlib import ticker
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from gridtrace.errors import GridtraceError

if TYPE_CHECKING:
    from gridtrace.models import ReplicaBand

__all__ = [
    "FIGURE_WIDTH_IN",
    "GAP_S",
    "MAX_POINTS",
    "POLICY_STYLES",
    "action_mix_svg",
    "class_distributions_svg",
    "fairness_over_time_svg",
    "idc_svg",
    "inline_svg",
    "interactive_w_over_time_svg",
    "interactive_wait_cdf_svg",
    "interarrival_cdf_svg",
    "learning_curves_by_variant_svg",
    "learning_curves_svg",
    "long_waits_svg",
    "model_acf_band_svg",
    "model_idc_band_svg",
    "model_idc_svg",
    "policy_style",
    "pool_series_svg",
    "ppo_learning_curve_svg",
    "profiles_svg",
    "responsiveness_inverse_cdf_svg",
    "runtime_cdf_svg",
    "runtime_qq_svg",
    "service_series_svg",
    "slowdown_vs_load_svg",
    "window_w_svg",
    "windowed_fairness_svg",
]

F64 = npt.NDArray[np.float64]

MAX_POINTS = 500
"""At most this many points per drawn line."""

WAIT_FLOOR_S = 1.0
"""Waits below this are drawn at it on the log axis of the wait CDF."""

_RC: Any = {
    "svg.fonttype": "none",
    "svg.hashsalt": "gridtrace-report",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 10.0,
    "axes.titlesize": 10.0,
    "axes.labelsize": 10.0,
    "xtick.labelsize": 10.0,
    "ytick.labelsize": 10.0,
    "legend.fontsize": 10.0,
    "legend.frameon": False,
    "axes.grid": True,
    "grid.color": "#d6dae1",
    "grid.linewidth": 0.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.3,
    "path.simplify": True,
}
# Every figure is 9 in (648 pt) wide: the page draws it at the width of its column (at most
# 60 rem), so at an 800 px window a 10 pt label is drawn at 10 × (752 / 648) × 4/3 ≈ 11.6 px.
FIGURE_WIDTH_IN = 9.0
_SIZE = (FIGURE_WIDTH_IN, 3.6)
_WIDE = (FIGURE_WIDTH_IN, 3.6)
_TALL = (FIGURE_WIDTH_IN, 4.8)
_SIZE_ATTRS = re.compile(r'\s(width|height)="[^"]*"')

_PROLOGUE = re.compile(r"^.*?(?=<svg\b)", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_XMLNS = re.compile(r'\s+xmlns(:\w+)?="[^"]*"')
_UNSAFE = re.compile(
    r"<\s*script|<\s*foreignobject|javascript:|\son\w+\s*=|<\s*iframe|<\s*embed|<\s*object|"
    r"https?://|(?<![#\w-])href\s*=\s*\"(?!#)",
    re.I,
)


def _figure(size: tuple[float, float] = _SIZE, *, panels: int = 1, sharex: bool = False) -> Figure:
    fig = Figure(figsize=size, layout="constrained")
    if panels == 1:
        fig.add_subplot()
    elif sharex:
        fig.subplots(panels, 1, sharex=True)
    else:
        fig.subplots(1, panels)
    return fig


def _svg(fig: Figure) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    text = _PROLOGUE.sub("", text, count=1)
    text = _METADATA.sub("", text, count=1)
    head, _, body = text.partition(">")
    head = _XMLNS.sub("", head)
    # no fixed size: the page scales the figure to its column (the viewBox keeps its shape)
    head = _SIZE_ATTRS.sub("", head)
    head = head.replace("<svg", '<svg role="img"', 1)
    return f"{head}>{body}".strip() + "\n"


def _draw(size: tuple[float, float], draw: Any, **kwargs: Any) -> str:
    with mpl.rc_context(_RC):
        fig = _figure(size, **kwargs)
        draw(fig, fig.axes)
        return _svg(fig)


def inline_svg(svg: str) -> Markup:
    """Mark an SVG string safe for inlining, after checking that it can run nothing.

    Raises
    ------
    GridtraceError
        If the SVG does not start with ``<svg`` or holds a script, an event handler, a foreign
        object, an external link or any absolute URL.
    """
    text = svg.strip()
    if not text.startswith("<svg"):
        raise GridtraceError("a report figure must be a bare <svg> element")
    found = _UNSAFE.search(text)
    if found:
        raise GridtraceError(f"a report figure holds unsafe content: {found.group(0)!r}")
    return Markup(text)  # checked just above; drawn by matplotlib, not taken from a log


# --- thinning -----------------------------------------------------------------------------------


def thin_indices(size: int, limit: int = MAX_POINTS) -> npt.NDArray[np.int64]:
    """At most ``limit`` evenly spaced indices into ``range(size)``, first and last included."""
    if size <= limit:
        return np.arange(size, dtype=np.int64)
    return np.unique(np.linspace(0, size - 1, limit).round().astype(np.int64))


def ecdf_log(values: npt.ArrayLike, *, floor: float, limit: int = MAX_POINTS) -> tuple[F64, F64]:
    """Evaluate the empirical CDF of ``values`` at ``limit`` log-spaced points up to the max.

    Values below ``floor`` count as ``floor``, so the first point is the share at or below it.
    """
    x = np.sort(np.maximum(np.asarray(values, dtype=np.float64), floor))
    if x.size == 0:
        return np.empty(0), np.empty(0)
    top = max(float(x[-1]), floor * 1.0001)
    grid = np.geomspace(floor, top, limit)
    return grid, np.searchsorted(x, grid, side="right") / x.size


def inverse_cdf(values: npt.ArrayLike, *, limit: int = MAX_POINTS) -> tuple[F64, F64]:
    """Quantiles of ``values`` at ``limit`` evenly spaced fractions of the jobs in [0, 1]."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return np.empty(0), np.empty(0)
    fraction = np.linspace(0.0, 1.0, min(limit, max(x.size, 2)))
    return fraction, np.quantile(x, fraction)


def time_unit(span_s: float) -> tuple[float, str]:
    """Seconds per unit and its name for a time axis covering ``span_s`` seconds."""
    if span_s <= 3 * 86_400:
        return 3600.0, "h"
    return 86_400.0, "days"


POLICY_STYLES: dict[str, tuple[str, str]] = {
    # policy: (colour, dash); the same in every figure of every report
    "native": ("#7f7f7f", "-"),
    "fifo": ("#222222", "-"),
    "sjf": ("#0072b2", "-"),
    "sjf-est": ("#56b4e9", "--"),
    "easy": ("#009e73", "-."),
    "easy-est": ("#5fd3a8", ":"),
    "hrrn": ("#d55e00", "--"),
    "hrrn-est": ("#e69f00", "-."),
    "edf": ("#cc79a7", ":"),
    "fairshare": ("#8c564b", "--"),
    "oracle": ("#17becf", ":"),
    "rl": ("#9467bd", "-"),
    "rl-mlp": ("#9467bd", "-"),
    "rl-esn": ("#e377c2", "-"),
    "rl-mlp-slowdown": ("#6a3d9a", "--"),
    "rl-esn-slowdown": ("#b15990", "--"),
    # the multi-resource setup (issue 15): PPO and the baselines not above
    "ppo": ("#c51b7d", "-"),
    "packer": ("#4d9221", "-."),
    "tetris": ("#b8860b", "--"),
    "random": ("#a6a6a6", ":"),
}
"""Policy → (colour, dash) in every figure; RL variants and unknown names are derived from it."""

# RL variants of the EGEE experiments: a colour per (pool, runtimes), a dash per weight
_RL_FAMILY = {
    "rig-ora": "#9467bd",
    "rig-est": "#c5b0d5",
    "ela-ora": "#bcbd22",
    "ela-est": "#8c8c00",
}
_RL_DASH = {"0": ":", "0.5": "-", "1": "--", "slowdown": "-."}
_SPARE = ("#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#31a354")
_DASHES = ("-", "--", "-.", ":")
_MODE = re.compile(r"^(.*?)\s*\((frozen|continuing)\)$")
_VARIANT = re.compile(r"^((?:rig|ela)-(?:ora|est))-(.+)$")


def policy_style(name: str) -> dict[str, Any]:
    """Return the colour and dash of a policy or RL variant, the same in every figure and report.

    ``"<name> (frozen)"`` and ``"<name> (continuing)"`` share the colour of ``<name>``, the
    continuing run drawn thinner. A name not in :data:`POLICY_STYLES` gets a colour from a
    hash of the name, so it too keeps it across figures and reports.
    """
    mode = None
    found = _MODE.match(name)
    if found:
        name, mode = found.groups()
    if name in POLICY_STYLES:
        colour, dash = POLICY_STYLES[name]
    elif (variant := _VARIANT.match(name)) is not None:
        colour = _RL_FAMILY[variant.group(1)]
        dash = _RL_DASH.get(variant.group(2), "-")
    else:
        code = zlib.crc32(name.encode())
        colour, dash = _SPARE[code % len(_SPARE)], _DASHES[(code // 7) % len(_DASHES)]
    style: dict[str, Any] = {"color": colour, "linestyle": dash}
    if mode == "continuing":
        style["linewidth"] = 0.9
    return style


def _policy_styles(names: Sequence[str]) -> dict[str, dict[str, Any]]:
    return {name: policy_style(name) for name in names}


def _legend(fig: Figure, *, ncols: int = 4) -> None:
    """One legend for the figure, above its axes (outside the data), entries named once."""
    handles: dict[str, Any] = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if not label.startswith("_"):
                handles.setdefault(label, handle)
    if handles:
        fig.legend(
            list(handles.values()),
            list(handles),
            loc="outside upper center",
            ncols=min(ncols, len(handles)),
        )


# --- the workload section -----------------------------------------------------------------------

_CLASS_STYLE: dict[str, dict[str, Any]] = {
    "interactive": {"color": "#1f77b4", "linestyle": "-"},
    "batch": {"color": "#d62728", "linestyle": "-"},
    "all": {"color": "#333333", "linestyle": "--"},
}


def _hist_cdf(hist: pa.Table, kind: str, group: str) -> tuple[F64, F64]:
    kinds = hist.column("group_kind").to_pylist()
    groups = hist.column("group").to_pylist()
    rows = [
        i for i, (k, g) in enumerate(zip(kinds, groups, strict=True)) if k == kind and g == group
    ]
    if not rows:
        return np.empty(0), np.empty(0)
    hi = np.asarray(hist.column("bin_hi_s").to_numpy())[rows]
    counts = np.asarray(hist.column("jobs").to_numpy(), dtype=np.float64)[rows]
    total = counts.sum()
    if not total > 0:
        return np.empty(0), np.empty(0)
    cdf = np.cumsum(counts) / total
    last = int(np.searchsorted(cdf, 1.0 - 1e-12)) + 1  # drop the empty tail after the maximum
    return hi[:last], cdf[:last]


def runtime_cdf_svg(runtime_hist: pa.Table, *, tau_s: float) -> str:
    """Runtime CDF per class (interactive, batch, all) on a log time axis.

    Parameters
    ----------
    runtime_hist : pyarrow.Table
        :attr:`gridtrace.stats.WorkloadStats.runtime_hist` (rows with ``group_kind == "class"``).
    tau_s : float
        The interactive threshold τ, marked by a vertical line.
    """

    def draw(fig: Figure, axes: list[Axes]) -> None:
        ax = axes[0]
        for cls, style in _CLASS_STYLE.items():
            x, y = _hist_cdf(runtime_hist, "class", cls)
            if x.size:
                ax.step(x, y, where="post", label=cls, **style)
        ax.axvline(tau_s, color="#888888", linewidth=0.8, linestyle=":")
        ax.annotate(f" τ = {tau_s:g} s", (tau_s, 0.03), color="#555555")
        ax.set_xscale("log")
        ax.set_ylim(0.0, 1.01)
        ax.set_xlabel("runtime (s, log scale)")
        ax.set_ylabel("jobs with runtime ≤ x (fraction)")
        _legend(fig)

    return _draw(_SIZE, draw)


def interarrival_cdf_svg(interarrival_hist: pa.Table, *, mean_s: float | None = None) -> str:
    """CDF of the inter-arrival times on a log time axis (gaps under 1 s are counted at 1 s).

    Parameters
    ----------
    interarrival_hist : pyarrow.Table
        :attr:`gridtrace.stats.WorkloadStats.interarrival_hist`.
    mean_s : float, optional
        The mean inter-arrival time, marked by a vertical line; with it an exponential CDF of
        the same mean (Poisson arrivals) is drawn for comparison.
    """

    def draw(fig: Figure, axes: list[Axes]) -> None:
        ax = axes[0]
        x, y = _hist_cdf(interarrival_hist, "all", "all")
        if x.size:
            ax.step(x, y, where="post", color="#1f77b4", label="observed")
        if mean_s is not None and math.isfinite(mean_s) and mean_s > 0:
            top = float(x[-1]) if x.size else mean_s * 10
            grid = np.geomspace(1.0, max(top, mean_s * 10), 200)
            ax.plot(
                grid,
                1.0 - np.exp(-grid / mean_s),
                color="#888888",
                linestyle="--",
                label="exponential, same mean",
            )
            ax.axvline(mean_s, color="#888888", linewidth=0.8, linestyle=":")
        ax.set_xscale("log")
        ax.set_ylim(0.0, 1.01)
        ax.set_xlabel("time between consecutive submissions (s, log scale)")
        ax.set_ylabel("gaps ≤ x (fraction)")
        _legend(fig)

    return _draw(_SIZE, draw)


def _coarsen(start: F64, work: F64, bin_s: float) -> tuple[F64, F64, float]:
    """Merge consecutive bins so that at most MAX_POINTS remain."""
    factor = max(1, math.ceil(start.size / MAX_POINTS))
    if factor == 1:
        return start, work, bin_s
    pad = (-start.size) % factor
    merged = np.concatenate((work, np.zeros(pad))).reshape(-1, factor).sum(axis=1)
    return start[::factor], merged, bin_s * factor


GAP_S = 86_400.0
"""Bins without a submission that together last this long or more are drawn as a gap."""


def _long_runs(mask: npt.NDArray[np.bool_], length: int) -> npt.NDArray[np.bool_]:
    """Mark the entries of ``mask`` in runs of at least ``length`` consecutive True values."""
    out = np.zeros(mask.size, dtype=bool)
    i = 0
    while i < mask.size:
        if mask[i]:
            j = i
            while j < mask.size and mask[j]:
                j += 1
            if j - i >= length:
                out[i:j] = True
            i = j
        else:
            i += 1
    return out


def _steps(ax: Axes, values: F64, edges: F64, *, fill: bool = False, **style: Any) -> None:
    """Draw ``values`` as steps between ``edges``; NaN values are left out (a gap, not 0)."""
    x = np.repeat(edges, 2)[1:-1]
    y = np.repeat(values, 2)
    ax.plot(x, y, **style)
    if fill:
        shown = np.isfinite(y)
        ax.fill_between(
            x, np.where(shown, y, 0.0), where=shown, alpha=0.5, linewidth=0, color=style["color"]
        )


def _shade_gaps(ax: Axes, gap: npt.NDArray[np.bool_], edges: F64) -> None:
    """Shade the bins of ``gap`` in grey, labelled once."""
    label = "no submission for a day or more"
    for i in np.flatnonzero(gap):
        ax.axvspan(edges[i], edges[i + 1], color="#bbbbbb", alpha=0.4, linewidth=0, label=label)
        label = "_gap"


def service_series_svg(
    service_requests: pa.Table, *, cores: int, rho: float | None = None, bin_s: float = 10_000.0
) -> str:
    """Draw the requested work per bin (top) and the load it offers the P cores (bottom).

    Parameters
    ----------
    service_requests : pyarrow.Table
        :attr:`gridtrace.stats.WorkloadStats.service_requests` (``bin_start_s``,
        ``work_core_s``).
    cores : int
        P: the offered load of a bin is its work over P × bin.
    rho : float, optional
        The core-weighted ρ of the whole trace, drawn as a horizontal line.
    bin_s : float
        The bin of the table, seconds (bins are merged if there are more than MAX_POINTS).
    """
    start = np.asarray(service_requests.column("bin_start_s").to_numpy(), dtype=np.float64)
    work = np.asarray(service_requests.column("work_core_s").to_numpy(), dtype=np.float64)
    start, work, width = _coarsen(start, work, bin_s)
    span = float(start[-1] - start[0] + width) if start.size else 0.0
    per, unit = time_unit(span)
    # a day or more without a single submission is a gap (in the log, or in the site's
    # service), not a quiet period: drawn as a gap, shaded, not as zero work
    gap = _long_runs(work <= 0, max(1, math.ceil(GAP_S / width)))
    work = np.where(gap, np.nan, work)
    load = work / (cores * width)

    def draw(fig: Figure, axes: list[Axes]) -> None:
        top, bottom = axes
        edges = np.append(start, start[-1] + width) / per if start.size else np.empty(0)
        if start.size:
            _steps(top, work / 3600.0, edges, fill=True, color="#1f77b4")
            _steps(bottom, load, edges, color="#d62728", label="offered load per bin")
            for ax in (top, bottom):
                _shade_gaps(ax, gap, edges)
        top.set_ylabel("requested work\n(core-h per bin)")
        bottom.axhline(1.0, color="#333333", linewidth=0.8, label="capacity (1)")
        if rho is not None and math.isfinite(rho):
            bottom.axhline(rho, color="#888888", linestyle="--", label=f"ρ = {rho:.2f}")
        bottom.set_ylabel("offered load\n(work / (P · bin))")
        bottom.set_xlabel(
            f"time since the first submission ({unit}); bin = {width:,.0f} s ({width / 3600:.1f} h)"
        )
        _legend(fig)

    return _draw(_TALL, draw, panels=2, sharex=True)


def _idc_axes(ax: Axes) -> None:
    """Log–log IDC axes with the Poisson reference line (IDC = 1) and labelled units."""
    ax.axhline(1.0, color="#888888", linestyle="--", label="Poisson (IDC = 1)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain = ticker.FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(plain)
    low, high = ax.get_ylim()
    # within a decade, label the minor ticks as plain numbers; beyond it, only the decades
    ax.yaxis.set_minor_formatter(plain if high / low < 10 else ticker.NullFormatter())
    ax.set_xlabel("window length t (s, log scale)")
    ax.set_ylabel("IDC(t) (dimensionless, log scale)")


def idc_svg(idc: pa.Table) -> str:
    """IDC(t) = Var N(t) / E N(t) on log–log axes, with the Poisson line IDC = 1.

    Parameters
    ----------
    idc : pyarrow.Table
        :attr:`gridtrace.stats.WorkloadStats.idc` (``t_s``, ``idc``).
    """
    t = np.asarray(idc.column("t_s").to_numpy(), dtype=np.float64)
    value = np.asarray(idc.column("idc").to_numpy(), dtype=np.float64)
    keep = np.isfinite(value) & (value > 0)

    def draw(fig: Figure, axes: list[Axes]) -> None:
        ax = axes[0]
        if keep.any():
            ax.plot(t[keep], value[keep], color="#1f77b4", marker="o", markersize=3, label="trace")
        _idc_axes(ax)
        _legend(fig)

    return _draw(_SIZE, draw)


def profiles_svg(profiles: pa.Table, *, timezone: str) -> str:
    """Mean arrivals per hour, by hour of day (left) and hour of week (right), in local time.

    Each bin is the arrivals in it divided by how often the trace covers that hour, so weekdays
    covered a different number of times compare fairly.

    Parameters
    ----------
    profiles : pyarrow.Table
        :attr:`gridtrace.stats.WorkloadStats.profiles` (``profile``, ``bin``, ``per_hour``).
    timezone : str
        The zone of the local time, shown on the axes.
    """
    kind = profiles.column("profile").to_pylist()
    per_hour = profiles.column("per_hour").to_numpy(zero_copy_only=False)
    rate = np.asarray(per_hour, dtype=np.float64)  # an hour never covered: NaN, a gap
    daily = np.asarray([k == "daily" for k in kind])
    weekly = np.asarray([k == "weekly" for k in kind])

    def draw(fig: Figure, axes: list[Axes]) -> None:
        left, right = axes
        _steps(left, rate[daily], np.arange(25.0), fill=True, color="#1f77b4")
        left.set_xlim(0, 24)
        left.set_xticks(range(0, 25, 6))
        left.set_xlabel(f"hour of day (h, local time in {timezone})")
        left.set_ylabel("mean arrivals in that hour (jobs/h)")
        _steps(right, rate[weekly], np.arange(169.0), color="#1f77b4")
        right.set_xlim(0, 168)
        right.set_xticks(np.arange(12, 168, 24), ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"])
        right.set_xticks(np.arange(0, 169, 24), minor=True)
        right.grid(False, which="major", axis="x")
        right.grid(True, which="minor", axis="x")
        right.set_xlabel(f"day of week (hourly bins, local time in {timezone})")
        right.set_ylabel("mean arrivals in that hour (jobs/h)")

    return _draw(_WIDE, draw, panels=2)


# --- the scheduling section ---------------------------------------------------------------------


def interactive_wait_cdf_svg(waits: Mapping[str, npt.ArrayLike], *, threshold_s: float) -> str:
    """CDF of the interactive jobs' wait per policy, log time axis.

    Parameters
    ----------
    waits : mapping of str to array
        Policy → the waits (s) of its measured interactive jobs.
    threshold_s : float
        The "waited under two minutes" threshold, marked by a vertical line.
    """
    styles = _policy_styles(list(waits))

    def draw(fig: Figure, axes: list[Axes]) -> None:
        ax = axes[0]
        lowest = 1.0
        for name, values in waits.items():
            x, y = ecdf_log(values, floor=WAIT_FLOOR_S)
            if x.size:
                ax.plot(x, y, label=name, **styles[name])
                lowest = min(lowest, float(y[0]))
        # zoom in on the part above the jobs that did not wait at all
        bottom = max(0.0, math.floor((lowest - 0.05) * 10) / 10)
        ax.axvline(threshold_s, color="#888888", linewidth=0.8, linestyle=":")
        ax.annotate(
            f" {threshold_s:g} s", (threshold_s, bottom + 0.03 * (1 - bottom)), color="#555555"
        )
        ax.set_xscale("log")
        ax.set_ylim(bottom, 1.0 + 0.01 * (1 - bottom))
        ax.set_xlabel(f"wait of interactive jobs (s, log scale; < {WAIT_FLOOR_S:g} s drawn at it)")
        ax.set_ylabel("interactive jobs with wait ≤ x (fraction)")
        _legend(fig)

    return _draw(_SIZE, draw)


def responsiveness_inverse_cdf_svg(
    responsiveness: Mapping[str, Mapping[str, npt.ArrayLike]],
) -> str:
    """Inverse CDF of W = run / (run + wait) per policy: one panel per class.

    Parameters
    ----------
    responsiveness : mapping
        Class name (e.g. ``"interactive"``, ``"all"``) → policy → W of its measured jobs.
    """
    classes = list(responsiveness)
    names: list[str] = []
    for per_policy in responsiveness.values():
        names += [n for n in per_policy if n not in names]
    styles = _policy_styles(names)

    def draw(fig: Figure, axes: list[Axes]) -> None:
        for ax, cls in zip(axes, classes, strict=True):
            waited = 0.0
            for name, values in responsiveness[cls].items():
                x, y = inverse_cdf(values)
                if x.size:
                    ax.plot(x, y, label=name, **styles[name])
                    waited = max(waited, float(np.mean(np.asarray(values) < 1.0 - 1e-9)))
            # zoom in on the jobs that waited (W < 1); the rest sit at W = 1
            right = 1.0 if waited > 0.8 else max(0.05, math.ceil((waited * 1.25) * 20) / 20)
            ax.set_xlim(0.0, right)
            ax.set_ylim(0.0, 1.02)
            ax.set_title(f"{cls} jobs")
            ax.set_xlabel("jobs, sorted by W (fraction)")
            ax.set_ylabel("responsiveness W (0–1)")
        _legend(fig)

    return _draw(_WIDE, draw, panels=max(1, len(classes)))


def fairness_over_time_svg(
    series: Mapping[str, tuple[npt.ArrayLike, npt.ArrayLike]], *, bins: int = 200
) -> str:
    """Fairness F at each election over time, per policy, averaged in time bins.

    Parameters
    ----------
    series : mapping
        Policy → (election times in seconds from the trace origin, F at those elections).
    bins : int, default 200
        Time bins over the common span; each line shows the mean F of the elections in a bin.
    """
    styles = _policy_styles(list(series))
    clean: dict[str, tuple[F64, F64]] = {}
    for name, (t, f) in series.items():
        times = np.asarray(t, dtype=np.float64)
        values = np.asarray(f, dtype=np.float64)
        ok = np.isfinite(times) & np.isfinite(values)
        if ok.any():
            clean[name] = (times[ok], values[ok])
    lo = min((float(t.min()) for t, _ in clean.values()), default=0.0)
    hi = max((float(t.max()) for t, _ in clean.values()), default=1.0)
    per, unit = time_unit(hi - lo)
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, min(bins, MAX_POINTS) + 1)

    def draw(fig: Figure, axes: list[Axes]) -> None:
        ax = axes[0]
        for name, (times, values) in clean.items():
            index = np.clip(np.searchsorted(edges, times, side="right") - 1, 0, edges.size - 2)
            count = np.bincount(index, minlength=edges.size - 1)
            total = np.bincount(index, weights=values, minlength=edges.size - 1)
            used = count > 0
            centre = (edges[:-1] + edges[1:]) / 2
            ax.plot(centre[used] / per, total[used] / count[used], label=name, **styles[name])
        ax.set_ylim(0.0, 1.02)
        ax.set_xlabel(f"election time ({unit} from the trace origin)")
        ax.set_ylabel("fairness F at election (0–1)")
        _legend(fig)

    return _draw(_SIZE, draw)


def elastic_series_svg(
    series: Mapping[str, Mapping[str, npt.ArrayLike]], *, pool_cores: int | None = None
) -> str:
    """Pool size and utilisation over time of elastic provisioning runs (two stacked panels).

    Parameters
    ----------
    series : mapping
        Run label → ``{"time_s", "pool_size", "utilisation"}``: one entry per provisioning
        decision (the size chosen then, and U = used / provisioned core-seconds over the interval
        that ended there).
    pool_cores : int, optional
        The site's P, drawn as a reference line on the pool size panel.
    """
    styles = _policy_styles(list(series))
    clean = {
        name: tuple(
            np.asarray(s[k], dtype=np.float64) for k in ("time_s", "pool_size", "utilisation")
        )
        for name, s in series.items()
    }
    times = [t for t, _, _ in clean.values() if t.size]
    lo = min((float(t.min()) for t in times), default=0.0)
    hi = max((float(t.max()) for t in times), default=1.0)
    per, unit = time_unit(hi - lo)

    def draw(fig: Figure, axes: list[Axes]) -> None:
        top, bottom = axes
        for name, (t, size, util) in clean.items():
            idx = thin_indices(t.size)
            top.step(t[idx] / per, size[idx], where="post", label=name, **styles[name])
            bottom.plot(t[idx] / per, util[idx], label=name, **styles[name])
        if pool_cores is not None:
            top.axhline(pool_cores, color="#777777", linewidth=0.8, linestyle=":", label="P")
        top.set_ylabel("pool size (cores)")
        bottom.set_ylabel("utilisation U (0–1)")
        bottom.set_ylim(0.0, 1.02)
        bottom.set_xlabel(f"decision time ({unit} from the trace origin)")
        _legend(fig)

    return _draw(_TALL, draw, panels=2, sharex=True)


# --- the model section --------------------------------------------------------------------------


def runtime_qq_svg(
    pairs: Mapping[str, tuple[npt.ArrayLike, npt.ArrayLike]],
    *,
    floor_s: float = 1.0,
    limit: int = MAX_POINTS,
    walltime_s: float | None = None,
) -> str:
    """Quantile–quantile plot of runtimes, trace against a synthetic sample, one panel per class.

    Parameters
    ----------
    pairs : mapping of str to (array_like, array_like)
        Class name → (the fitted trace's runtimes, the synthetic sample's runtimes), seconds.
        A class with an empty side is drawn as an empty panel saying so.
    floor_s : float, default 1.0
        Runtimes below this are drawn at it (log axes).
    limit : int, default MAX_POINTS
        At most this many quantiles per panel, at probabilities (i − ½) / m.
    walltime_s : float, optional
        The site's walltime limit: drawn as dotted lines on both axes, with the number of
        synthetic runtimes beyond it, in every panel whose runtimes reach a tenth of it (not in
        an interactive panel far below it).
    """
    names = list(pairs) or ["all"]

    def draw(fig: Figure, axes: list[Axes]) -> None:
        for ax, name in zip(axes, names, strict=True):
            observed, synthetic = pairs.get(name, ([], []))
            x = np.asarray(observed, dtype=np.float64)
            y = np.asarray(synthetic, dtype=np.float64)
            x, y = x[np.isfinite(x)], y[np.isfinite(y)]
            ax.set_title(f"{name} jobs")
            ax.set_xlabel("trace runtime quantile (s, log scale)")
            ax.set_ylabel("synthetic runtime quantile (s, log scale)")
            if x.size == 0 or y.size == 0:
                ax.text(0.5, 0.5, "no jobs", transform=ax.transAxes, ha="center")
                continue
            m = min(limit, x.size, y.size)
            probs = (np.arange(m) + 0.5) / m
            qx = np.maximum(np.quantile(x, probs), floor_s)
            qy = np.maximum(np.quantile(y, probs), floor_s)
            ax.plot(qx, qy, linestyle="none", marker="o", markersize=2.5, color="#1f77b4")
            low = float(min(qx.min(), qy.min()))
            high = float(max(qx.max(), qy.max()))
            ax.plot([low, high], [low, high], color="#888888", linestyle="--", label="y = x")
            if walltime_s is not None and high >= 0.1 * walltime_s:  # a panel it falls in
                over = int(np.sum(y > walltime_s))
                line: dict[str, Any] = {"color": "#d62728", "linestyle": ":", "linewidth": 1.0}
                ax.axhline(walltime_s, label=f"walltime limit {walltime_s:,.0f} s", **line)
                ax.axvline(walltime_s, **line)
                ax.annotate(
                    f"{over:,d} synthetic > limit",
                    (0.02, 0.96),
                    xycoords="axes fraction",
                    va="top",
                    color="#d62728",
                )
            ax.set_xscale("log")
            ax.set_yscale("log")
        _legend(fig)

    return _draw(_WIDE, draw, panels=len(names))


def model_idc_svg(trace_idc: pa.Table, synthetic_idc: pa.Table) -> str:
    """IDC(t) of a trace against that of a synthetic trace drawn from its model, log–log axes.

    Parameters
    ----------
    trace_idc, synthetic_idc : pyarrow.Table
        :func:`gridtrace.stats.idc_curve` tables (``t_s``, ``idc``).
    """

    def draw(fig: Figure, axes: list[Axes]) -> None:
        ax = axes[0]
        styles: tuple[tuple[str, pa.Table, dict[str, Any]], ...] = (
            ("trace", trace_idc, {"color": "#1f77b4", "marker": "o"}),
            ("synthetic (model)", synthetic_idc, {"color": "#d62728", "marker": "s"}),
        )
        for label, table, style in styles:
            t = np.asarray(table.column("t_s").to_numpy(), dtype=np.float64)
            value = np.asarray(table.column("idc").to_numpy(), dtype=np.float64)
            keep = np.isfinite(value) & (value > 0)
            if keep.any():
                ax.plot(t[keep], value[keep], markersize=3, label=label, **style)
        _idc_axes(ax)
        _legend(fig)

    return _draw(_SIZE, draw)


def _band_label(band: ReplicaBand) -> str:
    low, _, high = band.quantiles
    return f"model: {100 * (high - low):g} % band of {band.replicas} replicas"


def _trace_over_band(
    ax: Axes,
    x: F64,
    curves: tuple[F64, ...],
    inside: npt.NDArray[np.bool_],
    label: str,
    *,
    positive: bool,
) -> None:
    """Draw a trace's curve over the shaded band and median of its model's replicas.

    ``curves`` is (low, median, high, trace); points where the trace is outside the band are
    ringed in red. With ``positive`` only values > 0 are drawn (log axes).
    """
    low, median, high, trace = curves
    shown = np.isfinite(low) & np.isfinite(high)
    if positive:
        shown &= low > 0
    if shown.any():
        ax.fill_between(
            x[shown], low[shown], high[shown], color="#d62728", alpha=0.2, linewidth=0, label=label
        )
        ax.plot(
            x[shown], median[shown], color="#d62728", linewidth=1.0, label="model: replica median"
        )
    keep = np.isfinite(trace)
    if positive:
        keep &= trace > 0
    if keep.any():
        ax.plot(x[keep], trace[keep], color="#1f77b4", marker="o", markersize=3, label="trace")
    out = keep & ~inside
    if out.any():
        ax.plot(
            x[out],
            trace[out],
            linestyle="none",
            marker="o",
            markersize=7,
            markerfacecolor="none",
            markeredgecolor="#d62728",
            label="trace outside the band",
        )


def model_idc_band_svg(band: ReplicaBand) -> str:
    """IDC(t) of a trace over the shaded pointwise band of its model's replicas, log–log axes.

    Parameters
    ----------
    band : gridtrace.models.ReplicaBand
        :func:`gridtrace.models.replica_band`'s result: the trace's IDC, the replicas' band and
        median at each window. Windows where the trace is outside the band are ringed in red.
    """
    t = band.windows_s

    def draw(fig: Figure, axes: list[Axes]) -> None:
        ax = axes[0]
        curves = (band.idc_low, band.idc_median, band.idc_high, band.idc_trace)
        _trace_over_band(ax, t, curves, band.idc_inside, _band_label(band), positive=True)
        _idc_axes(ax)
        _legend(fig)

    return _draw(_TALL, draw)


def model_acf_band_svg(band: ReplicaBand) -> str:
    """Inter-arrival ACF of a trace over the shaded pointwise band of its model's replicas.

    Parameters
    ----------
    band : gridtrace.models.ReplicaBand
        :func:`gridtrace.models.replica_band`'s result: the trace's ACF, the replicas' band and
        median at lags 1 … L. Lags where the trace is outside the band are ringed in red.
    """
    lag = band.lags.astype(np.float64)

    def draw(fig: Figure, axes: list[Axes]) -> None:
        ax = axes[0]
        curves = (band.acf_low, band.acf_median, band.acf_high, band.acf_trace)
        _trace_over_band(ax, lag, curves, band.acf_inside, _band_label(band), positive=False)
        ax.axhline(0.0, color="#888888", linestyle="--", label="Poisson (ACF = 0)")
        ax.set_xlabel("lag k (inter-arrival times)")
        ax.set_ylabel("gap ACF (dimensionless)")
        _legend(fig)

    return _draw(_TALL, draw)


# --- the contention section (RL against the baselines, per regime) ------------------------------

_FLAG_COLOUR = "#d62728"

POLICY_STYLES.update(
    {
        # the contention experiments' elastic runs (gridtrace.sim.rl.run_contention)
        "threshold": ("#8c6d31", "--"),
        "static-best": ("#393b79", ":"),
        "rl-elastic": ("#bcbd22", "-"),
    }
)
_FLAG_SHADE: dict[str, Any] = {"color": _FLAG_COLOUR, "alpha": 0.12, "linewidth": 0}
_PRETRAIN_SHADE: dict[str, Any] = {"color": "#999999", "alpha": 0.18, "linewidth": 0}


_GEOMETRY = re.compile(r'\b(d|x|y|transform)="([^"]*)"')
_DECIMALS = re.compile(r"(\d+\.\d)\d+")


def _compact(svg: str) -> str:
    """Return the SVG with its geometry to 0.1 pt and its path commands on one line.

    The contention figures hold many curves; matplotlib writes six decimals per coordinate.
    Only coordinates (``d``, ``x``, ``y``, ``transform``) are touched, never text.
    """

    def shorten(found: re.Match[str]) -> str:
        value = _DECIMALS.sub(r"\1", found.group(2)).replace(" \n", " ")
        return f'{found.group(1)}="{value}"'

    return _GEOMETRY.sub(shorten, svg)


def _draw_compact(size: tuple[float, float], draw: Any, **kwargs: Any) -> str:
    return _compact(_draw(size, draw, **kwargs))


def _floats_of(values: Any) -> F64:
    """Return the values as floats, None as NaN (a gap when drawn)."""
    return np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)


def _plain_log(axis: Any) -> None:
    """Label a log axis with plain numbers at full size (no 10ⁿ superscripts), no minor ticks.

    Call it after drawing: an axis spanning up to two and a half decades gets ticks at 1, 2
    and 5 times each power of ten, a wider one at the powers only, so the labels never crowd.
    """
    lo, hi = axis.get_view_interval()
    decades = math.log10(hi / lo) if lo > 0 and hi > lo else 1.0
    subs = (1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,)
    axis.set_major_locator(ticker.LogLocator(subs=subs))
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    axis.set_minor_locator(ticker.NullLocator())


def _time_axis(times_s: Sequence[F64], origin_s: float) -> tuple[float, str]:
    span = max((float(np.nanmax(t)) for t in times_s if t.size), default=origin_s + 1.0)
    return time_unit(max(span - origin_s, 1.0))


def learning_curves_svg(seeds: Sequence[Mapping[str, Any]]) -> str:
    """Return and interactive mean W per training episode, one line per agent seed.

    Parameters
    ----------
    seeds : sequence of mapping
        The summary's ``learning_curves["seeds"]``: ``seed_index`` and ``episodes`` (each with
        ``episode``, ``behaviour``, ``return``, ``interactive_w_mean``, ``all_w_mean``).
        Episodes whose behaviour is not ``sarsa`` are pre-training (a rule chose) and are
        shaded.
    """

    def draw(fig: Figure, axes: list[Axes]) -> None:
        top, bottom = axes
        pre: set[int] = set()
        colours = ("#9467bd", "#c5b0d5", "#6a3d9a", "#b15990", "#e377c2")
        for k, seed in enumerate(seeds):
            eps = list(seed.get("episodes") or [])
            x = np.asarray([e["episode"] for e in eps], dtype=np.float64)
            pre |= {int(e["episode"]) for e in eps if e.get("behaviour") not in (None, "sarsa")}
            style: dict[str, Any] = {"color": colours[k % len(colours)], "marker": "o"}
            style["markersize"] = 3
            label = "agent seeds" if k == 0 else "_seed"
            top.plot(x, _floats_of(e.get("return") for e in eps), label=label, **style)
            bottom.plot(x, _floats_of(e.get("interactive_w_mean") for e in eps), **style)
            bottom.plot(
                x,
                _floats_of(e.get("all_w_mean") for e in eps),
                linestyle=":",
                color=style["color"],
                label="all jobs' W (dotted)" if k == 0 else "_all",
            )
        label = "pre-training episode (a rule chooses, the agent learns)"
        for e in sorted(pre):
            for ax in axes:
                ax.axvspan(e - 0.5, e + 0.5, label=label, **_PRETRAIN_SHADE)
                label = "_pre"
        top.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:.3g}"))
        top.set_ylabel("return (sum of rewards)")
        bottom.set_ylabel("interactive mean W (0–1)")
        bottom.set_ylim(0.0, 1.02)
        bottom.set_xlabel("training episode (on the train part)")
        bottom.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
        _legend(fig)

    return _draw_compact(_TALL, draw, panels=2, sharex=True)


def action_mix_svg(
    time_s: Sequence[float], shares: Mapping[str, Sequence[float | None]], *, origin_s: float
) -> str:
    """Share of the elections that chose an interactive job, per time bin, per policy.

    Parameters
    ----------
    time_s : sequence of float
        Bin centres, seconds (trace time).
    shares : mapping
        Policy → the interactive share per bin (None where a bin has no election: a gap).
    origin_s : float
        Start of the test period; the axis counts from it.
    """
    t = np.asarray(time_s, dtype=np.float64)
    per, unit = _time_axis([t], origin_s)
    styles = _policy_styles(list(shares))

    def draw(fig: Figure, axes: list[Axes]) -> None:
        ax = axes[0]
        for name, values in shares.items():
            ax.plot((t - origin_s) / per, _floats_of(values), label=name, **styles[name])
        ax.set_ylim(0.0, 1.02)
        ax.set_xlabel(f"time ({unit} from the start of the test period)")
        ax.set_ylabel("elections of interactive jobs (share)")
        _legend(fig)

    return _draw_compact(_SIZE, draw)


def class_distributions_svg(
    probs: Sequence[float], distributions: Mapping[str, Mapping[str, Mapping[str, Any]]]
) -> str:
    """Wait CDF (top) and inverse CDF of W (bottom) per class, every policy on the same axes.

    Parameters
    ----------
    probs : sequence of float
        The probabilities the quantiles were taken at.
    distributions : mapping
        Policy → class (``interactive``, ``batch``) → ``{"n", "wait_s", "w"}``: quantiles of
        the wait (s) and of W at ``probs`` (None for a class without jobs).
    """
    p = np.asarray(probs, dtype=np.float64)
    styles = _policy_styles(list(distributions))
    classes = ("interactive", "batch")

    def draw(fig: Figure, axes: list[Axes]) -> None:
        grid = fig.subplots(2, 2)
        for col, cls in enumerate(classes):
            top, bottom = grid[0][col], grid[1][col]
            lowest, waited = 1.0, 0.0
            for name, per_class in distributions.items():
                entry = per_class.get(cls) or {}
                wait, w = entry.get("wait_s"), entry.get("w")
                if wait:
                    q = np.maximum(_floats_of(wait), WAIT_FLOOR_S)
                    top.plot(q, p, label=name, **styles[name])
                    lowest = min(lowest, float(p[np.searchsorted(q, WAIT_FLOOR_S, "right") - 1]))
                if w:
                    values = _floats_of(w)
                    bottom.plot(p, values, label=name, **styles[name])
                    below = p[values < 1.0 - 1e-9]
                    waited = max(waited, float(below.max()) if below.size else 0.0)
            # zoom in on the jobs that waited (W < 1); the rest sit at W = 1
            right = 1.0 if waited > 0.8 else max(0.05, math.ceil(waited * 1.25 * 20) / 20)
            bottom.set_xlim(0.0, right)
            top.set_xscale("log")
            _plain_log(top.xaxis)
            top.set_ylim(max(0.0, math.floor((lowest - 0.05) * 10) / 10), 1.01)
            top.set_title(f"{cls} jobs")
            top.set_xlabel(f"wait (s, log scale; < {WAIT_FLOOR_S:g} s drawn at it)")
            top.set_ylabel("jobs with wait ≤ x (fraction)")
            bottom.set_ylim(0.0, 1.02)
            bottom.set_xlabel("jobs, sorted by W (fraction)")
            bottom.set_ylabel("responsiveness W (0–1)")
        _legend(fig)

    with mpl.rc_context(_RC):
        fig = Figure(figsize=(FIGURE_WIDTH_IN, 6.4), layout="constrained")
        draw(fig, [])
        return _compact(_svg(fig))


def _shade_spans(
    axes: Sequence[Axes], spans: Sequence[Sequence[float]], origin_s: float, per: float, label: str
) -> None:
    for a, b in spans:
        for ax in axes:
            ax.axvspan((a - origin_s) / per, (b - origin_s) / per, label=label, **_FLAG_SHADE)
            label = "_span"


def pool_series_svg(
    pools: Mapping[str, Mapping[str, Any]],
    *,
    origin_s: float,
    pool_cores: int | None = None,
    floor_spans: Sequence[Sequence[float]] = (),
    floor_label: str = "pool at its floor (POOL_AT_FLOOR)",
) -> str:
    """Pool size (time-bin mean, min–max band) and utilisation over time of elastic runs.

    Parameters
    ----------
    pools : mapping
        Run label → ``{"time_s", "pool_mean", "pool_min", "pool_max", "utilisation",
        "floor"}`` per time bin (the summary's ``series["pool"]``).
    origin_s : float
        Start of the test period; the axis counts from it.
    pool_cores : int, optional
        The regime's P, drawn as a reference line.
    floor_spans : sequence of [start, end]
        Spans (seconds) at the floor, shaded on both panels as a flagged pathology.
    floor_label : str
        Legend label of the shaded spans.
    """
    styles = _policy_styles(list(pools))
    clean = {
        name: {k: _floats_of(s.get(k) or []) for k in ("time_s", "pool_mean", "pool_min")}
        | {k: _floats_of(s.get(k) or []) for k in ("pool_max", "utilisation")}
        for name, s in pools.items()
    }
    per, unit = _time_axis([c["time_s"] for c in clean.values()], origin_s)
    floors = sorted({int(s["floor"]) for s in pools.values() if s.get("floor") is not None})

    def draw(fig: Figure, axes: list[Axes]) -> None:
        top, bottom = axes
        _shade_spans(axes, floor_spans, origin_s, per, floor_label)
        for name, c in clean.items():
            x = (c["time_s"] - origin_s) / per
            top.plot(x, c["pool_mean"], label=name, **styles[name])
            top.fill_between(
                x, c["pool_min"], c["pool_max"], color=styles[name]["color"], alpha=0.15, lw=0
            )
            bottom.plot(x, c["utilisation"], label=name, **styles[name])
        if pool_cores is not None:
            top.axhline(pool_cores, color="#777777", linewidth=0.8, linestyle=":", label="P")
        for floor in floors:
            top.axhline(float(floor), color=_FLAG_COLOUR, linewidth=0.8, linestyle="--")
            top.annotate(f" floor {floor}", (0.0, float(floor)), color=_FLAG_COLOUR, va="bottom")
        top.set_yscale("log")
        _plain_log(top.yaxis)
        top.set_ylabel("pool size (cores, log scale)")
        bottom.set_ylabel("utilisation (busy / provisioned)")
        bottom.set_ylim(0.0, 1.02)
        bottom.set_xlabel(f"time ({unit} from the start of the test period)")
        _legend(fig)

    return _draw_compact(_TALL, draw, panels=2, sharex=True)


def windowed_fairness_svg(
    series: Mapping[str, Mapping[str, Mapping[str, Any]]], *, origin_s: float
) -> str:
    """F over sliding daily (top) and weekly (bottom) windows per policy, at window starts.

    Parameters
    ----------
    series : mapping
        Policy → ``{"daily": {"length_s", "start_s", "value"}, "weekly": {...}}``.
    origin_s : float
        Start of the test period; the axis counts from it.
    """
    styles = _policy_styles(list(series))
    times = [_floats_of(w.get("start_s") or []) for s in series.values() for w in s.values()]
    per, unit = _time_axis(times, origin_s)

    def draw(fig: Figure, axes: list[Axes]) -> None:
        for ax, kind in zip(axes, ("daily", "weekly"), strict=True):
            for name, s in series.items():
                w = s.get(kind) or {}
                start = _floats_of(w.get("start_s") or [])
                if start.size == 0:
                    continue
                x = (start - origin_s) / per
                dots: dict[str, Any] = {"marker": ".", "markersize": 5} if start.size < 20 else {}
                ax.plot(x, _floats_of(w["value"]), label=name, **dots, **styles[name])
            ax.set_ylim(0.0, 1.02)
            ax.set_ylabel(f"F, {kind} windows (0–1)")
        axes[-1].set_xlabel(f"window start ({unit} from the start of the test period)")
        _legend(fig)

    return _draw_compact(_TALL, draw, panels=2, sharex=True)


def long_waits_svg(
    waits: Mapping[str, Sequence[Mapping[str, Any]]], *, origin_s: float, limit_s: float = 86_400.0
) -> str:
    """Interactive jobs that waited over a day: wait against submit time, per policy and seed.

    Parameters
    ----------
    waits : mapping
        Policy → runs, each ``{"seed_index", "count", "submit_s", "wait_s"}``.
    origin_s : float
        Start of the test period; the axis counts from it.
    limit_s : float, default 86400
        The flag's threshold, drawn as a line.
    """
    styles = _policy_styles(list(waits))
    per, unit = _time_axis(
        [_floats_of(r["submit_s"]) for runs in waits.values() for r in runs], origin_s
    )

    def draw(fig: Figure, axes: list[Axes]) -> None:
        ax = axes[0]
        markers = ("o", "s", "^", "v", "D", "P", "X", "*")
        for k, (name, runs) in enumerate(waits.items()):
            total = sum(int(r.get("count") or 0) for r in runs)
            label = f"{name} ({total:,d} job-runs)"
            for r in runs:
                ax.plot(
                    (_floats_of(r["submit_s"]) - origin_s) / per,
                    _floats_of(r["wait_s"]) / 86_400.0,
                    linestyle="none",
                    marker=markers[k % len(markers)],
                    markersize=3.5,
                    color=styles[name]["color"],
                    label=label,
                )
                label = "_seed"
        ax.axhline(limit_s / 86_400.0, color=_FLAG_COLOUR, linestyle="--", linewidth=0.8)
        ax.annotate(" 1 day", (0.0, limit_s / 86_400.0), color=_FLAG_COLOUR, va="bottom")
        ax.set_yscale("log")
        _plain_log(ax.yaxis)
        ax.set_xlabel(f"submit time ({unit} from the start of the test period)")
        ax.set_ylabel("wait (days, log scale)")
        _legend(fig, ncols=3)

    return _draw_compact(_SIZE, draw)


def window_w_svg(
    edges_s: Sequence[float],
    values: Mapping[str, Sequence[float | None]],
    *,
    origin_s: float,
    fifo_low: float | None = None,
    flagged: Sequence[str] = (),
) -> str:
    """Interactive mean W per test window (the intervals' units) per policy, FIFO's band.

    Parameters
    ----------
    edges_s : sequence of float
        Window edges, seconds.
    values : mapping
        Policy → the interactive mean W of each window (None: no interactive job).
    origin_s : float
        Start of the test period; the axis counts from it.
    fifo_low : float, optional
        Lower end of FIFO's 95 % interval over the windows, drawn as a line.
    flagged : sequence of str
        Policies flagged W_BELOW_FIFO: their windows below ``fifo_low`` are marked.
    """
    edges = _floats_of(edges_s)
    centre = 0.5 * (edges[:-1] + edges[1:])
    per, unit = _time_axis([edges], origin_s)
    styles = _policy_styles(list(values))

    def draw(fig: Figure, axes: list[Axes]) -> None:
        ax = axes[0]
        label = "window below FIFO's interval (W_BELOW_FIFO)"
        for name, v in values.items():
            y = _floats_of(v)
            x = (centre - origin_s) / per
            ax.plot(x, y, marker=".", ms=4, label=name, **styles[name])
            if name in flagged and fifo_low is not None:
                low = np.isfinite(y) & (y < fifo_low)
                ax.plot(
                    x[low],
                    y[low],
                    linestyle="none",
                    marker="o",
                    ms=9,
                    mfc="none",
                    color=_FLAG_COLOUR,
                    label=label,
                )
                label = "_low"
        if fifo_low is not None:
            ax.axhline(fifo_low, color="#222222", linewidth=0.8, linestyle=":")
            ax.annotate(" FIFO's lower bound", (0.0, fifo_low), color="#222222", va="bottom")
        ax.set_ylim(0.0, 1.02)
        ax.set_xlabel(f"test window centre ({unit} from the start of the test period)")
        ax.set_ylabel("interactive mean W (0–1)")
        _legend(fig)

    return _draw_compact(_SIZE, draw)


# --- the RL section of a workload report (gridtrace.sim.rl.run_experiment's series) -------------


def learning_curves_by_variant_svg(curves: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    """Return and interactive mean W per training episode per RL variant: seed mean and range.

    Parameters
    ----------
    curves : mapping
        RL variant → its agent seeds, each ``{"seed_index", "episodes"}`` as in
        :func:`learning_curves_svg`. A variant keeps its colour (:func:`policy_style`); its
        line is the mean over its seeds, the band their minimum to maximum. Episodes whose
        behaviour is not ``sarsa`` are shaded.
    """
    styles = _policy_styles(list(curves))

    def stack(seeds: Sequence[Mapping[str, Any]], key: str) -> tuple[F64, F64]:
        rows: dict[int, list[float]] = {}
        for seed in seeds:
            for e in seed.get("episodes") or []:
                value = e.get(key)
                rows.setdefault(int(e["episode"]), []).append(
                    np.nan if value is None else float(value)
                )
        x = np.asarray(sorted(rows), dtype=np.float64)
        return x, np.asarray([rows[int(k)] for k in x], dtype=object)

    def draw(fig: Figure, axes: list[Axes]) -> None:
        pre: set[int] = set()
        for name, seeds in curves.items():
            for seed in seeds:
                pre |= {
                    int(e["episode"])
                    for e in seed.get("episodes") or []
                    if e.get("behaviour") not in (None, "sarsa")
                }
            for ax, key in zip(axes, ("return", "interactive_w_mean"), strict=True):
                x, rows = stack(seeds, key)
                with warnings.catch_warnings():  # an episode no seed has a value for: a gap
                    warnings.simplefilter("ignore", RuntimeWarning)
                    mean = np.asarray([np.nanmean(r) for r in rows], dtype=np.float64)
                    lo = np.asarray([np.nanmin(r) for r in rows], dtype=np.float64)
                    hi = np.asarray([np.nanmax(r) for r in rows], dtype=np.float64)
                ax.plot(x, mean, marker="o", markersize=3, label=name, **styles[name])
                ax.fill_between(x, lo, hi, color=styles[name]["color"], alpha=0.15, lw=0)
        label = "pre-training episode (a rule chooses, the agent learns)"
        for e in sorted(pre):
            for ax in axes:
                ax.axvspan(e - 0.5, e + 0.5, label=label, **_PRETRAIN_SHADE)
                label = "_pre"
        top, bottom = axes
        top.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:.3g}"))
        top.set_ylabel("return (sum of rewards)")
        bottom.set_ylabel("interactive mean W (0–1)")
        bottom.set_ylim(0.0, 1.02)
        bottom.set_xlabel("training episode (one per training draw)")
        bottom.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
        _legend(fig)

    return _draw_compact(_TALL, draw, panels=2, sharex=True)


def interactive_w_over_time_svg(
    time_s: Sequence[float],
    values: Mapping[str, Sequence[float | None]],
    *,
    origin_s: float,
    threshold: float = 0.05,
    flagged: Sequence[str] = (),
) -> str:
    """Interactive mean W per time bin per policy; the collapse threshold and where it is crossed.

    Parameters
    ----------
    time_s : sequence of float
        Bin centres, seconds.
    values : mapping
        Policy → the interactive mean W of the jobs started in each bin (None: none started).
    origin_s : float
        Start of the run; the axis counts from it.
    threshold : float, default 0.05
        The W-collapse threshold, drawn as a dashed line.
    flagged : sequence of str
        Policies flagged with a W collapse: their bins below ``threshold`` are circled.
    """
    t = np.asarray(time_s, dtype=np.float64)
    per, unit = _time_axis([t], origin_s)
    styles = _policy_styles(list(values))

    def draw(fig: Figure, axes: list[Axes]) -> None:
        ax = axes[0]
        label = f"bin below {threshold:g} of a policy flagged as collapsed"
        x = (t - origin_s) / per
        for name, v in values.items():
            y = _floats_of(v)
            ax.plot(x, y, label=name, **styles[name])
            if name in flagged:
                low = np.isfinite(y) & (y < threshold)
                ax.plot(
                    x[low],
                    y[low],
                    linestyle="none",
                    marker="o",
                    ms=8,
                    mfc="none",
                    color=_FLAG_COLOUR,
                    label=label,
                )
                label = "_low"
        ax.axhline(threshold, color=_FLAG_COLOUR, linewidth=0.8, linestyle="--")
        ax.annotate(
            f" W collapse ({threshold:g})", (0.0, threshold), color=_FLAG_COLOUR, va="bottom"
        )
        ax.set_ylim(0.0, 1.02)
        ax.set_xlabel(f"start time ({unit} from the first submit)")
        ax.set_ylabel("interactive mean W (0–1)")
        _legend(fig, ncols=3)

    return _draw_compact(_SIZE, draw)


# --- PPO on the multi-resource setup (issue 15) -------------------------------------------------


def ppo_learning_curve_svg(curves: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]) -> str:
    """Return the training episodes' mean slowdown per PPO update, one line per training load.

    Parameters
    ----------
    curves : sequence of (label, rows)
        A label (the training load) and the ``learning_curve`` of the agent's ``config.json``
        (``timesteps``, ``mean_slowdown``; null or NaN where no episode finished in the update).
    """

    def draw(fig: Figure, axes: list[Axes]) -> None:
        (ax,) = axes
        colours = ("#9467bd", "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#8c564b", "#e377c2")
        for k, (label, rows) in enumerate(curves):
            x = _floats_of(r.get("timesteps") for r in rows)
            y = _floats_of(r.get("mean_slowdown") for r in rows)
            keep = np.isfinite(x) & np.isfinite(y)
            ax.plot(
                x[keep],
                y[keep],
                marker="o",
                markersize=3,
                color=colours[k % len(colours)],
                label=f"trained at {label}",
            )
        ax.set_xlabel("training steps (actions of all actors)")
        ax.set_ylabel("mean slowdown of the\nupdate's finished episodes")
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
        _legend(fig)

    return _draw_compact(_SIZE, draw)


def slowdown_vs_load_svg(summary: Sequence[Mapping[str, Any]]) -> str:
    """Return mean slowdown against offered load, one line per policy with 95 % intervals.

    Parameters
    ----------
    summary : sequence of mapping
        Rows of :func:`gridtrace.sim.rl.summarise_multires` (``load``, ``policy``,
        ``mean_slowdown`` and its ``_low`` / ``_high``), any number of loads.
    """
    policies = sorted({str(r["policy"]) for r in summary}, key=lambda p: (p != "ppo", p))

    def draw(fig: Figure, axes: list[Axes]) -> None:
        (ax,) = axes
        for name in policies:
            rows = sorted((r for r in summary if r["policy"] == name), key=lambda r: r["load"])
            x = 100.0 * _floats_of(r["load"] for r in rows)
            y = _floats_of(r.get("mean_slowdown") for r in rows)
            low = _floats_of(r.get("mean_slowdown_low") for r in rows)
            high = _floats_of(r.get("mean_slowdown_high") for r in rows)
            err = np.vstack([np.nan_to_num(y - low), np.nan_to_num(high - y)])
            style = policy_style(name)
            ax.errorbar(
                x,
                y,
                yerr=np.clip(err, 0.0, None),
                marker="o",
                markersize=3,
                capsize=2,
                linewidth=2.0 if name == "ppo" else 1.2,
                label=name.upper() if name in ("ppo", "sjf", "fifo", "easy") else name,
                **style,
            )
        ax.set_xlabel("offered load (%)")
        ax.set_ylabel("mean slowdown")
        _legend(fig, ncols=7)

    return _draw_compact(_SIZE, draw)
