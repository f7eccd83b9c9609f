"""The FGD owners' own fill-up results, read in place, and ddlx's experiment beside them.

The owners of the FGD paper ship their simulator's results (hkust-adsl/kubernetes-scheduler-simulator,
experiments/analysis/expected_results/, Apache-2.0) for 17 pod lists x 6 policies x 10 seeds:

- `analysis_allo_discrete.csv`: allocated GPU share, in percent of the cluster's GPUs;
- `analysis_frag_discrete.csv`: fragmented GPU share (the paper's cluster fragmentation), in percent.

Columns `workload` (openb_pod_list_<task list>), `sc_policy` (01-Random ... 06-FGD), `tune` (1.3),
`seed` (42-51), `total_gpus` (allocation file only), then one column per arrived-workload percent
0..130, each the owners' bin-mean reading (`fillup.READINGS`). ddlx's own seeds are not the owners'
(Go's random stream is not reproduced), so the comparison is of ranges: ddlx's mean over its seeds
against the owners' [min, max] over theirs (scaled by `widening` when ddlx ran another number of
seeds), and FGD's cut against the best other policy.
"""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl

from ddlx.errors import InputError, first_line

ALLOCATED_FILE = "analysis_allo_discrete.csv"
FRAGMENTED_FILE = "analysis_frag_discrete.csv"
#: The owners' policy folders and ddlx's policy names.
OWNERS_POLICIES: dict[str, str] = {
    "01-Random": "random", "02-DotProd": "dotprod", "03-GpuClustering": "gpu-clustering",
    "04-GpuPacking": "gpu-packing", "05-BestFit": "best-fit", "06-FGD": "fgd",
}
#: Prefix of the owners' `workload` values before ddlx's task-list name.
WORKLOAD_PREFIX = "openb_pod_list_"
#: Arrived-workload levels (shares of capacity) of the comparison.
COMPARED_LEVELS: tuple[float, ...] = (0.9, 0.95, 1.0, 1.1, 1.2, 1.3)
_KEYS = ("workload", "sc_policy", "tune", "seed")


def read_owners_file(path: Path, column: str) -> pl.DataFrame:
    """One of the owners' discrete files as a long table: task_list, policy (ddlx's name), seed,
    percent and level (the arrived workload in whole percents and as a share of capacity), and
    `column` (the file's percent / 100). `InputError` naming the file, and the line or field, when
    it is not such a file."""
    path = Path(path)
    try:
        with path.open(encoding="utf-8") as handle:
            header = handle.readline().strip().split(",")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, f"cannot read the owners' results file: {first_line(exc)}") from None
    missing = [key for key in _KEYS if key not in header]
    percents = [name for name in header if name.isdigit()]
    if missing or not percents:
        raise InputError(path, f"expected the owners' columns {', '.join(_KEYS)}, [total_gpus,] 0, 1, ... 130; "
                               f"missing {', '.join(missing) or 'the percent columns'}", line=1)
    schema = {name: (pl.String if name in ("workload", "sc_policy", "tune") else pl.Int64 if name in (
        "seed", "total_gpus") else pl.Float64) for name in header}
    try:
        wide = pl.read_csv(path, schema=schema)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputError(path, f"not the owners' discrete results (a value is not a number): {first_line(exc)}") \
            from None
    unknown = wide.with_row_index("row").filter(~pl.col("sc_policy").is_in(list(OWNERS_POLICIES)))
    if unknown.height:
        row = unknown.row(0, named=True)
        raise InputError(path, f"unknown policy '{row['sc_policy']}'; expected one of: {', '.join(OWNERS_POLICIES)}",
                         line=int(row["row"]) + 2, field="sc_policy")
    return (wide.unpivot(on=percents, index=["workload", "sc_policy", "seed"], variable_name="percent",
                         value_name=column)
            .select(pl.col("workload").str.strip_prefix(WORKLOAD_PREFIX).alias("task_list"),
                    pl.col("sc_policy").replace_strict(OWNERS_POLICIES).alias("policy"), "seed",
                    pl.col("percent").cast(pl.Int64), (pl.col("percent").cast(pl.Int64) / 100).alias("level"),
                    pl.col(column) / 100))


def read_owners_results(folder: Path) -> pl.DataFrame:
    """Both files of `folder`: task_list, policy, seed, level, unallocated_share (1 - allocated
    share) and fragmented_share, shares of the GPU capacity, per percent and level."""
    folder = Path(folder)
    allocated = read_owners_file(folder / ALLOCATED_FILE, "allocated_share")
    fragmented = read_owners_file(folder / FRAGMENTED_FILE, "fragmented_share")
    keys = ["task_list", "policy", "seed", "percent", "level"]
    return (allocated.with_columns((1 - pl.col("allocated_share")).alias("unallocated_share")).drop("allocated_share")
            .join(fragmented, on=keys, how="left").sort(keys))


def owners_task_lists(owners: pl.DataFrame) -> list[str]:
    """The task lists of the owners' results, the real workload first."""
    return sorted(set(owners["task_list"]), key=lambda name: (name != "default", name))


def owners_summary(owners: pl.DataFrame, task_list: str, column: str = "unallocated_share",
                   levels: tuple[float, ...] = COMPARED_LEVELS) -> pl.DataFrame:
    """The owners' seeds of one task list at `levels`, in the shape of `fillup.summary_at`: policy,
    level, mean, min, max and seeds over their seeds."""
    wanted = [round(level * 100) for level in levels]
    return (owners.filter((pl.col("task_list") == task_list) & pl.col("percent").is_in(wanted))
            .group_by("policy", "level").agg(pl.col(column).mean().alias("mean"), pl.col(column).min().alias("min"),
                                             pl.col(column).max().alias("max"), pl.len().alias("seeds"))
            .sort("policy", "level"))


def widening(ddlx_seeds: int, owners_seeds: int) -> float:
    """The factor on the owners' seed range, around their mean, for a ddlx mean over `ddlx_seeds`
    seeds: sqrt((owners_seeds / ddlx_seeds + 1) / 2). It is 1 for as many seeds as the owners ran;
    for fewer it widens the range by the extra spread of a mean over fewer seeds, so the chance of
    a mean landing outside stays that of ten seeds against ten."""
    return math.sqrt((owners_seeds / ddlx_seeds + 1) / 2)


def beside_owners(ddlx_summary: pl.DataFrame, owners_levels: pl.DataFrame) -> pl.DataFrame:
    """ddlx's summary (`summary_at`) and the owners' (`owners_summary`) joined per policy and level:
    ddlx_mean, ddlx_min, ddlx_max, ddlx_seeds, owners_mean, owners_min, owners_max, owners_seeds, the
    band (the owners' [min, max] scaled around their mean by `widening`, their range itself for as
    many seeds) and `inside` (ddlx's mean within the band)."""
    ours = ddlx_summary.select("policy", pl.col("level").round(4), pl.col("mean").alias("ddlx_mean"),
                               pl.col("min").alias("ddlx_min"), pl.col("max").alias("ddlx_max"),
                               pl.col("seeds").alias("ddlx_seeds"))
    theirs = owners_levels.select("policy", pl.col("level").round(4), pl.col("mean").alias("owners_mean"),
                                  pl.col("min").alias("owners_min"), pl.col("max").alias("owners_max"),
                                  pl.col("seeds").alias("owners_seeds"))
    both = ours.join(theirs, on=["policy", "level"], how="inner")
    factor = pl.Series([widening(a, b) for a, b in zip(both["ddlx_seeds"], both["owners_seeds"], strict=True)],
                       dtype=pl.Float64)
    mean = pl.col("owners_mean")
    return (both.with_columns(factor.alias("widening"))
            .with_columns(pl.when(pl.col("widening") == 1).then(pl.col("owners_min"))
                          .otherwise(mean - (mean - pl.col("owners_min")) * pl.col("widening")).alias("band_min"),
                          pl.when(pl.col("widening") == 1).then(pl.col("owners_max"))
                          .otherwise(mean + (pl.col("owners_max") - mean) * pl.col("widening")).alias("band_max"))
            .with_columns(pl.col("ddlx_mean").is_between(pl.col("band_min"), pl.col("band_max")).alias("inside"))
            .drop("widening").sort("policy", "level"))
