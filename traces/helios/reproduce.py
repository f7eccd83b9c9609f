"""Published figures of the SenseTime Helios trace (profile `helios-sc21`): the clusters and GPU jobs
the SC'21 paper characterises, as the owners' per-cluster summary (HeliosArtifact
`helios_cluster_summary.csv`) gives them, and the paper's QSSF result on Philly.

Every count reads the stored tables `helios_cluster_log` (one row per job, the raw `state`,
`duration` and `queue` as the release writes them; the owners' summary was computed from these
columns, not from ddlx's canonical jobs) and `helios_vc_capacity` (the cluster_gpu_number.csv files).
A figure over the whole datacenter needs all four clusters in the catalog; a per-cluster figure
needs its cluster. Otherwise it is not computable here, naming what is missing.
"""

from __future__ import annotations

import math

from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.reproduce.model import EXACT, NotComputable, Profile, PublishedFigure, require_tables, rounded
from ddlx.datasets.sqltext import sql_string
from ddlx.traces.helios.reader import CAPACITY_TABLE, LOG_TABLE, TABLE_FILES

_PAPER = ("Hu et al., \"Characterization and Prediction of Deep Learning Workloads in Large-Scale GPU "
          "Datacenters\", SC 2021")
_SUMMARY = ("HeliosArtifact helios_cluster_summary.csv (S-Lab-System-Group/HeliosArtifact, "
            "analysis/1_compare with Philly trace/), row {row}, column {column}")

#: The clusters in the order the paper and the summary list them.
CLUSTERS: tuple[str, ...] = ("Venus", "Earth", "Saturn", "Uranus")

#: GPU-job groups of the summary's complete/cancel/fail columns: name -> SQL condition on `state`.
#: Every state other than COMPLETED and CANCELLED is a failure, so the three groups hold every job.
GROUPS: dict[str, str] = {
    "completed": "state = 'COMPLETED'",
    "cancelled": "state = 'CANCELLED'",
    "failed": "state NOT IN ('COMPLETED', 'CANCELLED')",
}
_SUMMARY_WORD = {"completed": "complete", "cancelled": "cancel", "failed": "fail"}

DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "paper.helios_sc21.jobs", "Jobs and GPU jobs of the Helios clusters (SC'21)", "jobs",
        "Rows of helios_cluster_log (the release's cluster_log.csv files, one row per Slurm job, every "
        "state, CPU-only jobs included), per cluster (the folder the file came from) or over the four "
        "clusters Venus, Earth, Saturn and Uranus. A GPU job is a row with gpu_num > 0. Counts, no "
        "rounding. A datacenter-wide count needs the logs of all four clusters in the catalog.",
    ),
    Definition(
        "paper.helios_sc21.gpu_job_states", "GPU jobs by final state (SC'21)", "percent",
        "Over the GPU jobs (gpu_num > 0) of the four clusters' helios_cluster_log, the share, in "
        "percent (0-100), whose raw state is COMPLETED (completed), CANCELLED (cancelled), or any "
        "other state (failed: FAILED, TIMEOUT, NODE_FAIL, and the one SUSPENDED job of the release, "
        "in Uranus). The three groups hold every GPU job, so the shares add to 100, as the summary's "
        "complete_rate_gpu, cancel_rate_gpu and fail_rate_gpu add to 1. (ddlx's canonical state "
        "maps SUSPENDED to running instead; this figure follows the owners' three-way split.) "
        "Compared after rounding to 1 decimal of a percent (the summary gives 3 decimals of a fraction).",
    ),
    Definition(
        "paper.helios_sc21.gpu_time_states", "GPU time by final state (SC'21)", "GPU-seconds or percent",
        "GPU time of a job is gpu_num times duration, the duration column of cluster_log.csv as given "
        "(end - start in seconds; 0 for a job cancelled before it started; a row with an empty "
        "duration adds nothing), summed over the GPU jobs (gpu_num > 0) of the four clusters in each "
        "state group of paper.helios_sc21.gpu_job_states (completed: COMPLETED; cancelled: "
        "CANCELLED; failed: every other state). The summary's complete_gpu_time, cancel_gpu_time and "
        "fail_gpu_time are these sums in GPU-seconds (exact); a group's share is its sum over the sum "
        "of the three, in percent (0-100), compared after rounding to 1 decimal.",
    ),
    Definition(
        "paper.helios_sc21.gpu_queue_median", "Median queueing delay of GPU jobs (SC'21)", "s",
        "Median of the queue column of cluster_log.csv as given (start - submit, seconds) over the GPU "
        "jobs (gpu_num > 0) of the four clusters that have one (an empty queue, a job that never "
        "started, is left out); with an even number of values, the mean of the middle two (pandas' "
        "median, DuckDB's quantile_cont at 0.5). The summary's med_que_time_gpu, total row. Exact.",
    ),
    Definition(
        "paper.helios_sc21.cluster_gpus", "GPUs of a Helios cluster (SC'21)", "GPUs",
        "From the cluster's cluster_gpu_number.csv (helios_vc_capacity): the mean, over the file's rows "
        "(one a day), of the day's total column, truncated to a whole GPU (1022.76 is 1,022). The "
        "datacenter's GPUs are the sum of the four clusters' untruncated means, then truncated: the "
        "summary's total (6,220) is not the sum of its truncated cluster values (6,218). Exact on the "
        "truncated value; needs the file of each cluster counted.",
    ),
    Definition(
        "paper.helios_sc21.qssf_philly", "Mean JCT on Philly under FIFO and QSSF (SC'21)", "s",
        "The paper's evaluation of its QSSF service (Quasi-Shortest-Service-First: waiting jobs ranked "
        "by their expected GPU service, GPUs times a duration predicted from earlier jobs) by "
        "simulating the Microsoft Philly jobs: mean job completion time (submission to end, seconds, "
        "over the simulated jobs) under FIFO and under QSSF.",
    ),
)


def _require_clusters(ctx: TraceContext, table: str, clusters: tuple[str, ...]) -> None:
    """`NotComputable` unless `table` is in the catalog and holds rows of every one of `clusters`."""
    require_tables(ctx, table)
    present = set(ctx.query(f"SELECT DISTINCT cluster FROM {table}")["cluster"].to_list())
    missing = [cluster for cluster in clusters if cluster not in present]
    if missing:
        raise NotComputable(f"the catalog's {table} holds no rows of {', '.join(missing)} (ingest "
                            f"{' and '.join(f'{c}/{TABLE_FILES[table]}' for c in missing)} of the release)")


def _log(ctx: TraceContext, select: str, clusters: tuple[str, ...] = CLUSTERS) -> float | None:
    """`select` over the rows of `clusters` in helios_cluster_log."""
    _require_clusters(ctx, LOG_TABLE, clusters)
    where = ", ".join(sql_string(cluster) for cluster in clusters)
    return ctx.one_row(f"SELECT {select} AS v FROM {LOG_TABLE} WHERE cluster IN ({where})")["v"]


def _state_share(group: str) -> str:
    return (f"100.0 * count(*) FILTER (WHERE gpu_num > 0 AND {GROUPS[group]}) "
            "/ nullif(count(*) FILTER (WHERE gpu_num > 0), 0)")


def _gpu_seconds(group: str) -> str:
    return f"coalesce(sum(gpu_num * duration) FILTER (WHERE gpu_num > 0 AND {GROUPS[group]}), 0)"


def _gpu_time_share(group: str) -> str:
    return f"100.0 * {_gpu_seconds(group)} / nullif(coalesce(sum(gpu_num * duration) FILTER (WHERE gpu_num > 0), 0), 0)"


def _mean_daily_total(ctx: TraceContext, clusters: tuple[str, ...]) -> float | None:
    """The sum over `clusters` of the mean of each one's daily `total` (each file row is stored as one
    row per VC, all with the day's total, so the mean over a cluster's stored rows is the mean over
    its file rows)."""
    _require_clusters(ctx, CAPACITY_TABLE, clusters)
    where = ", ".join(sql_string(cluster) for cluster in clusters)
    return ctx.one_row(f"SELECT sum(mean_total) AS v FROM (SELECT cluster, avg(total) AS mean_total "
                       f"FROM {CAPACITY_TABLE} WHERE cluster IN ({where}) GROUP BY cluster)")["v"]


def _gpus(ctx: TraceContext, clusters: tuple[str, ...]) -> int | None:
    mean = _mean_daily_total(ctx, clusters)
    return None if mean is None else math.trunc(mean)


_JOBS = {"Venus": 246708, "Earth": 872886, "Saturn": 1753078, "Uranus": 490309}
_GPU_JOBS = {"Venus": 125303, "Earth": 427148, "Saturn": 698896, "Uranus": 329117}
_GPUS = {"Venus": 1022, "Earth": 997, "Saturn": 2080, "Uranus": 2119}
_STATE_SHARES = {"completed": 62.4, "cancelled": 22.1, "failed": 15.5}
_GPU_SECONDS = {"completed": 39994296320, "cancelled": 30715109125, "failed": 7288334702}
#: Shares of the summary's GPU-seconds (51.28 / 39.38 / 9.34 %), as the paper gives them.
_GPU_TIME_SHARES = {"completed": 51.3, "cancelled": 39.4, "failed": 9.3}


def _cluster_figures() -> list[PublishedFigure]:
    figures = []
    for cluster in CLUSTERS:
        only = (cluster,)
        figures += [
            PublishedFigure(f"jobs_{cluster}", f"jobs in {cluster}", _SUMMARY.format(row=cluster, column="job_num"),
                            _JOBS[cluster], "jobs", "paper.helios_sc21.jobs", EXACT,
                            lambda ctx, only=only: _log(ctx, "count(*)", only)),
            PublishedFigure(f"gpu_jobs_{cluster}", f"GPU jobs (gpu_num > 0) in {cluster}",
                            _SUMMARY.format(row=cluster, column="gpu_job_num"), _GPU_JOBS[cluster], "jobs",
                            "paper.helios_sc21.jobs", EXACT,
                            lambda ctx, only=only: _log(ctx, "count(*) FILTER (WHERE gpu_num > 0)", only)),
        ]
    return figures


def _gpu_figures() -> list[PublishedFigure]:
    figures = [
        PublishedFigure(f"gpus_{cluster}", f"GPUs of {cluster} (mean daily total, truncated)",
                        _SUMMARY.format(row=cluster, column="gpu_num") + "; from the cluster's cluster_gpu_number.csv",
                        _GPUS[cluster], "GPUs", "paper.helios_sc21.cluster_gpus", EXACT,
                        lambda ctx, only=(cluster,): _gpus(ctx, only))
        for cluster in CLUSTERS
    ]
    figures.append(PublishedFigure(
        "gpus_total", "GPUs of the four clusters (sum of the mean daily totals, truncated)",
        _SUMMARY.format(row="total", column="gpu_num"), 6220, "GPUs", "paper.helios_sc21.cluster_gpus", EXACT,
        lambda ctx: _gpus(ctx, CLUSTERS)))
    return figures


def _state_figures() -> list[PublishedFigure]:
    figures = []
    for group in GROUPS:
        word = _SUMMARY_WORD[group]
        figures += [
            PublishedFigure(f"gpu_jobs_{group}", f"GPU jobs {group}, share of GPU jobs",
                            _SUMMARY.format(row="total", column=f"{word}_rate_gpu"), _STATE_SHARES[group], "%",
                            "paper.helios_sc21.gpu_job_states", rounded(1),
                            lambda ctx, group=group: _log(ctx, _state_share(group))),
            PublishedFigure(f"gpu_seconds_{group}", f"GPU time of {group} GPU jobs",
                            _SUMMARY.format(row="total", column=f"{word}_gpu_time"), _GPU_SECONDS[group],
                            "GPU-seconds", "paper.helios_sc21.gpu_time_states", EXACT,
                            lambda ctx, group=group: _log(ctx, _gpu_seconds(group))),
            PublishedFigure(f"gpu_time_{group}", f"GPU time of {group} GPU jobs, share of GPU time",
                            _SUMMARY.format(row="total", column=f"{word}_gpu_time") + " over the sum of the "
                            "complete, cancel and fail GPU times (plotted as GPU time by final job status in the "
                            "artifact's compare_with_Philly_trace.ipynb)",
                            _GPU_TIME_SHARES[group], "%", "paper.helios_sc21.gpu_time_states", rounded(1),
                            lambda ctx, group=group: _log(ctx, _gpu_time_share(group))),
        ]
    return figures


_QSSF_PENDING = (
    "needs the Microsoft Philly jobs and the Helios QSSF service in one run: this profile reads the "
    "helios catalog only (Philly is another trace, 'philly'), and ddlx's simulator (ddlx simulate) has "
    "the policies fifo, sjf-oracle, sjf-predicted and las but not QSSF (its duration predictor from "
    "earlier jobs and its GPU-service ranking), nor the paper's Philly cluster set-up to simulate on")

PROFILES: tuple[Profile, ...] = (
    Profile(
        name="helios-sc21",
        paper=_PAPER,
        dataset="helios",
        description="The four Helios clusters and their GPU jobs (owners' summary), and QSSF's headline on Philly.",
        get_data="Ingest the trace: ddlx datasets download helios, then ddlx datasets ingest helios --from DIR.",
        figures=(
            *_cluster_figures(),
            PublishedFigure("jobs", "jobs of the four clusters", _SUMMARY.format(row="total", column="job_num"),
                            3362981, "jobs", "paper.helios_sc21.jobs", EXACT, lambda ctx: _log(ctx, "count(*)")),
            PublishedFigure("gpu_jobs", "GPU jobs (gpu_num > 0) of the four clusters",
                            _SUMMARY.format(row="total", column="gpu_job_num"), 1580464, "jobs",
                            "paper.helios_sc21.jobs", EXACT,
                            lambda ctx: _log(ctx, "count(*) FILTER (WHERE gpu_num > 0)")),
            *_state_figures(),
            PublishedFigure("gpu_queue_median", "median queueing delay of GPU jobs",
                            _SUMMARY.format(row="total", column="med_que_time_gpu"), 0.0, "s",
                            "paper.helios_sc21.gpu_queue_median", EXACT,
                            lambda ctx: _log(ctx, "quantile_cont(queue, 0.5) FILTER (WHERE gpu_num > 0)")),
            *_gpu_figures(),
            PublishedFigure("philly_fifo_mean_jct", "mean JCT of the Philly jobs under FIFO (QSSF evaluation)",
                            "SC'21 paper (QSSF service evaluated on the Philly trace)", 86072, "s",
                            "paper.helios_sc21.qssf_philly", pending=_QSSF_PENDING),
            PublishedFigure("philly_qssf_mean_jct", "mean JCT of the Philly jobs under QSSF",
                            "SC'21 paper (QSSF service evaluated on the Philly trace)", 37324, "s",
                            "paper.helios_sc21.qssf_philly", pending=_QSSF_PENDING),
        ),
        definitions=DEFINITIONS,
    ),
)
