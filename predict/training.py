"""Training a duration model end to end: features of every job of a dataset, the time-ordered
split and the fits (`models.fit`), then the model folder with its card (`artifacts`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ddlx.analysis.context import open_trace
from ddlx.predict import artifacts
from ddlx.predict.features import exclusion_counts, trace_features
from ddlx.predict.models import TrainSettings, fit


@dataclass
class TrainResult:
    """A model folder written by `train`: where, its card, the test metrics and the step times (s)."""

    path: Path
    card: dict[str, Any]
    metrics: pl.DataFrame
    synthetic: bool
    seconds: dict[str, float]

    def __repr__(self) -> str:
        from ddlx.predict.summary import model_text

        return model_text(self.card, self.path)

    def _repr_html_(self) -> str:
        from ddlx.predict.summary import model_html

        return model_html(self.card, self.path)


def default_model_dir(name: str) -> Path:
    """Where `ddlx predict train` writes when given no --out: ./ddlx-models/<name>."""
    return Path("ddlx-models") / name


def train(home: Path, name: str, out: Path | None = None, settings: TrainSettings | None = None,
          progress: Callable[[str], None] | None = None) -> TrainResult:
    """Train on trace or dataset `name` of the catalog of `home` and write the model folder `out`.

    Features over every job of the trace (`features.trace_features`), the split, the three models
    and the baselines (`fit`), then the model file and its card (`artifacts.write_model_folder`).
    """
    settings = settings or TrainSettings()
    say = progress or (lambda message: None)
    out = Path(out) if out is not None else default_model_dir(name)
    artifacts.check_out_folder(out)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    with open_trace(Path(home), name) as ctx:
        zone = ctx.local_tz if ctx.has_wall_clock else None
        say(f"{name}: computing features")
        features = trace_features(ctx.con, ctx.jobs, zone, name)
        counts = exclusion_counts(ctx.con, ctx.jobs, name)
        synthetic, has_wall_clock, provenance = ctx.synthetic, ctx.has_wall_clock, dict(ctx.provenance)
    seconds["features"] = time.perf_counter() - started
    result = fit(features, zone, settings, progress=say)
    seconds.update(result.seconds)
    del features
    started = time.perf_counter()
    card = artifacts.write_model_folder(out, result.payload, lambda sha: artifacts.build_card(
        result, trace=name, synthetic=synthetic, has_wall_clock=has_wall_clock, zone=zone, target_counts=counts,
        provenance=provenance, settings=settings.as_dict(), model_sha256=sha))
    seconds["write"] = time.perf_counter() - started
    return TrainResult(path=out, card=card, metrics=result.metrics, synthetic=synthetic, seconds=seconds)
