"""Time the exact MMPP EM (k = 2) on 1e5 and 1e6 arrivals, and H2 EM on 1e6 runtimes.

    .venv/bin/python benchmarks/fit_mmpp.py --sizes 100000 1000000 --repeat 3

Data: the reference MMPP of models.md §3.1 (λ = 0.02 / 0.2 s⁻¹, r12 = 1/3600, r21 = 1/900),
drawn with a fixed seed. ``fit`` is timed end to end with the default settings (all starts:
quantiles, count HMM, moment-matched MMPP(2), two random; 8 EM iterations each, then the best to
convergence). The numba kernel is compiled (or loaded from its cache) before timing. A second row
per size times the E-step alone (one forward–backward pass). Budgets (DESIGN.md): 1e5 arrivals in
≤ 2 s, 1e6 in ≤ 15 s; H2 EM on 1e6 runtimes in ≤ 3 s.
"""

from __future__ import annotations

import argparse
import statistics
import time

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


def timed(work: object, repeat: int) -> tuple[list[float], object]:
    out, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = work()  # type: ignore[operator]
        out.append(time.perf_counter() - start)
    return out, result


def row(name: str, seconds: list[float], extra: str = "") -> str:
    med = statistics.median(seconds)
    return f"| {name} | {med:.2f} s | {min(seconds):.2f} – {max(seconds):.2f} s | {extra} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--runtimes", type=int, default=1_000_000)
    args = parser.parse_args()
    print(describe_machine())
    start = time.perf_counter()
    _compile_kernel()
    print(f"kernel compile/load: {time.perf_counter() - start:.2f} s")
    print("| what | median | min – max | notes |")
    print("|---|---|---|---|")
    for n in args.sizes:
        times, _ = ctmc_mmpp_arrival_times(RATES, GEN, size=n, rng=n)
        seconds, model = timed(lambda t=times: MMPPArrivals(2).fit(t), args.repeat)
        assert isinstance(model, MMPPArrivals)
        err = np.abs(model.rates_ / RATES - 1).max()
        sw = np.abs(
            np.array([model.generator_[0, 1], model.generator_[1, 0]]) / GEN[[0, 1], [1, 0]] - 1
        )
        print(
            row(
                f"MMPP EM k=2, {n:,} arrivals",
                seconds,
                f"{model.n_iter_} iterations (converged {model.converged_}), "
                f"{len(model.starts_)} starts, best {model.best_start_}; "
                f"rate err ≤ {err:.2%}, switching err ≤ {sw.max():.2%}",
            )
        )
        gaps = np.diff(times)
        alpha = np.array([0.8, 0.2])
        with small_matrix_threads():
            seconds, _ = timed(
                lambda g=gaps, a=alpha: forward_backward(g, RATES, GEN, a), args.repeat
            )
        per = statistics.median(seconds) / n * 1e9
        print(row(f"one E-step, {n:,} arrivals", seconds, f"{per:.0f} ns per arrival"))
    gen = np.random.default_rng(1)
    m = args.runtimes
    x = np.where(gen.random(m) < 0.3, gen.exponential(60.0, m), gen.exponential(20_000.0, m))
    seconds, h2 = timed(lambda: HyperExponentialRuntime(2).fit(x), args.repeat)
    assert isinstance(h2, HyperExponentialRuntime)
    print(row(f"H2 EM, {m:,} runtimes", seconds, f"{h2.n_iter_} iterations"))


if __name__ == "__main__":
    main()
