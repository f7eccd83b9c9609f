"""The reproduction model: a `Profile` per paper lists the `PublishedFigure`s a public trace allows,
each with where it was published, its value and unit, the definition the paper used and the
`Tolerance` that applies; `reproduce` turns them into `FigureResult`s beside ddlx's own values.

A figure's `compute` reads the catalog through a `TraceContext` (never raw files) and returns the
value in the figure's unit, or raises `NotComputable` with the reason (the catalog lacks a table,
the release lacks a field), or a `Finding` (the value and a note on where it was found). A figure
that no code can compute yet has no `compute` and says why in `pending`. Two figures that publish the
same quantity differently name each other in `conflicts`.

Each figure is of one `source_kind`: a *release count* is a value counted from the release files
themselves (rows, sums, shares of a released table), a check that ddlx reads the release as written;
a *published figure* is a value a paper or the trace's owners published (their tables, charts,
summaries, simulator results), the reproduction proper. Verdicts are totalled per kind.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.errors import DdlxError

#: Verdicts of a figure's result.
MATCHES = "matches"
DIFFERS = "differs"
NOT_HERE = "not computable here"
NOT_YET = "not computable yet"
SYNTHETIC = "SYNTHETIC (no verdict)"

#: Kinds of a figure's reference value (`PublishedFigure.source_kind`), in the order totals list them.
RELEASE_COUNT = "release count"
PUBLISHED = "published figure"
SOURCE_KINDS: dict[str, str] = {
    RELEASE_COUNT: "counted from the release files themselves (not a value a paper or the owners published)",
    PUBLISHED: "a value a paper or the trace's owners published",
}


class NotComputable(DdlxError):
    """A figure cannot be computed from this catalog; the message says why."""


def require_tables(ctx: TraceContext, *tables: str) -> None:
    """`NotComputable` naming the `tables` the catalog lacks for this trace (none: returns)."""
    missing = [table for table in tables if not ctx.has(table)]
    if missing:
        raise NotComputable(f"the catalog lacks {', '.join(missing)} of '{ctx.trace}' (ingest the file holding "
                            f"{'it' if len(missing) == 1 else 'them'})")


def require_jobs(ctx: TraceContext) -> None:
    """`NotComputable` when the catalog holds no jobs of this trace (only some of its other tables)."""
    from ddlx.datasets.canonical import jobs_table_name

    require_tables(ctx, jobs_table_name(ctx.trace))


@dataclass(frozen=True)
class Tolerance:
    """How near ddlx's value must be to the published one to match.

    `exact`: equal (counts from the released files); `rounded`: equal once ddlx's value is rounded
    to the `amount` decimals the value was published with; `within`: at most `amount` away (the
    stated reading error of a value read off a figure, or a stated rounding)."""

    kind: str
    amount: float = 0.0
    why: str = ""

    def matches(self, published: float, value: float) -> bool:
        if self.kind == "exact":
            return value == published
        if self.kind == "rounded":
            return _round_half_up(value, int(self.amount)) == round(published, int(self.amount))
        return abs(value - published) <= self.amount + 1e-9 * max(1.0, abs(published))

    def text(self, unit: str) -> str:
        if self.kind == "exact":
            return "exact"
        if self.kind == "rounded":
            places = int(self.amount)
            return f"equal when rounded to {places} decimal{'s' if places != 1 else ''}"
        return f"within ±{self.amount:g} {unit}" + (f" ({self.why})" if self.why else "")


def _round_half_up(value: float, places: int) -> float:
    """`value` rounded to `places` decimals, halves away from zero (as a paper's table rounds)."""
    scale = 10 ** places
    return math.copysign(math.floor(abs(value) * scale + 0.5 + 1e-9) / scale, value)


EXACT = Tolerance("exact")


def rounded(places: int) -> Tolerance:
    """Matches when ddlx's value rounds to the published one at `places` decimals."""
    return Tolerance("rounded", places)


def within(amount: float, why: str) -> Tolerance:
    """Matches when ddlx's value is at most `amount` (in the figure's unit) from the published one."""
    return Tolerance("within", amount, why)


@dataclass(frozen=True)
class Finding:
    """A computed value with a `note` saying where it was found (e.g. the list and level of a
    maximum); a figure's `compute` may return one instead of a bare number."""

    value: float | None
    note: str


@dataclass(frozen=True)
class PublishedFigure:
    """One reference number: `what` it is, `source` (paper table or figure, repository file,
    release file), `published` value in `unit`, the `definition` id the paper used, the `tolerance`,
    how to compute it from the catalog, and its `source_kind` (`RELEASE_COUNT` or `PUBLISHED`)."""

    id: str
    what: str
    source: str
    published: float | None
    unit: str
    definition: str
    tolerance: Tolerance = EXACT
    compute: Callable[[TraceContext], float | int | None] | None = None
    #: Why no code computes it yet (only when `compute` is None).
    pending: str = ""
    #: Ids of figures of the same profile that publish the same quantity another way.
    conflicts: tuple[str, ...] = ()
    #: Computed by an experiment that takes tens of seconds (`ddlx reproduce` runs it; an analysis
    #: lists it as not computed there).
    experiment: bool = False
    #: `RELEASE_COUNT` for a value counted from the release files, `PUBLISHED` for one a paper or
    #: the owners published (`SOURCE_KINDS`).
    source_kind: str = PUBLISHED

    def __post_init__(self) -> None:
        if self.source_kind not in SOURCE_KINDS:
            raise ValueError(f"figure '{self.id}': unknown source_kind '{self.source_kind}'; "
                             f"expected one of: {', '.join(SOURCE_KINDS)}")


@dataclass(frozen=True)
class Profile:
    """The published figures of one paper that its public trace allows.

    `dataset` is the catalog name it reads by default (a registered trace, or the name an import
    preset is usually given); `get_data` says how to put that data in the catalog."""

    name: str
    paper: str
    dataset: str
    description: str
    get_data: str
    figures: tuple[PublishedFigure, ...]
    definitions: tuple[Definition, ...] = ()

    def figure(self, figure_id: str) -> PublishedFigure:
        return next(f for f in self.figures if f.id == figure_id)


@dataclass
class FigureResult:
    """A figure beside ddlx's value: `verdict` one of matches, differs, not computable here/yet,
    or SYNTHETIC (no verdict on a generated sample); `reason` says why a figure was not computed,
    `note` where a computed value was found (`Finding`)."""

    figure: PublishedFigure
    value: float | None
    verdict: str
    reason: str = ""
    note: str = ""

    @property
    def difference(self) -> float | None:
        if self.value is None or self.figure.published is None:
            return None
        return self.value - self.figure.published

    def to_dict(self, synthetic: bool) -> dict[str, Any]:
        f = self.figure
        return {
            "id": f.id, "what": f.what, "source": f.source, "published": f.published, "unit": f.unit,
            "definition": f.definition, "tolerance": f.tolerance.text(f.unit), "value": self.value,
            "value_is_synthetic": synthetic and self.value is not None,
            "difference": None if synthetic else self.difference,
            "verdict": self.verdict, "reason": self.reason, "conflicts": list(f.conflicts),
            "source_kind": f.source_kind, "note": self.note,
        }


@dataclass
class Reproduction:
    """One profile reproduced on one catalog: every figure's result, and where the data came from."""

    profile: Profile
    dataset: str
    synthetic: bool
    home: str
    results: list[FigureResult] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """How many figures got each verdict (both kinds together)."""
        return _verdict_counts(self.results)

    def counts_by_kind(self) -> dict[str, dict[str, int]]:
        """Per source kind present (release counts first, then published figures): how many
        figures of that kind got each verdict."""
        return {kind: _verdict_counts([r for r in self.results if r.figure.source_kind == kind])
                for kind in SOURCE_KINDS if any(r.figure.source_kind == kind for r in self.results)}

    def summary_text(self) -> str:
        """The verdict totals, each kind on its own: e.g. "21 figures: 19 release counts (19
        matches); 2 published figures (1 matches, 1 differs)"."""
        parts = []
        for kind, counts in self.counts_by_kind().items():
            n = sum(counts.values())
            verdicts = ", ".join(f"{count} {verdict}" for verdict, count in counts.items())
            parts.append(f"{n} {kind}{'s' if n != 1 else ''} ({verdicts})")
        return f"{len(self.results)} figure{'s' if len(self.results) != 1 else ''}: {'; '.join(parts) or 'none'}"

    def table(self) -> pl.DataFrame:
        """The table as shown: figure, kind (release count or published figure), reference value
        with its unit, ddlx's value (labelled SYNTHETIC on a generated sample), difference and verdict
        (a figure not computed points to its reason, a value found somewhere to its note, `[n]`,
        numbered by `note_numbers`)."""
        rows = []
        notes = note_numbers(self)
        for result in self.results:
            f = result.figure
            value = number_text(result.value, f)
            if self.synthetic and result.value is not None:
                value += " SYNTHETIC"
            difference = result.difference
            rows.append({
                "figure": f.what + (f" (conflicts with {', '.join(f.conflicts)})" if f.conflicts else ""),
                "kind": f.source_kind,
                "published": published_text(f),
                "ddlx": value,
                "difference": "-" if difference is None or self.synthetic else number_text(difference, f),
                "verdict": result.verdict + (f" [{notes[_note_of(result)]}]" if _note_of(result) in notes else ""),
            })
        return pl.DataFrame(rows, schema={k: pl.String for k in TABLE_COLUMNS})

    def frame(self) -> pl.DataFrame:
        """One row per figure, as numbers: id, what, published, unit, value (ddlx's), difference (None
        on a SYNTHETIC sample), verdict, reason, source, definition, tolerance, source_kind (release
        count or published figure) and note (where a value was found)."""
        rows = [{k: row[k] for k in FRAME_COLUMNS} for row in self.to_dict()["figures"]]
        return pl.DataFrame(rows, schema={k: (pl.Float64 if k in ("published", "value", "difference") else pl.String)
                                          for k in FRAME_COLUMNS})

    def __repr__(self) -> str:
        from ddlx import display

        lines = [f"{row['figure']}: ddlx {row['ddlx']}, {row['kind']} {row['published']} ({row['verdict']})"
                 for row in self.table().iter_rows(named=True)]
        return display.text_lines(f"Reproduction of {self.profile.name} on {self.dataset}: {self.summary_text()}",
                                  lines, self.synthetic)

    def _repr_html_(self) -> str:
        from ddlx import display

        notes = "".join(f"<div>{display.escape(f'[{n}] {reason}')}</div>" for reason, n in note_numbers(self).items())
        return display.block_html(f"{self.profile.name}: {self.profile.paper}",
                                  [display.frame_html(self.table(), max_rows=200), notes], self.synthetic,
                                  subtitle=f"dataset {self.dataset}; {self.summary_text()}; as numbers: .frame()")

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "ddlx-reproduction/1",
            "profile": self.profile.name, "paper": self.profile.paper, "dataset": self.dataset,
            "synthetic": self.synthetic, "data_home": self.home, "verdicts": self.counts(),
            "verdicts_by_kind": self.counts_by_kind(),
            "figures": [r.to_dict(self.synthetic) for r in self.results],
            "definitions": {d.id: d.text for d in self.profile.definitions},
        }


def _verdict_counts(results: list[FigureResult]) -> dict[str, int]:
    found: dict[str, int] = {}
    for result in results:
        found[result.verdict] = found.get(result.verdict, 0) + 1
    return found


#: Columns of `Reproduction.table()`, the reproduction as printed (`kind`: release count or published figure).
TABLE_COLUMNS = ("figure", "kind", "published", "ddlx", "difference", "verdict")
#: Columns of `Reproduction.frame()`, the reproduction as numbers.
FRAME_COLUMNS = ("id", "what", "published", "unit", "value", "difference", "verdict", "reason", "source",
                 "definition", "tolerance", "source_kind", "note")


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


def _note_of(result: FigureResult) -> str:
    """What a row's `[n]` points to: why the figure was not computed, else where its value was found
    (on a SYNTHETIC sample only the latter: the sample's reason is the table's banner)."""
    return result.note if result.verdict == SYNTHETIC else (result.reason or result.note)


def note_numbers(reproduction: Reproduction) -> dict[str, int]:
    """Each distinct reason a figure was not computed, or note on where a value was found,
    numbered in order of first use (a SYNTHETIC sample's values keep their notes, not its reason)."""
    reasons = [_note_of(r) for r in reproduction.results if _note_of(r)]
    return {reason: n for n, reason in enumerate(dict.fromkeys(reasons), 1)}
