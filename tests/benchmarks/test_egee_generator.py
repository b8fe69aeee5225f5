"""benchmarks/egee_scale.py's generator: the same log whatever the processes, readable back."""

from __future__ import annotations

import gzip
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pyarrow as pa
import pytest

from gridtrace.logs import read_torque
from gridtrace.logs._torque_writer import _reference_day_texts, torque_day_texts

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "egee_scale.py"


@pytest.fixture(scope="module")
def egee() -> ModuleType:
    spec = importlib.util.spec_from_file_location("egee_scale_benchmark", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # worker processes find its functions by name
    spec.loader.exec_module(module)
    return module


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_the_log_is_the_same_whatever_the_processes(egee: ModuleType, tmp_path: Path) -> None:
    options = {"days": 9, "seed": 5, "compress": True}
    one = egee.generate(tmp_path / "one", 4500, workers=1, **options)
    two = egee.generate(tmp_path / "two", 4500, workers=2, **options)
    three = egee.generate(tmp_path / "three", 4500, workers=3, **options)
    assert one["lines"] == two["lines"] == three["lines"] == 3 * 4500
    assert _files(tmp_path / "one") == _files(tmp_path / "two") == _files(tmp_path / "three")
    other = egee.generate(tmp_path / "other", 4500, workers=1, days=9, seed=6, compress=True)
    assert _files(tmp_path / "other") != _files(tmp_path / "one")
    assert other["lines"] == 3 * 4500
    # each file is a whole local day, gzip without a name or a time in its header
    first = next(iter(_files(tmp_path / "one").values()))
    assert first[4:8] == b"\x00\x00\x00\x00"
    assert all(name.endswith(".gz") for name in _files(tmp_path / "one"))


def test_days_parse_back_to_every_job(egee: ModuleType, tmp_path: Path) -> None:
    egee.generate(tmp_path / "log", 3000, days=4, seed=1, compress=False, workers=2)
    parsed = read_torque(tmp_path / "log", site="demo", tz=egee.TZ, errors="raise")
    assert parsed.lines_read == parsed.lines_parsed == 3 * 3000
    assert parsed.jobs.num_rows == 3000
    ids = sorted(parsed.jobs.column("job_seq").to_pylist())
    assert ids == list(range(1000, 4000))
    # a day's plain text is what gzip would hold
    text = b"".join(p.read_bytes() for p in sorted((tmp_path / "log").iterdir()))
    assert text.count(b"\n") == 3 * 3000
    assert gzip.decompress(gzip.compress(text)) == text


def test_a_day_of_jobs_is_written_as_the_per_job_writer_writes_it(egee: ModuleType) -> None:
    seed = np.random.SeedSequence(3).spawn(2)[1]
    jobs = egee.day_jobs(1, 500, 400, seed)
    assert jobs.num_rows == 400
    submit = jobs.column("submit_time").cast(pa.int64()).to_numpy() - int(egee.ORIGIN.timestamp())
    assert submit.min() >= 86400
    assert submit.max() <= 2 * 86400
    assert (np.diff(submit) >= 0).all()
    assert jobs.column("job_id_raw")[0].as_py() == "1500.demo-ce"
    assert torque_day_texts(jobs, tz=egee.TZ) == _reference_day_texts(jobs, tz=egee.TZ)
