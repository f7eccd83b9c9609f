"""Adapter for the Microsoft Philly trace (ATC'19): `trace-data.tar.gz` -> typed Parquet -> canonical jobs.

Release layout: one archive `trace-data.tar.gz` holding five files (possibly under a folder
`trace-data/`): `cluster_job_log`, `cluster_gpu_util`, `cluster_cpu_util`, `cluster_mem_util`,
`cluster_machine_list`. `--from` may be that archive, a folder holding it, or a folder holding the
five files (directly or in one subfolder such as `trace-data/`).

Format of `cluster_job_log` (declared in `JOB_LOG_JSON_COLUMNS`): one JSON array of job objects
`{status, vc, jobid, user, submitted_time, attempts: [{start_time, end_time, detail: [{ip, gpus}]}]}`;
- `status` is one of `STATUSES`; any other value (or none) is bad input;
- times like `2017-10-07 01:12:09`: the US/Pacific wall clock (`SOURCE_TZ`) without a zone. JSON
  null, `""` and the string `"None"` all mean missing (`MISSING_TIME_MARKERS`);
- `detail` lists the machines (`ip`, e.g. `m47`) of an attempt and the GPUs it used on each
  (`gpus`, e.g. `["gpu0", "gpu1"]`). A job may have no attempt; an attempt may lack its start
  and/or end; a last attempt without end was still running when the trace was cut;
- any other shape is bad input, named by job, attempt, detail entry and key (`raw_job_log`, the one
  parser of the log, which the import preset `philly-json` reads it with too): a GPU that is not a
  string (a nested list, a number, null), an attempt or a detail entry that is not an object, a key
  written twice, text keys that are not strings, nesting deeper than `ddlx.jsontext.MAX_JSON_DEPTH`.

Format of the utilisation files (declared in `UTIL_FORMATS`), one row per machine and minute,
with a header line:
- `cluster_gpu_util`: `time,machineId,gpu0_util,...,gpu7_util`; every data row ends with a comma
  (11 fields, the last one empty). A GPU field is a percentage, `NA` (the GPU exists but was
  offline) or empty (the machine has no such GPU).
- `cluster_cpu_util`: `time,machine_id,cpu_util` (percent); `cluster_mem_util`:
  `time,machine_id,mem_total,mem_free` (as written; see `docs/traces/philly.md` on the unit).
  `NA` (or an empty field) means offline.
- times like `2017-10-03 00:08:00 PDT`: the Pacific wall clock with its zone abbreviation,
  PDT (UTC-7) or PST (UTC-8) (`UTC_OFFSET_HOURS`), which also tells the two 01:xx hours of
  2017-11-05 apart. Any other suffix is bad input.

Format of `cluster_machine_list`: header `machineId, number of GPUs, single GPU mem` (spaces
after the commas), rows like `m31,8, 24GB`.

Time conversion of the job log (`timezones.utc_from_zone_sql`): wall-clock times are read in
America/Los_Angeles. A time in the repeated hour of the fall-back change (2017-11-05
01:00-01:59) is read as its first occurrence (PDT, UTC-7), ddlx's one convention for ingest and
import (`ddlx.datasets.timezones`), except an attempt's
end whose first reading falls before that attempt's start: it is then read as the second
occurrence (PST, one hour later). After that an attempt ending before it starts is bad input.

Stored tables: `philly_job_log` (one row per job, attempts nested as read), `philly_gpu_util`,
`philly_cpu_util`, `philly_mem_util`, `philly_machine_list`; derived `philly_attempts` (one row per
attempt, UTC times) and the canonical `philly_jobs`. Columns are listed in `docs/traces/philly.md`.

How a job becomes a canonical row (table `philly_jobs`, from `philly_job_log` alone):
- cluster = 'philly'; job_id = jobid; user, vc as given; submit_time = submitted_time (UTC);
- start_time = the earliest start of any attempt (a first attempt the log gives no start does
  not hide a later one that ran); end_time = end of the last attempt (NULL when that attempt has
  no end: the release notes read it as still running, but the job carries a final status, so
  ddlx reads the end as not logged, `TraceInfo.unlogged_ends`);
- queue_s = start_time - submit_time (`queue_delay.submit_to_first_start`); run_s = end_time -
  start_time (`runtime.first_start_to_last_end`);
- num_gpus = GPUs of the job's largest attempt (most entries in its `detail` gpus lists; the
  earliest such attempt on a tie), num_instances = distinct machines of that same attempt;
  a job without any attempt is kept with 0 GPUs and 0 instances (and counted in the report);
- num_tasks = 1; num_cpus, mem_gb, gpu_type NULL (not in the trace); fractional_gpu false;
- state: Pass -> completed, Killed -> cancelled, Failed -> failed, also when the last attempt has
  no end (the status is final); raw_state = status; source_tz = America/Los_Angeles.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from ddlx.datasets.adapter import LocalPart, SourcePart, TraceAdapter, find_file, missing_error, parquet_sql
from ddlx.datasets.canonical import jobs_table_name, state_case_sql
from ddlx.datasets.csvload import (
    NOT_UTF8,
    SOURCE,
    LoadResult,
    expected_value,
    first_invalid_utf8,
    load_csv_to_parquet,
    read_header,
)
from ddlx.datasets.ranges import COUNTER_LIMIT, REAL_TIME_WINDOW, ValueRange
from ddlx.datasets.sqltext import copy_to_parquet, quote_identifier, sql_string
from ddlx.datasets.timezones import utc_from_offset_sql, utc_from_zone_sql
from ddlx.datasets.validation import Check, Figure
from ddlx.errors import InputError, first_line
from ddlx.jsontext import JsonTooDeepError, load_json
from ddlx.traces.philly.release import RELEASE as PHILLY

TRACE = "philly"

#: IANA zone of the trace's wall clock (the cluster ran in US Pacific time).
SOURCE_TZ = PHILLY.source_tz

#: Stored tables: the five raw ones, and the two derived from the job log.
JOB_LOG = "philly_job_log"
GPU_UTIL = "philly_gpu_util"
CPU_UTIL = "philly_cpu_util"
MEM_UTIL = "philly_mem_util"
MACHINE_LIST = "philly_machine_list"
ATTEMPTS_TABLE = "philly_attempts"
JOBS_TABLE = jobs_table_name(TRACE)

#: The release archive, and the file (archive member) holding each raw table.
ARCHIVE_NAME = PHILLY.files[0].filename
FILE_OF_TABLE: dict[str, str] = {
    JOB_LOG: "cluster_job_log",
    GPU_UTIL: "cluster_gpu_util",
    CPU_UTIL: "cluster_cpu_util",
    MEM_UTIL: "cluster_mem_util",
    MACHINE_LIST: "cluster_machine_list",
}

#: Job statuses of the job log and the canonical state of each.
STATUSES: tuple[str, ...] = ("Pass", "Killed", "Failed")
STATE_MAP: dict[str, str] = {"Pass": "completed", "Killed": "cancelled", "Failed": "failed"}

#: Strings of the job log that mean "no time" (besides JSON null).
MISSING_TIME_MARKERS: tuple[str, ...] = ("", "None")

#: Wall-clock format of every time in the release (the utilisation files add " PDT"/" PST").
WALL_CLOCK_FORMAT = "%Y-%m-%d %H:%M:%S"
WALL_CLOCK_LENGTH = 19

#: Hours to add to a utilisation file's wall clock to get UTC, by its zone suffix.
UTC_OFFSET_HOURS: dict[str, int] = {"PDT": 7, "PST": 8}

#: A utilisation value that means offline (besides an empty field).
NULL_STRINGS: tuple[str, ...] = ("NA", "")

#: The schema DuckDB reads the job log with (key -> type); unknown keys are ignored. Every leaf
#: is read as JSON first, so that its JSON type is checked (a string or null, `gpus` an array of
#: strings) before it is taken as text: DuckDB would otherwise turn a number, an object, an array
#: or a NaN literal into text.
JOB_LOG_JSON_COLUMNS: dict[str, str] = {
    "jobid": "JSON",
    "user": "JSON",
    "vc": "JSON",
    "status": "JSON",
    "submitted_time": "JSON",
    "attempts": "STRUCT(start_time JSON, end_time JSON, detail STRUCT(ip JSON, gpus JSON[])[])[]",
}
#: The text keys of a job and of an attempt.
JOB_TEXT_KEYS: tuple[str, ...] = ("jobid", "user", "vc", "status", "submitted_time")
ATTEMPT_TIME_KEYS: tuple[str, ...] = ("start_time", "end_time")

GPU_FIELDS: tuple[str, ...] = tuple(f"gpu{i}_util" for i in range(8))

#: Utilisation in percent: a value above 100 % is a documented quirk of the release (counted);
#: 1,000 % bounds it.
_PERCENT = ValueRange(0, 1_000, "percent")
_WALL_CLOCK = ValueRange(*REAL_TIME_WINDOW)
#: Accepted range of every numeric and time column, per stored table; values outside (NaN, inf
#: included) are refused. The job log's times (`submitted_time`, attempts' `start_time` and
#: `end_time`) must lie in `JOB_TIME_RANGE`.
RANGES: dict[str, dict[str, ValueRange]] = {
    GPU_UTIL: {"time": _WALL_CLOCK, **{name: _PERCENT for name in GPU_FIELDS}},
    CPU_UTIL: {"time": _WALL_CLOCK, "cpu_util": _PERCENT},
    MEM_UTIL: {"time": _WALL_CLOCK, "mem_total": ValueRange(0, COUNTER_LIMIT, "as written"),
               "mem_free": ValueRange(0, COUNTER_LIMIT, "as written")},
    MACHINE_LIST: {"num_gpus": ValueRange(0, 64, "GPUs", field="number of GPUs"),
                   "gpu_mem_gb": ValueRange(0, 1_024, "GB", field="single GPU mem")},
}
JOB_TIME_RANGE = _WALL_CLOCK


@dataclass(frozen=True)
class UtilFormat:
    """One utilisation CSV: the names on its header line, the fields of a data row, and which of
    them are numbers (`NA` or empty = NULL).

    DuckDB reads the numbers directly, `NA` (offline) and empty (no such GPU) both as NULL
    (`NULL_STRINGS`): telling them apart would mean reading every field as text, which costs a
    third of the load time of the multi-GB GPU file.

    `trailing_empty`: every data row ends with a comma, i.e. one more field that must be empty.
    `counts_gpus`: the value fields are GPUs; store how many of them have a number in each row.
    """

    header: tuple[str, ...]
    value_fields: tuple[str, ...]
    trailing_empty: bool = False
    counts_gpus: bool = False

    @property
    def read_columns(self) -> dict[str, str]:
        columns = {name: "VARCHAR" for name in self.header[:2]}
        columns.update({name: "DOUBLE" for name in self.value_fields})
        if self.trailing_empty:
            columns["trailing_comma"] = "VARCHAR"
        return columns


UTIL_FORMATS: dict[str, UtilFormat] = {
    GPU_UTIL: UtilFormat(("time", "machineId", *GPU_FIELDS), GPU_FIELDS, trailing_empty=True, counts_gpus=True),
    CPU_UTIL: UtilFormat(("time", "machine_id", "cpu_util"), ("cpu_util",)),
    MEM_UTIL: UtilFormat(("time", "machine_id", "mem_total", "mem_free"), ("mem_total", "mem_free")),
}

MACHINE_LIST_HEADER: tuple[str, ...] = ("machineId", "number of GPUs", "single GPU mem")
#: Fields of a machine-list row, named as on the header line (so messages name them the same way).
MACHINE_LIST_COLUMNS: dict[str, str] = dict(zip(MACHINE_LIST_HEADER, ("VARCHAR", "BIGINT", "VARCHAR")))
#: A GPU memory size as written in the machine list, e.g. ` 24GB`.
GPU_MEM_PATTERN = r"\s*[0-9]+(\.[0-9]+)?\s*GB\s*"

_TIME_WITH_ZONE = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (\S+)")
_EXPECTED_TIME = "'YYYY-MM-DD HH:MM:SS PDT' or 'YYYY-MM-DD HH:MM:SS PST'"
_EXPECTED_JOB_TIME = "'YYYY-MM-DD HH:MM:SS' (Pacific wall clock), or null, \"\" or \"None\" when missing"


# -- SQL building blocks ---------------------------------------------------------------------


def _sql_list(values: Sequence[str]) -> str:
    return ", ".join(sql_string(v) for v in values)


def missing_time_sql(expr: str) -> str:
    """True when the job-log time text `expr` means missing."""
    return f"({expr} IS NULL OR {expr} IN ({_sql_list(MISSING_TIME_MARKERS)}))"


def wall_clock_sql(expr: str) -> str:
    """The job-log time text `expr` as a TIMESTAMP (wall clock, no zone); NULL when missing."""
    return (f"CASE WHEN {missing_time_sql(expr)} THEN NULL "
            f"ELSE strptime({expr}, {sql_string(WALL_CLOCK_FORMAT)}) END")


def attempts_sql(job_log: str, tz: str = SOURCE_TZ) -> str:
    """One row per attempt of the stored job log `job_log` (a FROM item), with UTC times.

    The end is read as the second occurrence of a repeated wall-clock hour when the first one
    would put it before the attempt's start (see the module docstring).
    """
    later_end = "(end_first + INTERVAL 1 HOUR)"
    end_sql = (f"CASE WHEN end_first < start_time AND timezone({sql_string(tz)}, {later_end}) = end_local "
               f"THEN {later_end} ELSE end_first END")
    return f"""
WITH unnested AS (
    SELECT jobid, num_attempts, unnest(attempts) AS a, generate_subscripts(attempts, 1) AS attempt
    FROM {job_log}
),
readings AS (
    SELECT jobid, attempt, num_attempts,
           a.start_time AS start_local, a.end_time AS end_local, coalesce(a.detail, []) AS detail,
           {utc_from_zone_sql('a.start_time', tz)} AS start_time,
           {utc_from_zone_sql('a.end_time', tz)} AS end_first
    FROM unnested
),
resolved AS (
    SELECT *, {end_sql} AS end_time FROM readings
)
SELECT jobid,
       CAST(attempt AS INTEGER) AS attempt,
       attempt = num_attempts AS is_last_attempt,
       start_time,
       end_time,
       epoch(end_time) - epoch(start_time) AS duration_s,
       attempt = num_attempts AND end_local IS NULL AS running_at_trace_end,
       start_local,
       end_local,
       [d.ip FOR d IN detail] AS machines,
       {detail_machines_sql('detail')} AS num_machines,
       {detail_gpus_sql('detail')} AS num_gpus
FROM resolved
"""


def detail_gpus_sql(detail: str) -> str:
    """SQL: the GPUs of an attempt whose `detail` (a list of {ip, gpus}, NULL for none) is given:
    the entries of its gpus lists, as INTEGER. The ingest's attempts and the import preset's jobs
    count them with this one expression."""
    return f"CAST(coalesce(list_sum([len(coalesce(d.gpus, [])) FOR d IN coalesce({detail}, [])]), 0) AS INTEGER)"


def detail_machines_sql(detail: str) -> str:
    """SQL: the machines of an attempt whose `detail` is given: its distinct ips (a null ip is no
    machine), as INTEGER."""
    return f"CAST(len(list_distinct([d.ip FOR d IN coalesce({detail}, [])])) AS INTEGER)"


def repeated_hour_sql(utc: str, local: str, tz: str = SOURCE_TZ) -> str:
    """True when the wall clock `local` of the instant `utc` occurs twice (fall-back hour)."""
    return (f"(timezone({sql_string(tz)}, {utc} - INTERVAL 1 HOUR) = {local} "
            f"OR timezone({sql_string(tz)}, {utc} + INTERVAL 1 HOUR) = {local})")


def jobs_sql(folder: Path) -> str:
    """The canonical `philly_jobs` rows, from the stored job log and the derived attempts."""
    return f"""
WITH attempts AS (SELECT * FROM {parquet_sql(folder, ATTEMPTS_TABLE)}),
largest AS (
    SELECT jobid, num_gpus, num_machines
    FROM attempts
    QUALIFY row_number() OVER (PARTITION BY jobid ORDER BY num_gpus DESC, attempt) = 1
),
span AS (
    SELECT jobid,
           min(start_time) AS first_start,
           max(end_time) FILTER (WHERE is_last_attempt) AS last_end
    FROM attempts
    GROUP BY jobid
)
SELECT
    '{TRACE}' AS trace,
    '{TRACE}' AS cluster,
    j.jobid AS job_id,
    j.user AS "user",
    j.vc,
    NULL::VARCHAR AS job_group,
    NULL::VARCHAR AS job_name,
    NULL::VARCHAR AS workload,
    j.submitted_time AS submit_time,
    s.first_start AS start_time,
    s.last_end AS end_time,
    '{SOURCE_TZ}' AS source_tz,
    epoch(s.first_start) - epoch(j.submitted_time) AS queue_s,
    epoch(s.last_end) - epoch(s.first_start) AS run_s,
    CAST(coalesce(l.num_gpus, 0) AS DOUBLE) AS num_gpus,
    NULL::DOUBLE AS num_cpus,
    NULL::DOUBLE AS mem_gb,
    CAST(coalesce(l.num_machines, 0) AS BIGINT) AS num_instances,
    CAST(1 AS BIGINT) AS num_tasks,
    NULL::VARCHAR AS gpu_type,
    false AS fractional_gpu,
    {state_case_sql("j.status", STATE_MAP)} AS state,
    j.status AS raw_state
FROM {parquet_sql(folder, JOB_LOG)} AS j
LEFT JOIN span AS s USING (jobid)
LEFT JOIN largest AS l USING (jobid)
"""


def util_select_sql(fmt: UtilFormat) -> str:
    """SELECT (FROM `SOURCE`) turning the fields of a utilisation CSV (times and GPU fields read as
    text) into the stored row.

    A zone suffix other than PDT/PST, a value after the trailing comma or a number DuckDB cannot
    read stops the load (`error()`/a cast error); the caller then finds the line.
    """
    offsets = " ".join(f"WHEN suffix(time, ' {zone}') THEN {-hours * 3600}"
                       for zone, hours in UTC_OFFSET_HOURS.items())
    trailing = "trailing_comma IS NOT NULL OR " if fmt.trailing_empty else ""
    offset = (f"CASE WHEN {trailing}length(time) <> {WALL_CLOCK_LENGTH + 4} "
              f"THEN error('philly: malformed time or row') {offsets} "
              "ELSE error('philly: unknown time zone suffix') END")
    # The wall clock is read from the whole field: DuckDB's TIMESTAMP cast ignores a zone name after
    # the time, and `offset` has checked that it is exactly ' PDT' or ' PST' (cutting the field
    # to its first 19 characters first made a new string per row: 40 % of the conversion's cost).
    time_sql = utc_from_offset_sql("CAST(time AS TIMESTAMP)", offset)
    parts = [f"{time_sql} AS time", f'{quote_identifier(fmt.header[1])} AS machine_id', *fmt.value_fields]
    if fmt.counts_gpus:
        reporting = " + ".join(f"CAST({g} IS NOT NULL AS INTEGER)" for g in fmt.value_fields)
        parts.append(f"CAST({reporting} AS TINYINT) AS gpus_reporting")
    return f"SELECT {', '.join(parts)} FROM {SOURCE}"


def machine_list_select_sql() -> str:
    """SELECT (FROM `SOURCE`) of the machine list: ids trimmed, `24GB` -> 24.0."""
    machine, gpus, memory = (quote_identifier(name) for name in MACHINE_LIST_HEADER)
    mem = (f"CASE WHEN regexp_full_match({memory}, {sql_string(GPU_MEM_PATTERN)}) "
           f"THEN CAST(regexp_extract({memory}, '[0-9]+(\\.[0-9]+)?', 0) AS DOUBLE) "
           "ELSE error('philly: unreadable GPU memory') END")
    return (f"SELECT trim({machine}) AS machine_id, CAST({gpus} AS INTEGER) AS num_gpus, {mem} AS gpu_mem_gb "
            f"FROM {SOURCE}")


# -- loading the job log -----------------------------------------------------------------------

_RAW_JSON = "philly_raw_job_json"
_RAW_JOBS = "philly_raw_job_log"
_TAIL_BYTES = 4096


def _not_text_sql(value: str) -> str:
    """True when the JSON `value` is neither a string nor null."""
    return f"coalesce(json_type({value}) NOT IN ('VARCHAR', 'NULL'), false)"


def _job_type_problem_sql() -> str:
    """Counts the jobs holding a leaf of the wrong JSON type (see `JOB_LOG_JSON_COLUMNS`), or a null
    where an attempt, a detail entry or a GPU name belongs."""
    attempt_bad = " OR ".join(_not_text_sql(f"a.{key}") for key in ATTEMPT_TIME_KEYS)
    gpu_bad = f"len([1 FOR g IN coalesce(d.gpus, []) IF g IS NULL OR {_not_text_sql('g')}]) > 0"
    detail_bad = f"len([1 FOR d IN coalesce(a.detail, []) IF d IS NULL OR {_not_text_sql('d.ip')} OR {gpu_bad}]) > 0"
    nested = f"len([1 FOR a IN coalesce(attempts, []) IF a IS NULL OR {attempt_bad} OR {detail_bad}]) > 0"
    keys = " OR ".join(_not_text_sql(quote_identifier(key)) for key in JOB_TEXT_KEYS)
    return f"SELECT count(*) FROM {_RAW_JSON} WHERE {keys} OR {nested}"


def _job_text_sql() -> str:
    """The job-log rows with every JSON leaf taken as text (after `_job_type_problem_sql` found none)."""
    keys = ", ".join(f"{quote_identifier(key)}->>'$' AS {quote_identifier(key)}" for key in JOB_TEXT_KEYS)
    times = ", ".join(f"{key} := a.{key}->>'$'" for key in ATTEMPT_TIME_KEYS)
    detail = "[struct_pack(ip := d.ip->>'$', gpus := [g->>'$' FOR g IN d.gpus]) FOR d IN a.detail]"
    attempts = f"[struct_pack({times}, detail := {detail}) FOR a IN attempts]"
    return f"SELECT {keys}, {attempts} AS attempts FROM {_RAW_JSON}"


@contextlib.contextmanager
def raw_job_log(con: duckdb.DuckDBPyConnection, path: Path, display: str) -> Iterator[str]:
    """Read the job log at `path` (named `display` in messages) into a temporary table and yield its
    name; the table is dropped afterwards. The one parser of the format: the ingest (`load_job_log`)
    and the import preset `philly-json` (`formats.convert_job_log`) both read the log through it.

    The table has the job's text keys (`JOB_TEXT_KEYS`, as text) and `attempts`, a list of
    {start_time, end_time, detail: [{ip, gpus: [text]}]}, every leaf as written. `InputError` for an
    empty or unclosed array, malformed JSON, nesting deeper than `MAX_JSON_DEPTH`, a key twice in
    one object, a value of another JSON type than the format's (a number, an array or an object
    where text belongs; attempts, detail or gpus that are no array; an attempt or a detail entry
    that is no object; a GPU name that is not a string, e.g. a nested list), and a job without a
    jobid. Unknown keys are not read.
    """
    _require_closed_json_array(path, display)
    columns = "{" + ", ".join(f"{sql_string(k)}: {sql_string(v)}" for k, v in JOB_LOG_JSON_COLUMNS.items()) + "}"
    try:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {_RAW_JSON} AS SELECT * FROM "
                    f"read_json({sql_string(str(path))}, format='array', columns={columns})")
        if int(con.execute(_job_type_problem_sql()).fetchall()[0][0]):
            raise json_problem(path, display, "a value of the wrong JSON type")
        con.execute(f"CREATE OR REPLACE TEMP TABLE {_RAW_JOBS} AS {_job_text_sql()}")
    except duckdb.Error as exc:
        raise json_problem(path, display, first_line(exc)) from None
    finally:
        con.execute(f"DROP TABLE IF EXISTS {_RAW_JSON}")
    try:
        _check_job_ids(con, path, display)
        yield _RAW_JOBS
    finally:
        con.execute(f"DROP TABLE IF EXISTS {_RAW_JOBS}")


def load_job_log(con: duckdb.DuckDBPyConnection, local: LocalPart, out_path: Path) -> LoadResult:
    """Read the JSON job log into `out_path` (Parquet); `InputError` for what `raw_job_log`
    refuses, an unknown status, an unreadable time or an attempt ending before it starts."""
    path, display = local.local_path, local.part.display
    with raw_job_log(con, path, display) as raw:
        try:
            check_statuses(con, raw, display)
            check_times(con, raw, display, _EXPECTED_JOB_TIME, JOB_TIME_RANGE)
            typed_attempts = (
                "[struct_pack(start_time := " + wall_clock_sql("a.start_time") + ", end_time := "
                + wall_clock_sql("a.end_time") + ", detail := a.detail) FOR a IN coalesce(attempts, [])]"
            )
            rows = copy_to_parquet(con, f"""
                SELECT jobid, "user", vc, status,
                       {utc_from_zone_sql(wall_clock_sql('submitted_time'), SOURCE_TZ)} AS submitted_time,
                       CAST(len(coalesce(attempts, [])) AS INTEGER) AS num_attempts,
                       {typed_attempts} AS attempts
                FROM {raw}""", out_path)
            if rows == 0:
                raise InputError(display, "holds an empty JSON array; expected at least one job object")
            _check_attempt_order(con, out_path, display)
        except InputError:
            out_path.unlink(missing_ok=True)
            raise
    return LoadResult(rows=int(rows))


def _require_closed_json_array(path: Path, display: str) -> None:
    """`InputError` for an empty job log or one whose last character is not `]` (DuckDB reads a
    truncated array without complaint)."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        handle.seek(max(0, size - _TAIL_BYTES))
        tail = handle.read().rstrip()
    if not tail and size <= _TAIL_BYTES:
        raise InputError(display, "file is empty; expected one JSON array of job objects")
    if not tail.endswith(b"]"):
        raise json_problem(path, display, "the JSON array is not closed")


class _JsonObject(dict[str, Any]):
    """A JSON object as read by the error path, remembering keys it held more than once."""

    duplicate_keys: tuple[str, ...] = ()


def _json_object(pairs: list[tuple[str, Any]]) -> _JsonObject:
    obj = _JsonObject(pairs)
    if len(obj) < len(pairs):
        keys = [key for key, _ in pairs]
        obj.duplicate_keys = tuple(dict.fromkeys(key for key in keys if keys.count(key) > 1))
    return obj


class _NonStandardConstant(ValueError):
    """A NaN, Infinity or -Infinity literal: Python's json module reads them, JSON does not have them."""


def _refuse_constant(name: str) -> Any:
    raise _NonStandardConstant(name)


#: A JSON string (skipped) or a literal that is not JSON.
_STRING_OR_CONSTANT = re.compile(r'"(?:[^"\\]|\\.)*"|-?Infinity|NaN')


def constant_position(text: str) -> tuple[int, int]:
    """(line, column) of the first NaN/Infinity literal outside a string of the JSON `text`."""
    for match in _STRING_OR_CONSTANT.finditer(text):
        if not match.group().startswith('"'):
            offset = match.start()
            return text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset)
    return 1, 1


_EXPECTED_ARRAY = "expected one JSON array of job objects"


def _parse_strictly(path: Path, display: str) -> Any:
    """The job log parsed by Python's json module (error path only): strictly (no NaN or Infinity,
    nesting bounded by `MAX_JSON_DEPTH`, duplicated keys remembered); `InputError` naming the line
    and column of malformed JSON."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        return load_json(text, object_pairs_hook=_json_object, parse_constant=_refuse_constant)
    except UnicodeDecodeError:
        found = first_invalid_utf8(path)
        if found is None:
            raise InputError(display, NOT_UTF8) from None
        line, column, _ = found
        raise InputError(display, f"at column {column}: {NOT_UTF8}", line=line) from None
    except JsonTooDeepError as exc:
        raise InputError(display, f"at column {exc.colno}: {exc.msg}; {_EXPECTED_ARRAY}", line=exc.lineno) from None
    except json.JSONDecodeError as exc:
        raise InputError(display, f"malformed JSON at column {exc.colno} ({exc.msg}); {_EXPECTED_ARRAY}",
                         line=exc.lineno) from None
    except _NonStandardConstant as exc:
        line, column = constant_position(text)
        raise InputError(display, f"malformed JSON at column {column} ({exc} is not a JSON value); "
                                  f"{_EXPECTED_ARRAY}", line=line) from None


def json_problem(path: Path, display: str, detail: str) -> InputError:
    """Error path of the job log: read it with Python's json module (`_parse_strictly`) to name the
    line (malformed JSON) or the job, attempt, detail entry and key (valid JSON of the wrong shape)
    that DuckDB could not read."""
    try:
        data = _parse_strictly(path, display)
    except InputError as error:
        return error
    found = _first_shape_problem(data)
    if found is not None:
        field, problem = found
        return InputError(display, problem, field=field)
    return InputError(display, f"cannot be read as a JSON array of jobs ({detail})")


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return "a string" if isinstance(value, str) else f"the value {json.dumps(value)}"


def _first_shape_problem(data: Any) -> tuple[str | None, str] | None:
    """The first place where the parsed job log departs from `JOB_LOG_JSON_COLUMNS`: (key, problem)."""
    if not isinstance(data, list):
        return None, f"the top level is {_kind(data)}; {_EXPECTED_ARRAY}"

    def scalar_problem(where: str, obj: dict[str, Any], keys: Sequence[str]) -> tuple[str, str] | None:
        for key in keys:
            if obj.get(key) is not None and not isinstance(obj[key], str):
                return key, f"{where}: {key} is {_kind(obj[key])}; expected a string (or null)"
        return None

    def object_problem(where: str, obj: Any, key: str | None) -> tuple[str | None, str] | None:
        if not isinstance(obj, dict):
            return key, f"{where} is {_kind(obj)}; expected an object"
        duplicates = getattr(obj, "duplicate_keys", ())
        if duplicates:
            return duplicates[0], f"{where} has the key {duplicates[0]!r} twice; expected each key once"
        return None

    def gpus_problem(where: str, gpus: Any) -> tuple[str, str] | None:
        shown = json.dumps(gpus)[:60]
        if not isinstance(gpus, list):
            return "gpus", f"{where}: gpus is {_kind(gpus)} ({shown}); expected an array of GPU names"
        for number, gpu in enumerate(gpus, 1):
            if not isinstance(gpu, str):
                return "gpus", (f"{where}: GPU {number} of gpus {shown} is {_kind(gpu)}; expected a GPU name "
                                "(a string such as \"gpu0\")")
        return None

    for index, job in enumerate(data, 1):
        where = f"job number {index} of the array"
        if isinstance(job, dict) and isinstance(job.get("jobid"), str):
            where = f"job {job['jobid']}"
        found = object_problem(where, job, None) or scalar_problem(where, job, JOB_TEXT_KEYS)
        if found:
            return found
        attempts = job.get("attempts")
        if attempts is None:
            continue
        if not isinstance(attempts, list):
            return "attempts", f"{where}: attempts is {_kind(attempts)}; expected an array of attempts"
        for number, attempt in enumerate(attempts, 1):
            at = f"{where}, attempt {number}"
            found = object_problem(at, attempt, "attempts") or scalar_problem(at, attempt, ATTEMPT_TIME_KEYS)
            if found:
                return found
            detail = attempt.get("detail")
            if detail is None:
                continue
            if not isinstance(detail, list):
                return "detail", f"{at}: detail is {_kind(detail)}; expected an array of {{ip, gpus}} objects"
            for place, entry in enumerate(detail, 1):
                entry_at = f"{at}, detail entry {place}"
                found = object_problem(entry_at, entry, "detail") or scalar_problem(entry_at, entry, ("ip",))
                if found:
                    return found
                if entry.get("gpus") is not None:
                    found = gpus_problem(entry_at, entry["gpus"])
                    if found:
                        return found
    return None


def _first_row(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[Any, ...] | None:
    rows = con.execute(sql + " LIMIT 1").fetchall()
    return rows[0] if rows else None


def _check_job_ids(con: duckdb.DuckDBPyConnection, path: Path, display: str) -> None:
    """`InputError` naming the first job of the array (its number, user and submitted_time) without
    a jobid (missing, null or blank), or that is no object."""
    if _first_row(con, f"SELECT 1 FROM {_RAW_JOBS} WHERE jobid IS NULL OR trim(jobid) = ''") is None:
        return
    for number, job in enumerate(_parse_strictly(path, display), 1):
        if not isinstance(job, dict):
            raise InputError(display, f"job number {number} of the array is {_kind(job)}; expected a job object")
        jobid = job.get("jobid")
        if jobid is None or not jobid.strip():
            raise InputError(display, f"a job has no jobid: job {number} of the array (user {job.get('user')!r}, "
                                      f"submitted_time {job.get('submitted_time')!r}); expected every job to have "
                                      "its id as text", field="jobid")
    raise InputError(display, "a job has no jobid; expected every job to have its id as text", field="jobid")


def check_statuses(con: duckdb.DuckDBPyConnection, raw: str, display: str) -> None:
    """`InputError` naming the first job (by jobid) of the job-log table `raw` whose status is not
    one of `STATUSES`."""
    row = _first_row(con, f"SELECT jobid, status FROM {raw} "
                          f"WHERE status IS NULL OR status NOT IN ({_sql_list(STATUSES)}) ORDER BY jobid")
    if row is not None:
        raise InputError(display, f"job {row[0]}: status {row[1]!r}; expected one of {', '.join(STATUSES)}",
                         field="status")


def check_times(con: duckdb.DuckDBPyConnection, raw: str, display: str, expected: str,
                accepted: ValueRange | None = None) -> None:
    """`InputError` naming the first job (by jobid) of the job-log table `raw` whose submitted_time,
    or an attempt's start_time or end_time, is neither missing (null or `MISSING_TIME_MARKERS`) nor a
    time `WALL_CLOCK_FORMAT` reads (`expected` says what is), or lies outside `accepted`."""
    parsed = f"try_strptime(value, {sql_string(WALL_CLOCK_FORMAT)})"
    outside = accepted.outside_sql(parsed) if accepted is not None else "false"
    unnested = f"(SELECT jobid, unnest(attempts) AS a, generate_subscripts(attempts, 1) AS attempt FROM {raw})"
    sources = {"submitted_time": f"SELECT jobid, CAST(NULL AS BIGINT) AS attempt, submitted_time AS value FROM {raw}",
               **{key: f"SELECT jobid, attempt, a.{key} AS value FROM {unnested}" for key in ATTEMPT_TIME_KEYS}}
    for key, values in sources.items():
        row = _first_row(con, f"SELECT jobid, attempt, value, {parsed} IS NOT NULL AS readable FROM ({values}) "
                              f"WHERE NOT {missing_time_sql('value')} AND ({parsed} IS NULL OR {outside}) "
                              "ORDER BY jobid, attempt")
        if row is None:
            continue
        jobid, attempt, value, readable = row
        where = f"job {jobid}" if attempt is None else f"job {jobid}, attempt {attempt}"
        problem = (f" is outside the accepted range {accepted.describe()}" if readable and accepted is not None
                   else f"; expected {expected}")
        raise InputError(display, f"{where}: {key} {value!r}{problem}", field=key)


def _check_attempt_order(con: duckdb.DuckDBPyConnection, job_log_parquet: Path, display: str) -> None:
    """`InputError` naming the first attempt (by jobid) that ends before it starts."""
    source = f"read_parquet({sql_string(str(job_log_parquet))})"
    row = _first_row(con, f"SELECT jobid, attempt, CAST(start_local AS VARCHAR), CAST(end_local AS VARCHAR) "
                          f"FROM ({attempts_sql(source)}) WHERE end_time < start_time ORDER BY jobid, attempt")
    if row is not None:
        raise InputError(display, f"job {row[0]}, attempt {row[1]}: end_time {row[3]} is before start_time "
                         f"{row[2]}; expected an attempt to end after it starts", field="end_time")


# -- loading the CSV files ---------------------------------------------------------------------


def check_util_header(path: Path, display: str, expected: Sequence[str]) -> None:
    """`InputError` unless the header names `expected` (a trailing comma is tolerated)."""
    found = read_header(path, display)
    if len(found) == len(expected) + 1 and found[-1] == "":
        found = found[:-1]
    if found != list(expected):
        raise InputError(display, f"header is {','.join(found)!r}; expected {','.join(expected)!r}", line=1)


RowProblem = Callable[[list[str]], "tuple[str, str] | None"]


def first_bad_row(path: Path, display: str, columns: Sequence[str], row_problem: RowProblem,
                  count_field_problems: bool) -> InputError | None:
    """Error path only: scan the CSV at `path` line by line for the first row that `row_problem`
    finds fault with, or (with `count_field_problems`) that has the wrong number of fields."""
    with open(path, encoding="utf-8", errors="replace", newline="") as handle:
        for line_number, line in enumerate(handle, 1):
            if line_number == 1:
                continue
            text = line.rstrip("\r\n")
            if not text:
                continue
            fields = text.split(",")
            if len(fields) != len(columns):
                if count_field_problems:
                    return InputError(display, f"found {len(fields)} fields; expected {len(columns)} "
                                      f"({','.join(columns)})", line=line_number)
                continue
            found = row_problem(fields)
            if found is not None:
                return InputError(display, found[1], line=line_number, field=found[0])
    return None


def time_problem(value: str) -> str | None:
    """Why a utilisation time like `2017-10-03 00:08:00 PDT` cannot be read (None if it can)."""
    match = _TIME_WITH_ZONE.fullmatch(value)
    if match is None:
        return f"cannot read time {value!r}; expected {_EXPECTED_TIME}"
    if match.group(2) not in UTC_OFFSET_HOURS:
        return f"time {value!r} has the zone suffix {match.group(2)!r}; expected PDT or PST"
    try:
        datetime.strptime(match.group(1), WALL_CLOCK_FORMAT)
    except ValueError:
        return f"cannot read time {value!r}; expected {_EXPECTED_TIME}"
    return None


def _number_problem(value: str) -> str | None:
    if value in NULL_STRINGS:
        return None
    try:
        float(value)
    except ValueError:
        return f"cannot read {value!r}; expected {expected_value('DOUBLE', NULL_STRINGS)}"
    return None


def util_row_problem(fmt: UtilFormat) -> RowProblem:
    """The checker of one split data row of a utilisation file (what the SQL refuses)."""
    names = list(fmt.read_columns)

    def problem(fields: list[str]) -> tuple[str, str] | None:
        found = time_problem(fields[0])
        if found:
            return "time", found
        for name, value in zip(names[2:], fields[2:]):
            if name == "trailing_comma":
                if value:
                    return fmt.value_fields[-1], (f"unexpected value {value!r} after {fmt.value_fields[-1]}; "
                                                  "expected the row to end with a comma")
                continue
            found = _number_problem(value)
            if found:
                return name, found
        return None

    return problem


def machine_row_problem(strict: bool) -> RowProblem:
    """The checker of one split machine-list row. Unless `strict`, a GPU count DuckDB cannot read
    is not reported: that row was rejected (skipped) under the allowance of bad rows."""

    def problem(fields: list[str]) -> tuple[str, str] | None:
        try:
            int(fields[1])
        except ValueError:
            if strict:
                return MACHINE_LIST_HEADER[1], f"cannot read {fields[1]!r}; expected a whole number"
            return None
        if not re.fullmatch(GPU_MEM_PATTERN, fields[2]):
            return MACHINE_LIST_HEADER[2], f"cannot read {fields[2]!r}; expected a size like '24GB'"
        return None

    return problem


def _load_csv(con: duckdb.DuckDBPyConnection, local: LocalPart, out_path: Path, max_rejected_rows: int,
              header: Sequence[str], columns: dict[str, str], select: str, row_problem: RowProblem,
              ranges: dict[str, ValueRange], null_strings: tuple[str, ...] = ()) -> LoadResult:
    """Check the header, load with DuckDB; when a value stops the load, name its line."""
    path, display = local.local_path, local.part.display
    if path.stat().st_size > 0:
        check_util_header(path, display, header)
    try:
        return load_csv_to_parquet(con, path, display, columns, select, out_path, max_rejected_rows, header=True,
                                   null_strings=null_strings, ranges=ranges)
    except InputError as error:
        if error.line is not None or path.stat().st_size == 0:
            raise
        found = first_bad_row(path, display, list(columns), row_problem, max_rejected_rows == 0)
        if found is None:
            raise
        raise found from None


# -- the adapter -------------------------------------------------------------------------------


def validation_checks(present: set[str]) -> list[Check]:
    """Data-quality checks for the tables in `present` (tables referred to by name)."""
    checks: list[Check] = []
    if JOB_LOG in present:
        checks += [
            Check(JOB_LOG, "jobs with no attempt (kept in philly_jobs: no start, 0 GPUs)", "num_attempts = 0"),
            Check(JOB_LOG, "jobs without submitted_time", "submitted_time IS NULL"),
            Check(JOB_LOG, "jobs whose jobid appears more than once", query=(
                f"SELECT count(*) FROM {JOB_LOG} WHERE jobid IN "
                f"(SELECT jobid FROM {JOB_LOG} GROUP BY jobid HAVING count(*) > 1)")),
        ]
    if ATTEMPTS_TABLE in present:
        checks += [
            Check(ATTEMPTS_TABLE, "attempts without start_time", "start_time IS NULL"),
            Check(ATTEMPTS_TABLE, "attempts without end_time", "end_time IS NULL"),
            Check(ATTEMPTS_TABLE, "attempts without end_time that are not the job's last (logging gaps)",
                  "end_time IS NULL AND NOT is_last_attempt"),
            Check(ATTEMPTS_TABLE, "attempts listing no GPU", "num_gpus = 0"),
            Check(ATTEMPTS_TABLE, "attempts with a time in the repeated hour of a DST change (2017-11-05 01:xx)",
                  f"{repeated_hour_sql('start_time', 'start_local')} OR {repeated_hour_sql('end_time', 'end_local')}"),
            Check(ATTEMPTS_TABLE, "attempts starting before the previous attempt of the job ended", query=(
                f"SELECT count(*) FROM {ATTEMPTS_TABLE} AS a JOIN {ATTEMPTS_TABLE} AS p "
                "ON p.jobid = a.jobid AND p.attempt = a.attempt - 1 WHERE a.start_time < p.end_time")),
        ]
        if MACHINE_LIST in present:
            checks.append(Check(ATTEMPTS_TABLE, "attempts on a machine missing from the machine list", query=(
                f"SELECT count(*) FROM {ATTEMPTS_TABLE} AS a WHERE EXISTS (SELECT 1 FROM unnest(a.machines) AS u(ip) "
                f"WHERE u.ip NOT IN (SELECT machine_id FROM {MACHINE_LIST}))")))
    if JOBS_TABLE in present and ATTEMPTS_TABLE in present:
        checks += [
            Check(JOBS_TABLE, "jobs whose first attempt has no start (their start is a later attempt's)", query=(
                f"SELECT count(*) FROM {ATTEMPTS_TABLE} WHERE attempt = 1 AND start_time IS NULL")),
            Check(JOBS_TABLE, "jobs whose last attempt has no end (not logged: the job keeps its final status)",
                  query=f"SELECT count(*) FROM {ATTEMPTS_TABLE} WHERE running_at_trace_end"),
            Check(JOBS_TABLE, "jobs with negative queueing delay (first attempt before submission)", "queue_s < 0"),
            Check(JOBS_TABLE, "jobs with negative run time (last attempt ends before the first starts)", "run_s < 0"),
            Check(JOBS_TABLE, "jobs whose attempts differ in GPU count (num_gpus: the largest)", query=(
                f"SELECT count(*) FROM (SELECT jobid FROM {ATTEMPTS_TABLE} GROUP BY jobid "
                "HAVING min(num_gpus) <> max(num_gpus))")),
        ]
    for table in (GPU_UTIL, CPU_UTIL, MEM_UTIL):
        if table not in present:
            continue
        checks += [Check(table, name, query=f"SELECT coalesce(sum({column}), 0) FROM {UTIL_BY_MACHINE[table]}")
                   for name, column, _ in _UTIL_ROW_CONDITIONS[table]]
        if table == GPU_UTIL:
            # not in the reduction: reading the eight GPU columns costs four times the whole reduction,
            # while their Parquet statistics answer "none above 100" without reading them
            checks.append(Check(GPU_UTIL, "rows with a GPU above 100 %", query=(
                f"SELECT count(*) FROM {GPU_UTIL} WHERE " + " OR ".join(f"{g} > 100" for g in GPU_FIELDS)),
                screen="SELECT " + " + ".join(f"(SELECT count(*) FROM {GPU_UTIL} WHERE {g} > 100)"
                                              for g in GPU_FIELDS)))
    if MACHINE_LIST in present:
        checks.append(Check(MACHINE_LIST, "machines listed more than once", query=(
            f"SELECT count(*) FROM {MACHINE_LIST} WHERE machine_id IN "
            f"(SELECT machine_id FROM {MACHINE_LIST} GROUP BY machine_id HAVING count(*) > 1)")))
        if GPU_UTIL in present:
            checks.append(Check(GPU_UTIL, "rows where fewer GPUs report a number than the machine list gives "
                                "(some NA, i.e. offline)", query=(
                                    f"SELECT coalesce(sum(u.row_count), 0) FROM {GPU_BY_MACHINE} AS u "
                                    f"JOIN {MACHINE_LIST} AS m USING (machine_id) "
                                    "WHERE u.gpus_reporting < m.num_gpus")))
        for table in (GPU_UTIL, CPU_UTIL, MEM_UTIL):
            if table in present:
                checks.append(Check(table, "rows for machines not in the machine list", query=(
                    f"SELECT coalesce(sum(u.row_count), 0) FROM {UTIL_BY_MACHINE[table]} AS u WHERE NOT EXISTS "
                    f"(SELECT 1 FROM {MACHINE_LIST} AS m WHERE m.machine_id = u.machine_id)")))
    return checks


#: The utilisation logs reduced per machine for the validation (`validation_tables`): every check
#: and figure of a log reads its reduction, so the multi-GB log is scanned once. Rows: `machine_id`
#: (NULL kept as a group of its own), for the GPU log also `gpus_reporting`, then `row_count` and
#: the count of each row check's rows (`_UTIL_ROW_CONDITIONS`).
GPU_BY_MACHINE = "philly_validation_gpu_util_by_machine"
UTIL_BY_MACHINE: dict[str, str] = {GPU_UTIL: GPU_BY_MACHINE, CPU_UTIL: "philly_validation_cpu_util_by_machine",
                                   MEM_UTIL: "philly_validation_mem_util_by_machine"}

#: Per utilisation log: (check name, the column of its reduction counting the rows it finds, the
#: condition on a row of the log).
_UTIL_ROW_CONDITIONS: dict[str, tuple[tuple[str, str, str], ...]] = {
    GPU_UTIL: (("rows where no GPU reports a number (all NA or empty)", "no_gpu_rows", "gpus_reporting = 0"),),
    CPU_UTIL: (("rows with cpu_util NA (offline)", "offline_rows", "cpu_util IS NULL"),
               ("rows with cpu_util above 100 %", "over_100_rows", "cpu_util > 100")),
    MEM_UTIL: (("rows with mem_total or mem_free NA (offline)", "offline_rows",
                "mem_total IS NULL OR mem_free IS NULL"),
               ("rows with mem_free above mem_total", "free_over_total_rows", "mem_free > mem_total")),
}


def validation_tables(present: set[str]) -> dict[str, str]:
    """The per-machine reductions (`UTIL_BY_MACHINE`) of the utilisation logs in `present`."""
    tables = {}
    for table, conditions in _UTIL_ROW_CONDITIONS.items():
        if table in present:
            keys = "machine_id, gpus_reporting" if table == GPU_UTIL else "machine_id"
            counts = ", ".join(f"count(*) FILTER (WHERE {condition}) AS {column}"
                               for _, column, condition in conditions)
            tables[UTIL_BY_MACHINE[table]] = (f"SELECT {keys}, count(*) AS row_count, {counts} "
                                              f"FROM {table} GROUP BY {keys}")
    return tables


def gpus_seen_sql(gpu_util: str = GPU_UTIL) -> str:
    """Per machine (`machine_id`), the GPUs seen in the utilisation log (`gpus`): the most GPU fields
    with a number in any one of its rows (a GPU offline, `NA`, in every row is not seen). Read from
    `gpu_util`: the stored log, or its per-machine reduction `GPU_BY_MACHINE` (the same rows)."""
    return f"(SELECT machine_id, max(gpus_reporting) AS gpus FROM {gpu_util} GROUP BY machine_id)"


#: `gpus_seen_sql` of the stored GPU log (the canonical `gpu_capacity` view reads it).
GPUS_SEEN_SQL = gpus_seen_sql()


def figures(present: set[str]) -> list[Figure]:
    """GPU capacity as the machine list and the utilisation log see it, and their difference."""
    found: list[Figure] = []
    seen = gpus_seen_sql(GPU_BY_MACHINE)  # the validation reads the log's reduction
    if MACHINE_LIST in present:
        found += [
            Figure(MACHINE_LIST, "GPUs in the machine list (sum of num_gpus)",
                   f"SELECT sum(num_gpus) FROM {MACHINE_LIST}", "GPUs"),
            Figure(MACHINE_LIST, "machines in the machine list", f"SELECT count(*) FROM {MACHINE_LIST}", "machines"),
        ]
    if GPU_UTIL in present:
        found += [
            Figure(GPU_UTIL, "GPUs seen in the utilisation log (per machine, most GPUs with a number in one row)",
                   f"SELECT sum(gpus) FROM {seen}", "GPUs"),
            Figure(GPU_UTIL, "machines in the utilisation log",
                   f"SELECT count(DISTINCT machine_id) FROM {GPU_BY_MACHINE}", "machines"),
        ]
    if MACHINE_LIST in present and GPU_UTIL in present:
        found += [
            Figure(GPU_UTIL, "GPUs seen in the utilisation log minus GPUs in the machine list",
                   f"SELECT (SELECT sum(gpus) FROM {seen}) - (SELECT sum(num_gpus) FROM {MACHINE_LIST})",
                   "GPUs"),
            Figure(GPU_UTIL, "machines with more GPUs in the utilisation log than in the machine list",
                   f"SELECT count(*) FROM {seen} AS s JOIN {MACHINE_LIST} AS m USING (machine_id) "
                   "WHERE s.gpus > m.num_gpus", "machines"),
            Figure(GPU_UTIL, "machines in the utilisation log missing from the machine list",
                   f"SELECT count(*) FROM {seen} AS s ANTI JOIN {MACHINE_LIST} AS m USING (machine_id)",
                   "machines"),
        ]
    if JOB_LOG in present:
        found += [
            Figure(JOB_LOG, "virtual clusters", f"SELECT count(DISTINCT vc) FROM {JOB_LOG}", "VCs"),
            Figure(JOB_LOG, "users", f"SELECT count(DISTINCT \"user\") FROM {JOB_LOG}", "users"),
        ]
    return found


class PhillyAdapter(TraceAdapter):
    """The five release files, loose or in `trace-data.tar.gz`; see the module docstring."""

    def locate(self, source: Path, tables: Sequence[str]) -> dict[str, list[SourcePart]]:
        archive_sha256 = self.info.files[0].sha256 if self.info else None
        found: dict[str, list[SourcePart]] = {}
        missing = []
        for table in tables:
            member = FILE_OF_TABLE[table]
            path = source if source.is_file() else find_file(source, [member, ARCHIVE_NAME])
            if path is None:
                missing.append(f"{member} or {ARCHIVE_NAME}")
            elif path.name == member and not source.is_file():
                found[table] = [SourcePart(path)]
            else:
                found[table] = [SourcePart(path, member, official_sha256=archive_sha256)]
        if missing:
            raise missing_error(source, missing)
        return found

    def load_table(self, con: duckdb.DuckDBPyConnection, table: str, parts: list[LocalPart],
                   out_path: Path, max_rejected_rows: int) -> LoadResult:
        (local,) = parts
        if table == JOB_LOG:
            return load_job_log(con, local, out_path)
        if table == MACHINE_LIST:
            return _load_csv(con, local, out_path, max_rejected_rows, MACHINE_LIST_HEADER, MACHINE_LIST_COLUMNS,
                             machine_list_select_sql(), machine_row_problem(max_rejected_rows == 0), RANGES[table])
        fmt = UTIL_FORMATS[table]
        return _load_csv(con, local, out_path, max_rejected_rows, fmt.header, fmt.read_columns,
                         util_select_sql(fmt), util_row_problem(fmt), RANGES[table], NULL_STRINGS)

    def value_ranges(self, table: str) -> dict[str, ValueRange]:
        return RANGES.get(table, {})

    def derived_tables(self, folder: Path, present: set[str]) -> dict[str, str]:
        if JOB_LOG not in present:
            return {}
        return {ATTEMPTS_TABLE: attempts_sql(parquet_sql(folder, JOB_LOG)), self.jobs_table: jobs_sql(folder)}

    def validation_tables(self, present: set[str]) -> dict[str, str]:
        return validation_tables(present)

    def validation_checks(self, present: set[str]) -> list[Check]:
        return validation_checks(present)

    def figures(self, present: set[str]) -> list[Figure]:
        return figures(present)


ADAPTER = PhillyAdapter.for_trace(PHILLY)
