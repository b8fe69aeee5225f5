"""The index page: one comparable row per workload, sortable, with small multiples."""

from __future__ import annotations

import base64
import hashlib
import re
from html import unescape
from pathlib import Path

from gridtrace.report import render_index

ROW = re.compile(r"<tr><td class=\"text\" data-sort=\"([^\"]*)\">.*?</tr>", re.S)


def entry(name: str, jobs: int, margin: float | None, **extra: object) -> dict[str, object]:
    return {
        "workload": name,
        "jobs": jobs,
        "cores": 80,
        "kind": "preset",
        "u": 0.95,
        "best_w": {"policy": "sjf", "text": "sjf 0.904 [0.890, 0.915] n=3"},
        "best_f": {"policy": None, "text": "the same for every policy (0.978)"},
        "rl_margin": None
        if margin is None
        else {"text": f"{margin:.3f} [-0.2, 0.1] n=10 (worse)", "value": margin},
        "published": {"reproduced": 1, "compared": 3},
        "flags": ["rl-mlp (frozen): interactive mean wait 2.3 days"],
        "key_figure": [
            {"policy": "fifo", "mean": 0.6, "low": 0.55, "high": 0.65, "n": 3},
            {"policy": "sjf", "mean": 0.9, "low": 0.89, "high": 0.915, "n": 3},
        ],
        **extra,
    }


def test_one_row_per_workload_with_every_column(tmp_path: Path) -> None:
    entries = [entry("PE-1", 10_000, -0.105), entry("MM50-20", 6_000, None, kind="site")]
    render_index(entries, tmp_path / "index.html")
    html = (tmp_path / "index.html").read_text(encoding="utf-8")
    table = html.split('<div class="wide" id="workloads">', 1)[1].split("</table>", 1)[0]
    heads = re.findall(r'<th class="sortable" data-key="(\w+)"><button type="button">', table)
    assert heads == [
        "workload", "kind", "jobs", "cores", "u", "best_w", "best_f", "rl", "published", "flags",
    ]  # fmt: skip
    assert [m.group(1) for m in ROW.finditer(table)] == ["mm50-20", "pe-1"]
    pe1 = next(m.group(0) for m in ROW.finditer(table) if m.group(1) == "pe-1")
    assert '<a href="PE-1/index.html">PE-1</a>' in pe1
    assert ">preset</td>" in pe1
    assert "10,000" in pe1
    assert "0.950" in pe1
    assert "0.904 [0.890, 0.915] n=3" in pe1
    assert "the same for every policy (0.978)" in pe1
    assert "-0.105 [-0.2, 0.1] n=10 (worse)" in pe1
    assert "1 of 3 reproduced" in pe1
    assert "interactive mean wait 2.3 days" in pe1
    # sortable: each cell carries its sort value; numbers as numbers, missing as empty
    assert 'data-sort="10000.0"' in pe1
    assert 'data-sort="-0.105"' in pe1
    assert 'data-sort="0.3333333333333333"' in pe1
    mm = next(m.group(0) for m in ROW.finditer(table) if m.group(1) == "mm50-20")
    assert '<td class="text" data-sort="">—</td>' in mm  # no RL margin


def test_sorting_script_is_inline_and_offline(tmp_path: Path) -> None:
    render_index([entry("PE-1", 10, 0.1)], tmp_path / "index.html")
    html = (tmp_path / "index.html").read_text(encoding="utf-8")
    scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", html, re.S)
    assert len(scripts) == 1
    assert "<script>" in html  # no src, no type: an inline script
    assert "addEventListener('click'" in scripts[0]
    for fetches in ("fetch(", "XMLHttpRequest", "import(", "http", "src", "eval("):
        assert fetches not in scripts[0]
    assert not re.search(r"\son\w+=", html)  # no handlers in the markup
    # the page's Content-Security-Policy allows this script and nothing from the network
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)
    assert policy is not None
    assert unescape(policy.group(1)) == (
        f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src 'sha256-{digest}'"
    )


def test_small_multiples_are_drawn_from_numbers_and_escape_names(tmp_path: Path) -> None:
    hostile = "<script>alert(1)</script>"
    e = entry("PE-1", 10, 0.1)
    e["key_figure"] = [{"policy": hostile, "mean": 1.7, "low": -0.2, "high": 2.0, "n": 2}]
    render_index([e, entry("bare", 10, None, key_figure=[])], tmp_path / "index.html")
    html = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert hostile not in html
    figs = re.findall(r'<figure id="key-\d+">(.*?)</figure>', html, re.S)
    assert len(figs) == 1  # a workload without results has no small multiple
    assert "&lt;script&gt;" in figs[0]
    # bars and whiskers stay on the [0, 1] axis whatever the numbers say
    xs = [float(x) for x in re.findall(r'\bx[12]?="([\d.]+)"', figs[0])]
    widths = [float(w) for w in re.findall(r'\bwidth="([\d.]+)"', figs[0].split(">", 1)[1])]
    assert min(xs) >= 0
    assert max(xs) <= 96 + 170
    assert max(widths) <= 170
    assert 'href="#key-figures"' in html


def test_rl_margin_falls_back_on_the_contention_experiments(tmp_path: Path) -> None:
    summary = {
        "workload": "lpc-segment",
        "regime": {"how": "shrink", "target_load": 0.7, "cores": 65, "offered_load": 0.7},
        "best_baseline": {"interactive_w_mean": {"policy": "sjf-est", "mean": 0.498}},
        "rl_margin": {
            "interactive_w_mean": {
                "rl": {"value": -0.005, "ci_low": -0.017, "ci_high": -0.0001, "n": 10}
            }
        },
        "flags": {},
    }
    e = entry("lpc-segment", 10, None)
    render_index([e], tmp_path / "index.html", [summary])
    html = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert "RL − sjf-est: -0.0050 [-0.0170, -0.0001] n=10" in html  # -0.000 would hide the sign
    assert 'id="contention"' in html  # the contention experiments' table stays
