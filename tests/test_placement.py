"""Placement engine: every policy's choice and the fragmentation worked out by hand on 2-3 node
clusters, conservation and determinism of the fill-up."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from ddlx.errors import UsageError
from ddlx.placement import (
    POLICIES,
    Cluster,
    PlacementOptionError,
    TargetWorkload,
    Task,
    TaskClass,
    arrival_order,
    check_placement_settings,
    cluster_fragmentation,
    fill_up,
    make_policy,
    node_fragmentation,
    node_order,
    run_experiment,
    summary_at,
    target_workload,
    tasks_from_frame,
)
from ddlx.placement.fillup import arrived_percent


def nodes_frame(rows: list[tuple[str, int, int, int, str | None]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"node": pl.String, "cpu_milli": pl.Int64, "memory_mib": pl.Int64,
                                      "gpus": pl.Int64, "gpu_model": pl.String}, orient="row")


def workload(classes: list[tuple[int, int, int, float]]) -> TargetWorkload:
    """Hand-made target workload: (milli-CPU, milli-GPU, GPUs, popularity)."""
    w = np.array([c[3] for c in classes])
    return TargetWorkload([TaskClass(c, g, n, None) for c, g, n, _ in classes], w, np.ones(len(classes), np.int64), 1.0)


# n0: 32 cores, 2 x V100; n1: 64 cores, 4 x T4; n2: 16 cores, CPU-only.
CLUSTER_A = nodes_frame([("n0", 32000, 65536, 2, "V100"), ("n1", 64000, 131072, 4, "T4"),
                         ("n2", 16000, 32768, 0, None)])
TW_A = workload([(1000, 500, 1, 1.0)])


def choose(policy: str, cluster: Cluster, task: Task, target: TargetWorkload = TW_A):
    return make_policy(policy, target, seed=0).select(cluster, task)


@pytest.mark.parametrize("policy", list(POLICIES))
def test_model_constraint_and_fit_nowhere(policy: str) -> None:
    cluster = Cluster.from_frames(CLUSTER_A)
    # Only n1 has T4 GPUs: every policy must put the 1-GPU T4 task there, on its first free GPU.
    assert choose(policy, cluster, Task(1, 1000, 1000, 1024, "T4")) == (1, (0,))
    # 8 whole GPUs: no node has 8 GPUs -> None.
    assert choose(policy, cluster, Task(8, 1000, 1000, 1024)) is None
    # 80 cores: no node has them -> None; a GPU task on a model no node has -> None.
    assert choose(policy, cluster, Task(0, 0, 80000, 1024)) is None
    assert choose(policy, cluster, Task(1, 200, 1000, 1024, "A100")) is None
    # memory must fit on the same node: 100 GiB only fits n1.
    assert choose(policy, cluster, Task(0, 0, 1000, 102400)).node == 1


def test_best_fit_and_dotprod_fractional_and_cpu_only() -> None:
    cluster = Cluster.from_frames(CLUSTER_A)
    frac = Task(1, 500, 4000, 1024)
    # best-fit s = .5 (cpu free - 4000)/128000 + .5 (gpu free - 500)/8000:
    #   n0: .5*28000/128000 + .5*1500/8000 = .109375 + .09375 = .203125 -> int(79.69) = 79
    #   n1: .5*60000/128000 + .5*3500/8000 = .234375 + .21875 = .453125 -> 54; n2 has no GPU.
    assert choose("best-fit", cluster, frac) == (0, (0,))
    # dotprod dot = cpu/128000 * 4000/128000 + gpu/8000 * 500/8000:
    #   n0: .25*.03125 + .25*.0625 = .0234375 -> int(100 (1 - .01171875)) = 98; n1: .046875 -> 97.
    assert choose("dotprod", cluster, frac) == (0, (0,))
    cpu_task = Task(0, 0, 8000, 1024)
    # best-fit: n0 .5*24000/128000 + .5*2000/8000 = .21875 -> 78; n1 .21875 + .25 -> 53;
    #           n2 .5*8000/128000 = .03125 -> 96  => n2.
    assert choose("best-fit", cluster, cpu_task) == (2, ())
    # dotprod: n0 (.25*.0625)/2 -> int(99.22) = 99; n1 (.5*.0625)/2 -> 98; n2 (.125*.0625)/2 -> int(99.61) = 99
    #          => tie n0/n2 at 99, lowest index wins => n0.
    assert choose("dotprod", cluster, cpu_task) == (0, ())


def used_cluster() -> Cluster:
    """CLUSTER_A with a 300-milli GPU-sharing task already on n1's GPU 2 (n1 free: 1000 1000 700 1000)."""
    cluster = Cluster.from_frames(CLUSTER_A)
    cluster.place(1, (2,), Task(1, 300, 1000, 1024))
    return cluster


def test_gpu_packing() -> None:
    cluster = used_cluster()
    # fractional 500: n0 entirely free (F = G = 2) -> max(33 - 2, 2) = 31;
    # n1 tightest GPU that fits is GPU 2 (700 free, shared) -> 100 - (700*100//1000)//10 = 93 => n1, GPU 2.
    assert choose("gpu-packing", cluster, Task(1, 500, 1000, 1024)) == (1, (2,))
    # one whole GPU: n0 31; n1 must use a fully free GPU -> max(50 - 1, 33) = 49 => n1, first free GPU 0.
    assert choose("gpu-packing", cluster, Task(1, 1000, 1000, 1024)) == (1, (0,))


def test_gpu_clustering() -> None:
    cluster = used_cluster()
    # 1-GPU task (tag 1-gpu): n0 holds no GPU task: 25*(8000-2000)//8000 + 25 = 18 + 25 = 43;
    # n1 holds only the share tag: 25*(8000-3700)//8000 + 0 = 13 => n0, GPU 0.
    assert choose("gpu-clustering", cluster, Task(1, 1000, 1000, 1024)) == (0, (0,))
    # a sharing task: n1 holds only its tag -> 13 + 75 = 88 > 43 => n1, best-fit GPU 2 (700 free).
    assert choose("gpu-clustering", cluster, Task(1, 200, 1000, 1024)) == (1, (2,))
    # CPU-only tasks score 0 everywhere -> lowest index.
    assert choose("gpu-clustering", cluster, Task(0, 0, 1000, 1024)) == (0, ())


def test_random_is_seeded_and_feasible() -> None:
    cluster = used_cluster()
    task = Task(1, 500, 1000, 1024)
    picks = [make_policy("random", None, seed=s).select(cluster, task) for s in range(40)]
    again = [make_policy("random", None, seed=s).select(cluster, task) for s in range(40)]
    assert picks == again
    assert {p.node for p in picks} == {0, 1}  # both GPU nodes drawn, never the CPU-only n2
    assert all(cluster.gpu_free[p.node, p.gpus[0]] >= 500 for p in picks)
    assert len({p.gpus for p in picks if p.node == 1}) > 1  # GPU drawn among those that fit


# FGD vs best-fit. n0: 32 cores, 1 GPU; n1: 32 cores, 2 GPUs, GPU 0 already has 600 used (free 400, 1000).
# Target M: (1 core, 0.5 GPU) p .5 and (1 core, 1 GPU) p .5.
CLUSTER_B = nodes_frame([("n0", 32000, 65536, 1, "A"), ("n1", 32000, 65536, 2, "A")])
TW_B = workload([(1000, 500, 1, 0.5), (1000, 1000, 1, 0.5)])


def cluster_b() -> Cluster:
    cluster = Cluster.from_frames(CLUSTER_B)
    cluster.place(1, (0,), Task(1, 600, 1000, 1024))
    return cluster


def test_fragmentation_by_hand() -> None:
    cluster = cluster_b()
    # n0 [1000]: both classes run; no GPU below 500 or 1000 -> F = 0.
    # n1 [400, 1000]: both run; GPU 0 (400) is below both requests -> F = .5*400 + .5*400 = 400 milli.
    frag = node_fragmentation(cluster.cpu_free, cluster.gpu_free, cluster.model_idx, TW_B, cluster.models)
    assert frag.tolist() == pytest.approx([0.0, 400.0])
    assert cluster_fragmentation(cluster, TW_B) == pytest.approx(0.4)
    # lack of CPU: with 500 milli-CPU free no class runs -> F = all free GPU = 1400.
    assert node_fragmentation(np.array([500]), np.array([[400, 1000]]), np.array([0]), TW_B, ["A"])[0] == 1400
    # CPU-only class: every free GPU share is fragment (700), fitting or not.
    tw_cpu = workload([(1000, 0, 0, 1.0)])
    assert node_fragmentation(np.array([32000]), np.array([[700]]), np.array([0]), tw_cpu, ["A"])[0] == 700
    # model constraint the node cannot meet -> all free GPU share (1000); CPU-only node -> 0.
    tw_model = TargetWorkload([TaskClass(1000, 500, 1, "B")], np.array([1.0]), np.array([1]), 1.0)
    assert node_fragmentation(np.array([32000, 32000]), np.array([[1000], [0]]), np.array([0, -1]),
                              tw_model, ["A"]).tolist() == [1000, 0]


def test_fgd_differs_from_best_fit() -> None:
    task = Task(1, 300, 1000, 1024)
    # FGD, d = F before - F after, score int(100 sigmoid(d/1000)):
    #   n0 GPU 0 -> [700]: 500-class runs (none below), 1000-class cannot -> .5*0 + .5*700 = 350; d = -350 -> 41
    #   n1 GPU 0 -> [100, 1000]: both run, 100 below -> 100; d = 400 - 100 = +300 -> int(57.4) = 57
    #   n1 GPU 1 -> [400, 700]: 500-class: 400 below; 1000-class cannot: 1100 -> 750; d = -350 -> 41
    # => FGD packs onto n1's partly used GPU 0; cluster fragmentation 0 + 100 milli = 0.1 GPU.
    cluster = cluster_b()
    pick = choose("fgd", cluster, task, TW_B)
    assert pick == (1, (0,))
    cluster.place(pick.node, pick.gpus, task)
    assert cluster_fragmentation(cluster, TW_B) == pytest.approx(0.1)
    # best-fit: n0 .5*31000/128000 + .5*700/8000 = .16484375 -> 83; n1 .5*30000/128000 + .5*1100/8000
    #   = .1859375 -> 81 => n0 GPU 0; fragmentation 350 + 400 = 750 milli = 0.75 GPU.
    cluster = cluster_b()
    pick = choose("best-fit", cluster, task, TW_B)
    assert pick == (0, (0,))
    cluster.place(pick.node, pick.gpus, task)
    assert cluster_fragmentation(cluster, TW_B) == pytest.approx(0.75)


def test_fgd_multi_gpu_and_cpu_only() -> None:
    # n0: 4 free GPUs; n1: 2 free GPUs; target: one class of 3 whole GPUs (1 core).
    cluster = Cluster.from_frames(nodes_frame([("n0", 32000, 65536, 4, "A"), ("n1", 32000, 65536, 2, "A")]))
    tw = workload([(1000, 1000, 3, 1.0)])
    # 2-GPU task: n0 before 0 (the class runs), after [0,0,1000,1000] it cannot -> 2000; d = -2000 -> 11.
    #             n1 before: cannot run (2 GPUs) -> 2000; after 0 -> d = +2000 -> 88 => n1, GPUs 0 and 1.
    assert choose("fgd", cluster, Task(2, 1000, 1000, 1024), tw) == (1, (0, 1))
    # CPU-only task of 1.5 cores; n0 has 2 cores, 1 GPU; n1 CPU-only with 8 cores; target (1 core, 1 GPU).
    cluster = Cluster.from_frames(nodes_frame([("n0", 2000, 65536, 1, "A"), ("n1", 8000, 65536, 0, None)]))
    tw = workload([(1000, 1000, 1, 1.0)])
    # n0: before 0, after 500 milli-CPU -> the class cannot run -> 1000; d = -1000 -> 26. n1: 0 -> 0, d = 0 -> 50.
    assert choose("fgd", cluster, Task(0, 0, 1500, 1024), tw) == (1, ())


def test_target_workload_classes() -> None:
    # 10 x A, 6 x B (two memory sizes: same class), 3 x C, 1 x D. 95 % of 20 = 19 -> A, B, C kept.
    rows = [(1, 500, 4000, 1024, None)] * 10 + [(1, 1000, 8000, 1024, None)] * 3 + \
        [(1, 1000, 8000, 2048, None)] * 3 + [(0, 0, 2000, 1024, None)] * 3 + [(8, 1000, 64000, 1024, None)]
    pods = pl.DataFrame(rows, schema=["num_gpus", "gpu_milli", "cpu_milli", "memory_mib", "gpu_models"], orient="row")
    tw = target_workload(pods)
    assert [(c.cpu_milli, c.gpu_milli, c.num_gpus) for c in tw.classes] == [(4000, 500, 1), (8000, 1000, 1),
                                                                           (2000, 0, 0)]
    assert tw.weight.tolist() == pytest.approx([10 / 19, 6 / 19, 3 / 19])


# -- fill-up ---------------------------------------------------------------------------------
SMALL_NODES = nodes_frame([("n0", 32000, 65536, 2, "A"), ("n1", 64000, 131072, 4, "B"), ("n2", 16000, 32768, 0, None)])
SMALL_PODS = pl.DataFrame({
    "num_gpus": [1, 1, 1, 2, 0, 1, 1, 0],
    "gpu_milli": [300, 500, 1000, 1000, 0, 250, 700, 0],
    "cpu_milli": [2000, 4000, 8000, 8000, 3000, 1000, 6000, 1000],
    "memory_mib": [1024, 2048, 4096, 8192, 1024, 512, 2048, 256],
    "gpu_models": [None, None, None, None, None, "B", "A|B", None],
})


@pytest.mark.parametrize("policy", list(POLICIES))
def test_conservation_every_step(policy: str) -> None:
    cluster = Cluster.from_frames(SMALL_NODES)
    tasks = tasks_from_frame(SMALL_PODS)
    tw = target_workload(tasks)
    pol = make_policy(policy, tw, seed=3)
    order = arrival_order(tasks, cluster.gpu_capacity_milli, np.random.default_rng(3))
    cpu_used = np.zeros(3, np.int64)
    mem_used = np.zeros(3, np.int64)
    for t in order:
        choice = pol.select(cluster, tasks[t])
        if choice is not None:
            cluster.place(choice.node, choice.gpus, tasks[t])
            cpu_used[choice.node] += tasks[t].cpu_milli
            mem_used[choice.node] += tasks[t].memory_mib
        assert np.array_equal(cluster.gpu_alloc + cluster.gpu_free, np.where(cluster.gpu_valid, 1000, 0))
        assert (cluster.gpu_free >= 0).all() and (cluster.cpu_free >= 0).all() and (cluster.mem_free >= 0).all()
        assert np.array_equal(cpu_used + cluster.cpu_free, cluster.cpu_cap)
        assert np.array_equal(mem_used + cluster.mem_free, cluster.mem_cap)
        assert cluster.allocated_milli + cluster.gpu_free.sum() == cluster.gpu_capacity_milli
    table = fill_up(SMALL_NODES, SMALL_PODS, policy, 3)
    assert table["allocated_gpus"][-1] == pytest.approx(cluster.allocated_milli / 1000)
    assert table["unallocated_share"][-1] == pytest.approx(1 - cluster.allocated_milli / 6000)


class ScriptedDraws:
    """A stand-in for numpy's Generator that hands out scripted permutations and draws, so a test can
    work out the arrival order by hand."""

    def __init__(self, permutations: list[list[int]], draws: list[list[int]]) -> None:
        self.permutations, self.draws = list(permutations), list(draws)

    def permutation(self, n: int) -> np.ndarray:
        order = self.permutations.pop(0)
        assert sorted(order) == list(range(n))
        return np.array(order)

    def integers(self, high: int, size: int) -> np.ndarray:
        chunk = self.draws.pop(0)
        assert len(chunk) == size and max(chunk) < high
        return np.array(chunk)


# SMALL_PODS ask for 300 + 500 + 1000 + 2000 + 0 + 250 + 700 + 0 = 4,750 milli-GPU; SMALL_NODES hold 6,000.
SMALL_TASKS = tasks_from_frame(SMALL_PODS)


def test_top_up_appends_draws_while_the_next_one_fits_the_target() -> None:
    # fill to 1.3 x 6000 = 7800. Draws: pod 3 (2 GPUs; 4750 + 1000 <= 7800) -> 6750; pod 4 (CPU-only) -> 6750;
    # pod 6 (700) -> 7450; pod 3 again: 7450 + 1000 > 7800 ends the list without it.
    rng = ScriptedDraws([[7, 6, 5, 4, 3, 2, 1, 0]], [[3, 4, 6, 3] + [0] * 12])
    assert arrival_order(SMALL_TASKS, 6000, rng, 1.3).tolist() == [7, 6, 5, 4, 3, 2, 1, 0, 3, 4, 6]
    # fill to 5000 / 6000: 16 CPU-only draws (a whole chunk) all fit, then pod 0 (300): 4750 + 300 > 5000 ends it.
    rng = ScriptedDraws([list(range(8))], [[4, 7] * 8, [0] + [1] * 15])
    assert arrival_order(SMALL_TASKS, 6000, rng, 5000 / 6000).tolist() == list(range(8)) + [4, 7] * 8


def test_a_list_above_the_target_loses_random_pods_until_it_fits() -> None:
    # fill to 0.5 x 6000 = 3000 < 4750. Shuffled: pods 5 0 1 2 4 7 6 3; positions removed in the order
    # 4 5 6 1 2 3 ... are pods 4, 7, 6, 0, 1, 2: 4750 - 0 - 0 - 700 - 300 - 500 = 3250 > 3000, then - 1000 =
    # 2250: pods 5 and 3 stay, in arrival order.
    rng = ScriptedDraws([[5, 0, 1, 2, 4, 7, 6, 3], [4, 5, 6, 1, 2, 3, 0, 7]], [])
    assert arrival_order(SMALL_TASKS, 6000, rng, 0.5).tolist() == [5, 3]
    with pytest.raises(ValueError, match="requests no GPU"):
        arrival_order(tasks_from_frame(SMALL_PODS.filter(pl.col("num_gpus") == 0)), 6000, np.random.default_rng(0))


def test_fill_up_reaches_the_chosen_multiple_and_is_deterministic() -> None:
    for fill_to in (1.0, 1.3, 2.0):
        table = fill_up(SMALL_NODES, SMALL_PODS, "fgd", 7, fill_to=fill_to)
        arrived = (table["arrived_workload"] * 6000).round().cast(pl.Int64).to_list()
        # within the target, and no GPU pod (at most one GPU's share, 1000) from it
        assert fill_to * 6000 - 1000 < arrived[-1] <= fill_to * 6000
        assert table["step"].to_list() == list(range(1, table.height + 1))
    a = fill_up(SMALL_NODES, SMALL_PODS, "fgd", 7)
    assert a.equals(fill_up(SMALL_NODES, SMALL_PODS, "fgd", 7))
    assert a["fragmented_share"].to_list() == pytest.approx((a["fragmented_gpus"] / 6).to_list())
    order7 = arrival_order(SMALL_TASKS, 6000, np.random.default_rng(7))
    order8 = arrival_order(SMALL_TASKS, 6000, np.random.default_rng(8))
    assert sorted(order7[:SMALL_PODS.height].tolist()) == list(range(SMALL_PODS.height))  # a permutation first
    assert order7.tolist() != order8.tolist()
    ra = fill_up(SMALL_NODES, SMALL_PODS, "random", 1)
    assert ra.equals(fill_up(SMALL_NODES, SMALL_PODS, "random", 1))


def test_arrived_percent_rounds_half_to_even() -> None:
    # 6,212 GPUs: 31,060 milli-GPU is exactly 0.5 %, 93,180 exactly 1.5 %, 6,243,060 exactly 100.5 %.
    arrived = np.array([0, 31_060, 31_061, 93_180, 6_212_000, 6_243_060, 6_305_180, 6_305_179])
    assert arrived_percent(arrived, 6_212_000).tolist() == [0, 0, 1, 2, 100, 100, 102, 101]


IDENTICAL_NODES = nodes_frame([(f"n{i}", 32000, 65536, 1, "A") for i in range(5)])
ONE_GPU_POD = pl.DataFrame({"num_gpus": [1], "gpu_milli": [1000], "cpu_milli": [1000], "memory_mib": [1024],
                            "gpu_models": [None]}, schema_overrides={"gpu_models": pl.String})


def _node_taken(seed: int, tie_break: str) -> str:
    # one 1-GPU pod on five identical nodes, filled to 1000 / 5000: every node scores the same
    _, cluster = fill_up(IDENTICAL_NODES, ONE_GPU_POD, "best-fit", seed, fill_to=0.2, tie_break=tie_break,
                         return_cluster=True)
    (node,) = np.flatnonzero(cluster.gpu_alloc.sum(axis=1))
    return cluster.names[int(node)]


def test_ties_go_to_a_seeded_random_node_or_to_the_first_name() -> None:
    assert {_node_taken(seed, "name") for seed in range(12)} == {"n0"}
    taken = [_node_taken(seed, "random") for seed in range(12)]
    assert taken == [_node_taken(seed, "random") for seed in range(12)]  # the same node for the same seed
    assert len(set(taken)) >= 3  # and spread over the nodes across seeds
    assert taken == [f"n{node_order(5, seed)[0]}" for seed in range(12)]
    assert node_order(5, 3, "name").tolist() == [0, 1, 2, 3, 4]


def test_a_reordered_cluster_keeps_each_nodes_state() -> None:
    cluster = Cluster.from_frames(CLUSTER_A)
    cluster.place(1, (2,), Task(1, 300, 1000, 1024))
    moved = cluster.reordered(np.array([2, 0, 1]))
    assert moved.names == ["n2", "n0", "n1"] and moved.uid != cluster.uid
    assert moved.gpu_free[2].tolist() == [1000, 1000, 700, 1000] and moved.cpu_free.tolist() == [16000, 32000, 63000]
    assert moved.model_mask("T4").tolist() == [False, False, True]
    with pytest.raises(ValueError, match="permutation"):
        cluster.reordered(np.array([0, 0, 1]))


def test_bin_mean_and_first_reach_readings_by_hand() -> None:
    # one run: arrived percent 89, 90, 90, 91, 95, 97, 97; unallocated 0.20 .. 0.14
    results = pl.DataFrame({
        "policy": ["p"] * 7, "seed": [0] * 7, "step": list(range(1, 8)),
        "arrived_workload": [0.891, 0.897, 0.903, 0.91, 0.951, 0.968, 0.972],
        "arrived_percent": [89, 90, 90, 91, 95, 97, 97],
        "unallocated_share": [0.20, 0.19, 0.18, 0.17, 0.16, 0.15, 0.14],
    })
    bins = summary_at(results, (0.9, 0.95, 0.96, 0.93), reading="bin-mean")
    by_level = {row["level"]: row["mean"] for row in bins.iter_rows(named=True)}
    # 90 %: the two arrivals at 90; 95 %: the one at 95; 96 %: none at 96, so those at 95-97
    # (0.16 + 0.15 + 0.14) / 3; 93 %: nothing at 92-94, the seed has no value there.
    assert by_level == pytest.approx({0.9: 0.185, 0.95: 0.16, 0.96: 0.15})
    first = summary_at(results, (0.9, 0.95, 0.96), reading="first-reach")
    assert first["mean"].to_list() == pytest.approx([0.18, 0.16, 0.15])  # 0.903, 0.951, 0.968
    with pytest.raises(ValueError, match="whole percents"):
        summary_at(results, (0.955,))


@pytest.mark.parametrize(("settings", "needle"), [
    ({"fill_to": 0}, "fill-to: expected"), ({"fill_to": "1,3"}, "got '1,3'"), ({"fill_to": float("inf")}, "fill-to"),
    ({"fill_to": 10.5}, "at most 10"), ({"tie_break": "first"}, "unknown tie-break 'first'"),
    ({"reading": "mean"}, "unknown reading 'mean'; expected one of: bin-mean, first-reach"),
])
def test_settings_that_are_not_known_are_refused(settings: dict, needle: str) -> None:
    with pytest.raises(PlacementOptionError, match=needle) as refused:
        check_placement_settings(**settings)
    assert isinstance(refused.value, UsageError)
    assert check_placement_settings("1.3", "name", "first-reach") == (1.3, "name", "first-reach")


def test_run_experiment_and_summary() -> None:
    res = run_experiment(SMALL_NODES, SMALL_PODS, ["best-fit", "fgd"], [0, 1])
    assert set(res["policy"]) == {"best-fit", "fgd"} and set(res["seed"]) == {0, 1}
    s = summary_at(res, levels=(0.5, 1.0), reading="first-reach")
    assert s.height == 4
    first = (res.filter((pl.col("policy") == "fgd") & (pl.col("arrived_workload") >= 1.0))
             .group_by("seed").agg(pl.col("unallocated_share").first()))
    row = s.filter((pl.col("policy") == "fgd") & (pl.col("level") == 1.0)).row(0, named=True)
    assert row["mean"] == pytest.approx(first["unallocated_share"].mean())
    assert row["min"] <= row["mean"] <= row["max"]
