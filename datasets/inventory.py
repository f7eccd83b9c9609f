"""What an ingest manifest says, as tables for `ddlx datasets info`: tables, input files, checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl


def tables_frame(manifest: dict[str, Any]) -> pl.DataFrame:
    """One row per stored table: rows, rejected rows, and whether it was read, derived at ingest, or
    stored by `ddlx datasets reduce` (with when)."""
    inputs, reduced = manifest.get("inputs", {}), manifest.get("derived", {})

    def origin(table: str) -> str:
        if table in inputs:
            return f"{len(inputs[table].get('files', []))} file(s)"
        if table in reduced:
            return f"(reduced {reduced[table].get('reduced_at', '')})"
        return "(derived)"

    return pl.DataFrame([
        {"table": table, "rows": rows, "rejected": inputs.get(table, {}).get("rejected_rows"), "from": origin(table)}
        for table, rows in manifest.get("rows", {}).items()
    ], schema={"table": pl.String, "rows": pl.Int64, "rejected": pl.Int64, "from": pl.String})


def checksum_status(entry: dict[str, Any]) -> str:
    """How an input file's sha256 compares with the published one, or with the first download's."""
    if entry.get("matches_official_release") is not None:
        return "matches published" if entry["matches_official_release"] else "DIFFERS from published"
    if entry.get("matches_first_seen") is not None:
        return "matches first download" if entry["matches_first_seen"] else "DIFFERS from first download"
    return "none published"


def files_frame(manifest: dict[str, Any]) -> pl.DataFrame:
    """One row per input file (or archive member) with its sha256 and checksum status."""
    rows = []
    for table, entry in manifest.get("inputs", {}).items():
        for file in entry.get("files", []):
            name = Path(file["path"]).name + (f":{file['member']}" if file.get("member") else "")
            labels = ", ".join(f"{k}={v}" for k, v in (file.get("labels") or {}).items())
            rows.append({"table": table, "file": name + (f" [{labels}]" if labels else ""),
                         "sha256": file.get("sha256"), "checksum": checksum_status(file)})
    return pl.DataFrame(rows, schema={"table": pl.String, "file": pl.String, "sha256": pl.String,
                                      "checksum": pl.String})


def checks_frame(manifest: dict[str, Any]) -> pl.DataFrame:
    return pl.DataFrame(manifest.get("validation", []), schema={
        "table": pl.String, "check": pl.String, "rows": pl.Int64, "of_rows": pl.Int64, "share": pl.Float64})


def figures_frame(manifest: dict[str, Any]) -> pl.DataFrame:
    return pl.DataFrame(manifest.get("figures", []), schema={
        "table": pl.String, "figure": pl.String, "value": pl.Float64, "unit": pl.String})


def rejected_examples(manifest: dict[str, Any]) -> list[str]:
    return [e for entry in manifest.get("inputs", {}).values() for e in entry.get("rejected_examples", [])]


def status_frame(home: Path) -> pl.DataFrame:
    """What the data home `home` holds, one row per dataset: `name`, `kind` (trace, imported, or
    sample: a SYNTHETIC sample `ddlx analyze` made), `synthetic`, `jobs`, `version`, `ingested_at`
    and `home` (the catalog's folder). Empty when nothing is ingested."""
    from ddlx.datasets.canonical import jobs_table_name
    from ddlx.datasets.catalog import read_registrations
    from ddlx.datasets.home import samples_home
    from ddlx.datasets.plugins import TRACES

    rows = []
    places = [(home, None)] + [(samples_home(home, name), name) for name in TRACES]
    for place, sample_of in places:
        for name, registration in sorted(read_registrations(place).items()):
            if sample_of is not None and name != sample_of:
                continue
            kind = "sample" if sample_of else ("trace" if name in TRACES else "imported")
            rows.append({"name": name, "kind": kind, "synthetic": registration.synthetic,
                         "jobs": registration.manifest.get("rows", {}).get(jobs_table_name(name)),
                         "version": registration.version, "ingested_at": registration.ingested_at,
                         "home": str(place)})
    schema = {"name": pl.String, "kind": pl.String, "synthetic": pl.Boolean, "jobs": pl.Int64,
              "version": pl.String, "ingested_at": pl.String, "home": pl.String}
    return pl.DataFrame(rows, schema=schema)
