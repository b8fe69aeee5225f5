"""A growable store of decisions and their delayed rewards, shared by the RL agents."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["TransitionStore"]


class TransitionStore:
    """Decisions in the order they were taken, with rewards that arrive later.

    Transition i is the decision taken at ``time[i]`` with training input ``inputs[i]``; its
    successor (for SARSA) is transition i + 1 of the same episode. Rewards are filled in when
    known (``ready``). Optionally the training inputs of every candidate of each decision are
    kept (ragged, CSR style) for fitted-Q iteration.

    Parameters
    ----------
    n_inputs : int
        Length of a training input row.
    keep_candidates : bool, default False
        Keep every candidate's input row (needed by fitted-Q iteration).
    """

    def __init__(self, n_inputs: int, *, keep_candidates: bool = False) -> None:
        self.n_inputs = n_inputs
        self.keep_candidates = keep_candidates
        self.size = 0
        capacity = 1024
        self.inputs = np.zeros((capacity, n_inputs), dtype=np.float64)
        self.reward = np.zeros(capacity, dtype=np.float64)
        self.ready = np.zeros(capacity, dtype=bool)
        self.time = np.zeros(capacity, dtype=np.float64)
        self.episode = np.zeros(capacity, dtype=np.int64)
        self._candidates: list[NDArray[np.float64]] = []
        self.current_episode = 0

    def _grow(self) -> None:
        capacity = 2 * self.inputs.shape[0]
        for name in ("inputs", "reward", "ready", "time", "episode"):
            old = getattr(self, name)
            new = np.zeros((capacity, *old.shape[1:]), dtype=old.dtype)
            new[: self.size] = old[: self.size]
            setattr(self, name, new)

    def add(
        self,
        inputs: NDArray[np.float64],
        now: float,
        candidates: NDArray[np.float64] | None = None,
    ) -> int:
        """Append a decision; return its index."""
        if self.size == self.inputs.shape[0]:
            self._grow()
        i = self.size
        self.inputs[i] = inputs
        self.time[i] = now
        self.episode[i] = self.current_episode
        self.ready[i] = False
        if self.keep_candidates:
            self._candidates.append(
                candidates if candidates is not None else inputs[np.newaxis, :].copy()
            )
        self.size = i + 1
        return i

    def reserve(self, now: float) -> int:
        """Append a decision whose input row the caller writes into ``inputs[index]``.

        The row is left as it was (zeros or an older value): write it before the next refit.
        Only for a store that does not keep candidates. Returns the index.
        """
        if self.size == self.inputs.shape[0]:
            self._grow()
        i = self.size
        self.time[i] = now
        self.episode[i] = self.current_episode
        self.ready[i] = False
        self.size = i + 1
        return i

    def pay(self, index: int, reward: float) -> None:
        """Set the reward of transition ``index``."""
        self.reward[index] = reward
        self.ready[index] = True

    def new_episode(self) -> None:
        """Start a new episode: the next decision has no predecessor."""
        if self.size:
            self.current_episode += 1

    def successors(self, index: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
        """Return i + 1 for each index and whether it exists in the same episode."""
        nxt = index + 1
        has = nxt < self.size
        nxt_safe = np.where(has, nxt, index)
        has &= self.episode[nxt_safe] == self.episode[index]
        return nxt_safe, has

    def discounts(
        self,
        index: NDArray[np.int64],
        nxt: NDArray[np.int64],
        gamma: float,
        time_unit_s: float | None,
    ) -> NDArray[np.float64]:
        """Return γ per decision, or γ^(Δt / time_unit_s) (semi-MDP) when a unit is given."""
        if time_unit_s is None:
            return np.full(index.shape, gamma)
        dt = np.maximum(self.time[nxt] - self.time[index], 0.0)
        return np.asarray(gamma ** (dt / time_unit_s), dtype=np.float64)

    def candidates_csr(self, upto: int) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """Return the candidate rows of decisions ``0 … upto − 1`` and their CSR offsets."""
        blocks = self._candidates[:upto]
        offsets = np.zeros(len(blocks) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([b.shape[0] for b in blocks])
        rows = np.concatenate(blocks) if blocks else np.zeros((0, self.n_inputs), dtype=np.float64)
        return rows, offsets
