"""Tests of ddlx.traces.helios.generator: a synthetic Helios release in the official format.

Every figure is recomputed here from the written files (the csv module for formats, polars and
DuckDB for aggregates), never taken from the generator. Expected values come from the Helios
section of TRACES.md and from the real files in shared/traces/helios (the per-cluster summary
CSV and the real Venus/Earth cluster_gpu_number.csv), read here; tolerances allow for the
sampling noise of a small release (scale 0.01, about 34,000 jobs).
"""

from __future__ import annotations

import csv
import io
import math
import re
import zipfile
from datetime import datetime
from pathlib import Path

import duckdb
import polars as pl
import pytest

from ddlx.traces.helios.generator import generate as generate_helios
from tests.conftest import SHARED_TRACES, needs_shared_traces, real_file

SCALE = 0.01
SEED = 5
CLUSTERS = ["Earth", "Saturn", "Uranus", "Venus"]
LOG_HEADER = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"
STATES = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "SUSPENDED"}
FAILED_STATES = ["FAILED", "TIMEOUT", "NODE_FAIL"]
TIME = re.compile(r"^2020-(0[4-9])-\d\d \d\d:\d\d:\d\d$")
HELIOS = SHARED_TRACES / "helios"
SUMMARY = HELIOS / "helios_cluster_summary.csv"


# ------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """One small packed release and the progress messages it printed."""
    out = tmp_path_factory.mktemp("helios")
    messages: list[str] = []
    paths = generate_helios(out, scale=SCALE, seed=SEED, progress=messages.append)
    assert paths == [out / "data.zip"]
    return out, messages


@pytest.fixture(scope="module")
def members(release: tuple[Path, list[str]]) -> dict[str, bytes]:
    """Archive member name -> bytes."""
    with zipfile.ZipFile(release[0] / "data.zip") as archive:
        return {name: archive.read(name) for name in archive.namelist()}


@pytest.fixture(scope="module")
def logs(members: dict[str, bytes]) -> dict[str, pl.DataFrame]:
    """cluster_log.csv of each cluster, parsed by polars with an explicit schema."""
    schema = {"job_id": pl.Int64, "user": pl.String, "vc": pl.String, "gpu_num": pl.Int64,
              "cpu_num": pl.Int64, "node_num": pl.Int64, "state": pl.String, "submit_time": pl.String,
              "start_time": pl.String, "end_time": pl.String, "duration": pl.Int64, "queue": pl.Int64}
    frames = {}
    for cluster in CLUSTERS:
        frame = pl.read_csv(members[f"data/{cluster}/cluster_log.csv"], schema=schema)
        frames[cluster] = frame.with_columns(
            pl.col(c).str.to_datetime("%Y-%m-%d %H:%M:%S") for c in ("submit_time", "start_time", "end_time"))
    return frames


@pytest.fixture(scope="module")
def gpu_numbers(members: dict[str, bytes]) -> dict[str, pl.DataFrame]:
    """cluster_gpu_number.csv of each cluster."""
    return {c: pl.read_csv(members[f"data/{c}/cluster_gpu_number.csv"], try_parse_dates=True) for c in CLUSTERS}


@pytest.fixture(scope="module")
def summary() -> dict[str, dict[str, float]]:
    """The real per-cluster summary (helios_cluster_summary.csv), by cluster id."""
    with open(SUMMARY, newline="") as handle:
        return {row["id"]: {k: float(v) for k, v in row.items() if k != "id"} for row in csv.DictReader(handle)}


def _rows(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("ascii"))))


def _tolerance(share: float, n: int) -> float:
    """Four binomial standard errors plus the summary's rounding (3 decimals)."""
    return 4 * math.sqrt(max(share * (1 - share), 1e-4) / n) + 0.002


# ------------------------------------------------------------------------------- layout


def test_one_zip_with_the_release_layout_and_nothing_else(release: tuple[Path, list[str]]) -> None:
    out, messages = release
    assert sorted(p.name for p in out.iterdir()) == ["data.zip"]  # no loose or temp files
    with zipfile.ZipFile(out / "data.zip") as archive:
        infos = archive.infolist()
        assert archive.testzip() is None
    expected = [f"data/{c}/{f}" for c in CLUSTERS for f in ("cluster_gpu_number.csv", "cluster_log.csv")]
    assert sorted(i.filename for i in infos) == expected
    assert len({i.date_time for i in infos}) == 1  # one fixed timestamp for every entry
    assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in infos)
    assert len(messages) == 4 and all(c in m for c, m in zip(CLUSTERS, messages))


def test_unpacked_layout_holds_the_same_files(members: dict[str, bytes], tmp_path: Path) -> None:
    paths = generate_helios(tmp_path, scale=SCALE, seed=SEED, pack=False)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in paths) == sorted(members)
    assert not (tmp_path / "data.zip").exists()
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert written == sorted(members)  # no temp files left
    for path in paths:
        assert path.read_bytes() == members[path.relative_to(tmp_path).as_posix()]


# ------------------------------------------------------------------------------- formats


def test_cluster_log_text_format(members: dict[str, bytes]) -> None:
    patterns = {
        "job_id": r"^[1-9]\d*$", "user": r"^u[A-Za-z0-9]{4}$", "vc": r"^vc[A-Za-z0-9]{3}$",
        "gpu_num": r"^\d+$", "cpu_num": r"^[1-9]\d*$", "node_num": r"^[1-9]\d*$",
        "duration": r"^\d+$", "queue": r"^\d+$",  # whole seconds, written as integers
    }
    for cluster in CLUSTERS:
        data = members[f"data/{cluster}/cluster_log.csv"]
        assert data.decode("ascii").splitlines()[0] == LOG_HEADER
        assert data.endswith(b"\n") and b"\r" not in data and b'"' not in data
        rows = _rows(data)
        header, body = rows[0], rows[1:]
        assert len(body) > 0 and all(len(r) == len(header) for r in body)
        columns = {name: [r[i] for r in body] for i, name in enumerate(header)}
        for name, pattern in patterns.items():
            assert all(re.match(pattern, v) for v in columns[name]), (cluster, name)
        for name in ("submit_time", "start_time", "end_time"):
            assert all(TIME.match(v) for v in columns[name]), (cluster, name)
        assert set(columns["state"]) <= STATES


def test_durations_and_queues_match_the_times(members: dict[str, bytes]) -> None:
    first, last = datetime(2020, 4, 1), datetime(2020, 10, 1)
    for cluster in CLUSTERS:
        for row in _rows(members[f"data/{cluster}/cluster_log.csv"])[1:]:
            submit, start, end = (datetime.strptime(v, "%Y-%m-%d %H:%M:%S") for v in row[7:10])
            assert int(row[10]) == (end - start).total_seconds(), (cluster, row)
            assert int(row[11]) == (start - submit).total_seconds(), (cluster, row)
            assert first <= submit <= start <= end < last, (cluster, row)


def test_job_ids_are_unique_and_follow_submission(logs: dict[str, pl.DataFrame]) -> None:
    for cluster, log in logs.items():
        assert log["job_id"].n_unique() == log.height, cluster
        by_id = log.sort("job_id")
        assert by_id["submit_time"].is_sorted(), cluster


def test_gpu_and_cpu_requests_are_consistent(logs: dict[str, pl.DataFrame]) -> None:
    for cluster, log in logs.items():
        bad = log.filter(
            (pl.col("gpu_num") > 0) & (pl.col("node_num") < (pl.col("gpu_num") + 7) // 8)
            | (pl.col("node_num") > pl.col("gpu_num").clip(lower_bound=1) * 64)
            | (pl.col("cpu_num") < pl.col("node_num")))
        assert bad.height == 0, cluster
        cpu_only = log.filter(pl.col("gpu_num") == 0)
        assert cpu_only.height > 0 and cpu_only["cpu_num"].min() >= 1  # CPU-only jobs: gpu_num 0


def test_jobs_cancelled_while_pending_start_and_end_at_the_cancel(logs: dict[str, pl.DataFrame]) -> None:
    pending = pl.concat(logs.values()).filter(
        (pl.col("state") == "CANCELLED") & (pl.col("start_time") == pl.col("end_time")) & (pl.col("queue") > 0))
    assert pending.height > 0
    assert (pending["duration"] == 0).all()


# ------------------------------------------------------------------------------- calibration


@needs_shared_traces
def test_job_counts_and_gpu_share_per_cluster(logs: dict[str, pl.DataFrame],
                                              summary: dict[str, dict[str, float]]) -> None:
    for cluster, log in logs.items():
        real = summary[cluster]
        assert log.height == pytest.approx(real["job_num"] * SCALE, abs=1), cluster
        gpu_share = log.filter(pl.col("gpu_num") > 0).height / log.height
        assert gpu_share == pytest.approx(real["gpu_job_num"] / real["job_num"], abs=0.005), cluster
    total = sum(log.height for log in logs.values())
    assert total == pytest.approx(summary["total"]["job_num"] * SCALE, abs=4)


@needs_shared_traces
@pytest.mark.parametrize("kind", ["gpu", "cpu"])
def test_state_mix_per_cluster(logs: dict[str, pl.DataFrame], summary: dict[str, dict[str, float]],
                               kind: str) -> None:
    for cluster, log in logs.items():
        jobs = log.filter((pl.col("gpu_num") > 0) if kind == "gpu" else (pl.col("gpu_num") == 0))
        n = jobs.height
        measured = {
            "complete": jobs.filter(pl.col("state") == "COMPLETED").height / n,
            "cancel": jobs.filter(pl.col("state") == "CANCELLED").height / n,
            "fail": jobs.filter(pl.col("state").is_in(FAILED_STATES)).height / n,
        }
        for name, share in measured.items():
            expected = summary[cluster][f"{name}_rate_{kind}"]
            assert share == pytest.approx(expected, abs=_tolerance(expected, n)), (cluster, kind, name)


def test_gpu_state_mix_of_the_whole_trace(logs: dict[str, pl.DataFrame]) -> None:
    # TRACES.md: GPU jobs 62 % completed, 22 % cancelled, 16 % failed.
    gpu = pl.concat(logs.values()).filter(pl.col("gpu_num") > 0)
    shares = {s: gpu.filter(pl.col("state").is_in(s)).height / gpu.height
              for s in (("COMPLETED",), ("CANCELLED",), tuple(FAILED_STATES))}
    assert shares[("COMPLETED",)] == pytest.approx(0.62, abs=0.015)
    assert shares[("CANCELLED",)] == pytest.approx(0.22, abs=0.015)
    assert shares[tuple(FAILED_STATES)] == pytest.approx(0.16, abs=0.015)


def test_rare_states(logs: dict[str, pl.DataFrame]) -> None:
    suspended = {c: log.filter(pl.col("state") == "SUSPENDED").height for c, log in logs.items()}
    assert suspended == {"Earth": 0, "Saturn": 0, "Uranus": 1, "Venus": 0}
    counts = dict(pl.concat(logs.values())["state"].value_counts().iter_rows())
    failed = sum(counts.get(s, 0) for s in FAILED_STATES)
    assert 0 < counts["TIMEOUT"] < 0.1 * failed and 0 < counts["NODE_FAIL"] < 0.05 * failed  # "very rare"


@needs_shared_traces
def test_run_times_queues_and_gpu_requests(logs: dict[str, pl.DataFrame],
                                           summary: dict[str, dict[str, float]]) -> None:
    for cluster, log in logs.items():
        real = summary[cluster]
        gpu = log.filter(pl.col("gpu_num") > 0)
        cpu = log.filter(pl.col("gpu_num") == 0)
        for kind, jobs in (("gpu", gpu), ("cpu", cpu)):
            assert jobs["queue"].median() == real[f"med_que_time_{kind}"] == 0, (cluster, kind)
            median = jobs["duration"].median()
            assert median == pytest.approx(real[f"med_run_time_{kind}"], rel=0.3, abs=2), (cluster, kind)
        assert gpu["gpu_num"].median() == real["med_gpu_num"], cluster
        # heavy tails: means of a small release are noisy, so only the order of magnitude is checked
        assert gpu["gpu_num"].mean() == pytest.approx(real["avg_gpu_num"], rel=0.4), cluster
        assert 0.5 < gpu["duration"].mean() / real["avg_run_time_gpu"] < 2, cluster  # type: ignore[operator]
        assert 0.5 < gpu["queue"].mean() / real["avg_que_time_gpu"] < 2, cluster  # type: ignore[operator]


# ------------------------------------------------------------------------------- VC GPU counts


def test_gpu_number_rows_and_totals(members: dict[str, bytes]) -> None:
    days = [f"{d:%Y-%m-%d}" for d in pl.date_range(datetime(2020, 4, 1), datetime(2020, 9, 28), eager=True)]
    for cluster in CLUSTERS:
        rows = _rows(members[f"data/{cluster}/cluster_gpu_number.csv"])
        header, body = rows[0], rows[1:]
        assert header[0] == "date" and header[-1] == "total"
        assert all(re.match(r"^vc[A-Za-z0-9]{3}$", name) for name in header[1:-1])
        assert len(set(header)) == len(header)
        assert [r[0] for r in body] == days
        for row in body:
            gpus = [int(v) for v in row[1:-1]]
            assert all(g >= 0 and g % 8 == 0 for g in gpus)  # whole 8-GPU nodes, as in the real files
            assert int(row[-1]) == sum(gpus) > 0


@needs_shared_traces
def test_vc_names_and_sizes_are_like_the_real_clusters(logs: dict[str, pl.DataFrame],
                                                       gpu_numbers: dict[str, pl.DataFrame],
                                                       summary: dict[str, dict[str, float]]) -> None:
    for cluster in CLUSTERS:
        vcs = set(gpu_numbers[cluster].columns[1:-1])
        assert set(logs[cluster]["vc"].unique()) <= vcs, cluster
        # mean daily total = the summary's gpu_num (as in the real Venus and Earth files)
        assert gpu_numbers[cluster]["total"].mean() == pytest.approx(summary[cluster]["gpu_num"], rel=0.03)


def test_vc_columns_are_as_many_as_the_real_files_and_not_theirs(gpu_numbers: dict[str, pl.DataFrame]) -> None:
    """Venus and Earth have the real files' number of VC columns, under other names (the real
    headers, from the full files or their excerpts)."""
    for cluster in ("Venus", "Earth"):
        real = pl.read_csv(real_file(f"helios/{cluster}/cluster_gpu_number.csv"))
        assert real.columns[0] == "date" and real.columns[-1] == "total"
        assert len(gpu_numbers[cluster].columns) == len(real.columns), cluster
        assert not set(gpu_numbers[cluster].columns[1:-1]) & set(real.columns[1:-1]), "real VC names copied"


def test_gpu_jobs_fit_their_vc_on_the_submit_day(logs: dict[str, pl.DataFrame],
                                                 gpu_numbers: dict[str, pl.DataFrame]) -> None:
    con = duckdb.connect()
    for cluster in CLUSTERS:
        sizes = gpu_numbers[cluster].drop("total").unpivot(index="date", variable_name="vc", value_name="gpus")
        log = logs[cluster].select("vc", "gpu_num", pl.col("submit_time").dt.date().alias("date"))
        con.register("sizes", sizes)
        con.register("log", log)
        [(too_big, gpu_jobs)] = con.execute("""
            SELECT count(*) FILTER (WHERE s.gpus IS NULL OR l.gpu_num > s.gpus), count(*)
            FROM log l LEFT JOIN sizes s USING (date, vc) WHERE l.gpu_num > 0""").fetchall()
        assert gpu_jobs > 0 and too_big <= 0.002 * gpu_jobs, cluster  # sessions may cross midnight


def test_vc_sizes_do_not_depend_on_scale(members: dict[str, bytes], tmp_path: Path) -> None:
    paths = generate_helios(tmp_path, scale=SCALE / 5, seed=SEED, pack=False)
    for path in paths:
        name = path.relative_to(tmp_path).as_posix()
        if name.endswith("cluster_gpu_number.csv"):
            assert path.read_bytes() == members[name], name


# ------------------------------------------------------------------------------- determinism


def test_same_seed_gives_identical_bytes_and_another_seed_differs(
        release: tuple[Path, list[str]], tmp_path: Path) -> None:
    original = (release[0] / "data.zip").read_bytes()
    again = generate_helios(tmp_path / "again", scale=SCALE, seed=SEED)
    other = generate_helios(tmp_path / "other", scale=SCALE, seed=SEED + 1)
    assert again[0].read_bytes() == original
    assert other[0].read_bytes() != original


def test_bad_arguments_raise_value_error(tmp_path: Path) -> None:
    for scale in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="scale"):
            generate_helios(tmp_path / "out", scale=scale)
    for seed in (-1, 1.5):
        with pytest.raises(ValueError, match="seed"):
            generate_helios(tmp_path / "out", scale=0.001, seed=seed)  # type: ignore[arg-type]
    assert not (tmp_path / "out").exists()
