"""Tests of ddlx.traces.acme.generator: synthetic Acme job traces (Seren and Kalos, NSDI'24).

Every figure is recomputed here from the written CSVs (the csv module and datetime.fromisoformat
for formats, DuckDB for times and aggregates), never taken from the generator. Targets come from
shared/traces/acmetrace/cluster_summary.csv, read here; tolerances allow for the sampling noise of
a release at scale 0.2 (~206,000 Seren jobs but only ~4,000 Kalos GPU jobs, whose heavy-tailed
means vary by up to ~50 % from seed to seed).
"""

from __future__ import annotations

import csv
import itertools
import math
import re
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest

from ddlx.traces.acme.generator import generate as generate_acme
from tests.conftest import SHARED_TRACES

SCALE = 0.2
SEED = 3
SUMMARY = SHARED_TRACES / "acmetrace" / "cluster_summary.csv"
SEREN_HEADER = ("job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,"
                "duration,queue,gpu_time")
# Column order of the official AcmeTrace README example for Kalos.
KALOS_HEADER = ("job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,"
                "submit_time,start_time,end_time,fail_time,stop_time,duration,queue,gpu_time")
FILES = {"Seren": ("trace_seren.csv", SEREN_HEADER, timedelta(hours=8)),
         "Kalos": ("trace_kalos.csv", KALOS_HEADER, timedelta(0))}
TYPES = {"Pretrain", "SFT", "Eval", "MLLM", "Debug", "Other"}
TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[+-]\d\d:\d\d$")
SHANGHAI = timezone(timedelta(hours=8))
# Relative / absolute tolerances per cluster (sampling noise at SCALE, see the module docstring).
REL = {"Seren": {"mean_run": 0.15, "mean_queue": 0.2, "mean_gpus": 0.1, "median_run": 0.1,
                 "cpu_mean_run": 0.2, "cpu_mean_queue": 0.25},
       "Kalos": {"mean_run": 0.45, "mean_queue": 0.6, "mean_gpus": 0.25, "median_run": 0.1,
                 "cpu_mean_run": 0.25, "cpu_mean_queue": 0.6}}
ABS = {"Seren": {"rate": 0.01, "gpu_time_share": 0.15, "median_queue": 1, "cpu_median_run": 2},
       "Kalos": {"rate": 0.03, "gpu_time_share": 0.3, "median_queue": 2, "cpu_median_run": 3}}


# ------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path], list[str]]:
    """One release at SCALE: folder, returned paths and progress messages."""
    out = tmp_path_factory.mktemp("acme")
    messages: list[str] = []
    paths = generate_acme(out, scale=SCALE, seed=SEED, progress=messages.append)
    return out, paths, messages


@pytest.fixture(scope="module")
def db(release: tuple[Path, list[Path], list[str]]) -> duckdb.DuckDBPyConnection:
    """DuckDB with tables seren and kalos: text columns read as written, numbers cast, and
    epoch seconds (submit_s, start_s, end_s, fail_s, stop_s) parsed from the ISO times."""
    con = duckdb.connect()
    for cluster, (name, header, _) in FILES.items():
        columns = "{" + ", ".join(f"'{c}': 'VARCHAR'" for c in header.split(",")) + "}"
        source = f"read_csv('{release[0] / name}', header=true, auto_detect=false, columns={columns})"
        times = [c for c in header.split(",") if c.endswith("_time") and c != "gpu_time"]
        parsed = ", ".join(f"epoch(CAST({c} AS TIMESTAMPTZ))::BIGINT AS {c.removesuffix('_time')}_s"
                           for c in times)
        con.execute(f"""CREATE TABLE {cluster.lower()} AS SELECT *,
            CAST(gpu_num AS INT) AS gpus, CAST(node_num AS INT) AS nodes, CAST(cpu_num AS INT) AS cpus,
            CAST(duration AS BIGINT) AS dur, CAST(queue AS DOUBLE) AS que, CAST(gpu_time AS DOUBLE) AS gtime,
            CASE WHEN state IN ('TIMEOUT', 'NODE_FAIL') THEN 'FAILED' ELSE state END AS final,
            {parsed} FROM {source}""")
    return con


@pytest.fixture(scope="module")
def summary() -> dict[str, dict[str, float]]:
    """cluster_summary.csv rows Seren and Kalos, numbers as floats."""
    if not SUMMARY.exists():
        pytest.skip("../shared/traces is not beside the repo")
    with open(SUMMARY, newline="") as handle:
        rows = {row["id"]: row for row in csv.DictReader(handle)}
    return {c: {k: float(v) for k, v in rows[c].items() if k != "id" and v != ""} for c in FILES}


def _one(con: duckdb.DuckDBPyConnection, sql: str):
    row = con.execute(sql).fetchall()[0]
    return row[0] if len(row) == 1 else row


# ------------------------------------------------------------------------------- format


def test_writes_both_files_and_nothing_else(release: tuple[Path, list[Path], list[str]]) -> None:
    out, paths, messages = release
    assert [p.name for p in paths] == ["trace_seren.csv", "trace_kalos.csv"]
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in paths)
    assert len(messages) == 2 and all(p.stat().st_mode & 0o777 == 0o644 for p in paths)


def test_headers_are_exact(release: tuple[Path, list[Path], list[str]]) -> None:
    for name, header, _ in FILES.values():
        with open(release[0] / name, newline="") as handle:
            assert handle.readline() == header + "\n", name
    kalos, seren = KALOS_HEADER.split(","), SEREN_HEADER.split(",")
    assert set(kalos) - set(seren) == {"mem_per_pod_GB", "shared_mem_per_pod", "fail_time", "stop_time"}
    assert [c for c in kalos if c in seren] == seren  # the shared columns keep Seren's order


def _sampled_rows(path: Path, every: int) -> list[dict[str, str]]:
    """Every `every`-th data row of a CSV (csv module), as dicts."""
    with open(path, newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        return [dict(zip(header, row, strict=True)) for row in itertools.islice(reader, 0, None, every)]


@pytest.mark.parametrize("cluster", list(FILES))
def test_times_carry_the_cluster_offset(release: tuple[Path, list[Path], list[str]],
                                        db: duckdb.DuckDBPyConnection, cluster: str) -> None:
    name, header, offset = FILES[cluster]
    time_columns = [c for c in header.split(",") if c.endswith("_time") and c != "gpu_time"]
    sign = "-" if offset < timedelta(0) else "+"
    suffix = f"{sign}{abs(offset) // timedelta(hours=1):02d}:00"
    for column in time_columns:  # every value: the pattern and the cluster's offset
        bad = _one(db, f"""SELECT count(*) FROM {cluster.lower()} WHERE {column} IS NOT NULL
            AND NOT (regexp_full_match({column}, '{TIME.pattern[1:-1]}') AND {column} LIKE '%{suffix}')""")
        assert bad == 0, column
    assert _one(db, f"SELECT count(*) FROM {cluster.lower()} WHERE submit_time IS NULL") == 0
    rows = _sampled_rows(release[0] / name, 37)
    assert len(rows) > 100
    for row in rows:  # a sample parsed independently of DuckDB
        for column in time_columns:
            if row[column]:
                parsed = datetime.fromisoformat(row[column])
                assert parsed.utcoffset() == offset and parsed.year == 2023, row[column]


@pytest.mark.parametrize("cluster", list(FILES))
def test_value_formats(release: tuple[Path, list[Path], list[str]], cluster: str) -> None:
    name = FILES[cluster][0]
    text = (release[0] / name).read_bytes()
    assert b"\r" not in text and b'"' not in text
    integer, floating = re.compile(r"^\d+$"), re.compile(r"^\d+\.\d+$")
    for row in _sampled_rows(release[0] / name, 53):
        for column in ("node_num", "gpu_num", "cpu_num"):
            assert integer.match(row[column]), (column, row)
        assert row["duration"] == "" or integer.match(row["duration"])
        assert row["gpu_time"] == "" or floating.match(row["gpu_time"])  # 936.0 as in the README
        queue_format = integer if cluster == "Seren" else floating  # README: 32 vs 10.0
        assert row["queue"] == "" or queue_format.match(row["queue"]), row
        assert re.match(r"^u[0-9a-f]{4}$", row["user"])
        if cluster == "Seren":
            assert integer.match(row["job_id"])
        else:
            assert re.match(r"^dlc[0-9a-z]{13}$", row["job_id"])
            assert integer.match(row["mem_per_pod_GB"]) and floating.match(row["shared_mem_per_pod"])


# ------------------------------------------------------------------------------- consistency


@pytest.mark.parametrize("cluster", ["seren", "kalos"])
def test_derived_columns_agree_with_the_times(db: duckdb.DuckDBPyConnection, cluster: str) -> None:
    checks = {
        "duration != end - start": "dur IS DISTINCT FROM end_s - start_s",
        "queue != start - submit": "que IS DISTINCT FROM start_s - submit_s",
        "gpu_time != duration * gpu_num": "gtime IS DISTINCT FROM dur * gpus",
        "start before submit or end before start": "start_s < submit_s OR end_s < start_s",
        "node_num != ceil(gpu_num / 8)": "nodes <> greatest(1, ceil(gpus / 8))",
        "bad type": f"type NOT IN {tuple(sorted(TYPES))}",
        "start / end missing apart from a queued cancel":
            "(start_s IS NULL OR end_s IS NULL) AND state <> 'CANCELLED'",
        "start missing but end present": "(start_s IS NULL) <> (end_s IS NULL)",
        "negative resources": "gpus < 0 OR cpus < 1",
    }
    bad = {name: _one(db, f"SELECT count(*) FROM {cluster} WHERE {cond}") for name, cond in checks.items()}
    assert bad == dict.fromkeys(checks, 0)
    assert _one(db, f"SELECT count(*) - count(DISTINCT job_id) FROM {cluster}") == 0


def test_seren_follows_slurm_conventions(db: duckdb.DuckDBPyConnection) -> None:
    states = {s for s, in db.execute("SELECT DISTINCT state FROM seren").fetchall()}
    assert states == {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL"}
    rare = _one(db, "SELECT avg((state IN ('TIMEOUT', 'NODE_FAIL'))::INT) FROM seren")
    assert 0 < rare < 0.02  # "very rare" (AcmeTrace README)
    assert _one(db, "SELECT count(*) FROM seren WHERE start_s IS NULL OR dur IS NULL") == 0
    zero = _one(db, "SELECT count(*) FILTER (WHERE dur = 0 AND state <> 'CANCELLED') FROM seren")
    assert zero == 0  # only jobs cancelled while queued have start = end
    ids_in_submit_order = db.execute(
        "SELECT CAST(job_id AS BIGINT) FROM seren ORDER BY submit_s, CAST(job_id AS BIGINT)").fetchall()
    assert ids_in_submit_order == sorted(ids_in_submit_order)


def test_kalos_fail_and_stop_times(db: duckdb.DuckDBPyConnection) -> None:
    states = {s for s, in db.execute("SELECT DISTINCT state FROM kalos").fetchall()}
    assert states == {"COMPLETED", "CANCELLED", "FAILED"}
    checks = {
        "fail_time iff FAILED": "(fail_s IS NOT NULL) <> (state = 'FAILED')",
        "fail_time != end_time": "fail_s IS DISTINCT FROM end_s AND state = 'FAILED'",
        "stop_time iff CANCELLED": "(stop_s IS NOT NULL) <> (state = 'CANCELLED')",
        "stop_time != end_time of a started job":
            "stop_s IS DISTINCT FROM end_s AND start_s IS NOT NULL AND state = 'CANCELLED'",
        "queued cancel stops before submit": "start_s IS NULL AND stop_s < submit_s",
        "queued cancel has a duration":
            "start_s IS NULL AND (dur IS NOT NULL OR que IS NOT NULL OR gtime IS NOT NULL)",
    }
    bad = {name: _one(db, f"SELECT count(*) FROM kalos WHERE {cond}") for name, cond in checks.items()}
    assert bad == dict.fromkeys(checks, 0)
    assert _one(db, "SELECT count(*) FROM kalos WHERE start_s IS NULL") > 0


@pytest.mark.parametrize(("cluster", "first_month"), [("seren", 3), ("kalos", 5)])
def test_submissions_span_the_modelled_months_in_shanghai(db: duckdb.DuckDBPyConnection, cluster: str,
                                                          first_month: int) -> None:
    first, last = _one(db, f"SELECT min(submit_s), max(submit_s) FROM {cluster}")
    first_day = datetime.fromtimestamp(first, SHANGHAI).date()
    last_day = datetime.fromtimestamp(last, SHANGHAI).date()
    assert first_day.month == first_month and first_day.day <= 2
    assert last_day.month == 8 and last_day.day >= 30 and last_day <= date(2023, 8, 31)
    assert first_day.year == last_day.year == 2023


# ------------------------------------------------------------------------------- determinism


def test_same_seed_gives_identical_bytes_and_another_seed_differs(tmp_path: Path) -> None:
    first = generate_acme(tmp_path / "a", scale=0.01, seed=SEED)
    again = generate_acme(tmp_path / "b", scale=0.01, seed=SEED)
    other = generate_acme(tmp_path / "c", scale=0.01, seed=SEED + 1)
    for one, two, three in zip(first, again, other):
        assert one.read_bytes() == two.read_bytes(), one.name
        assert one.read_bytes() != three.read_bytes(), one.name


def test_bad_arguments_raise_value_error(tmp_path: Path) -> None:
    for scale in (0, -0.5, math.nan, math.inf, None):
        with pytest.raises(ValueError):
            generate_acme(tmp_path, scale=scale)  # type: ignore[arg-type]
    for seed in (-1, 2.0, False):
        with pytest.raises(ValueError):
            generate_acme(tmp_path, seed=seed)  # type: ignore[arg-type]
    assert not list(tmp_path.iterdir())


def test_a_tiny_scale_still_has_gpu_and_cpu_jobs(tmp_path: Path) -> None:
    for path in generate_acme(tmp_path, scale=1e-7, seed=SEED):
        with open(path, newline="") as handle:
            gpus = [int(row["gpu_num"]) for row in csv.DictReader(handle)]
        assert sum(g > 0 for g in gpus) >= 5 and sum(g == 0 for g in gpus) >= 5, path.name


# ------------------------------------------------------------------------------- calibration


@pytest.mark.parametrize("cluster", list(FILES))
def test_job_counts_scale_with_the_summary(db: duckdb.DuckDBPyConnection,
                                           summary: dict[str, dict[str, float]], cluster: str) -> None:
    jobs, gpu_jobs = _one(db, f"SELECT count(*), count(*) FILTER (WHERE gpus > 0) FROM {cluster.lower()}")
    target = summary[cluster]
    assert jobs == pytest.approx(target["job_num"] * SCALE, abs=2)
    assert gpu_jobs == pytest.approx(target["gpu_job_num"] * SCALE, abs=1)
    assert jobs - gpu_jobs == pytest.approx(target["cpu_job_num"] * SCALE, abs=1)


@pytest.mark.parametrize("cluster", list(FILES))
def test_gpu_jobs_match_the_summary(db: duckdb.DuckDBPyConnection,
                                    summary: dict[str, dict[str, float]], cluster: str) -> None:
    target, rel, tol = summary[cluster], REL[cluster], ABS[cluster]
    table = cluster.lower()
    med_gpus, mean_gpus, max_gpus, med_run, mean_run, max_run, med_que, mean_que = _one(db, f"""
        SELECT median(gpus), avg(gpus), max(gpus), median(dur), avg(dur), max(dur), median(que), avg(que)
        FROM {table} WHERE gpus > 0""")
    assert med_gpus == target["med_gpu_num"]
    assert mean_gpus == pytest.approx(target["avg_gpu_num"], rel=rel["mean_gpus"])
    assert max_gpus == target["max_gpu"]
    assert med_run == pytest.approx(target["med_run_time_gpu"], rel=rel["median_run"])
    assert mean_run == pytest.approx(target["avg_run_time_gpu"], rel=rel["mean_run"])
    # Heavy tail, capped at the longest real run (a small release rarely reaches the cap).
    assert 100 * target["med_run_time_gpu"] <= max_run <= target["max_run_time_gpu"]
    assert med_que == pytest.approx(target["med_que_time_gpu"], abs=tol["median_queue"])
    assert mean_que == pytest.approx(target["avg_que_time_gpu"], rel=rel["mean_queue"])


@pytest.mark.parametrize("cluster", list(FILES))
def test_gpu_job_states_and_their_gpu_time(db: duckdb.DuckDBPyConnection,
                                           summary: dict[str, dict[str, float]], cluster: str) -> None:
    target, tol = summary[cluster], ABS[cluster]
    rows = db.execute(f"""SELECT final, count(*) / sum(count(*)) OVER (),
                                 sum(gtime) / sum(sum(gtime)) OVER ()
                          FROM {cluster.lower()} WHERE gpus > 0 GROUP BY final""").fetchall()
    shares = {state: (jobs, gpu_time) for state, jobs, gpu_time in rows}
    assert set(shares) == {"COMPLETED", "CANCELLED", "FAILED"}
    for state, key in (("COMPLETED", "complete"), ("CANCELLED", "cancel"), ("FAILED", "fail")):
        assert shares[state][0] == pytest.approx(target[f"{key}_rate_gpu"], abs=tol["rate"]), state
        assert shares[state][1] == pytest.approx(target[f"{key}_rate_gpu_time"],
                                                 abs=tol["gpu_time_share"]), state
    # The published skew: a few cancelled (large, long) jobs hold most of the GPU time.
    assert shares["CANCELLED"][1] > 0.45 and shares["CANCELLED"][1] > 5 * shares["CANCELLED"][0]


@pytest.mark.parametrize("cluster", list(FILES))
def test_cpu_jobs_match_the_summary(db: duckdb.DuckDBPyConnection,
                                    summary: dict[str, dict[str, float]], cluster: str) -> None:
    target, rel, tol = summary[cluster], REL[cluster], ABS[cluster]
    table = cluster.lower()
    med_run, mean_run, med_que, mean_que = _one(db, f"""
        SELECT median(dur), avg(dur), median(que), avg(que) FROM {table} WHERE gpus = 0""")
    assert med_run == pytest.approx(target["med_run_time_cpu"], abs=tol["cpu_median_run"])
    assert mean_run == pytest.approx(target["avg_run_time_cpu"], rel=rel["cpu_mean_run"])
    assert med_que == pytest.approx(target["med_que_time_cpu"], abs=tol["median_queue"])
    assert mean_que == pytest.approx(target["avg_que_time_cpu"], rel=rel["cpu_mean_queue"])
    rates = dict(db.execute(f"""SELECT final, count(*) / sum(count(*)) OVER () FROM {table}
                                WHERE gpus = 0 GROUP BY final""").fetchall())
    for state, key in (("COMPLETED", "complete"), ("CANCELLED", "cancel"), ("FAILED", "fail")):
        assert rates.get(state, 0.0) == pytest.approx(target[f"{key}_rate_cpu"], abs=tol["rate"] / 2), state
    other_or_debug = _one(db, f"SELECT avg((type IN ('Other', 'Debug'))::INT) FROM {table} WHERE gpus = 0")
    assert other_or_debug >= 0.9
    gpu_types = {t for t, in db.execute(f"SELECT DISTINCT type FROM {table} WHERE gpus > 0").fetchall()}
    assert gpu_types == TYPES
