"""WorkloadModel: fit on known presets, sample statistics, determinism, JSON, CLI, real data."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from gridtrace.cli import main
from gridtrace.errors import ConfigError, FitError, NotFittedError
from gridtrace.logs import VOMapping, build_trace, read_swf
from gridtrace.models import (
    ExponentialRuntime,
    MMPPArrivals,
    PoissonArrivals,
    WorkloadModel,
    ctmc_mmpp_arrival_times,
    generate_preset_trace,
    get_preset,
    trace_to_jobs,
)
from gridtrace.schema import TRACE, conform, trace_metadata, validate, with_trace_metadata

EXP_ONLY = ("exponential",)


@pytest.fixture(scope="module")
def pe1() -> pa.Table:
    return generate_preset_trace("PE-1", rng=11)


@pytest.fixture(scope="module")
def pe1_model(pe1: pa.Table) -> WorkloadModel:
    return WorkloadModel(arrivals="auto", k_max=2).fit(pe1)


def _np(table: pa.Table, name: str) -> np.ndarray:
    return np.asarray(table.column(name).to_numpy(zero_copy_only=False))


def _trace(
    submit: np.ndarray,
    run: np.ndarray,
    *,
    vo: list[str | None] | None = None,
    cores: np.ndarray | None = None,
    walltime: np.ndarray | None = None,
    tau_s: float = 900.0,
) -> pa.Table:
    n = submit.shape[0]
    run = np.asarray(run, dtype=np.float64)
    table = pa.table(
        {
            "job_id": pa.array(np.arange(n, dtype=np.int64)),
            "submit_s": pa.array(np.asarray(submit, dtype=np.float64)),
            "run_s": pa.array(run),
            "cores": pa.array(
                np.ones(n, dtype=np.int32) if cores is None else cores.astype(np.int32)
            ),
            "walltime_req_s": pa.array(walltime, pa.float64())
            if walltime is not None
            else pa.nulls(n, pa.float64()),
            "vo": pa.array(vo if vo is not None else ["a"] * n, pa.string()),
            "interactive": pa.array(run <= tau_s),
        }
    )
    return with_trace_metadata(
        conform(table, TRACE),
        origin="2004-01-01T00:00:00+00:00",
        site="t",
        cores=8,
        tau_s=tau_s,
        provenance={},
    )


# --- hyperexponentials on the class ranges -------------------------------------------------------


def _check_phases(m: WorkloadModel, job_class: str) -> None:
    """A chosen H_k's phases as the summary shows them: each holds jobs, each mean in the range."""
    params = m.summary()["runtimes"][job_class]["parameters"]
    n = m.runtime_models_[job_class].n_samples_
    weights = np.asarray(params["class_weights"])
    means = np.asarray(params["phase_means_s"])
    assert weights.sum() == pytest.approx(1.0)
    assert np.all(weights * n >= 10)
    if job_class == "interactive":
        assert np.all((means > 0) & (means <= m.tau_s_))
    else:
        assert np.all(means > m.tau_s_)


@pytest.mark.parametrize("seed", [1, 2])
def test_hyperexponentials_on_exponential_runtimes_are_refused_or_lose_to_h1(seed: int) -> None:
    # exponential runtimes (PE-3: μ = 7.7e-4, half the jobs interactive), hyperexponentials only:
    # the choice drops to H1 (the exponential), and an H_k left out says why. (Seed 2 is the draw
    # whose truncated H2 once reached a CPU-dependent degenerate optimum: a flat phase of rate
    # ~1e-11/s holding a raw weight of 5e-8.)
    trace = generate_preset_trace("PE-3", rng=seed, size=5000)
    m = WorkloadModel(arrivals="poisson", runtime_families=["hyperexponential"]).fit(trace)
    for job_class in ("interactive", "batch"):
        label = m.runtime_labels_[job_class]
        assert label in ("exponential", "hyperexponential(k=2)")
        if label == "exponential":
            assert f"{job_class}: every hyperexponential refused; using H1" in " ".join(
                m.fit_notes_
            )
        else:
            _check_phases(m, job_class)
        bic = m.bic_table_["runtimes"][job_class]
        assert bic["hyperexponential(k=2)"] is not None  # kept in the table, chosen or not
        for label_k, reason in m.runtime_excluded_.get(job_class, {}).items():
            assert label_k.startswith("hyperexponential(k=")
            assert reason.startswith("refused: ")
    # what was left out, and why, is part of the summary and survives JSON
    assert m.summary()["runtime_excluded"] == m.runtime_excluded_
    back = WorkloadModel.from_dict(json.loads(json.dumps(m.to_dict(), allow_nan=False)))
    assert back.runtime_excluded_ == m.runtime_excluded_
    old = m.to_dict()
    del old["fitted"]["runtime_excluded"]
    assert WorkloadModel.from_dict(old).runtime_excluded_ == {}


@pytest.mark.parametrize(("name", "seed"), [("PE-1", 3), ("PE-2", 4), ("PE-3", 5), ("PE-4", 6)])
def test_pe_presets_get_one_phase_and_no_degenerate_value(name: str, seed: int) -> None:
    # the PE presets have exponential runtimes: BIC picks one phase (k = 1) in both classes, with
    # the preset's μ; every H_k tried is either refused with a reason or has proper phases
    preset = get_preset(name)
    trace = generate_preset_trace(name, rng=seed, size=6000)
    m = WorkloadModel(arrivals="poisson").fit(trace)
    assert m.runtime_labels_ == {"interactive": "exponential", "batch": "exponential"}
    batch = m.runtime_models_["batch"]
    assert isinstance(batch, ExponentialRuntime)
    assert batch.rate_ == pytest.approx(preset.service_rate, rel=0.06)
    summary = m.summary()["runtimes"]
    inter = summary["interactive"]["parameters"]
    # the interactive class is a slice of one exponential: its mean on (0, τ] is the truncated
    # exponential's (at f = 0.1 it is nearly flat, and may be held flat: then it says so)
    mu = preset.service_rate
    expected = 1 / mu - 900.0 / math.expm1(mu * 900.0)
    assert inter["class_mean_s"] == pytest.approx(expected, rel=0.06)
    if "flat_on_class_range" in inter:
        assert inter["rate"] * 900.0 == pytest.approx(0.05)
    for job_class in ("interactive", "batch"):
        for reason in m.runtime_excluded_.get(job_class, {}).values():
            assert reason.startswith("refused: ")
        gof = summary[job_class]["goodness_of_fit"]
        assert gof["ks_d"] < 2 * gof["ks_noise"]  # the true family fits within sampling noise


def test_short_and_long_jobs_give_an_h2_with_a_flat_phase_on_the_interactive_class() -> None:
    # 40 % short jobs (mean 60 s), 60 % long ones (mean 20,000 s): the interactive class holds the
    # short jobs and the bottom of the long ones, flat on (0, τ]. H2 is chosen there, its flat
    # phase flagged, its weights the shares of the class's jobs (no raw weight of 1e-11)
    gen = np.random.default_rng(21)
    n = 20_000
    run = np.where(gen.random(n) < 0.4, gen.exponential(60.0, n), gen.exponential(20_000.0, n))
    m = WorkloadModel(arrivals="poisson").fit(_trace(np.arange(n) * 30.0, run))
    assert m.runtime_labels_ == {"interactive": "hyperexponential(k=2)", "batch": "exponential"}
    _check_phases(m, "interactive")
    params = m.summary()["runtimes"]["interactive"]["parameters"]
    short = 0.4 * -math.expm1(-900.0 / 60.0)
    long_below = 0.6 * -math.expm1(-900.0 / 20_000.0)
    # the short phase: 94 % of the class, mean 60 s (the long phase's slice adds a little slope)
    assert params["class_weights"][0] == pytest.approx(short / (short + long_below), abs=0.015)
    assert params["phase_means_s"][0] == pytest.approx(60.0, rel=0.06)
    assert params["phase_means_s"][1] == pytest.approx(450.0, rel=0.1)
    batch = m.runtime_models_["batch"]
    assert isinstance(batch, ExponentialRuntime)
    assert batch.rate_ * 20_000.0 == pytest.approx(1.0, rel=0.03)
    gof = m.summary()["runtimes"]["interactive"]["goodness_of_fit"]
    assert gof["ks_d"] < 2 * gof["ks_noise"]
    # the model samples the class as it was fitted
    s = m.sample(20_000, rng=3)
    srun = _np(s, "run_s")
    sinter = _np(s, "interactive")
    assert np.median(srun[sinter]) == pytest.approx(np.median(run[run <= 900.0]), rel=0.06)


# --- recovery on the PE-1 preset -----------------------------------------------------------------


def test_fit_recovers_pe1_rate_and_interactive_fraction(pe1: pa.Table, pe1_model: WorkloadModel):
    preset = get_preset("PE-1")
    m = pe1_model
    # BIC picks Poisson on Poisson data (k = 1), and the MLE is within 3 % of λ = 8.8971e-3
    assert m.arrival_choice_ == {"site": "poisson"}
    # and Ljung-Box finds no dependence between the gaps (Q ≈ its 20 degrees of freedom here,
    # far from the 5 % critical value 31.4)
    lb = m.summary()["arrival_streams"][0]["ljung_box"]
    assert lb["statistic"] < 28.0
    assert not lb["rejects_5pct"]
    stream = m.streams_[0].model
    assert isinstance(stream, PoissonArrivals)
    assert stream.rate_ == pytest.approx(preset.arrival_rate, rel=0.03)
    # f of PE-1 is 0.1 by construction; 10,000 jobs give a binomial sd of 0.003
    assert m.interactive_fraction_ == pytest.approx(0.1, abs=0.01)
    assert m.tau_s_ == 900.0
    assert m.cores_ == 80
    # both classes are exponential pieces of one exponential: the truncated fits find μ
    assert m.runtime_labels_ == {"interactive": "exponential", "batch": "exponential"}
    batch = m.runtime_models_["batch"]
    assert isinstance(batch, ExponentialRuntime)
    assert batch.rate_ == pytest.approx(preset.service_rate, rel=0.03)
    # VO shares 0.53/0.14/0.17/0.16 within 1.5 points
    shares = dict(zip(m.vo_names_, m.vo_probs_, strict=True))
    for name, share in preset.vo_shares.items():
        assert shares[name] == pytest.approx(share, abs=0.015)
    assert m.cores_values_.tolist() == [1]
    assert m.cores_probs_.tolist() == [1.0]
    # the BIC table lists every candidate; the chosen ones are its minima
    arrivals = m.bic_table_["arrivals"]["site"]
    assert set(arrivals) == {"poisson", "mmpp(k=1)", "mmpp(k=2)"}
    assert arrivals["poisson"] == pytest.approx(arrivals["mmpp(k=1)"], rel=1e-9)
    for job_class in ("interactive", "batch"):
        table = m.bic_table_["runtimes"][job_class]
        assert set(table) == {
            "exponential",
            "hyperexponential(k=2)",
            "hyperexponential(k=3)",
            "lognormal",
            "weibull",
            "gamma",
        }
        finite = {k: v for k, v in table.items() if v is not None}
        assert min(finite, key=lambda k: finite[k]) == "exponential"


def test_sample_matches_fitted_statistics(pe1: pa.Table, pe1_model: WorkloadModel) -> None:
    m = pe1_model
    s = m.sample(40_000, rng=5)
    validate(s, "trace")
    run = _np(s, "run_s")
    inter = _np(s, "interactive")
    # interactive flag follows from the runtime, never drawn separately
    assert np.array_equal(inter, run <= 900.0)
    # interactive fraction: sampled f is Binomial(40000, f̂)/40000 (sd 0.0015)
    assert inter.mean() == pytest.approx(m.interactive_fraction_, abs=0.006)
    # mean runtime per class within 4 % of the fitted trace's
    run0 = _np(pe1, "run_s")
    i0 = run0 <= 900.0
    assert run[inter].mean() == pytest.approx(run0[i0].mean(), rel=0.04)
    assert run[~inter].mean() == pytest.approx(run0[~i0].mean(), rel=0.04)
    assert run[inter].max() <= 900.0
    assert run[~inter].min() > 900.0
    # VO shares within 1 point
    counts = pc.value_counts(s["vo"]).to_pylist()
    got = {c["values"]: c["counts"] / s.num_rows for c in counts}
    for name, share in zip(m.vo_names_, m.vo_probs_, strict=True):
        assert got[name] == pytest.approx(share, abs=0.01)
    # arrival rate within 2 %
    submit = _np(s, "submit_s")
    assert np.all(np.diff(submit) >= 0)
    assert (s.num_rows - 1) / (submit[-1] - submit[0]) == pytest.approx(
        m.streams_[0].model.rate_, rel=0.02
    )
    meta = trace_metadata(s)
    assert meta["site"] == "PE-1-synth"
    assert meta["cores"] == 80
    assert meta["tau_s"] == 900.0
    assert meta["provenance"]["seed"] == 5
    assert meta["provenance"]["model"]["arrival_streams"][0]["model"] == "poisson"


def test_class_first_sampling_keeps_a_bimodal_interactive_fraction() -> None:
    # a bimodal workload: 70 % short lognormal jobs, 30 % long ones; one lognormal fitted to
    # everything would put the wrong mass below τ — the class-first scheme keeps f
    gen = np.random.default_rng(3)
    n = 6000
    short = gen.random(n) < 0.7
    run = np.where(short, gen.lognormal(4.0, 1.0, n), gen.lognormal(9.5, 0.6, n))
    submit = np.cumsum(gen.exponential(60.0, n))
    trace = _trace(submit, run)
    f = float(np.mean(run <= 900))
    m = WorkloadModel(arrivals="poisson", runtime_families=("lognormal",)).fit(trace)
    s = m.sample(30_000, rng=2)
    inter = _np(s, "interactive")
    assert inter.mean() == pytest.approx(f, abs=0.01)
    srun = _np(s, "run_s")
    assert np.median(srun[inter]) == pytest.approx(np.median(run[run <= 900]), rel=0.06)
    assert np.median(srun[~inter]) == pytest.approx(np.median(run[run > 900]), rel=0.06)
    # the alternative (one lognormal for all jobs) misses f by more than 3 points here
    from gridtrace.models import LogNormalRuntime

    whole = LogNormalRuntime().fit(run)
    assert abs(float(whole.cdf(np.asarray([900.0]))[0]) - f) > 0.03


def test_truncated_fit_beats_a_plain_fit_on_the_interactive_class() -> None:
    # exponential runtimes, mean 1000 s: the interactive runtimes are its piece below τ
    gen = np.random.default_rng(8)
    run = gen.exponential(1000.0, 20_000)
    trace = _trace(np.arange(run.shape[0], dtype=float), run)
    m = WorkloadModel(arrivals="poisson", runtime_families=EXP_ONLY).fit(trace)
    inter = m.runtime_models_["interactive"]
    assert isinstance(inter, ExponentialRuntime)
    assert inter.rate_ == pytest.approx(1e-3, rel=0.08)
    plain = ExponentialRuntime().fit(run[run <= 900])
    assert plain.rate_ > 2.0e-3  # 1 / mean of the piece: biased by a factor > 2


# --- MMPP arrivals, streams, cores, per VO ------------------------------------------------------


def test_mmpp_arrivals_are_chosen_on_bursty_data() -> None:
    q = [[-1 / 3600, 1 / 3600], [1 / 900, -1 / 900]]
    submit, _ = ctmc_mmpp_arrival_times([0.02, 0.2], q, size=6000, rng=4)
    run = np.random.default_rng(1).exponential(3000.0, submit.shape[0])
    trace = _trace(submit, run)
    m = WorkloadModel(arrivals="auto", k_max=2, runtime_families=EXP_ONLY).fit(trace)
    assert m.arrival_choice_ == {"site": "mmpp(k=2)"}
    model = m.streams_[0].model
    assert isinstance(model, MMPPArrivals)
    np.testing.assert_allclose(model.rates_, [0.02, 0.2], rtol=0.1)
    forced = WorkloadModel(arrivals="poisson", runtime_families=EXP_ONLY).fit(trace)
    # the held-out part of the trace is likelier under the MMPP model
    assert m.score(trace) > forced.score(trace)
    # the evidence the summary carries: Ljung-Box rejects independent gaps, whatever the model
    for fitted in (m, forced):
        lb = fitted.summary()["arrival_streams"][0]["ljung_box"]
        assert lb["rejects_5pct"]
        assert lb["statistic"] > 10 * 31.4  # χ²_20 at 5 %
    back = WorkloadModel.from_dict(json.loads(json.dumps(m.to_dict(), allow_nan=False)))
    assert back.summary()["arrival_streams"] == m.summary()["arrival_streams"]
    assert back.runtime_gof_ == m.runtime_gof_
    s = m.sample(5000, rng=9)
    assert s.num_rows == 5000


def test_streams_per_class_and_per_vo(pe1: pa.Table) -> None:
    small = pe1.slice(0, 3000)
    by_class = WorkloadModel(arrivals="poisson", streams="class", runtime_families=EXP_ONLY).fit(
        small
    )
    assert [s.name for s in by_class.streams_] == ["interactive", "batch"]
    s = by_class.sample(20_000, rng=1)
    assert _np(s, "interactive").mean() == pytest.approx(by_class.interactive_fraction_, abs=0.01)
    by_vo = WorkloadModel(
        arrivals="poisson", streams="vo", min_vo_jobs=500, runtime_families=EXP_ONLY
    ).fit(small)
    names = [st.name for st in by_vo.streams_]
    assert names[-1] == "other"
    assert "vo:vo1" in names
    # the per-VO rates add up to the site rate
    total = sum(st.model.rate_ for st in by_vo.streams_)  # type: ignore[attr-defined]
    site = (small.num_rows - 1) / float(np.ptp(_np(small, "submit_s")))
    assert total == pytest.approx(site, rel=0.05)
    sv = by_vo.sample(horizon_s=200_000.0, rng=3)
    assert _np(sv, "submit_s").max() <= 200_000.0
    assert sv.num_rows == pytest.approx(site * 200_000.0, rel=0.1)


def test_per_vo_runtimes_and_cores_law() -> None:
    gen = np.random.default_rng(12)
    n = 4000
    vo = np.where(gen.random(n) < 0.5, "fast", "slow")
    run = np.where(vo == "fast", gen.exponential(300.0, n), gen.exponential(20_000.0, n))
    cores = gen.choice([1, 4, 8], size=n, p=[0.6, 0.3, 0.1])
    trace = _trace(np.arange(n) * 30.0, run, vo=list(vo), cores=cores)
    m = WorkloadModel(
        arrivals="poisson", per_vo=True, runtime_families=EXP_ONLY, min_vo_jobs=50
    ).fit(trace)
    assert m.interactive_fraction_vo_["fast"] == pytest.approx(1 - math.exp(-3), abs=0.03)
    assert m.interactive_fraction_vo_["slow"] == pytest.approx(1 - math.exp(-0.045), abs=0.02)
    assert "fast/interactive" in m.bic_table_["runtimes"]
    s = m.sample(20_000, rng=4)
    svo = np.asarray(s.column("vo").to_pylist())
    srun = _np(s, "run_s")
    assert np.mean(srun[svo == "fast"] <= 900) == pytest.approx(1 - math.exp(-3), abs=0.03)
    assert np.mean(srun[svo == "slow"] <= 900) == pytest.approx(1 - math.exp(-0.045), abs=0.02)
    assert m.cores_values_.tolist() == [1, 4, 8]
    got = np.bincount(_np(s, "cores"), minlength=9)[[1, 4, 8]] / s.num_rows
    np.testing.assert_allclose(got, m.cores_probs_, atol=0.015)


def test_censored_batch_runtimes_at_the_walltime_limit() -> None:
    gen = np.random.default_rng(5)
    n = 8000
    true = gen.exponential(10_000.0, n)
    limit = np.full(n, 12_000.0)
    run = np.minimum(true, limit)
    trace = _trace(np.arange(n) * 10.0, run, walltime=limit)
    censored = WorkloadModel(arrivals="poisson", runtime_families=EXP_ONLY).fit(trace)
    naive = WorkloadModel(arrivals="poisson", runtime_families=EXP_ONLY, censor=False).fit(trace)
    rate_c = censored.runtime_models_["batch"].rate_  # type: ignore[attr-defined]
    rate_n = naive.runtime_models_["batch"].rate_  # type: ignore[attr-defined]
    assert rate_c == pytest.approx(1e-4, rel=0.05)
    assert rate_n > 1.3e-4  # ignoring censoring overstates the rate


# --- determinism, JSON, errors -------------------------------------------------------------------


def test_sampling_is_deterministic_per_seed(pe1_model: WorkloadModel) -> None:
    a = pe1_model.sample(3000, rng=42)
    b = pe1_model.sample(3000, rng=42)
    c = pe1_model.sample(3000, rng=43)
    assert a.equals(b)
    assert a.schema.metadata == b.schema.metadata
    assert not a.equals(c)
    # a SeedSequence and its int seed give the same table
    d = pe1_model.sample(3000, rng=np.random.SeedSequence(42))
    assert d.equals(a)


def test_json_round_trip_is_exact(pe1_model: WorkloadModel) -> None:
    text = json.dumps(pe1_model.to_dict(), allow_nan=False)
    again = WorkloadModel.from_dict(json.loads(text))
    assert again.to_dict() == pe1_model.to_dict()
    assert again.sample(2000, rng=7).equals(pe1_model.sample(2000, rng=7))
    assert again.sample(horizon_s=50_000.0, rng=8).equals(
        pe1_model.sample(horizon_s=50_000.0, rng=8)
    )
    assert again.bic() == pe1_model.bic()


def test_json_round_trip_with_mmpp_per_vo_and_vo_streams(pe1: pa.Table) -> None:
    small = pe1.slice(0, 2500)
    m = WorkloadModel(
        arrivals="mmpp",
        k_max=2,
        streams="vo",
        per_vo=True,
        min_vo_jobs=300,
        runtime_families=("exponential", "hyperexponential"),
        runtime_k_max=2,
    ).fit(small)
    assert all(label == "mmpp(k=2)" for label in m.arrival_choice_.values())
    # each MMPP says how its fit ended: at a maximum, from which of its starts, with which α
    for stream in m.summary()["arrival_streams"]:
        fit = stream["fit"]
        assert fit["converged"]
        assert fit["start_vector"] == "estimated"
        assert fit["starts"] >= 2
        assert isinstance(fit["best_start"], str)
    again = WorkloadModel.from_dict(json.loads(json.dumps(m.to_dict(), allow_nan=False)))
    assert again.sample(1500, rng=1).equals(m.sample(1500, rng=1))
    assert again.score(small) == m.score(small)


def test_score_and_bic(pe1: pa.Table) -> None:
    train, test = pe1.slice(0, 7000), pe1.slice(7000)
    # H_2 is in: on exponential data its truncated fit drifts to rates near 0, the limit in
    # which 1 − S(τ) cancels; the class mass must be computed without cancellation
    m = WorkloadModel(
        arrivals="poisson", runtime_families=("exponential", "hyperexponential"), runtime_k_max=2
    ).fit(train)
    assert m.runtime_labels_ == {"interactive": "exponential", "batch": "exponential"}
    parts = m.score_components(test)
    assert parts["jobs"] == 3000
    assert parts["total"] == pytest.approx(parts["arrivals"] + parts["runtimes"])
    assert m.score(test) == pytest.approx(parts["total"] / 3000)
    # arrivals: Poisson log density per interval ≈ log λ − 1 with λ ≈ 8.9e-3
    assert parts["arrivals"] / 2999 == pytest.approx(math.log(8.8971e-3) - 1.0, abs=0.05)
    # runtimes: the exponential density's entropy per job, −(1 + ln(1/μ)) with μ = 1.1707e-4
    assert parts["runtimes"] / 3000 == pytest.approx(-(1 + math.log(1 / 1.1707e-4)), abs=0.05)
    assert math.isfinite(m.bic())
    assert m.bic() > 0


def test_errors_are_explicit(pe1: pa.Table) -> None:
    with pytest.raises(NotFittedError):
        WorkloadModel().sample(10, rng=0)
    with pytest.raises(ConfigError, match="arrivals"):
        WorkloadModel(arrivals="hawkes").fit(pe1)
    with pytest.raises(ConfigError, match="runtime_families"):
        WorkloadModel(runtime_families=("pareto",)).fit(pe1)
    with pytest.raises(ConfigError, match="k_max"):
        WorkloadModel(arrivals="mmpp", k_max=1).fit(pe1)
    m = WorkloadModel(arrivals="poisson", runtime_families=EXP_ONLY).fit(pe1.slice(0, 500))
    with pytest.raises(ConfigError, match="exactly one"):
        m.sample(10, horizon_s=10.0, rng=0)
    with pytest.raises(ConfigError, match="exactly one"):
        m.sample(rng=0)
    assert m.sample(0, rng=0).num_rows == 0
    with pytest.raises(FitError, match="interactive"):
        WorkloadModel(arrivals="poisson").fit(_trace(np.arange(50.0), np.r_[5.0, [2000.0] * 49]))
    with pytest.raises(ConfigError, match="not a workload"):
        WorkloadModel.from_dict({"kind": "mmpp"})


def test_zero_runtimes_are_floored_and_counted() -> None:
    gen = np.random.default_rng(2)
    run = np.where(gen.random(3000) < 0.2, 0.0, gen.lognormal(5.0, 1.0, 3000))
    trace = _trace(np.arange(3000) * 20.0, run)
    m = WorkloadModel(arrivals="poisson", runtime_families=("lognormal", "exponential")).fit(trace)
    model = m.runtime_models_["interactive"]
    assert model.n_floored_ == int(np.sum(run < 1.0))
    without = WorkloadModel(arrivals="poisson", runtime_families=("lognormal",), floor_s=None)
    with pytest.raises(FitError, match="no runtime family"):
        without.fit(trace)


# --- SWF export ----------------------------------------------------------------------------------


def test_trace_to_jobs_rounds_and_flags() -> None:
    trace = _trace(np.asarray([0.0, 1.4, 2.0]), np.asarray([10.0, 950.6, 3.0]), vo=["a", None, "b"])
    jobs = trace_to_jobs(trace)
    validate(jobs, "jobs")
    assert jobs.column("run_s").to_pylist() == [10, 951, 3]
    assert jobs.column("flags").to_pylist() == [None, ["ROUNDED"], None]
    assert jobs.column("group").to_pylist() == ["a", None, "b"]
    assert jobs.column("job_seq").to_pylist() == [1, 2, 3]
    origin = 1072915200  # 2004-01-01 UTC
    assert pc.cast(jobs["submit_time"], pa.int64()).to_pylist() == [origin, origin + 1, origin + 2]


# --- CLI -----------------------------------------------------------------------------------------


def test_cli_fit_and_synth_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "traces"
    assert (
        main(
            [
                "synth",
                "--preset",
                "PE-1",
                "--seed",
                "3",
                "--jobs",
                "2500",
                "-o",
                str(out),
                "--name",
                "pe1",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "fit",
                str(out / "pe1.parquet"),
                "-o",
                str(tmp_path / "models"),
                "--arrivals",
                "poisson",
                "--seed",
                "1",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "arrivals [site]: poisson, rate" in text
    assert "held-out LL per arrival (last 30 %)" in text
    assert "runtimes [batch]: exponential" in text
    model_path = tmp_path / "models" / "pe1.json"
    data = json.loads(model_path.read_text())
    assert data["kind"] == "workload"
    assert data["params"]["arrivals"] == "poisson"
    summary = json.loads((tmp_path / "models" / "pe1.fit-summary.json").read_text())
    assert summary["heldout_arrivals"]["site"]["gain"] == 0.0
    # both files written whole (through a temporary file renamed), nothing else left behind
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == [
        "pe1.fit-summary.json",
        "pe1.json",
    ]
    # the arrivals' Ljung-Box test and the runtimes' goodness of fit, printed and in the summary
    assert "  Ljung-Box on inter-arrival times (" in text
    assert "  fit: KS D = " in text
    assert "Lilliefors exponential on run − 900 s of" in text
    lb = summary["summary"]["arrival_streams"][0]["ljung_box"]
    assert lb["lags"] == 20
    assert lb["n_gaps"] == 2499
    assert isinstance(lb["rejects_5pct"], bool)
    for job_class in ("interactive", "batch"):
        gof = summary["summary"]["runtimes"][job_class]["goodness_of_fit"]
        assert gof["ks_d"] < 2 * gof["ks_noise"]  # exponential runtimes, exponential model
        assert "effect sizes" in gof["note"]
    assert summary["summary"]["runtimes"]["batch"]["goodness_of_fit"]["lilliefors"]["pvalue"] > 0
    # the IDC/ACF band of 20 replicas (Poisson fitted to Poisson: the trace mostly inside)
    assert "replica band (20 draws, 95 %): trace IDC(t) inside at" in text
    band = summary["replica_band"]
    assert band["replicas"] == 20
    assert sum(band["idc"]["inside"]) >= 0.7 * len(band["idc"]["inside"])
    assert len(band["acf"]["lag"]) == 50
    synth = tmp_path / "synth"
    assert (
        main(
            [
                "synth",
                "--model",
                str(model_path),
                "--seed",
                "5",
                "--jobs",
                "800",
                "-o",
                str(synth),
                "--swf",
            ]
        )
        == 0
    )
    table = pq.read_table(synth / "pe1-synth-seed5.parquet")
    validate(table, "trace")
    assert table.num_rows == 800
    again = WorkloadModel.from_dict(data).sample(800, rng=5)
    assert table.equals(again.replace_schema_metadata(table.schema.metadata))
    swf = read_swf(synth / "pe1-synth-seed5.swf")
    assert swf.jobs.num_rows == 800
    assert swf.jobs.column("run_s").to_pylist() == np.rint(_np(table, "run_s")).astype(int).tolist()
    assert (
        main(
            [
                "synth",
                "--model",
                str(model_path),
                "--seed",
                "5",
                "--horizon",
                "3600",
                "-o",
                str(synth),
                "--name",
                "hour",
            ]
        )
        == 0
    )
    hour = pq.read_table(synth / "hour.parquet")
    assert _np(hour, "submit_s").max() <= 3600.0
    # both --jobs and --horizon, or --horizon with a preset: an error, exit status 2
    assert (
        main(
            [
                "synth",
                "--model",
                str(model_path),
                "--seed",
                "1",
                "--jobs",
                "5",
                "--horizon",
                "9",
                "-o",
                str(synth),
            ]
        )
        == 2
    )
    assert (
        main(["synth", "--preset", "PE-1", "--seed", "1", "--horizon", "9", "-o", str(synth)]) == 2
    )


# --- real data -----------------------------------------------------------------------------------


@pytest.mark.realdata
def test_lpc_egee_2004_workload_model(real_data: Path) -> None:
    path = real_data / "swf/LPC-EGEE-2004-1.2-cln.swf.gz"
    jobs = VOMapping(fallback_field="group").apply(read_swf(path).jobs)
    trace = build_trace(jobs, cores=140).slice(0, 10_000)
    m = WorkloadModel(arrivals="auto", k_max=3).fit(trace)
    assert m.cores_ == 140
    assert m.tau_s_ == 900.0
    assert m.interactive_fraction_ == pytest.approx(0.9354, abs=1e-4)
    # every candidate converged (MMPP k = 3 within 1000 iterations); the only notes are
    # hyperexponentials refused and left out of the BIC choice
    assert m.fit_notes_
    for note in m.fit_notes_:
        assert "hyperexponential(k=" in note
        assert "refused, left out of the BIC choice" in note
    # arrivals: BIC falls from Poisson to k = 2 to k = 3
    bic = m.bic_table_["arrivals"]["site"]
    assert bic["poisson"] > bic["mmpp(k=2)"] > bic["mmpp(k=3)"]
    assert m.arrival_choice_ == {"site": "mmpp(k=3)"}
    model = m.streams_[0].model
    assert isinstance(model, MMPPArrivals)
    # the fit ends at a maximum, far above the local one single-start EM stopped at (-45879.65)
    assert model.converged_
    assert model.gradient_norm_ <= model.grad_tol
    assert model.log_likelihood_ > -45600.0
    assert model.rates_[0] < 1e-3 < 0.03 < model.rates_[1] < model.rates_[2]
    # runtimes: H2 in both classes (the 0-s runtimes, 13 % of the jobs, favour a short phase)
    assert m.runtime_labels_ == {
        "interactive": "hyperexponential(k=2)",
        "batch": "hyperexponential(k=2)",
    }
    for job_class in ("interactive", "batch"):
        _check_phases(m, job_class)
    inter = m.summary()["runtimes"]["interactive"]
    # nearly every interactive job is in a phase of mean ~10 s; the rest run a few minutes
    assert inter["parameters"]["class_weights"][0] == pytest.approx(0.99, abs=0.01)
    assert inter["parameters"]["phase_means_s"][0] == pytest.approx(9.8, rel=0.1)
    # the 0-s jobs (floored at 1 s) are an atom no continuous family holds: KS D says so,
    # at ten times its sampling noise
    assert inter["goodness_of_fit"]["ks_d"] > 5 * inter["goodness_of_fit"]["ks_noise"]
    # held-out log-likelihood per arrival on the last 30 % in time: the MMPP beats Poisson
    from gridtrace.models._fitcli import heldout_arrivals

    held = heldout_arrivals(m, trace)["site"]
    assert held["arrival_model"] == "mmpp(k=3)"
    assert held["gain"] > 0.5
    s = m.sample(20_000, rng=1)
    assert _np(s, "interactive").mean() == pytest.approx(0.9354, abs=0.006)


def test_fit_of_a_short_trace_reports_no_held_out_score_instead_of_failing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # NCAR's one PBS Pro day has 33 jobs: the last 30 % leaves too few gaps for an MMPP
    out = tmp_path / "traces"
    args = ["synth", "--preset", "PE-1", "--seed", "5", "--jobs", "12", "-o", str(out)]
    assert main([*args, "--name", "tiny"]) == 0
    fit = ["fit", str(out / "tiny.parquet"), "-o", str(tmp_path), "--arrivals", "mmpp"]
    assert main([*fit, "--k-max", "2", "--name", "tiny"]) == 0
    assert "held-out LL per arrival (last 30 %): not available" in capsys.readouterr().out
    summary = json.loads((tmp_path / "tiny.fit-summary.json").read_text())
    assert summary["replica_band"]["trace_size"] == 12
    assert main([*fit, "--k-max", "2", "--name", "tiny0", "--replicas", "0"]) == 0
    assert "replica band" not in capsys.readouterr().out
    assert json.loads((tmp_path / "tiny0.fit-summary.json").read_text())["replica_band"] is None
    (stream,) = summary["heldout_arrivals"].values()
    assert stream["model"] is None
    assert "too few" in stream["unavailable"]


@pytest.mark.realdata
def test_lpc_egee_2004_runtimes_have_no_degenerate_phase_and_are_stable(real_data: Path) -> None:
    # the whole LPC-EGEE-2004 trace (2.2e5 jobs): the chosen runtime models have proper phases,
    # and the same phase counts come back after a 1 % jitter of the runtimes or dropping 2 %
    path = real_data / "swf/LPC-EGEE-2004-1.2-cln.swf.gz"
    jobs = VOMapping(fallback_field="group").apply(read_swf(path).jobs)
    trace = build_trace(jobs, cores=140)
    m = WorkloadModel(arrivals="poisson").fit(trace)
    for job_class, label in m.runtime_labels_.items():
        if label.startswith("hyperexponential"):
            _check_phases(m, job_class)
    for reasons in m.runtime_excluded_.values():
        assert all(r.startswith("refused: ") for r in reasons.values())
    gen = np.random.default_rng(5)
    run = _np(trace, "run_s")
    jittered = trace.set_column(
        trace.schema.get_field_index("run_s"),
        "run_s",
        pa.array(run * gen.uniform(0.99, 1.01, run.shape[0])),
    )
    keep = pa.array(gen.random(trace.num_rows) >= 0.02)
    for other in (jittered, trace.filter(keep)):
        again = WorkloadModel(arrivals="poisson").fit(other)
        assert again.runtime_labels_ == m.runtime_labels_
        for job_class, label in m.runtime_labels_.items():
            if not label.startswith("hyperexponential"):
                continue
            a = m.summary()["runtimes"][job_class]["parameters"]
            b = again.summary()["runtimes"][job_class]["parameters"]
            np.testing.assert_allclose(b["class_weights"], a["class_weights"], atol=0.02)
            np.testing.assert_allclose(b["phase_means_s"], a["phase_means_s"], rtol=0.1)
