"""Readers and writers of accounting logs, and the tables built from them.

>>> from gridtrace.logs import read_torque, build_trace
>>> result = read_torque("accounting/", site="lpc", tz="Europe/Paris")  # doctest: +SKIP
>>> trace = build_trace(result.jobs)  # doctest: +SKIP
"""

from __future__ import annotations

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
