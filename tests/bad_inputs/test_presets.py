"""Bad input to the importer's presets (philly-json, slurm, swf, itp) and to the Philly ingest, which
reads the same JSON job log: every malformed value that would change a count is refused.

Each refusal is run through the real command line against a data home that already holds a good
import of every preset and a good Philly ingest (the state to protect): exit 1, one `Error:` line
naming the input file (never the data home) and the line, job or field, no traceback, and the data
home and the input byte-identical afterwards. The positive cases import every job state `sacct`
prints and every real form of its TRES strings, with the counts worked out here from the rows
written.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import io
import json
import os
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ddlx.datasets import catalog
from tests.conftest import assert_clean_failure, tree_digest
from tests.test_philly_ingest import JOBS, write_philly_release

SWF_EXCERPT = Path(__file__).resolve().parents[1] / "data" / "swf" / "excerpt.swf"

# -- the good inputs --------------------------------------------------------------------------------

SACCT_HEADER = "JobID|JobName|User|Account|Partition|State|Submit|Start|End|AllocTRES|ReqTRES"
SACCT_ROWS = [
    "101|train|alice|nlp|gpu|COMPLETED|2024-03-01T10:00:00|2024-03-01T10:05:00|2024-03-01T12:05:00|"
    "billing=16,cpu=16,gres/gpu=4,mem=128G,node=1|billing=16,cpu=16,gres/gpu=4,mem=128G,node=1",
    "102|sweep|bob|cv|gpu|FAILED|2024-03-01T11:00:00|2024-03-01T11:00:20|2024-03-01T11:10:20|"
    "cpu=4,gres/gpu:a100=1,mem=32000M,node=1|cpu=4,gres/gpu:a100=1,mem=32000M,node=1",
    "103|waiting|dave|cv|gpu|PENDING|2024-03-02T09:00:00|Unknown|Unknown||billing=2,cpu=2,gres/gpu=1,mem=8G,node=1",
]
ITP_TEXT = "job_id,submission_time,duration,num_gpu\n1,0,3600,8\n2,60,120,1\n3,300,60,2\n"


def sacct(rows: list[str] = SACCT_ROWS) -> str:
    return "\n".join([SACCT_HEADER, *rows]) + "\n"


def job_log_text(jobs: list) -> str:
    """The job log as a JSON array with one job per line (job number n on line n + 1)."""
    return "[\n" + ",\n".join(json.dumps(job) for job in jobs) + "\n]\n"


def line_of(text: str, needle: str) -> int:
    """The number of the first line of `text` holding `needle`."""
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


@dataclass(frozen=True)
class Run:
    """What a case runs: the command (without `--data-home`), the folder of its input (checked
    unchanged afterwards) and the needles its Error line must hold."""

    args: tuple[str, ...]
    inputs: Path
    needles: tuple[str, ...]


def import_run(folder: Path, name: str, file: str, data: str | bytes, preset: str, *needles: str,
               options: tuple[str, ...] = ()) -> Run:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return Run(("datasets", "import", name, "--from", str(path), "--preset", preset, *options), folder,
               (file, *needles))


def ingest_run(folder: Path, job_log: str, *needles: str) -> Run:
    release = write_philly_release(folder, overrides={"cluster_job_log": job_log.encode()})
    return Run(("datasets", "ingest", "philly", "--from", str(release)), folder, ("cluster_job_log", *needles))


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data home holding a good import of each preset (slurm `hpc`, philly-json `log`, swf `swf`,
    itp `itp`) and a good Philly ingest: what every refused command must leave as it was."""
    from ddlx.datasets.importers import import_dataset
    from ddlx.datasets.ingest import ingest

    root = tmp_path_factory.mktemp("guarded")
    home = root / "home"
    good = root / "good"
    good.mkdir()
    (good / "sacct.txt").write_text(sacct())
    (good / "log.json").write_text(job_log_text(JOBS))
    shutil.copy(SWF_EXCERPT, good / "log.swf")
    (good / "cluster01.csv").write_text(ITP_TEXT)
    import_dataset("hpc", good / "sacct.txt", home, preset="slurm", tz="Europe/Berlin")
    import_dataset("log", good / "log.json", home, preset="philly-json", tz="America/Los_Angeles")
    import_dataset("swf", good / "log.swf", home, preset="swf")
    import_dataset("itp", good / "cluster01.csv", home, preset="itp")
    ingest("philly", write_philly_release(root / "release"), home)
    return home


def assert_refused(cli, home: Path, run: Run, code: int = 1,
                   while_running: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext) -> str:
    """Run `run` against `home` (inside `while_running()`): a clean failure holding the needles,
    naming the input rather than the data home, with the data home and the input byte-identical to
    before."""
    home_before, inputs_before = tree_digest(home), tree_digest(run.inputs)
    with while_running():
        result = cli(*run.args, "--data-home", home)
    line = assert_clean_failure(result, *run.needles, code=code)
    assert str(home) not in line, line
    assert tree_digest(home) == home_before
    assert tree_digest(run.inputs) == inputs_before
    return line


# -- one parser of Philly's job log: the philly-json import and the Philly ingest ----------------------

def _detail(jobs: list) -> dict:
    """The first detail entry of the first attempt of job app_01."""
    return jobs[0]["attempts"][0]["detail"][0]


def _set(change: Callable[[list], None]) -> Callable[[], list]:
    def jobs() -> list:
        copied = copy.deepcopy(JOBS)
        change(copied)
        return copied
    return jobs


FIRST_ENTRY = "job app_01, attempt 1, detail entry 1"
#: id -> (the faulty jobs, needles of the Error line). Each is a shape Philly's job log never holds.
SHAPES: dict[str, tuple[Callable[[], list], tuple[str, ...]]] = {
    "nested-gpu-list": (_set(lambda j: _detail(j).update(gpus=[["gpu0", "gpu1"]])),
                        ("field 'gpus'", FIRST_ENTRY, "GPU 1 of gpus", "is an array")),
    "gpu-numbers": (_set(lambda j: _detail(j).update(gpus=[0, 1])), ("field 'gpus'", FIRST_ENTRY, "the value 0")),
    "gpu-null": (_set(lambda j: _detail(j).update(gpus=["gpu0", None])),
                 ("field 'gpus'", FIRST_ENTRY, "GPU 2 of gpus", "the value null")),
    "gpu-object": (_set(lambda j: _detail(j).update(gpus=[{"name": "gpu0"}])), ("field 'gpus'", FIRST_ENTRY)),
    "gpus-a-string": (_set(lambda j: _detail(j).update(gpus="gpu0")), ("field 'gpus'", FIRST_ENTRY, "a string")),
    "detail-an-object": (_set(lambda j: j[0]["attempts"][0].update(detail={"ip": "m8a", "gpus": ["gpu0"]})),
                         ("field 'detail'", "job app_01, attempt 1", "an object")),
    "detail-entry-null": (_set(lambda j: j[0]["attempts"][0].update(detail=[None])),
                          ("field 'detail'", FIRST_ENTRY, "expected an object")),
    "attempt-null": (_set(lambda j: j[0].update(attempts=[None])),
                     ("field 'attempts'", "job app_01, attempt 1", "expected an object")),
    "attempts-an-object": (_set(lambda j: j[0].update(attempts={"start_time": None})),
                           ("field 'attempts'", "job app_01", "expected an array of attempts")),
    "ip-a-number": (_set(lambda j: _detail(j).update(ip=8)), ("field 'ip'", FIRST_ENTRY)),
    "user-an-array": (_set(lambda j: j[0].update(user=["u1"])), ("field 'user'", "job app_01")),
    "jobid-a-number": (_set(lambda j: j[2].update(jobid=3)), ("field 'jobid'", "job number 3 of the array")),
    "job-null": (_set(lambda j: j.append(None)), (f"job number {len(JOBS) + 1} of the array", "expected a job object")),
    "job-without-jobid": (_set(lambda j: j[5].pop("jobid")),
                          ("field 'jobid'", "a job has no jobid", "job 6 of the array", "u4")),
}


def _shape_text(case: str) -> str:
    return job_log_text(SHAPES[case][0]())


@pytest.mark.parametrize("path", ["import", "ingest"])
@pytest.mark.parametrize("case", list(SHAPES))
def test_a_job_log_shape_the_format_never_holds(cli, tmp_path: Path, guarded: Path, case: str, path: str) -> None:
    text, needles = _shape_text(case), SHAPES[case][1]
    if path == "import":
        run = import_run(tmp_path / "in", "log", "log.json", text, "philly-json", *needles)
    else:
        run = ingest_run(tmp_path / "in", text, *needles)
    assert_refused(cli, guarded, run)


def _duplicate_gpus_key() -> tuple[str, int]:
    text = job_log_text(JOBS)
    first = text.index('"gpus": ')
    return text[:first] + '"gpus": ["gpu9"], ' + text[first:], 2  # job app_01 is on line 2


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


#: id -> (the job log text, needles). Refused in the JSON text itself.
TEXTS: dict[str, Callable[[], tuple[str, tuple[str, ...]]]] = {
    "key-twice": lambda: (_duplicate_gpus_key()[0], ("field 'gpus'", "job app_01", "'gpus' twice")),
    "nested-100000-deep": lambda: (_deep(100_000), ("line 1", "at column 101", "deeper than 100 levels")),
    "nested-101-deep-in-a-job": lambda: (
        job_log_text([*JOBS[:3], {**JOBS[3], "user": json.loads(_deep(100))}, *JOBS[4:]]),
        ("line 5", "deeper than 100 levels")),  # the array is level 1, job 4 (line 5) level 2
}


@pytest.mark.parametrize("path", ["import", "ingest"])
@pytest.mark.parametrize("case", list(TEXTS))
def test_a_job_log_refused_in_its_text(cli, tmp_path: Path, guarded: Path, case: str, path: str) -> None:
    text, needles = TEXTS[case]()
    if path == "import":
        run = import_run(tmp_path / "in", "log", "log.json", text, "philly-json", *needles)
    else:
        run = ingest_run(tmp_path / "in", text, *needles)
    assert_refused(cli, guarded, run)


def test_both_paths_count_the_same_gpus_and_machines(guarded: Path) -> None:
    # Philly's rule, from the jobs written: the attempt with most GPUs (entries of its gpus lists),
    # the earliest on a tie; its machines are its distinct ips.
    expected = {}
    for job in JOBS:
        sizes = [(sum(len(d["gpus"]) for d in a["detail"]), len({d["ip"] for d in a["detail"]}))
                 for a in job["attempts"]]
        gpus = max((g for g, _ in sizes), default=0)
        machines = next((m for g, m in sizes if g == gpus), 0)
        expected[job["jobid"]] = (gpus, machines)
    for table in ("philly_jobs", "log_jobs"):
        rows = catalog.query(guarded, f"SELECT job_id, num_gpus, num_instances FROM {table}").rows()
        assert {job: (gpus, machines) for job, gpus, machines in rows} == expected, table


def test_the_depth_limit_is_exact() -> None:
    from ddlx.jsontext import MAX_JSON_DEPTH, JsonTooDeepError, load_json

    assert MAX_JSON_DEPTH == 100
    assert load_json(_deep(100)) == json.loads(_deep(100))
    assert load_json('["' + "[" * 500 + '"]') == ["[" * 500]  # brackets in a string are text
    with pytest.raises(JsonTooDeepError) as caught:
        load_json('{"a":\n ' + _deep(101) + "}")  # the object is level 1
    assert (caught.value.lineno, caught.value.colno) == (2, 101)


# -- Slurm: TRES strings and states ------------------------------------------------------------------

def _sacct_with(job: str, column: str, value: str) -> tuple[str, int]:
    """The good export with `column` of job `job` set to `value`, and that job's line."""
    columns = SACCT_HEADER.split("|")
    rows = []
    for row in SACCT_ROWS:
        fields = row.split("|")
        if fields[0] == job:
            fields[columns.index(column)] = value
        rows.append("|".join(fields))
    text = sacct(rows)
    return text, next(n for n, line in enumerate(text.splitlines(), 1) if line.startswith(f"{job}|"))


#: (id, job, column, value, what the Error line says about it)
SLURM_CASES = [
    ("entries-without-values", "101", "AllocTRES", "cpu8,gres/gpu", "entry 'cpu8' has no value"),
    ("gres-gpu-without-value", "101", "AllocTRES", "cpu=8,gres/gpu", "entry 'gres/gpu' has no value"),
    ("empty-value", "101", "AllocTRES", "cpu=8,gres/gpu=", "entry 'gres/gpu=' has no value"),
    ("repeated-key", "101", "AllocTRES", "gres/gpu=2,gres/gpu=4", "the name 'gres/gpu' is given twice"),
    ("repeated-typed-key", "102", "AllocTRES", "cpu=4,gres/gpu:a100=1,gres/gpu:a100=1",
     "'gres/gpu:a100' is given twice"),
    ("repeated-unread-key", "101", "AllocTRES", "billing=1,cpu=8,billing=2", "'billing' is given twice"),
    ("empty-entry", "101", "AllocTRES", "cpu=8,,mem=1G", "an empty entry"),
    ("trailing-comma", "101", "AllocTRES", "cpu=8,mem=1G,", "an empty entry"),
    ("count-in-words", "101", "AllocTRES", "cpu=eight,mem=1G", "the cpu count is not a number in digits"),
    ("count-with-exponent", "101", "AllocTRES", "cpu=8,gres/gpu=1e308", "the gres/gpu count is not a number"),
    ("negative-count", "101", "AllocTRES", "cpu=-1,gres/gpu=1", "the cpu count is not a number"),
    ("typed-count-in-words", "102", "AllocTRES", "cpu=4,gres/gpu:a100=one", "the gres/gpu:a100 count is not a number"),
    ("node-count-in-words", "101", "AllocTRES", "cpu=8,node=two", "the node count"),
    ("memory-unit", "101", "AllocTRES", "cpu=8,mem=64X", "mem is not a size"),
    ("upper-case-name", "101", "AllocTRES", "CPU=8,gres/gpu=4", "'CPU' is not a TRES name"),
    ("space-before-name", "101", "AllocTRES", "cpu=8, mem=4G", "' mem' is not a TRES name"),
    ("type-without-name", "101", "AllocTRES", "cpu=8,gres/gpu:=2", "'gres/gpu:' is not a TRES name"),
    ("gpus-outside-range", "101", "AllocTRES", "cpu=8,gres/gpu=2000000", "gives gpus outside"),
    ("requested-tres-of-a-pending-job", "103", "ReqTRES", "cpu=2,gres/gpu", "entry 'gres/gpu' has no value"),
    ("unknown-state", "102", "State", "EXPLODED", "unknown state 'EXPLODED'"),
    ("state-code-not-a-state", "102", "State", "CD", "unknown state 'CD'"),
]


@pytest.mark.parametrize("case, job, column, value, problem", SLURM_CASES, ids=[c[0] for c in SLURM_CASES])
def test_a_sacct_export_with_a_malformed_value(cli, tmp_path: Path, guarded: Path, case: str, job: str,
                                               column: str, value: str, problem: str) -> None:
    text, line = _sacct_with(job, column, value)
    run = import_run(tmp_path / "in", "hpc", "sacct.txt", text, "slurm", f"line {line}", f"field '{column}'",
                     problem, options=("--tz", "Europe/Berlin"))
    assert_refused(cli, guarded, run)


# Every job state of `man sacct` (JOB STATE CODES), with the canonical state docs/import.md gives it.
SACCT_STATES: dict[str, str] = {
    "BOOT_FAIL": "failed", "CANCELLED": "cancelled", "COMPLETED": "completed", "DEADLINE": "failed",
    "FAILED": "failed", "NODE_FAIL": "failed", "OUT_OF_MEMORY": "failed", "PENDING": "pending",
    "PREEMPTED": "cancelled", "RUNNING": "running", "REQUEUED": "pending", "RESIZING": "running",
    "REVOKED": "cancelled", "SUSPENDED": "running", "TIMEOUT": "failed",
}
#: How sacct also writes some of them: with the canceller's uid, or `+` when the field is too narrow.
STATE_SPELLINGS: dict[str, str] = {"CANCELLED by 1234": "cancelled", "CANCELLED+": "cancelled",
                                   "completed": "completed"}


def test_every_sacct_state_is_counted(cli, tmp_path: Path) -> None:
    from ddlx.datasets.importers.spec import SLURM_STATES

    assert sorted(SLURM_STATES) == sorted(SACCT_STATES)
    states = {**SACCT_STATES, **STATE_SPELLINGS}
    rows = [f"{200 + n}|j|u|a|gpu|{state}|2024-03-01T10:00:00|2024-03-01T10:01:00|2024-03-01T10:11:00|"
            "cpu=1,gres/gpu=1,mem=1G,node=1|" for n, state in enumerate(states)]
    (tmp_path / "sacct.txt").write_text(sacct(rows))
    home = tmp_path / "home"
    result = cli("datasets", "import", "states", "--from", tmp_path / "sacct.txt", "--preset", "slurm",
                 "--data-home", home)
    assert result.code == 0, result.err
    found = catalog.query(home, "SELECT raw_state, state FROM states_jobs").rows()
    assert dict(found) == states
    counted = dict(catalog.query(home, "SELECT state, count(*) FROM states_jobs GROUP BY state").rows())
    assert counted == dict(Counter(states.values()))
    assert sum(counted.values()) == len(rows)


#: Real TRES strings as sacct prints them (default, --noconvert, --units=G, energy, licences, file
#: systems, GPU memory, pending jobs), with what they give, worked out by hand:
#: (AllocTRES, ReqTRES, gpus, cpus, mem_gb, nodes, gpu_type).
TRES_FORMS = [
    ("billing=8,cpu=8,gres/gpu:a100=2,mem=64G,node=1", "", 2, 8, 64, 1, "a100"),
    ("cpu=4,gres/gpu=2,gres/gpu:v100=2,mem=2048M,node=1", "", 2, 4, 2, 1, "v100"),  # untyped count wins
    ("billing=16,cpu=16,energy=123456,gres/gpu:a100=1,gres/gpu:v100=3,mem=62.50G,node=2", "", 4, 16, 62.5, 2,
     "v100"),  # typed counts summed; the type with most GPUs
    ("cpu=2,mem=4000,node=1", "", 0, 2, 4000 / 1024, 1, None),  # no unit: MB; no GPU
    ("cpu=1,gres/gpumem=20G,gres/gpuutil=30,gres/gpu=1,mem=1T,node=1", "", 1, 1, 1024, 1, None),
    ("cpu=8,license/matlab@db=1,fs/disk=1024,bb/cray=1G,ic/ofed=1,vmem=0,pages=0,mem=512000K,node=1", "", 0, 8,
     512000 / 1024 / 1024, 1, None),
    ("cpu=128,gres/gpu:nvidia_a100_3g.20gb=8,mem=1.5T,node=4", "", 8, 128, 1536, 4, "nvidia_a100_3g.20gb"),
    ("", "billing=2,cpu=2,gres/gpu=1,mem=8G,node=1", 1, 2, 8, 1, None),  # pending: the request
    ("", "", 0, None, None, 1, None),  # no allocation, nothing requested
]


def test_every_real_tres_form_is_read(cli, tmp_path: Path) -> None:
    rows = [f"{300 + n}|j|u|a|gpu|{'COMPLETED' if alloc else 'PENDING'}|2024-03-01T10:00:00|"
            f"{'2024-03-01T10:01:00' if alloc else 'Unknown'}|{'2024-03-01T11:01:00' if alloc else 'Unknown'}|"
            f"{alloc}|{requested}" for n, (alloc, requested, *_) in enumerate(TRES_FORMS)]
    (tmp_path / "sacct.txt").write_text(sacct(rows))
    home = tmp_path / "home"
    result = cli("datasets", "import", "forms", "--from", tmp_path / "sacct.txt", "--preset", "slurm",
                 "--data-home", home)
    assert result.code == 0, result.err
    found = {r[0]: r[1:] for r in catalog.query(
        home, "SELECT job_id, num_gpus, num_cpus, mem_gb, num_instances, gpu_type FROM forms_jobs").rows()}
    expected = {str(300 + n): form[2:] for n, form in enumerate(TRES_FORMS)}
    assert found.keys() == expected.keys()
    for job, (gpus, cpus, mem_gb, nodes, gpu_type) in expected.items():
        assert found[job][0] == gpus and found[job][1] == cpus and found[job][3] == nodes, (job, found[job])
        assert found[job][4] == gpu_type, (job, found[job])
        assert (found[job][2] is None and mem_gb is None) or found[job][2] == pytest.approx(mem_gb), (job, found[job])
    # GPU-hours: the one-hour jobs that ran, from the table above
    ran_gpus = sum(form[2] for form in TRES_FORMS if form[0])
    gpu_hours = catalog.query(home, "SELECT sum(num_gpus * run_s) / 3600 FROM forms_jobs").item()
    assert gpu_hours == pytest.approx(ran_gpus)


# -- swf and itp -----------------------------------------------------------------------------------

def test_an_swf_sidecar_nested_too_deep(cli, tmp_path: Path, guarded: Path) -> None:
    folder = tmp_path / "in"
    run = import_run(folder, "swf", "log.swf", SWF_EXCERPT.read_bytes(), "swf")
    (folder / "log.swf.datapackage.json").write_text('{"codes": ' + _deep(100_000) + "}")
    assert_refused(cli, guarded, Run(run.args, folder, ("log.swf.datapackage.json", "deeper than 100 levels")))


def test_an_swf_field_that_is_no_number(cli, tmp_path: Path, guarded: Path) -> None:
    text = SWF_EXCERPT.read_text()
    lines = text.splitlines()
    number = next(n for n, line in enumerate(lines, 1) if line.split()[:1] == ["3"])
    fields = lines[number - 1].split()
    fields[4] = "four"  # allocated processors: read as the GPUs of the job
    lines[number - 1] = " ".join(fields)
    run = import_run(tmp_path / "in", "swf", "log.swf", "\n".join(lines) + "\n", "swf", f"line {number}")
    assert_refused(cli, guarded, run)


def test_an_itp_gpu_count_that_is_no_number(cli, tmp_path: Path, guarded: Path) -> None:
    text = ITP_TEXT.replace("2,60,120,1", "2,60,120,one")
    run = import_run(tmp_path / "in", "itp", "cluster01.csv", text, "itp", f"line {line_of(text, 'one')}",
                     "field 'num_gpu'", "'one'")
    assert_refused(cli, guarded, run)


# -- inputs that cannot be read --------------------------------------------------------------------

@contextlib.contextmanager
def reading_denied(denied: Path) -> Iterator[None]:
    """While it lasts, opening `denied` raises PermissionError, as for a file without read permission
    (which root, running the tests in CI, could read anyway)."""
    real_open, real_os_open = builtins.open, os.open

    def refuse(file) -> None:
        if isinstance(file, (str, bytes, os.PathLike)) and os.path.abspath(os.fsdecode(file)) == str(denied):
            raise PermissionError(13, "Permission denied", os.fsdecode(file))

    def fake_open(file, *args, **kwargs):
        refuse(file)
        return real_open(file, *args, **kwargs)

    def fake_os_open(file, *args, **kwargs):
        refuse(file)
        return real_os_open(file, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(builtins, "open", fake_open)
        patch.setattr(io, "open", fake_open)
        patch.setattr(os, "open", fake_os_open)
        yield


UNREADABLE = {
    "slurm": lambda folder: import_run(folder, "hpc", "sacct.txt", sacct(), "slurm"),
    "philly-json": lambda folder: import_run(folder, "log", "log.json", job_log_text(JOBS), "philly-json"),
    "swf": lambda folder: import_run(folder, "swf", "log.swf", SWF_EXCERPT.read_bytes(), "swf"),
    "itp": lambda folder: import_run(folder, "itp", "cluster01.csv", ITP_TEXT, "itp"),
    "philly-ingest-job-log": lambda folder: ingest_run(folder, job_log_text(JOBS)),
}


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_an_input_that_cannot_be_read_is_named(cli, tmp_path: Path, guarded: Path, case: str) -> None:
    run = UNREADABLE[case](tmp_path / "in")
    denied = next(p for p in sorted(run.inputs.rglob("*")) if p.name == run.needles[0])
    line = assert_refused(cli, guarded, Run(run.args, run.inputs, (str(denied), "cannot be read", "Permission denied")),
                          while_running=lambda: reading_denied(denied.resolve()))
    assert "store" not in line


def test_a_machine_list_that_cannot_be_read_is_named(cli, tmp_path: Path, guarded: Path) -> None:
    release = write_philly_release(tmp_path / "in")
    denied = release / "cluster_machine_list"
    run = Run(("datasets", "ingest", "philly", "--from", str(release)), release,
              (str(denied), "cannot be read", "Permission denied"))
    assert_refused(cli, guarded, run, while_running=lambda: reading_denied(denied.resolve()))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_in_place_of_the_table(cli, tmp_path: Path, guarded: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    os.mkfifo(folder / "sacct.txt")
    run = Run(("datasets", "import", "hpc", "--from", str(folder / "sacct.txt"), "--preset", "slurm"), folder,
              ("sacct.txt", "FIFO", "expected a file"))
    assert_refused(cli, guarded, run)


def test_a_folder_in_place_of_the_job_log(cli, tmp_path: Path, guarded: Path) -> None:
    release = write_philly_release(tmp_path / "in")
    (release / "cluster_job_log").unlink()
    (release / "cluster_job_log").mkdir()
    run = Run(("datasets", "ingest", "philly", "--from", str(release)), release,
              ("cluster_job_log", "is a folder", "expected a file"))
    assert_refused(cli, guarded, run)
