"""Departure replay: the trace's real tasks (pods) replayed on its real nodes with their real
arrivals and departures, tracking how the free GPU capacity fragments. (The FGD paper's fill-up
experiment, without departures and policy by policy, is `ddlx.simulate.placement`.)

Data: the canonical `gpu_nodes` view (the nodes: GPUs, GPU model, CPU, memory) and `gpu_tasks`
view (the tasks of the workload: GPUs and share asked, CPU, memory, allowed GPU models, creation,
placement and departure in seconds), as the trace publishes them (`ddlx.datasets.canonical`).
Traces that publish neither have no node list with task requests: the part is recorded as not
applicable.

Definitions (declared here, registered through `ddlx.analysis.sharing`, which writes the results):
- `sharing.fragmentation.replay`: the event replay and its placement policy (best fit by GPU);
- `sharing.fragmentation.free_gpus`: free GPU capacity after an instant, whole and partial;
- `sharing.fragmentation.unusable_gpus`: free capacity no GPU request of the workload could use;
- `sharing.fragmentation.expected_unusable_gpus`: Weng et al.'s (ATC'23) expected fragmentation.

Units: GPU capacity in GPUs (milli-GPU, thousandths of one GPU, inside the replay and in the
`gpu_milli` of the tasks: `WHOLE_GPU_MILLI`); CPU in milli-cores (`cpu_milli`), memory in MiB (`memory_mib`), as the
trace gives them; times in seconds from the trace start (`t_s`), also as UTC timestamps (`t`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.model import ModuleResult
from ddlx.datasets.canonical import GPU_NODES, GPU_TASKS

#: Label of the row over every GPU model.
ALL = "all"
#: Milli-GPU of one whole GPU.
WHOLE_GPU_MILLI = 1000


DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "sharing.fragmentation.replay", "Replay of the real workload on the real nodes", "pods",
        "The tasks (pods) of the trace's gpu_tasks view, its default workload, are placed on the "
        "nodes of its gpu_nodes view (GPUs, GPU model, CPU, memory): {derivations}. A pod is "
        "placed at its scheduled_time (start_s) and leaves at its "
        "deletion_time (never-scheduled pods and pods with deletion_time <= scheduled_time are not "
        "placed; a pod without deletion_time stays). At one instant, departures come before "
        "placements, and placements go in (scheduled_time, creation_time, name) order. Placement "
        "policy, best fit by GPU: the candidate nodes have the free CPU and memory the pod asks "
        "for and, for a GPU pod, a GPU model its gpu_spec allows (any when NULL) and num_gpu GPUs "
        "each with at least the pod's share free (gpu_milli for num_gpu 1, else a whole GPU); the "
        "pod goes to the candidate left with the least free GPU capacity, then the least free "
        "CPU, then the first by node name (so CPU pods go to CPU-only nodes first). On the node "
        "it takes the GPUs with the least free share that still fits, then the lowest index. A "
        "pod that finds no candidate is counted as unplaced and not retried. GPUs of nodes "
        "without a GPU model are not used. The replay's instants are those of its events (a "
        "placement, placed or not, or the departure of a placed pod).",
    ),
    Definition(
        "sharing.fragmentation.free_gpus", "Free GPU capacity", "GPUs",
        "In the replay (sharing.fragmentation.replay), after the events of an instant: GPU "
        "capacity not taken by placed pods, in GPUs; whole = GPUs entirely free, partial = the "
        "free part of GPUs that placed pods share. Time-weighted means run from the first to the "
        "last event of the replay, each state holding until the next event.",
    ),
    Definition(
        "sharing.fragmentation.unusable_gpus", "Fragmented GPU capacity", "GPUs",
        "In the replay (sharing.fragmentation.replay), the free GPU capacity "
        "(sharing.fragmentation.free_gpus) that no GPU request of the default workload could "
        "use. The requests are the distinct (num_gpu, GPU share, cpu_milli, memory_mib, gpu_spec) "
        "of every default pod that asks for a GPU, scheduled or not. A request can use a GPU's "
        "free share f on a node when the node has the CPU and memory free that it asks for, a GPU "
        "model its gpu_spec allows, f is at least its share of one GPU, and, for num_gpu above 1, "
        "the node has at least num_gpu entirely free GPUs. A GPU's free share counts as "
        "fragmented when no request can use it, because of its size, the node's free CPU or "
        "memory, or its model. Time-weighted as in sharing.fragmentation.free_gpus.",
    ),
    Definition(
        "sharing.fragmentation.expected_unusable_gpus", "Expected fragmented GPU capacity", "GPUs",
        "The fragmentation measure of Weng et al. (ATC'23, 'Beware of Fragmentation'), in the "
        "replay: for each node and each request of the default workload (as in "
        "sharing.fragmentation.unusable_gpus), the free GPU capacity of the node that this request "
        "cannot use (all of it when the request does not fit on the node); averaged over the "
        "requests weighted by how many default GPU pods ask for each; summed over nodes. Unlike "
        "sharing.fragmentation.unusable_gpus it is above 0 even on an empty cluster, where nodes "
        "too small for some requests count.",
    ),
)


@dataclass
class FragmentationReplay:
    """What the replay of the default workload found.

    `series`: one row per event instant; `by_model`: one row per GPU model and 'all';
    `pods`: one row per replay outcome of the default pods."""

    series: pl.DataFrame
    by_model: pl.DataFrame
    pods: pl.DataFrame


@dataclass
class _Requests:
    """The distinct GPU requests of the workload (arrays over requests)."""

    num_gpu: np.ndarray      # GPUs asked
    milli: np.ndarray        # share of each GPU, thousandths
    cpu: np.ndarray          # cpu_milli
    mem: np.ndarray          # memory_mib
    allowed: np.ndarray      # [request, model index; last column: nodes without a model] bool
    weight: np.ndarray       # share of the workload's GPU pods asking for it


def _allowed_models(spec: str | None, models: list[str]) -> np.ndarray:
    """Models (by index, plus a last False column for nodes without GPUs) `spec` allows."""
    allowed = np.zeros(len(models) + 1, dtype=bool)
    if spec is None or spec.strip() == "":
        allowed[: len(models)] = True
    else:
        named = {part.strip() for part in spec.split("|")}
        for i, model in enumerate(models):
            allowed[i] = model in named
    return allowed


class _Cluster:
    """Free resources of the nodes during the replay, and their fragmentation."""

    def __init__(self, nodes: pl.DataFrame, models: list[str], requests: _Requests):
        self.gpus = nodes["gpu"].fill_null(0).to_numpy().astype(np.int64)
        width = max(1, int(self.gpus.max()) if len(self.gpus) else 1)
        slots = np.arange(width)[None, :] < self.gpus[:, None]
        self.free_milli = np.where(slots, WHOLE_GPU_MILLI, 0).astype(np.int64)
        self.free_cpu = nodes["cpu_milli"].fill_null(0).to_numpy().astype(np.int64)
        self.free_mem = nodes["memory_mib"].fill_null(0).to_numpy().astype(np.int64)
        index = {m: i for i, m in enumerate(models)}
        # Nodes without GPUs (or without a model) point at the last column: no model allowed.
        self.model = np.array([index.get(m, len(models)) if g > 0 else len(models)
                               for m, g in zip(nodes["model"].to_list(), self.gpus)], dtype=np.int64)
        self.node_free = self.free_milli.sum(axis=1)
        self.requests = requests
        self.need_whole = np.where(requests.num_gpu > 1, requests.num_gpu, 0)
        # Per node, as last measured: free milli, whole free GPUs, fragmented milli (integers) and
        # expected fragmented milli; and their sums per model column (kept up to date by `refresh`).
        self.measured = np.zeros((len(self.gpus), 3), dtype=np.int64)
        self.measured_expected = np.zeros(len(self.gpus), dtype=np.float64)
        self.totals = np.zeros((3, len(models) + 1), dtype=np.int64)
        self.totals_expected = np.zeros(len(models) + 1, dtype=np.float64)
        for n in range(len(self.gpus)):
            self.refresh(n)

    def refresh(self, n: int) -> None:
        """Re-measure node `n` (free and fragmented milli-GPUs) and update the per-model sums."""
        g = self.gpus[n]
        free = self.free_milli[n, :g]
        whole_free = int((free >= WHOLE_GPU_MILLI).sum())
        unusable, expected = 0, 0.0
        if self.node_free[n] > 0:
            r = self.requests
            fits = (r.cpu <= self.free_cpu[n]) & (r.mem <= self.free_mem[n]) & r.allowed[:, self.model[n]]
            usable = (fits & (whole_free >= self.need_whole))[:, None] & (free[None, :] >= r.milli[:, None])
            unusable = int(free[~usable.any(axis=0)].sum())
            expected = float(r.weight @ np.where(usable, 0, free[None, :]).sum(axis=1))
        now = np.array([self.node_free[n], whole_free, unusable], dtype=np.int64)
        column = self.model[n]
        self.totals[:, column] += now - self.measured[n]
        self.totals_expected[column] += expected - self.measured_expected[n]
        self.measured[n] = now
        self.measured_expected[n] = expected

    def place(self, num_gpu: int, milli: int, cpu: int, mem: int, allowed: np.ndarray) -> tuple[int, np.ndarray] | None:
        """Best fit by GPU (definition `sharing.fragmentation.replay`): the node and GPU slots
        taken, or None when no node fits."""
        candidates = np.flatnonzero((self.free_cpu >= cpu) & (self.free_mem >= mem))
        if num_gpu > 0 and candidates.size:
            gpu_fits = allowed[self.model[candidates]] & (
                (self.free_milli[candidates] >= milli).sum(axis=1) >= num_gpu)
            candidates = candidates[gpu_fits]
        if candidates.size == 0:
            return None
        gpu_after = self.node_free[candidates] - num_gpu * milli
        cpu_after = self.free_cpu[candidates] - cpu
        node = int(candidates[np.lexsort((candidates, cpu_after, gpu_after))[0]])
        slots = np.empty(0, dtype=np.int64)
        if num_gpu > 0:
            free = self.free_milli[node]
            eligible = np.flatnonzero(free >= milli)
            slots = eligible[np.lexsort((eligible, free[eligible]))][:num_gpu]
            self.free_milli[node, slots] -= milli
            self.node_free[node] -= num_gpu * milli
        self.free_cpu[node] -= cpu
        self.free_mem[node] -= mem
        return node, slots

    def release(self, node: int, slots: np.ndarray, milli: int, cpu: int, mem: int) -> None:
        self.free_milli[node, slots] += milli
        self.node_free[node] += len(slots) * milli
        self.free_cpu[node] += cpu
        self.free_mem[node] += mem


def _pod_share_milli(num_gpu: int | None, gpu_milli: int | None) -> tuple[int, int]:
    """(GPUs asked, thousandths of each GPU): whole GPUs when num_gpu > 1, gpu_milli of one when 1."""
    gpus = int(num_gpu or 0)
    if gpus > 1:
        return gpus, WHOLE_GPU_MILLI
    if gpus == 1 and (gpu_milli or 0) > 0:
        return 1, int(gpu_milli)
    return 0, 0


def replay_fragmentation(ctx: TraceContext) -> FragmentationReplay | None:
    """Replay the default workload (`gpu_tasks`) on the nodes (`gpu_nodes`) and track fragmented GPU capacity
    (definitions `sharing.fragmentation.*`); None when the node list has no GPU node, or the
    default workload no pod asking for a GPU or none that ran.

    The replay is an event loop in Python over the pods (placement and departure), with numpy
    over the nodes at each event: the default workload has about 8 k pods (about 14 k events) and
    the cluster about 1.5 k nodes, so this stays around a second. After each event only the nodes
    it touched are re-measured.
    """
    nodes = ctx.query(f"""SELECT node AS sn, cpu_milli, memory_mib, gpus AS gpu, gpu_model AS model
                          FROM {GPU_NODES.name} ORDER BY node""")
    pods = ctx.query(f"""
        SELECT task AS name, num_gpus AS num_gpu, gpu_milli, cpu_milli, memory_mib, gpu_models AS gpu_spec,
               submit_s AS creation_time, start_s AS scheduled_time, end_s AS deletion_time
        FROM {GPU_TASKS.name} ORDER BY scheduled_time, creation_time, name""")
    models = sorted({m for m, g in zip(nodes["model"].to_list(), nodes["gpu"].to_list()) if m and (g or 0) > 0})
    shares = [_pod_share_milli(k, m) for k, m in zip(pods["num_gpu"].to_list(), pods["gpu_milli"].to_list())]
    pods = pods.with_columns(pl.Series("gpus_asked", [s[0] for s in shares], dtype=pl.Int64),
                             pl.Series("milli", [s[1] for s in shares], dtype=pl.Int64))
    shapes = (pods.filter(pl.col("gpus_asked") > 0)
              .group_by("gpus_asked", "milli", "cpu_milli", "memory_mib", "gpu_spec")
              .agg(pl.len().alias("pods")).sort("gpus_asked", "milli", "cpu_milli", "memory_mib", "gpu_spec"))
    if shapes.is_empty() or not models:
        return None
    spec_cache: dict[str | None, np.ndarray] = {}

    def allowed_for(spec: str | None) -> np.ndarray:
        if spec not in spec_cache:
            spec_cache[spec] = _allowed_models(spec, models)
        return spec_cache[spec]

    requests = _Requests(
        num_gpu=shapes["gpus_asked"].to_numpy().astype(np.int64),
        milli=shapes["milli"].to_numpy().astype(np.int64),
        cpu=shapes["cpu_milli"].fill_null(0).to_numpy().astype(np.int64),
        mem=shapes["memory_mib"].fill_null(0).to_numpy().astype(np.int64),
        allowed=np.array([allowed_for(s) for s in shapes["gpu_spec"].to_list()]),
        weight=(shapes["pods"] / shapes["pods"].sum()).to_numpy(),
    )
    cluster = _Cluster(nodes, models, requests)

    # Events: (time, 0 = departure / 1 = placement, pod index: the pods are in placement order).
    events: list[tuple[int, int, int]] = []
    outcome = ["never scheduled"] * pods.height
    rows = pods.select("scheduled_time", "deletion_time").rows()
    for i, (scheduled, deleted) in enumerate(rows):
        if scheduled is None:
            continue
        if deleted is not None and deleted <= scheduled:
            outcome[i] = "zero run time"
            continue
        events.append((int(scheduled), 1, i))
        if deleted is not None:
            events.append((int(deleted), 0, i))
    events.sort()

    k_col, milli_col = pods["gpus_asked"].to_list(), pods["milli"].to_list()
    cpu_col = pods["cpu_milli"].fill_null(0).to_list()
    mem_col = pods["memory_mib"].fill_null(0).to_list()
    spec_col = pods["gpu_spec"].to_list()
    placed: dict[int, tuple[int, np.ndarray]] = {}
    record_t: list[int] = []
    record_running: list[int] = []
    record_totals: list[np.ndarray] = []       # [free milli, whole GPUs, fragmented milli] x model
    record_expected: list[np.ndarray] = []     # expected fragmented milli x model
    touched: set[int] = set()

    def record(t: int) -> None:
        for n in touched:
            cluster.refresh(n)
        touched.clear()
        record_t.append(t)
        record_running.append(len(placed))
        record_totals.append(cluster.totals.copy())
        record_expected.append(cluster.totals_expected.copy())

    current: int | None = None
    for t, kind, i in events:
        if kind == 0 and i not in placed:
            continue  # the departure of a pod the replay could not place changes nothing
        if current is not None and t != current:
            record(current)
        current = t
        if kind == 0:
            node, slots = placed.pop(i)
            cluster.release(node, slots, milli_col[i], cpu_col[i], mem_col[i])
            touched.add(node)
            continue
        spot = cluster.place(k_col[i], milli_col[i], cpu_col[i], mem_col[i], allowed_for(spec_col[i]))
        if spot is None:
            outcome[i] = "unplaced"
        else:
            outcome[i] = "placed"
            placed[i] = spot
            touched.add(spot[0])
    if current is None:
        return None
    record(current)

    # Per instant and GPU model (the last column, nodes without a GPU model, is dropped), in GPUs.
    totals = np.stack(record_totals)[:, :, : len(models)].astype(np.float64)
    state = _ReplayState(
        times=np.array(record_t, dtype=np.int64), running=np.array(record_running, dtype=np.int64),
        free=totals[:, 0] / WHOLE_GPU_MILLI, whole=totals[:, 1], fragmented=totals[:, 2] / WHOLE_GPU_MILLI,
        expected=np.stack(record_expected)[:, : len(models)] / WHOLE_GPU_MILLI)
    return FragmentationReplay(series=_replay_series(state), by_model=_replay_by_model(nodes, models, state),
                               pods=_replay_pods(pods, outcome))


@dataclass
class _ReplayState:
    """The replay after each event instant: arrays over instants, or instants x GPU models (GPUs)."""

    times: np.ndarray
    running: np.ndarray
    free: np.ndarray
    whole: np.ndarray
    fragmented: np.ndarray
    expected: np.ndarray


def _replay_series(state: _ReplayState) -> pl.DataFrame:
    """One row per event instant, over the GPU nodes of the cluster."""
    free = state.free.sum(axis=1)
    whole = state.whole.sum(axis=1)
    fragmented = state.fragmented.sum(axis=1)
    return pl.DataFrame({
        "t_s": state.times,
        "pods_running": state.running,
        "free_gpus": free,
        "free_whole_gpus": whole,
        "free_partial_gpus": free - whole,
        "fragmented_gpus": fragmented,
        "fragmented_share_of_free": np.divide(fragmented, free, out=np.full_like(free, np.nan), where=free > 0),
        "expected_fragmented_gpus": state.expected.sum(axis=1),
    }, nan_to_null=True).with_columns(
        pl.from_epoch("t_s", time_unit="s").dt.replace_time_zone("UTC").alias("t"),
    ).select("t_s", "t", "pods_running", "free_gpus", "free_whole_gpus", "free_partial_gpus",
             "fragmented_gpus", "fragmented_share_of_free", "expected_fragmented_gpus")


def _replay_by_model(nodes: pl.DataFrame, models: list[str], state: _ReplayState) -> pl.DataFrame:
    """Per GPU model and over all ('all'): time-weighted means (first to last event, each state
    holding until the next instant) of free and fragmented capacity, and the largest fragmented
    capacity seen."""
    weights = np.diff(state.times, append=state.times[-1]).astype(np.float64)
    span = weights.sum()

    def mean(values: np.ndarray) -> np.ndarray:
        return weights @ values / span if span > 0 else values[-1]

    def summary(free: np.ndarray, whole: np.ndarray, fragmented: np.ndarray, expected: np.ndarray) -> dict:
        mean_free, mean_fragmented = mean(free), mean(fragmented)
        return {
            "mean_free_gpus": mean_free,
            "mean_free_partial_gpus": mean(free - whole),
            "mean_fragmented_gpus": mean_fragmented,
            "fragmented_share_of_free": np.divide(mean_fragmented, mean_free,
                                                  out=np.full_like(mean_free, np.nan), where=mean_free > 0),
            "max_fragmented_gpus": fragmented.max(axis=0),
            "mean_expected_fragmented_gpus": mean(expected),
        }

    capacity = (nodes.filter(pl.col("gpu") > 0).group_by("model")
                .agg(pl.len().cast(pl.Int64).alias("nodes"), pl.col("gpu").sum().cast(pl.Int64).alias("gpus")))
    per_model = pl.DataFrame({"gpu_model": models, **summary(state.free, state.whole, state.fragmented,
                                                             state.expected)}, nan_to_null=True)
    per_model = per_model.join(capacity.rename({"model": "gpu_model"}), on="gpu_model", how="left")
    overall = {k: np.atleast_1d(v) for k, v in summary(*(a.sum(axis=1) for a in (
        state.free, state.whole, state.fragmented, state.expected))).items()}
    total = pl.DataFrame({"gpu_model": [ALL], **overall, "nodes": [int(per_model["nodes"].sum())],
                          "gpus": [int(per_model["gpus"].sum())]}, nan_to_null=True)
    columns = ["gpu_model", "nodes", "gpus", "mean_free_gpus", "mean_free_partial_gpus", "mean_fragmented_gpus",
               "fragmented_share_of_free", "max_fragmented_gpus", "mean_expected_fragmented_gpus"]
    return pl.concat([total.select(columns), per_model.select(columns).cast(total.select(columns).schema)])


def _replay_pods(pods: pl.DataFrame, outcome: list[str]) -> pl.DataFrame:
    """Default pods per replay outcome: pods, GPU pods and GPUs asked."""
    order = {"placed": 0, "unplaced": 1, "zero run time": 2, "never scheduled": 3}
    frame = (pods.with_columns(pl.Series("outcome", outcome))
             .group_by("outcome")
             .agg(pl.len().alias("pods"),
                  (pl.col("gpus_asked") > 0).sum().alias("gpu_pods"),
                  (pl.col("gpus_asked") * pl.col("milli")).sum().alias("gpu_milli")))
    return (frame.with_columns((pl.col("gpu_milli") / WHOLE_GPU_MILLI).alias("gpus"))
            .sort(pl.col("outcome").replace_strict(order, return_dtype=pl.Int32))
            .select("outcome", pl.col("pods").cast(pl.Int64), pl.col("gpu_pods").cast(pl.Int64), "gpus"))


# ---------------------------------------------------------------------------------------------
# Results (written by the `sharing` module)
# ---------------------------------------------------------------------------------------------


def analyze_fragmentation(ctx: TraceContext, result: ModuleResult) -> None:
    """Add the replay's tables and findings to `result` (module `sharing`), or record why it does
    not apply."""
    if not ctx.has_view(GPU_NODES.name, GPU_TASKS.name):
        result.skip("fragmentation of GPU capacity (replay)",
                    f"{ctx.label} publishes no node list with task requests to replay (gpu_nodes, gpu_tasks)")
        return
    replay = replay_fragmentation(ctx)
    if replay is None:
        result.skip("fragmentation of GPU capacity (replay)",
                    "the node list has no GPU node, or the default workload no pod asking for a GPU "
                    "or none that ran")
        return
    series_definitions = ("sharing.fragmentation.replay", "sharing.fragmentation.free_gpus",
                          "sharing.fragmentation.unusable_gpus", "sharing.fragmentation.expected_unusable_gpus")
    result.add("fragmentation_series", replay.series, series_definitions,
               "an instant of the replay (after its events), seconds from the trace start")
    by_model = result.add("fragmentation_by_model", replay.by_model, series_definitions,
                          "a GPU model of the node list, or 'all'")
    pods = result.add("fragmentation_pods", replay.pods, ("sharing.fragmentation.replay",),
                      "an outcome of the replay for default pods")
    overall = by_model.filter(pl.col("gpu_model") == ALL)
    population = "the replay of the default workload with its real arrivals and departures, first to last event"
    replayed = int(pods.filter(pl.col("outcome").is_in(["placed", "unplaced"]))["pods"].sum())
    result.add_finding("fragmented_gpus_mean", "mean fragmented GPU capacity (time-weighted)",
                       overall["mean_fragmented_gpus"][0], "GPUs", "sharing.fragmentation.unusable_gpus", population,
                       basis=replayed)
    result.add_finding("fragmented_share_of_free", "fragmented share of free GPU capacity",
                       overall["fragmented_share_of_free"][0], "fraction", "sharing.fragmentation.unusable_gpus",
                       population, basis=replayed)
    unplaced = pods.filter(pl.col("outcome") == "unplaced")
    result.add_finding(
        "unplaced_pods", "scheduled pods the replay could not place", int(unplaced["pods"].sum()), "pods",
        "sharing.fragmentation.replay",
        f"{replayed:,} pods replayed")
