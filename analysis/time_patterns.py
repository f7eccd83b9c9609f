"""Time patterns: when jobs are submitted (hour of week in the trace's local time, per cluster;
submissions per day over the trace) and how many of them recur (the canonical `job_group` tag)."""

from __future__ import annotations

import polars as pl

from ddlx.analysis.context import NO_WALL_CLOCK, TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.model import ModuleResult
from ddlx.analysis.sql import GPU_HOURS_SQL, local_time_sql

DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "time_patterns.hour_of_week", "Hour of week of submission", "hours",
        "The submission instant read in the trace's local zone (jobs.source_tz): 24 x (ISO "
        "weekday - 1) + hour of day, so 0 is Monday 00:00-00:59 and 167 Sunday 23:00-23:59 local "
        "time. Weekend = hours 120-167 (Saturday and Sunday). Jobs without a submission time are "
        "left out.",
    ),
    Definition(
        "time_patterns.submissions", "Submissions", "jobs",
        "Jobs submitted in a period (by submit_time in the trace's local zone), and the GPUs they "
        "request (sum of gpu_request.job_total, a job without a GPU count adding none).",
    ),
    Definition(
        "time_patterns.recurring_job", "Recurring job", "jobs",
        "A job whose recurring-job tag (job_group: {derivations}) is shared "
        "by at least one other job of the trace. Shares are over all jobs of the trace (a job "
        "without a tag is not recurring) and over all their GPU-time (gpu_time.request_x_runtime). "
        "Group sizes are binned by powers of two: 1, 2, 3-4, 5-8, ...",
    ),
)

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _submissions_sql(ctx: TraceContext) -> str:
    """A FROM item: each job's cluster, local submission wall clock (`local`) and GPUs."""
    return f"""(SELECT cluster, {local_time_sql(ctx, 'submit_time')} AS local, coalesce(num_gpus, 0) AS gpus
               FROM {ctx.jobs} WHERE submit_time IS NOT NULL)"""


def submissions_by_hour_of_week(ctx: TraceContext) -> pl.DataFrame:
    """Per cluster and hour of week (all 168, zeros included): jobs submitted, GPUs they request,
    and their shares of the cluster's (definition `time_patterns.hour_of_week`)."""
    weekdays = "[" + ", ".join(f"'{d}'" for d in WEEKDAYS) + "]"
    return ctx.query(f"""
        WITH counted AS (
            SELECT cluster, CAST((isodow(local) - 1) * 24 + hour(local) AS INTEGER) AS hour_of_week,
                   count(*) AS jobs, sum(gpus) AS gpus_requested
            FROM {_submissions_sql(ctx)} GROUP BY ALL),
        grid AS (
            SELECT cluster, CAST(range AS INTEGER) AS hour_of_week
            FROM (SELECT DISTINCT cluster FROM counted) CROSS JOIN range(168))
        SELECT g.cluster, g.hour_of_week, {weekdays}[g.hour_of_week // 24 + 1] AS weekday,
               g.hour_of_week % 24 AS hour, coalesce(c.jobs, 0) AS jobs,
               coalesce(c.gpus_requested, 0) AS gpus_requested,
               coalesce(c.jobs, 0) / sum(coalesce(c.jobs, 0)) OVER (PARTITION BY g.cluster) AS job_share,
               coalesce(c.gpus_requested, 0)
                   / nullif(sum(coalesce(c.gpus_requested, 0)) OVER (PARTITION BY g.cluster), 0) AS gpus_requested_share
        FROM grid g LEFT JOIN counted c USING (cluster, hour_of_week)
        ORDER BY g.cluster, g.hour_of_week""")


def submissions_per_day(ctx: TraceContext) -> pl.DataFrame:
    """Per cluster and local day from its first to its last submission (zeros included): jobs
    submitted and GPUs requested; `day_index` counts days from the trace's first submission day."""
    return ctx.query(f"""
        WITH days AS (SELECT cluster, CAST(local AS DATE) AS day, gpus FROM {_submissions_sql(ctx)}),
        counted AS (SELECT cluster, day, count(*) AS jobs, sum(gpus) AS gpus_requested FROM days GROUP BY ALL),
        grid AS (
            SELECT cluster, CAST(unnest(generate_series(min(day), max(day), INTERVAL 1 DAY)) AS DATE) AS day
            FROM counted GROUP BY cluster)
        SELECT g.cluster, g.day, CAST(g.day - min(g.day) OVER () AS INTEGER) AS day_index,
               coalesce(c.jobs, 0) AS jobs, coalesce(c.gpus_requested, 0) AS gpus_requested
        FROM grid g LEFT JOIN counted c USING (cluster, day)
        ORDER BY g.cluster, g.day""")


def recurring_counts(ctx: TraceContext) -> dict[str, float | int | None]:
    """Jobs, jobs with a group tag, groups, recurring jobs and groups, and GPU-hours of all jobs
    and of recurring ones (definition `time_patterns.recurring_job`)."""
    return ctx.one_row(f"""
        WITH groups AS (
            SELECT job_group, count(*) AS size, sum({GPU_HOURS_SQL}) AS gpu_hours
            FROM {ctx.jobs} GROUP BY job_group)
        SELECT CAST(sum(size) AS BIGINT) AS jobs,
               CAST(coalesce(sum(size) FILTER (WHERE job_group IS NOT NULL), 0) AS BIGINT) AS tagged_jobs,
               count(job_group) AS groups, count(job_group) FILTER (WHERE size > 1) AS recurring_groups,
               CAST(coalesce(sum(size) FILTER (WHERE job_group IS NOT NULL AND size > 1), 0) AS BIGINT)
                   AS recurring_jobs,
               sum(gpu_hours) AS gpu_hours,
               coalesce(sum(gpu_hours) FILTER (WHERE job_group IS NOT NULL AND size > 1), 0) AS recurring_gpu_hours
        FROM groups""")


def group_sizes(ctx: TraceContext) -> pl.DataFrame:
    """Groups binned by jobs per group (powers of two): groups, jobs, GPU-hours and their shares
    of all jobs and all GPU-hours of the trace."""
    return ctx.query(f"""
        WITH totals AS (SELECT count(*) AS jobs, sum({GPU_HOURS_SQL}) AS gpu_hours FROM {ctx.jobs}),
        groups AS (
            SELECT job_group, count(*) AS size, sum({GPU_HOURS_SQL}) AS gpu_hours
            FROM {ctx.jobs} WHERE job_group IS NOT NULL GROUP BY job_group),
        binned AS (
            SELECT *, CASE WHEN size = 1 THEN 0 ELSE CAST(floor(log2(size - 1)) AS INTEGER) + 1 END AS size_bin
            FROM groups)
        SELECT CASE WHEN size_bin = 0 THEN 1 ELSE CAST(2 ** (size_bin - 1) AS BIGINT) + 1 END AS size_low,
               CAST(2 ** size_bin AS BIGINT) AS size_high, count(*) AS groups, CAST(sum(size) AS BIGINT) AS jobs,
               sum(size) / any_value(t.jobs) AS job_share, sum(b.gpu_hours) AS gpu_hours,
               sum(b.gpu_hours) / nullif(any_value(t.gpu_hours), 0) AS gpu_hours_share
        FROM binned b CROSS JOIN totals t GROUP BY size_bin ORDER BY size_bin""")


def analyze(ctx: TraceContext) -> ModuleResult:
    result = ModuleResult("time_patterns")
    if ctx.has_wall_clock:
        week = result.add("submissions_by_hour_of_week", submissions_by_hour_of_week(ctx),
                          ("time_patterns.hour_of_week", "time_patterns.submissions"),
                          f"a cluster and an hour of week in {ctx.local_tz} (0 = Monday 00:00)")
        _week_findings(result, week)
    else:
        result.skip("submissions by hour of week", NO_WALL_CLOCK)
    day_row = ("a cluster and a day since the trace start (UTC days of the offsets)" if not ctx.has_wall_clock
               else f"a cluster and a local day in {ctx.local_tz}")
    days = result.add("submissions_per_day", submissions_per_day(ctx), ("time_patterns.submissions",), day_row)
    if days.height:
        per_day = _jobs_per_trace_day(days)
        result.add_finding(
            "submissions_per_day_p50", "median jobs submitted per day", per_day["jobs"].median(), "jobs",
            "time_patterns.submissions", f"{per_day.height:,} days from the first to the last submission")

    counts = recurring_counts(ctx)
    if not counts["tagged_jobs"]:
        result.skip("recurring jobs", "the trace records no recurring-job tag (job_group)")
        return result
    result.add("recurring_group_sizes", group_sizes(ctx), ("time_patterns.recurring_job", "gpu_time.request_x_runtime"),
               "a range of jobs per recurring-job group")
    population = f"{counts['jobs']:,} jobs"
    result.add_finding("recurring_job_share", "share of jobs in a group of more than one job",
                       counts["recurring_jobs"] / counts["jobs"], "fraction", "time_patterns.recurring_job", population,
                       basis=counts["jobs"])
    result.add_finding("recurring_gpu_time_share", "share of GPU-time in groups of more than one job",
                       counts["recurring_gpu_hours"] / counts["gpu_hours"] if counts["gpu_hours"] else None, "fraction",
                       "time_patterns.recurring_job", f"{population}, their GPU-time", basis=counts["jobs"])
    result.add_finding("recurring_groups", "recurring-job groups of more than one job", counts["recurring_groups"],
                       "groups", "time_patterns.recurring_job", f"{counts['groups']:,} groups")
    return result


def _jobs_per_trace_day(days: pl.DataFrame) -> pl.DataFrame:
    """Jobs per day over all clusters, every day from the trace's first to its last submission day."""
    span = pl.DataFrame({"day": pl.date_range(days["day"].min(), days["day"].max(), "1d", eager=True)})
    totals = days.group_by("day").agg(pl.col("jobs").sum())
    return span.join(totals, on="day", how="left").with_columns(pl.col("jobs").fill_null(0))


def _week_findings(result: ModuleResult, week: pl.DataFrame) -> None:
    """Weekend share and the busiest local hour of day, over all clusters."""
    total = week["jobs"].sum()
    if not total:
        return
    weekend = week.filter(pl.col("hour_of_week") >= 120)["jobs"].sum()
    population = f"{total:,} jobs with a submission time"
    result.add_finding("weekend_submission_share", "share of jobs submitted on Saturday or Sunday (local time)",
                       weekend / total, "fraction", "time_patterns.hour_of_week", population, basis=total)
    by_hour = week.group_by("hour").agg(pl.col("jobs").sum()).sort(["jobs", "hour"], descending=[True, False])
    result.add_finding("busiest_submit_hour", "local hour of day with most submissions (0-23)", by_hour["hour"][0],
                       "hour", "time_patterns.hour_of_week", population, basis=total)
