"""Node-level GPU placement and the fill-up experiment of Weng et al., "Beware of Fragmentation"
(USENIX ATC 2023): a numpy cluster model, the paper's fragmentation measure F_n(M), six placement
policies (random, dotprod, gpu-clustering, gpu-packing, best-fit, fgd), the fill-up runner with
the owners' top-up, tie-break and reading, the replay of arrivals with departures on the same
cluster model and policies (`replay`), and the owners' own results beside ddlx's (`reference`).

    from ddlx.placement import run_experiment, summary_at
    results = run_experiment(nodes, pods, ["best-fit", "fgd"], seeds=range(10))
    summary_at(results)
    run_replay(nodes, pods_with_arrive_and_depart, "best-fit")
"""

from __future__ import annotations

from ddlx.placement.cluster import MILLI, Cluster, Task, normalise_task, tasks_from_frame
from ddlx.placement.fillup import (
    DEFAULT_FILL_TO,
    DEFAULT_READING,
    DEFAULT_TIE_BREAK,
    FILL_UP_COLUMNS,
    READINGS,
    TIE_BREAKS,
    PlacementOptionError,
    arrival_order,
    check_placement_settings,
    fill_up,
    node_order,
    prepared_run,
    run_experiment,
    summary_at,
)
from ddlx.placement.fragmentation import (
    DEFAULT_MEASURE,
    DEFAULT_POPULARITY,
    DEFAULT_TARGET_PODS,
    FRAGMENTATION_MEASURES,
    TARGET_PODS,
    FragmentationOptionError,
    FragmentationTracker,
    TargetWorkload,
    TaskClass,
    check_fragmentation_settings,
    cluster_fragmentation,
    node_fragmentation,
    node_measures,
    node_unusable,
    target_workload,
)
from ddlx.placement.policies import (
    POLICIES,
    BestFitPolicy,
    DotProductPolicy,
    FGDPolicy,
    GpuClusteringPolicy,
    GpuPackingPolicy,
    Placement,
    PlacementPolicy,
    RandomPolicy,
    fgd_score,
    make_policy,
)
from ddlx.placement.replay import DEFAULT_REPLAY_POLICY, OUTCOMES, REPLAY_COLUMNS, Replay, run_replay

__all__ = [
    "DEFAULT_FILL_TO", "DEFAULT_MEASURE", "DEFAULT_POPULARITY", "DEFAULT_READING", "DEFAULT_REPLAY_POLICY",
    "DEFAULT_TARGET_PODS", "DEFAULT_TIE_BREAK", "FILL_UP_COLUMNS", "FRAGMENTATION_MEASURES", "MILLI", "OUTCOMES",
    "POLICIES", "READINGS", "REPLAY_COLUMNS", "TARGET_PODS", "TIE_BREAKS", "BestFitPolicy", "Cluster",
    "DotProductPolicy", "FGDPolicy", "FragmentationOptionError", "FragmentationTracker", "GpuClusteringPolicy",
    "GpuPackingPolicy", "Placement", "PlacementOptionError", "PlacementPolicy", "RandomPolicy", "Replay",
    "TargetWorkload", "Task", "TaskClass", "arrival_order", "check_fragmentation_settings", "check_placement_settings",
    "cluster_fragmentation", "fgd_score", "fill_up", "make_policy", "node_fragmentation", "node_measures",
    "node_order", "node_unusable", "normalise_task", "prepared_run", "run_experiment", "run_replay", "summary_at",
    "target_workload", "tasks_from_frame",
]
