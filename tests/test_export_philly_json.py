"""`ddlx datasets export NAME --format philly-json` and `ddlx datasets import NAME --preset philly-json`.

A six-job table imported by hand; every key of every job object is worked out below from the rows,
independently of the exporter. The loaders' parsing rules (the release's notebook, Blox and Synergy)
are re-implemented in a few lines and applied to the written file. On the SYNTHETIC Philly sample the
exported detail and wall clock are compared with the raw job log, read on their own. A dataset of
several clusters (a hand-made table, and an excerpt of the real ITP archive's ten cluster files)
writes each job's cluster in `vc`, the field Blox and Synergy read as the job's cluster.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import duckdb
import pytest

from ddlx.datasets.importers import import_dataset
from ddlx.errors import InputError
from ddlx.formats.export import export_dataset
from ddlx.formats.model import ExportError
from ddlx.formats.philly_json.reader import convert_job_log
from ddlx.traces.philly.release import RELEASE
from tests.conftest import needs_shared_traces, real_itp_archive

PHILLY = RELEASE.name
T0 = 1_700_000_000  # 2023-11-14 22:13:20 UTC (14:13:20 in Los Angeles, PST)
ROWS = f"""job_id,user,vc,gpus,state,submit,start,end
j-b,ann,vc1,2,COMPLETED,{T0 + 10},{T0 + 70},{T0 + 3670}
j-a,bob,vc2,0.5,FAILED,{T0},{T0 + 5},{T0 + 605.6}
j-c,ann,vc2,0,CANCELLED,{T0 + 10},,
j-d,cy,,8,RUNNING,{T0 + 100},{T0 + 160},
j-e,bob,vc1,12,COMPLETED,{T0 + 200},{T0 + 200},{T0 + 260}
j-f,,vc1,1,COMPLETED,{T0 + 300},{T0 + 300},
j-g,cy,vc2,0,COMPLETED,{T0 + 400},{T0 + 400},{T0 + 460}
"""
MAPPING = "job_id=job_id,user=user,vc=vc,gpus=gpus,state=state,submit=submit,start=start,end=end"


def _machine(name: str, gpus: int) -> dict[str, Any]:
    return {"ip": name, "gpus": [f"gpu{i}" for i in range(gpus)]}


# Submission order (ties by job id): j-a 1, j-b 2, j-c 3, j-d 4 (running: left out), j-e 5, j-f 6, j-g 7.
# Times in UTC: T0 = 22:13:20; j-a's end T0 + 605.6 s = 22:23:25.6, cut to 22:23:25.
EXPECTED = [
    {"status": "Failed", "vc": "vc2", "jobid": "j-a", "user": "bob", "submitted_time": "2023-11-14 22:13:20",
     "attempts": [{"start_time": "2023-11-14 22:13:25", "end_time": "2023-11-14 22:23:25",
                   "detail": [_machine("placeholder-1-1", 1)]}]},  # half a GPU counts as one
    {"status": "Pass", "vc": "vc1", "jobid": "j-b", "user": "ann", "submitted_time": "2023-11-14 22:13:30",
     "attempts": [{"start_time": "2023-11-14 22:14:30", "end_time": "2023-11-14 23:14:30",
                   "detail": [_machine("placeholder-2-1", 2)]}]},
    {"status": "Killed", "vc": "vc2", "jobid": "j-c", "user": "ann", "submitted_time": "2023-11-14 22:13:30",
     "attempts": []},  # never started
    {"status": "Pass", "vc": "vc1", "jobid": "j-e", "user": "bob", "submitted_time": "2023-11-14 22:16:40",
     "attempts": [{"start_time": "2023-11-14 22:16:40", "end_time": "2023-11-14 22:17:40",
                   "detail": [_machine("placeholder-5-1", 8), _machine("placeholder-5-2", 4)]}]},  # 12 = 8 + 4
    {"status": "Pass", "vc": "vc1", "jobid": "j-f", "user": None, "submitted_time": "2023-11-14 22:18:20",
     "attempts": [{"start_time": "2023-11-14 22:18:20", "end_time": "None",
                   "detail": [_machine("placeholder-6-1", 1)]}]},
    {"status": "Pass", "vc": "vc2", "jobid": "j-g", "user": "cy", "submitted_time": "2023-11-14 22:20:00",
     "attempts": [{"start_time": "2023-11-14 22:20:00", "end_time": "2023-11-14 22:21:00", "detail": []}]},  # no GPU
]


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    (tmp_path / "jobs.csv").write_text(ROWS)
    import_dataset("lab", tmp_path / "jobs.csv", tmp_path / "home", mapping=MAPPING)
    return tmp_path / "home"


# -- the loaders' rules, re-implemented ---------------------------------------------------------

def _parse(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S")


def notebook_job(status: str, vc: str, jobid: str, attempts: list[dict[str, Any]], submitted_time: str,
                 user: str) -> dict[str, Any]:
    """The release notebook's `Job(**job)`: exactly these keys; GPUs of the first attempt; queueing delay
    and run time in seconds (None where a time is None, "" or "None")."""
    def date(text: str | None) -> dt.datetime | None:
        return None if text in (None, "", "None") else _parse(text)

    if not attempts:
        return {"gpus": None, "queue_s": None, "run_s": None}
    first, last = date(attempts[0]["start_time"]), date(attempts[-1]["end_time"])
    return {"gpus": sum(len(d["gpus"]) for d in attempts[0]["detail"]),
            "queue_s": (first - date(submitted_time)).total_seconds() if first else None,  # type: ignore[operator]
            "run_s": (last - first).total_seconds() if first and last else None}


def blox_jobs(data: list[dict[str, Any]]) -> list[tuple[str, float, int, Any, Any]]:
    """Blox's and Synergy's loop (one job per attempt): (id, arrival s, GPUs, user, vc) of each attempt
    with both times and GPUs and a positive duration."""
    data = [j for j in data if len(j["attempts"]) > 0]
    first = min(_parse(j["submitted_time"]) for j in data)
    out = []
    for j in data:
        arrival = (_parse(j["submitted_time"]) - first).total_seconds()
        for i, a in enumerate(j["attempts"]):
            if "None" in a["start_time"] or "None" in a["end_time"]:
                continue
            gpus = sum(len(d["gpus"]) for d in a["detail"])
            if (_parse(a["end_time"]) - _parse(a["start_time"])).total_seconds() <= 0 or gpus <= 0:
                continue
            out.append((j["jobid"] + "-attempt%d" % (i + 1), arrival, gpus, j["user"], j["vc"]))
    return out


# -- export of an imported table ----------------------------------------------------------------

def test_every_key_of_every_job(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "cluster_job_log"
    result = export_dataset(home, "lab", "philly-json", out)
    data = json.loads(out.read_text())
    assert result.rows == 6 and data == EXPECTED
    for job in data:  # key order and types as in Philly's file
        assert list(job) == ["status", "vc", "jobid", "user", "submitted_time", "attempts"]
        assert isinstance(job["jobid"], str) and isinstance(job["submitted_time"], str)
        for attempt in job["attempts"]:
            assert list(attempt) == ["start_time", "end_time", "detail"]
            assert all(isinstance(attempt[k], str) for k in ("start_time", "end_time"))
            assert all(list(d) == ["ip", "gpus"] and not d["ip"].startswith("m") for d in attempt["detail"])
    assert result.loss.dropped == {"state running: the format's status is Pass, Killed or Failed": 1}
    loss = json.loads(result.sidecar.read_text())["loss_report"]
    times = next(f["rule"] for f in loss["fields_filled"] if f["field"].startswith("times"))
    assert "wall clock in UTC" in times and "--tz UTC" in times
    machines = next(f["rule"] for f in loss["fields_filled"] if f["field"] == "detail (machines)")
    # placeholders for the 5 jobs that ran; j-c never started, so it has no attempt to place
    assert "(5 jobs)" in machines and "one GPU (1 jobs)" in machines and "0 GPUs (1 jobs)" in machines
    assert "(0 jobs without vc, 1 without user)" in next(
        f["rule"] for f in loss["fields_filled"] if f["field"] == "vc, user")
    # One cluster (named after the import, lab): vc is the job's own vc, the cluster is left out.
    assert ("cluster", "left out: every job is of the one cluster lab") in result.loss.without_place


def test_the_loaders_read_it(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "cluster_job_log"
    export_dataset(home, "lab", "philly-json", out)
    data = json.loads(out.read_text())
    # The notebook: Job(**job) fails on any other key; j-a queued 5 s, ran 600 s (605.6 cut to 605 - 5).
    parsed = {job["jobid"]: notebook_job(**job) for job in data}
    assert parsed["j-a"] == {"gpus": 1, "queue_s": 5.0, "run_s": 600.0}
    assert parsed["j-b"] == {"gpus": 2, "queue_s": 60.0, "run_s": 3600.0}
    assert parsed["j-c"] == {"gpus": None, "queue_s": None, "run_s": None}
    assert parsed["j-e"] == {"gpus": 12, "queue_s": 0.0, "run_s": 60.0}
    assert parsed["j-f"] == {"gpus": 1, "queue_s": 0.0, "run_s": None}
    assert parsed["j-g"] == {"gpus": 0, "queue_s": 0.0, "run_s": 60.0}
    # Blox / Synergy: j-c has no attempt, j-f no end, j-g no GPU; arrivals count from j-a's submission.
    assert blox_jobs(data) == [("j-a-attempt1", 0.0, 1, "bob", "vc2"), ("j-b-attempt1", 10.0, 2, "ann", "vc1"),
                               ("j-e-attempt1", 200.0, 12, "bob", "vc1")]


def test_each_job_of_several_clusters_carries_its_cluster(tmp_path: Path) -> None:
    (tmp_path / "two.csv").write_text(f"""job_id,cluster,vc,gpus,state,submit,start,end
a,east,vc1,1,COMPLETED,{T0},{T0 + 5},{T0 + 65}
b,east,,2,COMPLETED,{T0 + 10},{T0 + 15},{T0 + 75}
c,west,vc1,1,FAILED,{T0 + 20},{T0 + 25},{T0 + 85}
d,west,,4,COMPLETED,{T0 + 30},{T0 + 35},{T0 + 95}
""")
    home = tmp_path / "home"
    import_dataset("two", tmp_path / "two.csv", home,
                   mapping="job_id=job_id,cluster=cluster,vc=vc,gpus=gpus,state=state,submit=submit,start=start,end=end")
    out = tmp_path / "two.json"
    result = export_dataset(home, "two", "philly-json", out)
    data = json.loads(out.read_text())
    # vc1 of east and vc1 of west stay apart; a job without a vc carries its cluster alone.
    assert [(job["jobid"], job["vc"]) for job in data] == [("a", "east/vc1"), ("b", "east"), ("c", "west/vc1"),
                                                           ("d", "west")]
    assert {vc for *_, vc in blox_jobs(data)} == {"east/vc1", "east", "west/vc1", "west"}  # Blox's cluster_id
    rule = dict(result.loss.filled)["vc"]
    assert "one of 2 (east, west)" in rule and "(2 jobs)" in rule
    assert not any(field == "cluster" for field, _ in result.loss.without_place)


def _itp_excerpt(path: Path, rows_per_cluster: int) -> dict[str, str]:
    """An excerpt of the real ITP archive (ten clusters; the one excerpt cluster of tests/data/real
    in a fresh clone): the first `rows_per_cluster` jobs of each `clusterNN.csv`, written as a tar.gz
    of the same members; returns job id -> cluster (the member's name)."""
    cluster_of: dict[str, str] = {}
    with tarfile.open(real_itp_archive(path.parent / "itp-real")) as archive, \
            tarfile.open(path, "w:gz") as excerpt:
        for member in archive.getmembers():
            if not member.name.endswith(".csv"):
                continue
            lines = archive.extractfile(member).read().decode().splitlines()[:rows_per_cluster + 1]  # type: ignore
            for row in csv.DictReader(lines):
                cluster_of[row["job_id"]] = Path(member.name).stem
            data = ("\n".join(lines) + "\n").encode()
            info = tarfile.TarInfo(member.name)
            info.size = len(data)
            excerpt.addfile(info, io.BytesIO(data))
    return cluster_of


@needs_shared_traces
def test_an_itp_excerpt_carries_its_ten_clusters(tmp_path: Path) -> None:
    cluster_of = _itp_excerpt(tmp_path / "itp.tar.gz", rows_per_cluster=5)
    assert len(cluster_of) == 50 and len(set(cluster_of.values())) == 10  # ids unique: jobid is the job id
    home = tmp_path / "home"
    import_dataset("itp", tmp_path / "itp.tar.gz", home, preset="itp")
    out = tmp_path / "itp.json"
    result = export_dataset(home, "itp", "philly-json", out, options={"unknown_status": "Pass"})
    data = json.loads(out.read_text())
    assert {job["jobid"]: job["vc"] for job in data} == cluster_of
    assert {vc for *_, vc in blox_jobs(data)} == set(cluster_of.values())
    assert "one of 10 (cluster01, cluster02," in dict(result.loss.filled)["vc"]


def test_one_real_itp_cluster_is_written_without_a_cluster(tmp_path: Path) -> None:
    """Jobs of one real ITP cluster (cluster01 of the archive, or its excerpt): one file, so one
    cluster named after the dataset; the jobs keep their vc (ITP has none) and the cluster is
    reported left out."""
    cluster_of = _itp_excerpt(tmp_path / "all.tar.gz", rows_per_cluster=40)
    ids = [job_id for job_id, cluster in cluster_of.items() if cluster == "cluster01"]
    assert len(ids) == 40
    with tarfile.open(tmp_path / "all.tar.gz") as archive:
        data = archive.extractfile("cluster01.csv").read()  # type: ignore[union-attr]
    one = tmp_path / "cluster01.csv"
    one.write_bytes(data)
    home = tmp_path / "home"
    import_dataset("itp", one, home, preset="itp")
    out = tmp_path / "itp.json"
    result = export_dataset(home, "itp", "philly-json", out, options={"unknown_status": "Pass"})
    data_out = json.loads(out.read_text())
    assert sorted(job["jobid"] for job in data_out) == sorted(ids)
    assert {job["vc"] for job in data_out} == {None}
    assert "vc" not in dict(result.loss.filled)
    assert dict(result.loss.without_place)["cluster"] == "left out: every job is of the one cluster itp"


def test_times_in_another_zone_and_bad_zones(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "la.json"
    result = export_dataset(home, "lab", "philly-json", out, options={"tz": "America/Los_Angeles"})
    data = json.loads(out.read_text())
    # 2023-11-14 is PST, UTC-8: 22:13:20 UTC is 14:13:20.
    assert data[0]["submitted_time"] == "2023-11-14 14:13:20"
    assert data[0]["attempts"][0]["end_time"] == "2023-11-14 14:23:25"
    assert any("--tz America/Los_Angeles" in rule for _, rule in result.loss.filled)
    with pytest.raises(ExportError, match="unknown time zone"):
        export_dataset(home, "lab", "philly-json", tmp_path / "bad.json", options={"tz": "Mars/Olympus"})
    assert not (tmp_path / "bad.json").exists()


# -- the Philly trace itself --------------------------------------------------------------------

def _sample_job_log(tmp_home: Path) -> tuple[Path, list[dict[str, Any]]]:
    """The sample's stored job log (Parquet) and its raw cluster_job_log as released."""
    (sample,) = tmp_home.glob(f"samples/{PHILLY}-synthetic")
    (stored,) = sample.glob(f"store/{PHILLY}/*/{PHILLY}_job_log.parquet")
    with tarfile.open(sample / "release" / "trace-data.tar.gz") as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith("cluster_job_log"))
        raw = json.load(archive.extractfile(member))  # type: ignore[arg-type]
    return stored, raw


def test_the_philly_sample_keeps_its_machines_and_wall_clock(tmp_path: Path) -> None:
    out = tmp_path / "philly.json"
    export_dataset(tmp_path / "home", PHILLY, "philly-json", out, use_sample=True, options={"tz": "source"})
    data = {job["jobid"]: job for job in json.loads(out.read_text())}
    stored, raw = _sample_job_log(tmp_path / "home")
    rows = duckdb.sql(f"""
        SELECT jobid, [[struct_pack(ip := d.ip, gpus := d.gpus) FOR d IN a.detail] FOR a IN attempts]
        FROM read_parquet('{stored}')
        WHERE len(attempts) >= 2 OR list_max([len(a.detail) FOR a IN attempts]) >= 2
        ORDER BY jobid LIMIT 5""").fetchall()
    assert len(rows) == 5
    for jobid, details in rows:
        assert [a["detail"] for a in data[jobid]["attempts"]] == details
    checked = 0
    for job in raw:  # the released wall clock (US/Pacific), where the release gives a time
        mine = data[job["jobid"]]
        assert mine["status"] == job["status"] and mine["vc"] == job["vc"] and mine["user"] == job["user"]
        assert mine["submitted_time"] == job["submitted_time"]
        assert len(mine["attempts"]) == len(job["attempts"])
        for a, b in zip(mine["attempts"], job["attempts"]):
            for key in ("start_time", "end_time"):
                assert a[key] == (b[key] if b[key] not in (None, "", "None") else "None")
            assert a["detail"] == b["detail"]
        checked += 1
    assert checked == len(raw) == len(data)


def test_the_philly_sample_round_trips(tmp_path: Path) -> None:
    out = tmp_path / "philly.json"
    export_dataset(tmp_path / "home", PHILLY, "philly-json", out, use_sample=True)
    import_dataset("back", out, tmp_path / "home", preset="philly-json")
    columns = ("job_id, \"user\", vc, epoch(submit_time), epoch(start_time), epoch(end_time), num_gpus, "
               "num_instances, state")
    con = duckdb.connect()
    (stored,) = (tmp_path / "home").glob(f"samples/{PHILLY}-synthetic/store/{PHILLY}/*/{PHILLY}_jobs.parquet")
    (back,) = (tmp_path / "home").glob("store/back/*/back_jobs.parquet")
    # The importer keeps no end for a job that never started: a job whose attempts have an end but no
    # start (the release's attempts "without start") comes back without its end.
    kept = columns.replace("epoch(end_time)", "CASE WHEN start_time IS NULL THEN NULL ELSE epoch(end_time) END")
    original = con.sql(f"SELECT {kept} FROM read_parquet('{stored}') ORDER BY job_id").fetchall()
    again = con.sql(f"SELECT {columns} FROM read_parquet('{back}') ORDER BY job_id").fetchall()
    assert len(original) > 1000 and again == original


# -- reading it back ----------------------------------------------------------------------------

def test_the_converter_reads_each_job(home: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "log.json"
    export_dataset(home, "lab", "philly-json", out)
    convert_job_log(out, "log.json", tmp_path / "t.parquet")
    rows = {r["job_id"]: r for r in pq.read_table(tmp_path / "t.parquet").to_pylist()}
    assert list(rows) == ["j-a", "j-b", "j-c", "j-e", "j-f", "j-g"]
    assert rows["j-a"] == {"job_id": "j-a", "user": "bob", "vc": "vc2", "status": "Failed",
                           "submit": "2023-11-14 22:13:20", "start": "2023-11-14 22:13:25",
                           "end": "2023-11-14 22:23:25", "gpus": 1, "instances": 1, "attempts": 1}
    assert (rows["j-c"]["start"], rows["j-c"]["end"], rows["j-c"]["gpus"], rows["j-c"]["attempts"]) == \
        (None, None, 0, 0)
    assert (rows["j-e"]["gpus"], rows["j-e"]["instances"]) == (12, 2)
    assert (rows["j-f"]["user"], rows["j-f"]["end"]) == (None, None)


def test_the_converter_takes_the_largest_attempt_and_earliest_start(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    job = {"status": "Failed", "vc": "v", "jobid": "x", "user": "u", "submitted_time": "2017-10-01 00:00:00",
           "attempts": [{"start_time": None, "end_time": "2017-10-01 00:05:00", "detail": []},
                        {"start_time": "2017-10-01 00:10:00", "end_time": "2017-10-01 00:20:00",
                         "detail": [_machine("m1", 2), _machine("m2", 2)]},
                        {"start_time": "2017-10-01 00:30:00", "end_time": "None", "detail": [_machine("m3", 4)]}]}
    (tmp_path / "log.json").write_text(json.dumps([job]))
    convert_job_log(tmp_path / "log.json", "log.json", tmp_path / "t.parquet")
    (row,) = pq.read_table(tmp_path / "t.parquet").to_pylist()
    # 4 GPUs in attempts 2 and 3: the earlier one, on 2 machines; the last attempt has no end.
    assert (row["start"], row["end"], row["gpus"], row["instances"], row["attempts"]) == \
        ("2017-10-01 00:10:00", None, 4, 2, 3)


@pytest.mark.parametrize(("text", "where", "field"), [
    ('[{"jobid": "a", "submitted_time": "2017-10-01 00:00:00", "attempts": []},\n  {"jobid": ', "line 2", None),
    ('[{"jobid": "a", "submitted_time": "2017-10-01 00:00:00"}, {"user": "u", "attempts": []}]',
     "job 2 of the array", "jobid"),
    ('[{"jobid": "a", "submitted_time": "2017-10-01 00:00:00", "attempts": '
     '[{"start_time": "2017-10-01 25:00:00", "end_time": "None", "detail": []}]}]', "job a, attempt 1", "start_time"),
    ('[{"jobid": "a", "submitted_time": "01/10/2017 00:00", "attempts": []}]', "job a", "submitted_time"),
])
def test_bad_input_names_the_file_and_job(tmp_path: Path, text: str, where: str, field: str | None) -> None:
    (tmp_path / "log.json").write_text(text)
    with pytest.raises(InputError) as caught:
        convert_job_log(tmp_path / "log.json", "shown/log.json", tmp_path / "t.parquet")
    message = str(caught.value)
    assert message.startswith("shown/log.json") and where in message and "\n" not in message
    assert caught.value.field == field
    assert not (tmp_path / "t.parquet").exists()


def test_a_round_trip_keeps_the_jobs(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "log.json"
    export_dataset(home, "lab", "philly-json", out)
    import_dataset("back", out, home, preset="philly-json")
    columns = "job_id, \"user\", vc, epoch(submit_time), epoch(start_time), epoch(end_time), num_gpus, state"
    con = duckdb.connect()
    (back,) = home.glob("store/back/*/back_jobs.parquet")
    got = con.sql(f"SELECT {columns} FROM read_parquet('{back}') ORDER BY job_id").fetchall()
    # j-d (running) is left out; j-a's end is cut to the second and its half GPU is one GPU.
    assert got == [
        ("j-a", "bob", "vc2", T0, T0 + 5, T0 + 605, 1.0, "failed"),
        ("j-b", "ann", "vc1", T0 + 10, T0 + 70, T0 + 3670, 2.0, "completed"),
        ("j-c", "ann", "vc2", T0 + 10, None, None, 0.0, "cancelled"),
        ("j-e", "bob", "vc1", T0 + 200, T0 + 200, T0 + 260, 12.0, "completed"),
        ("j-f", None, "vc1", T0 + 300, T0 + 300, None, 1.0, "completed"),
        ("j-g", "cy", "vc2", T0 + 400, T0 + 400, T0 + 460, 0.0, "completed"),
    ]


def test_a_dataset_without_states_needs_a_stated_status(tmp_path: Path) -> None:
    (tmp_path / "jobs.csv").write_text("id,submit,duration,gpus\na,0,60,1\nb,30,120,2\n")
    home = tmp_path / "home"
    import_dataset("nostate", tmp_path / "jobs.csv", home,
                   mapping="job_id=id,submit=submit,duration=duration,gpus=gpus")
    out = tmp_path / "n.json"
    with pytest.raises(ExportError, match="records no job states.*--option unknown_status=Pass"):
        export_dataset(home, "nostate", "philly-json", out)
    with pytest.raises(ExportError, match="expected one of Pass, Killed, Failed"):
        export_dataset(home, "nostate", "philly-json", out, options={"unknown_status": "Done"})
    assert not out.exists()
    result = export_dataset(home, "nostate", "philly-json", out, options={"unknown_status": "Pass"})
    data = json.loads(out.read_text())
    assert [(job["jobid"], job["status"]) for job in data] == [("a", "Pass"), ("b", "Pass")]
    assert ("status of jobs without a state", "Pass (--option unknown_status), 2 jobs") in result.loss.filled
    assert not result.loss.dropped
