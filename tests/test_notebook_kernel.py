"""ddlx in a real Jupyter kernel (ipykernel, driven by nbclient) without ipywidgets: opening the
catalog, reading the jobs, analysing and simulating work from the first cell, and the results
display themselves as HTML. DuckDB refuses to touch its progress bar in a kernel without
ipywidgets, so any ddlx code that did would fail here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

#: Run first in the kernel: ipywidgets made unimportable, as in a kernel that lacks it.
WITHOUT_IPYWIDGETS = "import sys\nsys.modules['ipywidgets'] = None  # an import of it now fails"

CELLS = [
    "import ddlx\ncatalog = ddlx.open(progress=None)\ncatalog",
    "jobs = catalog.jobs('pai')\nprint(jobs.height, *catalog.datasets()['kind'])",
    "result = catalog.analyze('pai', ['queueing'])\nresult",
    "simulation = catalog.simulate('pai', ['fifo', 'las'], limit=500)\nsimulation",
    "import duckdb\nprint(duckdb.connect().sql(\"SELECT current_setting('enable_progress_bar')\").fetchall())",
]


@pytest.fixture
def kernel_spec(tmp_path: Path) -> Path:
    """A kernel spec that starts this Python (the test's virtual environment) as the kernel."""
    folder = tmp_path / "jupyter" / "kernels" / "ddlx-test"
    folder.mkdir(parents=True)
    (folder / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "ddlx test", "language": "python"}))
    return tmp_path / "jupyter"


def execute_without_ipywidgets(notebook, kernel_spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run `notebook` in the test's kernel, in `tmp_path` with a data home of its own, its first cell
    making ipywidgets unimportable; a cell that raises fails the test."""
    monkeypatch.setenv("JUPYTER_PATH", str(kernel_spec))
    monkeypatch.setenv("DDLX_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(WITHOUT_IPYWIDGETS))
    nbclient.NotebookClient(notebook, timeout=900, kernel_name="ddlx-test", allow_errors=False).execute()


@pytest.mark.slow
def test_ddlx_works_in_a_kernel_without_ipywidgets(kernel_spec: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code) for code in CELLS])
    execute_without_ipywidgets(notebook, kernel_spec, tmp_path, monkeypatch)
    outputs = [cell.outputs for cell in notebook.cells[1:]]
    assert "text/html" in outputs[0][0]["data"] and "ddlx catalog of" in outputs[0][0]["data"]["text/plain"]
    rows, kind = outputs[1][0]["text"].split()
    assert int(rows) > 1000 and kind == "sample"
    html = outputs[2][0]["data"]["text/html"]
    assert "SYNTHETIC" in html and "queue_delay.submit_to_first_start" in html and "provenance" not in html
    assert len(html) < 50_000  # a summary, not a dump
    assert "fifo" in outputs[3][0]["data"]["text/html"]
    assert outputs[4][0]["text"].strip() == "[(False,)]"  # the kernel's own setting, left alone


NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "first-hour.ipynb"


def test_the_worked_notebook_is_saved_without_outputs() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert len(code) >= 10
    assert all(not cell.outputs and cell.execution_count is None for cell in code)


@pytest.mark.slow
def test_the_worked_notebook_runs_in_a_kernel_without_ipywidgets(kernel_spec: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/first-hour.ipynb end to end: every cell runs, and each task shows what it promises."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    execute_without_ipywidgets(notebook, kernel_spec, tmp_path, monkeypatch)
    shown = {}
    for cell in notebook.cells[1:]:
        if cell.cell_type != "code":
            continue
        for output in cell.outputs:
            assert output["output_type"] != "error", output
            data = output.get("data", {})
            for key in ("text/html", "application/vnd.plotly.v1+json"):
                if key in data:
                    shown.setdefault(cell.source.splitlines()[-1], []).append(key)
                    if key == "text/html":
                        shown[cell.source.splitlines()[-1]].append(data[key])
    by_last_line = {line: values for line, values in shown.items()}
    compare_html = next(v for line, v in by_last_line.items() if line == "compare")
    assert any('class="ddlx-report"' in str(value) and "pai" in str(value) and "philly" in str(value)
               for value in compare_html)
    assert "application/vnd.plotly.v1+json" in by_last_line["figure"]
    written = (tmp_path / "queueing-waits.html").read_text(encoding="utf-8")
    assert "Times New Roman" in written and "SYNTHETIC" in written
    model_html = " ".join(str(v) for v in by_last_line["model"])
    assert "test-window metrics" in model_html and "predict.split" in model_html
    simulation_html = " ".join(str(v) for v in by_last_line["simulation"])
    assert "sjf-predicted" in simulation_html and "sjf-oracle" in simulation_html
    assert (tmp_path / "ddlx-models" / "pai" / "model_card.json").is_file()
