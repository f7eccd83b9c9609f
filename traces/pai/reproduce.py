"""Published figures of the Alibaba PAI cluster-trace-gpu-v2020 (profile `pai-nsdi22`): what the
NSDI'22 paper "MLaaS in the Wild" and the release's own analysis notebook and simulator publish.

- requests above usage: the notebook's printed shares of tasks whose plan exceeds their measured
  usage (GPU, memory, CPU), counted with ddlx's own per-task join (`pai_task_usage_sql` of
  `analyses.py`, through `pai_request_vs_usage_tables`), whose reading the definition maps onto the
  notebook's;
- tasks by GPU request and by GPU type: the notebook's two bar charts, over the notebook's tasks
  (tasks of pai_task_table with a job in pai_job_table and an instance in pai_instance_table);
- the release simulator's mean JCTs: they need the simulator's own job sample, which is not one of
  the seven tables ddlx ingests, so no code computes them (`pending`).
"""

from __future__ import annotations

from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.reproduce.model import Profile, PublishedFigure, require_tables, rounded, within
from ddlx.datasets.sqltext import sql_string
from ddlx.traces.pai.analyses import PAI_RESOURCES, pai_request_vs_usage_tables, task_instances
from ddlx.traces.pai.reader import ORPHAN_TASKS_CHECK

_PAPER = ("Weng et al., \"MLaaS in the Wild: Workload Analysis and Scheduling in Large-Scale Heterogeneous "
          "GPU Clusters\", USENIX NSDI 2022")
_NOTEBOOK = "NSDI'22 official analysis notebook of cluster-trace-gpu-v2020 (analysis/analysis.ipynb)"
_USAGE_SOURCE = (f"{_NOTEBOOK}, the output printed by plan_minus_usg_over_cap_task (analysis/utils.py) under "
                 "its heading 'Figure 6: Task resource request and usage'")
_BARS_SOURCE = (f"{_NOTEBOOK}, the bar chart 'Proportion of Tasks (%)' under its heading 'Figure 5: Task wait "
                "time and runtime by GPU requests'")
_SIMULATOR_SOURCE = ("release simulator of cluster-trace-gpu-v2020 (simulator/README.md, output of "
                     "run_simulator.py, and its log logs/0228-pai_job_duration_estimate_100K.csv-99163-"
                     "6500g_1n_h0_0p_3sn_0gt-1000ar-20000j-1x-42r.log)")

_USAGE = "paper.pai_nsdi22.plan_above_usage"
_BY_REQUEST = "paper.pai_nsdi22.tasks_by_gpu_request"
_BY_TYPE = "paper.pai_nsdi22.tasks_by_gpu_type"
_JCT = "paper.pai_nsdi22.simulator_jct"

def _notebook_tasks(ctx: TraceContext) -> str:
    """A FROM item: the notebook's tasks (its `dfa`), tasks of pai_task_table whose job is in
    pai_job_table (an inner merge) and that have an instance in pai_instance_table (an inner merge
    with the instances grouped per task: the instances' roll-up per task); each task counted once.
    Every task has its job when the ingest's validation found no orphan task: no join then."""
    with_job = ("TRUE" if ctx.validated_rows("pai_task_table", ORPHAN_TASKS_CHECK) == 0 else
                "t.job_name IN (SELECT job_name FROM pai_job_table)")
    return f"""(
    SELECT t.plan_gpu, t.gpu_type FROM pai_task_table t
    WHERE {with_job}
      AND EXISTS (SELECT 1 FROM {task_instances(ctx)} i WHERE i.job_name = t.job_name AND i.task_name = t.task_name))"""

DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        _USAGE, "PAI tasks planning more than they use (NSDI'22 notebook)", "percent",
        "Per resource, the share (percent) of compared tasks whose request is above their measured "
        "usage: GPU plan_gpu against gpu_wrk_util (percent of one GPU), CPU plan_cpu against "
        "cpu_usage (percent of one core), memory plan_mem against avg_mem (GB; ddlx's mem_avg). "
        "ddlx counts it as utilization.pai_task_over_request over utilization.pai_task_usage_ratio: "
        "the compared tasks are the rows of pai_task_table with at least one pai_sensor_table row of "
        "the same job_name and task_name, a request > 0 and a usage value; usage is the mean over "
        "those sensor rows; the share is 100 x (tasks with usage < request) / (compared tasks). The "
        "notebook (plan_minus_usg_over_cap_task) joins instances (deduplicated by worker_name) to "
        "sensor rows by worker_name, sums per task the plan and the usage of those workers, and counts "
        "tasks with (summed plan - summed usage) / (100 x summed capacity of their machines; GB for "
        "memory) > 0 over the tasks where that quotient is defined. Every worker of a task carries the "
        "task's plan, so summed plan > summed usage exactly when plan > mean usage if every worker has "
        "a usage value: both count the same tasks above. The denominators differ: the notebook keeps "
        "tasks with an empty or 0 plan (pandas sums an empty plan to 0), which count as plan at or "
        "below usage (left out only where the difference and the summed capacity are both 0), and, "
        "where some workers of a task lack a usage value, compares the summed plan of all of them with "
        "the summed usage of the others; ddlx leaves out tasks with no or 0 request, and averages the "
        "usage values there are.",
    ),
    Definition(
        _BY_REQUEST, "PAI tasks by GPU request (NSDI'22 notebook)", "percent",
        "The notebook's tasks: rows of pai_task_table whose job_name is in pai_job_table and that have "
        "at least one pai_instance_table row with the same job_name and task_name, each counted once. "
        "Among those with a plan_gpu (not empty; 0 counts), the share (percent) whose plan_gpu "
        "(percent of one GPU, per instance, not the task's total) is < 25, in [25, 50), in [50, 100), "
        "exactly 100 (one GPU), or > 100 (more than one GPU per instance). The five shares add up to "
        "100; the published ones were read off the notebook's bar chart.",
    ),
    Definition(
        _BY_TYPE, "PAI tasks by GPU type (NSDI'22 notebook)", "percent",
        "Over the notebook's tasks (as paper.pai_nsdi22.tasks_by_gpu_request: rows of pai_task_table "
        "with a job in pai_job_table and an instance in pai_instance_table), the tasks whose gpu_type "
        "is the type (MISC, T4, P100, V100, V100M32; MISC is older generations), whatever their "
        "plan_gpu, times 100, divided by the tasks with a plan_gpu (not empty): the notebook divides "
        "both of its bar charts by the tasks with a plan_gpu. Tasks with an empty gpu_type count in "
        "no type, so the shares add up to at most 100 when every typed task has a plan_gpu.",
    ),
    Definition(
        _JCT, "Mean JCT in the release simulator (cluster-trace-gpu-v2020)", "s",
        "The release simulator (simulator/run_simulator.py) run on 20,000 jobs of its own input "
        "simulator/traces/pai/pai_job_duration_estimate_100K.csv (about 100,000 PAI jobs with their "
        "duration and duration estimates), arriving at 1,000 jobs per minute, on one pool of 6,500 "
        "GPUs (no topology, no heterogeneity), random seed 42, one repetition. Per allocation policy, "
        "the mean over the jobs of completion time minus submission time (avg_jct, seconds): FIFO "
        "(arrival order), SJF (shortest true duration first), and SJF ordered by a duration estimated "
        "from the user (SJU), from group and user (SJG), or from group, user and GPU type (SJGG).",
    ),
)


def _share_above(resource: str):
    """Percent of the tasks compared for `resource` whose usage is below their request."""

    def compute(ctx: TraceContext) -> float | None:
        require_tables(ctx, "pai_task_table", "pai_sensor_table")
        rows = pai_request_vs_usage_tables(ctx)[0].filter(resource=resource)
        if rows.is_empty():
            return None
        return 100.0 * rows["over_requesting_share"][0]

    return compute


def _notebook_share(condition: str):
    """Percent of the notebook's tasks matching `condition`, over those with a plan_gpu."""

    def compute(ctx: TraceContext) -> float | None:
        require_tables(ctx, "pai_task_table", "pai_job_table", "pai_instance_table")
        return ctx.kept.once("pai_notebook_shares", lambda: _notebook_shares(ctx))[condition]

    return compute


def _notebook_shares(ctx: TraceContext) -> dict[str, float | None]:
    """Every condition's share (as `_notebook_share`) from one pass over the notebook's tasks."""
    conditions = [condition for *_, condition in _GPU_REQUESTS] + [_gpu_type_condition(t) for t, _ in _GPU_TYPES]
    columns = ", ".join(f"100.0 * count(*) FILTER (WHERE {condition}) / nullif(count(plan_gpu), 0) AS v{i}"
                        for i, condition in enumerate(conditions))
    row = ctx.one_row(f"SELECT {columns} FROM {_notebook_tasks(ctx)}", keep="pai_notebook_shares")
    return {condition: row[f"v{i}"] for i, condition in enumerate(conditions)}


def _gpu_type_condition(gpu_type: str) -> str:
    return f"gpu_type = {sql_string(gpu_type)}"


def _usage_figure(resource: str, label: str, published: float) -> PublishedFigure:
    request, usage, _ = PAI_RESOURCES[resource]
    return PublishedFigure(
        f"{label.lower()}_plan_above_usage", f"tasks whose {label} plan ({request}) is above their usage ({usage})",
        _USAGE_SOURCE, published, "%", _USAGE, rounded(2), _share_above(resource))


_READ_OFF = within(0.5, "read off the released bar chart")

_GPU_REQUESTS: tuple[tuple[str, str, float, str], ...] = (
    ("tasks_gpu_below_quarter", "tasks asking for < 25 % of a GPU", 14.7, "plan_gpu < 25"),
    ("tasks_gpu_quarter_to_half", "tasks asking for [25, 50) % of a GPU", 26.4, "plan_gpu >= 25 AND plan_gpu < 50"),
    ("tasks_gpu_half_to_one", "tasks asking for [50, 100) % of a GPU", 13.2, "plan_gpu >= 50 AND plan_gpu < 100"),
    ("tasks_gpu_one", "tasks asking for exactly one GPU (plan_gpu 100)", 42.8, "plan_gpu = 100"),
    ("tasks_gpu_above_one", "tasks asking for more than one GPU per instance", 2.6, "plan_gpu > 100"),
)
_GPU_TYPES: tuple[tuple[str, float], ...] = (
    ("MISC", 66.7), ("T4", 21.7), ("P100", 7.0), ("V100", 2.7), ("V100M32", 1.5))

_SIMULATOR_PENDING = (
    "needs the release simulator's own input, simulator/traces/pai/pai_job_duration_estimate_100K.csv (jobs "
    "with their duration estimates by user, group and GPU), from which it takes 20,000 jobs arriving at 1,000 "
    "per minute on 6,500 GPUs; that file is not among the seven tables ddlx ingests, and its estimates are not "
    "in them either, so ddlx's simulator cannot replay the same sample")
_SIMULATOR: tuple[tuple[str, str, float], ...] = (
    ("jct_fifo", "mean JCT under FIFO", 7918.47),
    ("jct_sjf", "mean JCT under SJF (true durations)", 5988.61),
    ("jct_sjf_group_gpu", "mean JCT under SJF with group, user and GPU estimates (SJGG)", 6001.94),
    ("jct_sjf_group", "mean JCT under SJF with group and user estimates (SJG)", 6071.01),
    ("jct_sjf_user", "mean JCT under SJF with user estimates (SJU)", 6278.33),
)

PROFILES: tuple[Profile, ...] = (
    Profile(
        name="pai-nsdi22",
        paper=_PAPER,
        dataset="pai",
        description=("Requests against usage, tasks by GPU request and GPU type, and the release simulator's "
                     "mean JCTs of the Alibaba PAI cluster-trace-gpu-v2020."),
        get_data=("Ingest the trace: ddlx datasets download pai, then ddlx datasets ingest pai --from DIR "
                  "(the figures read pai_task_table, pai_sensor_table, pai_job_table and pai_instance_table)."),
        figures=(
            _usage_figure("gpu", "GPU", 98.02),
            _usage_figure("mem_avg", "memory", 95.88),
            _usage_figure("cpu", "CPU", 84.46),
            *(PublishedFigure(figure_id, f"{what}, share of tasks with a plan_gpu", _BARS_SOURCE, published, "%",
                              _BY_REQUEST, _READ_OFF, _notebook_share(condition))
              for figure_id, what, published, condition in _GPU_REQUESTS),
            *(PublishedFigure(f"tasks_gpu_type_{gpu_type}", f"tasks of GPU type {gpu_type}, share of tasks with "
                              "a plan_gpu", _BARS_SOURCE, published, "%", _BY_TYPE, rounded(1),
                              _notebook_share(_gpu_type_condition(gpu_type)))
              for gpu_type, published in _GPU_TYPES),
            *(PublishedFigure(figure_id, what, _SIMULATOR_SOURCE, published, "s", _JCT, rounded(2),
                              pending=_SIMULATOR_PENDING)
              for figure_id, what, published in _SIMULATOR),
        ),
        definitions=DEFINITIONS,
    ),
)
