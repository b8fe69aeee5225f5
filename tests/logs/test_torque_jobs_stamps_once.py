"""The stamps read to put a large log's files in time order are those the assembly uses.

With the kernel (a large log) :func:`gridtrace.logs._torque.assemble_torque` reads every file's
stamps once, for its median, and hands them, in the files' new order, to the assembly instead
of letting it read the whole column again. The result must be the one the assembly gets when
it reads the stamps itself, also when the files are given out of time order and some stamps
are of another form or unreadable.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gridtrace.logs import _torque, _torque_jobs, _torque_jobs_fast
from gridtrace.logs._base import parts_records

pytestmark = pytest.mark.skipif(not _torque_jobs_fast.HAVE_NUMBA, reason="numba is not installed")

_E = (
    "{stamp};E;{job}.srv;user=u{job} queue=q ctime={ctime} start={start} end={end}"
    " exec_host=n1/0-3 Exit_status=0 resources_used.walltime=00:01:00\n"
)


def _day(day: int, jobs: range, odd: str = "") -> str:
    lines = []
    for job in jobs:
        start = 1709251200 + 86400 * (day - 1) + 60 * job
        stamp = f"03/{day:02d}/2024 {2 + job // 60:02d}:{job % 60:02d}:00"
        lines.append(f"{stamp};Q;{job}.srv;queue=q\n")
        lines.append(_E.format(stamp=stamp, job=job, ctime=start - 5, start=start, end=start + 60))
    return "".join(lines) + odd


@pytest.fixture
def kernel_always() -> Iterator[None]:
    """The kernel for any number of records (as for a large log)."""
    saved = _torque_jobs_fast.KERNEL_ROWS
    _torque_jobs_fast.KERNEL_ROWS = 0
    try:
        yield
    finally:
        _torque_jobs_fast.KERNEL_ROWS = saved


def _parts(tmp_path: Path) -> list[object]:
    days = {
        # given out of time order: the 3rd, then the 1st, then the 2nd
        "a": _day(3, range(0, 4)),
        "b": _day(1, range(4, 9), odd="03/01/2024 09:05:60;Q;90.srv;queue=q\n"),
        "c": _day(2, range(9, 12), odd="02/30/2024 10:00:00;Q;91.srv;queue=q\n"),
    }
    parts = []
    for name, text in days.items():
        path = tmp_path / name
        path.write_text(text)
        parts.append(_torque.tokenize_torque_file(path, site="s"))
    return parts


@pytest.mark.parametrize("tz", [None, "Europe/Brussels"])
def test_stamps_read_for_the_order_give_the_same_assembly(
    tmp_path: Path, kernel_always: None, tz: str | None
) -> None:
    parts = _parts(tmp_path)
    result = _torque.assemble_torque(parts, tz=tz)
    assert result.info["files_reordered"] > 0  # the stamps handed over are in the new order

    ordered, _ = _torque.in_time_order(parts)
    own = _torque_jobs.assemble_torque_jobs(parts_records(ordered), tz=tz)  # reads them itself
    assert result.records.equals(own.records)
    assert result.jobs.equals(own.jobs)
    assert result.jobs.num_rows == 14  # 12 ended, the two odd Q records pending
    # the stamps the kernel leaves to strptime (a second of 60, a 30th of February) are records
    raw = result.records.column("job_id_raw").to_pylist()
    assert {"90.srv", "91.srv"} <= set(raw)


def test_the_assembly_does_not_read_the_stamps_again(
    tmp_path: Path, kernel_always: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = _parts(tmp_path)
    read: list[int] = []
    naive_stamps = _torque_jobs._naive_stamps

    def counted(stamps: object, kernel: bool | None = None) -> object:
        read.append(len(stamps))  # type: ignore[arg-type]
        return naive_stamps(stamps, kernel)  # type: ignore[arg-type]

    monkeypatch.setattr(_torque_jobs, "_naive_stamps", counted)
    result = _torque.assemble_torque(parts)
    assert sum(read) == result.records.num_rows  # every stamp read once, file by file
