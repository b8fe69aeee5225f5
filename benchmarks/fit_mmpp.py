"""Time the MMPP fit (k = 2: 1e5 and 1e6 arrivals; k = 3: 1e5), its likelihood gains, and H2 EM.

    .venv/bin/python benchmarks/fit_mmpp.py --baseline 2a3e69d --repeat 3 \
        --swf ../shared/data/swf/LPC-EGEE-2004-1.2-cln.swf.gz

Data: the reference MMPP of models.md §3.1 (λ = 0.02 / 0.2 s⁻¹, r12 = 1/3600, r21 = 1/900) for
k = 2; a 3-phase MMPP (λ = 0.005 / 0.05 / 0.5 s⁻¹) for k = 3; random 3- and 4-phase MMPPs
(rates log-uniform on [0.01, 1] s⁻¹, switching rates on [1/3600, 1/120] s⁻¹) for the
likelihood sweep; and, with ``--swf``, the submit times of a real log (``read_swf`` +
``build_trace``). Every draw has a fixed seed. ``fit`` is timed end to end with the default
settings; the numba kernel is compiled (or loaded from its cache) before timing.

``--baseline REV`` also loads ``gridtrace/models/_mmpp.py`` as it was at git revision REV (it
runs on today's kernel, whose E-step signature is unchanged) and fits every trace with both,
interleaved (old, new, old, new, …), so that the ratio is measured under the same load; the
machine may be shared, so only the ratios and the log-likelihood gains are meant to carry over.
A ratio is new / old (above 1: the new fit is slower). Budgets (DESIRED: DESIGN.md): 1e5 arrivals
(k = 2) in ≤ 2 s, 1e6 in ≤ 15 s; H2 EM on 1e6 runtimes in ≤ 3 s.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from gridtrace.models import HyperExponentialRuntime, MMPPArrivals, ctmc_mmpp_arrival_times
from gridtrace.models._arrivals import small_matrix_threads
from gridtrace.models._mmpp_kernel import _compile_kernel, forward_backward

try:
    from _machine import describe_machine
except ImportError:  # run from another folder
    from benchmarks._machine import describe_machine

RATES = np.array([0.02, 0.2])
GEN = np.array([[-1 / 3600, 1 / 3600], [1 / 900, -1 / 900]])
RATES3 = np.array([0.005, 0.05, 0.5])
GEN3 = np.array(
    [
        [-1 / 7200, 1 / 14400, 1 / 14400],
        [1 / 3600, -1 / 1800, 1 / 3600],
        [1 / 600, 1 / 600, -1 / 300],
    ]
)
REPO = Path(__file__).resolve().parent.parent


def load_baseline(rev: str) -> ModuleType:
    """Load ``gridtrace/models/_mmpp.py`` at git revision ``rev`` as module ``baseline_mmpp``."""
    source = subprocess.run(
        ["git", "show", f"{rev}:gridtrace/models/_mmpp.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    spec = importlib.util.spec_from_loader("baseline_mmpp", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["baseline_mmpp"] = module  # dataclasses look their module up
    exec(compile(source, f"{rev}:gridtrace/models/_mmpp.py", "exec"), module.__dict__)
    return module


def random_mmpp(k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    rates = np.sort(np.exp(gen.uniform(math.log(0.01), math.log(1.0), k)))
    off = np.exp(gen.uniform(math.log(1 / 3600), math.log(1 / 120), (k, k)))
    np.fill_diagonal(off, 0.0)
    return rates, off - np.diag(off.sum(axis=1))


def fit(cls: Any, k: int, times: np.ndarray) -> tuple[Any, float, dict[str, int]]:
    """Fit, timed, counting the warnings by category."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        model = cls(k).fit(times)
        seconds = time.perf_counter() - start
    counts: dict[str, int] = {}
    for w in caught:
        counts[w.category.__name__] = counts.get(w.category.__name__, 0) + 1
    return model, seconds, counts


def describe(model: Any) -> str:
    if hasattr(model, "gradient_norm_"):
        return (
            f"EM {model.n_iter_} it. ({model.em_stop_}), direct {model.n_polish_iter_} it., "
            f"gradient {model.gradient_norm_:.1g}, best start {model.best_start_}"
        )
    return f"EM {model.n_iter_} it. (converged {model.converged_}), best start {model.best_start_}"


def compare(
    label: str, times: np.ndarray, k: int, repeat: int, baseline: ModuleType | None
) -> tuple[Any, Any]:
    """Fit with the new (and old) code, interleaved; print one row; return the last models."""
    new_s: list[float] = []
    old_s: list[float] = []
    new = old = None
    new_warn: dict[str, int] = {}
    old_warn: dict[str, int] = {}
    for _ in range(repeat):
        if baseline is not None:
            old, seconds, old_warn = fit(baseline.MMPPArrivals, k, times)
            old_s.append(seconds)
        new, seconds, new_warn = fit(MMPPArrivals, k, times)
        new_s.append(seconds)
    assert new is not None
    med = statistics.median(new_s)
    cells = [label, f"{med:.2f} s ({min(new_s):.2f} – {max(new_s):.2f})"]
    if old is not None:
        old_med = statistics.median(old_s)
        gain = new.log_likelihood_ - old.log_likelihood_
        cells += [f"{old_med:.2f} s", f"{med / old_med:.2f}", f"{gain:+.3g}"]
        notes = f"new: {describe(new)}; old: {describe(old)}"
        if old_warn or new_warn:
            notes += f"; warnings old {old_warn or 0}, new {new_warn or 0}"
    else:
        notes = describe(new)
    print("| " + " | ".join([*cells, notes]) + " |", flush=True)
    return new, old


def timed(work: Callable[[], object], repeat: int) -> tuple[list[float], object]:
    out, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = work()
        out.append(time.perf_counter() - start)
    return out, result


def sweep(ks: list[int], n: int, seeds: int, baseline: ModuleType) -> None:
    """Log-likelihood gained over the baseline on random k-phase MMPPs."""
    print(f"\nRandom MMPPs, {n:,} arrivals each, {seeds} seeds per k: new − old log-likelihood")
    print("| k | median gain | max gain | traces gaining > 0.1 | smallest gain | old warnings |")
    print("|---|---|---|---|---|---|")
    for k in ks:
        gains: list[float] = []
        old_warnings: dict[str, int] = {}
        for seed in range(seeds):
            times, _ = ctmc_mmpp_arrival_times(*random_mmpp(k, seed), size=n, rng=seed)
            old, _, counts = fit(baseline.MMPPArrivals, k, times)
            new, _, new_counts = fit(MMPPArrivals, k, times)
            assert not new_counts, new_counts
            gains.append(new.log_likelihood_ - old.log_likelihood_)
            for key, value in counts.items():
                old_warnings[key] = old_warnings.get(key, 0) + value
        g = np.asarray(gains)
        print(
            f"| {k} | {np.median(g):+.3g} | {g.max():+.3g} | {int((g > 0.1).sum())} of {seeds} "
            f"| {g.min():+.2g} | {old_warnings or 'none'} |",
            flush=True,
        )


def real_times(path: str) -> np.ndarray:
    from gridtrace.logs import build_trace, read_swf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = build_trace(read_swf(path).jobs)
    return np.sort(np.asarray(trace.column("submit_s").to_numpy(zero_copy_only=False), float))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--k3-size", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--runtimes", type=int, default=1_000_000)
    parser.add_argument("--baseline", metavar="REV", help="git revision to compare with")
    parser.add_argument("--sweep-size", type=int, default=10_000)
    parser.add_argument("--sweep-seeds", type=int, default=8)
    parser.add_argument("--swf", help="an SWF log whose submit times are fitted (k = 2, 3)")
    parser.add_argument("--swf-jobs", type=int, nargs="+", default=[10_000, 0])
    args = parser.parse_args()
    print(describe_machine())
    baseline = load_baseline(args.baseline) if args.baseline else None
    start = time.perf_counter()
    _compile_kernel()
    print(f"kernel compile/load: {time.perf_counter() - start:.2f} s")
    warm, _ = ctmc_mmpp_arrival_times(RATES, GEN, size=2000, rng=0)
    for cls in [MMPPArrivals] + ([baseline.MMPPArrivals] if baseline is not None else []):
        fit(cls, 2, warm)  # first calls import hmmlearn and warm scipy: not timed
    if baseline is not None:
        print(f"baseline: gridtrace/models/_mmpp.py at {args.baseline}; runs interleaved\n")
        print("| fit | new: median (min – max) | old: median | new / old | new − old ll | notes |")
        print("|---|---|---|---|---|---|")
    else:
        print("| fit | median (min – max) | notes |")
        print("|---|---|---|")
    for n in args.sizes:
        times, _ = ctmc_mmpp_arrival_times(RATES, GEN, size=n, rng=n)
        model, _ = compare(f"MMPP k=2, {n:,} arrivals", times, 2, args.repeat, baseline)
        err = np.abs(model.rates_ / RATES - 1).max()
        sw = np.abs(
            np.array([model.generator_[0, 1], model.generator_[1, 0]]) / GEN[[0, 1], [1, 0]] - 1
        )
        print(f"|   recovery | rate error ≤ {err:.2%}, switching error ≤ {sw.max():.2%} | |")
    if args.k3_size:
        times, _ = ctmc_mmpp_arrival_times(RATES3, GEN3, size=args.k3_size, rng=3)
        compare(f"MMPP k=3, {args.k3_size:,} arrivals", times, 3, args.repeat, baseline)
    if args.swf:
        everything = real_times(args.swf)
        for jobs in args.swf_jobs:
            times = everything[:jobs] if jobs else everything
            for k in (2, 3):
                compare(
                    f"{Path(args.swf).name}, {times.shape[0]:,} jobs, k={k}", times, k, 1, baseline
                )
    for n in args.sizes:
        times, _ = ctmc_mmpp_arrival_times(RATES, GEN, size=n, rng=n)
        gaps = np.diff(times)
        alpha = np.array([0.8, 0.2])
        with small_matrix_threads():
            seconds, _ = timed(
                lambda g=gaps, a=alpha: forward_backward(g, RATES, GEN, a), args.repeat
            )
        per = statistics.median(seconds) / n * 1e9
        print(
            f"one E-step (k=2), {n:,} arrivals: {statistics.median(seconds):.3f} s, "
            f"{per:.0f} ns per arrival"
        )
    if baseline is not None and args.sweep_seeds:
        sweep([3, 4], args.sweep_size, args.sweep_seeds, baseline)
    if args.runtimes:
        gen = np.random.default_rng(1)
        m = args.runtimes
        x = np.where(gen.random(m) < 0.3, gen.exponential(60.0, m), gen.exponential(20_000.0, m))
        seconds, h2 = timed(lambda: HyperExponentialRuntime(2).fit(x), args.repeat)
        assert isinstance(h2, HyperExponentialRuntime)
        print(f"H2 EM, {m:,} runtimes: {statistics.median(seconds):.2f} s, {h2.n_iter_} iterations")


if __name__ == "__main__":
    main()
