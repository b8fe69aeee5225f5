"""numpy's sums, means and quantiles of values that arrive in chunks, to the last bit.

The out-of-core characterisation (:mod:`gridtrace.stats._outofcore`) never holds a figure's
values whole, yet must give exactly what numpy gives on the whole array:

- ``np.add.reduce`` of a contiguous float64 array is a pairwise sum whose tree depends on the
  length only (blocks of at most 128 values summed with eight accumulators, longer runs split in
  two at half the length rounded down to a multiple of 8). :class:`PairwiseSum`, told the length
  beforehand, cuts that tree into subtrees of at most ``block`` values, sums each with
  ``np.add.reduce`` (which gives the subtree's sum, as its tree is the same) and adds the subtree
  sums as the tree adds them: the result is the whole array's sum bit for bit. Means, variances
  and standard deviations follow numpy's formulas on those sums.
- ``np.quantile`` (method ``"linear"``) and ``np.median`` take one or two order statistics around
  each rank and interpolate; :func:`quantile_ranks` and :func:`quantile_of` repeat that, given the
  order statistics, which :class:`Selection` finds by counting an order-preserving integer key of
  the values (first its top 16 bits, then the distinct keys of the bins that hold the ranks).

The tests compare each against numpy on arrays of many lengths.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from gridtrace.stats._columns import F64, I64

__all__ = [
    "PairwiseSum",
    "Selection",
    "float_keys",
    "keys_to_floats",
    "median_of",
    "median_ranks",
    "quantile_of",
    "quantile_ranks",
]

_BLOCK = 128
"""numpy's ``PW_BLOCKSIZE``: runs this long or shorter are one leaf of the pairwise tree."""
_SIGN = np.uint64(1 << 63)
U64 = np.ndarray[Any, np.dtype[np.uint64]]


def _leaves(n: int, block: int, out: list[int]) -> None:
    """Append the lengths of the subtrees of at most ``block`` values, in order."""
    if n <= block:
        out.append(n)
        return
    half = n // 2
    half -= half % 8
    _leaves(half, block, out)
    _leaves(n - half, block, out)


def _combine(n: int, block: int, sums: Sequence[float], at: list[int]) -> float:
    """Add the subtree sums as the pairwise tree of ``n`` values adds them."""
    if n <= block:
        value = sums[at[0]]
        at[0] += 1
        return value
    half = n // 2
    half -= half % 8
    left = _combine(half, block, sums, at)
    return left + _combine(n - half, block, sums, at)


class PairwiseSum:
    """``np.add.reduce`` of ``n`` float64 values given in chunks, exactly.

    Parameters
    ----------
    n : int
        How many values will be added (the pairwise tree depends on it).
    block : int, default 16,384
        Largest subtree summed at once (at least numpy's block of 128): at most this many
        values, plus one chunk, are held.
    """

    def __init__(self, n: int, block: int = 1 << 14) -> None:
        self.n = n
        self.block = max(block, _BLOCK)
        self._lengths: list[int] = []
        _leaves(n, self.block, self._lengths)
        self._sums: list[float] = []
        self._held: list[F64] = []
        self._held_size = 0
        self.added = 0

    def add(self, values: F64) -> None:
        """Add the next values (float64, in order)."""
        if not values.size:
            return
        self.added += int(values.size)
        if self.added > self.n:
            msg = f"more than the {self.n} values announced"
            raise ValueError(msg)
        self._held.append(np.ascontiguousarray(values, dtype=np.float64))
        self._held_size += int(values.size)
        self._reduce()

    def _reduce(self) -> None:
        lengths = self._lengths
        if len(self._sums) >= len(lengths) or self._held_size < lengths[len(self._sums)]:
            return
        held = np.concatenate(self._held) if len(self._held) > 1 else self._held[0]
        first = 0
        while len(self._sums) < len(lengths):
            size = lengths[len(self._sums)]
            if held.size - first < size:
                break
            self._sums.append(float(np.add.reduce(held[first : first + size])))
            first += size
        rest = held[first:]
        self._held = [rest] if rest.size else []
        self._held_size = int(rest.size)

    def result(self) -> float:
        """Return the sum of the ``n`` values (all must have been added)."""
        if self.added != self.n:
            msg = f"{self.added} values added of the {self.n} announced"
            raise ValueError(msg)
        if self.n == 0:
            return 0.0
        while len(self._sums) < len(self._lengths):  # only an empty leaf can be left
            self._sums.append(0.0)
        return _combine(self.n, self.block, self._sums, [0])


def float_keys(values: F64) -> U64:
    """Unsigned integer keys in the order of the float64 values (-0.0 just below 0.0)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    negative = (bits >> np.uint64(63)).astype(bool)
    return np.where(negative, ~bits, bits | _SIGN)


def keys_to_floats(keys: U64) -> F64:
    """Return the float64 values of :func:`float_keys` keys."""
    keys = np.asarray(keys, dtype=np.uint64)
    positive = (keys >> np.uint64(63)).astype(bool)
    bits = np.where(positive, keys ^ _SIGN, ~keys)
    return bits.view(np.float64)


def quantile_ranks(n: int, quantiles: F64) -> tuple[I64, I64, F64]:
    """Find the order statistics ``np.quantile`` (linear) interpolates, and their weights.

    Returns the previous and next ranks (0-based, within ``n``) and the weights ``gamma``, as
    numpy's ``_get_indexes`` and ``_get_gamma`` compute them.
    """
    q = np.atleast_1d(np.asarray(quantiles, dtype=np.float64))
    virtual = (n - 1) * q
    previous = np.asanyarray(np.floor(virtual))
    following = np.asanyarray(previous + 1)
    above = virtual >= n - 1
    previous[above] = -1
    following[above] = -1
    below = virtual < 0
    previous[below] = 0
    following[below] = 0
    previous_i = previous.astype(np.intp)
    following_i = following.astype(np.intp)
    gamma = np.asanyarray(virtual - previous_i, dtype=virtual.dtype)
    return previous_i % max(n, 1), following_i % max(n, 1), gamma


def quantile_of(previous: F64, following: F64, gamma: F64) -> F64:
    """Interpolate as numpy's ``_lerp``: the quantiles from the order statistics around ranks."""
    previous, following = np.atleast_1d(previous), np.atleast_1d(following)
    diff = following - previous
    out = np.add(previous, diff * gamma)
    np.subtract(following, diff * (1 - gamma), out=out, where=gamma >= 0.5)
    return out


def median_ranks(n: int) -> list[int]:
    """Return the ranks ``np.median`` averages: the middle one, or the two middle ones."""
    half = n // 2
    return [half] if n % 2 else [half - 1, half]


def median_of(middle: F64) -> float:
    """``np.median`` from its middle order statistics (one or two, in order)."""
    return float(np.mean(middle))


_TOP = 48
_BINS = 1 << 16


def _merge_counts(keys: U64, counts: I64, more: U64) -> tuple[U64, I64]:
    """Add the keys ``more`` to the sorted distinct ``keys`` and their ``counts``."""
    # distinct keys by hashing (few distinct values in a bin, typically): no sort of them all
    found = pd.Series(more, copy=False).value_counts(sort=False)
    new_keys = np.asarray(found.index, dtype=np.uint64)
    new_counts = np.asarray(found.to_numpy(), dtype=np.int64)
    merged, where = np.unique(np.concatenate((keys, new_keys)), return_inverse=True)
    total = np.zeros(merged.size, dtype=np.int64)
    np.add.at(total, where, np.concatenate((counts, new_counts)))
    return merged, total


class Selection:
    """Exact order statistics of ``n`` values given in chunks, in a few passes.

    The first pass counts the values by the top 16 bits of their :func:`float_keys`; each later
    pass keeps, of the bin holding each wanted rank, the distinct keys and their counts (up to
    ``limit`` distinct keys a bin; a bin with more is split by its next 16 bits instead, and
    searched again in the pass after). Memory: 65,536 counts, and ``limit`` keys per bin searched.

    Parameters
    ----------
    n : int
        Values in all.
    ranks : sequence of int
        The wanted ranks (0-based, in sorted order of the values).
    limit : int, default 65,536
        Distinct keys kept of one bin.
    """

    def __init__(self, n: int, ranks: Sequence[int], limit: int = 1 << 16) -> None:
        self.n = n
        self.limit = limit
        self.values: dict[int, float] = {}
        self._wanted = sorted({int(r) for r in ranks if 0 <= r < n})
        self._histogram: I64 | None = np.zeros(_BINS, dtype=np.int64) if self._wanted else None
        # bins searched: (prefix, shift) -> [ranks, below, keys, counts, sub-histogram, overflow]
        self._bins: dict[tuple[int, int], list[Any]] = {}
        # the second pass: the bins' distinct keys all at once, through a table of the top 16
        # bits searched ([table, keys, counts, overflow]); None when bins are split further
        self._first_bins: list[Any] | None = None
        self.passes = 0

    @property
    def done(self) -> bool:
        """Whether every wanted rank has its value."""
        return len(self.values) == len(self._wanted)

    def add(self, values: F64) -> None:
        """Count or search the next chunk of values (in any order within the pass)."""
        if self.done or not values.size:
            return
        keys = float_keys(values)
        if self._histogram is not None:
            self._histogram += np.bincount(
                (keys >> np.uint64(_TOP)).astype(np.int64), minlength=_BINS
            )
            return
        if self._first_bins is not None:
            table, held, held_counts, overflow = self._first_bins
            if overflow:
                return
            inside = keys[table[(keys >> np.uint64(_TOP)).astype(np.intp)]]
            if inside.size:
                held, held_counts = _merge_counts(held, held_counts, inside)
                overflow = held.size > self.limit * max(len(self._bins), 1)
                if overflow:
                    held, held_counts = held[:0], held_counts[:0]
                self._first_bins = [table, held, held_counts, overflow]
            return
        shifted: dict[int, U64] = {}
        for (prefix, shift), state in self._bins.items():
            if shift not in shifted:
                shifted[shift] = keys >> np.uint64(shift)
            inside = keys[shifted[shift] == np.uint64(prefix)]
            if not inside.size:
                continue
            if shift >= 16:
                part = ((inside >> np.uint64(shift - 16)) & np.uint64(0xFFFF)).astype(np.int64)
                state[4] += np.bincount(part, minlength=_BINS)
            if state[5]:
                continue
            keys_all, counts = _merge_counts(state[2], state[3], inside)
            if keys_all.size > self.limit:
                state[2], state[3], state[5] = state[2][:0], state[3][:0], True
            else:
                state[2], state[3] = keys_all, counts

    def _search(self, ranks: list[int], counts: I64, prefix: int, shift: int, below: int) -> None:
        """Place ranks in the bins of ``counts`` (the next 16 bits under ``prefix``)."""
        ends = np.cumsum(counts) + below
        for rank in ranks:
            bin_ = int(np.searchsorted(ends, rank, side="right"))
            start = int(ends[bin_ - 1]) if bin_ else below
            sub_prefix = (prefix << 16) | bin_
            sub_shift = shift - 16
            if sub_shift == 0:  # the whole key: the value itself
                key = np.array([sub_prefix], dtype=np.uint64)
                self.values[rank] = float(keys_to_floats(key)[0])
                continue
            state = self._bins.setdefault(
                (sub_prefix, sub_shift),
                [[], start, np.zeros(0, np.uint64), np.zeros(0, np.int64), None, False],
            )
            state[0].append(rank)
            state[4] = np.zeros(_BINS, dtype=np.int64)

    def end_pass(self) -> None:
        """Close a pass: settle the ranks whose bins are known, plan the next pass."""
        self.passes += 1
        if self._histogram is not None:
            histogram, self._histogram = self._histogram, None
            self._search(self._wanted, histogram, 0, 64, 0)
            table = np.zeros(_BINS, dtype=bool)
            for prefix, _ in self._bins:
                table[prefix] = True
            self._first_bins = [table, np.zeros(0, np.uint64), np.zeros(0, np.int64), False]
            return
        if self._first_bins is not None:
            _, held, held_counts, overflow = self._first_bins
            self._first_bins = None
            if overflow:  # too many distinct keys: the next pass splits the bins instead
                return
            searched, self._bins = self._bins, {}
            top = held >> np.uint64(_TOP)
            for (prefix, _), (ranks, below, *_) in searched.items():
                inside = top == np.uint64(prefix)
                keys, counts = held[inside], held_counts[inside]
                ends = np.cumsum(counts) + below
                for rank in ranks:
                    at = int(np.searchsorted(ends, rank, side="right"))
                    self.values[rank] = float(keys_to_floats(keys[at]))
            return
        searched, self._bins = self._bins, {}
        for (prefix, shift), (ranks, below, keys, counts, sub, overflow) in searched.items():
            if not overflow:
                ends = np.cumsum(counts) + below
                for rank in ranks:
                    self.values[rank] = float(
                        keys_to_floats(keys[int(np.searchsorted(ends, rank, side="right"))])
                    )
            else:
                self._search(ranks, sub, prefix, shift, below)
