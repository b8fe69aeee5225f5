"""Readers and writers of accounting logs, and the tables built from them.

>>> from gridtrace.logs import read_torque, build_trace
>>> result = read_torque("accounting/", site="lpc", tz="Europe/Paris")  # doctest: +SKIP
>>> trace = build_trace(result.jobs)  # doctest: +SKIP
"""

from __future__ import annotations

# The names below are imported on first use (PEP 562): each reader's module imports what it
# needs (pandas for several), and ``gridtrace parse`` of a TORQUE file should load none of the
# others. Type checkers and IDEs see the imports under TYPE_CHECKING.

TYPE_CHECKING = False  # typing's constant without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

    from gridtrace.logs._anonymize import anonymize_table
    from gridtrace.logs._base import (
        ERROR_POLICIES,
        ErrorPolicy,
        FileParse,
        ParseResult,
        tokenize_guarded,
    )
    from gridtrace.logs._batsim import write_batsim
    from gridtrace.logs._flags import describe_flag, flag_meanings
    from gridtrace.logs._gwf import read_gwf, write_gwf
    from gridtrace.logs._htcondor import read_htcondor
    from gridtrace.logs._io import (
        detect_compression,
        expand_log_paths,
        read_log_bytes,
        read_log_head,
        scan_log_paths,
    )
    from gridtrace.logs._lsf import read_lsf
    from gridtrace.logs._registry import (
        LogFormat,
        available_formats,
        detect_format,
        get_format,
        parse_logs,
        parse_logs_to,
        register_format,
        registered_formats,
    )
    from gridtrace.logs._sge import read_sge
    from gridtrace.logs._slurm import read_slurm
    from gridtrace.logs._swf import (
        ExportResult,
        log_headers,
        processors_of_headers,
        read_swf,
        write_swf,
    )
    from gridtrace.logs._torque import read_torque
    from gridtrace.logs._torque_writer import write_torque
    from gridtrace.logs._trace import (
        DEFAULT_TAU_S,
        build_trace,
        estimate_cores,
        execution_slots,
        has_flag,
    )
    from gridtrace.logs._vo import DEFAULT_MONITORING_VOS, VOMapping, VORule

_WHERE = {
    "DEFAULT_MONITORING_VOS": "gridtrace.logs._vo",
    "DEFAULT_TAU_S": "gridtrace.logs._trace",
    "ERROR_POLICIES": "gridtrace.logs._base",
    "ErrorPolicy": "gridtrace.logs._base",
    "ExportResult": "gridtrace.logs._swf",
    "FileParse": "gridtrace.logs._base",
    "LogFormat": "gridtrace.logs._registry",
    "ParseResult": "gridtrace.logs._base",
    "VOMapping": "gridtrace.logs._vo",
    "VORule": "gridtrace.logs._vo",
    "anonymize_table": "gridtrace.logs._anonymize",
    "available_formats": "gridtrace.logs._registry",
    "build_trace": "gridtrace.logs._trace",
    "describe_flag": "gridtrace.logs._flags",
    "detect_compression": "gridtrace.logs._io",
    "detect_format": "gridtrace.logs._registry",
    "estimate_cores": "gridtrace.logs._trace",
    "execution_slots": "gridtrace.logs._trace",
    "expand_log_paths": "gridtrace.logs._io",
    "flag_meanings": "gridtrace.logs._flags",
    "get_format": "gridtrace.logs._registry",
    "has_flag": "gridtrace.logs._trace",
    "log_headers": "gridtrace.logs._swf",
    "parse_logs": "gridtrace.logs._registry",
    "parse_logs_to": "gridtrace.logs._registry",
    "processors_of_headers": "gridtrace.logs._swf",
    "read_gwf": "gridtrace.logs._gwf",
    "read_htcondor": "gridtrace.logs._htcondor",
    "read_log_bytes": "gridtrace.logs._io",
    "read_log_head": "gridtrace.logs._io",
    "read_lsf": "gridtrace.logs._lsf",
    "read_sge": "gridtrace.logs._sge",
    "read_slurm": "gridtrace.logs._slurm",
    "read_swf": "gridtrace.logs._swf",
    "read_torque": "gridtrace.logs._torque",
    "register_format": "gridtrace.logs._registry",
    "registered_formats": "gridtrace.logs._registry",
    "scan_log_paths": "gridtrace.logs._io",
    "tokenize_guarded": "gridtrace.logs._base",
    "write_batsim": "gridtrace.logs._batsim",
    "write_gwf": "gridtrace.logs._gwf",
    "write_swf": "gridtrace.logs._swf",
    "write_torque": "gridtrace.logs._torque_writer",
}

__all__ = [
    "DEFAULT_MONITORING_VOS",
    "DEFAULT_TAU_S",
    "ERROR_POLICIES",
    "ErrorPolicy",
    "ExportResult",
    "FileParse",
    "LogFormat",
    "ParseResult",
    "VOMapping",
    "VORule",
    "anonymize_table",
    "available_formats",
    "build_trace",
    "describe_flag",
    "detect_compression",
    "detect_format",
    "estimate_cores",
    "execution_slots",
    "expand_log_paths",
    "flag_meanings",
    "get_format",
    "has_flag",
    "log_headers",
    "parse_logs",
    "parse_logs_to",
    "processors_of_headers",
    "read_gwf",
    "read_htcondor",
    "read_log_bytes",
    "read_log_head",
    "read_lsf",
    "read_sge",
    "read_slurm",
    "read_swf",
    "read_torque",
    "register_format",
    "registered_formats",
    "scan_log_paths",
    "tokenize_guarded",
    "write_batsim",
    "write_gwf",
    "write_swf",
    "write_torque",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    import importlib  # here: a small parse imports its modules by name, not through this

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
