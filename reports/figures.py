"""`ddlx report figures`: every chart of a written report as a file (SVG, PDF or PNG) for a paper.

Reading. The charts are read back from the report's `report.json` (the same data the HTML page
draws). A file that is not such a report (not JSON, not a ddlx report, no `sections` with `charts`,
a chart or series field missing or of the wrong type, a chart id that is not a file name) is refused
with an `InputError` naming the file and the field, before anything is drawn or written.

Drawing. The renderer is Kaleido (the optional extra `figures`: `pip install "ddlx[figures]"`),
which draws with plotly.js in a headless Chrome or Chromium of the machine: the one named by
`$BROWSER_PATH` (Kaleido's own variable), else the one Kaleido finds (its own download, or
chrome/chromium on PATH). All the charts of a run are drawn in one browser session (plotly's
`to_image` would start a browser per chart), without MathJax (the charts hold no LaTeX, and
Kaleido would fetch MathJax from a CDN) and with the plotly.js of the installed plotly package.
The start has a deadline of `START_TIMEOUT_S`, each figure of `FIGURE_TIMEOUT_S`.

Kaleido's start can fail now and then: it sends the browser's first tab to its drawing page while
the browser is still loading its own new-tab page there, and waits for the first page-load event,
which can be the new-tab page's. It then calls its drawing script before the drawing page has run
it (`ReferenceError: kaleido_scopes is not defined`). The shorter the drawing page takes to load,
the rarer this is: without MathJax it loads no script from the network. A session that fails is
started again once, keeping the figures already drawn; a second failure is a `FiguresError` naming
the renderer and its version, the browser it started (and how to choose another), the chart and
Kaleido's own message.

Writing. Every figure is drawn in memory first; then the figures folder (`RESULTS/figures`, or
`--out`) is built beside its final place and swapped in whole (`ddlx.outputs.write_output_folder`),
so it is whole or absent. It holds one file per chart, named by chart id (`chart-queueing-....svg`),
and `figures.json` (the figures, their format, the report they were drawn from, the renderer): the
marker that lets a later run replace the folder whole. A folder that is not empty and holds no
`figures.json` is refused, never replaced; the check runs before the browser starts.

Charts of SYNTHETIC data carry the word SYNTHETIC across their plot (`ddlx.reports.charts.synthetic_mark`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import textwrap
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ddlx.errors import DdlxError, InputError, UsageError, first_line, storage_errors
from ddlx.jsontext import load_json
from ddlx.outputs import check_output_folder, write_output_folder
from ddlx.progress import Progress, step
from ddlx.reports.charts import BASE_LAYOUT, figure, synthetic_traces, text
from ddlx.reports.model import REPORT_FORMAT, Chart, Series

#: The file formats `write_figures` writes.
FIGURE_FORMATS: tuple[str, ...] = ("svg", "pdf", "png")

#: Size of a written figure's plot area with its axes, pixels (PDF and SVG keep it as their page size).
FIGURE_SIZE = (720, 420)
#: Characters of a title line on a figure (longer titles wrap).
TITLE_WIDTH = 72

#: The file of a figures folder that lists its figures: what marks a folder as one ddlx wrote.
MANIFEST_FILE = "figures.json"
#: Version of the layout of `figures.json`.
MANIFEST_FORMAT = "ddlx-figures/1"
#: How errors about the output folder name it, and what was being done.
FIGURES_FOLDER = "figures folder"
WRITING_FIGURES = "writing figures"

#: Seconds the browser may take to start and load Kaleido's drawing page.
START_TIMEOUT_S = 60.0
#: Seconds one figure may take to be drawn (and the drawing page to be loaded again after it).
FIGURE_TIMEOUT_S = 60.0
#: Browser sessions started again after one fails, in one run.
RESTARTS = 1

#: The environment variable naming the browser Kaleido starts (read by Kaleido's own browser search too).
BROWSER_VARIABLE = "BROWSER_PATH"

#: The kinds of chart `ddlx.reports.charts.figure` draws.
CHART_KINDS = ("cdf", "line", "time", "bar", "stack", "dots")
#: A chart id, which names its figure file: lower-case letters and digits in dash-separated words.
CHART_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")

#: Loggers of the renderer, quietened while it runs: a failure is reported as one error, by ddlx.
_RENDERER_LOGGERS = ("kaleido", "choreographer", "browser_proc", "logistro")

_NO_RENDERER = ('writing figure files needs the static renderer: pip install "ddlx[figures]" '
                "(it draws with the Chrome or Chromium of this machine)")


class FiguresError(DdlxError):
    """Figures cannot be drawn: no static renderer, no browser for it, or the renderer failed."""


# --- reading report.json ------------------------------------------------------------------------

_SCALAR = (str, int, float, bool, type(None))


class _Reader:
    """Checks the parts of one `report.json` document, raising `InputError` naming the file and field."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, where: str | None, problem: str) -> InputError:
        return InputError(str(self.path), problem, field=where)

    def get(self, data: dict[str, Any], key: str, where: str, kinds: tuple[type, ...], expected: str,
            default: Any = ...) -> Any:
        """`data[key]` when it is of one of `kinds` (a bool is no number); `default` when absent and
        one is given; else an `InputError` on the field `where.key` saying what was expected."""
        name = f"{where}.{key}" if where else key
        if key not in data:
            if default is not ...:
                return default
            raise self.fail(name, f"missing; expected {expected}")
        value = data[key]
        numeric = any(k in (int, float) for k in kinds) and bool not in kinds
        if not isinstance(value, kinds) or (numeric and isinstance(value, bool)):
            raise self.fail(name, f"expected {expected}, not {_json_kind(value)}")
        return value

    def values(self, data: dict[str, Any], key: str, where: str, default: Any = ...) -> list[Any] | None:
        """A list of plain values (text, numbers, true/false, null) at `data[key]`."""
        values = self.get(data, key, where, (list, type(None)) if default is None else (list,),
                          "a list of values", default)
        if values is not None:
            for index, value in enumerate(values):
                if not isinstance(value, _SCALAR):
                    raise self.fail(f"{where}.{key}[{index}]", f"expected a value (text, number or null), "
                                                               f"not {_json_kind(value)}")
        return values


def _json_kind(value: Any) -> str:
    """The JSON name of a value's type, as an error message says what was found."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__


def _series(reader: _Reader, data: Any, where: str) -> Series:
    if not isinstance(data, dict):
        raise reader.fail(where, f"expected a series (an object), not {_json_kind(data)}")
    string, count = (str,), (int,)
    series = Series(name=reader.get(data, "name", where, string, "the series' name (text)"),
                    trace=reader.get(data, "trace", where, string, "the trace's name (text)"),
                    x=reader.values(data, "x", where), y=reader.values(data, "y", where),
                    rows=reader.get(data, "rows", where, count, "a count of rows", 0),
                    measure=reader.get(data, "measure", where, string, "a column name (text)", ""),
                    colour=reader.get(data, "colour", where, (int, type(None)), "a colour number or null", None),
                    dash=reader.get(data, "dash", where, (int, type(None)), "a line style number or null", None),
                    n=reader.values(data, "n", where, None),
                    legend_group=reader.get(data, "legend_group", where, (str, type(None)), "text or null", None),
                    band_low=reader.values(data, "band_low", where, None),
                    band_high=reader.values(data, "band_high", where, None))
    for key in ("y", "band_low", "band_high", "n"):
        values = getattr(series, key)
        if values is not None and len(values) != len(series.x):
            raise reader.fail(f"{where}.{key}", f"{len(values)} values for the {len(series.x)} of x; expected "
                                                "one per x value")
    return series


def _chart(reader: _Reader, data: Any, where: str) -> Chart:
    """A `Chart` from its JSON form in `report.json`: the fields drawn are checked; the others
    (sources, query, definitions) are not needed to draw it."""
    if not isinstance(data, dict):
        raise reader.fail(where, f"expected a chart (an object), not {_json_kind(data)}")
    string, flag = (str,), (bool,)
    chart_id = reader.get(data, "id", where, string, "the chart's id (text)")
    if not CHART_ID.fullmatch(chart_id):
        raise reader.fail(f"{where}.id", f"{chart_id[:60]!r} is not a chart id; expected lower-case letters and "
                                         "digits joined by dashes (it names the figure's file)")
    kind = reader.get(data, "kind", where, string, f"one of {', '.join(CHART_KINDS)}")
    if kind not in CHART_KINDS:
        raise reader.fail(f"{where}.kind", f"expected one of {', '.join(CHART_KINDS)}, not {kind[:40]!r}")
    series = reader.get(data, "series", where, (list,), "a list of series")
    flags = {key: reader.get(data, key, where, flag, "true or false", False)
             for key in ("x_log", "y_log", "x_percent", "y_percent", "x_seconds", "y_seconds")}
    return Chart(
        id=chart_id, module=reader.get(data, "module", where, string, "a module name (text)", ""), kind=kind,
        title=reader.get(data, "title", where, string, "the chart's title (text)"),
        x_title=reader.get(data, "x_title", where, string, "the x axis title (text)"),
        y_title=reader.get(data, "y_title", where, string, "the y axis title (text)"),
        definitions=[], series=[_series(reader, s, f"{where}.series[{i}]") for i, s in enumerate(series)],
        sources=[], query="", derivation="",
        x_type=reader.get(data, "x_type", where, (str, type(None)), "an axis type (text) or null", None),
        x_categories=reader.values(data, "x_categories", where, None),
        x_labels=_labels(reader, data, where),
        min_n=reader.get(data, "min_n", where, (int, type(None)), "a count of jobs or null", None), **flags)


def _labels(reader: _Reader, data: dict[str, Any], where: str) -> dict[str, str] | None:
    """The chart's `x_labels` (category value -> shown name), checked."""
    labels = data.get("x_labels")
    if labels is None:
        return None
    if not isinstance(labels, dict) or not all(isinstance(v, (str, int, float)) for v in labels.values()):
        raise reader.fail(f"{where}.x_labels", f"expected an object of category names, not {_json_kind(labels)}")
    return {str(k): str(v) for k, v in labels.items()}


def _synthetic_names(reader: _Reader, report: dict[str, Any]) -> set[str]:
    """The names of the report's SYNTHETIC traces; the report's own `synthetic` flag must agree."""
    traces = reader.get(report, "traces", "", (list,), "the list of the report's traces")
    names: dict[str, bool] = {}
    for index, trace in enumerate(traces):
        where = f"traces[{index}]"
        if not isinstance(trace, dict):
            raise reader.fail(where, f"expected a trace (an object), not {_json_kind(trace)}")
        names[reader.get(trace, "name", where, (str,), "the trace's name (text)")] = reader.get(
            trace, "synthetic", where, (bool,), "true or false (whether its data is SYNTHETIC)")
    synthetic = reader.get(report, "synthetic", "", (bool,), "true or false (whether the report has SYNTHETIC data)")
    if synthetic != any(names.values()):
        raise reader.fail("synthetic", f"{str(synthetic).lower()}, but {'no' if synthetic else 'a'} trace under "
                                       "'traces' is SYNTHETIC; expected the two to agree")
    return {name for name, is_synthetic in names.items() if is_synthetic}


def read_report(results: Path) -> tuple[Path, list[Chart]]:
    """The `report.json` of the results folder `results` and its charts, in page order, each with
    its `synthetic_traces`; an `InputError` naming the file (and field) when it is not a report."""
    results = Path(results)
    path = results / "report.json"
    expected = "expected the results folder of ddlx analyze or ddlx report compare"
    if not results.is_dir():
        raise InputError(str(results), f"{'not a folder' if results.exists() else 'not found'}; {expected}")
    try:
        with storage_errors(path, "reading the report"):
            raw = path.read_bytes()
    except DdlxError:
        if not path.exists() and not path.is_symlink():
            raise InputError(str(path), f"not found; {expected}") from None
        raise
    reader = _Reader(path)
    try:
        report = load_json(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(str(path), f"not UTF-8 text (byte {exc.start}); expected the report.json ddlx "
                                    "writes") from None
    except json.JSONDecodeError as exc:
        raise InputError(str(path), f"not JSON ({exc.msg}, column {exc.colno}); expected the report.json ddlx "
                                    "writes", line=exc.lineno) from None
    if not isinstance(report, dict):
        raise InputError(str(path), f"expected a JSON object (the report ddlx writes), not {_json_kind(report)}")
    form = reader.get(report, "format", "", (str,), f"'{REPORT_FORMAT}' (a report written by ddlx)")
    if form != REPORT_FORMAT:
        raise reader.fail("format", f"expected '{REPORT_FORMAT}' (a report written by ddlx), not {form[:40]!r}")
    synthetic = _synthetic_names(reader, report)
    known = set(_trace_names(report))
    charts: list[Chart] = []
    for s, section in enumerate(reader.get(report, "sections", "", (list,), "the list of the report's sections")):
        if not isinstance(section, dict):
            raise reader.fail(f"sections[{s}]", f"expected a section (an object), not {_json_kind(section)}")
        for c, data in enumerate(reader.get(section, "charts", f"sections[{s}]", (list,), "the section's charts")):
            chart = _chart(reader, data, f"sections[{s}].charts[{c}]")
            for i, series in enumerate(chart.series):
                if series.trace not in known:
                    raise reader.fail(f"sections[{s}].charts[{c}].series[{i}].trace",
                                      f"{series.trace[:40]!r} is not one of the report's traces "
                                      f"({', '.join(sorted(known))}); expected one of them")
            if any(chart.id == other.id for other in charts):
                raise reader.fail(f"sections[{s}].charts[{c}].id", f"{chart.id!r} is the id of an earlier chart; "
                                                                   "expected each chart id once")
            chart.synthetic_traces = synthetic_traces(chart, synthetic)
            charts.append(chart)
    return path, charts


def _trace_names(report: dict[str, Any]) -> list[str]:
    return [t["name"] for t in report["traces"]]


def report_charts(results: Path) -> list[Chart]:
    """The charts of the report written in the folder `results`, in page order (`read_report`)."""
    return read_report(results)[1]


# --- the figure of a chart ----------------------------------------------------------------------

def file_figure(chart: Chart) -> dict[str, Any]:
    """The figure of `chart` as a file draws it: the report's figure (`charts.figure`, its SYNTHETIC
    mark included) with the shared `BASE_LAYOUT`, at `FIGURE_SIZE`, its title above the legend (a
    long one wrapped; HTML-escaped like every string handed to plotly)."""
    built = figure(chart)
    lines = textwrap.wrap(chart.title, TITLE_WIDTH) or [""]
    top = 60 + 24 * len(lines)
    margin = {**BASE_LAYOUT["margin"], **built["layout"].get("margin", {}), "t": top}
    layout = {**BASE_LAYOUT, **built["layout"], "margin": margin, "width": FIGURE_SIZE[0],
              "height": FIGURE_SIZE[1] + top - 24,
              "title": {"text": "<br>".join(text(line) for line in lines), "x": 0.01, "xanchor": "left", "y": 1,
                        "yanchor": "top", "yref": "container", "pad": {"t": 12 + 10 * (len(lines) - 1)}}}
    return {"data": built["data"], "layout": layout}


# --- the renderer -------------------------------------------------------------------------------

def _kaleido() -> Any:
    try:
        import kaleido
    except ImportError:
        raise FiguresError(_NO_RENDERER) from None
    return kaleido


def renderer_name() -> str:
    """The renderer and its version, e.g. `kaleido 1.5.1`."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"kaleido {version('kaleido')}"
    except PackageNotFoundError:
        return "kaleido"


def browser_path() -> str:
    """The browser Kaleido is to start: `$BROWSER_PATH` when set, else the one Kaleido's own search
    finds (its downloaded Chrome, else chrome or chromium on PATH or at their usual places).
    A `FiguresError` saying how to install or name one when there is none."""
    chosen = os.environ.get(BROWSER_VARIABLE)
    if chosen:
        resolved = shutil.which(chosen) or chosen
        if not Path(resolved).is_file():
            raise FiguresError(f"{BROWSER_VARIABLE}={chosen}: no such browser; name a Chrome or Chromium "
                               f"executable (e.g. {BROWSER_VARIABLE}=/usr/bin/chromium) or unset it")
        return resolved
    _kaleido()
    from choreographer.browsers.chromium import Chromium

    found = Chromium.find_browser(skip_local=False)
    if not found:
        raise FiguresError("no Chrome or Chromium found for the static renderer (kaleido); install one "
                           "(apt-get install chromium, or kaleido_get_chrome) or name it with "
                           f"{BROWSER_VARIABLE}=/path/to/chromium")
    return str(found)


def _kaleido_message(exc: BaseException) -> str:
    """Kaleido's message for a failure: a JavaScript error's description when it holds one (it
    reports them as a dict), else the first line of its message, at most 300 characters."""
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return "no answer within the deadline"
    message = str(exc)
    described = re.search(r"'description': '((?:[^'\\]|\\.)*)'", message)
    if described:
        message = described.group(1).split("\\n")[0]
    shown = first_line(exc) if not described else message
    return shown if len(shown) <= 300 else shown[:297] + "..."


class _SessionFailed(Exception):
    """A browser session stopped: while starting (`chart` None) or while drawing `chart`."""

    def __init__(self, chart: str | None, cause: BaseException):
        super().__init__(chart)
        self.chart, self.cause = chart, cause


async def _session(kaleido: Any, browser: str, jobs: list[tuple[str, Any]], fmt: str,
                   images: dict[str, bytes], progress: Progress | None = None) -> None:
    """Start one browser and draw each (chart id, figure) of `jobs` not yet in `images` into it."""
    renderer = kaleido.Kaleido(n=1, timeout=None, mathjax=False, path=browser)
    drawing: str | None = None
    try:
        await asyncio.wait_for(renderer.open(), START_TIMEOUT_S)
        for chart_id, fig in jobs:
            if chart_id in images:
                continue
            drawing = chart_id
            opts = {"format": fmt, "width": fig.layout.width, "height": fig.layout.height, "scale": 1}
            images[chart_id] = await asyncio.wait_for(renderer.calc_fig(fig, opts=opts), FIGURE_TIMEOUT_S)
            step(progress, "figures", len(images), len(jobs), "figures")
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is not None and task.cancelling():  # stopped from outside (Ctrl-C): no second try
            raise
        raise _SessionFailed(drawing, exc) from exc  # the renderer gave up waiting (its browser died)
    except Exception as exc:
        raise _SessionFailed(drawing, exc) from exc
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(renderer.close(), START_TIMEOUT_S)


@contextlib.contextmanager
def _quiet_renderer() -> Iterator[None]:
    """Hold the renderer's loggers to critical messages for the block (their levels restored after)."""
    loggers = [logging.getLogger(name) for name in _RENDERER_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _run(coroutine: Any) -> Any:
    """Run `coroutine` to its end: in this thread, or in a thread of its own when an event loop
    already runs here (a notebook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ddlx-figures") as pool:
        return pool.submit(asyncio.run, coroutine).result()


def draw_figures(charts: list[Chart], fmt: str, progress: Progress | None = None) -> dict[str, bytes]:
    """Each chart's figure file content in `fmt`, by chart id, drawn in one browser session (started
    again once if it fails; see the module's docstring). `FiguresError` when it cannot be drawn;
    `progress` gets a step per figure drawn (`ddlx.progress.step`)."""
    if not charts:
        return {}
    kaleido = _kaleido()
    import plotly.graph_objects as go

    browser = browser_path()
    jobs = [(chart.id, go.Figure(**file_figure(chart))) for chart in charts]
    images: dict[str, bytes] = {}
    failures: list[_SessionFailed] = []
    with _quiet_renderer():
        while len(failures) <= RESTARTS:
            try:
                _run(_session(kaleido, browser, jobs, fmt, images, progress))
                return images
            except _SessionFailed as failed:
                failures.append(failed)
    last = failures[-1]
    where = f"drawing {last.chart}" if last.chart else "starting"
    raise FiguresError(f"the static renderer ({renderer_name()}) failed {where}, {len(failures)} times, with the "
                       f"browser {browser} (choose another with {BROWSER_VARIABLE}=/path/to/chromium): "
                       f"{_kaleido_message(last.cause)}")


# --- writing the figures folder -----------------------------------------------------------------

def write_figures(results: Path, fmt: str = "svg", out: Path | None = None,
                  progress: Progress | None = None) -> list[Path]:
    """Write each chart of the report in `results` as `<chart id>.<fmt>` into the figures folder
    `out` (default: `results/figures`), with `figures.json` listing them; returns the figure files.

    The report is read and the folder checked (`ddlx.outputs.check_output_folder`: missing, empty,
    or a figures folder, which holds `figures.json`) before the browser starts; every figure is
    drawn before anything is written; the folder is then built beside its place and swapped in
    whole, so a failure at any point leaves the previous folder, or none."""
    if fmt not in FIGURE_FORMATS:
        raise UsageError(f"figure format must be one of {', '.join(FIGURE_FORMATS)}, not {fmt!r}")
    results = Path(results)
    path, charts = read_report(results)
    folder = Path(out) if out is not None else results / "figures"
    check_output_folder(folder, (MANIFEST_FILE,), FIGURES_FOLDER, WRITING_FIGURES)
    images = draw_figures(charts, fmt, progress)
    names = [f"{chart.id}.{fmt}" for chart in charts]

    def build(tmp: Path) -> None:
        for chart, name in zip(charts, names):
            (tmp / name).write_bytes(images[chart.id])
        listing = {"format": MANIFEST_FORMAT, "results": str(results), "report": str(path),
                   "figure_format": fmt, "figures": names, "renderer": renderer_name() if charts else None,
                   "synthetic": any(chart.synthetic_traces for chart in charts)}
        (tmp / MANIFEST_FILE).write_text(json.dumps(listing, indent=2) + "\n", encoding="utf-8")

    write_output_folder(folder, (MANIFEST_FILE,), build, FIGURES_FOLDER, WRITING_FIGURES)
    return [folder / name for name in names]
