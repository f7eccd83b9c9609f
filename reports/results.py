"""Writing analysis results to a results folder: `summary.json` (every finding, each table's file,
what did not apply, the definitions used, provenance), `summary.parquet` (the findings) and one
Parquet file per result table (`<module>/<table>.parquet`)."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import polars as pl

from ddlx.analysis.model import AnalysisResult, table_file

SYNTHETIC_LABEL = "SYNTHETIC"


def findings_frame(result: AnalysisResult) -> pl.DataFrame:
    """One row per finding of every module."""
    rows = [{"module": m.module, **f.__dict__} for m in result.modules for f in m.findings]
    schema = {"module": pl.String, "name": pl.String, "text": pl.String, "value": pl.Float64,
              "unit": pl.String, "definition": pl.String, "population": pl.String}
    return pl.DataFrame(rows, schema=schema)


def write_results(result: AnalysisResult, out_dir: Path) -> list[Path]:
    """Write the results of `result` into `out_dir`; returns the files written.

    Files are written into a temporary folder beside `out_dir` and moved in at the end, so a
    failure leaves no half-written results; the folders of the modules run are replaced whole.
    Every table carries `trace` and `synthetic` columns, and the JSON a SYNTHETIC label when the
    data was generated.
    """
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.parent / f".{out_dir.name}.tmp-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        document = result.to_dict()
        if result.synthetic:
            document = {"label": SYNTHETIC_LABEL, **document}
        (tmp / "summary.json").write_text(json.dumps(document, indent=2, default=str) + "\n")
        frames = {"summary.parquet": findings_frame(result)}
        for module in result.modules:
            (tmp / module.module).mkdir()
            for table in module.tables:
                frames[table_file(module.module, table.name)] = table.frame
        for name, frame in frames.items():
            frame = frame.with_columns(pl.lit(result.trace).alias("trace"), pl.lit(result.synthetic).alias("synthetic"))
            frame.write_parquet(tmp / name)
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for item in sorted(tmp.iterdir()):
            target = out_dir / item.name
            if target.is_dir():
                shutil.rmtree(target)
            os.replace(item, target)
            written += sorted(target.rglob("*.parquet")) if target.is_dir() else [target]
        return written
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
