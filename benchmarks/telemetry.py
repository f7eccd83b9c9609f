"""Benchmark: GPU telemetry at fleet scale. A SYNTHETIC Slurm cluster (`ddlx.datasets.telemetry.generator`)
of `--gpus` GPUs sampled every `--step` s for `--days` days (one field, gpu_util; default 2,000 GPUs x
90 days x 15 s = 1.04 billion samples) is generated, imported and reduced to per-job figures; each
stage runs in its own process and is measured for wall time and peak RSS (the process and its
children). Prints a table.

    python benchmarks/telemetry.py [--gpus 2000] [--days 90] [--step 15] [--memory-limit 3GB]
                                   [--workdir DIR] [--keep]

Stages:
- generate: `write_synthetic_cluster` with `format="parquet"` and no job label on the samples, so
  samples are attributed to jobs through the Slurm allocations (NodeList + GresDetail), not labels;
- import accounting: `import_dataset(..., preset="slurm")` of the generated `sacct.txt`;
- import samples: `import_metrics` of the generated `dcgm.parquet` (stored Parquet, partitioned by day);
- import samples (reference): bare DuckDB copying the same dump into Parquet partitioned by UTC day
  (`COPY ... PARTITION_BY (day)`, same memory limit), with the stored columns but without what the
  import adds: no order within a day, no data-quality screening or dedupe, no resumable chunks. (A
  bare copy that also sorts each day, as the import stores it, spills about 90 bytes a sample to
  disk in DuckDB's global sort: 9 GB at a tenth of the default size, too much for a full-size run.)
- reduce (ddlx): the `gpu_efficiency` module on the data home (`open_trace` and the module's
  `analyze`, as `ddlx analyze` runs it), its DuckDB connection limited to `--memory-limit` with a
  temporary folder inside the dataset's telemetry folder (removed after);
- reduce (reference): bare DuckDB over the same stored Parquet files, same limit: the allocations
  taken from the generator's plan (`plan.json`), each gpu_util sample attributed to the allocation of
  its GPU that started last at or before it (an ASOF join on host, gpu and time, kept when before the
  allocation's end), per job `step` x samples (allocated GPU-seconds) and `step` x samples under 5
  percent (idle GPU-seconds).

Then the per-job figures of both reductions are compared (and with the generator's plan), and the
ratio ddlx / reference is given for the sample import and the reduction. The working folder is removed unless `--keep`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import sys
import tempfile
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).parent))
from ingest_trace import StageStopped, measure_output  # noqa: E402

DATASET = "fleet"
TZ = "Europe/Berlin"
#: Bytes of disk a sample needs at most over the run: the dump, the stored copy, spool and DuckDB's
#: spill files (about 3 bytes a sample each as zstd Parquet of one field; generous).
DISK_BYTES_PER_SAMPLE = 24
IMPORT_STAGE = "import samples (import_metrics)"
REDUCE_STAGE = "reduce: ddlx gpu_efficiency module"
IMPORT_REFERENCE_STAGE = "import samples: bare DuckDB copy (reference)"
REDUCE_REFERENCE_STAGE = "reduce: bare DuckDB ASOF join (reference)"

GENERATE = r'''
import sys
from pathlib import Path
from ddlx.datasets.telemetry.generator import ClusterSpec, write_synthetic_cluster
gpus, days, step, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
spec = ClusterSpec(gpus=gpus, days=days, step=step, fields=("DCGM_FI_DEV_GPU_UTIL",), job_label=False,
                   format="parquet", tz=sys.argv[5])
write_synthetic_cluster(spec, out)
print(gpus * spec.samples)
'''

IMPORT_ACCOUNTING = r'''
import sys
from pathlib import Path
from ddlx.datasets.importers import import_dataset
result = import_dataset(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[1]), preset="slurm", tz=sys.argv[4])
import duckdb
from ddlx.datasets import catalog
with catalog.reading(Path(sys.argv[1])) as (con, _):
    print(con.execute("SELECT count(*) FROM jobs WHERE trace = ?", [sys.argv[2]]).fetchall()[0][0])
'''

IMPORT_SAMPLES = r'''
import sys
from pathlib import Path
from ddlx.datasets.telemetry.importer import import_metrics
result = import_metrics(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
print(result.samples)
'''

#: Bare DuckDB: the dump's gpu_util samples copied into Parquet partitioned by UTC day, unordered.
IMPORT_REFERENCE = r'''
import shutil, sys
import duckdb
dump, limit, spill, out = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
con = duckdb.connect()
try:
    for setting in (f"memory_limit = '{limit}'", f"temp_directory = '{spill}'", "preserve_insertion_order = false",
                    "TimeZone = 'UTC'", "enable_progress_bar = false"):
        con.execute(f"SET {setting}")
    con.execute(f"""COPY (
        SELECT Hostname AS host, CAST(gpu AS INTEGER) AS gpu, UUID AS uuid, modelName AS model, time,
               'gpu_util' AS field, value, pod, namespace, container, hpc_job, '{{}}' AS labels,
               CAST(time AS DATE) AS day
        FROM read_parquet('{dump}') WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' AND isfinite(value)
    ) TO '{out}' (FORMAT parquet, PARTITION_BY (day))""")
    print(con.execute(f"SELECT count(*) FROM read_parquet('{out}/*/*.parquet')").fetchall()[0][0])
finally:
    con.close()
    shutil.rmtree(spill, ignore_errors=True)
'''

#: The gpu_efficiency module as `ddlx analyze` runs it, on a connection limited to argv[3] of memory.
REDUCE_DDLX = r'''
import shutil, sys
from pathlib import Path
from ddlx.analysis.context import open_trace
from ddlx.analysis.modules import load
from ddlx.datasets.telemetry import store
home, name, limit, out = Path(sys.argv[1]), sys.argv[2], sys.argv[3], Path(sys.argv[4])
spill = store.telemetry_folder(home, name) / ".duckdb-tmp"
try:
    with open_trace(home, name) as ctx:
        ctx.con.execute(f"SET memory_limit = '{limit}'")
        ctx.con.execute(f"SET temp_directory = '{spill}'")
        ctx.con.execute("SET preserve_insertion_order = false")
        result = load("gpu_efficiency").analyze(ctx)
        jobs = next(t.frame for t in result.tables if t.name == "jobs")
        jobs.select("job_id", "allocated_gpu_hours", "idle_gpu_hours").write_parquet(out)
        print(sum(t.frame["samples"].sum() for t in result.tables if t.name == "attribution"))
finally:
    shutil.rmtree(spill, ignore_errors=True)
'''

#: Bare DuckDB: the same per-job figures from the stored Parquet files and the generator's plan.
REDUCE_REFERENCE = r'''
import json, shutil, sys
from pathlib import Path
import duckdb
samples_glob, plan_path, limit, spill, out = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
plan = json.loads(plan_path.read_text())
step, window_end = plan["window"]["step_s"], plan["window"]["end"]
rows = [(job["job_id"], a["host"], g, job["start"], job["end"] or window_end)
        for job in plan["jobs"] if job["start"] for a in job["allocations"] for g in a["gpus"]]
con = duckdb.connect()
try:
    con.execute(f"SET memory_limit = '{limit}'")
    con.execute(f"SET temp_directory = '{spill}'")
    con.execute("SET preserve_insertion_order = false")
    con.execute("CREATE TABLE alloc (job_id VARCHAR, host VARCHAR, gpu INTEGER, start_time TIMESTAMPTZ, "
                "end_time TIMESTAMPTZ)")
    con.executemany("INSERT INTO alloc VALUES (?, ?, ?, ?, ?)", rows)
    con.execute(f"""COPY (
        SELECT a.job_id, count(*) * {step} AS alloc_gpu_s, count(*) FILTER (WHERE s.value < 5) * {step} AS idle_gpu_s
        FROM (SELECT host, gpu, time, value FROM read_parquet('{samples_glob}') WHERE field = 'gpu_util') s
        ASOF JOIN alloc a ON s.host = a.host AND s.gpu = a.gpu AND s.time >= a.start_time
        WHERE s.time < a.end_time
        GROUP BY a.job_id) TO '{out}' (FORMAT parquet)""")
    print(con.execute(f"SELECT count(*) FROM read_parquet('{samples_glob}')").fetchall()[0][0])
finally:
    con.close()
    shutil.rmtree(spill, ignore_errors=True)
'''


def compare(ddlx_out: Path, reference_out: Path, plan_path: Path) -> tuple[int, int | None, int]:
    """Jobs with figures, jobs whose ddlx figures differ from the reference (None: no reference
    figures, it was stopped), and from the plan."""
    import json

    import polars as pl

    ddlx = pl.read_parquet(ddlx_out).select(
        "job_id", (pl.col("allocated_gpu_hours") * 3600).round().cast(pl.Int64).alias("alloc_gpu_s"),
        (pl.col("idle_gpu_hours") * 3600).round().cast(pl.Int64).alias("idle_gpu_s"))
    reference = pl.read_parquet(reference_out).select(
        pl.col("job_id").cast(pl.String), pl.col("alloc_gpu_s").cast(pl.Int64), pl.col("idle_gpu_s").cast(pl.Int64)
    ) if reference_out.exists() else None
    plan = pl.DataFrame([{"job_id": j["job_id"], "alloc_gpu_s": j["alloc_gpu_s"], "idle_gpu_s": j["idle_gpu_s"]}
                         for j in json.loads(plan_path.read_text())["jobs"] if j["alloc_gpu_s"] > 0],
                        schema={"job_id": pl.String, "alloc_gpu_s": pl.Int64, "idle_gpu_s": pl.Int64})

    def differing(other: pl.DataFrame) -> int:
        joined = ddlx.join(other, on="job_id", how="full", coalesce=True, suffix="_o")
        return joined.filter((pl.col("alloc_gpu_s") != pl.col("alloc_gpu_s_o")).fill_null(True)
                             | (pl.col("idle_gpu_s") != pl.col("idle_gpu_s_o")).fill_null(True)).height

    return ddlx.height, None if reference is None else differing(reference), differing(plan)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=2000, help="GPUs of the fleet (a multiple of 8)")
    parser.add_argument("--days", type=int, default=90, help="days of telemetry")
    parser.add_argument("--step", type=int, default=15, help="seconds between samples")
    parser.add_argument("--memory-limit", default="3GB", help="DuckDB memory_limit of both reductions")
    parser.add_argument("--workdir", type=Path, default=None, help="working folder (default: a new temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the working folder")
    parser.add_argument("--reference-limit", type=float, default=None,
                        help="seconds after which a reference stage is stopped (reported as such, its ratio a bound)")
    parser.add_argument("--reuse", action="store_true",
                        help="with --workdir: keep the generate and import stages a previous run of the same size "
                             "finished there (their recorded measurements are shown, marked *)")
    args = parser.parse_args()
    if args.gpus < 8 or args.gpus % 8 or args.days < 1 or args.step < 1 or 86400 % args.step:
        parser.error("--gpus must be a positive multiple of 8, --days at least 1, --step a divisor of 86400")
    samples = args.gpus * args.days * 86400 // args.step
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ddlx-bench-telemetry-"))
    workdir.mkdir(parents=True, exist_ok=True)
    need, free = samples * DISK_BYTES_PER_SAMPLE, shutil.disk_usage(workdir).free
    if need > free:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
        sys.exit(f"Error: {samples:,} samples need about {need / 1e9:.0f} GB of disk in {workdir}, "
                 f"which has {free / 1e9:.0f} GB free; use --workdir on a larger disk, or fewer --gpus/--days")
    generated, home = workdir / "generated", workdir / "home"
    python = sys.executable
    rows: list[tuple[str, int, float, float]] = []
    print(f"SYNTHETIC fleet: {args.gpus:,} GPUs x {args.days} days, a gpu_util sample every {args.step} s = "
          f"{samples:,} samples; working folder {workdir}", flush=True)
    try:
        record = workdir / "stages.json"
        size = [args.gpus, args.days, args.step]
        earlier = json.loads(record.read_text()) if args.reuse and record.exists() else {}
        if earlier.get("size") != size:
            earlier = {}
        done: dict = {"size": size, "stages": {}}

        stopped: set[str] = set()

        def stage(name: str, code: str, *argv: object, reusable: bool = False,
                  fresh: Path | None = None) -> tuple[float, float]:
            """Run one stage (or take its earlier measurement); `fresh`: a folder it writes, emptied first.
            A reference stage past --reference-limit is stopped: its time is then a lower bound."""
            if reusable and name in earlier.get("stages", {}) and all(
                    n.removesuffix(" *") in earlier["stages"] for n, *_ in rows):
                count, seconds, peak = earlier["stages"][name]
                rows.append((name + " *", count, seconds, peak))
            else:
                if fresh is not None:
                    shutil.rmtree(fresh, ignore_errors=True)
                limit = args.reference_limit if "(reference)" in name else None
                try:
                    seconds, peak, out = measure_output([python, "-c", code, *map(str, argv)], limit)
                    count = int(out.split()[-1])
                except StageStopped as stop:
                    seconds, peak, count = stop.seconds, stop.peak_mb, 0
                    stopped.add(name)
                rows.append((name, count, seconds, peak))
                print(f"  {name}: {seconds:.1f} s, {peak:.0f} MiB", flush=True)
            done["stages"][name] = [count, seconds, peak]
            record.write_text(json.dumps(done))
            return seconds, peak

        stage("generate (SYNTHETIC Parquet dump)", GENERATE, args.gpus, args.days, args.step, generated, TZ,
              reusable=True, fresh=generated)
        dump_bytes = (generated / "dcgm.parquet").stat().st_size
        stage("import accounting (sacct, Slurm preset)", IMPORT_ACCOUNTING, home, DATASET,
              generated / "sacct.txt", TZ, reusable=True, fresh=home)
        import_s, _ = stage(IMPORT_STAGE, IMPORT_SAMPLES, home, DATASET, generated / "dcgm.parquet",
              reusable=True)
        import_reference_out = workdir / "reference-import"
        shutil.rmtree(import_reference_out, ignore_errors=True)
        import_reference_s, _ = stage(IMPORT_REFERENCE_STAGE, IMPORT_REFERENCE,
                                      generated / "dcgm.parquet", args.memory_limit, workdir / "reference-spill",
                                      import_reference_out, reusable=True)
        shutil.rmtree(import_reference_out, ignore_errors=True)
        samples_folder = home / "telemetry" / DATASET / "gpu_samples"
        stored_bytes = sum(p.stat().st_size for p in samples_folder.rglob("*.parquet"))
        reduce_s, _ = stage(REDUCE_STAGE, REDUCE_DDLX, home, DATASET, args.memory_limit,
                          workdir / "ddlx-jobs.parquet")
        reduce_reference_s, _ = stage(REDUCE_REFERENCE_STAGE, REDUCE_REFERENCE,
                               samples_folder / "day=*" / "*.parquet", generated / "plan.json", args.memory_limit,
                               workdir / "reference-spill", workdir / "reference-jobs.parquet")
        jobs, vs_reference, vs_plan = compare(workdir / "ddlx-jobs.parquet", workdir / "reference-jobs.parquet",
                                              generated / "plan.json")
        cores, memory = psutil.cpu_count(), psutil.virtual_memory().total / 2**30
        print()
        print(f"SYNTHETIC fleet of {args.gpus:,} GPUs, {args.days} days at {args.step} s: {samples:,} gpu_util "
              f"samples; dump {dump_bytes / 2**20:,.0f} MiB, stored {stored_bytes / 2**20:,.0f} MiB (Parquet); "
              f"{cores} cores, {memory:.0f} GiB RAM, DuckDB memory_limit {args.memory_limit}; "
              f"{datetime.date.today().isoformat()}")
        print(f"| {'stage':<54} | {'rows':>15} | {'seconds':>8} | {'peak RSS MiB':>11} | {'x reference':>11} |")
        print(f"|{'-' * 56}|{'-' * 17}|{'-' * 10}|{'-' * 13}|{'-' * 13}|")
        ratios = {IMPORT_STAGE: (import_s / import_reference_s, IMPORT_REFERENCE_STAGE in stopped),
                  REDUCE_STAGE: (reduce_s / reduce_reference_s, REDUCE_REFERENCE_STAGE in stopped)}
        for name, count, seconds, peak in rows:
            ratio, bound = ratios.get(name.removesuffix(" *"), (None, False))
            ratio = "" if ratio is None else f"{'< ' if bound else ''}{ratio:.2f}"
            if name in stopped:
                name = name + " STOPPED"
            print(f"| {name:<54} | {count:>15,} | {seconds:>8.1f} | {peak:>11,.0f} | {ratio:>11} |")
        ours = [r for r in rows if "(reference)" not in r[0]]
        total = sum(r[2] for r in ours)
        print(f"ddlx total (generate, import, reduce): {total / 60:.1f} min; peak RSS of any ddlx stage "
              f"{max(r[3] for r in ours):,.0f} MiB")
        if any(r[0].endswith(" *") for r in rows):
            print("* measured by an earlier run of the same size in this working folder (--reuse)")
        if stopped:
            print(f"STOPPED: stopped at --reference-limit {args.reference_limit:.0f} s; its time is a lower bound, so "
                  "the ratio to it an upper bound")
        if vs_reference is None:
            print(f"per-job figures: {vs_plan} of {jobs:,} jobs differ from the generator's plan (the reference "
                  "was stopped before giving figures)")
        else:
            print(f"same per-job figures: {'yes' if vs_reference == 0 else 'no'} ({jobs:,} jobs; "
                  f"{vs_reference} differ from the reference, {vs_plan} from the generator's plan)")
    finally:
        if args.keep:
            print(f"kept {workdir}")
        elif args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
        else:  # a folder the user named: only what this script wrote in it
            for made in (generated, home, workdir / "reference-spill", workdir / "reference-import"):
                shutil.rmtree(made, ignore_errors=True)
            for made in ("ddlx-jobs.parquet", "reference-jobs.parquet", "stages.json"):
                (workdir / made).unlink(missing_ok=True)

if __name__ == "__main__":
    main()
