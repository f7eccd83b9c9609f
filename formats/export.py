"""Exports: any dataset of the catalog written in the format a simulator or scheduler reads, with a
loss report and a `datapackage.json`-style sidecar beside the file.

`FORMATS` lists the formats: one module each here for the formats that belong to no trace
(declaring `FORMAT`), and the formats a trace's own tools read, declared by that trace's folder
(`formats.EXPORT_FORMATS`); `export_dataset` opens the dataset (a registered trace that is not
ingested is read from its SYNTHETIC sample, labelled as such), writes the file, the files beside it
and the sidecar under temporary names and renames them into place together
(`ddlx.outputs.output_files`: all of them, or on a failure none of them). The sidecar holds the
resources written, the source dataset and the sha256 of its input files, the trace's licence and
citation, the loss report and the numbers given to names.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ddlx.datasets.archives import sha256_file
from ddlx.errors import UsageError, did_you_mean
from ddlx.formats.jobs import ExportRequest
from ddlx.formats.model import ExportError, ExportFormat, ExportResult, LossReport, Written


def _formats() -> dict[str, ExportFormat]:
    from ddlx.datasets.plugins import format_plugins

    return {plugin.writer.name: plugin.writer for plugin in format_plugins() if plugin.writer is not None}


#: The formats, by the name `--format` takes.
FORMATS: dict[str, ExportFormat] = _formats()


def get_format(name: str) -> ExportFormat:
    if name not in FORMATS:
        raise UsageError(f"unknown export format '{name}'; expected one of: {', '.join(FORMATS)}"
                         f"{did_you_mean(name, FORMATS)}")
    return FORMATS[name]


def parse_options(pairs: list[str]) -> dict[str, str]:
    """`KEY=VALUE` settings of a format (from `--option`) as a dict; `UsageError` for another shape."""
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--option {pair!r}: expected KEY=VALUE")
        options[key.strip()] = value.strip()
    return options


def sidecar_path(path: Path) -> Path:
    """Where the sidecar of the export `path` goes: `<path>.datapackage.json`."""
    return Path(f"{path}.datapackage.json")


def export_dataset(home: Path, name: str, fmt: str, out: Path, use_sample: bool = False,
                   progress: Callable[[str], None] | None = None, predictions: Path | None = None,
                   options: dict[str, str] | None = None) -> ExportResult:
    """Write the dataset `name` of the catalog of `home` as `fmt` to `out`, with its sidecar;
    `predictions` (a table of `ddlx predict apply`) gives the estimates of formats that carry one,
    `options` the format's own settings (`ExportFormat.options`)."""
    from ddlx.analysis.context import open_trace
    from ddlx.atomic import write_text_atomic
    from ddlx.datasets.synthetic import home_with_jobs_or_sample
    from ddlx.outputs import check_output_file, output_files

    chosen = get_format(fmt)
    out = Path(out)
    doing = f"writing the {fmt} export"
    options = dict(options or {})
    unknown = [key for key in options if key not in chosen.options]
    if unknown:
        accepted = ", ".join(chosen.options) or "none"
        raise UsageError(f"the {fmt} format has no option '{unknown[0]}'; it accepts: {accepted}"
                         f"{did_you_mean(unknown[0], chosen.options)}")
    check_output_file(out, doing)
    table = None
    if predictions is not None:
        if not chosen.carries_estimate:
            carrying = ", ".join(f.name for f in FORMATS.values() if f.carries_estimate)
            raise UsageError(f"the {fmt} format has no place for a duration estimate; --predictions goes with: "
                             f"{carrying}")
        from ddlx.predict.export import read_predictions

        table = read_predictions(Path(predictions))
    data_home = home_with_jobs_or_sample(Path(home), name, use_sample, progress=progress)
    loss = LossReport()
    sidecar = sidecar_path(out)
    with open_trace(data_home, name) as ctx, output_files(out, doing, last=[sidecar.name]) as staging:
        request = ExportRequest(ctx, table, Path(predictions) if predictions else None, options)
        written = chosen.write(request, staging / out.name, loss)
        document = _sidecar(ctx, chosen, staging / out.name, written, loss)
        write_text_atomic(staging / sidecar.name, json.dumps(document, indent=2, default=str) + "\n")
        extra = [out.parent / path.name for path in written.extra_files]
        synthetic = ctx.synthetic
    return ExportResult(out, sidecar, fmt, written.rows, loss, synthetic, extra, chosen.rows_are)


def _sidecar(ctx: Any, fmt: ExportFormat, out: Path, written: Written, loss: LossReport) -> dict[str, Any]:
    from ddlx import __version__

    info = ctx.info
    resources = [{"path": path.name, "sha256": sha256_file(path), "bytes": path.stat().st_size}
                 for path in (out, *written.extra_files)]
    resources[0].update({"format": fmt.name, "title": fmt.title, "consumer": fmt.consumer,
                         **({"target": written.target} if written.target else {}),
                         "reference": fmt.reference, "rows": written.rows})
    inputs = [{"table": table, **entry} for table, files in ctx.provenance.get("source_files", {}).items()
              for entry in files]
    return {
        "profile": "data-package", "name": f"{ctx.trace}-{fmt.name}",
        **({"label": "SYNTHETIC"} if ctx.synthetic else {}),
        "created_by": f"ddlx {__version__}", "resources": resources,
        "sources": [{"dataset": ctx.trace, "synthetic": ctx.synthetic, "title": info.title if info else ctx.trace,
                     "path": ctx.provenance.get("catalog"), "store_version": ctx.provenance.get("store_version"),
                     "input_files": inputs}],
        "licenses": [{"name": info.licence}] if info else [],
        "citation": info.paper if info else None,
        "loss_report": loss.to_dict(), "codes": written.codes,
    }


__all__ = ["FORMATS", "ExportError", "ExportFormat", "ExportRequest", "ExportResult", "LossReport", "Written",
           "export_dataset", "get_format", "parse_options", "sidecar_path"]
