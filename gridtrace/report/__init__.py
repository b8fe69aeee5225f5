"""HTML reports: one self-contained page per workload, an index page and the run's manifest.

:func:`render_workload_report` writes ``reports/<workload>/index.html``, :func:`render_index`
writes ``reports/index.html``, :func:`render_ppo_report` writes
``reports/ppo-deeprm/index.html`` and :func:`write_manifest` writes ``reports/all``.
"""

from __future__ import annotations

from gridtrace.report._model import fitted_model_section, preset_model_section
from gridtrace.report._ppo import render_ppo_report
from gridtrace.report._render import (
    ResultLike,
    check_workload_name,
    render_index,
    render_workload_report,
    write_manifest,
)
from gridtrace.report._rl import rl_section

__all__ = [
    "ResultLike",
    "check_workload_name",
    "fitted_model_section",
    "preset_model_section",
    "render_index",
    "render_ppo_report",
    "render_workload_report",
    "rl_section",
    "write_manifest",
]
