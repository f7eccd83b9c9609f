"""The discrete-event engine: one GPU pool, jobs arriving at their submission times, a policy's
order, optional backfilling, and (LAS) preemption.

Cluster model: a single pool of `capacity` GPUs, counted in thousandths of a GPU; a job runs when
its whole request fits in the free GPUs (no nodes, no placement, no fragmentation). A job runs for
exactly its run time (its oracle duration); a preempted job resumes later where it stopped, with no
restart overhead.

Events happen at instants; at one instant the engine first ends the jobs that finish (and, for
LAS, moves running jobs whose attained service crossed a threshold to the next queue), then admits
the submissions, then runs one scheduling pass:

- without backfilling, the waiting job first in the policy's order starts if it fits, then the
  next, and so on; the first job that does not fit blocks every job behind it (head-of-line
  blocking);
- with backfilling (greedy, no reservation), when that job does not fit, the next jobs in order
  that fit in the free GPUs start. This can delay the blocked job: GPUs freed later may be taken
  by jobs behind it.

Under LAS (default settings) a waiting job of queue k may also take GPUs of running jobs in queues
above k (lower priority): if the free GPUs plus those jobs' GPUs cover its request, running jobs
are preempted from the lowest priority up (highest queue, latest submission first) until it fits;
a victim whose GPUs turn out not to be needed (the job fits without them) is spared, and one that
a later job of the same pass starts again was never stopped. Jobs of the same queue never preempt
each other.

LAS has a plain path too (`_run_las_rounds`), which runs every combination of its settings
(`LAS_DEMOTIONS`, `LAS_QUEUE_ORDERS`, `LAS_PREEMPTIONS`) by walking every queue's jobs at each
event. Its `lowest-first` preemption is the rule above; `refill` hands out the pool anew in order,
running and waiting jobs alike, as Tiresias' `dlas_sim_jobs` does: a job whose GPUs fit in what the
jobs before it left keeps running or starts; a running job that does not fit is preempted; a
waiting one that does not fit waits (and, without backfilling, no waiting job after it starts at
that event). With the default settings the plain path gives the heap engine's schedule exactly
(the tests check it on random workloads); the heap engine runs them (`fast=True`) because the plain
path costs O(jobs running + waiting) per event.

Waiting jobs are held in one heap per distinct GPU request, keyed by priority, with a segment tree
of the heap heads: finding the first job in order that fits in `g` free GPUs costs O(log sizes), so
each event costs O(log n).

Two cases take a second, simpler engine (`_run_general`): CPUs modelled beside GPUs (a job starts
only when both its GPUs and its CPU cores fit in the free ones), and the shortest-remaining-time
policies (srtf, srtf-predicted). Its scheduling pass walks the jobs in order at each event:

- non-preemptive policies (fifo, sjf) walk the waiting jobs in the policy's order; a job that fits
  in both free GPUs and free CPUs starts; without backfilling the first one that does not fit
  stops the pass, with backfilling the pass goes on;
- srtf walks the running and the waiting jobs together, by least remaining time (ties by the
  tie-break), handing out the pool from scratch: a job whose GPUs and CPUs fit in what the jobs
  before it left keeps running or starts; a running job that no longer fits is preempted (it keeps
  the seconds it ran and later resumes with no cost); a waiting one that does not fit waits (and,
  without backfilling, no waiting job after it starts at this event; running jobs after it keep
  running while they fit).

This pass costs O(jobs running + jobs waiting) per event (and a sort for srtf): it suits samples
(`--limit`) more than whole traces on an overloaded pool. LAS with CPUs modelled is not offered.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from dataclasses import dataclass
from heapq import heappop, heappush
from math import inf

import numpy as np

from ddlx.simulate.policies import (
    DEFAULT_LAS_DEMOTION,
    DEFAULT_LAS_PREEMPTION,
    DEFAULT_LAS_QUEUE_ORDER,
    DEFAULT_TIE_BREAK,
    Policy,
    tie_rank,
)
from ddlx.simulate.workload import GPU_UNITS_PER_GPU, SimulationError, Workload

#: Key of an empty heap in the segment tree (above any job's key).
_EMPTY = 1 << 62


@dataclass
class Schedule:
    """What one policy did to one workload.

    `first_start_s` and `end_s`: per job, seconds from the first submission (the workload's
    origin); `busy_gpu_s`: GPU-seconds the pool was busy, integrated over time (sum over the
    intervals between events of busy GPUs x length); `preemptions`: times a running job was
    stopped; `preempted_jobs`: jobs stopped at least once.
    """

    policy: str
    backfill: bool
    first_start_s: np.ndarray
    end_s: np.ndarray
    busy_gpu_s: float
    preemptions: int
    preempted_jobs: int
    ended_early: int = 0


class _WaitingQueues:
    """Waiting jobs: one min-heap of priority keys per distinct request size, and a segment tree
    holding each heap's head encoded as `key << shift | size index`."""

    def __init__(self, sizes: list[int]):
        self.sizes = sizes
        self.count = len(sizes)
        self.shift = max(1, (self.count - 1).bit_length())
        self.leaves = 1 << self.shift
        self.mask = self.leaves - 1
        self.tree = [_EMPTY] * (2 * self.leaves)
        self.heaps: list[list[int]] = [[] for _ in sizes]

    def push(self, size: int, key: int) -> None:
        heap = self.heaps[size]
        heappush(heap, key)
        if heap[0] == key:
            self._set(size, (key << self.shift) | size)

    def pop(self, size: int) -> None:
        heap = self.heaps[size]
        heappop(heap)
        self._set(size, (heap[0] << self.shift) | size if heap else _EMPTY)

    def first(self) -> int:
        """The encoded head of every waiting job (`_EMPTY` when none waits)."""
        return self.tree[1]

    def first_fitting(self, units: int) -> int:
        """The encoded first job (in key order) asking for at most `units`; `_EMPTY` when none."""
        prefix = bisect_right(self.sizes, units)
        if prefix >= self.count:
            return self.tree[1]
        tree = self.tree
        best = _EMPTY
        low, high = self.leaves, self.leaves + prefix
        while low < high:
            if low & 1:
                if tree[low] < best:
                    best = tree[low]
                low += 1
            if high & 1:
                high -= 1
                if tree[high] < best:
                    best = tree[high]
            low >>= 1
            high >>= 1
        return best

    def _set(self, size: int, value: int) -> None:
        tree = self.tree
        node = size + self.leaves
        tree[node] = value
        node >>= 1
        while node:
            left, right = tree[2 * node], tree[2 * node + 1]
            smaller = left if left < right else right
            if tree[node] == smaller:
                break
            tree[node] = smaller
            node >>= 1


def simulate_policy(workload: Workload, policy: Policy, backfill: bool = True,
                    tie_break: str = DEFAULT_TIE_BREAK, fast: bool = True) -> Schedule:
    """Run `policy` on `workload` (with greedy backfilling when `backfill`, ties between equal keys
    broken by `tie_break`, one of `TIE_BREAKS`): a `Schedule`. `fast=False` runs LAS with its
    default settings on the plain path (`_run_las_rounds`) rather than the heap engine."""
    capacity = workload.capacity_units()
    need = workload.gpu_units()
    if capacity < 1:
        raise SimulationError(f"cluster size must be at least 1/{GPU_UNITS_PER_GPU} GPU")
    if int(need.max()) > capacity:
        raise SimulationError("a job asks for more GPUs than the cluster has (the workload should have left it out)")
    if workload.models_cpus:
        if policy.thresholds_gpu_s:
            raise SimulationError(f"{policy.name} does not model CPUs; run it without a CPU capacity (--cpus)")
        if int(workload.cpu_units().max()) > workload.cpu_capacity_units():
            raise SimulationError("a job asks for more CPU cores than the cluster has (the workload should have "
                                  "left it out)")
    rank = policy.priority_rank(workload, tie_break)
    if policy.remaining_time or workload.models_cpus:
        return _run_general(workload, policy, need, capacity, rank, tie_rank(workload, tie_break), backfill)
    if policy.preemptive:
        defaults = ((policy.las_demotion, policy.las_queue_order, policy.las_preemption)
                    == (DEFAULT_LAS_DEMOTION, DEFAULT_LAS_QUEUE_ORDER, DEFAULT_LAS_PREEMPTION))
        if fast and defaults:
            return _run_preemptive(workload, policy, need, capacity, rank, backfill)
        return _run_las_rounds(workload, policy, need, capacity, rank, backfill)
    return _run_non_preemptive(workload, policy, need, capacity, rank, backfill)


def _setup(need: np.ndarray, rank: np.ndarray) -> tuple[_WaitingQueues, list[int], list[int]]:
    sizes = np.unique(need)
    size_of = np.searchsorted(sizes, need).tolist()
    job_of_rank = np.argsort(rank, kind="stable").tolist()
    return _WaitingQueues(sizes.tolist()), size_of, job_of_rank


def _run_non_preemptive(workload: Workload, policy: Policy, need_units: np.ndarray, capacity: int,
                        rank_array: np.ndarray, backfill: bool) -> Schedule:
    """fifo and sjf: a job, once started, runs to its end."""
    queues, size_of, job_of_rank = _setup(need_units, rank_array)
    submit = workload.submit_s.tolist()
    run = workload.run_s.tolist()
    need = need_units.tolist()
    rank = rank_array.tolist()
    jobs = len(submit)
    first_start = [0.0] * jobs
    end = [0.0] * jobs
    ending: list[tuple[float, int]] = []
    shift, mask = queues.shift, queues.mask
    push, pop, first, first_fitting = queues.push, queues.pop, queues.first, queues.first_fitting
    free, busy_units, busy_integral, last_time = capacity, 0, 0.0, 0.0
    arrived = 0
    while arrived < jobs or ending:
        next_arrival = submit[arrived] if arrived < jobs else float("inf")
        now = ending[0][0] if ending and ending[0][0] < next_arrival else next_arrival
        busy_integral += busy_units * (now - last_time)
        last_time = now
        while ending and ending[0][0] <= now:
            job = heappop(ending)[1]
            free += need[job]
            busy_units -= need[job]
        while arrived < jobs and submit[arrived] <= now:
            push(size_of[arrived], rank[arrived])
            arrived += 1
        while True:
            encoded = first_fitting(free) if backfill else first()
            if encoded == _EMPTY:
                break
            size = encoded & mask
            job = job_of_rank[encoded >> shift]
            if need[job] > free:
                break
            pop(size)
            free -= need[job]
            busy_units += need[job]
            first_start[job] = now
            end[job] = now + run[job]
            heappush(ending, (end[job], job))
    if first() != _EMPTY:
        raise RuntimeError("simulation ended with jobs still waiting")
    return Schedule(policy.name, backfill, np.array(first_start), np.array(end),
                    busy_integral / GPU_UNITS_PER_GPU, 0, 0)


def _run_preemptive(workload: Workload, policy: Policy, need_units: np.ndarray, capacity: int,
                    rank_array: np.ndarray, backfill: bool) -> Schedule:
    """las: multi-level queues by attained GPU-seconds, preemption of lower-priority queues."""
    queues, size_of, job_of_rank = _setup(need_units, rank_array)
    submit = workload.submit_s.tolist()
    run = workload.run_s.tolist()
    need = need_units.tolist()
    rank = rank_array.tolist()
    jobs = len(submit)
    stride = jobs  # key = queue * stride + rank: a lower queue always sorts first
    # Thresholds in GPU-units x seconds: a job of g units crosses threshold T after T / g seconds of running.
    threshold_units = [t * GPU_UNITS_PER_GPU for t in policy.thresholds_gpu_s]
    top_queue = len(threshold_units)
    queue_of = [0] * jobs
    executed = [0.0] * jobs  # seconds run so far, up to the start of the current run
    run_since = [0.0] * jobs  # when the current run started
    version = [0] * jobs  # bumped at each preemption: older events of the job are stale
    running = [False] * jobs
    preempted = [False] * jobs
    first_start = [-1.0] * jobs
    end = [0.0] * jobs
    running_units = [0] * (top_queue + 1)  # GPUs held by running jobs, per queue
    events: list[tuple[float, int, int, int]] = []  # (time, 0 end | 1 next queue, job, version)
    victims_heap: list[tuple[int, int, int]] = []  # (-key, job, version): lowest priority on top
    shift, mask = queues.shift, queues.mask
    push, pop, first, first_fitting = queues.push, queues.pop, queues.first, queues.first_fitting
    free, busy_units, busy_integral, last_time = capacity, 0, 0.0, 0.0
    preemptions = 0

    # Jobs stopped in the current scheduling pass: (executed, run_since, preempted before). One that
    # starts again in the same pass was never stopped: its state is put back, its next event planned
    # again from the start of its run (the same event), and no preemption is counted.
    stopped: dict[int, tuple[float, float, bool]] = {}

    def plan_next_event(job: int, now: float) -> None:
        queue = queue_of[job]
        if queue < top_queue:
            boundary = threshold_units[queue] / need[job]
            if boundary < run[job]:
                heappush(events, (now + max(0.0, boundary - executed[job]), 1, job, version[job]))
                return
        heappush(events, (now + (run[job] - executed[job]), 0, job, version[job]))

    def start(job: int, now: float) -> None:
        nonlocal free, busy_units, preemptions
        free -= need[job]
        busy_units += need[job]
        if first_start[job] < 0:
            first_start[job] = now
        running[job] = True
        queue = queue_of[job]
        running_units[queue] += need[job]
        heappush(victims_heap, (-(queue * stride + rank[job]), job, version[job]))
        if stopped and job in stopped:
            executed[job], run_since[job], preempted[job] = stopped.pop(job)
            preemptions -= 1
            plan_next_event(job, run_since[job])
            return
        run_since[job] = now
        plan_next_event(job, now)

    def make_room(units: int, now: float) -> None:
        """Preempt running jobs of lower-priority queues, lowest first, until `units` are free."""
        nonlocal free, busy_units, preemptions
        chosen: list[int] = []
        freed = free
        while freed < units:
            negative_key, job, job_version = heappop(victims_heap)
            if (not running[job] or job_version != version[job]
                    or -negative_key != queue_of[job] * stride + rank[job]):
                continue  # stale entry
            chosen.append(job)
            freed += need[job]
        spare = freed - units
        for job in reversed(chosen[:-1]):  # higher priority first; the last one chosen is needed
            if need[job] <= spare:
                spare -= need[job]
                heappush(victims_heap, (-(queue_of[job] * stride + rank[job]), job, version[job]))
                chosen.remove(job)
        for job in chosen:
            stopped[job] = (executed[job], run_since[job], preempted[job])
            executed[job] += now - run_since[job]
            version[job] += 1
            running[job] = False
            preempted[job] = True
            preemptions += 1
            free += need[job]
            busy_units -= need[job]
            running_units[queue_of[job]] -= need[job]
            push(size_of[job], queue_of[job] * stride + rank[job])

    arrived = 0
    while arrived < jobs or events:
        next_arrival = submit[arrived] if arrived < jobs else float("inf")
        now = events[0][0] if events and events[0][0] < next_arrival else next_arrival
        busy_integral += busy_units * (now - last_time)
        last_time = now
        while events and events[0][0] <= now:
            _, kind, job, job_version = heappop(events)
            if job_version != version[job]:
                continue  # the job was preempted after this event was planned
            queue = queue_of[job]
            if kind == 0:
                running[job] = False
                executed[job] = run[job]
                end[job] = now
                free += need[job]
                busy_units -= need[job]
                running_units[queue] -= need[job]
            else:
                executed[job] += now - run_since[job]
                run_since[job] = now
                queue_of[job] = queue + 1
                running_units[queue] -= need[job]
                running_units[queue + 1] += need[job]
                heappush(victims_heap, (-((queue + 1) * stride + rank[job]), job, version[job]))
                plan_next_event(job, now)
        while arrived < jobs and submit[arrived] <= now:
            push(size_of[arrived], rank[arrived])
            arrived += 1
        if stopped:
            stopped.clear()
        level = 0
        while True:
            if backfill:
                encoded = first_fitting(free + sum(running_units[level + 1:]))
            else:
                encoded = first()
            if encoded == _EMPTY:
                break
            key = encoded >> shift
            queue = key // stride
            if backfill and queue > level:
                level = queue  # nothing of the queues before fits: look at this queue's jobs
                continue
            job = job_of_rank[key - queue * stride]
            if need[job] > free + sum(running_units[queue + 1:]):
                break  # without backfilling: the first job in order waits, and so does every other
            pop(encoded & mask)
            if need[job] > free:
                make_room(need[job], now)
            start(job, now)
    if first() != _EMPTY:
        raise RuntimeError("simulation ended with jobs still waiting")
    return Schedule(policy.name, backfill, np.array(first_start), np.array(end),
                    busy_integral / GPU_UNITS_PER_GPU, preemptions, sum(preempted))


def _run_las_rounds(workload: Workload, policy: Policy, need_units: np.ndarray, capacity: int,
                    rank_array: np.ndarray, backfill: bool) -> Schedule:
    """las, every setting: at each event, ends, then moves down a queue (`policy.las_demotion`),
    then submissions, then one scheduling pass over the queues in the order of
    `policy.las_queue_order`, preempting as `policy.las_preemption` says."""
    submit = workload.submit_s.tolist()
    run = workload.run_s.tolist()
    need = need_units.tolist()
    rank = rank_array.tolist()
    jobs = len(submit)
    thresholds = policy.thresholds_gpu_s
    threshold_units = [t * GPU_UNITS_PER_GPU for t in thresholds]
    top_queue = len(thresholds)
    by_entry = policy.las_queue_order == "queue-entry"
    at_events = policy.las_demotion == "next-event"
    refill = policy.las_preemption == "refill"
    stale_ends = policy.las_stale_ends
    attached: dict[float, list[int]] = {}  # stale_ends: submission instant -> the jobs whose end was due then
    ended_early = 0
    queue_of = [0] * jobs
    executed = [0.0] * jobs  # seconds run up to run_since (the start of the current run)
    run_since = [0.0] * jobs
    end_at = [inf] * jobs  # while running: when the job ends
    reach_at = [inf] * jobs  # while running: when its attained service reaches its queue's threshold
    wake_at = [inf] * jobs  # next-event: while running, the wake-up planned for it at the last event
    running = [False] * jobs
    preempted = [False] * jobs
    first_start = [-1.0] * jobs
    end = [0.0] * jobs
    # Each queue's jobs, running and waiting: in entry order (queue-entry) or in rank order (submission).
    members: list[list[int]] = [[] for _ in range(top_queue + 1)]
    running_units = [0] * (top_queue + 1)  # GPUs held by running jobs, per queue
    active: list[int] = []  # running jobs, in rank order
    stopped: dict[int, tuple[float, float, float, float, bool]] = {}  # stopped in the current pass (lowest-first)
    busy_integral, last_time = 0.0, 0.0
    preemptions = 0

    def enter(job: int, queue: int) -> None:
        queue_of[job] = queue
        if by_entry:
            members[queue].append(job)
        else:
            insort(members[queue], job, key=rank.__getitem__)

    def in_order(queue: int) -> list[int]:
        """The queue's jobs in pass order: list order (queue-entry), or running then waiting by rank (submission)."""
        listed = members[queue]
        return list(listed) if by_entry else [j for j in listed if running[j]] + [j for j in listed if not running[j]]

    def plan(job: int, now: float) -> None:
        """The end and the threshold instant of a job that (re)starts or changes queue at `now`."""
        end_at[job] = now + (run[job] - executed[job])
        queue = queue_of[job]
        reach_at[job] = inf
        if queue < top_queue:
            boundary = threshold_units[queue] / need[job]  # seconds of running at which the threshold is reached
            if boundary < run[job]:
                reach_at[job] = now + max(0.0, boundary - executed[job])

    def demote(job: int, now: float) -> None:
        executed[job] += now - run_since[job]
        run_since[job] = now
        running_units[queue_of[job]] -= need[job]
        members[queue_of[job]].remove(job)
        enter(job, queue_of[job] + 1)
        running_units[queue_of[job]] += need[job]
        plan(job, now)

    def wake_up(job: int, now: float) -> float:
        """Tiresias' next check of a running job: floor((T - seconds run) / GPUs) seconds after `now`
        (never at or before `now`: then the instant the threshold is reached, or `now` when it was)."""
        seconds = executed[job] + (now - run_since[job])
        planned = now + (thresholds[queue_of[job]] - seconds) // (need[job] / GPU_UNITS_PER_GPU)
        return planned if planned > now else max(reach_at[job], now)

    def start(job: int, now: float) -> None:
        nonlocal preemptions
        running[job] = True
        running_units[queue_of[job]] += need[job]
        if job in stopped:  # stopped and started again in one pass: it never stopped
            executed[job], run_since[job], end_at[job], reach_at[job], preempted[job] = stopped.pop(job)
            preemptions -= 1
            return
        if first_start[job] < 0:
            first_start[job] = now
        run_since[job] = now
        plan(job, now)

    def stop(job: int, now: float) -> None:
        nonlocal preemptions
        stopped[job] = (executed[job], run_since[job], end_at[job], reach_at[job], preempted[job])
        executed[job] += now - run_since[job]
        running[job] = False
        running_units[queue_of[job]] -= need[job]
        preempted[job] = True
        preemptions += 1
        end_at[job] = reach_at[job] = wake_at[job] = inf

    def pass_refill(now: float) -> None:
        """The pool handed out anew in pass order, running and waiting jobs alike (Tiresias)."""
        room = capacity
        blocked = False  # without backfilling: a waiting job did not fit, so no later one starts
        for queue in range(top_queue + 1):
            ordered = in_order(queue)
            if not by_entry:  # a job preempted here waits at its rank among the queue's waiting jobs
                ordered = [j for j in ordered if running[j]]
            for job in ordered:
                if running[job] and need[job] <= room:
                    room -= need[job]
                elif running[job]:
                    stop(job, now)
                    blocked = blocked or (by_entry and not backfill)
                elif not blocked and need[job] <= room:
                    room -= need[job]
                    start(job, now)
                else:
                    blocked = blocked or not backfill
            if not by_entry:
                for job in [j for j in members[queue] if not running[j]]:
                    if not blocked and need[job] <= room:
                        room -= need[job]
                        start(job, now)
                    else:
                        blocked = blocked or not backfill

    def pass_lowest_first(now: float) -> None:
        """Waiting jobs in pass order; each that fits in the free GPUs plus those of running jobs of
        lower queues starts, stopping those jobs from the lowest priority up (sparing any not needed)."""
        free = capacity - sum(running_units)
        for queue in range(top_queue + 1):
            for job in [j for j in in_order(queue) if not running[j]]:
                if need[job] > free + sum(running_units[queue + 1:]):
                    if backfill:
                        continue
                    return
                if need[job] > free:
                    lowest_first = (j for lower in range(top_queue, queue, -1) for j in reversed(in_order(lower))
                                    if running[j])
                    chosen: list[int] = []
                    freed = free
                    while freed < need[job]:
                        victim = next(lowest_first)
                        chosen.append(victim)
                        freed += need[victim]
                    spare = freed - need[job]
                    for victim in reversed(chosen[:-1]):  # higher priority first; the last one chosen is needed
                        if need[victim] <= spare:
                            spare -= need[victim]
                            chosen.remove(victim)
                    for victim in chosen:
                        stop(victim, now)
                        free += need[victim]
                free -= need[job]
                start(job, now)

    arrived = 0
    left = jobs
    while left:
        next_arrival = submit[arrived] if arrived < jobs else inf
        next_end = min((end_at[j] for j in active), default=inf)
        soonest = min((min(end_at[j], wake_at[j] if at_events else reach_at[j]) for j in active), default=inf)
        now = min(next_arrival, soonest)
        if now == inf:
            raise RuntimeError("simulation ended with jobs still waiting")
        busy_integral += sum(running_units) * (now - last_time)
        last_time = now
        ending = [j for j in active if end_at[j] <= now]
        if stale_ends:  # Tiresias' end list kept on the submission event (LAS_STALE_ENDS)
            if next_end == next_arrival < inf:
                attached[next_arrival] = [j for j in active if end_at[j] == next_end]
            if now == next_arrival:
                kept = attached.pop(now, [])
                if next_end > now:  # jobs of the kept list not ended yet end now, done or not
                    stale = [j for j in kept if end_at[j] > now]
                    ended_early += len(stale)
                    ending += stale
        for job in ending:
            if running[job]:
                running[job] = False
                running_units[queue_of[job]] -= need[job]
            end_at[job] = end[job] = now  # an ended job's end_at is in the past: no list ends it again
            members[queue_of[job]].remove(job)
            left -= 1
        active = [j for j in active if running[j]]
        for job in active:
            if at_events:
                if reach_at[job] <= now:
                    demote(job, now)  # one queue per event
            else:
                while reach_at[job] <= now:
                    demote(job, now)
        arriving: list[int] = []
        while arrived < jobs and submit[arrived] <= now:
            arriving.append(arrived)
            arrived += 1
        for job in sorted(arriving, key=rank.__getitem__):
            enter(job, 0)
        stopped.clear()
        if refill:
            pass_refill(now)
        else:
            pass_lowest_first(now)
        if by_entry:
            for queue in members:
                queue[:] = [j for j in queue if running[j]] + [j for j in queue if not running[j]]
        active = sorted((j for queue in members for j in queue if running[j]), key=rank.__getitem__)
        if at_events:
            for job in active:
                wake_at[job] = wake_up(job, now) if queue_of[job] < top_queue else inf
    return Schedule(policy.name, backfill, np.array(first_start), np.array(end),
                    busy_integral / GPU_UNITS_PER_GPU, preemptions, sum(preempted), ended_early)


def _run_general(workload: Workload, policy: Policy, need_units: np.ndarray, capacity: int,
                 rank_array: np.ndarray, ties_array: np.ndarray, backfill: bool) -> Schedule:
    """GPUs and CPUs both counted; fifo and sjf (non-preemptive) or srtf (preemptive, by remaining time)."""
    submit = workload.submit_s.tolist()
    run = workload.run_s.tolist()
    need = need_units.tolist()
    cpu_need = workload.cpu_units().tolist()
    cpu_capacity = workload.cpu_capacity_units()
    rank = rank_array.tolist()
    ties = ties_array.tolist()
    srtf = policy.remaining_time
    duration = policy.duration_key(workload) if srtf else None
    length = duration.tolist() if duration is not None else run
    jobs = len(submit)
    executed = [0.0] * jobs  # seconds run before the current run
    run_since = [0.0] * jobs
    version = [0] * jobs  # bumped at each preemption: older end events of the job are stale
    preempted = [False] * jobs
    first_start = [-1.0] * jobs
    end = [0.0] * jobs
    ending: list[tuple[float, int, int]] = []  # (time, job, version)
    running: set[int] = set()
    waiting: list[tuple[float, int, int]] = []  # sorted: (remaining by the policy's duration, or 0, tie, job)
    free, free_cpus = capacity, cpu_capacity
    busy_units, busy_integral, last_time = 0, 0.0, 0.0
    preemptions = 0

    def waiting_entry(job: int) -> tuple[float, int, int]:
        if srtf:
            return (max(length[job] - executed[job], 0.0), ties[job], job)
        return (0.0, rank[job], job)

    def start(job: int, now: float) -> None:
        nonlocal free, free_cpus, busy_units
        free -= need[job]
        free_cpus -= cpu_need[job]
        busy_units += need[job]
        if first_start[job] < 0:
            first_start[job] = now
        run_since[job] = now
        running.add(job)
        heappush(ending, (now + (run[job] - executed[job]), job, version[job]))

    def stop(job: int, now: float) -> None:
        nonlocal free, free_cpus, busy_units, preemptions
        executed[job] += now - run_since[job]
        version[job] += 1
        running.discard(job)
        preempted[job] = True
        preemptions += 1
        free += need[job]
        free_cpus += cpu_need[job]
        busy_units -= need[job]

    def pass_in_order(now: float) -> None:
        """Non-preemptive: start the waiting jobs in order while they fit (all of them with backfilling)."""
        nonlocal waiting
        kept: list[tuple[float, int, int]] = []
        for position, entry in enumerate(waiting):
            if free <= 0:
                kept.extend(waiting[position:])
                break
            job = entry[2]
            if need[job] <= free and cpu_need[job] <= free_cpus:
                start(job, now)
            elif backfill:
                kept.append(entry)
            else:
                kept.extend(waiting[position:])
                break
        waiting = kept

    def pass_by_remaining(now: float) -> None:
        """srtf: hand out the pool from scratch in order of remaining time, running jobs included."""
        nonlocal waiting
        active = sorted((max(length[j] - executed[j] - (now - run_since[j]), 0.0), ties[j], j) for j in running)
        room, room_cpus = capacity, cpu_capacity
        blocked = False
        to_stop: list[int] = []
        to_start: list[int] = []
        kept: list[tuple[float, int, int]] = []
        a = w = 0
        while a < len(active) or w < len(waiting):
            if a == len(active) and (room <= 0 or blocked):
                kept.extend(waiting[w:])
                break
            if w == len(waiting) or (a < len(active) and active[a] < waiting[w]):
                job = active[a][2]
                a += 1
                if need[job] <= room and cpu_need[job] <= room_cpus:
                    room -= need[job]
                    room_cpus -= cpu_need[job]
                else:
                    to_stop.append(job)
                continue
            entry = waiting[w]
            w += 1
            job = entry[2]
            if not blocked and need[job] <= room and cpu_need[job] <= room_cpus:
                room -= need[job]
                room_cpus -= cpu_need[job]
                to_start.append(job)
            else:
                blocked = blocked or not backfill
                kept.append(entry)
        for job in to_stop:
            stop(job, now)
        for job in to_start:
            start(job, now)
        waiting = kept
        for job in to_stop:
            insort(waiting, waiting_entry(job))

    arrived = 0
    while arrived < jobs or ending:
        next_arrival = submit[arrived] if arrived < jobs else float("inf")
        now = ending[0][0] if ending and ending[0][0] < next_arrival else next_arrival
        busy_integral += busy_units * (now - last_time)
        last_time = now
        while ending and ending[0][0] <= now:
            _, job, job_version = heappop(ending)
            if job_version != version[job]:
                continue  # the job was preempted after this end was planned
            running.discard(job)
            executed[job] = run[job]
            end[job] = now
            free += need[job]
            free_cpus += cpu_need[job]
            busy_units -= need[job]
        while arrived < jobs and submit[arrived] <= now:
            insort(waiting, waiting_entry(arrived))
            arrived += 1
        if srtf:
            pass_by_remaining(now)
        else:
            pass_in_order(now)
    if waiting or running:
        raise RuntimeError("simulation ended with jobs still waiting")
    return Schedule(policy.name, backfill, np.array(first_start), np.array(end),
                    busy_integral / GPU_UNITS_PER_GPU, preemptions, sum(preempted))
