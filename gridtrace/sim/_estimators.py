"""Runtime estimators: what a policy believes a job's runtime r̂ to be at a decision.

Three estimators (DESIGN.md "Simulator semantics"):

oracle
    r̂ = the job's actual runtime.
median
    The research's "estimated" runtime: the median runtime of the jobs of the same class (by
    default the same VO) that *completed* in the trailing window [now − window_s, now]. A job
    completing at ``now`` is seen by a decision at ``now``, because completions are handled before
    decisions at equal times (the event order). Without such a job the estimate falls back to the
    median over every class in the window, then to ``prior_s``; the estimator counts how often each
    source answered (:attr:`ClassMedianEstimator.sources`), and the count goes into the summary.
walltime
    r̂ = the requested walltime ``walltime_req_s``. Jobs without one are an error unless
    ``missing="oracle"`` is given, in which case they use their runtime and are counted.

The engine calls ``reset(jobs)`` before a run, ``observe(row, end_s)`` at every completion and
``estimate(row, now)`` whenever a policy (or the engine, at a start) asks.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Callable, Hashable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from gridtrace.errors import ConfigError, SimulationError

if TYPE_CHECKING:
    from gridtrace.sim._engine import JobRows

__all__ = [
    "ESTIMATORS",
    "ClassMedianEstimator",
    "OracleEstimator",
    "RuntimeEstimator",
    "WalltimeEstimator",
    "make_estimator",
]


@runtime_checkable
class RuntimeEstimator(Protocol):
    """Estimates job runtimes from what is known at the decision time.

    Attributes
    ----------
    name : str
        Identifier written into results (``"oracle"``, ``"median"``, ``"walltime"``).
    static : bool
        True if a job's estimate never changes during a run (it depends on the job only); policies
        may then cache keys built from it, and the numba kernels may be used.
    """

    name: str
    static: bool

    def reset(self, jobs: JobRows) -> None:
        """Forget everything and bind to the jobs of a new run."""
        ...

    def observe(self, row: int, end_s: float) -> None:
        """Record that job ``row`` completed at ``end_s``."""
        ...

    def estimate(self, row: int, now: float) -> float:
        """Return r̂ of job ``row`` at time ``now``, from jobs completed by ``now`` only."""
        ...

    def describe(self) -> dict[str, Any]:
        """Return settings and counters for the summary (JSON types)."""
        ...


class OracleEstimator:
    """r̂ = the actual runtime."""

    name = "oracle"
    static = True

    def __init__(self) -> None:
        self._run: Sequence[float] = ()

    def reset(self, jobs: JobRows) -> None:
        """Bind to ``jobs``."""
        self._run = jobs.run_s

    def observe(self, row: int, end_s: float) -> None:
        """Nothing to learn."""

    def estimate(self, row: int, now: float) -> float:
        """Return the runtime of ``row``."""
        return self._run[row]

    def describe(self) -> dict[str, Any]:
        """Return the name."""
        return {"name": self.name}


class WalltimeEstimator:
    """r̂ = the requested walltime.

    Parameters
    ----------
    missing : {"error", "oracle"}, default "error"
        What to do with jobs without a positive finite walltime: refuse the run
        (:class:`~gridtrace.errors.SimulationError` at ``reset``), or use their runtime and count
        them (``describe()["oracle_fallback_jobs"]``).
    """

    name = "walltime"
    static = True

    def __init__(self, *, missing: Literal["error", "oracle"] = "error") -> None:
        if missing not in ("error", "oracle"):
            raise ConfigError(f"missing must be 'error' or 'oracle', got {missing!r}")
        self.missing = missing
        self._est: list[float] = []
        self._fallback = 0

    def reset(self, jobs: JobRows) -> None:
        """Bind to ``jobs``; check that every job has a walltime (see ``missing``)."""
        wall = jobs.walltime_req_s
        self.reset_arrays(
            np.full(len(jobs), np.nan) if wall is None else np.asarray(wall, dtype=np.float64),
            np.asarray(jobs.run_s, dtype=np.float64),
        )

    def reset_arrays(
        self, walltime_s: NDArray[np.float64], run_s: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """Bind to the jobs of these two columns, as :meth:`reset`; return every estimate.

        Parameters
        ----------
        walltime_s, run_s : ndarray of float64
            The jobs' requested walltimes (NaN where unknown) and runtimes, in row order.

        Returns
        -------
        ndarray of float64
            The walltime where it is positive and finite, else the runtime (counted).

        Raises
        ------
        SimulationError
            If a job has no positive walltime and ``missing`` is ``"error"``.
        ValueError
            If the two columns differ in length.
        """
        if walltime_s.shape != run_s.shape:
            raise ValueError(f"{walltime_s.shape[0]} walltimes for {run_s.shape[0]} runtimes")
        with np.errstate(invalid="ignore"):
            known = np.isfinite(walltime_s) & (walltime_s > 0)
        bad = int(walltime_s.size - np.count_nonzero(known))
        if bad and self.missing == "error":
            raise SimulationError(
                f"{bad} of {walltime_s.size} jobs have no positive walltime_req_s; use another "
                "estimator or WalltimeEstimator(missing='oracle')"
            )
        estimates: NDArray[np.float64] = np.where(known, walltime_s, run_s)
        self._est = estimates.tolist()
        self._fallback = bad
        return estimates

    def observe(self, row: int, end_s: float) -> None:
        """Nothing to learn."""

    def estimate(self, row: int, now: float) -> float:
        """Return the requested walltime of ``row``."""
        return self._est[row]

    def describe(self) -> dict[str, Any]:
        """Return the name and the number of jobs that used their runtime instead."""
        return {"name": self.name, "missing": self.missing, "oracle_fallback_jobs": self._fallback}


class _Window:
    """Runtimes of the jobs completed in a trailing time window, with their median."""

    __slots__ = ("_ends", "_median", "_sorted")

    def __init__(self) -> None:
        self._ends: deque[tuple[float, float]] = deque()  # (end, run) in completion order
        self._sorted: list[float] = []
        self._median: float | None = None

    def add(self, end_s: float, run_s: float) -> None:
        self._ends.append((end_s, run_s))
        bisect.insort(self._sorted, run_s)
        self._median = None

    def median(self, oldest_end_s: float) -> float | None:
        ends = self._ends
        while ends and ends[0][0] < oldest_end_s:
            _, run = ends.popleft()
            del self._sorted[bisect.bisect_left(self._sorted, run)]
            self._median = None
        if self._median is None and self._sorted:
            values = self._sorted
            mid = len(values) // 2
            self._median = values[mid] if len(values) % 2 else 0.5 * (values[mid - 1] + values[mid])
        return self._median


_CLASS_COLUMNS = ("vo", "user", "queue", "interactive")


class ClassMedianEstimator:
    """r̂ = the median runtime of the job's class over the jobs completed in a trailing window.

    Parameters
    ----------
    window_s : float, default 604800 (7 days)
        Length of the trailing window; jobs that completed in [now − window_s, now] count.
    by : sequence of {"vo", "user", "queue", "interactive"}, default ("vo",)
        The columns whose values define a job's class (a missing value is a class of its own).
    prior_s : float, default 900
        The estimate when no job at all completed in the window (τ, the interactive threshold).

    Attributes
    ----------
    sources : dict of str to int
        How many estimates came from the job's class, from all classes, and from the prior.
    """

    name = "median"
    static = False

    def __init__(
        self,
        *,
        window_s: float = 7 * 86400.0,
        by: Sequence[str] = ("vo",),
        prior_s: float = 900.0,
    ) -> None:
        if not (window_s > 0):
            raise ConfigError(f"window_s must be > 0, got {window_s}")
        if not (math.isfinite(prior_s) and prior_s >= 0):
            raise ConfigError(f"prior_s must be finite and >= 0, got {prior_s}")
        unknown = [c for c in by if c not in _CLASS_COLUMNS]
        if unknown or not by:
            raise ConfigError(f"by must name some of {_CLASS_COLUMNS}, got {tuple(by)}")
        self.window_s = float(window_s)
        self.by = tuple(by)
        self.prior_s = float(prior_s)
        self.sources = {"class": 0, "all": 0, "prior": 0}
        self._run: Sequence[float] = ()
        self._key: list[Hashable] = []
        self._classes: dict[Hashable, _Window] = {}
        self._all = _Window()

    def reset(self, jobs: JobRows) -> None:
        """Bind to ``jobs`` and forget every completion."""
        columns: list[Sequence[str | bool | None]] = []
        for name in self.by:
            col = getattr(jobs, name)
            if col is None:
                col = [None] * len(jobs)
            columns.append(col)
        self._key = list(zip(*columns, strict=True)) if columns else []
        self._run = jobs.run_s
        self._classes = {}
        self._all = _Window()
        self.sources = {"class": 0, "all": 0, "prior": 0}

    def observe(self, row: int, end_s: float) -> None:
        """Add the runtime of ``row`` to its class's window."""
        run = self._run[row]
        key = self._key[row]
        window = self._classes.get(key)
        if window is None:
            window = self._classes[key] = _Window()
        window.add(end_s, run)
        self._all.add(end_s, run)

    def estimate(self, row: int, now: float) -> float:
        """Return the class median at ``now`` (or a fallback; see the class docstring)."""
        oldest = now - self.window_s
        window = self._classes.get(self._key[row])
        if window is not None:
            m = window.median(oldest)
            if m is not None:
                self.sources["class"] += 1
                return m
        m = self._all.median(oldest)
        if m is not None:
            self.sources["all"] += 1
            return m
        self.sources["prior"] += 1
        return self.prior_s

    def describe(self) -> dict[str, Any]:
        """Return the settings and :attr:`sources`."""
        return {
            "name": self.name,
            "window_s": self.window_s,
            "by": list(self.by),
            "prior_s": self.prior_s,
            "sources": dict(self.sources),
        }


ESTIMATORS: Mapping[str, Callable[..., RuntimeEstimator]] = MappingProxyType(
    {
        "oracle": OracleEstimator,
        "median": ClassMedianEstimator,
        "walltime": WalltimeEstimator,
    }
)
"""The runtime estimators by name; each value builds a fresh estimator from keyword options."""


def make_estimator(estimator: str | RuntimeEstimator, **options: Any) -> RuntimeEstimator:
    """Return an estimator for a name in :data:`ESTIMATORS` (with ``options``), or ``estimator``.

    Raises
    ------
    ConfigError
        If the name is unknown (the message lists the known ones), an option is not accepted, or
        an object is not a :class:`RuntimeEstimator`.
    """
    if isinstance(estimator, str):
        try:
            factory = ESTIMATORS[estimator]
        except KeyError:
            known = ", ".join(sorted(ESTIMATORS))
            raise ConfigError(f"unknown estimator {estimator!r}; known: {known}") from None
        try:
            return factory(**options)
        except TypeError as exc:
            raise ConfigError(f"bad option for estimator {estimator!r}: {exc}") from None
    if options:
        raise ConfigError("estimator options apply to estimator names only")
    if not isinstance(estimator, RuntimeEstimator):
        raise ConfigError(f"{estimator!r} is not a runtime estimator")
    return estimator
