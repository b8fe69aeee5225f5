"""Validation anchor: strict FIFO on M/M/50 against the Erlang C mean wait."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from scipy import stats

from gridtrace.models import poisson_exponential_trace
from gridtrace.sim import simulate

logger = logging.getLogger(__name__)

MEAN_SERVICE_S = 1000.0
SERVERS = 50


def erlang_c_mean_wait(servers: int, arrival_rate: float, service_rate: float) -> float:
    """E[Wq] of M/M/c FIFO: C(c, a) / (c μ − λ), with Erlang B by its stable recursion."""
    a = arrival_rate / service_rate
    b = 1.0
    for k in range(1, servers + 1):
        b = a * b / (k + a * b)
    c = servers * b / (servers - a * (1.0 - b))
    return c / (servers * service_rate - arrival_rate)


def test_erlang_c_function_sanity() -> None:
    # c = 1: C = ρ, so E[Wq] = ρ / (μ − λ)
    assert erlang_c_mean_wait(1, 0.5, 1.0) == pytest.approx(0.5 / 0.5)
    # c = 2, a = 1: C = 1/3
    assert erlang_c_mean_wait(2, 1.0, 1.0) == pytest.approx((1 / 3) / (2 - 1))
    # the reference values (sim.md §3.1 for c = 50, E[S] = 1000 s; models.md §5 for PE-1)
    mu = 1.0 / MEAN_SERVICE_S
    assert erlang_c_mean_wait(50, 0.9 * 50 * mu, mu) == pytest.approx(72.8, abs=0.05)
    assert erlang_c_mean_wait(50, 0.95 * 50 * mu, mu) == pytest.approx(251.6, abs=0.05)
    assert erlang_c_mean_wait(50, 0.99 * 50 * mu, mu) == pytest.approx(1833.7, abs=0.05)
    pe1_mu = 1.1707e-4
    assert erlang_c_mean_wait(80, 0.95 * 80 * pe1_mu, pe1_mu) == pytest.approx(1171.0, rel=1e-3)


def replicated_mean_wait(
    rho: float, *, replications: int, size: int, warmup: int, root_seed: int
) -> tuple[float, float]:
    """Mean wait over independent seeded replications, and the half-width of its 95 % interval."""
    mu = 1.0 / MEAN_SERVICE_S
    means = []
    for seed in np.random.SeedSequence(root_seed).spawn(replications):
        trace = poisson_exponential_trace(
            size, rho * SERVERS * mu, mu, cores=SERVERS, vo_shares={"vo": 1.0}, rng=seed
        )
        result = simulate(trace, warmup_jobs=warmup, drain_jobs=0)
        means.append(result.summary["classes"]["all"]["wait_mean_s"])
    m = np.asarray(means)
    half = stats.t.ppf(0.975, replications - 1) * m.std(ddof=1) / np.sqrt(replications)
    return float(m.mean()), float(half)


@pytest.mark.parametrize(
    ("rho", "size", "max_half_width_s"),
    [(0.7, 100_000, 0.3), (0.9, 250_000, 7.0), (0.95, 400_000, 25.0)],
    ids=["0.7", "0.9", "0.95"],
)
def test_fifo_matches_erlang_c(rho: float, size: int, max_half_width_s: float) -> None:
    # 10 seeded replications; ~7 s in all on a 2-core machine
    mu = 1.0 / MEAN_SERVICE_S
    expected = erlang_c_mean_wait(SERVERS, rho * SERVERS * mu, mu)
    mean, half = replicated_mean_wait(
        rho, replications=10, size=size, warmup=5_000, root_seed=20_240_501
    )
    logger.info("rho %.2f: Erlang C %.2f s, simulated %.2f ± %.2f s", rho, expected, mean, half)
    assert half < max_half_width_s  # the interval is tight enough to mean something
    assert abs(mean - expected) <= half


@pytest.mark.slow
@pytest.mark.parametrize("rho", [0.7, 0.9, 0.95], ids=["0.7", "0.9", "0.95"])
def test_fifo_matches_erlang_c_long(rho: float) -> None:
    mu = 1.0 / MEAN_SERVICE_S
    expected = erlang_c_mean_wait(SERVERS, rho * SERVERS * mu, mu)
    mean, half = replicated_mean_wait(
        rho, replications=20, size=1_000_000, warmup=20_000, root_seed=7_700_001
    )
    logger.info("rho %.2f: Erlang C %.2f s, simulated %.2f ± %.2f s", rho, expected, mean, half)
    assert abs(mean - expected) <= half
    assert half <= 0.04 * expected + 0.05  # ~60 s in all: 20 x 1e6 jobs per load
