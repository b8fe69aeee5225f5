"""The ``gridtrace`` command: one sub-command per pipeline stage.

Each sub-command takes its inputs as positional paths and its output folder as ``-o/--out``, and
prints a short summary, so a user can run one stage on their own files without Snakemake.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable, Sequence
from functools import partial

from gridtrace import _log
from gridtrace.errors import ConfigError, DataQualityWarning, GridtraceError

TYPE_CHECKING = False  # typing's constant without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["main"]

logger = _log.get_logger(__name__)  # imports logging when it first logs


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")


def _read_json(path: str) -> Any:
    import json  # here, as pathlib: a small parse imports neither (see _small_parse_run)
    from pathlib import Path

    try:
        return json.loads(Path(path).read_text())
    except json.JSONDecodeError as exc:
        msg = f"{path}: not valid JSON ({exc})"
        raise ConfigError(msg) from None


def _vo_mapping(args: argparse.Namespace) -> Any:
    # from the modules, not through gridtrace.logs' lazy names (which import importlib)
    from gridtrace.logs._vo import VOMapping, mapping_from_pairs

    mapping = VOMapping.from_dict(_read_json(args.vo_map)) if args.vo_map else VOMapping()
    if args.vo:
        extra = mapping_from_pairs(_split_vo_rule(rule) for rule in args.vo)
        mapping = VOMapping(
            rules=extra.rules + mapping.rules,
            fallback_field=mapping.fallback_field,
            monitoring=mapping.monitoring,
        )
    return mapping


def _split_vo_rule(rule: str) -> tuple[str, str, str]:
    field, colon, rest = rule.partition(":")
    pattern, equals, vo = rest.rpartition("=")
    if not colon or not equals:
        msg = f"--vo takes FIELD:PATTERN=VO (e.g. group:prdatl.*=atlas), got {rule!r}"
        raise ConfigError(msg)
    return field, pattern, vo


_PARSE_OUTPUTS = ("records.parquet", "jobs.parquet", "quarantine.parquet")
_MOST_LISTED = 20  # entries of a list printed before "... and N more"


_FEW_FILES = 8  # inputs whose format is looked at before parsing, to leave pandas out


def _torque_only(args: argparse.Namespace) -> bool:
    """Whether this parse reads TORQUE files alone, in this process, with no zone or key.

    Then no pandas object can reach pyarrow, and pyarrow need not import pandas (see
    :mod:`gridtrace.logs._lazy_pandas`). Looked at for a few files only: for many, the time
    saved does not matter.
    """
    if args.tz or args.anonymize_key_file or args.workers > 1 or args.scheduler:
        return False
    from gridtrace.logs._io import scan_log_paths
    from gridtrace.logs._registry import detect_format, get_format

    try:
        if args.format:
            return get_format(args.format).name == "torque"
        files = scan_log_paths(args.paths).files
        few = 0 < len(files) <= _FEW_FILES
        return few and all(detect_format(path) == "torque" for path in files)
    except (GridtraceError, OSError):  # parse_logs says what is wrong
        return False


_AUTO_SPILL_BYTES = 1 << 30
"""Input (uncompressed, estimated) from which ``gridtrace parse`` assembles out of core."""


def _use_spill(args: argparse.Namespace) -> bool:
    """Whether to assemble out of core: ``--spill``, or by default above 1 GiB of spillable logs."""
    if args.spill is not None:
        return bool(args.spill)
    if args.scheduler or args.anonymize_key_file:
        return False
    from gridtrace.logs._io import log_text_bytes, scan_log_paths
    from gridtrace.logs._registry import detect_format, get_format

    try:
        files = scan_log_paths(args.paths).files
        if sum(log_text_bytes(path) for path in files) < _AUTO_SPILL_BYTES:
            return False
        if args.format:
            return _spillable(get_format(args.format).name)
        return all(_spillable(detect_format(path)) for path in files)
    except (GridtraceError, OSError):  # parse_logs says what is wrong
        return False


def _spillable(name: str) -> bool:
    """Whether the format has an out-of-core assembly (TORQUE/PBS, Slurm, SGE, LSF)."""
    from gridtrace.logs._spill import spill_format

    try:
        spill_format(name)
    except ConfigError:
        return False
    return True


def _cmd_parse_spill(args: argparse.Namespace) -> int:
    from gridtrace.logs import parse_logs_to
    from gridtrace.logs._registry import NOTHING_READ

    if args.anonymize_key_file:
        msg = "--spill reads without a key: leave out --anonymize-key-file "
        msg += "(anonymise the tables afterwards)"
        raise ConfigError(msg)
    mapping = _vo_mapping(args)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", f".*: {NOTHING_READ}: ", DataQualityWarning)
        result = parse_logs_to(
            args.paths,
            args.out,
            format=args.format,
            site=args.site,
            tz=args.tz,
            errors=args.errors,
            workers=args.workers,
            partitions=args.partitions,
            spill_dir=args.spill_dir,
            jobs_transform=mapping.apply,
            scheduler=args.scheduler,
            split_bytes=args.split_bytes or None,
        )
    where = (
        f"the dask cluster at {args.scheduler}"
        if args.scheduler
        else f"{args.workers} process worker(s)"
    )
    _say(
        f"assembled out of core: records spilled by job id to {result.partitions} "
        f"partition(s), assembled on {where}"
    )
    return _report_parse(args, result.summary, result.job_flags, result.record_flags)


def _small_parse(args: argparse.Namespace) -> int | None:
    """Parse a small TORQUE/PBS input in pure Python; None when it is not one (see below).

    One day's file is read, assembled and written without numpy and pyarrow (their imports
    alone take several times what the reading does), to the same tables, summary and printout
    as the Arrow path (:mod:`gridtrace.logs._small_parse`). Only the plain case: one process,
    no zone, no key, no spill or splitting asked for, and the default error policy
    (a progress bar, on by default in a terminal, has nothing to show for it).
    """
    if args.spill or args.tz or args.anonymize_key_file or args.scheduler or args.processes:
        return None
    # a progress bar (on by default in a terminal) has nothing to show for a small input
    if args.workers != 1 or args.errors != "warn":
        return None
    from gridtrace.logs._torque_pure import TORQUE_NAMES

    if args.format is not None and args.format not in TORQUE_NAMES:
        return None
    import gc

    # the collector is paused while a small input is parsed: the run would make some 30
    # collections of its young objects (~3% of a small parse) and free next to nothing (its
    # lists are alive until written); the input's size bounds what cyclic garbage may wait
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _small_parse_run(args)
    finally:
        if collecting:
            gc.enable()


def _small_parse_run(args: argparse.Namespace) -> int | None:
    from gridtrace.logs._small_parse import SMALL_PARSE_BYTES, parse_torque_small

    parsed = parse_torque_small(
        args.paths,
        site=args.site,
        mapping=_vo_mapping(args),
        format=args.format,
        max_bytes=SMALL_PARSE_BYTES,
    )
    if parsed is None:
        return None
    import os

    from gridtrace._atomic import path_text, write_text
    from gridtrace._parquet_lite import (
        JOBS_COLUMNS,
        QUARANTINE_COLUMNS,
        RECORDS_COLUMNS,
        write_table,
    )
    from gridtrace.logs._summary import summary_json
    from gridtrace.logs._torque_flags import torque_flag_meanings

    # os, not pathlib (~17 M instructions to import, 7% of a small parse): the folder as
    # pathlib spells it, made as Path.mkdir(parents=True, exist_ok=True) makes it
    out = path_text(args.out)
    os.makedirs(out, exist_ok=True)  # noqa: PTH103
    summary_path = _inside(out, "parse-summary.json")  # first out, last in: see _cmd_parse
    try:  # noqa: SIM105  # (contextlib.suppress: one more module to load)
        os.unlink(summary_path)  # noqa: PTH108
    except FileNotFoundError:
        pass
    specs = (RECORDS_COLUMNS, JOBS_COLUMNS, QUARANTINE_COLUMNS)
    tables = (parsed.records, parsed.jobs, parsed.quarantine)
    for name, spec, columns in zip(_PARSE_OUTPUTS, specs, tables, strict=True):
        write_table(_inside(out, name), spec, columns)
    write_text(summary_path, summary_json(parsed.summary))  # as json.dumps, without json
    if args.own_process:
        _no_collection_at_exit()
    return _report_parse(
        args, parsed.summary, parsed.job_flags, parsed.record_flags, torque_flag_meanings
    )


def _inside(folder: str, name: str) -> str:
    """Return ``str(Path(folder) / name)`` for a ``folder`` spelled as pathlib spells it."""
    from gridtrace._atomic import path_text

    return path_text(folder + name if folder.endswith("/") else f"{folder}/{name}")


def _no_collection_at_exit() -> None:
    """Keep every object of the process from the collections CPython makes at exit.

    At exit the interpreter collects all generations, several times: it traverses every object
    of every module loaded (~5% of a small parse). The `gridtrace` command's process that took
    the small path holds only standard-library and pure-Python objects, and its outputs are
    written and closed: freezing them (:func:`gc.freeze`) at exit loses nothing. A process that
    calls :func:`main` with arguments (a test, a workflow) is left as it is.
    """
    import atexit
    import gc

    atexit.register(gc.freeze)


def _cmd_parse(args: argparse.Namespace) -> int:
    small = _small_parse(args)
    if small is not None:
        return small
    _log.configure()  # the Arrow path's modules log through logging itself
    if _use_spill(args):
        return _cmd_parse_spill(args)
    if _torque_only(args):
        from gridtrace.logs._lazy_pandas import defer_pandas_check

        defer_pandas_check()  # before pyarrow's first conversion imports pandas (0.4 s)
    import json
    from pathlib import Path

    from gridtrace._atomic import write_parquet, write_text
    from gridtrace.logs import parse_logs
    from gridtrace.logs._registry import NOTHING_READ

    key = None
    if args.anonymize_key_file:  # the anonymiser imports pandas (0.4 s): only when asked for
        from gridtrace.logs._anonymize import read_key_file

        key = read_key_file(args.anonymize_key_file)
    with warnings.catch_warnings():
        # files that gave no record are said once, as errors, below
        warnings.filterwarnings("ignore", f".*: {NOTHING_READ}: ", DataQualityWarning)
        result = parse_logs(
            args.paths,
            format=args.format,
            site=args.site,
            tz=args.tz,
            errors=args.errors,
            workers=args.workers,
            processes=args.processes,
            scheduler=args.scheduler,
            progress=args.progress,
            split_bytes=args.split_bytes or None,
            spill_dir=args.spill_dir,
        )
    # imported here, not at the top: dataclasses loads inspect (~10 ms of a small parse)
    from dataclasses import replace

    result = replace(result, jobs=_vo_mapping(args).apply(result.jobs))
    if key is not None:  # after the VO rules, which read the real group names
        from gridtrace.logs._anonymize import anonymize_result

        result = anonymize_result(result, key, src_file=args.anonymize_src_file)
    summary = result.summary()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # the summary goes first and comes back last: a folder with a summary holds the complete
    # tables of that run, whenever a run over it was killed (each file is renamed into place)
    summary_path = out / "parse-summary.json"
    summary_path.unlink(missing_ok=True)
    tables = (result.records, result.jobs, result.quarantine)
    for name, table in zip(_PARSE_OUTPUTS, tables, strict=True):
        write_parquet(table, out / name)
    write_text(summary_path, json.dumps(summary, indent=2) + "\n")
    from gridtrace.logs._flags import flag_counts

    return _report_parse(args, summary, flag_counts(result.jobs), flag_counts(result.records))


def _report_parse(
    args: argparse.Namespace,
    summary: dict[str, Any],
    job_flags: dict[str, dict[str, int]],
    record_flags: dict[str, dict[str, int]],
    meanings_of: Callable[[str], dict[str, str]] | None = None,
) -> int:
    from gridtrace._atomic import path_text

    meanings = meanings_of or _flag_meanings
    out = path_text(args.out)  # str(Path(args.out)), without pathlib
    _say(
        f"{summary['lines_read']} lines read from {summary['files']} file(s): "
        f"{summary['lines_parsed']} parsed, {summary['lines_quarantined']} quarantined"
    )
    _say("records by type: " + _counts(summary["records_by_type"]))
    _say(f"{summary['jobs']} job attempts; by state: " + _counts(summary["jobs_by_state"]))
    for label, by_format in (("job flags", job_flags), ("record flags", record_flags)):
        # each row's flags are explained in its own format's words (readers share some names)
        for source_format, counts in by_format.items():
            _say(f"{label} ({source_format}):")
            for line in _flag_lines(counts, meanings(source_format)):
                _say(line)
    if summary["quarantine_reasons"]:
        _say("quarantined: " + _counts(_top(summary["quarantine_reasons"])))
    _say_input_findings(summary)
    _say_repairs(summary)
    for entry in _listed(summary.get("skipped", [])):
        _say(f"skipped {entry['path']}: {entry['why']}" if isinstance(entry, dict) else entry)
    _say(f"tables written to {out}/")
    failed = summary.get("files_failed", [])
    if failed:
        from gridtrace.logs._registry import NOTHING_READ

        for entry in failed:
            logger.error("%s: %s: %s", entry["file"], NOTHING_READ, entry["why"])
        logger.error(
            "%d of %d file(s) gave no record; the tables are written, their lines are in the "
            "quarantine table (exit status 1)",
            len(failed),
            summary["files"] + sum(not entry.get("lines_read") for entry in failed),
        )
        return 1
    return 0


def _flag_meanings(source_format: str) -> dict[str, str]:
    from gridtrace.logs import flag_meanings  # the registry: imported when used

    return flag_meanings(source_format)


def _flag_lines(counts: dict[str, int], meanings: dict[str, str]) -> list[str]:
    from gridtrace.logs._flags import describe_flag  # (not via gridtrace.logs: see _vo_mapping)

    width = max(len(flag) for flag in counts)
    return [
        f"  {flag:<{width}} {count:>9}  {describe_flag(flag, meanings) or '(unexplained)'}"
        for flag, count in counts.items()
    ]


def _top(counts: dict[str, int]) -> dict[str, int]:
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    top = dict(ranked[:_MOST_LISTED])
    if len(ranked) > _MOST_LISTED:
        top[f"and {len(ranked) - _MOST_LISTED} other reasons"] = sum(c for _, c in ranked[20:])
    return top


def _listed(entries: list[Any]) -> list[Any]:
    if len(entries) <= _MOST_LISTED:
        return entries
    more = len(entries) - _MOST_LISTED
    return [*entries[:_MOST_LISTED], f"... and {more} more (see parse-summary.json)"]


def _say_input_findings(summary: dict[str, Any]) -> None:
    found = summary.get("input", {})
    limits = found.get("limits", {})
    if found.get("lines_cut"):
        _say(
            f"{found['lines_cut']} line(s) longer than {limits['max_line_bytes']:,} bytes "
            "quarantined unparsed"
        )
    for entry in _listed(found.get("files_broken", []) + found.get("files_stopped", [])):
        if isinstance(entry, dict):
            _say(f"{entry['file']}:{entry['line']}: {entry['reason']}")
        else:
            _say(entry)


# what a reader repaired or set aside in the input as a whole (per-row choices are its flags)
_REPAIR_COUNTERS = {
    "files_reordered": "file(s) given out of time order, read in the order of their stamps",
    "duplicate_lines": "byte-identical copies of earlier lines, not used",
    "swf_duplicate_lines": "repeated job lines, not used",
    "gwf_duplicate_lines": "repeated job lines, not used",
    "sge_duplicates_folded": "repeated accounting records folded into one",
    "nul_bytes_stripped": "NUL bytes stripped from lines whose text was read",
    "nul_lines": "line(s) holding NUL bytes quarantined as fragments",
    "nul_bytes": "NUL bytes in those fragments",
    "truncated_records": "record(s) cut short, read as far as their fields allow",
    "truncated_end_records": "of them end (E) records, ended at their own stamp",
}


def _say_repairs(summary: dict[str, Any]) -> None:
    found = [
        f"{summary[key]} {words}"
        for key, words in _REPAIR_COUNTERS.items()
        if isinstance(summary.get(key), int) and summary[key] > 0
    ]
    if found:
        _say("input repairs: " + "; ".join(found))


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{key} {value}" for key, value in counts.items()) or "none"


def _help_width() -> int:
    """Return the width help is wrapped to: what ``shutil.get_terminal_size`` says, less 2.

    Asked here because argparse's formatter imports shutil for it, and shutil imports bz2, lzma
    and zlib (~5 ms of a small parse): ``$COLUMNS`` when a positive number, else the terminal's
    width, else 80 columns.
    """
    import os

    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return (columns or 80) - 2


class _Parser(argparse.ArgumentParser):
    """An argument parser whose help formatter is given its width (see :func:`_help_width`)."""

    def __init__(self, **options: Any) -> None:
        options.setdefault("formatter_class", partial(argparse.HelpFormatter, width=_help_width()))
        super().__init__(**options)


def _build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gridtrace",
        description="Parse grid/batch accounting logs, model workloads, simulate schedulers.",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    parser.add_argument("-q", "--quiet", action="store_true", help="only errors")
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="on an error, show the Python traceback instead of a one-line message",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    wanted = _command_named(sys.argv[1:] if argv is None else argv)
    for name, add in _COMMANDS.items():
        # a run builds its own command alone (all 150 options take ~15 ms to add, a tenth of
        # `gridtrace parse` on one day's file): its errors and help name no other command;
        # without a known command (--help, a typo) every command is built and listed
        if wanted in (None, name):
            add(commands)
    return parser


def _command_named(argv: Sequence[str]) -> str | None:
    """Return the command ``argv`` runs (its first word that is not an option), if known."""
    first = next((word for word in argv if not word.startswith("-")), None)
    return first if first in _COMMANDS else None


def _add_parse(commands: Any) -> None:
    parse = commands.add_parser(
        "parse",
        help="accounting logs -> records, jobs, quarantine",
        description="Parse accounting logs into records.parquet, jobs.parquet, "
        "quarantine.parquet and parse-summary.json in the output folder.",
        epilog="Each file's format is recognised from its content (unless --format is given); "
        "a folder's files are read in date order, its sub-folders, hidden files and files no "
        "format recognises are skipped and listed. Lines that cannot be read are quarantined, "
        "never lost: lines read = parsed + quarantined. Files are read under stated limits: a "
        "truncated compressed file is read up to the break, a line over 1 MiB is quarantined "
        "unparsed, a file whose 100,000-line window is over 99%% blank or NUL lines is stopped; "
        "each is one quarantine row, listed on the console and in the summary. The tables are "
        "written first and parse-summary.json last, each through a temporary file: a folder "
        "holding a summary holds the complete tables of that run. "
        "Exit status: 0 when every file gave records; 1 when the tables are written but some "
        "file gave none (every line quarantined, e.g. a wrong --format, or a named file no "
        "format recognises): those files are named on stderr and in files_failed of the "
        "summary; 2 on an error, with nothing written (a path that does not exist or cannot be "
        "read, a bad option, --errors raise at a bad line).",
    )
    parse.add_argument("paths", nargs="+", help="log files or directories of daily files")
    parse.add_argument("-o", "--out", required=True, help="output folder")
    parse.add_argument("--format", help="log format (default: recognised from the content)")
    parse.add_argument("--site", help="site name (default: the first path's name)")
    parse.add_argument("--tz", help="the site's IANA time zone (default: inferred)")
    parse.add_argument("--errors", choices=("raise", "warn", "skip"), default="warn")
    parse.add_argument(
        "--workers",
        type=int,
        default=1,
        help="files parsed at once (dask); with --spill, process workers for files and partitions",
    )
    parse.add_argument(
        "--processes", action="store_true", help="local workers as processes, not threads"
    )
    parse.add_argument(
        "--spill",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="assemble jobs out of core: records spilled to disk by job id, partitions "
        "assembled on --workers process workers (or on the dask cluster at --scheduler); "
        "memory bounded by the largest file and partition (TORQUE/PBS, Slurm, SGE, LSF; "
        "default: on for such input over 1 GiB, estimated uncompressed)",
    )
    parse.add_argument(
        "--partitions", type=int, help="with --spill: partitions (default: ~32 MiB of log each)"
    )
    parse.add_argument(
        "--spill-dir",
        help="folder for the spill files with --spill (default: the output folder), and for the "
        "tables process or scheduler workers hand back without --spill (default: the system's "
        "temporary folder); workers must see it at the same path",
    )
    parse.add_argument(
        "--scheduler",
        help="address of a running dask.distributed scheduler: the tasks run on its workers, "
        "which must see the files and --spill-dir at the same paths",
    )
    parse.add_argument(
        "--split-bytes",
        type=int,
        default=64 << 20,
        metavar="BYTES",
        help="with --workers above 1, --scheduler or --spill: a plain file larger than this is "
        "read as byte ranges of about this size, on several workers (TORQUE, SWF, GWF, Slurm, "
        "SGE; with --spill, Slurm and SGE; SWF jobs are also assembled there, range by range); "
        "0 never splits (default: 64 MiB)",
    )
    parse.add_argument("--vo-map", help="JSON file of VO rules (see gridtrace.logs.VOMapping)")
    parse.add_argument(
        "--vo", action="append", default=[], metavar="FIELD:PATTERN=VO", help="a VO rule"
    )
    parse.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=sys.stderr.isatty(),
        help="progress bar (default: on in a terminal)",
    )
    parse.add_argument(
        "--anonymize-key-file",
        metavar="FILE",
        help="pseudonymise names with the secret key in FILE (see 'gridtrace anonymize'); "
        "src_file and the summary then keep file names only, not their folders",
    )
    parse.add_argument(
        "--anonymize-src-file",
        choices=("name", "pseudonym"),
        default="name",
        help="with --anonymize-key-file: what src_file keeps of each path, the file's name "
        "(default) or a keyed pseudonym of it (f-..., for file names that name someone)",
    )
    parse.set_defaults(run=_cmd_parse)


def _add_elsewhere(name: str, commands: Any) -> None:
    """Add the options of command ``name``, kept in :mod:`gridtrace._cli_commands`."""
    from gridtrace import _cli_commands

    getattr(_cli_commands, f"add_{name}")(commands)


_COMMANDS: dict[str, Callable[[Any], None]] = {
    "parse": _add_parse,
    "anonymize": partial(_add_elsewhere, "anonymize"),
    "export": partial(_add_elsewhere, "export"),
    "trace": partial(_add_elsewhere, "trace"),
    "segment": partial(_add_elsewhere, "segment"),
    "fit": partial(_add_elsewhere, "fit"),
    "synth": partial(_add_elsewhere, "synth"),
    "simulate": partial(_add_elsewhere, "simulate"),
    "rl": partial(_add_elsewhere, "rl"),
    "ppo": partial(_add_elsewhere, "ppo"),
    "report": partial(_add_elsewhere, "report"),
    "index": partial(_add_elsewhere, "index"),
}
"""Each command and what adds its options to the parser, in the order help lists them."""


def _one_line(exc: BaseException) -> str:
    """Say what went wrong in one line, naming the file and what to do."""
    if isinstance(exc, PermissionError):
        return (
            f"{exc.filename}: permission denied; make the file readable (and its folder "
            "searchable) for this user, or leave it out"
        )
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        what = exc.strerror[:1].lower() + exc.strerror[1:]
        return f"{exc.filename}: {what}; check the path, or leave the file out"
    return " ".join(str(exc).split()) or type(exc).__name__


_DEBUG, _INFO, _ERROR = 10, 20, 40  # logging's levels, named here without importing it


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``gridtrace`` command line; return the exit status.

    Errors gridtrace expects (a :class:`~gridtrace.errors.GridtraceError`, a file that does not
    exist or cannot be read) end in one line on stderr, naming the file and what to do, and
    exit status 2; ``--traceback`` shows the Python traceback instead.
    """
    args = _build_parser(argv).parse_args(argv)
    args.own_process = argv is None  # the `gridtrace` command, not a call from Python code
    level = _ERROR if args.quiet else (_DEBUG if args.verbose else _INFO)
    # data-quality warnings read as log lines on the command line (logging.captureWarnings);
    # logging is configured (and imported) when something is first logged or warned, so that a
    # small parse that says nothing on stderr does not load it (see gridtrace._log)
    _log.defer_config(level, "%(levelname)s %(name)s: %(message)s")
    if args.run is not _cmd_parse:  # the other commands' modules log through logging itself
        _log.configure()
    try:
        status: int = args.run(args)
    except (GridtraceError, OSError) as exc:
        if args.traceback:
            raise
        logger.error("%s", _one_line(exc))
        return 2
    finally:
        _log.release()
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
