"""The Standard Workload Format (SWF 2.2) of the Parallel Workloads Archive, as HPC schedulers,
their simulators and Batsim read it.

Format (Feitelson et al., "Experience with using the Parallel Workloads Archive", JPDC 2014, and
the archive's format page): header comment lines `; Label: value`, then one line per job of 18
whitespace-separated integers, -1 where a value is unknown:

 1 job number          2 submit time (s)       3 wait time (s)        4 run time (s)
 5 allocated procs     6 average CPU time      7 used memory (KB/proc) 8 requested procs
 9 requested time (s) 10 requested memory (KB/proc) 11 status (1 completed, 0 failed, 5 cancelled)
12 user id            13 group id             14 executable number   15 queue number
16 partition number   17 preceding job        18 think time

How a canonical job becomes a line (each rule is also in the export's loss report):
- jobs in submission order (then cluster and job id); job number 1..N; the original ids go to `<file>.ids.csv`;
- submit time: whole seconds since the first submission, whose Unix time is `UnixStartTime`;
- wait = queue_s, run = run_s, rounded to whole seconds; -1 without one (still running, never
  started; a negative run time too);
- processors are GPUs (the GPU-as-processor convention, stated in the header): num_gpus, a part of
  a GPU counted as one GPU (rounded up); 0 for a CPU-only job; -1 when unknown;
- requested memory: mem_gb in KB per processor (per job for a CPU-only job);
- requested time: the model's estimate with `--predictions` (whole seconds), else -1;
- status from the canonical state: completed 1, failed 0, cancelled 5, else -1;
- user, executable (recurring job group), queue (virtual cluster) and partition (cluster) are
  numbered 1.. in order of first submission; the sidecar maps them back to the names.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.formats.jobs import ExportRequest, documented_gpus, integral, write_id_map, write_text
from ddlx.formats.model import ExportFormat, LossReport, Written

#: SWF status codes of the canonical states that have one.
STATUS: dict[str, int] = {"completed": 1, "failed": 0, "cancelled": 5}
#: Columns of a job line, in order.
FIELDS: tuple[str, ...] = (
    "job", "submit", "wait", "run", "allocated_procs", "avg_cpu_time", "used_memory", "requested_procs",
    "requested_time", "requested_memory", "status", "user", "group", "executable", "queue", "partition",
    "preceding_job", "think_time")
#: Categorical fields numbered 1.. in order of first submission: SWF field -> canonical column.
NUMBERED: dict[str, str] = {"user": "user", "executable": "job_group", "queue": "vc", "partition": "cluster"}


def _numbering(frame: pl.DataFrame, column: str) -> dict[str, int]:
    """Names of `column` numbered 1.. in order of first appearance in `frame` (already ordered)."""
    names = frame.get_column(column).drop_nulls().unique(maintain_order=True).to_list()
    return {str(name): number for number, name in enumerate(names, 1)}


def swf_lines(request: ExportRequest, loss: LossReport) -> tuple[list[str], pl.DataFrame, dict[str, dict[str, int]]]:
    """The header and job lines of the request's jobs, the id map (job number, job_id, cluster) and the
    numberings of users, executables, queues and partitions."""
    jobs = request.jobs(loss)
    ctx = request.ctx
    origin = int(jobs["submit_s"].min() // 1) if jobs.height else 0
    numbering = {field: _numbering(jobs, column) for field, column in NUMBERED.items()}
    gpus = pl.col("num_gpus")
    procs = (pl.when(gpus.is_null()).then(-1).when(gpus == 0).then(0).otherwise(gpus.ceil()).cast(pl.Int64))
    whole = lambda column: integral(pl.col(column))  # noqa: E731
    lines = jobs.select(
        pl.col("seq").alias("job"),
        (pl.col("submit_s") - origin).floor().cast(pl.Int64).alias("submit"),
        pl.when(pl.col("queue_s") >= 0).then(whole("queue_s")).otherwise(-1).alias("wait"),
        pl.when(pl.col("run_s") >= 0).then(whole("run_s")).otherwise(-1).alias("run"),
        procs.alias("allocated_procs"),
        pl.lit(-1).alias("avg_cpu_time"), pl.lit(-1).alias("used_memory"),
        procs.alias("requested_procs"),
        pl.when(pl.col("estimate_s") >= 0).then(integral(pl.col("estimate_s"))).otherwise(-1).alias("requested_time"),
        pl.when(pl.col("mem_gb").is_null()).then(-1)
          .otherwise((pl.col("mem_gb") * 1024 * 1024 / pl.max_horizontal(procs, 1)).round(0)).cast(pl.Int64)
          .alias("requested_memory"),
        pl.col("state").replace_strict(STATUS, default=-1, return_dtype=pl.Int64).alias("status"),
        *(pl.col(column).cast(pl.String).replace_strict(numbering[field], default=-1, return_dtype=pl.Int64)
          .alias(field) for field, column in NUMBERED.items()),
        pl.lit(-1).alias("group"), pl.lit(-1).alias("preceding_job"), pl.lit(-1).alias("think_time"),
    ).select(FIELDS)  # in the order of the format
    _record_losses(jobs, loss)
    body = lines.select(pl.concat_str([pl.col(f).cast(pl.String) for f in FIELDS], separator=" ")
                        .alias("line"))["line"].to_list()
    ids = jobs.select(pl.col("seq").alias("job"), "job_id", "cluster")
    return _header(ctx, jobs, origin, lines) + body, ids, numbering


def _record_losses(jobs: pl.DataFrame, loss: LossReport) -> None:
    fractional = jobs.filter((pl.col("num_gpus") > 0) & (pl.col("num_gpus") != pl.col("num_gpus").ceil())).height
    loss.without_place += [
        ("job_id", "replaced by the job's number in submission order (1..N); <file>.ids.csv maps it back"),
        ("user, job_group, vc, cluster", "numbered 1.. in order of first submission (fields 12, 14, 15, 16); "
                                         "the sidecar maps the numbers back to the names"),
        ("num_cpus, gpu_type, workload, job_name, end_time, fractional_gpu", "no SWF field: left out"),
        ("sub-second times", "submit, wait and run are written in whole seconds"),
    ]
    loss.filled += [
        ("processors (fields 5 and 8)", f"GPUs of the job; a part of a GPU counts as one GPU ({fractional:,} jobs); "
                                        "0 for a CPU-only job; -1 when unknown"),
        ("status (field 11)", "completed 1, failed 0, cancelled 5; -1 for a job still running, never "
                              "started or without a state"),
        ("requested time (field 9)", "the model's estimate with --predictions (whole seconds), else -1"),
        ("avg CPU time, used memory, group, preceding job, think time", "-1: not recorded"),
    ]


def _header(ctx: TraceContext, jobs: pl.DataFrame, origin: int, lines: pl.DataFrame) -> list[str]:
    from ddlx import __version__

    info = ctx.info
    title = info.title if info else f"imported dataset '{ctx.trace}'"
    header = ["; Version: 2.2", f"; Computer: {title}",
              f"; Installation: {', '.join(_numbering(jobs, 'cluster')) or ctx.trace}"]
    if info:
        header += [f"; Acknowledge: {info.paper}", f"; Information: {info.homepage}"]
    synthetic = " (SYNTHETIC data generated by ddlx, not a real trace)" if ctx.synthetic else ""
    header += [f"; Conversion: ddlx {__version__} on {dt.date.today().isoformat()}, from dataset '{ctx.trace}'"
               f"{synthetic}", f"; MaxJobs: {lines.height}", f"; MaxRecords: {lines.height}", "; Preemption: No"]
    if ctx.has_calendar_dates:
        start = dt.datetime.fromtimestamp(origin, dt.timezone.utc)
        last = int(jobs["submit_s"].max() // 1) if jobs.height else origin
        header += [f"; UnixStartTime: {origin}", f"; TimeZoneString: {ctx.source_tz or 'UTC'}",
                   f"; StartTime: {start.isoformat()}",
                   f"; EndTime: {dt.datetime.fromtimestamp(last, dt.timezone.utc).isoformat()}"]
    else:
        header.append("; Note: the trace's times are offsets from an undisclosed start, not dates: "
                      "submit times count from its first submission")
    max_procs = int(lines["allocated_procs"].max() or 0) if lines.height else 0
    capacity = documented_gpus(ctx)
    header += [f"; MaxProcs: {capacity if capacity else max_procs}",
               "; Note: processors are GPUs (fields 5 and 8 give a job's GPUs; a job asking for part of a GPU "
               "counts one; a CPU-only job has 0)" + ("" if capacity else "; MaxProcs is the largest job, the "
                                                      "dataset documents no GPU capacity"),
               "; Note: status 1 completed, 0 failed, 5 cancelled, -1 still running or never started",
               "; Note: queues are virtual clusters, partitions clusters, executables recurring job groups, "
               "numbered in order of first submission (names in the .datapackage.json beside this file)"]
    return header


def write_swf(request: ExportRequest, path: Path, loss: LossReport) -> Written:
    """Write the request's jobs as SWF to `path` and their id map beside it (`<path>.ids.csv`)."""
    lines, ids, numbering = swf_lines(request, loss)
    write_text(path, "\n".join(lines) + "\n")
    id_map = write_id_map(ids, path)
    return Written(ids.height, [id_map], numbering)


FORMAT = ExportFormat(
    name="swf", title="Standard Workload Format 2.2 (Parallel Workloads Archive)",
    consumer="simulators of HPC schedulers that read the Parallel Workloads Archive's logs",
    reference="Parallel Workloads Archive, Standard Workload Format, version 2.2", suffix=".swf", write=write_swf,
    carries_estimate=True)
