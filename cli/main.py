"""The `ddlx` command line: each command parses its arguments, calls the library, renders.

`run()` is the one boundary where library errors (`DdlxError`) become a single `Error: ...`
line on stderr and exit code 1.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from ddlx.cli.help import WorkflowGroup, click_command
from ddlx.cli.options import (
    TRACE_NAMES,
    AsJson,
    DataHome,
    Dataset,
    DatasetArgument,
    Engine,
    ListingFormat,
    Modules,
    NoCache,
    Partitions,
    Resolution,
    SamplesLocation,
    SparkConf,
    SparkMaster,
    UseSample,
    Window,
)
from ddlx.cli.options import analysis_options as _options
from ddlx.cli.options import catalog as _catalog
from ddlx.cli.options import data_home as _home
from ddlx.cli.options import dataset_name as _dataset_name
from ddlx.cli.options import module_names as _module_names
from ddlx.cli.options import progress as _progress
from ddlx.cli.options import wants_json as _wants_json
from ddlx.datasets.plugins import TRACES
from ddlx.errors import DdlxError, UsageError, caused_by_interrupt, describe_os_error, storage_error

if TYPE_CHECKING:
    from ddlx.analysis.options import AnalysisOptions

app = typer.Typer(
    help="Trace analysis and workload characterization for deep-learning GPU clusters.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # click's plain layout: option names whole at 80 columns
    cls=WorkflowGroup,
)
datasets_app = typer.Typer(help="List, download, ingest, import, generate and inspect datasets.",
                           no_args_is_help=True)
app.add_typer(datasets_app, name="datasets")

TraceName = Annotated[str, typer.Argument(
    help=f"Trace name: {TRACE_NAMES} (see `ddlx datasets list`).")]
Tables = Annotated[
    Optional[list[str]],
    typer.Option("--table", help="Only this table (repeatable); default: every table.", show_default=False),
]


@datasets_app.command("list")
def datasets_list(output_format: ListingFormat = "text", as_json: AsJson = False) -> None:
    """Show each supported trace, its files, sources and licence.

    For each file: its size, address and sha256; for each trace: its licence, time zone and paper."""
    from dataclasses import asdict

    if _wants_json(output_format, as_json):
        typer.echo(json.dumps([asdict(t) for t in TRACES.values()], indent=2))
        return
    for trace in TRACES.values():
        total = trace.total_bytes
        typer.echo(f"{trace.name}: {trace.title}")
        typer.echo(f"  {trace.description}")
        typer.echo(f"  licence: {trace.licence}    time zone: {trace.source_tz}")
        typer.echo(f"  cite: {trace.paper}")
        typer.echo(f"  home: {trace.homepage}")
        typer.echo(f"  files ({len(trace.files)}" + (f", {total:,} bytes" if total else "") + "):")
        for f in trace.files:
            size = f"{f.size_bytes:,} bytes" if f.size_bytes else "size unknown"
            typer.echo(f"    {f.filename}  {size}")
            typer.echo(f"      url:    {f.url}")
            typer.echo(f"      sha256: {f.sha256 or 'not published'}")


@datasets_app.command("status")
def datasets_status(output_format: ListingFormat = "text", as_json: AsJson = False,
                    data_home: DataHome = None) -> None:
    """Show what the data home holds.

    Each ingested trace, imported dataset and SYNTHETIC sample, as a table (or JSON)."""
    from ddlx.reports.text import format_table

    json_out = _wants_json(output_format, as_json)
    catalog = _catalog(data_home)
    home, frame = catalog.home, catalog.datasets()
    if json_out:
        typer.echo(json.dumps(frame.to_dicts(), indent=2))
        return
    typer.echo(f"data home: {home}")
    if frame.is_empty():
        typer.echo("nothing ingested yet: ddlx datasets ingest TRACE --from DIR, "
                   "or ddlx datasets import NAME --from FILE")
        return
    typer.echo(format_table(frame.drop("home")))


@datasets_app.command("download")
def datasets_download(
    trace: TraceName,
    table: Tables = None,
    mirror: Annotated[Optional[str], typer.Option(
        "--mirror", help="Base address to fetch the same file names from instead of the official one.",
        show_default=False)] = None,
    data_home: DataHome = None,
) -> None:
    """Fetch a trace's official files, resuming and verifying.

    The files go into the data home; each is checked against its published sha256."""
    from ddlx.datasets.download import download_release
    from ddlx.datasets.home import downloads_dir
    from ddlx.datasets.plugins import get_trace

    info = get_trace(trace)
    dest = downloads_dir(_home(data_home), info.name)
    bars = _ProgressBars()
    try:
        paths = download_release(info, dest, tables=table, base_url=mirror, progress=bars.update)
    finally:
        bars.close()
    for path in paths:
        typer.echo(f"verified {path}")
    typer.echo(f"next: ddlx datasets ingest {info.name} --from {dest}")


class _ProgressBars:
    """One terminal progress bar per downloaded file, fed by the library's progress callback."""

    def __init__(self) -> None:
        self._bars: dict[str, tuple[Any, list[int]]] = {}

    def update(self, name: str, done: int, total: int | None) -> None:
        if name not in self._bars:
            bar = typer.progressbar(length=total or 0, label=name, file=sys.stderr, show_pos=True)
            self._bars[name] = (bar.__enter__(), [0])
        bar, seen = self._bars[name]
        bar.update(done - seen[0])
        seen[0] = done

    def close(self) -> None:
        for bar, _ in self._bars.values():
            bar.__exit__(None, None, None)
        self._bars.clear()


@datasets_app.command("ingest")
def datasets_ingest(
    trace: TraceName,
    source: Annotated[Path, typer.Option(
        "--from", help="Folder with the official .tar.gz files or their extracted CSVs.")],
    table: Tables = None,
    max_rejected_rows: Annotated[int, typer.Option(
        "--max-rejected-rows", min=0,
        help="Skip up to this many unreadable rows per table (reported by `datasets info`) instead of failing.")] = 0,
    data_home: DataHome = None,
) -> None:
    """Read a trace's files into typed Parquet in the catalog.

    The trace is registered in the catalog as a dataset of the same name."""
    from ddlx.datasets.catalog import catalog_path
    from ddlx.datasets.ingest import ingest

    home = _home(data_home)
    with _progress() as shown:
        result = ingest(trace, source, home, tables=table, max_rejected_rows=max_rejected_rows, progress=shown)
    if not result.skipped:
        for name, rows in result.tables.items():
            typer.echo(f"{name}: {rows:,} rows")
    label = " (SYNTHETIC data)" if result.synthetic else ""
    typer.echo(f"catalog: {catalog_path(home)}{label}")


@datasets_app.command("info")
def datasets_info(
    dataset: Dataset = None,
    name: DatasetArgument = None,
    output_format: Annotated[str, typer.Option("--format", help="text, or json for the manifest.")] = "text",
    as_json: AsJson = False,
    data_home: DataHome = None,
) -> None:
    """Show what was ingested for a dataset and its validation.

    The tables, the input files, rejected rows, the validation report and the figures (or, as JSON, the
    manifest)."""
    from ddlx.datasets import inventory
    from ddlx.datasets.catalog import registered_dataset
    from ddlx.reports.text import format_table

    trace = _dataset_name(dataset, name)
    json_out = _wants_json(output_format, as_json)
    registration = registered_dataset(_home(data_home), trace)
    manifest = registration.manifest
    if json_out:
        typer.echo(json.dumps(manifest, indent=2))
        return
    if registration.synthetic:
        typer.echo("SYNTHETIC: generated by ddlx, not real cluster data")
    typer.echo(f"{manifest.get('title', trace)}: version {registration.version}, ingested "
               f"{registration.ingested_at} by ddlx {registration.ddlx_version}")
    typer.echo(f"store: {registration.store_dir}\n")
    typer.echo(format_table(inventory.tables_frame(manifest)))
    typer.echo("\ninput files:")
    typer.echo(format_table(inventory.files_frame(manifest), max_rows=100))
    examples = inventory.rejected_examples(manifest)
    if examples:
        typer.echo("\nrejected rows (first examples):")
        for example in examples:
            typer.echo(f"  {example}")
    typer.echo("\nvalidation:")
    typer.echo(format_table(inventory.checks_frame(manifest), max_rows=200))
    figures = inventory.figures_frame(manifest)
    if figures.height:
        typer.echo("\nfigures:")
        typer.echo(format_table(figures))


@datasets_app.command("synth")
def datasets_synth(
    trace: TraceName,
    out: Annotated[Path, typer.Option(
        "--out", help="Folder to write the synthetic release as (replaced whole when it is a ddlx release, refused "
                      "when it is another non-empty folder).")],
    scale: Annotated[float, typer.Option("--scale", help="1 is about the size of the real release.")] = 0.01,
    seed: Annotated[int, typer.Option("--seed", help="Same seed, same bytes.")] = 0,
) -> None:
    """Generate a SYNTHETIC trace in the official file format.

    At --scale 1 a release is about the size of the real one (minutes to write)."""
    from ddlx.datasets.synthetic import write_synthetic_release

    if not (math.isfinite(scale) and scale > 0):
        raise typer.BadParameter(f"expected a finite number above 0, got {scale:g}", param_hint="--scale")
    with _progress() as shown:
        paths = write_synthetic_release(trace, out, scale, seed, progress=shown)
    for path in paths:
        typer.echo(f"{path}  {path.stat().st_size:,} bytes")
    typer.echo(f"SYNTHETIC release written; ingest it with: ddlx datasets ingest {trace} --from {out}")


from ddlx.cli.cluster_synth import synth_cluster_command  # noqa: E402
from ddlx.cli.importing import datasets_import  # noqa: E402
from ddlx.cli.telemetry import import_metrics_command, reduce_command  # noqa: E402


@datasets_app.command("export")
def datasets_export(
    output_format: Annotated[str, typer.Option("--format", help="The format (`ddlx datasets formats` lists them).")],
    out: Annotated[Path, typer.Option(
        "--out", help="The file to write (a sidecar .datapackage.json goes beside; all are replaced together, a "
                      "folder is refused).")],
    dataset: Dataset = None,
    predictions: Annotated[Optional[Path], typer.Option(
        "--predictions", help="A prediction table of `ddlx predict apply`: its duration estimates go where the "
                              "format carries one.")] = None,
    option: Annotated[Optional[list[str]], typer.Option(
        "--option", help="A setting of the format, KEY=VALUE (repeatable; see `ddlx datasets formats`).")] = None,
    synthetic: UseSample = False,
    name: DatasetArgument = None,
    data_home: DataHome = None,
) -> None:
    """Write a dataset in a simulator's or scheduler's format.

    A sidecar .datapackage.json beside the file states its sources, licence and what the conversion
    lost."""
    from ddlx.formats.export import parse_options

    name = _dataset_name(dataset, name)

    result = _catalog(data_home).export(name, output_format, out, predictions, parse_options(option or []),
                                        synthetic)
    if result.synthetic:
        typer.echo("*** SYNTHETIC DATA: generated by ddlx, not real cluster data ***")
    typer.echo(f"{result.path}: {result.rows:,} {result.rows_are}, {result.path.stat().st_size:,} bytes "
               f"({result.format})")
    for extra in result.extra_files:
        typer.echo(f"{extra}: {extra.stat().st_size:,} bytes")
    typer.echo(f"{result.sidecar}: sources, licence, loss report")
    typer.echo("loss report:")
    for line in result.loss.lines():
        typer.echo(line)


@datasets_app.command("formats")
def datasets_formats() -> None:
    """List the formats `ddlx datasets export` writes.

    For each: who reads it, its options, and whether it carries a duration estimate."""
    from ddlx.formats.export import FORMATS

    for fmt in FORMATS.values():
        typer.echo(f"{fmt.name}: {fmt.title}")
        typer.echo(f"  read by: {fmt.consumer}")
        typer.echo(f"  reference: {fmt.reference}")
        if fmt.carries_estimate:
            typer.echo("  carries a duration estimate: --predictions FILE")
        for key, text in fmt.options.items():
            typer.echo(f"  --option {key}=...: {text}")


from ddlx.cli.placement import placement_command  # noqa: E402
from ddlx.cli.predict import predict_app  # noqa: E402
from ddlx.cli.report import report_app  # noqa: E402
from ddlx.cli.reproduce import reproduce_command  # noqa: E402
from ddlx.cli.simulate import simulate_command  # noqa: E402

datasets_app.command("import")(datasets_import)
datasets_app.command("import-metrics")(import_metrics_command)
datasets_app.command("reduce")(reduce_command)
datasets_app.command("synth-cluster")(synth_cluster_command)
app.command("simulate")(simulate_command)
app.command("reproduce")(reproduce_command)
app.command("placement")(placement_command)
app.add_typer(report_app, name="report")
app.add_typer(predict_app, name="predict")
# the order `ddlx --help` lists them in is ddlx.cli.help.WORKFLOW_ORDER


@app.command("sql")
def sql(
    query: Annotated[str, typer.Argument(help="One SQL query (DuckDB dialect) on the catalog.")],
    output_format: Annotated[str, typer.Option("--format", help="table, csv or json.")] = "table",
    max_rows: Annotated[int, typer.Option("--max-rows", help="Rows shown in table format.")] = 50,
    data_home: DataHome = None,
) -> None:
    """Run a SQL query on the catalog and print the result.

    The tables: jobs (every dataset's jobs in one schema) and each trace's own (`ddlx datasets info`)."""
    from ddlx.reports.text import format_csv, format_json, format_table

    if output_format not in ("table", "csv", "json"):
        raise typer.BadParameter("expected table, csv or json", param_hint="--format")
    frame = _catalog(data_home).sql(query)
    if output_format == "csv":
        typer.echo(format_csv(frame), nl=False)
    elif output_format == "json":
        typer.echo(format_json(frame))
    else:
        typer.echo(format_table(frame, max_rows=max_rows))


AnalyzeOut = Annotated[Optional[Path], typer.Option(
    "--out", help="Results folder (default: ./ddlx-results/<trace>-trace for a registered trace, else "
                  "./ddlx-results/<dataset>); replaced whole when it holds summary.json, refused when it is "
                  "another non-empty folder.", show_default=False)]


@app.command("analyze")
def analyze(
    dataset: Dataset = None,
    out: AnalyzeOut = None,
    synthetic: UseSample = False,
    module: Modules = None,
    resolution: Resolution = None,
    window: Window = None,
    engine: Engine = None,
    spark_master: SparkMaster = None,
    samples_location: SamplesLocation = None,
    partitions: Partitions = None,
    spark_conf: SparkConf = None,
    no_cache: NoCache = False,
    data_home: DataHome = None,
    legacy: Annotated[Optional[list[str]], typer.Argument(
        metavar="TRACE-trace", show_default=False,
        help="A registered trace, the main job: " + ", ".join(f"{name}-trace" for name in TRACES)
             + "; the same as --dataset TRACE, results in ./ddlx-results/TRACE-trace.")] = None,
) -> None:
    """Characterize a trace or a dataset and write its results.

    `ddlx analyze TRACE-trace` analyses a registered trace; `--dataset NAME` any dataset of the catalog.
    Prints one line per finding and writes the results folder (summary.json, report.html). A registered
    trace that is not ingested is analysed on its SYNTHETIC sample."""
    options = _options(resolution, window, engine, spark_master, samples_location, partitions, spark_conf)
    name, as_trace = _analyzed(dataset, legacy or [])
    if as_trace:
        _analyze(name, out, synthetic, module, options, data_home, not no_cache)
        return
    from ddlx.datasets.catalog import registered_dataset

    out = _writable_out(out, name)
    catalog = _catalog(data_home)
    registered_dataset(catalog.home, name, lacking="jobs of trace")  # the wording of the analysis's own check
    _render(catalog.analyze(name, _module_names(module), synthetic, options, not no_cache), out)


def _analyzed(dataset: str | None, legacy: list[str]) -> tuple[str, bool]:
    """The dataset `ddlx analyze` reads and whether it is read as a registered trace (its SYNTHETIC sample
    when not ingested; results in <trace>-trace): `--dataset NAME` or `analyze <trace>-trace`, or the
    hidden older spelling `analyze dataset NAME` (always a catalog dataset)."""
    if dataset is not None and not legacy:
        return dataset, dataset in TRACES
    if dataset is None and len(legacy) == 2 and legacy[0] == "dataset":
        return legacy[1], False
    if dataset is None and len(legacy) == 1 and legacy[0].endswith("-trace") and legacy[0][:-6] in TRACES:
        return legacy[0][:-6], True
    if dataset is None and not legacy:
        raise typer.BadParameter("give a trace (analyze TRACE-trace) or the data as --dataset NAME",
                                 param_hint="--dataset")
    raise typer.BadParameter(f"unexpected {' '.join(legacy)!r}; give the data as --dataset NAME",
                             param_hint="--dataset")


def _analyze(trace: str, out: Path | None, force_sample: bool, module: list[str] | None,
             options: AnalysisOptions, data_home: Path | None, cache: bool = True) -> None:
    modules = _module_names(module)
    out = _writable_out(out, f"{trace}-trace")
    _render(_catalog(data_home).analyze(trace, modules, force_sample, options, cache), out)


def _writable_out(out: Path | None, default_name: str) -> Path:
    """The results folder (`out`, else `./ddlx-results/<default_name>`), refused before the analysis
    runs when its results could not be written there."""
    from ddlx.reports.results import check_results_writable

    out = out if out is not None else Path("ddlx-results") / default_name
    check_results_writable(out)
    return out


def _render(result: Any, out: Path) -> None:
    """Print one line per finding (and what did not apply), then write the results folder."""
    from ddlx.reports.render import REPORT_FILES
    from ddlx.reports.results import write_results
    from ddlx.reports.text import format_findings

    banner = "SYNTHETIC DATA: generated by ddlx, not real cluster data" if result.synthetic else None
    if banner:
        typer.echo(f"*** {banner} ***")
    typer.echo(format_findings(result))
    written = write_results(result, out, with_report=True)
    report = out / REPORT_FILES["html"]
    typer.echo(f"\nresults: {out} ({len(written)} files; definitions of every number in summary.json)")
    typer.echo(f"report: {report}")
    if banner:
        typer.echo(f"*** {banner} ***")


def run() -> None:
    """Entry point of the `ddlx` console script and `python -m ddlx`.

    Exit codes: 0 success; 1 bad input, a failed step or a system condition (disk full, no
    permission, a lock, out of memory), always as one `Error: ...` line; 2 bad command-line usage
    (unknown option, missing or malformed argument); 130 interrupted.
    """
    import logging

    # ddlx speaks in its own lines: a library's log record (py4j logs a traceback on an interrupt)
    # must not reach the terminal through logging's last-resort handler
    if not logging.getLogger().handlers:
        logging.getLogger().addHandler(logging.NullHandler())
    try:
        click_command(app)()
    except KeyboardInterrupt:
        _interrupted()
    except SystemExit as exc:  # Typer turns an interrupt inside a command into a silent exit 130
        if exc.code == 130 and caused_by_interrupt(exc):
            typer.echo("Error: interrupted", err=True)
        raise
    except Exception as exc:
        if caused_by_interrupt(exc):  # a library's own report of Ctrl-C (DuckDB stops its query)
            _interrupted()
        if isinstance(exc, UsageError):
            _fail(str(exc), code=2)
        if isinstance(exc, DdlxError):
            _fail(str(exc))
        if isinstance(exc, OSError):
            _fail(describe_os_error(exc))
        if isinstance(exc, MemoryError):
            _fail("out of memory; close other programs, analyse fewer modules (-m) or use a coarser "
                  "--resolution")
        error = storage_error(exc, "ddlx", "running the command") if _from_a_data_engine(exc) else None
        if error is None:
            raise  # a bug: keep the traceback
        _fail(str(error))


def _interrupted() -> None:
    typer.echo("Error: interrupted", err=True)
    sys.exit(130)


def _from_a_data_engine(exc: BaseException) -> bool:
    """Raised by DuckDB, polars or pyarrow (which report a full disk or a lock in their message)."""
    return type(exc).__module__.split(".")[0] in ("duckdb", "_duckdb", "polars", "pyarrow")


def _fail(message: str, code: int = 1) -> None:
    """Print one `Error:` line (the message's first line) and exit with `code`."""
    lines = message.strip().splitlines() or ["failed"]
    typer.echo(f"Error: {lines[0]}", err=True)
    sys.exit(code)
