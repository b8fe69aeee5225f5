"""The reports in a real browser: headless chromium, from ``file://``, with the network off.

Rendered here from the report package on small inputs, as the pipeline renders them: a seed
preset (with its RL section), the demo site parsed from its TORQUE log and segmented, the same
log with HTML and script payloads in its job names, users, groups, queues and hosts, and the
index (with a contention row). Every page is checked for console errors, requests that leave
the page, figures of zero size, the verdict (else the first heading) inside the first screen at
1280×800, sideways scrolling at 800 px, figure text under 11 px or outside its figure at 800 px,
and blank screenshots.

Set ``GRIDTRACE_BROWSER_REPORTS`` to a ``reports/`` folder (e.g. of a pipeline run) to check its
pages too, and ``GRIDTRACE_BROWSER_SHOTS`` to a folder to keep the screenshots. The test is
skipped when chromium or chromedriver is missing (``.ci/run`` installs them), unless
``GRIDTRACE_BROWSER=required``.
"""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from gridtrace.demo import write_demo_site
from gridtrace.logs import VOMapping, build_trace, read_torque
from gridtrace.models import generate_preset_trace
from gridtrace.report import (
    preset_model_section,
    render_index,
    render_workload_report,
    rl_section,
)
from gridtrace.segment import SegmentParams, SelectionCriteria, segment, select_segment
from gridtrace.sim import simulate
from gridtrace.sim.rl import ExperimentConfig, run_experiment

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'
# TORQUE separates attributes by spaces and quotes values with '"': in the log, the element
# with "/" between its attributes
IMG_NO_SPACE = "<img/src=x/onerror=alert(1)>"
VO_MAP = {
    "rules": [
        {"field": "group", "pattern": "(prd)?atl.*", "vo": "atlas"},
        {"field": "group", "pattern": "cms.*", "vo": "cms"},
        {"field": "group", "pattern": "dteam", "vo": "dteam"},
        {"field": "group", "pattern": "ops", "vo": "ops"},
    ],
    "fallback_field": "group",
    "monitoring": ["dteam", "ops"],
}
SCREENS = {"wide": (1280, 800), "narrow": (800, 800)}


# --- the browser ----------------------------------------------------------------------------


def _browser_or_skip() -> tuple[str, str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium and driver:
        return chromium, driver
    why = (
        "chromium and chromedriver are not installed (.ci/run installs Debian's chromium and "
        "chromium-driver with apt)"
    )
    if os.environ.get("GRIDTRACE_BROWSER") == "required":
        pytest.fail(why)
    pytest.skip(why)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    chromium, driver_path = _browser_or_skip()
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",  # the CI machine runs as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--window-size=1280,800",
        # no network: every host resolves to nothing, and no proxy is tried
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--no-proxy-server",
        "--force-device-scale-factor=1",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = webdriver.ChromeService(executable_path=driver_path)
    driver = webdriver.Chrome(options=options, service=service)
    try:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd(
            "Network.emulateNetworkConditions",
            {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
        )
        yield driver
    finally:
        driver.quit()


def _screen(driver: Any, width: int, height: int) -> None:
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
    )


def _not_blank(png: bytes) -> bool:
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        colours = image.convert("RGB").getcolors(maxcolors=2)
    return colours is None or len(colours) > 1  # None: more than two colours


def _shots_folder(tmp: Path) -> Path:
    folder = Path(os.environ.get("GRIDTRACE_BROWSER_SHOTS") or tmp / "shots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# the outermost elements that stick out to the right of the page, to say what scrolls sideways
_WIDE_ELEMENTS = """
const w = document.documentElement.clientWidth;
return [...document.body.querySelectorAll('*')]
  .filter(e => e.getBoundingClientRect().right > w + 0.5)
  .filter(e => !e.parentElement || e.parentElement.getBoundingClientRect().right <= w + 0.5)
  .slice(0, 3).map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
    + (e.className && typeof e.className === 'string' ? '.' + e.className : ''));
"""


# figure text drawn under 11 px, or sticking out of its figure (a clipped label)
_SMALL_OR_CLIPPED_TEXT = """
const small = [], clipped = [];
for (const svg of document.querySelectorAll('figure svg')) {
  const box = svg.getBoundingClientRect();
  for (const t of svg.querySelectorAll('text')) {
    const m = t.getScreenCTM();  // rotated labels: the scale is the length of a column
    const size = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
    const r = t.getBoundingClientRect();
    const where = svg.closest('figure').id + ': ' + t.textContent.slice(0, 30);
    if (size < 11) small.push(where + ' (' + size.toFixed(1) + ' px)');
    if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1
        || r.bottom > box.bottom + 1) clipped.push(where);
  }
}
return [small.slice(0, 3), clipped.slice(0, 3)];
"""


def check_page(driver: Any, page: Path, shots: Path) -> tuple[list[str], str]:
    """Open ``page`` and check it; return the problems found and the page's text."""
    from selenium.common.exceptions import NoAlertPresentException

    _screen(driver, *SCREENS["wide"])
    driver.get(page.resolve().as_uri())
    name = "-".join(page.parts[-2:]).removesuffix(".html")
    problems: list[str] = []
    try:
        alert = driver.switch_to.alert
        problems.append(f"an alert opened: {alert.text!r}")
        alert.dismiss()
    except NoAlertPresentException:
        pass
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    if errors:
        problems.append(f"console errors: {errors[:3]}")
    left = driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
        ".filter(n => !n.startsWith('file:') && !n.startsWith('data:'))"
    )
    if left:
        problems.append(f"requests leave the page: {left[:5]}")
    # the index holds one inline script (its table sorter); a report holds none, and no page
    # loads a script from a file or binds a handler in its markup
    allowed = 1 if any(page.parent.glob("*/index.html")) else 0
    injected = driver.execute_script(
        "return [Math.max(0, document.scripts.length - arguments[0]), "
        "document.querySelectorAll('script[src], img, iframe, object, "
        "embed').length, [...document.querySelectorAll('*')].filter(e => [...e.attributes]"
        ".some(a => a.name.startsWith('on'))).length]",
        allowed,
    )
    if injected != [0, 0, 0]:
        problems.append(f"scripts, images or event handlers in the page: {injected}")
    empty = driver.execute_script(
        "return [...document.querySelectorAll('figure')].filter(f => {"
        " const s = f.querySelector('svg'); if (!s) return true;"
        " const r = s.getBoundingClientRect(); return !(r.width > 0 && r.height > 0);"
        "}).map(f => f.id)"
    )
    if empty:
        problems.append(f"figures without size: {empty}")
    first = driver.execute_script(
        "const v = document.getElementById('verdict') || document.querySelector('h1');"
        "const r = v.getBoundingClientRect();"
        "return [v.id || v.tagName, r.top, r.bottom, window.innerHeight]"
    )
    if not (first[1] >= 0 and first[2] <= first[3]):
        problems.append(f"{first[0]} is not inside the first screen at 1280x800: {first}")
    for width, height in SCREENS.values():
        _screen(driver, width, height)
        overflow = driver.execute_script(
            "const d = document.documentElement; return [d.scrollWidth, d.clientWidth]"
        )
        if overflow[0] > overflow[1]:
            culprits = driver.execute_script(_WIDE_ELEMENTS)
            problems.append(f"scrolls sideways at {width} px: {overflow}, {culprits}")
        if width == min(w for w, _ in SCREENS.values()):
            small, clipped = driver.execute_script(_SMALL_OR_CLIPPED_TEXT)
            if small:
                problems.append(f"figure text under 11 px at {width} px: {small}")
            if clipped:
                problems.append(f"figure text outside its figure: {clipped}")
        png = driver.get_screenshot_as_png()
        (shots / f"{name}-{width}.png").write_bytes(png)
        if not _not_blank(png):
            problems.append(f"blank screenshot at {width} px")
    if os.environ.get("GRIDTRACE_BROWSER_SHOTS"):  # kept: the whole page too, to look at
        height = driver.execute_script("return document.documentElement.scrollHeight")
        _screen(driver, 800, min(int(height), 16_000))
        (shots / f"{name}-800-full.png").write_bytes(driver.get_screenshot_as_png())
    text = driver.execute_script("return document.body.innerText")
    return [f"{page.parent.name}/{page.name}: {p}" for p in problems], str(text)


def check_pages(driver: Any, pages: list[Path], shots: Path) -> None:
    """Check every page, then fail with every problem of every page."""
    problems = [p for page in pages for p in check_page(driver, page, shots)[0]]
    assert not problems, "\n".join(problems)


# --- the reports ----------------------------------------------------------------------------


def _demo_trace(folder: Path, *, hostile: bool = False) -> tuple[pa.Table, pa.Table]:
    """The demo site's TORQUE log parsed into (jobs, trace); with payloads if ``hostile``."""
    logs = folder / "logs"
    write_demo_site(logs, n_jobs=500, cores=40, seed=7, tz="Europe/Paris")
    if hostile:
        for day in logs.iterdir():
            text = day.read_bytes().decode("latin-1")
            for key, value in (
                ("jobname=", f"job{IMG_NO_SPACE}"),
                ("user=", f"u{SCRIPT}"),
                ("queue=", f"q{IMG_NO_SPACE}"),
                ("exec_host=", f"{SCRIPT}wn"),
            ):
                text = text.replace(key, key + value)
            text = text.replace("group=cmsprd", f"group=cms{SCRIPT}")
            text = text.replace("group=lhcbprd", f"group={IMG_NO_SPACE}")
            day.write_bytes(text.encode("latin-1"))
    # the demo log holds deliberately broken lines (a cut record): quarantined, not warned
    site = f"site{IMG}" if hostile else "demo"
    parsed = read_torque(logs, site=site, tz="Europe/Paris", errors="skip")
    jobs = VOMapping.from_dict(VO_MAP).apply(parsed.jobs)
    if hostile:  # the payloads made it through the parser into every field
        for column, payload in (
            ("job_name", IMG_NO_SPACE),
            ("user", SCRIPT),
            ("group", SCRIPT),
            ("vo", IMG_NO_SPACE),
            ("queue", IMG_NO_SPACE),
            ("exec_hosts", SCRIPT),
            ("site", IMG),
        ):
            values = map(str, jobs.column(column).to_pylist())
            assert any(payload in v for v in values), column
    trace = build_trace(jobs, tau_s=900.0, records=parsed.records, tz="Europe/Paris")
    return jobs, trace


def _site_report(name: str, folder: Path, out: Path, *, hostile: bool = False) -> dict[str, Any]:
    jobs, trace = _demo_trace(folder / name, hostile=hostile)
    seg = segment(trace, jobs=jobs, params=SegmentParams(min_jobs=200, block_jobs=50))
    choice = select_segment(seg.segments, SelectionCriteria(min_jobs=200))
    shares = {"atlas": 0.5, "cms": 0.5}
    results = {
        p: [simulate(trace, policy=p, vo_shares=shares, warmup_jobs=50, drain_jobs=50)]
        for p in ("fifo", "sjf", "easy")
    }
    return render_workload_report(
        name,
        trace=trace,
        results=results,
        out_path=out / name / "index.html",
        tz="Europe/Paris",
        segments=seg.segments,
        segmentation={**seg.info(), "choice": choice.to_dict()},
        published={SCRIPT: {IMG: 1.0}} if hostile else None,
    )


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("browser")
    out = work / "reports"
    entries = []
    size = 600
    traces = [generate_preset_trace("MM50-20", rng=s, size=size) for s in (1, 2)]
    results = {
        p: [simulate(t, policy=p, warmup_jobs=50, drain_jobs=50) for t in traces]
        for p in ("fifo", "sjf", "easy")
    }
    small = {"eval_seeds": 2, "train_draws": 1, "warmup_jobs": 50, "drain_jobs": 50}
    summary = run_experiment("MM50-20", ExperimentConfig(size=size, rewards=("w-f",), **small))
    entries.append(
        render_workload_report(
            "MM50-20",
            trace=traces[0],
            results=results,
            out_path=out / "MM50-20" / "index.html",
            model=preset_model_section("MM50-20"),
            rl=rl_section(summary.summary),
        )
    )
    entries.append(_site_report("demo", work, out))
    entries.append(_site_report("hostile", work, out, hostile=True))
    contention = {
        "workload": "demo-segment",
        "regime": {"how": "shrink", "target_load": 0.7, "cores": 30, "offered_load": 0.69},
        "best_baseline": {"interactive_w_mean": {"policy": "sjf-est", "mean": 0.5}},
        "rl_margin": {
            "interactive_w_mean": {
                "rl": {
                    "value": -0.04,
                    "ci_low": -0.07,
                    "ci_high": -0.01,
                    "n": 10,
                    "outcome": "worse",
                }
            }
        },
        "flags": {"rl": [{"code": "INTERACTIVE_WAIT_OVER_DAY"}]},
    }
    render_index(entries, out / "index.html", [contention])
    return out


def _pages(folder: Path) -> list[Path]:
    return [*sorted(folder.glob("*/index.html")), folder / "index.html"]


def test_every_report_passes_in_a_real_browser(browser: Any, reports: Path, tmp_path: Path) -> None:
    shots = _shots_folder(tmp_path)
    pages = _pages(reports)
    assert len(pages) == 4
    check_pages(browser, pages, shots)


def test_the_index_sorts_by_a_clicked_header(browser: Any, reports: Path) -> None:
    from selenium.webdriver.common.by import By

    _screen(browser, *SCREENS["wide"])
    browser.get((reports / "index.html").resolve().as_uri())
    column = "#workloads tbody tr td:nth-child(3)"

    def jobs() -> list[float]:
        cells = browser.find_elements(By.CSS_SELECTOR, column)
        return [float(c.get_attribute("data-sort")) for c in cells]

    button = browser.find_element(By.CSS_SELECTOR, 'th[data-key="jobs"] button')
    button.click()
    assert jobs() == sorted(jobs())
    button.click()
    assert jobs() == sorted(jobs(), reverse=True)
    names = browser.find_elements(By.CSS_SELECTOR, "#workloads tbody tr td:first-child")
    assert len(names) == 3


def test_payloads_from_the_log_are_shown_as_text(
    browser: Any, reports: Path, tmp_path: Path
) -> None:
    problems, text = check_page(
        browser, reports / "hostile" / "index.html", _shots_folder(tmp_path)
    )
    assert not problems, "\n".join(problems)
    assert SCRIPT in text  # a group mapped to its own VO, the site's published row, ...
    assert IMG in text
    assert IMG_NO_SPACE in text


def test_reports_of_a_pipeline_run(browser: Any, tmp_path: Path) -> None:
    folder = os.environ.get("GRIDTRACE_BROWSER_REPORTS")
    if not folder:
        pytest.skip("GRIDTRACE_BROWSER_REPORTS is not set (a reports/ folder to check)")
    check_pages(browser, _pages(Path(folder)), _shots_folder(tmp_path))
