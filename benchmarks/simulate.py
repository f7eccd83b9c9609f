"""Benchmark: `ddlx.simulate` on about a million jobs, every policy, with and without backfilling.
Prints a table of wall time (loading the jobs from the catalog, and the simulation itself), peak
memory and the average JCT. Target: any policy on 1 M jobs in under 2 minutes.

    python benchmarks/simulate.py [--workdir DIR] [--reuse] [--home DATA_HOME --trace T] [--gpus 600 ...]

Without --home, a SYNTHETIC PAI trace of scale 1 is generated with `ddlx datasets synth` into
--workdir and ingested there (as benchmarks/analyze.py does; --reuse keeps one a previous run left).
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
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from analyze import ensure_pai  # noqa: E402

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
    parser.add_argument("--home", type=Path, default=None, help="data home with --trace ingested")
    parser.add_argument("--trace", default="pai")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--reuse", action="store_true", help="reuse the trace a previous run left in --workdir")
    parser.add_argument("--gpus", type=int, nargs="*", default=[600],
                        help="cluster sizes to run besides the catalog's (none: only the catalog's)")
    parser.add_argument("--policies", default=",".join(POLICIES),
                        help="sjf-predicted needs a predictor and is not run here; its engine is sjf-oracle's")
    args = parser.parse_args()
    if args.home is None:
        if args.trace != "pai":
            sys.exit("--trace other than pai needs --home (a data home with it ingested)")
        workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ddlx-bench-simulate-"))
        args.home = ensure_pai(workdir, 1.0, args.reuse, [])[1]
    elif not (args.home / "catalog.duckdb").exists():
        sys.exit(f"no catalog in {args.home}")
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
              f"{'total s':>8} {'peak RSS MiB':>11} {'avg JCT s':>11} {'preemptions':>11}")
    print(header)
    print("-" * len(header))
    for policy, backfill, run in rows:
        preemptions = "-" if run["preemptions"] is None else f"{run['preemptions']:,}"
        print(f"{policy:<11} {'on' if backfill else 'off':>8} {run['gpus']:>6,.0f} {run['jobs']:>10,} "
              f"{run['load_s']:>7.1f} {run['simulate_s']:>10.1f} {run['load_s'] + run['simulate_s']:>8.1f} "
              f"{run['rss_mb']:>11,.0f} {run['jct_avg_s']:>11,.0f} {preemptions:>11}")


if __name__ == "__main__":
    main()
