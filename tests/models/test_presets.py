"""Seed presets: derived rates, serialisation, and the synthetic traces they generate."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from gridtrace.errors import ConfigError
from gridtrace.models import (
    PRESETS,
    Preset,
    generate_preset_trace,
    get_preset,
    mmpp_arrival_times,
    poisson_exponential_trace,
)
from gridtrace.schema import TRACE, trace_metadata, validate


def sig4(x: float) -> str:
    return f"{x:.3e}"


@pytest.mark.parametrize(
    ("name", "mu", "lam"),
    [
        ("PE-1", 1.1707e-4, 8.8971e-3),  # published
        ("PE-3", 7.7016e-4, 6.0997e-2),  # published
        ("PE-2", 1.1707e-4, 9.2717e-3),  # inferred: f 0.1, rho 0.99
        ("PE-4", 7.7016e-4, 5.8532e-2),  # inferred: f 0.5, rho 0.95
    ],
)
def test_pe_presets_derive_the_published_rates(name: str, mu: float, lam: float) -> None:
    p = get_preset(name)
    assert sig4(p.service_rate) == sig4(mu)
    assert sig4(p.arrival_rate) == sig4(lam)
    assert p.cores == 80
    assert p.size == 10_000
    assert p.tau_s == 900.0
    assert p.arrival == "poisson"
    assert dict(p.vo_shares) == {"vo1": 0.53, "vo2": 0.14, "vo3": 0.17, "vo4": 0.16}


def test_exponential_runtimes_put_f_below_tau() -> None:
    for p in PRESETS.values():
        assert 1.0 - np.exp(-p.service_rate * p.tau_s) == pytest.approx(p.interactive_fraction)


@pytest.mark.parametrize(
    ("name", "rates"), [("MMPP-1", ("0.89e-2", "0.93e-2")), ("MMPP-2", ("5.85e-2", "6.10e-2"))]
)
def test_mmpp_phase_rates(name: str, rates: tuple[str, str]) -> None:
    p = get_preset(name)
    assert p.arrival == "mmpp"
    assert p.switch_probabilities == (0.2, 0.8)
    assert [round(r, 4) for r in p.arrival_rates] == [float(r) for r in rates]
    assert p.phase_probabilities == pytest.approx((0.8, 0.2))
    # the long-run rate lies between the phase rates
    assert min(p.arrival_rates) < p.arrival_rate < max(p.arrival_rates)


@pytest.mark.parametrize(("name", "f"), [("MM50-20", 0.2), ("MM50-40", 0.4), ("MM50-50", 0.5)])
def test_mm50_presets(name: str, f: float) -> None:
    p = get_preset(name)
    assert (p.cores, p.size, p.interactive_fraction, p.rho) == (50, 6000, f, pytest.approx(0.99))
    assert list(p.vo_shares.values()) == [0.7, 0.2, 0.05, 0.05]


def test_unknown_preset_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"PE-1.*MM50-50"):
        get_preset("PE-9")


def test_preset_json_round_trip() -> None:
    for p in PRESETS.values():
        data = json.loads(json.dumps(p.to_dict()))
        assert Preset.from_dict(data) == p


@pytest.mark.parametrize(
    "change",
    [
        {"interactive_fraction": 1.0},
        {"rhos": (0.9, 0.95)},
        {"arrival": "weibull"},
        {"cores": 0},
        {"vo_shares": {}},
    ],
)
def test_invalid_presets_rejected(change: dict[str, object]) -> None:
    data = get_preset("PE-1").to_dict() | change
    with pytest.raises(ConfigError):
        Preset.from_dict(data)


def test_from_dict_rejects_unknown_keys() -> None:
    with pytest.raises(ConfigError, match="n_cores"):
        Preset.from_dict(get_preset("PE-1").to_dict() | {"n_cores": 3})


# --- generation -------------------------------------------------------------------------------


def test_preset_trace_table() -> None:
    t = generate_preset_trace("PE-1", rng=42)
    validate(t, TRACE)
    assert t.num_rows == 10_000
    assert t["job_id"].to_pylist() == list(range(10_000))
    submit = t["submit_s"].to_numpy()
    assert np.all(np.diff(submit) >= 0)
    assert set(t["cores"].to_pylist()) == {1}
    assert t["walltime_req_s"].null_count == t.num_rows
    assert t["wait_s"].null_count == t.num_rows
    assert t["queue"].null_count == t.num_rows
    assert t["user"].null_count == t.num_rows
    run = t["run_s"].to_numpy()
    np.testing.assert_array_equal(t["interactive"].to_numpy(zero_copy_only=False), run <= 900.0)
    meta = trace_metadata(t)
    assert meta["site"] == "PE-1"
    assert meta["cores"] == 80
    assert meta["tau_s"] == 900.0
    assert meta["origin"].startswith("1970-01-01T00:00:00")
    assert meta["provenance"]["preset"] == "PE-1"
    assert meta["provenance"]["seed"] == 42
    assert meta["provenance"]["preset_parameters"] == get_preset("PE-1").to_dict()


def test_preset_trace_statistics() -> None:
    p = get_preset("PE-3")
    t = generate_preset_trace(p, rng=1)
    n = t.num_rows
    f_hat = np.mean(t["interactive"].to_numpy(zero_copy_only=False))
    assert abs(f_hat - 0.5) < 4 * np.sqrt(0.25 / n)
    gaps = np.diff(t["submit_s"].to_numpy())
    assert np.mean(gaps) == pytest.approx(1 / p.arrival_rate, rel=4 / np.sqrt(n))
    assert np.mean(t["run_s"].to_numpy()) == pytest.approx(1 / p.service_rate, rel=4 / np.sqrt(n))
    counts = pa.table({"vo": t["vo"]}).group_by("vo").aggregate([("vo", "count")]).to_pydict()
    shares = dict(zip(counts["vo"], np.asarray(counts["vo_count"]) / n, strict=True))
    for vo, w in p.vo_shares.items():
        assert abs(shares[vo] - w) < 4 * np.sqrt(w * (1 - w) / n)


def test_mmpp_arrivals_follow_the_embedded_chain() -> None:
    p = get_preset("MMPP-2")
    times, phases = mmpp_arrival_times(200_000, p.arrival_rates, p.switch_probabilities, rng=3)
    assert np.mean(phases == 0) == pytest.approx(0.8, abs=0.01)
    # P(switch | phase 0) = 0.2
    from0 = phases[:-1] == 0
    assert np.mean(phases[1:][from0] == 1) == pytest.approx(0.2, abs=0.01)
    assert np.mean(np.diff(times)) == pytest.approx(1 / p.arrival_rate, rel=0.01)
    t = generate_preset_trace(p, rng=3, size=500)
    assert trace_metadata(t)["provenance"]["parameters"]["phase_chain"] == "embedded at arrivals"


def test_same_seed_same_table_and_streams_are_independent() -> None:
    a = generate_preset_trace("MMPP-1", rng=7, size=2000)
    b = generate_preset_trace("MMPP-1", rng=7, size=2000)
    assert a.equals(b)
    assert a.schema.metadata == b.schema.metadata
    c = generate_preset_trace("MMPP-1", rng=8, size=2000)
    assert not a["submit_s"].equals(c["submit_s"])
    # changing the VO weights leaves arrivals and runtimes bit-identical
    x = poisson_exponential_trace(3000, 0.01, 0.001, cores=10, vo_shares={"a": 1, "b": 1}, rng=5)
    y = poisson_exponential_trace(3000, 0.01, 0.001, cores=10, vo_shares={"a": 1, "b": 9}, rng=5)
    assert x["submit_s"].equals(y["submit_s"])
    assert x["run_s"].equals(y["run_s"])
    assert not x["vo"].equals(y["vo"])


def test_generator_input_and_users() -> None:
    gen = np.random.default_rng(np.random.SeedSequence(99))
    t = generate_preset_trace("MM50-40", rng=gen, size=1000, users_per_vo=3)
    users = set(t["user"].to_pylist())
    assert users <= {f"vo{v}-u{k}" for v in range(1, 5) for k in range(3)}
    for vo, user in zip(t["vo"].to_pylist(), t["user"].to_pylist(), strict=True):
        assert user.startswith(f"{vo}-")
    seed = trace_metadata(t)["provenance"]["seed"]
    assert seed["entropy"] == 99


def test_global_rng_untouched() -> None:
    before = np.random.get_state()[1].copy()  # type: ignore[index]  # noqa: NPY002
    generate_preset_trace("PE-2", rng=0, size=100)
    after = np.random.get_state()[1]  # type: ignore[index]  # noqa: NPY002
    np.testing.assert_array_equal(before, after)
