"""Writing analysis results to a results folder: JSON with every number, and Parquet tables."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import polars as pl

from ddlx.analysis.summary import TraceSummary

SYNTHETIC_LABEL = "SYNTHETIC"


def write_summary(summary: TraceSummary, out_dir: Path) -> list[Path]:
    """Write `summary.json`, `summary.parquet` and one Parquet file per table into `out_dir`.

    Files are written into a temporary folder beside `out_dir` and moved in at the end, so a
    failure leaves no half-written results. Every file built from synthetic data says so.
    """
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.parent / f".{out_dir.name}.tmp-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    label = SYNTHETIC_LABEL if summary.synthetic else None
    try:
        document = summary.to_dict()
        if label:
            document = {"label": label, **document}
        (tmp / "summary.json").write_text(json.dumps(document, indent=2, default=str) + "\n")
        metrics = pl.DataFrame([m.__dict__ for m in summary.metrics],
                               schema_overrides={"value": pl.Float64})
        frames = {"summary": metrics, **summary.tables}
        for name, frame in frames.items():
            frame = frame.with_columns(pl.lit(summary.trace).alias("trace"),
                                       pl.lit(summary.synthetic).alias("synthetic"))
            frame.write_parquet(tmp / f"{name}.parquet")
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for item in sorted(tmp.iterdir()):
            target = out_dir / item.name
            os.replace(item, target)
            written.append(target)
        return written
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
