"""The Slurm executor profile: every rule it sizes exists, and the pipeline plans with it."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "workflow" / "profiles" / "slurm"
pytestmark = pytest.mark.workflow


def _rules() -> set[str]:
    text = "\n".join(
        p.read_text() for p in [REPO / "Snakefile", *REPO.glob("workflow/rules/*.smk")]
    )
    return set(re.findall(r"^rule (\w+):", text, flags=re.MULTILINE))


def test_the_profile_sizes_only_rules_that_exist() -> None:
    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    assert profile["executor"] == "slurm"
    rules = _rules()
    sized = set(profile["set-resources"]) | set(profile.get("set-threads", {}))
    assert sized <= rules, f"the profile names rules the workflow lacks: {sorted(sized - rules)}"
    for name, resources in profile["set-resources"].items():
        assert set(resources) <= {"runtime", "mem_mb", "cpus_per_task", "slurm_partition"}, name
        assert all(
            isinstance(v, int) and v > 0 for k, v in resources.items() if k != "slurm_partition"
        )
    # a rule given threads must ask Slurm for as many CPUs, or its workers share one core
    for name, threads in profile.get("set-threads", {}).items():
        assert profile["set-resources"][name]["cpus_per_task"] == threads, name


@pytest.mark.skipif(
    importlib.util.find_spec("snakemake_executor_plugin_slurm") is None,
    reason="the Slurm executor plugin is not installed (pip install -e '.[cluster]')",
)
def test_the_default_run_plans_on_slurm(tmp_path: Path) -> None:
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
        str(REPO / "config" / "config.yaml"),
        "--profile",
        str(PROFILE),
        "--quiet",
        "rules",
    ]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"Using profile {PROFILE}" in done.stdout + done.stderr
    assert re.search(r"^parse\s+1$", done.stdout, flags=re.MULTILINE), done.stdout[-2000:]
