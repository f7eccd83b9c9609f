"""What a scheduler is to the engine: the hooks the event loop calls at each instant, and the default
handling of the engine's event heap (ends and timers)."""

from __future__ import annotations

from heapq import heappop
from math import inf
from typing import TYPE_CHECKING

import numpy as np

from ddlx.simulate.policies import Policy

if TYPE_CHECKING:
    from ddlx.simulate.engine import Engine

#: Kind of an event of the engine's heap: a job's end.
END = 0
#: Kind of an event of the engine's heap: a timer the scheduler planned for a running job (LAS: the
#: instant its attained service reaches its queue's threshold).
TIMER = 1


class Scheduler:
    """A policy's decisions over an `Engine`. At each instant the engine calls, in this order,
    `due(now, next_arrival)` (ends and the scheduler's own events at `now`), `admit(first, last, now)`
    (jobs `first` .. `last - 1` are submitted at `now`) and `schedule(now)` (one scheduling pass,
    which starts and stops jobs through the engine); `next_time()` tells the engine the scheduler's
    next event (seconds; `inf` when none).

    The defaults work on the engine's event heap of `(time, kind, job, version)`: an event whose
    version is not the job's (the job was stopped since it was planned) is stale and skipped, but its
    instant is still an instant of the loop. `rank`: each job's place in the policy's static order
    (0 first); `ties`: its place in the tie-break order, given to the schedulers that `uses_ties`."""

    #: Whether the scheduler orders by the tie-break beside the rank (the engine computes it only then).
    uses_ties = False

    def __init__(self, engine: Engine, policy: Policy, rank: np.ndarray, ties: np.ndarray | None,
                 backfill: bool):
        self.engine = engine
        self.policy = policy
        self.backfill = backfill
        self.rank = rank.tolist()
        self.ties = ties.tolist() if ties is not None else []
        #: Jobs ended before their run time was done (LAS_STALE_ENDS).
        self.ended_early = 0

    def next_time(self) -> float:
        events = self.engine.events
        return events[0][0] if events else inf

    def due(self, now: float, next_arrival: float) -> None:
        """Handle the events of the engine's heap due at `now`: ends (`finished`) and timers (`timer`)."""
        engine = self.engine
        events, version = engine.events, engine.version
        while events and events[0][0] <= now:
            _, kind, job, stamp = heappop(events)
            if stamp != version[job]:
                continue  # the job was stopped after this event was planned
            if kind == END:
                self.finished(job, now)
            else:
                self.timer(job, now)

    def finished(self, job: int, now: float) -> None:
        """A running job reached its end."""
        self.engine.finish(job, now)

    def timer(self, job: int, now: float) -> None:
        raise NotImplementedError(f"{type(self).__name__} plans no timers")

    def admit(self, first: int, last: int, now: float) -> None:
        raise NotImplementedError

    def schedule(self, now: float) -> None:
        raise NotImplementedError
