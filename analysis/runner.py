"""Running the analysis modules on one trace of the catalog.

The modules run on two connections at once where the trace is small enough (`CONCURRENT_MAX_JOBS`):
DuckDB keeps both cores busy within a query, but a module's own NumPy and Python work, and the
serial parts of DuckDB's plans, leave one core idle most of the time; a second module fills it.
The parts of the run (each module, and the papers' figures) wait in one queue, longest first, and
a connection that is free takes the next. The two connections share one DuckDB database, so its
memory limit holds for both, the results computed once (`KeptResults.once`), the run's products
(`CatalogConnection.product`: what several modules read, made by whichever asks first) and one set of
kept results (`ddlx.analysis.cache`). Results are the same either way and are returned in the
modules' order. The two connections are a speed-up (`ddlx.analysis.fast`): `DDLX_PLAIN=lanes` (or
`1`) runs the modules one after the other on one connection.
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ddlx.analysis.context import TraceContext, open_trace
from ddlx.analysis.fast import speedups
from ddlx.analysis.model import AnalysisResult, ModuleResult
from ddlx.analysis.modules import MODULES, load
from ddlx.analysis.options import AnalysisOptions
from ddlx.analysis.reproduce.run import profiles_for, reproduce_on
from ddlx.errors import UsageError

#: The papers' figures (`ddlx.analysis.reproduce`), a part of the run like a module.
PAPERS = "papers' figures"

#: The order the parts of a run are taken in on two connections, longest first as measured on a
#: trace of 1.26 M jobs: a connection that is free takes the next part, so neither is left alone
#: with a long one at the end.
LONGEST_FIRST: tuple[str, ...] = ("utilization", "sharing", "queueing", PAPERS, "durations", "time_patterns",
                                  "failures", "users", "overview", "gpu_efficiency")

#: The most jobs a trace may have for its modules to run on two connections at once: beyond it the
#: modules' work held in memory (the allocation steps summed in memory up to
#: `fast.steps.STEPS_SUMMED_IN_MEMORY` changes, two a job; the co-location sweep's sorts) would be
#: held twice, and the modules run one after the other.
CONCURRENT_MAX_JOBS = 2_000_000


class UnknownModuleError(UsageError):
    """A module name `ddlx analyze --module` does not know."""


def resolve_modules(names: Sequence[str] | None) -> list[str]:
    """The modules to run, in run order: all of them when `names` is empty or None."""
    if not names:
        return list(MODULES)
    unknown = [n for n in names if n not in MODULES]
    if unknown:
        raise UnknownModuleError(f"unknown analysis module {unknown[0]!r}; expected one of: {', '.join(MODULES)}")
    return [n for n in MODULES if n in names]


def run_analysis(home: Path, trace: str, modules: Sequence[str] | None = None,
                 progress: Callable[[str], None] | None = None,
                 options: AnalysisOptions | Mapping[str, Any] | None = None, cache: bool = True) -> AnalysisResult:
    """Run `modules` (default: every module) on `trace` in the catalog of `home`.

    `options` are the modules' settings (`AnalysisOptions`, or a mapping of them such as
    `{"resolution_s": 600}`: `AnalysisOptions.from_mapping`). `cache` False neither reads nor
    writes the results kept between runs (`ddlx.analysis.cache`).
    """
    names = resolve_modules(modules)
    settings = AnalysisOptions.from_mapping(options)
    with open_trace(home, trace, cache=cache, options=settings) as ctx:
        result = AnalysisResult(trace, ctx.synthetic, ctx.provenance, wall_clock=ctx.has_wall_clock,
                                calendar_dates=ctx.has_calendar_dates, options=settings.recorded())
        done: dict[str, ModuleResult] = {}
        concurrently = _runs_concurrently(ctx)
        waiting = collections.deque(_longest_first(names) if concurrently else [PAPERS, *names])
        waiting_lock = threading.Lock()

        def next_part() -> str | None:
            with waiting_lock:
                return waiting.popleft() if waiting else None

        def run(on: TraceContext, stop: threading.Event, name: str | None = None) -> None:
            """Run the part `name` (default: the next waiting), then the parts still waiting, until
            none is left or `stop` is set."""
            name = name or next_part()
            while name is not None and not stop.is_set():
                if name == PAPERS:
                    result.reproductions = [reproduce_on(on, profile) for profile in profiles_for(trace)]
                else:
                    if progress:
                        progress(f"{trace}: {name}")
                    module = load(name).analyze(on)
                    module.apply_checks()
                    done[name] = module
                name = next_part()

        if concurrently:
            first = next_part()  # this connection's, before the other starts
            in_two_lanes(ctx, lambda on, stop: run(on, stop, first), run)
        else:
            run(ctx, threading.Event())
        result.modules = [done[name] for name in names]
        ctx.kept.commit()
        result.provenance = {**result.provenance, "kept_results": ctx.kept.cache.summary()}
        return result


def _longest_first(names: Sequence[str]) -> list[str]:
    """The parts of a run of the modules `names` and the papers' figures, in `LONGEST_FIRST` order
    (a part it does not name last)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    return sorted([PAPERS, *names], key=lambda name: rank.get(name, len(rank)))


def _runs_concurrently(ctx: TraceContext) -> bool:
    """True when the modules of `ctx`'s trace run on two connections: the two lanes are on
    (`ddlx.analysis.fast.speedups`), the machine has two cores or more, DuckDB is the engine
    (another engine's session is one per run) and the trace has at most `CONCURRENT_MAX_JOBS` jobs."""
    if not speedups().lanes or (os.cpu_count() or 1) < 2 or ctx.options.engine != "duckdb":
        return False
    return ctx.one_row(f"SELECT count(*) AS n FROM {ctx.jobs}")["n"] <= CONCURRENT_MAX_JOBS


Lane = Callable[[TraceContext, threading.Event], None]


@contextlib.contextmanager
def _one_thread_per_core(ctx: TraceContext) -> Iterator[None]:
    """For the block, while two lanes run: DuckDB's `threads` the cores less one (DuckDB runs a
    query on the calling connection's thread and on `threads` - 1 workers the connections share,
    so with two lanes calling that makes one thread per core); on two cores, also the sorts in
    memory on the lane's own thread (`TraceContext.sorts_in_parallel`; a second connection copies
    it). More threads than cores cost CPU for the same rows: 1.26 M jobs on two cores took about
    0.7 s of CPU less with one DuckDB thread a lane, and 0.3 s less again with one sorting thread."""
    threads = int(ctx.con.execute("SELECT current_setting('threads')").fetchall()[0][0])
    beside = max(1, min(threads, (os.cpu_count() or 1) - 1))
    if beside < threads:
        ctx.con.execute(f"SET threads = {beside}")
    sorts_in_parallel, ctx.sorts_in_parallel = ctx.sorts_in_parallel, (os.cpu_count() or 1) > 2
    try:
        yield
    finally:
        ctx.sorts_in_parallel = sorts_in_parallel
        if beside < threads:
            ctx.con.execute(f"SET threads = {threads}")


#: How often a failed lane interrupts the other's queries until it has returned, seconds.
INTERRUPT_EVERY_S = 0.05


def in_two_lanes(ctx: TraceContext, first: Lane, second: Lane) -> None:
    """Run `first` on `ctx` in this thread and `second` on a second connection to the same catalog
    (`TraceContext.second_connection`) in another, at once. Each is given an event set when the
    other failed, to stop between steps. The first failure (an error, or an interrupt in this
    thread) stops the other lane: its queries are interrupted until it has returned. That failure
    is raised once both lanes have stopped."""
    stop = threading.Event()
    failures: list[BaseException] = []
    lock = threading.Lock()
    first_done, second_done = threading.Event(), threading.Event()

    def record(exc: BaseException) -> None:
        with lock:
            if not failures:
                failures.append(exc)
        stop.set()

    def finish(exc: BaseException | None, done: threading.Event, other_con: Any, other_done: threading.Event) -> None:
        """A lane has returned (or failed with `exc`): a failure interrupts the other lane's queries
        until it has returned too (a query started just after an interrupt is interrupted again)."""
        done.set()
        if exc is None:
            return
        record(exc)
        while not other_done.wait(INTERRUPT_EVERY_S):
            other_con.interrupt()

    with _one_thread_per_core(ctx), ctx.second_connection() as other:
        def run_second() -> None:
            failure = None
            try:
                second(other, stop)
            except BaseException as exc:  # noqa: BLE001 - raised in the first lane's thread
                failure = exc
            finish(failure, second_done, ctx.con, first_done)

        thread = threading.Thread(target=run_second, name="ddlx-analysis-second-connection", daemon=True)
        thread.start()
        try:
            failure = None
            try:
                first(ctx, stop)
            except BaseException as exc:  # noqa: BLE001 - raised below, once both lanes stopped
                failure = exc
            finish(failure, first_done, other.con, second_done)
            thread.join()
        except BaseException as exc:  # noqa: BLE001 - an interrupt while waiting for the other lane
            first_done.set()
            record(exc)
        finally:
            while thread.is_alive():  # stopped: never close its connection under it
                try:
                    other.con.interrupt()
                    thread.join(INTERRUPT_EVERY_S)
                except BaseException as exc:  # noqa: BLE001 - a second interrupt while it stops
                    record(exc)
    if failures:
        raise failures[0]
