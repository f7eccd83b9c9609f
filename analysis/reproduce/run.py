"""Finding the profiles and reproducing one on a catalog.

Profiles are declared where the knowledge of their data lives: a trace folder's `reproduce`
module (`PROFILES`) for a registered trace, the importer's `reproduce` module for traces read
through an import preset. This module names no trace.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from ddlx.analysis.context import TraceContext, open_trace
from ddlx.analysis.definitions import get_definition
from ddlx.analysis.reproduce.model import (
    DIFFERS,
    MATCHES,
    NOT_HERE,
    NOT_YET,
    SYNTHETIC,
    FigureResult,
    Finding,
    NotComputable,
    Profile,
    PublishedFigure,
    Reproduction,
)
from ddlx.errors import DdlxError, UnknownDatasetError, did_you_mean


@lru_cache(maxsize=None)
def profiles() -> dict[str, Profile]:
    """Every profile by name: the trace plugins' (in list order), then the format plugins'."""
    from ddlx.datasets.plugins import format_plugins, trace_plugins

    declared = [profile for plugin in (*trace_plugins(), *format_plugins()) for profile in plugin.profiles]
    found: dict[str, Profile] = {}
    for profile in declared:
        if profile.name in found:
            raise DdlxError(f"profile '{profile.name}' is declared twice")
        found[profile.name] = profile
    return found


def get_profile(name: str) -> Profile:
    """The profile called `name`; `UnknownDatasetError` naming the known ones."""
    known = profiles()
    if name not in known:
        raise UnknownDatasetError(f"unknown profile '{name}'; expected one of: {', '.join(known)}"
                                  f"{did_you_mean(name, known)}")
    return known[name]


def profiles_for(dataset: str) -> list[Profile]:
    """The profiles that read `dataset` by default (a trace's own papers)."""
    return [p for p in profiles().values() if p.dataset == dataset]


def reproduce(home: Path, profile: str | Profile, dataset: str | None = None, use_sample: bool = False,
              progress: Callable[[str], None] | None = None) -> Reproduction:
    """Compute every figure of `profile` from the catalog of `home` (the profile's dataset, or
    `dataset`). A registered trace that is not ingested is read from its SYNTHETIC sample (as
    `ddlx analyze` does; `use_sample` forces it): its values are labelled SYNTHETIC and get no
    verdict. A `dataset` named that is in neither place is refused (`CatalogError`, with the
    closest name); the profile's own dataset missing from the catalog leaves every figure not
    computable here, saying how to get the data."""
    from ddlx.datasets.catalog import read_registrations, registered_dataset
    from ddlx.datasets.plugins import TRACES
    from ddlx.datasets.synthetic import home_with_jobs_or_sample

    chosen = profile if isinstance(profile, Profile) else get_profile(profile)
    name = dataset or chosen.dataset
    if dataset is not None and dataset not in TRACES:
        registered_dataset(Path(home), dataset, remedy=f"name a dataset of the catalog, or drop --dataset to read "
                                                       f"the profile's own ('{chosen.dataset}')")
    if name not in TRACES and not use_sample and name not in read_registrations(Path(home)):
        reason = f"the catalog of {home} holds no dataset '{name}'. {chosen.get_data}"
        return Reproduction(chosen, name, False, str(home), [_not_computed(f, reason) for f in chosen.figures])
    data_home = home_with_jobs_or_sample(Path(home), name, use_sample, progress, jobs_needed=False)
    with open_trace(data_home, name, require_jobs=False) as ctx:
        results = [_result(ctx, figure, experiments=True) for figure in chosen.figures]
        return Reproduction(chosen, name, ctx.synthetic, str(data_home), results)


def reproduce_on(ctx: TraceContext, profile: Profile, experiments: bool = False) -> Reproduction:
    """`profile` reproduced on an open trace (the analysis runner's); figures computed by an
    experiment only with `experiments`, else listed as not computed here."""
    return Reproduction(profile, ctx.trace, ctx.synthetic, str(ctx.home),
                        [_result(ctx, f, experiments) for f in profile.figures])


def _not_computed(figure: PublishedFigure, reason: str) -> FigureResult:
    if figure.compute is None:
        return FigureResult(figure, None, NOT_YET, figure.pending)
    return FigureResult(figure, None, NOT_HERE, reason)


def _result(ctx: TraceContext, figure: PublishedFigure, experiments: bool) -> FigureResult:
    get_definition(figure.definition)  # a figure names a registered definition
    if figure.compute is None:
        return FigureResult(figure, None, NOT_YET, figure.pending)
    if figure.experiment and not experiments:
        return FigureResult(figure, None, NOT_HERE, "computed by an experiment that an analysis does not run: "
                                                    "run `ddlx reproduce` for this profile")
    try:
        raw = figure.compute(ctx)
    except NotComputable as exc:
        return FigureResult(figure, None, NOT_HERE, str(exc))
    note = ""
    if isinstance(raw, Finding):
        raw, note = raw.value, raw.note
    if raw is None or (isinstance(raw, float) and not math.isfinite(raw)):
        return FigureResult(figure, None, NOT_HERE, "no value: the data holds no record this figure counts")
    value = float(raw)
    if ctx.synthetic:
        return FigureResult(figure, value, SYNTHETIC, "computed on a SYNTHETIC sample, not the real trace", note)
    if figure.published is None:
        return FigureResult(figure, value, NOT_YET, figure.pending or "no published value to compare with", note)
    verdict = MATCHES if figure.tolerance.matches(figure.published, value) else DIFFERS
    return FigureResult(figure, value, verdict, note=note)
