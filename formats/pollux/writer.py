"""The workload CSV of the Pollux (OSDI 2021) and Sia (SOSP 2023) cluster simulators.

Format, as read by `petuum/adaptdl`'s `simulator/simulator.py` (the Pollux artifact: `pandas.read_csv`,
then one job per row of `itertuples()`) and by `siasosp23/artifacts`' `sia-simulator/multi_simulator.py`
and `sia-simulator/cluster.py` (the same reading), and as their workloads (`simulator/workloads/*.csv`,
`sia-simulator/workloads/*/*.csv`) are written: a comma-separated file with a header line and one line
per job,

    name,time,application,num_replicas,batch_size

- `name`: the job's name; Sia takes the text before its first `-` as the application, so names are
  `<application>-<number>`;
- `time`: submission, seconds on the simulator's clock (which starts at 0);
- `application`: one of the six applications both simulators model, from measured throughput and
  convergence: bert, cifar10, deepspeech2, imagenet, ncf, yolov3 (a job runs until its application
  reaches its target, so the trace's run time is not part of the format);
- `num_replicas`, `batch_size`: the GPUs and the total batch size the job asks for; read by the
  policies that take a job's request as given (Pollux's Tiresias and Optimus baselines, Sia's Gavel
  and fixed-size modes), while Pollux and Sia themselves choose both.
Both simulators read the same five columns (Sia also reads an optional `category` column, not written
here: without it every job is adaptive); the cluster size is a command-line setting of each, not a file.

How a canonical job becomes a line (each rule is also in the export's loss report):
- jobs in submission order; `name` is `<application>-<n>`, n the job's number in submission order among
  all the dataset's jobs (1..N, with gaps where jobs are dropped); `<file>.ids.csv` maps names back to
  job_id and cluster;
- `time`: whole seconds (rounded down) since the first submission among the jobs written;
- `application`: traces record no model. With `application=gputime` (the default), by the job's GPU
  time (num_gpus x run_s), in the buckets the two simulators' own workload generators use: under 1
  GPU-hour cifar10, under 10 deepspeech2, under 100 yolov3, else imagenet (the generators swap some
  of these for ncf or bert at random; this rule does not); a job without a run time (never started or
  still running) is then dropped. `application=<name>` gives every job that application;
- `num_replicas`: num_gpus, a part of a GPU counted as one GPU (rounded up), at most the application's
  largest count the simulators can model (64 replicas, the largest measured; and no fewer samples per
  replica than the smallest measured local batch: yolov3 16); jobs with no GPU (CPU-only) or no GPU
  count are dropped;
- `batch_size`: traces record none; the application's batch size in the simulators' own workloads
  (bert 384, cifar10 4096, deepspeech2 640, imagenet 3200, ncf 32768, yolov3 64).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ddlx.errors import UsageError
from ddlx.formats.jobs import ExportRequest, require_columns, write_id_map, write_table
from ddlx.formats.model import ExportFormat, LossReport, Written

#: Columns of a workload line, in order.
FIELDS: tuple[str, ...] = ("name", "time", "application", "num_replicas", "batch_size")
#: The applications both simulators model: application -> (batch size, most replicas).
#: Most replicas: min(64, batch size // the smallest local batch size measured for it).
APPLICATIONS: dict[str, tuple[int, int]] = {
    "bert": (384, 64), "cifar10": (4096, 64), "deepspeech2": (640, 64), "imagenet": (3200, 64),
    "ncf": (32768, 64), "yolov3": (64, 16),
}
#: The `application=gputime` rule: (upper bound of the job's GPU-hours, application), in order; then imagenet.
GPU_TIME_BUCKETS: tuple[tuple[float, str], ...] = ((1.0, "cifar10"), (10.0, "deepspeech2"), (100.0, "yolov3"))
LONGEST = "imagenet"
BY_GPU_TIME = "gputime"

OPTIONS: dict[str, str] = {
    "application": f"'{BY_GPU_TIME}' (default: by the job's GPU time, <1 GPU-hour cifar10, <10 deepspeech2, "
                   f"<100 yolov3, else imagenet) or one of {', '.join(APPLICATIONS)} for every job",
}


def _application_rule(request: ExportRequest) -> str:
    rule = request.option("application", BY_GPU_TIME)
    if rule != BY_GPU_TIME and rule not in APPLICATIONS:
        raise UsageError(f"--option application={rule!r}: expected {BY_GPU_TIME} or one of "
                         f"{', '.join(APPLICATIONS)}")
    return rule


def _by_gpu_time() -> pl.Expr:
    hours = pl.col("num_gpus") * pl.col("run_s") / 3600
    expr = pl.when(hours < GPU_TIME_BUCKETS[0][0]).then(pl.lit(GPU_TIME_BUCKETS[0][1]))
    for bound, application in GPU_TIME_BUCKETS[1:]:
        expr = expr.when(hours < bound).then(pl.lit(application))
    return expr.otherwise(pl.lit(LONGEST))


def workload_lines(request: ExportRequest, loss: LossReport) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The workload lines (FIELDS) of the request's jobs and the id map (name, job_id, cluster)."""
    rule = _application_rule(request)
    jobs = request.jobs(loss)
    require_columns(jobs, "pollux", {"num_gpus": "each job's GPUs (num_replicas)"})
    if rule == BY_GPU_TIME:
        require_columns(jobs, "pollux", {"run_s": "the GPU time that chooses each job's application; or give "
                                                  "--option application=<name>"})
    gpus, run = pl.col("num_gpus"), pl.col("run_s")
    kept = loss.keep(jobs, gpus.is_not_null(), "no GPU count (the simulators run GPU jobs only)")
    kept = loss.keep(kept, gpus > 0, "CPU-only job, 0 GPUs (the simulators run GPU jobs only)")
    if rule == BY_GPU_TIME:
        kept = loss.keep(kept, run >= 0, "no run time: never started or still running (application=gputime "
                                         "needs the job's GPU time)").with_columns(_by_gpu_time().alias("application"))
    else:
        kept = kept.with_columns(pl.lit(rule).alias("application"))
    batch = {name: size for name, (size, _) in APPLICATIONS.items()}
    most = {name: limit for name, (_, limit) in APPLICATIONS.items()}
    kept = kept.with_columns(
        gpus.ceil().cast(pl.Int64).alias("gpus_whole"),
        pl.col("application").replace_strict(most, return_dtype=pl.Int64).alias("most_replicas"))
    origin = int(kept["submit_s"].min() // 1) if kept.height else 0
    lines = kept.select(
        pl.concat_str([pl.col("application"), pl.col("seq").cast(pl.String)], separator="-").alias("name"),
        (pl.col("submit_s").floor() - origin).cast(pl.Int64).alias("time"),
        "application",
        pl.min_horizontal("gpus_whole", "most_replicas").alias("num_replicas"),
        pl.col("application").replace_strict(batch, return_dtype=pl.Int64).alias("batch_size"),
    )
    _record_losses(kept, lines, loss, rule)
    ids = pl.DataFrame({"name": lines["name"], "job_id": kept["job_id"], "cluster": kept["cluster"]})
    return lines, ids


def _record_losses(kept: pl.DataFrame, lines: pl.DataFrame, loss: LossReport, rule: str) -> None:
    fractional = kept.filter(pl.col("num_gpus") != pl.col("num_gpus").ceil()).height
    capped = kept.filter(pl.col("gpus_whole") > pl.col("most_replicas")).height
    counts = lines.group_by("application").len().sort("application")
    spread = ", ".join(f"{name} {n:,}" for name, n in counts.iter_rows()) or "no jobs"
    if rule == BY_GPU_TIME:
        chosen = ("by GPU time (num_gpus x run_s): under 1 GPU-hour cifar10, under 10 deepspeech2, under 100 "
                  f"yolov3, else imagenet (option application): {spread}")
    else:
        chosen = f"{rule} for every job (option application): {spread}"
    loss.without_place += [
        ("job_id", "replaced by the name <application>-<number in submission order>; <file>.ids.csv maps it back"),
        ("run_s, end_time, state", "the simulators run a job until its application reaches its target; the "
                                   "trace's run time only chooses the application (application=gputime)"),
        ("user, vc, job_group, cluster, queue_s, num_cpus, mem_gb, gpu_type, workload, job_name",
         "no column in the workload: left out"),
        ("sub-second times", "time is written in whole seconds"),
    ]
    loss.filled += [
        ("application", f"traces record no model; {chosen}"),
        ("num_replicas", f"GPUs of the job; a part of a GPU counts as one GPU ({fractional:,} jobs); at most the "
                         f"application's largest modelled count, 64 (yolov3 16): {capped:,} jobs capped"),
        ("batch_size", "traces record none; the application's batch size in the simulators' own workloads: "
                       + ", ".join(f"{name} {size}" for name, (size, _) in APPLICATIONS.items())),
    ]


def write_workload(request: ExportRequest, path: Path, loss: LossReport) -> Written:
    """Write the request's jobs as a Pollux/Sia workload to `path` and their id map beside it."""
    lines, ids = workload_lines(request, loss)
    write_table(lines, path)
    id_map = write_id_map(ids, path)
    return Written(lines.height, [id_map])


FORMAT = ExportFormat(
    name="pollux", title="Pollux and Sia simulator workload (CSV)",
    consumer="the Pollux cluster simulator (petuum/adaptdl, simulator/simulator.py) and the Sia simulator "
             "(siasosp23/artifacts, sia-simulator/multi_simulator.py)",
    reference="petuum/adaptdl simulator/simulator.py and simulator/workloads/*.csv; siasosp23/artifacts "
              "sia-simulator/cluster.py and sia-simulator/workloads/*/*.csv",
    suffix=".csv", write=write_workload, options=OPTIONS)
