"""Paths spelled as pathlib spells them, without pathlib (the small ``gridtrace parse`` path).

:func:`gridtrace._atomic.path_text`, :func:`gridtrace.logs._io_paths.scan_log_names` and the
atomic writers stand in for pathlib there: they must give the same text, the same files in the
same order, and the same errors.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gridtrace._atomic import atomic_name, atomic_path, path_text, write_bytes, write_text
from gridtrace.cli import _inside
from gridtrace.logs._io_paths import default_site_name, scan_log_names, scan_log_paths

SPELLINGS = (
    "",
    ".",
    "..",
    "/",
    "//",
    "///",
    "////a",
    "a",
    "a/",
    "a//b",
    "./a",
    "a/./b/.",
    "//a/b/",
    "///a//b",
    "a/../b",
    ".hidden/",
    "a/.",
    "./",
    "x.y.z",
)


@pytest.mark.parametrize("text", SPELLINGS)
def test_the_spellings_pathlib_makes(text: str) -> None:
    assert path_text(text) == str(Path(text))
    assert path_text(Path(text)) == str(Path(text))


@given(st.text(alphabet="/.ab", max_size=12))
def test_any_spelling_of_slashes_and_dots(text: str) -> None:
    assert path_text(text) == str(Path(text))


@pytest.mark.parametrize("folder", [".", "/", "//", "a", "a/b", "..", "//a"])
def test_a_file_inside_a_folder(folder: str) -> None:
    assert _inside(path_text(folder), "jobs.parquet") == str(Path(folder) / "jobs.parquet")


@pytest.mark.parametrize("text", ["/tmp/x.y", "site.gz", "a/b/", ".", "/", "//", ""])
def test_the_default_site_name(text: str) -> None:
    expected = Path(text).name.split(".", 1)[0] or "site"
    assert default_site_name(text) == expected
    assert default_site_name([text]) == expected


def _folder(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("20240503", "20240501.gz", "accounting.1", "accounting", "b", "A", ".hidden"):
        (logs / name).write_text("x\n")
    (logs / "sub").mkdir()
    (logs / "to-sub").symlink_to(logs / "sub")
    (logs / "to-file").symlink_to(logs / "b")
    (logs / "dangling").symlink_to(logs / "nothing")
    os.mkfifo(logs / "fifo")
    return logs


def test_a_folder_is_scanned_as_scan_log_paths_scans_it(tmp_path: Path) -> None:
    logs = _folder(tmp_path)
    for named in ([str(logs)], [f"{logs}//"], [logs], [str(logs / "b"), f"{logs}/./A"]):
        names, skipped = scan_log_names(named)
        found = scan_log_paths(named)
        assert names == [str(path) for path in found.files]
        assert skipped == found.skipped
    names, skipped = scan_log_names(str(logs))
    # by the date in the name: 20240501.gz before 20240503
    assert names.index(str(logs / "20240501.gz")) < names.index(str(logs / "20240503"))
    assert (str(logs / ".hidden"), "hidden") in skipped
    assert (str(logs / "dangling"), "not a regular file") in skipped
    assert (str(logs / "to-sub"), "a sub-folder (name it to read it)") in skipped


def test_the_working_folder_gives_bare_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = _folder(tmp_path)
    monkeypatch.chdir(logs)
    for named in (".", "./", "./."):
        names, skipped = scan_log_names(named)
        found = scan_log_paths(named)
        assert names == [str(path) for path in found.files]
        assert "20240503" in names
        assert skipped == found.skipped


@pytest.mark.parametrize("name", ["nothing", "fifo"])
def test_the_same_error_for_a_path_that_is_no_file(tmp_path: Path, name: str) -> None:
    logs = _folder(tmp_path)
    with pytest.raises(FileNotFoundError) as ours:
        scan_log_names([str(logs / name)])
    with pytest.raises(FileNotFoundError) as theirs:
        scan_log_paths([str(logs / name)])
    assert str(ours.value) == str(theirs.value)


def test_the_atomic_writers_write_and_clean_up(tmp_path: Path) -> None:
    write_text(tmp_path / "a.json", "{}\n")
    write_bytes(str(tmp_path / "b.bin"), b"\x00\x01")
    assert (tmp_path / "a.json").read_bytes() == b"{}\n"
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    with atomic_path(tmp_path / "c.txt") as temporary:
        assert isinstance(temporary, Path)
        assert temporary.parent == tmp_path
        assert temporary.name.startswith(".c.txt.")
        temporary.write_text("c")
    assert (tmp_path / "c.txt").read_text() == "c"
    names = []

    def fail() -> None:
        with atomic_name(f"{tmp_path}//d.txt") as name:
            names.append(name)
            raise RuntimeError

    with pytest.raises(RuntimeError):
        fail()
    assert names[0].startswith(f"{tmp_path}/.d.txt.")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a.json", "b.bin", "c.txt"]


def test_a_path_without_a_name_is_refused_as_pathlib_refuses_it() -> None:
    with pytest.raises(ValueError, match="has an empty name"):
        atomic_name("/")
