"""Adapter for the Shanghai AI Lab Acme trace (NSDI'24): job files of Seren and Kalos -> jobs.

Format of the release (InternLM/AcmeTrace `data/job_trace/`, also on the Hugging Face hub): one
CSV per cluster with a header line; an empty field is a missing value.

- `trace_seren.csv`: `job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,`
  `end_time,duration,queue,gpu_time`; times carry the offset `+08:00`.
- `trace_kalos.csv`: the same columns plus `mem_per_pod_GB,shared_mem_per_pod,fail_time,stop_time`;
  times carry `+00:00`. The AcmeTrace README shows the extra columns inside the shared ones
  (`...,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,submit_time,start_time,end_time,`
  `fail_time,stop_time,duration,queue,gpu_time`); the columns are read in the order the header
  line gives, which must name exactly the file's columns, each once.

Units and values: `node_num` nodes (pods) of the job, `gpu_num` GPUs, `cpu_num` CPU cores, all for
the whole job (read as numbers, since a column with gaps is written `8.0`; a check counts values
that are not whole); `duration` = end - start and `queue` = start - submit, seconds; `gpu_time` =
duration * gpu_num, GPU-seconds; `mem_per_pod_GB` GB per pod; `shared_mem_per_pod` shared memory
per pod (unit not stated, GB by the example's size). `type` is the workload (Pretrain, SFT, Eval,
MLLM, Debug, Other). `state` is the final state, one of `STATES` (a closed set).

Times: every time must be `YYYY-MM-DD HH:MM:SS[.ffffff]±HH:MM` (a `T` may replace the space); it
is read WITH its offset into a UTC instant (TIMESTAMPTZ). A time without an offset, with a zone
name instead, or that is not a real time is bad input, reported with its file, line and field.

Stored table `acme_job_trace`: both files, label `cluster` (`seren`, `kalos`), every column of
both (the Kalos-only ones NULL for Seren), times as TIMESTAMPTZ.

How a job becomes a canonical job (table `acme_jobs`):
- cluster seren/kalos; job_id, user as given; workload = type; vc, job_group, job_name NULL;
- submit_time, start_time, end_time as given (UTC instants); source_tz Asia/Shanghai (both
  clusters are in Shanghai; Kalos merely writes its times in UTC);
- queue_s = start_time - submit_time, run_s = end_time - start_time (from the times, not from
  the rounded `queue` and `duration` columns, which the validation report compares);
- num_gpus = gpu_num, num_cpus = cpu_num, num_instances = node_num, num_tasks = 1;
- mem_gb = mem_per_pod_GB * node_num for Kalos (one pod per node); NULL for Seren (not recorded);
- gpu_type = A100 for jobs with GPUs (both clusters are built of 8-GPU A100 servers, per the
  paper), NULL for CPU jobs; fractional_gpu = false (whole GPUs only);
- state: COMPLETED -> completed, CANCELLED -> cancelled, FAILED, TIMEOUT, NODE_FAIL -> failed
  (the owners count TIMEOUT and NODE_FAIL as failures too).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from pathlib import Path

import duckdb

from ddlx.datasets.adapter import CsvFormat, LocalPart, SourcePart, TraceAdapter, is_input_file, missing_error
from ddlx.datasets.canonical import state_case_sql
from ddlx.datasets.csvload import SOURCE, LoadResult, read_header
from ddlx.datasets.ranges import REAL_TIME_WINDOW, TEN_YEARS_S, ValueRange
from ddlx.datasets.sqltext import quote_identifier, sql_string
from ddlx.datasets.timezones import utc_offset_pattern
from ddlx.datasets.validation import Check, Figure, duplicate_key_check
from ddlx.errors import InputError
from ddlx.traces.acme.release import RELEASE as ACME

TRACE = "acme"
TABLE = "acme_job_trace"
JOBS = "acme_jobs"

#: File name -> cluster label.
CLUSTER_FILES: dict[str, str] = {"trace_seren.csv": "seren", "trace_kalos.csv": "kalos"}
#: Folders (relative to the source) searched for the files, in order.
SEARCH_FOLDERS: tuple[str, ...] = (".", "job_trace", "data/job_trace")

#: Final job states (AcmeTrace README); anything else is bad input.
STATES: tuple[str, ...] = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL")
STATE_MAP: dict[str, str] = {
    "COMPLETED": "completed",
    "CANCELLED": "cancelled",
    "FAILED": "failed",
    "TIMEOUT": "failed",
    "NODE_FAIL": "failed",
}
#: Workload types named by the owners (others are counted by a check, not rejected).
JOB_TYPES: tuple[str, ...] = ("Pretrain", "SFT", "Eval", "MLLM", "Debug", "Other")
#: GPU model of both clusters (NSDI'24 paper: A100 servers with 8 GPUs each).
GPU_MODEL = "A100"

TIME = "TIME"  # marker type: read as text, converted to TIMESTAMPTZ with its offset checked

#: Every column with the DuckDB type it is read with, in stored order (the Kalos README order).
COLUMNS: dict[str, str] = {
    "job_id": "VARCHAR",
    "user": "VARCHAR",
    "node_num": "DOUBLE",
    "gpu_num": "DOUBLE",
    "cpu_num": "DOUBLE",
    "mem_per_pod_GB": "DOUBLE",
    "shared_mem_per_pod": "DOUBLE",
    "type": "VARCHAR",
    "state": "ENUM(" + ", ".join(sql_string(s) for s in STATES) + ")",
    "submit_time": TIME,
    "start_time": TIME,
    "end_time": TIME,
    "fail_time": TIME,
    "stop_time": TIME,
    "duration": "DOUBLE",
    "queue": "DOUBLE",
    "gpu_time": "DOUBLE",
}
#: Seconds as given; negative only as the counted findings "start before submission" and
#: "negative duration" make them.
_SECONDS = ValueRange(-TEN_YEARS_S, TEN_YEARS_S, "seconds")
_MAX_GPUS = 100_000
#: Accepted range of every numeric and time column; values outside (NaN, inf too) are refused.
RANGES: dict[str, ValueRange] = {
    "node_num": ValueRange(0, 100_000, "nodes"),
    "gpu_num": ValueRange(0, _MAX_GPUS, "GPUs"),
    "cpu_num": ValueRange(0, 10_000_000, "CPU cores"),
    "mem_per_pod_GB": ValueRange(0, 100_000, "GB"),
    "shared_mem_per_pod": ValueRange(0, 100_000, "GB"),
    **{name: ValueRange(*REAL_TIME_WINDOW) for name, sql_type in COLUMNS.items() if sql_type == TIME},
    "duration": _SECONDS,
    "queue": _SECONDS,
    "gpu_time": ValueRange(-TEN_YEARS_S * _MAX_GPUS, TEN_YEARS_S * _MAX_GPUS, "GPU-seconds"),
}

#: The columns only Kalos has.
KALOS_ONLY: tuple[str, ...] = ("mem_per_pod_GB", "shared_mem_per_pod", "fail_time", "stop_time")
#: The columns of each cluster's file, in the order the release documents them.
SEREN_COLUMNS: tuple[str, ...] = tuple(name for name in COLUMNS if name not in KALOS_ONLY)
KALOS_COLUMNS: tuple[str, ...] = tuple(COLUMNS)
FILE_COLUMNS: dict[str, tuple[str, ...]] = {"seren": SEREN_COLUMNS, "kalos": KALOS_COLUMNS}

#: A time with its UTC offset (DuckDB regular expression); the offset must be one a real zone has.
TIME_PATTERN = r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,6})?" + utc_offset_pattern()
TIME_EXAMPLE = "2023-03-01 00:18:22+08:00"
_BAD_TIME_MARK = "ddlx-bad-time"
_BAD_TIME = re.compile(re.escape(_BAD_TIME_MARK) + r"\[(\w+)\]=(.*?)\)?$")


# -- reading -----------------------------------------------------------------------------------


def file_columns(part: SourcePart) -> dict[str, str]:
    """The columns of `part` in its header's order, with their read types.

    `InputError` (line 1) unless the header names exactly the cluster's columns, each once.
    """
    cluster = dict(part.labels)["cluster"]
    expected = FILE_COLUMNS[cluster]
    if part.path.stat().st_size == 0:  # the loader reports the empty file
        found = list(expected)
    else:
        found = read_header(part.path, part.display)
    if sorted(found) != sorted(expected):
        missing = [name for name in expected if name not in found]
        unexpected = sorted({name for name in found if name not in expected or found.count(name) > 1})
        detail = "; ".join(filter(None, [
            ("missing " + ", ".join(missing)) if missing else "",
            ("unexpected or repeated " + ", ".join(unexpected)) if unexpected else "",
        ]))
        raise InputError(part.display, f"header is {','.join(found)!r} ({detail}); expected the "
                         f"{cluster} columns {','.join(expected)} (in any order)", line=1)
    return {name: ("VARCHAR" if COLUMNS[name] == TIME else COLUMNS[name]) for name in found}


def _time_sql(name: str) -> str:
    """`name` (text) as a TIMESTAMPTZ, stopping the load on a value without a valid offset."""
    return (f'CASE WHEN {quote_identifier(name)} IS NULL THEN NULL '
            f'WHEN regexp_full_match({quote_identifier(name)}, {sql_string(TIME_PATTERN)}) '
            f'AND try_cast({quote_identifier(name)} AS TIMESTAMPTZ) IS NOT NULL '
            f'THEN CAST({quote_identifier(name)} AS TIMESTAMPTZ) '
            f"ELSE error('{_BAD_TIME_MARK}[{name}]=' || {quote_identifier(name)}) END AS {quote_identifier(name)}")


def select_sql(part: SourcePart, columns: dict[str, str]) -> str:
    """The stored rows of one cluster file (FROM `SOURCE`): every column of both files, typed."""
    parts = []
    for name, sql_type in COLUMNS.items():
        if name not in columns:
            parts.append(f'NULL::{"TIMESTAMPTZ" if sql_type == TIME else sql_type} AS {quote_identifier(name)}')
        elif sql_type == TIME:
            parts.append(_time_sql(name))
        elif sql_type.startswith("ENUM"):
            parts.append(f'CAST({quote_identifier(name)} AS VARCHAR) AS {quote_identifier(name)}')
        else:
            parts.append(quote_identifier(name))
    return f"SELECT {part.labels_sql()}{', '.join(parts)} FROM {SOURCE}"


def bad_time_error(local: LocalPart, field: str, value: str) -> InputError:
    """The `InputError` for the first row of `local` whose `field` holds the bad time `value`
    (error path only: scans the file to find the line)."""
    problem = f"cannot read {value!r} as a time; expected a time with its UTC offset, like {TIME_EXAMPLE}"
    with open(local.local_path, newline="", encoding="utf-8", errors="replace") as handle:
        reader = csv.reader(handle)
        header = [name.strip() for name in next(reader, [])]
        if header and header[0].startswith("\ufeff"):
            header[0] = header[0][1:]
        if field in header:
            index = header.index(field)
            for row in reader:
                if len(row) == len(header) and row[index] == value:
                    return InputError(local.part.display, problem, line=reader.line_num, field=field)
    return InputError(local.part.display, problem, field=field)


# -- canonical jobs ----------------------------------------------------------------------------


def jobs_sql() -> str:
    """The canonical `acme_jobs` rows."""
    return f"""
SELECT
    '{TRACE}' AS trace,
    cluster,
    job_id,
    "user",
    NULL::VARCHAR AS vc,
    NULL::VARCHAR AS job_group,
    NULL::VARCHAR AS job_name,
    "type" AS workload,
    submit_time,
    start_time,
    end_time,
    '{ACME.source_tz}' AS source_tz,
    epoch(start_time) - epoch(submit_time) AS queue_s,
    epoch(end_time) - epoch(start_time) AS run_s,
    gpu_num AS num_gpus,
    cpu_num AS num_cpus,
    CASE WHEN cluster = 'kalos' THEN mem_per_pod_GB * node_num END AS mem_gb,
    CAST(node_num AS BIGINT) AS num_instances,
    CAST(1 AS BIGINT) AS num_tasks,
    CASE WHEN gpu_num > 0 THEN '{GPU_MODEL}' END AS gpu_type,
    false AS fractional_gpu,
    {state_case_sql("state", STATE_MAP)} AS state,
    state AS raw_state
FROM {TABLE}
"""


# -- validation --------------------------------------------------------------------------------


def validation_checks(present: set[str]) -> list[Check]:
    """Data-quality checks on the stored tables in `present` (tables referred to by name)."""
    checks: list[Check] = []
    if TABLE in present:
        known_types = ", ".join(map(sql_string, JOB_TYPES))
        checks += [
            Check(TABLE, "missing submit_time", "submit_time IS NULL"),
            Check(TABLE, "missing start_time (never started)", "start_time IS NULL"),
            Check(TABLE, "missing end_time", "end_time IS NULL"),
            Check(TABLE, "start before submission", "start_time < submit_time"),
            Check(TABLE, "negative duration (end before start)", "end_time < start_time"),
            Check(TABLE, "duration differs from end_time - start_time by more than 1 s",
                  "abs(duration - (epoch(end_time) - epoch(start_time))) > 1"),
            Check(TABLE, "queue differs from start_time - submit_time by more than 1 s",
                  "abs(queue - (epoch(start_time) - epoch(submit_time))) > 1"),
            Check(TABLE, "gpu_time differs from duration * gpu_num by more than 1 GPU-second",
                  "abs(gpu_time - duration * gpu_num) > 1"),
            Check(TABLE, "node_num, gpu_num or cpu_num not a whole number",
                  "node_num <> round(node_num) OR gpu_num <> round(gpu_num) OR cpu_num <> round(cpu_num)"),
            Check(TABLE, "CPU-only jobs (gpu_num 0)", "gpu_num = 0"),
            Check(TABLE, "type empty or outside " + ", ".join(JOB_TYPES),
                  f'"type" IS NULL OR "type" NOT IN ({known_types})'),
            Check(TABLE, "Kalos FAILED jobs without fail_time",
                  "cluster = 'kalos' AND state = 'FAILED' AND fail_time IS NULL"),
            Check(TABLE, "Kalos CANCELLED jobs without stop_time",
                  "cluster = 'kalos' AND state = 'CANCELLED' AND stop_time IS NULL"),
            duplicate_key_check(TABLE, ("cluster", "job_id"), "duplicate job_id within a cluster"),
        ]
    if JOBS in present:
        checks += [
            Check(JOBS, "jobs that never started", "start_time IS NULL"),
            Check(JOBS, "jobs with negative queueing delay", "queue_s < 0"),
        ]
    return checks


def figures(present: set[str]) -> list[Figure]:
    """Per cluster: jobs with GPUs, GPU time, largest job and time span."""
    result: list[Figure] = []
    if TABLE not in present:
        return result
    for cluster in CLUSTER_FILES.values():
        rows = f"FROM {TABLE} WHERE cluster = '{cluster}'"
        result += [
            Figure(TABLE, f"{cluster}: GPU jobs", f"SELECT count(*) FILTER (WHERE gpu_num > 0) {rows}", "jobs"),
            Figure(TABLE, f"{cluster}: GPU time (sum of gpu_time)",
                   f"SELECT coalesce(sum(gpu_time), 0) / 3600 {rows}", "GPU-hours"),
            Figure(TABLE, f"{cluster}: largest job", f"SELECT max(gpu_num) {rows}", "GPUs"),
            Figure(TABLE, f"{cluster}: span (first submission to last end)",
                   f"SELECT (epoch(max(end_time)) - epoch(min(submit_time))) / 86400 {rows}", "days"),
        ]
    return result


# -- the adapter -------------------------------------------------------------------------------


class AcmeAdapter(TraceAdapter):
    """Reads `trace_seren.csv` and/or `trace_kalos.csv` from one folder."""

    def locate(self, source: Path, tables: Sequence[str]) -> dict[str, list[SourcePart]]:
        if not source.is_dir():
            raise InputError(str(source), "not a folder; expected the folder holding trace_seren.csv "
                                          "and/or trace_kalos.csv")
        published = {f.filename: f.sha256 for f in ACME.files}
        parts = []
        for name, cluster in CLUSTER_FILES.items():
            for folder in SEARCH_FOLDERS:
                path = source / folder / name
                if is_input_file(path):
                    parts.append(SourcePart(path, labels=(("cluster", cluster),),
                                            official_sha256=published.get(name)))
                    break
        if not parts:
            raise missing_error(source, [" or ".join(CLUSTER_FILES)])
        return {table: parts for table in tables}

    def csv_format(self, table: str, part: SourcePart) -> CsvFormat:
        columns = file_columns(part)
        return CsvFormat(columns=columns, select=select_sql(part, columns), header=True,
                         expected_header=tuple(columns))

    def value_ranges(self, table: str) -> dict[str, ValueRange]:
        return RANGES

    def load_table(self, con: duckdb.DuckDBPyConnection, table: str, parts: list[LocalPart],
                   out_path: Path, max_rejected_rows: int) -> LoadResult:
        try:
            return super().load_table(con, table, parts, out_path, max_rejected_rows)
        except InputError as exc:
            bad = _BAD_TIME.search(exc.problem)
            local = next((p for p in parts if p.part.display == exc.path), None)
            if bad is None or local is None:
                raise
            raise bad_time_error(local, bad.group(1), bad.group(2)) from None

    def derived_views(self, present: set[str]) -> dict[str, str]:
        if TABLE in present:
            return {self.jobs_table: jobs_sql()}
        return {}

    def validation_checks(self, present: set[str]) -> list[Check]:
        return validation_checks(present)

    def figures(self, present: set[str]) -> list[Figure]:
        return figures(present)


ADAPTER = AcmeAdapter.for_trace(ACME)
