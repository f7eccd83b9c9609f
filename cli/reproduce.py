"""`ddlx reproduce`: parse, call `ddlx.analysis.reproduce.reproduce`, render the table (or JSON, CSV).

Register with `app.command("reproduce")(reproduce_command)`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ddlx.cli.options import DataHome, UseSample
from ddlx.cli.options import catalog as _catalog

FORMATS = ("table", "json", "csv")
WRITING = "writing the reproduction"


def reproduce_command(
    profile: Annotated[Optional[str], typer.Argument(
        help="A paper's profile (e.g. openb-atc23); omit it to list the profiles.", show_default=False)] = None,
    dataset: Annotated[Optional[str], typer.Option(
        "--dataset", help="Catalog dataset to read instead of the profile's own (e.g. an import of another name).",
        show_default=False)] = None,
    output_format: Annotated[str, typer.Option("--format", help="table, json or csv.")] = "table",
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="Write the output to this file instead of the terminal (replaced whole; a folder is refused).",
        show_default=False)] = None,
    synthetic: UseSample = False,
    data_home: DataHome = None,
) -> None:
    """Compute a paper's figures from the catalog beside its values.

    Each figure under the paper's definition: figure, kind (release count or published figure),
    published, ddlx, difference, verdict; the verdicts are totalled per kind."""
    from ddlx.analysis.reproduce import profiles
    from ddlx.outputs import check_output_file, write_output_text
    from ddlx.reports.reproduction import format_reproduction, reproduction_csv, reproduction_json

    if output_format not in FORMATS:
        raise typer.BadParameter("expected table, json or csv", param_hint="--format")
    if profile is None:
        for known in profiles().values():
            typer.echo(f"{known.name}: {known.paper}")
            typer.echo(f"  {known.description} Reads dataset '{known.dataset}'; {len(known.figures)} figures.")
        return
    if out is not None:
        check_output_file(out, WRITING)
    result = _catalog(data_home).reproduce(profile, dataset, synthetic)
    text = {"json": reproduction_json, "csv": reproduction_csv}.get(output_format, format_reproduction)(result)
    if out is None:
        typer.echo(text, nl=not text.endswith("\n"))
        return
    write_output_text(out, text, WRITING)
    typer.echo(f"{result.profile.name}: {len(result.results)} figures written to {out}")
