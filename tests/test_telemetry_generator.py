"""The SYNTHETIC cluster generator (`ddlx datasets synth-cluster`): its sacct export imports, its
OpenMetrics parses, and the ground truth in plan.json equals sums recomputed here from the files,
with parsers written in this test (not the generator's or the importer's)."""

from __future__ import annotations

import csv
import json
import re
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import polars as pl
import pytest

from ddlx.datasets import catalog
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.telemetry.generator import ClusterSpec, write_synthetic_cluster
from tests.conftest import assert_clean_failure

TZ = "Europe/Berlin"
STEP = 60
SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)\{([^}]*)\} (\S+) (\d+\.\d{3})$')
LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="([^"]*)"')
METRICS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
           "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE")


def _epoch(text: str | None) -> int | None:
    return None if text is None else int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


def _read_om(path: Path) -> tuple[list[str], dict[str, list[tuple[dict[str, str], float, int]]]]:
    """The comment lines and the samples by metric: (labels, value, Unix seconds)."""
    comments: list[str] = []
    samples: dict[str, list[tuple[dict[str, str], float, int]]] = defaultdict(list)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[-1] == "# EOF" and lines.count("# EOF") == 1
    current = None
    for line in lines[:-1]:
        if line.startswith("#"):
            comments.append(line)
            if line.startswith("# TYPE "):
                current = line.split()[2]
                assert line == f"# TYPE {current} gauge"
            continue
        match = SAMPLE.match(line)
        assert match, line
        name, body, value, ts = match.groups()
        assert name == current, "a metric's samples follow its TYPE line"
        labels = dict(LABEL.findall(body))
        assert list(labels) == sorted(labels), "labels sorted by name, as promtool writes them"
        assert ts.endswith(".000")
        samples[name].append((labels, float(value), int(ts[:-4])))
    return comments, samples


def _hosts(expr: str) -> list[str]:
    """Expand a Slurm hostlist: gpu[001-002,005] or gpu003."""
    match = re.fullmatch(r"([a-z]+)\[([0-9,-]+)\]", expr)
    if not match:
        return [expr]
    prefix, ranges = match.groups()
    hosts = []
    for part in ranges.split(","):
        a, _, b = part.partition("-")
        width = len(a)
        hosts += [f"{prefix}{i:0{width}d}" for i in range(int(a), int(b or a) + 1)]
    return hosts


def _indices(detail: str) -> list[int]:
    """gpu:a100:3(IDX:0,2-3) -> [0, 2, 3], checking the count."""
    match = re.fullmatch(r"gpu:a100:(\d+)\(IDX:([0-9,-]+)\)", detail)
    assert match, detail
    out: list[int] = []
    for part in match.group(2).split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    assert len(out) == int(match.group(1))
    return out


def _sacct(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="|"))


@pytest.fixture(scope="module")
def slurm(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("slurm")
    write_synthetic_cluster(ClusterSpec(gpus=16, days=1, step=STEP, seed=7, tz=TZ), out)
    return out


@pytest.fixture(scope="module")
def parsed(slurm):
    plan = json.loads((slurm / "plan.json").read_text())
    comments, samples = _read_om(slurm / "dcgm.om")
    return plan, comments, samples


def test_files_are_labelled_synthetic(slurm, parsed):
    plan, comments, _ = parsed
    assert sorted(p.name for p in slurm.iterdir()) == ["SYNTHETIC.json", "SYNTHETIC.txt", "dcgm.om", "plan.json",
                                                       "sacct.txt"]
    assert "SYNTHETIC" in (slurm / "SYNTHETIC.txt").read_text()
    assert json.loads((slurm / "SYNTHETIC.json").read_text())["synthetic"] is True  # the marker import reads
    assert plan["synthetic"] is True and "SYNTHETIC" in plan["note"]
    helps = [c for c in comments if c.startswith("# HELP ")]
    assert len(helps) == 6 and all("SYNTHETIC" in h for h in helps)
    assert {row["Cluster"] for row in _sacct(slurm / "sacct.txt")} == {"synthetic"}


def test_openmetrics_has_every_gpu_every_step(parsed):
    plan, _, samples = parsed
    start, end = _epoch(plan["window"]["start"]), _epoch(plan["window"]["end"])
    # 2024-03-01 00:00 in Berlin (UTC+1) is 2024-02-29 23:00 UTC; one day of 60 s steps
    assert (start, end) == (1709247600, 1709247600 + 86400)
    expected = set(range(start, end, STEP))
    assert set(samples) == set(METRICS)
    for metric in METRICS:
        by_gpu: dict[tuple[str, str], list[int]] = defaultdict(list)
        for labels, _, t in samples[metric]:
            assert labels["modelName"] == "NVIDIA A100-SXM4-80GB" and labels["device"] == f"nvidia{labels['gpu']}"
            assert labels["DCGM_FI_DRIVER_VERSION"] and labels["UUID"].startswith("GPU-")
            by_gpu[(labels["Hostname"], labels["gpu"])].append(t)
        assert len(by_gpu) == 16
        assert all(sorted(ts) == sorted(expected) and len(ts) == 1440 for ts in by_gpu.values())


def test_job_labels_exactly_while_allocated(slurm, parsed):
    plan, _, samples = parsed
    start, end = _epoch(plan["window"]["start"]), _epoch(plan["window"]["end"])
    holder: dict[tuple[str, str, int], str] = {}
    for job in plan["jobs"]:
        if job["start"] is None:
            continue
        s, e = _epoch(job["start"]), _epoch(job["end"]) or end
        for alloc in job["allocations"]:
            for gpu in alloc["gpus"]:
                for t in range(start, end, STEP):
                    if s <= t < e:
                        key = (alloc["host"], str(gpu), t)
                        assert key not in holder, f"{key} held by {holder.get(key)} and {job['job_id']}"
                        holder[key] = job["job_id"]
    assert holder, "some GPU is allocated"
    for metric in METRICS:
        labelled = {(lab["Hostname"], lab["gpu"], t): lab.get("hpc_job") for lab, _, t in samples[metric]}
        assert {k: v for k, v in labelled.items() if v is not None} == holder


def test_plan_sums_equal_samples(parsed):
    plan, _, samples = parsed
    step = plan["window"]["step_s"]
    util = Counter()
    idle = Counter()
    idle_sm = Counter()
    hourly_alloc = Counter()
    hourly_idle = Counter()
    start = _epoch(plan["window"]["start"])
    for labels, value, t in samples["DCGM_FI_DEV_GPU_UTIL"]:
        job = labels.get("hpc_job")
        if job is None:
            assert value == 0  # an unallocated GPU is idle
            continue
        util[job] += 1
        hourly_alloc[(t - start) // 3600] += 1
        if value < 5:
            idle[job] += 1
            hourly_idle[(t - start) // 3600] += 1
    for labels, value, _ in samples["DCGM_FI_PROF_SM_ACTIVE"]:
        if labels.get("hpc_job") and value < 0.05:
            idle_sm[labels["hpc_job"]] += 1
    jobs = {j["job_id"]: j for j in plan["jobs"]}
    for job_id, job in jobs.items():
        assert job["alloc_gpu_s"] == step * util[job_id], job_id
        assert job["idle_gpu_s"] == step * idle[job_id], job_id
        assert job["idle_sm_gpu_s"] == step * idle_sm[job_id], job_id
    # every job type the operator looks for is present, and idle time is a real share
    assert any(j["alloc_gpu_s"] and j["idle_gpu_s"] > 0.5 * j["alloc_gpu_s"] for j in jobs.values())
    assert any(j["alloc_gpu_s"] and j["idle_gpu_s"] < 0.2 * j["alloc_gpu_s"] for j in jobs.values())
    fleet = plan["fleet"]
    assert fleet["alloc_gpu_s"] == step * sum(util.values())
    assert fleet["idle_alloc_gpu_s"] == step * sum(idle.values())
    assert fleet["total_gpu_s"] == 16 * 86400
    assert [h["alloc_gpu_s"] for h in fleet["hourly"]] == [step * hourly_alloc[h] for h in range(24)]
    assert [h["idle_alloc_gpu_s"] for h in fleet["hourly"]] == [step * hourly_idle[h] for h in range(24)]
    by_user = Counter()
    for job in jobs.values():
        by_user[job["user"]] += job["idle_gpu_s"]
    assert {u: g["idle_gpu_s"] for u, g in plan["by_user"].items()} == dict(by_user)
    # the accounting figure: GPUs x seconds of [start, end) in the window, within a step per GPU
    for job in jobs.values():
        if job["start"] is not None:
            lo = max(_epoch(job["start"]), start)
            hi = min(_epoch(job["end"]) or start + 86400, start + 86400)
            assert job["alloc_gpu_s_exact"] == job["gpus"] * max(0, hi - lo)
            assert abs(job["alloc_gpu_s_exact"] - job["alloc_gpu_s"]) < job["gpus"] * step


def test_sacct_matches_plan_and_has_steps_and_states(slurm, parsed):
    plan, _, _ = parsed
    rows = _sacct(slurm / "sacct.txt")
    zone = ZoneInfo(TZ)
    jobs = {j["job_id"]: j for j in plan["jobs"]}
    main = [r for r in rows if "." not in r["JobID"]]
    steps = [r for r in rows if "." in r["JobID"]]
    assert {r["JobID"] for r in main} == set(jobs)
    assert {r["JobID"].split(".")[1] for r in steps} == {"batch", "extern", "0"}
    states = Counter(r["State"].split()[0] for r in main)
    assert states["RUNNING"] > 0 and states["PENDING"] > 0 and states["COMPLETED"] > 0
    assert any(r["Start"] == "None" for r in main), "a job cancelled while pending"
    for row in main:
        job = jobs[row["JobID"]]
        if row["State"] == "PENDING":
            assert (row["Start"], row["End"], row["NodeList"], row["GresDetail"]) == \
                ("Unknown", "Unknown", "None assigned", "")
            continue
        if row["Start"] == "None":  # cancelled while pending
            assert row["State"].startswith("CANCELLED by ")
            continue
        local = datetime.fromisoformat(row["Start"]).replace(tzinfo=zone)
        assert int(local.timestamp()) == _epoch(job["start"])
        hosts = _hosts(row["NodeList"])
        details = row["GresDetail"].split(";")
        assert hosts == [a["host"] for a in job["allocations"]]
        assert [_indices(d) for d in details] == [a["gpus"] for a in job["allocations"]]
        assert sum(len(_indices(d)) for d in details) == job["gpus"]
        assert f"gres/gpu={job['gpus']}," in row["AllocTRES"]
        assert (row["End"] == "Unknown") == (row["State"] == "RUNNING")


def test_sacct_imports_with_the_slurm_preset(slurm, parsed, tmp_path):
    plan, _, _ = parsed
    result = import_dataset("synthc", slurm / "sacct.txt", tmp_path, preset="slurm", tz=TZ)
    jobs = {j["job_id"]: j for j in plan["jobs"]}
    assert result.tables["synthc_jobs"] == len(jobs)
    rows = catalog.query(tmp_path, "SELECT job_id, num_gpus, epoch(start_time) AS s, epoch(end_time) AS e, state, "
                                   "vc, \"user\" FROM synthc_jobs").to_dicts()
    for row in rows:
        job = jobs[row["job_id"]]
        assert row["num_gpus"] == job["gpus"] and row["vc"] == job["partition"] and row["user"] == job["user"]
        if job["state"].startswith("CANCELLED") and job["start"] is None:
            assert row["s"] is None
        else:
            assert row["s"] == _epoch(job["start"]) and row["e"] == _epoch(job["end"])
    assert Counter(r["state"] for r in rows)["running"] == sum(j["state"] == "RUNNING" for j in jobs.values())


def test_same_seed_same_bytes_other_seed_other_plan(slurm, tmp_path):
    again = tmp_path / "again"
    write_synthetic_cluster(ClusterSpec(gpus=16, days=1, step=STEP, seed=7, tz=TZ), again)
    for name in ("sacct.txt", "dcgm.om", "plan.json", "SYNTHETIC.txt"):
        assert (again / name).read_bytes() == (slurm / name).read_bytes(), name
    other = tmp_path / "other"
    write_synthetic_cluster(ClusterSpec(gpus=16, days=1, step=STEP, seed=8, tz=TZ), other)
    assert (other / "sacct.txt").read_bytes() != (slurm / "sacct.txt").read_bytes()


def test_kubernetes_pods_and_parquet_dump(tmp_path):
    out = tmp_path / "k8s"
    write_synthetic_cluster(ClusterSpec(gpus=8, days=1, step=300, seed=2, scheduler="kubernetes",
                                        format="parquet", fields=("DCGM_FI_DEV_GPU_UTIL",)), out)
    assert sorted(p.name for p in out.iterdir()) == ["SYNTHETIC.json", "SYNTHETIC.txt", "dcgm.parquet", "plan.json",
                                                     "pods.csv"]
    pods = pl.read_csv(out / "pods.csv", infer_schema=False)
    assert pods.columns == ["namespace", "pod", "node", "gpus", "start", "end", "state"]
    assert set(pods["state"]) <= {"Pending", "Running", "Succeeded", "Failed"}
    dump = pl.read_parquet(out / "dcgm.parquet")
    assert dump.columns == ["time", "metric", "value", "Hostname", "gpu", "UUID", "modelName", "pod", "namespace",
                            "container", "hpc_job"]
    assert dump.height == 8 * 288 and dump["hpc_job"].null_count() == dump.height
    plan = json.loads((out / "plan.json").read_text())
    per_pod = dump.filter(pl.col("pod").is_not_null()).group_by("pod", "namespace").agg(
        n=pl.len(), idle=(pl.col("value") < 5).sum())
    got = {(r["pod"], r["namespace"]): (300 * r["n"], 300 * r["idle"]) for r in per_pod.to_dicts()}
    want = {(a["pod"], a["namespace"]): (a["alloc_gpu_s"], a["idle_gpu_s"])
            for j in plan["jobs"] for a in j["allocations"] if a["alloc_gpu_s"]}
    assert got == want and want
    started = pods.filter(pl.col("start").is_not_null())
    assert {p for p, _ in want} <= set(started["pod"])
    for row in started.to_dicts():  # a pod's GPUs on its node equal the plan's
        alloc = [a for j in plan["jobs"] for a in j["allocations"] if a["pod"] == row["pod"]]
        assert [a["host"] for a in alloc] == [row["node"]] and len(alloc[0]["gpus"]) == int(row["gpus"])


def test_no_job_label_and_bad_options(cli, tmp_path):
    out = tmp_path / "plain"
    result = cli("datasets", "synth-cluster", "--gpus", "8", "--days", "1", "--step", "600", "--no-job-label",
                 "--fields", "gpu_util", "--out", str(out))
    assert result.code == 0, result.err
    assert "dcgm.om" in result.out and "bytes" in result.out
    _, samples = _read_om(out / "dcgm.om")
    assert list(samples) == ["DCGM_FI_DEV_GPU_UTIL"] and len(samples["DCGM_FI_DEV_GPU_UTIL"]) == 8 * 144
    assert all("hpc_job" not in labels for labels, _, _ in samples["DCGM_FI_DEV_GPU_UTIL"])
    bad = tmp_path / "bad"
    assert_clean_failure(cli("datasets", "synth-cluster", "--gpus", "10", "--days", "1", "--out", str(bad)),
                         "--gpus", "multiple", code=2)
    assert_clean_failure(cli("datasets", "synth-cluster", "--gpus", "8", "--days", "1", "--step", "7",
                             "--out", str(bad)), "--step", code=2)
    assert_clean_failure(cli("datasets", "synth-cluster", "--gpus", "8", "--days", "1", "--fields", "temp",
                             "--out", str(bad)), "temp", code=2)
    assert not bad.exists()
