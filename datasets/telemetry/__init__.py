"""GPU telemetry of an operator's own cluster: DCGM exporter samples read from Prometheus, an
OpenMetrics dump or a CSV/Parquet dump, kept beside a dataset of the catalog as the canonical
`gpu_samples` table, Parquet partitioned by day (`store.py`); `model.py` names the fields and
columns.

Public face: `import_metrics` (read samples into a dataset, resumable), `select_fields` (the DCGM
fields to keep) and `has_samples` (whether a dataset has telemetry).
"""

from ddlx.lazy import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "import_metrics": "datasets.telemetry.importer",
    "select_fields": "datasets.telemetry.importer",
    "has_samples": "datasets.telemetry.store",
})
