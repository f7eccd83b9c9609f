"""Options and small helpers that several `ddlx` commands share (one definition each)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

DataHome = Annotated[
    Optional[Path],
    typer.Option("--data-home", help="Data folder (default: $DDLX_HOME, else the per-user data folder).",
                 show_default=False),
]
Modules = Annotated[Optional[list[str]], typer.Option(
    "--module", "-m", help="Run only these modules (repeat, or separate with commas): "
    "overview, utilization, failures, queueing, sharing, durations, users, time_patterns.",
    show_default=False)]
Resolution = Annotated[Optional[int], typer.Option(
    "--resolution", help="Step of the utilisation time series, seconds (default 3600).", min=1,
    show_default=False)]


def say(message: str) -> None:
    """A progress or note line, on stderr (stdout stays the command's result)."""
    typer.echo(message, err=True)


def data_home(path: Path | None) -> Path:
    """The data folder: `--data-home`, else $DDLX_HOME, else the per-user data folder."""
    from ddlx.datasets.home import resolve_data_home

    return resolve_data_home(path)


def module_names(module: list[str] | None) -> list[str]:
    """The analysis modules named by repeated or comma-separated `--module` values (all by default)."""
    from ddlx.analysis.runner import resolve_modules

    names = [n.strip() for item in module or [] for n in item.split(",") if n.strip()]
    return resolve_modules(names)


def analysis_options(resolution: int | None) -> dict[str, Any]:
    """The modules' options from `--resolution`."""
    return {} if resolution is None else {"resolution_s": resolution}
