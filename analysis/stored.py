"""Reduced tables kept in the catalog: what `ddlx datasets reduce` stores of a run.

Modules whose reduction grows with the data declare `CATALOG_TABLES` (module table -> name). A
reduce runs them (on the engine the options name, as `ddlx analyze` would) and stores those tables
as ordinary tables of the dataset, `<dataset>_<name>`, beside `<dataset>_reductions`: one row per
stored table with its provenance (definition `engine.stored`). They are written as an ingest
writes (a new store version swapped in with a new catalog), so a failure leaves the catalog as it
was; a later ingest or import of the dataset drops them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import polars as pl

from ddlx import __version__
from ddlx.analysis.modules import MODULES, load
from ddlx.analysis.options import AnalysisOptions
from ddlx.analysis.runner import run_analysis
from ddlx.errors import UsageError


def reducible_modules() -> list[str]:
    """The analysis modules that declare tables to keep in the catalog, in run order."""
    return [name for name in MODULES if getattr(load(name), "CATALOG_TABLES", None)]


@dataclass(frozen=True)
class StoredTable:
    """One table a reduce stored: its catalog name and rows, and where it came from."""

    table: str
    module: str
    module_table: str
    rows: int
    engine: str
    location: str
    partitions: int


def reduce_into_catalog(home: Path, dataset: str, modules: Sequence[str] | None = None,
                        options: AnalysisOptions | Mapping[str, Any] | None = None,
                        progress: Callable[[str], None] | None = None) -> list[StoredTable]:
    """Run the reducible `modules` (default: all of them) on `dataset` with `options` (the engine's
    among them) and store their declared tables in the catalog of `home`; returns what was stored
    (nothing when no module applied)."""
    from ddlx.datasets.catalog import registered_dataset
    from ddlx.datasets.ingest import store_derived_tables

    reducible = reducible_modules()
    chosen = list(modules) if modules else reducible
    refused = [m for m in chosen if m not in reducible]
    if refused:
        raise UsageError(f"module {refused[0]!r} keeps no table in the catalog; expected one of: "
                         f"{', '.join(reducible)}")
    registered_dataset(home, dataset)
    result = run_analysis(home, dataset, chosen, progress=progress, options=options)
    recorded = result.options
    reduced_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    tables: dict[str, Any] = {}
    stored: list[StoredTable] = []
    rows: list[dict[str, Any]] = []
    for module in result.modules:
        kept = {t.name: t for t in module.tables}
        origin = kept["reduction"].frame.row(0, named=True) if "reduction" in kept else {
            "engine": "duckdb", "location": "catalog", "partitions": 1}
        for module_table, suffix in load(module.module).CATALOG_TABLES.items():
            if module_table not in kept:
                continue
            name = f"{dataset}_{suffix}"
            frame = kept[module_table].frame
            tables[name] = frame.to_arrow()
            entry = StoredTable(name, module.module, module_table, frame.height, origin["engine"],
                                origin["location"], int(origin["partitions"]))
            stored.append(entry)
            rows.append({**entry.__dict__, "definitions": ", ".join(kept[module_table].definitions),
                         "options": json.dumps(recorded, sort_keys=True), "reduced_at": reduced_at,
                         "ddlx_version": __version__})
    if not tables:
        return []
    tables[f"{dataset}_reductions"] = pl.DataFrame(rows).to_arrow()
    store_derived_tables(home, dataset, tables, {"reduced_at": reduced_at, "ddlx_version": __version__,
                                                 "options": recorded})
    return stored
