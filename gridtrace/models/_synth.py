"""Synthetic traces: Poisson or two-phase MMPP arrivals with exponential runtimes.

Each generator splits its random source into four independent streams with
:meth:`numpy.random.SeedSequence.spawn`, always in the same order (arrivals, runtimes, VOs, users),
so that changing one part of a workload (say the VO weights) leaves the others bit-identical.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from gridtrace._log import library_logger
from gridtrace._shares import normalised_shares
from gridtrace.errors import ConfigError
from gridtrace.models._deeprm import DEEPRM_PRESETS, DeepRMWorkload, deeprm_trace
from gridtrace.models._presets import Preset, get_preset
from gridtrace.random import SeedLike, as_generator
from gridtrace.schema import TRACE, conform, with_trace_metadata

__all__ = [
    "SYNTHETIC_ORIGIN",
    "ctmc_mmpp_arrival_times",
    "generate_preset_trace",
    "mmpp_arrival_times",
    "mmpp_exponential_trace",
    "poisson_exponential_trace",
]

logger = library_logger(__name__)

SYNTHETIC_ORIGIN = "1970-01-01T00:00:00+00:00"
"""Origin (UTC, ISO 8601) written into the metadata of every synthetic trace."""

_STREAMS = ("arrivals", "runtimes", "vos", "users")


def _seed_record(rng: SeedLike) -> Any:
    """Describe ``rng`` for the provenance: the int seed, or the SeedSequence behind a generator."""
    if rng is None or isinstance(rng, int | np.integer):
        return None if rng is None else int(rng)
    seq = rng if isinstance(rng, np.random.SeedSequence) else rng.bit_generator.seed_seq
    if isinstance(seq, np.random.SeedSequence):
        entropy = seq.entropy
        return {
            "entropy": [int(e) for e in entropy]
            if isinstance(entropy, Sequence | np.ndarray)
            else (None if entropy is None else int(entropy)),
            "spawn_key": [int(k) for k in seq.spawn_key],
        }
    return "unrecorded"


def _streams(rng: SeedLike) -> dict[str, np.random.Generator]:
    """Split ``rng`` into the four named generator streams."""
    if isinstance(rng, np.random.SeedSequence):
        children = rng.spawn(len(_STREAMS))
        return {k: np.random.default_rng(c) for k, c in zip(_STREAMS, children, strict=True)}
    gens = as_generator(rng).spawn(len(_STREAMS))
    return dict(zip(_STREAMS, gens, strict=True))


def _check_positive(name: str, value: float) -> None:
    if not (np.isfinite(value) and value > 0.0):
        raise ConfigError(f"{name} must be a positive finite number, got {value!r}")


def mmpp_arrival_times(
    size: int,
    arrival_rates: Sequence[float],
    switch_probabilities: Sequence[float],
    *,
    rng: SeedLike,
) -> tuple[NDArray[np.float64], NDArray[np.int8]]:
    """Draw arrival times from a two-phase MMPP whose phase chain is embedded at arrivals.

    After each arrival in phase ``i`` the process leaves that phase with probability
    ``switch_probabilities[i]``; the gap before an arrival in phase ``i`` is exponential with rate
    ``arrival_rates[i]``. The first arrival's phase is drawn from the chain's stationary law, so
    the process is stationary from the start.

    Parameters
    ----------
    size : int
        Number of arrivals.
    arrival_rates : sequence of two floats
        λ per phase, in s⁻¹.
    switch_probabilities : sequence of two floats
        Probability of leaving each phase after an arrival in it; not both zero.
    rng : int, SeedSequence, Generator or None
        Random source (one stream is used for the phases and the gaps).

    Returns
    -------
    times : ndarray of float64
        Arrival times in seconds from 0, strictly after 0 and non-decreasing.
    phases : ndarray of int8
        The phase (0 or 1) of each arrival.
    """
    rates = np.asarray(arrival_rates, dtype=np.float64)
    probs = np.asarray(switch_probabilities, dtype=np.float64)
    if rates.shape != (2,) or probs.shape != (2,):
        raise ConfigError("an MMPP here has exactly two phases (two rates, two probabilities)")
    for r in rates:
        _check_positive("arrival rate", float(r))
    if np.any(probs < 0) or np.any(probs > 1) or probs.sum() <= 0:
        raise ConfigError(f"switch probabilities must be in [0, 1], not both 0: {probs.tolist()}")
    gen = as_generator(rng)
    phases = np.empty(size, dtype=np.int8)
    phase = 0 if gen.random() < probs[1] / probs.sum() else 1
    filled = 0
    while filled < size:
        p = probs[phase]
        # the number of arrivals in one visit of a phase is geometric with the leaving probability
        run = size if p == 0.0 else int(gen.geometric(p))
        stop = min(size, filled + run)
        phases[filled:stop] = phase
        filled = stop
        phase = 1 - phase
    gaps = gen.standard_exponential(size) / rates[phases]
    return np.cumsum(gaps), phases


def ctmc_mmpp_arrival_times(
    rates: Sequence[float] | NDArray[np.float64],
    generator: Sequence[Sequence[float]] | NDArray[np.float64],
    *,
    size: int | None = None,
    horizon_s: float | None = None,
    initial: Sequence[float] | NDArray[np.float64] | None = None,
    rng: SeedLike,
) -> tuple[NDArray[np.float64], NDArray[np.int8]]:
    """Draw arrival times from a k-phase MMPP whose phase chain runs in continuous time.

    Unlike :func:`mmpp_arrival_times` (a phase chain embedded at arrivals), the phase here is a
    continuous-time Markov chain with generator ``generator``; while in phase i, arrivals form a
    Poisson process of rate ``rates[i]``. The path is drawn one sojourn at a time; the arrivals of a
    sojourn of length h in phase i are Poisson(λ_i h) many, uniform over the sojourn.

    Parameters
    ----------
    rates : sequence of float
        λ per phase in s⁻¹ (zero allowed: an "off" phase).
    generator : (k, k) array
        Generator Q of the phase chain: non-negative off-diagonal entries, rows summing to 0.
    size : int, optional
        Number of arrivals to return. Exactly one of ``size`` and ``horizon_s`` is given.
    horizon_s : float, optional
        Return every arrival in ``(0, horizon_s]``.
    initial : sequence of float, optional
        Law of the phase at time 0; the stationary law of Q by default.
    rng : int, SeedSequence, Generator or None
        Random source.

    Returns
    -------
    times : ndarray of float64
        Sorted arrival times in seconds after 0.
    phases : ndarray of int8
        The phase of each arrival.
    """
    lam = np.asarray(rates, dtype=np.float64)
    q = np.asarray(generator, dtype=np.float64)
    k = lam.shape[0]
    if lam.ndim != 1 or q.shape != (k, k):
        raise ConfigError(
            f"rates must have shape (k,) and generator (k, k); got {lam.shape}, {q.shape}"
        )
    off = q - np.diag(np.diag(q))
    if np.any(lam < 0) or not np.all(np.isfinite(lam)) or np.any(off < 0):
        raise ConfigError("rates and off-diagonal generator entries must be finite and >= 0")
    if not np.allclose(q.sum(axis=1), 0.0, atol=1e-9 * max(1.0, float(np.abs(q).max()))):
        raise ConfigError("generator rows must sum to 0")
    if (size is None) == (horizon_s is None):
        raise ConfigError("give exactly one of size and horizon_s")
    if size is not None and size < 0:
        raise ConfigError(f"size must be >= 0, got {size}")
    if horizon_s is not None:
        _check_positive("horizon_s", horizon_s)
    if lam.sum() <= 0:
        raise ConfigError("at least one rate must be > 0")
    gen = as_generator(rng)
    p0 = stationary_law(q) if initial is None else np.asarray(initial, dtype=np.float64)
    leave = off.sum(axis=1)
    jump = np.divide(off, leave[:, None], out=np.zeros_like(off), where=leave[:, None] > 0)
    cum_jump = np.cumsum(jump, axis=1)
    state = min(int(np.searchsorted(np.cumsum(p0 / p0.sum()), gen.random(), side="right")), k - 1)
    clock = 0.0
    starts: list[float] = []
    lengths: list[float] = []
    states: list[int] = []
    count_list: list[int] = []
    produced = 0
    while True:
        # a sojourn longer than what is still needed (past the horizon, or far more arrivals
        # than the size asks for) is cut there; the phase then stays put, and the rest of the
        # sojourn is again exponential (memoryless), so the path is exact and a near-absorbing
        # phase (a fitted exit rate of 1e-9/s) does not draw millions of discarded arrivals
        stay = False
        cap = math.inf
        if horizon_s is not None:
            cap = horizon_s - clock
        elif lam[state] > 0:
            assert size is not None
            cap = 2.0 * (size - produced + 10) / lam[state]
        if leave[state] > 0:
            hold = float(gen.exponential(1.0 / leave[state]))
            if hold > cap:
                hold, stay = cap, True
        elif lam[state] > 0:  # absorbing phase: long enough for what is still needed
            hold, stay = cap, True
        else:
            raise ConfigError("the phase chain is absorbed in a phase with rate 0")
        count = int(gen.poisson(lam[state] * hold))
        starts.append(clock)
        lengths.append(hold)
        states.append(state)
        count_list.append(count)
        produced += count
        clock += hold
        if (size is not None and produced >= size) or (
            horizon_s is not None and clock >= horizon_s
        ):
            break
        if not stay:
            u = gen.random()
            state = min(int(np.searchsorted(cum_jump[state], u, side="right")), k - 1)
    start_a = np.asarray(starts)
    length_a = np.asarray(lengths)
    state_a = np.asarray(states, dtype=np.int8)
    counts = np.asarray(count_list, dtype=np.int64)
    idx = np.repeat(np.arange(counts.shape[0]), counts)
    times = start_a[idx] + gen.random(idx.shape[0]) * length_a[idx]
    order = np.argsort(times, kind="stable")
    times, phases = times[order], state_a[idx][order]
    if size is not None:
        return times[:size], phases[:size]
    keep = times <= float(horizon_s)  # type: ignore[arg-type]
    return times[keep], phases[keep]


def stationary_law(generator: NDArray[np.float64]) -> NDArray[np.float64]:
    """Stationary law π of a generator (π Q = 0, Σ π = 1), by a least-squares solve."""
    q = np.asarray(generator, dtype=np.float64)
    k = q.shape[0]
    a = np.vstack([q.T, np.ones((1, k))])
    b = np.zeros(k + 1)
    b[-1] = 1.0
    pi = np.linalg.lstsq(a, b, rcond=None)[0]
    pi = np.maximum(pi, 0.0)
    return np.asarray(pi / pi.sum(), dtype=np.float64)


def _build_trace(
    submit_s: NDArray[np.float64],
    gens: Mapping[str, np.random.Generator],
    *,
    service_rate: float,
    cores: int,
    vo_shares: Mapping[str, float],
    tau_s: float,
    users_per_vo: int,
    site: str,
    provenance: Mapping[str, Any],
) -> pa.Table:
    size = int(submit_s.shape[0])
    names, weights = normalised_shares(vo_shares)
    run_s = gens["runtimes"].standard_exponential(size) / service_rate
    vo_idx = gens["vos"].choice(len(names), size=size, p=weights)
    vo = pa.DictionaryArray.from_arrays(pa.array(vo_idx, pa.int32()), pa.array(names)).cast(
        pa.string()
    )
    if users_per_vo > 0:
        user_k = gens["users"].integers(0, users_per_vo, size=size)
        labels = np.asarray([f"{n}-u{k}" for n in names for k in range(users_per_vo)], dtype=object)
        user: pa.Array[Any] = pa.array(labels[vo_idx * users_per_vo + user_k], pa.string())
    else:
        user = pa.nulls(size, pa.string())
    table = pa.table(
        {
            "job_id": pa.array(np.arange(size, dtype=np.int64)),
            "submit_s": pa.array(submit_s),
            "run_s": pa.array(run_s),
            "cores": pa.array(np.ones(size, dtype=np.int32)),
            "walltime_req_s": pa.nulls(size, pa.float64()),
            "vo": vo,
            "user": user,
            "queue": pa.nulls(size, pa.string()),
            "interactive": pa.array(run_s <= tau_s),
            "wait_s": pa.nulls(size, pa.float64()),
        }
    )
    table = conform(table, TRACE)
    return with_trace_metadata(
        table,
        origin=SYNTHETIC_ORIGIN,
        site=site,
        cores=cores,
        tau_s=tau_s,
        provenance=provenance,
    )


def _check_common(size: int, service_rate: float, cores: int, tau_s: float, users: int) -> None:
    if size < 0:
        raise ConfigError(f"size must be >= 0, got {size}")
    if cores < 1:
        raise ConfigError(f"cores must be >= 1, got {cores}")
    if users < 0:
        raise ConfigError(f"users_per_vo must be >= 0, got {users}")
    _check_positive("service_rate", service_rate)
    _check_positive("tau_s", tau_s)


def poisson_exponential_trace(
    size: int,
    arrival_rate: float,
    service_rate: float,
    *,
    cores: int,
    vo_shares: Mapping[str, float],
    tau_s: float = 900.0,
    rng: SeedLike,
    users_per_vo: int = 0,
    site: str = "synthetic",
    provenance: Mapping[str, Any] | None = None,
) -> pa.Table:
    """Generate a trace with Poisson arrivals and exponential single-core runtimes.

    Parameters
    ----------
    size : int
        Number of jobs.
    arrival_rate : float
        λ in s⁻¹.
    service_rate : float
        μ in s⁻¹; runtimes are exponential with mean 1/μ.
    cores : int
        Number of cores P written into the trace metadata (jobs use one core each).
    vo_shares : mapping of str to float
        Relative VO weights; each job draws its VO independently.
    tau_s : float, default 900.0
        Interactive threshold: ``interactive = run_s <= tau_s``.
    rng : int, SeedSequence, Generator or None
        Random source, split into independent streams (arrivals, runtimes, VOs, users).
    users_per_vo : int, default 0
        With 0 the ``user`` column is null; otherwise each job draws a user uniformly from a pool
        of that many users of its VO, named ``"<vo>-u<k>"``.
    site : str, default "synthetic"
        The trace's ``site`` metadata.
    provenance : mapping, optional
        Extra provenance entries, merged into the generator's own record.

    Returns
    -------
    pyarrow.Table
        A ``trace`` table (schema :data:`gridtrace.schema.TRACE`) sorted by (submit_s, job_id),
        job ids 0 … size − 1, with trace metadata.

    Examples
    --------
    >>> t = poisson_exponential_trace(5, 0.01, 0.001, cores=4, vo_shares={"a": 1.0}, rng=1)
    >>> t.num_rows, t.column("cores").to_pylist()
    (5, [1, 1, 1, 1, 1])
    """
    _check_common(size, service_rate, cores, tau_s, users_per_vo)
    _check_positive("arrival_rate", arrival_rate)
    gens = _streams(rng)
    submit_s = np.cumsum(gens["arrivals"].standard_exponential(size) / arrival_rate)
    record: dict[str, Any] = {
        "generator": "poisson_exponential_trace",
        "seed": _seed_record(rng),
        "streams": list(_STREAMS),
        "parameters": {
            "size": size,
            "arrival_rate": arrival_rate,
            "service_rate": service_rate,
            "cores": cores,
            "vo_shares": dict(vo_shares),
            "tau_s": tau_s,
            "users_per_vo": users_per_vo,
        },
    }
    record.update(provenance or {})
    return _build_trace(
        submit_s,
        gens,
        service_rate=service_rate,
        cores=cores,
        vo_shares=vo_shares,
        tau_s=tau_s,
        users_per_vo=users_per_vo,
        site=site,
        provenance=record,
    )


def mmpp_exponential_trace(
    size: int,
    arrival_rates: Sequence[float],
    switch_probabilities: Sequence[float],
    service_rate: float,
    *,
    cores: int,
    vo_shares: Mapping[str, float],
    tau_s: float = 900.0,
    rng: SeedLike,
    users_per_vo: int = 0,
    site: str = "synthetic",
    provenance: Mapping[str, Any] | None = None,
) -> pa.Table:
    """Generate a trace with two-phase MMPP arrivals and exponential single-core runtimes.

    The arrival process is :func:`mmpp_arrival_times` (phase chain embedded at arrivals); every
    other argument is as in :func:`poisson_exponential_trace`.

    Returns
    -------
    pyarrow.Table
        A ``trace`` table with trace metadata.
    """
    _check_common(size, service_rate, cores, tau_s, users_per_vo)
    gens = _streams(rng)
    submit_s, _ = mmpp_arrival_times(
        size, arrival_rates, switch_probabilities, rng=gens["arrivals"]
    )
    record: dict[str, Any] = {
        "generator": "mmpp_exponential_trace",
        "seed": _seed_record(rng),
        "streams": list(_STREAMS),
        "parameters": {
            "size": size,
            "arrival_rates": [float(r) for r in arrival_rates],
            "switch_probabilities": [float(p) for p in switch_probabilities],
            "phase_chain": "embedded at arrivals",
            "service_rate": service_rate,
            "cores": cores,
            "vo_shares": dict(vo_shares),
            "tau_s": tau_s,
            "users_per_vo": users_per_vo,
        },
    }
    record.update(provenance or {})
    return _build_trace(
        submit_s,
        gens,
        service_rate=service_rate,
        cores=cores,
        vo_shares=vo_shares,
        tau_s=tau_s,
        users_per_vo=users_per_vo,
        site=site,
        provenance=record,
    )


def generate_preset_trace(
    preset: Preset | DeepRMWorkload | str,
    *,
    rng: SeedLike,
    size: int | None = None,
    users_per_vo: int = 0,
) -> pa.Table:
    """Generate the synthetic trace of a seed preset.

    Parameters
    ----------
    preset : Preset, DeepRMWorkload or str
        A preset or the name of one in :data:`PRESETS` or in
        :data:`~gridtrace.models.DEEPRM_PRESETS` (drawn by :func:`deeprm_trace`).
    rng : int, SeedSequence, Generator or None
        Random source; the same int seed always gives the same table.
    size : int, optional
        Number of jobs; defaults to ``preset.size``.
    users_per_vo : int, default 0
        See :func:`poisson_exponential_trace` (DeepRM workloads have no VO: must be 0).

    Returns
    -------
    pyarrow.Table
        A ``trace`` table whose metadata has site = the preset's name, cores = P, τ, and a
        provenance holding ``{"preset": name, "seed": ..., "preset_parameters": {...}}``.

    Examples
    --------
    >>> t = generate_preset_trace("PE-1", rng=0, size=100)
    >>> t.num_rows
    100
    """
    if isinstance(preset, str) and preset in DEEPRM_PRESETS:
        preset = DEEPRM_PRESETS[preset]
    if isinstance(preset, DeepRMWorkload):
        if users_per_vo:
            raise ConfigError("DeepRM workloads have no VOs: users_per_vo must be 0")
        return deeprm_trace(preset, rng=rng, size=size)
    if isinstance(preset, str):
        preset = get_preset(preset)
    n = preset.size if size is None else int(size)
    extra = {"preset": preset.name, "preset_parameters": preset.to_dict()}
    logger.debug("generating %d jobs of preset %s", n, preset.name)
    if preset.arrival == "mmpp":
        return mmpp_exponential_trace(
            n,
            preset.arrival_rates,
            preset.switch_probabilities,
            preset.service_rate,
            cores=preset.cores,
            vo_shares=preset.vo_shares,
            tau_s=preset.tau_s,
            rng=rng,
            users_per_vo=users_per_vo,
            site=preset.name,
            provenance=extra,
        )
    return poisson_exponential_trace(
        n,
        preset.arrival_rates[0],
        preset.service_rate,
        cores=preset.cores,
        vo_shares=preset.vo_shares,
        tau_s=preset.tau_s,
        rng=rng,
        users_per_vo=users_per_vo,
        site=preset.name,
        provenance=extra,
    )
