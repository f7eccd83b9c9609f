"""Features known at submission: hand-derived history values on a tiny table, local hour and
weekday, the jobs without a target, and proofs that no feature uses the future."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

import polars as pl
import pytest

from ddlx.analysis.context import open_trace
from ddlx.datasets.importers import import_dataset
from ddlx.predict.features import FEATURE_NAMES, PredictError, exclusion_counts, frame_features, trace_features

BASE = datetime(2024, 1, 1, tzinfo=timezone.utc)  # a Monday, 08:00 in Asia/Shanghai (UTC+8)


def _at(seconds: float | None) -> datetime | None:
    return None if seconds is None else BASE + timedelta(seconds=seconds)


def _jobs(rows: list[tuple]) -> pl.DataFrame:
    """Jobs from (job_id, user, job_group, job_name, submit, start, end) with times in seconds after
    BASE; run_s = end - start where both are known."""
    records = []
    for job_id, user, group, name, submit, start, end in rows:
        records.append({
            "job_id": job_id, "cluster": "c1", "user": user, "job_group": group, "job_name": name,
            "submit_time": _at(submit), "start_time": _at(start), "end_time": _at(end),
            "run_s": None if start is None or end is None else float(end - start),
            "num_gpus": 1.0, "num_cpus": 4.0, "mem_gb": 8.0, "num_instances": 1, "gpu_type": "V100", "vc": "vc1"})
    return pl.DataFrame(records, schema_overrides={"submit_time": pl.Datetime("us", "UTC"),
                                                   "start_time": pl.Datetime("us", "UTC"),
                                                   "end_time": pl.Datetime("us", "UTC")})


# Times in seconds after BASE.
#   u1: a 0 -> 0..100 (run 100, group g1); b 10 -> 10..310 (run 300, name n1);
#       c 100 -> 100..150 (run 50): a ends exactly at c's submission, so it is NOT in c's history;
#       e 200 -> 200..260 (run 60, name n1); d 400 -> 400..500 (run 100, group g1);
#       r 20 -> started 20, no end (running): never anyone's history; z 30 -> 30..30 (run 0): not history.
#   u2: f 50 -> 50..80: a user with no finished history.
#   u3: g 0 -> 300..500 (run 200); h 100 -> 400..500 (run 100): both end at 500; i 600.
#   no user: n 700.
TINY = [
    ("a", "u1", "g1", None, 0, 0, 100),
    ("b", "u1", None, "n1", 10, 10, 310),
    ("c", "u1", None, None, 100, 100, 150),
    ("e", "u1", None, "n1", 200, 200, 260),
    ("d", "u1", "g1", None, 400, 400, 500),
    ("r", "u1", None, None, 20, 20, None),
    ("z", "u1", None, None, 30, 30, 30),
    ("f", "u2", None, None, 50, 50, 80),
    ("g", "u3", None, None, 0, 300, 500),
    ("h", "u3", None, None, 100, 400, 500),
    ("i", "u3", None, None, 600, 600, 700),
    ("n", None, None, None, 700, 700, 800),
]


def _by_id(frame: pl.DataFrame) -> dict[str, dict]:
    return {row["job_id"]: row for row in frame.iter_rows(named=True)}


def test_history_values_derived_by_hand() -> None:
    rows = _by_id(frame_features(_jobs(TINY), "Asia/Shanghai"))
    user = {k: (v["user_hist_count"], v["user_hist_median_s"], v["user_hist_last_s"]) for k, v in rows.items()}
    # a (submit 0): nothing ended before.
    assert user["a"] == (0, None, None)
    # b (submit 10), r (20), z (30): a ends at 100, still nothing.
    assert user["b"] == user["r"] == user["z"] == (0, None, None)
    # c (submit 100): a ends at 100 = c's submission, not strictly before: excluded.
    assert user["c"] == (0, None, None)
    # e (submit 200): a (end 100, run 100) and c (end 150, run 50) -> count 2, median (100 + 50) / 2,
    # last = c (ended last) -> 50. b ends at 310, r never, z has run 0.
    assert user["e"] == (2, 75.0, 50.0)
    # d (submit 400): a, c, b (end 310, run 300), e (end 260, run 60) -> runs {100, 50, 300, 60}:
    # median (60 + 100) / 2 = 80; last ended = b -> 300.
    assert user["d"] == (4, 80.0, 300.0)
    # f: u2 has no finished job before 50 (its own ends at 80).
    assert user["f"] == (0, None, None)
    # i (submit 600): g (run 200) and h (run 100) both end at 500 -> count 2, median 150, last = the
    # longest of the tie -> 200.
    assert user["i"] == (2, 150.0, 200.0)
    # n: no user, no key, no history.
    assert user["n"] == (0, None, None)

    group = {k: (v["group"], v["group_hist_count"], v["group_hist_median_s"], v["group_hist_last_s"])
             for k, v in rows.items()}
    # d (group g1, submit 400): a (g1, end 100, run 100) -> 1, 100, 100.
    assert group["d"] == ("g:g1", 1, 100.0, 100.0)
    # e (name n1, submit 200): b (n1) ends at 310 > 200 -> none.
    assert group["e"] == ("n:n1", 0, None, None)
    assert group["a"] == ("g:g1", 0, None, None)
    assert group["c"] == (None, 0, None, None)


def test_local_hour_and_weekday() -> None:
    jobs = _jobs([("x", "u", None, None, 0, 0, 10),
                  # 2024-01-06 17:00 UTC = Sunday 2024-01-07 01:00 in Shanghai.
                  ("y", "u", None, None, 5 * 86400 + 17 * 3600, None, None)])
    rows = _by_id(frame_features(jobs, "Asia/Shanghai"))
    assert (rows["x"]["submit_hour"], rows["x"]["submit_weekday"]) == (8, 1)  # Monday 08:00
    assert (rows["y"]["submit_hour"], rows["y"]["submit_weekday"]) == (1, 7)
    # 2024-01-01 00:00 UTC = Sunday 2023-12-31 19:00 in New York (UTC-5 in winter).
    rows = _by_id(frame_features(jobs, "America/New_York"))
    assert (rows["x"]["submit_hour"], rows["x"]["submit_weekday"]) == (19, 7)
    # No wall clock: no hour, no weekday.
    rows = _by_id(frame_features(jobs, None))
    assert rows["x"]["submit_hour"] is None and rows["x"]["submit_weekday"] is None


def test_rows_keep_the_input_order_and_columns() -> None:
    jobs = _jobs(TINY).reverse()
    frame = frame_features(jobs, None)
    assert frame.get_column("job_id").to_list() == jobs.get_column("job_id").to_list()
    assert set(FEATURE_NAMES) <= set(frame.columns)
    # Only a, b, c, e, d, f, g, h, i, n have a target: r has no end, z runs 0 s.
    assert sorted(frame.filter(pl.col("has_target")).get_column("job_id").to_list()) == sorted("abcedfghin")


def _random_trace(seed: int, jobs: int = 400) -> pl.DataFrame:
    """Jobs of 5 users and 6 groups submitted over 10,000 s with random run times; some never end."""
    rng = random.Random(seed)
    rows = []
    for k in range(jobs):
        submit = rng.randrange(0, 10_000)
        start = submit + rng.randrange(0, 50)
        end = None if rng.random() < 0.1 else start + rng.choice([0, rng.randrange(1, 3_000)])
        rows.append((f"j{k}", f"u{rng.randrange(5)}", f"g{rng.randrange(6)}", None, submit, start, end))
    return _jobs(rows)


def _features_before(frame: pl.DataFrame, cutoff: datetime) -> pl.DataFrame:
    return (frame.filter(pl.col("submit_time") < cutoff).drop("_row", "run_s", "has_target").sort("job_id"))


def test_no_feature_uses_the_future() -> None:
    jobs = _random_trace(seed=7)
    cutoff = BASE + timedelta(seconds=5_000)
    before = frame_features(jobs, "Asia/Shanghai")

    rng = random.Random(11)
    # The future, rewritten: every job submitted at or after the cutoff gets another run time; every
    # job that ends at or after the cutoff ends at another instant, still after it; and 100 more jobs
    # arrive after the cutoff, some of them for the same users and groups.
    shift = pl.Series("shift", [rng.randrange(1, 5_000) for _ in range(jobs.height)])
    changed = jobs.with_columns(shift).with_columns(
        pl.when(pl.col("end_time") >= cutoff)
        .then(pl.col("end_time") + pl.duration(seconds=pl.col("shift")))
        .otherwise(pl.col("end_time")).alias("end_time")).drop("shift")
    changed = changed.with_columns(
        pl.when(pl.col("end_time").is_not_null() & pl.col("start_time").is_not_null())
        .then((pl.col("end_time") - pl.col("start_time")).dt.total_seconds().cast(pl.Float64))
        .alias("run_s"))
    extra = _jobs([(f"x{k}", f"u{k % 5}", f"g{k % 6}", None, 5_000 + k, 5_000 + k, 5_000 + k + 1 + k % 7)
                   for k in range(100)])
    after = frame_features(pl.concat([changed.sample(fraction=1.0, shuffle=True, seed=3), extra]), "Asia/Shanghai")

    assert before.filter(pl.col("submit_time") >= cutoff).height > 100  # the test changes something real
    assert not after.sort("job_id").equals(before.sort("job_id"))
    assert _features_before(after, cutoff).equals(_features_before(before, cutoff))
    # The jobs compared do have history (else equality would prove little).
    early = _features_before(before, cutoff)
    assert early.get_column("user_hist_count").max() >= 10 and early.get_column("group_hist_count").max() >= 5


def test_each_job_history_uses_only_jobs_ended_before_its_submission() -> None:
    """The history count of every job equals a plain-Python count of the key's jobs with a target
    that ended strictly before its submission."""
    jobs = _random_trace(seed=3, jobs=300)
    frame = frame_features(jobs, None)
    finished = [r for r in jobs.iter_rows(named=True)
                if r["end_time"] is not None and r["run_s"] and r["run_s"] > 0 and r["end_time"] > r["submit_time"]]
    for row in frame.iter_rows(named=True):
        mine = sorted(f["run_s"] for f in finished
                      if f["user"] == row["user"] and f["end_time"] < row["submit_time"])
        assert row["user_hist_count"] == len(mine), row["job_id"]
        if mine:
            middle = len(mine) // 2
            median = mine[middle] if len(mine) % 2 else (mine[middle - 1] + mine[middle]) / 2
            assert row["user_hist_median_s"] == pytest.approx(median, abs=1e-9)


def test_catalog_features_equal_frame_features(tmp_path: Path) -> None:
    """A dataset imported into the catalog gets the same features as the same jobs handed over as a frame."""
    jobs = _random_trace(seed=5, jobs=120)
    csv_path = tmp_path / "jobs.csv"
    (jobs.with_columns((pl.col("submit_time").dt.epoch("s")).alias("submit"),
                       pl.col("run_s").fill_null(0.0).alias("duration"))
     .filter(pl.col("end_time").is_not_null())
     .select("job_id", "user", "job_group", "submit", "duration", "num_gpus")
     .write_csv(csv_path))
    home = tmp_path / "home"
    import_dataset("tiny", csv_path, home, mapping="job_id=job_id,user=user,job_group=job_group,submit=submit,"
                                                  "duration=duration,gpus=num_gpus")
    with open_trace(home, "tiny") as ctx:
        from_catalog = trace_features(ctx.con, ctx.jobs, ctx.local_tz, "tiny")
        counts = exclusion_counts(ctx.con, ctx.jobs, "tiny")
    imported = jobs.filter(pl.col("end_time").is_not_null())
    # An import without a start column starts each job at its submission: end = submit + duration.
    # Unmapped columns are NULL; one input file makes one cluster named after the dataset.
    as_imported = imported.with_columns(
        pl.col("submit_time").alias("start_time"),
        (pl.col("submit_time") + pl.duration(seconds=pl.col("run_s"))).alias("end_time"),
        pl.lit("tiny").alias("cluster"),
        pl.lit(None, dtype=pl.String).alias("vc"), pl.lit(None, dtype=pl.String).alias("gpu_type"),
        pl.lit(None, dtype=pl.Float64).alias("num_cpus"), pl.lit(None, dtype=pl.Float64).alias("mem_gb"))
    from_frame = frame_features(as_imported, "UTC")
    columns = ["job_id", *FEATURE_NAMES]
    assert from_catalog.select(columns).sort("job_id").equals(from_frame.select(columns).sort("job_id"))
    zero = imported.filter(pl.col("run_s") == 0).height
    assert counts == {"jobs": imported.height, "with_target": imported.height - zero,
                      "excluded": {"never_started": 0, "no_end": 0, "no_run_time": 0,
                                   "run_time_not_positive": zero, "ends_not_after_submit": 0}}


def test_bad_frames_are_refused_with_one_line() -> None:
    with pytest.raises(PredictError, match="missing column.*job_id"):
        frame_features(pl.DataFrame({"submit_time": [BASE]}), None)
    with pytest.raises(PredictError, match="'submit_time' must hold datetimes"):
        frame_features(pl.DataFrame({"job_id": ["a"], "submit_time": [12.0]}), None)
    with pytest.raises(PredictError, match="'num_gpus' must hold double"):
        frame_features(pl.DataFrame({"job_id": ["a"], "submit_time": [BASE], "num_gpus": ["two"]}), None)
    with pytest.raises(PredictError, match="missing values"):
        frame_features(pl.DataFrame({"job_id": ["a"], "submit_time": [None]},
                                    schema={"job_id": pl.String, "submit_time": pl.Datetime("us", "UTC")}), None)
    with pytest.raises(PredictError, match="polars or pandas"):
        frame_features([{"job_id": "a"}], None)


def test_naive_times_are_utc_and_missing_columns_are_null() -> None:
    naive = pl.DataFrame({"job_id": ["a"], "submit_time": [datetime(2024, 1, 1, 0, 0)]})
    row = frame_features(naive, "Asia/Shanghai").row(0, named=True)
    assert row["submit_hour"] == 8 and row["user_hist_count"] == 0 and row["num_gpus"] is None
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"job_id": ["a", "b"], "user": ["u", "u"], "num_gpus": [1, 2],
                          "submit_time": pd.to_datetime(["2024-01-01 00:00", "2024-01-01 01:00"], utc=True)})
    out = frame_features(frame, "Asia/Shanghai")
    assert out.get_column("submit_hour").to_list() == [8, 9]
    assert out.get_column("num_gpus").to_list() == [1.0, 2.0]
