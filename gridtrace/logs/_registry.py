"""The registry of log formats, format detection, and parallel parsing of many files.

A format is two functions: one tokenises a single file into ``records`` (independent per file, so
it runs in parallel), the other assembles the records of all files into ``jobs``. Sites register
their own formats through the entry-point group ``gridtrace.log_formats`` (each entry point names a
:class:`LogFormat` object), or at run time with :func:`register_format`.

Registering a site's format without forking gridtrace: put the :class:`LogFormat` in a module of
an installable package and name it in that package's ``pyproject.toml``::

    [project.entry-points."gridtrace.log_formats"]
    mysite = "mysite_logs.format:MYSITE_FORMAT"

Once the package is installed (``pip install -e .``), ``gridtrace parse`` recognises its files
(``looks_like``), lists it in ``--format`` and parses it like a built-in format. Entry points are
loaded once, on the first use of the registry; one that does not name a :class:`LogFormat`, or
cannot be imported, is a :class:`ConfigError` naming it.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from gridtrace._log import library_logger
from gridtrace.errors import ConfigError, DataQualityWarning, UnknownFormatError
from gridtrace.logs._base import (
    ErrorPolicy,
    FileParse,
    ParseResult,
    apply_error_policy,
    check_error_policy,
    tokenize_guarded,
)
from gridtrace.logs._io import (
    LogFiles,
    StrPath,
    default_site_name,
    read_log_head,
    scan_log_paths,
)
from gridtrace.logs._ranges import DEFAULT_SPLIT_BYTES, AssembledFile, assembled_result

if TYPE_CHECKING:
    from gridtrace.logs._spill import SpilledParse

__all__ = [
    "LogFormat",
    "available_formats",
    "detect_format",
    "get_format",
    "parse_logs",
    "parse_logs_to",
    "register_format",
    "registered_formats",
]

logger = library_logger(__name__)

ENTRY_POINT_GROUP = "gridtrace.log_formats"

NOTHING_READ = "gave no record"
"""Words of the warning about a file none of whose lines became a record."""


class _Assemble(Protocol):
    def __call__(self, parts: Sequence[FileParse], *, tz: str | None = ...) -> ParseResult: ...


@dataclass(frozen=True)
class LogFormat:
    """A log format gridtrace can read.

    Attributes
    ----------
    name : str
        The name used with ``--format``.
    description : str
        One line for ``gridtrace parse --help``.
    looks_like : callable
        ``looks_like(head: bytes) -> bool`` on the first (decompressed) bytes of a file.
    tokenize_file : callable
        ``tokenize_file(path, *, site) -> FileParse``; must be a picklable module-level function.
        It should read the file with :func:`gridtrace.logs.read_log_bytes`: then compressed
        files are read for it, and :func:`parse_logs` (through
        :func:`gridtrace.logs.tokenize_guarded`) quarantines a broken stream's rest, over-long
        lines and garbage for it, within the limits every built-in format is read under.
    assemble : callable
        ``assemble(parts, *, tz) -> ParseResult``, given every file's records in reading order.
    aliases : tuple of str
        Other names accepted for the format.
    flags : mapping of str to str
        Every flag the format's reader can set on a row, with one line saying what it means
        (see :func:`gridtrace.logs.flag_meanings`).
    """

    name: str
    description: str
    looks_like: Callable[[bytes], bool]
    tokenize_file: Callable[..., FileParse]
    assemble: _Assemble
    aliases: tuple[str, ...] = ()
    flags: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


_FORMATS: dict[str, LogFormat] = {}
_entry_points_loaded = False


def register_format(log_format: LogFormat, *, replace: bool = False) -> None:
    """Make a format available to :func:`parse_logs` and ``gridtrace parse``.

    Raises
    ------
    ConfigError
        If the name or an alias is taken and ``replace`` is false.
    """
    for name in (log_format.name, *log_format.aliases):
        if name in _FORMATS and not replace and _FORMATS[name] is not log_format:
            msg = f"log format {name!r} is already registered; pass replace=True to override it"
            raise ConfigError(msg)
    for name in (log_format.name, *log_format.aliases):
        _FORMATS[name] = log_format


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from importlib.metadata import entry_points  # only when a plugin may be needed

    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            log_format = entry.load()
        except (ImportError, AttributeError) as exc:
            msg = f"entry point {entry.name!r} in {ENTRY_POINT_GROUP} ({entry.value}): {exc}"
            raise ConfigError(msg) from exc
        if not isinstance(log_format, LogFormat):
            msg = (
                f"entry point {entry.name!r} in {ENTRY_POINT_GROUP} ({entry.value}) is a "
                f"{type(log_format).__name__}, not a gridtrace LogFormat"
            )
            raise ConfigError(msg)
        register_format(log_format)


def registered_formats() -> list[LogFormat]:
    """Return the registered formats, each once, in the order they were registered."""
    _load_entry_points()
    return list({id(f): f for f in _FORMATS.values()}.values())


def available_formats() -> list[str]:
    """Names of the registered formats (aliases left out)."""
    _load_entry_points()
    return sorted({f.name for f in _FORMATS.values()})


def get_format(name: str) -> LogFormat:
    """Return the format registered under ``name`` or one of its aliases.

    Raises
    ------
    UnknownFormatError
        Naming the formats that are available.
    """
    if name not in _FORMATS:  # a plugin's, maybe: the built-in formats never need the plugins
        _load_entry_points()
    try:
        return _FORMATS[name]
    except KeyError:
        known = ", ".join(available_formats())
        msg = f"no reader for log format {name!r}; available: {known}"
        raise UnknownFormatError(msg) from None


def _recognise(head: bytes) -> str | None:
    # the built-in formats come first in the registry, so the plugins are loaded only when none
    # of them recognises the file (importlib.metadata costs a tenth of a day's `gridtrace parse`)
    for attempt in range(2):
        for log_format in {f.name: f for f in _FORMATS.values()}.values():
            if log_format.looks_like(head):
                return log_format.name
        if attempt or _entry_points_loaded:
            break
        _load_entry_points()
    return None


def detect_format(path: StrPath) -> str:
    """Recognise a file's format from its content (compression is undone first).

    Only the first 64 KiB of the decompressed content are read.

    Raises
    ------
    UnknownFormatError
        If no registered format recognises the file; pass the format explicitly then.
    OSError
        If the file cannot be read.
    """
    head, damaged = read_log_head(path)
    name = _recognise(head)
    if name is not None:
        return name
    known = ", ".join(available_formats())
    why = " (its compressed stream breaks early)" if damaged else ""
    msg = f"{path}: not recognised as any known log format ({known}){why}; name it with --format"
    raise UnknownFormatError(msg)


def _tokenize(log_format: str, path: str, site: str) -> FileParse:
    # module-level so dask can ship it to worker processes by reference; guarded, so that a
    # damaged or hostile file becomes quarantine rows, in the worker, like in this process
    chosen = get_format(log_format)
    return tokenize_guarded(chosen.tokenize_file, path, site=site, source_format=chosen.name)


@dataclass(frozen=True)
class _Plan:
    """Which format reads which file, and which files are not read."""

    groups: dict[str, list[str]]
    skipped: list[dict[str, str]]
    failed: list[dict[str, Any]]


def _plan(scan: LogFiles, given: list[StrPath], format: str | None) -> _Plan:
    skipped = [{"path": path, "why": why} for path, why in scan.skipped]
    files = [str(f) for f in scan.files]
    if format:
        return _Plan({get_format(format).name: files}, skipped, [])
    named = {str(Path(p)) for p in given}
    groups: dict[str, list[str]] = {}
    unsure: list[str] = []
    failed: list[dict[str, Any]] = []
    for path in files:
        head, damaged = read_log_head(path)
        name = _recognise(head)
        if name is not None:
            groups.setdefault(name, []).append(path)
        elif damaged or not head.strip():
            unsure.append(path)  # nothing to recognise: read as the other files are
        elif path in named:
            failed.append({"file": path, "why": "not recognised as any log format"})
        else:
            skipped.append({"path": path, "why": "not recognised as any log format"})
    if unsure:
        if groups:
            # the format most files have (the first seen on a tie)
            common = max(groups, key=lambda n: len(groups[n]))
            groups[common].extend(unsure)
            order = {path: i for i, path in enumerate(files)}
            groups[common].sort(key=order.__getitem__)
        else:
            for path in unsure:
                failed.append(
                    {"file": path, "why": "empty or damaged from its start: no format to read it"}
                )
    return _Plan(groups, skipped, failed)


def parse_logs(
    paths: StrPath | Iterable[StrPath],
    *,
    format: str | None = None,
    site: str | None = None,
    tz: str | None = None,
    errors: ErrorPolicy = "warn",
    workers: int = 1,
    processes: bool = False,
    scheduler: str | None = None,
    progress: bool = False,
    anonymize: bytes | None = None,
    split_bytes: int | None = DEFAULT_SPLIT_BYTES,
    spill_dir: StrPath | None = None,
) -> ParseResult:
    """Parse accounting logs of any registered format, one file (or byte range) per task.

    Each file's format is recognised from its own content (unless ``format`` is given), so a
    folder may mix formats: the files of each format are assembled together, and the tables of
    all formats are concatenated (``info["by_format"]`` then holds each format's summary). A
    file whose content is empty or damaged from its first bytes is read as the format most other
    files have. What is not read is said in ``info``:

    ``info["skipped"]``
        Entries of the folders given that are not read, with why: sub-folders (folders are not
        read recursively), hidden files, files no format recognises.
    ``info["files_failed"]``
        Files that gave nothing: no line of them became a record (every line quarantined — a
        wrong ``format`` does that), or, named explicitly, no format recognises them. With
        ``errors="warn"`` each is also a :class:`~gridtrace.errors.DataQualityWarning`;
        ``gridtrace parse`` exits with status 1 when there are any.

    Every file is read under the limits of :mod:`gridtrace.logs._io`, through
    :func:`~gridtrace.logs._base.tokenize_guarded`: a truncated compressed file gives its lines
    up to the break and one quarantine row for the rest; over-long lines and garbage are
    quarantined, and a file that is mostly garbage is stopped.

    Parameters
    ----------
    paths : path or iterable of paths
        Files and directories (a directory contributes its files in date order).
    format : str, optional
        The format of every file; recognised from each file's content when omitted.
    site : str, optional
        Site name; defaults to the first path's name up to its first dot.
    tz : str, optional
        The site's IANA time zone, for records that carry only a local stamp.
    errors : {"raise", "warn", "skip"}, default "warn"
        What to do with unreadable lines; they are quarantined and counted in every case.
    workers : int, default 1
        Files tokenised at once by a local dask.distributed cluster; 1 parses in this process
        without dask.
    processes : bool, default False
        Run the local workers as processes instead of threads. A process worker does not send
        its records back through dask: it writes each task's ``records`` and ``quarantine`` to
        Arrow IPC files in a temporary folder (see ``spill_dir``), and this process maps them
        (no copy) and concatenates them in order.
    scheduler : str, optional
        Address of an existing ``dask.distributed`` scheduler; overrides ``workers``. Its workers
        hand their tables over through files as process workers do, so every worker must see
        ``spill_dir`` at the same path as this process (one machine, or a shared file system).
    progress : bool, default False
        Show a progress bar over the files.
    anonymize : bytes, optional
        A secret key: user, group, account, job and host names in ``jobs`` and ``records`` are
        replaced by keyed pseudonyms, raw line bytes are dropped and ``src_file`` keeps the file
        name only (see :func:`gridtrace.logs.anonymize_table`). Map VOs from group names before
        anonymising: parse without the key, apply the :class:`~gridtrace.logs.VOMapping`, then
        anonymise.
    split_bytes : int or None, default 64 MiB
        On dask (``workers`` above 1 or ``scheduler``), a plain TORQUE, SWF, GWF, Slurm or SGE
        file larger than this is read as byte ranges of about this size, a task each (see
        :mod:`gridtrace.logs._ranges`); None never splits. Once an SWF file is split, every SWF
        file's jobs are assembled on the workers too, range by range (the same tables); the
        other formats are assembled here.
    spill_dir : path, optional
        Where process workers and the workers of ``scheduler`` write each task's tables: a
        temporary folder is made in it, and removed before this call returns, whether it
        succeeds or fails. Default: the system's temporary folder (on one machine), which a
        ``scheduler``'s workers on other machines do not see: give a folder of a shared file
        system there. The tables returned may map the files, deleted: their disk space is freed
        when the tables are.

    Returns
    -------
    ParseResult
        The tables and reconciled counts.

    Raises
    ------
    FileNotFoundError
        If a path does not exist, or the paths hold no file.
    UnknownFormatError
        If ``format`` names no registered format, or no file is recognised.
    LogParseError
        With ``errors="raise"``, at the first unreadable line.
    OSError
        If a file cannot be read.
    """
    policy = check_error_policy(errors)
    if anonymize is not None:
        from gridtrace.logs._anonymize import check_key

        check_key(anonymize)  # refuse an empty key before reading anything
    if workers < 1:
        msg = f"workers must be at least 1, not {workers}"
        raise ConfigError(msg)
    if split_bytes is not None and split_bytes < 1:
        msg = f"split_bytes must be at least 1 (or None: never split), not {split_bytes}"
        raise ConfigError(msg)
    given = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    scan = scan_log_paths(given)
    site = site or default_site_name(given)
    if not scan.files:
        passed = "".join(f"; {path} skipped: {why}" for path, why in scan.skipped)
        msg = f"no log files under {', '.join(str(p) for p in given)}{passed}"
        raise FileNotFoundError(msg)
    plan = _plan(scan, given, format)
    if not plan.groups:
        known = ", ".join(available_formats())
        names = ", ".join(f["file"] for f in plan.failed) or "none"
        msg = (
            f"no file is recognised as a log format ({known}): {names}; "
            "name the format with --format"
        )
        raise UnknownFormatError(msg)
    tasks = [(name, path) for name, group in plan.groups.items() for path in group]
    split: dict[str, int] | None = None
    if scheduler is None and workers == 1:
        parts = _tokenize_here(tasks, site, progress)
    else:
        parts, split = _tokenize_with_dask(
            tasks, site, workers, processes, scheduler, progress, split_bytes, spill_dir
        )
    parts = [apply_error_policy(part, policy) for part in parts]
    failed = list(plan.failed)
    for (name, path), part in zip(tasks, parts, strict=True):
        if part.lines_read and not part.records.num_rows:
            failed.append(_nothing_read(name, path, part, forced=bool(format)))
    results: dict[str, ParseResult] = {}
    for name, group in plan.groups.items():
        mine = [part for (owner, _), part in zip(tasks, parts, strict=True) if owner == name]
        done = [part for part in mine if isinstance(part, AssembledFile)]
        if mine and len(done) == len(mine):
            results[name] = assembled_result(name, done)  # assembled on the workers, by ranges
        else:
            results[name] = get_format(name).assemble(mine, tz=tz)
        del group
    result = _combine(results)
    info = {**result.info, "skipped": plan.skipped, "files_failed": failed}
    if split is not None:
        info["byte_ranges"] = split
    result = dataclasses.replace(result, info=info)
    if policy == "warn":
        for entry in failed:
            message = f"{entry['file']}: {NOTHING_READ}: {entry['why']}"
            warnings.warn(message, DataQualityWarning, stacklevel=2)
    if anonymize is not None:
        from gridtrace.logs._anonymize import anonymize_result

        result = anonymize_result(result, anonymize)
    return result


SUMMARY_NAME = "parse-summary.json"
OUTPUT_NAMES = ("records.parquet", "jobs.parquet", "quarantine.parquet")


def parse_logs_to(
    paths: StrPath | Iterable[StrPath],
    out_dir: StrPath,
    *,
    format: str | None = None,
    site: str | None = None,
    tz: str | None = None,
    errors: ErrorPolicy = "warn",
    workers: int = 1,
    partitions: int | None = None,
    spill_dir: StrPath | None = None,
    jobs_transform: Callable[[pa.Table], pa.Table] | None = None,
    scheduler: str | None = None,
    split_bytes: int | None = DEFAULT_SPLIT_BYTES,
) -> SpilledParse:
    """Parse logs out of core: the tables of :func:`parse_logs`, written to ``out_dir``.

    Records are spilled to disk by job and each partition is assembled on its own (see
    :mod:`gridtrace.logs._spill`), so memory is bounded by the largest file and the largest
    partition, not by the input. ``records.parquet``, ``jobs.parquet`` and ``quarantine.parquet``
    hold the rows, values and order :func:`parse_logs` gives, written by row groups, each through
    a temporary file renamed into place; ``parse-summary.json`` (the keys and counts of
    :meth:`ParseResult.summary`, with ``skipped`` and ``files_failed``) is removed before the
    tables are written and written last, so a folder with a summary holds the complete tables
    of that run (an error while reading, ``errors="raise"`` at a bad line, leaves the folder as
    it was).

    Parameters
    ----------
    paths : path or iterable of paths
        Files and directories, as for :func:`parse_logs`.
    out_dir : path
        The output folder (created if missing).
    format, site, tz, errors
        As for :func:`parse_logs`.
    workers : int, default 1
        Process workers for the per-file and per-partition tasks; 1 runs them here.
    partitions : int, optional
        Partitions of the records (default from the input size: about 64 MiB of records each
        for Slurm, SGE and LSF, whose records per byte of text are known, 32 MiB of text each
        for the others).
    spill_dir : path, optional
        Where the temporary spill folder goes (default: inside ``out_dir``).
    jobs_transform : callable, optional
        Applied to each row group of ``jobs`` before it is written (e.g. a VO mapping's apply).
    scheduler : str, optional
        Address of a ``dask.distributed`` scheduler: the per-file and per-partition tasks run on
        its workers instead of a local process pool (``workers`` is then ignored). The workers
        must see the input files and ``spill_dir`` at the same paths (a shared file system).
    split_bytes : int or None, default 64 MiB
        A plain Slurm or SGE file larger than this is spilled by byte ranges of about this size
        (see :func:`~gridtrace.logs._spill.spill_parse`); None never splits.

    Returns
    -------
    SpilledParse
        Its ``summary`` is what was written to ``parse-summary.json``.

    Raises
    ------
    ConfigError
        If a format read has no out-of-core assembly (TORQUE/PBS, Slurm, SGE and LSF have), or
        for bad ``workers``.
    FileNotFoundError, UnknownFormatError, LogParseError, OSError
        As :func:`parse_logs`.
    """
    from gridtrace.logs._spill import started_workers

    # the workers start (a fresh interpreter each) while this process lists the files and
    # imports the format's reader
    with started_workers(workers, scheduler):
        return _parse_logs_to(
            paths,
            out_dir,
            format=format,
            site=site,
            tz=tz,
            errors=errors,
            workers=workers,
            partitions=partitions,
            spill_dir=spill_dir,
            jobs_transform=jobs_transform,
            scheduler=scheduler,
            split_bytes=split_bytes,
        )


def _parse_logs_to(
    paths: StrPath | Iterable[StrPath],
    out_dir: StrPath,
    *,
    format: str | None,
    site: str | None,
    tz: str | None,
    errors: ErrorPolicy,
    workers: int,
    partitions: int | None,
    spill_dir: StrPath | None,
    jobs_transform: Callable[[pa.Table], pa.Table] | None,
    scheduler: str | None,
    split_bytes: int | None,
) -> SpilledParse:
    import json

    from gridtrace._atomic import write_text
    from gridtrace.logs._spill import spill_format, spill_parse

    policy = check_error_policy(errors)
    given = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    scan = scan_log_paths(given)
    site = site or default_site_name(given)
    if not scan.files:
        passed = "".join(f"; {path} skipped: {why}" for path, why in scan.skipped)
        msg = f"no log files under {', '.join(str(p) for p in given)}{passed}"
        raise FileNotFoundError(msg)
    plan = _plan(scan, given, format)
    if len(plan.groups) != 1:
        names = ", ".join(plan.groups) or "none recognised"
        msg = f"out-of-core parsing reads one format at a time; these files are {names}"
        raise (ConfigError if plan.groups else UnknownFormatError)(msg)
    ((name, files),) = plan.groups.items()
    spill_format(name)  # refuse a format without out-of-core assembly before reading
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary_path = out / SUMMARY_NAME
    result = spill_parse(
        name,
        files,
        out,
        site=site,
        tz=tz,
        errors=policy,
        workers=workers,
        partitions=partitions,
        spill_dir=spill_dir,
        jobs_transform=jobs_transform,
        remove_first=[SUMMARY_NAME],
        scheduler=scheduler,
        split_bytes=split_bytes,
    )
    failed = list(plan.failed)
    for part in result.failed_parts:
        failed.append(_nothing_read(name, part.src_file, part, forced=bool(format)))
    summary = {**result.summary, "skipped": plan.skipped, "files_failed": failed}
    if policy == "warn":
        for entry in failed:
            message = f"{entry['file']}: {NOTHING_READ}: {entry['why']}"
            warnings.warn(message, DataQualityWarning, stacklevel=2)
    result = dataclasses.replace(result, summary=summary)
    write_text(summary_path, json.dumps(summary, indent=2) + "\n")
    return result


def _nothing_read(name: str, path: str, part: FileParse, *, forced: bool) -> dict[str, Any]:
    first = part.quarantine.slice(0, 1).to_pylist()
    because = f" (first: line {first[0]['src_line']}, {first[0]['reason']})" if first else ""
    why = f"none of its {part.lines_read:,} lines could be read as {name}{because}"
    if forced:
        head, _ = read_log_head(path)
        seen = _recognise(head)
        if seen is not None and seen != name:
            why += f"; it looks like {seen}: leave out --format, or give --format {seen}"
        else:
            why += f"; is it a {name} log?"
    return {"file": path, "format": name, "lines_read": part.lines_read, "why": why}


def _combine(results: dict[str, ParseResult]) -> ParseResult:
    """One result of several formats: tables concatenated, a summary per format in info."""
    if len(results) == 1:
        return next(iter(results.values()))
    values = list(results.values())

    def concat(tables: list[pa.Table]) -> pa.Table:
        return pa.concat_tables([t.replace_schema_metadata(None) for t in tables])

    offsets = {r.tz_offset_s for r in values}
    return ParseResult(
        records=concat([r.records for r in values]),
        jobs=concat([r.jobs for r in values]),
        quarantine=concat([r.quarantine for r in values]),
        files=tuple(f for r in values for f in r.files),
        lines_read=sum(r.lines_read for r in values),
        tz_offset_s=offsets.pop() if len(offsets) == 1 else None,
        info={
            "format": "+".join(results),
            "by_format": {name: r.summary() for name, r in results.items()},
        },
    )


def _progress(iterable: Iterable[Any], total: int, enabled: bool) -> Iterable[Any]:
    if not enabled:
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, total=total, unit="file", desc="parsing")


def _tokenize_here(tasks: list[tuple[str, str]], site: str, progress: bool) -> list[FileParse]:
    return [_tokenize(name, path, site) for name, path in _progress(tasks, len(tasks), progress)]


def _tokenize_with_dask(
    tasks: list[tuple[str, str]],
    site: str,
    workers: int,
    processes: bool,
    scheduler: str | None,
    progress: bool,
    split_bytes: int | None = None,
    spill_dir: StrPath | None = None,
) -> tuple[list[FileParse], dict[str, int] | None]:
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError:
        msg = "parallel parsing needs dask.distributed: pip install 'gridtrace[dask]'"
        raise ConfigError(msg) from None
    # threads share this process: their tables come back as they are; processes, and the
    # workers of a scheduler (other processes, maybe other machines), hand them over in files
    folder = _task_folder(spill_dir) if processes or scheduler is not None else None
    cluster = None
    try:
        if scheduler is not None:
            client = Client(scheduler)
        else:
            with dask.config.set(_OWN_WORKERS_ENVIRON):
                cluster = LocalCluster(
                    n_workers=workers if processes else 1,
                    threads_per_worker=1 if processes else workers,
                    processes=processes,
                    dashboard_address=":0",  # any free port: None means 8787, taken by any other
                )
            client = Client(cluster)
        try:
            return _tokenize_on(client, tasks, site, progress, split_bytes, folder)
        finally:
            client.close()
    finally:
        if cluster is not None:
            cluster.close()  # its workers are gone: none can write in the folder any more
        if folder is not None:
            _remove_folder(folder)


_OWN_WORKERS_ENVIRON = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}
"""The worker processes gridtrace starts itself keep glibc's own malloc thresholds.

A dask nanny starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536`` by default, so that they
give freed memory back at once; glibc then also maps every block of 128 KiB or more apart and
unmaps it on release, so a range's columns are faulted in and zeroed afresh each time (540-630k
page faults per worker on a 2M-line SWF file, against 130-190k without the variable, and about a
quarter more CPU, measured at a load average of 10-12). Only the local cluster ``parse_logs``
starts is spawned without it (a ``MALLOC_TRIM_THRESHOLD_`` in the user's environment is still
inherited); the workers of a scheduler given by address are the user's and left as they are.
"""


TASK_FOLDER_PREFIX = ".gridtrace-tasks-"
"""Name start of the temporary folder where workers write their tasks' tables."""


def _task_folder(spill_dir: StrPath | None) -> str:
    """Make the temporary folder for the tasks' tables, in ``spill_dir`` or the system's."""
    base = Path(spill_dir) if spill_dir is not None else Path(tempfile.gettempdir())
    base.mkdir(parents=True, exist_ok=True)
    # absolute: a worker's working folder need not be this process's
    return tempfile.mkdtemp(prefix=TASK_FOLDER_PREFIX, dir=base.absolute())


def _remove_folder(folder: str) -> None:
    """Remove the tasks' folder; again if a late task wrote in it while it was being removed.

    A task of a scheduler's worker keeps running after this process gave up on it (an error in
    another task); it cannot make the folder again (workers never create it), but a file it
    opens during the removal stops the folder's own removal.
    """
    for _ in range(3):
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.lexists(folder):
            return
    logger.warning("%s: could not remove this temporary folder", folder)


@dataclass(frozen=True)
class _Handed:
    """What a worker sends back for one task: where its tables are, and their counts."""

    src_file: str
    records: str
    quarantine: str
    records_rows: int
    quarantine_rows: int
    lines_read: int


def _write_table(path: Path, table: pa.Table) -> None:
    # uncompressed Arrow IPC: this process maps the file and reads it without a copy
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def _hand_over(
    folder: str, index: int, function: Callable[..., FileParse], args: tuple[Any, ...]
) -> _Handed:
    """Run a task on a worker; write its tables to ``folder``, return where and how many."""
    where = Path(folder)
    if not where.is_dir():  # never made here: a worker that does not see it says so
        import socket

        msg = (
            f"{folder}: the folder where workers write their tables is not seen by a worker "
            f"on {socket.gethostname()}; give parse_logs a spill_dir on a file system every "
            "worker shares (the same path on every machine)"
        )
        raise ConfigError(msg)
    part = function(*args)
    paths = [where / f"task-{index:06d}.{table}.arrow" for table in ("records", "quarantine")]
    _write_table(paths[0], part.records)
    _write_table(paths[1], part.quarantine)
    return _Handed(
        part.src_file,
        str(paths[0]),
        str(paths[1]),
        part.records.num_rows,
        part.quarantine.num_rows,
        part.lines_read,
    )


def _map_table(path: str, rows: int) -> pa.Table:
    """Map the table a worker wrote (no copy), and delete its file: the mapping stays."""
    with pa.memory_map(path) as source:
        table = pa.ipc.open_file(source).read_all()
    Path(path).unlink()  # its pages stay mapped while the table lives
    if table.num_rows != rows:
        msg = f"{path}: {table.num_rows} rows where the worker wrote {rows}"
        raise OSError(msg)
    return table


def _take_over(handed: _Handed) -> FileParse:
    """Return the :class:`FileParse` of a task a worker wrote (see :func:`_hand_over`)."""
    return FileParse(
        handed.src_file,
        _map_table(handed.records, handed.records_rows),
        _map_table(handed.quarantine, handed.quarantine_rows),
        handed.lines_read,
    )


def _on_client(
    client: Any, function: Callable[..., Any], calls: list[tuple[Any, ...]], progress: bool
) -> list[Any]:
    """Run ``function`` over ``calls`` on the cluster; the results in the calls' order.

    At the first failed call the others are cancelled and its error is raised.
    """
    from distributed import as_completed

    futures = [client.submit(function, *args, pure=False) for args in calls]
    position = {future.key: i for i, future in enumerate(futures)}
    results: list[Any] = [None] * len(calls)
    try:
        for future in _progress(as_completed(futures), len(futures), progress):
            results[position[future.key]] = future.result()
            future.release()
    except BaseException:
        client.cancel(futures)
        raise
    return results


def _tokenize_on(
    client: Any,
    tasks: list[tuple[str, str]],
    site: str,
    progress: bool,
    split_bytes: int | None,
    folder: str | None = None,
) -> tuple[list[FileParse], dict[str, int] | None]:
    """Tokenise every file on the cluster, a big plain file as several byte-range tasks.

    With ``folder``, each task's tables come back through files in it (:func:`_hand_over`),
    not through dask. The files of a format in :data:`~gridtrace.logs._ranges.WORKER_ASSEMBLED`
    are also assembled on the workers once one of them is split
    (:class:`~gridtrace.logs._ranges.RangeAssembly`): they come back as
    :class:`~gridtrace.logs._ranges.AssembledFile`, jobs included.
    """
    from distributed import Future, wait

    from gridtrace.logs._ranges import (
        WORKER_ASSEMBLED,
        RangeAssembly,
        RangeCounts,
        join_ranges,
        plan_ranges,
        range_seed,
    )

    def run(function: Callable[..., Any], calls: list[tuple[Any, ...]]) -> list[Any]:
        return _on_client(client, function, calls, False)

    submitted: list[Any] = []  # the assemblies' futures: cancelled at the first error
    located: dict[Any, list[str]] = {}  # where finished futures' results are held

    def submit(function: Callable[..., Any], *args: Any) -> Any:
        # a task using a range's tables runs on the worker holding them, never moves them
        held = next((a for a in args if isinstance(a, Future)), None)
        near: dict[str, Any] = {}
        if held is not None:
            if held.key not in located:
                wait([held])
                # one call for every future finished by now: the next ones are known here
                done = [f for f in submitted if f.done() and f.key not in located]
                for key, where in client.who_has([held, *done]).items():
                    located[key] = list(where)
            where = located.get(held.key, [])
            if where:
                near = {"workers": where, "allow_other_workers": True}  # if it is lost
        future = client.submit(function, *args, pure=False, **near)
        submitted.append(future)
        return future

    counts = RangeCounts()
    planned: list[tuple[list[Any], str | None]] = []
    threads = max(1, sum(client.nthreads().values()))
    for name, path in tasks:
        why_not: str | None = "small"
        ranges: list[Any] = []
        if split_bytes is not None:
            ranges, why_not = plan_ranges(name, path, split_bytes, share_by=threads)
            counts.add(ranges, why_not)
        planned.append((ranges, why_not))
    # a format assembled on the workers: every file of it, once one of them is split
    on_workers = {
        name
        for (name, _), (_, why_not) in zip(tasks, planned, strict=True)
        if why_not is None and name in WORKER_ASSEMBLED
    }
    calls: list[tuple[Callable[..., FileParse], tuple[Any, ...]]] = []
    owners: list[int] = []  # the task (file) of each call
    for i, ((name, path), (ranges, why_not)) in enumerate(zip(tasks, planned, strict=True)):
        if name in on_workers:
            continue
        if why_not is not None:
            calls.append((_tokenize, (name, path, site)))
            owners.append(i)
            continue
        seed = range_seed(name, ranges, site, run)
        for rng in ranges:
            calls.append((_tokenize_range, (name, rng, site, seed)))
            owners.append(i)
    assemblies: list[tuple[list[int], RangeAssembly]] = []
    first_task = len(calls)
    for name in sorted(on_workers):
        mine = [i for i, (owner, _) in enumerate(tasks) if owner == name]
        files = [(tasks[i][1], planned[i][0] if planned[i][1] is None else None) for i in mine]
        seeds = [None if r is None else range_seed(name, r, site, run) for _, r in files]
        assembly = RangeAssembly(
            name, files, site, seeds, submit, client.gather, folder, first_task
        )
        assemblies.append((mine, assembly))
        first_task += sum(1 if r is None else len(r) for _, r in files)
    pieces: list[list[FileParse]] = [[] for _ in tasks]
    try:
        if folder is None:
            results: list[FileParse] = _on_client(client, _call, calls, progress)
        else:
            handed_calls = [(folder, k, f, args) for k, (f, args) in enumerate(calls)]
            handed: list[_Handed] = _on_client(client, _hand_over, handed_calls, progress)
            results = [_take_over(h) for h in handed]
        for mine, assembly in assemblies:
            for i, done in zip(mine, assembly.finish(), strict=True):
                pieces[i].append(done)
        if folder is not None:
            taken = len(calls) + sum(assembly.ranges_assembled for _, assembly in assemblies)
            logger.debug("%d tasks' tables taken over from %s", taken, folder)
    except BaseException:
        client.cancel(submitted)
        raise
    for owner, part in zip(owners, results, strict=True):
        pieces[owner].append(part)
    # reading order is the files' order, and a file's ranges its own, whatever order they came in
    parts = [join_ranges(mine) for mine in pieces]
    if split_bytes is None or not counts.worth_saying:
        return parts, None
    return parts, counts.as_dict(split_bytes)


def _call(function: Callable[..., FileParse], args: tuple[Any, ...]) -> FileParse:
    return function(*args)


def _tokenize_range(name: str, rng: Any, site: str, seed: Any) -> FileParse:
    # module-level, like _tokenize: the range's rows, its read findings included
    from gridtrace.logs._ranges import tokenize_range

    return tokenize_range(name, rng, site, seed)


@dataclass(frozen=True)
class _Deferred:
    """A built-in reader's function, imported from its module on the first call.

    A format's module imports what its reader needs (pandas for some); ``gridtrace parse`` of a
    TORQUE file should import none of the other readers' modules. Picklable, like the function.
    """

    module: str
    name: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(self.module), self.name)(*args, **kwargs)


class _DeferredFlags(Mapping[str, str]):
    """A built-in reader's ``FLAGS``, imported from its module on the first look."""

    def __init__(self, module: str) -> None:
        self._module = module

    def _flags(self) -> Mapping[str, str]:
        flags: Mapping[str, str] = importlib.import_module(self._module).FLAGS
        return flags

    def __getitem__(self, key: str) -> str:
        return self._flags()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._flags())

    def __len__(self) -> int:
        return len(self._flags())


def _builtin(
    short: str, description: str, aliases: tuple[str, ...] = (), *, recognise_in: str = ""
) -> LogFormat:
    module = f"gridtrace.logs._{short}"
    return LogFormat(
        name=short,
        description=description,
        looks_like=_Deferred(recognise_in or module, f"looks_like_{short}"),
        tokenize_file=_Deferred(module, f"tokenize_{short}_file"),
        assemble=_Deferred(module, f"assemble_{short}"),
        flags=_DeferredFlags(module),
        aliases=aliases,
    )


register_format(
    _builtin(
        "torque",
        "TORQUE / OpenPBS / PBS Pro server accounting logs (daily files)",
        ("pbs", "pbspro", "openpbs"),
        recognise_in="gridtrace.logs._torque_lines",  # recognising a file imports no more
    )
)

register_format(
    _builtin(
        "swf",
        "Standard Workload Format (Parallel Workloads Archive, v2.2)",
    )
)

register_format(
    _builtin(
        "gwf",
        "Grid Workloads Format (Grid Workloads Archive text files, 29 columns)",
    )
)

register_format(
    _builtin(
        "slurm",
        "Slurm sacct --parsable2 dumps (XDMoD 26-field layout, or with a header line)",
        ("sacct",),
    )
)

register_format(
    _builtin(
        "sge",
        "Grid Engine accounting files (SGE 6.x, Son of Grid Engine 8.1.x, Univa GE)",
        ("uge", "gridengine"),
    )
)

register_format(
    _builtin(
        "lsf",
        "IBM Spectrum LSF lsb.acct JOB_FINISH records (LSF 7-10; lsb.events kept)",
        ("lsb.acct",),
    )
)

register_format(
    _builtin(
        "htcondor",
        "HTCondor job history as written by condor_history -json or -jsonl",
        ("condor",),
    )
)
