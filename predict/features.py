"""Features of a job known at its submission, computed in DuckDB SQL over canonical job rows.

One SQL query (`features_sql`) turns job rows into one feature row per job. It runs on a trace of
the catalog (`trace_features`, training and `ddlx predict apply`) and on a job frame a caller hands
over (`frame_features`, `Predictor.predict`), so both see the same definitions.

What a feature may use: the job's own request (user, VC, group, GPU type, GPUs, CPUs, memory,
instances), its submission instant read on the trace's local wall clock, and the history of the
jobs of the same user or the same group that ENDED STRICTLY BEFORE the job was submitted. A job
that ends at the very instant another is submitted is not in that job's history. Nothing else of
the future (later jobs, the job's own start, end or state) enters a feature.

History (definition `predict.history`, for the key `user` and the key `group`)
- The jobs counted are the key's "finished" jobs: jobs with a target (`has_target`, below) whose
  end_time is strictly before the submit_time of the job being described. Keys are scoped by
  cluster: (cluster, user) and (cluster, group).
- `count`: how many such jobs; 0 when there are none or the job has no key (user or group NULL).
- `median_s`: the exact median of their run times (s), over ALL of the key's finished jobs so far
  (a running median, not a window): with n values sorted x_1..x_n, x_((n+1)/2) for odd n and the
  mean of the two middle values for even n. NULL when count is 0.
- `last_s`: the run time (s) of the one of them that ended last; among jobs ending at the same
  instant, the longest. NULL when count is 0.

Target (definition `predict.target`): run_s (`runtime.first_start_to_last_end`) of jobs with a
start, an end after their submission, and run_s > 0. Other jobs get features and predictions but
are neither trained nor scored on, and are not anyone's history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb
import polars as pl

from ddlx.datasets.catalog import without_progress_bar
from ddlx.datasets.sqltext import quote_identifier
from ddlx.datasets.timezones import wall_clock_from_utc_sql
from ddlx.errors import DdlxError, first_line

#: Bumped whenever a feature's definition changes; a model card of another version is refused.
FEATURE_VERSION = 1


class PredictError(DdlxError):
    """Bad input to the predictors (a job frame without the needed columns, a trace too small to split)."""


@dataclass(frozen=True)
class Feature:
    """One model input: name, kind (`categorical` or `numeric`), unit and exact definition."""

    name: str
    kind: str
    unit: str
    definition: str


CATEGORICAL = "categorical"
NUMERIC = "numeric"

FEATURES: tuple[Feature, ...] = (
    Feature("cluster", CATEGORICAL, "", "the job's cluster within the trace"),
    Feature("user", CATEGORICAL, "", "the submitting user"),
    Feature("vc", CATEGORICAL, "", "the virtual cluster or queue"),
    Feature("group", CATEGORICAL, "",
            "the recurring-job key: 'g:' + job_group where the job has one, else 'n:' + job_name, else NULL"),
    Feature("gpu_type", CATEGORICAL, "", "the GPU model asked for (NULL when none or unknown)"),
    Feature("num_gpus", NUMERIC, "GPUs", "GPUs requested by the whole job (fractions allowed)"),
    Feature("num_cpus", NUMERIC, "cores", "CPU cores requested by the whole job"),
    Feature("mem_gb", NUMERIC, "GB", "main memory requested by the whole job"),
    Feature("num_instances", NUMERIC, "instances", "instances, pods or nodes the job asked for"),
    Feature("submit_hour", NUMERIC, "hour",
            "hour of day (0-23) of submit_time on the trace's local wall clock (source_tz); "
            "left out for traces without a wall clock"),
    Feature("submit_weekday", NUMERIC, "ISO weekday",
            "ISO weekday (1 = Monday .. 7 = Sunday) of submit_time on the trace's local wall clock; "
            "left out for traces without a wall clock"),
    Feature("user_hist_count", NUMERIC, "jobs",
            "count of the same (cluster, user)'s finished jobs that ended strictly before this job's "
            "submit_time (predict.history); 0 without history"),
    Feature("user_hist_median_s", NUMERIC, "s",
            "exact median run time of all those jobs (running median over the whole history); NULL without history"),
    Feature("user_hist_last_s", NUMERIC, "s",
            "run time of the one of those jobs that ended last (ties: the longest); NULL without history"),
    Feature("group_hist_count", NUMERIC, "jobs",
            "as user_hist_count for the same (cluster, group)"),
    Feature("group_hist_median_s", NUMERIC, "s", "as user_hist_median_s for the same (cluster, group)"),
    Feature("group_hist_last_s", NUMERIC, "s", "as user_hist_last_s for the same (cluster, group)"),
)

FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in FEATURES)
CATEGORICAL_NAMES: tuple[str, ...] = tuple(f.name for f in FEATURES if f.kind == CATEGORICAL)
WALL_CLOCK_FEATURES: tuple[str, ...] = ("submit_hour", "submit_weekday")

HISTORY_DEFINITION = (
    "predict.history: for a job J and a key (cluster + user, or cluster + group), the key's jobs "
    "with a target whose end_time < J.submit_time (strictly: a job ending exactly when J is "
    "submitted is excluded). count = their number (0 if none or J has no key); median_s = the "
    "exact median of their run_s over the whole history (mean of the two middle values for an "
    "even count); last_s = run_s of the one that ended last (ties on end_time: the longest)."
)
TARGET_DEFINITION = (
    "predict.target: run_s (runtime.first_start_to_last_end, seconds) of jobs with a start_time, "
    "an end_time after their submit_time and run_s > 0; models learn log1p(run_s)."
)

#: Why a job has no target, in the order the reasons are tested (the first that applies counts).
EXCLUSION_REASONS: tuple[tuple[str, str], ...] = (
    ("never_started", "start_time IS NULL"),
    ("no_end", "end_time IS NULL"),
    ("no_run_time", "run_s IS NULL"),
    ("run_time_not_positive", "run_s <= 0"),
    ("ends_not_after_submit", "end_time <= submit_time"),
)

#: Canonical job columns the features read, with the DuckDB type each is cast to.
INPUT_COLUMNS: dict[str, str] = {
    "cluster": "VARCHAR", "job_id": "VARCHAR", "user": "VARCHAR", "vc": "VARCHAR", "job_group": "VARCHAR",
    "job_name": "VARCHAR", "gpu_type": "VARCHAR", "submit_time": "TIMESTAMPTZ", "start_time": "TIMESTAMPTZ",
    "end_time": "TIMESTAMPTZ", "run_s": "DOUBLE", "num_gpus": "DOUBLE", "num_cpus": "DOUBLE", "mem_gb": "DOUBLE",
    "num_instances": "DOUBLE",
}
#: Columns a job frame handed to `frame_features` must have; the others are NULL when absent.
REQUIRED_COLUMNS: tuple[str, ...] = ("job_id", "submit_time")

HAS_TARGET_SQL = ("(start_time IS NOT NULL AND end_time IS NOT NULL AND run_s IS NOT NULL AND run_s > 0 "
                  "AND end_time > submit_time)")


def _history_sql(key: str) -> str:
    """A FROM item: per (cluster, key value, end instant), the key's history up to that instant.

    Rows are the finished jobs ordered by (end_time, run_s); running count and running median over
    all rows so far; only the last row of each end instant is kept (the next row ends later), so an
    ASOF match on end_time sees every job that ended at that instant.
    """
    order = f"PARTITION BY cluster, {key} ORDER BY end_time, run_s"
    return f"""(
        SELECT cluster, {key} AS key_value, end_time,
               count(*) OVER running AS hist_count,
               median(run_s) OVER running AS hist_median_s,
               run_s AS hist_last_s,
               lead(end_time) OVER ordered AS next_end_time
        FROM finished WHERE {key} IS NOT NULL
        WINDOW running AS ({order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), ordered AS ({order})
        QUALIFY next_end_time IS NULL OR next_end_time <> end_time)"""


def features_sql(source: str, zone: str | None) -> str:
    """SELECT of one feature row per job of `source` (a FROM item with `_row` and `INPUT_COLUMNS`).

    Output columns: `_row`, `cluster`, `job_id`, `submit_time`, `run_s`, `has_target`, then
    `FEATURE_NAMES` (hour and weekday NULL when `zone` is None), ordered by `_row`.
    """
    if zone is None:
        hour, weekday = "CAST(NULL AS BIGINT)", "CAST(NULL AS BIGINT)"
    else:
        local = wall_clock_from_utc_sql("s.submit_time", zone)
        hour, weekday = f"hour({local})", f"isodow({local})"
    return f"""
    WITH src AS (
        SELECT _row, coalesce(cluster, '') AS cluster, job_id, "user", vc, gpu_type,
               CASE WHEN job_group IS NOT NULL THEN 'g:' || job_group
                    WHEN job_name IS NOT NULL THEN 'n:' || job_name END AS "group",
               submit_time, start_time, end_time, run_s, num_gpus, num_cpus, mem_gb, num_instances,
               coalesce({HAS_TARGET_SQL}, false) AS has_target
        FROM {source}),
    finished AS (SELECT cluster, "user", "group", end_time, run_s FROM src WHERE has_target),
    user_history AS {_history_sql('"user"')},
    group_history AS {_history_sql('"group"')}
    SELECT s._row, s.cluster, s.job_id, s.submit_time, s.run_s, s.has_target,
           s."user", s.vc, s."group", s.gpu_type,
           s.num_gpus, s.num_cpus, s.mem_gb, s.num_instances,
           {hour} AS submit_hour, {weekday} AS submit_weekday,
           coalesce(u.hist_count, 0) AS user_hist_count, u.hist_median_s AS user_hist_median_s,
           u.hist_last_s AS user_hist_last_s,
           coalesce(g.hist_count, 0) AS group_hist_count, g.hist_median_s AS group_hist_median_s,
           g.hist_last_s AS group_hist_last_s
    FROM src s
    ASOF LEFT JOIN user_history u
        ON s.cluster = u.cluster AND s."user" = u.key_value AND s.submit_time > u.end_time
    ASOF LEFT JOIN group_history g
        ON s.cluster = g.cluster AND s."group" = g.key_value AND s.submit_time > g.end_time
    ORDER BY s._row"""


def _tidy(frame: pl.DataFrame) -> pl.DataFrame:
    """The query result with numeric features as Float64 (the `cluster` column is also the feature)."""
    numeric = [f.name for f in FEATURES if f.kind == NUMERIC]
    return frame.with_columns(
        pl.col(numeric).cast(pl.Float64), pl.col("_row").cast(pl.Int64),
        pl.col("submit_time").dt.convert_time_zone("UTC"))


def _run(con: duckdb.DuckDBPyConnection, sql: str, where: str) -> pl.DataFrame:
    try:
        return con.sql(sql).pl()
    except duckdb.Error as exc:
        raise PredictError(f"{where}: feature query failed: {first_line(exc)}") from None


def trace_source_sql(jobs: str) -> str:
    """A FROM item over the canonical jobs `jobs` with `_row`: the position of the job in the order
    (submit_time, cluster, job_id, user, start_time, end_time, run_s); rows equal in all of these
    are interchangeable, so the numbering is deterministic in every way that matters."""
    columns = ", ".join(f'CAST({quote_identifier(c)} AS {t}) AS {quote_identifier(c)}'
                        for c, t in INPUT_COLUMNS.items())
    return (f"(SELECT row_number() OVER (ORDER BY submit_time, cluster, job_id, \"user\", start_time, end_time, "
            f"run_s) - 1 AS _row, {columns} FROM {jobs})")


def trace_features(con: duckdb.DuckDBPyConnection, jobs: str, zone: str | None, where: str) -> pl.DataFrame:
    """Feature rows of every job of the FROM item `jobs` (canonical columns) on connection `con`.

    `zone` is the IANA zone of the local wall clock, None for a trace without one.
    """
    return _tidy(_run(con, features_sql(trace_source_sql(jobs), zone), where))


def exclusion_counts(con: duckdb.DuckDBPyConnection, jobs: str, where: str) -> dict[str, Any]:
    """Jobs of `jobs` in all, with a target, and without one by reason (`EXCLUSION_REASONS`)."""
    cases = " ".join(f"WHEN {test} THEN '{name}'" for name, test in EXCLUSION_REASONS)
    frame = _run(con, f"""
        SELECT CASE {cases} ELSE 'has_target' END AS reason, count(*) AS jobs
        FROM {jobs} GROUP BY ALL""", where)
    found = dict(zip(frame["reason"].to_list(), frame["jobs"].to_list()))
    return {"jobs": int(sum(found.values())), "with_target": int(found.get("has_target", 0)),
            "excluded": {name: int(found.get(name, 0)) for name, _ in EXCLUSION_REASONS}}


def to_polars_jobs(jobs: Any) -> pl.DataFrame:
    """A polars frame of the job columns the features read, from a polars or pandas frame.

    Needs `REQUIRED_COLUMNS`; other `INPUT_COLUMNS` that are absent are NULL (no history without
    end_time and run_s). Times must be datetimes: time-zone aware, or naive and then read as UTC.
    """
    if not isinstance(jobs, pl.DataFrame):
        if type(jobs).__module__.startswith("pandas"):
            jobs = pl.from_pandas(jobs)
        else:
            raise PredictError(f"jobs: expected a polars or pandas DataFrame, got {type(jobs).__name__}")
    missing = [c for c in REQUIRED_COLUMNS if c not in jobs.columns]
    if missing:
        raise PredictError(f"jobs: missing column(s) {', '.join(missing)}; the canonical job columns are "
                           f"described in docs/schema.md")
    columns = []
    for name, sql_type in INPUT_COLUMNS.items():
        if name not in jobs.columns:
            columns.append(pl.lit(None, dtype=_polars_type(sql_type)).alias(name))
            continue
        column = jobs.get_column(name)
        if sql_type == "TIMESTAMPTZ":
            if not isinstance(column.dtype, pl.Datetime):
                if column.null_count() == column.len():
                    columns.append(pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias(name))
                    continue
                raise PredictError(f"jobs: column '{name}' must hold datetimes, not {column.dtype}")
            expr = pl.col(name)
            expr = (expr.dt.replace_time_zone("UTC") if column.dtype.time_zone is None
                    else expr.dt.convert_time_zone("UTC"))
            columns.append(expr.dt.cast_time_unit("us").alias(name))
        else:
            try:
                jobs.select(pl.col(name).cast(_polars_type(sql_type), strict=True))
            except (pl.exceptions.InvalidOperationError, pl.exceptions.ComputeError):
                raise PredictError(f"jobs: column '{name}' must hold {sql_type.lower()} values, "
                                   f"not {column.dtype}") from None
            columns.append(pl.col(name).cast(_polars_type(sql_type)))
    return jobs.select(columns).with_row_index("_row")


def _polars_type(sql_type: str) -> pl.DataType:
    return {"VARCHAR": pl.String(), "DOUBLE": pl.Float64(), "TIMESTAMPTZ": pl.Datetime("us", "UTC")}[sql_type]


def frame_features(jobs: Any, zone: str | None) -> pl.DataFrame:
    """Feature rows, in the input's order, of a polars or pandas frame of canonical job columns.

    History comes from the jobs of the frame itself (those that ended before each submission).
    """
    frame = to_polars_jobs(jobs)
    if frame.get_column("submit_time").null_count():
        raise PredictError("jobs: column 'submit_time' has missing values; every job needs its submission time")
    con = duckdb.connect()
    try:
        without_progress_bar(con)
        con.execute("SET asof_loop_join_threshold = 0")
        con.register("ddlx_jobs_frame", frame)
        return _tidy(_run(con, features_sql("ddlx_jobs_frame", zone), "jobs"))
    finally:
        con.close()
