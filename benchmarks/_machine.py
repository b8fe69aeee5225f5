"""One line naming the machine a benchmark ran on."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import numpy as np
import pyarrow as pa


def describe_machine() -> str:
    cpu = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return (
        f"machine: {cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, "
        f"numpy {np.__version__}, pyarrow {pa.__version__}"
    )
