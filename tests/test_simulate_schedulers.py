"""The pool simulator's shape: one event loop (`Engine.run`) and each policy a scheduler plugin; the
fast path of fifo and sjf against their plain path on random workloads, a scheduler written here
run by the engine on a schedule worked out by hand, and the one name of the thousandths."""

from __future__ import annotations

import numpy as np
import pytest

import ddlx.simulate
from ddlx.datasets.canonical import MILLI
from ddlx.simulate import POLICIES, las_policy, simulate_policy, workload_from_arrays
from ddlx.simulate.engine import Engine
from ddlx.simulate.schedulers import (
    HeapOrder,
    LasHeap,
    LasRounds,
    RemainingTime,
    Scheduler,
    WalkOrder,
    scheduler_class,
)
from tests.test_simulate_engine import _random_workload


def test_each_policy_has_its_scheduler() -> None:
    assert scheduler_class(POLICIES["fifo"], models_cpus=False) is HeapOrder
    assert scheduler_class(POLICIES["sjf-oracle"], models_cpus=False, fast=False) is WalkOrder
    assert scheduler_class(POLICIES["sjf-predicted"], models_cpus=True) is WalkOrder
    assert scheduler_class(POLICIES["srtf"], models_cpus=False) is RemainingTime
    assert scheduler_class(POLICIES["las"], models_cpus=False) is LasHeap
    assert scheduler_class(POLICIES["las"], models_cpus=False, fast=False) is LasRounds
    assert scheduler_class(las_policy(preemption="refill"), models_cpus=False) is LasRounds


@pytest.mark.parametrize("seed", range(6))
def test_the_fast_path_of_fifo_and_sjf_gives_the_plain_path_schedule(seed: int) -> None:
    # fifo and sjf on GPUs only run on HeapOrder (heaps and a segment tree); fast=False walks the
    # waiting jobs in order (WalkOrder). Both visit the same instants, so every number is equal to the
    # bit, busy GPU-seconds included.
    workload, *_ = _random_workload(seed, jobs=600, capacity=[12, 24, 40][seed % 3])
    for name in ("fifo", "sjf-oracle", "sjf-predicted"):
        for backfill in (True, False):
            for tie_break in ("submit", "job-id"):
                fast = simulate_policy(workload, POLICIES[name], backfill, tie_break, fast=True)
                plain = simulate_policy(workload, POLICIES[name], backfill, tie_break, fast=False)
                assert np.array_equal(fast.first_start_s, plain.first_start_s), (name, backfill, tie_break)
                assert np.array_equal(fast.end_s, plain.end_s)
                assert fast.busy_gpu_s == plain.busy_gpu_s
                assert (fast.preemptions, fast.preempted_jobs) == (plain.preemptions, plain.preempted_jobs) == (0, 0)


class _LastInFirstOut(Scheduler):
    """The latest submitted waiting job first, no backfilling: a policy ddlx does not offer."""

    def __init__(self, engine: Engine):
        super().__init__(engine, POLICIES["fifo"], np.zeros(engine.jobs, dtype=np.int64), None, backfill=False)
        self.stack: list[int] = []

    def admit(self, first: int, last: int, now: float) -> None:
        self.stack.extend(range(first, last))

    def schedule(self, now: float) -> None:
        while self.stack and self.engine.need[self.stack[-1]] <= self.engine.free:
            self.engine.launch(self.stack.pop(), now)


def test_a_scheduler_is_a_plugin_of_the_engine() -> None:
    # 1 GPU. A: 0 s, 1 GPU, 10 s; B: 1 s, 1 GPU, 2 s; C: 2 s, 1 GPU, 3 s. t0 A runs 0-10; B and C
    # wait. t10 the last submitted, C, runs 10-13, then B 13-15. The pool is busy 0-15: 15 GPU-s.
    workload = workload_from_arrays([0, 1, 2], [1, 1, 1], [10, 2, 3], capacity_gpus=1, job_ids=["A", "B", "C"])
    engine = Engine(workload, workload.gpu_units(), workload.capacity_units())
    engine.run(_LastInFirstOut(engine))
    assert engine.first_start == [0, 13, 10] and engine.end == [10, 15, 13]
    assert engine.busy_integral == 15 * 1000  # thousandths of a GPU x seconds
    assert engine.preemptions == 0 and engine.ended == 3


def test_a_scheduler_that_leaves_jobs_waiting_is_an_error() -> None:
    class _Idle(_LastInFirstOut):
        def schedule(self, now: float) -> None:
            pass

    workload = workload_from_arrays([0], [1], [5], capacity_gpus=1)
    engine = Engine(workload, workload.gpu_units(), workload.capacity_units())
    with pytest.raises(RuntimeError, match="jobs still waiting"):
        engine.run(_Idle(engine))


def test_thousandths_have_one_name() -> None:
    workload = workload_from_arrays([0, 0], [0.25, 1 / 3], [1, 1], capacity_gpus=2.5)
    assert workload.gpu_units().tolist() == [250, 333] and workload.capacity_units() == 2500
    assert ddlx.simulate.MILLI is MILLI and MILLI == 1000
    assert not hasattr(ddlx.simulate, "GPU_UNITS_PER_GPU") and not hasattr(ddlx.simulate, "CPU_UNITS_PER_CORE")
