"""The steady-state M/M/c formulas against hand computations and a long FIFO run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gridtrace.errors import ConfigError
from gridtrace.models import generate_preset_trace, get_preset, poisson_exponential_trace
from gridtrace.sim import (
    erlang_c,
    erlang_c_mean_wait,
    fifo_class_responsiveness,
    relaxation_time,
    simulate,
)
from gridtrace.sim._queueing import _x_ex_e1


def test_erlang_c_hand_values() -> None:
    assert erlang_c(1, 0.7) == pytest.approx(0.7)  # c = 1: C = ρ
    # c = 2, a = 1: Σ_{k<2} a^k/k! = 2, a²/2! · 2/(2 − 1) = 1, C = 1/3
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)
    # c = 3, a = 2: Σ_{k<3} a^k/k! = 5, a^3/3! · 3/(3 − 2) = 4, C = 4/9
    assert erlang_c(3, 2.0) == pytest.approx(4 / 9)


def test_erlang_c_reference_values() -> None:
    # sim.md §3.1 (c = 50, E[S] = 1000 s) and models.md §5 (PE-1)
    mu = 1e-3
    assert erlang_c_mean_wait(50, 0.99 * 50 * mu, mu) == pytest.approx(1833.7, abs=0.05)
    pe1 = get_preset("PE-1")
    assert erlang_c(80, 76.0) == pytest.approx(0.5484, abs=5e-5)
    assert erlang_c_mean_wait(80, pe1.arrival_rate, pe1.service_rate) == pytest.approx(
        1171.0, abs=0.05
    )


def test_published_mm50_wait_implies_503_s_only_in_steady_state() -> None:
    per_es = erlang_c_mean_wait(50, 0.99 * 50, 1.0)  # E[W_q] in units of E[S]
    assert per_es == pytest.approx(1.8337, abs=1e-4)
    assert 923.0 / per_es == pytest.approx(503.4, abs=0.1)
    mm50 = get_preset("MM50-20")
    assert 1.0 / mm50.service_rate == pytest.approx(4033.3, abs=0.1)
    assert relaxation_time(50, 0.99, 1.0) == pytest.approx(796.0, abs=0.5)


def test_fifo_class_responsiveness_limits_and_pe1() -> None:
    mu = -math.log(0.9) / 900.0
    inter = fifo_class_responsiveness(80, 0.95, mu, 0.0, 900.0)
    batch = fifo_class_responsiveness(80, 0.95, mu, 900.0)
    assert inter == pytest.approx(0.6053, abs=1e-4)
    assert batch == pytest.approx(0.8716, abs=1e-4)
    # the all-jobs mean is the f-weighted mix of the two bands
    assert fifo_class_responsiveness(80, 0.95, mu) == pytest.approx(0.1 * inter + 0.9 * batch)
    # light load: almost nobody waits
    assert fifo_class_responsiveness(80, 0.2, mu, 0.0, 900.0) == pytest.approx(1.0, abs=1e-9)
    # the longer the jobs of a band, the less their (runtime-blind) FIFO wait costs them
    bands = [(0.0, 1e3), (1e3, 1e4), (1e4, 3e4)]
    ws = [fifo_class_responsiveness(2, 0.9, 1e-3, lo, hi) for lo, hi in bands]
    assert ws == sorted(ws)
    with pytest.raises(ConfigError, match="no probability mass"):
        fifo_class_responsiveness(2, 0.9, 1.0, 1e4, 2e4)


def test_x_ex_e1_branches_agree() -> None:
    # x e^x E1(x): exact below 700, asymptotic series above; continuous at the switch
    assert _x_ex_e1(700.0 - 1e-9) == pytest.approx(_x_ex_e1(700.0 + 1e-9), rel=1e-12)
    assert _x_ex_e1(0.0) == 0.0
    assert _x_ex_e1(1.0) == pytest.approx(0.596347362323194, rel=1e-12)  # e·E1(1)


def test_fifo_class_responsiveness_matches_monte_carlo() -> None:
    # M/M/2, ρ 0.8: wait 0 w.p. 1 − C, else Exp(cμ − λ); W = r/(r+w) for r ≤ 1
    rng = np.random.default_rng(5)
    n = 400_000
    c, rho, mu = 2, 0.8, 1.0
    cc = erlang_c(c, rho * c)
    r = rng.exponential(1.0, 4 * n)
    r = r[r <= 1.0][:n]
    w = np.where(rng.random(r.size) < cc, rng.exponential(1 / (c * mu * (1 - rho)), r.size), 0.0)
    assert fifo_class_responsiveness(c, rho, mu, 0.0, 1.0) == pytest.approx(
        float(np.mean(r / (r + w))), abs=3e-3
    )


def test_fifo_class_responsiveness_matches_a_long_run() -> None:
    # M/M/10 at ρ 0.9 (fast to relax): simulated interactive W within 0.01 of the formula
    mu, c, tau = 1e-3, 10, 300.0
    trace = poisson_exponential_trace(
        200_000, 0.9 * c * mu, mu, cores=c, vo_shares={"vo": 1.0}, tau_s=tau, rng=3
    )
    got = simulate(trace, warmup_jobs=5_000, drain_jobs=0).summary["classes"]["interactive"]
    expected = fifo_class_responsiveness(c, 0.9, mu, 0.0, tau)
    assert got["responsiveness_mean"] == pytest.approx(expected, abs=0.01)


@pytest.mark.parametrize(
    ("servers", "load"), [(0, 0.5), (2, 0.0), (2, 2.0), (2, 3.0)], ids=["c0", "a0", "a=c", "a>c"]
)
def test_erlang_c_rejects_no_steady_state(servers: int, load: float) -> None:
    with pytest.raises(ConfigError):
        erlang_c(servers, load)


def test_short_run_at_rho_099_is_far_below_erlang_c() -> None:
    # MM50-20 (E[S] 4033 s): 6,000-job FIFO runs from empty span 0.15 relaxation times; their
    # mean wait is a fraction of the steady-state 1.834 E[S] (the published-number check in
    # benchmarks/published_checks.py rests on this)
    preset = get_preset("MM50-20")
    es = 1.0 / preset.service_rate
    means = []
    for seed in np.random.SeedSequence(2026).spawn(40):
        trace = generate_preset_trace(preset, rng=seed)
        result = simulate(trace, warmup_jobs=0, drain_jobs=0)
        means.append(result.summary["classes"]["all"]["wait_mean_s"] / es)
    steady = erlang_c_mean_wait(50, 0.99 * 50, 1.0)
    assert 0.3 < float(np.median(means)) < 0.9
    assert np.mean(np.asarray(means) < steady) >= 0.85
