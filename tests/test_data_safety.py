"""No fault loses data: a full disk or a file-size limit at any step of ingest, import and analyze,
a kill at any moment, and a reader running while its trace is ingested again.

The full-disk cases run the real command in a subprocess on a small tmpfs (mounted by the test;
skipped where mounting is not allowed), filled so that the write fails at a different step each
time. Every case asserts: exit 0 with a readable new state, or exit 1 with one `Error:` line and no
traceback, the data home (or results folder) byte-identical to before, and the catalog readable.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ddlx.analysis.context import open_trace
from ddlx.datasets import catalog
from ddlx.datasets.ingest import ingest
from ddlx.datasets.store import PENDING_MARKER, RETIRED_MARKER
from ddlx.datasets.synthetic import write_synthetic_release
from tests.conftest import tree_digest

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name != "posix", reason="POSIX file systems and signals")]

MIB = 1 << 20


def run_ddlx(*args: object, file_size_limit: int | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the `ddlx` command in a subprocess (optionally under a file-size limit in bytes)."""
    def limit() -> None:
        if file_size_limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))

    return subprocess.run([sys.executable, "-m", "ddlx", *map(str, args)], capture_output=True, text=True,
                          preexec_fn=limit, timeout=timeout)


def assert_one_error_line(proc: subprocess.CompletedProcess, *needles: str) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert lines and lines[-1].startswith("Error: "), proc.stderr[-2000:]
    assert sum(line.startswith("Error: ") for line in lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[-1], (needle, lines[-1])
    return lines[-1]


def jobs_count(home: Path) -> int:
    return int(catalog.query(home, "SELECT count(*) FROM jobs").item())


@pytest.fixture(scope="module")
def pai_small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    release = tmp_path_factory.mktemp("pai-release")
    write_synthetic_release("pai", release, scale=0.005, seed=11)
    return release


class SmallDisk:
    """A tmpfs of a few MiB at `root`, with `leave_free(n)` to fill it up to n bytes of room."""

    def __init__(self, root: Path):
        self.root = root
        self.filler = root / "filler"

    def free_bytes(self) -> int:
        stat = os.statvfs(self.root)
        return stat.f_bavail * stat.f_frsize

    def leave_free(self, room: int) -> None:
        self.filler.unlink(missing_ok=True)
        fill = self.free_bytes() - room
        if fill > 0:
            with open(self.filler, "wb") as handle:
                os.posix_fallocate(handle.fileno(), 0, fill)

    def empty(self) -> None:
        self.filler.unlink(missing_ok=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    root = tmp_path / "disk"
    root.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(root)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield SmallDisk(root)
    finally:
        subprocess.run(["umount", "-l", str(root)], capture_output=True)


def touch_all(folder: Path, ns: int) -> None:
    """Give every input file a new modification time, so the next ingest does real work."""
    for path in folder.iterdir():
        os.utime(path, ns=(ns, ns))


# --- a full disk -----------------------------------------------------------------------------------

def test_ingest_on_a_full_disk_keeps_the_previous_state_at_every_step(pai_small: Path, small_disk: SmallDisk) -> None:
    home = small_disk.root / "home"
    assert run_ddlx("datasets", "ingest", "pai", "--from", pai_small, "--data-home", home).returncode == 0
    jobs = jobs_count(home)
    store_bytes = sum(p.stat().st_size for p in (home / "store").rglob("*") if p.is_file())
    outcomes = []
    # from no room at all to more than a new version needs: each step fails somewhere else
    for step, room in enumerate([0, 64 * 1024, MIB // 2, 2 * MIB, 4 * MIB, store_bytes // 2, store_bytes,
                                 store_bytes + 2 * MIB, 3 * store_bytes, 40 * MIB]):
        touch_all(pai_small, 10**9 * (step + 1))
        small_disk.leave_free(room)
        before = tree_digest(home)
        proc = run_ddlx("datasets", "ingest", "pai", "--from", pai_small, "--data-home", home)
        small_disk.empty()
        if proc.returncode == 0:
            outcomes.append("new")
        else:
            line = assert_one_error_line(proc, "No space left on device")
            assert line.startswith(f"Error: {home}"), line  # the disk is blamed, not the input
            assert tree_digest(home) == before, room
            outcomes.append("old")
        assert jobs_count(home) == jobs
        versions = [p for p in (home / "store" / "pai").iterdir() if not p.name.startswith(".")]
        assert len(versions) == 1, versions  # no orphan, no leftover once the run is over
    print(f"{outcomes=}")  # shown with pytest -s: the evidence of each run
    assert "old" in outcomes and outcomes[-1] == "new", outcomes


def test_a_file_size_limit_while_writing_the_catalog_keeps_the_previous_catalog(pai_small: Path,
                                                                                  tmp_path: Path) -> None:
    """The catalog file is the last thing an ingest writes: a limit just under its size fails there."""
    home = tmp_path / "home"
    ingest("pai", pai_small, home)
    jobs = jobs_count(home)
    catalog_size = (home / "catalog.duckdb").stat().st_size
    version = next(p for p in (home / "store" / "pai").iterdir())
    largest_rebuilt = max((version / f"{t}.parquet").stat().st_size for t in ("pai_jobs", "pai_machine_spec"))
    assert largest_rebuilt < catalog_size - 64 * 1024, (largest_rebuilt, catalog_size)
    touch_all(pai_small, 7 * 10**9)
    before = tree_digest(home)
    proc = run_ddlx("datasets", "ingest", "pai", "--from", pai_small, "--table", "pai_machine_spec",
                    "--data-home", home, file_size_limit=catalog_size - 64 * 1024)
    assert_one_error_line(proc, "catalog.duckdb", "File too large", "ulimit")
    assert tree_digest(home) == before
    assert jobs_count(home) == jobs
    again = run_ddlx("datasets", "ingest", "pai", "--from", pai_small, "--table", "pai_machine_spec",
                     "--data-home", home)
    assert again.returncode == 0, again.stderr
    assert jobs_count(home) == jobs


def test_import_on_a_full_disk_keeps_the_previous_state(small_disk: SmallDisk, tmp_path: Path) -> None:
    home = small_disk.root / "home"
    table = tmp_path / "jobs.csv"
    rows = 40_000
    table.write_text("submitted,runtime,n_gpu,owner\n" +
                     "".join(f"{1_600_000_000 + 7 * i},{60 + i % 3600},{i % 8},user{i % 97}\n" for i in range(rows)))
    args = ("datasets", "import", "mine", "--from", table,
            "--map", "submit=submitted,duration=runtime,gpus=n_gpu,user=owner", "--data-home", home)
    assert run_ddlx(*args).returncode == 0
    assert jobs_count(home) == rows
    outcomes = []
    for step, room in enumerate([0, 32 * 1024, 256 * 1024, MIB, 4 * MIB, 16 * MIB]):
        os.utime(table, ns=(10**9 * (step + 1),) * 2)
        small_disk.leave_free(room)
        before = tree_digest(home)
        proc = run_ddlx(*args)
        small_disk.empty()
        if proc.returncode == 0:
            outcomes.append("new")
        else:
            assert_one_error_line(proc, "No space left on device")
            assert tree_digest(home) == before
            outcomes.append("old")
        assert jobs_count(home) == rows
    print(f"{outcomes=}")  # shown with pytest -s: the evidence of each run
    assert "old" in outcomes and "new" in outcomes, outcomes


def test_analyze_on_a_full_disk_keeps_the_previous_results(pai_small: Path, small_disk: SmallDisk,
                                                            tmp_path: Path) -> None:
    home = tmp_path / "home"
    ingest("pai", pai_small, home)
    out = small_disk.root / "results"
    first = run_ddlx("analyze", "pai-trace", "-m", "overview", "--out", out, "--data-home", home)
    assert first.returncode == 0, first.stderr
    outcomes = []
    for room in [0, 16 * 1024, 256 * 1024, MIB, 2 * MIB, 30 * MIB]:
        small_disk.leave_free(room)
        before = tree_digest(out)
        proc = run_ddlx("analyze", "pai-trace", "--out", out, "--data-home", home)
        small_disk.empty()
        if proc.returncode == 0:
            outcomes.append("new")
            assert {p.name for p in out.iterdir() if p.is_dir()} >= {"overview", "queueing", "utilization"}
        else:
            assert_one_error_line(proc, str(out), "No space left on device")
            assert tree_digest(out) == before
            outcomes.append("old")
        assert not [p for p in small_disk.root.iterdir() if ".tmp-" in p.name or ".old-" in p.name]
    print(f"{outcomes=}")  # shown with pytest -s: the evidence of each run
    assert "old" in outcomes and outcomes[-1] == "new", outcomes


# --- kills -----------------------------------------------------------------------------------------

def _kill_after(args: list[object], delay: float) -> int:
    process = subprocess.Popen([sys.executable, "-m", "ddlx", *map(str, args)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    return process.wait(timeout=60)


def _timed(args: list[object]) -> float:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "ddlx", *map(str, args)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return time.monotonic() - started


def test_kills_during_analyze_leave_the_old_or_the_new_results_folder(pai_small: Path, tmp_path: Path) -> None:
    """The old folder holds one module, the new one all: a mix would show files of both runs, and
    the summary would not list exactly the modules whose folders are there."""
    home, out = tmp_path / "home", tmp_path / "results"
    ingest("pai", pai_small, home)
    old_args = ["analyze", "pai-trace", "-m", "overview", "--out", out, "--data-home", home]
    new_args = ["analyze", "pai-trace", "--out", out, "--data-home", home]
    _timed(old_args)
    old_names = set(tree_digest(out))
    duration = _timed(new_args)
    new_names = set(tree_digest(out))
    assert old_names < new_names
    states = []
    for fraction in (0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 1.0):
        _timed(old_args)
        before = tree_digest(out)
        _kill_after(new_args, duration * fraction)
        now = tree_digest(out)
        if now == before:
            states.append("old")
        else:
            assert set(now) == new_names, sorted(set(now) ^ new_names)
            states.append("new")
        summary = json.loads((out / "summary.json").read_text())
        assert set(summary["modules"]) == {p.name for p in out.iterdir() if p.is_dir()}
    # the next run cleans what killed runs left beside the folder
    _timed(old_args)
    assert set(tree_digest(out)) == old_names
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".results")]
    print(f"{states=}")  # shown with pytest -s: the evidence of each run
    assert "old" in states, states


def test_kills_during_ingest_leave_the_old_or_the_new_catalog(pai_small: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    ingest("pai", pai_small, home)
    jobs = jobs_count(home)
    args = ["datasets", "ingest", "pai", "--from", pai_small, "--data-home", home]
    touch_all(pai_small, 3 * 10**9)
    duration = _timed(args)
    versions_seen = []
    for step, fraction in enumerate((0.2, 0.4, 0.6, 0.8, 0.9, 0.95, 1.0, 1.05)):
        touch_all(pai_small, (step + 4) * 10**9)
        before = catalog.read_registrations(home)["pai"].version
        _kill_after(args, duration * fraction)
        after = catalog.read_registrations(home)["pai"]
        versions_seen.append("new" if after.version != before else "old")
        assert jobs_count(home) == jobs  # readable, whole, and the same jobs either way
        assert not (after.store_dir / PENDING_MARKER).exists() or after.version != before
    touch_all(pai_small, 99 * 10**9)
    result = ingest("pai", pai_small, home)  # the next run completes and clears every leftover
    assert not result.skipped
    assert sorted(p.name for p in (home / "store" / "pai").iterdir()) == [result.store_dir.name]
    assert not (result.store_dir / PENDING_MARKER).exists()
    assert jobs_count(home) == jobs
    print(f"{versions_seen=}")  # shown with pytest -s: the evidence of each run
    assert "old" in versions_seen, versions_seen


_DIE_AROUND_THE_CATALOG_WRITE = """
import os, sys
from pathlib import Path
from ddlx.datasets import catalog, ingest
write = catalog.write_catalog
def dying(home, registrations):
    if sys.argv[3] == "after":
        write(home, registrations)
    os._exit(9)
catalog.write_catalog = dying
ingest.ingest("pai", Path(sys.argv[1]), Path(sys.argv[2]))
"""


@pytest.mark.parametrize("moment", ["before", "after"])
def test_a_death_beside_the_catalog_write_leaves_no_version_behind(pai_small: Path, tmp_path: Path,
                                                                   moment: str) -> None:
    """The moment a kill may fall on by chance, made certain: the process dies just before or just
    after the catalog naming the new version is written. The catalog names one whole version, and
    the next ingest leaves exactly one version folder, the one it wrote."""
    home = tmp_path / "home"
    first = ingest("pai", pai_small, home)
    jobs = jobs_count(home)
    touch_all(pai_small, 5 * 10**9)
    proc = subprocess.run([sys.executable, "-c", _DIE_AROUND_THE_CATALOG_WRITE, pai_small, home, moment],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 9, proc.stderr[-2000:]
    named = catalog.read_registrations(home)["pai"].store_dir
    assert (named == first.store_dir) == (moment == "before")
    assert jobs_count(home) == jobs
    touch_all(pai_small, 6 * 10**9)
    result = ingest("pai", pai_small, home)
    assert sorted(p.name for p in (home / "store" / "pai").iterdir()) == [result.store_dir.name]
    assert not (result.store_dir / RETIRED_MARKER).exists()
    assert jobs_count(home) == jobs


def test_kills_during_import_leave_the_old_or_the_new_catalog(tmp_path: Path) -> None:
    home, table = tmp_path / "home", tmp_path / "jobs.csv"
    rows = 200_000
    table.write_text("submitted,runtime,n_gpu\n" +
                     "".join(f"{1_600_000_000 + i},{60 + i % 600},{i % 4}\n" for i in range(rows)))
    args = ["datasets", "import", "mine", "--from", table, "--map", "submit=submitted,duration=runtime,gpus=n_gpu",
            "--data-home", home]
    duration = _timed(args)
    states = []
    for step, fraction in enumerate((0.3, 0.6, 0.8, 0.9, 1.0)):
        os.utime(table, ns=((step + 2) * 10**9,) * 2)
        before = catalog.read_registrations(home)["mine"].version
        _kill_after(args, duration * fraction)
        states.append("new" if catalog.read_registrations(home)["mine"].version != before else "old")
        assert jobs_count(home) == rows
    os.utime(table, ns=(99 * 10**9,) * 2)
    assert subprocess.run([sys.executable, "-m", "ddlx", *map(str, args)], capture_output=True).returncode == 0
    assert len([p for p in (home / "store" / "mine").iterdir()]) == 1
    print(f"{states=}")  # shown with pytest -s: the evidence of each run
    assert "old" in states, states


# --- readers and writers ---------------------------------------------------------------------------

def test_a_reader_keeps_its_version_while_the_trace_is_ingested_again(pai_small: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    ingest("pai", pai_small, home)
    jobs = jobs_count(home)
    with open_trace(home, "pai") as ctx:
        old_version = catalog.read_registrations(home)["pai"].store_dir
        touch_all(pai_small, 5 * 10**9)
        new = ingest("pai", pai_small, home)
        assert new.store_dir != old_version
        # the reader's files are still there, marked retired, and every table still reads
        assert (old_version / RETIRED_MARKER).exists()
        assert ctx.query("SELECT count(*) AS n FROM pai_task_table").item() > 0
        assert ctx.query(f"SELECT count(*) AS n FROM {ctx.jobs}").item() == jobs
    # once the reader is gone, the next ingest deletes the retired version
    touch_all(pai_small, 6 * 10**9)
    newest = ingest("pai", pai_small, home)
    assert sorted(p.name for p in (home / "store" / "pai").iterdir()) == [newest.store_dir.name]


def test_analyze_running_during_an_ingest_of_its_trace_succeeds(pai_small: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    ingest("pai", pai_small, home)
    for round_ in range(3):
        touch_all(pai_small, (round_ + 20) * 10**9)
        analysis = subprocess.Popen([sys.executable, "-m", "ddlx", "analyze", "pai-trace", "--out",
                                     tmp_path / f"r{round_}", "--data-home", home],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5 + 0.5 * round_)
        ingest("pai", pai_small, home)
        _, err = analysis.communicate(timeout=300)
        assert analysis.returncode == 0, err[-2000:]
        assert (tmp_path / f"r{round_}" / "report.html").exists()


def test_an_ingest_into_a_copied_data_home_leaves_the_original_files(pai_small: Path, tmp_path: Path) -> None:
    """A copied home's catalog names the original's store versions: they belong to the original."""
    import shutil

    original, copy = tmp_path / "original", tmp_path / "copy"
    ingest("pai", pai_small, original)
    shutil.copytree(original, copy)
    before = tree_digest(original)
    touch_all(pai_small, 30 * 10**9)
    result = ingest("pai", pai_small, copy)
    assert store_is_inside(result.store_dir, copy)
    assert tree_digest(original) == before
    assert jobs_count(original) == jobs_count(copy)


def store_is_inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


# --- system conditions are one line -------------------------------------------------------------------

def test_a_catalog_held_by_another_program_is_one_line(pai_small: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    ingest("pai", pai_small, home)
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
                               "print('open', flush=True); time.sleep(60)", str(home / "catalog.duckdb")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        for args in (["sql", "SELECT count(*) FROM jobs"],
                     ["analyze", "pai-trace", "-m", "overview", "--out", tmp_path / "r"]):
            proc = run_ddlx(*args, "--data-home", home)
            assert_one_error_line(proc, "catalog.duckdb", "locked by another process")
    finally:
        holder.kill()
        holder.wait()
    assert jobs_count(home) > 0


def test_out_of_memory_is_one_line(cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.conftest import assert_clean_failure

    def exhausted(*args: object, **kwargs: object) -> None:
        raise MemoryError

    monkeypatch.setattr(catalog, "query", exhausted)
    assert_clean_failure(cli("sql", "SELECT 1", "--data-home", tmp_path), "out of memory")
