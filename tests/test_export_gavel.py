"""`ddlx datasets export --format gavel`: the job trace Gavel's simulator reads.

A seven-job table imported by hand; every field of every line is worked out below from the rows and
from the v100 throughputs of Gavel's `scheduler/simulation_throughputs.json`, independently of the
exporter. The file is read back with Gavel's own rule (`scheduler/utils.py`, `parse_trace`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ddlx.datasets.importers import import_dataset
from ddlx.formats.export import export_dataset
from ddlx.formats.model import ExportError
from tests.conftest import assert_clean_failure

T0 = 1_700_000_000
ROWS = f"""job_id,user,gpus,state,submit,start,end,workload,group
j-a,bob,0.5,FAILED,{T0},{T0 + 5},{T0 + 605.6},resnet50,
j-b,ann,2,COMPLETED,{T0 + 10},{T0 + 70},{T0 + 3670},A3C,
j-c,ann,0,COMPLETED,{T0 + 10},{T0 + 20},{T0 + 30},,
j-d,cy,8,RUNNING,{T0 + 100},{T0 + 160},,,
j-e,bob,3,COMPLETED,{T0 + 200},{T0 + 200},{T0 + 260},bert,
j-f,ann,16,COMPLETED,{T0 + 300.7},{T0 + 310},{T0 + 410},LM,
j-g,cy,1,COMPLETED,{T0 + 400},{T0 + 400},{T0 + 450},,g1
"""
MAPPING = ("job_id=job_id,user=user,gpus=gpus,state=state,submit=submit,start=start,end=end,workload=workload,"
           "job_group=group")
# Gavel's simulation_throughputs.json, "v100", (job type, scale factor) -> steps/s of the job alone ("null").
V100 = {("ResNet-18 (batch size 64)", 1): 24.093231895382736, ("ResNet-50 (batch size 64)", 1): 4.394774823323071,
        ("ResNet-50 (batch size 64)", 2): 7.922054367597505, ("Transformer (batch size 64)", 1): 8.61775899193302,
        ("Transformer (batch size 64)", 4): 19.65962221663049, ("LM (batch size 20)", 8): 497.2952582330656,
        ("CycleGAN", 1): 4.426088263367452}
FILLER = ["--num_steps", 0]  # num_steps_arg, needs_data_dir
# Kept in submission order: j-a, j-b, j-e, j-f, j-g (j-c is CPU-only, j-d has no run time).
#  j-a: 0.5 GPU -> scale 1; workload resnet50 -> ResNet-50 (bs 64); 600.6 s x 4.394775 = 2639.502 -> 2640
#  j-b: 2 GPUs; A3C is measured on 1 GPU only -> the 2-GPU default ResNet-50 (bs 64); 3600 s
#  j-e: 3 GPUs -> scale 4; bert names no Gavel type -> Transformer (bs 64); 60 s
#  j-f: 16 GPUs -> scale 8; LM -> LM (bs 20); 100 s; arrival floor(300.7) = 300
#  j-g: 1 GPU; no workload -> ResNet-18 (bs 64); 50 s
AUTO = [
    ["ResNet-50 (batch size 64)", "ddlx:j-a", ".", *FILLER, round(600.6 * 4.394774823323071), 1, 1, -1, 0],
    ["ResNet-50 (batch size 64)", "ddlx:j-b", ".", *FILLER, round(3600 * 7.922054367597505), 2, 1, -1, 10],
    ["Transformer (batch size 64)", "ddlx:j-e", ".", *FILLER, round(60 * 19.65962221663049), 4, 1, -1, 200],
    ["LM (batch size 20)", "ddlx:j-f", ".", *FILLER, round(100 * 497.2952582330656), 8, 1, -1, 300],
    ["ResNet-18 (batch size 64)", "ddlx:j-g", ".", *FILLER, round(50 * 24.093231895382736), 1, 1, -1, 400],
]


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    (tmp_path / "jobs.csv").write_text(ROWS)
    import_dataset("lab", tmp_path / "jobs.csv", tmp_path / "home", mapping=MAPPING)
    return tmp_path / "home"


def parse_trace(path: Path) -> list[list]:
    """Gavel's reading of a trace: split each line on tabs into 10 fields; needs_data_dir, total_steps
    and scale_factor by int() (scale factor >= 1), priority, SLO and arrival by float(); arrivals never
    decrease."""
    jobs = []
    for line in path.read_text().splitlines(keepends=True):
        (job_type, command, directory, steps_arg, data_dir, steps, scale, priority, slo,
         arrival) = line.split("\t")
        assert int(scale) >= 1
        jobs.append([job_type, command, directory, steps_arg, int(data_dir), int(steps), int(scale),
                     float(priority), float(slo), float(arrival)])
    arrivals = [job[-1] for job in jobs]
    assert arrivals == sorted(arrivals)
    return jobs


def test_every_field_of_every_line(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "lab.trace"
    result = export_dataset(home, "lab", "gavel", out)
    assert result.rows == 5
    text = out.read_text()
    assert text.endswith("\n") and "8.0" not in text and "nan" not in text.lower()
    jobs = parse_trace(out)
    assert jobs == AUTO
    assert AUTO[0][5] == 2640 and AUTO[3][5] == 49730  # 2639.50 and 49729.53, rounded
    for job in jobs:  # every line is a key of Gavel's throughput table
        assert (job[0], job[6]) in V100
    # the raw text: integers where Gavel parses integers, no header
    first = text.splitlines()[0].split("\t")
    assert first[4:] == ["0", "2640", "1", "1", "-1", "0"]
    ids = (tmp_path / "lab.trace.ids.csv").read_text().splitlines()
    assert ids[0] == "gavel_job,job_id,cluster"
    assert [row.split(",")[:2] for row in ids[1:]] == [["0", "j-a"], ["1", "j-b"], ["2", "j-e"], ["3", "j-f"],
                                                        ["4", "j-g"]]


def test_the_loss_report_counts_drops_and_rules(home: Path, tmp_path: Path) -> None:
    result = export_dataset(home, "lab", "gavel", tmp_path / "lab.trace")
    dropped = {reason.split(" ")[0]: rows for reason, rows in result.loss.dropped.items()}
    assert dropped == {"CPU-only": 1, "no": 1}  # j-c; j-d
    filled = dict(result.loss.filled)
    # j-a (resnet50), j-b (A3C) and j-f (LM) name a Gavel type; A3C gave way to the 2-GPU default
    assert ": 3 jobs;" in filled["job_type"] and "1 jobs whose chosen type" in filled["job_type"]
    # j-a a part of a GPU; j-e 3 -> 4; j-f 16 -> 8
    assert filled["scale_factor"].startswith("GPUs rounded up to 1, 2, 4 or 8: 1 jobs with a part of a GPU, 1 "
                                             "rounded up to the next measured size, 1 jobs of more than 8")


def test_a_model_file_a_fixed_type_and_a_throughput_file(home: Path, tmp_path: Path) -> None:
    models = tmp_path / "models.csv"
    models.write_text("key,job_type\ng1,CycleGAN\nbert,ResNet-50 (batch size 64)\n")
    out = tmp_path / "file.trace"
    export_dataset(home, "lab", "gavel", out, options={"models": str(models)})
    by_id = {job[1]: job for job in parse_trace(out)}
    assert by_id["ddlx:j-g"][0] == "CycleGAN" and by_id["ddlx:j-g"][5] == round(50 * 4.426088263367452) == 221
    # bert -> ResNet-50 (bs 64), measured on 4 GPUs too: 60 s x 9.451949566394442
    assert by_id["ddlx:j-e"][0] == "ResNet-50 (batch size 64)" and by_id["ddlx:j-e"][5] == 567
    assert by_id["ddlx:j-a"][0] == "ResNet-50 (batch size 64)"  # unmatched by the file: the auto rule

    fixed = tmp_path / "fixed.trace"
    export_dataset(home, "lab", "gavel", fixed, options={"models": "Transformer (batch size 64)"})
    steps = {job[1]: (job[0], job[5]) for job in parse_trace(fixed)}
    assert steps["ddlx:j-a"] == ("Transformer (batch size 64)", round(600.6 * 8.61775899193302)) == (
        "Transformer (batch size 64)", 5176)

    table = {"k80": {"('ResNet-18 (batch size 64)', 1)": {"null": 10.0}, "('ResNet-50 (batch size 64)', 2)":
                     {"null": 20.0}, "('Transformer (batch size 64)', 4)": {"null": 40.0},
                     "('LM (batch size 20)', 8)": {"null": 80.0, "('LM (batch size 20)', 8)": [1.0, 1.0]}}}
    (tmp_path / "tp.json").write_text(json.dumps(table))
    custom = tmp_path / "custom.trace"
    export_dataset(home, "lab", "gavel", custom, options={"throughputs": str(tmp_path / "tp.json"),
                                                          "worker": "k80"})
    # j-a: ResNet-50 is not measured on 1 GPU here -> ResNet-18; 600.6 x 10 = 6006
    assert [(job[0], job[5]) for job in parse_trace(custom)] == [
        ("ResNet-18 (batch size 64)", 6006), ("ResNet-50 (batch size 64)", 72000),
        ("Transformer (batch size 64)", 2400), ("LM (batch size 20)", 8000), ("ResNet-18 (batch size 64)", 500)]


@pytest.mark.parametrize(("options", "needle"), [
    ({"models": "nonsense"}, "--option models=nonsense: neither auto"),
    ({"worker": "k80"}, "--option worker=k80: the built-in throughputs are those of v100"),
    ({"throughputs": "missing.json"}, "--option throughputs=missing.json: no such file"),
])
def test_bad_options_fail_in_one_line(home: Path, tmp_path: Path, options: dict[str, str], needle: str) -> None:
    with pytest.raises(ExportError, match=needle.replace("(", r"\(")):
        export_dataset(home, "lab", "gavel", tmp_path / "x.trace", options=options)
    assert not (tmp_path / "x.trace").exists()


def test_bad_files_behind_options(home: Path, tmp_path: Path) -> None:
    (tmp_path / "tp.json").write_text(json.dumps({"v100": {"('A3C', 1)": {"null": 7.0}}}))
    with pytest.raises(ExportError, match="no entry for ResNet-18"):
        export_dataset(home, "lab", "gavel", tmp_path / "x.trace", options={"throughputs": str(tmp_path / "tp.json")})
    with pytest.raises(ExportError, match="no worker type 'p100'"):
        export_dataset(home, "lab", "gavel", tmp_path / "x.trace",
                       options={"throughputs": str(tmp_path / "tp.json"), "worker": "p100"})
    (tmp_path / "m.csv").write_text("key,job_type\ng1,GPT-3\n")
    with pytest.raises(ExportError, match=r"m.csv, line 2: expected key,job_type"):
        export_dataset(home, "lab", "gavel", tmp_path / "x.trace", options={"models": str(tmp_path / "m.csv")})


def test_the_command_reports_a_bad_option_cleanly(cli, home: Path, tmp_path: Path) -> None:
    done = cli("datasets", "export", "lab", "--format", "gavel", "--out", tmp_path / "x.trace", "--data-home", home,
               "--option", "models=nonsense")
    assert_clean_failure(done, "models=nonsense")
    unknown = cli("datasets", "export", "lab", "--format", "gavel", "--out", tmp_path / "x.trace",
                  "--data-home", home, "--option", "model=auto")
    assert_clean_failure(unknown, "no option 'model'", code=2)


def test_a_synthetic_sample_export(tmp_path: Path) -> None:
    out = tmp_path / "sample.trace"
    result = export_dataset(tmp_path / "empty", "philly", "gavel", out, use_sample=True)
    assert result.synthetic and result.rows > 0
    jobs = parse_trace(out)
    assert len(jobs) == result.rows and {job[6] for job in jobs} <= {1, 2, 4, 8}
    assert all(job[5] >= 1 and job[0] in {t for t, _ in V100} | {"LM (batch size 20)"} for job in jobs)
    assert jobs[0][-1] == 0.0
    document = json.loads(result.sidecar.read_text())
    assert document["label"] == "SYNTHETIC" and document["resources"][0]["format"] == "gavel"


def gavel_rounds_fail(total_steps: int, steps_per_s: float, scale_factor: int, round_s: int = 360) -> bool:
    """Gavel's simulator replaying a job alone: each round runs min(int(throughput x round), remaining)
    steps, split among the job's workers with `//`; a worker given 0 steps fails the job."""
    per_round, remaining = int(steps_per_s * round_s), total_steps
    while remaining > 0:
        steps = min(per_round, remaining)
        if steps // scale_factor <= 0:
            return True
        remaining -= steps
    return False


def test_no_last_round_leaves_a_worker_without_steps(tmp_path: Path) -> None:
    """An 8-GPU LM job of 7200 s: 7200 x 497.295 = 3,580,526 steps; rounds of int(497.295 x 360) =
    179,026 steps leave 6 for the 21st round, fewer than its 8 workers: Gavel would fail it. The
    export raises it by 2 steps to 3,580,528 (8 in the last round); the 3,600 s 2-GPU job needs no change."""
    rate = V100[("LM (batch size 20)", 8)]
    assert round(7200 * rate) == 3_580_526 and gavel_rounds_fail(3_580_526, rate, 8)
    (tmp_path / "jobs.csv").write_text(f"id,gpus,submit,start,end,workload\nbig,8,{T0},{T0},{T0 + 7200},LM\n"
                                       f"two,2,{T0 + 1},{T0 + 1},{T0 + 3601},\n")
    import_dataset("rounds", tmp_path / "jobs.csv", tmp_path / "home",
                   mapping="job_id=id,gpus=gpus,submit=submit,start=start,end=end,workload=workload")
    out = tmp_path / "rounds.trace"
    export_dataset(tmp_path / "home", "rounds", "gavel", out)
    jobs = parse_trace(out)
    assert [job[5] for job in jobs] == [3_580_528, round(3600 * V100[("ResNet-50 (batch size 64)", 2)])]
    assert not any(gavel_rounds_fail(job[5], V100[(job[0], job[6])], job[6]) for job in jobs)
    with pytest.raises(ExportError, match="round_s=0: expected a whole number"):
        export_dataset(tmp_path / "home", "rounds", "gavel", out, options={"round_s": "0"})
