"""The chart specifications (`ddlx.reports.chart_specs.chart_specs()`) against what the analysis
modules produce: a spec naming a (module, table) that no module writes would never draw, silently.

Data: the SYNTHETIC sample of every registered trace (`ensure_sample`, small scale), and a small
SYNTHETIC cluster with GPU telemetry (`ddlx datasets synth-cluster`), analysed once for the module.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ddlx.analysis.runner import run_analysis
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.synthetic import ensure_sample
from ddlx.datasets.telemetry.generator import ClusterSpec, write_synthetic_cluster
from ddlx.datasets.telemetry.importer import import_metrics
from ddlx.datasets.traces import TRACES
from ddlx.reports.chart_specs import chart_specs


@pytest.fixture(scope="module")
def produced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[tuple[str, str]]]:
    """(module, table) of every result table, per trace, from the analysis of each SYNTHETIC sample."""
    home: Path = tmp_path_factory.mktemp("chart-specs-home")
    tables = {}
    for trace in TRACES:
        result = run_analysis(ensure_sample(home, trace), trace)
        tables[trace] = {(module.module, table.name) for module in result.modules for table in module.tables}
    write_synthetic_cluster(ClusterSpec(gpus=8, days=1, step=300, seed=1), home / "cluster")
    import_dataset("cluster", home / "cluster" / "sacct.txt", home / "telemetry-home", preset="slurm",
                   tz="Europe/Berlin")
    import_metrics(home / "telemetry-home", "cluster", home / "cluster" / "dcgm.om")
    result = run_analysis(home / "telemetry-home", "cluster")
    tables["cluster"] = {(module.module, table.name) for module in result.modules for table in module.tables}
    return tables


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
