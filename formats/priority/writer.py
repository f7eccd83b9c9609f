"""The per-job duration estimates the Helios and Lucid simulators schedule by (`priority`).

Read by `S-Lab-System-Group/HeliosArtifact`'s `framework/QSSF Service/estimators/estimator.py`
(`LGBEstimator`, `CombinedEstimator`: `./estimators/<experiment>_lgb.csv`) and by
`S-Lab-System-Group/Lucid`'s `simulation/estimator/estimator.py` (`CombinedEstimator`, `PhillyEstimator`:
`./estimator/lgb/<experiment>_lgb.csv` for QSSF, `./estimator/ebm/<experiment>_ebm_weekly_updated.csv` for
Lucid). Both read the file with `pandas.read_csv`: a header line `job_id,priority`, one row per job:

- `job_id`: the id of the job in the trace the simulator replays, matched by equality
  (`data['job_id'] == job['job_id']`, first match); a job the simulator replays and the file lacks
  stops the run. pandas reads a column of digits as integers in both files alike;
- `priority`: the job's estimated DURATION in seconds, one job (the files the repositories ship hold
  whole seconds). The simulators multiply it by the job's GPU count themselves (`p * job['gpu_num']`)
  and run the smallest product first (QSSF); Lucid replaces a negative value by 1000.

How a canonical job becomes a row (each rule is also in the export's loss report):
- the estimate is the model's: `--predictions FILE` (the table of `ddlx predict apply`) is required;
  priority = its pred_s for the job (estimate_s), rounded to whole seconds, NOT multiplied by GPUs
  (the simulators do that). A job without a prediction is left out (counted): re-run
  `ddlx predict apply` on the same dataset to cover it. pandas reads an id column of digits only as
  integers: when the written ids are all digits and those of the jobs left out are not, the trace's
  column reads as text and no id would match, so the export is refused;
- job_id: the dataset's job id as recorded, so it equals the id in the trace file the simulator
  reads; `<cluster>/<job id>` when ids repeat across the dataset's clusters (the simulators replay
  one cluster at a time: the option `cluster=NAME` writes one cluster's jobs under their own ids);
- rows in submission order (then cluster and job id); every job with a prediction, CPU-only jobs
  included (the simulators skip jobs without GPUs when they read the trace).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ddlx.formats.jobs import ExportRequest, integral, write_table
from ddlx.formats.model import ExportError, ExportFormat, LossReport, Written

#: Columns of the priority file, in order.
COLUMNS: tuple[str, ...] = ("job_id", "priority")
NEEDS_PREDICTIONS = ("the priority list is the model's estimate; give --predictions FILE from "
                     "`ddlx predict apply`")


def priority_rows(request: ExportRequest, loss: LossReport) -> pl.DataFrame:
    """The rows of the priority file: job_id (text) and priority (whole seconds of one job's run)."""
    if request.predictions is None:
        raise ExportError(NEEDS_PREDICTIONS)
    jobs = request.jobs(loss)
    cluster = request.option("cluster", "")
    ids = pl.col("export_id")
    if cluster:
        clusters = sorted(str(c) for c in jobs.get_column("cluster").drop_nulls().unique().to_list())
        if cluster not in clusters:
            raise ExportError(f"option cluster={cluster}: no such cluster in dataset '{request.ctx.trace}'; "
                              f"it has: {', '.join(clusters) or 'none named'}")
        jobs = jobs.filter(pl.col("cluster") == cluster)
        ids = pl.col("job_id")  # unique within a cluster
    missing = jobs.filter(pl.col("estimate_s").is_null()).height
    loss.drop("no prediction for the job in the predictions file (the simulators look up every job they "
              "replay; run `ddlx predict apply` on this dataset to cover it)", missing)
    _check_id_kinds(jobs.with_columns(ids.alias("_id")), request)
    jobs = jobs.filter(pl.col("estimate_s").is_not_null())
    loss.filled.append(("priority", "the model's predicted run time of the job (estimate_s), whole seconds, "
                                    "per job: the simulators multiply it by the job's GPUs themselves"))
    loss.without_place.append(("every other job field", "the simulators read them from the trace file they "
                                                          "replay; the priority list holds job_id and priority"))
    if cluster:
        loss.without_place.append(("other clusters", f"option cluster={cluster}: only that cluster's jobs"))
    return jobs.select(ids.alias("job_id"), integral(pl.max_horizontal(pl.col("estimate_s"), pl.lit(0.0)))
                       .alias("priority"))


def _check_id_kinds(jobs: pl.DataFrame, request: ExportRequest) -> None:
    """Refuse a list whose ids pandas would read as numbers while the trace's, which also holds the jobs left
    out, reads as text: the simulators' lookups would then find no job."""
    digits = pl.col("_id").str.contains(r"^-?[0-9]+$")
    kept = jobs.filter(pl.col("estimate_s").is_not_null())
    if kept.height and kept.select(digits.all()).item() and not jobs.select(digits.all()).item():
        other = jobs.filter(~digits).get_column("_id")[0]
        raise ExportError(f"{request.predictions_path}: the jobs with a prediction all have ids of digits, but jobs "
                          f"without one (e.g. '{other}') do not: pandas would read this list's ids as numbers and "
                          "the trace's as text, and the simulators would match no job; predict every job "
                          "(`ddlx predict apply`) or choose a cluster with option cluster=NAME")


def write_priority(request: ExportRequest, path: Path, loss: LossReport) -> Written:
    """Write the request's jobs' estimates as the simulators' priority CSV to `path`."""
    rows = priority_rows(request, loss)
    write_table(rows, path)
    return Written(rows.height)


FORMAT = ExportFormat(
        name="priority", title="per-job duration estimates (job_id,priority) of the Helios and Lucid simulators",
        consumer="the QSSF scheduler of the Helios simulator and the QSSF and Lucid schedulers of the Lucid "
                 "simulator (S-Lab)",
        reference="S-Lab-System-Group/HeliosArtifact, framework/QSSF Service/estimators/estimator.py; "
                  "S-Lab-System-Group/Lucid, simulation/estimator/estimator.py",
        suffix=".csv", write=write_priority,
        options={"cluster": "write only this cluster's jobs, under their own ids (default: every cluster)"},
        carries_estimate=True)
