"""The jitted EASY / greedy first-fit kernel (imported lazily: numba takes ~0.5 s to import).

See :mod:`gridtrace.sim._kernels` for what it computes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numba.core.cpu
import numpy as np
from numpy.typing import NDArray

_F = TypeVar("_F", bound=Callable[..., object])


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


# ``_nrt`` and ``trailing_zeros`` are numba internals (present in 0.60-0.68): a numba without them
# gets the same kernels with reference counting and a portable count, slower but the same schedules.
_NO_NRT: dict[str, Any] = (
    {"_nrt": False} if hasattr(numba.core.cpu.CPUTargetOptions, "_nrt") else {}
)


@numba.njit(cache=True, inline="always")
def portable_trailing_zeros(word: np.uint64) -> np.uint64:
    """Trailing zero bits of ``word`` (64 for 0), where numba's intrinsic is missing."""
    count = np.uint64(0)
    while count < np.uint64(64) and not (word >> count) & np.uint64(1):
        count += np.uint64(1)
    return count


try:
    from numba.cpython.unsafe.numbers import trailing_zeros as _intrinsic_trailing_zeros

    _trailing_zeros: Any = _intrinsic_trailing_zeros
except ImportError:  # pragma: no cover - depends on the installed numba
    _trailing_zeros = portable_trailing_zeros


def _nrt_free(fn: _F) -> _F:
    """``numba.njit(cache=True)`` without reference counting, for kernels that allocate nothing.

    A jitted call with array arguments otherwise increments and decrements their reference
    counts atomically at each call; in the conservative helpers, called a few million times per
    trace, that cost as much as the profile scans themselves. (``_nrt`` is numba's own switch.)
    """
    return cast(_F, numba.njit(cache=True, **_NO_NRT)(fn))


def _nrt_free_inline(fn: _F) -> _F:
    """:func:`_nrt_free`, inlined into its callers (which must be ``_nrt_free`` themselves).

    numba calls pass each array as seven words; the small helpers of the profile are inlined into
    the query and the release so that their calls cost nothing.
    """
    jit = numba.njit(cache=True, inline="always", **_NO_NRT)
    return cast(_F, jit(fn))


_ctz = cast(Callable[[np.uint64], np.uint64], _trailing_zeros)  # trailing zero bits (64 for 0)


# --- conservative backfilling -------------------------------------------------------------------
# The same computation as :class:`~gridtrace.sim.ConservativeBackfilling` in the event loop, with
# the availability profile held in two preallocated arrays (``times``, ``pfree``) of ``m`` used
# breakpoints, and the queued jobs that hold a reservation kept sorted by (first reservation, row).


@_nrt_free
def _cons_end(start: float, dur: float) -> float:
    """As ``_backfill._end``: a zero-length job holds its cores for the smallest float step."""
    if dur > 0:
        return start + dur
    return float(np.nextafter(start, np.inf))


@numba.njit(cache=True)
def _cons_earliest(
    times: NDArray[np.float64], pfree: NDArray[np.int64], m: int, need: int, dur: float
) -> int:
    """As ``_backfill._earliest`` on the first ``m`` breakpoints."""
    i = 0
    while i < m:
        if pfree[i] < need:
            i += 1
            continue
        end = _cons_end(times[i], dur)
        k = i + 1
        fits = True
        while k < m and times[k] < end:
            if pfree[k] < need:
                fits = False
                break
            k += 1
        if fits:
            return i
        i = k + 1
    return -1


@numba.njit(cache=True)
def _cons_reserve(
    times: NDArray[np.float64], pfree: NDArray[np.int64], m: int, i: int, end: float, need: int
) -> int:
    """As ``_backfill._reserve``; return the new number of breakpoints."""
    k = i
    while k < m and times[k] < end:
        k += 1
    if (k == m or times[k] > end) and end > times[i]:
        for j in range(m, k, -1):
            times[j] = times[j - 1]
            pfree[j] = pfree[j - 1]
        times[k] = end
        pfree[k] = pfree[k - 1]
        m += 1
    if end == times[i]:
        return m
    for j in range(i, k):
        pfree[j] -= need
    return m


@numba.njit(cache=True)
def conservative_kernel(
    submit: NDArray[np.float64],
    run: NDArray[np.float64],
    est: NDArray[np.float64],
    cores: NDArray[np.int64],
    total: int,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    n = submit.shape[0]
    start = np.full(n, np.nan)
    order = np.empty(n, dtype=np.int64)
    n_elected = 0
    # completions: heap of (true end, row)
    h_key = np.empty(n, dtype=np.float64)
    h_val = np.empty(n, dtype=np.int64)
    h_size = 0
    # running jobs sorted by estimated end
    e_end = np.empty(n, dtype=np.float64)
    e_row = np.empty(n, dtype=np.int64)
    e_size = 0
    est_end = np.empty(n, dtype=np.float64)
    # queued jobs holding a reservation, sorted by (first reservation, row); the queued jobs
    # without one are always the rows unres ... nxt - 1 (placed in queue order, stopped early)
    res = np.empty(n, dtype=np.float64)
    r_row = np.empty(n, dtype=np.int64)
    r_size = 0
    unres = 0
    # the profile and scratch arrays
    times = np.empty(n + 2, dtype=np.float64)
    pfree = np.empty(n + 2, dtype=np.int64)
    suffix = np.empty(n + 1, dtype=np.int64)
    chosen = np.empty(n, dtype=np.int64)
    fresh = np.empty(n, dtype=np.int64)
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
            nxt += 1
        if r_size == 0 and unres == nxt:
            continue  # nothing waits
        # the profile left by the running jobs (estimated ends; an overdue one ends now)
        times[0] = now
        pfree[0] = free
        m = 1
        for i in range(e_size):
            t = e_end[i] if e_end[i] > now else now
            if t == times[m - 1]:
                pfree[m - 1] += cores[e_row[i]]
            else:
                times[m] = t
                pfree[m] = pfree[m - 1] + cores[e_row[i]]
                m += 1
        # pfree[0] also counts the cores of overdue jobs (expected to end at any moment), which
        # the policy may reserve but not start. Once every job left holds a reservation and
        # needs more cores than can start now, none of them can start and re-placing them
        # changes nothing that is kept: stop there.
        has_unreserved = unres < nxt
        suffix[r_size] = total + 1
        for j in range(r_size - 1, -1, -1):
            c = cores[r_row[j]]
            suffix[j] = c if c < suffix[j + 1] else suffix[j + 1]
        now_free = free
        n_chosen = 0
        n_fresh = 0
        j = 0
        while j < r_size:
            if pfree[0] == 0:
                break
            if not has_unreserved and (suffix[j] > pfree[0] or suffix[j] > now_free):
                break
            row = r_row[j]
            need = cores[row]
            dur = est[row]
            s = _cons_earliest(times, pfree, m, need, dur)
            j += 1
            if s < 0:
                continue
            t0 = times[s]
            m = _cons_reserve(times, pfree, m, s, _cons_end(t0, dur), need)
            if t0 == now and need <= now_free:
                chosen[n_chosen] = row
                n_chosen += 1
                now_free -= need
        row = unres
        while row < nxt:
            if pfree[0] == 0:
                break
            need = cores[row]
            dur = est[row]
            s = _cons_earliest(times, pfree, m, need, dur)
            if s < 0:  # cannot happen on a fixed pool with cores <= total
                row += 1
                continue
            t0 = times[s]
            res[row] = t0
            m = _cons_reserve(times, pfree, m, s, _cons_end(t0, dur), need)
            if t0 == now and need <= now_free:
                chosen[n_chosen] = row
                n_chosen += 1
                now_free -= need
                start[row] = now
            else:
                fresh[n_fresh] = row
                n_fresh += 1
            row += 1
        unres = row
        # start the chosen jobs, in election order
        for c in range(n_chosen):
            row = chosen[c]
            start[row] = now
            free -= cores[row]
            order[n_elected] = row
            n_elected += 1
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
        # drop the started jobs from the reserved list, then insert the newly reserved ones
        if n_chosen > 0:
            k = 0
            for j in range(r_size):
                row = r_row[j]
                if np.isnan(start[row]):
                    r_row[k] = row
                    k += 1
            r_size = k
        for f in range(n_fresh):
            row = fresh[f]
            t = res[row]
            lo, hi = 0, r_size
            while lo < hi:
                mid = (lo + hi) >> 1
                other = r_row[mid]
                if res[other] < t or (res[other] == t and other < row):
                    lo = mid + 1
                else:
                    hi = mid
            for j in range(r_size, lo, -1):
                r_row[j] = r_row[j - 1]
            r_row[lo] = row
            r_size += 1
    return start, order[:n_elected]


# --- conservative backfilling, incremental ------------------------------------------------------
# The same schedule as ``conservative_kernel``, with the profile (running jobs and reservations)
# kept across events in ``times[lo:lo + m]``, ``pfree[lo:lo + m]``. Invariant after an event at
# ``t``: the profile is the running jobs' estimated intervals plus the reservations of
# ``r_row[:valid]``, and each of these before ``stale`` sits at its earliest fit in the running
# jobs plus the reservations before it (over [t, inf)). At the next event ``now`` with no early
# end, every such job whose position is after ``now`` keeps it: the running jobs' profile on [now,
# inf) is the same except for the jobs started at ``t`` (whose reservation became their running
# interval), and a reservation that was feasible stays the earliest one when only occupancy is
# added. So the policy's re-placement only has to start at the first job in reservation order that
# sits before ``now`` (stale: it has to move) or whose estimate is too small to move its start (its
# window holds nothing, so jobs placed after it may have taken its cores: the argument does not
# hold for it), or at 0 after an early end (cores freed) or after a
# zero-length estimate started (its reservation held the instant itself); a kept job that sits at
# ``now`` stays there and starts if its cores are free (in reservation order, as the policy does).
# A new reservation sorted before one placed before it changes the order: the jobs from there on
# are re-placed at the next event, unless no job from there on can move (``_cons_order_kept``: a
# held job never can, a new one only to an earlier fit once the jobs after it are taken out), or
# only from the first new job that can; they stay in the profile until then (``stale``), so that a
# rebuild at the next event does not pay for releasing them. The profile keeps steps that no
# longer change the free count (released reservations); they are merged away when it grows. With
# no new job waiting, the re-placement stops once no held job left can start now (too few cores
# free now, or no fit from now for its estimate: ``_cons_fits_now``). That only holds more
# strongly as the event goes on (the profile only fills), so the scan for a job that still can
# start moves forward only; the jobs after the stop are outside the kept profile, as after the
# policy's own stops, and are re-placed at the next event.


@_nrt_free_inline
def _cons_lower_bound(times: NDArray[np.float64], first: int, last: int, t: float) -> int:
    """First index in ``[first, last]`` with ``times[index] >= t`` (``last`` if none before it).

    Branch-free halving (conditional moves, no mispredicted jumps); ``times[first:last]`` sorted.
    """
    base = np.uint64(first)
    n = np.uint64(last - first)
    while n > np.uint64(1):
        half = n >> np.uint64(1)
        base = base + half if times[base + half - np.uint64(1)] < t else base
        n -= half
    if n == np.uint64(1) and times[base] < t:
        base += np.uint64(1)
    return int(np.int64(base))


@_nrt_free_inline
def _cons_find_end(times: NDArray[np.float64], first: int, last: int, t: float) -> int:
    """As :func:`_cons_lower_bound`, for a window's end just after ``first``.

    Most reservation windows span a few breakpoints: the next 8 are looked at one by one before
    halving (which would wait on a chain of dependent loads).
    """
    k = first
    stop = min(last, first + 8)
    while k < stop and times[k] < t:
        k += 1
    if k == stop and stop < last:
        k = _cons_lower_bound(times, k, last, t)
    return k


@_nrt_free_inline
def _cons_insert(
    times: NDArray[np.float64], pfree: NDArray[np.int64], m: int, k: int, t: float
) -> None:
    """Insert a breakpoint at ``t`` at index ``k`` (> 0) with the free cores of the one before."""
    uk = np.uint64(k)
    # one array per loop: a move within one array vectorises, two interleaved ones may alias
    j = np.uint64(m)
    while j > uk:
        times[j] = times[j - np.uint64(1)]
        j -= np.uint64(1)
    j = np.uint64(m)
    while j > uk:
        pfree[j] = pfree[j - np.uint64(1)]
        j -= np.uint64(1)
    times[uk] = t
    pfree[uk] = pfree[uk - np.uint64(1)]


@_nrt_free_inline
def _cons_add(pfree: NDArray[np.int64], a: int, b: int, cores: int) -> None:
    """``pfree[a:b] += cores``."""
    j = np.uint64(a)
    ub = np.uint64(b)
    while j < ub:
        pfree[j] += cores
        j += np.uint64(1)


@_nrt_free_inline
def _cons_split(
    times: NDArray[np.float64], pfree: NDArray[np.int64], m: int, t: float, first: int
) -> tuple[int, int]:
    """Index of the breakpoint at ``t`` (> times[first]), inserted if absent; and the new ``m``."""
    a = _cons_lower_bound(times, first, m, t) if first == 0 else _cons_find_end(times, first, m, t)
    if a < m and times[a] == t:
        return a, m
    _cons_insert(times, pfree, m, a, t)
    return a, m + 1


@_nrt_free
def _cons_release(
    times: NDArray[np.float64],
    pfree: NDArray[np.int64],
    m: int,
    pos: float,
    dur: float,
    need: int,
) -> int:
    """Give back the cores of a reservation at ``pos`` from ``times[0]`` (now) on; new ``m``."""
    end = _cons_end(pos, dur)
    s = pos if pos > times[0] else times[0]
    if end <= s:
        return m
    a = 0
    if s > times[0]:
        a, m = _cons_split(times, pfree, m, s, 0)
    b, m = _cons_split(times, pfree, m, end, a)
    _cons_add(pfree, a, b, need)
    return m


# The earliest-fit query runs on bit masks, 64 breakpoints per word: bit b of a word is set when
# breakpoint ``base + b`` has fewer free cores than the job needs (a blocker) or lies past the
# ``m`` used ones. A fit can only start where a run of free breakpoints starts, and it holds when
# the run's first blocker comes at or after the job's end, so the query goes from run to run with
# trailing-zero counts instead of stepping through the breakpoints one by one, and the mask of a
# word is one branch-free compare of 64 values (vectorised). Indices are unsigned inside the hot
# loops: numba wraps negative signed indices, which turns a vectorisable loop into gathers. The
# profile arrays keep ``_WORD`` spare slots past the used breakpoints so a mask can always read a
# whole word.
_WORD = 64
_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


@_nrt_free_inline
def _cons_blocked(pfree: NDArray[np.int64], base: int, m: int, need: int) -> np.uint64:
    """Bit ``b`` set when ``pfree[base + b] < need`` or ``base + b >= m`` (64 bits)."""
    w = np.uint64(0)
    ub = np.uint64(base)
    for b in range(64):
        w |= np.uint64(pfree[ub + np.uint64(b)] < need) << np.uint64(b)
    if m - base < 64:
        w |= _ONES << np.uint64(m - base)
    return w


@_nrt_free_inline
def _cons_fit(
    times: NDArray[np.float64], pfree: NDArray[np.int64], m: int, need: int, dur: float
) -> int:
    """As :func:`_cons_earliest` (the same index), from run to run on the blocker masks."""
    if not dur > 0:
        # a zero-length window holds its first breakpoint only: the first one with the cores
        base = 0
        while base < m:
            free_bits = ~_cons_blocked(pfree, base, m, need)
            if free_bits != 0:
                return base + int(_ctz(free_bits))
            base += 64
        return -1
    open_ = -1  # the start of a run of free breakpoints still open at the end of a word
    base = 0
    while base < m:
        w = _cons_blocked(pfree, base, m, need)
        pos = np.uint64(0)
        if open_ >= 0:
            if w == 0:
                base += 64
                continue
            pos = _ctz(w)
            b = base + int(pos)
            if b >= m or times[b] >= times[open_] + dur:
                return open_
            open_ = -1
        while True:
            free_bits = ~w & (_ONES << pos)
            if free_bits == 0:
                break
            u = _ctz(free_bits)
            blocked = w & (_ONES << u)
            s = base + int(u)
            if blocked == 0:
                open_ = s
                break
            pos = _ctz(blocked)
            b = base + int(pos)
            if b >= m or times[b] >= times[s] + dur:
                return s
        base += 64
    return open_


@_nrt_free
def _cons_place(
    times: NDArray[np.float64], pfree: NDArray[np.int64], m: int, need: int, dur: float
) -> tuple[int, int]:
    """Reserve ``need`` cores for ``dur`` at the earliest fit: (its index or −1, the new ``m``).

    :func:`_cons_fit`, then the reservation as :func:`_cons_reserve`.
    """
    i = _cons_fit(times, pfree, m, need, dur)
    if i < 0:
        return -1, m
    end = _cons_end(times[i], dur)
    if not end > times[i]:
        return i, m  # an estimate too small to move the time holds nothing (as ``_reserve``)
    k = _cons_find_end(times, i + 1, m, end)
    if k == m or times[k] > end:
        _cons_insert(times, pfree, m, k, end)
        m += 1
    _cons_add(pfree, i, k, -need)
    return i, m


@_nrt_free
def _cons_fits_now(
    times: NDArray[np.float64], pfree: NDArray[np.int64], m: int, need: int, dur: float
) -> bool:
    """Whether ``need`` cores are free for ``dur`` from ``times[0]`` (now) on."""
    end = _cons_end(times[0], dur)
    base = 0
    while base < m:
        w = _cons_blocked(pfree, base, m, need)
        if w != 0:
            b = base + int(_ctz(w))
            return b >= m or times[b] >= end
        if times[base + 63] >= end:
            return True
        base += 64
    return True


@_nrt_free_inline
def _cons_take_out(
    times: NDArray[np.float64],
    scratch: NDArray[np.int64],
    h: int,
    horizon: float,
    pos: float,
    dur: float,
    need: int,
) -> None:
    """Add ``need`` cores to every step of ``scratch[:h]`` that a window at ``pos`` touches.

    From ``times[0]`` (now) on; a window starting at or after ``horizon`` is skipped.
    """
    end = _cons_end(pos, dur)
    s = pos if pos > times[0] else times[0]
    if end > s and s < horizon:
        a = _cons_lower_bound(times, 0, h, s)
        if a == h or times[a] > s:
            a -= 1  # the step holding the window's start
        b = _cons_lower_bound(times, 0, h, end)
        _cons_add(scratch, a, b, need)


_QUICK = 8


@_nrt_free
def _cons_order_kept(
    times: NDArray[np.float64],
    pfree: NDArray[np.int64],
    m: int,
    scratch: NDArray[np.int64],
    r_row: NDArray[np.int64],
    first: int,
    last: int,
    pos: NDArray[np.float64],
    est: NDArray[np.float64],
    cores: NDArray[np.int64],
    fresh_from: int,
) -> int:
    """Find the first job of ``r_row[first:last]`` whose place may change in this order.

    The profile holds every job of ``r_row[:last]``, each at its earliest fit in the jobs placed
    before it (all held jobs, then the new ones, rows ``>= fresh_from``, in row order); the new
    ones were then sorted in by first reservation, some before held jobs (from ``first`` on). A
    held job keeps its place in the new order: the jobs before it are a superset of the ones it
    was placed after, at the same places, and a feasible earliest start stays the earliest when
    occupancy is added. A new job keeps it when no earlier start fits once the jobs from it on
    are taken out: checked on a copy of the profile's steps up to the end of its window (the last
    new job's, from the back), with each taken-out job's cores added to every step its window
    touches, an upper bound of the free cores (a step split by a window's end counts as free in
    whole, so an earlier fit there is only a possible one); no fit before its place on that
    copy means none in the exact profile either. With one new job (the usual case, and then it is
    the first), the jobs after it are taken out front to back and its fit is looked for after the
    first ``_QUICK`` already: a fit found with fewer taken out is there with all of them, and most
    new jobs that move are found there at a fraction of the work. Returns the index of the first
    new job with a possible earlier fit (re-place from there), or ``last`` when every job keeps
    its place.
    """
    horizon = times[0]
    n_new = 0
    for k in range(first, last):
        row = r_row[k]
        if row >= fresh_from:
            n_new += 1
            e = _cons_end(pos[row], est[row])
            if e > horizon:
                horizon = e
    h = _cons_lower_bound(times, 0, m, horizon)
    if h < m:
        h += 1  # the step holding the horizon
    for k in range(h):
        scratch[k] = pfree[k]
    if n_new == 1:
        # one new job, the first: take the others out front to back, and look for its earlier
        # fit after the first few already (found with fewer out, it is there with all of them)
        quick = min(last, first + _QUICK)
        row = r_row[first]
        for k in range(first, last):
            other = r_row[k]
            _cons_take_out(times, scratch, h, horizon, pos[other], est[other], cores[other])
            if k == quick - 1 or k == last - 1:
                i = _cons_fit(times, scratch, h, cores[row], est[row])
                if i >= 0 and times[i] < pos[row]:
                    return first
        return last
    result = last
    for k in range(last - 1, first - 1, -1):
        row = r_row[k]
        p = pos[row]
        _cons_take_out(times, scratch, h, horizon, p, est[row], cores[row])
        if row >= fresh_from:
            i = _cons_fit(times, scratch, h, cores[row], est[row])
            if i >= 0 and times[i] < p:
                result = k
    return result


@numba.njit(cache=True)
def conservative_kernel_inc(
    submit: NDArray[np.float64],
    run: NDArray[np.float64],
    est: NDArray[np.float64],
    cores: NDArray[np.int64],
    total: int,
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    n = submit.shape[0]
    start = np.full(n, np.nan)
    order = np.empty(n, dtype=np.int64)
    n_elected = 0
    h_key = np.empty(n, dtype=np.float64)
    h_val = np.empty(n, dtype=np.int64)
    h_size = 0
    e_end = np.empty(n, dtype=np.float64)
    e_row = np.empty(n, dtype=np.int64)
    e_size = 0
    est_end = np.empty(n, dtype=np.float64)
    res = np.empty(n, dtype=np.float64)  # first reservation
    pos = np.empty(n, dtype=np.float64)  # current reservation
    r_row = np.empty(n, dtype=np.int64)
    pmin = np.empty(n, dtype=np.float64)  # prefix minimum of pos over r_row[:valid]
    r_size = 0
    valid = 0
    unres = 0
    cap = 8 * n + 16 + _WORD
    times = np.empty(cap, dtype=np.float64)
    pfree = np.empty(cap, dtype=np.int64)
    lo = 0
    m = 0
    thresh = 64
    suffix = np.empty(n + 1, dtype=np.int64)
    chosen = np.empty(n, dtype=np.int64)
    fresh = np.empty(n, dtype=np.int64)
    free = total
    nxt = 0
    rebuild = True
    stale = n  # r_row[stale:valid] are in the profile but have to be re-placed
    # counters (third return value): events at which a job waits, profile rebuilds, placements
    # (earliest-start scans, new jobs included), events at which a new reservation sorted before
    # held ones, the jobs from there on that kept their places (neither released nor re-placed),
    # reservations released to be re-placed
    stats = np.zeros(6, dtype=np.int64)
    scratch = np.empty(cap, dtype=np.int64)
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
            if est_end[row] > now:
                rebuild = True  # ended before its estimated end: cores freed
            lo_, hi = 0, e_size
            target = est_end[row]
            while lo_ < hi:
                mid = (lo_ + hi) >> 1
                if e_end[mid] < target:
                    lo_ = mid + 1
                else:
                    hi = mid
            while e_row[lo_] != row:
                lo_ += 1
            for j in range(lo_, e_size - 1):
                e_end[j] = e_end[j + 1]
                e_row[j] = e_row[j + 1]
            e_size -= 1
        while nxt < n and submit[nxt] <= now:
            nxt += 1
        if r_size == 0 and unres == nxt:
            continue  # nothing waits (the kept profile, if any, stays as it was)
        stats[0] += 1
        # the first held job to re-place: the first one placed before now
        first = valid
        if valid > 0 and pmin[valid - 1] < now:
            a, b = 0, valid - 1
            while a < b:  # pmin is non-increasing: first index with pmin < now
                mid = (a + b) >> 1
                if pmin[mid] < now:
                    b = mid
                else:
                    a = mid + 1
            first = a
        # the kept jobs before it that are placed at now stay there, and may start now
        due = first
        if first > 0 and pmin[first - 1] <= now:
            a, b = 0, first - 1
            while a < b:
                mid = (a + b) >> 1
                if pmin[mid] <= now:
                    b = mid
                else:
                    a = mid + 1
            due = a
        if stale < valid:
            # reservations kept in the profile but out of order: re-place from the first of them
            if stale < first:
                first = stale
            if due > first:
                due = first
        stale = n
        if rebuild or (first == 0 and valid > 0):
            stats[1] += 1
            first = 0
            due = 0
            valid = 0  # the rebuilt profile holds no reservation: nothing to release
            rebuild = False
            lo = 0
            times[0] = now
            pfree[0] = free
            m = 1
            for i in range(e_size):
                t = e_end[i] if e_end[i] > now else now
                if t == times[m - 1]:
                    pfree[m - 1] += cores[e_row[i]]
                else:
                    times[m] = t
                    pfree[m] = pfree[m - 1] + cores[e_row[i]]
                    m += 1
            thresh = 2 * m + 64
        else:
            # drop the past steps
            a, b = lo, lo + m - 1
            while a < b:  # last breakpoint <= now
                mid = (a + b + 1) >> 1
                if times[mid] <= now:
                    a = mid
                else:
                    b = mid - 1
            m -= a - lo
            lo = a
            times[lo] = now
            extra = 5 * (r_size + nxt - unres) + 8 + _WORD
            if lo + m + extra > cap or m > thresh:
                w = 0
                times[0] = times[lo]
                pfree[0] = pfree[lo]
                for k in range(lo + 1, lo + m):
                    if pfree[k] != pfree[w]:
                        w += 1
                        times[w] = times[k]
                        pfree[w] = pfree[k]
                lo = 0
                m = w + 1
                thresh = 2 * m + 64
        tv = times[lo:]
        pv = pfree[lo:]
        for k in range(first, valid):
            row = r_row[k]
            m = _cons_release(tv, pv, m, pos[row], est[row], cores[row])
        stats[5] += valid - first
        has_unreserved = unres < nxt
        if not has_unreserved:  # the fewest cores from each held job on: read only then
            suffix[r_size] = total + 1
            for j in range(r_size - 1, first - 1, -1):
                c = cores[r_row[j]]
                suffix[j] = c if c < suffix[j + 1] else suffix[j + 1]
        now_free = free
        n_chosen = 0
        n_fresh = 0
        for k in range(due, first):
            row = r_row[k]
            if pos[row] == now and cores[row] <= now_free:
                chosen[n_chosen] = row
                n_chosen += 1
                now_free -= cores[row]
        j = first
        live = first  # the held jobs r_row[j:live] cannot start now (no new job waits)
        while j < r_size:
            if pv[0] == 0:
                break
            if not has_unreserved:
                if suffix[j] > pv[0] or suffix[j] > now_free:
                    break
                # none of the held jobs left can start now: their re-placement changes nothing
                # this event decides (they keep their first reservations), so stop here as well;
                # a job that cannot start now cannot later in the event (the profile only fills)
                if live < j:
                    live = j
                while live < r_size:
                    other = r_row[live]
                    if cores[other] <= now_free and _cons_fits_now(
                        tv, pv, m, cores[other], est[other]
                    ):
                        break
                    live += 1
                if live == r_size:
                    break
            row = r_row[j]
            need = cores[row]
            dur = est[row]
            s, m = _cons_place(tv, pv, m, need, dur)
            j += 1
            stats[2] += 1
            if s < 0:
                pos[row] = inf
                continue
            t0 = tv[s]
            pos[row] = t0
            if t0 == now and need <= now_free:
                chosen[n_chosen] = row
                n_chosen += 1
                now_free -= need
        j_end = j
        fresh_from = unres
        row = unres
        while row < nxt:
            if pv[0] == 0:
                break
            need = cores[row]
            dur = est[row]
            s, m = _cons_place(tv, pv, m, need, dur)
            stats[2] += 1
            if s < 0:
                row += 1
                continue
            t0 = tv[s]
            res[row] = t0
            pos[row] = t0
            if t0 == now and need <= now_free:
                chosen[n_chosen] = row
                n_chosen += 1
                now_free -= need
                start[row] = now
            else:
                fresh[n_fresh] = row
                n_fresh += 1
            row += 1
        unres = row
        for c in range(n_chosen):
            row = chosen[c]
            start[row] = now
            free -= cores[row]
            order[n_elected] = row
            n_elected += 1
            _heap_push(h_key, h_val, h_size, now + run[row], row)
            h_size += 1
            e = now + est[row]
            est_end[row] = e
            if not est[row] > 0:
                rebuild = True  # its reservation holds ``now`` itself, its running interval not
            p = e_size
            while p > 0 and e_end[p - 1] > e:
                e_end[p] = e_end[p - 1]
                e_row[p] = e_row[p - 1]
                p -= 1
            e_end[p] = e
            e_row[p] = row
            e_size += 1
        # the held jobs placed at this event are r_row[first:j_end]; drop those that started
        if n_chosen == 0:
            valid = j_end  # none started
        else:
            w = due
            for k in range(due, j_end):
                row = r_row[k]
                if np.isnan(start[row]):
                    r_row[w] = row
                    w += 1
            valid = w
            for k in range(j_end, r_size):
                r_row[w] = r_row[k]
                w += 1
            r_size = w
        # fresh reservations: placed after every held job; one sorted before a job placed before
        # it changes the order, so re-place from there at the next event
        dirty = r_size + n_fresh
        for f in range(n_fresh):
            row = fresh[f]
            t = res[row]
            a, b = 0, r_size
            while a < b:
                mid = (a + b) >> 1
                other = r_row[mid]
                if res[other] < t or (res[other] == t and other < row):
                    a = mid + 1
                else:
                    b = mid
            if a < r_size and a < dirty:
                dirty = a
            for k in range(r_size, a, -1):
                r_row[k] = r_row[k - 1]
            r_row[a] = row
            r_size += 1
        if n_fresh > 0:
            valid = r_size  # every held job was placed (no break), and so were the fresh ones
            if dirty < r_size:
                stats[3] += 1
                keep = _cons_order_kept(
                    tv, pv, m, scratch, r_row, dirty, r_size, pos, est, cores, fresh_from
                )
                stats[4] += keep - dirty
                stale = keep  # released at the next event, unless the profile is rebuilt
        for k in range(min(due, dirty), valid):
            row = r_row[k]
            p_k = pos[row]
            if not _cons_end(p_k, est[row]) > p_k:
                # an estimate too small to move its start holds nothing, so the jobs placed
                # after it may take its cores there: its place is not kept, it is re-placed
                # (with the jobs after it) at every event, as a place before now is
                p_k = -inf
            prev = pmin[k - 1] if k > 0 else inf
            pmin[k] = p_k if p_k < prev else prev
    return start, order[:n_elected], stats
