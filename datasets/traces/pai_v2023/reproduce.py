"""Published figures of the Alibaba GPU cluster trace v2023 (profile `openb-atc23`): the cluster and
workload the ATC'23 paper "Beware of Fragmentation" studies, counted from the released node and pod
lists, and the paper's headline scheduling result.

Every count reads the stored tables `pai_v2023_nodes` (the `all_node` list) and `pai_v2023_pods`
(the `default` workload, the real one; the other pod lists are the owners' resamplings).
"""

from __future__ import annotations

from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.datasets.sqltext import sql_string
from ddlx.datasets.traces.pai_v2023.reader import NODES, PODS, REAL_WORKLOAD
from ddlx.reproduce.model import EXACT, NotComputable, Profile, PublishedFigure, require_tables, rounded, within

_PAPER = ("Weng et al., \"Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation "
          "Gradient Descent\", USENIX ATC 2023")
_NODE_FILE = "release file openb_node_list_all_node.csv (alibaba/clusterdata cluster-trace-gpu-v2023)"
_POD_FILE = "release file openb_pod_list_default.csv (alibaba/clusterdata cluster-trace-gpu-v2023)"

DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "paper.openb_atc23.nodes", "Nodes of the openb cluster (ATC'23)", "nodes or GPUs",
        "Rows of the released all-node list (openb_node_list_all_node.csv), every node with or "
        "without GPUs; a GPU node has gpu > 0; GPUs are the sum of gpu over the list, per GPU model "
        "the sum over the nodes of that model (G2 and G3 are models the owners left unnamed).",
    ),
    Definition(
        "paper.openb_atc23.pods", "Pods of the openb workload (ATC'23)", "pods or percent",
        "Rows of the released default pod list (openb_pod_list_default.csv), the real workload the "
        "resampled lists derive from. A GPU pod has num_gpu > 0; a GPU-sharing pod asks for part of "
        "one GPU (num_gpu = 1 and gpu_milli < 1000), its share taken over the GPU pods; a multi-GPU "
        "pod has num_gpu > 1; QoS classes are the qos field as written.",
    ),
    Definition(
        "paper.openb_atc23.fgd_unallocated", "GPUs left unallocated under FGD (ATC'23)", "percent or GPUs",
        "The paper's fill-up experiment (ddlx placement): the default pod list, shuffled and topped up "
        "with pods drawn from it, arrives without departures on the GPU nodes until the GPUs requested "
        "reach 1.3 x the cluster's capacity, under each of Random, DotProd, GpuClustering, GpuPacking, "
        "BestFit and fragmentation gradient descent (FGD), for seeds 0-9, score ties going to the first "
        "node of a seeded random node order. The unallocated GPU share is 1 - allocated GPUs / capacity, "
        "at an arrived-workload level the mean over the arrivals whose arrived workload rounds to it "
        "(the owners' reading). At each "
        "level from 50 % to 130 % of capacity (steps of 1 %), FGD's cut is (best other policy's mean "
        "share - FGD's mean share) / the best other's; the figure is the largest cut, in percent, and "
        "the GPUs it saves at that level. The paper's headline: up to 49 % fewer unallocated GPUs, "
        "about 290 GPUs, against the best baseline.",
    ),
)

_GPU_MODELS: tuple[tuple[str, int], ...] = (
    ("G2", 4392), ("T4", 842), ("G3", 312), ("P100", 265), ("V100M32", 204), ("V100M16", 195), ("A10", 2))
_QOS: tuple[tuple[str, int], ...] = (("LS", 4647), ("BE", 3398), ("Burstable", 100), ("Guaranteed", 7))


def _nodes(ctx: TraceContext, select: str, where: str = "TRUE") -> float | None:
    require_tables(ctx, NODES)
    if not ctx.one_row(f"SELECT count(*) AS n FROM {NODES} WHERE node_list = 'all_node'")["n"]:
        raise NotComputable("the catalog lacks the all-node list (openb_node_list_all_node.csv)")
    return ctx.one_row(f"SELECT {select} AS v FROM {NODES} WHERE node_list = 'all_node' AND ({where})")["v"]


def _pods(ctx: TraceContext, select: str) -> float | None:
    require_tables(ctx, PODS)
    found = ctx.one_row(f"SELECT count(*) AS n, {select} AS v FROM {PODS} "
                        f"WHERE workload = {sql_string(REAL_WORKLOAD)}")
    if not found["n"]:
        raise NotComputable("the catalog lacks the default pod list (openb_pod_list_default.csv)")
    return found["v"]


#: Seeds of the fill-up experiment behind the FGD figures.
FILL_UP_SEEDS = 10
_GAINS: dict[tuple[str, str], dict] = {}


def _fgd_gain(ctx: TraceContext) -> dict:
    """FGD's largest cut against the best other policy in the fill-up of the default pod list on the
    GPU nodes (both FGD figures read one run, kept per catalog version)."""
    from ddlx.simulate.placement.experiment import run_placement
    from ddlx.simulate.placement.inputs import PlacementInputError, inputs_from

    key = (str(ctx.provenance.get("catalog")), str(ctx.provenance.get("store_version")))
    if key not in _GAINS:
        try:
            inputs = inputs_from(ctx, REAL_WORKLOAD, "gpu")
        except PlacementInputError as exc:
            raise NotComputable(str(exc)) from None
        _GAINS[key] = run_placement(inputs, None, FILL_UP_SEEDS).gain
    if not _GAINS[key]:
        raise NotComputable("no policy left GPUs unallocated at any level: there is no cut to measure")
    return _GAINS[key]


def _node_figure(figure_id: str, what: str, published: int, unit: str, select: str,
                 where: str = "TRUE") -> PublishedFigure:
    return PublishedFigure(figure_id, what, _NODE_FILE, published, unit, "paper.openb_atc23.nodes", EXACT,
                           lambda ctx: _nodes(ctx, select, where))


def _pod_figure(figure_id: str, what: str, published: float, select: str, unit: str = "pods",
                tolerance=EXACT) -> PublishedFigure:
    return PublishedFigure(figure_id, what, _POD_FILE, published, unit, "paper.openb_atc23.pods", tolerance,
                           lambda ctx: _pods(ctx, select))


PROFILES: tuple[Profile, ...] = (
    Profile(
        name="openb-atc23",
        paper=_PAPER,
        dataset="pai-v2023",
        description="The openb cluster and workload of the Alibaba GPU cluster trace v2023, and FGD's headline.",
        get_data="Ingest the trace: ddlx datasets download pai-v2023, then ddlx datasets ingest pai-v2023 --from DIR.",
        figures=(
            _node_figure("nodes", "nodes", 1523, "nodes", "count(*)"),
            _node_figure("gpu_nodes", "nodes with GPUs", 1213, "nodes", "count(*)", "gpu > 0"),
            _node_figure("gpus", "GPUs", 6212, "GPUs", "coalesce(sum(gpu), 0)"),
            *(_node_figure(f"gpus_{model}", f"{model} GPUs", count, "GPUs", "coalesce(sum(gpu), 0)",
                           f"model = {sql_string(model)}") for model, count in _GPU_MODELS),
            _pod_figure("pods", "pods", 8152, "count(*)"),
            _pod_figure("gpu_pods", "pods asking for GPUs", 7064, "count(*) FILTER (WHERE num_gpu > 0)"),
            _pod_figure("sharing_pods", "GPU-sharing pods (part of one GPU)", 3078,
                        "count(*) FILTER (WHERE num_gpu = 1 AND gpu_milli < 1000)"),
            _pod_figure("sharing_share", "GPU-sharing pods, share of GPU pods", 43.6,
                        "100.0 * count(*) FILTER (WHERE num_gpu = 1 AND gpu_milli < 1000) "
                        "/ nullif(count(*) FILTER (WHERE num_gpu > 0), 0)", "%", rounded(1)),
            _pod_figure("multi_gpu_pods", "multi-GPU pods", 75, "count(*) FILTER (WHERE num_gpu > 1)"),
            *(_pod_figure(f"qos_{qos}", f"pods of QoS class {qos}", count,
                          f"count(*) FILTER (WHERE qos = {sql_string(qos)})") for qos, count in _QOS),
            PublishedFigure(
                "fgd_unallocated_reduction", "fewer unallocated GPUs under FGD than the best baseline, at most",
                "ATC'23 abstract", 49.0, "%", "paper.openb_atc23.fgd_unallocated",
                within(1.0, "the abstract gives whole percents"), lambda ctx: _fgd_gain(ctx)["cut_share"] * 100,
                experiment=True),
            PublishedFigure(
                "fgd_unallocated_reduction_gpus", "GPUs FGD leaves unallocated fewer than the best baseline, there",
                "ATC'23 abstract (\"about 290 GPUs\")", 290.0, "GPUs", "paper.openb_atc23.fgd_unallocated",
                within(10.0, "stated as about 290"), lambda ctx: _fgd_gain(ctx)["cut_gpus"], experiment=True),
        ),
        definitions=DEFINITIONS,
    ),
)
