"""The PPO rules in the dry run: one training and one evaluation per configured load."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def _dry_run(tmp_path: Path, *configfiles: Path, ppo: object = ...) -> dict[str, int]:
    """Rule counts of ``snakemake reports/all -n`` on the given config files."""
    shutil.copytree(REPO / "config", tmp_path / "config")
    files = [tmp_path / "config" / f.name for f in configfiles]
    if ppo is not ...:
        config = yaml.safe_load(files[-1].read_text())
        config["ppo"] = ppo
        files[-1].write_text(yaml.safe_dump(config))
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
        *map(str, files),
        "--cores",
        "2",
        "--quiet",
        "rules",
    ]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    counts = re.findall(r"^(\w+)\s+(\d+)$", done.stdout + done.stderr, re.M)
    return {rule: int(n) for rule, n in counts}


def test_the_default_run_trains_and_evaluates_each_load_and_renders_the_page(
    tmp_path: Path,
) -> None:
    counts = _dry_run(tmp_path, REPO / "config" / "config.yaml")
    loads = len(
        yaml.safe_load((REPO / "config" / "config.yaml").read_text())["ppo"]["deeprm"]["loads"]
    )
    assert counts["ppo_train"] == loads
    assert counts["ppo_evaluate"] == loads
    assert counts["ppo_report"] == 1


def test_the_full_config_has_the_papers_loads(tmp_path: Path) -> None:
    full = yaml.safe_load((REPO / "config" / "ppo-full.yaml").read_text())["ppo"]["deeprm"]
    assert full["loads"][0] == 0.1
    assert full["loads"][-1] == "max"
    assert full["sequences"] >= 10
    counts = _dry_run(tmp_path, REPO / "config" / "config.yaml", REPO / "config" / "ppo-full.yaml")
    assert counts["ppo_train"] == len(full["loads"])
    # RLScheduler's setup: one agent per (Lublin trace, backfilling), each evaluated, one page
    rl = yaml.safe_load((REPO / "config" / "ppo-full.yaml").read_text())["ppo"]["rlscheduler"]
    assert set(rl["traces"]) == {"lublin-1", "lublin-2"}
    assert counts["ppo_rlscheduler_train"] == 4
    assert counts["ppo_rlscheduler_evaluate"] == 4
    assert counts["ppo_rlscheduler_report"] == 1


def test_the_default_run_trains_rlscheduler_once_on_the_demo_trace(tmp_path: Path) -> None:
    rl = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["ppo"]["rlscheduler"]
    assert rl["traces"] == {"demo-synth": "traces/demo-synth.swf"}  # written by the pipeline
    counts = _dry_run(tmp_path, REPO / "config" / "config.yaml")
    assert counts["ppo_rlscheduler_train"] == 1
    assert counts["ppo_rlscheduler_evaluate"] == 1
    assert counts["ppo_rlscheduler_report"] == 1


@pytest.mark.parametrize("ppo", [{}, {"deeprm": {"enabled": False}}])
def test_without_a_ppo_setting_the_run_has_no_ppo_rules(tmp_path: Path, ppo: object) -> None:
    counts = _dry_run(tmp_path, REPO / "config" / "config.yaml", ppo=ppo)
    assert not {"ppo_train", "ppo_evaluate", "ppo_report"} & set(counts)
    assert counts["report_index"] == 1
