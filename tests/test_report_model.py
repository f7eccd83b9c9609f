"""The report object (`ddlx.reports.model`, `.report`, `.compare`): sections, headline numbers,
charts as data and the query behind each, tables kept exact while long series are thinned,
what did not apply, provenance and data quality; the compare report's alignment.

Data: a 30-job table imported with `datasets import` (rows made by `lab_csv` below), the 5-job
hand-built PAI release of conftest (real, not synthetic: it has a validation report and input
checksums), and hand-made result tables for thinning.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb
import polars as pl
import pytest

from ddlx.analysis.definitions import registry
from ddlx.analysis.model import AnalysisResult, ModuleResult, ResultTable
from ddlx.analysis.runner import run_analysis
from ddlx.datasets.catalog import read_registrations
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.ingest import ingest
from ddlx.datasets.synthetic import home_with_jobs_or_sample
from ddlx.errors import CatalogError
from ddlx.reports import charts
from ddlx.reports.chart_specs import BUCKET_NAMES, MIN_JOBS
from ddlx.reports.compare import CompareError, build_compare_report, check_names
from ddlx.reports.render import render_html, render_markdown
from ddlx.reports.report import MODULE_SECTIONS, build_report
from ddlx.reports.results import write_results
from tests.conftest import write_pai_release

LAB_MAPPING = "job_id=job_id,user=user,vc=vc,gpus=gpus,state=state,submit=submit,start=start,end=end"
START = 1704067200  # 2024-01-01 00:00:00 UTC
GPUS = (0.5, 1, 2, 4, 8, 1)
STATES = ("COMPLETED", "FAILED", "CANCELLED", "COMPLETED", "RUNNING", "COMPLETED")


def lab_csv(users: list[str], vcs: list[str], jobs: int = 30) -> str:
    """`jobs` jobs, one every 1.5 h from 2024-01-01 UTC; job i: user i mod len(users), vc i mod
    len(vcs), GPUs GPUS[i mod 6], state STATES[i mod 6]; queued 10 + 60 (i mod 4) s, running
    600 (1 + i mod 7) s; RUNNING jobs have no end."""
    lines = ["job_id,user,vc,gpus,state,submit,start,end"]
    for i in range(jobs):
        submit = START + i * 5400
        start = submit + 10 + 60 * (i % 4)
        state = STATES[i % 6]
        end = "" if state == "RUNNING" else str(start + 600 * (1 + i % 7))
        user, vc = users[i % len(users)], vcs[i % len(vcs)]
        quoted = ['"' + v.replace('"', '""') + '"' for v in (user, vc)]
        lines.append(f"j{i},{quoted[0]},{quoted[1]},{GPUS[i % 6]},{state},{submit},{start},{end}")
    return "\n".join(lines) + "\n"


def import_lab(base: Path, name: str, users: list[str], vcs: list[str], home: Path | None = None) -> Path:
    """Import `lab_csv(users, vcs)` as dataset `name`; returns the data home."""
    home = home or base / "home"
    base.mkdir(parents=True, exist_ok=True)
    (base / f"{name}.csv").write_text(lab_csv(users, vcs))
    import_dataset(name, base / f"{name}.csv", home, mapping=LAB_MAPPING, tz="Europe/Berlin")
    return home


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> AnalysisResult:
    base = tmp_path_factory.mktemp("lab")
    home = import_lab(base, "lab", ["ana", "bo", "cy", "dee"], ["vA", "vB", "vC"])
    return run_analysis(home, "lab")


@pytest.fixture(scope="module")
def pai_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("pai")
    ingest("pai", write_pai_release(base / "release"), base / "home")
    return base / "home"


@pytest.fixture(scope="module")
def pai(pai_home: Path) -> AnalysisResult:
    return run_analysis(pai_home, "pai")


def test_sections_follow_the_modules_and_each_ran(lab: AnalysisResult) -> None:
    report = build_report(lab)
    assert [s.id for s in report.sections] == [m for m, _, _ in MODULE_SECTIONS]
    assert [s.title for s in report.sections][4] == "GPU sharing"
    for section in report.sections:
        assert section.ran == ["lab"] and section.not_run == []
        found = lab.module(section.id)
        assert [r.name for r in section.numbers] == [f.name for f in found.findings]
    assert report.kind == "trace" and not report.synthetic and report.trace_names == ["lab"]


def test_headline_is_the_overview_findings_with_units_and_definitions(lab: AnalysisResult) -> None:
    """The headline is the overview's findings that rest on enough jobs: on the lab's 30 jobs the
    counts and totals, not the quantiles and shares, which the overview section keeps, marked."""
    report = build_report(lab)
    findings = lab.module("overview").findings
    assert [(r.name, r.unit, r.definition) for r in report.headline] == [
        (f.name, f.unit, f.definition) for f in findings if f.headline]
    assert [r.name for r in report.headline] == ["jobs", "gpu_jobs", "gpu_hours"]
    jobs = next(r for r in report.headline if r.name == "jobs")
    assert jobs.cells[0].value == 30 and jobs.cells[0].display == "30 jobs"
    overview = next(s for s in report.sections if s.id.endswith("overview"))
    share = next(r for r in overview.numbers if r.unit == "fraction")
    finding = next(f for f in findings if f.name == share.name)
    assert share.cells[0].value == finding.value and share.cells[0].display == f"{finding.value * 100:.4g} %"
    assert finding.basis == 30 and share.cells[0].small_sample == "only 30: a small sample, not a headline"


def test_every_chart_says_what_it_shows_with_units_definitions_and_source(lab: AnalysisResult) -> None:
    report = build_report(lab)
    known = registry()
    assert len(report.charts) >= 12
    assert len({c.id for c in report.charts}) == len(report.charts)
    for chart in report.charts:
        assert chart.title and chart.x_title and chart.y_title, chart.id
        assert "(" in chart.x_title or chart.kind in ("bar", "stack", "time") or chart.x_categories, chart.title
        assert chart.definitions and all(d in known for d in chart.definitions), chart.id
        assert {d for s in chart.sources for d in s.definitions} >= set(chart.definitions[:1])
        assert chart.sources and all(s.file == f"{s.module}/{s.table}.parquet" for s in chart.sources)
        assert chart.query.startswith("SELECT ") and chart.sources[0].file in chart.query
        assert chart.series and all(len(s.x) == len(s.y) > 0 for s in chart.series)
        assert set(chart.definitions) <= set(report.definition_map)


def test_chart_queries_return_the_rows_drawn(lab: AnalysisResult, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    write_results(lab, tmp_path)
    monkeypatch.chdir(tmp_path)
    report = build_report(lab)
    for chart in report.charts:
        rows = duckdb.sql(chart.query).pl()
        assert rows.height >= chart.rows_behind, chart.id
        measures = [c for c in rows.columns if c in {"job_share", "p50_s", "share_of_started", "gpu_hours_share"}]
        if chart.kind in ("bar",) and len(chart.series) == 1 and measures:
            assert chart.series[0].y == rows[measures[0]].to_list(), chart.id
    by_bucket = next(c for c in report.charts if c.id == "chart-queueing-by-gpu-bucket")
    table = lab.module("queueing").table("by_gpu_bucket")
    assert by_bucket.series[0].x == table["gpu_bucket"].to_list()
    assert by_bucket.series[0].y == table["p50_s"].to_list()


def test_small_tables_are_shown_whole_with_exact_values(lab: AnalysisResult) -> None:
    report = build_report(lab)
    queueing = next(s for s in report.sections if s.id == "queueing")
    view = next(t for t in queueing.tables if t.name == "by_gpu_bucket")
    frame = lab.module("queueing").table("by_gpu_bucket")
    assert [c.name for c in view.columns] == frame.columns
    assert view.rows == [list(r) for r in frame.iter_rows()]
    assert {c.name: c.unit for c in view.columns}["p50_s"] == "s"
    listed = {t.table for s in report.sections for t in s.listed_tables}
    shown = {t.name for s in report.sections for t in s.tables}
    every = {t.name for m in lab.modules for t in m.tables}
    assert listed | shown == every and not listed & shown


def test_sections_carry_what_did_not_apply(lab: AnalysisResult) -> None:
    report = build_report(lab)
    for section in report.sections:
        expected = [(n.what, n.why) for n in lab.module(section.id).not_applicable]
        assert [(n.what, n.why) for n in section.not_applicable] == expected
    sharing = next(s for s in report.sections if s.id == "sharing")
    assert sharing.not_applicable and all(n.trace == "lab" for n in sharing.not_applicable)


def _big_result(rows: int) -> AnalysisResult:
    steps = pl.int_range(0, rows, eager=True)
    series = pl.DataFrame({
        "cluster": ["c1"] * rows,
        "bin_start": pl.datetime_range(pl.datetime(2024, 1, 1), pl.datetime(2024, 1, 1) + pl.duration(minutes=rows - 1),
                                       "1m", eager=True, time_zone="UTC"),
        "mean_gpus": (steps % 97).cast(pl.Float64),
        "capacity_gpus": [128.0] * rows,
    }).with_columns(pl.when(steps == rows // 3).then(5000.0).otherwise(pl.col("mean_gpus")).alias("mean_gpus"))
    cdf = pl.DataFrame({"probability": [i / (rows - 1) for i in range(rows)],
                        "gpu_util_pct": [100.0 * i / (rows - 1) for i in range(rows)], "instances": [rows] * rows})
    module = ModuleResult("utilization", tables=[
        ResultTable("allocation_by_cluster", series, ("utilization.allocated_gpus",), "a minute of one cluster"),
        ResultTable("pai_instance_gpu_util_cdf", cdf, ("utilization.pai_instance_gpu_util",), "a probability"),
    ])
    return AnalysisResult("big", False, {}, [module])


def test_long_series_are_thinned_for_drawing_and_tables_keep_every_row() -> None:
    rows = 50_000
    report = build_report(_big_result(rows))
    section = next(s for s in report.sections if s.id == "utilization")
    line = next(c for c in section.charts if c.id == "chart-utilization-allocation-by-cluster")
    allocated = line.series[0]
    assert allocated.rows == rows and allocated.drawn <= charts.MAX_LINE_POINTS
    assert max(allocated.y) == 5000.0 and min(allocated.y) == 0.0  # the peak and the floor survive
    assert line.series[1].drawn == 2  # a constant capacity is drawn by its two ends
    assert any("of 50,000" in note for note in line.notes)
    cdf = next(c for c in section.charts if c.id == "chart-utilization-pai-instance-gpu-util-cdf")
    assert cdf.series[0].rows == rows and cdf.series[0].drawn <= charts.MAX_CDF_POINTS
    assert cdf.series[0].x[0] == 0.0 and cdf.series[0].x[-1] == 100.0 and cdf.series[0].y[-1] == 1.0
    assert {t.table: t.rows for t in section.listed_tables} == {"allocation_by_cluster": rows,
                                                                 "pai_instance_gpu_util_cdf": rows}


def test_thinning_helpers() -> None:
    x = list(range(10_001))
    p = [i / 10_000 for i in x]
    tx, tp = charts.thin_cdf(x, p, 1000)
    assert len(tx) <= 1000 and (tx[0], tp[0], tx[-1], tp[-1]) == (0, 0.0, 10_000, 1.0)
    assert tx == sorted(tx)
    y = [math.sin(i / 50) for i in x]
    y[7777] = 9.0
    y[1234] = -9.0
    dx, dy = charts.min_max_decimate(x, y, 500)
    assert len(dx) <= 500 and 9.0 in dy and -9.0 in dy and dx == sorted(dx)
    assert charts.drop_flat_runs([0, 1, 2, 3, 4, 5], [1, 1, 1, 2, 2, 3]) == ([0, 2, 3, 4, 5], [1, 1, 2, 2, 3])
    assert charts.min_max_decimate([1, 2], [3, 4], 10) == ([1, 2], [3, 4])


def test_about_and_data_quality_come_from_the_catalog(pai: AnalysisResult, pai_home: Path) -> None:
    report = build_report(pai)
    manifest = read_registrations(pai_home)["pai"].manifest
    facts = report.traces[0]
    assert not facts.synthetic and facts.store_version == read_registrations(pai_home)["pai"].version
    recorded = {(t, f["sha256"]) for t, entry in manifest["inputs"].items() for f in entry["files"]}
    assert {(f.table, f.sha256) for f in facts.source_files} == recorded and len(recorded) == 7
    checks = [(c.table, c.check, c.rows, c.of_rows) for c in report.data_quality.checks]
    assert checks == [(c["table"], c["check"], c["rows"], c["of_rows"]) for c in manifest["validation"]]
    assert {t.table: t.rows for t in report.data_quality.inputs} == {k: v for k, v in manifest["rows"].items()}
    ids = {d["id"] for d in report.definitions}
    assert set(pai.definition_ids) <= ids
    assert all(d["text"] == registry()[d["id"]].text for d in report.definitions)


def test_modules_not_run_are_said_so(lab: AnalysisResult, tmp_path: Path) -> None:
    home = import_lab(tmp_path, "lab", ["a"], ["v"])
    result = run_analysis(home, "lab", ["queueing"])
    report = build_report(result)
    for section in report.sections:
        assert section.not_run == ([] if section.id == "queueing" else ["lab"])
        assert bool(section.numbers) == (section.id == "queueing")
    assert [r.name for r in report.headline] == [f.name for f in result.module("queueing").findings if f.headline]


def test_compare_aligns_numbers_by_definition_and_says_what_is_missing(lab: AnalysisResult,
                                                                       pai: AnalysisResult) -> None:
    report = build_compare_report([pai, lab])
    assert report.kind == "compare" and report.trace_names == ["pai", "lab"]
    assert [t.results_folder for t in report.traces] == ["pai", "lab"]
    for section in report.sections:
        for row in section.numbers:
            assert [c.trace for c in row.cells] == ["pai", "lab"]
            for cell, result in zip(row.cells, (pai, lab)):
                finding = next((f for f in result.module(section.id).findings
                                if (f.name, f.definition) == (row.name, row.definition)), None)
                if finding is None:
                    assert cell.value is None and cell.missing
                else:
                    assert cell.missing is None and cell.value == finding.value
    time_patterns = next(s for s in report.sections if s.id == "time_patterns")
    recurring = [r for r in time_patterns.numbers if r.definition == "time_patterns.recurring_job"]
    assert recurring and all(r.cells[0].missing is None and r.cells[1].missing for r in recurring)
    assert "see what did not apply" in recurring[0].cells[1].missing


def test_compare_charts_draw_one_series_per_trace(lab: AnalysisResult, pai: AnalysisResult) -> None:
    report = build_compare_report([pai, lab])
    waits = next(c for c in report.charts if c.id == "chart-queueing-waits-over-thresholds")
    assert [s.trace for s in waits.series] == ["pai", "lab"]
    assert [s.file for s in waits.sources] == ["pai/queueing/waits_over_thresholds.parquet",
                                               "lab/queueing/waits_over_thresholds.parquet"]
    expected = lab.module("queueing").table("waits_over_thresholds").filter(pl.col("gpu_bucket") == "all")
    assert waits.series[1].y == expected["share_of_started"].to_list()
    assert "WHERE gpu_bucket = 'all'" in waits.query and "read_parquet([" in waits.query
    recurring = next(c for c in report.charts if c.id == "chart-time-patterns-recurring-group-sizes")
    assert {s.trace for s in recurring.series} == {"pai"}  # lab has no recurring-job tag
    assert any("Not drawn for lab" in n for n in recurring.notes)


def test_compare_names_are_checked(tmp_path: Path) -> None:
    assert check_names(["pai-trace", "philly", "mine"]) == ["pai", "philly", "mine"]
    with pytest.raises(CompareError, match="two or more"):
        check_names(["pai"])
    with pytest.raises(CompareError, match="named twice"):
        check_names(["pai", "pai-trace"])
    with pytest.raises(CatalogError, match="no jobs of 'nosuch'"):
        home_with_jobs_or_sample(tmp_path / "home", "nosuch")


def test_report_document_is_plain_json(lab: AnalysisResult) -> None:
    document = build_report(lab).to_dict()
    text = json.dumps(document, allow_nan=False)
    again = json.loads(text)
    assert again["format"] == "ddlx-report/1" and again["synthetic"] is False and "label" not in again
    assert [s["id"] for s in again["sections"]] == [m for m, _, _ in MODULE_SECTIONS]
    assert again["headline"][0]["cells"][0]["value"] == 30


def test_a_traces_own_science_is_labelled_as_such(pai: AnalysisResult, lab: AnalysisResult) -> None:
    """Tables and numbers that only PAI's records allow carry "PAI only: ..." in the results, the
    report model and the rendered pages; the generic ones and the imported table's carry none."""
    queueing = pai.module("queueing")
    assert queueing.specific == {"pai_definitions": "PAI only: three readings of the queueing delay",
                                 "task_queue_delay_p50": "PAI only: three readings of the queueing delay"}
    assert pai.to_dict()["modules"]["queueing"]["trace_specific"] == queueing.specific
    assert all(not m.specific for m in lab.modules)
    report = build_report(pai)
    section = next(s for s in report.sections if s.id.endswith("queueing"))
    labels = {row.name: row.specific for row in section.numbers}
    assert labels["task_queue_delay_p50"] == "PAI only: three readings of the queueing delay"
    assert labels["queue_delay_p50_1gpu"] == ""
    views = {view.name: view.specific for view in section.tables}
    assert views["pai_definitions"] == "PAI only: three readings of the queueing delay"
    assert views["waits_over_thresholds"] == ""
    html = render_html(report)
    assert html.count("(PAI only: three readings of the queueing delay)") == 2
    assert "(PAI only: three readings of the queueing delay)" in render_markdown(report)


def test_offset_times_are_drawn_as_days_since_the_start(tmp_path: Path) -> None:
    """A dataset whose times are offsets from an undisclosed start (ITP-like seconds from 0) has
    its time charts in days from the first value drawn, not on a 1970 calendar; the allocation
    series has hourly bins, so its x values are multiples of 1/24 day."""
    (tmp_path / "c1.csv").write_text("job_id,submission_time,duration,num_gpu\na,0,7200,1\nb,90000,3600,2\n")
    import_dataset("offsets", tmp_path / "c1.csv", tmp_path / "home", preset="itp")
    result = run_analysis(tmp_path / "home", "offsets", ["utilization", "time_patterns"])
    assert result.wall_clock is False and result.to_dict()["wall_clock"] is False
    charts = {c.id: c for s in build_report(result).sections for c in s.charts if c.kind == "time"}
    allocation = charts["chart-utilization-allocation-by-cluster"]
    assert allocation.x_type is None and allocation.x_title.startswith("days since")
    xs = allocation.series[0].x
    assert xs[0] == 0 and all(x * 24 == pytest.approx(round(x * 24)) for x in xs) and max(xs) >= 1
    assert charts["chart-time-patterns-submissions-per-day"].series[0].x == [0.0, 1.0]
    assert any("offsets from an undisclosed start" in n for n in allocation.notes)


def test_pai_keeps_its_hours_and_weekdays_but_draws_no_calendar(pai: AnalysisResult) -> None:
    """PAI's seconds have an undisclosed origin: read in Asia/Shanghai its hours and weekdays hold
    (hour-of-week tables are there), its dates do not (time axes count days from the start)."""
    assert (pai.wall_clock, pai.calendar_dates) == (True, False)
    assert pai.to_dict()["calendar_dates"] is False
    assert pai.module("time_patterns").table("submissions_by_hour_of_week").height > 0
    charts = [c for s in build_report(pai).sections for c in s.charts if c.kind == "time"]
    assert charts
    for chart in charts:
        assert chart.x_type is None and chart.x_title.startswith("days since"), chart.id
        assert min(min(s.x) for s in chart.series) == 0, chart.id
        assert any("no calendar dates" in n for n in chart.notes), chart.id


def test_charts_fit_for_a_paper(lab: AnalysisResult) -> None:
    """Every CDF legend says how many values its curve rests on; bars never sit on a log axis;
    series differ in line style as well as colour; percent ticks never repeat; the camera button
    of every chart saves SVG."""
    report = build_report(lab)
    drawn = [c for s in report.sections for c in s.charts]
    cdf = next(c for c in drawn if c.id == "chart-queueing-cdf-by-gpu-bucket")
    table = lab.module("queueing").table("cdf_by_gpu_bucket")
    buckets = {shown: bucket for bucket, shown in BUCKET_NAMES.items()}
    for series in cdf.series:
        shown = series.name.split(" (n=")[0]
        count = table.filter(pl.col("gpu_bucket") == buckets[shown])["jobs_with_value"][0]
        assert series.name.startswith(f"{shown} (n={count:,})")
        assert series.name.endswith("faded") == (count < MIN_JOBS)
    assert all(not (c.kind in ("bar", "stack") and (c.x_log or c.y_log)) for c in drawn)
    assert all(len(c.series) <= 6 or c.kind in ("bar", "stack") for c in drawn)
    figure = charts.figure(cdf)
    styles = [trace["line"]["dash"] for trace in figure["data"]]
    assert len(set(styles)) == len(styles) > 1
    assert figure["layout"]["yaxis"]["tickformat"] == ".3~%"
    # Queueing delays in seconds on a log axis tick at durations a reader knows.
    assert cdf.x_seconds and cdf.x_log
    assert dict(zip(figure["layout"]["xaxis"]["tickvals"], figure["layout"]["xaxis"]["ticktext"]))[3600] == "1 h"
    assert charts.PLOT_CONFIG["toImageButtonOptions"]["format"] == "svg"


def test_category_labels_turn_upright_only_when_they_would_collide() -> None:
    from ddlx.reports.model import Chart, Series

    def bars(labels: list[str]) -> dict:
        series = [Series("share", "t", labels, [0.1] * len(labels), len(labels))]
        chart = Chart("c", "m", "bar", "title", "x", "y", [], series, [], "SELECT 1", "", x_categories=labels)
        return charts.figure(chart)["layout"]["xaxis"]

    assert "tickangle" not in bars(["pai / pai_machine_spec"])  # one long label has the whole width
    assert "tickangle" not in bars(["0", "(0,1)", "1", "(1,2]", "(2,4]", "(4,8]", ">8"])
    assert bars([f"cluster-{k} / vc-{k:03d}" for k in range(12)])["tickangle"] == -90


def test_more_than_six_groups_become_small_multiples(tmp_path: Path) -> None:
    """Eight VCs of 30 jobs: the queueing CDF per VC is split into two panels, the six VCs with
    most jobs first, then the other two; together they draw every VC once."""
    vcs = [f"v{k}" for k in range(8)]
    home = import_lab(tmp_path, "many", ["ana", "bo"], vcs)
    result = run_analysis(home, "many", ["queueing"])
    charts = {c.id: c for s in build_report(result).sections for c in s.charts}
    first, second = charts["chart-queueing-cdf-by-vc"], charts["chart-queueing-cdf-by-vc-2"]
    assert (first.panel, first.panels, second.panel, second.panels) == (1, 2, 2, 2)
    assert first.title.endswith("(1 of 2)") and second.title.endswith("(2 of 2)")
    assert (len(first.series), len(second.series)) == (6, 2)
    drawn = [s.name.split(" (n=")[0] for c in (first, second) for s in c.series]
    assert sorted(drawn) == [f"many / {vc}" for vc in vcs]
    # Jobs per VC: j0..j29 round-robin over 8 VCs -> v0..v5 have 4 jobs, v6 and v7 have 3.
    assert {s.name for s in second.series} == {"many / v6 (n=3)", "many / v7 (n=3)"}
    assert first.notes[0].startswith("Panel 1 of 2: groups (cluster, vc) ranked 1-6")


def _plotly_validated(figure: dict) -> dict:
    """`figure` built and checked by plotly's own figure objects, without their template."""
    import copy

    import plotly.graph_objects as go

    built = go.Figure(copy.deepcopy(figure)).to_plotly_json()  # go.Figure takes its input apart
    built["layout"].pop("template", None)
    return built


def test_figures_are_what_plotly_itself_builds(lab: AnalysisResult, pai: AnalysisResult) -> None:
    """The figures are written as plain traces and layout; plotly's figure objects, which check
    every property, make the same JSON of each chart of two reports and of hand-made charts that
    take every branch (bars, stacks, bands, dashes, categories, log and percent axes)."""
    from ddlx.reports.model import Chart, Series

    drawn = [c for result in (lab, pai) for c in build_report(result).charts]
    assert {c.kind for c in drawn} >= {"cdf", "bar", "time"}
    banded = Series("mean", "t", [1, 2, 3], [0.2, 0.5, 0.4], 3, dash=1, band_low=[0.1, 0.4, 0.3],
                    band_high=[0.3, 0.6, None])
    many = [Series(f"<b>s{k}</b>", "t", [1, 2], [k, k + 1], 2, colour=k) for k in range(9)]
    counted = Series("p50", "t", ["0", "1"], [0.0, 12.0], 2, colour=0, dash=2, n=[5, 400])
    counted_line = Series("p50", "t", [1, 2, 3], [3.0, 900.0, 4.0], 3, n=[100, 11, 100])
    labels = [f"cluster-{k} / vc-{k:03d}" for k in range(12)]
    drawn += [
        Chart("band", "m", "line", "t", "x", "y", [], [banded, many[0]], [], "SELECT 1", "", x_log=True,
              x_seconds=True, y_percent=True),
        Chart("many", "m", "cdf", "t", "x", "y", [], many, [], "SELECT 1", "", y_log=True, x_percent=True),
        Chart("stack", "m", "stack", "t", "x", "y", [], many[:3], [], "SELECT 1", "", x_categories=labels),
        Chart("dates", "m", "time", "t", "x", "y", [], many[:2], [], "SELECT 1", "", x_type="date"),
        Chart("dots", "m", "dots", "t", "x", "y", [], [counted], [], "SELECT 1", "", y_log=True, y_seconds=True,
              x_categories=["0", "(0,1)", "1"], x_labels={"0": "0 (CPU)", "(0,1)": "<1", "1": "1"}, min_n=30),
        Chart("counted", "m", "bar", "t", "x", "y", [], [counted, many[1]], [], "SELECT 1", "", min_n=30,
              x_categories=["0", "(0,1)", "1"]),
        Chart("faded", "m", "line", "t", "x", "y", [], [counted_line], [], "SELECT 1", "", min_n=30),
    ]
    for chart in drawn:
        figure = charts.figure(chart)
        assert json.loads(charts.script_json(figure)) == json.loads(charts.script_json(_plotly_validated(figure))), \
            chart.id
