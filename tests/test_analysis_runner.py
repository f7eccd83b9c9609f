"""The analysis modules on two connections at once (`ddlx.analysis.runner`): the same results as
one after the other, and a failure on either connection stops both and is raised as it was."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import duckdb
import pytest

from ddlx.analysis import overview, runner, utilization
from ddlx.analysis.context import TraceContext
from ddlx.analysis.options import AnalysisOptions
from ddlx.analysis.runner import run_analysis
from ddlx.errors import CatalogError
from tests.conftest import generated_pai_home
from tests.test_analysis_cache import assert_same_results

#: A query DuckDB takes minutes over: a lane still in it when the other fails must be interrupted.
ENDLESS = "SELECT count(*) AS n FROM range(100000000000) a WHERE a.range % 7 = 3"


pytestmark = pytest.mark.usefixtures("duckdb_on_one_thread", "speedups_on")  # a speed-up under test
#: Not run on the plain path too (`tests/conftest.py`): the two lanes are the speed-up under test.
BOTH_PATHS = False


@pytest.fixture(scope="module")
def generated_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generated_pai_home(tmp_path_factory, "lanes", seed=3)


def _run(home: Path, **kwargs) -> tuple[object, dict[str, str]]:
    """`run_analysis` without kept results, and the thread each module ran in."""
    threads: dict[str, str] = {}

    def progress(message: str) -> None:
        threads[message.split(": ")[1]] = threading.current_thread().name

    return run_analysis(home, "pai", progress=progress, cache=False, **kwargs), threads


@pytest.mark.slow
def test_two_connections_give_exactly_what_one_after_the_other_gives(generated_home: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    reproduce_on = runner.reproduce_on
    papers_threads: set[str] = set()

    def reproduce_recording_the_thread(*args):
        papers_threads.add(threading.current_thread().name)
        return reproduce_on(*args)

    monkeypatch.setattr(runner, "reproduce_on", reproduce_recording_the_thread)
    together, threads = _run(generated_home)
    assert len(set(threads.values()) | papers_threads) == 2  # which part runs where is the machine's
    monkeypatch.setattr(runner, "CONCURRENT_MAX_JOBS", 0)  # a trace too large: one after the other
    alone, threads = _run(generated_home)
    assert set(threads.values()) == {threading.current_thread().name}
    assert_same_results(together, alone)
    assert [m.module for m in together.modules] == [m.module for m in alone.modules] == list(threads)
    assert [r.profile.name for r in together.reproductions] == [r.profile.name for r in alone.reproductions]
    assert together.reproductions and all(
        [(f.value, f.verdict) for f in a.results] == [(f.value, f.verdict) for f in b.results]
        for a, b in zip(together.reproductions, alone.reproductions))


def test_the_parts_wait_longest_first() -> None:
    every = runner._longest_first(runner.resolve_modules(None))
    assert every[:4] == ["utilization", "sharing", "queueing", runner.PAPERS]
    assert sorted(every) == sorted([runner.PAPERS, *runner.MODULES])
    assert runner._longest_first(["overview", "queueing"]) == ["queueing", runner.PAPERS, "overview"]


def test_a_result_computed_once_is_computed_by_one_connection_while_the_other_waits(generated_home: Path) -> None:
    calls: list[str] = []
    inside = threading.Event()

    def slow() -> int:
        calls.append(threading.current_thread().name)
        inside.set()
        time.sleep(0.3)
        return len(calls)

    with runner.open_trace(generated_home, "pai", cache=False) as ctx, ctx.second_connection() as other:
        found: list[int] = []
        thread = threading.Thread(target=lambda: found.append(other.kept.once("slow", slow)))
        thread.start()
        assert inside.wait(60)
        assert ctx.kept.once("slow", slow) == 1  # waited for the other thread's result
        thread.join()
        assert found == [1] and len(calls) == 1

        def broken() -> int:
            inside.set()
            time.sleep(0.2)
            raise CatalogError("broken")

        inside.clear()
        failed: list[BaseException] = []

        def fail() -> None:
            try:
                other.kept.once("after a failure", broken)
            except CatalogError as exc:
                failed.append(exc)

        thread = threading.Thread(target=fail)
        thread.start()
        assert inside.wait(60)
        assert ctx.kept.once("after a failure", lambda: 7) == 7  # the failed computation is made again here
        thread.join()
        assert len(failed) == 1


def test_a_module_list_on_one_connection_runs_there(generated_home: Path) -> None:
    result, threads = _run(generated_home, modules=["queueing"])
    assert threads == {"queueing": threading.current_thread().name}
    assert [m.module for m in result.modules] == ["queueing"]


@pytest.mark.parametrize("failing, waiting", [(overview, utilization), (utilization, overview)])
def test_a_failure_on_either_connection_interrupts_the_other_and_is_raised(
        generated_home: Path, monkeypatch: pytest.MonkeyPatch, failing, waiting) -> None:
    started = threading.Event()

    def endless(ctx: TraceContext):
        started.set()
        ctx.query(ENDLESS)
        raise AssertionError("the endless query returned")

    def broken(ctx: TraceContext):
        assert started.wait(60)
        raise CatalogError(f"{failing.__name__} failed")

    monkeypatch.setattr(waiting, "analyze", endless)
    monkeypatch.setattr(failing, "analyze", broken)
    threads_before = threading.active_count()
    began = time.monotonic()
    with pytest.raises(CatalogError, match=f"^{failing.__name__} failed$"):
        run_analysis(generated_home, "pai", cache=False)
    assert time.monotonic() - began < 60  # the endless query was interrupted, not waited for
    assert threading.active_count() == threads_before


def test_an_interrupt_stops_the_other_connection(generated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started = threading.Event()

    def endless(ctx: TraceContext):
        started.set()
        ctx.query(ENDLESS)

    def interrupted(ctx: TraceContext):
        assert started.wait(60)
        raise KeyboardInterrupt

    monkeypatch.setattr(overview, "analyze", endless)
    monkeypatch.setattr(utilization, "analyze", interrupted)
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_analysis(generated_home, "pai", cache=False)
    assert time.monotonic() - began < 60


def test_another_engine_runs_the_modules_one_after_the_other(generated_home: Path) -> None:
    with runner.open_trace(generated_home, "pai", cache=False) as ctx:
        assert runner._runs_concurrently(ctx)
        ctx.options = AnalysisOptions(engine="spark")
        assert not runner._runs_concurrently(ctx)


def test_an_analysis_does_not_load_pandas(generated_home: Path) -> None:
    # pandas takes a fifth of a second to load and is no part of an analysis (pyarrow's conversions
    # to NumPy load it: the sweeps read their buffers instead)
    script = ("import sys; from pathlib import Path; from ddlx.analysis.runner import run_analysis; "
              f"run_analysis(Path({str(generated_home)!r}), 'pai', cache=False); "
              "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pandas')[:3])")
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "[]"


@pytest.mark.parametrize(("cores", "threads", "during", "sorts"),
                         [(2, 2, 1, False), (2, 4, 1, False), (8, 4, 4, True), (8, 8, 7, True), (1, 1, 1, False)])
def test_two_lanes_leave_one_thread_per_core(monkeypatch: pytest.MonkeyPatch, cores: int, threads: int,
                                             during: int, sorts: bool) -> None:
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    monkeypatch.setattr(runner.os, "cpu_count", lambda: cores)
    ctx = types.SimpleNamespace(con=con, sorts_in_parallel=True)

    def setting() -> int:
        return int(con.execute("SELECT current_setting('threads')").fetchall()[0][0])

    with runner._one_thread_per_core(ctx):
        assert (setting(), ctx.sorts_in_parallel) == (during, sorts)
    assert (setting(), ctx.sorts_in_parallel) == (threads, True)
    with pytest.raises(KeyError), runner._one_thread_per_core(ctx):
        raise KeyError("a lane failed")
    assert (setting(), ctx.sorts_in_parallel) == (threads, True)


def test_a_catalog_without_the_instances_per_task_gives_the_same_readings(generated_home: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A catalog ingested before `pai_task_instances` was stored: the readings that join tasks with
    their instances compute the roll-up from the instances, with the same results."""
    from ddlx.traces.pai import analyses, reproduce
    from ddlx.traces.pai.reader import TASK_INSTANCES

    def readings() -> tuple[object, object]:
        with runner.open_trace(generated_home, "pai", cache=False) as ctx:
            return analyses.pai_queue_definitions(ctx), reproduce._notebook_shares(ctx)

    stored = readings()
    has = TraceContext.has
    monkeypatch.setattr(TraceContext, "has", lambda self, *tables: TASK_INSTANCES not in tables and has(self, *tables))
    computed = readings()
    assert computed[0].equals(stored[0]) and computed[1] == stored[1]
    assert stored[0]["rows"].to_list()[2] > 100 and stored[1]
