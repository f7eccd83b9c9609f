"""Benchmark: `ddlx.simulate` on about a million jobs, every policy, with and without backfilling.
Prints a table of wall time (loading the jobs from the catalog, and the simulation itself), peak
memory and the average JCT. Target: any policy on 1 M jobs in under 2 minutes.

    python benchmarks/simulate.py [--home /work/bench/pai1/home] [--trace pai] [--gpus 600 ...]

Each run is a separate process (so its peak RSS is its own). Scenarios: the catalog's capacity
(PAI: 6,742 GPUs, where the generated load leaves queues short) and each `--gpus N` given (default
600: an overloaded pool where hundreds of thousands of jobs wait and LAS preempts over a million
times, the engine's worst case).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

RUN_ONE = r'''
import json, resource, sys, time
from pathlib import Path
from ddlx.analysis.context import open_trace
from ddlx.simulate import Capacity, load_workload, simulate, trace_capacity

home, trace, policy, backfill, gpus = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1", sys.argv[5]
started = time.perf_counter()
with open_trace(Path(home), trace) as ctx:
    capacity = trace_capacity(ctx) if gpus == "catalog" else Capacity(float(gpus), "given", "benchmark")
    workload = load_workload(ctx, capacity)
loaded = time.perf_counter()
result = simulate(workload, [policy], backfill=backfill).results[0]
done = time.perf_counter()
print(json.dumps({"jobs": workload.jobs, "gpus": capacity.gpus, "load_s": loaded - started,
                  "simulate_s": done - loaded, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "jct_avg_s": result.metrics["jct_avg_s"], "preemptions": result.metrics["preemptions"]}))
'''

POLICIES = ("fifo", "sjf-oracle", "las")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, default=Path("/work/bench/pai1/home"))
    parser.add_argument("--trace", default="pai")
    parser.add_argument("--gpus", type=int, nargs="*", default=[600],
                        help="cluster sizes to run besides the catalog's (none: only the catalog's)")
    parser.add_argument("--policies", default=",".join(POLICIES),
                        help="sjf-predicted needs a predictor and is not run here; its engine is sjf-oracle's")
    args = parser.parse_args()
    if not (args.home / "catalog.duckdb").exists():
        sys.exit(f"no catalog in {args.home}: generate and ingest a PAI trace first "
                 "(ddlx datasets synth pai --scale 1 --out R; ddlx datasets ingest pai --from R --data-home H)")
    rows = []
    for gpus in ["catalog", *map(str, args.gpus)]:
        for policy in args.policies.split(","):
            for backfill in (True, False):
                output = subprocess.run([sys.executable, "-c", RUN_ONE, str(args.home), args.trace, policy,
                                         "1" if backfill else "0", gpus], check=True, capture_output=True, text=True)
                run = json.loads(output.stdout.strip().splitlines()[-1])
                rows.append((policy, backfill, run))
                print(f"  done: {policy} backfill={backfill} gpus={run['gpus']:g}: {run['simulate_s']:.1f} s",
                      file=sys.stderr, flush=True)
    print(f"ddlx simulate on {args.home} (trace {args.trace}); seconds: load = jobs from the catalog, "
          "simulate = the engine")
    header = (f"{'policy':<11} {'backfill':>8} {'GPUs':>6} {'jobs':>10} {'load s':>7} {'simulate s':>10} "
              f"{'total s':>8} {'peak RSS MB':>11} {'avg JCT s':>11} {'preemptions':>11}")
    print(header)
    print("-" * len(header))
    for policy, backfill, run in rows:
        preemptions = "-" if run["preemptions"] is None else f"{run['preemptions']:,}"
        print(f"{policy:<11} {'on' if backfill else 'off':>8} {run['gpus']:>6,.0f} {run['jobs']:>10,} "
              f"{run['load_s']:>7.1f} {run['simulate_s']:>10.1f} {run['load_s'] + run['simulate_s']:>8.1f} "
              f"{run['rss_mb']:>11,.0f} {run['jct_avg_s']:>11,.0f} {preemptions:>11}")


if __name__ == "__main__":
    main()
