"""Which adapter reads which registered trace (adapter modules are imported on first use)."""

from __future__ import annotations

import importlib

from ddlx.datasets.adapter import TraceAdapter
from ddlx.datasets.registry import get_trace

#: Registered trace name -> module defining its `ADAPTER`.
ADAPTER_MODULES: dict[str, str] = {
    "pai": "ddlx.datasets.pai",
    "philly": "ddlx.datasets.philly",
    "helios": "ddlx.datasets.helios",
    "pai-v2023": "ddlx.datasets.pai_v2023",
    "acme": "ddlx.datasets.acme",
}


def get_adapter(trace: str) -> TraceAdapter:
    """The adapter of the registered trace `trace`; `UnknownDatasetError` for an unknown name."""
    info = get_trace(trace)
    module = importlib.import_module(ADAPTER_MODULES[info.name])
    adapter: TraceAdapter = module.ADAPTER
    return adapter
