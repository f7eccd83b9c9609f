"""Fast path of the allocation sweep's partial results per time bin: the rows of
`allocation.allocation_partials_sql`, the same whole numbers, reduced in memory.

Each job's start and end are packed with its group's number into one 64-bit integer, sorted
once (by Polars), summed per instant and then per bin; the moments are summed in 128 bits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.analysis.fast import fast_paths
from ddlx.analysis.fast.steps import SUMMABLE, fits_in_memory
from ddlx.analysis.sql import allocated_jobs_where


def partials(ctx: TraceContext, intervals: str, groups: Sequence[str], lo_us: int, hi_us: int,
             resolution_us: int) -> pl.DataFrame | None:
    """The rows of `allocation_partials_sql` over the catalog query `intervals`
    (`allocation.job_intervals_sql`), reduced in memory (`bin_partials`). None when fast paths
    are off, the changes do not fit in memory (`steps.fits_in_memory`), or a packed event or a
    running sum could leave 64 bits: the query then runs."""
    if not fast_paths() or not fits_in_memory(ctx, allocated_jobs_where(ctx)) or hi_us < lo_us:
        return None
    jobs = pl.from_arrow(ctx.arrow(f"SELECT * FROM ({intervals})"))
    assert isinstance(jobs, pl.DataFrame)
    return partials_of(jobs, groups, lo_us, hi_us, resolution_us, ctx.sorts_in_parallel)


def partials_of(jobs: pl.DataFrame, groups: Sequence[str], lo_us: int, hi_us: int, resolution_us: int,
                multithreaded: bool = True) -> pl.DataFrame | None:
    """`partials` of the rows `jobs` (the `groups` columns, `start_us`, `end_us`, `gpus_micro`);
    None when a packed event or a running sum could leave 64 bits."""
    keys = jobs.select(groups).unique().with_row_index("code") if groups else pl.DataFrame({"code": [0]})
    jobs = (jobs.join(keys, on=list(groups), how="left", nulls_equal=True) if groups
            else jobs.with_columns(pl.lit(0).alias("code")))
    events = pl.concat([  # changes before the window count at its start, those after it not at all
        jobs.filter(pl.col("start_us") <= hi_us).select(
            "code", pl.max_horizontal("start_us", pl.lit(lo_us)).alias("t_us"), pl.col("gpus_micro").alias("d")),
        jobs.filter(pl.col("end_us") <= hi_us).select(
            "code", pl.max_horizontal("end_us", pl.lit(lo_us)).alias("t_us"), (-pl.col("gpus_micro")).alias("d"))])
    schema = {**{g: pl.String for g in groups}, "k": pl.Int64, "delta": pl.Int64, "moment": pl.Decimal(38, 0),
              "peak_level": pl.Int64, "first_us": pl.Int64}
    if events.is_empty():
        return pl.DataFrame(schema=schema)
    code, d = events["code"].to_numpy().astype(np.int64), events["d"].to_numpy()
    time_bits = (hi_us - lo_us).bit_length()
    if int(code.max()).bit_length() + time_bits > 63 or float(np.abs(d).astype(np.float64).sum()) >= SUMMABLE:
        return None
    bins = bin_partials((code << time_bits) | (events["t_us"].to_numpy() - lo_us), d, time_bits, lo_us, hi_us,
                        resolution_us, multithreaded)
    code = bins.pop("code")
    return pl.DataFrame({**{g: keys[g].gather(code) for g in groups}, **bins}).cast(schema)


def bin_partials(packed: np.ndarray, d: np.ndarray, time_bits: int, lo_us: int, hi_us: int,
                 resolution_us: int, multithreaded: bool = True) -> dict[str, Any]:
    """Per group and bin, the columns of `allocation_partials_sql` (and `code`, the group's number)
    from the events packed as (group number << time_bits) | (microseconds since lo_us), each
    changing its group's level by `d`: sorted once (by Polars), summed per instant, then per bin.
    Bins are numbered as DuckDB divides integers (toward zero); the moments are summed in 128 bits.
    `multithreaded` False sorts on this thread alone."""
    # Polars sorts faster than NumPy; equal instants are summed, in any order
    order = pl.DataFrame({"packed": packed}).select(
        pl.arg_sort_by("packed", multithreaded=multithreaded))["packed"].to_numpy()
    packed, d = packed[order], d[order]
    firsts = np.flatnonzero(np.concatenate([[True], packed[1:] != packed[:-1]]))  # one change per instant
    change, packed = np.add.reduceat(d, firsts), packed[firsts]
    code, t_us = packed >> time_bits, (packed & ((1 << time_bits) - 1)) + lo_us
    k = np.where(t_us >= 0, t_us // resolution_us, -(-t_us // resolution_us))
    starts = np.flatnonzero(np.concatenate([[True], (code[1:] != code[:-1]) | (k[1:] != k[:-1])]))
    running = np.cumsum(change)
    level = running - np.repeat(running[starts] - change[starts], np.diff(np.append(starts, len(change))))
    span = np.minimum((k + 1) * resolution_us, hi_us) - t_us  # from the change to its bin's end
    moments = (pl.Series(change).cast(pl.Int128) * pl.Series(span).cast(pl.Int128)).cum_sum()
    up_to_bin = moments.gather(np.append(starts[1:], len(change)) - 1)
    lowest = np.iinfo(np.int64).min
    peak = pl.Series(np.maximum.reduceat(np.where(t_us < hi_us, level, lowest), starts))
    return {"code": code[starts], "k": k[starts], "delta": np.add.reduceat(change, starts),
            "moment": up_to_bin - up_to_bin.shift(1, fill_value=0),
            "peak_level": peak.set(peak == lowest, None), "first_us": t_us[starts]}
