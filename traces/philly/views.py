"""Philly's canonical views beyond jobs, their definitions, and how Philly derives the core definitions.

- `gpu_capacity`: two views of the same cluster that disagree, both published: GPUs seen in the
  utilisation log (`capacity.philly_gpu_util`, preferred) and GPUs of the machine list
  (`capacity.philly_machine_list`, known to under-count);
- `attempts`: the scheduling attempts of each job (`philly_attempts`).
"""

from __future__ import annotations

from ddlx.analysis.definitions import Definition
from ddlx.datasets.canonical import state_mapping_text
from ddlx.traces.philly.reader import (
    ATTEMPTS_TABLE,
    GPU_UTIL,
    GPUS_SEEN_SQL,
    JOBS_TABLE,
    MACHINE_LIST,
    STATE_MAP,
)

DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "capacity.philly_machine_list", "GPU capacity, Philly machine list", "GPUs",
        "Philly: the sum of 'number of GPUs' over the machines of cluster_machine_list "
        "(philly_machine_list). Known to under-count: some machines show more GPUs in the "
        "utilisation log. One capacity for the whole trace, no VC (the trace gives no VC sizes).",
    ),
    Definition(
        "capacity.philly_gpu_util", "GPU capacity, GPUs seen in the Philly utilisation log", "GPUs",
        "Philly: for each machine of cluster_gpu_util (philly_gpu_util), the most GPU fields with a "
        "number (neither NA nor empty) in any one of its per-minute rows, summed over machines. "
        "Preferred over the machine list for shares of capacity. One capacity for the whole trace, "
        "no VC.",
    ),
)

#: How Philly derives the core definitions (`ddlx.analysis.definitions`).
DERIVATIONS: dict[str, str] = {
    "utilization.allocated_gpus": "from the earliest attempt start to the last attempt's end with the GPUs of its "
                                  "largest attempt (gaps between attempts count as held)",
    "queue_delay.submit_to_first_start": "submitted_time to the earliest start of any attempt",
    "runtime.first_start_to_last_end": "earliest attempt start to the last attempt's end",
    "gpu_request.job_total": "GPUs listed in the detail of the job's largest attempt",
    "runtime.sum_of_attempts": "duration_s of each attempt of the job log, end - start in UTC",
    "failures.gpu_time_of_attempts": "an attempt's GPUs are the entries of the gpus lists of its detail",
    "state.canonical": state_mapping_text(STATE_MAP) + " (a job whose last attempt has no end keeps its status: "
                       "the end was not logged)",
}

_CLUSTER = f"(SELECT min(cluster) FROM {JOBS_TABLE})"


def canonical_views(present: set[str]) -> dict[str, str]:
    """View name -> SELECT over the stored tables (by name), for the views Philly can publish."""
    views: dict[str, str] = {}
    capacity = []
    if GPU_UTIL in present:
        capacity.append(f"""
            SELECT {_CLUSTER} AS cluster, NULL AS vc, NULL AS gpu_type, NULL AS valid_from, NULL AS valid_to,
                   sum(gpus) AS gpus, 'philly_gpu_util' AS source, 1 AS preference
            FROM {GPUS_SEEN_SQL} HAVING count(*) > 0""")
    if MACHINE_LIST in present:
        capacity.append(f"""
            SELECT {_CLUSTER} AS cluster, NULL AS vc, NULL AS gpu_type, NULL AS valid_from, NULL AS valid_to,
                   sum(num_gpus) AS gpus, 'philly_machine_list' AS source, 2 AS preference
            FROM {MACHINE_LIST} HAVING count(*) > 0""")
    if capacity:
        views["gpu_capacity"] = " UNION ALL ".join(capacity)
    if ATTEMPTS_TABLE in present:
        views["attempts"] = f"""
            SELECT {_CLUSTER} AS cluster, jobid AS job_id, attempt, start_time, end_time, duration_s, num_gpus,
                   is_last_attempt, running_at_trace_end
            FROM {ATTEMPTS_TABLE}"""
    return views
