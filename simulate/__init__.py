"""Trace-driven simulation of a GPU cluster: replay a trace's jobs under fifo, sjf-oracle,
sjf-predicted, las, srtf or srtf-predicted, with or without backfilling, optionally with CPU
capacity beside the GPUs, and compare JCT, queueing delay and utilisation.

    from ddlx.simulate import simulate_trace
    report = simulate_trace(home, trace, ["fifo", "sjf-oracle"], gpus=None, backfill=True)
    report.table(); report.to_json()

Hand-made workloads: `workload_from_arrays(...)` then `simulate(workload, ["fifo"])`.
See docs/simulate.md for the cluster model, each policy and every metric.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import polars as pl

from ddlx.datasets.canonical import MILLI
from ddlx.simulate.engine import Schedule, simulate_policy
from ddlx.simulate.policies import (
    DEFAULT_LAS_DEMOTION,
    DEFAULT_LAS_PREEMPTION,
    DEFAULT_LAS_QUEUE_ORDER,
    DEFAULT_TIE_BREAK,
    LAS_DEMOTIONS,
    LAS_PREEMPTIONS,
    LAS_QUEUE_ORDERS,
    LAS_STALE_ENDS,
    LAS_THRESHOLDS_GPU_S,
    POLICIES,
    TIE_BREAKS,
    TIRESIAS_LAS,
    TIRESIAS_LAS_THRESHOLDS_GPU_S,
    Policy,
    check_las_settings,
    check_tie_break,
    las_policy,
    resolve_policies,
)
from ddlx.simulate.results import SIMULATION_DEFINITIONS, PolicyResult, SimulationReport, summarize, write_json
from ddlx.simulate.workload import (
    EXCLUSION_REASONS,
    Capacity,
    SimulationError,
    Workload,
    build_workload,
    check_cpu_capacity,
    load_workload,
    trace_capacity,
    workload_from_arrays,
)

__all__ = [
    "DEFAULT_TIE_BREAK", "EXCLUSION_REASONS", "LAS_DEMOTIONS",
    "LAS_PREEMPTIONS", "LAS_QUEUE_ORDERS", "LAS_STALE_ENDS", "LAS_THRESHOLDS_GPU_S", "MILLI",
    "POLICIES", "SIMULATION_DEFINITIONS", "TIE_BREAKS", "TIRESIAS_LAS", "TIRESIAS_LAS_THRESHOLDS_GPU_S",
    "Capacity", "Policy", "PolicyResult", "Predictor", "Schedule", "SimulationError", "SimulationReport",
    "Workload", "build_workload", "check_las_settings", "check_tie_break", "estimates_from_predictor", "las_policy",
    "load_workload",
    "predicted_run_times", "resolve_policies",
    "simulate", "simulate_policy", "simulate_trace", "summarize", "trace_capacity", "workload_from_arrays",
    "write_json",
]

class Predictor(Protocol):
    """What sjf-predicted needs of a predictor: `predict(jobs)` on canonical job rows returning a
    frame with `job_id` and `pred_s` (predicted run time, seconds), and optionally `model_id`."""

    def predict(self, jobs: pl.DataFrame) -> pl.DataFrame: ...


def _as_policies(policies: list[str | Policy] | str | Policy,
                 las_thresholds_gpu_s: tuple[float, ...] | None = None, las_demotion: str | None = None,
                 las_queue_order: str | None = None, las_preemption: str | None = None,
                 las_stale_ends: bool = False) -> list[Policy]:
    items = [policies] if isinstance(policies, (str, Policy)) else list(policies)
    check_las_settings(las_demotion or DEFAULT_LAS_DEMOTION, las_queue_order or DEFAULT_LAS_QUEUE_ORDER,
                       las_preemption or DEFAULT_LAS_PREEMPTION)
    chosen: list[Policy] = []
    for item in items:
        policy = item if isinstance(item, Policy) else resolve_policies(
            [item], las_thresholds_gpu_s, las_demotion, las_queue_order, las_preemption, las_stale_ends)[0]
        if policy.name not in {p.name for p in chosen}:
            chosen.append(policy)
    if not chosen:
        raise SimulationError(f"no policy given; expected one or more of {', '.join(POLICIES)}")
    return chosen


def _needing_estimates(chosen: list[Policy]) -> str | None:
    """The first policy of `chosen` that orders by predicted run times, by name; None when none does."""
    return next((p.name for p in chosen if p.needs_estimates), None)


def _check_cpu_policies(chosen: list[Policy]) -> None:
    las = next((p.name for p in chosen if p.thresholds_gpu_s), None)
    if las:
        raise SimulationError(f"{las} does not model CPUs; run it without a CPU capacity (--cpus)")


def simulate(workload: Workload, policies: list[str | Policy] | str | Policy, backfill: bool = True,
             las_thresholds_gpu_s: tuple[float, ...] | None = None,
             estimates: dict[str, Any] | None = None, tie_break: str = DEFAULT_TIE_BREAK,
             las_demotion: str | None = None, las_queue_order: str | None = None,
             las_preemption: str | None = None, las_stale_ends: bool = False) -> SimulationReport:
    """Run each policy on the same workload; a `SimulationReport` (metrics per policy).

    `estimates` describes where `workload.estimate_s` came from (kept in the JSON); `tie_break`
    (one of `TIE_BREAKS`) orders jobs whose keys are equal. `las` named by its name takes
    `las_thresholds_gpu_s` and the LAS settings `las_demotion` (`LAS_DEMOTIONS`), `las_queue_order`
    (`LAS_QUEUE_ORDERS`) and `las_preemption` (`LAS_PREEMPTIONS`), None meaning the default, and
    `las_stale_ends` (`LAS_STALE_ENDS`, a defect of Tiresias' simulator); a `Policy` given keeps its
    own (`las_policy(**TIRESIAS_LAS)`: Tiresias' dlas-gpu)."""
    check_tie_break(tie_break)
    chosen = _as_policies(policies, las_thresholds_gpu_s, las_demotion, las_queue_order, las_preemption,
                          las_stale_ends)
    wanting = _needing_estimates(chosen)
    if wanting and workload.estimate_s is None:
        raise SimulationError(f"{wanting} needs run-time estimates: a predictor (--predictor DIR) or an "
                              "estimates column")
    if workload.models_cpus:
        _check_cpu_policies(chosen)
    results = [summarize(workload, p, simulate_policy(workload, p, backfill, tie_break)) for p in chosen]
    return SimulationReport(workload, backfill, results, estimates, tie_break)


def estimates_from_predictor(predictor: Predictor, workload: Workload) -> tuple[np.ndarray, dict[str, Any]]:
    """Predicted run times (seconds) of the workload's jobs from `predictor`, in the workload's
    order, and a description of them (model ids, count). The workload must keep its canonical rows,
    which are all the predictor sees (see `simulate_trace` for predictions with the whole trace).
    """
    if workload.canonical is None:
        raise SimulationError("the workload was loaded without its canonical rows; a predictor needs them")
    return predicted_run_times(predictor, workload.canonical)


def predicted_run_times(predictor: Predictor, jobs: pl.DataFrame,
                        require_all: bool = True) -> tuple[np.ndarray, dict[str, Any]]:
    """Predicted run times (seconds, NaN where none) of the canonical rows `jobs` from `predictor`,
    in their order, and a description of them (model ids, count). With `require_all`, a row without
    a usable prediction is a `SimulationError` (else the simulator refuses it only if simulated).

    Predictions are matched to jobs by position when the predictor returns the rows in the order
    given (same job ids), else by `job_id` (which must then be unique and present in both).
    """
    predictions = predictor.predict(jobs)
    if not isinstance(predictions, pl.DataFrame) or not {"job_id", "pred_s"} <= set(predictions.columns):
        raise SimulationError("the predictor's output must be a polars DataFrame with columns job_id and pred_s")
    ids = jobs["job_id"].cast(pl.String)
    returned = predictions["job_id"].cast(pl.String)
    if predictions.height == jobs.height and ids.eq_missing(returned).all():
        values = predictions["pred_s"]
    else:
        if ids.null_count() or ids.n_unique() != ids.len() or returned.n_unique() != returned.len():
            raise SimulationError("the predictor returned its predictions in another order and the job ids are "
                                  "missing or not unique, so they cannot be matched to the jobs")
        matched = pl.DataFrame({"job_id": ids}).join(
            predictions.select(pl.col("job_id").cast(pl.String), "pred_s"), on="job_id", how="left",
            maintain_order="left")
        values = matched["pred_s"]
    estimates = values.cast(pl.Float64).fill_null(float("nan")).to_numpy().astype(np.float64)
    missing = int(np.count_nonzero(~np.isfinite(estimates)))
    if missing and require_all:
        raise SimulationError(f"the predictor gave no usable prediction for {missing:,} of {jobs.height:,} jobs")
    model_ids = (sorted(str(m) for m in predictions["model_id"].unique().drop_nulls().to_list())
                 if "model_id" in predictions.columns else [])
    return estimates, {"source": "predictor", "model_ids": model_ids, "jobs": int(jobs.height)}


def simulate_trace(home: Path, trace: str, policies: list[str | Policy] | str | Policy, backfill: bool = True,
                   gpus: float | None = None, limit: int | None = None, cluster: str | None = None,
                   predictor: Predictor | None = None, las_thresholds_gpu_s: tuple[float, ...] | None = None,
                   predictor_label: str | None = None, submitted_from: datetime | None = None,
                   cpus: float | None = None, tie_break: str = DEFAULT_TIE_BREAK, las_demotion: str | None = None,
                   las_queue_order: str | None = None, las_preemption: str | None = None,
                   las_stale_ends: bool = False) -> SimulationReport:
    """Simulate a trace (or imported dataset) of the catalog of `home`.

    Cluster size: `gpus` when given, else the catalog's (`trace_capacity`). `cpus` (total CPU
    cores of the pool) models CPUs too, from each job's `num_cpus`; without it CPUs are not
    modelled. `tie_break` (one of `TIE_BREAKS`) orders jobs whose keys are equal. `submitted_from` (an
    aware datetime) leaves out the jobs submitted before it; `limit` then keeps the first jobs by
    submission; `cluster` restricts jobs and capacity to one cluster of the trace. `predictor`
    gives the estimates of sjf-predicted, computed with every job of the trace (or cluster) handed
    to it, so that its history features see the jobs before the simulated ones. `las_thresholds_gpu_s`,
    `las_demotion`, `las_queue_order`, `las_preemption` and `las_stale_ends` set `las` as in `simulate`.
    """
    from ddlx.analysis.context import open_trace

    check_tie_break(tie_break)
    chosen = _as_policies(policies, las_thresholds_gpu_s, las_demotion, las_queue_order, las_preemption,
                          las_stale_ends)
    wanting = _needing_estimates(chosen)
    wants_estimates = wanting is not None
    if wanting and predictor is None:
        raise SimulationError(f"{wanting} needs run-time estimates: give a predictor (--predictor DIR)")
    if gpus is not None and not gpus > 0:
        raise SimulationError(f"cluster size must be above 0 GPUs, got {gpus:g}")
    check_cpu_capacity(cpus)
    if cpus is not None:
        _check_cpu_policies(chosen)
    if submitted_from is not None and submitted_from.tzinfo is None:
        raise SimulationError("the start of the simulated window needs a time zone (UTC)")
    described: dict[str, Any] | None = None

    def estimates(jobs: pl.DataFrame) -> np.ndarray:
        nonlocal described
        assert predictor is not None
        values, described = predicted_run_times(predictor, jobs, require_all=False)
        if predictor_label:
            described["path"] = predictor_label
        return values

    with open_trace(Path(home), trace) as ctx:
        capacity = (Capacity(float(gpus), "given", "given by the user (--gpus)") if gpus is not None
                    else trace_capacity(ctx, cluster))
        workload = load_workload(ctx, capacity, limit=limit, cluster=cluster,
                                 submitted_from_s=submitted_from.timestamp() if submitted_from else None,
                                 estimates=estimates if wants_estimates else None, cpus=cpus)
    if described is not None:
        described["jobs_given_to_predictor"] = described["jobs"]
        described["jobs"] = workload.jobs
    return simulate(workload, chosen, backfill, estimates=described, tie_break=tie_break)
