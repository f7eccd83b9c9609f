"""Running the analysis modules on one trace of the catalog."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ddlx.analysis.context import open_trace
from ddlx.analysis.model import AnalysisResult
from ddlx.analysis.modules import MODULES, load
from ddlx.errors import UsageError
from ddlx.reproduce.run import profiles_for, reproduce_on


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
                 options: dict[str, Any] | None = None, cache: bool = True) -> AnalysisResult:
    """Run `modules` (default: every module) on `trace` in the catalog of `home`.

    `options` are passed to the modules (see `TraceContext.options`), e.g. `resolution_s`. `cache`
    False neither reads nor writes the results kept between runs (`ddlx.analysis.cache`).
    """
    names = resolve_modules(modules)
    with open_trace(home, trace, cache=cache) as ctx:
        ctx.options.update(options or {})
        result = AnalysisResult(trace, ctx.synthetic, ctx.provenance, wall_clock=ctx.has_wall_clock,
                                calendar_dates=ctx.has_calendar_dates, options=dict(options or {}))
        result.reproductions = [reproduce_on(ctx, profile) for profile in profiles_for(trace)]
        for name in names:
            if progress:
                progress(f"{trace}: {name}")
            module = load(name).analyze(ctx)
            module.apply_checks()
            result.modules.append(module)
        ctx.cache.commit()
        result.provenance = {**result.provenance, "kept_results": ctx.cache.summary()}
        return result
