"""The traces ddlx supports: one folder each under `ddlx.datasets.traces`, and this one list of them.

Each folder declares its release facts (`RELEASE`), its reader (`reader.ADAPTER`), its generator
(`generator.generate`) and the scale of its sample (`SAMPLE_SCALE`). The command line, help texts,
downloads, ingest and the generator all take the traces from here: adding a trace is a new folder
(see docs/adding-a-trace.md): the folders are found here (`FOLDERS`), each in the place its
`LIST_POSITION` gives, and the only other line to edit is the package list of pyproject.toml.
Readers and generators are imported on first use, so listing the traces stays cheap.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ddlx.datasets.trace_info import TraceInfo
from ddlx.errors import UnknownDatasetError, did_you_mean

if TYPE_CHECKING:
    from ddlx.datasets.adapter import TraceAdapter

__all__ = ["FOLDERS", "OPTIONAL_PARTS", "TRACES", "get_adapter", "get_generator", "get_trace", "publishers",
           "sample_scale", "trace_part", "trace_parts"]


def _package(folder: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{folder}")


def _discover() -> tuple[str, ...]:
    """The trace folders (sub-packages of this one), by their `LIST_POSITION`, then name."""
    folders = [module.name for module in pkgutil.iter_modules(__path__) if module.ispkg]
    return tuple(sorted(folders, key=lambda folder: (_package(folder).LIST_POSITION, folder)))


#: The folders of the supported traces, in the order ddlx lists them.
FOLDERS: tuple[str, ...] = _discover()


#: Trace name (as on the command line, e.g. `pai-v2023`) -> its release facts.
TRACES: dict[str, TraceInfo] = {_package(folder).RELEASE.name: _package(folder).RELEASE for folder in FOLDERS}
_FOLDER_OF: dict[str, str] = {_package(folder).RELEASE.name: folder for folder in FOLDERS}


def get_trace(name: str) -> TraceInfo:
    """The registered trace called `name`; raises `UnknownDatasetError` naming the known ones."""
    try:
        return TRACES[name]
    except KeyError:
        raise UnknownDatasetError(
            f"unknown trace '{name}'; expected one of: {', '.join(sorted(TRACES))}{did_you_mean(name, TRACES)}"
        ) from None


def _part(name: str, module: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{_FOLDER_OF[get_trace(name).name]}.{module}")


def get_adapter(name: str) -> TraceAdapter:
    """The reader of the registered trace `name`; `UnknownDatasetError` for an unknown name."""
    adapter: TraceAdapter = _part(name, "reader").ADAPTER
    return adapter


def get_generator(name: str) -> Callable[..., Any]:
    """The generator of `name`: `generate(out_dir, scale, seed, progress)` writing SYNTHETIC files
    in the official format; `UnknownDatasetError` for an unknown name."""
    return _part(name, "generator").generate


def sample_scale(name: str) -> float:
    """Scale of the SYNTHETIC sample of the registered trace `name`."""
    return float(_package(_FOLDER_OF[get_trace(name).name]).SAMPLE_SCALE)



#: The optional parts of a trace folder: `views` (its canonical views beyond jobs, their
#: definitions, and its derivation of the core definitions), `analyses` (science only this
#: trace's records allow, declared as parts of the analysis modules), `reproduce` (the
#: published figures of its papers, `PROFILES`, with the papers' definitions) and `formats` (the
#: file formats of the tools published with the trace: `EXPORT_FORMATS` that `ddlx datasets
#: export` writes from any dataset, and `IMPORT_PRESETS` that `ddlx datasets import` reads).
OPTIONAL_PARTS: tuple[str, ...] = ("views", "analyses", "reproduce", "formats")


def trace_part(name: str, part: str) -> ModuleType | None:
    """The module `part` (one of `OPTIONAL_PARTS`) of the registered trace `name`; None when its
    folder has none (and for a name that is no registered trace, e.g. an imported dataset)."""
    if name not in TRACES:
        return None
    module = f"{__name__}.{_FOLDER_OF[name]}.{part}"
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return None
        raise


def trace_parts(part: str) -> list[tuple[TraceInfo, ModuleType]]:
    """Every registered trace whose folder has `part`, with that module, in registry order."""
    found = [(info, trace_part(name, part)) for name, info in TRACES.items()]
    return [(info, module) for info, module in found if module is not None]


class _EveryTable(set):
    """Stands for a catalog holding every stored table: what a trace can publish at most."""

    def __contains__(self, item: object) -> bool:
        return True


def publishers(view: str) -> list[str]:
    """The registered traces that publish the canonical `view` when all their tables are ingested,
    in registry order."""
    return [info.name for info, module in trace_parts("views") if view in module.canonical_views(_EveryTable())]
