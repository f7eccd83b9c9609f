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


#: Thousandths of one unit: GPU requests and CPU requests are counted in thousandths of a GPU (milli-GPU)
#: and of a core (milli-core) wherever ddlx counts them in whole numbers (`gpu_milli`, `cpu_milli`).
MILLI = 1000

#: The canonical job states. Adapters map their raw states onto these and keep the raw one.
STATES: tuple[str, ...] = ("completed", "failed", "cancelled", "running", "pending")

JOB_COLUMNS: tuple[CanonicalColumn, ...] = (
    CanonicalColumn("trace", "VARCHAR",
                    "registry name of the trace (as `ddlx datasets list` gives it), or of the imported dataset"),
    CanonicalColumn("cluster", "VARCHAR", "cluster within the trace (a one-cluster trace names one)"),
    CanonicalColumn("job_id", "VARCHAR", "job identifier, unique within trace and cluster"),
    CanonicalColumn("user", "VARCHAR", "submitting user (hashed in public traces)"),
    CanonicalColumn("vc", "VARCHAR", "virtual cluster or queue; NULL where the trace has none"),
    CanonicalColumn("job_group", "VARCHAR", "recurring-job tag; NULL where absent"),
    CanonicalColumn("job_name", "VARCHAR", "job name where the trace has one besides the id"),
    CanonicalColumn("workload", "VARCHAR", "workload label; NULL where absent"),
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
    CanonicalColumn("num_instances", "BIGINT", "instances, pods or nodes the job asked for"),
    CanonicalColumn("num_tasks", "BIGINT", "tasks or roles of the job; 1 where the trace has none"),
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


def job_table_derivations(gpus: str, mapping: dict[str, str]) -> dict[str, str]:
    """How a trace whose job table has submit_time, start_time and end_time per job (and the job's
    GPUs in column `gpus`, its states mapped by `mapping`) derives the core definitions
    (`DERIVATIONS` of its folder's `views`)."""
    return {
        "utilization.allocated_gpus": "start_time to end_time",
        "queue_delay.submit_to_first_start": "submit_time to start_time",
        "runtime.first_start_to_last_end": "start_time to end_time",
        "gpu_request.job_total": gpus,
        "state.canonical": state_mapping_text(mapping),
    }


def state_mapping_text(mapping: dict[str, str]) -> str:
    """A trace's state mapping in prose, in the order of `STATES`: "COMPLETED -> completed, FAILED
    and TIMEOUT -> failed"."""
    parts = []
    for state in STATES:
        raw = [word for word, canonical in mapping.items() if canonical == state]
        if raw:
            words = raw[0] if len(raw) == 1 else ", ".join(raw[:-1]) + " and " + raw[-1]
            parts.append(f"{words} -> {state}")
    return ", ".join(parts)


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


# ---------------------------------------------------------------------------------------------
# Canonical views beyond jobs
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CanonicalView:
    """A canonical view a trace may publish besides its jobs: the same columns for every trace.

    A trace publishes it (`views.canonical_views` in its folder) as a SELECT over its stored
    tables; analysis opens it under the view's `name`, conformed to `columns`, and asks whether it is
    present, never which trace it comes from.
    """

    name: str
    description: str
    columns: tuple[CanonicalColumn, ...]

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def conform_sql(self, select: str) -> str:
        """SELECT exactly this view's columns, in order and typed, from `select`."""
        casts = ", ".join(f"CAST({quote_identifier(c.name)} AS {c.sql_type}) AS {quote_identifier(c.name)}"
                          for c in self.columns)
        return f"SELECT {casts} FROM ({select})"


GPU_CAPACITY = CanonicalView(
    "gpu_capacity",
    "The GPU capacity the trace documents: how many GPUs its clusters, VCs or GPU types had, and when. "
    "A dimension the source does not have is NULL. Each `source` has its own definition "
    "(`capacity.<source>`); where a trace has several, shares of capacity are taken against the "
    "source with the lowest `preference`.",
    (
        CanonicalColumn("cluster", "VARCHAR", "cluster, as the trace's canonical jobs name it"),
        CanonicalColumn("vc", "VARCHAR", "virtual cluster; NULL when the capacity is not per VC"),
        CanonicalColumn("gpu_type", "VARCHAR", "GPU model; NULL when the capacity is not per model"),
        CanonicalColumn("valid_from", "TIMESTAMPTZ",
                        "start of the interval [valid_from, valid_to) it holds for; NULL: the whole trace"),
        CanonicalColumn("valid_to", "TIMESTAMPTZ", "end of that interval; NULL: the whole trace"),
        CanonicalColumn("gpus", "BIGINT", "GPUs"),
        CanonicalColumn("source", "VARCHAR", "where the rows come from; definition `capacity.<source>`"),
        CanonicalColumn("preference", "INTEGER", "1 for the source shares of capacity are taken against, then 2, ..."),
    ),
)

ATTEMPTS = CanonicalView(
    "attempts",
    "The scheduling attempts of each job, where the trace records them (one row per attempt).",
    (
        CanonicalColumn("cluster", "VARCHAR", "cluster of the job"),
        CanonicalColumn("job_id", "VARCHAR", "the job, as its canonical row names it"),
        CanonicalColumn("attempt", "INTEGER", "1 for the first attempt, then 2, ..."),
        CanonicalColumn("start_time", "TIMESTAMPTZ", "start of the attempt (UTC); NULL if it never started"),
        CanonicalColumn("end_time", "TIMESTAMPTZ", "end of the attempt (UTC); NULL if it has none"),
        CanonicalColumn("duration_s", "DOUBLE", "seconds from its start to its end; NULL without both"),
        CanonicalColumn("num_gpus", "DOUBLE", "GPUs the attempt held"),
        CanonicalColumn("is_last_attempt", "BOOLEAN", "true for the job's last attempt"),
        CanonicalColumn("running_at_trace_end", "BOOLEAN", "true when the attempt was still running at the trace end"),
    ),
)

GPU_INSTANCE_REQUESTS = CanonicalView(
    "gpu_instance_requests",
    "What each kind of GPU instance asks for, where the trace records instances apart from jobs: "
    "one row per group of identical instances. Without it, a job of one instance is its own.",
    (
        CanonicalColumn("job", "VARCHAR", "the job the instances belong to"),
        CanonicalColumn("gpus_per_instance", "DOUBLE", "GPUs one instance asks for, rounded to 4 decimals"),
        CanonicalColumn("shares_gpu", "BOOLEAN", "true when one instance asks for a part of a GPU"),
        CanonicalColumn("instances", "BIGINT", "how many instances ask for it"),
    ),
)

GPU_NODES = CanonicalView(
    "gpu_nodes",
    "The nodes of the cluster with their resources, where the trace lists them (one row per node).",
    (
        CanonicalColumn("node", "VARCHAR", "node name"),
        CanonicalColumn("cpu_milli", "BIGINT", "CPU, thousandths of a core"),
        CanonicalColumn("memory_mib", "BIGINT", "main memory, MiB"),
        CanonicalColumn("gpus", "BIGINT", "GPUs"),
        CanonicalColumn("gpu_model", "VARCHAR", "GPU model; NULL for a node without GPUs"),
    ),
)

#: What a task asks of one node: the columns `gpu_tasks` and `gpu_task_lists` share.
TASK_REQUEST_COLUMNS: tuple[CanonicalColumn, ...] = (
    CanonicalColumn("task", "VARCHAR", "task name"),
    CanonicalColumn("num_gpus", "BIGINT", "GPUs asked (whole GPUs when above 1)"),
    CanonicalColumn("gpu_milli", "BIGINT", "share of its one GPU a task asking for 1 GPU takes, thousandths"),
    CanonicalColumn("cpu_milli", "BIGINT", "CPU asked, thousandths of a core"),
    CanonicalColumn("memory_mib", "BIGINT", "main memory asked, MiB"),
    CanonicalColumn("gpu_models", "VARCHAR", "GPU models it may run on, separated by '|'; NULL: any"),
)

GPU_TASKS = CanonicalView(
    "gpu_tasks",
    "The tasks (pods) of the trace's workload with what each asks of one node, where the trace "
    "records per-task requests with placement times (one row per task).",
    (
        *TASK_REQUEST_COLUMNS,
        CanonicalColumn("submit_s", "BIGINT", "submission, seconds on the trace's clock"),
        CanonicalColumn("start_s", "BIGINT", "placement, seconds on the trace's clock; NULL if never placed"),
        CanonicalColumn("end_s", "BIGINT", "departure, seconds on the trace's clock; NULL if it stays"),
    ),
)

GPU_TASK_LISTS = CanonicalView(
    "gpu_task_lists",
    "Every task list the trace publishes (its real workload and any resampled variants), with what "
    "each task asks of one node: the input of placement experiments (one row per task and list).",
    (
        CanonicalColumn("task_list", "VARCHAR", "name of the list (the real workload's is 'default')"),
        *TASK_REQUEST_COLUMNS,
    ),
)

GPU_SAMPLES = CanonicalView(
    "gpu_samples",
    "GPU telemetry imported beside the dataset (`ddlx datasets import-metrics`): one row per sample of "
    "one DCGM field of one GPU (fields and units: `ddlx.datasets.telemetry.model.FIELDS`).",
    (
        CanonicalColumn("host", "VARCHAR", "node the GPU is in (the exporter's Hostname label)"),
        CanonicalColumn("gpu", "INTEGER", "GPU index on the node (the gpu label)"),
        CanonicalColumn("uuid", "VARCHAR", "the GPU's UUID; NULL when the source has none"),
        CanonicalColumn("model", "VARCHAR", "GPU model (modelName); NULL when the source has none"),
        CanonicalColumn("time", "TIMESTAMPTZ", "instant of the sample (UTC)"),
        CanonicalColumn("field", "VARCHAR", "the field's short name (gpu_util, sm_active, tensor_active, ...)"),
        CanonicalColumn("value", "DOUBLE", "the value, in the field's unit"),
        CanonicalColumn("pod", "VARCHAR", "Kubernetes pod using the GPU at the sample; NULL when none or unknown"),
        CanonicalColumn("namespace", "VARCHAR", "Kubernetes namespace of that pod"),
        CanonicalColumn("container", "VARCHAR", "container of that pod"),
        CanonicalColumn("hpc_job", "VARCHAR", "batch job id a site's exporter labels the sample with; NULL when none"),
        CanonicalColumn("labels", "VARCHAR", "the sample's other labels as a JSON object"),
    ),
)

GPU_ALLOCATIONS = CanonicalView(
    "gpu_allocations",
    "Which job held which GPU of which node, and when, where the dataset records it (Slurm: the "
    "allocated nodes and GPU indices): one row per job, node and GPU.",
    (
        CanonicalColumn("cluster", "VARCHAR", "cluster of the job"),
        CanonicalColumn("job_id", "VARCHAR", "the job, as its canonical row names it"),
        CanonicalColumn("host", "VARCHAR", "node"),
        CanonicalColumn("gpu", "INTEGER", "GPU index on the node"),
        CanonicalColumn("start_time", "TIMESTAMPTZ", "start of the allocation (UTC)"),
        CanonicalColumn("end_time", "TIMESTAMPTZ", "end of the allocation (UTC); NULL while the job runs"),
    ),
)

#: The canonical views beyond jobs, by name.
VIEWS: dict[str, CanonicalView] = {view.name: view for view in (GPU_CAPACITY, ATTEMPTS, GPU_INSTANCE_REQUESTS,
                                                                 GPU_NODES, GPU_TASKS, GPU_TASK_LISTS, GPU_SAMPLES,
                                                                 GPU_ALLOCATIONS)}
