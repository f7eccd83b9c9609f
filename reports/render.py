"""Rendering a report: HTML and Markdown from the jinja2 templates in `reports/templates/`, JSON
from the report object, and writing the three files.

The HTML page is one file that needs nothing else: its CSS, the plotly.js bundle (once) and a
small script that draws each chart are inlined. A Content-Security-Policy allows only those two
scripts (by hash) and no network access at all. Templates autoescape every value; chart data sit in
`<script type="application/json">` blocks written by `charts.script_json`, which cannot close the
block. Markdown escapes every value too (`&`, `<`, `>` as entities, `|` so tables hold).
"""

from __future__ import annotations

import base64
import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from ddlx.analysis.model import AnalysisResult
from ddlx.atomic import write_text_atomic
from ddlx.reports import charts
from ddlx.reports.model import (
    SYNTHETIC_BANNER,
    Report,
    column_unit,
    display,
    display_with_unit,
)
from ddlx.reports.report import build_report
from ddlx.reports.text import json_value

#: The files a report is written as, in its folder.
REPORT_FILES = {"html": "report.html", "markdown": "report.md", "json": "report.json"}


def _template_file(name: str) -> str:
    from importlib.resources import files

    return (files("ddlx.reports") / "templates" / name).read_text(encoding="utf-8")


def _cell(value: Any, unit: str = "") -> str:
    return display(value, unit)


def _raw(value: Any) -> str:
    """A value written in full (for `data-value` attributes): floats as their shortest exact repr."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def _common_globals() -> dict[str, Any]:
    return {"banner_text": SYNTHETIC_BANNER, "column_unit": column_unit}


@lru_cache(maxsize=1)
def html_environment() -> Environment:
    """The jinja2 environment of the HTML template: autoescape on for every template."""
    env = Environment(loader=PackageLoader("ddlx.reports", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(cell=_cell, raw=_raw, with_unit=display_with_unit)
    env.globals.update(_common_globals())
    return env


def markdown_escape(value: Any) -> str:
    """A value as Markdown text: HTML-significant characters as entities (a Markdown viewer must
    not read a trace's strings as HTML), `|` escaped for tables, line breaks as spaces.
    `Markup` values (code blocks built by the template's `code` filter) pass unchanged."""
    if isinstance(value, Markup):
        return str(value)
    if value is None:
        return ""
    text = str(value)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")
    return " ".join(text.splitlines())


def markdown_code_block(value: str, language: str = "") -> Markup:
    """`value` as a fenced code block whose fence is longer than any backtick run inside it."""
    longest = max((len(run) for run in value.split("\n") for run in _backtick_runs(run)), default=0)
    fence = "`" * max(3, longest + 1)
    return Markup(f"{fence}{language}\n{value}\n{fence}")


def _backtick_runs(line: str) -> list[str]:
    runs, current = [], ""
    for char in line:
        if char == "`":
            current += char
        elif current:
            runs.append(current)
            current = ""
    return runs + ([current] if current else [])


@lru_cache(maxsize=1)
def markdown_environment() -> Environment:
    """The jinja2 environment of the Markdown template: every printed value goes through
    `markdown_escape` (autoescape for Markdown)."""
    env = Environment(loader=PackageLoader("ddlx.reports", "templates"), autoescape=False,
                      finalize=markdown_escape, undefined=StrictUndefined, trim_blocks=True,
                      lstrip_blocks=True, keep_trailing_newline=True)
    # `keep`: the output of a macro of the template, whose values are escaped already.
    env.filters.update(cell=_cell, with_unit=display_with_unit, code=markdown_code_block, keep=Markup)
    env.globals.update(_common_globals())
    return env


def _script_hash(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def render_html(report: Report) -> str:
    """The report as one self-contained HTML page."""
    plotly_js = charts.plotly_js()
    boot_js = _template_file("report.js") + "ddlxDrawCharts(document.body);\n"
    policy = "; ".join([
        "default-src 'none'",
        f"script-src {_script_hash(plotly_js)} {_script_hash(boot_js)}",
        "style-src 'unsafe-inline'",
        "img-src data: blob:",
        "font-src data:",
        "connect-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
    ])
    figures = {chart.id: Markup(charts.figure_json(chart)) for chart in report.charts}
    page = html_environment().get_template("report.html.j2").render(
        report=report,
        definitions=report.definition_map,
        traces={t.name: t for t in report.traces},
        figures=figures,
        layout_json=Markup(charts.script_json(charts.BASE_LAYOUT)),
        config_json=Markup(charts.script_json(charts.PLOT_CONFIG)),
        css=Markup(_template_file("report.css")),
        plotly_js=Markup(plotly_js),
        boot_js=Markup(boot_js),
        csp=policy,
        plotly_version=charts.plotly_version(),
    )
    return page


def render_inline_html(report: Report, root_id: str, with_plotly: bool) -> str:
    """The report as one block of a notebook's output: the page's content inside `<div id=root_id>`,
    its CSS scoped to that block (`scoped_css`), its charts drawn by the page's own script; plotly.js
    inlined only `with_plotly` (and run only where the notebook has none yet)."""
    return html_environment().get_template("report_inline.html.j2").render(
        report=report, definitions=report.definition_map, traces={t.name: t for t in report.traces},
        figures={chart.id: Markup(charts.figure_json(chart)) for chart in report.charts},
        layout_json=Markup(charts.script_json(charts.BASE_LAYOUT)),
        config_json=Markup(charts.script_json(charts.PLOT_CONFIG)),
        css=Markup(scoped_css(_template_file("report.css"), f"#{root_id}")),
        plotly_js=Markup(charts.plotly_js()) if with_plotly else "",
        boot_js=Markup(_template_file("report.js")), root_id=root_id, plotly_version=charts.plotly_version())


def scoped_css(css: str, scope: str) -> str:
    """`css` with every rule limited to the element `scope` (a selector): `:root`, `html` and `body`
    become the element itself, every other selector a descendant of it; `@media` blocks likewise."""
    import re

    def selectors(text: str) -> str:
        scoped = []
        for selector in (part.strip() for part in text.split(",")):
            head, _, rest = selector.partition(" ")
            if head in (":root", "html", "body"):
                scoped.append(f"{scope} {rest}".strip())
            else:
                scoped.append(f"{scope} {selector}")
        return ", ".join(scoped)

    def rules(text: str) -> str:
        return re.sub(r"([^{}]+)\{([^{}]*)\}", lambda m: f"{selectors(m.group(1))} {{{m.group(2)}}}", text)

    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    out, position = [], 0
    for media in re.finditer(r"(@media[^{]+)\{((?:[^{}]*\{[^{}]*\})*\s*)\}", css):
        out.append(rules(css[position:media.start()]))
        out.append(f"{media.group(1).strip()} {{ {rules(media.group(2))} }}")
        position = media.end()
    out.append(rules(css[position:]))
    return "".join(out)


def render_markdown(report: Report) -> str:
    """The report as Markdown (charts listed with their data and query, not drawn)."""
    return markdown_environment().get_template("report.md.j2").render(
        report=report, definitions=report.definition_map, traces={t.name: t for t in report.traces})


def render_json(report: Report) -> str:
    """The report object as JSON (`Report.to_dict`); `<`, `>` and `&` are written as `\\u` escapes
    so the file is inert even if served as HTML."""
    text = json.dumps(json_value(report.to_dict()), indent=1, ensure_ascii=False, allow_nan=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n"


def write_report_files(report: Report, out_dir: Path) -> Path:
    """Write `report.html`, `report.md` and `report.json` of `report` into `out_dir` (each written
    beside its final name and renamed into place); returns the HTML file."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rendered = {
        REPORT_FILES["html"]: render_html(report),
        REPORT_FILES["markdown"]: render_markdown(report),
        REPORT_FILES["json"]: render_json(report),
    }
    for name, text in rendered.items():
        write_text_atomic(out_dir / name, text)
    return out_dir / REPORT_FILES["html"]


def write_report(result: AnalysisResult, out_dir: Path) -> Path:
    """Write the report of `result` (`report.html`, `report.md`, `report.json`) into its results
    folder `out_dir`; returns the path of `report.html`."""
    return write_report_files(build_report(result), Path(out_dir))
