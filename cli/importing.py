"""`ddlx datasets import`: parse the options, call `ddlx.datasets.importers`, print what ingest printed.

Malformed options become `typer.BadParameter` (exit 2); bad input files and names are library
errors that `ddlx.cli.main.run` prints as one `Error:` line (exit 1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ddlx.cli.options import DataHome, progress

_MAP_HELP = (
    "Column mapping KEY=COLUMN,... Required: submit, gpus, and duration or end. Optional: start, job_id, "
    "user, vc, state, cluster, cpus, mem_gb, instances, job_name, job_group, workload, gpu_type, tres, "
    "req_tres. Overrides the preset's entries."
)


def datasets_import(
    name: Annotated[str, typer.Argument(
        help="Name of the new dataset: lowercase letters, digits, '_' or '-' (not a registered trace).")],
    source: Annotated[Path, typer.Option(
        "--from", help="A CSV or Parquet file, a .tar.gz/.zip archive of CSVs, or a folder of them.")],
    preset: Annotated[Optional[str], typer.Option(
        "--preset", help="Known table shape or file format: itp (Microsoft ITP / ElasticFlow), slurm (sacct "
                         "--parsable2), swf (Standard Workload Format), or a trace tool's format (docs/import.md).",
        show_default=False)] = None,
    mapping: Annotated[Optional[str], typer.Option("--map", help=_MAP_HELP, show_default=False)] = None,
    time_unit: Annotated[Optional[str], typer.Option(
        "--time-unit", help="Unit of numeric times: s, ms, us, ns; or datetime for date-time strings "
                            "(default: the preset's, else s).", show_default=False)] = None,
    tz: Annotated[Optional[str], typer.Option(
        "--tz", help="IANA time zone of the wall-clock times (default UTC).", show_default=False)] = None,
    origin: Annotated[Optional[str], typer.Option(
        "--origin", help="'YYYY-MM-DD HH:MM:SS' that numeric times count from, wall clock in --tz "
                         "(default: the Unix epoch).", show_default=False)] = None,
    delimiter: Annotated[Optional[str], typer.Option(
        "--delimiter", help="CSV field separator, one character, \\t for tab (default: the preset's, else ,).",
        show_default=False)] = None,
    wall_clock: Annotated[Optional[bool], typer.Option(
        "--wall-clock/--no-wall-clock",
        help="Whether the times are real instants, with hours of day and weekdays (default: the preset's; else "
             "no when numeric times without --origin begin before 1980, i.e. are offsets from an undisclosed "
             "start).", show_default=False)] = None,
    max_rejected_rows: Annotated[int, typer.Option(
        "--max-rejected-rows", min=0,
        help="Skip up to this many unreadable rows (reported by `datasets info`) instead of failing.")] = 0,
    data_home: DataHome = None,
) -> None:
    """Import a job table of your own as a dataset.

    Any columns (mapped with --map), or a known shape: ITP, Slurm, SWF or a trace tool's format."""
    from ddlx.datasets.catalog import catalog_path, read_registrations
    from ddlx.datasets.home import resolve_data_home
    from ddlx.datasets.importers import ImportSpecError, build_spec, import_with_spec

    home = resolve_data_home(data_home)
    try:
        spec = build_spec(name, mapping=mapping, preset=preset, time_unit=time_unit, tz=tz, origin=origin,
                          delimiter=delimiter, registered=list(read_registrations(home)), wall_clock=wall_clock)
    except ImportSpecError as exc:
        raise typer.BadParameter(exc.message, param_hint=exc.option) from None
    with progress() as shown:
        result = import_with_spec(spec, source, home, max_rejected_rows=max_rejected_rows, progress=shown)
    if not result.skipped:
        for table, rows in result.tables.items():
            typer.echo(f"{table}: {rows:,} rows")
    label = " (SYNTHETIC data)" if result.synthetic else ""
    typer.echo(f"catalog: {catalog_path(home)}{label}")
    typer.echo(f"next: ddlx datasets info {spec.name}")
