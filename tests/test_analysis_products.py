"""The run's products (`CatalogConnection.product`): what several modules read (the allocation steps, read
by utilization and by queueing's load at submission) is declared by its query and made when first
read, whichever module and connection that is, its fast rows computed once for the run. Modules do
not depend on the order they run in, nor on which connection runs them."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import polars as pl
import pytest

from ddlx.analysis import allocation, runner
from ddlx.analysis.context import open_trace
from ddlx.analysis.fast import steps as fast_steps
from ddlx.analysis.runner import run_analysis
from tests.conftest import generated_pai_home
from tests.test_analysis_cache import assert_same_results

pytestmark = pytest.mark.usefixtures("duckdb_on_one_thread")


@pytest.fixture(scope="module")
def generated_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generated_pai_home(tmp_path_factory, "products", seed=11)


def _counting_sums(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the rows of every set of changes whose steps are summed in memory."""
    summed: list[int] = []
    summed_in_memory = fast_steps.summed
    monkeypatch.setattr(fast_steps, "summed", lambda changes, *args: summed.append(changes.num_rows)
                        or summed_in_memory(changes, *args))
    return summed


def test_queueing_alone_and_after_utilization_gives_the_same_results(generated_home: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    alone = run_analysis(generated_home, "pai", ["queueing"], cache=False)
    monkeypatch.setattr(runner, "CONCURRENT_MAX_JOBS", 0)  # one connection, utilization first
    after = run_analysis(generated_home, "pai", ["utilization", "queueing"], cache=False)
    assert [m.module for m in after.modules] == ["utilization", "queueing"]
    queueing = after.modules[1]
    assert [t.name for t in queueing.tables] == [t.name for t in alone.modules[0].tables]
    for table, other in zip(queueing.tables, alone.modules[0].tables):
        assert table.frame.equals(other.frame) and table.frame.schema == other.frame.schema, table.name
    assert [f.value for f in queueing.findings] == [f.value for f in alone.modules[0].findings]
    load = {t.name: t.frame for t in queueing.tables}["by_load_at_submit"]
    assert load.filter(pl.col("reference") == "peak_allocation")["jobs"].sum() > 100


@pytest.mark.usefixtures("speedups_on")  # fast rows, computed once
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the modules run on two connections on two cores or more")
def test_the_steps_are_summed_once_for_a_run_on_two_connections(generated_home: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """utilization and queueing at once on two connections: each set of steps is summed once, and
    the results are those of one connection, one module after the other."""
    with monkeypatch.context() as patch:
        patch.setattr(runner, "CONCURRENT_MAX_JOBS", 0)
        one_after_the_other = run_analysis(generated_home, "pai", ["utilization", "queueing"], cache=False)
    summed = _counting_sums(monkeypatch)
    threads: dict[str, str] = {}
    both = run_analysis(generated_home, "pai", ["utilization", "queueing"], cache=False,
                        progress=lambda m: threads.setdefault(m.split(": ")[1], threading.current_thread().name))
    # the first connection takes utilization, the second queueing, the longest parts, at once
    assert threads["utilization"] != threads["queueing"]
    # PAI leaves out its started jobs without an end: the steps per cluster both ways, and over all
    # clusters its one cluster's (no sums of their own): two sets of changes, each summed once
    assert len(summed) == 2
    assert_same_results(both, one_after_the_other)


@pytest.mark.usefixtures("speedups_on")  # fast rows, computed once
def test_a_product_declared_on_two_connections_is_computed_once_and_read_on_both(generated_home: Path) -> None:
    calls: list[str] = []
    with open_trace(generated_home, "pai", cache=False) as ctx, ctx.second_connection() as other:
        names, found = [], []
        for on in (ctx, other):
            window = allocation.trace_window(on)
            assert window is not None
            sql = allocation.integrable_steps_sql(on, ("cluster",), window)

            def fast(on=on, sql=sql):
                calls.append(threading.current_thread().name)
                return on.arrow(sql)

            names.append(on.catalog.product(sql, "test_steps", fast))
            found.append(on.query(f"SELECT * FROM {names[-1]} ORDER BY cluster, x"))
        defined = ctx.query(f"SELECT * FROM ({sql}) ORDER BY cluster, x")
    assert names[0] == names[1] and calls == [threading.current_thread().name]
    assert found[0].equals(found[1]) and found[0].equals(defined) and defined.height > 100
