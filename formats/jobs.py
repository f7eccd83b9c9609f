"""The jobs every export starts from, and the writing rules every format shares.

`ExportRequest` is what a format's `write` receives: the open dataset, the predictions to carry
(from `ddlx predict apply`, or none) and the format's options (`--option KEY=VALUE`).
`ExportRequest.jobs(loss)` gives the dataset's canonical jobs in submission order (ties by cluster
and job id), with the columns formats derive from them:

- `submit_s`: submission, Unix seconds (fractional); `offset_s`: seconds since the first
  submission among the exported jobs;
- `export_id`: the job's id as text, unique in the export: the job id when it is unique across
  clusters, else `<cluster>/<job id>` (named in the loss report);
- `seq`: 1..N in submission order, for formats whose consumers want integer ids;
- `estimate_s`: the predicted duration (s) of `--predictions`, NULL without one.

Jobs without a submission time are dropped (counted in the loss report): every format orders and
replays jobs by it. Values are written by `write_table`: integral columns as integers (`8`, never
`8.0`), an unknown number as an empty field unless the format says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.formats.model import ExportError, LossReport

#: Prediction-table columns an export reads (the table `ddlx predict apply` writes).
PREDICTION_KEYS: tuple[str, ...] = ("cluster", "job_id", "pred_s")


@dataclass
class ExportRequest:
    """An export to write: the dataset (`ctx`), the predictions to carry (a prediction table with at
    least cluster, job_id and pred_s, and the file it came from), and the format's options."""

    ctx: TraceContext
    predictions: pl.DataFrame | None = None
    predictions_path: Path | None = None
    options: dict[str, str] = field(default_factory=dict)
    _jobs: pl.DataFrame | None = None

    def option(self, name: str, default: str) -> str:
        return self.options.get(name, default)

    def jobs(self, loss: LossReport) -> pl.DataFrame:
        """The dataset's jobs as every format starts from them (see the module's docstring)."""
        if self._jobs is None:
            self._jobs = export_jobs(self.ctx, loss, self.predictions, self.predictions_path)
        return self._jobs


def export_jobs(ctx: TraceContext, loss: LossReport, predictions: pl.DataFrame | None = None,
                predictions_path: Path | None = None) -> pl.DataFrame:
    """The canonical jobs of `ctx` in submission order with submit_s, offset_s, export_id, seq and
    estimate_s (see the module's docstring); rows without a submission time are dropped."""
    jobs = ctx.query(f"""
        SELECT *, epoch_us(submit_time) / 1e6 AS submit_s FROM {ctx.jobs}
        ORDER BY submit_time, cluster NULLS FIRST, job_id NULLS LAST""")
    jobs = loss.keep(jobs, pl.col("submit_s").is_not_null(),
                     "no submission time (every format orders and replays jobs by it)")
    missing = jobs.filter(pl.col("job_id").is_null()).height
    if missing:
        raise ExportError(f"dataset '{ctx.trace}': {missing:,} job(s) have no job_id; every export names jobs "
                          "by id (re-import the dataset: rows of a table without an id column get row ids)")
    origin = jobs["submit_s"].min() if jobs.height else 0.0
    clusters = jobs.get_column("cluster").n_unique()
    repeated = jobs.height - jobs.get_column("job_id").n_unique()
    if repeated and clusters > 1:
        export_id = pl.concat_str([pl.col("cluster").fill_null(""), pl.col("job_id")], separator="/")
        loss.filled.append(("job id", f"<cluster>/<job id>: {repeated:,} job ids repeat across the dataset's "
                                      f"{clusters} clusters"))
    else:
        export_id = pl.col("job_id")
    jobs = jobs.with_columns(
        (pl.col("submit_s") - origin).alias("offset_s"), export_id.alias("export_id"),
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("seq"))
    if jobs.get_column("export_id").n_unique() != jobs.height:
        raise ExportError(f"dataset '{ctx.trace}': job ids repeat within a cluster; every export needs one id "
                          "per job")
    return _with_estimates(jobs, loss, predictions, predictions_path)


def _with_estimates(jobs: pl.DataFrame, loss: LossReport, predictions: pl.DataFrame | None,
                    path: Path | None) -> pl.DataFrame:
    if predictions is None:
        return jobs.with_columns(pl.lit(None, pl.Float64).alias("estimate_s"))
    missing = [c for c in PREDICTION_KEYS if c not in predictions.columns]
    if missing:
        raise ExportError(f"{path}: no column(s) {', '.join(missing)}; expected the table `ddlx predict apply` "
                          "writes")
    estimates = predictions.select(pl.col("cluster").cast(pl.String), pl.col("job_id").cast(pl.String),
                                   pl.col("pred_s").cast(pl.Float64).alias("estimate_s"))
    repeated = estimates.height - estimates.select("cluster", "job_id").n_unique()
    if repeated:
        raise ExportError(f"{path}: {repeated:,} (cluster, job_id) pair(s) repeat; expected one prediction per job")
    joined = jobs.join(estimates, on=["cluster", "job_id"], how="left", maintain_order="left")
    without = joined.filter(pl.col("estimate_s").is_null()).height
    model = ""
    if "model_id" in predictions.columns and predictions.height:
        model = f" (model {', '.join(sorted({str(m) for m in predictions['model_id'].unique().to_list()}))})"
    source = path.name if path else "the predictions"
    loss.filled.append(("estimate", f"the model's predicted duration pred_s from {source}{model}, matched by "
                                    f"cluster and job id; {without:,} jobs have no prediction"))
    return joined


def integral(expr: pl.Expr) -> pl.Expr:
    """A number rounded to a whole number and typed as an integer (written `8`, never `8.0`)."""
    return expr.round(0).cast(pl.Int64)


def write_table(frame: pl.DataFrame, path: Path, separator: str = ",", header: bool = True,
                null_value: str = "") -> None:
    """Write `frame` as delimited text to `path` through a temporary name. Float columns whose
    values are all whole are written as integers."""
    from ddlx.atomic import atomic_file

    casts = [pl.col(name).cast(pl.Int64) for name, dtype in frame.schema.items()
             if dtype.is_float() and _all_whole(frame.get_column(name))]
    with atomic_file(path) as tmp:
        frame.with_columns(casts).write_csv(tmp, separator=separator, include_header=header, null_value=null_value)


def _all_whole(column: pl.Series) -> bool:
    values = column.drop_nulls()
    return values.len() > 0 and bool((values == values.round(0)).all()) and bool(values.abs().max() < 2**53)


def id_map_path(path: Path) -> Path:
    """Where the id map of the export `path` goes: `<path>.ids.csv`."""
    return Path(f"{path}.ids.csv")


def write_id_map(ids: pl.DataFrame, path: Path) -> Path:
    """Write the id map `ids` (the format's job number or name, job_id, cluster) beside the export
    `path`; returns where."""
    target = id_map_path(path)
    write_table(ids, target)
    return target


def documented_gpus(ctx: TraceContext) -> int | None:
    """The GPUs the dataset documents: the largest total of its `gpu_capacity` view over one source
    and validity start; None without the view."""
    if not ctx.has_view("gpu_capacity"):
        return None
    row = ctx.one_row("""SELECT max(total) AS gpus FROM (
        SELECT source, valid_from, sum(gpus) AS total FROM gpu_capacity GROUP BY source, valid_from)""")
    return int(row["gpus"]) if row["gpus"] is not None else None


def write_text(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary name."""
    from ddlx.atomic import atomic_file

    with atomic_file(path) as tmp:
        tmp.write_text(text)


def require_columns(jobs: pl.DataFrame, fmt: str, needed: dict[str, str]) -> None:
    """Refuse an export whose jobs have no value at all in a column the format cannot do without
    (`needed`: column -> why the format needs it)."""
    for column, why in needed.items():
        if jobs.height and jobs.get_column(column).null_count() == jobs.height:
            raise ExportError(f"the dataset records no {column} for any job; the {fmt} format needs it ({why})")

