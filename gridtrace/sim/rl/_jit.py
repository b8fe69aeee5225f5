"""Jitted kernels of the Q approximators (imported lazily: numba takes ~0.5 s to import).

Each kernel is the loop form of a numpy reference kept in :mod:`gridtrace.sim.rl._qfunctions`
(``MLPQ.q_candidates`` / ``candidate_inputs``, ``MLPQ._fit_numpy``, ``ESNQ.q_candidates`` /
``candidate_inputs`` / ``commit``); ``tests/sim/rl/test_qfunctions.py`` checks them against each
other. They take no Python objects, so one call costs well under a microsecond to dispatch.

MLP parameters are the flat vector θ = [W₁ (p × H, row-major); b₁ (H); w₂ (H); b₂].
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numpy.typing import NDArray

_BETA1 = 0.9
_BETA2 = 0.999
_EPS = 1e-8


@numba.njit(cache=True)
def _tanh(z: float) -> float:
    """tanh(z) = 1 − 2 / (e^{2z} + 1): libm's exp is several times faster than its tanh here.

    Absolute error within a few ulps of 1; ±1 beyond |z| ≈ 19 (no overflow: e^{2z} = inf gives 1).
    """
    return 1.0 - 2.0 / (math.exp(2.0 * z) + 1.0)


@numba.njit(cache=True)
def mlp_elect(
    s: NDArray[np.float64],
    actions: NDArray[np.float64],
    chosen: int,
    theta: NDArray[np.float64],
    hidden: int,
    out: NDArray[np.float64],
) -> tuple[int, float]:
    """Elect the candidate of largest Q (or ``chosen`` if ≥ 0); write its row ``[s; a]``.

    Returns the elected index and its Q (the first largest, as ``numpy.argmax``).
    """
    ns = s.shape[0]
    k, na = actions.shape
    h = hidden
    p = ns + na
    b1 = p * h
    w2 = b1 + h
    b2 = w2 + h
    zs = np.empty(h)
    for u in range(h):
        zs[u] = theta[b1 + u]
    for j in range(ns):
        sj = s[j]
        base = j * h
        for u in range(h):
            zs[u] += sj * theta[base + u]
    z = np.empty(h)
    best = -np.inf
    best_i = 0
    lo = 0 if chosen < 0 else chosen
    hi = k if chosen < 0 else chosen + 1
    for r in range(lo, hi):
        for u in range(h):
            z[u] = zs[u]
        for j in range(na):
            aj = actions[r, j]
            base = (ns + j) * h
            for u in range(h):
                z[u] += aj * theta[base + u]
        q = float(theta[b2])
        for u in range(h):
            q += _tanh(z[u]) * theta[w2 + u]
        if q > best or r == lo:
            best = q
            best_i = r
    for j in range(ns):
        out[j] = s[j]
    for j in range(na):
        out[ns + j] = actions[best_i, j]
    return best_i, best


@numba.njit(cache=True)
def mlp_predict(
    x: NDArray[np.float64], theta: NDArray[np.float64], hidden: int
) -> NDArray[np.float64]:
    """Q of every row of ``x``."""
    n, p = x.shape
    h = hidden
    b1 = p * h
    w2 = b1 + h
    b2 = w2 + h
    out = np.empty(n)
    z = np.empty(h)
    for i in range(n):
        for u in range(h):
            z[u] = theta[b1 + u]
        for j in range(p):
            xj = x[i, j]
            base = j * h
            for u in range(h):
                z[u] += xj * theta[base + u]
        q = float(theta[b2])
        for u in range(h):
            q += _tanh(z[u]) * theta[w2 + u]
        out[i] = q
    return out


@numba.njit(cache=True)
def mlp_adam_fit(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    w: NDArray[np.float64],
    orders: NDArray[np.int64],
    theta: NDArray[np.float64],
    hidden: int,
    batch_size: int,
    lr: float,
    l2: float,
) -> int:
    """Run ``len(orders)`` epochs of minibatch Adam on θ in place; return the steps taken.

    Epoch ``e`` visits the rows in the order ``orders[e]`` in batches of ``batch_size``; the loss
    of a batch is ½ mean(w (Q − y)²) + ½ l2 (‖W₁‖² + ‖w₂‖²), the moments start at zero.
    """
    n, p = x.shape
    h = hidden
    b1 = p * h
    w2 = b1 + h
    b2 = w2 + h
    size = theta.shape[0]
    m = np.zeros(size)
    v = np.zeros(size)
    g = np.empty(size)
    z = np.empty(h)
    a = np.empty(h)
    t = 0
    for e in range(orders.shape[0]):
        for lo in range(0, n, batch_size):
            hi = min(lo + batch_size, n)
            inv = 1.0 / (hi - lo)
            g[:] = 0.0
            for r in range(lo, hi):
                i = orders[e, r]
                for u in range(h):
                    z[u] = theta[b1 + u]
                for j in range(p):
                    xj = x[i, j]
                    base = j * h
                    for u in range(h):
                        z[u] += xj * theta[base + u]
                q = float(theta[b2])
                for u in range(h):
                    a[u] = _tanh(z[u])
                    q += a[u] * theta[w2 + u]
                d = (q - y[i]) * w[i] * inv
                g[b2] += d
                for u in range(h):
                    g[w2 + u] += a[u] * d
                    dz = d * theta[w2 + u] * (1.0 - a[u] * a[u])
                    z[u] = dz
                    g[b1 + u] += dz
                for j in range(p):
                    xj = x[i, j]
                    base = j * h
                    for u in range(h):
                        g[base + u] += xj * z[u]
            if l2 != 0.0:
                for c in range(b1):
                    g[c] += l2 * theta[c]
                for u in range(h):
                    g[w2 + u] += l2 * theta[w2 + u]
            t += 1
            c1 = lr / (1.0 - _BETA1**t)
            c2 = 1.0 / (1.0 - _BETA2**t)
            for c in range(size):
                gc = g[c]
                m[c] = _BETA1 * m[c] + (1.0 - _BETA1) * gc
                v[c] = _BETA2 * v[c] + (1.0 - _BETA2) * (gc * gc)
                theta[c] -= c1 * m[c] / (math.sqrt(v[c] * c2) + _EPS)
    return t


@numba.njit(cache=True)
def _sigmoid(x: float) -> float:
    """1 / (1 + e^{−x}); e^{−x} = inf for very negative x gives 0 (no error)."""
    return 1.0 / (1.0 + math.exp(-x))


@numba.njit(cache=True)
def esn_elect(
    s: NDArray[np.float64],
    actions: NDArray[np.float64],
    chosen: int,
    h: NDArray[np.float64],
    o_reservoir: NDArray[np.float64],
    o_state: NDArray[np.float64],
    o_action_t: NDArray[np.float64],
    o_bias: NDArray[np.float64],
    output_units: NDArray[np.intp],
    readout: NDArray[np.float64],
    leak: float,
    indptr: NDArray[np.int64],
    indices: NDArray[np.int64],
    values: NDArray[np.float64],
    w_in: NDArray[np.float64],
    bias: NDArray[np.float64],
    out: NDArray[np.float64],
) -> tuple[int, float]:
    """Elect the candidate of largest Q (or ``chosen``), write its row, advance ``h`` with it.

    The reservoir W is given in CSR form (``indptr``, ``indices``, ``values``).
    """
    ns = s.shape[0]
    k, na = actions.shape
    n_out = output_units.shape[0]
    shared = np.empty(n_out)
    keep = np.empty(n_out)
    for o in range(n_out):
        acc = o_bias[o]
        for c in range(h.shape[0]):
            acc += o_reservoir[o, c] * h[c]
        for j in range(ns):
            acc += o_state[o, j] * s[j]
        shared[o] = acc
        keep[o] = (1.0 - leak) * h[output_units[o]]
    best = -np.inf
    best_i = 0
    lo = 0 if chosen < 0 else chosen
    hi = k if chosen < 0 else chosen + 1
    for r in range(lo, hi):
        q = float(readout[n_out])
        for o in range(n_out):
            z = shared[o]
            for j in range(na):
                z += actions[r, j] * o_action_t[j, o]
            q += (leak * _sigmoid(z) + keep[o]) * readout[o]
        if q > best or r == lo:
            best = q
            best_i = r
    for o in range(n_out):
        z = shared[o]
        for j in range(na):
            z += actions[best_i, j] * o_action_t[j, o]
        out[o] = leak * _sigmoid(z) + keep[o]
    out[n_out] = 1.0
    # commit: h ← (1 − α) h + α σ(W h + W_in [s; a] + b)
    units = h.shape[0]
    znew = np.empty(units)
    for c in range(units):
        acc = bias[c]
        for q_ in range(indptr[c], indptr[c + 1]):
            acc += values[q_] * h[indices[q_]]
        for j in range(ns):
            acc += w_in[c, j] * s[j]
        for j in range(na):
            acc += w_in[c, ns + j] * actions[best_i, j]
        znew[c] = acc
    for c in range(units):
        h[c] = (1.0 - leak) * h[c] + leak * _sigmoid(znew[c])
    return best_i, best
