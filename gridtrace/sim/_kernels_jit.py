"""The jitted EASY / greedy first-fit kernel (imported lazily: numba takes ~0.5 s to import).

See :mod:`gridtrace.sim._kernels` for what it computes.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray


@numba.njit(cache=True)
def _heap_push(
    keys: NDArray[np.float64], vals: NDArray[np.int64], size: int, k: float, v: int
) -> None:
    i = size
    keys[i] = k
    vals[i] = v
    while i > 0:
        parent = (i - 1) >> 1
        if keys[parent] <= keys[i]:
            break
        keys[parent], keys[i] = keys[i], keys[parent]
        vals[parent], vals[i] = vals[i], vals[parent]
        i = parent


@numba.njit(cache=True)
def _heap_pop(keys: NDArray[np.float64], vals: NDArray[np.int64], size: int) -> int:
    """Remove the top of a heap of ``size`` items; return its value."""
    top = int(vals[0])
    size -= 1
    keys[0] = keys[size]
    vals[0] = vals[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        child = left
        if left + 1 < size and keys[left + 1] < keys[left]:
            child = left + 1
        if keys[i] <= keys[child]:
            break
        keys[child], keys[i] = keys[i], keys[child]
        vals[child], vals[i] = vals[i], vals[child]
        i = child
    return top


@numba.njit(cache=True)
def backfill_kernel(
    submit: NDArray[np.float64],
    run: NDArray[np.float64],
    est: NDArray[np.float64],
    cores: NDArray[np.int64],
    total: int,
    reserve: bool,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    n = submit.shape[0]
    start = np.full(n, np.nan)
    order = np.empty(n, dtype=np.int64)
    n_elected = 0
    # queue: doubly linked list over rows
    q_next = np.full(n, -1, dtype=np.int64)
    q_prev = np.full(n, -1, dtype=np.int64)
    q_head = -1
    q_tail = -1
    # completions: heap of (true end, row)
    h_key = np.empty(n, dtype=np.float64)
    h_val = np.empty(n, dtype=np.int64)
    h_size = 0
    # running jobs sorted by estimated end
    e_end = np.empty(n, dtype=np.float64)
    e_row = np.empty(n, dtype=np.int64)
    e_size = 0
    est_end = np.empty(n, dtype=np.float64)
    free = total
    nxt = 0
    inf = np.inf
    while True:
        t_arr = submit[nxt] if nxt < n else inf
        t_end = h_key[0] if h_size > 0 else inf
        now = t_arr if t_arr < t_end else t_end
        if now == inf:
            break
        while h_size > 0 and h_key[0] <= now:
            row = _heap_pop(h_key, h_val, h_size)
            h_size -= 1
            free += cores[row]
            # remove from the estimated-end array
            lo, hi = 0, e_size
            target = est_end[row]
            while lo < hi:
                mid = (lo + hi) >> 1
                if e_end[mid] < target:
                    lo = mid + 1
                else:
                    hi = mid
            while e_row[lo] != row:
                lo += 1
            for j in range(lo, e_size - 1):
                e_end[j] = e_end[j + 1]
                e_row[j] = e_row[j + 1]
            e_size -= 1
        while nxt < n and submit[nxt] <= now:
            q_prev[nxt] = q_tail
            q_next[nxt] = -1
            if q_tail >= 0:
                q_next[q_tail] = nxt
            else:
                q_head = nxt
            q_tail = nxt
            nxt += 1
        if q_head < 0:
            continue
        # the decision: the fitting prefix, then backfilling behind the blocked head
        row = q_head
        head = -1
        extra = 0
        shadow = inf
        while row >= 0:
            need = cores[row]
            follow = q_next[row]
            if head < 0:
                if need > free:
                    head = row
                    if not reserve or free == 0:
                        if free == 0:
                            break
                        row = follow
                        continue
                    avail = free
                    i = 0
                    while i < e_size:
                        t = e_end[i] if e_end[i] > now else now
                        while i < e_size and (e_end[i] if e_end[i] > now else now) == t:
                            avail += cores[e_row[i]]
                            i += 1
                        if avail >= need:
                            shadow = t
                            extra = avail - need
                            break
                    row = follow
                    continue
            elif need > free:
                row = follow
                continue
            elif reserve:
                if now + est[row] <= shadow:
                    pass
                elif need <= extra:
                    extra -= need
                else:
                    row = follow
                    continue
            # start `row`
            free -= need
            start[row] = now
            order[n_elected] = row
            n_elected += 1
            if q_prev[row] >= 0:
                q_next[q_prev[row]] = follow
            else:
                q_head = follow
            if follow >= 0:
                q_prev[follow] = q_prev[row]
            else:
                q_tail = q_prev[row]
            _heap_push(h_key, h_val, h_size, now + run[row], row)
            h_size += 1
            e = now + est[row]
            est_end[row] = e
            pos = e_size
            while pos > 0 and e_end[pos - 1] > e:
                e_end[pos] = e_end[pos - 1]
                e_row[pos] = e_row[pos - 1]
                pos -= 1
            e_end[pos] = e
            e_row[pos] = row
            e_size += 1
            if free == 0:
                break
            row = follow
    return start, order[:n_elected]
