"""The canonical job model: one row per job, the same columns for every trace.

Every adapter writes a `<trace>_jobs` table with exactly these columns; the catalog's `jobs` view
is their union. `docs/schema.md` documents the same list for users (a test keeps them in step).
Times are UTC instants (TIMESTAMPTZ); `source_tz` names the zone in which the trace's local
hour and weekday are read.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddlx.datasets.sqltext import quote_identifier


@dataclass(frozen=True)
class CanonicalColumn:
    name: str
    sql_type: str
    description: str


#: The canonical job states. Adapters map their raw states onto these and keep the raw one.
STATES: tuple[str, ...] = ("completed", "failed", "cancelled", "running", "pending")

JOB_COLUMNS: tuple[CanonicalColumn, ...] = (
    CanonicalColumn("trace", "VARCHAR", "registry name of the trace, e.g. `pai`"),
    CanonicalColumn("cluster", "VARCHAR", "cluster within the trace (PAI has one: `pai`)"),
    CanonicalColumn("job_id", "VARCHAR", "job identifier, unique within trace and cluster"),
    CanonicalColumn("user", "VARCHAR", "submitting user (hashed in public traces)"),
    CanonicalColumn("vc", "VARCHAR", "virtual cluster or queue; NULL where the trace has none"),
    CanonicalColumn("job_group", "VARCHAR", "recurring-job tag (PAI `group`); NULL where absent"),
    CanonicalColumn("job_name", "VARCHAR", "job name where the trace has one besides the id"),
    CanonicalColumn("workload", "VARCHAR", "workload label (PAI `workload`); NULL where absent"),
    CanonicalColumn("submit_time", "TIMESTAMPTZ", "submission instant (UTC)"),
    CanonicalColumn("start_time", "TIMESTAMPTZ",
                    "first instant any part of the job ran (UTC); NULL if it never started"),
    CanonicalColumn("end_time", "TIMESTAMPTZ", "end instant (UTC); NULL if still running or never started"),
    CanonicalColumn("source_tz", "VARCHAR",
                    "IANA time zone in which the trace's hour of day and weekday are read"),
    CanonicalColumn("queue_s", "DOUBLE",
                    "queueing delay, seconds, definition `queue_delay.submit_to_first_start`"),
    CanonicalColumn("run_s", "DOUBLE",
                    "run time, seconds, definition `runtime.first_start_to_last_end`"),
    CanonicalColumn("num_gpus", "DOUBLE", "GPUs requested by the whole job; fractions allowed"),
    CanonicalColumn("num_cpus", "DOUBLE", "CPU cores requested by the whole job"),
    CanonicalColumn("mem_gb", "DOUBLE", "main memory requested by the whole job, GB"),
    CanonicalColumn("num_instances", "BIGINT", "instances (PAI), pods or nodes the job asked for"),
    CanonicalColumn("num_tasks", "BIGINT", "tasks or roles of the job (PAI); 1 where the trace has none"),
    CanonicalColumn("gpu_type", "VARCHAR", "GPU model asked for or assigned; NULL when unknown or no GPU"),
    CanonicalColumn("fractional_gpu", "BOOLEAN",
                    "true when some instance asks for a part of a GPU (shares a GPU)"),
    CanonicalColumn("state", "VARCHAR", "canonical state: " + ", ".join(STATES)),
    CanonicalColumn("raw_state", "VARCHAR", "the state exactly as the trace wrote it"),
)

JOB_COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in JOB_COLUMNS)


def state_case_sql(column: str, mapping: dict[str, str]) -> str:
    """`CASE <column> WHEN '<raw>' THEN '<canonical>' ... END`: a trace's state mapping in SQL."""
    cases = " ".join(f"WHEN '{raw.replace(chr(39), chr(39) * 2)}' THEN '{state}'" for raw, state in mapping.items())
    return f"CASE {column} {cases} END"


def jobs_table_name(trace: str) -> str:
    """The stored table of a trace's canonical job rows: `<trace>_jobs`, `-` read as `_`."""
    return f"{trace.replace('-', '_')}_jobs"


def empty_jobs_sql() -> str:
    """A typed, empty SELECT with the canonical columns (for a catalog with no jobs yet)."""
    casts = ", ".join(f'CAST(NULL AS {c.sql_type}) AS {quote_identifier(c.name)}' for c in JOB_COLUMNS)
    return f"SELECT {casts} WHERE false"


def conform_jobs_sql(source: str) -> str:
    """SELECT the canonical columns, in canonical order and types, from `source` (a view name)."""
    casts = ", ".join(f'CAST({quote_identifier(c.name)} AS {c.sql_type}) AS {quote_identifier(c.name)}'
                      for c in JOB_COLUMNS)
    return f"SELECT {casts} FROM {source}"
