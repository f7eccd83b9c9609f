"""Ingest of the hand-built PAI release: stored tables, canonical jobs, validation report."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl
import pytest

from ddlx.analysis.runner import run_analysis
from ddlx.datasets import catalog
from ddlx.datasets.ingest import INGEST_FORMAT, ingest
from ddlx.errors import InputError
from ddlx.traces.pai import reader
from tests.conftest import write_pai_release


@pytest.fixture(params=["one query", "three buckets"])
def job_buckets(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test using it runs twice: the canonical jobs built in one query, then in three buckets
    of the job name (`build_jobs_in_buckets`, which large releases take), whatever the job count."""
    if request.param == "three buckets":
        built = []
        in_buckets = reader.build_jobs_in_buckets
        monkeypatch.setattr(reader, "jobs_buckets", lambda jobs: 3)
        monkeypatch.setattr(reader, "build_jobs_in_buckets",
                            lambda *args: built.append(args[2]) or in_buckets(*args))
        yield request.param
        assert built == [3]
    else:
        yield request.param


def _jobs(home: Path) -> dict[str, dict]:
    rows = catalog.query(home, "SELECT * FROM jobs ORDER BY job_id").to_dicts()
    return {r["job_id"]: r for r in rows}


def test_rollup_matches_hand_derived_jobs(pai_release: Path, home: Path, job_buckets: str) -> None:
    result = ingest("pai", pai_release, home)
    assert result.tables["pai_job_table"] == 5
    assert result.tables["pai_jobs"] == 5
    jobs = _jobs(home)
    j1, j2, j3, j4, j5 = (jobs[f"j{i}"] for i in range(1, 6))
    # j1: 2 instances x 50 % of a GPU, 2 x 400 % CPU, 2 x 10 GB; queue 1010-1000, run 5000-1010.
    assert (j1["num_gpus"], j1["num_cpus"], j1["mem_gb"]) == (2 * 50 / 100, 2 * 400 / 100, 2 * 10.0)
    assert (j1["queue_s"], j1["run_s"]) == (1010 - 1000, 5000 - 1010)
    assert (j1["num_instances"], j1["num_tasks"], j1["gpu_type"]) == (2, 1, "T4")
    assert j1["fractional_gpu"] is True and j1["state"] == "completed" and j1["raw_state"] == "Terminated"
    assert (j1["job_group"], j1["workload"], j1["user"]) == ("g1", "bert", "u1")
    # j2: ps (1 x 600 % CPU, no GPU) + worker (4 x 100 % GPU, 4 x 200 % CPU, 4 x 8 GB).
    assert (j2["num_gpus"], j2["num_cpus"], j2["mem_gb"]) == (4.0, 6 + 4 * 2.0, 5 + 4 * 8.0)
    assert (j2["queue_s"], j2["run_s"], j2["num_tasks"], j2["num_instances"]) == (100, 500, 2, 5)
    assert (j2["gpu_type"], j2["fractional_gpu"], j2["state"]) == ("V100", False, "failed")
    # j3 still running: end time 0 means missing, so no run time.
    assert (j3["num_gpus"], j3["queue_s"], j3["run_s"], j3["end_time"]) == (0.25, 5, None, None)
    assert (j3["state"], j3["fractional_gpu"]) == ("running", True)
    # j4 never started.
    assert (j4["start_time"], j4["queue_s"], j4["state"]) == (None, None, "pending")
    # j5 CPU only.
    assert (j5["num_gpus"], j5["gpu_type"], j5["queue_s"], j5["run_s"]) == (0, None, 0, 60)


def test_a_job_with_several_group_tag_rows_takes_the_most_frequent_group_and_workload(tmp_path: Path,
                                                                                      job_buckets: str) -> None:
    """inst2 has three tag rows (group g2, g2, g7; workload w3 twice): the job takes g2 and w3;
    a job with one row takes that row's values, a job with none takes none."""
    tags = b"inst1,u1,,g1,bert\ninst2,u1,V100,g2,w1\ninst2,u1,V100,g7,w3\ninst2,u1,V100,g2,w3\ninst9,u9,,g9,\n"
    release = write_pai_release(tmp_path / "release", overrides={"pai_group_tag_table": tags})
    assert ingest("pai", release, tmp_path / "home").tables["pai_jobs"] == 5  # one row per job
    jobs = _jobs(tmp_path / "home")
    assert (jobs["j2"]["job_group"], jobs["j2"]["workload"]) == ("g2", "w3")
    assert (jobs["j1"]["job_group"], jobs["j1"]["workload"]) == ("g1", "bert")
    assert (jobs["j3"]["job_group"], jobs["j3"]["workload"]) == (None, None)


def test_times_are_utc_and_local_hour_reads_in_shanghai(pai_release: Path, home: Path) -> None:
    ingest("pai", pai_release, home)
    row = catalog.query(home, """
        SELECT epoch(submit_time) AS epoch_s, source_tz,
               hour(submit_time AT TIME ZONE source_tz) AS local_hour
        FROM jobs WHERE job_id = 'j5'""").to_dicts()[0]
    assert row["epoch_s"] == 100000
    assert row["source_tz"] == "Asia/Shanghai"
    # 100000 s after the epoch is 03:46:40 UTC, i.e. 11:46:40 in UTC+8.
    assert row["local_hour"] == (100000 // 3600 + 8) % 24


def test_raw_tables_keep_official_names_and_add_unit_columns(pai_release: Path, home: Path) -> None:
    ingest("pai", pai_release, home)
    task = catalog.query(home, "SELECT * FROM pai_task_table WHERE job_name = 'j1'").to_dicts()[0]
    assert (task["plan_gpu"], task["plan_gpus"], task["task_gpus"], task["plan_cpu_cores"]) == (50.0, 0.5, 1.0, 4.0)
    zero = catalog.query(home, "SELECT start_time, start_ts FROM pai_task_table WHERE job_name = 'j4'").to_dicts()[0]
    assert zero == {"start_time": None, "start_ts": None}
    sensor = catalog.query(home, "SELECT gpus_used FROM pai_sensor_table WHERE worker_name = 'w1a'").item()
    assert sensor == 1.5


def test_validation_report_counts(pai_release: Path, home: Path) -> None:
    ingest("pai", pai_release, home)
    manifest = catalog.read_registrations(home)["pai"].manifest
    found = {(c["table"], c["check"]): c["rows"] for c in manifest["validation"]}
    expected = {
        ("pai_job_table", "missing end_time (empty or 0)"): 2,  # j3 end 0.0, j4 empty
        ("pai_job_table", "still running at trace end (status Running)"): 1,
        ("pai_job_table", "waiting at trace end (status Waiting)"): 1,
        ("pai_task_table", "missing start_time (empty or 0)"): 1,  # j4 start 0.0
        ("pai_task_table", "missing end_time (empty or 0)"): 2,
        ("pai_instance_table", "missing end_time (empty or 0)"): 1,
        ("pai_instance_table", "negative duration (end before start)"): 1,  # jX 10 -> 5
        ("pai_instance_table", "orphan: instance without task (job_name, task_name)"): 1,
        ("pai_task_table", "orphan: task without job (job_name)"): 0,
        ("pai_group_tag_table", "orphan: group tag without job (inst_id)"): 1,  # inst9
        ("pai_sensor_table", "gpu_wrk_util above 100 % of one GPU"): 1,  # 150
        ("pai_sensor_table", "max GPU memory above device capacity (P100/T4/V100 16 GB, V100M32 32 GB)"): 1,
        ("pai_machine_metric", "machine_gpu above 100 %"): 1,
        ("pai_jobs", "jobs that never started (no instance start)"): 1,
    }
    for key, count in expected.items():
        assert found[key] == count, key
    assert manifest["rows"]["pai_instance_table"] == 7
    assert all(entry["rejected_rows"] == 0 for entry in manifest["inputs"].values())


def test_extracted_csvs_ingest_like_archives(tmp_path: Path) -> None:
    csvs = write_pai_release(tmp_path / "csv", archives=False)
    ingest("pai", csvs, tmp_path / "h1")
    ingest("pai", write_pai_release(tmp_path / "tgz"), tmp_path / "h2")
    a = catalog.query(tmp_path / "h1", "SELECT * FROM jobs ORDER BY job_id")
    b = catalog.query(tmp_path / "h2", "SELECT * FROM jobs ORDER BY job_id")
    assert a.equals(b)


def test_second_ingest_of_unchanged_input_does_nothing(pai_release: Path, home: Path) -> None:
    first = ingest("pai", pai_release, home)
    second = ingest("pai", pai_release, home)
    assert second.skipped and second.store_dir == first.store_dir
    # A changed input is ingested again, into a new version; the old version is removed.
    os.utime(pai_release / "pai_job_table.tar.gz", ns=(1, 1))
    third = ingest("pai", pai_release, home)
    assert not third.skipped and third.store_dir != first.store_dir
    assert not first.store_dir.exists()


def test_single_table_ingest_keeps_the_others(pai_release: Path, home: Path) -> None:
    ingest("pai", pai_release, home)
    os.utime(pai_release / "pai_machine_spec.tar.gz", ns=(2, 2))
    result = ingest("pai", pai_release, home, tables=["pai_machine_spec"])
    assert result.tables["pai_machine_spec"] == 4
    assert catalog.query(home, "SELECT count(*) AS n FROM jobs").item() == 5
    assert catalog.query(home, "SELECT count(*) AS n FROM pai_sensor_table").item() == 3


def test_catalog_opens_with_plain_duckdb(pai_release: Path, home: Path) -> None:
    ingest("pai", pai_release, home)
    con = duckdb.connect(str(home / "catalog.duckdb"), read_only=True)
    try:
        tables = {r[0] for r in con.sql("SELECT table_name FROM information_schema.tables").fetchall()}
        assert {"jobs", "pai_job_table", "pai_task_table", "pai_instance_table", "pai_sensor_table",
                "pai_group_tag_table", "pai_machine_spec", "pai_machine_metric"} <= tables
        assert con.sql("SELECT sum(num_gpus) FROM jobs").fetchall()[0][0] == pytest.approx(1 + 4 + 0.25 + 1)
    finally:
        con.close()


def test_killed_ingest_leaves_previous_catalog(pai_release: Path, home: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    first = ingest("pai", pai_release, home)
    before = (home / "catalog.duckdb").read_bytes()
    os.utime(pai_release / "pai_job_table.tar.gz", ns=(3, 3))

    def crash(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(catalog, "write_catalog", crash)
    with pytest.raises(KeyboardInterrupt):
        ingest("pai", pai_release, home)
    assert (home / "catalog.duckdb").read_bytes() == before
    assert sorted(p.name for p in first.store_dir.parent.iterdir()) == [first.store_dir.name]
    monkeypatch.undo()
    assert catalog.query(home, "SELECT count(*) FROM jobs").item() == 5


def test_archive_member_names_cannot_escape(tmp_path: Path, home: Path) -> None:
    import io
    import tarfile

    release = write_pai_release(tmp_path / "release")
    data = (release / "pai_job_table.tar.gz").read_bytes()
    rows = tarfile.open(fileobj=io.BytesIO(data)).extractfile("pai_job_table.csv").read()
    with tarfile.open(release / "pai_job_table.tar.gz", "w:gz") as tar:
        for name in ("../escaped.csv", "/tmp/absolute-ddlx-test.csv", "../../pai_job_table.csv"):
            info = tarfile.TarInfo(name)
            info.size = len(rows)
            tar.addfile(info, io.BytesIO(rows))
    with pytest.raises(InputError, match="member name '../escaped.csv' climbs out of the archive"):
        ingest("pai", release, home)
    assert not (tmp_path / "escaped.csv").exists() and not (release.parent / "escaped.csv").exists()
    assert not Path("/tmp/absolute-ddlx-test.csv").exists()
    assert not (tmp_path.parent / "pai_job_table.csv").exists()
    assert not (home / "catalog.duckdb").exists()


def test_summary_numbers_hand_derived(pai_release: Path, home: Path) -> None:
    from ddlx.analysis.runner import run_analysis

    ingest("pai", pai_release, home)
    overview = run_analysis(home, "pai", ["overview"]).module("overview")
    value = {f.name: f.value for f in overview.findings}
    assert value["jobs"] == 5 and value["gpu_jobs"] == 4
    assert value["fractional_gpu_job_share"] == 2 / 4  # j1 and j3 ask for parts of a GPU
    assert value["gpu_hours"] == pytest.approx((1.0 * 3990 + 4 * 500) / 3600)
    # queue delays of started jobs: 0, 5, 10, 100 -> linear-interpolated quantiles
    assert value["queue_delay_p50"] == pytest.approx((5 + 10) / 2)
    assert value["queue_delay_p90"] == pytest.approx(10 + 0.7 * (100 - 10))
    # run times of finished jobs: 60, 500, 3990
    assert value["run_time_p50"] == 500
    assert value["run_time_p90"] == pytest.approx(500 + 0.8 * (3990 - 500))
    states = {r["state"]: r for r in overview.table("state_mix").to_dicts()}
    assert {s: r["jobs"] for s, r in states.items()} == {"completed": 2, "failed": 1, "running": 1, "pending": 1}
    assert states["completed"]["gpu_hours_share"] == pytest.approx(3990 / (3990 + 2000))
    mix = {r["gpu_bucket"]: r["jobs"] for r in overview.table("gpu_request_mix").to_dicts()}
    assert mix == {"0": 1, "(0,1)": 1, "1": 2, "(2,4]": 1}
    assert overview.table("gpu_request_mix")["gpu_bucket"].to_list() == ["0", "(0,1)", "1", "(2,4]"]
    assert not math.isnan(value["queue_delay_p50"])


def test_real_table_over_a_synthetic_ingest_stays_labelled_synthetic(pai_release: Path, home: Path,
                                                                    tmp_path: Path) -> None:
    (pai_release / "SYNTHETIC.json").write_text('{"synthetic": true, "scale": 0.0}')
    assert ingest("pai", pai_release, home).synthetic
    real = write_pai_release(tmp_path / "real")
    result = ingest("pai", real, home, tables=["pai_machine_spec"])
    assert result.synthetic and catalog.read_registrations(home)["pai"].synthetic
    # Re-ingesting every table from unlabelled files makes it real again.
    assert not ingest("pai", real, home).synthetic


def test_a_jobs_gpu_request_is_summed_exactly(tmp_path: Path, home: Path, job_buckets: str) -> None:
    """Ten tasks of one instance asking for 10 % of a GPU ask for exactly 1 GPU: the request is
    the exact sum of inst_num * plan_gpu (whole percents) divided by 100 once, not a sum of tenths
    (0.1 ten times is 0.9999999999999999 in floating point, which falls in the (0,1) bucket)."""
    tasks = [f"jt,t{k},1.0,Terminated,1000.0,2000.0,{k + 1}0.0,1.0,10.0,T4" for k in range(10)]
    release = write_pai_release(tmp_path / "release", overrides={
        "pai_job_table": b"jt,instt,u1,Terminated,1000.0,2000.0\n",
        "pai_task_table": ("\n".join(tasks) + "\n").encode(),
        "pai_instance_table": b"jt,t0,it,wt,instt,Terminated,1000.0,2000.0,m1\n",
    })
    ingest("pai", release, home)
    row = catalog.query(home, "SELECT num_gpus, num_cpus, fractional_gpu FROM jobs WHERE job_id = 'jt'").to_dicts()[0]
    # CPU: the ten tasks ask 10 %, 20 %, ... 100 % of a core: 550 % in all.
    assert row == {"num_gpus": 1.0, "num_cpus": 5.5, "fractional_gpu": True}
    bucket = run_analysis(home, "pai", ["overview"]).module("overview").table("gpu_request_mix")
    assert bucket.filter(pl.col("gpu_bucket") == "1")["jobs"].to_list() == [1]


def test_archives_are_unpacked_ahead_of_loading_but_never_all_at_once(pai_release: Path, home: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables load smallest archive first. The largest archive is unpacked from the start; any other
    only while the table before it loads: the disk never holds the whole unpacked release."""
    from ddlx.datasets.adapter import TraceAdapter
    from ddlx.datasets.ingest import ingest

    seen: dict[str, set[str]] = {}
    load = TraceAdapter.load_table

    def watching(self, con, table, parts, out_path, max_rejected_rows):
        seen[table] = {p.name.split("-", 1)[1] for p in (out_path.parent / "tmp").iterdir()}
        return load(self, con, table, parts, out_path, max_rejected_rows)

    monkeypatch.setattr(TraceAdapter, "load_table", watching)
    ingest("pai", pai_release, home)
    sizes = {p.name.removesuffix(".tar.gz"): p.stat().st_size for p in pai_release.glob("*.tar.gz")}
    order = list(seen)
    assert [sizes[t] for t in order] == sorted(sizes.values()) and len(order) == 7
    largest = order[-1]
    for index, table in enumerate(order):
        later = {f"{t}.csv" for t in order[index + 2:] if t != largest}
        assert f"{table}.csv" in seen[table] and not seen[table] & later, (table, seen[table])
        assert not seen[table] & {f"{t}.csv" for t in order[:index]}  # loaded ones are removed


@pytest.mark.parametrize("archives", [True, False])
def test_a_nul_in_a_text_field_is_refused_from_archives_and_files(tmp_path: Path, archives: bool) -> None:
    """A user name holding a NUL character is refused, naming its line and field, whether the table
    comes from its official archive or from the extracted file (each is searched for NUL bytes as
    it is read, and only a file holding one has its stored text searched)."""
    lines = ["j1,inst1,u1,Terminated,1000.0,5000.0", "j2,inst2,u\x001,Failed,2000.0,2600.0"]
    release = write_pai_release(tmp_path / "release", archives=archives,
                                overrides={"pai_job_table": ("\n".join(lines) + "\n").encode()})
    with pytest.raises(InputError, match=r"pai_job_table.*line 2.*user.*NUL"):
        ingest("pai", release, tmp_path / "home")
    assert not (tmp_path / "home" / "catalog.duckdb").exists()


def test_the_manifest_times_each_step(pai_release: Path, home: Path) -> None:
    """`step_seconds`: every table loaded, the instances per task, the canonical jobs, the views and
    the validation, in the order they ran (smallest archive first), together no longer than the
    whole ingest."""
    ingest("pai", pai_release, home)
    manifest = catalog.read_registrations(home)["pai"].manifest
    steps = manifest["step_seconds"]
    sizes = {p.name.removesuffix(".tar.gz"): p.stat().st_size for p in pai_release.glob("*.tar.gz")}
    loaded = list(steps)[:len(sizes)]
    assert sorted(loaded) == sorted(sizes) and [sizes[t] for t in loaded] == sorted(sizes.values())
    assert list(steps)[len(sizes):] == ["pai_task_instances", "pai_jobs", "views", "validation"]
    assert all(seconds >= 0 for seconds in steps.values())
    assert sum(steps.values()) <= manifest["ingest_seconds"]
    from ddlx.traces.pai.reader import ADAPTER

    assert list(manifest["inputs"]) == list(ADAPTER.tables) == list(manifest["rows"])[:len(sizes)]


@pytest.mark.parametrize("first", ["T4", "P100"])
def test_a_job_whose_tasks_ask_as_many_gpus_takes_the_type_first_in_alphabetical_order(tmp_path: Path,
                                                                                       first: str,
                                                                                       job_buckets: str) -> None:
    """Two tasks of 1 GPU each, one on T4 and one on P100, in either order in the file: P100."""
    other = "P100" if first == "T4" else "T4"
    tasks = [f"jt,a,1.0,Terminated,1000.0,2000.0,100.0,1.0,100.0,{first}",
             f"jt,b,1.0,Terminated,1000.0,2000.0,100.0,1.0,100.0,{other}",
             "jt,c,1.0,Terminated,1000.0,2000.0,100.0,1.0,50.0,MISC"]
    release = write_pai_release(tmp_path / "release", overrides={
        "pai_job_table": b"jt,instt,u1,Terminated,1000.0,2000.0\n",
        "pai_task_table": ("\n".join(tasks) + "\n").encode(),
        "pai_instance_table": b"jt,a,it,wt,instt,Terminated,1000.0,2000.0,m1\n",
    })
    ingest("pai", release, tmp_path / "home")
    assert catalog.query(tmp_path / "home", "SELECT gpu_type FROM jobs WHERE job_id = 'jt'").item() == "P100"


def test_tables_of_an_older_store_format_are_never_kept_beside_new_ones(pai_release: Path, home: Path) -> None:
    """Ingesting one table over a store of an older format would keep the others in their old shape
    or with their old values: refused; every table ingested again is fine."""
    ingest("pai", pai_release, home)
    with duckdb.connect(str(catalog.catalog_path(home))) as con:
        con.execute(f"UPDATE {catalog.REGISTRY_TABLE} SET manifest = replace(manifest, "
                    f"'\"ingest_format\": {INGEST_FORMAT}', '\"ingest_format\": 2') WHERE trace = 'pai'")
    os.utime(pai_release / "pai_sensor_table.tar.gz", ns=(5, 5))
    with pytest.raises(InputError, match=rf"pai_job_table, .* are of store format 2, this ddlx writes {INGEST_FORMAT}; "
                                         r"ingest every table again \(without --table\)"):
        ingest("pai", pai_release, home, tables=["pai_sensor_table"])
    assert not ingest("pai", pai_release, home).skipped
    assert catalog.read_registrations(home)["pai"].manifest["ingest_format"] == INGEST_FORMAT


def _instances_per_task_from_csv(release: Path) -> tuple[dict[tuple[str, str], tuple[int, float | None]], int]:
    """From the released instance CSV, read here with Python's csv module: per (job_name,
    task_name), the rows and the earliest start (0 or empty: missing); and the rows whose task is
    not in the task CSV."""
    import csv
    import io
    import tarfile

    def rows(table: str) -> list[list[str]]:
        with tarfile.open(release / f"{table}.tar.gz") as tar:
            member = tar.extractfile(f"{table}.csv")
            assert member is not None
            return list(csv.reader(io.TextIOWrapper(member, encoding="utf-8")))

    tasks = {(row[0], row[1]) for row in rows("pai_task_table")}
    per_task: dict[tuple[str, str], tuple[int, float | None]] = {}
    orphans = 0
    for row in rows("pai_instance_table"):
        key, start = (row[0], row[1]), (float(row[6]) if row[6] not in ("", "0", "0.0") else None)
        count, first = per_task.get(key, (0, None))
        per_task[key] = (count + 1, start if first is None else (first if start is None else min(first, start)))
        orphans += key not in tasks
    return per_task, orphans


@pytest.mark.parametrize("generated", [False, True])
def test_the_instances_per_task_are_stored_as_the_released_rows_give_them(tmp_path: Path, generated: bool) -> None:
    """`pai_task_instances`: one row per task of the instance table, with its rows and earliest start
    as the released CSV gives them; the orphan check counts the instances of tasks the task table
    lacks, as the CSVs give them."""
    from ddlx.traces.pai.generator import generate

    release = tmp_path / "release"
    if generated:
        generate(release, scale=0.002, seed=5)
    else:
        write_pai_release(release)
    expected, orphans = _instances_per_task_from_csv(release)
    ingest("pai", release, tmp_path / "home")
    stored = catalog.query(tmp_path / "home", "SELECT * FROM pai_task_instances").rows()
    assert {(job, task): (count, first) for job, task, count, first in stored} == expected
    assert len(stored) == len(expected) > 3
    manifest = catalog.read_registrations(tmp_path / "home")["pai"].manifest
    found = {(c["table"], c["check"]): c["rows"] for c in manifest["validation"]}
    assert found[("pai_instance_table", "orphan: instance without task (job_name, task_name)")] == orphans
    assert generated or orphans == 1


def test_large_releases_take_buckets_of_about_two_million_jobs() -> None:
    assert [reader.jobs_buckets(n) for n in (5, 1_260_000, 8_000_000, 8_000_001, 12_600_000)] == [1, 1, 1, 5, 7]


def test_the_jobs_built_in_buckets_are_the_jobs_of_one_query(tmp_path: Path) -> None:
    """On a generated release (some jobs without tasks, instances or tags, tags repeated), the
    canonical jobs built in 2 and in 5 buckets hold the same rows, column for column, as one query,
    and leave no scratch files."""
    from ddlx.datasets.catalog import bound_memory
    from ddlx.traces.pai.generator import generate

    generate(tmp_path / "release", scale=0.002, seed=3)
    home = tmp_path / "home"
    ingest("pai", tmp_path / "release", home)
    store = catalog.read_registrations(home)["pai"].store_dir
    present = {p.stem for p in store.glob("*.parquet")}
    con = duckdb.connect()
    bound_memory(con, tmp_path / "spill")
    one = con.execute(reader.jobs_sql(store, present)).fetchall()
    assert len(one) > 100
    for buckets in (2, 5):
        out, scratch = tmp_path / f"jobs{buckets}.parquet", tmp_path / f"scratch{buckets}"
        scratch.mkdir()
        assert reader.build_jobs_in_buckets(store, present, buckets)(con, out, scratch) == len(one)
        assert sorted(con.execute(f"SELECT * FROM '{out}'").fetchall(), key=repr) == sorted(one, key=repr)
        assert list(scratch.iterdir()) == []
