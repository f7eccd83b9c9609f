"""Benchmark: the telemetry reduction (the `gpu_efficiency` module) on embedded DuckDB and on Spark
SQL in local mode, at three sizes growing tenfold. Prints a table of wall time and peak RSS (the
process and its children: Spark's JVM counts), and how each engine's time grows from one size to the
next (the exponent k of time ~ samples^k).

    python benchmarks/engines.py [--gpus 24] [--days 3] [--step 15] [--master local[2]]
                                 [--partitions 0] [--spark-conf K=V]
                                 [--factors 1,10,100] [--workdir DIR]

Per size (GPUs x 1, x 10, x 100 of `--gpus`, same days and step): a SYNTHETIC Slurm cluster is
generated (`write_synthetic_cluster`, one field, gpu_util, no job label: samples are attributed
through the allocations), its accounting and samples imported (not timed), then the module runs
once per engine in its own process, over the same stored Parquet files:
- duckdb: embedded DuckDB, a slice of 6 hours at a time (as `ddlx analyze` runs it by default);
- spark: `--engine spark --spark-master MASTER --partitions N` (the session's start is included:
  that is what a user waits for).
Both must give the same per-job allocated and idle GPU-hours (checked; the run fails otherwise).
The working folder is removed at the end unless `--workdir` is given.
"""

from __future__ import annotations

import argparse
import datetime
import math
import shutil
import sys
import tempfile
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).parent))
from ingest_trace import measure_output  # noqa: E402

PREPARE = r'''
import sys
from pathlib import Path
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.telemetry.generator import ClusterSpec, write_synthetic_cluster
from ddlx.datasets.telemetry.importer import import_metrics
gpus, days, step, root = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
write_synthetic_cluster(ClusterSpec(gpus=gpus, days=days, step=step, fields=("DCGM_FI_DEV_GPU_UTIL",),
                                    job_label=False, format="parquet"), root / "gen")
import_dataset("fleet", root / "gen" / "sacct.txt", root / "home", preset="slurm", tz="Europe/Berlin")
print(import_metrics(root / "home", "fleet", root / "gen" / "dcgm.parquet").samples)
'''

REDUCE = r'''
import json, sys
from pathlib import Path
from ddlx.analysis.runner import run_analysis
home, out, options = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
try:
    module = run_analysis(home, "fleet", ["gpu_efficiency"], options=options).module("gpu_efficiency")
except Exception as exc:  # reported as a row of the table
    print("FAILED:", (str(exc).strip().splitlines() or [type(exc).__name__])[0])
    raise SystemExit(0)
module.table("jobs").select("job_id", "allocated_gpu_hours", "idle_gpu_hours").write_parquet(out)
print(module.table("reduction")["partitions"][0])
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=24, help="GPUs of the smallest size (a multiple of 8)")
    parser.add_argument("--days", type=int, default=3, help="days of telemetry")
    parser.add_argument("--step", type=int, default=15, help="seconds between samples")
    parser.add_argument("--master", default="local[2]", help="Spark master")
    parser.add_argument("--partitions", type=int, default=0,
                        help="partitions Spark reads the samples in (default 0: Spark's own split of the files)")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting (repeatable), e.g. spark.driver.memory=6g")
    parser.add_argument("--factors", default="1,10,100", help="sizes to run, as multiples of --gpus")
    parser.add_argument("--workdir", type=Path, default=None, help="working folder (default: a temporary one)")
    args = parser.parse_args()
    if args.gpus < 8 or args.gpus % 8:
        parser.error("--gpus must be a positive multiple of 8")
    import json

    import polars as pl

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ddlx-bench-engines-"))
    failures: list[str] = []
    python = sys.executable
    rows: list[tuple[int, str, float, float, str]] = []
    conf = dict(pair.split("=", 1) for pair in args.spark_conf)
    try:
        for factor in (int(f) for f in args.factors.split(",")):
            gpus = args.gpus * factor
            root = workdir / f"x{factor}"
            shutil.rmtree(root, ignore_errors=True)
            print(f"size x{factor}: {gpus:,} GPUs x {args.days} days at {args.step} s ...", flush=True)
            _, _, out = measure_output([python, "-c", PREPARE, str(gpus), str(args.days), str(args.step), str(root)])
            samples = int(out.split()[-1])
            results = {}
            spark = {"engine": "spark", "spark_master": args.master, "partitions": args.partitions or None,
                     "spark_conf": conf or None}
            for engine, options in (("duckdb", {}), ("spark", spark)):
                target = root / f"{engine}.parquet"
                seconds, peak, out = measure_output([python, "-c", REDUCE, str(root / "home"), str(target),
                                                     json.dumps(options)])
                failed = out.strip().startswith("FAILED:")
                rows.append((samples, engine, seconds, peak, "failed" if failed else out.split()[-1]))
                if failed:
                    failures.append(f"{engine} at {samples:,} samples: {out.strip()[len('FAILED: '):]}")
                else:
                    results[engine] = pl.read_parquet(target).sort("job_id")
                print(f"  {engine}: {seconds:.1f} s, {peak:,.0f} MiB{' FAILED' if failed else ''}", flush=True)
            if len(results) == 2 and not results["duckdb"].equals(results["spark"]):
                sys.exit(f"the engines disagree at size x{factor}: per-job figures differ")
            shutil.rmtree(root, ignore_errors=True)
        cores, memory = psutil.cpu_count(), psutil.virtual_memory().total / 2**30
        print()
        split = f"{args.partitions} partitions" if args.partitions else "its own split of the files"
        split += "".join(f", {key}={value}" for key, value in conf.items())
        print(f"SYNTHETIC Slurm fleets, {args.days} days at {args.step} s, gpu_util; the gpu_efficiency module per "
              f"engine; Spark {args.master}, {split}; {cores} cores, {memory:.0f} GiB RAM; "
              f"{datetime.date.today().isoformat()}")
        print(f"| {'samples':>13} | {'engine':<6} | {'seconds':>8} | {'peak RSS MiB':>11} | {'partitions':>10} | "
              f"{'growth k':>8} |")
        print(f"|{'-' * 15}|{'-' * 8}|{'-' * 10}|{'-' * 13}|{'-' * 12}|{'-' * 10}|")
        previous: dict[str, tuple[int, float]] = {}
        for samples, engine, seconds, peak, partitions in rows:
            growth = ""
            if engine in previous and partitions != "failed":
                size0, time0 = previous[engine]
                growth = f"{math.log(seconds / time0) / math.log(samples / size0):.2f}"
            if partitions != "failed":
                previous[engine] = (samples, seconds)
            print(f"| {samples:>13,} | {engine:<6} | {seconds:>8.1f} | {peak:>11,.0f} | {partitions:>10} | "
                  f"{growth:>8} |")
        print("growth k: time ~ samples^k from the size above; same per-job figures on both engines where both "
              "finished: yes")
        for failure in failures:
            print(f"failed: {failure}")
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
