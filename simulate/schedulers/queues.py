"""Waiting jobs held for the heap schedulers: one min-heap of priority keys per distinct GPU request,
and a segment tree of the heap heads, so that the first job in key order among those asking for at
most `g` GPU units is found in O(log sizes)."""

from __future__ import annotations

from bisect import bisect_right
from heapq import heappop, heappush

import numpy as np

#: Key of an empty heap in the segment tree (above any job's key).
EMPTY = 1 << 62


class WaitingQueues:
    """One min-heap of priority keys per request size, and a segment tree holding each heap's head
    encoded as `key << shift | size index` (`EMPTY` for an empty heap)."""

    def __init__(self, sizes: list[int]):
        self.sizes = sizes
        self.count = len(sizes)
        self.shift = max(1, (self.count - 1).bit_length())
        self.leaves = 1 << self.shift
        self.mask = self.leaves - 1
        self.tree = [EMPTY] * (2 * self.leaves)
        self.heaps: list[list[int]] = [[] for _ in sizes]

    def push(self, size: int, key: int) -> None:
        heap = self.heaps[size]
        heappush(heap, key)
        if heap[0] == key:
            self._set(size, (key << self.shift) | size)

    def pop(self, size: int) -> None:
        heap = self.heaps[size]
        heappop(heap)
        self._set(size, (heap[0] << self.shift) | size if heap else EMPTY)

    def first(self) -> int:
        """The encoded head of every waiting job (`EMPTY` when none waits)."""
        return self.tree[1]

    def first_fitting(self, units: int) -> int:
        """The encoded first job (in key order) asking for at most `units`; `EMPTY` when none."""
        prefix = bisect_right(self.sizes, units)
        if prefix >= self.count:
            return self.tree[1]
        tree = self.tree
        best = EMPTY
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


def waiting_queues(need_units: np.ndarray, rank: np.ndarray) -> tuple[WaitingQueues, list[int], list[int]]:
    """Empty queues for jobs asking for `need_units` (GPU units), each job's size index, and the job of
    each rank (`rank`: each job's place in the policy's order, 0 first)."""
    sizes = np.unique(need_units)
    size_of = np.searchsorted(sizes, need_units).tolist()
    job_of_rank = np.argsort(rank, kind="stable").tolist()
    return WaitingQueues(sizes.tolist()), size_of, job_of_rank
