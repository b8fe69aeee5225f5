"""DeepRM's synthetic workload (hongzimao/deeprm job_distribution.py): load, mix, ranges, seeds."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from gridtrace.cli import main
from gridtrace.errors import ConfigError
from gridtrace.models import (
    DEEPRM_PRESETS,
    DeepRMWorkload,
    deeprm_jobs,
    deeprm_trace,
    generate_preset_trace,
    get_deeprm,
    get_preset,
)
from gridtrace.schema import trace_metadata, validate

LONG = 200_000


def test_published_parameters_and_the_arrival_probability() -> None:
    w = DeepRMWorkload(load=0.7)
    # parameters.py: max_job_len 15, max_job_size 10, res_slot 10, num_res 2; Python 2 integer
    # division gives short 1..15/5, long 15*2/3..15, dominant 10/2..10, other 1..10/5
    assert (w.short_lengths, w.long_lengths) == ((1, 3), (10, 15))
    assert (w.dominant_demands, w.other_demands) == ((5, 10), (1, 2))
    assert w.mean_length == pytest.approx(0.8 * 2 + 0.2 * 12.5)  # 4.1 steps
    assert w.mean_demand == pytest.approx(0.5 * 7.5 + 0.5 * 1.5)  # 4.5 slots
    assert w.max_load == pytest.approx(1.845)
    assert w.arrival_probability == pytest.approx(0.7 / 1.845, rel=1e-15)
    assert w.name == "DeepRM-70"
    assert w.interactive_threshold_s == 3.0
    assert list(DEEPRM_PRESETS) == [f"DeepRM-{p}" for p in range(10, 181, 10)]
    assert get_deeprm("DeepRM-180").arrival_probability == pytest.approx(1.8 / 1.845)
    assert json.loads(json.dumps(w.to_dict()))["arrival_probability"] == w.arrival_probability


@pytest.mark.parametrize("load", [0.1, 0.9, 1.8])
def test_realised_load_matches_the_target(load: float) -> None:
    # relative sd of the realised load at 1e5 jobs is ≈ 0.55 % (measured over 100 seeds);
    # at 2e5 jobs ≈ 0.4 %: 2 % is five standard deviations
    w = DeepRMWorkload(load=load)
    jobs = deeprm_jobs(w, size=LONG, rng=int(load * 10))
    np.testing.assert_allclose(jobs.realised_load(w.res_slot), load, rtol=0.02)
    # the fraction of steps with an arrival is p (at most one job per step)
    assert np.all(np.diff(jobs.step) >= 1)
    assert LONG / jobs.steps == pytest.approx(w.arrival_probability, rel=0.02)
    # the trace's load on its P cores is the load of resource type 0
    trace = deeprm_trace(w, rng=3, size=LONG)
    run = trace.column("run_s").to_numpy()
    cores = trace.column("cores").to_numpy()
    span = trace.column("submit_s").to_numpy()[-1] + 1.0  # steps covered, 1 s per step
    assert float(np.sum(run * cores)) / (10 * span) == pytest.approx(load, rel=0.02)


def test_steps_mode_is_deeprms_simu_len() -> None:
    w = DeepRMWorkload(load=1.2)
    jobs = deeprm_jobs(w, steps=LONG, rng=5)
    assert jobs.steps == LONG
    assert jobs.step.max() < LONG
    np.testing.assert_allclose(jobs.realised_load(w.res_slot), 1.2, rtol=0.02)
    full = deeprm_jobs(DeepRMWorkload(load=1.845), steps=1000, rng=1)
    np.testing.assert_array_equal(full.step, np.arange(1000))  # p = 1: a job every step


def test_job_mix_and_ranges() -> None:
    w = DeepRMWorkload(load=0.5)
    jobs = deeprm_jobs(w, size=LONG, rng=11)
    short = jobs.length <= 3
    # 0.8 ± 4 standard errors (sqrt(0.16 / 2e5) ≈ 0.0009)
    assert short.mean() == pytest.approx(0.8, abs=0.0036)
    assert set(np.unique(jobs.length[short])) == {1, 2, 3}
    assert set(np.unique(jobs.length[~short])) == set(range(10, 16))
    rows = np.arange(jobs.step.shape[0])
    dominant = jobs.demand[rows, jobs.dominant]
    other = jobs.demand[rows, 1 - jobs.dominant]
    assert set(np.unique(dominant)) == set(range(5, 11))
    assert set(np.unique(other)) == {1, 2}
    assert jobs.dominant.mean() == pytest.approx(0.5, abs=0.0045)
    trace = deeprm_trace(w, rng=11, size=5000)
    validate(trace, "trace")
    cores = trace.column("cores").to_numpy()
    assert cores.min() >= 1
    assert cores.max() <= 10
    run = trace.column("run_s").to_numpy()
    inter = trace.column("interactive").to_numpy(zero_copy_only=False)
    np.testing.assert_array_equal(inter, run <= 3.0)  # interactive = DeepRM's short jobs
    meta = trace_metadata(trace)
    assert (meta["cores"], meta["tau_s"], meta["site"]) == (10, 3.0, "DeepRM-50")
    assert meta["provenance"]["preset_parameters"]["arrival_probability"] == pytest.approx(
        0.5 / 1.845
    )


def test_time_unit_scales_submissions_runtimes_and_tau() -> None:
    w = dataclasses.replace(get_deeprm("DeepRM-70"), time_unit_s=60.0)
    seconds = deeprm_trace(w, rng=2, size=3000)
    steps = deeprm_trace(get_deeprm("DeepRM-70"), rng=2, size=3000)
    np.testing.assert_array_equal(
        seconds.column("submit_s").to_numpy(), 60.0 * steps.column("submit_s").to_numpy()
    )
    np.testing.assert_array_equal(
        seconds.column("run_s").to_numpy(), 60.0 * steps.column("run_s").to_numpy()
    )
    assert trace_metadata(seconds)["tau_s"] == 180.0
    assert seconds.column("interactive").equals(steps.column("interactive"))


def test_draws_are_deterministic_per_seed() -> None:
    a = deeprm_trace(0.9, rng=4, size=2000)
    assert a.equals(deeprm_trace(0.9, rng=4, size=2000))
    assert a.equals(deeprm_trace(0.9, rng=np.random.SeedSequence(4), size=2000))
    assert not a.column("run_s").equals(deeprm_trace(0.9, rng=5, size=2000).column("run_s"))
    # presets are reachable through generate_preset_trace, with their own size by default
    b = generate_preset_trace("DeepRM-90", rng=4, size=2000)
    assert b.equals(a)
    assert generate_preset_trace("DeepRM-10", rng=1).num_rows == 10_000


def test_loads_beyond_the_generator_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"184\.5 %"):
        DeepRMWorkload(load=1.9)
    with pytest.raises(ConfigError, match="load"):
        DeepRMWorkload(load=0.0)
    with pytest.raises(ConfigError, match="max_job_size"):
        DeepRMWorkload(load=0.5, max_job_size=15)  # the "[10, 15]" does not fit 10
    with pytest.raises(ConfigError, match="time_unit_s"):
        DeepRMWorkload(load=0.5, time_unit_s=0.0)
    with pytest.raises(ConfigError, match="exactly one"):
        deeprm_jobs(DeepRMWorkload(load=0.5), size=10, steps=10, rng=0)
    with pytest.raises(ConfigError, match=r"DeepRM-10 … DeepRM-180 .*184\.5 %"):
        get_preset("DeepRM-190")
    with pytest.raises(ConfigError, match="unknown DeepRM preset"):
        get_deeprm("DeepRM-190")
    with pytest.raises(ConfigError, match="no VOs"):
        generate_preset_trace("DeepRM-50", rng=0, users_per_vo=2)


def test_cli_synth_draws_a_deeprm_preset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["synth", "--preset", "DeepRM-50", "--seed", "3", "--jobs", "500", "-o", str(tmp_path)]
    assert main([*args, "--time-unit", "60", "--swf"]) == 0
    text = capsys.readouterr().out
    assert "DeepRM preset DeepRM-50 (P = 10, load 0.5, Bernoulli p = 0.271" in text
    table = pq.read_table(tmp_path / "DeepRM-50-synth-seed3.parquet")
    validate(table, "trace")
    assert table.num_rows == 500
    assert (tmp_path / "DeepRM-50-synth-seed3.swf").exists()
    assert np.all(table.column("submit_s").to_numpy() % 60.0 == 0.0)
    pe1 = ["synth", "--preset", "PE-1", "--seed", "1", "--time-unit", "2", "-o", str(tmp_path)]
    assert main(pe1) == 2  # --time-unit is for DeepRM presets only
