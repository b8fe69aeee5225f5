"""Exact MMPP likelihood and EM statistics: a compiled kernel and a readable reference.

An MMPP with k phases has rates λ (Λ = diag λ) and a generator Q of its phase chain; as a MAP,
D0 = Q − Λ and D1 = Λ. Given the phase law α just after a first arrival, the density of the
inter-arrival times t_1 … t_N is ``α · Π_n [exp(D0 t_n) Λ] · 1``.

The E-step of Rydén's EM (Rydén 1996) needs, per interval, the posterior time spent in each phase
and the posterior number of phase jumps, i.e. the integrals
``Z_n = ∫_0^t_n [â e^{D0 s}]_i [e^{D0 (t_n − s)} Λ b̂]_j ds`` with â, b̂ the scaled forward and
backward vectors. Two implementations compute the same quantities:

* :func:`forward_backward` (the fast path, compiled by numba on first use) diagonalises D0 **once
  per EM iteration**: ``D0 = V diag(d) V⁻¹``. Per interval it needs only the k scalar exponentials
  ``e^{d_a t}``; the integral becomes ``Σ_ab (â V)_a (V⁻¹ Λ b̂)_b Φ_ab(t)`` with
  ``Φ_ab(t) = (e^{d_a t} − e^{d_b t}) / (d_a − d_b)``, accumulated over all intervals as one k × k
  matrix W and mapped back once, ``Z = V⁻ᵀ W Vᵀ``. That is O(N k²) per iteration. Exponentials are
  scaled by ``e^{−d_max t}`` (d_max, the Perron root of D0, is real), so long gaps never underflow.
  If D0 has complex eigenvalues (possible for k ≥ 3) the same code runs in complex arithmetic.
* :func:`forward_backward_reference` (numpy + scipy, no JIT) uses Van Loan's block-matrix
  exponential: ``expm([[D0, E_ij], [0, D0]] t)`` holds ``∫_0^t e^{D0 s} E_ij e^{D0 (t − s)} ds`` in
  its upper-right block. These are computed **once per distinct interval length** (data logged at
  1-s resolution repeat the same few thousand lengths), then the forward–backward recursion runs
  in plain Python. It is slow but independent of the eigendecomposition, and the tests check that
  both agree.

Both return the log-likelihood, the expected time per phase T, the expected jump counts M (i ≠ j),
the expected arrival counts A per phase, and the posterior law of the initial phase.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
from numpy.typing import NDArray

from gridtrace._log import library_logger

__all__ = [
    "HAVE_NUMBA",
    "EStep",
    "forward_backward",
    "forward_backward_reference",
    "log_likelihood",
    "log_likelihood_naive",
]

logger = library_logger(__name__)

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
"""Whether the compiled kernel is available (else the same Python loops run uncompiled)."""

F64 = NDArray[np.float64]

# Below this |d_a − d_b| t the difference quotient Φ_ab loses digits: use its Taylor series.
_SERIES_BELOW = 1e-3


@dataclass(frozen=True, slots=True)
class EStep:
    """Posterior statistics of one E-step.

    Attributes
    ----------
    log_likelihood : float
        Log density of the intervals given the initial phase law.
    time_in_phase : ndarray, shape (k,)
        Expected total time spent in each phase (sums to Σ t).
    jumps : ndarray, shape (k, k)
        Expected number of phase jumps i → j (zero diagonal).
    arrivals : ndarray, shape (k,)
        Expected number of arrivals in each phase (sums to N).
    initial : ndarray, shape (k,)
        Posterior law of the phase just after the first (conditioning) arrival.
    first_backward : ndarray, shape (k,)
        The scaled backward vector before the first interval: proportional to the density of all
        the intervals given each phase just after the first arrival (whatever α), normalised to
        sum 1. Its largest entry is the phase an estimated α puts its mass on at the maximum.
    """

    log_likelihood: float
    time_in_phase: F64
    jumps: F64
    arrivals: F64
    initial: F64
    first_backward: F64


# --- the kernel (plain Python until _compile_kernel replaces it by its numba compilation) -------


def _phi(da: Any, db: Any, ea: Any, eb: Any, t: float) -> Any:
    """(e^{da t} − e^{db t}) / (da − db), both exponentials pre-scaled by the same factor."""
    x = (da - db) * t
    if abs(x) < _SERIES_BELOW:
        return eb * t * (1.0 + x * (0.5 + x * (1.0 / 6.0 + x * (1.0 / 24.0 + x / 120.0))))
    return (ea - eb) / (da - db)


def _forward(
    t: F64, lam: F64, alpha: F64, d: Any, v: Any, vinv: Any, dmax: float, ahat: F64, cs: F64
) -> None:
    """Scaled forward pass: fills ``ahat`` (N + 1, k) and the scale factors ``cs`` (N)."""
    n_int = t.shape[0]
    k = lam.shape[0]
    x = np.zeros(k, dtype=d.dtype)
    for i in range(k):
        ahat[0, i] = alpha[i]
    for n in range(n_int):
        tn = t[n]
        for a in range(k):
            s = x[a] * 0.0
            for i in range(k):
                s += ahat[n, i] * v[i, a]
            x[a] = s * np.exp((d[a] - dmax) * tn)
        total = 0.0
        for j in range(k):
            s = x[0] * 0.0
            for a in range(k):
                s += x[a] * vinv[a, j]
            val = s.real * lam[j]
            if val < 0.0:  # round-off only: the exact value is a non-negative density
                val = 0.0
            ahat[n + 1, j] = val
            total += val
        cs[n] = total
        if total > 0.0:
            for j in range(k):
                ahat[n + 1, j] /= total


def _backward(
    t: F64,
    lam: F64,
    d: Any,
    v: Any,
    vinv: Any,
    dmax: float,
    ahat: F64,
    cs: F64,
    w: Any,
    arrivals: F64,
    bhat0: F64,
) -> None:
    """Scaled backward pass: accumulates W (the integral terms in the eigenbasis) and arrivals."""
    n_int = t.shape[0]
    k = lam.shape[0]
    b = np.ones(k)
    x = np.zeros(k, dtype=d.dtype)
    y = np.zeros(k, dtype=d.dtype)
    e = np.zeros(k, dtype=d.dtype)
    for n in range(n_int - 1, -1, -1):
        tn = t[n]
        c = cs[n]
        for i in range(k):
            arrivals[i] += ahat[n + 1, i] * b[i]
        for a in range(k):
            s = x[a] * 0.0
            for j in range(k):
                s += vinv[a, j] * lam[j] * b[j]
            y[a] = s
            s = x[a] * 0.0
            for i in range(k):
                s += ahat[n, i] * v[i, a]
            x[a] = s
            e[a] = np.exp((d[a] - dmax) * tn)
        for a in range(k):
            xa = x[a] / c
            for bb in range(k):
                w[a, bb] += xa * y[bb] * _phi(d[a], d[bb], e[a], e[bb], tn)
        for i in range(k):
            s = x[0] * 0.0
            for a in range(k):
                s += v[i, a] * e[a] * y[a]
            val = s.real / c
            b[i] = val if val > 0.0 else 0.0
    for i in range(k):
        bhat0[i] = b[i]


_KERNEL = ("_phi", "_forward", "_backward")
_compile_lock = threading.Lock()


@functools.cache
def _compile_kernel() -> bool:
    """Compile the kernel on first use (from numba's disk cache after the first run ever)."""
    if not HAVE_NUMBA:  # pragma: no cover
        logger.warning("numba is not installed: the MMPP EM runs its loops uncompiled (slow)")
        return False
    import numba
    from numba.core.dispatcher import Dispatcher

    with _compile_lock:
        module = globals()
        for name in _KERNEL:
            if isinstance(module[name], Dispatcher):
                continue
            try:
                module[name] = numba.njit(cache=True, nogil=True)(module[name])
            except RuntimeError:  # pragma: no cover - no writable cache folder
                module[name] = numba.njit(nogil=True)(module[name])
    return True


# --- the fast path ------------------------------------------------------------------------------


def _eigen(d0: F64) -> tuple[Any, Any, Any, float]:
    """Diagonalise D0; returns (d, V, V⁻¹, d_max), real when every eigenvalue is real."""
    d, v = np.linalg.eig(d0)
    if np.iscomplexobj(d):
        scale = max(float(np.max(np.abs(d))), 1e-300)
        if float(np.max(np.abs(d.imag))) <= 1e-12 * scale:
            d, v = d.real.copy(), v.real.copy()
        else:
            d, v = d.astype(np.complex128), v.astype(np.complex128)
    vinv = np.linalg.inv(v)
    dmax = float(np.max(d.real))
    return d, v, vinv, dmax


def eigen_condition(d0: F64) -> float:
    """Condition number of the eigenvector matrix of D0 (large: the fast path loses digits)."""
    _, v = np.linalg.eig(d0)
    return float(np.linalg.cond(v))


def _prepare(
    t: F64, rates: F64, generator: F64, alpha: F64
) -> tuple[F64, F64, F64, F64, Any, Any, Any, float]:
    t = np.ascontiguousarray(t, dtype=np.float64)
    lam = np.ascontiguousarray(rates, dtype=np.float64)
    q = np.asarray(generator, dtype=np.float64)
    d0 = q - np.diag(lam)
    d, v, vinv, dmax = _eigen(d0)
    return (
        t,
        lam,
        np.ascontiguousarray(alpha, dtype=np.float64),
        d0,
        np.ascontiguousarray(d),
        np.ascontiguousarray(v),
        np.ascontiguousarray(vinv),
        dmax,
    )


def log_likelihood(t: F64, rates: F64, generator: F64, alpha: F64) -> float:
    """Exact log density of the intervals ``t`` (forward pass only, compiled).

    Parameters
    ----------
    t : ndarray of float64
        Inter-arrival times in seconds (zeros allowed: same-epoch arrivals).
    rates : ndarray, shape (k,)
        Arrival rate per phase, s⁻¹.
    generator : ndarray, shape (k, k)
        Generator Q of the phase chain (rows sum to 0).
    alpha : ndarray, shape (k,)
        Phase law just after the conditioning first arrival.

    Returns
    -------
    float
        ``log(α Π_n exp(D0 t_n) Λ 1)``; ``-inf`` if the data are impossible under the model.
    """
    _compile_kernel()
    t, lam, alpha, _, d, v, vinv, dmax = _prepare(t, rates, generator, alpha)
    n_int = t.shape[0]
    ahat = np.empty((n_int + 1, lam.shape[0]))
    cs = np.empty(n_int)
    _forward(t, lam, alpha, d, v, vinv, dmax, ahat, cs)
    return _total(cs, t, dmax)


def _total(cs: F64, t: F64, dmax: float) -> float:
    if np.any(cs <= 0.0):
        return -math.inf
    return float(np.sum(np.log(cs)) + dmax * float(np.sum(t)))


def forward_backward(t: F64, rates: F64, generator: F64, alpha: F64) -> EStep:
    """One exact E-step by the compiled eigendecomposition kernel (see the module docstring).

    Parameters
    ----------
    t, rates, generator, alpha
        As in :func:`log_likelihood`.

    Returns
    -------
    EStep
        Log-likelihood and posterior statistics.
    """
    _compile_kernel()
    t, lam, alpha, _, d, v, vinv, dmax = _prepare(t, rates, generator, alpha)
    k = lam.shape[0]
    n_int = t.shape[0]
    ahat = np.empty((n_int + 1, k))
    cs = np.empty(n_int)
    _forward(t, lam, alpha, d, v, vinv, dmax, ahat, cs)
    ll = _total(cs, t, dmax)
    if not math.isfinite(ll):
        raise FloatingPointError("the intervals have zero likelihood under the current parameters")
    w = np.zeros((k, k), dtype=d.dtype)
    arrivals = np.zeros(k)
    bhat0 = np.empty(k)
    _backward(t, lam, d, v, vinv, dmax, ahat, cs, w, arrivals, bhat0)
    z = (vinv.T @ w @ v.T).real
    return _statistics(ll, z, np.asarray(generator, dtype=np.float64), arrivals, alpha, bhat0)


def _statistics(ll: float, z: F64, q: F64, arrivals: F64, alpha: F64, backward: F64) -> EStep:
    time_in_phase = np.maximum(np.diag(z).copy(), 0.0)
    jumps = np.maximum(q * z, 0.0)
    np.fill_diagonal(jumps, 0.0)
    initial = alpha * backward
    total = float(initial.sum())
    scale = float(backward.sum())
    return EStep(
        log_likelihood=ll,
        time_in_phase=time_in_phase,
        jumps=jumps,
        arrivals=arrivals,
        initial=initial / total if total > 0.0 else initial,
        first_backward=backward / scale if scale > 0.0 else backward.copy(),
    )


# --- the reference ------------------------------------------------------------------------------


def _van_loan(d0: F64, t: float) -> tuple[F64, F64]:
    """Return ``expm(D0 t)`` and ``I[i, j] = ∫_0^t e^{D0 s} E_ij e^{D0 (t − s)} ds``."""
    k = d0.shape[0]
    integrals = np.empty((k, k, k, k))
    expm = scipy.linalg.expm(d0 * t)
    block = np.zeros((2 * k, 2 * k))
    block[:k, :k] = d0
    block[k:, k:] = d0
    for i in range(k):
        for j in range(k):
            block[:k, k:] = 0.0
            block[i, k + j] = 1.0
            integrals[i, j] = scipy.linalg.expm(block * t)[:k, k:]
    return expm, integrals


def forward_backward_reference(t: F64, rates: F64, generator: F64, alpha: F64) -> EStep:
    """One exact E-step with Van Loan integrals, once per distinct interval length (slow).

    Same parameters and result as :func:`forward_backward`; meant for tests and for checking the
    compiled kernel, not for long traces.
    """
    t = np.asarray(t, dtype=np.float64)
    lam = np.asarray(rates, dtype=np.float64)
    q = np.asarray(generator, dtype=np.float64)
    d0 = q - np.diag(lam)
    k = lam.shape[0]
    lengths, which = np.unique(t, return_inverse=True)
    cache = [_van_loan(d0, float(s)) for s in lengths]
    n_int = t.shape[0]
    ahat = np.empty((n_int + 1, k))
    cs = np.empty(n_int)
    ahat[0] = alpha
    for n in range(n_int):
        a = ahat[n] @ cache[which[n]][0] * lam
        cs[n] = a.sum()
        ahat[n + 1] = a / cs[n]
    ll = float(np.sum(np.log(cs)))
    z = np.zeros((k, k))
    arrivals = np.zeros(k)
    b = np.ones(k)
    for n in range(n_int - 1, -1, -1):
        arrivals += ahat[n + 1] * b
        expm, integrals = cache[which[n]]
        vec = lam * b
        # Z[i, j] += Σ_{u, v} â_u I[i, j][u, v] vec_v, i.e. the (i, j) entry of the integrand
        z += np.einsum("u,ijuv,v->ij", ahat[n], integrals, vec) / cs[n]
        b = expm @ vec / cs[n]
    return _statistics(ll, z, q, arrivals, np.asarray(alpha, dtype=np.float64), b)


def log_likelihood_naive(t: F64, rates: F64, generator: F64, alpha: F64) -> float:
    """Log of ``α Π_n expm(D0 t_n) Λ 1`` multiplied out with log-rescaling, one expm per interval.

    The definition, written as literally as possible; for tests of :func:`log_likelihood`.
    """
    lam = np.asarray(rates, dtype=np.float64)
    d0 = np.asarray(generator, dtype=np.float64) - np.diag(lam)
    row = np.asarray(alpha, dtype=np.float64).copy()
    total = 0.0
    for tn in np.asarray(t, dtype=np.float64):
        row = row @ scipy.linalg.expm(d0 * tn) @ np.diag(lam)
        s = row.sum()
        total += math.log(s)
        row = row / s
    return total
