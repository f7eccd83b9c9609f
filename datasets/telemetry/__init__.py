"""GPU telemetry of an operator's own cluster: DCGM exporter samples read from Prometheus, an
OpenMetrics dump or a CSV/Parquet dump, kept beside a dataset of the catalog as the canonical
`gpu_samples` table, Parquet partitioned by day (`store.py`); `model.py` names the fields and
columns."""
