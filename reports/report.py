"""Assembling a report: the `Report` (`ddlx.reports.model`) of analysis results.

`build_report` makes the report of one `AnalysisResult`; `assemble` the report of one or several,
one per trace, side by side (`ddlx.reports.compare.build_compare_report`). A section per analysis
module (in `MODULE_SECTIONS` order, then any other module run) holds its findings aligned by
definition over the traces, its charts (`ddlx.reports.chart_specs`), its small result tables in
full and the larger ones by file, and what did not apply; then come the data quality recorded at
ingest, each trace's provenance and the full text of every definition used.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from ddlx.analysis.definitions import get_definition
from ddlx.analysis.model import AnalysisResult, ModuleResult, ResultTable
from ddlx.reports.chart_specs import (
    BUCKET_SLUGS,
    BUCKET_TITLES,
    ChartSpec,
    build_chart,
    chart_specs,
    human_label,
    module_result,
    natural_order,
    table_source,
)
from ddlx.reports.model import (
    BoundCheck,
    Cell,
    Chart,
    Column,
    DataQuality,
    InputTable,
    Note,
    NumberRow,
    QualityCheck,
    Report,
    Section,
    Source,
    SourceFile,
    TableView,
    TraceFacts,
    TraceFigure,
    column_unit,
    display_with_unit,
    plain,
    slug,
)
from ddlx.reports.reproduction import reproduction_view

#: Result tables with at most this many rows (per trace) are shown in full; larger ones are listed
#: with their file (and drawn where a chart uses them).
INLINE_TABLE_ROWS = 80

#: The module sections, in report order: id, title, what the section shows.
MODULE_SECTIONS: tuple[tuple[str, str, str], ...] = (
    ("overview", "Overview",
     "Jobs, GPU jobs and GPU-hours of the trace; final states and GPU requests."),
    ("utilization", "Utilization",
     "GPUs allocated to jobs over time against the documented capacity; measured GPU utilisation "
     "where the trace records it."),
    ("queueing", "Queueing",
     "How long jobs waited from submission to their first start, by job size, GPU type, VC, hour "
     "of day and cluster load."),
    ("failures", "Failures",
     "Final states by job size, user and VC; how long failed jobs ran; GPU-time lost; retries."),
    ("sharing", "GPU sharing",
     "Jobs asking for part of a GPU, instances running together on a machine, GPU memory used, "
     "and fragmentation of GPU capacity."),
    ("durations", "Durations",
     "Run times of jobs that ended, with jobs still running at the trace end counted as censored "
     "(Kaplan-Meier)."),
    ("users", "Users",
     "How GPU-time is spread over jobs and users; the users with most GPU-time."),
    ("time_patterns", "Time patterns",
     "When jobs are submitted: hour of the week, day by day; recurring jobs."),
    ("gpu_efficiency", "GPU efficiency",
     "GPU telemetry (DCGM) attributed to jobs: GPU-hours allocated and idle per job, user and "
     "partition; the fleet's allocated-but-idle share over time; the jobs and users holding most idle "
     "GPU-hours."),
)


# --- assembling -------------------------------------------------------------------------------

@dataclass
class TraceInput:
    """One trace's analysis result and where its results folder is, relative to the report."""

    result: AnalysisResult
    folder: str  # "" or "<trace>/"


def build_report(result: AnalysisResult) -> Report:
    """The report of one trace's analysis; result tables are referred to relative to its results
    folder (where `write_report` puts the report)."""
    return assemble([TraceInput(result, "")], compare=False)


def assemble(inputs: Sequence[TraceInput], compare: bool, title: str | None = None) -> Report:
    """A report over one or several traces (`compare`: several, side by side)."""
    from ddlx import __version__

    traces = [i.result.trace for i in inputs]
    sections = [_module_section(inputs, module, name, summary, compare) for module, name, summary in MODULE_SECTIONS]
    known = {m for m, _, _ in MODULE_SECTIONS}
    extra = list(dict.fromkeys(m.module for i in inputs for m in i.result.modules if m.module not in known))
    sections += [_module_section(inputs, m, m.replace("_", " ").capitalize(), "", compare) for m in extra]
    overview = next(s for s in sections if s.id == "overview")
    headline = [row for row in (overview.numbers if overview.ran else [row for s in sections for row in s.numbers])
                if not all(cell.small_sample for cell in row.cells if not cell.missing)]
    definitions = _definitions(inputs, sections)
    if title is None:
        title = f"ddlx report: {traces[0]}" if not compare else "ddlx compare: " + ", ".join(traces)
    notes = []
    if not compare:
        notes.append("Result tables are named by their file in this results folder; charts are drawn "
                     "from them, thinned where a series is long, and the tables keep every row.")
    else:
        notes.append("Each trace's results folder sits beside this report (<trace>/); charts and tables "
                     "name the file they were drawn from. Numbers are aligned by their definition.")
    return Report(
        kind="compare" if compare else "trace",
        title=title,
        created_at=dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
        ddlx_version=__version__,
        traces=[_trace_facts(i) for i in inputs],
        headline=headline,
        sections=sections,
        data_quality=_data_quality(inputs),
        definitions=definitions,
        notes=notes,
        reproductions=[reproduction_view(i.result.trace, r) for i in inputs for r in i.result.reproductions],
    )


def _module_section(inputs: Sequence[TraceInput], module: str, title: str, summary: str, compare: bool) -> Section:
    per_trace = {i.result.trace: module_result(i.result, module) for i in inputs}
    section = Section(id=module, title=title, summary=summary,
                      ran=[t for t, m in per_trace.items() if m is not None],
                      not_run=[t for t, m in per_trace.items() if m is None])
    if not section.ran:
        return section
    section.numbers = aligned_numbers(module, per_trace)
    section.not_applicable = [Note(t, n.what, n.why) for t, m in per_trace.items() if m for n in m.not_applicable]
    for spec in chart_specs():
        if spec.module != module or (compare and spec.compare_where is None) or (not compare and not spec.in_trace):
            continue
        if compare and spec.compare_panels:
            section.charts += compare_panels(spec, inputs)
            continue
        chart, note = build_chart(spec, inputs, compare)
        if chart is not None:
            section.charts.append(chart)
            for panel in range(2, chart.panels + 1):  # small multiples of a table with many groups
                more, _ = build_chart(spec, inputs, compare, panel)
                if more is not None:
                    section.charts.append(more)
        if note:
            section.notes.append(note)
    for name in dict.fromkeys(t.name for m in per_trace.values() if m for t in m.tables):
        found = [(i, t) for i in inputs for m in [per_trace[i.result.trace]] if m
                 for t in m.tables if t.name == name]
        sources = [table_source(i, module, t) for i, t in found]
        if max(t.frame.height for _, t in found) <= INLINE_TABLE_ROWS:
            section.tables.append(_table_view(module, name, found, sources, compare))
        else:
            section.listed_tables.extend(sources)
    return section


def compare_panels(spec: ChartSpec, inputs: Sequence[TraceInput]) -> list[Chart]:
    """The charts of `spec` in a compare report with one chart per value of `spec.compare_panels`
    (e.g. one per GPU bucket, in their natural order), each with one series per trace."""
    column = spec.compare_panels
    values: list[Any] = []
    for item in inputs:
        module = module_result(item.result, spec.module)
        table = None if module is None else next((t for t in module.tables if t.name == spec.table), None)
        if table is not None and column in table.frame.columns:
            values += [v for v in table.frame[column].unique(maintain_order=True).to_list() if v not in values]
    charts = []
    for value in natural_order(values, (column,)):
        part = BUCKET_SLUGS.get(value, str(value)) if column == "gpu_bucket" else str(value)
        one = replace(spec, compare_where=((column, value),), key=slug(spec.key, part) if spec.key else slug(part),
                      title=f"{spec.title}: "
                            + (BUCKET_TITLES.get(value, str(value)) if column == "gpu_bucket"
                               else str(human_label(value, "", column))))
        chart, _ = build_chart(one, inputs, compare=True)
        if chart is not None:
            charts.append(chart)
    return charts


def aligned_numbers(module: str, per_trace: Mapping[str, ModuleResult | None]) -> list[NumberRow]:
    """The findings of `module` on each trace, one row per (finding name, definition), in order of
    first appearance; a trace without the finding gets a cell saying why."""
    rows: dict[tuple[str, str], NumberRow] = {}
    for trace, result in per_trace.items():
        for finding in result.findings if result else []:
            key = (finding.name, finding.definition)
            if key not in rows:
                rows[key] = NumberRow(module, finding.name, finding.text, finding.unit, finding.definition, [],
                                      result.specific.get(finding.name, ""))
    for row in rows.values():
        for trace, result in per_trace.items():
            finding = None if result is None else next(
                (f for f in result.findings if (f.name, f.definition) == (row.name, row.definition)), None)
            if finding is not None:
                value = plain(finding.value)
                small = "" if finding.headline else f"only {finding.basis:,}: a small sample, not a headline"
                row.cells.append(Cell(trace, value, display_with_unit(value, finding.unit), finding.population,
                                      alternative=finding.alternative, small_sample=small, warning=finding.warning))
            elif result is None:
                row.cells.append(Cell(trace, None, "-", missing=f"the {module} module was not run on {trace}"))
            else:
                why = "not computed for this trace"
                if result.not_applicable:
                    why += " (see what did not apply below)"
                row.cells.append(Cell(trace, None, "-", missing=why))
    return list(rows.values())


def _table_view(module: str, name: str, found: list[tuple[TraceInput, ResultTable]], sources: list[Source],
                compare: bool) -> TableView:
    columns: list[str] = ["trace"] if compare else []
    for _, table in found:
        columns += [c for c in table.frame.columns if c not in columns]
    rows = []
    for item, table in found:
        for record in table.frame.iter_rows(named=True):
            values = {**record, "trace": item.result.trace} if compare else record
            rows.append([plain(values.get(c)) for c in columns])
    definitions = list(dict.fromkeys(d for _, t in found for d in t.definitions))
    specific = "; ".join(dict.fromkeys(
        label for item, _ in found for m in item.result.modules if m.module == module
        if (label := m.specific.get(name))))
    return TableView(id=slug("table", module, name), module=module, name=name, row=found[0][1].row,
                     definitions=definitions, columns=[Column(c, column_unit(c)) for c in columns], rows=rows,
                     sources=sources, specific=specific)


def _definitions(inputs: Sequence[TraceInput], sections: Sequence[Section]) -> list[dict[str, str]]:
    ids = [d for i in inputs for d in i.result.definition_ids]
    ids += [d for s in sections for c in s.charts for d in c.definitions]
    return [asdict(get_definition(d)) for d in dict.fromkeys(ids)]


def _trace_facts(item: TraceInput) -> TraceFacts:
    result = item.result
    provenance = result.provenance or {}
    files = [SourceFile(table=table, path=str(f.get("path")), member=f.get("member"), sha256=f.get("sha256"),
                        matches_official_release=f.get("matches_official_release"))
             for table, entries in (provenance.get("source_files") or {}).items() for f in entries]
    return TraceFacts(
        name=result.trace,
        synthetic=result.synthetic,
        store_version=provenance.get("store_version"),
        catalog=provenance.get("catalog"),
        ingested_at=provenance.get("ingested_at"),
        ddlx_version_at_ingest=provenance.get("ddlx_version_at_ingest"),
        source_files=files,
        synthetic_details=provenance.get("synthetic_details"),
        modules=[m.module for m in result.modules],
        results_folder=item.folder.rstrip("/") or ".",
        kept_results=provenance.get("kept_results"),
    )


def _data_quality(inputs: Sequence[TraceInput]) -> DataQuality:
    checks, tables, figures = [], [], []
    for item in inputs:
        provenance = item.result.provenance or {}
        trace = item.result.trace
        for check in provenance.get("validation") or []:
            checks.append(QualityCheck(trace, str(check.get("table")), str(check.get("check")), check.get("rows"),
                                       check.get("of_rows"), plain(check.get("share"))))
        rows = provenance.get("rows") or {}
        rejected = provenance.get("rejected_rows") or {}
        for table in dict.fromkeys([*rows, *rejected]):
            tables.append(InputTable(trace, table, rows.get(table), rejected.get(table)))
        for figure in provenance.get("figures") or []:
            figures.append(TraceFigure(trace, str(figure.get("table")), str(figure.get("figure")),
                                       plain(figure.get("value")), str(figure.get("unit") or "")))
    bounds = [BoundCheck(item.result.trace, m.module, c.text, c.flagged, c.of, c.unit, plain(c.share), list(c.affects))
              for item in inputs for m in item.result.modules for c in m.checks]
    return DataQuality(checks, tables, figures, bounds)
