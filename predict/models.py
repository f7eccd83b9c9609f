"""Training: the time-ordered split, category codes, the baselines and the gradient-boosted models.

Split (definition `predict.split`): the jobs with a target, ordered by submit_time; with n of them
and sorted submit times s_0 <= ... <= s_(n-1), the boundaries are t1 = s_floor(0.7 n) and
t2 = s_floor(0.8 n). Train: submit_time < t1; validation: t1 <= submit_time < t2; test:
submit_time >= t2. Jobs submitted exactly at a boundary all go to the later window.

Models (scikit-learn `HistGradientBoostingRegressor`, target ln(1 + run_s)):
- `mean`: squared error on ln(1 + run_s); pred_s = exp(f) - 1 (a geometric-mean style estimate);
- `p50`, `p90`: quantile loss at 0.5 and 0.9 on ln(1 + run_s); a quantile of ln(1 + run_s) is the
  same quantile of run_s, so p50_s = exp(f) - 1 estimates the median run time and p90_s the 90th
  percentile. p90_s is raised to p50_s where the two models cross.
All three stop early on the validation window (its loss, 10 rounds without improvement) and are
fitted on at most `max_fit_rows` train jobs (a seeded uniform sample of the train window when it
holds more). Predictions are at least 0 s.

Baselines: `global_median` (median run_s of the train window), `user_history_median` (the job's
`user_hist_median_s`, else the global median), `group_history_median` (`group_hist_median_s`, else
the global median).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import polars as pl

from ddlx.predict import metrics
from ddlx.predict.features import CATEGORICAL_NAMES, FEATURE_NAMES, WALL_CLOCK_FEATURES, PredictError

#: Format of the pickled model payload (a plain dict; see `fit`).
PAYLOAD_FORMAT = 1
ESTIMATORS: dict[str, dict[str, Any]] = {
    "mean": {"loss": "squared_error"},
    "p50": {"loss": "quantile", "quantile": 0.5},
    "p90": {"loss": "quantile", "quantile": 0.9},
}
#: At most this many own codes per categorical feature: with the "other" code they stay below the
#: 255 bins HistGradientBoostingRegressor allows a categorical feature.
MAX_CATEGORIES = 253
#: Below this many rows the trees are fitted and applied on one OpenMP thread: each boosting round
#: then runs many short parallel regions, and on shared cores the threads spend more time waiting
#: for each other than computing (an 82 k-job fit took 29 s on 2 threads, 5 s on 1, on a loaded machine).
SINGLE_THREAD_ROWS = 100_000
BASELINES: tuple[str, ...] = ("global_median", "user_history_median", "group_history_median")

SPLIT_DEFINITION = (
    "predict.split: jobs with a target ordered by submit_time; with n of them and sorted submit "
    "times s_0..s_(n-1), t1 = s_floor(train_share * n), t2 = s_floor((train_share + validation_share) * n); "
    "train: submit_time < t1; validation: t1 <= submit_time < t2; test: submit_time >= t2 (jobs "
    "submitted exactly at a boundary go to the later window)."
)


@dataclass(frozen=True)
class TrainSettings:
    """How a model is trained. Shares are of the jobs with a target, by submission order."""

    train_share: float = 0.7
    validation_share: float = 0.1
    max_categories: int = 250
    learning_rate: float = 0.1
    max_iter: int = 300
    max_leaf_nodes: int = 31
    min_samples_leaf: int = 20
    n_iter_no_change: int = 10
    max_fit_rows: int | None = 300_000
    random_state: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Split:
    """The two boundary instants and each job's window (`train`, `validation`, `test`)."""

    validation_from: datetime
    test_from: datetime


def time_split(submit_times: pl.Series, settings: TrainSettings) -> Split:
    """Boundaries of the time-ordered split of jobs submitted at `submit_times` (jobs with a target)."""
    n = submit_times.len()
    ordered = submit_times.sort()
    # Rounded before the floor so that 0.7 + 0.1 of 10 jobs is 8, not 7.999999999999999.
    first = math.floor(round(settings.train_share * n, 6))
    second = math.floor(round((settings.train_share + settings.validation_share) * n, 6))
    if n < 3 or second >= n:
        raise PredictError(f"too few jobs with a run time to split into train, validation and test: {n}")
    split = Split(ordered[first], ordered[second])
    windows = window_labels(submit_times, split)
    counts = windows.value_counts()
    found = dict(zip(counts.get_column("window").to_list(), counts.get_column("count").to_list()))
    empty = [w for w in ("train", "validation", "test") if not found.get(w)]
    if empty:
        raise PredictError(f"the time-ordered split leaves no job in the {' and '.join(empty)} window "
                           f"({n} jobs with a run time; many share one submit time)")
    return split


def window_labels(submit_times: pl.Series, split: Split) -> pl.Series:
    """`train`, `validation` or `test` per submit time."""
    frame = pl.DataFrame({"t": submit_times})
    return frame.select(
        pl.when(pl.col("t") < split.validation_from).then(pl.lit("train"))
        .when(pl.col("t") < split.test_from).then(pl.lit("validation"))
        .otherwise(pl.lit("test")).alias("window")).to_series()


def category_codes(train: pl.DataFrame, names: list[str], max_categories: int) -> dict[str, list[str]]:
    """Per categorical feature, the values that get their own code: the `max_categories` most
    frequent non-null values of the train window (ties by value). Code i is the i-th value; every
    other value (rare, or unseen in train) gets code len(values) ("other"); NULL stays missing."""
    codes = {}
    for name in names:
        counts = (train.get_column(name).drop_nulls().alias("value").value_counts(name="count")
                  .sort(["count", "value"], descending=[True, False]).head(max_categories))
        codes[name] = counts.get_column("value").to_list()
    return codes


def feature_matrix(features: pl.DataFrame, names: list[str], codes: dict[str, list[str]]) -> np.ndarray:
    """The float matrix of `names` (columns in that order): numbers as they are, categories as codes."""
    columns = []
    for name in names:
        if name in codes:
            mapping = {value: float(i) for i, value in enumerate(codes[name])}
            coded = pl.col(name).replace_strict(mapping, default=float(len(mapping)), return_dtype=pl.Float64)
            columns.append(pl.when(pl.col(name).is_null()).then(float("nan")).otherwise(coded).alias(name))
        else:
            columns.append(pl.col(name).cast(pl.Float64).fill_null(float("nan")).alias(name))
    return features.select(columns).to_numpy().astype(np.float64, copy=False)


def informative_features(train: pl.DataFrame) -> tuple[list[str], dict[str, str]]:
    """Features that vary over the train window, and the others with why they are left out."""
    used, dropped = [], {}
    for name in FEATURE_NAMES:
        column = train.get_column(name)
        if column.null_count() == column.len():
            dropped[name] = "no value in the training window (the trace does not record it)"
        elif column.n_unique() <= 1:
            dropped[name] = "one value over the whole training window (no information)"
        else:
            used.append(name)
    return used, dropped


def baseline_predictions(features: pl.DataFrame, global_median_s: float) -> dict[str, np.ndarray]:
    """The three baselines' predicted run times (s) for each row of `features`."""
    n = features.height
    user = features.get_column("user_hist_median_s").fill_null(global_median_s).to_numpy()
    group = features.get_column("group_hist_median_s").fill_null(global_median_s).to_numpy()
    return {"global_median": np.full(n, global_median_s, dtype=np.float64),
            "user_history_median": user.astype(np.float64), "group_history_median": group.astype(np.float64)}


def _seconds(raw: np.ndarray) -> np.ndarray:
    """Run time (s) from a prediction of ln(1 + run_s), at least 0."""
    return np.maximum(np.expm1(raw), 0.0)


def openmp_threads(rows: int) -> contextlib.AbstractContextManager:
    """One OpenMP thread for fewer than `SINGLE_THREAD_ROWS` rows, else scikit-learn's default."""
    if rows >= SINGLE_THREAD_ROWS:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="openmp")


def fit_threads(rows: int) -> int | None:
    """OpenMP threads a fit on `rows` rows uses (None when scikit-learn's OpenMP runtime is not found)."""
    if rows < SINGLE_THREAD_ROWS:
        return 1
    from threadpoolctl import threadpool_info

    counts = [pool.get("num_threads") for pool in threadpool_info() if pool.get("user_api") == "openmp"]
    return max(counts) if counts else None


def predict_payload(payload: dict[str, Any], features: pl.DataFrame) -> dict[str, np.ndarray]:
    """pred_s, p50_s, p90_s and the two history baselines for each row of `features`."""
    x = feature_matrix(features, payload["feature_names"], payload["category_codes"])
    estimators = payload["estimators"]
    with openmp_threads(len(x)):
        pred = _seconds(estimators["mean"].predict(x))
        p50 = _seconds(estimators["p50"].predict(x))
        p90 = np.maximum(_seconds(estimators["p90"].predict(x)), p50)
    baselines = baseline_predictions(features, payload["global_median_s"])
    return {"pred_s": pred, "p50_s": p50, "p90_s": p90,
            "user_median_s": baselines["user_history_median"], "group_median_s": baselines["group_history_median"]}


@dataclass
class FitResult:
    """A trained payload (what the model file holds) and what the model card reports about it."""

    payload: dict[str, Any]
    windows: dict[str, dict[str, Any]]
    split: Split
    used_features: list[str]
    dropped_features: dict[str, str]
    metrics: pl.DataFrame
    p90_coverage: float | None
    iterations: dict[str, int]
    fit_rows: int
    threads: int | None
    seconds: dict[str, float] = field(default_factory=dict)


def _window_summary(frame: pl.DataFrame) -> dict[str, Any]:
    times = frame.get_column("submit_time")
    return {"jobs": frame.height, "first_submit_utc": _iso(times.min()), "last_submit_utc": _iso(times.max())}


def _iso(value: Any) -> str | None:
    return None if value is None else value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def fit(features: pl.DataFrame, zone: str | None, settings: TrainSettings | None = None,
        progress: Callable[[str], None] | None = None) -> FitResult:
    """Split the jobs with a target of `features` (from `features.trace_features`), fit the three
    models on the train window with early stopping on the validation window, score them and the
    baselines on the test window."""
    import time

    from sklearn.ensemble import HistGradientBoostingRegressor

    settings = settings or TrainSettings()
    if not 1 <= settings.max_categories <= MAX_CATEGORIES:
        raise PredictError(f"max_categories must be between 1 and {MAX_CATEGORIES} (scikit-learn's bins), "
                           f"not {settings.max_categories}")
    if not (0 < settings.train_share and 0 < settings.validation_share
            and settings.train_share + settings.validation_share < 1):
        raise PredictError(f"train_share {settings.train_share} and validation_share {settings.validation_share} "
                           "must be above 0 and leave a test window (sum below 1)")
    say = progress or (lambda message: None)
    seconds: dict[str, float] = {}
    jobs = features.filter(pl.col("has_target"))
    split = time_split(jobs.get_column("submit_time"), settings)
    jobs = jobs.with_columns(window_labels(jobs.get_column("submit_time"), split))
    train = jobs.filter(pl.col("window") == "train")
    validation = jobs.filter(pl.col("window") == "validation")
    test = jobs.filter(pl.col("window") == "test")

    used, dropped = informative_features(train)
    if zone is None:
        for name in WALL_CLOCK_FEATURES:
            dropped[name] = "the trace has no wall clock (its times are offsets from an undisclosed start)"
    categorical = [n for n in used if n in CATEGORICAL_NAMES]
    codes = category_codes(train, categorical, settings.max_categories)
    global_median = float(train.get_column("run_s").median())

    fit_rows = train
    if settings.max_fit_rows is not None and train.height > settings.max_fit_rows:
        fit_rows = train.sample(n=settings.max_fit_rows, seed=settings.random_state).sort("_row")
    x_train = feature_matrix(fit_rows, used, codes)
    y_train = np.log1p(fit_rows.get_column("run_s").to_numpy())
    x_val = feature_matrix(validation, used, codes)
    y_val = np.log1p(validation.get_column("run_s").to_numpy())
    is_categorical = [n in codes for n in used]

    estimators: dict[str, Any] = {}
    for name, loss in ESTIMATORS.items():
        started = time.perf_counter()
        say(f"fitting {name} ({loss['loss']}) on {len(y_train):,} jobs")
        model = HistGradientBoostingRegressor(
            **loss, learning_rate=settings.learning_rate, max_iter=settings.max_iter,
            max_leaf_nodes=settings.max_leaf_nodes, min_samples_leaf=settings.min_samples_leaf,
            categorical_features=is_categorical if any(is_categorical) else None,
            early_stopping=True, n_iter_no_change=settings.n_iter_no_change, scoring="loss",
            random_state=settings.random_state)
        with openmp_threads(len(y_train)):
            model.fit(x_train, y_train, X_val=x_val, y_val=y_val)
        estimators[name] = model
        seconds[f"fit_{name}"] = time.perf_counter() - started

    payload = {"format": PAYLOAD_FORMAT, "feature_names": used, "category_codes": codes,
               "global_median_s": global_median, "local_tz": zone, "estimators": estimators}
    predicted = predict_payload(payload, test)
    actual = test.get_column("run_s").to_numpy()
    table = metrics.metrics_table(actual, {
        "model": predicted["pred_s"], "model_p50": predicted["p50_s"],
        **baseline_predictions(test, global_median)})
    coverage = float(np.mean(actual <= predicted["p90_s"])) if len(actual) else None
    return FitResult(
        payload=payload,
        windows={"train": _window_summary(train), "validation": _window_summary(validation),
                 "test": _window_summary(test)},
        split=split, used_features=used, dropped_features=dropped, metrics=table, p90_coverage=coverage,
        iterations={name: int(model.n_iter_) for name, model in estimators.items()},
        fit_rows=int(len(y_train)), threads=fit_threads(len(y_train)), seconds=seconds)
