"""The `openb` export: the node list and pod list CSVs of Alibaba's cluster-trace-gpu-v2023, the input
of the FGD simulator (`hkust-adsl/kubernetes-scheduler-simulator`), and the node list as the YAML
documents that simulator loads.

Format (the release's `openb_node_list_gpu_node.csv` and `openb_pod_list_default.csv`, read by that
repository's `data/pod_csv_to_yaml.py`, which turns a pod list into the pod YAML the simulator loads,
beside the node YAML made from the GPU node list): plain CSV with a header line, nothing quoted, an
empty field for a missing value. The reader is pandas `read_csv`, then `"%dm" % cpu_milli`,
`"%dMi" % memory_mib`, `int(num_gpu)`, `int(gpu_milli)`, and `gpu_spec` with NaN taken as "" and
split on `|`: every request column must be an integer (an empty one fails); the times, qos and
phase are carried but not read by it.

How the simulator reads nodes (`pkg/simulator/simulator.go` `CreateClusterResourceFromClusterConfig`,
`pkg/utils/utils.go` `GetYamlContentFromDirectory` and `DecodeYamlContent`, `pkg/simulator/utils.go`
`GetObjectFromYamlContent`, `pkg/type/open-gpu-share/utils/node.go`): every `.yaml`/`.yml` file under
the cluster folder its config names (`spec.cluster.customConfig`; `scripts/generate_config_and_run.py
-f`), in any sub-folder, split into documents on `---` lines (Helm's `SplitManifests`) and decoded
by Kubernetes' deserializer; a `kind: Node` document is a node, a `kind: Pod` one a pod, other files
are ignored. Of a node it reads the name, the label `alibabacloud.com/gpu-card-model` (the GPU model;
absent: none, which a pod with a gpu_spec never matches), `status.capacity`
`alibabacloud.com/gpu-count` (GPUs) and `alibabacloud.com/gpu-milli` (thousandths, GPUs x 1000:
the cluster's GPU total), and `status.allocatable` `cpu` and `memory`, against which Kubernetes'
resource filter checks a pod's requests. The release's own `data/node_yaml/openb_node_list_gpu_node.yaml`
writes each node as below (labels, `allocatable` equal to `capacity`, `pods: '1001'`), documents
joined by a blank line, `---` and a blank line; the export writes the same, byte for byte for the
release itself. Counts are quoted strings, CPU `<milli>m`, memory `<MiB>Mi`; a model or name that a
YAML reader would take for a number, boolean or null (`3090`, `on`) is quoted.

- node list `sn,cpu_milli,memory_mib,gpu,model`: node name, CPU in thousandths of a core, memory in
  MiB, GPUs, GPU model (empty: none known). Only GPU nodes: the list the simulator is run with.
- pod list `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,`
  `deletion_time,scheduled_time`: what one pod asks of one node, `gpu_milli` the thousandths of its
  one GPU when `num_gpu` is 1 (1000 for whole GPUs: the simulator refuses a multi-GPU pod whose
  gpu_milli is not 1000; 0 with num_gpu 0), `gpu_spec` the GPU models it may run on (`|`-separated,
  empty: any), `qos`, `pod_phase` (Pending, Running, Succeeded, Failed), times in whole seconds
  from the trace start; an empty `scheduled_time`: never scheduled.

Files: `--out PATH` is the pod list; the node list goes beside it, named as the release names it
when PATH is `openb_pod_list_<X>.csv` (`openb_node_list_<X>.csv`, and its YAML documents
`openb_node_list_<X>.yaml`), else `<stem>.nodes.csv` and `<stem>.nodes.yaml`. Nodes
are named `<prefix>-node-NNNN` and generated pods `<prefix>-pod-NNNN`, numbered from 0 with at least
four digits (names sort in number order), `<prefix>` the dataset's one cluster (else the dataset)
in lowercase letters, digits and `-` (`openb` for this trace).

Where the rows come from (each rule is also in the export's loss report):
- a dataset with per-pod requests (the `gpu_tasks` view; this trace): one row per task as it is,
  ordered by name; qos and pod_phase from the stored pod table when present (else pod_phase from
  the job's raw state when it is a pod phase, else from its state as below; qos empty); a pod
  without a CPU request (cpu_milli empty or 0) gets the nominal one below. For this trace the
  export gives back the release's own files, row for row;
- any other dataset: one pod per instance of each canonical job (`num_instances`, 1 when unknown),
  in submission order, each asking num_gpus / num_instances GPUs: 0 -> num_gpu 0, gpu_milli 0;
  below 1 -> num_gpu 1, gpu_milli the share in thousandths (at least 1); whole -> that many GPUs,
  gpu_milli 1000; above 1 and not whole -> rounded up to whole GPUs. cpu_milli = num_cpus x 1000 /
  instances, and where that is unknown or rounds below 1 the nominal request `--option cpu_milli=`
  (default 100: Kubernetes' `DefaultMilliCPURequest`, what its scheduler counts for a pod that
  states no CPU request): the simulator's workload top-up stops (`sim.podTotalMilliCpuReq <= 0`)
  on a pod list whose CPU requests add up to 0. memory_mib = mem_gb x 1024 / instances (mem_gb read
  as GiB), 0 when unknown (no request). creation_time = offset_s, scheduled_time = creation +
  queue_s (empty if never started), deletion_time = scheduled + run_s (empty without a run time),
  each rounded to whole seconds, a negative queue or run time taken as 0. pod_phase: never started
  -> Pending; else completed -> Succeeded, failed and cancelled -> Failed (the pod ended without
  success; Kubernetes has no cancelled phase), running -> Running, pending -> Pending, no state ->
  empty. qos empty (the trace records none). gpu_spec = gpu_type when the node list has GPUs of
  that model, else empty.
  `<stem>.ids.csv` (`openb_pod_ids_<X>.csv` with the release's naming) maps pod names to jobs.
- nodes: with `--option gpus=N` (or `MODEL:N,MODEL:N,...`) built from those GPUs; else the
  `gpu_nodes` view's GPU nodes in name order when present; else built from `gpu_capacity` (its
  preferred source; per cluster and GPU type the largest documented total); else the export is
  refused (the simulator places pods on nodes: a node list must be documented or stated). Built
  nodes hold 8 GPUs, the last of each group the remainder, model = the GPU type (empty when not
  per model), CPU and memory the simulator's largest node spec (128 cores, 1 TiB) or the largest
  pod's request if greater, so that GPUs bind first. A dataset with neither fractional GPUs nor
  a node list can so still be exported, with a stated node rule.
- pods that fit no node (more GPUs, CPU or memory than any one node of the list holds, or a
  gpu_spec no node's model meets, checked as the simulator's filters check them on an empty node)
  are written, and named in the loss report: the simulator can never place them.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.datasets.canonical import MILLI
from ddlx.formats.jobs import ExportRequest, write_table, write_text
from ddlx.formats.model import ExportError, ExportFormat, LossReport, Written
from ddlx.traces.pai_v2023.reader import POD_PHASES, PODS, REAL_WORKLOAD

#: Node list columns, in the order of the release.
NODE_FIELDS: tuple[str, ...] = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
#: Pod list columns, in the order of the release.
POD_FIELDS: tuple[str, ...] = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
                               "pod_phase", "creation_time", "deletion_time", "scheduled_time")
#: Pod phase of a started pod by canonical state.
PHASE: dict[str, str] = {"completed": "Succeeded", "failed": "Failed", "cancelled": "Failed",
                         "running": "Running", "pending": "Pending"}
#: GPUs of a node built from a capacity.
GPUS_PER_NODE = 8
#: The simulator's largest node spec: CPU (thousandths of a core) and memory (MiB) of a built node.
NODE_CPU_MILLI = 128_000
NODE_MEMORY_MIB = 1_048_576
#: The CPU request (thousandths of a core) of a pod whose dataset records none, unless `--option
#: cpu_milli` says otherwise: Kubernetes' `DefaultMilliCPURequest`, what its scheduler counts for a pod
#: without a CPU request.
NOMINAL_CPU_MILLI = 100
#: Node YAML: the GPU model label, the GPU capacity keys and the pod capacity of the release's node documents.
GPU_MODEL_LABEL = "alibabacloud.com/gpu-card-model"
GPU_COUNT = "alibabacloud.com/gpu-count"
GPU_MILLI = "alibabacloud.com/gpu-milli"
NODE_PODS = 1001
#: Words a YAML 1.1 reader (Kubernetes' decoder, PyYAML) takes for a boolean or null when unquoted.
YAML_WORDS = frozenset(f(word) for word in ("y", "yes", "n", "no", "true", "false", "on", "off", "null")
                       for f in (str.lower, str.capitalize, str.upper))


def _prefix(ctx: TraceContext) -> str:
    """The name prefix of nodes and generated pods: the dataset's one cluster, else the dataset."""
    clusters = ctx.query(f"SELECT DISTINCT cluster FROM {ctx.jobs} WHERE cluster IS NOT NULL")["cluster"].to_list()
    source = clusters[0] if len(clusters) == 1 else ctx.trace
    return re.sub(r"[^a-z0-9]+", "-", str(source).lower()).strip("-") or "node"


def _names(prefix: str, kind: str, count: int) -> list[str]:
    """`<prefix>-<kind>-NNNN` for 0..count-1, at least four digits."""
    width = max(4, len(str(max(count - 1, 0))))
    return [f"{prefix}-{kind}-{i:0{width}d}" for i in range(count)]


def _beside(path: Path, release_kind: str, suffix: str) -> Path:
    """A file beside the pod list: the release's naming when `path` is `openb_pod_list_<X>.csv`
    (`openb_<release_kind>_<X><extension of suffix>`), else `<stem><suffix>`."""
    match = re.fullmatch(r"openb_pod_list_(.+)\.csv", path.name)
    if match:
        return path.with_name(f"openb_{release_kind}_{match.group(1)}{Path(suffix).suffix}")
    return path.with_name(f"{path.stem}{suffix}")


def _nominal_cpu(request: ExportRequest) -> int:
    """The CPU request (thousandths of a core) of a pod whose dataset records none: `--option
    cpu_milli`, a whole number above 0, else `NOMINAL_CPU_MILLI`."""
    text = request.option("cpu_milli", str(NOMINAL_CPU_MILLI))
    if not text.strip().isdigit() or int(text) <= 0:
        raise ExportError(f"--option cpu_milli={text}: expected a whole number of thousandths of a core above 0 "
                          "(the CPU request of a pod whose dataset records none)")
    return int(text)


def _with_cpu_request(cpu_milli: pl.Expr, nominal: int) -> pl.Expr:
    """`cpu_milli` as an integer request, the `nominal` one where it is unknown or below 1."""
    return pl.when(cpu_milli.is_null() | (cpu_milli < 1)).then(nominal).otherwise(cpu_milli).cast(pl.Int64)


# -- pods ----------------------------------------------------------------------------------------


def _task_pods(ctx: TraceContext, loss: LossReport, nominal_cpu: int) -> pl.DataFrame:
    """The pod list of a dataset with per-pod requests (`gpu_tasks`), ordered by name; a pod without
    a CPU request asks `nominal_cpu`."""
    tasks = ctx.query("SELECT * FROM gpu_tasks ORDER BY task")
    if tasks.get_column("task").n_unique() != tasks.height or tasks.get_column("task").null_count():
        raise ExportError(f"dataset '{ctx.trace}': task names in gpu_tasks are missing or repeat; the openb "
                          "pod list names each pod once")
    if ctx.has(PODS):
        extra = ctx.query(f"SELECT name AS task, qos, pod_phase FROM {PODS} WHERE workload = '{REAL_WORKLOAD}'")
    else:
        phases = ", ".join(f"'{p}'" for p in POD_PHASES)
        mapped = " ".join(f"WHEN state = '{s}' THEN '{p}'" for s, p in PHASE.items())
        extra = ctx.query(f"""
            SELECT job_id AS task, NULL::VARCHAR AS qos,
                   CASE WHEN raw_state IN ({phases}) THEN raw_state WHEN start_time IS NULL THEN 'Pending'
                        {mapped} END AS pod_phase
            FROM {ctx.jobs}""")
        loss.filled.append(("qos", "empty: the dataset records no quality-of-service class"))
        loss.filled.append(("pod_phase", "the job's raw state when it is a pod phase, else from its state: never "
                                         "started Pending, completed Succeeded, failed and cancelled Failed, "
                                         "running Running"))
    pods = tasks.join(extra, on="task", how="left", maintain_order="left")
    loss.without_place.append(("resampled task lists (gpu_task_lists)",
                               "left out: the pod list is the real workload, one row per task as recorded"))
    without_cpu = pods.filter(pl.col("cpu_milli").is_null() | (pl.col("cpu_milli") < 1)).height
    if without_cpu:
        loss.filled.append(("cpu_milli", _nominal_cpu_rule(nominal_cpu, f"{without_cpu:,} pods without a CPU "
                                                                        "request (cpu_milli empty or 0)")))
    return pods.select(
        pl.col("task").alias("name"), _with_cpu_request(pl.col("cpu_milli"), nominal_cpu).alias("cpu_milli"),
        "memory_mib", pl.col("num_gpus").alias("num_gpu"), "gpu_milli",
        pl.col("gpu_models").alias("gpu_spec"), "qos", "pod_phase", pl.col("submit_s").alias("creation_time"),
        pl.col("end_s").alias("deletion_time"), pl.col("start_s").alias("scheduled_time"))


def _nominal_cpu_rule(nominal: int, which: str) -> str:
    """The loss report's rule for the pods that get the nominal CPU request."""
    return (f"{nominal} (--option cpu_milli; default {NOMINAL_CPU_MILLI}, Kubernetes' DefaultMilliCPURequest) "
            f"for {which}: the simulator's workload top-up stops on a pod list whose CPU requests add up to 0")


def _job_cpu_milli() -> pl.Expr:
    """A pod's CPU request from its job: num_cpus x 1000 per instance, NULL when unknown."""
    return (pl.col("num_cpus") * MILLI / pl.col("pods")).round(0).cast(pl.Int64)


def _job_pods(request: ExportRequest, loss: LossReport, prefix: str,
              models: set[str], nominal_cpu: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One pod per instance of each canonical job (see the module docstring), and the id map."""
    jobs = request.jobs(loss)
    jobs = loss.keep(jobs, pl.col("num_gpus").is_not_null(),
                     "GPUs unknown (num_gpus is NULL): a pod must state its GPUs")
    if not jobs.height:
        raise ExportError(f"dataset '{request.ctx.trace}': no job records its GPUs (num_gpus); the openb pod list "
                          "needs them")
    instances = pl.when(pl.col("num_instances") >= 1).then(pl.col("num_instances")).otherwise(1).cast(pl.Int64)
    pods = jobs.with_columns(instances.alias("pods")).with_columns(
        (pl.col("num_gpus") / pl.col("pods")).alias("g"),
        pl.int_ranges(0, pl.col("pods")).alias("instance")).explode("instance")
    g = pl.col("g")
    share = (g * MILLI).round(0).cast(pl.Int64).clip(1, MILLI)
    whole = g.ceil().cast(pl.Int64)
    queue = pl.col("queue_s").clip(lower_bound=0).round(0).cast(pl.Int64)
    run = pl.col("run_s").clip(lower_bound=0).round(0).cast(pl.Int64)
    creation = pl.col("offset_s").round(0).cast(pl.Int64)
    phase = pl.col("state").replace_strict(PHASE, default=None, return_dtype=pl.String)
    names = _names(prefix, "pod", pods.height)
    model_list = sorted(models)
    out = pods.with_columns(pl.Series("name", names)).select(
        "name",
        _with_cpu_request(_job_cpu_milli(), nominal_cpu).alias("cpu_milli"),
        (pl.col("mem_gb") * 1024 / pl.col("pods")).round(0).cast(pl.Int64).fill_null(0).alias("memory_mib"),
        pl.when(g <= 0).then(0).when(g < 1).then(1).otherwise(whole).cast(pl.Int64).alias("num_gpu"),
        pl.when(g <= 0).then(0).when(g < 1).then(share).otherwise(MILLI).cast(pl.Int64).alias("gpu_milli"),
        pl.when(pl.col("gpu_type").is_in(model_list) & (g > 0)).then(pl.col("gpu_type")).otherwise(None)
          .alias("gpu_spec"),
        pl.lit(None, pl.String).alias("qos"),
        pl.when(pl.col("queue_s").is_null()).then(pl.lit("Pending")).otherwise(phase).alias("pod_phase"),
        creation.alias("creation_time"),
        (creation + queue + run).alias("deletion_time"),
        (creation + queue).alias("scheduled_time"),
    ).select(POD_FIELDS)
    ids = pods.select(pl.Series("name", names), "cluster", "job_id", "instance")
    _record_job_losses(pods, loss, nominal_cpu)
    return out, ids


def _record_job_losses(pods: pl.DataFrame, loss: LossReport, nominal_cpu: int) -> None:
    g = pl.col("g")
    count = lambda expr: pods.filter(expr).height  # noqa: E731
    first = pl.col("instance") == 0
    loss.without_place += [
        ("job_id, cluster", "pods are named <prefix>-pod-NNNN in submission order; the .ids.csv beside the pod "
                            "list maps each pod to its cluster, job id and instance (0..)"),
        ("user, vc, job_group, job_name, workload, num_tasks, raw_state", "no column in the pod list: left out"),
        ("sub-second times", "creation, scheduled and deletion times are whole seconds from the first submission"),
    ]
    loss.filled += [
        ("pods", f"one per instance, each asking num_gpus / num_instances GPUs; "
                 f"{count(first & (pl.col('num_instances').is_null() | (pl.col('num_instances') < 1))):,} jobs "
                 f"without a number of instances give one pod"),
        ("num_gpu, gpu_milli", f"below one GPU: num_gpu 1 and the share in thousandths, at least 1 "
                               f"({count((g > 0) & (g < 1)):,} pods); whole GPUs with gpu_milli 1000; "
                               f"{count((g > 1) & (g != g.ceil())):,} pods asking more than one GPU but not a whole "
                               f"number are rounded up"),
        ("cpu_milli", "num_cpus x 1000 per instance; " + _nominal_cpu_rule(
            nominal_cpu, f"{count(pl.col('num_cpus').is_null()):,} pods without num_cpus and "
                         f"{count(_job_cpu_milli() < 1):,} whose request rounds below 1")),
        ("memory_mib", f"mem_gb (GiB) x 1024 per instance; 0 (no request) for {count(pl.col('mem_gb').is_null()):,} "
                       f"pods without mem_gb"),
        ("scheduled_time, deletion_time", f"creation + queue_s, + run_s, whole seconds; scheduled_time empty for "
                                          f"{count(pl.col('queue_s').is_null()):,} pods never started, deletion_time "
                                          f"empty for {count(pl.col('run_s').is_null()):,} pods without a run time; "
                                          f"{count((pl.col('queue_s') < 0) | (pl.col('run_s') < 0)):,} pods with a "
                                          f"negative queue or run time take it as 0"),
        ("pod_phase", "never started Pending; completed Succeeded, failed and cancelled Failed, running Running, "
                      f"pending Pending; empty for {count(pl.col('state').is_null()):,} pods without a state"),
        ("qos", "empty: the dataset records no quality-of-service class"),
        ("gpu_spec", "the job's gpu_type when the node list has GPUs of that model, else empty (any model); "
                     f"{count((g > 0) & pl.col('gpu_type').is_not_null()):,} GPU pods have a gpu_type"),
    ]


# -- nodes ---------------------------------------------------------------------------------------


def _built_nodes(groups: list[tuple[str | None, int]], pods: pl.DataFrame) -> list[tuple[int, int, int, str | None]]:
    """Nodes of `GPUS_PER_NODE` GPUs (the last of each group holding the remainder) for each
    (model, GPUs) group: (cpu_milli, memory_mib, gpus, model)."""
    cpu = max(NODE_CPU_MILLI, int(pods["cpu_milli"].max() or 0))
    memory = max(NODE_MEMORY_MIB, int(pods["memory_mib"].max() or 0))
    nodes = []
    for model, gpus in groups:
        for n in range(math.ceil(gpus / GPUS_PER_NODE)):
            nodes.append((cpu, memory, min(GPUS_PER_NODE, gpus - n * GPUS_PER_NODE), model))
    return nodes


def _capacity_groups(ctx: TraceContext) -> list[tuple[str | None, int]]:
    """(GPU type, GPUs) per cluster and GPU type of the preferred capacity source: the largest total
    over its intervals, summed over VCs."""
    rows = ctx.query("""
        WITH preferred AS (SELECT * FROM gpu_capacity WHERE gpus > 0
                           AND preference = (SELECT min(preference) FROM gpu_capacity WHERE gpus > 0)),
             totals AS (SELECT cluster, gpu_type, valid_from, sum(gpus) AS gpus FROM preferred
                        GROUP BY cluster, gpu_type, valid_from)
        SELECT cluster, gpu_type, max(gpus) AS gpus FROM totals GROUP BY cluster, gpu_type
        ORDER BY cluster NULLS FIRST, gpu_type NULLS FIRST""")
    return [(row["gpu_type"], int(row["gpus"])) for row in rows.to_dicts()]


def _option_groups(option: str) -> list[tuple[str | None, int]]:
    """(GPU model, GPUs) groups of `--option gpus=`: `N` (no model) or `MODEL:N,MODEL:N,...`."""
    groups: list[tuple[str | None, int]] = []
    for part in option.split(","):
        model, _, count = part.strip().rpartition(":")
        gpus = int(count) if count.strip().isdigit() else 0
        if gpus <= 0 or "|" in model:
            raise ExportError(f"--option gpus={option}: expected N or MODEL:N,MODEL:N,... with whole numbers of GPUs "
                              "above 0")
        groups.append((model.strip() or None, gpus))
    return groups


def _node_groups(request: ExportRequest) -> tuple[list[tuple[str | None, int]], str] | None:
    """The (GPU model, GPUs) groups nodes are built from and how, when the node list is built (not
    taken from `gpu_nodes`); `ExportError` when there is nothing to build it from."""
    ctx = request.ctx
    option = request.option("gpus", "")
    if option:
        return _option_groups(option), f"built from --option gpus={option}"
    if ctx.has_view("gpu_nodes"):
        return None
    if ctx.has_view("gpu_capacity") and (groups := _capacity_groups(ctx)):
        return groups, ("built from the dataset's GPU capacity (gpu_capacity: the preferred source, per cluster and "
                        "GPU type the largest documented total)")
    raise ExportError(f"dataset '{ctx.trace}': the dataset documents no nodes (no gpu_nodes or gpu_capacity); the "
                      "openb node list needs them: pass --option gpus=N (or MODEL:N,...) to build them as 8-GPU nodes")


def _nodes(request: ExportRequest, loss: LossReport, built: tuple[list[tuple[str | None, int]], str] | None,
           pods: pl.DataFrame) -> pl.DataFrame:
    """The node list (columns `NODE_FIELDS` but the names): the GPU nodes of `gpu_nodes`, or the
    nodes `built` from (GPU model, GPUs) groups, sized by the `pods`' largest requests."""
    ctx = request.ctx
    if built is None:
        nodes = ctx.query("SELECT * FROM gpu_nodes WHERE gpus > 0 ORDER BY node")
        cpu_only = ctx.one_row("SELECT count(*) AS n FROM gpu_nodes WHERE NOT gpus > 0")["n"]
        loss.filled.append(("sn", "the GPU nodes of the dataset's node list in name order, named <prefix>-node-NNNN "
                                  "from 0 (the release's GPU node list names its nodes so)"))
        loss.drop("nodes without GPUs (the node list the simulator runs with holds GPU nodes only)", cpu_only)
        return nodes.select(pl.col("cpu_milli"), pl.col("memory_mib"), pl.col("gpus").alias("gpu"),
                            pl.col("gpu_model").alias("model"))
    groups, how = built
    nodes = _built_nodes(groups, pods)
    loss.filled.append(("node list", f"{how}: nodes of {GPUS_PER_NODE} GPUs, the last of each GPU type holding "
                                     f"the remainder ({len(nodes):,} nodes), model the GPU type (empty when not per "
                                     f"type), cpu_milli and memory_mib the simulator's largest node spec "
                                     f"({NODE_CPU_MILLI} milli, {NODE_MEMORY_MIB} MiB) or the largest pod's request "
                                     f"if greater, so that GPUs bind first"))
    return pl.DataFrame(nodes, schema={"cpu_milli": pl.Int64, "memory_mib": pl.Int64, "gpu": pl.Int64,
                                       "model": pl.String}, orient="row")


# -- pods no node can hold -----------------------------------------------------------------------


def unplaceable_pods(pods: pl.DataFrame, nodes: pl.DataFrame) -> list[str]:
    """Names of the `pods` (columns of the pod list) that fit none of the `nodes` (columns of the
    node list), each node taken empty, by the simulator's filters: a GPU pod (num_gpu and gpu_milli above 0)
    needs a node with at least num_gpu GPUs whose model its gpu_spec (`|`-separated; empty: any)
    names; every pod needs cpu_milli and memory_mib within the node's."""
    shape = ["cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec"]
    shapes = pods.select(shape).unique()
    specs = nodes.select(pl.col("cpu_milli").alias("node_cpu"), pl.col("memory_mib").alias("node_memory"),
                         pl.col("gpu").alias("node_gpus"), pl.col("model").alias("node_model")).unique()
    wants_gpu = (pl.col("num_gpu") > 0) & (pl.col("gpu_milli") > 0)
    spec, node_model = pl.col("gpu_spec").fill_null(""), pl.col("node_model")
    named = spec.str.split("|").list.contains(node_model.fill_null("")).fill_null(False) & node_model.is_not_null()
    model_ok = (spec.str.replace_all("|", "", literal=True) == "") | named
    fits = ((pl.col("cpu_milli") <= pl.col("node_cpu")) & (pl.col("memory_mib") <= pl.col("node_memory"))
            & (~wants_gpu | ((pl.col("num_gpu") <= pl.col("node_gpus")) & model_ok)))
    placeable = shapes.join(specs, how="cross").filter(fits).select(shape).unique()
    return pods.join(placeable, on=shape, how="anti", nulls_equal=True, maintain_order="left")["name"].to_list()


def _record_unplaceable(pods: pl.DataFrame, nodes: pl.DataFrame, loss: LossReport) -> None:
    """Name in the loss report the pods no node can hold, with how many exceed every node in each
    dimension on its own."""
    names = unplaceable_pods(pods, nodes)
    if not names:
        return
    wants_gpu = (pl.col("num_gpu") > 0) & (pl.col("gpu_milli") > 0)
    models = sorted(set(nodes["model"].drop_nulls().to_list()))
    wanted = pl.col("gpu_spec").fill_null("").str.split("|").list.eval(pl.element().filter(pl.element() != ""))
    stuck = pods.filter(pl.col("name").is_in(names)).select(
        (wants_gpu & (pl.col("num_gpu") > (nodes["gpu"].max() or 0))).alias("gpus"),
        (pl.col("cpu_milli") > (nodes["cpu_milli"].max() or 0)).alias("cpu"),
        (pl.col("memory_mib") > (nodes["memory_mib"].max() or 0)).alias("memory"),
        (wants_gpu & (wanted.list.len() > 0)
         & (wanted.list.set_intersection(pl.lit(models, pl.List(pl.String))).list.len() == 0)).alias("model"))
    alone = stuck.select(pl.sum_horizontal(pl.all()) > 0).to_series().sum()
    counts = {column: int(stuck[column].sum()) for column in stuck.columns}
    rest = "; the others fit no single node in their combination" if len(names) > alone else ""
    loss.unusable[f"pods that fit no node, so the simulator can never place them: {counts['gpus']:,} ask more GPUs "
                  f"than the largest node holds, {counts['cpu']:,} more CPU, {counts['memory']:,} more memory, "
                  f"{counts['model']:,} a gpu_spec naming no model of the node list{rest}"] = names


# -- node YAML -----------------------------------------------------------------------------------


def yaml_scalar(text: str) -> str:
    """`text` as a YAML scalar every YAML 1.1 reader takes for that string: plain when it is a word
    that no reader resolves to a number, boolean or null, else quoted."""
    if re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]*", text) and text not in YAML_WORDS:
        return text
    if text.isprintable():
        return "'" + text.replace("'", "''") + "'"
    return json.dumps(text)


def node_documents(nodes: pl.DataFrame) -> str:
    """The node list (columns `NODE_FIELDS`) as the simulator's node YAML: one `kind: Node` document
    per node, as the release's `openb_node_list_gpu_node.yaml` writes them."""
    documents = []
    for name, cpu, memory, gpus, model in nodes.select(NODE_FIELDS).iter_rows():
        labels = ({GPU_MODEL_LABEL: yaml_scalar(model)} if model else {}) | {
            "beta.kubernetes.io/os": "linux", "kubernetes.io/hostname": yaml_scalar(name), "kubernetes.io/os": "linux"}
        resources = (f"    {GPU_COUNT}: '{gpus}'\n    {GPU_MILLI}: '{gpus * MILLI}'\n    cpu: {cpu}m\n"
                     f"    memory: {memory}Mi\n    pods: '{NODE_PODS}'\n")
        documents.append("apiVersion: v1\nkind: Node\nmetadata:\n  labels:\n"
                         + "".join(f"    {key}: {value}\n" for key, value in labels.items())
                         + f"  name: {yaml_scalar(name)}\nstatus:\n  allocatable:\n{resources}  capacity:\n{resources}")
    return "\n---\n\n".join(documents)


# -- writing -------------------------------------------------------------------------------------


def write_openb(request: ExportRequest, path: Path, loss: LossReport) -> Written:
    """Write the pod list to `path` and the node list beside it, as CSV and as the simulator's node
    YAML (and the id map for pods made from jobs)."""
    ctx = request.ctx
    prefix = _prefix(ctx)
    nominal_cpu = _nominal_cpu(request)
    node_path = _beside(path, "node_list", ".nodes.csv")
    yaml_path = _beside(path, "node_list", ".nodes.yaml")
    extra = [node_path, yaml_path]
    built = _node_groups(request)
    if ctx.has_view("gpu_tasks"):
        pods = _task_pods(ctx, loss, nominal_cpu)
    else:
        if built is None:
            models = set(ctx.query("SELECT DISTINCT gpu_model FROM gpu_nodes WHERE gpus > 0 AND gpu_model IS NOT NULL")
                         ["gpu_model"].to_list())
        else:
            models = {model for model, _ in built[0] if model}
        pods, ids = _job_pods(request, loss, prefix, models, nominal_cpu)
        id_path = _beside(path, "pod_ids", ".ids.csv")
        write_table(ids, id_path)
        extra.append(id_path)
    nodes = _nodes(request, loss, built, pods)
    nodes = nodes.with_columns(pl.Series("sn", _names(prefix, "node", nodes.height), pl.String)).select(NODE_FIELDS)
    _record_unplaceable(pods, nodes, loss)
    loss.filled.append(("node YAML", f"{yaml_path.name}: the node list as the simulator's kind: Node documents "
                                     f"(label {GPU_MODEL_LABEL}, capacity and allocatable {GPU_COUNT}, {GPU_MILLI}, "
                                     f"cpu, memory, pods {NODE_PODS}); put it and the pod YAML of the simulator's "
                                     "data/pod_csv_to_yaml.py in one folder, the cluster folder of its config"))
    write_table(pods.select(POD_FIELDS), path)
    write_table(nodes, node_path)
    write_text(yaml_path, node_documents(nodes))
    return Written(pods.height, extra)


FORMAT = ExportFormat(
    name="openb", title="Alibaba GPU trace v2023 node and pod lists (openb CSVs, node YAML)",
    consumer="the FGD simulator (hkust-adsl/kubernetes-scheduler-simulator): its data/pod_csv_to_yaml.py turns "
             "the pod list into pod YAML; the node YAML is the kind: Node documents it loads from a cluster folder, "
             "the node list its GPU node list",
    reference="alibaba/clusterdata cluster-trace-gpu-v2023 (openb_node_list_gpu_node.csv, "
              "openb_pod_list_default.csv); hkust-adsl/kubernetes-scheduler-simulator data/pod_csv_to_yaml.py, "
              "data/node_yaml/openb_node_list_gpu_node.yaml, pkg/simulator/utils.go GetObjectFromYamlContent",
    suffix=".csv", write=write_openb, rows_are="pods",
    options={"gpus": "the GPUs to build the node list from, as 8-GPU nodes: N (no model) or MODEL:N,MODEL:N,...; "
                     "needed when the dataset documents no nodes or capacity, used instead of them when given; "
                     "default: the documented ones",
             "cpu_milli": f"the CPU request, thousandths of a core, of a pod whose dataset records none (a whole "
                          f"number above 0; default {NOMINAL_CPU_MILLI}, Kubernetes' DefaultMilliCPURequest)"})
