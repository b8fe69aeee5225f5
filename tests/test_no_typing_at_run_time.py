"""The small ``gridtrace parse`` path imports neither typing, logging nor pathlib.

Their names serve mypy only (under ``TYPE_CHECKING``, which mypy takes as true), so what mypy
reads and what runs are written twice where a type needs a run-time value: these tests check
that the two agree, and that the named tuples stay tuples.
"""

from __future__ import annotations

import ast
import importlib
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import gridtrace._parquet_lite as lite

from .cli.test_startup import LINES


def _literal_in_type_checking(path: Path, name: str) -> tuple[str, ...]:
    """Return the strings of the ``Literal`` that ``name`` is aliased to for mypy in ``path``."""
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == name
            and isinstance(node.value, ast.Subscript)
        ):
            elements = node.value.slice
            assert isinstance(elements, ast.Tuple)
            return tuple(ast.literal_eval(element) for element in elements.elts)
    msg = f"no alias {name} in {path}"
    raise AssertionError(msg)


def test_the_kinds_mypy_reads_are_the_kinds_written() -> None:
    assert _literal_in_type_checking(Path(lite.__file__), "Kind") == lite.KINDS


@pytest.mark.parametrize(
    "module",
    [
        "gridtrace._atomic",
        "gridtrace._parquet_lite",
        "gridtrace.logs._io_paths",
        "gridtrace.logs._pbs_values",
        "gridtrace.logs._torque_lines",
        "gridtrace.logs._vo",
    ],
)
def test_every_exported_name_exists_at_run_time(module: str) -> None:
    loaded = importlib.import_module(module)
    assert [name for name in loaded.__all__ if not hasattr(loaded, name)] == []


def test_a_column_is_still_a_named_tuple() -> None:
    column = lite.Column("site", "string")
    assert column == ("site", "string", True)
    assert column.nullable is True
    name, kind, nullable = lite.Column("n", "int64", False)
    assert (name, kind, nullable) == ("n", "int64", False)
    assert repr(column) == "Column(name='site', kind='string', nullable=True)"
    assert column._replace(nullable=False) == lite.Column("site", "string", False)
    assert isinstance(column._replace(nullable=False), lite.Column)
    assert pickle.loads(pickle.dumps(column)) == column
    assert lite.Column._fields == ("name", "kind", "nullable")
    assert "its kind" in (lite.Column.__doc__ or "")


_RUN = """
import json, sys
from gridtrace.cli import main
code = main(sys.argv[1:])
print(json.dumps([code, sorted({"typing", "logging", "pathlib"} & set(sys.modules))]))
"""


def test_a_small_parse_imports_none_of_them(tmp_path: Path) -> None:
    log = tmp_path / "20240503"
    log.write_text(LINES)
    done = subprocess.run(
        [sys.executable, "-c", _RUN, "parse", str(log), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert done.stdout.splitlines()[-1] == "[0, []]"
