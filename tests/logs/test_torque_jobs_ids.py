"""TORQUE job assembly: what the kernels read is what the array paths read.

* job ids (sequence number, array index, whether the id has the form, whether it names an
  array's parent): the kernel gives what the regular expressions give, for ids of every shape
  (damaged, overlong, with a newline or bytes beyond ASCII, which it leaves to them); read for
  every record at once, the same groups and equal codes exactly for equal ids;
* local stamps: what ``strptime`` gives, for well-formed and damaged stamps alike (days a
  month lacks, leap days, seconds of 60, years before 1000, stray characters);
* the key index tells keys one byte off, cut or lengthened apart from the wanted ones, and the
  epochs it reads as it indexes are the reference path's (repeated, damaged and cut values);
* job groups summarised in one pass cut the same attempts as the reduceat path;
* duplicate-line keys, file runs, offsets measured and counted, rows with a flag: the same as
  the array operations they replace.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gridtrace.logs import _torque_jobs, _torque_jobs_fast
from gridtrace.logs._torque_jobs import NA

pytestmark = pytest.mark.skipif(not _torque_jobs_fast.HAVE_NUMBA, reason="numba is not installed")

_ID_PIECES = st.sampled_from(
    ["0", "7", "42", "123456789", "1234567890", "[", "]", "[]", "-", ".", "srv", "\n", "é", "x"]
)
_IDS = st.one_of(
    st.lists(_ID_PIECES, max_size=6).map("".join),
    st.tuples(
        st.text(alphabet="0123456789", min_size=1, max_size=20),
        st.sampled_from(["", "[]", "[3]", "[0123456789]", "-5", "-", "-1234567890", "[12"]),
        st.sampled_from(["", ".srv", ".a.b.c", ".", "x", ".\n", ".é", "\r"]),
    ).map("".join),
    st.text(max_size=8),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_IDS, min_size=1, max_size=12))
def test_job_id_kernel_reads_what_the_regular_expressions_read(ids: list[str]) -> None:
    distinct = pa.array(ids, pa.string())
    seq, index, valid, parent = _torque_jobs._id_parts(distinct)
    read = _torque_jobs_fast.job_id_parts(distinct)
    if any("\n" in i or not i.isascii() for i in ids):
        assert read is None  # left to the regular expressions
        return
    assert read is not None
    np.testing.assert_array_equal(read[0], seq)
    np.testing.assert_array_equal(read[1], index)
    np.testing.assert_array_equal(read[2], valid)
    np.testing.assert_array_equal(read[3], parent)


def test_job_id_kernel_examples() -> None:
    ids = ["6", "6.srv", "6[]", "6[]-1", "6[2].srv", "6-3", "6[]x", "x6", "", "1" * 19, "6[.]"]
    read = _torque_jobs_fast.job_id_parts(pa.array(ids, pa.string()))
    assert read is not None
    seq, index, valid, parent = read
    assert valid.tolist() == [
        True,
        True,
        True,
        False,
        True,
        True,
        False,
        False,
        False,
        False,
        False,
    ]
    assert parent.tolist() == [
        False,
        False,
        True,
        True,
        False,
        False,
        True,
        False,
        False,
        False,
        False,
    ]
    assert seq[:6].tolist() == [6, 6, 6, NA, 6, 6]
    assert index[:6].tolist() == [NA, NA, NA, NA, 2, 3]


_STAMP = st.one_of(
    st.tuples(
        st.integers(0, 19),
        st.integers(0, 32),
        st.integers(0, 10_000),
        st.integers(0, 25),
        st.integers(0, 61),
        st.integers(0, 61),
    ).map(lambda t: f"{t[0]:02d}/{t[1]:02d}/{t[2]:04d} {t[3]:02d}:{t[4]:02d}:{t[5]:02d}"),
    st.sampled_from(
        [
            "02/29/2024 12:00:00",
            "02/29/2023 12:00:00",
            "02/29/1900 00:00:00",
            "02/29/2000 23:59:59",
            "12/31/9999 23:59:59",
            "01/01/1000 00:00:00",
            "01/01/0999 00:00:00",
            "6/1/2016 00:09:15",
            "06/01/2016 0:09:15",
            "06/01/2016T00:09:15",
            "06/01/2016 00:09:15 ",
            " 06/01/2016 00:09:15",
            "06-01-2016 00:09:15",
            "06/01/2016 00:09:60",
            "",
        ]
    ),
    st.text(alphabet="0123456789/: ", min_size=17, max_size=21),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.none(), _STAMP), min_size=1, max_size=10))
def test_stamp_kernel_reads_what_strptime_reads(stamps: list[str | None]) -> None:
    array = pa.array(stamps, pa.string())
    expected = _torque_jobs._strptime(array)
    read = _torque_jobs_fast.local_stamps(array)
    assert read is not None
    naive, done = read
    np.testing.assert_array_equal(naive[done], expected[done])
    assert not done[[s is None for s in stamps]].any()
    saved = _torque_jobs_fast.KERNEL_ROWS
    _torque_jobs_fast.KERNEL_ROWS = 0
    try:
        np.testing.assert_array_equal(_torque_jobs._naive_stamps(array), expected)
    finally:
        _torque_jobs_fast.KERNEL_ROWS = saved


def test_stamp_kernel_reads_the_usual_form() -> None:
    read = _torque_jobs_fast.local_stamps(pa.array(["06/01/2016 00:09:15", "02/30/2016 00:00:00"]))
    assert read is not None
    assert read[1].tolist() == [True, False]  # a day February lacks: left to strptime
    assert read[0][0] == 1464739755


# --------------------------------------------------------------------------------------------
# the key index: keys that nearly match a wanted one

_WANTED = _torque_jobs._KEYS


@st.composite
def _near_key(draw: st.DrawFn) -> str:
    key = draw(st.sampled_from(_WANTED))
    how = draw(st.sampled_from(["same", "byte", "cut", "longer", "other"]))
    if how == "same":
        return key
    if how == "byte":  # one byte changed anywhere (first, middle, within the last 8, last)
        at = draw(st.integers(0, len(key) - 1))
        return key[:at] + draw(st.sampled_from("aZ._0")) + key[at + 1 :]
    if how == "cut":
        return key[: draw(st.integers(0, len(key) - 1))]
    if how == "longer":
        return key + draw(st.sampled_from(["s", ".x", "_used"]))
    return draw(st.text(alphabet="abcdefgR_.", max_size=26))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(_near_key(), st.sampled_from(["", "1", "v"])), max_size=8),
        min_size=1,
        max_size=8,
    )
)
def test_key_index_kernel_tells_near_keys_apart(maps: list[list[tuple[str, str]]]) -> None:
    column = pa.array(maps, pa.map_(pa.string(), pa.string()))
    saved = _torque_jobs_fast.KERNEL_ROWS
    try:
        _torque_jobs_fast.KERNEL_ROWS = 0
        fast = _torque_jobs._Attrs.extract(column, _WANTED)
        _torque_jobs_fast.KERNEL_ROWS = 10**12
        slow = _torque_jobs._Attrs.extract(column, _WANTED)
    finally:
        _torque_jobs_fast.KERNEL_ROWS = saved
    assert fast.kernel
    assert not slow.kernel
    for key, positions in slow.index.items():
        np.testing.assert_array_equal(fast.index[key], positions, err_msg=key)


# --------------------------------------------------------------------------------------------
# job ids of every record, and the offsets counted


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(_IDS, st.sampled_from(["7.s", "7[1].s", "7-1", "8[]", "9"])),
        min_size=1,
        max_size=16,
    )
)
def test_job_ids_read_whole_give_the_groups_of_the_dictionary_path(ids: list[str]) -> None:
    array = pa.array(ids, pa.string())
    saved = _torque_jobs_fast.KERNEL_ROWS
    try:
        _torque_jobs_fast.KERNEL_ROWS = 0
        fast = _torque_jobs._job_ids(array)
        _torque_jobs_fast.KERNEL_ROWS = 10**12
        slow = _torque_jobs._job_ids(array)
    finally:
        _torque_jobs_fast.KERNEL_ROWS = saved
    for got, expected in zip(fast[:5], slow[:5], strict=True):  # seq, index, parent, job, group
        np.testing.assert_array_equal(got, expected)
    # the id code: equal exactly where the ids are equal
    same_code = fast[5][:, None] == fast[5][None, :]
    np.testing.assert_array_equal(same_code, slow[5][:, None] == slow[5][None, :])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.just(NA), st.integers(-56, 56).map(lambda q: q * 900)), max_size=40))
def test_offsets_counted_are_what_unique_gives(own: list[int]) -> None:
    values = np.array(own, dtype=np.int64)
    expected = np.unique(values[values != NA], return_counts=True)
    got = _torque_jobs._offset_counts(values)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])
    assert got[0].dtype == np.int64
    assert got[1].dtype == np.int64


# --------------------------------------------------------------------------------------------
# attempts cut from the groups summarised in one pass


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 5),  # group
            st.integers(0, 6),  # record type (0: none)
            st.one_of(st.just(NA), st.integers(100, 103)),  # ctime
            st.one_of(st.just(NA), st.integers(200, 900)),  # start
            st.one_of(st.just(NA), st.integers(200, 900)),  # end
            st.booleans(),  # truncated
        ),
        min_size=1,
        max_size=30,
    )
)
def test_attempts_with_the_group_kernel_are_the_reduceat_attempts(
    rows: list[tuple[int, int, int, int, int, bool]],
) -> None:
    group = np.array([r[0] for r in rows], dtype=np.int64)
    rtype = np.array([r[1] for r in rows], dtype=np.int64)
    ctime, start, end = (np.array([r[k] for r in rows], dtype=np.int64) for k in (2, 3, 4))
    truncated = np.array([r[5] for r in rows], dtype=bool)
    order = np.argsort(group, kind="stable").astype(np.int64)
    bits = np.zeros(int(group.max()) + 2, dtype=np.int64)
    args = (order, group[order], rtype, ctime, start, end, bits, truncated)
    saved = _torque_jobs_fast.KERNEL_ROWS
    try:
        _torque_jobs_fast.KERNEL_ROWS = 0
        fast, fast_counts = _torque_jobs._attempts(*args)
        _torque_jobs_fast.KERNEL_ROWS = 10**12
        slow, slow_counts = _torque_jobs._attempts(*args)
    finally:
        _torque_jobs_fast.KERNEL_ROWS = saved
    assert fast_counts == slow_counts
    assert fast.keys() == slow.keys()
    for name, values in slow.items():
        np.testing.assert_array_equal(fast[name], values, err_msg=name)


# --------------------------------------------------------------------------------------------
# epochs read as the key index is made

_EPOCH_VALUE = st.sampled_from(
    ["", "0", "5", "-5", "1714723200", "abc", "99999999999999999999", "253402300800", "1 2", "+3"]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(st.sampled_from(["start", "end", "ctime", "queue", "Start"]), _EPOCH_VALUE),
            max_size=6,
        ),
        min_size=1,
        max_size=8,
    ),
    st.data(),
)
def test_epochs_read_with_the_index_are_the_reference_epochs(
    maps: list[list[tuple[str, str]]], data: st.DataObject
) -> None:
    column = pa.array(maps, pa.map_(pa.string(), pa.string()))
    drop = np.array(data.draw(st.lists(st.booleans(), min_size=len(maps), max_size=len(maps))))
    epochs = ("start", "end", "ctime")
    saved = _torque_jobs_fast.KERNEL_ROWS
    try:
        _torque_jobs_fast.KERNEL_ROWS = 0
        fast = _torque_jobs._Attrs.extract(column, _WANTED, drop_last=drop, epochs=epochs)
        after = _torque_jobs._Attrs.extract(column, _WANTED, drop_last=drop)
        after.read_epochs(*epochs)
        _torque_jobs_fast.KERNEL_ROWS = 10**12
        slow = _torque_jobs._Attrs.extract(column, _WANTED, drop_last=drop, epochs=epochs)
    finally:
        _torque_jobs_fast.KERNEL_ROWS = saved
    assert not slow.epoch_cache
    for key in epochs:
        np.testing.assert_array_equal(fast.epochs(key), slow.epochs(key), err_msg=key)
        np.testing.assert_array_equal(fast.epochs(key), after.epochs(key), err_msg=key)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(st.none(), st.lists(st.sampled_from(["TRUNCATED", "NUL", "X"]), max_size=3)),
        min_size=1,
        max_size=12,
    ),
    st.integers(0, 3),
)
def test_rows_with_a_flag_are_the_rows_listing_it(
    flags: list[list[str] | None], start: int
) -> None:
    array = pa.array([[], *flags], pa.list_(pa.string())).slice(min(start, len(flags)))
    expected = [bool(f) and "TRUNCATED" in f for f in array.to_pylist()]
    assert _torque_jobs._has_flag(array, "TRUNCATED").tolist() == expected


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.lists(st.integers(-(2**63), 2**63 - 1), min_size=3, max_size=3), min_size=1, max_size=9
    ),
    st.integers(1, 9),
)
def test_keys_combined_by_the_kernel_are_the_array_keys(rows: list[list[int]], width: int) -> None:
    columns = [np.array([r[k % 3] for r in rows], dtype=np.int64) for k in range(width)]
    key = np.zeros(len(rows), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in columns:
            key = key * np.uint64(1_000_003) ^ column.view(np.uint64)
    np.testing.assert_array_equal(_torque_jobs_fast.combined_keys(columns), key)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.sampled_from(["20240503", "20240504", "x"])), max_size=12))
def test_file_runs_are_numbered_as_the_dictionary_codes_number_them(
    files: list[str | None],
) -> None:
    array = pa.array(files, pa.string())
    codes = _torque_jobs._codes(array)[1]
    change = np.ones(len(codes), dtype=bool)
    change[1:] = codes[1:] != codes[:-1]
    expected = np.cumsum(change).astype(np.int64) - 1
    np.testing.assert_array_equal(_torque_jobs._segments(array), expected)


# --------------------------------------------------------------------------------------------
# offsets measured and carried along each file by the kernel

_NAIVE = 1_714_730_400  # a local stamp


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.booleans(),  # a new file starts here
            st.one_of(st.just(NA), st.integers(-60_000, 60_000)),  # naive - epoch
            st.sampled_from(["epoch", "none", "zero", "no stamp"]),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_offsets_measured_by_the_kernel_are_the_array_offsets(
    rows: list[tuple[bool, int, str]],
) -> None:
    segment = np.cumsum([new for new, _, _ in rows]).astype(np.int64)
    naive = np.array([NA if how == "no stamp" else _NAIVE for _, _, how in rows], dtype=np.int64)
    epoch = np.array(
        [
            NA if how == "none" or gap == NA else 0 if how == "zero" else _NAIVE - gap
            for _, gap, how in rows
        ],
        dtype=np.int64,
    )
    saved = _torque_jobs_fast.KERNEL_ROWS
    try:
        _torque_jobs_fast.KERNEL_ROWS = 0
        fast = _torque_jobs._measure(naive, epoch, segment, None)
        _torque_jobs_fast.KERNEL_ROWS = 10**12
        slow = _torque_jobs._measure(naive, epoch, segment, None)
    finally:
        _torque_jobs_fast.KERNEL_ROWS = saved
    np.testing.assert_array_equal(fast.offset, slow.offset)
    np.testing.assert_array_equal(fast.values, slow.values)
    np.testing.assert_array_equal(fast.counts, slow.counts)
    assert (fast.outliers, fast.flags, fast.mismatches) == (
        slow.outliers,
        slow.flags,
        slow.mismatches,
    )


def test_file_offsets_are_measured_with_the_kernel() -> None:
    # the spill path indexes only start and end: the epochs it reads must not ask for ctime
    from gridtrace.logs._torque_lines import tokenize_torque_reference

    lines = (
        b"05/03/2024 10:00:05;S;7.srv;user=u start=1714723205 exec_host=n1/0\n"
        b"05/03/2024 10:01:00;E;7.srv;user=u start=1714723205 end=1714723260 Exit_status=0\n"
    )
    records = tokenize_torque_reference(lines, src_file="20240503", site="s").records
    saved = _torque_jobs_fast.KERNEL_ROWS
    try:
        _torque_jobs_fast.KERNEL_ROWS = 0
        fast = _torque_jobs.measure_file_offsets(records, None)
        _torque_jobs_fast.KERNEL_ROWS = 10**12
        slow = _torque_jobs.measure_file_offsets(records, None)
    finally:
        _torque_jobs_fast.KERNEL_ROWS = saved
    np.testing.assert_array_equal(fast.offset, slow.offset)
    np.testing.assert_array_equal(fast.dst, slow.dst)
    assert fast.facts == slow.facts
