"""`ddlx datasets export`: the Standard Workload Format (SWF 2.2), its loss report and sidecar.

A five-job table imported by hand; every SWF field of every line is worked out below from the
rows, independently of the exporter.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from ddlx.datasets.importers import import_dataset
from ddlx.formats.export import export_dataset
from tests.conftest import assert_clean_failure

T0 = 1_700_000_000  # 2023-11-14 22:13:20 UTC
ROWS = f"""job_id,user,vc,gpus,state,submit,start,end
j-b,ann,vc1,2,COMPLETED,{T0 + 10},{T0 + 70},{T0 + 3670}
j-a,bob,vc2,0.5,FAILED,{T0},{T0 + 5},{T0 + 605.6}
j-c,ann,vc2,0,CANCELLED,{T0 + 10},,
j-d,cy,,8,RUNNING,{T0 + 100},{T0 + 160},
j-e,bob,vc1,1,COMPLETED,{T0 + 200},{T0 + 200},{T0 + 260}
"""
MAPPING = "job_id=job_id,user=user,vc=vc,gpus=gpus,state=state,submit=submit,start=start,end=end"

# In submission order (ties by job id): j-a (T0), j-b (T0+10), j-c (T0+10), j-d (T0+100), j-e (T0+200).
# users in that order: bob 1, ann 2, cy 3; queues (vc): vc2 1, vc1 2; partition: the dataset's one cluster 1.
#           job submit wait run  alloc cpu mem req  time rmem status user grp exe queue part prev think
EXPECTED = [
    [1,   0,    5,   601, 1,   -1,  -1, 1,   -1,  -1,  0,     1,   -1, -1, 1,    1,   -1,  -1],  # j-a: 0.5 GPU -> 1
    [2,   10,   60,  3600, 2,  -1,  -1, 2,   -1,  -1,  1,     2,   -1, -1, 2,    1,   -1,  -1],  # j-b
    [3,   10,   -1,  -1,  0,   -1,  -1, 0,   -1,  -1,  5,     2,   -1, -1, 1,    1,   -1,  -1],  # j-c never ran
    [4,   100,  60,  -1,  8,   -1,  -1, 8,   -1,  -1,  -1,    3,   -1, -1, -1,   1,   -1,  -1],  # j-d running
    [5,   200,  0,   60,  1,   -1,  -1, 1,   -1,  -1,  1,     1,   -1, -1, 2,    1,   -1,  -1],  # j-e
]


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    (tmp_path / "jobs.csv").write_text(ROWS)
    import_dataset("lab", tmp_path / "jobs.csv", tmp_path / "home", mapping=MAPPING)
    return tmp_path / "home"


def _jobs(path: Path) -> list[list[int]]:
    return [[int(v) for v in line.split()] for line in path.read_text().splitlines() if not line.startswith(";")]


def test_every_field_of_every_line(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "lab.swf"
    result = export_dataset(home, "lab", "swf", out)
    assert result.rows == 5 and all(len(line) == 18 for line in _jobs(out))
    assert _jobs(out) == EXPECTED
    header = [line for line in out.read_text().splitlines() if line.startswith(";")]
    assert header[0] == "; Version: 2.2"
    assert f"; UnixStartTime: {T0}" in header and "; MaxJobs: 5" in header and "; Preemption: No" in header
    assert "; MaxProcs: 8" in header  # the largest job: the import documents no capacity
    assert any(line.startswith("; Note: processors are GPUs") for line in header)
    ids = (tmp_path / "lab.swf.ids.csv").read_text().splitlines()
    assert ids[0] == "job,job_id,cluster"
    assert [row.split(",")[1] for row in ids[1:]] == ["j-a", "j-b", "j-c", "j-d", "j-e"]


def test_the_sidecar_names_sources_files_and_losses(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "lab.swf"
    result = export_dataset(home, "lab", "swf", out)
    document = json.loads(result.sidecar.read_text())
    assert result.sidecar == tmp_path / "lab.swf.datapackage.json"
    files = {r["path"]: r for r in document["resources"]}
    for path in (out, tmp_path / "lab.swf.ids.csv"):
        assert files[path.name]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert files["lab.swf"]["rows"] == 5 and files["lab.swf"]["format"] == "swf"
    assert document["codes"]["user"] == {"bob": 1, "ann": 2, "cy": 3}
    assert document["codes"]["queue"] == {"vc2": 1, "vc1": 2}
    (source,) = document["sources"]
    assert source["dataset"] == "lab" and source["synthetic"] is False
    assert source["input_files"][0]["sha256"] == hashlib.sha256((tmp_path / "jobs.csv").read_bytes()).hexdigest()
    loss = document["loss_report"]
    assert any(f["field"] == "job_id" for f in loss["fields_without_place"])
    assert any("(1 jobs)" in f["rule"] for f in loss["fields_filled"] if f["field"].startswith("processors"))


def test_the_command_prints_the_loss_report_and_refuses_bad_requests(cli, home: Path, tmp_path: Path) -> None:
    done = cli("datasets", "export", "lab", "--format", "swf", "--out", tmp_path / "x.swf", "--data-home", home)
    assert done.code == 0, done.err
    assert "5 jobs" in done.out and "loss report:" in done.out and "no place for job_id" in done.out
    unknown = cli("datasets", "export", "lab", "--format", "swfx", "--out", tmp_path / "y.swf", "--data-home", home)
    assert unknown.code == 2 and "unknown export format 'swfx'" in unknown.err and "did you mean 'swf'" in unknown.err
    folder = cli("datasets", "export", "lab", "--format", "swf", "--out", tmp_path, "--data-home", home)
    assert_clean_failure(folder, "is a folder")
    assert not (tmp_path / "y.swf").exists()
