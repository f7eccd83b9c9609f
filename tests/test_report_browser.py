"""Reports opened in a real browser (headless Chromium from `file://`): every chart drawn as SVG with
data, no console error, no request but the file itself, and names from a trace shown as text with
no script run. A screenshot of each page is saved under the test's tmp_path (its path printed).

These tests need Chromium (`$DDLX_CHROMIUM`, else `chromium` on PATH: Debian's package `chromium`)
and the `playwright` package; they skip without them unless DDLX_REQUIRE_BROWSER=1 (CI), where they
fail instead.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ddlx.analysis.runner import run_analysis
from ddlx.datasets.synthetic import ensure_sample
from ddlx.reports.compare import build_compare_report
from ddlx.reports.render import write_report, write_report_files
from ddlx.reports.report import build_report
from tests.test_report_model import import_lab

pytestmark = pytest.mark.browser

CHROMIUM = Path(os.environ.get("DDLX_CHROMIUM") or shutil.which("chromium") or "chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
XSS_USER = "<script>alert(1)</script>"
XSS_VC = '"><img src=x onerror=alert(1)>'
#: Tries to close the JSON <script> block a chart's data sits in, and to run a script of its own.
BREAKOUT = "</script><script>window.__xss=1</script><!--"
AMPERSAND = "R&D &amp; co"  # shown as written, not read as an entity


def _missing_browser() -> str | None:
    if not CHROMIUM.is_file():
        return f"{CHROMIUM} is missing (apt-get install -y chromium, or set DDLX_CHROMIUM)"
    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is missing (pip install playwright; never `playwright install`)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    missing = _missing_browser()
    if missing:
        if os.environ.get("DDLX_REQUIRE_BROWSER") == "1":
            pytest.fail(f"DDLX_REQUIRE_BROWSER=1 but {missing}")
        pytest.skip(f"browser tests need Chromium and playwright: {missing}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


class Visit:
    """A report page opened from file://, with everything the page logged, asked for or showed."""

    def __init__(self, browser: Any, path: Path, screenshot: Path) -> None:
        self.url = path.resolve().as_uri()
        self.console: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = self.context.new_page()
        page.on("console", lambda message: self.console.append((message.type, message.text)))
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("dialog", self._dialog)
        page.goto(self.url, wait_until="load")
        page.wait_for_function("window.ddlxChartsDone === true", timeout=30_000)
        self.page = page
        page.screenshot(path=str(screenshot), full_page=True)
        print(f"screenshot: {screenshot}")

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def close(self) -> None:
        self.context.close()

    def plots(self) -> list[dict[str, Any]]:
        """Per plot element: its figure id, SVG layers and drawn marks (line paths, bars, points)."""
        return self.page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(el => ({
            id: el.closest('figure').id,
            svgs: el.querySelectorAll('svg.main-svg').length,
            lines: el.querySelectorAll('g.scatterlayer g.trace path.js-line').length,
            bars: el.querySelectorAll('g.barlayer g.trace g.point path').length,
            points: el.querySelectorAll('g.scatterlayer g.trace g.points path.point').length,
            traces: el.data.length,
        }))""")

    def assert_clean(self) -> None:
        errors = [text for kind, text in self.console if kind == "error" or "Content Security" in text]
        assert not errors and not self.errors, (errors, self.errors)
        assert set(self.requests) == {self.url}, self.requests
        assert not self.dialogs, self.dialogs


def _assert_every_chart_drawn(visit: Visit, chart_ids: list[str]) -> None:
    plots = visit.plots()
    assert [p["id"] for p in plots] == chart_ids
    for plot in plots:
        assert plot["svgs"] >= 1, plot
        assert plot["lines"] + plot["bars"] + plot["points"] >= 1, plot
    body = visit.page.locator("body")
    assert body.get_attribute("data-charts-drawn") == str(len(chart_ids))
    assert body.get_attribute("data-charts-failed") == "0"


@pytest.fixture(scope="module")
def pai_sample(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("pai-sample")
    home = ensure_sample(base / "home", "pai")
    return run_analysis(home, "pai")


def test_trace_report_draws_every_chart_offline(browser, pai_sample, tmp_path: Path) -> None:
    path = write_report(pai_sample, tmp_path / "pai")
    report = build_report(pai_sample)
    assert len(report.charts) >= 30
    visit = Visit(browser, path, tmp_path / "pai-report.png")
    try:
        visit.assert_clean()
        _assert_every_chart_drawn(visit, [c.id for c in report.charts])
        banner = visit.page.locator("#synthetic-banner")
        assert banner.is_visible() and "SYNTHETIC" in banner.inner_text()
        visit.page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        assert banner.is_visible()  # it stays on screen while scrolling
        for section in ("overview", "utilization", "queueing", "failures", "sharing", "durations", "users",
                        "time_patterns", "data-quality", "about"):
            assert visit.page.locator(f"section#{section} h2").count() == 1
        jobs = visit.page.locator("#headline tbody tr").first.locator("td").nth(1)
        finding = next(f for f in pai_sample.module("overview").findings if f.name == "jobs")
        assert jobs.inner_text() == f"{finding.value:,}"
        query = visit.page.locator("#chart-queueing-by-gpu-bucket details.query")
        query.locator("summary").click()
        assert "FROM read_parquet('queueing/by_gpu_bucket.parquet')" in query.locator("pre").inner_text()
    finally:
        visit.close()


def test_compare_report_draws_every_chart(browser, pai_sample, tmp_path: Path) -> None:
    home = import_lab(tmp_path / "lab", "lab", ["ana", "bo", "cy"], ["vA", "vB"])
    lab = run_analysis(home, "lab")
    report = build_compare_report([pai_sample, lab])
    path = write_report_files(report, tmp_path / "compare")
    visit = Visit(browser, path, tmp_path / "compare-report.png")
    try:
        visit.assert_clean()
        _assert_every_chart_drawn(visit, [c.id for c in report.charts])
        header = visit.page.locator("#headline thead th").all_inner_texts()
        assert header[1].split() == ["pai", "SYNTHETIC"] and header[2] == "lab"
        assert "(pai)" in visit.page.locator("#synthetic-banner").inner_text()
        waits = next(p for p in visit.plots() if p["id"] == "chart-queueing-waits-over-thresholds")
        assert waits["traces"] == 2
    finally:
        visit.close()


def test_names_from_a_trace_are_shown_as_text_and_run_nothing(browser, tmp_path: Path) -> None:
    home = import_lab(tmp_path / "xss", "xss", [XSS_USER, XSS_VC, AMPERSAND], [XSS_VC, XSS_USER, BREAKOUT])
    result = run_analysis(home, "xss")
    path = write_report(result, tmp_path / "xss-results")
    html = path.read_text()
    assert XSS_USER not in html and XSS_VC not in html and BREAKOUT not in html
    visit = Visit(browser, path, tmp_path / "xss-report.png")
    try:
        visit.assert_clean()  # no dialog opened, no request for "x"
        page = visit.page
        assert page.evaluate("window.__xss === undefined")
        assert page.locator("img").count() == 0
        users = page.locator("#table-users-top-users tbody tr td:nth-child(2)").all_text_contents()
        assert sorted(users) == sorted([XSS_USER, XSS_VC, AMPERSAND])
        ticks = page.locator("#chart-users-top-users .xaxislayer-above .xtick text").all_text_contents()
        assert sorted(ticks) == sorted([XSS_USER, XSS_VC, AMPERSAND])  # plotly shows them as written
        legend = page.locator("#chart-queueing-cdf-by-vc .legendtext").all_text_contents()
        for name in (XSS_VC, XSS_USER, BREAKOUT):
            assert any(name in text for text in legend), (name, legend)
        page.locator("#chart-users-top-users .js-plotly-plot").hover()
        page.mouse.move(300, 300)
        assert not visit.dialogs and page.evaluate("window.__xss === undefined")
        _assert_every_chart_drawn(visit, [c.id for c in build_report(result).charts])
    finally:
        visit.close()


def test_reports_inline_in_a_notebook_page_draw_their_own_charts(browser, pai_sample, tmp_path: Path) -> None:
    """Two reports shown in one notebook-like page (the second without plotly.js, as a kernel's later
    reports are sent): each draws every one of its charts in its own block, the page's own styles are
    untouched, and an AMD loader on the page (as the classic notebook has) does not keep plotly.js
    from loading."""
    from ddlx.reports.notebook import report_view

    view = report_view(pai_sample)
    chart_ids = [c.id for c in view.report.charts]
    first, second = view.html(with_plotly=True), view.html(with_plotly=False)
    assert len(second) < len(first) / 4  # the later report carries its charts' data, not plotly.js
    host = ("<!DOCTYPE html><html><head>"
            "<style>body { color: rgb(4, 5, 6); margin: 7px; } h3 { font-size: 11px; }</style>"
            "<script>window.define = function () {}; window.define.amd = {};</script></head><body>"
            f"<h3 id='host-h3'>notebook</h3><div class='output'>{first}</div><div class='output'>{second}</div>"
            "</body></html>")
    page_file = tmp_path / "notebook.html"
    page_file.write_text(host, encoding="utf-8")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(page_file.resolve().as_uri(), wait_until="load")
        page.wait_for_function("document.querySelectorAll('.ddlx-report[data-charts-drawn]').length === 2",
                               timeout=30_000)
        roots = page.evaluate("""() => Array.from(document.querySelectorAll('.ddlx-report')).map(root => ({
            drawn: root.getAttribute('data-charts-drawn'), failed: root.getAttribute('data-charts-failed'),
            plots: Array.from(root.querySelectorAll('.js-plotly-plot')).map(el => el.closest('figure').id),
        }))""")
        assert len(roots) == 2
        for root in roots:
            assert root == {"drawn": str(len(chart_ids)), "failed": "0", "plots": chart_ids}
        assert not errors, errors
        host_style = page.evaluate("""() => [getComputedStyle(document.body).color,
            getComputedStyle(document.body).margin, getComputedStyle(document.getElementById('host-h3')).fontSize]""")
        assert host_style == ["rgb(4, 5, 6)", "7px", "11px"]  # the report's body and h3 rules stay in its block
        page.screenshot(path=str(tmp_path / "notebook.png"), full_page=False)
    finally:
        context.close()


@pytest.fixture(scope="module")
def three_samples(tmp_path_factory: pytest.TempPathFactory) -> list:
    base = tmp_path_factory.mktemp("three-samples")
    return [run_analysis(ensure_sample(base / "home", trace), trace) for trace in ("helios", "philly", "pai")]


def test_compare_report_answers_per_bucket_questions_as_figures(browser, three_samples, tmp_path: Path) -> None:
    """`ddlx report compare helios philly pai` on the samples, opened in Chromium: the queueing
    delay and run time by GPUs requested are one panel per bucket with one line per trace having
    that bucket, the quantiles are points on a log axis whose bucket ticks read in size order, and a
    statistic of fewer than 30 jobs is drawn faded. Screenshots of those charts are saved (paths
    printed)."""
    from ddlx.reports.chart_specs import BUCKET_NAMES, MIN_JOBS

    report = build_compare_report(three_samples)
    path = write_report_files(report, tmp_path / "compare")
    visit = Visit(browser, path, tmp_path / "compare-three.png")
    try:
        visit.assert_clean()
        _assert_every_chart_drawn(visit, [c.id for c in report.charts])
        plots = {p["id"]: p for p in visit.plots()}
        for prefix in ("chart-queueing-cdf-by-gpu-bucket-", "chart-durations-run-time-cdf-by-gpu-bucket-"):
            panels = [c for c in report.charts if c.id.startswith(prefix) and not c.id.endswith("-km")]
            assert len(panels) >= 6
            for chart in panels:
                bucket = chart.series[0].name  # e.g. "helios (n=5,239)"
                assert plots[chart.id]["lines"] == len(chart.series) == len({s.trace for s in chart.series}), bucket
                visit.page.locator(f"figure#{chart.id}").screenshot(path=str(tmp_path / f"{chart.id}.png"))
        quantiles = next(c for c in report.charts if c.id == "chart-queueing-by-gpu-bucket")
        figure = visit.page.locator("figure#chart-queueing-by-gpu-bucket")
        figure.screenshot(path=str(tmp_path / "chart-queueing-by-gpu-bucket.png"))
        print(f"screenshots: {tmp_path}")
        ticks = figure.locator("g.xtick text").all_text_contents()
        assert ticks == [BUCKET_NAMES[b] for b in quantiles.x_categories]
        assert figure.locator("g.ytick text").all_text_contents()[0] in ("0 s", "1 s")
        assert visit.page.evaluate("""() => document.querySelector(
            'figure#chart-queueing-by-gpu-bucket .js-plotly-plot')._fullLayout.yaxis.type""") == "log"
        small = [(s.name, x) for s in quantiles.series for x, y, n in zip(s.x, s.y, s.n)
                 if n < MIN_JOBS and y is not None]  # drawn points only (no jobs: no value, marked apart)
        opacities = visit.page.evaluate("""() => Array.from(document.querySelectorAll(
            'figure#chart-queueing-by-gpu-bucket g.scatterlayer g.trace g.points path.point'))
            .map(p => parseFloat(getComputedStyle(p).opacity))""")
        assert small and sum(1 for o in opacities if o < 0.5) >= len(small)
    finally:
        visit.close()
