"""The PPO page from a small real training and evaluation (tiny budget), and its index entry."""

from __future__ import annotations

import html as html_text
import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sb3_contrib")

from gridtrace.errors import ConfigError
from gridtrace.report import render_index, render_ppo_report
from gridtrace.sim.rl import MultiResourceConfig, PPOConfig, evaluate_ppo, save_ppo, train_ppo
from gridtrace.sim.rl._ppo import summary_json

SVG = re.compile(r"<svg\b.*?</svg>", re.S)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Any], list[Any]]:
    """config.json and evaluation.json at 100 % and at the highest load, as the rules write them."""
    out = tmp_path_factory.mktemp("ppo")
    base = MultiResourceConfig()
    configs, evaluations = [], []
    for label, load in (("100", 1.0), ("max", base.workload.max_load)):
        cfg = PPOConfig(n_envs=4, n_steps=64, total_timesteps=768)
        run = train_ppo(base.with_load(load), cfg, seed=0)
        folder = save_ppo(run, out / label)
        rows, summary = evaluate_ppo(run, sequences=3, seed=1)
        configs.append(json.loads((folder / "config.json").read_text()))
        evaluations.append(json.loads(summary_json(rows, summary)))
    return configs, evaluations


def test_the_page_has_its_figures_the_side_by_side_table_and_a_short_verdict(
    saved: tuple[list[Any], list[Any]], tmp_path: Path
) -> None:
    configs, evaluations = saved
    page = tmp_path / "ppo-deeprm" / "index.html"
    entry = render_ppo_report(configs, evaluations, page)
    html = page.read_text()

    for fig in ("fig-curve", "fig-loads"):
        found = re.search(rf'<figure id="{fig}">(.*?)</figure>', html, re.S)
        assert found, fig
        svg = SVG.search(found.group(1))
        assert svg, fig
        assert "<path" in svg.group(0), f"{fig} is empty"
    # every policy is drawn in the slowdown-vs-load figure
    loads_fig = re.search(r'<figure id="fig-loads">(.*?)</figure>', html, re.S)
    assert loads_fig
    for name in ("PPO", "SJF", "packer", "tetris", "EASY", "FIFO", "random"):
        assert f">{name}<" in loads_fig.group(1)

    table = re.search(r'<table class="side-by-side">(.*?)</table>', html, re.S)
    assert table
    text = table.group(1)
    assert "\u221245 %" in text  # published, with the paper's minus sign
    assert "\u221254 %" in text
    assert "184.5 %" in text  # ours at the highest reachable load, said so
    assert "unreachable" in text
    assert "n=3" in text  # the interval's sample size

    verdict = re.search(r'<section id="verdict".*?</section>', html, re.S)
    assert verdict
    lines = re.findall(r"<li>(.*?)</li>", verdict.group(0), re.S)
    assert 1 <= len(lines) <= 5
    assert lines[0].lstrip()[0] in "+\u22120123456789"  # numbers first
    assert entry["href"] == "ppo-deeprm/index.html"
    assert entry["verdict"] == [html_text.unescape(line.strip()) for line in lines]
    assert "<script" not in html


def test_the_index_lists_the_page_with_its_verdict(
    saved: tuple[list[Any], list[Any]], tmp_path: Path
) -> None:
    configs, evaluations = saved
    entry = render_ppo_report(configs, evaluations, tmp_path / "ppo-deeprm" / "index.html")
    render_index([], tmp_path / "index.html", (), [entry])
    index = (tmp_path / "index.html").read_text()
    assert 'href="ppo-deeprm/index.html"' in index
    assert html_text.escape(entry["verdict"][0]) in index


def test_an_evaluation_without_sjf_is_refused(
    saved: tuple[list[Any], list[Any]], tmp_path: Path
) -> None:
    configs, evaluations = saved
    broken = [{"summary": [r for r in evaluations[0]["summary"] if r["policy"] != "sjf"]}]
    with pytest.raises(ConfigError, match="sjf"):
        render_ppo_report(configs, broken, tmp_path / "p.html")
