"""Shared fixtures; an autouse guard keeps every test off NumPy's global random state."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

# A property test asserts what holds for every example, not how fast one example runs: on a
# shared 2-core machine an example that reads and writes files can take longer than
# hypothesis' default 200 ms deadline, which made tests fail there that pass alone.
settings.register_profile("gridtrace", deadline=None)
settings.load_profile("gridtrace")


@pytest.fixture(autouse=True)
def _global_rng_untouched() -> Iterator[None]:
    before = np.random.get_state()[1].copy()  # noqa: NPY002 - reading it, to prove nobody uses it
    yield
    after = np.random.get_state()[1]  # noqa: NPY002
    assert np.array_equal(before, after), "the test changed NumPy's global random state"


@pytest.fixture
def real_data() -> Path:
    """The folder named by GRIDTRACE_REAL_DATA; the test is skipped when it is unset."""
    folder = os.environ.get("GRIDTRACE_REAL_DATA")
    if not folder:
        pytest.skip("GRIDTRACE_REAL_DATA is not set")
    path = Path(folder)
    if not path.is_dir():
        pytest.fail(f"GRIDTRACE_REAL_DATA={folder} is not a folder")
    return path
