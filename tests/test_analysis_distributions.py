"""Quantiles and CDFs (definitions `stat.quantile` and `stat.cdf_step`), held to an independent
computation: exact rational arithmetic on the sorted values, probabilities read as the decimals they
are written as."""

from __future__ import annotations

import math
import random
from fractions import Fraction
from pathlib import Path

import duckdb
import polars as pl
import pytest

from ddlx.analysis import sql
from ddlx.analysis.connection import CatalogConnection
from ddlx.analysis.context import TraceContext
from ddlx.analysis.fast import cdf as fast_cdf
from ddlx.analysis.sql import CDF_PROBABILITIES, cdf_from_counts, cdf_table, quantiles_from_counts


def step_value(values: list[float], p: float) -> float:
    """The smallest value with at least a share p (as a decimal) of `values` at or below it."""
    ordered = sorted(values)
    share = Fraction(str(p))
    for value in ordered:
        if Fraction(sum(v <= value for v in ordered), len(ordered)) >= share:
            return value
    raise AssertionError("unreachable: the largest value has every value at or below it")


def continuous_value(values: list[float], p: float) -> float:
    ordered = sorted(values)
    h = (len(ordered) - 1) * p
    low, high = ordered[math.floor(h)], ordered[math.ceil(h)]
    return low + (h - math.floor(h)) * (high - low)


@pytest.fixture()
def ctx(tmp_path: Path) -> TraceContext:
    context = TraceContext(home=tmp_path, trace="t", catalog=CatalogConnection(duckdb.connect(), "t"), tables=set(),
                           synthetic=False, source_tz=None)
    yield context
    context.close()


def _groups() -> dict[str | None, list[float]]:
    rng = random.Random(7)
    return {
        "ties": [rng.choice([0.0, 0.0, 0.0, 5.0, 30.0, 30.0, 600.0]) for _ in range(97)],
        "spread": [round(rng.lognormvariate(4, 2), 3) for _ in range(250)],
        "one": [42.0],
        "two": [0.0, 30.0],
        "twenty-five": [float(i) for i in range(25)],  # 0.56 of 25 is exactly 14 values
        None: [1.0, 2.0, 3.0, 1000.0],  # a NULL group is a group of its own
    }


def test_cdf_steps_through_the_values_themselves(ctx: TraceContext) -> None:
    groups = _groups()
    frame = pl.DataFrame({"g": [g for g, vs in groups.items() for _ in vs],
                          "v": [v for vs in groups.values() for v in vs]})
    ctx.con.register("values_t", frame.to_arrow())
    cdf = cdf_table(ctx, "v", "values_t", groups=("g",))
    assert cdf.height == len(groups) * len(CDF_PROBABILITIES)
    for group, values in groups.items():
        rows = cdf.filter(pl.col("g").is_null() if group is None else pl.col("g") == group)
        assert set(rows["rows"]) == {len(values)}
        got = dict(zip(rows["probability"], rows["value"]))
        assert got == {p: step_value(values, p) for p in CDF_PROBABILITIES}, group
        assert set(got.values()) <= set(values)


def test_counts_give_the_same_steps_and_the_continuous_quantiles(ctx: TraceContext) -> None:
    values = _groups()["ties"] + _groups()["spread"]
    counts = pl.DataFrame({"value": values}).group_by("value").len("n")
    ctx.con.register("counts_t", counts.to_arrow())
    cdf = cdf_from_counts(ctx, "counts_t")
    assert dict(zip(cdf["probability"], cdf["value"])) == {p: step_value(values, p) for p in CDF_PROBABILITIES}
    quantiles = quantiles_from_counts(ctx, "counts_t", (0.0, 0.25, 0.5, 0.9, 0.99, 1.0))
    expected = {p: continuous_value(values, p) for p in (0.0, 0.25, 0.5, 0.9, 0.99, 1.0)}
    assert quantiles == pytest.approx(expected)
    # the interpolated median of two values is neither; the CDF's is the lower one
    ctx.con.register("two_t", pl.DataFrame({"value": [0.0, 30.0], "n": [1, 1]}).to_arrow())
    assert quantiles_from_counts(ctx, "two_t", (0.5,)) == {0.5: 15.0}
    assert cdf_from_counts(ctx, "two_t", probabilities=(0.5, 0.51))["value"].to_list() == [0.0, 30.0]


def test_no_values_no_rows(ctx: TraceContext) -> None:
    ctx.con.register("empty_t", pl.DataFrame({"v": [None, None]}, schema={"v": pl.Float64}).to_arrow())
    assert cdf_table(ctx, "v", "empty_t").height == 0
    assert quantiles_from_counts(ctx, "(SELECT v AS value, 1 AS n FROM empty_t)", (0.5,)) == {}


@pytest.mark.parametrize("sorted_values", [None, 100])
@pytest.mark.parametrize("dtype", ["DOUBLE", "BIGINT", "TIMESTAMP"])
def test_cdf_table_gives_the_rows_of_its_defining_query(ctx: TraceContext, dtype: str, sorted_values: int | None,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`cdf_table` sorts the values itself; its rows are those of the discrete list quantile that
    defines it (`_cdf_table_sql`), to the bit: two group columns with NULLs, ties, NaN (above every
    number) and groups of one value, over integers, floats and times; also past the values it sorts
    itself (`CDF_SORTED_VALUES`), where DuckDB's quantile gives the rows."""
    if sorted_values:
        monkeypatch.setattr(fast_cdf, "CDF_SORTED_VALUES", sorted_values)
    rng = random.Random(11)
    rows = []
    for _ in range(3000):
        a = rng.choice(["x", "y", "zz", None])
        b = rng.choice([1, 2, None])
        v = rng.choice([float(rng.randint(0, 40)), rng.lognormvariate(3, 2), float("nan")]) if dtype == "DOUBLE" \
            else rng.randint(-50, 500)
        rows.append((a, b, v))
    rows += [("solo", 7, 3.0 if dtype == "DOUBLE" else 3), ("x", 1, None)]
    frame = pl.DataFrame(rows, schema={"a": pl.String, "b": pl.Int64,
                                       "v": pl.Float64 if dtype == "DOUBLE" else pl.Int64}, orient="row")
    ctx.con.register("raw_t", frame.to_arrow())
    value = "make_timestamp(v * 1000003)" if dtype == "TIMESTAMP" else f"CAST(v AS {dtype})"
    got = cdf_table(ctx, value, "raw_t", groups=("a", "b"), where="b IS DISTINCT FROM 2 OR a = 'x'")
    where = "(b IS DISTINCT FROM 2 OR a = 'x')"
    rows_sql = f"SELECT a, b, {value} AS value FROM raw_t WHERE {where} AND {value} IS NOT NULL"
    expected = ctx.query(sql._cdf_table_sql(rows_sql, ("a", "b"), CDF_PROBABILITIES))
    assert got.schema == expected.schema
    assert got.equals(expected)
    assert got.height == 10 * len(CDF_PROBABILITIES)  # x, y, zz, NULL by 1 and NULL, b = 2 for x only; solo
    whole = cdf_table(ctx, value, "raw_t")
    whole_sql = f"SELECT {value} AS value FROM raw_t WHERE (TRUE) AND {value} IS NOT NULL"
    assert whole.equals(ctx.query(sql._cdf_table_sql(whole_sql, (), CDF_PROBABILITIES)))
    assert whole["rows"].unique().to_list() == [len(rows) - 1]
