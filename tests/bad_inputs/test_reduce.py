"""`ddlx datasets reduce NAME` and `ddlx analyze dataset NAME` with a `--samples-location` that holds
no GPU samples (missing, an empty folder or glob, a file that is not Parquet), and `reduce` of a
dataset that does not exist: one `Error:` line naming the location as the user gave it (or the
dataset) and what was expected, exit code 1, no traceback, the data home (a dataset with telemetry)
byte-identical and no `--out` folder left."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from ddlx.datasets import catalog
from tests.bad_inputs.telemetry_home import home_with_telemetry
from tests.conftest import assert_clean_failure, tree_digest

NOT_PARQUET = "cannot be read as Parquet"
EXPECTED = "expected a folder, a glob or a file of Parquet files of GPU samples"


@pytest.fixture(scope="module")
def protected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data home holding the dataset `cl` with its telemetry."""
    return home_with_telemetry(tmp_path_factory.mktemp("reduce"))[0]


def _samples(protected: Path) -> Path:
    return protected / "telemetry" / "cl" / "gpu_samples"


# Each builder makes a location in the folder and returns it (as the user would type it) and the problem.
def missing(folder: Path) -> tuple[str, str]:
    return str(folder / "nowhere"), "no such file or folder"


def empty_folder(folder: Path) -> tuple[str, str]:
    (folder / "empty").mkdir()
    return str(folder / "empty"), "the folder holds no .parquet file"


def folder_of_other_files(folder: Path) -> tuple[str, str]:
    (folder / "csv").mkdir()
    (folder / "csv" / "samples.csv").write_text("host,gpu\nn1,0\n")
    return str(folder / "csv"), "the folder holds no .parquet file"


def empty_glob(folder: Path) -> tuple[str, str]:
    (folder / "empty").mkdir()
    return str(folder / "empty" / "*.parquet"), "the glob matches no file"


def text_file(folder: Path) -> tuple[str, str]:
    (folder / "samples.txt").write_text("not parquet\n")
    return str(folder / "samples.txt"), NOT_PARQUET


def folder_with_one_bad_file(folder: Path) -> tuple[str, str]:
    """Good Parquet files and one that only has the name: every file's footer is read first."""
    (folder / "mixed" / "day=1").mkdir(parents=True)
    pl.DataFrame({"host": ["n1"]}).write_parquet(folder / "mixed" / "day=1" / "a.parquet")
    (folder / "mixed" / "day=1" / "b.parquet").write_bytes(b"PAR1 this is not a Parquet file")
    return str(folder / "mixed"), NOT_PARQUET


Builder = Callable[[Path], tuple[str, str]]
CASES: list[Builder] = [missing, empty_folder, folder_of_other_files, empty_glob, text_file, folder_with_one_bad_file]


@pytest.mark.parametrize("build", CASES, ids=[case.__name__ for case in CASES])
def test_reduce_refuses_a_location_without_samples(build: Builder, protected: Path, tmp_path: Path, cli) -> None:
    location, problem = build(tmp_path)
    before = tree_digest(protected)
    result = cli("datasets", "reduce", "cl", "-m", "gpu_efficiency", "--samples-location", location,
                 "--data-home", protected)
    assert_clean_failure(result, f"Error: {location}: {problem}", EXPECTED)
    assert tree_digest(protected) == before


@pytest.mark.parametrize("build", [missing, text_file], ids=["missing", "text_file"])
def test_analyze_refuses_a_location_without_samples(build: Builder, protected: Path, tmp_path: Path, cli) -> None:
    location, problem = build(tmp_path)
    before = tree_digest(protected)
    out = tmp_path / "out"
    result = cli("analyze", "dataset", "cl", "-m", "gpu_efficiency", "--samples-location", location,
                 "--data-home", protected, "--out", out)
    assert_clean_failure(result, f"Error: {location}: {problem}", EXPECTED)
    assert tree_digest(protected) == before and not out.exists()


def test_reduce_of_every_module_refuses_a_missing_location(protected: Path, tmp_path: Path, cli) -> None:
    location, problem = missing(tmp_path)
    before = tree_digest(protected)
    result = cli("datasets", "reduce", "cl", "--samples-location", location, "--data-home", protected)
    assert_clean_failure(result, f"Error: {location}: {problem}")
    assert tree_digest(protected) == before


def test_reduce_refuses_a_dataset_that_does_not_exist(protected: Path, cli) -> None:
    before = tree_digest(protected)
    result = cli("datasets", "reduce", "cll", "--data-home", protected)
    assert_clean_failure(result, "no dataset 'cll'", str(protected), "(it holds: cl)", "did you mean 'cl'?")
    assert tree_digest(protected) == before


def test_reduce_reads_a_good_location(tmp_path: Path, cli) -> None:
    """The other side: the dataset's own samples named as a location are reduced, and the provenance
    names the location as given."""
    home, _ = home_with_telemetry(tmp_path / "good")
    location = str(_samples(home))
    result = cli("datasets", "reduce", "cl", "-m", "gpu_efficiency", "--samples-location", location,
                 "--data-home", home)
    assert result.code == 0, result.err
    provenance = catalog.query(home, 'SELECT * FROM "cl_reductions"')
    assert set(provenance["location"]) == {location} and set(provenance["engine"]) == {"duckdb"}
