"""Science that only one trace's records allow, declared by that trace and run inside the modules.

The analysis modules read canonical views only. Where one trace records something no canonical
view holds (per-task requests beside measured usage, tasks with their instances, per-machine
worker counts, a per-minute GPU log with the GPUs each attempt held), that trace's folder
declares what it computes from it: its `analyses` module lists `PARTS`, each a
`TracePart` of one analysis module at one place in it (`slot`), with the definitions it uses in
`DEFINITIONS` and the charts of its tables in `CHARTS`.

A module calls `run_trace_parts(ctx, result, slot, ...)` at each such place: the parts the trace
declares there run, and the tables and findings they add are labelled as specific to the trace
(`ModuleResult.specific`), which reports show beside them. On a trace that declares none, the
module records each of its `absent` pairs (what, why) as not applicable, naming the traces whose
records allow it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ddlx.analysis.context import TraceContext
from ddlx.analysis.model import ModuleResult
from ddlx.datasets.plugins import trace_plugins
from ddlx.datasets.trace_info import TraceInfo


@dataclass(frozen=True)
class TracePart:
    """One trace's own part of analysis module `module`, run at `slot`.

    `what` names it in reports ("three definitions of the queueing delay"); `records` says what
    the trace records that allows it (shown where the part does not apply); `run` adds its tables,
    findings and not-applicable notes to the module's result.
    """

    module: str
    slot: str
    what: str
    records: str
    run: Callable[[TraceContext, ModuleResult], None]


def declared_parts(module: str, slot: str) -> list[tuple[TraceInfo, TracePart]]:
    """Every trace's parts of `module` at `slot`, in registry order."""
    return [(plugin.release, part) for plugin in trace_plugins() for part in plugin.analysis_parts
            if part.module == module and part.slot == slot]


def run_trace_parts(ctx: TraceContext, result: ModuleResult, slot: str, *absent: tuple[str, str]) -> None:
    """Run the parts `ctx`'s trace declares for `result.module` at `slot`, labelling what they add;
    else record each (what, why) of `absent` as not applicable, with the traces that have it."""
    declared = declared_parts(result.module, slot)
    own = [part for info, part in declared if info.name == ctx.trace]
    for part in own:
        tables, findings = len(result.tables), len(result.findings)
        part.run(ctx, result)
        label = f"{ctx.label} only: {part.what}"
        for added in result.tables[tables:] + result.findings[findings:]:
            result.specific[added.name] = label
    if own:
        return
    elsewhere = "; ".join(f"{info.label or info.name} ({part.records})" for info, part in declared)
    for what, why in absent:
        result.skip(what, f"{why}; recorded by {elsewhere}" if elsewhere else why)
