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


@pytest.mark.slow
def test_ddlx_works_in_a_kernel_without_ipywidgets(kernel_spec: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_PATH", str(kernel_spec))
    monkeypatch.setenv("DDLX_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(WITHOUT_IPYWIDGETS)]
                                        + [nbformat.v4.new_code_cell(code) for code in CELLS])
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="ddlx-test", allow_errors=False).execute()
    outputs = [cell.outputs for cell in notebook.cells[1:]]
    assert "text/html" in outputs[0][0]["data"] and "ddlx catalog of" in outputs[0][0]["data"]["text/plain"]
    rows, kind = outputs[1][0]["text"].split()
    assert int(rows) > 1000 and kind == "sample"
    html = outputs[2][0]["data"]["text/html"]
    assert "SYNTHETIC" in html and "queue_delay.submit_to_first_start" in html and "provenance" not in html
    assert len(html) < 50_000  # a summary, not a dump
    assert "fifo" in outputs[3][0]["data"]["text/html"]
    assert outputs[4][0]["text"].strip() == "[(False,)]"  # the kernel's own setting, left alone
