"""Failures: how jobs end and what the ones that do not complete cost.

Final-state mixes by count and GPU-time (overall, by GPU bucket, by user and by VC), the time to
failure, the GPU-time lost to failed and cancelled jobs, the failure rate against job size, and
attempts and retries where the trace publishes its scheduling attempts (the canonical `attempts`
view).
"""

from __future__ import annotations

import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.model import ModuleResult
from ddlx.analysis.options import DEFAULT_TOP_GROUPS
from ddlx.analysis.overview import state_mix
from ddlx.analysis.sql import CDF_STEP, GPU_BUCKET_SQL, GPU_HOURS_SQL, cdf_table, quantile_columns_sql, sort_buckets
from ddlx.datasets.canonical import ATTEMPTS
from ddlx.datasets.sqltext import quote_identifier

DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "failures.failed_share", "Failed share of finished jobs", "fraction",
        "Jobs whose final state (state.canonical) is failed, divided by the jobs that finished: "
        "completed, failed or cancelled. Jobs still running at the trace end, pending (never "
        "started) or without a recorded state are in neither count.",
    ),
    Definition(
        "failures.unsuccessful_share", "Failed or cancelled share of finished jobs", "fraction",
        "Jobs whose final state (state.canonical) is failed or cancelled, divided by the jobs that "
        "finished (completed, failed or cancelled); running, pending and stateless jobs are in "
        "neither count.",
    ),
    Definition(
        "failures.time_to_failure", "Time to failure", "s",
        "Run time (runtime.first_start_to_last_end) of a job whose final state is failed: seconds "
        "from its first start to its end. Failed jobs that never started, or whose start is not "
        "recorded (e.g. jobs without a recorded attempt), have none and are left out of quantiles "
        "and CDFs but counted in failed_jobs.",
    ),
    Definition(
        "failures.gpu_time_lost", "GPU-time lost", "GPU-hours",
        "The whole GPU-time (gpu_time.request_x_runtime) of every job whose final state is failed "
        "or cancelled counts as lost: the traces do not say whether any work was kept "
        "(checkpoints), so no part of it is credited. Shares divide by the GPU-time of all jobs of "
        "the trace (every state), or of all jobs of the GPU bucket. Jobs without a run time add "
        "none.",
    ),
    Definition(
        "failures.top_groups", "Top users or virtual clusters by GPU-time", "GPU-hours",
        "Users (or virtual clusters, a VC being a cluster and VC name pair) ranked by the GPU-time "
        "(gpu_time.request_x_runtime) of all their jobs, ties broken by jobs, then by name; the "
        "first N keep a row each (rank 1..N) and all others are summed in one row named 'other' "
        "(rank empty). Jobs without a user (VC) form one group with an empty name.",
    ),
    Definition(
        "runtime.sum_of_attempts", "Run time summed over attempts", "s",
        "Seconds the job's scheduling attempts ran: the sum over its attempts of attempt end - "
        "attempt start (duration_s of the canonical attempts view). Unlike "
        "runtime.first_start_to_last_end it leaves out the gaps between attempts (waiting to be "
        "scheduled again). Attempts without a start or an end (including a last attempt still "
        "running at the trace end) add none. Only traces that publish attempts. {derivations}.",
    ),
    Definition(
        "failures.attempts_per_job", "Attempts per job and retries", "attempts",
        "The scheduling attempts a job has (its rows in the canonical attempts view), 0 for a job "
        "never scheduled. A job is retried when it has more than one attempt; the "
        "share retried divides by the jobs with at least one attempt.",
    ),
    Definition(
        "failures.gpu_time_of_attempts", "GPU-time of attempts", "GPU-hours",
        "The sum over a job's attempts of the attempt's GPUs (num_gpus of the attempts view) times "
        "its duration (runtime.sum_of_attempts, per attempt), in GPU-hours; attempts "
        "without a start or an end add none. 'Before the last attempt' is the same sum over every "
        "attempt but the job's last: GPU-time spent on runs that were followed by a retry. {derivations}.",
    ),
)

OTHER = "other"
ALL = "all"

_FINISHED = "state IN ('completed', 'failed', 'cancelled')"
_LOST = "state IN ('failed', 'cancelled')"


def _jobs_sql(ctx: TraceContext) -> str:
    """A FROM item: this trace's jobs with `gpu_bucket` (gpu_request.bucket) and `gpu_hours`."""
    return f"(SELECT *, {GPU_BUCKET_SQL} AS gpu_bucket, {GPU_HOURS_SQL} AS gpu_hours FROM {ctx.jobs})"


def _bucket_label_sql() -> str:
    """The GPU bucket of a GROUPING SETS row, 'all' on the grand-total row."""
    return f"CASE WHEN grouping(gpu_bucket) = 1 THEN '{ALL}' ELSE gpu_bucket END"


def _all_first(frame: pl.DataFrame, column: str = "gpu_bucket") -> pl.DataFrame:
    """`frame` with the 'all' rows of `column` first, then buckets in their usual order."""
    return pl.concat([frame.filter(pl.col(column) == ALL), sort_buckets(frame.filter(pl.col(column) != ALL), column)])


def state_mix_by_gpu_bucket(ctx: TraceContext) -> pl.DataFrame:
    """Per GPU bucket and final state: jobs and GPU-hours, with their shares within the bucket."""
    return sort_buckets(ctx.query(f"""
        SELECT gpu_bucket, state, count(*) AS jobs,
               count(*) / sum(count(*)) OVER (PARTITION BY gpu_bucket) AS job_share,
               sum(gpu_hours) AS gpu_hours,
               sum(gpu_hours) / nullif(sum(sum(gpu_hours)) OVER (PARTITION BY gpu_bucket), 0) AS gpu_hours_share
        FROM {_jobs_sql(ctx)} GROUP BY gpu_bucket, state ORDER BY jobs DESC, state"""))


def _state_mix_top(ctx: TraceContext, keys: tuple[str, ...], top: int, count_name: str) -> pl.DataFrame:
    """State mix of the `top` groups of `keys` by GPU-time (failures.top_groups) plus an 'other' row.

    The last key is the group's name ('other' on the merged row); earlier keys are empty there.
    `count_name` is the column counting the groups a row holds (1, or the number merged).
    """
    if top < 0:
        raise ValueError(f"top must be at least 0, got {top}")
    quoted = [quote_identifier(k) for k in keys]
    key_list = ", ".join(quoted)
    *outer, name = quoted
    labels = [f"CASE WHEN group_rank <= {top} THEN {k} END AS {k}" for k in outer]
    labels.append(f"CASE WHEN group_rank <= {top} THEN {name} ELSE '{OTHER}' END AS {name}")
    return ctx.query(f"""
        WITH per AS (
            SELECT {key_list}, state, count(*) AS jobs, sum(gpu_hours) AS gpu_hours
            FROM {_jobs_sql(ctx)} GROUP BY ALL),
        ranked AS (
            SELECT *, dense_rank() OVER (ORDER BY group_gpu_hours DESC, group_jobs DESC,
                                                  {", ".join(f"{k} NULLS LAST" for k in quoted)}) AS group_rank
            FROM (SELECT *, sum(gpu_hours) OVER (PARTITION BY {key_list}) AS group_gpu_hours,
                            sum(jobs) OVER (PARTITION BY {key_list}) AS group_jobs FROM per)),
        counted AS (
            SELECT *, least(group_rank, {top + 1}) AS row_rank,
                   CASE WHEN group_rank <= {top} THEN 1 ELSE max(group_rank) OVER () - {top} END AS {count_name}
            FROM ranked),
        merged AS (
            SELECT row_rank, {", ".join(labels)}, {count_name}, state,
                   sum(jobs)::BIGINT AS jobs, sum(gpu_hours) AS gpu_hours
            FROM counted GROUP BY ALL)
        SELECT CASE WHEN row_rank <= {top} THEN row_rank END AS rank, {key_list}, {count_name}, state, jobs,
               jobs / sum(jobs) OVER (PARTITION BY row_rank) AS job_share, gpu_hours,
               gpu_hours / nullif(sum(gpu_hours) OVER (PARTITION BY row_rank), 0) AS gpu_hours_share,
               (sum(jobs) OVER (PARTITION BY row_rank))::BIGINT AS total_jobs,
               sum(gpu_hours) OVER (PARTITION BY row_rank) AS total_gpu_hours
        FROM merged ORDER BY row_rank, jobs DESC, state""")


def state_mix_by_user(ctx: TraceContext, top: int = DEFAULT_TOP_GROUPS) -> pl.DataFrame:
    """State mix of the `top` users by GPU-time and of all other users together ('other')."""
    return _state_mix_top(ctx, ("user",), top, "users")


def state_mix_by_vc(ctx: TraceContext, top: int = DEFAULT_TOP_GROUPS) -> pl.DataFrame:
    """State mix of the `top` virtual clusters (cluster, vc) by GPU-time and of all others ('other')."""
    return _state_mix_top(ctx, ("cluster", "vc"), top, "vcs")


def _failed_source(ctx: TraceContext) -> str:
    return f"(SELECT gpu_bucket, run_s FROM {_jobs_sql(ctx)} WHERE state = 'failed')"


def time_to_failure_cdf(ctx: TraceContext) -> pl.DataFrame:
    """CDF of the run time of failed jobs (failures.time_to_failure), over all of them
    (gpu_bucket 'all') and per GPU bucket: probability, run_s, jobs (failed jobs with a run time)."""
    source = _failed_source(ctx)
    overall = cdf_table(ctx, "run_s", source).select(pl.lit(ALL).alias("gpu_bucket"), pl.all())
    by_bucket = cdf_table(ctx, "run_s", source, groups=("gpu_bucket",))
    frame = pl.concat([overall, by_bucket.select(overall.columns)])
    frame = frame.rename({"value": "run_s", "rows": "jobs"})
    return _all_first(frame)


def time_to_failure_quantiles(ctx: TraceContext) -> pl.DataFrame:
    """Per GPU bucket and over all ('all'): failed jobs, those with a run time, and quantiles and
    mean of their run time in seconds (failures.time_to_failure)."""
    frame = ctx.query(f"""
        SELECT {_bucket_label_sql()} AS gpu_bucket, count(*) AS failed_jobs,
               {quantile_columns_sql("run_s", suffix="_s")}
        FROM {_failed_source(ctx)} GROUP BY GROUPING SETS ((gpu_bucket), ())""")
    return _all_first(frame)


def gpu_time_lost(ctx: TraceContext) -> pl.DataFrame:
    """GPU-hours lost to failed and cancelled jobs (failures.gpu_time_lost) per state and GPU bucket,
    with margins: state 'all' (failed and cancelled together) and gpu_bucket 'all' (every bucket).

    `share_of_all_gpu_hours` divides by the GPU-hours of every job of the trace;
    `share_of_bucket_gpu_hours` by those of every job of the row's bucket.
    """
    frame = ctx.query(f"""
        WITH totals AS (
            SELECT {_bucket_label_sql()} AS gpu_bucket, sum(gpu_hours) AS bucket_gpu_hours
            FROM {_jobs_sql(ctx)} GROUP BY GROUPING SETS ((gpu_bucket), ())),
        lost AS (
            SELECT CASE WHEN grouping(state) = 1 THEN '{ALL}' ELSE state END AS state,
                   {_bucket_label_sql()} AS gpu_bucket, count(*) AS jobs, sum(gpu_hours) AS gpu_hours
            FROM {_jobs_sql(ctx)} WHERE {_LOST}
            GROUP BY GROUPING SETS ((state, gpu_bucket), (state), (gpu_bucket), ()))
        SELECT lost.state, lost.gpu_bucket, lost.jobs, lost.gpu_hours,
               lost.gpu_hours / nullif((SELECT bucket_gpu_hours FROM totals WHERE gpu_bucket = '{ALL}'), 0)
                   AS share_of_all_gpu_hours,
               lost.gpu_hours / nullif(totals.bucket_gpu_hours, 0) AS share_of_bucket_gpu_hours
        FROM lost JOIN totals USING (gpu_bucket)""")
    state_order = {"all": 0, "failed": 1, "cancelled": 2}
    frame = frame.sort(pl.col("state").replace_strict(state_order, default=3, return_dtype=pl.Int32))
    return pl.concat([_all_first(part) for part in frame.partition_by("state", maintain_order=True)])


def failure_rate_by_gpu_bucket(ctx: TraceContext) -> pl.DataFrame:
    """Per GPU bucket and over all ('all'): jobs, finished jobs, failed and cancelled jobs, the
    failed share (failures.failed_share) and the failed-or-cancelled share (failures.unsuccessful_share)."""
    frame = ctx.query(f"""
        SELECT {_bucket_label_sql()} AS gpu_bucket, count(*) AS jobs,
               count(*) FILTER (WHERE {_FINISHED}) AS finished_jobs,
               count(*) FILTER (WHERE state = 'failed') AS failed_jobs,
               count(*) FILTER (WHERE state = 'cancelled') AS cancelled_jobs,
               count(*) FILTER (WHERE state = 'failed') / nullif(count(*) FILTER (WHERE {_FINISHED}), 0)
                   AS failed_share,
               count(*) FILTER (WHERE {_LOST}) / nullif(count(*) FILTER (WHERE {_FINISHED}), 0)
                   AS failed_or_cancelled_share
        FROM {_jobs_sql(ctx)} GROUP BY GROUPING SETS ((gpu_bucket), ())""")
    return _all_first(frame)


def _attempts_per_job_sql(ctx: TraceContext) -> str:
    """A FROM item: per job of the trace its state, gpu_hours, run_s, `attempts`, `attempts_run_s`
    (runtime.sum_of_attempts), `attempts_gpu_hours` and `gpu_hours_before_last_attempt`
    (failures.gpu_time_of_attempts). Needs the canonical `attempts` view."""
    return f"""(
        SELECT j.state, j.gpu_hours, j.run_s, coalesce(a.attempts, 0) AS attempts,
               a.attempts_run_s, a.attempts_gpu_hours, a.gpu_hours_before_last_attempt
        FROM {_jobs_sql(ctx)} AS j LEFT JOIN (
            SELECT cluster, job_id, count(*) AS attempts, sum(duration_s) AS attempts_run_s,
                   sum(num_gpus * duration_s) / 3600.0 AS attempts_gpu_hours,
                   coalesce(sum(num_gpus * duration_s) FILTER (WHERE NOT is_last_attempt), 0) / 3600.0
                       AS gpu_hours_before_last_attempt
            FROM {ATTEMPTS.name} GROUP BY cluster, job_id) AS a ON a.cluster = j.cluster AND a.job_id = j.job_id)"""


def attempts_per_job(ctx: TraceContext) -> pl.DataFrame:
    """Per number of attempts (failures.attempts_per_job): jobs, their share, summed run hours and
    GPU-hours by first start to last end (runtime.first_start_to_last_end, gpu_time.request_x_runtime)
    and by attempts (runtime.sum_of_attempts, failures.gpu_time_of_attempts), and the GPU-hours of
    attempts before the last with their share of the attempts' GPU-hours."""
    return ctx.query(f"""
        SELECT attempts, count(*) AS jobs, count(*) / sum(count(*)) OVER () AS job_share,
               coalesce(sum(run_s), 0) / 3600.0 AS run_hours,
               coalesce(sum(attempts_run_s), 0) / 3600.0 AS attempts_run_hours,
               sum(gpu_hours) AS gpu_hours,
               coalesce(sum(attempts_gpu_hours), 0) AS attempts_gpu_hours,
               coalesce(sum(gpu_hours_before_last_attempt), 0) AS gpu_hours_before_last_attempt,
               sum(gpu_hours_before_last_attempt) / nullif(sum(attempts_gpu_hours), 0)
                   AS before_last_attempt_share
        FROM {_attempts_per_job_sql(ctx)} GROUP BY attempts ORDER BY attempts""")


def state_by_attempts(ctx: TraceContext) -> pl.DataFrame:
    """Per number of attempts and final state: jobs and their share among jobs with that many attempts."""
    return ctx.query(f"""
        SELECT attempts, state, count(*) AS jobs,
               count(*) / sum(count(*)) OVER (PARTITION BY attempts) AS job_share
        FROM {_attempts_per_job_sql(ctx)} GROUP BY attempts, state ORDER BY attempts, jobs DESC, state""")


def retry_summary(ctx: TraceContext) -> dict[str, float | int | None]:
    """Jobs with an attempt, retried jobs, and GPU-hours of all attempts and of those before the last."""
    return ctx.one_row(f"""
        SELECT count(*) FILTER (WHERE attempts > 0) AS attempted_jobs,
               count(*) FILTER (WHERE attempts > 1) AS retried_jobs,
               coalesce(sum(attempts_gpu_hours), 0) AS attempts_gpu_hours,
               coalesce(sum(gpu_hours_before_last_attempt), 0) AS gpu_hours_before_last_attempt
        FROM {_attempts_per_job_sql(ctx)}""")


def _counts(ctx: TraceContext) -> dict[str, float | int | None]:
    return ctx.one_row(f"""
        SELECT count(*) AS jobs, count(state) AS jobs_with_state,
               count(*) FILTER (WHERE {_FINISHED}) AS finished_jobs,
               count(*) FILTER (WHERE state = 'failed') AS failed_jobs,
               count(*) FILTER (WHERE {_LOST}) AS lost_jobs,
               count(*) FILTER (WHERE state = 'failed' AND run_s IS NOT NULL) AS timed_failed_jobs,
               quantile_cont(run_s, 0.5) FILTER (WHERE state = 'failed') AS time_to_failure_p50_s,
               count(*) FILTER (WHERE "user" IS NOT NULL) AS jobs_with_user,
               count(*) FILTER (WHERE vc IS NOT NULL) AS jobs_with_vc,
               coalesce(sum(gpu_hours), 0) AS gpu_hours,
               coalesce(sum(gpu_hours) FILTER (WHERE state = 'failed'), 0) AS failed_gpu_hours,
               coalesce(sum(gpu_hours) FILTER (WHERE {_LOST}), 0) AS lost_gpu_hours
        FROM {_jobs_sql(ctx)}""")


def analyze(ctx: TraceContext) -> ModuleResult:
    result = ModuleResult("failures")
    c = _counts(ctx)
    if not c["jobs_with_state"]:
        why = "the trace records no job states"
        for what in ("final-state mix", "time to failure", "GPU-time lost to failed and cancelled jobs",
                     "failure rate against job size"):
            result.skip(what, why)
    else:
        _add_state_parts(ctx, result, c)
    _add_attempt_parts(ctx, result)
    return result


def _add_state_parts(ctx: TraceContext, result: ModuleResult, c: dict) -> None:
    mix = ("state.canonical", "gpu_time.request_x_runtime")
    finished = f"{c['finished_jobs']:,} finished jobs (completed, failed or cancelled)"
    result.add_finding("failed_share", "failed share of finished jobs", _ratio(c["failed_jobs"], c["finished_jobs"]),
                       "fraction", "failures.failed_share", finished, basis=c["finished_jobs"])
    result.add_finding("failed_or_cancelled_share", "failed or cancelled share of finished jobs",
                       _ratio(c["lost_jobs"], c["finished_jobs"]), "fraction", "failures.unsuccessful_share", finished,
                       basis=c["finished_jobs"])
    all_jobs = f"all {c['jobs']:,} jobs ({c['gpu_hours']:,.1f} GPU-hours)"
    result.add_finding("failed_gpu_time_share", "share of GPU-time in failed jobs",
                       _ratio(c["failed_gpu_hours"], c["gpu_hours"]), "fraction", "failures.gpu_time_lost", all_jobs,
                       basis=c["jobs"])
    result.add_finding(
        "gpu_hours_lost", "GPU-hours lost to failed and cancelled jobs", c["lost_gpu_hours"], "GPU-hours",
        "failures.gpu_time_lost", f"{c['lost_jobs']:,} failed or cancelled jobs")
    result.add_finding("gpu_hours_lost_share", "share of GPU-time lost to failed and cancelled jobs",
                       _ratio(c["lost_gpu_hours"], c["gpu_hours"]), "fraction", "failures.gpu_time_lost", all_jobs,
                       basis=c["jobs"])
    result.add_finding("time_to_failure_p50", "median time to failure", c["time_to_failure_p50_s"], "s",
                       "failures.time_to_failure", f"{c['timed_failed_jobs']:,} failed jobs with a run time",
                       basis=c["timed_failed_jobs"])

    result.add("state_mix", state_mix(ctx), mix, "a final state")
    result.add("state_mix_by_gpu_bucket", state_mix_by_gpu_bucket(ctx), (*mix, "gpu_request.bucket"),
               "a GPU bucket and a final state (shares within the bucket)")
    if c["jobs_with_user"]:
        top = ctx.options.top_users or DEFAULT_TOP_GROUPS
        result.add("state_mix_by_user", state_mix_by_user(ctx, top), (*mix, "failures.top_groups"),
                   f"one of the top {top} users by GPU-time, or all other users together ('other'), and a "
                   f"final state (shares within the user row)")
    else:
        result.skip("final-state mix by user", "the trace records no users")
    if c["jobs_with_vc"]:
        top = ctx.options.top_vcs or DEFAULT_TOP_GROUPS
        result.add("state_mix_by_vc", state_mix_by_vc(ctx, top), (*mix, "failures.top_groups"),
                   f"one of the top {top} virtual clusters by GPU-time, or all other VCs together ('other'), "
                   f"and a final state (shares within the VC row)")
    else:
        result.skip("final-state mix by virtual cluster", "the trace records no virtual clusters")

    if c["timed_failed_jobs"]:
        ttf = ("failures.time_to_failure", "gpu_request.bucket")
        result.add("time_to_failure_cdf", time_to_failure_cdf(ctx), ttf + (CDF_STEP,),
                   "a probability of the run-time CDF of failed jobs, over all of them (gpu_bucket 'all') "
                   "or in one GPU bucket")
        result.add("time_to_failure_quantiles", time_to_failure_quantiles(ctx), ttf,
                   "all failed jobs (gpu_bucket 'all') or those of one GPU bucket")
    else:
        result.skip("time to failure", "no failed job of this trace has a run time")

    result.add("gpu_time_lost", gpu_time_lost(ctx), ("failures.gpu_time_lost", "gpu_request.bucket", *mix),
               "a final state (failed, cancelled, or 'all' for both) and a GPU bucket ('all' for every "
               "bucket); the 'all' rows are margins, not further rows to add")
    result.add("failure_rate_by_gpu_bucket", failure_rate_by_gpu_bucket(ctx),
               ("failures.failed_share", "failures.unsuccessful_share", "gpu_request.bucket"),
               "a GPU bucket, or all jobs (gpu_bucket 'all')")


def _add_attempt_parts(ctx: TraceContext, result: ModuleResult) -> None:
    if not ctx.has_view(ATTEMPTS.name):
        result.skip("attempts and retries", "the trace publishes no scheduling attempts per job (no attempts view)")
        return
    attempt_defs = ("failures.attempts_per_job", "runtime.sum_of_attempts", "runtime.first_start_to_last_end",
                    "gpu_time.request_x_runtime", "failures.gpu_time_of_attempts")
    result.add("attempts_per_job", attempts_per_job(ctx), attempt_defs, "a number of attempts per job")
    result.add("state_by_attempts", state_by_attempts(ctx), ("failures.attempts_per_job", "state.canonical"),
               "a number of attempts and a final state (shares within that number of attempts)")
    r = retry_summary(ctx)
    result.add_finding("retried_share", "share of jobs retried (more than one attempt)",
                       _ratio(r["retried_jobs"], r["attempted_jobs"]), "fraction", "failures.attempts_per_job",
                       f"{r['attempted_jobs']:,} jobs with at least one attempt", basis=r["attempted_jobs"])
    result.add_finding(
        "gpu_hours_before_last_attempt_share", "share of attempts' GPU-time spent before the last attempt",
        _ratio(r["gpu_hours_before_last_attempt"], r["attempts_gpu_hours"]), "fraction",
        "failures.gpu_time_of_attempts", f"{r['attempts_gpu_hours']:,.1f} GPU-hours of attempts",
        basis=r["attempted_jobs"])


def _ratio(part: float | int | None, whole: float | int | None) -> float | None:
    return (part or 0) / whole if whole else None
