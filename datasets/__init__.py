"""Traces into the catalog: downloading, reading, validating and storing them as typed Parquet.

Public face (each module's docstring says more):
- `TRACES`, `get_trace`: the supported traces and their release facts (`datasets.plugins`);
- `download_release`: fetch a release's official files and check their sha256 (`download`);
- `ingest_trace`: read a trace's files or archives into the catalog (`ingest.ingest`);
- `import_dataset` lives with the generic importer (`datasets.importers`), `import_metrics` with GPU
  telemetry (`datasets.telemetry`);
- `query`, `reading`: read the catalog with DuckDB (`catalog`);
- `resolve_data_home`: the data home a command uses (`home`);
- `write_synthetic_release`: a SYNTHETIC release in the official formats (`synthetic`).

Everything that knows a trace lives in its folder under `traces/`; the modules here
know none.
"""

from ddlx.lazy import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "TRACES": "datasets.plugins",
    "get_trace": "datasets.plugins",
    "download_release": "datasets.download",
    "ingest_trace": "datasets.ingest:ingest",
    "query": "datasets.catalog",
    "reading": "datasets.catalog",
    "resolve_data_home": "datasets.home",
    "write_synthetic_release": "datasets.synthetic",
})
