"""Intermediate results kept between analyses (`ddlx.analysis.cache`): a run that reads them gives
exactly what a run computing them gives; they are never read for other data or other code; a kept
result that cannot be written or read is computed, and the analysis goes on."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import polars as pl
import pytest

from ddlx.analysis.cache import _source_files, analysis_cache_folder, source_fingerprint
from ddlx.analysis.context import open_trace
from ddlx.analysis.model import AnalysisResult
from ddlx.analysis.runner import run_analysis
from ddlx.datasets.ingest import ingest
from ddlx.reports.results import write_results
from ddlx.traces.pai.generator import generate as generate_pai
from tests.conftest import generated_pai_home, write_pai_release

#: A small generated PAI release: every table, so every kept result of PAI is made.
SCALE = 0.004


pytestmark = pytest.mark.usefixtures("duckdb_on_one_thread", "speedups_on")  # a speed-up under test
#: Not run on the plain path too (`tests/conftest.py`): the kept results are the speed-up under test.
BOTH_PATHS = False


@pytest.fixture(scope="module")
def generated_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generated_pai_home(tmp_path_factory, "kept", seed=5, scale=SCALE)


@pytest.fixture
def small_home(tmp_path: Path) -> Path:
    ingest("pai", write_pai_release(tmp_path / "release"), tmp_path / "home")
    return tmp_path / "home"


def _outputs(result: AnalysisResult) -> tuple[dict[str, pl.DataFrame], list[dict]]:
    """Every table (by module and name) and every finding of a run."""
    tables = {f"{m.module}/{table.name}": table.frame for m in result.modules for table in m.tables}
    findings = [dataclasses.asdict(finding) for m in result.modules for finding in m.findings]
    return tables, findings


def assert_same_results(a: AnalysisResult, b: AnalysisResult) -> None:
    tables_a, findings_a = _outputs(a)
    tables_b, findings_b = _outputs(b)
    assert tables_a.keys() == tables_b.keys()
    for name, frame in tables_a.items():
        assert frame.equals(tables_b[name]) and frame.schema == tables_b[name].schema, name
    assert findings_a == findings_b


def _kept_files(result: AnalysisResult) -> list[Path]:
    """The files of the kept results of the run `result` (those of its store version)."""
    folder = Path(result.provenance["kept_results"]["folder"])
    return sorted(p for p in folder.rglob("*") if p.is_file())


def test_a_run_reading_kept_results_gives_exactly_what_computing_them_gives(generated_home: Path) -> None:
    first = run_analysis(generated_home, "pai")
    made = first.provenance["kept_results"]
    assert made["read"] == 0 and made["kept"] >= 10  # the sweeps, joins and allocation steps of PAI
    assert len({p.name.split("-")[0] for p in _kept_files(first)}) >= 8
    assert not (generated_home / ".cache").exists() and Path(made["folder"]).is_relative_to(analysis_cache_folder())
    second = run_analysis(generated_home, "pai")
    assert second.provenance["kept_results"] == {"folder": made["folder"], "read": made["kept"], "refused": 0,
                                                  "kept": 0}
    assert_same_results(first, second)
    computed = run_analysis(generated_home, "pai", cache=False)
    assert computed.provenance["kept_results"] == {"folder": None, "read": 0, "refused": 0, "kept": 0}
    assert_same_results(second, computed)


@pytest.mark.slow
def test_a_new_store_version_never_reads_the_old_ones_results(tmp_path: Path) -> None:
    home = tmp_path / "home"
    generate_pai(tmp_path / "a", scale=SCALE, seed=1)
    generate_pai(tmp_path / "b", scale=SCALE, seed=2)
    ingest("pai", tmp_path / "a", home)
    first = run_analysis(home, "pai")
    old_folder = Path(first.provenance["kept_results"]["folder"])
    ingest("pai", tmp_path / "b", home)  # another release: a new store version
    second = run_analysis(home, "pai")
    kept = second.provenance["kept_results"]
    assert kept["read"] == 0 and kept["kept"] == first.provenance["kept_results"]["kept"]
    assert not old_folder.parent.exists()  # the old version's results went with the first write
    assert Path(kept["folder"]).is_dir()
    computed = run_analysis(home, "pai", cache=False)
    assert_same_results(second, computed)
    colocation = [f"{m.module}/{t.name}" for m in second.modules for t in m.tables if "colocation" in t.name]
    assert colocation  # and the data differ, so reading the old results would have shown
    assert not _outputs(first)[0][colocation[0]].equals(_outputs(second)[0][colocation[0]])


def test_damaged_kept_results_are_computed_again(small_home: Path) -> None:
    first = run_analysis(small_home, "pai")
    files = [p for p in _kept_files(first) if p.suffix == ".parquet"]
    assert files
    for path in files:
        path.write_bytes(b"PAR1 not really")
    again = run_analysis(small_home, "pai")
    assert again.provenance["kept_results"]["read"] == 0
    assert again.provenance["kept_results"]["kept"] == first.provenance["kept_results"]["kept"]
    assert_same_results(first, again)
    assert run_analysis(small_home, "pai").provenance["kept_results"]["read"] == again.provenance[
        "kept_results"]["kept"]  # replaced by good ones


def test_no_cache_neither_reads_nor_writes(small_home: Path, cli, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDLX_CACHE_DIR", str(tmp_path / "cache"))
    result = cli("analyze", "pai-trace", "--no-cache", "--data-home", small_home, "--out", tmp_path / "out")
    assert result.code == 0, result.err
    assert not (tmp_path / "cache").exists()
    assert "intermediate results: all computed in this run" in (tmp_path / "out" / "report.md").read_text()
    result = cli("analyze", "pai-trace", "--data-home", small_home, "--out", tmp_path / "out")
    assert result.code == 0, result.err
    assert list((tmp_path / "cache").rglob("*.parquet"))


def test_a_failed_run_keeps_nothing(small_home: Path, cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDLX_CACHE_DIR", str(tmp_path / "cache"))
    from ddlx.analysis import users

    def broken(ctx):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(users, "analyze", broken)  # users runs after the modules that keep results
    with pytest.raises(OSError):
        run_analysis(small_home, "pai")
    assert not (tmp_path / "cache").exists()


def test_a_cache_that_cannot_be_written_is_no_cache(small_home: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("a file where the cache folder would go")
    monkeypatch.setenv("DDLX_CACHE_DIR", str(tmp_path / "file"))
    result = run_analysis(small_home, "pai")
    assert result.provenance["kept_results"] == {"folder": None, "read": 0, "refused": 0, "kept": 0}
    assert_same_results(result, run_analysis(small_home, "pai", cache=False))


def test_the_report_says_what_was_read_and_kept(small_home: Path, tmp_path: Path) -> None:
    first = run_analysis(small_home, "pai")
    second = run_analysis(small_home, "pai")
    write_results(second, tmp_path / "out", with_report=True)
    text = (tmp_path / "out" / "report.md").read_text()
    count = first.provenance["kept_results"]["kept"]
    assert f"intermediate results: {count} read from earlier runs on this store version, 0 computed" in text


def test_a_kept_query_may_read_only_the_catalog(small_home: Path) -> None:
    with open_trace(small_home, "pai") as ctx:
        ctx.execute("CREATE TEMP TABLE my_steps AS SELECT 1 AS x")
        with pytest.raises(ValueError, match="cannot read my_steps"):
            ctx.query("SELECT * FROM my_steps", keep="mine")
        with pytest.raises(ValueError, match="cannot read gpu_samples"):
            ctx.query("SELECT * FROM gpu_samples", keep="mine")
        assert ctx.query("SELECT count(*) AS n FROM pai_job_table", keep="jobs")["n"].to_list() == [5]


def test_the_code_fingerprint_covers_every_source_file_and_changes_with_one(tmp_path: Path) -> None:
    import ddlx

    names = {str(p.relative_to(Path(ddlx.__file__).parent)) for p in _source_files(Path(ddlx.__file__).parent)}
    assert {"analysis/cache.py", "analysis/allocation.py", "traces/pai/analyses.py"} <= names
    assert not any(name.startswith(("tests/", "benchmarks/", ".")) for name in names)
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "not_a_package").mkdir()
    for path in (package / "__init__.py", package / "sub" / "__init__.py", package / "sub" / "code.py"):
        path.write_text("x = 1\n")
    (package / "not_a_package" / "script.py").write_text("x = 1\n")
    before = source_fingerprint(package)
    (package / "not_a_package" / "script.py").write_text("x = 2\n")
    assert source_fingerprint(package) == before  # not part of the package
    (package / "sub" / "code.py").write_text("x = 2\n")
    assert source_fingerprint(package) != before


def test_small_results_of_catalog_queries_are_kept_under_their_text(small_home: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A query of the catalog alone is kept and read back by its text; one that reads the run's own
    tables or frames, one with a large result, and one run while a kept result is being computed
    are computed every time."""
    from ddlx.analysis import cache

    monkeypatch.setattr(cache, "SMALL_RESULT_ROWS", 3)
    catalog_only = "SELECT job_name, status FROM pai_job_table ORDER BY job_name LIMIT 3"
    large = "SELECT job_name FROM pai_job_table ORDER BY job_name"  # 5 rows
    run_tables = "SELECT * FROM my_numbers"
    nested = "SELECT count(*) AS n FROM pai_task_table"
    ran: list[str] = []

    def opened(number: int):
        ctx = open_trace(small_home, "pai")
        run = ctx.catalog._run
        monkeypatch.setattr(ctx.catalog, "_run", lambda sql: ran.append(sql) or run(sql))
        ctx.execute(f"CREATE TEMP TABLE my_numbers AS SELECT {number} AS x")
        return ctx

    with opened(1) as ctx:
        first = ctx.query(catalog_only)
        assert ctx.query(catalog_only).equals(first)  # asked again this run: not run again
        assert ctx.query(large).height == 5 and ctx.query(run_tables)["x"].to_list() == [1]
        ctx.kept.once("outer", lambda: ctx.query(nested), keep=True)
    assert ran == [catalog_only, large, run_tables, nested]
    ran.clear()
    with opened(2) as ctx:
        assert ctx.query(catalog_only).equals(first) and ctx.kept.cache.read == 1
        assert ctx.query(large).height == 5
        assert ctx.query(run_tables)["x"].to_list() == [2]  # the run's own table, never a kept copy
        assert ctx.query(nested)["n"].to_list() == [ctx.con.execute(nested).fetchall()[0][0]]
    assert ran == [large, run_tables, nested]
    ran.clear()
    with open_trace(small_home, "pai", cache=False) as ctx:
        run = ctx.catalog._run
        monkeypatch.setattr(ctx.catalog, "_run", lambda sql: ran.append(sql) or run(sql))
        assert ctx.query(catalog_only).equals(first)
    assert ran == [catalog_only]


def test_a_materialized_catalog_query_is_made_only_when_a_result_of_it_is_not_kept(small_home: Path) -> None:
    """Results read from a table of a catalog query are kept under their text and that query's: the
    next run reads them without making the table; another query behind the same name is another
    result."""
    tasks = "SELECT job_name, count(*) AS n FROM pai_task_table GROUP BY job_name"
    read = "SELECT sum(n) AS n FROM my_tasks"

    def made(ctx) -> bool:
        tables = ctx.con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'my_tasks'").fetchall()
        return bool(tables[0][0])

    with open_trace(small_home, "pai") as ctx:
        with ctx.materialized(tasks, "my_tasks") as name:
            assert not made(ctx)
            first = ctx.query(read.replace("my_tasks", name))
            assert made(ctx)
        assert not made(ctx)  # dropped with the block
        ctx.execute("CREATE TEMP TABLE scratch AS SELECT 1 AS n")
        with pytest.raises(ValueError, match="must read only the catalog"), ctx.materialized(
                "SELECT * FROM scratch", "other"):
            pass
    with open_trace(small_home, "pai") as ctx:
        with ctx.materialized(tasks, "my_tasks"):
            assert ctx.query(read).equals(first) and ctx.kept.cache.read == 1
            assert not made(ctx)  # every result of it was kept
        with ctx.materialized(tasks + " HAVING count(*) > 1", "my_tasks"):
            assert ctx.query(read)["n"].to_list() == [
                ctx.con.execute(f"SELECT sum(n) FROM ({tasks} HAVING count(*) > 1)").fetchall()[0][0]]
            assert made(ctx)
