"""The state the `--out` and dataset-name families protect (`test_outputs.py`,
`test_datasets_named.py`, `test_export_predictions.py`): a data home with two small imported
datasets (`lab`, `lab2`, the same 200 jobs) and the hand-written PAI v2023 release ingested, a
model trained on `lab`, its prediction table, and an analysis results folder with its report.

Built once per test session (`world`), as every command of these families reads it and none may
change it; the tests compare its digest before and after each refused command."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

#: 200 jobs, one a minute; user k runs 100 * (k + 1) s; every 10th job runs 0 s (no target).
JOBS = 200
MAPPING = "job_id=job_id,user=user,submit=submit,duration=duration,gpus=gpus"


def jobs_csv() -> str:
    rows = ["job_id,user,submit,duration,gpus"]
    for n in range(JOBS):
        user = n % 4
        rows.append(f"j{n:03d},u{user},{1_704_067_200 + 60 * n},{0 if n % 10 == 9 else 100 * (user + 1)},{1 + user}")
    return "\n".join(rows) + "\n"


@dataclass(frozen=True)
class World:
    """Paths of the shared state: `home` (the data home), `model` (a model folder of `lab`),
    `predictions` (its prediction table of `lab`, CSV), `results` (a results folder of `lab`, with
    report.json)."""

    home: Path
    model: Path
    predictions: Path
    results: Path


@functools.cache
def _built(base: Path) -> World:
    from ddlx.analysis.runner import run_analysis
    from ddlx.datasets.importers import import_dataset
    from ddlx.datasets.ingest import ingest
    from ddlx.predict.artifacts import load_predictor, write_table
    from ddlx.predict.training import train
    from ddlx.reports.results import write_results
    from tests.test_pai_v2023_ingest import write_release

    base.mkdir(parents=True, exist_ok=True)
    home = base / "home"
    source = base / "jobs.csv"
    source.write_text(jobs_csv())
    for name in ("lab", "lab2"):
        import_dataset(name, source, home, mapping=MAPPING)
    ingest("pai-v2023", write_release(base / "v2023-release"), home)
    model = train(home, "lab", base / "model").path
    predictions = write_table(load_predictor(model).predict_catalog(home, "lab"), base / "predictions.csv")
    results = base / "results"
    write_results(run_analysis(home, "lab", ["overview"]), results, with_report=True)
    return World(home, model, predictions, results)


def world(tmp_path_factory) -> World:
    """The shared state, built on first use in the session's temporary folder."""
    return _built(tmp_path_factory.getbasetemp() / "outputs-world")


def snapshot(folder: Path) -> tuple[dict[str, str], list[str]]:
    """Every file of `folder` with its sha256 (`tree_digest`) and every entry's path, folders and
    hidden ones too: equal snapshots mean nothing was changed, added or left behind."""
    from tests.conftest import tree_digest

    entries = sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []
    return tree_digest(folder), [e for e in entries if not e.endswith(".lock")]
