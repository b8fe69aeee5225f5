"""The TORQUE kernel's ids, keys and values: exactly the bytes found, and the reference's rows.

The kernel writes a chunk's ids, keys and values into scratch as large as the chunk, then hands
over arrays of exactly the bytes written, which the records table holds (no scratch). These tests
check that the records and quarantine tables are exactly the reference tokeniser's, line by line,
on generated and fuzzed lines of both flavours (quoted values with spaces and ``=``, empty values,
repeated keys, non-UTF-8 bytes, CRLF line ends, lines declined half-way through their tokens),
whole or cut into chunks at any line edge, and that the arrays hold exactly the bytes found.
"""

from __future__ import annotations

import itertools

import hypothesis.strategies as st
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

from gridtrace.logs import _torque_fast as fast
from gridtrace.logs._base import FileParse
from gridtrace.logs._torque_lines import tokenize_torque_reference

pytest.importorskip("numba", reason="numba is not installed: the fast path is the reference")

NAMES = {"src_file": "accounting/20240503", "site": "test"}


@pytest.fixture(autouse=True)
def _kernel() -> None:
    assert fast._compile_kernel()


def _reference(data: bytes, flavour: str) -> FileParse:
    return tokenize_torque_reference(data, source_format=flavour, **NAMES)


def _chunked(data: bytes, cuts: list[int], flavour: str) -> tuple[pa.Table, pa.Table, int]:
    """Tokenise ``data`` in chunks of whole lines, cut after the line ends numbered ``cuts``."""
    ends = [i + 1 for i, byte in enumerate(data) if byte == 10]
    edges = sorted({0, len(data), *(ends[c % len(ends)] for c in cuts if ends)})
    records, quarantine, first, total = [], [], 1, 0
    for start, end in itertools.pairwise(edges):
        chunk = data[start:end]
        lines = chunk.count(b"\n") + (not chunk.endswith(b"\n"))
        part = fast.tokenize_torque(
            chunk, source_format=flavour, first_line=first, lines=lines, **NAMES
        )
        records.append(part.records)
        quarantine.append(part.quarantine)
        first += part.lines_read
        total += part.lines_read
    want = _reference(b"", flavour)
    return (
        pa.concat_tables(records) if records else want.records,
        pa.concat_tables(quarantine) if quarantine else want.quarantine,
        total,
    )


_KEYS = [b"user", b"queue", b"account", b"exec_host", b"Resource_List.nodes", b"end", b"x"]
_VALUES = [
    b"vsc30001",
    b"",
    b'"my proj"',
    b'"a=b c"',
    b"nodes=2:ppn=8",
    b'"',
    b'"x"y"',
    b"r1i0n3/0-7+r1i0n4/0-7",
    b"r\xe9sultat",
    b"\xc3\xa9t\xc3\xa9",
    b"tab\there",
    b"\x00",
]
_STAMPS = [b"05/03/2024 12:00:00", b"12/31/2024 23:59:60", b"13/03/2024 12:00:00", b"05/03/2024"]


@st.composite
def _lines(draw: st.DrawFn) -> bytes:
    stamp = draw(st.sampled_from(_STAMPS))
    kind = draw(st.sampled_from([b"Q", b"S", b"E", b"D", b"A", b"R", b"L", b"C"]))
    job = draw(st.sampled_from([b"101.pbs01", b"123[4].server", b"", b"a b"]))
    keys = draw(st.lists(st.sampled_from(_KEYS), max_size=10))  # repeated keys too
    tokens = [key + b"=" + draw(st.sampled_from(_VALUES)) for key in keys]
    if draw(st.integers(0, 9)) == 0:
        tokens.insert(draw(st.integers(0, len(tokens))), b"bare")
    separator = draw(st.sampled_from([b" ", b"  "]))
    line = stamp + b";" + kind + b";" + job + b";" + separator.join(tokens)
    return line + draw(st.sampled_from([b"\n", b"\n", b"\r\n"]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(_lines(), max_size=14),
    cuts=st.lists(st.integers(0, 20), max_size=4),
    last_open=st.booleans(),
    flavour=st.sampled_from(["torque", "pbspro"]),
)
def test_chunks_of_any_lines_give_the_reference_rows(
    lines: list[bytes], cuts: list[int], last_open: bool, flavour: str
) -> None:
    data = b"".join(lines)
    if last_open and data:
        data = data.rstrip(b"\r\n")  # the file's last line without a line end
    want = _reference(data, flavour)
    whole = fast.tokenize_torque(data, source_format=flavour, **NAMES)
    assert whole.lines_read == want.lines_read
    assert whole.records.equals(want.records)
    assert whole.quarantine.equals(want.quarantine)
    records, quarantine, total = _chunked(data, cuts, flavour)
    assert total == want.lines_read
    assert records.equals(want.records)
    assert quarantine.equals(want.quarantine)


def test_the_arrays_hold_exactly_the_bytes_written() -> None:
    clean = b'05/03/2024 12:00:00;E;101.pbs01;user=bob queue=grid account="my proj"'
    # declined after two tokens were written: the kernel undoes them
    late = b"05/03/2024 12:00:01;E;102.pbs01;user=bob queue=grid jobname=r\xe9sultat"
    data = b"\n".join([clean] * 10 + [late] + [clean] * 10) + b"\n"
    tokens = fast._tokens(data, 0, len(data), 21)
    assert tokens.fast.tolist() == [True] * 10 + [False] + [True] * 10
    assert bytes(tokens.keys) == b"userqueueaccount" * 20
    assert bytes(tokens.values) == b"bobgridmy proj" * 20
    assert bytes(tokens.ids) == b"101.pbs01" * 20
    assert tokens.key_offsets.tolist() == np.cumsum([0] + [4, 5, 7] * 20).tolist()
    assert tokens.value_offsets.tolist() == np.cumsum([0] + [3, 4, 7] * 20).tolist()
    records = fast.tokenize_torque(data, lines=21, **NAMES).records
    entries = records.column("attrs").chunk(0).values  # the first fast rows: all fast keys
    # the table holds the keys and values found, not the chunk-sized scratch they were written to
    assert entries.field("key").buffers()[2].size == len(b"userqueueaccount") * 20
    assert entries.field("value").buffers()[2].size == len(b"bobgridmy proj") * 20


def test_a_chunk_of_only_declined_lines_gives_empty_arrays() -> None:
    data = b"garbage\n\xff\xfe\n\n"
    tokens = fast._tokens(data, 0, len(data), 3)
    assert not tokens.fast.any()
    assert (len(tokens.ids), len(tokens.keys), len(tokens.values)) == (0, 0, 0)
    assert tokens.key_offsets.tolist() == tokens.value_offsets.tolist() == [0]
    got = fast.tokenize_torque(data, lines=3, **NAMES)
    want = _reference(data, "torque")
    assert got.records.equals(want.records)
    assert got.quarantine.equals(want.quarantine)
