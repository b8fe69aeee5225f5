"""A bad site in the pipeline config is refused by the dry run, naming the key, not in a job."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.workflow


def _dry_run(tmp_path: Path, site: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    shutil.copytree(REPO / ".test" / "config", tmp_path / "config")
    config_path = tmp_path / "config" / "config.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["sites"]["mysite"] = site
    config_path.write_text(yaml.safe_dump(config))
    logs = tmp_path / "logs-of-mysite"
    logs.mkdir()
    (logs / "20240501").write_text("05/01/2024 10:00:00;Q;1.pbs01;queue=grid\n")
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "reports/all",
        "-n",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(tmp_path),
        "--configfile",
        str(config_path),
        "--cores",
        "1",
        "--quiet",
        "rules",
    ]
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    ("site", "message"),
    [
        ({"format": "torque", "tz": "UTC"}, "config sites.mysite.path: missing; give the log"),
        (
            {"path": "logs-of-mysite", "format": "tourque"},
            "config sites.mysite.format: no reader for log format 'tourque'; available: ",
        ),
        (
            {"path": "logs-of-mysite", "tz": "Europe/Pariss"},
            "config sites.mysite.tz: 'Europe/Pariss' is not an IANA time zone",
        ),
        (
            {"path": "logs-of-mysite", "vo_map": {"rulez": []}},
            "config sites.mysite.vo_map: unknown VO mapping key(s): rulez",
        ),
        (
            {
                "path": "logs-of-mysite",
                "vo_map": {"rules": [{"field": "grp", "pattern": "x", "vo": "y"}]},
            },
            "config sites.mysite.vo_map: VO rule field must be one of group, account, queue, user",
        ),
        (
            {
                "path": "logs-of-mysite",
                "vo_map": {"rules": [{"field": "group", "pattern": "(", "vo": "y"}]},
            },
            "config sites.mysite.vo_map: VO rule pattern '(' is not a regular expression",
        ),
    ],
    ids=["no-path", "unknown-format", "bad-tz", "bad-vo-map-key", "bad-vo-field", "bad-vo-pattern"],
)
def test_a_bad_site_fails_the_dry_run_naming_the_key(
    tmp_path: Path, site: dict[str, Any], message: str
) -> None:
    done = _dry_run(tmp_path, site)
    assert done.returncode != 0
    assert message in done.stdout + done.stderr


def test_a_good_site_passes_the_dry_run_and_its_format_may_be_left_out(tmp_path: Path) -> None:
    site = {"path": "logs-of-mysite", "tz": "Europe/Brussels", "vo_map": {"fallback_field": None}}
    done = _dry_run(tmp_path, site)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "parse" in done.stdout


def _contention_dry_run(tmp_path: Path, extra: dict[str, Any] | None) -> str:
    shutil.copytree(REPO / ".test" / "config", tmp_path / "config")
    config_path = tmp_path / "config" / "config.yaml"
    config = yaml.safe_load(config_path.read_text())
    if extra is not None:
        config.setdefault("rl", {})["contention"] = extra
    config_path.write_text(yaml.safe_dump(config))
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "contention",
        "-n",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(tmp_path),
        "--configfile",
        str(config_path),
        "--cores",
        "1",
        "--quiet",
        "rules",
    ]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_contention_defaults_to_a_quick_run_on_demo_segment(tmp_path: Path) -> None:
    out = _contention_dry_run(tmp_path, None)
    assert "rl_contention" in out


def test_contention_config_sweeps_each_regime(tmp_path: Path) -> None:
    extra = {
        "workloads": {"demo-segment": {"loads": [0.7, 0.85], "how": ["compress", "shrink"]}},
        "seeds": 10,
        "rewards": ["w-f", "slowdown", "time-utility"],
    }
    out = _contention_dry_run(tmp_path, extra)
    assert "rl_contention" in out
