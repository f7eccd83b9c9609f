"""`ddlx datasets export --format tiresias`: the Tiresias simulator's job trace and cluster spec.

An eight-job table imported by hand; every field of every line is worked out below from the rows,
independently of the exporter. The files are read back the way the simulator reads them: rows of
`csv.DictReader`, a field turned into an `int` when `str.isdigit()` holds, `duration` through
`int(float(...))`, the spec's fields through `int()`.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import polars as pl
import pytest

from ddlx.analysis.context import open_trace
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.synthetic import home_with_jobs_or_sample
from ddlx.formats.export import export_dataset
from tests.conftest import assert_clean_failure

T0 = 1_700_000_000
ROWS = f"""job_id,user,vc,gpus,state,submit,start,end
j-b,ann,vc1,2,COMPLETED,{T0 + 10},{T0 + 70},{T0 + 3670}
j-a,bob,vc2,0.5,FAILED,{T0},{T0 + 5},{T0 + 605.6}
j-c,ann,vc2,0,COMPLETED,{T0 + 10},{T0 + 20},{T0 + 30}
j-d,cy,,8,RUNNING,{T0 + 100},{T0 + 160},
j-e,bob,vc1,1,COMPLETED,{T0 + 200},{T0 + 200},{T0 + 200.2}
j-f,cy,vc1,32,COMPLETED,{T0 + 250.7},{T0 + 300},{T0 + 11100}
j-h,ann,vc2,128,CANCELLED,{T0 + 400},{T0 + 400},{T0 + 4000}
j-g,bob,vc1,,COMPLETED,{T0 + 500},{T0 + 510},{T0 + 520}
"""
MAPPING = "job_id=job_id,user=user,vc=vc,gpus=gpus,state=state,submit=submit,start=start,end=end"
HEADER = ["job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval"]
SPEC_HEADER = ["num_switch", "num_node_p_switch", "num_gpu_p_node", "num_cpu_p_node", "mem_p_node"]

# Submission order (ties by job id): j-a 1, j-b 2, j-c 3, j-d 4, j-e 5, j-f 6, j-h 7, j-g 8.
# Dropped: j-c (0 GPUs), j-d (running: no run time), j-g (no GPU count).
#   job_id num_gpu submit iterations model duration interval
EXPECTED = [
    [1, 1, 0, 0, "resnet50", 601, 10],      # j-a: 0.5 GPU -> 1; ran 605.6 - 5 = 600.6 s -> 601
    [2, 2, 10, 0, "resnet50", 3600, 190],   # j-b: 3670 - 70
    [5, 1, 200, 0, "resnet50", 1, 50],      # j-e: ran 0.2 s -> at least 1
    [6, 32, 250, 0, "resnet50", 10800, 150],  # j-f: submitted at 250.7 -> 250; 11100 - 300
    [7, 128, 400, 0, "resnet50", 3600, 0],  # j-h: cancelled after 3600 s; the last job
]
# No capacity in an import: 8 GPUs a node, ceil(128 / 8) = 16 nodes, 6 x 8 = 48 cores,
# max(256, ceil((11 + 0.1 x 128) x 8) = 191) = 256 GB.
EXPECTED_SPEC = [1, 16, 8, 48, 256]


def read_like_tiresias(path: Path) -> list[dict[str, object]]:
    """The job rows as the simulator's parse_job_file/add_job turn them into dicts."""
    with path.open() as handle:
        rows = list(csv.DictReader(handle, delimiter=","))
    for row in rows:
        for key, value in row.items():
            if value.isdigit():
                row[key] = int(value)
        row["duration"] = int(float(row["duration"]))
    return rows


def read_spec_like_tiresias(path: Path) -> list[int]:
    with path.open() as handle:
        reader = csv.DictReader(handle, delimiter=",")
        assert reader.fieldnames == SPEC_HEADER
        rows = list(reader)
    assert len(rows) == 1
    return [int(rows[0][key]) for key in SPEC_HEADER]


def assert_simulator_reads(path: Path) -> list[dict[str, object]]:
    """Every field but model_name parses as an integer; jobs are in submit_time order from 0."""
    assert path.read_text().splitlines()[0] == ",".join(HEADER)
    rows = read_like_tiresias(path)
    for row in rows:
        assert list(row) == HEADER
        assert all(isinstance(row[key], int) for key in HEADER if key != "model_name"), row
        assert isinstance(row["model_name"], str) and row["num_gpu"] >= 1 and row["duration"] >= 1
    submits = [row["submit_time"] for row in rows]
    assert submits == sorted(submits) and submits[0] == 0
    assert [b - a for a, b in zip(submits, submits[1:])] + [0] == [row["interval"] for row in rows]
    assert len({row["job_id"] for row in rows}) == len(rows)
    return rows


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    (tmp_path / "jobs.csv").write_text(ROWS)
    import_dataset("lab", tmp_path / "jobs.csv", tmp_path / "home", mapping=MAPPING)
    return tmp_path / "home"


def test_every_field_of_every_line_and_the_spec(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "lab.csv"
    result = export_dataset(home, "lab", "tiresias", out)
    rows = assert_simulator_reads(out)
    assert [[row[key] for key in HEADER] for row in rows] == EXPECTED and result.rows == 5
    spec = tmp_path / "lab.cluster_spec.csv"
    assert read_spec_like_tiresias(spec) == EXPECTED_SPEC
    ids = (tmp_path / "lab.csv.ids.csv").read_text().splitlines()
    assert ids == ["job,job_id,cluster", "1,j-a,lab", "2,j-b,lab", "5,j-e,lab", "6,j-f,lab", "7,j-h,lab"]
    assert result.extra_files == [spec, tmp_path / "lab.csv.ids.csv"]
    document = json.loads(result.sidecar.read_text())
    assert [r["path"] for r in document["resources"]] == ["lab.csv", "lab.cluster_spec.csv", "lab.csv.ids.csv"]
    loss = document["loss_report"]
    assert {d["reason"].split(" (")[0]: d["rows"] for d in loss["rows_dropped"]} == {
        "no GPU count": 1, "CPU-only job, 0 GPUs": 1, "no run time: never started or still running": 1}
    filled = {f["field"]: f["rule"] for f in loss["fields_filled"]}
    assert "(1 jobs)" in filled["num_gpu"] and "(1 jobs ran under half a second)" in filled["duration"]
    assert filled["model_name"].startswith("resnet50") and "largest job (128 GPUs)" in filled["cluster spec"]


def test_options_set_the_model_and_the_spec(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "lab.csv"
    options = {"model": "vgg16", "nodes": "2", "gpus_per_node": "4", "cpus_per_node": "40", "mem_per_node": "512"}
    result = export_dataset(home, "lab", "tiresias", out, options=options)
    rows = assert_simulator_reads(out)
    # 2 nodes x 4 GPUs = 8 GPUs: j-f (32) and j-h (128) no longer fit; j-e is now the last job.
    assert [[row[key] for key in HEADER] for row in rows] == [
        [1, 1, 0, 0, "vgg16", 601, 10], [2, 2, 10, 0, "vgg16", 3600, 190], [5, 1, 200, 0, "vgg16", 1, 0]]
    assert read_spec_like_tiresias(tmp_path / "lab.cluster_spec.csv") == [1, 2, 4, 40, 512]
    assert result.loss.dropped["more GPUs than the cluster spec holds (8)"] == 2
    # gpus_per_node alone: nodes for the largest job, ceil(128 / 16) = 8; cores 6 x 16;
    # memory max(256, ceil((11 + 12.8) x 16) = 381).
    export_dataset(home, "lab", "tiresias", out, options={"gpus_per_node": "16"})
    assert read_spec_like_tiresias(tmp_path / "lab.cluster_spec.csv") == [1, 8, 16, 96, 381]


def _capacity_total(home: Path, trace: str) -> int:
    with open_trace(home_with_jobs_or_sample(home, trace, True), trace) as ctx:
        capacity = ctx.query("SELECT source, valid_from, gpus FROM gpu_capacity")
    totals = capacity.group_by("source", "valid_from").agg(pl.col("gpus").sum())
    return int(totals["gpus"].max())


def test_a_sample_with_documented_capacity_sizes_the_spec(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "helios.csv"
    export_dataset(home, "helios", "tiresias", out, use_sample=True)
    rows = assert_simulator_reads(out)
    largest = max(int(row["num_gpu"]) for row in rows)
    total = _capacity_total(home, "helios")
    memory = max(256, math.ceil((11 + 0.1 * largest) * 8))
    assert read_spec_like_tiresias(tmp_path / "helios.cluster_spec.csv") == [1, math.ceil(total / 8), 8, 48, memory]
    assert total > 1000 and largest <= math.ceil(total / 8) * 8


def test_a_sample_with_a_node_list_takes_its_node_shape(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "v2023.csv"
    export_dataset(home, "pai-v2023", "tiresias", out, use_sample=True)
    assert_simulator_reads(out)
    with open_trace(home_with_jobs_or_sample(home, "pai-v2023", True), "pai-v2023") as ctx:
        nodes = ctx.query("SELECT gpus FROM gpu_nodes WHERE gpus > 0")["gpus"].to_list()
    per_node = max(set(nodes), key=lambda g: (nodes.count(g), g))
    spec = read_spec_like_tiresias(tmp_path / "v2023.cluster_spec.csv")
    assert spec == [1, math.ceil(sum(nodes) / per_node), per_node, 6 * per_node, spec[4]] and spec[4] >= 256


@pytest.mark.parametrize(("option", "needles", "code"), [
    ("model=gpt2", ["model='gpt2'", "resnet50"], 2),
    ("nodes=0", ["nodes='0'", "positive whole number"], 2),
    ("gpus_per_node=4.5", ["gpus_per_node='4.5'", "positive whole number"], 2),
    ("racks=2", ["no option 'racks'", "gpus_per_node"], 2),
])
def test_bad_options_fail_in_one_line(cli, home: Path, tmp_path: Path, option: str, needles: list[str],
                                      code: int) -> None:
    out = tmp_path / "x.csv"
    done = cli("datasets", "export", "lab", "--format", "tiresias", "--out", out, "--option", option,
               "--data-home", home)
    assert_clean_failure(done, *needles, code=code)
    assert not out.exists() and not (tmp_path / "x.cluster_spec.csv").exists()


def test_a_txt_name_is_refused(cli, home: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.txt"
    done = cli("datasets", "export", "lab", "--format", "tiresias", "--out", out, "--data-home", home)
    assert_clean_failure(done, "x.txt", "space-separated")
    assert not out.exists()
