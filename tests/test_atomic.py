from __future__ import annotations

import os
import stat
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gridtrace._atomic import atomic_path, write_parquet, write_text


def test_a_failed_write_leaves_the_old_output_and_no_temporary(tmp_path: Path) -> None:
    out = tmp_path / "summary.json"
    write_text(out, "old\n")

    def killed_mid_write() -> None:
        with atomic_path(out) as temporary:
            temporary.write_text("half of the ne")
            raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        killed_mid_write()
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


def test_the_temporary_is_hidden_beside_the_target_until_the_rename(tmp_path: Path) -> None:
    out = tmp_path / "jobs.parquet"
    with atomic_path(out) as temporary:
        assert temporary.parent == tmp_path
        assert temporary.name.startswith(".jobs.parquet.")
        assert not out.exists()
    assert out.exists()
    assert not temporary.exists()


def test_parquet_round_trip_and_permissions_follow_the_umask(tmp_path: Path) -> None:
    table = pa.table({"x": [1, 2, 3]})
    out = tmp_path / "t.parquet"
    old = os.umask(0o022)
    try:
        write_parquet(table, out)
    finally:
        os.umask(old)
    assert pq.read_table(out).equals(table)
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
