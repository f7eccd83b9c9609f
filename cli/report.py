"""`ddlx report ...`: reports over the analysis results (commands only; the work is in
`ddlx.reports`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ddlx.cli.options import TRACE_NAMES, DataHome, Modules, Resolution, analysis_options, module_names, progress, say
from ddlx.cli.options import data_home as home

report_app = typer.Typer(help="Compare datasets side by side and write figures.", no_args_is_help=True)



@report_app.command("compare")
def compare(
    datasets: Annotated[Optional[list[str]], typer.Option(
        "--dataset", help=f"A dataset of the catalog or a registered trace ({TRACE_NAMES}); give two or more "
                          "(repeat the option). A trace that is not ingested is analysed on its SYNTHETIC sample.",
        show_default=False)] = None,
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="Folder for report.html, report.md, report.json and each trace's results "
                      "(default: ./ddlx-results/compare-<names>).", show_default=False)] = None,
    synthetic: Annotated[bool, typer.Option(
        "--synthetic", help="Use the SYNTHETIC samples of the traces even when real data is ingested.")] = False,
    module: Modules = None,
    resolution: Resolution = None,
    data_home: DataHome = None,
    names: Annotated[Optional[list[str]], typer.Argument(hidden=True, show_default=False)] = None,
) -> None:
    """Analyse each dataset and report them side by side.

    One HTML page (and Markdown, JSON) with the same metrics for each dataset."""
    from ddlx.reports.compare import CompareError, bucket_table, check_names, default_out_dir, run_compare
    from ddlx.reports.model import SYNTHETIC_BANNER
    from ddlx.reports.results import check_results_writable
    from ddlx.reports.text import format_table

    if datasets and names:
        raise typer.BadParameter("give the datasets as --dataset NAME, each once", param_hint="--dataset")
    names = list(datasets or names or [])
    try:
        checked = check_names(names)
    except CompareError as exc:
        raise typer.BadParameter(str(exc), param_hint="--dataset") from None
    check_results_writable(out if out is not None else default_out_dir(checked))  # before the analyses run
    path, report, results = run_compare(home(data_home), names, out, modules=module_names(module),
                                        use_sample=synthetic, options=analysis_options(resolution), progress=say)
    banner = f"*** {SYNTHETIC_BANNER} ({', '.join(report.synthetic_traces)}) ***" if report.synthetic else None
    if banner:
        typer.echo(banner)
    buckets = bucket_table(results)
    if buckets.height:
        typer.echo("by GPUs requested (n: started jobs for the queueing delay, ended jobs for the run time; "
                   "p50, p90 in seconds):")
        typer.echo(format_table(buckets))
    for trace in report.traces:
        label = " (SYNTHETIC)" if trace.synthetic else ""
        typer.echo(f"{trace.name}{label}: results in {path.parent / trace.name}")
    typer.echo(f"report: {path}")
    if banner:
        typer.echo(banner)


@report_app.command("figures")
def figures(
    results: Annotated[Path, typer.Argument(
        help="A results folder of ddlx analyze or ddlx report compare (it holds report.json).",
        show_default=False)],
    fmt: Annotated[str, typer.Option(
        "--format", help="File format of the figures: svg, pdf or png.")] = "svg",
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="Folder for the figure files (default: RESULTS/figures); replaced whole when it holds "
                      "figures.json, refused when it is another non-empty folder.", show_default=False)] = None,
) -> None:
    """Write every chart of a report as a figure file.

    SVG, PDF or PNG for a paper, into a folder replaced whole (it holds figures.json, which lists them;
    another non-empty folder is refused)."""
    from ddlx.reports.figures import FIGURE_FORMATS, write_figures

    if fmt not in FIGURE_FORMATS:
        raise typer.BadParameter(f"expected one of {', '.join(FIGURE_FORMATS)}, not {fmt!r}", param_hint="--format")
    with progress() as shown:
        written = write_figures(results, fmt, out, progress=shown)
    for path in written:
        typer.echo(str(path))
    typer.echo(f"{len(written)} figures ({fmt})")
