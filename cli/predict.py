"""`ddlx predict`: train a job-duration model, apply it to a trace, export its predictions.

Each command parses its options, calls `ddlx.predict`, and prints; library errors become one
`Error:` line at the CLI boundary (`ddlx.cli.main.run`). scikit-learn is imported only inside
the commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ddlx.cli.options import DataHome, Dataset, Trace, UseSample, jobs_name
from ddlx.cli.options import catalog as _catalog
from ddlx.cli.options import say as _say

if TYPE_CHECKING:
    from ddlx.predict.artifacts import Predictor

predict_app = typer.Typer(help="Train, apply and export job-duration predictors.", no_args_is_help=True)

def note_if_trained_elsewhere(predictor: "Predictor", name: str) -> None:
    """A note on stderr when `predictor` was trained on another trace or dataset than `name`."""
    trained_on = predictor.card.get("data", {}).get("trace")
    if trained_on != name:
        _say(f"note: model {predictor.model_id} was trained on '{trained_on}', applied to '{name}'")


@predict_app.command("train")
def predict_train(
    trace: Trace = None,
    dataset: Dataset = None,
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="Model folder to write (default: ./ddlx-models/<trace>); replaced whole when it holds a "
                      "model card, refused when it is another non-empty folder.", show_default=False)] = None,
    max_fit_rows: Annotated[Optional[int], typer.Option(
        "--max-fit-rows", min=100,
        help="Fit on at most this many train-window jobs (a seeded sample; default 300000).",
        show_default=False)] = None,
    seed: Annotated[int, typer.Option("--seed", help="random_state of the sample and the models.")] = 0,
    synthetic: UseSample = False,
    data_home: DataHome = None,
) -> None:
    """Train duration models on a time-ordered split.

    Models of the mean, p50 and p90 run time and their baselines, written as a model folder with its
    card."""
    from ddlx.predict.artifacts import check_out_folder
    from ddlx.predict.training import default_model_dir
    from ddlx.reports.text import format_table

    named = trace if trace is not None else dataset
    if named is not None and (trace is None or dataset is None):  # both or neither: jobs_name says so
        check_out_folder(out if out is not None else default_model_dir(named))
    name = jobs_name(trace, dataset)
    result = _catalog(data_home).train(name, out, seed, max_fit_rows, synthetic)
    card = result.card
    if result.synthetic:
        typer.echo(f"*** {card['warning']} ***")
    windows = card["split"]["windows"]
    for window in ("train", "validation", "test"):
        w = windows[window]
        typer.echo(f"{window:<10} {w['jobs']:>10,} jobs  submitted {w['first_submit_utc']} .. {w['last_submit_utc']}")
    excluded = ", ".join(f"{k} {v:,}" for k, v in card["target"]["excluded"].items() if v)
    typer.echo(f"jobs without a run time, left out: {excluded or 'none'}")
    typer.echo(f"\ntest-window metrics ({card['metrics']['window']}):")
    typer.echo(format_table(result.metrics))
    typer.echo(f"\nmodel {card['model_id']}: {result.path} (model card: {result.path / 'model_card.json'})")


@predict_app.command("apply")
def predict_apply(
    model: Annotated[Path, typer.Option("--model", help="Model folder written by `ddlx predict train`.")],
    out: Annotated[Path, typer.Option(
        "--out", help="Prediction table to write: FILE.parquet or FILE.csv (replaced whole; a folder is refused).")],
    trace: Trace = None,
    dataset: Dataset = None,
    synthetic: UseSample = False,
    data_home: DataHome = None,
) -> None:
    """Predict the run time of every job of a dataset.

    A table of job_id, pred_s, p50_s, p90_s, model_id and the job columns exporters need."""
    from ddlx.outputs import check_output_file
    from ddlx.predict.artifacts import PREDICTIONS_SYNTHETIC_BANNER, is_synthetic, load_predictor, write_table

    if out.suffix.lower() not in (".parquet", ".csv"):
        raise typer.BadParameter("expected a .parquet or .csv file name", param_hint="--out")
    check_output_file(out, "writing the prediction table")
    predictor = load_predictor(model)
    name = jobs_name(trace, dataset)
    note_if_trained_elsewhere(predictor, name)
    table = _catalog(data_home).predict(predictor, name, synthetic)
    write_table(table, out)
    synthetic = is_synthetic(table)
    if synthetic:
        typer.echo(f"*** {PREDICTIONS_SYNTHETIC_BANNER} ***")
    typer.echo(f"{table.height:,} predictions by model {predictor.model_id}: {out}"
               + (" (SYNTHETIC: column synthetic is true)" if synthetic else ""))


@predict_app.command("export")
def predict_export(
    predictions: Annotated[Path, typer.Option(
        "--predictions", help="Prediction table written by `ddlx predict apply` (.parquet or .csv).")],
    export_format: Annotated[str, typer.Option(
        "--format", help="estimate-csv (job_id,estimate). Simulator formats: ddlx datasets export NAME --format F "
                         "--predictions FILE.")],
    out: Annotated[Path, typer.Option("--out", help="CSV file to write (replaced whole; a folder is refused).")],
    cluster: Annotated[Optional[str], typer.Option(
        "--cluster", help="Export only the jobs of this cluster (needed where job ids repeat across clusters).",
        show_default=False)] = None,
) -> None:
    """Write predictions as a job_id,estimate list.

    Simulator formats that carry an estimate: `ddlx datasets export --predictions`."""
    from ddlx.predict.artifacts import PREDICTIONS_SYNTHETIC_BANNER
    from ddlx.predict.export import EXPORT_FORMATS, MOVED, export_predictions

    if export_format not in EXPORT_FORMATS + MOVED:
        raise typer.BadParameter(f"expected one of {', '.join(EXPORT_FORMATS)}", param_hint="--format")
    if out.suffix.lower() != ".csv":
        raise typer.BadParameter("exports are CSV files: name it *.csv", param_hint="--out")
    result = export_predictions(predictions, export_format, out, cluster)
    if result.synthetic:
        typer.echo(f"*** {PREDICTIONS_SYNTHETIC_BANNER} (the {export_format} format has no place for the label: "
                   "keep it with the file) ***", err=True)
    for reason, rows in result.left_out.items():
        if rows:
            _say(f"left out {rows:,} job(s): {reason.replace('_', ' ')}")
    typer.echo(f"{result.rows:,} rows ({result.format}): {result.path}")
