"""The GPU capacity a trace documents: how many GPUs its clusters, VCs or GPU types had, and when.

One tidy table, `gpu_capacity(ctx)`: `cluster, vc, gpu_type, valid_from, valid_to, gpus, source`,
read from the canonical `gpu_capacity` view the trace publishes (`ddlx.datasets.canonical`). A
dimension the source does not have is NULL; `valid_from`/`valid_to` (TIMESTAMPTZ, the interval
`[valid_from, valid_to)`) are NULL when the source gives one capacity for the whole trace.
`source` names where the rows come from; the trace declares the definition of each
(`capacity.<source>`) and which one shares of capacity are taken against (`preference` 1).

Traces that publish no capacity (imported tables, traces without machine or VC sizes) get an
empty table.
"""

from __future__ import annotations

import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.datasets.canonical import GPU_CAPACITY

#: The columns of the capacity table, with their types (an empty table keeps them).
CAPACITY_COLUMNS: dict[str, str] = {
    c.name: c.sql_type for c in GPU_CAPACITY.columns if c.name != "preference"}


def capacity_sources(ctx: TraceContext) -> list[str]:
    """The capacity sources the trace publishes, the preferred one first."""
    if not ctx.has_view(GPU_CAPACITY.name):
        return []
    frame = ctx.query(f"SELECT source FROM {GPU_CAPACITY.name} GROUP BY source ORDER BY min(preference), source")
    return frame["source"].to_list()


def gpu_capacity_sql(ctx: TraceContext, sources: list[str] | None = None) -> str:
    """A FROM item: the capacity rows of `sources` (default: every source the trace has), typed
    as `CAPACITY_COLUMNS`; no rows when there is none."""
    columns = ", ".join(CAPACITY_COLUMNS)
    chosen = capacity_sources(ctx) if sources is None else sources
    if not chosen:
        casts = ", ".join(f"CAST(NULL AS {kind}) AS {name}" for name, kind in CAPACITY_COLUMNS.items())
        return f"(SELECT {casts} WHERE false)"
    listed = ", ".join(f"'{source}'" for source in chosen)
    return f"(SELECT {columns} FROM {GPU_CAPACITY.name} WHERE source IN ({listed}))"


def gpu_capacity(ctx: TraceContext) -> pl.DataFrame:
    """The GPU capacity the trace documents (see the module docstring), sorted by source and keys."""
    return ctx.query(f"SELECT * FROM {gpu_capacity_sql(ctx)} "
                     f"ORDER BY source, cluster, vc, gpu_type, valid_from NULLS FIRST")
