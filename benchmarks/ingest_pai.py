"""Benchmark: generate a SYNTHETIC PAI release, ingest it with ddlx, and copy the same CSVs to
Parquet with bare DuckDB in the same run. Prints a table of wall time and peak memory.

    python benchmarks/ingest_pai.py --scale 1 [--repeat 3] [--workdir DIR] [--keep]

With --repeat N the two compared steps (bare DuckDB and ddlx ingest from the same CSVs) each run
N times, alternating, each ingest into a fresh data home; the table shows the median run.

Targets at scale 1: the generator under 5 minutes; `ddlx datasets ingest` within 1.5x of bare
DuckDB; ingest peak RSS under 3 GB.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import psutil

BARE_DUCKDB = """
import sys, duckdb
from ddlx.datasets.csvload import columns_struct
from ddlx.datasets.pai_schema import COLUMNS
src, out = sys.argv[1], sys.argv[2]
con = duckdb.connect()
con.execute("SET preserve_insertion_order = false")
for table, columns in COLUMNS.items():
    con.execute(
        f"COPY (SELECT * FROM read_csv('{src}/{table}.csv', columns={columns_struct(columns)}, "
        f"header=false, auto_detect=false)) TO '{out}/{table}.parquet' (FORMAT parquet, COMPRESSION zstd)")
"""


def measure(command: list[str]) -> tuple[float, float]:
    """Run `command`; return (wall seconds, peak RSS in MB of the process and its children)."""
    started = time.perf_counter()
    process = psutil.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while process.poll() is None:
        try:
            rss = process.memory_info().rss + sum(c.memory_info().rss for c in process.children(recursive=True))
            peak = max(peak, rss)
        except psutil.Error:
            pass
        time.sleep(0.05)
    elapsed = time.perf_counter() - started
    if process.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{process.stderr.read().decode()}")
    return elapsed, peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=1, help="runs of the compared steps (median shown)")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ddlx-bench-"))
    release, csvs, bare_out = workdir / "release", workdir / "csv", workdir / "bare"
    for folder in (csvs, bare_out):
        folder.mkdir(parents=True, exist_ok=True)
    ddlx = [sys.executable, "-m", "ddlx"]
    rows = []
    seconds, rss = measure([*ddlx, "datasets", "synth", "pai", "--scale", str(args.scale),
                            "--seed", str(args.seed), "--out", str(release)])
    archive_bytes = sum(p.stat().st_size for p in release.glob("*.tar.gz"))
    rows.append(("generate SYNTHETIC release (tar.gz)", seconds, rss, None))
    started = time.perf_counter()
    for archive in release.glob("*.tar.gz"):
        with tarfile.open(archive) as tar:
            tar.extractall(csvs, filter="data")
    rows.append(("extract CSVs (tarfile, reference only)", time.perf_counter() - started, None, None))
    csv_bytes = sum(p.stat().st_size for p in csvs.glob("*.csv"))
    bare_runs, ingest_runs = [], []
    for run in range(args.repeat):
        bare_runs.append(measure([sys.executable, "-c", BARE_DUCKDB, str(csvs), str(bare_out)]))
        ingest_runs.append(measure([*ddlx, "datasets", "ingest", "pai", "--from", str(csvs),
                                    "--data-home", str(workdir / f"home-csv-{run}")]))
    bare_s, bare_rss = statistics.median(r[0] for r in bare_runs), max(r[1] for r in bare_runs)
    seconds, rss = statistics.median(r[0] for r in ingest_runs), max(r[1] for r in ingest_runs)
    rows.append(("bare DuckDB: CSV -> Parquet (reference)", bare_s, bare_rss, 1.0))
    rows.append(("ddlx datasets ingest (from CSVs)", seconds, rss, seconds / bare_s))
    seconds, rss = measure([*ddlx, "datasets", "ingest", "pai", "--from", str(release),
                            "--data-home", str(workdir / "home-tgz")])
    rows.append(("ddlx datasets ingest (from tar.gz)", seconds, rss, seconds / bare_s))
    seconds, rss = measure([*ddlx, "datasets", "ingest", "pai", "--from", str(release),
                            "--data-home", str(workdir / "home-tgz")])
    rows.append(("ddlx datasets ingest again (unchanged)", seconds, rss, seconds / bare_s))

    print(f"SYNTHETIC PAI release, scale {args.scale}, seed {args.seed}: "
          f"{archive_bytes / 2**20:,.0f} MiB tar.gz, {csv_bytes / 2**20:,.0f} MiB CSV; "
          f"{psutil.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB; "
          f"compared steps: median of {args.repeat} run(s), peak RSS the largest")
    print(f"{'step':<42} {'seconds':>9} {'peak RSS MB':>12} {'x bare DuckDB':>14}")
    for name, secs, peak, ratio in rows:
        print(f"{name:<42} {secs:>9.1f} {peak if peak is not None else float('nan'):>12.0f} "
              f"{'' if ratio is None else f'{ratio:.2f}':>14}")
    if not args.keep and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
