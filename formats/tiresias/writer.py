"""The job trace and cluster spec of the Tiresias GPU cluster simulator (Gu et al., NSDI 2019).

Format, as read by `SymbioticLab/Tiresias`'s `simulator/run_sim.py` (`parse_job_file`, `parse_cluster_spec`)
and `simulator/jobs.py` (`add_job`), and as its sample traces (`simulator/60_job.csv`) and specs
(`simulator/n32g4.csv`) are written: a comma-separated file with a header line and one line per job,

    job_id,num_gpu,submit_time,iterations,model_name,duration,interval

read with `csv.DictReader`; every field whose text passes `str.isdigit()` becomes an `int`, the rest
stay text, and `duration` goes through `int(float(...))`. So every number here is a non-negative
integer written without a decimal point (`8`, never `8.0`, never empty). Times are seconds on the
simulator's clock, which starts at 0; the simulator sorts jobs by `submit_time`. The cluster spec is a
second CSV with one line after its header,

    num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node

(each read with `int()`; memory in GB), given to the simulator as `--cluster_spec`. It is written beside
the job file as `<name>.cluster_spec.csv`; the job file as `--trace_file`. A file named `*.txt` is read
as space-separated by the simulator, so the job file must not be named so.

How a canonical job becomes a line (each rule is also in the export's loss report):
- jobs in submission order; `job_id` is the job's number in submission order among all the dataset's
  jobs (1..N, with gaps where jobs are dropped); `<file>.ids.csv` maps it back to job_id and cluster;
- `submit_time`: whole seconds (rounded down) since the first submission among the jobs written;
- `num_gpu`: num_gpus, a part of a GPU counted as one GPU (rounded up); jobs with no GPU (CPU-only)
  or no GPU count are dropped: the simulator places GPU jobs only;
- `duration`: run_s (first start to last end) rounded to whole seconds, at least 1 s; a job without a
  run time (never started or still running) is dropped; failed and cancelled jobs that ran are kept
  with the time they held their GPUs;
- `model_name`: traces record no model; every job gets the `model` option, one of the nine models
  the simulator knows (`resnet50` by default; it sizes only the job's network traffic);
- `iterations`: not recorded, and not read by the simulator's schedulers: 0;
- `interval`: seconds from the job's submission to the next job's (0 for the last);
- cluster spec: one switch (traces record no racks; the simulator's placement takes a job's GPUs from
  one switch); GPUs per node (`gpus_per_node`) the most common count among the dataset's GPU nodes
  (`gpu_nodes` view), else 8; nodes (`nodes`) enough for the GPUs of those nodes, else for the largest
  GPU total of the `gpu_capacity` view, else for the largest job; CPUs per node 6 per GPU (the simulator
  reserves 2 cores per worker and 4 per parameter server); memory per node enough for the largest job
  under the simulator's memory model ((11 + 0.1 x the job's GPUs) GB per GPU), at least 256 GB; jobs
  with more GPUs than the spec holds are dropped.
"""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.errors import UsageError
from ddlx.formats.jobs import ExportRequest, documented_gpus, require_columns, write_id_map, write_table
from ddlx.formats.model import ExportError, ExportFormat, LossReport, Written

#: Columns of the job file, in order.
FIELDS: tuple[str, ...] = ("job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval")
#: Columns of the cluster spec, in order.
SPEC_FIELDS: tuple[str, ...] = ("num_switch", "num_node_p_switch", "num_gpu_p_node", "num_cpu_p_node", "mem_p_node")
#: The models the simulator knows (any other name falls back to its last one).
MODELS: tuple[str, ...] = ("vgg19", "vgg16", "vgg11", "alexnet", "resnet152", "resnet101", "resnet50",
                           "inception4", "inception3")
DEFAULT_MODEL = "resnet50"
#: GPUs per node when the dataset lists no nodes.
DEFAULT_GPUS_PER_NODE = 8
#: CPU cores the simulator's placement reserves per GPU: 2 for the worker, 4 for its parameter server.
CPUS_PER_GPU = 6
#: Memory per node (GB) of the spec files the simulator ships, the least a node gets here.
MIN_MEM_GB = 256

OPTIONS: dict[str, str] = {
    "model": f"model_name of every job, one of {', '.join(MODELS)} (default {DEFAULT_MODEL})",
    "nodes": "nodes of the cluster spec (default: enough for the dataset's GPU nodes or documented GPU capacity, "
             "else for the largest job)",
    "gpus_per_node": f"GPUs per node (default: the most common among the dataset's GPU nodes, else "
                     f"{DEFAULT_GPUS_PER_NODE})",
    "cpus_per_node": f"CPU cores per node (default {CPUS_PER_GPU} per GPU, what the simulator reserves per GPU)",
    "mem_per_node": f"memory per node, GB (default: enough for the largest job under the simulator's memory model, "
                    f"at least {MIN_MEM_GB})",
}


def _positive(request: ExportRequest, name: str) -> int | None:
    """The option `name` as a positive integer, None when not given."""
    text = request.options.get(name)
    if text is None:
        return None
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"--option {name}={text!r}: expected a positive whole number")
    return int(text)


def _model(request: ExportRequest) -> str:
    model = request.option("model", DEFAULT_MODEL)
    if model not in MODELS:
        raise UsageError(f"--option model={model!r}: the Tiresias simulator knows {', '.join(MODELS)}")
    return model


def _node_shape(ctx: TraceContext) -> tuple[int, int] | None:
    """(most common GPUs per GPU node, GPUs of all GPU nodes) from the gpu_nodes view, if the dataset has one."""
    if not ctx.has_view("gpu_nodes"):
        return None
    row = ctx.one_row("""SELECT (SELECT gpus FROM gpu_nodes WHERE gpus > 0 GROUP BY gpus
                                 ORDER BY count(*) DESC, gpus DESC LIMIT 1) AS per_node,
                                (SELECT sum(gpus) FROM gpu_nodes WHERE gpus > 0) AS total""")
    if row["per_node"] is None:
        return None
    return int(row["per_node"]), int(row["total"])


def cluster_spec(request: ExportRequest, largest_job: int) -> tuple[dict[str, int], str]:
    """The spec (SPEC_FIELDS -> value) and where its size comes from, for jobs of at most `largest_job` GPUs."""
    nodes, per_node = _positive(request, "nodes"), _positive(request, "gpus_per_node")
    shape = _node_shape(request.ctx)
    capacity = None if shape else documented_gpus(request.ctx)
    per_node = per_node or (shape[0] if shape else DEFAULT_GPUS_PER_NODE)
    if nodes:
        source = "the nodes option"
    elif shape:
        nodes, source = math.ceil(shape[1] / per_node), f"the dataset's GPU nodes ({shape[1]:,} GPUs)"
    elif capacity:
        nodes, source = math.ceil(capacity / per_node), f"the dataset's documented GPU capacity ({capacity:,} GPUs)"
    else:
        nodes, source = max(1, math.ceil(largest_job / per_node)), f"the largest job ({largest_job:,} GPUs)"
    cpus = _positive(request, "cpus_per_node") or CPUS_PER_GPU * per_node
    memory = _positive(request, "mem_per_node") or max(MIN_MEM_GB, math.ceil((11 + 0.1 * largest_job) * per_node))
    spec = dict(zip(SPEC_FIELDS, (1, nodes, per_node, cpus, memory), strict=True))
    return spec, source


def tiresias_jobs(request: ExportRequest, loss: LossReport) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, int]]:
    """The job lines (FIELDS), the id map (job, job_id, cluster) and the cluster spec of the request's jobs."""
    model = _model(request)
    for name in ("nodes", "gpus_per_node", "cpus_per_node", "mem_per_node"):
        _positive(request, name)
    jobs = request.jobs(loss)
    require_columns(jobs, "tiresias", {"num_gpus": "each job's GPUs", "run_s": "each job's duration"})
    gpus, run = pl.col("num_gpus"), pl.col("run_s")
    placed = loss.keep(jobs, gpus.is_not_null(), "no GPU count (the simulator places GPU jobs only)")
    placed = loss.keep(placed, gpus > 0, "CPU-only job, 0 GPUs (the simulator places GPU jobs only)")
    placed = loss.keep(placed, run >= 0, "no run time: never started or still running (the simulator needs each "
                                         "job's duration)").with_columns(gpus.ceil().cast(pl.Int64).alias("num_gpu"))
    largest = int(placed["num_gpu"].max() or 1) if placed.height else 1
    spec, source = cluster_spec(request, largest)
    room = spec["num_node_p_switch"] * spec["num_gpu_p_node"]
    kept = loss.keep(placed, pl.col("num_gpu") <= room, f"more GPUs than the cluster spec holds ({room:,})")
    origin = int(kept["submit_s"].min() // 1) if kept.height else 0
    submit = (pl.col("submit_s").floor() - origin).cast(pl.Int64)
    lines = kept.select(
        pl.col("seq").alias("job_id"), "num_gpu", submit.alias("submit_time"), pl.lit(0, pl.Int64).alias("iterations"),
        pl.lit(model).alias("model_name"),
        pl.max_horizontal(run.round(0), pl.lit(1.0)).cast(pl.Int64).alias("duration"),
    ).with_columns((pl.col("submit_time").shift(-1) - pl.col("submit_time")).fill_null(0).alias("interval"))
    _record_losses(kept, loss, model, spec, source)
    ids = kept.select(pl.col("seq").alias("job"), "job_id", "cluster")
    return lines.select(FIELDS), ids, spec


def _record_losses(kept: pl.DataFrame, loss: LossReport, model: str, spec: dict[str, int], source: str) -> None:
    fractional = kept.filter(pl.col("num_gpus") != pl.col("num_gpus").ceil()).height
    short = kept.filter(pl.col("run_s") < 0.5).height
    loss.without_place += [
        ("job_id", "replaced by the job's number in submission order (1..N); <file>.ids.csv maps it back"),
        ("user, vc, job_group, cluster, state, queue_s, num_cpus, mem_gb, gpu_type, workload, job_name",
         "no field in the Tiresias trace: left out"),
        ("sub-second times", "submit_time and duration are written in whole seconds"),
    ]
    loss.filled += [
        ("num_gpu", f"GPUs of the job; a part of a GPU counts as one GPU ({fractional:,} jobs)"),
        ("duration", f"run_s rounded to whole seconds, at least 1 s ({short:,} jobs ran under half a second); "
                     "failed and cancelled jobs that ran are replayed for the time they ran"),
        ("model_name", f"{model} for every job (option model): traces record no model"),
        ("iterations", "0: not recorded, and not read by the simulator's schedulers"),
        ("interval", "seconds from the job's submission to the next job's; 0 for the last"),
        ("cluster spec", f"{spec['num_node_p_switch']:,} nodes of {spec['num_gpu_p_node']} GPUs under one switch, "
                         f"sized from {source}; {spec['num_cpu_p_node']} CPU cores and {spec['mem_p_node']} GB "
                         "per node from the simulator's own needs per GPU (options cpus_per_node, mem_per_node)"),
    ]


def spec_path(path: Path) -> Path:
    """Where the cluster spec of the job file `path` goes: `<name without suffix>.cluster_spec.csv` beside it."""
    return path.with_name(f"{path.stem}.cluster_spec.csv")


def write_tiresias(request: ExportRequest, path: Path, loss: LossReport) -> Written:
    """Write the request's jobs as a Tiresias trace to `path`, its cluster spec and its id map beside it."""
    if path.name.endswith(".txt"):
        raise ExportError(f"{path}: the Tiresias simulator reads a *.txt trace as space-separated; name the file "
                          "*.csv")
    spec_file = spec_path(path)
    if spec_file == path:
        raise ExportError(f"{path}: that is where the cluster spec of the trace goes; name the trace otherwise")
    lines, ids, spec = tiresias_jobs(request, loss)
    write_table(lines, path)
    write_table(pl.DataFrame([spec], schema={name: pl.Int64 for name in SPEC_FIELDS}), spec_file)
    return Written(lines.height, [spec_file, write_id_map(ids, path)])


FORMAT = ExportFormat(
    name="tiresias", title="Tiresias simulator job trace and cluster spec (CSV)",
    consumer="the Tiresias GPU cluster simulator (SymbioticLab/Tiresias, simulator/run_sim.py)",
    reference="SymbioticLab/Tiresias: simulator/run_sim.py and jobs.py (readers), 60_job.csv and n32g4.csv "
              "(sample trace and cluster spec)",
    suffix=".csv", write=write_tiresias, options=OPTIONS)
