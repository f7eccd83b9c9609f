"""`ddlx report figures`: every chart of a written report as an SVG, PDF or PNG file.

Drawing needs Kaleido (the `figures` extra, in the test extra too) and a Chrome or Chromium; the
drawing test is skipped without them, unless `DDLX_REQUIRE_BROWSER=1` (CI) makes it fail.
"""

from __future__ import annotations

import builtins
import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest

from ddlx.analysis.runner import run_analysis
from ddlx.datasets.importers import import_dataset
from ddlx.reports import figures
from ddlx.reports.results import write_results
from tests.conftest import assert_clean_failure

CSV = "id,submit,start,end,gpus,user\n" + "".join(
    f"j{k},{k * 60},{k * 60 + k},{k * 60 + 600 + 13 * k},{1 + k % 4},u{k % 3}\n" for k in range(40))


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("figures")
    (base / "lab.csv").write_text(CSV)
    import_dataset("lab", base / "lab.csv", base / "home", origin="2024-01-01 00:00:00",
                   mapping="job_id=id,submit=submit,start=start,end=end,gpus=gpus,user=user")
    result = run_analysis(base / "home", "lab", ["overview", "queueing"])
    write_results(result, base / "out", with_report=True)
    return base / "out"


def _missing_renderer() -> str | None:
    if importlib.util.find_spec("kaleido") is None:
        return "kaleido is missing (pip install 'ddlx[figures]')"
    browser = os.environ.get("DDLX_CHROMIUM") or shutil.which("chromium") or shutil.which("google-chrome")
    return None if browser else "no Chrome or Chromium on PATH"


def test_every_chart_of_the_report_becomes_an_svg_file(results: Path, cli) -> None:
    missing = _missing_renderer()
    if missing:
        if os.environ.get("DDLX_REQUIRE_BROWSER") == "1":
            pytest.fail(f"DDLX_REQUIRE_BROWSER=1 but {missing}")
        pytest.skip(missing)
    report = json.loads((results / "report.json").read_text())
    ids = [c["id"] for s in report["sections"] for c in s["charts"]]
    assert ids
    result = cli("report", "figures", str(results))
    assert result.code == 0, result.err
    written = sorted(p.name for p in (results / "figures").iterdir() if p.name != "figures.json")
    assert written == sorted(f"{i}.svg" for i in ids)
    assert sorted(json.loads((results / "figures" / "figures.json").read_text())["figures"]) == written
    page = (results / "figures" / f"{ids[0]}.svg").read_text()
    assert page.startswith("<svg") and "</svg>" in page
    title = next(c["title"] for s in report["sections"] for c in s["charts"] if c["id"] == ids[0])
    assert title.split(" ")[0] in page  # the chart's title is drawn on the figure
    assert result.out.strip().endswith(f"{len(ids)} figures (svg)")


def test_a_folder_without_a_report_and_a_bad_format_are_one_line_errors(cli, tmp_path: Path,
                                                                           results: Path) -> None:
    assert_clean_failure(cli("report", "figures", str(tmp_path)), "report.json", "not found",
                         "expected the results folder")
    bad = cli("report", "figures", str(results), "--format", "gif")
    assert bad.code == 2 and "expected one of svg, pdf, png, not 'gif'" in bad.err


def test_without_the_renderer_the_error_says_how_to_install_it(results: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_kaleido(name: str, *args, **kwargs):
        if name == "kaleido":
            raise ImportError("No module named 'kaleido'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_kaleido)
    with pytest.raises(figures.FiguresError, match=r'pip install "ddlx\[figures\]"'):
        figures.write_figures(results, "svg", tmp_path / "figs")
    assert not (tmp_path / "figs").exists()
