"""Scheduling policies with the exact definitions of ``shared/reference/sim.md`` §2.

Notation at a decision at time t for a queued job j: submit s_j, estimate r̂_j (from the run's
estimator, ``state.estimate(row)``), cores n_j, wait w_j = t − s_j. Ties always break by
(s_j, job id), which is the row order. Unless a policy is *strict*, it picks among the jobs that
fit: it repeatedly starts the best-ranked job whose cores are free. A strict policy starts jobs in
rank order while the best-ranked one fits and stops at the first that does not.

==================  ===============================================================  ===========
name                rank (best first)                                                 strict
==================  ===============================================================  ===========
fifo                s_j                                                               yes
sjf / sjf-strict    r̂_j ascending                                                     no / yes
ljf / ljf-strict    r̂_j descending                                                    no / yes
smallest-first      n_j ascending                                                     no
largest-first       n_j descending                                                    no
hrrn                (w_j + r̂_j) / r̂_j descending; r̂_j ≤ 0 ranks first                  no
wfp3                (w_j / r̂_j)³ · n_j descending; r̂_j ≤ 0 ranks first                 no
unicep              w_j / (log2(n_j) · r̂_j) descending; serial jobs (log2 1 = 0) rank    no
                    before every parallel job, and among themselves by w_j / r̂_j
f1                  log10(r̂_j)·n_j + 870·log10(s_j) ascending (r̂ ≤ 0 → 0.1, s ≤ 0 → 0.1)  no
edf                 deadline s_j + r̂_j (1 − W*) / W* ascending (W* per class, below)       no
fairshare           the VO with the largest S_k − u_k first, then oldest                   no
packer, tetris      see :class:`TetrisPolicy`                                          no
random              uniformly at random among the jobs that fit (seeded)               no
==================  ===============================================================  ===========

Each rank also exists as ``<name>-strict`` where it makes sense (the table shows the registered
names). Backfilling policies are in :mod:`gridtrace.sim._backfill`.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from gridtrace._shares import normalised_shares
from gridtrace.errors import ConfigError, SimulationError

if TYPE_CHECKING:
    from gridtrace.sim._engine import ClusterState, JobRows, Policy, QueueView

__all__ = [
    "POLICIES",
    "AsLoggedReplay",
    "FairSharePolicy",
    "FifoPolicy",
    "PolicyConfig",
    "PriorityPolicy",
    "RandomPolicy",
    "TetrisPolicy",
    "make_policy",
]

Key = Any  # a sortable rank value; ties are broken by the row


@dataclass(frozen=True, slots=True)
class PolicyConfig:
    """Options of the built-in policies (each policy reads the ones it needs).

    Parameters
    ----------
    vo_shares : mapping of str to float, optional
        Target VO shares S_k (normalised); required by ``fairshare``.
    rng : numpy.random.Generator, optional
        Randomness of ``random``; required by it.
    half_life_s : float, default 604800 (7 days)
        Half-life of the decayed usage of ``fairshare``.
    knob : float, default 0.5
        Weight of the packing term in ``tetris`` (``packer`` is knob = 1).
    time_unit_s : float, default 60
        The runtime unit u of the ``tetris`` runtime term u / max(r̂, u).
    target_w : float, default 0.9
        W* of ``edf`` for interactive jobs (r̂ ≤ tau_s).
    target_w_batch : float, optional
        W* of ``edf`` for batch jobs (r̂ > tau_s); defaults to ``target_w``.
    tau_s : float, default 900
        The interactive threshold τ used to class jobs by their estimate.
    """

    vo_shares: Mapping[str, float] | None = None
    rng: np.random.Generator | None = field(default=None, compare=False)
    half_life_s: float = 7 * 86400.0
    knob: float = 0.5
    time_unit_s: float = 60.0
    target_w: float = 0.9
    target_w_batch: float | None = None
    tau_s: float = 900.0

    def with_options(self, options: Mapping[str, Any]) -> PolicyConfig:
        """Return a copy with ``options`` set; unknown names are a ConfigError."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ConfigError(f"unknown policy option(s) {unknown}; known: {sorted(known)}")
        return replace(self, **dict(options))


class FifoPolicy:
    """Strict first-in-first-out: start the head while it fits; if it does not, start nothing.

    No job ever overtakes an earlier one (no backfilling). For single-core jobs this is the
    work-conserving "start the oldest job whenever a core frees".
    """

    name = "fifo"

    def select(self, queue: QueueView, state: ClusterState, now: float) -> list[int]:
        """Return the longest prefix of the queue that fits in the free cores."""
        chosen: list[int] = []
        free = state.free_cores
        cores = queue.cores
        for row in queue:
            need = cores[row]
            if need > free:
                break
            chosen.append(row)
            free -= need
        return chosen


class PriorityPolicy:
    """A policy that ranks queued jobs by a key (lowest first), ties by row.

    Parameters
    ----------
    name : str
        The policy's name.
    key : callable
        ``key(row, queue, state, now)`` → sortable rank; lower is better.
    strict : bool, default False
        Stop at the first ranked job that does not fit instead of skipping it.
    time_dependent : bool, default False
        True if the key depends on ``now`` (e.g. through the wait). Otherwise, and if the run's
        estimator is static, ranks are computed once per job and kept in a sorted list.
    """

    def __init__(
        self,
        name: str,
        key: Callable[[int, QueueView, ClusterState, float], Key],
        *,
        strict: bool = False,
        time_dependent: bool = False,
    ) -> None:
        self.name = name
        self.key = key
        self.strict = strict
        self.time_dependent = time_dependent
        self._ranked: list[tuple[Key, int]] = []
        self._key_of: dict[int, Key] = {}
        self._seen = 0

    def reset(self, jobs: JobRows) -> None:
        """Forget the ranked queue of a previous run."""
        self._ranked = []
        self._key_of = {}
        self._seen = 0

    def _ordered(self, queue: QueueView, state: ClusterState, now: float) -> list[tuple[Key, int]]:
        key = self.key
        if self.time_dependent or not state.estimator.static:
            return sorted((key(row, queue, state, now), row) for row in queue)
        ranked = self._ranked
        key_of = self._key_of
        for row in range(self._seen, queue.arrived):
            k = key(row, queue, state, now)
            key_of[row] = k
            bisect.insort(ranked, (k, row))
        self._seen = queue.arrived
        return ranked

    def select(self, queue: QueueView, state: ClusterState, now: float) -> list[int]:
        """Start jobs in rank order (see the class docstring)."""
        ranked = self._ordered(queue, state, now)
        free = state.free_cores
        cores = queue.cores
        strict = self.strict
        chosen: list[int] = []
        for _, row in ranked:
            need = cores[row]
            if need <= free:
                chosen.append(row)
                free -= need
                if free == 0:
                    break
            elif strict:
                break
        if ranked is self._ranked:
            key_of = self._key_of
            for row in chosen:
                del ranked[bisect.bisect_left(ranked, (key_of.pop(row), row))]
        return chosen


# --- rank keys --------------------------------------------------------------------------------


def _sjf(row: int, queue: QueueView, state: ClusterState, now: float) -> Key:
    return state.estimate(row)


def _ljf(row: int, queue: QueueView, state: ClusterState, now: float) -> Key:
    return -state.estimate(row)


def _smallest(row: int, queue: QueueView, state: ClusterState, now: float) -> Key:
    return queue.cores[row]


def _largest(row: int, queue: QueueView, state: ClusterState, now: float) -> Key:
    return -queue.cores[row]


def _hrrn(row: int, queue: QueueView, state: ClusterState, now: float) -> Key:
    r = state.estimate(row)
    if r <= 0:
        return -math.inf
    return -(now - queue.submit_s[row] + r) / r


def _wfp3(row: int, queue: QueueView, state: ClusterState, now: float) -> Key:
    r = state.estimate(row)
    if r <= 0:
        return -math.inf
    return -(((now - queue.submit_s[row]) / r) ** 3) * queue.cores[row]


def _unicep(row: int, queue: QueueView, state: ClusterState, now: float) -> Key:
    r = state.estimate(row)
    wait = now - queue.submit_s[row]
    n = queue.cores[row]
    if n == 1:  # log2(1) = 0: infinite priority; serial jobs among themselves by w / r̂
        return (0, -math.inf if r <= 0 else -wait / r)
    return (1, -math.inf if r <= 0 else -wait / (math.log2(n) * r))


def _f1(row: int, queue: QueueView, state: ClusterState, now: float) -> Key:
    r = state.estimate(row)
    s = queue.submit_s[row]
    return math.log10(r if r > 0 else 0.1) * queue.cores[row] + 870.0 * math.log10(
        s if s > 0 else 0.1
    )


def _edf_key(config: PolicyConfig) -> Callable[[int, QueueView, ClusterState, float], Key]:
    w_inter = config.target_w
    w_batch = config.target_w if config.target_w_batch is None else config.target_w_batch
    for w in (w_inter, w_batch):
        if not 0 < w <= 1:
            raise ConfigError(f"EDF target W* must be in (0, 1], got {w}")
    tau = config.tau_s
    slack_inter = (1 - w_inter) / w_inter
    slack_batch = (1 - w_batch) / w_batch

    def edf(row: int, queue: QueueView, state: ClusterState, now: float) -> Key:
        r = state.estimate(row)
        return queue.submit_s[row] + r * (slack_inter if r <= tau else slack_batch)

    return edf


# --- fair-share -------------------------------------------------------------------------------


class FairSharePolicy:
    """Fair-share: the oldest fitting job of the VO furthest below its target share.

    Usage U_k of VO k is Σ cores × time of its jobs, decayed with half-life H: between events
    dU_k/dt = −(ln 2 / H) U_k + c_k(t), with c_k the cores its jobs hold (integrated exactly, the
    running jobs' true ends being known to the site). u_k = U_k / Σ U is its usage share (0 for all
    before any usage). Jobs rank by S_k − u_k descending (S_k the normalised target share, 0 for a
    VO without one), then by (submit, id); the rank is fixed for the instant, and jobs are taken
    among those that fit.

    Parameters
    ----------
    vo_shares : mapping of str to float
        Target shares S_k.
    half_life_s : float, default 604800
        H.
    """

    name = "fairshare"

    def __init__(self, vo_shares: Mapping[str, float], *, half_life_s: float = 7 * 86400.0) -> None:
        names, w = normalised_shares(vo_shares)
        if not (half_life_s > 0 and math.isfinite(half_life_s)):
            raise ConfigError(f"half_life_s must be finite and > 0, got {half_life_s}")
        self.targets: dict[str | None, float] = dict(zip(names, w.tolist(), strict=True))
        self.half_life_s = float(half_life_s)
        self._lambda = math.log(2.0) / self.half_life_s
        self.usage: dict[str | None, float] = {}
        self._held: dict[str | None, int] = {}
        self._ends: list[tuple[float, int]] = []
        self._t = -math.inf

    def reset(self, jobs: JobRows) -> None:
        """Forget the usage of a previous run."""
        self.usage = {}
        self._held = {}
        self._ends = []
        self._t = -math.inf

    def _integrate(self, to: float) -> None:
        """Decay and grow the usage from the last update to ``to`` with the cores held now."""
        dt = to - self._t
        if dt > 0 and math.isfinite(dt):
            lam = self._lambda
            decay = math.exp(-lam * dt)
            grow = (1.0 - decay) / lam
            usage = self.usage
            for k in usage:
                usage[k] *= decay
            for k, held in self._held.items():
                usage[k] = usage.get(k, 0.0) + held * grow
        self._t = to

    def _advance(self, to: float, cores: Sequence[int], vo: Sequence[str | None]) -> None:
        """Integrate usage up to ``to``, applying the completions of started jobs on the way."""
        ends = self._ends
        while ends and ends[0][0] <= to:
            end, row = heapq.heappop(ends)
            self._integrate(end)
            self._held[vo[row]] -= cores[row]
        self._integrate(to)

    def select(self, queue: QueueView, state: ClusterState, now: float) -> list[int]:
        """Start the fitting jobs ranked by VO deficit, then age."""
        cores, vo = queue.cores, queue.vo
        self._advance(now, cores, vo)
        total = sum(self.usage.values())
        targets = self.targets
        usage = self.usage

        def deficit(k: str | None) -> float:
            u = usage.get(k, 0.0) / total if total > 0 else 0.0
            return targets.get(k, 0.0) - u

        by_vo: dict[str | None, float] = {}
        ranked: list[tuple[float, int]] = []
        for row in queue:
            k = vo[row]
            d = by_vo.get(k)
            if d is None:
                d = by_vo[k] = deficit(k)
            ranked.append((-d, row))
        ranked.sort()
        free = state.free_cores
        chosen: list[int] = []
        run = queue.run_s
        for _, row in ranked:
            need = cores[row]
            if need <= free:
                chosen.append(row)
                free -= need
                k = vo[row]
                self._held[k] = self._held.get(k, 0) + need
                heapq.heappush(self._ends, (now + run[row], row))
                if free == 0:
                    break
        return chosen


# --- packing and random -----------------------------------------------------------------------


class TetrisPolicy:
    """DeepRM's Packer and Tetris* with one resource type (cores).

    Score of a fitting job = knob · (free · n_j) / P² + (1 − knob) · u / max(r̂_j, u), highest
    first, recomputed after every start (``free`` changes). The first term is Packer's alignment
    ⟨free-resource vector, demand vector⟩ scaled to [0, 1]; the second is SJF's 1/r̂ with runtimes
    in units of u, also in [0, 1]. With one resource type Packer (knob = 1) reduces to "largest
    fitting job first"; the alignment only means something with several resource types.

    Parameters
    ----------
    knob : float, default 0.5
        In [0, 1].
    time_unit_s : float, default 60
        u.
    name : str, optional
        Defaults to ``"packer"`` for knob = 1, else ``"tetris"``.
    """

    def __init__(self, *, knob: float = 0.5, time_unit_s: float = 60.0, name: str = "") -> None:
        if not 0 <= knob <= 1:
            raise ConfigError(f"knob must be in [0, 1], got {knob}")
        if not time_unit_s > 0:
            raise ConfigError(f"time_unit_s must be > 0, got {time_unit_s}")
        self.knob = float(knob)
        self.time_unit_s = float(time_unit_s)
        self.name = name or ("packer" if knob == 1 else "tetris")

    def select(self, queue: QueueView, state: ClusterState, now: float) -> list[int]:
        """Repeatedly start the best-scoring fitting job."""
        cores = queue.cores
        free = state.free_cores
        scale = float(state.pool_size) ** 2 or 1.0
        knob, unit = self.knob, self.time_unit_s
        short = {row: unit / max(state.estimate(row), unit) for row in queue}
        chosen: list[int] = []
        left = dict.fromkeys(queue)
        while free > 0:
            best = -1
            best_score = -math.inf
            for row in left:
                need = cores[row]
                if need <= free:
                    score = knob * free * need / scale + (1 - knob) * short[row]
                    if score > best_score:  # strict: the earlier row wins ties
                        best, best_score = row, score
            if best < 0:
                break
            chosen.append(best)
            free -= cores[best]
            del left[best]
        return chosen


class RandomPolicy:
    """Uniformly random among the jobs that fit, repeatedly (a seeded floor).

    Parameters
    ----------
    rng : numpy.random.Generator
        The only source of randomness.
    """

    name = "random"

    def __init__(self, rng: np.random.Generator) -> None:
        if not isinstance(rng, np.random.Generator):
            raise ConfigError("the random policy needs a numpy.random.Generator (rng=...)")
        self.rng = rng

    def select(self, queue: QueueView, state: ClusterState, now: float) -> list[int]:
        """Draw fitting jobs one at a time until none fits."""
        cores = queue.cores
        free = state.free_cores
        fitting = [row for row in queue if cores[row] <= free]
        chosen: list[int] = []
        while fitting:
            row = fitting.pop(int(self.rng.integers(len(fitting))))
            chosen.append(row)
            free -= cores[row]
            fitting = [r for r in fitting if cores[r] <= free]
        return chosen


class AsLoggedReplay:
    """As-logged replay ("native"): every job starts at submit + its logged wait.

    Not an event-loop policy: :func:`~gridtrace.sim.simulate` replays the logged start times
    directly (they need not fit the simulated pool; the summary reports the peak cores in use).
    """

    name = "native"

    def select(self, queue: QueueView, state: ClusterState, now: float) -> list[int]:
        """Refuse: the replay does not make decisions."""
        raise SimulationError("the as-logged replay runs in simulate(), not in the event loop")


# --- registry ---------------------------------------------------------------------------------


def _priority(
    name: str,
    key: Callable[[int, QueueView, ClusterState, float], Key],
    *,
    strict: bool = False,
    time_dependent: bool = False,
) -> Callable[[PolicyConfig], Policy]:
    def build(config: PolicyConfig) -> Policy:
        return PriorityPolicy(name, key, strict=strict, time_dependent=time_dependent)

    return build


def _fairshare(config: PolicyConfig) -> Policy:
    if config.vo_shares is None:
        raise ConfigError("the fairshare policy needs target VO shares (vo_shares)")
    return FairSharePolicy(config.vo_shares, half_life_s=config.half_life_s)


def _random(config: PolicyConfig) -> Policy:
    if config.rng is None:
        raise ConfigError("the random policy needs a numpy.random.Generator (rng=...)")
    return RandomPolicy(config.rng)


def _edf(config: PolicyConfig) -> Policy:
    return PriorityPolicy("edf", _edf_key(config))


def _backfill(kind: str) -> Callable[[PolicyConfig], Policy]:
    def build(config: PolicyConfig) -> Policy:
        from gridtrace.sim import _backfill as bf

        classes: dict[str, Callable[[], Policy]] = {
            "easy": bf.EasyBackfilling,
            "conservative": bf.ConservativeBackfilling,
            "greedy-first-fit": bf.GreedyFirstFit,
        }
        return classes[kind]()

    return build


def _fifo(config: PolicyConfig) -> Policy:
    return FifoPolicy()


def _native(config: PolicyConfig) -> Policy:
    return AsLoggedReplay()


POLICIES: Mapping[str, Callable[[PolicyConfig], Policy]] = MappingProxyType(
    {
        "fifo": _fifo,
        "sjf": _priority("sjf", _sjf),
        "sjf-strict": _priority("sjf-strict", _sjf, strict=True),
        "ljf": _priority("ljf", _ljf),
        "ljf-strict": _priority("ljf-strict", _ljf, strict=True),
        "smallest-first": _priority("smallest-first", _smallest),
        "largest-first": _priority("largest-first", _largest),
        "hrrn": _priority("hrrn", _hrrn, time_dependent=True),
        "wfp3": _priority("wfp3", _wfp3, time_dependent=True),
        "unicep": _priority("unicep", _unicep, time_dependent=True),
        "f1": _priority("f1", _f1),
        "edf": _edf,
        "fairshare": _fairshare,
        "easy": _backfill("easy"),
        "conservative": _backfill("conservative"),
        "greedy-first-fit": _backfill("greedy-first-fit"),
        "packer": lambda c: TetrisPolicy(knob=1.0, time_unit_s=c.time_unit_s),
        "tetris": lambda c: TetrisPolicy(knob=c.knob, time_unit_s=c.time_unit_s),
        "random": _random,
        "native": _native,
    }
)
"""The built-in policies by name; each value builds a fresh policy from a :class:`PolicyConfig`."""


def make_policy(
    policy: str | Policy,
    config: PolicyConfig | None = None,
    **options: Any,
) -> Policy:
    """Return a policy object for a name in :data:`POLICIES`, or ``policy`` itself.

    Parameters
    ----------
    policy : str or Policy
        A registered name or a policy object (returned as is).
    config : PolicyConfig, optional
        Options of the built-in policies.
    **options
        Overrides of fields of ``config`` (e.g. ``knob=0.3``).

    Raises
    ------
    ConfigError
        If the name is unknown (the message lists the known ones), an option is unknown or missing
        (``fairshare`` needs ``vo_shares``, ``random`` needs ``rng``), or the object has no
        ``select``.

    Examples
    --------
    >>> make_policy("sjf-strict").name
    'sjf-strict'
    """
    from gridtrace.sim._engine import Policy as PolicyProtocol

    cfg = (config or PolicyConfig()).with_options(options)
    if isinstance(policy, str):
        try:
            factory = POLICIES[policy]
        except KeyError:
            known = ", ".join(sorted(POLICIES))
            raise ConfigError(f"unknown policy {policy!r}; known policies: {known}") from None
        return factory(cfg)
    if not isinstance(policy, PolicyProtocol):
        raise ConfigError(f"{policy!r} is not a policy (it needs a name and a select method)")
    return policy
