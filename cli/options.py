"""Options and small helpers that several `ddlx` commands share (one definition each)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ddlx.datasets.plugins import TRACES
from ddlx.progress import TerminalProgress

if TYPE_CHECKING:
    from ddlx.analysis.options import AnalysisOptions
    from ddlx.api import Catalog

#: The registered traces as help texts list them ("a, b, ...").
TRACE_NAMES = ", ".join(TRACES)

DataHome = Annotated[
    Optional[Path],
    typer.Option("--data-home", help="Data folder (default: $DDLX_HOME, else the per-user data folder).",
                 show_default=False),
]
Modules = Annotated[Optional[list[str]], typer.Option(
    "--module", "-m", help="Run only these modules (repeat, or separate with commas): "
    "overview, utilization, failures, queueing, sharing, durations, users, time_patterns.",
    show_default=False)]
#: What `--dataset NAME` names, in every command that reads data (docs/cli.md).
DATASET_HELP = (f"The data: a dataset of the catalog (an ingested trace or an import), or a registered "
                f"trace ({TRACE_NAMES}), whose SYNTHETIC sample is used when it is not ingested.")
#: `--trace NAME`: the earlier spelling of `--dataset` for a registered trace (hidden).
Trace = Annotated[Optional[str], typer.Option("--trace", hidden=True, show_default=False)]
Dataset = Annotated[Optional[str], typer.Option("--dataset", metavar="NAME", help=DATASET_HELP, show_default=False)]
#: A bare NAME argument: the earlier spelling of `--dataset NAME` (hidden).
DatasetArgument = Annotated[Optional[str], typer.Argument(hidden=True, show_default=False)]
#: `--format text|json`: how a listing is printed (the one way to ask for JSON).
ListingFormat = Annotated[str, typer.Option("--format", help="text or json.")]
#: `--json`: the earlier spelling of `--format json` (hidden).
AsJson = Annotated[bool, typer.Option("--json", hidden=True)]
UseSample = Annotated[bool, typer.Option(
    "--synthetic", help="Use the trace's SYNTHETIC sample even when real data is ingested.")]
Resolution = Annotated[Optional[int], typer.Option(
    "--resolution", help="Step of the utilisation time series, seconds (default 3600).", min=1,
    show_default=False)]
Window = Annotated[Optional[str], typer.Option(
    "--window", help="Window of the allocation figures: trace (the whole trace, default) or active (the span "
                     "holding 99 % of the submissions).", show_default=False)]
NoCache = Annotated[bool, typer.Option(
    "--no-cache", help="Compute every result anew, neither reading nor writing the intermediate results kept "
                       "between runs on the same data (in $DDLX_CACHE_DIR, else ~/.cache/ddlx; safe to delete).")]
Engine = Annotated[Optional[str], typer.Option(
    "--engine", help="Where the reductions that grow with the data run (telemetry, allocation sweep, run-time "
                     "counts): duckdb (embedded, default) or spark (PySpark; samples are read where they are).",
    show_default=False)]
SparkMaster = Annotated[Optional[str], typer.Option(
    "--spark-master", metavar="URL", help="Spark master URL with --engine spark (default local[*]): local[2], "
                           "spark://host:7077, yarn, ...", show_default=False)]
SamplesLocation = Annotated[Optional[str], typer.Option(
    "--samples-location", help="Parquet GPU samples (the gpu_samples columns) to reduce instead of the dataset's own "
                               "telemetry: a folder, a glob, or with --engine spark an s3a:// path.",
    show_default=False)]
Partitions = Annotated[Optional[int], typer.Option(
    "--partitions", help="With --engine spark: partitions to read each input in, samples or jobs (default: Spark's "
                         "own split).",
    min=1, show_default=False)]
SparkConf = Annotated[Optional[list[str]], typer.Option(
    "--spark-conf", metavar="KEY=VALUE",
    help="A Spark setting KEY=VALUE (repeatable), e.g. spark.hadoop.fs.s3a.endpoint=...",
    show_default=False)]


def say(message: str) -> None:
    """A progress or note line, on stderr (stdout stays the command's result)."""
    typer.echo(message, err=True)


@contextmanager
def progress() -> Iterator[TerminalProgress]:
    """The progress callback of a long command: notes on stderr, and on a terminal a status line with
    the rate and the time left, ended before the command prints its result."""
    shown = TerminalProgress()
    try:
        yield shown
    finally:
        shown.close()


def data_home(path: Path | None) -> Path:
    """The data folder: `--data-home`, else $DDLX_HOME, else the per-user data folder."""
    from ddlx.datasets.home import resolve_data_home

    return resolve_data_home(path)


def catalog(path: Path | None, shown: TerminalProgress | None = None) -> Catalog:
    """The `ddlx.open()` catalog of the data folder (`data_home`), its progress lines on stderr (to `shown`,
    a long command's `progress()`, when given): every command that computes on a dataset calls its
    methods, so the command and the Python API agree."""
    from ddlx.api import Catalog

    return Catalog(data_home(path), progress=shown if shown is not None else say)


def module_names(module: list[str] | None) -> list[str]:
    """The analysis modules named by repeated or comma-separated `--module` values (all by default)."""
    from ddlx.analysis.runner import resolve_modules

    names = [n.strip() for item in module or [] for n in item.split(",") if n.strip()]
    return resolve_modules(names)


def analysis_options(resolution: int | None, window: str | None = None, engine: str | None = None,
                     spark_master: str | None = None, samples_location: str | None = None,
                     partitions: int | None = None, spark_conf: list[str] | None = None) -> AnalysisOptions:
    """The modules' options from `--resolution`, `--window` and the reduction engine's options (checked by
    `AnalysisOptions`: a bad value is a `UsageError`); `--spark-conf` values are KEY=VALUE."""
    from ddlx.analysis.options import AnalysisOptions

    conf: dict[str, str] = {}
    for pair in spark_conf or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected KEY=VALUE, not {pair!r}", param_hint="--spark-conf")
        conf[key.strip()] = value.strip()
    return AnalysisOptions.from_mapping({
        "resolution_s": resolution, "window": window, "engine": engine, "spark_master": spark_master,
        "samples_location": samples_location, "partitions": partitions, "spark_conf": conf or None})


def dataset_name(dataset: str | None, argument: str | None) -> str:
    """The dataset named by `--dataset NAME` or by the bare NAME argument (exactly one of them)."""
    if (dataset is None) == (argument is None):
        raise typer.BadParameter("give the dataset as --dataset NAME", param_hint="--dataset")
    name = dataset if dataset is not None else argument
    assert name is not None
    return name


def wants_json(output_format: str, as_json: bool) -> bool:
    """Whether a listing is printed as JSON: `--format json` (or the hidden `--json`); `--format` is
    text or json."""
    if output_format not in ("text", "json"):
        raise typer.BadParameter(f"expected text or json, not {output_format!r}", param_hint="--format")
    return as_json or output_format == "json"


def jobs_name(trace: str | None, dataset: str | None) -> str:
    """The catalog name of the jobs named by exactly one of `--dataset` and its hidden alias `--trace`.

    The catalog's methods read a registered trace that is not ingested (or any, with `--synthetic`)
    from its SYNTHETIC sample, as `ddlx analyze <trace>-trace` does; a dataset must be in the catalog.
    """
    if trace is None and dataset is None:
        raise typer.BadParameter("give the data as --dataset NAME", param_hint="--dataset")
    if trace is not None and dataset is not None:
        raise typer.BadParameter("give exactly one of --trace and --dataset", param_hint="--trace/--dataset")
    if trace is not None and trace not in TRACES:
        raise typer.BadParameter(f"'{trace}' is not a registered trace ({', '.join(TRACES)}); "
                                 "use --dataset for an imported one", param_hint="--trace")
    name = trace if trace is not None else dataset
    assert name is not None
    return name
