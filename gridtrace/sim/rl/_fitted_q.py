r"""Fitted-Q iteration over stored transitions, for any :class:`QFunction` (meant for the ESN).

A transition ``i`` (kept in arrival order) is the training input row ``x_i`` of the chosen
candidate, its reward ``r_i``, its discount ``g_i`` and the training input rows of the candidates
offered at the *next* decision. The rows are those :meth:`QFunction.candidate_inputs` returned
while the transitions were collected; for the ESN they carry the reservoir state of that moment,
which is why the transitions must stay in the order they arrived in and why they need not be
recomputed: the reservoir is fixed, only the readout is refitted. Fitted-Q iteration (Ernst,
Geurts & Wehenkel, 2005) then repeats, for ``k = 1 … K``,

.. math::

    y_i^{(k)} = r_i + g_i \max_j Q_{k-1}(x'_{i,j}), \qquad
    Q_k = \mathrm{fit}(\{x_i\}, \{y_i^{(k)}\}),

with ``y_i = r_i`` when the next decision has no candidate (or the transition is marked
terminal). ``Q_0`` is the model as passed in (a fresh :class:`ESNQ` has Q ≡ 0, so
``y^{(1)} = r``). The discount is given per transition: ``γ`` for per-decision discounting,
``γ^{Δt}`` for semi-MDP discounting over the time ``Δt`` to the next decision; the caller
chooses and states which.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gridtrace._log import library_logger
from gridtrace.errors import FitError
from gridtrace.sim.rl._qfunctions import QFunction, _positive_int

__all__ = ["FittedQResult", "fitted_q_iteration"]

logger = library_logger(__name__)

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class FittedQResult:
    """What :func:`fitted_q_iteration` did, one entry per iteration ``k = 1 … K``.

    Attributes
    ----------
    targets : ndarray of shape (N,)
        The targets ``y^{(K)}`` of the last fit.
    q_change : tuple of float
        ``mean_i |Q_k(x_i) − Q_{k−1}(x_i)|``: how much the fit moved Q on the transitions
        (the contraction diagnostic; → 0 as the iteration converges).
    target_change : tuple of float
        ``mean_i |y_i^{(k)} − y_i^{(k−1)}|``, with ``y^{(0)} = Q_0(x)`` (the first entry is how far
        the first targets are from the model's predictions before any fit).
    fit_rmse : tuple of float
        ``√mean_i (Q_k(x_i) − y_i^{(k)})²``: how well the fit reproduced its targets.
    bellman_rmse : tuple of float
        ``√mean_i (Q_k(x_i) − r_i − g_i max_j Q_k(x'_{i,j}))²``: the Bellman residual of ``Q_k``
        itself on the transitions (0 at a fixed point that the model represents exactly).
    """

    targets: FloatArray
    q_change: tuple[float, ...]
    target_change: tuple[float, ...]
    fit_rmse: tuple[float, ...]
    bellman_rmse: tuple[float, ...]

    @property
    def iterations(self) -> int:
        """Number of iterations run."""
        return len(self.q_change)


def _next_max(
    model: QFunction,
    next_inputs: FloatArray,
    starts: npt.NDArray[np.intp],
    has_next: npt.NDArray[np.bool_],
    size: int,
) -> FloatArray:
    """Return ``max_j Q(x'_{i,j})`` per transition, 0 where the transition has no next rows."""
    best = np.zeros(size)
    if starts.size:
        q = np.asarray(model.predict(next_inputs), dtype=np.float64)
        # reduceat over the starts of the non-empty segments only: each such segment then runs
        # to the next non-empty start (the empty ones between have zero length) or to the end
        best[has_next] = np.maximum.reduceat(q, starts)
    return best


def fitted_q_iteration(
    model: QFunction,
    inputs: npt.ArrayLike,
    rewards: npt.ArrayLike,
    discounts: npt.ArrayLike,
    next_inputs: npt.ArrayLike,
    next_offsets: npt.ArrayLike,
    *,
    iterations: int,
    terminal: npt.ArrayLike | None = None,
) -> FittedQResult:
    r"""Fit ``model`` by fitted-Q iteration over transitions kept in arrival order.

    Parameters
    ----------
    model : QFunction
        Refitted in place ``iterations`` times (its :meth:`~QFunction.fit` is a batch refit).
        Its current fit is ``Q_0``.
    inputs : array_like of shape (N, p)
        Training input row of each transition's chosen candidate.
    rewards : array_like of shape (N,)
        Reward ``r_i``.
    discounts : array_like of shape (N,)
        Discount ``g_i`` in [0, 1] applied to the next decision's value: ``γ`` (per decision) or
        ``γ^{Δt_i}`` (semi-MDP).
    next_inputs : array_like of shape (M, p)
        Candidate rows of all next decisions, concatenated in transition order.
    next_offsets : array_like of int, shape (N + 1,)
        CSR offsets: the next decision of transition ``i`` has rows
        ``next_inputs[next_offsets[i]:next_offsets[i + 1]]``; ``next_offsets[0] = 0``,
        non-decreasing, ``next_offsets[N] = M``. An empty range makes ``y_i = r_i``.
    iterations : int
        Number K of target/fit rounds (≥ 1).
    terminal : array_like of bool, shape (N,), optional
        Transitions whose target is ``r_i`` whatever their next rows (the end of an episode).

    Returns
    -------
    FittedQResult
        The last targets and per-iteration diagnostics.

    Raises
    ------
    ConfigError
        ``iterations`` < 1.
    FitError
        Inconsistent shapes or offsets, non-finite rewards, or discounts outside [0, 1].

    Notes
    -----
    Cost per iteration: one ``predict`` on the ``M`` next rows, one ``fit`` on the ``N`` rows and
    one ``predict`` on them; the ragged maximum is one :func:`numpy.maximum.reduceat`. With the
    ESN's ridge readout each iteration is a few small matrix products and a ``p × p`` solve.

    Examples
    --------
    Two transitions on one-hot rows; the second ends the episode (no next candidate):

    >>> import numpy as np
    >>> from gridtrace.sim.rl import ESNQ, fitted_q_iteration
    >>> esn = ESNQ(n_state=2, n_action=1, rng=0)
    >>> s, a = np.array([1.0, 0.0]), np.array([[0.5], [-0.5]])
    >>> rows = esn.candidate_inputs(s, a)
    >>> esn.commit(s, a[0])
    >>> next_rows = esn.candidate_inputs(s, a)
    >>> result = fitted_q_iteration(
    ...     esn, inputs=np.vstack([rows[0], next_rows[1]]), rewards=[0.0, 1.0],
    ...     discounts=[0.8, 0.8], next_inputs=next_rows, next_offsets=[0, 2, 2], iterations=3)
    >>> result.iterations, result.targets.shape
    (3, (2,))
    """
    iterations = _positive_int("iterations", iterations)
    p = model.n_inputs
    x = np.asarray(inputs, dtype=np.float64)
    r = np.asarray(rewards, dtype=np.float64)
    g = np.asarray(discounts, dtype=np.float64)
    xn = np.asarray(next_inputs, dtype=np.float64)
    off = np.asarray(next_offsets)
    if x.ndim != 2 or x.shape[1] != p:
        raise FitError(f"inputs must have shape (N, {p}), got {x.shape}")
    n = x.shape[0]
    if n == 0:
        raise FitError("no transitions")
    if r.shape != (n,) or g.shape != (n,):
        raise FitError(f"rewards and discounts must have shape ({n},), got {r.shape}, {g.shape}")
    if xn.ndim != 2 or xn.shape[1] != p:
        raise FitError(f"next_inputs must have shape (M, {p}), got {xn.shape}")
    if off.shape != (n + 1,) or not np.issubdtype(off.dtype, np.integer):
        raise FitError(f"next_offsets must be integers of shape ({n + 1},), got {off.shape}")
    if off[0] != 0 or off[-1] != xn.shape[0] or np.any(np.diff(off) < 0):
        raise FitError(
            f"next_offsets must start at 0, not decrease and end at len(next_inputs) = "
            f"{xn.shape[0]}"
        )
    if not np.isfinite(r).all():
        raise FitError("rewards must be finite")
    if not (np.isfinite(g).all() and (g >= 0).all() and (g <= 1).all()):
        raise FitError("discounts must be in [0, 1]")
    has_next = off[1:] > off[:-1]
    if terminal is not None:
        term = np.asarray(terminal)
        if term.shape != (n,) or term.dtype != np.bool_:
            raise FitError(f"terminal must be booleans of shape ({n},), got {term.shape}")
        has_next &= ~term
    # drop the next rows of terminal transitions so that they are never predicted
    keep_rows = np.repeat(has_next, np.diff(off))
    if not keep_rows.all():
        xn = xn[keep_rows]
    lengths = np.diff(off)[has_next]
    starts = (np.cumsum(lengths) - lengths).astype(np.intp)

    q_prev = np.asarray(model.predict(x), dtype=np.float64)
    y_prev = q_prev
    best = _next_max(model, xn, starts, has_next, n)
    q_change: list[float] = []
    target_change: list[float] = []
    fit_rmse: list[float] = []
    bellman_rmse: list[float] = []
    y = r
    for k in range(1, iterations + 1):
        y = r + g * best
        model.fit(x, y)
        q = np.asarray(model.predict(x), dtype=np.float64)
        best = _next_max(model, xn, starts, has_next, n)
        q_change.append(float(np.mean(np.abs(q - q_prev))))
        target_change.append(float(np.mean(np.abs(y - y_prev))))
        fit_rmse.append(math.sqrt(float(np.mean((q - y) ** 2))))
        bellman_rmse.append(math.sqrt(float(np.mean((q - r - g * best) ** 2))))
        logger.debug(
            "fitted-Q iteration %d/%d: mean |ΔQ| %.3g, fit RMSE %.3g, Bellman RMSE %.3g",
            k,
            iterations,
            q_change[-1],
            fit_rmse[-1],
            bellman_rmse[-1],
        )
        q_prev, y_prev = q, y
    return FittedQResult(
        targets=y,
        q_change=tuple(q_change),
        target_change=tuple(target_change),
        fit_rmse=tuple(fit_rmse),
        bellman_rmse=tuple(bellman_rmse),
    )
