"""The ``browser`` marker of the real-browser test (tests/report/test_browser.py)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "browser: opens the reports in headless chromium (skipped without it)"
    )
