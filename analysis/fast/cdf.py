"""Fast path of the empirical CDF tables (`sql.cdf_table`), whose reference is DuckDB's discrete
list quantile at DECIMAL probabilities (`sql._cdf_table_sql`): each group's values sorted by
Polars, several times faster than DuckDB's selection at a hundred probabilities, and x_k taken at
each probability with k in exact integer arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.analysis.fast import fast_paths
from ddlx.datasets.sqltext import written_decimal

#: Most values sorted in memory (about 200 MiB with a group column); past it the discrete quantile
#: runs in DuckDB.
CDF_SORTED_VALUES = 4_000_000


def sorted_cdf(ctx: TraceContext, rows_sql: str, groups: Sequence[str],
               probabilities: Sequence[float]) -> pl.DataFrame | None:
    """`cdf_table`'s rows over `rows_sql` (a query of the group columns and `value`, none NULL),
    from the values sorted in memory (`cdf_of_values`); None when fast paths are off or there are
    more than `CDF_SORTED_VALUES` values."""
    if not fast_paths() or ctx.one_row(f"SELECT count(*) AS n FROM ({rows_sql})")["n"] > CDF_SORTED_VALUES:
        return None
    return cdf_of_values(ctx.query(rows_sql), groups, probabilities)


def cdf_of_values(values: pl.DataFrame, groups: Sequence[str], probabilities: Sequence[float]) -> pl.DataFrame:
    """`cdf_table`'s rows from the values (the group columns and `value`, none NULL): each group's
    values sorted (NaN above every number; NULL groups last), then x_k taken at each probability,
    k = max(ceil(n p), 1) - 1 with p the decimal it is written as, in exact integer arithmetic."""
    keys = list(groups)
    if keys:
        per_group = values.group_by(keys).agg(pl.col("value").sort().alias("ordered"), pl.len().alias("rows"))
        per_group = per_group.sort(keys, nulls_last=True)
    else:
        per_group = pl.DataFrame({"rows": [values.height]}).filter(pl.col("rows") > 0)
    counts = per_group["rows"].to_numpy().astype(np.int64)
    fractions = [Fraction(written_decimal(p)) for p in probabilities]
    numerators = np.array([f.numerator for f in fractions], dtype=np.int64)
    denominators = np.array([f.denominator for f in fractions], dtype=np.int64)
    ceilings = -((-counts[:, None] * numerators[None, :]) // denominators[None, :])  # ceil(n p), exactly
    ranks = np.maximum(ceilings, 1) - 1
    if keys:
        taken = per_group.select(
            *keys, pl.col("ordered").list.gather(pl.Series(ranks.tolist(), dtype=pl.List(pl.Int64))).alias("value"),
            pl.col("rows").cast(pl.Int64)).explode("value")
    else:  # one sort of every value, in parallel
        taken = pl.DataFrame({"value": values["value"].sort().gather(ranks.ravel()),
                              "rows": np.repeat(counts, len(probabilities))})
    return taken.with_columns(probability=pl.Series(np.tile(np.array(probabilities, dtype=np.float64),
                                                            per_group.height))
                              ).select(*keys, "probability", "value", "rows")
