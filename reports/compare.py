"""The compare report: the same analysis on several traces, side by side in one report.

`run_compare` runs the analysis modules on each named trace or dataset of the catalog (a
registered trace that is not ingested uses its SYNTHETIC sample, as `ddlx analyze <trace>-trace`
does), writes each trace's results folder under the output folder (`<out>/<trace>/`) and the
report beside them (`<out>/report.html`, `report.md`, `report.json`).

In the report, headline numbers are aligned by finding and definition, one column per trace; a
trace without a number says why (module not run, or not computed: see what did not apply).
Charts draw one series per trace where a table has a population every trace shares (all jobs,
all users, ...), and name the traces lacking the table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from ddlx.analysis.model import AnalysisResult
from ddlx.errors import DdlxError
from ddlx.reports.model import Report
from ddlx.reports.report import TraceInput, assemble

if TYPE_CHECKING:
    from ddlx.analysis.options import AnalysisOptions


class CompareError(DdlxError):
    """A compare request that cannot be run (fewer than two traces, a trace named twice)."""


def check_names(names: Sequence[str]) -> list[str]:
    """The names to compare, as given; `CompareError` unless there are two or more, each once.
    `<trace>-trace` is read as `<trace>` (the name `ddlx analyze` uses)."""
    from ddlx.datasets.plugins import TRACES

    cleaned = [n[: -len("-trace")] if n.endswith("-trace") and n[: -len("-trace")] in TRACES else n for n in names]
    if len(cleaned) < 2:
        example = " ".join(list(TRACES)[:2])
        raise CompareError(f"compare needs two or more traces or datasets, e.g. `ddlx report compare {example}`")
    repeated = sorted({n for n in cleaned if cleaned.count(n) > 1})
    if repeated:
        raise CompareError(f"'{repeated[0]}' is named twice; name each trace once")
    return cleaned


def build_compare_report(results: Sequence[AnalysisResult], title: str | None = None) -> Report:
    """The report of several traces side by side; each trace's results folder is `<trace>/`
    beside the report."""
    inputs = [TraceInput(result, f"{result.trace}/") for result in results]
    return assemble(inputs, compare=True, title=title)


#: The per-bucket statistics `bucket_table` puts side by side: (module, table, what, n column).
BUCKET_STATISTICS: tuple[tuple[str, str, str, str], ...] = (
    ("queueing", "by_gpu_bucket", "queueing delay", "jobs_with_value"),
    ("durations", "run_time_by_gpu_bucket", "run time (ended jobs)", "finished_jobs"),
)


def bucket_table(results: Sequence[AnalysisResult]) -> pl.DataFrame:
    """Queueing delay and run time by GPUs requested, per trace and bucket: what, trace, GPUs
    requested, n (started jobs for the delay, ended jobs for the run time), p50_s and p90_s (seconds),
    in the buckets' natural order; the rows of each module that was run."""
    from ddlx.reports.chart_specs import BUCKET_NAMES, module_result, natural_order

    rows = []
    for module, table_name, what, count in BUCKET_STATISTICS:
        for result in results:
            found = module_result(result, module)
            table = None if found is None else next((t for t in found.tables if t.name == table_name), None)
            if table is None:
                continue
            frame = {row["gpu_bucket"]: row for row in table.frame.iter_rows(named=True)}
            for bucket in natural_order(list(frame), ("gpu_bucket",)):
                row = frame[bucket]
                rows.append({"what": what, "trace": result.trace, "gpus_requested": BUCKET_NAMES.get(bucket, bucket),
                             "n": row[count], "p50_s": row["p50_s"], "p90_s": row["p90_s"]})
    return pl.DataFrame(rows, schema={"what": pl.String, "trace": pl.String, "gpus_requested": pl.String,
                                      "n": pl.Int64, "p50_s": pl.Float64, "p90_s": pl.Float64})


def default_out_dir(names: Sequence[str]) -> Path:
    return Path("ddlx-results") / ("compare-" + "-".join(names))


def run_compare(home: Path, names: Sequence[str], out_dir: Path | None = None,
                modules: Sequence[str] | None = None, use_sample: bool = False,
                options: AnalysisOptions | Mapping[str, Any] | None = None,
                progress: Callable[[str], None] | None = None) -> tuple[Path, Report, list[AnalysisResult]]:
    """Analyse each of `names`, write their results folders and the compare report into `out_dir`;
    returns the path of `report.html`, the report and the analyses."""
    from ddlx.analysis.runner import run_analysis
    from ddlx.datasets.synthetic import home_with_jobs_or_sample

    names = check_names(names)
    out_dir = Path(out_dir) if out_dir is not None else default_out_dir(names)
    homes = {name: home_with_jobs_or_sample(Path(home), name, use_sample, progress) for name in names}
    results = [run_analysis(homes[name], name, modules, progress=progress, options=options) for name in names]
    report = build_compare_report(results)
    return write_compare(results, report, out_dir), report, results


def write_compare(results: Sequence[AnalysisResult], report: Report, out_dir: Path) -> Path:
    """Write each trace's results folder (`<out_dir>/<trace>/`) and the compare `report` beside them,
    the folder replaced whole (refused when it is another non-empty folder); returns `report.html`."""
    from ddlx.atomic import replace_folder
    from ddlx.errors import storage_errors
    from ddlx.reports.render import write_report_files
    from ddlx.reports.results import check_results_folder, write_results_into

    def build(tmp: Path) -> Path:
        for result in results:
            write_results_into(result, tmp / result.trace)
        return write_report_files(report, tmp).relative_to(tmp)

    out_dir = Path(out_dir)
    check_results_folder(out_dir)
    with storage_errors(out_dir, "writing the compare report"):  # OSError, or polars' and DuckDB's reports
        return out_dir / replace_folder(out_dir, build)
