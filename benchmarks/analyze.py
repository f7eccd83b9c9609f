"""Benchmark: the whole `ddlx analyze pai-trace` on a SYNTHETIC PAI trace, next to a pandas pipeline
doing the joins of the official PAI analysis notebook on the same data, in the same run; and the
Helios-size utilisation series. Prints a table of wall time and peak memory.

    python benchmarks/analyze.py [--scale 1] [--pandas-scale 0.25] [--workdir DIR] [--reuse]

Steps:
- `ddlx analyze pai-trace` (every module) on a scale `--scale` trace (target: under 10 s, 2 GB =
  1,907 MiB): the first run on the catalog (it computes everything and keeps the heaviest
  intermediate results, `ddlx.analysis.cache`, in a cache folder of its own under `--workdir`),
  the same again (it reads them), with `--no-cache`, and with `--no-cache` again after the data
  home's files are dropped from the page cache (as on the first analysis of a day; the libraries
  stay cached); then through the library with the time of each part, everything computed and with
  the kept results read: importing ddlx, opening the catalog and reproducing the papers' figures,
  each module, writing the results and the report. The command runs the modules on two connections
  at once (`ddlx.analysis.runner`); to time each part alone, the per-part runs take them one after
  the other, so their total is more than the command's; a last run through the library, everything
  computed, shows when each part ran on which connection (each takes the next part when free: the
  two should end together);
- at `--pandas-scale` and at `--scale`: the pandas pipeline, and ddlx computing the same outputs
  through its library on the ingested catalog (target: ddlx at least 10x faster). The pandas
  pipeline reads the release CSVs as the notebooks do (time shown with and without the
  CSV reading), joins job and task tables on job_name, instances with sensors on worker_name, with
  the machine spec on machine and with the group tags on inst_id, rolls instances up to jobs and
  computes what ddlx's modules report from the same joins (state mix by jobs and GPU-hours, queueing
  and GPU-utilisation quantiles by GPU-request bucket, request against usage, submissions by hour of
  week, GPU-time concentration over users, recurring groups);
- `ddlx analyze helios-trace --module utilization --resolution 60` on a scale-1 Helios trace
  (3.4 M jobs): allocated GPUs per minute per cluster and VC.

Data are generated with `ddlx datasets synth` into `--workdir` and ingested there; `--reuse` keeps
what a previous run left.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).parent))
from ingest_trace import MARKER, drop_from_page_cache, extract_release, measure, measure_output  # noqa: E402

PANDAS_PIPELINE = r'''
import sys, time
from pathlib import Path
import numpy as np
import pandas as pd
from ddlx.traces.pai.schema import COLUMNS

folder = Path(sys.argv[1])
started = time.perf_counter()

def table(name, usecols):
    return pd.read_csv(folder / f"{name}.csv", header=None, names=list(COLUMNS[name]), usecols=usecols)

job = table("pai_job_table", ["job_name", "inst_id", "user", "status", "start_time", "end_time"])
task = table("pai_task_table", ["job_name", "task_name", "inst_num", "status", "start_time", "end_time",
                                "plan_cpu", "plan_mem", "plan_gpu", "gpu_type"])
inst = table("pai_instance_table", ["job_name", "task_name", "worker_name", "status", "start_time",
                                    "end_time", "machine"])
sensor = table("pai_sensor_table", ["worker_name", "cpu_usage", "gpu_wrk_util", "avg_mem", "max_mem"])
group = table("pai_group_tag_table", ["inst_id", "group", "workload"])
spec = table("pai_machine_spec", ["machine", "gpu_type", "cap_gpu"])
loaded = time.perf_counter()

# Times: 0 means missing.
for frame in (job, task, inst):
    for column in ("start_time", "end_time"):
        frame[column] = frame[column].replace(0, np.nan)

# Task level: task x job (the notebook's task table with the job's submission and user).
task["gpus"] = task["inst_num"] * task["plan_gpu"].fillna(0) / 100
tj = task.merge(job, on="job_name", suffixes=("", "_job"))
tj["task_wait_s"] = tj["start_time"] - tj["start_time_job"]
tj["task_runtime_s"] = tj["end_time"] - tj["start_time"]

# Instance level: instance x sensor x machine spec x task request.
isx = inst.merge(sensor, on="worker_name", how="left").merge(spec, on="machine", how="left", suffixes=("", "_machine"))
isx = isx.merge(task[["job_name", "task_name", "plan_cpu", "plan_mem", "plan_gpu"]],
                on=["job_name", "task_name"], how="left")

# Job level: roll-up (first instance start, last end, GPUs requested).
first = isx.groupby("job_name").agg(first_start=("start_time", "min"), last_end=("end_time", "max"))
gpus = task.groupby("job_name")["gpus"].sum()
jobs = job.merge(first, left_on="job_name", right_index=True, how="left")
jobs = jobs.merge(gpus.rename("num_gpus"), left_on="job_name", right_index=True, how="left")
jobs = jobs.merge(group, on="inst_id", how="left")
jobs["queue_s"] = jobs["first_start"] - jobs["start_time"]
jobs["run_s"] = jobs["last_end"] - jobs["first_start"]
jobs["gpu_hours"] = (jobs["num_gpus"] * jobs["run_s"]).fillna(0) / 3600
jobs["bucket"] = pd.cut(jobs["num_gpus"], [-0.1, 0, 0.999, 1, 2, 4, 8, np.inf])

state_mix = jobs.groupby("status").agg(jobs=("inst_id", "size"), gpu_hours=("gpu_hours", "sum"))
queue_by_bucket = jobs.groupby("bucket", observed=True)["queue_s"].quantile([0.5, 0.9, 0.99])
job_util = isx.groupby("job_name")["gpu_wrk_util"].mean().rename("gpu_util")
util_by_bucket = (jobs.merge(job_util, left_on="job_name", right_index=True, how="left")
                  .groupby("bucket", observed=True)["gpu_util"].quantile([0.5, 0.9]))
over_request = (isx["plan_gpu"] > isx["gpu_wrk_util"]).mean()
local = pd.to_datetime(jobs["start_time"], unit="s", utc=True).dt.tz_convert("Asia/Shanghai")
hour_of_week = (local.dt.day_of_week * 24 + local.dt.hour).value_counts()
per_user = jobs.groupby("user")["gpu_hours"].sum().sort_values(ascending=False)
top10 = per_user.head(max(1, len(per_user) // 10)).sum() / per_user.sum()
recurring = jobs.groupby("group")["inst_id"].transform("size").gt(1).mean()
done = time.perf_counter()
print(f"{loaded - started:.3f} {done - loaded:.3f}")
'''

#: The same outputs as the pandas pipeline, through ddlx's library on the ingested catalog (one
#: process; its time includes starting Python and opening the catalog).
DDLX_SAME_OUTPUTS = r'''
import sys, time
from pathlib import Path
started = time.perf_counter()
from ddlx.analysis import overview, queueing, time_patterns, users, utilization
from ddlx.analysis.context import open_trace
from ddlx.traces.pai import analyses as pai_analyses
with open_trace(Path(sys.argv[1]), "pai", cache=False) as ctx:
    state_mix = overview.state_mix(ctx)                                # jobs and GPU-hours per state
    queue_by_bucket, _ = queueing.by_gpu_bucket(ctx)                   # queueing quantiles per bucket
    util_by_bucket = pai_analyses.pai_instance_gpu_util_by(ctx, "gpu_bucket")
    request_vs_usage = pai_analyses.pai_request_vs_usage(ctx)          # request against usage
    hour_of_week = time_patterns.submissions_by_hour_of_week(ctx)
    concentration = users.top_shares(ctx)                              # GPU-time of the top users
    recurring = time_patterns.recurring_counts(ctx)
print(f"{time.perf_counter() - started:.3f}")
'''


PER_MODULE = r'''
import json, sys, time
started = time.perf_counter()
from pathlib import Path
from ddlx.analysis import runner
from ddlx.analysis.runner import run_analysis
from ddlx.reports.results import write_results
runner.CONCURRENT_MAX_JOBS = -1  # one module after the other: the time of each part alone
home, out, cache = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == "kept"
marks = [("import ddlx", started), ("open the catalog, reproduce the papers' figures", time.perf_counter())]
result = run_analysis(home, "pai", cache=cache, progress=lambda message: marks.append(
    ("module " + message.split(": ", 1)[1], time.perf_counter())))
marks.append(("write results, tables and the HTML report", time.perf_counter()))
write_results(result, out, with_report=True)
marks.append(("end", time.perf_counter()))
print(json.dumps([[name, marks[i + 1][1] - at] for i, (name, at) in enumerate(marks[:-1])]))
'''


LANES = r'''
import json, sys, threading, time
from pathlib import Path
from ddlx.analysis import runner
home = Path(sys.argv[1])
started = time.perf_counter()
spans = []

def timed(run, name):
    def timed_run(*args):
        at = time.perf_counter()
        try:
            return run(*args)
        finally:
            spans.append([name, threading.current_thread() is threading.main_thread(), at - started,
                          time.perf_counter() - started])
    return timed_run

load = runner.load
runner.load = lambda name: type("Timed", (), {"analyze": staticmethod(timed(load(name).analyze, name))})
runner.reproduce_on = timed(runner.reproduce_on, "the papers' figures")
runner.run_analysis(home, "pai", cache=False)
print(json.dumps(sorted(spans, key=lambda span: span[2])))
'''


def run_measured(code: str, *arguments: object) -> tuple[float, float, str]:
    """Run `python -c code arguments...`: wall seconds, peak RSS MiB, what it printed."""
    return measure_output([sys.executable, "-c", code, *map(str, arguments)])


def ensure_pai(workdir: Path, scale: float, reuse: bool, rows: list) -> tuple[Path, Path]:
    """A generated, unpacked and ingested PAI trace of `scale`: (CSV folder, data home)."""
    base = workdir / f"pai-{scale:g}"
    release, unpacked, home = base / "release", base / "csv", base / "home"
    if not (reuse and (home / "catalog.duckdb").exists() and (unpacked / MARKER).exists()):
        shutil.rmtree(base, ignore_errors=True)
        ddlx = [sys.executable, "-m", "ddlx"]
        seconds, rss = measure([*ddlx, "datasets", "synth", "pai", "--scale", str(scale), "--out", str(release)])
        rows.append((f"generate SYNTHETIC PAI scale {scale:g}", seconds, rss, None))
        extract_release(release, unpacked)
        shutil.copy2(release / MARKER, unpacked / MARKER)
        seconds, rss = measure([*ddlx, "datasets", "ingest", "pai", "--from", str(unpacked), "--data-home", str(home)])
        rows.append((f"ddlx datasets ingest (scale {scale:g})", seconds, rss, None))
    return unpacked, home


def ensure_helios(workdir: Path, reuse: bool, rows: list) -> Path:
    """A generated and ingested scale-1 Helios trace: its data home."""
    base = workdir / "helios-1"
    home = base / "home"
    if not (reuse and (home / "catalog.duckdb").exists()):
        shutil.rmtree(base, ignore_errors=True)
        ddlx = [sys.executable, "-m", "ddlx"]
        seconds, rss = measure([*ddlx, "datasets", "synth", "helios", "--scale", "1", "--out", str(base / "release")])
        rows.append(("generate SYNTHETIC Helios scale 1", seconds, rss, None))
        measure([*ddlx, "datasets", "ingest", "helios", "--from", str(base / "release"), "--data-home", str(home)])
    return home


def analyze(home: Path, out: Path, *args: str) -> tuple[float, float]:
    return measure([sys.executable, "-m", "ddlx", "analyze", *args, "--out", str(out), "--data-home", str(home)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--pandas-scale", type=float, default=0.25)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--reuse", action="store_true", help="reuse data a previous run left in --workdir")
    parser.add_argument("--skip-helios", action="store_true")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ddlx-bench-analyze-"))
    rows: list[tuple[str, float, float | None, float | None]] = []

    _, home = ensure_pai(workdir, args.scale, args.reuse, rows)
    os.environ["DDLX_CACHE_DIR"] = str(workdir / "cache")  # kept results of this run's ddlx alone
    shutil.rmtree(workdir / "cache", ignore_errors=True)  # what earlier runs kept
    seconds, rss = analyze(home, workdir / "results-full", "pai-trace")
    rows.append((f"ddlx analyze pai-trace (scale {args.scale:g}, all modules), first run", seconds, rss, None))
    seconds, rss = analyze(home, workdir / "results-full", "pai-trace")
    rows.append(("  the same again, reading what the first run kept", seconds, rss, None))
    seconds, rss = analyze(home, workdir / "results-full", "pai-trace", "--no-cache")
    rows.append(("  the same with --no-cache: everything computed", seconds, rss, None))
    dropped = drop_from_page_cache(home)
    seconds, rss = analyze(home, workdir / "results-full", "pai-trace", "--no-cache")
    rows.append((f"  the same, the data home ({dropped / 2**20:,.0f} MiB) uncached first", seconds, rss, None))
    import json

    parts = {}
    for cache in ("computed", "kept"):
        _, _, printed = run_measured(PER_MODULE, home, workdir / "results-parts", cache)
        parts[cache] = json.loads(printed)
    for (name, computed_s), (_, kept_s) in zip(parts["computed"], parts["kept"]):
        rows.append((f"  {name}", computed_s, None, None))
        rows.append(("    the same, kept results read", kept_s, None, None))
    rows.append(("  total, everything computed", sum(s for _, s in parts["computed"]), None, None))
    rows.append(("  total, kept results read", sum(s for _, s in parts["kept"]), None, None))
    seconds, _, printed = run_measured(LANES, home)
    rows.append(("  the modules on two connections, everything computed", seconds, None, None))
    for name, first, start, end in json.loads(printed):
        rows.append((f"    {name} ({'first' if first else 'second'} connection, {start:.1f}-{end:.1f} s)",
                     end - start, None, None))

    for scale in dict.fromkeys([args.pandas_scale, args.scale]):
        csvs, scale_home = ensure_pai(workdir, scale, args.reuse or scale == args.scale, rows)  # made above
        same_s, same_rss, _ = run_measured(DDLX_SAME_OUTPUTS, scale_home)
        pandas_s, pandas_rss, printed = run_measured(PANDAS_PIPELINE, csvs)
        load_s, compute_s = (float(v) for v in printed.split())
        rows.append((f"ddlx, the pandas pipeline's outputs (scale {scale:g})", same_s, same_rss, 1.0))
        rows.append((f"pandas pipeline (scale {scale:g}, CSV read + joins)", pandas_s, pandas_rss, pandas_s / same_s))
        rows.append(("  of which joins and roll-ups only", compute_s, None, compute_s / same_s))

    if not args.skip_helios:
        helios_home = ensure_helios(workdir, args.reuse, rows)
        seconds, rss = analyze(helios_home, workdir / "results-helios", "helios-trace", "--module", "utilization",
                               "--resolution", "60")
        rows.append(("ddlx analyze helios-trace -m utilization (60 s bins)", seconds, rss, None))

    print(f"SYNTHETIC PAI traces (scale {args.scale:g} and {args.pandas_scale:g}) and Helios scale 1; "
          f"{psutil.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB")
    print(f"{'step':<58} {'seconds':>9} {'peak RSS MiB':>12} {'x ddlx':>8}")
    for name, secs, peak_mb, ratio in rows:
        print(f"{name:<58} {secs:>9.1f} {peak_mb if peak_mb is not None else float('nan'):>12.0f} "
              f"{'' if ratio is None else f'{ratio:.1f}':>8}")


if __name__ == "__main__":
    main()
