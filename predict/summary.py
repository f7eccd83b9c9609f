"""How a duration model shows itself (a trained `TrainResult` and a loaded `Predictor` alike), read
from its model card alone: what it predicts, the data it was trained on, the time-ordered split and
the test-window metrics, with the id of every definition."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ddlx import display

#: Test-window metrics a summary shows, as (card column, heading with its unit).
SHOWN_METRICS: tuple[tuple[str, str], ...] = (
    ("jobs", "jobs"), ("mae_s", "MAE (s)"), ("mdape_pct", "MdAPE (%)"), ("r2_log", "R² of log duration"),
    ("spearman", "Spearman"), ("within_50pct", "within 50 % (share)"), ("within_100pct", "within 100 % (share)"))


def model_title(card: dict[str, Any], path: Path) -> str:
    """E.g. "model 6fdb23b0c465b034: run time of lab jobs (mean, p50, p90), folder ddlx-models/lab"."""
    trace = card.get("data", {}).get("trace", "?")
    return f"model {card.get('model_id', '?')}: run time of {trace} jobs (mean, p50, p90), folder {path}"


def split_rows(card: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(window, jobs, first submission, last submission) of the train, validation and test windows."""
    windows = card.get("split", {}).get("windows", {})
    return [(name, display.cell_text(w.get("jobs")), str(w.get("first_submit_utc", "")),
             str(w.get("last_submit_utc", ""))) for name, w in windows.items()]


def metric_rows(card: dict[str, Any]) -> list[list[str]]:
    """One row per predictor of the card's metrics table: its name, then `SHOWN_METRICS`."""
    return [[str(row.get("predictor"))] + [display.cell_text(row[column]) if row.get(column) is not None
                                           else "undefined" for column, _ in SHOWN_METRICS]
            for row in card.get("metrics", {}).get("table", [])]


def model_text(card: dict[str, Any], path: Path) -> str:
    """The terminal summary of a model."""
    lines = [f"{window}: {jobs} jobs submitted {first} .. {last}" for window, jobs, first, last in split_rows(card)]
    metrics = card.get("metrics", {})
    lines += [f"{row[0]}: " + ", ".join(f"{heading} {value}" for (_, heading), value in zip(SHOWN_METRICS, row[1:]))
              for row in metric_rows(card)]
    if "p90_coverage" in metrics:
        lines.append(f"p90 coverage {display.cell_text(metrics['p90_coverage'])} "
                     f"({metrics.get('p90_coverage_definition', '')})")
    return display.text_lines(model_title(card, path), lines, bool(card.get("synthetic")))


def model_html(card: dict[str, Any], path: Path) -> str:
    """The notebook summary of a model: split windows, test-window metrics, definitions by id."""
    metrics = card.get("metrics", {})
    target = card.get("target", {})
    parts = [
        display.heading_html("time-ordered split (definition predict.split)"),
        display.table_html(("window", "jobs", "first submission (UTC)", "last submission (UTC)"), split_rows(card)),
        display.heading_html(f"{metrics.get('window', 'test')}-window metrics"),
        display.table_html(("predictor", *(heading for _, heading in SHOWN_METRICS)), metric_rows(card)),
    ]
    if "p90_coverage" in metrics:
        parts.append(f"<div>p90 coverage {display.escape(display.cell_text(metrics['p90_coverage']))}: "
                     f"{display.escape(metrics.get('p90_coverage_definition', ''))}</div>")
    subtitle = (f"target: {target.get('definition', '')} ({display.cell_text(target.get('with_target'))} of "
                f"{display.cell_text(target.get('jobs'))} jobs have one); the whole card: .card")
    return display.block_html(model_title(card, path), parts, bool(card.get("synthetic")), subtitle=subtitle)
