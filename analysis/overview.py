"""Overview: the headline numbers of one trace from its canonical jobs (jobs, GPU jobs, GPU-hours,
state and GPU-request mixes, queueing and run-time quantiles)."""

from __future__ import annotations

import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.model import ModuleResult
from ddlx.analysis.sql import GPU_BUCKET_SQL, GPU_HOURS_SQL, quantiles_sql, sort_buckets

#: The overview uses only the core definitions of the job model.
DEFINITIONS: tuple[Definition, ...] = ()


def counts(ctx: TraceContext) -> dict[str, float | int | None]:
    """Jobs, GPU jobs, fractional-GPU jobs, GPU-hours, and queueing/run-time medians and p90s (s)."""
    return ctx.one_row(f"""
        SELECT count(*) AS jobs,
               count(*) FILTER (WHERE num_gpus > 0) AS gpu_jobs,
               count(*) FILTER (WHERE num_gpus > 0 AND fractional_gpu) AS fractional_gpu_jobs,
               {quantiles_sql("queue_s", {"p50": 0.5, "p90": 0.9}, "_s", prefix="queue_")},
               count(queue_s) AS queued_jobs,
               {quantiles_sql("run_s", {"p50": 0.5, "p90": 0.9}, "_s", prefix="run_")},
               count(run_s) AS timed_jobs,
               count(*) FILTER (WHERE queue_s < 0) AS negative_queue_jobs,
               count(*) FILTER (WHERE run_s < 0) AS negative_run_jobs,
               sum({GPU_HOURS_SQL}) AS gpu_hours
        FROM {ctx.jobs}""")


def state_mix(ctx: TraceContext) -> pl.DataFrame:
    """Per canonical state: jobs, their share, GPU-hours and their share."""
    return ctx.query(f"""
        SELECT state, count(*) AS jobs, count(*) / sum(count(*)) OVER () AS job_share,
               sum({GPU_HOURS_SQL}) AS gpu_hours,
               sum({GPU_HOURS_SQL}) / nullif(sum(sum({GPU_HOURS_SQL})) OVER (), 0) AS gpu_hours_share
        FROM {ctx.jobs} GROUP BY state ORDER BY jobs DESC, state""")


def gpu_request_mix(ctx: TraceContext) -> pl.DataFrame:
    """Per GPU-request bucket: jobs, their share and GPU-hours."""
    return sort_buckets(ctx.query(f"""
        SELECT {GPU_BUCKET_SQL} AS gpu_bucket, count(*) AS jobs,
               count(*) / sum(count(*)) OVER () AS job_share,
               sum({GPU_HOURS_SQL}) AS gpu_hours
        FROM {ctx.jobs} GROUP BY 1"""))


def add_time_checks(result: ModuleResult, negative_queue: int, queued: int, negative_run: int | None = None,
                    timed: int | None = None, queue_findings: tuple[str, ...] = (),
                    run_findings: tuple[str, ...] = ()) -> None:
    """The sanity bounds of the canonical times: no queueing delay and (when `timed` is given) no
    run time below zero."""
    result.add_check("negative_queueing_delay", "queueing delay below zero (the start is before the submission); "
                     "kept in the quantiles as the trace gives it", negative_queue, queued,
                     "jobs with a queueing delay", queue_findings)
    if timed is None:
        return
    result.add_check("negative_run_time", "run time below zero (the end is before the start); kept in the "
                     "run-time quantiles, no GPUs held and no GPU-time", negative_run, timed,
                     "jobs with a run time", run_findings)


def analyze(ctx: TraceContext) -> ModuleResult:
    result = ModuleResult("overview")
    c = counts(ctx)
    jobs, gpu_jobs = c["jobs"], c["gpu_jobs"]
    started = f"{c['queued_jobs']:,} jobs that started"
    timed = f"{c['timed_jobs']:,} jobs with a start and an end"
    result.add_finding("jobs", "jobs", jobs, "jobs", "state.canonical", "all jobs")
    result.add_finding("gpu_jobs", "GPU jobs", gpu_jobs, "jobs",
                       "gpu_job.requests_gpu", "all jobs")
    result.add_finding("gpu_job_share", "share of jobs that request a GPU", _ratio(gpu_jobs, jobs), "fraction",
                       "gpu_job.requests_gpu", "all jobs", basis=jobs)
    result.add_finding("fractional_gpu_job_share", "share of GPU jobs that ask for a part of a GPU",
                       _ratio(c["fractional_gpu_jobs"], gpu_jobs), "fraction", "gpu_request.fractional", "GPU jobs",
                       basis=gpu_jobs)
    result.add_finding("gpu_hours", "GPU-hours requested by jobs with a run time", c["gpu_hours"], "GPU-hours",
                       "gpu_time.request_x_runtime", "jobs with a run time")
    result.add_finding("queue_delay_p50", "median queueing delay", c["queue_p50_s"], "s",
                       "queue_delay.submit_to_first_start", started, basis=c["queued_jobs"])
    result.add_finding("queue_delay_p90", "90th-percentile queueing delay", c["queue_p90_s"], "s",
                       "queue_delay.submit_to_first_start", started, basis=c["queued_jobs"])
    result.add_finding("run_time_p50", "median run time", c["run_p50_s"], "s", "runtime.first_start_to_last_end", timed,
                       basis=c["timed_jobs"])
    result.add_finding("run_time_p90", "90th-percentile run time", c["run_p90_s"], "s",
                       "runtime.first_start_to_last_end", timed, basis=c["timed_jobs"])
    add_time_checks(result, c["negative_queue_jobs"], c["queued_jobs"], c["negative_run_jobs"], c["timed_jobs"],
                    queue_findings=("queue_delay_p50", "queue_delay_p90"),
                    run_findings=("run_time_p50", "run_time_p90"))
    result.add("state_mix", state_mix(ctx), ("state.canonical", "gpu_time.request_x_runtime"),
               "a canonical final state")
    result.add("gpu_request_mix", gpu_request_mix(ctx), ("gpu_request.bucket", "gpu_time.request_x_runtime"),
               "a GPU-request bucket")
    return result


def _ratio(part: float | int | None, whole: float | int | None) -> float | None:
    return (part or 0) / whole if whole else None
