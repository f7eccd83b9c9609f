"""The job CSV of the scheduling simulator shipped with Alibaba's PAI v2020 release (`pai-sim`).

Read by `alibaba/clusterdata`'s `cluster-trace-gpu-v2020/simulator/simulator.py` (`Simulator.add_job`, a
`csv.DictReader` over a comma-separated file with a header line) and `.../simulator/utils.py` (`_add_job`);
the scheduler (`scheduler.py`) and cluster (`cluster.py`) then use the values so parsed:

- a value made of digits only (`str.isdigit()`) becomes an integer, in every column but `user`; so an
  all-digit job id loses its leading zeros, and ids of mixed kinds (numbers and text) cannot be sorted
  (the scheduler sorts by `(..., job_id)`; its job statistics store job_id in an integer array);
- `num_gpu`, `num_cpu`: GPUs and CPU cores of ONE instance, read as `round(100 * value)` (hundredths);
  an empty field is 0; the simulator asks `num_inst * num_gpu` GPUs for the job (gang scheduling);
- `num_inst` (instances; empty = 1) and `submit_time` (s) are rounded to integers; `duration` (s) is
  truncated to an integer, at least 1;
- `user_dur`, `user_gpu_dur`, `group_dur`, `group_gpu_dur` are read with `float()`: the policies SJU,
  SJG and SJGG order the queue by `user_dur`, `group_dur` and `group_gpu_dur` (s); an empty or
  non-numeric value stays text and breaks that sort. SJF orders by `duration`, FIFO by `submit_time`;
- `gpu_type` is read only with GPU-type matching on (its node types: CPU, MISC, T4, P100, V100).

The loader reads columns by header name, so their order is free; ddlx writes
`job_id,user,gpu_type,num_gpu,num_cpu,num_inst,submit_time,duration,user_dur,user_gpu_dur,group_dur,group_gpu_dur`.

How a canonical job becomes a row (each rule is also in the export's loss report):
- only jobs with a run time above 0 (the simulator replays `duration`; counted when dropped), and
  with a known GPU count (an empty num_gpu would read as a CPU-only job; counted when dropped);
  rows in submission order (then cluster and job id);
- job_id: 1..N in that order, integers, so every id survives the digit conversion and sorts; the
  dataset's ids go to `<file>.ids.csv` (job_id, original_job_id, cluster);
- num_inst = num_instances, 1 when unknown or 0; num_gpu = num_gpus / num_inst and num_cpu =
  num_cpus / num_inst, per instance, in GPUs and cores (fractions allowed: the simulator counts
  hundredths). A share that is not a whole number of hundredths is rounded UP to the next hundredth,
  so the simulator's demand num_inst x num_gpu never falls short of the job's total and exceeds it
  by less than 0.01 per instance (the jobs are counted). Unknown CPUs are written 0 (the simulator
  reads an empty field the same way). A CPU-only job has num_gpu 0 and is replayed on CPUs;
- gpu_type: the recorded GPU model; `CPU` for a job without GPUs; `MISC` when the model is unknown;
- user: the dataset's user, empty when unknown;
- submit_time: whole seconds since the first written job's submission; duration: run_s in whole
  seconds (rounded), at least 1;
- user_dur, group_dur: the job's user and group history medians as `ddlx predict` defines them
  (`predict.history`: median run time of the jobs of the same (cluster, user) or (cluster, group)
  that ended strictly before the job's submission); without history, the median run time of all
  written jobs. With `--predictions`, user_gpu_dur and group_gpu_dur carry the model's estimate
  (estimate_s), so one run of the release's `run_simulator.py` compares SJF (the real run time),
  SJU and SJG (history medians), SJGG (the model) and FIFO; a job without a prediction gets its
  group_dur there (counted). Without `--predictions` they repeat group_dur. All in whole seconds;
- integral values are written as integers (`8`, never `8.0`); no field is left empty but user.

The size of the simulated cluster is a setting of the run, not of the file: the loss report gives the
largest job's GPUs and CPUs. The simulator cuts a per-instance request above the cluster's total down
to it, but a job of several instances larger than the cluster is never placed and the run does not end.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ddlx.formats.jobs import ExportRequest, integral, require_columns, write_id_map, write_table
from ddlx.formats.model import ExportFormat, LossReport, Written

#: Columns of the job CSV, in the order ddlx writes them.
COLUMNS: tuple[str, ...] = ("job_id", "user", "gpu_type", "num_gpu", "num_cpu", "num_inst", "submit_time",
                            "duration", "user_dur", "user_gpu_dur", "group_dur", "group_gpu_dur")
#: The simulator reads num_gpu and num_cpu in hundredths of a GPU or core.
RESOLUTION = 100


def per_instance(total: pl.Expr, instances: pl.Expr) -> pl.Expr:
    """`total / instances`, rounded up to the simulator's hundredth (GPUs or cores per instance)."""
    hundredths = (total * RESOLUTION / instances).round(6).ceil()  # round(6): 0.07 * 100 is 7.000000000000001
    return hundredths / RESOLUTION


def number_text(expr: pl.Expr) -> pl.Expr:
    """A number as text: whole values as integers (`8`, never `8.0`), others as decimals."""
    return (pl.when(expr == expr.round(0)).then(expr.cast(pl.Int64).cast(pl.String))
            .otherwise(expr.cast(pl.String)))


def history_medians(request: ExportRequest) -> pl.DataFrame:
    """cluster, job_id, user_hist_median_s and group_hist_median_s (s) of every job of the dataset,
    as `ddlx predict` computes them (NULL without history)."""
    from ddlx.predict.features import trace_features

    ctx = request.ctx
    features = trace_features(ctx.con, ctx.jobs, None, ctx.trace)
    return features.select(pl.col("cluster").cast(pl.String), pl.col("job_id").cast(pl.String),
                           "user_hist_median_s", "group_hist_median_s")


def pai_sim_rows(request: ExportRequest, loss: LossReport) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The rows of the job CSV (`COLUMNS`, numbers as text) and the id map (job_id, original_job_id, cluster)."""
    jobs = request.jobs(loss)
    require_columns(jobs, "pai-sim", {"num_gpus": "the simulator places jobs by their GPUs",
                                      "run_s": "the simulator replays each job's run time"})
    jobs = loss.keep(jobs, pl.col("run_s").is_not_null() & (pl.col("run_s") > 0),
                     "no run time above 0 (the simulator replays each job's run time)")
    jobs = loss.keep(jobs, pl.col("num_gpus").is_not_null(),
                     "GPUs unknown (the simulator would read an empty num_gpu as a CPU-only job)").with_columns(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("number"),
        pl.when(pl.col("num_instances") >= 1).then(pl.col("num_instances")).otherwise(1).cast(pl.Int64)
          .alias("inst"))
    medians = history_medians(request)
    fallback = float(jobs["run_s"].median()) if jobs.height else 0.0
    jobs = jobs.with_columns(pl.col("cluster").fill_null("").alias("_cluster")).join(
        medians.rename({"cluster": "_cluster"}), on=["_cluster", "job_id"], how="left", maintain_order="left")
    origin = jobs["submit_s"].min() if jobs.height else 0.0
    gpus = per_instance(pl.col("num_gpus"), pl.col("inst"))
    cpus = per_instance(pl.col("num_cpus").fill_null(0), pl.col("inst"))
    user_dur = pl.col("user_hist_median_s").fill_null(fallback)
    group_dur = pl.col("group_hist_median_s").fill_null(fallback)
    model = pl.col("estimate_s").fill_null(group_dur) if request.predictions is not None else group_dur
    values = jobs.select(
        pl.col("number").alias("job_id"), pl.col("user"),  # unknown: an empty field
        pl.when(pl.col("num_gpus") == 0).then(pl.lit("CPU")).otherwise(pl.col("gpu_type").fill_null("MISC"))
          .alias("gpu_type"),
        gpus.alias("num_gpu"), cpus.alias("num_cpu"), pl.col("inst").alias("num_inst"),
        integral(pl.col("submit_s") - origin).alias("submit_time"),
        pl.max_horizontal(integral(pl.col("run_s")), pl.lit(1)).alias("duration"),
        integral(user_dur).alias("user_dur"), integral(model).alias("user_gpu_dur"),
        integral(group_dur).alias("group_dur"), integral(model).alias("group_gpu_dur"))
    _record_losses(jobs, values, loss, request.predictions is not None, fallback)
    rows = values.with_columns(number_text(pl.col("num_gpu")), number_text(pl.col("num_cpu"))).select(COLUMNS)
    ids = jobs.select(pl.col("number").alias("job_id"), pl.col("job_id").alias("original_job_id"), "cluster")
    return rows, ids


def _record_losses(jobs: pl.DataFrame, values: pl.DataFrame, loss: LossReport, with_model: bool,
                   fallback: float) -> None:
    def count(frame: pl.DataFrame, expr: pl.Expr) -> int:
        return frame.filter(expr).height

    gpus_up = count(jobs.with_columns(values["num_gpu"].alias("_g")),
                    (pl.col("_g") * pl.col("inst") - pl.col("num_gpus")).abs() > 1e-9)
    cpus_up = count(jobs.with_columns(values["num_cpu"].alias("_c")),
                    (pl.col("_c") * pl.col("inst") - pl.col("num_cpus").fill_null(0)).abs() > 1e-9)
    no_instances = count(jobs, pl.col("num_instances").is_null() | (pl.col("num_instances") < 1))
    no_cpus = count(jobs, pl.col("num_cpus").is_null())
    no_type = count(jobs, (pl.col("num_gpus") > 0) & pl.col("gpu_type").is_null())
    no_user = count(jobs, pl.col("user").is_null())
    no_user_history = count(jobs, pl.col("user_hist_median_s").is_null())
    no_group_history = count(jobs, pl.col("group_hist_median_s").is_null())
    demand = values.select((pl.col("num_gpu") * pl.col("num_inst")).max().alias("gpus"),
                           (pl.col("num_cpu") * pl.col("num_inst")).max().alias("cpus")).row(0)
    loss.without_place += [
        ("job_id", "replaced by the job's number in submission order (1..N, integers the simulator keeps); "
                   "<file>.ids.csv maps it back to the dataset's id and cluster"),
        ("cluster, vc, job_group, job_name, workload, state, queue_s, mem_gb, start and end times",
         "no column in the simulator's job file: left out"),
        ("cluster size", f"a setting of the simulator's run, not of the file: the largest job asks "
                         f"{demand[0] or 0:g} GPUs and {demand[1] or 0:g} CPU cores; a job of several instances "
                         "larger than the simulated cluster is never placed"),
    ]
    no_prediction = count(jobs, pl.col("estimate_s").is_null())
    estimate = (f"the model's estimate (estimate_s, whole seconds); the job's group_dur when it has no "
                f"prediction ({no_prediction:,} written jobs)" if with_model else "group_dur (no --predictions given)")
    loss.filled += [
        ("num_gpu, num_cpu", f"per instance: the job's GPUs and CPU cores divided by num_inst, rounded up to "
                             f"a hundredth (the simulator's unit) where they do not divide: {gpus_up:,} jobs' "
                             f"GPUs, {cpus_up:,} jobs' CPUs; unknown CPUs written 0 ({no_cpus:,} jobs)"),
        ("num_inst", f"num_instances; 1 when unknown or 0 ({no_instances:,} jobs)"),
        ("gpu_type", f"the recorded GPU model; CPU for a job without GPUs; MISC when unknown ({no_type:,} jobs)"),
        ("user", f"the dataset's user; empty when unknown ({no_user:,} jobs)"),
        ("submit_time, duration", "whole seconds: submission since the first written job's, run_s rounded "
                                  "(at least 1)"),
        ("user_dur, group_dur", "median run time (s) of the same user's / group's jobs that ended before the "
                                f"job's submission (predict.history); without history, the median run time of "
                                f"all written jobs, {fallback:,.0f} s ({no_user_history:,} jobs' user_dur, "
                                f"{no_group_history:,} jobs' group_dur)"),
        ("user_gpu_dur, group_gpu_dur", estimate),
    ]


def write_pai_sim(request: ExportRequest, path: Path, loss: LossReport) -> Written:
    """Write the request's jobs as the simulator's job CSV to `path` and their id map beside it."""
    rows, ids = pai_sim_rows(request, loss)
    write_table(rows, path)
    id_map = write_id_map(ids, path)
    return Written(rows.height, [id_map])


FORMAT = ExportFormat(
        name="pai-sim", title="job CSV of the PAI v2020 release's scheduling simulator",
        consumer="the GPU-cluster scheduling simulator of Alibaba's cluster-trace-gpu-v2020 (SJF, SJU, SJG, "
                 "SJGG, FIFO)",
        reference="alibaba/clusterdata, cluster-trace-gpu-v2020/simulator/simulator.py (Simulator.add_job) "
                  "and utils.py (_add_job)",
        suffix=".csv", write=write_pai_sim, carries_estimate=True)
