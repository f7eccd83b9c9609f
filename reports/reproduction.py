"""A `Reproduction` as the terminal, CSV and the report show it: one row per published figure with
the published value, ddlx's value, the difference and the verdict."""

from __future__ import annotations

import csv
import io
import json

import polars as pl

from ddlx.reports.model import ReproductionView
from ddlx.reports.text import format_table, json_value
from ddlx.reproduce.model import SYNTHETIC, PublishedFigure, Reproduction

#: Columns of the CSV (every field of a figure's result, in this order).
CSV_COLUMNS = ("profile", "dataset", "id", "what", "source", "published", "unit", "value", "value_is_synthetic",
               "difference", "verdict", "reason", "definition", "tolerance", "conflicts")


def published_decimals(figure: PublishedFigure) -> int:
    """Decimals the figure was published with: those its tolerance rounds to, else those of the
    number as written (1,632,719.7 -> 1)."""
    if figure.tolerance.kind == "rounded":
        return int(figure.tolerance.amount)
    text = repr(float(figure.published or 0))
    return 0 if text.endswith(".0") else len(text.split(".")[1])


def published_text(figure: PublishedFigure) -> str:
    """The published value as it was written, with its unit."""
    if figure.published is None:
        return "-"
    return f"{figure.published:,.{published_decimals(figure)}f} {figure.unit}"


def number_text(value: float | None, figure: PublishedFigure) -> str:
    """ddlx's `value` to one more decimal than the figure was published with (none for whole
    counts, two for a fraction where a whole count was published)."""
    if value is None:
        return "-"
    places = published_decimals(figure)
    places = places + 1 if places else (0 if value == int(value) else 2)
    return f"{value:,.{places}f}"


def _note_numbers(reproduction: Reproduction) -> dict[str, int]:
    """Each distinct reason a figure was not computed, numbered in order of first use."""
    reasons = [r.reason for r in reproduction.results if r.reason and r.verdict != SYNTHETIC]
    return {reason: n for n, reason in enumerate(dict.fromkeys(reasons), 1)}


def reproduction_frame(reproduction: Reproduction) -> pl.DataFrame:
    """The table as shown: figure, published value with its unit, ddlx's value (labelled
    SYNTHETIC on a generated sample), difference and verdict (a figure not computed points to its
    reason, `[n]`, listed under the table by `format_reproduction`)."""
    rows = []
    notes = _note_numbers(reproduction)
    for result in reproduction.results:
        f = result.figure
        value = number_text(result.value, f)
        if reproduction.synthetic and result.value is not None:
            value += " SYNTHETIC"
        difference = result.difference
        rows.append({
            "figure": f.what + (f" (conflicts with {', '.join(f.conflicts)})" if f.conflicts else ""),
            "published": published_text(f),
            "ddlx": value,
            "difference": "-" if difference is None or reproduction.synthetic else number_text(difference, f),
            "verdict": result.verdict,
        })
        if result.reason in notes:
            rows[-1]["verdict"] += f" [{notes[result.reason]}]"
    return pl.DataFrame(rows, schema={k: pl.String for k in ("figure", "published", "ddlx", "difference", "verdict")})


def verdict_summary(reproduction: Reproduction) -> str:
    """E.g. "20 figures: 19 matches, 1 not computable yet"."""
    counts = ", ".join(f"{n} {verdict}" for verdict, n in reproduction.counts().items())
    return f"{len(reproduction.results)} figures: {counts}"


def reproduction_view(trace: str, reproduction: Reproduction) -> ReproductionView:
    """The report's view of `reproduction` on `trace`."""
    return ReproductionView(
        trace=trace, profile=reproduction.profile.name, paper=reproduction.profile.paper,
        synthetic=reproduction.synthetic, rows=reproduction_frame(reproduction).to_dicts(),
        notes=[f"[{n}] {reason}" for reason, n in _note_numbers(reproduction).items()],
        summary=verdict_summary(reproduction))


def format_reproduction(reproduction: Reproduction) -> str:
    """The terminal view: what was reproduced on which data, the table, and the verdict counts."""
    profile = reproduction.profile
    lines = []
    if reproduction.synthetic:
        lines.append("*** SYNTHETIC DATA: ddlx values come from a generated sample; no verdict is given ***")
    lines.append(f"{profile.name}: {profile.paper}")
    lines.append(f"dataset: {reproduction.dataset} in {reproduction.home}")
    lines.append("")
    lines.append(format_table(reproduction_frame(reproduction)))
    lines += [f"[{n}] {reason}" for reason, n in _note_numbers(reproduction).items()]
    lines.append("")
    lines.append(f"{verdict_summary(reproduction)}. Sources, definitions and tolerances: --format json, or "
                 "docs/reproduce.md.")
    return "\n".join(lines)


def reproduction_csv(reproduction: Reproduction) -> str:
    """Every field of every figure, one row each (`CSV_COLUMNS`)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in reproduction.to_dict()["figures"]:
        writer.writerow({"profile": reproduction.profile.name, "dataset": reproduction.dataset,
                         **{k: ("|".join(v) if isinstance(v, list) else v) for k, v in row.items()}})
    return out.getvalue()


def reproduction_json(reproduction: Reproduction) -> str:
    return json.dumps(json_value(reproduction.to_dict()), indent=2)


