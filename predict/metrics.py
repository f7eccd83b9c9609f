"""Accuracy of duration predictions on the test window: one definition per metric, in one place.

Every function takes `actual` and `predicted` run times in seconds (numpy arrays of the same
length; actual > 0, predicted >= 0) and returns a float, or None where the metric is undefined.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

#: Relative-error thresholds x of the "within" shares: |pred - actual| / actual <= x.
WITHIN_THRESHOLDS: tuple[float, ...] = (0.1, 0.5, 1.0, 10.0)


@dataclass(frozen=True)
class MetricDefinition:
    name: str
    unit: str
    definition: str


def _within_name(x: float) -> str:
    return f"within_{round(x * 100)}pct"


METRICS: tuple[MetricDefinition, ...] = (
    MetricDefinition("jobs", "jobs", "test-window jobs scored (jobs with a target)"),
    MetricDefinition("mae_s", "s", "mean absolute error: mean of |pred - actual|"),
    MetricDefinition("mdape_pct", "%",
                     "median absolute percentage error: median of 100 * |pred - actual| / actual "
                     "(mean of the two middle values for an even count)"),
    MetricDefinition("r2_log", "",
                     "R² of log duration: 1 - sum((a - p)²) / sum((a - mean(a))²) with a = ln(1 + actual), "
                     "p = ln(1 + pred); undefined (null) when every actual is the same"),
    MetricDefinition("spearman", "",
                     "Spearman rank correlation of pred and actual: Pearson correlation of their ranks, tied "
                     "values sharing the mean of their ranks; undefined (null) when either side is constant"),
    *(MetricDefinition(_within_name(x), "share",
                       f"share of jobs with |pred - actual| / actual <= {x:g} ({x * 100:g} % relative error)")
      for x in WITHIN_THRESHOLDS),
)
METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in METRICS)


def mae(actual: np.ndarray, predicted: np.ndarray) -> float:
    """Mean absolute error, seconds."""
    return float(np.mean(np.abs(predicted - actual)))


def relative_error(actual: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """|pred - actual| / actual per job."""
    return np.abs(predicted - actual) / actual


def mdape(actual: np.ndarray, predicted: np.ndarray) -> float:
    """Median absolute percentage error, percent."""
    return float(np.median(relative_error(actual, predicted)) * 100.0)


def r2_log(actual: np.ndarray, predicted: np.ndarray) -> float | None:
    """R² of ln(1 + pred) as a prediction of ln(1 + actual); None when actual is constant."""
    a, p = np.log1p(actual), np.log1p(predicted)
    total = float(np.sum((a - a.mean()) ** 2))
    if total == 0.0:
        return None
    return 1.0 - float(np.sum((a - p) ** 2)) / total


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n of `values`, ties sharing the mean of the ranks they span."""
    frame = pl.DataFrame({"v": values})
    return frame.select(pl.col("v").rank("average")).to_series().to_numpy().astype(np.float64)


def spearman(actual: np.ndarray, predicted: np.ndarray) -> float | None:
    """Spearman rank correlation; None when either side is constant (or fewer than 2 jobs)."""
    if len(actual) < 2:
        return None
    ra, rp = average_ranks(actual), average_ranks(predicted)
    ra, rp = ra - ra.mean(), rp - rp.mean()
    denominator = float(np.sqrt(np.sum(ra * ra) * np.sum(rp * rp)))
    if denominator == 0.0:
        return None
    return float(np.sum(ra * rp)) / denominator


def within_share(actual: np.ndarray, predicted: np.ndarray, x: float) -> float:
    """Share of jobs whose relative error |pred - actual| / actual is at most `x`."""
    return float(np.mean(relative_error(actual, predicted) <= x))


def score(actual: np.ndarray, predicted: np.ndarray) -> dict[str, float | int | None]:
    """Every metric of `METRICS` for one predictor."""
    actual = np.asarray(actual, dtype=np.float64)
    predicted = np.asarray(predicted, dtype=np.float64)
    if len(actual) == 0:
        return {name: None for name in METRIC_NAMES} | {"jobs": 0}
    result: dict[str, float | int | None] = {
        "jobs": int(len(actual)), "mae_s": mae(actual, predicted), "mdape_pct": mdape(actual, predicted),
        "r2_log": r2_log(actual, predicted), "spearman": spearman(actual, predicted)}
    for x in WITHIN_THRESHOLDS:
        result[_within_name(x)] = within_share(actual, predicted, x)
    return result


def metrics_table(actual: np.ndarray, predictions: Mapping[str, np.ndarray]) -> pl.DataFrame:
    """One row per predictor (in the order given): `predictor` then every metric."""
    rows = [{"predictor": name, **score(actual, predicted)} for name, predicted in predictions.items()]
    schema = {"predictor": pl.String, "jobs": pl.Int64, **{name: pl.Float64 for name in METRIC_NAMES[1:]}}
    return pl.DataFrame(rows, schema=schema)
