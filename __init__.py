"""ddlx: trace analysis and workload characterization for deep-learning GPU clusters.

In Python, `ddlx.open()` returns the catalog of a data home, and everything the command line does
hangs off it (`ddlx.api.Catalog`); `ddlx.report(result, ...)` shows a report inline (docs/python.md).

Packages, bottom layer first (a package imports only from those above it in this list;
tests/test_import_graph.py checks it), each stating its public face in its own `__init__.py`:
- `ddlx.datasets`: the catalog, ingest and import (typed Parquet, read through DuckDB), the
  canonical model, telemetry, and the plugin contract (`ddlx.datasets.plugins`);
- `ddlx.placement`: the node-level placement model (cluster, policies, fragmentation, fill-up);
- `ddlx.analysis`: the characterization modules (`analyze`) and the papers' published figures
  (`ddlx.analysis.reproduce`);
- `ddlx.predict`: job-duration predictors; `ddlx.simulate`: the trace-driven pool simulator;
- `ddlx.reports`: results folders and reports;
- `ddlx.traces`: one plugin folder per supported trace; `ddlx.formats`: one per file format of
  another tool (writer and reader), and `export_dataset`;
- `ddlx.api` (`ddlx.open()`), then `ddlx.cli`: the `ddlx` command line.
"""

from importlib.metadata import PackageNotFoundError, version

from ddlx.lazy import lazy_exports

_exports, __getattr__ = lazy_exports(__name__, {"open": "api:open_catalog", "report": "api", "Catalog": "api"})
__all__ = ["__version__", *_exports]

try:
    __version__ = version("ddlx")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+source"
