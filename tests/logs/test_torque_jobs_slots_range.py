"""An allocation of more slots than a count column holds costs that count, not the whole read.

``exec_host=n1/0-999999999+...`` (3 × 10⁹ slots) or such an ``exec_vnode`` made the int32 cast of
``cores_alloc`` raise and the whole assembly fail; the count is now null and the row flagged.
"""

from __future__ import annotations

import pytest

from gridtrace.logs import _torque_jobs_fast
from gridtrace.logs._torque_jobs import assemble_torque_jobs
from gridtrace.logs._torque_lines import tokenize_torque_reference

START = b"06/01/2016 00:09:15;E;7.srv;user=u queue=q ctime=1464732444 start=1464732494 "
END = b" end=1464732555 Exit_status=0\n"


@pytest.mark.parametrize("kernel", [False, True])
@pytest.mark.parametrize(
    ("allocation", "flag", "hosts"),
    [
        (b"exec_host=n1/0-999999999+n2/0-999999999+n3/0-999999999", "exec_host", 3),
        (b"exec_host=n1/0-3 exec_vnode=(n1:ncpus=3000000000)", "exec_vnode", 1),
    ],
)
def test_a_slot_count_beyond_int32_is_null_and_flagged(
    allocation: bytes, flag: str, hosts: int, kernel: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if kernel and not _torque_jobs_fast.HAVE_NUMBA:
        pytest.skip("numba is not installed")
    monkeypatch.setattr(_torque_jobs_fast, "KERNEL_ROWS", 0 if kernel else 1 << 62)
    records = tokenize_torque_reference(START + allocation + END, src_file="d", site="s").records
    (job,) = assemble_torque_jobs(records).jobs.to_pylist()
    assert f"VALUE_UNREADABLE:{flag}" in job["flags"]
    assert job["state"] == "COMPLETED"
    assert len(job["exec_hosts"]) == hosts
    if flag == "exec_host":
        assert job["cores_alloc"] is None
    else:  # exec_host still says 4 slots
        assert job["cores_alloc"] == 4


def test_the_largest_int32_slot_count_is_kept() -> None:
    line = START + b"exec_host=n1/0-2147483646" + END
    records = tokenize_torque_reference(line, src_file="d", site="s").records
    (job,) = assemble_torque_jobs(records).jobs.to_pylist()
    assert job["cores_alloc"] == 2**31 - 1
    assert not any(flag.startswith("VALUE_UNREADABLE") for flag in job["flags"] or ())
