"""A `Reproduction` as the terminal, CSV and the report show it: one row per figure with its kind
(release count or published figure), the reference value, ddlx's value, the difference and the
verdict, and the verdicts totalled per kind."""

from __future__ import annotations

import csv
import io
import json

from ddlx.analysis.reproduce.model import Reproduction, note_numbers
from ddlx.reports.model import ReproductionView
from ddlx.reports.text import format_table, json_value

#: Columns of the CSV (every field of a figure's result, in this order).
CSV_COLUMNS = ("profile", "dataset", "id", "what", "source", "published", "unit", "value", "value_is_synthetic",
               "difference", "verdict", "reason", "definition", "tolerance", "conflicts", "source_kind", "note")


def verdict_summary(reproduction: Reproduction) -> str:
    """The verdict totals per kind (`Reproduction.summary_text`), e.g. "21 figures: 19 release counts
    (19 matches); 2 published figures (1 matches, 1 differs)"."""
    return reproduction.summary_text()


def reproduction_view(trace: str, reproduction: Reproduction) -> ReproductionView:
    """The report's view of `reproduction` on `trace`."""
    return ReproductionView(
        trace=trace, profile=reproduction.profile.name, paper=reproduction.profile.paper,
        synthetic=reproduction.synthetic, rows=reproduction.table().to_dicts(),
        notes=[f"[{n}] {reason}" for reason, n in note_numbers(reproduction).items()],
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
    lines.append(format_table(reproduction.table()))
    lines += [f"[{n}] {reason}" for reason, n in note_numbers(reproduction).items()]
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


