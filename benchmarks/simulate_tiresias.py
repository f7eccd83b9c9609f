"""Benchmark: ddlx's pool simulator beside Tiresias' own simulator on one cluster of the Microsoft ITP
traces, for FIFO (strict and fit-first) and LAS (Tiresias' `dlas-gpu`).

Extracts `clusterNN.csv` from the ITP archive, imports it as a dataset (`--preset itp`) into a
data home under --workdir, exports it with `ddlx datasets export --format tiresias` (one switch,
`--gpus / 8` nodes of 8 GPUs), runs Tiresias' `simulator/run_sim.py` on that export from a copy of
the source folder given (`--scheme=count`: the GPU count only, as ddlx's pool), and runs ddlx on the
same jobs with the settings that equal each Tiresias schedule:

    Tiresias fifo      ddlx fifo --no-backfill
    Tiresias fjf       ddlx fifo (greedy backfilling)
    Tiresias dlas-gpu  ddlx las with TIRESIAS_LAS (thresholds 3250,7200 GPU-s, demotion next-event,
                       queue order queue-entry, preemption refill, stale ends), backfilling
    (for contrast)     the same without stale ends (a defect of Tiresias' that ends some jobs early),
                       and ddlx las with the default settings and Tiresias' thresholds

It prints per row both mean JCTs (seconds from submission to end), their ratio, how many jobs start
or end at another second than under Tiresias (matched through the export's `.ids.csv`; both clocks
count from the first submission), and the wall time of each run.

    python benchmarks/simulate_tiresias.py --tiresias ~/src/Tiresias --python python2.7
    python benchmarks/simulate_tiresias.py --tiresias DIR --cluster cluster01 --gpus 128

Tiresias needs Python 2.7 (`--python`, a command split like a shell's, e.g. "env PYENV_VERSION=2.7.18
python2.7"). It imports numpy without calling it; when the interpreter has no numpy the benchmark puts
an empty stand-in module on its PYTHONPATH (said in the output). Without `--tiresias` only ddlx runs,
and the benchmark says so. The source folder itself is never written to (Python 2 would leave .pyc
files beside the sources: the run uses a copy under --workdir).

Data: $DDLX_SHARED_TRACES/itp-elasticflow/raw-traces.tar.gz (else ../shared/traces/ beside the repo),
or --archive FILE.
"""

from __future__ import annotations

import argparse
import csv
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from ddlx.datasets.importers import import_dataset
from ddlx.formats.export import export_dataset
from ddlx.simulate import TIRESIAS_LAS, TIRESIAS_LAS_THRESHOLDS_GPU_S, las_policy, simulate_trace

REPO = Path(__file__).resolve().parents[1]
ARCHIVE = Path(os.environ.get("DDLX_SHARED_TRACES") or REPO.parent / "shared" / "traces") / "itp-elasticflow" / (
    "raw-traces.tar.gz")
GPUS_PER_NODE = 8
DATASET = "itp-cluster"
NUMPY_STAND_IN = '"""Stand-in for numpy: Tiresias imports it but calls it only in code left in comments."""\n'


def extract_cluster(archive: Path, cluster: str, folder: Path) -> Path:
    """`<cluster>.csv` of the ITP archive, written to `folder` (the only member read)."""
    with tarfile.open(archive) as tar:
        member = next((m for m in tar.getmembers() if Path(m.name).name == f"{cluster}.csv" and m.isfile()), None)
        if member is None:
            names = sorted(Path(m.name).stem for m in tar.getmembers() if m.name.endswith(".csv"))
            sys.exit(f"{archive}: no {cluster}.csv; the archive holds {', '.join(names)}")
        source = tar.extractfile(member)
        assert source is not None
        target = folder / f"{cluster}.csv"
        target.write_bytes(source.read())
    return target


def count_rows(path: Path) -> int:
    """Data rows of a CSV with a header line."""
    with path.open(newline="") as handle:
        return sum(1 for _ in csv.DictReader(handle))


def simulator_folder(source: Path) -> Path:
    """Tiresias' `simulator/` folder: `source` itself or its `simulator/` subfolder."""
    for folder in (source, source / "simulator"):
        if (folder / "run_sim.py").is_file():
            return folder
    sys.exit(f"{source}: no run_sim.py there or in simulator/ (give the Tiresias checkout, SymbioticLab/Tiresias)")


def tiresias_environment(python: list[str], workdir: Path) -> tuple[dict[str, str], str]:
    """The environment for `python` running Tiresias, and a note when numpy had to be stood in for."""
    env = dict(os.environ)
    probe = subprocess.run([*python, "-c", "import numpy"], capture_output=True, env=env)
    if probe.returncode == 0:
        return env, ""
    stubs = workdir / "python2-stand-ins"
    stubs.mkdir(exist_ok=True)
    (stubs / "numpy.py").write_text(NUMPY_STAND_IN)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(stubs), env.get("PYTHONPATH")]))
    return env, f"note: {' '.join(python)} has no numpy; an empty stand-in module is on its PYTHONPATH"


def run_tiresias(python: list[str], env: dict[str, str], simulator: Path, trace: Path, spec: Path, schedule: str,
                 out: Path) -> tuple[dict[int, tuple[int, int, int]], float]:
    """Tiresias' schedule of `trace`: job_id -> (start, end, JCT) from its job.csv, and the wall time (s)."""
    command = [*python, "run_sim.py", f"--cluster_spec={spec}", "--scheme=count", f"--trace_file={trace}",
               f"--schedule={schedule}", f"--log_path={out}"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=simulator, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or not (out / "job.csv").is_file():
        sys.exit(f"Tiresias {schedule} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    with (out / "job.csv").open(newline="") as handle:
        rows = {int(r["job_id"]): (int(r["start_time"]), int(r["end_time"]), int(r["JCT"]))
                for r in csv.DictReader(handle)}
    return rows, elapsed


def read_id_map(path: Path) -> dict[str, int]:
    """The export's `.ids.csv`: the dataset's job id -> the Tiresias job_id."""
    with path.open(newline="") as handle:
        return {row["job_id"]: int(row["job"]) for row in csv.DictReader(handle)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiresias", type=Path, default=None,
                        help="Tiresias source folder (a SymbioticLab/Tiresias checkout or its simulator/ folder)")
    parser.add_argument("--python", default="python2.7", help="Python 2.7 command for Tiresias (default python2.7)")
    parser.add_argument("--archive", type=Path, default=ARCHIVE, help="the ITP raw-traces.tar.gz")
    parser.add_argument("--cluster", default="cluster06", help="which clusterNN.csv (default cluster06)")
    parser.add_argument("--gpus", type=int, default=64, help=f"GPUs of the pool, a multiple of {GPUS_PER_NODE}")
    parser.add_argument("--workdir", type=Path, default=None, help="scratch folder (default: a temporary one)")
    args = parser.parse_args()
    if args.gpus < GPUS_PER_NODE or args.gpus % GPUS_PER_NODE:
        parser.error(f"--gpus must be a multiple of {GPUS_PER_NODE}")
    if not args.archive.is_file():
        sys.exit(f"{args.archive}: no such file (give --archive or set DDLX_SHARED_TRACES)")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ddlx-tiresias-"))
    workdir.mkdir(parents=True, exist_ok=True)
    home = workdir / "home"
    if home.exists():
        shutil.rmtree(home)

    table = extract_cluster(args.archive, args.cluster, workdir)
    jobs = count_rows(table)
    import_dataset(DATASET, table, home, preset="itp")
    trace = workdir / "export" / f"{args.cluster}.csv"
    if trace.parent.exists():
        shutil.rmtree(trace.parent)
    exported = export_dataset(home, DATASET, "tiresias", trace,
                              options={"nodes": str(args.gpus // GPUS_PER_NODE), "gpus_per_node": str(GPUS_PER_NODE)})
    spec = trace.with_name(f"{trace.stem}.cluster_spec.csv")
    ids = read_id_map(trace.with_name(f"{trace.name}.ids.csv"))
    print(f"ITP {args.cluster}: {jobs:,} jobs in the file, {exported.rows:,} exported; pool of {args.gpus} GPUs "
          f"({args.gpus // GPUS_PER_NODE} nodes x {GPUS_PER_NODE} under one switch)")

    tiresias_default = las_policy(TIRESIAS_LAS_THRESHOLDS_GPU_S)
    runs = [  # (Tiresias schedule, ddlx setting, policy, backfill)
        ("fifo", "fifo --no-backfill", "fifo", False),
        ("fjf", "fifo (backfilling)", "fifo", True),
        ("dlas-gpu", "las, Tiresias settings", las_policy(**TIRESIAS_LAS), True),
        ("dlas-gpu", "las, Tiresias settings, no stale ends", las_policy(**{**TIRESIAS_LAS, "stale_ends": False}),
         True),
        ("dlas-gpu", "las, default settings, thresholds 3250,7200", tiresias_default, True),
    ]
    ddlx: list[tuple[float, dict[int, tuple[float, float]], float]] = []
    for _, _, policy, backfill in runs:
        started = time.perf_counter()
        report = simulate_trace(home, DATASET, [policy], backfill=backfill, gpus=float(args.gpus))
        elapsed = time.perf_counter() - started
        workload, schedule = report.workload, report.results[0].schedule
        by_id = {ids[str(job)]: (float(schedule.first_start_s[i]), float(schedule.end_s[i]))
                 for i, job in enumerate(workload.job_ids)}
        ddlx.append((report.results[0].metrics["jct_avg_s"], by_id, elapsed))

    tiresias: dict[str, tuple[dict[int, tuple[int, int, int]], float]] = {}
    if args.tiresias is None:
        print("Tiresias: skipped (no --tiresias DIR given); ddlx's numbers only")
    else:
        python = shlex.split(args.python)
        copy = workdir / "tiresias-simulator"
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(simulator_folder(args.tiresias), copy)
        env, note = tiresias_environment(python, workdir)
        if note:
            print(note)
        for schedule in dict.fromkeys(run[0] for run in runs):
            out = workdir / f"tiresias-{schedule}"
            tiresias[schedule] = run_tiresias(python, env, copy, trace, spec, schedule, out)

    header = ("Tiresias", "ddlx", "Tiresias mean JCT s", "ddlx mean JCT s", "ddlx / Tiresias", "jobs differing",
              "Tiresias s", "ddlx s")
    rows = []
    for (schedule, setting, _, _), (mean, by_id, elapsed) in zip(runs, ddlx, strict=True):
        if schedule in tiresias:
            theirs, their_time = tiresias[schedule]
            their_mean = sum(jct for _, _, jct in theirs.values()) / len(theirs)
            # Both clocks start at the first submission (the export writes submit_time from it).
            differing = sum(1 for job, times in by_id.items() if theirs.get(job, (None, None, None))[:2] != times)
            rows.append((schedule, setting, f"{their_mean:,.1f}", f"{mean:,.1f}", f"{mean / their_mean:.4f}",
                         f"{differing:,}", f"{their_time:.1f}", f"{elapsed:.2f}"))
        else:
            rows.append((schedule, setting, "-", f"{mean:,.1f}", "-", "-", "-", f"{elapsed:.2f}"))
    widths = [max(len(str(row[i])) for row in (header, *rows)) for i in range(len(header))]
    for row in (header, tuple("-" * w for w in widths), *rows):
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)))
    print(f"\nfiles: {workdir}")


if __name__ == "__main__":
    main()
