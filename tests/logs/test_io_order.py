from __future__ import annotations

from pathlib import Path

from gridtrace.logs import expand_log_paths


def test_a_folder_is_read_oldest_first_by_date_or_rotation_number(tmp_path: Path) -> None:
    daily = tmp_path / "daily"
    rotated = tmp_path / "rotated"
    daily.mkdir()
    rotated.mkdir()
    for name in ("20240504.bz2", "20240502.gz", "20240503"):
        (daily / name).write_text("x\n")
    # logrotate numbers back in time: accounting is the newest, accounting.10 the oldest
    for name in ("accounting", "accounting.1", "accounting.2.gz", "accounting.10"):
        (rotated / name).write_text("x\n")
    assert [p.name for p in expand_log_paths(daily)] == ["20240502.gz", "20240503", "20240504.bz2"]
    assert [p.name for p in expand_log_paths(rotated)] == [
        "accounting.10",
        "accounting.2.gz",
        "accounting.1",
        "accounting",
    ]
