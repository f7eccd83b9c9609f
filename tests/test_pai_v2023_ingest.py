"""Alibaba GPU v2023 (`pai-v2023`): a hand-built release with hand-derived canonical numbers, bad
input through the CLI, and the whole real trace from ../shared/traces checked against the csv module."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest

from ddlx.datasets import catalog
from ddlx.datasets.ingest import ingest
from tests.conftest import FULL_TRACES, needs_shared_traces, real_file

REAL_DIR = real_file("alibaba-gpu-v2023")

NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model"
POD_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
              "creation_time,deletion_time,scheduled_time")

# Hand-derived facts (times in seconds; the default workload's last deletion, 10000, ends the trace):
#   nodes (all_node): CPU node + G2 x8 + T4 x2 + V100M16 x1 -> 4 nodes, 3 GPU nodes, 11 GPUs,
#     32 + 96 + 64 + 8 = 200 cores. gpu_node: the same three GPU nodes, renumbered.
#   a: 1 x 500 milli, Succeeded, created 100, scheduled 110, deleted 1100 -> completed, queue 10,
#      run 990, 0.5 GPU, shares a GPU, 4 cores, 8192 MiB = 8 GiB.
#   b: 2 GPUs, Failed, 200/260/700 -> failed, queue 60, run 440.
#   c: CPU pod, Running, deleted at 5000 (before the end) -> completed, queue 0, run 4700.
#   d: 1 GPU on T4, Running, deleted at 10000 = the last deletion -> running, no end, queue 50.
#   e: 250 milli, spec V100M16|V100M32 (two models -> no gpu_type), never scheduled -> pending.
#   f: 8 GPUs, spec G2|G2 (one model, repeated) -> gpu_type G2; failed, queue 10, run 290.
#   g: 2 GPUs within spec V100M16, whose only node has 1 GPU -> fits no node; failed, queue 20, run 480.
#   gpushare40 variant: pod-a deleted (50) before created (100), scheduled (60) before creation
#   and after deletion; pod-b never scheduled. multigpu20 variant: five columns only.
FIXTURE: dict[str, list[str]] = {
    "openb_node_list_all_node.csv": [
        NODE_HEADER,
        "node-0,32000,262144,0,",
        "node-1,96000,393216,8,G2",
        "node-2,64000,262144,2,T4",
        "node-3,8000,32768,1,V100M16",
    ],
    "openb_node_list_gpu_node.csv": [
        NODE_HEADER,
        "node-0,96000,393216,8,G2",
        "node-1,64000,262144,2,T4",
        "node-2,8000,32768,1,V100M16",
    ],
    "openb_pod_list_default.csv": [
        POD_HEADER,
        "pod-a,4000,8192,1,500,,LS,Succeeded,100,1100,110",
        "pod-b,16000,65536,2,1000,,BE,Failed,200,700,260",
        "pod-c,2000,4096,0,0,,BE,Running,300,5000,300",
        "pod-d,8000,16384,1,1000,T4,LS,Running,400,10000,450",
        "pod-e,4000,8192,1,250,V100M16|V100M32,LS,Pending,500,800,",
        "pod-f,96000,393216,8,1000,G2|G2,Guaranteed,Failed,600,900,610",
        "pod-g,4000,8192,2,1000,V100M16,Burstable,Failed,700,1200,720",
    ],
    "openb_pod_list_gpushare40.csv": [
        POD_HEADER,
        "pod-a,4000,8192,1,300,,LS,Running,100,50,60",
        "pod-b,2000,4096,0,0,,BE,Pending,100,200,",
    ],
    "openb_pod_list_multigpu20.csv": [
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli",
        "pod-a,4000,8192,1,500",
        "pod-x,16000,65536,8,1000",
    ],
}


def write_release(folder: Path, overrides: dict[str, list[str]] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, lines in {**FIXTURE, **(overrides or {})}.items():
        (folder / name).write_text("\n".join(lines) + "\n")
    return folder


@pytest.fixture
def release(tmp_path: Path) -> Path:
    return write_release(tmp_path / "release")


def _jobs(home: Path) -> dict[str, dict]:
    rows = catalog.query(home, """
        SELECT *, epoch(submit_time) AS submit_s, epoch(start_time) AS start_s, epoch(end_time) AS end_s
        FROM jobs ORDER BY job_id""").to_dicts()
    return {r["job_id"]: r for r in rows}


def test_canonical_jobs_match_hand_derived_numbers(release: Path, home: Path) -> None:
    result = ingest("pai-v2023", release, home)
    assert result.tables == {"pai_v2023_nodes": 4 + 3, "pai_v2023_pods": 7 + 2 + 2, "pai_v2023_jobs": 7}
    jobs = _jobs(home)
    assert sorted(jobs) == [f"pod-{c}" for c in "abcdefg"]
    a, b, c, d, e, f, g = (jobs[f"pod-{x}"] for x in "abcdefg")
    assert (a["submit_s"], a["start_s"], a["end_s"]) == (100, 110, 1100)
    assert (a["queue_s"], a["run_s"], a["num_gpus"], a["num_cpus"], a["mem_gb"]) == (10, 990, 0.5, 4.0, 8.0)
    assert (a["fractional_gpu"], a["gpu_type"], a["state"], a["raw_state"]) == (True, None, "completed", "Succeeded")
    assert (a["trace"], a["cluster"], a["workload"], a["user"], a["vc"]) == (
        "pai-v2023", "openb", "default", None, None)
    assert (a["num_instances"], a["num_tasks"], a["source_tz"]) == (1, 1, "UTC")
    assert (b["queue_s"], b["run_s"], b["num_gpus"], b["fractional_gpu"], b["state"]) == (60, 440, 2.0, False, "failed")
    assert (b["num_cpus"], b["mem_gb"]) == (16.0, 64.0)
    assert (c["queue_s"], c["run_s"], c["num_gpus"], c["state"], c["raw_state"]) == (
        0, 4700, 0.0, "completed", "Running")
    assert (d["queue_s"], d["run_s"], d["end_s"], d["state"], d["gpu_type"]) == (50, None, None, "running", "T4")
    assert (e["start_s"], e["end_s"], e["queue_s"], e["run_s"]) == (None, None, None, None)
    assert (e["state"], e["raw_state"], e["gpu_type"], e["num_gpus"], e["fractional_gpu"]) == (
        "pending", "Pending", None, 0.25, True)
    assert (f["gpu_type"], f["num_gpus"], f["queue_s"], f["run_s"], f["state"]) == ("G2", 8.0, 10, 290, "failed")
    assert (g["gpu_type"], g["queue_s"], g["run_s"]) == ("V100M16", 20, 480)
    assert sum(j["num_gpus"] for j in jobs.values()) == pytest.approx(0.5 + 2 + 0 + 1 + 0.25 + 8 + 2)


def test_a_running_pod_without_a_deletion_time_is_still_running(tmp_path: Path, home: Path) -> None:
    """A scheduled pod in phase Running with no deletion time had not ended when the trace was
    taken: `running`, with no end or run time (before, its phase mapped it to completed)."""
    pods = [*FIXTURE["openb_pod_list_default.csv"], "pod-h,2000,4096,1,1000,T4,LS,Running,900,,950"]
    ingest("pai-v2023", write_release(tmp_path / "release", {"openb_pod_list_default.csv": pods}), home)
    h = _jobs(home)["pod-h"]
    assert (h["state"], h["start_s"], h["end_s"], h["run_s"], h["queue_s"]) == ("running", 950, None, None, 50)


def test_pod_table_keeps_every_workload_with_unit_columns(release: Path, home: Path) -> None:
    ingest("pai-v2023", release, home)
    per_workload = catalog.query(home, "SELECT workload, count(*) AS n FROM pai_v2023_pods GROUP BY workload")
    assert dict(per_workload.iter_rows()) == {"default": 7, "gpushare40": 2, "multigpu20": 2}
    short = catalog.query(home, """
        SELECT name, gpus, shares_gpu, pod_phase, qos, gpu_spec, creation_time, scheduled_ts
        FROM pai_v2023_pods WHERE workload = 'multigpu20' ORDER BY name""").to_dicts()
    assert short == [
        {"name": "pod-a", "gpus": 0.5, "shares_gpu": True, "pod_phase": None, "qos": None, "gpu_spec": None,
         "creation_time": None, "scheduled_ts": None},
        {"name": "pod-x", "gpus": 8.0, "shares_gpu": False, "pod_phase": None, "qos": None, "gpu_spec": None,
         "creation_time": None, "scheduled_ts": None},
    ]
    nodes = catalog.query(home, """
        SELECT node_list, count(*) AS nodes, sum(gpu) AS gpus, sum(cpus) AS cores, sum(memory_gib) AS gib
        FROM pai_v2023_nodes GROUP BY node_list ORDER BY node_list""").to_dicts()
    assert nodes == [
        {"node_list": "all_node", "nodes": 4, "gpus": 11, "cores": 200.0, "gib": (262144 * 2 + 393216 + 32768) / 1024},
        {"node_list": "gpu_node", "nodes": 3, "gpus": 11, "cores": 168.0, "gib": (393216 + 262144 + 32768) / 1024},
    ]


def test_validation_report_and_figures(release: Path, home: Path) -> None:
    ingest("pai-v2023", release, home)
    manifest = catalog.read_registrations(home)["pai-v2023"].manifest
    found = {(c["table"], c["check"]): c["rows"] for c in manifest["validation"]}
    expected = {
        ("pai_v2023_pods", "pods without phase and times (multigpu lists: five columns only)"): 2,
        ("pai_v2023_pods", "pods never scheduled (empty scheduled_time)"): 2,  # default e, gpushare40 b
        ("pai_v2023_pods", "deletion before creation"): 1,
        ("pai_v2023_pods", "scheduled before creation"): 1,
        ("pai_v2023_pods", "scheduled after deletion"): 1,
        ("pai_v2023_pods", "pods whose GPU demand fits no node model (GPUs within gpu_spec)"): 1,  # g
        ("pai_v2023_pods", "pods that fit no single node (GPUs, CPU and memory together)"): 1,  # g
        ("pai_v2023_pods", "gpu_spec naming a model no node has"): 1,  # e: V100M32
        ("pai_v2023_pods", "never-scheduled pods whose phase is not Pending"): 0,
        ("pai_v2023_pods", "duplicate pod name within a workload"): 0,
        ("pai_v2023_nodes", "GPU nodes without a model"): 0,
        ("pai_v2023_jobs", "jobs never scheduled (pending)"): 1,
        ("pai_v2023_jobs", "jobs still running at the trace end (Running, deleted at the last deletion time or "
                           "not deleted)"): 1,
        ("pai_v2023_jobs", "jobs with negative run time"): 0,
    }
    for key, count in expected.items():
        assert found[key] == count, key
    figures = {f["figure"]: f["value"] for f in manifest["figures"]}
    assert (figures["nodes"], figures["GPU nodes"], figures["GPUs"], figures["CPU cores"]) == (4, 3, 11, 200)
    assert (figures["G2 GPUs"], figures["T4 GPUs"], figures["V100M16 GPUs"], figures["A10 GPUs"]) == (8, 2, 1, 0)
    assert figures["GPU-sharing pods of the default workload (num_gpu 1, gpu_milli < 1000)"] == 2  # a, e
    assert figures["span of the default workload (first creation to last deletion)"] == pytest.approx(
        (10000 - 100) / 86400)


def test_csv_subfolder_and_single_table(tmp_path: Path, home: Path) -> None:
    write_release(tmp_path / "clone" / "csv")
    result = ingest("pai-v2023", tmp_path / "clone", home, tables=["pai_v2023_nodes"])
    assert result.tables == {"pai_v2023_nodes": 7}


def _clean_error(result, *needles: str) -> str:
    assert result.code == 1
    lines = result.err.strip().splitlines()
    errors = [line for line in lines if line.startswith("Error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], result.err
    assert "Traceback" not in result.err
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])
    return errors[0]


@pytest.fixture(scope="module")
def good_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data home holding a good ingest of the fixture (failed ingests must leave it as it is)."""
    root = tmp_path_factory.mktemp("v2023-good")
    ingest("pai-v2023", write_release(root / "release"), root / "home")
    return root / "home"


@pytest.mark.parametrize("name, overrides, needles", [
    ("unknown phase", {"openb_pod_list_default.csv": FIXTURE["openb_pod_list_default.csv"] + [
        "pod-h,1000,1024,0,0,,LS,Evicted,1,2,1"]},
     ["openb_pod_list_default.csv", "line 9", "field 'pod_phase'", "'Evicted'",
      "expected one of Running, Succeeded, Failed, Pending"]),
    ("text in a number", {"openb_pod_list_gpushare40.csv": FIXTURE["openb_pod_list_gpushare40.csv"] + [
        "pod-c,1000,1024,1,half,,LS,Running,1,2,1"]},
     ["openb_pod_list_gpushare40.csv", "line 4", "field 'gpu_milli'", "'half'", "expected a whole number"]),
    ("wrong header", {"openb_node_list_gpu_node.csv": ["sn,cpu,memory_mib,gpu,model"]
                      + FIXTURE["openb_node_list_gpu_node.csv"][1:]},
     ["openb_node_list_gpu_node.csv", "line 1", "header is 'sn,cpu,memory_mib,gpu,model'",
      "expected 'sn,cpu_milli,memory_mib,gpu,model'"]),
    ("multigpu list with all eleven columns", {"openb_pod_list_multigpu20.csv": FIXTURE["openb_pod_list_default.csv"]},
     ["openb_pod_list_multigpu20.csv", "line 1", "expected 'name,cpu_milli,memory_mib,num_gpu,gpu_milli'"]),
    ("wrong field count", {"openb_node_list_all_node.csv": FIXTURE["openb_node_list_all_node.csv"] + ["node-4,8000"]},
     ["openb_node_list_all_node.csv", "line 6", "found 2 fields; expected 5"]),
])
def test_bad_input_is_one_error_line(cli, tmp_path: Path, good_home: Path, name: str,
                                     overrides: dict[str, list[str]], needles: list[str]) -> None:
    home = good_home
    before = (home / "catalog.duckdb").read_bytes()
    versions = sorted(p.name for p in (home / "store" / "pai-v2023").iterdir())
    bad = write_release(tmp_path / "bad", overrides)
    _clean_error(cli("datasets", "ingest", "pai-v2023", "--from", bad, "--data-home", home), *needles)
    assert (home / "catalog.duckdb").read_bytes() == before
    assert sorted(p.name for p in (home / "store" / "pai-v2023").iterdir()) == versions


def test_folder_without_pod_lists(cli, tmp_path: Path, home: Path) -> None:
    folder = tmp_path / "nodes-only"
    folder.mkdir()
    (folder / "openb_node_list_all_node.csv").write_text("\n".join(FIXTURE["openb_node_list_all_node.csv"]) + "\n")
    _clean_error(cli("datasets", "ingest", "pai-v2023", "--from", folder, "--data-home", home),
                 "missing table files", "openb_pod_list_*.csv")


# -- the real trace ------------------------------------------------------------------------------

def _read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def real_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("real-v2023")
    ingest("pai-v2023", REAL_DIR, home)
    return home


def test_real_nodes_and_gpus_by_model(real_home: Path) -> None:
    expected_nodes: Counter[tuple[str, str]] = Counter()
    expected_gpus: Counter[tuple[str, str]] = Counter()
    for node_list in ("all_node", "gpu_node"):
        for row in _read_csv(REAL_DIR / f"openb_node_list_{node_list}.csv"):
            key = (node_list, row["model"] or "")
            expected_nodes[key] += 1
            expected_gpus[key] += int(row["gpu"])
    found = catalog.query(real_home, """
        SELECT node_list, coalesce(model, '') AS model, count(*) AS nodes, sum(gpu) AS gpus
        FROM pai_v2023_nodes GROUP BY ALL""").to_dicts()
    assert {(r["node_list"], r["model"]): r["nodes"] for r in found} == dict(expected_nodes)
    assert {(r["node_list"], r["model"]): r["gpus"] for r in found} == dict(expected_gpus)
    figures = {f["figure"]: f["value"] for f in catalog.read_registrations(real_home)["pai-v2023"].manifest["figures"]}
    assert figures["GPUs"] == sum(v for (lst, _), v in expected_gpus.items() if lst == "all_node")
    assert figures["nodes"] == sum(v for (lst, _), v in expected_nodes.items() if lst == "all_node")
    for (node_list, model), gpus in expected_gpus.items():
        if node_list == "all_node" and model:
            assert figures[f"{model} GPUs"] == gpus, model


def test_real_default_pods_by_phase_and_gpu_sharing(real_home: Path) -> None:
    rows = _read_csv(REAL_DIR / "openb_pod_list_default.csv")
    phases = Counter(r["pod_phase"] for r in rows)
    sharing = sum(1 for r in rows if r["num_gpu"] == "1" and int(r["gpu_milli"]) < 1000)
    never_scheduled = sum(1 for r in rows if r["scheduled_time"] == "")
    last_deletion = max(int(r["deletion_time"]) for r in rows)
    running_at_end = sum(1 for r in rows if r["pod_phase"] == "Running" and r["scheduled_time"]
                         and int(r["deletion_time"]) == last_deletion)
    found = catalog.query(real_home, """
        SELECT pod_phase, count(*) AS n FROM pai_v2023_pods WHERE workload = 'default' GROUP BY pod_phase""")
    assert dict(found.iter_rows()) == dict(phases)
    jobs = catalog.query(real_home, """
        SELECT count(*) AS jobs, count(*) FILTER (WHERE fractional_gpu) AS sharing,
               count(*) FILTER (WHERE state = 'pending') AS pending,
               count(*) FILTER (WHERE state = 'running') AS running,
               count(*) FILTER (WHERE state = 'failed') AS failed
        FROM jobs WHERE trace = 'pai-v2023'""").to_dicts()[0]
    assert jobs == {"jobs": len(rows), "sharing": sharing, "pending": never_scheduled, "running": running_at_end,
                    "failed": sum(1 for r in rows if r["pod_phase"] == "Failed" and r["scheduled_time"])}


@needs_shared_traces
def test_real_pods_per_workload_and_checksums(real_home: Path) -> None:
    expected = {}
    for path in sorted(REAL_DIR.glob("openb_pod_list_*.csv")):
        expected[path.stem.removeprefix("openb_pod_list_")] = len(_read_csv(path))
    found = catalog.query(real_home, "SELECT workload, count(*) AS n FROM pai_v2023_pods GROUP BY workload")
    assert dict(found.iter_rows()) == expected
    assert len(expected) == 24
    inputs = catalog.read_registrations(real_home)["pai-v2023"].manifest["inputs"]
    files = [f for table in ("pai_v2023_nodes", "pai_v2023_pods") for f in inputs[table]["files"]]
    assert len(files) == 26 and all(f["matches_official_release"] is True for f in files)


@pytest.mark.skipif(FULL_TRACES, reason="the full trace is present: the test above reads it")
def test_real_excerpt_is_read_but_not_taken_for_the_release(real_home: Path) -> None:
    """The excerpt folder (two node lists, the default pods): every file read, rows as the csv module
    counts them, and none said to match the official release (their sha256 differ)."""
    expected = {path.name: len(_read_csv(path)) for path in sorted(REAL_DIR.glob("openb_*.csv"))}
    assert len(expected) == 3
    found = catalog.query(real_home, "SELECT workload, count(*) AS n FROM pai_v2023_pods GROUP BY workload")
    assert dict(found.iter_rows()) == {"default": expected["openb_pod_list_default.csv"]}
    inputs = catalog.read_registrations(real_home)["pai-v2023"].manifest["inputs"]
    files = [f for table in ("pai_v2023_nodes", "pai_v2023_pods") for f in inputs[table]["files"]]
    assert len(files) == 3 and all(f["matches_official_release"] is False for f in files)
