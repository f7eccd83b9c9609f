"""Shared fixtures: a tiny hand-built PAI release whose every derived number is worked out by hand,
and helpers to run the CLI in-process exactly as a user would."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
#: The folder of larger real trace files some tests read in place: `$DDLX_SHARED_TRACES`, else
#: `../shared/traces` beside the repo. Tests that need it skip where it is absent.
SHARED_TRACES = Path(os.environ.get("DDLX_SHARED_TRACES") or SHARED / "traces")

#: Marks a test that reads the real trace files of ../shared/traces (skipped where they are absent).
needs_shared_traces = pytest.mark.skipif(not SHARED_TRACES.is_dir(), reason="../shared/traces is not beside the repo")

#: Excerpts of real trace files committed in tests/data/real, at the paths the full files have
#: under traces/ (described in tests/data/README.md).
EXCERPTS = Path(__file__).resolve().parent / "data" / "real"
#: True where the full real files of ../shared/traces are beside the repo.
FULL_TRACES = SHARED_TRACES.is_dir()


def real_file(relative: str) -> Path:
    """The real file or folder `relative` (a path under traces/): the full one where
    ../shared/traces is present, else its excerpt in tests/data/real."""
    return (SHARED_TRACES if FULL_TRACES else EXCERPTS) / relative


def real_itp_archive(folder: Path) -> Path:
    """The real ITP archive: `raw-traces.tar.gz` of ../shared/traces (ten clusters) where present,
    else a tar.gz written in `folder` holding the excerpt `cluster01.csv` as its one member."""
    if FULL_TRACES:
        return SHARED_TRACES / "itp-elasticflow" / "raw-traces.tar.gz"
    data = (EXCERPTS / "itp-elasticflow" / "cluster01.csv").read_bytes()
    archive = folder / "raw-traces.tar.gz"
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("cluster01.csv")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return archive

# Five jobs, written in the official headerless format. Times are seconds; hand-derived facts:
#   j1 Terminated: submit 1000, instances start 1010 and 1030, job end 5000 -> queue 10, run 3990;
#      task worker inst_num 2 x plan_gpu 50 -> 1.0 GPU, fractional; 2 x 400 % CPU -> 8 cores; 2 x 10 GB.
#   j2 Failed: submit 2000, tasks ps (1 x 600 % CPU, no GPU) + worker (4 x 100 % GPU on V100),
#      first instance 2100, end 2600 -> queue 100, run 500; 4 GPUs, not fractional; 6 + 4 x 2 = 14 cores.
#   j3 Running: submit 3000, end 0 (missing), instance start 3005 -> queue 5, run NULL; 0.25 GPU on P100.
#   j4 Waiting: submit 4000, no end, task start empty, no instance -> never started.
#   j5 Terminated CPU-only: submit 100000, instance 100000-100060, end 100060 -> queue 0, run 60.
PAI_FIXTURE: dict[str, list[str]] = {
    "pai_job_table": [
        "j1,inst1,u1,Terminated,1000.0,5000.0",
        "j2,inst2,u1,Failed,2000.0,2600.0",
        "j3,inst3,u2,Running,3000.0,0.0",
        "j4,inst4,u3,Waiting,4000.0,",
        "j5,inst5,u2,Terminated,100000.0,100060.0",
    ],
    "pai_task_table": [
        "j1,worker,2.0,Terminated,1000.0,5000.0,400.0,10.0,50.0,T4",
        "j2,ps,1.0,Failed,2000.0,2600.0,600.0,5.0,,",
        "j2,worker,4.0,Failed,2000.0,2600.0,200.0,8.0,100.0,V100",
        "j3,tensorflow,1.0,Running,3000.0,0.0,100.0,2.0,25.0,P100",
        "j4,tensorflow,1.0,Waiting,0.0,,100.0,2.0,100.0,T4",
        "j5,worker,1.0,Terminated,100000.0,100060.0,100.0,1.0,,",
    ],
    "pai_instance_table": [
        "j1,worker,i1a,w1a,inst1,Terminated,1010.0,5000.0,m1",
        "j1,worker,i1b,w1b,inst1,Terminated,1030.0,4990.0,m1",
        "j2,ps,i2p,w2p,inst2,Failed,2100.0,2600.0,m4",
        "j2,worker,i2a,w2a,inst2,Failed,2150.0,2600.0,m2",
        "j3,tensorflow,i3,w3,inst3,Running,3005.0,,m3",
        "j5,worker,i5,w5,inst5,Terminated,100000.0,100060.0,m4",
        "jX,worker,iX,wX,instX,Terminated,10.0,5.0,m1",
    ],
    "pai_sensor_table": [
        "j1,worker,w1a,inst1,m1,/dev/nvidia0,250.0,150.0,3.0,4.0,10.0,20.0,100.0,200.0,3.0,4.0",
        "j1,worker,w1b,inst1,m1,/dev/nvidia1,120.0,20.0,2.0,3.0,5.0,6.0,100.0,200.0,3.0,4.0",
        "j2,worker,w2a,inst2,m2,/dev/nvidia0,300.0,80.0,2.0,3.0,5.0,12.0,100.0,200.0,3.0,4.0",
    ],
    "pai_group_tag_table": [
        "inst1,u1,,g1,bert",
        "inst2,u1,V100,g1,",
        "inst9,u9,,g9,",
    ],
    "pai_machine_spec": [
        "m1,T4,96,512,2",
        "m2,V100,96,512,8",
        "m3,P100,64,512,2",
        "m4,CPU,96,512,0",
    ],
    "pai_machine_metric": [
        "w1a,m1,1010,5000,0.1,3.0,10.0,120.0,5.0,1000.0,2.0,13.0",
        "w2a,m2,2150,2600,0.1,3.0,10.0,60.0,5.0,1000.0,1.0,13.0",
    ],
}


def write_pai_release(folder: Path, archives: bool = True,
                      overrides: dict[str, bytes] | None = None) -> Path:
    """Write the hand-built release: official `<table>.tar.gz` files, or extracted `<table>.csv`."""
    folder.mkdir(parents=True, exist_ok=True)
    for table, rows in PAI_FIXTURE.items():
        data = (overrides or {}).get(table, ("\n".join(rows) + "\n").encode())
        if archives:
            with tarfile.open(folder / f"{table}.tar.gz", "w:gz") as tar:
                info = tarfile.TarInfo(f"{table}.csv")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        else:
            (folder / f"{table}.csv").write_bytes(data)
    return folder


@contextlib.contextmanager
def _environment_variable(name: str, value: str) -> Iterator[None]:
    """`name` set to `value` inside the block, restored (or unset) after it."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


@pytest.fixture(autouse=True, scope="session")
def cache_of_the_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The tests' kept analysis results go to a folder of the test session (`DDLX_CACHE_DIR`, also
    read by the commands they run), never to the user's cache folder. Under pytest-xdist every
    worker runs its own session, so no two workers share this folder."""
    folder = tmp_path_factory.mktemp("cache")
    with _environment_variable("DDLX_CACHE_DIR", str(folder)):
        yield folder


@pytest.fixture(autouse=True, scope="session")
def data_home_of_the_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The data home a command uses when a test names none (`DDLX_HOME`): a folder of the test
    session (of each pytest-xdist worker), never the user's data home nor one shared by workers."""
    folder = tmp_path_factory.mktemp("data-home") / "ddlx-home"
    with _environment_variable("DDLX_HOME", str(folder)):
        yield folder


@pytest.fixture
def duckdb_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """DuckDB on one thread for every catalog connection: two runs compared to the bit then differ
    only where their code does (DuckDB's parallel sums differ in the last bit from run to run)."""
    from ddlx.datasets import catalog

    bound = catalog.bound_memory

    def bound_on_one_thread(con, spill_dir: Path) -> None:
        bound(con, spill_dir)
        con.execute("SET threads = 1")

    monkeypatch.setattr(catalog, "bound_memory", bound_on_one_thread)


@pytest.fixture
def speedups_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every speed-up of the analysis on (`DDLX_PLAIN` unset, `ddlx.analysis.fast`) for a test of one
    of them, also where the test runs on the plain path too (`analysis_path`)."""
    monkeypatch.delenv("DDLX_PLAIN", raising=False)


#: The test files of the analysis modules (names starting so): each of their tests runs twice, with
#: the speed-ups on and on the plain path (`DDLX_PLAIN=1`, `ddlx.analysis.fast`), but in a file
#: that sets `BOTH_PATHS = False` (the tests of a speed-up itself).
BOTH_PATHS_PREFIX = "test_analysis_"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    module = metafunc.module
    if module.__name__.rpartition(".")[2].startswith(BOTH_PATHS_PREFIX) and getattr(module, "BOTH_PATHS", True):
        metafunc.parametrize("analysis_path", ["speedups", "plain"], indirect=True)


@pytest.fixture(autouse=True)
def analysis_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """The path a test of an analysis module takes (`BOTH_PATHS_PREFIX`): `speedups` (`DDLX_PLAIN`
    unset) or `plain` (`DDLX_PLAIN=1`); None, leaving the environment alone, for any other test.
    Fixtures of a wider scope are made before it, with the suite's own environment."""
    path = getattr(request, "param", None)
    if path == "plain":
        monkeypatch.setenv("DDLX_PLAIN", "1")
    elif path == "speedups":
        monkeypatch.delenv("DDLX_PLAIN", raising=False)
    return path


def generated_pai_home(factory: pytest.TempPathFactory, name: str, seed: int, scale: float = 0.004) -> Path:
    """The data home of a SYNTHETIC PAI release of `scale` (every table) generated with `seed` and
    ingested, in a new temporary folder named after `name`."""
    from ddlx.datasets.ingest import ingest
    from ddlx.traces.pai.generator import generate

    folder = factory.mktemp(name)
    generate(folder / "release", scale=scale, seed=seed)
    ingest("pai", folder / "release", folder / "home")
    return folder / "home"


@pytest.fixture
def pai_release(tmp_path: Path) -> Path:
    return write_pai_release(tmp_path / "release")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


class CliResult:
    def __init__(self, code: int, out: str, err: str):
        self.code, self.out, self.err = code, out, err


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    """Run `ddlx ARGS...` in-process through the real entry point; returns code, stdout, stderr."""
    from ddlx.cli.main import run

    def invoke(*args: str) -> CliResult:
        capsys.readouterr()
        monkeypatch.setattr(sys, "argv", ["ddlx", *map(str, args)])
        code = 0
        try:
            run()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return invoke


def assert_clean_failure(result, *needles: str, code: int = 1) -> str:
    """A failed command as a user must see it: exit `code` (1: bad input or a failure; 2: a mistake
    in the command line), one `Error:` line (the last one; progress lines may precede it) holding
    every needle, no traceback. Returns that line."""
    assert result.code == code, (result.code, result.err)
    lines = result.err.strip().splitlines()
    errors = [line for line in lines if line.startswith("Error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], result.err
    assert "Traceback" not in result.err
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])
    return errors[0]


def row_where(frame, **where: object) -> dict:
    """The one row of the polars `frame` whose columns equal `where` (asserts there is exactly one)."""
    import polars as pl

    for key, value in where.items():
        frame = frame.filter(pl.col(key) == value)
    assert frame.height == 1, (where, frame)
    return frame.row(0, named=True)


def tree_digest(folder: Path) -> dict[str, str]:
    """Every file below `folder` (hidden ones too) by relative path, with its sha256: equal digests
    mean byte-identical trees. Lock files, which ddlx creates empty and never fills, are left out."""
    import hashlib

    if not folder.exists():
        return {}
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*"))
            if path.is_file() and not path.name.endswith(".lock")}
