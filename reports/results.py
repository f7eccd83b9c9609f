"""Writing analysis results to a results folder: `summary.json` (every finding, each table's file,
what did not apply, the definitions used, provenance), `summary.parquet` (the findings) and one
Parquet file per result table (`<module>/<table>.parquet`)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl

from ddlx.analysis.model import AnalysisResult, table_file
from ddlx.atomic import write_parquet_file
from ddlx.outputs import check_output_folder, write_output_folder
from ddlx.reports.text import json_value

SYNTHETIC_LABEL = "SYNTHETIC"
SUMMARY_FILE = "summary.json"
#: A folder holding one of these was written by ddlx (analyze: summary.json; report compare: report.json).
OWN_FILES = (SUMMARY_FILE, "report.json")


def findings_frame(result: AnalysisResult) -> pl.DataFrame:
    """One row per finding of every module."""
    rows = [{"module": m.module, **f.to_dict()} for m in result.modules for f in m.findings]
    schema = {"module": pl.String, "name": pl.String, "text": pl.String, "value": pl.Float64,
              "unit": pl.String, "definition": pl.String, "population": pl.String, "alternative": pl.String,
              "basis": pl.Int64, "headline": pl.Boolean}
    return pl.DataFrame(rows, schema=schema)


def write_results(result: AnalysisResult, out_dir: Path, with_report: bool = False) -> list[Path]:
    """Write the results of `result` (and, `with_report`, its report) as the folder `out_dir`;
    returns the files written.

    The folder is built beside `out_dir` and put in its place in one step (`ddlx.atomic.replace_folder`):
    it holds exactly this run's files, and a failure or a kill leaves the previous folder whole.
    An existing `out_dir` that is not a results folder (not empty and no `summary.json`) is
    refused, so a mistyped `--out` never replaces a user's folder. Every table carries `trace`
    and `synthetic` columns, and the JSON a SYNTHETIC label when the data was generated.
    """
    out_dir = Path(out_dir)
    written = write_output_folder(out_dir, OWN_FILES, lambda tmp: write_results_into(result, tmp, with_report))
    return [out_dir / path for path in written]


def write_results_into(result: AnalysisResult, folder: Path, with_report: bool = False) -> list[Path]:
    """Write the results files of `result` into the new, empty `folder`; returns their paths
    relative to it. `write_results` calls this on a temporary folder that it then puts in place."""
    folder.mkdir(parents=True, exist_ok=True)
    document = result.to_dict()
    if result.synthetic:
        document = {"label": SYNTHETIC_LABEL, **document}
    (folder / SUMMARY_FILE).write_text(json.dumps(json_value(document), indent=2, default=str,
                                               allow_nan=False) + "\n")
    frames = {"summary.parquet": findings_frame(result)}
    for module in result.modules:
        (folder / module.module).mkdir()
        for table in module.tables:
            frames[table_file(module.module, table.name)] = table.frame

    def write_tables() -> None:
        for name, frame in frames.items():
            frame = frame.with_columns(pl.lit(result.trace).alias("trace"), pl.lit(result.synthetic).alias("synthetic"))
            write_parquet_file(frame, folder / name)

    if with_report:
        from ddlx.reports.render import write_report

        # the tables are encoded and written (mostly outside Python's lock) while the report is built
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ddlx-results-tables") as pool:
            tables = pool.submit(write_tables)
            write_report(result, folder)  # a failure here waits for the tables, and is the one raised
        tables.result()
    else:
        write_tables()
    return sorted(path.relative_to(folder) for path in folder.rglob("*") if path.is_file())


def check_results_folder(out_dir: Path) -> None:
    """`StorageError` unless `out_dir` can be written as a results folder: it is missing, an empty
    folder, or a results folder ddlx wrote (it holds one of `OWN_FILES`), and a folder can be made
    there (the rule of every output folder, `ddlx.outputs.check_output_folder`). Nothing is left
    behind."""
    check_output_folder(out_dir, OWN_FILES)


#: Before an analysis, so that a bad `--out` is refused at once rather than after the analysis has run.
check_results_writable = check_results_folder
