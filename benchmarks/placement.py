"""Benchmark: the FGD paper's fill-up experiment on the real Alibaba GPU cluster trace v2023, beside
the FGD owners' own results.

Ingests the release into a temporary data home, runs `ddlx.placement.experiment.run_placement`
(six policies, `--seeds` seeds, the GPU nodes, filled to 1.3 x capacity, the owners' tie-break and
reading) on each pod list, and prints per list and policy, at 90, 95, 100, 110, 120 and 130 % arrived
workload, ddlx's mean unallocated and fragmented GPU share over its seeds beside the owners' range
[min, max] over their ten seeds (`!` marks a mean outside it; with another number of seeds the range
is scaled around the owners' mean, `reference.widening`), then FGD's cut against the best other
policy per list (at 100 %, and the largest over 90-130 %), and the wall time of the whole experiment.

    python benchmarks/placement.py                  # the default pod list, 10 seeds, 2 workers
    python benchmarks/placement.py --all-lists      # the 17 lists of the owners' results
    python benchmarks/placement.py --lists gpuspec33,multigpu50 --seeds 3

Where a Go toolchain is on PATH and `--owners-repo DIR` names a checkout of
hkust-adsl/kubernetes-scheduler-simulator, the owners' simulator is built from its vendored sources
(in a copy of the checkout) and one of its runs (FGD, default list, seed 42) is timed beside ddlx's
time for one run; otherwise the benchmark says it skipped that and why.

Data: $DDLX_SHARED_TRACES/alibaba-gpu-v2023 (else ../shared/traces/alibaba-gpu-v2023 beside the repo)
and $DDLX_SHARED_REFERENCE/fgd-owners (else ../shared/reference/fgd-owners).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from ddlx.analysis.placement_inputs import read_inputs
from ddlx.datasets.ingest import ingest
from ddlx.errors import InputError
from ddlx.placement import MILLI, POLICIES, summary_at
from ddlx.placement.experiment import cuts_of, run_placement
from ddlx.placement.fillup import arrived_percent
from ddlx.placement.reference import (
    COMPARED_LEVELS,
    beside_owners,
    owners_summary,
    owners_task_lists,
    read_owners_results,
    widening,
)

REPO = Path(__file__).resolve().parents[1]
TRACES = Path(os.environ.get("DDLX_SHARED_TRACES") or REPO.parent / "shared" / "traces") / "alibaba-gpu-v2023"
REFERENCE = Path(os.environ.get("DDLX_SHARED_REFERENCE") or REPO.parent / "shared" / "reference") / "fgd-owners"
DATASET = "pai-v2023"
#: The level of the headline cut (arrived tasks asking for the whole capacity).
FULL = 1.0
#: How far ddlx's cut may be from the owners', in percentage points, with as many seeds as the owners.
CUT_POINTS = 2.0
OWNERS_SEEDS = 10
DESCRIPTION = ("The FGD paper's fill-up experiment on the real Alibaba GPU cluster trace v2023: ddlx beside the "
               "FGD owners' results and, with Go, their simulator's time for one run.")


def _cell(row: dict | None) -> str:
    if row is None:
        return f"{'-':>21}"
    mark = " " if row["inside"] else "!"
    return f"{row['ddlx_mean']:>6.2%}{mark}[{row['band_min'] * 100:5.2f},{row['band_max'] * 100:5.2f}]"


def _table(title: str, beside: pl.DataFrame, seeds: int) -> list[str]:
    rows = {(r["policy"], round(r["level"], 4)): r for r in beside.iter_rows(named=True)}
    scaled = "" if seeds == OWNERS_SEEDS else f", scaled for {seeds} seeds (reference.widening)"
    lines = [f"  {title}: ddlx mean [owners' min, max{scaled}] ('!': outside)",
             f"  {'policy':<15}" + "".join(f"{f'{level:.0%}':>22}" for level in COMPARED_LEVELS)]
    for policy in POLICIES:
        lines.append(f"  {policy:<15}" + "".join(f" {_cell(rows.get((policy, round(level, 4))))}"
                                                 for level in COMPARED_LEVELS))
    return lines


def _cut_at(cuts: pl.DataFrame, level: float) -> dict | None:
    found = cuts.filter((pl.col("level") - level).abs() < 1e-9)
    return found.row(0, named=True) if found.height else None


def _largest(cuts: pl.DataFrame) -> dict | None:
    return cuts.sort("cut", descending=True).row(0, named=True) if cuts.height else None


def compare_list(home: Path, owners: pl.DataFrame, task_list: str, seeds: int, workers: int,
                 tie_break: str) -> dict:
    """Run one list and set it beside the owners' results: the printed lines, inside counts and cuts."""
    inputs = read_inputs(home, DATASET, task_list, "gpu")
    start = time.perf_counter()
    experiment = run_placement(inputs, None, seeds, workers, tie_break=tie_break)
    seconds = time.perf_counter() - start
    unallocated = beside_owners(experiment.summary, owners_summary(owners, task_list, "unallocated_share"))
    fragmented = beside_owners(summary_at(experiment.steps, COMPARED_LEVELS, "fragmented_share"),
                               owners_summary(owners, task_list, "fragmented_share"))
    ours = cuts_of(experiment.summary, "mean")
    theirs = cuts_of(owners_summary(owners, task_list, levels=tuple(p / 100 for p in range(90, 131))), "mean")
    ours_all = cuts_of(experiment.curves.filter(pl.col("level") >= 0.9 - 1e-9))
    gpus = inputs.source["gpus"]
    lines = [f"== {task_list}: {inputs.source['tasks']:,} tasks on {inputs.source['nodes']:,} GPU nodes, "
             f"{gpus:,} GPUs; {len(POLICIES)} policies x {seeds} seeds in {seconds:.1f} s",
             *_table("unallocated GPU share", unallocated, seeds), *_table("fragmented GPU share", fragmented, seeds)]
    return {"task_list": task_list, "lines": lines, "seconds": seconds, "gpus": gpus,
            "runs": experiment.steps.group_by("policy", "seed").agg(pl.col("run_seconds").first())
            .with_columns(pl.lit(task_list).alias("task_list")),
            "inside": (int(unallocated["inside"].sum()), unallocated.height,
                       int(fragmented["inside"].sum()), fragmented.height),
            "cut": (_cut_at(ours, FULL), _cut_at(theirs, FULL)), "largest": (_largest(ours_all), _largest(theirs))}


def _cut_text(cut: dict | None, gpus: int) -> str:
    if cut is None:
        return f"{'-':>32}"
    return f"{cut['cut']:>6.1%} ({(cut['best'] - cut['own']) * gpus:>4.0f} GPUs, vs {cut['best_other']:<14})"


def print_cuts(results: list[dict], seeds: int) -> int:
    """FGD's cut per list, ddlx beside the owners; returns how many lists agree within CUT_POINTS
    (scaled by `widening` for another number of seeds than the owners')."""
    tolerance = CUT_POINTS * widening(seeds, OWNERS_SEEDS)
    print(f"\nFGD's cut against the best other policy at {FULL:.0%} arrived workload (ddlx | owners | points apart, "
          f"at most {tolerance:.1f} agrees), and the largest over 90-130 %")
    print(f"  {'list':<12}{'ddlx':>33}  {'owners':>33}  {'apart':>6}   largest: ddlx | owners")
    agree = 0
    for result in results:
        ours, theirs = result["cut"]
        apart = abs(ours["cut"] - theirs["cut"]) * 100 if ours and theirs else float("nan")
        agree += apart <= tolerance
        big_ours, big_theirs = result["largest"]
        largest = " | ".join(f"{c['cut']:.1%} at {c['level']:.0%}" if c else "-" for c in (big_ours, big_theirs))
        print(f"  {result['task_list']:<12}{_cut_text(ours, result['gpus'])}  {_cut_text(theirs, result['gpus'])}  "
              f"{apart:>6.1f}   {largest}")
    return agree


#: The owners' run that is timed: their experiments' settings for FGD (run_scripts/generate_run_scripts.py).
OWNERS_POLICY, OWNERS_SEED, OWNERS_LIST = "fgd", 42, "default"
OWNERS_RUN_ARGS = ("-FGD", "1000", "-gpusel", "FGD", "-dimext", "share", "-norm", "max", "-tune", "1.3",
                   "-tuneseed", str(OWNERS_SEED), "--shuffle-pod=true")
#: Files of the owners' checkout the timed run needs.
OWNERS_FILES = ("vendor", "cmd", "scripts/generate_config_and_run.py", "data/pod_csv_to_yaml.py",
                "data/node_yaml/openb_node_list_gpu_node.yaml")
#: One line per arrival of the owners' log (pkg/simulator/analysis.go): GPU milli used, GPUs, milli arrived.
ALLOC_LINE = re.compile(r"\[Alloc\];.*Used GPU Milli: (\d+); Total GPUs: (\d+); Arrived GPU Milli: (\d+)")


@dataclass(frozen=True)
class OwnersRun:
    """One run of the owners' simulator: `seconds` of wall time of the `simon apply` process (its
    start, reading its YAML input, the fill-up, writing its log; not the build, not the conversion
    of the pod CSV to YAML), the build's seconds, the Go version, and its log's arrivals
    (`read_owners_log`)."""

    seconds: float
    build_seconds: float
    go_version: str
    arrivals: pl.DataFrame


def read_owners_log(path: Path) -> pl.DataFrame:
    """The `[Alloc]` lines of an owners' simulator log, one row per line, in the columns
    `summary_at` reads: policy, seed, step, arrived_workload and arrived_percent (arrived milli-GPU
    over the capacity, a share and a whole percent), unallocated_share (1 - used milli-GPU over the
    capacity; the capacity is Total GPUs x 1000, `InputError` when lines differ on it). Empty when
    the log has no such line."""
    used, total, arrived = [], [], []
    with Path(path).open(encoding="utf-8", errors="replace") as log:
        for number, line in enumerate(log, start=1):
            found = ALLOC_LINE.search(line)
            if found:
                if total and int(found[2]) != total[0]:
                    raise InputError(path, f"expected the same Total GPUs on every [Alloc] line ({total[0]}), "
                                           f"found {found[2]}", line=number)
                used.append(int(found[1]))
                total.append(int(found[2]))
                arrived.append(int(found[3]))
    capacity = (total[0] if total else 1) * MILLI
    arrived_milli = np.asarray(arrived, dtype=np.int64)
    return pl.DataFrame({
        "policy": [OWNERS_POLICY] * len(used), "seed": [OWNERS_SEED] * len(used),
        "step": np.arange(1, len(used) + 1, dtype=np.int64),
        "arrived_workload": arrived_milli / capacity,
        "arrived_percent": arrived_percent(arrived_milli, capacity),
        "unallocated_share": 1.0 - np.asarray(used, dtype=np.int64) / capacity,
    }, schema_overrides={"seed": pl.Int64})


def _last_line(done: subprocess.CompletedProcess) -> str:
    lines = (done.stderr or done.stdout or "").strip().splitlines()
    return lines[-1] if lines else f"exit code {done.returncode}"


def owners_run(owners_repo: Path | None) -> tuple[OwnersRun | None, str]:
    """Build the owners' simulator from the vendored sources of `owners_repo` (a checkout of
    hkust-adsl/kubernetes-scheduler-simulator, copied to a temporary folder, with GOFLAGS=-mod=vendor
    and GOPROXY=off: nothing is downloaded) and time one run as their experiments run it (FGD, the
    default pod list of the trace folder converted by their data/pod_csv_to_yaml.py, their GPU node
    YAML, tune 1.3, seed 42). Returns (the run, a one-line description) or (None, why it was skipped)."""
    go = shutil.which("go")
    if go is None:
        return None, "skipped: no Go toolchain on PATH (`go` not found); install Go to time the owners' simulator"
    if owners_repo is None:
        return None, ("skipped: name a checkout of hkust-adsl/kubernetes-scheduler-simulator (with its vendor/ "
                      "folder) with --owners-repo DIR")
    missing = [name for name in OWNERS_FILES if not (owners_repo / name).exists()]
    if missing:
        return None, f"skipped: {owners_repo} is not a checkout of the owners' simulator: no {', '.join(missing)}"
    for module in ("pandas", "yaml"):
        if subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode:
            return None, f"skipped: the owners' input scripts need the Python module {module}"
    version = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True).stdout.strip() or go
    env = {**os.environ, "GOFLAGS": "-mod=vendor", "GOPROXY": "off"}
    pods_csv = TRACES / f"openb_pod_list_{OWNERS_LIST}.csv"
    with tempfile.TemporaryDirectory(prefix="ddlx-owners-") as scratch:
        copy = Path(scratch) / "simulator"
        shutil.copytree(owners_repo, copy, ignore=shutil.ignore_patterns(".git", "experiments", "bin",
                                                                         "openb_pod_list_*"))
        start = time.perf_counter()
        built = subprocess.run([go, "build", "-trimpath", "-o", "bin/simon", "./cmd"], cwd=copy, env=env,
                               capture_output=True, text=True)
        build_seconds = time.perf_counter() - start
        if built.returncode:
            return None, f"skipped: `go build` ({version}) failed: {_last_line(built)}"
        # their data/prepare_input.sh for one list: the pods' YAML beside the GPU nodes' YAML
        inputs = Path(scratch) / "input"
        (inputs / pods_csv.stem).mkdir(parents=True)
        shutil.copy(copy / "data" / "node_yaml" / "openb_node_list_gpu_node.yaml", inputs / pods_csv.stem)
        prepared = subprocess.run([sys.executable, str(copy / "data" / "pod_csv_to_yaml.py"), str(pods_csv)],
                                  cwd=inputs, capture_output=True, text=True)
        if prepared.returncode:
            return None, f"skipped: the owners' data/pod_csv_to_yaml.py failed: {_last_line(prepared)}"
        run_dir = Path(scratch) / "run"
        configured = subprocess.run([sys.executable, "scripts/generate_config_and_run.py", "-d", str(run_dir),
                                     "-f", str(inputs / pods_csv.stem), *OWNERS_RUN_ARGS],
                                    cwd=copy, capture_output=True, text=True)
        command = next((line.split("Ex:", 1)[1].split() for line in configured.stdout.splitlines()
                        if line.strip().startswith("Ex:")), None)
        if configured.returncode or command is None:
            return None, f"skipped: the owners' scripts/generate_config_and_run.py failed: {_last_line(configured)}"
        log_path = run_dir / "simon.log"
        start = time.perf_counter()
        with log_path.open("wb") as log:
            ran = subprocess.run(command, cwd=copy, stdout=log, stderr=subprocess.STDOUT)
        seconds = time.perf_counter() - start
        arrivals = read_owners_log(log_path)
        if ran.returncode or arrivals.is_empty():
            tail = log_path.read_text(errors="replace").strip().splitlines()[-1:] or [f"exit code {ran.returncode}"]
            return None, f"skipped: the owners' run failed: {tail[0]}"
    run = OwnersRun(seconds, build_seconds, version, arrivals)
    return run, (f"{seconds:.1f} s for one run ({OWNERS_POLICY}, {OWNERS_LIST} list, seed {OWNERS_SEED}, "
                 f"{arrivals.height:,} arrivals; the simon process only: built in {build_seconds:.0f} s "
                 f"with {version}, not counted)")


def owners_run_check(run: OwnersRun, owners: pl.DataFrame) -> str:
    """The owners' run's unallocated share at 100 % beside their published value for that seed and
    their range over all their seeds (the same list and policy)."""
    mine = summary_at(run.arrivals, (FULL,))["mean"][0]
    published = owners.filter((pl.col("task_list") == OWNERS_LIST) & (pl.col("policy") == OWNERS_POLICY)
                              & (pl.col("percent") == round(FULL * 100)))
    same_seed = published.filter(pl.col("seed") == OWNERS_SEED)["unallocated_share"]
    low, high = published["unallocated_share"].min(), published["unallocated_share"].max()
    seed_text = f"{same_seed[0]:.2%}" if same_seed.len() else "not published"
    inside = "inside" if low - 5e-5 <= mine <= high + 5e-5 else "OUTSIDE"
    return (f"its unallocated GPU share at {FULL:.0%} arrived workload {mine:.2%} (their published seed "
            f"{OWNERS_SEED}: {seed_text}; {inside} their range [{low:.2%}, {high:.2%}] over "
            f"{published.height} seeds)")


def _load() -> str:
    """The machine's load average over the last minute, where the platform reports it."""
    try:
        return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    except OSError:
        return "load average not reported"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--all-lists", action="store_true", help="every pod list of the owners' results (17)")
    which.add_argument("--lists", default="default", help="pod lists, comma-separated (default: default)")
    parser.add_argument("--seeds", type=int, default=10, help="seeds per policy (default 10, as the owners)")
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--tie-break", default="random", choices=("random", "name"),
                        help="ties to a seeded random node (default, as the owners) or to the first by name")
    parser.add_argument("--owners-repo", type=Path, default=None, metavar="DIR",
                        help="a checkout of hkust-adsl/kubernetes-scheduler-simulator: build it (needs Go) and time "
                             "one of its runs (FGD, default list, seed 42)")
    args = parser.parse_args(argv)
    for folder in (TRACES, REFERENCE):
        if not folder.is_dir():
            print(f"folder not found: {folder}", file=sys.stderr)
            return 1
    owners = read_owners_results(REFERENCE)
    lists = owners_task_lists(owners) if args.all_lists else [s.strip() for s in args.lists.split(",") if s.strip()]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ddlx-placement-bench-") as scratch:
        home = Path(scratch) / "home"
        ingest(DATASET, TRACES, home)
        ingest_seconds = time.perf_counter() - started
        print(f"{DATASET} ingested in {ingest_seconds:.1f} s; {len(lists)} pod list(s) x {len(POLICIES)} policies x "
              f"{args.seeds} seeds, {args.workers} workers, tie-break {args.tie_break}\n")
        results = []
        for task_list in lists:
            results.append(compare_list(home, owners, task_list, args.seeds, args.workers, args.tie_break))
            print("\n".join(results[-1]["lines"]), flush=True)
    agree = print_cuts(results, args.seeds)
    unallocated = [sum(r["inside"][i] for r in results) for i in range(4)]
    print(f"\ninside the owners' range: unallocated {unallocated[0]}/{unallocated[1]}, fragmented "
          f"{unallocated[2]}/{unallocated[3]}; FGD's cut at {FULL:.0%} within "
          f"{CUT_POINTS * widening(args.seeds, OWNERS_SEEDS):.1f} points: "
          f"{agree}/{len(results)} lists")
    runs = pl.concat([r["runs"] for r in results])
    experiment_seconds = sum(r["seconds"] for r in results)
    print(f"ddlx: {len(lists)} lists x {len(POLICIES)} policies x {args.seeds} seeds = {runs.height} runs in "
          f"{experiment_seconds:.1f} s of wall time ({args.workers} workers; {runs['run_seconds'].sum():.1f} s "
          f"of run time summed; one FGD run {runs.filter(pl.col('policy') == 'fgd')['run_seconds'].mean():.1f} s "
          f"on average); ingest {ingest_seconds:.1f} s; {_load()}")
    run, what = owners_run(args.owners_repo)
    print(f"owners' simulator: {what}" + (f"; {_load()}" if run is not None else ""))
    ours = runs.filter((pl.col("policy") == OWNERS_POLICY) & (pl.col("task_list") == OWNERS_LIST))["run_seconds"]
    if run is not None:
        print(f"  {owners_run_check(run, owners)}")
        if ours.len():
            print(f"one {OWNERS_POLICY} run of the {OWNERS_LIST} list: the owners' simulator {run.seconds:.1f} s "
                  f"(seed {OWNERS_SEED}), ddlx {ours.mean():.1f} s (mean of {ours.len()} seeds, "
                  f"{args.workers} workers): the owners' / ddlx = {run.seconds / ours.mean():.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
