"""The `gpu_efficiency` analysis module and the `gpu_allocations` view of a Slurm import: a small
sacct export (with NodeList and GresDetail) imported by hand, GPU samples written by hand with
`ddlx.datasets.telemetry.store.write_chunk`, and every number worked out below from that plan.

The plan (all times UTC, 2024-05-01; one sample a minute at 10:00, 10:01, ..., 10:09, so every
sample period is 60 s = 1/60 GPU-hour):

    job  user  partition NodeList  GresDetail                          start  end      GPUs
    101  alice p1        n01       gpu:a100:2(IDX:0-1)                 10:00  10:05    2
    103  alice p1        n01       gpu:a100:2(IDX:0-1)                 10:05  10:08:30 2
    102  bob   p2        n[01-02]  gpu:a100:1(IDX:2);gpu:a100:2(IDX:0,2) 10:03 running 3
    105  carol p1        n03       (none: both GPUs of n03)             10:00  10:10    2
    107  dave  p2        n04       (none: 1 of n04's 2 GPUs, unknown)   10:00  10:10    1
    106  erin  p1        n09       gpu:1(IDX:0) (n09 has no samples)    10:00  10:05    1
    104  erin  p1        None assigned (pending: no start)

gpu_util (percent) per GPU, samples t0..t9:
    n01/0  0 0 50 60 2 90 90 4 100 0      n01/1  all 0     n01/2  all 30     n01/3  all 0
    n02/0  all 0                          n02/2  all 50
    n03/0, n03/1  all 10
    n04/0  all 1, labelled hpc_job=107    n04/1  all 1 (no label)
    n05/0  0 x5 then 100 x5, labelled pod train-1 in namespace ml (a pod no job table lists)
    n06/0  all 100 (no job names n06)
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import polars as pl
import pytest

from ddlx.analysis.context import open_trace
from ddlx.analysis.definitions import get_definition
from ddlx.analysis.gpu_efficiency import DEFINITIONS, NO_TELEMETRY
from ddlx.analysis.runner import run_analysis
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.importers.views import expand_hostlist, gres_gpu_indices
from ddlx.datasets.telemetry.store import Chunk, write_chunk

SACCT = """\
JobID|User|Account|Partition|State|Submit|Start|End|AllocTRES|NodeList|GresDetail
101|alice|a|p1|COMPLETED|2024-05-01T09:59:00|2024-05-01T10:00:00|2024-05-01T10:05:00|cpu=4,gres/gpu:a100=2,node=1|n01|gpu:a100:2(IDX:0-1)
101.batch||a||COMPLETED|2024-05-01T10:00:00|2024-05-01T10:00:00|2024-05-01T10:05:00|cpu=4,gres/gpu:a100=2,node=1|n01|gpu:a100:2(IDX:0-1)
103|alice|a|p1|COMPLETED|2024-05-01T10:00:00|2024-05-01T10:05:00|2024-05-01T10:08:30|cpu=4,gres/gpu:a100=2,node=1|n01|gpu:a100:2(IDX:0-1)
102|bob|b|p2|RUNNING|2024-05-01T10:00:00|2024-05-01T10:03:00|Unknown|cpu=8,gres/gpu=3,node=2|n[01-02]|gpu:a100:1(IDX:2);gpu:a100:2(IDX:0,2)
105|carol|c|p1|COMPLETED|2024-05-01T09:00:00|2024-05-01T10:00:00|2024-05-01T10:10:00|cpu=2,gres/gpu=2,node=1|n03|
107|dave|d|p2|COMPLETED|2024-05-01T09:00:00|2024-05-01T10:00:00|2024-05-01T10:10:00|cpu=2,gres/gpu=1,node=1|n04|
106|erin|e|p1|COMPLETED|2024-05-01T09:00:00|2024-05-01T10:00:00|2024-05-01T10:05:00|cpu=1,gres/gpu=1,node=1|n09|gpu:1(IDX:0)
104|erin|e|p1|PENDING|2024-05-01T10:00:00|Unknown|Unknown||None assigned|
"""

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=timezone.utc)
MODEL = "NVIDIA A100-SXM4-80GB"
H = 1 / 60  # GPU-hours of one sample (a 60 s period)

GPU_UTIL: dict[tuple[str, int], list[float]] = {
    ("n01", 0): [0, 0, 50, 60, 2, 90, 90, 4, 100, 0],
    ("n01", 1): [0] * 10,
    ("n01", 2): [30] * 10,
    ("n01", 3): [0] * 10,
    ("n02", 0): [0] * 10,
    ("n02", 2): [50] * 10,
    ("n03", 0): [10] * 10,
    ("n03", 1): [10] * 10,
    ("n04", 0): [1] * 10,
    ("n04", 1): [1] * 10,
    ("n05", 0): [0] * 5 + [100] * 5,
    ("n06", 0): [100] * 10,
}
LABELS = {("n04", 0): {"hpc_job": "107"}, ("n05", 0): {"pod": "train-1", "namespace": "ml"}}
# Only n01/0 also reports the profiling fields and memory.
SM_ACTIVE = [0.0, 0.0, 0.4, 0.5, 0.0, 0.8, 0.8, 0.02, 0.9, 0.0]
TENSOR_ACTIVE = [0.0, 0.0, 0.1, 0.2, 0.0, 0.5, 0.5, 0.0, 0.6, 0.0]
FB_USED = [1000, 1000, 20000, 20000, 1000, 40000, 40000, 40000, 60000, 0]


def _frame(field: str, series: dict[tuple[str, int], list[float]]) -> pl.DataFrame:
    rows = []
    for (host, gpu), values in series.items():
        for minute, value in enumerate(values):
            rows.append({"host": host, "gpu": gpu, "uuid": f"GPU-{host}-{gpu}", "model": MODEL,
                         "time": T0 + timedelta(minutes=minute), "field": field, "value": float(value),
                         "hpc_job": None, "pod": None, "namespace": None, **LABELS.get((host, gpu), {})})
    return pl.DataFrame(rows, infer_schema_length=None)


def _write_samples(home: Path, dataset: str) -> None:
    end = "2024-05-01T10:10:00+00:00"
    for field, series in (("gpu_util", GPU_UTIL), ("sm_active", {("n01", 0): SM_ACTIVE}),
                          ("tensor_active", {("n01", 0): TENSOR_ACTIVE}), ("fb_used_mib", {("n01", 0): FB_USED})):
        write_chunk(home, dataset, Chunk("hand", field, "2024-05-01T10:00:00+00:00", end), _frame(field, series))


@pytest.fixture(scope="module")
def cluster_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("gpu_efficiency")
    export = folder / "sacct.txt"
    export.write_text(SACCT)
    home = folder / "home"
    import_dataset("mycluster", export, home, preset="slurm", tz="UTC")
    _write_samples(home, "mycluster")
    return home


@pytest.fixture(scope="module")
def result(cluster_home: Path):
    return run_analysis(cluster_home, "mycluster", ["gpu_efficiency"]).module("gpu_efficiency")


def _by(frame: pl.DataFrame, key: str) -> dict:
    return {row[key]: row for row in frame.to_dicts()}


# -- parsers ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "hosts"), [
    ("gpu[001-003,007]", ["gpu001", "gpu002", "gpu003", "gpu007"]),
    ("a1,b2", ["a1", "b2"]),
    ("n[8-11]-ib,x", ["n8-ib", "n9-ib", "n10-ib", "n11-ib", "x"]),  # suffix kept; width of the first bound
    ("n[098-101]", ["n098", "n099", "n100", "n101"]),  # padding kept, and growing past it
    ("n[1-2],m[09-10]", ["n1", "n2", "m09", "m10"]),
    ("gpu01", ["gpu01"]),
    ("n[2-1]", None),  # reversed range
    ("bad[1-", None),  # unclosed bracket
    ("r[1-2]n[1-2]", None),  # two bracket groups in one item: not read
    ("None assigned", None),  # a pending job's NodeList
    ("n[0-200000]", None),  # a range of 100,000 names or more
    ("", None),
    (None, None),
])
def test_hostlist_expressions(text: str | None, hosts: list[str] | None) -> None:
    assert expand_hostlist(text) == hosts


@pytest.mark.parametrize(("text", "indices"), [
    ("gpu:a100:4(IDX:0-3)", [[0, 1, 2, 3]]),
    ("gpu:2(IDX:0,2)", [[0, 2]]),
    ("gpu:a100:1(IDX:2);gpu:a100:2(IDX:0,2)", [[2], [0, 2]]),  # one entry per node, NodeList order
    ("gpu:a100:2(IDX:0-1),gpu:v100:1(IDX:3)", [[0, 1, 3]]),  # two GPU types on one node
    ("mps:100(IDX:0),gpu(IDX:1)", [[1]]),  # other GRES are not GPUs
    ("gpu:a100:4", [None]),  # no indices: unknown
    ("gpu:1(IDX:N/A)", [None]),
    ("gpu:2(IDX:3-1)", [None]),
    (None, []),
])
def test_gres_detail(text: str | None, indices: list) -> None:
    assert gres_gpu_indices(text) == indices


# -- the gpu_allocations view of the import --------------------------------------------------------

def test_gpu_allocations_view(cluster_home: Path) -> None:
    with open_trace(cluster_home, "mycluster") as ctx:
        assert ctx.has_view("gpu_allocations", "gpu_samples")
        rows = ctx.query("SELECT job_id, host, gpu, strftime(start_time, '%H:%M:%S') AS s, "
                         "strftime(end_time, '%H:%M:%S') AS e FROM gpu_allocations ORDER BY ALL").rows()
    assert rows == [
        ("101", "n01", 0, "10:00:00", "10:05:00"), ("101", "n01", 1, "10:00:00", "10:05:00"),
        ("102", "n01", 2, "10:03:00", None), ("102", "n02", 0, "10:03:00", None), ("102", "n02", 2, "10:03:00", None),
        ("103", "n01", 0, "10:05:00", "10:08:30"), ("103", "n01", 1, "10:05:00", "10:08:30"),
        # no GresDetail: the node is claimed, its GPUs unknown (no step 101.batch, no pending 104)
        ("105", "n03", None, "10:00:00", "10:10:00"),
        ("106", "n09", 0, "10:00:00", "10:05:00"),
        ("107", "n04", None, "10:00:00", "10:10:00"),
    ]


# -- attribution and findings ----------------------------------------------------------------------

def test_attribution(result) -> None:
    rows = _by(result.table("attribution"), "attribution")
    # allocation: 101 (10), 103 (8), 102 (21), 105 (20: holds both of n03's GPUs) = 59 samples;
    # hpc_job label: n04/0 (10); pod label: n05/0 (10); unallocated: 120 - 79 = 41 (n01/0 and n01/1 at
    # 10:09, n01/2 before 10:03, n01/3, n02 before 10:03, n04/1, n06).
    assert {k: v["samples"] for k, v in rows.items()} == {
        "allocation": 59, "label (hpc_job)": 10, "label (pod)": 10, "unallocated": 41}
    assert rows["unallocated"]["gpu_hours"] == pytest.approx(41 * H)


def test_jobs(result) -> None:
    jobs = _by(result.table("jobs"), "job_id")
    assert set(jobs) == {"101", "102", "103", "105", "107", "ml/train-1"}
    # 101: n01/0 and n01/1 at 10:00..10:04 (5 + 5 samples); idle (< 5 %): 0, 0, 2 on GPU 0, all 5 on GPU 1.
    # The sample at 10:05 is 103's (half-open allocations: 101 ends at 10:05).
    j = jobs["101"]
    assert (j["allocated_gpu_hours"], j["idle_gpu_hours"]) == (pytest.approx(10 * H), pytest.approx(8 * H))
    assert j["idle_share"] == pytest.approx(0.8)
    assert j["accounting_gpu_hours"] == pytest.approx(2 * 5 / 60)
    assert (j["user"], j["vc"], j["gpus"], j["attribution"]) == ("alice", "p1", 2, "allocation")
    # 103: 10:05..10:08 (the 10:08 sample's period straddles the end at 10:08:30 and is 103's whole);
    # GPU 0: 90, 90, 4, 100 (1 idle); GPU 1: 4 idle. Accounting: 2 GPUs x 3.5 min.
    j = jobs["103"]
    assert (j["allocated_gpu_hours"], j["idle_gpu_hours"]) == (pytest.approx(8 * H), pytest.approx(5 * H))
    assert j["accounting_gpu_hours"] == pytest.approx(2 * 3.5 / 60)
    # SM activity of GPU 0: 101 (0 + 0 + 0.4 + 0.5 + 0) / 5; 103 (0.8 + 0.8 + 0.02 + 0.9) / 4;
    # idle by SM (< 0.05): 3 of 5 and 1 of 4.
    assert jobs["101"]["mean_sm_active"] == pytest.approx(0.18)
    assert jobs["103"]["mean_sm_active"] == pytest.approx(0.63)
    assert (jobs["101"]["sm_idle_share"], jobs["103"]["sm_idle_share"]) == (pytest.approx(0.6), pytest.approx(0.25))
    assert jobs["101"]["mean_tensor_active"] == pytest.approx(0.06)
    assert jobs["103"]["mean_tensor_active"] == pytest.approx(0.4)
    # Memory of GPU 0: 101 mean (1000 + 1000 + 20000 + 20000 + 1000) / 5, peak 20000; 103 mean 45000,
    # peak 60000 of an 80 GB A100 (80 x 1024 MiB).
    assert (jobs["101"]["mean_fb_used_mib"], jobs["101"]["peak_fb_used_mib"]) == (8600, 20000)
    assert (jobs["103"]["mean_fb_used_mib"], jobs["103"]["peak_fb_used_mib"]) == (45000, 60000)
    assert jobs["103"]["device_memory_mib"] == 81920
    assert jobs["103"]["peak_memory_share"] == pytest.approx(60000 / 81920)
    # 102: n01/2, n02/0, n02/2 from 10:03 (7 samples each); idle: n02/0. Running: held to the window's
    # end (10:10), 3 GPUs x 7 min.
    j = jobs["102"]
    assert (j["allocated_gpu_hours"], j["idle_gpu_hours"]) == (pytest.approx(21 * H), pytest.approx(7 * H))
    assert j["accounting_gpu_hours"] == pytest.approx(3 * 7 / 60)
    assert j["mean_sm_active"] is None  # no sm_active on its GPUs
    # 105 claims n03 without indices and holds 2 GPUs on 1 node: both GPUs n03 shows are its.
    assert (jobs["105"]["allocated_gpu_hours"], jobs["105"]["idle_gpu_hours"]) == (pytest.approx(20 * H), 0)
    # 107 by its hpc_job label (its allocation has unknown GPUs: 1 GPU of n04's 2).
    j = jobs["107"]
    assert (j["attribution"], j["allocated_gpu_hours"], j["idle_share"]) == (
        "label (hpc_job)", pytest.approx(10 * H), 1)
    # The pod: a job known only from the samples, grouped by its namespace, without user or accounting.
    j = jobs["ml/train-1"]
    assert (j["attribution"], j["cluster"], j["user"], j["vc"], j["accounting_gpu_hours"]) == (
        "label (pod)", None, None, "ml", None)
    assert (j["allocated_gpu_hours"], j["idle_share"]) == (pytest.approx(10 * H), 0.5)


def test_findings(result) -> None:
    found = {f.name: f for f in result.findings}
    # allocated: 10 + 8 + 21 + 20 + 10 + 10 = 79 samples; idle: 8 + 5 + 7 + 0 + 10 + 5 = 35.
    assert found["allocated_gpu_hours"].value == pytest.approx(79 * H)
    assert found["idle_gpu_hours"].value == pytest.approx(35 * H)
    assert found["idle_share"].value == pytest.approx(35 / 79)
    assert found["idle_share"].unit == "fraction" and found["idle_share"].basis == 79
    # accounting in the window [10:00, 10:10), GPUs x minutes: 101 2x5, 103 2x3.5, 102 3x7, 105 2x10, 107 1x10
    # (106 has no samples, so it is in no row; the pod has no accounting).
    assert found["accounting_gpu_hours"].value == pytest.approx((10 + 7 + 21 + 20 + 10) / 60)
    assert found["unallocated_share"].value == pytest.approx(41 / 120)
    # SM: the jobs' sm_active samples are n01/0 at 10:00..10:08 (9 samples); idle: 10:00, 10:01, 10:04, 10:07.
    assert (found["sm_idle_share"].value, found["sm_idle_share"].basis) == (pytest.approx(4 / 9), 9)
    assert found["mean_sm_active"].value == pytest.approx((0.4 + 0.5 + 0.8 + 0.8 + 0.02 + 0.9) / 9)
    assert found["mean_tensor_active"].value == pytest.approx((0.1 + 0.2 + 0.5 + 0.5 + 0.6) / 9)
    for finding in result.findings:
        assert get_definition(finding.definition)


def test_users_groups_and_tops(result) -> None:
    users = _by(result.table("users"), "user")
    assert users["alice"]["jobs"] == 2
    assert (users["alice"]["allocated_gpu_hours"], users["alice"]["idle_gpu_hours"]) == (
        pytest.approx(18 * H), pytest.approx(13 * H))
    assert users[None]["jobs"] == 1  # the pod
    groups = _by(result.table("groups"), "vc")
    # p1: 101, 103, 105 (38 samples, 13 idle); p2: 102, 107 (31, 17); ml: the pod (10, 5).
    assert {k: round(v["allocated_gpu_hours"] * 60) for k, v in groups.items()} == {"p1": 38, "p2": 31, "ml": 10}
    assert {k: round(v["idle_gpu_hours"] * 60) for k, v in groups.items()} == {"p1": 13, "p2": 17, "ml": 5}
    top = result.table("top_idle_jobs")["job_id"].to_list()
    # 107 (10 idle), 101 (8), 102 (7), then the tie at 5: the pod (10 allocated) before 103 (8); 105 (0)
    assert top == ["107", "101", "102", "ml/train-1", "103", "105"]
    assert result.table("top_idle_users")["user"].to_list() == ["alice", "dave", "bob", "carol"]


def test_idle_share_by_hour(result) -> None:
    hours = result.table("idle_share_by_hour").to_dicts()
    assert len(hours) == 1
    row = hours[0]
    assert row["idle_share"] == pytest.approx(35 / 79)
    assert row["unallocated_gpu_hours"] == pytest.approx(41 * H)
    # unallocated and idle: n01/0 and n01/1 at 10:09, n01/3 (10), n02/0 before 10:03 (3), n04/1 (10)
    assert row["unallocated_idle_gpu_hours"] == pytest.approx(25 * H)


def test_data_quality(result) -> None:
    quality = {row["check"].split(" ")[0]: row for row in result.table("data_quality").to_dicts()}
    # hosts: n06 only (n05 is named by its pod label).
    assert (quality["hosts"]["count"], quality["hosts"]["of"]) == (1, 6)
    # unallocated while a job holds GPUs of unknown index on the node: n04/1 (10; job 107 has no
    # GresDetail), of 41; n01's free GPUs beside the known GPUs of 101, 102 and 103 (3 + 10 + 1 + 1)
    # are simply unallocated, not a gap in the data.
    assert (quality["unallocated"]["count"], quality["unallocated"]["of"]) == (10, 41)
    # jobs with allocations but no sample: 106 on n09, of 101, 102, 103, 105, 106, 107.
    assert (quality["jobs"]["count"], quality["jobs"]["of"]) == (1, 6)
    assert quality["samples"]["count"] == 0
    checks = {c.name: c for c in result.checks}
    assert checks["claimed_unallocated"].flagged == 10
    assert "10 of 41" in next(f for f in result.findings if f.name == "idle_share").warning


def test_not_applicable_without_telemetry(tmp_path: Path) -> None:
    export = tmp_path / "sacct.txt"
    export.write_text(SACCT)
    import_dataset("plain", export, tmp_path / "home", preset="slurm", tz="UTC")
    module = run_analysis(tmp_path / "home", "plain", ["gpu_efficiency"]).module("gpu_efficiency")
    assert [(n.what, n.why) for n in module.not_applicable] == [("GPU efficiency from telemetry", NO_TELEMETRY)]
    assert not module.tables and not module.findings


def test_cli_analyze_and_report(cli, cluster_home: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    done = cli("analyze", "dataset", "mycluster", "--module", "gpu_efficiency", "--out", out,
               "--data-home", cluster_home)
    assert done.code == 0, done.err
    jobs = pl.read_parquet(out / "gpu_efficiency" / "jobs.parquet")
    assert jobs.filter(pl.col("job_id") == "101")["idle_share"].item() == pytest.approx(0.8)
    html = (out / "report.html").read_text()
    assert 'id="gpu_efficiency"' in html
    for definition in DEFINITIONS:
        assert definition.id in html, definition.id
