"""Published figures of the Shanghai AI Lab Acme trace (profile `acme-nsdi24`): job counts, final
states by count and by GPU time, and the workload mix of the NSDI'24 paper "Characterization of
Large Language Model Development in the Datacenter" and of its repository (InternLM/AcmeTrace).

Every figure reads the stored table `acme_job_trace` (both job files, one row per job, the state,
`type` and `gpu_time` as written): the canonical `acme_jobs` lose `gpu_time`, which the owners sum.
Where the owners' code is public (`analysis.ipynb`), a definition follows it; where it is not
(`data/cluster_summary.csv` has no script), the definition says what ddlx assumes.

The repository publishes the job count twice: README.md says 880,740 jobs (470,497 GPU jobs),
`cluster_summary.csv` 1,031,550 + 62,413 = 1,093,963 (663,813 + 19,907 = 683,720 GPU jobs). Both
agree on the CPU jobs (880,740 - 470,497 = 410,243 = 367,737 + 42,506); the 213,223 jobs between
them are all GPU jobs. The README does not say what it counts; the two figures name each other.
"""

from __future__ import annotations

from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.reproduce.model import EXACT, NotComputable, Profile, PublishedFigure, require_tables, rounded
from ddlx.datasets.sqltext import sql_string
from ddlx.traces.acme.reader import TABLE

_PAPER = ("Hu et al., \"Characterization of Large Language Model Development in the Datacenter\", "
          "USENIX NSDI 2024 (Acme trace, InternLM/AcmeTrace)")
_SUMMARY = "InternLM/AcmeTrace data/cluster_summary.csv"
_README = "InternLM/AcmeTrace README.md, \"Main Characteristics\""
_BAR = ("paper's bar chart of final job states ({panel}); the same bars in InternLM/AcmeTrace "
        "figure/bar_job_state.pdf, which analysis.ipynb draws from data/cluster_summary.csv, {name} row, "
        "{column} x 100")
_TREEMAP = ("paper's treemap of job types ({panel}); the same label in InternLM/AcmeTrace "
            "figure/treemap_job_dist.pdf, panel {letter}, drawn by analysis.ipynb")

#: Cluster label in the catalog -> (name in the release, file).
_CLUSTERS: dict[str, tuple[str, str]] = {"seren": ("Seren", "trace_seren.csv"), "kalos": ("Kalos", "trace_kalos.csv")}
#: The final states of each class (AcmeTrace README: TIMEOUT and NODE_FAIL are regarded as failed).
_STATES: dict[str, tuple[str, ...]] = {
    "completed": ("COMPLETED",),
    "cancelled": ("CANCELLED",),
    "failed": ("FAILED", "TIMEOUT", "NODE_FAIL"),
}
#: The summary's column names of each class (rate by count, GPU time, rate of GPU time).
_SUMMARY_COLUMNS: dict[str, tuple[str, str, str]] = {
    "completed": ("complete_rate_gpu", "complete_gpu_time", "complete_rate_gpu_time"),
    "cancelled": ("cancel_rate_gpu", "cancel_gpu_time", "cancel_rate_gpu_time"),
    "failed": ("fail_rate_gpu", "fail_gpu_time", "fail_rate_gpu_time"),
}
#: The workload types analysis.ipynb draws in the treemap of each cluster (its denominators).
_TREEMAP_TYPES: dict[str, tuple[str, ...]] = {
    "seren": ("Eval", "Pretrain", "SFT", "MLLM", "Debug", "Other"),
    "kalos": ("Eval", "Pretrain", "Debug", "Other"),
}

_GPU = "gpu_num > 0"
_WITH_STATE = "state IN (" + ", ".join(sql_string(s) for states in _STATES.values() for s in states) + ")"

DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "paper.acme_nsdi24.jobs", "Jobs and GPU jobs of the Acme clusters (cluster_summary.csv)", "jobs",
        "Jobs of a cluster: every row of its job file (trace_seren.csv or trace_kalos.csv; in ddlx the rows of "
        "acme_job_trace with that cluster), CPU jobs (gpu_num = 0) included: the summary's job_num equals "
        "cpu_job_num + gpu_job_num. GPU jobs: the rows with gpu_num > 0 (gpu_job_num). The two-cluster "
        "totals are the sums of the Seren and Kalos rows' job_num (1,031,550 + 62,413 = 1,093,963) and "
        "gpu_job_num (663,813 + 19,907 = 683,720): every row of both files, resp. every row with gpu_num > 0.",
    ),
    Definition(
        "paper.acme_nsdi24.readme_jobs", "Jobs of the Acme trace as the AcmeTrace README states them", "jobs",
        "The README's \"Total number of jobs: 880,740\" and \"Total number of GPU jobs: 470,497\", for the "
        "two clusters together. The README does not say what it counts (no filter, period or file is "
        "named). ddlx computes them as the summary's totals: every row of trace_seren.csv and "
        "trace_kalos.csv, resp. every row with gpu_num > 0 (paper.acme_nsdi24.jobs). The README and the "
        "summary agree on the CPU jobs (880,740 - 470,497 = 410,243 = 367,737 + 42,506) and differ by "
        "213,223 GPU jobs; 880,740 - 62,413 (Kalos) = 818,327 would be Seren's rows if the README counts "
        "the released files, in line with a user's report of about 800k Seren records (InternLM/AcmeTrace "
        "issue #1), against 1,031,550 in the summary. Not verified here: no real job file was available.",
    ),
    Definition(
        "paper.acme_nsdi24.final_state", "GPU jobs by final state (Acme)", "percent",
        "Over the GPU jobs (gpu_num > 0) of one cluster's file whose state is one of the five written "
        "(COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL): the jobs of a class, in percent (0-100) of them. "
        "Completed = COMPLETED, cancelled = CANCELLED, failed = FAILED, TIMEOUT and NODE_FAIL (the README "
        "regards the last two as failed). The summary's complete/cancel/fail_rate_gpu (fractions, 3 "
        "decimals); how the summary was computed is not published, this is ddlx's reading of its names.",
    ),
    Definition(
        "paper.acme_nsdi24.gpu_time_by_state", "GPU time by final state (Acme)", "GPU-seconds or percent",
        "GPU time of a job: the trace's gpu_time column as written (GPU-seconds; README: duration x gpu_num, "
        "so the same as gpu_num x the duration column wherever the file is consistent; the validation "
        "report counts the rows where it is not), an empty gpu_time (a job cancelled before it started) "
        "counting 0; NOT gpu_num x (end_time - start_time), which differs where duration does (the README's "
        "Kalos example has duration = end - submit). Over the GPU jobs (gpu_num > 0) of one cluster, by "
        "class (completed = COMPLETED, cancelled = CANCELLED, failed = FAILED, TIMEOUT, NODE_FAIL): the sum "
        "(summary's complete/cancel/fail_gpu_time, GPU-seconds) and its percent (0-100) of the sum over the "
        "three classes (summary's *_rate_gpu_time = *_gpu_time / (complete + cancel + fail)_gpu_time, "
        "which the published numbers bear out). Which GPU time the summary summed is not published: the "
        "absolute figures tell on the real files (matching: the gpu_time column).",
    ),
    Definition(
        "paper.acme_nsdi24.workload", "Job types by count and GPU time (Acme)", "percent",
        "As analysis.ipynb draws the paper's treemap: over the GPU jobs (gpu_num > 0) of one cluster whose "
        "type is one the treemap shows (Seren: Eval, Pretrain, SFT, MLLM, Debug, Other; Kalos: Eval, "
        "Pretrain, Debug, Other, so Kalos's SFT, MLLM and untyped jobs are left out of the denominator), "
        "the jobs of one type in percent (0-100) of them, and the sum of their gpu_time column (GPU-seconds, "
        "empty counting 0) in percent of the sum over them. Evaluation = type Eval, pretraining = type "
        "Pretrain. (The notebook truncates each type's GPU time to whole GPU-seconds, which no 1-decimal "
        "share can show.)",
    ),
)


def _percent(part: str, whole: str) -> str:
    """SQL: `part` in percent of `whole` (NULL when `whole` is 0 or NULL)."""
    return f"100.0 * coalesce({part}, 0) / nullif({whole}, 0)"


def _cluster(ctx: TraceContext, cluster: str, select: str) -> float | None:
    """`select` over the rows of `cluster`; `NotComputable` when the catalog holds none."""
    require_tables(ctx, TABLE)
    found = ctx.one_row(f"SELECT count(*) AS n, {select} AS v FROM {TABLE} WHERE cluster = {sql_string(cluster)}")
    if not found["n"]:
        name, file = _CLUSTERS[cluster]
        raise NotComputable(f"the catalog holds no {name} jobs ({file} was not ingested)")
    return found["v"]


def _both(ctx: TraceContext, select: str) -> float | None:
    """`select` over the rows of both clusters; `NotComputable` unless both were ingested."""
    require_tables(ctx, TABLE)
    counts = ", ".join(f"count(*) FILTER (WHERE cluster = {sql_string(c)}) AS {c}" for c in _CLUSTERS)
    found = ctx.one_row(f"SELECT {counts}, {select} AS v FROM {TABLE}")
    missing = [c for c in _CLUSTERS if not found[c]]
    if missing:
        raise NotComputable("the total needs both clusters; the catalog holds no jobs of "
                            + " or ".join(f"{_CLUSTERS[c][0]} ({_CLUSTERS[c][1]})" for c in missing))
    return found["v"]


def _in(states: tuple[str, ...]) -> str:
    return "state IN (" + ", ".join(map(sql_string, states)) + ")"


def _cluster_figure(figure_id: str, what: str, source: str, published: float, unit: str, definition: str,
                    cluster: str, select: str, tolerance=EXACT) -> PublishedFigure:
    return PublishedFigure(figure_id, what, source, published, unit, definition, tolerance,
                           lambda ctx: _cluster(ctx, cluster, select))


def _job_counts(cluster: str, jobs: int, gpu_jobs: int) -> tuple[PublishedFigure, ...]:
    name = _CLUSTERS[cluster][0]
    return (
        _cluster_figure(f"{cluster}_jobs", f"{name}: jobs (CPU jobs included)", f"{_SUMMARY}, {name} row, job_num",
                        jobs, "jobs", "paper.acme_nsdi24.jobs", cluster, "count(*)"),
        _cluster_figure(f"{cluster}_gpu_jobs", f"{name}: GPU jobs", f"{_SUMMARY}, {name} row, gpu_job_num",
                        gpu_jobs, "jobs", "paper.acme_nsdi24.jobs", cluster, f"count(*) FILTER (WHERE {_GPU})"),
    )


def _state_figures(cluster: str, panel_count: str, panel_time: str, by_count: dict[str, float],
                   gpu_time: dict[str, float], time_share: dict[str, float]) -> tuple[PublishedFigure, ...]:
    name = _CLUSTERS[cluster][0]
    gpu_jobs = f"{_GPU} AND {_WITH_STATE}"
    figures: list[PublishedFigure] = []
    for kind, states in _STATES.items():
        rate, absolute, rate_time = _SUMMARY_COLUMNS[kind]
        of_kind = f"{_GPU} AND {_in(states)}"
        figures += [
            _cluster_figure(
                f"{cluster}_{kind}_share", f"{name}: {kind} GPU jobs, share of GPU jobs by count",
                _BAR.format(panel=panel_count, name=name, column=rate), by_count[kind], "%",
                "paper.acme_nsdi24.final_state", cluster,
                _percent(f"count(*) FILTER (WHERE {of_kind})", f"count(*) FILTER (WHERE {gpu_jobs})"), rounded(1)),
            _cluster_figure(
                f"{cluster}_{kind}_gpu_time", f"{name}: GPU time of {kind} GPU jobs",
                f"{_SUMMARY}, {name} row, {absolute}", gpu_time[kind], "GPU-seconds",
                "paper.acme_nsdi24.gpu_time_by_state", cluster,
                f"coalesce(sum(gpu_time) FILTER (WHERE {of_kind}), 0)", rounded(0)),
            _cluster_figure(
                f"{cluster}_{kind}_gpu_time_share", f"{name}: {kind} GPU jobs, share of GPU time",
                _BAR.format(panel=panel_time, name=name, column=rate_time), time_share[kind], "%",
                "paper.acme_nsdi24.gpu_time_by_state", cluster,
                _percent(f"sum(gpu_time) FILTER (WHERE {of_kind})", f"sum(gpu_time) FILTER (WHERE {gpu_jobs})"),
                rounded(1)),
        ]
    return tuple(figures)


def _workload_figures(cluster: str, letters: str, eval_share: float, pretrain_share: float
                      ) -> tuple[PublishedFigure, ...]:
    name = _CLUSTERS[cluster][0]
    shown = f"{_GPU} AND \"type\" IN ({', '.join(map(sql_string, _TREEMAP_TYPES[cluster]))})"
    return (
        _cluster_figure(
            f"{cluster}_eval_job_share", f"{name}: evaluation jobs, share of GPU jobs by count",
            _TREEMAP.format(panel=f"{name}, job count", letter=letters[0]), eval_share, "%",
            "paper.acme_nsdi24.workload", cluster,
            _percent(f"count(*) FILTER (WHERE {shown} AND \"type\" = 'Eval')", f"count(*) FILTER (WHERE {shown})"),
            rounded(1)),
        _cluster_figure(
            f"{cluster}_pretrain_gpu_time_share", f"{name}: pretraining jobs, share of GPU time",
            _TREEMAP.format(panel=f"{name}, GPU time", letter=letters[1]), pretrain_share, "%",
            "paper.acme_nsdi24.workload", cluster,
            _percent(f"sum(gpu_time) FILTER (WHERE {shown} AND \"type\" = 'Pretrain')",
                     f"sum(gpu_time) FILTER (WHERE {shown})"),
            rounded(1)),
    )


def _total_figure(figure_id: str, what: str, source: str, published: int, definition: str, select: str,
                  conflicts: str) -> PublishedFigure:
    return PublishedFigure(figure_id, what, source, published, "jobs", definition, EXACT,
                           lambda ctx: _both(ctx, select), conflicts=(conflicts,))


PROFILES: tuple[Profile, ...] = (
    Profile(
        name="acme-nsdi24",
        paper=_PAPER,
        dataset="acme",
        description="Jobs, final states and workload types of the Seren and Kalos clusters of the Acme trace.",
        get_data="Ingest the trace: ddlx datasets download acme, then ddlx datasets ingest acme --from DIR.",
        figures=(
            _total_figure("jobs_readme", "jobs of both clusters (README)", f"{_README}: Total number of jobs",
                          880740, "paper.acme_nsdi24.readme_jobs", "count(*)", "jobs_summary"),
            _total_figure("jobs_summary", "jobs of both clusters (cluster_summary.csv)",
                          f"{_SUMMARY}, job_num of the Seren and Kalos rows, summed", 1093963,
                          "paper.acme_nsdi24.jobs", "count(*)", "jobs_readme"),
            _total_figure("gpu_jobs_readme", "GPU jobs of both clusters (README)",
                          f"{_README}: Total number of GPU jobs", 470497, "paper.acme_nsdi24.readme_jobs",
                          f"count(*) FILTER (WHERE {_GPU})", "gpu_jobs_summary"),
            _total_figure("gpu_jobs_summary", "GPU jobs of both clusters (cluster_summary.csv)",
                          f"{_SUMMARY}, gpu_job_num of the Seren and Kalos rows, summed", 683720,
                          "paper.acme_nsdi24.jobs", f"count(*) FILTER (WHERE {_GPU})", "gpu_jobs_readme"),
            *_job_counts("seren", 1031550, 663813),
            *_job_counts("kalos", 62413, 19907),
            *_state_figures(
                "seren", "Seren, job count", "Seren, GPU time",
                {"completed": 49.7, "cancelled": 7.5, "failed": 42.9},
                {"completed": 4560592618, "cancelled": 14274584510, "failed": 2675447459},
                {"completed": 21.2, "cancelled": 66.4, "failed": 12.4}),
            *_state_figures(
                "kalos", "Kalos, job count", "Kalos, GPU time",
                {"completed": 54.1, "cancelled": 6.2, "failed": 39.7},
                {"completed": 1667685146, "cancelled": 3239202064, "failed": 426292851},
                {"completed": 31.3, "cancelled": 60.7, "failed": 8.0}),
            *_workload_figures("seren", "ab", 64.9, 69.5),
            *_workload_figures("kalos", "cd", 92.8, 95.5),
        ),
        definitions=DEFINITIONS,
    ),
)
