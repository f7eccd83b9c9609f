"""Adapter for the Alibaba GPU cluster trace v2023 (`openb`): node and pod lists -> Parquet -> jobs.

Format of the release (alibaba/clusterdata `cluster-trace-gpu-v2023/csv/`): plain CSV files with a
header line, `\\n` line ends, nothing quoted, an empty field for a missing value.

- `openb_node_list_<list>.csv` (`all_node`: every node, `gpu_node`: the GPU nodes only, numbered
  afresh): `sn,cpu_milli,memory_mib,gpu,model`. Units: `cpu_milli` thousandths of a core,
  `memory_mib` MiB, `gpu` GPUs of the node, `model` its GPU model (empty for a CPU-only node;
  `G2`, `G3` are models the owners left unnamed).
- `openb_pod_list_<workload>.csv`: `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,`
  `pod_phase,creation_time,deletion_time,scheduled_time`. `gpu_milli` is the share of one GPU in
  thousandths, meaningful when `num_gpu` is 1 (1000 for whole GPUs, 0 for CPU pods); `gpu_spec`
  lists the GPU models the pod may run on, `|`-separated (empty: no constraint); times are whole
  seconds from the trace start, with no real date or time of day; an empty `scheduled_time` means
  the pod was never scheduled. `default` is the real workload; the other lists are the owners'
  resamplings of it (`cpuNNN`, `gpushareNN`, `gpuspecNN`, `multigpuNN`), and the `multigpu*` lists
  carry only the first five columns.

Stored tables:
- `pai_v2023_nodes`: every node list present, label `node_list` (`all_node`, `gpu_node`), plus
  `cpus` (cores) and `memory_gib`.
- `pai_v2023_pods`: every pod list present, label `workload`; columns a list lacks are NULL. Plus
  `cpus`, `memory_gib`, `gpus` (gpu_milli / 1000 when num_gpu is 1, else num_gpu), `shares_gpu`
  and the times as TIMESTAMPTZ (`creation_ts`, `deletion_ts`, `scheduled_ts` = to_timestamp(s)).

How a pod of the `default` workload becomes a canonical job (table `pai_v2023_jobs`; the resampled
workloads describe the same cluster and are left out so that no pod is counted twice):
- job_id = name; cluster `openb`; workload `default`; user, vc, job_group, job_name NULL;
- submit_time = creation_time, start_time = scheduled_time, end_time = deletion_time; a pod
  never scheduled has no start nor end (its deletion is when it was withdrawn);
- queue_s = scheduled_time - creation_time, run_s = deletion_time - scheduled_time;
- num_gpus = gpus; num_cpus = cpu_milli / 1000; mem_gb = memory_mib / 1024 (GiB);
  num_instances = num_tasks = 1;
- gpu_type = gpu_spec when it names one model (a repeated name counts once), else NULL;
- fractional_gpu = num_gpu is 1 and gpu_milli < 1000;
- state: never scheduled -> pending; Succeeded -> completed; Failed -> failed; Pending -> pending;
  Running -> running when its deletion_time is the workload's last deletion time (the trace
  ends there: those pods were still running, and their end_time is NULL) or it has none (not
  deleted when the trace was taken), else completed (the
  pod ran until it was deleted, which a pod that is not needed any more is);
- source_tz `UTC`: the times are offsets from an undisclosed start, not wall-clock times.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ddlx.datasets.adapter import CsvFormat, SourcePart, TraceAdapter, is_input_file
from ddlx.datasets.canonical import state_case_sql
from ddlx.datasets.csvload import SOURCE
from ddlx.datasets.ranges import ONE_YEAR_S, ValueRange
from ddlx.datasets.sqltext import quote_identifier, sql_string
from ddlx.datasets.validation import Check, Figure
from ddlx.errors import InputError
from ddlx.traces.pai_v2023.release import RELEASE as PAI_V2023

TRACE = "pai-v2023"
CLUSTER = "openb"
NODES = "pai_v2023_nodes"
PODS = "pai_v2023_pods"
JOBS = "pai_v2023_jobs"

NODE_FILE_PREFIX = "openb_node_list_"
POD_FILE_PREFIX = "openb_pod_list_"
#: The real workload; every other pod list is a resampling of it.
REAL_WORKLOAD = "default"
#: Pod lists whose name starts with this carry only the first five pod columns.
SHORT_POD_LIST_PREFIX = "multigpu"

#: Node list columns, in file order, with the DuckDB types they are read with.
NODE_COLUMNS: dict[str, str] = {
    "sn": "VARCHAR",
    "cpu_milli": "BIGINT",
    "memory_mib": "BIGINT",
    "gpu": "BIGINT",
    "model": "VARCHAR",
}

#: Kubernetes pod phases found in the release (a closed set: anything else is bad input).
POD_PHASES: tuple[str, ...] = ("Running", "Succeeded", "Failed", "Pending")
#: Quality-of-service classes found in the release (LS latency-sensitive, BE best-effort, and the
#: Kubernetes classes Burstable and Guaranteed); a closed set too.
QOS_CLASSES: tuple[str, ...] = ("LS", "BE", "Burstable", "Guaranteed")


def _enum(values: Sequence[str]) -> str:
    return "ENUM(" + ", ".join(sql_string(v) for v in values) + ")"


#: Pod list columns, in file order, with the DuckDB types they are read with.
POD_COLUMNS: dict[str, str] = {
    "name": "VARCHAR",
    "cpu_milli": "BIGINT",
    "memory_mib": "BIGINT",
    "num_gpu": "BIGINT",
    "gpu_milli": "BIGINT",
    "gpu_spec": "VARCHAR",
    "qos": _enum(QOS_CLASSES),
    "pod_phase": _enum(POD_PHASES),
    "creation_time": "BIGINT",
    "deletion_time": "BIGINT",
    "scheduled_time": "BIGINT",
}
#: The columns of the `multigpu*` lists.
SHORT_POD_COLUMNS: dict[str, str] = dict(list(POD_COLUMNS.items())[:5])

#: Time columns of the pods (seconds from the trace start) and their TIMESTAMPTZ companions.
POD_TIMES: dict[str, str] = {
    "creation_time": "creation_ts",
    "deletion_time": "deletion_ts",
    "scheduled_time": "scheduled_ts",
}

_CPU_MILLI = ValueRange(0, 10_000_000, "thousandths of a CPU core")
_MEMORY_MIB = ValueRange(0, 100_000_000, "MiB")
_GPUS = ValueRange(0, 64, "GPUs")
#: Seconds from the trace start: the default workload spans about 150 days, a year bounds them.
_SECONDS = ValueRange(0, ONE_YEAR_S, "seconds from the trace start")
#: Accepted range of every numeric column, per stored table; values outside are refused.
RANGES: dict[str, dict[str, ValueRange]] = {
    NODES: {"cpu_milli": _CPU_MILLI, "memory_mib": _MEMORY_MIB, "gpu": _GPUS},
    PODS: {
        "cpu_milli": _CPU_MILLI,
        "memory_mib": _MEMORY_MIB,
        "num_gpu": _GPUS,
        "gpu_milli": ValueRange(0, 1_000, "thousandths of one GPU"),
        **{name: _SECONDS for name in POD_TIMES},
    },
}

#: GPU models of the node lists (each gets capacity figures); G2 and G3 are unnamed by the owners.
GPU_MODELS: tuple[str, ...] = ("G2", "G3", "T4", "P100", "V100M16", "V100M32", "A10")

#: Canonical state of a scheduled pod by its phase (see the module docstring for Running).
STATE_MAP: dict[str, str] = {
    "Succeeded": "completed",
    "Failed": "failed",
    "Pending": "pending",
    "Running": "completed",
}


# -- reading -----------------------------------------------------------------------------------


def node_select(part: SourcePart) -> str:
    """The stored node rows of one node list (FROM `SOURCE`)."""
    return (f"SELECT {part.labels_sql()}sn, cpu_milli, memory_mib, gpu, model, "
            f"cpu_milli / 1000 AS cpus, memory_mib / 1024 AS memory_gib FROM {SOURCE}")


def _sql_type(sql_type: str) -> str:
    """The type a column is stored with (closed sets are stored as text)."""
    return "VARCHAR" if sql_type.startswith("ENUM") else sql_type


def pod_select(part: SourcePart, columns: dict[str, str]) -> str:
    """The stored pod rows of one pod list read with `columns` (FROM `SOURCE`); the columns the list
    lacks are NULL, so every list gives the same stored columns."""
    parts = []
    for name, sql_type in POD_COLUMNS.items():
        if name not in columns:
            parts.append(f'NULL::{_sql_type(sql_type)} AS {quote_identifier(name)}')
        elif sql_type.startswith("ENUM"):
            parts.append(f'CAST({quote_identifier(name)} AS VARCHAR) AS {quote_identifier(name)}')
        else:
            parts.append(quote_identifier(name))
    parts += [
        "cpu_milli / 1000 AS cpus",
        "memory_mib / 1024 AS memory_gib",
        "CASE WHEN num_gpu = 1 THEN gpu_milli / 1000 ELSE CAST(num_gpu AS DOUBLE) END AS gpus",
        "(num_gpu = 1 AND gpu_milli < 1000) AS shares_gpu",
    ]
    for seconds, stamp in POD_TIMES.items():
        source = RANGES[PODS][seconds].within_sql(quote_identifier(seconds)) if seconds in columns else "NULL::BIGINT"
        parts.append(f"to_timestamp({source}) AS {stamp}")  # an absurd time is refused by the range check
    return f"SELECT {part.labels_sql()}{', '.join(parts)} FROM {SOURCE}"


# -- canonical jobs ----------------------------------------------------------------------------


def jobs_sql() -> str:
    """The canonical `pai_v2023_jobs` rows: the pods of the default workload."""
    pods = PODS
    return f"""
WITH pods AS (
    SELECT *, max(deletion_time) OVER () AS last_deletion
    FROM {pods}
    WHERE workload = '{REAL_WORKLOAD}'
),
judged AS (
    SELECT *,
           scheduled_time IS NOT NULL AND pod_phase = 'Running'
               AND (deletion_time IS NULL OR deletion_time = last_deletion) AS running_at_end,
           list_distinct(string_split(gpu_spec, '|')) AS spec_models
    FROM pods
)
SELECT
    '{TRACE}' AS trace,
    '{CLUSTER}' AS cluster,
    name AS job_id,
    NULL::VARCHAR AS "user",
    NULL::VARCHAR AS vc,
    NULL::VARCHAR AS job_group,
    NULL::VARCHAR AS job_name,
    workload,
    creation_ts AS submit_time,
    scheduled_ts AS start_time,
    CASE WHEN scheduled_time IS NOT NULL AND NOT running_at_end THEN deletion_ts END AS end_time,
    '{PAI_V2023.source_tz}' AS source_tz,
    CAST(scheduled_time - creation_time AS DOUBLE) AS queue_s,
    CASE WHEN scheduled_time IS NOT NULL AND NOT running_at_end
         THEN CAST(deletion_time - scheduled_time AS DOUBLE) END AS run_s,
    gpus AS num_gpus,
    cpus AS num_cpus,
    memory_gib AS mem_gb,
    CAST(1 AS BIGINT) AS num_instances,
    CAST(1 AS BIGINT) AS num_tasks,
    CASE WHEN len(spec_models) = 1 THEN spec_models[1] END AS gpu_type,
    coalesce(shares_gpu, false) AS fractional_gpu,
    CASE WHEN scheduled_time IS NULL THEN 'pending'
         WHEN running_at_end THEN 'running'
         ELSE {state_case_sql("pod_phase", STATE_MAP)} END AS state,
    pod_phase AS raw_state
FROM judged
"""


# -- validation --------------------------------------------------------------------------------

#: The node list the capacity figures are read from: all_node when present, else gpu_node.
_CAPACITY_LIST = (f"(SELECT CASE WHEN bool_or(node_list = 'all_node') THEN 'all_node' "
                  f"ELSE min(node_list) END FROM {NODES})")

#: Nodes that could host pod `p` by GPUs alone (model allowed by its spec, enough GPUs).
_GPU_FITS = ("n.gpu >= p.num_gpu AND n.model IS NOT NULL "
             "AND (p.gpu_spec IS NULL OR list_contains(string_split(p.gpu_spec, '|'), n.model))")


def validation_checks(present: set[str]) -> list[Check]:
    """Data-quality checks on the stored tables in `present` (tables referred to by name)."""
    checks: list[Check] = []
    if NODES in present:
        checks += [
            Check(NODES, "GPU nodes without a model", "gpu > 0 AND model IS NULL"),
            Check(NODES, "nodes with a model but no GPU", "gpu = 0 AND model IS NOT NULL"),
            Check(NODES, "GPU models outside the known set (" + ", ".join(GPU_MODELS) + ")",
                  "model IS NOT NULL AND model NOT IN (" + ", ".join(map(sql_string, GPU_MODELS)) + ")"),
            Check(NODES, "duplicate node name within a list (sn)", query=(
                f"SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM {NODES} "
                "GROUP BY node_list, sn HAVING count(*) > 1)")),
        ]
    if PODS in present:
        checks += [
            Check(PODS, "pods without phase and times (multigpu lists: five columns only)",
                  "pod_phase IS NULL AND creation_time IS NULL"),
            Check(PODS, "pods never scheduled (empty scheduled_time)",
                  "creation_time IS NOT NULL AND scheduled_time IS NULL"),
            Check(PODS, "never-scheduled pods whose phase is not Pending",
                  "creation_time IS NOT NULL AND scheduled_time IS NULL AND pod_phase <> 'Pending'"),
            Check(PODS, "scheduled pods whose phase is Pending",
                  "scheduled_time IS NOT NULL AND pod_phase = 'Pending'"),
            Check(PODS, "deletion before creation", "deletion_time < creation_time"),
            Check(PODS, "scheduled before creation", "scheduled_time < creation_time"),
            Check(PODS, "scheduled after deletion", "scheduled_time > deletion_time"),
            Check(PODS, "missing creation or deletion time (lists with times)",
                  "pod_phase IS NOT NULL AND (creation_time IS NULL OR deletion_time IS NULL)"),
            Check(PODS, "multi-GPU pods with gpu_milli other than 1000", "num_gpu > 1 AND gpu_milli <> 1000"),
            Check(PODS, "CPU pods (num_gpu 0) with gpu_milli above 0", "num_gpu = 0 AND gpu_milli > 0"),
            Check(PODS, "duplicate pod name within a workload", query=(
                f"SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM {PODS} "
                "GROUP BY workload, name HAVING count(*) > 1)")),
        ]
    if PODS in present and NODES in present:
        checks += [
            Check(PODS, "pods whose GPU demand fits no node model (GPUs within gpu_spec)", query=(
                f"SELECT count(*) FROM {PODS} AS p WHERE p.num_gpu > 0 AND NOT EXISTS "
                f"(SELECT 1 FROM {NODES} AS n WHERE {_GPU_FITS})")),
            Check(PODS, "pods that fit no single node (GPUs, CPU and memory together)", query=(
                f"SELECT count(*) FROM {PODS} AS p WHERE NOT EXISTS (SELECT 1 FROM {NODES} AS n "
                f"WHERE n.cpu_milli >= p.cpu_milli AND n.memory_mib >= p.memory_mib "
                f"AND (p.num_gpu = 0 OR ({_GPU_FITS})))")),
            Check(PODS, "gpu_spec naming a model no node has", query=(
                f"SELECT count(*) FROM {PODS} AS p WHERE p.gpu_spec IS NOT NULL AND EXISTS "
                f"(SELECT 1 FROM unnest(string_split(p.gpu_spec, '|')) AS s(model) WHERE s.model NOT IN "
                f"(SELECT model FROM {NODES} WHERE model IS NOT NULL))")),
        ]
    if JOBS in present:
        checks += [
            Check(JOBS, "jobs never scheduled (pending)", "start_time IS NULL"),
            Check(JOBS, "jobs still running at the trace end (Running, deleted at the last deletion time or "
                        "not deleted)",
                  "state = 'running'"),
            Check(JOBS, "jobs with negative queueing delay", "queue_s < 0"),
            Check(JOBS, "jobs with negative run time", "run_s < 0"),
        ]
    return checks


def figures(present: set[str]) -> list[Figure]:
    """GPU capacity by the node list (all_node, else gpu_node) and a few workload figures."""
    result: list[Figure] = []
    if NODES in present:
        nodes = f"FROM {NODES} WHERE node_list = {_CAPACITY_LIST}"
        result += [
            Figure(NODES, "nodes", f"SELECT count(*) {nodes}", "nodes"),
            Figure(NODES, "GPU nodes", f"SELECT count(*) FILTER (WHERE gpu > 0) {nodes}", "nodes"),
            Figure(NODES, "GPUs", f"SELECT coalesce(sum(gpu), 0) {nodes}", "GPUs"),
            Figure(NODES, "CPU cores", f"SELECT coalesce(sum(cpus), 0) {nodes}", "cores"),
        ]
        for model in GPU_MODELS:
            where = f"{nodes} AND model = {sql_string(model)}"
            result += [
                Figure(NODES, f"{model} nodes", f"SELECT count(*) {where}", "nodes"),
                Figure(NODES, f"{model} GPUs", f"SELECT coalesce(sum(gpu), 0) {where}", "GPUs"),
            ]
        known = ", ".join(map(sql_string, GPU_MODELS))
        result.append(Figure(NODES, "GPUs of other models",
                             f"SELECT coalesce(sum(gpu), 0) {nodes} AND model NOT IN ({known})", "GPUs"))
    if PODS in present:
        default = f"FROM {PODS} WHERE workload = '{REAL_WORKLOAD}'"
        result += [
            Figure(PODS, "pods of the default workload", f"SELECT count(*) {default}", "pods"),
            Figure(PODS, "GPU-sharing pods of the default workload (num_gpu 1, gpu_milli < 1000)",
                   f"SELECT count(*) FILTER (WHERE shares_gpu) {default}", "pods"),
            Figure(PODS, "GPUs requested by the default workload", f"SELECT coalesce(sum(gpus), 0) {default}",
                   "GPUs"),
            Figure(PODS, "span of the default workload (first creation to last deletion)",
                   f"SELECT (max(deletion_time) - min(creation_time)) / 86400 {default}", "days"),
        ]
    return result


# -- the adapter -------------------------------------------------------------------------------


def _csv_folder(source: Path) -> Path:
    """The folder holding the openb_*.csv files: `source` itself, or its `csv/` subfolder."""
    if not source.is_dir():
        raise InputError(str(source), "not a folder; expected the folder holding the openb_*.csv files "
                                      "(or its csv/ subfolder)")
    for folder in (source, source / "csv"):
        if folder.is_dir() and any(folder.glob("openb_*.csv")):
            return folder
    return source


def _list_parts(folder: Path, prefix: str, label: str) -> list[SourcePart]:
    """One part per `<prefix><name>.csv` in `folder` (sorted, the real workload first)."""
    official = {f.filename: f.sha256 for f in PAI_V2023.files}
    paths = sorted(folder.glob(f"{prefix}*.csv"),
                   key=lambda p: (p.name != f"{POD_FILE_PREFIX}{REAL_WORKLOAD}.csv", p.name))
    return [SourcePart(path, labels=((label, path.name[len(prefix):-len(".csv")]),),
                       official_sha256=official.get(path.name))
            for path in paths if is_input_file(path)]


class PaiV2023Adapter(TraceAdapter):
    """Reads the node lists and every pod list present in one folder."""

    def locate(self, source: Path, tables: Sequence[str]) -> dict[str, list[SourcePart]]:
        folder = _csv_folder(source)
        wanted = {
            NODES: (NODE_FILE_PREFIX, "node_list"),
            PODS: (POD_FILE_PREFIX, "workload"),
        }
        found: dict[str, list[SourcePart]] = {}
        missing = []
        for table in tables:
            prefix, label = wanted[table]
            parts = _list_parts(folder, prefix, label)
            if parts:
                found[table] = parts
            else:
                missing.append(f"{prefix}*.csv (e.g. {prefix}{'all_node' if table == NODES else REAL_WORKLOAD}.csv)")
        if missing:
            raise InputError(str(source), "missing table files: " + "; ".join(missing))
        return found

    def csv_format(self, table: str, part: SourcePart) -> CsvFormat:
        if table == NODES:
            return CsvFormat(columns=NODE_COLUMNS, select=node_select(part), header=True)
        workload = dict(part.labels)["workload"]
        columns = SHORT_POD_COLUMNS if workload.startswith(SHORT_POD_LIST_PREFIX) else POD_COLUMNS
        return CsvFormat(columns=columns, select=pod_select(part, columns), header=True)

    def value_ranges(self, table: str) -> dict[str, ValueRange]:
        return RANGES[table]

    def derived_views(self, present: set[str]) -> dict[str, str]:
        if PODS in present:
            return {self.jobs_table: jobs_sql()}
        return {}

    def validation_checks(self, present: set[str]) -> list[Check]:
        return validation_checks(present)

    def figures(self, present: set[str]) -> list[Figure]:
        return figures(present)


ADAPTER = PaiV2023Adapter.for_trace(PAI_V2023)
