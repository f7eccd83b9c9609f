"""The charts of a report: how each result table is drawn, and the chart data drawn from it.

Charts are data (`ddlx.reports.model.Chart`): kind, title, axis titles with units, definition ids,
the series, the result table each was drawn from and a SQL query over the results folder that
returns the plotted rows. The analysis modules do not expose their own SQL, so a chart shows that
query, the table's row description and the definitions' text instead.

`CHART_SPECS` declares, per (module, result table), how the table is drawn (`ChartSpec`); the
charts of tables only one trace's own science writes are declared by that trace (`CHARTS` of its
`analyses`), and `chart_specs()` gives them all;
`build_chart` turns one spec and the traces' analysis results into a `Chart`, its long series
thinned for drawing (`ddlx.reports.charts`, which also turns a `Chart` into a plotly figure).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import polars as pl

from ddlx.analysis.model import AnalysisResult, ModuleResult, ResultTable, table_file
from ddlx.datasets.sqltext import sql_string
from ddlx.reports.charts import (
    MAX_CDF_POINTS,
    MAX_CHART_POINTS,
    MAX_LINE_POINTS,
    MIN_LINE_POINTS,
    drop_flat_runs,
    min_max_decimate,
    synthetic_traces,
    thin_cdf,
)
from ddlx.reports.model import Chart, Series, Source, display, plain, slug

if TYPE_CHECKING:
    from ddlx.reports.report import TraceInput

# --- charts declared per result table ---------------------------------------------------------

Where = tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class ChartSpec:
    """How to draw one result table.

    `measures` are (column, label) pairs: on the y axis, or on the x axis for a CDF (whose y is
    the table's `probability`). `x` names the x column(s) (joined as one label when several).
    `group` columns split the rows into series. `where` keeps rows (column = value; None keeps
    NULL). `compare_where`: the rows drawn in a compare report, one series set per trace (None:
    not drawn there). At most `max_series` groups are drawn, those with the largest `rank_by`
    sum (default: the largest mean of the first measure). A compare report keeps the rows of both
    `where` and `compare_where`.
    """

    module: str
    table: str
    kind: str
    title: str
    x_title: str
    y_title: str
    measures: tuple[tuple[str, str], ...]
    x: tuple[str, ...] = ()
    group: tuple[str, ...] = ()
    where: Where = ()
    compare_where: Where | None = None
    in_trace: bool = True
    x_log: bool = False
    y_log: bool = False
    x_percent: bool = False
    y_percent: bool = False
    x_scale: float = 1.0
    max_series: int = 6
    rank_by: str | None = None
    key: str = ""
    note: str = ""
    null_label: str = "(none)"
    #: Columns (low, high) of the spread of the first measure, drawn as a band around its line.
    band: tuple[str, str] | None = None
    #: The column counting what each row's value rests on (its n, in hover and bar labels); None: the
    #: first of `COUNT_COLUMNS` the table has; "": the rows have no count.
    count: str | None = None
    #: Each row is a statistic of its n jobs: drawn faded where n is below `MIN_JOBS`.
    fade: bool = False
    #: In a compare report, one chart per value of this column (a panel per GPU bucket, say), one
    #: series per trace; "" draws the spec once (with `compare_where`).
    compare_panels: str = ""

    @property
    def chart_key(self) -> str:
        return slug(self.module, self.table, self.key) if self.key else slug(self.module, self.table)


P = "probability"
BUCKET_X = "GPUs requested by the job (bucket)"

CHART_SPECS: tuple[ChartSpec, ...] = (
    # overview
    ChartSpec("overview", "state_mix", "bar", "Final state of jobs: share of jobs and of GPU-time",
              "final state", "share (%)", (("job_share", "jobs"), ("gpu_hours_share", "GPU-time")),
              x=("state",), y_percent=True, compare_where=()),
    ChartSpec("overview", "gpu_request_mix", "bar", "Jobs by GPUs requested", BUCKET_X,
              "share of jobs (%)", (("job_share", "jobs"),), x=("gpu_bucket",), y_percent=True,
              compare_where=()),
    ChartSpec("overview", "gpu_request_mix", "bar", "GPU-time by GPUs requested", BUCKET_X,
              "GPU-time requested (GPU-hours)", (("gpu_hours", "GPU-hours"),), x=("gpu_bucket",), key="gpu-hours"),
    # utilization
    ChartSpec("utilization", "allocation_by_cluster", "time",
              "Allocated GPUs over time against capacity, per cluster", "time bin start (UTC)", "GPUs",
              (("mean_gpus", "allocated (time-weighted mean)"), ("capacity_gpus", "capacity")),
              x=("bin_start",), group=("cluster",)),
    ChartSpec("utilization", "allocation_vs_capacity", "bar",
              "Allocated GPUs as a share of capacity over the whole trace",
              "cluster / capacity source", "share of capacity (%)",
              (("mean_share", "time-weighted mean"), ("peak_share", "peak")),
              x=("cluster", "capacity_source"), y_percent=True, compare_where=(), null_label="all clusters"),
    ChartSpec("utilization", "allocation_by_gpu_type", "time", "Allocated GPUs over time per GPU type",
              "time bin start (UTC)", "GPUs",
              (("mean_gpus", "allocated (time-weighted mean)"), ("capacity_gpus", "capacity")),
              x=("bin_start",), group=("cluster", "gpu_type"), max_series=6),
    ChartSpec("utilization", "allocation_by_vc", "time",
              "Allocated GPUs over time for the VCs with most GPUs allocated", "time bin start (UTC)",
              "GPUs (time-weighted mean)", (("mean_gpus", "allocated"),), x=("bin_start",),
              group=("cluster", "vc"), max_series=6),
    ChartSpec("utilization", "allocation_hour_of_week", "line",
              "Allocated GPUs by hour of the week (local time)", "hour of the week (0 = Monday 00:00)",
              "GPUs (time-weighted mean)", (("mean_gpus", "allocated"),), x=("hour_of_week",),
              group=("cluster",)),
    # queueing
    ChartSpec("queueing", "cdf_by_gpu_bucket", "cdf", "Queueing delay by GPUs requested (CDF)",
              "queueing delay (s, log scale)", "share of started jobs at or below x (%)",
              (("queue_s", "delay"),), group=("gpu_bucket",), x_log=True, y_percent=True, fade=True,
              compare_where=(), compare_panels="gpu_bucket"),
    ChartSpec("queueing", "by_gpu_bucket", "dots", "Queueing delay quantiles by GPUs requested", BUCKET_X,
              "queueing delay (s, log scale)", (("p50_s", "median"), ("p90_s", "90th percentile"),
                                                ("p99_s", "99th percentile")),
              x=("gpu_bucket",), y_log=True, count="jobs_with_value", fade=True, compare_where=()),
    ChartSpec("queueing", "waits_over_thresholds", "line",
              "Share of started jobs waiting longer than a threshold", "threshold (s, log scale)",
              "share of started jobs (%)", (("share_of_started", "waited longer"),), x=("threshold_s",),
              group=("gpu_bucket",), x_log=True, y_percent=True, compare_where=(("gpu_bucket", "all"),),
              count="jobs_with_value", fade=True),
    ChartSpec("queueing", "cdf_by_gpu_type", "cdf", "Queueing delay of GPU jobs by GPU type (CDF)",
              "queueing delay (s, log scale)", "share of started jobs at or below x (%)",
              (("queue_s", "delay"),), group=("gpu_type",), x_log=True, y_percent=True),
    ChartSpec("queueing", "cdf_by_vc", "cdf", "Queueing delay in the VCs with most jobs (CDF)",
              "queueing delay (s, log scale)", "share of started jobs at or below x (%)",
              (("queue_s", "delay"),), group=("cluster", "vc"), x_log=True, y_percent=True,
              rank_by="jobs_with_value"),
    ChartSpec("queueing", "by_submit_hour", "line", "Queueing delay by local hour of submission",
              "hour of day of submission (local time)", "queueing delay (s, log scale)",
              (("p50_s", "median"), ("p90_s", "90th percentile")), x=("submit_hour",), y_log=True,
              compare_where=(), count="jobs_with_value", fade=True),
    ChartSpec("queueing", "by_load_at_submit", "line", "Median queueing delay against the cluster's load at submission",
              "allocated GPUs at submission, share of the reference (bin start)",
              "median queueing delay (s, log scale)",
              (("p50_s", "median"),), x=("load_share_low",), group=("reference", "cluster"), y_log=True,
              x_percent=True, compare_where=(("cluster", "all clusters"),), count="jobs_with_value", fade=True),
    # failures
    ChartSpec("failures", "state_mix_by_gpu_bucket", "stack", "Final state by GPUs requested",
              BUCKET_X, "share of the bucket's jobs (%)", (("job_share", "jobs"),), x=("gpu_bucket",),
              group=("state",), y_percent=True, count="jobs"),
    ChartSpec("failures", "failure_rate_by_gpu_bucket", "bar", "Failed share of finished jobs by GPUs requested",
              BUCKET_X, "share of finished jobs (%)",
              (("failed_share", "failed"), ("failed_or_cancelled_share", "failed or cancelled")),
              x=("gpu_bucket",), y_percent=True, compare_where=(), count="finished_jobs", fade=True),
    ChartSpec("failures", "time_to_failure_cdf", "cdf", "Run time of failed jobs before they failed (CDF)",
              "run time before failing (s, log scale)", "share of failed jobs at or below x (%)",
              (("run_s", "failed jobs"),), group=("gpu_bucket",), x_log=True, y_percent=True,
              compare_where=(("gpu_bucket", "all"),)),
    ChartSpec("failures", "state_mix_by_user", "stack", "Final state of the jobs of the users with most GPU-time",
              "user (by GPU-time, largest first)", "share of the user's jobs (%)", (("job_share", "jobs"),),
              x=("user",), group=("state",), y_percent=True),
    ChartSpec("failures", "state_mix_by_vc", "stack", "Final state of the jobs of the VCs with most GPU-time",
              "cluster / VC (by GPU-time, largest first)", "share of the VC's jobs (%)", (("job_share", "jobs"),),
              x=("cluster", "vc"), group=("state",), y_percent=True),
    ChartSpec("failures", "attempts_per_job", "bar", "Scheduling attempts per job", "attempts",
              "share of jobs (%)", (("job_share", "jobs"),), x=("attempts",), y_percent=True, compare_where=()),
    # gpu_efficiency
    ChartSpec("gpu_efficiency", "idle_share_by_hour", "time",
              "Allocated GPU-hours that sat idle, per hour (GPU telemetry)", "hour (UTC)",
              "share of allocated GPU-hours (%)",
              (("idle_share", "idle share of allocated"),), x=("hour",), y_percent=True),
    ChartSpec("gpu_efficiency", "idle_share_by_hour", "time",
              "GPU-hours per hour: allocated, idle while allocated, unallocated", "hour (UTC)", "GPU-hours",
              (("allocated_gpu_hours", "allocated"), ("idle_gpu_hours", "allocated and idle"),
               ("unallocated_gpu_hours", "unallocated")), x=("hour",), key="gpu-hours"),
    # sharing
    ChartSpec("sharing", "fractional_by_gpu_type", "bar",
              "GPU jobs that share a GPU, by GPU type", "GPU type", "share (%)",
              (("sharing_job_share", "of GPU jobs"), ("sharing_gpu_hours_share", "of GPU-time")),
              x=("gpu_type",), y_percent=True, compare_where=(("gpu_type", "all"),)),
    ChartSpec("sharing", "fraction_distribution", "bar", "GPUs asked for by one instance",
              "GPUs per instance", "share of GPU instances (%)", (("instance_share", "instances"),),
              x=("gpus_per_instance",), y_percent=True, compare_where=()),
    ChartSpec("sharing", "fragmentation_series", "line", "Free and fragmented GPU capacity during the replay",
              "hours from the trace start", "GPUs",
              (("free_partial_gpus", "free part of shared GPUs"), ("fragmented_gpus", "no task class can use"),
               ("expected_fragmented_gpus", "FGD paper's measure (all pods; CPU-only ones count every free GPU)"),
               ("expected_fragmented_gpus_gpu_pods", "FGD paper's measure, GPU pods alone")),
              x=("t_s",), x_scale=3600.0),
    ChartSpec("sharing", "fill_up_curves", "line",
              "Unallocated GPUs as the cluster fills up, per placement policy (fill-up experiment, no departures)",
              "arrived workload (share of GPU capacity requested)", "unallocated GPUs (share of capacity)",
              (("unallocated_mean", "unallocated (mean over seeds)"),), x=("level",), group=("policy",),
              x_percent=True, y_percent=True, band=("unallocated_min", "unallocated_max"),
              note="Lines: the mean over seeds; shaded: from the lowest to the highest seed."),
    ChartSpec("sharing", "fragmentation_by_model", "bar", "Fragmented GPU capacity by GPU model (time-weighted mean)",
              "GPU model", "GPUs", (("mean_fragmented_gpus", "no task class can use"),
                                    ("mean_expected_fragmented_gpus", "FGD paper's measure (all pods)"),
                                    ("mean_expected_fragmented_gpus_gpu_pods", "FGD paper's measure, GPU pods alone")),
              x=("gpu_model",)),
    # durations
    ChartSpec("durations", "run_time_cdf_by_gpu_bucket", "cdf", "Run time of jobs that ended, by GPUs requested (CDF)",
              "run time (s, log scale)", "share of ended jobs at or below x (%)", (("run_s", "ended jobs"),),
              group=("gpu_bucket",), x_log=True, y_percent=True, fade=True, compare_where=(),
              compare_panels="gpu_bucket"),
    ChartSpec("durations", "run_time_cdf_by_gpu_bucket", "cdf",
              "Run time of all jobs: ended jobs only against Kaplan-Meier with running jobs censored",
              "run time (s, log scale)", "share of jobs at or below x (%)",
              (("run_s", "ended jobs only"), ("run_s_km", "Kaplan-Meier")), where=(("gpu_bucket", "all"),),
              x_log=True, y_percent=True, compare_where=(("gpu_bucket", "all"),), key="km"),
    ChartSpec("durations", "run_time_survival_by_gpu_bucket", "line",
              "Share of jobs running longer than a run time (Kaplan-Meier)", "run time (s, log scale)",
              "share of jobs running longer (%)", (("survival_km", "Kaplan-Meier"),), x=("run_s",),
              group=("gpu_bucket",), x_log=True, y_percent=True, compare_where=(("gpu_bucket", "all"),)),
    ChartSpec("durations", "run_time_cdf_by_state", "cdf", "Run time by final state (CDF; running: run so far)",
              "run time (s, log scale)", "share of jobs at or below x (%)", (("run_s", "jobs"),),
              group=("state", "censored"), x_log=True, y_percent=True),
    # users
    ChartSpec("users", "lorenz_curves", "line", "Lorenz curves of GPU-time over jobs and over users",
              "share of the population, least GPU-time first (%)", "share of its GPU-time (%)",
              (("gpu_hours_share", "GPU-time"),), x=("population_share",), group=("population",),
              x_percent=True, y_percent=True, compare_where=(("population", "users"),)),
    ChartSpec("users", "gpu_time_top_shares", "bar", "GPU-time used by the top 1 % and 10 %",
              "top percent of the population", "share of GPU-time (%)", (("top_gpu_hours_share", "GPU-time"),),
              x=("top_percent",), group=("population",), y_percent=True,
              compare_where=(("population", "users"),)),
    ChartSpec("users", "top_users", "bar", "GPU-time of the users with most GPU-time",
              "user (largest first)", "share of all GPU-time (%)", (("gpu_hours_share", "GPU-time"),),
              x=("user",), y_percent=True),
    # time patterns
    ChartSpec("time_patterns", "submissions_by_hour_of_week", "line", "Submissions by hour of the week (local time)",
              "hour of the week (0 = Monday 00:00)", "jobs submitted", (("jobs", "jobs"),), x=("hour_of_week",),
              group=("cluster",)),
    ChartSpec("time_patterns", "submissions_per_day", "time", "Submissions per day (local days)", "day",
              "jobs submitted", (("jobs", "jobs"),), x=("day",), group=("cluster",)),
    ChartSpec("time_patterns", "recurring_group_sizes", "bar", "Recurring-job groups by size",
              "jobs per group (largest of the range)", "share (%)",
              (("job_share", "of jobs"), ("gpu_hours_share", "of GPU-time")), x=("size_high",), y_percent=True,
              compare_where=()),
)


# --- result tables ----------------------------------------------------------------------------

def module_result(result: AnalysisResult, module: str) -> ModuleResult | None:
    """The result of `module` in `result`; None when the module was not run."""
    return next((m for m in result.modules if m.module == module), None)


def table_source(item: TraceInput, module: str, table: ResultTable) -> Source:
    """The `Source` naming `table` of `module` in one trace's results folder (for a chart or a table)."""
    sql = getattr(table, "sql", None)
    return Source(trace=item.result.trace, module=module, table=table.name,
                  file=item.folder + table_file(module, table.name), rows=table.frame.height, row=table.row,
                  definitions=list(table.definitions), module_sql=sql if isinstance(sql, str) else None)


def _filter(frame: pl.DataFrame, where: Where) -> pl.DataFrame:
    for column, value in where:
        if column not in frame.columns:
            return frame.clear()
        frame = frame.filter(pl.col(column).is_null() if value is None else pl.col(column) == value)
    return frame


def _group_value(column: str, value: Any, null_label: str) -> Any:
    """A group's value as named in a legend: NULL as `null_label`, a flag as its column's name."""
    if value is None:
        return null_label
    if isinstance(value, bool):
        return column if value else f"not {column}"
    return value


def _label(values: Sequence[Any], null_label: str = "(none)") -> str:
    return " / ".join(null_label if v is None else display(plain(v)) if not isinstance(v, str) else v for v in values)


def _axis_value(value: Any, scale: float) -> Any:
    value = plain(value)
    if scale != 1.0 and isinstance(value, (int, float)) and not isinstance(value, bool):
        return value / scale
    return value


# --- building charts --------------------------------------------------------------------------

def build_chart(spec: ChartSpec, inputs: Sequence[TraceInput], compare: bool,
                panel: int = 1) -> tuple[Chart | None, str | None]:
    """The chart of `spec` over the traces of `inputs` that have its table; (None, note) when no
    trace has values for it. A one-trace chart with more groups than `spec.max_series` is split
    into small multiples (`Chart.panels`, at most `MAX_PANELS`), the groups in order of rank;
    `panel` picks one (1 = the largest groups)."""
    where = tuple(dict.fromkeys(spec.where + (spec.compare_where or ()))) if compare else spec.where
    cdf = spec.kind == "cdf"
    bar = spec.kind in ("bar", "stack")
    categorical = bar or spec.kind == "dots"
    series: list[Series] = []
    x_labels: dict[str, str] = {}
    sources: list[Source] = []
    notes: list[str] = []
    colour_keys: dict[tuple[Any, ...], int] = {}
    categories: list[Any] = []
    lacking: list[str] = []
    definitions: list[str] = []
    panels = 1
    for item in inputs:
        trace = item.result.trace
        module = module_result(item.result, spec.module)
        table = None if module is None else next((t for t in module.tables if t.name == spec.table), None)
        if table is None:
            lacking.append(trace)
            continue
        frame = _filter(table.frame, where)
        count_column = _count_column(spec, table.frame.columns)
        needed = [*spec.x, *spec.group, *(c for c, _ in spec.measures), *([P] if cdf else [])]
        if any(c not in table.frame.columns for c in needed) or frame.height == 0:
            lacking.append(trace)
            continue
        drawn_before = len(series)
        groups = frame.partition_by(list(spec.group), maintain_order=True) if spec.group else [frame]
        ranked = _ranked_groups(groups, spec) if len(groups) > spec.max_series else []
        if len(ranked) > spec.max_series:
            rank = spec.rank_by or "mean " + spec.measures[0][0]
            if compare:
                groups = _in_table_order(groups, ranked[: spec.max_series])
                notes.append(f"{trace}: the {spec.max_series} groups ({', '.join(spec.group)}) with the largest "
                             f"{rank} are drawn; the table has them all.")
            else:
                panels = min(MAX_PANELS, -(-len(ranked) // spec.max_series))
                first = (panel - 1) * spec.max_series
                groups = _in_table_order(groups, ranked[first: first + spec.max_series])
                shown = min(len(ranked), panels * spec.max_series)
                notes.append(f"Panel {panel} of {panels}: groups ({', '.join(spec.group)}) ranked {first + 1}-"
                             f"{first + len(groups)} by {rank}"
                             + (f"; the {len(ranked) - shown:,} after the first {shown} are in the table only."
                                if shown < len(ranked) else "."))
        for group in groups:
            group_values = [_group_value(c, group[c][0], spec.null_label) for c in spec.group]
            fixed = {c for c, _ in where}  # a group column the chart keeps one value of names nothing apart
            group_names = [human_label(v, trace, c) for v, c in zip(group_values, spec.group) if c not in fixed]
            if not cdf and not categorical:
                group = group.sort(list(spec.x), nulls_last=True)
            for index, (column, label) in enumerate(spec.measures):
                counts: list[Any] | None = None
                if cdf:
                    pairs = [(plain(v), plain(p)) for v, p in zip(group[column], group[P]) if v is not None]
                    pairs.sort(key=lambda pair: (pair[0], pair[1]))
                else:
                    x_values = ([_label(row, spec.null_label) for row in group.select(spec.x).iter_rows()]
                                if categorical or len(spec.x) > 1
                                else [_axis_value(v, spec.x_scale) for v in group[spec.x[0]]])
                    if categorical:
                        for raw, row in zip(x_values, group.select(spec.x).iter_rows()):
                            x_labels.setdefault(raw, " / ".join(
                                spec.null_label if v is None else str(human_label(v, trace, c))
                                for v, c in zip(row, spec.x)))
                    pairs = [(x, plain(y)) for x, y in zip(x_values, group[column]) if x is not None]
                    if count_column:
                        counts = [plain(n) for x, n in zip(x_values, group[count_column]) if x is not None]
                    band = None
                    if spec.band and index == 0:
                        low, high = spec.band
                        band = [(plain(lo), plain(hi)) for x, lo, hi in zip(x_values, group[low], group[high])
                                if x is not None]
                if not pairs or all(y is None for _, y in pairs) or all(x is None for x, _ in pairs):
                    continue
                xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
                if categorical:
                    categories += [x for x in xs if x not in categories]
                name_parts = ([trace] if compare else []) + ([_label(group_names)] if group_names else [])
                if len(spec.measures) > 1 or not name_parts:
                    name_parts.append(label)
                # Colour tells groups (and traces) apart, dashes the measures of a group; bars, and
                # lines of one trace without groups, give each measure its own colour instead.
                colour_key: tuple[Any, ...] = tuple(([trace] if compare else []) + group_values)
                by_measure = len(spec.measures) > 1 and not colour_key
                if by_measure:
                    colour_key += (column,)
                colour = colour_keys.setdefault(colour_key, len(colour_keys))
                name = " · ".join(str(part) for part in name_parts)
                if cdf and (count := _values_behind(group, column)) is not None:
                    name += f" (n={count:,})"
                    counts = [count] * len(xs)
                    if spec.fade and count < MIN_JOBS:
                        name += f", fewer than {MIN_JOBS}: faded"
                series.append(Series(name=name, trace=trace, x=xs, y=ys, rows=len(xs), measure=column,
                                     colour=colour, dash=index if len(spec.measures) > 1 and not by_measure else None,
                                     n=counts, legend_group=" · ".join(str(k) for k in colour_key)))
                if not cdf and not bar and band:
                    series[-1].band_low, series[-1].band_high = [b[0] for b in band], [b[1] for b in band]
        if len(series) == drawn_before:
            lacking.append(trace)
            continue
        sources.append(table_source(item, spec.module, table))
        definitions += [d for d in table.definitions if d not in definitions]
    notes += _thinning_notes(series, spec)
    _distinct_styles(series, bar)
    if categorical:
        categories = natural_order(categories, spec.x)
    if spec.fade and any(n is not None and n < MIN_JOBS for one in series for n in (one.n or [])):
        notes.append(f"Faded: a statistic resting on fewer than {MIN_JOBS} jobs (n in the hover text).")
    if not series:
        if compare or sources:
            return None, f"{spec.title}: no values to draw for {', '.join(lacking) or 'any trace'}."
        return None, None
    if compare and lacking:
        notes.append(f"Not drawn for {', '.join(lacking)}: the trace has no values for this table "
                     f"({spec.module}/{spec.table}; see what did not apply).")
    drawn = {s.trace for s in series}
    offsets = sorted(i.result.trace for i in inputs if i.result.trace in drawn and not i.result.calendar_dates)
    days = spec.kind == "time" and bool(offsets) and len(offsets) == len(drawn)
    if days:
        starts: dict[str, float] = {}
        for one in series:
            first = min(_instant(x) for x in one.x)
            starts[one.trace] = min(starts.get(one.trace, first), first)
        for one in series:
            one.x = [(_instant(x) - starts[one.trace]) / 86400 for x in one.x]
        notes.append("The times are offsets from an undisclosed start, with no calendar dates: the axis counts "
                     "days from the first value drawn of each trace.")
    elif spec.kind == "time" and offsets:
        notes.extend(f"{trace}: its times are offsets from an undisclosed start, with no calendar dates; its "
                     "time axis starts at 1970-01-01." for trace in offsets)
    if spec.note:
        notes.insert(0, spec.note)
    chart = Chart(
        id=slug("chart", spec.chart_key) + (f"-{panel}" if panel > 1 else ""),
        module=spec.module,
        kind=spec.kind,
        title=spec.title + (f" ({panel} of {panels})" if panels > 1 else ""),
        x_title="days since the trace's first value drawn" if days else spec.x_title,
        y_title=spec.y_title,
        definitions=definitions,
        series=series,
        sources=sources,
        query=chart_query(spec, sources, where, compare),
        derivation=chart_derivation(spec, sources),
        notes=notes,
        x_log=spec.x_log,
        y_log=spec.y_log,
        x_seconds=_in_seconds([c for c, _ in spec.measures] if cdf else list(spec.x)),
        y_seconds=not cdf and _in_seconds([c for c, _ in spec.measures]),
        x_type="date" if spec.kind == "time" and not days else None,
        x_percent=spec.x_percent,
        y_percent=spec.y_percent,
        x_categories=categories if categorical else None,
        x_labels={str(c): x_labels.get(c, str(c)) for c in categories} if categorical else None,
        panel=panel,
        panels=panels,
        min_n=MIN_JOBS if spec.fade else None,
    )
    chart.synthetic_traces = synthetic_traces(chart, {i.result.trace for i in inputs if i.result.synthetic})
    return chart, None


def _thin(series: Series, spec: ChartSpec, count: int) -> str | None:
    """Thin `series` in place for drawing (bars never are): a CDF to `MAX_CDF_POINTS`; a line to
    its share of `MAX_CHART_POINTS` (at most `MAX_LINE_POINTS`) when longer, first dropping the
    inside points of runs of equal values (a straight line between their ends is the same). Returns
    how it was thinned, or None when every row is drawn."""
    if spec.kind in ("bar", "stack", "dots"):
        return None
    if spec.kind == "cdf":
        series.x, series.y = thin_cdf(series.x, series.y, MAX_CDF_POINTS)
        how = "evenly spaced probabilities"
    else:
        limit = max(MIN_LINE_POINTS, min(MAX_LINE_POINTS, MAX_CHART_POINTS // max(count, 1)))
        if len(series.x) > limit:
            series.band_low = series.band_high = None  # a band is drawn only where every row is
            series.x, series.y = drop_flat_runs(series.x, series.y)
            series.x, series.y = min_max_decimate(series.x, series.y, limit)
        how = "equal values in a row merged, then the smallest and largest value of each stretch of rows"
    return how if series.rows > len(series.x) else None


def _thinning_notes(series: Sequence[Series], spec: ChartSpec) -> list[str]:
    notes = []
    thinned = [(s, how) for s in series if (how := _thin(s, spec, len(series)))]
    if thinned:
        counts = "; ".join(f"{s.name}: {s.drawn:,} of {s.rows:,}" for s, _ in thinned)
        notes.append(f"Points drawn ({thinned[0][1]}): {counts}. The table keeps every row.")
    for log, axis in ((spec.x_log, "x"), (spec.y_log, "y")):
        if not log:
            continue
        zero_line = axis == "y" and spec.kind != "cdf" and _in_seconds([c for c, _ in spec.measures])
        if zero_line and any(v == 0 for s in series for v in s.y):
            notes.append("A value of 0 s is drawn on the line marked 0 s at the bottom of the log axis.")
        hidden = [s.name for s in series
                  if any(isinstance(v, (int, float)) and (v < 0 if zero_line else v <= 0)
                         for v in (s.x if axis == "x" else s.y))]
        if hidden:
            notes.append(f"Values at or below 0 cannot be drawn on the log {axis} axis (the table has them): "
                         + ", ".join(hidden) + ".")
    return notes


#: Most panels a table's groups are split into (small multiples); the rest stay in the table.
MAX_PANELS = 4

#: Fewest jobs a drawn statistic (a median, a share, a CDF) rests on before it is drawn faded.
MIN_JOBS = 30

#: Names of the GPU buckets as charts show them (the table keeps `analysis.sql.GPU_BUCKET_ORDER`).
BUCKET_NAMES: dict[str, str] = {"all": "all jobs", "0": "0 (CPU)", "(0,1)": "<1", "1": "1", "(1,2]": "1-2",
                                "(2,4]": "2-4", "(4,8]": "4-8", ">8": ">8", "unknown": "unknown"}
#: Names of other values that are identifiers in the tables.
VALUE_NAMES: dict[str, str] = {"peak_allocation": "peak allocation", "capacity": "capacity"}
#: Columns whose values are ddlx's own identifiers (table names, reference names), shown as words.
IDENTIFIER_COLUMNS = frozenset({"capacity_source", "reference"})


#: The GPU buckets in a sentence (the title of a chart of one bucket).
BUCKET_TITLES: dict[str, str] = {
    "all": "all jobs", "0": "CPU-only jobs", "(0,1)": "jobs asking for a fraction of one GPU",
    "1": "jobs asking for 1 GPU", "(1,2]": "jobs asking for more than 1, up to 2 GPUs",
    "(2,4]": "jobs asking for more than 2, up to 4 GPUs", "(4,8]": "jobs asking for more than 4, up to 8 GPUs",
    ">8": "jobs asking for more than 8 GPUs", "unknown": "jobs whose GPU request is unknown"}
#: Parts of chart ids for the GPU buckets (one chart per bucket in a compare report).
BUCKET_SLUGS: dict[str, str] = {"all": "all", "0": "cpu-only", "(0,1)": "fraction-of-1", "1": "1-gpu",
                                "(1,2]": "1-2-gpus", "(2,4]": "2-4-gpus", "(4,8]": "4-8-gpus", ">8": "over-8-gpus"}


def human_label(value: Any, trace: str, column: str = "") -> Any:
    """A value of `column` as a reader knows it: a GPU bucket by its range, an identifier with its
    trace's prefix and underscores dropped ("<trace>_machine_list" -> "machine list"); other values as
    they are."""
    if not isinstance(value, str):
        return value
    if column == "gpu_bucket" and value in BUCKET_NAMES:
        return BUCKET_NAMES[value]
    if column not in IDENTIFIER_COLUMNS:
        return value  # names from the trace (users, VCs, clusters) are shown exactly as written
    if value in VALUE_NAMES:
        return VALUE_NAMES[value]
    if "_" in value and value == value.lower() and " " not in value:
        from ddlx.datasets.plugins import TRACES

        prefixes = sorted({trace, *TRACES, *(name.replace("-", "_") for name in TRACES)} - {""}, key=len, reverse=True)
        for prefix in prefixes:
            if value.startswith(prefix + "_"):
                value = value[len(prefix) + 1:]
                break
        return value.replace("_", " ")
    return value


def natural_order(categories: list[Any], x: Sequence[str]) -> list[Any]:
    """The x categories in their natural order: GPU buckets by size (all jobs, CPU only and the
    fraction of one GPU first), numbers by value, others as first met."""
    from ddlx.analysis.sql import GPU_BUCKET_ORDER

    if tuple(x) == ("gpu_bucket",):
        order = {name: i for i, name in enumerate(("all", *GPU_BUCKET_ORDER))}
        return sorted(categories, key=lambda c: order.get(c, len(order)))
    try:
        return sorted(categories, key=lambda c: float(c))
    except (TypeError, ValueError):
        return categories


def _count_column(spec: ChartSpec, columns: Sequence[str]) -> str | None:
    """The column giving each row's n (`ChartSpec.count`), None when the table has none."""
    if spec.count is not None:
        return spec.count if spec.count in columns else None
    return next((c for c in COUNT_COLUMNS if c in columns), None)


def _distinct_styles(series: list[Series], bar: bool) -> None:
    """Give every series a style number (a line style with its marker; for bars, a fill pattern) so
    that no two have colour and style alike: a series' own style is its measure's number when a group
    draws several measures, else its colour's (no pattern for bars); a style already taken with the
    same colour moves to the next one."""
    from ddlx.reports.charts import LINE_STYLES, PALETTE

    taken: set[tuple[int, int]] = set()
    styles = len(PALETTE) * len(LINE_STYLES)
    for one in series:
        colour = one.colour or 0
        dash = one.dash if one.dash is not None else (0 if bar else colour)
        while (colour % len(PALETTE), dash % len(LINE_STYLES)) in taken and len(taken) < styles:
            dash += 1
        taken.add((colour % len(PALETTE), dash % len(LINE_STYLES)))
        one.dash = dash

#: Columns of a CDF table that count the values behind one distribution, in order of preference.
COUNT_COLUMNS: tuple[str, ...] = ("jobs_with_value", "jobs", "instances", "tasks", "metric_rows", "gpu_minutes",
                                  "rows", "finished_jobs")


def _in_seconds(columns: Sequence[str]) -> bool:
    """True when every column holds seconds (its name ends in `_s`, the unit convention of the
    result tables)."""
    return bool(columns) and all(c.endswith("_s") or c == "run_s_km" for c in columns)


def _values_behind(group: pl.DataFrame, column: str) -> int | None:
    """How many values the distribution of `column` in one group of a CDF table rests on (for its
    legend): the Kaplan-Meier curve counts finished and censored jobs, others their count column."""
    if column == "run_s_km" and {"finished_jobs", "censored_jobs"} <= set(group.columns):
        return int(group["finished_jobs"][0] or 0) + int(group["censored_jobs"][0] or 0)
    found = next((c for c in COUNT_COLUMNS if c in group.columns), None)
    return None if found is None or group[found][0] is None else int(group[found][0])


def _instant(value: Any) -> float:
    """Unix seconds of a time axis value (ISO text, UTC, as `plain` writes it)."""
    return dt.datetime.fromisoformat(str(value)).replace(tzinfo=dt.timezone.utc).timestamp()


def _ranked_groups(groups: list[pl.DataFrame], spec: ChartSpec) -> list[int]:
    """Indexes of `groups` with a value to rank by, the largest `rank_by` sum (else mean of the
    first measure) first; a group without any is left out (it would draw nothing)."""
    def weight(group: pl.DataFrame) -> float:
        column = spec.rank_by or spec.measures[0][0]
        values = group[column].drop_nulls()
        if values.len() == 0:
            return float("-inf")
        return float(values.sum() if spec.rank_by else values.mean())

    weights = {i: weight(group) for i, group in enumerate(groups)}
    return sorted((i for i, w in weights.items() if w != float("-inf")), key=lambda i: -weights[i])


def _in_table_order(groups: list[pl.DataFrame], chosen: list[int]) -> list[pl.DataFrame]:
    return [groups[i] for i in sorted(chosen)]


def _sql_literal(value: Any) -> str:
    if isinstance(value, str):
        return sql_string(value)
    return repr(value)


def chart_query(spec: ChartSpec, sources: Sequence[Source], where: Where, compare: bool) -> str:
    """A DuckDB query over the results folder returning the rows a chart draws (before thinning)."""
    columns = (["trace"] if compare else []) + list(spec.group)
    x_columns = [P] if spec.kind == "cdf" else list(spec.x)
    selected = columns + [f"{c} / {spec.x_scale:g} AS {c}_scaled" if spec.x_scale != 1.0 else c for c in x_columns]
    selected += [c for c, _ in spec.measures]
    files = [s.file for s in sources]
    from_item = (f"read_parquet({_sql_literal(files[0])})" if len(files) == 1
                 else "read_parquet([" + ", ".join(_sql_literal(f) for f in files) + "])")
    lines = [f"SELECT {', '.join(selected)}", f"FROM {from_item}"]
    conditions = [f"{c} IS NULL" if v is None else f"{c} = {_sql_literal(v)}" for c, v in where]
    if conditions:
        lines.append("WHERE " + " AND ".join(conditions))
    if spec.kind not in ("bar", "stack"):
        lines.append("ORDER BY " + ", ".join(columns + x_columns))
    return "\n".join(lines)


def chart_derivation(spec: ChartSpec, sources: Sequence[Source]) -> str:
    """How the chart is drawn from its table, in words."""
    row = sources[0].row if sources else ""
    parts = [f"Drawn from {spec.module}/{spec.table} (one row: {row})."]
    if spec.kind == "cdf":
        parts.append("Each point: a value of " + ", ".join(c for c, _ in spec.measures)
                     + " at a probability of the table's CDF (x), and that probability (y).")
    else:
        parts.append(f"x: {' / '.join(spec.x)}" + (f" divided by {spec.x_scale:g}" if spec.x_scale != 1.0 else "")
                     + "; y: " + ", ".join(c for c, _ in spec.measures) + ".")
    if spec.group:
        parts.append(f"One series per {', '.join(spec.group)}.")
    return " ".join(parts)


@lru_cache(maxsize=None)
def chart_specs() -> tuple[ChartSpec, ...]:
    """Every chart: `CHART_SPECS`, with each trace's own (`TracePlugin.charts`)
    after the generic charts of their module."""
    from ddlx.datasets.plugins import trace_plugins

    own = [spec for plugin in trace_plugins() for spec in plugin.charts]
    modules = list(dict.fromkeys(spec.module for spec in CHART_SPECS + tuple(own)))
    return tuple(spec for module in modules for spec in CHART_SPECS + tuple(own) if spec.module == module)
