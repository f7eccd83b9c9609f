"""The simulator's workload: a trace's canonical jobs turned into arrays, and the cluster size.

A job is simulated when it has a submission time, a GPU request above zero that fits in the
cluster and a run time above zero (`run_s`, definition `runtime.first_start_to_last_end`, the
oracle duration). Every other job is left out and counted under the first reason that applies, in the
order of `EXCLUSION_REASONS`. Submission times are replayed as recorded, in seconds from the first
simulated submission; jobs are ordered by submission time, then job id (missing ids last).

GPU requests keep their fractions (some traces ask for parts of a GPU): the engine counts GPUs in
thousandths (`MILLI`), a request rounded to the nearest thousandth, and never below one.

CPUs are modelled only when a CPU capacity is given (`cpus`, total cores of the pool): each job
then also asks for its canonical `num_cpus` (cores of the whole job), counted in thousandths of a
core (`MILLI`), rounded to the nearest; a job without a CPU request (missing,
not a number, or below 0) asks for none and is counted in `cpu_requests_missing`; a job asking
for more cores than the pool is left out (`larger_than_cluster_cpus`). Without a CPU capacity the
CPU requests are not read at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

import numpy as np
import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.datasets.canonical import MILLI
from ddlx.datasets.sqltext import sql_string
from ddlx.errors import DdlxError

#: Why a job is not simulated, in the order the reasons are tested (a job counts under the first).
EXCLUSION_REASONS: dict[str, str] = {
    "no_submit_time": "no submission time",
    "before_window": "submitted before the simulated window (e.g. the predictor's training and validation jobs)",
    "no_gpu_count": "GPU request missing",
    "cpu_only": "no GPU requested (0 GPUs: CPU-only job)",
    "no_run_time": "no run time (never started, still running, or no end)",
    "zero_run_time": "run time of 0 s or less",
    "larger_than_cluster": "asks for more GPUs than the cluster has",
    "larger_than_cluster_cpus": "asks for more CPU cores than the cluster has (only when CPUs are modelled)",
    "after_limit": "left out by the job limit (later submissions)",
}


class SimulationError(DdlxError):
    """The simulator cannot run as asked: no capacity, no jobs, bad estimates, unknown policy."""


@dataclass(frozen=True)
class Capacity:
    """The cluster size the simulator uses: `gpus` GPUs, where it came from and by which rule."""

    gpus: float
    source: str
    rule: str


@dataclass
class Workload:
    """Jobs in submission order (then job id), as parallel arrays.

    `submit_s`: seconds from the first simulated submission (so the first is 0); `gpus`: GPUs the
    job asks for (fractions allowed); `run_s`: the oracle run time, seconds; `job_ids`: the
    trace's ids (None where it has none); `estimate_s`: optional predicted run times, seconds, for
    `sjf-predicted`; `origin_epoch_s`: Unix time of the first simulated submission (None for a
    hand-made workload); `excluded`: jobs left out per reason of `EXCLUSION_REASONS`;
    `jobs_considered`: jobs looked at (simulated + excluded); `canonical`: the canonical rows of
    the simulated jobs, in the same order, when asked for (a predictor needs them).
    `cpus`: CPU cores each job asks for and `cpu_capacity`: cores of the pool, both None when CPUs
    are not modelled; `cpu_requests_missing`: simulated jobs without a CPU request (counted as 0).
    """

    submit_s: np.ndarray
    gpus: np.ndarray
    run_s: np.ndarray
    job_ids: list[str | None]
    capacity: Capacity
    excluded: dict[str, int]
    jobs_considered: int
    origin_epoch_s: float | None = None
    estimate_s: np.ndarray | None = None
    canonical: pl.DataFrame | None = None
    source: dict[str, Any] = field(default_factory=dict)
    cpus: np.ndarray | None = None
    cpu_capacity: float | None = None
    cpu_requests_missing: int = 0

    @property
    def jobs(self) -> int:
        return int(self.submit_s.shape[0])

    def gpu_units(self) -> np.ndarray:
        """Requests in thousandths of a GPU (int64): rounded to the nearest, at least 1."""
        return np.maximum(np.rint(self.gpus * MILLI), 1).astype(np.int64)

    def capacity_units(self) -> int:
        return int(round(self.capacity.gpus * MILLI))

    @property
    def models_cpus(self) -> bool:
        """True when CPU capacity is modelled beside the GPUs."""
        return self.cpus is not None and self.cpu_capacity is not None

    def cpu_units(self) -> np.ndarray:
        """CPU requests in thousandths of a core (int64), rounded to the nearest; zeros when CPUs are
        not modelled."""
        if self.cpus is None:
            return np.zeros(self.jobs, dtype=np.int64)
        return np.rint(self.cpus * MILLI).astype(np.int64)

    def cpu_capacity_units(self) -> int:
        """The pool's cores in thousandths of a core (0 when CPUs are not modelled)."""
        return int(round(self.cpu_capacity * MILLI)) if self.cpu_capacity is not None else 0

    def with_estimates(self, estimate_s: np.ndarray) -> "Workload":
        """The same workload carrying `estimate_s` (one predicted run time per job, seconds)."""
        estimates = np.asarray(estimate_s, dtype=np.float64)
        check_estimates(estimates, self.jobs)
        return replace(self, estimate_s=estimates)


def check_estimates(estimates: np.ndarray, jobs: int) -> None:
    """`SimulationError` unless `estimates` holds one finite value of 0 or more per job."""
    if estimates.ndim != 1 or estimates.shape[0] != jobs:
        raise SimulationError(f"run-time estimates: expected one per simulated job ({jobs:,}), got "
                              f"{estimates.shape[0] if estimates.ndim == 1 else estimates.shape}")
    bad = int(np.count_nonzero(~np.isfinite(estimates) | (estimates < 0)))
    if bad:
        raise SimulationError(f"run-time estimates: {bad:,} of {jobs:,} are missing, not finite or negative "
                              "(expected seconds, 0 or more)")


def build_workload(frame: pl.DataFrame, capacity: Capacity, limit: int | None = None,
                   keep_canonical: bool = False, source: dict[str, Any] | None = None,
                   submitted_from_s: float | None = None, cpus: float | None = None) -> Workload:
    """A `Workload` from a frame with `job_id`, `submit_s` (any origin, seconds), `run_s`,
    `num_gpus` and optionally `estimate_s`: exclusions counted, order set, `limit` applied.

    `submitted_from_s` (same origin as `submit_s`) leaves out the jobs submitted before it: the
    simulation then starts from an empty cluster at the first later submission.
    With `keep_canonical`, the other columns of the simulated rows are kept as `canonical`.
    `cpus` (total CPU cores of the pool) models CPUs too: the frame then needs `num_cpus` (cores).
    """
    if capacity.gpus <= 0:
        raise SimulationError(f"cluster size must be above 0 GPUs, got {capacity.gpus:g}")
    if limit is not None and limit < 1:
        raise SimulationError(f"job limit must be 1 or more, got {limit}")
    check_cpu_capacity(cpus)
    if cpus is not None and "num_cpus" not in frame.columns:
        raise SimulationError("modelling CPUs needs each job's CPU request (column num_cpus)")
    submit, run, gpus = pl.col("submit_s"), pl.col("run_s"), pl.col("num_gpus")
    before = submit < submitted_from_s if submitted_from_s is not None else pl.lit(False)
    if cpus is not None:
        frame = frame.with_columns(pl.col("num_cpus").cast(pl.Float64))
        cores = pl.col("num_cpus")
        asked = pl.when(cores.is_null() | cores.is_nan() | (cores < 0)).then(0.0).otherwise(cores)
        too_many_cpus = asked > cpus
    else:
        too_many_cpus = pl.lit(False)
    reason = (pl.when(submit.is_null() | submit.is_nan()).then(pl.lit("no_submit_time"))
              .when(before).then(pl.lit("before_window"))
              .when(gpus.is_null() | gpus.is_nan()).then(pl.lit("no_gpu_count"))
              .when(gpus <= 0).then(pl.lit("cpu_only"))
              .when(run.is_null() | run.is_nan()).then(pl.lit("no_run_time"))
              .when(run <= 0).then(pl.lit("zero_run_time"))
              .when(gpus > capacity.gpus).then(pl.lit("larger_than_cluster"))
              .when(too_many_cpus).then(pl.lit("larger_than_cluster_cpus"))
              .otherwise(pl.lit(None, dtype=pl.String)))
    frame = frame.with_columns(pl.col("submit_s", "run_s", "num_gpus").cast(pl.Float64),
                               pl.col("job_id").cast(pl.String))
    tagged = frame.with_columns(reason.alias("_reason"))
    counts = dict(tagged.group_by("_reason").len().drop_nulls("_reason").iter_rows())
    kept = (tagged.filter(pl.col("_reason").is_null()).drop("_reason")
            .sort(["submit_s", "job_id"], nulls_last=True, maintain_order=True))
    excluded = {key: int(counts.get(key, 0)) for key in EXCLUSION_REASONS
                if cpus is not None or key != "larger_than_cluster_cpus"}
    if limit is not None and kept.height > limit:
        excluded["after_limit"] = kept.height - limit
        kept = kept.head(limit)
    if kept.height == 0:
        shown = ", ".join(f"{EXCLUSION_REASONS[k]}: {v:,}" for k, v in excluded.items() if v) or "no jobs at all"
        raise SimulationError(f"no job to simulate ({shown})")
    absolute = kept["submit_s"].to_numpy().astype(np.float64)
    origin = float(absolute[0])
    estimates = None
    if "estimate_s" in kept.columns:
        estimates = kept["estimate_s"].cast(pl.Float64).fill_null(float("nan")).to_numpy().astype(np.float64)
        check_estimates(estimates, kept.height)
    canonical = None
    if keep_canonical:
        canonical = kept.drop([c for c in ("submit_s", "estimate_s") if c in kept.columns])
    cpu_requests, missing_cpus = None, 0
    if cpus is not None:
        raw = kept["num_cpus"].fill_null(float("nan")).to_numpy().astype(np.float64)
        usable = np.isfinite(raw) & (raw >= 0)
        missing_cpus = int(np.count_nonzero(~usable))
        cpu_requests = np.where(usable, raw, 0.0)
    return Workload(
        submit_s=absolute - origin,
        gpus=kept["num_gpus"].to_numpy().astype(np.float64),
        run_s=kept["run_s"].to_numpy().astype(np.float64),
        job_ids=kept["job_id"].to_list(),
        capacity=capacity,
        excluded=excluded,
        jobs_considered=frame.height,
        origin_epoch_s=origin,
        estimate_s=estimates,
        canonical=canonical,
        source=dict(source or {}),
        cpus=cpu_requests,
        cpu_capacity=float(cpus) if cpus is not None else None,
        cpu_requests_missing=missing_cpus,
    )


def check_cpu_capacity(cpus: float | None) -> None:
    """`SimulationError` unless `cpus` is None (CPUs not modelled) or a finite number of cores above 0."""
    if cpus is not None and not (np.isfinite(cpus) and cpus > 0):
        raise SimulationError(f"CPU capacity must be above 0 cores, got {cpus:g}")


def workload_from_arrays(submit_s: Any, gpus: Any, run_s: Any, capacity_gpus: float,
                         job_ids: list[str | None] | None = None, estimate_s: Any = None,
                         limit: int | None = None, cpus: Any = None,
                         capacity_cpus: float | None = None) -> Workload:
    """A hand-made `Workload`: submission times (seconds), GPUs and run times (seconds) per job,
    and the cluster size in GPUs; ids default to "0", "1", ... in the given order. With
    `capacity_cpus` (cores of the pool), `cpus` gives each job's CPU request (cores)."""
    if (cpus is None) != (capacity_cpus is None):
        raise SimulationError("give both the jobs' CPU requests and the pool's CPU capacity, or neither")
    submit = np.asarray(submit_s, dtype=np.float64)
    count = submit.shape[0]
    columns: dict[str, Any] = {
        "job_id": job_ids if job_ids is not None else [str(i) for i in range(count)],
        "submit_s": submit,
        "run_s": np.asarray(run_s, dtype=np.float64),
        "num_gpus": np.asarray(gpus, dtype=np.float64),
    }
    if estimate_s is not None:
        columns["estimate_s"] = np.asarray(estimate_s, dtype=np.float64)
    if cpus is not None:
        columns["num_cpus"] = np.asarray(cpus, dtype=np.float64)
    frame = pl.DataFrame(columns, schema_overrides={"job_id": pl.String})
    workload = build_workload(frame, Capacity(float(capacity_gpus), "given", "given by the caller"), limit=limit,
                              cpus=capacity_cpus)
    workload.origin_epoch_s = None
    return workload


def trace_capacity(ctx: TraceContext, cluster: str | None = None) -> Capacity:
    """The GPUs of the trace's cluster by the catalog (`ddlx.analysis.capacity.gpu_capacity`).

    Rule: the trace's preferred capacity source that has rows (`capacity.capacity_sources`; rows of
    `cluster` only, when given). A source with one capacity for the whole trace gives the sum of
    its rows (over GPU types, VCs, clusters); a source with dated rows (e.g. per VC per day)
    gives the largest total of any one day (summed over clusters and VCs).
    `SimulationError` when the trace documents none (imported tables): give the size instead.
    """
    from ddlx.analysis.capacity import capacity_sources, gpu_capacity

    rows = gpu_capacity(ctx)
    if cluster is not None:
        rows = rows.filter(pl.col("cluster") == cluster)
    present = set(rows["source"].to_list())
    chosen = next((s for s in capacity_sources(ctx) if s in present), None)
    if chosen is None:
        where = f"cluster '{cluster}' of '{ctx.trace}'" if cluster is not None else f"'{ctx.trace}'"
        raise SimulationError(f"{where} documents no GPU capacity in the catalog; give the cluster size "
                              "with --gpus N")
    rows = rows.filter(pl.col("source") == chosen)
    if rows["valid_from"].null_count() == rows.height:
        return Capacity(float(rows["gpus"].sum()), chosen,
                        f"capacity.{chosen}: the sum of its rows (one capacity for the whole trace)")
    daily = rows.group_by("valid_from").agg(pl.col("gpus").sum()).sort(["gpus", "valid_from"], descending=[True, False])
    return Capacity(float(daily["gpus"][0]), chosen,
                    f"capacity.{chosen}: the largest daily total over clusters and VCs "
                    f"(day starting {daily['valid_from'][0].isoformat()})")


#: Columns the workload needs from the canonical jobs (submission as Unix seconds).
_WORKLOAD_COLUMNS = "job_id, epoch(submit_time) AS submit_s, run_s, num_gpus"

#: Total order of canonical rows: rows equal on all these keys are interchangeable for the simulator.
_ROW_ORDER = ("submit_time NULLS LAST, job_id NULLS LAST, cluster NULLS LAST, run_s NULLS LAST, "
              "num_gpus NULLS LAST, \"user\" NULLS LAST, vc NULLS LAST")


def load_workload(ctx: TraceContext, capacity: Capacity, limit: int | None = None, cluster: str | None = None,
                  keep_canonical: bool = False, submitted_from_s: float | None = None,
                  estimates: Callable[[pl.DataFrame], np.ndarray] | None = None,
                  cpus: float | None = None) -> Workload:
    """The workload of one trace of the catalog (of one `cluster` of it, when given).

    `keep_canonical` also keeps every canonical column of the simulated jobs. `estimates`, given
    the canonical rows of all the trace's (or cluster's) jobs in submission order, returns a run-time
    estimate per row (seconds): a predictor sees every job, so that its history features are
    whole also when `limit` or `submitted_from_s` (Unix seconds) keep only some of them.
    `cpus` (total cores of the pool) models CPUs: each job's canonical `num_cpus` is read too.
    """
    where = ""
    if cluster is not None:
        clusters = ctx.query(f"SELECT DISTINCT cluster FROM {ctx.jobs} ORDER BY cluster")["cluster"].to_list()
        if cluster not in clusters:
            raise SimulationError(f"'{ctx.trace}' has no cluster '{cluster}'; its clusters: "
                                  + ", ".join(str(c) for c in clusters))
        where = f"WHERE cluster = {sql_string(cluster)}"
    canonical = keep_canonical or estimates is not None
    base = f"{_WORKLOAD_COLUMNS}, num_cpus" if cpus is not None else _WORKLOAD_COLUMNS
    excluded = "job_id, run_s, num_gpus, num_cpus" if cpus is not None else "job_id, run_s, num_gpus"
    columns = f"{base}, * EXCLUDE ({excluded})" if canonical else base
    frame = ctx.query(f"SELECT {columns} FROM {ctx.jobs} {where} ORDER BY {_ROW_ORDER}")
    # The canonical column order of docs/schema.md.
    order = ctx.query(f"SELECT * FROM {ctx.jobs} LIMIT 0").columns
    if estimates is not None:
        frame = frame.with_columns(pl.Series("estimate_s", estimates(frame.select(order)), dtype=pl.Float64))
    source = {"trace": ctx.trace, "cluster": cluster, "synthetic": ctx.synthetic}
    if submitted_from_s is not None:
        source["submitted_from_utc"] = datetime.fromtimestamp(submitted_from_s, tz=timezone.utc).isoformat()
    workload = build_workload(frame, capacity, limit=limit, keep_canonical=keep_canonical, source=source,
                              submitted_from_s=submitted_from_s, cpus=cpus)
    if workload.canonical is not None:
        workload.canonical = workload.canonical.select(order)
    return workload
