"""Published figures of the Microsoft Philly trace (profile `philly-atc19`): the job log and machine
list released with the ATC'19 paper, the final-status mix of its GPU jobs, and the GPU time by final
status, which is published twice with different processing (each set is its own figures, naming the
other in `conflicts`). The job log's and the machine list's counts are release counts, counted from
the released files; the status mix and GPU time are figures the paper and AcmeTrace published.

Counts read the stored tables `philly_job_log`, `philly_attempts` (one row per attempt, UTC times),
the canonical jobs `philly_jobs` and `philly_machine_list`; a figure whose table is not in the
catalog is not computable here and names it.
"""

from __future__ import annotations

from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.reproduce.model import (
    EXACT,
    RELEASE_COUNT,
    Profile,
    PublishedFigure,
    require_jobs,
    require_tables,
    rounded,
)
from ddlx.traces.philly.reader import ATTEMPTS_TABLE, JOB_LOG, MACHINE_LIST

_PAPER = ("Jeon et al., \"Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training Workloads\", "
          "USENIX ATC 2019 (Microsoft Philly trace)")
_RELEASE = "msr-fiddle/philly-traces release, file cluster_job_log of trace-data.tar.gz"
_MACHINES = "msr-fiddle/philly-traces release, file cluster_machine_list of trace-data.tar.gz"
_ACME = "AcmeTrace data/cluster_summary.csv (InternLM/AcmeTrace), row Philly"
_ATC19 = "ATC'19 paper (GPU time by final job status)"

_D = "paper.philly_atc19."
DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        _D + "job_log", "Jobs and attempts of the Philly job log (ATC'19 release)", "jobs or attempts",
        "Jobs are the objects of the released cluster_job_log (rows of philly_job_log), every status, "
        "with or without attempts; a job without an attempt has an empty attempts list (num_attempts = 0). "
        "Attempts are the entries of the jobs' attempts lists (rows of philly_attempts); one without a "
        "start has start_time null, \"\" or \"None\"; one without an end has end_time missing the same "
        "way, the still-running last attempts (running_at_trace_end) included.",
    ),
    Definition(
        _D + "gpu_jobs", "GPU jobs of Philly and their final status (AcmeTrace summary)", "jobs or percent",
        "A GPU job is a job of the job log with at least one GPU in an attempt: its largest attempt lists "
        "one or more entries in its detail gpus lists (philly_jobs.num_gpus > 0); jobs without an attempt "
        "and jobs whose attempts list no GPU are left out. The status shares are the jobs of each final "
        "status as written (Pass, Killed, Failed; a job whose last end was not logged counts by its "
        "status) divided by all GPU jobs, in percent. The AcmeTrace row counts 112,956 jobs, all with "
        "GPUs, read from a converted philly_trace.csv (HeliosArtifact: 'the same period of job logs as "
        "described in' the ATC'19 paper) whose conversion script is not published; ddlx cannot rebuild "
        "that selection, and 112,956 is more than the 117,325 - 5,236 = 112,089 jobs with any attempt, "
        "so no set of released jobs with a GPU in an attempt has that size: ddlx counts the GPU jobs of "
        "the whole release as above and shows the difference.",
    ),
    Definition(
        _D + "gpu_time_job_span", "GPU time by final status, per job over its span (AcmeTrace processing)",
        "GPU-seconds or percent",
        "Each GPU job (as in paper.philly_atc19.gpu_jobs) holds its GPUs (those of its largest attempt) "
        "times its run time from the first start of any attempt to the end of its last attempt, gaps "
        "between attempts included (philly_jobs.num_gpus * run_s, seconds, UTC instants). Jobs without a "
        "start or whose last end was not logged have no run time and are left out. The total per final "
        "status is in GPU-seconds; a share is that total over the total of all statuses, in percent. "
        "This follows the AcmeTrace summary, which multiplies each job's gpu_num by its duration; its "
        "converted trace may take a job's GPUs from another attempt and read times without the "
        "2017-11-05 DST correction.",
    ),
    Definition(
        _D + "gpu_time_attempts", "GPU time by final status, summed over attempts (ATC'19 processing)",
        "percent",
        "For every attempt with both a start and an end, its GPUs (entries of its detail gpus lists) "
        "times its duration end - start in seconds (philly_attempts.num_gpus * duration_s), summed per "
        "final status of its job (philly_job_log.status); a share is that sum over the sum of all "
        "statuses, in percent. Gaps between attempts are not counted, and an attempt without a start "
        "or an end (still running or not logged) adds nothing. The ATC'19 paper does not publish its "
        "processing script: ddlx assumes this attempt-level sum because the paper's numbers differ from "
        "the per-job span of the AcmeTrace summary (gpu_time_job_span), and the attempt is the unit the "
        "release records GPUs for.",
    ),
    Definition(
        _D + "machine_list", "Machines and GPUs of the Philly machine list", "machines or GPUs",
        "Rows of the released cluster_machine_list (philly_machine_list), one per machine; GPUs are the "
        "sum of its 'number of GPUs' column. The list under-counts some machines (the utilisation log "
        "shows more GPUs); the figures are the list as released.",
    ),
)

_STATUSES = (("pass", "Pass"), ("killed", "Killed"), ("failed", "Failed"))


def _job_log(ctx: TraceContext, select: str) -> float | None:
    require_tables(ctx, JOB_LOG)
    return ctx.one_row(f"SELECT {select} AS v FROM {JOB_LOG}")["v"]


def _attempts(ctx: TraceContext, select: str) -> float | None:
    require_tables(ctx, ATTEMPTS_TABLE)
    return ctx.one_row(f"SELECT {select} AS v FROM {ATTEMPTS_TABLE}")["v"]


def _gpu_jobs(ctx: TraceContext, select: str) -> float | None:
    require_jobs(ctx)
    return ctx.one_row(f"SELECT {select} AS v FROM {ctx.jobs} WHERE num_gpus > 0")["v"]


def _span_gpu_time(ctx: TraceContext, status: str, share: bool) -> float | None:
    require_jobs(ctx)
    found = ctx.one_row(f"""
        SELECT sum(num_gpus * run_s) FILTER (WHERE raw_state = '{status}') AS part, sum(num_gpus * run_s) AS total
        FROM {ctx.jobs} WHERE num_gpus > 0 AND run_s IS NOT NULL""")
    if not share:
        return (found["part"] or 0.0) if found["total"] else None
    return 100.0 * (found["part"] or 0) / found["total"] if found["total"] else None


def _attempt_gpu_time_share(ctx: TraceContext, status: str) -> float | None:
    require_tables(ctx, JOB_LOG, ATTEMPTS_TABLE)
    found = ctx.one_row(f"""
        SELECT sum(a.num_gpus * a.duration_s) FILTER (WHERE j.status = '{status}') AS part,
               sum(a.num_gpus * a.duration_s) AS total
        FROM {ATTEMPTS_TABLE} AS a JOIN {JOB_LOG} AS j USING (jobid)
        WHERE a.duration_s IS NOT NULL""")
    return 100.0 * (found["part"] or 0) / found["total"] if found["total"] else None


def _machines(ctx: TraceContext, select: str) -> float | None:
    require_tables(ctx, MACHINE_LIST)
    return ctx.one_row(f"SELECT {select} AS v FROM {MACHINE_LIST}")["v"]


def _count(figure_id: str, what: str, published: int, unit: str, compute) -> PublishedFigure:
    return PublishedFigure(figure_id, what, _RELEASE, published, unit, _D + "job_log", EXACT, compute,
                           source_kind=RELEASE_COUNT)


_ACME_COLUMN = {"pass": "complete", "killed": "cancel", "failed": "fail"}
_STATUS_SHARE = {"pass": 60.4, "killed": 9.0, "failed": 30.5}
_SPAN_SHARE = {"pass": 32.1, "killed": 29.4, "failed": 38.6}
_SPAN_SECONDS = {"pass": 2210176414, "killed": 2025326056, "failed": 2659215061}
_ATTEMPT_SHARE = {"pass": 31.3, "killed": 32.6, "failed": 36.1}


def _status_figures() -> tuple[PublishedFigure, ...]:
    figures: list[PublishedFigure] = []
    for key, status in _STATUSES:
        figures.append(PublishedFigure(
            f"gpu_jobs_{key}", f"GPU jobs with final status {status}, share of GPU jobs",
            f"{_ACME}, {_ACME_COLUMN[key]}_rate_gpu", _STATUS_SHARE[key], "%", _D + "gpu_jobs", rounded(1),
            lambda ctx, s=status: _gpu_jobs(ctx, f"100.0 * count(*) FILTER (WHERE raw_state = '{s}') "
                                                 "/ nullif(count(*), 0)")))
    return tuple(figures)


def _gpu_time_figures() -> tuple[PublishedFigure, ...]:
    acme = _ACME_COLUMN
    figures: list[PublishedFigure] = []
    for key, status in _STATUSES:
        figures.append(PublishedFigure(
            f"gpu_time_{key}_job_span", f"GPU time of {status} jobs, share (GPUs x first start to last end)",
            f"{_ACME}, {acme[key]}_rate_gpu_time", _SPAN_SHARE[key], "%", _D + "gpu_time_job_span", rounded(1),
            lambda ctx, s=status: _span_gpu_time(ctx, s, share=True), conflicts=(f"gpu_time_{key}_attempts",)))
    for key, status in _STATUSES:
        figures.append(PublishedFigure(
            f"gpu_seconds_{key}_job_span", f"GPU time of {status} jobs (GPUs x first start to last end)",
            f"{_ACME}, {acme[key]}_gpu_time", _SPAN_SECONDS[key], "GPU-seconds", _D + "gpu_time_job_span",
            rounded(0), lambda ctx, s=status: _span_gpu_time(ctx, s, share=False)))
    for key, status in _STATUSES:
        figures.append(PublishedFigure(
            f"gpu_time_{key}_attempts", f"GPU time of {status} jobs, share (sum over attempts of GPUs x duration)",
            _ATC19, _ATTEMPT_SHARE[key], "%", _D + "gpu_time_attempts", rounded(1),
            lambda ctx, s=status: _attempt_gpu_time_share(ctx, s), conflicts=(f"gpu_time_{key}_job_span",)))
    return tuple(figures)


PROFILES: tuple[Profile, ...] = (
    Profile(
        name="philly-atc19",
        paper=_PAPER,
        dataset="philly",
        description=("The Philly job log and machine list, the final status of its GPU jobs, and GPU time by "
                     "final status under the AcmeTrace and the ATC'19 processing."),
        get_data="Ingest the trace: ddlx datasets download philly, then ddlx datasets ingest philly --from DIR.",
        figures=(
            _count("jobs", "jobs", 117325, "jobs", lambda ctx: _job_log(ctx, "count(*)")),
            _count("jobs_without_attempt", "jobs without an attempt", 5236, "jobs",
                   lambda ctx: _job_log(ctx, "count(*) FILTER (WHERE num_attempts = 0)")),
            _count("attempts_without_start", "attempts without a start", 136, "attempts",
                   lambda ctx: _attempts(ctx, "count(*) FILTER (WHERE start_time IS NULL)")),
            _count("attempts_without_end", "attempts without an end", 6695, "attempts",
                   lambda ctx: _attempts(ctx, "count(*) FILTER (WHERE end_time IS NULL)")),
            PublishedFigure("gpu_jobs", "GPU jobs (at least one GPU in an attempt)", f"{_ACME}, job_num", 112956,
                            "jobs", _D + "gpu_jobs", EXACT, lambda ctx: _gpu_jobs(ctx, "count(*)")),
            *_status_figures(),
            *_gpu_time_figures(),
            PublishedFigure("machines", "machines in the machine list", _MACHINES, 552, "machines",
                            _D + "machine_list", EXACT, lambda ctx: _machines(ctx, "count(*)"),
                            source_kind=RELEASE_COUNT),
            PublishedFigure("machine_list_gpus", "GPUs in the machine list", _MACHINES, 2490, "GPUs",
                            _D + "machine_list", EXACT, lambda ctx: _machines(ctx, "coalesce(sum(num_gpus), 0)"),
                            source_kind=RELEASE_COUNT),
        ),
        definitions=DEFINITIONS,
    ),
)
