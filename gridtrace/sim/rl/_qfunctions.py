"""Q-function approximators of the RL supervisor: a small MLP and an Echo State Network.

Both implement :class:`QFunction`, the interface the SARSA agent and
:func:`~gridtrace.sim.rl._fitted_q.fitted_q_iteration` are written against. A decision offers
``k`` candidates (one waiting job each, or one pool size); the state ``s`` (length ``n_state``) is
shared and each candidate has its own action vector ``a_j`` (length ``n_action``). The
approximator turns each candidate into a *training input row* ``x_j`` of length ``n_inputs``
and scores it with ``Q(x_j)``; the agent stores the chosen row with its reward and later refits
``Q`` on rows and targets in one batch (:meth:`QFunction.fit`).

:class:`MLPQ`
    Q(s, a) = w₂ · tanh(W₁ᵀ [s; a] + b₁) + b₂; the row is ``[s; a]`` itself. No recurrent state.
:class:`ESNQ`
    A leaky reservoir of logistic units carries a state ``h`` along the decision sequence; the row
    of a candidate is the part of the reservoir state it would lead to that the readout sees,
    ``[h_j'[output units]; 1]``, and Q is linear in it (ridge readout).

All arrays are float64. Inputs are used as given: scaling the state and action features to O(1)
is the MDP's job (tanh and logistic units saturate on raw seconds).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Protocol, Self, runtime_checkable

import numpy as np
import numpy.typing as npt

from gridtrace.errors import ConfigError, FitError

__all__ = ["ESNQ", "MLPQ", "QFunction"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
IntArray64 = npt.NDArray[np.int64]
RngLike = int | np.random.SeedSequence | np.random.Generator

# Adam's moment decay rates and denominator guard (Kingma & Ba 2015, their defaults).
_ADAM_BETA1 = 0.9
_ADAM_BETA2 = 0.999
_ADAM_EPS = 1e-8


@runtime_checkable
class QFunction(Protocol):
    """An action-value approximator scoring the candidates of one decision in a batch.

    A decision has a state vector ``s`` of length ``n_state`` and ``k`` candidate action vectors
    stacked in ``actions`` (``k × n_action``). The approximator maps each candidate to a training
    input row of length ``n_inputs`` and Q is a function of that row only, so that a refit needs
    nothing but stored rows and targets.

    The agent's loop is: ``q = q_candidates(s, A)``; pick ``j``; keep
    ``candidate_inputs(s, A)[j]`` as the row of the transition; ``commit(s, A[j])``. Recurrent
    approximators advance their state in ``commit`` only, so ``candidate_inputs`` and
    ``q_candidates`` may be called any number of times before it.

    Attributes
    ----------
    n_state : int
        Length of the state vector ``s``.
    n_action : int
        Length of one candidate's action vector ``a``.
    n_inputs : int
        Length ``p`` of one training input row.
    """

    n_state: int
    n_action: int
    n_inputs: int

    def reset_state(self) -> None:
        """Put the recurrent state back to its start (no-op without recurrent state)."""
        ...

    def candidate_inputs(self, state: FloatArray, actions: FloatArray) -> FloatArray:
        """Return the training input row of every candidate, from the current recurrent state.

        Parameters
        ----------
        state : ndarray of shape (n_state,)
        actions : ndarray of shape (k, n_action)

        Returns
        -------
        ndarray of shape (k, n_inputs)
        """
        ...

    def q_candidates(self, state: FloatArray, actions: FloatArray) -> FloatArray:
        """Return Q of every candidate in one batched step (``predict(candidate_inputs(...))``).

        Parameters
        ----------
        state : ndarray of shape (n_state,)
        actions : ndarray of shape (k, n_action)

        Returns
        -------
        ndarray of shape (k,)
        """
        ...

    def commit(self, state: FloatArray, action: FloatArray) -> None:
        """Record that the candidate with action vector ``action`` was chosen in ``state``."""
        ...

    def predict(self, inputs: FloatArray) -> FloatArray:
        """Return Q of each training input row (``inputs`` of shape (N, n_inputs)) as (N,)."""
        ...

    def fit(
        self, inputs: FloatArray, targets: FloatArray, sample_weight: FloatArray | None = None
    ) -> Self:
        """Refit Q on ``inputs`` (N, n_inputs) and ``targets`` (N,) in one batch; return self."""
        ...


# --------------------------------------------------------------------------------------------
# validation helpers


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def _real(name: str, value: object, *, low: float, high: float = math.inf) -> float:
    """Return ``value`` as a float in [low, high]; ConfigError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ConfigError(f"{name} must be a real number, got {value!r}")
    x = float(value)
    if not (math.isfinite(x) and low <= x <= high):
        raise ConfigError(f"{name} must be finite and in [{low}, {high}], got {value!r}")
    return x


def _open_fraction(name: str, value: object) -> float:
    x = _real(name, value, low=0.0, high=1.0)
    if x == 0.0:
        raise ConfigError(f"{name} must be in (0, 1], got {value!r}")
    return x


def _state(state: npt.ArrayLike, n_state: int) -> FloatArray:
    s = np.asarray(state, dtype=np.float64)
    if s.shape != (n_state,):
        raise ConfigError(f"state must have shape ({n_state},), got {s.shape}")
    return s


def _state_actions(
    state: npt.ArrayLike, actions: npt.ArrayLike, n_state: int, n_action: int
) -> tuple[FloatArray, FloatArray]:
    s = _state(state, n_state)
    a = np.asarray(actions, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != n_action:
        raise ConfigError(f"actions must have shape (k, {n_action}), got {a.shape}")
    return s, a


def _action(action: npt.ArrayLike, n_action: int) -> FloatArray:
    a = np.asarray(action, dtype=np.float64)
    if a.shape != (n_action,):
        raise ConfigError(f"action must have shape ({n_action},), got {a.shape}")
    return a


def _rows(inputs: npt.ArrayLike, n_inputs: int) -> FloatArray:
    x = np.asarray(inputs, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != n_inputs:
        raise ConfigError(f"inputs must have shape (N, {n_inputs}), got {x.shape}")
    return x


def _training_data(
    inputs: npt.ArrayLike,
    targets: npt.ArrayLike,
    sample_weight: npt.ArrayLike | None,
    n_inputs: int,
) -> tuple[FloatArray, FloatArray, FloatArray | None]:
    x = _rows(inputs, n_inputs)
    y = np.asarray(targets, dtype=np.float64)
    if y.shape != (x.shape[0],):
        raise FitError(f"targets must have shape ({x.shape[0]},), got {y.shape}")
    if x.shape[0] == 0:
        raise FitError("no training rows")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise FitError("inputs and targets must be finite")
    if sample_weight is None:
        return x, y, None
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != y.shape:
        raise FitError(f"sample_weight must have shape {y.shape}, got {w.shape}")
    if not (np.isfinite(w).all() and (w >= 0).all() and w.sum() > 0):
        raise FitError("sample_weight must be finite, >= 0 and not all zero")
    return x, y, w


def _sigmoid(x: FloatArray) -> FloatArray:
    """Logistic function 1 / (1 + e^{−x}), written as ½ + ½ tanh(x/2): no overflow for any x."""
    return 0.5 + 0.5 * np.tanh(0.5 * x)


def _readonly(a: FloatArray) -> FloatArray:
    a.setflags(write=False)
    return a


# --------------------------------------------------------------------------------------------
# MLP


class MLPQ:
    r"""Q(s, a) as a one-hidden-layer tanh network on the concatenated input ``x = [s; a]``.

    .. math::

        Q(x) = w_2^\top \tanh(W_1^\top x + b_1) + b_2, \qquad x = [s; a] \in \mathbb{R}^p,
        \; p = n_{state} + n_{action}.

    The weights are drawn at construction (Glorot/Xavier uniform: ``W₁ ~ U(±√(6/(p + H)))``,
    ``w₂ ~ U(±√(6/(H + 1)))``, biases 0) from ``rng``, so Q is usable before the first fit.
    :meth:`fit` warm-starts from the current weights and runs ``epochs`` passes of Adam over
    minibatches of ``batch_size`` rows in an order drawn from the same generator, minimising

    .. math::

        L = \frac{1}{2B} \sum_{i \in \text{batch}} \tilde w_i (Q(x_i) - y_i)^2
            + \frac{\lambda}{2} (\lVert W_1 \rVert_F^2 + \lVert w_2 \rVert^2),

    with ``λ = l2`` and sample weights rescaled to mean 1 over the whole fit
    (``w̃ = w N / Σw``; 1 without weights). Adam's moments and step count start afresh at each
    fit: every refit is a new regression problem (SARSA's targets move between refits), and stale
    moments would steer the first steps towards the previous targets. A fit is a fixed amount of
    work — ``epochs · ⌈N / batch_size⌉`` Adam steps — not a run to convergence; the agent's
    periodic refits continue the optimisation from where the last one stopped.

    Parameters
    ----------
    n_state : int
        Length of the state vector.
    n_action : int
        Length of one candidate's action vector.
    hidden : int, default 16
        Hidden units H (the research uses 10–20).
    rng : int, numpy.random.SeedSequence or numpy.random.Generator
        Source of the initial weights and of every minibatch order. A Generator is used (and
        advanced) as given, so pass a stream of its own (``SeedSequence.spawn``).
    epochs : int, default 2
        Passes over the rows per :meth:`fit`. Two passes (40 Adam steps on the agent's
        5,000-row window) learn as well as eight on PE-1 (BENCHMARKS.md, "RL learning loop":
        evaluation W and F within the seed-to-seed noise) at a quarter of the cost; the agent
        refits every 500 decisions, so the optimisation continues across refits.
    learning_rate : float, default 0.01
        Adam step size.
    l2 : float, default 1e-4
        Weight decay λ on W₁ and w₂ (biases are not penalised).
    batch_size : int, default 256
        Rows per Adam step (the last batch of an epoch may be shorter).

    Attributes
    ----------
    n_inputs : int
        ``n_state + n_action``.
    hidden_weights_ : ndarray of shape (n_inputs, hidden)
        W₁ (stored input-major so that ``x @ W₁`` is a plain row product).
    hidden_bias_ : ndarray of shape (hidden,)
        b₁.
    output_weights_ : ndarray of shape (hidden,)
        w₂.
    output_bias_ : ndarray of shape (1,)
        b₂ (a one-element array so that it can be changed in place).
    n_fits_ : int
        Number of completed :meth:`fit` calls.

    Notes
    -----
    The four weight arrays are views of one parameter vector updated in place by Adam; assigning
    new values must be done in place (``model.hidden_weights_[...] = W``).

    Examples
    --------
    >>> import numpy as np
    >>> from gridtrace.sim.rl import MLPQ
    >>> q = MLPQ(n_state=3, n_action=2, hidden=8, rng=0)
    >>> s, actions = np.array([0.2, -1.0, 0.5]), np.eye(2)
    >>> q.q_candidates(s, actions).shape
    (2,)
    >>> x = np.random.default_rng(1).normal(size=(100, 5))
    >>> q = q.fit(x, np.sin(x[:, 0]))
    >>> q.n_fits_
    1
    """

    def __init__(
        self,
        n_state: int,
        n_action: int,
        *,
        hidden: int = 16,
        rng: RngLike,
        epochs: int = 2,
        learning_rate: float = 0.01,
        l2: float = 1e-4,
        batch_size: int = 256,
    ) -> None:
        self.n_state = _positive_int("n_state", n_state)
        self.n_action = _positive_int("n_action", n_action)
        self.hidden = _positive_int("hidden", hidden)
        self.epochs = _positive_int("epochs", epochs)
        self.learning_rate = _real("learning_rate", learning_rate, low=0.0)
        if self.learning_rate == 0.0:
            raise ConfigError("learning_rate must be > 0")
        self.l2 = _real("l2", l2, low=0.0)
        self.batch_size = _positive_int("batch_size", batch_size)
        self.n_inputs = self.n_state + self.n_action
        self._rng = np.random.default_rng(rng)

        p, h = self.n_inputs, self.hidden
        self._theta = np.zeros(p * h + 2 * h + 1)
        (
            self.hidden_weights_,
            self.hidden_bias_,
            self.output_weights_,
            self.output_bias_,
        ) = self._views(self._theta)
        limit1 = math.sqrt(6.0 / (p + h))
        limit2 = math.sqrt(6.0 / (h + 1))
        self.hidden_weights_[...] = self._rng.uniform(-limit1, limit1, size=(p, h))
        self.output_weights_[...] = self._rng.uniform(-limit2, limit2, size=h)
        self.n_fits_ = 0

    def _views(self, flat: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """Split a parameter-shaped flat vector into (W₁, b₁, w₂, b₂) views."""
        p, h = self.n_inputs, self.hidden
        w1 = flat[: p * h].reshape(p, h)
        b1 = flat[p * h : p * h + h]
        w2 = flat[p * h + h : p * h + 2 * h]
        b2 = flat[p * h + 2 * h :]
        return w1, b1, w2, b2

    def reset_state(self) -> None:
        """Do nothing: the MLP has no recurrent state."""

    def commit(self, state: npt.ArrayLike, action: npt.ArrayLike) -> None:
        """Do nothing: the MLP has no recurrent state (the arguments are only checked)."""
        _state(state, self.n_state)
        _action(action, self.n_action)

    def candidate_inputs(self, state: npt.ArrayLike, actions: npt.ArrayLike) -> FloatArray:
        """Return the rows ``[s; a_j]`` of the candidates.

        Parameters
        ----------
        state : array_like of shape (n_state,)
        actions : array_like of shape (k, n_action)

        Returns
        -------
        ndarray of shape (k, n_state + n_action)
        """
        s, a = _state_actions(state, actions, self.n_state, self.n_action)
        return np.concatenate([np.broadcast_to(s, (a.shape[0], self.n_state)), a], axis=1)

    def q_candidates(self, state: npt.ArrayLike, actions: npt.ArrayLike) -> FloatArray:
        """Return Q of every candidate with one matrix product over the actions.

        W₁ᵀ[s; a_j] = W₁ₛᵀ s + W₁ₐᵀ a_j: the state part is computed once, the action part for the
        ``k`` candidates as one ``(k × n_action) @ (n_action × H)`` product; no ``k × p`` input
        matrix is built.

        Parameters
        ----------
        state : array_like of shape (n_state,)
        actions : array_like of shape (k, n_action)

        Returns
        -------
        ndarray of shape (k,)
        """
        s, a = _state_actions(state, actions, self.n_state, self.n_action)
        w1 = self.hidden_weights_
        z_state = s @ w1[: self.n_state] + self.hidden_bias_
        z = a @ w1[self.n_state :]
        z += z_state
        out: FloatArray = np.tanh(z, out=z) @ self.output_weights_ + self.output_bias_[0]
        return out

    def elect(
        self, state: FloatArray, actions: FloatArray, chosen: int, out: FloatArray
    ) -> tuple[int, float]:
        """One decision of the agent's loop in one jitted call (the agent's fast path).

        Equivalent to ``q = q_candidates(state, actions)``; ``i = argmax(q)`` (or ``chosen``
        when ``chosen >= 0``); ``out[:] = candidate_inputs(state, actions)[i]``;
        ``commit(state, actions[i])``. The arguments are not checked: ``state`` and ``actions``
        must be float64 of shapes (n_state,) and (k ≥ 1, n_action), C-contiguous, ``out`` a
        writable float64 row of length ``n_inputs``.

        Returns
        -------
        (int, float)
            The elected candidate and its Q.
        """
        from gridtrace.sim.rl._jit import mlp_elect

        i, q = mlp_elect(state, actions, chosen, self._theta, self.hidden, out)
        return int(i), float(q)

    def predict(self, inputs: npt.ArrayLike) -> FloatArray:
        """Return Q of each row.

        Parameters
        ----------
        inputs : array_like of shape (N, n_inputs)

        Returns
        -------
        ndarray of shape (N,)
        """
        from gridtrace.sim.rl._jit import mlp_predict

        x = np.ascontiguousarray(_rows(inputs, self.n_inputs))
        out: FloatArray = mlp_predict(x, self._theta, self.hidden)
        return out

    def fit(
        self,
        inputs: npt.ArrayLike,
        targets: npt.ArrayLike,
        sample_weight: npt.ArrayLike | None = None,
    ) -> Self:
        """Continue training on ``inputs`` → ``targets`` for ``epochs`` Adam epochs.

        Parameters
        ----------
        inputs : array_like of shape (N, n_inputs)
        targets : array_like of shape (N,)
        sample_weight : array_like of shape (N,), optional
            Non-negative weights, not all zero; rescaled to mean 1.

        Returns
        -------
        MLPQ
            ``self``.

        Raises
        ------
        FitError
            Empty or non-finite data, invalid weights, or weights that diverged (the model is
            then left as it was before the call).
        """
        from gridtrace.sim.rl._jit import mlp_adam_fit

        x, y, w = _training_data(inputs, targets, sample_weight, self.n_inputs)
        n = x.shape[0]
        weights = np.ones(n) if w is None else w * (n / w.sum())
        orders = np.stack([self._rng.permutation(n) for _ in range(self.epochs)])
        theta = self._theta
        before = theta.copy()
        mlp_adam_fit(
            np.ascontiguousarray(x),
            y,
            weights,
            orders,
            theta,
            self.hidden,
            self.batch_size,
            self.learning_rate,
            self.l2,
        )
        if not np.isfinite(theta).all():
            theta[...] = before  # leave the model as it was
            raise FitError(
                "the MLP weights became non-finite; lower learning_rate or scale the inputs"
            )
        self.n_fits_ += 1
        return self

    def _fit_reference(
        self,
        inputs: npt.ArrayLike,
        targets: npt.ArrayLike,
        sample_weight: npt.ArrayLike | None = None,
    ) -> Self:
        """Run :meth:`fit` in numpy (the jitted kernel's reference: same draws, same steps)."""
        x, y, w = _training_data(inputs, targets, sample_weight, self.n_inputs)
        n = x.shape[0]
        if w is not None:
            w = w * (n / w.sum())
        theta = self._theta
        before = theta.copy()
        grad = np.zeros_like(theta)
        g_w1, g_b1, g_w2, g_b2 = self._views(grad)
        w1, b1, w2, b2 = self._views(theta)
        m = np.zeros_like(theta)
        v = np.zeros_like(theta)
        step_buf = np.empty_like(theta)
        lr, l2, size = self.learning_rate, self.l2, self.batch_size
        # divergence shows as non-finite weights, reported below as a FitError
        with np.errstate(over="ignore", invalid="ignore"):
            t = 0
            for _ in range(self.epochs):
                order = self._rng.permutation(n)
                xs, ys = x[order], y[order]
                ws = None if w is None else w[order]
                for lo in range(0, n, size):
                    xb, yb = xs[lo : lo + size], ys[lo : lo + size]
                    a = np.tanh(xb @ w1 + b1)
                    d = a @ w2
                    d += b2[0] - yb
                    if ws is not None:
                        d *= ws[lo : lo + size]
                    d *= 1.0 / xb.shape[0]  # d = ∂L/∂Q(x_i)
                    np.matmul(a.T, d, out=g_w2)
                    g_b2[0] = d.sum()
                    dz = np.multiply.outer(d, w2)
                    dz *= 1.0 - a * a
                    np.matmul(xb.T, dz, out=g_w1)
                    dz.sum(axis=0, out=g_b1)
                    if l2:
                        g_w1 += l2 * w1
                        g_w2 += l2 * w2
                    t += 1
                    m *= _ADAM_BETA1
                    m += (1.0 - _ADAM_BETA1) * grad
                    v *= _ADAM_BETA2
                    v += (1.0 - _ADAM_BETA2) * (grad * grad)
                    # θ −= lr · m̂ / (√v̂ + ε) with m̂ = m/(1−β₁ᵗ), v̂ = v/(1−β₂ᵗ)
                    np.sqrt(v * (1.0 / (1.0 - _ADAM_BETA2**t)), out=step_buf)
                    step_buf += _ADAM_EPS
                    np.divide(m, step_buf, out=step_buf)
                    step_buf *= lr / (1.0 - _ADAM_BETA1**t)
                    theta -= step_buf
        if not np.isfinite(theta).all():
            theta[...] = before  # leave the model as it was
            raise FitError(
                "the MLP weights became non-finite; lower learning_rate or scale the inputs"
            )
        self.n_fits_ += 1
        return self


# --------------------------------------------------------------------------------------------
# Echo State Network


class ESNQ:
    r"""Q as a linear readout of an Echo State Network driven by the decision sequence.

    The reservoir has ``units`` logistic units with state ``h`` (starts at ``h₀ = ½``, see Notes).
    A candidate with action vector ``a_j``, offered in state ``s``, would move the reservoir to

    .. math::

        h_j' = (1 - \alpha) h + \alpha\, \sigma(W_{in} [s; a_j] + W h + b),
        \qquad \sigma(z) = 1 / (1 + e^{-z}),

    with leak rate ``α``. Only a fixed random subset O of ``n_out = round(output_connectivity ·
    units)`` units feeds the readout ("15 % to the output"), so the training row of the candidate
    is ``x_j = [h_j'[O]; 1]`` (``n_inputs = n_out + 1``) and ``Q = x_j · β``. The reservoir is
    never trained; :meth:`fit` solves for the readout β in closed form (ridge, bias unpenalised):

    .. math::

        \beta = (X^\top D_w X + \lambda\, \mathrm{diag}(1, \dots, 1, 0))^{-1} X^\top D_w y,

    with ``λ = ridge`` and ``D_w`` the diagonal of the sample weights (1 without). The state
    advances only in :meth:`commit`, with the chosen candidate: ``h ← h_j'``. The reservoir state
    thus summarises the decisions taken so far, and a row stored in a transition stays valid
    across refits (it does not depend on β).

    Construction draws, in this order, from ``rng``: the positions of the
    ``round(connectivity · units²)`` non-zero entries of W (without replacement) and their values
    ``U(−1, 1)``; then W is rescaled so that its spectral radius (largest ``|eigenvalue|``, from
    :func:`numpy.linalg.eigvals`) equals ``spectral_radius``; ``W_in ~ input_scaling · U(−1, 1)``
    (dense, ``units × (n_state + n_action)``); ``b ~ input_scaling · U(−1, 1)`` (the bias acts as
    one more input of constant 1); the output units O (sorted, without replacement). The readout
    starts at β = 0 (Q ≡ 0 until the first fit).

    Parameters
    ----------
    n_state : int
        Length of the state vector.
    n_action : int
        Length of one candidate's action vector.
    units : int, default 100
        Reservoir size.
    connectivity : float, default 0.10
        Fraction of non-zero entries of the reservoir matrix W, in (0, 1].
    output_connectivity : float, default 0.15
        Fraction of the units that feed the readout, in (0, 1]; must select at least one unit.
    spectral_radius : float, default 0.9
        Spectral radius W is rescaled to (≥ 0; < 1 is the usual echo-state regime).
    leak_rate : float, default 0.5
        α in (0, 1]; 1 is a non-leaky reservoir.
    input_scaling : float, default 1.0
        Scale of the input weights and of the bias (≥ 0).
    ridge : float, default 1e-3
        Ridge penalty λ on the readout weights (≥ 0; 0 is least squares by ``lstsq``).
    rng : int, numpy.random.SeedSequence or numpy.random.Generator
        Source of the reservoir, input weights, bias and output units (drawn at construction only).

    Attributes
    ----------
    n_inputs : int
        ``n_out + 1``.
    n_out : int
        Number of units that feed the readout.
    reservoir : ndarray of shape (units, units)
        W (read-only).
    input_weights : ndarray of shape (units, n_state + n_action)
        W_in (read-only); its first ``n_state`` columns act on ``s``.
    bias : ndarray of shape (units,)
        b (read-only).
    output_units : ndarray of int, shape (n_out,)
        The sorted indices O of the units that feed the readout (read-only).
    readout_ : ndarray of shape (n_out + 1,)
        β; the last entry is the bias. Set by :meth:`fit`; may be set by hand in place.
    n_fits_ : int
        Number of completed :meth:`fit` calls.

    Notes
    -----
    Start state: a logistic unit's output lies in (0, 1), and ½ = σ(0) is the middle of that range,
    the output of a unit with no net input. Starting there rather than at 0 (the edge of the range,
    which a logistic unit never reaches) shortens the transient after :meth:`reset_state`: with the
    defaults and standard normal inputs, the largest distance to a long-running state on the same
    inputs fell below 1e-3 after 10.5 steps from ½ against 12.3 from 0 (means over 20 seeds, ½
    shorter on all 20; ``test_esn_half_start_has_shorter_transient`` checks 5 seeds).

    Cost: :meth:`q_candidates` needs only the rows O of ``W h``, ``W_in`` and ``b``:
    ``O(n_out · (units + n_state))`` once plus ``O(k · n_out · n_action)`` for the candidates,
    instead of ``O(k · units · (units + n_in))`` for ``k`` full reservoir steps.

    Examples
    --------
    One decision of the agent's loop:

    >>> import numpy as np
    >>> from gridtrace.sim.rl import ESNQ
    >>> esn = ESNQ(n_state=3, n_action=2, rng=0)
    >>> s, actions = np.array([0.2, -1.0, 0.5]), np.eye(2)
    >>> rows = esn.candidate_inputs(s, actions)   # keep rows[j] for the transition
    >>> j = int(np.argmax(esn.q_candidates(s, actions)))
    >>> esn.commit(s, actions[j])
    >>> rows.shape, esn.n_inputs
    ((2, 16), 16)
    """

    def __init__(
        self,
        n_state: int,
        n_action: int,
        *,
        units: int = 100,
        connectivity: float = 0.10,
        output_connectivity: float = 0.15,
        spectral_radius: float = 0.9,
        leak_rate: float = 0.5,
        input_scaling: float = 1.0,
        ridge: float = 1e-3,
        rng: RngLike,
    ) -> None:
        self.n_state = _positive_int("n_state", n_state)
        self.n_action = _positive_int("n_action", n_action)
        self.units = _positive_int("units", units)
        self.connectivity = _open_fraction("connectivity", connectivity)
        self.output_connectivity = _open_fraction("output_connectivity", output_connectivity)
        self.spectral_radius = _real("spectral_radius", spectral_radius, low=0.0)
        self.leak_rate = _open_fraction("leak_rate", leak_rate)
        self.input_scaling = _real("input_scaling", input_scaling, low=0.0)
        self.ridge = _real("ridge", ridge, low=0.0)
        n = self.units
        self.n_out = round(self.output_connectivity * n)
        if self.n_out < 1:
            raise ConfigError(
                f"output_connectivity {output_connectivity} of {n} units selects no unit"
            )
        n_nonzero = round(self.connectivity * n * n)
        if n_nonzero < 1:
            raise ConfigError(f"connectivity {connectivity} of {n}×{n} leaves W without entries")
        gen = np.random.default_rng(rng)

        flat = np.zeros(n * n)
        flat[gen.choice(n * n, size=n_nonzero, replace=False)] = gen.uniform(-1.0, 1.0, n_nonzero)
        w = flat.reshape(n, n)
        radius = float(np.max(np.abs(np.linalg.eigvals(w))))
        if self.spectral_radius > 0.0:
            if radius < 1e-12:
                raise ConfigError(
                    f"the drawn reservoir ({n_nonzero} non-zero entries of {n}×{n}) is nilpotent "
                    "(spectral radius 0) and cannot be rescaled; raise units or connectivity"
                )
            w *= self.spectral_radius / radius
        else:
            w[...] = 0.0
        n_in = self.n_state + self.n_action
        w_in = self.input_scaling * gen.uniform(-1.0, 1.0, size=(n, n_in))
        bias = self.input_scaling * gen.uniform(-1.0, 1.0, size=n)
        out = np.sort(gen.choice(n, size=self.n_out, replace=False)).astype(np.intp)

        self.reservoir = _readonly(w)
        self.input_weights = _readonly(w_in)
        self.bias = _readonly(bias)
        out.setflags(write=False)
        self.output_units: IntArray = out
        self.n_inputs = self.n_out + 1
        self.readout_ = np.zeros(self.n_inputs)
        self.n_fits_ = 0

        # row blocks used on every decision, contiguous
        self._w_state = np.ascontiguousarray(w_in[:, : self.n_state])
        self._w_action = np.ascontiguousarray(w_in[:, self.n_state :])
        self._o_reservoir = np.ascontiguousarray(w[out])
        self._o_state = np.ascontiguousarray(w_in[out, : self.n_state])
        self._o_action_t = np.ascontiguousarray(w_in[out, self.n_state :].T)
        self._o_bias = bias[out].copy()
        self._h = np.full(n, 0.5)
        self._csr: tuple[IntArray64, IntArray64, FloatArray] | None = None  # W, for elect
        self._w_in = self._w_state  # set with _csr

    @property
    def reservoir_state(self) -> FloatArray:
        """The current reservoir state h, shape (units,) (a copy)."""
        return self._h.copy()

    def reset_state(self) -> None:
        """Put the reservoir state back to h₀ = ½ (σ(0)) in every unit."""
        self._h.fill(0.5)

    def _output_activations(self, s: FloatArray, a: FloatArray) -> FloatArray:
        """h_j'[O] for every candidate: the rows O of one leaky step, shape (k, n_out)."""
        h = self._h
        shared = self._o_reservoir @ h
        shared += self._o_state @ s
        shared += self._o_bias
        z = a @ self._o_action_t
        z += shared
        act = _sigmoid(z)
        act *= self.leak_rate
        act += (1.0 - self.leak_rate) * h[self.output_units]
        return act

    def candidate_inputs(self, state: npt.ArrayLike, actions: npt.ArrayLike) -> FloatArray:
        """Return the rows ``[h_j'[O]; 1]`` of the candidates, from the current reservoir state.

        Parameters
        ----------
        state : array_like of shape (n_state,)
        actions : array_like of shape (k, n_action)

        Returns
        -------
        ndarray of shape (k, n_out + 1)
        """
        s, a = _state_actions(state, actions, self.n_state, self.n_action)
        rows = np.empty((a.shape[0], self.n_inputs))
        rows[:, :-1] = self._output_activations(s, a)
        rows[:, -1] = 1.0
        return rows

    def q_candidates(self, state: npt.ArrayLike, actions: npt.ArrayLike) -> FloatArray:
        """Return Q of every candidate in one batched step from the current reservoir state.

        Parameters
        ----------
        state : array_like of shape (n_state,)
        actions : array_like of shape (k, n_action)

        Returns
        -------
        ndarray of shape (k,)
        """
        s, a = _state_actions(state, actions, self.n_state, self.n_action)
        beta = self.readout_
        out: FloatArray = self._output_activations(s, a) @ beta[:-1] + beta[-1]
        return out

    def commit(self, state: npt.ArrayLike, action: npt.ArrayLike) -> None:
        """Advance the reservoir with the chosen candidate: ``h ← h'`` (all units).

        Parameters
        ----------
        state : array_like of shape (n_state,)
        action : array_like of shape (n_action,)
        """
        s = _state(state, self.n_state)
        a = _action(action, self.n_action)
        h = self._h
        z = self.reservoir @ h
        z += self._w_state @ s
        z += self._w_action @ a
        z += self.bias
        h *= 1.0 - self.leak_rate
        h += self.leak_rate * _sigmoid(z)

    def elect(
        self, state: FloatArray, actions: FloatArray, chosen: int, out: FloatArray
    ) -> tuple[int, float]:
        """One decision of the agent's loop in one jitted call (the agent's fast path).

        Equivalent to ``q = q_candidates(state, actions)``; ``i = argmax(q)`` (or ``chosen``
        when ``chosen >= 0``); ``out[:] = candidate_inputs(state, actions)[i]``;
        ``commit(state, actions[i])`` (the reservoir product uses W's non-zero entries only).
        The arguments are not checked: ``state`` and ``actions`` must be float64 of shapes
        (n_state,) and (k ≥ 1, n_action), C-contiguous, ``out`` a writable float64 row of length
        ``n_inputs``.

        Returns
        -------
        (int, float)
            The elected candidate and its Q.
        """
        from gridtrace.sim.rl._jit import esn_elect

        a = self.elect_arrays()
        i, q = esn_elect(
            state, actions, chosen, a[0], a[1], a[2], a[3], a[4], a[5], a[6], self.leak_rate,
            a[7], a[8], a[9], a[10], a[11], out,
        )  # fmt: skip
        return int(i), float(q)

    def elect_arrays(
        self,
    ) -> tuple[
        FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, IntArray,
        FloatArray, IntArray64, IntArray64, FloatArray, FloatArray, FloatArray,
    ]:  # fmt: skip
        """Return the arrays that :func:`gridtrace.sim.rl._jit.esn_elect` reads, in its order.

        ``(h, o_reservoir, o_state, o_action_t, o_bias, output_units, readout, indptr, indices,
        values, w_in, bias)``: the reservoir state ``h`` (advanced in place by each election),
        the output units' slices of the weights, the readout (rewritten in place by
        :meth:`fit`), W in CSR form (built at the first call) and the input weights; the leak
        rate is ``leak_rate``. The jitted episode loop holds them across refits.
        """
        if self._csr is None:
            w = self.reservoir
            nz = w != 0.0
            indptr = np.zeros(self.units + 1, dtype=np.int64)
            indptr[1:] = np.cumsum(nz.sum(axis=1))
            rows, cols = np.nonzero(nz)
            self._csr = (indptr, cols.astype(np.int64), np.ascontiguousarray(w[rows, cols]))
            self._w_in = np.ascontiguousarray(self.input_weights)
        indptr, indices, values = self._csr
        return (
            self._h, self._o_reservoir, self._o_state, self._o_action_t, self._o_bias,
            self.output_units, self.readout_, indptr, indices, values, self._w_in, self.bias,
        )  # fmt: skip

    def predict(self, inputs: npt.ArrayLike) -> FloatArray:
        """Return ``inputs @ readout_``.

        Parameters
        ----------
        inputs : array_like of shape (N, n_out + 1)

        Returns
        -------
        ndarray of shape (N,)
        """
        x = _rows(inputs, self.n_inputs)
        out: FloatArray = x @ self.readout_
        return out

    def fit(
        self,
        inputs: npt.ArrayLike,
        targets: npt.ArrayLike,
        sample_weight: npt.ArrayLike | None = None,
    ) -> Self:
        """Solve the ridge readout in closed form (the bias, last column, is not penalised).

        Parameters
        ----------
        inputs : array_like of shape (N, n_out + 1)
            Rows from :meth:`candidate_inputs`; the last column is the constant 1.
        targets : array_like of shape (N,)
        sample_weight : array_like of shape (N,), optional
            Non-negative weights, not all zero.

        Returns
        -------
        ESNQ
            ``self``.

        Raises
        ------
        FitError
            Empty or non-finite data, or invalid weights.
        """
        x, y, w = _training_data(inputs, targets, sample_weight, self.n_inputs)
        xw = x if w is None else x * w[:, None]
        if self.ridge > 0.0:
            gram = xw.T @ x
            idx = np.arange(self.n_out)
            gram[idx, idx] += self.ridge
            try:
                beta = np.linalg.solve(gram, xw.T @ y)
            except np.linalg.LinAlgError:  # singular only if the bias column is all zero
                beta = np.linalg.lstsq(gram, xw.T @ y, rcond=None)[0]
        else:
            root = np.ones_like(y) if w is None else np.sqrt(w)
            beta = np.linalg.lstsq(x * root[:, None], y * root, rcond=None)[0]
        self.readout_[...] = beta
        self.n_fits_ += 1
        return self


if TYPE_CHECKING:  # mypy checks here that both classes implement the protocol

    def _implements_protocol(mlp: MLPQ, esn: ESNQ) -> tuple[QFunction, QFunction]:
        return mlp, esn
