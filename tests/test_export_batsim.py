"""`ddlx datasets export --format batsim`: Batsim's JSON workload of delay profiles.

A seven-job table imported by hand; every job and profile is worked out below from the rows,
independently of the exporter, and the file is read back with Batsim's own rules (`src/workload.cpp`,
`src/jobs.cpp`, `src/profiles.cpp`) of the release it targets: Batsim 5.0.0-rc2 by default (tag
v5.0.0-rc2, whose `Profile::from_json` knows the delay type only as `DelayProfile`), Batsim 4.2.1 with
`--option version=4` (tag v4.2.1: only `delay`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ddlx.datasets.importers import import_dataset
from ddlx.formats.export import export_dataset
from ddlx.formats.model import ExportError
from tests.conftest import assert_clean_failure

T0 = 1_700_000_000
ROWS = f"""job_id,gpus,state,submit,start,end
j-a,0.5,FAILED,{T0},{T0 + 5},{T0 + 605.5}
j-b,2,COMPLETED,{T0 + 10},{T0 + 70},{T0 + 3670}
j-c,0,COMPLETED,{T0 + 10},{T0 + 20},{T0 + 30}
j-d,8,RUNNING,{T0 + 100},{T0 + 160},
j-e,3,COMPLETED,{T0 + 200.25},{T0 + 300},{T0 + 3900}
j-f,16,FAILED,{T0 + 300},{T0 + 300},{T0 + 300}
j-g,1,COMPLETED,{T0 + 400},{T0 + 400},{T0 + 460}
"""
MAPPING = "job_id=job_id,gpus=gpus,state=state,submit=submit,start=start,end=end"
# Kept in submission order: j-a, j-b, j-e, j-g (j-c CPU-only, j-d still running, j-f ran 0 s).
JOBS = [
    {"id": "1", "subtime": 0, "res": 1, "profile": "delay_600.5"},     # j-a: 0.5 GPU -> 1, ran 600.5 s
    {"id": "2", "subtime": 10, "res": 2, "profile": "delay_3600"},     # j-b
    {"id": "3", "subtime": 200.25, "res": 3, "profile": "delay_3600"},  # j-e: shares j-b's profile
    {"id": "4", "subtime": 400, "res": 1, "profile": "delay_60"},      # j-g
]
PROFILES = {"delay_600.5": {"type": "DelayProfile", "delay": 600.5},
            "delay_3600": {"type": "DelayProfile", "delay": 3600}, "delay_60": {"type": "DelayProfile", "delay": 60}}
#: The delay profile type each Batsim release accepts (any other stops it: "unknown type").
DELAY_TYPE_OF = {"5.0.0-rc2": "DelayProfile", "4.2.1": "delay"}


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    (tmp_path / "jobs.csv").write_text(ROWS)
    import_dataset("lab", tmp_path / "jobs.csv", tmp_path / "home", mapping=MAPPING)
    return tmp_path / "home"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def load_workload(path: Path, release: str = "5.0.0-rc2", workload_name: str = "w0") -> dict[str, Any]:
    """Batsim's checks on a workload, as `release` makes them: nb_res an integer > 0; each job an id
    (string or integer) that either does not contain the workload's name (then it must hold no '!') or
    is `<name>!<id>`, a number subtime, an integer res >= 0, the name of a defined profile, and a
    walltime absent or > 0 (-1 also in 4.x); each profile of the release's delay type with a number
    delay > 0. Returns the document."""
    document = json.loads(path.read_text())
    assert isinstance(document["nb_res"], int) and document["nb_res"] > 0
    version = int(release.split(".")[0])
    delay_type = DELAY_TYPE_OF[release]
    for profile in document["profiles"].values():
        assert profile["type"] == delay_type and _number(profile["delay"]) and profile["delay"] > 0
    seen = set()
    for job in document["jobs"]:
        assert isinstance(job["id"], (str, int))
        job_id = str(job["id"])
        if workload_name in job_id:
            assert job_id.count("!") == 1 and job_id.split("!")[0] == workload_name
        else:
            assert "!" not in job_id
        assert job_id not in seen
        seen.add(job_id)
        assert _number(job["subtime"]) and isinstance(job["res"], int) and job["res"] >= 0
        assert isinstance(job["profile"], str) and job["profile"] in document["profiles"]
        if "walltime" in job:
            assert _number(job["walltime"]) and (job["walltime"] > 0 or (version == 4 and job["walltime"] == -1))
    return document


def test_every_job_and_profile(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "lab.json"
    result = export_dataset(home, "lab", "batsim", out)
    assert result.rows == 4
    document = load_workload(out)
    assert list(document) == ["nb_res", "jobs", "profiles"]
    assert document["jobs"] == JOBS and document["profiles"] == PROFILES
    assert document["nb_res"] == 3  # the largest job: the import documents no GPU capacity
    assert '"res": 1.0' not in out.read_text() and '"subtime": 10,' in out.read_text()  # integers as integers
    for job in document["jobs"]:  # no walltime without --predictions
        assert set(job) == {"id", "subtime", "res", "profile"}
        assert isinstance(job["id"], str) and isinstance(job["res"], int)
    ids = (tmp_path / "lab.json.ids.csv").read_text().splitlines()
    assert ids == ["id,job_id,cluster", "1,j-a,lab", "2,j-b,lab", "3,j-e,lab", "4,j-g,lab"]
    assert {reason.split(" ")[0]: n for reason, n in result.loss.dropped.items()} == {"CPU-only": 1, "no": 2}
    filled = dict(result.loss.filled)
    assert "(1 jobs)" in filled["res"] and "(3 profiles)" in filled["profile"]
    assert filled["nb_res"].startswith("3 from the largest job's GPUs")
    # The release targeted, in the loss report and the sidecar.
    assert "typed 'DelayProfile' for Batsim 5.0.0-rc2" in filled["profile"] and "the default" in filled["profile"]
    sidecar = json.loads(result.sidecar.read_text())
    assert sidecar["resources"][0]["target"] == "Batsim 5.0.0-rc2 (oar-team/batsim tag v5.0.0-rc2)"


def test_predictions_become_walltimes(home: Path, tmp_path: Path) -> None:
    predictions = tmp_path / "pred.csv"
    predictions.write_text("cluster,job_id,pred_s\nlab,j-a,700\nlab,j-b,1800.5\nlab,j-e,0\n")
    out = tmp_path / "lab.json"
    result = export_dataset(home, "lab", "batsim", out, predictions=predictions)
    walltimes = {job["id"]: job.get("walltime") for job in load_workload(out)["jobs"]}
    # j-a 700, j-b 1800.5 (below its 3600 s: Batsim will kill it), j-e 0 -> none, j-g no prediction
    assert walltimes == {"1": 700, "2": 1800.5, "3": None, "4": None}
    assert "(2 jobs, 1 of them below their run time" in dict(result.loss.filled)["walltime"]


def test_options_nb_res_and_version(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "v4.json"
    result = export_dataset(home, "lab", "batsim", out, options={"nb_res": "64", "version": "4"})
    document = load_workload(out, release="4.2.1")
    assert document["nb_res"] == 64
    assert document["profiles"]["delay_60"] == {"type": "delay", "delay": 60}
    assert json.loads(result.sidecar.read_text())["resources"][0]["target"] == \
        "Batsim 4.2.1 (oar-team/batsim tag v4.2.1)"
    # Each release refuses the other's type: the file of one fails the other's check.
    with pytest.raises(AssertionError):
        load_workload(out, release="5.0.0-rc2")
    export_dataset(home, "lab", "batsim", tmp_path / "v5.json", options={"version": "5"})
    export_dataset(home, "lab", "batsim", tmp_path / "default.json")
    assert (tmp_path / "v5.json").read_bytes() == (tmp_path / "default.json").read_bytes()
    assert load_workload(tmp_path / "v5.json")["profiles"] == PROFILES
    with pytest.raises(AssertionError):
        load_workload(tmp_path / "v5.json", release="4.2.1")


@pytest.mark.parametrize(("options", "needle"), [
    ({"nb_res": "0"}, "--option nb_res=0: expected a whole number"),
    ({"nb_res": "2.5"}, "--option nb_res=2.5: expected a whole number"),
    ({"version": "3"}, "--option version=3: expected 5 .Batsim 5.0.0-rc2, the default. or 4"),
])
def test_bad_options_fail_in_one_line(home: Path, tmp_path: Path, options: dict[str, str], needle: str) -> None:
    with pytest.raises(ExportError, match=needle):
        export_dataset(home, "lab", "batsim", tmp_path / "x.json", options=options)
    assert not (tmp_path / "x.json").exists()


def test_the_command_reports_a_bad_option_cleanly(cli, home: Path, tmp_path: Path) -> None:
    done = cli("datasets", "export", "lab", "--format", "batsim", "--out", tmp_path / "x.json", "--data-home", home,
               "--option", "nb_res=-4")
    assert_clean_failure(done, "nb_res=-4")


def test_a_synthetic_sample_export(tmp_path: Path) -> None:
    out = tmp_path / "sample.json"
    result = export_dataset(tmp_path / "empty", "helios", "batsim", out, use_sample=True)
    assert result.synthetic and result.rows > 0
    document = load_workload(out)
    jobs = document["jobs"]
    assert len(jobs) == result.rows and [job["id"] for job in jobs] == [str(n) for n in range(1, len(jobs) + 1)]
    subtimes = [job["subtime"] for job in jobs]
    assert subtimes[0] == 0 and subtimes == sorted(subtimes)
    assert all(job["res"] >= 1 for job in jobs)
    assert json.loads(result.sidecar.read_text())["label"] == "SYNTHETIC"
