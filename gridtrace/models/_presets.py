"""Seed presets: the synthetic workloads of the research, with their derived rates.

Every preset is an M/M/P-style workload: exponential runtimes whose rate μ is set by the interactive
fraction f and the threshold τ (``P(run ≤ τ) = f``, so ``μ = −ln(1 − f) / τ``), and arrivals whose
rate is set by the offered load ρ on P cores (``λ = ρ μ P``). MMPP presets have one ρ per arrival
phase.

Presets
-------
PE-1 … PE-4
    Poisson arrivals, exponential runtimes, P = 80 cores, 10,000 jobs, τ = 900 s, VO shares
    0.53 / 0.14 / 0.17 / 0.16. PE-1 (f 0.1, ρ 0.95; μ = 1.1707e−4 s⁻¹, λ = 8.8971e−3 s⁻¹) and PE-3
    (f 0.5, ρ 0.99; μ = 7.7016e−4, λ = 6.0997e−2) are the published ones. PE-2 (f 0.1, ρ 0.99)
    and PE-4 (f 0.5, ρ 0.95) are *inferred*: the reference notes give only PE-1 and PE-3, and these
    two complete the 2 × 2 design f ∈ {0.1, 0.5} × ρ ∈ {0.95, 0.99}.
MMPP-1, MMPP-2
    f 0.1 and 0.5 on 80 cores, two arrival phases at the rates of ρ 0.95 and ρ 0.99
    (MMPP-1: 0.89e−2 and 0.93e−2 s⁻¹; MMPP-2: 5.85e−2 and 6.10e−2 s⁻¹). The research gives the
    phase switching only as "transition probabilities 0.2/0.8". That is an open question; we read it
    as a phase chain embedded at arrivals: after each arrival the phase moves 1 → 2 with
    probability 0.2 and 2 → 1 with probability 0.8 (``switch_probabilities=(0.2, 0.8)``, a
    parameter). Arrivals therefore fall in phase 1 with stationary probability 0.8.
MM50-20, MM50-40, MM50-50
    M/M/50 at ρ 0.99 with f 0.2, 0.4 and 0.5, 6,000 jobs, VO shares 0.7 / 0.2 / 0.05 / 0.05.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from gridtrace.errors import ConfigError

__all__ = ["ARRIVAL_KINDS", "PRESETS", "Preset", "get_preset"]

ARRIVAL_KINDS = ("poisson", "mmpp")

_GRID_VO_SHARES: Mapping[str, float] = MappingProxyType(
    {"vo1": 0.53, "vo2": 0.14, "vo3": 0.17, "vo4": 0.16}
)
_MM50_VO_SHARES: Mapping[str, float] = MappingProxyType(
    {"vo1": 0.7, "vo2": 0.2, "vo3": 0.05, "vo4": 0.05}
)


@dataclass(frozen=True, slots=True)
class Preset:
    """A synthetic workload defined by its load, its interactive fraction and its pool size.

    Parameters
    ----------
    name : str
        Identifier, used as the trace's ``site``.
    cores : int
        Number of identical cores P.
    size : int
        Number of jobs in a generated trace.
    interactive_fraction : float
        f, the probability that a job runs at most ``tau_s`` seconds; in (0, 1).
    rhos : tuple of float
        Offered load ρ per arrival phase: one value for Poisson arrivals, one per phase for MMPP.
    tau_s : float, default 900.0
        Interactive threshold τ in seconds.
    arrival : {"poisson", "mmpp"}, default "poisson"
        Arrival process.
    switch_probabilities : tuple of float, default ()
        MMPP only: ``switch_probabilities[i]`` is the probability of leaving phase ``i`` right
        after an arrival in phase ``i`` (a phase chain embedded at arrivals; with two phases the
        chain then enters the other phase). Empty for Poisson arrivals.
    vo_shares : mapping of str to float
        Relative weight of each VO; each job draws its VO from these weights. They are also the
        target shares of the fairness metric.
    description : str, default ""
        One line saying where the preset comes from.

    Attributes
    ----------
    service_rate : float
        μ = −ln(1 − f) / τ in s⁻¹; runtimes are exponential with this rate.
    arrival_rates : tuple of float
        λ_i = ρ_i μ P in s⁻¹, one per phase.
    arrival_rate : float
        The long-run arrival rate in s⁻¹ (λ itself for Poisson arrivals).
    rho : float
        The long-run offered load λ̄ / (μ P) (ρ itself for Poisson arrivals).
    phase_probabilities : tuple of float
        Stationary probability that an arrival happens in each phase (``(1.0,)`` for Poisson).

    Notes
    -----
    The MMPP phase switching is read as a chain embedded at arrivals (the research's "transition
    probabilities 0.2/0.8" are ambiguous between a chain per arrival and per time step); the
    inter-arrival time before an arrival in phase i is exponential with rate λ_i. This makes the
    process a MAP with D0 = −diag(λ) and D1 = diag(λ) Π, Π the embedded switch matrix. PE-2 and PE-4
    are inferred, not published (see the module docstring).

    Examples
    --------
    >>> from gridtrace.models import get_preset
    >>> p = get_preset("PE-1")
    >>> f"{p.service_rate:.4e} {p.arrival_rate:.4e}"
    '1.1707e-04 8.8971e-03'
    """

    name: str
    cores: int
    size: int
    interactive_fraction: float
    rhos: tuple[float, ...]
    tau_s: float = 900.0
    arrival: str = "poisson"
    switch_probabilities: tuple[float, ...] = ()
    vo_shares: Mapping[str, float] = field(default_factory=lambda: dict(_GRID_VO_SHARES))
    description: str = ""

    def __post_init__(self) -> None:
        problems: list[str] = []
        if self.cores < 1:
            problems.append(f"cores must be >= 1, got {self.cores}")
        if self.size < 1:
            problems.append(f"size must be >= 1, got {self.size}")
        if not 0.0 < self.interactive_fraction < 1.0:
            problems.append(
                f"interactive_fraction must be in (0, 1), got {self.interactive_fraction}"
            )
        if not self.tau_s > 0.0:
            problems.append(f"tau_s must be > 0, got {self.tau_s}")
        if any(not r > 0.0 for r in self.rhos):
            problems.append(f"every rho must be > 0, got {self.rhos}")
        if self.arrival == "poisson":
            if len(self.rhos) != 1 or self.switch_probabilities:
                problems.append("poisson arrivals take exactly one rho and no switch probabilities")
        elif self.arrival == "mmpp":
            if len(self.rhos) != 2 or len(self.switch_probabilities) != 2:
                problems.append("mmpp arrivals take two rhos and two switch probabilities")
            if any(not 0.0 <= p <= 1.0 for p in self.switch_probabilities):
                problems.append(
                    f"switch probabilities must be in [0, 1]: {self.switch_probabilities}"
                )
            if sum(self.switch_probabilities) == 0.0:
                problems.append("at least one switch probability must be > 0")
        else:
            problems.append(
                f"arrival must be one of {', '.join(ARRIVAL_KINDS)}, got {self.arrival!r}"
            )
        if not self.vo_shares or any(not w >= 0.0 for w in self.vo_shares.values()):
            problems.append("vo_shares must be a non-empty mapping of non-negative weights")
        elif sum(self.vo_shares.values()) <= 0.0:
            problems.append("vo_shares must have a positive total")
        if problems:
            raise ConfigError(f"invalid preset {self.name!r}: " + "; ".join(problems))
        # freeze the containers so that a preset is hashable-in-spirit and cannot drift
        object.__setattr__(self, "rhos", tuple(float(r) for r in self.rhos))
        object.__setattr__(
            self, "switch_probabilities", tuple(float(p) for p in self.switch_probabilities)
        )
        object.__setattr__(
            self,
            "vo_shares",
            MappingProxyType({str(k): float(v) for k, v in self.vo_shares.items()}),
        )

    def __hash__(self) -> int:
        return hash(
            (
                self.name,
                self.cores,
                self.size,
                self.interactive_fraction,
                self.rhos,
                self.tau_s,
                self.arrival,
                self.switch_probabilities,
                tuple(self.vo_shares.items()),
                self.description,
            )
        )

    @property
    def service_rate(self) -> float:
        """μ = −ln(1 − f) / τ in s⁻¹, so that P(run ≤ τ) = f for exponential runtimes."""
        return -math.log1p(-self.interactive_fraction) / self.tau_s

    @property
    def arrival_rates(self) -> tuple[float, ...]:
        """λ_i = ρ_i μ P in s⁻¹, one per arrival phase."""
        mu = self.service_rate
        return tuple(rho * mu * self.cores for rho in self.rhos)

    @property
    def phase_probabilities(self) -> tuple[float, ...]:
        """Stationary probability that an arrival happens in each phase."""
        if self.arrival == "poisson":
            return (1.0,)
        p12, p21 = self.switch_probabilities
        return (p21 / (p12 + p21), p12 / (p12 + p21))

    @property
    def arrival_rate(self) -> float:
        """Long-run arrival rate in s⁻¹: one over the mean inter-arrival time."""
        mean_gap = sum(
            pi / lam for pi, lam in zip(self.phase_probabilities, self.arrival_rates, strict=True)
        )
        return 1.0 / mean_gap

    @property
    def rho(self) -> float:
        """Long-run offered load λ̄ / (μ P)."""
        return self.arrival_rate / (self.service_rate * self.cores)

    def to_dict(self) -> dict[str, Any]:
        """Return the preset as JSON types (see :meth:`from_dict`)."""
        return {
            "name": self.name,
            "cores": self.cores,
            "size": self.size,
            "interactive_fraction": self.interactive_fraction,
            "rhos": list(self.rhos),
            "tau_s": self.tau_s,
            "arrival": self.arrival,
            "switch_probabilities": list(self.switch_probabilities),
            "vo_shares": dict(self.vo_shares),
            "description": self.description,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Preset:
        """Build a preset from the output of :meth:`to_dict`.

        Raises
        ------
        ConfigError
            If a key is missing or unknown, or a value is out of range.
        """
        known = {
            "name",
            "cores",
            "size",
            "interactive_fraction",
            "rhos",
            "tau_s",
            "arrival",
            "switch_probabilities",
            "vo_shares",
            "description",
        }
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown preset key(s): {', '.join(unknown)}")
        try:
            return cls(
                name=str(data["name"]),
                cores=int(data["cores"]),
                size=int(data["size"]),
                interactive_fraction=float(data["interactive_fraction"]),
                rhos=tuple(float(r) for r in data["rhos"]),
                tau_s=float(data.get("tau_s", 900.0)),
                arrival=str(data.get("arrival", "poisson")),
                switch_probabilities=tuple(float(p) for p in data.get("switch_probabilities", ())),
                vo_shares={str(k): float(v) for k, v in data["vo_shares"].items()},
                description=str(data.get("description", "")),
            )
        except KeyError as exc:
            raise ConfigError(f"preset is missing key {exc.args[0]!r}") from None


def _grid(name: str, f: float, rho: float, description: str) -> Preset:
    return Preset(
        name=name,
        cores=80,
        size=10_000,
        interactive_fraction=f,
        rhos=(rho,),
        vo_shares=_GRID_VO_SHARES,
        description=description,
    )


def _mmpp(name: str, f: float, description: str) -> Preset:
    return Preset(
        name=name,
        cores=80,
        size=10_000,
        interactive_fraction=f,
        rhos=(0.95, 0.99),
        arrival="mmpp",
        switch_probabilities=(0.2, 0.8),
        vo_shares=_GRID_VO_SHARES,
        description=description,
    )


def _mm50(name: str, f: float) -> Preset:
    return Preset(
        name=name,
        cores=50,
        size=6_000,
        interactive_fraction=f,
        rhos=(0.99,),
        vo_shares=_MM50_VO_SHARES,
        description=f"M/M/50 at rho 0.99 with {f:.0%} interactive jobs",
    )


PRESETS: Mapping[str, Preset] = MappingProxyType(
    {
        p.name: p
        for p in (
            _grid(
                "PE-1", 0.1, 0.95, "Poisson/exponential, f 0.1, rho 0.95 on 80 cores (published)"
            ),
            _grid("PE-2", 0.1, 0.99, "Poisson/exponential, f 0.1, rho 0.99 on 80 cores (inferred)"),
            _grid(
                "PE-3", 0.5, 0.99, "Poisson/exponential, f 0.5, rho 0.99 on 80 cores (published)"
            ),
            _grid("PE-4", 0.5, 0.95, "Poisson/exponential, f 0.5, rho 0.95 on 80 cores (inferred)"),
            _mmpp("MMPP-1", 0.1, "two-phase arrivals at rho 0.95 / 0.99, f 0.1, 80 cores"),
            _mmpp("MMPP-2", 0.5, "two-phase arrivals at rho 0.95 / 0.99, f 0.5, 80 cores"),
            _mm50("MM50-20", 0.2),
            _mm50("MM50-40", 0.4),
            _mm50("MM50-50", 0.5),
        )
    }
)


def get_preset(name: str) -> Preset:
    """Return the seed preset called ``name`` (see :data:`PRESETS`).

    Raises
    ------
    ConfigError
        If there is no such preset; the message lists the known ones.
    """
    try:
        return PRESETS[name]
    except KeyError:
        from gridtrace.models._deeprm import DEEPRM_PRESETS

        known = ", ".join(PRESETS)
        first = next(iter(DEEPRM_PRESETS.values()))
        deeprm = f"{first.name} … {list(DEEPRM_PRESETS)[-1]}"
        raise ConfigError(
            f"unknown preset {name!r}; known presets: {known}, and DeepRM's {deeprm} (its "
            f"Bernoulli arrivals cannot offer more than {100 * first.max_load:.4g} %)"
        ) from None
