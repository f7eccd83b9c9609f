"""The fill-up experiment as ddlx runs and reports it: every policy and seed on one dataset's
nodes and task list, filled to a multiple of the GPU capacity (`fill_to`, default 1.3), score ties
broken by a seeded random node order (`tie_break`) and the curves read by `reading` (the owners'
bin-mean by default; `ddlx.placement.fillup` defines all three). The curves of the paper
(unallocated GPU share against arrived workload, mean and spread over seeds), the table at chosen
workload levels, and FGD's gain over the best other policy. Written as Parquet and JSON
(`write_experiment`)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from ddlx.placement.fillup import (
    DEFAULT_FILL_TO,
    DEFAULT_READING,
    DEFAULT_TIE_BREAK,
    READINGS,
    TIE_BREAKS,
    check_placement_settings,
    run_experiment,
    summary_at,
)
from ddlx.placement.inputs import PlacementInputs
from ddlx.placement.policies import POLICIES
from ddlx.progress import Progress

#: Arrived-workload levels of the summary table (shares of GPU capacity); a run shows those up to its fill.
LEVELS: tuple[float, ...] = (0.9, 0.95, 1.0, 1.1, 1.2, 1.3)
#: Where the curves start: 50 % of capacity (below it every policy places every task).
CURVE_START = 0.5
#: The policy whose gain the experiment states, and the policies it is compared with.
GAIN_POLICY = "fgd"
#: The file every placement results folder holds: what marks a folder as one ddlx wrote.
EXPERIMENT_FILE = "experiment.json"
RESULTS_FOLDER = "placement results folder"
WRITING = "writing the placement results"


@dataclass
class PlacementExperiment:
    """One fill-up experiment: its inputs, the per-arrival table of every run, the curves, the
    summary at `LEVELS` and the gain of `GAIN_POLICY` over the best other policy."""

    source: dict[str, Any]
    policies: list[str]
    seeds: list[int]
    steps: pl.DataFrame
    curves: pl.DataFrame
    summary: pl.DataFrame
    gain: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=lambda: {
        "fill_to": DEFAULT_FILL_TO, "tie_break": DEFAULT_TIE_BREAK, "reading": DEFAULT_READING})

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "ddlx-placement/1", **({"label": "SYNTHETIC"} if self.source.get("synthetic") else {}),
            "source": self.source, "policies": self.policies, "seeds": self.seeds, "settings": self.settings,
            "definitions": {
                "arrived_workload": "GPUs requested by the tasks arrived so far (placed or not) / GPU capacity",
                "fill_to": "the multiple of the GPU capacity the arrived tasks ask for at the end (the owners' tune)",
                "tie_break": TIE_BREAKS[self.settings["tie_break"]],
                "reading": READINGS[self.settings["reading"]],
                "unallocated_share": "1 - GPUs allocated to placed tasks / GPU capacity",
                "fragmented_share": "the paper's cluster fragmentation (sum over nodes of F_n(M)) / GPU capacity",
            },
            "summary": self.summary.to_dicts(), "gain": self.gain,
            "seconds_per_policy": {p: round(float(s), 3) for p, s in self.steps.group_by("policy").agg(
                pl.col("run_seconds").unique().sum()).iter_rows()},
        }


def default_workers() -> int:
    """Processes for the runs: the cores this process may use (at least one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def levels_up_to(fill_to: float) -> tuple[float, ...]:
    """The levels of `LEVELS` a run filled to `fill_to` x capacity reaches."""
    return tuple(level for level in LEVELS if level <= fill_to + 1e-9)


def curve_levels(fill_to: float = DEFAULT_FILL_TO) -> tuple[float, ...]:
    """Levels of the curves: every whole percent of capacity from `CURVE_START` (or 0 %, for a fill
    below it) to `fill_to`."""
    last = int(round(fill_to * 100, 9))
    first = int(CURVE_START * 100) if last >= CURVE_START * 100 else 0
    return tuple(p / 100 for p in range(first, last + 1))


def run_placement(inputs: PlacementInputs, policies: list[str] | None = None, seeds: int = 10,
                  workers: int | None = None, *, fill_to: float = DEFAULT_FILL_TO,
                  tie_break: str = DEFAULT_TIE_BREAK, reading: str = DEFAULT_READING,
                  progress: Progress | None = None) -> PlacementExperiment:
    """Fill the cluster of `inputs` with its tasks to `fill_to` x its GPU capacity under each of
    `policies` (default: all) for seeds 0..`seeds`-1, score ties broken by `tie_break`, the curves
    and the table read by `reading` (`ddlx.placement.fillup`: `TIE_BREAKS`, `READINGS`;
    `PlacementOptionError` for a setting that is not one of them); `progress` gets a step per run."""
    fill_to, tie_break, reading = check_placement_settings(fill_to, tie_break, reading)
    chosen = list(policies or POLICIES)
    seed_list = list(range(seeds))
    steps = run_experiment(inputs.nodes, inputs.tasks, chosen, seed_list,
                           workers=workers if workers is not None else default_workers(),
                           fill_to=fill_to, tie_break=tie_break, progress=progress)
    curves = curves_of(steps, curve_levels(fill_to), reading)
    experiment = PlacementExperiment(dict(inputs.source), chosen, seed_list, steps, curves,
                                     summary_at(steps, levels_up_to(fill_to), reading=reading),
                                     gain_of(curves, inputs.source.get("gpus")),
                                     {"fill_to": fill_to, "tie_break": tie_break, "reading": reading})
    return experiment


def curves_of(steps: pl.DataFrame, levels: tuple[float, ...] | None = None,
              reading: str = DEFAULT_READING) -> pl.DataFrame:
    """Per policy and arrived-workload level (default `curve_levels()`): mean, min and max over
    seeds of the unallocated GPU share, and the mean fragmented share, each seed read by `reading`."""
    levels = curve_levels() if levels is None else levels
    summary = summary_at(steps, levels, reading=reading).rename(
        {"mean": "unallocated_mean", "min": "unallocated_min", "max": "unallocated_max"})
    fragmented = summary_at(steps, levels, "fragmented_share", reading).select(
        "policy", "level", pl.col("mean").alias("fragmented_mean"))
    return summary.join(fragmented, on=["policy", "level"], how="left").sort("policy", "level")


def cuts_of(means: pl.DataFrame, column: str = "unallocated_mean") -> pl.DataFrame:
    """Per level: `GAIN_POLICY`'s mean unallocated share (`own`), the best other policy's
    (`best_other`, `best`) and the relative cut (best - own) / best, where best is above zero.
    `means` has columns policy, level and `column` (the curves, or a summary's `mean`)."""
    mine = means.filter(pl.col("policy") == GAIN_POLICY).select("level", pl.col(column).alias("own"))
    rivals = (means.filter(pl.col("policy") != GAIN_POLICY).sort(column)
              .group_by("level", maintain_order=True).agg(pl.col("policy").first().alias("best_other"),
                                                          pl.col(column).first().alias("best")))
    both = mine.join(rivals, on="level").filter(pl.col("best") > 0)
    return both.with_columns(((pl.col("best") - pl.col("own")) / pl.col("best")).alias("cut")).sort("level")


def gain_of(curves: pl.DataFrame, gpus: int | None) -> dict[str, Any]:
    """The largest relative cut of `GAIN_POLICY`'s mean unallocated share against the best other
    policy at the same level of the curves (`cuts_of`; the paper's "up to x % fewer unallocated
    GPUs"); empty when the policy or a rival did not run."""
    both = cuts_of(curves)
    if both.is_empty():
        return {}
    top = both.sort("cut", descending=True).row(0, named=True)
    return {"policy": GAIN_POLICY, "level": top["level"], "best_other": top["best_other"],
            "cut_share": top["cut"], "own_unallocated": top["own"], "best_other_unallocated": top["best"],
            "cut_gpus": (top["best"] - top["own"]) * gpus if gpus else None}


def check_experiment_folder(out_dir: Path) -> None:
    """Before the runs: `StorageError` when the results could not be written as the folder `out_dir`
    (`ddlx.outputs.check_output_folder`: a file, a non-empty folder without `experiment.json`, or a
    location where no folder can be made)."""
    from ddlx.outputs import check_output_folder

    check_output_folder(Path(out_dir), (EXPERIMENT_FILE,), RESULTS_FOLDER, WRITING)


def write_experiment(experiment: PlacementExperiment, out_dir: Path) -> list[Path]:
    """Write `steps.parquet`, `curves.parquet`, `summary.parquet` and `experiment.json` as the folder
    `out_dir`, replaced whole (`ddlx.outputs.write_output_folder`: an existing `out_dir` must be
    empty or hold `experiment.json`)."""
    from ddlx.atomic import write_parquet_file
    from ddlx.outputs import write_output_folder

    def build(folder: Path) -> list[Path]:
        for name, frame in (("steps", experiment.steps), ("curves", experiment.curves),
                            ("summary", experiment.summary)):
            write_parquet_file(frame, folder / f"{name}.parquet")
        (folder / EXPERIMENT_FILE).write_text(json.dumps(experiment.to_dict(), indent=2, default=str) + "\n")
        return sorted(p.relative_to(folder) for p in folder.iterdir())

    written = write_output_folder(Path(out_dir), (EXPERIMENT_FILE,), build, RESULTS_FOLDER, WRITING)
    return [Path(out_dir) / p for p in written]
