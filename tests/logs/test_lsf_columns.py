"""The LSF kernels that read job fields from ``attrs`` give what Arrow's own functions give.

``gather_strings`` takes the text fields of every chunk of maps into one array per field, and
``contains`` finds ``ngpus_physical=`` in the effective requirements: both are checked against
``take``/``concat_arrays`` and ``match_substring`` on generated strings, with nulls, empty
strings, sliced arrays and indexes that point nowhere; and the ``jobs`` of a read whose maps
come in several chunks against a read without numba.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gridtrace.logs import _attrs_fast, _lsf, _lsf_fast
from tests.logs.test_lsf_fast import GPU, LSF10, LSF91, RECORDS

pytestmark = pytest.mark.skipif(not _lsf_fast.HAVE_NUMBA, reason="numba is not installed")

_TEXT = st.one_of(st.none(), st.text(alphabet="ab/=ngpus_physical1é ", max_size=30))


@st.composite
def _parts(draw: st.DrawFn) -> list[tuple[Any, np.ndarray]]:
    columns = draw(st.integers(1, 4))
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        texts = draw(st.lists(_TEXT, max_size=12))
        strings = pa.array(texts, pa.string())
        if texts and draw(st.booleans()):  # a slice: offsets not from 0
            start = draw(st.integers(0, len(texts)))
            strings = strings[start:]
        rows = draw(st.integers(0, 8))
        index = np.array(
            draw(
                st.lists(
                    st.integers(-1, len(strings) - 1),
                    min_size=columns * rows,
                    max_size=columns * rows,
                )
            ),
            dtype=np.int64,
        ).reshape(columns, rows)
        parts.append((strings, index))
    return parts


@settings(max_examples=200, deadline=None)
@given(_parts())
def test_gathered_strings_match_take_and_concat(parts: list[tuple[Any, np.ndarray]]) -> None:
    assert _lsf_fast.compile_kernel()
    gathered = _lsf_fast.gather_strings(parts)
    assert gathered is not None
    for j, column in enumerate(gathered):
        expected = pa.concat_arrays(
            [strings.take(pa.array(index[j], mask=index[j] < 0)) for strings, index in parts]
        )
        column.validate(full=True)
        assert column.type == pa.string()
        assert column.equals(expected)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_TEXT, max_size=20),
    st.integers(0, 5),
    # the kernel's Horspool search: a needle repeating itself, a byte twice, one byte, UTF-8
    st.sampled_from(["ngpus_physical=", "a", "abab", "aab", "ba", "é", "ngpus_physical=2/host"]),
)
def test_contains_matches_match_substring(texts: list[str | None], start: int, needle: str) -> None:
    assert _lsf_fast.compile_kernel()
    strings = pa.array(texts, pa.string())[start:]
    found = _lsf_fast.contains(strings, needle)
    assert found is not None
    expected = pc.match_substring(pc.fill_null(strings, ""), needle)
    assert found.tolist() == expected.to_pylist()


def test_jobs_from_many_chunks_same_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "lsb.acct"
    gpus = GPU.replace('"select[type == local] span[hosts=1] "', '"rusage[ngpus_physical=2/host]"')
    lines = [
        r.replace(" 5001 ", f" {5001 + k} ", 1)
        for k, r in enumerate((*RECORDS, gpus, LSF10.replace('"normal"', '""'), LSF91) * 20)
    ]
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(_lsf_fast, "SMALL_INPUT_LINES", 0)
    monkeypatch.setattr(_attrs_fast, "MIN_ROWS", 0)

    def read() -> Any:
        part = _lsf.tokenize_lsf_file(path, site="s", chunk_bytes=15_000)
        return part, _lsf.assemble_lsf([part])

    part, fast = read()
    assert part.records.column("attrs").num_chunks > 5
    assert pc.sum(fast.jobs.column("gpus_req")).as_py() > 0
    monkeypatch.setattr(_lsf_fast, "HAVE_NUMBA", False)
    monkeypatch.setattr(_attrs_fast, "HAVE_NUMBA", False)
    _, reference = read()
    assert fast.jobs.equals(reference.jobs)
    assert fast.info == reference.info


def _variant(record: str, kind: int, k: int) -> str:
    """One line of a generated file: a record with a job id of its own, changed by ``kind``."""
    line = record.replace(" 5001 ", f" {5001 + k} ", 1)
    head, tail = line.split(" 1700003600 ", 1)
    return {
        0: line,
        1: f"{head} -1700003600 {tail}",  # a signed event time: no stamp_utc
        2: line.replace(" 0 409600 819200 ", f" {k % 4} 409600 819200 ", 1),  # "jobId[idx]"
        3: line.replace('"normal"', '"a ""quoted"" queue"'),
        4: line.replace('"alice"', '""'),  # an empty user
        5: line + ' 7 "x"',  # extra fields
        6: line[: len(line) // 2],  # damaged: misaligned or an open string
        7: line.replace('"alice"', '"al\tice"'),  # a tab: left to the reference
        8: "garbage line",
        9: line.replace(" 1700003600 ", " 1.7e9 ", 1),  # a stamp the reference reads
    }[kind]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from((*RECORDS, LSF91)), st.integers(0, 9)), min_size=1, max_size=40
    ),
    st.sampled_from([2_000, 6_000, 1 << 20]),
)
@example(  # scanned lines with a signed stamp, array indexes, doubled quotes, among damaged ones
    rows=[(LSF10, 1), (LSF10, 2), (LSF91, 2), (LSF10, 3), (LSF10, 6), (LSF91, 8), (LSF10, 9)],
    chunk_bytes=1 << 20,
)
def test_mixed_lines_read_the_same_either_way(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[tuple[str, int]],
    chunk_bytes: int,
) -> None:
    path = tmp_path_factory.mktemp("mixed") / "lsb.acct"
    path.write_text("".join(_variant(r, kind, k) + "\n" for k, (r, kind) in enumerate(rows)))

    def read(numba: bool) -> Any:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_lsf_fast, "SMALL_INPUT_LINES", 0)
            patch.setattr(_attrs_fast, "MIN_ROWS", 0)
            if not numba:
                patch.setattr(_lsf_fast, "HAVE_NUMBA", False)
                patch.setattr(_attrs_fast, "HAVE_NUMBA", False)
            part = _lsf.tokenize_lsf_file(path, site="s", chunk_bytes=chunk_bytes)
            return _lsf.assemble_lsf([part])

    fast, reference = read(True), read(False)
    assert fast.records.equals(reference.records)
    assert fast.jobs.equals(reference.jobs)
    assert fast.quarantine.equals(reference.quarantine)
    assert fast.info == reference.info
    assert fast.lines_read == fast.lines_parsed + fast.lines_quarantined == len(rows)
