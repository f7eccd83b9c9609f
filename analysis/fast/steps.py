"""Fast paths of the step function of allocated GPUs (`ddlx.analysis.allocation`): its running
sums taken in memory, the steps in force at given instants looked up in memory, and a whole
trace's steps read from those of its one cluster.

The reference is `allocation.integrable_steps_sql`: DuckDB's window over DECIMAL changes (each
change in millionths of a GPU, each change x time in millionths of a GPU-second), cast to DOUBLE.
`summed_steps` takes the same running sums on the DECIMAL digits as 64-bit integers and converts
them as DuckDB's cast does (`duckdb_decimal_double`), so its rows are the reference's to the bit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
import pyarrow as pa

from ddlx.analysis.context import TraceContext
from ddlx.analysis.fast import fast_paths

#: Most changes of allocated GPUs whose running sums are taken in memory (Polars, about 60 bytes
#: a change), and most steps looked up in memory; a trace with more leaves them to DuckDB's
#: window and ASOF joins, within its memory limit.
STEPS_SUMMED_IN_MEMORY = 4_000_000

#: Largest sum of absolute values the in-memory running sums take in 64-bit integers.
SUMMABLE = 2.0 ** 62


def duckdb_decimal_double(unscaled: np.ndarray, scale: int) -> np.ndarray:
    """The DOUBLEs DuckDB's cast gives for the DECIMALs of `scale` whose digits are the 64-bit
    integers `unscaled`: unscaled / 10^scale while |unscaled| <= 2^53 (exact in a DOUBLE), else
    the whole part plus the fraction / 10^scale (whole part truncated toward zero). True divisions
    (NumPy's): a product with the reciprocal would differ in the last bit."""
    power = 10 ** scale
    if not len(unscaled) or (unscaled.min() >= -2 ** 53 and unscaled.max() <= 2 ** 53):
        return unscaled.astype(np.float64) / power  # every one exact in a DOUBLE
    whole = np.sign(unscaled) * (np.abs(unscaled) // power)
    fraction = unscaled - whole * power
    return np.where(np.abs(unscaled) <= 2 ** 53, unscaled.astype(np.float64) / power,
                    whole.astype(np.float64) + fraction.astype(np.float64) / power)


def decimal_digits(column: pa.ChunkedArray) -> np.ndarray | None:
    """The digits of a decimal128 column without NULLs as 64-bit integers; None when one does not
    fit in 64 bits."""
    array = column.combine_chunks()
    words = np.frombuffer(array.buffers()[1], dtype="<i8").reshape(-1, 2)[array.offset:array.offset + len(array)]
    low, high = words[:, 0], words[:, 1]
    return low if array.null_count == 0 and (high == (low >> 63)).all() else None


def summed(changes: pa.Table, groups: Sequence[str], multithreaded: bool = True) -> pa.Table | None:
    """The rows of `integrable_steps_sql` from its `changes` (`allocation.step_changes_sql`: the
    `groups` columns, `ts`, `x`, and `delta` and `delta_x` as DECIMALs of one scale), to the bit,
    with the running sums taken in memory on the DECIMAL digits as 64-bit integers; None when the
    sums could leave 64 bits. `multithreaded` False sorts on this thread alone."""
    delta, delta_x = decimal_digits(changes["delta"]), decimal_digits(changes["delta_x"])
    if delta is None or delta_x is None or max(np.abs(delta.astype(np.float64)).sum(),
                                               np.abs(delta_x.astype(np.float64)).sum()) >= SUMMABLE:
        return None  # digits beyond 64 bits, or sums that could reach them
    scale_delta, scale_delta_x = changes.schema.field("delta").type.scale, changes.schema.field("delta_x").type.scale
    frame = pl.from_arrow(changes.select([*groups, "ts", "x"]))
    assert isinstance(frame, pl.DataFrame)
    over = (lambda e: e.over(list(groups))) if groups else (lambda e: e)
    sums = (frame.with_columns(pl.Series("delta", delta), pl.Series("delta_x", delta_x))
            .sort("x", multithreaded=multithreaded)
            .select(*groups, "ts", "x", over(pl.col("delta").cum_sum()).alias("gpus"),
                    over(pl.col("delta_x").cum_sum()).alias("moment")))
    return sums.with_columns(pl.Series("gpus", duckdb_decimal_double(sums["gpus"].to_numpy(), scale_delta)),
                             pl.Series("moment", duckdb_decimal_double(sums["moment"].to_numpy(), scale_delta_x))
                             ).to_arrow()


def fits_in_memory(ctx: TraceContext, jobs_where: str) -> bool:
    """True when the jobs holding GPUs (those of `jobs_where`, `sql.allocated_jobs_where`) make at
    most `STEPS_SUMMED_IN_MEMORY` changes (two each)."""
    jobs = ctx.kept.once(f"allocated jobs where {jobs_where}", lambda: ctx.one_row(
        f"SELECT count(*) AS n FROM {ctx.jobs} WHERE {jobs_where}")["n"])
    return 2 * jobs <= STEPS_SUMMED_IN_MEMORY


def summed_steps(ctx: TraceContext, groups: Sequence[str], changes_sql: str, jobs_where: str) -> pa.Table | None:
    """The rows of `integrable_steps_sql` summed in memory (`summed`) from the query `changes_sql`
    (`allocation.step_changes_sql`) of the jobs of `jobs_where`; None when fast paths are off, the
    jobs make too many changes (`fits_in_memory`) or the sums could leave 64 bits."""
    if not fast_paths() or not fits_in_memory(ctx, jobs_where):
        return None
    return summed(ctx.arrow(changes_sql), groups, ctx.sorts_in_parallel)


def summed_both_ways(ctx: TraceContext, groups: Sequence[str], changes_sql: str, held_product: str,
                     both_ways_sql: str, held_jobs_where: str) -> pa.Table | None:
    """For a trace that leaves out its started jobs without an end: `summed_steps` of the steps as
    it counts them, and, when the run has not computed it yet, in the same pass over the jobs the
    steps with those jobs held to the end (the jobs of `held_jobs_where`), offered to the run as the
    rows of the product `held_product` (`TraceContext.offer_product`). `both_ways_sql` is
    `allocation.both_ways_changes_sql`: per group and instant, the changes as the trace counts them
    (`ended_delta`, `ended_delta_x`, from the `ended_changes` changes of jobs with an end) and held
    (`delta`, `delta_x`). Whether they fit in memory is decided on the held jobs, the more."""
    if not fast_paths() or not fits_in_memory(ctx, held_jobs_where):
        return None
    if ctx.catalog.product_computed(held_product):
        return summed(ctx.arrow(changes_sql), groups, ctx.sorts_in_parallel)
    both = ctx.arrow(both_ways_sql)
    columns = "".join(f"{c}, " for c in [*groups, "ts", "x"])
    with ctx.registered(both, "ddlx_fast_changes_both_ways") as both_ways:  # pyarrow's filter would load pandas
        left_out = ctx.arrow(f"""SELECT {columns}ended_delta AS delta, ended_delta_x AS delta_x
                                 FROM {both_ways} WHERE ended_changes > 0""")
    held = summed(both.select([*groups, "ts", "x", "delta", "delta_x"]), groups, ctx.sorts_in_parallel)
    if held is not None:
        ctx.catalog.offer_product(held_product, held)
    return summed(left_out, groups, ctx.sorts_in_parallel)


def one_cluster(ctx: TraceContext, rows: str) -> bool:
    """True when every row of `rows` (a FROM item with a `cluster` column) names the same one
    cluster: a join on the cluster then matches every pair of rows, and can be left out."""
    found = ctx.one_row(f"SELECT count(DISTINCT cluster) AS clusters, count(*) - count(cluster) AS unnamed "
                        f"FROM {rows}")
    return found["clusters"] == 1 and found["unnamed"] == 0


def one_cluster_steps(ctx: TraceContext, cluster_steps: str, jobs_where: str) -> str | None:
    """The whole trace's steps as a query of its cluster's steps (the product `cluster_steps`),
    when every job holding GPUs (those of `jobs_where`) is of one cluster: the changes of the whole
    trace are then those of its one cluster, instant by instant, and the query holds no second
    copy of them; None otherwise, or when fast paths are off."""
    if not fast_paths() or not one_cluster(ctx, f"(SELECT cluster FROM {ctx.jobs} WHERE {jobs_where})"):
        return None
    return f"SELECT ts, x, gpus, moment FROM {cluster_steps}"


def looked_up(ctx: TraceContext, groups: Sequence[str], steps: str, span: float,
              capacity_sql: str) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """What `allocation._allocation_vs_capacity_sql` reads of the steps table `steps` by ASOF
    joins, found in memory; None when fast paths are off or it holds more than
    `STEPS_SUMMED_IN_MEMORY` rows. `span` is the window's hi - lo (the same two DOUBLEs the query
    subtracts); `capacity_sql` a query of the capacity pieces (`allocation._capacity_cte`).

    Returns two frames: per group, the step in force at the window end (`gpus`, `moment`) and the
    largest `gpus` before it (`peak_gpus`); per capacity piece (the `groups`, `source`, `a`, `b`,
    `capacity` of the pieces), the step in force at `a` (`gpus_a`, `moment_a`) and at `b`
    (`gpus_b`, `moment_b`), NULL before the group's first step, and `piece_peak_gpus`, the largest
    `gpus` of the steps before the window end that fall in the piece (the piece of the latest
    start at or before the step, where the step is before its end). No arithmetic on the values
    is done here: the query takes them on as it takes the joined steps.
    """
    if not fast_paths() or ctx.one_row(f"SELECT count(*) AS n FROM {steps}")["n"] > STEPS_SUMMED_IN_MEMORY:
        return None
    frame = pl.from_arrow(ctx.arrow(f"SELECT {''.join(f'{g}, ' for g in groups)}x, gpus, moment FROM {steps}"))
    cap = ctx.query(capacity_sql)
    assert isinstance(frame, pl.DataFrame)
    frame = frame.sort("x", maintain_order=True)
    by = list(groups) or None
    before_end = frame.filter(pl.col("x") < span)
    ends = frame.filter(pl.col("x") <= span)
    last_columns = [pl.col("gpus").last(), pl.col("moment").last()]
    if groups:
        last = ends.group_by(list(groups), maintain_order=True).agg(*last_columns)
        peaks = before_end.group_by(list(groups)).agg(pl.col("gpus").max().alias("peak_gpus"))
        last = last.join(peaks, on=list(groups), how="full", coalesce=True, nulls_equal=True)
    else:
        final = ends.tail(1).to_dicts() or [{"gpus": None, "moment": None}]
        last = pl.DataFrame({"gpus": [final[0]["gpus"]], "moment": [final[0]["moment"]],
                             "peak_gpus": [before_end["gpus"].max()]},
                            schema={"gpus": pl.Float64, "moment": pl.Float64, "peak_gpus": pl.Float64})
    if cap.is_empty():
        pieces = cap.with_columns(*(pl.lit(None, pl.Float64).alias(c) for c in
                                    ("gpus_a", "moment_a", "gpus_b", "moment_b", "piece_peak_gpus")))
        return last, pieces
    cap = cap.with_row_index("piece")

    def step_at(point: str, suffix: str) -> pl.DataFrame:
        found = cap.sort(point).join_asof(frame, left_on=point, right_on="x", by=by, strategy="backward",
                                          check_sortedness=False)
        return found.select("piece", pl.col("gpus").alias(f"gpus_{suffix}"), pl.col("moment").alias(f"moment_{suffix}"))

    in_piece = []
    for source in cap["source"].unique(maintain_order=True):
        starts = cap.filter(pl.col("source") == source).sort("a").select(*groups, "piece", "a", "b")
        placed = before_end.join_asof(starts, left_on="x", right_on="a", by=by, strategy="backward",
                                      check_sortedness=False)
        in_piece.append(placed.filter(pl.col("x") < pl.col("b")).group_by("piece")
                        .agg(pl.col("gpus").max().alias("piece_peak_gpus")))
    peaks_in_pieces = pl.concat(in_piece)
    pieces = (cap.join(step_at("a", "a"), on="piece", how="left").join(step_at("b", "b"), on="piece", how="left")
              .join(peaks_in_pieces, on="piece", how="left").sort("piece").drop("piece"))
    return last, pieces
