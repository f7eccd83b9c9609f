"""Durations: how long jobs run, by GPU bucket and by final state, with jobs still running at the
trace end kept as censored observations (their run so far) and a Kaplan-Meier estimate of the
run-time distribution next to the plain distribution of the jobs that ended.

Everything is computed in SQL from one aggregated table per grouping: per group and distinct
observed time, the jobs that ended and the jobs censored there. The Kaplan-Meier product, the
quantiles (continuous for summaries, steps for CDFs) and the survival at fixed run times
are window sums and ASOF joins over that table, so the jobs are scanned once per grouping and no
Python loops over jobs or times.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.model import ModuleResult, held_to_end_text
from ddlx.analysis.sql import (
    CDF_PROBABILITIES,
    CDF_STEP,
    GPU_BUCKET_SQL,
    SUMMARY_QUANTILES,
    double_list_sql,
    quantiles_from_counts_sql,
    sort_buckets,
    trace_end_sql,
)

if TYPE_CHECKING:
    from ddlx.analysis.engines import Engine

DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "durations.finished_runtime", "Run time of jobs that ended", "s",
        "Run time (runtime.first_start_to_last_end) of the jobs that ended, whatever their final "
        "state: every job with a run time except those whose state is running. Its quantiles are "
        "continuous (stat.quantile) and its CDFs steps through the run times themselves "
        "(stat.cdf_step). Leaving "
        "out the jobs still running biases this distribution towards short runs; see "
        "durations.kaplan_meier_runtime.",
    ),
    Definition(
        "durations.censored_runtime", "Run so far of a job still running (censored)", "s",
        "For a job that started but did not end within the trace (no end time, or state running): "
        "its run so far, a lower bound on its run time. It is the trace end (the last submit, start "
        "or end instant any job of the trace records) minus the job's start, in seconds; a running "
        "job that carries a run time (imported tables) is censored at that run time. Jobs with "
        "neither a start time nor a run time (never started, or start not recorded) are neither "
        "finished nor censored: they are counted as untimed and left out. In a trace whose jobs "
        "without an end are ends that were not logged, those jobs are untimed too (left out, never "
        "given an invented end); headlines give the value with them censored at the trace end "
        "beside.",
    ),
    Definition(
        "durations.kaplan_meier_runtime", "Kaplan-Meier run time", "s",
        "The Kaplan-Meier estimate of the run-time distribution from the finished run times "
        "(durations.finished_runtime, the events) and the censored runs so far "
        "(durations.censored_runtime): survival S(t) = product over the distinct finished run times "
        "t_i <= t of (1 - d_i / n_i), with d_i the jobs ending at t_i and n_i the jobs observed for "
        "at least t_i (a job censored at t_i counts as still at risk at t_i). Quantile p: the "
        "smallest finished run time t with 1 - S(t) >= p; none when the estimate never reaches p "
        "(the longest observations are censored). Without censored jobs it is the empirical "
        "distribution of the finished run times (a quantile is then an order statistic, not "
        "interpolated). Estimated per GPU bucket and over all jobs, not per final state (a job "
        "still running has no final state yet, so its group would be censored throughout).",
    ),
)

ALL = "all"

#: The tables `ddlx datasets reduce` stores into the catalog (module table -> catalog table suffix).
CATALOG_TABLES = {"run_time_by_gpu_bucket": "run_time_by_gpu_bucket", "run_time_by_state": "run_time_by_state"}
#: Run times (s) at which survival is reported: 1 min, 10 min, 1 h, 6 h, 1 day, 1 week, 30 days.
SURVIVAL_TIMES_S: tuple[float, ...] = (60.0, 600.0, 3600.0, 6 * 3600.0, 86400.0, 7 * 86400.0, 30 * 86400.0)
#: Slack when comparing an estimated CDF (a product of floats) with a probability.
_CDF_SLACK = 1e-9


def trace_end_epoch_s(ctx: TraceContext) -> float | None:
    """The trace end (`trace_end_sql`) in Unix seconds; None for a trace without any time."""
    return ctx.one_row(f"SELECT epoch({trace_end_sql(ctx)}) AS end_s")["end_s"]


def observations_sql(ctx: TraceContext, trace_end_s: float | None = None) -> str:
    """A FROM item: every job of the trace with `gpu_bucket`, `state`, `time_s` (run time, or run so
    far for a censored job; NULL for an untimed job) and `finished` (true: ended; false: censored;
    NULL: untimed). Definitions durations.finished_runtime and durations.censored_runtime.
    `trace_end_s`: the trace end in Unix seconds when already known (saves a scan per query)."""
    end = repr(float(trace_end_s)) if trace_end_s is not None else f"epoch({trace_end_sql(ctx)})"
    # A started job without a run time is censored at the trace end, the last instant the trace
    # could have seen it end, unless the trace's jobs without an end are ends that were not logged:
    # then it is untimed (left out).
    held = ctx.holds_open("job")
    open_run = f"greatest({end} - epoch(start_time), 0)" if held else "NULL"
    untimed = "start_time IS NULL" if held else "TRUE"
    return f"""(
        SELECT {GPU_BUCKET_SQL} AS gpu_bucket, state,
               CASE WHEN run_s IS NOT NULL THEN run_s
                    WHEN start_time IS NOT NULL THEN {open_run}
               END AS time_s,
               CASE WHEN run_s IS NULL AND {untimed} THEN NULL
                    ELSE run_s IS NOT NULL AND state IS DISTINCT FROM 'running' END AS finished
        FROM {ctx.jobs})"""


def _all_first(frame: pl.DataFrame, column: str = "gpu_bucket") -> pl.DataFrame:
    """`frame` with the 'all' rows first, then GPU buckets in their usual order (stable)."""
    return pl.concat([frame.filter(pl.col(column) == ALL), sort_buckets(frame.filter(pl.col(column) != ALL), column)])


def bucket_counts_sql(observations: str, per_bucket: bool = True) -> str:
    """The run-time reduction per GPU bucket, over `observations` (`observations_sql` rows): per
    bucket (and over all jobs, 'all') and distinct observed time (NULL for untimed jobs), the jobs
    that ended there (`finished_n`), those censored there (`censored_n`) and all (`all_n`). Counts
    of distinct values merge by addition, so every quantile, CDF and Kaplan-Meier figure is exact
    from them; SQL written once (DuckDB's dialect; `ddlx.analysis.engines` runs it on Spark).
    `per_bucket` False: the 'all' rows alone."""
    counts = """time_s, count(*) FILTER (WHERE finished) AS finished_n,
               count(*) FILTER (WHERE NOT finished) AS censored_n, count(*) AS all_n"""
    if not per_bucket:
        return f"SELECT '{ALL}' AS gpu_bucket, {counts} FROM {observations} GROUP BY time_s"
    return f"""
        SELECT CASE WHEN grouping(gpu_bucket) = 1 THEN '{ALL}' ELSE gpu_bucket END AS gpu_bucket, {counts}
        FROM {observations} GROUP BY GROUPING SETS ((gpu_bucket, time_s), (time_s))"""


def state_counts_sql(observations: str) -> str:
    """The run-time reduction per final state, over `observations`: per state (`state_key`: '' for
    NULL), kind of observation (`censored`: false ended, true censored, NULL untimed) and distinct
    observed time, the jobs (`n`). Written once, as `bucket_counts_sql`."""
    return f"""
        SELECT state, coalesce(state, '') AS state_key, NOT finished AS censored, time_s, count(*) AS n
        FROM {observations} GROUP BY state, finished, time_s"""


@dataclass(frozen=True)
class RunTimeCounts:
    """The run-time reduction's two count tables as FROM items (`bucket_counts_sql`,
    `state_counts_sql`)."""

    by_bucket: str
    by_state: str

    @classmethod
    def inline(cls, ctx: TraceContext, trace_end_s: float | None, per_bucket: bool = True) -> "RunTimeCounts":
        """The counts as subqueries of the catalog's jobs (computed where they are read); with
        `per_bucket` False, those over all jobs alone (`bucket_counts_sql`)."""
        observations = observations_sql(ctx, trace_end_s)
        return cls(f"({bucket_counts_sql(observations, per_bucket)})", f"({state_counts_sql(observations)})")


@contextmanager
def reduced_counts(ctx: TraceContext, trace_end_s: float | None, engine: Engine) -> Iterator[RunTimeCounts]:
    """The run-time counts reduced once on `engine` from the catalog's jobs, as tables of the
    catalog's connection for the duration of the block. On DuckDB they are tables of catalog
    queries (`TraceContext.materialized`): a run whose results of them are kept never reduces them."""
    from ddlx.analysis.engines import DuckDBEngine

    stem = "ddlx_run_time_"
    if engine.name == DuckDBEngine.name:
        observations = f"({observations_sql(ctx, trace_end_s)})"
        with ctx.materialized(bucket_counts_sql(observations), f"{stem}by_bucket") as by_bucket, \
                ctx.materialized(state_counts_sql(observations), f"{stem}by_state") as by_state:
            yield RunTimeCounts(by_bucket, by_state)
        return
    engine.register_local(f"{stem}observations", ctx.con, observations_sql(ctx, trace_end_s))
    tables = {f"{stem}by_bucket": engine.query(bucket_counts_sql(f"{stem}observations"), "run-time counts"),
              f"{stem}by_state": engine.query(state_counts_sql(f"{stem}observations"), "run-time counts")}
    for name, table in tables.items():
        ctx.con.register(name, table)
    try:
        yield RunTimeCounts(f"{stem}by_bucket", f"{stem}by_state")
    finally:
        for name in tables:
            ctx.con.unregister(name)


def _bucket_curves_ctes(counts: RunTimeCounts) -> str:
    """CTEs for the GPU-bucket curves ('all' included), from `counts.by_bucket`:

    - `steps`: per bucket and distinct observed time (NULL for untimed jobs): `finished_n`,
      `censored_n`, `all_n`;
    - `groups`: per bucket `jobs`, `finished_jobs`, `censored_jobs`, `untimed_jobs`, `mean_s`
      (mean finished run time);
    - `events`: per bucket and distinct finished run time: `finished_cum` (finished jobs at or
      below it), `cdf_km` (1 - Kaplan-Meier survival) and `cdf_km_reach` (with slack).
    """
    return f"""
        steps AS (SELECT * FROM {counts.by_bucket}),
        groups AS (
            SELECT gpu_bucket, sum(all_n)::BIGINT AS jobs, sum(finished_n)::BIGINT AS finished_jobs,
                   sum(censored_n)::BIGINT AS censored_jobs,
                   coalesce(sum(all_n) FILTER (WHERE time_s IS NULL), 0)::BIGINT AS untimed_jobs,
                   sum(time_s * finished_n) / nullif(sum(finished_n), 0) AS mean_s
            FROM steps GROUP BY gpu_bucket),
        risk AS (
            SELECT gpu_bucket, time_s, finished_n,
                   sum(finished_n) OVER (PARTITION BY gpu_bucket ORDER BY time_s
                                         ROWS UNBOUNDED PRECEDING) AS finished_cum,
                   sum(finished_n + censored_n) OVER (PARTITION BY gpu_bucket ORDER BY time_s DESC
                                                      ROWS UNBOUNDED PRECEDING) AS at_risk
            FROM steps WHERE time_s IS NOT NULL),
        curve AS (
            SELECT *, 1 - product(1 - finished_n / at_risk) OVER (PARTITION BY gpu_bucket ORDER BY time_s
                                                                   ROWS UNBOUNDED PRECEDING) AS cdf_km
            FROM risk),
        events AS (
            SELECT gpu_bucket, time_s, finished_cum, cdf_km, cdf_km + {_CDF_SLACK} AS cdf_km_reach
            FROM curve WHERE finished_n > 0)"""


def _bucket_cdf_query(ctx: TraceContext, counts: RunTimeCounts, probabilities: Sequence[float],
                      keep: str | None = None) -> pl.DataFrame:
    """Quantiles of run time per GPU bucket from `counts` (`keep` as `TraceContext.query`)."""
    return ctx.query(f"""
        WITH {_bucket_curves_ctes(counts)},
        probs AS (SELECT *, unnest({double_list_sql(probabilities)}) AS probability FROM groups),
        plain AS ({quantiles_from_counts_sql(
            "probs", "(SELECT gpu_bucket, time_s, finished_cum AS cum FROM events)", ("gpu_bucket",),
            "finished_jobs", value="time_s")})
        SELECT plain.gpu_bucket, plain.probability, plain.quantile AS run_s, plain.step_quantile AS run_s_step,
               plain.finished_jobs, km.time_s AS run_s_km, plain.censored_jobs,
               plain.jobs, plain.untimed_jobs, plain.mean_s
        FROM plain ASOF LEFT JOIN events AS km
          ON plain.gpu_bucket = km.gpu_bucket AND plain.probability <= km.cdf_km_reach
        ORDER BY plain.gpu_bucket, plain.probability""", keep)


def run_time_cdf_by_gpu_bucket(ctx: TraceContext, trace_end_s: float | None = None,
                               probabilities: Sequence[float] = CDF_PROBABILITIES) -> pl.DataFrame:
    """Per GPU bucket and over all jobs ('all'), at each probability: `run_s`, the empirical CDF
    (stat.cdf_step) of the finished run times (durations.finished_runtime) over `finished_jobs`,
    next to `run_s_km`, the
    Kaplan-Meier quantile (durations.kaplan_meier_runtime) that also uses the `censored_jobs`
    (NULL where the estimate never reaches the probability)."""
    return _bucket_cdf(_bucket_cdf_query(ctx, RunTimeCounts.inline(ctx, trace_end_s), probabilities))


def _bucket_cdf(rows: pl.DataFrame) -> pl.DataFrame:
    """The CDF table from `_bucket_cdf_query` rows: groups with no timed job left out."""
    frame = rows.filter(pl.col("finished_jobs") + pl.col("censored_jobs") > 0)
    return _all_first(frame.select("gpu_bucket", "probability", pl.col("run_s_step").alias("run_s"), "finished_jobs",
                                   "run_s_km", "censored_jobs"))


def run_time_by_gpu_bucket(ctx: TraceContext, trace_end_s: float | None = None) -> pl.DataFrame:
    """Per GPU bucket and over all ('all'): jobs, finished, censored and untimed jobs, quantiles
    (`p50_s`, ...) and mean of the finished run times (durations.finished_runtime) and Kaplan-Meier
    quantiles (`km_p50_s`, ...; durations.kaplan_meier_runtime), in seconds."""
    return _bucket_summary(_bucket_cdf_query(ctx, RunTimeCounts.inline(ctx, trace_end_s),
                                             tuple(SUMMARY_QUANTILES.values())))


def _bucket_summary(cdf: pl.DataFrame) -> pl.DataFrame:
    """The per-bucket summary from `_bucket_cdf_query` rows (which must hold the summary quantiles)."""
    frame = cdf.select("gpu_bucket", "jobs", "finished_jobs", "censored_jobs", "untimed_jobs").unique(
        "gpu_bucket", maintain_order=True)
    for column, source in (("{}_s", "run_s"), ("km_{}_s", "run_s_km")):
        for name, q in SUMMARY_QUANTILES.items():
            at_q = cdf.filter((pl.col("probability") - q).abs() < 1e-12).select(
                "gpu_bucket", pl.col(source).alias(column.format(name)))
            frame = frame.join(at_q, on="gpu_bucket", how="left")
        if source == "run_s":
            frame = frame.join(cdf.select("gpu_bucket", "mean_s").unique("gpu_bucket"), on="gpu_bucket", how="left")
    return _all_first(frame)


def survival_by_gpu_bucket(ctx: TraceContext, trace_end_s: float | None = None,
                           times_s: Sequence[float] = SURVIVAL_TIMES_S,
                           counts: RunTimeCounts | None = None) -> pl.DataFrame:
    """Per GPU bucket and over all ('all'), at each run time `run_s` of `times_s`: `survival_km`,
    the Kaplan-Meier share of jobs running longer (durations.kaplan_meier_runtime), and
    `survival_finished`, the plain share of finished jobs that ran longer (durations.finished_runtime)."""
    frame = ctx.query(f"""
        WITH {_bucket_curves_ctes(counts or RunTimeCounts.inline(ctx, trace_end_s))},
        grid AS (SELECT gpu_bucket, finished_jobs, unnest({double_list_sql(times_s)}) AS run_s
                 FROM groups WHERE finished_jobs + censored_jobs > 0)
        SELECT g.gpu_bucket, g.run_s, coalesce(1 - e.cdf_km, 1.0) AS survival_km,
               1 - coalesce(e.finished_cum, 0) / nullif(g.finished_jobs, 0) AS survival_finished
        FROM grid AS g ASOF LEFT JOIN events AS e ON g.gpu_bucket = e.gpu_bucket AND g.run_s >= e.time_s
        ORDER BY g.gpu_bucket, g.run_s""")
    return _all_first(frame)


def _state_cdf_query(ctx: TraceContext, counts: RunTimeCounts, probabilities: Sequence[float]) -> pl.DataFrame:
    """Per final state and kind of observation (`censored` false: finished run times; true: runs so
    far), at each probability: `run_s` (continuous quantile, stat.quantile), `run_s_step` (the
    empirical CDF's, stat.cdf_step) and `jobs` in the curve; plus the
    state's counts (`state_jobs`, `finished_jobs`, `censored_jobs`, `untimed_jobs`) and `mean_s`."""
    return ctx.query(f"""
        WITH steps AS (SELECT * FROM {counts.by_state}),
        counts AS (
            SELECT state_key, sum(n)::BIGINT AS state_jobs,
                   coalesce(sum(n) FILTER (WHERE NOT censored), 0)::BIGINT AS finished_jobs,
                   coalesce(sum(n) FILTER (WHERE censored), 0)::BIGINT AS censored_jobs,
                   coalesce(sum(n) FILTER (WHERE censored IS NULL), 0)::BIGINT AS untimed_jobs,
                   sum(time_s * n) FILTER (WHERE NOT censored) / nullif(sum(n) FILTER (WHERE NOT censored), 0)
                       AS mean_s
            FROM steps GROUP BY state_key),
        curves AS (
            SELECT state_key, censored, time_s,
                   sum(n) OVER (PARTITION BY state_key, censored ORDER BY time_s ROWS UNBOUNDED PRECEDING) AS cum
            FROM steps WHERE time_s IS NOT NULL),
        probs AS (
            SELECT state, state_key, censored, sum(n)::BIGINT AS jobs, unnest({double_list_sql(
                                                                                   probabilities)}) AS probability
            FROM steps WHERE time_s IS NOT NULL GROUP BY state, state_key, censored),
        quantiles AS ({quantiles_from_counts_sql("probs", "curves", ("state_key", "censored"), "jobs",
                                                 value="time_s")})
        SELECT q.state, q.censored, q.probability, q.quantile AS run_s, q.step_quantile AS run_s_step, q.jobs,
               c.state_jobs, c.finished_jobs, c.censored_jobs, c.untimed_jobs, c.mean_s
        FROM quantiles AS q JOIN counts AS c USING (state_key)
        UNION ALL
        SELECT s.state, NULL, NULL, NULL, NULL, NULL, c.state_jobs, c.finished_jobs, c.censored_jobs,
               c.untimed_jobs, NULL
        FROM (SELECT DISTINCT state, state_key FROM steps) AS s JOIN counts AS c USING (state_key)
        WHERE c.finished_jobs + c.censored_jobs = 0""")


def run_time_cdf_by_state(ctx: TraceContext, trace_end_s: float | None = None,
                          probabilities: Sequence[float] = CDF_PROBABILITIES) -> pl.DataFrame:
    """Per final state, at each probability: the CDF of the finished run times (`censored` false;
    durations.finished_runtime) and, apart, of the runs so far of censored jobs (`censored` true;
    durations.censored_runtime, lower bounds), with the `jobs` in each curve."""
    return _state_cdf(_state_cdf_query(ctx, RunTimeCounts.inline(ctx, trace_end_s), probabilities))


def _state_cdf(frame: pl.DataFrame) -> pl.DataFrame:
    return (frame.filter(pl.col("probability").is_not_null())
                 .select("state", "censored", "probability", pl.col("run_s_step").alias("run_s"), "jobs")
                 .sort("state", "censored", "probability", nulls_last=True))


def run_time_by_state(ctx: TraceContext, trace_end_s: float | None = None) -> pl.DataFrame:
    """Per final state: jobs, finished, censored and untimed jobs, quantiles and mean of the finished
    run times (s; durations.finished_runtime), and the median run so far of the censored ones
    (`censored_p50_s`; durations.censored_runtime)."""
    return _state_summary(_state_cdf_query(ctx, RunTimeCounts.inline(ctx, trace_end_s),
                                           tuple(SUMMARY_QUANTILES.values())))


def _state_summary(rows: pl.DataFrame) -> pl.DataFrame:
    """The per-state summary from `_state_cdf_query` rows (which must hold the summary quantiles)."""
    frame = (rows.select("state", pl.col("state_jobs").alias("jobs"), "finished_jobs", "censored_jobs",
                         "untimed_jobs").unique("state", maintain_order=True))
    finished = rows.filter(pl.col("censored") == False)  # noqa: E712 (a polars expression)
    for name, q in SUMMARY_QUANTILES.items():
        at_q = finished.filter((pl.col("probability") - q).abs() < 1e-12).select(
            "state", pl.col("run_s").alias(f"{name}_s"))
        frame = frame.join(at_q, on="state", how="left", nulls_equal=True)
    frame = frame.join(finished.select("state", "mean_s").unique("state"), on="state", how="left", nulls_equal=True)
    censored = rows.filter(pl.col("censored") & ((pl.col("probability") - 0.5).abs() < 1e-12)).select(
        "state", pl.col("run_s").alias("censored_p50_s"))
    frame = frame.join(censored, on="state", how="left", nulls_equal=True)
    return frame.sort("jobs", "state", descending=[True, False], nulls_last=True)


def _held_open(ctx: TraceContext, trace_end_s: float | None,
               probabilities: tuple[float, ...]) -> dict[str, Any] | None:
    """For a trace that leaves out started jobs with no end and has some: the overall Kaplan-Meier
    quantiles with them censored at the trace end instead (`km_p50_s`, `km_p90_s`) and how many
    they are (`left_out`); else None."""
    if ctx.holds_open("job"):
        return None
    left_out = ctx.one_row(f"SELECT count(*) AS n FROM {ctx.jobs} "
                           "WHERE start_time IS NOT NULL AND run_s IS NULL")["n"]
    if not left_out:
        return None
    with ctx.holding_open("job"):
        counts = RunTimeCounts.inline(ctx, trace_end_s, per_bucket=False)
        summary = _bucket_summary(_bucket_cdf_query(ctx, counts, probabilities,
                                                     keep="durations_held_open"))
    row = summary.filter(pl.col("gpu_bucket") == ALL).row(0, named=True)
    return {"km_p50_s": row["km_p50_s"], "km_p90_s": row["km_p90_s"], "left_out": left_out}


def analyze(ctx: TraceContext) -> ModuleResult:
    result = ModuleResult("durations")
    trace_end_s = trace_end_epoch_s(ctx)
    engine = ctx.engine()
    with reduced_counts(ctx, trace_end_s, engine) as counts:
        if not _tables(ctx, result, trace_end_s, counts):
            return result
    jobs = ctx.one_row(f"SELECT count(*) AS n FROM {ctx.jobs}")["n"]
    provenance = engine.provenance(f"catalog jobs ({jobs:,} jobs)")
    result.add("reduction", pl.DataFrame([provenance.as_dict()]), ("engine.reduction",),
               "the engine the run-time counts were reduced on")
    _findings(ctx, result, trace_end_s)
    return result


def _tables(ctx: TraceContext, result: ModuleResult, trace_end_s: float | None, counts: RunTimeCounts) -> bool:
    """Add the module's tables from the run-time `counts`; False (and why, in `result`) when no
    job has a run time."""
    probabilities = tuple(sorted(set(CDF_PROBABILITIES) | set(SUMMARY_QUANTILES.values())))
    bucket_rows = _bucket_cdf_query(ctx, counts, probabilities)
    overall = bucket_rows.filter(pl.col("gpu_bucket") == ALL).row(0, named=True) if bucket_rows.height else {}
    if not (overall.get("finished_jobs") or overall.get("censored_jobs")):
        result.skip("run-time distributions", "no job of this trace has a run time or a start time")
        return False
    km_defs = ("durations.finished_runtime", "durations.censored_runtime", "durations.kaplan_meier_runtime",
               "gpu_request.bucket")
    result.add("run_time_by_gpu_bucket", _bucket_summary(bucket_rows), km_defs,
               "a GPU bucket, or all jobs (gpu_bucket 'all')")
    cdf = _bucket_cdf(bucket_rows.filter(pl.col("probability").is_in(list(CDF_PROBABILITIES))))
    result.add("run_time_cdf_by_gpu_bucket", cdf, km_defs + (CDF_STEP,),
               "a probability of the run-time distribution of a GPU bucket or of all jobs ('all'): the "
               "plain CDF of finished jobs next to the Kaplan-Meier estimate with still-running jobs censored")
    result.add("run_time_survival_by_gpu_bucket", survival_by_gpu_bucket(ctx, trace_end_s, counts=counts), km_defs,
               "a run time of a fixed grid in a GPU bucket or over all jobs ('all'): share of jobs "
               "running longer")
    state_rows = _state_cdf_query(ctx, counts, probabilities)
    if state_rows["state"].is_not_null().any():
        state_defs = ("durations.finished_runtime", "durations.censored_runtime", "state.canonical")
        result.add("run_time_by_state", _state_summary(state_rows), state_defs, "a final state")
        state_cdf = _state_cdf(state_rows.filter(pl.col("probability").is_in(list(CDF_PROBABILITIES))))
        result.add("run_time_cdf_by_state", state_cdf, state_defs + (CDF_STEP,),
                   "a probability of the run-time CDF of a final state, for finished jobs (censored "
                   "false) or for the run so far of jobs still running (censored true)")
    else:
        result.skip("run time by final state", "the trace records no job states")
    return True


def _findings(ctx: TraceContext, result: ModuleResult, trace_end_s: float | None) -> None:
    """The module's findings, from its `run_time_by_gpu_bucket` table."""
    probabilities = tuple(sorted(set(CDF_PROBABILITIES) | set(SUMMARY_QUANTILES.values())))
    by_bucket = result.table("run_time_by_gpu_bucket")
    overall = by_bucket.filter(pl.col("gpu_bucket") == ALL).to_dicts()[0]
    finished, censored = overall["finished_jobs"], overall["censored_jobs"]
    timed = finished + censored
    km_population = f"{timed:,} jobs that started ({censored:,} still running, censored)"
    held = _held_open(ctx, trace_end_s, probabilities)
    if held:
        km_population += f"; {held['left_out']:,} with no recorded end left out"
    result.add_finding("run_time_p50_km", "median run time (Kaplan-Meier, running jobs censored)",
                       overall["km_p50_s"], "s", "durations.kaplan_meier_runtime", km_population,
                       held_to_end_text(held["km_p50_s"], "s", held["left_out"], "job") if held else "", basis=timed)
    result.add_finding("run_time_p90_km", "90th-percentile run time (Kaplan-Meier, running jobs censored)",
                       overall["km_p90_s"], "s", "durations.kaplan_meier_runtime", km_population,
                       held_to_end_text(held["km_p90_s"], "s", held["left_out"], "job") if held else "", basis=timed)
    result.add_finding("run_time_p50_finished", "median run time of jobs that ended", overall["p50_s"], "s",
                       "durations.finished_runtime", f"{finished:,} jobs that ended", basis=finished)
    # One count of jobs without an end: those held open as censored, and (where the trace's missing
    # ends are unlogged ends) those left out, said in the same line.
    left_out = f"; the {held['left_out']:,} started jobs with no recorded end are left out (untimed)" if held else ""
    result.add_finding("censored_jobs", f"jobs still running at the trace end (censored){left_out}", censored,
                       "jobs", "durations.censored_runtime", f"{timed:,} jobs that started")
    result.add_finding("censored_share", f"share of started jobs still running at the trace end{left_out}",
                       censored / timed, "fraction", "durations.censored_runtime", f"{timed:,} jobs that started",
                       basis=timed)
