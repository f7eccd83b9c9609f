"""The plugin contract: what a trace folder (`ddlx.traces.<folder>`) and a format folder
(`ddlx.formats.<folder>`) declare, and the one place that finds them.

A trace folder's `__init__.py` exports `PLUGIN = TracePlugin(...)`: its release facts, the scale of
its SYNTHETIC sample and its place in `ddlx datasets list` (the formats published with it name it as
their `trace`). Its
other parts are modules of fixed names, loaded on first use so listing the traces stays cheap:
`reader` (`ADAPTER`), `generator` (`generate`), and optionally `views` (`canonical_views`,
`DEFINITIONS`, `DERIVATIONS`), `analyses` (`PARTS`, `DEFINITIONS`, `CHARTS`) and `reproduce`
(`PROFILES`, `DEFINITIONS`). `TracePlugin` is the only reader of those names.

A format folder's `__init__.py` exports `PLUGIN = FormatPlugin(...)`; its `writer` module holds the
`FORMAT` that `ddlx datasets export --format` writes, its `reader` module the `PRESET` that
`ddlx datasets import --preset` reads (a format has one or both), and an optional `reproduce`
module the `PROFILES` of traces read in that format.

Plugins are found by package discovery: every sub-package of `ddlx.traces` and of `ddlx.formats`
is one. This module sits in the lowest data layer and imports the plugins by name only: the
plugins depend on the layers below them, never the reverse (tests/test_import_graph.py).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ddlx.datasets.trace_info import TraceInfo
from ddlx.errors import UnknownDatasetError, did_you_mean

if TYPE_CHECKING:
    from ddlx.analysis.definitions import Definition
    from ddlx.analysis.reproduce.model import Profile
    from ddlx.analysis.trace_parts import TracePart
    from ddlx.datasets.adapter import TraceAdapter
    from ddlx.datasets.importers.presets import Preset
    from ddlx.formats.model import ExportFormat
    from ddlx.reports.chart_specs import ChartSpec

__all__ = ["FormatPlugin", "TRACES", "TracePlugin", "format_plugins", "get_adapter", "get_generator", "get_trace",
           "publishers", "sample_scale", "trace_plugin", "trace_plugins", "traces"]

#: The packages whose sub-packages are plugins.
TRACE_PACKAGE = "ddlx.traces"
FORMAT_PACKAGE = "ddlx.formats"


def _optional_module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None
        raise


@dataclass(frozen=True)
class TracePlugin:
    """One supported trace: `release` (files, checksums, licence, paper, time zone),
    `sample_scale` (scale of the SYNTHETIC sample `ddlx analyze` builds when the trace is not
    ingested) and `list_position` (its place among the traces). `package` is the folder's package
    name."""

    package: str
    release: TraceInfo
    sample_scale: float
    list_position: int

    @property
    def name(self) -> str:
        """The trace's name on the command line (as `ddlx datasets list` shows it)."""
        return self.release.name

    @property
    def formats(self) -> tuple[FormatPlugin, ...]:
        """The format plugins published with the trace's tools (those naming it as their `trace`)."""
        return tuple(plugin for plugin in format_plugins() if plugin.trace == self.name)

    def module(self, part: str) -> ModuleType | None:
        """The folder's module `part` (e.g. `views`), or None when the folder has none."""
        return _optional_module(f"{self.package}.{part}")

    @property
    def reader(self) -> TraceAdapter:
        """The reader: raw files -> typed Parquet -> canonical views."""
        return importlib.import_module(f"{self.package}.reader").ADAPTER

    @property
    def generator(self) -> Callable[..., Any]:
        """`generate(out_dir, scale, seed, progress)`: SYNTHETIC files in the official format."""
        return importlib.import_module(f"{self.package}.generator").generate

    @property
    def views(self) -> ModuleType | None:
        """The canonical views beyond jobs (`canonical_views(tables)`), or None."""
        return self.module("views")

    def canonical_views(self, tables: Collection[str]) -> dict[str, str]:
        """Canonical view name -> SQL, for the stored `tables` (none without a views module)."""
        views = self.views
        return {} if views is None else views.canonical_views(tables)

    @property
    def derivations(self) -> dict[str, str]:
        """Core definition -> how this trace derives it (the views module's `DERIVATIONS`)."""
        views = self.views
        return {} if views is None else dict(getattr(views, "DERIVATIONS", {}))

    @property
    def analysis_parts(self) -> tuple[TracePart, ...]:
        """This trace's own parts of the analysis modules (`analyses.PARTS`)."""
        analyses = self.module("analyses")
        return () if analyses is None else tuple(analyses.PARTS)

    @property
    def charts(self) -> tuple[ChartSpec, ...]:
        """Charts of the tables its analysis parts add (`analyses.CHARTS`)."""
        analyses = self.module("analyses")
        return () if analyses is None else tuple(getattr(analyses, "CHARTS", ()))

    @property
    def profiles(self) -> tuple[Profile, ...]:
        """The published figures of its papers (`reproduce.PROFILES`)."""
        reproduce = self.module("reproduce")
        return () if reproduce is None else tuple(reproduce.PROFILES)

    def definitions(self, part: str) -> tuple[Definition, ...]:
        """The definitions the folder's `part` (`views`, `analyses` or `reproduce`) declares."""
        if part not in DEFINING_PARTS:
            raise ValueError(f"part {part!r}: expected one of {', '.join(DEFINING_PARTS)}")
        module = self.module(part)
        return () if module is None else tuple(getattr(module, "DEFINITIONS", ()))


#: The parts of a trace folder that declare definitions.
DEFINING_PARTS: tuple[str, ...] = ("views", "analyses", "reproduce")


@dataclass(frozen=True)
class FormatPlugin:
    """One file format of another tool: `name` (the folder's), `trace` (the trace whose release
    published the tool, if any) and `package`. `writer` is what `ddlx datasets export --format`
    writes, `reader` what `ddlx datasets import --preset` reads; a format has one or both."""

    package: str
    name: str
    trace: str | None = None

    @property
    def writer(self) -> ExportFormat | None:
        module = _optional_module(f"{self.package}.writer")
        return None if module is None else module.FORMAT

    @property
    def reader(self) -> Preset | None:
        module = _optional_module(f"{self.package}.reader")
        return None if module is None else module.PRESET

    @property
    def profiles(self) -> tuple[Profile, ...]:
        """Published figures of traces read in this format (`reproduce.PROFILES`), e.g. the
        release counts of the ITP archive."""
        module = _optional_module(f"{self.package}.reproduce")
        return () if module is None else tuple(module.PROFILES)

    @property
    def definitions(self) -> tuple[Definition, ...]:
        """The definitions of those figures (`reproduce.DEFINITIONS`)."""
        module = _optional_module(f"{self.package}.reproduce")
        return () if module is None else tuple(getattr(module, "DEFINITIONS", ()))

    @property
    def consumer(self) -> str:
        """The tool that reads files of this format (its writer's consumer)."""
        writer = self.writer
        return writer.consumer if writer is not None else self.reader.description

    @property
    def loader(self) -> str:
        """The reader in the consumer's source whose rules this format follows."""
        writer = self.writer
        return writer.reference if writer is not None else self.reader.description


def _plugins(package: str, kind: type) -> list[Any]:
    found = []
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        if not info.ispkg:
            continue
        plugin = getattr(importlib.import_module(f"{package}.{info.name}"), "PLUGIN", None)
        if not isinstance(plugin, kind):
            raise TypeError(f"{package}.{info.name} exports no {kind.__name__} as PLUGIN")
        found.append(plugin)
    return found


@cache
def trace_plugins() -> tuple[TracePlugin, ...]:
    """Every trace folder's plugin, by `list_position`, then name."""
    return tuple(sorted(_plugins(TRACE_PACKAGE, TracePlugin), key=lambda p: (p.list_position, p.name)))


@cache
def format_plugins() -> tuple[FormatPlugin, ...]:
    """Every format folder's plugin, by name."""
    return tuple(sorted(_plugins(FORMAT_PACKAGE, FormatPlugin), key=lambda p: p.name))


@cache
def traces() -> dict[str, TraceInfo]:
    """Trace name (as on the command line) -> its release facts, in list order (also `TRACES`)."""
    return {plugin.name: plugin.release for plugin in trace_plugins()}


#: Trace name -> release facts (`traces()`), read through the module's `__getattr__`.
TRACES: dict[str, TraceInfo]


def __getattr__(name: str) -> Any:
    # `TRACES` is found on first use, not when this module loads: a trace folder's `__init__.py`
    # imports `TracePlugin` from here while the folder itself is still loading.
    if name == "TRACES":
        return traces()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def trace_plugin(name: str) -> TracePlugin:
    """The plugin of the registered trace `name`; `UnknownDatasetError` naming the known ones."""
    for plugin in trace_plugins():
        if plugin.name == name:
            return plugin
    known = traces()
    raise UnknownDatasetError(f"unknown trace '{name}'; expected one of: {', '.join(sorted(known))}"
                              f"{did_you_mean(name, known)}")


def get_trace(name: str) -> TraceInfo:
    """The registered trace called `name`; raises `UnknownDatasetError` naming the known ones."""
    return trace_plugin(name).release


def get_adapter(name: str) -> TraceAdapter:
    """The reader of the registered trace `name`; `UnknownDatasetError` for an unknown name."""
    return trace_plugin(name).reader


def get_generator(name: str) -> Callable[..., Any]:
    """The generator of `name`: `generate(out_dir, scale, seed, progress)` writing SYNTHETIC files
    in the official format; `UnknownDatasetError` for an unknown name."""
    return trace_plugin(name).generator


def sample_scale(name: str) -> float:
    """Scale of the SYNTHETIC sample of the registered trace `name`."""
    return float(trace_plugin(name).sample_scale)


class _EveryTable(set):
    """Stands for a catalog holding every stored table: what a trace can publish at most."""

    def __contains__(self, item: object) -> bool:
        return True


def publishers(view: str) -> list[str]:
    """The registered traces that publish the canonical `view` when all their tables are ingested,
    in list order."""
    return [plugin.name for plugin in trace_plugins() if view in plugin.canonical_views(_EveryTable())]
