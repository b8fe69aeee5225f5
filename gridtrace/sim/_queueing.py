"""Steady-state M/M/c formulas: the analytic anchors of the FIFO simulator and the presets.

* :func:`erlang_c`: the probability that an arrival waits, C(c, a), with the offered load
  a = λ / μ, computed from Erlang B by its stable recursion.
* :func:`erlang_c_mean_wait`: E[W_q] = C(c, a) / (c μ − λ) of M/M/c FIFO.
* :func:`fifo_class_responsiveness`: the steady-state mean responsiveness W = r / (r + w) under FIFO
  of the jobs whose runtime lies in a band (e.g. the interactive jobs, r ≤ τ). Under FIFO a job's
  wait does not depend on its own runtime; in M/M/c it is 0 with probability 1 − C and otherwise
  exponential with rate θ = c μ − λ, so E[r / (r + w) | r] = (1 − C) + C x eˣ E₁(x), x = r θ.
* :func:`relaxation_time`: the heavy-traffic relaxation time 1 / (c μ (1 − √ρ)²) (the M/M/1
  value with service rate c μ), a rough scale of how long a run must be to approach these values.

These are steady-state values: a finite run that starts empty stays below them for a long time at
ρ close to 1 (at c = 50 and ρ = 0.99 the relaxation time is about 800 mean service times).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, special

from gridtrace.errors import ConfigError

__all__ = [
    "erlang_c",
    "erlang_c_mean_wait",
    "fifo_class_responsiveness",
    "relaxation_time",
]


def _check(servers: int, offered_load: float) -> None:
    if servers < 1:
        raise ConfigError(f"servers must be >= 1, got {servers}")
    if not 0.0 < offered_load < servers:
        raise ConfigError(
            f"the offered load must be in (0, servers) for a steady state, got {offered_load} "
            f"on {servers} servers"
        )


def erlang_c(servers: int, offered_load: float) -> float:
    """Probability that an arrival waits in M/M/c, C(c, a).

    Parameters
    ----------
    servers : int
        c, the number of servers (cores).
    offered_load : float
        a = λ / μ = ρ c, in (0, c).

    Returns
    -------
    float
        C(c, a) = c B / (c − a (1 − B)), B the Erlang B blocking probability.

    Raises
    ------
    ConfigError
        If c < 1 or a is not in (0, c).

    Examples
    --------
    >>> round(erlang_c(2, 1.0), 6)
    0.333333
    """
    _check(servers, offered_load)
    b = 1.0
    for k in range(1, servers + 1):
        b = offered_load * b / (k + offered_load * b)
    return servers * b / (servers - offered_load * (1.0 - b))


def erlang_c_mean_wait(servers: int, arrival_rate: float, service_rate: float) -> float:
    """Steady-state mean wait E[W_q] of M/M/c FIFO, in the time unit of the rates.

    Parameters
    ----------
    servers : int
        c.
    arrival_rate, service_rate : float
        λ and μ (per second, say); λ < c μ.

    Returns
    -------
    float
        C(c, λ / μ) / (c μ − λ).

    Examples
    --------
    >>> round(erlang_c_mean_wait(50, 0.99 * 50 / 1000.0, 1 / 1000.0), 1)  # E[S] = 1000 s
    1833.7
    """
    if not service_rate > 0.0:
        raise ConfigError(f"service_rate must be > 0, got {service_rate}")
    c = erlang_c(servers, arrival_rate / service_rate)
    return c / (servers * service_rate - arrival_rate)


def _x_ex_e1(x: float) -> float:
    """X eˣ E₁(x), the mean of r / (r + w) for w ~ Exp(θ) and x = r θ; 0 at x = 0."""
    if x <= 0.0:
        return 0.0
    if x < 700.0:
        return float(x * math.exp(x) * special.exp1(x))
    # asymptotic series 1 − 1/x + 2/x² − 6/x³ + …, its next term below 1e-14 here
    return sum((-1.0) ** k * math.factorial(k) / x**k for k in range(6))


def fifo_class_responsiveness(
    servers: int,
    rho: float,
    service_rate: float,
    lower_s: float = 0.0,
    upper_s: float = math.inf,
) -> float:
    """Steady-state mean W = r / (r + w) under M/M/c FIFO of the jobs with runtime in a band.

    Parameters
    ----------
    servers : int
        c.
    rho : float
        Offered load per server, in (0, 1).
    service_rate : float
        μ of the exponential runtimes.
    lower_s, upper_s : float, default 0 and infinity
        The band of runtimes [lower_s, upper_s]: e.g. (0, τ) for the interactive jobs and
        (τ, ∞) for the batch jobs.

    Returns
    -------
    float
        (1 − C) + C E[x eˣ E₁(x) | lower ≤ r ≤ upper], x = r (c μ − λ), the runtime drawn from
        the exponential law restricted to the band.

    Examples
    --------
    PE-1 (P 80, ρ 0.95, f 0.1, τ 900 s): the interactive jobs' mean W under FIFO.

    >>> mu = -math.log(0.9) / 900.0
    >>> round(fifo_class_responsiveness(80, 0.95, mu, 0.0, 900.0), 3)
    0.605
    """
    _check(servers, rho * servers)
    if not service_rate > 0.0 or not 0.0 <= lower_s < upper_s:
        raise ConfigError("need service_rate > 0 and 0 <= lower_s < upper_s")
    c = erlang_c(servers, rho * servers)
    theta = servers * service_rate * (1.0 - rho)
    mass = math.exp(-service_rate * lower_s) - (
        0.0 if math.isinf(upper_s) else math.exp(-service_rate * upper_s)
    )
    if not mass > 0.0:
        raise ConfigError(f"the band [{lower_s}, {upper_s}] s has no probability mass at this μ")

    def density(r: float) -> float:
        return _x_ex_e1(r * theta) * service_rate * math.exp(-service_rate * r)

    value, _ = integrate.quad(density, lower_s, upper_s, limit=200)
    return float((1.0 - c) + c * np.clip(value / mass, 0.0, 1.0))


def relaxation_time(servers: int, rho: float, service_rate: float) -> float:
    """Heavy-traffic relaxation time of M/M/c, 1 / (c μ (1 − √ρ)²).

    The M/M/1 relaxation time (Morse) with the pooled service rate c μ: a rough time scale on
    which a run started empty approaches the steady state. A run much shorter than this is
    transient and its mean wait lies below the Erlang C value.

    Examples
    --------
    >>> round(relaxation_time(50, 0.99, 1.0))  # in mean service times
    796
    """
    _check(servers, rho * servers)
    return 1.0 / (servers * service_rate * (1.0 - math.sqrt(rho)) ** 2)
