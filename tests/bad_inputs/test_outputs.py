"""Every command that takes `--out`, held to the one rule of outputs (`ddlx.outputs`).

An output folder: a file there, a user's non-empty folder there, and a location where no folder
can be made (under a file, under /proc) are refused with exit 1 and one `Error:` line naming the
path given; the user's file or folder is byte-identical afterwards and nothing is left beside it.
An output file: a folder there and an unwritable location, the same. A re-run of each command
replaces its own output whole.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.bad_inputs.outputs_home import World, snapshot, world
from tests.conftest import assert_clean_failure

Args = Callable[[World, Path], tuple]

#: Commands writing a folder: (the marker file their folders hold, the arguments given an --out).
FOLDER_COMMANDS: dict[str, tuple[str, Args]] = {
    "analyze dataset": ("summary.json", lambda w, out: (
        "analyze", "dataset", "lab", "-m", "overview", "--out", out, "--data-home", w.home)),
    "analyze trace": ("summary.json", lambda w, out: (
        "analyze", "pai-trace", "-m", "overview", "--out", out, "--data-home", w.home)),
    "report compare": ("report.json", lambda w, out: (
        "report", "compare", "lab", "lab2", "-m", "overview", "--out", out, "--data-home", w.home)),
    "report figures": ("figures.json", lambda w, out: ("report", "figures", w.results, "--out", out)),
    "placement": ("experiment.json", lambda w, out: (
        "placement", "--dataset", "pai-v2023", "--seeds", "1", "--policies", "random", "--workers", "1",
        "--out", out, "--data-home", w.home)),
    "predict train": ("model_card.json", lambda w, out: (
        "predict", "train", "--dataset", "lab", "--out", out, "--data-home", w.home)),
    "datasets synth": ("SYNTHETIC.json", lambda w, out: ("datasets", "synth", "pai", "--scale", "0.001",
                                                         "--out", out)),
    "datasets synth-cluster": ("SYNTHETIC.json", lambda w, out: (
        "datasets", "synth-cluster", "--gpus", "8", "--days", "1", "--step", "600", "--fields", "gpu_util",
        "--out", out)),
}
#: Commands writing a file: (the file name to give, the arguments given an --out).
FILE_COMMANDS: dict[str, tuple[str, Args]] = {
    "reproduce": ("reproduction.csv", lambda w, out: (
        "reproduce", "itp-elasticflow", "--format", "csv", "--out", out, "--data-home", w.home)),
    "simulate": ("simulation.json", lambda w, out: (
        "simulate", "--dataset", "lab", "--gpus", "8", "--policy", "fifo", "--out", out, "--data-home", w.home)),
    "predict apply": ("predictions.csv", lambda w, out: (
        "predict", "apply", "--model", w.model, "--dataset", "lab", "--out", out, "--data-home", w.home)),
    "predict export": ("estimates.csv", lambda w, out: (
        "predict", "export", "--predictions", w.predictions, "--format", "estimate-csv", "--out", out)),
    "datasets export": ("lab.swf", lambda w, out: (
        "datasets", "export", "lab", "--format", "swf", "--predictions", w.predictions, "--out", out,
        "--data-home", w.home)),
}
#: Files `datasets export --format swf` writes beside its file.
SWF_BESIDE = (".datapackage.json", ".ids.csv")
#: Commands that need the renderer (Kaleido and a Chrome) to succeed.
NEEDS_RENDERER = {"report figures"}


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> World:
    return world(tmp_path_factory)


@pytest.fixture
def space(tmp_path: Path) -> Path:
    """A working folder holding a user's file and a user's non-empty folder."""
    folder = tmp_path / "space"
    folder.mkdir()
    (folder / "mine.txt").write_text("a user's notes\n")
    (folder / "mine").mkdir()
    (folder / "mine" / "notes.txt").write_text("keep me\n")
    return folder


def _refused(cli, args: tuple, given: Path, watched: list[Path]) -> None:
    """Run `args`: a clean refusal whose Error line names `given` and no temporary name, with every
    folder of `watched` unchanged (no file changed, none added, nothing left beside)."""
    before = [snapshot(folder) for folder in watched]
    result = cli(*args)
    line = assert_clean_failure(result, str(given))
    assert ".tmp-" not in line and ".probe-" not in line, line
    assert [snapshot(folder) for folder in watched] == before


@pytest.mark.parametrize("command", FOLDER_COMMANDS)
@pytest.mark.parametrize("case", ["a file", "a user's folder", "under a file", "under /proc"])
def test_an_output_folder_that_cannot_be_written_is_refused(cli, shared: World, space: Path, command: str,
                                                            case: str) -> None:
    _, args = FOLDER_COMMANDS[command]
    given = {"a file": space / "mine.txt", "a user's folder": space / "mine",
             "under a file": space / "mine.txt" / "results", "under /proc": Path("/proc/ddlx-results")}[case]
    _refused(cli, args(shared, given), given, [space, shared.home, shared.results])


@pytest.mark.parametrize("command", FILE_COMMANDS)
@pytest.mark.parametrize("case", ["a folder", "under a file", "under /proc"])
def test_an_output_file_that_cannot_be_written_is_refused(cli, shared: World, space: Path, command: str,
                                                          case: str) -> None:
    name, args = FILE_COMMANDS[command]
    if case == "a folder":
        given = space / name
        given.mkdir()
        (given / "notes.txt").write_text("keep me\n")
    else:
        given = {"under a file": space / "mine.txt" / name, "under /proc": Path("/proc") / name}[case]
    _refused(cli, args(shared, given), given, [space, shared.home, shared.model])


def _renderer_missing() -> str | None:
    from tests.test_report_figures import _missing_renderer

    return _missing_renderer()


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c in FOLDER_COMMANDS if c != "analyze trace"])
def test_a_rerun_replaces_its_own_folder(cli, shared: World, space: Path, command: str) -> None:
    """The first run writes the folder with its marker; a file added to it since is gone after the
    second run, which leaves nothing beside the folder."""
    if command in NEEDS_RENDERER and _renderer_missing():
        pytest.skip(_renderer_missing())
    marker, args = FOLDER_COMMANDS[command]
    out = space / "out"
    first = cli(*args(shared, out))
    assert first.code == 0, first.err
    assert (out / marker).is_file()
    (out / "added-since.txt").write_text("not ddlx's\n")
    again = cli(*args(shared, out))
    assert again.code == 0, again.err
    assert (out / marker).is_file() and not (out / "added-since.txt").exists()
    assert sorted(p.name for p in space.iterdir()) == ["mine", "mine.txt", "out"]


@pytest.mark.parametrize("command", FILE_COMMANDS)
def test_a_rerun_replaces_its_own_file(cli, shared: World, space: Path, command: str) -> None:
    name, args = FILE_COMMANDS[command]
    out = space / name
    out.write_text("an older output\n")
    result = cli(*args(shared, out))
    assert result.code == 0, result.err
    assert out.read_text() != "an older output\n"
    beside = [name + suffix for suffix in SWF_BESIDE] if command == "datasets export" else []
    assert sorted(p.name for p in space.iterdir()) == sorted(["mine", "mine.txt", name, *beside])


def test_the_files_of_an_export_are_replaced_together_or_not_at_all(cli, shared: World, space: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """An export and its sidecars: a failure after the file is written leaves the previous three
    byte-identical; a folder where a sidecar goes is refused before any is renamed; the sidecar
    describes the bytes beside it."""
    import ddlx.formats.export as export

    name, args = FILE_COMMANDS["datasets export"]
    out = space / name
    assert cli(*args(shared, out)).code == 0
    sidecar = json.loads((space / f"{name}.datapackage.json").read_text())
    assert sidecar["resources"][0]["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert sidecar["resources"][1]["path"] == f"{name}.ids.csv"
    before = snapshot(space)

    def broken(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(export, "_sidecar", broken)
    failed = cli(*args(shared, out))
    line = assert_clean_failure(failed, str(out), "No space left on device")
    assert ".tmp-" not in line
    assert snapshot(space) == before
    monkeypatch.undo()

    other = space / "other.swf"
    (space / "other.swf.ids.csv").mkdir()
    before = snapshot(space)
    _refused(cli, args(shared, other), space / "other.swf.ids.csv", [space])
    assert snapshot(space) == before and not other.exists()


@pytest.mark.parametrize("scale", ["nan", "inf", "-1", "0"])
def test_a_synthetic_release_of_no_size_is_refused_before_anything_is_made(cli, space: Path, scale: str) -> None:
    before = snapshot(space)
    result = cli("datasets", "synth", "pai", "--scale", scale, "--out", space / "release")
    assert result.code == 2 and "--scale" in result.err and "Traceback" not in result.err
    assert snapshot(space) == before
