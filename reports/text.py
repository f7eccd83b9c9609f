"""Plain-text rendering of small result tables for the terminal."""

from __future__ import annotations

import json
import math
from typing import Any

import polars as pl


def non_finite_text(value: float) -> str:
    """How NaN, inf and -inf are written in every output format: `NaN`, `inf`, `-inf`."""
    if math.isnan(value):
        return "NaN"
    return "inf" if value > 0 else "-inf"


def format_value(value: Any) -> str:
    """A number or value as shown in a table: floats to 4 significant digits, NULL as `-`,
    NaN and infinities as `NaN`, `inf`, `-inf`."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if not math.isfinite(value):
            return non_finite_text(value)
        if value == int(value) and abs(value) < 1e15:
            return f"{int(value):,}"
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def json_value(value: Any) -> Any:
    """`value` made valid JSON: a NaN or infinite float becomes the string `NaN`, `inf` or `-inf`
    (JSON has no such numbers), inside lists and dicts too."""
    if isinstance(value, float) and not math.isfinite(value):
        return non_finite_text(value)
    if isinstance(value, dict):
        return {key: json_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(item) for item in value]
    return value


def format_json(frame: pl.DataFrame) -> str:
    """`frame` as a JSON array of row objects (valid JSON: see `json_value`)."""
    return json.dumps(json_value(frame.to_dicts()), default=str, indent=1, allow_nan=False)


def format_csv(frame: pl.DataFrame) -> str:
    """`frame` as CSV with a header; NaN and infinities are written `NaN`, `inf`, `-inf`."""
    return frame.write_csv()


def format_table(frame: pl.DataFrame, max_rows: int | None = None) -> str:
    """`frame` as an aligned text table with a header row; numbers right-aligned."""
    shown = frame if max_rows is None else frame.head(max_rows)
    headers = list(shown.columns)
    cells = [[format_value(v) for v in row] for row in shown.iter_rows()]
    numeric = [dtype.is_numeric() for dtype in shown.dtypes]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric)).rstrip()

    out = [line(headers), line(["-" * w for w in widths])] + [line(r) for r in cells]
    if max_rows is not None and frame.height > max_rows:
        out.append(f"... {frame.height - max_rows} more rows")
    return "\n".join(out)


def format_findings(result: Any) -> str:
    """One line per finding of each module of an `AnalysisResult`, with its definition id, and
    one line per part of a module that did not apply."""
    lines = [f"{result.trace}: {len(result.modules)} module(s)"]
    width = max((len(f.text) for m in result.modules for f in m.findings), default=0)
    for module in result.modules:
        lines.append(f"\n{module.module}:")
        for finding in module.findings:
            value = format_value(finding.value)
            if finding.unit == "fraction" and isinstance(finding.value, (int, float)):
                value = f"{finding.value * 100:.1f}"  # a share in percent, written as every percent is
            unit = "%" if finding.unit == "fraction" else finding.unit
            lines.append(f"  {finding.text:<{width}} {value:>14} {unit:<10} [{finding.definition}]")
            if finding.alternative:
                lines.append(f"  {'':<{width}} ({finding.alternative})")
            if not finding.headline:
                lines.append(f"  {'':<{width}} (only {finding.basis:,}: a small sample, not a headline)")
        for skipped in module.not_applicable:
            lines.append(f"  not applicable: {skipped.what} ({skipped.why})")
    return "\n".join(lines)
