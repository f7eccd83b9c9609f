"""The replay of `ddlx.placement`: arrivals with departures on the one cluster model, under
any policy, with the named fragmentation variants; a hand-made cluster whose placements, free
capacity and fragmentation are worked out below, releases that give back exactly what a placement
took, and the replay without departures before the last arrival equal to the fill-up."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from ddlx.errors import UsageError
from ddlx.placement import (
    POLICIES,
    Cluster,
    Placement,
    PlacementPolicy,
    Task,
    arrival_order,
    fill_up,
    make_policy,
    node_fragmentation,
    node_unusable,
    normalise_task,
    run_replay,
    target_workload,
    tasks_from_frame,
)

# Nodes a (2 GPUs) and b (1 GPU), both model X, 4 cores each; ties go to the first by name.
NODES = pl.DataFrame({"node": ["a", "b"], "cpu_milli": [4000, 4000], "memory_mib": [10_000, 10_000],
                      "gpus": [2, 1], "gpu_model": ["X", "X"]})
# Classes: S = 1 x 500 milli, 1 core (p0, p2, p3); W = 1 whole GPU, 1 core (p1); C = CPU-only, 4 cores (p4).
# Target workload: 5 pods; S covers 3 < 4.75 (95 %), then C (ties on count: more CPU first) 4 < 4.75,
# then W: all kept, p_S = 3/5, p_W = 1/5, p_C = 1/5.
PODS = pl.DataFrame({
    "task": ["p0", "p1", "p2", "p3", "p4"],
    "num_gpus": [1, 1, 1, 1, 0], "gpu_milli": [500, 1000, 500, 500, 0],
    "cpu_milli": [1000, 1000, 1000, 1000, 4000], "memory_mib": [100] * 5, "gpu_models": [None] * 5,
    "arrive": [0, 0, 10, 20, 25], "depart": [10, None, None, 30, 35],
})
TIMES = [0, 10, 20, 25, 30, 35]
RUNNING = [2, 2, 3, 4, 3, 2]
# F_n(M) per node, milli: S cannot use GPUs below 500 (all of U when none holds 500 or < 1 core free),
# W cannot use GPUs below 1000 (all of U when no GPU is whole), C never uses any (U).
BEST_FIT = {
    # t=0 p0 S: a s = 0.5 x 3/128 + 0.5 x 1.5/8 = 0.105 -> 89; b s = 0.5 x 3/128 + 0.5 x 0.5/8 = 0.043 -> 95 -> b
    #     p1 W: only a has a whole GPU -> a GPU0 (lowest free) => a [0, 1000] 3 cores, b [500] 3 cores
    #     F: a (W 0, S 0, C 1000) / 5 = 200; b (S 0, W 500, C 500) / 5 = 200 -> 400
    # t=10 p0 leaves: b [1000] 4 cores; p2 S: a s = 0.5 x 2/128 + 0.5 x 0.5/8 = 0.039 -> 96; b -> 95 -> a GPU1
    #     => a [0, 500] 2 cores: (W 500 + C 500) / 5 = 200; b (C 1000) / 5 = 200 -> 400
    # t=20 p3 S: a s = 0.5 x 1/128 + 0 -> 99; b 95 -> a GPU1 => a [0, 0]: 0; b 200 -> 200
    # t=25 p4 C: only b has 4 cores => b [1000] 0 cores: no class runs: 1000 x (3 + 1 + 1) / 5 = 1000 -> 1000
    # t=30 p3 leaves: a [0, 500] 2 cores: 200 -> 1200;  t=35 p4 leaves: b 200 -> 400
    "placements": [("b", (0,)), ("a", (0,)), ("a", (1,)), ("a", (1,)), ("b", ())],
    "expected": [400, 400, 200, 1000, 1200, 400],
}
FGD = {
    # score int(100 sigmoid((F before - F after) / 1000)); empty a: F = (C 2000) / 5 = 400, empty b: 200.
    # t=0 p0 S: a GPU0 -> [500, 1000] 3 cores: (S 0, W 500, C 1500) / 5 = 400, d = 0 -> 50 (GPU1 the same);
    #     b -> [500]: (W 500 + C 500) / 5 = 200, d = 0 -> 50: tie -> a GPU0
    #     p1 W: a -> [500, 0] 2 cores: (W 500 + C 500) / 5 = 200, d = 200 -> 54; b -> [0]: 0, d = 200 -> 54:
    #     tie -> a, its lowest-indexed whole GPU, GPU1 => a 200, b 200 -> 400
    # t=10 p0 leaves: a [1000, 0] 3 cores: C 1000 / 5 = 200; p2 S: a GPU0 -> [500, 0]: 200, d = 0 -> 50;
    #     b -> [500]: 200, d = 0 -> 50: tie -> a GPU0 => 400
    # t=20 p3 S: a -> [0, 0]: 0, d = 200 -> 54; b: d = 0 -> 50 -> a GPU0 => 200
    # t=25 p4 C: only b => 1000;  t=30 p3 leaves: a [500, 0] 2 cores: 200 -> 1200;  t=35: 400
    "placements": [("a", (0,)), ("a", (1,)), ("a", (0,)), ("a", (0,)), ("b", ())],
    "expected": [400, 400, 200, 1000, 1200, 400],
}
# Free milli after each instant (the same under both): 1500, 1500, 1000, 1000, 1500, 1500.
FREE = [1500, 1500, 1000, 1000, 1500, 1500]
# Unusable: 0 while every free GPU is usable by S or W; from t=25 to t=35 b's whole GPU has no free
# core: 1000; at t=30 a's 500 is usable by S (2 cores free) -> still 1000.
UNUSABLE = [0, 0, 0, 1000, 1000, 0]


@pytest.mark.parametrize(("policy", "hand"), [("best-fit", BEST_FIT), ("fgd", FGD)])
def test_replay_with_departures_by_hand(policy: str, hand: dict) -> None:
    run = run_replay(NODES, PODS, policy, tie_break="name")
    assert run.placements == hand["placements"]
    assert run.outcomes == ["placed"] * 5
    assert run.times.tolist() == TIMES and run.running.tolist() == RUNNING
    assert run.models == ["X"] and (run.model_nodes.tolist(), run.model_gpus.tolist()) == ([2], [3])
    assert run.free_milli[:, 0].tolist() == FREE
    assert run.measured_milli["expected"][:, 0] == pytest.approx(hand["expected"])
    assert run.measured_milli["unusable"][:, 0].tolist() == UNUSABLE
    frame = run.frame()
    assert frame.columns == ["t", "gpu_model", "pods_running", "free_gpus", "free_whole_gpus", "expected_gpus",
                             "unusable_gpus"]
    # whole GPUs free: t=0 a GPU1 (best-fit) / none (fgd) and so on; the free capacity in GPUs
    assert frame["free_gpus"].to_list() == pytest.approx([m / 1000 for m in FREE])
    assert run.target.weight.tolist() == pytest.approx([3 / 5, 1 / 5, 1 / 5])


def test_whole_free_gpus_and_outcomes() -> None:
    pods = PODS.with_columns(pl.Series("arrive", [0, 0, None, 20, 25]), pl.Series("depart", [10, 0, None, 30, 35]))
    # p1 leaves when it arrives (zero run time), p2 never arrives: best-fit puts p0 on b (as above);
    # t=10 p0 leaves: every GPU whole again: 3; t=20 p3 S: a s = 0.5 x 3/128 + 0.5 x 1.5/8 -> 89,
    # b s = 0.5 x 3/128 + 0.5 x 0.5/8 -> 95 -> b => whole a GPU0, GPU1: 2
    run = run_replay(NODES, pods, "best-fit", tie_break="name")
    assert run.outcomes == ["placed", "zero run time", "never scheduled", "placed", "placed"]
    assert run.outcome_counts() == {"placed": 3, "unplaced": 0, "zero run time": 1, "never scheduled": 1}
    assert run.times.tolist() == [0, 10, 20, 25, 30, 35]
    assert run.whole_free[:, 0].tolist() == [2, 3, 2, 2, 3, 3]
    assert run.placements[3] == ("b", (0,))


def test_a_pod_that_fits_nowhere_is_unplaced_and_its_departure_is_no_instant() -> None:
    pods = pl.DataFrame({"num_gpus": [2, 0], "gpu_milli": [1000, 0], "cpu_milli": [1000, 9000],
                         "memory_mib": [0, 0], "gpu_models": [None, None], "arrive": [5, 6], "depart": [8, 9]})
    run = run_replay(NODES, pods, "best-fit", tie_break="name")
    # 2 whole GPUs: a; 9 cores: no node (4 each) -> unplaced, and its departure at 9 changes nothing
    assert run.outcomes == ["placed", "unplaced"] and run.placements[0] == ("a", (0, 1))
    assert run.times.tolist() == [5, 6, 8] and run.running.tolist() == [1, 1, 0]


def test_release_gives_back_exactly_what_the_placement_took() -> None:
    cluster = Cluster.from_frames(NODES)
    before = {k: v.copy() for k, v in cluster.__dict__.items() if isinstance(v, np.ndarray)}
    share, whole = normalise_task(1, 300, 1500, 2000, None), normalise_task(1, 1000, 500, 100, None)
    cluster.place(0, (1,), share)
    cluster.place(0, (0,), whole)
    assert cluster.gpu_free[0].tolist() == [0, 700] and cluster.allocated_milli == 1300
    cluster.release(0, (1,), share)
    assert cluster.gpu_free[0].tolist() == [0, 1000] and cluster.cpu_free[0] == 3500 and cluster.mem_free[0] == 9900
    assert cluster.tags[0].tolist()[:2] == [0, 1]
    cluster.release(0, (0,), whole)
    for key, value in before.items():
        if key != "version":
            assert np.array_equal(getattr(cluster, key), value), key
    assert cluster.allocated_milli == 0 and cluster.version[0] == 4  # two placements, two releases
    with pytest.raises(ValueError, match="not placed"):
        cluster.release(0, (0,), whole)


class Recording(PlacementPolicy):
    """A policy that records where another one puts each task (node name, GPUs; None when it fits nowhere)."""

    def __init__(self, inner: PlacementPolicy) -> None:
        self.inner, self.name, self.seen = inner, inner.name, []

    def reset(self, seed: int | None = None) -> None:
        self.inner.reset(seed)
        self.seen = []

    def select(self, cluster: Cluster, task: Task) -> Placement | None:
        choice = self.inner.select(cluster, task)
        self.seen.append(None if choice is None else (cluster.names[choice.node], tuple(choice.gpus)))
        return choice

    def choose(self, cluster: Cluster, task: Task, feasible: np.ndarray) -> Placement:
        raise AssertionError("select is overridden")


def _random_case(rng: np.random.Generator) -> tuple[pl.DataFrame, pl.DataFrame]:
    n = int(rng.integers(3, 7))
    gpus = rng.choice([0, 1, 2, 4, 8], size=n)
    gpus[0] = max(gpus[0], 1)
    nodes = pl.DataFrame({"node": [f"n{i}" for i in range(n)], "cpu_milli": rng.integers(4, 33, size=n) * 1000,
                          "memory_mib": rng.integers(8, 65, size=n) * 1024, "gpus": gpus,
                          "gpu_model": [None if g == 0 else str(rng.choice(["X", "Y"])) for g in gpus]})
    m = int(rng.integers(8, 25))
    num_gpus = rng.choice([0, 1, 1, 1, 2, 4], size=m)
    num_gpus[0] = 1
    milli = np.where(num_gpus == 1, rng.choice([100, 250, 500, 700, 1000], size=m), np.where(num_gpus > 1, 1000, 0))
    pods = pl.DataFrame({"num_gpus": num_gpus, "gpu_milli": milli, "cpu_milli": rng.integers(1, 9, size=m) * 500,
                         "memory_mib": rng.integers(1, 9, size=m) * 512,
                         "gpu_models": [str(rng.choice(["X", "Y"])) if rng.random() < 0.3 else None for _ in range(m)]})
    return nodes, pods


@pytest.mark.parametrize("case", range(6))
@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_replay_without_departures_before_the_last_arrival_is_the_fill_up(case: int, policy: str) -> None:
    """Property: the fill-up's arrivals replayed with every departure after the last arrival give the
    fill-up's placements one by one, and, with one arrival per instant, its allocated GPUs and F_n(M)."""
    rng = np.random.default_rng(case)
    nodes, pods = _random_case(rng)
    seed, tie_break = case, ("random", "name")[case % 2]
    target = target_workload(pods)
    filled = Recording(make_policy(policy, target, seed))
    table = fill_up(nodes, pods, filled, seed, target=target, tie_break=tie_break)
    capacity = int(nodes["gpus"].sum()) * 1000
    order = arrival_order(tasks_from_frame(pods), capacity, np.random.default_rng(seed))
    for times in (np.arange(order.size), np.sort(rng.integers(0, max(order.size // 3, 1), size=order.size))):
        last = int(times.max())
        arrivals = pods[order.tolist()].with_columns(
            pl.Series("arrive", times), pl.Series("depart", last + 1 + rng.integers(0, 5, size=order.size)))
        replayed = Recording(make_policy(policy, target, seed))
        run = run_replay(nodes, arrivals, replayed, seed, target=target, tie_break=tie_break)
        assert replayed.seen == filled.seen
        assert run.placements == filled.seen
        if times.size == np.unique(times).size:  # one instant per arrival: the fill-up's rows
            during = run.times <= last
            allocated = (capacity - run.free_milli[during].sum(axis=1)) / 1000
            assert allocated == pytest.approx(table["allocated_gpus"].to_numpy())
            fragmented = run.measured_milli["expected"][during].sum(axis=1) / 1000
            assert fragmented == pytest.approx(table["fragmented_gpus"].to_numpy())
        # after the last departure the cluster is empty again
        assert run.free_milli[-1].sum() == capacity and run.running[-1] == 0


def test_fragmentation_variants_by_name() -> None:
    # Pods: 3 x S (1 x 500, 1 core), 1 x W (1 GPU, 1 core), 2 x C (CPU-only, 2 cores).
    tasks = [normalise_task(1, 500, 1000, 0, None)] * 3 + [normalise_task(1, 1000, 1000, 0, None)] \
        + [normalise_task(0, 0, 2000, 0, None)] * 2
    everything = target_workload(tasks)
    # all pods, 95 % of 6 = 5.7: S 3, C 2 (5 < 5.7), W: all kept -> 3/6, 2/6, 1/6
    assert everything.weight.tolist() == pytest.approx([3 / 6, 2 / 6, 1 / 6])
    gpu_only = target_workload(tasks, from_pods="gpu")
    # GPU pods only: S 3, W 1 -> 95 % of 4 = 3.8: both kept, 3/4 and 1/4
    assert [(c.gpu_milli, c.num_gpus) for c in gpu_only.classes] == [(500, 1), (1000, 1)]
    assert gpu_only.weight.tolist() == pytest.approx([3 / 4, 1 / 4])
    # popularity 0.5 of all pods: S alone covers 3 >= 3
    assert target_workload(tasks, popularity=0.5).weight.tolist() == [1.0]
    # A node with GPUs [300, 1000], 4 cores free: S uses GPU1 (GPU0's 300 < 500), W uses GPU1, C none.
    cpu, free, model = np.array([4000]), np.array([[300, 1000]]), np.array([0])
    # expected, all pods: S 300 x 3/6 + C 1300 x 2/6 + W 300 x 1/6 = 150 + 433.3 + 50
    assert node_fragmentation(cpu, free, model, everything, ["X"])[0] == pytest.approx(150 + 2600 / 6 + 50)
    # expected, GPU pods only: 300 x 3/4 + 300 x 1/4 = 300
    assert node_fragmentation(cpu, free, model, gpu_only, ["X"])[0] == pytest.approx(300)
    # unusable: GPU0's 300 no GPU class can use, GPU1 is usable -> 300, the same for either target
    assert node_unusable(cpu, free, model, everything, ["X"])[0] == 300
    assert node_unusable(cpu, free, model, gpu_only, ["X"])[0] == 300
    # with no free core nothing runs: all 1300 unusable
    assert node_unusable(np.array([0]), free, model, everything, ["X"])[0] == 1300


@pytest.mark.parametrize(("settings", "needle"), [
    ({"popularity": 0}, "popularity"), ({"popularity": 1.5}, "popularity"), ({"from_pods": "cpu"}, "target pods")])
def test_unknown_fragmentation_variants_are_refused(settings: dict, needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        target_workload([normalise_task(1, 500, 1000, 0, None)], **settings)


def test_unknown_measure_is_refused() -> None:
    with pytest.raises(UsageError, match="unknown fragmentation measure 'mean'"):
        run_replay(NODES, PODS, "best-fit", measures=("mean",))


@pytest.mark.parametrize("case", range(4))
def test_measures_also_against_another_target_equal_a_replay_against_it(case: int) -> None:
    """best-fit places by no target, so a replay measured also against the GPU pods' target gives,
    under `gpu_pods_<measure>`, exactly what a replay against that target alone gives."""
    rng = np.random.default_rng(100 + case)
    nodes, pods = _random_case(rng)
    times = rng.integers(0, 20, size=pods.height)
    pods = pods.with_columns(arrive=pl.Series(times), depart=pl.Series(times + rng.integers(1, 15, size=pods.height)))
    gpu_target = target_workload(pods, from_pods="gpu")
    both = run_replay(nodes, pods, "best-fit", also_against={"gpu_pods": gpu_target})
    alone = run_replay(nodes, pods, "best-fit", target=gpu_target)
    assert both.placements == alone.placements and np.array_equal(both.times, alone.times)
    for measure, values in alone.measured_milli.items():
        assert np.array_equal(both.measured_milli[f"gpu_pods_{measure}"], values), measure
    assert set(both.frame().columns) >= {"gpu_pods_expected_gpus", "gpu_pods_unusable_gpus", "expected_gpus"}
