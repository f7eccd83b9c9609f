"""The `ddlx` command and the Python API (`ddlx.open()`) give the same outputs on one sample: each
command below runs through the real entry point, and its file or JSON is compared with what the
catalog's method returns for the same arguments, in the same data home."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import ddlx
from ddlx.datasets.synthetic import ensure_sample

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data home holding the ingested SYNTHETIC pai sample."""
    return ensure_sample(tmp_path_factory.mktemp("api-cli") / "home", "pai")


@pytest.fixture()
def catalog(home: Path) -> ddlx.Catalog:
    return ddlx.open(home, progress=None)


def _without_times(value):
    """`value` without the wall-clock fields that differ between two runs."""
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items()
                if k not in ("created_at", "seconds", "wall_seconds", "run_seconds", "seconds_per_policy",
                             "elapsed_s", "kept_results")}
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


def test_status_and_sql(cli, home: Path, catalog) -> None:
    status = cli("datasets", "status", "--json", "--data-home", home)
    assert status.code == 0, status.err
    assert json.loads(status.out) == json.loads(json.dumps(catalog.datasets().to_dicts(), default=str))
    query = "SELECT state, count(*) AS jobs, sum(num_gpus) AS gpus FROM jobs GROUP BY state ORDER BY state"
    printed = cli("sql", query, "--format", "json", "--data-home", home)
    assert printed.code == 0, printed.err
    frame = catalog.sql(query)
    assert json.loads(printed.out) == frame.to_dicts()
    # and both equal the count made from the jobs frame itself
    jobs = catalog.jobs("pai")
    counted = jobs.group_by("state").agg(pl.len().alias("jobs")).sort("state")
    assert frame.select("state", "jobs").rows() == counted.rows()


def test_analyze(cli, home: Path, catalog, tmp_path: Path) -> None:
    out = tmp_path / "results"
    printed = cli("analyze", "pai-trace", "--module", "queueing,durations", "--out", out, "--data-home", home)
    assert printed.code == 0, printed.err
    from_cli = json.loads((out / "summary.json").read_text())
    from_api = catalog.analyze("pai", ["queueing", "durations"]).to_dict()
    api_modules = json.loads(json.dumps(from_api["modules"], default=str))
    for module in ("queueing", "durations"):
        assert from_cli["modules"][module]["findings"] == api_modules[module]["findings"]
        assert len(from_cli["modules"][module]["findings"]) >= 3
    written = pl.read_parquet(out / "queueing" / "by_gpu_bucket.parquet")
    table = catalog.analyze("pai", ["queueing"]).module("queueing").table("by_gpu_bucket")
    assert set(written.columns) - set(table.columns) == {"trace", "synthetic"}  # the file's provenance columns
    assert written.select(table.columns).equals(table) and table.height >= 3


def test_reproduce(cli, home: Path, catalog) -> None:
    printed = cli("reproduce", "pai-nsdi22", "--format", "json", "--data-home", home)
    assert printed.code == 0, printed.err
    reproduction = catalog.reproduce("pai-nsdi22")
    assert json.loads(printed.out) == json.loads(json.dumps(reproduction.to_dict()))
    frame = reproduction.frame()
    assert frame.height == len(reproduction.results) >= 10
    assert frame["value"].to_list() == [f["value"] for f in json.loads(printed.out)["figures"]]


def test_simulate(cli, home: Path, catalog, tmp_path: Path) -> None:
    out = tmp_path / "simulation.json"
    printed = cli("simulate", "--trace", "pai", "--compare", "fifo,sjf-oracle", "--limit", "800", "--out", out,
                  "--data-home", home)
    assert printed.code == 0, printed.err
    from_api = catalog.simulate("pai", ["fifo", "sjf-oracle"], limit=800).to_dict()
    assert _without_times(json.loads(out.read_text())) == _without_times(json.loads(json.dumps(from_api)))


def test_train_apply_and_export(cli, home: Path, catalog, tmp_path: Path) -> None:
    model = tmp_path / "model"
    trained = cli("predict", "train", "--trace", "pai", "--out", model, "--data-home", home)
    assert trained.code == 0, trained.err
    applied = cli("predict", "apply", "--model", model, "--trace", "pai", "--out", tmp_path / "p.parquet",
                  "--data-home", home)
    assert applied.code == 0, applied.err
    from_cli = pl.read_parquet(tmp_path / "p.parquet")
    from_api = catalog.predict(model, "pai")
    assert from_cli.equals(from_api)
    api_model = catalog.train("pai", out=tmp_path / "model-api")
    card = json.loads((model / "model_card.json").read_text())
    assert api_model.card["model_id"] == card["model_id"]  # same data and settings: the same model file
    exported = cli("datasets", "export", "pai", "--format", "swf", "--out", tmp_path / "cli.swf", "--data-home", home)
    assert exported.code == 0, exported.err
    catalog.export("pai", "swf", tmp_path / "api.swf")
    cli_lines = (tmp_path / "cli.swf").read_text().splitlines()
    api_lines = (tmp_path / "api.swf").read_text().splitlines()
    # the header's creation time may differ by a second; every job line is the same
    assert [line for line in cli_lines if not line.startswith(";")] == \
        [line for line in api_lines if not line.startswith(";")]
    assert sum(1 for line in cli_lines if not line.startswith(";")) == catalog.jobs("pai").height


def test_to_pandas_says_in_one_line_to_install_pandas(home: Path) -> None:
    """Where pandas cannot be imported, `.to_pandas()` of a frame of the API raises one line naming
    the remedy; where it can, it gives the same rows."""
    import subprocess
    import sys

    script = f"""
import importlib.abc, sys
class NoPandas(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "pandas":
            raise ModuleNotFoundError("No module named 'pandas'", name="pandas")
sys.meta_path.insert(0, NoPandas())
import ddlx
jobs = ddlx.open({str(home)!r}, progress=None).jobs("pai")
try:
    jobs.to_pandas()
except ModuleNotFoundError as error:
    print(type(error).__name__, "|", error)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    kind, message = done.stdout.strip().split(" | ")
    assert kind == "MissingPackageError" and "\n" not in message and "pip install pandas" in message
    jobs = ddlx.open(home, progress=None).jobs("pai")
    assert len(jobs.to_pandas()) == jobs.height


def test_reproduction_and_models_display_compactly(catalog, tmp_path: Path) -> None:
    reproduction = catalog.reproduce("pai-nsdi22")
    page = reproduction._repr_html_()
    first = reproduction.results[0].figure
    assert first.what.split(" (")[0][:30] in page and "SYNTHETIC" in page and len(page) < 60_000
    text = repr(reproduction)
    assert len(text.splitlines()) == len(reproduction.results) + 2  # banner, title, one line per figure
    trained = catalog.train("pai", out=tmp_path / "model")
    from ddlx.predict import load_predictor

    loaded = load_predictor(tmp_path / "model")
    for model in (trained, loaded):
        html = model._repr_html_()
        assert trained.card["model_id"] in html and "test-window metrics" in html and len(html) < 30_000
        windows = trained.card["split"]["windows"]
        assert f"{windows['test']['jobs']:,}" in html
    assert repr(trained) == repr(loaded)
