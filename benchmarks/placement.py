"""Benchmark: the paper's fill-up experiment on the real Alibaba GPU cluster trace v2023.

Six policies x ten seeds on the 1,523-node cluster (openb_node_list_all_node.csv) with the default
pod list (openb_pod_list_default.csv), filled until arrived GPU requests reach the GPU capacity.
Prints seconds per policy (all seeds, summed run times; runs use two worker processes) and the
unallocated GPU share at 90/95/100 % arrived workload (mean, min, max over seeds).

Data folder: $DDLX_SHARED_TRACES/alibaba-gpu-v2023, else ../shared/traces/alibaba-gpu-v2023 beside the repo.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import polars as pl

from ddlx.simulate.placement import POLICIES, run_experiment, summary_at

REPO = Path(__file__).resolve().parents[1]
TRACES = Path(os.environ.get("DDLX_SHARED_TRACES") or REPO.parent / "shared" / "traces") / "alibaba-gpu-v2023"
SEEDS = range(10)
WORKERS = 2


def load() -> tuple[pl.DataFrame, pl.DataFrame]:
    nodes = pl.read_csv(TRACES / "openb_node_list_all_node.csv", schema_overrides={"model": pl.String}).select(
        pl.col("sn").alias("node"), "cpu_milli", "memory_mib", pl.col("gpu").alias("gpus"),
        pl.col("model").alias("gpu_model"))
    pods = pl.read_csv(TRACES / "openb_pod_list_default.csv", schema_overrides={"gpu_spec": pl.String}).select(
        pl.col("num_gpu").alias("num_gpus"), "gpu_milli", "cpu_milli", "memory_mib",
        pl.col("gpu_spec").alias("gpu_models"))
    return nodes, pods


def main() -> int:
    if not TRACES.is_dir():
        print(f"trace folder not found: {TRACES}", file=sys.stderr)
        return 1
    start = time.perf_counter()
    nodes, pods = load()
    print(f"{nodes.height} nodes, {int(nodes['gpus'].sum())} GPUs; {pods.height} pods; "
          f"{len(SEEDS)} seeds, {WORKERS} workers")
    results = run_experiment(nodes, pods, list(POLICIES), SEEDS, workers=WORKERS)
    wall = time.perf_counter() - start
    runs = results.group_by("policy", "seed").agg(pl.col("run_seconds").first(), pl.col("step").max(),
                                                  pl.col("failed").max())
    times = runs.group_by("policy").agg(pl.col("run_seconds").sum().alias("seconds"),
                                        pl.col("step").mean().alias("pods"), pl.col("failed").mean().alias("failed"))
    summary = summary_at(results)
    wide = summary.pivot(on="level", index="policy", values=["mean", "min", "max"])
    table = times.join(wide, on="policy").sort(pl.col("policy").replace_strict(
        {p: i for i, p in enumerate(POLICIES)}, return_dtype=pl.Int64))
    print()
    print(f"{'policy':<15}{'seconds':>8}{'pods':>7}{'failed':>8}   unallocated GPU share (mean [min, max]) at arrived")
    print(f"{'':<38}" + "".join(f"{f'{lv:.0%}':>22}" for lv in (0.9, 0.95, 1.0)))
    for row in table.iter_rows(named=True):
        cells = "".join(f"{row[f'mean_{lv}']:>8.2%} [{row[f'min_{lv}']:.2%},{row[f'max_{lv}']:.2%}]"
                        for lv in ("0.9", "0.95", "1.0"))
        print(f"{row['policy']:<15}{row['seconds']:>8.1f}{row['pods']:>7.0f}{row['failed']:>8.1f}   {cells}")
    cap = int(nodes["gpus"].sum())
    at_full = summary.filter(pl.col("level") == 1.0)
    best_base = at_full.filter(pl.col("policy") != "fgd").sort("mean").row(0, named=True)
    fgd = at_full.filter(pl.col("policy") == "fgd").row(0, named=True)
    saved = best_base["mean"] - fgd["mean"]
    print(f"\nat 100 %: fgd leaves {fgd['mean'] * cap:.0f} GPUs unallocated, best baseline {best_base['policy']} "
          f"{best_base['mean'] * cap:.0f}: {saved * cap:.0f} GPUs ({saved / best_base['mean']:.0%}) fewer")
    print(f"total wall time {wall:.1f} s (run seconds summed over policies: {times['seconds'].sum():.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
