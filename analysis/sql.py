"""SQL building blocks shared by the analysis modules: job-size buckets, GPU-time, quantiles, CDFs
and local time. Each block is the one place its definition is written in SQL."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.analysis.fast import cdf as fast_cdf
from ddlx.datasets.sqltext import written_decimal
from ddlx.datasets.timezones import wall_clock_from_utc_sql

#: Jobs by GPUs requested (definition `gpu_request.bucket`), and the order buckets are shown in.
GPU_BUCKET_SQL = """CASE
    WHEN num_gpus IS NULL THEN 'unknown'
    WHEN num_gpus = 0 THEN '0'
    WHEN num_gpus < 1 THEN '(0,1)'
    WHEN num_gpus = 1 THEN '1'
    WHEN num_gpus <= 2 THEN '(1,2]'
    WHEN num_gpus <= 4 THEN '(2,4]'
    WHEN num_gpus <= 8 THEN '(4,8]'
    ELSE '>8' END"""
GPU_BUCKET_ORDER: tuple[str, ...] = ("0", "(0,1)", "1", "(1,2]", "(2,4]", "(4,8]", ">8", "unknown")

#: GPU-hours of a job (definition `gpu_time.request_x_runtime`); 0 without a run time.
GPU_HOURS_SQL = "coalesce(num_gpus * CASE WHEN run_s >= 0 THEN run_s END, 0) / 3600.0"

#: Probabilities at which a CDF table gives the value (0.1 % steps at the tails would be too
#: many rows for a report; these resolve the body and both tails).
CDF_PROBABILITIES: tuple[float, ...] = tuple(sorted(
    {i / 100 for i in range(0, 101)} | {0.001, 0.005, 0.995, 0.999}))

#: The definition every CDF table lists: the empirical CDF as steps through the values themselves.
CDF_STEP = "stat.cdf_step"

#: Microseconds in a second, and millionths of a GPU: the units of the sweeps' whole numbers.
MICRO = 1_000_000

#: Quantiles reported in summary tables.
SUMMARY_QUANTILES: dict[str, float] = {"p50": 0.5, "p90": 0.9, "p99": 0.99}


def sql_float(value: float | None) -> str:
    """A float as a SQL literal (NULL for None)."""
    return "NULL" if value is None else repr(float(value))


def double_list_sql(values: Sequence[float]) -> str:
    """A DOUBLE[] literal (DuckDB reads a bare `0.5` as a DECIMAL)."""
    return "[" + ", ".join(repr(float(v)) for v in values) + "]::DOUBLE[]"


#: Slack on `count * probability` before it is rounded up to a rank, so a grid probability written
#: in decimals (0.56 of 25 values is 14 of them) is not pushed past a rank by binary rounding.
_RANK_SLACK = 1e-9


def quantiles_from_counts_sql(probs: str, curves: str, keys: Sequence[str], count: str,
                              value: str = "value") -> str:
    """SELECT: quantiles of distributions held as cumulative counts, one distribution per value of
    `keys` (NULL keys are a group of their own).

    `probs` is a FROM item with `keys`, `probability` and `{count}` (values in the distribution);
    `curves` one with `keys`, `{value}` and `cum` (values at or below it; one row per distinct value
    that occurs). Rows: every column of `probs` and, with n values sorted x_0..x_(n-1),
    - `quantile`, the continuous quantile (definition `stat.quantile`): for h = (n - 1) p,
      x_floor(h) + (h - floor(h)) (x_ceil(h) - x_floor(h)), as DuckDB's quantile_cont;
    - `step_quantile`, the empirical CDF's inverse (definition `stat.cdf_step`): the smallest x_k
      with at least a share p of the values at or below it, k = max(ceil(n p) - 1, 0).
    """
    def on(left: str) -> str:
        return "".join(f"{left}.{k} IS NOT DISTINCT FROM c.{k} AND " for k in keys)

    return f"""
        SELECT * EXCLUDE (h, k, x0, x1), x0 + (h - floor(h)) * (x1 - x0) AS quantile FROM (
            SELECT hi.*, c.{value} AS step_quantile FROM (
                SELECT lo.*, c.{value} AS x1 FROM (
                    SELECT p.*, c.{value} AS x0 FROM (
                        SELECT *, ({count} - 1) * probability AS h,
                               greatest(ceil({count} * probability - {_RANK_SLACK}) - 1, 0) AS k
                        FROM {probs}) AS p
                    ASOF LEFT JOIN {curves} AS c ON {on("p")}floor(p.h) < c.cum) AS lo
                ASOF LEFT JOIN {curves} AS c ON {on("lo")}ceil(lo.h) < c.cum) AS hi
            ASOF LEFT JOIN {curves} AS c ON {on("hi")}hi.k < c.cum)"""


def _quantiles_of_counts(ctx: TraceContext, counts: str, groups: Sequence[str], probabilities: Sequence[float],
                         column: str) -> pl.DataFrame:
    """Per group of `counts` (a FROM item of the `groups` columns, `value` and `n`, how many times
    the value occurs) and probability: the group columns, `probability`, `value` (the `column`
    of `quantiles_from_counts_sql`) and `rows` (values in the group), sorted by group and probability."""
    select_groups = "".join(f"{g}, " for g in groups)
    partition = f"PARTITION BY {', '.join(groups)} " if groups else ""
    return ctx.query(f"""
        WITH c AS (SELECT {select_groups}value, sum(n) AS n FROM {counts} WHERE value IS NOT NULL GROUP BY ALL),
        curve AS (SELECT {select_groups}value, sum(n) OVER ({partition}ORDER BY value ROWS UNBOUNDED PRECEDING) AS cum
                  FROM c),
        probs AS (SELECT *, unnest({double_list_sql(probabilities)}) AS probability
                  FROM (SELECT {select_groups}CAST(sum(n) AS BIGINT) AS rows FROM c GROUP BY ALL) WHERE rows > 0),
        q AS ({quantiles_from_counts_sql("probs", "curve", groups, "rows")})
        SELECT {select_groups}probability, {column} AS value, rows FROM q
        ORDER BY {select_groups}probability""")


def cdf_from_counts(ctx: TraceContext, counts: str, groups: Sequence[str] = (),
                    probabilities: Sequence[float] = CDF_PROBABILITIES) -> pl.DataFrame:
    """The empirical CDF (definition `stat.cdf_step`) of distributions given as counts: `counts`
    is a FROM item of the `groups` columns, `value` and `n` (how many times it occurs), so the
    values need not be held one by one (samples of hundreds of millions). Rows as `cdf_table`."""
    return _quantiles_of_counts(ctx, counts, groups, probabilities, "step_quantile")


def quantiles_from_counts(ctx: TraceContext, counts: str, probabilities: Sequence[float]) -> dict[float, float]:
    """Continuous quantiles (definition `stat.quantile`) of a distribution given as counts (as in
    `cdf_from_counts`): {probability: value}; empty without values."""
    frame = _quantiles_of_counts(ctx, counts, (), probabilities, "quantile")
    return dict(frame.select("probability", "value").iter_rows())


def sort_buckets(frame: pl.DataFrame, column: str = "gpu_bucket") -> pl.DataFrame:
    """`frame` with its GPU-bucket `column` in `GPU_BUCKET_ORDER` (stable for other columns)."""
    order = {label: i for i, label in enumerate(GPU_BUCKET_ORDER)}
    return frame.sort(pl.col(column).replace_strict(order, default=len(order), return_dtype=pl.Int32),
                      maintain_order=True)


def local_time_sql(ctx: TraceContext, column: str) -> str:
    """The wall clock (TIMESTAMP) of the instant `column` in the trace's local zone."""
    return wall_clock_from_utc_sql(column, ctx.local_tz)


def quantiles_sql(value: str, quantiles: dict[str, float], suffix: str = "", prefix: str = "") -> str:
    """`<prefix><name><suffix>` columns for a SELECT list: the continuous quantiles (definition
    `stat.quantile`) of `value`, from one list quantile, `quantile_cont(value, [q, ...])[i]`, which
    DuckDB computes once for all of them. A quantile holds the values of its group in memory, so one
    list instead of one quantile per column keeps one copy of them, not one per column."""
    probabilities = double_list_sql(list(quantiles.values()))
    return ", ".join(f"quantile_cont({value}, {probabilities})[{index}] AS {prefix}{name}{suffix}"
                     for index, name in enumerate(quantiles, start=1))


def quantile_columns_sql(value: str, quantiles: dict[str, float] | None = None, suffix: str = "") -> str:
    """`count(value) AS n, quantile_cont(...) AS p50<suffix>, ...` for a SELECT list."""
    return ", ".join([f"count({value}) AS jobs_with_value",
                      quantiles_sql(value, quantiles or SUMMARY_QUANTILES, suffix), f"avg({value}) AS mean{suffix}"])


def decimal_list_sql(values: Sequence[float]) -> str:
    """A DECIMAL[] literal of the shortest decimal spelling of each value, which DuckDB's quantiles
    take in exact integer arithmetic (0.56 of 25 values is 14 of them, not a hair more)."""
    return "[" + ", ".join(format(written_decimal(v), "f") for v in values) + "]"


def cdf_table(ctx: TraceContext, value: str, source: str, groups: Sequence[str] = (),
              where: str = "TRUE", probabilities: Sequence[float] = CDF_PROBABILITIES) -> pl.DataFrame:
    """The empirical CDF (definition `stat.cdf_step`) of `value` over the rows of `source` (a FROM
    item) per `groups` (NULL keys are a group of their own).

    Tidy rows: the group columns, `probability`, `value` (the smallest value that at least that
    share of the rows are at or below: always a value the rows hold) and `rows` (rows with a value
    in the group), sorted by group and probability. Groups without a value have no rows.

    For n values sorted x_0..x_(n-1), the value at p is x_k with k = max(ceil(n p), 1) - 1, p read
    as the decimal it is written as: the discrete list quantile of DuckDB at DECIMAL p, which
    defines the result (`_cdf_table_sql`; `ddlx.analysis.fast.cdf` gives its rows faster).
    Distributions too large to hold are given as counts to `cdf_from_counts`.
    """
    select_groups = "".join(f"{g}, " for g in groups)
    rows_sql = f"SELECT {select_groups}{value} AS value FROM {source} WHERE ({where}) AND {value} IS NOT NULL"
    defining = _cdf_table_sql(rows_sql, groups, probabilities)

    def compute() -> pl.DataFrame:
        found = fast_cdf.sorted_cdf(ctx, rows_sql, groups, probabilities)
        return ctx.query(defining) if found is None else found

    return ctx.catalog.computed(defining, compute)


def _cdf_table_sql(rows_sql: str, groups: Sequence[str], probabilities: Sequence[float]) -> str:
    """The query that defines `cdf_table` over `rows_sql` (the group columns and `value`)."""
    select_groups = "".join(f"{g}, " for g in groups)
    group_by = f"GROUP BY {', '.join(groups)}" if groups else ""
    return f"""
        SELECT {select_groups}unnest({double_list_sql(probabilities)}) AS probability,
               unnest(quantiles) AS value, rows FROM (
            SELECT {select_groups}quantile_disc(value, {decimal_list_sql(probabilities)}) AS quantiles,
                   count(*) AS rows
            FROM ({rows_sql}) {group_by} HAVING count(*) > 0)
        ORDER BY {select_groups}probability"""


def trace_end_sql(ctx: TraceContext) -> str:
    """A scalar subquery: the trace end, the last instant any job of the trace records (UTC).

    Jobs still running are censored here (their run so far ends at the trace end)."""
    return f"(SELECT max(greatest(submit_time, start_time, end_time)) FROM {ctx.jobs})"


def allocated_jobs_where(ctx: TraceContext, where: str = "TRUE") -> str:
    """The condition on `jobs` of a job that holds GPUs (definition `utilization.allocated_gpus`): it
    started, asked for GPUs, and does not end before its start; one with no end holds its GPUs to
    the end of the trace, except in traces whose open jobs are unlogged ends
    (`ctx.holds_open("job")` False), where it is left out. `where` restricts it further."""
    placed = "" if ctx.holds_open("job") else " AND end_time IS NOT NULL"
    return (f"start_time IS NOT NULL{placed} AND (end_time IS NULL OR end_time >= start_time) AND num_gpus > 0 "
            f"AND ({where})")


def allocation_events_sql(ctx: TraceContext, groups: Sequence[str] = (), where: str = "TRUE",
                          with_ended: bool = False) -> str:
    """A FROM item: the changes of allocated GPUs (definition `utilization.allocated_gpus`).

    Rows: the `groups` columns of `jobs`, `t` (TIMESTAMPTZ) and `delta_gpus`: +num_gpus at the
    start_time of a job that holds GPUs (`allocated_jobs_where`), -num_gpus at its end_time;
    `with_ended`, also `ended`: whether the change's job has an end.
    """
    select_groups = "".join(f"{g}, " for g in groups)
    held = allocated_jobs_where(ctx, where)
    start_ended, end_ended = (", end_time IS NOT NULL AS ended", ", true AS ended") if with_ended else ("", "")
    return f"""(
        SELECT {select_groups}start_time AS t, num_gpus AS delta_gpus{start_ended} FROM {ctx.jobs} WHERE {held}
        UNION ALL
        SELECT {select_groups}end_time AS t, -num_gpus AS delta_gpus{end_ended} FROM {ctx.jobs}
        WHERE {held} AND end_time IS NOT NULL)"""
