"""What machine a benchmark ran on."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import numba
import numpy as np
import pyarrow as pa


def machine() -> dict[str, str]:
    cpu = "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cpu": cpu,
        "cores": f"{len(os.sched_getaffinity(0))} usable of {os.cpu_count()}",
        "python": platform.python_version(),
        "pyarrow": pa.__version__,
        "numpy": np.__version__,
        "numba": numba.__version__,
        "os": platform.platform(),
    }


def describe_machine() -> str:
    return "machine: " + ", ".join(f"{key} {value}" for key, value in machine().items())
