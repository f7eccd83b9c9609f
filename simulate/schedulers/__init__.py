"""The pool simulator's schedulers: each policy's decisions (order, preemption) as a plugin of the
one event loop of `ddlx.simulate.engine.Engine`.

| scheduler | policies | path |
|---|---|---|
| `HeapOrder` | fifo, sjf-oracle, sjf-predicted on GPUs only | fast (O(log n) per event) |
| `WalkOrder` | fifo, sjf-oracle, sjf-predicted, CPUs modelled or not | plain |
| `RemainingTime` | srtf, srtf-predicted | plain (the only path) |
| `LasHeap` | las with the default settings | fast (O(log n) per event) |
| `LasRounds` | las, every setting | plain |

`scheduler_class` picks one; `fast=False` takes the plain path of every policy (the tests check that
both paths give the same schedule to the bit where a policy has both).
"""

from __future__ import annotations

from ddlx.simulate.policies import DEFAULT_LAS_DEMOTION, DEFAULT_LAS_PREEMPTION, DEFAULT_LAS_QUEUE_ORDER, Policy
from ddlx.simulate.schedulers.base import END, TIMER, Scheduler
from ddlx.simulate.schedulers.in_order import HeapOrder, WalkOrder
from ddlx.simulate.schedulers.las import LasHeap, LasRounds
from ddlx.simulate.schedulers.remaining import RemainingTime

__all__ = ["END", "TIMER", "HeapOrder", "LasHeap", "LasRounds", "RemainingTime", "Scheduler", "WalkOrder",
           "scheduler_class"]


def scheduler_class(policy: Policy, models_cpus: bool, fast: bool = True) -> type[Scheduler]:
    """The scheduler that runs `policy` (CPUs modelled beside the GPUs when `models_cpus`): its fast
    path when it has one and `fast`, else its plain path."""
    if policy.remaining_time:
        return RemainingTime
    if policy.thresholds_gpu_s:
        defaults = ((policy.las_demotion, policy.las_queue_order, policy.las_preemption)
                    == (DEFAULT_LAS_DEMOTION, DEFAULT_LAS_QUEUE_ORDER, DEFAULT_LAS_PREEMPTION)
                    and not policy.las_stale_ends)  # the heap has no stale ends to keep
        return LasHeap if fast and defaults else LasRounds
    return HeapOrder if fast and not models_cpus else WalkOrder
