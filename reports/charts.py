"""Charts of a report: thinning long series for drawing, and a report chart as a plotly figure.

A report holds each chart as data (`ddlx.reports.model.Chart`); this module turns one into a
plotly figure (a JSON-ready dict) and serialises it so it can sit inside an HTML `<script>` block.
Every string that reaches plotly is HTML-escaped first: plotly reads a few tags (`<b>`, `<br>`,
`<a>`) in its text, and a user or VC name must be shown as written, never as markup.

A chart drawn from SYNTHETIC data carries the word SYNTHETIC across its plot (`synthetic_mark`),
in the figure itself: on the page, in the SVG its camera button saves, and in every figure file.

Downsampling keeps the drawn shape of a series while bounding its points: a CDF keeps evenly
spaced probabilities (at most `MAX_CDF_POINTS`), a time series keeps the smallest and largest
value of each of `MAX_LINE_POINTS / 2` buckets, so peaks survive. Tables are never thinned.
"""

from __future__ import annotations

import html
import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Collection, Sequence

import numpy as np

if TYPE_CHECKING:
    from ddlx.reports.model import Chart, Series

#: Points kept per series of a cumulative distribution.
MAX_CDF_POINTS = 1000
#: Points kept per series of a line or time series (min and max of MAX_LINE_POINTS / 2 buckets).
MAX_LINE_POINTS = 2000
#: Points kept over all the line series of one chart (shared between them, each keeping at least
#: MIN_LINE_POINTS): every drawn point costs page-load time.
MAX_CHART_POINTS = 4000
MIN_LINE_POINTS = 300

#: Colours of the series, in order (colour-blind-safe palette of Okabe and Ito, then greys).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
           "#7f7f7f", "#b15928", "#6a3d9a", "#b2df8a")

#: Layout shared by every figure (sent once per page and merged in the browser).
BASE_LAYOUT: dict[str, Any] = {
    "font": {"family": "system-ui, -apple-system, 'Segoe UI', sans-serif", "size": 12, "color": "#222"},
    "paper_bgcolor": "#ffffff",
    "plot_bgcolor": "#ffffff",
    "colorway": list(PALETTE),
    "margin": {"l": 80, "r": 24, "t": 24, "b": 64},
    "hovermode": "closest",
    "legend": {"orientation": "h", "x": 0, "y": 1.02, "xanchor": "left", "yanchor": "bottom"},
    # Fixed margins and tick labels allowed to overflow: plotly's automatic margins and overflow
    # checks measure every label again and again, which was most of the time spent drawing.
    "xaxis": {"gridcolor": "#e6e6e6", "zeroline": False, "automargin": False, "ticklabeloverflow": "allow"},
    "yaxis": {"gridcolor": "#e6e6e6", "zeroline": False, "automargin": False, "ticklabeloverflow": "allow"},
}

#: Options of `Plotly.newPlot` for every chart: no link to plotly's cloud, no logo; the camera
#: button downloads the chart as SVG (vector, for a paper).
PLOT_CONFIG: dict[str, Any] = {"displaylogo": False, "responsive": True, "showLink": False,
                               "modeBarButtonsToRemove": ["sendDataToCloud", "select2d", "lasso2d"],
                               "toImageButtonOptions": {"format": "svg", "scale": 1}}

#: Ticks of a log axis of seconds: durations a reader knows (1 s, 1 min, 1 h, 1 day, ...).
DURATION_TICKS: tuple[tuple[float, str], ...] = (
    (1, "1 s"), (10, "10 s"), (60, "1 min"), (600, "10 min"), (3600, "1 h"), (6 * 3600, "6 h"),
    (86400, "1 day"), (7 * 86400, "1 week"), (30 * 86400, "30 days"), (365 * 86400, "1 year"))

#: Width of a chart's plotting area and of one character of a tick label, in pixels (estimates for
#: deciding whether category labels fit side by side).
PLOT_WIDTH_PX = 620
LABEL_CHAR_PX = 6.5

#: Line styles of the series of a line chart, with the colours: series stay apart in grey print
#: and for readers who do not tell the colours apart.
LINE_STYLES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
#: Marker symbols, in the order of the line styles (a series' `dash` number picks both).
MARKERS = ("circle", "square", "diamond", "triangle-up", "cross", "x")
#: Fill patterns of bars whose colour another bar series of the chart shares (by `dash` number; 0: none).
PATTERNS = ("", "/", "\\", "x", ".", "+")
#: Opacity of a point whose statistic rests on fewer jobs than the chart's `min_n`.
FADED_OPACITY = 0.3
#: Where a zero is drawn on a log axis of seconds (a log axis has no 0): its tick reads "0 s".
ZERO_ON_LOG_S = 0.5

#: The mark drawn across the plot of a chart of SYNTHETIC data (generated, not real cluster data):
#: large slanted text in the middle of the plot area, part of the figure itself, so the page's
#: charts, the camera button's SVG and the files of `ddlx report figures` all carry it.
SYNTHETIC_MARK = "SYNTHETIC"
SYNTHETIC_MARK_FONT = {"size": 56, "color": "rgba(213, 94, 0, 0.35)"}


def thin_cdf(x: Sequence[Any], p: Sequence[Any], max_points: int = MAX_CDF_POINTS) -> tuple[list[Any], list[Any]]:
    """At most `max_points` points of a CDF (`x` values at probabilities `p`), evenly spread over
    its rows and always keeping the first and last."""
    n = len(x)
    if n <= max_points:
        return list(x), list(p)
    keep = np.unique(np.linspace(0, n - 1, max_points).round().astype(np.int64))
    return [x[i] for i in keep], [p[i] for i in keep]


def drop_flat_runs(x: Sequence[Any], y: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """The series without the inside points of runs of equal `y` (first and last of each run
    kept): a straight line through the remaining points is the same line."""
    n = len(x)
    if n <= 2:
        return list(x), list(y)
    keep = [i for i in range(n) if i in (0, n - 1) or not (y[i] == y[i - 1] and y[i] == y[i + 1])]
    return [x[i] for i in keep], [y[i] for i in keep]


def min_max_decimate(x: Sequence[Any], y: Sequence[Any],
                     max_points: int = MAX_LINE_POINTS) -> tuple[list[Any], list[Any]]:
    """At most `max_points` points of a series ordered by `x`: in each of `max_points // 2`
    consecutive buckets of rows, the rows holding the smallest and the largest `y` (in x order).
    Missing values (None) stay as gaps: a bucket with one keeps one of them."""
    n = len(x)
    if n <= max_points:
        return list(x), list(y)
    values = np.array([np.nan if v is None else float(v) for v in y])
    buckets = max(1, max_points // 2)
    edges = np.linspace(0, n, buckets + 1).round().astype(np.int64)
    keep: list[int] = []
    for start, stop in zip(edges[:-1], edges[1:]):
        if stop <= start:
            continue
        chunk = values[start:stop]
        if np.all(np.isnan(chunk)):
            keep.append(int(start))
            continue
        low, high = int(np.nanargmin(chunk)) + start, int(np.nanargmax(chunk)) + start
        keep.extend(sorted({low, high}))
    return [x[i] for i in keep], [y[i] for i in keep]


def _band(series: "Series", colour: str, common: dict[str, Any]) -> list[dict[str, Any]]:
    """The two traces of a series' spread: its upper edge, then its lower edge filled up to it, in
    the series' colour made light, without legend entries of their own."""
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    shared = {"type": "scatter", "x": common["x"], "legendgroup": common["legendgroup"], "showlegend": False,
              "hoverinfo": "skip", "mode": "lines", "line": {"width": 0}, "connectgaps": False}
    return [{**shared, "y": _texts(series.band_high)},
            {**shared, "y": _texts(series.band_low), "fill": "tonexty",
             "fillcolor": f"rgba({red},{green},{blue},0.18)"}]


def text(value: Any) -> Any:
    """A value as plotly must receive it: strings HTML-escaped (shown as written, never read as
    plotly's pseudo-HTML), everything else unchanged."""
    return html.escape(value, quote=False) if isinstance(value, str) else value


def _texts(values: Sequence[Any]) -> list[Any]:
    return [text(v) for v in values]


def synthetic_traces(chart: "Chart", synthetic: Collection[str]) -> list[str]:
    """The traces drawn in `chart` (by its series, in drawing order) that are among the SYNTHETIC
    traces `synthetic`: the value of `Chart.synthetic_traces`."""
    return [t for t in dict.fromkeys(s.trace for s in chart.series) if t in synthetic]


def synthetic_mark(chart: "Chart") -> dict[str, Any] | None:
    """The annotation marking `chart` as drawn from SYNTHETIC data (None for real data): the word
    SYNTHETIC across the plot, followed by the traces' names when only some of the traces drawn
    are SYNTHETIC (a compare report)."""
    if not chart.synthetic_traces:
        return None
    drawn = set(s.trace for s in chart.series)
    words = SYNTHETIC_MARK
    if drawn - set(chart.synthetic_traces):
        words += "<br>" + text(", ".join(chart.synthetic_traces))
    return {"text": words, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5, "xanchor": "center",
            "yanchor": "middle", "showarrow": False, "textangle": -18, "font": dict(SYNTHETIC_MARK_FONT)}


def series_style(series: "Series", index: int) -> tuple[str, str, str, str]:
    """(colour, line style, marker symbol, bar pattern) of `series`, the `index`-th of its chart: its
    style number picks the line style and marker of a line, the fill pattern of a bar."""
    colour = series.colour if series.colour is not None else index
    dash = series.dash if series.dash is not None else colour
    return (PALETTE[colour % len(PALETTE)], LINE_STYLES[dash % len(LINE_STYLES)], MARKERS[dash % len(MARKERS)],
            PATTERNS[dash % len(PATTERNS)] if series.dash is not None else "")


def value_text(value: Any, percent: bool, seconds: bool) -> str:
    """A drawn value as its hover text says it: a share as percent, seconds with their unit."""
    if value is None:
        return "no value"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if percent:
        return f"{value * 100:.3g} %"
    shown = f"{value:,.0f}" if abs(value) >= 1000 or value == int(value) else f"{value:.3g}"
    return f"{shown} s" if seconds else shown


def _hover(chart: "Chart", series: "Series", xs: Sequence[Any], ys: Sequence[Any],
           ns: Sequence[Any] | None) -> list[str]:
    """One hover text per point: the series, x, y with its unit, and the n it rests on."""
    labels = chart.x_labels or {}
    cdf = chart.kind == "cdf"
    texts = []
    for i, (x, y) in enumerate(zip(xs, ys)):
        x_text = labels.get(str(x), x) if chart.x_categories else value_text(x, chart.x_percent, chart.x_seconds)
        y_text = value_text(y, chart.y_percent, chart.y_seconds)
        line = f"{series.name}<br>{x_text}: {y_text}" if not cdf else f"{series.name}<br>{y_text} at or below {x_text}"
        n = ns[i] if ns is not None and i < len(ns) else None
        if n is not None:
            line += f"<br>n = {n:,}"
            if chart.min_n is not None and n < chart.min_n:
                line += f" (fewer than {chart.min_n}: faded)"
        texts.append(html.escape(line, quote=False).replace("&lt;br&gt;", "<br>"))
    return texts


def _faded(chart: "Chart", ns: Sequence[Any] | None, count: int) -> list[bool]:
    """Per point: whether its statistic rests on fewer than `chart.min_n` jobs."""
    if chart.min_n is None or ns is None:
        return [False] * count
    return [n is not None and n < chart.min_n for n in ns]


def _zero_floor(chart: "Chart") -> bool:
    """Whether zeros of this chart's y values are drawn at `ZERO_ON_LOG_S` (a log axis of seconds)."""
    return chart.y_log and chart.y_seconds and any(y == 0 for s in chart.series for y in s.y)


def figure(chart: "Chart") -> dict[str, Any]:
    """The plotly figure of `chart` as a JSON-ready dict (`data` and `layout`; the shared
    `BASE_LAYOUT` is merged in by the page), written as plotly.js reads it: plain traces and
    layout, without building plotly's Python figure objects (which check each property and cost
    about 6 ms a chart). `tests/test_report_model.py` checks that plotly's validated figure is
    the same one.

    Every series has its own colour, line style and marker together (`series_style`); hover says
    the n each point rests on, bars carry it as a label; a statistic resting on fewer than
    `chart.min_n` jobs is drawn faded; a zero is drawn (at `ZERO_ON_LOG_S` on a log axis of seconds)
    and a missing bar is marked."""
    bar = chart.kind in ("bar", "stack")
    dots = chart.kind == "dots"
    floor = _zero_floor(chart)
    traces = []
    missing: tuple[list[Any], list[str]] = ([], [])
    for index, series in enumerate(chart.series):
        colour, style, symbol, pattern = series_style(series, index)
        ys = [ZERO_ON_LOG_S if floor and y == 0 else y for y in series.y]
        faded = _faded(chart, series.n, len(series.x))
        common = {"x": _texts(series.x), "y": _texts(ys), "name": text(series.name),
                  "legendgroup": text(series.legend_group or series.name)}
        # Per-point hover texts only where a point has an n (or a zero drawn at the floor) to say.
        hover = _hover(chart, series, series.x, series.y, series.n) if series.n is not None or floor else None
        if hover is not None:
            common.update(hovertext=hover, hoverinfo="text")
        if bar:
            marker: dict[str, Any] = {"color": colour, "opacity": [FADED_OPACITY if f else 1 for f in faded]}
            if pattern:
                marker["pattern"] = {"shape": pattern}
            labels = [("0, " if y == 0 else "") + (f"n={n:,}" if n is not None else "")
                      for y, n in zip(series.y, series.n or [None] * len(series.y))]
            trace = {"type": "bar", "marker": marker, **common}
            if any(labels):
                stacked = chart.kind == "stack"
                trace.update(text=labels, textposition="inside" if stacked else "outside", cliponaxis=False,
                             textfont={"size": 10}, textangle=0 if stacked else -90, insidetextanchor="middle")
            traces.append(trace)
            continue
        line = {"color": colour, "width": 1.8, "dash": style}
        if chart.kind == "cdf":
            line["shape"] = "hv"
        mode = "markers" if dots else ("lines+markers" if series.rows <= 30 and chart.kind != "time" else "lines")
        if series.band_low is not None and series.band_high is not None:
            traces += _band(series, colour, common)
        whole_faded = chart.kind == "cdf" and any(faded)
        kept = list(common["y"]) if dots or whole_faded else [None if f else y for y, f in zip(common["y"], faded)]
        trace = {"type": "scatter", "mode": mode, "line": line, "connectgaps": False,
                 "marker": {"size": 9 if dots else 5, "symbol": symbol, "color": colour,
                            **({"opacity": [FADED_OPACITY if f else 1 for f in faded]} if dots else {})},
                 **common, "y": kept}
        if whole_faded:
            trace["opacity"] = FADED_OPACITY + 0.2
        if dots:
            trace["offsetgroup"] = text(series.name)
        traces.append(trace)
        if any(faded) and not dots and not whole_faded:
            traces.append({"type": "scatter", "mode": "markers", "x": common["x"],
                           "y": [y if f else None for y, f in zip(common["y"], faded)],
                           "name": text(f"{series.name}, fewer than {chart.min_n} jobs"),
                           "legendgroup": common["legendgroup"], "showlegend": False,
                           **({"hovertext": hover, "hoverinfo": "text"} if hover is not None else {}),
                           "marker": {"size": 6, "symbol": symbol, "color": colour, "opacity": FADED_OPACITY}})
    if chart.kind in ("bar", "dots") and chart.x_categories:
        labels = chart.x_labels or {}
        for series in chart.series:
            values = {x: y for x, y in zip(series.x, series.y)}
            for x in chart.x_categories:
                if values.get(x) is None:
                    missing[0].append(text(x))
                    missing[1].append(html.escape(f"{series.name}: no value at {labels.get(str(x), x)}", quote=False))
    if missing[0] and (not chart.y_log or floor or chart.y_seconds):
        base = ZERO_ON_LOG_S if chart.y_log else 0
        traces.append({"type": "scatter", "mode": "markers", "x": missing[0], "y": [base] * len(missing[0]),
                       "name": "no value", "hovertext": missing[1], "hoverinfo": "text",
                       "marker": {"symbol": "x-thin-open", "size": 10, "color": "#7f7f7f",
                                  "line": {"width": 2, "color": "#7f7f7f"}}})
    x_axis: dict[str, Any] = {"title": {"text": text(chart.x_title)}}
    y_axis: dict[str, Any] = {"title": {"text": text(chart.y_title)}}
    if chart.x_log:
        x_axis["type"] = "log"
    elif chart.x_type:
        x_axis["type"] = chart.x_type
    margin_bottom = None
    if chart.x_categories:
        x_axis.update(type="category", categoryorder="array", categoryarray=_texts(chart.x_categories))
        shown = [str((chart.x_labels or {}).get(str(c), c)) for c in chart.x_categories]
        room = PLOT_WIDTH_PX / len(chart.x_categories) - 8
        # Labels of several parts ("cluster / source") go on lines of their own where one line would
        # not fit; turned upright only when side by side even those would run into each other.
        parts = [label.split(" / ") for label in shown]
        wrap = max(len(c) for c in shown) * LABEL_CHAR_PX > room and max(len(p) for p in parts) > 1
        longest = min(30, max(len(line) for p in parts for line in (p if wrap else [" / ".join(p)])))
        if chart.x_labels or wrap:
            ticktext = ["<br>".join(text(line) for line in p) if wrap else text(" / ".join(p)) for p in parts]
            x_axis.update(tickmode="array", tickvals=_texts(chart.x_categories), ticktext=ticktext)
        if longest * LABEL_CHAR_PX > room:
            x_axis["tickangle"] = -90
            margin_bottom = 56 + int(6.5 * longest)
        elif wrap:
            margin_bottom = 56 + 14 * max(len(p) for p in parts)
    if chart.y_log:
        y_axis["type"] = "log"
    for axis, log, seconds in ((x_axis, chart.x_log, chart.x_seconds), (y_axis, chart.y_log, chart.y_seconds)):
        if log and seconds:
            ticks = ([(ZERO_ON_LOG_S, "0 s")] if axis is y_axis and floor else []) + list(DURATION_TICKS)
            axis.update(tickvals=[v for v, _ in ticks], ticktext=[t for _, t in ticks])
    # Percent ticks with as many decimals as they need ("~"), so no two ticks read the same.
    if chart.y_percent:
        y_axis.update(tickformat=".3~%", hoverformat=".2%")
    if chart.x_percent:
        x_axis.update(tickformat=".3~%", hoverformat=".2%")
    # A CDF shows its legend even for one curve: the legend says how many values it rests on.
    layout: dict[str, Any] = {"xaxis": x_axis, "yaxis": y_axis,
                              "showlegend": len(chart.series) > 1 or chart.kind == "cdf",
                              "height": 380 if len(chart.series) <= 8 else 440}
    if margin_bottom:
        layout["margin"] = {**BASE_LAYOUT["margin"], "b": margin_bottom}
    if bar:
        layout["barmode"] = "stack" if chart.kind == "stack" else "group"
    if dots:
        layout.update(scattermode="group", scattergap=0.4)
    mark = synthetic_mark(chart)
    if mark is not None:
        layout["annotations"] = [mark]
    return {"data": traces, "layout": layout}  # the page supplies the shared template (BASE_LAYOUT)


def script_json(value: Any) -> str:
    """`value` as JSON that is safe inside an HTML `<script>` element: `<`, `>` and `&` (so no
    `</script>` or `<!--` can appear) and the line separators U+2028/U+2029 are written as
    `\\u` escapes, which JSON.parse reads back as the same characters. NaN and infinities are
    refused rather than written as invalid JSON."""
    encoded = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_json_default)
    return (encoded.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def figure_json(chart: "Chart") -> str:
    """The plotly figure of `chart`, serialised by `script_json`."""
    return script_json(figure(chart))


@lru_cache(maxsize=1)
def plotly_js() -> str:
    """The plotly.js bundle shipped with the plotly package (inlined once per report)."""
    from plotly.offline import get_plotlyjs

    bundle = get_plotlyjs()
    if "</script" in bundle.lower() or "<!--" in bundle:
        raise RuntimeError("plotly.js contains '</script' or '<!--' and cannot be inlined as is")
    return bundle


def plotly_version() -> str:
    import plotly

    return str(plotly.__version__)
