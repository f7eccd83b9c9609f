"""`ddlx report figures`: every chart of a written report as a file (SVG, PDF or PNG) for a paper.

The charts are read back from the report's `report.json` (the same data the HTML page draws) and
drawn by plotly's static renderer, Kaleido, which uses a Chrome or Chromium installed on the
machine. The renderer is the optional extra `figures` (`pip install "ddlx[figures]"`); without
it the command says how to install it. Files are named by chart id (`chart-queueing-....svg`) and
each is written atomically, so a failed run leaves no half-written figure.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import fields
from pathlib import Path
from typing import Any

from ddlx.atomic import atomic_file
from ddlx.errors import DdlxError, InputError, storage_errors
from ddlx.reports.charts import BASE_LAYOUT, figure
from ddlx.reports.model import Chart, Series, Source

#: The file formats `write_figures` writes.
FIGURE_FORMATS: tuple[str, ...] = ("svg", "pdf", "png")

#: Size of a written figure's plot area with its axes, pixels (PDF and SVG keep it as their page size).
FIGURE_SIZE = (720, 420)
#: Characters of a title line on a figure (longer titles wrap).
TITLE_WIDTH = 72


class FiguresError(DdlxError):
    """Figures cannot be written: no static renderer, or no browser for it."""


def _fields_of(kind: type, data: dict[str, Any]) -> dict[str, Any]:
    """The entries of `data` that are fields of the dataclass `kind`."""
    names = {f.name for f in fields(kind)}
    return {k: v for k, v in data.items() if k in names}


def _chart(data: dict[str, Any]) -> Chart:
    """A `Chart` from its JSON form in `report.json`."""
    return Chart(**{**_fields_of(Chart, data),
                    "series": [Series(**_fields_of(Series, s)) for s in data.get("series", [])],
                    "sources": [Source(**_fields_of(Source, s)) for s in data.get("sources", [])]})


def report_charts(results: Path) -> list[Chart]:
    """The charts of the report written in the folder `results`, in page order; `InputError` when
    the folder holds no report."""
    path = Path(results) / "report.json"
    try:
        report = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(str(path), "not found; expected the results folder of ddlx analyze or ddlx report "
                                    "compare") from None
    except (OSError, ValueError) as exc:
        raise InputError(str(path), f"cannot be read as a report ({exc})") from None
    return [_chart(c) for section in report.get("sections", []) for c in section.get("charts", [])]


def _renderer() -> Any:
    try:
        import kaleido  # noqa: F401  (plotly finds it by itself; imported here to say what is missing)
    except ImportError:
        raise FiguresError('writing figure files needs the static renderer: pip install "ddlx[figures]" '
                           "(it draws with the Chrome or Chromium of this machine)") from None
    import plotly.graph_objects as go

    return go


def write_figures(results: Path, fmt: str = "svg", out: Path | None = None) -> list[Path]:
    """Write each chart of the report in `results` as `<chart id>.<fmt>` into `out` (default:
    `results/figures`); returns the files written."""
    if fmt not in FIGURE_FORMATS:
        raise DdlxError(f"figure format must be one of {', '.join(FIGURE_FORMATS)}, not {fmt!r}")
    charts = report_charts(results)
    go = _renderer()
    folder = Path(out) if out is not None else Path(results) / "figures"
    written = []
    with storage_errors(folder, "writing figures"):
        folder.mkdir(parents=True, exist_ok=True)
        for chart in charts:
            built = figure(chart)
            # The title above the legend, which sits just above the plot; a long one on two lines.
            lines = textwrap.wrap(chart.title, TITLE_WIDTH) or [""]
            top = 60 + 24 * len(lines)
            margin = {**BASE_LAYOUT["margin"], **built["layout"].get("margin", {}), "t": top}
            layout = {**BASE_LAYOUT, **built["layout"], "margin": margin, "width": FIGURE_SIZE[0],
                      "height": FIGURE_SIZE[1] + top - 24,
                      "title": {"text": "<br>".join(lines), "x": 0.01, "xanchor": "left", "y": 1,
                                "yanchor": "top", "yref": "container", "pad": {"t": 12 + 10 * (len(lines) - 1)}}}
            try:
                image = go.Figure(data=built["data"], layout=layout).to_image(format=fmt)
            except Exception as exc:  # the renderer's own errors: no browser, a browser that died
                raise FiguresError(f"the static renderer failed on {chart.id}: {str(exc).splitlines()[0]}; "
                                   "it needs Chrome or Chromium on this machine") from None
            target = folder / f"{chart.id}.{fmt}"
            with atomic_file(target, durable=False) as temporary:
                temporary.write_bytes(image)
            written.append(target)
    return written
