"""`ddlx datasets export --format openb`: the node and pod lists of Alibaba's GPU trace v2023, the
input of the FGD simulator.

A six-job table imported by hand, every value of every row worked out below from the rows,
independently of the exporter; the real v2023 release exported back to its own files; the
SYNTHETIC v2023 sample read with the simulator's parse rule (its `data/pod_csv_to_yaml.py`: pandas
`read_csv`, `"%d"` and `int()` on the request columns, gpu_spec NaN -> "" split on `|`, and its Go
side refusing a GPU pod unless num_gpu is 1 or gpu_milli is 1000).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from ddlx.datasets.export import export_dataset
from ddlx.datasets.export.model import ExportError
from ddlx.datasets.importers import import_dataset
from tests.conftest import SHARED_TRACES, needs_shared_traces

NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model"
POD_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
              "scheduled_time")
INTEGER_COLUMNS = ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
TIME_COLUMNS = ("creation_time", "deletion_time", "scheduled_time")

T0 = 1_700_000_000
ROWS = f"""job_id,gpus,cpus,mem,inst,gtype,state,submit,start,end
j1,0.5,4,8,1,T4,COMPLETED,{T0},{T0 + 10},{T0 + 110.4}
j2,16,400,64,2,V100,FAILED,{T0 + 20},{T0 + 80},{T0 + 680}
j3,3,,,2,,CANCELLED,{T0 + 30},,
j4,0,2,4,,,RUNNING,{T0 + 40.6},{T0 + 45},
j5,0.0004,1,1,1,T4,COMPLETED,{T0 + 50},{T0 + 50},{T0 + 60}
j6,,1,1,1,,COMPLETED,{T0 + 60},{T0 + 60},{T0 + 70}
"""
MAPPING = ("job_id=job_id,gpus=gpus,cpus=cpus,mem_gb=mem,instances=inst,gpu_type=gtype,state=state,submit=submit,"
           "start=start,end=end")

# Submission order j1..j5 (j6 has no GPUs: dropped); one pod per instance, named lab-pod-NNNN (the
# file `lab.csv` is the dataset's one cluster, `lab`). Times from T0, whole seconds:
#   j1: 0.5 GPU -> num_gpu 1, 500 milli; 4 cores, 8 GiB; created 0, scheduled 10, deleted 10 + 100 (100.4).
#   j2: 16 GPUs / 2 pods -> 8 GPUs each; 400 / 2 = 200 cores, 64 / 2 = 32 GiB each; 20, 80, 680; V100 is no
#       node model -> no gpu_spec.
#   j3: 3 GPUs / 2 pods = 1.5 -> 2 whole GPUs each; no CPU or memory -> 0; never started -> Pending, no times.
#   j4: CPU only, no instance count -> one pod; created 40.6 -> 41, queued 4.4 -> 4: scheduled 45; running.
#   j5: 0.0004 GPU -> 0.4 milli -> at least 1; 1 core, 1 GiB; 50, 50, 60.
EXPECTED_PODS = [
    ["lab-pod-0000", "4000", "8192", "1", "500", "T4", "", "Succeeded", "0", "110", "10"],
    ["lab-pod-0001", "200000", "32768", "8", "1000", "", "", "Failed", "20", "680", "80"],
    ["lab-pod-0002", "200000", "32768", "8", "1000", "", "", "Failed", "20", "680", "80"],
    ["lab-pod-0003", "0", "0", "2", "1000", "", "", "Pending", "30", "", ""],
    ["lab-pod-0004", "0", "0", "2", "1000", "", "", "Pending", "30", "", ""],
    ["lab-pod-0005", "2000", "4096", "0", "0", "", "", "Running", "41", "", "45"],
    ["lab-pod-0006", "1000", "1024", "1", "1", "T4", "", "Succeeded", "50", "60", "50"],
]
# --option gpus=T4:10,A100:8 -> T4 nodes of 8 and 2 GPUs, one A100 node of 8; CPU the largest pod's
# 200 cores (above the simulator's 128-core spec), memory the 1 TiB spec (above every pod's).
EXPECTED_NODES = [
    ["lab-node-0000", "200000", "1048576", "8", "T4"],
    ["lab-node-0001", "200000", "1048576", "2", "T4"],
    ["lab-node-0002", "200000", "1048576", "8", "A100"],
]


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    (tmp_path / "lab.csv").write_text(ROWS)
    import_dataset("lab", tmp_path / "lab.csv", tmp_path / "home", mapping=MAPPING)
    return tmp_path / "home"


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as handle:
        return list(csv.reader(handle))[1:]


def _simulator_reads(pod_path: Path, node_path: Path) -> list[dict]:
    """The pods as the simulator takes them, by its parse rule; asserts every rule it applies."""
    import pandas as pd

    pods = pd.read_csv(pod_path)
    nodes = pd.read_csv(node_path)
    assert list(nodes.columns) == NODE_HEADER.split(",") and list(pods.columns) == POD_HEADER.split(",")
    for column in INTEGER_COLUMNS:  # integers, no empty value: "%d" and int() would fail on NaN
        assert str(pods[column].dtype) == "int64", column
    for column in ("cpu_milli", "memory_mib", "gpu"):
        assert str(nodes[column].dtype) == "int64", column
    models = {str(m) for m in nodes["model"].dropna()}
    read = []
    for _, row in pods.iterrows():
        count, milli = int(row["num_gpu"]), int(row["gpu_milli"])
        spec = [m for m in ("" if pd.isna(row["gpu_spec"]) else str(row["gpu_spec"])).split("|") if m]
        if count:
            assert 0 < milli <= 1000 and (count == 1 or milli == 1000), row["name"]
            assert all(m in models for m in spec), row["name"]
        read.append({"name": row["name"], "cpu": "%dm" % row["cpu_milli"], "memory": "%dMi" % row["memory_mib"],
                     "gpu_count": count, "gpu_milli": milli if count else 0, "gpu_spec": "|".join(spec)})
    assert len({p["name"] for p in read}) == len(read) and nodes["sn"].is_unique
    return read


def _no_float_text(path: Path, columns: tuple[str, ...]) -> None:
    """Every value of `columns` is digits (times may be empty): no `8.0`, no `nan`."""
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            for column in columns:
                value = row[column]
                assert value.isdigit() or (column in TIME_COLUMNS and value == ""), (column, value)


def test_every_value_of_every_row(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "lab-pods.csv"
    result = export_dataset(home, "lab", "openb", out, options={"gpus": "T4:10,A100:8"})
    nodes, ids = tmp_path / "lab-pods.nodes.csv", tmp_path / "lab-pods.ids.csv"
    assert result.rows == 7 and result.extra_files == [nodes, ids]
    assert _lines(out)[0] == POD_HEADER and _lines(nodes)[0] == NODE_HEADER
    assert _rows(out) == EXPECTED_PODS
    assert _rows(nodes) == EXPECTED_NODES
    assert _rows(ids) == [["lab-pod-0000", "lab", "j1", "0"], ["lab-pod-0001", "lab", "j2", "0"],
                          ["lab-pod-0002", "lab", "j2", "1"], ["lab-pod-0003", "lab", "j3", "0"],
                          ["lab-pod-0004", "lab", "j3", "1"], ["lab-pod-0005", "lab", "j4", "0"],
                          ["lab-pod-0006", "lab", "j5", "0"]]
    _no_float_text(out, INTEGER_COLUMNS + TIME_COLUMNS)
    _no_float_text(nodes, ("cpu_milli", "memory_mib", "gpu"))
    read = _simulator_reads(out, nodes)
    assert read[0] == {"name": "lab-pod-0000", "cpu": "4000m", "memory": "8192Mi", "gpu_count": 1,
                       "gpu_milli": 500, "gpu_spec": "T4"}


def test_the_loss_report_counts_every_fill(home: Path, tmp_path: Path) -> None:
    result = export_dataset(home, "lab", "openb", tmp_path / "x.csv", options={"gpus": "T4:10,A100:8"})
    filled = dict(result.loss.filled)
    assert result.loss.dropped == {"GPUs unknown (num_gpus is NULL): a pod must state its GPUs": 1}
    assert "1 jobs without a number of instances" in filled["pods"]  # j4
    assert "(2 pods)" in filled["num_gpu, gpu_milli"] and "2 pods asking more than one GPU" in filled[
        "num_gpu, gpu_milli"]  # j1 and j5 below one GPU; the two pods of j3 rounded up
    assert "0 (no request) for 2 pods" in filled["cpu_milli"] and "for 2 pods" in filled["memory_mib"]
    assert "empty for 2 pods never started" in filled["scheduled_time, deletion_time"]
    assert "empty for 3 pods without a run time" in filled["scheduled_time, deletion_time"]
    assert "(3 nodes)" in filled["node list"] and "qos" in filled
    document = json.loads(result.sidecar.read_text())
    assert {r["path"] for r in document["resources"]} == {"x.csv", "x.nodes.csv", "x.ids.csv"}


def test_node_rules_refusal_and_a_plain_gpu_count(home: Path, tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="documents no nodes.*--option gpus=N"):
        export_dataset(home, "lab", "openb", tmp_path / "x.csv")
    for bad in ("abc", "T4:0", "-8", "T4|A100:8"):
        with pytest.raises(ExportError, match="--option gpus="):
            export_dataset(home, "lab", "openb", tmp_path / "x.csv", options={"gpus": bad})
    # 17 GPUs without a model: 8 + 8 + 1; no node model, so no pod keeps a gpu_spec.
    export_dataset(home, "lab", "openb", tmp_path / "openb_pod_list_lab.csv", options={"gpus": "17"})
    nodes = tmp_path / "openb_node_list_lab.csv"  # the release's naming, beside the pod list
    assert [(r[3], r[4]) for r in _rows(nodes)] == [("8", ""), ("8", ""), ("1", "")]
    assert (tmp_path / "openb_pod_ids_lab.csv").exists()
    assert [r[5] for r in _rows(tmp_path / "openb_pod_list_lab.csv")] == [""] * 7


def test_nodes_built_from_a_documented_gpu_capacity(tmp_path: Path) -> None:
    from ddlx.analysis.context import open_trace
    from ddlx.datasets.synthetic import home_with_jobs_or_sample

    home = tmp_path / "home"
    result = export_dataset(home, "pai", "openb", tmp_path / "pai.csv", use_sample=True)
    with open_trace(home_with_jobs_or_sample(home, "pai", True), "pai") as ctx:
        capacity = {r["gpu_type"]: r["gpus"] for r in ctx.query("SELECT gpu_type, gpus FROM gpu_capacity").to_dicts()}
    nodes = _rows(tmp_path / "pai.nodes.csv")
    for model, gpus in capacity.items():  # 8-GPU nodes, the last holding the remainder
        sizes = [int(n[3]) for n in nodes if n[4] == (model or "")]
        assert sizes == [8] * (gpus // 8) + ([gpus % 8] if gpus % 8 else []), model
    assert len(nodes) == sum(math.ceil(g / 8) for g in capacity.values())
    read = _simulator_reads(tmp_path / "pai.csv", tmp_path / "pai.nodes.csv")
    assert result.rows == len(read) and result.synthetic


def test_synthetic_v2023_sample_loads_as_the_simulator_reads_it(tmp_path: Path) -> None:
    out = tmp_path / "openb_pod_list_default.csv"
    result = export_dataset(tmp_path / "home", "pai-v2023", "openb", out, use_sample=True)
    nodes = tmp_path / "openb_node_list_default.csv"
    assert result.synthetic and result.extra_files == [nodes]
    read = _simulator_reads(out, nodes)
    names = [p["name"] for p in read]
    assert names == sorted(names) and all(n.startswith("openb-pod-") for n in names)
    node_names = [r[0] for r in _rows(nodes)]
    assert node_names == [f"openb-node-{i:04d}" for i in range(len(node_names))]
    assert all(int(r[3]) > 0 for r in _rows(nodes))  # GPU nodes only
    _no_float_text(out, INTEGER_COLUMNS + TIME_COLUMNS)
    with open(out, newline="") as handle:
        for row in csv.DictReader(handle):
            assert row["pod_phase"] in ("Pending", "Running", "Succeeded", "Failed")
            assert (row["scheduled_time"] == "") == (row["pod_phase"] == "Pending")


@needs_shared_traces
def test_the_real_release_comes_back_row_for_row(tmp_path: Path) -> None:
    from ddlx.datasets.ingest import ingest

    release = SHARED_TRACES / "alibaba-gpu-v2023"
    ingest("pai-v2023", release, tmp_path / "home")
    out = tmp_path / "openb_pod_list_default.csv"
    result = export_dataset(tmp_path / "home", "pai-v2023", "openb", out)
    nodes = tmp_path / "openb_node_list_default.csv"
    for written, original in ((out, release / "openb_pod_list_default.csv"),
                              (nodes, release / "openb_node_list_gpu_node.csv")):
        mine, theirs = _lines(written), _lines(original)
        assert len(mine) == len(theirs)
        for number, (a, b) in enumerate(zip(mine, theirs)):
            assert a == b, (written.name, number, a, b)
    assert result.rows == 8152
    # The only loss: the all_node list's CPU-only nodes, which the GPU node list leaves out.
    all_nodes = _rows(release / "openb_node_list_all_node.csv")
    assert result.loss.dropped == {"nodes without GPUs (the node list the simulator runs with holds GPU nodes only)":
                                   sum(1 for r in all_nodes if r[3] == "0")}
    assert len(_simulator_reads(out, nodes)) == 8152
