"""The analysis framework: module selection, definitions registry, results folder, CLI rendering.

The jobs below are imported from a CSV the test writes; expected numbers are derived by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from ddlx.analysis import definitions
from ddlx.analysis.definitions import Definition, registry
from ddlx.analysis.model import AnalysisResult, ModuleResult
from ddlx.analysis.modules import MODULES, load
from ddlx.analysis.runner import UnknownModuleError, resolve_modules, run_analysis
from ddlx.datasets.plugins import DEFINING_PARTS, format_plugins, trace_plugins
from ddlx.errors import DdlxError, StorageError
from ddlx.reports.results import write_results
from tests.conftest import assert_clean_failure

#: Four jobs (times in UTC): queue delays 0, 60, 600 s and one never started; run times 100, 200, 300 s.
JOBS_CSV = """job,owner,submitted,started,ended,gpus,outcome
a,u1,2024-01-01 00:00:00,2024-01-01 00:00:00,2024-01-01 00:01:40,1,COMPLETED
b,u1,2024-01-01 00:00:00,2024-01-01 00:01:00,2024-01-01 00:04:20,2,FAILED
c,u2,2024-01-01 00:00:00,2024-01-01 00:10:00,2024-01-01 00:15:00,0,COMPLETED
d,u2,2024-01-01 00:00:00,,,4,CANCELLED
"""
MAPPING = "job_id=job,user=owner,submit=submitted,start=started,end=ended,gpus=gpus,state=outcome"


@pytest.fixture
def imported(cli, tmp_path: Path) -> Path:
    source = tmp_path / "jobs.csv"
    source.write_text(JOBS_CSV)
    home = tmp_path / "home"
    result = cli("datasets", "import", "small", "--from", source, "--map", MAPPING, "--time-unit", "datetime",
                 "--data-home", home)
    assert result.code == 0, result.err
    return home


def test_module_selection_keeps_run_order_and_refuses_unknown_names() -> None:
    assert resolve_modules(None) == list(MODULES)
    assert resolve_modules(["failures", "overview"]) == ["overview", "failures"]
    with pytest.raises(UnknownModuleError, match="unknown analysis module 'speed'"):
        resolve_modules(["speed"])


def test_every_module_declares_definitions_once() -> None:
    ids = [d.id for name in MODULES for d in load(name).DEFINITIONS] + [d.id for d in definitions.CORE_DEFINITIONS]
    ids += [d.id for d in definitions.STATISTICS_DEFINITIONS + definitions.ENGINE_DEFINITIONS]
    ids += [d.id for plugin in format_plugins() for d in plugin.definitions]
    ids += [d.id for part in DEFINING_PARTS for plugin in trace_plugins() for d in plugin.definitions(part)]
    assert len(ids) == len(set(ids)) == len(registry())
    for definition in registry().values():
        assert definition.title and definition.unit and len(definition.text) > 40, definition.id


def test_a_definition_declared_twice_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    twice = Definition("runtime.first_start_to_last_end", "Run time", "s", "declared a second time")
    monkeypatch.setattr(definitions, "CORE_DEFINITIONS", definitions.CORE_DEFINITIONS + (twice,))
    registry.cache_clear()
    try:
        with pytest.raises(DdlxError, match="declared twice"):
            registry()
    finally:
        monkeypatch.undo()
        registry.cache_clear()


def test_an_unknown_definition_id_is_a_programming_error() -> None:
    with pytest.raises(DdlxError, match="unknown metric definition"):
        ModuleResult("overview").add_finding("x", "x", 1, "jobs", "no.such.definition", "all jobs")


def test_overview_of_an_imported_dataset(imported: Path) -> None:
    overview = run_analysis(imported, "small", ["overview"]).module("overview")
    value = {f.name: f.value for f in overview.findings}
    assert value["jobs"] == 4 and value["gpu_jobs"] == 3  # a, b, d ask for GPUs; c for none
    assert value["queue_delay_p50"] == 60  # started jobs wait 0, 60, 600 s
    assert value["run_time_p50"] == 200  # 100, 200, 300 s
    assert value["gpu_hours"] == pytest.approx((1 * 100 + 2 * 200 + 0 * 300) / 3600)
    states = dict(zip(overview.table("state_mix")["state"], overview.table("state_mix")["jobs"]))
    assert states == {"completed": 2, "failed": 1, "cancelled": 1}


def test_analyze_dataset_writes_every_table_and_the_definitions(cli, imported: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    result = cli("analyze", "dataset", "small", "--module", "overview", "--out", out, "--data-home", imported)
    assert result.code == 0, result.err
    assert "SYNTHETIC" not in result.out
    lines = [line for line in result.out.splitlines() if line.endswith("[queue_delay.submit_to_first_start]")]
    assert any(line.split()[:3] == ["median", "queueing", "delay"] and "60 s" in line for line in lines), lines
    # A quantile over this handful of jobs is printed, with the note that it is no headline.
    after = result.out.splitlines()[result.out.splitlines().index(lines[0]) + 1]
    assert after.strip().startswith("(only ") and after.strip().endswith("a small sample, not a headline)")
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["modules"]) == ["overview"]
    tables = summary["modules"]["overview"]["tables"]
    assert tables["state_mix"]["file"] == "overview/state_mix.parquet" and tables["state_mix"]["rows"] == 3
    assert {d["id"] for d in summary["definitions"]} >= {"state.canonical", "gpu_request.bucket"}
    frame = pl.read_parquet(out / "overview" / "gpu_request_mix.parquet")
    assert dict(zip(frame["gpu_bucket"], frame["jobs"])) == {"0": 1, "1": 1, "(1,2]": 1, "(2,4]": 1}
    assert frame["trace"].unique().to_list() == ["small"] and not frame["synthetic"].any()
    findings = pl.read_parquet(out / "summary.parquet")
    assert findings.filter(pl.col("name") == "jobs")["value"].item() == 4


def test_a_module_list_with_commas_and_an_unknown_module(cli, imported: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    result = cli("analyze", "dataset", "small", "-m", "overview,nosuch", "--out", out, "--data-home", imported)
    assert_clean_failure(result, "unknown analysis module 'nosuch'", "expected one of: overview", code=2)
    assert not out.exists()


def test_a_dataset_that_is_not_in_the_catalog(cli, imported: Path, tmp_path: Path) -> None:
    result = cli("analyze", "dataset", "other", "--out", tmp_path / "r", "--data-home", imported)
    assert_clean_failure(result, "no jobs of trace 'other'")


def test_results_are_replaced_whole_and_a_failed_write_leaves_the_old_ones(imported: Path, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "results"
    first = run_analysis(imported, "small", ["overview"])
    write_results(first, out)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (out / "overview" / "stale.parquet").write_bytes(b"old")
    broken = AnalysisResult(first.trace, first.synthetic, first.provenance, first.modules)

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", fail)
    with pytest.raises(StorageError, match="disk full while writing the results"):
        write_results(broken, out)
    monkeypatch.undo()
    assert all(p.read_bytes() == content for p, content in before.items())
    assert not list(tmp_path.glob(".results.tmp-*"))
    write_results(first, out)
    assert not (out / "overview" / "stale.parquet").exists()  # a module's folder is replaced whole


def test_the_user_documentation_gives_every_definition_and_module() -> None:
    text = (Path(__file__).parent.parent / "docs" / "analysis.md").read_text()
    for definition in registry().values():
        if definition.id.startswith("paper."):
            continue  # a paper's own definitions are in docs/reproduce.md (tests/test_reproduce.py)
        assert f"- **`{definition.id}`** ({definition.title}; {definition.unit}): {definition.text}" in text, \
            definition.id
    for name in MODULES:
        assert f"| `{name}` |" in text, name
