"""Target shares (of VOs, users, ...) given as non-negative weights."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from gridtrace.errors import ConfigError

__all__ = ["normalised_shares"]


def normalised_shares(shares: Mapping[str, float]) -> tuple[list[str], NDArray[np.float64]]:
    """Return the names and the weights scaled to sum to one, in the mapping's order.

    Raises
    ------
    ConfigError
        If the mapping is empty, or a weight is negative or not finite, or they sum to zero.
    """
    names = [str(k) for k in shares]
    weights = np.asarray([float(shares[k]) for k in shares], dtype=np.float64)
    if not names or not np.all(np.isfinite(weights)) or np.any(weights < 0) or weights.sum() <= 0:
        msg = f"vo_shares must be non-negative weights with a positive sum: {dict(shares)}"
        raise ConfigError(msg)
    return names, weights / weights.sum()
