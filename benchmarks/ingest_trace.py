"""Benchmark: generate a SYNTHETIC release of a trace, ingest it with ddlx, and copy the same files
to Parquet with bare DuckDB in the same run. Prints a table of wall time and peak memory.

    python benchmarks/ingest_trace.py --trace pai|philly|helios --scale 1 [--repeat 3] [--workdir DIR] [--keep]

With --repeat N the three compared steps (bare DuckDB on the unpacked files, ddlx ingest from the
same unpacked files, ddlx ingest from the official archives) each run N times, alternating, each
ingest into a fresh data home; the table shows the median run.
Bare DuckDB reads every file with no conversions: PAI's headerless CSVs with their declared
columns, other CSVs with DuckDB's own header and type detection (`NA` read as missing; Philly's
header lines skipped, since their rows carry one field more), Philly's JSON job log with read_json. \
`--reuse` keeps a release already generated in `--workdir`.

Bare DuckDB writes DuckDB's defaults (zstd level 3, Parquet V1 encodings): the reference the
targets are stated against. ddlx stores zstd at level 1 with V2 encodings (`PARQUET_COPY_OPTIONS`),
which costs less CPU; a second reference row writes the same settings, and the last column gives
each ratio against it.

Targets at scale 1: `ddlx datasets ingest` from the official archives within 1.3x of bare DuckDB on
the unpacked files; ingest peak RSS under 2 GB (1,907 MiB).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

import psutil

from ddlx.datasets.sqltext import PARQUET_COPY_OPTIONS, PARQUET_VERSION, PARQUET_ZSTD_LEVEL

MARKER = "SYNTHETIC.json"

BARE_DUCKDB = """
import sys, duckdb
from pathlib import Path
from ddlx.datasets.csvload import columns_struct, sql_string
from ddlx.traces.pai.schema import COLUMNS
src, out, options = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
con = duckdb.connect()
con.execute("SET preserve_insertion_order = false")
files = sorted(p for p in src.rglob("*") if p.is_file() and p.name != "SYNTHETIC.json")
for index, path in enumerate(files):
    name = sql_string(str(path))
    if path.stem in COLUMNS:
        read = (f"read_csv({name}, columns={columns_struct(COLUMNS[path.stem])}, header=false, "
                "auto_detect=false)")
    elif path.name == "cluster_job_log":
        read = f"read_json({name}, format='array')"
    elif not path.suffix:  # Philly's utilisation logs: data rows end with one comma more
        read = f"read_csv({name}, skip=1, header=false, nullstr=['NA', ''])"
    else:
        read = f"read_csv({name}, header=true, nullstr=['NA', ''])"
    target = sql_string(str(out / f"{index}-{path.stem}.parquet"))
    con.execute(f"COPY (SELECT * FROM {read}) TO {target} ({options})")
"""


class StageStopped(Exception):
    """A measured command ran past its time limit and was stopped."""

    def __init__(self, seconds: float, peak_mb: float) -> None:
        super().__init__(f"stopped after {seconds:.0f} s")
        self.seconds, self.peak_mb = seconds, peak_mb


def measure_output(command: list[str], limit_s: float | None = None) -> tuple[float, float, str]:
    """Run `command`; return (wall seconds, peak RSS in MiB of the process and its children, what it
    printed on stdout). Exits with its stderr when it fails; raises `StageStopped` (after stopping it
    and its children) when it runs longer than `limit_s` seconds."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = psutil.Popen(command, stdout=out, stderr=err)
        peak = 0
        while process.poll() is None:
            try:
                rss = process.memory_info().rss + sum(c.memory_info().rss for c in process.children(recursive=True))
                peak = max(peak, rss)
            except psutil.Error:
                pass
            if limit_s is not None and time.perf_counter() - started > limit_s:
                for child in process.children(recursive=True):
                    child.kill()
                process.kill()
                process.wait()
                raise StageStopped(time.perf_counter() - started, peak / 2**20)
            time.sleep(0.05)
        elapsed = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            sys.exit(f"failed: {' '.join(command)}\n{err.read().decode()}")
        return elapsed, peak / 2**20, out.read().decode()


def measure_cpu(command: list[str]) -> tuple[float, float, float]:
    """Run `command`; return (wall seconds, peak RSS in MiB, CPU seconds, user and system, of the
    process and the children it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    elapsed, peak_mb, _ = measure_output(command)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, peak_mb, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(command: list[str]) -> tuple[float, float]:
    """Run `command`; return (wall seconds, peak RSS in MiB of the process and its children)."""
    elapsed, peak_mb, _ = measure_output(command)
    return elapsed, peak_mb


def drop_from_page_cache(folder: Path) -> int:
    """Ask the kernel to drop the cached pages of every file under `folder` (`posix_fadvise`
    DONTNEED; pages not yet written are written first), so that the next read comes from the disk.
    Returns the bytes of the files."""
    total = 0
    for path in folder.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
            total += path.stat().st_size
    return total


def extract_release(release: Path, dest: Path) -> None:
    """Unpack every archive of `release` into `dest` (in the layout the archives hold)."""
    for archive in sorted(release.iterdir()):
        if archive.name.endswith(".tar.gz"):
            with tarfile.open(archive) as tar:
                # the "data" filter exists from Python 3.11.4; before it, the archives are ddlx's own
                tar.extractall(dest, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        elif archive.suffix == ".zip":
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(dest)


def step_seconds(home: Path, trace: str) -> dict[str, float]:
    """The seconds of each step of the last ingest of `trace` into `home`, as its manifest records them."""
    from ddlx.datasets import catalog

    return catalog.read_registrations(home)[trace].manifest.get("step_seconds", {})


def data_bytes(folder: Path) -> int:
    """Bytes of the release files under `folder` (the marker not counted)."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and p.name != MARKER)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default="pai", choices=("pai", "philly", "helios"))
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=1, help="runs of the compared steps (median shown)")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--reuse", action="store_true", help="reuse the release already in --workdir")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ddlx-bench-"))
    release, unpacked, bare_out = workdir / "release", workdir / "unpacked", workdir / "bare"
    unpacked.mkdir(parents=True, exist_ok=True)
    ddlx = [sys.executable, "-m", "ddlx"]
    rows = []
    if not (args.reuse and (unpacked / MARKER).exists()):
        seconds, rss = measure([*ddlx, "datasets", "synth", args.trace, "--scale", str(args.scale),
                                "--seed", str(args.seed), "--out", str(release)])
        rows.append(("generate SYNTHETIC release (archives)", seconds, rss, None))
        started = time.perf_counter()
        extract_release(release, unpacked)
        shutil.copy2(release / MARKER, unpacked / MARKER)
        rows.append(("extract archives (Python, reference only)", time.perf_counter() - started, None, None))
    for old_home in workdir.glob("home-*"):
        shutil.rmtree(old_home)
    bare_runs, as_ddlx_runs, ingest_runs, archive_runs = [], [], [], []
    for run in range(args.repeat):
        for options, runs in (("FORMAT parquet, COMPRESSION zstd", bare_runs), (PARQUET_COPY_OPTIONS, as_ddlx_runs)):
            shutil.rmtree(bare_out, ignore_errors=True)
            bare_out.mkdir()
            runs.append(measure([sys.executable, "-c", BARE_DUCKDB, str(unpacked), str(bare_out), options]))
        ingest_runs.append(measure([*ddlx, "datasets", "ingest", args.trace, "--from", str(unpacked),
                                    "--data-home", str(workdir / f"home-unpacked-{run}")]))
        archive_runs.append(measure([*ddlx, "datasets", "ingest", args.trace, "--from", str(release),
                                     "--data-home", str(workdir / f"home-archive-{run}")]))
        if run == 0:
            steps = {kind: step_seconds(workdir / f"home-{kind}-0", args.trace) for kind in ("unpacked", "archive")}
        shutil.rmtree(workdir / f"home-unpacked-{run}")
        if run:
            shutil.rmtree(workdir / f"home-archive-{run}")
    bare_s = statistics.median(r[0] for r in bare_runs)
    as_ddlx_s = statistics.median(r[0] for r in as_ddlx_runs)
    for name, runs in (("bare DuckDB: files -> Parquet (reference)", bare_runs),
                       (f"bare DuckDB, zstd {PARQUET_ZSTD_LEVEL} {PARQUET_VERSION} as ddlx", as_ddlx_runs),
                       ("ddlx datasets ingest (unpacked files)", ingest_runs),
                       ("ddlx datasets ingest (official archives)", archive_runs)):
        seconds, rss = statistics.median(r[0] for r in runs), max(r[1] for r in runs)
        rows.append((name, seconds, rss, (seconds / bare_s, seconds / as_ddlx_s)))
    seconds, rss = measure([*ddlx, "datasets", "ingest", args.trace, "--from", str(release),
                            "--data-home", str(workdir / "home-archive-0")])
    rows.append(("ddlx datasets ingest again (unchanged)", seconds, rss, (seconds / bare_s, seconds / as_ddlx_s)))

    marker = json.loads((unpacked / MARKER).read_text())  # what was generated, also when reused
    print(f"SYNTHETIC {args.trace} release, scale {marker['scale']:g}, seed {marker['seed']}: "
          f"{data_bytes(release) / 2**20:,.0f} MiB archives, {data_bytes(unpacked) / 2**20:,.0f} MiB "
          f"unpacked; {psutil.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB; "
          f"compared steps: median of {args.repeat} run(s), peak RSS the largest")
    print(f"{'step':<44} {'seconds':>9} {'peak RSS MiB':>12} {'x bare DuckDB':>14} {'x bare as ddlx':>16}")
    for name, secs, peak, ratios in rows:
        against = ("", "") if ratios is None else (f"{ratios[0]:.2f}", f"{ratios[1]:.2f}")
        print(f"{name:<44} {secs:>9.1f} {peak if peak is not None else float('nan'):>12.0f} "
              f"{against[0]:>14} {against[1]:>16}")
    print()
    print("ddlx's steps in the first run (the manifest's step_seconds; a table's time includes waiting for "
          "its archive to be unpacked):")
    print(f"{'step':<44} {'unpacked s':>11} {'archives s':>11}")
    for name in dict.fromkeys([*steps["unpacked"], *steps["archive"]]):
        cells = [f"{steps[kind][name]:.1f}" if name in steps[kind] else "" for kind in ("unpacked", "archive")]
        print(f"{name:<44} {cells[0]:>11} {cells[1]:>11}")
    if not args.keep and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
