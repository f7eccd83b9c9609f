"""What a simulation reports: per policy JCT, queueing delay, makespan, GPU utilisation and
preemptions, as a JSON document and a text table. Every metric's definition is written below once.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ddlx import display
from ddlx.analysis.definitions import Definition
from ddlx.atomic import write_text_atomic
from ddlx.datasets.canonical import MILLI
from ddlx.simulate.engine import Schedule
from ddlx.simulate.policies import (
    DEFAULT_TIE_BREAK,
    LAS_DEMOTIONS,
    LAS_PREEMPTIONS,
    LAS_QUEUE_ORDERS,
    LAS_STALE_ENDS,
    TIE_BREAKS,
    Policy,
)
from ddlx.simulate.workload import EXCLUSION_REASONS, Workload

SIMULATION_DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "sim.jct.end_minus_submit", "Job completion time (JCT)", "s",
        "Simulated end of the job minus its submission time, seconds (queueing, preempted time and "
        "run time included). avg is the mean over the simulated jobs; p50 and p95 are quantiles "
        "with linear interpolation between order statistics (numpy's default, DuckDB's "
        "quantile_cont).",
    ),
    Definition(
        "sim.queue_delay.first_start_minus_submit", "Simulated queueing delay", "s",
        "Simulated first start of the job minus its submission time, seconds (time waiting after a "
        "preemption is not included: it is in the JCT). Quantiles as for the JCT.",
    ),
    Definition(
        "sim.makespan.first_submit_to_last_end", "Makespan", "s",
        "From the first simulated submission to the last simulated end, seconds.",
    ),
    Definition(
        "sim.busy_gpu_seconds.integrated", "Busy GPU-seconds", "GPU-s",
        "GPUs held by running jobs integrated over the makespan window: the sum over the intervals "
        "between consecutive events of the busy GPUs times the interval's length. Equals the sum "
        "over jobs of GPUs x run time (the work), preemptions included, up to rounding.",
    ),
    Definition(
        "sim.utilization.busy_over_capacity_window", "Simulated GPU utilisation", "fraction",
        "Busy GPU-seconds divided by (cluster GPUs x makespan): the share of the pool's GPU-time "
        "held by jobs between the first submission and the last end.",
    ),
    Definition(
        "sim.preemptions.count", "Preemptions", "count",
        "Times a running job was stopped to give its GPUs (and CPUs) to a job of higher priority "
        "(las: a job ahead of it in the LAS order, see las_settings; srtf: a job with less remaining time); "
        "a job stopped and started again at the same instant was not stopped. preempted_jobs counts the jobs "
        "stopped at least once. Null for non-preemptive policies.",
    ),
)


def quantile(values: np.ndarray, q: float) -> float:
    """The `q` quantile (0..1) with linear interpolation (numpy default, DuckDB `quantile_cont`)."""
    return float(np.quantile(values, q))


@dataclass
class PolicyResult:
    """Metrics of one policy on one workload (see `SIMULATION_DEFINITIONS`); `schedule` holds the
    per-job start and end times."""

    policy: str
    description: str
    backfill: bool
    metrics: dict[str, Any]
    schedule: Schedule = field(repr=False)
    thresholds_gpu_s: tuple[float, ...] = ()
    las_settings: dict[str, Any] | None = None


def summarize(workload: Workload, policy: Policy, schedule: Schedule) -> PolicyResult:
    """The metrics of `schedule`."""
    jct = schedule.end_s - workload.submit_s
    queue = schedule.first_start_s - workload.submit_s
    makespan = float(schedule.end_s.max())  # the first submission is time 0
    window = workload.capacity.gpus * makespan
    metrics: dict[str, Any] = {
        "jobs": workload.jobs,
        "jct_avg_s": float(jct.mean()),
        "jct_p50_s": quantile(jct, 0.5),
        "jct_p95_s": quantile(jct, 0.95),
        "queue_avg_s": float(queue.mean()),
        "queue_p50_s": quantile(queue, 0.5),
        "queue_p95_s": quantile(queue, 0.95),
        "makespan_s": makespan,
        "busy_gpu_s": schedule.busy_gpu_s,
        "work_gpu_s": float(np.sum(workload.gpu_units() * workload.run_s) / MILLI),
        "gpu_utilization": schedule.busy_gpu_s / window if window > 0 else None,
        "preemptions": schedule.preemptions if policy.preemptive else None,
        "preempted_jobs": schedule.preempted_jobs if policy.preemptive else None,
    }
    if policy.las_stale_ends:
        metrics["jobs_ended_early"] = schedule.ended_early
    return PolicyResult(policy.name, policy.description, schedule.backfill, metrics, schedule,
                        policy.thresholds_gpu_s, policy.las_settings())


@dataclass
class SimulationReport:
    """Several policies run on one workload."""

    workload: Workload
    backfill: bool
    results: list[PolicyResult]
    estimates: dict[str, Any] | None = None
    tie_break: str = DEFAULT_TIE_BREAK

    def cpu_model(self) -> dict[str, Any]:
        """Whether CPUs were modelled, the pool's cores and the rule (the JSON's `cpus`)."""
        workload = self.workload
        if not workload.models_cpus:
            return {"modelled": False, "cores": None, "requests_missing": None,
                    "rule": "CPUs are not modelled: only GPUs limit when a job starts (give --cpus N to model them)"}
        return {"modelled": True, "cores": workload.cpu_capacity, "requests_missing": workload.cpu_requests_missing,
                "rule": "a job starts only when both its GPUs and its CPU cores (num_cpus, counted in thousandths "
                        f"of a core) fit in the free ones of the pool of {workload.cpu_capacity:g} cores; a job "
                        "without a CPU request asks for none",
                "units_per_core": MILLI}

    def result(self, policy: str) -> PolicyResult:
        return next(r for r in self.results if r.policy == policy)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document: the workload, the cluster, and per policy its metrics."""
        from ddlx import __version__

        workload = self.workload
        origin = (datetime.fromtimestamp(workload.origin_epoch_s, tz=timezone.utc).isoformat()
                  if workload.origin_epoch_s is not None else None)
        las = next((r for r in self.results if r.thresholds_gpu_s), None)
        return {
            "simulator": "ddlx.simulate",
            "ddlx_version": __version__,
            "trace": workload.source.get("trace"),
            "cluster": workload.source.get("cluster"),
            "synthetic": workload.source.get("synthetic"),
            "cluster_model": "one pool of GPUs, no nodes; requests counted in thousandths of a GPU",
            "capacity": asdict(workload.capacity),
            "cpus": self.cpu_model(),
            "backfill": self.backfill,
            "tie_break": {"rule": self.tie_break, "description": TIE_BREAKS[self.tie_break]},
            "workload": {
                "jobs_considered": workload.jobs_considered,
                "jobs_simulated": workload.jobs,
                "excluded": dict(workload.excluded),
                "exclusion_reasons": {key: EXCLUSION_REASONS[key] for key in workload.excluded},
                "first_submission_utc": origin,
                "submitted_from_utc": workload.source.get("submitted_from_utc"),
                "work_gpu_s": float(np.sum(workload.gpu_units() * workload.run_s) / MILLI),
            },
            "las_thresholds_gpu_s": list(las.thresholds_gpu_s) if las else None,
            "las_settings": _las_settings(las.las_settings) if las and las.las_settings else None,
            "estimates": self.estimates,
            "policies": [{"policy": r.policy, "description": r.description, "backfill": r.backfill, **r.metrics}
                         for r in self.results],
            "definitions": [asdict(d) for d in SIMULATION_DEFINITIONS],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n"

    def _title(self) -> str:
        workload = self.workload
        return (f"simulation of {workload.source.get('trace')}: {workload.jobs:,} jobs on "
                f"{workload.capacity.gpus:,g} GPUs ({workload.capacity.source}), "
                f"{'backfill' if self.backfill else 'no backfill'}, ties by {self.tie_break}")

    def __repr__(self) -> str:
        table = self.table()
        lines = [", ".join(f"{column} {display.cell_text(value)}" for column, value in row.items())
                 for row in table.iter_rows(named=True)]
        return display.text_lines(self._title(), lines, bool(self.workload.source.get("synthetic")))

    def _repr_html_(self) -> str:
        notes = [display.frame_html(self.table()), display.table_html(
            ("definition", "meaning"), [(d.id, d.text) for d in SIMULATION_DEFINITIONS])]
        return display.block_html(self._title(), notes, bool(self.workload.source.get("synthetic")),
                                  subtitle="JCT and queueing delay in seconds; the JSON of `ddlx simulate --out`: "
                                           "report.to_dict()")

    def table(self) -> pl.DataFrame:
        """One row per policy: jobs, JCT and queueing delay (avg, p50, p95, s), makespan (s),
        GPU utilisation (%) and preemptions."""
        rows = []
        for r in self.results:
            m = r.metrics
            rows.append({
                "policy": r.policy, "jobs": m["jobs"],
                "jct_avg_s": m["jct_avg_s"], "jct_p50_s": m["jct_p50_s"], "jct_p95_s": m["jct_p95_s"],
                "queue_avg_s": m["queue_avg_s"], "queue_p50_s": m["queue_p50_s"], "queue_p95_s": m["queue_p95_s"],
                "makespan_s": m["makespan_s"],
                "gpu_util_pct": None if m["gpu_utilization"] is None else round(100 * m["gpu_utilization"], 2),
                "preemptions": m["preemptions"],
            })
        return pl.DataFrame(rows, schema_overrides={"preemptions": pl.Int64, "gpu_util_pct": pl.Float64})


def _las_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The JSON's `las_settings`: each LAS setting with the rule it names."""
    described = {"demotion": LAS_DEMOTIONS, "queue_order": LAS_QUEUE_ORDERS, "preemption": LAS_PREEMPTIONS}
    chosen = {key: {"rule": settings[key], "description": rules[settings[key]]} for key, rules in described.items()}
    chosen["stale_ends"] = {"on": settings["stale_ends"], "description": LAS_STALE_ENDS}
    return chosen


def write_json(report: SimulationReport, path: Path) -> Path:
    """Write the report's JSON to `path` atomically (a temporary file in the same folder, renamed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, report.to_json())
    return path
