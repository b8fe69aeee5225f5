"""The reader frame, written once in ``_stream``: every reader keeps its public face.

``tokenize_<fmt>_file`` is made by ``file_tokenizer`` and ``read_<fmt>`` by ``file_reader``;
a user relies on their names, signatures (parameter names, defaults, keyword-only options),
numpydoc docstrings, errors for wrong arguments, and on pickling them (dask's process workers
are sent the tokeniser by name).
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import re
from pathlib import Path
from typing import Any

import pytest

from gridtrace.errors import ConfigError
from gridtrace.logs._stream import DEFAULT_CHUNK_BYTES, LineFormat, file_tokenizer

FORMATS = ("swf", "gwf", "slurm", "lsf", "sge", "htcondor", "torque")

# each reader's parameters beyond (paths, *, site=None, errors="warn"), as before the frame
READ_OPTIONS: dict[str, dict[str, Any]] = {
    "swf": {"status": "auto"},
    "gwf": {"status": "auto"},
    "slurm": {"tz": None, "delimiter": "|", "header": None},
    "lsf": {},
    "sge": {},
    "htcondor": {},
    "torque": {"tz": None, "unitless_memory": "b"},
}
TOKENIZE_OPTIONS: dict[str, dict[str, Any]] = {"slurm": {"delimiter": "|", "header": None}}


def _functions(fmt: str) -> tuple[Any, Any]:
    module = importlib.import_module(f"gridtrace.logs._{fmt}")
    return getattr(module, f"tokenize_{fmt}_file"), getattr(module, f"read_{fmt}")


def _documented(doc: str) -> list[str]:
    """The parameter names of a numpydoc Parameters section."""
    section = doc.split("Parameters\n----------\n", 1)[1].split("\n\n", 1)[0]
    return [m.group(1) for m in re.finditer(r"^(\w+) :", section, flags=re.M)]


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_tokeniser_keeps_its_name_signature_and_docstring(fmt: str) -> None:
    tokenize, _ = _functions(fmt)
    assert tokenize.__name__ == f"tokenize_{fmt}_file"
    assert tokenize.__module__ == f"gridtrace.logs._{fmt}"
    assert pickle.loads(pickle.dumps(tokenize)) is tokenize
    params = inspect.signature(tokenize).parameters
    options = TOKENIZE_OPTIONS.get(fmt, {})
    assert list(params) == ["path", "site", *options, "chunk_bytes", "stats"]
    assert params["path"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in list(params.values())[1:])
    assert params["site"].default is inspect.Parameter.empty
    assert params["chunk_bytes"].default == DEFAULT_CHUNK_BYTES
    assert params["stats"].default is None
    assert {name: params[name].default for name in options} == options
    doc = inspect.getdoc(tokenize) or ""
    assert doc.startswith("Tokenise one ")
    assert _documented(doc) == list(params)
    assert "Returns\n-------\nFileParse\n" in doc
    assert "``lines_read`` = records + quarantined." in " ".join(doc.split())


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_reader_keeps_its_name_signature_and_docstring(fmt: str) -> None:
    _, read = _functions(fmt)
    assert read.__name__ == f"read_{fmt}"
    assert read.__module__ == f"gridtrace.logs._{fmt}"
    assert pickle.loads(pickle.dumps(read)) is read
    public = importlib.import_module("gridtrace.logs")
    assert getattr(public, f"read_{fmt}") is read
    params = inspect.signature(read).parameters
    first = "path" if fmt == "swf" else "paths"
    options = READ_OPTIONS[fmt]
    assert next(iter(params)) == first
    assert {name: p.default for name, p in list(params.items())[1:]} == {
        "site": None,
        "errors": "warn",
        **options,
    }
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in list(params.values())[1:])
    doc = inspect.getdoc(read) or ""
    assert doc.startswith("Read ")
    assert doc.splitlines()[0].endswith("and quarantine.")
    assert sorted(_documented(doc)) == sorted(params)
    for section in ("Returns\n-------\nParseResult\n", "Raises\n------\n", "Examples\n--------\n"):
        assert section in doc
    assert f"read_{fmt}(" in doc.split("Examples", 1)[1]


@pytest.mark.parametrize("fmt", FORMATS)
def test_wrong_arguments_fail_as_for_a_written_out_function(fmt: str, tmp_path: Path) -> None:
    _, read = _functions(fmt)
    with pytest.raises(TypeError, match="unexpected keyword"):
        read(tmp_path, no_such_option=1)
    with pytest.raises(TypeError, match="missing"):
        read(site="s")
    with pytest.raises(ValueError, match="errors must be one of"):
        read(tmp_path, errors="ignore")


def test_slurm_options_reach_the_tokeniser_and_are_checked(tmp_path: Path) -> None:
    _, read = _functions("slurm")
    path = tmp_path / "sacct.log"
    path.write_bytes(b"1;alice;COMPLETED\n")
    with pytest.raises(ConfigError, match="delimiter"):
        read(path, tz="UTC", delimiter="")
    with pytest.raises(ConfigError):  # the zone is checked before any file is read
        read(tmp_path / "missing", tz="Not/AZone")
    tokenize, _ = _functions("slurm")
    with pytest.raises(TypeError, match="unexpected keyword"):
        tokenize(path, site="s", delimeter=";")


def test_a_tokeniser_is_named_where_it_is_made(tmp_path: Path) -> None:
    fmt: LineFormat[None] = LineFormat("demo", lambda: None, lambda *a, **k: (None, None))
    made = file_tokenizer("demo", fmt, what="one demo file", rows="line")
    assert made.__module__ == __name__
    assert made.__name__ == "tokenize_demo_file"
    assert "One ``records`` row per line, one ``quarantine`` row per other line" in (
        made.__doc__ or ""
    )
