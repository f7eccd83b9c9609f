"""Tests of ddlx.traces.philly.generator: a synthetic Microsoft Philly trace in the release format.

Every figure is recomputed here from the written files with independent readers (json, csv,
polars, zoneinfo), never taken from the generator. Expected values come from the Philly section
of TRACES.md, the Philly row of acmetrace/cluster_summary.csv and the real (derived) files in
shared/traces/philly; tolerances allow for the sampling noise of a small release (scale 0.01:
about 1,200 jobs on 6 machines).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import tarfile
from collections import Counter, defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import polars as pl
import pytest

from ddlx.traces.philly.generator import _build_machines, _machine_list_text
from ddlx.traces.philly.generator import generate as generate_philly
from tests.conftest import SHARED_TRACES, needs_shared_traces, real_file

SCALE = 0.01
SEED = 7
PACIFIC = ZoneInfo("America/Los_Angeles")
PHILLY = SHARED_TRACES / "philly"
FILES = ("cluster_job_log", "cluster_gpu_util", "cluster_cpu_util", "cluster_mem_util",
         "cluster_machine_list")
GPU_COLUMNS = [f"gpu{k}_util" for k in range(8)]
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
# TRACES.md, Philly: published counts at full size.
JOBS, NO_ATTEMPT_JOBS, NO_START_ATTEMPTS, NO_END_ATTEMPTS = 117_325, 5_236, 136, 6_695


# ------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], list[str]]:
    """One small packed release and the progress messages it gave."""
    messages: list[str] = []
    paths = generate_philly(tmp_path_factory.mktemp("philly"), scale=SCALE, seed=SEED,
                            progress=messages.append)
    return paths, messages


@pytest.fixture(scope="module")
def files(release: tuple[list[Path], list[str]]) -> dict[str, bytes]:
    """The archive members, by file name."""
    (archive,), _ = release
    with tarfile.open(archive, "r:gz") as tar:
        out = {}
        for member in tar.getmembers():
            handle = tar.extractfile(member)
            assert handle is not None
            out[member.name] = handle.read()
    return {name.removeprefix("trace-data/"): data for name, data in out.items()}


@pytest.fixture(scope="module")
def jobs(files: dict[str, bytes]) -> list[dict]:
    """cluster_job_log parsed with the json module."""
    return json.loads(files["cluster_job_log"])


def _read_util(data: bytes, names: list[str]) -> pl.DataFrame:
    """A utilisation log as strings, header checked by the caller ("NA" kept as text)."""
    return pl.read_csv(io.BytesIO(data), has_header=False, skip_rows=1, new_columns=names,
                       schema_overrides=dict.fromkeys(names, pl.String), null_values=[""])


@pytest.fixture(scope="module")
def gpu_util(files: dict[str, bytes]) -> pl.DataFrame:
    """cluster_gpu_util: time, machineId, gpu0..7 (null = empty), trailing (always empty)."""
    return _read_util(files["cluster_gpu_util"], ["time", "machineId", *GPU_COLUMNS, "trailing"])


@pytest.fixture(scope="module")
def real_gpus(gpu_util: pl.DataFrame) -> dict[str, int]:
    """GPUs each machine really has: utilisation columns that ever hold a number."""
    seen = gpu_util.group_by("machineId").agg(
        [(pl.col(c).is_not_null() & (pl.col(c) != "NA")).any().alias(c) for c in GPU_COLUMNS])
    return {row["machineId"]: sum(row[c] for c in GPU_COLUMNS) for row in seen.iter_rows(named=True)}


@pytest.fixture(scope="module")
def machine_list(files: dict[str, bytes]) -> dict[str, tuple[int, str]]:
    """cluster_machine_list: machine -> (listed GPUs, GPU memory text)."""
    rows = list(csv.reader(io.StringIO(files["cluster_machine_list"].decode()), skipinitialspace=True))
    return {name: (int(gpus), memory) for name, gpus, memory in rows[1:]}


def _parse(text: str) -> datetime | None:
    return None if text == "None" else datetime.strptime(text, TIME_FORMAT)


# Wall-clock times around the end of DST (01:00-01:59 comes twice) are ambiguous.
FALL_BACK = (datetime(2017, 11, 5, 0, 0), datetime(2017, 11, 5, 3, 0))


def _in_fall_back(*times: datetime) -> bool:
    return any(FALL_BACK[0] <= t < FALL_BACK[1] for t in times)


def _not_before(later: datetime, earlier: datetime) -> bool:
    """`later` is not before `earlier` (by up to an hour if the wall clock went back between)."""
    return later >= earlier or (_in_fall_back(later, earlier) and earlier - later <= timedelta(hours=1))


def _acme_philly() -> dict[str, float]:
    with open(SHARED_TRACES / "acmetrace" / "cluster_summary.csv", newline="") as handle:
        row = next(r for r in csv.DictReader(handle) if r["id"] == "Philly")
    return {key: float(value) for key, value in row.items() if key != "id" and value}


def _label_to_utc(label: str) -> datetime:
    """`YYYY-MM-DD HH:MM:SS PDT|PST` -> UTC; fails when the zone is wrong for the date."""
    wall, zone = label[:19], label[20:]
    naive = datetime.strptime(wall, TIME_FORMAT)
    for fold in (0, 1):
        local = naive.replace(tzinfo=PACIFIC, fold=fold)
        if local.tzname() == zone:
            return local.astimezone(timezone.utc)
    raise AssertionError(f"{label!r}: zone {zone} is wrong for that date")


# ------------------------------------------------------------------------------- packing


def test_one_archive_with_the_five_release_files(release: tuple[list[Path], list[str]]) -> None:
    (archive,), messages = release
    assert archive.name == "trace-data.tar.gz"
    assert sorted(p.name for p in archive.parent.iterdir()) == ["trace-data.tar.gz"]
    with tarfile.open(archive, "r:gz") as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == [f"trace-data/{name}" for name in FILES]
    assert all(m.isfile() and m.mode == 0o644 for m in members)
    assert len({m.mtime for m in members}) == 1
    head = archive.read_bytes()[:10]
    assert head[:3] == b"\x1f\x8b\x08" and head[3] & 0x08 == 0 and head[4:8] == b"\0\0\0\0"
    with gzip.open(archive) as stream:
        assert len(stream.read()) % 10240 == 0
    assert len(messages) == 6  # one per file and one for the archive


def test_pack_false_leaves_the_same_five_files_loose(files: dict[str, bytes], tmp_path: Path) -> None:
    messages: list[str] = []
    paths = generate_philly(tmp_path, scale=SCALE, seed=SEED, progress=messages.append, pack=False)
    assert [p.name for p in paths] == list(FILES)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(FILES)  # no archive, no temp file
    assert len(messages) == 5
    for path in paths:
        assert path.read_bytes() == files[path.name], path.name


def test_same_seed_gives_identical_bytes_and_another_seed_differs(
        release: tuple[list[Path], list[str]], files: dict[str, bytes], tmp_path: Path) -> None:
    (archive,), _ = release
    (again,) = generate_philly(tmp_path / "again", scale=SCALE, seed=SEED)
    assert again.read_bytes() == archive.read_bytes()
    other = generate_philly(tmp_path / "other", scale=SCALE, seed=SEED + 1, pack=False)
    for path in other:
        if path.name != "cluster_machine_list":  # 6 machines: the same list is possible
            assert path.read_bytes() != files[path.name], path.name


def test_bad_arguments_raise_value_error(tmp_path: Path) -> None:
    for scale in (0, -1.0, float("nan"), float("inf"), True):
        with pytest.raises(ValueError):
            generate_philly(tmp_path, scale=scale)  # type: ignore[arg-type]
    for seed in (-1, 1.5, "3", True):
        with pytest.raises(ValueError):
            generate_philly(tmp_path, scale=SCALE, seed=seed)  # type: ignore[arg-type]
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------------------- machine list


def test_machine_list_is_laid_out_like_the_real_one(files: dict[str, bytes]) -> None:
    real = real_file("philly/cluster_machine_list").read_text().splitlines()
    lines = files["cluster_machine_list"].decode().split("\n")
    assert lines[-1] == "" and lines[0] == real[0] == "machineId, number of GPUs, single GPU mem"
    rows = lines[1:-1]
    assert rows and all(re.fullmatch(r"m\d+,(2, 12|8, 24)GB", row) for row in rows)
    assert all(re.fullmatch(r"m\d+,(2, 12|8, 24)GB", row) for row in real[1:])
    keys = [(int(r.split(",")[1]), r.split(",")[0]) for r in rows]
    assert keys == sorted(keys)  # 2-GPU machines first, names sorted as text, like the real list
    assert len({name for _, name in keys}) == len(keys)


@needs_shared_traces
def test_machine_list_at_scale_1_matches_the_real_lists() -> None:
    # The generator's own builders (a full scale-1 run takes minutes), checked against the real
    # machine list and the per-machine GPU counts derived from the real utilisation log.
    text = _machine_list_text(_build_machines(SEED, 1.0))
    ours = Counter(tuple(r[1:]) for r in csv.reader(io.StringIO(text), skipinitialspace=True))
    with open(PHILLY / "cluster_machine_list", newline="") as handle:
        real = Counter(tuple(r[1:]) for r in csv.reader(handle, skipinitialspace=True))
    assert ours == real  # 321 x (2, 12GB), 231 x (8, 24GB), header
    listed = {r[0]: int(r[1]) for r in csv.reader(io.StringIO(text), skipinitialspace=True) if r[0] != "machineId"}
    assert sum(listed.values()) == 2490
    machines = _build_machines(SEED, 1.0)
    with open(PHILLY / "revised_machine_list.csv", newline="") as handle:
        revised = list(csv.DictReader(handle))
    real_pairs = Counter((int(r["number of GPUs"]),) for r in revised)
    assert Counter((int(g),) for g in machines.true_gpus) == real_pairs
    assert int(machines.true_gpus.sum()) == 3205


# ------------------------------------------------------------------------------- job log


def test_job_log_is_one_json_array_laid_out_like_the_readme(files: dict[str, bytes], jobs: list[dict]) -> None:
    text = files["cluster_job_log"].decode()
    assert json.dumps(jobs, indent=4) == text  # 4-space layout of the README example
    assert len(jobs) == round(JOBS * SCALE)
    assert all(list(job) == ["status", "vc", "jobid", "attempts", "submitted_time", "user"] for job in jobs)
    for job in jobs:
        for attempt in job["attempts"]:
            assert list(attempt) == ["start_time", "end_time", "detail"]
            assert attempt["detail"] and all(list(d) == ["ip", "gpus"] and d["gpus"] for d in attempt["detail"])


def test_job_fields(jobs: list[dict]) -> None:
    ids = [job["jobid"] for job in jobs]
    assert len(set(ids)) == len(ids)
    first, last = datetime(2017, 8, 7), datetime(2017, 12, 23)
    for job in jobs:
        assert job["status"] in {"Pass", "Killed", "Failed"}
        assert re.fullmatch(r"[0-9a-f]{6}", job["vc"]) and re.fullmatch(r"[0-9a-f]{6}", job["user"])
        match = re.fullmatch(r"application_(\d{13})_(\d+)", job["jobid"])
        assert match
        submitted = _parse(job["submitted_time"])
        assert submitted is not None and first <= submitted < last
        # The id carries the ResourceManager's start (ms, UTC), which precedes the submission.
        started = datetime.fromtimestamp(int(match[1]) / 1000, PACIFIC).replace(tzinfo=None)
        assert started < submitted
        previous_end = submitted
        for attempt in job["attempts"]:
            for key in ("start_time", "end_time"):
                assert attempt[key] == "None" or re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", attempt[key])
            start, end = _parse(attempt["start_time"]), _parse(attempt["end_time"])
            if start is not None:
                assert _not_before(start, previous_end), job["jobid"]
            if start is not None and end is not None:
                assert _not_before(end, start), job["jobid"]
            previous_end = end or start or previous_end
    submitted = sorted(_parse(job["submitted_time"]) for job in jobs)
    assert submitted[0].date().isoformat() == "2017-08-07"  # type: ignore[union-attr]
    assert submitted[-1].date().isoformat() == "2017-12-22"  # type: ignore[union-attr]


def test_every_attempt_gpu_exists_on_its_machine(jobs: list[dict], real_gpus: dict[str, int],
                                                 machine_list: dict[str, tuple[int, str]]) -> None:
    multi_machine = 0
    for job in jobs:
        for attempt in job["attempts"]:
            machines = [d["ip"] for d in attempt["detail"]]
            assert len(set(machines)) == len(machines)
            multi_machine += len(machines) > 1
            for detail in attempt["detail"]:
                assert detail["ip"] in machine_list
                indices = [int(re.fullmatch(r"gpu(\d)", g)[1]) for g in detail["gpus"]]  # type: ignore[index]
                assert indices == sorted(set(indices))
                assert max(indices) < real_gpus[detail["ip"]], (job["jobid"], detail)
    assert multi_machine > 0


def test_no_gpu_is_held_by_two_attempts_at_once(jobs: list[dict]) -> None:
    holds = defaultdict(list)
    for job in jobs:
        for attempt in job["attempts"]:
            start, end = _parse(attempt["start_time"]), _parse(attempt["end_time"])
            if start is None or end is None or end <= start or _in_fall_back(start, end):
                continue
            for detail in attempt["detail"]:
                for gpu in detail["gpus"]:
                    holds[(detail["ip"], gpu)].append((start, end))
    assert sum(map(len, holds.values())) > 500
    for gpu, intervals in holds.items():
        intervals.sort()
        for (_, end), (start, _) in zip(intervals, intervals[1:]):
            assert start >= end, gpu


@needs_shared_traces
def test_status_and_missing_data_shares(jobs: list[dict]) -> None:
    acme = _acme_philly()
    status = Counter(job["status"] for job in jobs)
    n = len(jobs)
    assert status["Pass"] / n == pytest.approx(acme["complete_rate_gpu"], abs=0.01)
    assert status["Killed"] / n == pytest.approx(acme["cancel_rate_gpu"], abs=0.01)
    assert status["Failed"] / n == pytest.approx(acme["fail_rate_gpu"], abs=0.01)
    attempts = [a for job in jobs for a in job["attempts"]]
    no_attempt = sum(not job["attempts"] for job in jobs)
    assert no_attempt / n == pytest.approx(NO_ATTEMPT_JOBS / JOBS, abs=0.005)
    assert sum(a["end_time"] == "None" for a in attempts) / n == pytest.approx(NO_END_ATTEMPTS / JOBS, abs=0.005)
    assert sum(a["start_time"] == "None" for a in attempts) <= max(3, 3 * NO_START_ATTEMPTS * n / JOBS)
    running = [job for job in jobs if job["attempts"] and job["attempts"][-1]["end_time"] == "None"]
    assert running  # a last attempt without end: still running at the snapshot
    assert 1.1 < len(attempts) / (n - no_attempt) < 1.8  # retries


@needs_shared_traces
def test_run_time_queue_and_gpus_match_the_acmetrace_figures(jobs: list[dict]) -> None:
    # Definitions of the release notebook: run = last attempt end - first attempt start,
    # queue = first attempt start - submission, GPUs = GPUs of the first attempt.
    acme = _acme_philly()
    run, queue, gpus = [], [], []
    for job in jobs:
        if not job["attempts"]:
            continue
        first, last = job["attempts"][0], job["attempts"][-1]
        gpus.append(sum(len(d["gpus"]) for d in first["detail"]))
        start, end = _parse(first["start_time"]), _parse(last["end_time"])
        if start is None:
            continue
        queue.append((start - _parse(job["submitted_time"])).total_seconds())  # type: ignore[operator]
        if end is not None:
            run.append((end - start).total_seconds())

    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2]

    assert median(run) == pytest.approx(acme["med_run_time_gpu"], rel=0.25)
    assert sum(run) / len(run) == pytest.approx(acme["avg_run_time_gpu"], rel=0.5)
    assert max(run) <= acme["max_run_time_gpu"]
    assert median(queue) == pytest.approx(acme["med_que_time_gpu"], rel=0.25)
    assert sum(queue) / len(queue) == pytest.approx(acme["avg_que_time_gpu"], rel=0.5)
    assert median(gpus) == acme["med_gpu_num"] == 1
    assert 1.4 < sum(gpus) / len(gpus) < acme["avg_gpu_num"] + 0.4  # few big machines at 1 %
    assert max(gpus) <= acme["max_gpu"]
    assert 0.7 < gpus.count(1) / len(gpus) < 0.9


@needs_shared_traces
def test_fifteen_virtual_clusters_in_the_real_proportions(jobs: list[dict]) -> None:
    with open(PHILLY / "pollux_philly_jobs.csv", newline="") as handle:
        real = Counter(row["cluster"] for row in csv.DictReader(handle) if row["cluster"])
    ours = Counter(job["vc"] for job in jobs)
    assert len(real) == len(ours) == 15  # TRACES.md: 15 virtual clusters
    real_shares = sorted((c / sum(real.values()) for c in real.values()), reverse=True)
    our_shares = sorted((c / len(jobs) for c in ours.values()), reverse=True)
    for k in (1, 2, 4):
        assert sum(our_shares[:k]) == pytest.approx(sum(real_shares[:k]), abs=0.06)
    users_per_vc = Counter(vc for vc, _ in {(job["vc"], job["user"]) for job in jobs})
    assert max(users_per_vc.values()) >= 3


# ------------------------------------------------------------------------------- utilisation logs


def test_gpu_util_rows_are_formatted_like_the_release(files: dict[str, bytes], gpu_util: pl.DataFrame,
                                                      real_gpus: dict[str, int]) -> None:
    lines = files["cluster_gpu_util"].decode().split("\n")
    assert lines[0] == "time,machineId," + ",".join(GPU_COLUMNS)  # 10 fields, no trailing comma
    assert lines[-1] == ""
    row = r"^\d{4}-\d\d-\d\d \d\d:\d\d:00 P[DS]T,m\d+(,(NA|\d+\.\d+)?){8},$"
    assert pl.Series(lines[1:-1]).str.contains(row).all()  # 11 fields, trailing comma
    assert gpu_util["trailing"].null_count() == gpu_util.height
    values = pl.concat([gpu_util[c] for c in GPU_COLUMNS]).drop_nulls()
    assert (values == "NA").any()
    numbers = values.filter(values != "NA").cast(pl.Float64)
    assert numbers.min() >= 0 and numbers.max() <= 100  # type: ignore[operator]
    assert {"0.0", "100.0"} <= set(values.to_list()) and values.str.contains(r"^\d+\.\d{9}$").any()
    # Columns beyond a machine's GPUs are always empty, the others never.
    for machine, group in gpu_util.group_by("machineId"):
        n = real_gpus[machine[0]]  # type: ignore[index]
        for k, column in enumerate(GPU_COLUMNS):
            empty = group[column].null_count()
            assert empty == (group.height if k >= max(n, 8 * (n == 0)) else 0), (machine, column)


def test_util_times_carry_the_right_zone_and_run_forward(gpu_util: pl.DataFrame) -> None:
    labels = gpu_util["time"].unique(maintain_order=True).to_list()
    instants = [_label_to_utc(label) for label in labels]  # fails on a wrong PDT/PST
    assert all(b > a for a, b in zip(instants, instants[1:]))  # time-major rows
    assert all((b - a) % timedelta(minutes=1) == timedelta(0) for a, b in zip(instants, instants[1:]))
    assert labels[0].startswith("2017-10-03 00:") and labels[-1].startswith("2017-12-15 ")
    # DST ended 2017-11-05 02:00 PDT -> 01:00 PST: the hour 01:00-01:59 comes twice.
    repeated = [label for label in labels if label.startswith("2017-11-05 01:")]
    zones = [label[-3:] for label in repeated]
    assert "PDT" in zones and "PST" in zones and zones == sorted(zones)  # PDT first
    assert all(label.endswith("PDT") for label in labels if label < "2017-11-05")
    assert all(label.endswith("PST") for label in labels if label >= "2017-11-05 02:")
    per_minute = gpu_util.group_by("time").len()["len"]
    assert per_minute.max() <= gpu_util["machineId"].n_unique()


def test_cpu_and_memory_logs(files: dict[str, bytes], gpu_util: pl.DataFrame) -> None:
    cpu_lines = files["cluster_cpu_util"].decode().split("\n")
    mem_lines = files["cluster_mem_util"].decode().split("\n")
    assert cpu_lines[0] == "time,machine_id,cpu_util"
    assert mem_lines[0] == "time,machine_id,mem_total,mem_free"
    time = r"^\d{4}-\d\d-\d\d \d\d:\d\d:00 P[DS]T,m\d+"
    assert pl.Series(cpu_lines[1:-1]).str.contains(time + r",(NA|\d+\.\d+)$").all()
    assert pl.Series(mem_lines[1:-1]).str.contains(time + r",(NA,NA|\d+\.0,\d+\.\d+)$").all()
    cpu = _read_util(files["cluster_cpu_util"], ["time", "machine_id", "cpu_util"])
    mem = _read_util(files["cluster_mem_util"], ["time", "machine_id", "mem_total", "mem_free"])
    assert cpu["time"].to_list() == mem["time"].to_list() == gpu_util["time"].to_list()
    assert (cpu["cpu_util"] == "NA").any() and (mem["mem_total"] == "NA").any()
    numbers = cpu.filter(pl.col("cpu_util") != "NA")["cpu_util"].cast(pl.Float64)
    assert 0 <= numbers.min() and numbers.max() <= 100  # type: ignore[operator]
    memory = mem.filter(pl.col("mem_total") != "NA").select(pl.all().exclude("time", "machine_id").cast(pl.Float64))
    assert (memory["mem_free"] <= memory["mem_total"]).all() and (memory["mem_free"] > 0).all()
    # The README example: 528272672.0 total on a 24 GB machine.
    assert memory["mem_total"].max() == pytest.approx(528_272_672, rel=0.001)


def test_listed_gpus_under_count_the_gpus_in_the_util_log(machine_list: dict[str, tuple[int, str]],
                                                          real_gpus: dict[str, int]) -> None:
    assert set(real_gpus) == set(machine_list)
    listed = sum(gpus for gpus, _ in machine_list.values())
    assert listed < sum(real_gpus.values())  # TRACES.md: 2,490 listed, ~3,205 in the util log
    assert any(machine_list[m][0] == 2 and real_gpus[m] == 8 for m in machine_list)


def test_busy_gpus_follow_the_job_placements(jobs: list[dict], gpu_util: pl.DataFrame) -> None:
    # Minutes in the middle of attempts of 30+ minutes inside the utilisation window.
    held = []
    for job in jobs:
        for attempt in job["attempts"]:
            start, end = _parse(attempt["start_time"]), _parse(attempt["end_time"])
            if start is None or end is None or end - start < timedelta(minutes=30):
                continue
            middle = (start.replace(tzinfo=PACIFIC).astimezone(timezone.utc) + (end - start) / 2)
            middle = middle.replace(second=0, microsecond=0).astimezone(PACIFIC)
            label = middle.strftime(TIME_FORMAT) + " " + middle.tzname()  # type: ignore[operator]
            held += [(label, d["ip"], f"{g}_util") for d in attempt["detail"] for g in d["gpus"]]
    long = gpu_util.unpivot(index=["time", "machineId"], on=GPU_COLUMNS, variable_name="gpu")
    cells = pl.DataFrame(held, schema=["time", "machineId", "gpu"], orient="row").join(
        long, on=["time", "machineId", "gpu"]).filter(pl.col("value") != "NA")
    assert cells.height > 100
    busy = cells["value"].cast(pl.Float64)
    everything = long.filter(pl.col("value").is_not_null() & (pl.col("value") != "NA"))["value"].cast(pl.Float64)
    assert busy.mean() > 35 and (busy == 0).mean() < 0.2  # type: ignore[operator]
    assert (everything == 0).mean() > 0.3  # idle GPUs read 0
