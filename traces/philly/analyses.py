"""Philly's own science: what only Philly's records allow, declared as parts of the analysis modules
(`ddlx.analysis.trace_parts`). Reports show each table and finding of these parts as Philly's only.

- utilization, `measured`: GPU utilisation per GPU-minute from the per-minute log
  (philly_gpu_util), and per job over the GPUs each attempt held (with philly_attempts and the
  job log's placement detail).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ddlx.analysis.allocation import registered
from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.model import ModuleResult, held_to_end_text
from ddlx.analysis.sql import (
    CDF_STEP,
    GPU_BUCKET_SQL,
    cdf_from_counts,
    cdf_table,
    quantile_columns_sql,
    quantiles_from_counts,
    sort_buckets,
    sql_float,
)
from ddlx.analysis.trace_parts import TracePart
from ddlx.analysis.utilization import add_measured_summary
from ddlx.reports.chart_specs import ChartSpec

PHILLY_GPU_COLUMNS: tuple[str, ...] = tuple(f"gpu{k}_util" for k in range(8))

DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "utilization.philly_gpu_minute_util", "Measured GPU utilisation per GPU-minute, Philly", "percent",
        "Philly: each number in the gpu0_util..gpu7_util fields of philly_gpu_util (one per GPU "
        "and minute; NA, an offline GPU, and empty fields, no such GPU, are left out), percent. "
        "Quantiles are exact (continuous quantiles from the counts of each distinct value).",
    ),
    Definition(
        "utilization.philly_job_gpu_util", "Measured GPU utilisation of a Philly job", "percent",
        "Philly: the mean of the per-minute utilisation of the GPUs a job was given (each attempt's "
        "detail: machine and gpuN) over the minutes of that attempt, start_time <= minute < "
        "end_time, over all its attempts; each online GPU-minute weighs the same (gpu_minutes). "
        "Attempts without a start or without an end are left out (a last attempt without an end "
        "is an end that was not logged, so where it stopped is unknown); jobs with no GPU-minute "
        "in the log have none.",
    ),
)


def philly_gpu_minute_counts(ctx: TraceContext) -> pl.DataFrame:
    """How often each GPU-minute utilisation value occurs in philly_gpu_util: `value` (percent),
    `n` (`utilization.philly_gpu_minute_util`). One GPU column at a time: no row is unpivoted."""
    parts = [f"SELECT {c} AS value, count(*) AS n FROM philly_gpu_util WHERE {c} IS NOT NULL GROUP BY 1"
             for c in PHILLY_GPU_COLUMNS]
    return ctx.query(f"""SELECT value, CAST(sum(n) AS BIGINT) AS n FROM ({' UNION ALL '.join(parts)})
                         GROUP BY value ORDER BY value""")


def philly_gpu_minute_util_cdf(ctx: TraceContext, counts: pl.DataFrame | None = None) -> pl.DataFrame:
    """CDF of Philly GPU-minute utilisation (`utilization.philly_gpu_minute_util`):
    `probability`, `gpu_util_pct`, `gpu_minutes`; `counts` as `philly_gpu_minute_counts` gives."""
    counts = philly_gpu_minute_counts(ctx) if counts is None else counts
    with registered(ctx, counts, "gpu_minute_counts") as name:
        return cdf_from_counts(ctx, name).rename({"value": "gpu_util_pct", "rows": "gpu_minutes"})


def _masked_sum_sql(mask: str, terms: Sequence[str]) -> str:
    """The sum of `terms[k]` over the bits k set in the integer `mask`."""
    return " + ".join(f"CASE WHEN ({mask} & {1 << k}) <> 0 THEN {term} ELSE 0 END" for k, term in enumerate(terms))


def philly_job_gpu_util_sql(ctx: TraceContext) -> str:
    """A FROM item: per Philly job with GPU-minutes in the log, `job_id`, `gpu_minutes` and
    `gpu_util_pct` (`utilization.philly_job_gpu_util`).

    Each attempt's machine gets a bitmask of the GPUs it was given there. Hours an attempt covers
    entirely are read from per-machine hourly sums of the log; only the (at most two) hours it
    covers in part are joined minute by minute. The work grows with the log and the attempts,
    not with the GPU-minutes of the jobs.
    """
    hourly_sums = ", ".join(f"sum({c}) AS sum{k}, count({c}) AS n{k}" for k, c in enumerate(PHILLY_GPU_COLUMNS))
    return f"""(
    WITH log_end AS (SELECT epoch(max(time)) + 60 AS e FROM philly_gpu_util),
    detail AS (
        SELECT a.jobid, a.attempt, epoch(a.start_time) AS s,
               CASE WHEN a.end_time IS NOT NULL THEN epoch(a.end_time)
                    WHEN a.running_at_trace_end AND {ctx.holds_open("attempt")} THEN (SELECT e FROM log_end) END AS e,
               unnest(j.attempts[a.attempt].detail) AS d
        FROM philly_attempts a JOIN philly_job_log j USING (jobid)
        WHERE a.start_time IS NOT NULL),
    pieces AS (
        SELECT jobid, d.ip AS machine_id, s, e,
               bit_or(coalesce(list_sum([1 << CAST(substr(g, 4) AS INTEGER) FOR g IN list_distinct(d.gpus)
                                         IF regexp_full_match(g, 'gpu[0-7]')]), 0)) AS mask
        FROM detail WHERE e > s GROUP BY jobid, attempt, d.ip, s, e),
    hours AS (
        SELECT jobid, machine_id, s, e, mask,
               unnest(range(CAST(floor(s / 3600) AS BIGINT), CAST(ceil(e / 3600) AS BIGINT))) AS h
        FROM pieces WHERE mask > 0),
    hourly AS (
        SELECT machine_id, CAST(floor(epoch(time) / 3600) AS BIGINT) AS h, {hourly_sums}
        FROM philly_gpu_util GROUP BY ALL),
    whole_hours AS (
        SELECT x.jobid,
               {_masked_sum_sql('x.mask', [f'coalesce(u.sum{k}, 0)' for k in range(8)])} AS util,
               {_masked_sum_sql('x.mask', [f'u.n{k}' for k in range(8)])} AS gpu_minutes
        FROM hours x JOIN hourly u USING (machine_id, h)
        WHERE x.h * 3600 >= x.s AND (x.h + 1) * 3600 <= x.e),
    part_hours AS (
        SELECT x.jobid,
               {_masked_sum_sql('x.mask', [f'coalesce(u.{c}, 0)' for c in PHILLY_GPU_COLUMNS])} AS util,
               {_masked_sum_sql('x.mask', [f'CAST(u.{c} IS NOT NULL AS INTEGER)' for c in PHILLY_GPU_COLUMNS])}
                   AS gpu_minutes
        FROM (SELECT * FROM hours WHERE NOT (h * 3600 >= s AND (h + 1) * 3600 <= e)) x
        JOIN (SELECT *, CAST(floor(epoch(time) / 3600) AS BIGINT) AS h FROM philly_gpu_util) u
          ON u.machine_id = x.machine_id AND u.h = x.h
        WHERE epoch(u.time) >= x.s AND epoch(u.time) < x.e)
    SELECT jobid AS job_id, CAST(sum(gpu_minutes) AS BIGINT) AS gpu_minutes,
           sum(util) / sum(gpu_minutes) AS gpu_util_pct
    FROM (SELECT * FROM whole_hours UNION ALL SELECT * FROM part_hours)
    GROUP BY jobid HAVING sum(gpu_minutes) > 0)"""


def philly_job_gpu_util(ctx: TraceContext) -> pl.DataFrame:
    """Per Philly job with GPU-minutes in the log: `job_id`, `gpu_bucket`, `state`,
    `gpu_minutes`, `gpu_util_pct` (`utilization.philly_job_gpu_util`)."""
    return ctx.query(f"""
        SELECT u.job_id, {GPU_BUCKET_SQL} AS gpu_bucket, j.state, u.gpu_minutes, u.gpu_util_pct
        FROM {philly_job_gpu_util_sql(ctx)} u LEFT JOIN {ctx.jobs} j USING (job_id)
        ORDER BY u.job_id""")


def job_util_by(ctx: TraceContext, jobs: str, column: str) -> pl.DataFrame:
    """Per `column` of the per-job FROM item `jobs` (as `philly_job_gpu_util` gives): `jobs`,
    quantiles and mean of the jobs' utilisation, its mean over GPU-minutes
    (`gpu_minute_mean_gpu_util_pct`) and the `gpu_minutes`."""
    frame = ctx.query(f"""
        SELECT {column}, {quantile_columns_sql('gpu_util_pct', suffix='_gpu_util_pct')},
               sum(gpu_util_pct * gpu_minutes) / sum(gpu_minutes) AS gpu_minute_mean_gpu_util_pct,
               CAST(sum(gpu_minutes) AS BIGINT) AS gpu_minutes
        FROM {jobs} GROUP BY {column} ORDER BY {column}""").rename({"jobs_with_value": "jobs"})
    return sort_buckets(frame) if column == "gpu_bucket" else frame


def _measured(ctx: TraceContext, result: ModuleResult) -> None:
    if not ctx.has("philly_gpu_util"):
        result.skip("measured GPU utilisation", "the catalog lacks philly_gpu_util")
        return
    counts = philly_gpu_minute_counts(ctx)
    with registered(ctx, counts, "gpu_minute_counts") as name:
        quantiles = quantiles_from_counts(ctx, name, (0.5, 0.9, 0.99))
        summary = add_measured_summary(result, [ctx.query(f"""
            SELECT 'philly_gpu_minute_util' AS measure, 'GPU-minute' AS row,
                   CAST(coalesce(sum(n), 0) AS BIGINT) AS values, sum(value * n) / sum(n) AS mean_pct,
                   CAST({sql_float(quantiles.get(0.5))} AS DOUBLE) AS p50_pct,
                   CAST({sql_float(quantiles.get(0.9))} AS DOUBLE) AS p90_pct,
                   CAST({sql_float(quantiles.get(0.99))} AS DOUBLE) AS p99_pct,
                   CAST(coalesce(sum(n) FILTER (WHERE value > 100), 0) AS BIGINT) AS above_100
            FROM {name}""")])
    result.add("philly_gpu_minute_util_cdf", philly_gpu_minute_util_cdf(ctx, counts),
               ("utilization.philly_gpu_minute_util", CDF_STEP), "a probability of the CDF over GPU-minutes")
    row = summary.filter(pl.col("measure") == "philly_gpu_minute_util").row(0, named=True)
    result.add_finding("philly_gpu_minute_util_p50", "median measured GPU utilisation over GPU-minutes",
                       row["p50_pct"], "%", "utilization.philly_gpu_minute_util", f"{row['values']:,} GPU-minutes",
                       basis=row["values"])
    _philly_jobs(ctx, result)


def _philly_jobs(ctx: TraceContext, result: ModuleResult) -> None:
    if not ctx.has("philly_attempts", "philly_job_log"):
        result.skip("Philly GPU utilisation per job", "philly_job_log is not ingested")
        return
    jobs = philly_job_gpu_util(ctx)
    defs = ("utilization.philly_job_gpu_util",)
    with registered(ctx, jobs, "philly_jobs") as name:
        cdf = cdf_table(ctx, "gpu_util_pct", name).rename({"value": "gpu_util_pct", "rows": "jobs"})
        median = ctx.one_row(f"SELECT quantile_cont(gpu_util_pct, 0.5) AS p50 FROM {name}")["p50"]
        by_size = job_util_by(ctx, name, "gpu_bucket")
        by_state = job_util_by(ctx, name, "state")
    result.add("philly_job_gpu_util_cdf", cdf, defs + (CDF_STEP,),
               "a probability of the CDF over jobs with GPU-minutes")
    result.add("philly_job_gpu_util_by_size", by_size, defs + ("gpu_request.bucket",), "a GPU-request bucket")
    result.add("philly_job_gpu_util_by_state", by_state, defs + ("state.canonical",), "a final state")
    if median is not None:
        population, alternative = f"{jobs.height:,} jobs with GPU-minutes in the log", ""
        open_attempts = 0 if ctx.holds_open("attempt") else ctx.one_row(
            "SELECT count(*) AS n FROM philly_attempts WHERE running_at_trace_end AND start_time IS NOT NULL")["n"]
        if open_attempts:
            with ctx.holding_open("attempt"):
                held = ctx.one_row(f"SELECT quantile_cont(gpu_util_pct, 0.5) AS p50 "
                                   f"FROM {philly_job_gpu_util_sql(ctx)}")["p50"]
            alternative = held_to_end_text(held, "%", open_attempts, "attempt")
            population += f" (last attempts with no recorded end left out: {open_attempts:,})"
        result.add_finding(
            "philly_job_gpu_util_p50", "median of jobs' mean measured GPU utilisation", median, "%",
            "utilization.philly_job_gpu_util", population, alternative, basis=jobs.height)


PARTS: tuple[TracePart, ...] = (
    TracePart("utilization", "measured", "GPU utilisation measured per GPU-minute and per job",
              "a per-minute GPU utilisation log", _measured),
)

#: How the tables of these parts are drawn in reports.
CHARTS: tuple[ChartSpec, ...] = (
    ChartSpec("utilization", "philly_gpu_minute_util_cdf", "cdf",
              "Measured GPU utilisation per GPU-minute, Philly (CDF)", "GPU utilisation (%)",
              "share of GPU-minutes at or below x (%)", (("gpu_util_pct", "GPU-minutes"),),
              y_percent=True, compare_where=()),
    ChartSpec("utilization", "philly_job_gpu_util_cdf", "cdf",
              "Mean measured GPU utilisation per job, Philly (CDF)", "GPU utilisation (%)",
              "share of jobs at or below x (%)", (("gpu_util_pct", "jobs"),), y_percent=True,
              compare_where=()),
)
