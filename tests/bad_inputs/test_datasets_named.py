"""Every command that names a dataset refuses one the catalog does not hold, before it writes
anything: exit 1, one `Error:` line naming the name and the data home, the closest known name when
there is one, the data home byte-identical and nothing written to `--out`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ddlx.analysis.reproduce import NOT_HERE
from tests.bad_inputs.outputs_home import World, snapshot, world
from tests.conftest import assert_clean_failure

#: Each command, given the dataset name and a working folder for its --out.
COMMANDS: dict[str, Callable[[World, str, Path], tuple]] = {
    "reproduce --dataset": lambda w, name, space: (
        "reproduce", "openb-atc23", "--dataset", name, "--out", space / "out.csv", "--data-home", w.home),
    "placement --dataset": lambda w, name, space: (
        "placement", "--dataset", name, "--seeds", "1", "--out", space / "out", "--data-home", w.home),
    "simulate --dataset": lambda w, name, space: (
        "simulate", "--dataset", name, "--gpus", "8", "--policy", "fifo", "--out", space / "out.json",
        "--data-home", w.home),
    "predict train --dataset": lambda w, name, space: (
        "predict", "train", "--dataset", name, "--out", space / "out", "--data-home", w.home),
    "predict apply --dataset": lambda w, name, space: (
        "predict", "apply", "--model", w.model, "--dataset", name, "--out", space / "out.csv", "--data-home", w.home),
    "datasets export": lambda w, name, space: (
        "datasets", "export", name, "--format", "swf", "--out", space / "out.swf", "--data-home", w.home),
    "datasets info": lambda w, name, space: ("datasets", "info", name, "--data-home", w.home),
    "analyze dataset": lambda w, name, space: (
        "analyze", "dataset", name, "--out", space / "out", "--data-home", w.home),
    "report compare": lambda w, name, space: (
        "report", "compare", "lab", name, "--out", space / "out", "--data-home", w.home),
}


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> World:
    return world(tmp_path_factory)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("name, hint", [("labb", "did you mean 'lab'?"), ("zzzz", None)])
def test_a_dataset_the_catalog_does_not_hold_is_refused(cli, shared: World, tmp_path: Path, command: str,
                                                        name: str, hint: str | None) -> None:
    space = tmp_path / "space"
    space.mkdir()
    before = snapshot(shared.home)
    result = cli(*COMMANDS[command](shared, name, space))
    line = assert_clean_failure(result, f"'{name}' in {shared.home}", *([hint] if hint else []))
    assert "it holds: lab, lab2, pai-v2023" in line
    if hint is None:
        assert "did you mean" not in line
    assert snapshot(shared.home) == before
    assert list(space.iterdir()) == []


def test_a_registered_trace_not_ingested_says_so(cli, shared: World) -> None:
    result = cli("datasets", "info", "pai", "--data-home", shared.home)
    assert_clean_failure(result, "no dataset 'pai'", "the trace 'pai' is not ingested", "ddlx datasets ingest pai")


def test_a_profile_whose_own_dataset_is_missing_is_not_computable_here(cli, shared: World) -> None:
    """Without --dataset, `reproduce` reports every figure as not computable here (exit 0), saying
    how to get the data; it does not refuse."""
    before = snapshot(shared.home)
    result = cli("reproduce", "itp-elasticflow", "--format", "csv", "--data-home", shared.home)
    assert result.code == 0, result.err
    rows = result.out.strip().splitlines()[1:]
    assert rows and all("not computable" in row for row in rows), rows
    assert any(NOT_HERE in row and "--preset itp" in row for row in rows), rows
    assert snapshot(shared.home) == before
