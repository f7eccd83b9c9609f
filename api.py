"""The Python entry point: `ddlx.open()` returns the `Catalog` of a data home, and everything the
command line does hangs off it, so a notebook and the `ddlx` command give the same numbers.

```python
import ddlx
catalog = ddlx.open()                      # --data-home, else $DDLX_HOME, else the per-user folder
catalog.datasets()                         # what the data home holds (a polars frame)
jobs = catalog.jobs(name)                  # the canonical jobs (a trace not ingested: its SYNTHETIC sample)
result = catalog.analyze(name, ["queueing"])
result.module("queueing").table("by_gpu_bucket")
```

Frames are polars (`.to_pandas()` where pandas is installed). Every method raises the typed errors
of `ddlx.errors` with the one-line message the command line prints.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ddlx.frames import Frame, frame

if TYPE_CHECKING:
    from ddlx.analysis.model import AnalysisResult
    from ddlx.analysis.options import AnalysisOptions
    from ddlx.analysis.reproduce.model import Reproduction
    from ddlx.formats.model import ExportResult
    from ddlx.placement.experiment import PlacementExperiment
    from ddlx.predict.artifacts import Predictor
    from ddlx.predict.training import TrainResult
    from ddlx.reports.notebook import ReportView
    from ddlx.simulate.results import SimulationReport

Progress = Callable[[str], None]


def note(message: str) -> None:
    """The default progress: one line on stderr (a notebook shows it apart from the cell's result)."""
    print(message, file=sys.stderr, flush=True)


def open_catalog(data_home: Path | str | None = None, progress: Progress | None = note) -> Catalog:
    """The catalog of `data_home`, else `$DDLX_HOME`, else the per-user data folder (the same
    resolution as `ddlx --data-home`). `progress` receives ddlx's progress lines (None: silent)."""
    from ddlx.datasets.home import resolve_data_home

    return Catalog(resolve_data_home(data_home), progress)


def report(*results: AnalysisResult, title: str | None = None) -> ReportView:
    """The report of one analysis result (`Catalog.analyze`), or of several traces side by side (as
    `ddlx report compare`): shown inline in a notebook; `.charts()` lists its charts, `.figure(id)` gives
    one as a plotly Figure to restyle and save, `.write(folder)` writes the self-contained page."""
    from ddlx.reports.notebook import report_view

    return report_view(*results, title=title)


@dataclass(frozen=True)
class Catalog:
    """The datasets of one data home (`home`) and what ddlx computes on them."""

    home: Path
    progress: Progress | None = field(default=note, repr=False, compare=False)

    # -- what it holds -------------------------------------------------------------------------

    def datasets(self) -> Frame:
        """One row per dataset: name, kind (trace, imported, sample), synthetic, jobs, version,
        ingested_at, and the home it lives in (a SYNTHETIC sample has its own)."""
        from ddlx.datasets.inventory import status_frame

        return frame(status_frame(self.home))

    def info(self, name: str) -> dict[str, Any]:
        """The manifest of dataset `name`: its tables and rows, input files with sha256, validation."""
        from ddlx.datasets.catalog import registered_dataset

        return registered_dataset(self.home, name).manifest

    def jobs(self, name: str, synthetic: bool = False) -> Frame:
        """The canonical jobs of trace or dataset `name` (`docs/schema.md`), in submission order.
        A registered trace that is not ingested here (or with `synthetic`) gives its SYNTHETIC sample
        (`datasets()` lists it as kind `sample`)."""
        from ddlx.datasets.canonical import jobs_table_name
        from ddlx.datasets.catalog import query
        from ddlx.datasets.sqltext import quote_identifier

        home = self.jobs_home(name, synthetic)
        return frame(query(home, f"SELECT * FROM {quote_identifier(jobs_table_name(name))} "
                                 "ORDER BY submit_time, job_id"))

    def table(self, name: str) -> Frame:
        """Every row of the catalog's table or view `name` (e.g. `jobs`, or a trace's own)."""
        from ddlx.datasets.sqltext import quote_identifier

        return self.sql(f"SELECT * FROM {quote_identifier(name)}")

    def sql(self, query: str) -> Frame:
        """The result of one SQL query (DuckDB's dialect) on the catalog, as `ddlx sql` runs it."""
        from ddlx.datasets.catalog import query as run_query

        return frame(run_query(self.home, query))

    def jobs_home(self, name: str, synthetic: bool = False) -> Path:
        """The data home holding the jobs of `name`: this one, or its SYNTHETIC sample's (generated
        and ingested on first use) for a registered trace not ingested here or with `synthetic`."""
        from ddlx.datasets.synthetic import home_with_jobs_or_sample

        return home_with_jobs_or_sample(self.home, name, synthetic, progress=self.progress)

    # -- what ddlx computes ----------------------------------------------------------------------

    def analyze(self, name: str, modules: Sequence[str] | None = None, synthetic: bool = False,
                options: AnalysisOptions | Mapping[str, Any] | None = None, cache: bool = True) -> AnalysisResult:
        """The characterization modules (default: all) on `name`, as `ddlx analyze`; `options` are
        the modules' settings (`AnalysisOptions`, or a dict of them such as `{"resolution_s": 600}`;
        an unknown name or a bad value is a `UsageError`), `cache` False computes everything."""
        from ddlx.analysis.runner import resolve_modules, run_analysis

        chosen = resolve_modules(modules)
        return run_analysis(self.jobs_home(name, synthetic), name, chosen, progress=self.progress,
                            options=options, cache=cache)

    def reproduce(self, profile: str, dataset: str | None = None, synthetic: bool = False) -> Reproduction:
        """A paper's published figures beside ddlx's values (`ddlx reproduce PROFILE`); its `frame()`
        is the table the command prints."""
        from ddlx.analysis.reproduce import reproduce

        return reproduce(self.home, profile, dataset, use_sample=synthetic, progress=self.progress)

    def simulate(self, name: str, policies: Sequence[str] | str, predictor: Predictor | Path | str | None = None,
                 synthetic: bool = False, **settings: Any) -> SimulationReport:
        """`name`'s jobs replayed on a GPU pool under `policies` (`ddlx simulate`); `settings` are
        those of `ddlx.simulate.simulate_trace` (gpus, cpus, backfill, limit, cluster, tie_break,
        las_thresholds_gpu_s, submitted_from)."""
        from ddlx.simulate import simulate_trace

        loaded = self._predictor(predictor)
        return simulate_trace(self.jobs_home(name, synthetic), name,
                              list(policies) if not isinstance(policies, str) else policies,
                              predictor=loaded, **settings)

    def placement(self, dataset: str | None = None, task_list: str = "default", policies: Sequence[str] | None = None,
                  seeds: int = 10, nodes: str = "gpu", workers: int | None = None,
                  synthetic: bool = False, *, fill_to: float | None = None, tie_break: str | None = None,
                  reading: str | None = None) -> PlacementExperiment:
        """The FGD paper's fill-up experiment on a dataset's nodes and task list (`ddlx placement`),
        filled to `fill_to` x the GPU capacity, ties broken by `tie_break` (random or name), the
        curves read by `reading` (bin-mean or first-reach); None: the owners' settings, 1.3, random
        and bin-mean (docs/placement.md)."""
        from ddlx.analysis.placement_inputs import default_dataset, read_inputs
        from ddlx.placement.experiment import run_placement
        from ddlx.placement.fillup import check_placement_settings

        settings = {key: value for key, value in (("fill_to", fill_to), ("tie_break", tie_break),
                                                  ("reading", reading)) if value is not None}
        check_placement_settings(**settings)
        dataset = dataset or default_dataset()
        inputs = read_inputs(self.jobs_home(dataset, synthetic), dataset, task_list, nodes)
        chosen = list(policies) if policies else None
        if self.progress is not None:
            self.progress(f"{dataset}: filling {inputs.source['gpus']:,} GPUs under "
                          f"{len(chosen) if chosen else 'all'} policies x {seeds} seeds")
        return run_placement(inputs, chosen, seeds, workers, progress=self.progress, **settings)

    def train(self, name: str, out: Path | str | None = None, seed: int = 0, max_fit_rows: int | None = None,
              synthetic: bool = False) -> TrainResult:
        """Job-duration models trained on `name` and written as a model folder (`ddlx predict train`)."""
        from ddlx.predict.models import TrainSettings
        from ddlx.predict.training import train

        settings = TrainSettings(random_state=seed, **({} if max_fit_rows is None else {"max_fit_rows": max_fit_rows}))
        return train(self.jobs_home(name, synthetic), name, Path(out) if out is not None else None, settings,
                     progress=self.progress)

    def predict(self, model: Predictor | Path | str, name: str, synthetic: bool = False) -> Frame:
        """Every job of `name` predicted by `model` (a model folder or a loaded predictor), as
        `ddlx predict apply` writes it: job_id, pred_s, p50_s, p90_s, model_id, ..."""
        predictor = self._predictor(model)
        assert predictor is not None
        return frame(predictor.predict_catalog(self.jobs_home(name, synthetic), name))

    def export(self, name: str, fmt: str, out: Path | str, predictions: Path | str | None = None,
               options: dict[str, str] | None = None, synthetic: bool = False) -> ExportResult:
        """Dataset `name` written in a simulator's format `fmt` with its loss report
        (`ddlx datasets export`)."""
        from ddlx.formats.export import export_dataset

        return export_dataset(self.home, name, fmt, Path(out), synthetic, progress=self.progress,
                              predictions=Path(predictions) if predictions is not None else None,
                              options=options or {})

    @staticmethod
    def _predictor(model: Predictor | Path | str | None) -> Predictor | None:
        if model is None or not isinstance(model, (str, Path)):
            return model
        from ddlx.predict import load_predictor

        return load_predictor(Path(model))

    # -- display -------------------------------------------------------------------------------

    def __repr__(self) -> str:
        return f"ddlx catalog of {self.home}"

    def _repr_html_(self) -> str:
        from ddlx import display

        frame = self.datasets()
        parts = [display.frame_html(frame.drop("home")) if frame.height else "nothing ingested yet"]
        return display.block_html(f"ddlx catalog of {self.home}", parts)
