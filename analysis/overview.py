"""Headline numbers of one trace, computed with SQL over the catalog's canonical `jobs` view."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from ddlx.analysis.definitions import definitions_used
from ddlx.datasets.canonical import jobs_table_name
from ddlx.datasets import catalog
from ddlx.errors import CatalogError

GPU_BUCKETS_SQL = """CASE
    WHEN num_gpus IS NULL THEN 'unknown'
    WHEN num_gpus = 0 THEN '0'
    WHEN num_gpus < 1 THEN '(0,1)'
    WHEN num_gpus = 1 THEN '1'
    WHEN num_gpus <= 2 THEN '(1,2]'
    WHEN num_gpus <= 4 THEN '(2,4]'
    WHEN num_gpus <= 8 THEN '(4,8]'
    ELSE '>8' END"""
GPU_BUCKET_ORDER = ("0", "(0,1)", "1", "(1,2]", "(2,4]", "(4,8]", ">8", "unknown")
GPU_HOURS_SQL = "coalesce(num_gpus * run_s, 0) / 3600.0"


@dataclass
class Metric:
    """One headline number with its unit, definition id and the population it was computed over."""

    name: str
    value: float | int | None
    unit: str
    definition: str
    population: str


@dataclass
class TraceSummary:
    trace: str
    synthetic: bool
    provenance: dict[str, Any]
    metrics: list[Metric] = field(default_factory=list)
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)

    @property
    def definition_ids(self) -> list[str]:
        ids = [m.definition for m in self.metrics]
        for table in self.tables.values():
            if "definition" in table.columns:
                ids += table["definition"].unique(maintain_order=True).to_list()
        return list(dict.fromkeys(ids))

    def metric(self, name: str) -> Metric:
        return next(m for m in self.metrics if m.name == name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "trace": self.trace,
            "synthetic": self.synthetic,
            "provenance": self.provenance,
            "metrics": [m.__dict__ for m in self.metrics],
            "tables": {name: t.to_dicts() for name, t in self.tables.items()},
            "definitions": definitions_used(self.definition_ids),
        }


def _one_row(home: Path, sql: str) -> dict[str, Any]:
    return catalog.query(home, sql).to_dicts()[0]


def summarize(home: Path, trace: str) -> TraceSummary:
    """Jobs, GPU jobs, state and GPU-request mixes, queueing and run-time quantiles of `trace`."""
    registration = catalog.read_registrations(home).get(trace)
    if registration is None or jobs_table_name(trace) not in registration.tables:
        raise CatalogError(
            f"no jobs of trace '{trace}' in {home}; ingest its job, task and instance tables first"
        )
    where = f"trace = '{trace}'"
    counts = _one_row(home, f"""
        SELECT count(*) AS jobs,
               count(*) FILTER (WHERE num_gpus > 0) AS gpu_jobs,
               count(*) FILTER (WHERE num_gpus > 0 AND fractional_gpu) AS fractional_gpu_jobs,
               quantile_cont(queue_s, 0.5) AS queue_p50, quantile_cont(queue_s, 0.9) AS queue_p90,
               count(queue_s) AS queued_jobs,
               quantile_cont(run_s, 0.5) AS run_p50, quantile_cont(run_s, 0.9) AS run_p90,
               count(run_s) AS timed_jobs,
               sum({GPU_HOURS_SQL}) AS gpu_hours
        FROM jobs WHERE {where}""")
    gpu_jobs = counts["gpu_jobs"]
    metrics = [
        Metric("jobs", counts["jobs"], "jobs", "state.canonical", "all jobs"),
        Metric("gpu_jobs", gpu_jobs, "jobs", "gpu_job.requests_gpu", "all jobs"),
        Metric("gpu_job_share", _ratio(gpu_jobs, counts["jobs"]), "fraction", "gpu_job.requests_gpu",
               "all jobs"),
        Metric("fractional_gpu_job_share", _ratio(counts["fractional_gpu_jobs"], gpu_jobs), "fraction",
               "gpu_request.fractional", "GPU jobs"),
        Metric("gpu_hours", counts["gpu_hours"], "GPU-hours", "gpu_time.request_x_runtime",
               "jobs with a run time"),
        Metric("queue_delay_p50", counts["queue_p50"], "s", "queue_delay.submit_to_first_start",
               f"{counts['queued_jobs']} jobs that started"),
        Metric("queue_delay_p90", counts["queue_p90"], "s", "queue_delay.submit_to_first_start",
               f"{counts['queued_jobs']} jobs that started"),
        Metric("run_time_p50", counts["run_p50"], "s", "runtime.first_start_to_last_end",
               f"{counts['timed_jobs']} jobs with a start and an end"),
        Metric("run_time_p90", counts["run_p90"], "s", "runtime.first_start_to_last_end",
               f"{counts['timed_jobs']} jobs with a start and an end"),
    ]
    state_mix = catalog.query(home, f"""
        SELECT state, count(*) AS jobs, count(*) / sum(count(*)) OVER () AS job_share,
               sum({GPU_HOURS_SQL}) AS gpu_hours,
               sum({GPU_HOURS_SQL}) / nullif(sum(sum({GPU_HOURS_SQL})) OVER (), 0) AS gpu_hours_share,
               'state.canonical' AS definition
        FROM jobs WHERE {where} GROUP BY state ORDER BY jobs DESC""")
    request_mix = catalog.query(home, f"""
        SELECT {GPU_BUCKETS_SQL} AS gpus_requested, count(*) AS jobs,
               count(*) / sum(count(*)) OVER () AS job_share,
               sum({GPU_HOURS_SQL}) AS gpu_hours,
               'gpu_request.bucket' AS definition
        FROM jobs WHERE {where} GROUP BY 1""")
    order = {label: i for i, label in enumerate(GPU_BUCKET_ORDER)}
    request_mix = request_mix.sort(pl.col("gpus_requested").replace_strict(order, return_dtype=pl.Int32))
    provenance = {
        "catalog": str(catalog.catalog_path(home)),
        "store_version": registration.version,
        "ingested_at": registration.ingested_at,
        "ddlx_version_at_ingest": registration.ddlx_version,
        "source_files": {
            t: [{k: f.get(k) for k in ("path", "member", "sha256", "matches_official_release")}
                for f in entry.get("files", [])]
            for t, entry in registration.manifest.get("inputs", {}).items()},
        "synthetic_details": registration.manifest.get("synthetic_details"),
    }
    return TraceSummary(trace, registration.synthetic, provenance, metrics,
                        {"state_mix": state_mix, "gpu_request_mix": request_mix})


def _ratio(part: int | None, whole: int | None) -> float | None:
    return (part or 0) / whole if whole else None
