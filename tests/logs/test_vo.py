from __future__ import annotations

import pyarrow as pa
import pytest

from gridtrace.errors import ConfigError
from gridtrace.logs import VOMapping, VORule, has_flag
from gridtrace.schema import conform


def _jobs(rows: list[dict[str, object]]) -> pa.Table:
    base = {
        "site": "s",
        "source_format": "torque",
        "job_id_raw": "1",
        "attempt": 0,
        "n_attempts": 1,
        "state": "COMPLETED",
        "src_file": "f",
        "src_line": 1,
        "flags": [],
    }
    return conform(
        pa.Table.from_pylist([{**base, "job_key": f"s:{i}", **r} for i, r in enumerate(rows)]),
        "jobs",
    )


def test_first_matching_rule_wins_over_later_rules_and_fallback() -> None:
    mapping = VOMapping(
        rules=(
            VORule("queue", "atlas_mc", "atlas-mc"),
            VORule("group", "(prd)?atl.*", "atlas"),
        ),
        fallback_field="group",
    )
    jobs = mapping.apply(
        _jobs(
            [
                {"group": "prdatl", "queue": "atlas_mc"},
                {"group": "prdatl", "queue": "grid"},
                {"group": "atlas", "queue": "grid"},
                {"group": "biomed", "queue": "grid"},
            ]
        )
    )
    assert jobs.column("vo").to_pylist() == ["atlas-mc", "atlas", "atlas", "biomed"]
    assert jobs.column("flags").to_pylist() == [[], [], [], ["VO_FROM_GROUP"]]


def test_pattern_must_match_the_whole_value() -> None:
    mapping = VOMapping(rules=(VORule("group", "atl", "atlas"),), fallback_field=None)
    jobs = mapping.apply(_jobs([{"group": "atl"}, {"group": "prdatl"}]))
    assert jobs.column("vo").to_pylist() == ["atlas", None]
    assert jobs.column("flags").to_pylist() == [[], ["VO_UNMAPPED"]]


def test_monitoring_vos_are_flagged_so_traces_can_exclude_them() -> None:
    mapping = VOMapping.from_dict(
        {"rules": [{"field": "user", "pattern": "dteam\\d+", "vo": "dteam"}]}
    )
    jobs = mapping.apply(_jobs([{"user": "dteam001", "group": "dteam"}, {"group": "cms"}]))
    assert has_flag(jobs, "MONITORING").to_pylist() == [True, False]


def test_applying_twice_does_not_duplicate_flags() -> None:
    mapping = VOMapping(fallback_field=None)
    once = mapping.apply(_jobs([{"group": "x"}]))
    assert mapping.apply(once).column("flags").to_pylist() == [["VO_UNMAPPED"]]


def test_round_trips_through_plain_data() -> None:
    mapping = VOMapping(rules=(VORule("account", "lp_.*", "vsc"),), monitoring=("ops",))
    assert VOMapping.from_dict(mapping.to_dict()) == mapping


@pytest.mark.parametrize(
    "spec",
    [
        {"rules": [{"field": "host", "pattern": "x", "vo": "v"}]},
        {"rules": [{"field": "group", "pattern": "(", "vo": "v"}]},
        {"rules": [{"field": "group", "vo": "v"}]},
        {"typo": []},
    ],
)
def test_bad_specs_are_refused_with_a_clear_error(spec: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        VOMapping.from_dict(spec)
