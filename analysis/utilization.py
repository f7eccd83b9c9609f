"""Utilisation: GPUs allocated to jobs over time against the capacity the trace documents, with
the hour-of-week profile of allocation (`ddlx.analysis.allocation`), then measured GPU
utilisation and requests against usage where the trace records them.

The module `utilization` writes both parts: `analyze` adds allocation's tables and findings first
(`allocation.analyze_allocation`), then the trace's own measured-utilisation and request parts
(`ddlx.analysis.trace_parts`, slots `measured` and `requests`): traces measure utilisation with
different instruments (per instance lifetime, per machine, per GPU-minute), so each declares its
series; they share the `measured_gpu_util` summary table and the helpers below. Measured values are
percent of one GPU (or of one core, GB for memory) as the traces log them; shares of a request
are fractions.
"""

from __future__ import annotations

import polars as pl

from ddlx.analysis import allocation
from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.model import ModuleResult
from ddlx.analysis.sql import quantiles_sql
from ddlx.analysis.trace_parts import run_trace_parts
from ddlx.datasets.sqltext import sql_string

#: Allocation: ddlx.analysis.allocation is not an analysis module of its own (its results are this
#: module's), so `registry()` finds its definitions here; each trace declares its capacity's and its
#: measured series'.
DEFINITIONS: tuple[Definition, ...] = allocation.DEFINITIONS

#: The tables `ddlx datasets reduce` stores into the catalog (module table -> catalog table suffix).
CATALOG_TABLES = {"allocation_by_cluster": "allocation_by_cluster", "allocation_by_vc": "allocation_by_vc",
                  "allocation_by_gpu_type": "allocation_by_gpu_type"}


def series_summary_sql(measure: str, row: str, value: str, source: str) -> str:
    """One row of the `measured_gpu_util` table: the series `measure` (the name in its definition id),
    what one of its values is (`row`), and the count, mean, p50/p90/p99 and values above 100 of
    column `value` of the FROM item `source`."""
    return f"""SELECT {sql_string(measure)} AS measure, {sql_string(row)} AS row, count({value}) AS values,
               avg({value}) AS mean_pct, {quantiles_sql(value, {"p50": 0.5, "p90": 0.9, "p99": 0.99}, "_pct")},
               count(*) FILTER (WHERE {value} > 100) AS above_100
        FROM {source}"""


def add_measured_summary(result: ModuleResult, frames: list[pl.DataFrame]) -> pl.DataFrame:
    """Add the `measured_gpu_util` table, one row per measured series of the trace (rows of
    `series_summary_sql`), to `result`; returns it."""
    summary = pl.concat(frames, how="vertical_relaxed")
    for row in summary.to_dicts():
        result.add_check(f"{row['measure']}_above_100", "measured utilisation above 100 % (kept as the trace "
                         "gives it)", row["above_100"], row["values"], f"values ({row['row']})",
                         (f"{row['measure']}_p50",))
    return result.add("measured_gpu_util", summary, [f"utilization.{m}" for m in summary["measure"]],
                      "one measured-utilisation series of the trace")


def analyze(ctx: TraceContext) -> ModuleResult:
    result = ModuleResult("utilization")
    allocation.analyze_allocation(ctx, result)
    run_trace_parts(ctx, result, "measured",
                    ("measured GPU utilisation", "the trace records no measured GPU utilisation"))
    run_trace_parts(ctx, result, "requests",
                    ("requests against usage", "the trace records no per-task requests beside measured usage"))
    return result
