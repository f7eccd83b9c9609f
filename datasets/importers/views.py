"""The canonical views an imported dataset publishes beyond its jobs.

- `gpu_allocations` (`ddlx.datasets.canonical.GPU_ALLOCATIONS`): which job held which GPU of which
  node, and when, from a Slurm export's `NodeList` and `GresDetail` columns (mapping keys
  `node_list` and `gres_detail`; preset `slurm` maps them when the columns are present). One row
  per job, node and GPU index, from the job's start to its end (NULL while it runs).

Rules
- Only job allocations are jobs: with preset `slurm` (`drop_job_steps`), rows whose job id holds a
  `.` (`123.batch`, `123.0`) are steps and give no rows; a job without a start (pending, cancelled
  before it started) held nothing and gives none.
- `NodeList` is a Slurm hostlist expression: comma-separated items, each a name or a name with one
  bracketed range list (`gpu[001-003,007]` is gpu001, gpu002, gpu003, gpu007; `n[8-11]-ib` keeps the
  suffix; a range keeps the zero padding of its first bound; `a1,b2` is two names). An item with
  two bracket groups (`r[1-2]n[1-2]`), a range whose end is below its start or that spans 100,000
  names or more, white space, or anything else (`None assigned`) is unreadable: the job gives no
  rows (`hostlist_sql`).
- `GresDetail` holds one entry per node, `;`-separated, in NodeList order (as `scontrol show job -d`
  prints the GRES of each node); in an entry, every `gpu[:type][:count](IDX:list)` names the GPU
  indices held on that node (`gpu:a100:4(IDX:0-3)` is 0, 1, 2, 3; `gpu:2(IDX:0,2)` is 0 and 2);
  other GRES (`mps`, licences) are not read (`gres_gpu_indices_sql`).
- Without GPU indices for a node (no GresDetail column or value, an entry without `IDX`, or a
  number of entries that is not the number of nodes), a job whose TRES gives it GPUs gets one row
  per node with `gpu` NULL: it claims the node, its GPUs are unknown. The analysis decides what
  such a row covers (`ddlx.analysis.gpu_efficiency`: all GPUs of the node when the job holds as
  many GPUs per node as the node shows in its samples; otherwise none is attributed, and counted).

Hostlists and index lists are read in SQL (DuckDB list functions), so the view is computed where
the catalog is queried; `expand_hostlist` and `gres_gpu_indices` run the same SQL on one value,
for library users and tests.
"""

from __future__ import annotations

from typing import Any

import duckdb

from ddlx.datasets.importers.spec import ImportSpec
from ddlx.datasets.sqltext import quote_identifier, sql_string

#: Mapping keys an import reads the GPU allocations from.
NODE_LIST_KEY = "node_list"
GRES_DETAIL_KEY = "gres_detail"

#: A range of a hostlist or index list may span fewer than this many values.
MAX_RANGE = 100_000

# One hostlist item: a name without brackets, or a name with one bracketed list of numbers and ranges.
_RANGES = r"[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*"
_ITEM = rf"[^,\[\]\s]*\[{_RANGES}\][^,\[\]\s]*|[^,\[\]\s]+"
_HOSTLIST = rf"({_ITEM})(,({_ITEM}))*"


def _sql_re(pattern: str) -> str:
    return sql_string(pattern)


def _range_values(part: str, render: str) -> str:
    """SQL list of `render` (an expression of `i`) for each number of a range text `part` ("3" or
    "8-11"); [NULL] for a reversed or too long range."""
    low = f"TRY_CAST(split_part({part}, '-', 1) AS BIGINT)"
    high = f"TRY_CAST(CASE WHEN contains({part}, '-') THEN split_part({part}, '-', 2) ELSE {part} END AS BIGINT)"
    return (f"CASE WHEN {low} <= {high} AND {high} - {low} < {MAX_RANGE} "
            f"THEN [{render} FOR i IN range({low}, {high} + 1)] ELSE [NULL] END")


def _no_nulls(values: str) -> str:
    """`values` (a SQL list), or NULL when it holds a NULL."""
    return f"CASE WHEN list_count({values}) = len({values}) THEN {values} END"


def hostlist_sql(text: str) -> str:
    """SQL: the host names of a Slurm hostlist expression `text` (a VARCHAR expression), as
    VARCHAR[]; NULL when it is NULL or unreadable (see the module docstring)."""
    width = "CAST(length(split_part(r, '-', 1)) AS INTEGER)"
    digits = f"CASE WHEN length(CAST(i AS VARCHAR)) >= {width} THEN CAST(i AS VARCHAR) " \
             f"ELSE lpad(CAST(i AS VARCHAR), {width}, '0') END"
    prefix = r"regexp_extract(item, '^[^\[]*')"
    suffix = r"regexp_extract(item, '\]([^\]]*)$', 1)"
    inner = r"regexp_extract(item, '\[([^\]]*)\]', 1)"
    names = (f"flatten([CASE WHEN NOT contains(item, '[') THEN [item] ELSE "
             f"flatten([{_range_values('r', f'{prefix} || {digits} || {suffix}')} "
             f"FOR r IN string_split({inner}, ',')]) END "
             rf"FOR item IN regexp_extract_all({text}, '(?:[^,\[]|\[[^\]]*\])+')])")
    return (f"(CASE WHEN {text} IS NULL OR NOT regexp_full_match(trim({text}), {_sql_re(_HOSTLIST)}) THEN NULL "
            f"ELSE {_no_nulls(names)} END)")


def index_list_sql(text: str) -> str:
    """SQL: the numbers of an index list `text` (`0-3`, `0,2`, `1-2,5`) as INTEGER[]; NULL when
    it is NULL or unreadable."""
    values = f"flatten([{_range_values('r', 'CAST(i AS INTEGER)')} FOR r IN string_split(trim({text}), ',')])"
    return (f"(CASE WHEN {text} IS NULL OR NOT regexp_full_match(trim({text}), {_sql_re(_RANGES)}) THEN NULL "
            f"ELSE {_no_nulls(values)} END)")


#: One GPU entry of a node's GRES with its indices: gpu, optional :type and :count, (IDX:list).
_GPU_IDX = r"(?:^|,)gpu(?::[^:(),;]+)*\(IDX:([^)]*)\)"


def gres_gpu_indices_sql(entry: str) -> str:
    """SQL: the GPU indices one node's GresDetail `entry` names, as INTEGER[] (sorted, distinct);
    NULL when the entry names no GPU with indices or an index list is unreadable."""
    lists = f"regexp_extract_all(trim({entry}), {_sql_re(_GPU_IDX)}, 1)"
    parsed = f"[{index_list_sql('x')} FOR x IN {lists}]"
    return (f"(CASE WHEN {entry} IS NULL OR len({lists}) = 0 OR list_count({parsed}) < len({lists}) THEN NULL "
            f"ELSE list_sort(list_distinct(flatten({parsed}))) END)")


def _one_value(sql: str, value: str | None) -> Any:
    con = duckdb.connect()
    try:
        return con.execute(f"SELECT {sql.replace('$value', '$1')}", [value]).fetchall()[0][0]
    finally:
        con.close()


def expand_hostlist(text: str | None) -> list[str] | None:
    """The host names of a Slurm hostlist expression (`gpu[001-003,007]`); None when unreadable."""
    return _one_value(hostlist_sql("CAST($value AS VARCHAR)"), text)


def gres_gpu_indices(text: str | None) -> list[list[int] | None]:
    """The GPU indices of each node's entry of a GresDetail value (`;`-separated, NodeList order);
    None for an entry without readable GPU indices."""
    if text is None:
        return []
    return _one_value(f"[{gres_gpu_indices_sql('e')} FOR e IN string_split(CAST($value AS VARCHAR), ';')]", text)


def gpu_allocations_sql(spec: ImportSpec, raw: str, columns: set[str]) -> str | None:
    """The SELECT of the `gpu_allocations` view of the import `spec` whose raw table `raw` (a table
    expression) has `columns`; None when the import maps no node list, job id, start or end present
    in the table (then nothing says where and when a job held its GPUs)."""
    from ddlx.datasets.importers.reader import _Columns, cluster_sql, tres_sql

    cols = _Columns(spec, frozenset(columns))
    if any(cols.column(key) is None for key in (NODE_LIST_KEY, "job_id", "start", "end")):
        return None
    cluster = cluster_sql(spec, cols, raw)
    tres = cols.tres()
    gpus = tres_sql(tres)["gpus"] if tres else "CAST(NULL AS DOUBLE)"
    gres = cols.text(GRES_DETAIL_KEY)
    return f"""
WITH held AS (
    SELECT {cluster} AS cluster, {cols.text('job_id')} AS job_id, {cols.time('start')} AS start_time,
           {cols.time('end')} AS end_time, {hostlist_sql(cols.text(NODE_LIST_KEY))} AS hosts,
           CASE WHEN {gres} IS NULL THEN NULL ELSE string_split({gres}, ';') END AS entries,
           {gpus} AS gpus
    FROM {raw} AS r
    WHERE {cols.row_filter()}
),
nodes AS (
    SELECT cluster, job_id, start_time, end_time, gpus, unnest(hosts) AS host,
           unnest(CASE WHEN len(entries) = len(hosts) THEN entries ELSE [NULL FOR h IN hosts] END) AS entry
    FROM held WHERE start_time IS NOT NULL AND hosts IS NOT NULL AND job_id IS NOT NULL
),
indexed AS (SELECT *, {gres_gpu_indices_sql('entry')} AS indices FROM nodes)
SELECT cluster, job_id, host, unnest(indices) AS gpu, start_time, end_time FROM indexed WHERE indices IS NOT NULL
UNION ALL
SELECT cluster, job_id, host, CAST(NULL AS INTEGER) AS gpu, start_time, end_time FROM indexed
WHERE indices IS NULL AND coalesce(gpus, 0) > 0
"""


def canonical_views(spec: ImportSpec, columns: set[str]) -> dict[str, str]:
    """View name -> SELECT over the stored raw table of the import `spec` (whose raw table has
    `columns`), for the views the import can publish."""
    views: dict[str, str] = {}
    allocations = gpu_allocations_sql(spec, quote_identifier(spec.raw_table), columns)
    if allocations is not None:
        views["gpu_allocations"] = allocations
    return views
