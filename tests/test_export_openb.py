"""`ddlx datasets export --format openb`: the node and pod lists of Alibaba's GPU trace v2023, the
input of the FGD simulator, and the node list as the simulator's node YAML.

A six-job table imported by hand, every value of every row worked out below from the rows,
independently of the exporter; the real v2023 release exported back to its own files (and the node
YAML to the simulator repository's own `openb_node_list_gpu_node.yaml`); the SYNTHETIC v2023 sample
read with the simulator's parse rule (its `data/pod_csv_to_yaml.py`: pandas `read_csv`, `"%d"` and
`int()` on the request columns, gpu_spec NaN -> "" split on `|`, and its Go side refusing a GPU pod
unless num_gpu is 1 or gpu_milli is 1000). The node YAML is read as the simulator reads a cluster
folder: every `.yaml` file, split on `---` lines by Helm's rule, each document decoded by a YAML 1.1
reader (PyYAML, as Kubernetes' decoder types scalars), `kind: Node` documents taken as nodes.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import re
from pathlib import Path

import pytest

from ddlx.datasets.importers import import_dataset
from ddlx.formats.export import export_dataset
from ddlx.formats.model import ExportError
from ddlx.formats.openb.writer import unplaceable_pods
from tests.conftest import FULL_TRACES, assert_clean_failure, real_file

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
#   j3: 3 GPUs / 2 pods = 1.5 -> 2 whole GPUs each; no CPU -> the nominal 100 milli, no memory -> 0; never
#       started -> Pending, no times.
#   j4: CPU only, no instance count -> one pod; created 40.6 -> 41, queued 4.4 -> 4: scheduled 45; running.
#   j5: 0.0004 GPU -> 0.4 milli -> at least 1; 1 core, 1 GiB; 50, 50, 60.
EXPECTED_PODS = [
    ["lab-pod-0000", "4000", "8192", "1", "500", "T4", "", "Succeeded", "0", "110", "10"],
    ["lab-pod-0001", "200000", "32768", "8", "1000", "", "", "Failed", "20", "680", "80"],
    ["lab-pod-0002", "200000", "32768", "8", "1000", "", "", "Failed", "20", "680", "80"],
    ["lab-pod-0003", "100", "0", "2", "1000", "", "", "Pending", "30", "", ""],
    ["lab-pod-0004", "100", "0", "2", "1000", "", "", "Pending", "30", "", ""],
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


#: The first node of `--option gpus=T4:10,3090:2,on:1`, written out by hand in the layout of the simulator
#: repository's own data/node_yaml/openb_node_list_gpu_node.yaml (CPU: the largest pod's 200 cores).
FIRST_NODE_DOCUMENT = """apiVersion: v1
kind: Node
metadata:
  labels:
    alibabacloud.com/gpu-card-model: T4
    beta.kubernetes.io/os: linux
    kubernetes.io/hostname: lab-node-0000
    kubernetes.io/os: linux
  name: lab-node-0000
status:
  allocatable:
    alibabacloud.com/gpu-count: '8'
    alibabacloud.com/gpu-milli: '8000'
    cpu: 200000m
    memory: 1048576Mi
    pods: '1001'
  capacity:
    alibabacloud.com/gpu-count: '8'
    alibabacloud.com/gpu-milli: '8000'
    cpu: 200000m
    memory: 1048576Mi
    pods: '1001'
"""
#: sha256 of data/node_yaml/openb_node_list_gpu_node.yaml in hkust-adsl/kubernetes-scheduler-simulator at
#: 8f3d641 (the owners' node YAML of the release's GPU node list, 1,213 nodes), computed from that file.
OWNERS_NODE_YAML_SHA256 = "b76abef147312cd39be841490c23526b1324350228617707b13976f69c86cd08"
#: Helm's `SplitManifests` separator, on which the simulator's `DecodeYamlContent` splits a file.
DOCUMENT_SEPARATOR = re.compile(r"(?:^|\s*\n)---\s*")


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


def _simulator_nodes(folder: Path) -> list[dict]:
    """The nodes the simulator reads from the cluster folder `folder`: every `.yaml`/`.yml` file in it or
    below, split into documents by Helm's rule, each decoded by a YAML 1.1 reader; of a `kind: Node`
    document its name, the GPU model label (absent: none), `status.capacity` GPU count and milli, CPU
    and memory. Asserts what the Go decoder needs: labels are strings (`map[string]string`: a number,
    boolean or null there fails to decode), allocatable equals capacity, milli = GPUs x 1000."""
    import yaml

    nodes = []
    for path in sorted(p for p in folder.rglob("*") if p.suffix in (".yaml", ".yml")):
        for text in DOCUMENT_SEPARATOR.split(path.read_text().strip()):
            document = yaml.safe_load(text.strip()) if text else None
            if not document or document["kind"] != "Node":
                continue
            assert document["apiVersion"] == "v1"
            name, labels = document["metadata"]["name"], document["metadata"]["labels"]
            capacity = document["status"]["capacity"]
            assert isinstance(name, str) and all(isinstance(v, str) for v in labels.values()), labels
            assert labels["kubernetes.io/hostname"] == name and document["status"]["allocatable"] == capacity
            assert all(isinstance(v, str) for v in capacity.values()), capacity  # quoted as the owners' file
            gpus = int(capacity["alibabacloud.com/gpu-count"])
            assert int(capacity["alibabacloud.com/gpu-milli"]) == gpus * 1000
            cpu, memory = re.fullmatch(r"(\d+)m", capacity["cpu"]), re.fullmatch(r"(\d+)Mi", capacity["memory"])
            assert cpu and memory, capacity
            nodes.append({"name": name, "cpu_milli": int(cpu[1]), "memory_mib": int(memory[1]), "gpus": gpus,
                          "model": labels.get("alibabacloud.com/gpu-card-model", "")})
    return nodes


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
    assert result.rows == 7 and result.extra_files == [nodes, tmp_path / "lab-pods.nodes.yaml", ids]
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
    assert "100 (--option cpu_milli; default 100" in filled["cpu_milli"]
    assert "for 2 pods without num_cpus and 0 whose request rounds below 1" in filled["cpu_milli"]  # j3's two pods
    assert "0 (no request) for 2 pods" in filled["memory_mib"]
    assert "empty for 2 pods never started" in filled["scheduled_time, deletion_time"]
    assert "empty for 3 pods without a run time" in filled["scheduled_time, deletion_time"]
    assert "(3 nodes)" in filled["node list"] and "qos" in filled
    document = json.loads(result.sidecar.read_text())
    assert {r["path"] for r in document["resources"]} == {"x.csv", "x.nodes.csv", "x.nodes.yaml", "x.ids.csv"}
    # Every pod fits a node: the largest asks 8 GPUs and 200 cores, the A100 node holds 8 and 200.
    assert result.loss.unusable == {} and "rows_unusable" not in document["loss_report"]


def test_the_node_yaml_is_the_node_list_as_the_simulator_reads_it(home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "openb_pod_list_lab"  # a cluster folder of the simulator
    export_dataset(home, "lab", "openb", folder / "openb_pod_list_lab.csv", options={"gpus": "T4:10,3090:2,on:1"})
    text = (folder / "openb_node_list_lab.yaml").read_text()
    documents = text.split("\n---\n\n")
    assert documents[0] == FIRST_NODE_DOCUMENT and len(documents) == 4  # T4 8 + 2, 3090 2, on 1
    # '3090' and 'on' would be read as a number and a boolean unquoted: both are quoted.
    assert "gpu-card-model: '3090'\n" in text and "gpu-card-model: 'on'\n" in text
    nodes = _simulator_nodes(folder)
    assert [[n["name"], str(n["cpu_milli"]), str(n["memory_mib"]), str(n["gpus"]), n["model"]] for n in nodes] == \
        _rows(folder / "openb_node_list_lab.csv")
    assert [(n["gpus"], n["model"]) for n in nodes] == [(8, "T4"), (2, "T4"), (2, "3090"), (1, "on")]
    # Without a model the node has no model label: the simulator reads "" (no GPU type).
    export_dataset(home, "lab", "openb", tmp_path / "plain" / "p.csv", options={"gpus": "3"})
    assert "gpu-card-model" not in (tmp_path / "plain" / "p.nodes.yaml").read_text()
    assert [(n["gpus"], n["model"]) for n in _simulator_nodes(tmp_path / "plain")] == [(3, "")]


def test_a_nominal_cpu_request_where_the_dataset_records_none(tmp_path: Path) -> None:
    rows = (f"job_id,gpus,cpus,submit,start,end\nc1,1,,{T0},{T0},{T0 + 60}\nc2,1,0,{T0 + 10},{T0 + 10},{T0 + 70}\n"
            f"c3,2,0.0004,{T0 + 20},{T0 + 20},{T0 + 80}\nc4,0,1.5,{T0 + 30},{T0 + 30},{T0 + 90}\n")
    (tmp_path / "cpu.csv").write_text(rows)
    home = tmp_path / "home"
    import_dataset("cpu", tmp_path / "cpu.csv", home, mapping="job_id=job_id,gpus=gpus,cpus=cpus,submit=submit,"
                                                            "start=start,end=end")
    # c1 records no CPUs, c2 0, c3 0.0004 cores = 0.4 milli (below 1): the nominal request; c4 1.5 cores.
    for options, expected in (({}, [100, 100, 100, 1500]), ({"cpu_milli": "250"}, [250, 250, 250, 1500])):
        out = tmp_path / f"cpu{len(options)}.csv"
        result = export_dataset(home, "cpu", "openb", out, options={"gpus": "8", **options})
        assert [int(r[1]) for r in _rows(out)] == expected
        assert f"{expected[0]} (--option cpu_milli; default 100" in dict(result.loss.filled)["cpu_milli"]
        assert "for 1 pods without num_cpus and 2 whose request rounds below 1" in dict(result.loss.filled)[
            "cpu_milli"]
        # The simulator's top-up panics when the pods' CPU requests ("%dm" of cpu_milli) add up to 0.
        assert sum(int(p["cpu"].removesuffix("m")) for p in _simulator_reads(out, out.with_suffix(".nodes.csv"))) > 0
    for bad in ("0", "-5", "1.5", "abc"):
        with pytest.raises(ExportError, match=f"--option cpu_milli={re.escape(bad)}: expected a whole number"):
            export_dataset(home, "cpu", "openb", tmp_path / "bad.csv", options={"gpus": "8", "cpu_milli": bad})
    assert not (tmp_path / "bad.csv").exists()


def test_a_dataset_without_any_cpu_request_loads(tmp_path: Path) -> None:
    # An ITP-like table: no CPU column at all. Every pod asks the nominal 100 milli, so the simulator's
    # podTotalMilliCpuReq (the sum of the requests) is 100 per pod, not 0.
    (tmp_path / "g.csv").write_text(f"job_id,gpus,submit,duration\na,1,{T0},60\nb,4,{T0 + 5},60\nc,8,{T0 + 9},60\n")
    import_dataset("g", tmp_path / "g.csv", tmp_path / "home", mapping="job_id=job_id,gpus=gpus,submit=submit,"
                                                                      "duration=duration")
    out = tmp_path / "itp_like.csv"
    export_dataset(tmp_path / "home", "g", "openb", out, options={"gpus": "16"})
    read = _simulator_reads(out, tmp_path / "itp_like.nodes.csv")
    assert [p["cpu"] for p in read] == ["100m"] * 3 and sum(int(p["cpu"][:-1]) for p in read) == 300


def test_pods_larger_than_every_node_are_named(home: Path, tmp_path: Path, cli) -> None:
    out = tmp_path / "small.csv"
    result = export_dataset(home, "lab", "openb", out, options={"gpus": "4"})
    # One node of 4 GPUs (CPU 200 cores, the largest pod's; 1 TiB): only j2's two pods of 8 GPUs exceed it.
    too_big = [row[0] for row in EXPECTED_PODS if int(row[3]) > 4]
    assert too_big == ["lab-pod-0001", "lab-pod-0002"]
    ((reason, names),) = result.loss.unusable.items()
    assert names == too_big and "2 ask more GPUs than the largest node holds, 0 more CPU, 0 more memory" in reason
    document = json.loads(result.sidecar.read_text())["loss_report"]
    assert document["rows_unusable"] == [{"reason": reason, "rows": 2, "names": too_big}]
    assert _rows(out)[1][0] == "lab-pod-0001"  # written all the same: the simulator counts them as failed
    done = cli("datasets", "export", "lab", "--format", "openb", "--option", "gpus=4", "--out", tmp_path / "c.csv",
               "--data-home", home)
    assert done.code == 0 and "written but unusable, 2 rows: pods that fit no node" in done.out
    assert "(lab-pod-0001, lab-pod-0002)" in done.out


def test_which_pods_fit_no_node_by_the_simulators_filters() -> None:
    import polars as pl

    nodes = pl.DataFrame({"sn": ["n0", "n1", "n2"], "cpu_milli": [64000, 96000, 32000],
                          "memory_mib": [262144, 786432, 131072], "gpu": [2, 8, 4], "model": ["P100", "V100M32", None]})
    pods = pl.DataFrame({
        "name": [f"p{i}" for i in range(9)],
        "cpu_milli": [1000, 100000, 1000, 90000, 1000, 1000, 1000, 1000, 30000],
        "memory_mib": [0, 0, 900000, 0, 0, 0, 0, 0, 0],
        "num_gpu": [1, 0, 1, 8, 4, 4, 9, 1, 0],
        "gpu_milli": [500, 0, 1000, 1000, 1000, 1000, 1000, 1000, 0],
        "gpu_spec": [None, None, None, "P100", None, "P100|", "", "A10|G2", "A10"]})
    # p0 half a GPU: any node. p1 100 cores > 96 on every node. p2 900,000 MiB > 786,432. p3 8 GPUs of P100,
    # whose node has 2. p4 4 GPUs: n1 (8) or n2 (4). p5 4 GPUs of P100 (the empty entry names nothing).
    # p6 9 GPUs > 8. p7 A10 or G2: no node has them. p8 CPU-only: its gpu_spec binds no GPU filter, 30 cores fit.
    assert unplaceable_pods(pods, nodes) == ["p1", "p2", "p3", "p5", "p6", "p7"]


def test_bad_cpu_option_from_the_command_line(cli, home: Path, tmp_path: Path) -> None:
    done = cli("datasets", "export", "lab", "--format", "openb", "--option", "gpus=8", "--option", "cpu_milli=0",
               "--out", tmp_path / "x.csv", "--data-home", home)
    assert_clean_failure(done, "cpu_milli=0")
    assert not list(tmp_path.glob("x*"))


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
    assert [n["gpus"] for n in _simulator_nodes(tmp_path)] == [8, 8, 1]  # openb_node_list_lab.yaml
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
    assert result.synthetic and result.extra_files == [nodes, tmp_path / "openb_node_list_default.yaml"]
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


def test_the_real_release_comes_back_row_for_row(tmp_path: Path) -> None:
    """The real pods come back line for line, and the nodes as the release's GPU node list (the
    GPU nodes of the all_node list, numbered anew). On the excerpt of a fresh clone, whose gpu_node
    excerpt holds other nodes, the nodes are the excerpt's all_node GPU rows numbered anew."""
    from ddlx.datasets.ingest import ingest

    release = real_file("alibaba-gpu-v2023")
    ingest("pai-v2023", release, tmp_path / "home")
    out = tmp_path / "openb_pod_list_default.csv"
    result = export_dataset(tmp_path / "home", "pai-v2023", "openb", out)
    nodes = tmp_path / "openb_node_list_default.csv"
    all_lines = _lines(release / "openb_node_list_all_node.csv")
    gpu_rows = [line.split(",") for line in all_lines[1:] if line.split(",")[3] != "0"]
    renumbered = [all_lines[0]] + [",".join([f"openb-node-{i:04d}", *row[1:]]) for i, row in enumerate(gpu_rows)]
    expected_nodes = _lines(release / "openb_node_list_gpu_node.csv") if FULL_TRACES else renumbered
    if FULL_TRACES:
        assert expected_nodes == renumbered
    for written, theirs in ((out, _lines(release / "openb_pod_list_default.csv")), (nodes, expected_nodes)):
        mine = _lines(written)
        assert len(mine) == len(theirs)
        for number, (a, b) in enumerate(zip(mine, theirs)):
            assert a == b, (written.name, number, a, b)
    assert result.rows == len(_lines(release / "openb_pod_list_default.csv")) - 1 == (8152 if FULL_TRACES else 302)
    # The node YAML is the simulator repository's own, byte for byte, and reads back as the CSV.
    node_yaml = tmp_path / "openb_node_list_default.yaml"
    if FULL_TRACES:
        assert hashlib.sha256(node_yaml.read_bytes()).hexdigest() == OWNERS_NODE_YAML_SHA256
    assert [[n["name"], str(n["cpu_milli"]), str(n["memory_mib"]), str(n["gpus"]), n["model"]]
            for n in _simulator_nodes(tmp_path)] == _rows(nodes)
    # Every pod of the release fits one of its GPU nodes (checked here spec by spec): none is unusable.
    specs = {(int(r[1]), int(r[2]), int(r[3]), r[4]) for r in _rows(nodes)}
    with open(out, newline="") as handle:
        for pod in csv.DictReader(handle):
            gpus, models = int(pod["num_gpu"]), [m for m in pod["gpu_spec"].split("|") if m]
            assert any(int(pod["cpu_milli"]) <= cpu and int(pod["memory_mib"]) <= memory
                       and (gpus == 0 or int(pod["gpu_milli"]) == 0 or (gpus <= g and (not models or model in models)))
                       for cpu, memory, g, model in specs), pod["name"]
    assert result.loss.unusable == {}
    # The only loss: the all_node list's CPU-only nodes, which the GPU node list leaves out.
    all_nodes = _rows(release / "openb_node_list_all_node.csv")
    assert result.loss.dropped == {"nodes without GPUs (the node list the simulator runs with holds GPU nodes only)":
                                   sum(1 for r in all_nodes if r[3] == "0")}
    assert len(_simulator_reads(out, nodes)) == result.rows
