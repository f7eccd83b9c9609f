"""The GPU capacity a trace documents: how many GPUs its clusters, VCs or GPU types had, and when.

One tidy table, `gpu_capacity(ctx)`: `cluster, vc, gpu_type, valid_from, valid_to, gpus, source`.
A dimension the source does not have is NULL; `valid_from`/`valid_to` (TIMESTAMPTZ, the interval
`[valid_from, valid_to)`) are NULL when the source gives one capacity for the whole trace.
`source` names where the rows come from; the definition of each is `capacity.<source>`:

- `pai_machine_spec` (PAI): GPUs per `gpu_type`, summed over machines;
- `helios_vc_capacity` (Helios): GPUs per cluster and VC, one row per day;
- `pai_v2023_nodes` (Alibaba v2023): GPUs per GPU model, from one node list;
- `philly_machine_list` and `philly_gpu_util` (Philly): GPUs by the machine list, and GPUs seen
  in the utilisation log (two views of the same cluster that disagree: both are reported).

Traces with none of these (Acme, imported tables) get an empty table.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.datasets.sqltext import sql_string
from ddlx.datasets.traces.philly.reader import GPUS_SEEN_SQL

#: Capacity sources in order of preference: where a trace has several, shares of capacity are
#: taken against the first one present (Philly's machine list is known to under-count its GPUs).
SOURCE_PREFERENCE: tuple[str, ...] = (
    "helios_vc_capacity", "pai_machine_spec", "pai_v2023_nodes", "philly_gpu_util", "philly_machine_list",
)

CAPACITY_DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "capacity.pai_machine_spec", "GPU capacity, PAI machine list", "GPUs",
        "PAI: GPUs of each gpu_type, the sum of cap_gpu over the machines of pai_machine_spec with "
        "cap_gpu > 0 (CPU-only machines left out); one capacity for the whole trace, no VC.",
    ),
    Definition(
        "capacity.helios_vc_capacity", "GPU capacity, Helios VCs per day", "GPUs",
        "Helios: GPUs of each VC of each cluster on each day, as cluster_gpu_number.csv gives them "
        "(helios_vc_capacity; empty cells left out). A day runs from local midnight (Asia/Shanghai) "
        "to the next; the capacity of a cluster on a day is the sum over its VCs.",
    ),
    Definition(
        "capacity.pai_v2023_nodes", "GPU capacity, Alibaba v2023 nodes", "GPUs",
        "Alibaba v2023: GPUs of each GPU model, the sum of gpu over the nodes of one node list: "
        "all_node when ingested, else gpu_node (the two lists hold the same GPU nodes under other "
        "names, so only one is counted). One capacity for the whole trace.",
    ),
    Definition(
        "capacity.philly_machine_list", "GPU capacity, Philly machine list", "GPUs",
        "Philly: the sum of 'number of GPUs' over the machines of cluster_machine_list "
        "(philly_machine_list). Known to under-count: some machines show more GPUs in the "
        "utilisation log. One capacity for the whole trace, no VC (the trace gives no VC sizes).",
    ),
    Definition(
        "capacity.philly_gpu_util", "GPU capacity, GPUs seen in the Philly utilisation log", "GPUs",
        "Philly: for each machine of cluster_gpu_util (philly_gpu_util), the most GPU fields with a "
        "number (neither NA nor empty) in any one of its per-minute rows, summed over machines. "
        "Preferred over the machine list for shares of capacity. One capacity for the whole trace, "
        "no VC.",
    ),
)

#: The columns of the capacity table, with their types (an empty table keeps them).
CAPACITY_COLUMNS: dict[str, str] = {
    "cluster": "VARCHAR", "vc": "VARCHAR", "gpu_type": "VARCHAR", "valid_from": "TIMESTAMPTZ",
    "valid_to": "TIMESTAMPTZ", "gpus": "BIGINT", "source": "VARCHAR",
}


def _only_cluster(ctx: TraceContext) -> str:
    """A scalar subquery: the cluster of a one-cluster trace (as its canonical jobs name it)."""
    return f"(SELECT min(cluster) FROM {ctx.jobs})"


def _pai_machine_spec(ctx: TraceContext) -> str:
    return f"""
        SELECT {_only_cluster(ctx)} AS cluster, NULL AS vc, gpu_type, NULL AS valid_from, NULL AS valid_to,
               sum(cap_gpu) AS gpus, 'pai_machine_spec' AS source
        FROM pai_machine_spec WHERE cap_gpu > 0 GROUP BY gpu_type"""


def _helios_vc_capacity(ctx: TraceContext) -> str:
    zone = sql_string(ctx.local_tz)
    return f"""
        SELECT cluster, vc, NULL AS gpu_type,
               timezone({zone}, CAST(date AS TIMESTAMP)) AS valid_from,
               timezone({zone}, CAST(date + 1 AS TIMESTAMP)) AS valid_to,
               gpus, 'helios_vc_capacity' AS source
        FROM helios_vc_capacity WHERE gpus IS NOT NULL"""


#: The v2023 node list capacity is counted from: all_node when ingested, else the other one.
_V2023_NODE_LIST = ("(SELECT CASE WHEN bool_or(node_list = 'all_node') THEN 'all_node' ELSE min(node_list) END "
                    "FROM pai_v2023_nodes)")


def _pai_v2023_nodes(ctx: TraceContext) -> str:
    return f"""
        SELECT {_only_cluster(ctx)} AS cluster, NULL AS vc, model AS gpu_type, NULL AS valid_from,
               NULL AS valid_to, sum(gpu) AS gpus, 'pai_v2023_nodes' AS source
        FROM pai_v2023_nodes WHERE node_list = {_V2023_NODE_LIST} AND gpu > 0 GROUP BY model"""


def _philly_machine_list(ctx: TraceContext) -> str:
    return f"""
        SELECT {_only_cluster(ctx)} AS cluster, NULL AS vc, NULL AS gpu_type, NULL AS valid_from,
               NULL AS valid_to, sum(num_gpus) AS gpus, 'philly_machine_list' AS source
        FROM philly_machine_list HAVING count(*) > 0"""


def _philly_gpu_util(ctx: TraceContext) -> str:
    return f"""
        SELECT {_only_cluster(ctx)} AS cluster, NULL AS vc, NULL AS gpu_type, NULL AS valid_from,
               NULL AS valid_to, sum(gpus) AS gpus, 'philly_gpu_util' AS source
        FROM {GPUS_SEEN_SQL} HAVING count(*) > 0"""


#: Source name -> (the catalog table it reads, the SELECT of its capacity rows).
_SOURCES: dict[str, tuple[str, Callable[[TraceContext], str]]] = {
    "pai_machine_spec": ("pai_machine_spec", _pai_machine_spec),
    "helios_vc_capacity": ("helios_vc_capacity", _helios_vc_capacity),
    "pai_v2023_nodes": ("pai_v2023_nodes", _pai_v2023_nodes),
    "philly_machine_list": ("philly_machine_list", _philly_machine_list),
    "philly_gpu_util": ("philly_gpu_util", _philly_gpu_util),
}


def capacity_sources(ctx: TraceContext) -> list[str]:
    """The capacity sources whose table this trace has, in order of preference."""
    return [s for s in SOURCE_PREFERENCE if ctx.has(_SOURCES[s][0])]


def gpu_capacity_sql(ctx: TraceContext, sources: list[str] | None = None) -> str:
    """A FROM item: the capacity rows of `sources` (default: every source the trace has), typed
    as `CAPACITY_COLUMNS`; no rows when there is none."""
    chosen = capacity_sources(ctx) if sources is None else sources
    casts = ", ".join(f"CAST({name} AS {kind}) AS {name}" for name, kind in CAPACITY_COLUMNS.items())
    parts = [f"SELECT {casts} FROM ({_SOURCES[s][1](ctx)})" for s in chosen]
    if not parts:
        parts = [f"SELECT {casts} FROM (SELECT {', '.join(f'NULL AS {n}' for n in CAPACITY_COLUMNS)}) WHERE false"]
    return "(" + "\nUNION ALL\n".join(parts) + ")"


def gpu_capacity(ctx: TraceContext) -> pl.DataFrame:
    """The GPU capacity the trace documents (see the module docstring), sorted by source and keys."""
    return ctx.query(f"SELECT * FROM {gpu_capacity_sql(ctx)} "
                     f"ORDER BY source, cluster, vc, gpu_type, valid_from NULLS FIRST")
