"""Adapter for Alibaba PAI cluster-trace-gpu-v2020: official files -> typed Parquet -> canonical jobs.

Schema and units are declared in `ddlx.traces.pai.schema`. Quirks handled here:
- a 0 or empty time means missing and becomes NULL (it is not the epoch);
- times are read as Unix seconds (UTC instants) whose Asia/Shanghai wall clock gives the real
  time of day and weekday; the dates themselves are shifted by the trace owners;
- plan_gpu and gpu_wrk_util are percent of one GPU and plan_gpu is per instance, so derived
  columns in GPUs are added (`plan_gpus`, `task_gpus`, `gpus_used`), and likewise for CPU cores.

How a job is rolled up from its tasks and instances (table `pai_jobs`, canonical columns):
- job_id = job_name (the key shared by the job, task and instance tables); user from the job table;
  job_group and workload from the group-tag table (by inst_id; the most frequent value where an
  inst_id has several rows);
- submit_time = job start_time (the job table's start is the submission);
- start_time = earliest instance start; end_time = job end_time;
- queue_s = start_time - submit_time (`queue_delay.submit_to_first_start`);
- run_s = end_time - start_time (`runtime.first_start_to_last_end`);
- num_gpus = sum over tasks of inst_num * plan_gpu, divided by 100 once (whole percents add up
  exactly; a sum of per-task GPUs would make ten 0.1-GPU tasks 0.9999999999999999 GPUs);
  num_cpus likewise with plan_cpu;
  mem_gb = sum of inst_num * plan_mem; num_instances = sum of inst_num;
- gpu_type = gpu_type of the task asking for most GPUs (of tasks asking as many, the type first in
  alphabetical order); fractional_gpu = some task's plan_gpu is
  not a whole number of GPUs;
- state: Terminated -> completed, Failed -> failed, Running -> running, Waiting -> pending.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import duckdb

from ddlx.datasets.adapter import (
    CsvFormat,
    DerivedBuild,
    DerivedTable,
    SourcePart,
    TraceAdapter,
    find_file,
    missing_error,
    parquet_sql,
)
from ddlx.datasets.buckets import bucket_count, bucket_item, stored_rows, write_buckets
from ddlx.datasets.canonical import state_case_sql
from ddlx.datasets.csvload import SOURCE
from ddlx.datasets.ranges import ValueRange
from ddlx.datasets.sqltext import copy_to_parquet, quote_identifier, sql_string
from ddlx.datasets.validation import Check, duplicate_key_check
from ddlx.traces.pai import schema
from ddlx.traces.pai.release import RELEASE as PAI

TRACE = "pai"

STATE_MAP: dict[str, str] = {
    "Terminated": "completed",
    "Failed": "failed",
    "Running": "running",
    "Waiting": "pending",
}

_STATUS_ENUM = "ENUM(" + ", ".join(f"'{s}'" for s in schema.STATUSES) + ")"


def read_columns(table: str) -> dict[str, str]:
    """The schema the CSV of `table` is read with: official order, status as a closed set."""
    columns = dict(schema.COLUMNS[table])
    if table in ("pai_job_table", "pai_task_table"):
        columns["status"] = _STATUS_ENUM
    return columns


_DERIVED: dict[str, list[str]] = {
    "pai_task_table": [
        "plan_cpu / 100 AS plan_cpu_cores",
        "plan_gpu / 100 AS plan_gpus",
        "inst_num * coalesce(plan_cpu, 0) / 100 AS task_cpu_cores",
        "inst_num * coalesce(plan_gpu, 0) / 100 AS task_gpus",
        "inst_num * coalesce(plan_mem, 0) AS task_mem_gb",
    ],
    "pai_sensor_table": [
        "cpu_usage / 100 AS cpu_cores_used",
        "gpu_wrk_util / 100 AS gpus_used",
    ],
}


def select_sql(table: str) -> str:
    """SELECT that turns the raw rows of `table` (FROM `SOURCE`) into the stored typed table."""
    parts = []
    for name in schema.COLUMNS[table]:
        if table in schema.TIMED_TABLES and name in ("start_time", "end_time"):
            parts.append(f'NULLIF({quote_identifier(name)}, 0) AS {quote_identifier(name)}')
        elif name == "status":
            parts.append('CAST("status" AS VARCHAR) AS "status"')
        else:
            parts.append(quote_identifier(name))
    if table in schema.TIMED_TABLES:  # absurd times are refused by the range check, not the conversion
        ranges = schema.RANGES[table]
        parts += [f"to_timestamp({ranges[name].within_sql(f'NULLIF({name}, 0)')}) AS {stamp}"
                  for name, stamp in (("start_time", "start_ts"), ("end_time", "end_ts"))]
    parts += _DERIVED.get(table, [])
    return f"SELECT {', '.join(parts)} FROM {SOURCE}"


#: Stored roll-up of pai_instance_table per task, made at ingest (`task_instances_sql`).
TASK_INSTANCES = "pai_task_instances"


def task_instances_sql(instances: str) -> str:
    """One row per (job_name, task_name) of the instance rows `instances` (a FROM item): `instances`
    (BIGINT, its rows) and `first_start` (DOUBLE, seconds: the earliest start_time of its instances;
    NULL when none has one). NULL keys are groups like any other. Stored at ingest as
    `pai_task_instances`, so that the joins of tasks with their instances read one row per task,
    not the instances again; analyses of a catalog ingested without it read this query."""
    return f"""SELECT job_name, task_name, count(*) AS instances, min(start_time) AS first_start
               FROM {instances} GROUP BY job_name, task_name"""


def task_instances_item(stored: bool) -> str:
    """A FROM item of the instances' roll-up per task over the catalog's tables by name: the stored
    table when `stored`, else its query over pai_instance_table."""
    return TASK_INSTANCES if stored else f"({task_instances_sql('pai_instance_table')})"


JOBS_INPUTS: tuple[str, ...] = ("pai_job_table", "pai_task_table", "pai_instance_table")


def jobs_sql(folder: Path, present: set[str]) -> str:
    """The canonical `pai_jobs` rows in one query, from the stored job, task and group-tag tables and
    the instances' roll-up (`TASK_INSTANCES`, built before).

    The tasks and the roll-up are grouped by job_name together, in one aggregate over the rows of
    both, and joined to the jobs once; the tags of an inst_id with one row are that row, screened
    by the 64-bit hash of inst_id (a hash seen once is an inst_id seen once), so that only the rare
    repeated ones are grouped on their text (docs/performance.md: at ten times the release, two
    aggregates, a grouping of every tag and three joins held more than DuckDB's memory limit;
    `build_jobs_in_buckets` runs them bucket by bucket)."""
    tags = _tags_sql(parquet_sql(folder, "pai_group_tag_table") if "pai_group_tag_table" in present else None)
    return f"""
WITH per_job AS ({_per_job_sql(parquet_sql(folder, 'pai_task_table'), parquet_sql(folder, TASK_INSTANCES))}),
tags AS ({tags})
SELECT {_jobs_columns("j", "t")}
FROM {parquet_sql(folder, 'pai_job_table')} AS j
LEFT JOIN per_job AS t USING (job_name)
LEFT JOIN tags AS g ON g.inst_id = j.inst_id
"""


def _tags_sql(group_tags: str | None) -> str:
    """inst_id, job_group, workload: one row per inst_id of the FROM item `group_tags` (None: no rows)."""
    if group_tags is None:
        return "SELECT NULL::VARCHAR AS inst_id, NULL::VARCHAR AS job_group, NULL::VARCHAR AS workload WHERE false"
    # an inst_id with several rows takes each column's mode; its rows share a hash, and a hash
    # shared by different inst_ids (a collision) gives each of them its own single row again
    return f"""
    WITH repeated AS (SELECT hash(inst_id) AS h FROM {group_tags} GROUP BY h HAVING count(*) > 1)
    SELECT inst_id, "group" AS job_group, workload FROM {group_tags}
    WHERE hash(inst_id) NOT IN (SELECT h FROM repeated)
    UNION ALL
    SELECT inst_id, mode("group"), mode(workload) FROM {group_tags}
    WHERE hash(inst_id) IN (SELECT h FROM repeated) GROUP BY inst_id"""


#: The task columns the per-job aggregate reads, and the job columns the canonical jobs read.
_TASK_COLUMNS = "job_name, inst_num, plan_gpu, plan_cpu, task_mem_gb, gpu_type, task_gpus"
_JOB_COLUMNS = 'job_name, inst_id, "user", status, start_time, end_time'


def _per_job_sql(tasks: str, rollup: str) -> str:
    """One row per job_name of the FROM items `tasks` (task rows) and `rollup` (the instances' roll-up)."""
    return f"""
    -- a task row has is_task and no first_start, a roll-up row the reverse
    SELECT job_name,
           count(*) FILTER (WHERE is_task) AS num_tasks,
           sum(inst_num) AS num_instances,
           sum(inst_num * coalesce(plan_gpu, 0)) / 100 AS num_gpus,
           sum(inst_num * coalesce(plan_cpu, 0)) / 100 AS num_cpus,
           sum(task_mem_gb) AS mem_gb,
           -- the GPU type of the task with the most GPUs; on a tie, the first name
           min(struct_pack(fewer_gpus := -task_gpus, gpu_type := gpu_type))
               FILTER (WHERE gpu_type IS NOT NULL AND task_gpus > 0) AS gpu_pick,
           bool_or(plan_gpu IS NOT NULL AND plan_gpu % 100 <> 0) AS fractional_gpu,
           min(first_start) AS first_start
    FROM (
        SELECT {_TASK_COLUMNS}, true AS is_task, NULL::DOUBLE AS first_start FROM {tasks}
        UNION ALL
        SELECT job_name, NULL, NULL, NULL, NULL, NULL, NULL, false, first_start FROM {rollup})
    GROUP BY job_name"""


def _jobs_columns(job: str, per_job: str) -> str:
    """The canonical columns, from a job row aliased `job`, its per-job aggregate aliased `per_job`
    (`_per_job_sql`'s columns) and its tags aliased g (`_tags_sql`'s)."""
    j, t = job, per_job
    return f"""
    '{TRACE}' AS trace,
    '{TRACE}' AS cluster,
    {j}.job_name AS job_id,
    {j}.user AS "user",
    NULL::VARCHAR AS vc,
    g.job_group,
    NULL::VARCHAR AS job_name,
    g.workload,
    to_timestamp({j}.start_time) AS submit_time,
    to_timestamp({t}.first_start) AS start_time,
    to_timestamp({j}.end_time) AS end_time,
    '{schema.SOURCE_TZ}' AS source_tz,
    {t}.first_start - {j}.start_time AS queue_s,
    {j}.end_time - {t}.first_start AS run_s,
    coalesce({t}.num_gpus, 0) AS num_gpus,
    coalesce({t}.num_cpus, 0) AS num_cpus,
    coalesce({t}.mem_gb, 0) AS mem_gb,
    CAST(coalesce({t}.num_instances, 0) AS BIGINT) AS num_instances,
    coalesce({t}.num_tasks, 0) AS num_tasks,
    {t}.gpu_pick.gpu_type AS gpu_type,
    coalesce({t}.fractional_gpu, false) AS fractional_gpu,
    {state_case_sql(f"{j}.status", STATE_MAP)} AS state,
    {j}.status AS raw_state"""


#: The canonical jobs are built in one query up to this many jobs, and bucket by bucket beyond it,
#: `JOBS_PER_BUCKET` jobs to a bucket. Writing the buckets and the one file costs more than the one
#: query saves until its joins far outgrow DuckDB's memory limit: at three times the release (3.8 M
#: jobs) one query took 6.6 s against 12.1 s in 2 buckets; at ten times (12.6 M) 51 s against 38.9 s
#: in 7 buckets (docs/performance.md).
ONE_QUERY_MAX_JOBS = 8_000_000
JOBS_PER_BUCKET = 2_000_000


def jobs_buckets(jobs: int) -> int:
    """Buckets the canonical jobs of `jobs` jobs are built in (1: one query)."""
    return 1 if jobs <= ONE_QUERY_MAX_JOBS else bucket_count(jobs, JOBS_PER_BUCKET)


def build_jobs_in_buckets(folder: Path, present: set[str], buckets: int) -> DerivedBuild:
    """A build of the `jobs_sql` rows in two stages over `buckets` buckets: the columns they read
    written in buckets (of job_name for the jobs, tasks and roll-up, of inst_id for the group tags);
    per job bucket the aggregate and the join with the jobs, written in buckets of inst_id; per
    inst_id bucket the join with the tags; then one file. The same rows as the one query."""
    has_tags = "pai_group_tag_table" in present
    # the roll-up is not in `present`: it is built just before, from the instances
    inputs = [("jobs", _JOB_COLUMNS, "job_name", "pai_job_table"),
              ("tasks", _TASK_COLUMNS, "job_name", "pai_task_table"),
              ("rollup", "job_name, first_start", "job_name", TASK_INSTANCES)]
    if has_tags:
        inputs.append(("tags", 'inst_id, "group", workload', "inst_id", "pai_group_tag_table"))

    def build(con: duckdb.DuckDBPyConnection, out_path: Path, scratch: Path) -> int:
        work = scratch / "pai_jobs_buckets"
        try:
            for name, columns, key, table in inputs:
                write_buckets(con, f"SELECT {columns} FROM {parquet_sql(folder, table)}", key, work / name, buckets)
            for bucket in range(buckets):
                per_job = _per_job_sql(bucket_item(work / "tasks", bucket), bucket_item(work / "rollup", bucket))
                write_buckets(con, f"""
                    WITH per_job AS ({per_job})
                    SELECT j.*, t.* EXCLUDE (job_name)
                    FROM {bucket_item(work / "jobs", bucket)} AS j LEFT JOIN per_job AS t USING (job_name)""",
                              "inst_id", work / "joined", buckets, source=f"jobs{bucket}")
            (work / "out").mkdir()
            for bucket in range(buckets):
                tags = _tags_sql(bucket_item(work / "tags", bucket) if has_tags else None)
                copy_to_parquet(con, f"""
                    WITH tags AS ({tags})
                    SELECT {_jobs_columns("p", "p")}
                    FROM {bucket_item(work / "joined", bucket)} AS p LEFT JOIN tags AS g ON g.inst_id = p.inst_id""",
                                work / "out" / f"{bucket}.parquet")
            parts = sql_string(str(work / "out" / "*.parquet"))
            return copy_to_parquet(con, f"SELECT * FROM read_parquet({parts})", out_path)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return build


def duplicate_check_name(table: str) -> str:
    """The name of the validation check counting the rows of `table` that repeat its unique key
    (`schema.UNIQUE_KEYS`)."""
    return f"duplicate {', '.join(schema.UNIQUE_KEYS[table])} (rows beyond the first)"


#: The validation check counting tasks whose job_name no job has (a NULL job_name among them).
ORPHAN_TASKS_CHECK = "orphan: task without job (job_name)"


def validation_checks(present: set[str]) -> list[Check]:
    """Data-quality checks for the stored tables in `present` (tables referred to by name)."""
    checks: list[Check] = []
    for table in schema.TIMED_TABLES:
        if table in present:
            checks += [
                Check(table, "missing start_time (empty or 0)", "start_time IS NULL"),
                Check(table, "missing end_time (empty or 0)", "end_time IS NULL"),
                Check(table, "negative duration (end before start)", "end_time < start_time"),
            ]
    for table, keys in schema.UNIQUE_KEYS.items():
        if table in present:
            checks.append(duplicate_key_check(table, keys, duplicate_check_name(table)))
    if "pai_job_table" in present:
        checks += [
            Check("pai_job_table", "still running at trace end (status Running)", "status = 'Running'"),
            Check("pai_job_table", "waiting at trace end (status Waiting)", "status = 'Waiting'"),
        ]
    # the instances are counted per task of their roll-up: a task of it that the task table lacks
    # holds that many orphan rows (a NULL key matches nothing, as on the instances themselves)
    instances = task_instances_item(TASK_INSTANCES in present)
    orphan_checks = [
        ("pai_task_table", "pai_job_table", ORPHAN_TASKS_CHECK, ["job_name"],
         "pai_task_table", "count(*)"),
        ("pai_instance_table", "pai_task_table", "orphan: instance without task (job_name, task_name)",
         ["job_name", "task_name"], instances, "coalesce(sum(c.instances), 0)"),
        ("pai_sensor_table", "pai_instance_table", "orphan: sensor row without instance (worker_name)",
         ["worker_name"], "pai_sensor_table", "count(*)"),
        ("pai_group_tag_table", "pai_job_table", "orphan: group tag without job (inst_id)", ["inst_id"],
         "pai_group_tag_table", "count(*)"),
    ]
    for child, parent, name, keys, rows, counted in orphan_checks:
        if child in present and parent in present:
            match = " AND ".join(f"p.{key} = c.{key}" for key in keys)
            checks.append(Check(child, name, query=(
                f"SELECT {counted} FROM {rows} AS c "
                f"WHERE NOT EXISTS (SELECT 1 FROM {parent} AS p WHERE {match})")))
    if "pai_sensor_table" in present:
        checks.append(Check("pai_sensor_table", "gpu_wrk_util above 100 % of one GPU", "gpu_wrk_util > 100"))
        if "pai_machine_spec" in present:
            capacity = " ".join(f"WHEN '{t}' THEN {gb}" for t, gb in schema.GPU_MEMORY_GB.items())
            checks.append(Check(
                "pai_sensor_table", "max GPU memory above device capacity (P100/T4/V100 16 GB, V100M32 32 GB)",
                query="SELECT count(*) FROM pai_sensor_table AS s JOIN pai_machine_spec AS m USING (machine) "
                      f"WHERE s.max_gpu_wrk_mem > CASE m.gpu_type {capacity} END",
            ))
    if "pai_machine_metric" in present:
        checks.append(Check("pai_machine_metric", "machine_gpu above 100 %", "machine_gpu > 100"))
    if "pai_jobs" in present:
        checks += [
            Check("pai_jobs", "jobs that never started (no instance start)", "start_time IS NULL"),
            Check("pai_jobs", "jobs with negative queueing delay (first instance before submission)",
                  "queue_s < 0"),
            Check("pai_jobs", "jobs without any task", "num_tasks = 0"),
        ]
    return checks


class PaiAdapter(TraceAdapter):
    """Each table is `<table>.tar.gz` holding a headerless `<table>.csv`, or that CSV extracted."""

    def locate(self, source: Path, tables: Sequence[str]) -> dict[str, list[SourcePart]]:
        found: dict[str, list[SourcePart]] = {}
        missing = []
        for table in tables:
            release_file = PAI.file_for(table)
            member = release_file.member or f"{table}.csv"
            if source.is_file():
                path = source if source.name == release_file.filename else None
            else:
                path = find_file(source, [member, release_file.filename])
            if path is None:
                missing.append(f"{member} or {release_file.filename}")
            elif path.name == release_file.filename:
                found[table] = [SourcePart(path, member, official_sha256=release_file.sha256)]
            else:
                found[table] = [SourcePart(path, official_sha256=release_file.member_sha256)]
        if missing:
            raise missing_error(source, missing)
        return found

    def csv_format(self, table: str, part: SourcePart) -> CsvFormat:
        return CsvFormat(columns=read_columns(table), select=select_sql(table))

    def value_ranges(self, table: str) -> dict[str, ValueRange]:
        return schema.RANGES[table]

    def derived_tables(self, folder: Path, present: set[str]) -> dict[str, DerivedTable]:
        derived: dict[str, DerivedTable] = {}
        if "pai_instance_table" in present:
            derived[TASK_INSTANCES] = task_instances_sql(parquet_sql(folder, "pai_instance_table"))
        if all(t in present for t in JOBS_INPUTS):
            buckets = jobs_buckets(stored_rows(folder / "pai_job_table.parquet"))
            derived[self.jobs_table] = (jobs_sql(folder, present) if buckets == 1
                                        else build_jobs_in_buckets(folder, present, buckets))
        return derived

    def validation_checks(self, present: set[str]) -> list[Check]:
        return validation_checks(present)


ADAPTER = PaiAdapter.for_trace(PAI)
