from __future__ import annotations

import math
from typing import Self

import numpy as np
import pytest

from gridtrace.errors import ConfigError, FitError
from gridtrace.sim.rl._fitted_q import fitted_q_iteration
from gridtrace.sim.rl._qfunctions import ESNQ, QFunction


class TabularQ:
    """Q(x) = x · table on one-hot rows; fit sets each entry to the mean target of its rows.

    A stand-in whose fit is exact and easy to follow by hand; it records every fit's targets.
    """

    def __init__(self, table: list[float]) -> None:
        self.table = np.array(table, dtype=float)
        self.n_state = 1
        self.n_action = 1
        self.n_inputs = len(table)
        self.fitted_targets: list[np.ndarray] = []

    def reset_state(self) -> None:
        pass

    def candidate_inputs(self, state: np.ndarray, actions: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def q_candidates(self, state: np.ndarray, actions: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def commit(self, state: np.ndarray, action: np.ndarray) -> None:
        pass

    def predict(self, inputs: np.ndarray) -> np.ndarray:
        return np.asarray(inputs) @ self.table

    def fit(
        self, inputs: np.ndarray, targets: np.ndarray, sample_weight: np.ndarray | None = None
    ) -> Self:
        self.fitted_targets.append(np.array(targets))
        counts = inputs.sum(axis=0)
        seen = counts > 0
        self.table[seen] = (inputs.T @ targets)[seen] / counts[seen]
        return self


E = np.eye(3)


def _hand_example() -> dict[str, np.ndarray]:
    # transition 0: row e0, r 1, g ½, next candidates {e1, e2}
    # transition 1: row e1, r 0, g ½, next candidates {e2}
    # transition 2: row e2, r 2, (terminal: no next candidate)
    # transition 3: row e1, r 2, g ¼, next candidates {e0, e2}
    return {
        "inputs": E[[0, 1, 2, 1]],
        "rewards": np.array([1.0, 0.0, 2.0, 2.0]),
        "discounts": np.array([0.5, 0.5, 0.5, 0.25]),
        "next_inputs": E[[1, 2, 2, 0, 2]],
        "next_offsets": np.array([0, 2, 3, 3, 5]),
    }


def test_hand_example_targets_after_one_and_two_iterations() -> None:
    model = TabularQ([0.0, 4.0, 0.0])  # Q_0(e0, e1, e2) = 0, 4, 0
    assert isinstance(model, QFunction)
    result = fitted_q_iteration(model, **_hand_example(), iterations=2)
    # y¹ = (1 + ½·max(4, 0), 0 + ½·0, 2, 2 + ¼·max(0, 0)) → Q_1 = (3, mean(0, 2), 2) = (3, 1, 2)
    np.testing.assert_array_equal(model.fitted_targets[0], [3.0, 0.0, 2.0, 2.0])
    # y² = (1 + ½·max(1, 2), 0 + ½·2, 2, 2 + ¼·max(3, 2)) → Q_2 = (2, mean(1, 2.75), 2)
    np.testing.assert_array_equal(model.fitted_targets[1], [2.0, 1.0, 2.0, 2.75])
    np.testing.assert_array_equal(result.targets, [2.0, 1.0, 2.0, 2.75])
    np.testing.assert_array_equal(model.table, [2.0, 1.875, 2.0])
    assert result.iterations == 2
    # Q_0(x) = (0, 4, 0, 4), Q_1(x) = (3, 1, 2, 1)
    assert result.q_change[0] == pytest.approx((3 + 3 + 2 + 3) / 4)
    assert result.target_change[0] == pytest.approx((3 + 4 + 2 + 2) / 4)
    assert result.fit_rmse[0] == pytest.approx(math.sqrt((0 + 1 + 0 + 1) / 4))
    # Bellman targets of Q_1 itself are y² = (2, 1, 2, 2.75)
    assert result.bellman_rmse[0] == pytest.approx(math.sqrt((1 + 0 + 0 + 1.75**2) / 4))
    # Q_2(x) = (2, 1.875, 2, 1.875)
    assert result.q_change[1] == pytest.approx((1 + 0.875 + 0 + 0.875) / 4)
    assert result.target_change[1] == pytest.approx((1 + 1 + 0 + 0.75) / 4)


def test_terminal_flag_and_empty_segments_anywhere() -> None:
    example = _hand_example()
    model = TabularQ([0.0, 4.0, 0.0])
    fitted_q_iteration(
        model, **example, iterations=1, terminal=np.array([True, False, False, False])
    )
    np.testing.assert_array_equal(model.fitted_targets[0], [1.0, 0.0, 2.0, 2.0])
    # empty next ranges first, in the middle and last
    model = TabularQ([5.0, 4.0, 3.0])
    fitted_q_iteration(
        model,
        inputs=E[[0, 1, 2, 1, 0]],
        rewards=np.array([1.0, 1.0, 1.0, 1.0, 1.0]),
        discounts=np.full(5, 0.5),
        next_inputs=E[[2, 1, 1, 2]],
        next_offsets=np.array([0, 0, 2, 2, 4, 4]),
        iterations=1,
    )
    np.testing.assert_array_equal(model.fitted_targets[0], [1.0, 3.0, 1.0, 3.0, 1.0])
    # no next rows at all: the targets are the rewards
    model = TabularQ([5.0, 4.0, 3.0])
    fitted_q_iteration(
        model,
        inputs=E[[0, 1]],
        rewards=np.array([1.0, 2.0]),
        discounts=np.full(2, 0.5),
        next_inputs=np.zeros((0, 3)),
        next_offsets=np.array([0, 0, 0]),
        iterations=2,
    )
    np.testing.assert_array_equal(model.fitted_targets[1], [1.0, 2.0])


def _chain(n: int, discounts_advance: np.ndarray, g_stay: float) -> dict[str, np.ndarray]:
    """Deterministic chain 0 … n−1, actions advance (0) and stay (1), one-hot (state, action).

    Advancing from n − 1 pays 1 and ends the episode; every other move pays 0.
    """
    row = lambda i, a: np.eye(2 * n)[2 * i + a]  # noqa: E731
    inputs, rewards, discounts, nxt, offsets = [], [], [], [], [0]
    for i in range(n):
        for a, g in ((0, discounts_advance[i]), (1, g_stay)):
            inputs.append(row(i, a))
            discounts.append(g)
            if a == 0 and i == n - 1:
                rewards.append(1.0)
            else:
                rewards.append(0.0)
                j = i + 1 if a == 0 else i
                nxt += [row(j, 0), row(j, 1)]
            offsets.append(len(nxt))
    return {
        "inputs": np.array(inputs),
        "rewards": np.array(rewards),
        "discounts": np.array(discounts),
        "next_inputs": np.array(nxt),
        "next_offsets": np.array(offsets),
    }


@pytest.mark.parametrize("semi_mdp", [False, True])
def test_chain_converges_to_the_closed_form_q(semi_mdp: bool) -> None:
    n, gamma = 6, 0.8
    # per decision: g = γ; semi-MDP: advancing from i takes Δt = i + 1, staying Δt = 2
    dt = np.arange(1, n + 1) if semi_mdp else np.ones(n)
    g_adv, g_stay = gamma**dt, gamma ** (2.0 if semi_mdp else 1.0)
    # Q*(i, advance) = Π_{m=i}^{n−2} g_m (the last advance pays 1), Q*(i, stay) = g_stay Q*(i, adv)
    q_adv = np.array([np.prod(g_adv[i : n - 1]) for i in range(n)])
    q_star = np.ravel(np.column_stack([q_adv, g_stay * q_adv]))
    model = TabularQ([0.0] * (2 * n))
    result = fitted_q_iteration(model, **_chain(n, g_adv, g_stay), iterations=n + 2)
    # the value travels one step back per iteration: exact after n + 1, unchanged after
    np.testing.assert_allclose(model.table, q_star, rtol=0, atol=1e-12)
    assert result.q_change[-1] == 0.0
    assert result.bellman_rmse[-1] < 1e-15
    assert result.q_change[0] > 0.0
    model = TabularQ([0.0] * (2 * n))
    fitted_q_iteration(model, **_chain(n, g_adv, g_stay), iterations=n - 1)
    assert not np.allclose(model.table, q_star)  # not yet at n − 1 iterations


def test_esn_targets_follow_its_readout_and_ridge_fit() -> None:
    model = ESNQ(4, 2, rng=0)
    rng = np.random.default_rng(1)
    rows = []
    for _ in range(12):
        s, a = rng.normal(size=4), rng.normal(size=(3, 2))
        rows.append(model.candidate_inputs(s, a))
        model.commit(s, a[0])
    x = np.array([r[0] for r in rows[:-1]])
    nxt = np.vstack(rows[1:])
    offsets = np.arange(0, 3 * 11 + 1, 3)
    offsets[-1] = offsets[-2]  # the last transition is terminal
    nxt = nxt[: offsets[-1]]
    rewards = rng.uniform(size=11)
    discounts = np.full(11, 0.8)
    beta0 = rng.normal(size=model.n_inputs)
    model.readout_[...] = beta0

    def targets(beta: np.ndarray) -> np.ndarray:
        y = rewards.copy()
        for i in range(10):
            y[i] += 0.8 * max(nxt[offsets[i] : offsets[i + 1]] @ beta)
        return y

    def ridge(y: np.ndarray) -> np.ndarray:
        penalty = np.diag(np.r_[np.full(model.n_out, model.ridge), 0.0])
        return np.linalg.solve(x.T @ x + penalty, x.T @ y)

    result = fitted_q_iteration(model, x, rewards, discounts, nxt, offsets, iterations=1)
    np.testing.assert_allclose(result.targets, targets(beta0), rtol=0, atol=1e-12)
    beta1 = ridge(targets(beta0))
    np.testing.assert_allclose(model.readout_, beta1, rtol=1e-9, atol=1e-9)
    model.readout_[...] = beta0
    result = fitted_q_iteration(model, x, rewards, discounts, nxt, offsets, iterations=2)
    np.testing.assert_allclose(result.targets, targets(beta1), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_esn_fitted_q_learns_the_chain_from_random_episodes(seed: int) -> None:
    # Transitions collected along random episodes with the reservoir running; the readout must
    # come close to the closed-form Q* and be greedy-correct at every stored next decision.
    n, gamma = 5, 0.8
    model = ESNQ(n, 2, ridge=1e-6, rng=seed)
    rng = np.random.default_rng(100 + seed)
    actions = np.eye(2)  # advance, stay
    onehot = np.eye(n)
    x, rewards, nxt, offsets, visits = [], [], [], [0], []
    for _ in range(60):
        model.reset_state()
        i = 0
        rows = model.candidate_inputs(onehot[i], actions)
        while True:
            a = int(rng.integers(2))
            x.append(rows[a])
            visits.append((i, a))
            model.commit(onehot[i], actions[a])
            if a == 0 and i == n - 1:
                rewards.append(1.0)
                offsets.append(offsets[-1])
                break
            i += a == 0
            rewards.append(0.0)
            rows = model.candidate_inputs(onehot[i], actions)
            nxt.extend(rows)
            offsets.append(offsets[-1] + 2)
    result = fitted_q_iteration(
        model,
        np.array(x),
        np.array(rewards),
        np.full(len(x), gamma),
        np.array(nxt),
        np.array(offsets),
        iterations=30,
    )
    state, action = np.array(visits).T
    q_star = gamma ** (n - 1 - state + action)
    assert np.sqrt(np.mean((model.predict(np.array(x)) - q_star) ** 2)) < 0.05
    q_next = model.predict(np.array(nxt)).reshape(-1, 2)
    assert np.all(q_next[:, 0] > q_next[:, 1])
    assert result.q_change[-1] < 1e-5
    assert result.bellman_rmse[-1] < 0.05


def test_rejects_inconsistent_transitions() -> None:
    example = _hand_example()
    model = TabularQ([0.0, 0.0, 0.0])
    with pytest.raises(ConfigError, match="iterations"):
        fitted_q_iteration(model, **example, iterations=0)
    bad_offsets = [
        np.array([0, 2, 3, 3]),
        np.array([1, 2, 3, 3, 5]),
        np.array([0, 3, 2, 3, 5]),
        np.array([0, 2, 3, 3, 4]),
        np.array([0.0, 2, 3, 3, 5]),
    ]
    for off in bad_offsets:
        with pytest.raises(FitError, match="next_offsets"):
            fitted_q_iteration(model, **{**example, "next_offsets": off}, iterations=1)
    with pytest.raises(FitError, match="discounts"):
        fitted_q_iteration(
            model, **{**example, "discounts": np.array([0.5, 1.5, 0.5, 0.5])}, iterations=1
        )
    with pytest.raises(FitError, match="rewards"):
        fitted_q_iteration(
            model, **{**example, "rewards": np.array([0.0, np.inf, 0.0, 0.0])}, iterations=1
        )
    with pytest.raises(FitError, match="inputs"):
        fitted_q_iteration(model, **{**example, "inputs": np.eye(4)}, iterations=1)
    with pytest.raises(FitError, match="terminal"):
        fitted_q_iteration(model, **example, iterations=1, terminal=np.array([0, 1, 0, 0]))
    assert model.fitted_targets == []
