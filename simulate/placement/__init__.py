"""Node-level GPU placement and the fill-up experiment of Weng et al., "Beware of Fragmentation"
(USENIX ATC 2023): a numpy cluster model, the paper's fragmentation measure F_n(M), six placement
policies (random, dotprod, gpu-clustering, gpu-packing, best-fit, fgd) and the fill-up runner.

    from ddlx.simulate.placement import run_experiment, summary_at
    results = run_experiment(nodes, pods, ["best-fit", "fgd"], seeds=range(10))
    summary_at(results)
"""

from __future__ import annotations

from ddlx.simulate.placement.cluster import MILLI, Cluster, Task, normalise_task, tasks_from_frame
from ddlx.simulate.placement.fillup import FILL_UP_COLUMNS, arrival_order, fill_up, run_experiment, summary_at
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
    "DEFAULT_POPULARITY", "FILL_UP_COLUMNS", "MILLI", "POLICIES", "BestFitPolicy", "Cluster", "DotProductPolicy",
    "FGDPolicy", "FragmentationTracker", "GpuClusteringPolicy", "GpuPackingPolicy", "Placement", "PlacementPolicy",
    "RandomPolicy", "TargetWorkload", "Task", "TaskClass", "arrival_order", "cluster_fragmentation", "fgd_score",
    "fill_up", "make_policy", "node_fragmentation", "normalise_task", "run_experiment", "summary_at",
    "target_workload", "tasks_from_frame",
]
