"""Explicit, seeded randomness.

Nothing in gridtrace touches NumPy's global random state. Every stochastic function takes a seed or
a :class:`numpy.random.Generator`; independent streams are split off with
:meth:`numpy.random.SeedSequence.spawn`, so adding a component never perturbs another.
"""

from __future__ import annotations

import numpy as np

__all__ = ["as_generator", "as_seed_sequence", "spawn_generators", "spawn_seeds"]

SeedLike = int | np.random.SeedSequence | np.random.Generator | None


def as_generator(rng: SeedLike) -> np.random.Generator:
    """Return a generator for ``rng`` (an int seed, a SeedSequence, a Generator or None).

    Parameters
    ----------
    rng : int, SeedSequence, Generator or None
        ``None`` draws fresh entropy from the operating system; use it only interactively.

    Returns
    -------
    numpy.random.Generator
        ``rng`` itself when it already is a generator.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(rng)


def as_seed_sequence(rng: SeedLike) -> np.random.SeedSequence:
    """Return a SeedSequence to spawn independent streams from ``rng``.

    Parameters
    ----------
    rng : int, SeedSequence, Generator or None
        A SeedSequence is returned as is. A Generator gives a child of its own seed sequence
        (spawning advances it, so two calls give different children), or, if it has none, a
        sequence seeded by one draw from it.

    Returns
    -------
    numpy.random.SeedSequence
    """
    if isinstance(rng, np.random.SeedSequence):
        return rng
    if isinstance(rng, np.random.Generator):
        seq = rng.bit_generator.seed_seq
        if isinstance(seq, np.random.SeedSequence):
            return seq.spawn(1)[0]
        return np.random.SeedSequence(int(rng.integers(2**63 - 1)))
    return np.random.SeedSequence(rng)


def spawn_seeds(seed: int | np.random.SeedSequence, n: int) -> list[np.random.SeedSequence]:
    """Split a root seed into ``n`` independent seed sequences.

    Parameters
    ----------
    seed : int or SeedSequence
        The root seed.
    n : int
        Number of independent streams.

    Returns
    -------
    list of SeedSequence
        The children, in a fixed order: stream ``i`` is always the same for the same root.
    """
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return root.spawn(n)


def spawn_generators(seed: int | np.random.SeedSequence, n: int) -> list[np.random.Generator]:
    """Split a root seed into ``n`` independent generators (see :func:`spawn_seeds`)."""
    return [np.random.default_rng(s) for s in spawn_seeds(seed, n)]
