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


# --- the SARSA scheduler's episode loop (MLP or ESN Q, static estimates, per-job reward) ---------

Q_MLP = 0
"""``qkind`` of :func:`sarsa_episode`: an MLP Q (``theta``, ``hidden``)."""
Q_ESN = 1
"""``qkind`` of :func:`sarsa_episode`: an ESN Q (the ``esn_*`` arrays, ``leak``)."""

EPISODE_DONE = 0
"""Status of :func:`sarsa_episode`: every job has run."""
EPISODE_NEED_DRAWS = 1
"""Status: the ε draws given are used up; call again with more."""
EPISODE_EXPLORE = 2
"""Status: the last draw explores; call again with ``forced`` = a uniform index below ``k``."""
EPISODE_REFIT = 3
"""Status: a decision completed a refit period; refit, then call again."""
EPISODE_STUCK = 4
"""Status: jobs stay queued on an idle pool with no arrival to come."""

# slots of the integer state vector ``ist`` of sarsa_episode
_I_NXT, _I_NRUN, _I_NPEND, _I_NQ, _I_INUSE, _I_NORDER, _I_PHASE, _I_DEC, _I_UPOS = range(9)
_I_LOG, _I_STORE, _I_K, _I_FIRST, _I_NRUNL = 9, 10, 11, 12, 13
_I_SEEN, _I_LAST = 14, 15  # the interval reward's rows taken in, the decision it pays next
EPISODE_INT_SLOTS = 16
# slots of the float state vector ``fst``
_F_NOW, _F_WORK_END, _F_BACKLOG, _F_TOTAL, _F_FIRST = range(5)
_F_RATE, _F_LAST = 5, 6  # the interval reward's waiting rate and last call
EPISODE_FLOAT_SLOTS = 7

R_WF = 0
"""``rkind`` of :func:`sarsa_episode`: ResponsivenessFairnessReward, paid per job."""
R_TU = 1
"""``rkind``: TimeUtilityReward, paid per job (``r_p`` = [α, β, σ, time unit])."""
R_SLOWDOWN = 2
"""``rkind``: QueueSlowdownReward or InteractiveSlowdownReward, paid per interval (``r_cost``)."""


@numba.njit(cache=True)
def _heap_less(ka: float, ia: int, kb: float, ib: int) -> bool:
    return ka < kb or (ka == kb and ia < ib)


@numba.njit(cache=True)
def _heap_push(keys: NDArray[np.float64], ids: NDArray[np.int64], n: int, k: float, i: int) -> int:
    """Push (k, i) on the binary min-heap of the first ``n`` entries; return the new size."""
    pos = n
    while pos > 0:
        parent = (pos - 1) >> 1
        if _heap_less(k, i, keys[parent], ids[parent]):
            keys[pos] = keys[parent]
            ids[pos] = ids[parent]
            pos = parent
        else:
            break
    keys[pos] = k
    ids[pos] = i
    return n + 1


@numba.njit(cache=True)
def _heap_pop(keys: NDArray[np.float64], ids: NDArray[np.int64], n: int) -> int:
    """Remove the smallest entry (read it at index 0 first); return the new size."""
    n -= 1
    if n == 0:
        return 0
    k = keys[n]
    i = ids[n]
    pos = 0
    while True:
        child = 2 * pos + 1
        if child >= n:
            break
        if child + 1 < n and _heap_less(keys[child + 1], ids[child + 1], keys[child], ids[child]):
            child += 1
        if _heap_less(keys[child], ids[child], k, i):
            keys[pos] = keys[child]
            ids[pos] = ids[child]
            pos = child
        else:
            break
    keys[pos] = k
    ids[pos] = i
    return n


# --- the class-median estimator's trailing windows (ClassMedianEstimator, _Window) -------------
# Window c keeps, in win_end / win_run from est_off[c], the (end, run) pairs in completion order
# (est_i[3c] the first still in the window, est_i[3c + 1] the count added) and, in win_sorted
# from est_off[c], the runs still in the window in ascending order (est_i[3c + 2] of them). The
# last window (index est_off.shape[0] - 2) is the window of all classes.


@numba.njit(cache=True)
def _win_add(
    c: int,
    end_s: float,
    run_s: float,
    est_off: NDArray[np.int64],
    est_i: NDArray[np.int64],
    win_end: NDArray[np.float64],
    win_run: NDArray[np.float64],
    win_sorted: NDArray[np.float64],
) -> None:
    off = est_off[c]
    pos = off + est_i[3 * c + 1]
    win_end[pos] = end_s
    win_run[pos] = run_s
    est_i[3 * c + 1] += 1
    m = est_i[3 * c + 2]
    j = m  # bisect.insort (right of equal values)
    while j > 0 and win_sorted[off + j - 1] > run_s:
        win_sorted[off + j] = win_sorted[off + j - 1]
        j -= 1
    win_sorted[off + j] = run_s
    est_i[3 * c + 2] = m + 1


@numba.njit(cache=True)
def _win_median(
    c: int,
    oldest: float,
    est_off: NDArray[np.int64],
    est_i: NDArray[np.int64],
    win_end: NDArray[np.float64],
    win_run: NDArray[np.float64],
    win_sorted: NDArray[np.float64],
) -> float:
    """Return the median of window ``c`` once the ends before ``oldest`` left; NaN if empty."""
    off = est_off[c]
    head = est_i[3 * c]
    added = est_i[3 * c + 1]
    m = est_i[3 * c + 2]
    while head < added and win_end[off + head] < oldest:
        run_s = win_run[off + head]
        head += 1
        j = 0  # bisect_left, then delete
        while win_sorted[off + j] < run_s:
            j += 1
        for t in range(j, m - 1):
            win_sorted[off + t] = win_sorted[off + t + 1]
        m -= 1
    est_i[3 * c] = head
    est_i[3 * c + 2] = m
    if m == 0:
        return np.nan
    mid = m // 2
    if m % 2:
        return float(win_sorted[off + mid])
    return 0.5 * float(win_sorted[off + mid - 1] + win_sorted[off + mid])


@numba.njit(cache=True)
def _class_median(
    row: int,
    now: float,
    est_class: NDArray[np.int64],
    est_p: NDArray[np.float64],
    est_off: NDArray[np.int64],
    est_i: NDArray[np.int64],
    win_end: NDArray[np.float64],
    win_run: NDArray[np.float64],
    win_sorted: NDArray[np.float64],
    sources: NDArray[np.int64],
) -> float:
    """``ClassMedianEstimator.estimate(row, now)``, counting its sources as it does."""
    oldest = now - est_p[0]
    m = _win_median(est_class[row], oldest, est_off, est_i, win_end, win_run, win_sorted)
    if not math.isnan(m):
        sources[0] += 1
        return m
    m = _win_median(est_off.shape[0] - 2, oldest, est_off, est_i, win_end, win_run, win_sorted)
    if not math.isnan(m):
        sources[1] += 1
        return m
    sources[2] += 1
    return float(est_p[1])


@numba.njit(cache=True)
def sarsa_episode(
    submit: NDArray[np.float64],
    run: NDArray[np.float64],
    cores: NDArray[np.int64],
    estimate: NDArray[np.float64],
    vo_code: NDArray[np.int64],
    code_slot: NDArray[np.int64],
    reward_vo: NDArray[np.int64],
    actions: NDArray[np.float64],
    est_dyn: bool,
    est_class: NDArray[np.int64],
    est_p: NDArray[np.float64],
    est_off: NDArray[np.int64],
    est_i: NDArray[np.int64],
    win_end: NDArray[np.float64],
    win_run: NDArray[np.float64],
    win_sorted: NDArray[np.float64],
    sources: NDArray[np.int64],
    cmode: bool,
    rt_col: int,
    sched_class: NDArray[np.int64],
    class_cores: NDArray[np.int64],
    cq_buf: NDArray[np.int64],
    cq_off: NDArray[np.int64],
    cq_ht: NDArray[np.int64],
    pool_size: int,
    params: NDArray[np.float64],
    targets: NDArray[np.float64],
    sjf: bool,
    rkind: int,
    r_cost: NDArray[np.float64],
    r_inter: NDArray[np.int64],
    r_p: NDArray[np.float64],
    qkind: int,
    theta: NDArray[np.float64],
    hidden: int,
    esn_h: NDArray[np.float64],
    esn_o_reservoir: NDArray[np.float64],
    esn_o_state: NDArray[np.float64],
    esn_o_action_t: NDArray[np.float64],
    esn_o_bias: NDArray[np.float64],
    esn_output_units: NDArray[np.intp],
    esn_readout: NDArray[np.float64],
    leak: float,
    esn_indptr: NDArray[np.int64],
    esn_indices: NDArray[np.int64],
    esn_values: NDArray[np.float64],
    esn_w_in: NDArray[np.float64],
    esn_bias: NDArray[np.float64],
    draws: NDArray[np.float64],
    forced: int,
    refit_every: int,
    learning: bool,
    episode: int,
    ist: NDArray[np.int64],
    fst: NDArray[np.float64],
    run_keys: NDArray[np.float64],
    run_rows: NDArray[np.int64],
    running: NDArray[np.int64],
    est_end: NDArray[np.float64],
    backlog_of: NDArray[np.float64],
    queue: NDArray[np.int64],
    vo_count: NDArray[np.int64],
    vo_order: NDArray[np.int64],
    pend_keys: NDArray[np.float64],
    pend_ids: NDArray[np.int64],
    pend_note: NDArray[np.float64],
    pend_row: NDArray[np.int64],
    base: int,
    served: NDArray[np.float64],
    s: NDArray[np.float64],
    cand_rows: NDArray[np.int64],
    cand: NDArray[np.float64],
    start: NDArray[np.float64],
    elected: NDArray[np.int64],
    inputs: NDArray[np.float64],
    reward: NDArray[np.float64],
    ready: NDArray[np.bool_],
    time: NDArray[np.float64],
    episodes: NDArray[np.int64],
    log_f: NDArray[np.float64],
    log_i: NDArray[np.int64],
) -> int:
    """Run :func:`~gridtrace.sim.run_events` with the SARSA scheduler until it needs Python.

    The loop form of ``run_events(jobs, policy=SarsaScheduler(q, ...))`` for a fixed pool, a
    static estimator (``estimate``) or, with ``est_dyn``, the class-median estimator over
    (VO, interactive) (its windows in ``est_*`` / ``win_*``, see ``_win_add``; its estimate
    counts added to ``sources``) with one candidate per class (``cmode``: the class of each
    row ``sched_class``, its cores ``class_cores``, the queued rows of class c in
    ``cq_buf[cq_off[c]:]``, from ``cq_ht[2c]`` to ``cq_ht[2c + 1]``), no deficit features,
    a reward credited per job (``rkind``: ``R_WF``, ``R_TU``) or paid per interval
    (``R_SLOWDOWN``), and no behaviour rule or ``sjf`` (elect the shortest runtime entry, ties by
    submit time and row): the same event order, the same float operations
    in the same order, so the same schedule and the same transitions to the bit. It returns to
    Python (a status ``EPISODE_*``) when the ε draws are used up, when a draw explores (Python
    draws the index, as the scheduler's generator would, and passes it as ``forced``), after a
    decision that completes a refit period, and at the end; every piece of state lives in the
    arrays passed, so a call resumes where the last one stopped.

    The Q step is :func:`mlp_elect` (``qkind`` = ``Q_MLP``: ``theta``, ``hidden``) or
    :func:`esn_elect` (``Q_ESN``: the ``esn_*`` arrays of ``ESNQ.elect``, whose reservoir state
    ``esn_h`` advances in place and whose ``esn_readout`` a refit rewrites in place); the
    arrays of the other kind are not read (pass empty ones).

    ``params`` = [ε, λ_s, w_max, pool_cores (features), τ, horizon]; ``targets`` the reward's
    normalised shares w_k; ``draws`` uniform draws in [0, 1), consumed from ``ist[_I_UPOS]``;
    ``base`` the store index of the episode's first decision (``pend_note``, ``pend_row`` are
    indexed by decision within the episode).
    """
    eps = params[0]
    lam = params[1]
    w_max = params[2]
    feat_pool = params[3]
    tau = params[4]
    horizon = params[5]
    work_unit = feat_pool * tau
    n = submit.shape[0]
    n_slots = s.shape[0] - 4
    n_targets = targets.shape[0]
    inf = np.inf
    nxt = ist[_I_NXT]
    n_run = ist[_I_NRUN]
    n_pend = ist[_I_NPEND]
    n_q = ist[_I_NQ]
    in_use = ist[_I_INUSE]
    n_order = ist[_I_NORDER]
    phase = ist[_I_PHASE]
    decisions = ist[_I_DEC]
    upos = ist[_I_UPOS]
    n_log = ist[_I_LOG]
    index = ist[_I_STORE]
    first = ist[_I_FIRST]
    n_runl = ist[_I_NRUNL]
    r_seen = ist[_I_SEEN]
    r_last_i = ist[_I_LAST]
    r_rate = fst[_F_RATE]
    r_last = fst[_F_LAST]
    now = fst[_F_NOW]
    work_end = fst[_F_WORK_END]
    backlog = fst[_F_BACKLOG]
    total = fst[_F_TOTAL]
    max_cores = 0
    for r in range(n):
        if cores[r] > max_cores:
            max_cores = cores[r]
    status = EPISODE_DONE
    while True:
        if phase == 0:
            # the next instant: completions, then arrivals (the engine's order)
            t_arrival = submit[nxt] if nxt < n else inf
            t_end = run_keys[0] if n_run > 0 else inf
            if t_arrival == inf and t_end == inf and n_q == 0:
                status = EPISODE_DONE
                break
            now = min(t_arrival, t_end)
            if now == inf:
                status = EPISODE_STUCK
                break
            if first < 0:
                first = 1
                fst[_F_FIRST] = now  # the pool series' first event
            while n_run > 0 and run_keys[0] <= now:
                row = run_rows[0]
                n_run = _heap_pop(run_keys, run_rows, n_run)
                work_end -= cores[row] * est_end[row]
                in_use -= cores[row]
                if est_dyn:  # ClassMedianEstimator.observe(row, now)
                    _win_add(est_class[row], now, run[row], est_off, est_i, win_end, win_run,
                             win_sorted)  # fmt: skip
                    _win_add(est_off.shape[0] - 2, now, run[row], est_off, est_i, win_end,
                             win_run, win_sorted)  # fmt: skip
                # drop row from the running list (start order kept)
                j = 0
                while running[j] != row:
                    j += 1
                for t in range(j, n_runl - 1):
                    running[t] = running[t + 1]
                n_runl -= 1
            while nxt < n and submit[nxt] <= now:
                queue[n_q] = nxt
                n_q += 1
                if est_dyn:
                    r_hat = _class_median(nxt, now, est_class, est_p, est_off, est_i, win_end,
                                          win_run, win_sorted, sources)  # fmt: skip
                else:
                    r_hat = estimate[nxt]
                work = cores[nxt] * r_hat
                if cmode:
                    c = sched_class[nxt]
                    cq_buf[cq_off[c] + cq_ht[2 * c + 1]] = nxt
                    cq_ht[2 * c + 1] += 1
                backlog_of[nxt] = work
                backlog += work
                c = vo_code[nxt]
                if vo_count[c] == 0:
                    vo_order[n_order] = c
                    n_order += 1
                vo_count[c] += 1
                nxt += 1
            phase = 1
        # the scheduling decisions of this instant
        if n_q == 0 or pool_size <= in_use:
            phase = 0
            continue
        free = pool_size - in_use
        # pay the rewards of the jobs completed by now
        while n_pend > 0 and pend_keys[0] <= now:
            i_paid = pend_ids[0]
            end = pend_keys[0]
            n_pend = _heap_pop(pend_keys, pend_ids, n_pend)
            row = pend_row[i_paid - base]
            start_s = end - run[row]
            if rkind == R_WF:
                wait = start_s - submit[row]
                w = run[row] / (run[row] + wait) if run[row] + wait > 0 else 1.0
                reward[i_paid] = lam * w + (1.0 - lam) * pend_note[i_paid - base]
            else:  # R_TU: TimeUtilityReward.complete
                d = run[row] + r_p[2]
                turnaround = start_s + run[row] - submit[row]
                if r_inter[row]:
                    late = (turnaround - d) / r_p[3]
                    reward[i_paid] = 1.0 if late <= 0 else math.exp(-r_p[0] * late)
                elif d <= 0 or turnaround <= d:
                    reward[i_paid] = 1.0
                else:
                    reward[i_paid] = (turnaround / d) ** -r_p[1]
            ready[i_paid] = True
        # candidates: every queued job that fits, in queue order
        k = 0
        if cmode:
            # the oldest queued job of each class that fits, in row order
            for c in range(class_cores.shape[0]):
                if cq_ht[2 * c] < cq_ht[2 * c + 1] and class_cores[c] <= free:
                    row = cq_buf[cq_off[c] + cq_ht[2 * c]]
                    j = k
                    while j > 0 and cand_rows[j - 1] > row:
                        cand_rows[j] = cand_rows[j - 1]
                        j -= 1
                    cand_rows[j] = row
                    k += 1
        else:
            for t in range(n_q):
                row = queue[t]
                if max_cores <= free or cores[row] <= free:
                    cand_rows[k] = row
                    k += 1
        if k == 0:
            phase = 0
            continue
        # the state vector (SchedulingFeatures.state)
        next_free = inf
        for t in range(n_runl):
            e = est_end[running[t]]
            if e < next_free:
                next_free = e
        next_free = max(0.0, next_free - now) if n_runl > 0 else inf
        s[0] = math.log1p(max(0.0, work_end - now * in_use) / work_unit)
        s[1] = math.log1p(min(next_free, horizon) / tau)
        s[2] = math.log1p(max(0.0, backlog) / work_unit)
        s[3] = free / feat_pool
        for t in range(n_slots):
            s[4 + t] = 0.0
        for t in range(n_order):
            c = vo_order[t]
            s[4 + code_slot[c]] += vo_count[c] / n_q
        chosen = -1
        explored = False
        if sjf:
            pass  # elected below, once the candidates' runtime entries are known
        elif forced >= 0:
            chosen = forced
            explored = True
            forced = -1
        elif eps > 0.0:
            if upos >= draws.shape[0]:
                status = EPISODE_NEED_DRAWS
                break
            u = draws[upos]
            upos += 1
            if u < eps:
                ist[_I_K] = k
                status = EPISODE_EXPLORE
                break
        for t in range(k):
            cand[t] = actions[cand_rows[t]]
        if est_dyn:
            for t in range(k):
                r_hat = _class_median(cand_rows[t], now, est_class, est_p, est_off, est_i,
                                      win_end, win_run, win_sorted, sources)  # fmt: skip
                cand[t, rt_col] = math.log1p(max(r_hat, 0.0) / tau)
        if sjf:
            # behaviour "sjf": the shortest runtime entry, ties by (submit, row) (a lexsort)
            chosen = 0
            for t in range(1, k):
                ra = cand[t, rt_col]
                rb = cand[chosen, rt_col]
                if ra < rb or (
                    ra == rb
                    and (
                        submit[cand_rows[t]] < submit[cand_rows[chosen]]
                        or (
                            submit[cand_rows[t]] == submit[cand_rows[chosen]]
                            and cand_rows[t] < cand_rows[chosen]
                        )
                    )
                ):
                    chosen = t
        if qkind == Q_MLP:
            i, q_i = mlp_elect(s, cand[:k], chosen, theta, hidden, inputs[index])
        else:
            i, q_i = esn_elect(
                s, cand[:k], chosen, esn_h, esn_o_reservoir, esn_o_state, esn_o_action_t,
                esn_o_bias, esn_output_units, esn_readout, leak, esn_indptr, esn_indices,
                esn_values, esn_w_in, esn_bias, inputs[index],
            )  # fmt: skip
        time[index] = now
        episodes[index] = episode
        ready[index] = False
        row = cand_rows[i]
        end = now + run[row]
        if rkind == R_SLOWDOWN:
            # QueueSlowdownReward.advance(arrived, now), paid to the previous decision, then
            # elect(row): the elected job stops waiting
            penalty = 0.0 if math.isnan(r_last) else r_rate * (now - r_last)
            for t in range(r_seen, nxt):
                penalty += (now - submit[t]) * r_cost[t]
                r_rate += r_cost[t]
            r_seen = max(r_seen, nxt)
            r_last = now
            if r_last_i >= 0:
                reward[r_last_i] = -penalty
                ready[r_last_i] = True
            r_last_i = index
            r_rate -= r_cost[row]
        else:
            # the reward: F at this election, then the job's service (w-f); noted, paid at the end
            f = 1.0
            if rkind == R_WF:
                if total > 0.0 and n_targets > 0:
                    deficit = 0.0
                    for t in range(n_targets):
                        d = targets[t] - served[t] / total
                        if d > deficit:
                            deficit = d
                    f = min(1.0, max(0.0, 1.0 - deficit / w_max))
                service = run[row] * cores[row]
                if reward_vo[row] >= 0:
                    served[reward_vo[row]] += service
                total += service
            else:
                f = 0.0
            pend_note[index - base] = f
            pend_row[index - base] = row
            n_pend = _heap_push(pend_keys, pend_ids, n_pend, end, index)
        log_f[2 * n_log] = now
        log_f[2 * n_log + 1] = q_i if chosen < 0 else np.nan
        log_i[4 * n_log] = row
        log_i[4 * n_log + 1] = 1 if explored else 0
        log_i[4 * n_log + 2] = n_q
        log_i[4 * n_log + 3] = k
        n_log += 1
        index += 1
        decisions += 1
        # start the job (ClusterState._start and the engine's bookkeeping)
        j = 0
        while queue[j] != row:
            j += 1
        for t in range(j, n_q - 1):
            queue[t] = queue[t + 1]
        n_q -= 1
        if est_dyn:
            r_hat = _class_median(row, now, est_class, est_p, est_off, est_i, win_end, win_run,
                                  win_sorted, sources)  # fmt: skip
        else:
            r_hat = estimate[row]
        est_end[row] = now + r_hat
        if cmode:
            c = sched_class[row]
            cq_ht[2 * c] += 1  # the elected job is its class's oldest
        running[n_runl] = row
        n_runl += 1
        work_end += cores[row] * est_end[row]
        in_use += cores[row]
        backlog -= backlog_of[row]
        c = vo_code[row]
        vo_count[c] -= 1
        if vo_count[c] == 0:
            j = 0
            while vo_order[j] != c:
                j += 1
            for t in range(j, n_order - 1):
                vo_order[t] = vo_order[t + 1]
            n_order -= 1
        start[row] = now
        elected[n_log - 1] = row
        n_run = _heap_push(run_keys, run_rows, n_run, end, row)
        if learning and decisions % refit_every == 0:
            status = EPISODE_REFIT
            break
    ist[_I_NXT] = nxt
    ist[_I_NRUN] = n_run
    ist[_I_NPEND] = n_pend
    ist[_I_NQ] = n_q
    ist[_I_INUSE] = in_use
    ist[_I_NORDER] = n_order
    ist[_I_PHASE] = phase
    ist[_I_DEC] = decisions
    ist[_I_UPOS] = upos
    ist[_I_LOG] = n_log
    ist[_I_STORE] = index
    ist[_I_FIRST] = first
    ist[_I_NRUNL] = n_runl
    ist[_I_SEEN] = r_seen
    ist[_I_LAST] = r_last_i
    fst[_F_RATE] = r_rate
    fst[_F_LAST] = r_last
    fst[_F_NOW] = now
    fst[_F_WORK_END] = work_end
    fst[_F_BACKLOG] = backlog
    fst[_F_TOTAL] = total
    return status
