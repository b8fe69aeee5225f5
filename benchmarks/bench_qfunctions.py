"""Cost of the RL supervisor's Q approximators: batched candidate evaluation and refits.

    .venv/bin/python benchmarks/bench_qfunctions.py --repeat 5

Shapes: a state of 10 features and an action of 6 per candidate (the MLP's row is 16 wide; the
ESN's row is its 15 output units plus the bias, 16 wide too). Reports, as the median and the
min–max over the repeats: µs per ``q_candidates`` call for k = 1, 10, 100, 1000 candidates; µs per
whole decision (``q_candidates``, the chosen row via ``candidate_inputs``, ``commit``); ms per
``fit`` on 5000 rows; ms per ESN fitted-Q iteration over 5000 transitions with 20 next candidates
each. Inputs are standard normal (the MDP scales its features to O(1)).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from gridtrace.sim.rl._fitted_q import fitted_q_iteration
from gridtrace.sim.rl._qfunctions import ESNQ, MLPQ, QFunction

try:
    from _machine import describe_machine
except ImportError:  # run from another folder
    from benchmarks._machine import describe_machine

N_STATE, N_ACTION = 10, 6
ROWS = 5000


def per_call(work: Callable[[], object], repeat: int, budget_s: float = 0.2) -> list[float]:
    """Seconds per call of ``work``: ``repeat`` timings of a loop sized to about ``budget_s``."""
    work()
    start = time.perf_counter()
    work()
    one = time.perf_counter() - start
    loops = max(1, int(budget_s / max(one, 1e-7)))
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(loops):
            work()
        out.append((time.perf_counter() - start) / loops)
    return out


def row(name: str, seconds: list[float], unit: float, label: str) -> str:
    values = [s / unit for s in seconds]
    return (
        f"| {name} | {statistics.median(values):,.1f} {label} "
        f"| {min(values):,.1f} – {max(values):,.1f} |"
    )


def decision(model: QFunction, s: np.ndarray, a: np.ndarray) -> Callable[[], object]:
    def step() -> None:
        j = int(np.argmax(model.q_candidates(s, a)))
        model.candidate_inputs(s, a[j : j + 1])
        model.commit(s, a[j])

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    models: dict[str, QFunction] = {
        "MLPQ(hidden=16)": MLPQ(N_STATE, N_ACTION, hidden=16, rng=1),
        "ESNQ(units=100)": ESNQ(N_STATE, N_ACTION, units=100, rng=2),
    }
    lines = []
    for name, model in models.items():
        for k in (1, 10, 100, 1000):
            s, a = rng.normal(size=N_STATE), rng.normal(size=(k, N_ACTION))
            lines.append(
                row(
                    f"{name} `q_candidates`, k = {k}",
                    per_call(lambda m=model, s=s, a=a: m.q_candidates(s, a), args.repeat),
                    1e-6,
                    "µs",
                )
            )
        for k in (10, 100):
            s, a = rng.normal(size=N_STATE), rng.normal(size=(k, N_ACTION))
            lines.append(
                row(
                    f"{name} whole decision (q, row, commit), k = {k}",
                    per_call(decision(model, s, a), args.repeat),
                    1e-6,
                    "µs",
                )
            )
    x_mlp = rng.normal(size=(ROWS, N_STATE + N_ACTION))
    y = np.sin(x_mlp[:, 0]) + x_mlp[:, 1] * x_mlp[:, 2]
    mlp = models["MLPQ(hidden=16)"]
    lines.append(
        row(
            f"MLPQ `fit`, {ROWS} rows × {mlp.n_inputs} (defaults: 8 epochs, batch 256)",
            per_call(lambda: mlp.fit(x_mlp, y), args.repeat, budget_s=0.5),
            1e-3,
            "ms",
        )
    )
    esn = models["ESNQ(units=100)"]
    x_esn = np.empty((ROWS, esn.n_inputs))
    nxt = np.empty((ROWS * 20, esn.n_inputs))
    for i in range(ROWS):
        s, a = rng.normal(size=N_STATE), rng.normal(size=(20, N_ACTION))
        rows = esn.candidate_inputs(s, a)
        nxt[20 * i : 20 * i + 20] = rows
        x_esn[i] = rows[0]
        esn.commit(s, a[0])
    lines.append(
        row(
            f"ESNQ `fit` (ridge), {ROWS} rows × {esn.n_inputs}",
            per_call(lambda: esn.fit(x_esn, y), args.repeat),
            1e-3,
            "ms",
        )
    )
    # transition i's next decision is decision i + 1; the last one is terminal
    next_rows = nxt[20:]
    offsets = np.r_[np.arange(0, 20 * ROWS, 20), 20 * (ROWS - 1)]
    rewards = rng.uniform(size=ROWS)
    gamma = np.full(ROWS, 0.8)
    iterations = 10
    lines.append(
        row(
            f"ESN fitted-Q, {ROWS} transitions × 20 next candidates, per iteration",
            [
                t / iterations
                for t in per_call(
                    lambda: fitted_q_iteration(
                        esn, x_esn, rewards, gamma, next_rows, offsets, iterations=iterations
                    ),
                    args.repeat,
                    budget_s=0.5,
                )
            ],
            1e-3,
            "ms",
        )
    )
    print(describe_machine())
    print(f"command: .venv/bin/python benchmarks/bench_qfunctions.py --repeat {args.repeat}")
    print()
    print("| what | median | min – max |")
    print("|---|---|---|")
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
