"""What an analysis gives a reader: results folders (JSON and Parquet of every number) and reports
(self-contained interactive HTML, Markdown and JSON), for one trace or several side by side.

Public face:
- `write_results`: an analysis' findings, tables and definitions into a results folder (`results`);
- `write_report`: the report of one analysis as HTML, Markdown and JSON (`render`); `build_report`
  gives its model (`report`);
- `run_compare`, `build_compare_report`: several traces or datasets in one report (`compare`).

`model.py` is the report object, `chart_specs.py` the charts it draws and `report.py` assembles them.
"""

from ddlx.lazy import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "write_results": "reports.results",
    "build_report": "reports.report",
    "write_report": "reports.render",
    "run_compare": "reports.compare",
    "build_compare_report": "reports.compare",
})
