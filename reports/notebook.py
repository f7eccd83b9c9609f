"""A report in a notebook: `report_view(*results)` gives the report of one analysis (or several side
by side) as an object that shows itself inline, lists its charts, gives each as a plotly `Figure`
to restyle and save, and writes the self-contained page.

Inline, the report is the page's own content and charts (the same template and drawing script),
its CSS limited to its own block; plotly.js is sent with the first report a kernel shows and run
only where the notebook has none yet, so every later report is light (its charts' data alone).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ddlx.analysis.model import AnalysisResult
from ddlx.display import SYNTHETIC_BANNER, escape
from ddlx.errors import did_you_mean
from ddlx.reports.model import Chart, Report

#: Whether this kernel has shown a report with plotly.js inlined (then later ones leave it out).
_plotly_sent = False


class ReportView:
    """The report of `results` (one analysis, or several traces side by side)."""

    def __init__(self, report: Report, results: Sequence[AnalysisResult]):
        self.report = report
        self.results = list(results)

    def charts(self) -> pl.DataFrame:
        """One row per chart in page order: id, section (module), kind, title, series drawn."""
        return pl.DataFrame([{"id": c.id, "module": c.module, "kind": c.kind, "title": c.title,
                              "series": len(c.series)} for c in self.report.charts],
                            schema={"id": pl.String, "module": pl.String, "kind": pl.String, "title": pl.String,
                                    "series": pl.Int64})

    def chart(self, chart_id: str) -> Chart:
        """The chart `chart_id` as data (series, units, definitions, sources); KeyError names the ids."""
        found = {c.id: c for c in self.report.charts}
        if chart_id not in found:
            raise KeyError(f"no chart {chart_id!r} in this report{did_you_mean(chart_id, list(found))}; "
                           "its ids: .charts()")
        return found[chart_id]

    def figure(self, chart_id: str) -> Any:
        """The plotly `Figure` of chart `chart_id`, as `ddlx report figures` draws it (the report's
        figure with the shared layout, its title, and the SYNTHETIC mark on generated data): change
        fonts, colours or axes with `update_layout`/`update_traces`, save with `write_image` or
        `write_html`."""
        import plotly.graph_objects as go

        from ddlx.reports.figures import file_figure

        return go.Figure(file_figure(self.chart(chart_id)))

    def write(self, folder: Path | str) -> ReportLink:
        """Write the results folder(s) and the self-contained report page into `folder` (replaced
        whole when ddlx wrote it, refused when it is another non-empty folder); returns a link to it."""
        if self.report.kind == "compare":
            from ddlx.reports.compare import write_compare

            return ReportLink(write_compare(self.results, self.report, Path(folder)))
        from ddlx.reports.render import REPORT_FILES
        from ddlx.reports.results import write_results

        write_results(self.results[0], Path(folder), with_report=True)
        return ReportLink(Path(folder) / REPORT_FILES["html"])

    def html(self, with_plotly: bool = True) -> str:
        """The inline block: the report's content and charts (plotly.js inlined `with_plotly`)."""
        from ddlx.reports.render import render_inline_html

        return render_inline_html(self.report, f"ddlx-report-{uuid.uuid4().hex[:12]}", with_plotly)

    def _repr_html_(self) -> str:
        global _plotly_sent
        block = self.html(with_plotly=not _plotly_sent)
        _plotly_sent = True
        return block

    def __repr__(self) -> str:
        head = [f"*** {SYNTHETIC_BANNER} ***"] if self.report.synthetic else []
        return "\n".join(head + [f"{self.report.title}: {len(self.report.sections)} sections, "
                                 f"{len(self.report.charts)} charts (ids: .charts(); a chart: .figure(id))"])


class ReportLink:
    """A written report page: shows as a link to it in a notebook."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def _repr_html_(self) -> str:
        return f'<a href="{escape(self.path.as_posix())}" target="_blank">{escape(self.path)}</a>'

    def __repr__(self) -> str:
        return f"report: {self.path}"

    def __fspath__(self) -> str:
        return str(self.path)


def report_view(*results: AnalysisResult, title: str | None = None) -> ReportView:
    """The report of one analysis result, or of several (two or more traces side by side, as
    `ddlx report compare`)."""
    from ddlx.reports.compare import build_compare_report, check_names
    from ddlx.reports.report import build_report

    if not results:
        raise TypeError("report_view needs one analysis result or more")
    if len(results) == 1:
        report = build_report(results[0])
        if title is not None:
            report.title = title
        return ReportView(report, results)
    check_names([r.trace for r in results])
    return ReportView(build_compare_report(results, title), results)
