"""What analysis modules return: tidy result tables, headline findings, and what did not apply.

Every table and finding names the metric definitions it used (ids of `definitions.py`), so a
written result says exactly what each number means. Units are in column names (`queue_s`,
`gpu_hours`, `share`), and each table says what one of its rows is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ddlx import display
from ddlx.analysis.definitions import definitions_used, get_definition
from ddlx.errors import did_you_mean
from ddlx.frames import Frame, frame


def table_file(module: str, table: str) -> str:
    """Where a result table is written, relative to the results folder."""
    return f"{module}/{table}.parquet"


#: A quantile or share over fewer records than this is reported but is no headline.
MIN_HEADLINE_BASIS = 100


def value_text(value: float | int | None, unit: str) -> str:
    """A finding's value in prose: a fraction as a percent, other numbers with their unit."""
    if value is None:
        return "none"
    if unit == "fraction":
        return f"{value * 100:.1f} %"
    number = f"{value:,.1f}".rstrip("0").rstrip(".") if isinstance(value, float) else f"{value:,}"
    return f"{number} {unit}".strip()


def held_to_end_text(value: float | int | None, unit: str, records: int, kind: str) -> str:
    """The alternative beside a headline that leaves out records without an end: "<value> if the
    <records> <kind>s with no recorded end are held to the trace end"."""
    one = records == 1
    return (f"{value_text(value, unit)} if the {records:,} {kind}{'' if one else 's'} with no recorded end "
            f"{'is' if one else 'are'} held to the trace end")


@dataclass
class ResultTable:
    """One tidy result: `row` says what a row is; `definitions` the metric definitions used."""

    name: str
    frame: pl.DataFrame
    definitions: tuple[str, ...]
    row: str

    def __post_init__(self) -> None:
        for definition in self.definitions:
            get_definition(definition)  # an unknown id is a programming error, caught at once


@dataclass
class Finding:
    """One headline number, shown as one terminal line: `text` labels the value (unit apart).
    `alternative` gives the value under the other reading of records without an end, when the
    trace has such records ("99.8 % if the 1,234 instances with no recorded end are held to the
    trace end"), else is empty. `basis` is how many jobs (or tasks, instances, GPU-minutes: as
    `population` says) a quantile or share rests on; None for counts and totals. A finding whose
    basis is below `MIN_HEADLINE_BASIS` is kept but is no headline (`headline`)."""

    name: str
    text: str
    value: float | int | None
    unit: str
    definition: str
    population: str
    alternative: str = ""
    basis: int | None = None
    #: Set when the number is computed over values outside their sane bounds (`SanityCheck`).
    warning: str = ""

    @property
    def headline(self) -> bool:
        """False for a quantile or share over fewer than `MIN_HEADLINE_BASIS` records."""
        return self.basis is None or self.basis >= MIN_HEADLINE_BASIS

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "headline": self.headline}

    def __post_init__(self) -> None:
        get_definition(self.definition)


@dataclass
class SanityCheck:
    """A bound the numbers of a module should keep, and how many values break it: `flagged` of
    `of` (jobs, time bins, measured values: `unit`). A broken bound is no error (the values are the
    trace's own and are kept) but a warning on every finding computed over them (`affects`)."""

    name: str
    text: str
    flagged: int
    of: int
    unit: str
    affects: tuple[str, ...] = ()

    @property
    def share(self) -> float | None:
        return self.flagged / self.of if self.of else None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "text": self.text, "flagged": self.flagged, "of": self.of, "unit": self.unit,
                "share": self.share, "affects": list(self.affects)}


@dataclass
class NotApplicable:
    """A part of a module the trace has no data for, and why."""

    what: str
    why: str


@dataclass
class ModuleResult:
    """Everything one module found on one trace.

    `specific` labels the tables and findings (by name) that the trace's own science added
    (`ddlx.analysis.trace_parts`): "<trace> only: <what the part computes>".
    """

    module: str
    tables: list[ResultTable] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    not_applicable: list[NotApplicable] = field(default_factory=list)
    specific: dict[str, str] = field(default_factory=dict)
    checks: list[SanityCheck] = field(default_factory=list)

    def add(self, name: str, frame: pl.DataFrame, definitions: tuple[str, ...] | list[str], row: str) -> pl.DataFrame:
        """Add a result table; returns `frame` for further use."""
        self.tables.append(ResultTable(name, frame, tuple(definitions), row))
        return frame

    def add_finding(self, name: str, text: str, value: float | int | None, unit: str, definition: str,
                    population: str, alternative: str = "", basis: int | None = None) -> None:
        """Add a finding; `basis`: how many records a quantile or share rests on (see `Finding`)."""
        self.findings.append(Finding(name, text, value, unit, definition, population, alternative, basis))

    def add_check(self, name: str, text: str, flagged: int, of: int, unit: str, affects: Sequence[str] = ()) -> None:
        """Record a sanity bound and how many values break it (see `apply_checks`)."""
        self.checks.append(SanityCheck(name, text, int(flagged or 0), int(of or 0), unit, tuple(affects)))

    def apply_checks(self) -> None:
        """Give every finding computed over values that break a bound that bound's warning
        (`Finding.warning`); run once the module has added its findings and checks."""
        for finding in self.findings:
            notes = [f"{c.flagged:,} of {c.of:,} {c.unit}: {c.text}" for c in self.checks
                     if c.flagged and finding.name in c.affects]
            finding.warning = "; ".join(notes)

    def skip(self, what: str, why: str) -> None:
        """Record that `what` does not apply to this trace, and why."""
        self.not_applicable.append(NotApplicable(what, why))

    def table(self, name: str) -> Frame:
        """The result table `name` (a polars frame); KeyError names the module's tables."""
        for table in self.tables:
            if table.name == name:
                return frame(table.frame)
        raise KeyError(f"module {self.module} has no table {name!r}{did_you_mean(name, [t.name for t in self.tables])}"
                       f"; its tables: {', '.join(t.name for t in self.tables) or 'none'}")

    def finding(self, name: str) -> Finding:
        """The finding `name`; KeyError names the module's findings."""
        for found in self.findings:
            if found.name == name:
                return found
        raise KeyError(f"module {self.module} has no finding {name!r}"
                       f"{did_you_mean(name, [f.name for f in self.findings])}")

    @property
    def definition_ids(self) -> list[str]:
        ids = [d for t in self.tables for d in t.definitions] + [f.definition for f in self.findings]
        return list(dict.fromkeys(ids))

    def findings_rows(self) -> list[tuple[str, str, str, str, str]]:
        """One row per finding for a summary: what it is, value with unit, n (the records a
        quantile or share rests on), definition id, and the alternative reading or warning."""
        return [(f.text, value_text(f.value, f.unit), "" if f.basis is None else f"{f.basis:,}", f.definition,
                 "; ".join(part for part in (f.alternative, f.warning) if part)) for f in self.findings]

    def __repr__(self) -> str:
        return display.text_lines(
            f"ModuleResult {self.module}: {len(self.findings)} findings, {len(self.tables)} tables "
            f"({', '.join(t.name for t in self.tables)})",
            [f"{text}: {value}" + (f" (n={n})" if n else "") + f" [{definition}]"
             for text, value, n, definition, _ in self.findings_rows()])

    def _repr_html_(self) -> str:
        return display.block_html(f"{self.module}", self._html_parts())

    def _html_parts(self) -> list[str]:
        parts = [display.table_html(("finding", "value", "n", "definition", "note"), self.findings_rows())]
        if self.tables:
            parts.append(display.table_html(("table", "rows", "one row is", "definitions"), [
                (t.name, f"{t.frame.height:,}", t.row, ", ".join(t.definitions)) for t in self.tables]))
        if self.not_applicable:
            parts.append(display.table_html(("not applicable", "why"),
                                            [(n.what, n.why) for n in self.not_applicable]))
        return parts


@dataclass
class AnalysisResult:
    """The modules run on one trace, with where the data came from. `wall_clock` is False when the
    trace's times are offsets from an undisclosed start (no dates, hours of day or weekdays);
    `calendar_dates` is False then and also when only the dates are not real (hours and weekdays are)."""

    trace: str
    synthetic: bool
    provenance: dict[str, Any]
    modules: list[ModuleResult] = field(default_factory=list)
    wall_clock: bool = True
    calendar_dates: bool = True
    #: The published figures of the trace's papers reproduced on its data (`ddlx.analysis.reproduce.Reproduction`).
    reproductions: list[Any] = field(default_factory=list)
    #: The options the modules ran with that differ from their defaults (`AnalysisOptions.recorded`).
    options: dict[str, Any] = field(default_factory=dict)

    def module(self, name: str) -> ModuleResult:
        """The result of module `name`; `KeyError` naming the modules run when it was not."""
        for module in self.modules:
            if module.module == name:
                return module
        raise KeyError(f"no module {name!r} in this result; it holds: {', '.join(m.module for m in self.modules)}")

    def __repr__(self) -> str:
        lines = []
        for module in self.modules:
            lines.append(f"{module.module}: {len(module.findings)} findings, {len(module.tables)} tables")
            lines += [f"  {text}: {value}" + (f" (n={n})" if n else "") + f" [{definition}]"
                      for text, value, n, definition, _ in module.findings_rows()]
        return display.text_lines(f"AnalysisResult of {self.trace}: {len(self.modules)} modules", lines,
                                  self.synthetic)

    def _repr_html_(self) -> str:
        parts = []
        for module in self.modules:
            parts.append(display.heading_html(module.module))
            parts += module._html_parts()
        subtitle = (f"{len(self.modules)} modules; every table: result.module(name).table(table); "
                    "every definition's text: result.to_dict()['definitions']")
        return display.block_html(f"ddlx analysis of {self.trace}", parts, self.synthetic, subtitle=subtitle)

    @property
    def definition_ids(self) -> list[str]:
        return list(dict.fromkeys(d for m in self.modules for d in m.definition_ids))

    def to_dict(self) -> dict[str, Any]:
        """Every finding, each table's file (see `table_file`) and shape, what did not apply, and
        the full text of every definition used."""
        return {
            "trace": self.trace,
            "synthetic": self.synthetic,
            "wall_clock": self.wall_clock,
            "calendar_dates": self.calendar_dates,
            "reproduction": [r.to_dict() for r in self.reproductions],
            "options": dict(self.options),
            "provenance": self.provenance,
            "modules": {
                m.module: {
                    "findings": [f.to_dict() for f in m.findings],
                    "tables": {t.name: {"file": table_file(m.module, t.name), "row": t.row,
                                        "definitions": list(t.definitions), "columns": t.frame.columns,
                                        "rows": t.frame.height}
                               for t in m.tables},
                    "not_applicable": [n.__dict__ for n in m.not_applicable],
                    "trace_specific": dict(m.specific),
                    "checks": [c.to_dict() for c in m.checks],
                }
                for m in self.modules
            },
            "definitions": definitions_used(self.definition_ids),
        }
