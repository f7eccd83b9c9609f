"""The chart specifications (`ddlx.reports.chart_specs.chart_specs()`) against what the analysis
modules produce: a spec naming a (module, table) that no module writes would never draw, silently.

Data: the SYNTHETIC sample of every registered trace (`ensure_sample`, small scale), and a small
SYNTHETIC cluster with GPU telemetry (`ddlx datasets synth-cluster`), analysed once for the module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ddlx.analysis.model import AnalysisResult
from ddlx.analysis.runner import run_analysis
from ddlx.analysis.sql import GPU_BUCKET_ORDER
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.plugins import TRACES
from ddlx.datasets.synthetic import ensure_sample
from ddlx.datasets.telemetry.generator import ClusterSpec, write_synthetic_cluster
from ddlx.datasets.telemetry.importer import import_metrics
from ddlx.reports.chart_specs import BUCKET_SLUGS, MIN_JOBS, chart_specs
from ddlx.reports.charts import figure
from ddlx.reports.compare import build_compare_report
from ddlx.reports.model import Chart, Report
from ddlx.reports.report import build_report

#: Analysing every trace's sample once for the module takes minutes.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def analyses(tmp_path_factory: pytest.TempPathFactory) -> dict[str, AnalysisResult]:
    """The analysis of each SYNTHETIC sample, and of a SYNTHETIC cluster with GPU telemetry."""
    home: Path = tmp_path_factory.mktemp("chart-specs-home")
    results = {trace: run_analysis(ensure_sample(home, trace), trace) for trace in TRACES}
    write_synthetic_cluster(ClusterSpec(gpus=8, days=1, step=300, seed=1), home / "cluster")
    import_dataset("cluster", home / "cluster" / "sacct.txt", home / "telemetry-home", preset="slurm",
                   tz="Europe/Berlin")
    import_metrics(home / "telemetry-home", "cluster", home / "cluster" / "dcgm.om")
    results["cluster"] = run_analysis(home / "telemetry-home", "cluster")
    return results


@pytest.fixture(scope="module")
def produced(analyses: dict[str, AnalysisResult]) -> dict[str, set[tuple[str, str]]]:
    """(module, table) of every result table, per trace."""
    return {name: {(module.module, table.name) for module in result.modules for table in module.tables}
            for name, result in analyses.items()}


@pytest.fixture(scope="module")
def reports(analyses: dict[str, AnalysisResult]) -> list[Report]:
    """Every report the samples give: one per trace and dataset, and all traces side by side."""
    return [build_report(result) for result in analyses.values()] + [
        build_compare_report([analyses[trace] for trace in TRACES])]


def drawn_styles(chart: Chart) -> list[tuple[Any, ...]]:
    """What tells each legend entry of a drawn chart apart: trace type, colour, line style, marker
    symbol and fill pattern, read from the plotly figure itself."""
    styles = []
    for trace in figure(chart)["data"]:
        if trace.get("showlegend", True) is False:
            continue  # a band's edges, a faded point's marks: part of a series with its own entry
        marker, line = trace.get("marker", {}), trace.get("line", {})
        styles.append((trace["type"], marker.get("color", line.get("color")),
                       line.get("dash") if trace["type"] == "scatter" and "lines" in trace.get("mode", "") else None,
                       marker.get("symbol") if "markers" in trace.get("mode", "") else None,
                       (marker.get("pattern") or {}).get("shape", "")))
    return styles


def test_no_two_series_of_any_chart_look_alike(reports: list[Report]) -> None:
    checked = collisions = 0
    for report in reports:
        for chart in report.charts:
            styles = drawn_styles(chart)
            checked += 1
            if len(styles) != len(set(styles)):
                collisions += 1
                print(report.title, chart.id, styles)
    print(f"{checked} charts checked, {collisions} with two series alike")
    assert checked >= 150 and collisions == 0


def test_gpu_buckets_are_drawn_in_their_natural_order(reports: list[Report]) -> None:
    """Every chart whose x categories are GPU buckets lists them by size (all jobs, then CPU only,
    then the fraction of one GPU, 1, 1-2, ...), whatever order the traces gave them in; a panel per
    bucket follows the same order."""
    order = ["all", *GPU_BUCKET_ORDER]
    charts = [c for r in reports for c in r.charts if c.x_categories and set(c.x_categories) <= set(order)
              and len(c.x_categories) > 2]
    assert len(charts) >= 10
    for chart in charts:
        assert chart.x_categories == sorted(chart.x_categories, key=order.index), (chart.id, chart.x_categories)
        assert "(0,1)" not in chart.x_categories or chart.x_labels["(0,1)"] == "<1"
    compare = reports[-1]
    panels = [c.id.removeprefix("chart-queueing-cdf-by-gpu-bucket-") for c in compare.charts
              if c.id.startswith("chart-queueing-cdf-by-gpu-bucket-")]
    slugs = [BUCKET_SLUGS[b] for b in order if b in BUCKET_SLUGS]
    assert len(panels) >= 5 and panels == [slug for slug in slugs if slug in panels]


def test_every_bar_and_point_carries_its_n(reports: list[Report], analyses: dict[str, AnalysisResult]) -> None:
    """A chart of a table with a count column gives each bar or point the count of its row (its
    n), read here from the table itself; a statistic of fewer than `MIN_JOBS` jobs is faded."""
    compare = reports[-1]
    chart = next(c for c in compare.charts if c.id == "chart-queueing-by-gpu-bucket")
    assert chart.kind == "dots" and chart.y_log and chart.min_n == MIN_JOBS
    drawn = figure(chart)["data"]
    for series in chart.series:
        table = analyses[series.trace].module("queueing").table("by_gpu_bucket")
        expected = dict(zip(table["gpu_bucket"], table["jobs_with_value"]))
        assert series.n == [expected[x] for x in series.x]
        trace = next(t for t in drawn if t["name"] == series.name)
        faded = [opacity < 1 for opacity in trace["marker"]["opacity"]]
        assert faded == [n < MIN_JOBS for n in series.n]
        assert all(f"n = {n:,}" in text for n, text in zip(series.n, trace["hovertext"]))
    bars = [c for r in reports for c in r.charts if c.kind == "bar" and any(s.n for s in c.series)]
    assert bars
    for chart in bars:
        for trace, series in zip([t for t in figure(chart)["data"] if t["type"] == "bar"], chart.series):
            assert trace["text"] == [("0, " if y == 0 else "") + f"n={n:,}" for y, n in zip(series.y, series.n)]


def test_every_trace_produces_tables(produced: dict[str, set[tuple[str, str]]]) -> None:
    assert set(produced) == {*TRACES, "cluster"}
    for trace, tables in produced.items():
        assert ("overview", "state_mix") in tables, trace


def test_every_chart_spec_names_a_produced_table(produced: dict[str, set[tuple[str, str]]]) -> None:
    union = set().union(*produced.values())
    missing = sorted({(spec.module, spec.table) for spec in chart_specs()} - union)
    assert not missing, f"chart specs for tables no analysis module produces on any trace: {missing}"


def test_chart_keys_are_unique() -> None:
    keys = [spec.chart_key for spec in chart_specs()]
    assert len(keys) == len(set(keys))


def test_no_bar_sits_on_a_log_axis_and_no_panel_draws_more_than_six_series() -> None:
    """A bar's length means nothing on a log axis; more than six series in one panel cannot be
    told apart in print."""
    assert not [s.chart_key for s in chart_specs() if s.kind in ("bar", "stack") and (s.x_log or s.y_log)]
    assert not [s.chart_key for s in chart_specs() if s.max_series > 6]
