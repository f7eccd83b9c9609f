"""Adapter for the SenseTime Helios trace (SC'21): `data.zip` -> typed Parquet -> canonical jobs.

Release layout: one archive `data.zip` holding `data/<Cluster>/cluster_log.csv` (one row per Slurm
job) and `data/<Cluster>/cluster_gpu_number.csv` (GPUs of every virtual cluster (VC), per day) for
the clusters Earth, Saturn, Uranus and Venus. `--from` may be that zip, a folder holding it, or the
unpacked folders (`data/<Cluster>/...` or `<Cluster>/...`). Each table takes the clusters it finds:
a missing cluster is reported in the validation figures (an empty value), not as an error.

Format of `cluster_log.csv` (declared in `LOG_COLUMNS`): a header line
`job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue`;
- submit/start/end times like `2020-06-09 18:41:01`: the wall clock of the cluster
  (Asia/Shanghai, UTC+8, no daylight saving since 1991) without a zone. They are stored as UTC
  instants (TIMESTAMPTZ). An empty time is missing and stored as NULL: an empty start_time means
  the job never ran, an empty end_time that it had not ended.
- `duration` (= end - start) and `queue` (= start - submit): seconds, stored as given (DOUBLE, so
  that `12` and `12.0` both read); empty means missing.
- `gpu_num`, `cpu_num`, `node_num`: GPUs, CPU cores and nodes of the whole job; CPU-only jobs
  have gpu_num 0.
- `state`: one of `STATES` (Slurm's words); any other word rejects the row.

Format of `cluster_gpu_number.csv`: a header `date,<VC>,...,<VC>,total` whose VC columns differ
per cluster, then one row per day (`2020-04-01`) with the GPUs of each VC and their `total`.
It is stored long (`helios_vc_capacity`: one row per cluster, day and VC) with the day's `total`
repeated on each row, so that the report can count days whose total is not the sum of the VCs.

Quirks:
- Slurm writes a job cancelled while still pending with start_time = end_time (the cancel
  time); such a job reads as started with a run time of 0 s. The report counts these.
- Times must read exactly `YYYY-MM-DD HH:MM:SS` (`TIME_FORMAT`); any other form (a date alone,
  a zone offset the official files never carry) is a rejected row with its line and field.

How a job becomes a canonical row (table `helios_jobs`):
- cluster = the cluster folder name; job_id, user, vc as given;
- submit_time, start_time as given (UTC); end_time as given, but NULL when the job never started
  (the canonical end is NULL then; the raw table keeps the cancel time);
- queue_s = start_time - submit_time (`queue_delay.submit_to_first_start`), run_s = end_time -
  start_time (`runtime.first_start_to_last_end`), both computed from the times, not taken from
  `queue` and `duration` (the report counts rows where they disagree);
- num_gpus = gpu_num (CPU-only jobs kept, with 0), num_cpus = cpu_num, num_instances = node_num,
  num_tasks = 1; mem_gb and gpu_type NULL (not in the trace); fractional_gpu false;
- state: COMPLETED -> completed, CANCELLED -> cancelled, FAILED, TIMEOUT and NODE_FAIL -> failed,
  SUSPENDED -> pending (it had not finished and was not running when the trace ended).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb

from ddlx.datasets.adapter import (
    CsvFormat,
    LocalPart,
    SourcePart,
    TraceAdapter,
    is_input_file,
    load_csv_parts,
    missing_error,
)
from ddlx.datasets.archives import archive_member_names, member_matches
from ddlx.datasets.canonical import state_case_sql
from ddlx.datasets.csvload import SOURCE, LoadResult, read_header
from ddlx.datasets.ranges import EVERY_OTHER_FIELD, REAL_TIME_WINDOW, TEN_YEARS_S, ValueRange
from ddlx.datasets.sqltext import quote_identifier, sql_string
from ddlx.datasets.timezones import utc_from_zone_sql
from ddlx.datasets.validation import Check, Figure, duplicate_key_check
from ddlx.errors import InputError
from ddlx.traces.helios.release import RELEASE as HELIOS

TRACE = "helios"

#: IANA zone of the wall-clock times in cluster_log.csv.
SOURCE_TZ = HELIOS.source_tz

#: Clusters of the release, in the order of its folder tree.
CLUSTERS: tuple[str, ...] = ("Earth", "Saturn", "Uranus", "Venus")

#: The release archive, and the folder inside it that holds the cluster folders.
ARCHIVE_NAME = HELIOS.files[0].filename
DATA_FOLDER = "data"

LOG_TABLE = "helios_cluster_log"
CAPACITY_TABLE = "helios_vc_capacity"

#: Stored table -> the per-cluster file holding its rows.
TABLE_FILES: dict[str, str] = {
    LOG_TABLE: "cluster_log.csv",
    CAPACITY_TABLE: "cluster_gpu_number.csv",
}

#: Job states of cluster_log.csv (Slurm's words); SUSPENDED occurs once, in Uranus.
STATES: tuple[str, ...] = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "SUSPENDED")

#: A job that started and was suspended when the trace ended has not finished: it is `running`
#: (still in the system at the trace end), with no end and no run time in the canonical jobs
#: whatever end the log gives (the raw table keeps it); one that never started is `pending`.
_UNFINISHED = "state = 'SUSPENDED'"

#: Raw state -> canonical state.
STATE_MAP: dict[str, str] = {
    "COMPLETED": "completed",
    "CANCELLED": "cancelled",
    "FAILED": "failed",
    "TIMEOUT": "failed",
    "NODE_FAIL": "failed",
    "SUSPENDED": "running",
}

#: Wall-clock format of submit_time, start_time and end_time as the release writes them (no zone).
#: Read strictly: a date alone, a missing second or a zone offset is a rejected row.
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
TIME_COLUMNS: tuple[str, ...] = ("submit_time", "start_time", "end_time")

#: Columns of cluster_log.csv in file order (also its header) -> the DuckDB type read.
LOG_COLUMNS: dict[str, str] = {
    "job_id": "VARCHAR",
    "user": "VARCHAR",
    "vc": "VARCHAR",
    "gpu_num": "BIGINT",       # GPUs of the whole job; 0 for CPU-only jobs
    "cpu_num": "BIGINT",       # CPU cores of the whole job
    "node_num": "BIGINT",      # nodes of the whole job
    "state": "ENUM(" + ", ".join(sql_string(s) for s in STATES) + ")",
    "submit_time": "TIMESTAMP",  # Asia/Shanghai wall clock; stored as UTC TIMESTAMPTZ
    "start_time": "TIMESTAMP",   # empty: never started
    "end_time": "TIMESTAMP",     # empty: not ended
    "duration": "DOUBLE",      # seconds, end - start, as given
    "queue": "DOUBLE",         # seconds, start - submit, as given
}

#: cluster_gpu_number.csv: the first column (a day), the last (the sum of the VCs); the VC
#: columns between them are named per cluster and hold GPUs (whole numbers).
CAPACITY_DATE_COLUMN = "date"
CAPACITY_TOTAL_COLUMN = "total"
CAPACITY_DATE_TYPE = "DATE"
CAPACITY_GPUS_TYPE = "BIGINT"

_WALL_CLOCK = ValueRange(*REAL_TIME_WINDOW)
#: Seconds as given; negative only as the counted findings "start before submission" and
#: "negative duration" make them.
_SECONDS = ValueRange(-TEN_YEARS_S, TEN_YEARS_S, "seconds")
#: Accepted range of every numeric and time column, per stored table; values outside are refused.
RANGES: dict[str, dict[str, ValueRange]] = {
    LOG_TABLE: {
        "gpu_num": ValueRange(0, 100_000, "GPUs"),
        "cpu_num": ValueRange(0, 10_000_000, "CPU cores"),
        "node_num": ValueRange(0, 100_000, "nodes"),
        **{name: _WALL_CLOCK for name in TIME_COLUMNS},
        "duration": _SECONDS,
        "queue": _SECONDS,
    },
    CAPACITY_TABLE: {
        "date": ValueRange(*REAL_TIME_WINDOW, field=CAPACITY_DATE_COLUMN),
        "total": ValueRange(0, 1_000_000, "GPUs", field=CAPACITY_TOTAL_COLUMN),
        "gpus": ValueRange(0, 1_000_000, "GPUs", field=EVERY_OTHER_FIELD),
    },
}


# -- reading ------------------------------------------------------------------------------------


def log_select_sql(part: SourcePart) -> str:
    """SELECT turning the raw cluster_log rows (FROM `SOURCE`) into `helios_cluster_log` rows."""
    columns = []
    for name in LOG_COLUMNS:
        if name in TIME_COLUMNS:
            column = quote_identifier(name)
            columns.append(f"{utc_from_zone_sql(column, SOURCE_TZ)} AS {column}")
        elif name == "state":
            columns.append('CAST("state" AS VARCHAR) AS "state"')
        else:
            columns.append(quote_identifier(name))
    return f"SELECT {part.labels_sql()}{', '.join(columns)} FROM {SOURCE}"


def log_format(part: SourcePart) -> CsvFormat:
    """How a cluster_log.csv is read: the official header is checked, the state set is closed."""
    return CsvFormat(columns=dict(LOG_COLUMNS), select=log_select_sql(part), header=True,
                     timestamp_format=TIME_FORMAT)


def capacity_vcs(header: list[str], display: str) -> list[str]:
    """The VC columns named by a cluster_gpu_number.csv `header`; `InputError` unless it reads
    `date,<VC>,...,total` with distinct, non-empty VC names."""
    expected = f"{CAPACITY_DATE_COLUMN},<VC columns>,{CAPACITY_TOTAL_COLUMN}"
    vcs = header[1:-1]
    problem = None
    if len(header) < 3 or header[0] != CAPACITY_DATE_COLUMN or header[-1] != CAPACITY_TOTAL_COLUMN:
        problem = "does not start with date, end with total and name VC columns between"
    elif any(not vc for vc in vcs):
        problem = "has an empty column name"
    elif len(set(vcs)) != len(vcs) or {CAPACITY_DATE_COLUMN, CAPACITY_TOTAL_COLUMN} & set(vcs):
        problem = "names a column twice"
    if problem:
        raise InputError(display, f"header {','.join(header)!r} {problem}; expected {expected!r}", line=1)
    return vcs


def capacity_format(local: LocalPart) -> CsvFormat:
    """How one cluster_gpu_number.csv is read: its own header gives its VC columns (BIGINT GPUs);
    the rows are unpivoted to (cluster, date, vc, gpus, total)."""
    display = local.part.display
    if local.local_path.stat().st_size == 0:
        raise InputError(display, "file is empty; expected a header line date,<VC columns>,total "
                                  "and one row per day")
    header = read_header(local.local_path, display)
    vcs = capacity_vcs(header, display)
    columns = {CAPACITY_DATE_COLUMN: CAPACITY_DATE_TYPE}
    columns.update({vc: CAPACITY_GPUS_TYPE for vc in vcs})
    columns[CAPACITY_TOTAL_COLUMN] = CAPACITY_GPUS_TYPE
    vc_list = ", ".join(quote_identifier(vc) for vc in vcs)
    select = (
        f"SELECT {local.part.labels_sql()}{quote_identifier(CAPACITY_DATE_COLUMN)} AS \"date\", vc, gpus, "
        f"{quote_identifier(CAPACITY_TOTAL_COLUMN)} AS \"total\" "
        f"FROM {SOURCE} UNPIVOT INCLUDE NULLS (gpus FOR vc IN ({vc_list}))"
    )
    return CsvFormat(columns=columns, select=select, header=True, expected_header=tuple(header))


# -- canonical jobs -----------------------------------------------------------------------------


def jobs_sql() -> str:
    """The canonical `helios_jobs` rows, from the stored `helios_cluster_log`."""
    return f"""
SELECT
    '{TRACE}' AS trace,
    cluster,
    job_id,
    "user",
    vc,
    NULL::VARCHAR AS job_group,
    NULL::VARCHAR AS job_name,
    NULL::VARCHAR AS workload,
    submit_time,
    start_time,
    CASE WHEN start_time IS NULL OR {_UNFINISHED} THEN NULL ELSE end_time END AS end_time,
    {sql_string(SOURCE_TZ)} AS source_tz,
    epoch(start_time) - epoch(submit_time) AS queue_s,
    CASE WHEN {_UNFINISHED} THEN NULL ELSE epoch(end_time) - epoch(start_time) END AS run_s,
    CAST(gpu_num AS DOUBLE) AS num_gpus,
    CAST(cpu_num AS DOUBLE) AS num_cpus,
    NULL::DOUBLE AS mem_gb,
    node_num AS num_instances,
    CAST(1 AS BIGINT) AS num_tasks,
    NULL::VARCHAR AS gpu_type,
    false AS fractional_gpu,
    CASE WHEN state = 'SUSPENDED' AND start_time IS NULL THEN 'pending'
         ELSE {state_case_sql("state", STATE_MAP)} END AS state,
    state AS raw_state
FROM {LOG_TABLE}
"""


# -- validation ---------------------------------------------------------------------------------


def validation_checks(present: set[str], jobs_table: str) -> list[Check]:
    """Data-quality checks for the stored tables in `present` (tables referred to by name)."""
    checks: list[Check] = []
    if LOG_TABLE in present:
        checks += [
            Check(LOG_TABLE, "missing submit_time (empty)", "submit_time IS NULL"),
            Check(LOG_TABLE, "never started (empty start_time)", "start_time IS NULL"),
            Check(LOG_TABLE, "missing end_time (empty)", "end_time IS NULL"),
            Check(LOG_TABLE, "start before submission", "start_time < submit_time"),
            Check(LOG_TABLE, "negative duration (end before start)", "end_time < start_time"),
            Check(LOG_TABLE, "duration differs from end_time - start_time (both times given)",
                  "start_time IS NOT NULL AND end_time IS NOT NULL "
                  "AND duration IS DISTINCT FROM epoch(end_time) - epoch(start_time)"),
            Check(LOG_TABLE, "queue differs from start_time - submit_time (both times given)",
                  "submit_time IS NOT NULL AND start_time IS NOT NULL "
                  "AND queue IS DISTINCT FROM epoch(start_time) - epoch(submit_time)"),
            Check(LOG_TABLE, "cancelled with start = end (likely cancelled while pending)",
                  "state = 'CANCELLED' AND start_time = end_time"),
            Check(LOG_TABLE, "CPU-only jobs (gpu_num 0)", "gpu_num = 0"),
            Check(LOG_TABLE, "suspended at trace end (state SUSPENDED)", "state = 'SUSPENDED'"),
            duplicate_key_check(LOG_TABLE, ("cluster", "job_id"), "duplicate job_id within a cluster"),
        ]
    if CAPACITY_TABLE in present:
        checks += [
            Check(CAPACITY_TABLE, "empty GPU count of a VC", "gpus IS NULL"),
            Check(CAPACITY_TABLE, "negative GPU count of a VC", "gpus < 0"),
            Check(CAPACITY_TABLE, "days (cluster, date) whose total differs from the sum of the VCs", query=(
                "SELECT count(*) FROM (SELECT any_value(total) AS total, sum(gpus) AS vc_sum "
                f"FROM {CAPACITY_TABLE} GROUP BY cluster, date) WHERE total IS DISTINCT FROM vc_sum")),
            Check(CAPACITY_TABLE, "duplicate (cluster, date, vc)", query=(
                f"SELECT count(*) - count(DISTINCT (cluster, date, vc)) FROM {CAPACITY_TABLE}")),
            Check(CAPACITY_TABLE, "days missing between a cluster's first and last day", query=(
                "SELECT coalesce(sum(date_diff('day', first_day, last_day) + 1 - days), 0) FROM ("
                "SELECT min(date) AS first_day, max(date) AS last_day, count(DISTINCT date) AS days "
                f"FROM {CAPACITY_TABLE} GROUP BY cluster)")),
        ]
    # The canonical jobs never started, with negative queueing delay and with negative run time
    # are, by `jobs_sql`, exactly the log's rows "never started", "start before submission" and
    # "negative duration"; they are not counted a second time.
    if jobs_table in present:
        if CAPACITY_TABLE in present:
            checks.append(Check(
                jobs_table, "jobs in a VC absent from their cluster's gpu_number file (clusters with one)",
                query=(
                    f"SELECT count(*) FROM {jobs_table} AS j "
                    f"WHERE j.cluster IN (SELECT DISTINCT cluster FROM {CAPACITY_TABLE}) "
                    f"AND NOT EXISTS (SELECT 1 FROM {CAPACITY_TABLE} AS c "
                    "WHERE c.cluster = j.cluster AND c.vc = j.vc)"),
            ))
    return checks


def _if_cluster_present(table: str, cluster: str, value: str) -> str:
    """A figure query giving `value` over `cluster`'s rows of `table`, NULL when it has none."""
    return (f"SELECT CASE WHEN count(*) > 0 THEN {value} END FROM {table} "
            f"WHERE cluster = {sql_string(cluster)}")


def figures(present: set[str]) -> list[Figure]:
    """Per cluster: jobs, GPU jobs, the largest and mean daily `total` and the days covered
    (empty when the cluster is not in the input)."""
    result: list[Figure] = []
    if LOG_TABLE in present:
        result.append(Figure(LOG_TABLE, "clusters in the input", f"SELECT count(DISTINCT cluster) FROM {LOG_TABLE}",
                             "clusters"))
        for cluster in CLUSTERS:
            result += [
                Figure(LOG_TABLE, f"{cluster}: jobs", _if_cluster_present(LOG_TABLE, cluster, "count(*)"), "jobs"),
                Figure(LOG_TABLE, f"{cluster}: GPU jobs (gpu_num > 0)",
                       _if_cluster_present(LOG_TABLE, cluster, "count(*) FILTER (WHERE gpu_num > 0)"), "jobs"),
            ]
    if CAPACITY_TABLE in present:
        result.append(Figure(CAPACITY_TABLE, "clusters in the input",
                             f"SELECT count(DISTINCT cluster) FROM {CAPACITY_TABLE}", "clusters"))
        for cluster in CLUSTERS:
            result += [
                Figure(CAPACITY_TABLE, f"{cluster}: largest daily total",
                       _if_cluster_present(CAPACITY_TABLE, cluster, "max(total)"), "GPUs"),
                # Each day has one row per VC of the cluster, so the mean over rows is the mean over days.
                Figure(CAPACITY_TABLE, f"{cluster}: mean daily total",
                       _if_cluster_present(CAPACITY_TABLE, cluster, "avg(total)"), "GPUs"),
                Figure(CAPACITY_TABLE, f"{cluster}: days covered",
                       _if_cluster_present(CAPACITY_TABLE, cluster, "count(DISTINCT date)"), "days"),
            ]
    return result


# -- locating inputs ----------------------------------------------------------------------------


def _is_cluster_file(member: str) -> bool:
    """Whether an archive member is one of the release's per-cluster files (by its file name)."""
    return member.replace("\\", "/").rsplit("/", 1)[-1] in TABLE_FILES.values()


def _folder_parts(source: Path, file_name: str) -> list[SourcePart]:
    """The unpacked `<Cluster>/<file_name>` (directly under `source` or under `source/data`)."""
    parts = []
    for cluster in CLUSTERS:
        for folder in (source / cluster, source / DATA_FOLDER / cluster):
            if is_input_file(folder / file_name):
                parts.append(SourcePart(folder / file_name, labels=(("cluster", cluster),)))
                break
    return parts


def _zip_parts(archive: Path, members: list[str], file_name: str) -> list[SourcePart]:
    """The members `.../<Cluster>/<file_name>` of `archive` (the shortest name when several match)."""
    parts = []
    for cluster in CLUSTERS:
        matches = sorted((m for m in members if member_matches(m, f"{cluster}/{file_name}")),
                         key=lambda m: (len(m), m))
        if matches:
            parts.append(SourcePart(archive, matches[0], labels=(("cluster", cluster),)))
    return parts


def _expected_files(*file_names: str) -> str:
    """`data/<Cluster>/<file>` (or ...) `for at least one of Earth, ...`: what a table needs."""
    names = " or ".join(f"{DATA_FOLDER}/<Cluster>/{name}" for name in file_names)
    return f"{names} for at least one of {', '.join(CLUSTERS)}"


class HeliosAdapter(TraceAdapter):
    """Per-cluster CSVs in `data.zip` (or unpacked); one part per cluster, labelled `cluster`.

    For each table the unpacked cluster folders are used when they hold its file for at least
    one cluster, else the members of `data.zip`.
    """

    def locate(self, source: Path, tables: Sequence[str]) -> dict[str, list[SourcePart]]:
        if source.is_file() and not source.name.endswith(".zip"):
            raise InputError(str(source), f"not a zip archive; expected {ARCHIVE_NAME} (the Helios release), "
                                          "a folder holding it, or its unpacked cluster folders")
        archive = source if source.is_file() else source / ARCHIVE_NAME
        members: list[str] | None = None
        found: dict[str, list[SourcePart]] = {}
        missing = []
        for table in tables:
            file_name = TABLE_FILES[table]
            parts = _folder_parts(source, file_name) if source.is_dir() else []
            if not parts and archive.is_file():
                if members is None:
                    members = archive_member_names(archive, wanted=_is_cluster_file)
                parts = _zip_parts(archive, members, file_name)
            if parts:
                found[table] = parts
            else:
                missing.append(_expected_files(file_name))
        if not found and members is not None and not any(
                _zip_parts(archive, members, file_name) for file_name in TABLE_FILES.values()):
            raise InputError(str(archive), "archive holds no cluster file; expected "
                             + _expected_files(*TABLE_FILES.values()))
        if missing:
            where = "" if source.is_file() else f" (unpacked, or in {ARCHIVE_NAME})"
            raise missing_error(source, [m + where for m in missing])
        return found

    def csv_format(self, table: str, part: SourcePart) -> CsvFormat:
        if table == LOG_TABLE:
            return log_format(part)
        raise ValueError(f"{table} has a per-file format; see capacity_format")

    def load_table(self, con: duckdb.DuckDBPyConnection, table: str, parts: list[LocalPart],
                   out_path: Path, max_rejected_rows: int) -> LoadResult:
        if table == CAPACITY_TABLE:
            formats = {local.part: capacity_format(local) for local in parts}
            return load_csv_parts(con, parts, out_path, max_rejected_rows, formats.__getitem__, RANGES[table])
        return super().load_table(con, table, parts, out_path, max_rejected_rows)

    def value_ranges(self, table: str) -> dict[str, ValueRange]:
        return RANGES[table]

    def derived_views(self, present: set[str]) -> dict[str, str]:
        if LOG_TABLE in present:
            return {self.jobs_table: jobs_sql()}
        return {}

    def validation_checks(self, present: set[str]) -> list[Check]:
        return validation_checks(present, self.jobs_table)

    def figures(self, present: set[str]) -> list[Figure]:
        return figures(present)


ADAPTER = HeliosAdapter.for_trace(HELIOS)
