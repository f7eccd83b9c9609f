"""Tests of ddlx.traces.pai.generator: a synthetic PAI v2020 release in the official format.

Every figure is recomputed here from the written archives (DuckDB over the extracted CSVs,
polars for time zones), never taken from the generator. Expected values come from the PAI
section of TRACES.md; tolerances allow for the sampling noise of a small release (scale 0.02,
about 25,000 jobs).
"""

from __future__ import annotations

import gzip
import re
import tarfile
from pathlib import Path

import duckdb
import polars as pl
import pytest

from ddlx.traces.pai import schema
from ddlx.traces.pai.generator import generate as generate_pai

SCALE = 0.02
SEED = 7
TIMED = {"pai_job_table", "pai_task_table", "pai_instance_table"}


# ------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One small synthetic release (all seven tables)."""
    out = tmp_path_factory.mktemp("pai")
    messages: list[str] = []
    paths = generate_pai(out, scale=SCALE, seed=SEED, progress=messages.append)
    assert len(messages) == len(schema.TABLES)
    return paths


@pytest.fixture(scope="module")
def csv_text(release: dict[str, Path]) -> dict[str, str]:
    """The CSV member of each archive, as text."""
    texts = {}
    for table, path in release.items():
        with tarfile.open(path, "r:gz") as tar:
            member = tar.extractfile(f"{table}.csv")
            assert member is not None
            texts[table] = member.read().decode("ascii")
    return texts


@pytest.fixture(scope="module")
def db(release: dict[str, Path], csv_text: dict[str, str],
       tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    """DuckDB with one table per PAI table (short names: job, task, instance, ...)."""
    folder = tmp_path_factory.mktemp("csv")
    con = duckdb.connect()
    for table, text in csv_text.items():
        path = folder / f"{table}.csv"
        path.write_text(text)
        con.execute(f"CREATE TABLE {_short(table)} AS SELECT * FROM {_read_csv_sql(path, table)}")
    return con


def _short(table: str) -> str:
    return table.removeprefix("pai_").removesuffix("_table")


def _read_csv_sql(path: Path, table: str) -> str:
    columns = "{" + ", ".join(f"'{k}': '{v}'" for k, v in schema.COLUMNS[table].items()) + "}"
    return f"read_csv('{path}', columns={columns}, header=false, auto_detect=false)"


def _one(con: duckdb.DuckDBPyConnection, sql: str):
    row = con.execute(sql).fetchone()
    assert row is not None
    return row[0] if len(row) == 1 else row


# ------------------------------------------------------------------------------- format


def test_every_archive_holds_exactly_one_csv_member(release: dict[str, Path]) -> None:
    assert list(release) == list(schema.TABLES)
    for table, path in release.items():
        assert path.name == f"{table}.tar.gz" and path.is_file()
        with tarfile.open(path, "r:gz") as tar:
            members = tar.getmembers()
        assert [m.name for m in members] == [f"{table}.csv"]
        assert members[0].isfile() and members[0].mode == 0o644
        assert not list(path.parent.glob(".*tmp")), "temp files left behind"


def test_gzip_header_is_fixed_and_nameless(release: dict[str, Path]) -> None:
    for path in release.values():
        head = path.read_bytes()[:10]
        assert head[:3] == b"\x1f\x8b\x08"
        assert head[3] & 0x08 == 0, "gzip header carries a file name"
        assert head[4:8] == b"\0\0\0\0", "gzip mtime is not 0"
        with gzip.open(path) as stream:
            assert len(stream.read()) % 10240 == 0  # whole tar records


def test_csv_parses_with_the_official_columns(release: dict[str, Path], csv_text: dict[str, str],
                                              tmp_path: Path) -> None:
    for table, text in csv_text.items():
        assert text.endswith("\n") and "\r" not in text and '"' not in text
        lines = text.splitlines()
        n_fields = len(schema.COLUMNS[table])
        assert all(line.count(",") == n_fields - 1 for line in lines), table
        path = tmp_path / f"{table}.csv"
        path.write_text(text)
        rows = duckdb.connect().execute(f"SELECT count(*) FROM {_read_csv_sql(path, table)}").fetchone()
        assert rows is not None and rows[0] == len(lines) > 0


def test_value_formats_match_the_official_files(csv_text: dict[str, str]) -> None:
    def column(table: str, name: str) -> list[str]:
        index = list(schema.COLUMNS[table]).index(name)
        return [line.split(",")[index] for line in csv_text[table].splitlines()]

    whole_float = re.compile(r"^\d+\.0$")
    for table in TIMED:
        for name in ("start_time", "end_time"):
            assert all(v == "" or whole_float.match(v) for v in column(table, name)), (table, name)
    assert all(whole_float.match(v) for v in column("pai_job_table", "start_time"))
    assert all(whole_float.match(v) for v in column("pai_task_table", "inst_num"))
    assert all(whole_float.match(v) for v in column("pai_task_table", "plan_cpu"))
    assert all(v == "" or whole_float.match(v) for v in column("pai_task_table", "plan_gpu"))
    mems = column("pai_task_table", "plan_mem")
    assert all(re.match(r"^\d+\.\d+$", v) for v in mems)
    assert all(float(v) * 1024 == round(float(v) * 1024) for v in mems)  # MB / 1024
    assert any(not v.endswith(".0") for v in mems)
    for name in ("start_time", "end_time"):
        assert all(re.match(r"^\d+$", v) for v in column("pai_machine_metric", name))
    for name in ("cap_cpu", "cap_mem", "cap_gpu"):
        assert all(re.match(r"^\d+$", v) for v in column("pai_machine_spec", name))
    gpu_names = {v for v in column("pai_sensor_table", "gpu_name") if v}
    assert gpu_names and all(re.match(r"^/dev/nvidia[0-7]$", v) for v in gpu_names)
    for name in ("cpu_usage", "gpu_wrk_util", "read", "machine_cpu"):
        table = "pai_machine_metric" if name.startswith("machine") else "pai_sensor_table"
        assert all(v == "" or re.match(r"^\d+(\.\d+)?$", v) for v in column(table, name))


@pytest.mark.parametrize(("table", "name", "length"), [
    ("pai_job_table", "job_name", 24), ("pai_job_table", "user", 12),
    ("pai_job_table", "inst_id", 60), ("pai_instance_table", "inst_name", 60),
    ("pai_instance_table", "worker_name", 60), ("pai_machine_spec", "machine", 24),
    ("pai_group_tag_table", "group", 32),
])
def test_hashed_ids_are_lowercase_hex(csv_text: dict[str, str], table: str, name: str,
                                      length: int) -> None:
    index = list(schema.COLUMNS[table]).index(name)
    pattern = re.compile(rf"^[0-9a-f]{{{length}}}$")
    assert all(pattern.match(line.split(",")[index]) for line in csv_text[table].splitlines())


# ------------------------------------------------------------------------------- determinism


def test_same_seed_gives_identical_bytes_and_another_seed_differs(
        release: dict[str, Path], tmp_path: Path) -> None:
    again = generate_pai(tmp_path / "again", scale=SCALE, seed=SEED)
    other = generate_pai(tmp_path / "other", scale=SCALE, seed=SEED + 1,
                         tables=["pai_job_table", "pai_instance_table"])
    for table, path in release.items():
        assert again[table].read_bytes() == path.read_bytes(), table
    for table, path in other.items():
        assert path.read_bytes() != release[table].read_bytes(), table


def test_a_subset_of_tables_gives_the_same_bytes_as_a_full_run(
        release: dict[str, Path], tmp_path: Path) -> None:
    subset = ["pai_machine_metric", "pai_group_tag_table", "pai_sensor_table"]
    written = generate_pai(tmp_path, scale=SCALE, seed=SEED, tables=subset)
    assert list(written) == [t for t in schema.TABLES if t in subset]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{t}.tar.gz" for t in subset)
    for table, path in written.items():
        assert path.read_bytes() == release[table].read_bytes(), table


def test_bad_arguments_raise_value_error(tmp_path: Path) -> None:
    for scale in (0, -1.0, float("nan")):
        with pytest.raises(ValueError):
            generate_pai(tmp_path, scale=scale)
    with pytest.raises(ValueError):
        generate_pai(tmp_path, scale=0.01, tables=["pai_no_such_table"])
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------------------- consistency


def test_no_orphans_across_tables(db: duckdb.DuckDBPyConnection) -> None:
    checks = {
        "task without job": "SELECT count(*) FROM task ANTI JOIN job USING (job_name)",
        "instance without task": "SELECT count(*) FROM instance ANTI JOIN task USING (job_name, task_name)",
        "instance inst_id is not its job's":
            "SELECT count(*) FROM instance i JOIN job j USING (job_name) WHERE i.inst_id <> j.inst_id",
        "instance on unknown machine":
            "SELECT count(*) FROM instance WHERE machine IS NOT NULL "
            "AND machine NOT IN (SELECT machine FROM machine_spec)",
        "sensor without instance worker on that machine":
            "SELECT count(*) FROM sensor ANTI JOIN instance USING (worker_name, machine, job_name, inst_id)",
        "metric without instance worker on that machine":
            "SELECT count(*) FROM machine_metric m ANTI JOIN instance i ON m.worker_name = i.worker_name "
            "AND m.machine = i.machine AND m.start_time = i.start_time AND m.end_time = i.end_time",
        "group tag not a job's inst_id and user":
            "SELECT count(*) FROM group_tag ANTI JOIN job USING (inst_id, \"user\")",
        "GPU task on a machine of another type":
            "SELECT count(*) FROM instance i JOIN task t USING (job_name, task_name) "
            "JOIN machine_spec m USING (machine) WHERE t.gpu_type IS NOT NULL AND t.gpu_type <> m.gpu_type",
        "plan_gpu above the machine's GPUs":
            "SELECT count(*) FROM instance i JOIN task t USING (job_name, task_name) "
            "JOIN machine_spec m USING (machine) WHERE t.plan_gpu > 100 * m.cap_gpu",
        "duplicate job": "SELECT count(*) - count(DISTINCT job_name) FROM job",
        "duplicate group-tag inst_id": "SELECT count(*) - count(DISTINCT inst_id) FROM group_tag",
        "duplicate sensor worker": "SELECT count(*) - count(DISTINCT worker_name) FROM sensor",
    }
    found = {name: _one(db, sql) for name, sql in checks.items()}
    assert found == dict.fromkeys(checks, 0)


def test_times_nest_job_task_instance(db: duckdb.DuckDBPyConnection) -> None:
    task_outside_job = _one(db, """
        SELECT count(*) FROM task t JOIN job j USING (job_name)
        WHERE nullif(t.start_time, 0) < j.start_time
           OR nullif(t.end_time, 0) > nullif(j.end_time, 0)""")
    instance_before_task = _one(db, """
        SELECT count(*) FROM instance i JOIN task t USING (job_name, task_name)
        WHERE nullif(i.start_time, 0) < nullif(t.start_time, 0)
           OR nullif(i.end_time, 0) > nullif(t.end_time, 0)""")
    backwards = _one(db, """
        SELECT count(*) FROM (SELECT start_time s, end_time e FROM task UNION ALL
                              SELECT start_time, end_time FROM instance)
        WHERE nullif(e, 0) < nullif(s, 0)""")
    assert (task_outside_job, instance_before_task, backwards) == (0, 0, 0)


def test_job_status_agrees_with_its_tasks(db: duckdb.DuckDBPyConnection) -> None:
    mismatched = _one(db, """
        WITH agg AS (SELECT job_name, bool_or(status = 'Failed') f, bool_or(status = 'Running') r,
                            bool_and(status = 'Waiting') w, bool_and(status = 'Terminated') t
                     FROM task GROUP BY job_name)
        SELECT count(*) FROM job JOIN agg USING (job_name)
        WHERE (status = 'Failed') <> f OR (status = 'Terminated') <> t
           OR (status = 'Waiting') <> w OR (status = 'Running') <> (r AND NOT f)""")
    assert mismatched == 0


def test_retried_instances_repeat_their_worker_name(db: duckdb.DuckDBPyConnection) -> None:
    rows, workers, bad = _one(db, """
        SELECT count(*), count(DISTINCT worker_name),
               (SELECT count(*) FROM (SELECT worker_name FROM instance GROUP BY 1
                HAVING count(*) > 1 AND count(*) FILTER (WHERE status = 'Failed') = 0))
        FROM instance""")
    assert 0.01 < (rows - workers) / workers < 0.06  # "a few percent"
    assert bad == 0


# ------------------------------------------------------------------------------- calibration


def test_machine_spec_at_scale_1_is_the_published_cluster(tmp_path: Path) -> None:
    path = generate_pai(tmp_path, scale=1.0, tables=["pai_machine_spec"])["pai_machine_spec"]
    con = duckdb.connect()
    with tarfile.open(path, "r:gz") as tar:
        member = tar.extractfile("pai_machine_spec.csv")  # (extract's filter= needs Python 3.11.4)
        assert member is not None
        (tmp_path / "pai_machine_spec.csv").write_bytes(member.read())
    con.execute("CREATE TABLE m AS SELECT * FROM "
                f"{_read_csv_sql(tmp_path / 'pai_machine_spec.csv', 'pai_machine_spec')}")
    configs = dict(((t, c, m, g), n) for t, c, m, g, n in con.execute(
        "SELECT gpu_type, cap_cpu, cap_mem, cap_gpu, count(*) FROM m GROUP BY ALL").fetchall())
    assert configs == {
        ("CPU", 96, 512, 0): 83, ("MISC", 96, 512, 8): 280, ("P100", 64, 512, 2): 798,
        ("T4", 96, 512, 2): 497, ("V100", 96, 384, 8): 45, ("V100", 96, 512, 8): 59,
        ("V100M32", 96, 384, 8): 135,
    }
    gpus = dict(con.execute("SELECT gpu_type, sum(cap_gpu) FROM m GROUP BY 1").fetchall())
    assert gpus == {"CPU": 0, "MISC": 2240, "P100": 1596, "V100M32": 1080, "T4": 994, "V100": 832}
    assert _one(con, "SELECT count(DISTINCT machine) FROM m") == 1897


def test_small_scales_keep_every_machine_type(tmp_path: Path) -> None:
    path = generate_pai(tmp_path, scale=0.001, tables=["pai_machine_spec"])["pai_machine_spec"]
    with tarfile.open(path, "r:gz") as tar:
        member = tar.extractfile("pai_machine_spec.csv")
        assert member is not None
        types = {line.split(",")[1] for line in member.read().decode().splitlines()}
    assert types == {"CPU", *schema.GPU_TYPES}


def test_row_counts_scale_with_the_release(db: duckdb.DuckDBPyConnection) -> None:
    counts = {t: _one(db, f"SELECT count(*) FROM {_short(t)}") / SCALE for t in schema.TABLES}
    assert counts["pai_job_table"] == pytest.approx(1.26e6, rel=0.01)
    assert 1.26e6 <= counts["pai_task_table"] <= 1.4e6
    assert counts["pai_instance_table"] == pytest.approx(7.5e6, rel=0.15)
    assert counts["pai_sensor_table"] == pytest.approx(3.0e6, rel=0.15)
    assert counts["pai_machine_metric"] == pytest.approx(3.0e6, rel=0.15)
    assert counts["pai_group_tag_table"] == pytest.approx(1.0e6, rel=0.05)
    assert counts["pai_machine_spec"] == pytest.approx(1897, rel=0.05)


def test_task_status_mix(db: duckdb.DuckDBPyConnection) -> None:
    shares = dict(db.execute(
        "SELECT status, count(*) / sum(count(*)) OVER () FROM task GROUP BY 1").fetchall())
    assert shares["Terminated"] == pytest.approx(0.70, abs=0.025)
    assert shares["Failed"] == pytest.approx(0.20, abs=0.025)
    assert shares["Running"] == pytest.approx(0.09, abs=0.015)
    assert 0.001 < shares["Waiting"] < 0.008


def test_missing_times_only_on_running_and_waiting_rows(db: duckdb.DuckDBPyConnection) -> None:
    for table in ("job", "task", "instance"):
        bad = _one(db, f"""SELECT count(*) FROM {table}
            WHERE (coalesce(end_time, 0) = 0 AND status NOT IN ('Running', 'Waiting'))
               OR (coalesce(start_time, 0) = 0 AND status <> 'Waiting')""")
        assert bad == 0, table
        # Running rows mix both encodings of a missing end: 0 and empty.
        zero, empty = _one(db, f"""SELECT count(*) FILTER (WHERE end_time = 0),
            count(*) FILTER (WHERE end_time IS NULL) FROM {table} WHERE status = 'Running'""")
        assert zero > 0 and empty > 0, table
    for table in ("task", "instance"):
        started = _one(db, f"SELECT count(*) FROM {table} WHERE status = 'Waiting' AND start_time > 0")
        assert started == 0
    assert _one(db, "SELECT count(*) FROM job WHERE coalesce(start_time, 0) = 0") == 0
    unplaced = dict(db.execute(
        "SELECT status, count(*) FROM instance WHERE machine IS NULL GROUP BY 1").fetchall())
    assert set(unplaced) == {"Running", "Waiting"}


def test_gpu_requests(db: duckdb.DuckDBPyConnection) -> None:
    empty = _one(db, "SELECT avg((plan_gpu IS NULL)::INT) FROM task")
    assert empty == pytest.approx(0.18, abs=0.02)
    assert _one(db, "SELECT count(*) FROM task WHERE (plan_gpu IS NULL) <> (gpu_type IS NULL)") == 0
    median, mean = _one(db, """SELECT median(inst_num * plan_gpu / 100), avg(inst_num * plan_gpu / 100)
                               FROM task WHERE plan_gpu IS NOT NULL""")
    assert median == 0.5
    assert mean == pytest.approx(0.68, rel=0.15)
    top = [v for v, in db.execute("""SELECT plan_gpu FROM task WHERE plan_gpu IS NOT NULL
                                     GROUP BY 1 ORDER BY count(*) DESC LIMIT 6""").fetchall()]
    assert set(top[:4]) == {100.0, 50.0, 25.0, 10.0}
    types = dict(db.execute("SELECT gpu_type, count(*) FROM task GROUP BY 1").fetchall())
    assert types["MISC"] > types["P100"] > types["V100"]  # weighted by GPU capacity


def test_runtime_and_wait_are_heavy_tailed(db: duckdb.DuckDBPyConnection) -> None:
    median_run, mean_run = _one(db, """SELECT median(end_time - start_time), avg(end_time - start_time)
        FROM task WHERE status IN ('Terminated', 'Failed')""")
    assert median_run == pytest.approx(480, rel=0.2)
    assert mean_run == pytest.approx(4800, rel=0.35)
    # wait = first instance start - task start
    median_wait, mean_wait = _one(db, """SELECT median(w), avg(w) FROM (
        SELECT min(i.start_time) - any_value(t.start_time) AS w FROM task t
        JOIN instance i USING (job_name, task_name) WHERE t.start_time > 0 AND i.start_time > 0
        GROUP BY job_name, task_name)""")
    assert 5 <= median_wait <= 15
    assert mean_wait == pytest.approx(400, rel=0.4)


def test_recurring_jobs_run_about_as_long_as_their_group(db: duckdb.DuckDBPyConnection) -> None:
    """Log runtime (completed tasks) spreads with sigma ~2.17 over all tasks, but far less within a
    recurring group, which is what lets a job's history predict it."""
    db.execute("""CREATE OR REPLACE TEMP TABLE run AS
        SELECT g."group", g."user", ln(t.end_time - t.start_time) AS log_run
        FROM task t JOIN job j USING (job_name) LEFT JOIN group_tag g USING (inst_id)
        WHERE t.status = 'Terminated' AND t.end_time > t.start_time""")
    overall = _one(db, "SELECT stddev_samp(log_run) FROM run")
    within_group = _one(db, """SELECT sqrt(sum(d * d) / (count(*) - count(DISTINCT "group"))) FROM (
        SELECT "group", log_run - avg(log_run) OVER (PARTITION BY "group") AS d FROM run
        WHERE "group" IN (SELECT "group" FROM run GROUP BY 1 HAVING count(*) > 1))""")
    within_user = _one(db, """SELECT sqrt(sum(d * d) / (count(*) - count(DISTINCT "user"))) FROM (
        SELECT "user", log_run - avg(log_run) OVER (PARTITION BY "user") AS d FROM run
        WHERE "user" IS NOT NULL)""")
    assert overall == pytest.approx(2.17, rel=0.15)
    assert within_group < 1.0  # about the per-task sigma, 0.7, plus the wait before the start
    assert 1.5 < within_user < overall  # a user's jobs vary less than all jobs, but far more than a group's


def _submissions_local(db: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    seconds = pl.Series("s", [s for s, in db.execute("SELECT start_time FROM job").fetchall()])
    local = pl.from_epoch(seconds.cast(pl.Int64), time_unit="s").dt.replace_time_zone("UTC") \
        .dt.convert_time_zone(schema.SOURCE_TZ)
    return pl.DataFrame({"hour": local.dt.hour(), "date": local.dt.date(),
                         "weekday": local.dt.weekday()})  # Monday=1 .. Sunday=7


def test_submissions_follow_the_day_in_shanghai(db: duckdb.DuckDBPyConnection) -> None:
    local = _submissions_local(db)
    day = local.filter(pl.col("hour").is_between(10, 21)).height / local.height
    night = local.filter(pl.col("hour") < 7).height / local.height
    assert 0.65 < day < 0.82  # 12 of 24 hours carry ~3/4 of the submissions
    assert night < 0.12
    span = db.execute("SELECT (max(start_time) - min(start_time)) / 86400, min(start_time) FROM job").fetchone()
    assert span is not None and 60 <= span[0] <= 63 and 1.0e6 <= span[1] <= 7.0e6


def test_weekends_are_lighter(db: duckdb.DuckDBPyConnection) -> None:
    per_day = _submissions_local(db).group_by("date", "weekday").len()
    weekend = per_day.filter(pl.col("weekday") >= 6)["len"].mean()
    weekday = per_day.filter(pl.col("weekday") <= 5)["len"].mean()
    assert 0.45 < weekend / weekday < 0.8  # type: ignore[operator]


def test_users_and_groups(db: duckdb.DuckDBPyConnection) -> None:
    users, top_share = _one(db, """SELECT count(*), max(n) / sum(n)
        FROM (SELECT "user", count(*) n FROM job GROUP BY 1)""")
    assert users >= 150 and top_share > 0.05  # Zipf-like: one user far above the mean 1/users
    tagged = _one(db, "SELECT count(*) FROM group_tag") / _one(db, "SELECT count(*) FROM job")
    assert tagged == pytest.approx(0.80, abs=0.03)
    recurring = _one(db, """SELECT avg((n > 1)::INT) FROM
        (SELECT count(*) OVER (PARTITION BY "group") n FROM group_tag)""")
    assert recurring == pytest.approx(0.65, abs=0.05)
    one_user_per_group = _one(db, """SELECT max(u) FROM
        (SELECT count(DISTINCT "user") u FROM group_tag GROUP BY "group")""")
    assert one_user_per_group == 1
    workload = _one(db, "SELECT avg((workload IS NOT NULL)::INT) FROM group_tag")
    assert workload == pytest.approx(0.09, abs=0.04)
    spec_mismatch = _one(db, """SELECT count(*) FROM group_tag g JOIN job j USING (inst_id)
        WHERE g.gpu_type_spec IS NOT NULL AND g.gpu_type_spec NOT IN
              (SELECT gpu_type FROM task t WHERE t.job_name = j.job_name AND gpu_type IS NOT NULL)""")
    assert spec_mismatch == 0


def test_sensor_usage(db: duckdb.DuckDBPyConnection) -> None:
    median, mean, above_100 = _one(db, """SELECT median(gpu_wrk_util), avg(gpu_wrk_util),
        avg((gpu_wrk_util > 100)::INT) FROM sensor WHERE gpu_wrk_util IS NOT NULL""")
    assert 0.8 <= median <= 2.5
    assert mean == pytest.approx(10, rel=0.35)
    assert 0 < above_100 < 0.05
    below_request = _one(db, """SELECT avg((used < asked)::INT) FROM (
        SELECT sum(s.gpu_wrk_util) used, sum(t.plan_gpu) asked FROM sensor s
        JOIN task t USING (job_name, task_name) WHERE t.plan_gpu IS NOT NULL
        GROUP BY job_name, task_name)""")
    assert below_request == pytest.approx(0.98, abs=0.015)
    over_device = _one(db, """SELECT count(*) FROM sensor s JOIN machine_spec m USING (machine)
        WHERE max_gpu_wrk_mem > CASE m.gpu_type WHEN 'V100M32' THEN 32 WHEN 'MISC' THEN 24 ELSE 16 END
              * greatest(1, (SELECT max(ceil(plan_gpu / 100)) FROM task t
                             WHERE t.job_name = s.job_name AND t.task_name = s.task_name))""")
    assert over_device > 0  # the known oddity: GPU memory above device capacity
    bad = _one(db, """SELECT count(*) FROM sensor WHERE max_mem < avg_mem
        OR max_gpu_wrk_mem < avg_gpu_wrk_mem OR cpu_usage < 0 OR read < 0 OR write_count < 0""")
    assert bad == 0


def test_machine_metrics(db: duckdb.DuckDBPyConnection) -> None:
    low, high, workers, cpu_gpu = _one(db, """SELECT min(machine_gpu), max(machine_gpu),
        min(machine_num_worker),
        (SELECT count(machine_gpu) FROM machine_metric JOIN machine_spec USING (machine)
         WHERE cap_gpu = 0) FROM machine_metric""")
    assert low >= 0 and high <= 120 and workers >= 1 and cpu_gpu == 0


def test_generated_values_stay_within_the_accepted_ranges() -> None:
    """The long tails of the generator are held to what ingest accepts (large scales reach them)."""
    import polars as pl

    from ddlx.traces.pai import generator, schema

    high = schema.RANGES["pai_sensor_table"]["cpu_usage"].high
    frame = pl.DataFrame({"cpu_usage": [12.5, high + 1569.21, -3.0], "gpu_wrk_util": [1.0, 2.0, None],
                          "worker_name": ["a", "b", "c"]})
    held = generator._within_ranges(frame, "pai_sensor_table")
    assert held["cpu_usage"].to_list() == [12.5, high, 0.0]
    assert held["gpu_wrk_util"].to_list() == [1.0, 2.0, None] and held["worker_name"].to_list() == ["a", "b", "c"]
