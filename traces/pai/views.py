"""PAI's canonical views beyond jobs, their definitions, and how PAI derives the core definitions.

- `gpu_capacity`: GPUs per GPU type from `pai_machine_spec` (definition `capacity.pai_machine_spec`);
- `gpu_instance_requests`: what each task's instances ask for, from `pai_task_table` (each of a
  task's `inst_num` instances asks for `plan_gpu` percent of one GPU).
"""

from __future__ import annotations

from ddlx.analysis.definitions import Definition
from ddlx.datasets.canonical import state_mapping_text
from ddlx.traces.pai.reader import STATE_MAP

MACHINE_SPEC = "pai_machine_spec"
TASK_TABLE = "pai_task_table"
JOBS = "pai_jobs"

DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "capacity.pai_machine_spec", "GPU capacity, PAI machine list", "GPUs",
        "PAI: GPUs of each gpu_type, the sum of cap_gpu over the machines of pai_machine_spec with "
        "cap_gpu > 0 (CPU-only machines left out); one capacity for the whole trace, no VC.",
    ),
)

#: How PAI derives the core definitions (`ddlx.analysis.definitions`).
DERIVATIONS: dict[str, str] = {
    "sharing.gpus_per_instance": "plan_gpu / 100 of the task (each of its inst_num instances asks for it; tasks "
                                 "without plan_gpu or with 0 are not GPU instances); it shares a GPU when plan_gpu "
                                 "is not a multiple of 100",
    "sharing.fractional_share": "'unspecified' are jobs whose GPU tasks name no GPU model",
    "utilization.allocated_gpus": "from the job's first instance start to the job's end, all its requested GPUs "
                                  "(instances that start later or end earlier are not followed); jobs with "
                                  "status Running are ends that were not logged (together they ask for several "
                                  "times the cluster's GPUs, so they cannot all have been running at the trace "
                                  "end) and are left out",
    "queue_delay.submit_to_first_start": "job start_time (the submission) to the earliest instance start_time",
    "runtime.first_start_to_last_end": "earliest instance start_time to the job's end_time",
    "gpu_request.job_total": "the sum over the job's tasks of inst_num * plan_gpu, divided by 100 once (plan_gpu "
                             "is percent of one GPU per instance; empty counts as 0; summed in whole percents, "
                             "so ten tasks of 10 % ask for exactly 1 GPU)",
    "gpu_request.fractional": "plan_gpu of some task not a multiple of 100",
    "time_patterns.recurring_job": "the group-tag table's `group`",
    "state.canonical": state_mapping_text(STATE_MAP) + " (running: still running at the trace end)",
}


def canonical_views(present: set[str]) -> dict[str, str]:
    """View name -> SELECT over the stored tables (by name), for the views PAI can publish."""
    views: dict[str, str] = {}
    if MACHINE_SPEC in present:
        views["gpu_capacity"] = f"""
            SELECT (SELECT min(cluster) FROM {JOBS}) AS cluster, NULL AS vc, gpu_type, NULL AS valid_from,
                   NULL AS valid_to, sum(cap_gpu) AS gpus, 'pai_machine_spec' AS source, 1 AS preference
            FROM {MACHINE_SPEC} WHERE cap_gpu > 0 GROUP BY gpu_type"""
    if TASK_TABLE in present:
        views["gpu_instance_requests"] = f"""
            SELECT job_name AS job, round(plan_gpu / 100, 4) AS gpus_per_instance,
                   plan_gpu % 100 <> 0 AS shares_gpu, inst_num AS instances
            FROM {TASK_TABLE} WHERE plan_gpu > 0 AND inst_num > 0"""
    return views
