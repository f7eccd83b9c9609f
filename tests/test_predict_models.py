"""Metrics against hand computations, the time-ordered split, category codes, baselines, and a
trained model folder: its card, determinism, loading checks, and predictions on frames."""

from __future__ import annotations

import json
import math
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ddlx.datasets import catalog
from ddlx.datasets.importers import import_dataset
from ddlx.predict import ModelFileError, PredictError, load_predictor, metrics, train
from ddlx.predict.artifacts import CARD_FILE, MODEL_FILE
from ddlx.predict.models import (
    TrainSettings,
    baseline_predictions,
    category_codes,
    feature_matrix,
    time_split,
    window_labels,
)

# -- metrics ---------------------------------------------------------------------------------

ACTUAL = np.array([10.0, 20.0, 40.0, 100.0, 1.0, 1.0])
PREDICTED = np.array([11.0, 30.0, 20.0, 100.0, 5.0, 20.0])


def test_metrics_on_a_tiny_vector_by_hand() -> None:
    # Absolute errors 1, 10, 20, 0, 4, 19: sum 54, mean 9.
    assert metrics.mae(ACTUAL, PREDICTED) == pytest.approx(9.0)
    # Relative errors 0.1, 0.5, 0.5, 0, 4, 19; sorted 0, 0.1, 0.5, 0.5, 4, 19: median 0.5 -> 50 %.
    assert metrics.mdape(ACTUAL, PREDICTED) == pytest.approx(50.0)
    # Within 10 %: 0.1 and 0 -> 2 of 6; within 50 %: also both 0.5 -> 4; within 100 %: 4; within 1000 %: 5 (not 19).
    assert metrics.within_share(ACTUAL, PREDICTED, 0.1) == pytest.approx(2 / 6)
    assert metrics.within_share(ACTUAL, PREDICTED, 0.5) == pytest.approx(4 / 6)
    assert metrics.within_share(ACTUAL, PREDICTED, 1.0) == pytest.approx(4 / 6)
    assert metrics.within_share(ACTUAL, PREDICTED, 10.0) == pytest.approx(5 / 6)
    # Spearman: ranks of actual [3, 4, 5, 6, 1.5, 1.5], of predicted [2, 5, 3.5, 6, 1, 3.5]; both
    # have mean 3.5; deviations [-.5, .5, 1.5, 2.5, -2, -2] and [-1.5, 1.5, 0, 2.5, -2.5, 0]:
    # products sum 0.75 + 0.75 + 0 + 6.25 + 5 + 0 = 12.75; squares sum 17 and 17 -> 12.75 / 17 = 0.75.
    assert metrics.spearman(ACTUAL, PREDICTED) == pytest.approx(0.75)
    # R² of log durations, in plain Python.
    a = [math.log1p(v) for v in ACTUAL]
    p = [math.log1p(v) for v in PREDICTED]
    mean = sum(a) / len(a)
    expected = 1 - sum((x - y) ** 2 for x, y in zip(a, p)) / sum((x - mean) ** 2 for x in a)
    assert metrics.r2_log(ACTUAL, PREDICTED) == pytest.approx(expected, rel=1e-12)


def test_undefined_metrics_are_none() -> None:
    constant = np.full(6, 7.0)
    assert metrics.spearman(ACTUAL, constant) is None
    assert metrics.r2_log(constant, PREDICTED) is None
    # A perfect prediction.
    scores = metrics.score(ACTUAL, ACTUAL)
    assert scores["mae_s"] == 0.0 and scores["r2_log"] == 1.0 and scores["spearman"] == pytest.approx(1.0)
    assert scores["within_10pct"] == 1.0 and scores["jobs"] == 6


def test_metrics_table_has_one_row_per_predictor_in_order() -> None:
    table = metrics.metrics_table(ACTUAL, {"model": PREDICTED, "global_median": np.full(6, 15.0)})
    assert table.get_column("predictor").to_list() == ["model", "global_median"]
    assert table.columns == ["predictor", *metrics.METRIC_NAMES]
    assert table.row(1, named=True)["spearman"] is None
    # The constant 15: errors 5, 5, 25, 85, 14, 14 -> MAE 148 / 6.
    assert table.row(1, named=True)["mae_s"] == pytest.approx(148 / 6)


# -- split, codes, baselines -----------------------------------------------------------------

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def _times(seconds: list[int]) -> pl.Series:
    return pl.Series("submit_time", [T0 + timedelta(seconds=s) for s in seconds], dtype=pl.Datetime("us", "UTC"))


def test_split_boundaries_and_ties_go_to_the_later_window() -> None:
    # n = 10 sorted times; t1 = s_floor(7) = s_7, t2 = s_floor(8) = s_8.
    times = _times([9, 0, 1, 2, 3, 4, 5, 6, 6, 8])  # sorted: 0 1 2 3 4 5 6 6 8 9
    split = time_split(times, TrainSettings())
    assert split.validation_from == T0 + timedelta(seconds=6)  # s_7 = 6
    assert split.test_from == T0 + timedelta(seconds=8)  # s_8 = 8
    labels = window_labels(times, split).to_list()
    # Both jobs at 6 (one of them at position 6, before the boundary index) go to validation.
    assert labels == ["test", "train", "train", "train", "train", "train", "train", "validation", "validation", "test"]


def test_split_refuses_an_empty_window() -> None:
    # sorted 0 1 2 3 4 5 6 7 7 9: s_7 = s_8 = 7 -> the validation window is empty.
    with pytest.raises(PredictError, match="no job in the validation window"):
        time_split(_times([0, 1, 2, 3, 4, 5, 6, 7, 7, 9]), TrainSettings())
    with pytest.raises(PredictError, match="too few jobs"):
        time_split(_times([0, 1]), TrainSettings())


def test_category_codes_cap_rare_and_unseen_values() -> None:
    train = pl.DataFrame({"user": ["a", "a", "a", "c", "b", "c", "b", "d", None]})
    codes = category_codes(train, ["user"], max_categories=2)
    # Counts a 3, b 2, c 2, d 1: the two most frequent are a, then b (tie with c broken by value).
    assert codes == {"user": ["a", "b"]}
    frame = pl.DataFrame({"user": ["a", "b", "c", "d", "zzz", None], "num_gpus": [1.0, 2.0, None, 4.0, 5.0, 6.0]})
    matrix = feature_matrix(frame, ["user", "num_gpus"], codes)
    assert matrix[:, 0].tolist()[:5] == [0.0, 1.0, 2.0, 2.0, 2.0]  # c, d and unseen zzz share "other" = 2
    assert math.isnan(matrix[5, 0]) and math.isnan(matrix[2, 1])


def test_history_baselines_fall_back_to_the_global_median() -> None:
    features = pl.DataFrame({"user_hist_median_s": [100.0, None], "group_hist_median_s": [None, 30.0]})
    got = baseline_predictions(features, 50.0)
    assert got["global_median"].tolist() == [50.0, 50.0]
    assert got["user_history_median"].tolist() == [100.0, 50.0]
    assert got["group_history_median"].tolist() == [50.0, 30.0]


# -- a trained model folder -------------------------------------------------------------------

def _write_jobs(path: Path, jobs: int = 600, seed: int = 1) -> list[dict]:
    """A job table whose run times depend on the user (user k runs about 60 * 2^k s), with groups,
    GPUs and a few zero-length jobs; submit times one per minute from 2024-01-01 UTC."""
    rng = random.Random(seed)
    rows = []
    for n in range(jobs):
        user = rng.randrange(8)
        duration = 0.0 if rng.random() < 0.05 else round(60 * 2 ** user * rng.uniform(0.8, 1.25))
        rows.append({"job_id": f"j{n:04d}", "user": f"u{user}", "grp": f"g{user}-{rng.randrange(3)}",
                     "submit": 1_704_067_200 + 60 * n, "duration": duration, "gpus": rng.choice([1, 2, 4, 8])})
    pl.DataFrame(rows).write_csv(path)
    return rows


def _import(tmp_path: Path, name: str = "toy") -> tuple[Path, list[dict]]:
    home = tmp_path / "home"
    rows = _write_jobs(tmp_path / f"{name}.csv")
    import_dataset(name, tmp_path / f"{name}.csv", home,
                   mapping="job_id=job_id,user=user,job_group=grp,submit=submit,duration=duration,gpus=gpus")
    return home, rows


def _expected_windows(rows: list[dict]) -> dict[str, int]:
    """Jobs per window by the split's definition, computed from the CSV rows."""
    times = sorted(r["submit"] for r in rows if r["duration"] > 0)
    n = len(times)
    t1, t2 = times[(7 * n) // 10], times[(8 * n) // 10]
    return {"train": sum(t < t1 for t in times), "validation": sum(t1 <= t < t2 for t in times),
            "test": sum(t >= t2 for t in times)}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[dict]]:
    tmp_path = tmp_path_factory.mktemp("trained")
    home, rows = _import(tmp_path)
    result = train(home, "toy", tmp_path / "model")
    return home, result.path, rows


def test_card_counts_windows_and_metrics(trained) -> None:
    home, model, rows = trained
    card = json.loads((model / CARD_FILE).read_text())
    zero = sum(r["duration"] == 0 for r in rows)
    assert card["target"]["jobs"] == len(rows) == 600
    assert card["target"]["with_target"] == len(rows) - zero
    assert card["target"]["excluded"]["run_time_not_positive"] == zero
    windows = card["split"]["windows"]
    assert {w: windows[w]["jobs"] for w in windows} == _expected_windows(rows)
    # The first train job is the first job with a run time; its submission as UTC text.
    first = min(r["submit"] for r in rows if r["duration"] > 0)
    assert windows["train"]["first_submit_utc"] == datetime.fromtimestamp(first, timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ")
    assert card["synthetic"] is False and "warning" not in card
    assert card["data"]["trace"] == "toy"
    assert [f["sha256"] for f in card["data"]["input_files"]] == [
        __import__("hashlib").sha256((model.parent / "toy.csv").read_bytes()).hexdigest()]
    assert card["model_id"] == card["model_sha256"][:16]
    assert card["versions"]["scikit-learn"] == __import__("sklearn").__version__
    used = [f["name"] for f in card["features"]["used"]]
    assert "user" in used and "user_hist_median_s" in used and "gpu_type" not in used
    assert card["features"]["dropped"]["gpu_type"].startswith("no value")
    table = {row["predictor"]: row for row in card["metrics"]["table"]}
    assert list(table) == ["model", "model_p50", "global_median", "user_history_median", "group_history_median"]
    assert table["model"]["jobs"] == windows["test"]["jobs"]
    # Run times are set by the user: knowing the user's history beats one global median by far.
    assert table["user_history_median"]["mdape_pct"] < 30 < table["global_median"]["mdape_pct"]
    assert table["model"]["mdape_pct"] < 30 and table["model"]["spearman"] > 0.9
    assert card["metrics"]["p90_coverage"] > 0.7


def test_training_is_deterministic(trained, tmp_path: Path) -> None:
    home, model, _ = trained
    again = train(home, "toy", tmp_path / "again")
    for name in (MODEL_FILE, CARD_FILE):
        assert (again.path / name).read_bytes() == (model / name).read_bytes()


def test_predict_on_frames_matches_apply_on_the_catalog(trained) -> None:
    home, model, rows = trained
    predictor = load_predictor(model)
    table = predictor.predict_catalog(home, "toy")
    jobs = catalog.query(home, "SELECT * FROM jobs WHERE trace = 'toy'")
    shuffled = jobs.sample(fraction=1.0, shuffle=True, seed=2)
    predicted = predictor.predict(shuffled)
    assert predicted.columns == ["job_id", "pred_s", "p50_s", "p90_s", "model_id"]
    assert predicted.get_column("job_id").to_list() == shuffled.get_column("job_id").to_list()
    assert set(predicted.get_column("model_id").to_list()) == {predictor.model_id}
    joined = predicted.join(table, on="job_id", suffix="_apply")
    assert joined.height == len(rows)
    for column in ("pred_s", "p50_s", "p90_s"):
        assert np.allclose(joined.get_column(column).to_numpy(), joined.get_column(f"{column}_apply").to_numpy(),
                           rtol=1e-12)
    assert (predicted.get_column("p90_s") >= predicted.get_column("p50_s")).all()
    assert (predicted.get_column("pred_s") >= 0).all()
    # A pandas frame gives the same predictions.
    pd = pytest.importorskip("pandas")
    from_pandas = predictor.predict(pd.DataFrame(jobs.to_dicts()))
    assert np.allclose(from_pandas.get_column("pred_s").to_numpy(),
                       predictor.predict(jobs).get_column("pred_s").to_numpy(), rtol=1e-12)


def _copy_model(model: Path, dest: Path) -> Path:
    dest.mkdir()
    for name in (MODEL_FILE, CARD_FILE):
        (dest / name).write_bytes((model / name).read_bytes())
    return dest


def test_loading_refuses_a_folder_without_a_card(trained, tmp_path: Path) -> None:
    _, model, _ = trained
    copy = _copy_model(model, tmp_path / "m")
    (copy / CARD_FILE).unlink()
    with pytest.raises(ModelFileError, match="no model_card.json"):
        load_predictor(copy)
    with pytest.raises(ModelFileError, match="not a model folder"):
        load_predictor(tmp_path / "absent")


def test_loading_checks_the_sha256_before_unpickling(trained, tmp_path: Path) -> None:
    _, model, _ = trained
    copy = _copy_model(model, tmp_path / "m")
    # Not a pickle at all: if it were unpickled, the error would be an unpickling error.
    (copy / MODEL_FILE).write_bytes(b"not a pickle")
    with pytest.raises(ModelFileError, match="sha256 .* differs from the card"):
        load_predictor(copy)


def test_loading_refuses_another_scikit_learn_before_unpickling(trained, tmp_path: Path) -> None:
    _, model, _ = trained
    copy = _copy_model(model, tmp_path / "m")
    garbage = b"not a pickle either"
    (copy / MODEL_FILE).write_bytes(garbage)
    card = json.loads((copy / CARD_FILE).read_text())
    card["model_sha256"] = __import__("hashlib").sha256(garbage).hexdigest()
    card["versions"]["scikit-learn"] = "0.24.2"
    (copy / CARD_FILE).write_text(json.dumps(card))
    with pytest.raises(ModelFileError, match="trained with scikit-learn 0.24.2") as caught:
        load_predictor(copy)
    assert "\n" not in str(caught.value)


def test_an_existing_folder_that_is_not_a_model_is_left_alone(trained, tmp_path: Path) -> None:
    home, _, _ = trained
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep")
    with pytest.raises(ModelFileError, match="not a model folder"):
        train(home, "toy", other)
    assert [p.name for p in other.iterdir()] == ["notes.txt"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_sampled_fit_and_replacing_a_model_folder(trained, tmp_path: Path) -> None:
    home, _, rows = trained
    out = tmp_path / "model"
    first = train(home, "toy", out, TrainSettings(max_fit_rows=100))
    # The train window holds more than 100 jobs: a sample of 100 is fitted; the windows stay whole.
    assert first.card["models"]["fit_rows"] == 100
    assert first.card["split"]["windows"]["train"]["jobs"] == _expected_windows(rows)["train"]
    second = train(home, "toy", out, TrainSettings(max_fit_rows=100, random_state=5))
    assert second.card["models"]["settings"]["random_state"] == 5
    assert json.loads((out / CARD_FILE).read_text())["model_id"] == second.card["model_id"] != first.card["model_id"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no temporary folder left


def test_a_trace_without_wall_clock_gets_no_hour_features() -> None:
    from ddlx.predict.features import frame_features
    from ddlx.predict.models import fit

    rng = random.Random(4)
    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    jobs = pl.DataFrame({
        "job_id": [f"j{n}" for n in range(300)], "user": [f"u{n % 3}" for n in range(300)],
        "submit_time": [t0 + timedelta(minutes=7 * n) for n in range(300)],
        "run_s": [float(rng.randrange(1, 1000)) for _ in range(300)]},
        schema_overrides={"submit_time": pl.Datetime("us", "UTC")})
    jobs = jobs.with_columns(pl.col("submit_time").alias("start_time"),
                             (pl.col("submit_time") + pl.duration(seconds=pl.col("run_s"))).alias("end_time"))
    result = fit(frame_features(jobs, None), None)
    assert "submit_hour" not in result.used_features and "submit_weekday" not in result.used_features
    assert result.dropped_features["submit_hour"].startswith("the trace has no wall clock")
    # With a wall clock the hour varies (one job every 7 minutes over 35 hours) and is used.
    with_clock = fit(frame_features(jobs, "UTC"), "UTC")
    assert "submit_hour" in with_clock.used_features
