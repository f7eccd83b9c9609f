"""`ddlx report ...`: reports over the analysis results (commands only; the work is in
`ddlx.reports`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

report_app = typer.Typer(help="Reports over several traces: compare them side by side in one HTML page.",
                         no_args_is_help=True)

DataHome = Annotated[
    Optional[Path],
    typer.Option("--data-home", help="Data folder (default: $DDLX_HOME, else the per-user data folder).",
                 show_default=False),
]


def _say(message: str) -> None:
    typer.echo(message, err=True)


def _module_names(module: list[str] | None) -> list[str]:
    from ddlx.analysis.runner import resolve_modules

    names = [n.strip() for item in module or [] for n in item.split(",") if n.strip()]
    return resolve_modules(names)


@report_app.command("compare")
def compare(
    names: Annotated[list[str], typer.Argument(
        help="Two or more traces (pai, philly, helios, pai-v2023, acme) or datasets of the catalog. "
             "A trace that is not ingested is analysed on its SYNTHETIC sample.", show_default=False)],
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="Folder for report.html, report.md, report.json and each trace's results "
                      "(default: ./ddlx-results/compare-<names>).", show_default=False)] = None,
    synthetic: Annotated[bool, typer.Option(
        "--synthetic", help="Use the SYNTHETIC samples of the traces even when real data is ingested.")] = False,
    module: Annotated[Optional[list[str]], typer.Option(
        "--module", "-m", help="Run only these modules (repeat, or separate with commas): overview, "
        "utilization, failures, queueing, sharing, durations, users, time_patterns.", show_default=False)] = None,
    resolution: Annotated[Optional[int], typer.Option(
        "--resolution", min=1, help="Step of the utilisation time series, seconds (default 3600).",
        show_default=False)] = None,
    data_home: DataHome = None,
) -> None:
    """Analyse each trace and write one report with the same metrics side by side."""
    from ddlx.datasets.home import resolve_data_home
    from ddlx.reports.compare import CompareError, check_names, run_compare
    from ddlx.reports.report import SYNTHETIC_BANNER

    try:
        check_names(names)
    except CompareError as exc:
        raise typer.BadParameter(str(exc), param_hint="NAMES") from None
    options = {} if resolution is None else {"resolution_s": resolution}
    path, report = run_compare(resolve_data_home(data_home), names, out, modules=_module_names(module),
                               use_sample=synthetic, options=options, progress=_say)
    banner = f"*** {SYNTHETIC_BANNER} ({', '.join(report.synthetic_traces)}) ***" if report.synthetic else None
    if banner:
        typer.echo(banner)
    for trace in report.traces:
        label = " (SYNTHETIC)" if trace.synthetic else ""
        typer.echo(f"{trace.name}{label}: results in {path.parent / trace.name}")
    typer.echo(f"report: {path}")
    if banner:
        typer.echo(banner)
