"""SARSA targets and the batch refit shared by the scheduling and provisioning agents."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from gridtrace.sim.rl._qfunctions import QFunction
from gridtrace.sim.rl._transitions import TransitionStore

__all__ = ["sarsa_refit", "sarsa_targets"]


def sarsa_targets(
    model: QFunction,
    store: TransitionStore,
    index: NDArray[np.int64],
    *,
    eta: float,
    gamma: float,
    time_unit_s: float | None,
) -> NDArray[np.float64]:
    """Return the SARSA regression targets of transitions ``index``.

    y_i = Q(x_i) + η (r_i + g_i Q(x_{i+1}) − Q(x_i)), with Q the model's current predictions,
    x_{i+1} the input of the decision actually taken next (on-policy), g_i = γ per decision or
    γ^(Δt / time_unit_s) (semi-MDP), and Q(x_{i+1}) = 0 for the last decision of an episode.

    Parameters
    ----------
    model : QFunction
        The current Q approximator.
    store : TransitionStore
        The decisions; every index must have its reward.
    index : ndarray of int
        Transitions to compute targets for.
    eta, gamma : float
        Learning rate η and discount γ.
    time_unit_s : float or None
        None for per-decision discounting, else the time unit of semi-MDP discounting.
    """
    nxt, has_next = store.successors(index)
    if index.size == 0:
        return np.zeros(0, dtype=np.float64)
    lo = int(index.min())
    hi = int(max(index.max(), nxt.max())) + 1
    if hi - lo <= 2 * index.size:
        # a window of consecutive decisions (the refit's case): Q of each row once, not twice
        q_span = model.predict(store.inputs[lo:hi])
        q_now = q_span[index - lo]
        q_next = np.where(has_next, q_span[nxt - lo], 0.0)
    else:
        q_now = model.predict(store.inputs[index])
        q_next = np.where(has_next, model.predict(store.inputs[nxt]), 0.0)
    g = store.discounts(index, nxt, gamma, time_unit_s)
    td = store.reward[index] + g * q_next - q_now
    return np.asarray(q_now + eta * td, dtype=np.float64)


def sarsa_refit(
    model: QFunction,
    store: TransitionStore,
    *,
    window: int,
    eta: float,
    gamma: float,
    time_unit_s: float | None,
) -> int:
    """Refit ``model`` on the SARSA targets of the last ``window`` usable transitions.

    A transition is usable when its reward is known and its successor has been taken (or its
    episode has ended). Returns the number of rows fitted (0: nothing to fit, model unchanged).
    """
    hi = store.size
    if hi == 0:
        return 0
    index = np.arange(max(0, hi - window), hi, dtype=np.int64)
    usable = store.ready[index]
    last = hi - 1
    if store.episode[last] == store.current_episode:
        usable &= index != last  # its successor is not known yet
    index = index[usable]
    if index.size == 0:
        return 0
    targets = sarsa_targets(model, store, index, eta=eta, gamma=gamma, time_unit_s=time_unit_s)
    model.fit(store.inputs[index], targets)
    return int(index.size)
