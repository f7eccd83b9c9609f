"""Rendering reports (`ddlx.reports.render`) and `ddlx report compare`: the files written, every
section present, numbers in the HTML equal to the result tables read back from Parquet, plotly.js
inlined once and nothing fetched, the SYNTHETIC banner, strings from a trace escaped in HTML,
chart JSON, Markdown and JSON. Browsers are in test_report_browser.py."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from ddlx.analysis.model import AnalysisResult
from ddlx.analysis.runner import run_analysis
from ddlx.cli.report import report_app
from ddlx.datasets.synthetic import ensure_sample
from ddlx.errors import CatalogError
from ddlx.reports import charts
from ddlx.reports.model import SYNTHETIC_BANNER
from ddlx.reports.render import REPORT_FILES, render_html, render_markdown, write_report
from ddlx.reports.report import build_report
from ddlx.reports.results import write_results
from tests.test_report_model import import_lab

SECTION_IDS = ["overview", "utilization", "queueing", "failures", "sharing", "durations", "users",
               "time_patterns", "data-quality", "about"]
XSS_USER = "<script>alert(1)</script>"
XSS_VC = '"><img src=x onerror=alert(1)>'


class Page(HTMLParser):
    """The parts of a report page the tests read: elements by id, table cells, scripts, attributes."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.tables: dict[str, list[list[dict]]] = {}
        self.scripts: list[tuple[dict, str]] = []
        self.attributes: list[tuple[str, str, str | None]] = []
        self._table: str | None = None
        self._cell: dict | None = None
        self._script: dict | None = None
        self._script_text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.attributes += [(tag, k, v) for k, v in attrs]
        if "id" in found:
            self.ids.add(found["id"] or "")
        if tag == "table":
            self._table = found.get("id") or f"table-{len(self.tables)}"
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = {"attrs": found, "text": ""}
            self.tables[self._table][-1].append(self._cell)
        elif tag == "script":
            self._script, self._script_text = found, []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None
        elif tag in ("td", "th"):
            self._cell = None
        elif tag == "script" and self._script is not None:
            self.scripts.append((self._script, "".join(self._script_text)))
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._script_text.append(data)
        elif self._cell is not None:
            self._cell["text"] += data


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[AnalysisResult, Path]:
    """The imported 30-job table, analysed, with its results folder and report written."""
    base = tmp_path_factory.mktemp("render")
    home = import_lab(base, "lab", ["ana", "bo", "cy", "dee"], ["vA", "vB", "vC"])
    result = run_analysis(home, "lab")
    out = base / "results"
    write_results(result, out)
    write_report(result, out)
    return result, out


@pytest.fixture(scope="module")
def xss(tmp_path_factory: pytest.TempPathFactory) -> tuple[AnalysisResult, Path]:
    """A dataset whose user and VC names are script payloads, with its results and report."""
    base = tmp_path_factory.mktemp("xss")
    home = import_lab(base, "xss", [XSS_USER, XSS_VC, "plain"], [XSS_VC, XSS_USER])
    result = run_analysis(home, "xss")
    out = base / "results"
    write_results(result, out)
    write_report(result, out)
    return result, out


def test_write_report_writes_three_files_in_place(lab, tmp_path: Path) -> None:
    result, _ = lab
    path = write_report(result, tmp_path / "new")
    assert path == tmp_path / "new" / "report.html"
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == sorted(REPORT_FILES.values())
    first = path.read_text()
    write_report(result, tmp_path / "new")  # a second run replaces the files, leaves no temporary ones
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == sorted(REPORT_FILES.values())
    assert len(path.read_text()) == pytest.approx(len(first), abs=200)


def test_html_has_every_section_and_plotly_once(lab) -> None:
    result, out = lab
    text = (out / "report.html").read_text()
    page = Page(text)
    assert set(SECTION_IDS) <= page.ids
    positions = [text.index(f'id="{s}"') for s in SECTION_IDS]
    assert positions == sorted(positions)
    bundle = charts.plotly_js()
    assert text.count(bundle) == 1 and text.count(bundle[:300]) == 1
    report = build_report(result)
    assert len(report.charts) >= 12
    plots = [a for a, _ in page.scripts
             if a.get("type") == "application/json" and a.get("id", "").startswith("figure-")]
    assert len(plots) == len(report.charts)
    assert text.count("<summary>Query behind this chart</summary>") == len(report.charts)
    for chart in report.charts:
        assert chart.id in page.ids and f'data-figure="figure-{chart.id}"' in text
        assert f"<h4>{_escape(chart.title)}</h4>" in text and _escape(chart.query) in text


def test_html_references_nothing_outside_itself(lab) -> None:
    _, out = lab
    text = (out / "report.html").read_text()
    page = Page(text)
    assert not [a for a in page.attributes if a[1] in ("src", "srcset", "action", "poster", "data")]
    assert not [a for a in page.attributes if a[0] == "link"]
    assert all(v.startswith("#") for t, k, v in page.attributes if k == "href"), "only links inside the page"
    policy = next(v for t, k, v in page.attributes if t == "meta" and k == "content" and "default-src" in (v or ""))
    assert "default-src 'none'" in policy and "connect-src 'none'" in policy
    assert "unsafe-inline" not in policy.split("style-src")[0]  # no script runs unless its hash is listed
    code = [body for attrs, body in page.scripts if not attrs.get("type")]
    assert len(code) == 2  # plotly.js and the drawing script, each allowed by its hash
    for body in code:
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in policy


def _cells(page: Page, table_id: str) -> tuple[list[str], list[list[dict]]]:
    rows = page.tables[table_id]
    header = [c["attrs"].get("data-column") for c in rows[0]]
    return header, rows[1:]


@pytest.mark.parametrize(("module", "table"), [("queueing", "by_gpu_bucket"), ("overview", "state_mix"),
                                               ("users", "top_users"), ("durations", "run_time_by_gpu_bucket")])
def test_table_numbers_equal_the_parquet_tables(lab, module: str, table: str) -> None:
    _, out = lab
    page = Page((out / "report.html").read_text())
    expected = pl.read_parquet(out / module / f"{table}.parquet").drop("trace", "synthetic")
    header, rows = _cells(page, f"table-{module}-{table.replace('_', '-')}")
    assert header == expected.columns and len(rows) == expected.height > 0
    checked = 0
    for row, want in zip(rows, expected.iter_rows(named=True)):
        for column, cell in zip(header, row):
            value = want[column]
            if isinstance(value, bool) or value is None:
                continue
            if isinstance(value, (int, float)):
                assert float(cell["attrs"]["data-value"]) == value, (column, cell)
                checked += 1
            else:
                assert cell["text"] == str(value)
    assert checked >= expected.height


def test_headline_numbers_equal_summary_json(lab) -> None:
    _, out = lab
    summary = json.loads((out / "summary.json").read_text())
    page = Page((out / "report.html").read_text())
    rows = page.tables["headline"][1:]
    findings = [f for f in summary["modules"]["overview"]["findings"] if f["headline"]]
    assert len(rows) == len(findings) == 3  # the lab's 30 jobs: counts and totals, no quantile or share
    for row, finding in zip(rows, findings):
        assert row[0]["text"] == finding["text"]
        assert float(row[1]["attrs"]["data-value"]) == finding["value"]
        assert finding["definition"] in row[3]["text"]
    jobs = rows[0]
    assert jobs[1]["text"] == "30" and jobs[2]["text"] == "jobs"


def test_not_applicable_reasons_are_shown(lab) -> None:
    result, out = lab
    text = (out / "report.html").read_text()
    page = Page(text)
    for module in result.modules:
        if module.not_applicable:
            assert f"not-applicable-{module.module}" in page.ids
        for note in module.not_applicable:
            assert _escape(f"{note.what}: {note.why}") in text


def _escape(text: str) -> str:
    from markupsafe import escape

    return str(escape(text))


def test_chart_json_parses_and_cannot_close_its_script(lab) -> None:
    _, out = lab
    text = (out / "report.html").read_text()
    page = Page(text)
    blocks = [(a, body) for a, body in page.scripts if a.get("type") == "application/json"]
    assert len(blocks) >= 14
    for attrs, body in blocks:
        assert "<" not in body and ">" not in body and "&" not in body
        figure = json.loads(body)
        if attrs["id"].startswith("figure-"):
            assert figure["data"] and figure["layout"]["xaxis"]["title"]["text"]
    assert text.lower().count("</script") == text.lower().count("<script")


def test_no_banner_on_real_data_and_banner_on_synthetic(lab, tmp_path: Path) -> None:
    _, out = lab
    real = (out / "report.html").read_text()
    assert "synthetic-banner" not in real and SYNTHETIC_BANNER not in real
    assert SYNTHETIC_BANNER not in (out / "report.md").read_text()
    assert "label" not in json.loads((out / "report.json").read_text())
    home = ensure_sample(tmp_path / "home", "acme")
    sample = run_analysis(home, "acme", ["overview", "queueing"])
    written = write_report(sample, tmp_path / "acme")
    html = written.read_text()
    page = Page(html)
    assert "synthetic-banner" in page.ids and html.count(SYNTHETIC_BANNER) == 1
    assert "<title>SYNTHETIC: " in html
    markdown = (tmp_path / "acme" / "report.md").read_text()
    assert markdown.startswith(f"> **{SYNTHETIC_BANNER}**") and markdown.rstrip().endswith(f"> **{SYNTHETIC_BANNER}**")
    document = json.loads((tmp_path / "acme" / "report.json").read_text())
    assert document["label"] == "SYNTHETIC" and document["synthetic"] is True


def test_strings_from_the_trace_are_escaped_everywhere(xss) -> None:
    result, out = xss
    html = (out / "report.html").read_text()
    markdown = (out / "report.md").read_text()
    raw_json = (out / "report.json").read_text()
    for payload in (XSS_USER, XSS_VC, "<img", "<script>alert", "onerror=alert(1)>"):
        assert payload not in html and payload not in markdown and payload not in raw_json, payload
    assert _escape(XSS_USER) in html and _escape(XSS_VC) in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markdown
    document = json.loads(raw_json)  # the JSON keeps the names as written, behind \u escapes
    top = next(t for s in document["sections"] for t in s["tables"] if t["name"] == "top_users")
    assert {row[1] for row in top["rows"]} == {XSS_USER, XSS_VC, "plain"}
    page = Page(html)
    _, rows = _cells(page, "table-users-top-users")
    assert {r[1]["text"] for r in rows} == {XSS_USER, XSS_VC, "plain"}  # shown as text, exactly
    figures = {a["id"]: json.loads(body) for a, body in page.scripts if a.get("id", "").startswith("figure-")}
    users = figures["figure-chart-users-top-users"]["data"][0]["x"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in users  # plotly gets entities and shows them as text
    vcs = figures["figure-chart-queueing-cdf-by-vc"]["data"]
    assert any('"&gt;&lt;img src=x onerror=alert(1)&gt;' in t["name"] for t in vcs)


def test_markdown_has_the_numbers_and_sections(lab) -> None:
    result, out = lab
    markdown = (out / "report.md").read_text()
    for title in ("Overview", "Utilization", "Queueing", "Failures", "GPU sharing", "Durations", "Users",
                  "Time patterns", "Data quality", "About"):
        assert f"\n## {title}\n" in markdown
    jobs = next(f for f in result.module("overview").findings if f.name == "jobs")
    assert f"| {jobs.text} | 30 | jobs | {jobs.definition} |" in markdown
    assert "```sql\nSELECT " in markdown and "FROM read_parquet('queueing/by_gpu_bucket.parquet')" in markdown
    table = result.module("queueing").table("by_gpu_bucket")
    first = table.row(0, named=True)
    assert f"| {first['gpu_bucket']} | {first['jobs']} |" in markdown


def test_render_functions_agree_with_the_files(lab) -> None:
    result, out = lab
    report = build_report(result)
    assert render_markdown(report).split("Written ")[0] == (out / "report.md").read_text().split("Written ")[0]
    assert len(render_html(report)) == pytest.approx(len((out / "report.html").read_text()), rel=0.01)


def _cli() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """ddlx (test shell)."""

    app.add_typer(report_app, name="report")
    return app


def test_cli_compare_writes_one_report_with_each_trace(tmp_path: Path) -> None:
    home = import_lab(tmp_path / "a", "lab", ["ana", "bo"], ["vA", "vB"], home=tmp_path / "home")
    import_lab(tmp_path / "b", "other", ["cy", "dee", "eve"], ["vX"], home=home)
    out = tmp_path / "cmp"
    result = CliRunner().invoke(_cli(), ["report", "compare", "lab", "other", "--out", str(out),
                                         "--data-home", str(home), "-m", "overview,queueing"])
    assert result.exit_code == 0, result.output
    assert f"report: {out / 'report.html'}" in result.output and "SYNTHETIC" not in result.output
    assert sorted(p.name for p in out.iterdir()) == ["lab", "other", "report.html", "report.json", "report.md"]
    page = Page((out / "report.html").read_text())
    header = [c["text"] for c in page.tables["headline"][0]]
    assert header == ["number", "lab", "other", "unit", "definition"]
    jobs = page.tables["headline"][1]
    assert [c["attrs"].get("data-value") for c in jobs[1:3]] == ["30", "30"]
    summary = json.loads((out / "other" / "summary.json").read_text())
    assert summary["trace"] == "other" and set(summary["modules"]) == {"overview", "queueing"}
    assert "not run on lab, other" in (out / "report.html").read_text()


def test_cli_compare_uses_the_synthetic_sample_of_a_trace_not_ingested(tmp_path: Path) -> None:
    home = import_lab(tmp_path / "a", "lab", ["ana"], ["vA"], home=tmp_path / "home")
    out = tmp_path / "cmp"
    result = CliRunner().invoke(_cli(), ["report", "compare", "acme", "lab", "--out", str(out),
                                         "--data-home", str(home), "-m", "overview"])
    assert result.exit_code == 0, result.output
    assert f"*** {SYNTHETIC_BANNER} (acme) ***" in result.output
    assert "acme (SYNTHETIC): results in" in result.output
    html = (out / "report.html").read_text()
    assert f"{SYNTHETIC_BANNER} (acme)" in html
    assert json.loads((out / "acme" / "summary.json").read_text())["label"] == "SYNTHETIC"


def test_cli_compare_refuses_bad_names(tmp_path: Path) -> None:
    one = CliRunner().invoke(_cli(), ["report", "compare", "pai", "--data-home", str(tmp_path)])
    assert one.exit_code == 2 and "two or more" in one.output
    twice = CliRunner().invoke(_cli(), ["report", "compare", "pai", "pai", "--data-home", str(tmp_path)])
    assert twice.exit_code == 2 and "named twice" in twice.output
    unknown = CliRunner().invoke(_cli(), ["report", "compare", "nosuch", "other", "--data-home", str(tmp_path)])
    assert isinstance(unknown.exception, CatalogError) and "no jobs of 'nosuch'" in str(unknown.exception)
    assert not (tmp_path / "ddlx-results").exists()


def test_every_report_command_has_help() -> None:
    result = CliRunner().invoke(_cli(), ["report", "compare", "--help"])
    assert result.exit_code == 0
    assert re.search(r"--out", result.output) and "--data-home" in result.output and "SYNTHETIC" in result.output


def test_sql_a_module_exposes_is_shown_with_its_chart(lab) -> None:
    result, _ = lab
    table = next(t for t in result.module("queueing").tables if t.name == "by_gpu_bucket")
    table.sql = "SELECT gpu_bucket, quantile_cont(queue_s, 0.5) AS p50_s FROM jobs WHERE x < 1 GROUP BY 1"
    try:
        html = render_html(build_report(result))
    finally:
        del table.sql
    assert "The SQL the queueing module ran for <code>queueing/by_gpu_bucket.parquet</code>" in html
    assert "FROM jobs WHERE x &lt; 1 GROUP BY 1" in html
    assert "The SQL the queueing module ran" not in render_html(build_report(result))
