"""The Slurm tokeniser's kernel path splits plain chunks as the reference does, row for row.

A chunk whose lines all have their fields and a JobID (UTF-8, no CR, no NUL) is split by the
kernel straight into Arrow buffers; any other chunk by the reference. Both must give the same
``records`` and ``quarantine`` for any file, cut into any chunks: generated lines (plain ones,
steps, array and het ids, job names holding the delimiter, multi-byte UTF-8, and damaged ones:
blank, too few or too many fields, no JobID, CR LF, NUL bytes, Latin-1 bytes, a last line
without a line end, a header line), and the real sacct dumps.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _slurm, _slurm_fast
from gridtrace.logs._slurm import SLURM_FIELDS, tokenize_slurm_file

pytestmark = pytest.mark.skipif(not _slurm_fast.HAVE_NUMBA, reason="numba is not installed")


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    assert _slurm_fast.compile_kernel()


def _line(job_id: str = "1001", name: str = "sim", **values: str) -> str:
    base = dict.fromkeys(SLURM_FIELDS, "x")
    base.update(
        JobID=job_id,
        Submit="2024-05-03T10:00:00",
        Start="2024-05-03T10:01:40",
        End="2024-05-03T11:01:40",
        State="COMPLETED",
        JobName=name,
        **values,
    )
    return "|".join(base[field] for field in SLURM_FIELDS)


_PLAIN = st.builds(
    _line,
    st.sampled_from(["1001", "1001_7", "1001_[1-3,5%2]", "1001+1", "1001.batch", "7.0", "x"]),
    st.sampled_from(["sim", "a|b", "", "été", "名前", " ", "a||b|"]),
)
_DAMAGED = st.sampled_from(
    [
        b"",
        b"   ",
        b"\t",
        b"1001|too|few",
        b"|" * 25,
        b" |" + b"|" * 24 + b"x",
        b"\x00\x00\x00",
        _line().encode()[:40] + b"\x00" + _line().encode()[40:],
        _line().encode() + b"\r",
        _line(name="caf\xe9").encode("latin-1"),
        _line(job_id="\x01").encode(),
        _line(job_id=" ").encode(),
    ]
)
_HEADER = "|".join(SLURM_FIELDS).encode()


def _tables(path: Path, fast: bool, monkeypatch: pytest.MonkeyPatch, **options: object) -> object:
    with monkeypatch.context() as patch:
        patch.setattr(_slurm_fast, "use_kernel", lambda lines: fast)
        return tokenize_slurm_file(path, site="s", **options)  # type: ignore[arg-type]


def _same_both_ways(path: Path, monkeypatch: pytest.MonkeyPatch, **options: object) -> None:
    fast = _tables(path, True, monkeypatch, **options)
    slow = _tables(path, False, monkeypatch, **options)
    assert fast.records.equals(slow.records)  # type: ignore[attr-defined]
    assert fast.quarantine.equals(slow.quarantine)  # type: ignore[attr-defined]
    assert fast.lines_read == slow.lines_read  # type: ignore[attr-defined]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(
        st.one_of(_PLAIN.map(str.encode), _PLAIN.map(str.encode), _DAMAGED), min_size=1, max_size=30
    ),
    header=st.booleans(),
    newline_at_end=st.booleans(),
    chunk_bytes=st.sampled_from([64, 700, 4 << 20]),
)
def test_any_file_in_any_chunks_splits_as_the_reference_splits_it(
    lines: list[bytes],
    header: bool,
    newline_at_end: bool,
    chunk_bytes: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    body = b"\n".join(([_HEADER] if header else []) + lines) + (b"\n" if newline_at_end else b"")
    path = tmp_path / "sacct.log"
    path.write_bytes(body)
    _same_both_ways(path, monkeypatch, chunk_bytes=chunk_bytes)


def test_plain_chunks_are_split_by_the_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without this the test above could pass with the kernel path never taken."""
    path = tmp_path / "sacct.log"
    path.write_text("\n".join(_line(str(1000 + i)) for i in range(50)) + "\n", encoding="utf-8")
    calls: list[int] = []
    split = _slurm_fast.split_fields

    def counted(*args: object, **kwargs: object) -> object:
        result = split(*args, **kwargs)  # type: ignore[arg-type]
        calls.append(result is not None)
        return result

    monkeypatch.setattr(_slurm_fast, "split_fields", counted)
    _same_both_ways(path, monkeypatch, chunk_bytes=2000)
    assert calls
    assert all(calls)  # every chunk of this file is plain


def test_a_damaged_line_sends_its_chunk_to_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "sacct.log"
    lines = [_line(str(1000 + i)) for i in range(4)]
    path.write_text("\n".join([*lines[:2], "1001|cut", *lines[2:]]) + "\n", encoding="utf-8")
    _same_both_ways(path, monkeypatch)
    result = _tables(path, True, monkeypatch)
    assert result.records.num_rows == 4  # type: ignore[attr-defined]
    assert result.quarantine.column("src_line").to_pylist() == [3]  # type: ignore[attr-defined]


def test_other_delimiters_and_layouts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "sacct.log"
    path.write_text(
        "JobID;State;JobName;Submit\n1;COMPLETED;a;b;2024-05-03T10:00:00\n2.0;RUNNING;c;None\n",
        encoding="utf-8",
    )
    _same_both_ways(path, monkeypatch, delimiter=";")
    _same_both_ways(path, monkeypatch, delimiter="::")
    headless = tmp_path / "headless.log"
    headless.write_text("7|x|COMPLETED\n8.batch|y|FAILED\n", encoding="utf-8")
    _same_both_ways(headless, monkeypatch, header=["JobID", "JobName", "State"])


def _real_files() -> list[Path]:
    folder = os.environ.get("GRIDTRACE_REAL_DATA")
    if not folder:
        return []
    return sorted((Path(folder) / "other" / "slurm").glob("*.log*"))


@pytest.mark.slow
@pytest.mark.skipif(not _real_files(), reason="GRIDTRACE_REAL_DATA is not set")
@pytest.mark.parametrize("chunk_bytes", [100_000, 4 << 20])
def test_real_files_split_as_the_reference_splits_them(
    chunk_bytes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    for path in _real_files():
        _same_both_ways(path, monkeypatch, chunk_bytes=chunk_bytes)


def test_the_field_layout_is_the_same_with_or_without_the_shared_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks share one run of field names; the layout check trusts only that very run."""
    path = tmp_path / "sacct.log"
    path.write_text("\n".join(_line(str(1000 + i)) for i in range(300)) + "\n", encoding="utf-8")
    records = _tables(path, True, monkeypatch, chunk_bytes=5000).records  # type: ignore[attr-defined]
    chunks = list(records.column("attrs").chunks)
    assert len(chunks) > 1
    assert all(_slurm._made_here(list(SLURM_FIELDS), c.keys) for c in chunks)
    assert _slurm._layout(chunks) == list(SLURM_FIELDS)
    with monkeypatch.context() as patch:
        patch.setattr(_slurm, "_made_here", lambda names, keys: False)
        assert _slurm._layout(chunks) == list(SLURM_FIELDS)
    # the same names in other buffers are checked byte by byte
    taken = records.take(list(range(records.num_rows))[::-1])
    copies = list(taken.column("attrs").chunks)
    assert not any(_slurm._made_here(list(SLURM_FIELDS), c.keys) for c in copies)
    assert _slurm._layout(copies) == list(SLURM_FIELDS)
    other = _slurm._make_names(["JobID", "State"], 3)
    assert not _slurm._made_here(["JobID", "State"], other)
