"""Node-level GPU placement and the fill-up experiment of Weng et al., "Beware of Fragmentation"
(USENIX ATC 2023): a numpy cluster model, the paper's fragmentation measure F_n(M), six placement
policies (random, dotprod, gpu-clustering, gpu-packing, best-fit, fgd), the fill-up runner with
the owners' top-up, tie-break and reading, and the owners' own results beside ddlx's (`reference`).

    from ddlx.simulate.placement import run_experiment, summary_at
    results = run_experiment(nodes, pods, ["best-fit", "fgd"], seeds=range(10))
    summary_at(results)
"""

from __future__ import annotations

from ddlx.simulate.placement.cluster import MILLI, Cluster, Task, normalise_task, tasks_from_frame
from ddlx.simulate.placement.fillup import (
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
    run_experiment,
    summary_at,
)
from ddlx.simulate.placement.fragmentation import (
    DEFAULT_POPULARITY,
    FragmentationTracker,
    TargetWorkload,
    TaskClass,
    cluster_fragmentation,
    node_fragmentation,
    target_workload,
)
from ddlx.simulate.placement.policies import (
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

__all__ = [
    "DEFAULT_FILL_TO", "DEFAULT_POPULARITY", "DEFAULT_READING", "DEFAULT_TIE_BREAK", "FILL_UP_COLUMNS", "MILLI",
    "POLICIES", "READINGS", "TIE_BREAKS", "BestFitPolicy", "Cluster", "DotProductPolicy", "FGDPolicy",
    "FragmentationTracker", "GpuClusteringPolicy", "GpuPackingPolicy", "Placement", "PlacementOptionError",
    "PlacementPolicy", "RandomPolicy", "TargetWorkload", "Task", "TaskClass", "arrival_order",
    "check_placement_settings", "cluster_fragmentation", "fgd_score", "fill_up", "make_policy", "node_fragmentation",
    "node_order", "normalise_task", "run_experiment", "summary_at", "target_workload", "tasks_from_frame",
]
