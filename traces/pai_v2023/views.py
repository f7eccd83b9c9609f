"""Alibaba v2023's canonical views beyond jobs, their definitions, and how it derives the core
definitions.

- `gpu_capacity`: GPUs per GPU model of one node list (`capacity.pai_v2023_nodes`);
- `gpu_nodes`: that node list (all_node when ingested, else gpu_node: the two hold the same GPU
  nodes under other names, so only one is used);
- `gpu_tasks`: the pods of the real workload (`default`), with what each asks of one node and
  when it was created, scheduled and deleted (seconds from the trace start);
- `gpu_task_lists`: every pod list ingested (the real `default` and the owners' resamplings), with
  what each pod asks of one node: the input of the fill-up placement experiment.
"""

from __future__ import annotations

from ddlx.analysis.definitions import Definition
from ddlx.datasets.canonical import state_mapping_text
from ddlx.traces.pai_v2023.reader import JOBS, NODES, PODS, REAL_WORKLOAD, STATE_MAP

DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "capacity.pai_v2023_nodes", "GPU capacity, Alibaba v2023 nodes", "GPUs",
        "Alibaba v2023: GPUs of each GPU model, the sum of gpu over the nodes of one node list: "
        "all_node when ingested, else gpu_node (the two lists hold the same GPU nodes under other "
        "names, so only one is counted). One capacity for the whole trace.",
    ),
)

#: How Alibaba v2023 derives the core definitions (`ddlx.analysis.definitions`).
DERIVATIONS: dict[str, str] = {
    "sharing.gpus_per_instance": "a pod is an instance of its own: gpu_milli / 1000 with num_gpu 1, else num_gpu; "
                                 "it shares a GPU when num_gpu is 1 and gpu_milli below 1000",
    "sharing.fractional_share": "'unspecified' are pods that allow any or several GPU models",
    "utilization.allocated_gpus": "scheduled_time to deletion_time",
    "queue_delay.submit_to_first_start": "pod creation_time to scheduled_time",
    "runtime.first_start_to_last_end": "scheduled_time to deletion_time",
    "gpu_request.job_total": "gpu_milli / 1000 when num_gpu is 1, else num_gpu",
    "gpu_request.fractional": "num_gpu 1 and gpu_milli below 1000",
    "state.canonical": ("never scheduled -> pending, " + state_mapping_text(STATE_MAP)
                        + ", except Running -> running when its deletion_time is the workload's last one "
                          "(the trace ends there) or it has none"),
}

#: The node list used: all_node when ingested, else gpu_node.
NODE_LIST = (f"(SELECT CASE WHEN bool_or(node_list = 'all_node') THEN 'all_node' ELSE min(node_list) END "
             f"FROM {NODES})")


def canonical_views(present: set[str]) -> dict[str, str]:
    """View name -> SELECT over the stored tables (by name), for the views v2023 can publish."""
    views: dict[str, str] = {}
    if NODES in present:
        views["gpu_capacity"] = f"""
            SELECT (SELECT min(cluster) FROM {JOBS}) AS cluster, NULL AS vc, model AS gpu_type, NULL AS valid_from,
                   NULL AS valid_to, sum(gpu) AS gpus, 'pai_v2023_nodes' AS source, 1 AS preference
            FROM {NODES} WHERE node_list = {NODE_LIST} AND gpu > 0 GROUP BY model"""
        views["gpu_nodes"] = f"""
            SELECT sn AS node, cpu_milli, memory_mib, gpu AS gpus, model AS gpu_model
            FROM {NODES} WHERE node_list = {NODE_LIST}"""
    if PODS in present:
        views["gpu_tasks"] = f"""
            SELECT name AS task, num_gpu AS num_gpus, gpu_milli, cpu_milli, memory_mib, gpu_spec AS gpu_models,
                   creation_time AS submit_s, scheduled_time AS start_s, deletion_time AS end_s
            FROM {PODS} WHERE workload = '{REAL_WORKLOAD}'"""
        views["gpu_task_lists"] = f"""
            SELECT workload AS task_list, name AS task, num_gpu AS num_gpus, gpu_milli, cpu_milli, memory_mib,
                   gpu_spec AS gpu_models
            FROM {PODS}"""
    return views
