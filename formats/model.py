"""What an export is and what it reports: an `ExportFormat` writes a dataset's canonical jobs in the
shape one consumer reads, and returns a `LossReport` that says what the conversion lost or made up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ddlx.errors import DdlxError

if TYPE_CHECKING:
    import polars as pl

    from ddlx.formats.jobs import ExportRequest


class ExportError(DdlxError):
    """The dataset cannot be written in the format (a column the format needs is missing)."""


@dataclass
class LossReport:
    """What an export lost, and what it had to fill in.

    `without_place`: canonical fields the format has no place for (field, what happens to it);
    `filled`: fields the format needs that the dataset lacks, or holds in another form (field,
    the rule that fills them); `dropped`: rows left out (reason -> count); `unusable`: rows written
    that the consumer can never use, such as pods larger than every node (reason -> the rows' names)."""

    without_place: list[tuple[str, str]] = field(default_factory=list)
    filled: list[tuple[str, str]] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    unusable: dict[str, list[str]] = field(default_factory=dict)

    #: Names of unusable rows shown on the terminal per reason (the sidecar holds them all).
    SHOWN_NAMES = 5

    def drop(self, reason: str, rows: int) -> None:
        if rows:
            self.dropped[reason] = self.dropped.get(reason, 0) + int(rows)

    def keep(self, frame: pl.DataFrame, condition: pl.Expr, reason: str) -> pl.DataFrame:
        """The rows of `frame` where `condition` holds; the others are counted as dropped for `reason`."""
        kept = frame.filter(condition)
        self.drop(reason, frame.height - kept.height)
        return kept

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "fields_without_place": [{"field": f, "what_happens": w} for f, w in self.without_place],
            "fields_filled": [{"field": f, "rule": r} for f, r in self.filled],
            "rows_dropped": [{"reason": r, "rows": n} for r, n in self.dropped.items()]}
        if self.unusable:
            document["rows_unusable"] = [{"reason": r, "rows": len(names), "names": names}
                                         for r, names in self.unusable.items()]
        return document

    def lines(self) -> list[str]:
        """The report as lines for the terminal."""
        out = [f"  no place for {f}: {w}" for f, w in self.without_place]
        out += [f"  filled {f}: {r}" for f, r in self.filled]
        out += [f"  dropped {n:,} rows: {r}" for r, n in self.dropped.items()]
        for reason, names in self.unusable.items():
            shown = ", ".join(names[:self.SHOWN_NAMES])
            hidden = len(names) - self.SHOWN_NAMES
            more = f" and {hidden:,} more, all named in the sidecar" if hidden > 0 else ""
            out.append(f"  written but unusable, {len(names):,} rows: {reason} ({shown}{more})")
        return out or ["  nothing lost"]


@dataclass
class Written:
    """What a format's `write` produced: rows written, files written beside the main one, the
    numbers it gave to names (field -> {name: number}) that the sidecar maps back, and the release of
    the consumer the file was written for, when the format targets one (the sidecar's `target`)."""

    rows: int
    extra_files: list[Path] = field(default_factory=list)
    codes: dict[str, dict[str, int]] = field(default_factory=dict)
    target: str | None = None


@dataclass(frozen=True)
class ExportFormat:
    """One output format: its `name` (as `--format` takes it), the `consumer` that reads it, where
    its definition comes from (`reference`), the file `suffix`, and `write(request, path, loss)`,
    which writes the file (and any beside it) and returns what it wrote. `options` are the
    `--option KEY=VALUE` it accepts (key -> what it sets, with its default); `carries_estimate`
    says whether `--predictions` has a place in it; `rows_are` what a row of its main file is."""

    name: str
    title: str
    consumer: str
    reference: str
    suffix: str
    write: Callable[[ExportRequest, Path, LossReport], Written]
    options: dict[str, str] = field(default_factory=dict)
    carries_estimate: bool = False
    rows_are: str = "jobs"  # what one row of the main file is (the openb pod list: pods)


@dataclass
class ExportResult:
    """An export written: the file, its sidecar, rows written, the loss report."""

    path: Path
    sidecar: Path
    format: str
    rows: int
    loss: LossReport
    synthetic: bool
    extra_files: list[Path] = field(default_factory=list)
    rows_are: str = "jobs"
