"""A site's own log format, registered through the ``gridtrace.log_formats`` entry-point group."""

from __future__ import annotations

import gzip
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow.compute as pc
import pytest

from gridtrace.errors import ConfigError
from gridtrace.logs import _registry, available_formats, detect_format, parse_logs

FORMAT_MODULE = '''
"""A toy site format: lines 'SITEJOB <id> <user> <run seconds>'."""

import pyarrow as pa

from gridtrace.logs import FileParse, LogFormat, ParseResult, read_log_bytes
from gridtrace.schema import QUARANTINE, RECORDS, conform


def looks_like(head: bytes) -> bool:
    return head.startswith(b"SITEJOB ")


def tokenize(path, *, site):
    lines = read_log_bytes(path).split(b"\\n")
    if lines[-1] == b"":
        lines.pop()
    good, bad = [], []
    for number, line in enumerate(lines, 1):
        words = line.decode().split()
        row = {"site": site, "source_format": "sitefmt", "src_file": str(path),
               "src_line": number}
        if len(words) == 4 and words[0] == "SITEJOB":
            good.append({**row, "record_type": "J", "job_id_raw": words[1],
                         "attrs": [("user", words[2]), ("run", words[3])]})
        else:
            bad.append({**row, "reason": "not a SITEJOB line", "raw": line})
    return FileParse(
        src_file=str(path),
        records=conform(pa.Table.from_pylist(good, schema=RECORDS), "records"),
        quarantine=pa.Table.from_pylist(bad, schema=QUARANTINE),
        lines_read=len(lines),
    )


def assemble(parts, *, tz=None):
    records = pa.concat_tables([p.records for p in parts])
    attrs = [dict(a) for a in records.column("attrs").to_pylist()]
    jobs = conform(pa.table({
        "site": records.column("site"),
        "source_format": records.column("source_format"),
        "job_key": records.column("job_id_raw"),
        "job_id_raw": records.column("job_id_raw"),
        "attempt": pa.array([0] * records.num_rows, pa.int16()),
        "n_attempts": pa.array([1] * records.num_rows, pa.int16()),
        "user": [a["user"] for a in attrs],
        "run_s": pa.array([int(a["run"]) for a in attrs], pa.int64()),
        "state": ["COMPLETED"] * records.num_rows,
        "src_file": records.column("src_file"),
        "src_line": records.column("src_line"),
    }), "jobs")
    return ParseResult(
        records=records,
        jobs=jobs,
        quarantine=pa.concat_tables([p.quarantine for p in parts]),
        files=tuple(p.src_file for p in parts),
        lines_read=sum(p.lines_read for p in parts),
        info={"format": "sitefmt"},
    )


SITE_FORMAT = LogFormat(
    name="sitefmt",
    description="the toy format of a test site",
    looks_like=looks_like,
    tokenize_file=tokenize,
    assemble=assemble,
    aliases=("sitefmt-v1",),
)

NOT_A_FORMAT = {"name": "sitefmt"}
'''


def _fake_distribution(folder: Path, module: str, target: str) -> None:
    """Write an installed-looking distribution: a module and its ``*.dist-info`` metadata."""
    (folder / f"{module}.py").write_text(FORMAT_MODULE)
    info = folder / f"{module}_site-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}-site\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        textwrap.dedent(
            f"""\
            [gridtrace.log_formats]
            sitefmt = {module}:{target}
            """
        )
    )


@contextmanager
def _fresh_registry(module: str) -> Iterator[None]:
    """Let the registry load entry points again; restore it and drop the toy module after."""
    # the state to come back to: the entry points installed before the toy one, loaded
    _registry._load_entry_points()
    saved_formats = dict(_registry._FORMATS)
    saved_loaded = _registry._entry_points_loaded
    _registry._entry_points_loaded = False
    try:
        yield
    finally:
        _registry._FORMATS.clear()
        _registry._FORMATS.update(saved_formats)
        _registry._entry_points_loaded = saved_loaded
        sys.modules.pop(module, None)


def test_entry_point_format_is_listed_detected_and_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = "gridtrace_test_sitefmt_ok"
    _fake_distribution(tmp_path, module, "SITE_FORMAT")
    log = tmp_path / "site.log"
    log.write_bytes(b"SITEJOB 1 alice 60\nSITEJOB 2 bob 3600\nnoise\n")
    with _fresh_registry(module):
        monkeypatch.syspath_prepend(str(tmp_path))
        assert "sitefmt" in available_formats()
        assert "torque" in available_formats()  # the built-in formats stay
        assert _registry.get_format("sitefmt-v1").name == "sitefmt"
        assert detect_format(log) == "sitefmt"
        result = parse_logs(log, errors="skip")
        assert result.info == {"format": "sitefmt", "skipped": [], "files_failed": []}
        assert result.jobs.column("user").to_pylist() == ["alice", "bob"]
        assert result.jobs.column("run_s").to_pylist() == [60, 3600]
        assert (result.lines_read, result.lines_parsed, result.lines_quarantined) == (3, 2, 1)
        assert result.quarantine.column("src_line").to_pylist() == [3]
    assert "sitefmt" not in available_formats()  # the registry is as it was


def test_a_plugin_format_gets_the_guarded_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin reading its files with read_log_bytes gets a truncated .gz quarantined too."""
    module = "gridtrace_test_sitefmt_guard"
    _fake_distribution(tmp_path, module, "SITE_FORMAT")
    folder = tmp_path / "logs"
    folder.mkdir()
    lines = b"".join(b"SITEJOB %d alice 60\n" % i for i in range(20_000))
    (folder / "1.log").write_bytes(b"SITEJOB 1 bob 10\n")
    packed = gzip.compress(lines, mtime=0)
    (folder / "2.log.gz").write_bytes(packed[: len(packed) // 2])
    with _fresh_registry(module):
        monkeypatch.syspath_prepend(str(tmp_path))
        result = parse_logs(folder, errors="skip")
    assert result.lines_read == result.lines_parsed + result.lines_quarantined
    assert 1 < result.lines_parsed < 20_001  # the good file and the readable part of the other
    broken = pc.starts_with(result.quarantine["reason"], "compressed stream broken")
    (tail,) = result.quarantine.filter(broken).to_pylist()
    assert tail["src_file"] == str(folder / "2.log.gz")
    assert "gzip stream ends after" in tail["reason"]


def test_entry_point_that_is_not_a_log_format_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = "gridtrace_test_sitefmt_bad"
    _fake_distribution(tmp_path, module, "NOT_A_FORMAT")
    with _fresh_registry(module):
        monkeypatch.syspath_prepend(str(tmp_path))
        with pytest.raises(ConfigError) as caught:
            available_formats()
    assert "'sitefmt'" in str(caught.value)
    assert "gridtrace.log_formats" in str(caught.value)
    assert "is a dict, not a gridtrace LogFormat" in str(caught.value)
    assert f"{module}:NOT_A_FORMAT" in str(caught.value)
    assert "sitefmt" not in available_formats()


def test_entry_point_that_cannot_be_loaded_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = "gridtrace_test_sitefmt_missing"
    _fake_distribution(tmp_path, module, "NO_SUCH_NAME")
    with _fresh_registry(module):
        monkeypatch.syspath_prepend(str(tmp_path))
        with pytest.raises(ConfigError, match=f"'sitefmt'.*{module}:NO_SUCH_NAME"):
            available_formats()
    assert "sitefmt" not in available_formats()
