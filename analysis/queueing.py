"""Queueing: how long jobs wait between submission and their first start.

Queueing delay is the canonical `queue_delay.submit_to_first_start` (`jobs.queue_s`, seconds).
Jobs that never started have no delay: they are left out of quantiles and CDFs but counted in
every table (`jobs_never_started`), and the waiting-longer-than table gives the share both without
them and with them counted as waiting longer than every threshold. Tables: quantiles and CDFs by
GPU-request bucket, GPU type, VC and local hour of submission; shares over thresholds; wait over
completion time; queueing against the cluster's allocated GPUs at submission; and, where a trace
records other readings of the wait, those side by side (declared by the trace: slot `definitions`
of `ddlx.analysis.trace_parts`).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ddlx.analysis.allocation import shared_steps, trace_window
from ddlx.analysis.capacity import capacity_sources, gpu_capacity_sql
from ddlx.analysis.context import NO_WALL_CLOCK, TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.fast import load as fast_load
from ddlx.analysis.model import ModuleResult
from ddlx.analysis.options import DEFAULT_THRESHOLDS_S, DEFAULT_TOP_VCS
from ddlx.analysis.overview import add_time_checks
from ddlx.analysis.sql import (
    CDF_STEP,
    GPU_BUCKET_SQL,
    cdf_table,
    local_time_sql,
    quantile_columns_sql,
    sort_buckets,
)
from ddlx.analysis.trace_parts import run_trace_parts

QUEUE = "queue_delay.submit_to_first_start"
BUCKET = "gpu_request.bucket"

DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "queueing.wait_over_threshold", "Share of jobs waiting longer than a threshold", "fraction",
        "For a threshold T in seconds: jobs whose queueing delay (queue_delay.submit_to_first_start) "
        "is above T, over the jobs that started (share_of_started). Jobs that never started "
        "(no start time) are left out of that share; upper_share_with_never_started counts them "
        "as waiting longer than T, over the started and never-started jobs together (an upper "
        "bound: the trace does not say how long they waited).",
    ),
    Definition(
        "queueing.wait_share_of_completion", "Wait over completion time", "fraction",
        "queue_s / (queue_s + run_s) for each finished job: a job with a queueing delay "
        "(queue_delay.submit_to_first_start) and a run time (runtime.first_start_to_last_end), "
        "both non-negative and not both zero. Still-running and never-started jobs have none.",
    ),
    Definition(
        "queueing.allocated_gpus_at_submit", "Allocated GPUs at submission", "GPUs",
        "The allocated GPUs (utilization.allocated_gpus) of the job's cluster just before its "
        "submission instant: the sum of num_gpus of the cluster's jobs that started before that "
        "instant and had not ended before it (a job without an end holds its GPUs to the end of "
        "the trace; jobs that never started hold none). Found by an as-of join of each submission "
        "to the step function of allocated GPUs of its cluster.",
    ),
    Definition(
        "queueing.load_at_submit", "Cluster load at submission", "fraction",
        "queueing.allocated_gpus_at_submit divided by a reference number of GPUs of the same "
        "cluster, for each GPU job (gpu_job.requests_gpu) with a submission time. Two references, "
        "each in its own rows: reference = capacity, the cluster's GPU capacity valid at the "
        "submission instant from the trace's preferred capacity source (capacity.<source>, summed "
        "over the cluster's VCs or GPU types; jobs submitted when none is known are left out; "
        "only for traces that document a capacity); reference = peak_allocation, the largest "
        "number of GPUs allocated at once in the cluster over the whole trace (every trace). "
        "Binned in tenths: bin k (0-8) holds loads in [k/10, (k+1)/10), bin 9 loads in [0.9, 1] "
        "and bin 10 loads above 1 (more GPUs allocated than the reference: only against capacity).",
    ),
)

#: The load headline reads the highest load bin holding at least this share of the GPU jobs.
HEADLINE_BIN_SHARE = 0.01
#: Label of the rows that pool every GPU bucket / every cluster.
ALL = "all"
ALL_CLUSTERS = "all clusters"


def queue_source_sql(ctx: TraceContext) -> str:
    """A FROM item over this trace's jobs with the columns the queueing tables group and measure."""
    return f"""(
        SELECT cluster, vc, gpu_type, num_gpus, {GPU_BUCKET_SQL} AS gpu_bucket, queue_s, run_s,
               start_time IS NULL AS never_started, submit_time
        FROM {ctx.jobs})"""


def quantiles_and_cdf(ctx: TraceContext, source: str, groups: Sequence[str],
                      where: str = "TRUE") -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per group of `source` (a FROM item with `queue_s` and `never_started`): a summary (jobs,
    jobs never started, jobs with a queueing delay, p50/p90/p99/mean in s) and the CDF rows
    (`probability`, `queue_s`, `jobs_with_value`), both sorted by the group columns."""
    group_list = ", ".join(groups)
    cdf = (cdf_table(ctx, "queue_s", source, groups, where)
           .rename({"value": "queue_s", "rows": "jobs_with_value"}))
    summary = ctx.query(f"""
        SELECT {group_list}, count(*) AS jobs, count(*) FILTER (WHERE never_started) AS jobs_never_started,
               {quantile_columns_sql('queue_s', suffix='_s')}
        FROM {source} WHERE {where} GROUP BY {group_list} ORDER BY {group_list}""")
    return summary, cdf


def by_gpu_bucket(ctx: TraceContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Queueing-delay summary and CDF (s) per GPU-request bucket."""
    summary, cdf = quantiles_and_cdf(ctx, queue_source_sql(ctx), ["gpu_bucket"])
    return sort_buckets(summary), sort_buckets(cdf)


def by_gpu_type(ctx: TraceContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Queueing-delay summary and CDF (s) of GPU jobs per GPU type (NULL type: `unspecified`)."""
    source = f"""(SELECT *, coalesce(gpu_type, 'unspecified') AS gpu_type_label
                 FROM {queue_source_sql(ctx)} WHERE num_gpus > 0)"""
    summary, cdf = quantiles_and_cdf(ctx, source, ["gpu_type_label"])
    return summary.rename({"gpu_type_label": "gpu_type"}), cdf.rename({"gpu_type_label": "gpu_type"})


def by_vc(ctx: TraceContext, top_vcs: int = DEFAULT_TOP_VCS) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Queueing-delay summary and CDF (s) per cluster for its `top_vcs` VCs with most jobs, the
    rest pooled as 'other' (`vcs`: VCs in the row); jobs without a VC are in '(none)'."""
    source = f"""(
        WITH labelled AS (SELECT *, coalesce(vc, '(none)') AS vc_label FROM {queue_source_sql(ctx)}),
        ranked AS (
            SELECT cluster, vc_label,
                   row_number() OVER (PARTITION BY cluster ORDER BY count(*) DESC, vc_label) AS vc_rank
            FROM labelled GROUP BY cluster, vc_label),
        grouped AS (
            SELECT cluster, vc_label,
                   CASE WHEN vc_rank <= {int(top_vcs)} THEN vc_label ELSE 'other' END AS vc_group FROM ranked),
        counted AS (SELECT *, count(*) OVER (PARTITION BY cluster, vc_group) AS vcs FROM grouped)
        SELECT l.*, c.vc_group, c.vcs FROM labelled l JOIN counted c USING (cluster, vc_label))"""
    summary, cdf = quantiles_and_cdf(ctx, source, ["cluster", "vc_group", "vcs"])
    summary = (summary.rename({"vc_group": "vc"})
               .sort(["cluster", pl.col("vc") == "other", "jobs", "vc"], descending=[False, False, True, False]))
    return summary, cdf.drop("vcs").rename({"vc_group": "vc"})


def by_submit_hour(ctx: TraceContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Queueing-delay summary and CDF (s) per hour of day of submission (0-23, local time)."""
    source = f"""(SELECT *, CAST(hour({local_time_sql(ctx, 'submit_time')}) AS INTEGER) AS submit_hour
                 FROM {queue_source_sql(ctx)} WHERE submit_time IS NOT NULL)"""
    return quantiles_and_cdf(ctx, source, ["submit_hour"])


def _all_then_buckets(frame: pl.DataFrame, keys: Sequence[str] = ()) -> pl.DataFrame:
    """The `ALL` rows first, then the GPU buckets in their order; each block sorted by `keys`."""
    pooled = frame.filter(pl.col("gpu_bucket") == ALL)
    buckets = frame.filter(pl.col("gpu_bucket") != ALL)
    if keys:
        pooled, buckets = pooled.sort(list(keys)), buckets.sort(list(keys))
    return pl.concat([pooled, sort_buckets(buckets)])


def waits_over_thresholds(ctx: TraceContext, thresholds_s: Sequence[float] = DEFAULT_THRESHOLDS_S) -> pl.DataFrame:
    """Per GPU bucket (and `all`) and threshold: jobs waiting longer than it and their shares
    (definition `queueing.wait_over_threshold`)."""
    values = ", ".join(repr(float(t)) for t in thresholds_s)
    frame = ctx.query(f"""
        WITH thresholds AS (SELECT unnest(CAST([{values}] AS DOUBLE[])) AS threshold_s),
        counted AS (
            SELECT CASE WHEN grouping(gpu_bucket) = 1 THEN '{ALL}' ELSE gpu_bucket END AS gpu_bucket,
                   threshold_s, count(*) AS jobs, count(queue_s) AS jobs_with_value,
                   count(*) FILTER (WHERE never_started) AS jobs_never_started,
                   count(*) FILTER (WHERE queue_s > threshold_s) AS jobs_over
            FROM {queue_source_sql(ctx)} CROSS JOIN thresholds
            GROUP BY GROUPING SETS ((threshold_s), (gpu_bucket, threshold_s)))
        SELECT *, jobs_over / nullif(jobs_with_value, 0) AS share_of_started,
               (jobs_over + jobs_never_started) / nullif(jobs_with_value + jobs_never_started, 0)
                   AS upper_share_with_never_started
        FROM counted""")
    return _all_then_buckets(frame, ["threshold_s"])


def wait_share_of_completion(ctx: TraceContext) -> pl.DataFrame:
    """Quantiles of queue_s / (queue_s + run_s) of finished jobs per GPU bucket (and `all`)
    (definition `queueing.wait_share_of_completion`)."""
    frame = ctx.query(f"""
        SELECT CASE WHEN grouping(gpu_bucket) = 1 THEN '{ALL}' ELSE gpu_bucket END AS gpu_bucket,
               {quantile_columns_sql('wait_share', suffix='_share')}
        FROM (SELECT gpu_bucket, queue_s / (queue_s + run_s) AS wait_share FROM {queue_source_sql(ctx)}
              WHERE queue_s >= 0 AND run_s >= 0 AND queue_s + run_s > 0)
        GROUP BY GROUPING SETS ((), (gpu_bucket))""")
    return _all_then_buckets(frame)


#: Labels of the two references loads are measured against (definition `queueing.load_at_submit`).
CAPACITY = "capacity"
PEAK = "peak_allocation"


def capacity_source(ctx: TraceContext) -> str | None:
    """The capacity source loads are measured against: the trace's preferred one, if any."""
    sources = capacity_sources(ctx)
    return sources[0] if sources else None


def load_references_sql(ctx: TraceContext, steps: str) -> str:
    """A FROM item: per cluster, the GPUs loads are measured against and when: `reference`,
    `cluster`, `valid_from`, `valid_to` (the interval [valid_from, valid_to), open-ended with
    -infinity/infinity) and `reference_gpus`. The peak allocation always; the capacity of the
    preferred capacity source when the trace documents one (summed over VCs or GPU types)."""
    parts = [f"""SELECT '{PEAK}' AS reference, cluster, TIMESTAMPTZ '-infinity' AS valid_from,
                        TIMESTAMPTZ 'infinity' AS valid_to, max(gpus) AS reference_gpus
                 FROM {steps} GROUP BY cluster"""]
    source = capacity_source(ctx)
    if source is not None:
        parts.append(f"""
            SELECT '{CAPACITY}', cluster, coalesce(valid_from, TIMESTAMPTZ '-infinity'),
                   coalesce(valid_to, TIMESTAMPTZ 'infinity'), CAST(sum(gpus) AS DOUBLE)
            FROM {gpu_capacity_sql(ctx, [source])} GROUP BY ALL""")
    return "(" + " UNION ALL ".join(parts) + ")"


def queueing_by_load(ctx: TraceContext) -> pl.DataFrame:
    """GPU jobs binned by their cluster's load at submission (tenths of each reference: capacity
    where the trace documents it, and the peak allocation), with queueing-delay quantiles (s) and
    allocated GPUs per reference, cluster and bin, and per reference and bin over all clusters
    (definitions `queueing.allocated_gpus_at_submit`, `queueing.load_at_submit`).
    A tiny epsilon (1e-9 of a tenth) keeps a load exactly on a bin edge in the upper bin.
    Bin 9 holds loads in [0.9, 1], bin 10 loads above 1 (allocation above capacity).
    `_load_sql` with `_looked_up_sql` defines the rows; `ddlx.analysis.fast.load` finds the
    allocated GPUs at each submission faster."""
    window = trace_window(ctx)
    steps = (f"SELECT cluster, ts, gpus FROM {shared_steps(ctx, ['cluster'], window)}" if window else
             "SELECT NULL::VARCHAR AS cluster, NULL::DOUBLE AS ts, NULL::DOUBLE AS gpus WHERE FALSE")
    submitted = f"""SELECT cluster, submit_time, queue_s, start_time IS NULL AS never_started
                    FROM {ctx.jobs} WHERE num_gpus > 0 AND submit_time IS NOT NULL"""
    defining = _load_sql(ctx, steps, submitted, _looked_up_sql(by_cluster=True))

    def compute() -> pl.DataFrame:
        found = fast_load.allocated_at_submission(ctx, steps, submitted)
        if found is not None:
            with ctx.registered(found.to_arrow(), "ddlx_queueing_at_submit") as at_submit:
                return ctx.query(_load_sql(ctx, steps, submitted, f"SELECT * FROM {at_submit}"))
        if fast_load.without_the_cluster(ctx, steps, submitted):
            return ctx.query(_load_sql(ctx, steps, submitted, _looked_up_sql(by_cluster=False)))
        return ctx.query(defining)

    return ctx.catalog.computed(defining, compute)


def _looked_up_sql(by_cluster: bool) -> str:
    """The rows of the CTE `submitted` with `allocated_gpus` (`queueing.allocated_gpus_at_submit`:
    the GPUs of the cluster's last allocation step strictly before the submission, 0 without one),
    by an as-of join with the CTE `steps`. `by_cluster` False when both name one same cluster: the
    same rows (`ddlx.analysis.fast.load.without_the_cluster`)."""
    same_cluster = "j.cluster = s.cluster AND " if by_cluster else ""
    return f"""SELECT j.*, greatest(coalesce(s.gpus, 0), 0) AS allocated_gpus
               FROM submitted j ASOF LEFT JOIN steps s ON {same_cluster}epoch(j.submit_time) > s.ts"""


def _load_sql(ctx: TraceContext, steps: str, submitted: str, at_submit: str) -> str:
    """The query of `queueing_by_load`: `steps` (cluster, ts, gpus), `submitted` (the GPU jobs with
    a submission) and `at_submit` (those with `allocated_gpus`, reading the CTEs `submitted` and
    `steps` or not).

    A job takes the reference whose interval [valid_from, valid_to) of its cluster holds its
    submission. Where a reference has one interval in the cluster (the peak always; the capacity of
    a trace that gives one for the whole trace) that is a join on the cluster; where it has several
    (a capacity per day), an as-of join finds the latest interval begun by the submission, which
    DuckDB makes by sorting every job (4.2 s of CPU for 10.9 M jobs, even against one interval)."""
    return f"""
        WITH steps AS ({steps}),
        refs AS MATERIALIZED (
            SELECT *, count(*) OVER (PARTITION BY reference, cluster) AS intervals
            FROM {load_references_sql(ctx, 'steps')} WHERE reference_gpus > 0),
        submitted AS ({submitted}),
        at_submit AS MATERIALIZED ({at_submit}),
        referenced AS (
            SELECT a.*, r.reference, r.reference_gpus
            FROM at_submit a JOIN (SELECT * FROM refs WHERE intervals = 1) r
                ON a.cluster = r.cluster AND a.submit_time >= r.valid_from AND a.submit_time < r.valid_to
            UNION ALL
            SELECT a.*, r.reference, r.reference_gpus
            FROM (SELECT * FROM at_submit WHERE cluster IN (SELECT cluster FROM refs WHERE intervals > 1)) a
            ASOF JOIN (SELECT * FROM refs WHERE intervals > 1) r
                ON a.cluster = r.cluster AND a.submit_time >= r.valid_from
            WHERE a.submit_time < r.valid_to),
        binned AS (
            SELECT *, CASE WHEN allocated_gpus > reference_gpus THEN 10
                           ELSE CAST(least(floor(allocated_gpus * 10 / reference_gpus + 1e-9), 9) AS INTEGER)
                      END AS load_bin
            FROM referenced)
        SELECT reference, CASE WHEN grouping(cluster) = 1 THEN '{ALL_CLUSTERS}' ELSE cluster END AS cluster,
               load_bin, load_bin / 10 AS load_share_low,
               CASE WHEN load_bin < 10 THEN (load_bin + 1) / 10 END AS load_share_high,
               count(*) AS jobs, count(*) FILTER (WHERE never_started) AS jobs_never_started,
               {quantile_columns_sql('queue_s', suffix='_s')},
               avg(allocated_gpus) AS mean_allocated_gpus, min(allocated_gpus) AS min_allocated_gpus,
               max(allocated_gpus) AS max_allocated_gpus,
               CASE WHEN grouping(cluster) = 0 THEN avg(reference_gpus) END AS mean_reference_gpus
        FROM binned GROUP BY GROUPING SETS ((reference, cluster, load_bin), (reference, load_bin))
        ORDER BY reference, grouping(cluster), cluster, load_bin"""


def analyze(ctx: TraceContext) -> ModuleResult:
    result = ModuleResult("queueing")
    thresholds = ctx.options.queue_thresholds_s
    top_vcs = ctx.options.top_vcs or DEFAULT_TOP_VCS
    c = ctx.one_row(f"""
        SELECT count(*) AS jobs, count(queue_s) AS queued, count(*) FILTER (WHERE start_time IS NULL) AS never,
               count(*) FILTER (WHERE queue_s < 0) AS negative_queue,
               count(vc) AS with_vc, count(gpu_type) FILTER (WHERE num_gpus > 0) AS with_type
        FROM {ctx.jobs}""")
    if not c["queued"]:
        result.skip("queueing delay", "no job of the trace has a queueing delay (no start time is recorded)")
        return result
    started = f"{c['queued']:,} jobs with a queueing delay"

    bucket_summary, bucket_cdf = by_gpu_bucket(ctx)
    result.add("by_gpu_bucket", bucket_summary, (QUEUE, BUCKET), "a GPU-request bucket")
    result.add("cdf_by_gpu_bucket", bucket_cdf, (QUEUE, BUCKET, CDF_STEP), "a GPU-request bucket and a probability")
    if c["with_type"]:
        summary, cdf = by_gpu_type(ctx)
        result.add("by_gpu_type", summary, (QUEUE, "gpu_job.requests_gpu"), "a GPU type of GPU jobs")
        result.add("cdf_by_gpu_type", cdf, (QUEUE, "gpu_job.requests_gpu", CDF_STEP),
                   "a GPU type of GPU jobs and a probability")
    else:
        result.skip("queueing delay by GPU type", "the trace records no GPU type")
    if c["with_vc"]:
        summary, cdf = by_vc(ctx, top_vcs)
        result.add("by_vc", summary, (QUEUE,),
                   f"a cluster's VC among its {top_vcs} with most jobs, or the rest of its VCs ('other')")
        result.add("cdf_by_vc", cdf, (QUEUE, CDF_STEP), "a cluster's VC (or 'other') and a probability")
    else:
        result.skip("queueing delay by VC", "the trace records no virtual cluster")
    if ctx.has_wall_clock:
        summary, cdf = by_submit_hour(ctx)
        result.add("by_submit_hour", summary, (QUEUE,), f"an hour of day of submission in {ctx.local_tz}")
        result.add("cdf_by_submit_hour", cdf, (QUEUE, CDF_STEP), "an hour of day of submission and a probability")
    else:
        result.skip("queueing delay by hour of submission", NO_WALL_CLOCK)

    over = result.add("waits_over_thresholds", waits_over_thresholds(ctx, thresholds),
                      ("queueing.wait_over_threshold", QUEUE, BUCKET),
                      "a GPU-request bucket (or all jobs) and a threshold")
    shares = result.add("wait_share_of_completion", wait_share_of_completion(ctx),
                        ("queueing.wait_share_of_completion", QUEUE, "runtime.first_start_to_last_end", BUCKET),
                        "a GPU-request bucket (or all finished jobs)")

    load = queueing_by_load(ctx)
    source = capacity_source(ctx)
    against_capacity = load.height > 0 and bool(load["reference"].eq(CAPACITY).any())
    if load.height:
        capacity_definitions = (f"capacity.{source}",) if against_capacity else ()
        result.add("by_load_at_submit", load,
                   (QUEUE, "queueing.allocated_gpus_at_submit", "queueing.load_at_submit", "gpu_job.requests_gpu",
                    "utilization.allocated_gpus", *capacity_definitions),
                   "a load reference (capacity or peak allocation), a cluster (or all clusters) and a "
                   "tenth of the reference at submission (10: above it)")
    else:
        result.skip("queueing against cluster load", "no GPU job of the trace ever started (no allocation)")
    if source is None:
        result.skip("queueing against load as a share of capacity",
                    "the trace documents no GPU capacity: load is measured against the peak allocation only")
    elif load.height and not against_capacity:
        result.skip("queueing against load as a share of capacity",
                    f"no GPU job was submitted while {source} gives a capacity for its cluster")

    run_trace_parts(ctx, result, "definitions",
                    ("other readings of the queueing delay", "the trace records no tasks with their instances"))

    _findings(result, c, started, bucket_summary, over, shares, load)
    add_time_checks(result, c["negative_queue"], c["queued"],
                    queue_findings=tuple(f.name for f in result.findings if f.name != "never_started_share"))
    return result


def _findings(result: ModuleResult, c: dict, started: str, by_bucket: pl.DataFrame, over: pl.DataFrame,
              shares: pl.DataFrame, load: pl.DataFrame) -> None:
    """The module's headline lines."""
    one_gpu = by_bucket.filter((pl.col("gpu_bucket") == "1") & (pl.col("jobs_with_value") > 0))
    if one_gpu.height:
        result.add_finding("queue_delay_p50_1gpu", "median queueing delay of 1-GPU jobs", one_gpu["p50_s"][0], "s",
                           QUEUE, f"{one_gpu['jobs_with_value'][0]:,} 1-GPU jobs with a queueing delay",
                           basis=one_gpu["jobs_with_value"][0])
    multi = by_bucket.filter(pl.col("gpu_bucket").is_in(["(4,8]", ">8"]) & (pl.col("jobs_with_value") > 0))
    if multi.height:
        largest = multi.tail(1)
        label = largest["gpu_bucket"][0]
        result.add_finding(
            "queue_delay_p50_largest", f"median queueing delay of jobs asking for {label} GPUs", largest["p50_s"][0],
            "s", QUEUE, f"{largest['jobs_with_value'][0]:,} jobs with a queueing delay",
            basis=largest["jobs_with_value"][0])
    hour = over.filter((pl.col("gpu_bucket") == ALL) & (pl.col("threshold_s") == 3600.0))
    if hour.height:
        result.add_finding("wait_over_1h_share", "share of started jobs that waited longer than 1 h",
                           hour["share_of_started"][0], "fraction", "queueing.wait_over_threshold", started,
                           basis=c["queued"])
    result.add_finding("never_started_share", "share of jobs that never started", (c["never"] or 0) / c["jobs"],
                       "fraction", QUEUE, f"{c['jobs']:,} jobs", basis=c["jobs"])
    pooled = shares.filter(pl.col("gpu_bucket") == ALL)
    if pooled.height and pooled["jobs_with_value"][0]:
        result.add_finding("wait_share_p50", "median share of completion time spent waiting", pooled["p50_share"][0],
                           "fraction", "queueing.wait_share_of_completion",
                           f"{pooled['jobs_with_value'][0]:,} finished jobs", basis=pooled["jobs_with_value"][0])
    for reference, label in ((CAPACITY, "capacity"), (PEAK, "peak allocation")):
        pooled_bins = load.filter((pl.col("reference") == reference) & (pl.col("cluster") == ALL_CLUSTERS))
        # The highest load bin that holds at least 1 % of the binned jobs (a handful of jobs at a
        # rare peak would make a noisy headline).
        busiest = pooled_bins.filter((pl.col("jobs_with_value") > 0)
                                     & (pl.col("jobs") >= HEADLINE_BIN_SHARE * pooled_bins["jobs"].sum())).tail(1)
        if not busiest.height:
            continue
        low, high = busiest["load_share_low"][0], busiest["load_share_high"][0]
        span = f"{low:.0%}-{high:.0%}" if high is not None else f"more than {low:.0%}"
        result.add_finding(f"queue_delay_p50_at_high_load_{reference}",
                           f"median queueing delay at {span} of {label}",
                           busiest["p50_s"][0], "s", "queueing.load_at_submit",
                           f"{busiest['jobs_with_value'][0]:,} GPU jobs with a queueing delay in the highest "
                           f"load bin holding at least {HEADLINE_BIN_SHARE:.0%} of the GPU jobs",
                           basis=busiest["jobs_with_value"][0])
