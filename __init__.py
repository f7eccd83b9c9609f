"""ddlx: trace analysis and workload characterization for deep-learning GPU clusters.

In Python, `ddlx.open()` returns the catalog of a data home, and everything the command line does
hangs off it (`ddlx.api.Catalog`); `ddlx.report(result, ...)` shows a report inline (docs/python.md).

Packages, each stating its public face in its own `__init__.py`:
- `ddlx.datasets`: traces and imports into the catalog (typed Parquet, read through DuckDB);
- `ddlx.analysis`: the characterization modules (`analyze`);
- `ddlx.reports`: results folders and reports;
- `ddlx.analysis.reproduce`: the papers' published figures beside ddlx's;
- `ddlx.predict`: job-duration predictors; `ddlx.simulate`: the trace-driven simulators;
- `ddlx.cli`: the `ddlx` command line.
"""

from importlib.metadata import PackageNotFoundError, version

from ddlx.lazy import lazy_exports

_exports, __getattr__ = lazy_exports(__name__, {"open": "api:open_catalog", "report": "api", "Catalog": "api"})
__all__ = ["__version__", *_exports]

try:
    __version__ = version("ddlx")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+source"
