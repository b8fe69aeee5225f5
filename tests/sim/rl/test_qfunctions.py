from __future__ import annotations

import numpy as np
import pytest

from gridtrace.errors import ConfigError, FitError
from gridtrace.sim.rl._qfunctions import ESNQ, MLPQ, QFunction

N_STATE, N_ACTION = 9, 6


def _decision(rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray]:
    return rng.normal(size=N_STATE), rng.normal(size=(k, N_ACTION))


# ----------------------------------------------------------------------------------------- MLP


def _mlp_reference(model: MLPQ, x: np.ndarray) -> np.ndarray:
    """Q(x) = w2 · tanh(W1ᵀ x + b1) + b2, row by row, written out."""
    out = []
    for row in x:
        hidden = [
            np.tanh(
                sum(row[i] * model.hidden_weights_[i, u] for i in range(len(row)))
                + model.hidden_bias_[u]
            )
            for u in range(model.hidden)
        ]
        out.append(
            sum(h * w for h, w in zip(hidden, model.output_weights_, strict=True))
            + model.output_bias_[0]
        )
    return np.array(out)


def test_mlp_implements_the_protocol() -> None:
    model = MLPQ(N_STATE, N_ACTION, rng=0)
    assert isinstance(model, QFunction)
    assert (model.n_state, model.n_action, model.n_inputs) == (9, 6, 15)
    assert model.hidden_weights_.shape == (15, 16)
    assert model.hidden_bias_.shape == model.output_weights_.shape == (16,)


@pytest.mark.parametrize("k", [1, 7, 100])
def test_mlp_batched_q_equals_predict_of_the_rows_and_the_formula(k: int) -> None:
    model = MLPQ(N_STATE, N_ACTION, hidden=12, rng=1)
    rng = np.random.default_rng(2)
    model.hidden_bias_[...] = rng.normal(size=12)
    model.output_bias_[...] = 0.7
    s, a = _decision(rng, k)
    rows = model.candidate_inputs(s, a)
    np.testing.assert_array_equal(rows, np.hstack([np.tile(s, (k, 1)), a]))
    q = model.q_candidates(s, a)
    assert q.shape == (k,)
    np.testing.assert_allclose(q, model.predict(rows), rtol=0, atol=1e-12)
    np.testing.assert_allclose(q, _mlp_reference(model, rows), rtol=0, atol=1e-12)
    model.commit(s, a[0])  # no recurrent state: nothing changes
    model.reset_state()
    np.testing.assert_array_equal(model.q_candidates(s, a), q)


def test_mlp_glorot_init_and_same_seed_same_model() -> None:
    a, b = MLPQ(N_STATE, N_ACTION, rng=5), MLPQ(N_STATE, N_ACTION, rng=5)
    c = MLPQ(N_STATE, N_ACTION, rng=6)
    np.testing.assert_array_equal(a.hidden_weights_, b.hidden_weights_)
    assert not np.array_equal(a.hidden_weights_, c.hidden_weights_)
    limit1, limit2 = np.sqrt(6 / (15 + 16)), np.sqrt(6 / (16 + 1))
    assert np.abs(a.hidden_weights_).max() <= limit1
    assert np.abs(a.hidden_weights_).max() > 0.8 * limit1  # drawn over the whole range
    assert np.abs(a.output_weights_).max() <= limit2
    assert not a.hidden_bias_.any()
    assert a.output_bias_[0] == 0.0
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(300, 15)), rng.normal(size=300)
    a.fit(x, y)
    b.fit(x, y)
    np.testing.assert_array_equal(a.predict(x), b.predict(x))


def _half_mse_l2(model: MLPQ, x: np.ndarray, y: np.ndarray, theta: np.ndarray) -> float:
    w1, b1, w2, b2 = model._views(theta)
    q = np.tanh(x @ w1 + b1) @ w2 + b2[0]
    return 0.5 * np.mean((q - y) ** 2) + 0.5 * model.l2 * (np.sum(w1**2) + np.sum(w2**2))


def test_mlp_first_adam_step_follows_the_numerical_gradient() -> None:
    # One epoch, one batch: Adam's first step is −lr · g / (|g| + ε) ≈ −lr · sign(g) for every
    # parameter, so the step's signs must be those of the finite-difference gradient of
    # L = ½ mean (Q − y)² + ½ l2 (‖W1‖² + ‖w2‖²).
    model = MLPQ(3, 2, hidden=6, rng=3, epochs=1, batch_size=1000, learning_rate=1e-3, l2=0.05)
    rng = np.random.default_rng(4)
    model.hidden_bias_[...] = rng.normal(scale=0.5, size=6)
    x = rng.normal(size=(40, 5))
    y = np.sin(x[:, 0]) + x[:, 3]
    before = model._theta.copy()
    model.fit(x, y)
    step = model._theta - before
    eps = 1e-6
    grad = np.empty_like(before)
    for i in range(before.size):
        up, down = before.copy(), before.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (_half_mse_l2(model, x, y, up) - _half_mse_l2(model, x, y, down)) / (2 * eps)
    clear = np.abs(grad) > 1e-5
    assert clear.sum() > 0.9 * before.size
    np.testing.assert_array_equal(np.sign(step[clear]), -np.sign(grad[clear]))
    np.testing.assert_allclose(np.abs(step[clear]), 1e-3, rtol=1e-2)


def test_mlp_repeated_fits_learn_a_smooth_function() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(2000, 15))
    y = np.sin(x[:, 0]) + 0.5 * x[:, 1] * x[:, 2] + 0.3 * x[:, 3]
    model = MLPQ(N_STATE, N_ACTION, rng=8)
    mse = [float(np.mean((model.predict(x) - y) ** 2))]
    # 64 Adam epochs in all, as 32 warm-started fits of the default 2 epochs: repeated refits
    # continue the optimisation (the agent's case), whatever the epochs of one fit
    for _ in range(64 // model.epochs):
        model.fit(x, y)
        mse.append(float(np.mean((model.predict(x) - y) ** 2)))
    assert model.n_fits_ == 64 // model.epochs
    assert mse[-1] < 0.05 * y.var()
    assert mse[-1] < mse[1] < mse[0]
    held_out = rng.normal(size=(500, 15))
    y_out = np.sin(held_out[:, 0]) + 0.5 * held_out[:, 1] * held_out[:, 2] + 0.3 * held_out[:, 3]
    assert np.mean((model.predict(held_out) - y_out) ** 2) < 0.1 * y_out.var()


def test_mlp_sample_weights() -> None:
    rng = np.random.default_rng(9)
    x = rng.normal(size=(200, 15))
    ones = MLPQ(N_STATE, N_ACTION, rng=10).fit(x, x[:, 0], np.ones(200))
    plain = MLPQ(N_STATE, N_ACTION, rng=10).fit(x, x[:, 0])
    np.testing.assert_array_equal(ones.predict(x), plain.predict(x))
    # the same rows twice with conflicting targets: the weighted half wins
    xx = np.vstack([x, x])
    yy = np.r_[np.ones(200), -np.ones(200)]
    w = np.r_[np.ones(200), np.zeros(200)]
    model = MLPQ(N_STATE, N_ACTION, rng=11)
    for _ in range(10):
        model.fit(xx, yy, w)
    assert np.mean(model.predict(x)) > 0.9


def test_mlp_rejects_nonsense() -> None:
    for bad in (
        {"hidden": 0},
        {"epochs": 0},
        {"learning_rate": 0.0},
        {"l2": -1.0},
        {"batch_size": 0},
        {"hidden": 2.5},
        {"hidden": True},
    ):
        with pytest.raises(ConfigError):
            MLPQ(N_STATE, N_ACTION, rng=0, **bad)  # type: ignore[arg-type]
    MLPQ(N_STATE, N_ACTION, hidden=64, rng=0)  # outside 10–20 is allowed
    model = MLPQ(N_STATE, N_ACTION, rng=0)
    with pytest.raises(ConfigError, match="state"):
        model.q_candidates(np.zeros(3), np.zeros((2, N_ACTION)))
    with pytest.raises(ConfigError, match="actions"):
        model.q_candidates(np.zeros(N_STATE), np.zeros(N_ACTION))
    with pytest.raises(ConfigError, match="inputs"):
        model.predict(np.zeros((4, 3)))
    with pytest.raises(FitError, match="finite"):
        model.fit(np.zeros((4, 15)), np.array([0.0, np.nan, 1.0, 2.0]))
    with pytest.raises(FitError, match="sample_weight"):
        model.fit(np.zeros((4, 15)), np.zeros(4), np.zeros(4))
    with pytest.raises(FitError, match="no training rows"):
        model.fit(np.zeros((0, 15)), np.zeros(0))


def test_mlp_divergence_is_an_error_and_leaves_the_model_unchanged() -> None:
    model = MLPQ(N_STATE, N_ACTION, rng=0, learning_rate=1e307)
    x = np.random.default_rng(1).normal(size=(50, 15))
    before = model.predict(x)
    with pytest.raises(FitError, match="non-finite"):  # and no RuntimeWarning on the way
        model.fit(x, np.ones(50))
    np.testing.assert_array_equal(model.predict(x), before)
    assert model.n_fits_ == 0


# ----------------------------------------------------------------------------------------- ESN


def _esn_step(model: ESNQ, h: np.ndarray, s: np.ndarray, a: np.ndarray) -> np.ndarray:
    """One full reservoir step, textbook form: (1 − α) h + α σ(W_in [s; a] + W h + b)."""
    z = model.input_weights @ np.concatenate([s, a]) + model.reservoir @ h + model.bias
    return (1 - model.leak_rate) * h + model.leak_rate / (1 + np.exp(-z))


def test_esn_implements_the_protocol() -> None:
    model = ESNQ(N_STATE, N_ACTION, rng=0)
    assert isinstance(model, QFunction)
    assert (model.n_state, model.n_action, model.units, model.n_out) == (9, 6, 100, 15)
    assert model.n_inputs == 16
    assert model.input_weights.shape == (100, 15)
    np.testing.assert_array_equal(model.reservoir_state, np.full(100, 0.5))
    assert not model.readout_.any()  # Q ≡ 0 before the first fit


def test_esn_batched_evaluation_equals_one_by_one_along_a_decision_sequence() -> None:
    model = ESNQ(N_STATE, N_ACTION, rng=1)
    rng = np.random.default_rng(2)
    model.readout_[...] = rng.normal(size=model.n_inputs)
    h = np.full(100, 0.5)
    for step, k in enumerate([1, 5, 100, 3, 37, 1, 100, 12]):
        s, a = _decision(rng, k)
        q = model.q_candidates(s, a)
        rows = model.candidate_inputs(s, a)
        one_by_one = np.array(
            [
                np.r_[_esn_step(model, h, s, a[j])[model.output_units], 1.0] @ model.readout_
                for j in range(k)
            ]
        )
        np.testing.assert_allclose(q, one_by_one, rtol=0, atol=1e-12)
        np.testing.assert_allclose(q, model.predict(rows), rtol=0, atol=1e-12)
        for j in range(k):
            np.testing.assert_allclose(
                rows[j],
                np.r_[_esn_step(model, h, s, a[j])[model.output_units], 1.0],
                rtol=0,
                atol=1e-12,
            )
        chosen = step % k
        model.commit(s, a[chosen])
        h = _esn_step(model, h, s, a[chosen])
        np.testing.assert_allclose(model.reservoir_state, h, rtol=0, atol=1e-12)
        # the stored row of the chosen candidate is the committed state's output part
        np.testing.assert_allclose(rows[chosen, :-1], h[model.output_units], rtol=0, atol=1e-12)
    assert np.ptp(h) > 0.1  # the state did move away from ½


@pytest.mark.parametrize("radius", [0.5, 0.9, 1.2])
def test_esn_spectral_radius_as_asked(radius: float) -> None:
    model = ESNQ(N_STATE, N_ACTION, spectral_radius=radius, rng=3)
    assert np.max(np.abs(np.linalg.eigvals(model.reservoir))) == pytest.approx(radius, rel=1e-10)


@pytest.mark.parametrize(
    ("units", "connectivity", "output_connectivity", "nonzero", "n_out"),
    [(100, 0.10, 0.15, 1000, 15), (50, 0.2, 0.3, 500, 15), (40, 0.05, 0.5, 80, 20)],
)
def test_esn_connectivity_as_asked(
    units: int, connectivity: float, output_connectivity: float, nonzero: int, n_out: int
) -> None:
    model = ESNQ(
        N_STATE,
        N_ACTION,
        units=units,
        connectivity=connectivity,
        output_connectivity=output_connectivity,
        rng=4,
    )
    assert np.count_nonzero(model.reservoir) == nonzero
    assert model.n_out == n_out == len(model.output_units) == model.n_inputs - 1
    out = model.output_units
    assert np.all(np.diff(out) > 0)
    assert out[0] >= 0
    assert out[-1] < units
    assert np.count_nonzero(model.input_weights) == model.input_weights.size  # dense
    assert np.abs(model.input_weights).max() <= model.input_scaling


def test_esn_same_seed_same_reservoir_and_outputs() -> None:
    a, b = ESNQ(N_STATE, N_ACTION, rng=5), ESNQ(N_STATE, N_ACTION, rng=np.random.default_rng(5))
    c = ESNQ(N_STATE, N_ACTION, rng=6)
    for name in ("reservoir", "input_weights", "bias", "output_units"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.reservoir, c.reservoir)
    rng = np.random.default_rng(7)
    beta = rng.normal(size=a.n_inputs)
    a.readout_[...] = beta
    b.readout_[...] = beta
    for _ in range(20):
        s, acts = _decision(rng, 10)
        np.testing.assert_array_equal(a.q_candidates(s, acts), b.q_candidates(s, acts))
        a.commit(s, acts[3])
        b.commit(s, acts[3])
    np.testing.assert_array_equal(a.reservoir_state, b.reservoir_state)


def test_esn_reset_state_restarts_the_sequence() -> None:
    model = ESNQ(N_STATE, N_ACTION, rng=8)
    rng = np.random.default_rng(9)
    model.readout_[...] = rng.normal(size=model.n_inputs)
    s, acts = _decision(rng, 4)
    first = model.q_candidates(s, acts)
    np.testing.assert_array_equal(model.q_candidates(s, acts), first)  # evaluating is pure
    for _ in range(5):
        model.commit(s, acts[0])
    assert not np.allclose(model.q_candidates(s, acts), first)
    model.reset_state()
    np.testing.assert_array_equal(model.q_candidates(s, acts), first)


def test_esn_half_start_has_shorter_transient() -> None:
    # Distance to a long-running (burnt-in) state on the same inputs, starting at 0 or at ½.
    def steps_to_forget(model: ESNQ, h0: float, inputs: np.ndarray, ref: list[np.ndarray]) -> int:
        h = np.full(model.units, h0)
        for t, u in enumerate(inputs):
            h = _esn_step(model, h, u[:N_STATE], u[N_STATE:])
            if np.max(np.abs(h - ref[t])) < 1e-3:
                return t + 1
        raise AssertionError("never forgot its start")

    for seed in range(5):
        model = ESNQ(N_STATE, N_ACTION, rng=seed)
        rng = np.random.default_rng(100 + seed)
        h = np.full(model.units, 0.5)
        for u in rng.normal(size=(300, N_STATE + N_ACTION)):
            h = _esn_step(model, h, u[:N_STATE], u[N_STATE:])
        inputs = rng.normal(size=(100, N_STATE + N_ACTION))
        ref = []
        for u in inputs:
            h = _esn_step(model, h, u[:N_STATE], u[N_STATE:])
            ref.append(h)
        assert steps_to_forget(model, 0.5, inputs, ref) < steps_to_forget(model, 0.0, inputs, ref)


def _ridge_reference(x: np.ndarray, y: np.ndarray, lam: float, w: np.ndarray) -> np.ndarray:
    """argmin Σ w (y − xβ)² + λ‖β[:-1]‖² as a least-squares problem on augmented rows."""
    p = x.shape[1]
    penalty = np.sqrt(lam) * np.eye(p)[:-1]
    big = np.vstack([x * np.sqrt(w)[:, None], penalty])
    return np.linalg.lstsq(big, np.r_[y * np.sqrt(w), np.zeros(p - 1)], rcond=None)[0]


def _esn_rows(model: ESNQ, rng: np.random.Generator, n: int) -> np.ndarray:
    rows = []
    for _ in range(n):
        s, a = _decision(rng, 3)
        rows.append(model.candidate_inputs(s, a)[1])
        model.commit(s, a[1])
    return np.array(rows)


@pytest.mark.parametrize("ridge", [1e-3, 0.5, 0.0])
def test_esn_ridge_readout_closed_form(ridge: float) -> None:
    model = ESNQ(N_STATE, N_ACTION, ridge=ridge, rng=10)
    rng = np.random.default_rng(11)
    x = _esn_rows(model, rng, 200)
    y = x[:, :-1] @ rng.normal(size=model.n_out) + 0.3 + rng.normal(scale=0.1, size=200)
    w = rng.uniform(0.0, 2.0, size=200)
    np.testing.assert_allclose(
        model.fit(x, y).readout_, _ridge_reference(x, y, ridge, np.ones(200)), atol=1e-8
    )
    np.testing.assert_allclose(
        model.fit(x, y, w).readout_, _ridge_reference(x, y, ridge, w), atol=1e-8
    )
    beta = model.fit(x, y).readout_.copy()
    shifted = model.fit(x, y + 5.0).readout_  # the bias is not penalised: only it moves
    np.testing.assert_allclose(shifted[:-1], beta[:-1], atol=1e-8)
    assert shifted[-1] == pytest.approx(beta[-1] + 5.0, abs=1e-8)
    assert model.n_fits_ == 4


def test_esn_is_finite_and_silent_on_huge_inputs() -> None:
    model = ESNQ(N_STATE, N_ACTION, input_scaling=50.0, rng=12)
    model.readout_[...] = 1.0
    s, a = np.full(N_STATE, 1e6), np.full((3, N_ACTION), -1e6)
    q = model.q_candidates(s, a)  # pytest turns an overflow RuntimeWarning into an error
    model.commit(s, a[0])
    assert np.isfinite(q).all()
    assert np.isfinite(model.reservoir_state).all()


def test_esn_weights_are_read_only() -> None:
    model = ESNQ(N_STATE, N_ACTION, rng=13)
    for name in ("reservoir", "input_weights", "bias", "output_units"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(model, name)[0] = 1


def test_esn_rejects_nonsense() -> None:
    for bad in (
        {"units": 0},
        {"connectivity": 0.0},
        {"connectivity": 1.5},
        {"output_connectivity": 0.0},
        {"leak_rate": 0.0},
        {"spectral_radius": -1.0},
        {"ridge": -1.0},
        {"ridge": float("nan")},
    ):
        with pytest.raises(ConfigError):
            ESNQ(N_STATE, N_ACTION, rng=0, **bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="selects no unit"):
        ESNQ(N_STATE, N_ACTION, units=3, output_connectivity=0.1, rng=0)
    model = ESNQ(N_STATE, N_ACTION, rng=0)
    with pytest.raises(ConfigError, match="action"):
        model.commit(np.zeros(N_STATE), np.zeros((1, N_ACTION)))
    with pytest.raises(ConfigError, match="inputs"):
        model.fit(np.zeros((5, 15)), np.zeros(5))


# --- the jitted kernels against their numpy references ---------------------------------------


def test_mlp_fit_kernel_matches_numpy_reference() -> None:
    gen = np.random.default_rng(4)
    x = gen.normal(size=(700, 9))
    y = np.sin(x[:, 0]) + 0.1 * x[:, 1]
    w = gen.uniform(0.5, 2.0, size=700)
    a = MLPQ(5, 4, hidden=8, rng=3, epochs=3, batch_size=64)
    b = MLPQ(5, 4, hidden=8, rng=3, epochs=3, batch_size=64)
    a.fit(x, y, w)
    b._fit_reference(x, y, w)
    np.testing.assert_allclose(a._theta, b._theta, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.predict(x), b.predict(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["mlp", "esn"])
@pytest.mark.parametrize("chosen", [-1, 2])
def test_elect_matches_the_protocol_calls(kind: str, chosen: int) -> None:
    gen = np.random.default_rng(5)
    make = (lambda: MLPQ(6, 5, hidden=12, rng=1)) if kind == "mlp" else (lambda: ESNQ(6, 5, rng=1))
    fast, slow = make(), make()
    if kind == "esn":
        beta = gen.normal(size=fast.n_inputs)
        fast.readout_[...] = beta
        slow.readout_[...] = beta
    for _ in range(4):  # a few decisions, so the ESN's state moves
        s = gen.normal(size=6)
        actions = gen.normal(size=(7, 5))
        row = np.empty(fast.n_inputs)
        i, q = fast.elect(s, actions, chosen, row)
        q_all = slow.q_candidates(s, actions)
        j = int(np.argmax(q_all)) if chosen < 0 else chosen
        assert i == j
        assert q == pytest.approx(q_all[j], rel=1e-10, abs=1e-12)
        np.testing.assert_allclose(
            row, slow.candidate_inputs(s, actions)[j], rtol=1e-10, atol=1e-13
        )
        slow.commit(s, actions[j])
    if kind == "esn":
        np.testing.assert_allclose(
            fast.reservoir_state, slow.reservoir_state, rtol=1e-10, atol=1e-13
        )
