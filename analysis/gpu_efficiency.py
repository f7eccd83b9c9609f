"""GPU efficiency from telemetry: the GPU samples imported beside a dataset (`ddlx datasets
import-metrics`, canonical view `gpu_samples`) attributed to jobs, then per job, user and
partition/VC/namespace the GPU-hours allocated and idle, SM and tensor activity and memory used;
the fleet's allocated-but-idle share per hour; the jobs and users with most idle GPU-hours; and
what could not be attributed.

Attribution (definitions `telemetry.*`): a sample of GPU (host, gpu) at time t belongs to job j
when it carries j's id (`hpc_job` label, or `pod`/`namespace`: the job `<namespace>/<pod>`), else
when `gpu_allocations` has a row (host, gpu) of j with start_time <= t < end_time (end NULL: still
running), else it is unallocated. On a Kubernetes cluster whose jobs exist only in the samples, the
jobs are the pods seen in the samples. A sample stands for the sampling period that starts at it
(`telemetry.sample_period`).

The primary measure of idleness is `gpu_util` < 5 percent (the field every dcgm-exporter serves by
default); `sm_active` < 0.05 (a profiling field, not always enabled) is given beside it where
present. A dataset with `sm_active` but no `gpu_util` uses `sm_active` as primary. Applies only
when the dataset has GPU samples.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.model import ModuleResult
from ddlx.analysis.options import IDLE_SM_ACTIVE
from ddlx.analysis.sql import quantiles_from_counts_sql
from ddlx.datasets.sqltext import sql_string

if TYPE_CHECKING:
    from ddlx.analysis.engines import Engine, Provenance

#: Samples are reduced a slice of time at a time (seconds, counted from 1970-01-01 UTC), so that memory
#: stays bounded however many there are.
SLICE_S = 6 * 3600
SLICE_US = SLICE_S * 1_000_000
#: The tables `ddlx datasets reduce` stores into the catalog (module table -> catalog table suffix).
CATALOG_TABLES = {"jobs": "gpu_job_efficiency", "idle_share_by_hour": "gpu_hourly_efficiency"}
#: Rows of the top tables.
TOP = 10
#: Why the module does not apply without telemetry.
NO_TELEMETRY = "no GPU telemetry imported (ddlx datasets import-metrics)"

#: Device memory (GiB, as NVIDIA markets it) of GPU models whose name carries no size, by a
#: regular expression on the model name (first match wins); a name with "<N>GB" gives N itself.
DEVICE_MEMORY_GIB: tuple[tuple[str, int], ...] = (
    (r"H200", 141), (r"H100", 80), (r"A100", 40), (r"\bA10G?\b", 24), (r"\bA30\b", 24), (r"\bA40\b", 48),
    (r"\bL40S?\b", 48), (r"\bL4\b", 24), (r"\bT4\b", 16), (r"V100", 16), (r"P100", 16),
    (r"RTX 3090", 24), (r"RTX 4090", 24),
)

DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "telemetry.sample_period", "Sample period", "s",
        "A GPU sample stands for the period that starts at its timestamp: the median spacing of the "
        "consecutive samples of the same field of the same GPU (host, gpu) over all the imported "
        "samples (spacings of 0 left out); a series of one sample takes the median period of that "
        "field's other series, and is left out (counted) when there is none. The period is measured "
        "from the samples, not taken from the import's step, so gaps in scraping do not add time: a "
        "missing sample counts no GPU-time. The period is kept in whole microseconds, and GPU-time is "
        "summed in them exactly. GPU-hours of samples = sum of their periods / 3600.",
    ),
    Definition(
        "telemetry.attribution.label", "Sample attributed by its job label", "samples",
        "A sample belongs to the job its labels name: the hpc_job label (a Slurm site's dcgm-exporter "
        "HPC job mapping; the job whose canonical job_id equals it), else the Kubernetes pod "
        "(job '<namespace>/<pod>', or '<pod>' without a namespace). Labels win over allocations. For "
        "a Kubernetes cluster whose job table does not list the pods, the jobs are the pods seen in "
        "the samples, without user or accounting; their group is the namespace.",
    ),
    Definition(
        "telemetry.attribution.allocation", "Sample attributed by GPU allocation", "samples",
        "A sample without a job label at time t of GPU (host, gpu) belongs to the job whose "
        "gpu_allocations row (host, gpu) has start_time <= t < end_time (end NULL: still running); "
        "half-open, so a sample at a job's end belongs to the next job, and a sample period that "
        "starts before the end and straddles it belongs wholly to the ending job (telemetry can so "
        "exceed the accounting by up to one period per GPU and job). Where rows overlap, the latest "
        "start wins. A row with gpu NULL (the job claims the node, its GPU indices are unknown) "
        "covers every GPU the node shows in its samples when the job holds at least as many GPUs per "
        "node (its GPUs / its nodes) as the node shows, else none: those samples are unallocated and "
        "counted (gpu_efficiency.data_quality). Job steps are not jobs.",
    ),
    Definition(
        "telemetry.reduction", "Where the samples were reduced", "engine, location, partitions",
        "The samples are reduced to small tables in one pass of partial results per slice of 6 hours "
        "(per series: samples, first and last time, counts of the spacings between consecutive samples; "
        "per GPU, job label, allocation interval and idle flags: samples, sum and maximum of the values; "
        "per hour: samples), which merge exactly across slices and partitions: counts, minima and maxima "
        "as they are, sums of values in millionths of their unit as decimals (so the order of summing "
        "cannot change them). On embedded DuckDB (the default) a slice at a time; with --engine spark "
        "on Spark SQL over the Parquet files where they are (engine, location and partitions read are "
        "given); the rest runs locally on the merged tables. Both give the same tables.",
    ),
    Definition(
        "telemetry.unallocated", "Unallocated GPU sample", "GPU-hours",
        "A sample attributed to no job by label or allocation (telemetry.attribution.*): it counts "
        "toward the fleet's GPU-hours and idle GPU-hours, not toward any job, user or group. "
        "Unallocated share = unallocated GPU-hours / all sampled GPU-hours, of the primary field.",
    ),
    Definition(
        "gpu_efficiency.allocated_gpu_hours", "GPU-hours allocated, per the telemetry", "GPU-hours",
        "Per job: the periods (telemetry.sample_period) of the primary field's samples attributed to "
        "it (telemetry.attribution.*), summed over its GPUs, / 3600. Primary field: gpu_util when the "
        "dataset has any gpu_util sample, else sm_active. Summed over a user's or group's jobs, and "
        "over all jobs.",
    ),
    Definition(
        "gpu_efficiency.accounting_gpu_hours", "GPU-hours allocated, per the accounting, in the telemetry window",
        "GPU-hours",
        "Per job of the job table: GPUs of the job (gpu_request.job_total) x the hours its run "
        "[start_time, end_time) overlaps the telemetry window [first sample, last sample + its "
        "period) of the primary field; a job still running is held to the window's end. Beside "
        "gpu_efficiency.allocated_gpu_hours to show what the samples cover. Pods known only from the "
        "samples have none.",
    ),
    Definition(
        "gpu_efficiency.idle_gpu_hours", "Idle GPU-hours", "GPU-hours",
        "GPU-hours (gpu_efficiency.allocated_gpu_hours) of the samples whose primary value is under "
        "the idle threshold: gpu_util < 5 percent (sm_active < 0.05 when sm_active is the primary "
        "field). Idle share = idle GPU-hours / allocated GPU-hours.",
    ),
    Definition(
        "gpu_efficiency.sm_idle_share", "Idle share by SM activity", "fraction",
        "Beside the primary idle share: the GPU-hours of a job's sm_active samples with sm_active < "
        "0.05 / the GPU-hours of all its sm_active samples. Only where sm_active was collected (a DCGM "
        "profiling field): a GPU running any kernel (gpu_util high) can still leave its SMs idle.",
    ),
    Definition(
        "gpu_efficiency.mean_activity", "Mean SM, tensor and GPU activity", "ratio 0-1 (gpu_util: percent)",
        "Period-weighted mean of a field's samples attributed to the job (or user, group, all "
        "jobs): sum(value x period) / sum(period), for sm_active, tensor_active (ratios 0-1) and "
        "gpu_util (percent); values are summed exactly in millionths of their unit (rounded to the "
        "nearest), so the means do not depend on the order or the engine of the sums. NULL where the "
        "field was not collected.",
    ),
    Definition(
        "gpu_efficiency.memory", "GPU memory used against device memory", "MiB",
        "Mean (period-weighted) and peak fb_used_mib of the samples attributed to the job. Device "
        "memory from the GPU's model name (the telemetry holds no free-memory field): a name carrying "
        "'<N>GB' gives N x 1024 MiB (NVIDIA's GB are GiB; nvidia-smi's total can be a few hundred MiB "
        "less), else a table of models (H200 141, H100 80, A100 40, A10/A10G/A30/L4 24, A40/L40/L40S "
        "48, T4/V100/P100 16, RTX 3090/4090 24 GiB), else unknown; peak share = peak used / device "
        "memory (largest device among the job's GPUs).",
    ),
    Definition(
        "gpu_efficiency.idle_share_by_hour", "Fleet allocated-but-idle share per hour", "fraction",
        "Per UTC hour (of the sample timestamps): idle GPU-hours / allocated GPU-hours over all jobs "
        "(gpu_efficiency.idle_gpu_hours), with the unallocated GPU-hours (telemetry.unallocated) and "
        "their idle part beside.",
    ),
    Definition(
        "gpu_efficiency.data_quality", "Telemetry that attribution could not use", "as stated per row",
        "Counted, never guessed: hosts with samples that no allocation and no sample's job label "
        "names; unallocated samples of a GPU while a job holds GPUs of unknown index on the same node "
        "(they may be that job's; a GPU left free beside GPUs of known index is simply unallocated); "
        "jobs with allocations none "
        "of whose GPUs has a sample during the allocation; samples left out for want of a period "
        "(telemetry.sample_period).",
    ),
)

_FIELDS = ("gpu_util", "sm_active", "tensor_active", "fb_used_mib")


def device_memory_mib_sql(model: str) -> str:
    """SQL: device memory (MiB) of a GPU from its model name `model` (definition gpu_efficiency.memory)."""
    cases = " ".join(f"WHEN regexp_matches({model}, {sql_string(pattern)}) THEN {gib * 1024}"
                     for pattern, gib in DEVICE_MEMORY_GIB)
    named = f"TRY_CAST(regexp_extract({model}, '([0-9]+) ?GB', 1) AS INTEGER)"
    return f"(CASE WHEN {named} IS NOT NULL THEN {named} * 1024 {cases} END)"


def _primary(ctx: TraceContext) -> tuple[str, float]:
    fields = set(ctx.query("SELECT DISTINCT field FROM ge_summary")["field"].to_list())
    if "gpu_util" in fields or "sm_active" not in fields:
        return "gpu_util", ctx.options.idle_gpu_util_percent
    return "sm_active", ctx.options.idle_sm_active


def summary_sql(samples: str) -> str:
    """SQL over `samples` (a relation of gpu_samples rows): per series (host, gpu, field) the samples
    and the first and last time; a sum, a count, a minimum and a maximum, so it merges exactly across
    partitions."""
    return f"""SELECT host, gpu, field, count(*) AS n, min(time) AS first, max(time) AS last FROM {samples}
               WHERE host IS NOT NULL AND gpu IS NOT NULL GROUP BY host, gpu, field"""


def partials_sql(samples: str, timeline: str, primary: str, idle: float) -> str:
    """SQL over `samples` (a relation of gpu_samples rows) and `timeline` (ge_timeline cut at the
    borders of slices: a row per interval and slice it overlaps): the partial results per slice of
    time (`SLICE_S`), one row per group of one of four kinds (`part`), each a sum, count, minimum or
    maximum that merges exactly with the same group of other slices or partitions:

    - `slices`: per series and slice, samples and first and last time;
    - `gaps`: per series, how many consecutive samples of a slice are `gap_us` apart;
    - `cells`: per GPU, model, field, job label, timeline interval and idle flags, samples, the sum of
      the values in millionths of their unit (`sum_micro`, a decimal: exact in any order) and the
      maximum;
    - `hours`: per UTC hour, GPU, allocated or not and idle or not, samples of the primary field.
    Written once in DuckDB's dialect; `ddlx.analysis.engines` runs it on DuckDB or Spark."""
    fields = ", ".join(sql_string(f) for f in _FIELDS)
    return f"""
        WITH s AS (
            SELECT host, gpu, model, time, field, value, NULLIF(trim(hpc_job), '') AS hpc_job,
                   NULLIF(trim(pod), '') AS pod, NULLIF(trim(namespace), '') AS namespace,
                   epoch_us(time) // {SLICE_US} AS slice
            FROM {samples} WHERE field IN ({fields}) AND host IS NOT NULL AND gpu IS NOT NULL),
        g AS (
            SELECT s.*, epoch_us(lead(time) OVER (PARTITION BY host, gpu, field, slice ORDER BY time))
                        - epoch_us(time) AS gap_us
            FROM s),
        j AS (
            SELECT g.host, g.gpu, g.model, g.field, g.value, g.hpc_job, g.pod, g.namespace, g.slice, g.time,
                   g.gap_us, epoch_us(g.time) // 3600000000 AS hour_number, t.seg_id,
                   g.hpc_job IS NOT NULL OR g.pod IS NOT NULL OR t.job_id IS NOT NULL AS allocated,
                   g.value < {idle!r} AS below_idle, g.value < {IDLE_SM_ACTIVE!r} AS below_sm
            FROM g LEFT JOIN {timeline} t
              ON g.host = t.host AND g.gpu = t.gpu AND g.slice = t.slice AND t.seg_start <= g.time
                 AND (t.seg_end IS NULL OR g.time < t.seg_end))
        SELECT CASE WHEN GROUPING(slice) = 0 THEN 'slices' WHEN GROUPING(gap_us) = 0 THEN 'gaps'
                    WHEN GROUPING(seg_id) = 0 THEN 'cells' ELSE 'hours' END AS part,
               host, gpu, model, field, hpc_job, pod, namespace, seg_id, below_idle, below_sm, slice, gap_us,
               hour_number, allocated, count(*) AS n,
               count(*) FILTER (WHERE field = {sql_string(primary)}) AS n_primary,
               sum(CAST(round(value * 1000000) AS DECIMAL(38, 0))) AS sum_micro, max(value) AS max_v,
               min(time) AS first, max(time) AS last
        FROM j
        GROUP BY GROUPING SETS ((host, gpu, field, slice), (host, gpu, field, gap_us),
                                (host, gpu, model, field, hpc_job, pod, namespace, seg_id, below_idle, below_sm),
                                (hour_number, host, gpu, allocated, below_idle))"""


#: The columns of partials_sql's rows, typed as stored locally.
PARTS_COLUMNS = (
    "part VARCHAR, host VARCHAR, gpu INTEGER, model VARCHAR, field VARCHAR, hpc_job VARCHAR, pod VARCHAR, "
    "namespace VARCHAR, seg_id BIGINT, below_idle BOOLEAN, below_sm BOOLEAN, slice BIGINT, gap_us BIGINT, "
    "hour_number BIGINT, allocated BOOLEAN, n BIGINT, n_primary BIGINT, sum_micro DECIMAL(38, 0), max_v DOUBLE, "
    "first TIMESTAMPTZ, last TIMESTAMPTZ")


def _prepare(ctx: TraceContext, primary: str, idle: float, engine: Engine | None = None) -> None:
    """Small temporary tables, built one slice of time (`SLICE_S`) of samples at a time so that
    memory stays bounded however many samples there are (sums, counts and maxima merge exactly
    across slices; the gaps at the borders of slices are added from each series' first and last
    sample of the slice):

    - ge_gpus, ge_alloc (resolved allocations) and ge_timeline: per GPU with samples, non-overlapping
      intervals, each with the job it belongs to by allocation (latest start wins; NULL for none) and
      whether an allocation of GPUs of unknown index on its host covers it (`claimed`);
    - ge_series: per series (host, gpu, field): samples, first and last time and the sample period;
    - ge_cells: the samples counted per job, attribution, GPU, model, field and idle flags (count,
      sum and max of the values; w_us: GPU-microseconds, vw_us: value x GPU-microseconds); ge_hours: the primary
      field's samples per UTC hour, GPU, allocated or not and idle or not; ge_sampled: the jobs with
      a sample in an interval of ge_timeline that is theirs.
    Each sample is read once; no table holds a row per sample of more than one slice.
    """
    _allocations(ctx)
    bounds = ctx.one_row(f"""SELECT min(epoch_us(first)) // {SLICE_US} AS low,
                                    max(epoch_us(last)) // {SLICE_US} AS high FROM ge_summary""")
    _timeline_slices(ctx, bounds["low"], bounds["high"])
    ctx.execute(f"CREATE OR REPLACE TEMP TABLE ge_parts ({PARTS_COLUMNS})")
    if engine is None:  # embedded DuckDB, a slice at a time: memory stays bounded
        for number in range(bounds["low"], bounds["high"] + 1) if bounds["low"] is not None else range(0):
            samples = (f"(SELECT * FROM gpu_samples WHERE time >= TIMESTAMPTZ '{_utc(number * SLICE_US)}' "
                       f"AND time < TIMESTAMPTZ '{_utc((number + 1) * SLICE_US)}')")
            ctx.execute(f"INSERT INTO ge_parts {partials_sql(samples, 'ge_timeline_slices', primary, idle)}")
    else:  # the engine reads the samples where they are, in one pass over all slices
        engine.register_local("ge_timeline_slices", ctx.con, "SELECT * FROM ge_timeline_slices")
        parts = engine.query(partials_sql("gpu_samples", "ge_timeline_slices", primary, idle), "partials")
        _insert(ctx, "ge_parts", parts)
    ctx.execute("""CREATE OR REPLACE TEMP TABLE ge_gaps AS SELECT host, gpu, field, gap_us, n FROM ge_parts
                   WHERE part = 'gaps' AND gap_us IS NOT NULL""")
    ctx.execute("""CREATE OR REPLACE TEMP TABLE ge_slices AS SELECT host, gpu, field, slice, n, first, last
                   FROM ge_parts WHERE part = 'slices'""")
    ctx.execute("""CREATE OR REPLACE TEMP TABLE ge_cell_parts AS
                   SELECT host, gpu, model, field, hpc_job, pod, namespace, seg_id, below_idle, below_sm, n, sum_micro,
                          max_v
                   FROM ge_parts WHERE part = 'cells'""")
    ctx.execute("""CREATE OR REPLACE TEMP TABLE ge_hours AS
                   SELECT hour_number, host, gpu, allocated, below_idle, n_primary AS n FROM ge_parts
                   WHERE part = 'hours' AND n_primary > 0""")
    ctx.execute("DROP TABLE ge_parts")
    ctx.execute(f"""CREATE OR REPLACE TEMP TABLE ge_series AS
        WITH borders AS (
            SELECT host, gpu, field,
                   epoch_us(lead(first) OVER (PARTITION BY host, gpu, field ORDER BY slice)) - epoch_us(last) AS gap_us
            FROM ge_slices),
        gaps AS (SELECT host, gpu, field, gap_us, sum(n) AS n FROM (
                     SELECT host, gpu, field, gap_us, n FROM ge_gaps
                     UNION ALL SELECT host, gpu, field, gap_us, 1 FROM borders WHERE gap_us IS NOT NULL)
                 WHERE gap_us > 0 GROUP BY ALL),
        -- the median of a series' gaps, from their counts (definition stat.quantile, as quantile_cont)
        gap_curves AS (SELECT host, gpu, field, gap_us / 1e6 AS value,
                              sum(n) OVER (PARTITION BY host, gpu, field ORDER BY gap_us) AS cum FROM gaps),
        gap_totals AS (SELECT host, gpu, field, 0.5 AS probability, sum(n) AS total FROM gaps GROUP BY ALL),
        medians AS (SELECT host, gpu, field, quantile AS own_period_s FROM (
                        {quantiles_from_counts_sql("gap_totals", "gap_curves", ("host", "gpu", "field"), "total")})),
        series AS (SELECT d.host, d.gpu, d.field, sum(d.n) AS n, min(d.first) AS first, max(d.last) AS last,
                          any_value(m.own_period_s) AS own_period_s
                   FROM ge_slices d LEFT JOIN medians m USING (host, gpu, field) GROUP BY d.host, d.gpu, d.field),
        fleet AS (SELECT field, quantile_cont(own_period_s, 0.5) AS period_s FROM series GROUP BY field)
        SELECT s.host, s.gpu, s.field, s.n, s.first, s.last, coalesce(s.own_period_s, f.period_s) AS period_s,
               CAST(round(coalesce(s.own_period_s, f.period_s) * 1e6) AS BIGINT) AS period_us
        FROM series s LEFT JOIN fleet f USING (field)""")
    # the job of a sample: its label, else the job of its timeline interval (definitions telemetry.*)
    ctx.execute(f"""CREATE OR REPLACE TEMP TABLE ge_cells AS
        WITH parts AS (
            SELECT p.*, coalesce(p.hpc_job, CASE WHEN p.pod IS NOT NULL THEN coalesce(p.namespace || '/', '') || p.pod
                                             END) AS l_job,
                   t.job_id AS t_job, t.cluster AS t_cluster, coalesce(t.claimed, false) AS claimed
            FROM ge_cell_parts p LEFT JOIN ge_timeline t USING (seg_id)),
        clusters AS (SELECT job_id, min(cluster) AS cluster FROM {ctx.jobs} GROUP BY job_id),
        c AS (
            SELECT CASE WHEN l_job IS NOT NULL THEN k.cluster ELSE t_cluster END AS cluster,
                   coalesce(l_job, t_job) AS job_id,
                   CASE WHEN hpc_job IS NOT NULL THEN 'label (hpc_job)' WHEN pod IS NOT NULL THEN 'label (pod)'
                        WHEN t_job IS NOT NULL THEN 'allocation' ELSE 'unallocated' END AS attribution,
                   namespace, host, gpu, model, field, claimed, below_idle, below_sm,
                   sum(n)::BIGINT AS n, sum(sum_micro) AS sum_micro, max(max_v) AS max_v
            FROM parts LEFT JOIN clusters k ON k.job_id = parts.l_job
            GROUP BY ALL)
        SELECT c.*, c.n * s.period_us AS w_us, c.sum_micro * s.period_us AS vw_us,
               c.field = {sql_string(primary)} AS is_primary
        FROM c JOIN ge_series s USING (host, gpu, field)""")
    # jobs with a sample in an interval they hold by allocation (whatever the sample's label)
    ctx.execute("""CREATE OR REPLACE TEMP TABLE ge_sampled AS
        SELECT DISTINCT t.cluster, t.job_id FROM (SELECT DISTINCT seg_id FROM ge_cell_parts) p
        JOIN ge_timeline t USING (seg_id) WHERE t.job_id IS NOT NULL""")
    ctx.execute("DROP TABLE ge_cell_parts")
    ctx.execute("DROP TABLE ge_gaps")


def _open_engine(ctx: TraceContext) -> tuple[Engine | None, Provenance]:
    """The engine the samples are reduced on (`ctx.options`: `engine`, `spark_master`, `spark_conf`,
    `partitions`, `samples_location`): None for embedded DuckDB on the dataset's own samples (a
    slice at a time, on the catalog's connection); a DuckDB of its own for other samples; the run's
    Spark session with --engine spark. The caller closes a DuckDB of its own."""
    from ddlx.analysis.engines import DuckDBEngine, Provenance

    name = ctx.options.engine
    location = ctx.options.samples_location or ctx.samples_location
    if name == "duckdb" and not ctx.options.samples_location:
        return None, Provenance("duckdb", location or "gpu_samples", 1)
    engine = DuckDBEngine() if name == "duckdb" else ctx.engine()
    try:
        partitions = engine.register_parquet("gpu_samples", location)
    except BaseException:
        if engine.name == "duckdb":
            engine.close()
        raise
    return engine, Provenance(engine.name, location, partitions)


def _summarize(ctx: TraceContext, engine: Engine | None) -> None:
    """ge_summary: per series (host, gpu, field) the samples and first and last time (summary_sql)."""
    ctx.execute("""CREATE OR REPLACE TEMP TABLE ge_summary (host VARCHAR, gpu INTEGER, field VARCHAR, n BIGINT,
                       first TIMESTAMPTZ, last TIMESTAMPTZ)""")
    if engine is None:
        ctx.execute(f"INSERT INTO ge_summary {summary_sql('gpu_samples')}")
    else:
        _insert(ctx, "ge_summary", engine.query(summary_sql("gpu_samples"), "summary"))


def _allocations(ctx: TraceContext) -> None:
    """ge_gpus (the GPUs with samples), ge_alloc (allocations, a row of unknown GPUs covering every
    GPU of its node when the job holds that many) and ge_timeline (see `_prepare`)."""
    ctx.execute(f"""CREATE OR REPLACE TEMP TABLE ge_gpus AS
        SELECT DISTINCT host, gpu FROM ge_summary WHERE field IN ({", ".join(sql_string(f) for f in _FIELDS)})""")
    if ctx.has_view("gpu_allocations"):
        ctx.execute(f"""CREATE OR REPLACE TEMP TABLE ge_alloc AS
            WITH host_gpus AS (SELECT host, count(DISTINCT gpu) AS gpus, list(DISTINCT gpu) AS gpu_list
                               FROM ge_gpus GROUP BY host),
            nodes AS (SELECT cluster, job_id, count(DISTINCT host) AS nodes FROM gpu_allocations
                      GROUP BY cluster, job_id),
            unknown AS (
                SELECT a.cluster, a.job_id, a.host, a.start_time, a.end_time, h.gpu_list,
                       j.num_gpus / n.nodes >= h.gpus AS holds_all
                FROM gpu_allocations a JOIN nodes n USING (cluster, job_id)
                LEFT JOIN host_gpus h USING (host)
                LEFT JOIN (SELECT cluster, job_id, max(num_gpus) AS num_gpus FROM {ctx.jobs}
                           GROUP BY cluster, job_id) j USING (cluster, job_id)
                WHERE a.gpu IS NULL)
            SELECT cluster, job_id, host, gpu, start_time, end_time, true AS known FROM gpu_allocations
            WHERE gpu IS NOT NULL
            UNION ALL
            SELECT cluster, job_id, host, unnest(gpu_list) AS gpu, start_time, end_time, true AS known
            FROM unknown WHERE coalesce(holds_all, false)
            UNION ALL
            SELECT cluster, job_id, host, NULL AS gpu, start_time, end_time, false AS known
            FROM unknown WHERE NOT coalesce(holds_all, false)""")
    else:
        ctx.execute("""CREATE OR REPLACE TEMP TABLE ge_alloc AS
            SELECT NULL::VARCHAR AS cluster, NULL::VARCHAR AS job_id, NULL::VARCHAR AS host, NULL::INTEGER AS gpu,
                   NULL::TIMESTAMPTZ AS start_time, NULL::TIMESTAMPTZ AS end_time, true AS known WHERE false""")
    # Per GPU: elementary intervals between the starts and ends of its allocations, each belonging to
    # the covering allocation that started last (ties: the lower job id), or to none (left out).
    ctx.execute("""CREATE OR REPLACE TEMP TABLE ge_won AS
        WITH rows AS (SELECT * FROM ge_alloc WHERE known AND start_time IS NOT NULL),
        points AS (SELECT DISTINCT host, gpu, start_time AS t FROM rows
                   UNION SELECT DISTINCT host, gpu, end_time FROM rows WHERE end_time IS NOT NULL),
        segments AS (SELECT host, gpu, t AS seg_start, lead(t) OVER (PARTITION BY host, gpu ORDER BY t) AS seg_end
                     FROM points)
        SELECT s.host, s.gpu, s.seg_start, s.seg_end, r.cluster, r.job_id
        FROM segments s JOIN rows r
          ON r.host = s.host AND r.gpu = s.gpu AND r.start_time <= s.seg_start
             AND (r.end_time IS NULL OR s.seg_start < r.end_time)
        QUALIFY row_number() OVER (PARTITION BY s.host, s.gpu, s.seg_start
                                   ORDER BY r.start_time DESC, r.job_id, r.cluster) = 1""")
    # Per host: intervals between the starts and ends of its allocation rows of unknown GPUs,
    # covered when some row holds them (a sweep: rows started minus rows ended so far).
    ctx.execute("""CREATE OR REPLACE TEMP TABLE ge_held AS
        WITH rows AS (SELECT * FROM ge_alloc
                      WHERE NOT known AND start_time IS NOT NULL AND (end_time IS NULL OR end_time > start_time)),
        events AS (SELECT host, start_time AS t, 1 AS d FROM rows
                   UNION ALL SELECT host, end_time, -1 FROM rows WHERE end_time IS NOT NULL),
        points AS (SELECT host, t, sum(d) AS d FROM events GROUP BY host, t)
        SELECT host, t AS seg_start, lead(t) OVER w AS seg_end, sum(d) OVER (w ROWS UNBOUNDED PRECEDING) > 0 AS covered
        FROM points WINDOW w AS (PARTITION BY host ORDER BY t)""")
    # Both on one non-overlapping timeline per GPU with samples: the job an interval belongs to by
    # allocation (or NULL), and whether an allocation of unknown GPUs holds its host (`claimed`).
    ctx.execute("""CREATE OR REPLACE TEMP TABLE ge_timeline AS
        WITH points AS (SELECT host, gpu, seg_start AS t FROM ge_won
                        UNION SELECT host, gpu, seg_end FROM ge_won WHERE seg_end IS NOT NULL
                        UNION SELECT h.host, g.gpu, h.seg_start FROM ge_held h JOIN ge_gpus g USING (host)),
        segments AS (SELECT host, gpu, t AS seg_start, lead(t) OVER (PARTITION BY host, gpu ORDER BY t) AS seg_end
                     FROM points),
        won AS (SELECT s.*, CASE WHEN w.seg_end IS NULL OR s.seg_start < w.seg_end THEN w.job_id END AS job_id,
                       CASE WHEN w.seg_end IS NULL OR s.seg_start < w.seg_end THEN w.cluster END AS cluster
                FROM segments s ASOF LEFT JOIN ge_won w
                  ON s.host = w.host AND s.gpu = w.gpu AND s.seg_start >= w.seg_start),
        held AS (SELECT w.*, coalesce(h.covered AND (h.seg_end IS NULL OR w.seg_start < h.seg_end), false) AS claimed
                 FROM won w ASOF LEFT JOIN ge_held h ON w.host = h.host AND w.seg_start >= h.seg_start)
        SELECT row_number() OVER () AS seg_id, host, gpu, seg_start, seg_end, cluster, job_id, claimed
        FROM held WHERE job_id IS NOT NULL OR claimed""")


def _utc(us: int) -> str:
    """A SQL TIMESTAMPTZ literal's text for `us` µs since 1970 UTC."""
    return datetime.fromtimestamp(us // 1_000_000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S+00")


def _timeline_slices(ctx: TraceContext, low: int | None, high: int | None) -> None:
    """ge_timeline_slices: the intervals of ge_timeline, a row per slice of time (`SLICE_S`) from
    `low` to `high` (slice numbers; None: no samples) that each overlaps, so that samples find theirs
    by an equality join on (host, gpu, slice) and a range test (partials_sql)."""
    low, high = (0, -1) if low is None or high is None else (low, high)
    last = f"least(coalesce((epoch_us(seg_end) - 1) // {SLICE_US}, {high}), {high})"
    ctx.execute(f"""CREATE OR REPLACE TEMP TABLE ge_timeline_slices AS
        SELECT * FROM (
            SELECT seg_id, host, gpu, seg_start, seg_end, job_id,
                   unnest(range(greatest(epoch_us(seg_start) // {SLICE_US}, {low}), {last} + 1)) AS slice
            FROM ge_timeline)""")


def _insert(ctx: TraceContext, table: str, rows: Any) -> None:
    """Add the Arrow table `rows` (columns named as `table`'s) to the temporary table `table`."""
    with ctx.registered(rows, "ge_incoming") as incoming:
        ctx.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {incoming}")


def _hours_sql(condition: str) -> str:
    """SQL: the GPU-hours of the rows (with a w_us column) meeting `condition`, from their exact sum."""
    return f"(CAST(sum(w_us) FILTER (WHERE {condition}) AS DOUBLE) / 3.6e9)"


def _mean_sql(condition: str) -> str:
    """SQL: the period-weighted mean value of the ge_cells rows meeting `condition`, from exact sums."""
    return (f"(CAST(sum(vw_us) FILTER (WHERE {condition}) AS DOUBLE) / 1e6 "
            f"/ CAST(sum(w_us) FILTER (WHERE {condition}) AS DOUBLE))")


def _measures() -> str:
    """SQL aggregates over ge_cells (w_us: GPU-microseconds of a cell's samples, vw_us: values in
    millionths x GPU-microseconds; both exact, so the sums do not depend on the order of the rows):
    the columns of the job, user, group and total rows."""

    def mean(field: str) -> str:
        return _mean_sql(f"field = '{field}'")

    return f"""
        {_hours_sql('is_primary')} AS allocated_gpu_hours,
        coalesce({_hours_sql('is_primary AND below_idle')}, 0) AS idle_gpu_hours,
        coalesce({_hours_sql('is_primary AND below_idle')}, 0) / {_hours_sql('is_primary')} AS idle_share,
        {_hours_sql("field = 'sm_active'")} AS sm_sampled_gpu_hours,
        {_hours_sql("field = 'sm_active' AND below_sm")} AS sm_idle_gpu_hours,
        coalesce({_hours_sql("field = 'sm_active' AND below_sm")}, 0)
            / {_hours_sql("field = 'sm_active'")} AS sm_idle_share,
        {mean('gpu_util')} AS mean_gpu_util_percent,
        {mean('sm_active')} AS mean_sm_active,
        {mean('tensor_active')} AS mean_tensor_active,
        {mean('fb_used_mib')} AS mean_fb_used_mib,
        max(max_v) FILTER (WHERE field = 'fb_used_mib') AS peak_fb_used_mib,
        max({device_memory_mib_sql('model')}) AS device_memory_mib,
        max(max_v) FILTER (WHERE field = 'fb_used_mib') / max({device_memory_mib_sql('model')}) AS peak_memory_share,
        coalesce(sum(n) FILTER (WHERE is_primary), 0)::BIGINT AS samples"""


def jobs_table(ctx: TraceContext, primary: str) -> pl.DataFrame:
    """One row per job with attributed samples (definitions gpu_efficiency.*)."""
    window = ("(SELECT min(first) AS first, max(last + to_microseconds(CAST(round(period_s * 1e6) AS BIGINT))) "
              "AS last FROM ge_series WHERE field = " + sql_string(primary) + ")")
    return ctx.query(f"""
        WITH per_job AS (
            SELECT cluster, job_id, string_agg(DISTINCT attribution, ', ' ORDER BY attribution) AS attribution,
                   any_value(namespace) AS namespace, count(DISTINCT (host, gpu)) FILTER (WHERE is_primary) AS gpus,
                   {_measures()}
            FROM ge_cells WHERE job_id IS NOT NULL GROUP BY cluster, job_id),
        jobs AS (SELECT cluster, job_id, any_value("user") AS "user", any_value(vc) AS vc,
                        max(num_gpus) AS num_gpus, min(start_time) AS start_time, max(end_time) AS end_time,
                        bool_or(start_time IS NOT NULL AND end_time IS NULL) AS running
                 FROM {ctx.jobs} GROUP BY cluster, job_id)
        SELECT p.cluster, p.job_id, p.attribution, j."user", coalesce(j.vc, p.namespace) AS vc, p.gpus,
               p.allocated_gpu_hours,
               j.num_gpus * greatest(0, (epoch_us(least(CASE WHEN j.running THEN w.last ELSE j.end_time END, w.last))
                   - epoch_us(greatest(j.start_time, w.first))) / 3.6e9) AS accounting_gpu_hours,
               p.* EXCLUDE (cluster, job_id, attribution, namespace, gpus, allocated_gpu_hours)
        FROM per_job p LEFT JOIN jobs j ON j.job_id = p.job_id AND j.cluster IS NOT DISTINCT FROM p.cluster
        CROSS JOIN {window} w
        ORDER BY p.idle_gpu_hours DESC, p.allocated_gpu_hours DESC, p.job_id""")


def grouped_table(ctx: TraceContext, jobs: pl.DataFrame, key: str) -> pl.DataFrame:
    """Per user (`key` = "user") or group (`key` = "vc"): jobs and the measures over their samples."""
    with ctx.registered(jobs.select("cluster", "job_id", key).to_arrow(), "ge_jobs_frame") as frame:
        return ctx.query(f"""
            SELECT f.{key}, count(DISTINCT (a.cluster, a.job_id)) AS jobs, {_measures()}
            FROM ge_cells a JOIN {frame} f
              ON f.job_id = a.job_id AND f.cluster IS NOT DISTINCT FROM a.cluster
            GROUP BY f.{key} ORDER BY idle_gpu_hours DESC, f.{key} NULLS LAST""")


def by_hour(ctx: TraceContext, primary: str) -> pl.DataFrame:
    """Per UTC hour: allocated, idle, unallocated GPU-hours (gpu_efficiency.idle_share_by_hour)."""
    return ctx.query(f"""
        WITH h AS (SELECT to_timestamp(h.hour_number * 3600) AS hour, h.allocated, h.below_idle,
                          h.n * s.period_us AS w_us
                   FROM ge_hours h JOIN ge_series s ON s.host = h.host AND s.gpu = h.gpu
                        AND s.field = {sql_string(primary)}
                   WHERE s.period_s IS NOT NULL)
        SELECT hour,
               coalesce({_hours_sql('allocated')}, 0) AS allocated_gpu_hours,
               coalesce({_hours_sql('allocated AND below_idle')}, 0) AS idle_gpu_hours,
               {_hours_sql('allocated AND below_idle')} / {_hours_sql('allocated')} AS idle_share,
               coalesce({_hours_sql('NOT allocated')}, 0) AS unallocated_gpu_hours,
               coalesce({_hours_sql('NOT allocated AND below_idle')}, 0) AS unallocated_idle_gpu_hours
        FROM h GROUP BY hour ORDER BY hour""")


def attribution_table(ctx: TraceContext) -> pl.DataFrame:
    """Samples and GPU-hours of the primary field by how they were attributed."""
    return ctx.query("""
        SELECT attribution, sum(n)::BIGINT AS samples, CAST(sum(w_us) AS DOUBLE) / 3.6e9 AS gpu_hours,
               count(DISTINCT job_id) AS jobs, count(DISTINCT (host, gpu)) AS gpus
        FROM ge_cells WHERE is_primary AND w_us IS NOT NULL GROUP BY attribution ORDER BY attribution""")


def residual_sql(samples: str, residual: str) -> str:
    """SQL: the jobs of `residual` (allocations that won no interval of the timeline) with a sample of
    `samples` on a GPU they hold during their allocation (a row of unknown GPUs: any GPU of the node)."""
    fields = ", ".join(sql_string(f) for f in _FIELDS)
    return f"""
        SELECT DISTINCT r.cluster, r.job_id
        FROM {residual} r JOIN (
            SELECT host, gpu, time FROM {samples}
            WHERE field IN ({fields}) AND gpu IS NOT NULL AND host IN (SELECT host FROM {residual})
              AND time >= (SELECT min(start_time) FROM {residual})) s
          ON s.host = r.host AND (r.gpu IS NULL OR s.gpu = r.gpu) AND r.start_time <= s.time
             AND (r.end_time IS NULL OR s.time < r.end_time)"""


def data_quality(ctx: TraceContext, engine: Engine | None = None) -> pl.DataFrame:
    """The counts of gpu_efficiency.data_quality, one row per check."""
    # A job has a sample during its allocation when a sample fell in an interval of ge_timeline it
    # won (ge_sampled, gathered slice by slice); the allocations of the other jobs (overlapped by a later
    # allocation, or of unknown GPUs) are looked up in the samples themselves.
    ctx.execute("""CREATE OR REPLACE TEMP TABLE ge_residual AS
        SELECT a.* FROM ge_alloc a WHERE NOT EXISTS (
            SELECT 1 FROM ge_sampled w WHERE w.job_id = a.job_id AND w.cluster IS NOT DISTINCT FROM a.cluster)""")
    if ctx.one_row("SELECT count(*) AS n FROM ge_residual WHERE start_time IS NOT NULL")["n"]:
        if engine is None:
            ctx.execute(f"INSERT INTO ge_sampled {residual_sql('gpu_samples', 'ge_residual')}")
        else:
            engine.register_local("ge_residual", ctx.con,
                                  "SELECT cluster, job_id, host, gpu, start_time, end_time FROM ge_residual")
            _insert(ctx, "ge_sampled", engine.query(residual_sql("gpu_samples", "ge_residual"), "residual"))
    row = ctx.one_row("""
        WITH named AS (SELECT DISTINCT host FROM ge_alloc
                       UNION SELECT DISTINCT host FROM ge_cells WHERE attribution LIKE 'label%'),
        held AS (SELECT DISTINCT cluster, job_id FROM ge_alloc),
        sampled AS (SELECT DISTINCT cluster, job_id FROM ge_sampled)
        SELECT (SELECT count(DISTINCT host) FROM ge_series WHERE host NOT IN (SELECT host FROM named))
                   AS hosts_unnamed,
               (SELECT count(DISTINCT host) FROM ge_series) AS hosts,
               (SELECT coalesce(sum(n), 0)::BIGINT FROM ge_cells WHERE job_id IS NULL AND is_primary AND claimed)
                   AS claimed_unallocated,
               (SELECT coalesce(sum(n), 0)::BIGINT FROM ge_cells WHERE is_primary AND job_id IS NULL) AS unallocated,
               (SELECT count(*) FROM held) - (SELECT count(*) FROM held JOIN sampled
                   ON sampled.job_id = held.job_id AND sampled.cluster IS NOT DISTINCT FROM held.cluster)
                   AS jobs_unsampled,
               (SELECT count(*) FROM held) AS jobs_held,
               (SELECT coalesce(sum(n), 0)::BIGINT FROM ge_series WHERE period_s IS NULL) AS no_period,
               (SELECT coalesce(sum(n), 0)::BIGINT FROM ge_series) AS samples""")
    return pl.DataFrame([
        {"check": "hosts with samples that no allocation and no job label names", "count": row["hosts_unnamed"],
         "of": row["hosts"], "unit": "hosts"},
        {"check": "unallocated samples of a GPU while a job holds GPUs of unknown index on its node",
         "count": row["claimed_unallocated"], "of": row["unallocated"], "unit": "unallocated primary samples"},
        {"check": "jobs with allocations none of whose GPUs has a sample during them", "count": row["jobs_unsampled"],
         "of": row["jobs_held"], "unit": "jobs"},
        {"check": "samples left out: no sample period", "count": row["no_period"], "of": row["samples"],
         "unit": "samples"},
    ], schema={"check": pl.String, "count": pl.Int64, "of": pl.Int64, "unit": pl.String})


def analyze(ctx: TraceContext) -> ModuleResult:
    result = ModuleResult("gpu_efficiency")
    if not ctx.has_view("gpu_samples") and not ctx.options.samples_location:
        result.skip("GPU efficiency from telemetry", NO_TELEMETRY)
        return result
    engine, reduction = _open_engine(ctx)
    try:
        _summarize(ctx, engine)
        primary, threshold = _primary(ctx)
        _prepare(ctx, primary, threshold, engine)
        quality_frame = data_quality(ctx, engine)
    finally:
        if engine is not None and engine.name == "duckdb":  # a DuckDB of its own; Spark is the run's
            engine.close()
    result.add("reduction", pl.DataFrame([reduction.as_dict()]), ("telemetry.reduction",),
               "where the samples were reduced")
    if not ctx.has_view("gpu_allocations"):
        result.skip("attribution by GPU allocation",
                    "the dataset publishes no gpu_allocations view (Slurm: import NodeList and GresDetail); "
                    "only samples carrying a job label are attributed")
    attribution = result.add("attribution", attribution_table(ctx),
                             ("telemetry.attribution.label", "telemetry.attribution.allocation",
                              "telemetry.unallocated", "telemetry.sample_period"),
                             f"how samples of the primary field ({primary}) were attributed")
    jobs = result.add("jobs", jobs_table(ctx, primary),
                      ("gpu_efficiency.allocated_gpu_hours", "gpu_efficiency.accounting_gpu_hours",
                       "gpu_efficiency.idle_gpu_hours", "gpu_efficiency.sm_idle_share",
                       "gpu_efficiency.mean_activity", "gpu_efficiency.memory"),
                      "a job with attributed samples (cluster NULL: a pod or label known only from the samples)")
    measures = ("gpu_efficiency.allocated_gpu_hours", "gpu_efficiency.idle_gpu_hours", "gpu_efficiency.sm_idle_share",
                "gpu_efficiency.mean_activity", "gpu_efficiency.memory")
    users = result.add("users", grouped_table(ctx, jobs, "user"), measures,
                       "a user (NULL: jobs without a user, e.g. pods known only from the samples)")
    result.add("groups", grouped_table(ctx, jobs, "vc"), measures,
               "a partition (Slurm), VC, or Kubernetes namespace of pods known only from the samples")
    result.add("top_idle_jobs", jobs.head(TOP).select(
        "cluster", "job_id", "user", "vc", "idle_gpu_hours", "allocated_gpu_hours", "idle_share"),
        ("gpu_efficiency.idle_gpu_hours",), f"one of the {TOP} jobs with most idle GPU-hours")
    result.add("top_idle_users", users.filter(pl.col("user").is_not_null()).head(TOP).select(
        "user", "jobs", "idle_gpu_hours", "allocated_gpu_hours", "idle_share"),
        ("gpu_efficiency.idle_gpu_hours",), f"one of the {TOP} users with most idle GPU-hours")
    result.add("idle_share_by_hour", by_hour(ctx, primary), ("gpu_efficiency.idle_share_by_hour",),
               "a UTC hour with samples")
    quality = result.add("data_quality", quality_frame, ("gpu_efficiency.data_quality",),
                         "a check of what attribution could not use")
    _findings(ctx, result, attribution, jobs, quality, primary, threshold)
    return result


def overall_sm_samples(ctx: TraceContext) -> int:
    """sm_active samples attributed to jobs."""
    return int(ctx.one_row("SELECT coalesce(sum(n), 0)::BIGINT AS n FROM ge_cells WHERE job_id IS NOT NULL "
                           "AND field = 'sm_active'")["n"])


def _findings(ctx: TraceContext, result: ModuleResult, attribution: pl.DataFrame, jobs: pl.DataFrame,
              quality: pl.DataFrame, primary: str, threshold: float) -> None:
    population = f"{jobs.height:,} jobs with attributed samples ({primary} samples)"
    samples = int(jobs["samples"].sum()) if jobs.height else 0
    allocated = float(jobs["allocated_gpu_hours"].sum()) if jobs.height else 0.0
    idle = float(jobs["idle_gpu_hours"].sum()) if jobs.height else 0.0
    result.add_finding("allocated_gpu_hours", "GPU-hours allocated to jobs, per the telemetry", allocated,
                       "GPU-hours", "gpu_efficiency.allocated_gpu_hours", population)
    accounted = jobs["accounting_gpu_hours"].drop_nulls()
    if accounted.len():
        result.add_finding("accounting_gpu_hours", "GPU-hours of the same jobs per the accounting, in the "
                           "telemetry window", float(accounted.sum()), "GPU-hours",
                           "gpu_efficiency.accounting_gpu_hours", f"{accounted.len():,} jobs of the job table")
    result.add_finding("idle_gpu_hours", "idle GPU-hours of jobs", idle, "GPU-hours",
                       "gpu_efficiency.idle_gpu_hours", population)
    if allocated:
        below = f"{threshold:g} %" if primary == "gpu_util" else f"{threshold:g}"
        result.add_finding("idle_share", f"share of allocated GPU-hours idle ({primary} below {below})",
                           idle / allocated, "fraction", "gpu_efficiency.idle_gpu_hours", population, basis=samples)
    sm = jobs.filter(pl.col("sm_sampled_gpu_hours").is_not_null())
    if sm.height and primary != "sm_active":
        result.add_finding("sm_idle_share", "share of SM-sampled GPU-hours of jobs with sm_active < 0.05",
                           float(sm["sm_idle_gpu_hours"].fill_null(0).sum() / sm["sm_sampled_gpu_hours"].sum()),
                           "fraction", "gpu_efficiency.sm_idle_share", f"{sm.height:,} jobs with sm_active samples",
                           basis=int(overall_sm_samples(ctx)))
    overall = ctx.one_row(f"""SELECT {_mean_sql("field = 'sm_active'")} AS sm,
                                     {_mean_sql("field = 'tensor_active'")} AS tensor
                              FROM ge_cells WHERE job_id IS NOT NULL""")
    for name, key, text in (("mean_sm_active", "sm", "mean SM activity of jobs' GPUs"),
                            ("mean_tensor_active", "tensor", "mean tensor-pipe activity of jobs' GPUs")):
        if overall[key] is not None:
            result.add_finding(name, text, overall[key], "ratio 0-1", "gpu_efficiency.mean_activity", population)
    total = float(attribution["gpu_hours"].sum()) if attribution.height else 0.0
    unallocated = attribution.filter(pl.col("attribution") == "unallocated")["gpu_hours"].sum()
    if total:
        result.add_finding("unallocated_share", "share of sampled GPU-hours on no job", float(unallocated) / total,
                           "fraction", "telemetry.unallocated", f"{int(attribution['samples'].sum()):,} "
                           f"{primary} samples", basis=int(attribution["samples"].sum()))
    names = {0: "hosts_unnamed", 1: "claimed_unallocated", 2: "jobs_unsampled", 3: "samples_without_period"}
    affects = {0: ("unallocated_share",), 1: ("allocated_gpu_hours", "idle_gpu_hours", "idle_share"),
               2: ("accounting_gpu_hours",), 3: ("allocated_gpu_hours", "idle_gpu_hours")}
    for index, row in enumerate(quality.to_dicts()):
        result.add_check(names[index], row["check"], row["count"], row["of"], row["unit"], affects[index])
